/*
 * Every unit suite, one line each. A suite is tests/unit/test_<name>.c
 * exporting "Suite *<name>_suite(void)"; add it here and to UNIT_SUITES in
 * the Makefile.
 */
SUITE(err)
SUITE(buf)
SUITE(str)
SUITE(json)
SUITE(log)
SUITE(yaml)
SUITE(selector)
SUITE(patch)
SUITE(cert)
SUITE(kubeconfig)
SUITE(transport)
SUITE(client)
SUITE(watch)
SUITE(dc_schema)
SUITE(dc_table)
SUITE(dc_protobuf)
SUITE(dc_fieldmanager)
SUITE(dc_router)
SUITE(dc_storage)
SUITE(dc_watch)
SUITE(dc_errors)
SUITE(dc_auth)
SUITE(dc_discovery)
SUITE(dc_api)

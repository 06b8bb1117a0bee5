/*
 * The unit test runner: every suite of tests/unit/suites.h, or, built with
 * -DKC_ONE_SUITE=<name>_suite ("make unit SUITE=<name>"), just one.
 *
 * CK_RUN_SUITE and CK_RUN_CASE pick suites and cases at run time, and
 * CK_FORK=no runs everything in one process (make does, so that
 * LeakSanitizer sees every test). The exit status is non-zero when any
 * test failed.
 */
#include <stdlib.h>

#include <check.h>

#include "testutil.h"

#ifdef KC_ONE_SUITE
static Suite *(*const suites[])(void) = { KC_ONE_SUITE };
#else
static Suite *(*const suites[])(void) = {
#define SUITE(n)	n##_suite,
#include "suites.h"
#undef SUITE
};
#endif

int
main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(NULL);
	for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
		srunner_add_suite(sr, suites[i]());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

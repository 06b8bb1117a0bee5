/*
 * test_dc_errors.c: metav1.Status replies (devcluster/errors.c) against
 * the bodies kube-apiserver sends (tests/fixtures/devcluster/
 * status-errors.json, from KUBE-API.md's samples).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/sbuf.h>

#include "../../devcluster/devcluster.h"
#include "testutil.h"

static struct json_object *samples;

static void
setup(void)
{
	char *text;
	size_t len;

	text = tu_fixture("devcluster/status-errors.json", &len);
	ck_assert_int_eq(kc_json_parse(text, len, &samples, NULL), 0);
	kc_free(text);
}

static void
teardown(void)
{
	json_object_put(samples);
	samples = NULL;
}

/* The reply must be the sample, key for key. */
static void
expect_sample(struct dc_resp *resp, const char *name)
{
	struct json_object *got = NULL, *want = kc_json_get(samples, name);

	ck_assert_ptr_nonnull(want);
	ck_assert_str_eq(resp->content_type, "application/json");
	ck_assert_int_eq(kc_json_parse(resp->body.data, resp->body.len, &got, NULL), 0);
	ck_assert_msg(kc_json_equal(got, want), "%s:\n got %s\nwant %s", name,
	    json_object_to_json_string(got), json_object_to_json_string(want));
	ck_assert_int_eq(resp->status, kc_json_int(want, 0, "code"));
	json_object_put(got);
	resp_clear(resp);
}

static struct dc *
new_dc(void)
{
	struct dc *dc = NULL;

	ck_assert_int_eq(api_new(&(struct dc_opts){ .no_bootstrap = true }, &dc), 0);
	return dc;
}

static struct dc_rtype *
runs(struct dc *dc)
{
	struct dc_rtype *rt = NULL;

	ck_assert_int_eq(registry_add(dc, &(struct dc_rtype_def){
	    .group = "trainyard.dev", .version = "v1beta1", .plural = "runs",
	    .singular = "run", .kind = "Run", .namespaced = true, .verbs = DC_VERBS_ALL,
	    .flags = DC_RT_CUSTOM | DC_RT_STATUS | DC_RT_GENERATION }, &rt), 0);
	return rt;
}

START_TEST(not_found_and_conflicts)
{
	struct dc *dc = new_dc();
	struct dc_rtype *rt = runs(dc);
	struct dc_resp resp;

	resp_init(&resp);
	errors_notfound(&resp, registry_find(dc, "", "v1", "pods"), "p9");
	expect_sample(&resp, "NotFound_core");
	errors_notfound(&resp, rt, "r9");
	expect_sample(&resp, "NotFound_cr");
	errors_obj(&resp, KC_EEXISTS, rt, "r1", "%s \"%s\" already exists", rt->qualified,
	    "r1");
	expect_sample(&resp, "AlreadyExists");
	errors_obj(&resp, KC_ECONFLICT, rt, "r1", "Operation cannot be fulfilled on %s "
	    "\"%s\": the object has been modified; please apply your changes to the latest "
	    "version and try again", rt->qualified, "r1");
	expect_sample(&resp, "Conflict");
	errors_obj(&resp, KC_EFORBIDDEN, rt, NULL, "runs.trainyard.dev is forbidden: User "
	    "\"alice\" cannot list resource \"runs\" in API group \"trainyard.dev\" in the "
	    "namespace \"default\"");
	expect_sample(&resp, "Forbidden");
	api_free(dc);
}
END_TEST

START_TEST(invalid)
{
	struct dc_errs errs = { 0 };
	struct dc_resp resp;

	resp_init(&resp);
	errs_required(&errs, "spec.image", NULL);
	errs_invalid(&errs, "spec.nodes", "0",
	    "spec.nodes in body should be greater than or equal to 1");
	errors_invalid(&resp, "Run.trainyard.dev", "trainyard.dev", "r1", &errs);
	expect_sample(&resp, "Invalid");

	memset(&errs, 0, sizeof(errs));
	errs_forbidden(&errs, "sendInitialEvents", "sendInitialEvents is forbidden for watch "
	    "unless the WatchList feature gate is enabled");
	errors_invalid(&resp, "ListOptions.meta.k8s.io", "meta.k8s.io", "", &errs);
	expect_sample(&resp, "Invalid_listoptions");
}
END_TEST

START_TEST(plain)
{
	struct dc_resp resp;

	resp_init(&resp);
	errors_reply(&resp, KC_EUNAUTHORIZED, "Unauthorized");
	expect_sample(&resp, "Unauthorized");
	errors_reply(&resp, KC_EEXPIRED, "The provided continue parameter is too old to "
	    "display a consistent list result. You can start a new list without the "
	    "continue parameter.");
	expect_sample(&resp, "Expired_continue");
	errors_reply(&resp, KC_EMEDIATYPE, "the body of the request was in an unknown "
	    "format - accepted media types include: application/json-patch+json, "
	    "application/merge-patch+json, application/apply-patch+yaml");
	expect_sample(&resp, "UnsupportedMediaType");
	errors_reply(&resp, KC_EBADREQUEST, "Run in version \"v1beta1\" cannot be handled as "
	    "a Run: strict decoding error: unknown field \"spec.bogus\"");
	expect_sample(&resp, "BadRequest_strict");
}
END_TEST

static void
expect_code(int code, int http, const char *reason)
{
	struct dc_resp resp;
	struct json_object *got = NULL;

	resp_init(&resp);
	errors_reply(&resp, code, "m");
	ck_assert_int_eq(resp.status, http);
	ck_assert_int_eq(kc_json_parse(resp.body.data, resp.body.len, &got, NULL), 0);
	ck_assert_str_eq(kc_json_str(got, "reason"), reason);
	ck_assert_int_eq(kc_json_int(got, 0, "code"), http);
	ck_assert_str_eq(kc_json_str(got, "status"), "Failure");
	json_object_put(got);
	resp_clear(&resp);
}

START_TEST(codes)
{
	expect_code(KC_ENOTFOUND, 404, "NotFound");
	expect_code(KC_EGONE, 410, "Gone");
	expect_code(KC_ETOOLARGE, 413, "RequestEntityTooLarge");
	expect_code(KC_ETIMEOUT, 504, "Timeout");
	expect_code(KC_EPARSE, 400, "BadRequest");
	expect_code(-EINVAL, 400, "BadRequest");
	expect_code(-E2BIG, 413, "RequestEntityTooLarge");
	expect_code(-ENOMEM, 500, "InternalError");
	expect_code(KC_ETRANSPORT, 500, "InternalError");
	{
		struct dc_resp resp;
		struct json_object *got = NULL;
		struct kc_status st = { 0 };

		resp_init(&resp);
		errors_internal(&resp, -ENOMEM);
		ck_assert_int_eq(resp.status, 500);
		ck_assert_int_eq(kc_json_parse(resp.body.data, resp.body.len, &got, NULL), 0);
		ck_assert_str_eq(kc_json_str(got, "message"),
		    "Internal error occurred: Cannot allocate memory");
		json_object_put(got);
		(void)kc_status_set(&st, KC_EINVALID, "op 0 (test) at /a: value differs");
		errors_kc(&resp, KC_EINVALID, &st);
		ck_assert_int_eq(resp.status, 422);
		ck_assert_int_eq(kc_json_parse(resp.body.data, resp.body.len, &got, NULL), 0);
		ck_assert_str_eq(kc_json_str(got, "message"), "op 0 (test) at /a: value differs");
		json_object_put(got);
		resp_clear(&resp);
	}
}
END_TEST

START_TEST(field_errors)
{
	struct dc_errs errs = { 0 };
	char buf[1024];

	errs_unsupported(&errs, "spec.restartPolicy", "Sometimes",
	    (const char *const []){ "Always", "Never", NULL });
	errs_duplicate(&errs, "spec.containers[1].name", "\"main\"");
	errs_required(&errs, "metadata.name", "name or generateName is required");
	errs_add(&errs, "TooLong", "metadata.annotations", "Too long: must have at most %d "
	    "bytes", 262144);
	ck_assert_uint_eq(errs.n, 4);
	ferr_string(&errs.items[0], buf, sizeof(buf));
	ck_assert_str_eq(buf, "spec.restartPolicy: Unsupported value: \"Sometimes\": "
	    "supported values: \"Always\", \"Never\"");
	ferr_string(&errs.items[1], buf, sizeof(buf));
	ck_assert_str_eq(buf, "spec.containers[1].name: Duplicate value: \"main\"");
	ferr_string(&errs.items[2], buf, sizeof(buf));
	ck_assert_str_eq(buf, "metadata.name: Required value: name or generateName is "
	    "required");
	ck_assert_str_eq(errs.items[3].type, "TooLong");
	for (int i = 0; i < 2 * DC_ERRS_MAX; i++)
		errs_required(&errs, "x", NULL);
	ck_assert_uint_eq(errs.n, DC_ERRS_MAX);
	ck_assert(errs.truncated);
}
END_TEST

START_TEST(quoting)
{
	char buf[64];

	ck_assert_str_eq(kc_sbuf_quoted(buf, sizeof(buf), "a\"b\\c\nd\te\x01"),
	    "\"a\\\"b\\\\c\\nd\\te\\x01\"");
	ck_assert_str_eq(kc_sbuf_quoted(buf, sizeof(buf), ""), "\"\"");
	/* Truncation still closes the quote. */
	ck_assert_str_eq(kc_sbuf_quoted(buf, 6, "abcdefghij"), "\"abc\"");
	ck_assert_str_eq(kc_sbuf_quoted(buf, 2, "x"), "");
	/* As strconv.Quote: named escapes, non-printable runes, invalid UTF-8. */
	ck_assert_str_eq(kc_sbuf_quoted(buf, sizeof(buf), "\a\b\f\v\x7f"),
	    "\"\\a\\b\\f\\v\\x7f\"");
	ck_assert_str_eq(kc_sbuf_quoted(buf, sizeof(buf), "soft\xc2\xadhyphen \xff"),
	    "\"soft\\u00adhyphen \\xff\"");
}
END_TEST

Suite *
dc_errors_suite(void)
{
	Suite *s = suite_create("dc_errors");
	TCase *tc = tcase_create("errors");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, not_found_and_conflicts);
	tcase_add_test(tc, invalid);
	tcase_add_test(tc, plain);
	tcase_add_test(tc, codes);
	tcase_add_test(tc, field_errors);
	tcase_add_test(tc, quoting);
	suite_add_tcase(s, tc);
	return s;
}

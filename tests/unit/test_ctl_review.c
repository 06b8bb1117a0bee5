/*
 * test_ctl_review.c: controller/review.c, the ConversionReview handler.
 *
 * Golden reviews (tests/fixtures/review/NAME.request.json, answered as
 * NAME.response.json, compared as JSON), then the malformed-input suite:
 * every way a body can fail to be a ConversionReview gets a 400 with a
 * reason, every data failure a 200 with result Failure naming the object,
 * and nothing crashes or leaks (the suite runs under ASan/LSan), also
 * under a growing allocation budget. The converter is the real one
 * (ty_convert(), convert.c); converters that fail or lose a field check
 * the self-test.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/json.h>
#include <kc/str.h>

#include "../../controller/convert.h"
#include "../../controller/webhook.h"
#include "testutil.h"

struct answer {
	int			 code;
	struct kc_buf		 out;
	struct json_object	*json;		/* the parsed 200 body */
	struct review_info	 info;
};

static void
answer_free(struct answer *a)
{
	kc_buf_free(&a->out);
	if (a->json != NULL)
		json_object_put(a->json);
	memset(a, 0, sizeof(*a));
}

static void
ask(const char *body, size_t len, struct answer *a)
{
	struct kc_status st = { 0 };

	memset(a, 0, sizeof(*a));
	kc_buf_init(&a->out, REVIEW_ANSWER_MAX);
	a->code = review_handle(body, len, ty_convert, &a->out, &a->info);
	ck_assert_int_gt(a->code, 0);
	if (a->code == 200)
		ck_assert_int_eq(kc_json_parse(a->out.data, a->out.len, &a->json, &st), 0);
}

static void
ask_str(const char *body, struct answer *a)
{
	ask(body, strlen(body), a);
}

static void
golden(const char *name)
{
	char path[256];
	_cleanup_(kc_freep) char *req = NULL, *want = NULL;
	_cleanup_(kc_json_putp) struct json_object *wj = NULL;
	struct kc_status st = { 0 };
	struct answer a;
	size_t rlen, wlen;

	(void)snprintf(path, sizeof(path), "review/%s.request.json", name);
	req = tu_fixture(path, &rlen);
	(void)snprintf(path, sizeof(path), "review/%s.response.json", name);
	want = tu_fixture(path, &wlen);
	ck_assert_ptr_nonnull(req);
	ck_assert_ptr_nonnull(want);
	ck_assert_int_eq(kc_json_parse(want, wlen, &wj, &st), 0);
	ask(req, rlen, &a);
	ck_assert_int_eq(a.code, 200);
	if (!kc_json_equal(a.json, wj))
		ck_abort_msg("%s: got %s", name, kc_buf_str(&a.out));
	answer_free(&a);
}

START_TEST(test_golden_v1_mixed)
{
	golden("v1-to-beta");
}
END_TEST

START_TEST(test_golden_v1beta1)
{
	golden("v1beta1-to-alpha");
}
END_TEST

START_TEST(test_golden_failure)
{
	golden("failure");
}
END_TEST

START_TEST(test_golden_empty)
{
	golden("empty");
}
END_TEST

START_TEST(test_failure_names_object_and_field)
{
	_cleanup_(kc_freep) char *req = NULL;
	struct answer a;
	const char *msg;
	size_t len;

	req = tu_fixture("review/failure.request.json", &len);
	ask(req, len, &a);
	ck_assert_int_eq(a.code, 200);
	ck_assert_str_eq(kc_json_str(a.json, "apiVersion"), "apiextensions.k8s.io/v1");
	ck_assert_str_eq(kc_json_str(a.json, "response", "uid"),
	    "11111111-2222-3333-4444-555555555555");
	ck_assert_str_eq(kc_json_str(a.json, "response", "result", "status"), "Failure");
	msg = kc_json_str(a.json, "response", "result", "message");
	ck_assert_ptr_nonnull(strstr(msg, "objects[1]"));
	ck_assert_ptr_nonnull(strstr(msg, "team-a/broken"));
	ck_assert_ptr_nonnull(strstr(msg, "spec: must be an object"));
	ck_assert_ptr_null(kc_json_get(a.json, "response", "convertedObjects"));
	ck_assert_str_eq(a.info.result, "failure");
	ck_assert_str_eq(a.info.version, "v1");
	ck_assert_uint_eq(a.info.objects, 2);
	answer_free(&a);
}
END_TEST

/* Many objects, alternating source versions: order and count kept. */
START_TEST(test_many_objects_order)
{
	struct kc_buf b;
	struct answer a;
	struct json_object *objs;
	const size_t n = 2000;

	kc_buf_init(&b, REVIEW_BODY_MAX);
	ck_assert_int_eq(kc_buf_puts(&b, "{\"apiVersion\":\"apiextensions.k8s.io/v1\","
	    "\"kind\":\"ConversionReview\",\"request\":{\"uid\":\"m\","
	    "\"desiredAPIVersion\":\"trainyard.dev/v1beta1\",\"objects\":["), 0);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(kc_buf_printf(&b, "%s{\"apiVersion\":\"trainyard.dev/%s\","
		    "\"kind\":\"Run\",\"metadata\":{\"name\":\"r%zu\"},\"spec\":{%s}}",
		    i > 0 ? "," : "", i % 2 ? "v1beta1" : "v1alpha1", i,
		    i % 2 ? "\"container\":{\"image\":\"x\"}" : "\"image\":\"x\""), 0);
	ck_assert_int_eq(kc_buf_puts(&b, "]}}"), 0);
	ask(b.data, b.len, &a);
	ck_assert_int_eq(a.code, 200);
	objs = kc_json_get(a.json, "response", "convertedObjects");
	ck_assert_uint_eq(json_object_array_length(objs), n);
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_array_get_idx(objs, i);
		char name[32];

		(void)snprintf(name, sizeof(name), "r%zu", i);
		ck_assert_str_eq(kc_json_str(o, "metadata", "name"), name);
		ck_assert_str_eq(kc_json_str(o, "apiVersion"), "trainyard.dev/v1beta1");
		ck_assert_str_eq(kc_json_str(o, "spec", "container", "image"), "x");
	}
	answer_free(&a);
	kc_buf_free(&b);
}
END_TEST

START_TEST(test_too_many_objects)
{
	struct kc_buf b;
	struct answer a;

	kc_buf_init(&b, REVIEW_BODY_MAX);
	ck_assert_int_eq(kc_buf_puts(&b, "{\"apiVersion\":\"apiextensions.k8s.io/v1\","
	    "\"kind\":\"ConversionReview\",\"request\":{\"uid\":\"m\","
	    "\"desiredAPIVersion\":\"trainyard.dev/v1beta1\",\"objects\":["), 0);
	for (size_t i = 0; i <= REVIEW_OBJECTS_MAX; i++)
		ck_assert_int_eq(kc_buf_puts(&b, i > 0 ? ",{}" : "{}"), 0);
	ck_assert_int_eq(kc_buf_puts(&b, "]}}"), 0);
	ask(b.data, b.len, &a);
	ck_assert_int_eq(a.code, 200);
	ck_assert_str_eq(kc_json_str(a.json, "response", "result", "status"), "Failure");
	ck_assert_ptr_nonnull(strstr(kc_json_str(a.json, "response", "result", "message"),
	    "at most"));
	answer_free(&a);
	kc_buf_free(&b);
}
END_TEST

/* Bodies that are not ConversionReviews: 400 and a reason containing 'want'. */
static const struct {
	const char	*body;
	const char	*want;
} bad[] = {
	{ "", "not a ConversionReview" },
	{ "{", "not a ConversionReview" },
	{ "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionRev",
	    "not a ConversionReview" },
	{ "[]", "not a JSON object" },
	{ "\"ConversionReview\"", "not a JSON object" },
	{ "null", "not a JSON object" },
	{ "42", "not a JSON object" },
	{ "{}", "kind missing" },
	{ "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\"}",
	    "kind AdmissionReview" },
	{ "{\"kind\":7,\"apiVersion\":\"apiextensions.k8s.io/v1\"}", "kind missing" },
	{ "{\"kind\":\"ConversionReview\"}", "apiVersion (missing)" },
	{ "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v2\"}",
	    "unsupported ConversionReview apiVersion apiextensions.k8s.io/v2" },
	{ "{\"kind\":\"ConversionReview\",\"apiVersion\":\"v1\"}", "apiVersion v1" },
	{ "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v1\"}",
	    "request: required" },
	{ "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v1\","
	    "\"request\":[]}", "request: required" },
	{ "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v1\","
	    "\"request\":{}}", "request.uid" },
	{ "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v1\","
	    "\"request\":{\"uid\":\"\"}}", "request.uid" },
	{ "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v1\","
	    "\"request\":{\"uid\":5}}", "request.uid" },
	{ "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v1\","
	    "\"request\":{\"uid\":\"u\"}}", "request.desiredAPIVersion" },
	{ "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v1\","
	    "\"request\":{\"uid\":\"u\",\"desiredAPIVersion\":null}}",
	    "request.desiredAPIVersion" },
	{ "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v1\","
	    "\"request\":{\"uid\":\"u\",\"desiredAPIVersion\":\"trainyard.dev/v1beta1\"}}",
	    "request.objects" },
	{ "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v1\","
	    "\"request\":{\"uid\":\"u\",\"desiredAPIVersion\":\"trainyard.dev/v1beta1\","
	    "\"objects\":{}}}", "request.objects" },
	{ "{\"kind\":\"ConversionReview\",\"apiVersion\":\"apiextensions.k8s.io/v1\"} x",
	    "not a ConversionReview" },
};

START_TEST(test_not_a_review)
{
	struct answer a;

	ask_str(bad[_i].body, &a);
	ck_assert_int_eq(a.code, 400);
	if (strstr(kc_buf_str(&a.out), bad[_i].want) == NULL)
		ck_abort_msg("%s: got %s", bad[_i].body, kc_buf_str(&a.out));
	ck_assert_str_eq(a.info.result, "invalid");
	answer_free(&a);
}
END_TEST

/* Data failures: 200, Failure, the object and the reason named. */
static const struct {
	const char	*objects;
	const char	*want;
} data_bad[] = {
	{ "[1]", "objects[0]: not an object" },
	{ "[{\"apiVersion\":\"trainyard.dev/v1alpha1\",\"kind\":\"Run\"},null]",
	    "objects[1]: not an object" },
	{ "[\"x\"]", "objects[0]: not an object" },
	{ "[[]]", "objects[0]: not an object" },
	{ "[{\"kind\":\"Run\",\"metadata\":{\"name\":\"n\"}}]",
	    "objects[0] (Run n (no apiVersion))" },
	{ "[{\"apiVersion\":\"trainyard.dev/v9\",\"kind\":\"Run\"}]",
	    "apiVersion: \"trainyard.dev/v9\" is not" },
	{ "[{\"apiVersion\":\"trainyard.dev/v1alpha1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"namespace\":\"x\",\"name\":\"p\"}}]",
	    "(Pod x/p trainyard.dev/v1alpha1) to trainyard.dev/v1beta1: kind: \"Pod\" is not" },
	{ "[{\"apiVersion\":\"trainyard.dev/v1alpha1\",\"kind\":\"Run\","
	    "\"metadata\":7,\"spec\":[]}]", "(Run (unnamed) trainyard.dev/v1alpha1)" },
};

START_TEST(test_data_failure)
{
	char body[2048];
	struct answer a;
	const char *msg;

	(void)snprintf(body, sizeof(body), "{\"kind\":\"ConversionReview\","
	    "\"apiVersion\":\"apiextensions.k8s.io/v1beta1\",\"request\":{\"uid\":\"u-%d\","
	    "\"desiredAPIVersion\":\"trainyard.dev/v1beta1\",\"objects\":%s}}", _i,
	    data_bad[_i].objects);
	ask_str(body, &a);
	ck_assert_int_eq(a.code, 200);
	ck_assert_str_eq(kc_json_str(a.json, "apiVersion"), "apiextensions.k8s.io/v1beta1");
	ck_assert_str_eq(kc_json_str(a.json, "kind"), "ConversionReview");
	ck_assert_str_eq(kc_json_str(a.json, "response", "result", "status"), "Failure");
	msg = kc_json_str(a.json, "response", "result", "message");
	if (strstr(msg, data_bad[_i].want) == NULL)
		ck_abort_msg("%s: got %s", data_bad[_i].objects, msg);
	answer_free(&a);
}
END_TEST

START_TEST(test_deep_nesting)
{
	struct kc_buf b;
	struct answer a;

	kc_buf_init(&b, REVIEW_BODY_MAX);
	ck_assert_int_eq(kc_buf_puts(&b, "{\"apiVersion\":\"apiextensions.k8s.io/v1\","
	    "\"kind\":\"ConversionReview\",\"request\":{\"uid\":\"m\","
	    "\"desiredAPIVersion\":\"trainyard.dev/v1beta1\",\"objects\":[{\"a\":"), 0);
	for (size_t i = 0; i < 100000; i++)
		ck_assert_int_eq(kc_buf_putc(&b, '['), 0);
	ask(b.data, b.len, &a);
	ck_assert_int_eq(a.code, 400);
	ck_assert_ptr_nonnull(strstr(kc_buf_str(&a.out), "not a ConversionReview"));
	answer_free(&a);
	kc_buf_free(&b);
}
END_TEST

START_TEST(test_huge_body)
{
	size_t n = REVIEW_BODY_MAX + 1;
	char *body = malloc(n);
	struct answer a;

	ck_assert_ptr_nonnull(body);
	memset(body, ' ', n);
	ask(body, n, &a);
	ck_assert_int_eq(a.code, 413);
	answer_free(&a);
	free(body);
}
END_TEST

START_TEST(test_long_uid)
{
	char body[1024], uid[REVIEW_FIELD_MAX + 1];
	struct answer a;

	memset(uid, 'u', sizeof(uid) - 1);
	uid[sizeof(uid) - 1] = '\0';
	(void)snprintf(body, sizeof(body), "{\"kind\":\"ConversionReview\","
	    "\"apiVersion\":\"apiextensions.k8s.io/v1\",\"request\":{\"uid\":\"%s\","
	    "\"desiredAPIVersion\":\"trainyard.dev/v1beta1\",\"objects\":[]}}", uid);
	ask_str(body, &a);
	ck_assert_int_eq(a.code, 400);
	answer_free(&a);
}
END_TEST

/* Every truncation of a good review is a 400, never a crash. */
START_TEST(test_truncated)
{
	_cleanup_(kc_freep) char *req = NULL;
	size_t len;

	req = tu_fixture("review/v1-to-beta.request.json", &len);
	for (size_t n = 0; n < len; n++) {
		struct answer a;

		/* Cuts inside trailing white space still parse. */
		if (n > 0 && strspn(req + n, " \t\r\n") == len - n)
			break;
		ask(req, n, &a);
		ck_assert_int_eq(a.code, 400);
		answer_free(&a);
	}
}
END_TEST

START_TEST(test_alloc_failures)
{
	_cleanup_(kc_freep) char *req = NULL;
	size_t len;
	int r;

	req = tu_fixture("review/v1-to-beta.request.json", &len);
	for (size_t budget = 0;; budget++) {
		struct kc_buf out;

		kc_buf_init(&out, REVIEW_ANSWER_MAX);
		fail_alloc_after(budget);
		r = review_handle(req, len, ty_convert, &out, NULL);
		fail_alloc_after(SIZE_MAX);
		kc_buf_free(&out);
		if (r == 200)
			break;
		/* json-c's own allocations are not the hook's: a failure of ours
		 * shows as -ENOMEM, or as a converter failure answered 200. */
		ck_assert_msg(r == -ENOMEM, "budget %zu: %d", budget, r);
		ck_assert_uint_lt(budget, 100000);
	}
}
END_TEST

START_TEST(test_answer_cap)
{
	_cleanup_(kc_freep) char *req = NULL;
	struct kc_buf out;
	size_t len;

	req = tu_fixture("review/v1-to-beta.request.json", &len);
	kc_buf_init(&out, 64);
	ck_assert_int_eq(review_handle(req, len, ty_convert, &out, NULL), -E2BIG);
	kc_buf_free(&out);
}
END_TEST

START_TEST(test_selftest)
{
	struct kc_status st = { 0 };

	ck_assert_int_eq(review_selftest(ty_convert, &st), 0);
}
END_TEST

/* A converter that loses a field: the self-test notices. */
static int
lossy_convert(const struct json_object *obj, const char *to, struct json_object **ret,
    struct kc_status *st)
{
	struct json_object *spec;
	int r;

	if ((r = ty_convert(obj, to, ret, st)) < 0)
		return r;
	if ((spec = kc_json_obj_of(*ret, "spec")) != NULL)
		json_object_object_del(spec, "workingDir");
	return 0;
}

static int
failing_convert(const struct json_object *obj, const char *to, struct json_object **ret,
    struct kc_status *st)
{
	(void)obj;
	(void)to;
	(void)ret;
	return kc_status_set(st, KC_EINVALID, "spec.nodes: broken on purpose");
}

START_TEST(test_selftest_fails)
{
	struct kc_status st = { 0 };

	ck_assert_int_eq(review_selftest(lossy_convert, &st), KC_EINVALID);
	ck_assert_ptr_nonnull(strstr(st.message, "differs"));
	ck_assert_int_eq(review_selftest(failing_convert, &st), KC_EINVALID);
	ck_assert_ptr_nonnull(strstr(st.message, "broken on purpose"));
}
END_TEST

/* The real converter behind the handler: the self-test and a mixed review. */
START_TEST(test_with_ty_convert)
{
	struct kc_status st = { 0 };
	_cleanup_(kc_freep) char *req = NULL;
	struct kc_buf out;
	struct json_object *ans = NULL, *objs;
	size_t len;

	ck_assert_msg(review_selftest(ty_convert, &st) == 0, "%s", st.message);
	req = tu_fixture("review/v1-to-beta.request.json", &len);
	kc_buf_init(&out, REVIEW_ANSWER_MAX);
	ck_assert_int_eq(review_handle(req, len, ty_convert, &out, NULL), 200);
	ck_assert_int_eq(kc_json_parse(out.data, out.len, &ans, &st), 0);
	ck_assert_str_eq(kc_json_str(ans, "response", "result", "status"), "Success");
	objs = kc_json_get(ans, "response", "convertedObjects");
	ck_assert_uint_eq(json_object_array_length(objs), 3);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(objs, 0), "spec", "container",
	    "image"), "pytorch:2.3");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(objs, 2), "metadata", "name"),
	    "r3");
	json_object_put(ans);
	kc_buf_free(&out);
	/* Its data failures name the object and the field. */
	req = kc_free(req);
	req = tu_fixture("review/failure.request.json", &len);
	kc_buf_init(&out, REVIEW_ANSWER_MAX);
	ck_assert_int_eq(review_handle(req, len, ty_convert, &out, NULL), 200);
	ck_assert_int_eq(kc_json_parse(out.data, out.len, &ans, &st), 0);
	ck_assert_str_eq(kc_json_str(ans, "response", "result", "status"), "Failure");
	ck_assert_ptr_nonnull(strstr(kc_json_str(ans, "response", "result", "message"),
	    "team-a/broken"));
	ck_assert_ptr_nonnull(strstr(kc_json_str(ans, "response", "result", "message"),
	    "spec"));
	json_object_put(ans);
	kc_buf_free(&out);
}
END_TEST

Suite *
ctl_review_suite(void)
{
	Suite *s = suite_create("ctl_review");
	TCase *tc = tcase_create("review");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_golden_v1_mixed);
	tcase_add_test(tc, test_golden_v1beta1);
	tcase_add_test(tc, test_golden_failure);
	tcase_add_test(tc, test_golden_empty);
	tcase_add_test(tc, test_failure_names_object_and_field);
	tcase_add_test(tc, test_many_objects_order);
	tcase_add_test(tc, test_too_many_objects);
	tcase_add_loop_test(tc, test_not_a_review, 0, (int)KC_ARRAY_SIZE(bad));
	tcase_add_loop_test(tc, test_data_failure, 0, (int)KC_ARRAY_SIZE(data_bad));
	tcase_add_test(tc, test_deep_nesting);
	tcase_add_test(tc, test_huge_body);
	tcase_add_test(tc, test_long_uid);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_alloc_failures);
	tcase_add_test(tc, test_answer_cap);
	tcase_add_test(tc, test_selftest);
	tcase_add_test(tc, test_selftest_fails);
	tcase_add_test(tc, test_with_ty_convert);
	suite_add_tcase(s, tc);
	return s;
}

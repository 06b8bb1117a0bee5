/*
 * test_dc_authn.c: TokenReview (devcluster/authn.c) through api_handle():
 * a static token, an unknown one, a service-account JWT (tokens.c), the
 * audiences asked for, RBAC on tokenreviews and upstream's 400 messages.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/str.h>

#include "dc_testutil.h"
#include "testutil.h"

#define REVIEWS		"/apis/authentication.k8s.io/v1/tokenreviews"
#define AUD		"https://kubernetes.default.svc.cluster.local"

static struct dc *dc;
static char *key_pem;

static void
setup(void)
{
	struct kc_status st = { 0 };
	size_t len;

	fake_clock_install(5000000);
	key_pem = tu_fixture("tokens/sa.key", &len);
	dc = dct_new(NULL);
	ck_assert_int_eq(authz_init(dc), 0);
	ck_assert_int_eq(tokens_init(dc, &(struct tokens_opts){ .key_pem = key_pem }, &st), 0);
	ck_assert_int_eq(authn_init(dc), 0);
	ck_assert_int_eq(authn_init(dc), 0);
	ck_assert_int_eq(auth_add(dc->auth, "bob-token", "bob", "bob-uid", NULL), 0);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/serviceaccounts",
	    .body = "{\"apiVersion\":\"v1\",\"kind\":\"ServiceAccount\",\"metadata\":{\"name\":"
	    "\"scraper\"}}" }, 201, NULL));
}

static void
teardown(void)
{
	authn_fini(dc);
	tokens_fini(dc);
	dc = api_free(dc);
	kc_free(key_pem);
	fake_clock_uninstall();
}

/* POSTs a TokenReview of 'token' (with 'extra' spec members) as 'as'. */
static struct json_object *
review(const char *token, const char *extra, const char *as, int want)
{
	char body[4096];

	(void)snprintf(body, sizeof(body), "{\"apiVersion\":\"authentication.k8s.io/v1\","
	    "\"kind\":\"TokenReview\",\"spec\":{\"token\":\"%s\"%s}}", token,
	    extra != NULL ? extra : "");
	return dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = REVIEWS,
	    .body = body, .token = as }, want, NULL);
}

START_TEST(test_static_token)
{
	struct json_object *o = review("bob-token", NULL, NULL, 201);

	ck_assert_str_eq(kc_json_str(o, "kind"), "TokenReview");
	ck_assert(kc_json_bool(o, false, "status", "authenticated"));
	ck_assert_str_eq(kc_json_str(o, "status", "user", "username"), "bob");
	ck_assert_str_eq(kc_json_str(o, "status", "user", "uid"), "bob-uid");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(kc_json_get(o,
	    "status", "user", "groups"), 0)), "system:authenticated");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(kc_json_get(o,
	    "status", "audiences"), 0)), AUD);
	ck_assert_ptr_null(kc_json_get(o, "status", "error"));
	dct_put(o);
}
END_TEST

START_TEST(test_invalid_token)
{
	struct json_object *o = review("nope", NULL, NULL, 201);

	ck_assert(!kc_json_bool(o, true, "status", "authenticated"));
	ck_assert_str_eq(kc_json_str(o, "status", "error"), "invalid bearer token");
	ck_assert_ptr_null(kc_json_get(o, "status", "user"));
	dct_put(o);
	/* A token with a blank would be cut by the header parser: refused. */
	o = review("bob-token x", NULL, NULL, 201);
	ck_assert(!kc_json_bool(o, true, "status", "authenticated"));
	dct_put(o);
}
END_TEST

START_TEST(test_service_account_token)
{
	struct json_object *o;
	char *tok = NULL;

	ck_assert_int_eq(tokens_issue(dc, "default", "scraper", 3600, NULL, NULL, &tok), 0);
	o = review(tok, NULL, NULL, 201);
	ck_assert(kc_json_bool(o, false, "status", "authenticated"));
	ck_assert_str_eq(kc_json_str(o, "status", "user", "username"),
	    "system:serviceaccount:default:scraper");
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "status", "user", "groups")),
	    3);
	dct_put(o);
	/* Audiences: ours among those asked passes, others do not. */
	o = review(tok, ",\"audiences\":[\"other\",\"" AUD "\"]", NULL, 201);
	ck_assert(kc_json_bool(o, false, "status", "authenticated"));
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "status", "audiences")), 1);
	dct_put(o);
	o = review(tok, ",\"audiences\":[\"other\"]", NULL, 201);
	ck_assert(!kc_json_bool(o, true, "status", "authenticated"));
	dct_put(o);
	/* RBAC: the service account may not create tokenreviews. */
	o = review("bob-token", NULL, tok, 403);
	dct_expect_message(o, "tokenreviews.authentication.k8s.io is forbidden: User "
	    "\"system:serviceaccount:default:scraper\" cannot create resource \"tokenreviews\" "
	    "in API group \"authentication.k8s.io\" at the cluster scope");
	kc_free(tok);
}
END_TEST

/* A TokenRequest for scraper: its spec ('spec' JSON); the token, to kc_free(). */
static char *
request_token(const char *spec)
{
	struct json_object *o;
	char body[1024], *tok;

	(void)snprintf(body, sizeof(body), "{\"apiVersion\":\"authentication.k8s.io/v1\","
	    "\"kind\":\"TokenRequest\",\"spec\":%s}", spec);
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/serviceaccounts/scraper/token",
	    .body = body }, 201, NULL);
	ck_assert_ptr_nonnull(tok = kc_strdup(kc_json_str(o, "status", "token")));
	dct_put(o);
	return tok;
}

START_TEST(test_audiences)
{
	struct json_object *o, *a;
	char *tok = request_token("{\"audiences\":[\"metrics\",\"other\"]}");

	/* The token's audiences meet those asked: status.audiences is what is left. */
	o = review(tok, ",\"audiences\":[\"x\",\"other\",\"metrics\"]", NULL, 201);
	ck_assert(kc_json_bool(o, false, "status", "authenticated"));
	a = kc_json_get(o, "status", "audiences");
	ck_assert_uint_eq(json_object_array_length(a), 2);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(a, 0)), "metrics");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(a, 1)), "other");
	dct_put(o);
	/* None asked: the API audience, which this token is not for. */
	o = review(tok, NULL, NULL, 201);
	ck_assert(!kc_json_bool(o, true, "status", "authenticated"));
	ck_assert_str_eq(kc_json_str(o, "status", "error"), "token audiences [\"metrics\" "
	    "\"other\"] is invalid for the target audiences [\"" AUD "\"]");
	ck_assert_ptr_null(kc_json_get(o, "status", "user"));
	dct_put(o);
	o = review(tok, ",\"audiences\":[\"nope\"]", NULL, 201);
	ck_assert_str_eq(kc_json_str(o, "status", "error"), "token audiences [\"metrics\" "
	    "\"other\"] is invalid for the target audiences [\"nope\"]");
	dct_put(o);
	/* A static token knows only the API audience. */
	o = review("bob-token", ",\"audiences\":[\"metrics\"]", NULL, 201);
	ck_assert(!kc_json_bool(o, true, "status", "authenticated"));
	dct_put(o);
	kc_free(tok);
}
END_TEST

START_TEST(test_extra)
{
	struct json_object *o, *pod, *ex;
	char *tok, want[64];
	const char *uid;

	pod = dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/pods",
	    .body = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
	    "\"spec\":{\"serviceAccountName\":\"scraper\",\"containers\":[{\"name\":\"c\","
	    "\"image\":\"busybox\"}]}}" }, 201, NULL);
	uid = kc_json_str(pod, "metadata", "uid");
	tok = request_token("{\"boundObjectRef\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	    "\"name\":\"p\"}}");
	o = review(tok, NULL, NULL, 201);
	ck_assert(kc_json_bool(o, false, "status", "authenticated"));
	ex = kc_json_get(o, "status", "user", "extra");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(kc_json_get(ex,
	    "authentication.kubernetes.io/pod-name"), 0)), "p");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(kc_json_get(ex,
	    "authentication.kubernetes.io/pod-uid"), 0)), uid);
	/* From 1.30 (the devcluster's default is 1.32): the token's id too. */
	ck_assert_int_eq(strncmp(json_object_get_string(json_object_array_get_idx(
	    kc_json_get(ex, "authentication.kubernetes.io/credential-id"), 0)), "JTI=", 4), 0);
	ck_assert_uint_eq(json_object_object_length(ex), 3);
	dct_put(o);
	/* An unbound token has no pod; at 1.29 no credential id either. */
	kc_free(tok);
	tok = request_token("{}");
	o = review(tok, NULL, NULL, 201);
	ex = kc_json_get(o, "status", "user", "extra");
	ck_assert_uint_eq(json_object_object_length(ex), 1);
	dct_put(o);
	(void)snprintf(want, sizeof(want), "%s", dc->minor);
	(void)kc_strlcpy(dc->minor, "29", sizeof(dc->minor));
	o = review(tok, NULL, NULL, 201);
	ck_assert(kc_json_bool(o, false, "status", "authenticated"));
	ck_assert_ptr_null(kc_json_get(o, "status", "user", "extra"));
	dct_put(o);
	(void)kc_strlcpy(dc->minor, want, sizeof(dc->minor));
	kc_free(tok);
	dct_put(pod);
}
END_TEST

START_TEST(test_bad_requests)
{
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = REVIEWS,
	    .body = "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\","
	    "\"spec\":{}}" }, 400, NULL), "token is required for TokenReview in authentication");
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = REVIEWS,
	    .body = "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\","
	    "\"metadata\":{\"namespace\":\"x\"},\"spec\":{\"token\":\"t\"}}" }, 400, NULL),
	    "namespace is not allowed on this type: x");
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = REVIEWS,
	    .body = "[1]" }, 400, NULL));
	/* Only create: a list is 405. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = REVIEWS }, 405,
	    NULL));
}
END_TEST

START_TEST(test_alloc_failures)
{
	struct json_object *st = NULL;
	int r;

	for (size_t n = 0;; n++) {
		st = NULL;
		fail_alloc_after(n);
		r = authn_review_status(dc, "bob-token", NULL, &st);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(st);
		ck_assert_uint_lt(n, 1000);
	}
	ck_assert(kc_json_bool(st, false, "authenticated"));
	json_object_put(st);
}
END_TEST

Suite *
dc_authn_suite(void)
{
	Suite *s = suite_create("dc_authn");
	TCase *tc = tcase_create("authn");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_static_token);
	tcase_add_test(tc, test_invalid_token);
	tcase_add_test(tc, test_service_account_token);
	tcase_add_test(tc, test_bad_requests);
	tcase_add_test(tc, test_audiences);
	tcase_add_test(tc, test_extra);
	tcase_add_test(tc, test_alloc_failures);
	suite_add_tcase(s, tc);
	return s;
}

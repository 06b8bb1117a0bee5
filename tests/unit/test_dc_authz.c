/*
 * test_dc_authz.c: authz.c, RBAC wired into the request path, driven
 * through api_handle() as kubectl would: decisions from stored Roles and
 * bindings, the 403 Status, aggregation written back to storage, the
 * access reviews, SelfSubjectReview and impersonation checks.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/str.h>

#include "dc_testutil.h"
#include "testutil.h"

#define RBAC		"/apis/rbac.authorization.k8s.io/v1"
#define AUTHZ		"/apis/authorization.k8s.io/v1"
#define PODS		"/api/v1/namespaces/default/pods"

static struct dc *dc;

static void
setup(void)
{
	dc = dct_new(NULL);
	ck_assert_int_eq(auth_add(dc->auth, "tok-alice", "alice", "u-alice",
	    (const char *const []){ "devs", NULL }), 0);
	ck_assert_int_eq(auth_add(dc->auth, "tok-bob", "bob", "u-bob", NULL), 0);
	ck_assert_int_eq(authz_init(dc), 0);
}

static void
teardown(void)
{
	authz_fini(dc);
	ck_assert_ptr_null(dc->hooks.authorize);
	dc = api_free(dc);
}

static struct json_object *
call(enum dc_method m, const char *target, const char *token, const char *body, int want)
{
	return dct_run(dc, &(struct dct_call){ .method = m, .target = target, .token = token,
	    .body = body }, want, NULL);
}

static void
post(const char *target, const char *body)
{
	dct_put(call(DC_POST, target, NULL, body, 201));
}

/* Whether the JSON text of 'o' contains 'needle'. */
static bool
text_has(const struct json_object *o, const char *needle)
{
	return strstr(json_object_to_json_string((struct json_object *)(uintptr_t)o),
	    needle) != NULL;
}

START_TEST(bootstrap_policy)
{
	struct json_object *o;

	ck_assert_uint_ge(authz_count(dc, "ClusterRole"), 10);
	ck_assert_uint_ge(authz_count(dc, "ClusterRoleBinding"), 4);
	o = call(DC_GET, RBAC "/clusterroles/view", NULL, NULL, 200);
	ck_assert(text_has(o, "\"pods\""));
	dct_put(o);
	/* admin contains edit contains view. */
	o = call(DC_GET, RBAC "/clusterroles/admin", NULL, NULL, 200);
	ck_assert(text_has(o, "localsubjectaccessreviews"));
	ck_assert(text_has(o, "\"pods\""));
	dct_put(o);
	/* A second init is harmless. */
	ck_assert_int_eq(authz_init(dc), 0);
}
END_TEST

START_TEST(denied_then_granted)
{
	struct json_object *o;

	o = call(DC_GET, PODS, "tok-alice", NULL, 403);
	ck_assert_str_eq(kc_json_str(o, "reason"), "Forbidden");
	ck_assert_str_eq(kc_json_str(o, "details", "kind"), "pods");
	dct_expect_message(o, "pods is forbidden: User \"alice\" cannot list resource "
	    "\"pods\" in API group \"\" in the namespace \"default\"");
	post(RBAC "/namespaces/default/roles", "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\","
	    "\"kind\":\"Role\",\"metadata\":{\"name\":\"r\"},\"rules\":[{\"apiGroups\":[\"\"],"
	    "\"resources\":[\"pods\"],\"verbs\":[\"list\",\"get\"]}]}");
	post(RBAC "/namespaces/default/rolebindings", "{\"apiVersion\":"
	    "\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\",\"metadata\":"
	    "{\"name\":\"b\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
	    "\"kind\":\"Role\",\"name\":\"r\"},\"subjects\":[{\"kind\":\"Group\","
	    "\"apiGroup\":\"rbac.authorization.k8s.io\",\"name\":\"devs\"}]}");
	ck_assert_uint_eq(authz_count(dc, "Role"), 1);
	dct_put(call(DC_GET, PODS, "tok-alice", NULL, 200));
	/* Only in its namespace, and not for bob. */
	dct_put(call(DC_GET, "/api/v1/namespaces/other/pods", "tok-alice", NULL, 403));
	dct_put(call(DC_GET, PODS, "tok-bob", NULL, 403));
	/* Deleting the binding takes the grant away. */
	dct_put(call(DC_DELETE, RBAC "/namespaces/default/rolebindings/b", NULL, NULL, 200));
	dct_put(call(DC_GET, PODS, "tok-alice", NULL, 403));
	/* Non-resource paths: discovery is allowed, others are not. */
	dct_put(call(DC_GET, "/api", "tok-bob", NULL, 200));
	o = call(DC_POST, AUTHZ "/subjectaccessreviews", NULL, "{\"spec\":{\"user\":"
	    "\"bob\",\"nonResourceAttributes\":{\"verb\":\"get\",\"path\":"
	    "\"/metrics\"}}}", 201);
	ck_assert(!kc_json_bool(o, true, "status", "allowed"));
	dct_put(o);
}
END_TEST

START_TEST(aggregation_written_back)
{
	struct json_object *o;

	post(RBAC "/clusterroles", "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\","
	    "\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"widgets\",\"labels\":"
	    "{\"rbac.authorization.k8s.io/aggregate-to-view\":\"true\"}},\"rules\":"
	    "[{\"apiGroups\":[\"example.com\"],\"resources\":[\"widgets\"],"
	    "\"verbs\":[\"get\",\"list\"]}]}");
	o = call(DC_GET, RBAC "/clusterroles/view", NULL, NULL, 200);
	ck_assert(text_has(o, "widgets"));
	dct_put(o);
	o = call(DC_GET, RBAC "/clusterroles/admin", NULL, NULL, 200);
	ck_assert(text_has(o, "widgets"));
	dct_put(o);
	dct_put(call(DC_DELETE, RBAC "/clusterroles/widgets", NULL, NULL, 200));
	o = call(DC_GET, RBAC "/clusterroles/view", NULL, NULL, 200);
	ck_assert(!text_has(o, "widgets"));
	dct_put(o);
}
END_TEST

START_TEST(access_reviews)
{
	struct json_object *o;
	const char *ssar = "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":"
	    "\"SelfSubjectAccessReview\",\"spec\":{\"resourceAttributes\":{\"namespace\":"
	    "\"default\",\"verb\":\"get\",\"resource\":\"pods\"}}}";

	o = call(DC_POST, AUTHZ "/selfsubjectaccessreviews", "tok-alice", ssar, 201);
	ck_assert_str_eq(kc_json_str(o, "kind"), "SelfSubjectAccessReview");
	ck_assert(!kc_json_bool(o, true, "status", "allowed"));
	ck_assert_str_eq(kc_json_str(o, "spec", "resourceAttributes", "verb"), "get");
	dct_put(o);
	post(RBAC "/clusterrolebindings", "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\","
	    "\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"alice-view\"},"
	    "\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":"
	    "\"ClusterRole\",\"name\":\"view\"},\"subjects\":[{\"kind\":\"User\","
	    "\"apiGroup\":\"rbac.authorization.k8s.io\",\"name\":\"alice\"}]}");
	o = call(DC_POST, AUTHZ "/selfsubjectaccessreviews", "tok-alice", ssar, 201);
	ck_assert(kc_json_bool(o, false, "status", "allowed"));
	ck_assert_str_eq(kc_json_str(o, "status", "reason"), "RBAC: allowed by "
	    "ClusterRoleBinding \"alice-view\" of ClusterRole \"view\" to User \"alice\"");
	dct_put(o);
	/* Neither attribute set: 422. */
	dct_put(call(DC_POST, AUTHZ "/selfsubjectaccessreviews", "tok-alice",
	    "{\"spec\":{}}", 422));
	/* SubjectAccessReview: needs the permission, and a user or group. */
	dct_put(call(DC_POST, AUTHZ "/subjectaccessreviews", "tok-alice",
	    "{\"spec\":{\"user\":\"bob\",\"resourceAttributes\":{\"verb\":\"get\"}}}", 403));
	o = call(DC_POST, AUTHZ "/subjectaccessreviews", NULL, "{\"spec\":{\"user\":"
	    "\"alice\",\"resourceAttributes\":{\"verb\":\"list\",\"resource\":\"pods\","
	    "\"namespace\":\"x\"}}}", 201);
	ck_assert(kc_json_bool(o, false, "status", "allowed"));
	dct_put(o);
	o = call(DC_POST, AUTHZ "/subjectaccessreviews", NULL, "{\"spec\":{\"groups\":"
	    "[\"system:masters\"],\"nonResourceAttributes\":{\"verb\":\"get\",\"path\":"
	    "\"/metrics\"}}}", 201);
	ck_assert(kc_json_bool(o, false, "status", "allowed"));
	dct_put(o);
	dct_put(call(DC_POST, AUTHZ "/subjectaccessreviews", NULL,
	    "{\"spec\":{\"resourceAttributes\":{\"verb\":\"get\"}}}", 422));
	/* LocalSubjectAccessReview: the namespace of the URL. */
	o = call(DC_POST, AUTHZ "/namespaces/team/localsubjectaccessreviews", NULL,
	    "{\"spec\":{\"user\":\"bob\",\"resourceAttributes\":{\"verb\":\"get\","
	    "\"resource\":\"pods\"}}}", 201);
	ck_assert(!kc_json_bool(o, true, "status", "allowed"));
	ck_assert_str_eq(kc_json_str(o, "metadata", "namespace"), "team");
	dct_put(o);
	dct_put(call(DC_POST, AUTHZ "/namespaces/team/localsubjectaccessreviews", NULL,
	    "{\"spec\":{\"user\":\"bob\",\"resourceAttributes\":{\"verb\":\"get\","
	    "\"namespace\":\"other\"}}}", 400));
	/* Not stored, create only, bad bodies. */
	dct_put(call(DC_GET, AUTHZ "/selfsubjectaccessreviews", NULL, NULL, 405));
	dct_put(call(DC_POST, AUTHZ "/selfsubjectaccessreviews", NULL, "[1]", 400));
}
END_TEST

START_TEST(rules_and_whoami)
{
	struct json_object *o, *rules;

	o = call(DC_POST, AUTHZ "/selfsubjectrulesreviews", "tok-bob",
	    "{\"spec\":{\"namespace\":\"default\"}}", 201);
	ck_assert_str_eq(kc_json_str(o, "kind"), "SelfSubjectRulesReview");
	rules = kc_json_arr_of(kc_json_obj_of(o, "status"), "resourceRules");
	ck_assert_ptr_nonnull(rules);
	ck_assert(text_has(rules, "selfsubjectaccessreviews"));
	ck_assert(!text_has(rules, "\"pods\""));
	dct_put(o);
	dct_put(call(DC_POST, AUTHZ "/selfsubjectrulesreviews", "tok-bob", "{\"spec\":{}}",
	    400));
	o = call(DC_POST, AUTHZ "/selfsubjectrulesreviews", NULL,
	    "{\"spec\":{\"namespace\":\"default\"}}", 201);
	rules = kc_json_arr_of(kc_json_obj_of(o, "status"), "resourceRules");
	/* system:masters: the privileged authorizer's rule first. */
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(kc_json_arr_of(
	    json_object_array_get_idx(rules, 0), "verbs"), 0)), "*");
	dct_put(o);
	o = call(DC_POST, "/apis/authentication.k8s.io/v1/selfsubjectreviews", "tok-alice",
	    "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}",
	    201);
	ck_assert_str_eq(kc_json_str(o, "status", "userInfo", "username"), "alice");
	ck_assert_str_eq(kc_json_str(o, "status", "userInfo", "uid"), "u-alice");
	ck_assert(text_has(o, "system:authenticated"));
	dct_put(o);
}
END_TEST

START_TEST(impersonation)
{
	struct json_object *o;

	o = dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = "/api/v1/namespaces/default", .token = "tok-alice",
	    .imp_user = "bob" }, 403, NULL);
	dct_expect_message(o, "users \"bob\" is forbidden: User \"alice\" cannot impersonate "
	    "resource \"users\" in API group \"\" at the cluster scope");
	/* The admin may, and then acts as bob (who may not read namespaces). */
	o = dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = "/api/v1/namespaces/default", .imp_user = "bob" }, 403, NULL);
	dct_expect_message(o, "namespaces \"default\" is forbidden: User \"bob\" cannot get "
	    "resource \"namespaces\" in API group \"\" at the cluster scope");
	/* A ClusterRole with impersonate on users lets alice. */
	post(RBAC "/clusterroles", "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\","
	    "\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"imp\"},\"rules\":"
	    "[{\"apiGroups\":[\"\"],\"resources\":[\"users\"],\"verbs\":[\"impersonate\"],"
	    "\"resourceNames\":[\"admin2\"]}]}");
	post(RBAC "/clusterrolebindings", "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\","
	    "\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"imp\"},\"roleRef\":"
	    "{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":"
	    "\"imp\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]}");
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/apis/authentication.k8s.io/v1/selfsubjectreviews", .token = "tok-alice",
	    .imp_user = "admin2", .body = "{}" }, 201, NULL);
	ck_assert_str_eq(kc_json_str(o, "status", "userInfo", "username"), "admin2");
	dct_put(o);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = "/api/v1/namespaces/default", .token = "tok-alice",
	    .imp_user = "bob" }, 403, NULL));

	/* Every group counts: whoami shows them, and a grant to the second works. */
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/apis/authentication.k8s.io/v1/selfsubjectreviews",
	    .imp_user = "bob", .imp_groups = (const char *const []){ "a", "b", NULL },
	    .body = "{}" }, 201, NULL);
	{
		const struct json_object *g = kc_json_get(o, "status", "userInfo", "groups");

		ck_assert_uint_eq(json_object_array_length(g), 3);
		ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(g, 0)), "a");
		ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(g, 1)), "b");
		ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(g, 2)),
		    "system:authenticated");
	}
	dct_put(o);
	post(RBAC "/namespaces/default/rolebindings", "{\"apiVersion\":"
	    "\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\",\"metadata\":"
	    "{\"name\":\"b-view\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
	    "\"kind\":\"ClusterRole\",\"name\":\"view\"},\"subjects\":[{\"kind\":"
	    "\"Group\",\"name\":\"b\"}]}");
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = PODS,
	    .imp_user = "bob", .imp_groups = (const char *const []){ "a", "b", NULL } },
	    200, NULL));
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = AUTHZ "/selfsubjectaccessreviews", .imp_user = "bob",
	    .imp_groups = (const char *const []){ "a", "b", NULL }, .body = "{\"spec\":"
	    "{\"resourceAttributes\":{\"verb\":\"list\",\"resource\":\"pods\","
	    "\"namespace\":\"default\"}}}" }, 201, NULL);
	ck_assert(kc_json_bool(o, false, "status", "allowed"));
	dct_put(o);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = PODS,
	    .imp_user = "bob", .imp_groups = (const char *const []){ "a", NULL } },
	    403, NULL));
}
END_TEST

START_TEST(escalation)
{
	struct json_object *o;
	const char *rb = "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":"
	    "\"RoleBinding\",\"metadata\":{\"name\":\"grab\"},\"roleRef\":{\"apiGroup\":"
	    "\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":\"%s\"},"
	    "\"subjects\":[{\"kind\":\"User\",\"name\":\"bob\"}]}";
	char body[512];

	/* alice may write roles and bindings in default, and get pods. */
	post(RBAC "/namespaces/default/roles", "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\","
	    "\"kind\":\"Role\",\"metadata\":{\"name\":\"w\"},\"rules\":[{\"apiGroups\":"
	    "[\"rbac.authorization.k8s.io\"],\"resources\":[\"roles\",\"rolebindings\"],"
	    "\"verbs\":[\"create\",\"update\",\"get\"]},{\"apiGroups\":[\"\"],\"resources\":"
	    "[\"pods\"],\"verbs\":[\"get\"]}]}");
	post(RBAC "/namespaces/default/rolebindings", "{\"apiVersion\":"
	    "\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\",\"metadata\":"
	    "{\"name\":\"w\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
	    "\"kind\":\"Role\",\"name\":\"w\"},\"subjects\":[{\"kind\":\"User\","
	    "\"name\":\"alice\"}]}");
	(void)snprintf(body, sizeof(body), rb, "cluster-admin");
	o = call(DC_POST, RBAC "/namespaces/default/rolebindings", "tok-alice", body, 403);
	ck_assert_str_eq(kc_json_str(o, "reason"), "Forbidden");
	ck_assert_str_eq(kc_json_str(o, "details", "name"), "grab");
	ck_assert_str_eq(kc_json_str(o, "details", "group"), "rbac.authorization.k8s.io");
	ck_assert_str_eq(kc_json_str(o, "details", "kind"), "rolebindings");
	dct_expect_message(o, "rolebindings.rbac.authorization.k8s.io \"grab\" is forbidden: "
	    "user \"alice\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to "
	    "grant RBAC permissions not currently held:\n{APIGroups:[\"*\"], Resources:"
	    "[\"*\"], Verbs:[\"*\"]}\n{NonResourceURLs:[\"*\"], Verbs:[\"*\"]}");
	/* A missing role: 404 from the registry. */
	(void)snprintf(body, sizeof(body), rb, "gone");
	o = call(DC_POST, RBAC "/namespaces/default/rolebindings", "tok-alice", body, 404);
	ck_assert_str_eq(kc_json_str(o, "details", "kind"), "clusterroles");
	dct_expect_message(o, "clusterroles.rbac.authorization.k8s.io \"gone\" not found");
	/* The admin (system:masters) may. */
	dct_put(call(DC_POST, RBAC "/namespaces/default/rolebindings?dryRun=All", NULL, body,
	    201));
	/* A Role within alice's rights, then one beyond them, then an update. */
	dct_put(call(DC_POST, RBAC "/namespaces/default/roles", "tok-alice",
	    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"Role\",\"metadata\":"
	    "{\"name\":\"p\"},\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],"
	    "\"verbs\":[\"get\"],\"resourceNames\":[\"x\"]}]}", 201));
	o = call(DC_PUT, RBAC "/namespaces/default/roles/p", "tok-alice",
	    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"Role\",\"metadata\":"
	    "{\"name\":\"p\"},\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\","
	    "\"secrets\"],\"verbs\":[\"get\"]}]}", 403);
	dct_expect_message(o, "roles.rbac.authorization.k8s.io \"p\" is forbidden: user "
	    "\"alice\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant "
	    "RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], "
	    "Verbs:[\"get\"]}");
	ck_assert_uint_eq(authz_count(dc, "Role"), 2);
}
END_TEST

/* Initialisation under allocation failures: -ENOMEM or success, no leak. */
START_TEST(init_alloc_failures)
{
	authz_fini(dc);
	for (size_t n = 0; n < 20000; n += 37) {
		int r;

		fail_alloc_after(n);
		r = authz_init(dc);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			authz_fini(dc);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(plugin_state(dc, &authz_plugin));
	}
	ck_assert_int_eq(authz_init(dc), 0);
}
END_TEST

Suite *
dc_authz_suite(void)
{
	Suite *s = suite_create("dc_authz");
	TCase *tc = tcase_create("authz");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, bootstrap_policy);
	tcase_add_test(tc, denied_then_granted);
	tcase_add_test(tc, aggregation_written_back);
	tcase_add_test(tc, access_reviews);
	tcase_add_test(tc, rules_and_whoami);
	tcase_add_test(tc, impersonation);
	tcase_add_test(tc, escalation);
	tcase_add_test(tc, init_alloc_failures);
	suite_add_tcase(s, tc);
	return s;
}

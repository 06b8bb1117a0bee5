/*
 * test_dc_rbac.c: RBAC authorization, aggregation, bootstrap policy,
 * rules reviews, impersonation and 403 messages (devcluster/rbac.c).
 *
 * Expected decisions and strings are kube-apiserver's: RuleAllows and
 * VisitRulesFor (plugin/pkg/auth/authorizer/rbac, pkg/registry/rbac/
 * validation/rule.go), the describers' allow reasons, NotFound errors
 * aggregated as utilerrors prints them, the clusterrole-aggregation
 * controller's union, the bootstrap policy's roles, the impersonation
 * filter's checks and responsewriters.Forbidden's message. The policy
 * under test is tests/fixtures/rbac/policy.json; aggregation cases use
 * tests/fixtures/rbac/aggregate.json and the bootstrap roles.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/err.h>
#include <kc/json.h>

#include "../../devcluster/rbac.h"
#include "testutil.h"

#define G(...)		((const char *const []){ __VA_ARGS__, NULL })
#define RES(v, g, r, sub, n, namespace) { .verb = (v), .group = (g), \
	.resource = (r), .subresource = (sub), .name = (n), .ns = (namespace), \
	.resource_request = true }
#define URL(v, p)	{ .verb = (v), .path = (p) }
#define S_OR(s)		((s) != NULL ? (s) : "")

static struct json_object *
parse(const char *text)
{
	struct kc_status st = { 0 };
	struct json_object *o = NULL;

	ck_assert_msg(kc_json_parse(text, strlen(text), &o, &st) == 0, "%s: %s", text,
	    st.message);
	return o;
}

static struct json_object *
fixture(const char *name)
{
	char *text = tu_fixture(name, NULL);
	struct json_object *o = parse(text);

	kc_free(text);
	return o;
}

/* Puts every object of the JSON array 'arr' into 'idx'. */
static void
put_all(struct rbac_index *idx, struct json_object *arr)
{
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *o = json_object_array_get_idx(arr, i);
		struct kc_status st = { 0 };
		int r = rbac_index_put(idx, kc_json_str(o, "kind"), o, &st);

		ck_assert_msg(r == 0, "item %zu: %d %s", i, r, st.message);
	}
}

static struct rbac_index *
policy_index(void)
{
	struct rbac_index *idx = NULL;
	struct json_object *arr = fixture("rbac/policy.json");

	ck_assert_int_eq(rbac_index_new(&idx), 0);
	put_all(idx, arr);
	json_object_put(arr);
	return idx;
}

static size_t
count(const char *const *v)
{
	size_t n = 0;

	while (v != NULL && v[n] != NULL)
		n++;
	return n;
}

static struct rbac_user
user(const char *name, const char *const *groups)
{
	return (struct rbac_user){ .name = name, .groups = groups, .ngroups = count(groups) };
}

static void
put_text(struct rbac_index *idx, const char *text)
{
	struct json_object *o = parse(text);
	struct kc_status st = { 0 };

	ck_assert_msg(rbac_index_put(idx, kc_json_str(o, "kind"), o, &st) == 0, "%s: %s",
	    text, st.message);
	json_object_put(o);
}

static bool
allowed(const struct rbac_index *idx, const char *name, const char *const *groups,
    const struct rbac_attrs *a)
{
	struct rbac_user u = user(name, groups);
	char reason[RBAC_REASON_MAX];

	return rbac_authorize(idx, &u, a, reason, sizeof(reason));
}

/*
 * The rules of kube-apiserver's RBAC authorizer, as a table.
 */

struct authz_case {
	const char		*user;
	const char *const	*groups;
	struct rbac_attrs	 a;
	bool			 allowed;
	const char		*reason;
};

static const struct authz_case authz_cases[] = {
	/* Verbs, groups and resources; first binding by name wins. */
	{ "alice", NULL, RES("get", "", "pods", "", "p1", "default"), true,
	    "RBAC: allowed by ClusterRoleBinding \"alice-pods\" of ClusterRole "
	    "\"pod-reader\" to User \"alice\"" },
	{ "alice", NULL, RES("list", "", "pods", "", "", ""), true,
	    "RBAC: allowed by ClusterRoleBinding \"alice-pods\" of ClusterRole "
	    "\"pod-reader\" to User \"alice\"" },
	{ "alice", NULL, RES("watch", "", "pods", "", "", "team-a"), true, NULL },
	{ "alice", NULL, RES("delete", "", "pods", "", "p1", "default"), false, "" },
	{ "alice", NULL, RES("get", "apps", "pods", "", "p1", "default"), false, "" },
	{ "alice", NULL, RES("get", "", "pods", "log", "p1", "default"), false, "" },
	{ "alice", NULL, RES("get", "", "services", "", "s", "default"), false, "" },
	{ "alice", NULL, URL("get", "/healthz"), false, "" },
	{ "Alice", NULL, RES("get", "", "pods", "", "p1", "default"), false, "" },
	/* "*" verbs; Group subjects; the first applying subject is named. */
	{ "bob", G("devs", "system:authenticated"),
	    RES("patch", "apps", "deployments", "", "d", "x"), true,
	    "RBAC: allowed by ClusterRoleBinding \"devs-deploy\" of ClusterRole "
	    "\"star-verbs\" to Group \"devs\"" },
	{ "bob", G("devs"), RES("escalate", "apps", "deployments", "", "", ""), true, NULL },
	{ "bob", G("devs"), RES("patch", "extensions", "deployments", "", "d", "x"),
	    false, "" },
	{ "bob", G("devs"), RES("get", "apps", "deployments", "scale", "d", "x"),
	    false, "" },
	{ "bob", NULL, RES("patch", "apps", "deployments", "", "d", "x"), false, "" },
	{ "nobody", NULL, RES("get", "apps", "deployments", "", "d", "x"), true,
	    "RBAC: allowed by ClusterRoleBinding \"devs-deploy\" of ClusterRole "
	    "\"star-verbs\" to User \"nobody\"" },
	/* "*" resources (subresources too) and "*" API groups. */
	{ "carol", NULL, RES("list", "batch", "jobs", "", "", "ns"), true,
	    "RBAC: allowed by ClusterRoleBinding \"carol-batch\" of ClusterRole "
	    "\"all-resources\" to User \"carol\"" },
	{ "carol", NULL, RES("list", "batch", "jobs", "status", "", "ns"), true, NULL },
	{ "carol", NULL, RES("list", "", "jobs", "", "", "ns"), false, "" },
	{ "carol", NULL, RES("get", "whatever.io", "configmaps", "", "c", "ns"), true,
	    "RBAC: allowed by ClusterRoleBinding \"carol-any-group\" of ClusterRole "
	    "\"any-group\" to User \"carol\"" },
	{ "carol", NULL, RES("get", "", "configmaps", "", "c", ""), true, NULL },
	{ "carol", NULL, RES("delete", "", "configmaps", "", "c", "ns"), false, "" },
	/* "res/sub" and "*\/sub". */
	{ "dave", NULL, RES("get", "", "pods", "log", "p", "default"), true,
	    "RBAC: allowed by ClusterRoleBinding \"dave-logs\" of ClusterRole "
	    "\"logs\" to User \"dave\"" },
	{ "dave", NULL, RES("get", "", "pods", "", "p", "default"), false, "" },
	{ "dave", NULL, RES("get", "", "pods", "exec", "p", "default"), false, "" },
	{ "dave", NULL, RES("update", "", "pods", "status", "p", "default"), true,
	    "RBAC: allowed by ClusterRoleBinding \"dave-status\" of ClusterRole "
	    "\"any-status\" to User \"dave\"" },
	{ "dave", NULL, RES("update", "", "services", "status", "s", "default"), true, NULL },
	{ "dave", NULL, RES("update", "", "pods", "", "p", "default"), false, "" },
	{ "dave", NULL, RES("update", "", "status", "", "p", "default"), false, "" },
	{ "dave", NULL, RES("update", "", "pods", "statuses", "p", "default"), false, "" },
	{ "dave", NULL, RES("update", "apps", "deployments", "status", "d", "default"),
	    false, "" },
	/* resourceNames: never for collections or creates. */
	{ "erin", NULL, RES("get", "", "configmaps", "", "cm1", "default"), true,
	    "RBAC: allowed by ClusterRoleBinding \"erin-named\" of ClusterRole "
	    "\"named-cm\" to User \"erin\"" },
	{ "erin", NULL, RES("update", "", "configmaps", "", "cm1", "default"), true, NULL },
	{ "erin", NULL, RES("delete", "", "configmaps", "", "cm1", ""), true, NULL },
	{ "erin", NULL, RES("get", "", "configmaps", "", "cm2", "default"), false, "" },
	{ "erin", NULL, RES("list", "", "configmaps", "", "", "default"), false, "" },
	{ "erin", NULL, RES("create", "", "configmaps", "", "", "default"), false, "" },
	/* nonResourceURLs: exact, or a prefix ending in "*". */
	{ "frank", NULL, URL("get", "/healthz"), true,
	    "RBAC: allowed by ClusterRoleBinding \"frank-urls\" of ClusterRole "
	    "\"urls\" to User \"frank\"" },
	{ "frank", NULL, URL("get", "/healthz/ready"), false, "" },
	{ "frank", NULL, URL("get", "/logs/kube.log"), true, NULL },
	{ "frank", NULL, URL("get", "/logs/"), true, NULL },
	{ "frank", NULL, URL("get", "/logs"), false, "" },
	{ "frank", NULL, URL("post", "/healthz"), false, "" },
	{ "frank", NULL, RES("get", "", "healthz", "", "", ""), false, "" },
	/* ServiceAccounts: namespace defaulted to the RoleBinding's. */
	{ "system:serviceaccount:team-a:builder", NULL,
	    RES("create", "trainyard.dev", "runs", "", "", "team-a"), true,
	    "RBAC: allowed by RoleBinding \"builder/team-a\" of Role \"run-creator\" "
	    "to ServiceAccount \"builder/team-a\"" },
	{ "system:serviceaccount:team-a:builder", NULL,
	    RES("create", "trainyard.dev", "runs", "", "", "team-b"), false, "" },
	{ "system:serviceaccount:team-a:builder", NULL,
	    RES("create", "trainyard.dev", "runs", "", "", ""), false, "" },
	{ "system:serviceaccount:team-b:builder", NULL,
	    RES("create", "trainyard.dev", "runs", "", "", "team-a"), false, "" },
	{ "system:serviceaccount:team-b:deployer", NULL,
	    RES("get", "", "pods", "", "p", "x"), true,
	    "RBAC: allowed by ClusterRoleBinding \"deployer\" of ClusterRole "
	    "\"pod-reader\" to ServiceAccount \"deployer/team-b\"" },
	{ "system:serviceaccount:team-bb:deployer", NULL,
	    RES("get", "", "pods", "", "p", "x"), false, "" },
	{ "system:serviceaccount:team-b:deployer2", NULL,
	    RES("get", "", "pods", "", "p", "x"), false, "" },
	{ "system:serviceaccount:team-c:orphan", NULL,
	    RES("get", "", "pods", "", "p", "team-c"), false, "" },
	{ "system:serviceaccount:team-b:bot", NULL,
	    RES("list", "", "pods", "", "", "team-a"), true,
	    "RBAC: allowed by RoleBinding \"kate-sa-other/team-a\" of ClusterRole "
	    "\"pod-reader\" to ServiceAccount \"bot/team-b\"" },
	{ "system:serviceaccount:team-a:bot", NULL,
	    RES("list", "", "pods", "", "", "team-a"), false, "" },
	/* A RoleBinding grants a ClusterRole in its namespace only. */
	{ "gina", NULL, RES("get", "", "secrets", "", "s", "team-a"), true,
	    "RBAC: allowed by RoleBinding \"gina-cr/team-a\" of ClusterRole "
	    "\"secret-reader\" to User \"gina\"" },
	{ "gina", NULL, RES("get", "", "secrets", "", "s", "team-b"), false, "" },
	{ "gina", NULL, RES("get", "", "secrets", "", "s", ""), false, "" },
	{ "gina", NULL, RES("list", "", "secrets", "", "", ""), false, "" },
	{ "mia", G("readers"), RES("get", "", "pods", "", "p", "team-a"), true,
	    "RBAC: allowed by RoleBinding \"readers/team-a\" of ClusterRole "
	    "\"pod-reader\" to Group \"readers\"" },
	{ "mia", G("readers"), RES("get", "", "pods", "", "p", "team-b"), false, "" },
	/* A RoleBinding's Role is the one of its own namespace. */
	{ "mia", G("readers"), RES("delete", "trainyard.dev", "runs", "", "r", "team-b"),
	    true, "RBAC: allowed by RoleBinding \"readers/team-b\" of Role "
	    "\"run-creator\" to Group \"readers\"" },
	{ "mia", G("readers"), RES("create", "trainyard.dev", "runs", "", "", "team-b"),
	    false, "" },
	{ "ivy", NULL, RES("create", "trainyard.dev", "runs", "", "", "team-a"), true,
	    "RBAC: allowed by RoleBinding \"ivy-role/team-a\" of Role \"run-creator\" "
	    "to User \"ivy\"" },
	{ "ivy", NULL, RES("create", "trainyard.dev", "runs", "", "", "team-b"), false, "" },
	/* Missing roles grant nothing and explain the denial. */
	{ "hank", NULL, RES("get", "", "pods", "", "p", "team-a"), false,
	    "RBAC: [clusterrole.rbac.authorization.k8s.io \"ghost\" not found, "
	    "role.rbac.authorization.k8s.io \"nope\" not found]" },
	{ "hank", G("hankies"), RES("get", "", "pods", "", "p", ""), false,
	    "RBAC: clusterrole.rbac.authorization.k8s.io \"ghost\" not found" },
	{ "hank", G("hankies"), RES("get", "", "pods", "", "p", "team-b"), false,
	    "RBAC: clusterrole.rbac.authorization.k8s.io \"ghost\" not found" },
	{ "jack", NULL, RES("create", "trainyard.dev", "runs", "", "", "team-a"), false,
	    "RBAC: role.rbac.authorization.k8s.io \"run-creator\" not found" },
	{ "lee", NULL, RES("get", "", "pods", "", "p", "x"), false,
	    "RBAC: unsupported role reference kind: \"Foo\"" },
	{ "rex", NULL, RES("get", "", "pods", "", "p", "x"), false, "" },
	{ "", NULL, RES("get", "", "pods", "", "p", "x"), false, "" },
};

START_TEST(test_authorize_table)
{
	struct rbac_index *idx = policy_index();

	for (size_t i = 0; i < KC_ARRAY_SIZE(authz_cases); i++) {
		const struct authz_case *c = &authz_cases[i];
		struct rbac_user u = user(c->user, c->groups);
		char reason[RBAC_REASON_MAX];
		bool ok;

		memset(reason, 'x', sizeof(reason));
		ok = rbac_authorize(idx, &u, &c->a, reason, sizeof(reason));
		ck_assert_msg(ok == c->allowed, "case %zu (%s %s %s/%s): got %d", i, c->user,
		    c->a.verb, S_OR(c->a.resource), S_OR(c->a.path), ok);
		if (c->reason != NULL)
			ck_assert_msg(strcmp(reason, c->reason) == 0,
			    "case %zu: reason\n  got  %s\n  want %s", i, reason, c->reason);
		else
			ck_assert_msg(strncmp(reason, "RBAC: allowed by ", 17) == 0,
			    "case %zu: %s", i, reason);
	}
	rbac_index_free(idx);
}
END_TEST

START_TEST(test_authorize_edges)
{
	struct rbac_index *idx = policy_index(), *empty = NULL;
	struct rbac_attrs a = RES("get", "", "pods", "", "p1", "default");
	struct rbac_user alice = user("alice", NULL);
	struct rbac_user master = user("root", G("x", "system:masters"));
	char small[10];

	/* The reason is truncated and always terminated. */
	ck_assert(rbac_authorize(idx, &alice, &a, small, sizeof(small)));
	ck_assert_str_eq(small, "RBAC: all");
	ck_assert(rbac_authorize(idx, &alice, &a, NULL, 0));
	/* No user is nobody; system:masters is not special to RBAC itself. */
	ck_assert(!rbac_authorize(idx, NULL, &a, small, sizeof(small)));
	ck_assert_str_eq(small, "");
	ck_assert(!rbac_authorize(idx, &master, &a, small, sizeof(small)));
	ck_assert(rbac_user_is_privileged(&master));
	ck_assert(!rbac_user_is_privileged(&alice));
	ck_assert(!rbac_user_is_privileged(NULL));
	/* NULL attribute strings read as "". */
	a = (struct rbac_attrs){ .verb = "list", .resource = "pods", .resource_request = true };
	ck_assert(rbac_authorize(idx, &alice, &a, NULL, 0));
	a = (struct rbac_attrs){ .resource_request = false };
	ck_assert(!allowed(idx, "frank", NULL, &a));
	/* An empty index allows nothing and says nothing. */
	ck_assert_int_eq(rbac_index_new(&empty), 0);
	a = (struct rbac_attrs)RES("get", "", "pods", "", "p1", "default");
	memset(small, 'x', sizeof(small));
	ck_assert(!rbac_authorize(empty, &alice, &a, small, sizeof(small)));
	ck_assert_str_eq(small, "");
	rbac_index_free(empty);
	rbac_index_free(idx);
}
END_TEST

START_TEST(test_index_updates)
{
	struct rbac_index *idx = NULL;
	struct rbac_attrs pods = RES("get", "", "pods", "", "p", "team-a");
	struct rbac_attrs svcs = RES("get", "", "services", "", "s", "team-a");
	struct rbac_user u = user("u", NULL);
	char reason[RBAC_REASON_MAX];

	ck_assert_int_eq(rbac_index_new(&idx), 0);
	put_text(idx, "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"r\"},"
	    "\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\"]}]}");
	put_text(idx, "{\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"b\"},"
	    "\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"r\"},"
	    "\"subjects\":[{\"kind\":\"User\",\"name\":\"u\"}]}");
	ck_assert(allowed(idx, "u", NULL, &pods));
	ck_assert(!allowed(idx, "u", NULL, &svcs));
	ck_assert_uint_eq(rbac_index_count(idx, "ClusterRole"), 1);
	ck_assert_uint_eq(rbac_index_count(idx, "ClusterRoleBinding"), 1);
	ck_assert_uint_eq(rbac_index_count(idx, "Role"), 0);
	ck_assert_uint_eq(rbac_index_count(idx, "Pod"), 0);

	/* An update replaces the role. */
	put_text(idx, "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"r\"},"
	    "\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"services\"],"
	    "\"verbs\":[\"get\"]}]}");
	ck_assert_uint_eq(rbac_index_count(idx, "ClusterRole"), 1);
	ck_assert(!allowed(idx, "u", NULL, &pods));
	ck_assert(allowed(idx, "u", NULL, &svcs));

	/* Deleting the role leaves a dangling binding. */
	ck_assert_int_eq(rbac_index_remove(idx, "ClusterRole", "ignored", "r"), 0);
	ck_assert(!rbac_authorize(idx, &u, &svcs, reason, sizeof(reason)));
	ck_assert_str_eq(reason, "RBAC: clusterrole.rbac.authorization.k8s.io \"r\" not found");
	ck_assert_int_eq(rbac_index_remove(idx, "ClusterRole", "", "r"), KC_ENOTFOUND);
	ck_assert_int_eq(rbac_index_remove(idx, "Pod", "", "r"), KC_EINVALID);
	ck_assert_int_eq(rbac_index_remove(idx, "ClusterRoleBinding", NULL, "b"), 0);
	ck_assert(!rbac_authorize(idx, &u, &svcs, reason, sizeof(reason)));
	ck_assert_str_eq(reason, "");

	/* Roles and bindings by namespace. */
	put_text(idx, "{\"kind\":\"Role\",\"metadata\":{\"name\":\"r\",\"namespace\":\"team-a\"},"
	    "\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\"]}]}");
	put_text(idx, "{\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"b\","
	    "\"namespace\":\"team-a\"},\"roleRef\":{\"kind\":\"Role\",\"name\":\"r\"},"
	    "\"subjects\":[{\"kind\":\"User\",\"name\":\"u\"}]}");
	ck_assert(allowed(idx, "u", NULL, &pods));
	ck_assert_int_eq(rbac_index_remove(idx, "Role", "team-b", "r"), KC_ENOTFOUND);
	ck_assert_int_eq(rbac_index_remove(idx, "Role", NULL, "r"), KC_ENOTFOUND);
	ck_assert_int_eq(rbac_index_remove(idx, "Role", "team-a", "r"), 0);
	ck_assert(!rbac_authorize(idx, &u, &pods, reason, sizeof(reason)));
	ck_assert_str_eq(reason, "RBAC: role.rbac.authorization.k8s.io \"r\" not found");
	ck_assert_uint_eq(rbac_index_count(idx, "RoleBinding"), 1);

	ck_assert(rbac_kind_valid("RoleBinding"));
	ck_assert(rbac_kind_valid("ClusterRole"));
	ck_assert(!rbac_kind_valid("rolebinding"));
	ck_assert(!rbac_kind_valid(NULL));
	rbac_index_free(idx);
}
END_TEST

/* Many RoleBindings in several namespaces, put in scrambled order. */
START_TEST(test_index_namespaces)
{
	static const char *const nss[] = { "b", "a", "c", "aa", "b-1" };
	struct rbac_index *idx = NULL;
	char text[512], ns_name[16];
	size_t n = 0;

	ck_assert_int_eq(rbac_index_new(&idx), 0);
	put_text(idx, "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"r\"},"
	    "\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"pods\"],\"verbs\":[\"get\"]}]}");
	for (size_t i = 0; i < 40; i++)
		for (size_t j = 0; j < KC_ARRAY_SIZE(nss); j++) {
			size_t k = (i * 7 + j * 13) % 40;

			(void)snprintf(text, sizeof(text), "{\"kind\":\"RoleBinding\","
			    "\"metadata\":{\"name\":\"b%02zu\",\"namespace\":\"%s\"},"
			    "\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"r\"},"
			    "\"subjects\":[{\"kind\":\"User\",\"name\":\"u-%s-%zu\"}]}",
			    k, nss[j], nss[j], k);
			put_text(idx, text);
			n++;
		}
	ck_assert_uint_eq(rbac_index_count(idx, "RoleBinding"), n);
	for (size_t j = 0; j < KC_ARRAY_SIZE(nss); j++)
		for (size_t k = 0; k < 40; k += 13) {
			char uname[32];
			struct rbac_attrs a = RES("get", "", "pods", "", "p", nss[j]);

			(void)snprintf(uname, sizeof(uname), "u-%s-%zu", nss[j], k);
			ck_assert_msg(allowed(idx, uname, NULL, &a), "%s", uname);
			for (size_t o = 0; o < KC_ARRAY_SIZE(nss); o++) {
				(void)snprintf(ns_name, sizeof(ns_name), "%s", nss[o]);
				a.ns = ns_name;
				ck_assert(allowed(idx, uname, NULL, &a) == (o == j));
			}
		}
	/* Removing every binding of one namespace leaves the others. */
	for (size_t k = 0; k < 40; k++) {
		char name[8];

		(void)snprintf(name, sizeof(name), "b%02zu", k);
		ck_assert_int_eq(rbac_index_remove(idx, "RoleBinding", "aa", name), 0);
	}
	ck_assert_uint_eq(rbac_index_count(idx, "RoleBinding"), n - 40);
	{
		struct rbac_attrs a = RES("get", "", "pods", "", "p", "aa");
		struct rbac_attrs b = RES("get", "", "pods", "", "p", "b-1");

		ck_assert(!allowed(idx, "u-aa-0", NULL, &a));
		ck_assert(allowed(idx, "u-b-1-0", NULL, &b));
	}
	rbac_index_free(idx);
}
END_TEST

struct bad_case {
	const char	*kind;
	const char	*json;
	const char	*message;
};

static const struct bad_case bad_cases[] = {
	{ "ClusterRole", "[]", "ClusterRole: expected an object" },
	{ "Pod", "{}", "not an RBAC kind: \"Pod\"" },
	{ NULL, "{}", "not an RBAC kind: \"\"" },
	{ "ClusterRole", "{\"metadata\":{}}", "ClusterRole \"\": metadata.name: Required value" },
	{ "Role", "{\"metadata\":{\"name\":\"r\"}}",
	    "Role \"r\": metadata.namespace: Required value" },
	{ "ClusterRole", "{\"metadata\":{\"name\":\"r\"},\"rules\":{}}",
	    "ClusterRole \"r\": rules: expected an array" },
	{ "ClusterRole", "{\"metadata\":{\"name\":\"r\"},\"rules\":[1]}",
	    "ClusterRole \"r\": rules[0]: expected an object" },
	{ "ClusterRole", "{\"metadata\":{\"name\":\"r\"},\"rules\":[{\"verbs\":\"get\"}]}",
	    "ClusterRole \"r\": rules[0].verbs: expected an array" },
	{ "ClusterRole", "{\"metadata\":{\"name\":\"r\"},\"rules\":[{\"verbs\":[\"get\"]},"
	    "{\"verbs\":[\"get\"],\"resources\":[\"a\",7]}]}",
	    "ClusterRole \"r\": rules[1].resources[1]: expected a string" },
	{ "ClusterRole", "{\"metadata\":{\"name\":\"r\"},\"aggregationRule\":[]}",
	    "ClusterRole \"r\": aggregationRule: expected an object" },
	{ "ClusterRole", "{\"metadata\":{\"name\":\"r\"},\"aggregationRule\":"
	    "{\"clusterRoleSelectors\":{}}}",
	    "ClusterRole \"r\": aggregationRule.clusterRoleSelectors: expected an array" },
	{ "ClusterRoleBinding", "{\"roleRef\":{}}",
	    "ClusterRoleBinding \"\": metadata.name: Required value" },
	{ "ClusterRoleBinding", "{\"metadata\":{\"name\":\"b\"}}",
	    "ClusterRoleBinding \"b\": roleRef: Required value" },
	{ "ClusterRoleBinding", "{\"metadata\":{\"name\":\"b\"},\"roleRef\":\"x\"}",
	    "ClusterRoleBinding \"b\": roleRef: expected an object" },
	{ "ClusterRoleBinding", "{\"metadata\":{\"name\":\"b\"},\"roleRef\":{\"name\":\"r\"}}",
	    "ClusterRoleBinding \"b\": roleRef.kind: Required value" },
	{ "ClusterRoleBinding", "{\"metadata\":{\"name\":\"b\"},\"roleRef\":"
	    "{\"kind\":\"ClusterRole\",\"name\":5}}",
	    "ClusterRoleBinding \"b\": roleRef.name: expected a string" },
	{ "RoleBinding", "{\"metadata\":{\"name\":\"b\",\"namespace\":\"n\"},\"roleRef\":"
	    "{\"kind\":\"Role\",\"name\":\"r\"},\"subjects\":{}}",
	    "RoleBinding \"b\": subjects: expected an array" },
	{ "RoleBinding", "{\"metadata\":{\"name\":\"b\",\"namespace\":\"n\"},\"roleRef\":"
	    "{\"kind\":\"Role\",\"name\":\"r\"},\"subjects\":[\"u\"]}",
	    "RoleBinding \"b\": subjects[0]: expected an object" },
	{ "RoleBinding", "{\"metadata\":{\"name\":\"b\",\"namespace\":\"n\"},\"roleRef\":"
	    "{\"kind\":\"Role\",\"name\":\"r\"},\"subjects\":[{\"name\":\"u\"}]}",
	    "RoleBinding \"b\": subjects[0].kind: Required value" },
	{ "RoleBinding", "{\"metadata\":{\"name\":\"b\",\"namespace\":\"n\"},\"roleRef\":"
	    "{\"kind\":\"Role\",\"name\":\"r\"},\"subjects\":[{\"kind\":\"ServiceAccount\","
	    "\"name\":\"u\",\"namespace\":1}]}",
	    "RoleBinding \"b\": subjects[0].namespace: expected a string" },
};

START_TEST(test_index_invalid)
{
	struct rbac_index *idx = NULL;

	ck_assert_int_eq(rbac_index_new(&idx), 0);
	for (size_t i = 0; i < KC_ARRAY_SIZE(bad_cases); i++) {
		struct json_object *o = parse(bad_cases[i].json);
		struct kc_status st = { 0 };

		ck_assert_int_eq(rbac_index_put(idx, bad_cases[i].kind, o, &st), KC_EINVALID);
		ck_assert_msg(strcmp(st.message, bad_cases[i].message) == 0,
		    "case %zu:\n  got  %s\n  want %s", i, st.message, bad_cases[i].message);
		ck_assert_int_eq(rbac_index_put(idx, bad_cases[i].kind, o, NULL), KC_EINVALID);
		json_object_put(o);
	}
	for (size_t k = 0; k < 4; k++) {
		static const char *const kinds[] = { "Role", "ClusterRole", "RoleBinding",
		    "ClusterRoleBinding" };

		ck_assert_uint_eq(rbac_index_count(idx, kinds[k]), 0);
	}
	rbac_index_free(idx);
}
END_TEST

/* A role replaced by an object the index cannot take grants nothing. */
START_TEST(test_index_invalid_replaces)
{
	struct rbac_index *idx = policy_index();
	struct rbac_attrs a = RES("get", "", "pods", "", "p", "x");
	struct rbac_user alice = user("alice", NULL);
	struct json_object *o;
	struct kc_status st = { 0 };
	char reason[RBAC_REASON_MAX];
	size_t n = rbac_index_count(idx, "ClusterRole");

	ck_assert(rbac_authorize(idx, &alice, &a, NULL, 0));
	o = parse("{\"metadata\":{\"name\":\"pod-reader\"},\"rules\":[{\"verbs\":[null]}]}");
	ck_assert_int_eq(rbac_index_put(idx, "ClusterRole", o, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "ClusterRole \"pod-reader\": rules[0].verbs[0]: "
	    "expected a string");
	json_object_put(o);
	ck_assert_uint_eq(rbac_index_count(idx, "ClusterRole"), n - 1);
	ck_assert(!rbac_authorize(idx, &alice, &a, reason, sizeof(reason)));
	ck_assert_str_eq(reason, "RBAC: clusterrole.rbac.authorization.k8s.io "
	    "\"pod-reader\" not found");
	rbac_index_free(idx);
}
END_TEST

/* Limits: strings, rules, subjects, selectors. */
START_TEST(test_index_limits)
{
	struct rbac_index *idx = NULL;
	struct json_object *o, *rules, *subjects, *sels;
	struct kc_status st = { 0 };
	char *big;

	ck_assert_int_eq(rbac_index_new(&idx), 0);
	big = kc_malloc(RBAC_STRING_MAX + 2);
	ck_assert_ptr_nonnull(big);
	memset(big, 'a', RBAC_STRING_MAX + 1);
	big[RBAC_STRING_MAX + 1] = '\0';

	/* A string one byte too long, then one just long enough. */
	o = parse("{\"metadata\":{\"name\":\"r\"},\"rules\":[{\"verbs\":[\"get\"]}]}");
	rules = kc_json_get(o, "rules");
	ck_assert_int_eq(kc_json_put(json_object_array_get_idx(rules, 0), "resources",
	    json_object_new_array()), 0);
	ck_assert_int_eq(kc_json_append(kc_json_get(json_object_array_get_idx(rules, 0),
	    "resources"), json_object_new_string(big)), 0);
	ck_assert_int_eq(rbac_index_put(idx, "ClusterRole", o, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "ClusterRole \"r\": rules[0].resources[0]: longer "
	    "than 4096 bytes");
	big[RBAC_STRING_MAX] = '\0';
	json_object_array_put_idx(kc_json_get(json_object_array_get_idx(rules, 0),
	    "resources"), 0, json_object_new_string(big));
	ck_assert_int_eq(rbac_index_put(idx, "ClusterRole", o, &st), 0);
	json_object_put(o);

	/* Too many rules. */
	o = parse("{\"metadata\":{\"name\":\"many\"},\"rules\":[]}");
	rules = kc_json_get(o, "rules");
	for (size_t i = 0; i <= RBAC_RULES_MAX; i++)
		ck_assert_int_eq(kc_json_append(rules,
		    parse("{\"verbs\":[\"get\"],\"resources\":[\"x\"]}")), 0);
	ck_assert_int_eq(rbac_index_put(idx, "ClusterRole", o, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "ClusterRole \"many\": rules: more than 4096 rules");
	json_object_put(o);

	/* Too many list entries. */
	o = parse("{\"metadata\":{\"name\":\"wide\"},\"rules\":[{\"verbs\":[]}]}");
	for (size_t i = 0; i <= RBAC_LIST_MAX; i++)
		ck_assert_int_eq(kc_json_append(kc_json_get(json_object_array_get_idx(
		    kc_json_get(o, "rules"), 0), "verbs"), json_object_new_string("get")), 0);
	ck_assert_int_eq(rbac_index_put(idx, "ClusterRole", o, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "ClusterRole \"wide\": rules[0].verbs: more than 1024 "
	    "entries");
	json_object_put(o);

	/* Too many subjects. */
	o = parse("{\"metadata\":{\"name\":\"b\"},\"roleRef\":{\"kind\":\"ClusterRole\","
	    "\"name\":\"r\"},\"subjects\":[]}");
	subjects = kc_json_get(o, "subjects");
	for (size_t i = 0; i <= RBAC_SUBJECTS_MAX; i++)
		ck_assert_int_eq(kc_json_append(subjects,
		    parse("{\"kind\":\"User\",\"name\":\"u\"}")), 0);
	ck_assert_int_eq(rbac_index_put(idx, "ClusterRoleBinding", o, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "ClusterRoleBinding \"b\": subjects: more than 1024 "
	    "subjects");
	json_object_put(o);

	/* Too many selectors. */
	o = parse("{\"metadata\":{\"name\":\"agg\"},\"aggregationRule\":"
	    "{\"clusterRoleSelectors\":[]}}");
	sels = kc_json_get(o, "aggregationRule", "clusterRoleSelectors");
	for (size_t i = 0; i <= RBAC_SELECTORS_MAX; i++)
		ck_assert_int_eq(kc_json_append(sels,
		    parse("{\"matchLabels\":{\"a\":\"b\"}}")), 0);
	ck_assert_int_eq(rbac_index_put(idx, "ClusterRole", o, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "ClusterRole \"agg\": aggregationRule."
	    "clusterRoleSelectors: more than 64 selectors");
	json_object_put(o);

	/* A name too long. */
	o = json_object_new_object();
	ck_assert_int_eq(kc_json_put(o, "metadata", json_object_new_object()), 0);
	big[RBAC_STRING_MAX] = 'a';
	ck_assert_int_eq(kc_json_set_str(kc_json_get(o, "metadata"), "name", big), 0);
	ck_assert_int_eq(rbac_index_put(idx, "ClusterRole", o, &st), KC_EINVALID);
	ck_assert_msg(strncmp(st.message, "ClusterRole \"aaaa", 17) == 0, "%s", st.message);
	json_object_put(o);
	o = parse("{\"metadata\":{\"name\":\"r\",\"namespace\":\"\"}}");
	ck_assert_int_eq(kc_json_set_str(kc_json_get(o, "metadata"), "namespace", big), 0);
	ck_assert_int_eq(rbac_index_put(idx, "Role", o, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "Role \"r\": metadata: name or namespace longer than "
	    "4096 bytes");
	json_object_put(o);

	/* A subject name too long. */
	big[RBAC_STRING_MAX] = 'a';
	o = parse("{\"metadata\":{\"name\":\"b\"},\"roleRef\":{\"kind\":\"ClusterRole\","
	    "\"name\":\"r\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"\"}]}");
	ck_assert_int_eq(kc_json_set_str(json_object_array_get_idx(kc_json_get(o,
	    "subjects"), 0), "name", big), 0);
	ck_assert_int_eq(rbac_index_put(idx, "ClusterRoleBinding", o, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "ClusterRoleBinding \"b\": subjects[0].name: longer "
	    "than 4096 bytes");
	json_object_put(o);

	/* Strings past RBAC_OBJECT_BYTES_MAX in all (one string, shared). */
	big[RBAC_STRING_MAX] = '\0';
	o = parse("{\"metadata\":{\"name\":\"huge\"},\"rules\":[]}");
	{
		struct json_object *str = json_object_new_string(big), *rule, *res;

		ck_assert_ptr_nonnull(str);
		for (int i = 0; i < 5; i++) {
			rule = parse("{\"verbs\":[\"get\"],\"resources\":[]}");
			res = kc_json_get(rule, "resources");
			for (int j = 0; j < RBAC_LIST_MAX; j++)
				ck_assert_int_eq(kc_json_append(res, json_object_get(str)), 0);
			ck_assert_int_eq(kc_json_append(kc_json_get(o, "rules"), rule), 0);
		}
		json_object_put(str);
	}
	ck_assert_int_eq(rbac_index_put(idx, "ClusterRole", o, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "ClusterRole \"huge\": object larger than 16777216 "
	    "bytes");
	json_object_put(o);

	ck_assert_uint_eq(rbac_index_count(idx, "ClusterRole"), 1);
	kc_free(big);
	rbac_index_free(idx);
}
END_TEST

/* At most RBAC_OBJECTS_MAX objects of a kind. */
START_TEST(test_index_objects_max)
{
	struct rbac_index *idx = NULL;
	struct json_object *o = parse("{\"metadata\":{\"name\":\"\"},\"roleRef\":"
	    "{\"kind\":\"ClusterRole\",\"name\":\"r\"}}");
	struct kc_status st = { 0 };
	char name[16];

	ck_assert_int_eq(rbac_index_new(&idx), 0);
	for (size_t i = 0; i <= RBAC_OBJECTS_MAX; i++) {
		int r;

		(void)snprintf(name, sizeof(name), "b%06zu", i);
		ck_assert_int_eq(kc_json_set_str(kc_json_get(o, "metadata"), "name", name), 0);
		r = rbac_index_put(idx, "ClusterRoleBinding", o, &st);
		ck_assert_int_eq(r, i < RBAC_OBJECTS_MAX ? 0 : -E2BIG);
	}
	ck_assert_str_eq(st.message, "more than 100000 objects of kind ClusterRoleBinding");
	ck_assert_uint_eq(rbac_index_count(idx, "ClusterRoleBinding"), RBAC_OBJECTS_MAX);
	/* Replacing one is still fine. */
	ck_assert_int_eq(kc_json_set_str(kc_json_get(o, "metadata"), "name", "b000007"), 0);
	ck_assert_int_eq(rbac_index_put(idx, "ClusterRoleBinding", o, &st), 0);
	json_object_put(o);
	rbac_index_free(idx);
}
END_TEST

/*
 * Aggregation
 */

/* What the core does with rbac_aggregate()'s answer: rules into the role. */
static void
write_back(struct rbac_index *idx, struct json_object *roles, struct json_object *changed)
{
	for (size_t i = 0; i < json_object_array_length(changed); i++) {
		struct json_object *c = json_object_array_get_idx(changed, i);
		const char *name = kc_json_str(c, "name");
		struct json_object *role = NULL, *copy;
		struct kc_status st = { 0 };

		for (size_t j = 0; j < json_object_array_length(roles); j++)
			if (strcmp(S_OR(kc_json_str(json_object_array_get_idx(roles, j),
			    "metadata", "name")), name) == 0)
				role = json_object_array_get_idx(roles, j);
		ck_assert_msg(role != NULL, "%s", name);
		copy = kc_json_copy(role);
		ck_assert_int_eq(kc_json_put(copy, "rules",
		    kc_json_copy(kc_json_get(c, "rules"))), 0);
		ck_assert_int_eq(rbac_index_put(idx, "ClusterRole", copy, &st), 0);
		json_object_array_put_idx(roles, json_object_array_length(roles), copy);
	}
}

/* Aggregates until nothing changes; returns the number of write-backs. */
static size_t
settle(struct rbac_index *idx, struct json_object *roles)
{
	size_t writes = 0;

	for (int round = 0; round < 3; round++) {
		struct json_object *changed = NULL;
		size_t n;

		ck_assert_int_eq(rbac_aggregate(idx, &changed), 0);
		n = json_object_array_length(changed);
		write_back(idx, roles, changed);
		json_object_put(changed);
		if (n == 0)
			return writes;
		writes += n;
	}
	ck_abort_msg("aggregation did not settle");
	return writes;
}

static void
assert_json(const struct json_object *got, const char *want_text)
{
	struct json_object *want = parse(want_text);
	char *g = kc_json_dump(got, NULL);

	ck_assert_msg(kc_json_equal(got, want), "\n  got  %s\n  want %s", g, want_text);
	kc_free(g);
	json_object_put(want);
}

START_TEST(test_aggregate_selectors)
{
	struct rbac_index *idx = NULL;
	struct json_object *roles = fixture("rbac/aggregate.json"), *changed = NULL;

	ck_assert_int_eq(rbac_index_new(&idx), 0);
	put_all(idx, roles);
	ck_assert_int_eq(rbac_aggregate(idx, &changed), 0);
	/*
	 * Selector 1 matches a-pods, then b-endpoints (by name; services
	 * only once); selector 2 matches 0-metrics, whose pods rule is a
	 * duplicate. The hand-written rule is gone.
	 */
	assert_json(changed, "[{\"name\":\"monitoring\",\"rules\":["
	    "{\"verbs\":[\"list\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]},"
	    "{\"verbs\":[\"list\"],\"apiGroups\":[\"\"],\"resources\":[\"services\"]},"
	    "{\"verbs\":[\"list\"],\"apiGroups\":[\"\"],\"resources\":[\"endpoints\"]},"
	    "{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/metrics\"]}]}]");
	write_back(idx, roles, changed);
	json_object_put(changed);
	/* A fixed point: nothing more to write. */
	ck_assert_int_eq(rbac_aggregate(idx, &changed), 0);
	assert_json(changed, "[]");
	json_object_put(changed);
	/* A new matching role changes the aggregate again. */
	put_text(idx, "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"c-nodes\","
	    "\"labels\":{\"example.com/aggregate-to-monitoring\":\"true\"}},"
	    "\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"nodes\"],"
	    "\"verbs\":[\"get\"],\"resourceNames\":[\"n1\"]}]}");
	ck_assert_int_eq(rbac_aggregate(idx, &changed), 0);
	ck_assert_uint_eq(json_object_array_length(changed), 1);
	assert_json(json_object_array_get_idx(kc_json_get(json_object_array_get_idx(changed,
	    0), "rules"), 3), "{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],"
	    "\"resources\":[\"nodes\"],\"resourceNames\":[\"n1\"]}");
	json_object_put(changed);
	json_object_put(roles);
	rbac_index_free(idx);
}
END_TEST

START_TEST(test_aggregate_cases)
{
	struct rbac_index *idx = NULL;
	struct json_object *roles = json_object_new_array(), *changed = NULL;
	static const char *const texts[] = {
		/* No match: hand-written rules become []. */
		"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"hand\"},"
		"\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":"
		"{\"none\":\"x\"}}]},\"rules\":[{\"verbs\":[\"get\"],"
		"\"nonResourceURLs\":[\"/x\"]}]}",
		/* No match and no rules: nothing to write. */
		"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"idle\"},"
		"\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":"
		"{\"none\":\"x\"}}]}}",
		/* A role never aggregates itself. */
		"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"self\","
		"\"labels\":{\"pick\":\"me\"}},\"aggregationRule\":{\"clusterRoleSelectors\":"
		"[{\"matchLabels\":{\"pick\":\"me\"}}]},\"rules\":[{\"verbs\":[\"own\"],"
		"\"nonResourceURLs\":[\"/own\"]}]}",
		"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"other\","
		"\"labels\":{\"pick\":\"me\"}},\"rules\":[{\"verbs\":[\"get\"],"
		"\"nonResourceURLs\":[\"/other\"]}]}",
		/* An empty selector list: rules []. */
		"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"empty-list\"},"
		"\"aggregationRule\":{},\"rules\":[{\"verbs\":[\"get\"],"
		"\"nonResourceURLs\":[\"/e\"]}]}",
		/* An invalid selector: left alone. */
		"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"broken\"},"
		"\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchExpressions\":"
		"[{\"key\":\"a\",\"operator\":\"Foo\"}]}]},\"rules\":[{\"verbs\":[\"get\"],"
		"\"nonResourceURLs\":[\"/b\"]}]}",
		/* A cycle settles. */
		"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"cy-a\","
		"\"labels\":{\"y\":\"b\"}},\"aggregationRule\":{\"clusterRoleSelectors\":"
		"[{\"matchLabels\":{\"x\":\"a\"}}]}}",
		"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"cy-b\","
		"\"labels\":{\"x\":\"a\"}},\"aggregationRule\":{\"clusterRoleSelectors\":"
		"[{\"matchLabels\":{\"y\":\"b\"}}]}}",
		"{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"leaf\","
		"\"labels\":{\"y\":\"b\"}},\"rules\":[{\"verbs\":[\"get\"],"
		"\"nonResourceURLs\":[\"/leaf\"]}]}",
	};

	ck_assert_int_eq(rbac_index_new(&idx), 0);
	for (size_t i = 0; i < KC_ARRAY_SIZE(texts); i++)
		ck_assert_int_eq(json_object_array_add(roles, parse(texts[i])), 0);
	put_all(idx, roles);
	ck_assert_int_eq(rbac_aggregate(idx, &changed), 0);
	assert_json(changed, "["
	    "{\"name\":\"cy-a\",\"rules\":[{\"verbs\":[\"get\"],"
	    "\"nonResourceURLs\":[\"/leaf\"]}]},"
	    "{\"name\":\"cy-b\",\"rules\":[{\"verbs\":[\"get\"],"
	    "\"nonResourceURLs\":[\"/leaf\"]}]},"
	    "{\"name\":\"empty-list\",\"rules\":[]},"
	    "{\"name\":\"hand\",\"rules\":[]},"
	    "{\"name\":\"self\",\"rules\":[{\"verbs\":[\"get\"],"
	    "\"nonResourceURLs\":[\"/other\"]}]}]");
	write_back(idx, roles, changed);
	json_object_put(changed);
	ck_assert_uint_eq(settle(idx, roles), 0);
	json_object_put(roles);
	rbac_index_free(idx);
}
END_TEST

/* A null selector is the empty one and picks every other role. */
START_TEST(test_aggregate_null_selector)
{
	struct rbac_index *idx = NULL;
	struct json_object *changed = NULL;

	ck_assert_int_eq(rbac_index_new(&idx), 0);
	put_text(idx, "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"all\"},"
	    "\"aggregationRule\":{\"clusterRoleSelectors\":[null]}}");
	put_text(idx, "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"x\"},"
	    "\"rules\":[{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/x\"]}]}");
	put_text(idx, "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"y\","
	    "\"labels\":{\"k\":\"v\"}},\"rules\":[{\"verbs\":[\"get\"],"
	    "\"nonResourceURLs\":[\"/y\"]}]}");
	ck_assert_int_eq(rbac_aggregate(idx, &changed), 0);
	assert_json(changed, "[{\"name\":\"all\",\"rules\":["
	    "{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/x\"]},"
	    "{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/y\"]}]}]");
	json_object_put(changed);
	rbac_index_free(idx);
}
END_TEST

/* A union past RBAC_RULES_MAX leaves the role as it is. */
START_TEST(test_aggregate_limit)
{
	struct rbac_index *idx = NULL;
	struct json_object *changed = NULL;

	ck_assert_int_eq(rbac_index_new(&idx), 0);
	for (int part = 0; part < 2; part++) {
		struct json_object *o = parse(part == 0 ?
		    "{\"metadata\":{\"name\":\"p0\",\"labels\":{\"m\":\"1\"}},\"rules\":[]}" :
		    "{\"metadata\":{\"name\":\"p1\",\"labels\":{\"m\":\"1\"}},\"rules\":[]}");
		struct kc_status st = { 0 };

		for (int i = 0; i < RBAC_RULES_MAX / 2 + part; i++) {
			char text[96];

			(void)snprintf(text, sizeof(text), "{\"verbs\":[\"get\"],"
			    "\"nonResourceURLs\":[\"/p%d/%d\"]}", part, i);
			ck_assert_int_eq(kc_json_append(kc_json_get(o, "rules"), parse(text)), 0);
		}
		ck_assert_int_eq(rbac_index_put(idx, "ClusterRole", o, &st), 0);
		json_object_put(o);
	}
	put_text(idx, "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"big\"},"
	    "\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":"
	    "{\"m\":\"1\"}}]}}");
	put_text(idx, "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"small\"},"
	    "\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":"
	    "{\"none\":\"1\"}}]},\"rules\":[{\"verbs\":[\"get\"],"
	    "\"nonResourceURLs\":[\"/s\"]}]}");
	ck_assert_int_eq(rbac_aggregate(idx, &changed), 0);
	assert_json(changed, "[{\"name\":\"small\",\"rules\":[]}]");
	json_object_put(changed);
	rbac_index_free(idx);
}
END_TEST

/*
 * Bootstrap policy
 */

static const char *const bootstrap_role_names[] = {
	"cluster-admin", "system:discovery", "system:basic-user",
	"system:public-info-viewer", "admin", "edit", "view",
	"system:aggregate-to-admin", "system:aggregate-to-edit",
	"system:aggregate-to-view",
};

/* The bootstrap policy, aggregated and written back as the core would. */
static struct rbac_index *
bootstrap_index(struct json_object **ret_roles)
{
	struct rbac_index *idx = NULL;
	struct json_object *roles = NULL, *bindings = NULL;

	ck_assert_int_eq(rbac_index_new(&idx), 0);
	ck_assert_int_eq(rbac_bootstrap_cluster_roles(&roles), 0);
	ck_assert_int_eq(rbac_bootstrap_cluster_role_bindings(&bindings), 0);
	put_all(idx, roles);
	put_all(idx, bindings);
	ck_assert_uint_eq(settle(idx, roles), 3);
	json_object_put(bindings);
	*ret_roles = roles;
	return idx;
}

static struct json_object *
find_role(struct json_object *roles, const char *name)
{
	struct json_object *found = NULL;

	/* The last one: write_back() appends updated copies. */
	for (size_t i = 0; i < json_object_array_length(roles); i++) {
		struct json_object *r = json_object_array_get_idx(roles, i);

		if (strcmp(S_OR(kc_json_str(r, "metadata", "name")), name) == 0)
			found = r;
	}
	ck_assert_msg(found != NULL, "%s", name);
	return found;
}

START_TEST(test_bootstrap_objects)
{
	struct json_object *roles = NULL, *bindings = NULL, *sa;

	ck_assert_int_eq(rbac_bootstrap_cluster_roles(&roles), 0);
	ck_assert_uint_eq(json_object_array_length(roles), KC_ARRAY_SIZE(bootstrap_role_names));
	for (size_t i = 0; i < KC_ARRAY_SIZE(bootstrap_role_names); i++) {
		struct json_object *r = json_object_array_get_idx(roles, i);

		ck_assert_str_eq(kc_json_str(r, "metadata", "name"), bootstrap_role_names[i]);
		ck_assert_str_eq(kc_json_str(r, "kind"), "ClusterRole");
		ck_assert_str_eq(kc_json_str(r, "apiVersion"), "rbac.authorization.k8s.io/v1");
		ck_assert_str_eq(kc_json_str(r, "metadata", "labels",
		    "kubernetes.io/bootstrapping"), "rbac-defaults");
		ck_assert_str_eq(kc_json_str(r, "metadata", "annotations",
		    "rbac.authorization.kubernetes.io/autoupdate"), "true");
	}
	assert_json(find_role(roles, "cluster-admin"), "{\"kind\":\"ClusterRole\","
	    "\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"metadata\":{\"name\":"
	    "\"cluster-admin\",\"labels\":{\"kubernetes.io/bootstrapping\":\"rbac-defaults\"},"
	    "\"annotations\":{\"rbac.authorization.kubernetes.io/autoupdate\":\"true\"}},"
	    "\"rules\":[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"]},"
	    "{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"*\"]}]}");
	assert_json(kc_json_get(find_role(roles, "edit"), "metadata", "labels"),
	    "{\"kubernetes.io/bootstrapping\":\"rbac-defaults\","
	    "\"rbac.authorization.k8s.io/aggregate-to-admin\":\"true\"}");
	assert_json(kc_json_get(find_role(roles, "edit"), "aggregationRule"),
	    "{\"clusterRoleSelectors\":[{\"matchLabels\":"
	    "{\"rbac.authorization.k8s.io/aggregate-to-edit\":\"true\"}}]}");
	assert_json(kc_json_get(find_role(roles, "view"), "metadata", "labels"),
	    "{\"kubernetes.io/bootstrapping\":\"rbac-defaults\","
	    "\"rbac.authorization.k8s.io/aggregate-to-edit\":\"true\"}");
	ck_assert_ptr_null(kc_json_get(find_role(roles, "admin"), "rules"));
	assert_json(kc_json_get(find_role(roles, "admin"), "aggregationRule"),
	    "{\"clusterRoleSelectors\":[{\"matchLabels\":"
	    "{\"rbac.authorization.k8s.io/aggregate-to-admin\":\"true\"}}]}");
	assert_json(kc_json_get(find_role(roles, "system:aggregate-to-view"), "metadata",
	    "labels"), "{\"kubernetes.io/bootstrapping\":\"rbac-defaults\","
	    "\"rbac.authorization.k8s.io/aggregate-to-view\":\"true\"}");
	assert_json(kc_json_get(find_role(roles, "system:discovery"), "rules"),
	    "[{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/api\",\"/api/*\",\"/apis\","
	    "\"/apis/*\",\"/healthz\",\"/livez\",\"/openapi\",\"/openapi/*\",\"/readyz\","
	    "\"/version\",\"/version/\"]}]");
	assert_json(kc_json_get(find_role(roles, "system:public-info-viewer"), "rules"),
	    "[{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/healthz\",\"/livez\","
	    "\"/readyz\",\"/version\",\"/version/\"]}]");
	assert_json(kc_json_get(find_role(roles, "system:basic-user"), "rules"),
	    "[{\"verbs\":[\"create\"],\"apiGroups\":[\"authorization.k8s.io\"],"
	    "\"resources\":[\"selfsubjectaccessreviews\",\"selfsubjectrulesreviews\"]},"
	    "{\"verbs\":[\"create\"],\"apiGroups\":[\"authentication.k8s.io\"],"
	    "\"resources\":[\"selfsubjectreviews\"]}]");

	ck_assert_int_eq(rbac_bootstrap_cluster_role_bindings(&bindings), 0);
	ck_assert_uint_eq(json_object_array_length(bindings), 4);
	assert_json(json_object_array_get_idx(bindings, 0), "{\"kind\":"
	    "\"ClusterRoleBinding\",\"apiVersion\":\"rbac.authorization.k8s.io/v1\","
	    "\"metadata\":{\"name\":\"cluster-admin\",\"labels\":"
	    "{\"kubernetes.io/bootstrapping\":\"rbac-defaults\"},\"annotations\":"
	    "{\"rbac.authorization.kubernetes.io/autoupdate\":\"true\"}},"
	    "\"subjects\":[{\"kind\":\"Group\",\"apiGroup\":\"rbac.authorization.k8s.io\","
	    "\"name\":\"system:masters\"}],\"roleRef\":{\"apiGroup\":"
	    "\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":"
	    "\"cluster-admin\"}}");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(bindings, 1), "metadata",
	    "name"), "system:basic-user");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(bindings, 2), "metadata",
	    "name"), "system:discovery");
	sa = kc_json_get(json_object_array_get_idx(bindings, 3), "subjects");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(bindings, 3), "roleRef",
	    "name"), "system:public-info-viewer");
	ck_assert_uint_eq(json_object_array_length(sa), 2);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(sa, 0), "name"),
	    "system:authenticated");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(sa, 1), "name"),
	    "system:unauthenticated");
	json_object_put(bindings);
	json_object_put(roles);
}
END_TEST

START_TEST(test_bootstrap_aggregated)
{
	struct json_object *roles = NULL;
	struct rbac_index *idx = bootstrap_index(&roles);
	struct json_object *view = kc_json_get(find_role(roles, "view"), "rules");
	struct json_object *edit = kc_json_get(find_role(roles, "edit"), "rules");
	struct json_object *admin = kc_json_get(find_role(roles, "admin"), "rules");
	struct json_object *to_view = kc_json_get(find_role(roles,
	    "system:aggregate-to-view"), "rules");
	struct json_object *to_edit = kc_json_get(find_role(roles,
	    "system:aggregate-to-edit"), "rules");
	size_t nv = json_object_array_length(to_view), ne = json_object_array_length(to_edit);

	/* view = to-view; edit = to-edit + view; admin = edit + to-admin. */
	ck_assert_uint_eq(nv, 10);
	ck_assert_uint_eq(ne, 13);
	ck_assert(kc_json_equal(view, to_view));
	ck_assert_uint_eq(json_object_array_length(edit), ne + nv);
	ck_assert_uint_eq(json_object_array_length(admin), ne + nv + 2);
	for (size_t i = 0; i < ne; i++)
		ck_assert(kc_json_equal(json_object_array_get_idx(edit, i),
		    json_object_array_get_idx(to_edit, i)));
	for (size_t i = 0; i < nv; i++)
		ck_assert(kc_json_equal(json_object_array_get_idx(edit, ne + i),
		    json_object_array_get_idx(to_view, i)));
	for (size_t i = 0; i < ne + nv; i++)
		ck_assert(kc_json_equal(json_object_array_get_idx(admin, i),
		    json_object_array_get_idx(edit, i)));
	json_object_put(roles);
	rbac_index_free(idx);
}
END_TEST

struct boot_case {
	const char		*user;
	const char *const	*groups;
	struct rbac_attrs	 a;
	bool			 allowed;
	const char		*reason;
};

#define AUTHED		G("system:authenticated")
#define ANON		G("system:unauthenticated")
#define VIEWER		G("viewers", "system:authenticated")
#define EDITOR		G("editors", "system:authenticated")
#define ADMIN		G("admins", "system:authenticated")

static const struct boot_case boot_cases[] = {
	{ "root", G("system:masters", "system:authenticated"),
	    RES("delete", "trainyard.dev", "runs", "", "r", "x"), true,
	    "RBAC: allowed by ClusterRoleBinding \"cluster-admin\" of ClusterRole "
	    "\"cluster-admin\" to Group \"system:masters\"" },
	{ "root", G("system:masters"), URL("post", "/anything/at/all"), true, NULL },
	{ "u", AUTHED, URL("get", "/apis/trainyard.dev/v1beta1"), true,
	    "RBAC: allowed by ClusterRoleBinding \"system:discovery\" of ClusterRole "
	    "\"system:discovery\" to Group \"system:authenticated\"" },
	{ "u", AUTHED, URL("get", "/healthz"), true,
	    "RBAC: allowed by ClusterRoleBinding \"system:discovery\" of ClusterRole "
	    "\"system:discovery\" to Group \"system:authenticated\"" },
	{ "u", AUTHED, URL("get", "/openapi/v3"), true, NULL },
	{ "u", AUTHED, URL("get", "/version/"), true, NULL },
	{ "u", AUTHED, URL("get", "/metrics"), false, "" },
	{ "u", AUTHED, URL("post", "/api"), false, "" },
	{ "u", AUTHED, RES("create", "authorization.k8s.io", "selfsubjectaccessreviews",
	    "", "", ""), true, "RBAC: allowed by ClusterRoleBinding \"system:basic-user\" "
	    "of ClusterRole \"system:basic-user\" to Group \"system:authenticated\"" },
	{ "u", AUTHED, RES("create", "authorization.k8s.io", "selfsubjectrulesreviews",
	    "", "", ""), true, NULL },
	{ "u", AUTHED, RES("create", "authentication.k8s.io", "selfsubjectreviews",
	    "", "", ""), true, NULL },
	{ "u", AUTHED, RES("create", "authorization.k8s.io", "subjectaccessreviews",
	    "", "", ""), false, "" },
	{ "u", AUTHED, RES("list", "", "pods", "", "", "team-a"), false, "" },
	{ "system:anonymous", ANON, URL("get", "/healthz"), true,
	    "RBAC: allowed by ClusterRoleBinding \"system:public-info-viewer\" of "
	    "ClusterRole \"system:public-info-viewer\" to Group \"system:unauthenticated\"" },
	{ "system:anonymous", ANON, URL("get", "/version"), true, NULL },
	{ "system:anonymous", ANON, URL("get", "/api"), false, "" },
	{ "system:anonymous", ANON, RES("create", "authorization.k8s.io",
	    "selfsubjectaccessreviews", "", "", ""), false, "" },
	/* view, edit and admin, bound in team-a. */
	{ "v", VIEWER, RES("get", "", "pods", "", "p", "team-a"), true,
	    "RBAC: allowed by RoleBinding \"viewers/team-a\" of ClusterRole \"view\" "
	    "to Group \"viewers\"" },
	{ "v", VIEWER, RES("get", "", "pods", "log", "p", "team-a"), true, NULL },
	{ "v", VIEWER, RES("list", "", "configmaps", "", "", "team-a"), true, NULL },
	{ "v", VIEWER, RES("watch", "", "events", "", "", "team-a"), true, NULL },
	{ "v", VIEWER, RES("get", "", "resourcequotas", "", "q", "team-a"), true, NULL },
	{ "v", VIEWER, RES("get", "", "namespaces", "", "team-a", "team-a"), true, NULL },
	{ "v", VIEWER, RES("list", "networking.k8s.io", "networkpolicies", "", "",
	    "team-a"), true, NULL },
	{ "v", VIEWER, RES("get", "", "secrets", "", "s", "team-a"), false, "" },
	{ "v", VIEWER, RES("list", "", "secrets", "", "", "team-a"), false, "" },
	{ "v", VIEWER, RES("create", "", "pods", "", "", "team-a"), false, "" },
	{ "v", VIEWER, RES("get", "", "pods", "exec", "p", "team-a"), false, "" },
	{ "v", VIEWER, RES("get", "coordination.k8s.io", "leases", "", "l", "team-a"),
	    false, "" },
	{ "v", VIEWER, RES("get", "", "pods", "", "p", "team-b"), false, "" },
	{ "e", EDITOR, RES("get", "", "secrets", "", "s", "team-a"), true,
	    "RBAC: allowed by RoleBinding \"editors/team-a\" of ClusterRole \"edit\" "
	    "to Group \"editors\"" },
	{ "e", EDITOR, RES("create", "", "pods", "", "", "team-a"), true, NULL },
	{ "e", EDITOR, RES("create", "", "pods", "exec", "p", "team-a"), true, NULL },
	{ "e", EDITOR, RES("get", "", "pods", "exec", "p", "team-a"), true, NULL },
	{ "e", EDITOR, RES("update", "coordination.k8s.io", "leases", "", "l", "team-a"),
	    true, NULL },
	{ "e", EDITOR, RES("list", "", "pods", "", "", "team-a"), true, NULL },
	{ "e", EDITOR, RES("impersonate", "", "serviceaccounts", "", "sa", "team-a"),
	    true, NULL },
	{ "e", EDITOR, RES("create", "rbac.authorization.k8s.io", "rolebindings", "", "",
	    "team-a"), false, "" },
	{ "e", EDITOR, RES("update", "", "resourcequotas", "", "q", "team-a"), false, "" },
	{ "a", ADMIN, RES("create", "rbac.authorization.k8s.io", "rolebindings", "", "",
	    "team-a"), true, "RBAC: allowed by RoleBinding \"admins/team-a\" of "
	    "ClusterRole \"admin\" to Group \"admins\"" },
	{ "a", ADMIN, RES("delete", "", "secrets", "", "s", "team-a"), true, NULL },
	{ "a", ADMIN, RES("update", "", "resourcequotas", "", "q", "team-a"), false, "" },
	{ "a", ADMIN, RES("delete", "", "namespaces", "", "team-a", "team-a"), false, "" },
	{ "a", ADMIN, RES("list", "", "pods", "", "", ""), false, "" },
};

START_TEST(test_bootstrap_authorize)
{
	struct json_object *roles = NULL;
	struct rbac_index *idx = bootstrap_index(&roles);

	put_text(idx, "{\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"viewers\","
	    "\"namespace\":\"team-a\"},\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":"
	    "\"view\"},\"subjects\":[{\"kind\":\"Group\",\"name\":\"viewers\"}]}");
	put_text(idx, "{\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"editors\","
	    "\"namespace\":\"team-a\"},\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":"
	    "\"edit\"},\"subjects\":[{\"kind\":\"Group\",\"name\":\"editors\"}]}");
	put_text(idx, "{\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"admins\","
	    "\"namespace\":\"team-a\"},\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":"
	    "\"admin\"},\"subjects\":[{\"kind\":\"Group\",\"name\":\"admins\"}]}");
	for (size_t i = 0; i < KC_ARRAY_SIZE(boot_cases); i++) {
		const struct boot_case *c = &boot_cases[i];
		struct rbac_user u = user(c->user, c->groups);
		char reason[RBAC_REASON_MAX];
		bool ok = rbac_authorize(idx, &u, &c->a, reason, sizeof(reason));

		ck_assert_msg(ok == c->allowed, "case %zu: got %d", i, ok);
		if (c->reason != NULL)
			ck_assert_msg(strcmp(reason, c->reason) == 0,
			    "case %zu: reason\n  got  %s\n  want %s", i, reason, c->reason);
	}
	json_object_put(roles);
	rbac_index_free(idx);
}
END_TEST

/*
 * SelfSubjectRulesReview
 */

START_TEST(test_rules_review)
{
	struct rbac_index *idx = NULL;
	struct rbac_user alice = user("alice", G("team", "system:authenticated"));
	struct json_object *out = NULL;
	struct kc_status st = { 0 };

	ck_assert_int_eq(rbac_index_new(&idx), 0);
	put_text(idx, "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"r\"},\"rules\":["
	    "{\"apiGroups\":[\"\"],\"resources\":[\"pods\",\"pods/log\"],"
	    "\"verbs\":[\"get\",\"list\"]},"
	    "{\"nonResourceURLs\":[\"/healthz\"],\"verbs\":[\"get\"]},"
	    "{\"apiGroups\":[\"x\"],\"resources\":[\"y\"],\"nonResourceURLs\":[\"/z\"],"
	    "\"verbs\":[\"*\"]},"
	    "{\"verbs\":[\"get\"]}]}");
	put_text(idx, "{\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"b\"},"
	    "\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"r\"},"
	    "\"subjects\":[{\"kind\":\"Group\",\"name\":\"team\"}]}");
	put_text(idx, "{\"kind\":\"Role\",\"metadata\":{\"name\":\"cm\",\"namespace\":"
	    "\"team-a\"},\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\"],"
	    "\"resourceNames\":[\"c1\"],\"verbs\":[\"update\"]}]}");
	put_text(idx, "{\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"cm\",\"namespace\":"
	    "\"team-a\"},\"roleRef\":{\"kind\":\"Role\",\"name\":\"cm\"},"
	    "\"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]}");
	put_text(idx, "{\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"gone\",\"namespace\":"
	    "\"team-b\"},\"roleRef\":{\"kind\":\"Role\",\"name\":\"gone\"},"
	    "\"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]}");

	ck_assert_int_eq(rbac_rules_review(idx, &alice, "team-a", &out, &st), 0);
	assert_json(out, "{\"kind\":\"SelfSubjectRulesReview\",\"apiVersion\":"
	    "\"authorization.k8s.io/v1\",\"metadata\":{\"creationTimestamp\":null},"
	    "\"spec\":{},\"status\":{\"resourceRules\":["
	    "{\"verbs\":[\"get\",\"list\"],\"apiGroups\":[\"\"],"
	    "\"resources\":[\"pods\",\"pods/log\"]},"
	    "{\"verbs\":[\"*\"],\"apiGroups\":[\"x\"],\"resources\":[\"y\"]},"
	    "{\"verbs\":[\"update\"],\"apiGroups\":[\"\"],\"resources\":[\"configmaps\"],"
	    "\"resourceNames\":[\"c1\"]}],"
	    "\"nonResourceRules\":["
	    "{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/healthz\"]},"
	    "{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"/z\"]}],"
	    "\"incomplete\":false}}");
	json_object_put(out);

	/* A missing role is an evaluation error, not incompleteness. */
	ck_assert_int_eq(rbac_rules_review(idx, &alice, "team-b", &out, &st), 0);
	assert_json(kc_json_get(out, "status"), "{\"resourceRules\":["
	    "{\"verbs\":[\"get\",\"list\"],\"apiGroups\":[\"\"],"
	    "\"resources\":[\"pods\",\"pods/log\"]},"
	    "{\"verbs\":[\"*\"],\"apiGroups\":[\"x\"],\"resources\":[\"y\"]}],"
	    "\"nonResourceRules\":["
	    "{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/healthz\"]},"
	    "{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"/z\"]}],"
	    "\"incomplete\":false,"
	    "\"evaluationError\":\"role.rbac.authorization.k8s.io \\\"gone\\\" not found\"}");
	json_object_put(out);

	/* Nobody: empty lists, never absent. */
	ck_assert_int_eq(rbac_rules_review(idx, NULL, "team-a", &out, &st), 0);
	assert_json(kc_json_get(out, "status"), "{\"resourceRules\":[],"
	    "\"nonResourceRules\":[],\"incomplete\":false}");
	json_object_put(out);

	out = NULL;
	ck_assert_int_eq(rbac_rules_review(idx, &alice, "", &out, &st), KC_EBADREQUEST);
	ck_assert_str_eq(st.message, "no namespace on request");
	ck_assert_int_eq(rbac_rules_review(idx, &alice, NULL, &out, NULL), KC_EBADREQUEST);
	ck_assert_ptr_null(out);
	rbac_index_free(idx);
}
END_TEST

/* Past RBAC_REVIEW_RULES_MAX rules the review is incomplete. */
START_TEST(test_rules_review_incomplete)
{
	struct rbac_index *idx = NULL;
	struct rbac_user u = user("u", NULL);
	struct json_object *o, *out = NULL;
	struct kc_status st = { 0 };
	size_t nbind = RBAC_REVIEW_RULES_MAX / RBAC_RULES_MAX + 1;

	ck_assert_int_eq(rbac_index_new(&idx), 0);
	o = parse("{\"metadata\":{\"name\":\"r\"},\"rules\":[]}");
	for (size_t i = 0; i < RBAC_RULES_MAX; i++)
		ck_assert_int_eq(kc_json_append(kc_json_get(o, "rules"),
		    parse("{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/x\"]}")), 0);
	ck_assert_int_eq(rbac_index_put(idx, "ClusterRole", o, &st), 0);
	json_object_put(o);
	for (size_t i = 0; i < nbind; i++) {
		char text[256];

		(void)snprintf(text, sizeof(text), "{\"kind\":\"ClusterRoleBinding\","
		    "\"metadata\":{\"name\":\"b%zu\"},\"roleRef\":{\"kind\":\"ClusterRole\","
		    "\"name\":\"r\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"u\"}]}", i);
		put_text(idx, text);
	}
	ck_assert_int_eq(rbac_rules_review(idx, &u, "ns", &out, &st), 0);
	ck_assert(kc_json_bool(out, false, "status", "incomplete"));
	ck_assert_uint_eq(json_object_array_length(kc_json_get(out, "status",
	    "nonResourceRules")), RBAC_REVIEW_RULES_MAX);
	json_object_put(out);
	rbac_index_free(idx);
}
END_TEST

/*
 * Impersonation
 */

static void
assert_check(const struct rbac_attrs *a, const char *group, const char *resource,
    const char *sub, const char *name, const char *ns)
{
	ck_assert_str_eq(a->verb, "impersonate");
	ck_assert(a->resource_request);
	ck_assert_str_eq(a->group, group);
	ck_assert_str_eq(a->resource, resource);
	ck_assert_str_eq(a->subresource, sub);
	ck_assert_str_eq(a->name, name);
	ck_assert_str_eq(a->ns, ns);
}

static void
assert_groups(const struct rbac_imp_plan *p, const char *const *want)
{
	ck_assert_uint_eq(p->user.ngroups, count(want));
	for (size_t i = 0; i < p->user.ngroups; i++)
		ck_assert_str_eq(p->user.groups[i], want[i]);
}

START_TEST(test_impersonation_plan)
{
	struct rbac_imp_plan *p = NULL;
	struct kc_status st = { 0 };
	static const struct rbac_extra extras[] = {
		{ "scopes", "view" }, { "scopes", "edit" },
	};

	/* Nothing asked. */
	p = (struct rbac_imp_plan *)&st;
	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "" }, &p, &st), 0);
	ck_assert_ptr_null(p);

	/* A user alone. */
	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "bob" }, &p, &st), 0);
	ck_assert_uint_eq(p->nchecks, 1);
	assert_check(&p->checks[0], "", "users", "", "bob", "");
	ck_assert_str_eq(p->user.name, "bob");
	ck_assert_str_eq(p->user.uid, "");
	assert_groups(p, G("system:authenticated"));
	ck_assert_uint_eq(p->nextras, 0);
	p = rbac_imp_plan_free(p);

	/* User, groups, extras and uid, in upstream's order. */
	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "bob", .uid = "u-1", .groups = G("g1", "g2"), .ngroups = 2,
	    .extras = extras, .nextras = 2 }, &p, &st), 0);
	ck_assert_uint_eq(p->nchecks, 6);
	assert_check(&p->checks[0], "", "users", "", "bob", "");
	assert_check(&p->checks[1], "", "groups", "", "g1", "");
	assert_check(&p->checks[2], "", "groups", "", "g2", "");
	assert_check(&p->checks[3], "authentication.k8s.io", "userextras", "scopes",
	    "view", "");
	assert_check(&p->checks[4], "authentication.k8s.io", "userextras", "scopes",
	    "edit", "");
	assert_check(&p->checks[5], "authentication.k8s.io", "uids", "", "u-1", "");
	ck_assert_str_eq(p->checks[5].version, "v1");
	ck_assert_str_eq(p->user.uid, "u-1");
	assert_groups(p, G("g1", "g2", "system:authenticated"));
	ck_assert_ptr_eq(p->extras, extras);
	ck_assert_uint_eq(p->nextras, 2);
	p = rbac_imp_plan_free(p);

	/* A service account: its groups unless some are given. */
	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "system:serviceaccount:team-a:builder" }, &p, &st), 0);
	ck_assert_uint_eq(p->nchecks, 1);
	assert_check(&p->checks[0], "", "serviceaccounts", "", "builder", "team-a");
	ck_assert_str_eq(p->user.name, "system:serviceaccount:team-a:builder");
	assert_groups(p, G("system:serviceaccounts", "system:serviceaccounts:team-a",
	    "system:authenticated"));
	p = rbac_imp_plan_free(p);
	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "system:serviceaccount:team-a:builder", .groups = G("x"),
	    .ngroups = 1 }, &p, &st), 0);
	ck_assert_uint_eq(p->nchecks, 2);
	assert_check(&p->checks[1], "", "groups", "", "x", "");
	assert_groups(p, G("x", "system:authenticated"));
	p = rbac_imp_plan_free(p);

	/* Not service accounts: users. */
	static const char *const not_sa[] = {
		"system:serviceaccount:team-a", "system:serviceaccount:a:b:c",
		"system:serviceaccount:Team:x", "system:serviceaccount::x",
		"system:serviceaccount:a:", "system:serviceaccounts:a:b",
	};
	for (size_t i = 0; i < KC_ARRAY_SIZE(not_sa); i++) {
		ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
		    .user = not_sa[i] }, &p, &st), 0);
		assert_check(&p->checks[0], "", "users", "", not_sa[i], "");
		p = rbac_imp_plan_free(p);
	}

	/* system:authenticated is added once, and never with unauthenticated. */
	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "bob", .groups = G("system:authenticated"), .ngroups = 1 }, &p, &st), 0);
	assert_groups(p, G("system:authenticated"));
	p = rbac_imp_plan_free(p);
	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "bob", .groups = G("system:unauthenticated"), .ngroups = 1 }, &p,
	    &st), 0);
	assert_groups(p, G("system:unauthenticated"));
	p = rbac_imp_plan_free(p);
	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "system:anonymous" }, &p, &st), 0);
	assert_groups(p, G("system:unauthenticated"));
	p = rbac_imp_plan_free(p);
	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "system:anonymous", .groups = G("g", "system:unauthenticated"),
	    .ngroups = 2 }, &p, &st), 0);
	assert_groups(p, G("g", "system:unauthenticated"));
	p = rbac_imp_plan_free(p);
}
END_TEST

START_TEST(test_impersonation_errors)
{
	struct rbac_imp_plan *p = NULL;
	struct kc_status st = { 0 };
	static const struct rbac_extra extras[] = { { "k", "v" } };
	const char *many[RBAC_IMP_GROUPS_MAX + 2];

	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .groups = G("g1", "g2"), .ngroups = 2, .extras = extras, .nextras = 1,
	    .uid = "u" }, &p, &st), KC_EINTERNAL);
	ck_assert_str_eq(st.message, "requested [{Group  g1    } {Group  g2    } "
	    "{UserExtra  v  authentication.k8s.io/v1  k} "
	    "{UID  u  authentication.k8s.io/v1  }] without impersonating a user");
	ck_assert_ptr_null(p);
	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "", .uid = "u" }, &p, &st), KC_EINTERNAL);
	ck_assert_str_eq(st.message, "requested [{UID  u  authentication.k8s.io/v1  }] "
	    "without impersonating a user");
	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .groups = G(""), .ngroups = 1 }, &p, NULL), KC_EINTERNAL);

	for (size_t i = 0; i < KC_ARRAY_SIZE(many); i++)
		many[i] = "g";
	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "bob", .groups = many, .ngroups = RBAC_IMP_GROUPS_MAX + 1 }, &p, &st),
	    KC_EBADREQUEST);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "bob", .groups = many, .ngroups = RBAC_IMP_GROUPS_MAX }, &p, &st), 0);
	ck_assert_uint_eq(p->nchecks, RBAC_IMP_GROUPS_MAX + 1);
	ck_assert_uint_eq(p->user.ngroups, RBAC_IMP_GROUPS_MAX + 1);
	p = rbac_imp_plan_free(p);
}
END_TEST

/* The plan's checks through the authorizer, and the 403 of a denial. */
START_TEST(test_impersonation_authorize)
{
	struct rbac_index *idx = NULL;
	struct rbac_imp_plan *p = NULL;
	struct rbac_user alice = user("alice", G("system:authenticated"));
	struct kc_status st = { 0 };
	static const struct rbac_extra extras[] = { { "scopes", "view" } };
	char reason[RBAC_REASON_MAX], msg[512];
	size_t i;

	ck_assert_int_eq(rbac_index_new(&idx), 0);
	put_text(idx, "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"imp\"},"
	    "\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"users\",\"groups\"],"
	    "\"verbs\":[\"impersonate\"],\"resourceNames\":[\"bob\",\"devs\"]},"
	    "{\"apiGroups\":[\"authentication.k8s.io\"],\"resources\":[\"uids\"],"
	    "\"verbs\":[\"impersonate\"]}]}");
	put_text(idx, "{\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"imp\"},"
	    "\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"imp\"},"
	    "\"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]}");
	put_text(idx, "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"sa-imp\"},"
	    "\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"serviceaccounts\"],"
	    "\"verbs\":[\"impersonate\"]}]}");
	put_text(idx, "{\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"sa-imp\","
	    "\"namespace\":\"team-a\"},\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":"
	    "\"sa-imp\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"alice\"}]}");

	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "bob", .groups = G("devs"), .ngroups = 1, .uid = "1" }, &p, &st), 0);
	for (i = 0; i < p->nchecks; i++)
		ck_assert_msg(rbac_authorize(idx, &alice, &p->checks[i], reason,
		    sizeof(reason)), "check %zu", i);
	/* The new identity is what RBAC sees next. */
	ck_assert(!rbac_authorize(idx, &p->user, &p->checks[0], reason, sizeof(reason)));
	p = rbac_imp_plan_free(p);

	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "carol" }, &p, &st), 0);
	ck_assert(!rbac_authorize(idx, &alice, &p->checks[0], reason, sizeof(reason)));
	(void)rbac_forbidden_message("alice", &p->checks[0], reason, msg, sizeof(msg));
	ck_assert_str_eq(msg, "users \"carol\" is forbidden: User \"alice\" cannot "
	    "impersonate resource \"users\" in API group \"\" at the cluster scope");
	p = rbac_imp_plan_free(p);

	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "system:serviceaccount:team-a:builder" }, &p, &st), 0);
	ck_assert(rbac_authorize(idx, &alice, &p->checks[0], reason, sizeof(reason)));
	ck_assert_str_eq(reason, "RBAC: allowed by RoleBinding \"sa-imp/team-a\" of "
	    "ClusterRole \"sa-imp\" to User \"alice\"");
	p = rbac_imp_plan_free(p);
	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "system:serviceaccount:team-b:builder" }, &p, &st), 0);
	ck_assert(!rbac_authorize(idx, &alice, &p->checks[0], reason, sizeof(reason)));
	(void)rbac_forbidden_message("alice", &p->checks[0], reason, msg, sizeof(msg));
	ck_assert_str_eq(msg, "serviceaccounts \"builder\" is forbidden: User \"alice\" "
	    "cannot impersonate resource \"serviceaccounts\" in API group \"\" in the "
	    "namespace \"team-b\"");
	p = rbac_imp_plan_free(p);

	ck_assert_int_eq(rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "bob", .extras = extras, .nextras = 1 }, &p, &st), 0);
	ck_assert(rbac_authorize(idx, &alice, &p->checks[0], reason, sizeof(reason)));
	ck_assert(!rbac_authorize(idx, &alice, &p->checks[1], reason, sizeof(reason)));
	(void)rbac_forbidden_message("alice", &p->checks[1], reason, msg, sizeof(msg));
	ck_assert_str_eq(msg, "userextras.authentication.k8s.io \"view\" is forbidden: "
	    "User \"alice\" cannot impersonate resource \"userextras/scopes\" in API group "
	    "\"authentication.k8s.io\" at the cluster scope");
	p = rbac_imp_plan_free(p);
	rbac_index_free(idx);
}
END_TEST

START_TEST(test_extra_key)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "Scopes", "scopes" },
		{ "Example.COM%2FTeam", "example.com/team" },
		{ "a%2fb%2Fc", "a/b/c" },
		{ "a%zz", "a%zz" },
		{ "A%2", "a%2" },
		{ "a%", "a%" },
		{ "a+b%20c", "a+b c" },
		{ "%41%42", "AB" },
		{ "", "" },
	};
	char buf[32];

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		int n = rbac_extra_key(cases[i].in, buf, sizeof(buf));

		ck_assert_msg(n >= 0 && strcmp(buf, cases[i].out) == 0, "%s: %d %s",
		    cases[i].in, n, buf);
		ck_assert_int_eq(n, (int)strlen(cases[i].out));
	}
	ck_assert_int_eq(rbac_extra_key("abcd", buf, 4), -E2BIG);
	ck_assert_int_eq(rbac_extra_key("abc", buf, 4), 3);
	ck_assert_int_eq(rbac_extra_key(NULL, buf, 1), 0);
	ck_assert_str_eq(buf, "");
}
END_TEST

/*
 * Messages
 */

struct msg_case {
	const char		*user;
	struct rbac_attrs	 a;
	const char		*reason;
	const char		*want;
};

static const struct msg_case msg_cases[] = {
	{ "u", RES("get", "", "pods", "", "p", "ns"), "",
	    "pods \"p\" is forbidden: User \"u\" cannot get resource \"pods\" in API group "
	    "\"\" in the namespace \"ns\"" },
	{ "u", RES("get", "", "pods", "log", "p", "ns"), NULL,
	    "pods \"p\" is forbidden: User \"u\" cannot get resource \"pods/log\" in API "
	    "group \"\" in the namespace \"ns\"" },
	{ "u", RES("list", "trainyard.dev", "runs", "", "", ""), "",
	    "runs.trainyard.dev is forbidden: User \"u\" cannot list resource \"runs\" in "
	    "API group \"trainyard.dev\" at the cluster scope" },
	{ "u", RES("create", "trainyard.dev", "runs", "", "", "team-a"), "",
	    "runs.trainyard.dev is forbidden: User \"u\" cannot create resource \"runs\" "
	    "in API group \"trainyard.dev\" in the namespace \"team-a\"" },
	{ "u", RES("get", "", "pods", "", "p", "ns"),
	    "RBAC: role.rbac.authorization.k8s.io \"x\" not found",
	    "pods \"p\" is forbidden: User \"u\" cannot get resource \"pods\" in API group "
	    "\"\" in the namespace \"ns\": RBAC: role.rbac.authorization.k8s.io \"x\" not "
	    "found" },
	{ "u", URL("get", "/x"), "", "forbidden: User \"u\" cannot get path \"/x\"" },
	{ "system:anonymous", URL("post", "/logs/a b"), "r",
	    "forbidden: User \"system:anonymous\" cannot post path \"/logs/a b\": r" },
	/* Quoting as Go's %q; &, < and > escaped in the sanitized part only. */
	{ "a<b>&\"c\"", RES("get", "", "pods", "", "q\"<", ""), "<r>",
	    "pods \"q\\\"<\" is forbidden: User \"a&lt;b&gt;&amp;\\\"c\\\"\" cannot get "
	    "resource \"pods\" in API group \"\" at the cluster scope: <r>" },
	{ "tab\there\n\x01\x7f\\", URL("get", "/\xff\xc3\xa9\xe2\x80\x8b\xf0\x9f\x98\x80"),
	    "", "forbidden: User \"tab\\there\\n\\x01\\x7f\\\\\" cannot get path "
	    "\"/\\xff\xc3\xa9\\u200b\xf0\x9f\x98\x80\"" },
	{ "\xc2\x85\xed\xa0\x80", URL("get", "/"), "",
	    "forbidden: User \"\\u0085\\xed\\xa0\\x80\" cannot get path \"/\"" },
	{ "\a\b\f\r\v\xf3\xb0\x80\x80\xc3" "A\xe2\x82", URL("get", "/"), "",
	    "forbidden: User \"\\a\\b\\f\\r\\v\\U000f0000\\xc3A\\xe2\\x82\" cannot get "
	    "path \"/\"" },
	{ NULL, (struct rbac_attrs){ .resource_request = true }, NULL,
	    "forbidden: User \"\" cannot  resource \"\" in API group \"\" at the cluster "
	    "scope" },
};

START_TEST(test_forbidden_messages)
{
	char buf[512], small[16];
	size_t n;

	for (size_t i = 0; i < KC_ARRAY_SIZE(msg_cases); i++) {
		const struct msg_case *c = &msg_cases[i];

		n = rbac_forbidden_message(c->user, &c->a, c->reason, buf, sizeof(buf));
		ck_assert_msg(strcmp(buf, c->want) == 0, "case %zu:\n  got  %s\n  want %s",
		    i, buf, c->want);
		ck_assert_uint_eq(n, strlen(c->want));
	}
	n = rbac_forbidden_message("u", &msg_cases[0].a, "", small, sizeof(small));
	ck_assert_uint_eq(n, strlen(msg_cases[0].want));
	ck_assert_str_eq(small, "pods \"p\" is for");
	ck_assert_uint_eq(rbac_forbidden_message("u", &msg_cases[0].a, "", NULL, 0),
	    strlen(msg_cases[0].want));
}
END_TEST

/*
 * Allocation failures
 */

typedef int alloc_fn(void *arg);

/*
 * Runs 'fn' under a growing allocation budget until it stops failing
 * with -ENOMEM. 'allocates' says whether it makes allocations of its own
 * (json-c's do not go through kc_malloc() and never fail here).
 */
/*
 * Escalation prevention: Covers, BreakdownRule, CompactRules and
 * CompactString as ConfirmNoEscalation prints them.
 */

#define HELD	"user \"u\" (groups=[\"g\" \"system:authenticated\"]) is attempting " \
		"to grant RBAC permissions not currently held:\n"

struct cover_case {
	const char	*owner;		/* rules JSON of the one ClusterRole u holds */
	const char	*servant;	/* rules JSON of the role to grant */
	const char	*missing;	/* NULL: covered */
};

static const struct cover_case cover_cases[] = {
	/* Verbs. */
	{ "[{\"verbs\":[\"get\",\"list\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]",
	  "[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]", NULL },
	{ "[{\"verbs\":[\"*\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]",
	  "[{\"verbs\":[\"get\",\"delete\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]",
	  NULL },
	{ "[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]",
	  "[{\"verbs\":[\"get\",\"list\",\"watch\"],\"apiGroups\":[\"\"],"
	  "\"resources\":[\"pods\"]}]",
	  "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"list\" \"watch\"]}" },
	/* A "*" verb asked for is covered only by "*". */
	{ "[{\"verbs\":[\"get\",\"list\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]",
	  "[{\"verbs\":[\"*\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]",
	  "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"*\"]}" },
	/* Groups. */
	{ "[{\"verbs\":[\"get\"],\"apiGroups\":[\"*\"],\"resources\":[\"deployments\"]}]",
	  "[{\"verbs\":[\"get\"],\"apiGroups\":[\"apps\",\"extensions\"],"
	  "\"resources\":[\"deployments\"]}]", NULL },
	{ "[{\"verbs\":[\"get\"],\"apiGroups\":[\"apps\"],\"resources\":[\"deployments\"]}]",
	  "[{\"verbs\":[\"get\"],\"apiGroups\":[\"apps\",\"extensions\"],"
	  "\"resources\":[\"deployments\"]}]",
	  "{APIGroups:[\"extensions\"], Resources:[\"deployments\"], Verbs:[\"get\"]}" },
	/* Resources, subresources. */
	{ "[{\"verbs\":[\"get\"],\"apiGroups\":[\"apps\"],\"resources\":[\"*\"]}]",
	  "[{\"verbs\":[\"get\"],\"apiGroups\":[\"apps\"],"
	  "\"resources\":[\"deployments\",\"deployments/scale\"]}]", NULL },
	{ "[{\"verbs\":[\"get\"],\"apiGroups\":[\"apps\"],\"resources\":[\"*/scale\"]}]",
	  "[{\"verbs\":[\"get\"],\"apiGroups\":[\"apps\"],"
	  "\"resources\":[\"deployments/scale\",\"deployments\"]}]",
	  "{APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"get\"]}" },
	{ "[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]",
	  "[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods/log\"]}]",
	  "{APIGroups:[\"\"], Resources:[\"pods/log\"], Verbs:[\"get\"]}" },
	/* "*\/scale" asked for is not covered by "*\/status". */
	{ "[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"*/status\"]}]",
	  "[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"*/scale\"]}]",
	  "{APIGroups:[\"\"], Resources:[\"*/scale\"], Verbs:[\"get\"]}" },
	/* resourceNames. */
	{ "[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]",
	  "[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"],"
	  "\"resourceNames\":[\"a\",\"b\"]}]", NULL },
	{ "[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"],"
	  "\"resourceNames\":[\"a\"]}]",
	  "[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"],"
	  "\"resourceNames\":[\"a\",\"b\"]}]",
	  "{APIGroups:[\"\"], Resources:[\"pods\"], ResourceNames:[\"b\"], Verbs:[\"get\"]}" },
	{ "[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"],"
	  "\"resourceNames\":[\"a\"]}]",
	  "[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]",
	  "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\"]}" },
	{ "[]",
	  "[{\"verbs\":[\"get\",\"list\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"],"
	  "\"resourceNames\":[\"b\",\"a\"]}]",
	  "{APIGroups:[\"\"], Resources:[\"pods\"], ResourceNames:[\"a\"], Verbs:[\"get\" "
	  "\"list\"]}\n{APIGroups:[\"\"], Resources:[\"pods\"], ResourceNames:[\"b\"], "
	  "Verbs:[\"get\" \"list\"]}" },
	/* Non-resource URLs. */
	{ "[{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/api/*\"]}]",
	  "[{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/api/v1\",\"/api/\",\"/apis\"]}]",
	  "{NonResourceURLs:[\"/apis\"], Verbs:[\"get\"]}" },
	{ "[{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"*\"]}]",
	  "[{\"verbs\":[\"get\",\"post\"],\"nonResourceURLs\":[\"/metrics\",\"/x/y\"]}]",
	  NULL },
	/* "/api*" asked for is covered by "/api*" and "/a*", not by "/api". */
	{ "[{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/a*\",\"/api\"]}]",
	  "[{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/api*\"]}]", NULL },
	/* URLs and resources never cover each other; URLs are not compacted. */
	{ "[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"]}]",
	  "[{\"verbs\":[\"get\",\"head\"],\"nonResourceURLs\":[\"/healthz\"]}]",
	  "{NonResourceURLs:[\"/healthz\"], Verbs:[\"get\"]}\n"
	  "{NonResourceURLs:[\"/healthz\"], Verbs:[\"head\"]}" },
	{ "[{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"*\"]}]",
	  "[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]",
	  "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\"]}" },
	/* Compaction: one line a group and resource, verbs in order met, sorted. */
	{ "[]",
	  "[{\"verbs\":[\"watch\",\"get\"],\"apiGroups\":[\"apps\",\"\"],"
	  "\"resources\":[\"pods\",\"deployments\"]},{\"verbs\":[\"list\",\"get\"],"
	  "\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]",
	  "{APIGroups:[\"\"], Resources:[\"deployments\"], Verbs:[\"watch\" \"get\"]}\n"
	  "{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"watch\" \"get\" \"list\"]}\n"
	  "{APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"watch\" \"get\"]}\n"
	  "{APIGroups:[\"apps\"], Resources:[\"pods\"], Verbs:[\"watch\" \"get\"]}" },
	/* Covered by two rules together, tuple by tuple. */
	{ "[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]},"
	  "{\"verbs\":[\"list\"],\"apiGroups\":[\"\"],\"resources\":[\"*\"]}]",
	  "[{\"verbs\":[\"get\",\"list\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]",
	  NULL },
	/* Rules without groups or resources grant nothing, so need nothing. */
	{ "[]", "[{\"verbs\":[\"get\"],\"resources\":[\"pods\"]}]", NULL },
	/* Go's %q of odd strings. */
	{ "[]", "[{\"verbs\":[\"g\\\"et\"],\"apiGroups\":[\"\"],\"resources\":[\"p\\u00e9\\n\"]}]",
	  "{APIGroups:[\"\"], Resources:[\"p\u00e9\\n\"], Verbs:[\"g\\\"et\"]}" },
};

/* An index where User u holds, cluster-wide, the rules 'owner'. */
static struct rbac_index *
owner_index(const char *owner)
{
	struct rbac_index *idx = NULL;
	char text[4096];

	ck_assert_int_eq(rbac_index_new(&idx), 0);
	(void)snprintf(text, sizeof(text), "{\"kind\":\"ClusterRole\",\"metadata\":"
	    "{\"name\":\"owner\"},\"rules\":%s}", owner);
	put_text(idx, text);
	put_text(idx, "{\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"u\"},"
	    "\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"owner\"},\"subjects\":"
	    "[{\"kind\":\"User\",\"name\":\"u\"}]}");
	return idx;
}

static int
confirm_text(const struct rbac_index *idx, const char *ns, const char *role,
    const char *old, char **msg)
{
	struct rbac_user u = user("u", G("g", "system:authenticated"));
	struct json_object *o = parse(role), *oo = old != NULL ? parse(old) : NULL;
	struct kc_status st = { 0 };
	int r = rbac_confirm_role(idx, &u, ns, o, oo, msg, &st);

	json_object_put(o);
	if (oo != NULL)
		json_object_put(oo);
	return r;
}

START_TEST(test_escalation_covers)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(cover_cases); i++) {
		const struct cover_case *c = &cover_cases[i];
		struct rbac_index *idx = owner_index(c->owner);
		char text[4096], want[4096], *msg = NULL;
		int r;

		(void)snprintf(text, sizeof(text), "{\"kind\":\"Role\",\"metadata\":{\"name\":"
		    "\"r\",\"namespace\":\"ns\"},\"rules\":%s}", c->servant);
		r = confirm_text(idx, "ns", text, NULL, &msg);
		if (c->missing == NULL) {
			ck_assert_msg(r == 0, "case %zu: %d %s", i, r, S_OR(msg));
			ck_assert_ptr_null(msg);
		} else {
			ck_assert_msg(r == KC_EFORBIDDEN, "case %zu: %d", i, r);
			(void)snprintf(want, sizeof(want), HELD "%s", c->missing);
			ck_assert_msg(strcmp(msg, want) == 0, "case %zu:\n%s\nwant\n%s", i, msg,
			    want);
		}
		kc_free(msg);
		rbac_index_free(idx);
	}
}
END_TEST

START_TEST(test_escalation_scope)
{
	struct rbac_index *idx = NULL;
	struct rbac_user u = user("u", G("g", "system:authenticated"));
	const char *role = "{\"kind\":\"Role\",\"metadata\":{\"name\":\"r\",\"namespace\":"
	    "\"a\"},\"rules\":[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":"
	    "[\"pods\"]}]}";
	char *msg = NULL;

	ck_assert_int_eq(rbac_index_new(&idx), 0);
	put_text(idx, "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"pods\"},\"rules\":"
	    "[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\"]}]}");
	/* A RoleBinding of a ClusterRole, to the group g, in namespace a only. */
	put_text(idx, "{\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"b\",\"namespace\":"
	    "\"a\"},\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"pods\"},\"subjects\":"
	    "[{\"kind\":\"Group\",\"name\":\"g\"}]}");
	ck_assert_int_eq(confirm_text(idx, "a", role, NULL, &msg), 0);
	ck_assert_int_eq(confirm_text(idx, "b", role, NULL, &msg), KC_EFORBIDDEN);
	kc_free(msg);
	ck_assert_int_eq(confirm_text(idx, "", role, NULL, &msg), KC_EFORBIDDEN);
	kc_free(msg);

	/* Binding: the role in the binding's namespace; missing roles are 404. */
	ck_assert_int_eq(rbac_confirm_binding(idx, &u, "a", "ClusterRole", "pods", &msg), 0);
	ck_assert_ptr_null(msg);
	ck_assert_int_eq(rbac_confirm_binding(idx, &u, "b", "ClusterRole", "pods", &msg),
	    KC_EFORBIDDEN);
	ck_assert_str_eq(msg, HELD "{APIGroups:[\"\"], Resources:[\"pods\"], "
	    "Verbs:[\"get\"]}");
	kc_free(msg);
	ck_assert_int_eq(rbac_confirm_binding(idx, &u, "a", "ClusterRole", "gone", &msg),
	    KC_ENOTFOUND);
	ck_assert_str_eq(msg, "clusterroles.rbac.authorization.k8s.io \"gone\" not found");
	kc_free(msg);
	ck_assert_int_eq(rbac_confirm_binding(idx, &u, "a", "Role", "nope", &msg),
	    KC_ENOTFOUND);
	ck_assert_str_eq(msg, "roles.rbac.authorization.k8s.io \"nope\" not found");
	kc_free(msg);
	ck_assert_int_eq(rbac_confirm_binding(idx, &u, "a", "Other", "x", &msg),
	    KC_EINTERNAL);
	ck_assert_str_eq(msg, "unsupported role reference kind: \"Other\"");
	kc_free(msg);
	put_text(idx, "{\"kind\":\"Role\",\"metadata\":{\"name\":\"none\",\"namespace\":"
	    "\"b\"},\"rules\":[]}");
	ck_assert_int_eq(rbac_confirm_binding(idx, &u, "b", "Role", "none", &msg), 0);

	/* A binding of u to roles that do not exist: resolution errors. */
	put_text(idx, "{\"kind\":\"ClusterRoleBinding\",\"metadata\":{\"name\":\"x\"},"
	    "\"roleRef\":{\"kind\":\"ClusterRole\",\"name\":\"gone\"},\"subjects\":"
	    "[{\"kind\":\"User\",\"name\":\"u\"}]}");
	ck_assert_int_eq(confirm_text(idx, "b", role, NULL, &msg), KC_EFORBIDDEN);
	ck_assert_str_eq(msg, HELD "{APIGroups:[\"\"], Resources:[\"pods\"], "
	    "Verbs:[\"get\"]}; resolution errors: [clusterroles.rbac.authorization.k8s.io "
	    "\"gone\" not found]");
	kc_free(msg);
	put_text(idx, "{\"kind\":\"RoleBinding\",\"metadata\":{\"name\":\"y\",\"namespace\":"
	    "\"b\"},\"roleRef\":{\"kind\":\"Role\",\"name\":\"gone\"},\"subjects\":"
	    "[{\"kind\":\"User\",\"name\":\"u\"}]}");
	ck_assert_int_eq(confirm_text(idx, "b", role, NULL, &msg), KC_EFORBIDDEN);
	ck_assert(strstr(msg, "; resolution errors: [[clusterroles.rbac.authorization.k8s.io "
	    "\"gone\" not found, roles.rbac.authorization.k8s.io \"gone\" not found]]") !=
	    NULL);
	kc_free(msg);
	rbac_index_free(idx);
}
END_TEST

START_TEST(test_escalation_aggregation_rule)
{
	struct rbac_index *idx = owner_index("[{\"verbs\":[\"get\"],\"apiGroups\":[\"\"],"
	    "\"resources\":[\"pods\"]}]");
	const char *agg = "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"r\"},"
	    "\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":{\"a\":\"b\"}}]}}";
	const char *plain = "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"r\"}}";
	const char *empty = "{\"kind\":\"ClusterRole\",\"metadata\":{\"name\":\"r\"},"
	    "\"aggregationRule\":{\"clusterRoleSelectors\":[]}}";
	char *msg = NULL;

	ck_assert_int_eq(confirm_text(idx, "", agg, NULL, &msg), KC_EFORBIDDEN);
	ck_assert_str_eq(msg, "must have cluster-admin privileges to use the aggregationRule");
	kc_free(msg);
	/* Removing it is checked too; an empty selector list is no rule. */
	ck_assert_int_eq(confirm_text(idx, "", plain, agg, &msg), KC_EFORBIDDEN);
	kc_free(msg);
	ck_assert_int_eq(confirm_text(idx, "", plain, NULL, &msg), 0);
	ck_assert_int_eq(confirm_text(idx, "", empty, plain, &msg), 0);
	rbac_index_free(idx);
	idx = owner_index("[{\"verbs\":[\"*\"],\"apiGroups\":[\"*\"],\"resources\":[\"*\"]},"
	    "{\"verbs\":[\"*\"],\"nonResourceURLs\":[\"*\"]}]");
	ck_assert_int_eq(confirm_text(idx, "", agg, NULL, &msg), 0);
	rbac_index_free(idx);
}
END_TEST

START_TEST(test_escalation_limits)
{
	struct rbac_index *idx = owner_index("[]");
	struct kc_buf b;
	char *msg = NULL;
	int r;

	/* 64 x 64 x 64 = 262144 tuples fit; one more verb does not. */
	kc_buf_init(&b, 1u << 20);
	ck_assert_int_eq(kc_buf_puts(&b, "{\"kind\":\"Role\",\"metadata\":{\"name\":\"r\","
	    "\"namespace\":\"n\"},\"rules\":[{\"verbs\":[\"x\""), 0);
	for (int i = 0; i < 64; i++)
		ck_assert_int_eq(kc_buf_printf(&b, ",\"v%d\"", i), 0);
	ck_assert_int_eq(kc_buf_puts(&b, "],\"apiGroups\":[\"\""), 0);
	for (int i = 1; i < 64; i++)
		ck_assert_int_eq(kc_buf_printf(&b, ",\"g%d\"", i), 0);
	ck_assert_int_eq(kc_buf_puts(&b, "],\"resources\":[\"r0\""), 0);
	for (int i = 1; i < 64; i++)
		ck_assert_int_eq(kc_buf_printf(&b, ",\"r%d\"", i), 0);
	ck_assert_int_eq(kc_buf_puts(&b, "]}]}"), 0);
	r = confirm_text(idx, "n", kc_buf_str(&b), NULL, &msg);
	ck_assert_int_eq(r, KC_EFORBIDDEN);
	ck_assert_str_eq(msg, HELD "more than 262144 permissions to compare");
	kc_free(msg);
	kc_buf_free(&b);
	rbac_index_free(idx);
}
END_TEST

struct esc_arg {
	struct rbac_index	*idx;
	const char		*role;
};

static int
try_confirm(void *arg)
{
	struct esc_arg *a = arg;
	char *msg = NULL;
	int r = confirm_text(a->idx, "ns", a->role, NULL, &msg);

	if (r == -ENOMEM)
		ck_assert_ptr_null(msg);
	kc_free(msg);
	return r == KC_EFORBIDDEN ? 0 : r;
}

static void
alloc_loop(alloc_fn *fn, void *arg, bool allocates)
{
	size_t budget;
	int r;

	for (budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = fn(arg);
		fail_alloc_after(SIZE_MAX);
		if (r != -ENOMEM)
			break;
		ck_assert_uint_lt(budget, 100000);
	}
	ck_assert_int_eq(r, 0);
	ck_assert(allocates == (budget > 0));
}

static int
try_index_new(void *arg)
{
	struct rbac_index *idx = NULL;
	int r = rbac_index_new(&idx);

	(void)arg;
	if (r < 0)
		ck_assert_ptr_null(idx);
	rbac_index_free(idx);
	return r;
}

static int
try_put_all(void *arg)
{
	struct json_object *arr = arg;
	struct rbac_index *idx = NULL;
	int r;

	if ((r = rbac_index_new(&idx)) < 0)
		return r;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *o = json_object_array_get_idx(arr, i);
		const char *kind = kc_json_str(o, "kind");
		size_t before = rbac_index_count(idx, kind);

		if ((r = rbac_index_put(idx, kind, o, NULL)) < 0) {
			/* A failed put leaves no entry behind. */
			ck_assert_uint_eq(rbac_index_count(idx, kind), before);
			break;
		}
	}
	rbac_index_free(idx);
	return r;
}

struct agg_arg {
	struct rbac_index	*idx;
	const char		*ns;
};

static int
try_aggregate(void *arg)
{
	struct agg_arg *a = arg;
	struct json_object *out = NULL;
	int r = rbac_aggregate(a->idx, &out);

	if (r < 0)
		ck_assert_ptr_null(out);
	else
		json_object_put(out);
	return r;
}

static int
try_review(void *arg)
{
	struct agg_arg *a = arg;
	struct rbac_user u = user("alice", G("system:authenticated", "readers"));
	struct json_object *out = NULL;
	int r = rbac_rules_review(a->idx, &u, a->ns, &out, NULL);

	if (r < 0)
		ck_assert_ptr_null(out);
	else
		json_object_put(out);
	return r;
}

static int
try_plan(void *arg)
{
	struct rbac_imp_plan *p = NULL;
	int r;

	(void)arg;
	r = rbac_impersonation_plan(&(struct rbac_impersonation){
	    .user = "system:serviceaccount:a:b" }, &p, NULL);
	if (r < 0)
		ck_assert_ptr_null(p);
	rbac_imp_plan_free(p);
	return r;
}

START_TEST(test_alloc_failures)
{
	struct json_object *policy = fixture("rbac/policy.json");
	struct json_object *agg = fixture("rbac/aggregate.json");
	struct json_object *roles = NULL;
	struct agg_arg a = { NULL, "team-a" };

	alloc_loop(try_index_new, NULL, true);
	alloc_loop(try_put_all, policy, true);
	alloc_loop(try_put_all, agg, true);
	alloc_loop(try_plan, NULL, true);
	{
		struct esc_arg e = { owner_index("[{\"verbs\":[\"get\"],\"apiGroups\":"
		    "[\"\"],\"resources\":[\"pods\"]}]"), "{\"kind\":\"Role\",\"metadata\":"
		    "{\"name\":\"r\",\"namespace\":\"ns\"},\"rules\":[{\"verbs\":"
		    "[\"get\",\"list\"],\"apiGroups\":[\"\"],\"resources\":[\"pods\","
		    "\"secrets\"]},{\"verbs\":[\"get\"],\"nonResourceURLs\":[\"/x\"]}]}" };

		alloc_loop(try_confirm, &e, true);
		rbac_index_free(e.idx);
	}

	ck_assert_int_eq(rbac_index_new(&a.idx), 0);
	put_all(a.idx, agg);
	alloc_loop(try_aggregate, &a, true);
	rbac_index_free(a.idx);

	a.idx = bootstrap_index(&roles);
	put_all(a.idx, policy);
	alloc_loop(try_review, &a, false);
	rbac_index_free(a.idx);

	json_object_put(roles);
	json_object_put(agg);
	json_object_put(policy);
}
END_TEST

Suite *
dc_rbac_suite(void)
{
	Suite *s = suite_create("dc_rbac");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_authorize_table);
	tcase_add_test(tc, test_authorize_edges);
	tcase_add_test(tc, test_index_updates);
	tcase_add_test(tc, test_index_namespaces);
	tcase_add_test(tc, test_index_invalid);
	tcase_add_test(tc, test_index_invalid_replaces);
	tcase_add_test(tc, test_index_limits);
	tcase_add_test(tc, test_index_objects_max);
	tcase_add_test(tc, test_aggregate_selectors);
	tcase_add_test(tc, test_aggregate_cases);
	tcase_add_test(tc, test_aggregate_null_selector);
	tcase_add_test(tc, test_aggregate_limit);
	tcase_add_test(tc, test_bootstrap_objects);
	tcase_add_test(tc, test_bootstrap_aggregated);
	tcase_add_test(tc, test_bootstrap_authorize);
	tcase_add_test(tc, test_rules_review);
	tcase_add_test(tc, test_rules_review_incomplete);
	tcase_add_test(tc, test_impersonation_plan);
	tcase_add_test(tc, test_impersonation_errors);
	tcase_add_test(tc, test_impersonation_authorize);
	tcase_add_test(tc, test_extra_key);
	tcase_add_test(tc, test_forbidden_messages);
	tcase_add_test(tc, test_escalation_covers);
	tcase_add_test(tc, test_escalation_scope);
	tcase_add_test(tc, test_escalation_aggregation_rule);
	tcase_add_test(tc, test_escalation_limits);
	tcase_add_test(tc, test_alloc_failures);
	suite_add_tcase(s, tc);
	return s;
}

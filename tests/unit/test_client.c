/*
 * test_client.c: the REST client against the fake transport (paths,
 * queries, bodies, every verb, error mapping), and a few round trips
 * through the curl transport and the loopback test server.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/client.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/str.h>

#include "../../lib/internal.h"
#include "../fakes/fake_transport.h"
#include "../server/testserver.h"
#include "testutil.h"

#define ck_ok(r, st)	ck_assert_msg((r) == 0, "%s: %s", kc_err_name(r), (st).message)

static const struct kc_resource res_runs = {
	.group = "trainyard.dev", .version = "v1beta1", .resource = "runs",
	.kind = "Run", .namespaced = true,
};
static const struct kc_resource res_clusterthings = {
	.group = "example.com", .version = "v1alpha1", .resource = "clusterthings",
	.kind = "ClusterThing", .namespaced = false,
};

static struct kc_rest_config test_rc = {
	.server = "https://fake.invalid",
	.namespace = "team-a",
};

static struct kc_client *
new_client(void)
{
	struct kc_client *cl = NULL;
	struct kc_status st;
	int r;

	r = kc_client_new(&(struct kc_client_opts){
		.rc = &test_rc,
		.ops = &fake_transport_ops,
	}, &cl, &st);
	ck_ok(r, st);
	return cl;
}

static struct json_object *
parse(const char *text)
{
	struct json_object *o = NULL;

	ck_assert_int_eq(kc_json_parse(text, strlen(text), &o, NULL), 0);
	return o;
}

static struct json_object *
fixture_json(const char *name)
{
	size_t len;
	char *text = tu_fixture(name, &len);
	struct json_object *o = NULL;

	ck_assert_int_eq(kc_json_parse(text, len, &o, NULL), 0);
	kc_free(text);
	return o;
}

/* The body of request 'i' parsed, for assertions. */
static struct json_object *
sent_body(struct fake_transport *ft, size_t i)
{
	const struct ft_request *q = ft_request(ft, i);

	return parse(q->body);
}

/* ---- paths, queries, names ---------------------------------------------- */

static const struct {
	const struct kc_resource *res;
	const char	*ns, *name, *sub;
	const char	*want;		/* NULL: -EINVAL */
} path_cases[] = {
	{ &kc_res_pods, "team-a", "p1", NULL, "/api/v1/namespaces/team-a/pods/p1" },
	{ &kc_res_pods, "team-a", "p1", "status",
	  "/api/v1/namespaces/team-a/pods/p1/status" },
	{ &kc_res_pods, "team-a", NULL, NULL, "/api/v1/namespaces/team-a/pods" },
	{ &kc_res_pods, NULL, NULL, NULL, "/api/v1/pods" },
	{ &kc_res_nodes, NULL, "n1", NULL, "/api/v1/nodes/n1" },
	{ &kc_res_namespaces, NULL, "team-a", "finalize",
	  "/api/v1/namespaces/team-a/finalize" },
	{ &kc_res_leases, "kube-system", "trainyard", NULL,
	  "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/trainyard" },
	{ &kc_res_events_v1, "team-a", NULL, NULL,
	  "/apis/events.k8s.io/v1/namespaces/team-a/events" },
	{ &kc_res_events, "team-a", NULL, NULL, "/api/v1/namespaces/team-a/events" },
	{ &kc_res_customresourcedefinitions, NULL, "runs.trainyard.dev", "status",
	  "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/runs.trainyard.dev/status" },
	{ &kc_res_clusterroles, NULL, "system:controller:trainyard", NULL,
	  "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:controller:trainyard" },
	{ &kc_res_networkpolicies, "a", NULL, NULL,
	  "/apis/networking.k8s.io/v1/namespaces/a/networkpolicies" },
	{ &res_runs, "team-a", "r1", "scale",
	  "/apis/trainyard.dev/v1beta1/namespaces/team-a/runs/r1/scale" },
	{ &res_runs, NULL, NULL, NULL, "/apis/trainyard.dev/v1beta1/runs" },
	{ &res_clusterthings, NULL, "t1", NULL,
	  "/apis/example.com/v1alpha1/clusterthings/t1" },
	/* Refused. */
	{ &res_clusterthings, "team-a", "t1", NULL, NULL },	/* scope */
	{ &kc_res_nodes, "default", NULL, NULL, NULL },
	{ &kc_res_pods, "team-a", NULL, "status", NULL },	/* sub, no name */
	{ &kc_res_pods, "team-a", "a/b", NULL, NULL },
	{ &kc_res_pods, "team-a", "..", NULL, NULL },
	{ &kc_res_pods, "team-a", ".", NULL, NULL },
	{ &kc_res_pods, "team-a", "", NULL, NULL },
	{ &kc_res_pods, "team-a", "p%2Fx", NULL, NULL },
	{ &kc_res_pods, "team-a", "p1?watch=true", NULL, NULL },
	{ &kc_res_pods, "team-a", "p1#x", NULL, NULL },
	{ &kc_res_pods, "team-a", "p 1", NULL, NULL },
	{ &kc_res_pods, "team-a", "p1", "../secrets", NULL },
	{ &kc_res_pods, "../kube-system", "p1", NULL, NULL },
	{ &kc_res_pods, "Team-A", "p1", NULL, NULL },
	{ &kc_res_pods, "", "p1", NULL, NULL },
	{ NULL, NULL, "p1", NULL, NULL },
};

START_TEST(test_paths)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(path_cases); i++) {
		struct kc_buf b;
		struct kc_status st;
		int r;

		kc_buf_init(&b, KC_URL_MAX);
		kc_status_clear(&st);
		r = kc__client_path(&b, path_cases[i].res, path_cases[i].ns,
		    path_cases[i].name, path_cases[i].sub, &st);
		if (path_cases[i].want == NULL) {
			ck_assert_msg(r == -EINVAL, "case %zu: %s", i, kc_err_name(r));
			ck_assert_str_ne(st.message, "");
		} else {
			ck_assert_msg(r == 0, "case %zu: %s", i, st.message);
			ck_assert_str_eq(kc_buf_str(&b), path_cases[i].want);
		}
		kc_buf_free(&b);
	}
}
END_TEST

START_TEST(test_path_too_long)
{
	struct kc_resource big = { .version = "v1", .resource = "things" };
	char name[KC_NAME_MAX + 1];
	struct kc_buf b;
	struct kc_status st;

	memset(name, 'a', KC_NAME_MAX);
	name[KC_NAME_MAX] = '\0';
	kc_buf_init(&b, 64);
	ck_assert_int_eq(kc__client_path(&b, &big, NULL, name, NULL, &st), -E2BIG);
	ck_assert_ptr_null(b.data);
	kc_buf_init(&b, KC_URL_MAX);
	ck_assert_int_eq(kc__client_path(&b, &big, NULL, name, NULL, &st), 0);
	kc_buf_free(&b);
}
END_TEST

static const struct {
	const char	*value, *want;
} query_cases[] = {
	{ "app=demo", "?k=app%3Ddemo" },
	{ "app in (a,b),tier!=web", "?k=app%20in%20%28a%2Cb%29%2Ctier%21%3Dweb" },
	{ "trainyard.dev/run=r1", "?k=trainyard.dev%2Frun%3Dr1" },
	{ "metadata.name=r1,status.phase!=Failed",
	  "?k=metadata.name%3Dr1%2Cstatus.phase%21%3DFailed" },
	{ "a&b=c#d?e+f%g", "?k=a%26b%3Dc%23d%3Fe%2Bf%25g" },
	{ "-._~AZaz09", "?k=-._~AZaz09" },
	{ "\xc3\xa9\n", "?k=%C3%A9%0A" },
	{ "", "?k=" },
};

START_TEST(test_query_escape)
{
	struct kc_buf b;

	for (size_t i = 0; i < KC_ARRAY_SIZE(query_cases); i++) {
		kc_buf_init(&b, 1024);
		ck_assert_int_eq(kc__query_add(&b, "k", query_cases[i].value), 0);
		ck_assert_str_eq(kc_buf_str(&b), query_cases[i].want);
		kc_buf_free(&b);
	}
	kc_buf_init(&b, 1024);
	ck_assert_int_eq(kc_buf_puts(&b, "/api/v1/pods"), 0);
	ck_assert_int_eq(kc__query_add(&b, "a", NULL), 0);
	ck_assert_int_eq(kc__query_add(&b, "limit", "5"), 0);
	ck_assert_int_eq(kc__query_add(&b, "watch", "true"), 0);
	ck_assert_str_eq(kc_buf_str(&b), "/api/v1/pods?limit=5&watch=true");
	kc_buf_free(&b);
	/* The public form, for requests made outside the client. */
	kc_buf_init(&b, 1024);
	ck_assert_int_eq(kc_client_query_add(&b, "command", "sh -c 'exit 3'"), 0);
	ck_assert_int_eq(kc_client_query_add(&b, "command", "a&b=c"), 0);
	ck_assert_str_eq(kc_buf_str(&b), "?command=sh%20-c%20%27exit%203%27&command=a%26b%3Dc");
	kc_buf_free(&b);
	kc_buf_init(&b, 8);
	ck_assert_int_eq(kc__query_add(&b, "k", "0123456789"), -E2BIG);
	ck_assert_ptr_null(b.data);
}
END_TEST

START_TEST(test_names)
{
	static const char *const good_names[] = {
		"p1", "runs.trainyard.dev", "system:controller:x", "a_b~c", "A1",
	};
	static const char *const bad_names[] = {
		"", ".", "..", "a/b", "/", "a%20b", "a b", "a?b", "a#b", "a\nb",
		"caf\xc3\xa9", "a\\b",
	};
	static const char *const good_ns[] = { "a", "team-a", "kube-system", "0x1" };
	static const char *const bad_ns[] = {
		"", "-a", "a-", "Team", "a.b", "a_b", "a/b", "..",
	};
	char long_name[KC_NAME_MAX + 2];
	char long_ns[KC_NAMESPACE_MAX + 2];
	struct kc_status st;

	for (size_t i = 0; i < KC_ARRAY_SIZE(good_names); i++)
		ck_assert_msg(kc_client_check_name(good_names[i], &st) == 0, "%s: %s",
		    good_names[i], st.message);
	for (size_t i = 0; i < KC_ARRAY_SIZE(bad_names); i++)
		ck_assert_msg(kc_client_check_name(bad_names[i], &st) == -EINVAL,
		    "accepted name \"%s\"", bad_names[i]);
	ck_assert_int_eq(kc_client_check_name(NULL, NULL), -EINVAL);
	for (size_t i = 0; i < KC_ARRAY_SIZE(good_ns); i++)
		ck_assert_int_eq(kc_client_check_namespace(good_ns[i], &st), 0);
	for (size_t i = 0; i < KC_ARRAY_SIZE(bad_ns); i++)
		ck_assert_msg(kc_client_check_namespace(bad_ns[i], &st) == -EINVAL,
		    "accepted namespace \"%s\"", bad_ns[i]);

	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[KC_NAME_MAX] = '\0';
	ck_assert_int_eq(kc_client_check_name(long_name, &st), 0);
	long_name[KC_NAME_MAX] = 'a';
	long_name[KC_NAME_MAX + 1] = '\0';
	ck_assert_int_eq(kc_client_check_name(long_name, &st), -EINVAL);
	ck_assert_ptr_nonnull(strstr(st.message, "longer"));
	memset(long_ns, 'a', sizeof(long_ns) - 1);
	long_ns[KC_NAMESPACE_MAX] = '\0';
	ck_assert_int_eq(kc_client_check_namespace(long_ns, &st), 0);
	long_ns[KC_NAMESPACE_MAX] = 'a';
	long_ns[KC_NAMESPACE_MAX + 1] = '\0';
	ck_assert_int_eq(kc_client_check_namespace(long_ns, &st), -EINVAL);
}
END_TEST

START_TEST(test_builtin_descriptors)
{
	static const struct {
		const struct kc_resource *res;
		const char *group, *resource;
		bool namespaced;
	} want[] = {
		{ &kc_res_pods, "", "pods", true },
		{ &kc_res_services, "", "services", true },
		{ &kc_res_endpoints, "", "endpoints", true },
		{ &kc_res_namespaces, "", "namespaces", false },
		{ &kc_res_nodes, "", "nodes", false },
		{ &kc_res_configmaps, "", "configmaps", true },
		{ &kc_res_secrets, "", "secrets", true },
		{ &kc_res_serviceaccounts, "", "serviceaccounts", true },
		{ &kc_res_events, "", "events", true },
		{ &kc_res_events_v1, "events.k8s.io", "events", true },
		{ &kc_res_networkpolicies, "networking.k8s.io", "networkpolicies", true },
		{ &kc_res_leases, "coordination.k8s.io", "leases", true },
		{ &kc_res_customresourcedefinitions, "apiextensions.k8s.io",
		  "customresourcedefinitions", false },
		{ &kc_res_roles, "rbac.authorization.k8s.io", "roles", true },
		{ &kc_res_rolebindings, "rbac.authorization.k8s.io", "rolebindings", true },
		{ &kc_res_clusterroles, "rbac.authorization.k8s.io", "clusterroles", false },
		{ &kc_res_clusterrolebindings, "rbac.authorization.k8s.io",
		  "clusterrolebindings", false },
		{ &kc_res_priorityclasses, "scheduling.k8s.io", "priorityclasses", false },
		{ &kc_res_resourcequotas, "", "resourcequotas", true },
		{ &kc_res_limitranges, "", "limitranges", true },
		{ &kc_res_persistentvolumeclaims, "", "persistentvolumeclaims", true },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(want); i++) {
		ck_assert_str_eq(want[i].res->group, want[i].group);
		ck_assert_str_eq(want[i].res->version, "v1");
		ck_assert_str_eq(want[i].res->resource, want[i].resource);
		ck_assert_ptr_nonnull(want[i].res->kind);
		ck_assert_int_eq(want[i].res->namespaced, want[i].namespaced);
	}
}
END_TEST

/* ---- the client ----------------------------------------------------------- */

START_TEST(test_new)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = (struct kc_client *)&ft, *keep = cl;
	struct kc_rest_config rc = { .server = "https://x.invalid" };
	struct kc_status st;
	int r;

	ck_assert_int_eq(kc_client_new(NULL, &cl, &st), -EINVAL);
	ck_assert_int_eq(kc_client_new(&(struct kc_client_opts){
		.ops = &fake_transport_ops }, &cl, &st), -EINVAL);
	ck_assert_ptr_eq(cl, keep);

	ft_fail_open(ft, KC_ECONFIG);
	r = kc_client_new(&(struct kc_client_opts){ .rc = &rc,
	    .ops = &fake_transport_ops }, &cl, &st);
	ck_assert_int_eq(r, KC_ECONFIG);
	ck_assert_ptr_eq(cl, keep);
	ft_fail_open(ft, 0);

	r = kc_client_new(&(struct kc_client_opts){
		.rc = &rc,
		.ops = &fake_transport_ops,
		.qps = 20,
		.burst = 40,
		.max_retries = 3,
		.timeout_ms = 5000,
		.user_agent = "test/1",
	}, &cl, &st);
	ck_ok(r, st);
	ck_assert_ptr_eq(ft_opts(ft)->rc, &rc);
	ck_assert(ft_opts(ft)->qps == 20);
	ck_assert_uint_eq(ft_opts(ft)->burst, 40);
	ck_assert_uint_eq(ft_opts(ft)->max_retries, 3);
	ck_assert_uint_eq(ft_opts(ft)->timeout_ms, 5000);
	ck_assert_uint_eq(ft_opts(ft)->max_response, KC_RESPONSE_MAX_DEFAULT);
	ck_assert_str_eq(ft_opts(ft)->user_agent, "test/1");
	ck_assert_str_eq(kc_client_namespace(cl), "default");
	cl = kc_client_free(cl);
	ck_assert_ptr_null(cl);
	ck_assert_uint_eq(ft_opens(ft), 1);
	ck_assert_uint_eq(ft_closes(ft), 1);
	ck_assert_ptr_null(kc_client_free(NULL));

	cl = new_client();
	ck_assert_str_eq(kc_client_namespace(cl), "team-a");
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_new_oom)
{
	struct fake_transport *ft = ft_new();
	struct kc_status st;
	int r;

	for (size_t budget = 0;; budget++) {
		struct kc_client *cl = NULL;

		fail_alloc_after(budget);
		r = kc_client_new(&(struct kc_client_opts){ .rc = &test_rc,
		    .ops = &fake_transport_ops }, &cl, &st);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert_uint_ge(budget, 3);
			kc_client_free(cl);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(cl);
	}
	ck_assert_uint_eq(ft_opens(ft), ft_closes(ft));
	ft_free(ft);
}
END_TEST

START_TEST(test_get)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct json_object *pod = NULL;
	struct kc_status st;
	char *body = tu_fixture("client/pod-p1.json", NULL);
	int r;

	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/api/v1/namespaces/team-a/pods/p1", .status = 200,
	    .resp_body = body });
	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/api/v1/namespaces/team-a/pods/p1/status?resourceVersion=0",
	    .status = 200, .resp_body = "{\"kind\":\"Pod\",\"status\":{}}" });
	r = kc_client_get(cl, &(struct kc_get_opts){ .res = &kc_res_pods,
	    .ns = "team-a", .name = "p1" }, &pod, &st);
	ck_ok(r, st);
	ck_assert_str_eq(kc_json_str(pod, "metadata", "resourceVersion"), "812");
	ck_assert_uint_eq(json_object_array_length(kc_json_arr_of(kc_json_get(pod,
	    "spec"), "containers")), 1);
	json_object_put(pod);
	pod = NULL;
	r = kc_client_get(cl, &(struct kc_get_opts){ .res = &kc_res_pods,
	    .ns = "team-a", .name = "p1", .subresource = "status",
	    .resource_version = "0" }, &pod, &st);
	ck_ok(r, st);
	ck_assert_str_eq(kc_json_str(pod, "kind"), "Pod");
	json_object_put(pod);

	ck_assert_uint_eq(ft_nrequests(ft), 2);
	ck_assert(ft_request(ft, 0)->idempotent);
	ck_assert_ptr_null(ft_request(ft, 0)->content_type);
	ck_assert_uint_eq(ft_request(ft, 0)->body_len, 0);
	ck_assert(!ft_request(ft, 0)->stream);

	/* Missing name or namespace: nothing is sent. */
	pod = NULL;
	ck_assert_int_eq(kc_client_get(cl, &(struct kc_get_opts){ .res = &kc_res_pods,
	    .ns = "team-a" }, &pod, &st), -EINVAL);
	ck_assert_int_eq(kc_client_get(cl, &(struct kc_get_opts){ .res = &kc_res_pods,
	    .name = "p1" }, &pod, &st), -EINVAL);
	ck_assert_ptr_null(pod);
	ck_assert_uint_eq(ft_nrequests(ft), 2);
	ft_done(ft);
	kc_free(body);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_get_oom)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct kc_status st;
	int r;

	for (size_t budget = 0;; budget++) {
		struct json_object *o = NULL;

		if (ft_pending(ft) == 0)
			ft_expect(ft, &(struct ft_exchange){ .method = "GET",
			    .path = "/api/v1/nodes/n1", .status = 200,
			    .resp_body = "{\"kind\":\"Node\"}" });
		fail_alloc_after(budget);
		r = kc_client_get(cl, &(struct kc_get_opts){ .res = &kc_res_nodes,
		    .name = "n1" }, &o, &st);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert_str_eq(kc_json_str(o, "kind"), "Node");
			json_object_put(o);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(o);
	}
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_list)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct json_object *list = NULL;
	struct kc_status st;
	int r;

	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/api/v1/namespaces/team-a/pods?fieldSelector="
	    "status.phase%21%3DFailed&labelSelector=app%20in%20%28a%2Cb%29&limit=5"
	    "&resourceVersion=10&resourceVersionMatch=NotOlderThan&timeoutSeconds=30",
	    .status = 200, .resp_body = "{\"kind\":\"PodList\",\"items\":[]}" });
	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/api/v1/pods?continue=abc%3D%3D&limit=5",
	    .status = 200, .resp_body = "{\"kind\":\"PodList\",\"items\":[]}" });
	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/apis/trainyard.dev/v1beta1/runs?resourceVersion=7"
	    "&resourceVersionMatch=Exact",
	    .status = 200, .resp_body = "{\"kind\":\"RunList\",\"items\":[{}]}" });
	r = kc_client_list(cl, &(struct kc_list_opts){
		.res = &kc_res_pods,
		.ns = "team-a",
		.label_selector = "app in (a,b)",
		.field_selector = "status.phase!=Failed",
		.limit = 5,
		.resource_version = "10",
		.rv_match = KC_RV_MATCH_NOT_OLDER_THAN,
		.timeout_s = 30,
	}, &list, &st);
	ck_ok(r, st);
	ck_assert_str_eq(kc_json_str(list, "kind"), "PodList");
	json_object_put(list);
	list = NULL;
	r = kc_client_list(cl, &(struct kc_list_opts){ .res = &kc_res_pods,
	    .limit = 5, .cont = "abc==" }, &list, &st);
	ck_ok(r, st);
	json_object_put(list);
	list = NULL;
	r = kc_client_list(cl, &(struct kc_list_opts){ .res = &res_runs,
	    .resource_version = "7", .rv_match = KC_RV_MATCH_EXACT }, &list, &st);
	ck_ok(r, st);
	ck_assert_uint_eq(json_object_array_length(kc_json_arr_of(list, "items")), 1);
	json_object_put(list);
	ck_assert(ft_request(ft, 2)->idempotent);

	/* resourceVersionMatch without a resourceVersion is refused here. */
	list = NULL;
	ck_assert_int_eq(kc_client_list(cl, &(struct kc_list_opts){ .res = &res_runs,
	    .rv_match = KC_RV_MATCH_EXACT }, &list, &st), -EINVAL);
	ck_assert_ptr_null(list);
	ck_assert_uint_eq(ft_nrequests(ft), 3);
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_list_all)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct json_object *list = NULL, *items;
	struct kc_status st;
	static const char *const names[] = { "p1", "p2", "p3", "p4", "p5" };
	int r;

	ft_load_script(ft, "client/list-all.script");
	r = kc_client_list_all(cl, &(struct kc_list_opts){
		.res = &kc_res_pods,
		.ns = "team-a",
		.label_selector = "trainyard.dev/run=r1",
		.limit = 2,
		.resource_version = "0",
	}, &list, &st);
	ck_ok(r, st);
	ft_done(ft);
	items = kc_json_arr_of(list, "items");
	ck_assert_uint_eq(json_object_array_length(items), 5);
	for (size_t i = 0; i < 5; i++)
		ck_assert_str_eq(kc_json_str(json_object_array_get_idx(items, i),
		    "metadata", "name"), names[i]);
	ck_assert_str_eq(kc_json_str(list, "metadata", "resourceVersion"), "900");
	ck_assert_ptr_null(kc_json_get(list, "metadata", "continue"));
	ck_assert_ptr_null(kc_json_get(list, "metadata", "remainingItemCount"));
	json_object_put(list);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_list_all_bounds)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct json_object *list = NULL;
	struct kc_status st;
	int r;

	/* Three items allowed, the second page would make four. */
	ft_load_script(ft, "client/list-all.script");
	r = kc_client_list_all(cl, &(struct kc_list_opts){
		.res = &kc_res_pods,
		.ns = "team-a",
		.label_selector = "trainyard.dev/run=r1",
		.limit = 2,
		.resource_version = "0",
		.max_items = 3,
	}, &list, &st);
	ck_assert_int_eq(r, -E2BIG);
	ck_assert_ptr_null(list);
	ck_assert_uint_eq(ft_nrequests(ft), 2);
	kc_client_free(cl);
	ft_free(ft);

	/* Expired continue token mid-way: relist from scratch. */
	ft = ft_new();
	cl = new_client();
	ft_load_script(ft, "client/list-all-expired.script");
	r = kc_client_list_all(cl, &(struct kc_list_opts){ .res = &kc_res_pods,
	    .ns = "team-a", .limit = 2 }, &list, &st);
	ck_assert_int_eq(r, KC_EEXPIRED);
	ck_assert_int_eq(st.http_code, 410);
	ck_assert_str_eq(st.reason, "Expired");
	ck_assert_ptr_null(list);
	ft_done(ft);

	/* A page without items; a continue token given by the caller. */
	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/api/v1/nodes?limit=500", .status = 200,
	    .resp_body = "{\"kind\":\"NodeList\"}" });
	ck_assert_int_eq(kc_client_list_all(cl, &(struct kc_list_opts){
	    .res = &kc_res_nodes }, &list, &st), KC_EPARSE);
	ck_assert_int_eq(kc_client_list_all(cl, &(struct kc_list_opts){
	    .res = &kc_res_nodes, .cont = "x" }, &list, &st), -EINVAL);
	ck_assert_ptr_null(list);

	/* "items": null is an empty list. */
	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/api/v1/nodes?limit=500", .status = 200,
	    .resp_body = "{\"kind\":\"NodeList\",\"items\":null,\"metadata\":{}}" });
	r = kc_client_list_all(cl, &(struct kc_list_opts){ .res = &kc_res_nodes },
	    &list, &st);
	ck_ok(r, st);
	ck_assert_uint_eq(json_object_array_length(kc_json_arr_of(list, "items")), 0);
	json_object_put(list);
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_create)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct json_object *pod = fixture_json("client/pod-p1.json");
	struct json_object *out = NULL, *sent;
	struct kc_status st;
	int r;

	ft_expect(ft, &(struct ft_exchange){ .method = "POST",
	    .path = "/api/v1/namespaces/team-a/pods?dryRun=All&fieldManager=trainyard"
	    "&fieldValidation=Strict", .content_type = "application/json",
	    .status = 201, .resp_body = FT_ECHO });
	r = kc_client_create(cl, &(struct kc_create_opts){
		.res = &kc_res_pods,
		.dry_run = true,
		.field_manager = "trainyard",
		.field_validation = KC_FIELD_VALIDATION_STRICT,
	}, pod, &out, &st);
	ck_ok(r, st);
	sent = sent_body(ft, 0);
	ck_assert(kc_json_equal(sent, pod));
	ck_assert(kc_json_equal(out, pod));
	ck_assert(!ft_request(ft, 0)->idempotent);
	json_object_put(sent);
	json_object_put(out);

	/* A subresource POST (eviction) names its parent; ret may be NULL. */
	ft_expect(ft, &(struct ft_exchange){ .method = "POST",
	    .path = "/api/v1/namespaces/team-a/pods/p1/eviction?fieldValidation=Ignore",
	    .content_type = "application/json",
	    .body = "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\"}",
	    .status = 201, .resp_body = "{\"kind\":\"Status\"}" });
	out = parse("{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\"}");
	r = kc_client_create(cl, &(struct kc_create_opts){ .res = &kc_res_pods,
	    .ns = "team-a", .name = "p1", .subresource = "eviction",
	    .field_validation = KC_FIELD_VALIDATION_IGNORE }, out, NULL, &st);
	ck_ok(r, st);
	json_object_put(out);

	/* Refused before sending. */
	out = NULL;
	ck_assert_int_eq(kc_client_create(cl, &(struct kc_create_opts){
	    .res = &kc_res_pods, .ns = "team-b" }, pod, &out, &st), -EINVAL);
	ck_assert_ptr_nonnull(strstr(st.message, "differs"));
	ck_assert_int_eq(kc_client_create(cl, &(struct kc_create_opts){
	    .res = &kc_res_nodes, .ns = "team-a" }, pod, &out, &st), -EINVAL);
	ck_assert_int_eq(kc_client_create(cl, &(struct kc_create_opts){
	    .res = &kc_res_pods, .name = "p1" }, pod, &out, &st), -EINVAL);
	ck_assert_int_eq(kc_client_create(cl, &(struct kc_create_opts){
	    .res = &kc_res_pods, .field_manager = "" }, pod, &out, &st), -EINVAL);
	sent = parse("{\"kind\":\"Pod\",\"metadata\":{\"name\":\"x\"}}");
	ck_assert_int_eq(kc_client_create(cl, &(struct kc_create_opts){
	    .res = &kc_res_pods }, sent, &out, &st), -EINVAL);
	json_object_put(sent);
	sent = parse("[1]");
	ck_assert_int_eq(kc_client_create(cl, &(struct kc_create_opts){
	    .res = &kc_res_pods, .ns = "a" }, sent, &out, &st), -EINVAL);
	json_object_put(sent);
	ck_assert_ptr_null(out);
	ck_assert_uint_eq(ft_nrequests(ft), 2);

	/* A cluster-scoped object goes to the cluster-wide collection. */
	ft_expect(ft, &(struct ft_exchange){ .method = "POST",
	    .path = "/api/v1/namespaces", .status = 201, .resp_body = FT_ECHO });
	sent = parse("{\"kind\":\"Namespace\",\"metadata\":{\"name\":\"team-c\"}}");
	r = kc_client_create(cl, &(struct kc_create_opts){ .res = &kc_res_namespaces },
	    sent, &out, &st);
	ck_ok(r, st);
	ck_assert_str_eq(kc_json_str(out, "metadata", "name"), "team-c");
	json_object_put(sent);
	json_object_put(out);
	json_object_put(pod);
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_update)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct json_object *pod = fixture_json("client/pod-p1.json");
	struct json_object *out = NULL, *sent;
	struct kc_status st;
	int r;

	ft_expect(ft, &(struct ft_exchange){ .method = "PUT",
	    .path = "/api/v1/namespaces/team-a/pods/p1?fieldManager=trainyard",
	    .content_type = "application/json", .status = 200, .resp_body = FT_ECHO });
	ft_expect(ft, &(struct ft_exchange){ .method = "PUT",
	    .path = "/api/v1/namespaces/team-a/pods/p1/status?fieldValidation=Warn",
	    .content_type = "application/json", .status = 200, .resp_body = FT_ECHO });
	r = kc_client_update(cl, &(struct kc_update_opts){ .res = &kc_res_pods,
	    .field_manager = "trainyard" }, pod, &out, &st);
	ck_ok(r, st);
	sent = sent_body(ft, 0);
	ck_assert(kc_json_equal(sent, pod));
	ck_assert_str_eq(kc_json_str(sent, "metadata", "resourceVersion"), "812");
	json_object_put(sent);
	json_object_put(out);
	out = NULL;
	r = kc_client_update(cl, &(struct kc_update_opts){ .res = &kc_res_pods,
	    .ns = "team-a", .name = "p1", .subresource = "status",
	    .field_validation = KC_FIELD_VALIDATION_WARN }, pod, &out, &st);
	ck_ok(r, st);
	ck_assert_str_eq(kc_json_str(out, "status", "phase"), "Running");
	json_object_put(out);
	ck_assert(!ft_request(ft, 1)->idempotent);

	out = NULL;
	ck_assert_int_eq(kc_client_update(cl, &(struct kc_update_opts){
	    .res = &kc_res_pods, .name = "p2" }, pod, &out, &st), -EINVAL);
	sent = parse("{\"kind\":\"Pod\",\"metadata\":{\"namespace\":\"a\"}}");
	ck_assert_int_eq(kc_client_update(cl, &(struct kc_update_opts){
	    .res = &kc_res_pods }, sent, &out, &st), -EINVAL);
	json_object_put(sent);
	ck_assert_ptr_null(out);
	json_object_put(pod);
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_patch)
{
	static const struct {
		enum kc_patch_type type;
		const char *ctype, *body;
	} types[] = {
		{ KC_PATCH_MERGE, "application/merge-patch+json",
		  "{\"metadata\":{\"labels\":{\"team\":null}}}" },
		{ KC_PATCH_JSON, "application/json-patch+json",
		  "[{\"op\":\"replace\",\"path\":\"/spec/nodes\",\"value\":4}]" },
		{ KC_PATCH_STRATEGIC, "application/strategic-merge-patch+json",
		  "{\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"b:2\"}]}}" },
	};
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct json_object *out, *p;
	struct kc_status st;
	int r;

	for (size_t i = 0; i < KC_ARRAY_SIZE(types); i++) {
		ft_expect(ft, &(struct ft_exchange){ .method = "PATCH",
		    .path = "/api/v1/namespaces/team-a/pods/p1?fieldManager=m",
		    .content_type = types[i].ctype, .body = types[i].body,
		    .status = 200, .resp_body = "{\"kind\":\"Pod\"}" });
		p = parse(types[i].body);
		out = NULL;
		r = kc_client_patch(cl, &(struct kc_patch_opts){ .res = &kc_res_pods,
		    .ns = "team-a", .name = "p1", .type = types[i].type,
		    .field_manager = "m" }, p, &out, &st);
		ck_ok(r, st);
		ck_assert_str_eq(kc_json_str(out, "kind"), "Pod");
		json_object_put(out);
		json_object_put(p);
	}

	/* Server-side apply: fieldManager required, force and dryRun. */
	p = parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
	    "\"metadata\":{\"name\":\"c1\",\"namespace\":\"team-a\"},"
	    "\"data\":{\"k\":\"v\"}}");
	out = NULL;
	ck_assert_int_eq(kc_client_patch(cl, &(struct kc_patch_opts){
	    .res = &kc_res_configmaps, .ns = "team-a", .name = "c1",
	    .type = KC_PATCH_APPLY }, p, &out, &st), -EINVAL);
	ck_assert_ptr_nonnull(strstr(st.message, "fieldManager"));
	ck_assert_int_eq(kc_client_apply(cl, &(struct kc_apply_opts){
	    .res = &kc_res_configmaps, .obj = p }, &out, &st), -EINVAL);
	ck_assert_ptr_null(out);
	ck_assert_uint_eq(ft_nrequests(ft), 3);

	ft_expect(ft, &(struct ft_exchange){ .method = "PATCH",
	    .path = "/api/v1/namespaces/team-a/configmaps/c1?dryRun=All"
	    "&fieldManager=trainyard&fieldValidation=Strict&force=true",
	    .content_type = "application/apply-patch+yaml", .status = 201,
	    .resp_body = FT_ECHO });
	r = kc_client_apply(cl, &(struct kc_apply_opts){ .res = &kc_res_configmaps,
	    .obj = p, .field_manager = "trainyard", .force = true, .dry_run = true,
	    .field_validation = KC_FIELD_VALIDATION_STRICT }, &out, &st);
	ck_ok(r, st);
	ck_assert(kc_json_equal(out, p));
	json_object_put(out);
	out = NULL;

	/* Misuse is refused without a request. */
	ck_assert_int_eq(kc_client_patch(cl, &(struct kc_patch_opts){
	    .res = &kc_res_configmaps, .ns = "team-a", .name = "c1" }, p, &out, &st),
	    -EINVAL);
	ck_assert_int_eq(kc_client_patch(cl, &(struct kc_patch_opts){
	    .res = &kc_res_configmaps, .ns = "team-a", .name = "c1",
	    .type = KC_PATCH_MERGE, .force = true }, p, &out, &st), -EINVAL);
	ck_assert_int_eq(kc_client_patch(cl, &(struct kc_patch_opts){
	    .res = &kc_res_configmaps, .ns = "team-a", .name = "c1",
	    .type = KC_PATCH_JSON }, p, &out, &st), -EINVAL);
	ck_assert_int_eq(kc_client_patch(cl, &(struct kc_patch_opts){
	    .res = &kc_res_configmaps, .ns = "team-a",
	    .type = KC_PATCH_MERGE }, p, &out, &st), -EINVAL);
	ck_assert_int_eq(kc_client_patch(cl, &(struct kc_patch_opts){
	    .res = &kc_res_configmaps, .ns = "team-a", .name = "c1",
	    .type = KC_PATCH_MERGE }, NULL, &out, &st), -EINVAL);
	ck_assert_ptr_null(out);
	json_object_put(p);
	ck_assert_uint_eq(ft_nrequests(ft), 4);
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_delete)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct json_object *out = NULL;
	struct kc_status st;
	char *status = tu_fixture("client/delete-success-status.json", NULL);
	int r;

	ft_expect(ft, &(struct ft_exchange){ .method = "DELETE",
	    .path = "/apis/trainyard.dev/v1beta1/namespaces/team-a/runs/r1",
	    .content_type = "application/json",
	    .body = "{\"propagationPolicy\":\"Foreground\",\"gracePeriodSeconds\":0,"
	    "\"preconditions\":{\"uid\":\"u1\",\"resourceVersion\":\"9\"},"
	    "\"dryRun\":[\"All\"]}",
	    .status = 200, .resp_body = status });
	r = kc_client_delete(cl, &(struct kc_delete_opts){
		.res = &res_runs,
		.ns = "team-a",
		.name = "r1",
		.propagation = KC_PROPAGATION_FOREGROUND,
		.has_grace_period = true,
		.grace_period_s = 0,
		.precondition_uid = "u1",
		.precondition_rv = "9",
		.dry_run = true,
	}, &out, &st);
	ck_ok(r, st);
	ck_assert_str_eq(kc_json_str(out, "status"), "Success");
	json_object_put(out);

	/* Unset grace period and policy: an empty DeleteOptions. */
	ft_expect(ft, &(struct ft_exchange){ .method = "DELETE",
	    .path = "/api/v1/nodes/n1", .body = "{}", .status = 200,
	    .resp_body = "{\"kind\":\"Node\"}" });
	ck_ok(kc_client_delete(cl, &(struct kc_delete_opts){ .res = &kc_res_nodes,
	    .name = "n1" }, NULL, &st), st);
	ft_expect(ft, &(struct ft_exchange){ .method = "DELETE",
	    .path = "/api/v1/namespaces/team-a/pods/p1",
	    .body = "{\"propagationPolicy\":\"Orphan\",\"gracePeriodSeconds\":30}",
	    .status = 202, .resp_body = "{\"kind\":\"Pod\"}" });
	ck_ok(kc_client_delete(cl, &(struct kc_delete_opts){ .res = &kc_res_pods,
	    .ns = "team-a", .name = "p1", .propagation = KC_PROPAGATION_ORPHAN,
	    .has_grace_period = true, .grace_period_s = 30 }, NULL, &st), st);

	/* Absent: KC_ENOTFOUND. */
	ft_expect(ft, &(struct ft_exchange){ .method = "DELETE",
	    .path = "/api/v1/namespaces/team-a/pods/p9", .status = 404,
	    .resp_body = "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":"
	    "\"pods \\\"p9\\\" not found\",\"reason\":\"NotFound\",\"code\":404}" });
	ck_assert_int_eq(kc_client_delete(cl, &(struct kc_delete_opts){
	    .res = &kc_res_pods, .ns = "team-a", .name = "p9",
	    .propagation = KC_PROPAGATION_BACKGROUND }, &out, &st), KC_ENOTFOUND);
	ck_assert_str_eq(st.message, "pods \"p9\" not found");
	ck_assert_str_eq(ft_request(ft, 3)->body, "{\"propagationPolicy\":\"Background\"}");

	/* Refused. */
	ck_assert_int_eq(kc_client_delete(cl, &(struct kc_delete_opts){
	    .res = &kc_res_pods, .ns = "team-a", .name = "p1",
	    .has_grace_period = true, .grace_period_s = -1 }, &out, &st), -EINVAL);
	ck_assert_int_eq(kc_client_delete(cl, &(struct kc_delete_opts){
	    .res = &kc_res_pods, .ns = "team-a" }, &out, &st), -EINVAL);
	ck_assert_int_eq(kc_client_delete(cl, &(struct kc_delete_opts){
	    .res = &kc_res_pods, .ns = "team-a", .name = "p1",
	    .propagation = (enum kc_propagation)42 }, &out, &st), -EINVAL);
	ck_assert_uint_eq(ft_nrequests(ft), 4);
	ft_done(ft);
	kc_free(status);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_delete_collection)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct json_object *out = NULL;
	struct kc_status st;
	int r;

	ft_expect(ft, &(struct ft_exchange){ .method = "DELETE",
	    .path = "/api/v1/namespaces/team-a/pods?fieldSelector=status.phase%3DFailed"
	    "&labelSelector=trainyard.dev%2Frun%3Dr1",
	    .content_type = "application/json",
	    .body = "{\"propagationPolicy\":\"Background\",\"gracePeriodSeconds\":5}",
	    .status = 200, .resp_body = "{\"kind\":\"PodList\",\"items\":[]}" });
	r = kc_client_delete_collection(cl, &(struct kc_delete_collection_opts){
		.res = &kc_res_pods,
		.ns = "team-a",
		.label_selector = "trainyard.dev/run=r1",
		.field_selector = "status.phase=Failed",
		.propagation = KC_PROPAGATION_BACKGROUND,
		.has_grace_period = true,
		.grace_period_s = 5,
	}, &out, &st);
	ck_ok(r, st);
	ck_assert_str_eq(kc_json_str(out, "kind"), "PodList");
	json_object_put(out);
	out = NULL;
	ck_assert_int_eq(kc_client_delete_collection(cl,
	    &(struct kc_delete_collection_opts){ .res = &kc_res_pods }, &out, &st),
	    -EINVAL);
	ck_assert_ptr_null(out);
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_script_lifecycle)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct json_object *run = fixture_json("client/run-r1.json");
	struct json_object *out = NULL, *p;
	struct kc_status st;
	int r;

	ft_load_script(ft, "client/run-lifecycle.script");
	r = kc_client_create(cl, &(struct kc_create_opts){ .res = &res_runs,
	    .field_manager = "trainyard",
	    .field_validation = KC_FIELD_VALIDATION_STRICT }, run, &out, &st);
	ck_assert_int_eq(r, KC_EEXISTS);
	ck_assert_int_eq(st.http_code, 409);
	ck_assert_str_eq(st.reason, "AlreadyExists");
	ck_assert_ptr_null(out);

	r = kc_client_get(cl, &(struct kc_get_opts){ .res = &res_runs, .ns = "team-a",
	    .name = "r1" }, &out, &st);
	ck_ok(r, st);
	ck_assert_int_eq(kc_json_int(out, 0, "spec", "nodes"), 8);
	json_object_put(out);
	out = NULL;

	r = kc_client_apply(cl, &(struct kc_apply_opts){ .res = &res_runs, .obj = run,
	    .field_manager = "trainyard", .force = true }, &out, &st);
	ck_ok(r, st);
	ck_assert(kc_json_equal(out, run));
	json_object_put(out);
	out = NULL;

	p = parse("{\"status\":{\"phase\":\"Running\"}}");
	r = kc_client_patch(cl, &(struct kc_patch_opts){ .res = &res_runs,
	    .ns = "team-a", .name = "r1", .subresource = "status",
	    .type = KC_PATCH_MERGE, .field_manager = "trainyard" }, p, &out, &st);
	ck_ok(r, st);
	ck_assert_str_eq(kc_json_str(out, "status", "phase"), "Running");
	json_object_put(out);
	json_object_put(p);
	out = NULL;

	r = kc_client_delete(cl, &(struct kc_delete_opts){ .res = &res_runs,
	    .ns = "team-a", .name = "r1", .propagation = KC_PROPAGATION_FOREGROUND,
	    .precondition_uid = "u-1" }, &out, &st);
	ck_ok(r, st);
	ck_assert_str_eq(kc_json_str(out, "details", "uid"),
	    "6f1d2c3e-0000-4000-8000-000000000001");
	json_object_put(out);
	out = NULL;

	r = kc_client_get(cl, &(struct kc_get_opts){ .res = &res_runs, .ns = "team-a",
	    .name = "r1" }, &out, &st);
	ck_assert_int_eq(r, KC_ENOTFOUND);
	ck_assert_str_eq(st.message, "404 page not found");
	ck_assert_str_eq(st.reason, "");
	ck_assert_ptr_null(out);

	ft_done(ft);
	json_object_put(run);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

/* ---- error mapping ------------------------------------------------------- */

START_TEST(test_errors)
{
	static const struct {
		const char *key;	/* in status-errors.json */
		int http, code;
		const char *reason;
		uint32_t retry_after_ms;	/* from the header */
		uint32_t want_retry_ms;
		unsigned ncauses;
	} cases[] = {
		{ "BadRequest_strict", 400, KC_EBADREQUEST, "BadRequest", 0, 0, 0 },
		{ "Unauthorized", 401, KC_EUNAUTHORIZED, "Unauthorized", 0, 0, 0 },
		{ "Forbidden", 403, KC_EFORBIDDEN, "Forbidden", 0, 0, 0 },
		{ "Forbidden_terminating_ns", 403, KC_EFORBIDDEN, "Forbidden", 0, 0, 1 },
		{ "NotFound_cr", 404, KC_ENOTFOUND, "NotFound", 0, 0, 0 },
		{ "NotFound_core", 404, KC_ENOTFOUND, "NotFound", 0, 0, 0 },
		{ "AlreadyExists", 409, KC_EEXISTS, "AlreadyExists", 0, 0, 0 },
		{ "Conflict", 409, KC_ECONFLICT, "Conflict", 0, 0, 0 },
		{ "Expired_continue", 410, KC_EEXPIRED, "Expired", 0, 0, 0 },
		{ "UnsupportedMediaType", 415, KC_EMEDIATYPE, "UnsupportedMediaType",
		  0, 0, 0 },
		{ "Invalid", 422, KC_EINVALID, "Invalid", 0, 0, 2 },
		{ "Invalid_listoptions", 422, KC_EINVALID, "Invalid", 0, 0, 1 },
		{ "Timeout_rv_too_large", 504, KC_ETIMEOUT, "Timeout", 0, 1000, 1 },
		{ "Timeout_rv_too_large", 504, KC_ETIMEOUT, "Timeout", 2500, 2500, 1 },
	};
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct json_object *all = fixture_json("client/status-errors.json");
	struct kc_status st;

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct json_object *o = (struct json_object *)&st;
		struct json_object *want = kc_json_get(all, cases[i].key);
		char *body = kc_json_dump(want, NULL);
		int r;

		ck_assert_ptr_nonnull(body);
		ft_expect(ft, &(struct ft_exchange){ .method = "GET",
		    .path = "/api/v1/namespaces/team-a/configmaps/c1",
		    .status = cases[i].http, .resp_body = body,
		    .retry_after_ms = cases[i].retry_after_ms });
		memset(&st, 0x55, sizeof(st));
		r = kc_client_get(cl, &(struct kc_get_opts){ .res = &kc_res_configmaps,
		    .ns = "team-a", .name = "c1" }, &o, &st);
		ck_assert_msg(r == cases[i].code, "%s: got %s", cases[i].key,
		    kc_err_name(r));
		ck_assert_ptr_eq(o, (struct json_object *)&st);
		ck_assert_int_eq(st.http_code, cases[i].http);
		ck_assert_str_eq(st.reason, cases[i].reason);
		ck_assert_str_eq(st.message, kc_json_str(want, "message"));
		ck_assert_uint_eq(st.retry_after_ms, cases[i].want_retry_ms);
		ck_assert_uint_eq(st.ncauses, cases[i].ncauses);
		kc_free(body);
	}

	/* The last case's cause has no field. */
	ck_assert_uint_eq(st.ncauses, 1);
	ck_assert_str_eq(st.causes[0].reason, "ResourceVersionTooLarge");
	ck_assert_str_eq(st.causes[0].field, "");
	ft_done(ft);
	json_object_put(all);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_error_causes)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct json_object *all = fixture_json("client/status-errors.json");
	struct json_object *out = NULL, *run = fixture_json("client/run-r1.json");
	char *body = kc_json_dump(kc_json_get(all, "Invalid"), NULL);
	struct kc_status st;
	int r;

	ft_expect(ft, &(struct ft_exchange){ .method = "PUT",
	    .path = "/apis/trainyard.dev/v1beta1/namespaces/team-a/runs/r1",
	    .status = 422, .resp_body = body });
	r = kc_client_update(cl, &(struct kc_update_opts){ .res = &res_runs }, run,
	    &out, &st);
	ck_assert_int_eq(r, KC_EINVALID);
	ck_assert_uint_eq(st.ncauses, 2);
	ck_assert_str_eq(st.causes[0].reason, "FieldValueRequired");
	ck_assert_str_eq(st.causes[0].field, "spec.image");
	ck_assert_str_eq(st.causes[0].message, "Required value");
	ck_assert_str_eq(st.causes[1].reason, "FieldValueInvalid");
	ck_assert_str_eq(st.causes[1].field, "spec.nodes");
	ck_assert_ptr_null(out);
	ft_done(ft);
	kc_free(body);
	json_object_put(all);
	json_object_put(run);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_errors_other)
{
	static const struct {
		int http;
		const char *body, *ctype;
		uint32_t retry_after_ms;
		int code;
		const char *message, *reason;
	} cases[] = {
		{ 429, "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"storage is "
		  "(re)initializing\",\"reason\":\"TooManyRequests\",\"details\":"
		  "{\"retryAfterSeconds\":1},\"code\":429}", NULL, 3000, KC_ETHROTTLED,
		  "storage is (re)initializing", "TooManyRequests" },
		{ 500, "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"Internal "
		  "error occurred: webhook failed\",\"reason\":\"InternalError\","
		  "\"code\":500}", NULL, 0, KC_EINTERNAL,
		  "Internal error occurred: webhook failed", "InternalError" },
		{ 503, "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"the "
		  "server is currently unable to handle the request\",\"reason\":"
		  "\"ServiceUnavailable\",\"code\":503}", NULL, 0, KC_EUNAVAILABLE,
		  "the server is currently unable to handle the request",
		  "ServiceUnavailable" },
		{ 504, "upstream request timeout", "text/plain", 0, KC_ETIMEOUT,
		  "upstream request timeout", "" },
		{ 404, "404 page not found\n", "text/plain", 0, KC_ENOTFOUND,
		  "404 page not found", "" },
		{ 502, "<html>\r\n<b>Bad   Gateway</b>\r\n</html>", "text/html", 0,
		  KC_EINTERNAL, "<html> <b>Bad Gateway</b> </html>", "" },
		{ 409, "{\"reason\":\"Conflict\",\"message\":\"m\"}", NULL, 0,
		  KC_ECONFLICT, "m", "Conflict" },
		{ 410, "{\"kind\":\"Status\",\"reason\":\"Gone\",\"message\":\"gone\"}",
		  NULL, 0, KC_EGONE, "gone", "Gone" },
		{ 418, "", NULL, 0, KC_EHTTP, "HTTP 418: unexpected HTTP status", "" },
		{ 403, "{\"kind\":\"Status\"}", NULL, 0, KC_EFORBIDDEN,
		  "{\"kind\":\"Status\"}", "" },
		{ 301, "moved", "text/plain", 0, KC_EHTTP, "moved", "" },
	};
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct kc_status st;

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct json_object *o = NULL;
		int r;

		ft_expect(ft, &(struct ft_exchange){ .method = "GET",
		    .path = "/version", .status = cases[i].http,
		    .resp_body = cases[i].body, .resp_content_type = cases[i].ctype,
		    .retry_after_ms = cases[i].retry_after_ms });
		r = kc_client_get_path(cl, "/version", &o, &st);
		ck_assert_msg(r == cases[i].code, "HTTP %d: got %s", cases[i].http,
		    kc_err_name(r));
		ck_assert_ptr_null(o);
		ck_assert_int_eq(st.http_code, cases[i].http);
		ck_assert_str_eq(st.message, cases[i].message);
		ck_assert_str_eq(st.reason, cases[i].reason);
		ck_assert_uint_eq(st.retry_after_ms, cases[i].retry_after_ms);
	}
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_malformed)
{
	static const char *const bodies[] = {
		"{\"kind\":\"Pod\"", "{\"kind\":\"Pod\"} trailing", "[1,2]", "\"str\"",
		"", "nul\0l",
	};
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct kc_status st;

	for (size_t i = 0; i < KC_ARRAY_SIZE(bodies); i++) {
		struct json_object *o = NULL;
		int r;

		ft_expect(ft, &(struct ft_exchange){ .method = "GET",
		    .path = "/api/v1/namespaces/a/pods/p1", .status = 200,
		    .resp_body = bodies[i], .resp_body_len = i == 5 ? 5 : 0 });
		r = kc_client_get(cl, &(struct kc_get_opts){ .res = &kc_res_pods,
		    .ns = "a", .name = "p1" }, &o, &st);
		ck_assert_msg(r == KC_EPARSE, "body %zu: %s", i, kc_err_name(r));
		ck_assert_ptr_null(o);
		ck_assert_int_eq(st.http_code, 200);
		ck_assert_str_ne(st.message, "");
	}
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_oversized)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = NULL;
	struct json_object *o = NULL;
	struct kc_status st;
	char big[4096];
	int r;

	memset(big, ' ', sizeof(big) - 3);
	big[0] = '{';
	big[sizeof(big) - 3] = '}';
	big[sizeof(big) - 2] = '\n';
	big[sizeof(big) - 1] = '\0';
	r = kc_client_new(&(struct kc_client_opts){ .rc = &test_rc,
	    .ops = &fake_transport_ops, .max_response = 1024 }, &cl, &st);
	ck_ok(r, st);
	ck_assert_uint_eq(ft_opts(ft)->max_response, 1024);

	/* Capped by the transport, as curl does... */
	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = "/api/v1/nodes/n1",
	    .status = 200, .resp_body = big });
	ck_assert_int_eq(kc_client_get(cl, &(struct kc_get_opts){ .res = &kc_res_nodes,
	    .name = "n1" }, &o, &st), -E2BIG);
	/* ...and by the client when a transport does not. */
	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = "/api/v1/nodes/n1",
	    .status = 200, .resp_body = big, .unbounded = true });
	ck_assert_int_eq(kc_client_get(cl, &(struct kc_get_opts){ .res = &kc_res_nodes,
	    .name = "n1" }, &o, &st), -E2BIG);
	ck_assert_ptr_nonnull(strstr(st.message, "larger than 1024"));
	ck_assert_ptr_null(o);
	/* Exactly at the cap is fine. */
	big[1023] = '\0';
	big[1022] = '}';
	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = "/api/v1/nodes/n1",
	    .status = 200, .resp_body = big });
	ck_ok(kc_client_get(cl, &(struct kc_get_opts){ .res = &kc_res_nodes,
	    .name = "n1" }, &o, &st), st);
	json_object_put(o);
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_invalid_names_send_nothing)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct json_object *o = NULL, *body = parse("{\"kind\":\"Pod\"}");
	struct kc_status st;

	ck_assert_int_eq(kc_client_get(cl, &(struct kc_get_opts){ .res = &kc_res_pods,
	    .ns = "a", .name = "../../secrets" }, &o, &st), -EINVAL);
	ck_assert_int_eq(kc_client_get(cl, &(struct kc_get_opts){ .res = &kc_res_pods,
	    .ns = "a/b", .name = "p1" }, &o, &st), -EINVAL);
	ck_assert_int_eq(kc_client_list(cl, &(struct kc_list_opts){ .res = &kc_res_pods,
	    .ns = "" }, &o, &st), -EINVAL);
	ck_assert_int_eq(kc_client_create(cl, &(struct kc_create_opts){
	    .res = &kc_res_pods, .ns = ".." }, body, &o, &st), -EINVAL);
	ck_assert_int_eq(kc_client_update(cl, &(struct kc_update_opts){
	    .res = &kc_res_pods, .ns = "a", .name = "p?1" }, body, &o, &st), -EINVAL);
	ck_assert_int_eq(kc_client_patch(cl, &(struct kc_patch_opts){
	    .res = &kc_res_pods, .ns = "a", .name = "p1", .subresource = "a/b",
	    .type = KC_PATCH_MERGE }, body, &o, &st), -EINVAL);
	ck_assert_int_eq(kc_client_delete(cl, &(struct kc_delete_opts){
	    .res = &kc_res_pods, .ns = "a", .name = "" }, &o, &st), -EINVAL);
	ck_assert_int_eq(kc_client_delete_collection(cl,
	    &(struct kc_delete_collection_opts){ .res = &kc_res_pods, .ns = "A" },
	    &o, &st), -EINVAL);
	ck_assert_int_eq(kc_client_get(cl, &(struct kc_get_opts){ .res = NULL,
	    .name = "x" }, &o, &st), -EINVAL);
	ck_assert_int_eq(kc_client_get_path(cl, "version", &o, &st), -EINVAL);
	ck_assert_int_eq(kc_client_get_path(cl, "/a b", &o, &st), -EINVAL);
	ck_assert_int_eq(kc_client_get_path(cl, NULL, &o, &st), -EINVAL);
	ck_assert_ptr_null(o);
	ck_assert_uint_eq(ft_nrequests(ft), 0);
	json_object_put(body);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_transport_failure)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct json_object *o = NULL;
	struct kc_status st;

	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = "/version",
	    .error = KC_ETRANSPORT });
	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = "/version",
	    .error = KC_ETLS });
	ck_assert_int_eq(kc_client_get_path(cl, "/version", &o, &st), KC_ETRANSPORT);
	ck_assert_str_eq(st.message, "fake: scripted failure");
	ck_assert_int_eq(kc_client_get_path(cl, "/version", &o, &st), KC_ETLS);
	ck_assert_ptr_null(o);

	/* Cancelled: nothing goes out until the cancel is reset. */
	kc_client_cancel(cl);
	ck_assert(ft_cancelled(ft));
	ck_assert_int_eq(kc_client_get_path(cl, "/version", &o, &st), -ECANCELED);
	kc_client_reset_cancel(cl);
	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = "/version",
	    .status = 200, .resp_body = "{\"major\":\"1\",\"minor\":\"32\"}" });
	ck_ok(kc_client_get_path(cl, "/version", &o, &st), st);
	ck_assert_str_eq(kc_json_str(o, "minor"), "32");
	json_object_put(o);
	ck_assert(ft_request(ft, 2)->idempotent);
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST


/* ---- through curl and the loopback test server ------------------------- */

static struct ts_server *
server_start(const char *script_fixture)
{
	struct ts_server *s = NULL;

	ck_assert_int_eq(ts_start(&(struct ts_opts){
	    .script = tu_fixture_path(script_fixture) }, &s), 0);
	return s;
}

/* A client on the real transport; 'rc' lives on the caller's stack. */
static struct kc_client *
server_client(struct ts_server *s, struct kc_rest_config *rc)
{
	struct kc_client *cl = NULL;
	struct kc_status st;
	int r;

	memset(rc, 0, sizeof(*rc));
	rc->server = (char *)(uintptr_t)ts_url(s);
	rc->ca_pem = (char *)(uintptr_t)ts_ca_pem(s);
	rc->ca_pem_len = strlen(rc->ca_pem);
	r = kc_client_new(&(struct kc_client_opts){ .rc = rc, .timeout_ms = 30000,
	    .user_agent = "trainyard-test/1" }, &cl, &st);
	ck_ok(r, st);
	return cl;
}

/*
 * The test server records the query as libwebsockets hands it over:
 * percent-decoded, parameters joined with ','. Compare in that form, so
 * the assertion holds for either spelling. (The exact bytes sent are
 * checked against the fake transport above.)
 */
static void
norm_path(const char *in, char *out, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; in[i] != '\0' && o + 1 < size; i++) {
		unsigned v;
		char hex[3];

		if (in[i] == '%' && in[i + 1] != '\0' && in[i + 2] != '\0') {
			hex[0] = in[i + 1];
			hex[1] = in[i + 2];
			hex[2] = '\0';
			v = (unsigned)strtoul(hex, NULL, 16);
			out[o++] = (char)v;
			i += 2;
		} else
			out[o++] = in[i] == '&' ? ',' : in[i];
	}
	out[o] = '\0';
}

static void
assert_path(const struct ts_request *q, const char *want)
{
	char a[512], b[512];

	norm_path(q->path, a, sizeof(a));
	norm_path(want, b, sizeof(b));
	ck_assert_msg(strcmp(a, b) == 0, "server saw %s, expected %s", q->path, want);
}

static void
assert_sent_json(const struct ts_request *q, const struct json_object *want)
{
	struct json_object *got = NULL;

	ck_assert_int_eq(kc_json_parse(q->body, q->body_len, &got, NULL), 0);
	ck_assert_msg(kc_json_equal(got, want), "%s %s sent %s", q->method, q->path,
	    q->body);
	json_object_put(got);
}

START_TEST(test_server_roundtrip)
{
	struct ts_server *s = server_start("client/server-roundtrip.script");
	struct kc_rest_config rc;
	struct kc_client *cl = server_client(s, &rc);
	struct json_object *run = fixture_json("client/run-r1.json");
	struct json_object *out = NULL, *del;
	const struct ts_request *q;
	struct kc_status st;
	int r;

	r = kc_client_create(cl, &(struct kc_create_opts){ .res = &res_runs,
	    .field_manager = "trainyard",
	    .field_validation = KC_FIELD_VALIDATION_STRICT }, run, &out, &st);
	ck_ok(r, st);
	ck_assert(kc_json_equal(out, run));
	json_object_put(out);
	out = NULL;
	r = kc_client_get(cl, &(struct kc_get_opts){ .res = &res_runs, .ns = "team-a",
	    .name = "r1" }, &out, &st);
	ck_ok(r, st);
	ck_assert_str_eq(kc_json_str(out, "spec", "image"), "trainer:1.0");
	json_object_put(out);
	out = NULL;
	r = kc_client_apply(cl, &(struct kc_apply_opts){ .res = &res_runs, .obj = run,
	    .field_manager = "trainyard" }, &out, &st);
	ck_ok(r, st);
	ck_assert(kc_json_equal(out, run));
	json_object_put(out);
	out = NULL;
	r = kc_client_delete(cl, &(struct kc_delete_opts){ .res = &res_runs,
	    .ns = "team-a", .name = "r1", .propagation = KC_PROPAGATION_BACKGROUND },
	    &out, &st);
	ck_ok(r, st);
	ck_assert_str_eq(kc_json_str(out, "status"), "Success");
	json_object_put(out);
	out = NULL;

	r = kc_client_get(cl, &(struct kc_get_opts){ .res = &res_runs, .ns = "team-a",
	    .name = "r9" }, &out, &st);
	ck_assert_int_eq(r, KC_ENOTFOUND);
	ck_assert_int_eq(st.http_code, 404);
	ck_assert_str_eq(st.message, "runs.trainyard.dev \"r9\" not found");
	r = kc_client_get(cl, &(struct kc_get_opts){ .res = &kc_res_configmaps,
	    .ns = "team-a", .name = "c1" }, &out, &st);
	ck_assert_int_eq(r, KC_ETHROTTLED);
	ck_assert_uint_eq(st.retry_after_ms, 2000);
	ck_assert_str_eq(st.reason, "TooManyRequests");
	r = kc_client_get_path(cl, "/nothing-here", &out, &st);
	ck_assert_int_eq(r, KC_ENOTFOUND);
	ck_assert_str_eq(st.message, "404 page not found");
	ck_assert_ptr_null(out);

	/* What went over the wire. */
	ck_assert_uint_eq(ts_nrequests(s), 7);
	q = ts_request(s, 0);
	ck_assert_str_eq(q->method, "POST");
	assert_path(q, "/apis/trainyard.dev/v1beta1/namespaces/team-a/runs"
	    "?fieldManager=trainyard&fieldValidation=Strict");
	ck_assert_str_eq(q->content_type, "application/json");
	ck_assert_str_eq(q->user_agent, "trainyard-test/1");
	assert_sent_json(q, run);
	q = ts_request(s, 2);
	ck_assert_str_eq(q->method, "PATCH");
	assert_path(q,
	    "/apis/trainyard.dev/v1beta1/namespaces/team-a/runs/r1?fieldManager=trainyard");
	ck_assert_str_eq(q->content_type, "application/apply-patch+yaml");
	assert_sent_json(q, run);
	q = ts_request(s, 3);
	ck_assert_str_eq(q->method, "DELETE");
	del = parse("{\"propagationPolicy\":\"Background\"}");
	assert_sent_json(q, del);
	json_object_put(del);

	json_object_put(run);
	kc_client_free(cl);
	ts_stop(s);
}
END_TEST

START_TEST(test_server_list_all)
{
	struct ts_server *s = server_start("client/server-list-all.script");
	struct kc_rest_config rc;
	struct kc_client *cl = server_client(s, &rc);
	struct json_object *list = NULL;
	struct kc_status st;
	int r;

	r = kc_client_list_all(cl, &(struct kc_list_opts){ .res = &kc_res_pods,
	    .ns = "team-a", .limit = 2 }, &list, &st);
	ck_ok(r, st);
	ck_assert_uint_eq(json_object_array_length(kc_json_arr_of(list, "items")), 5);
	ck_assert_uint_eq(ts_nrequests(s), 3);
	assert_path(ts_request(s, 0), "/api/v1/namespaces/team-a/pods?limit=2");
	assert_path(ts_request(s, 1),
	    "/api/v1/namespaces/team-a/pods?continue=tok-1&limit=2");
	assert_path(ts_request(s, 2),
	    "/api/v1/namespaces/team-a/pods?continue=tok%2F2%2B%3D&limit=2");
	json_object_put(list);
	kc_client_free(cl);
	ts_stop(s);
}
END_TEST

Suite *
client_suite(void)
{
	Suite *s = suite_create("client");
	TCase *tc = tcase_create("fake");
	TCase *srv = tcase_create("server");

	tcase_add_test(tc, test_paths);
	tcase_add_test(tc, test_path_too_long);
	tcase_add_test(tc, test_query_escape);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_builtin_descriptors);
	tcase_add_test(tc, test_new);
	tcase_add_test(tc, test_new_oom);
	tcase_add_test(tc, test_get);
	tcase_add_test(tc, test_get_oom);
	tcase_add_test(tc, test_list);
	tcase_add_test(tc, test_list_all);
	tcase_add_test(tc, test_list_all_bounds);
	tcase_add_test(tc, test_create);
	tcase_add_test(tc, test_update);
	tcase_add_test(tc, test_patch);
	tcase_add_test(tc, test_delete);
	tcase_add_test(tc, test_delete_collection);
	tcase_add_test(tc, test_script_lifecycle);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_error_causes);
	tcase_add_test(tc, test_errors_other);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_oversized);
	tcase_add_test(tc, test_invalid_names_send_nothing);
	tcase_add_test(tc, test_transport_failure);
	suite_add_tcase(s, tc);

	tcase_set_timeout(srv, 30);
	tcase_add_test(srv, test_server_roundtrip);
	tcase_add_test(srv, test_server_list_all);
	suite_add_tcase(s, srv);
	return s;
}

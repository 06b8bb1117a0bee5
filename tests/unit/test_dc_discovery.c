/*
 * test_dc_discovery.c: version order, Accept negotiation and the legacy
 * and aggregated discovery documents (devcluster/discovery.c,
 * devcluster/registry.c).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/str.h>

#include "../../devcluster/devcluster.h"
#include "testutil.h"

#define ACCEPT_V2 "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList," \
	"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList," \
	"application/json"
#define ACCEPT_V2BETA1 "application/json;g=apidiscovery.k8s.io;v=v2beta1;" \
	"as=APIGroupDiscoveryList,application/json"

static int
cmp(const void *a, const void *b)
{
	return version_compare(*(const char *const *)a, *(const char *const *)b);
}

START_TEST(version_order)
{
	/* The example of k8s.io/apimachinery pkg/version/helpers.go. */
	const char *v[] = { "foo10", "v11alpha2", "v1", "v10beta3", "v3beta1", "foo1", "v2",
	    "v12alpha1", "v10", "v11beta2" };
	static const char *const want[] = { "v10", "v2", "v1", "v11beta2", "v10beta3",
	    "v3beta1", "v12alpha1", "v11alpha2", "foo1", "foo10" };

	qsort(v, KC_ARRAY_SIZE(v), sizeof(v[0]), cmp);
	for (size_t i = 0; i < KC_ARRAY_SIZE(v); i++)
		ck_assert_str_eq(v[i], want[i]);
	ck_assert_int_eq(version_compare("v1", "v1"), 0);
	ck_assert_int_lt(version_compare("v1beta1", "v2alpha1"), 0);
	ck_assert_int_gt(version_compare("v1alpha", "v1alpha1"), 0);
	ck_assert_int_gt(version_compare("v", "v1"), 0);
	ck_assert_int_gt(version_compare("v1beta", "v9"), 0);
	ck_assert_int_lt(version_compare("v99999999999999999999", "x"), 0);
}
END_TEST

START_TEST(accept_header)
{
	ck_assert_int_eq(discovery_accept(NULL), 0);
	ck_assert_int_eq(discovery_accept(""), 0);
	ck_assert_int_eq(discovery_accept("application/json, */*"), 0);
	ck_assert_int_eq(discovery_accept(ACCEPT_V2), 2);
	ck_assert_int_eq(discovery_accept(ACCEPT_V2BETA1), 1);
	/* MIME parameters in any order, spaces allowed. */
	ck_assert_int_eq(discovery_accept("application/json; as=APIGroupDiscoveryList; "
	    "v=v2; g=apidiscovery.k8s.io"), 2);
	/* Order decides. */
	ck_assert_int_eq(discovery_accept("application/json,application/json;"
	    "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"), 0);
	ck_assert_int_eq(discovery_accept("application/json;g=apidiscovery.k8s.io;v=v3;"
	    "as=APIGroupDiscoveryList,*/*"), 0);
	ck_assert_int_eq(discovery_accept("application/vnd.kubernetes.protobuf"), -1);
	ck_assert_int_eq(discovery_accept("text/html"), -1);
	ck_assert_int_eq(discovery_accept("application/json;as=Table;g=meta.k8s.io;v=v1"), -1);
}
END_TEST

static struct dc *
new_dc(void)
{
	struct dc *dc = NULL;

	ck_assert_int_eq(api_new(&(struct dc_opts){ .no_bootstrap = true }, &dc), 0);
	ck_assert_int_eq(auth_add(dc->auth, "t", "admin", "admin",
	    (const char *const []){ "system:masters", NULL }), 0);
	return dc;
}

/* GETs 'path' with 'accept'; returns the parsed body. */
static struct json_object *
get(struct dc *dc, const char *path, const char *acc, int want_status,
    const char *want_ctype)
{
	struct dc_req req = { 0 };
	struct dc_resp resp;
	struct json_object *o = NULL;

	resp_init(&resp);
	ck_assert_int_eq(req_set_target(&req, path), 0);
	req.method = DC_GET;
	req.authorization = kc_strdup("Bearer t");
	if (acc != NULL)
		req.accept = kc_strdup(acc);
	api_handle(dc, &req, &resp);
	ck_assert_msg(resp.status == want_status, "%s: %d %s", path, resp.status,
	    kc_buf_str(&resp.body));
	if (want_ctype != NULL)
		ck_assert_str_eq(resp.content_type, want_ctype);
	if (resp.status == 200)
		ck_assert_int_eq(kc_json_parse(resp.body.data, resp.body.len, &o, NULL), 0);
	resp_clear(&resp);
	req_clear(&req);
	return o;
}

static struct json_object *
find_named(const struct json_object *arr, const char *key, const char *value)
{
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *e = json_object_array_get_idx(arr, i);
		const char *v = kc_json_str(e, key);

		if (v == NULL && kc_json_get(e, "metadata") != NULL)
			v = kc_json_str(e, "metadata", key);
		if (v != NULL && strcmp(v, value) == 0)
			return e;
	}
	return NULL;
}

START_TEST(legacy)
{
	struct dc *dc = new_dc();
	struct json_object *o, *r;
	size_t n;

	o = get(dc, "/api", "application/json, */*", 200, "application/json");
	ck_assert_str_eq(kc_json_str(o, "kind"), "APIVersions");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	    kc_json_get(o, "versions"), 0)), "v1");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o,
	    "serverAddressByClientCIDRs"), 0), "serverAddress"), "127.0.0.1:6443");
	json_object_put(o);

	o = get(dc, "/apis", NULL, 200, "application/json");
	ck_assert_str_eq(kc_json_str(o, "kind"), "APIGroupList");
	r = find_named(kc_json_get(o, "groups"), "name", "rbac.authorization.k8s.io");
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(kc_json_str(r, "preferredVersion", "groupVersion"),
	    "rbac.authorization.k8s.io/v1");
	/* No core group in /apis. */
	ck_assert_ptr_null(find_named(kc_json_get(o, "groups"), "name", ""));
	/* Built-in groups in kube-apiserver's order. */
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "groups"), 0),
	    "name"), "apps");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "groups"), 1),
	    "name"), "events.k8s.io");
	json_object_put(o);

	o = get(dc, "/api/v1", "application/json, */*", 200, "application/json");
	ck_assert_str_eq(kc_json_str(o, "kind"), "APIResourceList");
	ck_assert_str_eq(kc_json_str(o, "groupVersion"), "v1");
	r = find_named(kc_json_get(o, "resources"), "name", "pods");
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(kc_json_str(r, "singularName"), "pod");
	ck_assert(kc_json_bool(r, false, "namespaced"));
	ck_assert_str_eq(kc_json_str(r, "kind"), "Pod");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	    kc_json_get(r, "shortNames"), 0)), "po");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	    kc_json_get(r, "categories"), 0)), "all");
	n = json_object_array_length(kc_json_get(r, "verbs"));
	ck_assert_uint_eq(n, 8);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	    kc_json_get(r, "verbs"), 0)), "create");
	r = find_named(kc_json_get(o, "resources"), "name", "pods/status");
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(kc_json_str(r, "singularName"), "");
	r = find_named(kc_json_get(o, "resources"), "name", "pods/exec");
	ck_assert_str_eq(kc_json_str(r, "kind"), "PodExecOptions");
	r = find_named(kc_json_get(o, "resources"), "name", "namespaces");
	ck_assert(!kc_json_bool(r, true, "namespaced"));
	/* Sorted by name, subresources after their resource. */
	for (size_t i = 1; i < json_object_array_length(kc_json_get(o, "resources")); i++) {
		const char *a = kc_json_str(json_object_array_get_idx(kc_json_get(o,
		    "resources"), i - 1), "name");
		const char *b = kc_json_str(json_object_array_get_idx(kc_json_get(o,
		    "resources"), i), "name");

		ck_assert_msg(strcmp(a, b) < 0, "%s before %s", a, b);
	}
	json_object_put(o);

	o = get(dc, "/apis/coordination.k8s.io", NULL, 200, "application/json");
	ck_assert_str_eq(kc_json_str(o, "kind"), "APIGroup");
	ck_assert_str_eq(kc_json_str(o, "preferredVersion", "version"), "v1");
	json_object_put(o);

	ck_assert_ptr_null(get(dc, "/apis/nope.io", NULL, 404, "text/plain; charset=utf-8"));
	ck_assert_ptr_null(get(dc, "/apis/batch/v1", NULL, 404, NULL));
	ck_assert_ptr_null(get(dc, "/api/v2", NULL, 404, NULL));
	ck_assert_ptr_null(get(dc, "/api", "text/html", 406, NULL));
	api_free(dc);
}
END_TEST

START_TEST(aggregated)
{
	struct dc *dc = new_dc();
	struct json_object *o, *g, *v, *r, *sub;

	o = get(dc, "/api", ACCEPT_V2, 200, "application/json;g=apidiscovery.k8s.io;v=v2;"
	    "as=APIGroupDiscoveryList");
	ck_assert_str_eq(kc_json_str(o, "kind"), "APIGroupDiscoveryList");
	ck_assert_str_eq(kc_json_str(o, "apiVersion"), "apidiscovery.k8s.io/v2");
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "items")), 1);
	g = json_object_array_get_idx(kc_json_get(o, "items"), 0);
	ck_assert_str_eq(kc_json_str(g, "metadata", "name"), "");
	v = json_object_array_get_idx(kc_json_get(g, "versions"), 0);
	ck_assert_str_eq(kc_json_str(v, "version"), "v1");
	ck_assert_str_eq(kc_json_str(v, "freshness"), "Current");
	r = find_named(kc_json_get(v, "resources"), "resource", "pods");
	ck_assert_ptr_nonnull(r);
	ck_assert_str_eq(kc_json_str(r, "responseKind", "kind"), "Pod");
	ck_assert_str_eq(kc_json_str(r, "responseKind", "group"), "");
	ck_assert_str_eq(kc_json_str(r, "scope"), "Namespaced");
	ck_assert_str_eq(kc_json_str(r, "singularResource"), "pod");
	sub = find_named(kc_json_get(r, "subresources"), "subresource", "status");
	ck_assert_ptr_nonnull(sub);
	ck_assert_str_eq(kc_json_str(sub, "responseKind", "kind"), "Pod");
	r = find_named(kc_json_get(v, "resources"), "resource", "nodes");
	ck_assert_str_eq(kc_json_str(r, "scope"), "Cluster");
	json_object_put(o);

	o = get(dc, "/apis", ACCEPT_V2BETA1, 200, "application/json;g=apidiscovery.k8s.io;"
	    "v=v2beta1;as=APIGroupDiscoveryList");
	ck_assert_str_eq(kc_json_str(o, "apiVersion"), "apidiscovery.k8s.io/v2beta1");
	g = find_named(kc_json_get(o, "items"), "name", "apiextensions.k8s.io");
	ck_assert_ptr_nonnull(g);
	v = json_object_array_get_idx(kc_json_get(g, "versions"), 0);
	r = find_named(kc_json_get(v, "resources"), "resource", "customresourcedefinitions");
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(r, "shortNames")), 2);
	json_object_put(o);
	api_free(dc);
}
END_TEST

START_TEST(dynamic_types)
{
	struct dc *dc = new_dc();
	struct json_object *o, *g, *vs;
	struct dc_rtype *a = NULL, *b = NULL;
	uint64_t gen = dc->reg.generation;
	static const char *const short_names[] = { "rn", NULL };
	static const char *const categories[] = { "all", "trainyard", NULL };
	struct dc_rtype_def d = {
		.group = "trainyard.dev", .plural = "runs", .singular = "run", .kind = "Run",
		.namespaced = true, .verbs = DC_VERBS_ALL, .flags = DC_RT_CUSTOM,
		.short_names = short_names, .categories = categories,
	};

	/* Cached before the change... */
	o = get(dc, "/apis", ACCEPT_V2, 200, NULL);
	ck_assert_ptr_null(find_named(kc_json_get(o, "items"), "name", "trainyard.dev"));
	json_object_put(o);
	d.version = "v1alpha1";
	ck_assert_int_eq(registry_add(dc, &d, &a), 0);
	d.version = "v1beta1";
	ck_assert_int_eq(registry_add(dc, &d, &b), 0);
	ck_assert_int_eq(registry_add(dc, &d, NULL), -EEXIST);
	ck_assert_uint_eq(dc->reg.generation, gen + 2);
	ck_assert_ptr_eq(a->coll, b->coll);
	ck_assert_str_eq(b->qualified, "runs.trainyard.dev");
	ck_assert_str_eq(b->qualified_kind, "Run.trainyard.dev");
	ck_assert_str_eq(b->api_version, "trainyard.dev/v1beta1");
	ck_assert_str_eq(b->list_kind, "RunList");
	ck_assert_ptr_null(b->smp);
	/* ...and rebuilt after: v1beta1 preferred over v1alpha1. */
	o = get(dc, "/apis", ACCEPT_V2, 200, NULL);
	g = find_named(kc_json_get(o, "items"), "name", "trainyard.dev");
	ck_assert_ptr_nonnull(g);
	vs = kc_json_get(g, "versions");
	ck_assert_uint_eq(json_object_array_length(vs), 2);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(vs, 0), "version"), "v1beta1");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(vs, 1), "version"), "v1alpha1");
	/* CRD groups come after the built-in ones. */
	ck_assert_ptr_eq(json_object_array_get_idx(kc_json_get(o, "items"),
	    json_object_array_length(kc_json_get(o, "items")) - 1), g);
	json_object_put(o);
	o = get(dc, "/apis", NULL, 200, NULL);
	g = find_named(kc_json_get(o, "groups"), "name", "trainyard.dev");
	ck_assert_str_eq(kc_json_str(g, "preferredVersion", "version"), "v1beta1");
	json_object_put(o);
	o = get(dc, "/apis/trainyard.dev/v1alpha1", NULL, 200, NULL);
	ck_assert_str_eq(kc_json_str(o, "groupVersion"), "trainyard.dev/v1alpha1");
	json_object_put(o);
	ck_assert_ptr_eq(registry_find_any(dc, "trainyard.dev", "runs"), b);
	ck_assert_ptr_eq(registry_find_kind(dc, "trainyard.dev", "v1alpha1", "Run"), a);
	ck_assert_ptr_eq(registry_find_kind(dc, "trainyard.dev", NULL, "Run"), b);

	registry_remove(dc, b);
	o = get(dc, "/apis", NULL, 200, NULL);
	g = find_named(kc_json_get(o, "groups"), "name", "trainyard.dev");
	ck_assert_str_eq(kc_json_str(g, "preferredVersion", "version"), "v1alpha1");
	json_object_put(o);
	ck_assert_ptr_null(get(dc, "/apis/trainyard.dev/v1beta1", NULL, 404, NULL));
	registry_remove(dc, a);
	ck_assert(!registry_has_group(dc, "trainyard.dev"));
	api_free(dc);
}
END_TEST

Suite *
dc_discovery_suite(void)
{
	Suite *s = suite_create("dc_discovery");
	TCase *tc = tcase_create("discovery");

	tcase_add_test(tc, version_order);
	tcase_add_test(tc, accept_header);
	tcase_add_test(tc, legacy);
	tcase_add_test(tc, aggregated);
	tcase_add_test(tc, dynamic_types);
	suite_add_tcase(s, tc);
	return s;
}

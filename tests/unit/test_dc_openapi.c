/*
 * test_dc_openapi.c: what openapi.c and ssa.c add to the devcluster, and
 * api.c's Tables from table.c, driven through api_handle() as http.c
 * drives it:
 *
 *	openapi		the /openapi/v3 root and its hashes, the group
 *			version documents (PATCH operations, fieldValidation,
 *			x-kubernetes-group-version-kind, custom resource
 *			schemas), /openapi/v2 in protobuf (decoded here with
 *			a small wire reader) and JSON, Accept negotiation,
 *			redirects for stale hashes, rebuilds as the registry
 *			changes, allocation failures
 *	protobuf	request bodies: decoded, 400 with upstream's wrapping,
 *			415 for kinds without a decoder
 *	ssa		apply, conflicts with causes, force, dryRun, option
 *			validation, managedFields of ordinary writes
 *	tables		built-in printers, -o wide columns, includeObject,
 *			watch events with column definitions once
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

#define PB_ACCEPT	"application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
#define PB_CT		"application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
#define PROTOBUF_CT	"application/vnd.kubernetes.protobuf"
#define APPLY_CT	"application/apply-patch+yaml"
#define TABLE_ACCEPT	"application/json;as=Table;v=v1;g=meta.k8s.io," \
	"application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
#define CMS		"/api/v1/namespaces/default/configmaps"

static struct dc *dc;

static void
setup(void)
{
	fake_clock_install(5000000);
	dc = dct_new(NULL);
	ck_assert_int_eq(openapi_init(dc), 0);
	ck_assert_int_eq(ssa_init(dc), 0);
}

static void
teardown(void)
{
	dc = api_free(dc);
	fake_clock_uninstall();
}

/*
 * Runs a request into 'resp' (initialised here; the caller clears it),
 * with allocations failing after 'fail' (SIZE_MAX: never) while the
 * server answers.
 */
static void
raw_failing(const struct dct_call *c, struct dc_resp *resp, size_t fail)
{
	dct_raw(dc, c, resp, fail);
}

static void
raw(const struct dct_call *c, struct dc_resp *resp)
{
	dct_raw(dc, c, resp, SIZE_MAX);
}

/* Runs a request expecting 'want'; the JSON body (NULL when not JSON). */
static struct json_object *
run(const struct dct_call *c, int want)
{
	return dct_run(dc, c, want, NULL);
}

static struct json_object *
get(const char *target, int want)
{
	return run(&(struct dct_call){ .method = DC_GET, .target = target }, want);
}

/* The value of a reply header, or NULL. */
static const char *
header(const struct dc_resp *resp, const char *name)
{
	for (size_t i = 0; i < resp->nheaders; i++)
		if (strcmp(resp->headers[i].name, name) == 0)
			return resp->headers[i].value;
	return NULL;
}

static bool
documented(const struct dc_rtype *t)
{
	return !(t->flags & DC_RT_HIDDEN) && (t->verbs & DC_VERB_PATCH);
}

static void
add_runs(void)
{
	ck_assert_int_eq(registry_add(dc, &(struct dc_rtype_def){
	    .group = "trainyard.dev", .version = "v1beta1", .plural = "runs",
	    .singular = "run", .kind = "Run", .namespaced = true, .verbs = DC_VERBS_ALL,
	    .flags = DC_RT_CUSTOM | DC_RT_STATUS | DC_RT_GENERATION,
	    .subres = (const struct dc_subres []){ { "status", NULL, DC_VERBS_RW, NULL,
	    NULL } },
	    .nsubres = 1 }, NULL), 0);
}

/*
 * OpenAPI v3
 */

START_TEST(root_lists_group_versions)
{
	static const char *const want[] = {
		"api/v1", "apis/apiextensions.k8s.io/v1", "apis/apps/v1",
		"apis/coordination.k8s.io/v1",
		"apis/events.k8s.io/v1", "apis/networking.k8s.io/v1", "apis/policy/v1",
		"apis/rbac.authorization.k8s.io/v1", "apis/scheduling.k8s.io/v1",
		"apis/admissionregistration.k8s.io/v1",
	};
	struct dc_resp resp;
	struct json_object *o, *paths;
	const struct dc_rtype *t;
	const char *prev = "";
	size_t n = 0;

	raw(&(struct dct_call){ .method = DC_GET, .target = "/openapi/v3" }, &resp);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(resp.content_type, "application/json");
	ck_assert_ptr_nonnull(header(&resp, "Etag"));
	ck_assert_int_eq(kc_json_parse(resp.body.data, resp.body.len, &o, NULL), 0);
	resp_clear(&resp);
	paths = kc_json_obj_of(o, "paths");
	ck_assert_ptr_nonnull(paths);
	for (size_t i = 0; i < KC_ARRAY_SIZE(want); i++) {
		char hash[OPENAPI_HASH_MAX], url[256];
		const char *got = kc_json_str(paths, want[i], "serverRelativeURL");

		ck_assert_msg(got != NULL, "%s missing", want[i]);
		ck_assert_int_eq(openapi_hash(dc, want[i], hash), 0);
		ck_assert_uint_eq(strlen(hash), 16);
		(void)snprintf(url, sizeof(url), "/openapi/v3/%s?hash=%s", want[i], hash);
		ck_assert_str_eq(got, url);
	}
	/* Every served group version, once, sorted as Go marshals a map. */
	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link)) {
		char gv[600];

		if (t->group[0] == '\0')
			(void)snprintf(gv, sizeof(gv), "api/%s", t->version);
		else
			(void)snprintf(gv, sizeof(gv), "apis/%s/%s", t->group, t->version);
		ck_assert_msg(kc_json_get(paths, gv) != NULL, "%s not listed", gv);
	}
	json_object_object_foreach(paths, k, v) {
		(void)v;
		ck_assert_int_lt(strcmp(prev, k), 0);
		prev = k;
		n++;
	}
	ck_assert_uint_eq(n, KC_ARRAY_SIZE(want));
	json_object_put(o);
	{
		char hash[OPENAPI_HASH_MAX];

		ck_assert_int_eq(openapi_hash(dc, "apis/nope/v1", hash), KC_ENOTFOUND);
	}
	/* The trailing slash is the root too. */
	dct_put(get("/openapi/v3/", 200));
}
END_TEST

/* The PATCH operation of 'path' in document 'doc'. */
static struct json_object *
patch_op(struct json_object *doc, const char *path)
{
	struct json_object *op = kc_json_get(kc_json_obj_of(doc, "paths"), path, "patch");

	ck_assert_msg(op != NULL, "no PATCH for %s", path);
	return op;
}

static bool
has_query_param(const struct json_object *op, const char *name)
{
	struct json_object *ps = kc_json_arr_of(op, "parameters");

	for (size_t i = 0; i < json_object_array_length(ps); i++) {
		struct json_object *p = json_object_array_get_idx(ps, i);

		if (strcmp(kc_json_str(p, "name"), name) == 0 &&
		    strcmp(kc_json_str(p, "in"), "query") == 0)
			return true;
	}
	return false;
}

START_TEST(group_version_documents)
{
	struct json_object *doc, *op;
	const struct dc_rtype *t;
	size_t kinds = 0;

	doc = get("/openapi/v3/api/v1", 200);
	ck_assert_str_eq(kc_json_str(doc, "openapi"), "3.0.0");
	ck_assert_str_eq(kc_json_str(doc, "info", "title"), "Kubernetes");
	ck_assert_str_eq(kc_json_str(doc, "info", "version"), "v1.32.0");
	ck_assert_ptr_nonnull(kc_json_obj_of(kc_json_obj_of(doc, "components"), "schemas"));
	op = patch_op(doc, "/api/v1/namespaces/{namespace}/pods/{name}");
	ck_assert_str_eq(kc_json_str(op, "operationId"), "patchCoreV1NamespacedPod");
	ck_assert_str_eq(kc_json_str(op, "x-kubernetes-action"), "patch");
	ck_assert_str_eq(kc_json_str(op, "x-kubernetes-group-version-kind", "group"), "");
	ck_assert_str_eq(kc_json_str(op, "x-kubernetes-group-version-kind", "version"), "v1");
	ck_assert_str_eq(kc_json_str(op, "x-kubernetes-group-version-kind", "kind"), "Pod");
	ck_assert(has_query_param(op, "fieldValidation"));
	ck_assert(has_query_param(op, "fieldManager"));
	ck_assert(has_query_param(op, "dryRun"));
	ck_assert(has_query_param(op, "force"));
	op = patch_op(doc, "/api/v1/namespaces/{name}");
	ck_assert_str_eq(kc_json_str(op, "operationId"), "patchCoreV1Namespace");
	ck_assert_str_eq(kc_json_str(op, "x-kubernetes-group-version-kind", "kind"),
	    "Namespace");
	/* One PATCH per documented kind of the group version, nothing else. */
	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link))
		if (documented(t) && t->group[0] == '\0')
			kinds++;
	ck_assert_uint_eq((size_t)json_object_object_length(kc_json_obj_of(doc, "paths")),
	    kinds);
	json_object_put(doc);

	doc = get("/openapi/v3/apis/rbac.authorization.k8s.io/v1", 200);
	op = patch_op(doc, "/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}");
	ck_assert_str_eq(kc_json_str(op, "operationId"),
	    "patchRbacAuthorizationV1ClusterRole");
	op = patch_op(doc, "/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/"
	    "rolebindings/{name}");
	ck_assert_str_eq(kc_json_str(op, "operationId"),
	    "patchRbacAuthorizationV1NamespacedRoleBinding");
	ck_assert_str_eq(kc_json_str(op, "x-kubernetes-group-version-kind", "group"),
	    "rbac.authorization.k8s.io");
	json_object_put(doc);

	/* The CRD kind itself: kubectl needs it to create CRDs. */
	doc = get("/openapi/v3/apis/apiextensions.k8s.io/v1", 200);
	op = patch_op(doc, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}");
	ck_assert_str_eq(kc_json_str(op, "x-kubernetes-group-version-kind", "kind"),
	    "CustomResourceDefinition");
	ck_assert(has_query_param(op, "fieldValidation"));
	json_object_put(doc);

	/* Unknown group versions and paths: 404 page not found. */
	ck_assert_ptr_null(get("/openapi/v3/apis/nope.example/v1", 404));
	ck_assert_ptr_null(get("/openapi/v3/api/v2", 404));
	ck_assert_ptr_null(get("/openapi/v4", 404));
	ck_assert_ptr_null(run(&(struct dct_call){ .method = DC_POST, .target = "/openapi/v3",
	    .body = "{}" }, 404));
}
END_TEST

START_TEST(custom_resource_schema)
{
	struct json_object *doc, *s, *gvk, *meta;

	add_runs();
	doc = get("/openapi/v3/apis/trainyard.dev/v1beta1", 200);
	(void)patch_op(doc, "/apis/trainyard.dev/v1beta1/namespaces/{namespace}/runs/{name}");
	ck_assert_str_eq(kc_json_str(patch_op(doc, "/apis/trainyard.dev/v1beta1/namespaces/"
	    "{namespace}/runs/{name}"), "operationId"),
	    "patchTrainyardDevV1beta1NamespacedRun");
	s = kc_json_get(doc, "components", "schemas", "dev.trainyard.v1beta1.Run");
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(kc_json_str(s, "type"), "object");
	gvk = kc_json_arr_of(s, "x-kubernetes-group-version-kind");
	ck_assert_uint_eq(json_object_array_length(gvk), 1);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(gvk, 0), "kind"), "Run");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(gvk, 0), "group"),
	    "trainyard.dev");
	ck_assert_str_eq(kc_json_str(s, "properties", "apiVersion", "type"), "string");
	meta = kc_json_get(s, "properties", "metadata", "allOf");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(meta, 0), "$ref"),
	    "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
	/* The reference resolves. */
	ck_assert_str_eq(kc_json_str(doc, "components", "schemas",
	    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "properties", "name", "type"),
	    "string");
	json_object_put(doc);
}
END_TEST

#define CRD_JSON(desc) "{\"apiVersion\":\"apiextensions.k8s.io/v1\"," \
	"\"kind\":\"CustomResourceDefinition\",\"metadata\":{\"name\":\"runs.trainyard.dev\"}," \
	"\"spec\":{\"group\":\"trainyard.dev\",\"scope\":\"Namespaced\",\"names\":{" \
	"\"plural\":\"runs\",\"singular\":\"run\",\"kind\":\"Run\"},\"versions\":[{" \
	"\"name\":\"v1beta1\",\"served\":true,\"storage\":true,\"schema\":{" \
	"\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"spec\":{" \
	"\"type\":\"object\",\"description\":\"" desc "\",\"properties\":{" \
	"\"image\":{\"type\":\"string\"}}}}}}}]}}"

START_TEST(crd_schemas)
{
	char h1[OPENAPI_HASH_MAX], h2[OPENAPI_HASH_MAX], v1[OPENAPI_HASH_MAX];
	char v1b[OPENAPI_HASH_MAX];
	struct json_object *doc;

	ck_assert_int_eq(crd_init(dc), 0);
	ck_assert_int_eq(openapi_hash(dc, "api/v1", v1), 0);
	dct_put(run(&(struct dct_call){ .method = DC_POST,
	    .target = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
	    .body = CRD_JSON("first") }, 201));
	ck_assert_int_eq(openapi_hash(dc, "apis/trainyard.dev/v1beta1", h1), 0);
	doc = get("/openapi/v3/apis/trainyard.dev/v1beta1", 200);
	ck_assert_str_eq(kc_json_str(doc, "components", "schemas",
	    "dev.trainyard.v1beta1.Run", "properties", "spec", "description"), "first");
	ck_assert_str_eq(kc_json_str(doc, "components", "schemas",
	    "dev.trainyard.v1beta1.Run", "properties", "spec", "properties", "image", "type"),
	    "string");
	json_object_put(doc);
	/* A schema change is a new document, and only that one changes. */
	dct_put(run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
	    "runs.trainyard.dev", .body = CRD_JSON("second"),
	    .ctype = "application/merge-patch+json" }, 200));
	ck_assert_int_eq(openapi_hash(dc, "apis/trainyard.dev/v1beta1", h2), 0);
	ck_assert_str_ne(h1, h2);
	doc = get("/openapi/v3/apis/trainyard.dev/v1beta1", 200);
	ck_assert_str_eq(kc_json_str(doc, "components", "schemas",
	    "dev.trainyard.v1beta1.Run", "properties", "spec", "description"), "second");
	json_object_put(doc);
	ck_assert_int_eq(openapi_hash(dc, "api/v1", v1b), 0);
	ck_assert_str_eq(v1, v1b);
}
END_TEST

START_TEST(hash_follows_registry)
{
	char v1[OPENAPI_HASH_MAX], v1b[OPENAPI_HASH_MAX], v1c[OPENAPI_HASH_MAX];
	char rbac[OPENAPI_HASH_MAX], rbac2[OPENAPI_HASH_MAX], url[128];
	struct json_object *root;
	struct dc_rtype *w = NULL;
	struct dc_resp resp;

	ck_assert_int_eq(openapi_hash(dc, "api/v1", v1), 0);
	ck_assert_int_eq(openapi_hash(dc, "apis/rbac.authorization.k8s.io/v1", rbac), 0);
	ck_assert_str_ne(v1, rbac);
	/* A new group version appears; the others' documents are the same. */
	add_runs();
	root = get("/openapi/v3", 200);
	ck_assert_ptr_nonnull(kc_json_get(root, "paths", "apis/trainyard.dev/v1beta1"));
	json_object_put(root);
	ck_assert_int_eq(openapi_hash(dc, "api/v1", v1b), 0);
	ck_assert_str_eq(v1, v1b);
	/* A new kind in api/v1 changes that document, and so its hash. */
	ck_assert_int_eq(registry_add(dc, &(struct dc_rtype_def){
	    .group = "", .version = "v1", .plural = "widgets", .singular = "widget",
	    .kind = "Widget", .namespaced = true, .verbs = DC_VERBS_ALL }, &w), 0);
	ck_assert_int_eq(openapi_hash(dc, "api/v1", v1b), 0);
	ck_assert_str_ne(v1, v1b);
	ck_assert_int_eq(openapi_hash(dc, "apis/rbac.authorization.k8s.io/v1", rbac2), 0);
	ck_assert_str_eq(rbac, rbac2);
	/* The outdated hash redirects to the current one. */
	(void)snprintf(url, sizeof(url), "/openapi/v3/api/v1?hash=%s", v1);
	raw(&(struct dct_call){ .method = DC_GET, .target = url }, &resp);
	ck_assert_int_eq(resp.status, 301);
	(void)snprintf(url, sizeof(url), "/openapi/v3/api/v1?hash=%s", v1b);
	ck_assert_str_eq(header(&resp, "Location"), url);
	resp_clear(&resp);
	/* The current one is served, with its hash as the ETag. */
	raw(&(struct dct_call){ .method = DC_GET, .target = url }, &resp);
	ck_assert_int_eq(resp.status, 200);
	(void)snprintf(url, sizeof(url), "\"%s\"", v1b);
	ck_assert_str_eq(header(&resp, "Etag"), url);
	ck_assert_ptr_nonnull(strstr(kc_buf_str(&resp.body), "patchCoreV1NamespacedWidget"));
	resp_clear(&resp);
	/* Removing the kind gives back the first document. */
	registry_remove(dc, w);
	ck_assert_int_eq(openapi_hash(dc, "api/v1", v1c), 0);
	ck_assert_str_eq(v1, v1c);
	/* A different server version is a different document. */
	(void)kc_strlcpy(dc->git_version, "v1.27.0", sizeof(dc->git_version));
	dc->reg.generation++;
	ck_assert_int_eq(openapi_hash(dc, "api/v1", v1c), 0);
	ck_assert_str_ne(v1, v1c);
}
END_TEST

START_TEST(v3_accept)
{
	struct dc_resp resp;

	raw(&(struct dct_call){ .method = DC_GET, .target = "/openapi/v3/api/v1",
	    .accept = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf" }, &resp);
	ck_assert_int_eq(resp.status, 406);
	resp_clear(&resp);
	raw(&(struct dct_call){ .method = DC_GET, .target = "/openapi/v3/api/v1",
	    .accept = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf, "
	    "application/json;q=0.5" }, &resp);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(resp.content_type, "application/json");
	resp_clear(&resp);
	raw(&(struct dct_call){ .method = DC_GET, .target = "/openapi/v3/api/v1",
	    .accept = "*/*" }, &resp);
	ck_assert_int_eq(resp.status, 200);
	resp_clear(&resp);
	raw(&(struct dct_call){ .method = DC_GET, .target = "/openapi/v3/api/v1",
	    .accept = "text/html, application/json;q=0" }, &resp);
	ck_assert_int_eq(resp.status, 406);
	resp_clear(&resp);
}
END_TEST

/*
 * OpenAPI v2: a small protobuf wire reader for the gnostic document
 */

struct pbr {
	const unsigned char	*p;
	const unsigned char	*end;
};

static uint64_t
pb_varint(struct pbr *r)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		ck_assert(r->p < r->end);
		v |= (uint64_t)(*r->p & 0x7f) << shift;
		if ((*r->p++ & 0x80) == 0)
			return v;
	}
	ck_abort_msg("overlong varint");
	return 0;
}

/* The next field (every field of this document is length-delimited). */
static bool
pb_next(struct pbr *r, unsigned *field, struct pbr *val)
{
	uint64_t key, len;

	if (r->p == r->end)
		return false;
	key = pb_varint(r);
	ck_assert_uint_eq(key & 7, 2);
	*field = (unsigned)(key >> 3);
	len = pb_varint(r);
	ck_assert_uint_le(len, (uint64_t)(r->end - r->p));
	val->p = r->p;
	val->end = r->p + len;
	r->p += len;
	return true;
}

/* The first field 'num' of a message, or an empty reader. */
static struct pbr
pb_get(struct pbr msg, unsigned num)
{
	struct pbr v;
	unsigned f;

	while (pb_next(&msg, &f, &v))
		if (f == num)
			return v;
	return (struct pbr){ NULL, NULL };
}

static bool
pb_str_eq(struct pbr v, const char *s)
{
	return v.p != NULL && (size_t)(v.end - v.p) == strlen(s) &&
	    memcmp(v.p, s, strlen(s)) == 0;
}

struct v2op {
	char	path[256];
	char	opid[128];
	char	yaml[256];
	bool	field_validation;
};

/* Decodes the document's operations; returns how many. */
static size_t
v2_ops(const char *data, size_t len, struct v2op *ops, size_t max)
{
	struct pbr doc = { (const unsigned char *)data, (const unsigned char *)data + len };
	struct pbr paths, item, info;
	size_t n = 0;
	unsigned f;

	ck_assert(pb_str_eq(pb_get(doc, 1), "2.0"));
	info = pb_get(doc, 2);
	ck_assert(pb_str_eq(pb_get(info, 1), "Kubernetes"));
	ck_assert(pb_str_eq(pb_get(info, 2), "v1.32.0"));
	paths = pb_get(doc, 8);
	while (pb_next(&paths, &f, &item)) {
		struct pbr name, op, params, ext, v;
		struct v2op *o;
		unsigned g;

		ck_assert_uint_eq(f, 2);
		ck_assert_uint_lt(n, max);
		o = &ops[n++];
		memset(o, 0, sizeof(*o));
		name = pb_get(item, 1);
		memcpy(o->path, name.p, (size_t)(name.end - name.p));
		op = pb_get(pb_get(item, 2), 8);
		ck_assert_ptr_nonnull(op.p);
		v = pb_get(op, 5);
		memcpy(o->opid, v.p, (size_t)(v.end - v.p));
		params = op;
		while (pb_next(&params, &g, &v)) {
			struct pbr q;

			if (g == 8) {
				q = pb_get(pb_get(pb_get(v, 1), 2), 3);
				if (pb_str_eq(pb_get(q, 4), "fieldValidation") &&
				    pb_str_eq(pb_get(q, 2), "query") &&
				    pb_str_eq(pb_get(q, 6), "string"))
					o->field_validation = true;
			} else if (g == 13) {
				ext = v;
				ck_assert(pb_str_eq(pb_get(ext, 1),
				    "x-kubernetes-group-version-kind"));
				v = pb_get(pb_get(ext, 2), 2);
				memcpy(o->yaml, v.p, (size_t)(v.end - v.p));
			}
		}
	}
	return n;
}

START_TEST(v2_protobuf)
{
	static struct v2op ops[128];
	struct dc_resp resp;
	const struct dc_rtype *t;
	size_t n, kinds = 0;

	raw(&(struct dct_call){ .method = DC_GET, .target = "/openapi/v2?timeout=32s",
	    .accept = PB_ACCEPT }, &resp);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(resp.content_type, PB_CT);
	n = v2_ops(resp.body.data, resp.body.len, ops, KC_ARRAY_SIZE(ops));
	/* Each documented kind has its PATCH, GVK and fieldValidation. */
	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link)) {
		char yaml[256];
		bool found = false;

		if (!documented(t))
			continue;
		kinds++;
		(void)snprintf(yaml, sizeof(yaml), "group: %s%s\nkind: %s\nversion: %s\n",
		    t->group[0] != '\0' ? t->group : "\"\"", "", t->kind, t->version);
		for (size_t i = 0; i < n && !found; i++)
			if (strcmp(ops[i].yaml, yaml) == 0) {
				found = true;
				ck_assert(ops[i].field_validation);
				ck_assert_ptr_nonnull(strstr(ops[i].path, t->plural));
				ck_assert_str_eq(ops[i].path + strlen(ops[i].path) - 7, "/{name}");
			}
		ck_assert_msg(found, "%s missing from /openapi/v2", t->kind);
	}
	ck_assert_uint_eq(n, kinds);
	for (size_t i = 0; i < n; i++)
		if (strcmp(ops[i].path, "/api/v1/namespaces/{name}") == 0)
			ck_assert_str_eq(ops[i].opid, "patchCoreV1Namespace");
	resp_clear(&resp);

	/* 1.27/1.28's fallback path serves the same bytes. */
	{
		struct dc_resp again;

		raw(&(struct dct_call){ .method = DC_GET, .target = "/openapi/v2",
		    .accept = PB_ACCEPT }, &resp);
		raw(&(struct dct_call){ .method = DC_GET, .target = "/swagger-2.0.0.pb-v1" },
		    &again);
		ck_assert_int_eq(again.status, 200);
		ck_assert_uint_eq(again.body.len, resp.body.len);
		ck_assert_int_eq(memcmp(again.body.data, resp.body.data, resp.body.len), 0);
		resp_clear(&again);
		resp_clear(&resp);
	}
	/* A new kind is in the next document. */
	add_runs();
	raw(&(struct dct_call){ .method = DC_GET, .target = "/openapi/v2",
	    .accept = PB_ACCEPT }, &resp);
	ck_assert_uint_eq(v2_ops(resp.body.data, resp.body.len, ops, KC_ARRAY_SIZE(ops)),
	    kinds + 1);
	resp_clear(&resp);
}
END_TEST

START_TEST(v2_content_types)
{
	struct dc_resp resp;
	struct json_object *o;

	/* JSON for application/json and any type (the first kube-openapi offers). */
	o = run(&(struct dct_call){ .method = DC_GET, .target = "/openapi/v2",
	    .accept = "application/json" }, 200);
	ck_assert_str_eq(kc_json_str(o, "swagger"), "2.0");
	ck_assert_str_eq(kc_json_str(kc_json_get(o, "paths", "/api/v1/namespaces/{namespace}/"
	    "configmaps/{name}", "patch"), "x-kubernetes-group-version-kind", "kind"),
	    "ConfigMap");
	json_object_put(o);
	raw(&(struct dct_call){ .method = DC_GET, .target = "/openapi/v2" }, &resp);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(resp.content_type, "application/json");
	resp_clear(&resp);
	/* Quality decides between the two. */
	raw(&(struct dct_call){ .method = DC_GET, .target = "/openapi/v2",
	    .accept = "application/json;q=0.5, " PB_ACCEPT }, &resp);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(resp.content_type, PB_CT);
	resp_clear(&resp);
	raw(&(struct dct_call){ .method = DC_GET, .target = "/openapi/v2",
	    .accept = PB_ACCEPT ";q=0.2, application/json" }, &resp);
	ck_assert_str_eq(resp.content_type, "application/json");
	resp_clear(&resp);
	/* The Content-Type spelling (".v1.0") is not what clients ask for. */
	raw(&(struct dct_call){ .method = DC_GET, .target = "/openapi/v2",
	    .accept = PB_CT }, &resp);
	ck_assert_int_eq(resp.status, 406);
	resp_clear(&resp);
	raw(&(struct dct_call){ .method = DC_GET, .target = "/openapi/v2",
	    .accept = "text/html" }, &resp);
	ck_assert_int_eq(resp.status, 406);
	resp_clear(&resp);
	ck_assert_ptr_null(run(&(struct dct_call){ .method = DC_PUT, .target = "/openapi/v2",
	    .body = "{}" }, 404));
}
END_TEST

START_TEST(openapi_alloc_failures)
{
	struct dc_resp resp;
	size_t n;

	for (n = 0; n < 100000; n++) {
		/* A new generation: everything is rebuilt under the failures. */
		dc->reg.generation++;
		raw_failing(&(struct dct_call){ .method = DC_GET, .target = "/openapi/v3/api/v1" },
		    &resp, n);
		ck_assert(resp.status == 200 || resp.status == 500);
		if (resp.status == 200) {
			resp_clear(&resp);
			break;
		}
		resp_clear(&resp);
	}
	ck_assert_uint_lt(n, 100000);
	ck_assert_uint_gt(n, 10);
	/* Still whole afterwards. */
	dct_put(get("/openapi/v3", 200));
	raw(&(struct dct_call){ .method = DC_GET, .target = "/openapi/v2",
	    .accept = PB_ACCEPT }, &resp);
	ck_assert_int_eq(resp.status, 200);
	resp_clear(&resp);
}
END_TEST

/*
 * Protobuf request bodies
 */

/* "k8s\0", runtime.Unknown{typeMeta{apiVersion, kind}, raw{metadata{name}}}. */
static size_t
pb_body(char *buf, const char *api_version, const char *kind, const char *name)
{
	size_t avl = strlen(api_version), kl = strlen(kind), nl = strlen(name), n = 0;

	memcpy(buf, "k8s", 4);
	n = 4;
	buf[n++] = 0x0a;
	buf[n++] = (char)(2 + avl + 2 + kl);
	buf[n++] = 0x0a;
	buf[n++] = (char)avl;
	memcpy(buf + n, api_version, avl);
	n += avl;
	buf[n++] = 0x12;
	buf[n++] = (char)kl;
	memcpy(buf + n, kind, kl);
	n += kl;
	buf[n++] = 0x12;
	buf[n++] = (char)(nl + 4);
	buf[n++] = 0x0a;
	buf[n++] = (char)(nl + 2);
	buf[n++] = 0x0a;
	buf[n++] = (char)nl;
	memcpy(buf + n, name, nl);
	n += nl;
	return n;
}

START_TEST(protobuf_bodies)
{
	static const char prefix[] = "Namespace in version \"v1\" cannot be handled as a "
	    "Namespace: ";
	struct json_object *o;
	char body[256];
	size_t len;

	len = pb_body(body, "v1", "Namespace", "pb1");
	o = run(&(struct dct_call){ .method = DC_POST, .target = "/api/v1/namespaces",
	    .body = body, .body_len = len, .ctype = PROTOBUF_CT,
	    .user_agent = "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07" }, 201);
	ck_assert_str_eq(kc_json_str(o, "metadata", "name"), "pb1");
	ck_assert_str_eq(kc_json_str(o, "status", "phase"), "Active");
	json_object_put(o);
	o = get("/api/v1/namespaces/pb1", 200);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "metadata",
	    "managedFields"), 0), "manager"), "kubectl");
	json_object_put(o);

	len = pb_body(body, "v1", "ConfigMap", "pbcm");
	dct_put(run(&(struct dct_call){ .method = DC_POST, .target = CMS, .body = body,
	    .body_len = len, .ctype = PROTOBUF_CT }, 201));

	/* Malformed: 400, wrapped as kube-apiserver wraps decoding errors. */
	memcpy(body, "k8s\0\x0a\x7f\x0a", 7);
	o = run(&(struct dct_call){ .method = DC_POST, .target = "/api/v1/namespaces",
	    .body = body, .body_len = 7, .ctype = PROTOBUF_CT }, 400);
	ck_assert_str_eq(kc_json_str(o, "reason"), "BadRequest");
	ck_assert_int_eq(strncmp(kc_json_str(o, "message"), prefix, strlen(prefix)), 0);
	json_object_put(o);
	memcpy(body, "k9s\0", 4);
	dct_put(run(&(struct dct_call){ .method = DC_POST, .target = "/api/v1/namespaces",
	    .body = body, .body_len = 4, .ctype = PROTOBUF_CT }, 400));

	/* Too many values: 413. */
	{
		size_t n = 300000, raw_len, cap = 7 * n + 64, off = 0;
		char *big = kc_malloc(cap);
		unsigned char meta[] = { 0x0a, 0x05, 0x0a, 0x03, 'b', 'i', 'g' };

		ck_assert_ptr_nonnull(big);
		raw_len = sizeof(meta) + 7 * n;
		memcpy(big, "k8s\0\x0a\x0f\x0a\x02v1\x12\x09" "ConfigMap\x12", 22);
		off = 22;
		for (size_t v = raw_len; ; v >>= 7) {
			big[off++] = (char)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
			if (v < 0x80)
				break;
		}
		memcpy(big + off, meta, sizeof(meta));
		off += sizeof(meta);
		for (size_t i = 0; i < n; i++) {
			memcpy(big + off, "\x12\x05\x0a\x01k\x12\x00", 7);
			off += 7;
		}
		o = run(&(struct dct_call){ .method = DC_POST, .target = CMS, .body = big,
		    .body_len = off, .ctype = PROTOBUF_CT }, 413);
		ck_assert_str_eq(kc_json_str(o, "reason"), "RequestEntityTooLarge");
		json_object_put(o);
		kc_free(big);
	}

	/* A kind the decoder does not know: 415. */
	len = pb_body(body, "v1", "Pod", "pp");
	o = run(&(struct dct_call){ .method = DC_POST, .target = "/api/v1/namespaces/default/pods",
	    .body = body, .body_len = len, .ctype = PROTOBUF_CT }, 415);
	ck_assert_str_eq(kc_json_str(o, "reason"), "UnsupportedMediaType");
	json_object_put(o);
	/* Custom resources have no protobuf form. */
	add_runs();
	len = pb_body(body, "trainyard.dev/v1beta1", "Run", "r1");
	o = run(&(struct dct_call){ .method = DC_POST,
	    .target = "/apis/trainyard.dev/v1beta1/namespaces/default/runs",
	    .body = body, .body_len = len, .ctype = PROTOBUF_CT }, 415);
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"), "application/json"));
	json_object_put(o);
}
END_TEST

/*
 * Server-side apply and managedFields
 */

static struct json_object *
apply(const char *query, const char *body, int want)
{
	char target[256];

	(void)snprintf(target, sizeof(target), CMS "/a?%s", query);
	return run(&(struct dct_call){ .method = DC_PATCH, .target = target, .body = body,
	    .ctype = APPLY_CT }, want);
}

/* The managedFields entry of 'manager' (borrowed), or NULL. */
static struct json_object *
entry(const struct json_object *o, const char *manager)
{
	struct json_object *mf = kc_json_get(o, "metadata", "managedFields");

	for (size_t i = 0; i < json_object_array_length(mf); i++) {
		struct json_object *e = json_object_array_get_idx(mf, i);

		if (strcmp(kc_json_str(e, "manager"), manager) == 0)
			return e;
	}
	return NULL;
}

START_TEST(server_side_apply)
{
	static const char cm1[] = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
	    "\"metadata\":{\"name\":\"a\"},\"data\":{\"x\":\"1\",\"y\":\"1\"}}";
	static const char cm2[] = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
	    "\"metadata\":{\"name\":\"a\"},\"data\":{\"x\":\"2\"}}";
	struct json_object *o, *e, *cause;

	o = apply("fieldManager=m1&fieldValidation=Strict&force=false", cm1, 201);
	e = entry(o, "m1");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(kc_json_str(e, "operation"), "Apply");
	ck_assert_str_eq(kc_json_str(e, "apiVersion"), "v1");
	ck_assert_str_eq(kc_json_str(e, "fieldsType"), "FieldsV1");
	ck_assert_ptr_nonnull(kc_json_get(e, "fieldsV1", "f:data", "f:x"));
	ck_assert_ptr_nonnull(kc_json_get(e, "fieldsV1", "f:data", "f:y"));
	json_object_put(o);

	/* Another manager changing m1's field: 409 with the cause. */
	o = apply("fieldManager=m2&force=false", cm2, 409);
	ck_assert_str_eq(kc_json_str(o, "reason"), "Conflict");
	ck_assert_str_eq(kc_json_str(o, "message"),
	    "Apply failed with 1 conflict: conflict with \"m1\": .data.x");
	cause = json_object_array_get_idx(kc_json_get(o, "details", "causes"), 0);
	ck_assert_str_eq(kc_json_str(cause, "reason"), "FieldManagerConflict");
	ck_assert_str_eq(kc_json_str(cause, "field"), ".data.x");
	json_object_put(o);
	o = get(CMS "/a", 200);
	ck_assert_str_eq(kc_json_str(o, "data", "x"), "1");
	json_object_put(o);

	/* dryRun: the answer, nothing stored. */
	o = apply("fieldManager=m2&force=true&dryRun=All", cm2, 200);
	ck_assert_str_eq(kc_json_str(o, "data", "x"), "2");
	json_object_put(o);
	o = get(CMS "/a", 200);
	ck_assert_str_eq(kc_json_str(o, "data", "x"), "1");
	json_object_put(o);

	/* force takes the field; m1 keeps y. */
	o = apply("fieldManager=m2&force=true", cm2, 200);
	ck_assert_str_eq(kc_json_str(o, "data", "x"), "2");
	ck_assert_str_eq(kc_json_str(o, "data", "y"), "1");
	ck_assert_ptr_null(kc_json_get(entry(o, "m1"), "fieldsV1", "f:data", "f:x"));
	ck_assert_ptr_nonnull(kc_json_get(entry(o, "m1"), "fieldsV1", "f:data", "f:y"));
	ck_assert_ptr_nonnull(kc_json_get(entry(o, "m2"), "fieldsV1", "f:data", "f:x"));
	json_object_put(o);

	/* m1 no longer applying y removes it. */
	o = apply("fieldManager=m1", "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
	    "\"metadata\":{\"name\":\"a\"}}", 200);
	ck_assert_ptr_null(kc_json_get(o, "data", "y"));
	ck_assert_ptr_null(entry(o, "m1"));
	json_object_put(o);

	/* Options: fieldManager required, force only for apply. */
	o = apply("force=false", cm1, 422);
	ck_assert_str_eq(kc_json_str(o, "message"), "PatchOptions.meta.k8s.io \"\" is "
	    "invalid: fieldManager: Required value: is required for apply patch");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "details",
	    "causes"), 0), "field"), "fieldManager");
	json_object_put(o);
	o = run(&(struct dct_call){ .method = DC_PATCH, .target = CMS "/a?force=true",
	    .body = "{\"data\":{\"z\":\"1\"}}", .ctype = "application/merge-patch+json" }, 422);
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"), "force: Forbidden"));
	json_object_put(o);
	{
		char target[400], name[200];

		memset(name, 'm', 129);
		name[129] = '\0';
		(void)snprintf(target, sizeof(target), CMS "?fieldManager=%s", name);
		dct_put(run(&(struct dct_call){ .method = DC_POST, .target = target,
		    .body = "{\"metadata\":{\"name\":\"long\"}}" }, 422));
	}
	/* The body may not carry managedFields. */
	o = apply("fieldManager=m1", "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
	    "\"metadata\":{\"name\":\"a\",\"managedFields\":[]}}", 400);
	ck_assert_str_eq(kc_json_str(o, "message"), "metadata.managedFields must be nil");
	json_object_put(o);
}
END_TEST

START_TEST(managed_fields_on_writes)
{
	struct json_object *o, *e;

	/* Create: the manager from fieldManager. */
	o = run(&(struct dct_call){ .method = DC_POST, .target = CMS "?fieldManager=kubectl-create",
	    .body = "{\"metadata\":{\"name\":\"w\"},\"data\":{\"a\":\"1\"}}" }, 201);
	e = entry(o, "kubectl-create");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(kc_json_str(e, "operation"), "Update");
	ck_assert_ptr_nonnull(kc_json_get(e, "fieldsV1", "f:data", "f:a"));
	ck_assert_ptr_nonnull(kc_json_get(e, "time"));
	json_object_put(o);
	/* A patch: from the User-Agent, taking the field it changed. */
	o = run(&(struct dct_call){ .method = DC_PATCH, .target = CMS "/w",
	    .body = "{\"data\":{\"a\":\"2\",\"b\":\"1\"}}",
	    .ctype = "application/merge-patch+json",
	    .user_agent = "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07" }, 200);
	ck_assert_ptr_null(kc_json_get(entry(o, "kubectl-create"), "fieldsV1", "f:data",
	    "f:a"));
	ck_assert_ptr_nonnull(kc_json_get(entry(o, "kubectl"), "fieldsV1", "f:data", "f:a"));
	ck_assert_ptr_nonnull(kc_json_get(entry(o, "kubectl"), "fieldsV1", "f:data", "f:b"));
	json_object_put(o);

	/* Pods: defaults are the creator's, admission's additions nobody's. */
	o = run(&(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/pods?fieldManager=kubectl-run",
	    .body = "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
	    "\"image\":\"busybox\"}]}}" }, 201);
	e = kc_json_get(entry(o, "kubectl-run"), "fieldsV1", "f:spec");
	ck_assert_ptr_nonnull(kc_json_get(e, "f:restartPolicy"));
	ck_assert_ptr_nonnull(kc_json_get(e, "f:containers", "k:{\"name\":\"c\"}",
	    "f:imagePullPolicy"));
	ck_assert_ptr_null(kc_json_get(e, "f:serviceAccountName"));
	ck_assert_ptr_null(kc_json_get(e, "f:tolerations"));
	ck_assert_ptr_null(kc_json_get(entry(o, "kubectl-run"), "fieldsV1", "f:status"));
	json_object_put(o);
	/* The status subresource gets its own entry. */
	o = run(&(struct dct_call){ .method = DC_PUT,
	    .target = "/api/v1/namespaces/default/pods/p/status?fieldManager=kubelet",
	    .body = "{\"metadata\":{\"name\":\"p\"},\"status\":{\"phase\":\"Running\"}}" },
	    200);
	e = entry(o, "kubelet");
	ck_assert_str_eq(kc_json_str(e, "subresource"), "status");
	ck_assert_ptr_nonnull(kc_json_get(e, "fieldsV1", "f:status", "f:phase"));
	ck_assert_ptr_nonnull(entry(o, "kubectl-run"));
	json_object_put(o);
	/*
	 * An apply to /status: kubelet's Update entry owns the phase (a
	 * conflict), force takes it, and the Apply entry names the subresource.
	 */
	o = run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/pods/p/status?fieldManager=sim",
	    .body = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
	    "\"status\":{\"phase\":\"Succeeded\"}}", .ctype = APPLY_CT }, 409);
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"),
	    "conflict with \"kubelet\" with subresource \"status\" using v1: .status.phase"));
	json_object_put(o);
	o = run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/pods/p/status?fieldManager=sim&force=true",
	    .body = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"},"
	    "\"status\":{\"phase\":\"Succeeded\"}}", .ctype = APPLY_CT }, 200);
	ck_assert_str_eq(kc_json_str(o, "status", "phase"), "Succeeded");
	e = entry(o, "sim");
	ck_assert_str_eq(kc_json_str(e, "operation"), "Apply");
	ck_assert_str_eq(kc_json_str(e, "subresource"), "status");
	ck_assert_ptr_nonnull(kc_json_get(e, "fieldsV1", "f:status", "f:phase"));
	ck_assert_ptr_null(entry(o, "kubelet"));
	json_object_put(o);
}
END_TEST

/*
 * Tables
 */

static const char *
col_name(const struct json_object *t, size_t i)
{
	return kc_json_str(json_object_array_get_idx(kc_json_get(t, "columnDefinitions"), i),
	    "name");
}

static struct json_object *
cell(const struct json_object *t, size_t row, size_t i)
{
	return json_object_array_get_idx(kc_json_get(json_object_array_get_idx(kc_json_get(t,
	    "rows"), row), "cells"), i);
}

START_TEST(builtin_tables)
{
	static const char *const pod_cols[] = {
		"Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node",
		"Readiness Gates",
	};
	struct json_object *t, *cols;

	dct_put(run(&(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/pods",
	    .body = "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
	    "\"image\":\"busybox\"}]}}" }, 201));
	fake_clock_advance(312000);
	t = run(&(struct dct_call){ .method = DC_GET,
	    .target = "/api/v1/namespaces/default/pods?limit=500", .accept = TABLE_ACCEPT },
	    200);
	cols = kc_json_arr_of(t, "columnDefinitions");
	ck_assert_uint_eq(json_object_array_length(cols), KC_ARRAY_SIZE(pod_cols));
	for (size_t i = 0; i < KC_ARRAY_SIZE(pod_cols); i++)
		ck_assert_str_eq(col_name(t, i), pod_cols[i]);
	/* IP and the rest are -o wide only. */
	ck_assert_int_eq(kc_json_int(json_object_array_get_idx(cols, 4), -1, "priority"), 0);
	ck_assert_int_eq(kc_json_int(json_object_array_get_idx(cols, 5), -1, "priority"), 1);
	ck_assert_str_eq(json_object_get_string(cell(t, 0, 0)), "p");
	ck_assert_str_eq(json_object_get_string(cell(t, 0, 1)), "0/1");
	ck_assert_str_eq(json_object_get_string(cell(t, 0, 2)), "Pending");
	ck_assert_int_eq(json_object_get_int(cell(t, 0, 3)), 0);
	ck_assert_str_eq(json_object_get_string(cell(t, 0, 4)), "5m12s");
	ck_assert_str_eq(json_object_get_string(cell(t, 0, 5)), "<none>");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(t, "rows"), 0),
	    "object", "kind"), "PartialObjectMetadata");
	json_object_put(t);

	/* Services: Type, Cluster-IP, External-IP, Port(s), Age; Selector wide. */
	t = run(&(struct dct_call){ .method = DC_GET,
	    .target = "/api/v1/namespaces/default/services/kubernetes",
	    .accept = TABLE_ACCEPT }, 200);
	ck_assert_str_eq(col_name(t, 1), "Type");
	ck_assert_str_eq(col_name(t, 2), "Cluster-IP");
	ck_assert_str_eq(col_name(t, 4), "Port(s)");
	ck_assert_str_eq(col_name(t, 6), "Selector");
	ck_assert_str_eq(json_object_get_string(cell(t, 0, 1)), "ClusterIP");
	ck_assert_str_eq(json_object_get_string(cell(t, 0, 4)), "443/TCP");
	json_object_put(t);

	/* Namespaces: Name, Status, Age; v1beta1 when asked. */
	t = run(&(struct dct_call){ .method = DC_GET, .target = "/api/v1/namespaces/default",
	    .accept = "application/json;as=Table;v=v1beta1;g=meta.k8s.io" }, 200);
	ck_assert_str_eq(kc_json_str(t, "apiVersion"), "meta.k8s.io/v1beta1");
	ck_assert_str_eq(col_name(t, 1), "Status");
	ck_assert_str_eq(json_object_get_string(cell(t, 0, 1)), "Active");
	json_object_put(t);

	/* Roles have no printer: Name and Created At, as the default convertor. */
	dct_put(run(&(struct dct_call){ .method = DC_POST,
	    .target = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
	    .body = "{\"metadata\":{\"name\":\"r\"},\"rules\":[]}" }, 201));
	t = run(&(struct dct_call){ .method = DC_GET,
	    .target = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
	    .accept = TABLE_ACCEPT }, 200);
	ck_assert_str_eq(col_name(t, 1), "Created At");
	json_object_put(t);

	/* A custom resource type without printer columns: Name and Age. */
	add_runs();
	t = run(&(struct dct_call){ .method = DC_GET,
	    .target = "/apis/trainyard.dev/v1beta1/namespaces/default/runs",
	    .accept = TABLE_ACCEPT }, 200);
	ck_assert_str_eq(col_name(t, 1), "Age");
	json_object_put(t);

	/* includeObject: Object embeds the object; a bad value is 400. */
	t = run(&(struct dct_call){ .method = DC_GET,
	    .target = "/api/v1/namespaces/default/pods/p?includeObject=Object",
	    .accept = TABLE_ACCEPT }, 200);
	ck_assert_ptr_nonnull(kc_json_get(json_object_array_get_idx(kc_json_get(t, "rows"),
	    0), "object", "spec", "containers"));
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(t, "rows"), 0),
	    "object", "kind"), "Pod");
	json_object_put(t);
	t = run(&(struct dct_call){ .method = DC_GET,
	    .target = "/api/v1/namespaces/default/pods?includeObject=Everything",
	    .accept = TABLE_ACCEPT }, 400);
	ck_assert_str_eq(kc_json_str(t, "message"), "Unable to convert to Table as "
	    "requested: includeObject: Invalid value: \"Everything\": must be 'Metadata', "
	    "'Object', 'None', or empty");
	json_object_put(t);
	/* Ignored without a Table. */
	dct_put(get("/api/v1/namespaces/default/pods?includeObject=Everything", 200));
}
END_TEST

START_TEST(watch_tables)
{
	struct dc_req req = { 0 };
	struct dc_resp resp;
	struct json_object *ev[4] = { 0 };
	size_t n = 0;
	bool end = false;

	dct_put(run(&(struct dct_call){ .method = DC_POST, .target = CMS,
	    .body = "{\"metadata\":{\"name\":\"w1\"},\"data\":{\"a\":\"1\"}}" }, 201));
	resp_init(&resp);
	ck_assert_int_eq(req_set_target(&req, CMS "?watch=true"), 0);
	req.method = DC_GET;
	req.authorization = kc_strdup("Bearer admin-token");
	req.accept = kc_strdup(TABLE_ACCEPT);
	api_handle(dc, &req, &resp);
	req_clear(&req);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_ptr_nonnull(resp.stream);
	dct_put(run(&(struct dct_call){ .method = DC_POST, .target = CMS,
	    .body = "{\"metadata\":{\"name\":\"w2\"}}" }, 201));
	for (;;) {
		struct dc_chunk *c = resp.stream->ops->pull(resp.stream, &end);

		if (c == NULL)
			break;
		ck_assert_uint_lt(n, KC_ARRAY_SIZE(ev));
		ck_assert_int_eq(kc_json_parse(c->data, c->len, &ev[n++], NULL), 0);
		chunk_unref(c);
	}
	resp_clear(&resp);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(kc_json_str(ev[0], "type"), "ADDED");
	ck_assert_str_eq(kc_json_str(ev[0], "object", "kind"), "Table");
	/* Column definitions with the first event only. */
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(ev[0], "object",
	    "columnDefinitions"), 1), "name"), "Data");
	ck_assert_int_eq(json_object_get_int(json_object_array_get_idx(kc_json_get(
	    json_object_array_get_idx(kc_json_get(ev[0], "object", "rows"), 0), "cells"), 1)),
	    1);
	ck_assert(json_object_object_get_ex(kc_json_get(ev[1], "object"), "columnDefinitions",
	    NULL));
	ck_assert_ptr_null(kc_json_get(ev[1], "object", "columnDefinitions"));
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(kc_json_get(
	    json_object_array_get_idx(kc_json_get(ev[1], "object", "rows"), 0), "cells"), 0)),
	    "w2");
	for (size_t i = 0; i < n; i++)
		json_object_put(ev[i]);
}
END_TEST

START_TEST(without_hooks)
{
	char body[64];
	size_t len = pb_body(body, "v1", "Namespace", "nohook");

	/* openapi_fini() uninstalls: 404 and 415 as before. */
	openapi_fini(dc);
	openapi_fini(dc);
	ck_assert_ptr_null(get("/openapi/v3", 404));
	dct_put(run(&(struct dct_call){ .method = DC_POST, .target = "/api/v1/namespaces",
	    .body = body, .body_len = len, .ctype = PROTOBUF_CT }, 415));
	{
		char hash[OPENAPI_HASH_MAX];

		ck_assert_int_eq(openapi_hash(dc, "api/v1", hash), -EINVAL);
	}
	ck_assert_int_eq(openapi_init(dc), 0);
	ck_assert_int_eq(openapi_init(dc), 0);
	dct_put(get("/openapi/v3", 200));
}
END_TEST

Suite *
dc_openapi_suite(void)
{
	Suite *s = suite_create("dc_openapi");
	TCase *tc = tcase_create("openapi");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, root_lists_group_versions);
	tcase_add_test(tc, group_version_documents);
	tcase_add_test(tc, custom_resource_schema);
	tcase_add_test(tc, hash_follows_registry);
	tcase_add_test(tc, crd_schemas);
	tcase_add_test(tc, v3_accept);
	tcase_add_test(tc, v2_protobuf);
	tcase_add_test(tc, v2_content_types);
	tcase_add_test(tc, openapi_alloc_failures);
	tcase_add_test(tc, without_hooks);
	suite_add_tcase(s, tc);
	tc = tcase_create("protobuf");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, protobuf_bodies);
	suite_add_tcase(s, tc);
	tc = tcase_create("ssa");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, server_side_apply);
	tcase_add_test(tc, managed_fields_on_writes);
	suite_add_tcase(s, tc);
	tc = tcase_create("tables");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, builtin_tables);
	tcase_add_test(tc, watch_tables);
	suite_add_tcase(s, tc);
	return s;
}

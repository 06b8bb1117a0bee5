/*
 * test_dc_api.c: the verb handlers of devcluster/api.c, driven through
 * api_handle() as http.c drives them, without a socket: authentication,
 * routing, CRUD semantics, resourceVersion and generation rules, status
 * subresources, patches, deletion and namespace termination, list
 * options, Tables and the built-in kinds' defaults.
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

#define TABLE_ACCEPT "application/json;as=Table;v=v1;g=meta.k8s.io," \
	"application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

static struct dc *dc;

static void
setup(void)
{
	fake_clock_install(5000000);
	dc = dct_new(NULL);
	ck_assert_int_eq(auth_add(dc->auth, "alice-token", "alice", "a1",
	    (const char *const []){ "dev", NULL }), 0);
}

static void
teardown(void)
{
	dc = api_free(dc);
	fake_clock_uninstall();
}

/*
 * Runs a request; returns the parsed JSON body (NULL for text), or with
 * 'out' hands over the whole reply instead.
 */
static struct json_object *
run(const struct dct_call *c, int want, struct dc_resp *out)
{
	struct json_object *o = dct_run(dc, c, want, out);

	if (out == NULL)
		return o;
	dct_put(o);
	return NULL;
}

static struct json_object *
do_call(enum dc_method m, const char *target, const char *body, int want)
{
	return run(&(struct dct_call){ .method = m, .target = target, .body = body }, want,
	    NULL);
}

/* The same, discarding the body. */
static void
expect(enum dc_method m, const char *target, const char *body, int want)
{
	dct_put(do_call(m, target, body, want));
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

START_TEST(health_version_auth)
{
	struct dc_resp resp;
	struct json_object *o;

	run(&(struct dct_call){ .method = DC_GET, .target = "/healthz", .token = "" }, 200, &resp);
	ck_assert_str_eq(kc_buf_str(&resp.body), "ok");
	ck_assert_str_eq(resp.content_type, "text/plain; charset=utf-8");
	resp_clear(&resp);
	run(&(struct dct_call){ .method = DC_GET, .target = "/livez?verbose", .token = "" }, 200,
	    &resp);
	ck_assert(strstr(kc_buf_str(&resp.body), "livez check passed") != NULL);
	resp_clear(&resp);
	o = run(&(struct dct_call){ .method = DC_GET, .target = "/version", .token = "" }, 200,
	    NULL);
	ck_assert_str_eq(kc_json_str(o, "major"), "1");
	ck_assert_str_eq(kc_json_str(o, "minor"), "32");
	ck_assert_str_eq(kc_json_str(o, "gitVersion"), "v1.32.0");
	ck_assert_str_eq(kc_json_str(o, "platform"), "linux/amd64");
	json_object_put(o);
	/* Everything else needs a token, and a bad token never passes. */
	o = run(&(struct dct_call){ .method = DC_GET, .target = "/api", .token = "" }, 401, NULL);
	ck_assert_str_eq(kc_json_str(o, "reason"), "Unauthorized");
	dct_expect_message(o, "Unauthorized");
	json_object_put(run(&(struct dct_call){ .method = DC_GET, .target = "/healthz",
	    .token = "nope" }, 401, NULL));
	json_object_put(run(&(struct dct_call){ .method = DC_GET,
	    .target = "/api/v1/namespaces", .token = "nope" }, 401, NULL));
	/* Unknown paths: upstream's plain 404. */
	run(&(struct dct_call){ .method = DC_GET, .target = "/nope" }, 404, &resp);
	ck_assert_str_eq(kc_buf_str(&resp.body), "404 page not found\n");
	resp_clear(&resp);
	expect(DC_GET, "/openapi/v3", NULL, 404);
	expect(DC_GET, "/apis/batch/v1/jobs", NULL, 404);
	dct_expect_message(do_call(DC_GET, "/api/v1/foos", NULL, 404),
	    "the server could not find the requested resource");
	dct_expect_message(do_call(DC_GET, "/api/v1/pods/p1", NULL, 404),
	    "the server could not find the requested resource");
	dct_expect_message(do_call(DC_GET, "/api/v1/namespaces/default/configmaps/c/status",
	    NULL, 404), "the server could not find the requested resource");
	expect(DC_GET, "/api/v1/namespaces/default/nodes", NULL, 404);
	/* A verb the resource does not have. */
	expect(DC_DELETE, "/api/v1/namespaces", NULL, 405);
	expect(DC_OPTIONS, "/api/v1/pods", NULL, 405);
}
END_TEST

START_TEST(bootstrap)
{
	struct json_object *o;

	o = do_call(DC_GET, "/api/v1/namespaces/default", NULL, 200);
	ck_assert_str_eq(kc_json_str(o, "kind"), "Namespace");
	ck_assert_str_eq(kc_json_str(o, "status", "phase"), "Active");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	    kc_json_get(o, "spec", "finalizers"), 0)), "kubernetes");
	ck_assert_str_eq(kc_json_str(o, "metadata", "labels", "kubernetes.io/metadata.name"),
	    "default");
	ck_assert_ptr_null(kc_json_get(o, "metadata", "generation"));
	ck_assert_uint_eq(strlen(kc_json_str(o, "metadata", "uid")), 36);
	json_object_put(o);
	expect(DC_GET, "/api/v1/namespaces/kube-system", NULL, 200);
	expect(DC_GET, "/api/v1/namespaces/kube-public", NULL, 200);
	o = do_call(DC_GET, "/api/v1/namespaces/default/services/kubernetes", NULL, 200);
	ck_assert_str_eq(kc_json_str(o, "spec", "clusterIP"), "10.96.0.1");
	json_object_put(o);
	/* Every namespace, old or new, gets its default service account. */
	expect(DC_GET, "/api/v1/namespaces/kube-system/serviceaccounts/default", NULL, 200);
	expect(DC_POST, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"fresh\"}}", 201);
	o = do_call(DC_GET, "/api/v1/namespaces/fresh/serviceaccounts", NULL, 200);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "items")), 1);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "items"), 0),
	    "metadata", "name"), "default");
	json_object_put(o);
}
END_TEST

START_TEST(create_get_list)
{
	struct json_object *o, *items;
	char rv[32];

	o = do_call(DC_POST, "/api/v1/namespaces", "{\"apiVersion\":\"v1\",\"kind\":"
	    "\"Namespace\",\"metadata\":{\"name\":\"team-a\"}}", 201);
	ck_assert_str_eq(kc_json_str(o, "metadata", "labels", "kubernetes.io/metadata.name"),
	    "team-a");
	json_object_put(o);
	o = do_call(DC_POST, "/api/v1/namespaces/team-a/configmaps",
	    "{\"metadata\":{\"name\":\"c1\",\"labels\":{\"app\":\"x\"}},\"data\":{\"k\":\"v\"}}",
	    201);
	/* apiVersion and kind come from the URL when missing. */
	ck_assert_str_eq(kc_json_str(o, "apiVersion"), "v1");
	ck_assert_str_eq(kc_json_str(o, "kind"), "ConfigMap");
	ck_assert_str_eq(kc_json_str(o, "metadata", "namespace"), "team-a");
	ck_assert_str_eq(kc_json_str(o, "metadata", "creationTimestamp"),
	    "2023-11-14T23:36:40Z");
	ck_assert_ptr_nonnull(dct_rv(o));
	(void)kc_strlcpy(rv, dct_rv(o), sizeof(rv));
	json_object_put(o);
	dct_expect_message(do_call(DC_POST, "/api/v1/namespaces/team-a/configmaps",
	    "{\"metadata\":{\"name\":\"c1\"}}", 409), "configmaps \"c1\" already exists");
	dct_expect_message(do_call(DC_POST, "/api/v1/namespaces/nope/configmaps",
	    "{\"metadata\":{\"name\":\"c1\"}}", 404), "namespaces \"nope\" not found");
	dct_expect_message(do_call(DC_POST, "/api/v1/namespaces/team-a/configmaps",
	    "{\"metadata\":{\"name\":\"c2\",\"namespace\":\"other\"}}", 400),
	    "the namespace of the provided object does not match the namespace sent on "
	    "the request");
	dct_expect_message(do_call(DC_POST, "/api/v1/namespaces/team-a/configmaps",
	    "{\"apiVersion\":\"v2\",\"metadata\":{\"name\":\"c2\"}}", 400),
	    "the API version in the data (v2) does not match the expected API version (v1)");
	expect(DC_POST, "/api/v1/namespaces/team-a/configmaps",
	    "{\"kind\":\"Secret\",\"metadata\":{\"name\":\"c2\"}}", 400);
	dct_expect_message(do_call(DC_POST, "/api/v1/namespaces/team-a/configmaps",
	    "{\"metadata\":{\"name\":\"c2\",\"resourceVersion\":\"5\"}}", 500),
	    "resourceVersion should not be set on objects to be created");
	expect(DC_POST, "/api/v1/namespaces/team-a/configmaps/c9", "{}", 405);

	o = do_call(DC_GET, "/api/v1/namespaces/team-a/configmaps/c1", NULL, 200);
	ck_assert_str_eq(kc_json_str(o, "data", "k"), "v");
	json_object_put(o);
	dct_expect_message(do_call(DC_GET, "/api/v1/namespaces/team-a/configmaps/zz", NULL, 404),
	    "configmaps \"zz\" not found");

	o = do_call(DC_GET, "/api/v1/namespaces/team-a/configmaps", NULL, 200);
	ck_assert_str_eq(kc_json_str(o, "kind"), "ConfigMapList");
	ck_assert_str_eq(kc_json_str(o, "apiVersion"), "v1");
	items = kc_json_get(o, "items");
	ck_assert_uint_eq(json_object_array_length(items), 1);
	/* Built-in list items carry no apiVersion or kind. */
	ck_assert_ptr_null(kc_json_get(json_object_array_get_idx(items, 0), "kind"));
	ck_assert_str_eq(dct_rv(o), rv);
	json_object_put(o);
	/* Across namespaces, with selectors. */
	o = do_call(DC_GET, "/api/v1/configmaps?labelSelector=app%3Dx", NULL, 200);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "items")), 1);
	json_object_put(o);
	o = do_call(DC_GET, "/api/v1/configmaps?labelSelector=app!%3Dx", NULL, 200);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "items")), 0);
	json_object_put(o);
	o = do_call(DC_GET, "/api/v1/configmaps?fieldSelector=metadata.namespace%3Dteam-a,"
	    "metadata.name%3Dc1", NULL, 200);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "items")), 1);
	json_object_put(o);
	dct_expect_message(do_call(DC_GET, "/api/v1/configmaps?fieldSelector=spec.x%3D1", NULL,
	    400), "field label not supported: spec.x");
	expect(DC_GET, "/api/v1/configmaps?labelSelector=a+in+(", NULL, 400);
	expect(DC_GET, "/api/v1/configmaps?limit=abc", NULL, 400);
}
END_TEST

START_TEST(names)
{
	struct json_object *o;

	o = do_call(DC_POST, "/api/v1/namespaces/default/configmaps",
	    "{\"metadata\":{\"name\":\"Bad_Name\"}}", 422);
	ck_assert_str_eq(kc_json_str(o, "reason"), "Invalid");
	ck_assert_str_eq(kc_json_str(o, "details", "kind"), "ConfigMap");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "details",
	    "causes"), 0), "field"), "metadata.name");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "details",
	    "causes"), 0), "reason"), "FieldValueInvalid");
	dct_expect_message(o, "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: "
	    "\"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case "
	    "alphanumeric characters, '-' or '.', and must start and end with an "
	    "alphanumeric character (e.g. 'example.com', regex used for validation is "
	    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
	dct_expect_message(do_call(DC_POST, "/api/v1/namespaces",
	    "{\"metadata\":{\"name\":\"a.b\"}}", 422),
	    "Namespace \"a.b\" is invalid: metadata.name: Invalid value: \"a.b\": a "
	    "lowercase RFC 1123 label must consist of lower case alphanumeric characters "
	    "or '-', and must start and end with an alphanumeric character (e.g. "
	    "'my-name',  or '123-abc', regex used for validation is "
	    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
	dct_expect_message(do_call(DC_POST, "/api/v1/namespaces/default/configmaps",
	    "{\"metadata\":{}}", 422), "ConfigMap \"\" is invalid: metadata.name: Required "
	    "value: name or generateName is required");
	/* Keys as IsConfigMapKey() reports them. */
	dct_expect_message(do_call(DC_POST, "/api/v1/namespaces/default/configmaps",
	    "{\"metadata\":{\"name\":\"k\"},\"data\":{\"..\":\"x\"}}", 422),
	    "ConfigMap \"k\" is invalid: data[..]: Invalid value: \"..\": must not be '..'");
	expect(DC_POST, "/api/v1/namespaces/default/services",
	    "{\"metadata\":{\"name\":\"1svc\"},\"spec\":{\"ports\":[{\"port\":80}]}}", 422);
	expect(DC_POST, "/apis/rbac.authorization.k8s.io/v1/clusterroles",
	    "{\"metadata\":{\"name\":\"system:Weird Name\"}}", 201);
	expect(DC_POST, "/apis/rbac.authorization.k8s.io/v1/clusterroles",
	    "{\"metadata\":{\"name\":\"a/b\"}}", 422);
	o = do_call(DC_POST, "/api/v1/namespaces/default/configmaps",
	    "{\"metadata\":{\"name\":\"x\",\"labels\":{\"-bad\":\"ok\",\"k\":\"bad value\"}}}",
	    422);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "details", "causes")), 2);
	json_object_put(o);
	o = do_call(DC_POST, "/api/v1/namespaces/default/configmaps",
	    "{\"metadata\":{\"generateName\":\"gen-\"}}", 201);
	ck_assert_uint_eq(strlen(kc_json_str(o, "metadata", "name")), 9);
	ck_assert(strncmp(kc_json_str(o, "metadata", "name"), "gen-", 4) == 0);
	json_object_put(o);
}
END_TEST

START_TEST(bodies)
{
	struct json_object *o;

	o = run(&(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/configmaps", .ctype = "application/yaml",
	    .body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n"
	    "  n: \"1\"\n" }, 201, NULL);
	ck_assert_str_eq(kc_json_str(o, "data", "n"), "1");
	json_object_put(o);
	o = run(&(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/configmaps",
	    .ctype = "application/vnd.kubernetes.protobuf", .body = "k8s" }, 415, NULL);
	ck_assert_str_eq(kc_json_str(o, "reason"), "UnsupportedMediaType");
	json_object_put(o);
	json_object_put(run(&(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/configmaps", .ctype = "text/plain",
	    .body = "x" }, 415, NULL));
	expect(DC_POST, "/api/v1/namespaces/default/configmaps", "[1]", 400);
	expect(DC_POST, "/api/v1/namespaces/default/configmaps", "{bad", 400);
	expect(DC_POST, "/api/v1/namespaces/default/configmaps", "", 400);
	json_object_put(run(&(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/configmaps", .ctype = "application/yaml",
	    .body = "a: [" }, 400, NULL));
}
END_TEST

START_TEST(update_semantics)
{
	struct json_object *o;
	char body[512], rv[32];

	o = do_call(DC_POST, "/api/v1/namespaces/default/configmaps",
	    "{\"metadata\":{\"name\":\"u\"},\"data\":{\"a\":\"1\"}}", 201);
	(void)kc_strlcpy(rv, dct_rv(o), sizeof(rv));
	json_object_put(o);
	/* Nothing changed: same resourceVersion. */
	(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"u\","
	    "\"resourceVersion\":\"%s\"},\"data\":{\"a\":\"1\"}}", rv);
	o = do_call(DC_PUT, "/api/v1/namespaces/default/configmaps/u", body, 200);
	ck_assert_str_eq(dct_rv(o), rv);
	json_object_put(o);
	/* A change gets a new one; the old one then conflicts. */
	(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"u\","
	    "\"resourceVersion\":\"%s\"},\"data\":{\"a\":\"2\"}}", rv);
	o = do_call(DC_PUT, "/api/v1/namespaces/default/configmaps/u", body, 200);
	ck_assert_str_ne(dct_rv(o), rv);
	json_object_put(o);
	o = do_call(DC_PUT, "/api/v1/namespaces/default/configmaps/u", body, 409);
	ck_assert_str_eq(kc_json_str(o, "reason"), "Conflict");
	dct_expect_message(o, "Operation cannot be fulfilled on configmaps \"u\": the object has "
	    "been modified; please apply your changes to the latest version and try again");
	/* Built-ins update without a resourceVersion. */
	expect(DC_PUT, "/api/v1/namespaces/default/configmaps/u",
	    "{\"metadata\":{\"name\":\"u\"},\"data\":{\"a\":\"3\"}}", 200);
	dct_expect_message(do_call(DC_PUT, "/api/v1/namespaces/default/configmaps/u",
	    "{\"metadata\":{\"name\":\"v\"}}", 400), "the name of the object (v) does not "
	    "match the name on the URL (u)");
	expect(DC_PUT, "/api/v1/namespaces/default/configmaps/nope",
	    "{\"metadata\":{\"name\":\"nope\"}}", 404);
	/* A different uid is a failed precondition. */
	expect(DC_PUT, "/api/v1/namespaces/default/configmaps/u",
	    "{\"metadata\":{\"name\":\"u\",\"uid\":\"other\"}}", 409);
	/* Leases may be created by PUT. */
	expect(DC_PUT, "/apis/coordination.k8s.io/v1/namespaces/default/leases/l1",
	    "{\"metadata\":{\"name\":\"l1\"},\"spec\":{\"holderIdentity\":\"me\"}}", 201);
}
END_TEST

START_TEST(custom_resources)
{
	struct json_object *o;
	char body[512], rv[32];

	add_runs();
	o = do_call(DC_POST, "/apis/trainyard.dev/v1beta1/namespaces/default/runs",
	    "{\"metadata\":{\"name\":\"r1\"},\"spec\":{\"nodes\":2},"
	    "\"status\":{\"phase\":\"Bogus\"}}", 201);
	/* Create drops status; generation starts at 1. */
	ck_assert_ptr_null(kc_json_get(o, "status"));
	ck_assert_int_eq(kc_json_int(o, 0, "metadata", "generation"), 1);
	ck_assert_str_eq(kc_json_str(o, "apiVersion"), "trainyard.dev/v1beta1");
	(void)kc_strlcpy(rv, dct_rv(o), sizeof(rv));
	json_object_put(o);
	/* Custom resources need a resourceVersion to update. */
	dct_expect_message(do_call(DC_PUT, "/apis/trainyard.dev/v1beta1/namespaces/default/runs/r1",
	    "{\"metadata\":{\"name\":\"r1\"},\"spec\":{\"nodes\":3}}", 422),
	    "Run.trainyard.dev \"r1\" is invalid: metadata.resourceVersion: Invalid value: "
	    "0x0: must be specified for an update");
	/* PUT never creates a custom resource. */
	expect(DC_PUT, "/apis/trainyard.dev/v1beta1/namespaces/default/runs/r9",
	    "{\"metadata\":{\"name\":\"r9\",\"resourceVersion\":\"1\"}}", 404);
	/* A label change keeps the generation... */
	(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"r1\",\"resourceVersion\":"
	    "\"%s\",\"labels\":{\"a\":\"b\"}},\"spec\":{\"nodes\":2}}", rv);
	o = do_call(DC_PUT, "/apis/trainyard.dev/v1beta1/namespaces/default/runs/r1", body,
	    200);
	ck_assert_int_eq(kc_json_int(o, 0, "metadata", "generation"), 1);
	(void)kc_strlcpy(rv, dct_rv(o), sizeof(rv));
	json_object_put(o);
	/* ...a status write too, and it keeps everything else... */
	(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"r1\",\"resourceVersion\":"
	    "\"%s\",\"labels\":{\"ignored\":\"yes\"}},\"spec\":{\"nodes\":99},"
	    "\"status\":{\"phase\":\"Running\"}}", rv);
	o = do_call(DC_PUT,
	    "/apis/trainyard.dev/v1beta1/namespaces/default/runs/r1/status", body, 200);
	ck_assert_int_eq(kc_json_int(o, 0, "metadata", "generation"), 1);
	ck_assert_str_eq(kc_json_str(o, "status", "phase"), "Running");
	ck_assert_int_eq(kc_json_int(o, 0, "spec", "nodes"), 2);
	ck_assert_ptr_null(kc_json_get(o, "metadata", "labels", "ignored"));
	(void)kc_strlcpy(rv, dct_rv(o), sizeof(rv));
	json_object_put(o);
	/* ...while the main resource keeps the stored status. */
	(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"r1\",\"resourceVersion\":"
	    "\"%s\"},\"spec\":{\"nodes\":5},\"status\":{\"phase\":\"Hacked\"}}", rv);
	o = do_call(DC_PUT, "/apis/trainyard.dev/v1beta1/namespaces/default/runs/r1", body,
	    200);
	ck_assert_int_eq(kc_json_int(o, 0, "metadata", "generation"), 2);
	ck_assert_str_eq(kc_json_str(o, "status", "phase"), "Running");
	json_object_put(o);
	/* Strategic merge patches are for built-ins only. */
	o = run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/apis/trainyard.dev/v1beta1/namespaces/default/runs/r1",
	    .ctype = "application/strategic-merge-patch+json", .body = "{}" }, 415, NULL);
	dct_expect_message(o, "the body of the request was in an unknown format - accepted "
	    "media types include: application/json-patch+json, application/merge-patch+json, "
	    "application/apply-patch+yaml");
	/* Custom resource list items keep apiVersion and kind. */
	o = do_call(DC_GET, "/apis/trainyard.dev/v1beta1/runs", NULL, 200);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "items"), 0),
	    "kind"), "Run");
	json_object_put(o);
	/* Deleting a custom resource answers a Status. */
	o = do_call(DC_DELETE, "/apis/trainyard.dev/v1beta1/namespaces/default/runs/r1", NULL,
	    200);
	ck_assert_str_eq(kc_json_str(o, "kind"), "Status");
	ck_assert_str_eq(kc_json_str(o, "status"), "Success");
	ck_assert_str_eq(kc_json_str(o, "details", "name"), "r1");
	ck_assert_str_eq(kc_json_str(o, "details", "group"), "trainyard.dev");
	ck_assert_str_eq(kc_json_str(o, "details", "kind"), "runs");
	ck_assert_uint_eq(strlen(kc_json_str(o, "details", "uid")), 36);
	json_object_put(o);
	expect(DC_GET, "/api/v1/namespaces/default/configmaps/x/status", NULL, 404);
}
END_TEST

START_TEST(patches)
{
	struct json_object *o;

	expect(DC_POST, "/api/v1/namespaces/default/configmaps",
	    "{\"metadata\":{\"name\":\"p\",\"labels\":{\"keep\":\"1\"}},\"data\":{\"a\":\"1\"}}",
	    201);
	o = run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/configmaps/p?fieldManager=kubectl-label",
	    .ctype = "application/strategic-merge-patch+json",
	    .body = "{\"metadata\":{\"labels\":{\"team\":\"a\"}}}" }, 200, NULL);
	ck_assert_str_eq(kc_json_str(o, "metadata", "labels", "team"), "a");
	ck_assert_str_eq(kc_json_str(o, "metadata", "labels", "keep"), "1");
	json_object_put(o);
	o = run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/configmaps/p",
	    .ctype = "application/merge-patch+json",
	    .body = "{\"data\":{\"a\":null,\"b\":\"2\"}}" }, 200, NULL);
	ck_assert_ptr_null(kc_json_get(o, "data", "a"));
	ck_assert_str_eq(kc_json_str(o, "data", "b"), "2");
	json_object_put(o);
	o = run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/configmaps/p",
	    .ctype = "application/json-patch+json",
	    .body = "[{\"op\":\"add\",\"path\":\"/data/c\",\"value\":\"3\"}]" }, 200, NULL);
	ck_assert_str_eq(kc_json_str(o, "data", "c"), "3");
	json_object_put(o);
	/* A failing test: 422; an undecodable patch: 400. */
	o = run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/configmaps/p",
	    .ctype = "application/json-patch+json",
	    .body = "[{\"op\":\"test\",\"path\":\"/data/c\",\"value\":\"x\"}]" }, 422, NULL);
	ck_assert_str_eq(kc_json_str(o, "reason"), "Invalid");
	json_object_put(o);
	json_object_put(run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/configmaps/p",
	    .ctype = "application/json-patch+json", .body = "{\"op\":1}" }, 400, NULL));
	json_object_put(run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/configmaps/p",
	    .ctype = "application/json", .body = "{}" }, 415, NULL));
	/* A resourceVersion in the patch is a precondition. */
	o = run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/configmaps/p",
	    .ctype = "application/merge-patch+json",
	    .body = "{\"metadata\":{\"resourceVersion\":\"1\"},\"data\":{\"d\":\"4\"}}" }, 409,
	    NULL);
	ck_assert_str_eq(kc_json_str(o, "reason"), "Conflict");
	json_object_put(o);
	/* Renaming through a patch is refused. */
	json_object_put(run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/configmaps/p",
	    .ctype = "application/merge-patch+json",
	    .body = "{\"metadata\":{\"name\":\"q\"}}" }, 400, NULL));
	json_object_put(run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/configmaps/nope",
	    .ctype = "application/merge-patch+json", .body = "{}" }, 404, NULL));
	/* A patch that changes nothing keeps the resourceVersion. */
	{
		struct json_object *a, *b;

		a = do_call(DC_GET, "/api/v1/namespaces/default/configmaps/p", NULL, 200);
		b = run(&(struct dct_call){ .method = DC_PATCH,
		    .target = "/api/v1/namespaces/default/configmaps/p",
		    .ctype = "application/merge-patch+json", .body = "{\"data\":{\"b\":\"2\"}}" },
		    200, NULL);
		ck_assert_str_eq(dct_rv(a), dct_rv(b));
		json_object_put(a);
		json_object_put(b);
	}
	/* Server-side apply without its handler: create, then merge. */
	o = run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/configmaps/sa?fieldManager=kubectl",
	    .ctype = "application/apply-patch+yaml",
	    .body = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"sa\"},"
	    "\"data\":{\"x\":\"1\"}}" }, 201, NULL);
	json_object_put(o);
	o = run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/configmaps/sa?fieldManager=kubectl",
	    .ctype = "application/apply-patch+yaml",
	    .body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sa\ndata:\n  y: \"2\"\n" },
	    200, NULL);
	ck_assert_str_eq(kc_json_str(o, "data", "x"), "1");
	ck_assert_str_eq(kc_json_str(o, "data", "y"), "2");
	json_object_put(o);
	o = run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/configmaps/sa",
	    .ctype = "application/apply-patch+yaml",
	    .body = "{\"metadata\":{\"name\":\"sa\"}}" }, 422, NULL);
	dct_expect_message(o, "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required "
	    "value: is required for apply patch");
	json_object_put(run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/configmaps/sa?fieldManager=m",
	    .ctype = "application/apply-patch+yaml",
	    .body = "{\"metadata\":{\"name\":\"sa\",\"managedFields\":[{}]}}" }, 400, NULL));
}
END_TEST

START_TEST(deletion)
{
	struct json_object *o;
	char body[256];

	o = do_call(DC_POST, "/api/v1/namespaces/default/configmaps",
	    "{\"metadata\":{\"name\":\"d1\"}}", 201);
	(void)snprintf(body, sizeof(body), "{\"preconditions\":{\"uid\":\"wrong\"}}");
	{
		struct json_object *e = do_call(DC_DELETE,
		    "/api/v1/namespaces/default/configmaps/d1", body, 409);
		char want[128];

		(void)snprintf(want, sizeof(want), "Precondition failed: UID in precondition: "
		    "wrong, UID in object meta: %s", kc_json_str(o, "metadata", "uid"));
		ck_assert_str_eq(kc_json_str(e, "reason"), "Conflict");
		dct_expect_message(e, want);
	}
	(void)snprintf(body, sizeof(body), "{\"preconditions\":{\"uid\":\"%s\"}}",
	    kc_json_str(o, "metadata", "uid"));
	json_object_put(o);
	expect(DC_DELETE, "/api/v1/namespaces/default/configmaps/d1",
	    "{\"propagationPolicy\":\"Sideways\"}", 422);
	expect(DC_DELETE, "/api/v1/namespaces/default/configmaps/d1?dryRun=All", NULL, 200);
	expect(DC_GET, "/api/v1/namespaces/default/configmaps/d1", NULL, 200);
	o = do_call(DC_DELETE, "/api/v1/namespaces/default/configmaps/d1", body, 200);
	ck_assert_str_eq(kc_json_str(o, "status"), "Success");
	ck_assert_str_eq(kc_json_str(o, "details", "kind"), "configmaps");
	json_object_put(o);
	expect(DC_GET, "/api/v1/namespaces/default/configmaps/d1", NULL, 404);
	expect(DC_DELETE, "/api/v1/namespaces/default/configmaps/d1", NULL, 404);

	/* Finalizers hold the object until an update removes them. */
	expect(DC_POST, "/api/v1/namespaces/default/configmaps",
	    "{\"metadata\":{\"name\":\"f\",\"finalizers\":[\"example.com/hold\"]}}", 201);
	o = do_call(DC_DELETE, "/api/v1/namespaces/default/configmaps/f",
	    "{\"propagationPolicy\":\"Background\"}", 200);
	ck_assert_ptr_nonnull(kc_json_get(o, "metadata", "deletionTimestamp"));
	ck_assert_int_eq(kc_json_int(o, -1, "metadata", "deletionGracePeriodSeconds"), 0);
	ck_assert_str_eq(kc_json_str(o, "kind"), "ConfigMap");
	json_object_put(o);
	/* A second delete changes nothing. */
	expect(DC_DELETE, "/api/v1/namespaces/default/configmaps/f", NULL, 200);
	/* New finalizers on a deleting object are refused. */
	o = run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/configmaps/f",
	    .ctype = "application/merge-patch+json",
	    .body = "{\"metadata\":{\"finalizers\":[\"example.com/hold\",\"b.io/x\"]}}" },
	    422, NULL);
	dct_expect_message(o, "ConfigMap \"f\" is invalid: metadata.finalizers: Forbidden: no new "
	    "finalizers can be added if the object is being deleted, found new finalizers "
	    "[]string{\"b.io/x\"}");
	json_object_put(run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/configmaps/f",
	    .ctype = "application/merge-patch+json",
	    .body = "{\"metadata\":{\"finalizers\":null}}" }, 200, NULL));
	expect(DC_GET, "/api/v1/namespaces/default/configmaps/f", NULL, 404);

	/* deletecollection */
	expect(DC_POST, "/api/v1/namespaces/default/configmaps",
	    "{\"metadata\":{\"name\":\"k1\",\"labels\":{\"kill\":\"y\"}}}", 201);
	expect(DC_POST, "/api/v1/namespaces/default/configmaps",
	    "{\"metadata\":{\"name\":\"k2\"}}", 201);
	o = do_call(DC_DELETE, "/api/v1/namespaces/default/configmaps?labelSelector=kill",
	    NULL, 200);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "items")), 1);
	json_object_put(o);
	expect(DC_GET, "/api/v1/namespaces/default/configmaps/k1", NULL, 404);
	expect(DC_GET, "/api/v1/namespaces/default/configmaps/k2", NULL, 200);
}
END_TEST

START_TEST(pods)
{
	struct json_object *o, *c;

	o = do_call(DC_POST, "/api/v1/namespaces/default/pods",
	    "{\"metadata\":{\"name\":\"p1\"},\"spec\":{\"containers\":[{\"name\":\"main\","
	    "\"image\":\"busybox\",\"resources\":{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}},"
	    "{\"name\":\"side\",\"image\":\"nginx:1.25\",\"resources\":{\"limits\":"
	    "{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]},\"status\":{\"phase\":\"Running\"}}", 201);
	ck_assert_str_eq(kc_json_str(o, "status", "phase"), "Pending");
	ck_assert_str_eq(kc_json_str(o, "status", "qosClass"), "Guaranteed");
	ck_assert_str_eq(kc_json_str(o, "spec", "restartPolicy"), "Always");
	ck_assert_str_eq(kc_json_str(o, "spec", "dnsPolicy"), "ClusterFirst");
	ck_assert_str_eq(kc_json_str(o, "spec", "schedulerName"), "default-scheduler");
	ck_assert_str_eq(kc_json_str(o, "spec", "serviceAccountName"), "default");
	ck_assert_int_eq(kc_json_int(o, -1, "spec", "terminationGracePeriodSeconds"), 30);
	ck_assert_int_eq(kc_json_int(o, -1, "spec", "priority"), 0);
	ck_assert(kc_json_bool(o, false, "spec", "enableServiceLinks"));
	/* DefaultTolerationSeconds is nodes.c's admission, not started here. */
	ck_assert_ptr_null(kc_json_get(o, "spec", "tolerations"));
	c = json_object_array_get_idx(kc_json_get(o, "spec", "containers"), 0);
	ck_assert_str_eq(kc_json_str(c, "imagePullPolicy"), "Always");
	ck_assert_str_eq(kc_json_str(c, "terminationMessagePath"), "/dev/termination-log");
	ck_assert_str_eq(kc_json_str(c, "resources", "requests", "cpu"), "1");
	c = json_object_array_get_idx(kc_json_get(o, "spec", "containers"), 1);
	ck_assert_str_eq(kc_json_str(c, "imagePullPolicy"), "IfNotPresent");
	json_object_put(o);
	/* Images may change; anything else in spec may not. */
	json_object_put(run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/pods/p1",
	    .ctype = "application/strategic-merge-patch+json",
	    .body = "{\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"busybox:2\"}]}}" },
	    200, NULL));
	o = run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/pods/p1",
	    .ctype = "application/strategic-merge-patch+json",
	    .body = "{\"spec\":{\"restartPolicy\":\"Never\"}}" }, 422, NULL);
	ck_assert(strncmp(kc_json_str(o, "message"), "Pod \"p1\" is invalid: spec: Forbidden: "
	    "pod updates may not change fields other than `spec.containers[*].image`", 70) == 0);
	json_object_put(o);
	o = do_call(DC_POST, "/api/v1/namespaces/default/pods",
	    "{\"metadata\":{\"name\":\"p2\"},\"spec\":{\"containers\":[{\"name\":\"a\"},"
	    "{\"name\":\"a\",\"image\":\"x\"}]}}", 422);
	dct_expect_message(o, "Pod \"p2\" is invalid: [spec.containers[0].image: Required value, "
	    "spec.containers[1].name: Duplicate value: \"a\"]");
	o = do_call(DC_POST, "/api/v1/namespaces/default/pods",
	    "{\"metadata\":{\"name\":\"p3\"},\"spec\":{\"containers\":[{\"name\":\"a\","
	    "\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}", 201);
	ck_assert_str_eq(kc_json_str(o, "status", "qosClass"), "Burstable");
	json_object_put(o);
	/* A pod without a node goes at once, answered with the object. */
	o = do_call(DC_DELETE, "/api/v1/namespaces/default/pods/p3", NULL, 200);
	ck_assert_str_eq(kc_json_str(o, "kind"), "Pod");
	json_object_put(o);
	expect(DC_GET, "/api/v1/namespaces/default/pods/p3", NULL, 404);
	/* A pod on a node waits out its grace period, then goes. */
	expect(DC_POST, "/api/v1/namespaces/default/pods",
	    "{\"metadata\":{\"name\":\"p4\"},\"spec\":{\"nodeName\":\"n1\",\"containers\":"
	    "[{\"name\":\"a\",\"image\":\"x\"}]}}", 201);
	o = do_call(DC_DELETE, "/api/v1/namespaces/default/pods/p4", NULL, 200);
	ck_assert_int_eq(kc_json_int(o, -1, "metadata", "deletionGracePeriodSeconds"), 30);
	json_object_put(o);
	expect(DC_GET, "/api/v1/namespaces/default/pods/p4", NULL, 200);
	ck_assert_uint_ge(timers_run(dc), 1);
	expect(DC_GET, "/api/v1/namespaces/default/pods/p4", NULL, 404);
	/* Field selectors of pods. */
	o = do_call(DC_GET, "/api/v1/pods?fieldSelector=status.phase%3DPending,"
	    "spec.nodeName%3D", NULL, 200);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "items")), 1);
	json_object_put(o);
	/* Logs without a kubelet. */
	{
		struct dc_resp resp;

		run(&(struct dct_call){ .method = DC_GET,
		    .target = "/api/v1/namespaces/default/pods/p1/log" }, 400, &resp);
		ck_assert(strstr(kc_buf_str(&resp.body), "a container name must be specified "
		    "for pod p1, choose one of: [main side]") != NULL);
		resp_clear(&resp);
		run(&(struct dct_call){ .method = DC_GET,
		    .target = "/api/v1/namespaces/default/pods/p1/log?container=main" }, 200,
		    &resp);
		ck_assert_str_eq(resp.content_type, "text/plain");
		ck_assert_uint_eq(resp.body.len, 0);
		resp_clear(&resp);
		expect(DC_GET, "/api/v1/namespaces/default/pods/p1/log?container=x", NULL, 400);
		expect(DC_GET, "/api/v1/namespaces/default/pods/p1/exec", NULL, 400);
	}
}
END_TEST

START_TEST(services)
{
	struct json_object *o;
	const char *ip;
	unsigned a, b;

	o = do_call(DC_POST, "/api/v1/namespaces/default/services",
	    "{\"metadata\":{\"name\":\"s1\"},\"spec\":{\"ports\":[{\"port\":80}]}}", 201);
	ck_assert_str_eq(kc_json_str(o, "spec", "type"), "ClusterIP");
	ck_assert_str_eq(kc_json_str(o, "spec", "sessionAffinity"), "None");
	ip = kc_json_str(o, "spec", "clusterIP");
	ck_assert_ptr_nonnull(ip);
	ck_assert(strncmp(ip, "10.", 3) == 0);
	a = (unsigned)strtoul(ip + 3, NULL, 10);
	b = (unsigned)strtoul(strchr(ip + 3, '.') + 1, NULL, 10);
	ck_assert(a >= 96 && a <= 111);
	(void)b;
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(kc_json_get(o,
	    "spec", "clusterIPs"), 0)), ip);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "spec", "ports"),
	    0), "protocol"), "TCP");
	ck_assert_int_eq(kc_json_int(json_object_array_get_idx(kc_json_get(o, "spec", "ports"),
	    0), 0, "targetPort"), 80);
	json_object_put(o);
	/* A replace without clusterIP keeps it; a different one is refused. */
	o = do_call(DC_PUT, "/api/v1/namespaces/default/services/s1",
	    "{\"metadata\":{\"name\":\"s1\"},\"spec\":{\"ports\":[{\"port\":81}]}}", 200);
	ck_assert_ptr_nonnull(kc_json_str(o, "spec", "clusterIP"));
	json_object_put(o);
	o = do_call(DC_PUT, "/api/v1/namespaces/default/services/s1",
	    "{\"metadata\":{\"name\":\"s1\"},\"spec\":{\"clusterIP\":\"10.96.9.9\","
	    "\"ports\":[{\"port\":81}]}}", 422);
	dct_expect_message(o, "Service \"s1\" is invalid: spec.clusterIPs[0]: Invalid value: "
	    "\"10.96.9.9\": may not change once set");
	o = do_call(DC_POST, "/api/v1/namespaces/default/services",
	    "{\"metadata\":{\"name\":\"h\"},\"spec\":{\"clusterIP\":\"None\"}}", 201);
	ck_assert_str_eq(kc_json_str(o, "spec", "clusterIP"), "None");
	json_object_put(o);
	o = do_call(DC_POST, "/api/v1/namespaces/default/services",
	    "{\"metadata\":{\"name\":\"np\"},\"spec\":{\"type\":\"NodePort\",\"ports\":"
	    "[{\"port\":80}]}}", 201);
	ck_assert_int_ge(kc_json_int(json_object_array_get_idx(kc_json_get(o, "spec", "ports"),
	    0), 0, "nodePort"), 30000);
	json_object_put(o);
	expect(DC_POST, "/api/v1/namespaces/default/services",
	    "{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"ports\":[{\"port\":0}]}}", 422);
	expect(DC_POST, "/api/v1/namespaces/default/services",
	    "{\"metadata\":{\"name\":\"bad\"},\"spec\":{}}", 422);

	/* Node ports: one Service each, in the range, only where the type has them. */
	expect(DC_POST, "/api/v1/namespaces/default/services",
	    "{\"metadata\":{\"name\":\"fixed\"},\"spec\":{\"type\":\"NodePort\",\"ports\":"
	    "[{\"port\":80,\"nodePort\":30080}]}}", 201);
	o = do_call(DC_POST, "/api/v1/namespaces/kube-system/services",
	    "{\"metadata\":{\"name\":\"again\"},\"spec\":{\"type\":\"LoadBalancer\",\"ports\":"
	    "[{\"port\":81,\"nodePort\":30080}]}}", 422);
	dct_expect_message(o, "Service \"again\" is invalid: spec.ports[0].nodePort: Invalid "
	    "value: 30080: provided port is already allocated");
	o = do_call(DC_POST, "/api/v1/namespaces/default/services",
	    "{\"metadata\":{\"name\":\"low\"},\"spec\":{\"type\":\"NodePort\",\"ports\":"
	    "[{\"port\":80,\"nodePort\":85}]}}", 422);
	dct_expect_message(o, "Service \"low\" is invalid: spec.ports[0].nodePort: Invalid "
	    "value: 85: provided port is not in the valid range. The range of valid ports is "
	    "30000-32767");
	o = do_call(DC_POST, "/api/v1/namespaces/default/services",
	    "{\"metadata\":{\"name\":\"cip\"},\"spec\":{\"ports\":"
	    "[{\"port\":80,\"nodePort\":30081}]}}", 422);
	dct_expect_message(o, "Service \"cip\" is invalid: spec.ports[0].nodePort: Forbidden: "
	    "may not be used when `type` is 'ClusterIP'");
	o = do_call(DC_POST, "/api/v1/namespaces/default/services",
	    "{\"metadata\":{\"name\":\"dup\"},\"spec\":{\"type\":\"NodePort\",\"ports\":"
	    "[{\"name\":\"a\",\"port\":80,\"nodePort\":30082},"
	    "{\"name\":\"b\",\"port\":81,\"nodePort\":30082},"
	    "{\"name\":\"c\",\"port\":82,\"nodePort\":30082,\"protocol\":\"UDP\"}]}}", 422);
	dct_expect_message(o, "Service \"dup\" is invalid: spec.ports[1].nodePort: Duplicate "
	    "value: 30082");
	/* Its own node port is not another's; leaving NodePort drops the ones it held. */
	expect(DC_PUT, "/api/v1/namespaces/default/services/fixed",
	    "{\"metadata\":{\"name\":\"fixed\"},\"spec\":{\"type\":\"NodePort\",\"ports\":"
	    "[{\"port\":80,\"nodePort\":30080}]}}", 200);
	o = do_call(DC_PUT, "/api/v1/namespaces/default/services/fixed",
	    "{\"metadata\":{\"name\":\"fixed\"},\"spec\":{\"type\":\"ClusterIP\",\"ports\":"
	    "[{\"port\":80,\"nodePort\":30080}]}}", 200);
	ck_assert_ptr_null(kc_json_get(json_object_array_get_idx(kc_json_get(o, "spec", "ports"),
	    0), "nodePort"));
	json_object_put(o);
	expect(DC_POST, "/api/v1/namespaces/kube-system/services",
	    "{\"metadata\":{\"name\":\"again\"},\"spec\":{\"type\":\"LoadBalancer\",\"ports\":"
	    "[{\"port\":81,\"nodePort\":30080}]}}", 201);
}
END_TEST

START_TEST(secrets_and_events)
{
	struct json_object *o;

	o = do_call(DC_POST, "/api/v1/namespaces/default/secrets",
	    "{\"metadata\":{\"name\":\"s\"},\"stringData\":{\"a\":\"hello\"}}", 201);
	ck_assert_str_eq(kc_json_str(o, "type"), "Opaque");
	ck_assert_str_eq(kc_json_str(o, "data", "a"), "aGVsbG8=");
	ck_assert_ptr_null(kc_json_get(o, "stringData"));
	json_object_put(o);
	expect(DC_POST, "/api/v1/namespaces/default/secrets",
	    "{\"metadata\":{\"name\":\"s2\"},\"data\":{\"a\":\"not base64!\"}}", 422);
	expect(DC_POST, "/api/v1/namespaces/default/configmaps",
	    "{\"metadata\":{\"name\":\"k\"},\"data\":{\"bad key\":\"x\"}}", 422);

	/* events.k8s.io/v1 and v1 events are one store. */
	o = do_call(DC_POST, "/apis/events.k8s.io/v1/namespaces/default/events",
	    "{\"metadata\":{\"name\":\"e1\"},\"regarding\":{\"kind\":\"Pod\",\"name\":\"p\"},"
	    "\"note\":\"hi\",\"reason\":\"Test\",\"type\":\"Normal\"}", 201);
	ck_assert_str_eq(kc_json_str(o, "apiVersion"), "events.k8s.io/v1");
	ck_assert_str_eq(kc_json_str(o, "note"), "hi");
	json_object_put(o);
	o = do_call(DC_GET, "/api/v1/namespaces/default/events/e1", NULL, 200);
	ck_assert_str_eq(kc_json_str(o, "apiVersion"), "v1");
	ck_assert_str_eq(kc_json_str(o, "message"), "hi");
	ck_assert_str_eq(kc_json_str(o, "involvedObject", "name"), "p");
	json_object_put(o);
	o = do_call(DC_GET, "/api/v1/events?fieldSelector=involvedObject.name%3Dp,"
	    "reason%3DTest", NULL, 200);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "items")), 1);
	json_object_put(o);
}
END_TEST

START_TEST(namespaces)
{
	struct json_object *o;

	expect(DC_POST, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"gone\"}}", 201);
	expect(DC_POST, "/api/v1/namespaces/gone/configmaps", "{\"metadata\":{\"name\":\"c\"}}",
	    201);
	expect(DC_POST, "/api/v1/namespaces/gone/pods", "{\"metadata\":{\"name\":\"p\"},"
	    "\"spec\":{\"nodeName\":\"n\",\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}}",
	    201);
	o = do_call(DC_DELETE, "/api/v1/namespaces/gone", NULL, 200);
	ck_assert_str_eq(kc_json_str(o, "status", "phase"), "Terminating");
	ck_assert_ptr_nonnull(kc_json_get(o, "metadata", "deletionTimestamp"));
	json_object_put(o);
	o = do_call(DC_POST, "/api/v1/namespaces/gone/configmaps",
	    "{\"metadata\":{\"name\":\"c1\"}}", 403);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "details",
	    "causes"), 0), "reason"), "NamespaceTerminating");
	dct_expect_message(o, "configmaps \"c1\" is forbidden: unable to create new content in "
	    "namespace gone because it is being terminated");
	/* The namespace controller empties it, then removes it. */
	for (int i = 0; i < 10; i++) {
		(void)timers_run(dc);
		fake_clock_advance(100);
	}
	expect(DC_GET, "/api/v1/namespaces/gone/configmaps/c", NULL, 404);
	expect(DC_GET, "/api/v1/namespaces/gone/pods/p", NULL, 404);
	expect(DC_GET, "/api/v1/namespaces/gone", NULL, 404);
	o = do_call(DC_DELETE, "/api/v1/namespaces/kube-system", NULL, 403);
	dct_expect_message(o, "namespaces \"kube-system\" is forbidden: this namespace may not "
	    "be deleted");
}
END_TEST

START_TEST(list_options)
{
	struct json_object *o, *p;
	char target[512], rv[32];

	for (int i = 0; i < 3; i++) {
		char body[128];

		(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"l%d\"}}", i);
		expect(DC_POST, "/api/v1/namespaces/default/configmaps", body, 201);
	}
	o = do_call(DC_GET, "/api/v1/namespaces/default/configmaps?limit=2", NULL, 200);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "items")), 2);
	ck_assert_int_eq(kc_json_int(o, -1, "metadata", "remainingItemCount"), 1);
	ck_assert_ptr_nonnull(kc_json_str(o, "metadata", "continue"));
	(void)kc_strlcpy(rv, dct_rv(o), sizeof(rv));
	(void)snprintf(target, sizeof(target),
	    "/api/v1/namespaces/default/configmaps?limit=2&continue=%s",
	    kc_json_str(o, "metadata", "continue"));
	json_object_put(o);
	/* A change between pages does not show: the token pins the snapshot. */
	expect(DC_POST, "/api/v1/namespaces/default/configmaps",
	    "{\"metadata\":{\"name\":\"l9\"}}", 201);
	expect(DC_DELETE, "/api/v1/namespaces/default/configmaps/l2", NULL, 200);
	p = do_call(DC_GET, target, NULL, 200);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(p, "items")), 1);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(p, "items"), 0),
	    "metadata", "name"), "l2");
	ck_assert_ptr_null(kc_json_get(p, "metadata", "continue"));
	ck_assert_str_eq(dct_rv(p), rv);
	json_object_put(p);
	dct_expect_message(do_call(DC_GET, "/api/v1/configmaps?continue=garbage", NULL, 400),
	    "continue key is not valid: invalid continue token");

	o = do_call(DC_GET, "/api/v1/configmaps?resourceVersionMatch=Exact", NULL, 422);
	dct_expect_message(o, "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: "
	    "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided");
	expect(DC_GET, "/api/v1/configmaps?resourceVersion=0&resourceVersionMatch=Exact",
	    NULL, 422);
	expect(DC_GET, "/api/v1/configmaps?resourceVersion=1&resourceVersionMatch=Sometimes",
	    NULL, 422);
	expect(DC_GET, "/api/v1/configmaps?sendInitialEvents=true", NULL, 422);
	o = do_call(DC_GET, "/api/v1/configmaps?resourceVersion=1&resourceVersionMatch=Exact",
	    NULL, 200);
	ck_assert_str_eq(dct_rv(o), "1");
	json_object_put(o);
	o = do_call(DC_GET, "/api/v1/configmaps?resourceVersion=999999", NULL, 504);
	ck_assert_str_eq(kc_json_str(o, "reason"), "Timeout");
	ck_assert_int_eq(kc_json_int(o, 0, "details", "retryAfterSeconds"), 1);
	json_object_put(o);
	expect(DC_GET, "/api/v1/configmaps?resourceVersion=x", NULL, 400);

	/* Watch options. */
	o = do_call(DC_GET, "/api/v1/configmaps?watch=true&sendInitialEvents=true&"
	    "resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", NULL, 422);
	ck_assert_str_eq(kc_json_str(o, "details", "kind"), "ListOptions");
	ck_assert_str_eq(kc_json_str(o, "details", "group"), "meta.k8s.io");
	dct_expect_message(o, "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: "
	    "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList "
	    "feature gate is enabled");
	o = do_call(DC_GET, "/api/v1/configmaps?watch=1&sendInitialEvents=true", NULL, 422);
	dct_expect_message(o, "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: "
	    "Forbidden: sendInitialEvents requires setting resourceVersionMatch to "
	    "NotOlderThan, sendInitialEvents: Forbidden: sendInitialEvents is forbidden for "
	    "watch unless the WatchList feature gate is enabled]");
	expect(DC_GET, "/api/v1/configmaps?watch=true&resourceVersion=999999", NULL, 504);
	expect(DC_GET, "/api/v1/configmaps?watch=true&fieldSelector=x%3D1", NULL, 400);
}
END_TEST

START_TEST(watch_request)
{
	struct dc_resp resp;
	struct dc_chunk *c;
	bool end;

	run(&(struct dct_call){ .method = DC_GET,
	    .target = "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=5" },
	    200, &resp);
	ck_assert_ptr_nonnull(resp.stream);
	ck_assert_str_eq(resp.content_type, "application/json");
	expect(DC_POST, "/api/v1/namespaces/default/configmaps",
	    "{\"metadata\":{\"name\":\"w\"}}", 201);
	c = resp.stream->ops->pull(resp.stream, &end);
	ck_assert_ptr_nonnull(c);
	ck_assert(strncmp(c->data, "{\"type\":\"ADDED\",\"object\":{", 26) == 0);
	chunk_unref(c);
	fake_clock_advance(5000);
	(void)timers_run(dc);
	ck_assert_ptr_null(resp.stream->ops->pull(resp.stream, &end));
	ck_assert(end);
	resp_clear(&resp);
	ck_assert_uint_eq(watchhub_count(dc->hub), 0);

	/* The deprecated form on one object. */
	run(&(struct dct_call){ .method = DC_GET,
	    .target = "/api/v1/watch/namespaces/default/configmaps/w" }, 200, &resp);
	c = resp.stream->ops->pull(resp.stream, &end);
	ck_assert_ptr_nonnull(c);
	ck_assert(strstr(c->data, "\"name\":\"w\"") != NULL);
	chunk_unref(c);
	ck_assert_ptr_null(resp.stream->ops->pull(resp.stream, &end));
	resp_clear(&resp);
}
END_TEST

/*
 * watch and allowWatchBookmarks read as kube-apiserver reads booleans:
 * the official Python client's watch=True is a watch, not a list.
 */
START_TEST(watch_param_values)
{
	static const char *const watches[] = { "True", "TRUE", "true", "1", "yes", "" };
	static const char *const lists[] = { "False", "false", "FALSE", "0" };
	struct json_object *o;
	struct dc_resp resp;
	char target[128];

	for (size_t i = 0; i < KC_ARRAY_SIZE(watches); i++) {
		(void)snprintf(target, sizeof(target), "/api/v1/namespaces/default/configmaps?"
		    "watch=%s&allowWatchBookmarks=True&timeoutSeconds=5", watches[i]);
		run(&(struct dct_call){ .method = DC_GET, .target = target }, 200, &resp);
		ck_assert_msg(resp.stream != NULL, "watch=%s", watches[i]);
		resp_clear(&resp);
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(lists); i++) {
		(void)snprintf(target, sizeof(target), "/api/v1/namespaces/default/configmaps?"
		    "watch=%s", lists[i]);
		o = run(&(struct dct_call){ .method = DC_GET, .target = target }, 200, NULL);
		ck_assert_msg(o != NULL, "watch=%s", lists[i]);
		ck_assert_str_eq(kc_json_str(o, "kind"), "ConfigMapList");
		json_object_put(o);
	}
	ck_assert_uint_eq(watchhub_count(dc->hub), 0);
}
END_TEST

START_TEST(dry_run)
{
	struct json_object *o;

	o = do_call(DC_POST, "/api/v1/namespaces/default/configmaps?dryRun=All",
	    "{\"metadata\":{\"name\":\"dry\"}}", 201);
	ck_assert_uint_eq(strlen(kc_json_str(o, "metadata", "uid")), 36);
	json_object_put(o);
	expect(DC_GET, "/api/v1/namespaces/default/configmaps/dry", NULL, 404);
	o = do_call(DC_POST, "/api/v1/namespaces/default/configmaps?dryRun=Some",
	    "{\"metadata\":{\"name\":\"dry\"}}", 422);
	dct_expect_message(o, "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported "
	    "value: []string{\"Some\"}: supported values: \"All\"");
	expect(DC_POST, "/api/v1/namespaces/default/configmaps",
	    "{\"metadata\":{\"name\":\"dry\"},\"data\":{\"a\":\"1\"}}", 201);
	o = do_call(DC_PUT, "/api/v1/namespaces/default/configmaps/dry?dryRun=All",
	    "{\"metadata\":{\"name\":\"dry\"},\"data\":{\"a\":\"2\"}}", 200);
	ck_assert_str_eq(kc_json_str(o, "data", "a"), "2");
	json_object_put(o);
	o = do_call(DC_GET, "/api/v1/namespaces/default/configmaps/dry", NULL, 200);
	ck_assert_str_eq(kc_json_str(o, "data", "a"), "1");
	json_object_put(o);
}
END_TEST

/*
 * Query parameters as apimachinery decodes options: int64 fields through
 * strconv.ParseInt ("" included), the whole ListOptions for list and watch
 * alike, every dryRun value, and DeleteOptions from the query only when
 * the request has no body.
 */
START_TEST(query_options)
{
	static const struct { const char *target; const char *msg; } bad[] = {
		{ "/api/v1/configmaps?limit=abc",
		    "strconv.ParseInt: parsing \"abc\": invalid syntax" },
		{ "/api/v1/configmaps?limit=",
		    "strconv.ParseInt: parsing \"\": invalid syntax" },
		{ "/api/v1/configmaps?limit=99999999999999999999",
		    "strconv.ParseInt: parsing \"99999999999999999999\": value out of range" },
		{ "/api/v1/configmaps?timeoutSeconds=1s",
		    "strconv.ParseInt: parsing \"1s\": invalid syntax" },
		{ "/api/v1/configmaps?watch=1&limit=x",
		    "strconv.ParseInt: parsing \"x\": invalid syntax" },
		{ "/api/v1/configmaps?watch=1&timeoutSeconds=",
		    "strconv.ParseInt: parsing \"\": invalid syntax" },
		/* timeoutSeconds comes first in ListOptions. */
		{ "/api/v1/configmaps?limit=a&timeoutSeconds=b",
		    "strconv.ParseInt: parsing \"b\": invalid syntax" },
	};
	static const struct { const char *target; const char *msg; } bad_delcol[] = {
		/* deletecollection decodes ListOptions, then DeleteOptions. */
		{ "/api/v1/namespaces/default/configmaps?limit=z&gracePeriodSeconds=y",
		    "strconv.ParseInt: parsing \"z\": invalid syntax" },
		{ "/api/v1/namespaces/default/configmaps?gracePeriodSeconds=y",
		    "strconv.ParseInt: parsing \"y\": invalid syntax" },
	};
	struct json_object *o;

	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
		o = do_call(DC_GET, bad[i].target, NULL, 400);
		ck_assert_str_eq(kc_json_str(o, "reason"), "BadRequest");
		dct_expect_message(o, bad[i].msg);
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(bad_delcol); i++) {
		o = do_call(DC_DELETE, bad_delcol[i].target, NULL, 400);
		dct_expect_message(o, bad_delcol[i].msg);
	}
	for (int i = 0; i < 3; i++) {
		char body[64];

		(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"q%d\"}}", i);
		expect(DC_POST, "/api/v1/namespaces/default/configmaps", body, 201);
	}
	/* A sign, the first of repeated values, unknown parameters ignored. */
	o = do_call(DC_GET, "/api/v1/namespaces/default/configmaps?limit=%2B2&limit=x&bogus=1",
	    NULL, 200);
	ck_assert_uint_eq(json_object_array_length(kc_json_arr_of(o, "items")), 2);
	json_object_put(o);

	o = do_call(DC_POST, "/api/v1/namespaces/default/configmaps?dryRun=All&dryRun=x",
	    "{\"metadata\":{\"name\":\"dry\"}}", 422);
	dct_expect_message(o, "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported "
	    "value: []string{\"All\", \"x\"}: supported values: \"All\"");
	o = do_call(DC_POST, "/api/v1/namespaces/default/configmaps?dryRun=",
	    "{\"metadata\":{\"name\":\"dry\"}}", 422);
	dct_expect_message(o, "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported "
	    "value: []string{\"\"}: supported values: \"All\"");
	/* Every fault of the options in one 422, in upstream's order. */
	o = do_call(DC_POST, "/api/v1/namespaces/default/configmaps?dryRun=x&"
	    "fieldValidation=Loose&fieldManager=a%01", "{\"metadata\":{\"name\":\"dry\"}}", 422);
	dct_expect_message(o, "CreateOptions.meta.k8s.io \"\" is invalid: [fieldManager: "
	    "Invalid value: \"a\\x01\": invalid character U+0001 (at position 1), dryRun: "
	    "Unsupported value: []string{\"x\"}: supported values: \"All\", fieldValidation: "
	    "Unsupported value: \"Loose\": supported values: \"\", \"Ignore\", \"Strict\", "
	    "\"Warn\"]");
	dct_put(run(&(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/configmaps/q0?fieldValidation=",
	    .ctype = "application/merge-patch+json", .body = "{\"data\":{\"k\":\"v\"}}" },
	    200, NULL));
	expect(DC_POST, "/api/v1/namespaces/default/configmaps?dryRun=All&dryRun=All",
	    "{\"metadata\":{\"name\":\"dry\"}}", 201);
	expect(DC_GET, "/api/v1/namespaces/default/configmaps/dry", NULL, 404);

	/* Without a body, the query's DeleteOptions. */
	o = do_call(DC_DELETE, "/api/v1/namespaces/default/configmaps/q0?gracePeriodSeconds=x",
	    NULL, 400);
	dct_expect_message(o, "strconv.ParseInt: parsing \"x\": invalid syntax");
	o = do_call(DC_DELETE, "/api/v1/namespaces/default/configmaps/q0?propagationPolicy=",
	    NULL, 422);
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"),
	    "propagationPolicy: Unsupported value: \"\""));
	json_object_put(o);
	expect(DC_DELETE, "/api/v1/namespaces/default/configmaps/q0?dryRun=All", NULL, 200);
	expect(DC_GET, "/api/v1/namespaces/default/configmaps/q0", NULL, 200);
	/* With one, the body alone (the Python client sends both). */
	expect(DC_DELETE, "/api/v1/namespaces/default/configmaps/q0?gracePeriodSeconds=x&"
	    "dryRun=All&propagationPolicy=Sideways", "{\"propagationPolicy\":\"Background\"}",
	    200);
	expect(DC_GET, "/api/v1/namespaces/default/configmaps/q0", NULL, 404);
	expect(DC_DELETE, "/api/v1/namespaces/default/configmaps/q1",
	    "{\"dryRun\":[\"All\"]}", 200);
	expect(DC_GET, "/api/v1/namespaces/default/configmaps/q1", NULL, 200);
	o = do_call(DC_DELETE, "/api/v1/namespaces/default/configmaps/q1",
	    "{\"dryRun\":[\"All\",\"Some\"]}", 422);
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"),
	    "dryRun: Unsupported value: []string{\"All\", \"Some\"}: supported values: \"All\""));
	json_object_put(o);
	o = do_call(DC_DELETE, "/api/v1/namespaces/default/configmaps/q1",
	    "{\"propagationPolicy\":\"\"}", 422);
	json_object_put(o);
	expect(DC_GET, "/api/v1/namespaces/default/configmaps/q1", NULL, 200);
}
END_TEST

START_TEST(tables)
{
	struct json_object *o, *cols, *row;

	expect(DC_POST, "/api/v1/namespaces/default/configmaps", "{\"metadata\":"
	    "{\"name\":\"t\"}}", 201);
	fake_clock_advance(95000);
	o = run(&(struct dct_call){ .method = DC_GET,
	    .target = "/api/v1/namespaces/default/configmaps?limit=500",
	    .accept = TABLE_ACCEPT }, 200, NULL);
	ck_assert_str_eq(kc_json_str(o, "kind"), "Table");
	ck_assert_str_eq(kc_json_str(o, "apiVersion"), "meta.k8s.io/v1");
	ck_assert_ptr_nonnull(dct_rv(o));
	cols = kc_json_get(o, "columnDefinitions");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(cols, 0), "name"), "Name");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(cols, 0), "format"), "name");
	/* The ConfigMap printer of table.c: Name, Data, Age. */
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(cols, 1), "name"), "Data");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(cols, 2), "name"), "Age");
	row = json_object_array_get_idx(kc_json_get(o, "rows"), 0);
	ck_assert_int_eq(json_object_get_int(json_object_array_get_idx(kc_json_get(row,
	    "cells"), 1)), 0);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(kc_json_get(row,
	    "cells"), 2)), "95s");
	ck_assert_str_eq(kc_json_str(row, "object", "metadata", "name"), "t");
	json_object_put(o);
	o = run(&(struct dct_call){ .method = DC_GET,
	    .target = "/api/v1/namespaces/default/configmaps/t?includeObject=None",
	    .accept = "application/json;as=Table;v=v1beta1;g=meta.k8s.io" }, 200, NULL);
	ck_assert_str_eq(kc_json_str(o, "apiVersion"), "meta.k8s.io/v1beta1");
	row = json_object_array_get_idx(kc_json_get(o, "rows"), 0);
	ck_assert_ptr_null(kc_json_get(row, "object"));
	json_object_put(o);
	json_object_put(run(&(struct dct_call){ .method = DC_GET,
	    .target = "/api/v1/namespaces/default/configmaps",
	    .accept = "application/vnd.kubernetes.protobuf" }, 406, NULL));
}
END_TEST

START_TEST(ages)
{
	static const struct { int64_t s; const char *want; } cases[] = {
		{ -5, "<invalid>" }, { -2, "<invalid>" }, { -1, "0s" }, { 0, "0s" },
		{ 95, "95s" }, { 119, "119s" }, { 120, "2m" }, { 312, "5m12s" },
		{ 599, "9m59s" }, { 600, "10m" }, { 2820, "47m" }, { 10799, "179m" },
		{ 10800, "3h" }, { 18420, "5h7m" }, { 28799, "7h59m" }, { 28800, "8h" },
		{ 61200, "17h" }, { 172799, "47h" }, { 172800, "2d" }, { 273600, "3d4h" },
		{ 691199, "7d23h" }, { 691200, "8d" }, { 3542400, "41d" },
		{ 63071999, "729d" }, { 63072000, "2y" }, { 95644800, "3y12d" }, { 95731200, "3y13d" },
		{ 252288000, "8y" }, { 283824000, "9y" },
	};
	char buf[32];

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		api_age_format(cases[i].s, buf, sizeof(buf));
		ck_assert_msg(strcmp(buf, cases[i].want) == 0, "%lld: %s, want %s",
		    (long long)cases[i].s, buf, cases[i].want);
	}
	api_age_of(NULL, 0, buf, sizeof(buf));
	ck_assert_str_eq(buf, "<unknown>");
	api_age_of("yesterday", 0, buf, sizeof(buf));
	ck_assert_str_eq(buf, "<invalid>");
	api_age_of("2026-01-01T00:00:00Z", 1767225600 + 3600, buf, sizeof(buf));
	ck_assert_str_eq(buf, "60m");
}
END_TEST

/* Whether status.userInfo.groups of a review names 'group'. */
static bool
review_has_group(const struct json_object *review, const char *group)
{
	struct json_object *g = kc_json_get(review, "status", "userInfo", "groups");
	size_t n = json_object_is_type(g, json_type_array) ? json_object_array_length(g) : 0;

	for (size_t i = 0; i < n; i++)
		if (strcmp(json_object_get_string(json_object_array_get_idx(g, i)), group) == 0)
			return true;
	return false;
}

START_TEST(impersonate_and_authorize)
{
	static const char review[] = "{\"apiVersion\":\"authentication.k8s.io/v1\","
	    "\"kind\":\"SelfSubjectReview\"}";
	static const char *const cm = "/api/v1/namespaces/default/configmaps/i";
	struct json_object *o;

	expect(DC_POST, "/api/v1/namespaces/default/configmaps", "{\"metadata\":"
	    "{\"name\":\"i\"}}", 201);
	/* Without an authorizer, other users may do everything. */
	o = run(&(struct dct_call){ .method = DC_GET, .target = cm, .token = "alice-token" },
	    200, NULL);
	json_object_put(o);

	/* With RBAC (authz.c), and its whoami: SelfSubjectReview. */
	ck_assert_int_eq(authz_init(dc), 0);
	o = run(&(struct dct_call){ .method = DC_POST,
	    .target = "/apis/authentication.k8s.io/v1/selfsubjectreviews", .body = review },
	    201, NULL);
	ck_assert_str_eq(kc_json_str(o, "status", "userInfo", "username"), "admin");
	json_object_put(o);
	/* system:masters impersonates bob: the server sees bob, not admin. */
	o = run(&(struct dct_call){ .method = DC_POST,
	    .target = "/apis/authentication.k8s.io/v1/selfsubjectreviews", .body = review,
	    .imp_user = "bob" }, 201, NULL);
	ck_assert_str_eq(kc_json_str(o, "status", "userInfo", "username"), "bob");
	ck_assert(!review_has_group(o, "system:masters"));
	json_object_put(o);
	/* bob has no rights: as bob, admin's read is refused. */
	o = run(&(struct dct_call){ .method = DC_GET, .target = cm }, 200, NULL);
	json_object_put(o);
	o = run(&(struct dct_call){ .method = DC_GET, .target = cm, .imp_user = "bob" },
	    403, NULL);
	dct_expect_message(o, "configmaps \"i\" is forbidden: User \"bob\" cannot get "
	    "resource \"configmaps\" in API group \"\" in the namespace \"default\"");
	/* And alice may not impersonate anyone. */
	o = run(&(struct dct_call){ .method = DC_GET, .target = cm, .token = "alice-token",
	    .imp_user = "bob" }, 403, NULL);
	dct_expect_message(o, "users \"bob\" is forbidden: User \"alice\" cannot "
	    "impersonate resource \"users\" in API group \"\" at the cluster scope");
	authz_fini(dc);
}
END_TEST

static bool
deny_alice(struct dc *d, const struct dc_attrs *at, char *reason, size_t size)
{
	(void)d;
	if (strcmp(at->user->name, "alice") != 0)
		return true;
	(void)snprintf(reason, size, "no RBAC policy matched");
	return false;
}

START_TEST(authorizer_hook)
{
	struct json_object *o;

	dc->hooks.authorize = deny_alice;
	o = run(&(struct dct_call){ .method = DC_GET,
	    .target = "/api/v1/namespaces/default/configmaps/x", .token = "alice-token" },
	    403, NULL);
	ck_assert_str_eq(kc_json_str(o, "details", "kind"), "configmaps");
	dct_expect_message(o, "configmaps \"x\" is forbidden: User \"alice\" cannot get resource "
	    "\"configmaps\" in API group \"\" in the namespace \"default\": no RBAC policy "
	    "matched");
	o = run(&(struct dct_call){ .method = DC_GET, .target = "/api/v1/nodes",
	    .token = "alice-token" }, 403, NULL);
	dct_expect_message(o, "nodes is forbidden: User \"alice\" cannot list resource \"nodes\" "
	    "in API group \"\" at the cluster scope: no RBAC policy matched");
	o = run(&(struct dct_call){ .method = DC_GET, .target = "/api", .token = "alice-token" },
	    403, NULL);
	dct_expect_message(o, "forbidden: User \"alice\" cannot get path \"/api\": no RBAC policy "
	    "matched");
	/* system:masters is never asked about. */
	expect(DC_GET, "/api/v1/nodes", NULL, 200);
	dc->hooks.authorize = NULL;
}
END_TEST

Suite *
dc_api_suite(void)
{
	Suite *s = suite_create("dc_api");
	TCase *tc = tcase_create("api");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, health_version_auth);
	tcase_add_test(tc, bootstrap);
	tcase_add_test(tc, create_get_list);
	tcase_add_test(tc, names);
	tcase_add_test(tc, bodies);
	tcase_add_test(tc, update_semantics);
	tcase_add_test(tc, custom_resources);
	tcase_add_test(tc, patches);
	tcase_add_test(tc, deletion);
	tcase_add_test(tc, pods);
	tcase_add_test(tc, services);
	tcase_add_test(tc, secrets_and_events);
	tcase_add_test(tc, namespaces);
	tcase_add_test(tc, list_options);
	tcase_add_test(tc, watch_request);
	tcase_add_test(tc, dry_run);
	tcase_add_test(tc, query_options);
	tcase_add_test(tc, tables);
	tcase_add_test(tc, ages);
	tcase_add_test(tc, impersonate_and_authorize);
	tcase_add_test(tc, watch_param_values);
	tcase_add_test(tc, authorizer_hook);
	suite_add_tcase(s, tc);
	return s;
}

/*
 * test_dc_crd.c: devcluster/crd.c, driven through api_handle() as http.c
 * drives it: CRD validation, the naming and establishing controllers,
 * type registration and removal, the custom resource write pipeline
 * (fieldValidation, pruning, defaults, schema validation, status
 * subresource), versions and conversion, Tables, field selectors, the
 * scale subresource, CRD deletion, restarts and the SSA schema lookup.
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

#include "../../devcluster/fieldmanager.h"
#include "../../devcluster/table.h"
#include "dc_testutil.h"
#include "testutil.h"

#define TABLE_ACCEPT "application/json;as=Table;v=v1;g=meta.k8s.io," \
	"application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
#define CRDS	"/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
#define RUNS	"/apis/trainyard.dev/v1beta1/namespaces/default/runs"
#define RUNS_A	"/apis/trainyard.dev/v1alpha1/namespaces/default/runs"
#define NOW_MS	68471200000ull	/* the fake wall clock: 2026-01-15T10:00:00Z */
#define NOW	"2026-01-15T10:00:00Z"

static struct dc *dc;

static void
setup(void)
{
	fake_clock_install(NOW_MS);
	dc = dct_new(NULL);
	ck_assert_int_eq(crd_init(dc), 0);
	ck_assert_int_eq(convwebhook_plugin.init(dc, NULL, NULL), 0);
}

static void
teardown(void)
{
	dc = api_free(dc);
	fake_clock_uninstall();
}

/*
 * Runs a request and checks its status; returns the parsed JSON body
 * (NULL for text), and with 'out' hands over the whole reply too.
 */
static struct json_object *
run(const struct dct_call *c, int want, struct dc_resp *out)
{
	return dct_run(dc, c, want, out);
}

static struct json_object *
call(enum dc_method m, const char *target, const char *body, int want)
{
	return run(&(struct dct_call){ .method = m, .target = target, .body = body }, want,
	    NULL);
}

static void
expect(enum dc_method m, const char *target, const char *body, int want)
{
	dct_put(call(m, target, body, want));
}

/* POSTs a YAML fixture of tests/fixtures/crd (or another directory). */
static struct json_object *
post_fixture(const char *target, const char *fixture, int want)
{
	char *text = tu_fixture(fixture, NULL);
	struct json_object *o = run(&(struct dct_call){ .method = DC_POST, .target = target,
	    .body = text, .ctype = "application/yaml" }, want, NULL);

	kc_free(text);
	return o;
}

static void
add_fixture(const char *target, const char *fixture)
{
	struct json_object *o = post_fixture(target, fixture, 201);

	json_object_put(o);
}

static void
add_runs_crd(void)
{
	add_fixture(CRDS, "crd/run-crd.yaml");
}

static void
check_str(const struct json_object *o, const char *want, const char *what)
{
	const char *got = kc_json_str(o, what);

	ck_assert_msg(got != NULL && strcmp(got, want) == 0, "%s: got %s, want %s", what,
	    got != NULL ? got : "(null)", want);
}

static const struct json_object *
cond(const struct json_object *crd, const char *type)
{
	const struct json_object *conds = kc_json_get(crd, "status", "conditions");

	for (size_t i = 0; i < json_object_array_length(conds); i++)
		if (strcmp(kc_json_str(json_object_array_get_idx(conds, i), "type"), type) == 0)
			return json_object_array_get_idx(conds, i);
	return NULL;
}

static void
expect_cond(const struct json_object *crd, const char *type, const char *status,
    const char *reason, const char *message)
{
	const struct json_object *c = cond(crd, type);

	ck_assert_msg(c != NULL, "no %s condition", type);
	check_str(c, status, "status");
	check_str(c, reason, "reason");
	check_str(c, message, "message");
	ck_assert_ptr_nonnull(kc_json_str(c, "lastTransitionTime"));
}

static const char *
header(const struct dc_resp *resp, size_t i)
{
	ck_assert_uint_lt(i, resp->nheaders);
	ck_assert_str_eq(resp->headers[i].name, "Warning");
	return resp->headers[i].value;
}

/* Drains the timers (the cleanup controller) until none is due. */
static void
settle(void)
{
	for (int i = 0; i < 50 && timers_run(dc) > 0; i++)
		fake_clock_advance(100);
	fake_clock_advance(200);
	(void)timers_run(dc);
}

START_TEST(crd_status_and_discovery)
{
	struct json_object *o, *d, *res, *put;
	char *text;
	size_t n;

	o = post_fixture(CRDS, "crd/run-crd.yaml", 201);
	ck_assert_int_eq(kc_json_int(o, 0, "metadata", "generation"), 1);
	expect_cond(o, "NamesAccepted", "True", "NoConflicts", "no conflicts found");
	expect_cond(o, "Established", "True", "InitialNamesAccepted",
	    "the initial names have been accepted");
	check_str(cond(o, "Established"), NOW, "lastTransitionTime");
	check_str(kc_json_get(o, "status", "acceptedNames"), "runs", "plural");
	check_str(kc_json_get(o, "status", "acceptedNames"), "RunList", "listKind");
	ck_assert_str_eq(json_object_to_json_string_ext(kc_json_get(o, "status"),
	    JSON_C_TO_STRING_PLAIN), "{\"conditions\":[{\"type\":\"NamesAccepted\","
	    "\"status\":\"True\",\"lastTransitionTime\":\"" NOW "\",\"reason\":\"NoConflicts\","
	    "\"message\":\"no conflicts found\"},{\"type\":\"Established\",\"status\":\"True\","
	    "\"lastTransitionTime\":\"" NOW "\",\"reason\":\"InitialNamesAccepted\","
	    "\"message\":\"the initial names have been accepted\"}],\"acceptedNames\":"
	    "{\"plural\":\"runs\",\"singular\":\"run\",\"shortNames\":[\"tr\"],\"kind\":\"Run\","
	    "\"listKind\":\"RunList\",\"categories\":[\"trainyard\"]},\"storedVersions\":"
	    "[\"v1beta1\"]}");
	/* The conversion default. */
	check_str(kc_json_get(o, "spec", "conversion"), "None", "strategy");
	json_object_put(o);

	/* Discovery: both served versions, the subresources, not v1. */
	d = call(DC_GET, "/apis/trainyard.dev/v1beta1", NULL, 200);
	res = kc_json_get(d, "resources");
	ck_assert_uint_eq(json_object_array_length(res), 3);
	check_str(json_object_array_get_idx(res, 0), "runs", "name");
	ck_assert_str_eq(json_object_to_json_string_ext(json_object_array_get_idx(res, 0),
	    JSON_C_TO_STRING_PLAIN), "{\"name\":\"runs\",\"singularName\":\"run\","
	    "\"namespaced\":true,\"kind\":\"Run\",\"verbs\":[\"create\",\"delete\","
	    "\"deletecollection\",\"get\",\"list\",\"patch\",\"update\",\"watch\"],"
	    "\"shortNames\":[\"tr\"],\"categories\":[\"trainyard\"]}");
	check_str(json_object_array_get_idx(res, 1), "runs/scale", "name");
	check_str(json_object_array_get_idx(res, 1), "autoscaling", "group");
	check_str(json_object_array_get_idx(res, 1), "Scale", "kind");
	check_str(json_object_array_get_idx(res, 2), "runs/status", "name");
	json_object_put(d);
	expect(DC_GET, "/apis/trainyard.dev/v1alpha1", NULL, 200);
	expect(DC_GET, "/apis/trainyard.dev/v1", NULL, 404);
	expect(DC_GET, "/apis/trainyard.dev/v1/namespaces/default/runs", NULL, 404);
	d = call(DC_GET, "/apis/trainyard.dev", NULL, 200);
	check_str(kc_json_get(d, "preferredVersion"), "v1beta1", "version");
	json_object_put(d);

	/* A new storage version joins storedVersions; Established keeps its time. */
	fake_clock_advance(60000);
	o = call(DC_GET, CRDS "/runs.trainyard.dev", NULL, 200);
	text = kc_strdup(json_object_to_json_string(o));
	ck_assert_ptr_nonnull(text);
	json_object_put(o);
	ck_assert_int_eq(kc_json_parse(text, strlen(text), &put, NULL), 0);
	kc_free(text);
	{
		struct json_object *vs = kc_json_get(put, "spec", "versions");

		ck_assert_int_eq(kc_json_set_bool(json_object_array_get_idx(vs, 0), "storage",
		    true), 0);
		ck_assert_int_eq(kc_json_set_bool(json_object_array_get_idx(vs, 1), "storage",
		    false), 0);
	}
	o = call(DC_PUT, CRDS "/runs.trainyard.dev", json_object_to_json_string(put), 200);
	json_object_put(put);
	ck_assert_int_eq(kc_json_int(o, 0, "metadata", "generation"), 2);
	n = json_object_array_length(kc_json_get(o, "status", "storedVersions"));
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	    kc_json_get(o, "status", "storedVersions"), 1)), "v1alpha1");
	check_str(cond(o, "Established"), NOW, "lastTransitionTime");
	json_object_put(o);
	ck_assert(registry_find(dc, "trainyard.dev", "v1alpha1", "runs")->flags &
	    DC_RT_STORAGE);
	ck_assert(!(registry_find(dc, "trainyard.dev", "v1beta1", "runs")->flags &
	    DC_RT_STORAGE));

	/* A stored version stays in spec.versions until storedVersions drops it. */
	o = run(&(struct dct_call){ .method = DC_PATCH, .target = CRDS "/runs.trainyard.dev",
	    .ctype = "application/json-patch+json",
	    .body = "[{\"op\":\"remove\",\"path\":\"/spec/versions/1\"}]" }, 422, NULL);
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"), "status.storedVersions[0]: "
	    "Invalid value: \"v1beta1\": must appear in spec.versions"));
	json_object_put(o);
	/* From 1.33 the message explains the storage migration. */
	(void)kc_strlcpy(dc->minor, "33", sizeof(dc->minor));
	o = run(&(struct dct_call){ .method = DC_PATCH, .target = CRDS "/runs.trainyard.dev",
	    .ctype = "application/json-patch+json",
	    .body = "[{\"op\":\"remove\",\"path\":\"/spec/versions/1\"}]" }, 422, NULL);
	ck_assert_str_eq(kc_json_str(o, "message"), "CustomResourceDefinition.apiextensions.k8s.io "
	    "\"runs.trainyard.dev\" is invalid: status.storedVersions[0]: Invalid value: "
	    "\"v1beta1\": missing from spec.versions; v1beta1 was previously a storage version, "
	    "and must remain in spec.versions until a storage migration ensures no data remains "
	    "persisted in v1beta1 and removes v1beta1 from status.storedVersions");
	json_object_put(o);
	(void)kc_strlcpy(dc->minor, "32", sizeof(dc->minor));
	/* The status subresource takes a trimmed list; the server never trims it. */
	o = run(&(struct dct_call){ .method = DC_PATCH,
	    .target = CRDS "/runs.trainyard.dev/status",
	    .ctype = "application/merge-patch+json",
	    .body = "{\"status\":{\"storedVersions\":[\"v1alpha1\"]}}" }, 200, NULL);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "status", "storedVersions")),
	    1);
	json_object_put(o);
	o = run(&(struct dct_call){ .method = DC_PATCH, .target = CRDS "/runs.trainyard.dev",
	    .ctype = "application/json-patch+json",
	    .body = "[{\"op\":\"remove\",\"path\":\"/spec/versions/1\"}]" }, 200, NULL);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	    kc_json_get(o, "status", "storedVersions"), 0)), "v1alpha1");
	json_object_put(o);
}
END_TEST

START_TEST(crd_validation)
{
	struct json_object *o;

	/* Two storage versions: 422 with causes. */
	o = call(DC_POST, CRDS, "{\"apiVersion\":\"apiextensions.k8s.io/v1\","
	    "\"kind\":\"CustomResourceDefinition\",\"metadata\":{\"name\":\"as.example.com\"},"
	    "\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\",\"names\":"
	    "{\"plural\":\"as\",\"kind\":\"A\"},\"versions\":[{\"name\":\"v1\",\"served\":true,"
	    "\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}}},"
	    "{\"name\":\"v2\",\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":"
	    "{\"type\":\"object\"}}}]}}", 422);
	check_str(o, "Invalid", "reason");
	check_str(kc_json_get(o, "details"), "CustomResourceDefinition", "kind");
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"),
	    "CustomResourceDefinition.apiextensions.k8s.io \"as.example.com\" is invalid"));
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"),
	    "must have exactly one version marked as storage version"));
	json_object_put(o);
	/* The name must be plural.group; reported once. */
	o = call(DC_POST, CRDS, "{\"metadata\":{\"name\":\"wrong.example.com\"},"
	    "\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\",\"names\":"
	    "{\"plural\":\"as\",\"kind\":\"A\"},\"versions\":[{\"name\":\"v1\",\"served\":true,"
	    "\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}}}]}}", 422);
	dct_expect_message(o, "CustomResourceDefinition.apiextensions.k8s.io \"wrong.example.com\" "
	    "is invalid: metadata.name: Invalid value: \"wrong.example.com\": must be "
	    "spec.names.plural+\".\"+spec.group");
	/* A field of the wrong JSON type: 400 from the decoder. */
	o = call(DC_POST, CRDS, "{\"metadata\":{\"name\":\"as.example.com\"},"
	    "\"spec\":{\"group\":\"example.com\",\"versions\":\"v1\"}}", 400);
	check_str(o, "BadRequest", "reason");
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"),
	    "cannot be handled as a CustomResourceDefinition"));
	json_object_put(o);
	/* Nothing was stored or registered. */
	expect(DC_GET, CRDS "/as.example.com", NULL, 404);
	ck_assert_ptr_null(registry_find_any(dc, "example.com", "as"));
	/* Defaults: singular and listKind from the kind. */
	o = call(DC_POST, CRDS, "{\"metadata\":{\"name\":\"bees.example.com\"},"
	    "\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\",\"names\":"
	    "{\"plural\":\"bees\",\"kind\":\"Bee\"},\"versions\":[{\"name\":\"v1\",\"served\":true,"
	    "\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}}}]}}", 201);
	check_str(kc_json_get(o, "spec", "names"), "bee", "singular");
	check_str(kc_json_get(o, "spec", "names"), "BeeList", "listKind");
	json_object_put(o);
	ck_assert_ptr_nonnull(registry_find(dc, "example.com", "v1", "bees"));
	/* Updates: the group is immutable. */
	o = run(&(struct dct_call){ .method = DC_PATCH, .target = CRDS "/bees.example.com",
	    .body = "{\"spec\":{\"group\":\"example.org\"}}",
	    .ctype = "application/merge-patch+json" }, 422, NULL);
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"),
	    "spec.group: Invalid value: \"example.org\": field is immutable"));
	json_object_put(o);
}
END_TEST

START_TEST(crd_name_conflicts)
{
	struct json_object *o;

	add_runs_crd();
	o = call(DC_POST, CRDS, "{\"metadata\":{\"name\":\"jobs.trainyard.dev\"},"
	    "\"spec\":{\"group\":\"trainyard.dev\",\"scope\":\"Namespaced\",\"names\":"
	    "{\"plural\":\"jobs\",\"kind\":\"Run\",\"listKind\":\"JobList\","
	    "\"shortNames\":[\"tr\",\"jb\"]},\"versions\":[{\"name\":\"v1\",\"served\":true,"
	    "\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\"}}}]}}", 201);
	expect_cond(o, "NamesAccepted", "False", "NameConflict",
	    "[\"run\" is already in use, \"tr\" is already in use, \"Run\" is already "
	    "in use]");
	expect_cond(o, "Established", "False", "NotAccepted", "not all names are accepted");
	check_str(kc_json_get(o, "status", "acceptedNames"), "jobs", "plural");
	check_str(kc_json_get(o, "status", "acceptedNames"), "", "kind");
	ck_assert_ptr_null(kc_json_get(o, "status", "acceptedNames", "shortNames"));
	json_object_put(o);
	/* Neither condition holds: not served. */
	ck_assert_ptr_null(registry_find(dc, "trainyard.dev", "v1", "jobs"));
	expect(DC_GET, "/apis/trainyard.dev/v1/namespaces/default/jobs", NULL, 404);

	/* The runs CRD goes; the naming controller then accepts jobs. */
	expect(DC_DELETE, CRDS "/runs.trainyard.dev", NULL, 200);
	settle();
	expect(DC_GET, CRDS "/runs.trainyard.dev", NULL, 404);
	o = call(DC_GET, CRDS "/jobs.trainyard.dev", NULL, 200);
	expect_cond(o, "NamesAccepted", "True", "NoConflicts", "no conflicts found");
	expect_cond(o, "Established", "True", "InitialNamesAccepted",
	    "the initial names have been accepted");
	check_str(kc_json_get(o, "status", "acceptedNames"), "Run", "kind");
	json_object_put(o);
	ck_assert_ptr_nonnull(registry_find(dc, "trainyard.dev", "v1", "jobs"));
	expect(DC_GET, "/apis/trainyard.dev/v1/namespaces/default/jobs", NULL, 200);
}
END_TEST

START_TEST(cr_field_validation)
{
	static const char body[] = "{\"apiVersion\":\"trainyard.dev/v1beta1\",\"kind\":\"Run\","
	    "\"metadata\":{\"name\":\"%s\",\"foo\":1},\"spec\":{\"image\":\"i\",\"gpus\":8,"
	    "\"env\":[{\"name\":\"A\",\"x\":1}]}}";
	struct dc_resp resp;
	struct json_object *o;
	char text[512];

	add_runs_crd();
	/* Strict: 400 naming every unknown field. */
	(void)snprintf(text, sizeof(text), body, "s");
	o = run(&(struct dct_call){ .method = DC_POST, .target = RUNS "?fieldValidation=Strict",
	    .body = text }, 400, NULL);
	dct_expect_message(o, "Run in version \"v1beta1\" cannot be handled as a Run: strict "
	    "decoding error: unknown field \"metadata.foo\", unknown field \"spec.env[0].x\", "
	    "unknown field \"spec.gpus\"");
	expect(DC_GET, RUNS "/s", NULL, 404);
	/* Warn (also the default): pruned, one warning per field. */
	(void)snprintf(text, sizeof(text), body, "w");
	o = run(&(struct dct_call){ .method = DC_POST, .target = RUNS, .body = text }, 201, &resp);
	ck_assert_uint_eq(resp.nheaders, 3);
	ck_assert_str_eq(header(&resp, 0), "299 - \"unknown field \\\"metadata.foo\\\"\"");
	ck_assert_str_eq(header(&resp, 1), "299 - \"unknown field \\\"spec.env[0].x\\\"\"");
	ck_assert_str_eq(header(&resp, 2), "299 - \"unknown field \\\"spec.gpus\\\"\"");
	resp_clear(&resp);
	ck_assert_ptr_null(kc_json_get(o, "spec", "gpus"));
	ck_assert_ptr_null(kc_json_get(o, "metadata", "foo"));
	ck_assert_int_eq(json_object_object_length(json_object_array_get_idx(
	    kc_json_get(o, "spec", "env"), 0)), 1);
	/* Defaults of the request's version. */
	ck_assert_int_eq(kc_json_int(o, 0, "spec", "nodes"), 1);
	check_str(kc_json_get(o, "spec"), "Train", "mode");
	json_object_put(o);
	/* Ignore: pruned silently. */
	(void)snprintf(text, sizeof(text), body, "i");
	o = run(&(struct dct_call){ .method = DC_POST, .target = RUNS "?fieldValidation=Ignore",
	    .body = text }, 201, &resp);
	ck_assert_uint_eq(resp.nheaders, 0);
	resp_clear(&resp);
	ck_assert_ptr_null(kc_json_get(o, "spec", "gpus"));
	json_object_put(o);
	/* An unknown directive: 422 from the options. */
	o = run(&(struct dct_call){ .method = DC_POST, .target = RUNS "?fieldValidation=Loud",
	    .body = text }, 422, NULL);
	dct_expect_message(o, "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: "
	    "Unsupported value: \"Loud\": supported values: \"\", \"Ignore\", \"Strict\", "
	    "\"Warn\"");
	/* Patches are checked too. */
	o = run(&(struct dct_call){ .method = DC_PATCH, .target = RUNS "/w?fieldValidation=Strict",
	    .body = "{\"spec\":{\"extra\":true}}", .ctype = "application/merge-patch+json" },
	    400, NULL);
	dct_expect_message(o, "Run in version \"v1beta1\" cannot be handled as a Run: strict "
	    "decoding error: unknown field \"spec.extra\"");
}
END_TEST

START_TEST(cr_schema_validation)
{
	struct json_object *o, *causes;

	add_runs_crd();
	o = post_fixture(RUNS, "crd/run-bad.yaml", 422);
	check_str(o, "Invalid", "reason");
	ck_assert_str_eq(kc_json_str(o, "message"), "Run.trainyard.dev \"bad\" is invalid: "
	    "[spec.nodes: Invalid value: 0: spec.nodes in body should be greater than or "
	    "equal to 1, spec.mode: Unsupported value: \"Sleep\": supported values: "
	    "\"Train\", \"Eval\"]");
	check_str(kc_json_get(o, "details"), "Run", "kind");
	check_str(kc_json_get(o, "details"), "trainyard.dev", "group");
	causes = kc_json_get(o, "details", "causes");
	ck_assert_uint_eq(json_object_array_length(causes), 2);
	check_str(json_object_array_get_idx(causes, 0), "FieldValueInvalid", "reason");
	check_str(json_object_array_get_idx(causes, 0), "spec.nodes", "field");
	check_str(json_object_array_get_idx(causes, 1), "FieldValueNotSupported", "reason");
	json_object_put(o);
	/* Required fields, and CR names are DNS-1123 subdomains. */
	o = call(DC_POST, RUNS, "{\"metadata\":{\"name\":\"Bad_Name\"},\"spec\":{}}", 422);
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"), "metadata.name: Invalid "
	    "value: \"Bad_Name\": a lowercase RFC 1123 subdomain"));
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"),
	    "spec.image: Required value"));
	json_object_put(o);
	o = call(DC_POST, RUNS, "{\"metadata\":{\"name\":\"nospec\"}}", 422);
	dct_expect_message(o, "Run.trainyard.dev \"nospec\" is invalid: spec: Required value");
	/* A valid one, then an invalid update. */
	o = post_fixture(RUNS, "crd/run-r1.yaml", 201);
	json_object_put(o);
	o = run(&(struct dct_call){ .method = DC_PATCH, .target = RUNS "/r1",
	    .body = "{\"spec\":{\"nodes\":65}}", .ctype = "application/merge-patch+json" },
	    422, NULL);
	dct_expect_message(o, "Run.trainyard.dev \"r1\" is invalid: spec.nodes: Invalid value: "
	    "65: spec.nodes in body should be less than or equal to 64");
	/* A patch that removes a defaulted field gets it back. */
	o = run(&(struct dct_call){ .method = DC_PATCH, .target = RUNS "/r1",
	    .body = "{\"spec\":{\"mode\":null}}", .ctype = "application/merge-patch+json" },
	    200, NULL);
	check_str(kc_json_get(o, "spec"), "Train", "mode");
	json_object_put(o);
	/* Strategic merge patch: 415 for custom resources. */
	o = run(&(struct dct_call){ .method = DC_PATCH, .target = RUNS "/r1",
	    .body = "{\"spec\":{\"nodes\":2}}",
	    .ctype = "application/strategic-merge-patch+json" }, 415, NULL);
	dct_expect_message(o, "the body of the request was in an unknown format - accepted media "
	    "types include: application/json-patch+json, application/merge-patch+json, "
	    "application/apply-patch+yaml");
}
END_TEST

START_TEST(cr_status_subresource)
{
	struct json_object *o;
	char body[512];
	const char *rv;

	add_runs_crd();
	o = call(DC_POST, RUNS, "{\"metadata\":{\"name\":\"r1\"},\"spec\":{\"image\":\"i\"},"
	    "\"status\":{\"phase\":\"Hacked\"}}", 201);
	ck_assert_ptr_null(kc_json_get(o, "status"));
	ck_assert_int_eq(kc_json_int(o, 0, "metadata", "generation"), 1);
	json_object_put(o);
	/* /status changes status only, generation stays. */
	o = run(&(struct dct_call){ .method = DC_PATCH, .target = RUNS "/r1/status",
	    .body = "{\"spec\":{\"nodes\":9},\"metadata\":{\"labels\":{\"a\":\"b\"}},"
	    "\"status\":{\"phase\":\"Running\"}}", .ctype = "application/merge-patch+json" },
	    200, NULL);
	check_str(kc_json_get(o, "status"), "Running", "phase");
	ck_assert_int_eq(kc_json_int(o, 0, "spec", "nodes"), 1);
	ck_assert_ptr_null(kc_json_get(o, "metadata", "labels"));
	ck_assert_int_eq(kc_json_int(o, 0, "metadata", "generation"), 1);
	rv = dct_rv(o);
	/* The main resource keeps the stored status; spec changes bump generation. */
	(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"r1\","
	    "\"resourceVersion\":\"%s\"},\"spec\":{\"image\":\"i\",\"nodes\":3},"
	    "\"status\":{\"phase\":\"Gone\"}}", rv);
	json_object_put(o);
	o = call(DC_PUT, RUNS "/r1", body, 200);
	check_str(kc_json_get(o, "status"), "Running", "phase");
	ck_assert_int_eq(kc_json_int(o, 0, "metadata", "generation"), 2);
	json_object_put(o);
	/* Metadata-only changes do not. */
	o = run(&(struct dct_call){ .method = DC_PATCH, .target = RUNS "/r1",
	    .body = "{\"metadata\":{\"labels\":{\"team\":\"a\"}}}",
	    .ctype = "application/merge-patch+json" }, 200, NULL);
	ck_assert_int_eq(kc_json_int(o, 0, "metadata", "generation"), 2);
	json_object_put(o);
	/* The status is validated too. */
	o = run(&(struct dct_call){ .method = DC_PATCH, .target = RUNS "/r1/status",
	    .body = "{\"status\":{\"readyNodes\":\"many\"}}",
	    .ctype = "application/merge-patch+json" }, 422, NULL);
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"), "status.readyNodes"));
	json_object_put(o);
	/* Without a status subresource /status is 404. */
	add_fixture(CRDS, "crd/resourceprofile-crd.yaml");
	add_fixture("/apis/trainyard.dev/v1alpha1/resourceprofiles", "crd/profile-h100.yaml");
	expect(DC_GET, "/apis/trainyard.dev/v1alpha1/resourceprofiles/h100x8/status", NULL,
	    404);
}
END_TEST

START_TEST(cr_versions)
{
	struct dc_resp resp;
	struct json_object *o;
	const struct json_object *stored;
	struct dc_rtype *alpha;
	struct dc_stream *s = NULL;
	struct kc_status st = { 0 };
	bool end = false;
	struct dc_chunk *c;
	char *line;

	add_runs_crd();
	/* The deprecated version warns on every request. */
	o = post_fixture(RUNS_A, "crd/run-r2-v1alpha1.yaml", 201);
	json_object_put(o);
	o = run(&(struct dct_call){ .method = DC_GET, .target = RUNS_A "/r2" }, 200, &resp);
	ck_assert_uint_eq(resp.nheaders, 1);
	ck_assert_str_eq(header(&resp, 0), "299 - \"trainyard.dev/v1alpha1 Run is deprecated; "
	    "use trainyard.dev/v1beta1 Run\"");
	resp_clear(&resp);
	/* Read in v1alpha1: v1alpha1's defaults only. */
	check_str(o, "trainyard.dev/v1alpha1", "apiVersion");
	check_str(kc_json_get(o, "spec"), "Eval", "mode");
	ck_assert_int_eq(kc_json_int(o, 0, "spec", "nodes"), 1);
	json_object_put(o);
	/* Stored in the storage version. */
	stored = coll_get(registry_find(dc, "trainyard.dev", "v1beta1", "runs")->coll,
	    "default", "r2");
	ck_assert_ptr_nonnull(stored);
	check_str(stored, "trainyard.dev/v1beta1", "apiVersion");
	/* v1beta1 applies its own defaults on read. */
	o = run(&(struct dct_call){ .method = DC_POST, .target = RUNS_A, .body =
	    "{\"metadata\":{\"name\":\"r3\"},\"spec\":{\"image\":\"i\"}}" }, 201, NULL);
	ck_assert_ptr_null(kc_json_get(o, "spec", "mode"));
	json_object_put(o);
	o = call(DC_GET, RUNS "/r3", NULL, 200);
	check_str(o, "trainyard.dev/v1beta1", "apiVersion");
	check_str(kc_json_get(o, "spec"), "Train", "mode");
	json_object_put(o);
	ck_assert_ptr_null(kc_json_get(coll_get(registry_find(dc, "trainyard.dev", "v1beta1",
	    "runs")->coll, "default", "r3"), "spec", "mode"));
	/* Lists convert every item. */
	o = call(DC_GET, RUNS_A, NULL, 200);
	check_str(o, "RunList", "kind");
	check_str(o, "trainyard.dev/v1alpha1", "apiVersion");
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "items")), 2);
	check_str(json_object_array_get_idx(kc_json_get(o, "items"), 0),
	    "trainyard.dev/v1alpha1", "apiVersion");
	check_str(json_object_array_get_idx(kc_json_get(o, "items"), 0), "Run", "kind");
	json_object_put(o);
	/* And watches. */
	alpha = registry_find(dc, "trainyard.dev", "v1alpha1", "runs");
	ck_assert_ptr_nonnull(alpha);
	ck_assert_int_eq(watchhub_start(dc, &(struct dc_watch_opts){ .rt = alpha,
	    .ns = "default", .initial = true }, &s, &st), 0);
	c = s->ops->pull(s, &end);
	ck_assert_ptr_nonnull(c);
	line = kc_asprintf("%.*s", (int)c->len, c->data);
	ck_assert_ptr_nonnull(line);
	ck_assert_ptr_nonnull(strstr(line, "\"apiVersion\":\"trainyard.dev/v1alpha1\""));
	kc_free(line);
	chunk_unref(c);
	s->ops->release(s);
	/* Not served: 404. */
	expect(DC_GET, "/apis/trainyard.dev/v1/namespaces/default/runs/r2", NULL, 404);
}
END_TEST

START_TEST(cr_webhook_conversion)
{
	struct json_object *o;

	o = call(DC_POST, CRDS, "{\"metadata\":{\"name\":\"hooks.example.com\"},"
	    "\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\",\"names\":"
	    "{\"plural\":\"hooks\",\"kind\":\"Hook\"},\"conversion\":{\"strategy\":\"Webhook\","
	    "\"webhook\":{\"conversionReviewVersions\":[\"v1\"],\"clientConfig\":{\"url\":"
	    "\"https://127.0.0.1:1/convert\"}}},\"versions\":[{\"name\":\"v1\","
	    "\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":"
	    "{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}},"
	    "{\"name\":\"v2\",\"served\":true,\"storage\":false,\"schema\":{\"openAPIV3Schema\":"
	    "{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}]}}", 201);
	json_object_put(o);
	expect(DC_POST, "/apis/example.com/v1/namespaces/default/hooks",
	    "{\"metadata\":{\"name\":\"h\"},\"x\":1}", 201);
	expect(DC_GET, "/apis/example.com/v1/namespaces/default/hooks/h", NULL, 200);
	o = call(DC_GET, "/apis/example.com/v2/namespaces/default/hooks/h", NULL, 500);
	check_str(o, "InternalError", "reason");
	ck_assert_msg(strstr(kc_json_str(o, "message"),
	    "conversion webhook for example.com/v1, Kind=Hook failed: Post "
	    "\"https://127.0.0.1:1/convert?timeout=30s\": ") != NULL, "%s",
	    kc_json_str(o, "message"));
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"),
	    "conversion webhook for example.com/v1, Kind=Hook failed: Post "
	    "\"https://127.0.0.1:1/convert?timeout=30s\": "));
	json_object_put(o);
	expect(DC_POST, "/apis/example.com/v2/namespaces/default/hooks",
	    "{\"metadata\":{\"name\":\"h2\"}}", 500);
	/* Discovery still lists both versions. */
	expect(DC_GET, "/apis/example.com/v2", NULL, 200);
}
END_TEST

START_TEST(cr_tables)
{
	struct json_object *o, *cols, *cells;
	const struct dc_rtype *rt;

	add_runs_crd();
	o = post_fixture(RUNS, "crd/run-r1.yaml", 201);
	json_object_put(o);
	fake_clock_advance(95000);
	o = run(&(struct dct_call){ .method = DC_GET, .target = RUNS, .accept = TABLE_ACCEPT },
	    200, NULL);
	check_str(o, "Table", "kind");
	cols = kc_json_get(o, "columnDefinitions");
	ck_assert_uint_eq(json_object_array_length(cols), 6);
	check_str(json_object_array_get_idx(cols, 0), "Name", "name");
	check_str(json_object_array_get_idx(cols, 1), "Nodes", "name");
	check_str(json_object_array_get_idx(cols, 1), "integer", "type");
	check_str(json_object_array_get_idx(cols, 4), "Ready", "name");
	ck_assert_int_eq(kc_json_int(json_object_array_get_idx(cols, 4), 0, "priority"), 1);
	check_str(json_object_array_get_idx(cols, 5), "Age", "name");
	cells = kc_json_get(json_object_array_get_idx(kc_json_get(o, "rows"), 0), "cells");
	ck_assert_str_eq(json_object_to_json_string_ext(cells, JSON_C_TO_STRING_PLAIN),
	    "[\"r1\",4,\"Train\",null,null,\"95s\"]");
	json_object_put(o);
	/* A single object, and the v1alpha1 columns. */
	o = run(&(struct dct_call){ .method = DC_GET, .target = RUNS_A "/r1",
	    .accept = TABLE_ACCEPT }, 200, NULL);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "columnDefinitions")), 3);
	cells = kc_json_get(json_object_array_get_idx(kc_json_get(o, "rows"), 0), "cells");
	ck_assert_str_eq(json_object_to_json_string_ext(cells, JSON_C_TO_STRING_PLAIN),
	    "[\"r1\",4,\"95s\"]");
	json_object_put(o);
	/* The converter is reachable from the type; built-ins have none here. */
	rt = registry_find(dc, "trainyard.dev", "v1beta1", "runs");
	ck_assert(crd_owns(rt));
	ck_assert_ptr_nonnull(crd_table_conv(rt));
	ck_assert_ptr_nonnull(crd_schema(rt));
	check_str(kc_json_get(crd_object(rt), "metadata"), "runs.trainyard.dev", "name");
	ck_assert(!crd_owns(registry_find(dc, "", "v1", "pods")));
	ck_assert_ptr_null(crd_table_conv(registry_find(dc, "", "v1", "pods")));
	/* No printer columns: Name and Age. */
	add_fixture(CRDS, "schema/podgroup-crd.yaml");
	add_fixture("/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups",
	    "crd/podgroup-pg1.yaml");
	o = run(&(struct dct_call){ .method = DC_GET,
	    .target = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups",
	    .accept = TABLE_ACCEPT }, 200, NULL);
	cols = kc_json_get(o, "columnDefinitions");
	ck_assert_uint_eq(json_object_array_length(cols), 2);
	check_str(json_object_array_get_idx(cols, 1), "Age", "name");
	json_object_put(o);
}
END_TEST

START_TEST(cr_field_selectors)
{
	struct json_object *o;

	add_runs_crd();
	json_object_put(post_fixture(RUNS, "crd/run-r1.yaml", 201));
	json_object_put(post_fixture(RUNS_A, "crd/run-r2-v1alpha1.yaml", 201));
	o = call(DC_GET, RUNS "?fieldSelector=spec.mode%3DEval", NULL, 200);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "items")), 1);
	check_str(kc_json_get(json_object_array_get_idx(kc_json_get(o, "items"), 0),
	    "metadata"), "r2", "name");
	json_object_put(o);
	o = call(DC_GET, RUNS "?fieldSelector=metadata.name%3Dr1,metadata.namespace%3Ddefault",
	    NULL, 200);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "items")), 1);
	json_object_put(o);
	o = call(DC_GET, RUNS "?fieldSelector=spec.nodes%3D4", NULL, 400);
	dct_expect_message(o, "field label not supported: spec.nodes");
	/* v1alpha1 declares no selectable fields. */
	expect(DC_GET, RUNS_A "?fieldSelector=spec.mode%3DEval", NULL, 400);
	/* Cluster-scoped: no metadata.namespace. */
	add_fixture(CRDS, "crd/resourceprofile-crd.yaml");
	expect(DC_GET, "/apis/trainyard.dev/v1alpha1/resourceprofiles?fieldSelector="
	    "metadata.namespace%3Dx", NULL, 400);
}
END_TEST

START_TEST(cr_scale)
{
	struct json_object *o;
	char body[256];

	add_runs_crd();
	json_object_put(post_fixture(RUNS, "crd/run-r1.yaml", 201));
	json_object_put(run(&(struct dct_call){ .method = DC_PATCH, .target = RUNS "/r1/status",
	    .body = "{\"status\":{\"readyNodes\":2,\"selector\":\"run=r1\"}}",
	    .ctype = "application/merge-patch+json" }, 200, NULL));
	o = call(DC_GET, RUNS "/r1/scale", NULL, 200);
	check_str(o, "Scale", "kind");
	check_str(o, "autoscaling/v1", "apiVersion");
	ck_assert_int_eq(kc_json_int(o, 0, "spec", "replicas"), 4);
	ck_assert_int_eq(kc_json_int(o, 0, "status", "replicas"), 2);
	check_str(kc_json_get(o, "status"), "run=r1", "selector");
	check_str(kc_json_get(o, "metadata"), "r1", "name");
	json_object_put(o);
	o = run(&(struct dct_call){ .method = DC_PATCH, .target = RUNS "/r1/scale",
	    .body = "{\"spec\":{\"replicas\":6}}", .ctype = "application/merge-patch+json" },
	    200, NULL);
	ck_assert_int_eq(kc_json_int(o, 0, "spec", "replicas"), 6);
	json_object_put(o);
	o = call(DC_GET, RUNS "/r1", NULL, 200);
	ck_assert_int_eq(kc_json_int(o, 0, "spec", "nodes"), 6);
	ck_assert_int_eq(kc_json_int(o, 0, "metadata", "generation"), 2);
	(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"r1\","
	    "\"resourceVersion\":\"1\"},\"spec\":{\"replicas\":3}}");
	json_object_put(o);
	o = call(DC_PUT, RUNS "/r1/scale", body, 409);
	json_object_put(o);
	o = call(DC_PUT, RUNS "/r1/scale", "{\"spec\":{\"replicas\":-1}}", 422);
	dct_expect_message(o, "Scale.autoscaling \"r1\" is invalid: spec.replicas: Invalid "
	    "value: -1: must be greater than or equal to 0");
	/* The resource's schema still applies. */
	o = call(DC_PUT, RUNS "/r1/scale", "{\"spec\":{\"replicas\":100}}", 422);
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"), "less than or equal to 64"));
	json_object_put(o);
	expect(DC_GET, RUNS "/nope/scale", NULL, 404);
	/* v1alpha1 has no scale subresource. */
	expect(DC_GET, RUNS_A "/r1/scale", NULL, 404);
}
END_TEST

START_TEST(crd_deletion)
{
	struct json_object *o;
	struct dc_stream *s = NULL;
	struct kc_status st = { 0 };
	bool end = false;
	struct dc_chunk *c;

	add_runs_crd();
	json_object_put(call(DC_POST, RUNS, "{\"metadata\":{\"name\":\"keep\","
	    "\"finalizers\":[\"example.com/hold\"]},\"spec\":{\"image\":\"i\"}}", 201));
	json_object_put(post_fixture(RUNS, "crd/run-r1.yaml", 201));
	ck_assert_int_eq(watchhub_start(dc, &(struct dc_watch_opts){
	    .rt = registry_find(dc, "trainyard.dev", "v1beta1", "runs"), .ns = "default",
	    .since = storage_rv(dc->store) }, &s, &st), 0);
	ck_assert_uint_eq(watchhub_count(dc->hub), 1);

	/* The first DELETE: finalizer and Terminating, the object answered. */
	o = call(DC_DELETE, CRDS "/runs.trainyard.dev", NULL, 200);
	ck_assert_ptr_nonnull(kc_json_str(o, "metadata", "deletionTimestamp"));
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	    kc_json_get(o, "metadata", "finalizers"), 0)),
	    "customresourcecleanup.apiextensions.k8s.io");
	expect_cond(o, "Terminating", "True", "InstanceDeletionInProgress",
	    "CustomResource deletion is in progress");
	json_object_put(o);
	/* Creates are refused while it terminates. */
	o = call(DC_POST, RUNS, "{\"metadata\":{\"name\":\"late\"},\"spec\":{\"image\":\"i\"}}",
	    405);
	check_str(o, "MethodNotAllowed", "reason");
	dct_expect_message(o, "create not allowed while custom resource definition is "
	    "terminating");
	/* The cleanup deletes what it can; the finalizer holds one back. */
	settle();
	expect(DC_GET, RUNS "/r1", NULL, 404);
	o = call(DC_GET, RUNS "/keep", NULL, 200);
	ck_assert_ptr_nonnull(kc_json_str(o, "metadata", "deletionTimestamp"));
	json_object_put(o);
	expect(DC_GET, CRDS "/runs.trainyard.dev", NULL, 200);
	/* The watch saw the deletions. */
	c = s->ops->pull(s, &end);
	ck_assert_ptr_nonnull(c);
	chunk_unref(c);
	/* Releasing the finalizer lets the CRD go, its types and watches too. */
	json_object_put(run(&(struct dct_call){ .method = DC_PATCH, .target = RUNS "/keep",
	    .body = "{\"metadata\":{\"finalizers\":null}}",
	    .ctype = "application/merge-patch+json" }, 200, NULL));
	settle();
	expect(DC_GET, CRDS "/runs.trainyard.dev", NULL, 404);
	ck_assert_ptr_null(registry_find_any(dc, "trainyard.dev", "runs"));
	expect(DC_GET, RUNS, NULL, 404);
	expect(DC_GET, "/apis/trainyard.dev/v1beta1", NULL, 404);
	while ((c = s->ops->pull(s, &end)) != NULL)
		chunk_unref(c);
	ck_assert(end);
	s->ops->release(s);
	/* A CRD that never got established goes at once. */
	json_object_put(call(DC_POST, CRDS, "{\"metadata\":{\"name\":\"as.example.com\"},"
	    "\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\",\"names\":"
	    "{\"plural\":\"as\",\"kind\":\"A\"},\"versions\":[{\"name\":\"v1\","
	    "\"served\":false,\"storage\":true,\"schema\":{\"openAPIV3Schema\":"
	    "{\"type\":\"object\"}}}]}}", 201));
	expect(DC_DELETE, CRDS "/as.example.com", NULL, 200);
	settle();
	expect(DC_GET, CRDS "/as.example.com", NULL, 404);
	/* Recreated, the type is empty. */
	add_runs_crd();
	o = call(DC_GET, RUNS, NULL, 200);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "items")), 0);
	json_object_put(o);
}
END_TEST

START_TEST(cluster_scoped)
{
	struct json_object *o;

	add_fixture(CRDS, "crd/resourceprofile-crd.yaml");
	o = post_fixture("/apis/trainyard.dev/v1alpha1/resourceprofiles",
	    "crd/profile-h100.yaml", 201);
	check_str(kc_json_get(o, "spec"), "nvidia-h100", "accelerator");
	ck_assert_ptr_null(kc_json_get(o, "metadata", "namespace"));
	json_object_put(o);
	expect(DC_GET, "/apis/trainyard.dev/v1alpha1/namespaces/default/resourceprofiles",
	    NULL, 404);
	o = call(DC_GET, "/apis/trainyard.dev/v1alpha1", NULL, 200);
	ck_assert(!kc_json_bool(json_object_array_get_idx(kc_json_get(o, "resources"), 0),
	    true, "namespaced"));
	json_object_put(o);
	expect(DC_DELETE, "/apis/trainyard.dev/v1alpha1/resourceprofiles/h100x8", NULL, 200);
}
END_TEST

/* A stored CRD (with its status) from a scratch devcluster. */
static struct json_object *
stored_crd(const char *fixture)
{
	struct json_object *o = post_fixture(CRDS, fixture, 201);

	ck_assert_ptr_nonnull(o);
	return o;
}

START_TEST(restart_sync)
{
	struct json_object *runs = stored_crd("crd/run-crd.yaml");
	struct json_object *profiles = stored_crd("crd/resourceprofile-crd.yaml");
	struct dc_rtype *crt;

	/* A fresh devcluster, as persistence would restore it. */
	dc = api_free(dc);
	ck_assert_int_eq(api_new(&(struct dc_opts){ .kube_version = "1.32" }, &dc), 0);
	ck_assert_int_eq(auth_add(dc->auth, "admin-token", "admin", "admin",
	    (const char *const []){ "system:masters", NULL }), 0);
	crt = registry_find(dc, "apiextensions.k8s.io", "v1", "customresourcedefinitions");
	ck_assert_int_eq(storage_restore(dc->store, crt->coll, runs), 0);
	ck_assert_int_eq(crd_init(dc), 0);
	ck_assert_ptr_nonnull(registry_find(dc, "trainyard.dev", "v1beta1", "runs"));
	ck_assert_ptr_nonnull(registry_find(dc, "trainyard.dev", "v1alpha1", "runs"));
	ck_assert_ptr_null(registry_find(dc, "trainyard.dev", "v1", "runs"));
	/* Restored after init: the loop-start sync picks it up. */
	ck_assert_int_eq(storage_restore(dc->store, crt->coll, profiles), 0);
	ck_assert_ptr_null(registry_find(dc, "trainyard.dev", "v1alpha1", "resourceprofiles"));
	ck_assert_uint_ge(timers_run(dc), 1);
	ck_assert_ptr_nonnull(registry_find(dc, "trainyard.dev", "v1alpha1",
	    "resourceprofiles"));
	expect(DC_GET, RUNS, NULL, 200);
	/* crd_sync_all() again changes nothing. */
	ck_assert_int_eq(crd_sync_all(dc), 0);
	ck_assert_ptr_nonnull(registry_find(dc, "trainyard.dev", "v1beta1", "runs"));
}
END_TEST

START_TEST(restart_resumes_cleanup)
{
	struct json_object *runs;
	struct dc_rtype *crt;

	add_runs_crd();
	json_object_put(post_fixture(RUNS, "crd/run-r1.yaml", 201));
	expect(DC_DELETE, CRDS "/runs.trainyard.dev", NULL, 200);
	crt = registry_find(dc, "apiextensions.k8s.io", "v1", "customresourcedefinitions");
	runs = json_object_get((struct json_object *)(uintptr_t)coll_get(crt->coll, "",
	    "runs.trainyard.dev"));
	dc = api_free(dc);
	ck_assert_int_eq(api_new(&(struct dc_opts){ .kube_version = "1.32" }, &dc), 0);
	crt = registry_find(dc, "apiextensions.k8s.io", "v1", "customresourcedefinitions");
	ck_assert_int_eq(storage_restore(dc->store, crt->coll, runs), 0);
	ck_assert_int_eq(crd_init(dc), 0);
	ck_assert_ptr_nonnull(registry_find(dc, "trainyard.dev", "v1beta1", "runs"));
	settle();
	ck_assert_ptr_null(coll_get(crt->coll, "", "runs.trainyard.dev"));
	ck_assert_ptr_null(registry_find_any(dc, "trainyard.dev", "runs"));
}
END_TEST

static void
expect_shape(const struct fm_schema *fs, const char *path, enum fm_kind kind)
{
	struct fm_type t;

	ck_assert_msg(fs->lookup(fs->arg, path, &t), "%s: unknown", path);
	ck_assert_msg(t.kind == kind, "%s: kind %d, want %d", path, t.kind, kind);
}

START_TEST(fm_schema)
{
	struct fm_schema fs;
	struct fm_type t;

	add_runs_crd();
	ck_assert_int_eq(crd_fm_schema(registry_find(dc, "", "v1", "pods"), &fs), -ENOENT);
	ck_assert_int_eq(crd_fm_schema(registry_find(dc, "trainyard.dev", "v1beta1", "runs"),
	    &fs), 0);
	expect_shape(&fs, "spec", FM_STRUCT);
	expect_shape(&fs, "spec.tags", FM_SET);
	expect_shape(&fs, "spec.command", FM_ATOMIC);
	expect_shape(&fs, "spec.resources", FM_MAP);
	expect_shape(&fs, "spec.env", FM_MAP_LIST);
	ck_assert(fs.lookup(fs.arg, "spec.env", &t));
	ck_assert_uint_eq(t.nkeys, 1);
	ck_assert_str_eq(t.keys[0], "name");
	ck_assert_ptr_null(t.key_defaults[0]);
	expect_shape(&fs, "status.conditions", FM_MAP_LIST);
	ck_assert(fs.lookup(fs.arg, "status.conditions", &t));
	ck_assert_str_eq(t.keys[0], "type");
	/* List items add no segment. */
	ck_assert(!fs.lookup(fs.arg, "spec.env.name", &t));
	ck_assert(!fs.lookup(fs.arg, "metadata", &t));
	ck_assert(!fs.lookup(fs.arg, "metadata.labels", &t));
	ck_assert(!fs.lookup(fs.arg, "spec.nope", &t));
	ck_assert(!fs.lookup(fs.arg, "", &t));
	ck_assert(!fs.lookup(fs.arg, "spec..x", &t));
}
END_TEST

START_TEST(fm_key_defaults)
{
	struct fm_schema fs;
	struct fm_type t;

	json_object_put(call(DC_POST, CRDS, "{\"metadata\":{\"name\":\"ports.example.com\"},"
	    "\"spec\":{\"group\":\"example.com\",\"scope\":\"Namespaced\",\"names\":"
	    "{\"plural\":\"ports\",\"kind\":\"Port\"},\"versions\":[{\"name\":\"v1\","
	    "\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":"
	    "\"object\",\"properties\":{\"spec\":{\"type\":\"object\",\"properties\":{"
	    "\"ports\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"map\","
	    "\"x-kubernetes-list-map-keys\":[\"port\",\"protocol\"],\"items\":{\"type\":"
	    "\"object\",\"required\":[\"port\"],\"properties\":{\"port\":{\"type\":\"integer\"},"
	    "\"protocol\":{\"type\":\"string\",\"default\":\"TCP\"}}}},\"labels\":{\"type\":"
	    "\"object\",\"x-kubernetes-map-type\":\"atomic\",\"additionalProperties\":"
	    "{\"type\":\"string\"}}}}}}}}]}}", 201));
	ck_assert_int_eq(crd_fm_schema(registry_find(dc, "example.com", "v1", "ports"), &fs),
	    0);
	ck_assert(fs.lookup(fs.arg, "spec.ports", &t));
	ck_assert_int_eq(t.kind, FM_MAP_LIST);
	ck_assert_uint_eq(t.nkeys, 2);
	ck_assert_str_eq(t.keys[1], "protocol");
	ck_assert_ptr_null(t.key_defaults[0]);
	ck_assert_str_eq(t.key_defaults[1], "\"TCP\"");
	/* The same text twice is kept once. */
	ck_assert(fs.lookup(fs.arg, "spec.ports", &t));
	ck_assert_str_eq(t.key_defaults[1], "\"TCP\"");
	expect_shape(&fs, "spec.labels", FM_ATOMIC);
}
END_TEST

START_TEST(init_alloc_failures)
{
	struct json_object *runs = stored_crd("crd/run-crd.yaml");
	struct dc_rtype *crt;
	int r;

	dc = api_free(dc);
	ck_assert_int_eq(api_new(&(struct dc_opts){ .kube_version = "1.32",
	    .no_bootstrap = true }, &dc), 0);
	crt = registry_find(dc, "apiextensions.k8s.io", "v1", "customresourcedefinitions");
	ck_assert_int_eq(storage_restore(dc->store, crt->coll, runs), 0);
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = crd_init(dc);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(plugin_state(dc, &crd_plugin));
		ck_assert_ptr_null(registry_find_any(dc, "trainyard.dev", "runs"));
		ck_assert_ptr_eq(crt->ops, &ops_default);
	}
	ck_assert_ptr_nonnull(registry_find(dc, "trainyard.dev", "v1beta1", "runs"));
	/* fini and init again are fine. */
	crd_fini(dc);
	ck_assert_ptr_null(registry_find_any(dc, "trainyard.dev", "runs"));
	crd_fini(dc);
	ck_assert_int_eq(crd_init(dc), 0);
	ck_assert_ptr_nonnull(registry_find(dc, "trainyard.dev", "v1beta1", "runs"));
}
END_TEST

START_TEST(sync_alloc_failures)
{
	struct json_object *profiles = stored_crd("crd/resourceprofile-crd.yaml");
	struct dc_rtype *crt = registry_find(dc, "apiextensions.k8s.io", "v1",
	    "customresourcedefinitions");
	int r;

	/* Gone from the store without an event: the types stay until a sync. */
	coll_clear(crt->coll);
	add_runs_crd();
	ck_assert_int_eq(storage_restore(dc->store, crt->coll, profiles), 0);
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = crd_sync_all(dc);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
	}
	ck_assert_ptr_nonnull(registry_find(dc, "trainyard.dev", "v1beta1", "runs"));
	ck_assert_ptr_nonnull(registry_find(dc, "trainyard.dev", "v1alpha1",
	    "resourceprofiles"));
	expect(DC_GET, RUNS, NULL, 200);
	expect(DC_GET, "/apis/trainyard.dev/v1alpha1/resourceprofiles", NULL, 200);
	/* A CRD no longer stored loses its types. */
	coll_clear(crt->coll);
	ck_assert_int_eq(crd_sync_all(dc), 0);
	ck_assert_ptr_null(registry_find_any(dc, "trainyard.dev", "runs"));
	expect(DC_GET, RUNS, NULL, 404);
}
END_TEST

Suite *
dc_crd_suite(void)
{
	Suite *s = suite_create("dc_crd");
	TCase *tc = tcase_create("crd");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, crd_status_and_discovery);
	tcase_add_test(tc, crd_validation);
	tcase_add_test(tc, crd_name_conflicts);
	tcase_add_test(tc, cr_field_validation);
	tcase_add_test(tc, cr_schema_validation);
	tcase_add_test(tc, cr_status_subresource);
	tcase_add_test(tc, cr_versions);
	tcase_add_test(tc, cr_webhook_conversion);
	tcase_add_test(tc, cr_tables);
	tcase_add_test(tc, cr_field_selectors);
	tcase_add_test(tc, cr_scale);
	tcase_add_test(tc, crd_deletion);
	tcase_add_test(tc, cluster_scoped);
	tcase_add_test(tc, restart_sync);
	tcase_add_test(tc, restart_resumes_cleanup);
	tcase_add_test(tc, fm_schema);
	tcase_add_test(tc, fm_key_defaults);
	tcase_add_test(tc, init_alloc_failures);
	tcase_add_test(tc, sync_alloc_failures);
	suite_add_tcase(s, tc);
	return s;
}

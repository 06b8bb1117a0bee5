/*
 * test_dc_disruption.c: PodDisruptionBudgets and pods/eviction
 * (devcluster/disruption.c): discovery, the type's validation and Table,
 * the disruption controller's status arithmetic, and every branch of the
 * eviction subresource, driven through api_handle() as kubectl would.
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

#define NS		"/api/v1/namespaces/default"
#define PDBS		"/apis/policy/v1/namespaces/default/poddisruptionbudgets"
#define MERGE		"application/merge-patch+json"
#define EVICT_MSG	"Cannot evict pod as it would violate the pod's disruption budget."

static struct dc *dc;

/* Attributes the authorizer saw last for a subresource request. */
static char seen_verb[32], seen_res[64], seen_sub[64];

static bool
record_authz(struct dc *d, const struct dc_attrs *a, char *reason, size_t size)
{
	(void)d;
	(void)reason;
	(void)size;
	if (a->resource_request && a->subresource != NULL && a->subresource[0] != '\0') {
		(void)kc_strlcpy(seen_verb, a->verb, sizeof(seen_verb));
		(void)kc_strlcpy(seen_res, a->resource, sizeof(seen_res));
		(void)kc_strlcpy(seen_sub, a->subresource, sizeof(seen_sub));
	}
	return true;
}

static void
setup(void)
{
	fake_clock_install(5000000);
	dc = dct_new(NULL);
	ck_assert_int_eq(disruption_init(dc), 0);
	/* A second init is harmless. */
	ck_assert_int_eq(disruption_init(dc), 0);
}

static void
teardown(void)
{
	disruption_fini(dc);
	disruption_fini(dc);
	dc = api_free(dc);
	fake_clock_uninstall();
}

/* Runs the loop timers until nothing is due soon. */
static void
settle(void)
{
	for (int i = 0; i < 100; i++) {
		int64_t next;

		(void)timers_run(dc);
		next = timers_next(dc);
		if (next < 0 || next > 500)
			return;
		if (next > 0)
			fake_clock_advance((uint64_t)next);
	}
	ck_abort_msg("the timers never settled");
}

static const struct json_object *
pod(const char *name)
{
	return coll_get(dct_type(dc, "pods")->coll, "default", name);
}

static const struct json_object *
pdb(const char *name)
{
	return coll_get(registry_find(dc, "policy", "v1", "poddisruptionbudgets")->coll,
	    "default", name);
}

static int64_t
pdb_int(const char *name, const char *field)
{
	return kc_json_int(pdb(name), -1, "status", field);
}

/* A pod labelled app=<app>, optionally on a node, optionally Ready. */
static void
make_pod(const char *name, const char *app, const char *node, bool ready)
{
	char body[1024], path[256];

	(void)snprintf(body, sizeof(body),
	    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
	    "\"labels\":{\"app\":\"%s\"}},\"spec\":{%s%s%s\"containers\":[{\"name\":\"c\","
	    "\"image\":\"busybox\"}]}}", name, app, node != NULL ? "\"nodeName\":\"" : "",
	    node != NULL ? node : "", node != NULL ? "\"," : "");
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = NS "/pods",
	    .body = body }, 201, NULL));
	(void)snprintf(path, sizeof(path), NS "/pods/%s/status", name);
	(void)snprintf(body, sizeof(body), "{\"status\":{\"phase\":\"Running\","
	    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\"}]}}",
	    ready ? "True" : "False");
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = path,
	    .body = body, .ctype = MERGE }, 200, NULL));
}

static void
make_pdb(const char *name, const char *spec)
{
	char body[1024];

	(void)snprintf(body, sizeof(body), "{\"apiVersion\":\"policy/v1\",\"kind\":"
	    "\"PodDisruptionBudget\",\"metadata\":{\"name\":\"%s\"},\"spec\":%s}", name, spec);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = PDBS,
	    .body = body }, 201, NULL));
}

/* POSTs an eviction of 'name' with 'opts' as deleteOptions (NULL: none). */
static struct json_object *
evict(const char *name, const char *opts, int want, struct dc_resp *out)
{
	char body[1024], path[256];

	(void)snprintf(path, sizeof(path), NS "/pods/%s/eviction", name);
	(void)snprintf(body, sizeof(body), "{\"apiVersion\":\"policy/v1\",\"kind\":"
	    "\"Eviction\",\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"}%s%s}",
	    name, opts != NULL ? ",\"deleteOptions\":" : "", opts != NULL ? opts : "");
	return dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = path,
	    .body = body }, want, out);
}

static const char *
cond_of(const struct json_object *obj, const char *type, const char *field)
{
	struct json_object *conds = kc_json_get(obj, "status", "conditions");

	for (size_t i = 0; i < json_object_array_length(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);

		if (strcmp(kc_json_str(c, "type"), type) == 0)
			return kc_json_str(c, field);
	}
	return NULL;
}

static void
expect_success(struct json_object *o)
{
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(kc_json_str(o, "kind"), "Status");
	ck_assert_str_eq(kc_json_str(o, "status"), "Success");
	ck_assert_int_eq(kc_json_int(o, 0, "code"), 201);
	dct_put(o);
}

/*
 * Discovery and the type
 */

START_TEST(test_discovery)
{
	struct json_object *o, *res;
	bool found = false;

	o = dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = "/api/v1" }, 200,
	    NULL);
	res = kc_json_get(o, "resources");
	for (size_t i = 0; i < json_object_array_length(res); i++) {
		struct json_object *r = json_object_array_get_idx(res, i);

		if (strcmp(kc_json_str(r, "name"), "pods/eviction") != 0)
			continue;
		found = true;
		ck_assert_str_eq(kc_json_str(r, "group"), "policy");
		ck_assert_str_eq(kc_json_str(r, "version"), "v1");
		ck_assert_str_eq(kc_json_str(r, "kind"), "Eviction");
		ck_assert_int_eq(json_object_array_length(kc_json_get(r, "verbs")), 1);
		ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
		    kc_json_get(r, "verbs"), 0)), "create");
	}
	ck_assert(found);
	dct_put(o);

	o = dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = "/apis/policy/v1" },
	    200, NULL);
	res = kc_json_get(o, "resources");
	ck_assert_int_eq(json_object_array_length(res), 2);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(res, 0), "name"),
	    "poddisruptionbudgets");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(kc_json_get(
	    json_object_array_get_idx(res, 0), "shortNames"), 0)), "pdb");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(res, 1), "name"),
	    "poddisruptionbudgets/status");
	dct_put(o);
	/* policy/v1beta1 is not served any more (1.25+). */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = "/apis/policy/v1beta1" }, 404, NULL));

	/* The aggregated document names the subresource's own kind. */
	o = dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = "/api",
	    .accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" },
	    200, NULL);
	found = false;
	res = kc_json_get(json_object_array_get_idx(kc_json_get(json_object_array_get_idx(
	    kc_json_get(o, "items"), 0), "versions"), 0), "resources");
	for (size_t i = 0; i < json_object_array_length(res); i++) {
		struct json_object *r = json_object_array_get_idx(res, i);
		struct json_object *subs = kc_json_get(r, "subresources");

		if (strcmp(kc_json_str(r, "resource"), "pods") != 0)
			continue;
		for (size_t j = 0; j < json_object_array_length(subs); j++) {
			struct json_object *sr = json_object_array_get_idx(subs, j);

			if (strcmp(kc_json_str(sr, "subresource"), "eviction") != 0)
				continue;
			found = true;
			ck_assert_str_eq(kc_json_str(sr, "responseKind", "group"), "policy");
			ck_assert_str_eq(kc_json_str(sr, "responseKind", "version"), "v1");
			ck_assert_str_eq(kc_json_str(sr, "responseKind", "kind"), "Eviction");
		}
	}
	ck_assert(found);
	dct_put(o);
}
END_TEST

START_TEST(test_pdb_create)
{
	const struct json_object *p;

	make_pdb("a", "{\"minAvailable\":1,\"selector\":{\"matchLabels\":{\"app\":\"x\"}}}");
	p = pdb("a");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(kc_json_int(p, 0, "metadata", "generation"), 1);
	ck_assert_int_eq(pdb_int("a", "disruptionsAllowed"), 0);
	ck_assert_int_eq(pdb_int("a", "currentHealthy"), 0);
	ck_assert_int_eq(pdb_int("a", "expectedPods"), 0);
	/* Neither minAvailable nor maxUnavailable is allowed too. */
	make_pdb("b", "{\"selector\":{}}");
	make_pdb("c", "{\"maxUnavailable\":\"25%\",\"unhealthyPodEvictionPolicy\":"
	    "\"AlwaysAllow\",\"selector\":{\"matchExpressions\":[{\"key\":\"app\","
	    "\"operator\":\"In\",\"values\":[\"x\"]}]}}");
	/* A spec change bumps the generation; a status write does not. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = PDBS "/a",
	    .body = "{\"spec\":{\"minAvailable\":2}}", .ctype = MERGE }, 200, NULL));
	ck_assert_int_eq(kc_json_int(pdb("a"), 0, "metadata", "generation"), 2);
	settle();
	ck_assert_int_eq(kc_json_int(pdb("a"), 0, "metadata", "generation"), 2);
	ck_assert_int_eq(pdb_int("a", "observedGeneration"), 2);
	ck_assert_int_eq(pdb_int("b", "observedGeneration"), 1);
}
END_TEST

static void
expect_invalid(const char *spec, const char *msg)
{
	char body[1024];
	struct json_object *o;

	(void)snprintf(body, sizeof(body), "{\"apiVersion\":\"policy/v1\",\"kind\":"
	    "\"PodDisruptionBudget\",\"metadata\":{\"name\":\"bad\"},\"spec\":%s}", spec);
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = PDBS,
	    .body = body }, 422, NULL);
	dct_expect_message(o, msg);
}

START_TEST(test_pdb_validation)
{
	expect_invalid("{\"minAvailable\":1,\"maxUnavailable\":1,\"selector\":{}}",
	    "PodDisruptionBudget.policy \"bad\" is invalid: spec: Invalid value: "
	    "policy.PodDisruptionBudgetSpec{MinAvailable:(*intstr.IntOrString)(0xc000a10000), "
	    "Selector:(*v1.LabelSelector)(0xc000a10020), MaxUnavailable:"
	    "(*intstr.IntOrString)(0xc000a10040), UnhealthyPodEvictionPolicy:"
	    "(*policy.UnhealthyPodEvictionPolicyType)(nil)}: minAvailable and "
	    "maxUnavailable cannot be both set");
	expect_invalid("{\"minAvailable\":-1}", "PodDisruptionBudget.policy \"bad\" is "
	    "invalid: spec.minAvailable: Invalid value: -1: must be greater than or equal "
	    "to 0");
	expect_invalid("{\"maxUnavailable\":\"abc\"}", "PodDisruptionBudget.policy \"bad\" "
	    "is invalid: spec.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, "
	    "IntVal:0, StrVal:\"abc\"}: a valid percent string must be a numeric string "
	    "followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is "
	    "'[0-9]+%')");
	expect_invalid("{\"minAvailable\":\"150%\"}", "PodDisruptionBudget.policy \"bad\" "
	    "is invalid: spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, "
	    "IntVal:0, StrVal:\"150%\"}: must not be greater than 100%");
	expect_invalid("{\"minAvailable\":true}", "PodDisruptionBudget.policy \"bad\" is "
	    "invalid: spec.minAvailable: Invalid value: intstr.IntOrString{Type:0, "
	    "IntVal:1, StrVal:\"\"}: must be an integer or percentage (e.g '5%')");
	expect_invalid("{\"minAvailable\":1,\"unhealthyPodEvictionPolicy\":\"Sometimes\"}",
	    "PodDisruptionBudget.policy \"bad\" is invalid: spec.unhealthyPodEvictionPolicy: "
	    "Unsupported value: \"Sometimes\": supported values: \"AlwaysAllow\", "
	    "\"IfHealthyBudget\"");
	expect_invalid("{\"minAvailable\":1,\"selector\":{\"matchExpressions\":[{\"key\":"
	    "\"app\",\"operator\":\"Near\",\"values\":[\"x\"]}]}}",
	    "PodDisruptionBudget.policy \"bad\" is invalid: "
	    "spec.selector.matchExpressions[0].operator: Invalid value: \"Near\": not a "
	    "valid selector operator");
	expect_invalid("{\"minAvailable\":1,\"selector\":{\"matchExpressions\":[{\"key\":"
	    "\"app\",\"operator\":\"In\"}]}}", "PodDisruptionBudget.policy \"bad\" is "
	    "invalid: spec.selector.matchExpressions[0].values: Required value: must be "
	    "specified when `operator` is 'In' or 'NotIn'");
	expect_invalid("{\"minAvailable\":1,\"selector\":{\"matchExpressions\":[{\"key\":"
	    "\"app\",\"operator\":\"Exists\",\"values\":[\"x\"]}]}}",
	    "PodDisruptionBudget.policy \"bad\" is invalid: "
	    "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when "
	    "`operator` is 'Exists' or 'DoesNotExist'");
	expect_invalid("{\"minAvailable\":1,\"selector\":{\"matchLabels\":{\"app\":\"a b\"}}}",
	    "PodDisruptionBudget.policy \"bad\" is invalid: spec.selector.matchLabels: "
	    "Invalid value: \"a b\": a valid label must be an empty string or consist of "
	    "alphanumeric characters, '-', '_' or '.', and must start and end with an "
	    "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
	    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')");
	expect_invalid("{\"minAvailable\":1,\"selector\":{\"matchExpressions\":[{\"key\":"
	    "\"-bad\",\"operator\":\"Exists\"}]}}", "PodDisruptionBudget.policy \"bad\" is "
	    "invalid: spec.selector.matchExpressions[0].key: Invalid value: \"-bad\": name "
	    "part must consist of alphanumeric characters, '-', '_' or '.', and must start "
	    "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
	    "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
	    "[A-Za-z0-9]')");
	ck_assert_ptr_null(pdb("bad"));

	/* Status writes: counters may not go negative. */
	make_pdb("ok", "{\"minAvailable\":1}");
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_PATCH,
	    .target = PDBS "/ok/status", .body = "{\"status\":{\"disruptionsAllowed\":-1}}",
	    .ctype = MERGE }, 422, NULL), "PodDisruptionBudget.policy \"ok\" is invalid: "
	    "status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0");
}
END_TEST

START_TEST(test_pdb_table)
{
	struct json_object *o, *cols, *rows;

	make_pdb("t1", "{\"minAvailable\":\"50%\",\"selector\":{}}");
	make_pdb("t2", "{\"maxUnavailable\":1,\"selector\":{}}");
	make_pod("p1", "x", NULL, true);
	make_pod("p2", "x", NULL, true);
	settle();
	o = dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = PDBS,
	    .accept = "application/json;as=Table;v=v1;g=meta.k8s.io" }, 200, NULL);
	cols = kc_json_get(o, "columnDefinitions");
	ck_assert_int_eq(json_object_array_length(cols), 5);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(cols, 1), "name"),
	    "Min Available");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(cols, 2), "name"),
	    "Max Unavailable");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(cols, 3), "name"),
	    "Allowed Disruptions");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(cols, 3), "type"), "integer");
	rows = kc_json_get(o, "rows");
	ck_assert_int_eq(json_object_array_length(rows), 2);
	ck_assert_str_eq(json_object_to_json_string(kc_json_get(json_object_array_get_idx(
	    rows, 0), "cells")), "[ \"t1\", \"50%\", \"N\\/A\", 1, \"0s\" ]");
	ck_assert_str_eq(json_object_to_json_string(kc_json_get(json_object_array_get_idx(
	    rows, 1), "cells")), "[ \"t2\", \"N\\/A\", \"1\", 1, \"0s\" ]");
	dct_put(o);
}
END_TEST

/*
 * The controller
 */

START_TEST(test_status_min_int)
{
	const struct json_object *p;

	make_pdb("m", "{\"minAvailable\":2,\"selector\":{\"matchLabels\":{\"app\":\"web\"}}}");
	settle();
	ck_assert_int_eq(pdb_int("m", "expectedPods"), 0);
	ck_assert_str_eq(cond_of(pdb("m"), "DisruptionAllowed", "status"), "False");
	ck_assert_str_eq(cond_of(pdb("m"), "DisruptionAllowed", "reason"),
	    "InsufficientPods");
	make_pod("w1", "web", NULL, true);
	make_pod("w2", "web", NULL, true);
	make_pod("w3", "web", NULL, false);
	make_pod("o1", "other", NULL, true);
	settle();
	p = pdb("m");
	ck_assert_int_eq(pdb_int("m", "expectedPods"), 3);
	ck_assert_int_eq(pdb_int("m", "currentHealthy"), 2);
	ck_assert_int_eq(pdb_int("m", "desiredHealthy"), 2);
	ck_assert_int_eq(pdb_int("m", "disruptionsAllowed"), 0);
	ck_assert_int_eq(pdb_int("m", "observedGeneration"), 1);
	make_pod("w4", "web", NULL, true);
	settle();
	p = pdb("m");
	ck_assert_int_eq(pdb_int("m", "currentHealthy"), 3);
	ck_assert_int_eq(pdb_int("m", "disruptionsAllowed"), 1);
	ck_assert_str_eq(cond_of(p, "DisruptionAllowed", "status"), "True");
	ck_assert_str_eq(cond_of(p, "DisruptionAllowed", "reason"), "SufficientPods");
	ck_assert_str_eq(cond_of(p, "DisruptionAllowed", "message"), "");
	/* Idle: another pass writes nothing. */
	{
		uint64_t rv = obj_rv(pdb("m"));

		ck_assert_int_eq(disruption_sync(dc), 0);
		settle();
		ck_assert_uint_eq(obj_rv(pdb("m")), rv);
		/* Nothing of ours is due (the watch hub's bookmarks may be). */
		ck_assert(timers_next(dc) < 0 || timers_next(dc) > 10000);
	}
}
END_TEST

START_TEST(test_status_percent_and_max)
{
	make_pod("a1", "a", NULL, true);
	make_pod("a2", "a", NULL, true);
	make_pod("a3", "a", NULL, true);
	make_pdb("pct", "{\"minAvailable\":\"50%\",\"selector\":{\"matchLabels\":"
	    "{\"app\":\"a\"}}}");
	make_pdb("max", "{\"maxUnavailable\":\"34%\",\"selector\":{\"matchLabels\":"
	    "{\"app\":\"a\"}}}");
	make_pdb("none", "{\"selector\":{\"matchLabels\":{\"app\":\"a\"}}}");
	make_pdb("nil", "{\"maxUnavailable\":1}");
	settle();
	/* ceil(3 * 50%) = 2 */
	ck_assert_int_eq(pdb_int("pct", "expectedPods"), 3);
	ck_assert_int_eq(pdb_int("pct", "desiredHealthy"), 2);
	ck_assert_int_eq(pdb_int("pct", "disruptionsAllowed"), 1);
	/* ceil(3 * 34%) = 2 unavailable: 1 desired, 2 allowed. */
	ck_assert_int_eq(pdb_int("max", "desiredHealthy"), 1);
	ck_assert_int_eq(pdb_int("max", "disruptionsAllowed"), 2);
	/* Neither set: no expected pods, nothing allowed. */
	ck_assert_int_eq(pdb_int("none", "expectedPods"), 0);
	ck_assert_int_eq(pdb_int("none", "currentHealthy"), 3);
	ck_assert_int_eq(pdb_int("none", "disruptionsAllowed"), 0);
	/* A nil selector selects nothing. */
	ck_assert_int_eq(pdb_int("nil", "expectedPods"), 0);
	ck_assert_int_eq(pdb_int("nil", "currentHealthy"), 0);
}
END_TEST

static const char pdb_text[] =
    "{\"metadata\":{\"name\":\"x\",\"generation\":3},"
    "\"spec\":{\"minAvailable\":1,\"selector\":{}},\"status\":{\"disruptedPods\":{"
    "\"p1\":\"2023-11-14T22:13:20Z\",\"p2\":\"2023-11-14T22:00:00Z\",\"gone\":"
    "\"2023-11-14T22:13:20Z\"},\"conditions\":[{\"type\":\"Other\",\"status\":"
    "\"True\"},{\"type\":\"DisruptionAllowed\",\"status\":\"False\","
    "\"lastTransitionTime\":\"2020-01-01T00:00:00Z\"}]}}";

START_TEST(test_status_pure)
{
	struct json_object *pdbo, *pods[3], *st = NULL;
	time_t recheck = 0;
	int r;

	ck_assert_int_eq(kc_json_parse(pdb_text, strlen(pdb_text), &pdbo, NULL), 0);
	for (int i = 0; i < 3; i++) {
		char text[512];

		(void)snprintf(text, sizeof(text), "{\"metadata\":{\"name\":\"p%d\"},"
		    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
		    i + 1);
		ck_assert_int_eq(kc_json_parse(text, strlen(text), &pods[i], NULL), 0);
	}
	/* 1700000000 is 2023-11-14T22:13:20Z: p1 was just evicted, p2 long ago. */
	ck_assert_int_eq(disruption_status(pdbo, pods, 3, 1700000000 + 30, &st, &recheck), 0);
	ck_assert_int_eq(kc_json_int(st, -1, "observedGeneration"), 3);
	ck_assert_int_eq(kc_json_int(st, -1, "expectedPods"), 3);
	ck_assert_int_eq(kc_json_int(st, -1, "currentHealthy"), 2);
	ck_assert_int_eq(kc_json_int(st, -1, "disruptionsAllowed"), 1);
	ck_assert_int_eq(json_object_object_length(kc_json_get(st, "disruptedPods")), 1);
	ck_assert_str_eq(kc_json_str(st, "disruptedPods", "p1"), "2023-11-14T22:13:20Z");
	ck_assert_int_eq(recheck, 1700000000 + DISRUPTION_TIMEOUT_S);
	/* The other condition stays; DisruptionAllowed turned True at 'now'. */
	ck_assert_int_eq(json_object_array_length(kc_json_get(st, "conditions")), 2);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(st,
	    "conditions"), 1), "lastTransitionTime"), "2023-11-14T22:13:50Z");
	json_object_put(st);
	/* After the timeout the entry is dropped and the pod counts again. */
	ck_assert_int_eq(disruption_status(pdbo, pods, 3, 1700000000 + 121, &st, &recheck),
	    0);
	ck_assert_int_eq(kc_json_int(st, -1, "currentHealthy"), 3);
	ck_assert_ptr_null(kc_json_get(st, "disruptedPods"));
	ck_assert_int_eq(recheck, 0);
	json_object_put(st);
	/* A selector that cannot be used: failSafe, SyncFailed. */
	json_object_object_add(kc_json_obj_of(pdbo, "spec"), "selector",
	    json_tokener_parse("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"X\"}]}"));
	ck_assert_int_eq(disruption_status(pdbo, pods, 3, 1700000000, &st, &recheck), 0);
	ck_assert_int_eq(kc_json_int(st, -1, "disruptionsAllowed"), 0);
	{
		struct json_object *wrap = json_object_new_object();

		json_object_object_add(wrap, "status", json_object_get(st));
		ck_assert_str_eq(cond_of(wrap, "DisruptionAllowed", "reason"), "SyncFailed");
		ck_assert_ptr_nonnull(strstr(cond_of(wrap, "DisruptionAllowed", "message"),
		    "X"));
		json_object_put(wrap);
	}
	json_object_put(st);
	/* Allocation failures: -ENOMEM and no leak. */
	json_object_object_add(kc_json_obj_of(pdbo, "spec"), "selector",
	    json_object_new_object());
	for (size_t n = 0;; n++) {
		st = NULL;
		fail_alloc_after(n);
		r = disruption_status(pdbo, pods, 3, 1700000000 + 30, &st, &recheck);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			json_object_put(st);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_uint_lt(n, 10000);
	}
	for (int i = 0; i < 3; i++)
		json_object_put(pods[i]);
	json_object_put(pdbo);
}
END_TEST

/*
 * pods/eviction
 */

START_TEST(test_evict_basics)
{
	struct json_object *o;

	/* The authorizer sees "create" on pods/eviction. */
	dc->hooks.authorize = record_authz;
	ck_assert_int_eq(auth_add(dc->auth, "alice-token", "alice", "alice", NULL), 0);
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = NS "/pods/nope/eviction", .token = "alice-token",
	    .body = "{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":"
	    "{\"name\":\"nope\"}}" }, 404, NULL), "pods \"nope\" not found");
	ck_assert_str_eq(seen_verb, "create");
	ck_assert_str_eq(seen_res, "pods");
	ck_assert_str_eq(seen_sub, "eviction");
	dc->hooks.authorize = NULL;
	/* Only POST. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = NS "/pods/x/eviction" }, 405, NULL));
	/* The body must name the pod of the URL. */
	make_pod("b1", "b", NULL, true);
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = NS "/pods/b1/eviction", .body = "{\"apiVersion\":\"policy/v1\","
	    "\"kind\":\"Eviction\",\"metadata\":{\"name\":\"other\"}}" }, 400, NULL),
	    "name in URL does not match name in Eviction object");
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = NS "/pods/b1/eviction", .body = "{\"apiVersion\":\"v1\","
	    "\"kind\":\"Pod\",\"metadata\":{\"name\":\"b1\"}}" }, 400, NULL));
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = NS "/pods/b1/eviction", .body = "not json" }, 400, NULL));
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = NS "/pods/b1/eviction", .body = "x", .ctype = "text/plain" }, 415,
	    NULL));
	/* No budget: 201 Success and the pod is gone (not bound: at once). */
	expect_success(evict("b1", NULL, 201, NULL));
	ck_assert_ptr_null(pod("b1"));
	/* policy/v1beta1 bodies and YAML are accepted too. */
	make_pod("b2", "b", NULL, true);
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = NS "/pods/b2/eviction", .ctype = "application/yaml",
	    .body = "apiVersion: policy/v1beta1\nkind: Eviction\nmetadata:\n  name: b2\n" },
	    201, NULL);
	expect_success(o);
	ck_assert_ptr_null(pod("b2"));
}
END_TEST

START_TEST(test_evict_budget)
{
	struct dc_resp resp;
	struct json_object *o;
	const char *ra = NULL;

	make_pdb("web", "{\"minAvailable\":2,\"selector\":{\"matchLabels\":{\"app\":\"web\"}}}");
	make_pod("w1", "web", "n1", true);
	make_pod("w2", "web", "n1", true);
	make_pod("w3", "web", "n1", true);
	settle();
	ck_assert_int_eq(pdb_int("web", "disruptionsAllowed"), 1);
	/* Allowed: decrement, record, DisruptionTarget, graceful delete. */
	expect_success(evict("w1", NULL, 201, NULL));
	ck_assert_int_eq(pdb_int("web", "disruptionsAllowed"), 0);
	ck_assert_ptr_nonnull(kc_json_str(pdb("web"), "status", "disruptedPods", "w1"));
	ck_assert_str_eq(cond_of(pdb("web"), "DisruptionAllowed", "reason"),
	    "InsufficientPods");
	ck_assert_ptr_nonnull(pod("w1"));
	ck_assert_ptr_nonnull(kc_json_get(pod("w1"), "metadata", "deletionTimestamp"));
	ck_assert_str_eq(cond_of(pod("w1"), "DisruptionTarget", "status"), "True");
	ck_assert_str_eq(cond_of(pod("w1"), "DisruptionTarget", "reason"),
	    "EvictionByEvictionAPI");
	ck_assert_str_eq(cond_of(pod("w1"), "DisruptionTarget", "message"),
	    "Eviction API: evicting");
	/* The terminating pod is deleted without looking at the budget. */
	expect_success(evict("w1", NULL, 201, NULL));
	/* The controller runs; the graceful delete completes (no kubelet here). */
	settle();
	ck_assert_ptr_null(pod("w1"));
	/* Blocked: 429 with upstream's message and cause, no Retry-After. */
	o = evict("w2", NULL, 429, &resp);
	ck_assert_str_eq(kc_json_str(o, "reason"), "TooManyRequests");
	ck_assert_str_eq(kc_json_str(o, "message"), EVICT_MSG);
	ck_assert_int_eq(kc_json_int(o, 0, "code"), 429);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "details",
	    "causes"), 0), "reason"), "DisruptionBudget");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "details",
	    "causes"), 0), "message"),
	    "The disruption budget web needs 2 healthy pods and has 2 currently");
	for (size_t i = 0; i < resp.nheaders; i++)
		if (strcmp(resp.headers[i].name, "Retry-After") == 0)
			ra = resp.headers[i].value;
	ck_assert_ptr_null(ra);
	resp_clear(&resp);
	dct_put(o);
	ck_assert_ptr_null(kc_json_get(pod("w2"), "metadata", "deletionTimestamp"));
	/* The controller drops the deleted pod from disruptedPods. */
	ck_assert_ptr_null(kc_json_get(pdb("web"), "status", "disruptedPods"));
	ck_assert_int_eq(pdb_int("web", "currentHealthy"), 2);
	ck_assert_int_eq(pdb_int("web", "disruptionsAllowed"), 0);
	/* A replacement makes room again. */
	make_pod("w4", "web", "n1", true);
	settle();
	ck_assert_int_eq(pdb_int("web", "disruptionsAllowed"), 1);
	/* A spec change the controller has not seen yet: 429, retry after 10 s. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = PDBS "/web",
	    .body = "{\"spec\":{\"minAvailable\":1}}", .ctype = MERGE }, 200, NULL));
	o = evict("w2", NULL, 429, &resp);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "details",
	    "causes"), 0), "message"),
	    "The disruption budget web is still being processed by the server.");
	ck_assert_int_eq(kc_json_int(o, 0, "details", "retryAfterSeconds"), 10);
	for (size_t i = 0; i < resp.nheaders; i++)
		if (strcmp(resp.headers[i].name, "Retry-After") == 0)
			ra = resp.headers[i].value;
	ck_assert_str_eq(ra, "10");
	resp_clear(&resp);
	dct_put(o);
}
END_TEST

START_TEST(test_evict_special)
{
	struct json_object *o;

	make_pdb("zero", "{\"maxUnavailable\":0,\"selector\":{\"matchLabels\":"
	    "{\"app\":\"z\"}}}");
	/* Pending (never ran) and terminal pods go without budgets. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = NS "/pods",
	    .body = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"pend\","
	    "\"labels\":{\"app\":\"z\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
	    "\"image\":\"i\"}]}}" }, 201, NULL));
	make_pod("done", "z", NULL, true);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH,
	    .target = NS "/pods/done/status", .body = "{\"status\":{\"phase\":\"Succeeded\"}}",
	    .ctype = MERGE }, 200, NULL));
	make_pod("z1", "z", NULL, true);
	settle();
	expect_success(evict("pend", NULL, 201, NULL));
	ck_assert_ptr_null(pod("pend"));
	expect_success(evict("done", NULL, 201, NULL));
	ck_assert_ptr_null(pod("done"));
	dct_put(evict("z1", NULL, 429, NULL));
	ck_assert_ptr_nonnull(pod("z1"));

	/* Two budgets: upstream's Status, HTTP 201 with code 500. */
	make_pdb("zz", "{\"minAvailable\":0,\"selector\":{\"matchLabels\":{\"app\":\"z\"}}}");
	settle();
	o = evict("z1", NULL, 201, NULL);
	ck_assert_str_eq(kc_json_str(o, "status"), "Failure");
	ck_assert_int_eq(kc_json_int(o, 0, "code"), 500);
	ck_assert_str_eq(kc_json_str(o, "message"), "This pod has more than one "
	    "PodDisruptionBudget, which the eviction subresource does not support.");
	dct_put(o);
	ck_assert_ptr_nonnull(pod("z1"));
}
END_TEST

START_TEST(test_evict_unhealthy)
{
	make_pdb("ih", "{\"minAvailable\":1,\"selector\":{\"matchLabels\":{\"app\":\"h\"}}}");
	make_pdb("aa", "{\"minAvailable\":5,\"unhealthyPodEvictionPolicy\":\"AlwaysAllow\","
	    "\"selector\":{\"matchLabels\":{\"app\":\"a\"}}}");
	make_pod("h1", "h", NULL, true);
	make_pod("h2", "h", NULL, false);
	make_pod("a1", "a", NULL, false);
	make_pod("a2", "a", NULL, true);
	settle();
	ck_assert_int_eq(pdb_int("ih", "disruptionsAllowed"), 0);
	/* IfHealthyBudget: the budget is met (1 >= 1), the unready pod may go. */
	expect_success(evict("h2", NULL, 201, NULL));
	ck_assert_ptr_null(pod("h2"));
	ck_assert_int_eq(pdb_int("ih", "disruptionsAllowed"), 0);
	/* The ready one is protected. */
	dct_put(evict("h1", NULL, 429, NULL));
	/* AlwaysAllow: unready pods go even though the budget is not met. */
	expect_success(evict("a1", NULL, 201, NULL));
	ck_assert_ptr_null(pod("a1"));
	dct_put(evict("a2", NULL, 429, NULL));
	/* IfHealthyBudget with the budget not met: the unready pod stays. */
	make_pod("h3", "h", NULL, false);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = NS "/pods/h1/"
	    "status", .body = "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":"
	    "\"False\"}]}}", .ctype = MERGE }, 200, NULL));
	settle();
	dct_put(evict("h3", NULL, 429, NULL));
	ck_assert_ptr_nonnull(pod("h3"));
}
END_TEST

START_TEST(test_evict_options)
{
	const char *uid;
	char opts[256];
	struct json_object *o;

	make_pdb("d", "{\"minAvailable\":1,\"selector\":{\"matchLabels\":{\"app\":\"d\"}}}");
	make_pod("d1", "d", "n1", true);
	make_pod("d2", "d", "n1", true);
	settle();
	/* Dry run: allowed, but nothing changes. */
	expect_success(evict("d1", "{\"dryRun\":[\"All\"]}", 201, NULL));
	ck_assert_ptr_null(kc_json_get(pod("d1"), "metadata", "deletionTimestamp"));
	ck_assert_ptr_null(cond_of(pod("d1"), "DisruptionTarget", "status"));
	ck_assert_int_eq(pdb_int("d", "disruptionsAllowed"), 1);
	expect_success(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = NS "/pods/d1/eviction?dryRun=All", .body = "{\"apiVersion\":"
	    "\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"d1\"}}" }, 201,
	    NULL));
	ck_assert_ptr_null(kc_json_get(pod("d1"), "metadata", "deletionTimestamp"));
	dct_expect_message(evict("d1", "{\"dryRun\":[\"All\",\"Some\"]}", 422, NULL),
	    "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: "
	    "[]string{\"All\", \"Some\"}: supported values: \"All\"");
	/* Every dryRun of the URL counts. */
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = NS "/pods/d1/eviction?dryRun=All&dryRun=", .body = "{\"apiVersion\":"
	    "\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"d1\"}}" }, 422,
	    NULL), "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: "
	    "[]string{\"All\", \"\"}: supported values: \"All\"");
	dct_put(evict("d1", "{\"propagationPolicy\":\"Sideways\"}", 422, NULL));
	/* Preconditions (here without a budget in the way). */
	make_pod("e1", "e", "n1", true);
	o = evict("e1", "{\"preconditions\":{\"uid\":\"other\"}}", 409, NULL);
	uid = kc_json_str(pod("e1"), "metadata", "uid");
	{
		char msg[512];

		(void)snprintf(msg, sizeof(msg), "Operation cannot be fulfilled on Pod \"e1\": "
		    "the UID in the precondition (other) does not match the UID in record (%s). "
		    "The object might have been deleted and then recreated", uid);
		dct_expect_message(o, msg);
	}
	o = evict("e1", "{\"preconditions\":{\"resourceVersion\":\"1\"}}", 409, NULL);
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"), "the ResourceVersion in the "
	    "precondition (1) does not match the ResourceVersion in record"));
	dct_put(o);
	ck_assert_ptr_null(kc_json_get(pod("e1"), "metadata", "deletionTimestamp"));
	/* gracePeriodSeconds 0 with the right uid: deleted at once. */
	(void)snprintf(opts, sizeof(opts), "{\"gracePeriodSeconds\":0,\"preconditions\":"
	    "{\"uid\":\"%s\"}}", uid);
	expect_success(evict("e1", opts, 201, NULL));
	ck_assert_ptr_null(pod("e1"));
	/* Through a budget: the decrement happens before the delete's checks. */
	o = evict("d1", "{\"preconditions\":{\"uid\":\"other\"}}", 409, NULL);
	dct_put(o);
	ck_assert_int_eq(pdb_int("d", "disruptionsAllowed"), 0);
	ck_assert_ptr_nonnull(kc_json_str(pdb("d"), "status", "disruptedPods", "d1"));
	/* The controller keeps counting d1 as disrupted until the entry expires. */
	settle();
	ck_assert_int_eq(pdb_int("d", "currentHealthy"), 1);
	ck_assert_int_eq(pdb_int("d", "disruptionsAllowed"), 0);
	fake_clock_advance((DISRUPTION_TIMEOUT_S + 1) * 1000);
	settle();
	ck_assert_int_eq(pdb_int("d", "currentHealthy"), 2);
	ck_assert_int_eq(pdb_int("d", "disruptionsAllowed"), 1);
	ck_assert_ptr_null(kc_json_get(pdb("d"), "status", "disruptedPods"));
}
END_TEST

Suite *
dc_disruption_suite(void)
{
	Suite *s = suite_create("dc_disruption");
	TCase *tc = tcase_create("pdb");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_discovery);
	tcase_add_test(tc, test_pdb_create);
	tcase_add_test(tc, test_pdb_validation);
	tcase_add_test(tc, test_pdb_table);
	tcase_add_test(tc, test_status_min_int);
	tcase_add_test(tc, test_status_percent_and_max);
	tcase_add_test(tc, test_status_pure);
	suite_add_tcase(s, tc);
	tc = tcase_create("eviction");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_evict_basics);
	tcase_add_test(tc, test_evict_budget);
	tcase_add_test(tc, test_evict_special);
	tcase_add_test(tc, test_evict_unhealthy);
	tcase_add_test(tc, test_evict_options);
	suite_add_tcase(s, tc);
	return s;
}

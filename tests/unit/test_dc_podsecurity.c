/*
 * test_dc_podsecurity.c: the PodSecurity admission plug-in
 * (podsecurity.c) through api_handle() as kubectl would and through
 * api_create_object_msg() as the simulated controllers do: the dry-run
 * warnings' grouping and order, the versions the emulated minor caps,
 * workloads, refusals of controllers' pods, and allocation failures.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/json.h>

#include "dc_testutil.h"
#include "testutil.h"

#define NS	"/api/v1/namespaces/default"

static struct dc *dc;

static void
setup_version(const char *version)
{
	struct dc_opts o = { .kube_version = version };

	dc = dct_new(version != NULL ? &o : NULL);
	ck_assert_int_eq(podsecurity_plugin.init(dc, NULL, NULL), 0);
}

static void
setup(void)
{
	setup_version(NULL);
}

static void
teardown(void)
{
	podsecurity_plugin.fini(dc);
	ck_assert_ptr_null(plugin_state(dc, &podsecurity_plugin));
	dc = api_free(dc);
}

/* Runs a request; 'out' (may be NULL) gets the reply, to be cleared. */
static struct json_object *
call(enum dc_method m, const char *target, const char *body, int want, struct dc_resp *out)
{
	return dct_run(dc, &(struct dct_call){ .method = m, .target = target, .body = body,
	    .ctype = m == DC_PATCH ? "application/merge-patch+json" : NULL }, want, out);
}

/* Sets the labels of namespace "default" (a merge patch of metadata.labels). */
static void
label(const char *labels, struct dc_resp *out)
{
	char body[1024];

	(void)snprintf(body, sizeof(body), "{\"metadata\":{\"labels\":%s}}", labels);
	dct_put(call(DC_PATCH, "/api/v1/namespaces/default", body, 200, out));
}

/* A pod "name" with one container "c" and the given spec members. */
static struct json_object *
pod(const char *name, const char *extra, int want, struct dc_resp *out)
{
	char body[2048];

	(void)snprintf(body, sizeof(body), "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"containers\":[{\"name\":\"c\","
	    "\"image\":\"x\"%s}]}}", name, extra);
	return call(DC_POST, NS "/pods", body, want, out);
}

static void
expect_warnings(struct dc_resp *r, const char *const *want, size_t n)
{
	ck_assert_uint_eq(r->nheaders, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_str_eq(r->headers[i].name, "Warning");
		ck_assert_str_eq(r->headers[i].value, want[i]);
	}
	resp_clear(r);
}

#define PRIV	",\"securityContext\":{\"privileged\":true}"

START_TEST(dry_run_groups_pods)
{
	static const char *const want[] = {
		"299 - \"existing pods in namespace \\\"default\\\" violate the new PodSecurity "
		    "enforce level \\\"baseline:v1.30\\\"\"",
		"299 - \"a (and 2 other pods): privileged\"",
		"299 - \"d: host namespaces, privileged\"",
	};
	struct dc_resp r;

	dct_put(pod("c", PRIV, 201, NULL));
	dct_put(pod("a", PRIV, 201, NULL));
	dct_put(pod("b", PRIV, 201, NULL));
	dct_put(pod("ok", "", 201, NULL));
	dct_put(call(DC_POST, NS "/pods", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"name\":\"d\"},\"spec\":{\"hostPID\":true,\"containers\":"
	    "[{\"name\":\"c\",\"image\":\"x\"" PRIV "}]}}", 201, NULL));
	label("{\"pod-security.kubernetes.io/enforce\":\"baseline\","
	    "\"pod-security.kubernetes.io/enforce-version\":\"v1.30\"}", &r);
	expect_warnings(&r, want, KC_ARRAY_SIZE(want));
	/* the same level again, and a looser one, evaluate nothing */
	label("{\"team\":\"ml\"}", &r);
	expect_warnings(&r, NULL, 0);
	label("{\"pod-security.kubernetes.io/enforce\":\"privileged\"}", &r);
	expect_warnings(&r, NULL, 0);
}
END_TEST

START_TEST(refusal_and_warning)
{
	struct dc_resp r;
	struct json_object *o;

	label("{\"pod-security.kubernetes.io/enforce\":\"baseline\","
	    "\"pod-security.kubernetes.io/warn\":\"restricted\","
	    "\"pod-security.kubernetes.io/audit\":\"restricted\"}", NULL);
	o = pod("p", PRIV, 403, NULL);
	ck_assert_str_eq(kc_json_str(o, "reason"), "Forbidden");
	ck_assert_str_eq(kc_json_str(o, "details", "kind"), "pods");
	ck_assert_str_eq(kc_json_str(o, "details", "name"), "p");
	dct_expect_message(o, "pods \"p\" is forbidden: violates PodSecurity \"baseline:latest\": "
	    "privileged (container \"c\" must not set securityContext.privileged=true)");
	dct_put(pod("q", "", 201, &r));
	ck_assert_uint_eq(r.nheaders, 1);
	ck_assert_ptr_nonnull(strstr(r.headers[0].value, "would violate PodSecurity "
	    "\\\"restricted:latest\\\": allowPrivilegeEscalation != false (container "
	    "\\\"c\\\" must set securityContext.allowPrivilegeEscalation=false)"));
	resp_clear(&r);
}
END_TEST

START_TEST(labels_validated)
{
	struct json_object *o;

	o = call(DC_PATCH, "/api/v1/namespaces/default", "{\"metadata\":{\"labels\":{"
	    "\"pod-security.kubernetes.io/enforce\":\"bogus\","
	    "\"pod-security.kubernetes.io/audit-version\":\"1.30\"}}}", 403, NULL);
	dct_expect_message(o, "Namespace \"default\" is invalid: ["
	    "metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"bogus\": "
	    "must be one of privileged, baseline, restricted, "
	    "metadata.labels[pod-security.kubernetes.io/audit-version]: Invalid value: "
	    "\"1.30\": must be \"latest\" or \"v1.x\"]");
	o = call(DC_POST, "/api/v1/namespaces", "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
	    "\"metadata\":{\"name\":\"n\",\"labels\":{"
	    "\"pod-security.kubernetes.io/warn\":\"Restricted\"}}}", 403, NULL);
	dct_expect_message(o, "Namespace \"n\" is invalid: "
	    "metadata.labels[pod-security.kubernetes.io/warn]: Invalid value: \"Restricted\": "
	    "must be one of privileged, baseline, restricted");
	dct_put(call(DC_POST, "/api/v1/namespaces", "{\"apiVersion\":\"v1\",\"kind\":"
	    "\"Namespace\",\"metadata\":{\"name\":\"n\",\"labels\":{"
	    "\"pod-security.kubernetes.io/warn\":\"restricted\"}}}", 201, NULL));
}
END_TEST

/* Labels stored before the plug-in ran: a bad enforce level enforces restricted. */
START_TEST(bad_labels_stored)
{
	podsecurity_plugin.fini(dc);
	label("{\"pod-security.kubernetes.io/enforce\":\"strict\","
	    "\"pod-security.kubernetes.io/warn\":\"loose\"}", NULL);
	ck_assert_int_eq(podsecurity_plugin.init(dc, NULL, NULL), 0);
	dct_expect_message(pod("a", "", 403, NULL), "pods \"a\" is forbidden: violates "
	    "PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false (container "
	    "\"c\" must set securityContext.allowPrivilegeEscalation=false), unrestricted "
	    "capabilities (container \"c\" must set securityContext.capabilities.drop="
	    "[\"ALL\"]), runAsNonRoot != true (pod or container \"c\" must set "
	    "securityContext.runAsNonRoot=true), seccompProfile (pod or container \"c\" "
	    "must set securityContext.seccompProfile.type to \"RuntimeDefault\" or "
	    "\"Localhost\")");
	/* an update that keeps the same errors is let through; a new error is not */
	label("{\"team\":\"ml\"}", NULL);
	dct_put(call(DC_PATCH, "/api/v1/namespaces/default", "{\"metadata\":{\"labels\":{"
	    "\"pod-security.kubernetes.io/audit\":\"x\"}}}", 403, NULL));
}
END_TEST

#define PROBE_HOST	",\"livenessProbe\":{\"httpGet\":{\"host\":\"10.0.0.1\",\"port\":80}}"

/* The devcluster's minor caps "latest" and newer versions: v1.34's check. */
START_TEST(emulated_minor)
{
	label("{\"pod-security.kubernetes.io/enforce\":\"baseline\"}", NULL);
	dct_put(pod("a", PROBE_HOST, 201, NULL));
	label("{\"pod-security.kubernetes.io/enforce-version\":\"v1.40\"}", NULL);
	dct_put(pod("b", PROBE_HOST, 201, NULL));
	teardown();
	setup_version("1.34");
	label("{\"pod-security.kubernetes.io/enforce\":\"baseline\"}", NULL);
	dct_expect_message(pod("a", PROBE_HOST, 403, NULL), "pods \"a\" is forbidden: "
	    "violates PodSecurity \"baseline:latest\": probe or lifecycle host (container "
	    "\"c\" uses probe or lifecycle host \"10.0.0.1\")");
	label("{\"pod-security.kubernetes.io/enforce-version\":\"v1.33\"}", NULL);
	dct_put(pod("a", PROBE_HOST, 201, NULL));
}
END_TEST

START_TEST(workloads_and_controllers)
{
	static const char deploy[] = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
	    "\"metadata\":{\"name\":\"web\"},\"spec\":{\"selector\":{\"matchLabels\":"
	    "{\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"web\"}},"
	    "\"spec\":{\"containers\":[{\"name\":\"m\",\"image\":\"x\"" PRIV "}]}}}}";
	struct json_object *p;
	struct dc_resp r;
	char msg[512];

	label("{\"pod-security.kubernetes.io/enforce\":\"baseline\"}", NULL);
	/* warn follows enforce: the template is warned about, the Deployment stored */
	dct_put(call(DC_POST, "/apis/apps/v1/namespaces/default/deployments", deploy, 201, &r));
	ck_assert_uint_eq(r.nheaders, 1);
	ck_assert_str_eq(r.headers[0].value, "299 - \"would violate PodSecurity "
	    "\\\"baseline:latest\\\": privileged (container \\\"m\\\" must not set "
	    "securityContext.privileged=true)\"");
	resp_clear(&r);
	/* a pod a controller creates is refused like any other, with the message */
	static const char text[] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":"
	    "{\"generateName\":\"web-\",\"namespace\":\"default\"},\"spec\":{\"containers\":"
	    "[{\"name\":\"m\",\"image\":\"x\"" PRIV "}]}}";

	ck_assert_int_eq(kc_json_parse(text, strlen(text), &p, NULL), 0);
	ck_assert_int_eq(api_create_object_msg(dc, dct_type(dc, "pods"), p, NULL, msg,
	    sizeof(msg)), KC_EFORBIDDEN);
	ck_assert_msg(strncmp(msg, "pods \"web-", 10) == 0, "%s", msg);
	ck_assert_ptr_nonnull(strstr(msg, "\" is forbidden: violates PodSecurity "
	    "\"baseline:latest\": privileged (container \"m\" must not set "
	    "securityContext.privileged=true)"));
	ck_assert_uint_eq(coll_count(dct_type(dc, "pods")->coll, "default"), 0);
}
END_TEST

/*
 * Every allocation failure answers 500 and leaks nothing; then the answer.
 * (A create may fail after its commit: creates here use generateName.)
 */
static void
until_answered(enum dc_method m, const char *target, const char *body, int want)
{
	for (size_t budget = 0;; budget++) {
		struct dc_resp r;
		int status;

		dct_raw(dc, &(struct dct_call){ .method = m, .target = target, .body = body,
		    .ctype = m == DC_PATCH ? "application/merge-patch+json" : NULL }, &r, budget);
		status = r.status;
		resp_clear(&r);
		if (status == want)
			return;
		ck_assert_msg(status == 500, "budget %zu: %d", budget, status);
		ck_assert_uint_lt(budget, 100000);
	}
}

START_TEST(allocation_failures)
{
	dct_put(pod("a", PRIV, 201, NULL));
	dct_put(pod("b", "", 201, NULL));
	until_answered(DC_PATCH, "/api/v1/namespaces/default", "{\"metadata\":{\"labels\":{"
	    "\"pod-security.kubernetes.io/enforce\":\"baseline\","
	    "\"pod-security.kubernetes.io/warn\":\"restricted\","
	    "\"pod-security.kubernetes.io/audit\":\"restricted\"}}}", 200);
	until_answered(DC_POST, NS "/pods", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\","
	    "\"image\":\"x\"" PRIV "}]}}", 403);
	until_answered(DC_POST, NS "/pods", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"generateName\":\"q-\"},\"spec\":{\"containers\":"
	    "[{\"name\":\"c\",\"image\":\"x\"}]}}", 201);
}
END_TEST

Suite *
dc_podsecurity_suite(void)
{
	Suite *s = suite_create("dc_podsecurity");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, dry_run_groups_pods);
	tcase_add_test(tc, refusal_and_warning);
	tcase_add_test(tc, labels_validated);
	tcase_add_test(tc, bad_labels_stored);
	tcase_add_test(tc, emulated_minor);
	tcase_add_test(tc, workloads_and_controllers);
	tcase_add_test(tc, allocation_failures);
	suite_add_tcase(s, tc);
	return s;
}

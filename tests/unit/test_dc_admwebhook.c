/*
 * test_dc_admwebhook.c: devcluster/admwebhook.c, admission webhooks. The
 * matching and the answer checks on their own, then whole requests
 * through api_handle() as http.c sends them (held while a call runs),
 * against a loopback TLS webhook (tests/server/testserver.c) that
 * mutates (/mutate: a JSON patch adding the annotation example.com/by
 * with the requesting user, and a warning), validates (/validate: denies
 * a ConfigMap with data.deny, 403 and a message) or breaks (/baduid).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/json.h>
#include <kc/str.h>
#include <kc/transport.h>

#include "../server/testserver.h"
#include "dc_testutil.h"
#include "testutil.h"

#define CMS	"/api/v1/namespaces/default/configmaps"
#define MWCS	"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
#define VWCS	"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"

static struct dc *dc;
static struct ts_server *ts;

/* The answer of the test webhook to 'review' at 'path'. */
static char *
answer(void *arg, const struct ts_request *rq, size_t *ret_len)
{
	struct json_object *review = NULL, *req, *resp, *w;
	const char *uid, *user;
	char patch[512], *b64 = NULL;
	bool ok = true;

	(void)arg;
	if (kc_json_parse(rq->body, rq->body_len, &review, NULL) < 0)
		return NULL;
	req = kc_json_get(review, "request");
	uid = kc_json_str(req, "uid");
	user = kc_json_str(req, "userInfo", "username");
	resp = json_object_new_object();
	ok = kc_json_set_str(resp, "uid", strncmp(rq->path, "/baduid", 7) == 0 ? "other" :
	    uid) == 0 && kc_json_set_bool(resp, "allowed", true) == 0;
	if (strncmp(rq->path, "/mutate", 7) == 0) {
		(void)snprintf(patch, sizeof(patch), "[{\"op\":\"add\",\"path\":\"/metadata/"
		    "annotations\",\"value\":{\"example.com/by\":\"%s\"}}]", user != NULL ? user :
		    "");
		ok = ok && kc_base64_encode(patch, strlen(patch), 0, &b64, NULL) == 0 &&
		    kc_json_set_str(resp, "patch", b64) == 0 &&
		    kc_json_set_str(resp, "patchType", "JSONPatch") == 0 &&
		    (w = json_object_new_array()) != NULL &&
		    kc_json_put(resp, "warnings", w) == 0 &&
		    kc_json_append(w, json_object_new_string("mutated \"here\"\n")) == 0;
		kc_free(b64);
	}
	if (strncmp(rq->path, "/invalid", 8) == 0) {
		static const char bad[] = "[{\"op\":\"add\",\"path\":\"/metadata/labels\","
		    "\"value\":{\"bad key\":\"x\"}}]";

		ok = ok && kc_base64_encode(bad, strlen(bad), 0, &b64, NULL) == 0 &&
		    kc_json_set_str(resp, "patch", b64) == 0 &&
		    kc_json_set_str(resp, "patchType", "JSONPatch") == 0;
		kc_free(b64);
	}
	if (strncmp(rq->path, "/validate", 9) == 0 &&
	    kc_json_get(req, "object", "data", "deny") != NULL) {
		struct json_object *st = json_object_new_object();

		ok = ok && kc_json_set_bool(resp, "allowed", false) == 0 && st != NULL &&
		    kc_json_put(resp, "status", st) == 0 && kc_json_set_int(st, "code", 403) == 0 &&
		    kc_json_set_str(st, "message", "deny is not allowed") == 0;
	}
	if (strncmp(rq->path, "/validate", 9) == 0 &&
	    strcmp(kc_json_str(req, "operation"), "DELETE") == 0 &&
	    kc_json_get(req, "oldObject", "data", "keep") != NULL) {
		ok = ok && kc_json_set_bool(resp, "allowed", false) == 0;
	}
	return dct_review_answer(review, resp, ok, ret_len);
}

/* A configuration of one webhook at 'path' for ConfigMaps, 'extra' JSON members. */
static void
add_config(const char *collection, const char *name, const char *path, const char *ops,
    const char *extra)
{
	char *ca = NULL;
	const char *pem = ts_ca_pem(ts);

	ck_assert_int_eq(kc_base64_encode(pem, strlen(pem), 0, &ca, NULL), 0);
	dct_post(dc, 201, collection, "{\"metadata\":{\"name\":\"%s\"},\"webhooks\":[{\"name\":"
	    "\"%s.example.com\",\"clientConfig\":{\"url\":\"https://localhost:%d%s\","
	    "\"caBundle\":\"%s\"},\"rules\":[{\"operations\":[%s],\"apiGroups\":[\"\"],"
	    "\"apiVersions\":[\"v1\"],\"resources\":[\"configmaps\"]}],\"sideEffects\":"
	    "\"None\",\"admissionReviewVersions\":[\"v1\"]%s}]}", name, name, ts_port(ts),
	    path, ca, ops, extra);
	kc_free(ca);
}

static void
setup(void)
{
	ck_assert_int_eq(kc_transport_global_init(), 0);
	ck_assert_int_eq(ts_start(&(struct ts_opts){
		.script_text = "request POST /\nrepeat forever\nhandler\n",
		.dns_name = "hook.default.svc", .handler = answer,
	}, &ts), 0);
	dc = dct_new(NULL);
	ck_assert_int_eq(admwebhook_plugin.init(dc, NULL, NULL), 0);
}

static void
teardown(void)
{
	dc = api_free(dc);
	ts = ts_stop(ts);
	kc_transport_global_cleanup();
}

static bool
match(const char *rule, const struct admwebhook_attrs *a)
{
	struct json_object *r = NULL;
	bool m;

	ck_assert_int_eq(kc_json_parse(rule, strlen(rule), &r, NULL), 0);
	m = admwebhook_rule_matches(r, a);
	json_object_put(r);
	return m;
}

START_TEST(rules)
{
	struct admwebhook_attrs pod = {
		.op = "CREATE", .group = "", .version = "v1", .resource = "pods",
		.subresource = "", .ns = "default",
	}, status = pod, ns = {
		.op = "UPDATE", .group = "", .version = "v1", .resource = "namespaces",
		.subresource = "", .ns = "team", .ns_object = true,
	}, node = {
		.op = "DELETE", .group = "", .version = "v1", .resource = "nodes",
		.subresource = "", .ns = "",
	};

	status.op = "UPDATE";
	status.subresource = "status";
	ck_assert(match("{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":"
	    "[\"v1\"],\"resources\":[\"pods\"]}", &pod));
	ck_assert(!match("{\"operations\":[\"UPDATE\"],\"apiGroups\":[\"\"],\"apiVersions\":"
	    "[\"v1\"],\"resources\":[\"pods\"]}", &pod));
	ck_assert(!match("{\"operations\":[\"*\"],\"apiGroups\":[\"apps\"],\"apiVersions\":"
	    "[\"*\"],\"resources\":[\"*\"]}", &pod));
	ck_assert(!match("{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":"
	    "[\"v2\"],\"resources\":[\"*\"]}", &pod));
	/* "*" is every resource but no subresource; all of them with a wildcard subresource. */
	ck_assert(match("{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":"
	    "[\"*\"],\"resources\":[\"*\"]}", &pod));
	ck_assert(!match("{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":"
	    "[\"*\"],\"resources\":[\"*\"]}", &status));
	ck_assert(match("{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":"
	    "[\"*\"],\"resources\":[\"*/*\"]}", &status));
	ck_assert(match("{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":"
	    "[\"*\"],\"resources\":[\"pods/status\"]}", &status));
	ck_assert(!match("{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":"
	    "[\"*\"],\"resources\":[\"pods/status\"]}", &pod));
	ck_assert(match("{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":"
	    "[\"*\"],\"resources\":[\"*/status\"]}", &status));
	/* Scope: a Namespace is cluster-scoped, whatever its request's namespace. */
	ck_assert(match("{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":"
	    "[\"*\"],\"resources\":[\"*\"],\"scope\":\"Namespaced\"}", &pod));
	ck_assert(!match("{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":"
	    "[\"*\"],\"resources\":[\"*\"],\"scope\":\"Cluster\"}", &pod));
	ck_assert(match("{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":"
	    "[\"*\"],\"resources\":[\"*\"],\"scope\":\"Cluster\"}", &ns));
	ck_assert(!match("{\"operations\":[\"*\"],\"apiGroups\":[\"*\"],\"apiVersions\":"
	    "[\"*\"],\"resources\":[\"*\"],\"scope\":\"Namespaced\"}", &ns));
	ck_assert(match("{\"operations\":[\"DELETE\"],\"apiGroups\":[\"\"],\"apiVersions\":"
	    "[\"v1\"],\"resources\":[\"nodes\"],\"scope\":\"Cluster\"}", &node));
	ck_assert(!match("{\"operations\":[\"DELETE\"],\"apiGroups\":[\"\"],\"apiVersions\":"
	    "[\"v1\"],\"resources\":[\"nodes\"],\"scope\":\"Namespaced\"}", &node));
}
END_TEST

static int
check(const char *rv, bool mutating, const char *body, struct admwebhook_answer *a,
    char *err)
{
	return admwebhook_check(rv, "u-1", mutating, body, strlen(body), a, err, 512);
}

START_TEST(answers)
{
	struct admwebhook_answer a = { 0 };
	struct json_object *d, *res = NULL;
	char err[512];

	ck_assert_int_eq(check("v1", false, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
	    "\"AdmissionReview\"}", &a, err), KC_EINTERNAL);
	ck_assert_str_eq(err, "webhook response was absent");
	ck_assert_int_eq(check("v1", false, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
	    "\"AdmissionReview\",\"response\":{\"uid\":\"x\",\"allowed\":true}}", &a, err),
	    KC_EINTERNAL);
	ck_assert_str_eq(err, "expected response.uid=\"u-1\", got \"x\"");
	ck_assert_int_eq(check("v1", false, "{\"apiVersion\":\"v1\",\"kind\":\"Status\","
	    "\"response\":{\"uid\":\"u-1\",\"allowed\":true}}", &a, err), KC_EINTERNAL);
	ck_assert_str_eq(err, "expected webhook response of admission.k8s.io/v1, "
	    "Kind=AdmissionReview, got /v1, Kind=Status");
	ck_assert_int_eq(check("v1", false, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
	    "\"AdmissionReview\",\"response\":{\"uid\":\"u-1\",\"allowed\":true,\"patch\":"
	    "\"W10=\"}}", &a, err), KC_EINTERNAL);
	ck_assert_str_eq(err, "validating webhook may not return response.patch");
	ck_assert_int_eq(check("v1", true, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
	    "\"AdmissionReview\",\"response\":{\"uid\":\"u-1\",\"allowed\":true,\"patch\":"
	    "\"W10=\"}}", &a, err), KC_EINTERNAL);
	ck_assert_str_eq(err, "webhook returned response.patch but not response.patchType");
	ck_assert_int_eq(check("v1", true, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
	    "\"AdmissionReview\",\"response\":{\"uid\":\"u-1\",\"allowed\":true,\"patchType\":"
	    "\"JSONPatch\"}}", &a, err), KC_EINTERNAL);
	ck_assert_str_eq(err, "webhook returned response.patchType but not response.patch");
	ck_assert_int_eq(check("v1", true, "not json", &a, err), KC_EPARSE);
	/* v1beta1: neither uid nor kind checked; a patch is a JSON patch. */
	ck_assert_int_eq(check("v1beta1", true, "{\"response\":{\"allowed\":true,\"patch\":"
	    "\"W3sib3AiOiJhZGQiLCJwYXRoIjoiL2EiLCJ2YWx1ZSI6MX1d\",\"warnings\":[\"w1\",\"w2\"]}}",
	    &a, err), 0);
	ck_assert(a.allowed);
	ck_assert_uint_eq(json_object_array_length(a.patch), 1);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(a.patch, 0), "op"), "add");
	ck_assert_uint_eq(a.nwarnings, 2);
	ck_assert_str_eq(a.warnings[1], "w2");
	admwebhook_answer_clear(&a);
	ck_assert_int_eq(check("v1", true, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
	    "\"AdmissionReview\",\"response\":{\"uid\":\"u-1\",\"allowed\":true,\"patch\":"
	    "\"e30=\",\"patchType\":\"JSONPatch\"}}", &a, err), KC_EINVALID);
	ck_assert_int_eq(check("v1", false, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":"
	    "\"AdmissionReview\",\"response\":{\"uid\":\"u-1\",\"allowed\":false,\"status\":"
	    "{\"code\":200,\"reason\":\"NotGood\"}}}", &a, err), 0);
	ck_assert(!a.allowed);
	/* Denials: the code is at least 400, the message says who denied. */
	d = admwebhook_denial("v.example.com", a.result);
	ck_assert_int_eq(kc_json_int(d, 0, "code"), 400);
	ck_assert_str_eq(kc_json_str(d, "status"), "Failure");
	ck_assert_str_eq(kc_json_str(d, "reason"), "NotGood");
	ck_assert_str_eq(kc_json_str(d, "message"), "admission webhook \"v.example.com\" denied "
	    "the request: NotGood");
	json_object_put(d);
	admwebhook_answer_clear(&a);
	d = admwebhook_denial("v.example.com", NULL);
	ck_assert_str_eq(kc_json_str(d, "message"), "admission webhook \"v.example.com\" denied "
	    "the request without explanation");
	json_object_put(d);
	ck_assert_int_eq(kc_json_parse("{\"code\":422,\"message\":\"m\"}", 26, &res, NULL), 0);
	d = admwebhook_denial("v.example.com", res);
	ck_assert_int_eq(kc_json_int(d, 0, "code"), 422);
	ck_assert_str_eq(kc_json_str(d, "message"), "admission webhook \"v.example.com\" denied "
	    "the request: m");
	json_object_put(d);
	json_object_put(res);
}
END_TEST

START_TEST(configurations)
{
	struct json_object *o;

	/* Defaults. */
	add_config(VWCS, "v", "/validate", "\"CREATE\"", "");
	o = dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = VWCS "/v" }, 200, NULL);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "webhooks"), 0),
	    "failurePolicy"), "Fail");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "webhooks"), 0),
	    "matchPolicy"), "Equivalent");
	ck_assert_int_eq(kc_json_int(json_object_array_get_idx(kc_json_get(o, "webhooks"), 0),
	    0, "timeoutSeconds"), 10);
	dct_put(o);
	/* Validation, with upstream's messages. */
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = MWCS, .body =
	    "{\"metadata\":{\"name\":\"m\"},\"webhooks\":[{\"name\":\"m.example.com\","
	    "\"clientConfig\":{\"url\":\"https://x.example.com/\"},\"admissionReviewVersions\":"
	    "[\"v1\"],\"timeoutSeconds\":31,\"rules\":[{\"operations\":[\"PATCH\"],"
	    "\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":[\"pods\"]}]}]}" },
	    422, NULL);
	ck_assert_str_eq(kc_json_str(o, "message"), "MutatingWebhookConfiguration."
	    "admissionregistration.k8s.io \"m\" is invalid: [webhooks[0].rules[0].operations[0]: "
	    "Unsupported value: \"PATCH\": supported values: \"*\", \"CONNECT\", \"CREATE\", "
	    "\"DELETE\", \"UPDATE\", webhooks[0].sideEffects: Required value: must specify one of "
	    "None, NoneOnDryRun, webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value "
	    "must be between 1 and 30 seconds]");
	dct_put(o);
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = VWCS, .body =
	    "{\"metadata\":{\"name\":\"w\"},\"webhooks\":[{\"name\":\"short\",\"sideEffects\":"
	    "\"None\",\"admissionReviewVersions\":[\"v1\"]}]}" }, 422, NULL);
	ck_assert_str_eq(kc_json_str(o, "message"), "ValidatingWebhookConfiguration."
	    "admissionregistration.k8s.io \"w\" is invalid: [webhooks[0].name: Invalid value: "
	    "\"short\": should be a domain with at least three segments separated by dots, "
	    "webhooks[0].clientConfig: Required value: exactly one of url or service is "
	    "required]");
	dct_put(o);
}
END_TEST

/* The last request the webhook got, parsed. */
static struct json_object *
last_review(void)
{
	const struct ts_request *rq = ts_request(ts, ts_nrequests(ts) - 1);
	struct json_object *o = NULL;

	ck_assert_int_eq(kc_json_parse(rq->body, rq->body_len, &o, NULL), 0);
	return o;
}

START_TEST(mutate_validate)
{
	struct dc_resp resp;
	struct json_object *o, *rv;

	add_config(MWCS, "m", "/mutate", "\"CREATE\",\"UPDATE\"", "");
	add_config(VWCS, "v", "/validate", "\"*\"", "");
	/* Mutated (the user recorded), validated, the warning passed on. */
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = CMS,
	    .body = "{\"metadata\":{\"name\":\"a\",\"annotations\":{\"example.com/by\":"
	    "\"forged\"}},\"data\":{\"k\":\"v\"}}", .imp_user = "alice" }, 201, &resp);
	ck_assert_str_eq(kc_json_str(o, "metadata", "annotations", "example.com/by"), "alice");
	ck_assert_uint_eq(resp.nheaders, 1);
	ck_assert_str_eq(resp.headers[0].name, "Warning");
	/* Quoted as Go quotes: a newline cannot end the header. */
	ck_assert_str_eq(resp.headers[0].value, "299 - \"mutated \\\"here\\\"\\n\"");
	resp_clear(&resp);
	/* The validating webhook saw the mutated object, with its uid, and the user. */
	rv = last_review();
	ck_assert_str_eq(kc_json_str(rv, "request", "object", "metadata", "annotations",
	    "example.com/by"), "alice");
	ck_assert_str_eq(kc_json_str(rv, "request", "object", "metadata", "uid"),
	    kc_json_str(o, "metadata", "uid"));
	ck_assert_str_eq(kc_json_str(rv, "request", "userInfo", "username"), "alice");
	ck_assert_str_eq(kc_json_str(rv, "request", "operation"), "CREATE");
	ck_assert_str_eq(kc_json_str(rv, "request", "namespace"), "default");
	ck_assert_str_eq(kc_json_str(rv, "request", "kind", "kind"), "ConfigMap");
	ck_assert_str_eq(kc_json_str(rv, "request", "options", "kind"), "CreateOptions");
	ck_assert(!kc_json_bool(rv, true, "request", "dryRun"));
	ck_assert_ptr_null(kc_json_get(rv, "request", "oldObject"));
	dct_put(rv);
	dct_put(o);
	/* Denied, with the webhook's code and message. */
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = CMS,
	    .body = "{\"metadata\":{\"name\":\"b\"},\"data\":{\"deny\":\"1\"}}" }, 403, NULL);
	ck_assert_str_eq(kc_json_str(o, "message"), "admission webhook \"v.example.com\" denied "
	    "the request: deny is not allowed");
	dct_put(o);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = CMS "/b" }, 404,
	    NULL));
	/* An update that would add it is denied too; the old object travels. */
	o = dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = CMS "/a",
	    .ctype = "application/merge-patch+json", .body = "{\"data\":{\"deny\":\"1\"}}" },
	    403, NULL);
	dct_put(o);
	rv = last_review();
	ck_assert_str_eq(kc_json_str(rv, "request", "operation"), "UPDATE");
	ck_assert_str_eq(kc_json_str(rv, "request", "oldObject", "data", "k"), "v");
	ck_assert_str_eq(kc_json_str(rv, "request", "options", "kind"), "UpdateOptions");
	dct_put(rv);
	/* A dry run says so. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = CMS "?dryRun=All",
	    .body = "{\"metadata\":{\"name\":\"c\"}}" }, 201, NULL));
	rv = last_review();
	ck_assert(kc_json_bool(rv, false, "request", "dryRun"));
	dct_put(rv);
	/* Deletes are admitted: one that keeps is refused, without explanation. */
	dct_post(dc, 201, CMS, "{\"metadata\":{\"name\":\"k\"},\"data\":{\"keep\":\"1\"}}");
	o = dct_run(dc, &(struct dct_call){ .method = DC_DELETE, .target = CMS "/k" }, 400,
	    NULL);
	ck_assert_str_eq(kc_json_str(o, "message"), "admission webhook \"v.example.com\" denied "
	    "the request without explanation");
	dct_put(o);
	rv = last_review();
	ck_assert_str_eq(kc_json_str(rv, "request", "operation"), "DELETE");
	ck_assert_ptr_null(kc_json_get(rv, "request", "object"));
	ck_assert_str_eq(kc_json_str(rv, "request", "options", "kind"), "DeleteOptions");
	dct_put(rv);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_DELETE, .target = CMS "/a" }, 200,
	    NULL));
}
END_TEST

START_TEST(selectors)
{
	size_t before;

	add_config(VWCS, "v", "/validate", "\"CREATE\"",
	    ",\"namespaceSelector\":{\"matchLabels\":{\"team\":\"a\"}},"
	    "\"objectSelector\":{\"matchExpressions\":[{\"key\":\"skip\",\"operator\":"
	    "\"DoesNotExist\"}]}");
	/* default has no team label: not called. */
	before = ts_nrequests(ts);
	dct_post(dc, 201, CMS, "{\"metadata\":{\"name\":\"a\"},\"data\":{\"deny\":\"1\"}}");
	ck_assert_uint_eq(ts_nrequests(ts), before);
	dct_post(dc, 201, "/api/v1/namespaces",
	    "{\"metadata\":{\"name\":\"ta\",\"labels\":{\"team\":"
	    "\"a\"}}}");
	dct_post(dc, 403, "/api/v1/namespaces/ta/configmaps", "{\"metadata\":{\"name\":\"a\"},"
	    "\"data\":{\"deny\":\"1\"}}");
	ck_assert_uint_eq(ts_nrequests(ts), before + 1);
	/* The object selector leaves out labelled objects. */
	dct_post(dc, 201, "/api/v1/namespaces/ta/configmaps", "{\"metadata\":{\"name\":\"b\","
	    "\"labels\":{\"skip\":\"yes\"}},\"data\":{\"deny\":\"1\"}}");
	ck_assert_uint_eq(ts_nrequests(ts), before + 1);
	/* A Namespace is matched by its own labels, the new ones on create and update. */
	{
		char *ca = NULL;
		const char *pem = ts_ca_pem(ts);
		struct json_object *rv;

		ck_assert_int_eq(kc_base64_encode(pem, strlen(pem), 0, &ca, NULL), 0);
		dct_post(dc, 201, VWCS, "{\"metadata\":{\"name\":\"ns\"},\"webhooks\":[{\"name\":"
		    "\"ns.example.com\",\"clientConfig\":{\"url\":\"https://localhost:%d/"
		    "validate\",\"caBundle\":\"%s\"},\"rules\":[{\"operations\":[\"*\"],"
		    "\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"resources\":"
		    "[\"namespaces\"],\"scope\":\"Cluster\"}],\"namespaceSelector\":"
		    "{\"matchLabels\":{\"team\":\"b\"}},\"sideEffects\":\"None\","
		    "\"admissionReviewVersions\":[\"v1\"]}]}", ts_port(ts), ca);
		kc_free(ca);
		dct_post(dc, 201, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"tb\"}}");
		ck_assert_uint_eq(ts_nrequests(ts), before + 1);
		dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH,
		    .target = "/api/v1/namespaces/tb", .ctype = "application/merge-patch+json",
		    .body = "{\"metadata\":{\"labels\":{\"team\":\"b\"}}}" }, 200, NULL));
		ck_assert_uint_eq(ts_nrequests(ts), before + 2);
		rv = last_review();
		ck_assert_str_eq(kc_json_str(rv, "request", "namespace"), "tb");
		ck_assert_str_eq(kc_json_str(rv, "request", "name"), "tb");
		dct_put(rv);
		dct_post(dc, 201, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"tc\",\"labels\":"
		    "{\"team\":\"b\"}}}");
		ck_assert_uint_eq(ts_nrequests(ts), before + 3);
		rv = last_review();
		ck_assert_ptr_null(kc_json_get(rv, "request", "namespace"));
		dct_put(rv);
	}
}
END_TEST

START_TEST(failures)
{
	struct json_object *o;
	const char *msg;
	char want[256];

	/* Nothing listens at port 1: Fail answers 500, Ignore lets it through. */
	dct_post(dc, 201, VWCS, "{\"metadata\":{\"name\":\"down\"},\"webhooks\":[{\"name\":"
	    "\"down.example.com\",\"clientConfig\":{\"url\":\"https://127.0.0.1:1/x\"},"
	    "\"rules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":"
	    "[\"v1\"],\"resources\":[\"configmaps\"]}],\"sideEffects\":\"None\","
	    "\"admissionReviewVersions\":[\"v1\"]}]}");
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = CMS,
	    .body = "{\"metadata\":{\"name\":\"a\"}}" }, 500, NULL);
	msg = kc_json_str(o, "message");
	(void)snprintf(want, sizeof(want), "Internal error occurred: failed calling webhook "
	    "\"down.example.com\": failed to call webhook: Post \"https://127.0.0.1:1/x?"
	    "timeout=10s\": ");
	ck_assert_msg(msg != NULL && strncmp(msg, want, strlen(want)) == 0, "%s", msg);
	dct_put(o);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = VWCS "/down",
	    .ctype = "application/json-patch+json", .body = "[{\"op\":\"replace\",\"path\":"
	    "\"/webhooks/0/failurePolicy\",\"value\":\"Ignore\"}]" }, 200, NULL));
	dct_post(dc, 201, CMS, "{\"metadata\":{\"name\":\"a\"}}");
	/* A Service that does not exist. */
	dct_post(dc, 201, VWCS, "{\"metadata\":{\"name\":\"svc\"},\"webhooks\":[{\"name\":"
	    "\"svc.example.com\",\"clientConfig\":{\"service\":{\"namespace\":\"default\","
	    "\"name\":\"hook\",\"path\":\"/validate\"}},"
	    "\"rules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],\"apiVersions\":"
	    "[\"v1\"],\"resources\":[\"configmaps\"]}],\"sideEffects\":\"None\","
	    "\"timeoutSeconds\":5,\"admissionReviewVersions\":[\"v1\"]}]}");
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = CMS,
	    .body = "{\"metadata\":{\"name\":\"b\"}}" }, 500, NULL);
	ck_assert_str_eq(kc_json_str(o, "message"), "Internal error occurred: failed calling "
	    "webhook \"svc.example.com\": failed to call webhook: Post \"https://hook.default."
	    "svc:443/validate?timeout=5s\": service \"hook\" not found");
	dct_put(o);
	/* Through the Service and its Endpoints, verified as hook.default.svc. */
	dct_post(dc, 201, "/api/v1/namespaces/default/services",
	    "{\"metadata\":{\"name\":\"hook\"},"
	    "\"spec\":{\"ports\":[{\"name\":\"https\",\"port\":443}]}}");
	dct_post(dc, 201, "/api/v1/namespaces/default/endpoints",
	    "{\"metadata\":{\"name\":\"hook\"},"
	    "\"subsets\":[{\"addresses\":[{\"ip\":\"127.0.0.1\"}],\"ports\":[{\"name\":"
	    "\"https\",\"port\":%d}]}]}", ts_port(ts));
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_DELETE, .target = VWCS "/svc" },
	    200, NULL));
	{
		char *ca = NULL;
		const char *pem = ts_ca_pem(ts);

		ck_assert_int_eq(kc_base64_encode(pem, strlen(pem), 0, &ca, NULL), 0);
		dct_post(dc, 201, VWCS, "{\"metadata\":{\"name\":\"svc\"},\"webhooks\":[{\"name\":"
		    "\"svc.example.com\",\"clientConfig\":{\"caBundle\":\"%s\",\"service\":"
		    "{\"namespace\":\"default\",\"name\":\"hook\",\"path\":\"/validate\"}},"
		    "\"rules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":[\"\"],"
		    "\"apiVersions\":[\"v1\"],\"resources\":[\"configmaps\"]}],\"sideEffects\":"
		    "\"None\",\"admissionReviewVersions\":[\"v1\"]}]}", ca);
		kc_free(ca);
	}
	dct_post(dc, 403, CMS, "{\"metadata\":{\"name\":\"c\"},\"data\":{\"deny\":\"1\"}}");
	dct_post(dc, 201, CMS, "{\"metadata\":{\"name\":\"c\"}}");
	/* What a mutating webhook leaves is validated again. */
	add_config(MWCS, "inv", "/invalid", "\"CREATE\"", "");
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = CMS,
	    .body = "{\"metadata\":{\"name\":\"e\"}}" }, 422, NULL);
	msg = kc_json_str(o, "message");
	ck_assert_msg(msg != NULL && strncmp(msg, "ConfigMap \"e\" is invalid: metadata.labels: "
	    "Invalid value: \"bad key\": ", 69) == 0, "%s", msg);
	dct_put(o);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_DELETE, .target = MWCS "/inv" },
	    200, NULL));
	/* A wrong uid is an invalid answer. */
	add_config(MWCS, "bad", "/baduid", "\"CREATE\"", "");
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = CMS,
	    .body = "{\"metadata\":{\"name\":\"d\"}}" }, 500, NULL);
	msg = kc_json_str(o, "message");
	ck_assert_msg(msg != NULL && strstr(msg, "Internal error occurred: failed calling "
	    "webhook \"bad.example.com\": received invalid webhook response: expected "
	    "response.uid=\"") == msg, "%s", msg);
	dct_put(o);
}
END_TEST

START_TEST(injected_faults)
{
	struct json_object *o, *bad = NULL;
	struct fault_spec spec;
	struct kc_status st = { 0 };
	const char *msg;
	char want[256];

	ck_assert_int_eq(faults_init(dc), 0);
	add_config(VWCS, "v", "/validate", "\"CREATE\"", "");
	dct_add_fault(dc, "{\"verb\":\"admit\",\"resource\":\"v.example.com\",\"webhook\":"
	    "\"bad-uid\",\"count\":1}");
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = CMS,
	    .body = "{\"metadata\":{\"name\":\"a\"}}" }, 500, NULL);
	msg = kc_json_str(o, "message");
	ck_assert_msg(msg != NULL && strstr(msg, "received invalid webhook response: expected "
	    "response.uid=\"") != NULL && strstr(msg, "got \"injected-bad-uid\"") != NULL,
	    "%s", msg);
	dct_put(o);
	dct_post(dc, 201, CMS, "{\"metadata\":{\"name\":\"a\"}}");	/* count 1: once */
	dct_add_fault(dc, "{\"verb\":\"admit\",\"resource\":\"*\",\"webhook\":\"unreachable\","
	    "\"count\":1}");
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = CMS,
	    .body = "{\"metadata\":{\"name\":\"b\"}}" }, 500, NULL);
	(void)snprintf(want, sizeof(want), "Internal error occurred: failed calling webhook "
	    "\"v.example.com\": failed to call webhook: Post \"https://localhost:%d/validate?"
	    "timeout=10s\": dial tcp localhost:%d: connect: connection refused (injected)",
	    ts_port(ts), ts_port(ts));
	ck_assert_str_eq(kc_json_str(o, "message"), want);
	dct_put(o);
	/* Slow: the answer is held, then right. */
	dct_add_fault(dc, "{\"verb\":\"admit\",\"resource\":\"*\",\"latencyMs\":200,\"count\":1}");
	dct_post(dc, 201, CMS, "{\"metadata\":{\"name\":\"b\"}}");
	ck_assert_int_eq(kc_json_parse("{\"verb\":\"admit\",\"resource\":\"*\","
	    "\"webhook\":\"rename\"}", 50, &bad, NULL), 0);
	ck_assert_int_eq(faults_parse(bad, &spec, &st), KC_EBADREQUEST);
	ck_assert_str_eq(st.message, "webhook: unsupported value \"rename\": supported values: "
	    "bad-uid, unreachable");
	json_object_put(bad);
}
END_TEST

START_TEST(match_policy)
{
	struct json_object *o, *rv;
	char *ca = NULL;
	const char *pem = ts_ca_pem(ts);

	ck_assert_int_eq(crd_init(dc), 0);
	dct_post(dc, 201, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
	    "{\"metadata\":"
	    "{\"name\":\"things.example.com\"},\"spec\":{\"group\":\"example.com\","
	    "\"scope\":\"Namespaced\",\"names\":{\"plural\":\"things\",\"kind\":"
	    "\"Thing\"},\"versions\":[{\"name\":\"v1\",\"served\":true,\"storage\":true,"
	    "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
	    "\"x-kubernetes-preserve-unknown-fields\":true}}},{\"name\":\"v2\",\"served\":"
	    "true,\"storage\":false,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
	    "\"x-kubernetes-preserve-unknown-fields\":true}}}]}}");
	ck_assert_int_eq(kc_base64_encode(pem, strlen(pem), 0, &ca, NULL), 0);
	dct_post(dc, 201, VWCS, "{\"metadata\":{\"name\":\"v\"},\"webhooks\":[{\"name\":"
	    "\"v.example.com\",\"clientConfig\":{\"url\":\"https://localhost:%d/validate\","
	    "\"caBundle\":\"%s\"},\"rules\":[{\"operations\":[\"CREATE\"],\"apiGroups\":"
	    "[\"example.com\"],\"apiVersions\":[\"v1\"],\"resources\":[\"things\"]}],"
	    "\"sideEffects\":\"None\",\"admissionReviewVersions\":[\"v1\"]}]}", ts_port(ts),
	    ca);
	kc_free(ca);
	/* Equivalent: a create at v2 reaches the webhook at v1. */
	dct_post(dc, 403, "/apis/example.com/v2/namespaces/default/things",
	    "{\"metadata\":{\"name\":"
	    "\"a\"},\"data\":{\"deny\":\"1\"}}");
	rv = last_review();
	ck_assert_str_eq(kc_json_str(rv, "request", "kind", "version"), "v1");
	ck_assert_str_eq(kc_json_str(rv, "request", "resource", "version"), "v1");
	ck_assert_str_eq(kc_json_str(rv, "request", "requestKind", "version"), "v2");
	ck_assert_str_eq(kc_json_str(rv, "request", "requestResource", "version"), "v2");
	ck_assert_str_eq(kc_json_str(rv, "request", "object", "apiVersion"), "example.com/v1");
	dct_put(rv);
	/* Exact: only v1 requests. */
	o = dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = VWCS "/v",
	    .ctype = "application/json-patch+json", .body = "[{\"op\":\"replace\",\"path\":"
	    "\"/webhooks/0/matchPolicy\",\"value\":\"Exact\"}]" }, 200, NULL);
	dct_put(o);
	dct_post(dc, 201, "/apis/example.com/v2/namespaces/default/things",
	    "{\"metadata\":{\"name\":"
	    "\"a\"},\"data\":{\"deny\":\"1\"}}");
	dct_post(dc, 403, "/apis/example.com/v1/namespaces/default/things",
	    "{\"metadata\":{\"name\":"
	    "\"b\"},\"data\":{\"deny\":\"1\"}}");
}
END_TEST

Suite *
dc_admwebhook_suite(void)
{
	Suite *s = suite_create("dc_admwebhook");
	TCase *tc = tcase_create("admwebhook");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, rules);
	tcase_add_test(tc, answers);
	tcase_add_test(tc, configurations);
	tcase_add_test(tc, mutate_validate);
	tcase_add_test(tc, selectors);
	tcase_add_test(tc, failures);
	tcase_add_test(tc, injected_faults);
	tcase_add_test(tc, match_policy);
	suite_add_tcase(s, tc);
	return s;
}

/*
 * test_dc_convwebhook.c: devcluster/convwebhook.c, the conversion webhook
 * caller. A loopback TLS server (tests/server/testserver.c) plays the
 * webhook and really converts (spec.color in v1, spec.colour in v2), so a
 * conversion that does not happen shows as pruned data. Requests go
 * through api_handle() as http.c sends them, held while the call runs.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/json.h>
#include <kc/str.h>
#include <kc/transport.h>

#include "../server/testserver.h"
#include "dc_testutil.h"
#include "testutil.h"

#define CRDS	"/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
#define HOOKS1	"/apis/example.com/v1/namespaces/default/hooks"
#define HOOKS2	"/apis/example.com/v2/namespaces/default/hooks"

#define TRY(x)	do { if ((x) < 0) ok = false; } while (0)

enum mode { M_CONVERT, M_BAD_UID, M_DROP_ONE, M_RENAME, M_FAIL, M_BAD_KIND };

static struct dc *dc;

static bool
str_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static struct ts_server *ts;
static atomic_int mode;

/*
 * The webhook: each object's apiVersion becomes desiredAPIVersion, and
 * spec.color (v1) and spec.colour (v2) trade places; 'mode' breaks it.
 */
static char *
convert(void *arg, const struct ts_request *rq, size_t *ret_len)
{
	struct json_object *review = NULL, *req, *resp, *objs, *out;
	const char *desired;
	bool to_v2;
	enum mode m = atomic_load(&mode);
	bool ok = true;

	(void)arg;
	if (kc_json_parse(rq->body, rq->body_len, &review, NULL) < 0)
		return NULL;
	req = kc_json_get(review, "request");
	desired = kc_json_str(req, "desiredAPIVersion");
	to_v2 = desired != NULL && strcmp(desired, "example.com/v2") == 0;
	resp = json_object_new_object();
	out = json_object_new_array();
	objs = kc_json_get(req, "objects");
	for (size_t i = 0; i < json_object_array_length(objs); i++) {
		struct json_object *o = kc_json_copy(json_object_array_get_idx(objs, i));
		struct json_object *spec = kc_json_get(o, "spec"), *v;
		const char *from = to_v2 ? "color" : "colour", *to = to_v2 ? "colour" : "color";

		TRY(kc_json_set_str(o, "apiVersion", desired));
		if (spec != NULL && json_object_object_get_ex(spec, from, &v)) {
			TRY(kc_json_put(spec, to, json_object_get(v)));
			json_object_object_del(spec, from);
		}
		if (m == M_RENAME)
			TRY(kc_json_set_str(kc_json_get(o, "metadata"), "name", "other"));
		if (m == M_BAD_KIND)
			TRY(kc_json_set_str(o, "kind", "Other"));
		/* Labels may change; other metadata is restored by the server. */
		TRY(kc_json_set_str(kc_json_ensure_obj(kc_json_get(o, "metadata"), "labels"),
		    "converted", "yes"));
		TRY(kc_json_set_int(kc_json_get(o, "metadata"), "generation", 99));
		if (m == M_DROP_ONE && i == 0)
			json_object_put(o);
		else
			TRY(kc_json_append(out, o));
	}
	TRY(kc_json_set_str(resp, "uid", m == M_BAD_UID ? "bad" : kc_json_str(req, "uid")));
	TRY(kc_json_put(resp, "convertedObjects", out));
	TRY(kc_json_put(resp, "result", json_object_new_object()));
	if (m == M_FAIL) {
		TRY(kc_json_set_str(kc_json_get(resp, "result"), "status", "Failure"));
		TRY(kc_json_set_str(kc_json_get(resp, "result"), "message",
		    "spec.colour: not a colour"));
	} else
		TRY(kc_json_set_str(kc_json_get(resp, "result"), "status", "Success"));
	return dct_review_answer(review, resp, ok, ret_len);
}

/* The CRD hooks.example.com, its webhook reached as 'client' (JSON). */
static void
add_crd(const char *client)
{
	char *ca = NULL;
	const char *pem = ts_ca_pem(ts);

	ck_assert_int_eq(kc_base64_encode(pem, strlen(pem), 0, &ca, NULL), 0);
	dct_post(dc, 201, CRDS,
	    "{\"metadata\":{\"name\":\"hooks.example.com\"},\"spec\":{\"group\":"
	    "\"example.com\",\"scope\":\"Namespaced\",\"names\":{\"plural\":\"hooks\","
	    "\"kind\":\"Hook\"},\"conversion\":{\"strategy\":\"Webhook\",\"webhook\":"
	    "{\"conversionReviewVersions\":[\"v9\",\"v1\"],\"clientConfig\":{%s,"
	    "\"caBundle\":\"%s\"}}},\"versions\":["
	    "{\"name\":\"v1\",\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":"
	    "{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\",\"properties\":"
	    "{\"color\":{\"type\":\"string\"}}}}}}},"
	    "{\"name\":\"v2\",\"served\":true,\"storage\":false,\"schema\":{\"openAPIV3Schema\":"
	    "{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\",\"properties\":"
	    "{\"colour\":{\"type\":\"string\"},\"size\":{\"type\":\"string\","
	    "\"default\":\"M\"}}}}}}}]}}", client, ca);
	kc_free(ca);
}

/* The Service conv in default, and Endpoints sending port 443 to the server. */
static void
add_service(void)
{
	dct_post(dc, 201, "/api/v1/namespaces/default/services",
	    "{\"metadata\":{\"name\":\"conv\"},"
	    "\"spec\":{\"ports\":[{\"name\":\"https\",\"port\":443,\"targetPort\":9443}]}}");
	dct_post(dc, 201, "/api/v1/namespaces/default/endpoints",
	    "{\"metadata\":{\"name\":\"conv\"},"
	    "\"subsets\":[{\"addresses\":[{\"ip\":\"127.0.0.1\"}],\"ports\":[{\"name\":"
	    "\"https\",\"port\":%d}]}]}", ts_port(ts));
}

static struct json_object *
get(const char *target, int want)
{
	return dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = target }, want, NULL);
}

static void
setup(void)
{
	atomic_store(&mode, M_CONVERT);
	ck_assert_int_eq(kc_transport_global_init(), 0);
	ck_assert_int_eq(ts_start(&(struct ts_opts){
		.script_text = "request POST /convert\nrepeat forever\nhandler\n",
		.dns_name = "conv.default.svc", .handler = convert,
	}, &ts), 0);
	dc = dct_new(NULL);
	ck_assert_int_eq(crd_init(dc), 0);
	ck_assert_int_eq(convwebhook_plugin.init(dc, NULL, NULL), 0);
}

static void
teardown(void)
{
	dc = api_free(dc);
	ts = ts_stop(ts);
	kc_transport_global_cleanup();
}

START_TEST(get_list_write_through_service)
{
	struct json_object *o, *v1;
	const struct ts_request *rq;
	struct json_object *review = NULL;
	size_t before;

	add_service();
	add_crd("\"service\":{\"namespace\":\"default\",\"name\":\"conv\",\"path\":\"/convert\"}");
	dct_post(dc, 201, HOOKS1, "{\"metadata\":{\"name\":\"a\",\"labels\":{\"l\":\"1\"}},"
	    "\"spec\":{\"color\":\"red\"}}");
	ck_assert_uint_eq(ts_nrequests(ts), 0);

	/* A get at v2: converted by the webhook, metadata restored, defaulted. */
	v1 = get(HOOKS1 "/a", 200);
	o = get(HOOKS2 "/a", 200);
	ck_assert_str_eq(kc_json_str(o, "apiVersion"), "example.com/v2");
	ck_assert_str_eq(kc_json_str(o, "spec", "colour"), "red");
	ck_assert_ptr_null(kc_json_get(o, "spec", "color"));
	ck_assert_str_eq(kc_json_str(o, "spec", "size"), "M");
	ck_assert_str_eq(kc_json_str(o, "metadata", "uid"), kc_json_str(v1, "metadata", "uid"));
	ck_assert_int_eq(kc_json_int(o, 0, "metadata", "generation"), 1);
	ck_assert_str_eq(kc_json_str(o, "metadata", "labels", "converted"), "yes");
	dct_put(o);
	dct_put(v1);

	/* What kube-apiserver sends. */
	ck_assert_uint_eq(ts_nrequests(ts), 1);
	rq = ts_request(ts, 0);
	ck_assert_str_eq(rq->method, "POST");
	ck_assert_str_eq(rq->path, "/convert?timeout=30s");
	ck_assert(!rq->http2);
	ck_assert_int_eq(kc_json_parse(rq->body, rq->body_len, &review, NULL), 0);
	ck_assert_str_eq(kc_json_str(review, "kind"), "ConversionReview");
	ck_assert_str_eq(kc_json_str(review, "apiVersion"), "apiextensions.k8s.io/v1");
	ck_assert_str_eq(kc_json_str(review, "request", "desiredAPIVersion"), "example.com/v2");
	ck_assert_uint_eq(strlen(kc_json_str(review, "request", "uid")), 36);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(review, "request", "objects")), 1);
	dct_put(review);

	/* A list: the items that need it, in one review. */
	dct_post(dc, 201, HOOKS1, "{\"metadata\":{\"name\":\"b\"},\"spec\":{\"color\":\"green\"}}");
	before = ts_nrequests(ts);
	o = get(HOOKS2, 200);
	ck_assert_uint_eq(ts_nrequests(ts), before + 1);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(o, "items")), 2);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "items"), 1),
	    "spec", "colour"), "green");
	dct_put(o);
	/* At the stored version: no call. */
	before = ts_nrequests(ts);
	dct_put(get(HOOKS1, 200));
	ck_assert_uint_eq(ts_nrequests(ts), before);

	/* A create at v2 is stored at v1 and answered at v2. */
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = HOOKS2,
	    .body = "{\"apiVersion\":\"example.com/v2\",\"kind\":\"Hook\",\"metadata\":"
	    "{\"name\":\"c\"},\"spec\":{\"colour\":\"blue\"}}" }, 201, NULL);
	ck_assert_str_eq(kc_json_str(o, "apiVersion"), "example.com/v2");
	ck_assert_msg(str_eq(kc_json_str(o, "spec", "colour"), "blue"), "%s",
	    json_object_to_json_string(o));
	dct_put(o);
	o = get(HOOKS1 "/c", 200);
	ck_assert_str_eq(kc_json_str(o, "apiVersion"), "example.com/v1");
	ck_assert_str_eq(kc_json_str(o, "spec", "color"), "blue");
	dct_put(o);

	/* A merge patch at v2. */
	o = dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = HOOKS2 "/c",
	    .ctype = "application/merge-patch+json",
	    .body = "{\"spec\":{\"colour\":\"teal\"}}" }, 200, NULL);
	ck_assert_str_eq(kc_json_str(o, "spec", "colour"), "teal");
	dct_put(o);
	o = get(HOOKS1 "/c", 200);
	ck_assert_str_eq(kc_json_str(o, "spec", "color"), "teal");
	dct_put(o);
}
END_TEST

/* The 500 of a failed conversion; its message must start with 'prefix'. */
static void
expect_failure(const char *target, const char *prefix)
{
	struct json_object *o = get(target, 500);
	const char *msg = kc_json_str(o, "message");

	ck_assert_str_eq(kc_json_str(o, "reason"), "InternalError");
	ck_assert_msg(msg != NULL && strncmp(msg, prefix, strlen(prefix)) == 0,
	    "message \"%s\", want \"%s...\"", msg != NULL ? msg : "(null)", prefix);
	dct_put(o);
}

START_TEST(wrong_answers)
{
	struct json_object *o;
	char client[128];

	(void)snprintf(client, sizeof(client), "\"url\":\"https://localhost:%d/convert\"",
	    ts_port(ts));
	add_crd(client);
	dct_post(dc, 201, HOOKS1, "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"color\":\"red\"}}");
	atomic_store(&mode, M_BAD_UID);
	expect_failure(HOOKS2 "/a", "conversion webhook for example.com/v1, Kind=Hook failed: "
	    "expected response.uid=\"");
	atomic_store(&mode, M_DROP_ONE);
	expect_failure(HOOKS2 "/a", "conversion webhook for example.com/v1, Kind=Hook returned "
	    "0 objects, expected 1");
	atomic_store(&mode, M_RENAME);
	expect_failure(HOOKS2 "/a", "conversion webhook for example.com/v1, Kind=Hook returned "
	    "invalid object: must have the same name: a != other");
	atomic_store(&mode, M_BAD_KIND);
	expect_failure(HOOKS2 "/a", "conversion webhook for example.com/v1, Kind=Hook returned "
	    "invalid object at index 0: invalid kind (expected Hook, received Other)");
	atomic_store(&mode, M_FAIL);
	expect_failure(HOOKS2 "/a", "conversion webhook for example.com/v1, Kind=Hook failed: "
	    "spec.colour: not a colour");
	/* A write at v2 fails too, and stores nothing. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = HOOKS2,
	    .body = "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"colour\":\"blue\"}}" }, 500,
	    NULL));
	dct_put(get(HOOKS1 "/d", 404));
	/* Back in order: nothing was lost. */
	atomic_store(&mode, M_CONVERT);
	o = get(HOOKS2 "/a", 200);
	ck_assert_str_eq(kc_json_str(o, "spec", "colour"), "red");
	dct_put(o);
}
END_TEST

START_TEST(unreachable)
{
	add_crd("\"service\":{\"namespace\":\"default\",\"name\":\"conv\",\"path\":\"/convert\"}");
	dct_post(dc, 201, HOOKS1, "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"color\":\"red\"}}");
	expect_failure(HOOKS2 "/a", "conversion webhook for example.com/v1, Kind=Hook failed: "
	    "Post \"https://conv.default.svc:443/convert?timeout=30s\": service \"conv\" not found");
	dct_post(dc, 201, "/api/v1/namespaces/default/services",
	    "{\"metadata\":{\"name\":\"conv\"},"
	    "\"spec\":{\"ports\":[{\"name\":\"http\",\"port\":80}]}}");
	expect_failure(HOOKS2 "/a", "conversion webhook for example.com/v1, Kind=Hook failed: "
	    "Post \"https://conv.default.svc:443/convert?timeout=30s\": no service port 443 "
	    "found for service \"conv\"");
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/services/conv",
	    .ctype = "application/merge-patch+json",
	    .body = "{\"spec\":{\"ports\":[{\"name\":\"https\",\"port\":443}]}}" }, 200, NULL));
	expect_failure(HOOKS2 "/a", "conversion webhook for example.com/v1, Kind=Hook failed: "
	    "Post \"https://conv.default.svc:443/convert?timeout=30s\": endpoints \"conv\" not "
	    "found");
	dct_post(dc, 201, "/api/v1/namespaces/default/endpoints",
	    "{\"metadata\":{\"name\":\"conv\"}}");
	expect_failure(HOOKS2 "/a", "conversion webhook for example.com/v1, Kind=Hook failed: "
	    "Post \"https://conv.default.svc:443/convert?timeout=30s\": no endpoints available "
	    "for service \"conv\"");
	/* Nothing listens there. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/endpoints/conv",
	    .ctype = "application/merge-patch+json",
	    .body = "{\"subsets\":[{\"addresses\":[{\"ip\":\"127.0.0.1\"}],\"ports\":"
	    "[{\"name\":\"https\",\"port\":1}]}]}" }, 200, NULL));
	expect_failure(HOOKS2 "/a", "conversion webhook for example.com/v1, Kind=Hook failed: "
	    "Post \"https://conv.default.svc:443/convert?timeout=30s\": ");
	ck_assert_uint_eq(ts_nrequests(ts), 0);
}
END_TEST

/* The next line of a watch, once the webhook answered; NULL at its end. */
static char *
next_line(struct dc_stream *st)
{
	for (unsigned n = 0; n < 20000000; n++) {
		bool end = false;
		struct dc_chunk *c = st->ops->pull(st, &end);

		if (c != NULL) {
			char *line = kc_asprintf("%.*s", (int)c->len, c->data);

			chunk_unref(c);
			ck_assert_ptr_nonnull(line);
			return line;
		}
		if (end)
			return NULL;
		fake_clock_advance(1);
		(void)timers_run(dc);
	}
	ck_abort_msg("no watch event");
	return NULL;
}

START_TEST(watch_at_another_version)
{
	struct dc_stream *st = NULL;
	struct kc_status kst = { 0 };
	char client[128], *line;

	(void)snprintf(client, sizeof(client), "\"url\":\"https://localhost:%d/convert\"",
	    ts_port(ts));
	add_crd(client);
	dct_post(dc, 201, HOOKS1, "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"color\":\"red\"}}");
	ck_assert_int_eq(watchhub_start(dc, &(struct dc_watch_opts){
	    .rt = registry_find(dc, "example.com", "v2", "hooks"), .ns = "default",
	    .initial = true }, &st, &kst), 0);
	/* The initial ADDED, converted. */
	line = next_line(st);
	ck_assert_ptr_nonnull(strstr(line, "\"type\":\"ADDED\""));
	ck_assert_ptr_nonnull(strstr(line, "\"colour\":\"red\""));
	kc_free(line);
	/* Later events, in order, each converted. */
	dct_post(dc, 201, HOOKS1, "{\"metadata\":{\"name\":\"b\"},\"spec\":{\"color\":\"green\"}}");
	dct_post(dc, 201, HOOKS1, "{\"metadata\":{\"name\":\"c\"},\"spec\":{\"color\":\"blue\"}}");
	line = next_line(st);
	ck_assert_ptr_nonnull(strstr(line, "\"colour\":\"green\""));
	kc_free(line);
	line = next_line(st);
	ck_assert_ptr_nonnull(strstr(line, "\"colour\":\"blue\""));
	kc_free(line);
	/* A failure: an ERROR event with the message, then the end. */
	atomic_store(&mode, M_FAIL);
	dct_post(dc, 201, HOOKS1, "{\"metadata\":{\"name\":\"d\"},\"spec\":{\"color\":\"grey\"}}");
	line = next_line(st);
	ck_assert_ptr_nonnull(strstr(line, "\"type\":\"ERROR\""));
	ck_assert_ptr_nonnull(strstr(line, "conversion webhook for example.com/v1, Kind=Hook "
	    "failed: spec.colour: not a colour"));
	ck_assert_ptr_nonnull(strstr(line, "\"code\":500"));
	kc_free(line);
	ck_assert_ptr_null(next_line(st));
	st->ops->release(st);
}
END_TEST

/* Adds a fault rule from its JSON. */
START_TEST(injected_faults)
{
	struct json_object *o, *bad = NULL;
	struct fault_spec spec;
	struct kc_status st = { 0 };
	char client[128], want[256];
	struct timespec t0, t1;

	ck_assert_int_eq(faults_init(dc), 0);
	(void)snprintf(client, sizeof(client), "\"url\":\"https://localhost:%d/convert\"",
	    ts_port(ts));
	add_crd(client);
	dct_post(dc, 201, HOOKS1, "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"color\":\"red\"}}");
	dct_add_fault(dc, "{\"verb\":\"convert\",\"resource\":\"hooks.example.com\","
	    "\"webhook\":\"bad-uid\",\"count\":1}");
	expect_failure(HOOKS2 "/a", "conversion webhook for example.com/v1, Kind=Hook failed: "
	    "expected response.uid=\"");
	dct_put(get(HOOKS2 "/a", 200));		/* count 1: once */
	dct_add_fault(dc, "{\"verb\":\"convert\",\"resource\":\"*\",\"webhook\":\"wrong-count\","
	    "\"count\":1}");
	expect_failure(HOOKS2 "/a", "conversion webhook for example.com/v1, Kind=Hook returned "
	    "0 objects, expected 1");
	dct_add_fault(dc,
	    "{\"verb\":\"convert\",\"resource\":\"*\",\"webhook\":\"rename\",\"count\":1}");
	expect_failure(HOOKS2 "/a", "conversion webhook for example.com/v1, Kind=Hook returned "
	    "invalid object: must have the same name: a != injected-rename");
	dct_add_fault(dc, "{\"verb\":\"convert\",\"resource\":\"*\",\"webhook\":\"unreachable\","
	    "\"count\":1}");
	(void)snprintf(want, sizeof(want), "conversion webhook for example.com/v1, Kind=Hook "
	    "failed: Post \"https://localhost:%d/convert?timeout=30s\": dial tcp localhost:%d: "
	    "connect: connection refused (injected)", ts_port(ts), ts_port(ts));
	expect_failure(HOOKS2 "/a", want);
	/* Slow: the answer is held, then right. */
	dct_add_fault(dc,
	    "{\"verb\":\"convert\",\"resource\":\"*\",\"latencyMs\":300,\"count\":1}");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	o = get(HOOKS2 "/a", 200);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_str_eq(kc_json_str(o, "spec", "colour"), "red");
	dct_put(o);
	ck_assert_int_ge((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000,
	    300);
	/* Rules that make no sense are refused. */
	ck_assert_int_eq(kc_json_parse("{\"verb\":\"convert\",\"resource\":\"*\","
	    "\"webhook\":\"late\"}", 50, &bad, NULL), 0);
	ck_assert_int_eq(faults_parse(bad, &spec, &st), KC_EBADREQUEST);
	ck_assert_str_eq(st.message, "webhook: unsupported value \"late\": supported values: "
	    "bad-uid, wrong-count, rename, unreachable, bad-labels");
	json_object_put(bad);
	ck_assert_int_eq(kc_json_parse("{\"verb\":\"get\",\"resource\":\"*\",\"code\":500,"
	    "\"webhook\":\"rename\"}", 59, &bad, NULL), 0);
	ck_assert_int_eq(faults_parse(bad, &spec, &st), KC_EBADREQUEST);
	ck_assert_str_eq(st.message, "webhook: only for the verbs convert and admit");
	json_object_put(bad);
}
END_TEST

#define UID	"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"

/* convwebhook_check() of one object sent for v2 in a v1 review. */
static int
chk(const char *body, const struct json_object *const *objs, struct json_object ***out,
    char err[1024])
{
	return convwebhook_check("v1", UID, "example.com/v2", body, strlen(body), objs, 1, out,
	    err, 1024);
}

START_TEST(review_checks)
{
	static const char uid[] = UID;
	static const char obj[] = "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"uid\":\"u1\","
	    "\"annotations\":{\"x\":\"1\"}}}";
	struct json_object *in = NULL, **out = NULL, *review = NULL;
	const struct json_object *objs[1];
	char err[1024];

	ck_assert_int_eq(kc_json_parse(obj, strlen(obj), &in, NULL), 0);
	objs[0] = in;
	ck_assert_int_eq(convwebhook_review("v1beta1", uid, "example.com/v2", objs, 1, &review), 0);
	ck_assert_str_eq(kc_json_str(review, "apiVersion"), "apiextensions.k8s.io/v1beta1");
	ck_assert_str_eq(kc_json_str(review, "response", "uid"), "");
	json_object_put(review);

	/* The review's own kind and version. */
	ck_assert_int_eq(chk(
	    "{\"apiVersion\":\"apiextensions.k8s.io/v1beta1\",\"kind\":\"ConversionReview\"}",
	    objs, &out, err), KC_EINTERNAL);
	ck_assert_str_eq(err, "conversion webhook for example.com/v1, Kind=Hook failed: expected "
	    "webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got "
	    "apiextensions.k8s.io/v1beta1, Kind=ConversionReview");
	ck_assert_int_eq(chk(
	    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\"}",
	    objs, &out, err), KC_EINTERNAL);
	ck_assert_str_eq(err, "conversion webhook for example.com/v1, Kind=Hook failed: no "
	    "response provided");
	ck_assert_int_eq(chk( "{\"apiVersion\":"
	    "\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"response\":{\"uid\":"
	    "\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\",\"result\":{\"status\":\"Failure\"}}}",
	    objs, &out, err), KC_EINTERNAL);
	ck_assert_str_eq(err, "conversion webhook for example.com/v1, Kind=Hook failed: "
	    "response.result.status was 'Failure', not 'Success'");
	ck_assert_int_eq(chk( "{\"apiVersion\":"
	    "\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"response\":{\"uid\":"
	    "\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\",\"result\":{\"status\":\"Success\"},"
	    "\"convertedObjects\":[{\"apiVersion\":\"example.com/v1\",\"kind\":\"Hook\"}]}}",
	    objs, &out, err), KC_EINTERNAL);
	ck_assert_str_eq(err, "conversion webhook for example.com/v1, Kind=Hook returned invalid "
	    "object at index 0: invalid groupVersion (expected example.com/v2, received "
	    "example.com/v1)");
	ck_assert_int_eq(chk( "{\"apiVersion\":"
	    "\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"response\":{\"uid\":"
	    "\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\",\"result\":{\"status\":\"Success\"},"
	    "\"convertedObjects\":[{\"apiVersion\":\"example.com/v2\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"uid\":\"u2\"}}]}}",
	    objs, &out, err), KC_EINTERNAL);
	ck_assert_str_eq(err, "conversion webhook for example.com/v1, Kind=Hook returned invalid "
	    "object: must have the same UID: u1 != u2");
	ck_assert_int_eq(chk( "{\"apiVersion\":"
	    "\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"response\":{\"uid\":"
	    "\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\",\"result\":{\"status\":\"Success\"},"
	    "\"convertedObjects\":[{\"apiVersion\":\"example.com/v2\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"uid\":\"u1\",\"labels\":[]}}]}}",
	    objs, &out, err), KC_EINTERNAL);
	ck_assert_str_eq(err, "conversion webhook for example.com/v1, Kind=Hook returned invalid "
	    "metadata: invalid metadata.labels of type []interface {} in converted object");
	/* Labels and annotations the webhook changed are validated, as upstream does. */
	ck_assert_int_eq(chk( "{\"apiVersion\":"
	    "\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"response\":{\"uid\":"
	    "\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\",\"result\":{\"status\":\"Success\"},"
	    "\"convertedObjects\":[{\"apiVersion\":\"example.com/v2\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"uid\":\"u1\",\"labels\":"
	    "{\"k\":1}}}]}}", objs, &out, err), KC_EINTERNAL);
	ck_assert_str_eq(err, "conversion webhook for example.com/v1, Kind=Hook returned invalid "
	    "metadata: metadata.labels[k] must be a string, but is int64 in converted object");
	ck_assert_int_eq(chk( "{\"apiVersion\":"
	    "\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"response\":{\"uid\":"
	    "\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\",\"result\":{\"status\":\"Success\"},"
	    "\"convertedObjects\":[{\"apiVersion\":\"example.com/v2\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"uid\":\"u1\",\"labels\":"
	    "{\"bad key\":\"v\"}}}]}}", objs, &out, err), KC_EINTERNAL);
	ck_assert_str_eq(err, "conversion webhook for example.com/v1, Kind=Hook returned invalid "
	    "metadata: metadata.labels: Invalid value: \"bad key\": name part must consist of "
	    "alphanumeric characters, '-', '_' or '.', and must start and end with an "
	    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
	    "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')");
	ck_assert_int_eq(chk( "{\"apiVersion\":"
	    "\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"response\":{\"uid\":"
	    "\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\",\"result\":{\"status\":\"Success\"},"
	    "\"convertedObjects\":[{\"apiVersion\":\"example.com/v2\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"uid\":\"u1\","
	    "\"annotations\":{\"x\":\"1\",\"/y\":\"2\"},\"labels\":{\"k\":\"v!\"}}}]}}",
	    objs, &out, err), KC_EINTERNAL);
	ck_assert_str_eq(err, "conversion webhook for example.com/v1, Kind=Hook returned invalid "
	    "metadata: metadata.labels: Invalid value: \"v!\": a valid label must be an empty "
	    "string or consist of alphanumeric characters, '-', '_' or '.', and must start and "
	    "end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
	    "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')");
	ck_assert_int_eq(chk( "{\"apiVersion\":"
	    "\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"response\":{\"uid\":"
	    "\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\",\"result\":{\"status\":\"Success\"},"
	    "\"convertedObjects\":[{\"apiVersion\":\"example.com/v2\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"uid\":\"u1\","
	    "\"annotations\":{\"x\":\"1\",\"/y\":\"2\",\"z/\":\"3\"}}}]}}", objs, &out, err),
	    KC_EINTERNAL);
	ck_assert_str_eq(err, "conversion webhook for example.com/v1, Kind=Hook returned invalid "
	    "metadata: [metadata.annotation: Invalid value: \"/y\": prefix part must be "
	    "non-empty, metadata.annotation: Invalid value: \"z/\": name part must be non-empty, "
	    "metadata.annotation: Invalid value: \"z/\": name part must consist of alphanumeric "
	    "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
	    "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
	    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')]");
	/* Dropped annotations are dropped; other metadata comes back. */
	ck_assert_int_eq(chk( "{\"apiVersion\":"
	    "\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\",\"response\":{\"uid\":"
	    "\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\",\"result\":{\"status\":\"Success\"},"
	    "\"convertedObjects\":[{\"apiVersion\":\"example.com/v2\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\",\"uid\":\"u1\",\"labels\":"
	    "{\"k\":\"v\"}}}]}}", objs, &out, err), 0);
	ck_assert_str_eq(kc_json_str(out[0], "metadata", "labels", "k"), "v");
	ck_assert_ptr_null(kc_json_get(out[0], "metadata", "annotations"));
	ck_assert_str_eq(kc_json_str(out[0], "metadata", "uid"), "u1");
	objs_free(out, 1);
	json_object_put(in);
}
END_TEST

Suite *
dc_convwebhook_suite(void)
{
	Suite *s = suite_create("dc_convwebhook");
	TCase *tc = tcase_create("convwebhook");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, get_list_write_through_service);
	tcase_add_test(tc, wrong_answers);
	tcase_add_test(tc, unreachable);
	tcase_add_test(tc, review_checks);
	tcase_add_test(tc, watch_at_another_version);
	tcase_add_test(tc, injected_faults);
	suite_add_tcase(s, tc);
	return s;
}

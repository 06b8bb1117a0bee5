/*
 * test_dc_faults.c: fault injection and request counters (faults.c):
 * rule parsing and its errors, matching, the deterministic share and
 * count, injected Status replies and Retry-After, latency and pauses as
 * hold times, compaction (410 for an older resourceVersion), the
 * endpoints' admin check, and the counters.
 */
#include <errno.h>
#include <inttypes.h>
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

static struct dc *dc;

static void
setup(void)
{
	dc = dct_new(NULL);
	ck_assert_int_eq(auth_add(dc->auth, "user-token", "bob", "bob", NULL), 0);
	ck_assert_int_eq(faults_init(dc), 0);
}

static void
teardown(void)
{
	faults_fini(dc);
	dc = api_free(dc);
	fake_clock_uninstall();
	fail_alloc_after(SIZE_MAX);
}

/* Parses 'json' into a spec: the return code, the message in 'st'. */
static int
parse(const char *json, struct fault_spec *spec, struct kc_status *st)
{
	struct json_object *o = NULL;
	int r;

	ck_assert_int_eq(kc_json_parse(json, strlen(json), &o, NULL), 0);
	r = faults_parse(o, spec, st);
	if (o != NULL)
		json_object_put(o);
	return r;
}

static uint64_t
add(const char *json)
{
	struct fault_spec spec;
	struct kc_status st = { 0 };
	uint64_t id = 0;

	ck_assert_msg(parse(json, &spec, &st) == 0, "%s: %s", json, st.message);
	ck_assert_int_eq(faults_add(dc, &spec, &id), 0);
	ck_assert_uint_gt(id, 0);
	return id;
}

/*
 * One request through api_handle() and faults_after(), as http.c sends
 * it: the reply's status, its delay in '*ret_delay' (may be NULL).
 */
static int
call(enum dc_method m, const char *target, const char *token, const char *body,
    uint64_t *ret_delay, struct dc_resp *out)
{
	struct dc_req req = { 0 };
	struct dc_resp resp;
	uint64_t delay;
	int status;

	resp_init(&resp);
	ck_assert_int_eq(req_set_target(&req, target), 0);
	req.method = m;
	req.authorization = kc_asprintf("Bearer %s", token != NULL ? token : "admin-token");
	if (body != NULL) {
		req.body_len = strlen(body);
		req.body = kc_memdup(body, req.body_len + 1);
		req.content_type = kc_strdup("application/json");
	}
	api_handle(dc, &req, &resp);
	delay = faults_after(dc, &req, &resp);
	if (ret_delay != NULL)
		*ret_delay = delay;
	req_clear(&req);
	status = resp.status;
	if (out != NULL)
		*out = resp;
	else
		resp_clear(&resp);
	return status;
}

static struct json_object *
reply_body(struct dc_resp *resp)
{
	struct json_object *o = NULL;

	ck_assert_int_eq(kc_json_parse(resp->body.data, resp->body.len, &o, NULL), 0);
	resp_clear(resp);
	return o;
}

START_TEST(parse_errors)
{
	static const struct {
		const char	*json;
		const char	*message;
	} bad[] = {
		{ "[]", "the body must be a JSON object" },
		{ "{\"resource\":\"pods\",\"code\":500}", "verb and resource are required "
		    "(\"*\" matches any)" },
		{ "{\"verb\":\"get\",\"code\":500}", "verb and resource are required "
		    "(\"*\" matches any)" },
		{ "{\"verb\":\"fly\",\"resource\":\"pods\",\"code\":500}", "verb: unsupported "
		    "value \"fly\": supported values: create, get, list, watch, update, patch, "
		    "delete, deletecollection, convert, admit, *" },
		{ "{\"verb\":7,\"resource\":\"pods\",\"code\":500}", "verb: expected a string" },
		{ "{\"verb\":\"get\",\"resource\":\"\",\"code\":500}",
		    "resource: must not be empty" },
		{ "{\"verb\":\"get\",\"resource\":\"pods\",\"code\":418}", "code: unsupported "
		    "value 418: supported values: 400, 401, 403, 404, 409, 410, 429, 500, 503, "
		    "504" },
		{ "{\"verb\":\"get\",\"resource\":\"pods\",\"code\":\"500\"}",
		    "code: expected a number" },
		{ "{\"verb\":\"get\",\"resource\":\"pods\",\"code\":700}",
		    "code: must be between 0 and 599" },
		{ "{\"verb\":\"get\",\"resource\":\"pods\"}",
		    "a rule needs a code, latencyMs or both" },
		{ "{\"verb\":\"get\",\"resource\":\"pods\",\"code\":500,\"share\":1.5}",
		    "share: must be between 0 and 1" },
		{ "{\"verb\":\"get\",\"resource\":\"pods\",\"code\":500,\"share\":0}",
		    "share: must be above 0 (at most 1)" },
		{ "{\"verb\":\"get\",\"resource\":\"pods\",\"code\":500,\"retryAfterSeconds\":1}",
		    "retryAfterSeconds: only for codes 429 and 503" },
		{ "{\"verb\":\"get\",\"resource\":\"pods\",\"code\":500,\"count\":1.5}",
		    "count, retryAfterSeconds and latencyMs must be whole numbers" },
		{ "{\"verb\":\"get\",\"resource\":\"pods\",\"latencyMs\":-1}",
		    "latencyMs: must be between 0 and 60000" },
		{ "{\"verb\":\"get\",\"resource\":\"pods\",\"code\":500,\"colour\":1}",
		    "unknown field \"colour\"" },
	};
	struct fault_spec spec;

	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
		struct kc_status st = { 0 };

		ck_assert_int_eq(parse(bad[i].json, &spec, &st), KC_EBADREQUEST);
		ck_assert_msg(strcmp(st.message, bad[i].message) == 0, "%s: got \"%s\"",
		    bad[i].json, st.message);
	}
}
END_TEST

START_TEST(parse_defaults)
{
	struct fault_spec spec;
	struct kc_status st = { 0 };

	ck_assert_int_eq(parse("{\"verb\":\"*\",\"resource\":\"*\",\"code\":429,"
	    "\"retryAfterSeconds\":3,\"share\":0.25,\"count\":2,\"latencyMs\":10,"
	    "\"group\":\"\",\"namespace\":\"ns1\",\"message\":\"slow down\"}", &spec, &st), 0);
	ck_assert_str_eq(spec.verb, "*");
	ck_assert_str_eq(spec.group, "");
	ck_assert_str_eq(spec.ns, "ns1");
	ck_assert_int_eq(spec.code, 429);
	ck_assert_uint_eq(spec.retry_after, 3);
	ck_assert_uint_eq(spec.share_ppm, 250000);
	ck_assert_uint_eq(spec.count, 2);
	ck_assert_uint_eq(spec.latency_ms, 10);
	ck_assert_str_eq(spec.message, "slow down");
	ck_assert_int_eq(parse("{\"verb\":\"list\",\"resource\":\"pods\",\"code\":500}",
	    &spec, &st), 0);
	ck_assert_str_eq(spec.group, "*");
	ck_assert_uint_eq(spec.share_ppm, 1000000);
	ck_assert_uint_eq(spec.count, 0);
}
END_TEST

START_TEST(matching)
{
	struct dc_route rt;
	const struct fault *f;

	(void)add("{\"verb\":\"list\",\"resource\":\"pods\",\"group\":\"\","
	    "\"namespace\":\"a\",\"code\":500}");
	(void)add("{\"verb\":\"*\",\"resource\":\"pods/status\",\"code\":409}");
	(void)add("{\"verb\":\"get\",\"resource\":\"*\",\"group\":\"apps\",\"code\":503}");
	ck_assert_int_eq(router_parse(DC_GET, "/api/v1/namespaces/a/pods", false, &rt), 0);
	ck_assert_ptr_nonnull(f = faults_decide(dc, &rt));
	ck_assert_int_eq(fault_code(f), 500);
	ck_assert_int_eq(router_parse(DC_GET, "/api/v1/namespaces/b/pods", false, &rt), 0);
	ck_assert_ptr_null(faults_decide(dc, &rt));
	ck_assert_int_eq(router_parse(DC_GET, "/api/v1/namespaces/a/pods", true, &rt), 0);
	ck_assert_ptr_null(faults_decide(dc, &rt));	/* a watch */
	ck_assert_int_eq(router_parse(DC_PUT, "/api/v1/namespaces/a/pods/p/status", false,
	    &rt), 0);
	ck_assert_ptr_nonnull(f = faults_decide(dc, &rt));
	ck_assert_int_eq(fault_code(f), 409);
	ck_assert_int_eq(router_parse(DC_PUT, "/api/v1/namespaces/a/pods/p", false, &rt), 0);
	ck_assert_ptr_null(faults_decide(dc, &rt));
	ck_assert_int_eq(router_parse(DC_GET, "/apis/apps/v1/namespaces/a/deployments/d",
	    false, &rt), 0);
	ck_assert_ptr_nonnull(f = faults_decide(dc, &rt));
	ck_assert_int_eq(fault_code(f), 503);
	ck_assert_int_eq(router_parse(DC_GET, "/api/v1/namespaces/a/configmaps/c",
	    false, &rt), 0);
	ck_assert_ptr_null(faults_decide(dc, &rt));
	/* Never discovery or health. */
	ck_assert_int_eq(router_parse(DC_GET, "/apis/apps/v1", false, &rt), 0);
	ck_assert_ptr_null(faults_decide(dc, &rt));
	ck_assert_int_eq(router_parse(DC_GET, "/readyz", false, &rt), 0);
	ck_assert_ptr_null(faults_decide(dc, &rt));
}
END_TEST

START_TEST(share_and_count)
{
	struct dc_route rt;
	char hits[16] = "";

	(void)add("{\"verb\":\"get\",\"resource\":\"pods\",\"code\":500,\"share\":0.5}");
	ck_assert_int_eq(router_parse(DC_GET, "/api/v1/namespaces/a/pods/p", false, &rt), 0);
	for (size_t i = 0; i < 8; i++)
		hits[i] = faults_decide(dc, &rt) != NULL ? 'x' : '.';
	ck_assert_str_eq(hits, ".x.x.x.x");
	ck_assert_int_eq(faults_remove(dc, 0), 0);
	ck_assert_uint_eq(faults_count(dc), 0);
	(void)add("{\"verb\":\"get\",\"resource\":\"pods\",\"code\":500,\"share\":0.34}");
	for (size_t i = 0; i < 9; i++)
		hits[i] = faults_decide(dc, &rt) != NULL ? 'x' : '.';
	hits[9] = '\0';
	ck_assert_str_eq(hits, "..x..x..x");
	ck_assert_int_eq(faults_remove(dc, 0), 0);
	(void)add("{\"verb\":\"get\",\"resource\":\"pods\",\"code\":500,\"count\":3}");
	for (size_t i = 0; i < 6; i++)
		hits[i] = faults_decide(dc, &rt) != NULL ? 'x' : '.';
	hits[6] = '\0';
	ck_assert_str_eq(hits, "xxx...");
}
END_TEST

START_TEST(limits_and_remove)
{
	uint64_t id = 0, first = 0;
	struct fault_spec spec;
	struct kc_status st = { 0 };

	ck_assert_int_eq(parse("{\"verb\":\"get\",\"resource\":\"pods\",\"code\":500}",
	    &spec, &st), 0);
	for (unsigned i = 0; i < FAULTS_MAX; i++) {
		ck_assert_int_eq(faults_add(dc, &spec, &id), 0);
		if (i == 0)
			first = id;
	}
	ck_assert_int_eq(faults_add(dc, &spec, &id), -E2BIG);
	ck_assert_uint_eq(faults_count(dc), FAULTS_MAX);
	ck_assert_int_eq(faults_remove(dc, first), 0);
	ck_assert_int_eq(faults_remove(dc, first), KC_ENOTFOUND);
	ck_assert_uint_eq(faults_count(dc), FAULTS_MAX - 1);
	ck_assert_int_eq(faults_add(dc, &spec, &id), 0);
}
END_TEST

START_TEST(injected_replies)
{
	struct dc_resp resp;
	struct json_object *o;
	uint64_t delay = 1;

	(void)add("{\"verb\":\"list\",\"resource\":\"pods\",\"code\":503,"
	    "\"message\":\"etcd is on fire\"}");
	ck_assert_int_eq(call(DC_GET, "/api/v1/namespaces/default/pods", NULL, NULL,
	    &delay, &resp), 503);
	ck_assert_uint_eq(delay, 0);
	ck_assert_uint_eq(resp.nheaders, 0);
	o = reply_body(&resp);
	ck_assert_str_eq(kc_json_str(o, "reason"), "ServiceUnavailable");
	ck_assert_int_eq(kc_json_int(o, 0, "code"), 503);
	ck_assert_str_eq(kc_json_str(o, "message"), "etcd is on fire");
	json_object_put(o);
	(void)add("{\"verb\":\"get\",\"resource\":\"configmaps\",\"code\":429,"
	    "\"retryAfterSeconds\":2}");
	ck_assert_int_eq(call(DC_GET, "/api/v1/namespaces/default/configmaps/x", NULL,
	    NULL, NULL, &resp), 429);
	ck_assert_uint_eq(resp.nheaders, 1);
	ck_assert_str_eq(resp.headers[0].name, "Retry-After");
	ck_assert_str_eq(resp.headers[0].value, "2");
	o = reply_body(&resp);
	ck_assert_str_eq(kc_json_str(o, "reason"), "TooManyRequests");
	ck_assert_str_eq(kc_json_str(o, "message"),
	    "injected fault: 429 for get configmaps (devcluster)");
	json_object_put(o);
	(void)add("{\"verb\":\"create\",\"resource\":\"configmaps\",\"code\":409}");
	ck_assert_int_eq(call(DC_POST, "/api/v1/namespaces/default/configmaps", NULL,
	    "{\"metadata\":{\"name\":\"c\"}}", NULL, &resp), 409);
	o = reply_body(&resp);
	ck_assert_str_eq(kc_json_str(o, "reason"), "Conflict");
	json_object_put(o);
	/* Nothing was written. */
	ck_assert_ptr_null(coll_get(dct_type(dc, "configmaps")->coll, "default", "c"));
	/* Latency only: the request is served, its reply delayed. */
	(void)add("{\"verb\":\"list\",\"resource\":\"namespaces\",\"latencyMs\":250}");
	ck_assert_int_eq(call(DC_GET, "/api/v1/namespaces", NULL, NULL, &delay, NULL),
	    200);
	ck_assert_uint_eq(delay, 250);
	ck_assert_int_eq(call(DC_GET, "/api/v1/namespaces/default", NULL, NULL, &delay,
	    NULL), 200);
	ck_assert_uint_eq(delay, 0);
}
END_TEST

START_TEST(endpoints)
{
	struct json_object *o, *items;
	struct dc_resp resp;

	/* Admin only. */
	ck_assert_int_eq(call(DC_GET, "/devcluster/faults", "user-token", NULL, NULL,
	    &resp), 403);
	o = reply_body(&resp);
	ck_assert_str_eq(kc_json_str(o, "message"), "forbidden: User \"bob\" cannot get "
	    "path \"/devcluster/faults\": the devcluster endpoints are for system:masters "
	    "only");
	json_object_put(o);
	ck_assert_int_eq(call(DC_GET, "/devcluster/stats", "nope", NULL, NULL, NULL), 401);
	ck_assert_int_eq(call(DC_POST, "/devcluster/faults", NULL,
	    "{\"verb\":\"get\",\"resource\":\"pods\",\"code\":500,\"count\":1}", NULL,
	    &resp), 201);
	o = reply_body(&resp);
	ck_assert_int_eq(kc_json_int(o, 0, "id"), 1);
	json_object_put(o);
	ck_assert_int_eq(call(DC_POST, "/devcluster/faults", NULL, "{", NULL, &resp), 400);
	o = reply_body(&resp);
	ck_assert_str_eq(kc_json_str(o, "reason"), "BadRequest");
	json_object_put(o);
	ck_assert_int_eq(call(DC_POST, "/devcluster/faults", NULL, NULL, NULL, NULL), 400);
	ck_assert_int_eq(call(DC_GET, "/devcluster/faults", NULL, NULL, NULL, &resp), 200);
	o = reply_body(&resp);
	items = kc_json_get(o, "faults");
	ck_assert_ptr_nonnull(items);
	ck_assert_uint_eq(json_object_array_length(items), 1);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(items, 0), "verb"), "get");
	json_object_put(o);
	ck_assert_int_eq(call(DC_PUT, "/devcluster/faults", NULL, NULL, NULL, NULL), 405);
	ck_assert_int_eq(call(DC_DELETE, "/devcluster/faults/9", NULL, NULL, NULL, NULL),
	    404);
	ck_assert_int_eq(call(DC_DELETE, "/devcluster/faults/1", NULL, NULL, NULL, NULL),
	    200);
	ck_assert_uint_eq(faults_count(dc), 0);
	ck_assert_int_eq(call(DC_GET, "/devcluster/faults/compact", NULL, NULL, NULL,
	    NULL), 405);
	ck_assert_int_eq(call(DC_POST, "/devcluster/faults/pause", NULL, NULL, NULL,
	    NULL), 400);
	ck_assert_int_eq(call(DC_POST, "/devcluster/faults/pause?seconds=301", NULL, NULL,
	    NULL, NULL), 400);
	ck_assert_int_eq(call(DC_GET, "/devcluster/nothing", NULL, NULL, NULL, NULL), 404);
	ck_assert_int_eq(call(DC_POST, "/devcluster/faults/drop-watches", NULL, NULL, NULL,
	    NULL), 200);
}
END_TEST

START_TEST(pause_holds)
{
	struct dc_req req = { 0 }, admin = { 0 };

	fake_clock_install(1000000);
	ck_assert_int_eq(req_set_target(&req, "/readyz"), 0);
	ck_assert_int_eq(req_set_target(&admin, "/devcluster/faults"), 0);
	ck_assert_uint_eq(faults_hold_ms(dc, &req), 0);
	ck_assert_int_eq(call(DC_POST, "/devcluster/faults/pause?seconds=3", NULL, NULL,
	    NULL, NULL), 200);
	ck_assert_uint_eq(faults_hold_ms(dc, &req), 3000);
	ck_assert_uint_eq(faults_hold_ms(dc, &admin), 0);
	fake_clock_advance(1000);
	ck_assert_uint_eq(faults_hold_ms(dc, &req), 2000);
	fake_clock_advance(2000);
	ck_assert_uint_eq(faults_hold_ms(dc, &req), 0);
	faults_pause(dc, 5);
	ck_assert_uint_eq(faults_hold_ms(dc, &req), 5000);
	/* DELETE /devcluster/faults ends a pause too. */
	ck_assert_int_eq(call(DC_DELETE, "/devcluster/faults", NULL, NULL, NULL, NULL), 200);
	ck_assert_uint_eq(faults_hold_ms(dc, &req), 0);
	req_clear(&req);
	req_clear(&admin);
}
END_TEST

static int
count_ev(void *arg, struct dc_event *ev)
{
	(void)ev;
	(*(size_t *)arg)++;
	return 0;
}

START_TEST(compact_expires)
{
	const struct dc_rtype *cm = dct_type(dc, "configmaps");
	struct json_object *o;
	struct dc_resp resp;
	char target[160];
	uint64_t rv;
	size_t n = 0;

	o = dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/configmaps",
	    .body = "{\"metadata\":{\"name\":\"a\"}}" }, 201, NULL);
	rv = obj_rv(o);
	dct_put(o);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/configmaps",
	    .body = "{\"metadata\":{\"name\":\"b\"}}" }, 201, NULL));
	ck_assert_int_eq(coll_history(cm->coll, rv, count_ev, &n, NULL), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(call(DC_POST, "/devcluster/faults/compact", NULL, NULL, NULL,
	    NULL), 200);
	ck_assert_int_eq(coll_history(cm->coll, rv, NULL, NULL, NULL), KC_EEXPIRED);
	ck_assert_int_eq(coll_history(cm->coll, storage_rv(dc->store), NULL, NULL, NULL),
	    0);
	(void)snprintf(target, sizeof(target),
	    "/api/v1/namespaces/default/configmaps?resourceVersion=%" PRIu64
	    "&resourceVersionMatch=Exact", rv);
	ck_assert_int_eq(call(DC_GET, target, NULL, NULL, NULL, &resp), 410);
	resp_clear(&resp);
	/* The objects stay. */
	ck_assert_ptr_nonnull(coll_get(cm->coll, "default", "a"));
}
END_TEST

START_TEST(stats_counting)
{
	struct json_object *o;
	struct dc_resp resp;
	struct faults_stats fs;
	char body[64];

	for (int i = 0; i < 3; i++) {
		(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"c%d\"}}", i);
		ck_assert_int_eq(call(DC_POST, "/api/v1/namespaces/default/configmaps", NULL,
		    body, NULL, NULL), 201);
	}
	ck_assert_int_eq(call(DC_POST, "/api/v1/namespaces/default/configmaps", NULL,
	    "{\"metadata\":{\"name\":\"c0\"}}", NULL, NULL), 409);
	ck_assert_int_eq(call(DC_GET, "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", NULL,
	    NULL, NULL, NULL), 200);
	ck_assert_int_eq(call(DC_GET, "/readyz", NULL, NULL, NULL, NULL), 200);
	ck_assert_int_eq(call(DC_GET, "/api/v1/pods", "nope", NULL, NULL, NULL), 401);
	/* The endpoints themselves are not counted. */
	ck_assert_int_eq(call(DC_GET, "/devcluster/stats", NULL, NULL, NULL, &resp), 200);
	ck_assert_uint_eq(faults_stat_count(dc, "create", "configmaps", 201), 3);
	ck_assert_uint_eq(faults_stat_count(dc, "create", "configmaps", 0), 4);
	ck_assert_uint_eq(faults_stat_count(dc, NULL, "roles.rbac.authorization.k8s.io", 0), 1);
	ck_assert_uint_eq(faults_stat_count(dc, "list", "pods", 401), 1);
	faults_stats(dc, &fs);
	ck_assert_uint_eq(fs.total, 7);
	ck_assert_uint_eq(fs.resource, 6);
	o = reply_body(&resp);
	ck_assert_int_eq(kc_json_int(o, 0, "total"), 7);
	ck_assert_int_eq(kc_json_int(o, 0, "byVerb", "create"), 4);
	ck_assert_int_eq(kc_json_int(o, 0, "byResource", "configmaps"), 4);
	ck_assert_int_eq(kc_json_int(o, 0, "byCode", "201"), 3);
	ck_assert_int_eq(kc_json_int(o, 0, "byCode", "409"), 1);
	ck_assert_int_eq(kc_json_int(o, 0, "byCode", "200"), 2);
	json_object_put(o);
	/* Injected errors are counted under their code. */
	(void)add("{\"verb\":\"get\",\"resource\":\"configmaps\",\"code\":500}");
	ck_assert_int_eq(call(DC_GET, "/api/v1/namespaces/default/configmaps/c1", NULL,
	    NULL, NULL, NULL), 500);
	ck_assert_uint_eq(faults_stat_count(dc, "get", "configmaps", 500), 1);
	faults_stats(dc, &fs);
	ck_assert_uint_eq(fs.injected_errors, 1);
	ck_assert_int_eq(call(DC_DELETE, "/devcluster/stats", NULL, NULL, NULL, NULL), 200);
	faults_stats(dc, &fs);
	ck_assert_uint_eq(fs.total, 0);
	ck_assert_uint_eq(faults_stat_count(dc, NULL, NULL, 0), 0);
}
END_TEST

START_TEST(stats_rows_bounded)
{
	struct dc_resp resp;
	struct faults_stats fs;
	char target[64];

	resp_init(&resp);
	resp.status = 200;
	for (unsigned i = 0; i < FAULTS_STAT_ROWS + 5; i++) {
		struct dc_req req = { 0 };

		(void)snprintf(target, sizeof(target), "/api/v1/kind%u", i);
		ck_assert_int_eq(req_set_target(&req, target), 0);
		req.method = DC_GET;
		(void)faults_after(dc, &req, &resp);
		req_clear(&req);
	}
	faults_stats(dc, &fs);
	ck_assert_uint_eq(fs.total, FAULTS_STAT_ROWS + 5);
	ck_assert_uint_eq(fs.resource, FAULTS_STAT_ROWS + 5);
	ck_assert_uint_eq(fs.untracked, 5);
	ck_assert_uint_eq(faults_stat_count(dc, "list", "kind0", 200), 1);
	resp_clear(&resp);
}
END_TEST

START_TEST(alloc_failures)
{
	struct json_object *o = NULL;
	int r;

	faults_fini(dc);
	for (size_t i = 0; i < 3; i++) {
		fail_alloc_after(i);
		r = faults_init(dc);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(plugin_state(dc, &faults_plugin));
	}
	ck_assert_ptr_nonnull(plugin_state(dc, &faults_plugin));
	(void)add("{\"verb\":\"get\",\"resource\":\"pods\",\"code\":500}");
	ck_assert_int_eq(faults_list_json(dc, &o), 0);
	json_object_put(o);
	ck_assert_int_eq(faults_stats_json(dc, &o), 0);
	json_object_put(o);
	/* Without init: no-ops, and the endpoints are 404. */
	faults_fini(dc);
	ck_assert_int_eq(call(DC_GET, "/devcluster/faults", NULL, NULL, NULL, NULL), 404);
	ck_assert_uint_eq(faults_count(dc), 0);
}
END_TEST

Suite *
dc_faults_suite(void)
{
	Suite *s = suite_create("dc_faults");
	TCase *tc = tcase_create("faults");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, parse_errors);
	tcase_add_test(tc, parse_defaults);
	tcase_add_test(tc, matching);
	tcase_add_test(tc, share_and_count);
	tcase_add_test(tc, limits_and_remove);
	tcase_add_test(tc, injected_replies);
	tcase_add_test(tc, endpoints);
	tcase_add_test(tc, pause_holds);
	tcase_add_test(tc, compact_expires);
	tcase_add_test(tc, stats_counting);
	tcase_add_test(tc, stats_rows_bounded);
	tcase_add_test(tc, alloc_failures);
	suite_add_tcase(s, tc);
	return s;
}

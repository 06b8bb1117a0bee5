/*
 * dc_testutil.c: requests and replies for the devcluster unit suites.
 *
 * The suites test devcluster/api.c and what hangs off it through
 * api_handle(), the one entry point http.c calls. Each request here is
 * built the way http.c builds one (target split by req_set_target(),
 * owned strings, a body with its NUL), answered, and checked against the
 * status the test expects, so a suite reads as a list of calls and the
 * objects they return. Every helper fails the running test rather than
 * returning an error.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/str.h>

#include "dc_testutil.h"
#include "testutil.h"

#define DCT_REDO_MS	20000	/* how long a request may wait for a webhook */

static uint64_t
real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct dc *
dct_new(const struct dc_opts *opts)
{
	struct dc *dc = NULL;

	ck_assert_int_eq(api_new(opts != NULL ? opts :
	    &(struct dc_opts){ .kube_version = "1.32" }, &dc), 0);
	ck_assert_int_eq(auth_add(dc->auth, "admin-token", "admin", "admin",
	    (const char *const []){ "system:masters", NULL }), 0);
	return dc;
}

void
dct_raw(struct dc *dc, const struct dct_call *c, struct dc_resp *resp, size_t fail)
{
	struct dc_req req = { 0 };

	resp_init(resp);
	ck_assert_int_eq(req_set_target(&req, c->target), 0);
	req.method = c->method;
	if (c->token == NULL || c->token[0] != '\0')
		req.authorization = kc_asprintf("Bearer %s", c->token != NULL ? c->token :
		    "admin-token");
	if (c->body != NULL) {
		req.body_len = c->body_len != 0 ? c->body_len : strlen(c->body);
		req.body = kc_memdup(c->body, req.body_len + 1);
		req.content_type = kc_strdup(c->ctype != NULL ? c->ctype : "application/json");
	} else if (c->ctype != NULL)
		req.content_type = kc_strdup(c->ctype);
	if (c->accept != NULL)
		req.accept = kc_strdup(c->accept);
	if (c->imp_user != NULL)
		req.imp_user = kc_strdup(c->imp_user);
	for (size_t i = 0; c->imp_groups != NULL && c->imp_groups[i] != NULL &&
	    i < DC_IMP_GROUPS_MAX; i++)
		req.imp_groups[req.imp_ngroups++] = kc_strdup(c->imp_groups[i]);
	if (c->user_agent != NULL)
		req.user_agent = kc_strdup(c->user_agent);
	fail_alloc_after(fail);
	api_handle(dc, &req, resp);
	/* As http.c: held while a conversion or admission webhook works, then again. */
	for (uint64_t until = real_ms() + DCT_REDO_MS; req.redo && real_ms() < until;) {
		fake_clock_advance(1);
		(void)timers_run(dc);
		if (convwebhook_plugin.hold_ms(dc, &req) == 0 &&
		    admwebhook_plugin.hold_ms(dc, &req) == 0)
			api_handle(dc, &req, resp);
	}
	ck_assert_msg(!req.redo, "still waiting for a conversion or admission webhook");
	/* As http.c: the request's admission answers go with its reply. */
	if (plugin_state(dc, &admwebhook_plugin) != NULL)
		(void)admwebhook_plugin.after(dc, &req, resp);
	fail_alloc_after(SIZE_MAX);
	req_clear(&req);
}

struct json_object *
dct_run(struct dc *dc, const struct dct_call *c, int want, struct dc_resp *out)
{
	struct dc_resp resp;
	struct json_object *o = NULL;

	dct_raw(dc, c, &resp, SIZE_MAX);
	ck_assert_msg(resp.status == want, "%s %s: got %d, want %d: %.300s",
	    method_name(c->method), c->target, resp.status, want, kc_buf_str(&resp.body));
	if (resp.stream == NULL && resp.content_type != NULL && resp.body.len > 0 &&
	    strncmp(resp.content_type, "application/json", 16) == 0)
		ck_assert_int_eq(kc_json_parse(resp.body.data, resp.body.len, &o, NULL), 0);
	if (out != NULL)
		*out = resp;
	else
		resp_clear(&resp);
	return o;
}

void
dct_put(struct json_object *o)
{
	if (o != NULL)
		json_object_put(o);
}

void
dct_expect_message(struct json_object *o, const char *msg)
{
	const char *got;

	ck_assert_ptr_nonnull(o);
	got = kc_json_str(o, "message");
	ck_assert_msg(got != NULL && strcmp(got, msg) == 0, "message: got %s, want %s",
	    got != NULL ? got : "(null)", msg);
	json_object_put(o);
}

const char *
dct_rv(const struct json_object *o)
{
	return kc_json_str(o, "metadata", "resourceVersion");
}

const struct dc_rtype *
dct_type(struct dc *dc, const char *plural)
{
	const struct dc_rtype *rt = registry_find_any(dc, "", plural);

	ck_assert_ptr_nonnull(rt);
	return rt;
}

void
dct_add_fault(struct dc *dc, const char *json)
{
	struct json_object *o = NULL;
	struct fault_spec spec;
	struct kc_status st = { 0 };

	ck_assert_int_eq(kc_json_parse(json, strlen(json), &o, NULL), 0);
	ck_assert_msg(faults_parse(o, &spec, &st) == 0, "%s", st.message);
	ck_assert_int_eq(faults_add(dc, &spec, NULL), 0);
	json_object_put(o);
}

void
dct_post(struct dc *dc, int want, const char *target, const char *fmt, ...)
{
	char body[8192];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = target,
	    .body = body }, want, NULL));
}

char *
dct_review_answer(struct json_object *review, struct json_object *resp, bool ok,
    size_t *ret_len)
{
	char *text;

	json_object_object_del(review, "request");
	if (kc_json_put(review, "response", resp) < 0 || !ok) {
		json_object_put(review);
		return NULL;
	}
	text = strdup(json_object_to_json_string_ext(review, JSON_C_TO_STRING_PLAIN));
	json_object_put(review);
	*ret_len = text != NULL ? strlen(text) : 0;
	return text;
}

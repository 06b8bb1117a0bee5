/*
 * test_transport.c: the libcurl transport (lib/transport.c) against the
 * scripted loopback server (tests/server/testserver.c).
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/cert.h>
#include <kc/clock.h>
#include <kc/kubeconfig.h>
#include <kc/str.h>
#include <kc/transport.h>

#include "../server/testserver.h"
#include "testutil.h"

static const struct kc_transport_ops *const T = &kc_transport_curl;

static struct ts_server *
start_ex(const char *script, bool client_cert, bool h2)
{
	struct ts_server *s = NULL;

	ck_assert_int_eq(ts_start(&(struct ts_opts){
		.script_text = script,
		.require_client_cert = client_cert,
		.http2 = h2,
	}, &s), 0);
	return s;
}

static struct ts_server *
start(const char *script)
{
	return start_ex(script, false, false);
}

/* A rest config for the server, on the caller's stack (open() copies). */
static void
rc_for(struct ts_server *s, struct kc_rest_config *rc)
{
	memset(rc, 0, sizeof(*rc));
	rc->server = (char *)(uintptr_t)ts_url(s);
	rc->ca_pem = (char *)(uintptr_t)ts_ca_pem(s);
	rc->ca_pem_len = strlen(rc->ca_pem);
}

static void *
open_with(const struct kc_rest_config *rc, const struct kc_transport_opts *o)
{
	struct kc_transport_opts opts = *o;
	struct kc_status st = { 0 };
	void *t = NULL;
	int r;

	opts.rc = rc;
	r = T->open(&opts, &t, &st);
	ck_assert_msg(r == 0, "open: %s: %s", kc_strerror(r), st.message);
	return t;
}

static void *
open_for(struct ts_server *s)
{
	struct kc_rest_config rc;

	rc_for(s, &rc);
	return open_with(&rc, &(struct kc_transport_opts){ 0 });
}

static int
get(void *t, const char *path, struct kc_http_resp *resp, struct kc_status *st)
{
	return T->request(t, &(struct kc_http_req){
		.method = "GET", .path = path, .idempotent = true,
	}, resp, st);
}

static uint64_t
real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
setup(void)
{
	ck_assert_int_eq(kc_transport_global_init(), 0);
}

static void
teardown(void)
{
	fail_alloc_after(SIZE_MAX);
	fake_clock_uninstall();
	kc_transport_global_cleanup();
}

START_TEST(test_get_json)
{
	struct ts_server *s = start(
	    "request GET /api/v1/pods\n"
	    "status 200\n"
	    "header Content-Type: application/json\n"
	    "body {\"kind\":\"PodList\",\"items\":[]}\n");
	void *t = open_for(s);
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	const struct ts_request *rq;

	ck_assert_int_eq(get(t, "/api/v1/pods?labelSelector=app%3Ddemo%2Cx+in+%28a%29&limit=5",
	    &resp, &st), 0);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(kc_buf_str(&resp.body), "{\"kind\":\"PodList\",\"items\":[]}");
	ck_assert_str_eq(resp.content_type, "application/json");
	ck_assert_uint_eq(resp.retries, 0);
	ck_assert_uint_eq(resp.retry_after_ms, 0);
	kc_http_resp_free(&resp);

	ck_assert_uint_eq(ts_nrequests(s), 1);
	rq = ts_request(s, 0);
	ck_assert_str_eq(rq->method, "GET");
	ck_assert_str_eq(rq->path, "/api/v1/pods?labelSelector=app%3Ddemo%2Cx+in+%28a%29&limit=5");
	ck_assert_str_eq(rq->accept, "application/json");
	ck_assert_str_eq(rq->user_agent, "trainyard/" KC_VERSION);
	ck_assert_ptr_nonnull(rq->accept_encoding);
	ck_assert_ptr_nonnull(strstr(rq->accept_encoding, "gzip"));
	ck_assert_ptr_null(rq->authorization);
	ck_assert_ptr_null(rq->content_type);
	ck_assert_ptr_null(rq->impersonate_user);
	ck_assert(!rq->http2);
	T->close(t);
	ts_stop(s);
}
END_TEST

START_TEST(test_post_body_and_headers)
{
	static char *groups[] = { "team-a", "system:authenticated", NULL };
	struct ts_server *s = start(
	    "request POST /api/v1/namespaces/default/configmaps\n"
	    "status 201\n"
	    "echo\n");
	struct kc_rest_config rc;
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	const struct ts_request *rq;
	static const char body[] = "{\"kind\":\"ConfigMap\"}";
	void *t;

	rc_for(s, &rc);
	rc.token = "secret-token";
	rc.impersonate_user = "jane";
	rc.impersonate_groups = groups;
	t = open_with(&rc, &(struct kc_transport_opts){ .user_agent = "test-agent/1" });
	ck_assert_int_eq(T->request(t, &(struct kc_http_req){
		.method = "POST", .path = "/api/v1/namespaces/default/configmaps",
		.content_type = "application/json", .accept = "application/json;as=Table",
		.body = body, .body_len = strlen(body),
	}, &resp, &st), 0);
	ck_assert_int_eq(resp.status, 201);
	ck_assert_str_eq(kc_buf_str(&resp.body), body);
	kc_http_resp_free(&resp);

	rq = ts_request(s, 0);
	ck_assert_str_eq(rq->method, "POST");
	ck_assert_str_eq(rq->body, body);
	ck_assert_uint_eq(rq->body_len, strlen(body));
	ck_assert_str_eq(rq->content_type, "application/json");
	ck_assert_str_eq(rq->accept, "application/json;as=Table");
	ck_assert_str_eq(rq->authorization, "Bearer secret-token");
	ck_assert_str_eq(rq->user_agent, "test-agent/1");
	ck_assert_str_eq(rq->impersonate_user, "jane");
	/* One header per group; lws 4.1 lets the server see the first. */
	ck_assert_str_eq(rq->impersonate_group, "team-a");
	T->close(t);
	ts_stop(s);
}
END_TEST

START_TEST(test_methods)
{
	struct ts_server *s = start(
	    "request DELETE /api/v1/namespaces/default/pods/p\n"
	    "status 200\n"
	    "body {}\n"
	    "request PATCH /api/v1/namespaces/default/pods/p\n"
	    "echo\n"
	    "request PUT /api/v1/namespaces/default/pods/p\n"
	    "echo\n"
	    "request HEAD /healthz\n"
	    "status 200\n");
	void *t = open_for(s);
	struct kc_http_resp resp;
	struct kc_status st = { 0 };

	ck_assert_int_eq(T->request(t, &(struct kc_http_req){
		.method = "DELETE", .path = "/api/v1/namespaces/default/pods/p",
	}, &resp, &st), 0);
	ck_assert_int_eq(resp.status, 200);
	kc_http_resp_free(&resp);
	ck_assert_int_eq(T->request(t, &(struct kc_http_req){
		.method = "PATCH", .path = "/api/v1/namespaces/default/pods/p",
		.content_type = "application/merge-patch+json",
		.body = "{\"a\":1}", .body_len = 7,
	}, &resp, &st), 0);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(kc_buf_str(&resp.body), "{\"a\":1}");
	kc_http_resp_free(&resp);
	ck_assert_int_eq(T->request(t, &(struct kc_http_req){
		.method = "PUT", .path = "/api/v1/namespaces/default/pods/p",
		.content_type = "application/json", .body = "{}", .body_len = 2,
	}, &resp, &st), 0);
	ck_assert_int_eq(resp.status, 200);
	kc_http_resp_free(&resp);
	ck_assert_int_eq(T->request(t, &(struct kc_http_req){
		.method = "HEAD", .path = "/healthz",
	}, &resp, &st), 0);
	ck_assert_int_eq(resp.status, 200);
	kc_http_resp_free(&resp);

	ck_assert_str_eq(ts_request(s, 0)->method, "DELETE");
	ck_assert_str_eq(ts_request(s, 1)->method, "PATCH");
	ck_assert_str_eq(ts_request(s, 1)->content_type, "application/merge-patch+json");
	ck_assert_str_eq(ts_request(s, 2)->method, "PUT");
	ck_assert_str_eq(ts_request(s, 2)->body, "{}");
	ck_assert_str_eq(ts_request(s, 3)->method, "HEAD");
	T->close(t);
	ts_stop(s);
}
END_TEST

START_TEST(test_tls_verification)
{
	struct ts_server *s = start("request\nrepeat forever\nbody ok\n");
	struct kc_rest_config rc;
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	void *t;

	/* An unrelated CA. */
	rc_for(s, &rc);
	rc.ca_pem = (char *)(uintptr_t)ts_ca_pem_other(s);
	rc.ca_pem_len = strlen(rc.ca_pem);
	t = open_with(&rc, &(struct kc_transport_opts){ .max_retries = 3 });
	ck_assert_int_eq(get(t, "/", &resp, &st), KC_ETLS);
	ck_assert_str_ne(st.message, "");
	ck_assert_uint_eq(resp.retries, 0);	/* TLS failures are not retried */
	ck_assert_ptr_null(resp.body.data);
	T->close(t);

	/* The same, but insecure. */
	rc.insecure_skip_tls_verify = true;
	t = open_with(&rc, &(struct kc_transport_opts){ 0 });
	ck_assert_int_eq(get(t, "/", &resp, &st), 0);
	ck_assert_str_eq(kc_buf_str(&resp.body), "ok");
	kc_http_resp_free(&resp);
	T->close(t);

	/* No CA: the system store does not know ours. */
	rc_for(s, &rc);
	rc.ca_pem = NULL;
	rc.ca_pem_len = 0;
	t = open_with(&rc, &(struct kc_transport_opts){ 0 });
	ck_assert_int_eq(get(t, "/", &resp, &st), KC_ETLS);
	T->close(t);

	/* tls_server_name: verified as "localhost", Host stays the address. */
	rc_for(s, &rc);
	rc.tls_server_name = "localhost";
	t = open_with(&rc, &(struct kc_transport_opts){ 0 });
	ck_assert_int_eq(get(t, "/named", &resp, &st), 0);
	ck_assert_int_eq(resp.status, 200);
	kc_http_resp_free(&resp);
	T->close(t);
	{
		const struct ts_request *rq = ts_request(s, ts_nrequests(s) - 1);
		char host[64];

		snprintf(host, sizeof(host), "127.0.0.1:%d", ts_port(s));
		ck_assert_str_eq(rq->path, "/named");
		ck_assert_str_eq(rq->host, host);
	}
	rc.tls_server_name = "wrong.example";
	t = open_with(&rc, &(struct kc_transport_opts){ 0 });
	ck_assert_int_eq(get(t, "/", &resp, &st), KC_ETLS);
	ck_assert_ptr_nonnull(strstr(st.message, "wrong.example"));
	T->close(t);

	/*
	 * connect_to: the URL names the host (Host header, SNI, verification)
	 * and the connection goes to the address, as to a Service's endpoint.
	 */
	{
		char server[64], to[32], host[64];
		void *t2 = NULL;

		rc_for(s, &rc);
		(void)snprintf(server, sizeof(server), "https://localhost:%d", ts_port(s));
		(void)snprintf(to, sizeof(to), "127.0.0.1:%d", ts_port(s));
		rc.server = server;
		t = open_with(&rc, &(struct kc_transport_opts){ .connect_to = to });
		ck_assert_int_eq(get(t, "/routed", &resp, &st), 0);
		ck_assert_int_eq(resp.status, 200);
		kc_http_resp_free(&resp);
		T->close(t);
		(void)snprintf(host, sizeof(host), "localhost:%d", ts_port(s));
		ck_assert_str_eq(ts_request(s, ts_nrequests(s) - 1)->host, host);
		/* A name the certificate does not carry fails, though the address is right. */
		(void)snprintf(server, sizeof(server), "https://svc.ns.svc:%d", ts_port(s));
		t = open_with(&rc, &(struct kc_transport_opts){ .connect_to = to });
		ck_assert_int_eq(get(t, "/", &resp, &st), KC_ETLS);
		ck_assert_ptr_nonnull(strstr(st.message, "svc.ns.svc"));
		T->close(t);
		/* Not host:port. */
		ck_assert_int_eq(T->open(&(struct kc_transport_opts){ .rc = &rc,
		    .connect_to = "no-port" }, &t2, &st), KC_ECONFIG);
		ck_assert_ptr_null(t2);
	}
	ts_stop(s);
}
END_TEST

/* Material that does not parse or does not fit fails as KC_ETLS, unretried. */
START_TEST(test_bad_certificates)
{
	static const char garbage_ca[] = "-----BEGIN CERTIFICATE-----\n"
	    "bm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n";
	struct ts_server *s = start_ex("request\nrepeat forever\nbody ok\n", true, false);
	struct kc_cert_pair *other = NULL;
	struct kc_rest_config rc;
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	void *t;

	/* A CA bundle that is not PEM of a certificate. */
	rc_for(s, &rc);
	rc.ca_pem = (char *)(uintptr_t)garbage_ca;
	rc.ca_pem_len = strlen(garbage_ca);
	t = open_with(&rc, &(struct kc_transport_opts){ .max_retries = 3 });
	ck_assert_int_eq(get(t, "/", &resp, &st), KC_ETLS);
	ck_assert_uint_eq(resp.retries, 0);
	ck_assert_str_ne(st.message, "");
	T->close(t);

	/* A client certificate with somebody else's key. */
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){
		.cn = "other", .client = true }, NULL, &other, &st), 0);
	rc_for(s, &rc);
	rc.cert_pem = (char *)(uintptr_t)ts_client_cert_pem(s);
	rc.cert_pem_len = strlen(rc.cert_pem);
	rc.key_pem = other->key_pem;
	rc.key_pem_len = other->key_pem_len;
	t = open_with(&rc, &(struct kc_transport_opts){ .max_retries = 3 });
	ck_assert_int_eq(get(t, "/", &resp, &st), KC_ETLS);
	ck_assert_uint_eq(resp.retries, 0);
	T->close(t);

	/* A key that is not PEM at all. */
	rc.key_pem = (char *)(uintptr_t)"not a key";
	rc.key_pem_len = strlen(rc.key_pem);
	t = open_with(&rc, &(struct kc_transport_opts){ 0 });
	ck_assert_int_eq(get(t, "/", &resp, &st), KC_ETLS);
	T->close(t);
	ck_assert_uint_eq(ts_nrequests(s), 0);
	kc_cert_pair_free(other);
	ts_stop(s);
}
END_TEST

START_TEST(test_client_certificates)
{
	struct ts_server *s = start_ex("request\nrepeat forever\nbody ok\n", true, false);
	struct kc_cert_pair *ca = NULL, *cl = NULL;
	struct kc_rest_config rc;
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	void *t;
	int r;

	/* Presented and trusted. */
	rc_for(s, &rc);
	rc.cert_pem = (char *)(uintptr_t)ts_client_cert_pem(s);
	rc.cert_pem_len = strlen(rc.cert_pem);
	rc.key_pem = (char *)(uintptr_t)ts_client_key_pem(s);
	rc.key_pem_len = strlen(rc.key_pem);
	t = open_with(&rc, &(struct kc_transport_opts){ 0 });
	ck_assert_msg(get(t, "/", &resp, &st) == 0, "%s", st.message);
	ck_assert_int_eq(resp.status, 200);
	kc_http_resp_free(&resp);
	T->close(t);
	ck_assert_uint_eq(ts_nrequests(s), 1);

	/*
	 * Missing. Under TLS 1.3 the server refuses after the client's side
	 * of the handshake is done, so the refusal arrives as an alert
	 * (KC_ETLS) or, when the server's close wins the race, as a reset.
	 */
	rc_for(s, &rc);
	t = open_with(&rc, &(struct kc_transport_opts){ 0 });
	r = get(t, "/", &resp, &st);
	ck_assert_msg(r == KC_ETLS || r == KC_ETRANSPORT, "%s", st.message);
	T->close(t);

	/* Signed by a CA the server does not trust. */
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){
		.cn = "rogue-ca", .is_ca = true }, NULL, &ca, &st), 0);
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){
		.cn = "mallory", .client = true }, ca, &cl, &st), 0);
	rc.cert_pem = cl->cert_pem;
	rc.cert_pem_len = cl->cert_pem_len;
	rc.key_pem = cl->key_pem;
	rc.key_pem_len = cl->key_pem_len;
	t = open_with(&rc, &(struct kc_transport_opts){ 0 });
	r = get(t, "/", &resp, &st);
	ck_assert_msg(r == KC_ETLS || r == KC_ETRANSPORT, "%s", st.message);
	T->close(t);
	ck_assert_uint_eq(ts_nrequests(s), 1);
	kc_cert_pair_free(cl);
	kc_cert_pair_free(ca);
	ts_stop(s);
}
END_TEST

START_TEST(test_token_file_rotation)
{
	struct ts_server *s = start("request\nrepeat forever\nbody ok\n");
	char *dir = tu_tmpdir(), *path;
	struct kc_rest_config rc;
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	void *t;

	path = tu_write(dir, "token", "first-token\n");
	rc_for(s, &rc);
	rc.token_file = path;
	t = open_with(&rc, &(struct kc_transport_opts){ 0 });
	ck_assert_int_eq(get(t, "/1", &resp, &st), 0);
	kc_http_resp_free(&resp);
	kc_free(tu_write(dir, "token", "the-second-token\n"));
	ck_assert_int_eq(get(t, "/2", &resp, &st), 0);
	kc_http_resp_free(&resp);
	ck_assert_str_eq(ts_request(s, 0)->authorization, "Bearer first-token");
	ck_assert_str_eq(ts_request(s, 1)->authorization, "Bearer the-second-token");
	T->close(t);
	kc_free(path);
	tu_tmpdir_remove(dir);
	ts_stop(s);
}
END_TEST

START_TEST(test_gzip_response)
{
	struct ts_server *s = start(
	    "request GET /api/v1/pods\n"
	    "header Content-Encoding: gzip\n"
	    "body-file server/pods.json.gz\n");
	void *t = open_for(s);
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	size_t len;
	char *want = tu_fixture("server/pods.json", &len);

	ck_assert_int_eq(get(t, "/api/v1/pods", &resp, &st), 0);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_uint_eq(resp.body.len, len);
	ck_assert_mem_eq(resp.body.data, want, len);
	kc_http_resp_free(&resp);
	kc_free(want);
	T->close(t);
	ts_stop(s);
}
END_TEST

START_TEST(test_response_size_cap)
{
	struct ts_server *s;
	struct kc_rest_config rc;
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	struct kc_buf script;
	void *t;

	kc_buf_init(&script, 1 << 20);
	ck_assert_int_eq(kc_buf_puts(&script, "request\nbody "), 0);
	for (int i = 0; i < 3000; i++)
		ck_assert_int_eq(kc_buf_putc(&script, 'x'), 0);
	/* The same size again, streamed without a Content-Length. */
	ck_assert_int_eq(kc_buf_puts(&script, "\nrequest\n"), 0);
	for (int i = 0; i < 30; i++)
		ck_assert_int_eq(kc_buf_puts(&script,
		    "chunk 0123456789012345678901234567890123456789"
		    "0123456789012345678901234567890123456789\n"), 0);
	ck_assert_int_eq(kc_buf_puts(&script, "request\nbody small\n"), 0);
	ck_assert_int_eq(kc_buf_puts(&script, "request\nbody "), 0);
	for (int i = 0; i < 3000; i++)
		ck_assert_int_eq(kc_buf_putc(&script, 'x'), 0);
	ck_assert_int_eq(kc_buf_putc(&script, '\n'), 0);
	s = start(kc_buf_str(&script));
	kc_buf_free(&script);

	rc_for(s, &rc);
	t = open_with(&rc, &(struct kc_transport_opts){ .max_response = 1000 });
	ck_assert_int_eq(get(t, "/big", &resp, &st), -E2BIG);
	ck_assert_ptr_nonnull(strstr(st.message, "1000"));
	ck_assert_ptr_null(resp.body.data);
	ck_assert_int_eq(get(t, "/big-chunked", &resp, &st), -E2BIG);
	ck_assert_ptr_null(resp.body.data);
	ck_assert_int_eq(get(t, "/small", &resp, &st), 0);
	ck_assert_str_eq(kc_buf_str(&resp.body), "small");
	kc_http_resp_free(&resp);
	T->close(t);

	/* No practical cap: SIZE_MAX must not turn into a negative curl_off_t. */
	t = open_with(&rc, &(struct kc_transport_opts){ .max_response = SIZE_MAX });
	ck_assert_msg(get(t, "/big", &resp, &st) == 0, "%s", st.message);
	ck_assert_uint_eq(resp.body.len, 3000);
	kc_http_resp_free(&resp);
	T->close(t);
	ts_stop(s);
}
END_TEST

START_TEST(test_retry_5xx_idempotent_only)
{
	struct ts_server *s = start(
	    "request GET /a\nstatus 500\nbody oops\n"
	    "request GET /a\nstatus 200\nbody fine\n"
	    "request POST /b\nstatus 500\nbody oops\n"
	    "request GET /c\nstatus 501\nbody no\n");
	struct kc_rest_config rc;
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	void *t;

	fake_clock_install(1000);
	rc_for(s, &rc);
	t = open_with(&rc, &(struct kc_transport_opts){ .max_retries = 3 });
	ck_assert_int_eq(get(t, "/a", &resp, &st), 0);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(kc_buf_str(&resp.body), "fine");
	ck_assert_uint_eq(resp.retries, 1);
	/* base 200 ms with equal jitter: between 100 and 200 */
	ck_assert_uint_ge(fake_clock_slept_ms(), 100);
	ck_assert_uint_le(fake_clock_slept_ms(), 200);
	kc_http_resp_free(&resp);

	ck_assert_int_eq(T->request(t, &(struct kc_http_req){
		.method = "POST", .path = "/b", .body = "{}", .body_len = 2,
		.content_type = "application/json",
	}, &resp, &st), 0);
	ck_assert_int_eq(resp.status, 500);
	ck_assert_uint_eq(resp.retries, 0);
	kc_http_resp_free(&resp);

	ck_assert_int_eq(get(t, "/c", &resp, &st), 0);
	ck_assert_int_eq(resp.status, 501);
	ck_assert_uint_eq(resp.retries, 0);
	kc_http_resp_free(&resp);
	ck_assert_uint_eq(ts_nrequests(s), 4);
	T->close(t);
	ts_stop(s);
}
END_TEST

START_TEST(test_retries_exhausted)
{
	struct ts_server *s = start("request GET /a\nrepeat 3\nstatus 503\nbody busy\n");
	struct kc_rest_config rc;
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	void *t;

	fake_clock_install(0);
	rc_for(s, &rc);
	t = open_with(&rc, &(struct kc_transport_opts){
		.max_retries = 2, .backoff_base_ms = 100, .backoff_max_ms = 150,
	});
	ck_assert_int_eq(get(t, "/a", &resp, &st), 0);
	ck_assert_int_eq(resp.status, 503);
	ck_assert_str_eq(kc_buf_str(&resp.body), "busy");
	ck_assert_uint_eq(resp.retries, 2);
	/* 100 then min(200, 150), each with equal jitter */
	ck_assert_uint_ge(fake_clock_slept_ms(), 50 + 75);
	ck_assert_uint_le(fake_clock_slept_ms(), 100 + 150);
	ck_assert_uint_eq(ts_nrequests(s), 3);
	kc_http_resp_free(&resp);
	T->close(t);
	ts_stop(s);
}
END_TEST

START_TEST(test_retry_after)
{
	struct ts_server *s = start(
	    "request\nstatus 429\nheader Retry-After: 1\nbody slow down\n"
	    "request\nstatus 200\nbody ok\n"
	    "request\nstatus 503\nheader Retry-After: Tue, 14 Nov 2023 22:13:22 GMT\n"
	    "request\nstatus 200\nbody ok\n"
	    "request\nstatus 429\nheader Retry-After: 5\n");
	struct kc_rest_config rc;
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	void *t;

	/* The fake wall clock reads 1700000000, 2023-11-14T22:13:20Z. */
	fake_clock_install(0);
	rc_for(s, &rc);
	t = open_with(&rc, &(struct kc_transport_opts){ .max_retries = 1 });
	ck_assert_int_eq(get(t, "/", &resp, &st), 0);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_uint_eq(resp.retries, 1);
	ck_assert_uint_eq(fake_clock_slept_ms(), 1000);
	kc_http_resp_free(&resp);

	fake_clock_install(0);
	ck_assert_int_eq(get(t, "/", &resp, &st), 0);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_uint_eq(fake_clock_slept_ms(), 2000);
	kc_http_resp_free(&resp);

	/* Not idempotent: the 429 comes back with its Retry-After. */
	ck_assert_msg(T->request(t, &(struct kc_http_req){
		.method = "POST", .path = "/", .body = "", .body_len = 0,
	}, &resp, &st) == 0, "%s", st.message);
	ck_assert_int_eq(resp.status, 429);
	ck_assert_uint_eq(resp.retry_after_ms, 5000);
	kc_http_resp_free(&resp);
	T->close(t);
	ts_stop(s);
}
END_TEST

START_TEST(test_rate_limit)
{
	struct ts_server *s = start("request\nrepeat forever\nbody ok\n");
	struct kc_rest_config rc;
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	void *t;

	fake_clock_install(5000);
	rc_for(s, &rc);
	t = open_with(&rc, &(struct kc_transport_opts){ .qps = 10, .burst = 2 });
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(get(t, "/", &resp, &st), 0);
		kc_http_resp_free(&resp);
	}
	/* Two from the bucket, then one every 100 ms. */
	ck_assert_uint_eq(fake_clock_slept_ms(), 300);

	/* Time passing refills the bucket up to the burst. */
	fake_clock_advance(10000);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(get(t, "/", &resp, &st), 0);
		kc_http_resp_free(&resp);
	}
	ck_assert_uint_eq(fake_clock_slept_ms(), 400);
	T->close(t);

	/* qps <= 0: no limit. */
	fake_clock_install(0);
	t = open_with(&rc, &(struct kc_transport_opts){ .qps = 0, .burst = 1 });
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(get(t, "/", &resp, &st), 0);
		kc_http_resp_free(&resp);
	}
	ck_assert_uint_eq(fake_clock_slept_ms(), 0);
	T->close(t);
	ts_stop(s);
}
END_TEST

START_TEST(test_request_timeout)
{
	struct ts_server *s = start("request\nhang\n");
	struct kc_rest_config rc;
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	uint64_t t0;
	void *t;

	rc_for(s, &rc);
	t = open_with(&rc, &(struct kc_transport_opts){ .timeout_ms = 300, .max_retries = 2 });
	t0 = real_ms();
	ck_assert_int_eq(get(t, "/slow", &resp, &st), KC_ETIMEOUT);
	ck_assert_uint_lt(real_ms() - t0, 2000);
	ck_assert_uint_eq(resp.retries, 0);	/* timeouts are not retried */
	ck_assert_str_ne(st.message, "");
	T->close(t);
	ts_stop(s);
}
END_TEST

/* A loopback port with nothing listening. */
static int
dead_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	ck_assert_int_ge(fd, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

START_TEST(test_connection_refused)
{
	struct kc_rest_config rc = { 0 };
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	char url[64];
	void *t;

	snprintf(url, sizeof(url), "https://127.0.0.1:%d", dead_port());
	rc.server = url;
	t = open_with(&rc, &(struct kc_transport_opts){ 0 });
	ck_assert_int_eq(get(t, "/", &resp, &st), KC_ETRANSPORT);
	ck_assert_str_ne(st.message, "");
	ck_assert_int_eq(st.http_code, 0);
	T->close(t);

	/* Retried when idempotent: refused connections may pass. */
	fake_clock_install(0);
	t = open_with(&rc, &(struct kc_transport_opts){ .max_retries = 2 });
	ck_assert_int_eq(get(t, "/", &resp, &st), KC_ETRANSPORT);
	ck_assert_uint_eq(resp.retries, 2);
	ck_assert_uint_ge(fake_clock_slept_ms(), 100 + 200);
	T->close(t);
}
END_TEST

struct chunks {
	struct kc_buf	buf;
	unsigned	calls;
	int		stop_with;	/* returned on the first call when non-zero */
	atomic_bool	got;		/* a chunk was appended (other threads read it) */
};

static int
on_chunk(void *arg, const char *data, size_t len)
{
	struct chunks *c = arg;
	int r;

	c->calls++;
	if (c->stop_with != 0)
		return c->stop_with;
	if ((r = kc_buf_append(&c->buf, data, len)) == 0)
		atomic_store(&c->got, true);
	return r;
}

START_TEST(test_stream_chunks)
{
	struct ts_server *s = start(
	    "request GET /api/v1/pods?watch=1\n"
	    "chunk {\"type\":\"ADDED\"}\\n\n"
	    "delay 50\n"
	    "chunk {\"type\":\"MODIFIED\"}\\n\n"
	    "delay 50\n"
	    "chunk {\"type\":\"DELETED\"}\\n\n"
	    "request GET /again\n"
	    "body done\n");
	void *t = open_for(s);
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	struct chunks c = { 0 };

	kc_buf_init(&c.buf, 1 << 20);
	ck_assert_int_eq(T->stream(t, &(struct kc_http_req){
		.method = "GET", .path = "/api/v1/pods?watch=1",
	}, &resp, on_chunk, &c, &st), 0);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(resp.content_type, "application/json");
	ck_assert_uint_eq(resp.body.len, 0);
	ck_assert_str_eq(kc_buf_str(&c.buf),
	    "{\"type\":\"ADDED\"}\n{\"type\":\"MODIFIED\"}\n{\"type\":\"DELETED\"}\n");
	ck_assert_uint_ge(c.calls, 3);
	kc_http_resp_free(&resp);
	kc_buf_free(&c.buf);

	/* The connection is still good for a request after the stream. */
	ck_assert_int_eq(get(t, "/again", &resp, &st), 0);
	ck_assert_str_eq(kc_buf_str(&resp.body), "done");
	kc_http_resp_free(&resp);
	ck_assert_uint_eq(ts_nconnections(s), 1);
	T->close(t);
	ts_stop(s);
}
END_TEST

START_TEST(test_stream_cut_short)
{
	struct ts_server *s = start(
	    "request\n"
	    "chunk {\"type\":\"ADDED\"}\\n\n"
	    "delay 20\n"
	    "close\n");
	void *t = open_for(s);
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	struct chunks c = { 0 };

	kc_buf_init(&c.buf, 1 << 20);
	ck_assert_int_eq(T->stream(t, &(struct kc_http_req){
		.method = "GET", .path = "/watch",
	}, &resp, on_chunk, &c, &st), KC_ETRANSPORT);
	ck_assert_str_eq(kc_buf_str(&c.buf), "{\"type\":\"ADDED\"}\n");
	ck_assert_str_ne(st.message, "");
	kc_buf_free(&c.buf);
	T->close(t);
	ts_stop(s);
}
END_TEST

START_TEST(test_stream_error_status)
{
	struct ts_server *s = start(
	    "request\n"
	    "status 410\n"
	    "body {\"kind\":\"Status\",\"reason\":\"Expired\",\"code\":410}\n"
	    "request\n"
	    "chunk a\n"
	    "chunk b\n");
	void *t = open_for(s);
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	struct chunks c = { 0 };

	kc_buf_init(&c.buf, 1 << 20);
	ck_assert_int_eq(T->stream(t, &(struct kc_http_req){
		.method = "GET", .path = "/watch",
	}, &resp, on_chunk, &c, &st), 0);
	ck_assert_int_eq(resp.status, 410);
	ck_assert_str_eq(kc_buf_str(&resp.body),
	    "{\"kind\":\"Status\",\"reason\":\"Expired\",\"code\":410}");
	ck_assert_uint_eq(c.calls, 0);
	kc_http_resp_free(&resp);

	/* A callback's error stops the stream and is returned. */
	c.stop_with = -EPIPE;
	ck_assert_int_eq(T->stream(t, &(struct kc_http_req){
		.method = "GET", .path = "/watch",
	}, &resp, on_chunk, &c, &st), -EPIPE);
	ck_assert_uint_eq(c.calls, 1);
	kc_buf_free(&c.buf);
	T->close(t);
	ts_stop(s);
}
END_TEST

/*
 * max_response caps what is buffered, never a 2xx stream, which goes to
 * the callback: a watch may outlive any cap. An error answer to a stream
 * is buffered, so it is capped.
 */
START_TEST(test_stream_not_capped)
{
	struct ts_server *s;
	struct kc_rest_config rc;
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	struct chunks c = { 0 };
	struct kc_buf script;
	void *t;

	kc_buf_init(&script, 1 << 20);
	ck_assert_int_eq(kc_buf_puts(&script, "request\nbody "), 0);
	for (int i = 0; i < 3000; i++)
		ck_assert_int_eq(kc_buf_putc(&script, 'x'), 0);
	ck_assert_int_eq(kc_buf_puts(&script, "\nrequest\nstatus 500\nbody "), 0);
	for (int i = 0; i < 3000; i++)
		ck_assert_int_eq(kc_buf_putc(&script, 'y'), 0);
	ck_assert_int_eq(kc_buf_putc(&script, '\n'), 0);
	s = start(kc_buf_str(&script));
	kc_buf_free(&script);

	rc_for(s, &rc);
	t = open_with(&rc, &(struct kc_transport_opts){ .max_response = 1000 });
	kc_buf_init(&c.buf, 1 << 20);
	ck_assert_msg(T->stream(t, &(struct kc_http_req){
		.method = "GET", .path = "/log",
	}, &resp, on_chunk, &c, &st) == 0, "%s", st.message);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_uint_eq(c.buf.len, 3000);
	ck_assert_uint_eq(resp.body.len, 0);
	kc_http_resp_free(&resp);

	ck_assert_int_eq(T->stream(t, &(struct kc_http_req){
		.method = "GET", .path = "/log",
	}, &resp, on_chunk, &c, &st), -E2BIG);
	ck_assert_ptr_null(resp.body.data);
	ck_assert_uint_eq(c.buf.len, 3000);
	kc_buf_free(&c.buf);
	T->close(t);
	ts_stop(s);
}
END_TEST

struct canceller {
	void			*t;
	unsigned		 after_ms;
	const atomic_bool	*first;		/* non-NULL: waits for it first */
	struct ts_server	*server;	/* non-NULL: waits for it to have */
	size_t			 nreq;		/* received nreq requests first */
	_Atomic uint64_t	 at_ms;		/* when it cancelled */
};

/*
 * Cancels 'after_ms' after 'first' is set or the server has received
 * 'nreq' requests (10 s at most), or after it started: a fixed delay from
 * the start alone is not enough on a loaded machine for a chunk to have
 * arrived, or for the request to have reached the server.
 */
static void *
cancel_later(void *arg)
{
	struct canceller *c = arg;
	struct timespec ts = { 0, (long)c->after_ms * 1000000 }, tick = { 0, 1000000 };

	for (int i = 0; c->first != NULL && !atomic_load(c->first) && i < 10000; i++)
		nanosleep(&tick, NULL);
	if (c->server != NULL)
		(void)ts_wait_requests(c->server, c->nreq, 10000);
	nanosleep(&ts, NULL);
	atomic_store(&c->at_ms, real_ms());
	T->cancel(c->t);
	return NULL;
}

START_TEST(test_stream_cancel)
{
	struct ts_server *s = start(
	    "request GET /watch\n"
	    "chunk {\"type\":\"ADDED\"}\\n\n"
	    "hang\n"
	    "request GET /hang\n"
	    "hang\n"
	    "request GET /after\n"
	    "body after\n");
	void *t = open_for(s);
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	struct chunks c = { 0 };
	struct canceller cc = { .t = t, .after_ms = 200, .first = &c.got };
	pthread_t th;

	kc_buf_init(&c.buf, 1 << 20);
	ck_assert_int_eq(pthread_create(&th, NULL, cancel_later, &cc), 0);
	ck_assert_int_eq(T->stream(t, &(struct kc_http_req){
		.method = "GET", .path = "/watch",
	}, &resp, on_chunk, &c, &st), -ECANCELED);
	ck_assert_uint_lt(real_ms() - atomic_load(&cc.at_ms), 1000);
	pthread_join(th, NULL);
	ck_assert_str_eq(kc_buf_str(&c.buf), "{\"type\":\"ADDED\"}\n");
	kc_buf_free(&c.buf);

	/* Still cancelled: nothing starts. */
	ck_assert_int_eq(get(t, "/after", &resp, &st), -ECANCELED);

	/* A hanging plain request is cancelled as promptly. */
	T->reset_cancel(t);
	cc.first = NULL;
	cc.server = s;
	cc.nreq = 2;	/* /watch, then /hang */
	ck_assert_int_eq(pthread_create(&th, NULL, cancel_later, &cc), 0);
	ck_assert_int_eq(get(t, "/hang", &resp, &st), -ECANCELED);
	ck_assert_uint_lt(real_ms() - atomic_load(&cc.at_ms), 1000);
	pthread_join(th, NULL);

	T->reset_cancel(t);
	ck_assert_int_eq(get(t, "/after", &resp, &st), 0);
	ck_assert_str_eq(kc_buf_str(&resp.body), "after");
	kc_http_resp_free(&resp);
	T->close(t);
	ts_stop(s);
}
END_TEST

START_TEST(test_keep_alive)
{
	struct ts_server *s = start("request\nrepeat 3\nbody ok\n");
	void *t = open_for(s);
	struct kc_http_resp resp;
	struct kc_status st = { 0 };

	static const char *const paths[] = {
		"/",
		"/api/v1/pods?continue=tok%2F2%2B%3D&limit=2",
		"/apis/trainyard.dev/v1beta1/runs?watch=true&resourceVersion=7",
	};

	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(get(t, paths[i], &resp, &st), 0);
		ck_assert_int_eq(resp.status, 200);
		kc_http_resp_free(&resp);
	}
	ck_assert_uint_eq(ts_nrequests(s), 3);
	ck_assert_uint_eq(ts_nconnections(s), 1);
	for (size_t i = 0; i < 3; i++)
		ck_assert_str_eq(ts_request(s, i)->path, paths[i]);
	T->close(t);
	ts_stop(s);
}
END_TEST

START_TEST(test_http2)
{
	struct ts_server *s = start_ex(
	    "request GET /a\nbody first\n"
	    "request POST /b\nstatus 201\necho\n"
	    "request GET /watch\n"
	    "chunk one\\n\n"
	    "delay 20\n"
	    "chunk two\\n\n",
	    false, true);
	void *t = open_for(s);
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	struct chunks c = { 0 };

	ck_assert_int_eq(get(t, "/a", &resp, &st), 0);
	ck_assert_str_eq(kc_buf_str(&resp.body), "first");
	kc_http_resp_free(&resp);
	ck_assert_int_eq(T->request(t, &(struct kc_http_req){
		.method = "POST", .path = "/b", .body = "{\"x\":1}", .body_len = 7,
		.content_type = "application/json",
	}, &resp, &st), 0);
	ck_assert_int_eq(resp.status, 201);
	ck_assert_str_eq(kc_buf_str(&resp.body), "{\"x\":1}");
	kc_http_resp_free(&resp);

	kc_buf_init(&c.buf, 1 << 20);
	ck_assert_int_eq(T->stream(t, &(struct kc_http_req){
		.method = "GET", .path = "/watch",
	}, &resp, on_chunk, &c, &st), 0);
	ck_assert_str_eq(kc_buf_str(&c.buf), "one\ntwo\n");
	kc_buf_free(&c.buf);

	ck_assert(ts_request(s, 0)->http2);
	ck_assert_str_eq(ts_request(s, 1)->body, "{\"x\":1}");
	ck_assert_uint_eq(ts_nconnections(s), 1);
	T->close(t);
	ts_stop(s);
}
END_TEST

START_TEST(test_script_mismatch)
{
	struct ts_server *s = start("request GET /expected\nbody ok\n");
	void *t = open_for(s);
	struct kc_http_resp resp;
	struct kc_status st = { 0 };

	ck_assert_int_eq(get(t, "/other", &resp, &st), 0);
	ck_assert_int_eq(resp.status, 500);
	ck_assert_ptr_nonnull(strstr(kc_buf_str(&resp.body), "script mismatch"));
	kc_http_resp_free(&resp);
	ck_assert_int_eq(get(t, "/expected", &resp, &st), 0);
	ck_assert_int_eq(resp.status, 500);
	kc_http_resp_free(&resp);
	T->close(t);
	ts_stop(s);

	s = start("request\nbody ok\n");
	t = open_for(s);
	ck_assert_int_eq(get(t, "/1", &resp, &st), 0);
	kc_http_resp_free(&resp);
	ck_assert_int_eq(get(t, "/2", &resp, &st), 0);
	ck_assert_int_eq(resp.status, 500);
	ck_assert_ptr_nonnull(strstr(kc_buf_str(&resp.body), "script exhausted"));
	kc_http_resp_free(&resp);
	T->close(t);
	ts_stop(s);

	/* Bad scripts are refused at start. */
	ck_assert_int_eq(ts_start(&(struct ts_opts){ .script_text = "status 200\n" }, &s),
	    -EINVAL);
	ck_assert_int_eq(ts_start(&(struct ts_opts){ .script_text = "request\nfrob\n" },
	    &s), -EINVAL);
	ck_assert_int_eq(ts_start(&(struct ts_opts){
		.script_text = "request\nbody x\nchunk y\n" }, &s), -EINVAL);
}
END_TEST

START_TEST(test_script_file)
{
	struct ts_server *s = NULL;
	void *t;
	struct kc_http_resp resp;
	struct kc_status st = { 0 };

	ck_assert_int_eq(ts_start(&(struct ts_opts){
		.script = tu_fixture_path("server/list-then-watch.script"),
	}, &s), 0);
	t = open_for(s);
	ck_assert_int_eq(get(t, "/api/v1/namespaces/default/pods", &resp, &st), 0);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_ptr_nonnull(strstr(kc_buf_str(&resp.body), "\"PodList\""));
	kc_http_resp_free(&resp);
	T->close(t);
	ts_stop(s);
}
END_TEST

START_TEST(test_bad_input)
{
	struct kc_rest_config rc = { 0 };
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	void *t = NULL;

	ck_assert_int_eq(T->open(&(struct kc_transport_opts){ 0 }, &t, &st), -EINVAL);
	rc.server = "ftp://127.0.0.1:1";
	ck_assert_int_eq(T->open(&(struct kc_transport_opts){ .rc = &rc }, &t, &st),
	    KC_ECONFIG);
	rc.server = "not a url";
	ck_assert_int_eq(T->open(&(struct kc_transport_opts){ .rc = &rc }, &t, &st),
	    KC_ECONFIG);
	rc.server = "";
	ck_assert_int_eq(T->open(&(struct kc_transport_opts){ .rc = &rc }, &t, &st),
	    KC_ECONFIG);
	rc.server = "https://127.0.0.1:1";
	ck_assert_int_eq(T->open(&(struct kc_transport_opts){
		.rc = &rc, .user_agent = "a\r\nX-Evil: 1" }, &t, &st), -EINVAL);
	ck_assert_ptr_null(t);

	/* Header injection through the config fails the request, not the open. */
	rc.impersonate_user = "jane\r\nX-Evil: 1";
	t = open_with(&rc, &(struct kc_transport_opts){ 0 });
	ck_assert_int_eq(get(t, "/", &resp, &st), KC_ECONFIG);
	ck_assert_int_eq(get(t, "relative", &resp, &st), -EINVAL);
	ck_assert_int_eq(get(t, "/with space", &resp, &st), -EINVAL);
	ck_assert_int_eq(T->request(t, &(struct kc_http_req){ .path = "/" }, &resp, &st),
	    -EINVAL);
	ck_assert_int_eq(T->stream(t, &(struct kc_http_req){
		.method = "GET", .path = "/" }, &resp, NULL, NULL, &st), -EINVAL);
	T->close(t);
	ck_assert_ptr_null(T->close(NULL));
}
END_TEST

START_TEST(test_open_alloc_failures)
{
	static char *groups[] = { "g1", NULL };
	struct kc_rest_config rc = {
		.server = "https://127.0.0.1:6443",
		.tls_server_name = "localhost",
		.token = "tok",
		.impersonate_user = "u",
		.impersonate_groups = groups,
	};
	struct kc_status st;
	int r;

	for (size_t budget = 0;; budget++) {
		void *t = NULL;

		fail_alloc_after(budget);
		r = T->open(&(struct kc_transport_opts){ .rc = &rc }, &t, &st);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			T->close(t);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(t);
	}
}
END_TEST

START_TEST(test_request_alloc_failures)
{
	static char *groups[] = { "g1", "g2", NULL };
	struct ts_server *s = start("request\nrepeat forever\nbody {\"kind\":\"Pod\"}\n");
	struct kc_rest_config rc;
	struct kc_http_resp resp;
	struct kc_status st;
	void *t;
	int r;

	rc_for(s, &rc);
	rc.token = "tok";
	rc.impersonate_user = "u";
	rc.impersonate_groups = groups;
	t = open_with(&rc, &(struct kc_transport_opts){ 0 });
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = T->request(t, &(struct kc_http_req){
			.method = "POST", .path = "/api/v1/pods", .body = "{}", .body_len = 2,
			.content_type = "application/json",
		}, &resp, &st);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(resp.body.data);
	}
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(kc_buf_str(&resp.body), "{\"kind\":\"Pod\"}");
	kc_http_resp_free(&resp);
	T->close(t);
	ts_stop(s);
}
END_TEST

/* Steps a started call until it ends (a real deadline: 10 s). */
static int
step_until_done(void *t, unsigned *steps, struct kc_status *st)
{
	uint64_t deadline = real_ms() + 10000;
	int r;

	*steps = 0;
	while ((r = kc_transport_curl_step(t, st)) == 1) {
		(*steps)++;
		ck_assert_uint_lt(real_ms(), deadline);
	}
	return r;
}

START_TEST(test_call_without_waiting)
{
	struct ts_server *s = start(
	    "request POST /convert?timeout=30s\n"
	    "status 200\n"
	    "echo\n"
	    "request POST /convert\n"
	    "delay 1000\n"
	    "status 200\n"
	    "body late\n");
	struct kc_rest_config rc;
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	static const char body[] = "{\"kind\":\"ConversionReview\"}";
	struct kc_http_req req = {
		.method = "POST", .path = "/convert?timeout=30s", .body = body,
		.body_len = sizeof(body) - 1, .content_type = "application/json",
	};
	char server[64];
	uint64_t t0;
	unsigned steps;
	void *t;

	/* The certificate names 127.0.0.1 and localhost: reach it as "localhost". */
	rc_for(s, &rc);
	(void)snprintf(server, sizeof(server), "https://127.0.0.1:%d", ts_port(s));
	rc.server = server;
	rc.tls_server_name = "localhost";
	t = open_with(&rc, &(struct kc_transport_opts){ .http1 = true, .timeout_ms = 30000 });
	ck_assert_int_eq(kc_transport_curl_start(t, &req, &resp, &st), 0);
	ck_assert_int_eq(kc_transport_curl_start(t, &req, &resp, &st), -EBUSY);
	ck_assert_int_eq(step_until_done(t, &steps, &st), 0);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(kc_buf_str(&resp.body), body);
	kc_http_resp_free(&resp);
	ck_assert_str_eq(ts_request(s, 0)->path, "/convert?timeout=30s");
	ck_assert_str_eq(ts_request(s, 0)->body, body);
	ck_assert(!ts_request(s, 0)->http2);
	ck_assert_int_eq(kc_transport_curl_step(t, &st), -EINVAL);

	/*
	 * A slow answer: every step returns at once, and many are needed.
	 * The bound is well under the server's delay, not a tight one: at
	 * nice 19 on a busy machine, a start and a step took 249 ms.
	 */
	req.path = "/convert";
	t0 = real_ms();
	ck_assert_int_eq(kc_transport_curl_start(t, &req, &resp, &st), 0);
	ck_assert_int_eq(kc_transport_curl_step(t, &st), 1);
	ck_assert_uint_lt(real_ms() - t0, 700);
	ck_assert_int_eq(step_until_done(t, &steps, &st), 0);
	ck_assert_uint_gt(steps, 1);
	ck_assert_str_eq(kc_buf_str(&resp.body), "late");
	kc_http_resp_free(&resp);

	/* A call abandoned by close(): nothing leaks. */
	ck_assert_int_eq(kc_transport_curl_start(t, &req, &resp, &st), 0);
	T->close(t);
	kc_http_resp_free(&resp);
	ts_stop(s);
}
END_TEST

START_TEST(test_call_errors)
{
	struct ts_server *s = start("request POST /convert\nstatus 200\nbody {}\n");
	struct kc_rest_config rc;
	struct kc_http_resp resp;
	struct kc_status st = { 0 };
	struct kc_http_req req = { .method = "POST", .path = "/convert", .body = "{}",
	    .body_len = 2 };
	char server[64];
	unsigned steps;
	void *t;

	/* Verified against the CA under another name: a TLS error. */
	rc_for(s, &rc);
	rc.tls_server_name = "svc.ns.svc";
	t = open_with(&rc, &(struct kc_transport_opts){ .http1 = true });
	ck_assert_int_eq(kc_transport_curl_start(t, &req, &resp, &st), 0);
	ck_assert_int_eq(step_until_done(t, &steps, &st), KC_ETLS);
	ck_assert_ptr_null(resp.body.data);
	T->close(t);

	/* Refused. */
	(void)snprintf(server, sizeof(server), "https://127.0.0.1:%d", dead_port());
	rc.server = server;
	rc.tls_server_name = NULL;
	t = open_with(&rc, &(struct kc_transport_opts){ .http1 = true });
	ck_assert_int_eq(kc_transport_curl_start(t, &req, &resp, &st), 0);
	ck_assert_int_eq(step_until_done(t, &steps, &st), KC_ETRANSPORT);
	ck_assert_str_ne(st.message, "");
	T->close(t);

	/* A bad request never starts. */
	req.path = "no-slash";
	t = open_with(&rc, &(struct kc_transport_opts){ .http1 = true });
	ck_assert_int_eq(kc_transport_curl_start(t, &req, &resp, &st), -EINVAL);
	T->close(t);
	ts_stop(s);
}
END_TEST

Suite *
transport_suite(void)
{
	Suite *s = suite_create("transport");
	TCase *tc = tcase_create("transport");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_get_json);
	tcase_add_test(tc, test_post_body_and_headers);
	tcase_add_test(tc, test_methods);
	tcase_add_test(tc, test_tls_verification);
	tcase_add_test(tc, test_bad_certificates);
	tcase_add_test(tc, test_client_certificates);
	tcase_add_test(tc, test_token_file_rotation);
	tcase_add_test(tc, test_gzip_response);
	tcase_add_test(tc, test_response_size_cap);
	tcase_add_test(tc, test_retry_5xx_idempotent_only);
	tcase_add_test(tc, test_retries_exhausted);
	tcase_add_test(tc, test_retry_after);
	tcase_add_test(tc, test_rate_limit);
	tcase_add_test(tc, test_request_timeout);
	tcase_add_test(tc, test_connection_refused);
	tcase_add_test(tc, test_stream_chunks);
	tcase_add_test(tc, test_stream_cut_short);
	tcase_add_test(tc, test_stream_error_status);
	tcase_add_test(tc, test_stream_not_capped);
	tcase_add_test(tc, test_stream_cancel);
	tcase_add_test(tc, test_keep_alive);
	tcase_add_test(tc, test_http2);
	tcase_add_test(tc, test_script_mismatch);
	tcase_add_test(tc, test_script_file);
	tcase_add_test(tc, test_bad_input);
	tcase_add_test(tc, test_open_alloc_failures);
	tcase_add_test(tc, test_request_alloc_failures);
	tcase_add_test(tc, test_call_without_waiting);
	tcase_add_test(tc, test_call_errors);
	suite_add_tcase(s, tc);
	return s;
}

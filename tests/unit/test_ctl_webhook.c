/*
 * test_ctl_webhook.c: controller/webhook.c, the conversion webhook's HTTPS
 * server, on 127.0.0.1 with a kernel-picked port.
 *
 * The client is libkc's libcurl transport (kc_transport_curl) verifying
 * the server against a test CA under the Service's DNS name, as
 * kube-apiserver does; raw sockets stand in for clients that hold
 * connections open. Certificates come from lib/cert.c and are written to
 * a temporary --webhook-cert-dir.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/cert.h>
#include <kc/json.h>
#include <kc/kubeconfig.h>
#include <kc/str.h>
#include <kc/transport.h>

#include "../../controller/admission.h"
#include "../../controller/config.h"
#include "../../controller/convert.h"
#include "../../controller/metrics.h"
#include "../../controller/webhook.h"
#include "../fakes/fake_transport.h"
#include "testutil.h"

#define SVC	"trainyard-webhook.trainyard-system.svc"

static struct kc_cert_pair *
make_ca(const char *cn)
{
	struct kc_cert_pair *ca = NULL;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_cert_create(&(struct kc_cert_opts){ .cn = cn, .is_ca = true },
	    NULL, &ca, &st) == 0, "%s", st.message);
	return ca;
}

static struct kc_cert_pair *
make_leaf(const struct kc_cert_pair *ca, unsigned days)
{
	struct kc_cert_pair *leaf = NULL;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_cert_create(&(struct kc_cert_opts){
		.cn = SVC, .server = true, .days = days,
		.dns = (const char *const []){ SVC, SVC ".cluster.local", NULL },
		.ips = (const char *const []){ "127.0.0.1", NULL },
	}, ca, &leaf, &st) == 0, "%s", st.message);
	return leaf;
}

static void
write_pair(const char *dir, const struct kc_cert_pair *p)
{
	char c[512], k[512];
	struct kc_status st = { 0 };

	(void)snprintf(c, sizeof(c), "%s/tls.crt", dir);
	(void)snprintf(k, sizeof(k), "%s/tls.key", dir);
	ck_assert_msg(kc_cert_pair_write(p, c, k, &st) == 0, "%s", st.message);
}

/* A client: one transport instance, so its connection is kept alive. */
struct client {
	void			*h;
	char			 server[64];
	struct kc_rest_config	 rc;
};

static void
client_open(struct client *cl, int port, const struct kc_cert_pair *ca)
{
	struct kc_status st = { 0 };
	int r;

	memset(cl, 0, sizeof(*cl));
	(void)snprintf(cl->server, sizeof(cl->server), "https://127.0.0.1:%d", port);
	cl->rc.server = cl->server;
	cl->rc.tls_server_name = (char *)(uintptr_t)SVC;
	cl->rc.ca_pem = ca->cert_pem;
	cl->rc.ca_pem_len = ca->cert_pem_len;
	r = kc_transport_curl.open(&(struct kc_transport_opts){ .rc = &cl->rc,
	    .timeout_ms = 10000, .connect_timeout_ms = 5000 }, &cl->h, &st);
	ck_assert_msg(r == 0, "open: %s", st.message);
}

static void
client_close(struct client *cl)
{
	cl->h = kc_transport_curl.close(cl->h);
}

/* One request; the transport's code, the answer in 'resp'. */
static int
client_do(struct client *cl, const char *method, const char *path, const char *body,
    size_t len, struct kc_http_resp *resp, struct kc_status *st)
{
	return kc_transport_curl.request(cl->h, &(struct kc_http_req){
		.method = method, .path = path, .body = body, .body_len = len,
		.content_type = body != NULL ? "application/json" : NULL,
	}, resp, st);
}

static int
get_status(struct client *cl, const char *method, const char *path, char *text,
    size_t size)
{
	struct kc_http_resp resp = { 0 };
	struct kc_status st = { 0 };
	int r;

	r = client_do(cl, method, path, NULL, 0, &resp, &st);
	ck_assert_msg(r == 0, "%s %s: %s", method, path, st.message);
	r = resp.status;
	if (text != NULL)
		(void)kc_strlcpy(text, kc_buf_str(&resp.body), size);
	kc_http_resp_free(&resp);
	return r;
}

/* POSTs the golden v1 review; asserts the golden answer. */
static void
convert_ok(struct client *cl)
{
	_cleanup_(kc_freep) char *req = NULL, *want = NULL;
	_cleanup_(kc_json_putp) struct json_object *wj = NULL, *got = NULL;
	struct kc_http_resp resp = { 0 };
	struct kc_status st = { 0 };
	size_t rlen, wlen;
	int r;

	req = tu_fixture("review/v1-to-beta.request.json", &rlen);
	want = tu_fixture("review/v1-to-beta.response.json", &wlen);
	ck_assert_ptr_nonnull(req);
	ck_assert_ptr_nonnull(want);
	r = client_do(cl, "POST", "/convert?timeout=30s", req, rlen, &resp, &st);
	ck_assert_msg(r == 0, "POST /convert: %s", st.message);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(resp.content_type, "application/json");
	ck_assert_int_eq(kc_json_parse(resp.body.data, resp.body.len, &got, &st), 0);
	ck_assert_int_eq(kc_json_parse(want, wlen, &wj, &st), 0);
	ck_assert(kc_json_equal(got, wj));
	kc_http_resp_free(&resp);
}

struct fixture {
	char			*dir;
	struct kc_cert_pair	*ca;
	struct webhook		*w;
	struct metrics		*m;
	int			 port;
};

static void
fx_start(struct fixture *fx, const struct webhook_opts *extra, bool with_cert)
{
	struct webhook_opts o = extra != NULL ? *extra : (struct webhook_opts){ 0 };
	struct kc_status st = { 0 };
	int r;

	memset(fx, 0, sizeof(*fx));
	fx->dir = tu_tmpdir();
	fx->ca = make_ca("test-ca");
	if (with_cert) {
		struct kc_cert_pair *leaf = make_leaf(fx->ca, 30);

		write_pair(fx->dir, leaf);
		kc_cert_pair_free(leaf);
	}
	ck_assert_int_eq(metrics_new("test", &fx->m), 0);
	o.addr = "127.0.0.1:0";
	o.cert_dir = fx->dir;
	if (o.convert == NULL)
		o.convert = ty_convert;
	o.metrics = fx->m;
	r = webhook_start(&o, &fx->w, &st);
	ck_assert_msg(r == 0, "start: %s", st.message);
	ck_assert_ptr_nonnull(fx->w);
	fx->port = webhook_port(fx->w);
	ck_assert_int_gt(fx->port, 0);
}

static void
fx_stop(struct fixture *fx)
{
	fx->w = webhook_free(fx->w);
	fx->m = metrics_free(fx->m);
	kc_cert_pair_free(fx->ca);
	tu_tmpdir_remove(fx->dir);
}

static void
setup(void)
{
	ck_assert_int_eq(kc_transport_global_init(), 0);
}

static void
teardown(void)
{
	kc_transport_global_cleanup();
}

START_TEST(test_convert_and_routes)
{
	struct fixture fx;
	struct client cl;
	struct kc_buf text;
	char body[256];

	fx_start(&fx, NULL, true);
	client_open(&cl, fx.port, fx.ca);
	ck_assert_int_eq(get_status(&cl, "GET", "/healthz", body, sizeof(body)), 200);
	ck_assert_int_eq(get_status(&cl, "GET", "/readyz", body, sizeof(body)), 200);
	ck_assert_str_eq(body, "ok\n");
	convert_ok(&cl);
	convert_ok(&cl);
	ck_assert_int_eq(get_status(&cl, "GET", "/nothing", NULL, 0), 404);
	ck_assert_int_eq(get_status(&cl, "GET", "/convert", NULL, 0), 405);
	client_close(&cl);
	client_open(&cl, fx.port, fx.ca);
	ck_assert_int_eq(get_status(&cl, "DELETE", "/readyz", NULL, 0), 405);
	client_close(&cl);
	client_open(&cl, fx.port, fx.ca);
	{
		struct kc_http_resp resp = { 0 };
		struct kc_status st = { 0 };

		ck_assert_int_eq(client_do(&cl, "POST", "/convert", "{\"kind\":1}", 10,
		    &resp, &st), 0);
		ck_assert_int_eq(resp.status, 400);
		ck_assert_ptr_nonnull(strstr(kc_buf_str(&resp.body), "not a ConversionReview"));
		kc_http_resp_free(&resp);
	}
	client_close(&cl);

	kc_buf_init(&text, METRICS_TEXT_MAX);
	ck_assert_int_eq(metrics_render(fx.m, &text), 0);
	ck_assert_ptr_nonnull(strstr(kc_buf_str(&text),
	    "trainyard_webhook_conversion_reviews_total{version=\"v1\",result=\"success\"} 2"));
	ck_assert_ptr_nonnull(strstr(kc_buf_str(&text),
	    "trainyard_webhook_conversion_reviews_total{version=\"unknown\",result=\"invalid\"} 1"));
	ck_assert_ptr_nonnull(strstr(kc_buf_str(&text),
	    "trainyard_webhook_conversion_objects_total{desired_version="
	    "\"trainyard.dev/v1beta1\",result=\"success\"} 6"));
	ck_assert_ptr_nonnull(strstr(kc_buf_str(&text),
	    "trainyard_webhook_conversion_duration_seconds_count{result=\"success\"} 2"));
	ck_assert_ptr_null(strstr(kc_buf_str(&text),
	    "trainyard_webhook_certificate_expiry_timestamp_seconds 0\n"));
	kc_buf_free(&text);
	fx_stop(&fx);
}
END_TEST

static struct json_object *
adm_project(void *arg, const char *ns)
{
	struct kc_status st = { 0 };
	struct json_object *o = NULL;
	static const char text[] = "{\"apiVersion\":\"trainyard.dev/v1beta1\","
	    "\"kind\":\"Project\",\"metadata\":{\"name\":\"llm\",\"uid\":\"u\"},"
	    "\"spec\":{\"namespaces\":[{\"name\":\"llm\"}]}}";

	(void)arg;
	if (strcmp(ns, "llm") != 0)
		return NULL;
	ck_assert_int_eq(kc_json_parse(text, sizeof(text) - 1, &o, &st), 0);
	return o;
}

static struct json_object *
adm_none(void *arg, const char *name)
{
	(void)arg;
	(void)name;
	return NULL;
}

static struct json_object *
adm_members(void *arg, const char *ns)
{
	(void)arg;
	(void)ns;
	return json_object_new_array();
}

/* A v1 AdmissionReview of a ProjectMember of 'subject' created by bob in llm. */
static void
admission_post(struct client *cl, const char *path, const char *subject, bool *allowed,
    bool *patched)
{
	_cleanup_(kc_json_putp) struct json_object *ans = NULL;
	struct kc_http_resp resp = { 0 };
	struct kc_status st = { 0 };
	char body[1024];
	int n;

	n = snprintf(body, sizeof(body), "{\"apiVersion\":\"admission.k8s.io/v1\","
	    "\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u-1\","
	    "\"kind\":{\"group\":\"trainyard.dev\",\"version\":\"v1beta1\","
	    "\"kind\":\"ProjectMember\"},\"namespace\":\"llm\",\"operation\":\"CREATE\","
	    "\"userInfo\":{\"username\":\"bob\"},\"object\":{\"apiVersion\":"
	    "\"trainyard.dev/v1beta1\",\"kind\":\"ProjectMember\",\"metadata\":"
	    "{\"name\":\"m\",\"namespace\":\"llm\"},\"spec\":{\"subject\":{\"kind\":\"User\","
	    "\"name\":\"%s\"},\"role\":\"viewer\"}}}}", subject);
	ck_assert_int_lt(n, (int)sizeof(body));
	ck_assert_int_eq(client_do(cl, "POST", path, body, (size_t)n, &resp, &st), 0);
	ck_assert_int_eq(resp.status, 200);
	ck_assert_str_eq(resp.content_type, "application/json");
	ck_assert_int_eq(kc_json_parse(resp.body.data, resp.body.len, &ans, &st), 0);
	ck_assert_str_eq(kc_json_str(ans, "response", "uid"), "u-1");
	*allowed = kc_json_bool(ans, false, "response", "allowed");
	*patched = kc_json_str(ans, "response", "patch") != NULL;
	kc_http_resp_free(&resp);
}

START_TEST(test_admission_routes)
{
	struct ty_config cfg;
	const struct admission_ops ops = {
		.project_of = adm_project, .profile = adm_none, .members = adm_members,
		.cfg = &cfg,
	};
	struct fixture fx;
	struct client cl;
	struct kc_buf text;
	bool allowed, patched;

	config_defaults(&cfg);
	fx_start(&fx, &(struct webhook_opts){ .admission = &ops }, true);
	client_open(&cl, fx.port, fx.ca);
	admission_post(&cl, "/mutate", "alice", &allowed, &patched);
	ck_assert(allowed && patched);		/* invited-by: bob */
	admission_post(&cl, "/validate", "alice", &allowed, &patched);
	ck_assert(allowed && !patched);
	admission_post(&cl, "/validate", "system:admin", &allowed, &patched);
	ck_assert(!allowed);
	ck_assert_int_eq(get_status(&cl, "GET", "/mutate", NULL, 0), 405);
	client_close(&cl);
	kc_buf_init(&text, METRICS_TEXT_MAX);
	ck_assert_int_eq(metrics_render(fx.m, &text), 0);
	ck_assert_ptr_nonnull(strstr(kc_buf_str(&text),
	    "trainyard_webhook_admission_reviews_total{webhook=\"mutate\","
	    "kind=\"ProjectMember\",result=\"patched\"} 1"));
	ck_assert_ptr_nonnull(strstr(kc_buf_str(&text),
	    "trainyard_webhook_admission_reviews_total{webhook=\"validate\","
	    "kind=\"ProjectMember\",result=\"denied\"} 1"));
	ck_assert_ptr_nonnull(strstr(kc_buf_str(&text),
	    "trainyard_webhook_admission_duration_seconds_count{webhook=\"validate\"} 2"));
	kc_buf_free(&text);
	fx_stop(&fx);

	/* Without the caches' view, the admission routes are not served. */
	fx_start(&fx, NULL, true);
	client_open(&cl, fx.port, fx.ca);
	ck_assert_int_eq(get_status(&cl, "POST", "/validate", NULL, 0), 404);
	client_close(&cl);
	fx_stop(&fx);
	config_release(&cfg);
}
END_TEST

START_TEST(test_ready_after_cert)
{
	struct fixture fx;
	struct client cl;
	struct kc_http_resp resp = { 0 };
	struct kc_status st = { 0 };
	struct kc_cert_pair *leaf;
	char reason[256];
	int r;

	fx_start(&fx, NULL, false);
	ck_assert(!webhook_ready(fx.w, reason, sizeof(reason)));
	ck_assert_ptr_nonnull(strstr(reason, "no serving certificate"));
	ck_assert_int_eq(webhook_cert_expiry(fx.w), 0);
	client_open(&cl, fx.port, fx.ca);
	r = client_do(&cl, "GET", "/readyz", NULL, 0, &resp, &st);
	ck_assert_int_lt(r, 0);		/* no certificate: no handshake */
	kc_http_resp_free(&resp);
	client_close(&cl);

	leaf = make_leaf(fx.ca, 30);
	write_pair(fx.dir, leaf);
	kc_cert_pair_free(leaf);
	ck_assert_int_eq(webhook_reload(fx.w, &st), 1);
	ck_assert_int_eq(webhook_reload(fx.w, &st), 0);	/* unchanged */
	ck_assert(webhook_ready(fx.w, reason, sizeof(reason)));
	ck_assert_int_gt(webhook_cert_expiry(fx.w), (int64_t)time(NULL) + 29 * 86400);
	client_open(&cl, fx.port, fx.ca);
	ck_assert_int_eq(get_status(&cl, "GET", "/readyz", NULL, 0), 200);
	client_close(&cl);
	fx_stop(&fx);
}
END_TEST

/* A self-test that fails keeps /readyz at 500 even with a certificate. */
static int
broken_convert(const struct json_object *obj, const char *to, struct json_object **ret,
    struct kc_status *st)
{
	(void)obj;
	(void)to;
	(void)ret;
	return kc_status_set(st, KC_EINVALID, "spec: broken on purpose");
}

START_TEST(test_not_ready_when_selftest_fails)
{
	struct fixture fx;
	struct client cl;
	char body[512];

	fx_start(&fx, &(struct webhook_opts){ .convert = broken_convert }, true);
	client_open(&cl, webhook_port(fx.w), fx.ca);
	ck_assert_int_eq(get_status(&cl, "GET", "/readyz", body, sizeof(body)), 500);
	ck_assert_ptr_nonnull(strstr(body, "broken on purpose"));
	client_close(&cl);
	fx_stop(&fx);
}
END_TEST

/*
 * A new certificate from another CA: the kept-alive connection goes on
 * with the old one (a new handshake would fail against the old CA), new
 * connections get the new one.
 */
START_TEST(test_reload_keeps_connections)
{
	struct fixture fx;
	struct client old_cl, new_cl, stale_cl;
	struct kc_http_resp resp = { 0 };
	struct kc_status st = { 0 };
	struct kc_cert_pair *ca2, *leaf;
	int64_t before;

	fx_start(&fx, &(struct webhook_opts){ .reload_ms = 50 }, true);
	client_open(&old_cl, fx.port, fx.ca);
	convert_ok(&old_cl);
	before = webhook_cert_expiry(fx.w);

	ca2 = make_ca("test-ca-2");
	leaf = make_leaf(ca2, 60);
	write_pair(fx.dir, leaf);
	kc_cert_pair_free(leaf);
	/* The timer picks it up. */
	for (int i = 0; i < 200 && webhook_cert_expiry(fx.w) == before; i++) {
		struct timespec ts = { 0, 25 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	ck_assert_int_gt(webhook_cert_expiry(fx.w), before);

	convert_ok(&old_cl);		/* same connection, old certificate */
	convert_ok(&old_cl);
	client_open(&new_cl, fx.port, ca2);
	convert_ok(&new_cl);
	client_open(&stale_cl, fx.port, fx.ca);
	ck_assert_int_lt(client_do(&stale_cl, "GET", "/healthz", NULL, 0, &resp, &st), 0);
	kc_http_resp_free(&resp);

	/* Garbage in the files: the certificate in use stays. */
	{
		char *p = tu_write(fx.dir, "tls.crt", "not a certificate\n");

		ck_assert_ptr_nonnull(p);
		kc_free(p);
		ck_assert_int_lt(webhook_reload(fx.w, &st), 0);
		convert_ok(&new_cl);
	}
	client_close(&old_cl);
	client_close(&new_cl);
	client_close(&stale_cl);
	kc_cert_pair_free(ca2);
	fx_stop(&fx);
}
END_TEST

START_TEST(test_set_cert_from_memory)
{
	struct webhook *w = NULL;
	struct kc_status st = { 0 };
	struct kc_cert_pair *ca = make_ca("mem-ca"), *leaf = make_leaf(ca, 10), *other;
	struct client cl;

	ck_assert_int_eq(webhook_start(&(struct webhook_opts){ .addr = "127.0.0.1:0",
	    .convert = ty_convert }, &w, &st), 0);
	/* A key that is not the certificate's is refused. */
	other = make_leaf(ca, 10);
	ck_assert_int_lt(webhook_set_cert(w, leaf->cert_pem, leaf->cert_pem_len,
	    other->key_pem, other->key_pem_len, &st), 0);
	ck_assert(!webhook_ready(w, (char[64]){ 0 }, 64));
	ck_assert_int_eq(webhook_set_cert(w, leaf->cert_pem, leaf->cert_pem_len,
	    leaf->key_pem, leaf->key_pem_len, &st), 0);
	client_open(&cl, webhook_port(w), ca);
	convert_ok(&cl);
	client_close(&cl);
	kc_cert_pair_free(other);
	kc_cert_pair_free(leaf);
	kc_cert_pair_free(ca);
	webhook_free(w);
}
END_TEST

START_TEST(test_body_cap)
{
	struct fixture fx;
	struct client cl;
	struct kc_http_resp resp = { 0 };
	struct kc_status st = { 0 };
	char *big = malloc(4096);

	ck_assert_ptr_nonnull(big);
	memset(big, ' ', 4096);
	fx_start(&fx, &(struct webhook_opts){ .body_max = 2048 }, true);
	client_open(&cl, fx.port, fx.ca);
	ck_assert_int_eq(client_do(&cl, "POST", "/convert", big, 4096, &resp, &st), 0);
	ck_assert_int_eq(resp.status, 413);
	kc_http_resp_free(&resp);
	client_close(&cl);
	client_open(&cl, fx.port, fx.ca);
	convert_ok(&cl);		/* under the cap */
	client_close(&cl);
	free(big);
	fx_stop(&fx);
}
END_TEST

static int
tcp_connect(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { 3, 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Whether the server closed 'fd' within 'ms'. */
static bool
closed_within(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&p, 1, ms) <= 0)
		return false;
	return read(fd, &c, 1) <= 0;
}

static bool
closed_soon(int fd)
{
	return closed_within(fd, 1000);
}

/* A client that connects and says nothing is dropped after request_s. */
START_TEST(test_idle_timeout)
{
	struct fixture fx;
	int fd;

	fx_start(&fx, &(struct webhook_opts){ .request_s = 1 }, true);
	fd = tcp_connect(fx.port);
	ck_assert(!closed_within(fd, 300));
	ck_assert(closed_within(fd, 4000));
	close(fd);
	fx_stop(&fx);
}
END_TEST

START_TEST(test_connection_cap)
{
	struct fixture fx;
	struct client cl;
	int a, b, c;

	fx_start(&fx, &(struct webhook_opts){ .max_conns = 2 }, true);
	a = tcp_connect(fx.port);
	ck_assert(!closed_soon(a));
	b = tcp_connect(fx.port);
	ck_assert(!closed_soon(b));
	/* Full: a newcomer makes room by closing the one waiting the longest. */
	c = tcp_connect(fx.port);
	ck_assert(closed_soon(a));
	ck_assert(!closed_within(b, 300));
	ck_assert(!closed_within(c, 300));
	close(a);
	/* A client gets through while the two idle ones hold the cap. */
	for (int i = 0; i < 50; i++) {
		struct kc_http_resp resp = { 0 };
		struct kc_status st = { 0 };
		int r;

		client_open(&cl, fx.port, fx.ca);
		r = client_do(&cl, "GET", "/healthz", NULL, 0, &resp, &st);
		kc_http_resp_free(&resp);
		client_close(&cl);
		if (r == 0)
			break;
		ck_assert_int_lt(i, 49);
		poll(NULL, 0, 20);
	}
	ck_assert(closed_soon(b));		/* it made room for that one */
	close(b);
	close(c);
	fx_stop(&fx);
}
END_TEST

START_TEST(test_off_and_bad_address)
{
	struct webhook *w = NULL;
	struct kc_status st = { 0 };

	ck_assert_int_eq(webhook_start(&(struct webhook_opts){ .addr = "0",
	    .convert = ty_convert }, &w, &st), 0);
	ck_assert_ptr_null(w);
	ck_assert_int_eq(webhook_start(&(struct webhook_opts){ .addr = "",
	    .convert = ty_convert }, &w, &st), 0);
	ck_assert_ptr_null(w);
	ck_assert_int_eq(webhook_start(&(struct webhook_opts){ .addr = "nonsense",
	    .convert = ty_convert }, &w, &st), KC_ECONFIG);
	ck_assert_ptr_nonnull(strstr(st.message, "nonsense"));
	ck_assert_ptr_null(w);
}
END_TEST

/* ---- secure /metrics: the webhook's certificate, TokenReview and SAR ---------- */

#define TR_PATH		"/apis/authentication.k8s.io/v1/tokenreviews"
#define SAR_PATH	"/apis/authorization.k8s.io/v1/subjectaccessreviews"

static int
scrape(int port, const struct kc_cert_pair *ca, const char *token, char *body, size_t size)
{
	struct client cl;
	struct kc_http_resp resp = { 0 };
	struct kc_status st = { 0 };
	int r;

	client_open(&cl, port, ca);
	kc_transport_curl.close(cl.h);
	cl.rc.token = (char *)(uintptr_t)token;
	ck_assert_int_eq(kc_transport_curl.open(&(struct kc_transport_opts){ .rc = &cl.rc,
	    .timeout_ms = 10000 }, &cl.h, &st), 0);
	r = kc_transport_curl.request(cl.h, &(struct kc_http_req){ .method = "GET",
	    .path = "/metrics", .accept = "text/plain" }, &resp, &st);
	ck_assert_msg(r == 0, "GET /metrics: %s", st.message);
	r = resp.status;
	if (body != NULL)
		(void)kc_strlcpy(body, kc_buf_str(&resp.body), size);
	kc_http_resp_free(&resp);
	client_close(&cl);
	return r;
}

START_TEST(test_secure_metrics)
{
	struct fixture fx;
	struct fake_transport *ft = ft_new();
	struct kc_rest_config rc = { .server = (char *)(uintptr_t)"https://fake" };
	struct metrics_auth *auth = NULL;
	struct metrics *m = NULL;
	struct kc_status st = { 0 };
	char body[4096];
	int port, hport;

	fx_start(&fx, NULL, true);
	ft_expect(ft, &(struct ft_exchange){ .method = "POST", .path = TR_PATH,
	    .status = 201, .resp_body = "{\"kind\":\"TokenReview\",\"status\":"
	    "{\"authenticated\":true,\"user\":{\"username\":\"system:serviceaccount:"
	    "monitoring:prometheus\",\"uid\":\"u1\",\"groups\":[\"system:serviceaccounts\"]}}}" });
	ft_expect(ft, &(struct ft_exchange){ .method = "POST", .path = SAR_PATH,
	    .status = 201, .resp_body = "{\"kind\":\"SubjectAccessReview\","
	    "\"status\":{\"allowed\":true}}" });
	ft_expect(ft, &(struct ft_exchange){ .method = "POST", .path = TR_PATH,
	    .status = 201, .resp_body = "{\"kind\":\"TokenReview\",\"status\":"
	    "{\"authenticated\":false,\"error\":\"invalid bearer token\"}}" });
	ft_expect(ft, &(struct ft_exchange){ .method = "POST", .path = TR_PATH,
	    .status = 201, .resp_body = "{\"kind\":\"TokenReview\",\"status\":"
	    "{\"authenticated\":true,\"user\":{\"username\":\"bob\"}}}" });
	ft_expect(ft, &(struct ft_exchange){ .method = "POST", .path = SAR_PATH,
	    .status = 201, .resp_body = "{\"kind\":\"SubjectAccessReview\","
	    "\"status\":{\"allowed\":false}}" });
	ck_assert_int_eq(metrics_auth_new(&(struct metrics_auth_opts){ .rc = &rc,
	    .ops = &fake_transport_ops, .ttl_ms = 60000 }, &auth, &st), 0);
	ck_assert_int_eq(metrics_new("test", &m), 0);
	/* Secure metrics and health on one address: refused. */
	ck_assert_int_eq(metrics_start(m, &(struct metrics_opts){
		.metrics_addr = "127.0.0.1:7", .health_addr = "127.0.0.1:7",
		.tls_setup = webhook_tls_setup, .tls_arg = fx.w, .auth = auth,
	}, &st), KC_ECONFIG);
	ck_assert_int_eq(metrics_start(m, &(struct metrics_opts){
		.metrics_addr = "127.0.0.1:0", .health_addr = "127.0.0.1:0",
		.tls_setup = webhook_tls_setup, .tls_arg = fx.w, .auth = auth,
	}, &st), 0);
	port = metrics_port(m, false);
	hport = metrics_port(m, true);

	ck_assert_int_eq(scrape(port, fx.ca, NULL, body, sizeof(body)), 401);
	ck_assert_int_eq(scrape(port, fx.ca, "good", body, sizeof(body)), 200);
	ck_assert_ptr_nonnull(strstr(body, "# TYPE trainyard_reconcile_total counter"));
	/* Cached: no more API requests for it. */
	ck_assert_int_eq(scrape(port, fx.ca, "good", NULL, 0), 200);
	ck_assert_int_eq(scrape(port, fx.ca, "forged", body, sizeof(body)), 401);
	ck_assert_int_eq(scrape(port, fx.ca, "forged", NULL, 0), 401);
	ck_assert_int_eq(scrape(port, fx.ca, "bob", body, sizeof(body)), 403);
	ck_assert_ptr_nonnull(strstr(body, "Forbidden (user=bob"));
	ft_done(ft);
	/* The tokens went to the TokenReviews; the user to the SAR, for /metrics. */
	ck_assert_ptr_nonnull(strstr(ft_request(ft, 0)->body, "\"token\":\"good\""));
	{
		struct json_object *sar = NULL;
		const struct ft_request *rq = ft_request(ft, 1);

		ck_assert_int_eq(kc_json_parse(rq->body, rq->body_len, &sar, &st), 0);
		ck_assert_str_eq(kc_json_str(sar, "spec", "nonResourceAttributes", "path"),
		    "/metrics");
		ck_assert_str_eq(kc_json_str(sar, "spec", "nonResourceAttributes", "verb"),
		    "get");
		ck_assert_str_eq(kc_json_str(sar, "spec", "user"),
		    "system:serviceaccount:monitoring:prometheus");
		ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
		    kc_json_get(sar, "spec", "groups"), 0)), "system:serviceaccounts");
		json_object_put(sar);
	}
	/* Health stays plain HTTP, no token. */
	{
		char server[64];
		struct kc_rest_config prc = { .server = server };
		struct kc_http_resp resp = { 0 };
		void *h = NULL;

		(void)snprintf(server, sizeof(server), "http://127.0.0.1:%d", hport);
		ck_assert_int_eq(kc_transport_curl.open(&(struct kc_transport_opts){
		    .rc = &prc, .timeout_ms = 5000 }, &h, &st), 0);
		ck_assert_int_eq(kc_transport_curl.request(h, &(struct kc_http_req){
		    .method = "GET", .path = "/healthz" }, &resp, &st), 0);
		ck_assert_int_eq(resp.status, 200);
		kc_http_resp_free(&resp);
		kc_transport_curl.close(h);
	}
	m = metrics_free(m);
	auth = metrics_auth_free(auth);
	ft_free(ft);
	fx_stop(&fx);
}
END_TEST

Suite *
ctl_webhook_suite(void)
{
	Suite *s = suite_create("ctl_webhook");
	TCase *tc = tcase_create("webhook");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_convert_and_routes);
	tcase_add_test(tc, test_admission_routes);
	tcase_add_test(tc, test_ready_after_cert);
	tcase_add_test(tc, test_not_ready_when_selftest_fails);
	tcase_add_test(tc, test_reload_keeps_connections);
	tcase_add_test(tc, test_set_cert_from_memory);
	tcase_add_test(tc, test_body_cap);
	tcase_add_test(tc, test_connection_cap);
	tcase_add_test(tc, test_idle_timeout);
	tcase_add_test(tc, test_off_and_bad_address);
	tcase_add_test(tc, test_secure_metrics);
	suite_add_tcase(s, tc);
	return s;
}

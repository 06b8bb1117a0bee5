/*
 * webhook.c: the conversion webhook's HTTPS server.
 *
 * One libwebsockets context and one TLS vhost in a thread of their own,
 * started before leader election, so every replica converts whether it
 * leads or not. Routes are a static table: POST /convert (review.c),
 * POST /mutate and /validate (admission.c, the Projects' admission
 * webhooks, reading the caches through opts->admission; without it they
 * are 404), GET or HEAD /readyz and /healthz; another path is 404, another
 * method 405 with Allow.
 *
 * Certificates. The vhost's SSL_CTX is made without a certificate
 * (LWS_SERVER_OPTION_CREATE_VHOST_SSL_CTX); LWS_CALLBACK_OPENSSL_LOAD_-
 * EXTRA_SERVER_VERIFY_CERTS hands it over, and we set TLS 1.2 as the
 * floor and a certificate callback (SSL_CTX_set_cert_cb) that gives each
 * new handshake the pair current at that moment, under w->mu. So a new
 * pair (webhook_set_cert(), or the files of --webhook-cert-dir changing)
 * serves the next handshake, while established connections keep the one
 * they negotiated: nothing is dropped, nothing is recreated. Until a pair
 * is loaded, handshakes fail. The directory is checked every reload_ms
 * on the server thread (an lws timer): tls.crt and tls.key are read (both
 * small, bounded by WEBHOOK_PEM_MAX) and their SHA-256 compared with the
 * loaded pair's; a pair that does not parse or match is logged once and
 * the old one stays (cert-manager writes the two files one after the
 * other; the next tick sees both).
 *
 * Requests. HTTP/1.1 only (ALPN "http/1.1"; kube-apiserver speaks
 * HTTP/1.1 to webhooks), keep-alive. A body needs a Content-Length of at
 * most body_max (413 otherwise; 411 for chunked bodies); it is read into
 * the connection's kc_buf, answered once complete, the answer written by
 * metrics_http_write() (metrics.c). Headers are bounded (HEADER_MAX).
 * The connection guard (kc_guard_lws_*(), kc/connguard.h) gives the TLS
 * handshake with the request's line and headers request_s, the
 * body and the answer timeout_s each, an idle keep-alive connection
 * keepalive_s, and holds at most max_conns connections, making room for
 * a newcomer by closing the longest idle or the slowest one; the bodies
 * of all connections together are bounded by WEBHOOK_BODIES_MAX (503 for
 * the request that would pass it once no slower body is left to close).
 *
 * /readyz answers 200 once a certificate is loaded and the self-test
 * conversion (review_selftest(), run at start) passed; 500 with the
 * reason otherwise.
 *
 * webhook_free() sets a flag, wakes the loop with lws_cancel_service(),
 * joins the thread, then destroys the context: every callback runs on the
 * server thread.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libwebsockets.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/cert.h>
#include <kc/clock.h>
#include <kc/connguard.h>
#include <kc/log.h>
#include <kc/str.h>

#include "admission.h"
#include "metrics.h"
#include "webhook.h"

#define HEADER_MAX	8192

static const struct kc_log_ctx wlog = { .action = "webhook" };

struct pair {
	X509		*leaf;
	STACK_OF(X509)	*chain;		/* the rest of tls.crt; may be empty */
	EVP_PKEY	*key;
	int64_t		 not_after;
};

struct webhook {
	struct webhook_opts	 o;
	char			*cert_dir;
	char			 addr[256];
	char			 host[256];
	int			 port;

	pthread_mutex_t		 mu;		/* cur, digest, selftest */
	struct pair		 cur;
	unsigned char		 digest[EVP_MAX_MD_SIZE];	/* of the files loaded */
	bool			 have_digest;
	char			 bad_digest[EVP_MAX_MD_SIZE];	/* last refused files */
	bool			 have_bad;
	bool			 selftest_ok;
	char			 selftest_reason[256];

	struct lws_context	*ctx;
	struct lws_vhost	*vh;
	SSL_CTX			*client_ctx;	/* lws wants one; we never dial */
	struct lws_protocols	 protocols[2];
	lws_sorted_usec_list_t	 sul;
	struct kc_guard_lws	*guard;
	pthread_t		 thread;
	bool			 started;
	atomic_bool		 stop;
};

/* Per connection, zeroed by lws; reused across keep-alive requests. */
struct conn {
	struct kc_buf	 body;		/* the request's */
	struct metrics_http_out out;	/* the answer */
	uint64_t	 t0_ms;
	bool		 active;
	bool		 reading;	/* a POST body is coming */
	int		 route;		/* enum route_id of the POST */
	bool		 answered;
};

/* ---- certificates -------------------------------------------------------- */

static void
pair_clear(struct pair *p)
{
	X509_free(p->leaf);
	if (p->chain != NULL)
		sk_X509_pop_free(p->chain, X509_free);
	EVP_PKEY_free(p->key);
	memset(p, 0, sizeof(*p));
}

/* PEM text into a pair; the key must match the first certificate. */
static int
pair_parse(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
    struct pair *ret, struct kc_status *st)
{
	_cleanup_(kc_cert_pair_freep) struct kc_cert_pair *checked = NULL;
	_cleanup_(kc_cert_info_freep) struct kc_cert_info *info = NULL;
	struct pair p = { 0 };
	BIO *bio = NULL;
	X509 *x;
	int r;

	/* libkc's loader checks that both parse and belong together. */
	if ((r = kc_cert_pair_load(cert_pem, cert_len, key_pem, key_len, &checked, st)) < 0)
		return r;
	if ((r = kc_cert_info_read(cert_pem, cert_len, &info, st)) < 0)
		return r;
	if ((bio = BIO_new_mem_buf(cert_pem, (int)cert_len)) == NULL)
		return -ENOMEM;
	p.leaf = PEM_read_bio_X509(bio, NULL, NULL, NULL);
	if ((p.chain = sk_X509_new_null()) == NULL)
		goto nomem;
	while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL)
		if (sk_X509_push(p.chain, x) <= 0) {
			X509_free(x);
			goto nomem;
		}
	BIO_free(bio);
	if ((bio = BIO_new_mem_buf(key_pem, (int)key_len)) == NULL)
		goto nomem;
	p.key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	BIO_free(bio);
	bio = NULL;
	if (p.leaf == NULL || p.key == NULL) {
		pair_clear(&p);
		return kc_status_set(st, KC_EPARSE, "the certificate or key does not parse");
	}
	p.not_after = (int64_t)info->not_after;
	*ret = p;
	return 0;
nomem:
	BIO_free(bio);
	pair_clear(&p);
	return -ENOMEM;
}

static void
set_expiry_metric(struct webhook *w, int64_t not_after)
{
	if (w->o.metrics != NULL)
		metrics_webhook_cert_expiry(w->o.metrics, (double)not_after);
}

int
webhook_set_cert(struct webhook *w, const char *cert_pem, size_t cert_len,
    const char *key_pem, size_t key_len, struct kc_status *st)
{
	struct pair p, old;
	int r;

	if ((r = pair_parse(cert_pem, cert_len, key_pem, key_len, &p, st)) < 0)
		return r;
	pthread_mutex_lock(&w->mu);
	old = w->cur;
	w->cur = p;
	pthread_mutex_unlock(&w->mu);
	pair_clear(&old);
	set_expiry_metric(w, p.not_after);
	return 0;
}

/* Gives a new handshake the current pair. Under w->mu; 0 fails it. */
static int
cert_cb(SSL *ssl, void *arg)
{
	struct webhook *w = arg;
	int ok = 0;

	pthread_mutex_lock(&w->mu);
	if (w->cur.leaf != NULL && SSL_use_certificate(ssl, w->cur.leaf) == 1 &&
	    SSL_use_PrivateKey(ssl, w->cur.key) == 1 &&
	    SSL_set1_chain(ssl, w->cur.chain) == 1)
		ok = 1;
	pthread_mutex_unlock(&w->mu);
	return ok;
}

int
webhook_tls_setup(void *arg, void *ssl_ctx)
{
	if (SSL_CTX_set_min_proto_version(ssl_ctx, TLS1_2_VERSION) != 1)
		return -1;
	SSL_CTX_set_cert_cb(ssl_ctx, cert_cb, arg);
	return 0;
}

static int
file_digest(const char *a, size_t alen, const char *b, size_t blen, unsigned char *md)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	int ok;

	if (c == NULL)
		return -ENOMEM;
	ok = EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1 &&
	    EVP_DigestUpdate(c, a, alen) == 1 && EVP_DigestUpdate(c, "\0", 1) == 1 &&
	    EVP_DigestUpdate(c, b, blen) == 1 && EVP_DigestFinal_ex(c, md, NULL) == 1;
	EVP_MD_CTX_free(c);
	return ok ? 0 : -ENOMEM;
}

int
webhook_reload(struct webhook *w, struct kc_status *st)
{
	_cleanup_(kc_freep) char *cert = NULL;
	char cert_path[PATH_MAX], key_path[PATH_MAX];
	char *key = NULL;
	unsigned char md[EVP_MAX_MD_SIZE];
	size_t clen = 0, klen = 0;
	bool same, refused;
	int r;

	if (w->cert_dir == NULL)
		return 0;
	if ((size_t)snprintf(cert_path, sizeof(cert_path), "%s/tls.crt", w->cert_dir) >=
	    sizeof(cert_path) ||
	    (size_t)snprintf(key_path, sizeof(key_path), "%s/tls.key", w->cert_dir) >=
	    sizeof(key_path))
		return kc_status_set(st, -ENAMETOOLONG, "%s: path too long", w->cert_dir);
	if ((r = kc_read_file(cert_path, WEBHOOK_PEM_MAX, &cert, &clen)) < 0)
		return kc_status_set(st, r, "%s: %s", cert_path, kc_strerror(r));
	if ((r = kc_read_file(key_path, WEBHOOK_PEM_MAX, &key, &klen)) < 0)
		return kc_status_set(st, r, "%s: %s", key_path, kc_strerror(r));
	if ((r = file_digest(cert, clen, key, klen, md)) < 0)
		goto out;
	pthread_mutex_lock(&w->mu);
	same = w->have_digest && memcmp(md, w->digest, 32) == 0;
	refused = w->have_bad && memcmp(md, w->bad_digest, 32) == 0;
	pthread_mutex_unlock(&w->mu);
	if (same) {
		r = 0;
		goto out;
	}
	if ((r = webhook_set_cert(w, cert, clen, key, klen, st)) < 0) {
		if (r != -ENOMEM) {
			pthread_mutex_lock(&w->mu);
			memcpy(w->bad_digest, md, 32);
			w->have_bad = true;
			pthread_mutex_unlock(&w->mu);
			/* Logged once per refused content, not every tick. */
			if (!refused)
				kc_log_warn(&wlog, "%s: %s (the certificate in use stays)",
				    w->cert_dir, st != NULL ? st->message : kc_strerror(r));
		}
		goto out;
	}
	pthread_mutex_lock(&w->mu);
	memcpy(w->digest, md, 32);
	w->have_digest = true;
	pthread_mutex_unlock(&w->mu);
	kc_log_info(&wlog, "%s: serving the certificate of tls.crt", w->cert_dir);
	r = 1;
out:
	if (key != NULL) {
		OPENSSL_cleanse(key, klen);
		kc_free(key);
	}
	return r;
}

static void
reload_tick(lws_sorted_usec_list_t *sul)
{
	struct webhook *w = lws_container_of(sul, struct webhook, sul);
	struct kc_status st = { 0 };

	if (webhook_reload(w, &st) < 0)
		kc_log_debug(&wlog, "reload: %s", st.message);
	lws_sul_schedule(w->ctx, 0, &w->sul, reload_tick,
	    (lws_usec_t)w->o.reload_ms * LWS_US_PER_MS);
}

bool
webhook_ready(struct webhook *w, char *reason, size_t size)
{
	bool ok;

	pthread_mutex_lock(&w->mu);
	if (!w->selftest_ok) {
		(void)snprintf(reason, size, "%s", w->selftest_reason);
		ok = false;
	} else if (w->cur.leaf == NULL) {
		(void)snprintf(reason, size, "no serving certificate loaded yet");
		ok = false;
	} else {
		ok = true;
		if (size > 0)
			reason[0] = '\0';
	}
	pthread_mutex_unlock(&w->mu);
	return ok;
}

int64_t
webhook_cert_expiry(struct webhook *w)
{
	int64_t t;

	pthread_mutex_lock(&w->mu);
	t = w->cur.leaf != NULL ? w->cur.not_after : 0;
	pthread_mutex_unlock(&w->mu);
	return t;
}

/* ---- requests ------------------------------------------------------------- */

enum route_id {
	R_CONVERT,
	R_MUTATE,
	R_VALIDATE,
	R_READYZ,
	R_HEALTHZ,
};

static const struct route {
	const char	*path;
	enum route_id	 id;
	bool		 post;		/* POST; else GET and HEAD */
	const char	*allow;
} routes[] = {
	{ "/convert", R_CONVERT, true, "POST" },
	{ "/mutate", R_MUTATE, true, "POST" },
	{ "/validate", R_VALIDATE, true, "POST" },
	{ "/readyz", R_READYZ, false, "GET, HEAD" },
	{ "/healthz", R_HEALTHZ, false, "GET, HEAD" },
};

static void
reply(struct conn *c, int status, const char *text)
{
	c->out.status = status;
	c->out.ctype = "text/plain; charset=utf-8";
	kc_buf_reset(&c->out.body);
	if (kc_buf_puts(&c->out.body, text) < 0)
		c->out.close_after = true;
	c->answered = true;
}

static void
conn_end(struct conn *c)
{
	kc_buf_free(&c->body);
	kc_buf_free(&c->out.body);
	c->active = false;
}

/*
 * A handler's result 'r' (an HTTP status, its answer in c->out.body, or a
 * negative code: a 500) into the answer; the request body is done with.
 * False for the 500.
 */
static bool
review_answered(struct conn *c, int r)
{
	kc_buf_free(&c->body);
	if (r < 0) {
		kc_log_warn(&wlog, "answering a review: %s", kc_strerror(r));
		reply(c, 500, "cannot answer the review\n");
		c->out.close_after = true;
		return false;
	}
	c->out.status = r;
	c->out.ctype = r == 200 ? "application/json" : "text/plain; charset=utf-8";
	c->answered = true;
	return true;
}

static void
convert(struct webhook *w, struct conn *c)
{
	struct review_info info;
	int r;

	kc_buf_reset(&c->out.body);
	r = review_handle(c->body.data != NULL ? c->body.data : "", c->body.len, w->o.convert,
	    &c->out.body, &info);
	if (!review_answered(c, r))
		info.result = "error";
	else if (r != 200)
		kc_log_debug(&wlog, "review refused (%d): %s", r, info.message);
	else if (strcmp(info.result, "failure") == 0)
		kc_log_info(&wlog, "conversion failed: %s", info.message);
	if (w->o.metrics != NULL)
		metrics_webhook_review(w->o.metrics, info.version, info.result, info.to,
		    info.objects, (double)(kc_clock_now_ms() - c->t0_ms) / 1000.0);
}

static void
admit(struct webhook *w, struct conn *c)
{
	enum admission_hook hook = c->route == R_MUTATE ? ADMISSION_MUTATE :
	    ADMISSION_VALIDATE;
	const char *name = hook == ADMISSION_MUTATE ? "mutate" : "validate";
	struct admission_info info = { .version = "unknown", .kind = "", .result = "error" };
	int r;

	kc_buf_reset(&c->out.body);
	r = admission_handle(hook, c->body.data != NULL ? c->body.data : "", c->body.len,
	    w->o.admission, kc_clock_wall(), &c->out.body, &info);
	if (!review_answered(c, r))
		info.result = "error";
	else if (r != 200)
		kc_log_debug(&wlog, "admission review refused (%d)", r);
	else if (strcmp(info.result, "denied") == 0)
		kc_log_info(&wlog, "%s denied %s: %s", name, info.kind, info.message);
	if (w->o.metrics != NULL)
		metrics_webhook_admission(w->o.metrics, name, info.kind, info.result,
		    (double)(kc_clock_now_ms() - c->t0_ms) / 1000.0);
}

/* A complete POST body: to its route's handler. */
static void
answer(struct webhook *w, struct conn *c)
{
	if (c->route == R_CONVERT)
		convert(w, c);
	else
		admit(w, c);
}

static void
begin(struct webhook *w, struct conn *c, struct lws *wsi)
{
	const struct route *rt = NULL;
	char *uri = NULL, cl[32], reason[300], msg[320];
	int method, ulen = 0;
	uint64_t length = 0;

	conn_end(c);
	*c = (struct conn){ .active = true, .t0_ms = kc_clock_now_ms() };
	kc_buf_init(&c->body, w->o.body_max);
	kc_buf_init(&c->out.body, REVIEW_ANSWER_MAX);
	method = lws_http_get_uri_and_method(wsi, &uri, &ulen);
	c->out.head = method == LWSHUMETH_HEAD;
	for (size_t i = 0; uri != NULL && ulen > 0 && i < KC_ARRAY_SIZE(routes); i++)
		if (strlen(routes[i].path) == (size_t)ulen &&
		    memcmp(routes[i].path, uri, (size_t)ulen) == 0)
			rt = &routes[i];
	if (rt != NULL && (rt->id == R_MUTATE || rt->id == R_VALIDATE) &&
	    w->o.admission == NULL)
		rt = NULL;
	if (rt == NULL) {
		reply(c, 404, "404 page not found\n");
		c->out.close_after = method == LWSHUMETH_POST || method == LWSHUMETH_PUT ||
		    method == LWSHUMETH_PATCH;
		return;
	}
	if (rt->post ? method != LWSHUMETH_POST :
	    method != LWSHUMETH_GET && method != LWSHUMETH_HEAD) {
		reply(c, 405, "method not allowed\n");
		c->out.allow = rt->allow;
		c->out.close_after = true;	/* its body, if any, is never read */
		return;
	}
	switch (rt->id) {
	case R_HEALTHZ:
		reply(c, 200, "ok\n");
		return;
	case R_READYZ:
		if (webhook_ready(w, reason, sizeof(reason))) {
			reply(c, 200, "ok\n");
		} else {
			(void)snprintf(msg, sizeof(msg), "not ready: %s\n", reason);
			reply(c, 500, msg);
		}
		return;
	case R_CONVERT:
	case R_MUTATE:
	case R_VALIDATE:
		c->route = (int)rt->id;
		break;
	}
	if (lws_hdr_copy(wsi, cl, sizeof(cl), WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0) {
		if (kc_parse_u64(cl, &length) < 0)
			length = UINT64_MAX;
	} else if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0) {
		reply(c, 411, "a Content-Length is required\n");
		c->out.close_after = true;
		return;
	}
	if (length > w->o.body_max) {
		(void)snprintf(msg, sizeof(msg), "request body larger than %zu bytes\n",
		    w->o.body_max);
		reply(c, 413, msg);
		c->out.close_after = true;
		return;
	}
	if (length == 0) {
		answer(w, c);
		return;
	}
	c->reading = true;
	kc_guard_lws_phase(w->guard, wsi, KC_GUARD_BODY);
	lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, (int)w->o.timeout_s);
}

static int
writable(struct webhook *w, struct lws *wsi, struct conn *c)
{
	int r;

	if (!c->active || !c->answered)
		return 0;
	lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, (int)w->o.timeout_s);
	if ((r = metrics_http_write(wsi, &c->out)) != 0)
		return r < 0 ? -1 : 0;
	lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
	conn_end(c);
	if (c->out.close_after || c->out.head)
		return -1;
	kc_guard_lws_phase(w->guard, wsi, KC_GUARD_REQUEST);
	return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static int
callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
    size_t len)
{
	struct webhook *w = lws_context_user(lws_get_context(wsi));
	struct conn *c = user;

	if (kc_guard_lws_event(w->guard, wsi, (int)reason) < 0)
		return -1;
	switch (reason) {
	case LWS_CALLBACK_OPENSSL_LOAD_EXTRA_SERVER_VERIFY_CERTS:
		/* 'user' is the vhost's SSL_CTX. */
		return webhook_tls_setup(w, user) < 0 ? 1 : 0;
	case LWS_CALLBACK_HTTP:
		if (c == NULL)
			return -1;
		begin(w, c, wsi);
		if (c->answered)
			lws_callback_on_writable(wsi);
		return 0;
	case LWS_CALLBACK_HTTP_BODY:
		if (c == NULL || !c->active || !c->reading)
			return 0;
		if (!kc_guard_lws_body(w->guard, wsi, len)) {
			/* The bodies of every connection together are bounded. */
			c->reading = false;
			reply(c, 503, "too many request bodies at once\n");
			c->out.close_after = true;
			lws_callback_on_writable(wsi);
			return 0;
		}
		if (kc_buf_append(&c->body, in, len) < 0) {
			/* More than Content-Length said: refuse, then close. */
			c->reading = false;
			reply(c, 413, "request body larger than its Content-Length\n");
			c->out.close_after = true;
			lws_callback_on_writable(wsi);
		}
		return 0;
	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
		if (c != NULL && c->active && c->reading) {
			c->reading = false;
			answer(w, c);
			lws_callback_on_writable(wsi);
		}
		return 0;
	case LWS_CALLBACK_HTTP_WRITEABLE:
		return c != NULL ? writable(w, wsi, c) : 0;
	case LWS_CALLBACK_CLOSED_HTTP:
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
		if (c != NULL)
			conn_end(c);
		return 0;
	default:
		break;
	}
	return lws_callback_http_dummy(wsi, reason, user, in, len);
}

/* ---- the server ------------------------------------------------------------ */

static void *
serve(void *arg)
{
	struct webhook *w = arg;

	metrics_lws_run(w->ctx, &w->stop);
	return NULL;
}

static int
open_server(struct webhook *w, struct kc_status *st)
{
	struct lws_context_creation_info info;
	const char *iface = metrics_lws_iface(w->host);
	int r;

	lws_set_log_level(LLL_ERR, metrics_lws_logger);
	w->protocols[0] = (struct lws_protocols){
		.name = "http",
		.callback = callback,
		.per_session_data_size = sizeof(struct conn),
	};
	memset(&info, 0, sizeof(info));
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS |
	    LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = w->protocols;
	info.user = w;
	info.max_http_header_data = HEADER_MAX;
	/* A header table for every connection the guard lets in: none waits for one. */
	info.max_http_header_pool = (unsigned short)KC_MIN(w->o.max_conns, 32768u);
	info.server_string = "trainyard-controller";
	info.timeout_secs = w->o.timeout_s + 5;	/* the guard's deadlines come first */
	if ((w->ctx = lws_create_context(&info)) == NULL)
		return kc_status_set(st, -ENOMEM, "webhook: cannot create the server");
	if ((r = kc_guard_lws_new(w->ctx, &(struct kc_guard_opts){
		.max_conns = w->o.max_conns,
		.request_ms = w->o.request_s * 1000,
		.idle_ms = w->o.keepalive_s * 1000,
		.body_ms = w->o.timeout_s * 1000,
		.answer_ms = w->o.timeout_s * 1000,
		.body_budget = WEBHOOK_BODIES_MAX,
	}, &w->guard)) < 0)
		return kc_status_set(st, r, "webhook: %s", kc_strerror(r));

	/*
	 * A TLS vhost also gets a client SSL_CTX, which libwebsockets would
	 * fill with the system's CA store (hundreds of KB, most of a second
	 * under ASan) although this server never dials out: give it an empty
	 * one of ours.
	 */
	if ((w->client_ctx = SSL_CTX_new(TLS_client_method())) == NULL)
		return kc_status_set(st, -ENOMEM, "webhook: cannot create a TLS context");
	memset(&info, 0, sizeof(info));
	info.provided_client_ssl_ctx = w->client_ctx;
	info.port = w->port;
	info.iface = iface;
	info.protocols = w->protocols;
	info.vhost_name = "webhook";
	info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT |
	    LWS_SERVER_OPTION_CREATE_VHOST_SSL_CTX |
	    LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
	if (iface != NULL && strchr(iface, ':') == NULL)
		info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
	info.alpn = "http/1.1";
	info.keepalive_timeout = (int)w->o.keepalive_s + 5;
	info.timeout_secs = w->o.timeout_s + 5;
	info.timeout_secs_ah_idle = (int)w->o.request_s + 5;
	if ((w->vh = lws_create_vhost(w->ctx, &info)) == NULL)
		return kc_status_set(st, KC_ECONFIG, "%s: cannot listen (address in use or "
		    "not local)", w->addr);
	if ((w->port = lws_get_vhost_listen_port(w->vh)) <= 0)
		return kc_status_set(st, KC_ECONFIG, "%s: the listening port is unknown",
		    w->addr);
	if (w->o.metrics != NULL)
		metrics_add_guard(w->o.metrics, "webhook", w->guard);
	return 0;
}

int
webhook_start(const struct webhook_opts *opts, struct webhook **ret, struct kc_status *st)
{
	_cleanup_(webhook_freep) struct webhook *w = NULL;
	struct kc_status tst = { 0 };
	int r;

	*ret = NULL;
	if ((w = kc_calloc(1, sizeof(*w))) == NULL)
		return -ENOMEM;
	if (pthread_mutex_init(&w->mu, NULL) != 0) {
		kc_free(w);
		w = NULL;
		return -ENOMEM;
	}
	atomic_init(&w->stop, false);
	w->o = *opts;
	w->o.addr = NULL;
	w->o.cert_dir = NULL;
	if (w->o.reload_ms == 0)
		w->o.reload_ms = 2000;
	if (w->o.max_conns == 0)
		w->o.max_conns = WEBHOOK_CONNS_MAX;
	if (w->o.body_max == 0)
		w->o.body_max = REVIEW_BODY_MAX;
	if (w->o.request_s == 0)
		w->o.request_s = METRICS_REQUEST_S;
	if (w->o.timeout_s == 0)
		w->o.timeout_s = 10;
	if (w->o.keepalive_s == 0)
		w->o.keepalive_s = 60;
	if (opts->convert == NULL)
		return kc_status_set(st, -EINVAL, "webhook: no converter");
	if (metrics_parse_addr(opts->addr, w->host, sizeof(w->host), &w->port) < 0)
		return kc_status_set(st, KC_ECONFIG, "%s: not a HOST:PORT bind address",
		    opts->addr);
	if (w->port < 0)
		return 0;		/* off */
	(void)kc_strlcpy(w->addr, opts->addr, sizeof(w->addr));
	if (opts->cert_dir != NULL && *opts->cert_dir != '\0' &&
	    (w->cert_dir = kc_strdup(opts->cert_dir)) == NULL)
		return -ENOMEM;

	if ((r = review_selftest(w->o.convert, &tst)) < 0) {
		kc_log(KC_LOG_ERROR, &wlog, "%s", tst.message);
		(void)kc_strlcpy(w->selftest_reason, tst.message, sizeof(w->selftest_reason));
	} else {
		w->selftest_ok = true;
	}
	if (w->cert_dir != NULL && (r = webhook_reload(w, &tst)) < 0 && r != -ENOENT)
		kc_log_warn(&wlog, "%s", tst.message);
	if ((r = open_server(w, st)) < 0)
		return r;
	if (w->cert_dir != NULL)
		lws_sul_schedule(w->ctx, 0, &w->sul, reload_tick,
		    (lws_usec_t)w->o.reload_ms * LWS_US_PER_MS);
	if ((r = pthread_create(&w->thread, NULL, serve, w)) != 0)
		return kc_status_set(st, -r, "webhook: thread: %s", kc_strerror(-r));
	w->started = true;
	*ret = w;
	w = NULL;
	return 0;
}

struct webhook *
webhook_free(struct webhook *w)
{
	if (w == NULL)
		return NULL;
	if (w->started) {
		atomic_store(&w->stop, true);
		lws_cancel_service(w->ctx);
		(void)pthread_join(w->thread, NULL);
	}
	if (w->guard != NULL && w->o.metrics != NULL)
		metrics_remove_guard(w->o.metrics, w->guard);
	if (w->ctx != NULL) {
		lws_sul_cancel(&w->sul);
		lws_context_destroy(w->ctx);
	}
	w->guard = kc_guard_lws_free(w->guard);
	SSL_CTX_free(w->client_ctx);
	pair_clear(&w->cur);
	kc_free(w->cert_dir);
	(void)pthread_mutex_destroy(&w->mu);
	return kc_free(w);
}

int
webhook_port(const struct webhook *w)
{
	return w->port;
}

/*
 * transport.c: the libcurl implementation of struct kc_transport_ops.
 *
 * One instance owns one curl easy handle and one multi handle, and drives
 * every transfer, plain or streamed, through the multi interface: the
 * easy handle is added, curl_multi_perform() and curl_multi_poll() run
 * until it is done, and it is removed again. Connections stay in the
 * multi handle's pool between transfers, so consecutive requests reuse
 * one keep-alive connection (or one HTTP/2 connection, when the server
 * offers h2 over ALPN). Before each attempt the easy handle is reset
 * (curl_easy_reset() keeps live connections and TLS sessions) and every
 * option set again, so nothing of one request leaks into the next.
 *
 * The poll loop is what makes ->cancel() prompt: cancel sets an atomic
 * flag and calls curl_multi_wakeup(), the poll returns, the loop sees the
 * flag, and the transfer is abandoned (its connection is closed). Waits
 * of our own (rate limit, backoff) sleep through kc_clock_sleep_ms() in
 * slices of at most WAIT_SLICE_MS and check the flag between them.
 *
 * Around each attempt:
 *
 *	request:  [rate limit] -> token -> headers -> transfer -> retry?
 *	            ^                                               |
 *	            +------ backoff or Retry-After (idempotent) ----+
 *
 * A request is retried when it is idempotent, retries are left, and
 * either no answer came for a reason that may pass (connection refused or
 * reset, nothing received) or the answer is 429 or a 5xx other than 501
 * and 505. The wait is the server's Retry-After (seconds or HTTP-date,
 * capped at RETRY_AFTER_MAX_MS) when it sent one, else the exponential
 * backoff, base << attempt capped at backoff_max_ms, with "equal jitter":
 * half of it fixed and half random (kc_random_u64()). TLS failures and
 * timeouts are not retried: the first will not pass, and the second has
 * already waited long enough. Streams are never retried.
 *
 * The rate limiter is a token bucket of 'burst' tokens refilled at 'qps'
 * per second, read from kc_clock_now_ms(), so a fake clock drives it.
 * Each attempt, retries and streams included, takes a token, as client-go
 * does.
 *
 * curl reports TLS failures under several codes; all of them, and a
 * send or receive error whose text names a TLS alert, become KC_ETLS.
 * Under TLS 1.3 a server refuses a missing or untrusted client
 * certificate only after the handshake looks done to the client, so
 * that refusal may also arrive as a reset connection: KC_ETRANSPORT.
 *
 * A stream (watch, log follow) hands each piece of a 2xx body to the
 * caller's callback as curl delivers it; any other status is collected
 * in resp->body instead. A stream the server cuts short (a chunked body
 * that never ends, an h2 stream reset) returns KC_ETRANSPORT after the
 * pieces that did arrive went to the callback; one the server ends
 * properly returns 0.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/clock.h>
#include <kc/str.h>
#include <kc/transport.h>

#ifndef KC_VERSION
#define KC_VERSION	"unknown"
#endif

#define USER_AGENT_DEFAULT	"trainyard/" KC_VERSION
#define BACKOFF_BASE_MS		200
#define BACKOFF_MAX_MS		10000
#define CONNECT_TIMEOUT_MS	10000
#define REQUEST_TIMEOUT_MS	60000
#define RETRY_AFTER_MAX_MS	60000	/* a longer Retry-After is cut to this */
#define WAIT_SLICE_MS		100	/* cancel() is checked this often in waits */
#define POLL_MS			1000
#define TCP_KEEPIDLE_S		30
#define TCP_KEEPINTVL_S		15

/* The state of the transfer in progress, for the curl callbacks. */
struct xfer {
	struct kc_http_resp	*resp;
	kc_chunk_fn		*fn;		/* streams only */
	void			*arg;
	int			 err;		/* why a callback stopped curl */
	bool			 fn_stopped;	/* 'err' is the chunk callback's */
	bool			 stream;
	bool			 status_known;	/* a stream has seen its status */
};

struct curl_transport {
	struct kc_rest_config	*rc;
	struct kc_transport_opts opts;		/* defaults filled in; rc NULL */
	char			*user_agent;
	char			*base;		/* server URL, host swapped for SNI */
	char			*host_header;	/* "Host: h:p" when swapped */
	struct curl_slist	*connect_to;	/* "sni:port:host:port" */
	CURL			*easy;
	CURLM			*multi;
	struct curl_slist	*headers;	/* of the attempt in progress */
	bool			 added;		/* easy is on multi */
	char			*call_url;	/* kc_transport_curl_start()'s */
	const struct kc_http_req *call_req;
	atomic_bool		 cancelled;
	char			 errbuf[CURL_ERROR_SIZE];
	struct xfer		 x;

	/* The token bucket. */
	bool			 bucket_started;
	double			 tokens;
	uint64_t		 bucket_ms;
};

void
kc_http_resp_free(struct kc_http_resp *resp)
{
	if (resp != NULL)
		kc_buf_free(&resp->body);
}

int
kc_transport_global_init(void)
{
	CURLcode cc = curl_global_init(CURL_GLOBAL_DEFAULT);

	if (cc == CURLE_OUT_OF_MEMORY)
		return -ENOMEM;
	return cc == CURLE_OK ? 0 : KC_ETRANSPORT;
}

void
kc_transport_global_cleanup(void)
{
	curl_global_cleanup();
}

static bool
has_line_break(const char *s)
{
	return s != NULL && strpbrk(s, "\r\n") != NULL;
}

static void
curl_url_freep(CURLU **p)
{
	curl_url_cleanup(*p);
	*p = NULL;
}

static void
curl_str_freep(char **p)
{
	curl_free(*p);
	*p = NULL;
}

/*
 * The URL requests go to. With opts.connect_to the URL stays as it is and
 * CURLOPT_CONNECT_TO sends its connections to that address instead. With
 * a tls_server_name the URL names that host,
 * so curl sends it as SNI and verifies the certificate against it, and
 * CURLOPT_CONNECT_TO sends the connection to the real host and port; the
 * Host header keeps the real host, as client-go's ServerName does.
 */
static int
setup_server(struct curl_transport *t, struct kc_status *st)
{
	_cleanup_(curl_url_freep) CURLU *u = NULL;
	_cleanup_(curl_str_freep) char *scheme = NULL;
	_cleanup_(curl_str_freep) char *host = NULL;
	_cleanup_(curl_str_freep) char *port = NULL;
	_cleanup_(curl_str_freep) char *given = NULL;
	_cleanup_(curl_str_freep) char *url = NULL;
	_cleanup_(kc_freep) char *entry = NULL;
	const char *server = t->rc->server, *sni = t->rc->tls_server_name;
	struct curl_slist *l;
	CURLUcode uc;
	size_t n;

	if (server == NULL || *server == '\0')
		return kc_status_set(st, KC_ECONFIG, "transport: no server URL");
	if ((u = curl_url()) == NULL)
		return -ENOMEM;
	if ((uc = curl_url_set(u, CURLUPART_URL, server, 0)) != CURLUE_OK ||
	    (uc = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0)) != CURLUE_OK ||
	    (uc = curl_url_get(u, CURLUPART_HOST, &host, 0)) != CURLUE_OK ||
	    (uc = curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT)) != CURLUE_OK) {
		if (uc == CURLUE_OUT_OF_MEMORY)
			return -ENOMEM;
		return kc_status_set(st, KC_ECONFIG, "server URL \"%.200s\": %s", server,
		    curl_url_strerror(uc));
	}
	if (strcmp(scheme, "https") != 0 && strcmp(scheme, "http") != 0)
		return kc_status_set(st, KC_ECONFIG,
		    "server URL \"%.200s\": scheme must be https or http", server);
	if (has_line_break(sni) || (sni != NULL && strpbrk(sni, ":/[]@ ") != NULL))
		return kc_status_set(st, KC_ECONFIG,
		    "tls-server-name \"%.200s\" is not a host name", sni);
	if (t->opts.connect_to != NULL) {
		const char *to = t->opts.connect_to;

		if (has_line_break(to) || strrchr(to, ':') == NULL || strpbrk(to, "/@ ") != NULL ||
		    (sni != NULL && *sni != '\0' && strcasecmp(sni, host) != 0))
			return kc_status_set(st, KC_ECONFIG, "connect-to \"%.200s\" is not "
			    "host:port, or the TLS server name differs from the URL's", to);
		/*
		 * Go's Host header is the URL's host[:port] as written; curl
		 * would drop a default port.
		 */
		uc = curl_url_get(u, CURLUPART_PORT, &given, 0);
		if (uc == CURLUE_OUT_OF_MEMORY)
			return -ENOMEM;
		if ((t->base = kc_strdup(server)) == NULL ||
		    (entry = kc_asprintf("%s:%s:%s", host, port, to)) == NULL ||
		    (t->host_header = uc == CURLUE_OK ? kc_asprintf("Host: %s:%s", host, given) :
		    kc_asprintf("Host: %s", host)) == NULL)
			return -ENOMEM;
		if ((l = curl_slist_append(NULL, entry)) == NULL)
			return -ENOMEM;
		t->connect_to = l;
	} else if (sni == NULL || *sni == '\0' || strcasecmp(sni, host) == 0) {
		if ((t->base = kc_strdup(server)) == NULL)
			return -ENOMEM;
	} else {
		if ((uc = curl_url_set(u, CURLUPART_HOST, sni, 0)) != CURLUE_OK ||
		    (uc = curl_url_get(u, CURLUPART_URL, &url, 0)) != CURLUE_OK) {
			if (uc == CURLUE_OUT_OF_MEMORY)
				return -ENOMEM;
			return kc_status_set(st, KC_ECONFIG, "tls-server-name \"%.200s\": %s",
			    sni, curl_url_strerror(uc));
		}
		if ((t->base = kc_strdup(url)) == NULL ||
		    (t->host_header = kc_asprintf("Host: %s:%s", host, port)) == NULL ||
		    (entry = kc_asprintf("%s:%s:%s:%s", sni, port, host, port)) == NULL)
			return -ENOMEM;
		if ((l = curl_slist_append(NULL, entry)) == NULL)
			return -ENOMEM;
		t->connect_to = l;
	}
	/* curl_url may add a '/'; paths are appended to the base. */
	n = strlen(t->base);
	while (n > 0 && t->base[n - 1] == '/')
		t->base[--n] = '\0';
	return 0;
}

static void *curl_close(void *);
static int attempt_finish(struct curl_transport *, const struct kc_http_req *, const char *,
    int, CURLcode, struct kc_status *);

static int
curl_open(const struct kc_transport_opts *opts, void **ret, struct kc_status *st)
{
	struct curl_transport *t;
	const char *ua;
	int r;

	if (opts == NULL || opts->rc == NULL)
		return kc_status_set(st, -EINVAL, "transport: no rest config");
	ua = opts->user_agent != NULL ? opts->user_agent : USER_AGENT_DEFAULT;
	if (has_line_break(ua))
		return kc_status_set(st, -EINVAL, "transport: bad user agent");
	if ((t = kc_calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	atomic_init(&t->cancelled, false);
	t->opts = *opts;
	t->opts.rc = NULL;
	if (t->opts.backoff_base_ms == 0)
		t->opts.backoff_base_ms = BACKOFF_BASE_MS;
	if (t->opts.backoff_max_ms == 0)
		t->opts.backoff_max_ms = BACKOFF_MAX_MS;
	if (t->opts.backoff_max_ms < t->opts.backoff_base_ms)
		t->opts.backoff_max_ms = t->opts.backoff_base_ms;
	if (t->opts.connect_timeout_ms == 0)
		t->opts.connect_timeout_ms = CONNECT_TIMEOUT_MS;
	if (t->opts.timeout_ms == 0)
		t->opts.timeout_ms = REQUEST_TIMEOUT_MS;
	if (t->opts.max_response == 0)
		t->opts.max_response = KC_RESPONSE_MAX_DEFAULT;
	if (t->opts.burst == 0)
		t->opts.burst = 1;
	if (!(t->opts.qps > 0))		/* also NaN */
		t->opts.qps = 0;
	if ((r = kc_rest_config_copy(opts->rc, &t->rc)) < 0)
		goto fail;
	if ((t->user_agent = kc_strdup(ua)) == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	t->opts.user_agent = t->user_agent;
	r = setup_server(t, st);
	t->opts.connect_to = NULL;	/* the caller's: only open() reads it */
	if (r < 0)
		goto fail;
	if ((t->easy = curl_easy_init()) == NULL || (t->multi = curl_multi_init()) == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	*ret = t;
	return 0;
fail:
	curl_close(t);
	return r;
}

static void *
curl_close(void *p)
{
	struct curl_transport *t = p;

	if (t == NULL)
		return NULL;
	if (t->easy != NULL)
		curl_easy_cleanup(t->easy);
	if (t->multi != NULL)
		curl_multi_cleanup(t->multi);
	if (t->call_req != NULL)
		(void)attempt_finish(t, t->call_req, t->call_url, -ECANCELED, CURLE_OK, NULL);
	curl_slist_free_all(t->headers);
	kc_free(t->call_url);
	curl_slist_free_all(t->connect_to);
	kc_rest_config_free(t->rc);
	kc_free(t->user_agent);
	kc_free(t->base);
	kc_free(t->host_header);
	return kc_free(t);
}

static void
curl_cancel(void *p)
{
	struct curl_transport *t = p;

	atomic_store(&t->cancelled, true);
	(void)curl_multi_wakeup(t->multi);
}

static void
curl_reset_cancel(void *p)
{
	struct curl_transport *t = p;

	atomic_store(&t->cancelled, false);
}

static bool
is_cancelled(struct curl_transport *t)
{
	return atomic_load(&t->cancelled);
}

/* Sleeps 'ms' on the kc clock in slices, returning early after cancel(). */
static int
wait_ms(struct curl_transport *t, uint64_t ms)
{
	int r;

	while (ms > 0) {
		uint64_t n = KC_MIN(ms, (uint64_t)WAIT_SLICE_MS);

		if (is_cancelled(t))
			return -ECANCELED;
		if ((r = kc_clock_sleep_ms(n)) < 0 && r != -EINTR)
			return r;
		ms -= n;
	}
	return is_cancelled(t) ? -ECANCELED : 0;
}

static void
bucket_refill(struct curl_transport *t, uint64_t now)
{
	double burst = (double)t->opts.burst;

	if (now > t->bucket_ms) {
		t->tokens += (double)(now - t->bucket_ms) * t->opts.qps / 1000.0;
		if (t->tokens > burst)
			t->tokens = burst;
	}
	t->bucket_ms = now;
}

/* Takes a token from the bucket, waiting for one if it is empty. */
static int
rate_limit(struct curl_transport *t, struct kc_status *st)
{
	double owed;
	uint64_t ms;
	int r;

	if (t->opts.qps <= 0)
		return 0;
	if (!t->bucket_started) {
		t->bucket_started = true;
		t->tokens = (double)t->opts.burst;
		t->bucket_ms = kc_clock_now_ms();
	}
	bucket_refill(t, kc_clock_now_ms());
	if (t->tokens < 1.0) {
		owed = (1.0 - t->tokens) * 1000.0 / t->opts.qps;
		if (owed > (double)UINT32_MAX)
			owed = (double)UINT32_MAX;
		ms = (uint64_t)owed;
		if ((double)ms < owed)
			ms++;
		if ((r = wait_ms(t, ms)) < 0)
			return kc_status_set(st, r, "cancelled while rate limited");
		bucket_refill(t, kc_clock_now_ms());
		if (t->tokens < 1.0)
			t->tokens = 1.0;	/* we waited what was owed */
	}
	t->tokens -= 1.0;
	return 0;
}

static uint64_t
backoff_ms(const struct curl_transport *t, unsigned attempt)
{
	uint64_t d = t->opts.backoff_base_ms, half;

	for (unsigned i = 0; i < attempt && d < t->opts.backoff_max_ms; i++)
		d *= 2;
	if (d > t->opts.backoff_max_ms)
		d = t->opts.backoff_max_ms;
	half = d / 2;
	return d - half + kc_random_u64() % (half + 1);
}

/* Retry-After: delta-seconds or an HTTP-date; 0 when absent or past. */
static uint32_t
parse_retry_after(struct kc_str v)
{
	char text[64];
	uint64_t secs;
	time_t when, now;

	if (v.len == 0 || v.len >= sizeof(text))
		return 0;
	memcpy(text, v.p, v.len);
	text[v.len] = '\0';
	if (kc_parse_u64(text, &secs) == 0)
		return secs >= RETRY_AFTER_MAX_MS / 1000 ? RETRY_AFTER_MAX_MS :
		    (uint32_t)secs * 1000;
	if ((when = curl_getdate(text, NULL)) < 0)
		return 0;
	now = kc_clock_wall();
	if (when <= now)
		return 0;
	if (when - now >= RETRY_AFTER_MAX_MS / 1000)
		return RETRY_AFTER_MAX_MS;
	return (uint32_t)(when - now) * 1000;
}

static bool
header_is(struct kc_str line, const char *name, struct kc_str *value)
{
	size_t n = strlen(name);

	if (line.len <= n || line.p[n] != ':' || strncasecmp(line.p, name, n) != 0)
		return false;
	*value = kc_str_trim((struct kc_str){ line.p + n + 1, line.len - n - 1 });
	return true;
}

static size_t
on_header(char *data, size_t size, size_t n, void *arg)
{
	struct curl_transport *t = arg;
	struct kc_http_resp *resp = t->x.resp;
	struct kc_str line = { data, size * n }, v;
	size_t len;

	if (kc_str_has_prefix(line, "HTTP/")) {
		/* A new response (after a 1xx): forget the last one's headers. */
		resp->content_type[0] = '\0';
		resp->retry_after_ms = 0;
	} else if (header_is(line, "Content-Type", &v)) {
		len = KC_MIN(v.len, sizeof(resp->content_type) - 1);
		memcpy(resp->content_type, v.p, len);
		resp->content_type[len] = '\0';
	} else if (header_is(line, "Retry-After", &v)) {
		resp->retry_after_ms = parse_retry_after(v);
	}
	return size * n;
}

static size_t
on_body(char *data, size_t size, size_t n, void *arg)
{
	struct curl_transport *t = arg;
	struct xfer *x = &t->x;
	size_t len = size * n;
	long code = 0;
	int r;

	if (is_cancelled(t)) {
		x->err = -ECANCELED;
		return 0;
	}
	if (x->stream && !x->status_known) {
		(void)curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
		x->resp->status = (int)code;
		x->status_known = true;
	}
	if (x->stream && x->resp->status >= 200 && x->resp->status <= 299) {
		if ((r = x->fn(x->arg, data, len)) < 0) {
			x->err = r;
			x->fn_stopped = true;
			return 0;
		}
		return len;
	}
	if ((r = kc_buf_append(&x->resp->body, data, len)) < 0) {
		x->err = r;
		return 0;
	}
	return len;
}

static bool
is_tls_error(CURLcode cc, const char *errbuf)
{
	switch (cc) {
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_SSL_SHUTDOWN_FAILED:
	case CURLE_USE_SSL_FAILED:
	case CURLE_SSL_CLIENTCERT:
		return true;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
		return strstr(errbuf, "alert") != NULL;
	default:
		return false;
	}
}

static int
map_curl_error(CURLcode cc, const char *errbuf)
{
	if (cc == CURLE_OUT_OF_MEMORY)
		return -ENOMEM;
	if (cc == CURLE_FILESIZE_EXCEEDED)
		return -E2BIG;
	if (cc == CURLE_OPERATION_TIMEDOUT)
		return KC_ETIMEOUT;
	if (is_tls_error(cc, errbuf))
		return KC_ETLS;
	return KC_ETRANSPORT;
}

/* Transport failures that may pass on their own. */
static bool
is_transient(CURLcode cc, int r)
{
	if (r != KC_ETRANSPORT)
		return false;
	switch (cc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return true;
	default:
		return false;
	}
}

static bool
is_retry_status(int status)
{
	return status == 429 || (status >= 500 && status <= 599 && status != 501 &&
	    status != 505);
}

static void
slist_freep(struct curl_slist **p)
{
	curl_slist_free_all(*p);
	*p = NULL;
}

/* Appends "name: value", refusing values that would split the header. */
static int
add_header(struct curl_slist **l, const char *name, const char *value,
    struct kc_status *st)
{
	struct curl_slist *nl;
	char *h;

	if (has_line_break(value))
		return kc_status_set(st, KC_ECONFIG, "%s: the value holds a line break", name);
	if ((h = kc_asprintf("%s: %s", name, value)) == NULL)
		return -ENOMEM;
	nl = curl_slist_append(*l, h);
	kc_free_secret(h);
	if (nl == NULL)
		return -ENOMEM;
	*l = nl;
	return 0;
}

static int
build_headers(struct curl_transport *t, const struct kc_http_req *req,
    const char *token, struct curl_slist **ret, struct kc_status *st)
{
	_cleanup_(slist_freep) struct curl_slist *l = NULL;
	char *const *g;
	char *bearer;
	int r;

	if ((r = add_header(&l, "Accept", req->accept != NULL ? req->accept :
	    "application/json", st)) < 0)
		return r;
	if (req->content_type != NULL &&
	    (r = add_header(&l, "Content-Type", req->content_type, st)) < 0)
		return r;
	if (token != NULL) {
		if ((bearer = kc_asprintf("Bearer %s", token)) == NULL)
			return -ENOMEM;
		r = add_header(&l, "Authorization", bearer, st);
		kc_free_secret(bearer);
		if (r < 0)
			return r;
	}
	if (t->rc->impersonate_user != NULL &&
	    (r = add_header(&l, "Impersonate-User", t->rc->impersonate_user, st)) < 0)
		return r;
	for (g = t->rc->impersonate_groups; g != NULL && *g != NULL; g++)
		if ((r = add_header(&l, "Impersonate-Group", *g, st)) < 0)
			return r;
	/* No "Expect: 100-continue" round trip before bodies. */
	if ((r = add_header(&l, "Expect", "", st)) < 0)
		return r;
	if (t->host_header != NULL) {
		struct curl_slist *nl = curl_slist_append(l, t->host_header);

		if (nl == NULL)
			return -ENOMEM;
		l = nl;
	}
	*ret = l;
	l = NULL;
	return 0;
}

#define SETOPT(opt, val)						\
	do {								\
		if (cc == CURLE_OK)					\
			cc = curl_easy_setopt(e, opt, val);		\
	} while (0)

static int
setup_easy(struct curl_transport *t, const struct kc_http_req *req, const char *url,
    struct curl_slist *headers, bool stream, struct kc_status *st)
{
	const struct kc_rest_config *rc = t->rc;
	CURL *e = t->easy;
	CURLcode cc = CURLE_OK;
	uint32_t timeout;
	struct curl_blob ca = { rc->ca_pem, rc->ca_pem_len, CURL_BLOB_NOCOPY };
	struct curl_blob cert = { rc->cert_pem, rc->cert_pem_len, CURL_BLOB_NOCOPY };
	struct curl_blob key = { rc->key_pem, rc->key_pem_len, CURL_BLOB_NOCOPY };

	curl_easy_reset(e);
	t->errbuf[0] = '\0';
	timeout = req->timeout_ms != 0 ? req->timeout_ms : stream ? 0 : t->opts.timeout_ms;

	SETOPT(CURLOPT_URL, url);
	SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_ERRORBUFFER, t->errbuf);
	SETOPT(CURLOPT_HTTP_VERSION, t->opts.http1 ? (long)CURL_HTTP_VERSION_1_1 :
	    (long)CURL_HTTP_VERSION_2TLS);
	SETOPT(CURLOPT_ACCEPT_ENCODING, "");
	SETOPT(CURLOPT_USERAGENT, t->user_agent);
	SETOPT(CURLOPT_CONNECTTIMEOUT_MS, (long)t->opts.connect_timeout_ms);
	SETOPT(CURLOPT_TIMEOUT_MS, (long)timeout);
	SETOPT(CURLOPT_TCP_KEEPALIVE, 1L);
	SETOPT(CURLOPT_TCP_KEEPIDLE, (long)TCP_KEEPIDLE_S);
	SETOPT(CURLOPT_TCP_KEEPINTVL, (long)TCP_KEEPINTVL_S);
	SETOPT(CURLOPT_WRITEFUNCTION, on_body);
	SETOPT(CURLOPT_WRITEDATA, t);
	SETOPT(CURLOPT_HEADERFUNCTION, on_header);
	SETOPT(CURLOPT_HEADERDATA, t);
	/*
	 * A streamed 2xx body goes to the caller piece by piece and may run
	 * for hours (a watch); only a buffered body is capped. Newer curl
	 * applies this cap to the bytes received, not just to Content-Length.
	 */
	if (!stream)
		SETOPT(CURLOPT_MAXFILESIZE_LARGE,
		    (curl_off_t)KC_MIN(t->opts.max_response, (size_t)INT64_MAX));
	SETOPT(CURLOPT_HTTPHEADER, headers);
	if (t->connect_to != NULL)
		SETOPT(CURLOPT_CONNECT_TO, t->connect_to);
	if (rc->insecure_skip_tls_verify) {
		SETOPT(CURLOPT_SSL_VERIFYPEER, 0L);
		SETOPT(CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (rc->ca_pem != NULL) {
		/*
		 * The config's CA is the only trust anchor, as in client-go:
		 * without clearing CAPATH, curl built for a distribution also
		 * trusts every CA under /etc/ssl/certs.
		 */
		SETOPT(CURLOPT_CAINFO_BLOB, &ca);
		SETOPT(CURLOPT_CAPATH, (char *)NULL);
	}
	if (rc->cert_pem != NULL && rc->key_pem != NULL) {
		SETOPT(CURLOPT_SSLCERTTYPE, "PEM");
		SETOPT(CURLOPT_SSLCERT_BLOB, &cert);
		SETOPT(CURLOPT_SSLKEYTYPE, "PEM");
		SETOPT(CURLOPT_SSLKEY_BLOB, &key);
	}
	if (rc->username != NULL && rc->password != NULL && rc->token == NULL &&
	    rc->token_file == NULL) {
		SETOPT(CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		SETOPT(CURLOPT_USERNAME, rc->username);
		SETOPT(CURLOPT_PASSWORD, rc->password);
	}

	if (strcmp(req->method, "HEAD") == 0) {
		SETOPT(CURLOPT_NOBODY, 1L);
	} else if (req->body != NULL || strcmp(req->method, "GET") != 0) {
		if (req->body != NULL || strcmp(req->method, "DELETE") != 0) {
			SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
			SETOPT(CURLOPT_POSTFIELDS, req->body != NULL ? req->body : "");
		}
		if (strcmp(req->method, "POST") != 0)
			SETOPT(CURLOPT_CUSTOMREQUEST, req->method);
	}
	if (cc == CURLE_OUT_OF_MEMORY)
		return -ENOMEM;
	if (cc != CURLE_OK)
		return kc_status_set(st, KC_ETRANSPORT, "curl setup: %s",
		    curl_easy_strerror(cc));
	return 0;
}

#undef SETOPT

/*
 * The first half of an attempt: token, headers, the easy handle set up
 * and added to the multi handle. The headers stay in t->headers until
 * attempt_finish().
 */
static int
attempt_start(struct curl_transport *t, const struct kc_http_req *req, const char *url,
    bool stream, struct kc_status *st)
{
	struct kc_http_resp *resp = t->x.resp;
	const char *token = NULL;
	CURLMcode mc;
	int r;

	if ((r = kc_rest_config_token(t->rc, &token, st)) < 0)
		return r;
	if ((r = build_headers(t, req, token, &t->headers, st)) < 0)
		return r;
	if ((r = setup_easy(t, req, url, t->headers, stream, st)) < 0)
		return r;
	kc_buf_reset(&resp->body);
	resp->status = 0;
	resp->content_type[0] = '\0';
	resp->retry_after_ms = 0;
	t->x.err = 0;
	t->x.fn_stopped = false;
	t->x.status_known = false;
	if ((mc = curl_multi_add_handle(t->multi, t->easy)) != CURLM_OK)
		return mc == CURLM_OUT_OF_MEMORY ? -ENOMEM :
		    kc_status_set(st, KC_ETRANSPORT, "curl: %s", curl_multi_strerror(mc));
	t->added = true;
	return 0;
}

/*
 * Moves the transfer on without waiting: 1 while it runs, 0 when it
 * ended (*ret_cc is curl's code for it), or a code.
 */
static int
transfer_step(struct curl_transport *t, CURLcode *ret_cc, struct kc_status *st)
{
	CURLMcode mc;
	CURLMsg *msg;
	int running = 1, left;

	*ret_cc = CURLE_OK;
	if ((mc = curl_multi_perform(t->multi, &running)) != CURLM_OK)
		return mc == CURLM_OUT_OF_MEMORY ? -ENOMEM :
		    kc_status_set(st, KC_ETRANSPORT, "curl: %s", curl_multi_strerror(mc));
	if (running != 0)
		return 1;
	while ((msg = curl_multi_info_read(t->multi, &left)) != NULL)
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == t->easy)
			*ret_cc = msg->data.result;
	return 0;
}

/* Runs the added easy handle until done or cancelled. */
static int
run_transfer(struct curl_transport *t, CURLcode *ret_cc, struct kc_status *st)
{
	CURLMcode mc;
	int r;

	for (;;) {
		if (is_cancelled(t))
			return kc_status_set(st, -ECANCELED, "cancelled");
		if ((r = transfer_step(t, ret_cc, st)) <= 0)
			return r;
		if ((mc = curl_multi_poll(t->multi, NULL, 0, POLL_MS, NULL)) != CURLM_OK)
			return mc == CURLM_OUT_OF_MEMORY ? -ENOMEM :
			    kc_status_set(st, KC_ETRANSPORT, "curl: %s", curl_multi_strerror(mc));
	}
}

/*
 * The second half: the easy handle leaves the multi handle and the
 * outcome 'r' of the transfer (0 or a code, curl's 'cc') becomes the
 * attempt's. 0 when an HTTP answer arrived.
 */
static int
attempt_finish(struct curl_transport *t, const struct kc_http_req *req, const char *url,
    int r, CURLcode cc, struct kc_status *st)
{
	struct kc_http_resp *resp = t->x.resp;
	long code = 0;

	if (t->added)
		(void)curl_multi_remove_handle(t->multi, t->easy);
	t->added = false;
	/* The handle points into the headers and 'rc': drop what it keeps. */
	(void)curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(t->headers);
	t->headers = NULL;
	if (r < 0)
		return r;
	if (t->x.err != 0) {
		if (t->x.fn_stopped)
			return t->x.err;
		if (t->x.err == -E2BIG)
			return kc_status_set(st, -E2BIG, "%s %s: response larger than %zu bytes",
			    req->method, req->path, t->opts.max_response);
		if (t->x.err == -ECANCELED)
			return kc_status_set(st, -ECANCELED, "cancelled");
		return kc_status_set(st, t->x.err, "%s %s: %s", req->method, req->path,
		    kc_strerror(t->x.err));
	}
	if (cc != CURLE_OK) {
		r = map_curl_error(cc, t->errbuf);
		if (r == -E2BIG)
			return kc_status_set(st, r, "%s %s: response larger than %zu bytes",
			    req->method, req->path, t->opts.max_response);
		return kc_status_set(st, r, "%s %s: %s", req->method, url,
		    t->errbuf[0] != '\0' ? t->errbuf : curl_easy_strerror(cc));
	}
	(void)curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code < 100 || code > 999)
		return kc_status_set(st, KC_ETRANSPORT, "%s %s: no HTTP status", req->method,
		    url);
	resp->status = (int)code;
	return 0;
}

/*
 * One attempt: token, headers, transfer. 0 when an HTTP answer arrived;
 * *ret_cc is curl's code for the retry decision.
 */
static int
attempt(struct curl_transport *t, const struct kc_http_req *req, const char *url,
    bool stream, CURLcode *ret_cc, struct kc_status *st)
{
	CURLcode cc = CURLE_OK;
	int r;

	*ret_cc = CURLE_OK;
	if ((r = attempt_start(t, req, url, stream, st)) == 0)
		r = run_transfer(t, &cc, st);
	*ret_cc = cc;
	return attempt_finish(t, req, url, r, cc, st);
}

static int
check_req(const struct kc_http_req *req, struct kc_status *st)
{
	if (req == NULL || req->method == NULL || req->path == NULL)
		return kc_status_set(st, -EINVAL, "transport: incomplete request");
	if (req->path[0] != '/' || has_line_break(req->path) || strchr(req->path, ' ') != NULL)
		return kc_status_set(st, -EINVAL, "transport: bad path \"%.200s\"", req->path);
	if (req->method[0] == '\0' || strpbrk(req->method, " \r\n") != NULL)
		return kc_status_set(st, -EINVAL, "transport: bad method");
	return 0;
}

static void
resp_init(struct kc_http_resp *resp, size_t max)
{
	memset(resp, 0, sizeof(*resp));
	kc_buf_init(&resp->body, max);
}

/* The end of a request: on failure no body is kept and no status known. */
static int
request_end(struct kc_http_resp *resp, int r, struct kc_status *st)
{
	if (r < 0) {
		kc_buf_free(&resp->body);
		if (st != NULL)
			st->http_code = 0;
	}
	return r;
}

static int
curl_request(void *p, const struct kc_http_req *req, struct kc_http_resp *resp,
    struct kc_status *st)
{
	struct curl_transport *t = p;
	_cleanup_(kc_freep) char *url = NULL;
	unsigned tries = 0;
	CURLcode cc;
	uint64_t delay;
	int r;

	resp_init(resp, t->opts.max_response);
	if ((r = check_req(req, st)) < 0)
		return r;
	if ((url = kc_asprintf("%s%s", t->base, req->path)) == NULL)
		return -ENOMEM;
	t->x = (struct xfer){ .resp = resp };
	for (;;) {
		if (is_cancelled(t)) {
			r = kc_status_set(st, -ECANCELED, "cancelled");
			break;
		}
		if ((r = rate_limit(t, st)) < 0)
			break;
		r = attempt(t, req, url, false, &cc, st);
		if (!req->idempotent || tries >= t->opts.max_retries)
			break;
		if (r == 0 && is_retry_status(resp->status))
			delay = resp->retry_after_ms != 0 ? resp->retry_after_ms :
			    backoff_ms(t, tries);
		else if (r < 0 && is_transient(cc, r))
			delay = backoff_ms(t, tries);
		else
			break;
		tries++;
		resp->retries = tries;
		if ((r = wait_ms(t, delay)) < 0) {
			r = kc_status_set(st, r, "cancelled during retry backoff");
			break;
		}
	}
	t->x = (struct xfer){ 0 };
	return request_end(resp, r, st);
}

static int
curl_stream(void *p, const struct kc_http_req *req, struct kc_http_resp *resp,
    kc_chunk_fn *fn, void *arg, struct kc_status *st)
{
	struct curl_transport *t = p;
	_cleanup_(kc_freep) char *url = NULL;
	CURLcode cc;
	int r;

	resp_init(resp, t->opts.max_response);
	if ((r = check_req(req, st)) < 0)
		return r;
	if (fn == NULL)
		return kc_status_set(st, -EINVAL, "transport: stream without a callback");
	if (is_cancelled(t))
		return kc_status_set(st, -ECANCELED, "cancelled");
	if ((url = kc_asprintf("%s%s", t->base, req->path)) == NULL)
		return -ENOMEM;
	t->x = (struct xfer){ .resp = resp, .fn = fn, .arg = arg, .stream = true };
	if ((r = rate_limit(t, st)) == 0)
		r = attempt(t, req, url, true, &cc, st);
	t->x = (struct xfer){ 0 };
	if (r < 0)
		kc_buf_free(&resp->body);
	return r;
}

int
kc_transport_curl_start(void *p, const struct kc_http_req *req, struct kc_http_resp *resp,
    struct kc_status *st)
{
	struct curl_transport *t = p;
	int r;

	resp_init(resp, t->opts.max_response);
	if ((r = check_req(req, st)) < 0)
		return r;
	if (t->call_req != NULL)
		return kc_status_set(st, -EBUSY, "transport: a call is in progress");
	if ((t->call_url = kc_asprintf("%s%s", t->base, req->path)) == NULL)
		return -ENOMEM;
	t->x = (struct xfer){ .resp = resp };
	if ((r = attempt_start(t, req, t->call_url, false, st)) < 0) {
		(void)attempt_finish(t, req, t->call_url, r, CURLE_OK, NULL);
		t->x = (struct xfer){ 0 };
		t->call_url = kc_free(t->call_url);
		kc_buf_free(&resp->body);
		return r;
	}
	t->call_req = req;
	return 0;
}

int
kc_transport_curl_step(void *p, struct kc_status *st)
{
	struct curl_transport *t = p;
	struct kc_http_resp *resp = t->x.resp;
	CURLcode cc = CURLE_OK;
	int r;

	if (t->call_req == NULL)
		return kc_status_set(st, -EINVAL, "transport: no call in progress");
	if ((r = transfer_step(t, &cc, st)) == 1)
		return 1;
	r = attempt_finish(t, t->call_req, t->call_url, r, cc, st);
	t->call_req = NULL;
	t->call_url = kc_free(t->call_url);
	t->x = (struct xfer){ 0 };
	return request_end(resp, r, st);
}

const struct kc_transport_ops kc_transport_curl = {
	.name = "curl",
	.open = curl_open,
	.request = curl_request,
	.stream = curl_stream,
	.cancel = curl_cancel,
	.reset_cancel = curl_reset_cancel,
	.close = curl_close,
};

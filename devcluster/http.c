/*
 * http.c: the libwebsockets front, the only devcluster file that sees
 * libwebsockets.
 *
 * One context, one vhost, HTTPS only (the certificate and key come from
 * main.c as PEM in memory), ALPN "http/1.1" alone so Go clients, which
 * offer h2 first, stay on HTTP/1.1. Every request is collected into a
 * struct dc_req: method, path (libwebsockets has percent-decoded it),
 * query parameters, the headers the API server reads, and the body,
 * bounded by body_max (past it: 413 and the connection closes). Then
 * api_handle() answers it into a struct dc_resp, which is written back
 * over as many writable callbacks as it takes, at most WRITE_MAX bytes
 * at a time, and the connection goes back to keep-alive.
 *
 * A reply with a stream (a watch) is sent with chunked transfer coding:
 * each struct dc_chunk pulled from the stream becomes one or more HTTP
 * chunks, as many as WRITE_MAX holds going out in one write, and the
 * producer's wake() asks for a writable callback. The
 * header table is released once a request is parsed, so a watch may
 * stay open for its whole timeout.
 *
 * Every accepted connection is under a connection guard (kc/connguard.h):
 * DC_REQUEST_S for a request's line and headers (the TLS handshake
 * included), DC_BODY_S for its body, the keep-alive timeout between
 * requests, no deadline for an answer (watches, held requests), at most
 * DC_CONNS_MAX connections, a newcomer making room by closing the longest
 * idle or slowest one. It tracks a connection on its opaque pointer from
 * LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED to LWS_CALLBACK_WSI_DESTROY
 * (http_cb's), and lets go of it when a WebSocket upgrade hands the
 * pointer to a plug-in's session. /devcluster/stats shows its counters.
 *
 * Timers live in a list sorted by due time on struct dc; a single
 * lws_sul tracks the earliest, so the loop sleeps exactly until the next
 * one. Without a server (unit tests) timers_run() runs them by hand
 * against kc_clock_now_ms(), which a test may fake.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libwebsockets.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/connguard.h>
#include <kc/log.h>
#include <kc/str.h>

#include "devcluster.h"

#define WRITE_MAX	(64 * 1024)
#define STREAM_WRITES_MAX	16	/* WRITE_MAX writes of a watch per callback */
#define HEADERS_MAX	8192
#define HDR_VALUE_MAX	16384
#define FDS_MAX		4
#define PROTOS_MAX	16		/* ours and the plug-ins' */
#define PROBE_MS	500	/* how often a stream checks that its peer is there */
#define DC_CONNS_MAX	4096	/* connections at once */
#define DC_REQUEST_S	10	/* a request's line and headers */
#define DC_BODY_S	60	/* a request's body */
#define DC_KEEPALIVE_S	300	/* idle between requests */

struct conn;

struct fdwatch {
	int		 fd;
	void		(*fn)(void *);
	void		*arg;
	struct lws	*wsi;
};

struct dc_http {
	struct dc		*dc;
	struct lws_context	*ctx;
	struct lws_vhost	*vh;
	int			 port;
	size_t			 body_max;
	bool			 stop;
	lws_sorted_usec_list_t	 sul;
	struct fdwatch		 fds[FDS_MAX];
	size_t			 nfds;
	struct lws_protocols	 protos[PROTOS_MAX + 1];	/* ours, the plug-ins' */
	struct kc_guard_lws	*guard;		/* the connections' deadlines and cap */
	unsigned char		 scratch[LWS_PRE + WRITE_MAX + 64];
};

/* Per connection; libwebsockets allocates it zeroed. */
struct conn {
	struct dc_http		*http;
	struct lws		*wsi;
	bool			 active;	/* a request is being answered */
	bool			 dispatched;
	bool			 headers_sent;
	bool			 too_large;
	bool			 close_after;
	/* A body in chunked transfer coding (kubectl create --raw -f FILE). */
	bool			 chunked;
	bool			 bad_body;	/* malformed chunking: 400 */
	int			 chunk_state;
	uint64_t		 chunk_left;
	struct dc_req		 req;
	struct kc_buf		 body;
	struct dc_resp		 resp;
	size_t			 sent;
	struct dc_chunk		*chunk;
	size_t			 chunk_off;
	struct dc_timer		 hold;		/* a plug-in's pause or latency */
	bool			 hold_dispatch;	/* the hold is before api_handle() */
	struct dc_timer		 probe;		/* is the peer still there? */
	bool			 rx_off;	/* POLLIN is off until the reply ends */
	bool			 peer_gone;	/* the peer hung up: close, no reply */
};

void
http_conn_stats(const struct dc_http *h, struct kc_guard_stats *ret)
{
	kc_guard_lws_stats(h != NULL ? h->guard : NULL, ret);
}

/*
 * Timers
 */

static void	http_reschedule(struct dc *);

void
timer_init(struct dc_timer *t, struct dc *dc, dc_timer_fn *fn, void *arg)
{
	memset(t, 0, sizeof(*t));
	t->dc = dc;
	t->fn = fn;
	t->arg = arg;
}

void
timer_cancel(struct dc_timer *t)
{
	if (t->dc == NULL || !t->armed)
		return;
	TAILQ_REMOVE(&t->dc->timers, t, link);
	t->armed = false;
	http_reschedule(t->dc);
}

void
timer_arm(struct dc_timer *t, uint64_t delay_ms)
{
	struct dc_timer *it;

	if (t->armed) {
		TAILQ_REMOVE(&t->dc->timers, t, link);
		t->armed = false;
	}
	t->due_ms = kc_clock_now_ms() + delay_ms;
	t->round = t->dc->timer_round;
	for (it = TAILQ_FIRST(&t->dc->timers); it != NULL; it = TAILQ_NEXT(it, link))
		if (it->due_ms > t->due_ms)
			break;
	if (it != NULL)
		TAILQ_INSERT_BEFORE(it, t, link);
	else
		TAILQ_INSERT_TAIL(&t->dc->timers, t, link);
	t->armed = true;
	http_reschedule(t->dc);
}

size_t
timers_run(struct dc *dc)
{
	uint64_t now = kc_clock_now_ms(), round = ++dc->timer_round;
	size_t n = 0;

	for (;;) {
		struct dc_timer *t = TAILQ_FIRST(&dc->timers);
		int64_t next;

		/* Sorted by due time; skip what this pass armed itself. */
		while (t != NULL && t->due_ms <= now && t->round >= round)
			t = TAILQ_NEXT(t, link);
		if (t == NULL || t->due_ms > now)
			break;
		TAILQ_REMOVE(&dc->timers, t, link);
		t->armed = false;
		n++;
		next = t->fn(t->arg);
		if (next >= 0 && !t->armed)
			timer_arm(t, (uint64_t)next);
	}
	http_reschedule(dc);
	return n;
}

int64_t
timers_next(const struct dc *dc)
{
	const struct dc_timer *t = TAILQ_FIRST(&dc->timers);
	uint64_t now;

	if (t == NULL)
		return -1;
	now = kc_clock_now_ms();
	return t->due_ms > now ? (int64_t)(t->due_ms - now) : 0;
}

static void
sul_fired(lws_sorted_usec_list_t *sul)
{
	struct dc_http *h = lws_container_of(sul, struct dc_http, sul);

	(void)timers_run(h->dc);
}

static void
http_reschedule(struct dc *dc)
{
	struct dc_http *h = dc->http;
	int64_t next;

	if (h == NULL || h->ctx == NULL)
		return;
	if ((next = timers_next(dc)) < 0) {
		lws_sul_cancel(&h->sul);
		return;
	}
	lws_sul_schedule(h->ctx, 0, &h->sul, sul_fired, (lws_usec_t)next * 1000 + 1);
}

/*
 * Requests
 */

static char *
hdr_dup(struct lws *wsi, enum lws_token_indexes tok)
{
	int len = lws_hdr_total_length(wsi, tok);
	char *s;

	if (len <= 0 || len > HDR_VALUE_MAX)
		return NULL;
	if ((s = kc_malloc((size_t)len + 1)) == NULL)
		return NULL;
	if (lws_hdr_copy(wsi, s, len + 1, tok) < 0) {
		kc_free(s);
		return NULL;
	}
	return s;
}

static char *
custom_dup(struct lws *wsi, const char *name)
{
	int nlen = (int)strlen(name);
	int len = lws_hdr_custom_length(wsi, name, nlen);
	char *s;

	if (len < 0 || len > HDR_VALUE_MAX)
		return NULL;
	if ((s = kc_malloc((size_t)len + 1)) == NULL)
		return NULL;
	if (lws_hdr_custom_copy(wsi, s, len + 1, name, nlen) < 0) {
		kc_free(s);
		return NULL;
	}
	return s;
}

/*
 * The Impersonate-Group values libwebsockets gives: it keeps each
 * repeated unknown header, but its lookups (lws_hdr_custom_length() and
 * _copy(); lws_hdr_custom_name_foreach() of later versions gives names
 * only) return the first, so that one is all a request carries.
 */
static void
imp_groups(struct lws *wsi, struct dc_req *req)
{
	if ((req->imp_groups[0] = custom_dup(wsi, "impersonate-group:")) != NULL)
		req->imp_ngroups = 1;
}

static int
read_params(struct lws *wsi, struct dc_req *req)
{
	char *buf;
	int r = 0;

	if ((buf = kc_malloc(HDR_VALUE_MAX + 1)) == NULL)
		return -ENOMEM;
	for (int i = 0;; i++) {
		int n = lws_hdr_copy_fragment(wsi, buf, HDR_VALUE_MAX + 1,
		    WSI_TOKEN_HTTP_URI_ARGS, i);

		if (n < 0)
			break;
		if (n == 0)
			continue;
		if ((r = req_add_param(req, buf)) < 0)
			break;
	}
	kc_free(buf);
	return r == -E2BIG ? 0 : r;
}

static enum dc_method
lws_method(int m)
{
	switch (m) {
	case LWSHUMETH_GET:	return DC_GET;
	case LWSHUMETH_POST:	return DC_POST;
	case LWSHUMETH_PUT:	return DC_PUT;
	case LWSHUMETH_PATCH:	return DC_PATCH;
	case LWSHUMETH_DELETE:	return DC_DELETE;
	case LWSHUMETH_HEAD:	return DC_HEAD;
	case LWSHUMETH_OPTIONS:	return DC_OPTIONS;
	default:		return DC_METHOD_OTHER;
	}
}

static void
conn_reset(struct conn *c)
{
	req_clear(&c->req);
	resp_clear(&c->resp);
	kc_buf_free(&c->body);
	chunk_unref(c->chunk);
	c->chunk = NULL;
	c->chunk_off = 0;
	timer_cancel(&c->hold);
	c->hold_dispatch = false;
	timer_cancel(&c->probe);
	c->peer_gone = false;
	c->sent = 0;
	c->active = false;
	c->dispatched = false;
	c->headers_sent = false;
	c->too_large = false;
	c->chunked = false;
	c->bad_body = false;
	c->chunk_state = 0;
	c->chunk_left = 0;
}

/*
 * A connection reads nothing while its reply is being answered.
 * libwebsockets 4.1 reads a server connection only in its ESTABLISHED,
 * HEADERS, BODY and ISSUING_FILE states; one answered by http_cb() sits in
 * DOING_TRANSACTION until lws_http_transaction_completed(), so a peer's
 * FIN (or TLS close_notify) is never read there, and the level-triggered
 * POLLIN came back from every poll(): a busy loop for as long as the reply
 * lasted, for a watch until its timeout, with the socket in CLOSE-WAIT.
 * So while a reply waits with nothing to write (a stream with nothing
 * queued, a fault's hold), POLLIN is off (rx flow control; it must be on
 * again before asking for a writable callback, as 4.1 dispatches no
 * POLLOUT to a flow-controlled HTTP connection), and such a reply probes
 * its socket every PROBE_MS with poll(POLLRDHUP): when the peer has hung
 * up, the connection is closed, which releases the stream (watchhub.c
 * frees the watcher). kube-apiserver likewise ends a watch when its
 * client's connection goes away.
 */
static void
rx_pause(struct conn *c, bool off)
{
	if (c->rx_off == off)
		return;
	c->rx_off = off;
	(void)lws_rx_flow_control(c->wsi, off ? 0 : 1);
}

static int64_t
conn_probe(void *arg)
{
	struct conn *c = arg;
	struct pollfd p = { .fd = lws_get_socket_fd(c->wsi), .events = POLLRDHUP };

	if (p.fd >= 0 && (poll(&p, 1, 0) <= 0 ||
	    (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) == 0))
		return PROBE_MS;
	kc_log_debug(NULL, "the peer hung up: closing its connection");
	c->peer_gone = true;
	lws_set_timeout(c->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
	return DC_TIMER_STOP;
}

static void
probe_start(struct conn *c)
{
	if (c->probe.armed)
		return;
	timer_init(&c->probe, c->http->dc, conn_probe, c);
	timer_arm(&c->probe, PROBE_MS);
}

static void
conn_wake(void *arg)
{
	struct conn *c = arg;

	rx_pause(c, false);
	lws_callback_on_writable(c->wsi);
}

static int64_t	conn_unhold(void *);

/* The started plug-ins' hold before a request is dispatched: the longest. */
static uint64_t
plugins_hold_ms(struct dc *dc, const struct dc_req *req)
{
	uint64_t ms = 0, v;

	for (size_t i = 0; i < dc_nplugins; i++) {
		const struct dc_plugin *p = dc_plugins[i];

		if (p->hold_ms != NULL && plugin_state(dc, p) != NULL &&
		    (v = p->hold_ms(dc, req)) > ms)
			ms = v;
	}
	return ms;
}

/* Every started plug-in sees the answered request; the reply's hold: the longest. */
static uint64_t
plugins_after(struct dc *dc, const struct dc_req *req, const struct dc_resp *resp)
{
	uint64_t ms = 0, v;

	for (size_t i = 0; i < dc_nplugins; i++) {
		const struct dc_plugin *p = dc_plugins[i];

		if (p->after != NULL && plugin_state(dc, p) != NULL &&
		    (v = p->after(dc, req, resp)) > ms)
			ms = v;
	}
	return ms;
}

static void
dispatch(struct conn *c)
{
	struct dc *dc = c->http->dc;
	uint64_t hold;
	int r;

	c->dispatched = true;
	/* A plug-in's pause (fault injection) holds the request, on a loop timer. */
	if (!c->too_large && (hold = plugins_hold_ms(dc, &c->req)) > 0) {
		c->hold_dispatch = true;
		timer_init(&c->hold, dc, conn_unhold, c);
		timer_arm(&c->hold, hold);
		lws_set_timeout(c->wsi, NO_PENDING_TIMEOUT, 0);
		rx_pause(c, true);
		probe_start(c);
		return;
	}
	if (c->too_large) {
		errors_reply(&c->resp, KC_ETOOLARGE,
		    "Request entity too large: limit is %zu", c->http->body_max);
		c->close_after = true;
	} else if (c->bad_body) {
		errors_reply(&c->resp, KC_EBADREQUEST, "malformed chunked encoding");
		c->close_after = true;
	} else {
		if (c->body.len > 0) {
			c->req.body = kc_buf_take(&c->body, &c->req.body_len);
			if (c->req.body == NULL) {
				errors_internal(&c->resp, -ENOMEM);
				goto out;
			}
		}
		api_handle(dc, &c->req, &c->resp);
		/* It waits for a conversion webhook: ask again after a hold. */
		if (c->req.redo) {
			c->hold_dispatch = true;
			timer_init(&c->hold, dc, conn_unhold, c);
			timer_arm(&c->hold, 0);
			lws_set_timeout(c->wsi, NO_PENDING_TIMEOUT, 0);
			rx_pause(c, true);
			probe_start(c);
			return;
		}
		/* The plug-ins count it; an injected latency holds the reply. */
		if ((hold = plugins_after(dc, &c->req, &c->resp)) > 0) {
			timer_init(&c->hold, dc, conn_unhold, c);
			timer_arm(&c->hold, hold);
			lws_set_timeout(c->wsi, NO_PENDING_TIMEOUT, 0);
			rx_pause(c, true);
			probe_start(c);
		}
	}
out:
	if (c->resp.stream != NULL) {
		kc_guard_lws_phase(c->http->guard, c->wsi, KC_GUARD_STREAM);
		c->resp.stream->wake = conn_wake;
		c->resp.stream->wake_arg = c;
		lws_set_timeout(c->wsi, NO_PENDING_TIMEOUT, 0);
		probe_start(c);
	}
	if ((r = lws_http_headers_detach(c->wsi)) != 0)
		kc_log_debug(NULL, "detaching the header table: %d", r);
	lws_callback_on_writable(c->wsi);
}

/* The end of a fault's hold: dispatch the request, or write its reply. */
static int64_t
conn_unhold(void *arg)
{
	struct conn *c = arg;

	rx_pause(c, false);
	if (c->hold_dispatch) {
		c->hold_dispatch = false;
		dispatch(c);
	} else
		lws_callback_on_writable(c->wsi);
	return DC_TIMER_STOP;
}

static int
begin_request(struct conn *c, struct lws *wsi)
{
	struct dc_http *h = c->http;
	char *uri = NULL, cl[32];
	int ulen = 0, m, r;
	uint64_t length = 0;

	conn_reset(c);
	c->active = true;
	kc_buf_init(&c->body, h->body_max);
	m = lws_http_get_uri_and_method(wsi, &uri, &ulen);
	c->req.method = lws_method(m);
	if (uri == NULL || ulen < 0 || (c->req.path = kc_strndup(uri, (size_t)ulen)) == NULL)
		return -ENOMEM;
	if ((r = read_params(wsi, &c->req)) < 0)
		return r;
	c->req.accept = hdr_dup(wsi, WSI_TOKEN_HTTP_ACCEPT);
	c->req.content_type = hdr_dup(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE);
	c->req.authorization = hdr_dup(wsi, WSI_TOKEN_HTTP_AUTHORIZATION);
	c->req.user_agent = hdr_dup(wsi, WSI_TOKEN_HTTP_USER_AGENT);
	c->req.imp_user = custom_dup(wsi, "impersonate-user:");
	imp_groups(wsi, &c->req);
	c->req.imp_uid = custom_dup(wsi, "impersonate-uid:");
	if (lws_hdr_copy(wsi, cl, sizeof(cl), WSI_TOKEN_HTTP_CONTENT_LENGTH) > 0 &&
	    kc_parse_u64(cl, &length) < 0)
		length = UINT64_MAX;
	if (length > h->body_max) {
		c->too_large = true;
		dispatch(c);
		return 0;
	}
	{
		char te[64];

		/*
		 * libwebsockets hands a chunked body over raw (as the
		 * body of a POST without a length): dechunk() reads it and
		 * dispatches at the last chunk; the connection closes after
		 * the reply, as the library's framing is lost.
		 */
		if (length == 0 && lws_hdr_copy(wsi, te, sizeof(te),
		    WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0 && strcasestr(te, "chunked") != NULL) {
			c->chunked = true;
			c->close_after = true;
			kc_guard_lws_phase(h->guard, wsi, KC_GUARD_BODY);
			return 0;
		}
	}
	if (length == 0)
		dispatch(c);
	else
		kc_guard_lws_phase(h->guard, wsi, KC_GUARD_BODY);
	return 0;
}

/*
 * Chunked request bodies: "<hex size>[;ext]\r\n<data>\r\n" ... "0\r\n"
 * [trailers] "\r\n". Data goes to c->body; the request is dispatched when
 * the last chunk and its trailer section end.
 */
enum { CK_SIZE, CK_EXT, CK_DATA, CK_DATA_END, CK_TRAILER, CK_TRAILER_LINE, CK_DONE };

static void
dechunk(struct conn *c, const unsigned char *p, size_t len)
{
	size_t i = 0;

	while (i < len && c->chunk_state != CK_DONE && !c->bad_body) {
		unsigned char ch = p[i];

		switch (c->chunk_state) {
		case CK_SIZE:
		case CK_EXT:
			i++;
			if (ch == '\n') {
				c->chunk_state = c->chunk_left > 0 ? CK_DATA : CK_TRAILER;
				break;
			}
			if (c->chunk_state == CK_EXT || ch == '\r')
				break;
			if (ch == ';') {
				c->chunk_state = CK_EXT;
				break;
			}
			if (c->chunk_left >> 60 != 0 || !((ch >= '0' && ch <= '9') ||
			    ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f'))) {
				c->bad_body = true;
				break;
			}
			c->chunk_left = c->chunk_left * 16 + (uint64_t)(ch <= '9' ? ch - '0' :
			    (ch | 0x20) - 'a' + 10);
			break;
		case CK_DATA: {
			size_t n = (size_t)KC_MIN((uint64_t)(len - i), c->chunk_left);

			if (!c->too_large && kc_buf_append(&c->body, p + i, n) < 0) {
				kc_buf_init(&c->body, c->http->body_max);
				c->too_large = true;
			}
			i += n;
			c->chunk_left -= n;
			if (c->chunk_left == 0)
				c->chunk_state = CK_DATA_END;
			break;
		}
		case CK_DATA_END:
			i++;
			if (ch == '\n')
				c->chunk_state = CK_SIZE;
			else if (ch != '\r')
				c->bad_body = true;
			break;
		case CK_TRAILER:
		case CK_TRAILER_LINE:
			i++;
			if (ch == '\n')
				c->chunk_state = c->chunk_state == CK_TRAILER ? CK_DONE : CK_TRAILER;
			else if (ch != '\r')
				c->chunk_state = CK_TRAILER_LINE;
			break;
		}
	}
	if ((c->chunk_state == CK_DONE || c->bad_body) && !c->dispatched)
		dispatch(c);
}

static int	write_headers(struct conn *, struct lws *);

/*
 * A WebSocket upgrade (pods/exec), while libwebsockets still holds the
 * headers: read as begin_request() reads a request, answered by the
 * first started plug-in with an upgrade hook. 0 lets libwebsockets
 * finish the handshake, with the session on the connection's opaque
 * pointer; 1 after writing the refusal; -1 hangs up.
 */
static int
upgrade_request(struct dc_http *h, struct lws *wsi)
{
	struct conn conn = { .http = h, .wsi = wsi }, *c = &conn;
	const struct dc_plugin *up = NULL;
	void *s = NULL;
	char *uri = NULL, *proto;
	int ulen = 0, r;

	for (size_t i = 0; up == NULL && i < dc_nplugins; i++)
		if (dc_plugins[i]->upgrade != NULL && plugin_state(h->dc, dc_plugins[i]) != NULL)
			up = dc_plugins[i];
	if (up == NULL)
		return -1;

	/* No per-session data is allocated yet: the request lives here. */
	conn_reset(c);
	c->active = true;
	c->req.method = lws_method(lws_http_get_uri_and_method(wsi, &uri, &ulen));
	if (uri == NULL || ulen < 0 || (c->req.path = kc_strndup(uri, (size_t)ulen)) == NULL ||
	    read_params(wsi, &c->req) < 0) {
		conn_reset(c);
		return -1;
	}
	c->req.accept = hdr_dup(wsi, WSI_TOKEN_HTTP_ACCEPT);
	c->req.authorization = hdr_dup(wsi, WSI_TOKEN_HTTP_AUTHORIZATION);
	c->req.user_agent = hdr_dup(wsi, WSI_TOKEN_HTTP_USER_AGENT);
	c->req.imp_user = custom_dup(wsi, "impersonate-user:");
	imp_groups(wsi, &c->req);
	c->req.imp_uid = custom_dup(wsi, "impersonate-uid:");
	proto = hdr_dup(wsi, WSI_TOKEN_PROTOCOL);
	r = up->upgrade(h->dc, &c->req, proto, &c->resp, &s);
	kc_free(proto);
	if (r >= 0)
		(void)plugins_after(h->dc, &c->req, &c->resp);
	if (r == 0) {
		kc_guard_lws_release(h->guard, wsi);
		lws_set_opaque_user_data(wsi, s);
		conn_reset(c);
		return 0;
	}
	if (r < 0)
		errors_internal(&c->resp, r);
	c->dispatched = true;
	r = write_headers(c, wsi);
	conn_reset(c);
	return r < 0 ? -1 : 1;
}

/*
 * Replies
 */

static int
write_headers(struct conn *c, struct lws *wsi)
{
	unsigned char buf[LWS_PRE + HEADERS_MAX], *start = buf + LWS_PRE, *p = start;
	unsigned char *end = buf + sizeof(buf) - 1;
	const char *ct = c->resp.content_type != NULL ? c->resp.content_type :
	    "application/json";
	static const char nocache[] = "no-cache, private";

	if (lws_add_http_header_status(wsi, (unsigned int)c->resp.status, &p, end) ||
	    lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE,
	    (const unsigned char *)ct, (int)strlen(ct), &p, end) ||
	    lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CACHE_CONTROL,
	    (const unsigned char *)nocache, (int)sizeof(nocache) - 1, &p, end))
		return -1;
	for (size_t i = 0; i < c->resp.nheaders; i++) {
		char name[64];
		size_t n = 0;

		for (const char *s = c->resp.headers[i].name; *s != '\0' && n + 2 < sizeof(name);
		    s++)
			name[n++] = (char)(*s >= 'A' && *s <= 'Z' ? *s + 32 : *s);
		name[n++] = ':';
		name[n] = '\0';
		if (lws_add_http_header_by_name(wsi, (const unsigned char *)name,
		    (const unsigned char *)c->resp.headers[i].value,
		    (int)strlen(c->resp.headers[i].value), &p, end))
			return -1;
	}
	if (c->resp.stream != NULL) {
		if (lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING,
		    (const unsigned char *)"chunked", 7, &p, end))
			return -1;
	} else if (lws_add_http_header_content_length(wsi, c->resp.body.len, &p, end))
		return -1;
	if (c->close_after && lws_add_http_header_by_token(wsi, WSI_TOKEN_CONNECTION,
	    (const unsigned char *)"close", 5, &p, end))
		return -1;
	/*
	 * A reply that fits in one write goes out with its headers: one TLS
	 * record, one send() and no second trip through the loop (make bench:
	 * a fifth less server CPU per GET, and write acknowledgements no
	 * longer queue behind watch fan-out). Returns 1 when it did.
	 */
	if (c->resp.stream == NULL && c->resp.body.len > 0 &&
	    (size_t)(p - start) + 2 + c->resp.body.len <= WRITE_MAX) {
		unsigned char *out = c->http->scratch + LWS_PRE;
		size_t hl, n;

		if (lws_finalize_http_header(wsi, &p, end))
			return -1;
		hl = (size_t)(p - start);
		n = hl + c->resp.body.len;
		memcpy(out, start, hl);
		memcpy(out + hl, c->resp.body.data, c->resp.body.len);
		if (lws_write(wsi, out, n, LWS_WRITE_HTTP_FINAL) != (int)n)
			return -1;
		c->sent = c->resp.body.len;
		c->headers_sent = true;
		return 1;
	}
	if (lws_finalize_write_http_header(wsi, start, &p, end))
		return -1;
	c->headers_sent = true;
	return 0;
}

static int
complete(struct conn *c, struct lws *wsi)
{
	bool close_after = c->close_after;

	conn_reset(c);
	if (close_after)
		return -1;
	rx_pause(c, false);
	kc_guard_lws_phase(((struct dc_http *)lws_context_user(lws_get_context(wsi)))->guard,
	    wsi, KC_GUARD_REQUEST);
	return lws_http_transaction_completed(wsi) ? -1 : 0;
}

/*
 * Writes what the stream has queued: as many events as fit in WRITE_MAX
 * bytes go out in one write, each as its own HTTP chunk (an event larger
 * than that is split over several writes). One event per writable
 * callback let a watch fall behind whenever the loop had other work (a
 * kubelet tick, a burst of requests): its backlog then overflowed, and
 * the client watched again from an older resourceVersion, which cost
 * both sides far more.
 */
static int
write_stream_once(struct conn *c, struct lws *wsi, bool *ret_more)
{
	struct dc_http *h = c->http;
	unsigned char *start = h->scratch + LWS_PRE;
	size_t len = 0, n, hl;
	bool end = false;

	for (;;) {
		if (c->chunk == NULL) {
			c->chunk = c->resp.stream->ops->pull(c->resp.stream, &end);
			c->chunk_off = 0;
			if (c->chunk == NULL)
				break;
			if (c->chunk->len == 0) {	/* would read as the end */
				chunk_unref(c->chunk);
				c->chunk = NULL;
				continue;
			}
		}
		/* An HTTP chunk: hex size, CRLF, data, CRLF (at most 16 + 2 of framing). */
		if (len + 16 + 2 >= WRITE_MAX)
			break;
		n = KC_MIN(c->chunk->len - c->chunk_off, (size_t)WRITE_MAX - len - 16 - 2);
		hl = (size_t)snprintf((char *)start + len, 16, "%zx\r\n", n);
		memcpy(start + len + hl, c->chunk->data + c->chunk_off, n);
		memcpy(start + len + hl + n, "\r\n", 2);
		len += hl + n + 2;
		c->chunk_off += n;
		if (c->chunk_off < c->chunk->len)
			break;		/* the buffer is full */
		chunk_unref(c->chunk);
		c->chunk = NULL;
	}
	if (c->chunk == NULL && end) {
		/* The last chunk (the stream ended), after what is queued. */
		memcpy(start + len, "0\r\n\r\n", 5);
		len += 5;
		if (lws_write(wsi, start, len, LWS_WRITE_HTTP_FINAL) != (int)len)
			return -1;
		return complete(c, wsi);
	}
	if (len == 0) {
		rx_pause(c, true);
		return 0;	/* wait for wake() */
	}
	if (lws_write(wsi, start, len, LWS_WRITE_HTTP) != (int)len)
		return -1;
	*ret_more = true;
	return 0;
}

/*
 * Up to STREAM_WRITES_MAX writes while the socket takes them, then
 * another writable callback: a watch keeps up with a burst of events
 * without keeping the loop from its other connections.
 */
static int
write_stream(struct conn *c, struct lws *wsi)
{
	bool more = true;
	int r = 0;

	for (int i = 0; i < STREAM_WRITES_MAX && more; i++) {
		more = false;
		if ((r = write_stream_once(c, wsi, &more)) != 0 || !more)
			return r;
		if (lws_send_pipe_choked(wsi))
			break;
	}
	/* Once more: lws may hold part of it back, and more may be queued. */
	lws_callback_on_writable(wsi);
	return 0;
}

static int
write_body(struct conn *c, struct lws *wsi)
{
	struct dc_http *h = c->http;
	unsigned char *start = h->scratch + LWS_PRE;
	size_t left = c->resp.body.len - c->sent, n = KC_MIN(left, (size_t)WRITE_MAX);
	bool last = n == left;

	if (left == 0)
		return complete(c, wsi);
	memcpy(start, c->resp.body.data + c->sent, n);
	if (lws_write(wsi, start, n, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) != (int)n)
		return -1;
	c->sent += n;
	if (last)
		return complete(c, wsi);
	lws_callback_on_writable(wsi);
	return 0;
}

static int
writable(struct conn *c, struct lws *wsi)
{
	if (c->peer_gone)
		return -1;
	if (!c->active || !c->dispatched || c->hold.armed)
		return 0;
	/* Durable before acknowledged: wait for the end-of-turn commit. */
	if (c->http->dc->hooks.flush != NULL) {
		int f = c->http->dc->hooks.flush(c->http->dc, false);

		if (f < 0)
			return -1;
		if (f > 0) {
			lws_callback_on_writable(wsi);
			return 0;
		}
	}
	if (!c->headers_sent) {
		int r = write_headers(c, wsi);

		if (r < 0)
			return -1;
		if (r > 0 || (c->resp.stream == NULL && c->resp.body.len == 0))
			return complete(c, wsi);
		lws_callback_on_writable(wsi);
		return 0;
	}
	if (c->resp.stream != NULL)
		return write_stream(c, wsi);
	return write_body(c, wsi);
}

static int
http_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
    size_t len)
{
	struct conn *c = user;
	struct dc_http *h = lws_context_user(lws_get_context(wsi));

	if (kc_guard_lws_event(h->guard, wsi, (int)reason) < 0)
		return -1;	/* the guard closed it: nothing more */
	switch (reason) {
	case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED:
	case LWS_CALLBACK_WSI_DESTROY:
		return 0;
	case LWS_CALLBACK_HTTP:
		if (c == NULL)
			return -1;
		c->http = h;
		c->wsi = wsi;
		if (begin_request(c, wsi) < 0) {
			conn_reset(c);
			return -1;
		}
		return 0;
	case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
		/* WebSocket upgrades go to a plug-in; others (h2c) hang up. */
		if (in == NULL || strcmp(in, "websocket") != 0)
			return -1;
		return upgrade_request(h, wsi);
	case LWS_CALLBACK_HTTP_BODY:
		if (c != NULL && c->active && !c->dispatched && c->chunked) {
			dechunk(c, in, len);
			return 0;
		}
		if (c == NULL || !c->active || c->dispatched || c->too_large)
			return 0;
		if (kc_buf_append(&c->body, in, len) < 0) {
			kc_buf_init(&c->body, h->body_max);
			c->too_large = true;
		}
		return 0;
	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
		if (c != NULL && c->active && !c->dispatched)
			dispatch(c);
		return 0;
	case LWS_CALLBACK_HTTP_WRITEABLE:
		if (c == NULL)
			return 0;
		return writable(c, wsi);
	case LWS_CALLBACK_CLOSED_HTTP:
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
		if (c != NULL && c->http != NULL)
			conn_reset(c);
		return 0;
	default:
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}

static int
fd_cb(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
    size_t len)
{
	struct fdwatch *fw = lws_get_opaque_user_data(wsi);

	(void)user;
	(void)in;
	(void)len;
	switch (reason) {
	case LWS_CALLBACK_RAW_RX_FILE:
		if (fw != NULL)
			fw->fn(fw->arg);
		return 0;
	case LWS_CALLBACK_RAW_CLOSE_FILE:
		if (fw != NULL)
			fw->wsi = NULL;
		return 0;
	default:
		return 0;
	}
}

static const struct lws_protocols protocols[] = {
	{ .name = "http", .callback = http_cb, .per_session_data_size = sizeof(struct conn) },
	{ .name = "dc-fd", .callback = fd_cb },
};

/* Ours, then every plug-in's WebSocket protocols, then the terminator. */
static int
protocols_fill(struct dc_http *h)
{
	size_t n = 0;

	for (size_t i = 0; i < KC_ARRAY_SIZE(protocols); i++)
		h->protos[n++] = protocols[i];
	for (size_t i = 0; i < dc_nplugins; i++) {
		const struct lws_protocols *p = dc_plugins[i]->ws_protocols;

		for (; p != NULL && p->name != NULL; p++) {
			if (n == PROTOS_MAX)
				return -E2BIG;
			h->protos[n++] = *p;
		}
	}
	memset(&h->protos[n], 0, sizeof(h->protos[n]));
	return 0;
}

static void
lws_logger(int level, const char *line)
{
	char buf[512];
	size_t n = kc_strlcpy(buf, line, sizeof(buf));

	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	kc_log(level == LLL_ERR ? KC_LOG_WARN : KC_LOG_DEBUG,
	    &(struct kc_log_ctx){ .action = "libwebsockets" }, "%s", buf);
}

int
http_start(struct dc *dc, const struct dc_http_opts *o, struct dc_http **ret,
    struct kc_status *st)
{
	struct lws_context_creation_info info;
	struct dc_http *h;
	const char *iface = o->host;
	bool v6 = o->host != NULL && strchr(o->host, ':') != NULL;

	if ((h = kc_calloc(1, sizeof(*h))) == NULL)
		return -ENOMEM;
	h->dc = dc;

	h->body_max = o->body_max > 0 ? o->body_max : DC_BODY_MAX;
	if (protocols_fill(h) < 0) {
		kc_free(h);
		return kc_status_set(st, KC_ECONFIG, "more than %d WebSocket protocols",
		    PROTOS_MAX);
	}
	lws_set_log_level(LLL_ERR, lws_logger);
	if (iface != NULL && (strcmp(iface, "localhost") == 0))
		iface = "127.0.0.1";
	if (iface != NULL && (strcmp(iface, "0.0.0.0") == 0 || iface[0] == '\0'))
		iface = NULL;
	memset(&info, 0, sizeof(info));
	info.port = o->port;
	info.iface = iface;
	info.protocols = h->protos;
	info.user = h;
	info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT |
	    LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
	if (!v6 && iface != NULL)
		info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
	info.server_ssl_cert_mem = o->cert_pem;
	info.server_ssl_cert_mem_len = (unsigned int)strlen(o->cert_pem);
	info.server_ssl_private_key_mem = o->key_pem;
	info.server_ssl_private_key_mem_len = (unsigned int)strlen(o->key_pem);
	info.alpn = "http/1.1";
	info.max_http_header_data = 32768;
	/*
	 * A header table is held only while a request's headers arrive
	 * (then released, watches included); a connection that gets none
	 * is not read at all. So slow or idle clients must not be able to
	 * hold them all: many tables (allocated as used), and at most
	 * timeout_secs_ah_idle for a request's headers.
	 */
	info.max_http_header_pool = DC_CONNS_MAX;
	info.pt_serv_buf_size = 64 * 1024;
	/* libwebsockets' own timeouts after the guard's, which come first. */
	info.keepalive_timeout = DC_KEEPALIVE_S + 5;
	info.timeout_secs = 60;
	info.timeout_secs_ah_idle = DC_REQUEST_S + 5;
	info.server_string = "trainyard-devcluster";
	info.vhost_name = "devcluster";
	if ((h->ctx = lws_create_context(&info)) == NULL) {
		kc_free(h);
		return kc_status_set(st, KC_ECONFIG, "cannot listen on %s:%d (address in use, "
		    "or the certificate was refused)", o->host != NULL ? o->host : "*", o->port);
	}
	h->vh = lws_get_vhost_by_name(h->ctx, "devcluster");
	if (h->vh == NULL || (h->port = lws_get_vhost_listen_port(h->vh)) <= 0 ||
	    kc_guard_lws_new(h->ctx, &(struct kc_guard_opts){
		.max_conns = DC_CONNS_MAX,
		.request_ms = DC_REQUEST_S * 1000,
		.idle_ms = DC_KEEPALIVE_S * 1000,
		.body_ms = DC_BODY_S * 1000,
		.body_budget = SIZE_MAX,	/* each body is bounded by body_max */
	    }, &h->guard) < 0) {
		lws_context_destroy(h->ctx);
		kc_free(h);
		return kc_status_set(st, KC_ECONFIG, "the listening port is unknown");
	}
	dc->http = h;
	http_reschedule(dc);
	*ret = h;
	return 0;
}

int
http_port(const struct dc_http *h)
{
	return h->port;
}

int
http_watch_fd(struct dc_http *h, int fd, void (*fn)(void *), void *arg)
{
	struct fdwatch *fw;
	lws_sock_file_fd_type u;

	if (h->nfds == FDS_MAX)
		return -E2BIG;
	fw = &h->fds[h->nfds];
	fw->fd = fd;
	fw->fn = fn;
	fw->arg = arg;
	u.filefd = fd;
	fw->wsi = lws_adopt_descriptor_vhost(h->vh, LWS_ADOPT_RAW_FILE_DESC, u, "dc-fd",
	    NULL);
	if (fw->wsi == NULL)
		return -EIO;
	lws_set_opaque_user_data(fw->wsi, fw);
	h->nfds++;
	return 0;
}

int
http_run(struct dc_http *h)
{
	while (!h->stop) {
		if (lws_service(h->ctx, 0) < 0)
			return -EIO;
		/* Group commit: this turn's writes, before the next turn's replies. */
		if (h->dc->hooks.flush != NULL)
			(void)h->dc->hooks.flush(h->dc, true);
	}
	return 0;
}

void
http_stop(struct dc_http *h)
{
	h->stop = true;
	lws_cancel_service(h->ctx);
}

/* Services the loop until every stream has finished or 'ms' passed. */
void
http_drain(struct dc_http *h, uint64_t ms)
{
	uint64_t until = kc_clock_now_ms() + ms;

	while (watchhub_count(h->dc->hub) > 0 && kc_clock_now_ms() < until) {
		if (lws_service(h->ctx, 0) < 0)
			break;
		if (h->dc->hooks.flush != NULL)
			(void)h->dc->hooks.flush(h->dc, true);
	}
}

struct dc_http *
http_free(struct dc_http *h)
{
	if (h == NULL)
		return NULL;
	lws_sul_cancel(&h->sul);
	for (size_t i = 0; i < h->nfds; i++)
		if (h->fds[i].wsi != NULL)
			lws_set_opaque_user_data(h->fds[i].wsi, NULL);
	if (h->ctx != NULL)
		lws_context_destroy(h->ctx);
	h->guard = kc_guard_lws_free(h->guard);
	if (h->dc->http == h)
		h->dc->http = NULL;
	kc_free(h);
	return NULL;
}

/*
 * A server's connection guard: deadlines for each phase of an HTTP
 * connection, a connection cap that makes room instead of refusing, and
 * counters of what was dropped and why. What net/http's ReadHeader-
 * Timeout, ReadTimeout, IdleTimeout and a bounded listener give a Go
 * server, for our libwebsockets servers (the controller's probes,
 * metrics and webhook listeners, the devcluster's API).
 *
 * The guard's core knows nothing of libwebsockets: a connection is an
 * opaque handle, and closing one is the server's kill function;
 * kc_guard_lws_*() (below) is that for a libwebsockets server. The server reports each
 * connection's phase as it changes:
 *
 *	REQUEST	 waiting for a request line and its headers: a new
 *		 connection (TLS handshake included) has request_ms, a
 *		 keep-alive connection between requests idle_ms;
 *	BODY	 reading a request body: body_ms from its headers;
 *	ANSWER	 answering (working, waiting for the API server, writing to
 *		 a peer that reads slowly): answer_ms, or no deadline when 0;
 *	STREAM	 a long answer (a watch, an upgraded connection): no
 *		 deadline, never evicted.
 *
 * A deadline counts from the phase's start and is not pushed back by
 * progress: a peer that sends one byte a second gets no more time than
 * one that sends nothing.
 *
 * Each phase keeps its connections in a list in the order they entered
 * it; as every connection of a list has the same timeout, the expired
 * ones are at the heads, and kc_guard_sweep() looks at no other. When a
 * new connection would pass max_conns, the guard closes one to make room:
 * the connection idle the longest between requests, else the one that
 * has waited the longest for its request or its body (the slowest); a
 * connection being answered or streamed is never chosen, and when every
 * one is, the newcomer is refused. Request bodies buffered by all
 * connections together are bounded the same way (kc_guard_body()).
 *
 * Time comes from kc_clock_now_ms(). Not thread-safe, except
 * kc_guard_stats(): the server's loop thread calls everything else.
 *
 *	kc_guard_new(&(struct kc_guard_opts){ .max_conns = 1024,
 *	    .request_ms = 5000, ..., .kill = close_wsi, .arg = srv }, &g);
 *	accepted:	c = kc_guard_open(g, wsi);	(NULL: refused, closed)
 *	headers read:	kc_guard_phase(g, c, KC_GUARD_BODY or ANSWER);
 *	answered:	kc_guard_phase(g, c, KC_GUARD_REQUEST);  (keep-alive)
 *	closed:		kc_guard_close(g, c);
 *	timer:		kc_guard_sweep(g); then again at kc_guard_next_ms(g)
 */
#ifndef KC_CONNGUARD_H
#define KC_CONNGUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kc/macro.h>

enum kc_guard_phase {
	KC_GUARD_REQUEST,
	KC_GUARD_BODY,
	KC_GUARD_ANSWER,
	KC_GUARD_STREAM,
};

/* Why the guard, or the peer's bytes, ended a connection. */
enum kc_guard_drop {
	KC_GUARD_DROP_HEADERS,		/* no complete request in request_ms */
	KC_GUARD_DROP_IDLE,		/* keep-alive: no next request in idle_ms */
	KC_GUARD_DROP_BODY,		/* the body took longer than body_ms */
	KC_GUARD_DROP_ANSWER,		/* the answer took longer than answer_ms */
	KC_GUARD_DROP_EVICTED,		/* closed to make room for a newcomer */
	KC_GUARD_DROP_REFUSED,		/* a newcomer when every slot was busy */
	/*
	 * Closed before it sent a complete first request, not by the
	 * guard: bytes that are not HTTP (or not TLS), or a peer that hung
	 * up early.
	 */
	KC_GUARD_DROP_MALFORMED,
	KC_GUARD_DROP_COUNT
};

struct kc_guard_conn;

/* Closes 'handle' (asynchronously is fine); the server later calls kc_guard_close(). */
typedef void kc_guard_kill_fn(void *arg, void *handle);

struct kc_guard_opts {
	unsigned		 max_conns;	/* 0: 1024 */
	uint32_t		 request_ms;	/* 0: 5000 */
	uint32_t		 idle_ms;	/* 0: 30000 */
	uint32_t		 body_ms;	/* 0: 10000 */
	uint32_t		 answer_ms;	/* 0: none */
	size_t			 body_budget;	/* 0: 64 MiB, for all bodies together */
	kc_guard_kill_fn	*kill;		/* required; kc_guard_lws_new() sets its own */
	void			*arg;
};

struct kc_guard_stats {
	uint64_t	 open;			/* connections now */
	uint64_t	 accepted;		/* since start */
	uint64_t	 dropped[KC_GUARD_DROP_COUNT];
	uint64_t	 body_bytes;		/* request bodies buffered now */
};

struct kc_guard;

int	kc_guard_new(const struct kc_guard_opts *, struct kc_guard **) _must_check_;
/* Frees the guard and every connection it still tracks (without killing them). */
struct kc_guard *kc_guard_free(struct kc_guard *);

KC_DEFINE_CLEANUP(struct kc_guard, kc_guard_free)

/*
 * A connection was accepted: tracked in phase REQUEST. Makes room first
 * when max_conns are open (see above). NULL when there was no room, or
 * no memory: the newcomer was killed and counted as refused.
 */
struct kc_guard_conn *kc_guard_open(struct kc_guard *, void *handle);

/* The connection's phase changed; the deadline restarts. */
void	kc_guard_phase(struct kc_guard *, struct kc_guard_conn *, enum kc_guard_phase);

/*
 * Body bytes the server buffered (n > 0) or freed (n < 0: all of them
 * when the request ends, see kc_guard_phase()). false when 'n' more do
 * not fit in body_budget even after the slowest other bodies were
 * closed: the server refuses this request (413) and closes.
 */
bool	kc_guard_body(struct kc_guard *, struct kc_guard_conn *, size_t n);

/* Whether the guard killed it: the server answers it no more. NULL: false. */
bool	kc_guard_killed(const struct kc_guard_conn *);

/*
 * The connection is gone (its close callback). Counts it as malformed
 * when it never finished a first request and the guard did not kill it.
 * NULL is fine.
 */
void	kc_guard_close(struct kc_guard *, struct kc_guard_conn *);

/*
 * Kills every connection whose deadline passed, and again every one
 * killed 200 ms ago or more that is not closed yet (an asynchronous
 * close can be undone by a timeout set after it).
 */
void	kc_guard_sweep(struct kc_guard *);

/* When the next deadline falls (kc_clock_now_ms() time), or 0 when none is set. */
uint64_t kc_guard_next_ms(const struct kc_guard *);

/* Any thread. */
void	kc_guard_stats(const struct kc_guard *, struct kc_guard_stats *);

/* "timeout_headers", ..., "malformed": the metrics' reason label. */
const char *kc_guard_drop_name(enum kc_guard_drop);

/*
 * The guard of a libwebsockets server (the controller's listeners, the
 * devcluster's front), made once its context exists and freed after
 * lws_context_destroy(). Its kill is an asynchronous close; its sweep an
 * lws timer on the server thread, set for the next deadline.
 * kc_guard_lws_event() goes first in the protocol's callback: it tracks
 * each accepted connection (on its opaque user data) from LWS_CALLBACK_-
 * SERVER_NEW_CLIENT_INSTANTIATED to LWS_CALLBACK_WSI_DESTROY and moves it
 * to ANSWER at LWS_CALLBACK_HTTP and _HTTP_BODY_COMPLETION; it returns -1
 * when the guard killed the connection (the callback then returns -1 at
 * once). The server reports the rest (BODY when it reads one, REQUEST
 * once the answer is out and the connection stays open, STREAM), and
 * kc_guard_lws_release() lets go of a connection whose opaque pointer
 * another owner takes (a WebSocket upgrade). Server thread only, except
 * kc_guard_lws_stats(). The callbacks' reasons are passed as int: no
 * libwebsockets header here.
 */
struct lws;
struct lws_context;
struct kc_guard_lws;

int	kc_guard_lws_new(struct lws_context *ctx, const struct kc_guard_opts *opts,
	    struct kc_guard_lws **ret) _must_check_;
struct kc_guard_lws *kc_guard_lws_free(struct kc_guard_lws *);
int	kc_guard_lws_event(struct kc_guard_lws *, struct lws *wsi, int reason);
void	kc_guard_lws_phase(struct kc_guard_lws *, struct lws *wsi, enum kc_guard_phase);
/* kc_guard_body() for the connection of 'wsi'; true without a guard. */
bool	kc_guard_lws_body(struct kc_guard_lws *, struct lws *wsi, size_t n);
void	kc_guard_lws_release(struct kc_guard_lws *, struct lws *wsi);
/* All zero for NULL. */
void	kc_guard_lws_stats(const struct kc_guard_lws *, struct kc_guard_stats *);

#endif

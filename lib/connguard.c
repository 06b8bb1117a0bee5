/*
 * connguard.c: deadlines and a connection cap for a server's
 * connections (kc/connguard.h).
 *
 * A connection is on one list: its phase's (REQUEST is two lists, new
 * connections and keep-alive ones, as their timeouts differ), or none
 * once the guard killed it and waits for its close. Each list is in the
 * order its connections entered it and they share a timeout, so the
 * expired ones and the eviction candidates are at the heads.
 *
 * The libwebsockets side (kc_guard_lws_*) is here too, so the programs'
 * servers share one copy of it: a connection's guard entry rides on its
 * opaque pointer, a kill is an asynchronous close, the sweep an lws
 * timer on the server thread set for the next deadline.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/queue.h>

#include <libwebsockets.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/connguard.h>

enum list {
	L_NEW,		/* REQUEST, no request yet */
	L_IDLE,		/* REQUEST, keep-alive between requests */
	L_BODY,
	L_ANSWER,
	L_STREAM,
	L_COUNT,
	L_NONE = L_COUNT,	/* killed, waiting for its close */
};

/*
 * A killed connection not closed after this long is killed again: an
 * asynchronous close (a libwebsockets timeout of zero) is undone by any
 * later timeout the server or the library sets on it.
 */
#define REKILL_MS	200

struct kc_guard_conn {
	TAILQ_ENTRY(kc_guard_conn) link;
	void		*handle;
	enum list	 list;
	uint64_t	 since_ms;	/* entered its list */
	size_t		 body;		/* body bytes counted */
	bool		 served;	/* a first request was read */
};
TAILQ_HEAD(conn_list, kc_guard_conn);

struct kc_guard {
	struct kc_guard_opts o;
	uint32_t	 timeout_ms[L_COUNT];	/* 0: none */
	struct conn_list lists[L_COUNT];
	struct conn_list dead;
	unsigned	 nconns;		/* open: on a list or dead */
	size_t		 body_bytes;
	_Atomic uint64_t s_open, s_accepted, s_body;
	_Atomic uint64_t s_dropped[KC_GUARD_DROP_COUNT];
};

static const char *const drop_names[KC_GUARD_DROP_COUNT] = {
	[KC_GUARD_DROP_HEADERS] = "timeout_headers",
	[KC_GUARD_DROP_IDLE] = "timeout_idle",
	[KC_GUARD_DROP_BODY] = "timeout_body",
	[KC_GUARD_DROP_ANSWER] = "timeout_answer",
	[KC_GUARD_DROP_EVICTED] = "evicted",
	[KC_GUARD_DROP_REFUSED] = "refused",
	[KC_GUARD_DROP_MALFORMED] = "malformed",
};

/* The drop a deadline on each list counts as. */
static const enum kc_guard_drop list_drop[L_COUNT] = {
	[L_NEW] = KC_GUARD_DROP_HEADERS,
	[L_IDLE] = KC_GUARD_DROP_IDLE,
	[L_BODY] = KC_GUARD_DROP_BODY,
	[L_ANSWER] = KC_GUARD_DROP_ANSWER,
	[L_STREAM] = KC_GUARD_DROP_ANSWER,	/* never: no deadline */
};

const char *
kc_guard_drop_name(enum kc_guard_drop d)
{
	return (unsigned)d < KC_GUARD_DROP_COUNT ? drop_names[d] : "unknown";
}

int
kc_guard_new(const struct kc_guard_opts *o, struct kc_guard **ret)
{
	struct kc_guard *g;

	*ret = NULL;
	if (o->kill == NULL)
		return -EINVAL;
	if ((g = kc_calloc(1, sizeof(*g))) == NULL)
		return -ENOMEM;
	g->o = *o;
	if (g->o.max_conns == 0)
		g->o.max_conns = 1024;
	if (g->o.request_ms == 0)
		g->o.request_ms = 5000;
	if (g->o.idle_ms == 0)
		g->o.idle_ms = 30000;
	if (g->o.body_ms == 0)
		g->o.body_ms = 10000;
	if (g->o.body_budget == 0)
		g->o.body_budget = (size_t)64 << 20;
	g->timeout_ms[L_NEW] = g->o.request_ms;
	g->timeout_ms[L_IDLE] = g->o.idle_ms;
	g->timeout_ms[L_BODY] = g->o.body_ms;
	g->timeout_ms[L_ANSWER] = g->o.answer_ms;
	g->timeout_ms[L_STREAM] = 0;
	for (size_t i = 0; i < L_COUNT; i++)
		TAILQ_INIT(&g->lists[i]);
	TAILQ_INIT(&g->dead);
	*ret = g;
	return 0;
}

struct kc_guard *
kc_guard_free(struct kc_guard *g)
{
	struct kc_guard_conn *c;

	if (g == NULL)
		return NULL;
	for (size_t i = 0; i <= L_COUNT; i++) {
		struct conn_list *l = i < L_COUNT ? &g->lists[i] : &g->dead;

		while ((c = TAILQ_FIRST(l)) != NULL) {
			TAILQ_REMOVE(l, c, link);
			kc_free(c);
		}
	}
	kc_free(g);
	return NULL;
}

static struct conn_list *
list_of(struct kc_guard *g, const struct kc_guard_conn *c)
{
	return c->list == L_NONE ? &g->dead : &g->lists[c->list];
}

static void
move(struct kc_guard *g, struct kc_guard_conn *c, enum list to)
{
	TAILQ_REMOVE(list_of(g, c), c, link);
	c->list = to;
	c->since_ms = kc_clock_now_ms();
	TAILQ_INSERT_TAIL(list_of(g, c), c, link);
}

static void
body_release(struct kc_guard *g, struct kc_guard_conn *c)
{
	g->body_bytes -= c->body;
	c->body = 0;
	atomic_store(&g->s_body, g->body_bytes);
}

/* Closes 'c' for 'why': off its list until its close comes. */
static void
drop(struct kc_guard *g, struct kc_guard_conn *c, enum kc_guard_drop why)
{
	body_release(g, c);
	move(g, c, L_NONE);
	atomic_fetch_add(&g->s_dropped[why], 1);
	g->o.kill(g->o.arg, c->handle);
}

/*
 * The connection to close to make room: the longest idle, else the one
 * that has waited the longest for its request or its body. NULL when all
 * are being answered.
 */
static struct kc_guard_conn *
victim(struct kc_guard *g, const struct kc_guard_conn *self)
{
	static const enum list order[] = { L_NEW, L_BODY };
	struct kc_guard_conn *c, *best = NULL;

	TAILQ_FOREACH(c, &g->lists[L_IDLE], link)
		if (c != self)
			return c;
	for (size_t i = 0; i < KC_ARRAY_SIZE(order); i++)
		TAILQ_FOREACH(c, &g->lists[order[i]], link)
			if (c != self) {
				if (best == NULL || c->since_ms < best->since_ms)
					best = c;
				break;
			}
	return best;
}

struct kc_guard_conn *
kc_guard_open(struct kc_guard *g, void *handle)
{
	struct kc_guard_conn *c, *v;

	atomic_fetch_add(&g->s_accepted, 1);
	if (g->nconns >= g->o.max_conns) {
		if ((v = victim(g, NULL)) == NULL) {
			atomic_fetch_add(&g->s_dropped[KC_GUARD_DROP_REFUSED], 1);
			g->o.kill(g->o.arg, handle);
			return NULL;
		}
		drop(g, v, KC_GUARD_DROP_EVICTED);
	}
	if ((c = kc_calloc(1, sizeof(*c))) == NULL) {
		atomic_fetch_add(&g->s_dropped[KC_GUARD_DROP_REFUSED], 1);
		g->o.kill(g->o.arg, handle);
		return NULL;
	}
	c->handle = handle;
	c->list = L_NEW;
	c->since_ms = kc_clock_now_ms();
	TAILQ_INSERT_TAIL(&g->lists[L_NEW], c, link);
	g->nconns++;
	atomic_store(&g->s_open, g->nconns);
	return c;
}

void
kc_guard_phase(struct kc_guard *g, struct kc_guard_conn *c, enum kc_guard_phase p)
{
	enum list to;

	if (c == NULL || c->list == L_NONE)
		return;
	switch (p) {
	case KC_GUARD_REQUEST:
		to = L_IDLE;
		body_release(g, c);
		break;
	case KC_GUARD_BODY:
		to = L_BODY;
		c->served = true;
		break;
	case KC_GUARD_ANSWER:
		to = L_ANSWER;
		c->served = true;
		break;
	case KC_GUARD_STREAM:
	default:
		to = L_STREAM;
		c->served = true;
		break;
	}
	move(g, c, to);
}

bool
kc_guard_body(struct kc_guard *g, struct kc_guard_conn *c, size_t n)
{
	struct kc_guard_conn *v;

	if (c == NULL || c->list == L_NONE)
		return false;
	while (g->body_bytes + n > g->o.body_budget) {
		/* The slowest other body makes room, oldest first. */
		TAILQ_FOREACH(v, &g->lists[L_BODY], link)
			if (v != c && v->body > 0)
				break;
		if (v == NULL)
			return false;
		drop(g, v, KC_GUARD_DROP_EVICTED);
	}
	c->body += n;
	g->body_bytes += n;
	atomic_store(&g->s_body, g->body_bytes);
	return true;
}

bool
kc_guard_killed(const struct kc_guard_conn *c)
{
	return c != NULL && c->list == L_NONE;
}

void
kc_guard_close(struct kc_guard *g, struct kc_guard_conn *c)
{
	if (c == NULL)
		return;
	if (c->list != L_NONE && !c->served)
		atomic_fetch_add(&g->s_dropped[KC_GUARD_DROP_MALFORMED], 1);
	body_release(g, c);
	TAILQ_REMOVE(list_of(g, c), c, link);
	kc_free(c);
	g->nconns--;
	atomic_store(&g->s_open, g->nconns);
}

void
kc_guard_sweep(struct kc_guard *g)
{
	uint64_t now = kc_clock_now_ms();
	struct kc_guard_conn *c;

	while ((c = TAILQ_FIRST(&g->dead)) != NULL && now - c->since_ms >= REKILL_MS) {
		move(g, c, L_NONE);
		g->o.kill(g->o.arg, c->handle);
	}
	for (size_t i = 0; i < L_COUNT; i++) {
		if (g->timeout_ms[i] == 0)
			continue;
		while ((c = TAILQ_FIRST(&g->lists[i])) != NULL &&
		    now - c->since_ms >= g->timeout_ms[i])
			drop(g, c, list_drop[i]);
	}
}

uint64_t
kc_guard_next_ms(const struct kc_guard *g)
{
	const struct kc_guard_conn *c;
	uint64_t next = 0, due;

	for (size_t i = 0; i < L_COUNT; i++) {
		if (g->timeout_ms[i] == 0 || (c = TAILQ_FIRST(&g->lists[i])) == NULL)
			continue;
		due = c->since_ms + g->timeout_ms[i];
		if (next == 0 || due < next)
			next = due;
	}
	if ((c = TAILQ_FIRST(&g->dead)) != NULL &&
	    (next == 0 || c->since_ms + REKILL_MS < next))
		next = c->since_ms + REKILL_MS;
	return next;
}

void
kc_guard_stats(const struct kc_guard *g, struct kc_guard_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->open = atomic_load(&g->s_open);
	s->accepted = atomic_load(&g->s_accepted);
	s->body_bytes = atomic_load(&g->s_body);
	for (size_t i = 0; i < KC_GUARD_DROP_COUNT; i++)
		s->dropped[i] = atomic_load(&g->s_dropped[i]);
}

/* ---- the libwebsockets side ---------------------------------------------- */

struct kc_guard_lws {
	struct kc_guard		*g;
	struct lws_context	*ctx;
	lws_sorted_usec_list_t	 sul;
	uint64_t		 due_ms;	/* the sweep's, 0: none set */
};

static void
guard_kill(void *arg, void *handle)
{
	(void)arg;
	lws_set_timeout(handle, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

static void	guard_tick(lws_sorted_usec_list_t *sul);

/* Sets the sweep for the next deadline, unless one as early is set. */
static void
guard_arm(struct kc_guard_lws *mg)
{
	uint64_t next = kc_guard_next_ms(mg->g), now;

	if (next == 0 || (mg->due_ms != 0 && mg->due_ms <= next))
		return;
	now = kc_clock_now_ms();
	mg->due_ms = next;
	lws_sul_schedule(mg->ctx, 0, &mg->sul, guard_tick,
	    (lws_usec_t)(next > now ? next - now : 0) * LWS_US_PER_MS);
}

static void
guard_tick(lws_sorted_usec_list_t *sul)
{
	struct kc_guard_lws *mg = lws_container_of(sul, struct kc_guard_lws, sul);

	mg->due_ms = 0;
	kc_guard_sweep(mg->g);
	guard_arm(mg);
}

int
kc_guard_lws_new(struct lws_context *ctx, const struct kc_guard_opts *opts,
    struct kc_guard_lws **ret)
{
	struct kc_guard_lws *mg;
	struct kc_guard_opts o = *opts;
	int r;

	*ret = NULL;
	if ((mg = kc_calloc(1, sizeof(*mg))) == NULL)
		return -ENOMEM;
	o.kill = guard_kill;
	o.arg = mg;
	if ((r = kc_guard_new(&o, &mg->g)) < 0) {
		kc_free(mg);
		return r;
	}
	mg->ctx = ctx;
	*ret = mg;
	return 0;
}

struct kc_guard_lws *
kc_guard_lws_free(struct kc_guard_lws *mg)
{
	if (mg == NULL)
		return NULL;
	kc_guard_free(mg->g);
	return kc_free(mg);
}

int
kc_guard_lws_event(struct kc_guard_lws *mg, struct lws *wsi, int reason)
{
	struct kc_guard_conn *c;

	if (mg == NULL)
		return 0;
	switch (reason) {
	case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED:
		if ((c = kc_guard_open(mg->g, wsi)) != NULL)
			lws_set_opaque_user_data(wsi, c);
		guard_arm(mg);
		break;
	case LWS_CALLBACK_WSI_DESTROY:
		if ((c = lws_get_opaque_user_data(wsi)) != NULL) {
			lws_set_opaque_user_data(wsi, NULL);
			kc_guard_close(mg->g, c);
		}
		break;
	case LWS_CALLBACK_HTTP:
	case LWS_CALLBACK_HTTP_BODY:
	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
	case LWS_CALLBACK_HTTP_WRITEABLE:
		if (kc_guard_killed(lws_get_opaque_user_data(wsi)))
			return -1;	/* killed: close now, answer nothing */
		if (reason == LWS_CALLBACK_HTTP || reason == LWS_CALLBACK_HTTP_BODY_COMPLETION)
			kc_guard_lws_phase(mg, wsi, KC_GUARD_ANSWER);
		break;
	default:
		break;
	}
	return 0;
}

void
kc_guard_lws_phase(struct kc_guard_lws *mg, struct lws *wsi, enum kc_guard_phase p)
{
	struct kc_guard_conn *c;

	if (mg == NULL || (c = lws_get_opaque_user_data(wsi)) == NULL)
		return;
	kc_guard_phase(mg->g, c, p);
	guard_arm(mg);
}

bool
kc_guard_lws_body(struct kc_guard_lws *mg, struct lws *wsi, size_t n)
{
	struct kc_guard_conn *c;

	if (mg == NULL || (c = lws_get_opaque_user_data(wsi)) == NULL)
		return true;
	return kc_guard_body(mg->g, c, n);
}

void
kc_guard_lws_release(struct kc_guard_lws *mg, struct lws *wsi)
{
	if (mg == NULL)
		return;
	kc_guard_close(mg->g, lws_get_opaque_user_data(wsi));
	lws_set_opaque_user_data(wsi, NULL);
}

void
kc_guard_lws_stats(const struct kc_guard_lws *mg, struct kc_guard_stats *s)
{
	if (mg == NULL)
		memset(s, 0, sizeof(*s));
	else
		kc_guard_stats(mg->g, s);
}

/*
 * watchhub.c: watch streams.
 *
 * The hub subscribes to storage and sees every committed event. Each
 * watcher hangs on the list of the collection it watches, so an event
 * only visits that collection's watchers. For each, the namespace and
 * the selectors are applied to both the new and the previous state, as
 * kube-apiserver's cacher does:
 *
 *	old matched	new matches	sent
 *	no		yes		ADDED (new state)
 *	yes		yes		MODIFIED (new state)
 *	yes		no		DELETED (previous state, event's rv)
 *
 * A watcher's reply is a sequence of chunks, each one newline-terminated
 * {"type":...,"object":...} line. Chunks are serialized once per event,
 * resource version, event type and format, cached on the event and
 * shared, reference counted, by every watcher that sends them. Only the
 * DC_SER_CACHE_EVENTS events serialized last keep theirs: enough for the
 * watches a burst cuts off (DC_BACKLOG_EVENTS behind) to resume without
 * printing their events again, while the 75 s of history does not hold
 * the text of every version of every object. A watcher
 * queues references in a bounded ring; when a slow client lets it
 * overflow (DC_BACKLOG_EVENTS or DC_BACKLOG_BYTES), the watch ends and
 * the client watches again from the last resourceVersion it saw. The
 * history replayed at the start of a watch does not count against that
 * bound (the history holds those events anyway): a client that fell
 * further behind than the backlog catches up instead of being cut off
 * at once and watching again from the same place, forever.
 *
 * A watch without a resourceVersion (or "0") first sends ADDED for every
 * matching object, from a snapshot taken at the start and serialized
 * lazily as the connection drains. A watch from resourceVersion N
 * replays the collection's history after N; when that history has been
 * compacted, the reply is a single ERROR event (410 Expired) and the
 * stream ends. Watches end cleanly at timeoutSeconds (default 30-60
 * minutes) and at shutdown; those that asked get a BOOKMARK every
 * bookmark period and one 2 s before their timeout.
 *
 * The consumer (http.c) pulls chunks through struct dc_stream and calls
 * release() exactly once; the watcher is freed there.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/selector.h>
#include <kc/str.h>

#include "devcluster.h"

/* A watch that asked for bookmarks gets one this long before its timeout. */
#define WATCH_PRETIMEOUT_MS	2000

enum { EV_ADDED, EV_MODIFIED, EV_DELETED };

static const char *const ev_names[] = { "ADDED", "MODIFIED", "DELETED" };

/* A cached serialization of an event. */
struct dc_ser {
	struct dc_ser		*next;
	const struct dc_rtype	*rt;
	unsigned		 key;
	struct dc_chunk		*chunk;
};

struct dc_watcher {
	struct dc_stream	 stream;	/* first: the consumer's handle */
	TAILQ_ENTRY(dc_watcher)	 link;		/* on the collection's list */
	TAILQ_ENTRY(dc_watcher)	 all;		/* on the hub's list */
	struct dc_hub		*hub;
	struct dc_coll		*coll;
	const struct dc_rtype	*rt;
	char			*ns;
	struct kc_label_selector *ls;
	struct kc_field_selector *fs;
	enum dc_format		 fmt;
	enum dc_include		 include;
	bool			 bookmarks;
	bool			 cols_sent;	/* a Table with columns was queued */
	bool			 init_cols;	/* the first initial event has them */
	bool			 linked;
	bool			 ended;
	struct json_object	**init;		/* the initial snapshot */
	size_t			 ninit;
	size_t			 init_pos;
	struct dc_chunk		**q;		/* queued chunks (a ring) */
	uint32_t		 qcap;
	uint32_t		 qhead;
	uint32_t		 qlen;
	size_t			 qbytes;
	/*
	 * The first 'rlen' queued chunks ('rbytes' bytes) are the history
	 * replayed at the start: they are held by the history anyway, so
	 * they do not count against the backlog, which bounds what a slow
	 * client lets pile up after that.
	 */
	uint32_t		 rlen;
	size_t			 rbytes;
	bool			 replaying;
	struct dc_timer		 timeout;
	struct dc_timer		 pretimeout;	/* the bookmark before the end */
	/*
	 * Events waiting for a conversion webhook, in order: once one
	 * waits, every later event waits behind it (not counted in the
	 * ring; bounded by the same backlog).
	 */
	TAILQ_HEAD(pend_list, pend) pend;
	uint32_t		 npend;
	bool			 conv_wait;	/* pull found nothing converted yet */
	char			 conv_error[1024];	/* of the last failed conversion */
};

struct pend {
	TAILQ_ENTRY(pend)	 link;
	struct dc_event		*ev;		/* a reference */
	int			 type;
	bool			 prev;
};

struct dc_hub {
	struct dc			*dc;
	TAILQ_HEAD(watcher_all, dc_watcher) all;
	size_t				 count;
	uint32_t			 backlog_events;
	size_t				 backlog_bytes;
	uint32_t			 bookmark_ms;
	struct dc_timer			 bookmark;
	/* The events whose serializations are kept (a ring, oldest first). */
	struct dc_event			*cached[DC_SER_CACHE_EVENTS];
	uint32_t			 chead;
	uint32_t			 clen;
};

/*
 * Chunks
 */

struct dc_chunk *
chunk_new(const void *data, size_t len)
{
	struct dc_chunk *c;

	if ((c = kc_malloc(sizeof(*c) + len + 1)) == NULL)
		return NULL;
	c->refs = 1;
	c->len = len;
	memcpy(c->data, data, len);
	c->data[len] = '\0';
	return c;
}

struct dc_chunk *
chunk_ref(struct dc_chunk *c)
{
	c->refs++;
	return c;
}

void
chunk_unref(struct dc_chunk *c)
{
	if (c != NULL && --c->refs == 0)
		kc_free(c);
}

void
watchhub_ser_free(struct dc_ser *s)
{
	while (s != NULL) {
		struct dc_ser *next = s->next;

		chunk_unref(s->chunk);
		kc_free(s);
		s = next;
	}
}

/* {"type":T,"object":O}\n */
static struct dc_chunk *
event_line(const char *type, const struct json_object *obj)
{
	struct kc_buf b;
	struct dc_chunk *c = NULL;

	kc_buf_init(&b, DC_RESP_MAX);
	if (kc_buf_printf(&b, "{\"type\":\"%s\",\"object\":", type) < 0 ||
	    api_serialize(obj, &b) < 0 || kc_buf_puts(&b, "}\n") < 0)
		goto out;
	c = chunk_new(b.data, b.len);
out:
	kc_buf_free(&b);
	return c;
}

/*
 * The view of 'obj' for 'w'. A conversion webhook may be asked (the
 * request or write that caused the event never waits for it): then
 * -EINPROGRESS, and watchhub_conversions_done() wakes the watcher; a
 * failed conversion is KC_EINTERNAL with its message in w->conv_error.
 */
static int
watch_view(const struct dc_watcher *w, const struct json_object *obj,
    struct json_object **ret)
{
	struct dc *dc = w->hub->dc;
	bool allowed = dc->conv_allowed, again = dc->conv_again, pending = dc->conv_pending;
	uint64_t lo = dc->conv_lo, hi = dc->conv_hi;
	char saved[sizeof(dc->conv_error)];
	int r;

	memcpy(saved, dc->conv_error, sizeof(saved));
	dc->conv_allowed = true;
	dc->conv_again = true;
	dc->conv_error[0] = '\0';
	r = api_view(w->rt, obj, ret);
	if (r == KC_EINTERNAL && dc->conv_error[0] != '\0')
		(void)kc_strlcpy(((struct dc_watcher *)(uintptr_t)w)->conv_error,
		    dc->conv_error, sizeof(w->conv_error));
	dc->conv_allowed = allowed;
	dc->conv_again = again;
	dc->conv_pending = pending;
	dc->conv_lo = lo;
	dc->conv_hi = hi;
	memcpy(dc->conv_error, saved, sizeof(saved));
	return r;
}

/* The object a watcher sends for 'obj': its view, or a one-row Table. */
static int
render(const struct dc_watcher *w, const struct json_object *obj, bool cols,
    struct json_object **ret)
{
	struct json_object *view = NULL, *table = NULL;
	char rv[24];
	int r;

	if ((r = watch_view(w, obj, &view)) < 0)
		return r;
	if (w->fmt == DC_FMT_JSON) {
		*ret = view;
		return 0;
	}
	(void)snprintf(rv, sizeof(rv), "%" PRIu64, obj_rv(obj));
	if ((r = api_table_new(w->rt, w->fmt, cols, &table)) < 0 ||
	    (r = api_table_add_row(w->rt, table, view, w->include, kc_clock_wall())) < 0 ||
	    (r = kc_json_set_str(kc_json_obj_of(table, "metadata"), "resourceVersion",
	    rv)) < 0) {
		json_object_put(view);
		if (table != NULL)
			json_object_put(table);
		return r;
	}
	json_object_put(view);
	*ret = table;
	return 0;
}

static struct dc_chunk *
object_chunk(const struct dc_watcher *w, int type, const struct json_object *obj,
    bool cols, int *ret_r)
{
	struct json_object *o = NULL;
	struct dc_chunk *c;

	*ret_r = -ENOMEM;
	if ((*ret_r = render(w, obj, cols, &o)) < 0)
		return NULL;
	*ret_r = -ENOMEM;
	c = event_line(ev_names[type], o);
	json_object_put(o);
	return c;
}

/*
 * 'ev' is about to keep a serialization: it joins the ring of events that
 * do, and the oldest one there loses its serializations when the ring is
 * full. An event may be in the ring twice (cached, dropped, cached again
 * by a replay); dropping its cache early only costs a print.
 */
static void
cache_push(struct dc_hub *hub, struct dc_event *ev)
{
	uint32_t tail;

	if (hub->clen == DC_SER_CACHE_EVENTS) {
		struct dc_event *old = hub->cached[hub->chead];

		watchhub_ser_free(old->sers);
		old->sers = NULL;
		event_unref(old);
		hub->chead = (hub->chead + 1) % DC_SER_CACHE_EVENTS;
		hub->clen--;
	}
	tail = (hub->chead + hub->clen) % DC_SER_CACHE_EVENTS;
	hub->cached[tail] = event_ref(ev);
	hub->clen++;
}

/*
 * The chunk for an event as 'w' sends it; 'prev' selects the previous
 * state (a DELETED caused by the selectors). Cached on the event.
 */
static struct dc_chunk *
event_chunk(struct dc_watcher *w, struct dc_event *ev, int type, bool prev, int *ret_r)
{
	bool cols = w->fmt != DC_FMT_JSON && !w->cols_sent;
	unsigned key = (unsigned)type | (unsigned)w->fmt << 2 |
	    (unsigned)w->include << 4 | (unsigned)cols << 6 | (unsigned)prev << 7;
	struct json_object *obj;
	struct dc_ser *s;
	struct dc_chunk *c;

	*ret_r = -ENOMEM;
	for (s = ev->sers; s != NULL; s = s->next)
		if (s->rt == w->rt && s->key == key)
			return chunk_ref(s->chunk);
	if (prev) {
		if ((obj = obj_with_rv(ev->prev, ev->rv)) == NULL)
			return NULL;
	} else
		obj = json_object_get(ev->obj);
	c = object_chunk(w, type, obj, cols, ret_r);
	json_object_put(obj);
	if (c == NULL)
		return NULL;
	if ((s = kc_calloc(1, sizeof(*s))) != NULL) {
		if (ev->sers == NULL)
			cache_push(w->hub, ev);
		s->rt = w->rt;
		s->key = key;
		s->chunk = chunk_ref(c);
		s->next = ev->sers;
		ev->sers = s;
	}
	return c;
}

/*
 * Watchers
 */

static void
wake(struct dc_watcher *w)
{
	if (w->stream.wake != NULL)
		w->stream.wake(w->stream.wake_arg);
}

static void
drop_queue(struct dc_watcher *w)
{
	for (uint32_t i = 0; i < w->qlen; i++)
		chunk_unref(w->q[(w->qhead + i) % w->qcap]);
	w->qlen = 0;
	w->qhead = 0;
	w->qbytes = 0;
	w->rlen = 0;
	w->rbytes = 0;
	objs_free(w->init, w->ninit);
	w->init = NULL;
	w->ninit = 0;
	w->init_pos = 0;
	while (!TAILQ_EMPTY(&w->pend)) {
		struct pend *p = TAILQ_FIRST(&w->pend);

		TAILQ_REMOVE(&w->pend, p, link);
		event_unref(p->ev);
		kc_free(p);
	}
	w->npend = 0;
}

static void
unlink_coll(struct dc_watcher *w)
{
	if (w->linked) {
		TAILQ_REMOVE(coll_watchers(w->coll), w, link);
		w->linked = false;
	}
}

/* No more events: the stream ends once the queue is drained. */
static void
end_watch(struct dc_watcher *w)
{
	if (w->ended)
		return;
	w->ended = true;
	unlink_coll(w);
	timer_cancel(&w->timeout);
	wake(w);
}

/* Queues a chunk (the reference moves in); overflow ends the watch. */
static void
enqueue(struct dc_watcher *w, struct dc_chunk *c)
{
	struct dc_hub *hub = w->hub;

	if (w->ended) {
		chunk_unref(c);
		return;
	}
	if (!w->replaying && (w->qlen - w->rlen >= hub->backlog_events ||
	    w->qbytes - w->rbytes + c->len > hub->backlog_bytes))
		goto overflow;
	if (w->qlen == w->qcap) {
		uint32_t cap = w->qcap != 0 ? w->qcap * 2 : 16;
		struct dc_chunk **q;

		if ((q = kc_calloc(cap, sizeof(*q))) == NULL)
			goto overflow;
		for (uint32_t i = 0; i < w->qlen; i++)
			q[i] = w->q[(w->qhead + i) % w->qcap];
		kc_free(w->q);
		w->q = q;
		w->qcap = cap;
		w->qhead = 0;
	}
	w->q[(w->qhead + w->qlen) % w->qcap] = c;
	w->qlen++;
	w->qbytes += c->len;
	if (w->replaying) {
		w->rlen++;
		w->rbytes += c->len;
	}
	wake(w);
	return;
overflow:
	chunk_unref(c);
	drop_queue(w);
	end_watch(w);
}

static bool
obj_in_ns(const struct dc_watcher *w, const struct json_object *obj)
{
	const char *ns;

	if (w->ns == NULL)
		return true;
	ns = kc_json_str(obj, "metadata", "namespace");
	return ns != NULL && strcmp(ns, w->ns) == 0;
}

static bool
selected(const struct dc_watcher *w, const struct json_object *obj)
{
	return obj != NULL && obj_in_ns(w, obj) && api_matches(w->rt, w->ls, w->fs, obj);
}

/* A failed conversion: an ERROR event with its Status, and the end. */
static void
conversion_failed(struct dc_watcher *w)
{
	struct json_object *st = NULL;
	struct dc_chunk *c = NULL;

	drop_queue(w);
	if (errors_status_body(KC_EINTERNAL, w->conv_error, NULL, &st) == 0) {
		c = event_line("ERROR", st);
		json_object_put(st);
	}
	if (c != NULL)
		enqueue(w, c);
	end_watch(w);
}

/* An event waits for the conversion webhook (the reference is taken). */
static void
pend_push(struct dc_watcher *w, struct dc_event *ev, int type, bool prev)
{
	struct pend *p;

	if (w->ended)
		return;
	if (w->npend >= w->hub->backlog_events || (p = kc_calloc(1, sizeof(*p))) == NULL) {
		drop_queue(w);
		end_watch(w);
		return;
	}
	p->ev = event_ref(ev);
	p->type = type;
	p->prev = prev;
	TAILQ_INSERT_TAIL(&w->pend, p, link);
	w->npend++;
	w->conv_wait = true;		/* woken when the webhook has answered */
}

static void
deliver(struct dc_watcher *w, struct dc_event *ev)
{
	bool cur = ev->type != DC_EV_DELETED && selected(w, ev->obj);
	bool old = ev->prev != NULL && selected(w, ev->prev);
	struct dc_chunk *c;
	bool prev = false;
	int type, r;

	if (!cur && !old)
		return;
	if (cur && !old)
		type = EV_ADDED;
	else if (cur)
		type = EV_MODIFIED;
	else {
		type = EV_DELETED;
		prev = ev->type != DC_EV_DELETED;
	}
	if (!TAILQ_EMPTY(&w->pend)) {
		pend_push(w, ev, type, prev);
		return;
	}
	if ((c = event_chunk(w, ev, type, prev, &r)) == NULL) {
		if (r == -EINPROGRESS)
			pend_push(w, ev, type, prev);
		else if (r == KC_EINTERNAL && w->conv_error[0] != '\0')
			conversion_failed(w);
		else {
			drop_queue(w);
			end_watch(w);
		}
		return;
	}
	if (w->fmt != DC_FMT_JSON)
		w->cols_sent = true;
	enqueue(w, c);
}

static void
on_event(void *arg, const struct dc_event *cev)
{
	struct dc_event *ev = (struct dc_event *)(uintptr_t)cev;
	struct dc_watcher_list *list = coll_watchers(ev->coll);
	struct dc_watcher *w, *next;

	(void)arg;
	for (w = TAILQ_FIRST(list); w != NULL; w = next) {
		next = TAILQ_NEXT(w, link);
		deliver(w, ev);
	}
}

static int
replay(void *arg, struct dc_event *ev)
{
	deliver(arg, ev);
	return 0;
}

static struct dc_chunk *
expired_chunk(uint64_t since, uint64_t oldest)
{
	struct json_object *st = NULL;
	struct dc_chunk *c;
	char msg[128];

	(void)snprintf(msg, sizeof(msg), "too old resource version: %" PRIu64 " (%" PRIu64
	    ")", since, oldest);
	if (errors_status_body(KC_EEXPIRED, msg, NULL, &st) < 0)
		return NULL;
	c = event_line("ERROR", st);
	json_object_put(st);
	return c;
}

static struct dc_chunk *
bookmark_chunk(const struct dc_watcher *w, uint64_t rv)
{
	char line[512];
	int n;

	n = snprintf(line, sizeof(line), "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"%s\","
	    "\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":\"%" PRIu64 "\","
	    "\"creationTimestamp\":null}}}\n", w->rt->kind, w->rt->api_version, rv);
	if (n < 0 || (size_t)n >= sizeof(line))
		return NULL;
	return chunk_new(line, (size_t)n);
}

static struct dc_chunk *
stream_pull(struct dc_stream *s, bool *ret_end)
{
	struct dc_watcher *w = (struct dc_watcher *)s;
	struct dc_chunk *c;
	struct pend *p;
	int r;

	*ret_end = false;
	if (w->init_pos < w->ninit) {
		struct json_object *obj = w->init[w->init_pos];

		c = object_chunk(w, EV_ADDED, obj, w->init_cols, &r);
		if (c == NULL && r == -EINPROGRESS) {
			w->conv_wait = true;
			return NULL;
		}
		w->init[w->init_pos++] = NULL;
		json_object_put(obj);
		w->init_cols = false;
		if (c != NULL)
			return c;
		if (r == KC_EINTERNAL && w->conv_error[0] != '\0')
			conversion_failed(w);
		else {
			drop_queue(w);
			end_watch(w);
		}
	}
	if (w->init != NULL && w->init_pos == w->ninit) {
		objs_free(w->init, w->ninit);
		w->init = NULL;
		w->ninit = 0;
		w->init_pos = 0;
	}
	if (w->qlen > 0) {
		c = w->q[w->qhead];
		w->qhead = (w->qhead + 1) % w->qcap;
		w->qlen--;
		w->qbytes -= c->len;
		if (w->rlen > 0) {
			w->rlen--;
			w->rbytes -= c->len;
		}
		return c;
	}
	if ((p = TAILQ_FIRST(&w->pend)) != NULL) {
		c = event_chunk(w, p->ev, p->type, p->prev, &r);
		if (c == NULL && r == -EINPROGRESS) {
			w->conv_wait = true;
			return NULL;
		}
		TAILQ_REMOVE(&w->pend, p, link);
		w->npend--;
		event_unref(p->ev);
		kc_free(p);
		if (c != NULL) {
			if (w->fmt != DC_FMT_JSON)
				w->cols_sent = true;
			return c;
		}
		if (r == KC_EINTERNAL && w->conv_error[0] != '\0')
			conversion_failed(w);
		else {
			drop_queue(w);
			end_watch(w);
		}
		return stream_pull(s, ret_end);
	}
	*ret_end = w->ended;
	return NULL;
}

void
watchhub_conversions_done(struct dc_hub *hub)
{
	struct dc_watcher *w;

	TAILQ_FOREACH(w, &hub->all, all)
		if (w->conv_wait) {
			w->conv_wait = false;
			wake(w);
		}
}

static void
watcher_free(struct dc_watcher *w)
{
	struct dc_hub *hub = w->hub;

	unlink_coll(w);
	timer_cancel(&w->timeout);
	timer_cancel(&w->pretimeout);
	drop_queue(w);
	TAILQ_REMOVE(&hub->all, w, all);
	hub->count--;
	kc_label_selector_free(w->ls);
	kc_field_selector_free(w->fs);
	kc_free(w->q);
	kc_free(w->ns);
	kc_free(w);
}

static void
stream_release(struct dc_stream *s)
{
	watcher_free((struct dc_watcher *)s);
}

static const struct dc_stream_ops watcher_ops = {
	.pull = stream_pull,
	.release = stream_release,
};

static int64_t
timeout_fired(void *arg)
{
	end_watch(arg);
	return DC_TIMER_STOP;
}

/* A BOOKMARK at the current resourceVersion, when the watcher asked for them. */
static void
send_bookmark(struct dc_watcher *w, uint64_t rv)
{
	struct dc_chunk *c;

	if (!w->bookmarks || w->ended || w->rt == NULL || w->init != NULL)
		return;
	if ((c = bookmark_chunk(w, rv)) == NULL) {
		drop_queue(w);
		end_watch(w);
		return;
	}
	enqueue(w, c);
}

static int64_t
pretimeout_fired(void *arg)
{
	struct dc_watcher *w = arg;

	send_bookmark(w, storage_rv(w->hub->dc->store));
	return DC_TIMER_STOP;
}

int
watchhub_start(struct dc *dc, const struct dc_watch_opts *o, struct dc_stream **ret,
    struct kc_status *st)
{
	struct dc_hub *hub = dc->hub;
	struct dc_watcher *w;
	uint64_t oldest = 0, timeout_ms;
	int r;

	if ((w = kc_calloc(1, sizeof(*w))) == NULL)
		return -ENOMEM;
	w->stream.ops = &watcher_ops;
	TAILQ_INIT(&w->pend);
	w->hub = hub;
	w->rt = o->rt;
	w->coll = o->rt->coll;
	w->fmt = o->format;
	w->include = o->include;
	w->bookmarks = o->bookmarks;
	timer_init(&w->timeout, dc, timeout_fired, w);
	timer_init(&w->pretimeout, dc, pretimeout_fired, w);
	if ((r = api_selectors(o->rt, o->label_selector, o->field_selector, &w->ls,
	    &w->fs, st)) < 0 || (o->ns != NULL && (w->ns = kc_strdup(o->ns)) == NULL)) {
		kc_label_selector_free(w->ls);
		kc_field_selector_free(w->fs);
		kc_free(w);
		return r < 0 ? r : -ENOMEM;
	}
	TAILQ_INSERT_TAIL(&hub->all, w, all);
	hub->count++;
	if (o->initial) {
		size_t kept = 0;

		if ((r = coll_list(w->coll, w->ns, NULL, &w->init, &w->ninit)) < 0) {
			watcher_free(w);
			return r;
		}
		/* Filter now, so the first event sent is known (Table columns). */
		for (size_t i = 0; i < w->ninit; i++) {
			if (selected(w, w->init[i]))
				w->init[kept++] = w->init[i];
			else
				json_object_put(w->init[i]);
		}
		w->ninit = kept;
		if (kept > 0 && w->fmt != DC_FMT_JSON) {
			w->init_cols = true;
			w->cols_sent = true;
		}
	} else {
		w->replaying = true;
		r = coll_history(w->coll, o->since, replay, w, &oldest);
		w->replaying = false;
		if (r == KC_EEXPIRED) {
			struct dc_chunk *c = expired_chunk(o->since, oldest);

			drop_queue(w);
			if (c == NULL) {
				watcher_free(w);
				return -ENOMEM;
			}
			enqueue(w, c);
			w->ended = true;
			*ret = &w->stream;
			return 0;
		}
		if (w->ended) {
			/* Out of memory while queueing the replay. */
			*ret = &w->stream;
			return 0;
		}
	}
	TAILQ_INSERT_TAIL(coll_watchers(w->coll), w, link);
	w->linked = true;
	timeout_ms = o->timeout_s > 0 ? (uint64_t)o->timeout_s * 1000 :
	    (1800 + kc_random_u64() % 1800) * 1000;
	timer_arm(&w->timeout, timeout_ms);
	/*
	 * As the watch cache does (cacheWatcher.nextBookmarkTime), a watch
	 * that asked for bookmarks gets one 2 s before its timeout, so a
	 * client that watches again resumes from a recent resourceVersion.
	 */
	if (w->bookmarks && timeout_ms > WATCH_PRETIMEOUT_MS)
		timer_arm(&w->pretimeout, timeout_ms - WATCH_PRETIMEOUT_MS);
	*ret = &w->stream;
	return 0;
}

void
watchhub_close_all(struct dc_hub *hub)
{
	struct dc_watcher *w;

	for (w = TAILQ_FIRST(&hub->all); w != NULL; w = TAILQ_NEXT(w, all))
		end_watch(w);
}

void
watchhub_drop_rtype(struct dc_hub *hub, const struct dc_rtype *rt)
{
	struct dc_watcher *w;

	for (w = TAILQ_FIRST(&hub->all); w != NULL; w = TAILQ_NEXT(w, all)) {
		if (w->rt != rt)
			continue;
		drop_queue(w);
		end_watch(w);
		w->rt = NULL;
	}
}

size_t
watchhub_count(const struct dc_hub *hub)
{
	return hub->count;
}

void
watchhub_bookmarks(struct dc_hub *hub)
{
	uint64_t rv = storage_rv(hub->dc->store);
	struct dc_watcher *w;

	for (w = TAILQ_FIRST(&hub->all); w != NULL; w = TAILQ_NEXT(w, all))
		send_bookmark(w, rv);
}

static int64_t
bookmark_tick(void *arg)
{
	struct dc_hub *hub = arg;

	watchhub_bookmarks(hub);
	return hub->bookmark_ms;
}

int
watchhub_new(struct dc *dc, struct dc_hub **ret)
{
	struct dc_hub *hub;
	int r;

	if ((hub = kc_calloc(1, sizeof(*hub))) == NULL)
		return -ENOMEM;
	hub->dc = dc;
	TAILQ_INIT(&hub->all);
	hub->backlog_events = dc->opts.backlog_events > 0 ? dc->opts.backlog_events :
	    DC_BACKLOG_EVENTS;
	hub->backlog_bytes = dc->opts.backlog_bytes > 0 ? dc->opts.backlog_bytes :
	    DC_BACKLOG_BYTES;
	hub->bookmark_ms = dc->opts.bookmark_ms > 0 ? dc->opts.bookmark_ms : DC_BOOKMARK_MS;
	if ((r = storage_subscribe(dc->store, on_event, hub)) < 0) {
		kc_free(hub);
		return r;
	}
	timer_init(&hub->bookmark, dc, bookmark_tick, hub);
	timer_arm(&hub->bookmark, hub->bookmark_ms);
	*ret = hub;
	return 0;
}

struct dc_hub *
watchhub_free(struct dc_hub *hub)
{
	struct dc_watcher *w;

	if (hub == NULL)
		return NULL;
	timer_cancel(&hub->bookmark);
	storage_unsubscribe(hub->dc->store, on_event, hub);
	while ((w = TAILQ_FIRST(&hub->all)) != NULL)
		watcher_free(w);
	for (uint32_t i = 0; i < hub->clen; i++)
		event_unref(hub->cached[(hub->chead + i) % DC_SER_CACHE_EVENTS]);
	kc_free(hub);
	return NULL;
}

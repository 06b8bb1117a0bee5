/*
 * expect.c: what this process wrote that the caches may not show yet.
 *
 * A worker creates a Run's pods and returns; the pod informer sees them a
 * moment later. A reconcile of the same Run in between (another event came
 * in) would otherwise find the pods missing and create them again. So each
 * create is remembered here, per Run, until the cache shows the pod or a
 * TTL passes (as the ReplicaSet controller's expectations, which expire
 * after five minutes in case an event was lost). Deletes are remembered the
 * same way, so a pod that is still cached without its deletionTimestamp is
 * not deleted twice. Pods of the current session that left the cache are
 * kept as last seen (a reference to the cached item, for the same TTL or
 * until the session changes): a pod the pod GC fails and deletes at once
 * may be gone before a reconcile looks, and its last view says why. A
 * status change the write policy keeps waiting (session.h) is remembered
 * by a fingerprint and the time it first looked that way, so the decision
 * can tell a session start that keeps moving from one that stalled. And
 * the last create the API server refused, per session, so the decision
 * can say why nothing starts and back the creates off; and a name
 * conflict a create met (names.h), so the decision ends the session.
 *
 * And each Run's session clock (expect_clock_ms()): the session rules
 * measure deadlines, timeouts and backoffs in wall-clock time, as the
 * Run's status records them, but a step of this machine's wall clock (an
 * NTP step, a VM resumed) must neither end a session early nor let a
 * deadline overrun. So while a Run has something timed, "now" is the
 * wall clock read when this process first looked at it, plus the
 * monotonic time since (the anchor); what came before (another process
 * ran the Run) is measured by the wall clock. Once a decision times
 * nothing, the anchor goes, and the next look takes the wall clock again,
 * so dates written later follow the wall clock.
 *
 * One mutex guards a small hash table of Runs; the entries of one Run are
 * plain arrays (a Run has at most 10,000 pods, and only the unseen ones
 * are kept). Every Run of the cluster has an entry for a while after each
 * status write, so an entry keeps only what it still needs: an array that
 * empties is freed at once, the objects part once nothing is expected of
 * it (the cache shows every pod and child created), the resourceVersion
 * of a status write once the cache shows it, and the entry itself once
 * only an expired status write time is left. A settled Run costs a
 * header and its key.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/hash.h>
#include <kc/str.h>
#include <kc/watch.h>

#include "controller.h"

#define EXPECT_TTL_MS		(5 * 60 * 1000)
#define EXPECT_BUCKETS		1024

struct created {
	int32_t		 index;
	uint64_t	 at_ms;
};

struct deleted {
	char		 uid[40];
	uint64_t	 at_ms;
};

struct gone {
	struct kc_item	*item;		/* a struct ty_pod, referenced */
	uint64_t	 at_ms;
};

/*
 * What a Run's creates and deletes left to see, allocated only while
 * there is some: most Runs, most of the time, have none.
 */
struct run_objs {
	char		 uid[40];	/* the Run uid these are about */
	int64_t		 session;	/* the session of 'c' and 'g'; -1 */
	struct created	*c;		/* pods created, not cached yet */
	uint32_t	 nc, capc;
	uint32_t	 nd, capd;
	struct deleted	*d;		/* objects deleted, maybe still cached */
	struct gone	*g;		/* pods that left the cache */
	uint32_t	 ng, capg;
	int64_t		 child_session[TY_KIND_POD];	/* created, by kind; 0 */
	uint64_t	 child_at_ms[TY_KIND_POD];
};

/*
 * One Run. The entry lives while it knows something: objects to see
 * ('o'), a status write the Run cache does not show yet ('status_rv'), a
 * waiting progress change, or the time of the last status write (kept
 * for EXPECT_TTL_MS: expect_status_age_ms()).
 */
struct run_exp {
	struct run_exp	*next;
	struct run_objs	*o;		/* NULL when nothing is expected */
	char		*status_rv;	/* our last status write, until cached */
	uint64_t	 status_at_ms;
	uint64_t	 progress_hash;		/* a status change waiting; 0 */
	uint64_t	 progress_since_ms;	/* since when it looks the same */
	struct ty_refusal *refused;		/* the last refused create; NULL */
	struct ty_conflict *conflict;		/* a name conflict met; NULL */
	/* The session clock: wall minus monotonic ms at its anchor; 0: none. */
	int64_t		 anchor_ms;
	char		 key[];
};

struct expect {
	pthread_mutex_t	 lock;
	struct run_exp	*b[EXPECT_BUCKETS];
};

static uint32_t
hash(const char *s)
{
	return kc_fnv1a32_str(KC_FNV1A32_INIT, s) % EXPECT_BUCKETS;
}

static void
drop_gone(struct run_objs *o)
{
	for (size_t i = 0; i < o->ng; i++)
		kc_item_unref(o->g[i].item);
	o->ng = 0;
}

static struct run_objs *
run_objs_free(struct run_objs *o)
{
	if (o == NULL)
		return NULL;
	drop_gone(o);
	kc_free(o->c);
	kc_free(o->d);
	kc_free(o->g);
	return kc_free(o);
}

static void
run_exp_free(struct run_exp *e)
{
	run_objs_free(e->o);
	kc_free(e->status_rv);
	kc_free(e->refused);
	kc_free(e->conflict);
	kc_free(e);
}

int
expect_new(struct expect **ret)
{
	struct expect *x;

	if ((x = kc_calloc(1, sizeof(*x))) == NULL)
		return -ENOMEM;
	if (pthread_mutex_init(&x->lock, NULL) != 0) {
		kc_free(x);
		return -ENOMEM;
	}
	*ret = x;
	return 0;
}

struct expect *
expect_free(struct expect *x)
{
	if (x == NULL)
		return NULL;
	for (size_t i = 0; i < EXPECT_BUCKETS; i++) {
		struct run_exp *e, *next;

		for (e = x->b[i]; e != NULL; e = next) {
			next = e->next;
			run_exp_free(e);
		}
	}
	pthread_mutex_destroy(&x->lock);
	kc_free(x);
	return NULL;
}

/* The entry of 'key' (lock held), or NULL; 'create' makes a missing one. */
static struct run_exp *
find(struct expect *x, const char *key, bool create)
{
	uint32_t h = hash(key);
	size_t len;
	struct run_exp *e;

	for (e = x->b[h]; e != NULL; e = e->next)
		if (strcmp(e->key, key) == 0)
			return e;
	if (!create || (len = strnlen(key, KC_WORKQUEUE_KEY_MAX)) == KC_WORKQUEUE_KEY_MAX ||
	    (e = kc_keep_calloc(sizeof(*e) + len + 1)) == NULL)
		return NULL;
	memcpy(e->key, key, len + 1);
	e->next = x->b[h];
	x->b[h] = e;
	return e;
}

/* The objects of 'e', made when missing (lock held); NULL for -ENOMEM. */
static struct run_objs *
objs(struct run_exp *e)
{
	if (e->o == NULL && (e->o = kc_keep_calloc(sizeof(*e->o))) != NULL)
		e->o->session = -1;
	return e->o;
}

static void
unlink_entry(struct expect *x, struct run_exp *e)
{
	struct run_exp **pp;

	for (pp = &x->b[hash(e->key)]; *pp != NULL; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			run_exp_free(e);
			return;
		}
}

/*
 * Frees what 'e' no longer needs (lock held): the arrays that emptied,
 * the objects once nothing is expected of them, the entry once it knows
 * nothing. Returns false when 'e' was freed.
 */
static bool
tidy(struct expect *x, struct run_exp *e, uint64_t now)
{
	struct run_objs *o = e->o;

	if (o != NULL) {
		if (o->nc == 0) {
			o->c = kc_free(o->c);
			o->capc = 0;
		}
		if (o->nd == 0) {
			o->d = kc_free(o->d);
			o->capd = 0;
		}
		if (o->ng == 0) {
			o->g = kc_free(o->g);
			o->capg = 0;
		}
		if (o->nc == 0 && o->nd == 0 && o->ng == 0 && o->child_session[0] == 0 &&
		    o->child_session[1] == 0 && o->child_session[2] == 0)
			e->o = run_objs_free(o);
	}
	if (e->o == NULL && e->status_rv == NULL && e->progress_hash == 0 &&
	    e->refused == NULL && e->conflict == NULL && e->anchor_ms == 0 &&
	    (e->status_at_ms == 0 || now - e->status_at_ms >= EXPECT_TTL_MS)) {
		unlink_entry(x, e);
		return false;
	}
	return true;
}

/* The session clock of 'e' (lock held), anchored now when it was not. */
static uint64_t
session_clock(struct run_exp *e)
{
	int64_t mono = (int64_t)kc_clock_now_ms(), now;

	if (e->anchor_ms == 0 && (e->anchor_ms = kc_clock_wall_us() / 1000 - mono) == 0)
		e->anchor_ms = 1;	/* 0 means none; a millisecond off is nothing */
	now = mono + e->anchor_ms;
	return now > 0 ? (uint64_t)now : 0;
}

/* Makes 'o' about Run uid 'uid' and 'session', dropping what it knew else. */
static void
retarget(struct run_objs *o, const char *uid, int64_t session)
{
	if (strcmp(o->uid, uid) != 0) {
		o->nd = 0;
		o->nc = 0;
		drop_gone(o);
		kc_strlcpy(o->uid, uid, sizeof(o->uid));
	}
	if (o->session != session) {
		o->nc = 0;
		drop_gone(o);
		o->session = session;
	}
}

static void
expire(struct run_objs *o, uint64_t now)
{
	size_t i, j;

	for (i = j = 0; i < o->nc; i++)
		if (now - o->c[i].at_ms < EXPECT_TTL_MS)
			o->c[j++] = o->c[i];
	o->nc = (uint32_t)j;
	for (i = j = 0; i < o->nd; i++)
		if (now - o->d[i].at_ms < EXPECT_TTL_MS)
			o->d[j++] = o->d[i];
	o->nd = (uint32_t)j;
	for (i = j = 0; i < o->ng; i++)
		if (now - o->g[i].at_ms < EXPECT_TTL_MS)
			o->g[j++] = o->g[i];
		else
			kc_item_unref(o->g[i].item);
	o->ng = (uint32_t)j;
}

/* Room for one more of 'n' elements of 'size' in '*a' of '*cap'. */
static int
grow(void **a, uint32_t n, uint32_t *cap, size_t size, uint32_t first)
{
	uint32_t ncap;
	void *na;

	if (n < *cap)
		return 0;
	ncap = *cap != 0 ? *cap * 2 : first;
	if ((na = kc_reallocarray(*a, ncap, size)) == NULL)
		return -ENOMEM;
	*a = na;
	*cap = ncap;
	return 0;
}

int
expect_pod_created(struct expect *x, const char *key, const char *run_uid,
    int64_t session, int32_t index)
{
	struct run_exp *e;
	struct run_objs *o;
	int r = 0;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, true)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if ((o = objs(e)) == NULL ||
	    grow((void **)&o->c, o->nc, &o->capc, sizeof(*o->c), 16) < 0) {
		r = -ENOMEM;
		(void)tidy(x, e, kc_clock_now_ms());
		goto out;
	}
	retarget(o, run_uid, session);
	o->c[o->nc++] = (struct created){ index, kc_clock_now_ms() };
out:
	pthread_mutex_unlock(&x->lock);
	return r;
}

int
expect_pods(struct expect *x, const char *key, const char *run_uid, int64_t session,
    const int32_t *seen, size_t nseen, int32_t **ret, size_t *ret_n)
{
	struct run_exp *e;
	struct run_objs *o;
	int32_t *out = NULL;
	uint64_t now = kc_clock_now_ms();
	size_t i, j, n = 0;
	int r = 0;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) == NULL)
		goto done;
	if ((o = e->o) != NULL) {
		retarget(o, run_uid, session);
		expire(o, now);
		/* Drop what the cache shows now. */
		for (i = j = 0; i < o->nc; i++) {
			bool shown = false;

			for (size_t k = 0; k < nseen && !shown; k++)
				shown = seen[k] == o->c[i].index;
			if (!shown)
				o->c[j++] = o->c[i];
		}
		o->nc = (uint32_t)j;
		if (o->nc > 0) {
			if ((out = kc_calloc(o->nc, sizeof(*out))) == NULL) {
				r = -ENOMEM;
				goto out;
			}
			for (i = 0; i < o->nc; i++)
				out[n++] = o->c[i].index;
		}
	}
	(void)tidy(x, e, now);
done:
	*ret = out;
	*ret_n = n;
out:
	pthread_mutex_unlock(&x->lock);
	return r;
}

void
expect_pod_forget(struct expect *x, const char *key, int32_t index)
{
	struct run_exp *e;
	struct run_objs *o;
	size_t i, j;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) != NULL && (o = e->o) != NULL) {
		for (i = j = 0; i < o->nc; i++)
			if (o->c[i].index != index)
				o->c[j++] = o->c[i];
		o->nc = (uint32_t)j;
		(void)tidy(x, e, kc_clock_now_ms());
	}
	pthread_mutex_unlock(&x->lock);
}

int
expect_delete(struct expect *x, const char *key, const char *uid)
{
	struct run_exp *e;
	struct run_objs *o;
	int r = 0;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, true)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if ((o = objs(e)) == NULL ||
	    grow((void **)&o->d, o->nd, &o->capd, sizeof(*o->d), 8) < 0) {
		r = -ENOMEM;
		(void)tidy(x, e, kc_clock_now_ms());
		goto out;
	}
	kc_strlcpy(o->d[o->nd].uid, uid, sizeof(o->d[o->nd].uid));
	o->d[o->nd++].at_ms = kc_clock_now_ms();
out:
	pthread_mutex_unlock(&x->lock);
	return r;
}

bool
expect_deleted(struct expect *x, const char *key, const char *uid)
{
	struct run_exp *e;
	bool found = false;
	uint64_t now = kc_clock_now_ms();

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) != NULL && e->o != NULL)
		for (size_t i = 0; i < e->o->nd && !found; i++)
			found = strcmp(e->o->d[i].uid, uid) == 0 &&
			    now - e->o->d[i].at_ms < EXPECT_TTL_MS;
	pthread_mutex_unlock(&x->lock);
	return found;
}

void
expect_forget(struct expect *x, const char *key)
{
	struct run_exp *e;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) != NULL)
		unlink_entry(x, e);
	pthread_mutex_unlock(&x->lock);
}

int
expect_pod_gone(struct expect *x, const char *key, const char *run_uid, int64_t session,
    struct kc_item *item)
{
	struct run_exp *e;
	struct run_objs *o;
	int r = 0;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, true)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if ((o = objs(e)) == NULL) {
		r = -ENOMEM;
		(void)tidy(x, e, kc_clock_now_ms());
		goto out;
	}
	/* Only pods of the session the entry follows (or the first seen). */
	if (o->uid[0] == '\0' || o->session < 0) {
		kc_strlcpy(o->uid, run_uid, sizeof(o->uid));
		o->session = session;
	}
	if (strcmp(o->uid, run_uid) != 0 || o->session != session ||
	    o->ng >= TY_NODES_MAX)	/* more than a run has: nothing to learn */
		goto out;
	if (grow((void **)&o->g, o->ng, &o->capg, sizeof(*o->g), 8) < 0) {
		r = -ENOMEM;
		goto out;
	}
	o->g[o->ng].item = kc_item_ref(item);
	o->g[o->ng++].at_ms = kc_clock_now_ms();
out:
	pthread_mutex_unlock(&x->lock);
	return r;
}

int
expect_gone(struct expect *x, const char *key, const char *run_uid, int64_t session,
    struct kc_item ***ret, size_t *ret_n)
{
	struct run_exp *e;
	struct run_objs *o;
	struct kc_item **out = NULL;
	size_t n = 0;
	int r = 0;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) == NULL || (o = e->o) == NULL ||
	    strcmp(o->uid, run_uid) != 0 || o->session != session || o->ng == 0)
		goto out;
	if ((out = kc_calloc(o->ng, sizeof(*out))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < o->ng; i++)
		out[n++] = kc_item_ref(o->g[i].item);
out:
	pthread_mutex_unlock(&x->lock);
	*ret = out;
	*ret_n = n;
	return r;
}

void
expect_status_written(struct expect *x, const char *key, const char *rv)
{
	struct run_exp *e;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, true)) != NULL) {
		kc_free(e->status_rv);
		/* Without memory, staleness goes unnoticed: a conflict, retried. */
		e->status_rv = kc_strndup(rv, KC_RV_MAX - 1);
		e->status_at_ms = kc_clock_now_ms();
		e->progress_hash = 0;	/* written: nothing waits */
		e->progress_since_ms = 0;
	}
	pthread_mutex_unlock(&x->lock);
}

bool
expect_status_stale(struct expect *x, const char *key, const char *rv)
{
	struct run_exp *e;
	bool stale = false;
	uint64_t now = kc_clock_now_ms();

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) != NULL && e->status_rv != NULL) {
		/*
		 * Stale until the cache shows the write (the Run's versions
		 * only grow); give up waiting after the TTL, in case the
		 * event was lost.
		 */
		if (now - e->status_at_ms < EXPECT_TTL_MS &&
		    kc_rv_compare(rv, e->status_rv) < 0)
			stale = true;
		else
			e->status_rv = kc_free(e->status_rv);
		(void)tidy(x, e, now);
	}
	pthread_mutex_unlock(&x->lock);
	return stale;
}

uint64_t
expect_status_age_ms(struct expect *x, const char *key)
{
	struct run_exp *e;
	uint64_t age = UINT64_MAX;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) != NULL && e->status_at_ms != 0)
		age = kc_clock_now_ms() - e->status_at_ms;
	pthread_mutex_unlock(&x->lock);
	return age;
}

void
expect_write_state(struct expect *x, const char *key, struct ty_write_state *ret)
{
	struct run_exp *e;

	ret->last_write_ms = ret->wait_hash = ret->wait_since_ms = 0;
	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) != NULL) {
		ret->last_write_ms = e->status_at_ms;
		ret->wait_hash = e->progress_hash;
		ret->wait_since_ms = e->progress_since_ms;
	}
	pthread_mutex_unlock(&x->lock);
}

void
expect_write_wait(struct expect *x, const char *key, uint64_t hash, uint64_t since_ms)
{
	struct run_exp *e;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, hash != 0)) != NULL) {
		e->progress_hash = hash;
		e->progress_since_ms = since_ms;
		(void)tidy(x, e, kc_clock_now_ms());
	}
	pthread_mutex_unlock(&x->lock);
}

int
expect_refused(struct expect *x, const char *key, int64_t session, const char *message)
{
	struct run_exp *e;
	int r = -ENOMEM;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, true)) != NULL && (e->refused != NULL ||
	    (e->refused = kc_calloc(1, sizeof(*e->refused))) != NULL)) {
		if (e->refused->session != session)
			e->refused->failures = 0;
		e->refused->session = session;
		e->refused->failures++;
		e->refused->at_ms = session_clock(e);
		kc_strlcpy(e->refused->message, message, sizeof(e->refused->message));
		r = (int)KC_MIN(e->refused->failures, INT32_MAX);
	}
	pthread_mutex_unlock(&x->lock);
	return r;
}

bool
expect_refusal(struct expect *x, const char *key, int64_t session, struct ty_refusal *ret)
{
	struct run_exp *e;
	bool found = false;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) != NULL && e->refused != NULL) {
		if (e->refused->session == session) {
			*ret = *e->refused;
			found = true;
		} else {
			e->refused = kc_free(e->refused);	/* another session's */
			(void)tidy(x, e, kc_clock_now_ms());
		}
	}
	pthread_mutex_unlock(&x->lock);
	return found;
}

void
expect_refusal_clear(struct expect *x, const char *key)
{
	struct run_exp *e;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) != NULL && e->refused != NULL) {
		e->refused = kc_free(e->refused);
		(void)tidy(x, e, kc_clock_now_ms());
	}
	pthread_mutex_unlock(&x->lock);
}

int
expect_conflict_set(struct expect *x, const char *key, int64_t session, const char *message)
{
	struct run_exp *e;
	int r = -ENOMEM;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, true)) != NULL && (e->conflict != NULL ||
	    (e->conflict = kc_calloc(1, sizeof(*e->conflict))) != NULL)) {
		e->conflict->session = session;
		kc_strlcpy(e->conflict->message, message, sizeof(e->conflict->message));
		r = 0;
	}
	pthread_mutex_unlock(&x->lock);
	return r;
}

bool
expect_conflict(struct expect *x, const char *key, int64_t session, struct ty_conflict *ret)
{
	struct run_exp *e;
	bool found = false;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) != NULL && e->conflict != NULL) {
		if (e->conflict->session == session) {
			*ret = *e->conflict;
			found = true;
		} else {
			e->conflict = kc_free(e->conflict);	/* another session's */
			(void)tidy(x, e, kc_clock_now_ms());
		}
	}
	pthread_mutex_unlock(&x->lock);
	return found;
}

void
expect_child_created(struct expect *x, const char *key, enum ty_kind kind,
    int64_t session)
{
	struct run_exp *e;
	struct run_objs *o;

	if (kind >= TY_KIND_POD)
		return;
	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, true)) != NULL) {
		if ((o = objs(e)) != NULL) {
			o->child_session[kind] = session;
			o->child_at_ms[kind] = kc_clock_now_ms();
		} else
			(void)tidy(x, e, kc_clock_now_ms());
	}
	pthread_mutex_unlock(&x->lock);
}

bool
expect_child(struct expect *x, const char *key, enum ty_kind kind, int64_t session,
    bool seen)
{
	struct run_exp *e;
	struct run_objs *o;
	bool found = false;
	uint64_t now = kc_clock_now_ms();

	if (kind >= TY_KIND_POD)
		return false;
	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) != NULL && (o = e->o) != NULL &&
	    o->child_session[kind] != 0) {
		if (seen || o->child_session[kind] != session ||
		    now - o->child_at_ms[kind] >= EXPECT_TTL_MS) {
			o->child_session[kind] = 0;	/* shown, or moot */
			(void)tidy(x, e, now);
		} else
			found = true;
	}
	pthread_mutex_unlock(&x->lock);
	return found;
}

void
expect_child_deleted(struct expect *x, const char *key, enum ty_kind kind)
{
	struct run_exp *e;

	if (kind >= TY_KIND_POD)
		return;
	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) != NULL && e->o != NULL &&
	    e->o->child_session[kind] != 0) {
		e->o->child_session[kind] = 0;
		(void)tidy(x, e, kc_clock_now_ms());
	}
	pthread_mutex_unlock(&x->lock);
}

uint64_t
expect_clock_ms(struct expect *x, const char *key)
{
	struct run_exp *e;
	uint64_t now;
	int64_t wall;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, true)) != NULL)
		now = session_clock(e);
	else {
		wall = kc_clock_wall_us() / 1000;	/* no memory: the wall clock */
		now = wall > 0 ? (uint64_t)wall : 0;
	}
	pthread_mutex_unlock(&x->lock);
	return now;
}

void
expect_clock_release(struct expect *x, const char *key)
{
	struct run_exp *e;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) != NULL && e->anchor_ms != 0) {
		e->anchor_ms = 0;
		(void)tidy(x, e, kc_clock_now_ms());
	}
	pthread_mutex_unlock(&x->lock);
}

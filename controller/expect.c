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
 * may be gone before a reconcile looks, and its last view says why. And a
 * progress-only status change that waits to be written (reconcile_run.c)
 * is remembered by a fingerprint and the time it first looked that way,
 * so the reconciler can tell a session start that keeps moving from one
 * that stalled.
 *
 * One mutex guards a small hash table of Runs; the entries of one Run are
 * plain arrays (a Run has at most 10,000 pods, and only the unseen ones
 * are kept).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/clock.h>
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
	struct kc_item	*item;		/* a struct ty_pod_item, referenced */
	uint64_t	 at_ms;
};

struct run_exp {
	struct run_exp	*next;
	char		 key[KC_WORKQUEUE_KEY_MAX];
	char		 uid[40];
	int64_t		 session;
	struct created	*c;
	size_t		 nc, capc;
	struct deleted	*d;
	size_t		 nd, capd;
	struct gone	*g;		/* pods that left the cache */
	size_t		 ng, capg;
	char		 status_rv[KC_RV_MAX];	/* our last status write */
	uint64_t	 status_at_ms;
	uint64_t	 progress_hash;		/* a progress-only status waiting; 0 */
	uint64_t	 progress_since_ms;	/* since when it looks the same */
	int64_t		 child_session[TY_KIND_POD];	/* created, by kind; 0 */
	uint64_t	 child_at_ms[TY_KIND_POD];
};

struct expect {
	pthread_mutex_t	 lock;
	struct run_exp	*b[EXPECT_BUCKETS];
};

static uint32_t
hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s != '\0'; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h % EXPECT_BUCKETS;
}

static void
drop_gone(struct run_exp *e)
{
	for (size_t i = 0; i < e->ng; i++)
		kc_item_unref(e->g[i].item);
	e->ng = 0;
}

static void
run_exp_free(struct run_exp *e)
{
	drop_gone(e);
	kc_free(e->c);
	kc_free(e->d);
	kc_free(e->g);
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
	struct run_exp *e;

	for (e = x->b[h]; e != NULL; e = e->next)
		if (strcmp(e->key, key) == 0)
			return e;
	if (!create || (e = kc_calloc(1, sizeof(*e))) == NULL)
		return NULL;
	if (kc_strlcpy(e->key, key, sizeof(e->key)) >= sizeof(e->key)) {
		kc_free(e);
		return NULL;
	}
	e->session = -1;
	e->next = x->b[h];
	x->b[h] = e;
	return e;
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

/* Makes 'e' about Run uid 'uid' and 'session', dropping what it knew else. */
static void
retarget(struct run_exp *e, const char *uid, int64_t session)
{
	if (strcmp(e->uid, uid) != 0) {
		e->nd = 0;
		e->nc = 0;
		drop_gone(e);
		kc_strlcpy(e->uid, uid, sizeof(e->uid));
	}
	if (e->session != session) {
		e->nc = 0;
		drop_gone(e);
		e->session = session;
	}
}

static void
expire(struct run_exp *e, uint64_t now)
{
	size_t i, j;

	for (i = j = 0; i < e->nc; i++)
		if (now - e->c[i].at_ms < EXPECT_TTL_MS)
			e->c[j++] = e->c[i];
	e->nc = j;
	for (i = j = 0; i < e->nd; i++)
		if (now - e->d[i].at_ms < EXPECT_TTL_MS)
			e->d[j++] = e->d[i];
	e->nd = j;
	for (i = j = 0; i < e->ng; i++)
		if (now - e->g[i].at_ms < EXPECT_TTL_MS)
			e->g[j++] = e->g[i];
		else
			kc_item_unref(e->g[i].item);
	e->ng = j;
}

int
expect_pod_created(struct expect *x, const char *key, const char *run_uid,
    int64_t session, int32_t index)
{
	struct run_exp *e;
	int r = 0;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, true)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	retarget(e, run_uid, session);
	if (e->nc == e->capc) {
		size_t cap = e->capc != 0 ? e->capc * 2 : 16;
		struct created *c = kc_reallocarray(e->c, cap, sizeof(*c));

		if (c == NULL) {
			r = -ENOMEM;
			goto out;
		}
		e->c = c;
		e->capc = cap;
	}
	e->c[e->nc++] = (struct created){ index, kc_clock_now_ms() };
out:
	pthread_mutex_unlock(&x->lock);
	return r;
}

int
expect_pods(struct expect *x, const char *key, const char *run_uid, int64_t session,
    const int32_t *seen, size_t nseen, int32_t **ret, size_t *ret_n)
{
	struct run_exp *e;
	int32_t *out = NULL;
	size_t i, j, n = 0;
	int r = 0;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) == NULL)
		goto done;
	retarget(e, run_uid, session);
	expire(e, kc_clock_now_ms());
	/* Drop what the cache shows now. */
	for (i = j = 0; i < e->nc; i++) {
		bool shown = false;

		for (size_t k = 0; k < nseen && !shown; k++)
			shown = seen[k] == e->c[i].index;
		if (!shown)
			e->c[j++] = e->c[i];
	}
	e->nc = j;
	if (e->nc == 0 && e->nd == 0 && e->ng == 0 && e->status_rv[0] == '\0' &&
	    e->progress_hash == 0 && e->child_session[0] == 0 && e->child_session[1] == 0 &&
	    e->child_session[2] == 0) {
		unlink_entry(x, e);
		goto done;
	}
	if (e->nc > 0) {
		if ((out = kc_calloc(e->nc, sizeof(*out))) == NULL) {
			r = -ENOMEM;
			goto out;
		}
		for (i = 0; i < e->nc; i++)
			out[n++] = e->c[i].index;
	}
done:
	*ret = out;
	*ret_n = n;
out:
	pthread_mutex_unlock(&x->lock);
	return r;
}

int
expect_delete(struct expect *x, const char *key, const char *uid)
{
	struct run_exp *e;
	int r = 0;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, true)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if (e->nd == e->capd) {
		size_t cap = e->capd != 0 ? e->capd * 2 : 8;
		struct deleted *d = kc_reallocarray(e->d, cap, sizeof(*d));

		if (d == NULL) {
			r = -ENOMEM;
			goto out;
		}
		e->d = d;
		e->capd = cap;
	}
	kc_strlcpy(e->d[e->nd].uid, uid, sizeof(e->d[e->nd].uid));
	e->d[e->nd++].at_ms = kc_clock_now_ms();
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
	if ((e = find(x, key, false)) != NULL)
		for (size_t i = 0; i < e->nd && !found; i++)
			found = strcmp(e->d[i].uid, uid) == 0 &&
			    now - e->d[i].at_ms < EXPECT_TTL_MS;
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
	int r = 0;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, true)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	/* Only pods of the session the entry follows (or the first seen). */
	if (e->uid[0] == '\0' || e->session < 0) {
		kc_strlcpy(e->uid, run_uid, sizeof(e->uid));
		e->session = session;
	}
	if (strcmp(e->uid, run_uid) != 0 || e->session != session)
		goto out;
	if (e->ng == e->capg) {
		size_t cap = e->capg != 0 ? e->capg * 2 : 8;
		struct gone *g;

		if (e->ng >= TY_NODES_MAX)
			goto out;	/* more than a run has: nothing to learn */
		if ((g = kc_reallocarray(e->g, cap, sizeof(*g))) == NULL) {
			r = -ENOMEM;
			goto out;
		}
		e->g = g;
		e->capg = cap;
	}
	e->g[e->ng].item = kc_item_ref(item);
	e->g[e->ng++].at_ms = kc_clock_now_ms();
out:
	pthread_mutex_unlock(&x->lock);
	return r;
}

int
expect_gone(struct expect *x, const char *key, const char *run_uid, int64_t session,
    struct kc_item ***ret, size_t *ret_n)
{
	struct run_exp *e;
	struct kc_item **out = NULL;
	size_t n = 0;
	int r = 0;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) == NULL || strcmp(e->uid, run_uid) != 0 ||
	    e->session != session || e->ng == 0)
		goto out;
	if ((out = kc_calloc(e->ng, sizeof(*out))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < e->ng; i++)
		out[n++] = kc_item_ref(e->g[i].item);
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
		kc_strlcpy(e->status_rv, rv, sizeof(e->status_rv));
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

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) != NULL && e->status_rv[0] != '\0') {
		/* Give up waiting after the TTL, in case the event was lost. */
		if (kc_clock_now_ms() - e->status_at_ms >= EXPECT_TTL_MS)
			e->status_rv[0] = '\0';
		else
			stale = kc_rv_compare(rv, e->status_rv) < 0;
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

uint64_t
expect_progress(struct expect *x, const char *key, uint64_t hash)
{
	struct run_exp *e;
	uint64_t now = kc_clock_now_ms(), still = 0;

	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, true)) != NULL) {
		if (e->progress_hash == hash && hash != 0)
			still = now - e->progress_since_ms;
		else {
			e->progress_hash = hash;
			e->progress_since_ms = now;
		}
	}
	pthread_mutex_unlock(&x->lock);
	return still;
}

void
expect_child_created(struct expect *x, const char *key, enum ty_kind kind,
    int64_t session)
{
	struct run_exp *e;

	if (kind >= TY_KIND_POD)
		return;
	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, true)) != NULL) {
		e->child_session[kind] = session;
		e->child_at_ms[kind] = kc_clock_now_ms();
	}
	pthread_mutex_unlock(&x->lock);
}

bool
expect_child(struct expect *x, const char *key, enum ty_kind kind, int64_t session,
    bool seen)
{
	struct run_exp *e;
	bool found = false;

	if (kind >= TY_KIND_POD)
		return false;
	pthread_mutex_lock(&x->lock);
	if ((e = find(x, key, false)) != NULL && e->child_session[kind] != 0) {
		if (seen || e->child_session[kind] != session ||
		    kc_clock_now_ms() - e->child_at_ms[kind] >= EXPECT_TTL_MS)
			e->child_session[kind] = 0;	/* shown, or moot */
		else
			found = true;
	}
	pthread_mutex_unlock(&x->lock);
	return found;
}

/*
 * Informers: a local, always-current cache of one kind of object, fed by
 * list and watch, with event handlers. client-go's Reflector, DeltaFIFO
 * and Indexer in one, for a C program that keeps only what it needs.
 *
 * An informer follows one resource (a namespace or all, label and field
 * selectors): a paged list, then a watch with bookmarks from the list's
 * resourceVersion, resumed from the last resourceVersion seen whenever it
 * ends, a new list when the server's history is gone (410 Expired), and
 * exponential backoff with jitter on errors, honouring Retry-After;
 * kc_informer_set_resource() moves it to another version of the resource
 * (a relist that replaces the items in place). The library starts no
 * thread: kc_informer_run() blocks on the caller's thread with the
 * caller's client until kc_informer_stop().
 *
 * The cache does not keep JSON. Each object goes through the caller's
 * transform(), which returns a compact struct of its own (or skips the
 * object), and the cache stores that as an item: immutable, reference
 * counted, keyed "namespace/name" ("name" for cluster-scoped objects),
 * with the object's resourceVersion beside it. Readers on any thread take
 * a reference that stays valid after the cache moved on:
 *
 *	static int
 *	pod_transform(void *arg, const struct json_object *obj, void **ret,
 *	    struct kc_status *st)
 *	{
 *		struct pod *p = kc_calloc(1, sizeof(*p));
 *		...			fill from obj; never keep obj
 *		*ret = p;
 *		return 0;		or kc_status_set(st, KC_EPARSE, "why") to skip
 *	}
 *
 *	static void
 *	pod_changed(void *arg, struct kc_item *old, struct kc_item *new)
 *	{
 *		const struct pod *p = kc_item_data(new);
 *
 *		kc_workqueue_add(queue, p->run_key);	only enqueue here
 *	}
 *
 *	r = kc_informer_new(&(struct kc_informer_opts){
 *		.res = &kc_res_pods,
 *		.label_selector = "app.kubernetes.io/managed-by=trainyard",
 *		.transform = pod_transform,
 *		.free_item = pod_free,
 *		.index = pod_run_index,		"ns/run" of each pod
 *		.on_add = pod_added,
 *		.on_update = pod_changed,
 *		.on_delete = pod_deleted,
 *		.arg = ctl,
 *	}, &inf, &st);
 *
 *	thread:  kc_informer_run(inf, its_own_client, NULL);
 *	main:    kc_informer_wait_synced(inf, 60000);
 *	worker:  struct kc_item *it = kc_informer_get(inf, "team-a", "r1-0");
 *	         ... kc_item_data(it) ...
 *	         kc_item_unref(it);
 *	main:    kc_informer_stop(inf); join the thread; kc_informer_free(inf);
 *
 * Events. on_add, on_update and on_delete run on the informer's thread,
 * after the cache changed (so a handler that reads the cache sees the
 * change), for watch events and for the differences a relist finds:
 * objects that vanished while the watch was down get on_delete, changed
 * ones on_update. An event whose resourceVersion equals the cached one
 * (a replayed event, a relist of an unchanged object) calls nothing;
 * bookmarks call nothing. Handlers should be quick: they hold up the
 * watch. An object the transform skips is not cached; if an older version
 * was cached, it is removed with on_delete.
 *
 * "Has the cache seen my write?" Compare the resourceVersion your write
 * returned with kc_item_rv() of the cached item, or kc_informer_rv() for
 * the whole cache: resourceVersions are opaque strings, but a cluster's are
 * decimal integers that only grow, which kc_rv_compare() compares.
 *
 * Threads: kc_informer_run() on one thread at a time. kc_informer_stop()
 * and every reader (get, by_index, foreach, len, rv, synced, stats) from
 * any thread. kc_informer_free() once run() has returned and no other
 * thread uses the informer. Items may outlive the informer.
 */
#ifndef KC_INFORMER_H
#define KC_INFORMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <kc/client.h>
#include <kc/err.h>
#include <kc/macro.h>

/* "namespace/name" with its NUL. */
#define KC_INFORMER_KEY_MAX		(KC_NAMESPACE_MAX + 1 + KC_NAME_MAX + 1)

/* Longest secondary index key, with its NUL. */
#define KC_INFORMER_INDEX_MAX		KC_INFORMER_KEY_MAX

/* Reconnect backoff defaults (client-go's reflector: 800 ms to 30 s). */
#define KC_INFORMER_BACKOFF_BASE_MS	800
#define KC_INFORMER_BACKOFF_MAX_MS	30000

/* A watch lasts timeoutSeconds, random in [MIN, 2*MIN), as client-go. */
#define KC_INFORMER_WATCH_TIMEOUT_MIN_S	300

struct kc_informer;
struct kc_item;

/*
 * Makes the cached form of 'obj' (borrowed for the call; keep nothing of
 * it): 0 with '*ret' set (not NULL), or a negative code with the reason in
 * 'st' to skip the object (it is counted, and reported to on_error).
 * -ENOMEM is not a skip: the list or watch fails and is retried later.
 * Called on the informer's thread.
 */
typedef int	kc_informer_transform_fn(void *arg, const struct json_object *obj,
		    void **ret, struct kc_status *st);

/* Frees what the transform made, when the last reference to it goes. */
typedef void	kc_informer_free_fn(void *arg, void *data);

/*
 * The secondary index key of an item (at most one per item), written to
 * 'buf' as a NUL-terminated string shorter than 'size': true, or false
 * when the item is not indexed. Must be a pure function of the item.
 */
typedef bool	kc_informer_index_fn(void *arg, const struct kc_item *item,
		    char *buf, size_t size);

/* An item visited under the cache's read lock: nonzero stops the walk. */
typedef int	kc_informer_visit_fn(void *arg, struct kc_item *item);

struct kc_informer_opts {
	const struct kc_resource *res;		/* required */
	const char	*ns;			/* NULL: all namespaces */
	const char	*label_selector;
	const char	*field_selector;
	uint32_t	 page_size;		/* 0: KC_LIST_PAGE_DEFAULT */
	uint32_t	 watch_timeout_s;	/* 0: random, see above */
	uint32_t	 backoff_base_ms;	/* 0: KC_INFORMER_BACKOFF_BASE_MS */
	uint32_t	 backoff_max_ms;	/* 0: KC_INFORMER_BACKOFF_MAX_MS */
	size_t		 max_items;		/* 0: KC_LIST_ALL_MAX_DEFAULT */

	/*
	 * The members of each object the transform reads (paths as in
	 * kc/jsonstream.h, "spec.nodeName"), nkeep of them; nothing else is
	 * built when lists and watch events are decoded. The informer adds
	 * what it reads itself (metadata name, namespace, resourceVersion)
	 * and the members of a metav1.Status. NULL: the whole object.
	 */
	const char *const *keep;
	size_t		 nkeep;

	kc_informer_transform_fn *transform;	/* required */
	kc_informer_free_fn *free_item;		/* NULL: kc_free() */
	kc_informer_index_fn *index;		/* NULL: no secondary index */

	/* Handlers, NULL for none; on the informer's thread, items borrowed. */
	void	(*on_add)(void *arg, struct kc_item *item);
	void	(*on_update)(void *arg, struct kc_item *old, struct kc_item *item);
	void	(*on_delete)(void *arg, struct kc_item *item);
	/*
	 * Every failure the informer recovers from by itself: a list or watch
	 * that failed (the code and the server's message), a skipped object.
	 * For the program's log; the informer itself never logs.
	 */
	void	(*on_error)(void *arg, int code, const struct kc_status *st);
	void		*arg;			/* for every function above */
};

/* Counters for metrics; a snapshot. */
struct kc_informer_stats {
	uint64_t	 lists;		/* complete lists stored */
	uint64_t	 relists;	/* lists because a watch expired (410) */
	uint64_t	 watches;	/* watch requests made */
	uint64_t	 watch_restarts;	/* watches that ended and were resumed */
	uint64_t	 added, modified, deleted, bookmarks;	/* watch events */
	uint64_t	 errors;	/* failed lists and watches */
	uint64_t	 skipped;	/* objects the transform refused */
	uint64_t	 backoff_ms;	/* time spent waiting to reconnect */
	uint64_t	 items;		/* in the cache now */
	int		 last_error;	/* code of the last failure, 0 if none */
};

/*
 * A new, stopped informer (nothing is sent until run). Strings in 'opts'
 * are copied. -EINVAL (reason in 'st') without res or transform, for a
 * bad namespace, or backoff_max_ms < backoff_base_ms; -ENOMEM. '*ret' is
 * written only on success.
 */
int	kc_informer_new(const struct kc_informer_opts *opts, struct kc_informer **ret,
	    struct kc_status *st) _must_check_;

/*
 * Frees the informer and drops its references to the items (items readers
 * still hold stay valid until their kc_item_unref()). NULL is fine;
 * returns NULL. Only after run() has returned.
 */
struct kc_informer *kc_informer_free(struct kc_informer *);

KC_DEFINE_CLEANUP(struct kc_informer, kc_informer_free)

/*
 * Lists, watches and keeps the cache current, on the calling thread with
 * 'cl' (which the informer uses alone until it returns), until
 * kc_informer_stop(). Failures are retried with backoff and reported to
 * on_error; they never end run(). Returns 0 once stopped (the client is
 * left cancelled: kc_client_reset_cancel() before reusing it), -EBUSY if
 * the informer is already running, -EINVAL without a client.
 */
int	kc_informer_run(struct kc_informer *, struct kc_client *cl, struct kc_status *st);

/*
 * Makes run() return promptly (it cancels the client's request in flight)
 * and wakes wait_synced(). Any thread; idempotent; a stopped informer
 * stays stopped (a later run() returns at once).
 */
void	kc_informer_stop(struct kc_informer *);

/*
 * Moves the informer to another resource of the same scope: another
 * version of the same group and resource, when the server stops serving
 * the one it reads. 'res' is borrowed, as kc_informer_opts.res, until the
 * informer is freed or moved again. The request in flight (or the backoff
 * wait) ends, and the informer lists 'res' and watches from that list.
 * The list replaces the cache as a relist does, except that every object
 * it has replaces its item even at an unchanged resourceVersion (the
 * conversion to another version keeps it): on_update for each object in
 * both, on_add and on_delete only for objects that really came or went.
 * Until the list is applied, readers see the items as they were (synced
 * stays true); it is retried with backoff like any list. Before run(),
 * the first list is at 'res'. Any thread: 0, or -EINVAL (reason in 'st')
 * without a resource or for one of the other scope.
 */
int	kc_informer_set_resource(struct kc_informer *, const struct kc_resource *res,
	    struct kc_status *st) _must_check_;

/* True once the first complete list is in the cache. Any thread. */
bool	kc_informer_synced(struct kc_informer *);

/*
 * Waits up to 'timeout_ms' (kc clock) for synced: 0, -ETIMEDOUT, or
 * -ECANCELED when the informer is stopped first. Any thread.
 */
int	kc_informer_wait_synced(struct kc_informer *, uint64_t timeout_ms);

/*
 * A new reference to the item of ns/name ('ns' NULL for cluster-scoped
 * objects), or NULL when it is not cached. Drop it with kc_item_unref().
 * Any thread.
 */
struct kc_item *kc_informer_get(struct kc_informer *, const char *ns, const char *name);

/* The same by key, "ns/name" or "name". */
struct kc_item *kc_informer_get_key(struct kc_informer *, const char *key);

/*
 * Calls 'fn' for every item whose index key is 'key', under the cache's
 * read lock: 'fn' may read items and take references, but must not call
 * this informer's functions (nor block for long: the informer waits).
 * Returns the number of items visited, or -EINVAL when the informer has
 * no index. Any thread.
 */
int	kc_informer_by_index(struct kc_informer *, const char *key,
	    kc_informer_visit_fn *fn, void *arg);

/* The same for every item of the cache, in no particular order. */
int	kc_informer_foreach(struct kc_informer *, kc_informer_visit_fn *fn, void *arg);

/* Items in the cache. Any thread. */
size_t	kc_informer_len(struct kc_informer *);

/*
 * The resourceVersion the cache is at (of the last list, event or
 * bookmark), copied into 'buf' (at least KC_RV_MAX bytes); "" before the
 * first list. Any thread.
 */
void	kc_informer_rv(struct kc_informer *, char *buf, size_t size);

/* A snapshot of the counters. Any thread. */
void	kc_informer_stats(struct kc_informer *, struct kc_informer_stats *ret);

/*
 * Compares two resourceVersions as decimal integers: <0, 0, >0. Either one
 * not a decimal integer compares by length then bytes (so the order is
 * total but meaningless). NULL is the empty string, before everything.
 */
int	kc_rv_compare(const char *a, const char *b);

/* ---- items -------------------------------------------------------------- */

/* Takes another reference. Any thread. Returns 'it'. */
struct kc_item *kc_item_ref(struct kc_item *it);

/*
 * Drops a reference; the last one frees the item with the informer's
 * free_item. NULL is fine; returns NULL. Any thread.
 */
struct kc_item *kc_item_unref(struct kc_item *it);

KC_DEFINE_CLEANUP(struct kc_item, kc_item_unref)

/* What the transform made. Read-only: items are shared between threads. */
const void	*kc_item_data(const struct kc_item *it);

/* "ns/name" (or "name"), the name alone, and the resourceVersion. */
const char	*kc_item_key(const struct kc_item *it);
const char	*kc_item_name(const struct kc_item *it);
const char	*kc_item_rv(const struct kc_item *it);

/* The namespace, copied into 'buf'; "" for cluster-scoped objects. */
void	kc_item_ns(const struct kc_item *it, char *buf, size_t size);

#endif

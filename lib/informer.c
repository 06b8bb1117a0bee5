/*
 * informer.c: list+watch feeding a cache of compact items, with handlers.
 *
 * The loop (kc_informer_run):
 *
 *	      +--> list (paged) --> apply: upserts, then a sweep of what the
 *	      |        |            list no longer has (on_delete)
 *	  410 |        v
 *	      +--- watch from the last resourceVersion --+
 *	               ^                                 | ended, error
 *	               +---- backoff when unhealthy -----+
 *
 * A watch that delivered events, or ran for a while, was healthy: the
 * failure count starts over and the next watch starts at once from the
 * last resourceVersion. A watch that failed, or ended at once with
 * nothing (client-go's "very short watch"), counts a failure; failures
 * wait base << (n - 1), capped, with equal jitter, or the server's
 * Retry-After when longer. So a flapping server never sees a hot loop.
 * A 410 after a healthy watch relists at once; one right after a list
 * waits like any failure.
 *
 * The cache. Items live in a chained hash table keyed "ns/name" and, when
 * the caller gave an index function, in one doubly linked group per index
 * key, the groups in a kc_hmap. The item table is the one hash table of
 * its own in libkc: it holds every cached object, and a kc_hmap_node
 * (which points at its key) would add 16 bytes to each; here the chain
 * link and hash fit beside the reference count, and the key is the
 * item's own "ns/name". A pthread rwlock guards both:
 * the informer's thread is the only writer, readers take the read lock.
 * An item is one allocation from the pool of long-lived blocks
 * (kc_keep_malloc(): cache entries pack together, apart from the
 * decoding's short-lived blocks): the header, then "ns/name\0rv\0". Its
 * reference count is atomic; the cache holds one reference, readers and
 * handlers may take more, and whoever drops the last frees the caller's
 * data through the free function, which sits in a small reference-counted
 * "class" shared by all the items, so items may outlive the informer.
 *
 * A list is collected in a temporary table (to find duplicates) and a
 * list-order chain through the items' index links, which are free until
 * the item joins the cache; handlers then see the list's order. A relist
 * tags every item the new list confirms or brings with a new generation
 * number; the sweep afterwards removes the items with an older
 * tag, chaining them through their (now unused) hash link, and reports
 * them with on_delete once the lock is released. A list that fails half
 * way changes nothing.
 *
 * Handlers run without any lock held, after the cache changed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/client.h>
#include <kc/clock.h>
#include <kc/err.h>
#include <kc/hash.h>
#include <kc/informer.h>
#include <kc/json.h>
#include <kc/jsonstream.h>
#include <kc/str.h>
#include <kc/watch.h>

#define BUCKETS_MIN		64
#define NAP_SLICE_MS		50	/* stop() is noticed within this in a backoff */
#define HEALTHY_WATCH_MS	1000	/* a watch this long was not a failure */
#define WAIT_SLICE_MS		100

struct item_class {
	atomic_size_t		 refs;
	kc_informer_free_fn	*free_item;
	void			*arg;
};

struct kc_item {
	atomic_uint		 refs;
	uint32_t		 hash;
	struct kc_item		*next;		/* hash chain (or the sweep's list) */
	struct kc_item		*inext, *iprev;	/* index group */
	struct item_class	*cls;
	void			*data;
	uint32_t		 gen;		/* the list that confirmed it */
	uint16_t		 name_off;	/* the name within key[] */
	uint16_t		 rv_off;	/* the resourceVersion within key[] */
	char			 key[];		/* "ns/name\0rv\0" */
};

struct table {
	struct kc_item		**b;
	size_t			 nb, n;
};

/* A list being collected: its items by key, and in list order. */
struct listing {
	struct table		 t;
	struct kc_item		*head;		/* linked through inext */
	struct kc_item		**tail;
};

struct group {
	struct kc_hmap_node	 h;		/* in groups; h.key is key[] */
	struct kc_item		*head;
	size_t			 n;
	char			 key[];
};

struct kc_informer {
	struct kc_informer_opts	 opts;		/* strings point at the copies */
	char			*ns, *label, *field;
	struct kc_json_filter	*filter;	/* from opts.keep; NULL: all */
	struct item_class	*cls;
	uint32_t		 seed;

	pthread_rwlock_t	 lock;		/* the cache */
	struct table		 store;
	struct kc_hmap		 groups;	/* seeded */
	uint32_t		 gen;

	pthread_mutex_t		 mu;		/* all below */
	pthread_cond_t		 cv;		/* synced or stopped */
	char			 rv[KC_RV_MAX];
	struct kc_informer_stats stats;
	bool			 synced, running;
	bool			 sync_ok;	/* lock, mu and cv were made */
	struct kc_client	*cl;		/* while running */
	const struct kc_resource *next_res;	/* set_resource(): to list next */
	atomic_bool		 stopped;

	bool			 replace;	/* the next list replaces every item */
};

/* ---- items ------------------------------------------------------------- */

static void
class_unref(struct item_class *c)
{
	if (c != NULL && atomic_fetch_sub(&c->refs, 1) == 1)
		kc_free(c);
}

struct kc_item *
kc_item_ref(struct kc_item *it)
{
	atomic_fetch_add_explicit(&it->refs, 1, memory_order_relaxed);
	return it;
}

struct kc_item *
kc_item_unref(struct kc_item *it)
{
	struct item_class *c;

	if (it == NULL || atomic_fetch_sub_explicit(&it->refs, 1, memory_order_acq_rel) != 1)
		return NULL;
	c = it->cls;
	if (c->free_item != NULL)
		c->free_item(c->arg, it->data);
	else
		kc_free(it->data);
	kc_free(it);
	class_unref(c);
	return NULL;
}

const void *
kc_item_data(const struct kc_item *it)
{
	return it->data;
}

const char *
kc_item_key(const struct kc_item *it)
{
	return it->key;
}

const char *
kc_item_name(const struct kc_item *it)
{
	return it->key + it->name_off;
}

const char *
kc_item_rv(const struct kc_item *it)
{
	return it->key + it->rv_off;
}

void
kc_item_ns(const struct kc_item *it, char *buf, size_t size)
{
	size_t n = it->name_off > 0 ? it->name_off - 1u : 0;

	if (size == 0)
		return;
	n = KC_MIN(n, size - 1);
	memcpy(buf, it->key, n);
	buf[n] = '\0';
}

int
kc_rv_compare(const char *a, const char *b)
{
	size_t la, lb;
	int c;

	a = a != NULL ? a : "";
	b = b != NULL ? b : "";
	while (a[0] == '0' && a[1] >= '0' && a[1] <= '9')
		a++;
	while (b[0] == '0' && b[1] >= '0' && b[1] <= '9')
		b++;
	la = strlen(a);
	lb = strlen(b);
	if (la != lb)
		return la < lb ? -1 : 1;
	c = strcmp(a, b);
	return c < 0 ? -1 : c > 0;
}

static uint32_t
str_hash(uint32_t seed, const char *s)
{
	uint32_t h = kc_fnv1a32_str(KC_FNV1A32_INIT ^ seed, s);

	return h ^ (h >> 15);
}

/* ---- the tables -------------------------------------------------------- */

static int
table_init(struct table *t)
{
	t->n = 0;
	t->nb = BUCKETS_MIN;
	if ((t->b = kc_calloc(t->nb, sizeof(*t->b))) == NULL)
		return -ENOMEM;
	return 0;
}

/* Drops the table's references and frees it. */
static void
table_clear(struct table *t)
{
	for (size_t i = 0; t->b != NULL && i < t->nb; i++) {
		struct kc_item *it = t->b[i], *next;

		for (; it != NULL; it = next) {
			next = it->next;
			kc_item_unref(it);
		}
	}
	t->b = kc_free(t->b);
	t->n = t->nb = 0;
}

static struct kc_item *
table_find(const struct table *t, const char *key, uint32_t h)
{
	struct kc_item *it;

	for (it = t->b[h & (t->nb - 1)]; it != NULL; it = it->next)
		if (it->hash == h && strcmp(it->key, key) == 0)
			return it;
	return NULL;
}

/* Doubles the buckets; when that fails the chains just get longer. */
static void
table_grow(struct table *t)
{
	size_t n = t->nb * 2;
	struct kc_item **b;

	if ((b = kc_calloc(n, sizeof(*b))) == NULL)
		return;
	for (size_t i = 0; i < t->nb; i++) {
		struct kc_item *it = t->b[i], *next;

		for (; it != NULL; it = next) {
			next = it->next;
			it->next = b[it->hash & (n - 1)];
			b[it->hash & (n - 1)] = it;
		}
	}
	kc_free(t->b);
	t->b = b;
	t->nb = n;
}

/* Inserts 'it' (absent from the table), which gives it its reference. */
static void
table_insert(struct table *t, struct kc_item *it)
{
	struct kc_item **head = &t->b[it->hash & (t->nb - 1)];

	it->next = *head;
	*head = it;
	if (++t->n > t->nb)
		table_grow(t);
}

/* Unlinks and returns the item of 'key' (with the table's reference). */
static struct kc_item *
table_remove(struct table *t, const char *key, uint32_t h)
{
	struct kc_item **pp, *it;

	for (pp = &t->b[h & (t->nb - 1)]; (it = *pp) != NULL; pp = &it->next)
		if (it->hash == h && strcmp(it->key, key) == 0) {
			*pp = it->next;
			it->next = NULL;
			t->n--;
			return it;
		}
	return NULL;
}

/* ---- the secondary index ------------------------------------------------- */

static bool
index_of(struct kc_informer *inf, const struct kc_item *it, char *buf)
{
	if (inf->opts.index == NULL)
		return false;
	buf[0] = '\0';
	if (!inf->opts.index(inf->opts.arg, it, buf, KC_INFORMER_INDEX_MAX))
		return false;
	buf[KC_INFORMER_INDEX_MAX - 1] = '\0';
	return true;
}

static struct group *
group_find(struct kc_informer *inf, const char *key)
{
	struct kc_hmap_node *n = kc_hmap_get(&inf->groups, key);

	return n != NULL ? (struct group *)(void *)((char *)n -
	    offsetof(struct group, h)) : NULL;
}

/* The group of 'key', created (empty) when absent; NULL for -ENOMEM. */
static struct group *
group_get(struct kc_informer *inf, const char *key)
{
	size_t len = strlen(key);
	struct group *g;

	if ((g = group_find(inf, key)) != NULL)
		return g;
	if ((g = kc_keep_malloc(sizeof(*g) + len + 1)) == NULL)
		return NULL;
	memset(g, 0, sizeof(*g));
	memcpy(g->key, key, len + 1);
	g->h.key = g->key;
	if (kc_hmap_put(&inf->groups, &g->h) < 0) {
		kc_free(g);
		return NULL;
	}
	return g;
}

static void
group_free(struct kc_informer *inf, struct group *g)
{
	kc_hmap_del(&inf->groups, &g->h);
	kc_free(g);
}

static void
group_link(struct group *g, struct kc_item *it)
{
	it->iprev = NULL;
	it->inext = g->head;
	if (g->head != NULL)
		g->head->iprev = it;
	g->head = it;
	g->n++;
}

/* Takes 'it' out of its group, if it is in one. */
static void
index_remove(struct kc_informer *inf, struct kc_item *it)
{
	char key[KC_INFORMER_INDEX_MAX];
	struct group *g;

	if (!index_of(inf, it, key))
		return;
	if ((g = group_find(inf, key)) == NULL)
		return;
	if (it->iprev == NULL && g->head != it)
		return;			/* not linked: the index function is not pure */
	if (it->iprev != NULL)
		it->iprev->inext = it->inext;
	else
		g->head = it->inext;
	if (it->inext != NULL)
		it->inext->iprev = it->iprev;
	it->inext = it->iprev = NULL;
	if (--g->n == 0)
		group_free(inf, g);
}

/* ---- the cache ------------------------------------------------------------ */

/*
 * Puts 'it' in the cache (which takes its reference) in place of the item
 * of the same key, returned in '*ret_old' with the cache's reference.
 * -ENOMEM (nothing changed) when a new index group cannot be made. Under
 * the write lock.
 */
static int
store_put(struct kc_informer *inf, struct kc_item *it, struct kc_item **ret_old)
{
	char ikey[KC_INFORMER_INDEX_MAX];
	struct group *g = NULL;
	struct kc_item *old;

	if (index_of(inf, it, ikey) && (g = group_get(inf, ikey)) == NULL)
		return -ENOMEM;
	if (g != NULL)
		group_link(g, it);	/* first, so 'g' cannot empty below */
	if ((old = table_remove(&inf->store, it->key, it->hash)) != NULL)
		index_remove(inf, old);
	table_insert(&inf->store, it);
	*ret_old = old;
	return 0;
}

/* Removes the item of 'key' and returns it with the cache's reference. */
static struct kc_item *
store_remove(struct kc_informer *inf, const char *key, uint32_t h)
{
	struct kc_item *old = table_remove(&inf->store, key, h);

	if (old != NULL)
		index_remove(inf, old);
	return old;
}

static void
set_items_stat(struct kc_informer *inf)
{
	size_t n;

	(void)pthread_rwlock_rdlock(&inf->lock);
	n = inf->store.n;
	(void)pthread_rwlock_unlock(&inf->lock);
	(void)pthread_mutex_lock(&inf->mu);
	inf->stats.items = n;
	(void)pthread_mutex_unlock(&inf->mu);
}

static void
set_rv(struct kc_informer *inf, const char *rv)
{
	if (rv == NULL || rv[0] == '\0')
		return;
	(void)pthread_mutex_lock(&inf->mu);
	(void)kc_strlcpy(inf->rv, rv, sizeof(inf->rv));
	(void)pthread_mutex_unlock(&inf->mu);
}

static void
report(struct kc_informer *inf, int code, const struct kc_status *st, bool skip)
{
	(void)pthread_mutex_lock(&inf->mu);
	if (skip)
		inf->stats.skipped++;
	else
		inf->stats.errors++;
	inf->stats.last_error = code;
	(void)pthread_mutex_unlock(&inf->mu);
	if (inf->opts.on_error != NULL)
		inf->opts.on_error(inf->opts.arg, code, st);
}

/* ---- objects to items ------------------------------------------------------ */

/*
 * The key of an object, "ns/name" or "name", into 'buf' (of
 * KC_INFORMER_KEY_MAX bytes), with the name's offset. KC_EPARSE for an
 * object without a usable name or namespace.
 */
static int
object_key(struct kc_informer *inf, const struct json_object *obj, char *buf,
    size_t *ret_name_off, struct kc_status *st)
{
	const char *name = kc_json_str(obj, "metadata", "name");
	const char *ns = kc_json_str(obj, "metadata", "namespace");
	size_t nl, sl;

	if (name == NULL || name[0] == '\0')
		return kc_status_set(st, KC_EPARSE, "%s: object without metadata.name",
		    inf->opts.res->resource);
	nl = strnlen(name, KC_NAME_MAX + 1);
	if (nl > KC_NAME_MAX)
		return kc_status_set(st, KC_EPARSE, "%s: name longer than %d bytes",
		    inf->opts.res->resource, KC_NAME_MAX);
	if (!inf->opts.res->namespaced || ns == NULL || ns[0] == '\0') {
		if (inf->opts.res->namespaced)
			return kc_status_set(st, KC_EPARSE, "%s \"%s\" without a namespace",
			    inf->opts.res->resource, name);
		memcpy(buf, name, nl + 1);
		*ret_name_off = 0;
		return 0;
	}
	sl = strnlen(ns, KC_NAMESPACE_MAX + 1);
	if (sl > KC_NAMESPACE_MAX)
		return kc_status_set(st, KC_EPARSE, "%s \"%s\": namespace longer than %d bytes",
		    inf->opts.res->resource, name, KC_NAMESPACE_MAX);
	memcpy(buf, ns, sl);
	buf[sl] = '/';
	memcpy(buf + sl + 1, name, nl + 1);
	*ret_name_off = sl + 1;
	return 0;
}

/*
 * Makes the item of 'obj': 0, -ENOMEM, or another code (with 'st') when
 * the object is to be skipped; '*ret_key' gets its key whenever the
 * object has one, so a skipped object can still be removed.
 */
static int
item_new(struct kc_informer *inf, const struct json_object *obj, char *ret_key,
    struct kc_item **ret, struct kc_status *st)
{
	const char *rv = kc_json_str(obj, "metadata", "resourceVersion");
	size_t name_off, klen, rvlen;
	struct kc_item *it;
	void *data = NULL;
	int r;

	ret_key[0] = '\0';
	if ((r = object_key(inf, obj, ret_key, &name_off, st)) < 0)
		return r;
	rv = rv != NULL ? rv : "";
	if ((rvlen = strnlen(rv, KC_RV_MAX)) == KC_RV_MAX)
		return kc_status_set(st, KC_EPARSE, "%s %s: resourceVersion longer than %d "
		    "bytes", inf->opts.res->resource, ret_key, KC_RV_MAX - 1);
	if ((r = inf->opts.transform(inf->opts.arg, obj, &data, st)) < 0)
		return r;
	if (data == NULL)
		return kc_status_set(st, -EINVAL, "%s %s: the transform returned no item",
		    inf->opts.res->resource, ret_key);
	klen = strlen(ret_key);
	if ((it = kc_keep_malloc(sizeof(*it) + klen + 1 + rvlen + 1)) == NULL) {
		if (inf->cls->free_item != NULL)
			inf->cls->free_item(inf->cls->arg, data);
		else
			kc_free(data);
		return -ENOMEM;
	}
	memset(it, 0, sizeof(*it));
	atomic_init(&it->refs, 1);
	memcpy(it->key, ret_key, klen + 1);
	memcpy(it->key + klen + 1, rv, rvlen + 1);
	it->name_off = (uint16_t)name_off;
	it->rv_off = (uint16_t)(klen + 1);
	it->hash = str_hash(inf->seed, it->key);
	it->data = data;
	it->cls = inf->cls;
	atomic_fetch_add(&inf->cls->refs, 1);
	*ret = it;
	return 0;
}

/*
 * Puts a new item in the cache and tells the handlers: on_add, on_update,
 * or nothing when the cached item has the same resourceVersion (unless
 * 'replace': the same object read at another version of its resource).
 * Takes the caller's reference to 'it'. 0 or -ENOMEM. A watch event
 * ('bounded') may not grow the cache past max_items; a list was bounded
 * already, and its sweep removes what it replaces.
 */
static int
upsert(struct kc_informer *inf, struct kc_item *it, uint32_t gen, bool bounded,
    bool replace)
{
	struct kc_item *old;
	int r;

	(void)pthread_rwlock_wrlock(&inf->lock);
	old = table_find(&inf->store, it->key, it->hash);
	if (old != NULL && !replace && strcmp(kc_item_rv(old), kc_item_rv(it)) == 0) {
		old->gen = gen;
		(void)pthread_rwlock_unlock(&inf->lock);
		kc_item_unref(it);
		return 0;
	}
	if (bounded && old == NULL && inf->store.n >= inf->opts.max_items) {
		struct kc_status st;

		(void)pthread_rwlock_unlock(&inf->lock);
		(void)kc_status_set(&st, -E2BIG, "%s: more than %zu objects, %s not cached",
		    inf->opts.res->resource, inf->opts.max_items, it->key);
		kc_item_unref(it);
		report(inf, -E2BIG, &st, true);
		return 0;
	}
	it->gen = gen;
	r = store_put(inf, it, &old);
	(void)pthread_rwlock_unlock(&inf->lock);
	if (r < 0) {
		kc_item_unref(it);
		return r;
	}
	if (old == NULL && inf->opts.on_add != NULL)
		inf->opts.on_add(inf->opts.arg, it);
	else if (old != NULL && inf->opts.on_update != NULL)
		inf->opts.on_update(inf->opts.arg, old, it);
	kc_item_unref(old);
	return 0;
}

/* Removes 'key' from the cache and calls on_delete if it was there. */
static void
remove_key(struct kc_informer *inf, const char *key)
{
	struct kc_item *old;

	(void)pthread_rwlock_wrlock(&inf->lock);
	old = store_remove(inf, key, str_hash(inf->seed, key));
	(void)pthread_rwlock_unlock(&inf->lock);
	if (old == NULL)
		return;
	if (inf->opts.on_delete != NULL)
		inf->opts.on_delete(inf->opts.arg, old);
	kc_item_unref(old);
}

/* ---- list -------------------------------------------------------------------- */

/* Applies a complete list: upserts, then the sweep of what it lacks. */
static int
apply_list(struct kc_informer *inf, struct listing *l, const char *rv)
{
	struct kc_item *dead = NULL, *it, *next, **pp;
	uint32_t gen = ++inf->gen;
	int r = 0;

	/* The items leave the table for the cache: only the order chain stays. */
	memset(l->t.b, 0, l->t.nb * sizeof(*l->t.b));
	l->t.n = 0;
	for (it = l->head, l->head = NULL, l->tail = &l->head; it != NULL; it = next) {
		next = it->inext;
		it->inext = NULL;
		it->next = NULL;
		if (r == 0)
			r = upsert(inf, it, gen, false, inf->replace);
		else
			kc_item_unref(it);
	}
	if (r < 0)
		return r;		/* no sweep: the next list settles it */
	(void)pthread_rwlock_wrlock(&inf->lock);
	for (size_t i = 0; i < inf->store.nb; i++) {
		for (pp = &inf->store.b[i]; (it = *pp) != NULL;) {
			if (it->gen == gen) {
				pp = &it->next;
				continue;
			}
			*pp = it->next;
			inf->store.n--;
			index_remove(inf, it);
			it->next = dead;
			dead = it;
		}
	}
	(void)pthread_rwlock_unlock(&inf->lock);
	for (it = dead; it != NULL; it = next) {
		next = it->next;
		it->next = NULL;
		if (inf->opts.on_delete != NULL)
			inf->opts.on_delete(inf->opts.arg, it);
		kc_item_unref(it);
	}
	inf->replace = false;
	set_rv(inf, rv);
	set_items_stat(inf);
	(void)pthread_mutex_lock(&inf->mu);
	inf->stats.lists++;
	inf->synced = true;
	(void)pthread_cond_broadcast(&inf->cv);
	(void)pthread_mutex_unlock(&inf->mu);
	return 0;
}

static void
listing_clear(struct listing *l)
{
	struct kc_item *it, *next;

	if (l->t.b != NULL)
		memset(l->t.b, 0, l->t.nb * sizeof(*l->t.b));
	for (it = l->head; it != NULL; it = next) {
		next = it->inext;
		kc_item_unref(it);
	}
	l->head = NULL;
	l->tail = &l->head;
	table_clear(&l->t);
}

/* Adds an item to the listing; a duplicate key replaces the earlier one. */
static void
listing_add(struct listing *l, struct kc_item *it)
{
	struct kc_item *dup, **pp;

	if ((dup = table_remove(&l->t, it->key, it->hash)) != NULL) {
		for (pp = &l->head; *pp != dup; pp = &(*pp)->inext)
			;
		*pp = dup->inext;
		if (l->tail == &dup->inext)
			l->tail = pp;
		kc_item_unref(dup);
	}
	table_insert(&l->t, it);
	it->inext = NULL;
	*l->tail = it;
	l->tail = &it->inext;
}

/* Transforms one page's items into the listing. */
static int
take_page(struct kc_informer *inf, struct json_object *items, struct listing *l,
    struct kc_status *st)
{
	size_t n = json_object_array_length(items);
	char key[KC_INFORMER_KEY_MAX];

	for (size_t i = 0; i < n; i++) {
		struct json_object *obj = json_object_array_get_idx(items, i);
		struct kc_item *it;
		struct kc_status ist;
		int r;

		if (l->t.n >= inf->opts.max_items)
			return kc_status_set(st, -E2BIG, "list of %s: more than %zu objects",
			    inf->opts.res->resource, inf->opts.max_items);
		if (!json_object_is_type(obj, json_type_object))
			return kc_status_set(st, KC_EPARSE, "list of %s: an item is not an "
			    "object", inf->opts.res->resource);
		kc_status_clear(&ist);
		if ((r = item_new(inf, obj, key, &it, &ist)) == -ENOMEM)
			return kc_status_set(st, r, "list of %s: out of memory",
			    inf->opts.res->resource);
		if (r < 0) {
			report(inf, r, &ist, true);
			continue;
		}
		listing_add(l, it);
	}
	return 0;
}

static int
do_list(struct kc_informer *inf, struct kc_client *cl, struct kc_status *st)
{
	_cleanup_(kc_freep) char *cont = NULL;
	struct listing l = { .tail = &l.head };
	char rv[KC_RV_MAX] = "";
	int r;

	if ((r = table_init(&l.t)) < 0)
		return r;
	for (size_t pages = 0;; pages++) {
		_cleanup_(kc_json_putp) struct json_object *page = NULL;
		struct json_object *items;
		const char *next;

		if (pages == KC_LIST_ALL_PAGES_MAX) {
			r = kc_status_set(st, -E2BIG, "list of %s: more than %d pages",
			    inf->opts.res->resource, KC_LIST_ALL_PAGES_MAX);
			goto out;
		}
		if ((r = kc_client_list(cl, &(struct kc_list_opts){
			.res = inf->opts.res,
			.ns = inf->ns,
			.label_selector = inf->label,
			.field_selector = inf->field,
			.limit = inf->opts.page_size,
			.cont = cont,
			.filter = inf->filter,
		}, &page, st)) < 0)
			goto out;
		items = kc_json_get(page, "items");
		if (items != NULL && !json_object_is_type(items, json_type_array)) {
			r = kc_status_set(st, KC_EPARSE, "list of %s: items is not an array",
			    inf->opts.res->resource);
			goto out;
		}
		if (pages == 0) {
			const char *lrv = kc_json_str(page, "metadata", "resourceVersion");

			if (lrv == NULL || lrv[0] == '\0' || strlen(lrv) >= sizeof(rv)) {
				r = kc_status_set(st, KC_EPARSE, "list of %s: no usable "
				    "metadata.resourceVersion", inf->opts.res->resource);
				goto out;
			}
			(void)kc_strlcpy(rv, lrv, sizeof(rv));
		}
		if (items != NULL && (r = take_page(inf, items, &l, st)) < 0)
			goto out;
		cont = kc_free(cont);
		next = kc_json_str(page, "metadata", "continue");
		if (next == NULL || next[0] == '\0')
			break;
		if ((cont = kc_strdup(next)) == NULL) {
			r = -ENOMEM;
			goto out;
		}
	}
	if ((r = apply_list(inf, &l, rv)) == -ENOMEM)
		r = kc_status_set(st, r, "list of %s: out of memory", inf->opts.res->resource);
out:
	listing_clear(&l);
	return r;
}

/* ---- watch ------------------------------------------------------------------- */

static int
on_event(void *arg, enum kc_watch_type type, struct json_object *obj)
{
	struct kc_informer *inf = arg;
	const char *rv = kc_json_str(obj, "metadata", "resourceVersion");
	char key[KC_INFORMER_KEY_MAX];
	struct kc_status st;
	struct kc_item *it;
	size_t name_off;
	int r;

	(void)pthread_mutex_lock(&inf->mu);
	switch (type) {
	case KC_WATCH_ADDED:	inf->stats.added++; break;
	case KC_WATCH_MODIFIED:	inf->stats.modified++; break;
	case KC_WATCH_DELETED:	inf->stats.deleted++; break;
	case KC_WATCH_BOOKMARK:	inf->stats.bookmarks++; break;
	default:		break;
	}
	(void)pthread_mutex_unlock(&inf->mu);
	kc_status_clear(&st);
	switch (type) {
	case KC_WATCH_ADDED:
	case KC_WATCH_MODIFIED:
		if ((r = item_new(inf, obj, key, &it, &st)) == -ENOMEM)
			return r;
		if (r < 0) {
			report(inf, r, &st, true);
			if (key[0] != '\0')
				remove_key(inf, key);
			break;
		}
		if ((r = upsert(inf, it, inf->gen, true, false)) < 0)
			return r;
		break;
	case KC_WATCH_DELETED:
		if (object_key(inf, obj, key, &name_off, &st) < 0) {
			report(inf, KC_EPARSE, &st, true);
			break;
		}
		remove_key(inf, key);
		break;
	default:
		break;
	}
	set_rv(inf, rv);
	if (type != KC_WATCH_BOOKMARK)
		set_items_stat(inf);
	return 0;
}

static int
do_watch(struct kc_informer *inf, struct kc_client *cl, uint64_t *ret_events,
    struct kc_status *st)
{
	struct kc_watch_result wr;
	char rv[KC_RV_MAX];
	uint32_t timeout = inf->opts.watch_timeout_s;
	int r;

	if (timeout == 0)
		timeout = KC_INFORMER_WATCH_TIMEOUT_MIN_S +
		    (uint32_t)(kc_random_u64() % KC_INFORMER_WATCH_TIMEOUT_MIN_S);
	kc_informer_rv(inf, rv, sizeof(rv));
	(void)pthread_mutex_lock(&inf->mu);
	inf->stats.watches++;
	(void)pthread_mutex_unlock(&inf->mu);
	memset(&wr, 0, sizeof(wr));
	r = kc_watch_run(cl, &(struct kc_watch_opts){
		.res = inf->opts.res,
		.ns = inf->ns,
		.label_selector = inf->label,
		.field_selector = inf->field,
		.resource_version = rv,
		.allow_bookmarks = true,
		.timeout_s = timeout,
		.filter = inf->filter,
	}, on_event, inf, &wr, st);
	*ret_events = wr.events;
	set_rv(inf, wr.resource_version);
	return r == KC_WATCH_STOP ? 0 : r;
}

/* ---- the loop ------------------------------------------------------------------ */

static bool	resource_pending(struct kc_informer *);

/*
 * Sleeps 'ms' on the kc clock, in slices; false when stopped meanwhile.
 * A new resource to follow ends the nap early.
 */
static bool
nap(struct kc_informer *inf, uint64_t ms)
{
	while (ms > 0) {
		uint64_t n = KC_MIN(ms, (uint64_t)NAP_SLICE_MS);

		if (atomic_load(&inf->stopped))
			return false;
		if (resource_pending(inf))
			break;
		(void)kc_clock_sleep_ms(n);
		ms -= n;
		(void)pthread_mutex_lock(&inf->mu);
		inf->stats.backoff_ms += n;
		(void)pthread_mutex_unlock(&inf->mu);
	}
	return !atomic_load(&inf->stopped);
}

/* The wait before attempt number 'failures' (>= 1): equal jitter. */
static uint64_t
backoff_ms(const struct kc_informer *inf, unsigned failures, uint32_t retry_after_ms)
{
	uint64_t d = inf->opts.backoff_base_ms;

	for (unsigned i = 1; i < failures && d < inf->opts.backoff_max_ms; i++)
		d *= 2;
	d = KC_MIN(d, (uint64_t)inf->opts.backoff_max_ms);
	d = d / 2 + kc_random_u64() % (d / 2 + 1);
	return KC_MAX(d, (uint64_t)retry_after_ms);
}

/*
 * Takes the resource kc_informer_set_resource() asked for, if any: true
 * (the next list is at the new resource and replaces the cache). The
 * request it cancelled left the client cancelled; not once stopped.
 */
static bool
take_resource(struct kc_informer *inf, struct kc_client *cl)
{
	bool taken = false;

	(void)pthread_mutex_lock(&inf->mu);
	if (inf->next_res != NULL && !atomic_load(&inf->stopped)) {
		inf->opts.res = inf->next_res;
		inf->next_res = NULL;
		inf->replace = true;
		kc_client_reset_cancel(cl);
		taken = true;
	}
	(void)pthread_mutex_unlock(&inf->mu);
	return taken;
}

static bool
resource_pending(struct kc_informer *inf)
{
	bool p;

	(void)pthread_mutex_lock(&inf->mu);
	p = inf->next_res != NULL;
	(void)pthread_mutex_unlock(&inf->mu);
	return p;
}

int
kc_informer_run(struct kc_informer *inf, struct kc_client *cl, struct kc_status *st)
{
	unsigned failures = 0;
	uint32_t retry_after = 0;
	bool need_list = true;

	if (cl == NULL)
		return kc_status_set(st, -EINVAL, "informer: no client");
	(void)pthread_mutex_lock(&inf->mu);
	if (inf->running) {
		(void)pthread_mutex_unlock(&inf->mu);
		return kc_status_set(st, -EBUSY, "informer: already running");
	}
	inf->running = true;
	inf->cl = cl;
	(void)pthread_mutex_unlock(&inf->mu);

	while (!atomic_load(&inf->stopped)) {
		struct kc_status est;
		uint64_t events = 0, start;
		int r;

		if (take_resource(inf, cl)) {
			need_list = true;
			failures = 0;
		}
		if (failures > 0 && !nap(inf, backoff_ms(inf, failures, retry_after)))
			break;
		retry_after = 0;
		kc_status_clear(&est);
		if (need_list) {
			r = do_list(inf, cl, &est);
			if (atomic_load(&inf->stopped))
				break;
			if (r < 0 && resource_pending(inf))
				continue;	/* cancelled for the switch */
			if (r < 0) {
				report(inf, r, &est, false);
				failures++;
				if (r == KC_ETHROTTLED)
					retry_after = est.retry_after_ms;
				continue;
			}
			need_list = false;
			failures = 0;
		}
		start = kc_clock_now_ms();
		r = do_watch(inf, cl, &events, &est);
		if (atomic_load(&inf->stopped))
			break;
		if (resource_pending(inf))
			continue;	/* the watch was cancelled for the switch */
		(void)pthread_mutex_lock(&inf->mu);
		inf->stats.watch_restarts++;
		if (r == KC_EEXPIRED)
			inf->stats.relists++;
		(void)pthread_mutex_unlock(&inf->mu);
		if (r == KC_EEXPIRED) {
			need_list = true;
			failures = events > 0 ? 0 : failures + 1;
		} else if (r == 0) {
			if (events > 0 || kc_clock_now_ms() - start >= HEALTHY_WATCH_MS)
				failures = 0;
			else
				failures++;
		} else {
			report(inf, r, &est, false);
			failures = events > 0 ? 1 : failures + 1;
			if (r == KC_ETHROTTLED)
				retry_after = est.retry_after_ms;
		}
	}
	(void)pthread_mutex_lock(&inf->mu);
	inf->running = false;
	inf->cl = NULL;
	(void)pthread_mutex_unlock(&inf->mu);
	return 0;
}

void
kc_informer_stop(struct kc_informer *inf)
{
	(void)pthread_mutex_lock(&inf->mu);
	atomic_store(&inf->stopped, true);
	if (inf->cl != NULL)
		kc_client_cancel(inf->cl);
	(void)pthread_cond_broadcast(&inf->cv);
	(void)pthread_mutex_unlock(&inf->mu);
}

int
kc_informer_set_resource(struct kc_informer *inf, const struct kc_resource *res,
    struct kc_status *st)
{
	if (res == NULL || res->resource == NULL)
		return kc_status_set(st, -EINVAL, "informer: no resource");
	(void)pthread_mutex_lock(&inf->mu);
	if (res->namespaced != inf->opts.res->namespaced) {
		(void)pthread_mutex_unlock(&inf->mu);
		return kc_status_set(st, -EINVAL, "informer: %s and %s differ in scope",
		    inf->opts.res->resource, res->resource);
	}
	inf->next_res = res;
	if (inf->cl != NULL)
		kc_client_cancel(inf->cl);
	(void)pthread_mutex_unlock(&inf->mu);
	return 0;
}

/* ---- setup and readers ------------------------------------------------------ */

/* The locks; the condition variable waits on the monotonic clock. */
static int
sync_init(struct kc_informer *inf)
{
	pthread_condattr_t ca;
	int r = -ENOMEM;

	if (pthread_condattr_init(&ca) != 0)
		return -ENOMEM;
	(void)pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_rwlock_init(&inf->lock, NULL) != 0)
		goto out;
	if (pthread_mutex_init(&inf->mu, NULL) != 0) {
		(void)pthread_rwlock_destroy(&inf->lock);
		goto out;
	}
	if (pthread_cond_init(&inf->cv, &ca) != 0) {
		(void)pthread_mutex_destroy(&inf->mu);
		(void)pthread_rwlock_destroy(&inf->lock);
		goto out;
	}
	inf->sync_ok = true;
	r = 0;
out:
	(void)pthread_condattr_destroy(&ca);
	return r;
}

static int
copy_opt(const char *s, char **ret)
{
	*ret = NULL;
	if (s != NULL && (*ret = kc_strdup(s)) == NULL)
		return -ENOMEM;
	return 0;
}

/*
 * The filter of opts->keep, plus what the informer reads of every object
 * and the members of a metav1.Status (an ERROR event's object).
 */
static int
make_filter(struct kc_informer *inf, const struct kc_informer_opts *opts,
    struct kc_status *st)
{
	static const char *const own[] = {
		"metadata.name", "metadata.namespace", "metadata.resourceVersion",
		"apiVersion", "kind", "status", "message", "reason", "details", "code",
	};
	_cleanup_(kc_freep) const char **paths = NULL;
	size_t n = KC_ARRAY_SIZE(own) + opts->nkeep;

	if (opts->nkeep > KC_JSON_FILTER_PATHS_MAX)
		return kc_status_set(st, -EINVAL, "informer: more than %d keep paths",
		    KC_JSON_FILTER_PATHS_MAX);
	if ((paths = kc_calloc(n, sizeof(*paths))) == NULL)
		return -ENOMEM;
	memcpy(paths, own, sizeof(own));
	if (opts->nkeep > 0)
		memcpy(paths + KC_ARRAY_SIZE(own), opts->keep, opts->nkeep * sizeof(*paths));
	return kc_json_filter_new(paths, n, &inf->filter, st);
}

int
kc_informer_new(const struct kc_informer_opts *opts, struct kc_informer **ret,
    struct kc_status *st)
{
	_cleanup_(kc_informer_freep) struct kc_informer *inf = NULL;
	int r;

	if (opts == NULL || opts->res == NULL || opts->transform == NULL)
		return kc_status_set(st, -EINVAL, "informer: a resource and a transform "
		    "are required");
	if (opts->ns != NULL && (r = kc_client_check_namespace(opts->ns, st)) < 0)
		return r;
	if (opts->ns != NULL && !opts->res->namespaced)
		return kc_status_set(st, -EINVAL, "informer: %s is cluster-scoped: no "
		    "namespace allowed", opts->res->resource);
	if (opts->backoff_max_ms != 0 && opts->backoff_max_ms <
	    (opts->backoff_base_ms != 0 ? opts->backoff_base_ms : KC_INFORMER_BACKOFF_BASE_MS))
		return kc_status_set(st, -EINVAL, "informer: backoff_max_ms is below "
		    "backoff_base_ms");
	if ((inf = kc_calloc(1, sizeof(*inf))) == NULL)
		return -ENOMEM;
	inf->opts = *opts;
	if (inf->opts.page_size == 0)
		inf->opts.page_size = KC_LIST_PAGE_DEFAULT;
	if (inf->opts.backoff_base_ms == 0)
		inf->opts.backoff_base_ms = KC_INFORMER_BACKOFF_BASE_MS;
	if (inf->opts.backoff_max_ms == 0)
		inf->opts.backoff_max_ms = KC_MAX(KC_INFORMER_BACKOFF_MAX_MS,
		    inf->opts.backoff_base_ms);
	if (inf->opts.max_items == 0)
		inf->opts.max_items = KC_LIST_ALL_MAX_DEFAULT;
	inf->seed = (uint32_t)kc_random_u64();
	atomic_init(&inf->stopped, false);
	if ((r = sync_init(inf)) < 0)
		return r;
	if ((r = copy_opt(opts->ns, &inf->ns)) < 0 ||
	    (r = copy_opt(opts->label_selector, &inf->label)) < 0 ||
	    (r = copy_opt(opts->field_selector, &inf->field)) < 0)
		return r;
	inf->opts.ns = inf->ns;
	inf->opts.label_selector = inf->label;
	inf->opts.field_selector = inf->field;
	if (opts->keep != NULL && (r = make_filter(inf, opts, st)) < 0)
		return r;
	inf->opts.keep = NULL;	/* not copied; the filter holds them */
	if ((inf->cls = kc_calloc(1, sizeof(*inf->cls))) == NULL)
		return -ENOMEM;
	atomic_init(&inf->cls->refs, 1);
	inf->cls->free_item = opts->free_item;
	inf->cls->arg = opts->arg;
	if ((r = table_init(&inf->store)) < 0)
		return r;
	inf->groups.seed = inf->seed;
	*ret = inf;
	inf = NULL;
	return 0;
}

struct kc_informer *
kc_informer_free(struct kc_informer *inf)
{
	struct kc_hmap_node *g, *gnext;
	size_t i;

	if (inf == NULL)
		return NULL;
	table_clear(&inf->store);
	KC_HMAP_FOREACH_SAFE(g, gnext, i, &inf->groups)
		kc_free((char *)g - offsetof(struct group, h));
	kc_hmap_free(&inf->groups);
	kc_json_filter_free(inf->filter);
	if (inf->sync_ok) {
		(void)pthread_cond_destroy(&inf->cv);
		(void)pthread_mutex_destroy(&inf->mu);
		(void)pthread_rwlock_destroy(&inf->lock);
	}
	class_unref(inf->cls);
	kc_free(inf->ns);
	kc_free(inf->label);
	kc_free(inf->field);
	return kc_free(inf);
}

bool
kc_informer_synced(struct kc_informer *inf)
{
	bool s;

	(void)pthread_mutex_lock(&inf->mu);
	s = inf->synced;
	(void)pthread_mutex_unlock(&inf->mu);
	return s;
}

int
kc_informer_wait_synced(struct kc_informer *inf, uint64_t timeout_ms)
{
	uint64_t start = kc_clock_now_ms(), now;
	int r = 0;

	(void)pthread_mutex_lock(&inf->mu);
	while (!inf->synced) {
		struct timespec ts;
		uint64_t ms;

		if (atomic_load(&inf->stopped)) {
			r = -ECANCELED;
			break;
		}
		now = kc_clock_now_ms();
		if (now - start >= timeout_ms) {
			r = -ETIMEDOUT;
			break;
		}
		ms = KC_MIN(timeout_ms - (now - start), (uint64_t)WAIT_SLICE_MS);
		(void)clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)(ms / 1000);
		ts.tv_nsec += (long)(ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		(void)pthread_cond_timedwait(&inf->cv, &inf->mu, &ts);
	}
	(void)pthread_mutex_unlock(&inf->mu);
	return r;
}

struct kc_item *
kc_informer_get_key(struct kc_informer *inf, const char *key)
{
	struct kc_item *it;

	if (key == NULL)
		return NULL;
	(void)pthread_rwlock_rdlock(&inf->lock);
	it = table_find(&inf->store, key, str_hash(inf->seed, key));
	if (it != NULL)
		kc_item_ref(it);
	(void)pthread_rwlock_unlock(&inf->lock);
	return it;
}

struct kc_item *
kc_informer_get(struct kc_informer *inf, const char *ns, const char *name)
{
	char key[KC_INFORMER_KEY_MAX];
	int n;

	if (name == NULL)
		return NULL;
	if (ns != NULL && ns[0] != '\0')
		n = snprintf(key, sizeof(key), "%s/%s", ns, name);
	else
		n = snprintf(key, sizeof(key), "%s", name);
	if (n < 0 || (size_t)n >= sizeof(key))
		return NULL;
	return kc_informer_get_key(inf, key);
}

int
kc_informer_by_index(struct kc_informer *inf, const char *key,
    kc_informer_visit_fn *fn, void *arg)
{
	struct group *g;
	struct kc_item *it;
	int n = 0;

	if (inf->opts.index == NULL || key == NULL)
		return -EINVAL;
	(void)pthread_rwlock_rdlock(&inf->lock);
	if ((g = group_find(inf, key)) != NULL)
		for (it = g->head; it != NULL; it = it->inext) {
			n++;
			if (fn(arg, it) != 0)
				break;
		}
	(void)pthread_rwlock_unlock(&inf->lock);
	return n;
}

int
kc_informer_foreach(struct kc_informer *inf, kc_informer_visit_fn *fn, void *arg)
{
	int n = 0;

	(void)pthread_rwlock_rdlock(&inf->lock);
	for (size_t i = 0; i < inf->store.nb; i++)
		for (struct kc_item *it = inf->store.b[i]; it != NULL; it = it->next) {
			n++;
			if (fn(arg, it) != 0)
				goto out;
		}
out:
	(void)pthread_rwlock_unlock(&inf->lock);
	return n;
}

size_t
kc_informer_len(struct kc_informer *inf)
{
	size_t n;

	(void)pthread_rwlock_rdlock(&inf->lock);
	n = inf->store.n;
	(void)pthread_rwlock_unlock(&inf->lock);
	return n;
}

void
kc_informer_rv(struct kc_informer *inf, char *buf, size_t size)
{
	(void)pthread_mutex_lock(&inf->mu);
	(void)kc_strlcpy(buf, inf->rv, size);
	(void)pthread_mutex_unlock(&inf->mu);
}

void
kc_informer_stats(struct kc_informer *inf, struct kc_informer_stats *ret)
{
	(void)pthread_mutex_lock(&inf->mu);
	*ret = inf->stats;
	(void)pthread_mutex_unlock(&inf->mu);
}

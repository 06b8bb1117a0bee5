/*
 * storage.c: every object of the devcluster, the resourceVersion counter
 * and the event history.
 *
 * Objects live in collections, one per group and resource (the views of
 * one resource in several versions, or core/v1 and events.k8s.io/v1
 * events, share one). A collection indexes its objects twice: a hash
 * table keyed by namespace and name for lookups, and an array sorted by
 * (namespace, name) so that a namespace's objects are contiguous and a
 * list walks them in the order etcd would return them.
 *
 * Stored trees are frozen: nobody modifies a tree once it is stored.
 * Readers borrow them or take references; writers build new trees, deep
 * copies or, for the hot internal writes, obj_cow(): a new top level and
 * metadata that share every other member with the stored tree. A
 * deletion stores nothing, so its event carries a shallow copy of the
 * final state with the new resourceVersion (obj_with_rv()).
 *
 * One counter gives every committed write its resourceVersion. Each
 * write that changes something becomes a struct dc_event, kept in the
 * collection's bounded history (a ring) and handed to the subscribers in
 * commit order: the watch hub first, then whoever registered (garbage
 * collection, persistence). A subscriber may write from its callback;
 * the event it causes is queued and delivered after the current one has
 * reached every subscriber, so all subscribers see one order.
 *
 * When the ring is full its oldest event is dropped and the collection's
 * compacted_rv moves up to it: a watch from before that resourceVersion
 * cannot be served and gets 410 Expired. A write that changes nothing
 * (obj_same()) is not a write: no new resourceVersion, no event.
 *
 * Because stored trees are frozen, an entry can keep the JSON text of its
 * object (coll_text()): printed on the first read that wants it, dropped
 * when the object is replaced or deleted. Gets and lists of an unconverted
 * object send those bytes instead of printing the tree again.
 *
 *	storage_coll(st, "", "pods", true, &pods);
 *	storage_create(st, pods, pod, &stored);	(pod consumed)
 *	storage_update(st, pods, pod2, rv, &stored);	(KC_ECONFLICT if stale)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/hash.h>
#include <kc/json.h>
#include <kc/str.h>

#include "devcluster.h"

struct entry {
	struct entry		*hnext;
	uint32_t		 hash;
	const char		*ns;	/* into key[] */
	const char		*name;
	struct json_object	*obj;
	char			*text;	/* obj's JSON text (coll_text()), or NULL */
	size_t			 text_len;
	char			*itext;	/* the same without apiVersion and kind */
	size_t			 itext_len;
	char			 key[];	/* "ns\0name\0" */
};

struct dc_coll {
	TAILQ_ENTRY(dc_coll)	 link;
	struct dc_store		*store;
	char			*group;
	char			*resource;
	bool			 namespaced;
	struct entry		**buckets;
	size_t			 nbuckets;
	size_t			 count;
	struct entry		**sorted;
	size_t			 sorted_cap;
	struct dc_event		**ring;
	uint32_t		 ring_cap;
	uint32_t		 ring_head;	/* index of the oldest */
	uint32_t		 ring_len;
	uint64_t		 compacted_rv;
	struct dc_watcher_list	 watchers;
};

struct sub {
	dc_store_sub_fn	*fn;
	void		*arg;
};

struct dc_store {
	uint64_t		 rv;
	uint32_t		 history_max;
	uint32_t		 history_fresh_ms;	/* grow to keep this; 0: never */
	TAILQ_HEAD(coll_list, dc_coll) colls;
	struct sub		*subs;
	size_t			 nsubs;
	struct dc_event		**pending;	/* queued for the subscribers */
	size_t			 pending_head;
	size_t			 pending_len;
	size_t			 pending_cap;
	bool			 dispatching;
};

static uint32_t
key_hash(const char *ns, const char *name)
{
	uint32_t h = kc_fnv1a32_str(KC_FNV1A32_INIT, ns);

	h = kc_fnv1a32(h, "", 1);	/* the NUL between the two */
	return kc_fnv1a32_str(h, name);
}

static int
key_cmp(const char *ns1, const char *name1, const char *ns2, const char *name2)
{
	int c = strcmp(ns1, ns2);

	return c != 0 ? c : strcmp(name1, name2);
}

int
obj_key(const struct json_object *obj, char *buf, size_t size)
{
	const char *ns = kc_json_str(obj, "metadata", "namespace");
	const char *name = kc_json_str(obj, "metadata", "name");
	int n;

	n = snprintf(buf, size, "%s/%s", ns != NULL ? ns : "",
	    name != NULL ? name : "");
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

uint64_t
obj_rv(const struct json_object *obj)
{
	const char *s = kc_json_str(obj, "metadata", "resourceVersion");
	uint64_t rv;

	if (s == NULL || kc_parse_u64(s, &rv) < 0)
		return 0;
	return rv;
}

struct json_object *
obj_cow(const struct json_object *obj)
{
	struct json_object *out, *meta, *v;

	if ((out = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_foreach((struct json_object *)(uintptr_t)obj, k, val) {
		if (strcmp(k, "metadata") == 0)
			continue;
		if (json_object_object_add(out, k, json_object_get(val)) < 0) {
			json_object_put(val);
			goto fail;
		}
	}
	if ((meta = json_object_new_object()) == NULL ||
	    json_object_object_add(out, "metadata", meta) < 0) {
		json_object_put(meta);
		goto fail;
	}
	v = kc_json_obj_of(obj, "metadata");
	if (v != NULL) {
		json_object_object_foreach(v, mk, mval) {
			if (json_object_object_add(meta, mk, json_object_get(mval)) < 0) {
				json_object_put(mval);
				goto fail;
			}
		}
	}
	return out;
fail:
	json_object_put(out);
	return NULL;
}

/* Whether the members of 'v' and 'old' can be paired up for sharing. */
static bool
share_kind(const struct json_object *v, const struct json_object *old)
{
	if (json_object_is_type(v, json_type_object))
		return json_object_is_type(old, json_type_object);
	return json_object_is_type(v, json_type_array) &&
	    json_object_is_type(old, json_type_array) &&
	    json_object_array_length(v) == json_object_array_length(old);
}

void
obj_share_equal(struct json_object *v, const struct json_object *old)
{
	struct json_object *o = (struct json_object *)(uintptr_t)old, *ov;

	if (o == NULL || v == o || !share_kind(v, o))
		return;
	if (json_object_is_type(v, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			struct json_object *nv = json_object_array_get_idx(v, i);

			ov = json_object_array_get_idx(o, i);
			if (nv == ov || ov == NULL)
				continue;
			/* put_idx cannot fail for an index below the length. */
			if (json_object_equal(nv, ov))
				(void)json_object_array_put_idx(v, i, json_object_get(ov));
			else
				obj_share_equal(nv, ov);
		}
		return;
	}
	/* Replacing the value of an existing key does not rehash the table. */
	json_object_object_foreach(v, k, nv) {
		if (!json_object_object_get_ex(o, k, &ov) || nv == ov || ov == NULL)
			continue;
		if (json_object_equal(nv, ov)) {
			if (json_object_object_add(v, k, json_object_get(ov)) < 0)
				json_object_put(ov);
		} else
			obj_share_equal(nv, ov);
	}
}

struct json_object *
obj_with_rv(const struct json_object *obj, uint64_t rv)
{
	struct json_object *out;
	char buf[24];

	if ((out = obj_cow(obj)) == NULL)
		return NULL;
	(void)snprintf(buf, sizeof(buf), "%" PRIu64, rv);
	if (kc_json_set_str(kc_json_obj_of(out, "metadata"), "resourceVersion", buf) < 0) {
		json_object_put(out);
		return NULL;
	}
	return out;
}

/* managedFields entries compare without their "time". */
static bool
managed_same(const struct json_object *a, const struct json_object *b)
{
	size_t n;

	if (!json_object_is_type(a, json_type_array) ||
	    !json_object_is_type(b, json_type_array))
		return kc_json_equal(a, b);
	n = json_object_array_length(a);
	if (n != json_object_array_length(b))
		return false;
	for (size_t i = 0; i < n; i++) {
		struct json_object *x = json_object_array_get_idx(a, i);
		struct json_object *y = json_object_array_get_idx(b, i);
		size_t nx = 0, ny = 0;

		if (!json_object_is_type(x, json_type_object) ||
		    !json_object_is_type(y, json_type_object)) {
			if (!kc_json_equal(x, y))
				return false;
			continue;
		}
		json_object_object_foreach(x, k, xv) {
			struct json_object *yv;

			if (strcmp(k, "time") == 0)
				continue;
			nx++;
			if (!json_object_object_get_ex(y, k, &yv) ||
			    !kc_json_equal(xv, yv))
				return false;
		}
		json_object_object_foreach(y, k2, yv2) {
			(void)yv2;
			if (strcmp(k2, "time") != 0)
				ny++;
		}
		if (nx != ny)
			return false;
	}
	return true;
}

static bool
meta_same(const struct json_object *a, const struct json_object *b)
{
	size_t na = 0, nb = 0;

	if (!json_object_is_type(a, json_type_object) ||
	    !json_object_is_type(b, json_type_object))
		return kc_json_equal(a, b);
	json_object_object_foreach((struct json_object *)(uintptr_t)a, k, av) {
		struct json_object *bv;

		if (strcmp(k, "resourceVersion") == 0)
			continue;
		na++;
		if (!json_object_object_get_ex(b, k, &bv))
			return false;
		if (strcmp(k, "managedFields") == 0 ? !managed_same(av, bv) :
		    !kc_json_equal(av, bv))
			return false;
	}
	json_object_object_foreach((struct json_object *)(uintptr_t)b, k2, bv2) {
		(void)bv2;
		if (strcmp(k2, "resourceVersion") != 0)
			nb++;
	}
	return na == nb;
}

bool
obj_same(const struct json_object *a, const struct json_object *b)
{
	size_t na = 0, nb = 0;

	if (!json_object_is_type(a, json_type_object) ||
	    !json_object_is_type(b, json_type_object))
		return kc_json_equal(a, b);
	json_object_object_foreach((struct json_object *)(uintptr_t)a, k, av) {
		struct json_object *bv;

		na++;
		if (!json_object_object_get_ex(b, k, &bv))
			return false;
		if (strcmp(k, "metadata") == 0 ? !meta_same(av, bv) :
		    !kc_json_equal(av, bv))
			return false;
	}
	json_object_object_foreach((struct json_object *)(uintptr_t)b, k2, bv2) {
		(void)k2;
		(void)bv2;
		nb++;
	}
	return na == nb;
}

/*
 * Events
 */

struct dc_event *
event_ref(struct dc_event *ev)
{
	ev->refs++;
	return ev;
}

void
event_unref(struct dc_event *ev)
{
	if (ev == NULL || --ev->refs > 0)
		return;
	watchhub_ser_free(ev->sers);
	if (ev->obj != NULL)
		json_object_put(ev->obj);
	if (ev->prev != NULL)
		json_object_put(ev->prev);
	kc_free(ev);
}

/*
 * The store
 */

int
storage_new(const struct dc_store_opts *opts, struct dc_store **ret)
{
	struct dc_store *st;

	if ((st = kc_calloc(1, sizeof(*st))) == NULL)
		return -ENOMEM;
	st->history_max = opts != NULL && opts->history_max > 0 ?
	    opts->history_max : DC_HISTORY_DEFAULT;
	if (opts != NULL && opts->history_fresh_ms > 0)
		st->history_fresh_ms = opts->history_fresh_ms;
	else if (opts == NULL || opts->history_max == 0)
		st->history_fresh_ms = DC_HISTORY_FRESH_MS;
	TAILQ_INIT(&st->colls);
	*ret = st;
	return 0;
}

static void
coll_free(struct dc_coll *c)
{
	coll_clear(c);
	for (uint32_t i = 0; i < c->ring_len; i++)
		event_unref(c->ring[(c->ring_head + i) % c->ring_cap]);
	kc_free(c->ring);
	kc_free(c->buckets);
	kc_free(c->sorted);
	kc_free(c->group);
	kc_free(c->resource);
	kc_free(c);
}

struct dc_store *
storage_free(struct dc_store *st)
{
	struct dc_coll *c;

	if (st == NULL)
		return NULL;
	while ((c = TAILQ_FIRST(&st->colls)) != NULL) {
		TAILQ_REMOVE(&st->colls, c, link);
		coll_free(c);
	}
	for (size_t i = 0; i < st->pending_len; i++)
		event_unref(st->pending[(st->pending_head + i) % st->pending_cap]);
	kc_free(st->pending);
	kc_free(st->subs);
	kc_free(st);
	return NULL;
}

uint64_t
storage_rv(const struct dc_store *st)
{
	return st->rv;
}

void
storage_set_rv(struct dc_store *st, uint64_t rv)
{
	struct dc_coll *c;

	if (rv <= st->rv)
		return;
	st->rv = rv;
	for (c = TAILQ_FIRST(&st->colls); c != NULL; c = TAILQ_NEXT(c, link))
		if (c->ring_len == 0 && c->compacted_rv < rv)
			c->compacted_rv = rv;
}

int
storage_subscribe(struct dc_store *st, dc_store_sub_fn *fn, void *arg)
{
	struct sub *s;

	s = kc_reallocarray(st->subs, st->nsubs + 1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	st->subs = s;
	st->subs[st->nsubs].fn = fn;
	st->subs[st->nsubs].arg = arg;
	st->nsubs++;
	return 0;
}

void
storage_unsubscribe(struct dc_store *st, dc_store_sub_fn *fn, void *arg)
{
	for (size_t i = 0; i < st->nsubs; i++) {
		if (st->subs[i].fn == fn && st->subs[i].arg == arg) {
			memmove(&st->subs[i], &st->subs[i + 1],
			    (st->nsubs - i - 1) * sizeof(st->subs[0]));
			st->nsubs--;
			return;
		}
	}
}

struct dc_coll *
storage_find_coll(const struct dc_store *st, const char *group, const char *resource)
{
	struct dc_coll *c;

	for (c = TAILQ_FIRST(&st->colls); c != NULL; c = TAILQ_NEXT(c, link))
		if (strcmp(c->group, group) == 0 && strcmp(c->resource, resource) == 0)
			return c;
	return NULL;
}

int
storage_coll(struct dc_store *st, const char *group, const char *resource,
    bool namespaced, struct dc_coll **ret)
{
	struct dc_coll *c;

	if ((c = storage_find_coll(st, group, resource)) != NULL) {
		*ret = c;
		return 0;
	}
	if ((c = kc_calloc(1, sizeof(*c))) == NULL)
		return -ENOMEM;
	c->store = st;
	c->namespaced = namespaced;
	c->compacted_rv = st->rv;
	TAILQ_INIT(&c->watchers);
	if ((c->group = kc_strdup(group)) == NULL ||
	    (c->resource = kc_strdup(resource)) == NULL) {
		coll_free(c);
		return -ENOMEM;
	}
	TAILQ_INSERT_TAIL(&st->colls, c, link);
	*ret = c;
	return 0;
}

int
storage_foreach_coll(struct dc_store *st, dc_coll_fn *fn, void *arg)
{
	struct dc_coll *c, *next;
	int r;

	for (c = TAILQ_FIRST(&st->colls); c != NULL; c = next) {
		next = TAILQ_NEXT(c, link);
		if ((r = fn(arg, c)) != 0)
			return r;
	}
	return 0;
}

const char *
coll_group(const struct dc_coll *c)
{
	return c->group;
}

const char *
coll_resource(const struct dc_coll *c)
{
	return c->resource;
}

bool
coll_namespaced(const struct dc_coll *c)
{
	return c->namespaced;
}

struct dc_watcher_list *
coll_watchers(struct dc_coll *c)
{
	return &c->watchers;
}

/*
 * The indexes
 */

static struct entry *
find_entry(const struct dc_coll *c, const char *ns, const char *name)
{
	struct entry *e;
	uint32_t h;

	if (c->nbuckets == 0)
		return NULL;
	h = key_hash(ns, name);
	for (e = c->buckets[h & (c->nbuckets - 1)]; e != NULL; e = e->hnext)
		if (e->hash == h && strcmp(e->ns, ns) == 0 && strcmp(e->name, name) == 0)
			return e;
	return NULL;
}

/* First index in 'sorted' whose key is not below (ns, name). */
static size_t
lower_bound(const struct dc_coll *c, const char *ns, const char *name)
{
	size_t lo = 0, hi = c->count;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct entry *e = c->sorted[mid];

		if (key_cmp(e->ns, e->name, ns, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Room for one more entry in both indexes. */
static int
reserve_entry(struct dc_coll *c)
{
	if (c->count + 1 > c->sorted_cap) {
		size_t cap = c->sorted_cap != 0 ? c->sorted_cap * 2 : 16;
		struct entry **s = kc_reallocarray(c->sorted, cap, sizeof(*s));

		if (s == NULL)
			return -ENOMEM;
		c->sorted = s;
		c->sorted_cap = cap;
	}
	if (c->count + 1 > c->nbuckets * 3 / 4) {
		size_t nb = c->nbuckets != 0 ? c->nbuckets * 2 : 16;
		struct entry **b = kc_calloc(nb, sizeof(*b));

		if (b == NULL)
			return -ENOMEM;
		for (size_t i = 0; i < c->nbuckets; i++) {
			struct entry *e, *next;

			for (e = c->buckets[i]; e != NULL; e = next) {
				next = e->hnext;
				e->hnext = b[e->hash & (nb - 1)];
				b[e->hash & (nb - 1)] = e;
			}
		}
		kc_free(c->buckets);
		c->buckets = b;
		c->nbuckets = nb;
	}
	return 0;
}

static struct entry *
entry_new(const char *ns, const char *name)
{
	size_t nl = strlen(ns), ml = strlen(name);
	struct entry *e;

	if ((e = kc_calloc(1, sizeof(*e) + nl + ml + 2)) == NULL)
		return NULL;
	memcpy(e->key, ns, nl + 1);
	memcpy(e->key + nl + 1, name, ml + 1);
	e->ns = e->key;
	e->name = e->key + nl + 1;
	e->hash = key_hash(ns, name);
	return e;
}

/* Links 'e' into both indexes; reserve_entry() made room. */
static void
link_entry(struct dc_coll *c, struct entry *e)
{
	size_t i = lower_bound(c, e->ns, e->name);

	e->hnext = c->buckets[e->hash & (c->nbuckets - 1)];
	c->buckets[e->hash & (c->nbuckets - 1)] = e;
	memmove(&c->sorted[i + 1], &c->sorted[i], (c->count - i) * sizeof(c->sorted[0]));
	c->sorted[i] = e;
	c->count++;
}

static void
unlink_entry(struct dc_coll *c, struct entry *e)
{
	struct entry **pp = &c->buckets[e->hash & (c->nbuckets - 1)];
	size_t i;

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	i = lower_bound(c, e->ns, e->name);
	memmove(&c->sorted[i], &c->sorted[i + 1], (c->count - i - 1) * sizeof(c->sorted[0]));
	c->count--;
}

/* Forgets the cached texts of 'e' (its object is replaced or dropped). */
static void
entry_drop_text(struct entry *e)
{
	kc_free(e->text);
	kc_free(e->itext);
	e->text = e->itext = NULL;
	e->text_len = e->itext_len = 0;
}

void
coll_clear(struct dc_coll *c)
{
	for (size_t i = 0; i < c->count; i++) {
		json_object_put(c->sorted[i]->obj);
		entry_drop_text(c->sorted[i]);
		kc_free(c->sorted[i]);
	}
	c->count = 0;
	for (size_t i = 0; i < c->nbuckets; i++)
		c->buckets[i] = NULL;
}

void
coll_compact(struct dc_coll *c)
{
	while (c->ring_len > 0) {
		struct dc_event *old = c->ring[c->ring_head];

		c->ring_head = (c->ring_head + 1) % c->ring_cap;
		c->ring_len--;
		event_unref(old);
	}
	if (c->compacted_rv < c->store->rv)
		c->compacted_rv = c->store->rv;
}

size_t
coll_count(const struct dc_coll *c, const char *ns)
{
	size_t i, n = 0;

	if (ns == NULL)
		return c->count;
	for (i = lower_bound(c, ns, ""); i < c->count; i++, n++)
		if (strcmp(c->sorted[i]->ns, ns) != 0)
			break;
	return n;
}

const struct json_object *
coll_get(const struct dc_coll *c, const char *ns, const char *name)
{
	struct entry *e = find_entry(c, ns != NULL ? ns : "", name);

	return e != NULL ? e->obj : NULL;
}

/*
 * The JSON text of 'obj' as api_serialize() prints it, into a new string:
 * a shallow wrapper is printed so the frozen tree's own print buffer is
 * never written to. 'item' leaves out the top-level apiVersion and kind.
 */
static int
obj_print(const struct json_object *obj, bool item, char **ret, size_t *ret_len)
{
	struct json_object *w;
	const char *s;
	size_t len;
	char *out;

	if ((w = json_object_new_object()) == NULL)
		return -ENOMEM;
	json_object_object_foreach((struct json_object *)(uintptr_t)obj, k, v) {
		if (item && (strcmp(k, "apiVersion") == 0 || strcmp(k, "kind") == 0))
			continue;
		if (json_object_object_add(w, k, json_object_get(v)) < 0) {
			json_object_put(v);
			json_object_put(w);
			return -ENOMEM;
		}
	}
	s = json_object_to_json_string_length(w,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	if (s == NULL || (out = kc_malloc(len + 1)) == NULL) {
		json_object_put(w);
		return -ENOMEM;
	}
	memcpy(out, s, len + 1);
	json_object_put(w);
	*ret = out;
	*ret_len = len;
	return 0;
}

int
coll_text(const struct dc_coll *c, const struct json_object *obj, bool item,
    const char **ret, size_t *ret_len)
{
	const char *ns, *name;
	struct entry *e;
	char **text;
	size_t *len;
	int r;

	if (!json_object_is_type(obj, json_type_object))
		return 1;
	ns = kc_json_str(obj, "metadata", "namespace");
	name = kc_json_str(obj, "metadata", "name");
	if (name == NULL || (e = find_entry(c, ns != NULL ? ns : "", name)) == NULL ||
	    e->obj != obj)
		return 1;
	text = item ? &e->itext : &e->text;
	len = item ? &e->itext_len : &e->text_len;
	if (*text == NULL && (r = obj_print(obj, item, text, len)) < 0)
		return r;
	*ret = *text;
	*ret_len = *len;
	return 0;
}

void
objs_free(struct json_object **objs, size_t n)
{
	if (objs == NULL)
		return;
	for (size_t i = 0; i < n; i++)
		if (objs[i] != NULL)
			json_object_put(objs[i]);
	kc_free(objs);
}

/* Splits an "ns/name" key (ns has no '/'); false when malformed. */
static bool
split_key(const char *key, char *ns, size_t nssize, const char **ret_name)
{
	const char *slash = strchr(key, '/');

	if (slash == NULL || (size_t)(slash - key) >= nssize)
		return false;
	memcpy(ns, key, (size_t)(slash - key));
	ns[slash - key] = '\0';
	*ret_name = slash + 1;
	return true;
}

int
coll_list(const struct dc_coll *c, const char *ns, const char *after,
    struct json_object ***ret, size_t *ret_n)
{
	struct json_object **objs;
	char ans[DC_SEGMENT_MAX];
	const char *aname = NULL;
	size_t i, end, n = 0;

	if (after != NULL && !split_key(after, ans, sizeof(ans), &aname))
		return -EINVAL;
	i = ns != NULL ? lower_bound(c, ns, "") : 0;
	if (after != NULL) {
		size_t j = lower_bound(c, ans, aname);

		if (j < c->count && strcmp(c->sorted[j]->ns, ans) == 0 &&
		    strcmp(c->sorted[j]->name, aname) == 0)
			j++;
		if (j > i)
			i = j;
	}
	for (end = i; end < c->count; end++)
		if (ns != NULL && strcmp(c->sorted[end]->ns, ns) != 0)
			break;
	if ((objs = kc_calloc(end - i + 1, sizeof(*objs))) == NULL)
		return -ENOMEM;
	for (; i < end; i++)
		objs[n++] = json_object_get(c->sorted[i]->obj);
	*ret = objs;
	*ret_n = n;
	return 0;
}

/* A key's state at an older resourceVersion, for coll_list_at(). */
struct past {
	const char		*ns;
	const char		*name;
	uint64_t		 rv;	/* of the first event after the snapshot */
	struct json_object	*state;	/* NULL: absent then */
};

static int
past_cmp(const void *a, const void *b)
{
	const struct past *x = a, *y = b;
	int c = key_cmp(x->ns, x->name, y->ns, y->name);

	if (c != 0)
		return c;
	return x->rv < y->rv ? -1 : x->rv > y->rv;
}

static int
obj_cmp(const void *a, const void *b)
{
	const struct json_object *x = *(struct json_object *const *)a;
	const struct json_object *y = *(struct json_object *const *)b;
	const char *xn = kc_json_str(x, "metadata", "namespace");
	const char *yn = kc_json_str(y, "metadata", "namespace");

	return key_cmp(xn != NULL ? xn : "", kc_json_str(x, "metadata", "name"),
	    yn != NULL ? yn : "", kc_json_str(y, "metadata", "name"));
}

static bool
past_has(const struct past *p, size_t n, const char *ns, const char *name)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = key_cmp(p[mid].ns, p[mid].name, ns, name);

		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static bool
in_range(const char *ns, const char *name, const char *want_ns, const char *ans,
    const char *aname)
{
	if (want_ns != NULL && strcmp(ns, want_ns) != 0)
		return false;
	return aname == NULL || key_cmp(ns, name, ans, aname) > 0;
}

int
coll_list_at(const struct dc_coll *c, uint64_t rv, const char *ns, const char *after,
    struct json_object ***ret, size_t *ret_n)
{
	struct past *past = NULL;
	struct json_object **objs = NULL;
	char ans[DC_SEGMENT_MAX];
	const char *aname = NULL;
	size_t npast = 0, n = 0, w;
	int r;

	if (rv >= c->store->rv)
		return coll_list(c, ns, after, ret, ret_n);
	if (rv < c->compacted_rv)
		return KC_EEXPIRED;
	if (after != NULL && !split_key(after, ans, sizeof(ans), &aname))
		return -EINVAL;
	if ((past = kc_calloc(c->ring_len + 1, sizeof(*past))) == NULL)
		return -ENOMEM;
	for (uint32_t i = c->ring_len; i-- > 0;) {
		struct dc_event *ev = c->ring[(c->ring_head + i) % c->ring_cap];
		const char *evns;

		if (ev->rv <= rv)
			break;
		evns = kc_json_str(ev->obj, "metadata", "namespace");
		past[npast].ns = evns != NULL ? evns : "";
		past[npast].name = kc_json_str(ev->obj, "metadata", "name");
		past[npast].rv = ev->rv;
		past[npast].state = ev->prev;
		if (past[npast].name == NULL)
			past[npast].name = "";
		npast++;
	}
	qsort(past, npast, sizeof(*past), past_cmp);
	/* Keep the earliest event per key: its 'prev' is the state at rv. */
	w = 0;
	for (size_t i = 0; i < npast; i++) {
		if (w > 0 && key_cmp(past[w - 1].ns, past[w - 1].name, past[i].ns,
		    past[i].name) == 0)
			continue;
		past[w++] = past[i];
	}
	npast = w;
	if ((objs = kc_calloc(c->count + npast + 1, sizeof(*objs))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < c->count; i++) {
		struct entry *e = c->sorted[i];

		if (past_has(past, npast, e->ns, e->name) ||
		    !in_range(e->ns, e->name, ns, ans, aname))
			continue;
		objs[n++] = json_object_get(e->obj);
	}
	for (size_t i = 0; i < npast; i++)
		if (past[i].state != NULL &&
		    in_range(past[i].ns, past[i].name, ns, ans, aname))
			objs[n++] = json_object_get(past[i].state);
	qsort(objs, n, sizeof(*objs), obj_cmp);
	*ret = objs;
	*ret_n = n;
	objs = NULL;
	r = 0;
out:
	kc_free(past);
	objs_free(objs, n);
	return r;
}

int
coll_history(struct dc_coll *c, uint64_t since, dc_event_fn *fn, void *arg,
    uint64_t *ret_oldest)
{
	int r;

	if (since < c->compacted_rv) {
		if (ret_oldest != NULL)
			*ret_oldest = c->ring_len > 0 ?
			    c->ring[c->ring_head]->rv - 1 : c->compacted_rv;
		return KC_EEXPIRED;
	}
	for (uint32_t i = 0; i < c->ring_len; i++) {
		struct dc_event *ev = c->ring[(c->ring_head + i) % c->ring_cap];

		if (ev->rv <= since)
			continue;
		if ((r = fn(arg, ev)) != 0)
			return r;
	}
	return 0;
}

/*
 * Committing
 */

/* Room for one more event in the ring and the subscriber queue. */
static int
reserve_event(struct dc_coll *c)
{
	struct dc_store *st = c->store;

	uint32_t max = st->history_max;

	/*
	 * As kube-apiserver's watch cache: a full history whose oldest event
	 * is younger than history_fresh_ms (DC_HISTORY_FRESH_MS) grows, up
	 * to DC_HISTORY_UPPER, so a client that fell behind under a burst of
	 * writes resumes its watch instead of listing everything again.
	 */
	if (st->history_fresh_ms > 0 && c->ring_len == c->ring_cap && c->ring_len > 0 &&
	    kc_clock_now_ms() - c->ring[c->ring_head]->at_ms < st->history_fresh_ms)
		max = KC_MAX(max, DC_HISTORY_UPPER);
	if (c->ring_len == c->ring_cap && c->ring_cap < max) {
		uint32_t cap = c->ring_cap != 0 ? c->ring_cap * 2 : 64;
		struct dc_event **ring;

		if (cap > max)
			cap = max;
		if ((ring = kc_calloc(cap, sizeof(*ring))) == NULL)
			return -ENOMEM;
		for (uint32_t i = 0; i < c->ring_len; i++)
			ring[i] = c->ring[(c->ring_head + i) % c->ring_cap];
		kc_free(c->ring);
		c->ring = ring;
		c->ring_cap = cap;
		c->ring_head = 0;
	}
	if (st->pending_len == st->pending_cap) {
		size_t cap = st->pending_cap != 0 ? st->pending_cap * 2 : 16;
		struct dc_event **q;

		if ((q = kc_calloc(cap, sizeof(*q))) == NULL)
			return -ENOMEM;
		for (size_t i = 0; i < st->pending_len; i++)
			q[i] = st->pending[(st->pending_head + i) % st->pending_cap];
		kc_free(st->pending);
		st->pending = q;
		st->pending_cap = cap;
		st->pending_head = 0;
	}
	return 0;
}

static struct dc_event *
event_new(struct dc_coll *c, enum dc_ev_type type, uint64_t rv,
    struct json_object *obj, struct json_object *prev)
{
	struct dc_event *ev;

	if ((ev = kc_calloc(1, sizeof(*ev))) == NULL)
		return NULL;
	ev->refs = 1;
	ev->type = type;
	ev->rv = rv;
	ev->at_ms = kc_clock_now_ms();
	ev->obj = json_object_get(obj);
	ev->prev = prev != NULL ? json_object_get(prev) : NULL;
	ev->coll = c;
	return ev;
}

static void
dispatch(struct dc_store *st)
{
	if (st->dispatching)
		return;
	st->dispatching = true;
	while (st->pending_len > 0) {
		struct dc_event *ev = st->pending[st->pending_head];

		st->pending_head = (st->pending_head + 1) % st->pending_cap;
		st->pending_len--;
		for (size_t i = 0; i < st->nsubs; i++)
			st->subs[i].fn(st->subs[i].arg, ev);
		event_unref(ev);
	}
	st->dispatching = false;
}

/* Keeps 'ev' (its reference moves) in history and queues it; reserved. */
static void
commit(struct dc_coll *c, struct dc_event *ev)
{
	struct dc_store *st = c->store;

	if (c->ring_len == c->ring_cap) {
		struct dc_event *old = c->ring[c->ring_head];

		c->compacted_rv = old->rv;
		c->ring_head = (c->ring_head + 1) % c->ring_cap;
		c->ring_len--;
		event_unref(old);
	}
	c->ring[(c->ring_head + c->ring_len) % c->ring_cap] = event_ref(ev);
	c->ring_len++;
	st->rv = ev->rv;
	st->pending[(st->pending_head + st->pending_len) % st->pending_cap] = ev;
	st->pending_len++;
	dispatch(st);
}

static int
set_rv(struct json_object *obj, uint64_t rv)
{
	struct json_object *meta = kc_json_ensure_obj(obj, "metadata");
	char buf[24];

	if (meta == NULL)
		return -ENOMEM;
	(void)snprintf(buf, sizeof(buf), "%" PRIu64, rv);
	return kc_json_set_str(meta, "resourceVersion", buf);
}

static int
obj_names(const struct dc_coll *c, const struct json_object *obj, const char **ret_ns,
    const char **ret_name)
{
	const char *ns = kc_json_str(obj, "metadata", "namespace");
	const char *name = kc_json_str(obj, "metadata", "name");

	if (name == NULL || name[0] == '\0')
		return -EINVAL;
	if (!c->namespaced)
		ns = "";
	else if (ns == NULL || ns[0] == '\0')
		return -EINVAL;
	*ret_ns = ns;
	*ret_name = name;
	return 0;
}

int
storage_create(struct dc_store *st, struct dc_coll *c, struct json_object *obj,
    struct json_object **ret)
{
	struct entry *e = NULL;
	struct dc_event *ev;
	const char *ns, *name;
	uint64_t rv = st->rv + 1;
	int r;

	if ((r = obj_names(c, obj, &ns, &name)) < 0)
		goto fail;
	if (find_entry(c, ns, name) != NULL) {
		r = KC_EEXISTS;
		goto fail;
	}
	if ((r = reserve_entry(c)) < 0 || (r = reserve_event(c)) < 0)
		goto fail;
	if ((e = entry_new(ns, name)) == NULL || (r = set_rv(obj, rv)) < 0) {
		r = -ENOMEM;
		goto fail;
	}
	if ((ev = event_new(c, DC_EV_ADDED, rv, obj, NULL)) == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	e->obj = obj;
	link_entry(c, e);
	if (ret != NULL)
		*ret = json_object_get(obj);
	commit(c, ev);
	return 0;
fail:
	kc_free(e);
	json_object_put(obj);
	return r;
}

int
storage_update(struct dc_store *st, struct dc_coll *c, struct json_object *obj,
    uint64_t expect_rv, struct json_object **ret)
{
	struct entry *e;
	struct dc_event *ev;
	struct json_object *old;
	const char *ns, *name;
	uint64_t rv = st->rv + 1;
	int r;

	if ((r = obj_names(c, obj, &ns, &name)) < 0)
		goto fail;
	if ((e = find_entry(c, ns, name)) == NULL) {
		r = KC_ENOTFOUND;
		goto fail;
	}
	if (expect_rv != 0 && expect_rv != obj_rv(e->obj)) {
		r = KC_ECONFLICT;
		goto fail;
	}
	if (obj_same(obj, e->obj)) {
		json_object_put(obj);
		if (ret != NULL)
			*ret = json_object_get(e->obj);
		return DC_UNCHANGED;
	}
	if ((r = reserve_event(c)) < 0 || (r = set_rv(obj, rv)) < 0)
		goto fail;
	if ((ev = event_new(c, DC_EV_MODIFIED, rv, obj, e->obj)) == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	old = e->obj;
	e->obj = obj;
	entry_drop_text(e);
	json_object_put(old);
	if (ret != NULL)
		*ret = json_object_get(obj);
	commit(c, ev);
	return 0;
fail:
	json_object_put(obj);
	return r;
}

int
storage_delete(struct dc_store *st, struct dc_coll *c, struct json_object *obj,
    uint64_t expect_rv, struct json_object **ret)
{
	struct entry *e;
	struct dc_event *ev;
	struct json_object *final = NULL;
	const char *ns, *name;
	uint64_t rv = st->rv + 1;
	int r;

	if ((r = obj_names(c, obj, &ns, &name)) < 0)
		goto fail;
	if ((e = find_entry(c, ns, name)) == NULL) {
		r = KC_ENOTFOUND;
		goto fail;
	}
	if (expect_rv != 0 && expect_rv != obj_rv(e->obj)) {
		r = KC_ECONFLICT;
		goto fail;
	}
	if ((r = reserve_event(c)) < 0)
		goto fail;
	if ((final = obj_with_rv(obj, rv)) == NULL ||
	    (ev = event_new(c, DC_EV_DELETED, rv, final, e->obj)) == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	unlink_entry(c, e);
	json_object_put(e->obj);
	entry_drop_text(e);
	kc_free(e);
	json_object_put(obj);
	if (ret != NULL)
		*ret = final;
	else
		json_object_put(final);
	commit(c, ev);
	return 0;
fail:
	if (final != NULL)
		json_object_put(final);
	json_object_put(obj);
	return r;
}

int
storage_restore(struct dc_store *st, struct dc_coll *c, struct json_object *obj)
{
	struct entry *e;
	const char *ns, *name;
	int r;

	(void)st;
	if ((r = obj_names(c, obj, &ns, &name)) < 0)
		goto fail;
	if (find_entry(c, ns, name) != NULL) {
		r = KC_EEXISTS;
		goto fail;
	}
	if ((r = reserve_entry(c)) < 0)
		goto fail;
	if ((e = entry_new(ns, name)) == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	e->obj = obj;
	link_entry(c, e);
	return 0;
fail:
	json_object_put(obj);
	return r;
}

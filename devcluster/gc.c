/*
 * gc.c: the garbage collector, kube-controller-manager's, inside the
 * loop.
 *
 * Objects name their owners in metadata.ownerReferences (apiVersion,
 * kind, name, uid, controller, blockOwnerDeletion). An owner is either
 * cluster-scoped or in its dependent's namespace; it counts as present
 * only while an object of that kind and name with that uid exists. The
 * collector keeps what upstream's graph builder keeps that a lookup
 * cannot give: an index from each owner uid to its dependents, fed by
 * storage_subscribe() (and a scan at start, for restored objects). It
 * never writes from the subscriber: it queues work items (an object,
 * by collection, namespace and name) and a loop timer processes at
 * most GC_BATCH of them per pass, so nothing blocks.
 *
 * Processing an item follows upstream's attemptToDeleteItem():
 *
 *	owner being deleted with the "orphan" finalizer: strip its
 *	reference from every dependent, then remove the finalizer
 *
 *	owner being deleted with "foregroundDeletion" (deleting its
 *	dependents): queue the dependents; once none left has
 *	blockOwnerDeletion: true in its reference, remove the finalizer
 *
 *	any other object with owner references: classify each owner as
 *	solid (present), dangling (absent, or another uid), waiting
 *	(present, deleting its dependents) or unknown (the kind is not
 *	served: try again later). With a solid owner, references to
 *	dangling and waiting owners are dropped. Otherwise the object is
 *	deleted: in the foreground when a waiting owner exists and the
 *	object has dependents of its own (after unblocking its references
 *	if a dependent of it deletes in the foreground too: a cycle),
 *	else with the policy its own finalizers ask for, Background by
 *	default, and with a uid precondition
 *
 * Deletions go through api_delete_object_opts(), so finalizers and pod
 * grace periods apply; the metadata edits (references, the collector's
 * finalizers) are written straight to storage, and the edit that
 * removes the last finalizer of a deleting object removes it, as the
 * API's update does.
 *
 * An owner uid that does not exist when a dependent appears is not
 * trusted at once: the dependent is looked at again after GC_DANGLING_MS,
 * a live lookup, and deleted only if the owner is still absent then, so
 * a create race (or a type not yet registered after a restart) is not
 * fatal. Lookups that cannot be resolved are retried with backoff.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/queue.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/hash.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>

#include "devcluster.h"
#include "gc.h"

#define GC_BATCH		256	/* items processed per timer pass */
#define GC_DANGLING_MS		1000	/* before an absent owner counts as gone */
#define GC_RETRY_MS		250	/* first retry of a failed item */
#define GC_RETRY_MAX_MS		30000

#define GC_MANAGER		"kube-controller-manager"	/* managedFields */
#define FIN_ORPHAN		"orphan"
#define FIN_FOREGROUND		"foregroundDeletion"

/* A dependent of an owner uid. */
struct dep {
	struct dc_coll	*coll;
	char		*ns;
	char		*name;
	char		*uid;
};

/* Owner uid -> its dependents (hent.key is the uid). */
struct owner {
	struct kc_hmap_node	 h;
	struct dep	*deps;
	size_t		 ndeps;
	size_t		 cap;
};

/* A queued object (hent.key is "<coll>\x1f<ns>\x1f<name>"). */
struct item {
	struct kc_hmap_node	 h;
	TAILQ_ENTRY(item) link;
	struct dc_coll	*coll;
	char		*ns;
	char		*name;
	uint64_t	 due_ms;
	uint64_t	 round;		/* the pass that queued it */
	unsigned	 attempts;
};

TAILQ_HEAD(item_list, item);

struct gc {
	struct dc	*dc;
	struct dc_timer	 timer;
	struct kc_hmap	 owners;
	struct kc_hmap	 items;
	struct item_list queue;
	uint64_t	 round;
	bool		 in_tick;
	int64_t		 kick_ms;	/* earliest work queued during a pass */
};

enum ref_state {
	REF_SOLID,
	REF_DANGLING,
	REF_WAITING,	/* present, deleting its dependents */
	REF_UNKNOWN,	/* its kind is not served (yet) */
	REF_INVALID,	/* a namespaced owner of a cluster-scoped object */
};

/*
 * Object helpers
 */

static bool
strv_has(const struct json_object *arr, const char *s)
{
	size_t n = json_object_is_type(arr, json_type_array) ?
	    json_object_array_length(arr) : 0;

	for (size_t i = 0; i < n; i++) {
		const char *v = json_object_get_string(json_object_array_get_idx(arr, i));

		if (json_object_is_type(json_object_array_get_idx(arr, i), json_type_string) &&
		    strcmp(v, s) == 0)
			return true;
	}
	return false;
}

static bool
has_finalizer(const struct json_object *obj, const char *f)
{
	return strv_has(kc_json_get(obj, "metadata", "finalizers"), f);
}

static bool
deleting(const struct json_object *obj)
{
	return kc_json_get(obj, "metadata", "deletionTimestamp") != NULL;
}

static bool
deleting_dependents(const struct json_object *obj)
{
	return deleting(obj) && has_finalizer(obj, FIN_FOREGROUND);
}

static const char *
str_or(const char *s, const char *def)
{
	return s != NULL ? s : def;
}

static const char *
uid_of(const struct json_object *obj)
{
	return str_or(kc_json_str(obj, "metadata", "uid"), "");
}

static struct json_object *
refs_of(const struct json_object *obj)
{
	struct json_object *r = kc_json_arr_of(kc_json_obj_of(obj, "metadata"),
	    "ownerReferences");

	return r != NULL && json_object_array_length(r) > 0 ? r : NULL;
}

static size_t
refs_len(const struct json_object *refs)
{
	return refs != NULL ? json_object_array_length(refs) : 0;
}

/* The reference to owner 'uid' in 'refs', or NULL. */
static struct json_object *
ref_find(const struct json_object *refs, const char *uid)
{
	for (size_t i = 0; i < refs_len(refs); i++) {
		struct json_object *r = json_object_array_get_idx(refs, i);
		const char *u = kc_json_str(r, "uid");

		if (u != NULL && strcmp(u, uid) == 0)
			return r;
	}
	return NULL;
}

/* The type serving a collection, preferring its storage version. */
static const struct dc_rtype *
coll_type(const struct dc *dc, const struct dc_coll *coll)
{
	const struct dc_rtype *t, *any = NULL;

	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link)) {
		if (t->coll != coll)
			continue;
		if ((t->flags & DC_RT_STORAGE) || t->ops->convert_in == NULL)
			return t;
		if (any == NULL)
			any = t;
	}
	return any;
}

/* The object (coll, ns, name) if it still has 'uid' (any when NULL). */
static const struct json_object *
live(const struct dc_coll *coll, const char *ns, const char *name, const char *uid)
{
	const struct json_object *o = coll_get(coll, ns, name);

	if (o == NULL || (uid != NULL && strcmp(uid_of(o), uid) != 0))
		return NULL;
	return o;
}

/*
 * Where an owner reference points, seen from a dependent in 'dep_ns'
 * ("" when cluster-scoped); '*ret_owner' gets the owner when present.
 */
static enum ref_state
ref_state(const struct dc *dc, const char *dep_ns, const struct json_object *ref,
    const struct json_object **ret_owner, const struct dc_rtype **ret_rt)
{
	const char *av = kc_json_str(ref, "apiVersion"), *kind = kc_json_str(ref, "kind");
	const char *name = kc_json_str(ref, "name"), *uid = kc_json_str(ref, "uid");
	const struct json_object *o;
	const struct dc_rtype *rt;
	char group[DC_SEGMENT_MAX];
	const char *slash, *version;

	if (ret_owner != NULL)
		*ret_owner = NULL;
	if (av == NULL || kind == NULL || name == NULL || uid == NULL)
		return REF_UNKNOWN;
	if ((slash = strchr(av, '/')) == NULL) {
		group[0] = '\0';
		version = av;
	} else {
		if ((size_t)(slash - av) >= sizeof(group) || strchr(slash + 1, '/') != NULL)
			return REF_UNKNOWN;
		memcpy(group, av, (size_t)(slash - av));
		group[slash - av] = '\0';
		version = slash + 1;
	}
	if ((rt = registry_find_kind(dc, group, version, kind)) == NULL &&
	    (rt = registry_find_kind(dc, group, NULL, kind)) == NULL)
		return REF_UNKNOWN;
	if (rt->namespaced && dep_ns[0] == '\0')
		return REF_INVALID;
	if ((o = live(rt->coll, rt->namespaced ? dep_ns : "", name, uid)) == NULL)
		return REF_DANGLING;
	if (ret_owner != NULL)
		*ret_owner = o;
	if (ret_rt != NULL)
		*ret_rt = rt;
	return deleting_dependents(o) ? REF_WAITING : REF_SOLID;
}

/*
 * The work queue
 */

static int
item_key(const struct dc_coll *coll, const char *ns, const char *name, char *buf,
    size_t size)
{
	int n = snprintf(buf, size, "%p\x1f%s\x1f%s", (const void *)coll, ns, name);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static void
item_free(struct item *it)
{
	if (it == NULL)
		return;
	kc_free(it->h.key);
	kc_free(it->ns);
	kc_free(it->name);
	kc_free(it);
}

static void
kick(struct gc *g, uint64_t delay_ms)
{
	uint64_t due = kc_clock_now_ms() + delay_ms;

	if (g->in_tick) {
		if (g->kick_ms < 0 || (int64_t)delay_ms < g->kick_ms)
			g->kick_ms = (int64_t)delay_ms;
		return;
	}
	if (g->timer.armed && g->timer.due_ms <= due)
		return;
	timer_arm(&g->timer, delay_ms);
}

/* Queues (coll, ns, name) to be looked at in 'delay_ms' (sooner wins). */
static int
enqueue(struct gc *g, struct dc_coll *coll, const char *ns, const char *name,
    uint64_t delay_ms)
{
	char key[2 * DC_SEGMENT_MAX + 64];
	uint64_t due = kc_clock_now_ms() + delay_ms;
	struct item *it;
	int r;

	if (name == NULL || item_key(coll, ns, name, key, sizeof(key)) < 0)
		return 0;
	if ((it = (struct item *)kc_hmap_get(&g->items, key)) != NULL) {
		if (due < it->due_ms)
			it->due_ms = due;
		kick(g, delay_ms);
		return 0;
	}
	if ((it = kc_calloc(1, sizeof(*it))) == NULL)
		return -ENOMEM;
	it->coll = coll;
	it->due_ms = due;
	it->round = g->round;
	if ((it->h.key = kc_strdup(key)) == NULL || (it->ns = kc_strdup(ns)) == NULL ||
	    (it->name = kc_strdup(name)) == NULL || (r = kc_hmap_put(&g->items, &it->h)) < 0) {
		item_free(it);
		return -ENOMEM;
	}
	TAILQ_INSERT_TAIL(&g->queue, it, link);
	kick(g, delay_ms);
	return 0;
}

static void
enqueue_obj(struct gc *g, struct dc_coll *coll, const struct json_object *obj,
    uint64_t delay_ms)
{
	const char *ns = coll_namespaced(coll) ?
	    str_or(kc_json_str(obj, "metadata", "namespace"), "") : "";

	if (enqueue(g, coll, ns, kc_json_str(obj, "metadata", "name"), delay_ms) < 0)
		kc_log_warn(NULL, "garbage collector: out of memory queueing %s",
		    str_or(kc_json_str(obj, "metadata", "name"), ""));
}

/*
 * The dependents index
 */

static struct owner *
owner_find(const struct gc *g, const char *uid)
{
	return (struct owner *)kc_hmap_get(&g->owners, uid);
}

static void
dep_clear(struct dep *d)
{
	kc_free(d->ns);
	kc_free(d->name);
	kc_free(d->uid);
}

static void
owner_free(struct owner *o)
{
	for (size_t i = 0; i < o->ndeps; i++)
		dep_clear(&o->deps[i]);
	kc_free(o->deps);
	kc_free(o->h.key);
	kc_free(o);
}

static void
owner_drop_dep(struct gc *g, struct owner *o, size_t i)
{
	dep_clear(&o->deps[i]);
	o->deps[i] = o->deps[--o->ndeps];
	if (o->ndeps == 0) {
		kc_hmap_del(&g->owners, &o->h);
		owner_free(o);
	}
}

static int
index_add(struct gc *g, const char *owner_uid, struct dc_coll *coll, const char *ns,
    const char *name, const char *uid)
{
	struct owner *o = owner_find(g, owner_uid);
	struct dep *d;

	if (o == NULL) {
		if ((o = kc_calloc(1, sizeof(*o))) == NULL)
			return -ENOMEM;
		if ((o->h.key = kc_strdup(owner_uid)) == NULL ||
		    kc_hmap_put(&g->owners, &o->h) < 0) {
			owner_free(o);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < o->ndeps; i++)
		if (o->deps[i].coll == coll && strcmp(o->deps[i].ns, ns) == 0 &&
		    strcmp(o->deps[i].name, name) == 0) {
			char *u = kc_strdup(uid);

			if (u == NULL)
				return -ENOMEM;
			kc_free(o->deps[i].uid);
			o->deps[i].uid = u;
			return 0;
		}
	if (o->ndeps == o->cap) {
		size_t cap = o->cap != 0 ? o->cap * 2 : 4;

		if ((d = kc_reallocarray(o->deps, cap, sizeof(*d))) == NULL)
			return -ENOMEM;
		o->deps = d;
		o->cap = cap;
	}
	d = &o->deps[o->ndeps];
	memset(d, 0, sizeof(*d));
	d->coll = coll;
	if ((d->ns = kc_strdup(ns)) == NULL || (d->name = kc_strdup(name)) == NULL ||
	    (d->uid = kc_strdup(uid)) == NULL) {
		dep_clear(d);
		if (o->ndeps == 0) {
			kc_hmap_del(&g->owners, &o->h);
			owner_free(o);
		}
		return -ENOMEM;
	}
	o->ndeps++;
	return 0;
}

static void
index_remove(struct gc *g, const char *owner_uid, const struct dc_coll *coll,
    const char *ns, const char *name)
{
	struct owner *o = owner_find(g, owner_uid);

	if (o == NULL)
		return;
	for (size_t i = 0; i < o->ndeps; i++)
		if (o->deps[i].coll == coll && strcmp(o->deps[i].ns, ns) == 0 &&
		    strcmp(o->deps[i].name, name) == 0) {
			owner_drop_dep(g, o, i);
			return;
		}
}

/*
 * The live dependents of 'uid' (stale index entries are dropped).
 * Calls 'fn' for each until it returns non-zero (returned).
 */
typedef int	dep_fn(struct gc *, const struct dep *, const struct json_object *dobj,
		    void *arg);

static int
each_dep(struct gc *g, const char *uid, dep_fn *fn, void *arg)
{
	struct owner *o = owner_find(g, uid);
	size_t i = 0;
	int r;

	while (o != NULL && i < o->ndeps) {
		const struct dep *d = &o->deps[i];
		const struct json_object *dobj = live(d->coll, d->ns, d->name, d->uid);

		if (dobj == NULL || ref_find(refs_of(dobj), uid) == NULL) {
			bool last = o->ndeps == 1;

			owner_drop_dep(g, o, i);
			if (last)
				break;
			continue;
		}
		if ((r = fn(g, d, dobj, arg)) != 0)
			return r;
		i++;
	}
	return 0;
}

/*
 * Metadata writes
 */

/* An update that leaves a deleting object without finalizers removes it. */
static bool
finalized(const struct dc_coll *coll, const struct json_object *obj)
{
	if (!deleting(obj))
		return false;
	if (refs_len(kc_json_arr_of(kc_json_obj_of(obj, "metadata"), "finalizers")) > 0)
		return false;
	if (coll_group(coll)[0] == '\0' && strcmp(coll_resource(coll), "namespaces") == 0 &&
	    refs_len(kc_json_arr_of(kc_json_obj_of(obj, "spec"), "finalizers")) > 0)
		return false;
	return true;
}

/* Writes 'next' (consumed), a metadata edit of the stored 'old'. */
static int
write_meta(struct gc *g, struct dc_coll *coll, const struct json_object *old,
    struct json_object *next)
{
	const struct dc_rtype *rt = coll_type(g->dc, coll);
	int r;

	/* managedFields follow, as for the controller-manager's patches. */
	if (rt != NULL && g->dc->hooks.managed_fields != NULL) {
		struct dc_write_ctx wc = { .dc = g->dc, .rt = rt, .op = DC_OP_UPDATE,
		    .field_manager = GC_MANAGER, .old = old };

		if ((r = g->dc->hooks.managed_fields(&wc, next)) < 0) {
			json_object_put(next);
			return r;
		}
	}
	if (finalized(coll, next))
		r = storage_delete(g->dc->store, coll, next, obj_rv(old), NULL);
	else
		r = storage_update(g->dc->store, coll, next, obj_rv(old), NULL);
	return r == DC_UNCHANGED ? 0 : r;
}

/* Drops every entry of metadata.<key> for which 'drop' says so. */
static int
filter_meta_array(struct json_object *obj, const char *key,
    bool (*drop)(struct json_object *, const void *), const void *arg)
{
	struct json_object *meta = kc_json_obj_of(obj, "metadata");
	struct json_object *arr = kc_json_arr_of(meta, key), *keep;

	if (arr == NULL)
		return 0;
	if ((keep = json_object_new_array()) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *v = json_object_array_get_idx(arr, i);

		if (drop(v, arg))
			continue;
		if (kc_json_append_nullable(keep, json_object_get(v)) < 0) {
			json_object_put(keep);
			return -ENOMEM;
		}
	}
	if (json_object_array_length(keep) == 0) {
		json_object_put(keep);
		json_object_object_del(meta, key);
		return 0;
	}
	return kc_json_put(meta, key, keep);
}

static bool
is_string(struct json_object *v, const void *arg)
{
	return json_object_is_type(v, json_type_string) &&
	    strcmp(json_object_get_string(v), arg) == 0;
}

/* The owner uids to drop, NULL-terminated. */
static bool
ref_in(struct json_object *ref, const void *arg)
{
	const char *const *uids = arg;
	const char *u = kc_json_str(ref, "uid");

	for (size_t i = 0; u != NULL && uids[i] != NULL; i++)
		if (strcmp(uids[i], u) == 0)
			return true;
	return false;
}

static int
remove_finalizer(struct gc *g, struct dc_coll *coll, const struct json_object *obj,
    const char *fin)
{
	struct json_object *next;
	int r;

	if (!has_finalizer(obj, fin))
		return 0;
	if ((next = kc_json_copy(obj)) == NULL)
		return -ENOMEM;
	if ((r = filter_meta_array(next, "finalizers", is_string, fin)) < 0) {
		json_object_put(next);
		return r;
	}
	return write_meta(g, coll, obj, next);
}

static int
remove_refs(struct gc *g, struct dc_coll *coll, const struct json_object *obj,
    const char *const *uids)
{
	struct json_object *next;
	int r;

	if ((next = kc_json_copy(obj)) == NULL)
		return -ENOMEM;
	if ((r = filter_meta_array(next, "ownerReferences", ref_in, uids)) < 0) {
		json_object_put(next);
		return r;
	}
	return write_meta(g, coll, obj, next);
}

/* Sets blockOwnerDeletion false on the references to 'uids'. */
static int
unblock_refs(struct gc *g, struct dc_coll *coll, const struct json_object *obj,
    const char *const *uids)
{
	struct json_object *next, *refs;
	int r;

	if ((next = kc_json_copy(obj)) == NULL)
		return -ENOMEM;
	refs = refs_of(next);
	for (size_t i = 0; i < refs_len(refs); i++) {
		struct json_object *ref = json_object_array_get_idx(refs, i);

		if (ref_in(ref, uids) && kc_json_bool(ref, false, "blockOwnerDeletion") &&
		    kc_json_set_bool(ref, "blockOwnerDeletion", false) < 0) {
			json_object_put(next);
			return -ENOMEM;
		}
	}
	r = write_meta(g, coll, obj, next);
	return r;
}

/*
 * Processing
 */

struct owner_pass {
	const char	*uid;
	size_t		 blocking;
	int		 err;
};

/* Foreground: queue the blocking dependents, count them. */
static int
fg_dep(struct gc *g, const struct dep *d, const struct json_object *dobj, void *arg)
{
	struct owner_pass *p = arg;
	struct json_object *ref = ref_find(refs_of(dobj), p->uid);

	if (!kc_json_bool(ref, false, "blockOwnerDeletion"))
		return 0;
	p->blocking++;
	if (!deleting_dependents(dobj) && enqueue(g, d->coll, d->ns, d->name, 0) < 0)
		p->err = -ENOMEM;
	return 0;
}

/* Orphan: strip the owner's reference from the dependent. */
static int
orphan_dep(struct gc *g, const struct dep *d, const struct json_object *dobj, void *arg)
{
	struct owner_pass *p = arg;
	const char *uids[] = { p->uid, NULL };
	int r;

	/* The write drops the index entry (an event): the walk restarts. */
	if ((r = remove_refs(g, d->coll, dobj, uids)) < 0) {
		p->err = r;
		return r;
	}
	return 1;
}

static int
process_orphan(struct gc *g, struct dc_coll *coll, const struct json_object *obj)
{
	struct owner_pass p = { .uid = uid_of(obj) };
	char uid[128];
	int r;

	(void)kc_strlcpy(uid, p.uid, sizeof(uid));
	p.uid = uid;
	while ((r = each_dep(g, uid, orphan_dep, &p)) > 0)
		;
	if (p.err < 0)
		return p.err;
	if ((obj = live(coll, str_or(kc_json_str(obj, "metadata", "namespace"), ""),
	    kc_json_str(obj, "metadata", "name"), uid)) == NULL)
		return 0;
	return remove_finalizer(g, coll, obj, FIN_ORPHAN);
}

static int
process_foreground(struct gc *g, struct dc_coll *coll, const struct json_object *obj)
{
	struct owner_pass p = { .uid = uid_of(obj) };

	(void)each_dep(g, p.uid, fg_dep, &p);
	if (p.err < 0)
		return p.err;
	if (p.blocking > 0)
		return 0;
	return remove_finalizer(g, coll, obj, FIN_FOREGROUND);
}

static int
dep_deleting_dependents(struct gc *g, const struct dep *d, const struct json_object *dobj,
    void *arg)
{
	(void)g;
	(void)d;
	(void)arg;
	return deleting_dependents(dobj) ? 1 : 0;
}

static int
count_dep(struct gc *g, const struct dep *d, const struct json_object *dobj, void *arg)
{
	(void)g;
	(void)d;
	(void)dobj;
	(*(size_t *)arg)++;
	return 0;
}

static int
delete_dependent(struct gc *g, const struct dc_rtype *rt, const struct json_object *obj,
    const char *policy)
{
	char ns[DC_SEGMENT_MAX], name[DC_SEGMENT_MAX], uid[128];
	struct kc_log_ctx lc = { .action = "gc", .kind = rt->kind, .ns = ns, .name = name };
	int r;

	(void)kc_strlcpy(ns, str_or(kc_json_str(obj, "metadata", "namespace"), ""), sizeof(ns));
	(void)kc_strlcpy(name, str_or(kc_json_str(obj, "metadata", "name"), ""), sizeof(name));
	(void)kc_strlcpy(uid, uid_of(obj), sizeof(uid));
	kc_log_debug(&lc, "deleting (%s)", policy);
	r = api_delete_object_opts(g->dc, rt, ns, name, -1, policy, uid);
	return r == KC_ENOTFOUND || r == KC_ECONFLICT ? 0 : r;
}

/*
 * Looks at one object: 0 when done, a delay in ms to look again, or a
 * negative code (retried with backoff).
 */
static int64_t
process(struct gc *g, struct item *it)
{
	const struct json_object *obj = coll_get(it->coll, it->ns, it->name);
	const struct dc_rtype *rt;
	struct json_object *refs;
	const char *drop[64];
	size_t nsolid = 0, nwaiting = 0, ndrop = 0, ndeps = 0;
	bool unknown = false, more = false;
	int r;

	if (obj == NULL)
		return 0;
	if ((rt = coll_type(g->dc, it->coll)) == NULL)
		return GC_RETRY_MAX_MS;	/* a custom type not served (yet) */
	if (deleting(obj) && has_finalizer(obj, FIN_ORPHAN))
		return process_orphan(g, it->coll, obj);
	if (deleting_dependents(obj))
		return process_foreground(g, it->coll, obj);
	if (deleting(obj) || (refs = refs_of(obj)) == NULL)
		return 0;
	for (size_t i = 0; i < refs_len(refs); i++) {
		struct json_object *ref = json_object_array_get_idx(refs, i);

		switch (ref_state(g->dc, it->ns, ref, NULL, NULL)) {
		case REF_SOLID:
			nsolid++;
			break;
		case REF_WAITING:
			nwaiting++;
			/* FALLTHROUGH */
		case REF_DANGLING:
			if (ndrop + 1 < KC_ARRAY_SIZE(drop))
				drop[ndrop++] = kc_json_str(ref, "uid");
			else
				more = true;
			break;
		case REF_UNKNOWN:
			unknown = true;
			break;
		case REF_INVALID:
			/* Upstream logs it and never retries. */
			return 0;
		}
	}
	if (unknown)
		return -EAGAIN;
	drop[ndrop] = NULL;
	if (nsolid > 0) {
		if (ndrop > 0 && (r = remove_refs(g, it->coll, obj, drop)) < 0)
			return r;
		return more ? GC_RETRY_MS : 0;
	}
	(void)each_dep(g, uid_of(obj), count_dep, &ndeps);
	if (nwaiting > 0 && ndeps > 0) {
		const char *waiting[64];
		size_t nw = 0;

		for (size_t i = 0; i < refs_len(refs) && nw + 1 < KC_ARRAY_SIZE(waiting); i++)
			if (ref_state(g->dc, it->ns, json_object_array_get_idx(refs, i), NULL,
			    NULL) == REF_WAITING)
				waiting[nw++] = kc_json_str(json_object_array_get_idx(refs, i),
				    "uid");
		waiting[nw] = NULL;
		if (each_dep(g, uid_of(obj), dep_deleting_dependents, NULL) > 0) {
			/* A cycle in the making: unblock, as upstream does. */
			if ((r = unblock_refs(g, it->coll, obj, waiting)) < 0)
				return r;
			if ((obj = live(it->coll, it->ns, it->name, NULL)) == NULL)
				return 0;
		}
		return delete_dependent(g, rt, obj, "Foreground");
	}
	if (has_finalizer(obj, FIN_ORPHAN))
		return delete_dependent(g, rt, obj, "Orphan");
	if (has_finalizer(obj, FIN_FOREGROUND))
		return delete_dependent(g, rt, obj, "Foreground");
	return delete_dependent(g, rt, obj, "Background");
}

/* The delay before an item that failed is looked at again. */
static int64_t
backoff(struct item *it)
{
	uint64_t d = GC_RETRY_MS;

	for (unsigned i = 0; i < it->attempts && d < GC_RETRY_MAX_MS; i++)
		d *= 2;
	if (it->attempts < 32)
		it->attempts++;
	return (int64_t)KC_MIN(d, (uint64_t)GC_RETRY_MAX_MS);
}

static int64_t
gc_tick(void *arg)
{
	struct gc *g = arg;
	struct item *it, *nx;
	uint64_t now = kc_clock_now_ms();
	int64_t next = -1, d;
	size_t budget = GC_BATCH;

	g->round++;
	g->in_tick = true;
	g->kick_ms = -1;
	for (it = TAILQ_FIRST(&g->queue); it != NULL; it = nx) {
		nx = TAILQ_NEXT(it, link);
		if (it->due_ms > now || it->round == g->round || budget == 0) {
			d = it->due_ms > now ? (int64_t)(it->due_ms - now) : 0;
			if (next < 0 || d < next)
				next = d;
			continue;
		}
		budget--;
		TAILQ_REMOVE(&g->queue, it, link);
		kc_hmap_del(&g->items, &it->h);
		d = process(g, it);
		if (d != 0 && kc_hmap_get(&g->items, it->h.key) == NULL) {
			/* Again later: errors back off, up to GC_RETRY_MAX_MS. */
			if (d < 0)
				d = backoff(it);
			it->due_ms = now + (uint64_t)d;
			it->round = g->round;
			if (kc_hmap_put(&g->items, &it->h) == 0) {
				TAILQ_INSERT_TAIL(&g->queue, it, link);
				if (next < 0 || d < next)
					next = d;
				continue;
			}
		}
		item_free(it);
	}
	g->in_tick = false;
	if (g->kick_ms >= 0 && (next < 0 || g->kick_ms < next))
		next = g->kick_ms;
	return next < 0 ? DC_TIMER_STOP : next;
}

/*
 * Events
 */

/* Queues the owners of 'refs' that wait for their dependents. */
static void
poke_waiting_owners(struct gc *g, const char *ns, const struct json_object *refs,
    const struct json_object *keep)
{
	for (size_t i = 0; i < refs_len(refs); i++) {
		struct json_object *ref = json_object_array_get_idx(refs, i);
		struct json_object *now = ref_find(keep, str_or(kc_json_str(ref, "uid"), ""));
		const struct json_object *owner;
		const struct dc_rtype *rt;

		/* Still there with the same blocking: nothing changed for it. */
		if (now != NULL && kc_json_bool(now, false, "blockOwnerDeletion") ==
		    kc_json_bool(ref, false, "blockOwnerDeletion"))
			continue;
		if (ref_state(g->dc, ns, ref, &owner, &rt) == REF_WAITING)
			enqueue_obj(g, rt->coll, owner, 0);
	}
}

static int
index_refs(struct gc *g, struct dc_coll *coll, const char *ns, const char *name,
    const char *uid, const struct json_object *old, const struct json_object *cur)
{
	int r = 0;

	for (size_t i = 0; i < refs_len(old); i++) {
		const char *u = kc_json_str(json_object_array_get_idx(old, i), "uid");

		if (u != NULL && ref_find(cur, u) == NULL)
			index_remove(g, u, coll, ns, name);
	}
	for (size_t i = 0; i < refs_len(cur); i++) {
		const char *u = kc_json_str(json_object_array_get_idx(cur, i), "uid");

		if (u != NULL && index_add(g, u, coll, ns, name, uid) < 0)
			r = -ENOMEM;
	}
	return r;
}

static int
enqueue_dep(struct gc *g, const struct dep *d, const struct json_object *dobj, void *arg)
{
	(void)dobj;
	(void)arg;
	if (enqueue(g, d->coll, d->ns, d->name, 0) < 0)
		kc_log_warn(NULL, "garbage collector: out of memory queueing %s", d->name);
	return 0;
}

/* A dependent needs a look when an owner it names is not solid. */
static void
check_new_refs(struct gc *g, struct dc_coll *coll, const char *ns,
    const struct json_object *obj, const struct json_object *old,
    const struct json_object *cur)
{
	uint64_t delay = UINT64_MAX;

	for (size_t i = 0; i < refs_len(cur); i++) {
		struct json_object *ref = json_object_array_get_idx(cur, i);

		if (ref_find(old, str_or(kc_json_str(ref, "uid"), "")) != NULL)
			continue;
		switch (ref_state(g->dc, ns, ref, NULL, NULL)) {
		case REF_WAITING:
			delay = 0;
			break;
		case REF_DANGLING:
		case REF_UNKNOWN:
			delay = KC_MIN(delay, (uint64_t)GC_DANGLING_MS);
			break;
		default:
			break;
		}
	}
	if (delay != UINT64_MAX)
		enqueue_obj(g, coll, obj, delay);
}

static void
on_event(void *arg, const struct dc_event *ev)
{
	struct gc *g = arg;
	const struct json_object *obj = ev->obj, *prev = ev->prev;
	const struct json_object *cur = ev->type == DC_EV_DELETED ? NULL : refs_of(obj);
	const struct json_object *old = prev != NULL ? refs_of(prev) : NULL;
	const char *ns = coll_namespaced(ev->coll) ?
	    str_or(kc_json_str(obj, "metadata", "namespace"), "") : "";
	const char *name = kc_json_str(obj, "metadata", "name");
	char uid[128];

	if (name == NULL)
		return;
	(void)kc_strlcpy(uid, uid_of(obj), sizeof(uid));
	if ((old != NULL || cur != NULL) &&
	    index_refs(g, ev->coll, ns, name, uid, old, cur) < 0)
		kc_log_warn(NULL, "garbage collector: out of memory indexing %s", name);
	if (ev->type == DC_EV_DELETED) {
		/* Its dependents may be garbage now; its owners may wait for it. */
		(void)each_dep(g, uid, enqueue_dep, NULL);
		poke_waiting_owners(g, ns, old, NULL);
		return;
	}
	if (cur != NULL)
		check_new_refs(g, ev->coll, ns, obj, old, cur);
	if (old != NULL)
		poke_waiting_owners(g, ns, old, cur);
	if (deleting(obj) && (has_finalizer(obj, FIN_ORPHAN) ||
	    has_finalizer(obj, FIN_FOREGROUND)))
		enqueue_obj(g, ev->coll, obj, 0);
	if (deleting_dependents(obj) && (prev == NULL || !deleting_dependents(prev)))
		(void)each_dep(g, uid, enqueue_dep, NULL);
}

static int
gc_hook(struct dc *dc, const struct dc_rtype *rt, const struct json_object *obj)
{
	enqueue_obj(plugin_state(dc, &gc_plugin), rt->coll, obj, 0);
	return 0;
}

/*
 * Start: index what storage already holds (a restore).
 */

static int
scan_coll(void *arg, struct dc_coll *coll)
{
	struct gc *g = arg;
	struct json_object **objs = NULL;
	size_t n = 0;
	int r;

	if ((r = coll_list(coll, NULL, NULL, &objs, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		const struct json_object *obj = objs[i], *refs = refs_of(obj);
		const char *ns = coll_namespaced(coll) ?
		    str_or(kc_json_str(obj, "metadata", "namespace"), "") : "";
		const char *name = kc_json_str(obj, "metadata", "name");

		if (name == NULL)
			continue;
		if (refs != NULL) {
			if ((r = index_refs(g, coll, ns, name, uid_of(obj), NULL, refs)) < 0)
				break;
			check_new_refs(g, coll, ns, obj, NULL, refs);
		}
		if (deleting(obj) && (has_finalizer(obj, FIN_ORPHAN) ||
		    has_finalizer(obj, FIN_FOREGROUND)))
			enqueue_obj(g, coll, obj, 0);
	}
	objs_free(objs, n);
	return r;
}

int
gc_init(struct dc *dc)
{
	struct gc *g;
	int r;

	if ((g = kc_calloc(1, sizeof(*g))) == NULL)
		return -ENOMEM;
	g->dc = dc;
	TAILQ_INIT(&g->queue);
	timer_init(&g->timer, dc, gc_tick, g);
	plugin_set_state(dc, &gc_plugin, g);
	if ((r = storage_foreach_coll(dc->store, scan_coll, g)) < 0 ||
	    (r = storage_subscribe(dc->store, on_event, g)) < 0) {
		gc_fini(dc);
		return r;
	}
	dc->hooks.finalizer_added = gc_hook;
	return 0;
}

void
gc_fini(struct dc *dc)
{
	struct gc *g = plugin_state(dc, &gc_plugin);
	struct kc_hmap_node *e, *nx;
	struct item *it;
	size_t i;

	if (g == NULL)
		return;
	timer_cancel(&g->timer);
	storage_unsubscribe(dc->store, on_event, g);
	if (dc->hooks.finalizer_added == gc_hook)
		dc->hooks.finalizer_added = NULL;
	while ((it = TAILQ_FIRST(&g->queue)) != NULL) {
		TAILQ_REMOVE(&g->queue, it, link);
		item_free(it);
	}
	KC_HMAP_FOREACH_SAFE(e, nx, i, &g->owners)
		owner_free((struct owner *)e);
	kc_hmap_free(&g->owners);
	kc_hmap_free(&g->items);
	kc_free(g);
	plugin_set_state(dc, &gc_plugin, NULL);
}

size_t
gc_pending(const struct dc *dc)
{
	const struct gc *g = plugin_state(dc, &gc_plugin);

	return g != NULL ? g->items.n : 0;
}

size_t
gc_dependents(const struct dc *dc, const char *owner_uid)
{
	const struct gc *g = plugin_state(dc, &gc_plugin);
	const struct owner *o = g != NULL ? owner_find(g, owner_uid) : NULL;

	return o != NULL ? o->ndeps : 0;
}

static int
gc_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	(void)cfg;
	(void)st;
	return gc_init(dc);
}

const struct dc_plugin gc_plugin = {
	.name = "gc",
	.init = gc_start,
	.fini = gc_fini,
};

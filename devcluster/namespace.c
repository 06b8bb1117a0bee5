/*
 * namespace.c: the namespace controller, kube-controller-manager's
 * namespace deleter, inside the loop.
 *
 * DELETE on a namespace (write.c) sets its deletionTimestamp and phase
 * Terminating, after which creates inside it are refused (403,
 * NamespaceTerminating). From there this file takes over, as upstream's
 * namespacedResourcesDeleter does, for every namespace with a
 * deletionTimestamp:
 *
 *	1. phase Terminating (written if missing);
 *	2. spec.finalizers already empty: remove the namespace (once its
 *	   metadata.finalizers are empty too);
 *	3. delete every object in it, of every namespaced type that
 *	   discovery lists and that may be deleted (the preferred version
 *	   of each group and resource, custom resources included), with
 *	   the Background policy, through the full delete path: finalizers
 *	   and pod grace periods are honoured;
 *	4. write the deletion conditions on the namespace status, as the
 *	   controller does (NamespaceDeletionDiscoveryFailure,
 *	   NamespaceDeletionGroupVersionParsingFailure,
 *	   NamespaceDeletionContentFailure, NamespaceContentRemaining,
 *	   NamespaceFinalizersRemaining), only when they change;
 *	5. while objects remain, stop and try again later;
 *	6. finalize: remove "kubernetes" from spec.finalizers, which removes
 *	   the namespace when nothing else holds it.
 *
 * "Later" is event-driven: a storage subscriber kicks the loop timer
 * whenever an object in a terminating namespace is modified or deleted
 * (a finalizer removed, a pod's grace period over), and a slow timer
 * (NS_RECHECK_MS) backs it up. The core's hooks.ns_terminate,
 * which its own timer calls, only hands the namespace over to this
 * timer. At start (a restore) terminating namespaces are picked up.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>

#include "devcluster.h"
#include "namespace.h"

#define NS_RECHECK_MS		1000	/* content remains: look again */
#define NS_MANAGER		"kube-controller-manager"	/* managedFields */
#define NS_FINALIZER		"kubernetes"
#define NS_FINS_MAX		64	/* distinct finalizers counted */
#define NS_ERRS_MAX		16	/* delete errors reported */

struct nsc {
	struct dc	*dc;
	struct dc_timer	 timer;
	bool		 in_tick;
	bool		 kicked;	/* during a pass */
};

/* What a pass over one namespace found. */
struct fin_count {
	char		 name[256];
	size_t		 n;
};

struct res_count {
	char		 text[2 * DC_SEGMENT_MAX + 40];	/* "pods. has 2 resource instances" */
};

struct totals {
	struct res_count *res;
	size_t		 nres;
	struct fin_count fins[NS_FINS_MAX];
	size_t		 nfins;
	char		*errs[NS_ERRS_MAX];
	size_t		 nerrs;
	size_t		 remaining;
};

static void
totals_clear(struct totals *t)
{
	kc_free(t->res);
	for (size_t i = 0; i < t->nerrs; i++)
		kc_free(t->errs[i]);
	memset(t, 0, sizeof(*t));
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int
res_cmp(const void *a, const void *b)
{
	return strcmp(((const struct res_count *)a)->text, ((const struct res_count *)b)->text);
}

static int
fin_cmp(const void *a, const void *b)
{
	char x[300], y[300];

	/* Upstream sorts the formatted strings. */
	(void)snprintf(x, sizeof(x), "%s in %zu resource instances",
	    ((const struct fin_count *)a)->name, ((const struct fin_count *)a)->n);
	(void)snprintf(y, sizeof(y), "%s in %zu resource instances",
	    ((const struct fin_count *)b)->name, ((const struct fin_count *)b)->n);
	return strcmp(x, y);
}

static bool
deleting(const struct json_object *obj)
{
	return kc_json_get(obj, "metadata", "deletionTimestamp") != NULL;
}

static size_t
arr_len(const struct json_object *a)
{
	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static struct dc_rtype *
ns_type(const struct dc *dc)
{
	return registry_find(dc, "", "v1", "namespaces");
}

/* A terminating namespace (borrowed) or NULL. */
static const struct json_object *
terminating(const struct dc *dc, const char *name)
{
	const struct dc_rtype *nst = ns_type(dc);
	const struct json_object *ns;

	if (nst == NULL || name == NULL || (ns = coll_get(nst->coll, "", name)) == NULL ||
	    !deleting(ns))
		return NULL;
	return ns;
}

/*
 * Conditions
 */

struct cond {
	const char	*type;
	const char	*status;
	const char	*reason;
	char		 message[4096];
};

/* Joins the sorted strings 'v' with ", " into 'buf' (cut when too long). */
static void
join(char *buf, size_t size, const char *prefix, const char *const *v, size_t n)
{
	size_t off = (size_t)snprintf(buf, size, "%s", prefix);

	for (size_t i = 0; i < n && off < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%s", i > 0 ? ", " : "", v[i]);
}

/*
 * The five conditions of a pass, in upstream's order, from its totals
 * (namespace_conditions() is the tested face of it).
 */
static int
make_conditions(struct totals *t, struct cond conds[5])
{
	const char *v[NS_ERRS_MAX > NS_FINS_MAX ? NS_ERRS_MAX : NS_FINS_MAX];
	char (*fins)[300] = NULL;
	const char **rv = NULL;
	char prefix[96];

	memset(conds, 0, 5 * sizeof(*conds));
	conds[0] = (struct cond){ "NamespaceDeletionDiscoveryFailure", "False",
	    "ResourcesDiscovered", "All resources successfully discovered" };
	conds[1] = (struct cond){ "NamespaceDeletionGroupVersionParsingFailure", "False",
	    "ParsedGroupVersions", "All legacy kube types successfully parsed" };
	conds[2] = (struct cond){ "NamespaceDeletionContentFailure", "False",
	    "ContentDeleted", "All content successfully deleted, may be waiting on finalization" };
	conds[3] = (struct cond){ "NamespaceContentRemaining", "False", "ContentRemoved",
	    "All content successfully removed" };
	conds[4] = (struct cond){ "NamespaceFinalizersRemaining", "False", "ContentRemoved",
	    "All content successfully removed" };
	if (t->nerrs > 0) {
		qsort(t->errs, t->nerrs, sizeof(t->errs[0]), str_cmp);
		for (size_t i = 0; i < t->nerrs; i++)
			v[i] = t->errs[i];
		(void)snprintf(prefix, sizeof(prefix),
		    "Failed to delete all resource types, %zu remaining: ", t->nerrs);
		conds[2].status = "True";
		conds[2].reason = "ContentDeletionFailed";
		join(conds[2].message, sizeof(conds[2].message), prefix, v, t->nerrs);
	}
	if (t->nres > 0) {
		if ((rv = kc_calloc(t->nres, sizeof(*rv))) == NULL)
			return -ENOMEM;
		qsort(t->res, t->nres, sizeof(t->res[0]), res_cmp);
		for (size_t i = 0; i < t->nres; i++)
			rv[i] = t->res[i].text;
		conds[3].status = "True";
		conds[3].reason = "SomeResourcesRemain";
		join(conds[3].message, sizeof(conds[3].message),
		    "Some resources are remaining: ", rv, t->nres);
		kc_free(rv);
	}
	if (t->nfins > 0) {
		if ((fins = kc_calloc(t->nfins, sizeof(*fins))) == NULL)
			return -ENOMEM;
		qsort(t->fins, t->nfins, sizeof(t->fins[0]), fin_cmp);
		for (size_t i = 0; i < t->nfins; i++) {
			(void)snprintf(fins[i], sizeof(fins[i]), "%s in %zu resource instances",
			    t->fins[i].name, t->fins[i].n);
			v[i] = fins[i];
		}
		conds[4].status = "True";
		conds[4].reason = "SomeFinalizerRemain";
		join(conds[4].message, sizeof(conds[4].message),
		    "Some finalizers are remaining: ", v, t->nfins);
		kc_free(fins);
	}
	return 0;
}

static const struct json_object *
cond_find(const struct json_object *conds, const char *type)
{
	for (size_t i = 0; i < arr_len(conds); i++) {
		const struct json_object *c = json_object_array_get_idx(conds, i);
		const char *t = kc_json_str(c, "type");

		if (t != NULL && strcmp(t, type) == 0)
			return c;
	}
	return NULL;
}

static bool
str_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/*
 * Merges 'conds' into status.conditions of 'next' as upstream's
 * updateConditions(): new types appended, changed ones rewritten
 * (lastTransitionTime only when the status flips). Sets *changed.
 */
static int
merge_conditions(struct json_object *next, const struct cond conds[5], time_t now,
    bool *changed)
{
	struct json_object *status = kc_json_ensure_obj(next, "status"), *arr;
	char stamp[KC_TIME_MAX];

	*changed = false;
	if (status == NULL)
		return -ENOMEM;
	if ((arr = kc_json_arr_of(status, "conditions")) == NULL) {
		if ((arr = json_object_new_array()) == NULL ||
		    kc_json_put(status, "conditions", arr) < 0)
			return -ENOMEM;
	}
	(void)kc_time_format(now, stamp, sizeof(stamp));
	for (size_t i = 0; i < 5; i++) {
		struct json_object *c = (struct json_object *)(uintptr_t)cond_find(arr,
		    conds[i].type);

		if (c == NULL) {
			if ((c = json_object_new_object()) == NULL ||
			    kc_json_append(arr, c) < 0 ||
			    kc_json_set_str(c, "type", conds[i].type) < 0 ||
			    kc_json_set_str(c, "status", conds[i].status) < 0 ||
			    kc_json_set_str(c, "lastTransitionTime", stamp) < 0 ||
			    kc_json_set_str(c, "reason", conds[i].reason) < 0 ||
			    kc_json_set_str(c, "message", conds[i].message) < 0)
				return -ENOMEM;
			*changed = true;
			continue;
		}
		if (str_eq(kc_json_str(c, "status"), conds[i].status) &&
		    str_eq(kc_json_str(c, "reason"), conds[i].reason) &&
		    str_eq(kc_json_str(c, "message"), conds[i].message))
			continue;
		if (!str_eq(kc_json_str(c, "status"), conds[i].status) &&
		    kc_json_set_str(c, "lastTransitionTime", stamp) < 0)
			return -ENOMEM;
		if (kc_json_set_str(c, "status", conds[i].status) < 0 ||
		    kc_json_set_str(c, "reason", conds[i].reason) < 0 ||
		    kc_json_set_str(c, "message", conds[i].message) < 0)
			return -ENOMEM;
		*changed = true;
	}
	return 0;
}

/*
 * Content
 */

static int
add_err(struct totals *t, const char *fmt, ...) _printf_(2, 3);

static int
add_err(struct totals *t, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (t->nerrs == NS_ERRS_MAX)
		return 0;
	va_start(ap, fmt);
	(void)vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if ((t->errs[t->nerrs] = kc_strdup(buf)) == NULL)
		return -ENOMEM;
	t->nerrs++;
	return 0;
}

static void
count_finalizers(struct totals *t, const struct json_object *obj, bool *any)
{
	const struct json_object *fins = kc_json_get(obj, "metadata", "finalizers");

	for (size_t i = 0; i < arr_len(fins); i++) {
		const char *f = json_object_get_string(json_object_array_get_idx(fins, i));
		size_t j;

		if (f == NULL)
			continue;
		*any = true;
		for (j = 0; j < t->nfins; j++)
			if (strcmp(t->fins[j].name, f) == 0)
				break;
		if (j == t->nfins) {
			if (t->nfins == NS_FINS_MAX)
				continue;
			(void)kc_strlcpy(t->fins[j].name, f, sizeof(t->fins[j].name));
			t->nfins++;
		}
		t->fins[j].n++;
	}
}

/* Whether the namespace controller empties 'rt' (discovery's view). */
static bool
deletable(const struct dc *dc, const struct dc_rtype *rt)
{
	return rt->namespaced && (rt->verbs & DC_VERB_DELETE) &&
	    !(rt->flags & DC_RT_HIDDEN) && registry_find_any(dc, rt->group, rt->plural) == rt;
}

/* Deletes what 'rt' holds in 'ns' and counts what is left. */
static int
empty_type(struct dc *dc, const struct dc_rtype *rt, const char *ns, struct totals *t)
{
	struct json_object **objs = NULL;
	size_t n = 0, left;
	int64_t estimate = 0;
	bool fins = false;
	int r;

	if (coll_count(rt->coll, ns) == 0)
		return 0;
	if ((r = coll_list(rt->coll, ns, NULL, &objs, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		const char *name = kc_json_str(objs[i], "metadata", "name");

		if (name == NULL || deleting(objs[i]))
			continue;
		r = api_delete_object(dc, rt, ns, name, -1);
		if (r < 0 && r != KC_ENOTFOUND && r != -ENOMEM &&
		    add_err(t, "%s \"%s\": %s", rt->qualified, name, kc_strerror(r)) < 0)
			r = -ENOMEM;
		if (r == -ENOMEM) {
			objs_free(objs, n);
			return r;
		}
	}
	objs_free(objs, n);
	if ((left = coll_count(rt->coll, ns)) == 0)
		return 0;
	if ((r = coll_list(rt->coll, ns, NULL, &objs, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		count_finalizers(t, objs[i], &fins);
		/* Pods: the grace period still to run (estimateGracefulTermination). */
		if (kc_json_int(objs[i], 0, "metadata", "deletionGracePeriodSeconds") > estimate)
			estimate = kc_json_int(objs[i], 0, "metadata",
			    "deletionGracePeriodSeconds");
	}
	objs_free(objs, n);
	{
		struct res_count *res = kc_reallocarray(t->res, t->nres + 1, sizeof(*res));

		if (res == NULL)
			return -ENOMEM;
		t->res = res;
		(void)snprintf(res[t->nres].text, sizeof(res[t->nres].text),
		    "%s.%s has %zu resource instances", rt->plural, rt->group, left);
		t->nres++;
	}
	t->remaining += left;
	if (estimate == 0 && !fins &&
	    add_err(t, "unexpected items still remain in namespace: %s for gvr: %s/%s, "
	    "Resource=%s", ns, rt->group, rt->version, rt->plural) < 0)
		return -ENOMEM;
	return 0;
}

/*
 * Writes 'next' (consumed) over the stored namespace 'old', through
 * subresource 'sub' ("status", "finalize"): managedFields follow.
 */
static int
write_ns(struct dc *dc, const struct json_object *old, struct json_object *next,
    const char *sub)
{
	const struct dc_rtype *nst = ns_type(dc);
	bool gone = arr_len(kc_json_get(next, "spec", "finalizers")) == 0 &&
	    arr_len(kc_json_get(next, "metadata", "finalizers")) == 0;
	int r;

	if (dc->hooks.managed_fields != NULL) {
		struct dc_write_ctx wc = { .dc = dc, .rt = nst, .op = DC_OP_UPDATE,
		    .subresource = sub, .field_manager = NS_MANAGER, .old = old };

		if ((r = dc->hooks.managed_fields(&wc, next)) < 0) {
			json_object_put(next);
			return r;
		}
	}
	if (gone)
		r = storage_delete(dc->store, nst->coll, next, obj_rv(old), NULL);
	else
		r = storage_update(dc->store, nst->coll, next, obj_rv(old), NULL);
	return r == DC_UNCHANGED ? 0 : r;
}

/* Removes "kubernetes" from spec.finalizers (the finalize subresource). */
static int
finalize(struct dc *dc, const struct json_object *ns)
{
	struct json_object *next = kc_json_copy(ns), *fins, *keep;

	if (next == NULL || (keep = json_object_new_array()) == NULL) {
		if (next != NULL)
			json_object_put(next);
		return -ENOMEM;
	}
	fins = kc_json_get(next, "spec", "finalizers");
	for (size_t i = 0; i < arr_len(fins); i++) {
		struct json_object *f = json_object_array_get_idx(fins, i);

		if (str_eq(json_object_get_string(f), NS_FINALIZER))
			continue;
		if (kc_json_append(keep, json_object_get(f)) < 0) {
			json_object_put(keep);
			json_object_put(next);
			return -ENOMEM;
		}
	}
	if (json_object_array_length(keep) > 0) {
		struct json_object *spec = kc_json_ensure_obj(next, "spec");

		if (spec == NULL || kc_json_put(spec, "finalizers", keep) < 0) {
			json_object_put(next);
			return -ENOMEM;
		}
	} else {
		json_object_put(keep);
		json_object_object_del(kc_json_obj_of(next, "spec"), "finalizers");
	}
	return write_ns(dc, ns, next, "finalize");
}

int
namespace_sync(struct dc *dc, const char *name)
{
	struct totals t = { 0 };
	struct cond conds[5];
	const struct json_object *ns;
	struct json_object *next;
	const struct dc_rtype *rt;
	char nsname[DC_SEGMENT_MAX];
	bool changed;
	int r;

	if ((ns = terminating(dc, name)) == NULL)
		return 0;
	(void)kc_strlcpy(nsname, name, sizeof(nsname));
	if (!str_eq(kc_json_str(ns, "status", "phase"), "Terminating")) {
		struct json_object *status;

		if ((next = kc_json_copy(ns)) == NULL ||
		    (status = kc_json_ensure_obj(next, "status")) == NULL ||
		    kc_json_set_str(status, "phase", "Terminating") < 0) {
			if (next != NULL)
				json_object_put(next);
			return -ENOMEM;
		}
		if ((r = write_ns(dc, ns, next, "status")) < 0)
			return r;
		if ((ns = terminating(dc, nsname)) == NULL)
			return 0;
	}
	/* Finalized already (by someone else): remove it once nothing holds it. */
	if (arr_len(kc_json_get(ns, "spec", "finalizers")) == 0) {
		if (arr_len(kc_json_get(ns, "metadata", "finalizers")) > 0)
			return 0;
		r = storage_delete(dc->store, ns_type(dc)->coll,
		    json_object_get((struct json_object *)(uintptr_t)ns), obj_rv(ns), NULL);
		return r < 0 && r != KC_ENOTFOUND ? r : 0;
	}
	for (rt = TAILQ_FIRST(&dc->reg.types); rt != NULL; rt = TAILQ_NEXT(rt, link)) {
		if (!deletable(dc, rt))
			continue;
		if ((r = empty_type(dc, rt, nsname, &t)) < 0)
			goto out;
	}
	if ((ns = terminating(dc, nsname)) == NULL) {
		r = 0;
		goto out;
	}
	if ((r = make_conditions(&t, conds)) < 0)
		goto out;
	if ((next = kc_json_copy(ns)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = merge_conditions(next, conds, kc_clock_wall(), &changed)) < 0) {
		json_object_put(next);
		goto out;
	}
	if (changed) {
		if ((r = write_ns(dc, ns, next, "status")) < 0)
			goto out;
		if ((ns = terminating(dc, nsname)) == NULL) {
			r = 0;
			goto out;
		}
	} else
		json_object_put(next);
	if (t.remaining > 0) {
		r = 1;
		goto out;
	}
	r = finalize(dc, ns);
out:
	totals_clear(&t);
	return r;
}

int
namespace_conditions(const char *const *remaining, const size_t *counts, size_t n,
    const char *const *fins, const size_t *fin_counts, size_t nfins,
    const char *const *errs, size_t nerrs, struct json_object **ret)
{
	struct totals t = { 0 };
	struct cond conds[5];
	struct json_object *arr = NULL, *holder = NULL;
	bool changed;
	int r = -ENOMEM;

	if (n > 0 && (t.res = kc_calloc(n, sizeof(*t.res))) == NULL)
		goto out;
	for (size_t i = 0; i < n; i++)
		(void)snprintf(t.res[i].text, sizeof(t.res[i].text),
		    "%s has %zu resource instances", remaining[i], counts[i]);
	t.nres = n;
	for (size_t i = 0; i < nfins && i < NS_FINS_MAX; i++) {
		(void)kc_strlcpy(t.fins[i].name, fins[i], sizeof(t.fins[i].name));
		t.fins[i].n = fin_counts[i];
		t.nfins++;
	}
	for (size_t i = 0; i < nerrs; i++)
		if ((r = add_err(&t, "%s", errs[i])) < 0)
			goto out;
	if ((r = make_conditions(&t, conds)) < 0)
		goto out;
	r = -ENOMEM;
	if ((holder = json_object_new_object()) == NULL)
		goto out;
	if ((r = merge_conditions(holder, conds, 0, &changed)) < 0)
		goto out;
	arr = json_object_get(kc_json_get(holder, "status", "conditions"));
	*ret = arr;
	r = 0;
out:
	if (holder != NULL)
		json_object_put(holder);
	totals_clear(&t);
	return r;
}

/*
 * The loop
 */

static void
kick(struct nsc *c)
{
	if (c->in_tick) {
		c->kicked = true;
		return;
	}
	if (c->timer.armed && c->timer.due_ms <= kc_clock_now_ms())
		return;
	timer_arm(&c->timer, 0);
}

static int64_t
ns_tick(void *arg)
{
	struct nsc *c = arg;
	struct dc *dc = c->dc;
	const struct dc_rtype *nst = ns_type(dc);
	struct json_object **objs = NULL;
	size_t n = 0;
	bool again = false;

	if (nst == NULL)
		return DC_TIMER_STOP;
	if (coll_list(nst->coll, NULL, NULL, &objs, &n) < 0)
		return NS_RECHECK_MS;
	c->in_tick = true;
	c->kicked = false;
	for (size_t i = 0; i < n; i++) {
		const char *name = kc_json_str(objs[i], "metadata", "name");
		int r;

		if (!deleting(objs[i]) || name == NULL)
			continue;
		if ((r = namespace_sync(dc, name)) != 0)
			again = true;
		if (r < 0) {
			struct kc_log_ctx lc = { .action = "namespace", .name = name };

			kc_log_warn(&lc, "terminating the namespace: %s", kc_strerror(r));
		}
	}
	objs_free(objs, n);
	c->in_tick = false;
	if (c->kicked)
		return 0;
	return again ? NS_RECHECK_MS : DC_TIMER_STOP;
}

static void
on_event(void *arg, const struct dc_event *ev)
{
	struct nsc *c = arg;
	const struct dc_rtype *nst = ns_type(c->dc);

	if (nst == NULL)
		return;
	if (ev->coll == nst->coll) {
		if (ev->type != DC_EV_DELETED && deleting(ev->obj))
			kick(c);
		return;
	}
	if (ev->type == DC_EV_ADDED || !coll_namespaced(ev->coll))
		return;
	if (terminating(c->dc, kc_json_str(ev->obj, "metadata", "namespace")) != NULL)
		kick(c);
}

/* hooks.ns_terminate: the core's timer hands the namespace over. */
static int
ns_hook(struct dc *dc, const char *ns)
{
	(void)ns;
	if (plugin_state(dc, &namespace_plugin) != NULL)
		kick(plugin_state(dc, &namespace_plugin));
	return 0;
}

int
namespace_init(struct dc *dc)
{
	struct nsc *c;
	const struct dc_rtype *nst = ns_type(dc);
	struct json_object **objs = NULL;
	size_t n = 0;
	int r;

	if ((c = kc_calloc(1, sizeof(*c))) == NULL)
		return -ENOMEM;
	c->dc = dc;
	timer_init(&c->timer, dc, ns_tick, c);
	if ((r = storage_subscribe(dc->store, on_event, c)) < 0) {
		kc_free(c);
		return r;
	}
	plugin_set_state(dc, &namespace_plugin, c);
	dc->hooks.ns_terminate = ns_hook;
	if (nst != NULL && coll_list(nst->coll, NULL, NULL, &objs, &n) == 0) {
		for (size_t i = 0; i < n; i++)
			if (deleting(objs[i]))
				kick(c);
		objs_free(objs, n);
	}
	return 0;
}

void
namespace_fini(struct dc *dc)
{
	struct nsc *c = plugin_state(dc, &namespace_plugin);

	if (c == NULL)
		return;
	timer_cancel(&c->timer);
	storage_unsubscribe(dc->store, on_event, c);
	if (dc->hooks.ns_terminate == ns_hook)
		dc->hooks.ns_terminate = NULL;
	kc_free(c);
	plugin_set_state(dc, &namespace_plugin, NULL);
}

static int
namespace_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	(void)cfg;
	(void)st;
	return namespace_init(dc);
}

const struct dc_plugin namespace_plugin = {
	.name = "namespace",
	.init = namespace_start,
	.fini = namespace_fini,
};

/*
 * quota.c: ResourceQuota admission and status for the devcluster.
 *
 * kube-apiserver's ResourceQuota admission plugin and the quota
 * controller of kube-controller-manager, folded into one file. On the
 * create of a namespaced object, every ResourceQuota of its namespace
 * whose spec.hard names a resource the object uses is evaluated as
 * upstream does: pods by the pod evaluator (pods, count/pods, cpu,
 * memory, requests.* and limits.* of cpu, memory and ephemeral-storage,
 * hugepages-*, and requests.<extended resource>), every other kind by
 * object count (count/<resource>[.<group>], plus the legacy names
 * services, configmaps, secrets, persistentvolumeclaims,
 * replicationcontrollers and resourcequotas). A pod that omits a request
 * or limit a quota constrains (cpu, memory) gets "failed quota: q:
 * must specify ..."; a create past a hard limit gets "exceeded quota:
 * q, requested: ..., used: ..., limited: ...", both 403 Forbidden with
 * upstream's text.
 *
 * Usage is never charged ahead: it is computed from what storage holds,
 * so a dry run or a failed create costs nothing. status.hard and
 * status.used are kept current by a storage subscriber, which rewrites
 * the quotas of a namespace whenever an object there is created,
 * changed or deleted, and whenever a quota is written; an unchanged
 * status stores nothing (DC_UNCHANGED), which ends the loop a status
 * write would otherwise start.
 *
 * Quantities are parsed by lib/quantity.c through sched_quantity_parse()
 * (milli-units, saturating, as the scheduler reads them) and printed in
 * upstream's canonical form: "500m", "2", "1k", "1536Mi".
 *
 * Left out: scopes and scopeSelector (a quota with either still counts
 * every pod), requests.storage of claims, services.loadbalancers and
 * services.nodeports, and updates (pod resize).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/quantity.h>
#include <kc/str.h>

#include "devcluster.h"
#include "quota.h"
#include "sched.h"

struct quota_state {
	struct dc	*dc;
	bool		 busy;		/* inside a recompute */
};

/* Kinds whose object count has a legacy quota name. */
static const char *const legacy_counts[] = {
	"services", "configmaps", "secrets", "persistentvolumeclaims",
	"replicationcontrollers", "resourcequotas",
};

/* Resources a cpu or memory quota makes every container set. */
static const char *const validation_set[] = {
	"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu",
	"limits.memory",
};

/*
 * Resource lists
 */

static void
qlist_put(struct quota_list *l, const char *name, int64_t milli, bool bin, bool add)
{
	struct quota_ent *e = quota_list_find(l, name);

	if (e == NULL) {
		if (l->n == QUOTA_KEYS_MAX || strlen(name) >= sizeof(e->name))
			return;
		e = &l->e[l->n++];
		(void)kc_strlcpy(e->name, name, sizeof(e->name));
		e->milli = milli;
		e->bin = bin;
		return;
	}
	if (!add) {
		if (milli > e->milli)
			e->milli = milli;
		return;
	}
	if (milli > 0 && e->milli > INT64_MAX - milli)
		e->milli = INT64_MAX;
	else
		e->milli += milli;
	e->bin = e->bin || bin;
}

struct quota_ent *
quota_list_find(struct quota_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->e[i].name, name) == 0)
			return &l->e[i];
	return NULL;
}

static bool
has_binary_suffix(const char *text)
{
	size_t n = strlen(text);

	return n >= 2 && text[n - 1] == 'i' && strchr("KMGTPE", text[n - 2]) != NULL;
}

/* Adds (or, with !add, maxes) every quantity of a ResourceList object. */
static void
qlist_merge_rl(struct quota_list *l, const struct json_object *rl, bool add)
{
	if (rl == NULL || !json_object_is_type(rl, json_type_object))
		return;
	json_object_object_foreach((struct json_object *)(uintptr_t)rl, k, v) {
		const char *text = json_object_get_string(v);
		struct kc_status st = { 0 };
		int64_t milli;

		if (text == NULL || !json_object_is_type(v, json_type_string) ||
		    sched_quantity_parse(text, &milli, NULL, &st) < 0)
			continue;
		qlist_put(l, k, milli, has_binary_suffix(text), add);
	}
}

static void
qlist_merge(struct quota_list *dst, const struct quota_list *src, bool add)
{
	for (size_t i = 0; i < src->n; i++)
		qlist_put(dst, src->e[i].name, src->e[i].milli, src->e[i].bin, add);
}

void
quota_format(int64_t milli, bool bin, char *buf, size_t size)
{
	struct kc_quantity q = {
		.nanos = (__int128)milli * 1000000,
		.fmt = bin ? KC_QTY_BINARY_SI : KC_QTY_DECIMAL_SI,
	};

	if (kc_quantity_format(&q, buf, size) < 0 && size > 0)
		buf[0] = '\0';
}

/*
 * Pods
 */

static bool
pod_terminal(const struct json_object *pod)
{
	const char *phase = kc_json_str(pod, "status", "phase");

	return phase != NULL && (strcmp(phase, "Succeeded") == 0 ||
	    strcmp(phase, "Failed") == 0);
}

/* resourcehelper.PodRequests/PodLimits: containers, init containers, overhead. */
static void
pod_resources(const struct json_object *pod, const char *which, struct quota_list *ret)
{
	struct json_object *cs = kc_json_get(pod, "spec", "containers");
	struct json_object *ics = kc_json_get(pod, "spec", "initContainers");
	struct quota_list side = { 0 };
	size_t n;

	memset(ret, 0, sizeof(*ret));
	n = json_object_is_type(cs, json_type_array) ? json_object_array_length(cs) : 0;
	for (size_t i = 0; i < n; i++)
		qlist_merge_rl(ret, kc_json_get(json_object_array_get_idx(cs, i),
		    "resources", which), true);
	n = json_object_is_type(ics, json_type_array) ? json_object_array_length(ics) : 0;
	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(ics, i);
		const char *rp = kc_json_str(c, "restartPolicy");
		struct quota_list one = { 0 };

		qlist_merge_rl(&one, kc_json_get(c, "resources", which), true);
		if (rp != NULL && strcmp(rp, "Always") == 0) {
			qlist_merge(ret, &one, true);
			qlist_merge(&side, &one, true);
			continue;
		}
		qlist_merge(&one, &side, true);
		qlist_merge(ret, &one, false);
	}
	qlist_merge_rl(ret, kc_json_get(pod, "spec", "overhead"), true);
}

static bool
extended_name(const char *name)
{
	return strchr(name, '/') != NULL && strstr(name, "kubernetes.io/") == NULL &&
	    strncmp(name, "requests.", 9) != 0;
}

/* podComputeUsageHelper(): quota names from raw requests and limits. */
static void
usage_helper(const struct quota_list *req, const struct quota_list *lim,
    struct quota_list *ret)
{
	static const char *const base[] = { "cpu", "memory", "ephemeral-storage" };
	char name[QUOTA_NAME_MAX + 16];

	qlist_put(ret, "pods", 1000, false, true);
	for (size_t i = 0; i < KC_ARRAY_SIZE(base); i++) {
		struct quota_ent *e = quota_list_find((struct quota_list *)(uintptr_t)req,
		    base[i]);

		if (e != NULL) {
			qlist_put(ret, base[i], e->milli, e->bin, true);
			(void)snprintf(name, sizeof(name), "requests.%s", base[i]);
			qlist_put(ret, name, e->milli, e->bin, true);
		}
		e = quota_list_find((struct quota_list *)(uintptr_t)lim, base[i]);
		if (e != NULL) {
			(void)snprintf(name, sizeof(name), "limits.%s", base[i]);
			qlist_put(ret, name, e->milli, e->bin, true);
		}
	}
	for (size_t i = 0; i < req->n; i++) {
		const struct quota_ent *e = &req->e[i];

		if (strncmp(e->name, "hugepages-", 10) == 0)
			qlist_put(ret, e->name, e->milli, e->bin, true);
		if (strncmp(e->name, "hugepages-", 10) == 0 || extended_name(e->name)) {
			(void)snprintf(name, sizeof(name), "requests.%s", e->name);
			qlist_put(ret, name, e->milli, e->bin, true);
		}
	}
}

void
quota_pod_usage(const struct json_object *pod, struct quota_list *ret)
{
	struct quota_list req, lim;

	memset(ret, 0, sizeof(*ret));
	qlist_put(ret, "count/pods", 1000, false, true);
	if (pod_terminal(pod))
		return;
	pod_resources(pod, "requests", &req);
	pod_resources(pod, "limits", &lim);
	usage_helper(&req, &lim, ret);
}

/*
 * Object counts
 */

static void
count_name(const char *group, const char *resource, char *buf, size_t size)
{
	if (group[0] == '\0')
		(void)snprintf(buf, size, "count/%s", resource);
	else
		(void)snprintf(buf, size, "count/%s.%s", resource, group);
}

static bool
legacy_count(const char *group, const char *resource)
{
	if (group[0] != '\0')
		return false;
	for (size_t i = 0; i < KC_ARRAY_SIZE(legacy_counts); i++)
		if (strcmp(legacy_counts[i], resource) == 0)
			return true;
	return false;
}

/* The usage one new object of (group, resource) adds. */
static void
object_usage(const char *group, const char *resource, const struct json_object *obj,
    struct quota_list *ret)
{
	char name[QUOTA_NAME_MAX];

	memset(ret, 0, sizeof(*ret));
	if (group[0] == '\0' && strcmp(resource, "pods") == 0) {
		quota_pod_usage(obj, ret);
		return;
	}
	count_name(group, resource, name, sizeof(name));
	qlist_put(ret, name, 1000, false, true);
	if (legacy_count(group, resource))
		qlist_put(ret, resource, 1000, false, true);
}

/* The collection a count/<resource>[.<group>] or legacy name counts, or NULL. */
static struct dc_coll *
count_coll(struct dc *dc, const char *key)
{
	char res[QUOTA_NAME_MAX];
	const char *group = "", *dot;

	if (strncmp(key, "count/", 6) != 0)
		return legacy_count("", key) ? storage_find_coll(dc->store, "", key) : NULL;
	(void)kc_strlcpy(res, key + 6, sizeof(res));
	if ((dot = strchr(res, '.')) != NULL) {
		group = key + 6 + (size_t)(dot - res) + 1;
		res[dot - res] = '\0';
	}
	return storage_find_coll(dc->store, group, res);
}

int
quota_ns_usage(struct dc *dc, const char *ns, const struct quota_list *hard,
    struct quota_list *ret)
{
	struct dc_coll *pods = storage_find_coll(dc->store, "", "pods");
	struct json_object **items = NULL;
	struct quota_list sum = { 0 };
	size_t n = 0;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (pods != NULL && (r = coll_list(pods, ns, NULL, &items, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct quota_list one;

		quota_pod_usage(items[i], &one);
		qlist_merge(&sum, &one, true);
	}
	objs_free(items, n);
	for (size_t i = 0; i < hard->n; i++) {
		const char *key = hard->e[i].name;
		struct quota_ent *e = quota_list_find(&sum, key);
		struct dc_coll *c;

		if (strcmp(key, "count/pods") != 0 && strcmp(key, "pods") != 0 &&
		    (c = count_coll(dc, key)) != NULL)
			qlist_put(ret, key, (int64_t)coll_count(c, ns) * 1000, false, true);
		else if (e != NULL)
			qlist_put(ret, key, e->milli, e->bin, true);
		else
			qlist_put(ret, key, 0, hard->e[i].bin, true);
	}
	return 0;
}

/*
 * Admission
 */

static void
print_list(const struct quota_list *l, const char *const *keys, size_t nkeys,
    char *buf, size_t size)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < nkeys; i++) {
		struct quota_ent *e = quota_list_find((struct quota_list *)(uintptr_t)l,
		    keys[i]);
		char q[48];
		int n;

		if (e == NULL)
			continue;
		quota_format(e->milli, e->bin, q, sizeof(q));
		n = snprintf(buf + off, size - off, "%s%s=%s", off > 0 ? "," : "", keys[i], q);
		if (n < 0 || (size_t)n >= size - off)
			return;
		off += (size_t)n;
	}
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Constraints(): "must specify r for: c1,c2; ..." or "" when satisfied. */
static void
pod_constraints(const struct json_object *pod, const struct quota_list *hard,
    char *buf, size_t size)
{
	const char *need[KC_ARRAY_SIZE(validation_set)];
	size_t nneed = 0, off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < KC_ARRAY_SIZE(validation_set); i++)
		if (quota_list_find((struct quota_list *)(uintptr_t)hard,
		    validation_set[i]) != NULL)
			need[nneed++] = validation_set[i];
	if (nneed == 0)
		return;
	qsort(need, nneed, sizeof(need[0]), cmp_str);
	for (size_t k = 0; k < nneed; k++) {
		const char *names[128];
		size_t nnames = 0;
		static const char *const lists[] = { "containers", "initContainers" };

		for (size_t l = 0; l < KC_ARRAY_SIZE(lists); l++) {
			struct json_object *cs = kc_json_get(pod, "spec", lists[l]);
			size_t n = json_object_is_type(cs, json_type_array) ?
			    json_object_array_length(cs) : 0;

			for (size_t i = 0; i < n && nnames < KC_ARRAY_SIZE(names); i++) {
				struct json_object *c = json_object_array_get_idx(cs, i);
				struct quota_list req = { 0 }, lim = { 0 }, u = { 0 };
				const char *cname = kc_json_str(c, "name");

				qlist_merge_rl(&req, kc_json_get(c, "resources", "requests"), true);
				qlist_merge_rl(&lim, kc_json_get(c, "resources", "limits"), true);
				usage_helper(&req, &lim, &u);
				if (quota_list_find(&u, need[k]) == NULL)
					names[nnames++] = cname != NULL ? cname : "";
			}
		}
		if (nnames == 0)
			continue;
		qsort(names, nnames, sizeof(names[0]), cmp_str);
		for (size_t i = 0; i < nnames; i++) {
			int n;

			if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
				continue;
			if (i == 0)
				n = snprintf(buf + off, size - off, "%s%s%s for: %s",
				    off == 0 ? "must specify " : "", off == 0 ? "" : "; ",
				    need[k], names[i]);
			else
				n = snprintf(buf + off, size - off, ",%s", names[i]);
			if (n < 0 || (size_t)n >= size - off)
				return;
			off += (size_t)n;
		}
	}
}

static int
cmp_ent(const void *a, const void *b)
{
	return strcmp(((const struct quota_ent *)a)->name, ((const struct quota_ent *)b)->name);
}

/* A quota's spec.hard as a list by name (unparsable values left out). */
static void
quota_hard(const struct json_object *q, struct quota_list *ret)
{
	memset(ret, 0, sizeof(*ret));
	qlist_merge_rl(ret, kc_json_get(q, "spec", "hard"), true);
	qsort(ret->e, ret->n, sizeof(ret->e[0]), cmp_ent);
}

static int
check_quota(struct dc *dc, const struct dc_rtype *rt, const char *ns, const char *name,
    const struct json_object *q, const struct quota_list *delta, struct kc_status *st)
{
	const char *qname = kc_json_str(q, "metadata", "name");
	struct quota_list hard, used, req = { 0 };
	const char *keys[QUOTA_KEYS_MAX], *over[QUOTA_KEYS_MAX];
	size_t nkeys = 0, nover = 0;
	char rbuf[400], ubuf[400], hbuf[400];
	int r;

	quota_hard(q, &hard);
	for (size_t i = 0; i < delta->n; i++)
		if (quota_list_find(&hard, delta->e[i].name) != NULL) {
			qlist_put(&req, delta->e[i].name, delta->e[i].milli, delta->e[i].bin,
			    true);
			keys[nkeys++] = delta->e[i].name;
		}
	if (nkeys == 0)
		return 0;
	if ((r = quota_ns_usage(dc, ns, &hard, &used)) < 0)
		return r;
	qsort(keys, nkeys, sizeof(keys[0]), cmp_str);
	for (size_t i = 0; i < nkeys; i++) {
		const struct quota_ent *h = quota_list_find(&hard, keys[i]);
		const struct quota_ent *u = quota_list_find(&used, keys[i]);
		const struct quota_ent *d = quota_list_find(&req, keys[i]);
		int64_t total = u != NULL ? u->milli : 0;

		if (d->milli > 0 && total > INT64_MAX - d->milli)
			total = INT64_MAX;
		else
			total += d->milli;
		if (total > h->milli)
			over[nover++] = keys[i];
	}
	if (nover == 0)
		return 0;
	print_list(&req, over, nover, rbuf, sizeof(rbuf));
	print_list(&used, over, nover, ubuf, sizeof(ubuf));
	print_list(&hard, over, nover, hbuf, sizeof(hbuf));
	return kc_status_set(st, KC_EFORBIDDEN, "%s \"%s\" is forbidden: exceeded quota: "
	    "%s, requested: %s, used: %s, limited: %s", rt->qualified, name,
	    qname != NULL ? qname : "", rbuf, ubuf, hbuf);
}

int
quota_admit_object(struct dc *dc, const struct dc_rtype *rt, const struct json_object *obj,
    struct kc_status *st)
{
	struct dc_coll *qc = storage_find_coll(dc->store, "", "resourcequotas");
	const char *ns = kc_json_str(obj, "metadata", "namespace");
	const char *name = kc_json_str(obj, "metadata", "name");
	struct json_object **items = NULL;
	struct quota_list delta, nz = { 0 };
	bool is_pod;
	size_t n = 0;
	int r = 0;

	if (!rt->namespaced || ns == NULL || qc == NULL || coll_count(qc, ns) == 0)
		return 0;
	is_pod = rt->group[0] == '\0' && strcmp(rt->plural, "pods") == 0;
	object_usage(rt->group, rt->plural, obj, &delta);
	for (size_t i = 0; i < delta.n; i++)
		if (delta.e[i].milli != 0)
			qlist_put(&nz, delta.e[i].name, delta.e[i].milli, delta.e[i].bin, true);
	if ((r = coll_list(qc, ns, NULL, &items, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++) {
		struct quota_list hard;
		bool match = false;

		/* Constraints apply even when the pod uses none of it. */
		quota_hard(items[i], &hard);
		if (is_pod) {
			for (size_t k = 0; k < hard.n && !match; k++)
				match = quota_list_find(&delta, hard.e[k].name) != NULL ||
				    strcmp(hard.e[k].name, "cpu") == 0 ||
				    strcmp(hard.e[k].name, "memory") == 0 ||
				    strncmp(hard.e[k].name, "requests.", 9) == 0 ||
				    strncmp(hard.e[k].name, "limits.", 7) == 0;
			if (match) {
				char msg[400];
				const char *qname = kc_json_str(items[i], "metadata", "name");

				pod_constraints(obj, &hard, msg, sizeof(msg));
				if (msg[0] != '\0') {
					r = kc_status_set(st, KC_EFORBIDDEN, "%s \"%s\" is "
					    "forbidden: failed quota: %s: %s", rt->qualified,
					    name != NULL ? name : "", qname != NULL ? qname : "",
					    msg);
					break;
				}
			}
		}
	}
	for (size_t i = 0; i < n && r == 0 && nz.n > 0; i++)
		r = check_quota(dc, rt, ns, name != NULL ? name : "", items[i], &nz,
		    st);
	objs_free(items, n);
	return r;
}

static int
quota_admit(struct dc_write_ctx *wc, struct json_object *obj, struct kc_status *st)
{
	if (wc->op != DC_OP_CREATE || wc->subresource != NULL)
		return 0;
	return quota_admit_object(wc->dc, wc->rt, obj, st);
}

/*
 * status.hard and status.used
 */

static int
hard_json(const struct quota_list *l, struct json_object **ret)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < l->n; i++) {
		char q[48];

		quota_format(l->e[i].milli, l->e[i].bin, q, sizeof(q));
		if (kc_json_set_str(o, l->e[i].name, q) < 0) {
			json_object_put(o);
			return -ENOMEM;
		}
	}
	*ret = o;
	return 0;
}

int
quota_sync_ns(struct dc *dc, const char *ns)
{
	struct dc_coll *qc = storage_find_coll(dc->store, "", "resourcequotas");
	struct json_object **items = NULL;
	size_t n = 0;
	int r;

	if (qc == NULL || coll_count(qc, ns) == 0)
		return 0;
	if ((r = coll_list(qc, ns, NULL, &items, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && r >= 0; i++) {
		struct quota_list hard, used;
		struct json_object *h = NULL, *u = NULL, *st, *cp;

		if (kc_json_get(items[i], "metadata", "deletionTimestamp") != NULL)
			continue;
		quota_hard(items[i], &hard);
		if ((r = quota_ns_usage(dc, ns, &hard, &used)) < 0)
			break;
		if ((r = hard_json(&hard, &h)) < 0)
			break;
		if ((r = hard_json(&used, &u)) < 0) {
			json_object_put(h);
			break;
		}
		st = json_object_new_object();
		if (st == NULL || kc_json_put(st, "hard", h) < 0 ||
		    kc_json_put(st, "used", u) < 0) {
			if (st == NULL) {
				json_object_put(h);
				json_object_put(u);
			}
			json_object_put(st);
			r = -ENOMEM;
			break;
		}
		if (kc_json_equal(kc_json_get(items[i], "status"), st)) {
			json_object_put(st);
			continue;
		}
		if ((cp = kc_json_copy(items[i])) == NULL || kc_json_put(cp, "status", st) < 0) {
			if (cp == NULL)
				json_object_put(st);
			json_object_put(cp);
			r = -ENOMEM;
			break;
		}
		r = storage_update(dc->store, qc, cp, obj_rv(items[i]), NULL);
		if (r == KC_ECONFLICT || r == KC_ENOTFOUND)
			r = 0;
	}
	objs_free(items, n);
	return r < 0 ? r : 0;
}

static void
quota_event(void *arg, const struct dc_event *ev)
{
	struct quota_state *qs = arg;
	const char *ns;

	if (qs->busy || !coll_namespaced(ev->coll))
		return;
	ns = kc_json_str(ev->obj, "metadata", "namespace");
	if (ns == NULL)
		return;
	qs->busy = true;
	(void)quota_sync_ns(qs->dc, ns);
	qs->busy = false;
}

static int
sync_all(struct dc *dc)
{
	struct dc_coll *qc = storage_find_coll(dc->store, "", "resourcequotas");
	struct json_object **items = NULL;
	size_t n = 0;
	int r;

	if (qc == NULL)
		return 0;
	if ((r = coll_list(qc, NULL, NULL, &items, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++) {
		const char *ns = kc_json_str(items[i], "metadata", "namespace");

		if (ns != NULL && (i == 0 || kc_json_str(items[i - 1], "metadata",
		    "namespace") == NULL || strcmp(ns, kc_json_str(items[i - 1],
		    "metadata", "namespace")) != 0))
			r = quota_sync_ns(dc, ns);
	}
	objs_free(items, n);
	return r;
}

int
quota_init(struct dc *dc)
{
	struct quota_state *qs;
	int r;

	if (plugin_state(dc, &quota_plugin) != NULL)
		return 0;
	if ((qs = kc_calloc(1, sizeof(*qs))) == NULL)
		return -ENOMEM;
	qs->dc = dc;
	if ((r = storage_subscribe(dc->store, quota_event, qs)) < 0) {
		kc_free(qs);
		return r;
	}
	plugin_set_state(dc, &quota_plugin, qs);
	qs->busy = true;
	r = sync_all(dc);
	qs->busy = false;
	if (r < 0) {
		quota_fini(dc);
		return r;
	}
	return 0;
}

void
quota_fini(struct dc *dc)
{
	struct quota_state *qs = plugin_state(dc, &quota_plugin);

	if (qs == NULL)
		return;
	storage_unsubscribe(dc->store, quota_event, qs);
	plugin_set_state(dc, &quota_plugin, NULL);
	kc_free(qs);
}

static int
quota_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	(void)cfg;
	(void)st;
	return quota_init(dc);
}

/* Admission: ResourceQuota, last in the chain (plugins.c). */
const struct dc_plugin quota_plugin = {
	.name = "quota",
	.init = quota_start,
	.fini = quota_fini,
	.admit = quota_admit,
};

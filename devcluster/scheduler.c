/*
 * scheduler.c: the devcluster's simulated kube-scheduler, the event-loop
 * side of devcluster/sched.c.
 *
 * A storage subscription (plus a scan at start, for restored objects)
 * keeps a struct sched snapshot of the nodes, pods, namespaces and
 * PodGroups (both API groups, whenever their CRD is installed). Every
 * change marks the snapshot dirty and arms a short loop timer, so a burst
 * of changes costs one plan. The timer computes sched_plan() and applies
 * it through storage as kube-scheduler would through the API: a binding
 * (spec.nodeName and condition PodScheduled True in one write, as the
 * pods/binding subresource does), PodScheduled False with a
 * FailedScheduling Warning Event for pods that stay pending (the Event
 * only when the message changed, so an idle cluster stays idle),
 * DisruptionTarget and a graceful delete for preemption victims,
 * status.nominatedNodeName, and the PodGroup status. Our own writes come
 * back through the subscription, which is how bound pods reach the
 * snapshot before the next plan. Nothing blocks: everything runs on the
 * timer.
 *
 * --nodes FILE: scheduler_load_nodes() creates the Node objects of a
 * YAML file (documents or a v1 List) that do not exist yet, keeping the
 * status given (the create path would reset it, as no kubelet posts it).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "devcluster.h"
#include "sched.h"

#define SCHEDULER_DELAY_MS	20	/* coalescing delay after a change */
#define SCHEDULER_RETRY_MS	1000	/* replan while pods stay pending */
#define NODES_FILE_MAX		(16 * 1024 * 1024)

struct scheduler {
	struct dc	*dc;
	struct sched	*s;
	struct dc_timer	 timer;
	bool		 dirty;
	bool		 ticking;
	uint64_t	 event_seq;
};

static const struct dc_rtype *
core_type(struct dc *dc, const char *plural)
{
	return registry_find(dc, "", "v1", plural);
}

static void
kick(struct scheduler *sc)
{
	sc->dirty = true;
	/* Coalesce: keep an earlier due time, pull a later retry in. */
	if (!sc->ticking && (!sc->timer.armed ||
	    sc->timer.due_ms > kc_clock_now_ms() + SCHEDULER_DELAY_MS))
		timer_arm(&sc->timer, SCHEDULER_DELAY_MS);
}

static bool
is_coll(const struct dc_coll *coll, const char *group, const char *resource)
{
	return strcmp(coll_group(coll), group) == 0 &&
	    strcmp(coll_resource(coll), resource) == 0;
}

/* Feeds one object (or its deletion) into the snapshot. */
static void
feed(struct scheduler *sc, const struct dc_coll *coll, const struct json_object *obj,
    bool gone)
{
	struct kc_status st = { 0 };
	const char *name = kc_json_str(obj, "metadata", "name");
	const char *ns = kc_json_str(obj, "metadata", "namespace");
	int r = 0;

	if (name == NULL)
		return;
	if (is_coll(coll, "", "nodes")) {
		if (gone)
			(void)sched_node_remove(sc->s, name);
		else
			r = sched_node_put(sc->s, obj, &st);
	} else if (is_coll(coll, "", "pods")) {
		if (gone)
			(void)sched_pod_remove(sc->s, ns != NULL ? ns : "", name);
		else
			r = sched_pod_put(sc->s, obj, &st);
	} else if (is_coll(coll, "", "namespaces")) {
		if (gone)
			(void)sched_namespace_remove(sc->s, name);
		else
			r = sched_namespace_put(sc->s, obj, &st);
	} else if (is_coll(coll, SCHED_PG_GROUP, "podgroups") ||
	    is_coll(coll, SCHED_PG_GROUP_OLD, "podgroups")) {
		if (gone)
			(void)sched_podgroup_remove(sc->s, coll_group(coll),
			    ns != NULL ? ns : "", name);
		else
			r = sched_podgroup_put(sc->s, obj, &st);
	} else
		return;
	if (r < 0)
		kc_log_debug(&(struct kc_log_ctx){ .action = "schedule" },
		    "ignoring %s %s: %s", coll_resource(coll), name,
		    st.message[0] != '\0' ? st.message : kc_strerror(r));
	kick(sc);
}

static void
on_event(void *arg, const struct dc_event *ev)
{
	feed(arg, ev->coll, ev->obj, ev->type == DC_EV_DELETED);
}

static int
scan_coll(struct scheduler *sc, const char *group, const char *resource)
{
	struct dc_coll *coll = storage_find_coll(sc->dc->store, group, resource);
	struct json_object **objs = NULL;
	size_t n = 0;
	int r;

	if (coll == NULL)
		return 0;
	if ((r = coll_list(coll, NULL, NULL, &objs, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++)
		feed(sc, coll, objs[i], false);
	objs_free(objs, n);
	return 0;
}

static void
timestamp(char buf[32])
{
	time_t now = kc_clock_wall();
	struct tm tm;

	if (gmtime_r(&now, &tm) == NULL ||
	    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		kc_strlcpy(buf, "1970-01-01T00:00:00Z", 32);
}

/* Writes 'next' (consumed) over the stored 'old'. */
static int
write_obj(struct scheduler *sc, const struct dc_rtype *rt, const struct json_object *old,
    struct json_object *next, const char *sub)
{
	int r;

	if (sc->dc->hooks.managed_fields != NULL) {
		struct dc_write_ctx wc = { .dc = sc->dc, .rt = rt, .op = DC_OP_UPDATE,
		    .subresource = sub, .field_manager = SCHED_DEFAULT_NAME, .old = old };

		if ((r = sc->dc->hooks.managed_fields(&wc, next)) < 0) {
			json_object_put(next);
			return r;
		}
	}
	r = storage_update(sc->dc->store, rt->coll, next, obj_rv(old), NULL);
	return r == DC_UNCHANGED ? 0 : r;
}

/*
 * Sets condition 'type' of 'pod' (a private tree). The transition time
 * is kept while the status stays. Returns whether reason or message
 * changed too, through '*ret_changed' (may be NULL).
 */
static int
set_condition(struct json_object *pod, const char *type, const char *status,
    const char *reason, const char *message, bool *ret_changed)
{
	struct json_object *stat, *conds, *c = NULL;
	char now[32];
	bool changed = true;

	timestamp(now);
	if ((stat = kc_json_ensure_obj(pod, "status")) == NULL)
		return -ENOMEM;
	if (!json_object_object_get_ex(stat, "conditions", &conds) ||
	    !json_object_is_type(conds, json_type_array)) {
		if ((conds = json_object_new_array()) == NULL)
			return -ENOMEM;
		if (json_object_object_add(stat, "conditions", conds) < 0) {
			json_object_put(conds);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < json_object_array_length(conds); i++) {
		struct json_object *e = json_object_array_get_idx(conds, i);
		const char *t = kc_json_str(e, "type");

		if (t != NULL && strcmp(t, type) == 0) {
			c = e;
			break;
		}
	}
	if (c == NULL) {
		if ((c = json_object_new_object()) == NULL)
			return -ENOMEM;
		if (json_object_array_add(conds, c) < 0) {
			json_object_put(c);
			return -ENOMEM;
		}
	} else {
		const char *os = kc_json_str(c, "status"), *orr = kc_json_str(c, "reason");
		const char *om = kc_json_str(c, "message");

		changed = os == NULL || strcmp(os, status) != 0 ||
		    (reason != NULL) != (orr != NULL) ||
		    (reason != NULL && strcmp(reason, orr) != 0) ||
		    (message != NULL) != (om != NULL) ||
		    (message != NULL && strcmp(message, om) != 0);
		if (os != NULL && strcmp(os, status) == 0 &&
		    kc_json_str(c, "lastTransitionTime") != NULL)
			kc_strlcpy(now, kc_json_str(c, "lastTransitionTime"), sizeof(now));
	}
	if (kc_json_set_str(c, "type", type) < 0 || kc_json_set_str(c, "status", status) < 0 ||
	    kc_json_set_str(c, "reason", reason) < 0 ||
	    kc_json_set_str(c, "message", message) < 0 ||
	    kc_json_set_str(c, "lastTransitionTime", now) < 0)
		return -ENOMEM;
	if (json_object_object_get_ex(c, "lastProbeTime", NULL) == false &&
	    json_object_object_add(c, "lastProbeTime", NULL) < 0)
		return -ENOMEM;
	if (ret_changed != NULL)
		*ret_changed = changed;
	return 0;
}

/* A core/v1 Event about a pod. */
static int
pod_event(struct scheduler *sc, const struct json_object *pod, const char *type,
    const char *reason, const char *message)
{
	const struct dc_rtype *et = core_type(sc->dc, "events");
	const char *ns = kc_json_str(pod, "metadata", "namespace");
	const char *name = kc_json_str(pod, "metadata", "name");
	const char *uid = kc_json_str(pod, "metadata", "uid");
	struct json_object *ev, *meta, *inv, *src;
	char ename[300], now[32], msg[SCHED_EVENT_MESSAGE_MAX + 1];
	int r;

	if (et == NULL || ns == NULL || name == NULL)
		return 0;
	timestamp(now);
	if (strlen(message) > SCHED_EVENT_MESSAGE_MAX)
		(void)snprintf(msg, sizeof(msg), "%.1020s ...", message);
	else
		kc_strlcpy(msg, message, sizeof(msg));
	(void)snprintf(ename, sizeof(ename), "%.200s.%016" PRIx64, name,
	    (uint64_t)kc_clock_wall() * UINT64_C(1000000000) + ++sc->event_seq);
	if ((ev = json_object_new_object()) == NULL)
		return -ENOMEM;
	r = -ENOMEM;
	if (kc_json_set_str(ev, "apiVersion", "v1") < 0 ||
	    kc_json_set_str(ev, "kind", "Event") < 0 ||
	    (meta = kc_json_ensure_obj(ev, "metadata")) == NULL ||
	    kc_json_set_str(meta, "name", ename) < 0 ||
	    kc_json_set_str(meta, "namespace", ns) < 0 ||
	    (inv = kc_json_ensure_obj(ev, "involvedObject")) == NULL ||
	    kc_json_set_str(inv, "apiVersion", "v1") < 0 ||
	    kc_json_set_str(inv, "kind", "Pod") < 0 ||
	    kc_json_set_str(inv, "namespace", ns) < 0 ||
	    kc_json_set_str(inv, "name", name) < 0 ||
	    kc_json_set_str(inv, "uid", uid) < 0 ||
	    kc_json_set_str(ev, "reason", reason) < 0 ||
	    kc_json_set_str(ev, "message", msg) < 0 ||
	    kc_json_set_str(ev, "type", type) < 0 ||
	    (src = kc_json_ensure_obj(ev, "source")) == NULL ||
	    kc_json_set_str(src, "component", SCHED_DEFAULT_NAME) < 0 ||
	    kc_json_set_str(ev, "reportingComponent", SCHED_DEFAULT_NAME) < 0 ||
	    kc_json_set_str(ev, "reportingInstance", SCHED_DEFAULT_NAME) < 0 ||
	    kc_json_set_str(ev, "firstTimestamp", now) < 0 ||
	    kc_json_set_str(ev, "lastTimestamp", now) < 0 ||
	    kc_json_set_int(ev, "count", 1) < 0) {
		json_object_put(ev);
		return r;
	}
	r = api_create_object(sc->dc, et, ev, NULL);
	return r == KC_EEXISTS || r == KC_ENOTFOUND || r == KC_EFORBIDDEN ? 0 : r;
}

static const struct json_object *
stored_pod(struct scheduler *sc, const char *ns, const char *name)
{
	const struct dc_rtype *pt = core_type(sc->dc, "pods");

	return pt != NULL ? coll_get(pt->coll, ns, name) : NULL;
}

/*
 * The pods/binding subresource's write: spec.nodeName and PodScheduled
 * True, refused when the pod is gone, bound already or another pod now.
 */
static int
bind_pod(struct scheduler *sc, const struct sched_bind *b)
{
	const struct dc_rtype *pt = core_type(sc->dc, "pods");
	const struct json_object *old = stored_pod(sc, b->ns, b->name);
	const char *uid = kc_json_str(old, "metadata", "uid");
	struct json_object *next, *spec;
	int r;

	if (old == NULL || kc_json_str(old, "spec", "nodeName") != NULL ||
	    (b->uid != NULL && uid != NULL && strcmp(b->uid, uid) != 0))
		return 0;
	if ((next = kc_json_copy(old)) == NULL)
		return -ENOMEM;
	if ((spec = kc_json_ensure_obj(next, "spec")) == NULL ||
	    kc_json_set_str(spec, "nodeName", b->node) < 0 ||
	    (r = set_condition(next, "PodScheduled", "True", NULL, NULL, NULL)) < 0) {
		json_object_put(next);
		return -ENOMEM;
	}
	return write_obj(sc, pt, old, next, NULL);
}

static int
unsched_pod(struct scheduler *sc, const struct sched_unsched *u)
{
	const struct dc_rtype *pt = core_type(sc->dc, "pods");
	const struct json_object *old = stored_pod(sc, u->ns, u->name);
	struct json_object *next;
	bool changed = false;
	int r;

	if (old == NULL)
		return 0;
	if ((next = kc_json_copy(old)) == NULL)
		return -ENOMEM;
	if ((r = set_condition(next, "PodScheduled", "False", u->reason, u->message,
	    &changed)) < 0) {
		json_object_put(next);
		return r;
	}
	if ((r = write_obj(sc, pt, old, next, "status")) < 0 || !changed)
		return r;
	if ((old = stored_pod(sc, u->ns, u->name)) == NULL)
		return 0;
	return pod_event(sc, old, "Warning", "FailedScheduling", u->message);
}

static int
nominate_pod(struct scheduler *sc, const struct sched_nominate *nm)
{
	const struct dc_rtype *pt = core_type(sc->dc, "pods");
	const struct json_object *old = stored_pod(sc, nm->ns, nm->name);
	struct json_object *next, *stat;

	if (old == NULL)
		return 0;
	if ((next = kc_json_copy(old)) == NULL)
		return -ENOMEM;
	if ((stat = kc_json_ensure_obj(next, "status")) == NULL ||
	    kc_json_set_str(stat, "nominatedNodeName", nm->node) < 0) {
		json_object_put(next);
		return -ENOMEM;
	}
	return write_obj(sc, pt, old, next, "status");
}

static int
evict_pod(struct scheduler *sc, const struct sched_victim *v)
{
	const struct dc_rtype *pt = core_type(sc->dc, "pods");
	const struct json_object *old = stored_pod(sc, v->ns, v->name);
	struct json_object *next;
	char msg[300], why[300];
	int r;

	if (old == NULL || kc_json_get(old, "metadata", "deletionTimestamp") != NULL)
		return 0;
	(void)snprintf(msg, sizeof(msg), "%.200s: preempting to accommodate a higher "
	    "priority pod", v->scheduler != NULL ? v->scheduler : SCHED_DEFAULT_NAME);
	if ((next = kc_json_copy(old)) == NULL)
		return -ENOMEM;
	if ((r = set_condition(next, "DisruptionTarget", "True", "PreemptionByScheduler",
	    msg, NULL)) < 0) {
		json_object_put(next);
		return r;
	}
	if ((r = write_obj(sc, pt, old, next, "status")) < 0)
		return r;
	if ((old = stored_pod(sc, v->ns, v->name)) != NULL) {
		(void)snprintf(why, sizeof(why), "Preempted by pod %.60s on node %.200s",
		    v->by_uid != NULL ? v->by_uid : "", v->node != NULL ? v->node : "");
		if ((r = pod_event(sc, old, "Normal", "Preempted", why)) < 0)
			return r;
	}
	r = api_delete_object_opts(sc->dc, pt, v->ns, v->name, -1, NULL, v->uid);
	return r == KC_ENOTFOUND || r == KC_ECONFLICT ? 0 : r;
}

static int
podgroups_sync(struct scheduler *sc, const char *group)
{
	struct dc_coll *coll = storage_find_coll(sc->dc->store, group, "podgroups");
	const struct dc_rtype *rt = registry_find_any(sc->dc, group, "podgroups");
	struct json_object **objs = NULL;
	size_t n = 0;
	int r = 0;

	if (coll == NULL || rt == NULL || rt->coll != coll)
		return 0;
	if ((r = coll_list(coll, NULL, NULL, &objs, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && r >= 0; i++) {
		struct kc_status st = { 0 };
		struct json_object *status = NULL, *next;
		bool changed = false;

		if (sched_podgroup_status_of(sc->s, objs[i], kc_clock_wall(), &status,
		    &changed, &st) < 0 || !changed) {
			if (status != NULL)
				json_object_put(status);
			continue;
		}
		if ((next = kc_json_copy(objs[i])) == NULL ||
		    json_object_object_add(next, "status", status) < 0) {
			json_object_put(status);
			if (next != NULL)
				json_object_put(next);
			r = -ENOMEM;
			break;
		}
		r = write_obj(sc, rt, objs[i], next, "status");
		if (r == KC_ECONFLICT)
			r = 0;
	}
	objs_free(objs, n);
	return r;
}

static int
apply(struct scheduler *sc, const struct sched_plan *p)
{
	int r = 0;

	for (size_t i = 0; i < p->nvictims && r >= 0; i++)
		r = evict_pod(sc, &p->victims[i]);
	for (size_t i = 0; i < p->nbinds && r >= 0; i++)
		r = bind_pod(sc, &p->binds[i]);
	for (size_t i = 0; i < p->nnoms && r >= 0; i++)
		r = nominate_pod(sc, &p->noms[i]);
	for (size_t i = 0; i < p->nunsched && r >= 0; i++)
		r = unsched_pod(sc, &p->unsched[i]);
	if (r >= 0)
		r = podgroups_sync(sc, SCHED_PG_GROUP);
	if (r >= 0)
		r = podgroups_sync(sc, SCHED_PG_GROUP_OLD);
	return r == KC_ECONFLICT ? 0 : r;
}

static int64_t
sched_tick(void *arg)
{
	struct scheduler *sc = arg;
	struct sched_plan *p = NULL;
	bool pending;
	int r;

	if (sc->dc->stopping)
		return DC_TIMER_STOP;
	sc->dirty = false;
	sc->ticking = true;
	if ((r = sched_plan(sc->s, &p)) == 0) {
		r = apply(sc, p);
		pending = p->nunsched > 0 || p->nnoms > 0;
		(void)sched_plan_free(p);
	} else
		pending = true;
	sc->ticking = false;
	if (r < 0)
		kc_log_debug(&(struct kc_log_ctx){ .action = "schedule" },
		    "applying the plan: %s", kc_strerror(r));
	if (sc->dirty)
		return SCHEDULER_DELAY_MS;
	/* Pending pods: try again now and then, as the scheduler's backoff. */
	return pending ? SCHEDULER_RETRY_MS : DC_TIMER_STOP;
}

int
scheduler_init(struct dc *dc, const char *cosched_name)
{
	struct scheduler *sc;
	int r;

	if ((sc = kc_calloc(1, sizeof(*sc))) == NULL)
		return -ENOMEM;
	sc->dc = dc;
	if ((r = sched_new(&(struct sched_opts){ .cosched_name = cosched_name },
	    &sc->s)) < 0) {
		kc_free(sc);
		return r;
	}
	timer_init(&sc->timer, dc, sched_tick, sc);
	if ((r = storage_subscribe(dc->store, on_event, sc)) < 0) {
		(void)sched_free(sc->s);
		kc_free(sc);
		return r;
	}
	dc->ext_sched = sc;
	if ((r = scan_coll(sc, "", "namespaces")) < 0 ||
	    (r = scan_coll(sc, "", "nodes")) < 0 ||
	    (r = scan_coll(sc, SCHED_PG_GROUP, "podgroups")) < 0 ||
	    (r = scan_coll(sc, SCHED_PG_GROUP_OLD, "podgroups")) < 0 ||
	    (r = scan_coll(sc, "", "pods")) < 0) {
		scheduler_fini(dc);
		return r;
	}
	return 0;
}

void
scheduler_fini(struct dc *dc)
{
	struct scheduler *sc = dc->ext_sched;

	if (sc == NULL)
		return;
	timer_cancel(&sc->timer);
	storage_unsubscribe(dc->store, on_event, sc);
	(void)sched_free(sc->s);
	kc_free(sc);
	dc->ext_sched = NULL;
}

/* Creates one Node unless it exists, then gives it the file's status. */
static int
load_node(struct dc *dc, const struct json_object *node, struct kc_status *st)
{
	const struct dc_rtype *nt = core_type(dc, "nodes");
	const char *name = kc_json_str(node, "metadata", "name");
	const char *kind = kc_json_str(node, "kind");
	struct json_object *obj, *status, *next, *created = NULL;
	const struct json_object *old;
	int r;

	if (nt == NULL)
		return -ENOENT;
	if (kind == NULL || strcmp(kind, "Node") != 0 || name == NULL) {
		kc_status_set(st, KC_EINVALID, "expected Node objects with a name, got %s",
		    kind != NULL ? kind : "an object without kind");
		return KC_EINVALID;
	}
	if (coll_get(nt->coll, "", name) != NULL)
		return 0;
	if ((obj = kc_json_copy(node)) == NULL)
		return -ENOMEM;
	if ((r = api_create_object(dc, nt, obj, &created)) < 0) {
		kc_status_set(st, r, "creating node %s: %s", name, kc_strerror(r));
		return r;
	}
	json_object_put(created);
	status = kc_json_get(node, "status");
	if (status == NULL || (old = coll_get(nt->coll, "", name)) == NULL)
		return 0;
	if ((next = kc_json_copy(old)) == NULL)
		return -ENOMEM;
	if ((status = kc_json_copy(status)) == NULL ||
	    json_object_object_add(next, "status", status) < 0) {
		if (status != NULL)
			json_object_put(status);
		json_object_put(next);
		return -ENOMEM;
	}
	r = storage_update(dc->store, nt->coll, next, obj_rv(old), NULL);
	return r == DC_UNCHANGED ? 0 : r;
}

int
scheduler_load_nodes(struct dc *dc, const char *path, struct kc_status *st)
{
	_cleanup_(kc_freep) char *text = NULL;
	struct json_object *docs = NULL;
	size_t len = 0;
	int r;

	if ((r = kc_read_file(path, NODES_FILE_MAX, &text, &len)) < 0) {
		kc_status_set(st, r, "%s: %s", path, kc_strerror(r));
		return r;
	}
	if ((r = kc_yaml_parse(text, len, NULL, &docs, st)) < 0)
		return r;
	for (size_t i = 0; i < json_object_array_length(docs) && r >= 0; i++) {
		struct json_object *d = json_object_array_get_idx(docs, i);
		const char *kind = kc_json_str(d, "kind");
		struct json_object *items;

		if (d == NULL)
			continue;
		if (kind != NULL && strcmp(kind, "List") == 0) {
			items = kc_json_get(d, "items");
			for (size_t j = 0; j < json_object_array_length(items) && r >= 0; j++)
				r = load_node(dc, json_object_array_get_idx(items, j), st);
		} else
			r = load_node(dc, d, st);
	}
	json_object_put(docs);
	return r;
}

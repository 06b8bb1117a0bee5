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
 * status.nominatedNodeName, and the PodGroup status (only of the
 * PodGroups that changed, or whose member pods did). Our own writes come
 * back through the subscription, which is how bound pods reach the
 * snapshot before the next plan. Nothing blocks: everything runs on the
 * timer.
 *
 * The same file serves the pods/binding subresource and the bindings
 * resource (hooks.binding): binding_assign() is the one write both the
 * API and the scheduler's own binds use. It runs the Priority admission
 * plug-in (scheduler_plugin.admit) and enforces scheduleTimeoutSeconds:
 * a gang not bound within its wait after status.scheduleStartTime gets
 * upstream's Permit timeout and Unreserve rejections.
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
#include <kc/sbuf.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "devcluster.h"
#include "scheduler.h"
#include "plugins.h"
#include "sched.h"

#define SCHEDULER_DELAY_MS	20	/* coalescing delay after a change */
#define SCHEDULER_RETRY_MS	1000	/* replan while pods stay pending */
#define NODES_FILE_MAX		(16 * 1024 * 1024)
#define SCHEDULER_PERMIT_WAIT_S	60	/* Coscheduling's permitWaitingTimeSeconds */
#define SCHEDULER_PERMIT_MAX_S	900	/* the framework's longest Permit wait */

/* A gang waiting since 'start' and the wait periods already reported. */
struct pg_wait {
	char		 key[600];	/* "<group>/<ns>/<name>" */
	char		 start[KC_TIME_MAX + 32];
	int64_t		 periods;
	bool		 seen;
};

/* A PodGroup whose status may have changed: one allocation, "ns\0name". */
struct pg_key {
	char		*ns;
	const char	*name;		/* inside the allocation of 'ns' */
};

/*
 * The PodGroups of one API group to sync at the next tick, unsorted and
 * with duplicates (one key per event; sorted and made unique at the
 * sync), or all of them.
 */
struct pg_dirty {
	struct pg_key	*keys;
	size_t		 n, cap;
	bool		 all;
};

/* Indexes of struct scheduler's pgdirty[]. */
enum {
	PG_NEW,				/* SCHED_PG_GROUP */
	PG_OLD,				/* SCHED_PG_GROUP_OLD */
	PG_NGROUPS
};

struct scheduler {
	struct dc	*dc;
	struct sched	*s;
	struct dc_timer	 timer;
	bool		 dirty;
	bool		 ticking;
	uint64_t	 cost_ms;	/* what the last tick took */
	uint64_t	 event_seq;
	struct pg_wait	*waits;
	size_t		 nwaits, capwaits;
	struct pg_dirty	 pgdirty[PG_NGROUPS];
	bool		 pg_changed;	/* a PodGroup dirtied since the timeouts scan */
	bool		 pods_stale;	/* a pod put failed: no status-only puts */
	bool		 to_valid;	/* to_second and to_waiting hold a scan's */
	time_t		 to_second;	/* kc_clock_wall() of the last timeouts scan */
	int		 to_waiting;	/* and what it returned */
};

static const struct dc_rtype *
core_type(struct dc *dc, const char *plural)
{
	return registry_find(dc, "", "v1", plural);
}

/*
 * The coalescing delay: SCHEDULER_DELAY_MS, plus twice what the last tick
 * took, so that a snapshot of thousands of pods under a stream of changes
 * spends at most a third of the loop planning (a tick is linear in the
 * pods); a small cluster's tick takes no measurable time.
 */
static uint64_t
delay_ms(const struct scheduler *sc)
{
	return SCHEDULER_DELAY_MS + 2 * KC_MIN(sc->cost_ms, (uint64_t)SCHEDULER_RETRY_MS);
}

static void
kick(struct scheduler *sc)
{
	uint64_t d = delay_ms(sc);

	sc->dirty = true;
	/* Coalesce: keep an earlier due time, pull a later retry in. */
	if (!sc->ticking && (!sc->timer.armed || sc->timer.due_ms > kc_clock_now_ms() + d))
		timer_arm(&sc->timer, d);
}

static bool
is_coll(const struct dc_coll *coll, const char *group, const char *resource)
{
	return strcmp(coll_group(coll), group) == 0 &&
	    strcmp(coll_resource(coll), resource) == 0;
}

/*
 * Dirty PodGroups. A PodGroup's status is a function of the PodGroup and
 * of its member pods in the snapshot (the time only stamps a transition),
 * so a tick recomputes only the PodGroups that changed or whose members
 * did, not all of them: with thousands of groups under a stream of pod
 * changes, recomputing every one each tick would dominate the loop. The
 * storage events record the keys; anything they cannot cover (the scan
 * at start, a group whose CRD is not served yet, a failed allocation)
 * sets 'all', and the next sync recomputes every PodGroup of the group.
 */
static int
pg_group_index(const char *group)
{
	if (strcmp(group, SCHED_PG_GROUP) == 0)
		return PG_NEW;
	if (strcmp(group, SCHED_PG_GROUP_OLD) == 0)
		return PG_OLD;
	return -1;
}

static void
dirty_add(struct scheduler *sc, int g, const char *ns, const char *name)
{
	struct pg_dirty *d = &sc->pgdirty[g];
	size_t lns = strlen(ns), lname = strlen(name);
	char *s;

	sc->pg_changed = true;
	if (d->n == d->cap) {
		size_t cap = d->cap != 0 ? 2 * d->cap : 64;
		struct pg_key *v = kc_reallocarray(d->keys, cap, sizeof(*v));

		if (v == NULL) {
			d->all = true;		/* nothing is lost: a full sync */
			return;
		}
		d->keys = v;
		d->cap = cap;
	}
	if ((s = kc_malloc(lns + lname + 2)) == NULL) {
		d->all = true;
		return;
	}
	memcpy(s, ns, lns + 1);
	memcpy(s + lns + 1, name, lname + 1);
	d->keys[d->n++] = (struct pg_key){ .ns = s, .name = s + lns + 1 };
}

/*
 * The PodGroup a pod belongs to, as sched_pod_put() derives its pgkey:
 * the new label if set, else the old one. False for none.
 */
static bool
pod_podgroup(const struct json_object *pod, int *ret_g, const char **ret_ns,
    const char **ret_name)
{
	const char *ns, *name;

	if (pod == NULL || (ns = kc_json_str(pod, "metadata", "namespace")) == NULL ||
	    *ns == '\0')
		return false;
	if ((name = kc_json_str(pod, "metadata", "labels", SCHED_PG_LABEL)) != NULL &&
	    *name != '\0')
		*ret_g = PG_NEW;
	else if ((name = kc_json_str(pod, "metadata", "labels", SCHED_PG_LABEL_OLD)) != NULL &&
	    *name != '\0')
		*ret_g = PG_OLD;
	else
		return false;
	*ret_ns = ns;
	*ret_name = name;
	return true;
}

/*
 * Marks the PodGroups an event may change the status of: a PodGroup's
 * own, a pod's group, and the group it left when its label changed.
 */
static void
dirty_event(struct scheduler *sc, const struct dc_event *ev)
{
	const char *ns = NULL, *name = NULL, *pns, *pname;
	int g = -1, pg;

	if (is_coll(ev->coll, "", "pods")) {
		bool now = pod_podgroup(ev->obj, &g, &ns, &name);

		if (now)
			dirty_add(sc, g, ns, name);
		if (ev->prev != NULL && pod_podgroup(ev->prev, &pg, &pns, &pname) &&
		    (!now || pg != g || strcmp(pns, ns) != 0 || strcmp(pname, name) != 0))
			dirty_add(sc, pg, pns, pname);
	} else if (strcmp(coll_resource(ev->coll), "podgroups") == 0 &&
	    (g = pg_group_index(coll_group(ev->coll))) >= 0) {
		ns = kc_json_str(ev->obj, "metadata", "namespace");
		name = kc_json_str(ev->obj, "metadata", "name");
		if (name != NULL)
			dirty_add(sc, g, ns != NULL ? ns : "", name);
	}
}

static int
pg_key_cmp(const void *a, const void *b)
{
	const struct pg_key *x = a, *y = b;
	int c = strcmp(x->ns, y->ns);

	return c != 0 ? c : strcmp(x->name, y->name);
}

/* Sorts the keys and drops duplicates; returns how many are left. */
static size_t
dirty_unique(struct pg_dirty *d)
{
	size_t k = 0;

	if (d->n > 1)
		qsort(d->keys, d->n, sizeof(*d->keys), pg_key_cmp);
	for (size_t i = 0; i < d->n; i++) {
		if (k != 0 && pg_key_cmp(&d->keys[k - 1], &d->keys[i]) == 0)
			kc_free(d->keys[i].ns);
		else
			d->keys[k++] = d->keys[i];
	}
	d->n = k;
	return k;
}

/*
 * Forgets the first 'n' keys where done[i] (every one of them when
 * 'done' is NULL); keys added since, by the sync's own writes, stay.
 */
static void
dirty_forget(struct pg_dirty *d, size_t n, const bool *done)
{
	size_t k = 0;

	for (size_t i = 0; i < d->n; i++) {
		if (i < n && (done == NULL || done[i]))
			kc_free(d->keys[i].ns);
		else
			d->keys[k++] = d->keys[i];
	}
	d->n = k;
}

/*
 * Whether 'obj' differs from 'prev' at most in its status and in the
 * metadata the snapshot does not read (resourceVersion, managedFields,
 * annotations...): the kubelet's and the scheduler's status writes share
 * everything else with the version before (obj_cow()), so pointers tell.
 */
static bool
status_only(const struct json_object *obj, const struct json_object *prev)
{
	static const char *const meta[] = {
		"name", "namespace", "uid", "labels", "ownerReferences", "creationTimestamp",
		"deletionTimestamp",
	};
	struct json_object *m = kc_json_get(obj, "metadata"), *pm = kc_json_get(prev, "metadata");

	if (prev == NULL || m == NULL || pm == NULL ||
	    kc_json_get(obj, "spec") != kc_json_get(prev, "spec"))
		return false;
	for (size_t i = 0; i < KC_ARRAY_SIZE(meta); i++)
		if (kc_json_get(m, meta[i]) != kc_json_get(pm, meta[i]))
			return false;
	return true;
}

/*
 * Feeds one object (or its deletion) into the snapshot; 'prev' is the
 * version before (NULL if unknown).
 */
static void
feed(struct scheduler *sc, const struct dc_coll *coll, const struct json_object *obj,
    const struct json_object *prev, bool gone)
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
		else if (sc->pods_stale || !status_only(obj, prev) ||
		    sched_pod_put_status(sc->s, obj) != 0)
			r = sched_pod_put(sc->s, obj, &st);
		/*
		 * A put that failed for memory left an older version in the
		 * snapshot: the status-only shortcut, which trusts that the
		 * version before is there, is off from then on.
		 */
		if (r == -ENOMEM)
			sc->pods_stale = true;
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
	dirty_event(arg, ev);
	feed(arg, ev->coll, ev->obj, ev->prev, ev->type == DC_EV_DELETED);
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
		feed(sc, coll, objs[i], NULL, false);
	objs_free(objs, n);
	return 0;
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

	api_now(now);
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

/* A core/v1 Event about a pod, its message cut to SCHED_EVENT_MESSAGE_MAX. */
static int
pod_event(struct scheduler *sc, const struct json_object *pod, const char *type,
    const char *reason, const char *message)
{
	char msg[SCHED_EVENT_MESSAGE_MAX + 1];
	struct api_event e = { .about = pod, .kind = "Pod", .type = type,
	    .reason = reason, .message = msg, .component = SCHED_DEFAULT_NAME };

	if (kc_json_str(pod, "metadata", "namespace") == NULL)
		return 0;
	if (strlen(message) > SCHED_EVENT_MESSAGE_MAX)
		(void)snprintf(msg, sizeof(msg), "%.1020s ...", message);
	else
		kc_strlcpy(msg, message, sizeof(msg));
	e.stamp = (uint64_t)kc_clock_wall() * UINT64_C(1000000000) + ++sc->event_seq;
	return api_record_event(sc->dc, &e);
}

static const struct json_object *
stored_pod(struct scheduler *sc, const char *ns, const char *name)
{
	const struct dc_rtype *pt = core_type(sc->dc, "pods");

	return pt != NULL ? coll_get(pt->coll, ns, name) : NULL;
}

/*
 * Replaces the object member 'key' of 'o' (if there is one) by a private
 * copy: deep, or shallow (its members shared). 0 or -ENOMEM.
 */
static int
own_member(struct json_object *o, const char *key, bool deep)
{
	struct json_object *v = kc_json_obj_of(o, key), *c;

	if (v == NULL)
		return 0;
	if (deep)
		c = kc_json_copy(v);
	else if ((c = json_object_new_object()) != NULL) {
		json_object_object_foreach(v, k, m) {
			if (json_object_object_add(c, k, json_object_get(m)) < 0) {
				json_object_put(m);
				json_object_put(c);
				return -ENOMEM;
			}
		}
	}
	return c != NULL ? kc_json_put(o, key, c) : -ENOMEM;
}

/*
 * A new version of the stored 'obj' whose status is a private deep copy
 * and whose every other member is shared (obj_cow()): what a status
 * write changes, without copying the spec (and without the field
 * manager walking it: shared members compare equal by identity).
 */
static struct json_object *
status_cow(const struct json_object *obj)
{
	struct json_object *next;

	if ((next = obj_cow(obj)) == NULL)
		return NULL;
	if (own_member(next, "status", true) < 0) {
		json_object_put(next);
		return NULL;
	}
	return next;
}

/*
 * The one write of a Binding, as BindingREST.setPodNodeAndMetadata() does
 * it: the preconditions (uid, resourceVersion; NULL: none), then refused
 * for a terminating pod, a bound one or one with scheduling gates; else
 * spec.nodeName, the Binding's annotations and condition PodScheduled
 * True in one storage write (no managedFields entry: upstream writes the
 * pod below the field manager). Both the pods/binding subresource and the
 * scheduler's own bindings go through here. 0; KC_ENOTFOUND (pod gone),
 * KC_ECONFLICT with upstream's message in 'st' ('*ret_sub' says whether
 * the Conflict is on "pods/binding" or, for a precondition, on "pods"),
 * KC_EBADREQUEST for an empty name, -ENOMEM.
 */
static int
binding_assign(struct dc *dc, const char *ns, const char *name, const char *uid,
    const char *rv, const char *node, const struct json_object *annotations, bool dry_run,
    bool *ret_sub, struct kc_status *st)
{
	const struct dc_rtype *pt = core_type(dc, "pods");
	const struct json_object *old;
	const char *have, *ouid;
	struct json_object *next, *spec, *ann, *gates;
	char rvbuf[24];
	int r;

	*ret_sub = true;
	if (name == NULL || *name == '\0')
		return kc_status_set(st, KC_EBADREQUEST, "Name parameter required.");
	if (pt == NULL || (old = coll_get(pt->coll, ns, name)) == NULL)
		return kc_status_set(st, KC_ENOTFOUND, "pods \"%s\" not found", name);
	ouid = kc_json_str(old, "metadata", "uid");
	(void)snprintf(rvbuf, sizeof(rvbuf), "%" PRIu64, obj_rv(old));
	if (uid != NULL && *uid != '\0' && (ouid == NULL || strcmp(uid, ouid) != 0)) {
		*ret_sub = false;
		return kc_status_set(st, KC_ECONFLICT, "StorageError: invalid object, Code: 4, "
		    "Key: /registry/pods/%s/%s, ResourceVersion: 0, AdditionalErrorMsg: "
		    "Precondition failed: UID in precondition: %s, UID in object meta: %s",
		    ns, name, uid, ouid != NULL ? ouid : "");
	}
	if (rv != NULL && *rv != '\0' && strcmp(rv, rvbuf) != 0) {
		*ret_sub = false;
		return kc_status_set(st, KC_ECONFLICT, "StorageError: invalid object, Code: 4, "
		    "Key: /registry/pods/%s/%s, ResourceVersion: 0, AdditionalErrorMsg: "
		    "Precondition failed: ResourceVersion in precondition: %s, "
		    "ResourceVersion in object meta: %s", ns, name, rv, rvbuf);
	}
	if (kc_json_get(old, "metadata", "deletionTimestamp") != NULL)
		return kc_status_set(st, KC_ECONFLICT, "pod %s is being deleted, cannot be "
		    "assigned to a host", name);
	if ((have = kc_json_str(old, "spec", "nodeName")) != NULL && *have != '\0')
		return kc_status_set(st, KC_ECONFLICT, "pod %s is already assigned to node "
		    "\"%s\"", name, have);
	if ((gates = kc_json_get(old, "spec", "schedulingGates")) != NULL &&
	    json_object_is_type(gates, json_type_array) &&
	    json_object_array_length(gates) != 0)
		return kc_status_set(st, KC_ECONFLICT, "pod %s has non-empty "
		    ".spec.schedulingGates", name);
	if (dry_run)
		return 0;
	/*
	 * spec.nodeName, a status condition and annotations change: those
	 * get private copies, the rest stays shared with the stored pod.
	 */
	if ((next = obj_cow(old)) == NULL)
		return -ENOMEM;
	r = -ENOMEM;
	if (own_member(next, "spec", false) < 0 || own_member(next, "status", true) < 0 ||
	    own_member(kc_json_obj_of(next, "metadata"), "annotations", false) < 0)
		goto fail;
	if ((spec = kc_json_ensure_obj(next, "spec")) == NULL ||
	    kc_json_set_str(spec, "nodeName", node) < 0 ||
	    (r = set_condition(next, "PodScheduled", "True", NULL, NULL, NULL)) < 0)
		goto fail;
	if (json_object_is_type(annotations, json_type_object) &&
	    json_object_object_length(annotations) > 0) {
		r = -ENOMEM;
		if ((ann = kc_json_ensure_obj(kc_json_ensure_obj(next, "metadata"),
		    "annotations")) == NULL)
			goto fail;
		json_object_object_foreach(annotations, k, v)
			if (json_object_is_type(v, json_type_string) &&
			    kc_json_set_str(ann, k, json_object_get_string(v)) < 0)
				goto fail;
	}
	r = storage_update(dc->store, pt->coll, next, obj_rv(old), NULL);
	if (r == KC_ECONFLICT || r == KC_ENOTFOUND)
		return kc_status_set(st, r, "pods \"%s\" not found", name);
	return r == DC_UNCHANGED ? 0 : r;
fail:
	json_object_put(next);
	return r;
}

/* A Status reply with details {name, kind}; 'reason' NULL: none (500 unknown). */
static int
binding_status(struct dc_resp *resp, int code, const char *name, const char *kind,
    const char *message, bool no_reason)
{
	struct json_object *details = NULL, *o = NULL;
	int http = kc_err_http(code) != 0 ? kc_err_http(code) : 500, r;

	if (kind != NULL && ((details = json_object_new_object()) == NULL ||
	    kc_json_set_str(details, "name", name) < 0 ||
	    kc_json_set_str(details, "kind", kind) < 0)) {
		if (details != NULL)
			json_object_put(details);
		return -ENOMEM;
	}
	r = errors_status_body(code, message, details, &o);
	if (details != NULL)
		json_object_put(details);
	if (r < 0)
		return r;
	if (no_reason)
		json_object_object_del(o, "reason");
	r = resp_json(resp, http, o);
	json_object_put(o);
	return r;
}

/*
 * hooks.binding: BindingREST.Create. The name in the URL (pods/binding)
 * must be the Binding's; target.kind must be Node or empty and
 * target.name set (upstream returns those field errors unwrapped, as a
 * 500); then binding_assign(). 201 with a Success Status.
 */
static int
binding_handle(struct dc *dc, const struct dc_req *req, const char *ns, const char *url_name,
    struct json_object *b, bool dry_run, struct dc_resp *resp)
{
	const char *kind = kc_json_str(b, "kind"), *av = kc_json_str(b, "apiVersion");
	const char *name = kc_json_str(b, "metadata", "name");
	const char *tkind = kc_json_str(b, "target", "kind");
	const char *tname = kc_json_str(b, "target", "name");
	struct kc_status st = { 0 };
	struct json_object *ok;
	char msg[600], q[300];
	bool sub = true;
	int r;

	(void)req;
	if ((kind != NULL && *kind != '\0' && strcmp(kind, "Binding") != 0) ||
	    (av != NULL && *av != '\0' && strcmp(av, "v1") != 0)) {
		(void)snprintf(msg, sizeof(msg), "%.200s in version \"%.60s\" cannot be handled "
		    "as a Binding: no kind \"%.200s\" is registered for version \"%.60s\"",
		    kind != NULL ? kind : "", av != NULL ? av : "", kind != NULL ? kind : "",
		    av != NULL ? av : "");
		return binding_status(resp, KC_EBADREQUEST, NULL, NULL, msg, false);
	}
	if (url_name != NULL && (name == NULL || strcmp(name, url_name) != 0))
		return binding_status(resp, KC_EBADREQUEST, NULL, NULL,
		    "name in URL does not match name in Binding object", false);
	if ((tkind != NULL && *tkind != '\0' && strcmp(tkind, "Node") != 0) ||
	    tname == NULL || *tname == '\0') {
		char a[300] = "", c[100] = "";

		if (tkind != NULL && *tkind != '\0' && strcmp(tkind, "Node") != 0)
			(void)snprintf(a, sizeof(a), "target.kind: Unsupported value: %s: "
			    "supported values: \"Node\", \"<empty>\"",
			    kc_sbuf_quoted(q, sizeof(q), tkind));
		if (tname == NULL || *tname == '\0')
			kc_strlcpy(c, "target.name: Required value", sizeof(c));
		if (*a != '\0' && *c != '\0')
			(void)snprintf(msg, sizeof(msg), "[%s, %s]", a, c);
		else
			(void)snprintf(msg, sizeof(msg), "%s%s", a, c);
		return binding_status(resp, -EIO, NULL, NULL, msg, true);
	}
	r = binding_assign(dc, ns, name, kc_json_str(b, "metadata", "uid"),
	    kc_json_str(b, "metadata", "resourceVersion"), tname,
	    kc_json_get(b, "metadata", "annotations"), dry_run, &sub, &st);
	if (r == -ENOMEM)
		return r;
	if (r == KC_ENOTFOUND)
		return binding_status(resp, r, name, "pods", st.message, false);
	if (r == KC_ECONFLICT) {
		(void)snprintf(msg, sizeof(msg), "Operation cannot be fulfilled on %s \"%s\": %s",
		    sub ? "pods/binding" : "pods", name, st.message);
		return binding_status(resp, r, name, sub ? "pods/binding" : "pods", msg, false);
	}
	if (r < 0)
		return binding_status(resp, r, NULL, NULL, st.message[0] != '\0' ?
		    st.message : kc_strerror(r), false);
	if ((ok = json_object_new_object()) == NULL)
		return -ENOMEM;
	if (kc_json_set_str(ok, "kind", "Status") < 0 ||
	    kc_json_set_str(ok, "apiVersion", "v1") < 0 ||
	    kc_json_put(ok, "metadata", json_object_new_object()) < 0 ||
	    kc_json_set_str(ok, "status", "Success") < 0 ||
	    kc_json_set_int(ok, "code", 201) < 0 || (r = resp_json(resp, 201, ok)) < 0) {
		json_object_put(ok);
		return -ENOMEM;
	}
	json_object_put(ok);
	return 0;
}

/* The scheduler's own binding: the same write, refused quietly. */
static int
bind_pod(struct scheduler *sc, const struct sched_bind *b)
{
	struct kc_status st = { 0 };
	bool sub;
	int r;

	r = binding_assign(sc->dc, b->ns, b->name, b->uid, NULL, b->node, NULL, false, &sub,
	    &st);
	return r == KC_ENOTFOUND || r == KC_ECONFLICT || r == KC_EBADREQUEST ? 0 : r;
}

static bool
str_eq(const char *a, const char *b)
{
	return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

/*
 * Whether the stored 'pod' already has condition 'type' with this status,
 * reason and message: the plan repeats itself every tick for every pod
 * that stays pending, and such a write would change nothing, so it is
 * not even built (a deep copy and managedFields per pod per tick made a
 * gang of thousands of pending pods quadratic).
 */
static bool
condition_is(const struct json_object *pod, const char *type, const char *status,
    const char *reason, const char *message)
{
	const struct json_object *conds = kc_json_get(pod, "status", "conditions");

	if (conds == NULL || !json_object_is_type(conds, json_type_array))
		return false;
	for (size_t i = 0; i < json_object_array_length(conds); i++) {
		const struct json_object *c = json_object_array_get_idx(conds, i);

		if (str_eq(kc_json_str(c, "type"), type))
			return str_eq(kc_json_str(c, "status"), status) &&
			    str_eq(kc_json_str(c, "reason"), reason) &&
			    str_eq(kc_json_str(c, "message"), message) &&
			    kc_json_str(c, "lastTransitionTime") != NULL;
	}
	return false;
}

static int
unsched_pod(struct scheduler *sc, const struct sched_unsched *u)
{
	const struct dc_rtype *pt = core_type(sc->dc, "pods");
	const struct json_object *old = stored_pod(sc, u->ns, u->name);
	struct json_object *next;
	bool changed = false;
	int r;

	if (old == NULL || condition_is(old, "PodScheduled", "False", u->reason, u->message))
		return 0;
	if ((next = status_cow(old)) == NULL)
		return -ENOMEM;
	if ((r = set_condition(next, "PodScheduled", "False", u->reason, u->message,
	    &changed)) < 0) {
		json_object_put(next);
		return r;
	}
	if ((r = api_update_object(sc->dc, pt, old, next, "status", SCHED_DEFAULT_NAME)) < 0 || !changed)
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

	if (old == NULL || str_eq(kc_json_str(old, "status", "nominatedNodeName"), nm->node))
		return 0;
	if ((next = status_cow(old)) == NULL)
		return -ENOMEM;
	if ((stat = kc_json_ensure_obj(next, "status")) == NULL ||
	    kc_json_set_str(stat, "nominatedNodeName", nm->node) < 0) {
		json_object_put(next);
		return -ENOMEM;
	}
	return api_update_object(sc->dc, pt, old, next, "status", SCHED_DEFAULT_NAME);
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
	if ((next = status_cow(old)) == NULL)
		return -ENOMEM;
	if ((r = set_condition(next, "DisruptionTarget", "True", "PreemptionByScheduler",
	    msg, NULL)) < 0) {
		json_object_put(next);
		return r;
	}
	if ((r = api_update_object(sc->dc, pt, old, next, "status", SCHED_DEFAULT_NAME)) < 0)
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

/*
 * Computes the statuses of the stored PodGroups 'objs' of 'rt' in one
 * pass over the snapshot's pods and writes those that changed. done[i]
 * ('done' may be NULL) tells that objs[i] needs no more work: written,
 * unchanged, invalid, or lost to a conflict (the newer version has its
 * own event, which dirties it again).
 */
static int
podgroups_write(struct scheduler *sc, const struct dc_rtype *rt, struct json_object **objs,
    size_t n, bool *done)
{
	struct json_object **status = NULL;
	bool *changed = NULL;
	int r = 0;

	if (n == 0)
		return 0;
	if ((status = kc_calloc(n, sizeof(*status))) == NULL ||
	    (changed = kc_calloc(n, sizeof(*changed))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = sched_podgroup_statuses_of(sc->s, objs, n, kc_clock_wall(), status,
	    changed)) < 0)
		goto out;
	for (size_t i = 0; i < n && r >= 0; i++) {
		struct json_object *next;

		if (status[i] == NULL || !changed[i]) {
			if (done != NULL)
				done[i] = true;
			continue;
		}
		/* The status is replaced whole: the rest stays shared. */
		obj_share_equal(status[i], kc_json_get(objs[i], "status"));
		if ((next = obj_cow(objs[i])) == NULL ||
		    json_object_object_add(next, "status", status[i]) < 0) {
			if (next != NULL)
				json_object_put(next);
			r = -ENOMEM;
			break;
		}
		status[i] = NULL;
		r = api_update_object(sc->dc, rt, objs[i], next, "status", SCHED_DEFAULT_NAME);
		if (r == KC_ECONFLICT)
			r = 0;
		if (r >= 0 && done != NULL)
			done[i] = true;
	}
out:
	for (size_t i = 0; status != NULL && i < n; i++)
		if (status[i] != NULL)
			json_object_put(status[i]);
	kc_free(status);
	kc_free(changed);
	return r;
}

/*
 * The dirty PodGroups of 'd' that are stored; keys naming none are
 * forgotten, and so is every key whose PodGroup needs no more work.
 */
static int
podgroups_sync_dirty(struct scheduler *sc, struct pg_dirty *d, const struct dc_coll *coll,
    const struct dc_rtype *rt)
{
	struct json_object **objs = NULL;
	size_t nk, n = 0, *at = NULL;
	bool *done = NULL, *written = NULL;
	int r = 0;

	/* Our writes below append keys: only the first nk are this sync's. */
	if ((nk = dirty_unique(d)) == 0)
		return 0;
	if ((objs = kc_calloc(nk, sizeof(*objs))) == NULL ||
	    (at = kc_calloc(nk, sizeof(*at))) == NULL ||
	    (done = kc_calloc(nk, sizeof(*done))) == NULL ||
	    (written = kc_calloc(nk, sizeof(*written))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nk; i++) {
		const struct json_object *o = coll_get(coll, d->keys[i].ns, d->keys[i].name);

		if (o == NULL) {
			done[i] = true;		/* deleted, or a label naming none */
			continue;
		}
		objs[n] = json_object_get((struct json_object *)(uintptr_t)o);
		at[n++] = i;
	}
	r = podgroups_write(sc, rt, objs, n, written);
	for (size_t i = 0; i < n; i++)
		if (written[i])
			done[at[i]] = true;
	dirty_forget(d, nk, done);
out:
	objs_free(objs, n);
	kc_free(at);
	kc_free(done);
	kc_free(written);
	return r;
}

/*
 * Writes the status of the PodGroups of 'group' that may have changed
 * since the last sync (see dirty_add()), or of all of them when 'all'.
 */
static int
podgroups_sync(struct scheduler *sc, const char *group)
{
	struct dc_coll *coll = storage_find_coll(sc->dc->store, group, "podgroups");
	const struct dc_rtype *rt = registry_find_any(sc->dc, group, "podgroups");
	struct pg_dirty *d = &sc->pgdirty[pg_group_index(group)];
	struct json_object **objs = NULL;
	size_t n = 0, nk;
	int r;

	if (coll == NULL || rt == NULL || rt->coll != coll) {
		/*
		 * Not served: nothing to write. Once the CRD is (created, or
		 * restored and registered by crd.c's timer, which no event
		 * announces), what is stored then gets a full sync.
		 */
		dirty_forget(d, d->n, NULL);
		d->all = true;
		return 0;
	}
	if (!d->all)
		return podgroups_sync_dirty(sc, d, coll, rt);
	nk = d->n;
	if ((r = coll_list(coll, NULL, NULL, &objs, &n)) < 0)
		return r;
	/* All groups in one pass over the pods, not one pass per group. */
	r = podgroups_write(sc, rt, objs, n, NULL);
	objs_free(objs, n);
	if (r < 0)
		return r;
	d->all = false;
	dirty_forget(d, nk, NULL);
	return 0;
}

/* Go's time.Duration.String() of whole seconds: "10s", "1m0s", "1h0m0s". */
static void
go_seconds(int64_t sec, char *buf, size_t size)
{
	if (sec >= 3600)
		(void)snprintf(buf, size, "%" PRId64 "h%" PRId64 "m%" PRId64 "s", sec / 3600,
		    sec / 60 % 60, sec % 60);
	else if (sec >= 60)
		(void)snprintf(buf, size, "%" PRId64 "m%" PRId64 "s", sec / 60, sec % 60);
	else
		(void)snprintf(buf, size, "%" PRId64 "s", sec);
}

/*
 * The Permit wait of a gang: spec.scheduleTimeoutSeconds, or Coscheduling's
 * permitWaitingTimeSeconds (60) when unset or 0, at most the framework's
 * 15 minutes; a negative one times out at once.
 */
static int64_t
wait_seconds(const struct json_object *pg)
{
	struct json_object *t = kc_json_get(pg, "spec", "scheduleTimeoutSeconds");
	int64_t sec = json_object_is_type(t, json_type_int) ? json_object_get_int64(t) : 0;

	if (sec == 0)
		return SCHEDULER_PERMIT_WAIT_S;
	return sec < 0 ? 0 : sec > SCHEDULER_PERMIT_MAX_S ? SCHEDULER_PERMIT_MAX_S : sec;
}

static struct pg_wait *
wait_find(struct scheduler *sc, const char *key, const char *start)
{
	struct pg_wait *w;

	for (size_t i = 0; i < sc->nwaits; i++)
		if (strcmp(sc->waits[i].key, key) == 0) {
			w = &sc->waits[i];
			if (strcmp(w->start, start) != 0) {
				kc_strlcpy(w->start, start, sizeof(w->start));
				w->periods = 0;
			}
			w->seen = true;
			return w;
		}
	if (sc->nwaits == sc->capwaits) {
		size_t cap = sc->capwaits != 0 ? 2 * sc->capwaits : 8;
		struct pg_wait *v = kc_realloc(sc->waits, cap * sizeof(*v));

		if (v == NULL)
			return NULL;
		sc->waits = v;
		sc->capwaits = cap;
	}
	w = &sc->waits[sc->nwaits];
	memset(w, 0, sizeof(*w));
	kc_strlcpy(w->key, key, sizeof(w->key));
	kc_strlcpy(w->start, start, sizeof(w->start));
	w->seen = true;
	sc->nwaits++;
	return w;
}

static int
pod_name_cmp(const void *a, const void *b)
{
	const char *x = kc_json_str(*(struct json_object *const *)a, "metadata", "name");
	const char *y = kc_json_str(*(struct json_object *const *)b, "metadata", "name");

	return strcmp(x != NULL ? x : "", y != NULL ? y : "");
}

/*
 * What the Permit timeout of a waiting gang does upstream: the first
 * pending member is rejected "due to timeout after waiting <d> at plugin
 * Coscheduling", Unreserve rejects its siblings ("rejection in
 * Unreserve"); each gets PodScheduled False and a FailedScheduling Event.
 */
static int
gang_timeout(struct scheduler *sc, const struct json_object *pg, const char *label,
    int64_t wait_s)
{
	const struct dc_rtype *pt = core_type(sc->dc, "pods");
	const char *ns = kc_json_str(pg, "metadata", "namespace");
	const char *name = kc_json_str(pg, "metadata", "name");
	struct json_object **pods = NULL;
	size_t n = 0, k = 0;
	char msg[200], d[48];
	int r;

	if (pt == NULL || ns == NULL || name == NULL)
		return 0;
	if ((r = coll_list(pt->coll, ns, NULL, &pods, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		const char *g = kc_json_str(pods[i], "metadata", "labels", label);
		const char *node = kc_json_str(pods[i], "spec", "nodeName");
		const char *phase = kc_json_str(pods[i], "status", "phase");

		if (g != NULL && strcmp(g, name) == 0 && (node == NULL || *node == '\0') &&
		    kc_json_get(pods[i], "metadata", "deletionTimestamp") == NULL &&
		    (phase == NULL || strcmp(phase, "Pending") == 0))
			pods[k++] = pods[i];
		else
			json_object_put(pods[i]);
	}
	if (k > 1)
		qsort(pods, k, sizeof(*pods), pod_name_cmp);
	go_seconds(wait_s, d, sizeof(d));
	(void)snprintf(msg, sizeof(msg), "rejected due to timeout after waiting %s at "
	    "plugin Coscheduling", d);
	for (size_t i = 0; i < k && r >= 0; i++) {
		struct sched_unsched u = {
			.ns = (char *)(uintptr_t)ns,
			.name = (char *)(uintptr_t)kc_json_str(pods[i], "metadata", "name"),
			.reason = "Unschedulable",
			.message = i == 0 ? msg : (char *)(uintptr_t)"rejection in Unreserve",
		};

		r = unsched_pod(sc, &u);
	}
	objs_free(pods, k);
	return r;
}

/*
 * scheduleTimeoutSeconds: a gang whose PodGroup is Scheduling (or
 * PreScheduling) since status.scheduleStartTime and has fewer than
 * minMember pods bound times out every wait period after that start (its
 * wait restarts, as upstream's pods go back to the queue and wait again).
 * Returns 1 while some gang is still waiting (the loop keeps ticking).
 */
static int
podgroups_timeouts(struct scheduler *sc, const char *group, const char *label, time_t now)
{
	struct dc_coll *coll = storage_find_coll(sc->dc->store, group, "podgroups");
	const struct dc_rtype *rt = registry_find_any(sc->dc, group, "podgroups");
	const struct dc_rtype *pt = core_type(sc->dc, "pods");
	struct json_object **objs = NULL;
	int64_t *bound_by = NULL;
	size_t n = 0;
	int r = 0, waiting = 0;

	if (coll == NULL || rt == NULL || rt->coll != coll || pt == NULL)
		return 0;
	if ((r = coll_list(coll, NULL, NULL, &objs, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && r >= 0; i++) {
		const char *phase = kc_json_str(objs[i], "status", "phase");
		const char *start = kc_json_str(objs[i], "status", "scheduleStartTime");
		const char *ns = kc_json_str(objs[i], "metadata", "namespace");
		const char *name = kc_json_str(objs[i], "metadata", "name");
		int64_t min = kc_json_int(objs[i], 0, "spec", "minMember");
		int64_t wait_s = wait_seconds(objs[i]), bound = 0, periods;
		struct pg_wait *w;
		char key[600];
		time_t t0;

		if (phase == NULL || start == NULL || ns == NULL || name == NULL ||
		    (strcmp(phase, "Scheduling") != 0 && strcmp(phase, "PreScheduling") != 0) ||
		    kc_time_parse(start, &t0) < 0)
			continue;
		/* Every group's bound members, from the snapshot in one pass. */
		if (bound_by == NULL && ((bound_by = kc_calloc(n, sizeof(*bound_by))) == NULL ||
		    (r = sched_podgroups_bound(sc->s, objs, n, bound_by)) < 0)) {
			r = bound_by == NULL ? -ENOMEM : r;
			break;
		}
		bound = bound_by[i];
		if (bound >= min)
			continue;
		(void)snprintf(key, sizeof(key), "%s/%.250s/%.250s", group, ns, name);
		if ((w = wait_find(sc, key, start)) == NULL) {
			r = -ENOMEM;
			break;
		}
		waiting = 1;
		if (now < t0)
			continue;
		periods = wait_s > 0 ? (int64_t)(now - t0) / wait_s : INT64_MAX;
		if (periods <= w->periods)
			continue;
		w->periods = periods;
		r = gang_timeout(sc, objs[i], label, wait_s);
	}
	kc_free(bound_by);
	objs_free(objs, n);
	return r < 0 ? r : waiting;
}

/* Forgets the waits of gangs no longer waiting; clears the marks. */
static void
waits_sweep(struct scheduler *sc)
{
	size_t k = 0;

	for (size_t i = 0; i < sc->nwaits; i++)
		if (sc->waits[i].seen) {
			sc->waits[i].seen = false;
			sc->waits[k++] = sc->waits[i];
		}
	sc->nwaits = k;
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

/*
 * The timeouts of both groups; 1 while a gang waits.
 *
 * A scan lists every PodGroup and counts every gang's bound pods, and
 * its outcome is a function of whole seconds ('now', scheduleStartTime,
 * the wait: periods = (now - t0) / wait_s) and of the PodGroups and their
 * pods. So it runs at most once per wall-clock second: within the second
 * of the last scan, with nothing dirtied since (pod changes dirty their
 * PodGroup), another would find what it found. When something was
 * dirtied, the answer is "waiting", so the loop ticks again and scans in
 * a later second: a gang that starts waiting now has 0 periods, and one
 * due at once (a zero wait, an old scheduleStartTime) is rejected at most
 * a second late. waits_sweep() runs after real scans only, as it clears
 * the marks a scan sets.
 */
static int
timeouts(struct scheduler *sc)
{
	time_t now = kc_clock_wall();
	int a, b;

	if (sc->to_valid && now == sc->to_second)
		return sc->to_waiting || sc->pg_changed ? 1 : 0;
	sc->to_valid = false;
	sc->pg_changed = false;
	if ((a = podgroups_timeouts(sc, SCHED_PG_GROUP, SCHED_PG_LABEL, now)) < 0)
		return a;
	b = podgroups_timeouts(sc, SCHED_PG_GROUP_OLD, SCHED_PG_LABEL_OLD, now);
	waits_sweep(sc);
	if (b < 0)
		return b;
	sc->to_valid = true;
	sc->to_second = now;
	sc->to_waiting = a | b;
	return a | b;
}

static int64_t
sched_tick(void *arg)
{
	struct scheduler *sc = arg;
	struct sched_plan *p = NULL;
	uint64_t t0 = kc_clock_now_ms();
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
		if (r >= 0 && (r = timeouts(sc)) > 0)
			pending = true;
	} else
		pending = true;
	sc->ticking = false;
	sc->cost_ms = kc_clock_now_ms() - t0;
	if (r < 0)
		kc_log_debug(&(struct kc_log_ctx){ .action = "schedule" },
		    "applying the plan: %s", kc_strerror(r));
	if (sc->dirty)
		return (int64_t)delay_ms(sc);
	/* Pending pods: try again now and then, as the scheduler's backoff. */
	return pending ? SCHEDULER_RETRY_MS : DC_TIMER_STOP;
}

/*
 * The Priority admission plug-in, on pod creation: spec.priority (and
 * spec.preemptionPolicy when the class says Never) from the PriorityClass
 * named by spec.priorityClassName, or from the globalDefault class when it
 * names none (else 0); the two system classes are known even when not
 * stored. 403 "no PriorityClass with name X was found" otherwise.
 */
static int
priority_admit(struct dc *dc, struct json_object *pod, struct kc_status *st)
{
	const struct dc_rtype *pc = registry_find(dc, "scheduling.k8s.io", "v1",
	    "priorityclasses");
	struct json_object *spec = kc_json_ensure_obj(pod, "spec"), **objs = NULL;
	const char *cls = kc_json_str(pod, "spec", "priorityClassName");
	const char *name = kc_json_str(pod, "metadata", "name");
	const struct json_object *c = NULL;
	int64_t value = 0;
	size_t n = 0;
	int r;

	if (spec == NULL)
		return -ENOMEM;
	if (pc == NULL)
		return 0;
	if (cls == NULL || *cls == '\0') {
		if ((r = coll_list(pc->coll, NULL, NULL, &objs, &n)) < 0)
			return r;
		for (size_t i = 0; i < n && c == NULL; i++)
			if (json_object_get_boolean(kc_json_get(objs[i], "globalDefault")))
				c = objs[i];
		if (c != NULL && (r = kc_json_set_str(spec, "priorityClassName",
		    kc_json_str(c, "metadata", "name"))) < 0) {
			objs_free(objs, n);
			return r;
		}
	} else if ((c = coll_get(pc->coll, "", cls)) == NULL) {
		if (strcmp(cls, "system-cluster-critical") == 0)
			value = 2000000000;
		else if (strcmp(cls, "system-node-critical") == 0)
			value = 2000001000;
		else
			return kc_status_set(st, KC_EFORBIDDEN, "pods \"%s\" is forbidden: no "
			    "PriorityClass with name %s was found", name != NULL ? name : "", cls);
	}
	if (c != NULL) {
		const char *pp = kc_json_str(c, "preemptionPolicy");

		value = kc_json_int(c, 0, "value");
		if (pp != NULL && (r = kc_json_set_str(spec, "preemptionPolicy", pp)) < 0) {
			objs_free(objs, n);
			return r;
		}
	}
	r = kc_json_set_int(spec, "priority", value);
	objs_free(objs, n);
	return r;
}

static int
scheduler_admit(struct dc_write_ctx *wc, struct json_object *obj, struct kc_status *st)
{
	if (wc->op == DC_OP_CREATE && wc->subresource == NULL && wc->rt->group[0] == '\0' &&
	    strcmp(wc->rt->plural, "pods") == 0)
		return priority_admit(wc->dc, obj, st);
	return 0;
}

/* The namespaced, create-only bindings resource of the core group. */
static const struct dc_type_ops binding_ops = { 0 };

static const struct dc_rtype_def binding_type = {
	.group = "", .version = "v1", .plural = "bindings", .singular = "binding",
	.kind = "Binding", .namespaced = true, .verbs = DC_VERB_CREATE,
	.ops = &binding_ops, .group_priority = 18000,
};

int
scheduler_init(struct dc *dc, const char *cosched_name)
{
	struct scheduler *sc;
	int r;

	if (registry_find(dc, "", "v1", "bindings") == NULL &&
	    (r = registry_add(dc, &binding_type, NULL)) < 0)
		return r;
	dc->hooks.binding = binding_handle;
	if ((sc = kc_calloc(1, sizeof(*sc))) == NULL)
		return -ENOMEM;
	sc->dc = dc;
	/* Restored objects come without events: the first sync takes all. */
	for (size_t g = 0; g < PG_NGROUPS; g++)
		sc->pgdirty[g].all = true;
	sc->pg_changed = true;
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
	plugin_set_state(dc, &scheduler_plugin, sc);
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
	struct scheduler *sc = plugin_state(dc, &scheduler_plugin);

	if (sc == NULL)
		return;
	timer_cancel(&sc->timer);
	storage_unsubscribe(dc->store, on_event, sc);
	(void)sched_free(sc->s);
	kc_free(sc->waits);
	for (size_t g = 0; g < PG_NGROUPS; g++) {
		dirty_forget(&sc->pgdirty[g], sc->pgdirty[g].n, NULL);
		kc_free(sc->pgdirty[g].keys);
	}
	kc_free(sc);
	plugin_set_state(dc, &scheduler_plugin, NULL);
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
			if (!json_object_is_type(items, json_type_array))
				continue;
			for (size_t j = 0; j < json_object_array_length(items) && r >= 0; j++)
				r = load_node(dc, json_object_array_get_idx(items, j), st);
		} else
			r = load_node(dc, d, st);
	}
	json_object_put(docs);
	return r;
}

/* The scheduler, then the --nodes file's Nodes. */
static int
scheduler_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	int r;

	if ((r = scheduler_init(dc, cfg != NULL ? cfg->cosched_name : NULL)) < 0)
		return r;
	if (cfg != NULL && cfg->nodes_file != NULL)
		return scheduler_load_nodes(dc, cfg->nodes_file, st);
	return 0;
}

/* Admission: Priority (plugins.c has the chain's order). */
const struct dc_plugin scheduler_plugin = {
	.name = "scheduler",
	.init = scheduler_start,
	.fini = scheduler_fini,
	.admit = scheduler_admit,
};

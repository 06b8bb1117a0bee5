/*
 * session.c: the session rules, the reasons table and the status-write
 * policy (session.h).
 *
 * session_decide() is a pure function of the Run (spec and status), what
 * the caches show, and the clock. The Run's status is the controller's
 * memory: status.session is the current session, sessionEndTime says
 * whether it ended, allPodsCreated says whether every pod was seen once
 * (after that a missing pod was deleted by someone), phase Running says
 * the gang was complete once. From there:
 *
 *	active session	end it when the user asks (a higher spec.session,
 *			suspend), a pod failed or was taken (preempted, evicted,
 *			node lost, deleted), all pods succeeded, the deadline
 *			passed or the schedule timeout did; otherwise create what
 *			is missing, PodGroup, Service and NetworkPolicy first and
 *			the pods once those exist, and delete objects of older
 *			sessions.
 *	ending		record phase, reason, message, failedNodes and history,
 *			then continue as idle in the same decision.
 *	idle		delete whatever still exists; once nothing does
 *			(CleanedUp), start the next session if the user asked
 *			for one or the restart policy allows it after backoff.
 *
 * When several pods failed, the root cause is reported: the reasons
 * table's order (a preemption, a lost node, an eviction or a deletion
 * before an exit code: the other nodes usually exit because a peer
 * disappeared), and a lower index before a higher one.
 *
 * Every reason's name, phase, Event and restart class is a row of
 * ty_reasons[]; no other place spells them. The write policy runs last
 * (write_policy()): it turns "the status changed" into "write it now",
 * "hold everything" or "look again after T".
 *
 * Conditions follow metav1.Condition and meta.SetStatusCondition():
 * lastTransitionTime changes only when the status does.
 *
 * Events mark what the status alone does not say as well: SessionStarted,
 * the end (SessionSucceeded, SessionStopped, or the failure reason as a
 * Warning), RestartScheduled and InvalidSpec. Reaching Running has none:
 * the phase and the Running condition's lastTransitionTime record it, and
 * each Event is an API write of every session (docs/api.md, "Events").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/hash.h>
#include <kc/json.h>
#include <kc/str.h>

#include "config.h"
#include "model.h"
#include "quota.h"
#include "session.h"

#define MSG_MAX		1024	/* status.message and condition messages */
#define NAME_FIELD_MAX	253

static int64_t
time_of(const char *s)
{
	time_t t;

	if (s == NULL || kc_time_parse(s, &t) < 0)
		return 0;
	return (int64_t)t;
}

/* ------------------------------------------------------------------ */
/* Decision state */

/* The lifecycle's reasons (session.h); every string of them is here. */
const struct ty_reason_row ty_reasons[TY_REASON_N] = {
	[TY_REASON_NONE] = { "", "", false, "", TY_RESTARTS_NEVER, false },
	[TY_REASON_PREEMPTED] = { "Preempted", "Failed", true, "Preempted",
	    TY_RESTARTS_ON_PREEMPTION, false },
	[TY_REASON_NODE_LOST] = { "NodeLost", "Failed", true, "NodeLost",
	    TY_RESTARTS_ON_PREEMPTION, false },
	[TY_REASON_EVICTED] = { "Evicted", "Failed", true, "Evicted",
	    TY_RESTARTS_ON_PREEMPTION, false },
	[TY_REASON_POD_DELETED] = { "PodDeleted", "Failed", true, "PodDeleted",
	    TY_RESTARTS_ON_FAILURE, true },
	[TY_REASON_POD_FAILED] = { "PodFailed", "Failed", true, "PodFailed",
	    TY_RESTARTS_ON_FAILURE, false },
	[TY_REASON_DEADLINE] = { "DeadlineExceeded", "Failed", true, "DeadlineExceeded",
	    TY_RESTARTS_NEVER, false },
	[TY_REASON_UNSCHEDULABLE] = { "Unschedulable", "Failed", true, "Unschedulable",
	    TY_RESTARTS_NEVER, false },
	[TY_REASON_SUCCEEDED] = { "Succeeded", "Succeeded", false, "SessionSucceeded",
	    TY_RESTARTS_NEVER, false },
	[TY_REASON_SUSPENDED] = { "Suspended", "Stopped", false, "SessionStopped",
	    TY_RESTARTS_NEVER, false },
	[TY_REASON_PROJECT_SUSPENDED] = { "ProjectSuspended", "Stopped", false,
	    "SessionStopped", TY_RESTARTS_NEVER, false },
	[TY_REASON_PROJECT_DELETED] = { "ProjectDeleted", "Stopped", false, "SessionStopped",
	    TY_RESTARTS_NEVER, false },
	[TY_REASON_NEW_SESSION] = { "NewSession", "Stopped", false, "SessionStopped",
	    TY_RESTARTS_NEVER, false },
	[TY_REASON_INVALID_SPEC] = { "InvalidSpec", "Failed", true, "InvalidSpec",
	    TY_RESTARTS_NEVER, false },
	[TY_REASON_NAME_CONFLICT] = { "NameConflict", "Failed", true, "NameConflict",
	    TY_RESTARTS_NEVER, false },
	[TY_REASON_POD_SECURITY] = { "PodSecurity", "Failed", true, "PodSecurity",
	    TY_RESTARTS_NEVER, false },
};

const struct ty_reason_row *
session_reason(const char *name)
{
	for (int i = 1; name != NULL && i < TY_REASON_N; i++)
		if (strcmp(ty_reasons[i].name, name) == 0)
			return &ty_reasons[i];
	return NULL;
}

/* A row's name. */
#define R(x)	(ty_reasons[TY_REASON_##x].name)

struct old {
	const char	*phase, *reason;
	int64_t		 session, restarts, total;
	int64_t		 start, end;		/* epoch s; 0 none */
	bool		 all_created;
};

struct counts {
	int32_t		 total, present, pending, running, succeeded, failed;
	int32_t		 ready, scheduled;
};

struct dctx {
	const struct ty_session_in *in;
	struct ty_decision	*d;
	struct old		 old;
	struct json_object	*st;		/* the new status */
	const struct ty_pod	**byindex;	/* current session's pods by index */
	struct counts		 n;
	int64_t			 now;		/* epoch s */
	size_t			 maxdel;
	enum ty_reason		 ended;		/* the session ended now, why */
	bool			 vanished;	/* a child of a started session is gone */
	bool			 quota_said;	/* the quota's fields are set */
};

static bool
eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static int
event(struct dctx *c, bool warning, const char *reason, const char *fmt, ...)
    _printf_(4, 5);

static int
event(struct dctx *c, bool warning, const char *reason, const char *fmt, ...)
{
	struct ty_event *e;
	va_list ap;

	if (c->d->nevents == TY_EVENTS_MAX)
		return 0;
	e = &c->d->events[c->d->nevents++];
	e->warning = warning;
	kc_strlcpy(e->reason, reason, sizeof(e->reason));
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return 0;
}

static void
next_check(struct dctx *c, int64_t at_s)
{
	uint64_t ms = (uint64_t)at_s * 1000;

	if (at_s <= 0)
		return;
	if (c->d->next_check_ms == 0 || ms < c->d->next_check_ms)
		c->d->next_check_ms = ms;
}

static int
set_time(struct json_object *o, const char *key, int64_t t)
{
	char buf[KC_TIME_MAX];

	if (kc_time_format((time_t)t, buf, sizeof(buf)) < 0)
		return -EINVAL;
	return kc_json_set_str(o, key, buf);
}

static void
read_old(struct dctx *c)
{
	const struct json_object *s = kc_json_get(c->in->run, "status");

	c->old.phase = kc_json_str(s, "phase");
	c->old.reason = kc_json_str(s, "reason");
	c->old.session = KC_MAX(kc_json_int(s, 0, "session"), 0);
	c->old.restarts = KC_MAX(kc_json_int(s, 0, "restarts"), 0);
	c->old.total = kc_json_int(s, 0, "nodes", "total");
	c->old.start = time_of(kc_json_str(s, "sessionStartTime"));
	c->old.end = time_of(kc_json_str(s, "sessionEndTime"));
	c->old.all_created = kc_json_bool(s, false, "allPodsCreated");
	if (c->old.total < 1 || c->old.total > TY_NODES_MAX)
		c->old.total = c->in->spec != NULL ? c->in->spec->nodes : 0;
	if (c->old.session > 0 && c->old.end == 0 && c->old.start == 0)
		c->old.start = c->now;
}

/* ------------------------------------------------------------------ */
/* Conditions */

static struct json_object *
condition_find(struct json_object *conds, const char *type)
{
	for (size_t i = 0; i < json_object_array_length(conds); i++)
		if (eq(kc_json_str(json_object_array_get_idx(conds, i), "type"), type))
			return json_object_array_get_idx(conds, i);
	return NULL;
}

static int
set_condition(struct dctx *c, const char *type, bool status, const char *reason,
    const char *fmt, ...) _printf_(5, 6);

static int
set_condition(struct dctx *c, const char *type, bool status, const char *reason,
    const char *fmt, ...)
{
	struct json_object *conds = kc_json_arr_of(c->st, "conditions"), *cond;
	const char *sv = status ? "True" : "False";
	char msg[MSG_MAX];
	va_list ap;
	int r;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (conds == NULL && ((r = kc_json_put(c->st, "conditions",
	    json_object_new_array())) < 0 || (conds = kc_json_arr_of(c->st,
	    "conditions")) == NULL))
		return -ENOMEM;
	if ((cond = condition_find(conds, type)) == NULL) {
		if ((r = kc_json_append(conds, cond = json_object_new_object())) < 0 ||
		    (r = kc_json_set_str(cond, "type", type)) < 0)
			return r;
	}
	if (!eq(kc_json_str(cond, "status"), sv) &&
	    ((r = kc_json_set_str(cond, "status", sv)) < 0 ||
	    (r = set_time(cond, "lastTransitionTime", c->now)) < 0))
		return r;
	if ((r = kc_json_set_int(cond, "observedGeneration", c->in->ctl->generation)) < 0 ||
	    (r = kc_json_set_str(cond, "reason", reason)) < 0 ||
	    (r = kc_json_set_str(cond, "message", msg)) < 0)
		return r;
	return 0;
}

static int
conditions_always(struct dctx *c)
{
	const struct ty_session_in *in = c->in;
	char text[MSG_MAX];
	int r;

	if (in->spec != NULL)
		r = set_condition(c, "Valid", true, "Valid", "the spec is valid");
	else {
		if (in->problems != NULL)
			model_problems_text(in->problems, text, sizeof(text));
		else
			kc_strlcpy(text, "the spec is invalid", sizeof(text));
		r = set_condition(c, "Valid", false, R(INVALID_SPEC), "%s", text);
	}
	if (r < 0)
		return r;
	if (in->api != TY_PODGROUP_NONE)
		return set_condition(c, "GangScheduling", true, "PodGroup", "all nodes are "
		    "scheduled together by %s (PodGroup %s)", in->cfg->scheduler_name,
		    model_podgroup_api_version(in->api));
	if (in->cfg->podgroup_api == TY_PODGROUP_NONE)
		return set_condition(c, "GangScheduling", false, "Disabled", "gang "
		    "scheduling is turned off in the controller config (podGroupAPI: none)");
	return set_condition(c, "GangScheduling", false, "NoPodGroupAPI", "no PodGroup "
	    "API (scheduling.x-k8s.io or scheduling.sigs.k8s.io) is installed: nodes "
	    "are scheduled one by one, so a run may hold some nodes while it waits "
	    "for the others");
}

/* ------------------------------------------------------------------ */
/* Deletes and creates */

static int
add_delete(struct dctx *c, enum ty_kind kind, const char *name, const char *uid)
{
	struct ty_delete *del;

	if (c->d->ndeletes == c->maxdel)
		return -ENOMEM;
	del = &c->d->deletes[c->d->ndeletes++];
	del->kind = kind;
	kc_strlcpy(del->name, name, sizeof(del->name));
	kc_strlcpy(del->uid, uid != NULL ? uid : "", sizeof(del->uid));
	del->unseen_index = -1;
	return 0;
}

static const char *
run_name(const struct dctx *c)
{
	const char *n = kc_json_str(c->in->run, "metadata", "name");

	return n != NULL ? n : "";
}

/* Deletes the children and pods not of 'keep' (-1: all); counts what exists. */
static int
delete_except(struct dctx *c, int64_t keep, size_t *remaining)
{
	const struct ty_child *ch[] = { &c->in->podgroup, &c->in->service, &c->in->netpol };
	const enum ty_kind kinds[] = { TY_KIND_PODGROUP, TY_KIND_SERVICE, TY_KIND_NETPOL };
	char uid[TY_UID_TEXT_MAX];
	int r;

	*remaining = 0;
	for (size_t i = 0; i < KC_ARRAY_SIZE(ch); i++) {
		if (!ch[i]->exists || (keep >= 0 && ch[i]->session == keep))
			continue;
		(*remaining)++;
		if (!ch[i]->deleting && (r = add_delete(c, kinds[i], run_name(c),
		    ch[i]->uid)) < 0)
			return r;
	}
	for (size_t i = 0; i < c->in->npods; i++) {
		const struct ty_pod *p = c->in->pods[i];

		if (keep >= 0 && p->session == keep)
			continue;
		(*remaining)++;
		if (!p->deleting && (r = add_delete(c, TY_KIND_POD, ty_pod_str(p, TY_POD_NAME),
		    ty_pod_uid(p, TY_POD_UID, uid, sizeof(uid)))) < 0)
			return r;
	}
	/*
	 * Pods created for the session that the cache does not show yet
	 * exist all the same: deleted by name (their names are the Run's,
	 * and no other session's pod may exist before this cleanup ends), and
	 * counted until a delete finds them gone or the cache shows them.
	 */
	for (size_t i = 0; keep < 0 && i < c->in->nexpected; i++) {
		char name[sizeof(c->d->deletes[0].name)];

		if ((size_t)snprintf(name, sizeof(name), "%s-%d", run_name(c),
		    c->in->expected[i]) >= sizeof(name))
			continue;
		(*remaining)++;
		if ((r = add_delete(c, TY_KIND_POD, name, NULL)) < 0)
			return r;
		c->d->deletes[c->d->ndeletes - 1].unseen_index = c->in->expected[i];
	}
	return 0;
}

static bool
is_expected(const struct dctx *c, int32_t index)
{
	for (size_t i = 0; i < c->in->nexpected; i++)
		if (c->in->expected[i] == index)
			return true;
	return false;
}

/* Creates the session's missing children; true when all of them exist. */
static bool
create_children(struct dctx *c)
{
	const struct ty_child *ch[] = { &c->in->podgroup, &c->in->service, &c->in->netpol };
	bool *create[] = { &c->d->create_podgroup, &c->d->create_service,
	    &c->d->create_netpol };
	bool ready = true;

	for (size_t i = 0; i < KC_ARRAY_SIZE(ch); i++) {
		if (i == 0 && c->in->api == TY_PODGROUP_NONE)
			continue;
		if (!ch[i]->exists)
			*create[i] = true;
		if (!ch[i]->exists || ch[i]->deleting || ch[i]->session != c->old.session)
			ready = false;
	}
	return ready;
}

static int
create_pods(struct dctx *c)
{
	for (int32_t i = 0; i < c->n.total; i++)
		if (c->byindex[i] == NULL && !is_expected(c, i))
			c->d->create_pods[c->d->ncreate_pods++] = i;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Counting and failures */

static void
count_pods(struct dctx *c)
{
	struct counts *n = &c->n;

	memset(n, 0, sizeof(*n));
	n->total = (int32_t)c->old.total;
	for (size_t i = 0; i < c->in->npods; i++) {
		const struct ty_pod *p = c->in->pods[i];

		if (p->session != c->old.session || p->index < 0 || p->index >= n->total ||
		    c->byindex[p->index] != NULL)
			continue;
		c->byindex[p->index] = p;
		n->present++;
		n->running += p->phase == TY_POD_RUNNING;
		n->succeeded += p->phase == TY_POD_SUCCEEDED;
		n->failed += p->phase == TY_POD_FAILED;
		n->ready += p->ready;
		n->scheduled += p->scheduled;
	}
	n->pending = n->total - n->running - n->succeeded - n->failed;
}

static const char *
node_of(const struct ty_pod *p)
{
	const char *node = p != NULL ? ty_pod_str(p, TY_POD_NODE) : NULL;

	return node != NULL ? node : "an unknown machine";
}

static enum ty_reason
classify_disruption(const struct ty_pod *p, char *msg, size_t size)
{
	const char *d = ty_pod_str(p, TY_POD_DISRUPTION), *pmsg = ty_pod_str(p, TY_POD_MESSAGE);

	if (eq(d, "PreemptionByScheduler") || eq(d, "PreemptionByKubeScheduler")) {
		snprintf(msg, size, "node %d (pod %s on %s) was preempted by a "
		    "higher-priority workload", p->index, ty_pod_str(p, TY_POD_NAME),
		    node_of(p));
		return TY_REASON_PREEMPTED;
	}
	if (eq(d, "DeletionByPodGC")) {
		snprintf(msg, size, "node %d lost its machine %s (the node is gone)",
		    p->index, node_of(p));
		return TY_REASON_NODE_LOST;
	}
	if (eq(d, "DeletionByTaintManager"))
		snprintf(msg, size, "node %d was evicted from %s, which is not ready or "
		    "unreachable", p->index, node_of(p));
	else if (eq(d, "EvictionByEvictionAPI"))
		snprintf(msg, size, "node %d was evicted from %s (a drain or the eviction "
		    "API)", p->index, node_of(p));
	else
		snprintf(msg, size, "node %d was stopped on %s (%s)%s%s", p->index,
		    node_of(p), d, pmsg != NULL ? ": " : "", pmsg != NULL ? pmsg : "");
	return TY_REASON_EVICTED;
}

static enum ty_reason
classify(const struct ty_pod *p, char *msg, size_t size)
{
	const char *name = ty_pod_str(p, TY_POD_NAME), *reason = ty_pod_str(p, TY_POD_REASON);
	const char *pmsg = ty_pod_str(p, TY_POD_MESSAGE);
	const char *treason = ty_pod_str(p, TY_POD_TERM_REASON);

	if (ty_pod_str(p, TY_POD_DISRUPTION) != NULL)
		return classify_disruption(p, msg, size);
	if (p->phase == TY_POD_FAILED && eq(reason, "NodeLost")) {
		snprintf(msg, size, "node %d lost its machine %s", p->index, node_of(p));
		return TY_REASON_NODE_LOST;
	}
	if (p->phase == TY_POD_FAILED && (eq(reason, "Evicted") ||
	    eq(reason, "Shutdown") || eq(reason, "Terminated"))) {
		snprintf(msg, size, "node %d was evicted from %s: %s", p->index, node_of(p),
		    pmsg != NULL ? pmsg : reason);
		return TY_REASON_EVICTED;
	}
	/*
	 * Deleted by someone (no DisruptionTarget): the kubelet's 143 or 137
	 * is the deletion's doing, not the program's.
	 */
	if (p->deleting && (p->phase != TY_POD_FAILED || p->exit_code == 143 ||
	    p->exit_code == 137 || p->exit_code < 0)) {
		snprintf(msg, size, "the pod of node %d (%s) was deleted", p->index, name);
		return TY_REASON_POD_DELETED;
	}
	if (p->phase == TY_POD_FAILED && p->exit_code >= 0) {
		snprintf(msg, size, "node %d exited with code %d (%s)", p->index,
		    p->exit_code, treason != NULL ? treason : "Error");
		return TY_REASON_POD_FAILED;
	}
	if (p->phase == TY_POD_FAILED) {
		snprintf(msg, size, "node %d failed on %s: %s", p->index, node_of(p),
		    pmsg != NULL ? pmsg : reason != NULL ? reason : "no reason given");
		return TY_REASON_POD_FAILED;
	}
	if (p->deleting) {
		snprintf(msg, size, "the pod of node %d (%s) was deleted", p->index, name);
		return TY_REASON_POD_DELETED;
	}
	return TY_REASON_NONE;
}

struct failure {
	enum ty_reason	 cls;
	int32_t		 index;
	int32_t		 count;
	char		 msg[MSG_MAX];
};

static void
missing_failure(const struct dctx *c, int32_t i, char *msg, size_t size)
{
	snprintf(msg, size, "the pod of node %d (%s-%d) was deleted", i, run_name(c), i);
}

/* The last view of node i's pod if it left the cache, or NULL. */
static const struct ty_pod *
gone_pod(const struct dctx *c, int32_t i)
{
	for (size_t k = 0; c->in->gone != NULL && k < c->in->ngone; k++) {
		const struct ty_pod *p = c->in->gone[k];

		if (p->index == i && p->session == c->old.session)
			return p;
	}
	return NULL;
}

/*
 * Why node i's pod is missing: what its last view says (preempted, node
 * lost, evicted, exited), else deleted. TY_REASON_NONE when it may just not be
 * created or seen yet.
 */
static enum ty_reason
classify_missing(const struct dctx *c, int32_t i, char *msg, size_t size)
{
	const struct ty_pod *p = gone_pod(c, i);
	enum ty_reason cls;

	if (p != NULL && (cls = classify(p, msg, size)) != TY_REASON_NONE)
		return cls;
	if (p == NULL && (!c->old.all_created || is_expected(c, i)))
		return TY_REASON_NONE;
	missing_failure(c, i, msg, size);
	return TY_REASON_POD_DELETED;
}

/* The root-cause failure of the session, if any. */
static void
find_failure(const struct dctx *c, struct failure *f)
{
	char msg[MSG_MAX];
	enum ty_reason cls;

	memset(f, 0, sizeof(*f));
	for (int32_t i = 0; i < c->n.total; i++) {
		const struct ty_pod *p = c->byindex[i];

		if (p != NULL)
			cls = classify(p, msg, sizeof(msg));
		else
			cls = classify_missing(c, i, msg, sizeof(msg));
		if (cls == TY_REASON_NONE)
			continue;
		f->count++;
		if (f->cls == TY_REASON_NONE || cls < f->cls) {
			f->cls = cls;
			f->index = i;
			kc_strlcpy(f->msg, msg, sizeof(f->msg));
		}
	}
}

static int
failed_node(struct dctx *c, struct json_object *list, int32_t i)
{
	const struct ty_pod *p = c->byindex[i];
	struct json_object *e = json_object_new_object();
	const char *node, *treason, *tmsg;
	char msg[MSG_MAX], name[80];
	enum ty_reason cls;
	int r;

	if (e == NULL)
		return -ENOMEM;
	if ((r = kc_json_append(list, e)) < 0 || (r = kc_json_set_int(e, "index", i)) < 0)
		return r;
	if (p == NULL && (p = gone_pod(c, i)) != NULL &&
	    classify(p, msg, sizeof(msg)) == TY_REASON_NONE)
		p = NULL;	/* its last view shows no failure: deleted */
	if (p == NULL) {
		missing_failure(c, i, msg, sizeof(msg));
		snprintf(name, sizeof(name), "%s-%d", run_name(c), i);
		if ((r = kc_json_set_str(e, "pod", name)) < 0 ||
		    (r = kc_json_set_str(e, "reason", "PodDeleted")) < 0)
			return r;
		return kc_json_set_str(e, "message", msg);
	}
	cls = classify(p, msg, sizeof(msg));
	node = ty_pod_str(p, TY_POD_NODE);
	treason = ty_pod_str(p, TY_POD_TERM_REASON);
	tmsg = ty_pod_str(p, TY_POD_TERM_MESSAGE);
	if ((r = kc_json_set_str(e, "pod", ty_pod_str(p, TY_POD_NAME))) < 0 ||
	    (node != NULL && (r = kc_json_set_str(e, "node", node)) < 0) ||
	    (p->exit_code >= 0 && (r = kc_json_set_int(e, "exitCode", p->exit_code)) < 0) ||
	    (r = kc_json_set_str(e, "reason", cls == TY_REASON_POD_FAILED && treason != NULL ?
	    treason : ty_reasons[cls].name)) < 0)
		return r;
	return kc_json_set_str(e, "message", cls == TY_REASON_POD_FAILED && tmsg != NULL ? tmsg : msg);
}

static int
failed_nodes(struct dctx *c)
{
	struct json_object *list = json_object_new_array();
	char msg[MSG_MAX];
	int r;

	if ((r = kc_json_put(c->st, "failedNodes", list)) < 0)
		return r;
	for (int32_t i = 0; i < c->n.total; i++) {
		const struct ty_pod *p = c->byindex[i];
		bool failed = p != NULL ? classify(p, msg, sizeof(msg)) != TY_REASON_NONE :
		    classify_missing(c, i, msg, sizeof(msg)) != TY_REASON_NONE;

		if (!failed)
			continue;
		if (json_object_array_length(list) == TY_FAILED_NODES_MAX)
			break;
		if ((r = failed_node(c, list, i)) < 0)
			return r;
	}
	if (json_object_array_length(list) == 0)
		json_object_object_del(c->st, "failedNodes");
	return 0;
}

/* ------------------------------------------------------------------ */
/* Status pieces */

static int
put_counts(struct dctx *c)
{
	struct json_object *nodes = json_object_new_object();
	char ready[32];
	int r;

	if ((r = kc_json_put(c->st, "nodes", nodes)) < 0 ||
	    (r = kc_json_set_int(nodes, "total", c->n.total)) < 0 ||
	    (r = kc_json_set_int(nodes, "pending", c->n.pending)) < 0 ||
	    (r = kc_json_set_int(nodes, "running", c->n.running)) < 0 ||
	    (r = kc_json_set_int(nodes, "succeeded", c->n.succeeded)) < 0 ||
	    (r = kc_json_set_int(nodes, "failed", c->n.failed)) < 0)
		return r;
	snprintf(ready, sizeof(ready), "%d/%d", c->n.ready, c->n.total);
	return kc_json_set_str(c->st, "readyNodes", ready);
}

static int
push_history(struct dctx *c, const char *phase, const char *reason)
{
	struct json_object *h = kc_json_arr_of(c->st, "history"), *nh, *e;
	size_t n = h != NULL ? json_object_array_length(h) : 0;
	int r;

	if ((nh = json_object_new_array()) == NULL)
		return -ENOMEM;
	for (size_t i = n >= TY_HISTORY_MAX ? n - TY_HISTORY_MAX + 1 : 0; i < n; i++)
		if ((r = kc_json_append(nh, kc_json_copy(json_object_array_get_idx(h,
		    i)))) < 0)
			goto fail;
	if ((r = kc_json_append(nh, e = json_object_new_object())) < 0 ||
	    (r = kc_json_set_int(e, "session", c->old.session)) < 0 ||
	    (r = set_time(e, "startTime", c->old.start)) < 0 ||
	    (r = set_time(e, "endTime", c->now)) < 0 ||
	    (r = kc_json_set_str(e, "phase", phase)) < 0 ||
	    (r = kc_json_set_str(e, "reason", reason)) < 0)
		goto fail;
	return kc_json_put(c->st, "history", nh);
fail:
	json_object_put(nh);
	return r;
}

static bool
restart_class(enum ty_restart_policy policy, const char *reason)
{
	const struct ty_reason_row *row = session_reason(reason);

	if (policy == TY_RESTART_NEVER || row == NULL)
		return false;
	return row->restarts == TY_RESTARTS_ON_PREEMPTION ||
	    (row->restarts == TY_RESTARTS_ON_FAILURE && policy == TY_RESTART_ON_FAILURE);
}

static bool
restart_allowed(const struct dctx *c, const char *phase, const char *reason)
{
	return eq(phase, "Failed") && restart_class(c->in->ctl->restart_policy, reason) &&
	    c->old.restarts < c->in->ctl->max_restarts;
}

static int64_t
backoff_s(const struct dctx *c)
{
	uint64_t ms = c->in->cfg->restart_backoff_base_ms;

	for (int64_t i = 0; i < c->old.restarts && ms < c->in->cfg->restart_backoff_max_ms;
	    i++)
		ms *= 2;
	ms = KC_MIN(ms, c->in->cfg->restart_backoff_max_ms);
	return (int64_t)((ms + 999) / 1000);
}

/* ------------------------------------------------------------------ */
/* Ending a session */

static int
end_event(struct dctx *c, const struct ty_reason_row *row, const char *msg)
{
	static const char *const verb[] = { "succeeded", "stopped", "failed" };
	int v = eq(row->phase, "Succeeded") ? 0 : eq(row->phase, "Stopped") ? 1 : 2;

	event(c, row->warning, row->event, "session %" PRId64 " %s: %s", c->old.session,
	    verb[v], msg);
	if (restart_allowed(c, row->phase, row->name))
		event(c, false, "RestartScheduled", "session %" PRId64 " starts in %" PRId64
		    "s (restart %" PRId64 " of %" PRId64 ")", c->old.session + 1,
		    backoff_s(c), c->old.restarts + 1, c->in->ctl->max_restarts);
	return 0;
}

static int
end_session(struct dctx *c, enum ty_reason why, const char *msg)
{
	const struct ty_reason_row *row = &ty_reasons[why];
	int r;

	if ((r = kc_json_set_str(c->st, "phase", row->phase)) < 0 ||
	    (r = kc_json_set_str(c->st, "reason", row->name)) < 0 ||
	    (r = kc_json_set_str(c->st, "message", msg)) < 0 ||
	    (r = set_time(c->st, "sessionEndTime", c->now)) < 0 ||
	    (r = put_counts(c)) < 0 || (r = failed_nodes(c)) < 0 ||
	    (r = push_history(c, row->phase, row->name)) < 0)
		return r;
	if ((r = set_condition(c, "Running", false, "SessionEnded", "session %" PRId64
	    " ended", c->old.session)) < 0 ||
	    (r = set_condition(c, "Finished", true, row->name, "%s", msg)) < 0)
		return r;
	end_event(c, row, msg);
	c->ended = why;
	c->old.end = c->now;
	c->old.phase = kc_json_str(c->st, "phase");
	c->old.reason = kc_json_str(c->st, "reason");
	return 0;
}

static void
unschedulable_msg(const struct dctx *c, char *msg, size_t size)
{
	const struct ty_pod *why = NULL;
	int32_t missing = c->n.total - c->n.present;
	size_t len;

	for (int32_t i = 0; i < c->n.total && why == NULL; i++)
		if (c->byindex[i] != NULL &&
		    ty_pod_str(c->byindex[i], TY_POD_SCHED_MESSAGE) != NULL)
			why = c->byindex[i];
	len = (size_t)snprintf(msg, size, "%d of %d nodes running after %" PRId64 "s "
	    "(%s); %d pending", c->n.running + c->n.succeeded, c->n.total,
	    c->in->ctl->schedule_timeout_s, c->in->ctl->v1beta1 ?
	    "deadlines.schedulingSeconds" : "scheduleTimeoutSeconds", c->n.pending);
	if (missing > 0 && len < size)
		len += (size_t)snprintf(msg + len, size - len, ", %d of them not created",
		    missing);
	if (why != NULL && len < size)
		snprintf(msg + len, size - len, "; node %d: %s", why->index,
		    ty_pod_str(why, TY_POD_SCHED_MESSAGE));
}

/*
 * Whether the API server refused a pod of the session for Pod Security
 * (struct ty_refusal): its message into 'msg'.
 */
static bool
pod_security_refused(const struct dctx *c, char *msg, size_t size)
{
	const struct ty_refusal *f = c->in->refused;

	if (f == NULL || f->failures == 0 || f->session != c->old.session ||
	    strncmp(f->message, "Error creating Pod ", 19) != 0 ||
	    strstr(f->message, " is forbidden: violates PodSecurity \"") == NULL)
		return false;
	snprintf(msg, size, "%s", f->message);
	return true;
}

/* Why the active session ends now (and the message), or TY_REASON_NONE. */
static enum ty_reason
session_ends(struct dctx *c, char *msg, size_t size)
{
	const struct ty_control *ctl = c->in->ctl;
	struct failure f;

	if (ctl->session > c->old.session) {
		snprintf(msg, size, "spec.session asks for session %" PRId64, ctl->session);
		return TY_REASON_NEW_SESSION;
	}
	if (ctl->suspend) {
		snprintf(msg, size, "suspended (spec.suspend is true)");
		return TY_REASON_SUSPENDED;
	}
	if (c->in->quota != NULL && c->in->quota->stop) {
		snprintf(msg, size, "%s", c->in->quota->message);
		return c->in->quota->stop_reason;
	}
	if (c->in->conflict != NULL && c->in->conflict->session == c->old.session) {
		snprintf(msg, size, "%s", c->in->conflict->message);
		return TY_REASON_NAME_CONFLICT;
	}
	if (pod_security_refused(c, msg, size))
		return TY_REASON_POD_SECURITY;
	find_failure(c, &f);
	if (f.cls != TY_REASON_NONE) {
		if (f.count > 1)
			snprintf(msg, size, "%.900s; %d more node%s failed", f.msg, f.count - 1,
			    f.count - 1 == 1 ? "" : "s");
		else
			snprintf(msg, size, "%s", f.msg);
		return f.cls;
	}
	if (c->n.succeeded == c->n.total && c->n.total > 0) {
		snprintf(msg, size, "all %d nodes finished successfully", c->n.total);
		return TY_REASON_SUCCEEDED;
	}
	if (ctl->active_deadline_s > 0 && c->now >= c->old.start + ctl->active_deadline_s) {
		snprintf(msg, size, "the session ran longer than %s (%" PRId64 "s)",
		    ctl->v1beta1 ? "deadlines.activeSeconds" : "activeDeadlineSeconds",
		    ctl->active_deadline_s);
		return TY_REASON_DEADLINE;
	}
	if (!eq(c->old.phase, "Running") && c->n.running + c->n.succeeded < c->n.total &&
	    ctl->schedule_timeout_s > 0 && c->now >= c->old.start + ctl->schedule_timeout_s) {
		unschedulable_msg(c, msg, size);
		return TY_REASON_UNSCHEDULABLE;
	}
	return TY_REASON_NONE;
}

/* ------------------------------------------------------------------ */
/* The project quota (struct ty_quota_gate) */

/* status.quota: the project, and what the session holds (NULL: nothing). */
static int
gate_status(struct dctx *c, const struct json_object *reserved)
{
	struct json_object *o = json_object_new_object();
	int r;

	if ((r = kc_json_put(c->st, "quota", o)) < 0 ||
	    (r = kc_json_set_str(o, "project", c->in->quota->project)) < 0)
		return r;
	if (reserved != NULL && (r = kc_json_put(o, "reserved",
	    kc_json_copy(reserved))) < 0)
		return r;
	c->quota_said = true;
	return 0;
}

/*
 * The Run waits for the quota: why, in the QuotaReserved condition (whose
 * message is progress: it changes as the queue moves), and, when it never
 * ran, in the phase and reason.
 */
static int
gate_wait(struct dctx *c)
{
	const struct ty_quota_gate *q = c->in->quota;
	int r;

	if ((r = gate_status(c, NULL)) < 0 ||
	    (r = set_condition(c, TY_COND_QUOTA, false, q->reason, "%s", q->message)) < 0)
		return r;
	if (c->old.session != 0)
		return 0;
	if ((r = kc_json_set_str(c->st, "phase", "Pending")) < 0)
		return r;
	return kc_json_set_str(c->st, "reason", q->reason);
}

/* A session that holds nothing yet holds its demand (it started before the quota applied). */
static int
gate_hold(struct dctx *c)
{
	const struct ty_quota_gate *q = c->in->quota;
	char held[256];
	int r;

	if (kc_json_get(c->st, "quota", "reserved") != NULL) {
		c->quota_said = true;
		return 0;
	}
	if (q == NULL || q->demand == NULL)
		return 0;
	quota_text(q->demand, held, sizeof(held));
	if ((r = gate_status(c, q->demand)) < 0)
		return r;
	return set_condition(c, TY_COND_QUOTA, true, TY_QUOTA_RESERVED, "session %" PRId64
	    " holds %s of project %s's quota", c->old.session, held, q->project);
}

/* The session's objects are deleted: what it held is free again. */
static int
gate_release(struct dctx *c)
{
	struct json_object *q = kc_json_get(c->st, "quota");

	if (kc_json_get(q, "reserved") == NULL)
		return 0;
	json_object_object_del(q, "reserved");
	return set_condition(c, TY_COND_QUOTA, false, TY_QUOTA_RELEASED, "session %"
	    PRId64 " ended and its objects are deleted: its quota is released",
	    c->old.session);
}

/*
 * Neither holding nor waiting (invalid, suspended, finished, a restart
 * backing off): no place in the project's queue.
 */
static void
gate_clear(struct dctx *c)
{
	struct json_object *conds = kc_json_arr_of(c->st, "conditions");

	if (kc_json_get(c->st, "quota", "reserved") != NULL)
		return;
	json_object_object_del(c->st, "quota");
	for (size_t i = 0; conds != NULL && i < json_object_array_length(conds); i++) {
		struct json_object *cd = json_object_array_get_idx(conds, i);

		if (eq(kc_json_str(cd, "type"), TY_COND_QUOTA) &&
		    !eq(kc_json_str(cd, "reason"), TY_QUOTA_RELEASED)) {
			(void)json_object_array_del_idx(conds, i, 1);
			break;
		}
	}
}

/* ------------------------------------------------------------------ */
/* An active session that goes on */

static int
progress_conditions(struct dctx *c, bool running)
{
	const struct ty_pod *why = NULL;
	int r;

	for (int32_t i = 0; i < c->n.total && why == NULL; i++)
		if (c->byindex[i] != NULL &&
		    ty_pod_str(c->byindex[i], TY_POD_SCHED_MESSAGE) != NULL)
			why = c->byindex[i];
	if (c->n.scheduled == c->n.total)
		r = set_condition(c, "Scheduled", true, "AllNodesScheduled", "all %d nodes "
		    "are scheduled", c->n.total);
	else
		r = set_condition(c, "Scheduled", false, "Pending", "%d of %d nodes "
		    "scheduled%s%s", c->n.scheduled, c->n.total, why != NULL ? "; " : "",
		    why != NULL ? ty_pod_str(why, TY_POD_SCHED_MESSAGE) : "");
	if (r < 0)
		return r;
	if (c->n.running == c->n.total)
		r = set_condition(c, "Running", true, "AllNodesRunning", "all %d nodes are "
		    "running", c->n.total);
	else
		r = set_condition(c, "Running", false, running ? "NotAllRunning" : "Pending",
		    "%d of %d nodes running", c->n.running, c->n.total);
	if (r < 0)
		return r;
	if ((r = set_condition(c, "Finished", false, "SessionActive", "session %" PRId64
	    " is active", c->old.session)) < 0)
		return r;
	return set_condition(c, "CleanedUp", false, "SessionActive", "session %" PRId64
	    " is active", c->old.session);
}

/*
 * Whether a child of the session went missing after the pods were made
 * (they are created once the children exist): the garbage collector's
 * work when the Run is being deleted, or someone else's.
 */
static bool
vanished(const struct dctx *c)
{
	const struct ty_child *ch[] = { &c->in->podgroup, &c->in->service, &c->in->netpol };

	if (!c->old.all_created && c->n.present == 0)
		return false;
	for (size_t i = 0; i < KC_ARRAY_SIZE(ch); i++)
		if (!(i == 0 && c->in->api == TY_PODGROUP_NONE) && !ch[i]->exists)
			return true;
	return false;
}

/*
 * The API server refused a create of this session: the Scheduled
 * condition says why, and nothing is created again before the backoff.
 */
static int
refused(struct dctx *c)
{
	const struct ty_refusal *f = c->in->refused;
	uint64_t due;
	int r;

	if (f == NULL || f->failures == 0 || f->session != c->old.session)
		return 0;
	if ((r = set_condition(c, "Scheduled", false, "FailedCreate", "%s", f->message)) < 0)
		return r;
	due = f->at_ms + session_create_backoff_ms(f->failures);
	if (c->in->now_ms >= due)
		return 0;
	c->d->ncreate_pods = 0;
	c->d->create_podgroup = c->d->create_service = c->d->create_netpol = false;
	if (c->d->next_check_ms == 0 || due < c->d->next_check_ms)
		c->d->next_check_ms = due;
	return 0;
}

uint64_t
session_create_backoff_ms(uint32_t failures)
{
	uint64_t ms = TY_CREATE_BACKOFF_BASE_MS;

	for (uint32_t i = 1; i < failures && ms < TY_CREATE_BACKOFF_MAX_MS; i++)
		ms *= 2;
	return KC_MIN(ms, TY_CREATE_BACKOFF_MAX_MS);
}

static int
continue_session(struct dctx *c)
{
	const struct ty_control *ctl = c->in->ctl;
	bool running = eq(c->old.phase, "Running") ||
	    c->n.running + c->n.succeeded == c->n.total;
	size_t remaining;
	int r;

	/*
	 * No Event for reaching Running: the phase and the Running
	 * condition's lastTransitionTime record it (kubectl describe shows
	 * both), and an Event is an API write of every session start.
	 */
	if ((r = kc_json_set_str(c->st, "phase", running ? "Running" : "Pending")) < 0 ||
	    (r = put_counts(c)) < 0 ||
	    (r = kc_json_set_bool(c->st, "allPodsCreated", c->old.all_created ||
	    c->n.present == c->n.total)) < 0 || (r = progress_conditions(c, running)) < 0)
		return r;
	if ((r = gate_hold(c)) < 0 || (r = delete_except(c, c->old.session, &remaining)) < 0)
		return r;
	c->d->session = c->old.session;
	if (create_children(c) && remaining == 0 && (r = create_pods(c)) < 0)
		return r;
	c->vanished = vanished(c);
	if ((r = refused(c)) < 0)
		return r;
	if (ctl->active_deadline_s > 0)
		next_check(c, c->old.start + ctl->active_deadline_s);
	if (!running && ctl->schedule_timeout_s > 0)
		next_check(c, c->old.start + ctl->schedule_timeout_s);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Idle: cleanup, then maybe the next session */

/*
 * An earlier Run of the same name still owns objects of the names this
 * one takes: no session starts until the garbage collector removed them
 * (their deletes bring the Run back), and the Scheduled condition says
 * what it waits for.
 */
static int
name_wait(struct dctx *c)
{
	int r;

	if ((r = set_condition(c, "Scheduled", false, TY_WAITING_FOR_NAME, "%s",
	    c->in->name_wait)) < 0)
		return r;
	if (c->old.session != 0)
		return 0;
	if ((r = kc_json_set_str(c->st, "phase", "Pending")) < 0)
		return r;
	return kc_json_set_str(c->st, "reason", TY_WAITING_FOR_NAME);
}

static int
start_session(struct dctx *c, int64_t n, int64_t restarts)
{
	const struct ty_spec *s = c->in->spec;
	const struct ty_quota_gate *q = c->in->quota;
	static const char *const drop[] = {
		"sessionEndTime", "reason", "message", "failedNodes",
	};
	char held[256];
	int r;

	if (c->in->name_wait != NULL)
		return name_wait(c);
	if (q != NULL && !q->admit)
		return gate_wait(c);
	for (size_t i = 0; i < KC_ARRAY_SIZE(drop); i++)
		json_object_object_del(c->st, drop[i]);
	c->old.session = n;
	c->old.start = c->now;
	c->old.phase = "Pending";
	memset(&c->n, 0, sizeof(c->n));
	c->n.total = c->n.pending = s->nodes;
	if ((r = kc_json_set_str(c->st, "phase", "Pending")) < 0 ||
	    (r = kc_json_set_int(c->st, "session", n)) < 0 ||
	    (r = kc_json_set_int(c->st, "restarts", restarts)) < 0 ||
	    (r = set_time(c->st, "sessionStartTime", c->now)) < 0 ||
	    (r = put_counts(c)) < 0 ||
	    (r = kc_json_set_int(c->st, "gpus", s->gpus_per_node * s->nodes)) < 0 ||
	    (r = kc_json_set_bool(c->st, "allPodsCreated", false)) < 0 ||
	    (r = progress_conditions(c, false)) < 0)
		return r;
	if (q != NULL && q->demand != NULL) {
		quota_text(q->demand, held, sizeof(held));
		if ((r = gate_status(c, q->demand)) < 0 ||
		    (r = set_condition(c, TY_COND_QUOTA, true, TY_QUOTA_RESERVED, "session %"
		    PRId64 " holds %s of project %s's quota", n, held, q->project)) < 0)
			return r;
	}
	c->d->session = n;
	c->d->started = true;
	create_children(c);
	event(c, false, "SessionStarted", "session %" PRId64 " started with %d nodes%s",
	    n, s->nodes, restarts > 0 ? " (automatic restart)" : "");
	if (c->in->ctl->active_deadline_s > 0)
		next_check(c, c->now + c->in->ctl->active_deadline_s);
	if (c->in->ctl->schedule_timeout_s > 0)
		next_check(c, c->now + c->in->ctl->schedule_timeout_s);
	return 0;
}

static int
never_started(struct dctx *c)
{
	char text[MSG_MAX];
	int r;

	if (c->in->spec == NULL) {
		if (c->in->problems != NULL)
			model_problems_text(c->in->problems, text, sizeof(text));
		else
			kc_strlcpy(text, "the spec is invalid", sizeof(text));
		if (!eq(c->old.reason, R(INVALID_SPEC)) ||
		    !eq(kc_json_str(c->st, "message"), text))
			event(c, ty_reasons[TY_REASON_INVALID_SPEC].warning,
			    ty_reasons[TY_REASON_INVALID_SPEC].event, "%s", text);
		if ((r = kc_json_set_str(c->st, "phase",
		    ty_reasons[TY_REASON_INVALID_SPEC].phase)) < 0 ||
		    (r = kc_json_set_str(c->st, "reason", R(INVALID_SPEC))) < 0)
			return r;
		return kc_json_set_str(c->st, "message", text);
	}
	if (c->in->ctl->suspend) {
		if ((r = kc_json_set_str(c->st, "phase",
		    ty_reasons[TY_REASON_SUSPENDED].phase)) < 0 ||
		    (r = kc_json_set_str(c->st, "reason", R(SUSPENDED))) < 0)
			return r;
		return kc_json_set_str(c->st, "message", "suspended (spec.suspend is true)");
	}
	return start_session(c, KC_MAX(c->in->ctl->session, 1), 0);
}

static int
cleaned_up(struct dctx *c, size_t remaining)
{
	if (c->old.session == 0)
		return 0;
	if (remaining > 0)
		return set_condition(c, "CleanedUp", false, "Deleting", "waiting for %zu "
		    "objects of session %" PRId64 " to be deleted", remaining,
		    c->old.session);
	return set_condition(c, "CleanedUp", true, "AllDeleted", "every object of "
	    "session %" PRId64 " is deleted", c->old.session);
}

static int
idle(struct dctx *c)
{
	const struct ty_control *ctl = c->in->ctl;
	size_t remaining;
	int64_t due;
	int r;

	if ((r = delete_except(c, -1, &remaining)) < 0 || (r = cleaned_up(c, remaining)) < 0)
		return r;
	if (remaining > 0)
		return 0;
	if ((r = gate_release(c)) < 0)
		return r;
	if (c->old.session == 0)
		return never_started(c);
	if (c->in->spec == NULL || ctl->suspend)
		return 0;
	if (ctl->session > c->old.session)
		return start_session(c, ctl->session, 0);
	if (eq(c->old.reason, R(SUSPENDED)) || eq(c->old.reason, R(PROJECT_SUSPENDED)))
		return start_session(c, c->old.session + 1, 0);
	if (!restart_allowed(c, c->old.phase, c->old.reason))
		return 0;
	due = c->old.end + backoff_s(c);
	if (c->now < due) {
		next_check(c, due);
		return 0;
	}
	return start_session(c, c->old.session + 1, c->old.restarts + 1);
}

/* ------------------------------------------------------------------ */

static int
decide(struct dctx *c)
{
	enum ty_reason why;
	char msg[MSG_MAX];
	int r;

	if ((r = kc_json_set_int(c->st, "observedGeneration", c->in->ctl->generation)) < 0 ||
	    (r = conditions_always(c)) < 0)
		return r;
	if (c->old.session == 0 || c->old.end != 0)
		r = idle(c);
	else {
		count_pods(c);
		if ((why = session_ends(c, msg, sizeof(msg))) == TY_REASON_NONE)
			r = continue_session(c);
		else if ((r = end_session(c, why, msg)) == 0)
			r = idle(c);
	}
	if (r == 0 && !c->quota_said)
		gate_clear(c);
	return r;
}

/* ------------------------------------------------------------------ */
/* The status-write policy (session.h) */

/*
 * Whether 'cur' differs from 'old' only in progress: node counts,
 * readyNodes, allPodsCreated (until it is written, a pod missing from the
 * cache is created again rather than taken as deleted: safe either way),
 * and the messages and times of conditions whose status and reason
 * stay, or the Scheduled condition (pods getting bound one by one is
 * progress too). Such a change may wait (progress_write_now()); a change
 * of phase, session, reason, history or failures is written at once.
 */
static bool
progress_only(const struct json_object *old, const struct json_object *cur)
{
	static const char *const progress[] = {
		"nodes", "readyNodes", "conditions", "message", "allPodsCreated",
	};
	struct json_object *oc, *cc;
	size_t n;

	if (old == NULL || cur == NULL)
		return false;
	json_object_object_foreach((struct json_object *)(uintptr_t)cur, key, val) {
		bool skip = false;

		for (size_t i = 0; i < sizeof(progress) / sizeof(progress[0]); i++)
			skip = skip || strcmp(key, progress[i]) == 0;
		if (!skip && !kc_json_equal(val, kc_json_get(old, key)))
			return false;
	}
	json_object_object_foreach((struct json_object *)(uintptr_t)old, okey, oval) {
		(void)oval;
		if (kc_json_get(cur, okey) == NULL)
			return false;
	}
	oc = kc_json_get(old, "conditions");
	cc = kc_json_get(cur, "conditions");
	if (oc == NULL || cc == NULL || !json_object_is_type(oc, json_type_array) ||
	    !json_object_is_type(cc, json_type_array) ||
	    (n = json_object_array_length(cc)) != json_object_array_length(oc))
		return false;
	for (size_t i = 0; i < n; i++) {
		struct json_object *a = json_object_array_get_idx(oc, i);
		struct json_object *b = json_object_array_get_idx(cc, i);
		const char *type = kc_json_str(b, "type");

		if (!kc_json_equal(kc_json_get(a, "type"), kc_json_get(b, "type")))
			return false;
		/* Scheduled's reason changes as pods get bound, unless refused. */
		if (type != NULL && strcmp(type, "Scheduled") == 0 &&
		    !eq(kc_json_str(a, "reason"), "FailedCreate") &&
		    !eq(kc_json_str(b, "reason"), "FailedCreate"))
			continue;
		if (!kc_json_equal(kc_json_get(a, "status"), kc_json_get(b, "status")) ||
		    !kc_json_equal(kc_json_get(a, "reason"), kc_json_get(b, "reason")))
			return false;
	}
	return true;
}

/*
 * A fingerprint of what a status shows a user, that is without its
 * lastTransitionTimes (a condition whose status flips in a change that
 * waits gets "now" again at each reconcile, which is no news) and without
 * allPodsCreated (the controller's own bookkeeping). Keys hash in order; a
 * tree built the same way from the same cached status keeps its order.
 */
static uint64_t
progress_hash(uint64_t h, const struct json_object *o)
{
	struct json_object *v = (struct json_object *)(uintptr_t)o;
	int64_t i;

	h = kc_fnv1a64(h, &(uint8_t){ (uint8_t)json_object_get_type(v) }, 1);
	switch (json_object_get_type(v)) {
	case json_type_object: {
		json_object_object_foreach(v, key, val) {
			if (strcmp(key, "lastTransitionTime") == 0 ||
			    strcmp(key, "allPodsCreated") == 0)
				continue;
			h = progress_hash(kc_fnv1a64(h, key, strlen(key) + 1), val);
		}
		break;
	}
	case json_type_array:
		for (size_t k = 0; k < json_object_array_length(v); k++)
			h = progress_hash(h, json_object_array_get_idx(v, k));
		break;
	case json_type_string:
		h = kc_fnv1a64(h, json_object_get_string(v),
		    (size_t)json_object_get_string_len(v) + 1);
		break;
	case json_type_int:
	case json_type_boolean:
		i = json_object_get_int64(v);
		h = kc_fnv1a64(h, &i, sizeof(i));
		break;
	case json_type_double:
		h = kc_fnv1a64(h, json_object_get_string(v), strlen(json_object_get_string(v)));
		break;
	case json_type_null:
	default:
		break;
	}
	return h;
}

/*
 * How long the waiting change has looked like 'hash' (0 when it is new or
 * changed, and when 'hash' is 0, which starts the clock again).
 */
static uint64_t
wait_still(struct ty_write_state *w, uint64_t hash, uint64_t now)
{
	if (w->wait_hash == hash && hash != 0 && now >= w->wait_since_ms)
		return now - w->wait_since_ms;
	w->wait_hash = hash;
	w->wait_since_ms = now;
	return 0;
}

/* A fingerprint of a held change: why, and what it says (no times). */
static uint64_t
held_hash(const struct dctx *c)
{
	const char *why = c->vanished ? "vanished" : ty_reasons[c->ended].name;
	const char *msg = kc_json_str(c->st, "message");
	uint64_t h = kc_fnv1a64(KC_FNV1A64_INIT, why, strlen(why) + 1);

	h = kc_fnv1a64(h, msg != NULL ? msg : "", msg != NULL ? strlen(msg) : 0);
	return h != 0 ? h : 1;
}

static void
write_policy(struct dctx *c)
{
	const struct ty_write_state *in = c->in->write;
	const struct json_object *old = kc_json_get(c->in->run, "status");
	struct ty_decision *d = c->d;
	bool creating = d->ncreate_pods > 0 || c->in->nexpected > 0 ||
	    d->create_podgroup || d->create_service || d->create_netpol;
	uint64_t h, still, age, now;

	if (in == NULL) {
		d->write_status = d->status_changed;
		return;
	}
	d->write = *in;
	now = in->now_ms;
	if (c->vanished || (c->ended != TY_REASON_NONE && ty_reasons[c->ended].held)) {
		if ((still = wait_still(&d->write, held_hash(c), now)) < TY_HOLD_MS) {
			d->hold = true;
			d->after_ms = TY_HOLD_MS - still;
			return;
		}
		d->write_status = d->status_changed;	/* it stood: not a deletion */
		return;
	}
	if (!d->status_changed)
		return;
	if (!progress_only(old, d->status)) {
		d->write_status = true;
		return;
	}
	if ((h = progress_hash(KC_FNV1A64_INIT, d->status)) == progress_hash(KC_FNV1A64_INIT, old))
		return;		/* nothing a user sees: rides along with the next write */
	/* Creates are movement too: the clock starts once they are done. */
	still = wait_still(&d->write, creating ? 0 : h != 0 ? h : 1, now);
	age = in->last_write_ms != 0 && now >= in->last_write_ms ? now - in->last_write_ms :
	    UINT64_MAX;
	if (age >= TY_PROGRESS_MAX_MS || (!creating && still >= TY_PROGRESS_QUIET_MS)) {
		d->write_status = true;
		return;
	}
	d->after_ms = KC_MIN(TY_PROGRESS_QUIET_MS - still, TY_PROGRESS_MAX_MS - age);
}

static struct json_object *
status_base(const struct json_object *run)
{
	const struct json_object *old = kc_json_get(run, "status");

	if (old != NULL && json_object_is_type(old, json_type_object))
		return kc_json_copy(old);
	return json_object_new_object();
}

void
session_decision_release(struct ty_decision *d)
{
	kc_json_putp(&d->status);
	d->create_pods = kc_free(d->create_pods);
	d->deletes = kc_free(d->deletes);
	memset(d, 0, sizeof(*d));
}

int
session_decide(const struct ty_session_in *in, struct ty_decision *ret)
{
	struct dctx c = { .in = in, .d = ret, .now = (int64_t)(in->now_ms / 1000) };
	int32_t total;
	int r = -ENOMEM;

	memset(ret, 0, sizeof(*ret));
	read_old(&c);
	total = (int32_t)KC_MAX(c.old.total, in->spec != NULL ? in->spec->nodes : 0);
	c.maxdel = in->npods + in->nexpected + 3;
	if ((ret->status = status_base(in->run)) == NULL ||
	    (c.byindex = kc_calloc((size_t)total + 1, sizeof(*c.byindex))) == NULL ||
	    (ret->create_pods = kc_calloc((size_t)total + 1, sizeof(int32_t))) == NULL ||
	    (ret->deletes = kc_calloc(c.maxdel, sizeof(struct ty_delete))) == NULL)
		goto out;
	c.st = ret->status;
	if ((r = decide(&c)) < 0)
		goto out;
	ret->status_changed = !kc_json_equal(ret->status, kc_json_get(in->run, "status"));
	write_policy(&c);
out:
	kc_free(c.byindex);
	if (r < 0)
		session_decision_release(ret);
	return r;
}

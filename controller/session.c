/*
 * session.c: the compact pod view and the session rules.
 *
 * The pod view (struct ty_pod) is what the informer cache keeps of a pod:
 * a few hundred bytes in one allocation, strings packed after the struct,
 * long messages cut at a UTF-8 boundary and the termination message kept
 * only when the container failed.
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
 * When several pods failed, the root cause is reported: a preemption,
 * a lost node, an eviction or a deletion comes before an exit code (the
 * other nodes usually exit because a peer disappeared), and a lower
 * index before a higher one.
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
#include <kc/json.h>
#include <kc/str.h>

#include "config.h"
#include "model.h"
#include "session.h"

#define MSG_MAX		1024	/* status.message and condition messages */
#define NAME_FIELD_MAX	253

/* ------------------------------------------------------------------ */
/* The pod view */

#define UID_MAX		(TY_UID_TEXT_MAX - 1)	/* Kubernetes uids are 36 bytes */
#define UUID_LEN	36
#define UUID_BYTES	16
#define REASON_MAX	64
#define LABEL_VALUE_MAX	63	/* Kubernetes label values */

struct podstrs {
	const char	*s[TY_POD_NSTRS];
	size_t		 len[TY_POD_NSTRS];
	const char	*uid[TY_POD_NUIDS];	/* not NULL: not "" either */
};

/* Whether 's' is a UUID in canonical form; its 16 bytes into 'out'. */
static bool
uuid_parse(const char *s, uint8_t *out)
{
	static const char hex[] = "0123456789abcdef";
	unsigned nibbles = 0;

	if (strnlen(s, UUID_LEN + 1) != UUID_LEN)
		return false;		/* so no NUL below */
	for (size_t i = 0; i < UUID_LEN; i++) {
		const char *h;

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return false;
			continue;
		}
		if ((h = strchr(hex, s[i])) == NULL)
			return false;
		if (nibbles % 2 == 0)
			out[nibbles / 2] = (uint8_t)((h - hex) << 4);
		else
			out[nibbles / 2] |= (uint8_t)(h - hex);
		nibbles++;
	}
	return true;
}

size_t
session_uid_size(const char *uid)
{
	uint8_t b[UUID_BYTES];

	return uuid_parse(uid, b) ? 1 + UUID_BYTES : strnlen(uid, UID_MAX) + 1;
}

char *
session_uid_pack(const char *uid, char *dst)
{
	uint8_t b[UUID_BYTES];
	size_t n;

	if (uuid_parse(uid, b)) {
		dst[0] = '\0';
		memcpy(dst + 1, b, UUID_BYTES);
		return dst + 1 + UUID_BYTES;
	}
	n = strnlen(uid, UID_MAX);
	memcpy(dst, uid, n);
	dst[n] = '\0';
	return dst + n + 1;
}

const char *
session_uid_text(const char *packed, char *buf, size_t size)
{
	const uint8_t *b = (const uint8_t *)packed + 1;

	if (packed[0] != '\0')
		return packed;
	(void)snprintf(buf, size, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	    "%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
	    b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
	return buf;
}

bool
session_uid_eq(const char *packed, const char *uid)
{
	uint8_t b[UUID_BYTES];

	if (uid == NULL || uid[0] == '\0')
		return false;
	if (packed[0] != '\0')
		return strcmp(packed, uid) == 0;
	return uuid_parse(uid, b) && memcmp(packed + 1, b, UUID_BYTES) == 0;
}

/* The length of 's' cut to at most 'max' bytes, not inside a UTF-8 sequence. */
static size_t
cut_utf8(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n <= max)
		return n;
	n = max;
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	return n;
}

static void
str_set(struct podstrs *ps, int i, const char *s, size_t max)
{
	if (s == NULL)
		return;
	ps->s[i] = s;
	ps->len[i] = cut_utf8(s, max);
}

static enum ty_pod_phase
phase_of(const char *s)
{
	static const char *const names[] = {
		[TY_POD_PENDING] = "Pending", [TY_POD_RUNNING] = "Running",
		[TY_POD_SUCCEEDED] = "Succeeded", [TY_POD_FAILED] = "Failed",
	};

	for (size_t i = 0; s != NULL && i < KC_ARRAY_SIZE(names); i++)
		if (strcmp(s, names[i]) == 0)
			return (enum ty_pod_phase)i;
	return TY_POD_UNKNOWN;
}

static int64_t
label_int(const struct json_object *pod, const char *label)
{
	const char *v = kc_json_str(pod, "metadata", "labels", label);
	int64_t n;

	if (v == NULL || kc_parse_i64(v, &n) < 0 || n < 0)
		return -1;
	return n;
}

static int64_t
time_of(const char *s)
{
	time_t t;

	if (s == NULL || kc_time_parse(s, &t) < 0)
		return 0;
	return (int64_t)t;
}

static void
pod_conditions(const struct json_object *pod, struct ty_pod *p, struct podstrs *ps)
{
	struct json_object *conds = kc_json_arr_of(kc_json_get(pod, "status"),
	    "conditions");

	for (size_t i = 0; conds != NULL && i < json_object_array_length(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);
		const char *type = kc_json_str(c, "type"), *status = kc_json_str(c, "status");
		bool yes = status != NULL && strcmp(status, "True") == 0;

		if (type == NULL)
			continue;
		if (strcmp(type, "Ready") == 0)
			p->ready = yes;
		else if (strcmp(type, "PodScheduled") == 0) {
			p->scheduled = yes;
			if (!yes) {
				str_set(ps, TY_POD_SCHED_REASON, kc_json_str(c, "reason"),
				    REASON_MAX);
				str_set(ps, TY_POD_SCHED_MESSAGE, kc_json_str(c, "message"),
				    TY_POD_MESSAGE_MAX);
			}
		} else if (strcmp(type, "DisruptionTarget") == 0 && yes)
			str_set(ps, TY_POD_DISRUPTION, kc_json_str(c, "reason"), REASON_MAX);
	}
}

static struct json_object *
main_container(const struct json_object *pod)
{
	struct json_object *cs = kc_json_arr_of(kc_json_get(pod, "status"),
	    "containerStatuses");

	for (size_t i = 0; cs != NULL && i < json_object_array_length(cs); i++) {
		const char *name = kc_json_str(json_object_array_get_idx(cs, i), "name");

		if (name != NULL && strcmp(name, "main") == 0)
			return json_object_array_get_idx(cs, i);
	}
	return cs != NULL && json_object_array_length(cs) > 0 ?
	    json_object_array_get_idx(cs, 0) : NULL;
}

static void
pod_container(const struct json_object *pod, struct ty_pod *p, struct podstrs *ps)
{
	struct json_object *term = kc_json_get(main_container(pod), "state", "terminated");

	if (term == NULL)
		return;
	p->exit_code = (int32_t)kc_json_int(term, -1, "exitCode");
	p->finish_time = time_of(kc_json_str(term, "finishedAt"));
	if (p->exit_code == 0)
		return;
	str_set(ps, TY_POD_TERM_REASON, kc_json_str(term, "reason"), REASON_MAX);
	str_set(ps, TY_POD_TERM_MESSAGE, kc_json_str(term, "message"), TY_TERM_MESSAGE_MAX);
}

static void
pod_pack(struct ty_pod *p, const struct podstrs *ps)
{
	size_t at = 0;

	for (int i = 0; i < TY_POD_NSTRS; i++) {
		if (ps->s[i] == NULL)
			continue;
		memcpy(p->strs + at, ps->s[i], ps->len[i]);
		p->strs[at + ps->len[i]] = '\0';
		p->str[i] = (uint16_t)(at + 1);
		at += ps->len[i] + 1;
	}
	for (int i = 0; i < TY_POD_NUIDS; i++) {
		if (ps->uid[i] == NULL)
			continue;
		p->uid[i] = (uint16_t)(at + 1);
		at = (size_t)(session_uid_pack(ps->uid[i], p->strs + at) - p->strs);
	}
}

/* Keeps uid 'i' unless it is NULL or "". */
static void
uid_set(struct podstrs *ps, int i, const char *uid)
{
	ps->uid[i] = uid != NULL && uid[0] != '\0' ? uid : NULL;
}

const char *
session_owner_uid(const struct json_object *obj)
{
	struct json_object *refs = kc_json_arr_of(kc_json_get(obj, "metadata"),
	    "ownerReferences");

	for (size_t i = 0; refs != NULL && i < json_object_array_length(refs); i++) {
		struct json_object *ref = json_object_array_get_idx(refs, i);
		const char *kind = kc_json_str(ref, "kind"), *uid = kc_json_str(ref, "uid");

		if (kc_json_bool(ref, false, "controller") && kind != NULL &&
		    strcmp(kind, "Run") == 0 && uid != NULL)
			return uid;
	}
	return NULL;
}

int
session_pod_from_json(const struct json_object *pod, struct ty_pod **ret)
{
	struct ty_pod tmp = { .exit_code = -1 }, *p;
	struct podstrs ps = { .s = { NULL } };
	struct json_object *status = kc_json_get(pod, "status");
	size_t size = offsetof(struct ty_pod, strs);

	str_set(&ps, TY_POD_NAME, kc_json_str(pod, "metadata", "name"), NAME_FIELD_MAX);
	if (ps.s[TY_POD_NAME] == NULL || ps.len[TY_POD_NAME] == 0)
		return KC_EINVALID;
	uid_set(&ps, TY_POD_UID, kc_json_str(pod, "metadata", "uid"));
	uid_set(&ps, TY_POD_OWNER_UID, session_owner_uid(pod));
	str_set(&ps, TY_POD_NODE, kc_json_str(pod, "spec", "nodeName"), NAME_FIELD_MAX);
	str_set(&ps, TY_POD_RUN, kc_json_str(pod, "metadata", "labels", TY_LABEL_RUN),
	    LABEL_VALUE_MAX);
	tmp.session = (int32_t)KC_MIN(label_int(pod, TY_LABEL_SESSION), INT32_MAX);
	tmp.index = (int32_t)KC_MIN(label_int(pod, TY_LABEL_INDEX), INT32_MAX);
	tmp.deleting = kc_json_get(pod, "metadata", "deletionTimestamp") != NULL;
	tmp.phase = (uint8_t)phase_of(kc_json_str(status, "phase"));
	tmp.start_time = time_of(kc_json_str(status, "startTime"));
	if (tmp.phase == TY_POD_FAILED || kc_json_str(status, "reason") != NULL) {
		str_set(&ps, TY_POD_REASON, kc_json_str(status, "reason"), REASON_MAX);
		str_set(&ps, TY_POD_MESSAGE, kc_json_str(status, "message"),
		    TY_POD_MESSAGE_MAX);
	}
	pod_conditions(pod, &tmp, &ps);
	pod_container(pod, &tmp, &ps);
	for (int i = 0; i < TY_POD_NSTRS; i++)
		size += ps.s[i] != NULL ? ps.len[i] + 1 : 0;
	for (int i = 0; i < TY_POD_NUIDS; i++)
		size += ps.uid[i] != NULL ? session_uid_size(ps.uid[i]) : 0;
	/* The strings are bounded (< 3 KB): 16-bit offsets reach them. */
	if ((p = kc_keep_calloc(KC_MAX(size, sizeof(*p)))) == NULL)
		return -ENOMEM;
	*p = tmp;
	pod_pack(p, &ps);
	*ret = p;
	return 0;
}

struct ty_pod *
session_pod_free(struct ty_pod *p)
{
	return kc_free(p);
}

/* ------------------------------------------------------------------ */
/* Decision state */

enum fail_class { F_NONE, F_PREEMPTED, F_NODELOST, F_EVICTED, F_DELETED, F_FAILED };

static const char *const fail_reason[] = {
	[F_NONE] = "", [F_PREEMPTED] = "Preempted", [F_NODELOST] = "NodeLost",
	[F_EVICTED] = "Evicted", [F_DELETED] = "PodDeleted", [F_FAILED] = "PodFailed",
};

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
		r = set_condition(c, "Valid", false, "InvalidSpec", "%s", text);
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

static enum fail_class
classify_disruption(const struct ty_pod *p, char *msg, size_t size)
{
	const char *d = ty_pod_str(p, TY_POD_DISRUPTION), *pmsg = ty_pod_str(p, TY_POD_MESSAGE);

	if (eq(d, "PreemptionByScheduler") || eq(d, "PreemptionByKubeScheduler")) {
		snprintf(msg, size, "node %d (pod %s on %s) was preempted by a "
		    "higher-priority workload", p->index, ty_pod_str(p, TY_POD_NAME),
		    node_of(p));
		return F_PREEMPTED;
	}
	if (eq(d, "DeletionByPodGC")) {
		snprintf(msg, size, "node %d lost its machine %s (the node is gone)",
		    p->index, node_of(p));
		return F_NODELOST;
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
	return F_EVICTED;
}

static enum fail_class
classify(const struct ty_pod *p, char *msg, size_t size)
{
	const char *name = ty_pod_str(p, TY_POD_NAME), *reason = ty_pod_str(p, TY_POD_REASON);
	const char *pmsg = ty_pod_str(p, TY_POD_MESSAGE);
	const char *treason = ty_pod_str(p, TY_POD_TERM_REASON);

	if (ty_pod_str(p, TY_POD_DISRUPTION) != NULL)
		return classify_disruption(p, msg, size);
	if (p->phase == TY_POD_FAILED && eq(reason, "NodeLost")) {
		snprintf(msg, size, "node %d lost its machine %s", p->index, node_of(p));
		return F_NODELOST;
	}
	if (p->phase == TY_POD_FAILED && (eq(reason, "Evicted") ||
	    eq(reason, "Shutdown") || eq(reason, "Terminated"))) {
		snprintf(msg, size, "node %d was evicted from %s: %s", p->index, node_of(p),
		    pmsg != NULL ? pmsg : reason);
		return F_EVICTED;
	}
	/*
	 * Deleted by someone (no DisruptionTarget): the kubelet's 143 or 137
	 * is the deletion's doing, not the program's.
	 */
	if (p->deleting && (p->phase != TY_POD_FAILED || p->exit_code == 143 ||
	    p->exit_code == 137 || p->exit_code < 0)) {
		snprintf(msg, size, "the pod of node %d (%s) was deleted", p->index, name);
		return F_DELETED;
	}
	if (p->phase == TY_POD_FAILED && p->exit_code >= 0) {
		snprintf(msg, size, "node %d exited with code %d (%s)", p->index,
		    p->exit_code, treason != NULL ? treason : "Error");
		return F_FAILED;
	}
	if (p->phase == TY_POD_FAILED) {
		snprintf(msg, size, "node %d failed on %s: %s", p->index, node_of(p),
		    pmsg != NULL ? pmsg : reason != NULL ? reason : "no reason given");
		return F_FAILED;
	}
	if (p->deleting) {
		snprintf(msg, size, "the pod of node %d (%s) was deleted", p->index, name);
		return F_DELETED;
	}
	return F_NONE;
}

struct failure {
	enum fail_class	 cls;
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
 * lost, evicted, exited), else deleted. F_NONE when it may just not be
 * created or seen yet.
 */
static enum fail_class
classify_missing(const struct dctx *c, int32_t i, char *msg, size_t size)
{
	const struct ty_pod *p = gone_pod(c, i);
	enum fail_class cls;

	if (p != NULL && (cls = classify(p, msg, size)) != F_NONE)
		return cls;
	if (p == NULL && (!c->old.all_created || is_expected(c, i)))
		return F_NONE;
	missing_failure(c, i, msg, size);
	return F_DELETED;
}

/* The root-cause failure of the session, if any. */
static void
find_failure(const struct dctx *c, struct failure *f)
{
	char msg[MSG_MAX];
	enum fail_class cls;

	memset(f, 0, sizeof(*f));
	for (int32_t i = 0; i < c->n.total; i++) {
		const struct ty_pod *p = c->byindex[i];

		if (p != NULL)
			cls = classify(p, msg, sizeof(msg));
		else
			cls = classify_missing(c, i, msg, sizeof(msg));
		if (cls == F_NONE)
			continue;
		f->count++;
		if (f->cls == F_NONE || cls < f->cls) {
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
	enum fail_class cls;
	int r;

	if (e == NULL)
		return -ENOMEM;
	if ((r = kc_json_append(list, e)) < 0 || (r = kc_json_set_int(e, "index", i)) < 0)
		return r;
	if (p == NULL && (p = gone_pod(c, i)) != NULL &&
	    classify(p, msg, sizeof(msg)) == F_NONE)
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
	    (r = kc_json_set_str(e, "reason", cls == F_FAILED && treason != NULL ?
	    treason : fail_reason[cls])) < 0)
		return r;
	return kc_json_set_str(e, "message", cls == F_FAILED && tmsg != NULL ? tmsg : msg);
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
		bool failed = p != NULL ? classify(p, msg, sizeof(msg)) != F_NONE :
		    classify_missing(c, i, msg, sizeof(msg)) != F_NONE;

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
	if (policy == TY_RESTART_NEVER || reason == NULL)
		return false;
	if (eq(reason, "Preempted") || eq(reason, "Evicted") || eq(reason, "NodeLost"))
		return true;
	return policy == TY_RESTART_ON_FAILURE &&
	    (eq(reason, "PodFailed") || eq(reason, "PodDeleted"));
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
end_event(struct dctx *c, const char *phase, const char *reason, const char *msg)
{
	if (eq(phase, "Succeeded"))
		event(c, false, "SessionSucceeded", "session %" PRId64 " succeeded: %s",
		    c->old.session, msg);
	else if (eq(phase, "Stopped"))
		event(c, false, "SessionStopped", "session %" PRId64 " stopped: %s",
		    c->old.session, msg);
	else
		event(c, true, reason, "session %" PRId64 " failed: %s", c->old.session, msg);
	if (restart_allowed(c, phase, reason))
		event(c, false, "RestartScheduled", "session %" PRId64 " starts in %" PRId64
		    "s (restart %" PRId64 " of %" PRId64 ")", c->old.session + 1,
		    backoff_s(c), c->old.restarts + 1, c->in->ctl->max_restarts);
	return 0;
}

static int
end_session(struct dctx *c, const char *phase, const char *reason, const char *msg)
{
	int r;

	if ((r = kc_json_set_str(c->st, "phase", phase)) < 0 ||
	    (r = kc_json_set_str(c->st, "reason", reason)) < 0 ||
	    (r = kc_json_set_str(c->st, "message", msg)) < 0 ||
	    (r = set_time(c->st, "sessionEndTime", c->now)) < 0 ||
	    (r = put_counts(c)) < 0 || (r = failed_nodes(c)) < 0 ||
	    (r = push_history(c, phase, reason)) < 0)
		return r;
	if ((r = set_condition(c, "Running", false, "SessionEnded", "session %" PRId64
	    " ended", c->old.session)) < 0 ||
	    (r = set_condition(c, "Finished", true, reason, "%s", msg)) < 0)
		return r;
	end_event(c, phase, reason, msg);
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
	    "(scheduleTimeoutSeconds); %d pending", c->n.running + c->n.succeeded,
	    c->n.total, c->in->ctl->schedule_timeout_s, c->n.pending);
	if (missing > 0 && len < size)
		len += (size_t)snprintf(msg + len, size - len, ", %d of them not created",
		    missing);
	if (why != NULL && len < size)
		snprintf(msg + len, size - len, "; node %d: %s", why->index,
		    ty_pod_str(why, TY_POD_SCHED_MESSAGE));
}

/* Whether the active session ends now: fills phase, reason and message. */
static bool
session_ends(struct dctx *c, const char **phase, const char **reason, char *msg,
    size_t size)
{
	const struct ty_control *ctl = c->in->ctl;
	struct failure f;

	*phase = "Failed";
	if (ctl->session > c->old.session) {
		snprintf(msg, size, "spec.session asks for session %" PRId64, ctl->session);
		return *phase = "Stopped", *reason = "NewSession", true;
	}
	if (ctl->suspend) {
		snprintf(msg, size, "suspended (spec.suspend is true)");
		return *phase = "Stopped", *reason = "Suspended", true;
	}
	find_failure(c, &f);
	if (f.cls != F_NONE) {
		if (f.count > 1)
			snprintf(msg, size, "%.900s; %d more node%s failed", f.msg, f.count - 1,
			    f.count - 1 == 1 ? "" : "s");
		else
			snprintf(msg, size, "%s", f.msg);
		return *reason = fail_reason[f.cls], true;
	}
	if (c->n.succeeded == c->n.total && c->n.total > 0) {
		snprintf(msg, size, "all %d nodes finished successfully", c->n.total);
		return *phase = "Succeeded", *reason = "Succeeded", true;
	}
	if (ctl->active_deadline_s > 0 && c->now >= c->old.start + ctl->active_deadline_s) {
		snprintf(msg, size, "the session ran longer than activeDeadlineSeconds "
		    "(%" PRId64 "s)", ctl->active_deadline_s);
		return *reason = "DeadlineExceeded", true;
	}
	if (!eq(c->old.phase, "Running") && c->n.running + c->n.succeeded < c->n.total &&
	    ctl->schedule_timeout_s > 0 && c->now >= c->old.start + ctl->schedule_timeout_s) {
		unschedulable_msg(c, msg, size);
		return *reason = "Unschedulable", true;
	}
	return false;
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
	if ((r = delete_except(c, c->old.session, &remaining)) < 0)
		return r;
	c->d->session = c->old.session;
	if (create_children(c) && remaining == 0 && (r = create_pods(c)) < 0)
		return r;
	if (ctl->active_deadline_s > 0)
		next_check(c, c->old.start + ctl->active_deadline_s);
	if (!running && ctl->schedule_timeout_s > 0)
		next_check(c, c->old.start + ctl->schedule_timeout_s);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Idle: cleanup, then maybe the next session */

static int
start_session(struct dctx *c, int64_t n, int64_t restarts)
{
	const struct ty_spec *s = c->in->spec;
	static const char *const drop[] = {
		"sessionEndTime", "reason", "message", "failedNodes",
	};
	int r;

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
	c->d->session = n;
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
		if (!eq(c->old.reason, "InvalidSpec") || !eq(kc_json_str(c->st, "message"),
		    text))
			event(c, true, "InvalidSpec", "%s", text);
		if ((r = kc_json_set_str(c->st, "phase", "Failed")) < 0 ||
		    (r = kc_json_set_str(c->st, "reason", "InvalidSpec")) < 0)
			return r;
		return kc_json_set_str(c->st, "message", text);
	}
	if (c->in->ctl->suspend) {
		if ((r = kc_json_set_str(c->st, "phase", "Stopped")) < 0 ||
		    (r = kc_json_set_str(c->st, "reason", "Suspended")) < 0)
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
	if (c->old.session == 0)
		return never_started(c);
	if (c->in->spec == NULL || ctl->suspend)
		return 0;
	if (ctl->session > c->old.session)
		return start_session(c, ctl->session, 0);
	if (eq(c->old.phase, "Stopped") && eq(c->old.reason, "Suspended"))
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
	const char *phase, *reason;
	char msg[MSG_MAX];
	int r;

	if ((r = kc_json_set_int(c->st, "observedGeneration", c->in->ctl->generation)) < 0 ||
	    (r = conditions_always(c)) < 0)
		return r;
	if (c->old.session == 0 || c->old.end != 0)
		return idle(c);
	count_pods(c);
	if (!session_ends(c, &phase, &reason, msg, sizeof(msg)))
		return continue_session(c);
	if ((r = end_session(c, phase, reason, msg)) < 0)
		return r;
	return idle(c);
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
	c.maxdel = in->npods + 3;
	if ((ret->status = status_base(in->run)) == NULL ||
	    (c.byindex = kc_calloc((size_t)total + 1, sizeof(*c.byindex))) == NULL ||
	    (ret->create_pods = kc_calloc((size_t)total + 1, sizeof(int32_t))) == NULL ||
	    (ret->deletes = kc_calloc(c.maxdel, sizeof(struct ty_delete))) == NULL)
		goto out;
	c.st = ret->status;
	if ((r = decide(&c)) < 0)
		goto out;
	ret->status_changed = !kc_json_equal(ret->status, kc_json_get(in->run, "status"));
out:
	kc_free(c.byindex);
	if (r < 0)
		session_decision_release(ret);
	return r;
}

/*
 * reconcile_run.c: the Run reconciler (run_reconciler, a row of
 * manager.c's table): what a cache change maps to, and one Run from the
 * caches to the API in three steps, as session.h's reconcile contract
 * (the one copy of it) asks:
 *
 *	gather    copies of the Run and its ResourceProfile (cached texts are
 *	          inflated into private trees), model_control() and
 *	          model_validate(); the Run's children and pods from the
 *	          caches, only those whose controller ownerReference is this
 *	          Run's uid (a Run deleted and created again under the same
 *	          name must not adopt the old one's pods); from expect.c the
 *	          pods created and not cached yet, pods that left the cache,
 *	          the last refused create and the write policy's memory;
 *	decide    session_decide(), pure: the session rules and the
 *	          status-write policy;
 *	execute   nothing when held; else the status when the policy says so
 *	          (a conflict stops the reconcile: the newer Run is on its way
 *	          through the informer), deletes, creates, Events, and the
 *	          next look as RECONCILE_AFTER.
 *
 * Pods are created in "slow start" batches of 1, 2, 4, ... as the
 * Kubernetes workload controllers do: when the first pod is refused (quota
 * exceeded, an admission webhook, a missing PriorityClass) the reconcile
 * stops after one failed request, remembers why, and the decision backs
 * the next creates off.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/sbuf.h>
#include <kc/str.h>

#include "controller.h"

struct rctx {
	struct ctl		*c;
	struct kc_client	*cl;
	const char		*key;
	char			 ns[KC_NAMESPACE_MAX + 1];
	char			 name[KC_NAME_MAX + 1];
	struct kc_log_ctx	 log;
	struct json_object	*run;		/* a private copy */
	const char		*uid;
	struct ty_spec		*spec;
	struct kc_item		**pod_items;
	size_t			 npods, cappods;
	uint32_t		 refusals;	/* this reconcile's create was refused */
	bool			 status_written;
	int64_t			 admitted;	/* the session the ledger admitted; 0 */
	bool			 waits;		/* for the project's quota */
	/* Names (names.h): taken by others, or still an earlier Run's. */
	struct kc_sbuf		 conflict;	/* into conflict_text */
	char			 conflict_text[TY_NAMES_MSG_MAX];
	bool			 name_waits;	/* a create met an earlier Run's */
	size_t			 nwait;		/* cached objects of an earlier Run */
	struct kc_sbuf		 wait;		/* into wait_text: the first few */
	char			 wait_text[512];
};

#define NAME_WAIT_LIST		3	/* objects a wait names; then "and N more" */
#define NAME_WAIT_RECHECK_MS	1000

#define QUOTA_RECHECK_MS	30000
#define UNSEEN_RECHECK_MS	1000	/* pods deleted by name, never cached */

static const struct kc_resource *
podgroup_res(enum ty_podgroup_api api)
{
	return api == TY_PODGROUP_SIGS_K8S ? &ty_res_podgroups_sigs : &ty_res_podgroups_x;
}

static const char *
msg_of(const struct kc_status *st, int r)
{
	return st->message[0] != '\0' ? st->message : kc_strerror(r);
}

/* A copy of a cached Run or profile, or NULL (absent or -ENOMEM in *r). */
static struct json_object *
cached_copy(struct kc_informer *inf, const char *ns, const char *name, int *r)
{
	struct kc_item *it = kc_informer_get(inf, ns, name);
	struct json_object *copy = NULL;

	*r = 0;
	if (it == NULL)
		return NULL;
	if ((*r = cache_obj_json(kc_item_data(it), &copy)) < 0)
		copy = NULL;
	kc_item_unref(it);
	return copy;
}

static void
child_of(struct rctx *rc, struct kc_informer *inf, struct ty_child *ret)
{
	struct kc_item *it;
	const struct ty_child_item *ci;

	*ret = (struct ty_child){ .session = -1 };
	if (inf == NULL || (it = kc_informer_get(inf, rc->ns, rc->name)) == NULL)
		return;
	ci = kc_item_data(it);
	/* Someone else's object of the same name is not ours to manage. */
	if (ci->owner_uid != 0 && cache_uid_eq(ty_cache_str(ci->strs, ci->owner_uid), rc->uid)) {
		char buf[TY_UID_TEXT_MAX];

		ret->exists = true;
		ret->deleting = ci->deleting;
		ret->session = ci->session;
		kc_strlcpy(ret->uid, ci->uid != 0 ? cache_uid_text(ty_cache_str(ci->strs,
		    ci->uid), buf, sizeof(buf)) : "", sizeof(ret->uid));
	}
	kc_item_unref(it);
}

/*
 * A cached object of a name this Run takes, owned by an earlier Run of
 * the name that the garbage collector has not removed yet: the next
 * session waits for it.
 */
static void
name_wait_for(struct rctx *rc, const char *kind, const char *name)
{
	if (rc->nwait++ < NAME_WAIT_LIST)
		kc_sbuf_printf(&rc->wait, "%s%s %s/%s", rc->nwait > 1 ? ", " : "", kind, rc->ns,
		    name);
}

static void
earlier_child(struct rctx *rc, struct kc_informer *inf, const char *kind)
{
	struct kc_item *it;
	const struct ty_child_item *ci;

	if (inf == NULL || (it = kc_informer_get(inf, rc->ns, rc->name)) == NULL)
		return;
	ci = kc_item_data(it);
	if (ci->owner_uid != 0 && !cache_uid_eq(ty_cache_str(ci->strs, ci->owner_uid),
	    rc->uid) && !names_cached_foreign(ty_cache_str(ci->strs, ci->run), true, rc->name))
		name_wait_for(rc, kind, rc->name);
	kc_item_unref(it);
}

static int
collect_pod(void *arg, struct kc_item *it)
{
	struct rctx *rc = arg;
	char buf[TY_UID_TEXT_MAX];

	if (!ty_pod_uid_is(kc_item_data(it), TY_POD_OWNER_UID, rc->uid)) {
		if (ty_pod_uid(kc_item_data(it), TY_POD_OWNER_UID, buf, sizeof(buf)) != NULL)
			name_wait_for(rc, "pod", kc_item_name(it));
		return 0;
	}
	if (rc->npods == rc->cappods) {
		size_t cap = rc->cappods != 0 ? rc->cappods * 2 : 16;
		struct kc_item **a = kc_reallocarray(rc->pod_items, cap, sizeof(*a));

		if (a == NULL)
			return -ENOMEM;
		rc->pod_items = a;
		rc->cappods = cap;
	}
	rc->pod_items[rc->npods++] = kc_item_ref(it);
	return 0;
}

/*
 * The Run resource at the version of the Run's cached copy: a reconcile
 * writes what it read at the version it read it, while the caches may be
 * moving to another one (manager.c).
 */
static const struct kc_resource *
run_res(const struct rctx *rc)
{
	const char *av = kc_json_str(rc->run, "apiVersion");
	const char *v = av != NULL ? strchr(av, '/') : NULL;

	return cache_runs_res(v != NULL ? v + 1 : NULL);
}

static int
write_status(struct rctx *rc, struct json_object *status)
{
	struct kc_status st = { 0 };
	struct json_object *written = NULL;
	const char *rv;
	int r;

	if ((r = kc_json_put(rc->run, "status", json_object_get(status))) < 0)
		return r;
	r = kc_client_update(rc->cl, &(struct kc_update_opts){
		.res = run_res(rc), .ns = rc->ns, .name = rc->name,
		.subresource = "status", .field_manager = TY_FIELD_MANAGER,
	}, rc->run, &written, &st);
	kc_log_debug(&rc->log, "update status: phase %s readyNodes %s: %s",
	    kc_json_str(status, "phase") != NULL ? kc_json_str(status, "phase") : "-",
	    kc_json_str(status, "readyNodes") != NULL ? kc_json_str(status, "readyNodes") :
	    "-", r < 0 ? kc_err_name(r) : "ok");
	if (r == KC_ECONFLICT || r == KC_ENOTFOUND) {
		atomic_fetch_add(&rc->c->n.conflicts, 1);
		return r;		/* expected: the newer Run is on its way */
	}
	if (r < 0)
		return kc_log_error_r(&rc->log, r, "update status: %s", msg_of(&st, r));
	/* Until the cache shows this write, a reconcile would work from the past. */
	if ((rv = kc_json_str(written, "metadata", "resourceVersion")) != NULL)
		expect_status_written(rc->c->expect, rc->key, rv);
	json_object_put(written);
	rc->status_written = true;
	atomic_fetch_add(&rc->c->n.status_updates, 1);
	return 0;
}

/*
 * Whether the Run still exists as this reconcile knows it (same uid, no
 * deletionTimestamp), asked of the API server rather than the cache: 1,
 * 0 when it does not, or a negative code. A child of an active session
 * vanishes when the Run is deleted and the garbage collector gets to the
 * child before the Run informer delivers the Run's delete; creating the
 * child again is a wasted write and an orphan to collect once more. As
 * client-go's ControllerRefManager checks an owner with an uncached read
 * before adopting (RecheckDeletionTimestamp), one GET settles it.
 */
static int
run_alive(struct rctx *rc)
{
	_cleanup_(kc_json_putp) struct json_object *live = NULL;
	struct kc_status st = { 0 };
	const char *uid;
	int r;

	r = kc_client_get(rc->cl, &(struct kc_get_opts){
		.res = run_res(rc), .ns = rc->ns, .name = rc->name,
	}, &live, &st);
	if (r == KC_ENOTFOUND)
		return 0;
	if (r < 0)
		return kc_log_error_r(&rc->log, r, "get: %s", msg_of(&st, r));
	uid = kc_json_str(live, "metadata", "uid");
	return uid != NULL && strcmp(uid, rc->uid) == 0 &&
	    kc_json_get(live, "metadata", "deletionTimestamp") == NULL;
}

static const struct kc_resource *
kind_res(struct rctx *rc, enum ty_kind kind)
{
	switch (kind) {
	case TY_KIND_PODGROUP:
		return podgroup_res(rc->c->pg_api);
	case TY_KIND_SERVICE:
		return &kc_res_services;
	case TY_KIND_NETPOL:
		return &kc_res_networkpolicies;
	case TY_KIND_POD:
	default:
		return &kc_res_pods;
	}
}

static int
do_delete(struct rctx *rc, const struct ty_delete *d)
{
	struct kc_status st = { 0 };
	int r;

	if (d->uid[0] != '\0' && expect_deleted(rc->c->expect, rc->key, d->uid))
		return 0;
	if (d->kind == TY_KIND_PODGROUP && rc->c->pg_api == TY_PODGROUP_NONE)
		return 0;
	r = kc_client_delete(rc->cl, &(struct kc_delete_opts){
		.res = kind_res(rc, d->kind), .ns = rc->ns, .name = d->name,
		.propagation = KC_PROPAGATION_BACKGROUND,
		.precondition_uid = d->uid[0] != '\0' ? d->uid : NULL,
	}, NULL, &st);
	kc_log_debug(&rc->log, "delete %s %s uid %s: %s", kind_res(rc, d->kind)->kind,
	    d->name, d->uid, r < 0 ? kc_err_name(r) : "ok");
	if (r == KC_ENOTFOUND && d->unseen_index >= 0)
		expect_pod_forget(rc->c->expect, rc->key, d->unseen_index);
	if (r == KC_ENOTFOUND || r == KC_ECONFLICT)
		r = 0;			/* gone, or a newer object: not ours */
	else if (r < 0)
		return kc_log_error_r(&rc->log, r, "delete %s %s: %s",
		    kind_res(rc, d->kind)->kind, d->name, msg_of(&st, r));
	else if (d->kind == TY_KIND_POD)
	{
		atomic_fetch_add(&rc->c->n.pods_deleted, 1);
		if (rc->c->metrics != NULL)
			metrics_pods_deleted(rc->c->metrics, 1);
	}
	else
		atomic_fetch_add(&rc->c->n.objects_deleted, 1);
	if (d->uid[0] != '\0')
		(void)expect_delete(rc->c->expect, rc->key, d->uid);
	else
		/* Created, never cached, now gone: the cache alone says from here. */
		expect_child_deleted(rc->c->expect, rc->key, d->kind);
	return 0;
}

/* What a create that met AlreadyExists found (taken()). */
enum {
	CREATED,
	TAKEN_OURS,		/* success */
	TAKEN_WAIT,		/* an earlier Run's, not collected yet */
	TAKEN_FOREIGN,		/* a conflict, in rc->conflict */
};

static const char *
kind_word(const struct kc_resource *res)
{
	if (res == &kc_res_services)
		return "service";
	if (res == &kc_res_networkpolicies)
		return "networkpolicy";
	if (res == &kc_res_pods)
		return "pod";
	return "podgroup";
}

/*
 * A create of 'name' met AlreadyExists: whose the object is, from one GET
 * of the name (names.h). Someone else's is added to the conflict message
 * and left alone. Returns TAKEN_*, or a negative code.
 */
static int
taken(struct rctx *rc, const struct kc_resource *res, const char *name)
{
	_cleanup_(kc_json_putp) struct json_object *obj = NULL;
	struct kc_status st = { 0 };
	int r;

	r = kc_client_get(rc->cl, &(struct kc_get_opts){
		.res = res, .ns = rc->ns, .name = name,
	}, &obj, &st);
	if (r == KC_ENOTFOUND) {
		rc->name_waits = true;		/* gone meanwhile: create it again */
		return TAKEN_WAIT;
	}
	if (r < 0)
		return kc_log_error_r(&rc->log, r, "get %s %s: %s", res->kind, name,
		    msg_of(&st, r));
	switch (names_owner(obj, rc->name, rc->uid)) {
	case TY_NAME_OURS:
		return TAKEN_OURS;
	case TY_NAME_EARLIER_RUN:
		kc_log_debug(&rc->log, "%s %s: an earlier Run's, not deleted yet", res->kind,
		    name);
		rc->name_waits = true;
		return TAKEN_WAIT;
	case TY_NAME_FOREIGN:
	default:
		break;
	}
	names_conflict(&rc->conflict, kind_word(res), obj);
	return TAKEN_FOREIGN;
}

/*
 * Creates one object: CREATED, or when the name is taken, whose it is
 * (TAKEN_*: this Run's is success); a negative code.
 */
static int
create(struct rctx *rc, const struct kc_resource *res, struct json_object *obj,
    bool *ret_refused, char *why, size_t why_size)
{
	struct kc_status st = { 0 };
	char name[KC_NAME_MAX + 1];
	int r;

	*ret_refused = false;
	kc_strlcpy(name, kc_json_str(obj, "metadata", "name") != NULL ?
	    kc_json_str(obj, "metadata", "name") : "", sizeof(name));
	r = kc_client_create(rc->cl, &(struct kc_create_opts){
		.res = res, .ns = rc->ns, .field_manager = TY_FIELD_MANAGER,
	}, obj, NULL, &st);
	json_object_put(obj);
	if (r == KC_EEXISTS) {
		kc_log_debug(&rc->log, "create %s %s: already exists", res->kind, name);
		return taken(rc, res, name);
	}
	if (r == KC_EFORBIDDEN || r == KC_EINVALID) {
		/* Quota, admission, RBAC: say it in an Event, retry later. */
		*ret_refused = true;
		(void)snprintf(why, why_size, "%s", msg_of(&st, r));
		return r;
	}
	if (r < 0)
		return kc_log_error_r(&rc->log, r, "create %s %s: %s", res->kind, name,
		    msg_of(&st, r));
	if (res != &kc_res_pods)
		kc_log_debug(&rc->log, "created %s %s", res->kind, name);
	return 0;
}

/*
 * The API server refused a create (quota, admission, a missing
 * PriorityClass, RBAC): remembered for the decision (the Scheduled
 * condition says why, the next creates wait for the backoff), one
 * FailedCreate Event (the recorder counts repeats). Not an error: the
 * decision's requeue retries it. Returns 1 (stop creating), or -ENOMEM.
 */
static int
create_refused(struct rctx *rc, int64_t session, const char *kind, const char *name,
    const char *why)
{
	char msg[640];
	int r;

	/* A message cut short is still worth recording. */
	(void)snprintf(msg, sizeof(msg), "Error creating %s %s: %s", kind, name, why);
	if ((r = expect_refused(rc->c->expect, rc->key, session, msg)) < 0)
		return r;
	rc->refusals = (uint32_t)r;
	kc_log_debug(&rc->log, "%s", msg);
	recorder_emit(rc->c->rec, rc->cl, rc->run, true, "FailedCreate", msg);
	return 1;		/* refused: create nothing more now */
}

static int
create_children(struct rctx *rc, const struct ty_decision *d)
{
	struct json_object *obj;
	bool refused;
	char why[512];
	int r;

	if (d->create_podgroup && rc->c->pg_api != TY_PODGROUP_NONE) {
		if ((r = model_podgroup(rc->spec, d->session, rc->c->pg_api, &obj)) < 0)
			return r;
		if ((r = create(rc, podgroup_res(rc->c->pg_api), obj, &refused, why,
		    sizeof(why))) < 0)
			return refused ? create_refused(rc, d->session, "PodGroup", rc->name,
			    why) : r;
		if (r == 0) {
			atomic_fetch_add(&rc->c->n.objects_created, 1);
			expect_child_created(rc->c->expect, rc->key, TY_KIND_PODGROUP, d->session);
		}
	}
	if (d->create_service) {
		if ((r = model_service(rc->spec, d->session, &obj)) < 0)
			return r;
		if ((r = create(rc, &kc_res_services, obj, &refused, why, sizeof(why))) < 0)
			return refused ? create_refused(rc, d->session, "Service", rc->name,
			    why) : r;
		if (r == 0) {
			atomic_fetch_add(&rc->c->n.objects_created, 1);
			expect_child_created(rc->c->expect, rc->key, TY_KIND_SERVICE, d->session);
		}
	}
	if (d->create_netpol) {
		if ((r = model_network_policy(rc->spec, &rc->c->cfg, d->session, &obj)) < 0)
			return r;
		if ((r = create(rc, &kc_res_networkpolicies, obj, &refused, why,
		    sizeof(why))) < 0)
			return refused ? create_refused(rc, d->session, "NetworkPolicy",
			    rc->name, why) : r;
		if (r == 0) {
			atomic_fetch_add(&rc->c->n.objects_created, 1);
			expect_child_created(rc->c->expect, rc->key, TY_KIND_NETPOL, d->session);
		}
	}
	return 0;
}

/*
 * Creates of this session met objects of the Run's names that are
 * someone else's: remembered for the next decision, which ends the
 * session with reason NameConflict (the status, a Warning Event, the
 * cleanup of what the session made). 0, or -ENOMEM.
 */
static int
name_conflict(struct rctx *rc, int64_t session)
{
	int r;

	if (kc_sbuf_end(&rc->conflict) == 0)
		return 0;
	if ((r = expect_conflict_set(rc->c->expect, rc->key, session, rc->conflict_text)) < 0)
		return r;
	kc_log_warn(&rc->log, "session %" PRId64 ": %s", session, rc->conflict_text);
	return 0;
}

/* Whether the Run cache still holds a Run of this name. */
static bool
run_cached(struct rctx *rc)
{
	struct kc_item *it = kc_informer_get(rc->c->caches[TY_CACHE_RUNS], rc->ns, rc->name);
	bool found = it != NULL;

	kc_item_unref(it);
	return found;
}

static int
create_pods(struct rctx *rc, const struct ty_decision *d)
{
	size_t i = 0, batch = 1;
	bool refused;
	char why[512], name[KC_NAME_MAX + 1];
	int r;

	while (i < d->ncreate_pods) {
		size_t end = i + batch < d->ncreate_pods ? i + batch : d->ncreate_pods;

		for (; i < end; i++) {
			struct json_object *obj;
			int32_t index = d->create_pods[i];

			if ((r = model_pod(rc->spec, &rc->c->cfg, d->session, rc->c->pg_api,
			    index, &obj)) < 0)
				return r;
			if ((size_t)snprintf(name, sizeof(name), "%s-%" PRId32, rc->name,
			    index) >= sizeof(name))
				name[0] = '\0';
			if ((r = create(rc, &kc_res_pods, obj, &refused, why,
			    sizeof(why))) < 0)
				return refused ? create_refused(rc, d->session, "Pod", name,
				    why) : r;
			if (r == CREATED)
			{
				atomic_fetch_add(&rc->c->n.pods_created, 1);
				if (rc->c->metrics != NULL)
					metrics_pods_created(rc->c->metrics, 1);
			}
			/* Someone else's pod, or an earlier Run's: never ours to expect. */
			if (r > TAKEN_OURS)
				continue;
			if ((r = expect_pod_created(rc->c->expect, rc->key, rc->uid,
			    d->session, index)) < 0)
				return r;
		}
		batch *= 2;
		/* A name conflict ends the session: nothing more to create. */
		if (kc_sbuf_end(&rc->conflict) > 0)
			break;
		/* Deleted meanwhile (a long start): the rest would be orphans. */
		if (i < d->ncreate_pods && !run_cached(rc)) {
			kc_log_debug(&rc->log, "deleted: %zu pods not created",
			    d->ncreate_pods - i);
			break;
		}
	}
	return 0;
}

static void
rctx_release(struct rctx *rc)
{
	for (size_t i = 0; i < rc->npods; i++)
		kc_item_unref(rc->pod_items[i]);
	kc_free(rc->pod_items);
	model_spec_free(rc->spec);
	json_object_put(rc->run);
}


static double
seconds_between(const char *from, const char *to)
{
	time_t a, b;

	if (from == NULL || to == NULL || kc_time_parse(from, &a) < 0 ||
	    kc_time_parse(to, &b) < 0 || b < a)
		return 0;
	return (double)(b - a);
}

static bool
condition_true(const struct json_object *status, const char *type)
{
	struct json_object *conds = kc_json_get(status, "conditions");
	size_t n = conds != NULL && json_object_is_type(conds, json_type_array) ?
	    json_object_array_length(conds) : 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *cd = json_object_array_get_idx(conds, i);
		const char *t = kc_json_str(cd, "type"), *st = kc_json_str(cd, "status");

		if (t != NULL && strcmp(t, type) == 0)
			return st != NULL && strcmp(st, "True") == 0;
	}
	return false;
}

/* Session metrics and log lines from a status change this process wrote. */
static void
observe_transition(struct rctx *rc, const struct json_object *old,
    const struct json_object *cur)
{
	struct metrics *m = rc->c->metrics;
	const char *start = kc_json_str(cur, "sessionStartTime");
	const char *end = kc_json_str(cur, "sessionEndTime");
	bool same = kc_json_int(old, -1, "session") == kc_json_int(cur, -2, "session");
	char now[32];

	if (end != NULL && (!same || kc_json_str(old, "sessionEndTime") == NULL)) {
		const char *reason = kc_json_str(cur, "reason");

		atomic_fetch_add(&rc->c->n.sessions_ended, 1);
		if (m != NULL)
			metrics_session_ended(m, reason != NULL ? reason : "Unknown",
			    seconds_between(start, end));
	}
	if (start != NULL && (!same || kc_json_str(old, "sessionStartTime") == NULL))
		atomic_fetch_add(&rc->c->n.sessions_started, 1);
	if (condition_true(cur, "Running") && (!same || !condition_true(old, "Running"))) {
		char session[24];
		const struct kc_log_field f[] = { { "session", session } };

		/* A log line, no Event (session.c says why). */
		(void)snprintf(session, sizeof(session), "%" PRId64,
		    kc_json_int(cur, 0, "session"));
		kc_log_kv(KC_LOG_INFO, &rc->log, f, 1, "all %" PRId64 " nodes are running",
		    kc_json_int(cur, 0, "nodes", "total"));
		if (m != NULL && kc_time_format((time_t)(expect_clock_ms(rc->c->expect,
		    rc->key) / 1000), now, sizeof(now)) == 0)
			metrics_all_running(m, seconds_between(start, now));
	}
}

/*
 * The decision's events: one log line and one Event each ('created': and
 * the line for the pods it created). They tell of the status the decision
 * wrote, so they go out once that write succeeded: a delete or create
 * failing afterwards must not lose them, as the next reconcile finds the
 * status written and decides them no more.
 */
static void
emit(struct rctx *rc, const struct ty_decision *d, bool created)
{
	char session[24];
	const struct kc_log_field f[] = { { "session", session } };

	(void)snprintf(session, sizeof(session), "%" PRId64, d->session);
	if (created) {
		if (d->ncreate_pods > 0 && rc->refusals == 0)
			kc_log_kv(KC_LOG_INFO, &rc->log, f, 1, "created %zu pods",
			    d->ncreate_pods);
		return;
	}
	for (size_t i = 0; i < d->nevents; i++) {
		kc_log_kv(d->events[i].warning ? KC_LOG_WARN : KC_LOG_INFO, &rc->log, f, 1,
		    "%s: %s", d->events[i].reason, d->events[i].message);
		recorder_emit(rc->c->rec, rc->cl, rc->run, d->events[i].warning,
		    d->events[i].reason, d->events[i].message);
	}
}

/*
 * Carries the decision out, in the order of session.h's contract: 0 or
 * the first failure. A hold executes nothing.
 */
static int
execute(struct rctx *rc, const struct ty_decision *d)
{
	bool written = false;
	int r;

	if (d->hold)
		return 0;
	if (d->write_status) {
		struct json_object *old = json_object_get(kc_json_get(rc->run, "status"));

		r = write_status(rc, d->status);
		if (r == 0)
			observe_transition(rc, old, d->status);
		json_object_put(old);
		if (r < 0)
			return r;
		written = true;
		emit(rc, d, false);
	}
	for (size_t i = 0; i < d->ndeletes; i++)
		if ((r = do_delete(rc, &d->deletes[i])) < 0)
			return r;
	if (rc->spec != NULL) {
		bool children = d->create_service || d->create_netpol ||
		    (d->create_podgroup && rc->c->pg_api != TY_PODGROUP_NONE);

		/*
		 * A status write just now proved the Run alive; else a child
		 * to create again may be the garbage collector's doing (the
		 * decision held it for TY_HOLD_MS first).
		 */
		if (!written && children && (r = run_alive(rc)) <= 0) {
			if (r == 0)
				kc_log_debug(&rc->log, "gone or being deleted: creates nothing");
			return r;
		}
		if ((r = create_children(rc, d)) < 0)
			return r;
		if (r == 0 && kc_sbuf_end(&rc->conflict) == 0 && d->ncreate_pods > 0 &&
		    (r = create_pods(rc, d)) < 0)
			return r;
		if ((r = name_conflict(rc, d->session)) < 0)
			return r;
		if (rc->refusals == 0 && (children || d->ncreate_pods > 0))
			expect_refusal_clear(rc->c->expect, rc->key);
	}
	if (!written)
		emit(rc, d, false);
	emit(rc, d, true);
	return 0;
}

/*
 * Gathers the decision's input from the caches and the expectations
 * into 'in' (pointing into 'g'). 1: decide; 0: nothing to do (the Run is
 * gone, being deleted, or the cache does not show our last write yet);
 * or a negative code.
 */
struct gathered {
	struct ty_control	 ctl;
	struct ty_problems	 probs;
	struct json_object	*profile;
	const struct ty_pod	**pods, **gone;
	struct kc_item		**gone_items;
	int32_t			*seen, *expected;
	size_t			 nexpected, nseen, ngone;
	struct ty_refusal	 refusal;
	struct ty_write_state	 write;
	const char		*profile_name;	/* what the Run uses, or NULL */
	/* The project of the Run's namespace ("" and NULLs: none). */
	char			 pname[64];
	struct json_object	*pobj;
	struct ty_project	*project;	/* NULL when its spec is invalid */
	struct json_object	*demand;	/* quota_demand() */
	struct ty_quota_gate	 gate;
	char			 gate_msg[640];
	struct ty_conflict	 conflict;
	char			 name_wait[TY_NAMES_MSG_MAX];
};

static void
gathered_release(struct gathered *g)
{
	json_object_put(g->demand);
	project_free(g->project);
	json_object_put(g->pobj);
	json_object_put(g->profile);
	for (size_t i = 0; i < g->ngone; i++)
		kc_item_unref(g->gone_items[i]);
	kc_free(g->gone_items);
	kc_free(g->gone);
	kc_free(g->expected);
	kc_free(g->seen);
	kc_free(g->pods);
}

/*
 * The project of the Run's namespace (its label, the Project listing the
 * namespace), into g: none when there is no such Project.
 */
static int
gather_project(struct rctx *rc, struct gathered *g)
{
	struct ty_problems probs = { 0 };
	char text[512];
	int r;

	if (!rc->c->projects ||
	    !project_of_namespace(rc->c, rc->ns, g->pname, sizeof(g->pname)))
		return 0;
	r = project_cached(rc->c, g->pname, &g->pobj, &g->project, &probs);
	if (r == KC_ENOTFOUND || (r == 0 && g->project != NULL &&
	    !project_has_namespace(g->project, rc->ns))) {
		g->pname[0] = '\0';	/* gone, or releasing this namespace */
		return 0;
	}
	if (r < 0)
		return r;
	if (g->project == NULL) {
		model_problems_text(&probs, text, sizeof(text));
		(void)snprintf(g->gate_msg, sizeof(g->gate_msg), "project %s is invalid: %s",
		    g->pname, text);
	}
	return 0;
}

/* model_validate(), with the project's default profile when the Run names none. */
static int
validate(struct rctx *rc, struct gathered *g)
{
	_cleanup_(kc_json_putp) struct json_object *copy = NULL;
	const char *own = kc_json_str(rc->run, "spec", "profile");
	const struct json_object *run = rc->run;
	int r;

	if (g->profile_name != NULL && g->profile_name[0] != '\0' &&
	    (own == NULL || strcmp(own, g->profile_name) != 0)) {
		struct json_object *spec;

		if ((copy = kc_json_copy(rc->run)) == NULL ||
		    (spec = kc_json_ensure_obj(copy, "spec")) == NULL ||
		    kc_json_set_str(spec, "profile", g->profile_name) < 0)
			return -ENOMEM;
		run = copy;
	}
	r = model_validate(run, g->profile, &rc->c->cfg, &rc->spec, &g->probs);
	return r < 0 && r != KC_EINVALID ? r : 0;
}

/* The spec breaks a rule of the project: the Run is invalid. */
static void
invalidate(struct rctx *rc, struct gathered *g)
{
	model_spec_free(rc->spec);
	rc->spec = NULL;
	kc_json_putp(&g->demand);
	g->gate.demand = NULL;
}

/*
 * The project's rules for the Run (profile allowed, maxGPUsPerRun, a
 * demand that could ever fit) and the quota gate: Hold, Drain and a
 * deletion stop admissions; otherwise a start is admitted for now, and
 * the ledger decides (admit()).
 */
static int
gather_quota(struct rctx *rc, struct gathered *g)
{
	struct ty_quota_gate *q = &g->gate;
	const struct ty_project *p = g->project;
	char why[320];
	int r;

	if (g->pname[0] == '\0')
		return 0;
	*q = (struct ty_quota_gate){ .project = g->pname, .reason = TY_QUOTA_INVALID,
	    .message = g->gate_msg };
	if (p == NULL)
		return 0;
	if (rc->spec != NULL) {
		unsigned n = project_run_check(p, g->profile_name, rc->spec, &g->probs);

		/* Pods the namespace would refuse are never created (no retry loop). */
		if (n == 0 && (r = project_run_pod_security(p, rc->ns, g->profile_name != NULL ?
		    g->profile_name : "", rc->spec, &rc->c->cfg, &g->probs)) != 0) {
			if (r < 0)
				return r;
			n++;
		}
		if (n == 0) {
			if ((r = quota_demand(rc->spec, p->hard, p, &g->demand)) < 0)
				return r;
			if (!quota_fits(p->hard, NULL, g->demand, why, sizeof(why))) {
				model_problem(&g->probs, "spec.nodes", "the Run %s in project %s",
				    why, p->name);
				n++;
			}
		}
		if (n > 0)
			invalidate(rc, g);
	}
	q->demand = g->demand;
	if (kc_json_get(g->pobj, "metadata", "deletionTimestamp") != NULL) {
		q->reason = TY_QUOTA_DELETING;
		q->stop = !p->wait_for_runs;
		q->stop_reason = TY_REASON_PROJECT_DELETED;
		(void)snprintf(g->gate_msg, sizeof(g->gate_msg), "project %s is being deleted "
		    "(deletionPolicy.runs: %s)%s", p->name, p->wait_for_runs ?
		    "WaitForCompletion" : "Cancel", p->wait_for_runs ?
		    ": no new sessions start" : "");
	} else if (p->suspend != TY_SUSPEND_NONE) {
		q->reason = TY_QUOTA_SUSPENDED;
		q->stop = p->suspend == TY_SUSPEND_DRAIN;
		q->stop_reason = TY_REASON_PROJECT_SUSPENDED;
		(void)snprintf(g->gate_msg, sizeof(g->gate_msg), "project %s is suspended "
		    "(suspend: %s): no new sessions start", p->name,
		    q->stop ? "Drain" : "Hold");
	} else
		q->admit = true;	/* for now: the ledger has the last word */
	return 0;
}

/*
 * The submitter's cap in the project: a Ready member's maxGPUs (a User
 * by name, a ServiceAccount by its user name), else the policy's
 * maxGPUsPerMember; -1 (none) when the Run does not say who submitted it
 * (the mutating webhook is not installed).
 */
static int
member_cap(struct rctx *rc, const struct ty_project *p, const char *user, int64_t *ret)
{
	struct ty_member_entry *all = NULL;
	size_t n = 0, total = 0;
	char sa[TY_SUBJECT_NAME_MAX + 96];
	int r;

	*ret = -1;
	if (user == NULL || user[0] == '\0')
		return 0;
	*ret = p->max_gpus_per_member;
	if ((r = project_members(rc->c, p, kc_clock_wall(), &all, &n, &total)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		const struct ty_subject *s = &all[i].v.subject;

		if (!all[i].v.ready)
			continue;
		if (s->kind == TY_SUBJECT_SERVICE_ACCOUNT)
			(void)snprintf(sa, sizeof(sa), "system:serviceaccount:%s:%s", s->ns,
			    s->name);
		if ((s->kind == TY_SUBJECT_USER && strcmp(s->name, user) == 0) ||
		    (s->kind == TY_SUBJECT_SERVICE_ACCOUNT && strcmp(sa, user) == 0)) {
			*ret = all[i].v.max_gpus;
			break;
		}
	}
	kc_free(all);
	return 0;
}

static int
gather(struct rctx *rc, struct gathered *g, struct ty_session_in *in)
{
	struct ctl *c = rc->c;
	struct ty_child podgroup, service, netpol;
	const char *pname;
	char index_key[KC_INFORMER_INDEX_MAX];
	int64_t cur;
	int r;

	if ((rc->run = cached_copy(c->caches[TY_CACHE_RUNS], rc->ns, rc->name, &r)) == NULL) {
		if (r == 0)
			expect_forget(c->expect, rc->key);	/* the Run is gone */
		return r;
	}
	if ((rc->uid = kc_json_str(rc->run, "metadata", "uid")) == NULL)
		return 0;
	/*
	 * Being deleted: the garbage collector deletes what the Run owns,
	 * and nothing is written to a Run on its way out.
	 */
	if (kc_json_get(rc->run, "metadata", "deletionTimestamp") != NULL) {
		expect_forget(c->expect, rc->key);
		return 0;
	}
	/*
	 * The cache does not show our last status write yet: deciding from
	 * it would redo that write and meet a conflict. The write's own
	 * event queues this key again.
	 */
	if (expect_status_stale(c->expect, rc->key,
	    kc_json_str(rc->run, "metadata", "resourceVersion")))
		return 0;
	model_control(rc->run, &g->ctl);
	if ((r = gather_project(rc, g)) < 0)
		return r;
	pname = kc_json_str(rc->run, "spec", "profile");
	if (g->project != NULL)
		pname = project_run_profile(g->project, pname);
	g->profile_name = pname;
	if (pname != NULL && *pname != '\0' &&
	    (g->profile = cached_copy(c->caches[TY_CACHE_PROFILES], NULL, pname, &r)) ==
	    NULL && r < 0)
		return r;
	if ((r = validate(rc, g)) < 0)
		return r;
	if ((r = gather_quota(rc, g)) < 0)
		return r;

	cur = kc_json_int(rc->run, -1, "status", "session");
	child_of(rc, c->caches[TY_CACHE_PODGROUPS], &podgroup);
	child_of(rc, c->caches[TY_CACHE_SERVICES], &service);
	child_of(rc, c->caches[TY_CACHE_NETPOLS], &netpol);
	earlier_child(rc, c->caches[TY_CACHE_PODGROUPS], "podgroup");
	earlier_child(rc, c->caches[TY_CACHE_SERVICES], "service");
	earlier_child(rc, c->caches[TY_CACHE_NETPOLS], "networkpolicy");
	{
		/* Created for this session, not in the cache yet: present. */
		struct ty_child *ch[] = { &podgroup, &service, &netpol };
		const enum ty_kind kinds[] = { TY_KIND_PODGROUP, TY_KIND_SERVICE,
		    TY_KIND_NETPOL };

		for (size_t i = 0; i < 3; i++)
			if (cur >= 1 && expect_child(c->expect, rc->key, kinds[i], cur,
			    ch[i]->exists && ch[i]->session == cur) && !ch[i]->exists)
				*ch[i] = (struct ty_child){ .exists = true, .session = cur };
	}
	(void)snprintf(index_key, sizeof(index_key), "%s/%s", rc->ns, rc->name);
	if ((r = kc_informer_by_index(c->caches[TY_CACHE_PODS], index_key, collect_pod,
	    rc)) < 0)
		return r;
	if (rc->nwait > 0)
		(void)snprintf(g->name_wait, sizeof(g->name_wait), "waiting for %s%s of an "
		    "earlier Run named %s to be deleted", rc->wait_text, rc->nwait >
		    NAME_WAIT_LIST ? " and more" : "", rc->name);
	if (rc->npods > 0 && ((g->pods = kc_calloc(rc->npods, sizeof(*g->pods))) == NULL ||
	    (g->seen = kc_calloc(rc->npods, sizeof(*g->seen))) == NULL))
		return -ENOMEM;
	for (size_t i = 0; i < rc->npods; i++) {
		const struct ty_pod *p = kc_item_data(rc->pod_items[i]);

		g->pods[i] = p;
		if (p->session == cur && p->index >= 0)
			g->seen[g->nseen++] = p->index;
	}
	if ((r = expect_pods(c->expect, rc->key, rc->uid, cur, g->seen, g->nseen,
	    &g->expected, &g->nexpected)) < 0 ||
	    (r = expect_gone(c->expect, rc->key, rc->uid, cur, &g->gone_items,
	    &g->ngone)) < 0)
		return r;
	if (g->ngone > 0 && (g->gone = kc_calloc(g->ngone, sizeof(*g->gone))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < g->ngone; i++)
		g->gone[i] = kc_item_data(g->gone_items[i]);
	expect_write_state(c->expect, rc->key, &g->write);
	g->write.now_ms = kc_clock_now_ms();

	*in = (struct ty_session_in){
		.run = rc->run, .ctl = &g->ctl, .spec = rc->spec,
		.problems = rc->spec == NULL ? &g->probs : NULL, .cfg = &c->cfg,
		.podgroup = podgroup, .service = service, .netpol = netpol,
		.pods = g->pods, .npods = rc->npods, .expected = g->expected,
		.nexpected = g->nexpected, .gone = g->gone, .ngone = g->ngone,
		.api = c->pg_api, .now_ms = expect_clock_ms(c->expect, rc->key),
		.refused = expect_refusal(c->expect, rc->key, cur, &g->refusal) ?
		    &g->refusal : NULL,
		.write = &g->write,
		.quota = g->pname[0] != '\0' ? &g->gate : NULL,
		.conflict = cur >= 1 && expect_conflict(c->expect, rc->key, cur, &g->conflict) ?
		    &g->conflict : NULL,
		.name_wait = rc->nwait > 0 ? g->name_wait : NULL,
	};
	return 1;
}

/*
 * session_decide(), and when it starts a session of a project's Run, the
 * ledger's verdict: admitted, the reservation holds from now (released
 * again when the status write fails); else the Run waits, decided again
 * with the gate closed. A Run asking more GPUs than its submitter may hold
 * at all is invalid.
 */
static int
decide(struct rctx *rc, struct gathered *g, struct ty_session_in *in, struct ty_decision *d)
{
	const struct ty_project *p = g->project;
	struct quota_verdict v;
	const char *user, *ts;
	int64_t cap, gpus;
	time_t created = 0;
	int r;

	if ((r = session_decide(in, d)) < 0)
		return r;
	if (!d->started || in->quota == NULL || !in->quota->admit || rc->spec == NULL ||
	    p == NULL)
		return 0;
	user = kc_json_str(rc->run, "metadata", "annotations", TY_ANN_SUBMITTED_BY);
	if ((r = member_cap(rc, p, user, &cap)) < 0)
		return r;
	gpus = rc->spec->gpus_per_node * rc->spec->nodes;
	if (cap >= 0 && gpus > cap) {
		model_problem(&g->probs, "spec.nodes", "the Run asks for %" PRId64 " GPUs; "
		    "its submitter %s may hold at most %" PRId64 " in project %s", gpus, user,
		    cap, p->name);
		invalidate(rc, g);
		in->spec = NULL;
		in->problems = &g->probs;
		session_decision_release(d);
		return session_decide(in, d);
	}
	ts = kc_json_str(rc->run, "metadata", "creationTimestamp");
	if (ts == NULL || kc_time_parse(ts, &created) < 0)
		created = 0;
	r = quota_admit(rc->c->ledger, &(struct quota_ask){
		.key = rc->key, .uid = rc->uid, .project = p->name,
		.user = user != NULL ? user : "", .created = (int64_t)created,
		.session = d->session, .gpus = gpus, .user_max_gpus = cap,
		.hard = p->hard, .demand = g->demand,
	}, &v);
	if (r < 0)
		return r;
	if (v.admit) {
		rc->admitted = d->session;
		return 0;
	}
	kc_strlcpy(g->gate_msg, v.message, sizeof(g->gate_msg));
	rc->waits = true;
	g->gate.admit = false;
	g->gate.reason = strcmp(v.reason, TY_QUOTA_MEMBER) == 0 ? TY_QUOTA_MEMBER :
	    TY_QUOTA_EXCEEDED;
	g->gate.message = g->gate_msg;
	session_decision_release(d);
	return session_decide(in, d);
}

/*
 * When to look again: the decision's timed check (on the Run's session
 * clock), its policy's, a refusal's. A Run with nothing timed lets its
 * session clock go: its next look reads the wall clock again.
 */
static int64_t
requeue(const struct rctx *rc, const struct ty_decision *d)
{
	uint64_t after = d->after_ms, now;

	if (d->next_check_ms != 0) {
		now = expect_clock_ms(rc->c->expect, rc->key);
		/* Whole seconds: add a second so the check is not early. */
		after = KC_MIN(after != 0 ? after : UINT64_MAX,
		    d->next_check_ms > now ? d->next_check_ms - now + 1000 : 1000);
	} else if (rc->refusals == 0)
		expect_clock_release(rc->c->expect, rc->key);
	/*
	 * Refused just now: the next reconcile writes why, the backoff waits.
	 * A name conflict just met: the next one ends the session.
	 */
	if (rc->refusals > 0 || kc_sbuf_end(&rc->conflict) > 0)
		after = 100;
	/*
	 * Pods deleted by name that the cache never showed: no event may
	 * come for them; a look again finds them gone.
	 */
	for (size_t i = 0; i < d->ndeletes; i++)
		if (d->deletes[i].unseen_index >= 0) {
			after = KC_MIN(after != 0 ? after : UINT64_MAX, UNSEEN_RECHECK_MS);
			break;
		}
	/* An earlier Run's object of the name: its delete comes, or a look. */
	if (rc->name_waits)
		after = KC_MIN(after != 0 ? after : UINT64_MAX, NAME_WAIT_RECHECK_MS);
	/*
	 * Waiting for quota: the ledger's changes bring it back; a look now
	 * and then besides, so no lost event leaves it waiting.
	 */
	if (rc->waits)
		after = KC_MIN(after != 0 ? after : UINT64_MAX, QUOTA_RECHECK_MS);
	return after != 0 ? RECONCILE_AFTER(after) : RECONCILE_DONE;
}

/*
 * The Run of 'key': gather (caches, expectations), decide (session.c,
 * pure: the session rules and the status-write policy), execute.
 */
static int64_t
reconcile_run(struct ctl *c, struct kc_client *cl, const char *key)
{
	struct rctx rc = { .c = c, .cl = cl, .key = key };
	struct gathered g = { 0 };
	struct ty_session_in in;
	struct ty_decision d = { 0 };
	int64_t ret;
	int r;

	if (cache_key_split(key, rc.ns, rc.name) < 0)
		return RECONCILE_DONE;		/* not a key we made */
	kc_sbuf_init(&rc.conflict, rc.conflict_text, sizeof(rc.conflict_text));
	kc_sbuf_init(&rc.wait, rc.wait_text, sizeof(rc.wait_text));
	rc.log = (struct kc_log_ctx){ .action = "reconcile", .kind = "Run", .ns = rc.ns,
	    .name = rc.name };
	rc.log.rid = atomic_fetch_add(&c->n.reconciles, 1) + 1;
	if ((r = gather(&rc, &g, &in)) <= 0)
		ret = r;
	else if ((r = decide(&rc, &g, &in, &d)) < 0)
		ret = r;
	else {
		if (!d.write_status)
			expect_write_wait(c->expect, key, d.write.wait_hash, d.write.wait_since_ms);
		if (d.hold)
			kc_log_debug(&rc.log, "held for %" PRIu64 " ms: the Run may be on its "
			    "way out", d.after_ms);
		ret = (r = execute(&rc, &d)) < 0 ? r : requeue(&rc, &d);
	}
	/* Admitted, but the start was not written: the quota is free again. */
	if (rc.admitted > 0 && !rc.status_written)
		quota_cancel(c->ledger, key, rc.admitted);
	if (ret < 0)
		atomic_fetch_add(&c->n.reconcile_errors, 1);
	session_decision_release(&d);
	gathered_release(&g);
	rctx_release(&rc);
	return ret;
}

/* ---- what a change maps to ------------------------------------------------ */

struct profile_walk {
	const char	*name;
	ty_enqueue_fn	*enqueue;
	void		*arg;
};

static int
enqueue_if_uses(void *arg, struct kc_item *it)
{
	struct profile_walk *w = arg;

	if (strcmp(ty_obj_profile(kc_item_data(it)), w->name) == 0)
		w->enqueue(w->arg, kc_item_key(it));
	return 0;
}

/*
 * A pod left the cache. Unless this process deleted it, keep its last
 * view for the session rules (expect_pod_gone()): the pod GC fails and
 * deletes a pod of a lost node at once, and a reconcile may only see it
 * missing.
 */
static void
pod_gone(struct ctl *c, struct kc_item *it, const char *key)
{
	const struct ty_pod *p = kc_item_data(it);
	char ubuf[TY_UID_TEXT_MAX], obuf[TY_UID_TEXT_MAX];
	const char *owner = ty_pod_uid(p, TY_POD_OWNER_UID, obuf, sizeof(obuf));
	const char *uid = ty_pod_uid(p, TY_POD_UID, ubuf, sizeof(ubuf));

	if (owner != NULL && uid != NULL && p->session >= 0 &&
	    !expect_deleted(c->expect, key, uid) &&
	    expect_pod_gone(c->expect, key, owner, p->session, it) < 0)
		kc_log_warn(&(struct kc_log_ctx){ .action = "watch" }, "pod %s: out of memory",
		    kc_item_name(it));
}

struct enq {
	ty_enqueue_fn	*enqueue;
	void		*arg;
	const char	*ns;		/* enqueue_in_ns(): only this namespace's */
};

static void
enqueue_key(void *arg, const char *key)
{
	struct enq *e = arg;

	e->enqueue(e->arg, key);
}

static int
enqueue_in_ns(void *arg, struct kc_item *it)
{
	struct enq *e = arg;
	char ns[KC_NAMESPACE_MAX + 1];

	kc_item_ns(it, ns, sizeof(ns));
	if (strcmp(ns, e->ns) == 0)
		e->enqueue(e->arg, kc_item_key(it));
	return 0;
}

/*
 * The ledger's view of a changed Run (quota.h). Only Runs of a project's
 * namespace, or ones the ledger knows, are inflated. When a project's
 * sums or queue changed, its waiting Runs are looked at again.
 */
static void
ledger_update(struct ctl *c, enum ty_change change, struct kc_item *it, struct enq *e)
{
	char ns[KC_NAMESPACE_MAX + 1], nsproj[64], project[64], old[64] = "";
	const char *key = kc_item_key(it);
	struct json_object *run = NULL;
	struct quota_run v;
	bool in_project;
	int r;

	if (c->ledger == NULL)
		return;
	if (change == TY_DELETED)
		r = quota_forget(c->ledger, key, project);
	else {
		kc_item_ns(it, ns, sizeof(ns));
		in_project = c->projects && project_of_namespace(c, ns, nsproj, sizeof(nsproj));
		if (!in_project && !quota_known(c->ledger, key))
			return;
		if ((r = cache_obj_json(kc_item_data(it), &run)) == 0) {
			quota_run_read(run, key, in_project ? nsproj : NULL, &v);
			r = quota_observe(c->ledger, &v, project, old);
			json_object_put(run);
		}
	}
	if (r < 0) {
		struct kc_log_ctx lc = { .action = "watch", .kind = "Run" };

		kc_log_warn(&lc, "%s: quota ledger: %s", key, kc_strerror(r));
		return;
	}
	if (r > 0 && project[0] != '\0')
		quota_foreach(c->ledger, project, false, enqueue_key, e);
	if (r > 0 && old[0] != '\0')
		quota_foreach(c->ledger, old, false, enqueue_key, e);
}

static void
enqueue_nothing(void *arg, const char *key)
{
	(void)arg;
	(void)key;
}

static int
ledger_add(void *arg, struct kc_item *it)
{
	struct ctl *c = arg;

	ledger_update(c, TY_ADDED, it, &(struct enq){ enqueue_nothing, NULL, NULL });
	return 0;
}

void
run_ledger_rebuild(struct ctl *c)
{
	if (c->ledger != NULL && c->caches[TY_CACHE_RUNS] != NULL)
		(void)kc_informer_foreach(c->caches[TY_CACHE_RUNS], ledger_add, c);
}

/*
 * The Run's own key for a Run; the Run named by the trainyard.dev/run
 * label of a pod or child; the Runs naming a changed ResourceProfile;
 * every Run of a changed Project (its quota, suspend, deletion); the Runs
 * of a namespace that joined a project.
 */
static void
run_changed(struct ctl *c, enum ty_cache_id id, enum ty_change change, struct kc_item *it,
    ty_enqueue_fn *enqueue, void *arg)
{
	char ns[KC_NAMESPACE_MAX + 1], key[KC_WORKQUEUE_KEY_MAX];
	struct enq e = { enqueue, arg, NULL };
	const char *run;

	switch (id) {
	case TY_CACHE_RUNS:
		ledger_update(c, change, it, &e);
		enqueue(arg, kc_item_key(it));
		return;
	case TY_CACHE_PROFILES:
		(void)kc_informer_foreach(c->caches[TY_CACHE_RUNS], enqueue_if_uses,
		    &(struct profile_walk){ kc_item_name(it), enqueue, arg });
		return;
	case TY_CACHE_PROJECTS:
		if (c->ledger != NULL)
			quota_foreach(c->ledger, kc_item_name(it), true, enqueue_key, &e);
		return;
	case TY_CACHE_NAMESPACES:
		if (change != TY_DELETED) {
			e.ns = kc_item_name(it);
			(void)kc_informer_foreach(c->caches[TY_CACHE_RUNS], enqueue_in_ns, &e);
		}
		return;
	case TY_CACHE_PODS:
	case TY_CACHE_SERVICES:
	case TY_CACHE_NETPOLS:
	case TY_CACHE_PODGROUPS:
	case TY_CACHE_N:
	default:
		break;
	}
	if ((run = cache_run_of(id, it)) == NULL || run[0] == '\0')
		return;
	kc_item_ns(it, ns, sizeof(ns));
	if ((size_t)snprintf(key, sizeof(key), "%s/%s", ns, run) >= sizeof(key))
		return;
	if (id == TY_CACHE_PODS && change == TY_DELETED)
		pod_gone(c, it, key);
	enqueue(arg, key);
}

const struct reconciler run_reconciler = {
	.kind = "Run",
	.tag = 'R',
	.watches = 1u << TY_CACHE_RUNS | 1u << TY_CACHE_PROFILES | 1u << TY_CACHE_PODS |
	    1u << TY_CACHE_SERVICES | 1u << TY_CACHE_NETPOLS | 1u << TY_CACHE_PODGROUPS |
	    1u << TY_CACHE_PROJECTS | 1u << TY_CACHE_NAMESPACES,
	.changed = run_changed,
	.reconcile = reconcile_run,
};

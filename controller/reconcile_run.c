/*
 * reconcile_run.c: one Run, from the caches to the API.
 *
 * The rules live in session.c (session_decide(), pure); this file gathers
 * its input from the caches and carries its decision out, in the order
 * session.h's contract asks:
 *
 *	1. the Run and its ResourceProfile (copies: cached trees are shared
 *	   between threads and never handed to code that might serialize or
 *	   reference them), model_control(), model_validate();
 *	2. the Run's children and pods from the caches, keeping only those
 *	   whose controller ownerReference is this Run's uid (a Run deleted
 *	   and created again under the same name must not adopt the old one's
 *	   pods), and the pods this process created that the cache does not
 *	   show yet (expect.c);
 *	3. the status, written first and only when it changed, with the Run's
 *	   resourceVersion (a conflict stops the reconcile: the newer Run is
 *	   on its way through the informer);
 *	4. deletes (uid preconditions; NotFound is success), then creates
 *	   (AlreadyExists is success), then Events;
 *	5. the time of the next timed check (deadline, schedule timeout,
 *	   restart backoff) as RECONCILE_AFTER, so it fires with no other
 *	   event.
 *
 * Pods are created in "slow start" batches of 1, 2, 4, ... as the
 * Kubernetes workload controllers do: when the first pod is refused (quota
 * exceeded, an admission webhook, a bad image reference) the reconcile
 * stops after one failed request instead of sending ten thousand.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>

#include "controller.h"

/*
 * A progress-only status change is written once it has stood still this
 * long: longer than kube-scheduler's longest pod backoff
 * (podMaxBackoffSeconds, 10 s), so pods the scheduler retries on its
 * normal schedule do not count as stalled. While it keeps moving, it is
 * written at most every PROGRESS_MAX_MS. See progress_write_now().
 */
#define PROGRESS_QUIET_MS	15000
#define PROGRESS_MAX_MS		60000

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
};

const struct kc_resource ty_res_runs = {
	.group = "trainyard.dev", .version = "v1alpha1", .resource = "runs",
	.kind = "Run", .namespaced = true,
};
const struct kc_resource ty_res_profiles = {
	.group = "trainyard.dev", .version = "v1alpha1",
	.resource = "resourceprofiles", .kind = "ResourceProfile", .namespaced = false,
};
const struct kc_resource ty_res_podgroups_x = {
	.group = "scheduling.x-k8s.io", .version = "v1alpha1",
	.resource = "podgroups", .kind = "PodGroup", .namespaced = true,
};
const struct kc_resource ty_res_podgroups_sigs = {
	.group = "scheduling.sigs.k8s.io", .version = "v1alpha1",
	.resource = "podgroups", .kind = "PodGroup", .namespaced = true,
};

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
	if ((*r = manager_obj_json(kc_item_data(it), &copy)) < 0)
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
	if (ci->owner_uid != 0 && session_uid_eq(ty_child_str(ci, ci->owner_uid), rc->uid)) {
		char buf[TY_UID_TEXT_MAX];

		ret->exists = true;
		ret->deleting = ci->deleting;
		ret->session = ci->session;
		kc_strlcpy(ret->uid, ci->uid != 0 ? session_uid_text(ty_child_str(ci,
		    ci->uid), buf, sizeof(buf)) : "", sizeof(ret->uid));
	}
	kc_item_unref(it);
}

static int
collect_pod(void *arg, struct kc_item *it)
{
	struct rctx *rc = arg;

	if (!ty_pod_uid_is(kc_item_data(it), TY_POD_OWNER_UID, rc->uid))
		return 0;
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
		.res = &ty_res_runs, .ns = rc->ns, .name = rc->name,
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
	atomic_fetch_add(&rc->c->n.status_updates, 1);
	return 0;
}

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
		if (type != NULL && strcmp(type, "Scheduled") == 0)
			continue;
		if (!kc_json_equal(kc_json_get(a, "status"), kc_json_get(b, "status")) ||
		    !kc_json_equal(kc_json_get(a, "reason"), kc_json_get(b, "reason")))
			return false;
	}
	return true;
}

#define FNV64_OFFSET	14695981039346656037u

static uint64_t
fnv64(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211u;
	return h;
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

	h = fnv64(h, &(uint8_t){ (uint8_t)json_object_get_type(v) }, 1);
	switch (json_object_get_type(v)) {
	case json_type_object:
		json_object_object_foreach(v, key, val) {
			if (strcmp(key, "lastTransitionTime") == 0 ||
			    strcmp(key, "allPodsCreated") == 0)
				continue;
			h = progress_hash(fnv64(h, key, strlen(key) + 1), val);
		}
		break;
	case json_type_array:
		for (size_t k = 0; k < json_object_array_length(v); k++)
			h = progress_hash(h, json_object_array_get_idx(v, k));
		break;
	case json_type_string:
		h = fnv64(h, json_object_get_string(v),
		    (size_t)json_object_get_string_len(v) + 1);
		break;
	case json_type_int:
	case json_type_boolean:
		i = json_object_get_int64(v);
		h = fnv64(h, &i, sizeof(i));
		break;
	case json_type_double:
		h = fnv64(h, json_object_get_string(v), strlen(json_object_get_string(v)));
		break;
	case json_type_null:
	default:
		break;
	}
	return h;
}

/*
 * Whether a progress-only status change (progress_only()) from 'old' is
 * written now; if not, *ret_after is when to look again (0: no need).
 * The rule:
 *
 *	- a change a user cannot see (allPodsCreated alone) waits for the
 *	  next write of anything else;
 *	- while pods or children of the session are being created (some
 *	  left to create, or created and not in the cache yet), it waits:
 *	  the creates' own events bring the next reconcile;
 *	- after that, it is written once it has looked the same for
 *	  PROGRESS_QUIET_MS: the session stalled (a gang that does not fit,
 *	  a slow image pull, a quota), and the status says where and why;
 *	- a start that keeps moving writes nothing until its next real
 *	  change (Running, or an end), but at most PROGRESS_MAX_MS after the
 *	  last status write its counts are written anyway, so a start that
 *	  takes minutes still shows them.
 *
 * So a session start costs two status writes (the start, all running)
 * however slow the API server is, as long as its pods keep moving; what
 * a user would have seen in between is at most PROGRESS_QUIET_MS old
 * whenever it stops moving.
 */
static bool
progress_write_now(struct rctx *rc, const struct json_object *old,
    const struct ty_decision *d, size_t nexpected, uint64_t *ret_after)
{
	uint64_t age = expect_status_age_ms(rc->c->expect, rc->key);
	uint64_t h = progress_hash(FNV64_OFFSET, d->status);
	bool creating = d->ncreate_pods > 0 || nexpected > 0 || d->create_podgroup ||
	    d->create_service || d->create_netpol;
	uint64_t still, wait;

	*ret_after = 0;
	if (h == progress_hash(FNV64_OFFSET, old))
		return false;
	/* Creates are movement too: the clock starts once they are done. */
	still = expect_progress(rc->c->expect, rc->key, creating ? 0 : h != 0 ? h : 1);
	if (age >= PROGRESS_MAX_MS || (!creating && still >= PROGRESS_QUIET_MS)) {
		kc_log_debug(&rc->log, "progress unchanged for %" PRIu64 " ms, last "
		    "status write %" PRIu64 " ms ago: written", still, age);
		return true;
	}
	wait = PROGRESS_QUIET_MS - still;	/* still is 0 while creating */
	*ret_after = KC_MIN(wait, PROGRESS_MAX_MS - age);
	return false;
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
		.res = &ty_res_runs, .ns = rc->ns, .name = rc->name,
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
	return 0;
}

/* Creates one object; AlreadyExists is success. */
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
		return 1;
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

static int
create_refused(struct rctx *rc, const char *kind, const char *name, const char *why,
    int r)
{
	char msg[768];

	/* A message cut short is still worth recording. */
	if (snprintf(msg, sizeof(msg), "Error creating %s %s: %s", kind, name, why) < 0)
		return r;
	recorder_emit(rc->c->rec, rc->cl, rc->run, true, "FailedCreate", msg);
	return r;
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
			return refused ? create_refused(rc, "PodGroup", rc->name, why, r) : r;
		if (r == 0) {
			atomic_fetch_add(&rc->c->n.objects_created, 1);
			expect_child_created(rc->c->expect, rc->key, TY_KIND_PODGROUP, d->session);
		}
	}
	if (d->create_service) {
		if ((r = model_service(rc->spec, d->session, &obj)) < 0)
			return r;
		if ((r = create(rc, &kc_res_services, obj, &refused, why, sizeof(why))) < 0)
			return refused ? create_refused(rc, "Service", rc->name, why, r) : r;
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
			return refused ? create_refused(rc, "NetworkPolicy", rc->name, why, r) :
			    r;
		if (r == 0) {
			atomic_fetch_add(&rc->c->n.objects_created, 1);
			expect_child_created(rc->c->expect, rc->key, TY_KIND_NETPOL, d->session);
		}
	}
	return 0;
}

/* Whether the Run cache still holds a Run of this name. */
static bool
run_cached(struct rctx *rc)
{
	struct kc_item *it = kc_informer_get(rc->c->runs, rc->ns, rc->name);
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
				return refused ? create_refused(rc, "Pod", name, why, r) : r;
			if (r == 0)
			{
				atomic_fetch_add(&rc->c->n.pods_created, 1);
				if (rc->c->metrics != NULL)
					metrics_pods_created(rc->c->metrics, 1);
			}
			if ((r = expect_pod_created(rc->c->expect, rc->key, rc->uid,
			    d->session, index)) < 0)
				return r;
		}
		batch *= 2;
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

static int
split_key(struct rctx *rc, const char *key)
{
	const char *slash = strchr(key, '/');

	if (slash == NULL || (size_t)(slash - key) > KC_NAMESPACE_MAX ||
	    strlen(slash + 1) > KC_NAME_MAX)
		return -EINVAL;
	memcpy(rc->ns, key, (size_t)(slash - key));
	rc->ns[slash - key] = '\0';
	kc_strlcpy(rc->name, slash + 1, sizeof(rc->name));
	return 0;
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
		if (m != NULL && kc_time_format(kc_clock_wall(), now, sizeof(now)) == 0)
			metrics_all_running(m, seconds_between(start, now));
	}
}

/*
 * Executes the decision ('nexpected' pods of it created and not cached
 * yet); 0 or the first failure.
 */
static int
execute(struct rctx *rc, const struct ty_decision *d, size_t nexpected,
    uint64_t *ret_after)
{
	bool written = false;
	int r;

	*ret_after = 0;
	if (d->status_changed) {
		struct json_object *old = json_object_get(kc_json_get(rc->run, "status"));

		if (progress_only(old, d->status) &&
		    !progress_write_now(rc, old, d, nexpected, ret_after)) {
			json_object_put(old);
			goto rest;
		}
		r = write_status(rc, d->status);
		if (r == 0)
			observe_transition(rc, old, d->status);
		json_object_put(old);
		if (r < 0)
			return r;
		written = true;
	}
rest:
	for (size_t i = 0; i < d->ndeletes; i++)
		if ((r = do_delete(rc, &d->deletes[i])) < 0)
			return r;
	if (rc->spec != NULL) {
		/*
		 * A status write just now proved the Run alive; else a child
		 * to create again may be the garbage collector's doing.
		 */
		if (!written && (d->create_service || d->create_netpol ||
		    (d->create_podgroup && rc->c->pg_api != TY_PODGROUP_NONE)) &&
		    (r = run_alive(rc)) <= 0) {
			if (r == 0)
				kc_log_debug(&rc->log, "gone or being deleted: creates nothing");
			return r;
		}
		if ((r = create_children(rc, d)) < 0)
			return r;
		if (d->ncreate_pods > 0 && (r = create_pods(rc, d)) < 0)
			return r;
	}
	{
		char session[24];
		const struct kc_log_field f[] = { { "session", session } };

		(void)snprintf(session, sizeof(session), "%" PRId64, d->session);
		if (d->ncreate_pods > 0)
			kc_log_kv(KC_LOG_INFO, &rc->log, f, 1, "created %zu pods",
			    d->ncreate_pods);
		for (size_t i = 0; i < d->nevents; i++) {
			/* Every lifecycle step: one log line and one Event. */
			kc_log_kv(d->events[i].warning ? KC_LOG_WARN : KC_LOG_INFO, &rc->log,
			    f, 1, "%s: %s", d->events[i].reason, d->events[i].message);
			recorder_emit(rc->c->rec, rc->cl, rc->run, d->events[i].warning,
			    d->events[i].reason, d->events[i].message);
		}
	}
	return 0;
}

int64_t
reconcile_run(struct ctl *c, struct kc_client *cl, const char *key)
{
	struct rctx rc = { .c = c, .cl = cl, .key = key };
	struct ty_control ctl;
	struct ty_problems probs = { 0 };
	struct ty_session_in in = { 0 };
	struct ty_decision d = { 0 };
	struct json_object *profile = NULL;
	const struct ty_pod **pods = NULL, **gone = NULL;
	struct kc_item **gone_items = NULL;
	int32_t *seen = NULL, *expected = NULL;
	size_t nexpected = 0, nseen = 0, ngone = 0;
	const char *pname;
	char index_key[KC_INFORMER_INDEX_MAX];
	uint64_t after = 0;
	int64_t ret;
	int r;

	if (split_key(&rc, key) < 0)
		return RECONCILE_DONE;		/* not a key we made */
	rc.log = (struct kc_log_ctx){ .action = "reconcile", .kind = "Run", .ns = rc.ns,
	    .name = rc.name };
	rc.log.rid = atomic_fetch_add(&c->n.reconciles, 1) + 1;
	if ((rc.run = cached_copy(c->runs, rc.ns, rc.name, &r)) == NULL) {
		if (r == 0)
			expect_forget(c->expect, key);	/* the Run is gone */
		return r;
	}
	if ((rc.uid = kc_json_str(rc.run, "metadata", "uid")) == NULL) {
		ret = RECONCILE_DONE;
		goto out;
	}
	/*
	 * The cache does not show our last status write yet: deciding from
	 * it would redo that write and meet a conflict. The write's own
	 * event queues this key again.
	 */
	if (expect_status_stale(c->expect, key,
	    kc_json_str(rc.run, "metadata", "resourceVersion"))) {
		ret = RECONCILE_DONE;
		goto out;
	}
	model_control(rc.run, &ctl);
	if ((pname = kc_json_str(rc.run, "spec", "profile")) != NULL && *pname != '\0' &&
	    (profile = cached_copy(c->profiles, NULL, pname, &r)) == NULL && r < 0) {
		ret = r;
		goto out;
	}
	r = model_validate(rc.run, profile, &c->cfg, &rc.spec, &probs);
	if (r < 0 && r != KC_EINVALID) {
		ret = r;
		goto out;
	}

	child_of(&rc, c->podgroups, &in.podgroup);
	child_of(&rc, c->services, &in.service);
	child_of(&rc, c->netpols, &in.netpol);
	{
		/* Created for this session, not in the cache yet: present. */
		int64_t cur = kc_json_int(rc.run, -1, "status", "session");
		struct ty_child *ch[] = { &in.podgroup, &in.service, &in.netpol };
		const enum ty_kind kinds[] = { TY_KIND_PODGROUP, TY_KIND_SERVICE,
		    TY_KIND_NETPOL };

		for (size_t i = 0; i < 3; i++)
			if (cur >= 1 && expect_child(c->expect, key, kinds[i], cur,
			    ch[i]->exists && ch[i]->session == cur) && !ch[i]->exists)
				*ch[i] = (struct ty_child){ .exists = true, .session = cur };
	}
	(void)snprintf(index_key, sizeof(index_key), "%s/%s", rc.ns, rc.name);
	if ((r = kc_informer_by_index(c->pods, index_key, collect_pod, &rc)) < 0) {
		ret = r;
		goto out;
	}
	if (rc.npods > 0 && ((pods = kc_calloc(rc.npods, sizeof(*pods))) == NULL ||
	    (seen = kc_calloc(rc.npods, sizeof(*seen))) == NULL)) {
		ret = -ENOMEM;
		goto out;
	}
	{
		int64_t cur = kc_json_int(rc.run, -1, "status", "session");

		for (size_t i = 0; i < rc.npods; i++) {
			const struct ty_pod *p = kc_item_data(rc.pod_items[i]);

			pods[i] = p;
			if (p->session == cur && p->index >= 0)
				seen[nseen++] = p->index;
		}
		if ((r = expect_pods(c->expect, key, rc.uid, cur, seen, nseen, &expected,
		    &nexpected)) < 0 ||
		    (r = expect_gone(c->expect, key, rc.uid, cur, &gone_items, &ngone)) < 0) {
			ret = r;
			goto out;
		}
		if (ngone > 0 && (gone = kc_calloc(ngone, sizeof(*gone))) == NULL) {
			ret = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < ngone; i++)
			gone[i] = kc_item_data(gone_items[i]);
	}

	in = (struct ty_session_in){
		.run = rc.run, .ctl = &ctl, .spec = rc.spec,
		.problems = rc.spec == NULL ? &probs : NULL, .cfg = &c->cfg,
		.podgroup = in.podgroup, .service = in.service, .netpol = in.netpol,
		.pods = pods, .npods = rc.npods, .expected = expected,
		.nexpected = nexpected, .gone = gone, .ngone = ngone, .api = c->pg_api,
		.now_ms = (uint64_t)kc_clock_wall() * 1000,
	};
	if ((r = session_decide(&in, &d)) < 0) {
		ret = r;
		goto out;
	}
	if ((r = execute(&rc, &d, nexpected, &after)) < 0) {
		ret = r;
		goto out;
	}
	ret = RECONCILE_DONE;
	if (d.next_check_ms != 0) {
		uint64_t now = (uint64_t)kc_clock_wall() * 1000;

		/* Wall-clock seconds: add a second so the check is not early. */
		ret = RECONCILE_AFTER(d.next_check_ms > now ? d.next_check_ms - now + 1000 :
		    1000);
	}
	if (after != 0 && (ret == RECONCILE_DONE || (uint64_t)ret > after))
		ret = RECONCILE_AFTER(after);
out:
	if (ret < 0)
		atomic_fetch_add(&c->n.reconcile_errors, 1);
	session_decision_release(&d);
	json_object_put(profile);
	for (size_t i = 0; i < ngone; i++)
		kc_item_unref(gone_items[i]);
	kc_free(gone_items);
	kc_free(gone);
	kc_free(expected);
	kc_free(seen);
	kc_free(pods);
	rctx_release(&rc);
	return ret;
}

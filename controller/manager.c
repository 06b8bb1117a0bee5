/*
 * manager.c: the controller's caches, queue and reconcilers.
 *
 *	informer threads   one per cache of cache.c's table: Runs,
 *	                   ResourceProfiles, and the pods, Services,
 *	                   NetworkPolicies and PodGroups with
 *	                   app.kubernetes.io/managed-by=trainyard
 *	worker threads     workers.c's pool: key -> its reconciler -> done
 *	the trimmer        workers.c: gives a burst's free memory back
 *
 * Every thread owns its own kc_client; all of them share one token bucket
 * (kubeAPIQPS/kubeAPIBurst). Informer handlers only hand the change to
 * the reconcilers watching that cache (the table below), which enqueue
 * their keys: one work queue, each key prefixed with its reconciler's
 * tag, so a reconciler gets the queue's deduplication, one worker per
 * key, delays and per-key backoff without knowing of the others.
 *
 * The PodGroup API is chosen once at start from the configuration or,
 * for "auto", from discovery (scheduling.x-k8s.io first, then the older
 * scheduling.sigs.k8s.io); without one, runs still work without gang
 * scheduling and say so in their GangScheduling condition.
 *
 * The version of trainyard.dev is followed while the process runs, so
 * the same binary runs before, during and after an upgrade of the CRDs:
 *
 *	version thread     GET /apis/trainyard.dev every apiDiscoveryInterval
 *	                   (30 s), and at once when a list or watch of Runs or
 *	                   ResourceProfiles answers 404; cache_version_follow()
 *	                   decides, and a new version moves both informers
 *	                   (kc_informer_set_resource())
 *
 * The move is a relist at the new version that replaces each cached Run
 * in place (an update, never a delete and an add), so no reconcile sees
 * a Run vanish; the reconciler writes each Run at the version its cached
 * copy has (its status, its Events' involvedObject, its children's
 * ownerReferences), so writes stay coherent while the caches move. Pods
 * and other children are matched by their owner's uid, which no version
 * changes. Nothing restarts: not the workers, not the Lease.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>

#include "controller.h"

#define SYNC_TIMEOUT_MS		(5 * 60 * 1000)
#define POKE_MIN_MS		1000	/* 404s look again at most this often */

/* Every reconciler: a new kind is a file and a row. */
static const struct reconciler *const reconcilers[] = {
	&run_reconciler,		/* reconcile_run.c */
	&project_reconciler,		/* reconcile_project.c */
	&member_reconciler,		/* reconcile_member.c */
	NULL
};

struct thread {
	struct ctl		*c;
	struct kc_informer	*inf;
	pthread_t		 tid;
	bool			 started;	/* a thread to join */
};

/* A cache's handlers' argument. */
struct watch {
	struct ctl		*c;
	enum ty_cache_id	 id;
};

/* enqueue()'s argument: a reconciler's keys. */
struct keys {
	struct ctl			*c;
	const struct reconciler		*rec;
};

struct manager {
	pthread_mutex_t	 lock;		/* informers vs. cancel; the version below */
	struct workers	*workers;
	struct kc_client *discovery_cl;	/* at start, then the version thread's */
	struct thread	 informers[TY_CACHE_N];
	struct watch	 watches[TY_CACHE_N];
	size_t		 ninformers;

	/* The version thread: under lock. */
	pthread_cond_t	 vcv;		/* poked or stopped */
	pthread_t	 vtid;
	bool		 vstarted, vcv_ok;
	bool		 vpoke;		/* a 404: look now */
	bool		 vstop;
	const char	*version;	/* followed now: "v1alpha1" or "v1beta1" */
};

static const struct kc_log_ctx mlog = { .action = "manager" };

static void	collect(void *arg, struct metrics *m);

/*
 * Every request of the manager's clients: into the metrics, and, with
 * --exit-after-writes-for-testing, counted when it is a successful write;
 * the k-th kills the process at once (SIGKILL: no cleanup, nothing
 * flushed), a crash at a chosen step for the chaos suite.
 */
static void
client_observe(void *arg, const struct kc_request_info *info)
{
	struct ctl *c = arg;
	uint64_t n;

	if (c->metrics != NULL)
		metrics_client_observe(c->metrics, info);
	if (c->exit_after_writes == 0 || info->verb == NULL ||
	    info->http_code < 200 || info->http_code > 299)
		return;
	if (strcmp(info->verb, "create") != 0 && strcmp(info->verb, "update") != 0 &&
	    strcmp(info->verb, "patch") != 0 && strcmp(info->verb, "delete") != 0 &&
	    strcmp(info->verb, "deletecollection") != 0)
		return;
	n = atomic_fetch_add(&c->writes, 1) + 1;
	if (n != c->exit_after_writes)
		return;
	kc_log_warn(&mlog, "--exit-after-writes-for-testing: killed after write %llu "
	    "(%s %s)", (unsigned long long)n, info->method, info->path);
	(void)kill(getpid(), SIGKILL);
}

int
manager_client(struct ctl *c, struct kc_client **ret, struct kc_status *st)
{
	return kc_client_new(&(struct kc_client_opts){
		.rc = c->rc,
		.limiter = c->limiter,
		.max_retries = 3,
		.user_agent = TY_COMPONENT "/" KC_VERSION,
		.observe = client_observe,
		.observe_arg = c,
	}, ret, st);
}

/* ---- handlers ------------------------------------------------------------- */

/* A reconciler's key: its tag and 'key' into the queue. */
static void
enqueue(void *arg, const char *key)
{
	struct keys *k = arg;
	char qkey[KC_WORKQUEUE_KEY_MAX];
	int r;

	if (key == NULL || key[0] == '\0' ||
	    (size_t)snprintf(qkey, sizeof(qkey), "%c%s", k->rec->tag, key) >= sizeof(qkey))
		return;
	workers_note(k->c->mgr->workers);
	if ((r = kc_workqueue_add(k->c->queue, qkey)) < 0 && r != -ESHUTDOWN)
		kc_log_warn(&mlog, "queue %s: %s", qkey, kc_strerror(r));
	workers_kick(k->c->mgr->workers);
}

/* A change of cache w->id: every reconciler watching it maps it to keys. */
static void
dispatch(struct watch *w, enum ty_change change, struct kc_item *it)
{
	for (size_t i = 0; reconcilers[i] != NULL; i++) {
		struct keys k = { w->c, reconcilers[i] };

		if (reconcilers[i]->watches & (1u << w->id))
			reconcilers[i]->changed(w->c, w->id, change, it, enqueue, &k);
	}
}

static void
on_add(void *arg, struct kc_item *it)
{
	dispatch(arg, TY_ADDED, it);
}

static void
on_update(void *arg, struct kc_item *old, struct kc_item *it)
{
	(void)old;
	dispatch(arg, TY_UPDATED, it);
}

static void
on_delete(void *arg, struct kc_item *it)
{
	dispatch(arg, TY_DELETED, it);
}

static void	version_poke(struct manager *);

static void
informer_error(void *arg, int code, const struct kc_status *st)
{
	struct watch *w = arg;

	/* Retried by the informer: worth a line, not an alarm. */
	kc_log_warn(&mlog, "list/watch %s: %s", cache_kinds[w->id].name,
	    st != NULL && st->message[0] != '\0' ? st->message : kc_strerror(code));
	/* The version read may no longer be served: ask discovery now. */
	if (code == KC_ENOTFOUND && (w->id == TY_CACHE_RUNS || w->id == TY_CACHE_PROFILES))
		version_poke(w->c->mgr);
}

/* A worker's key: to its reconciler, then done, requeued or backed off. */
static void
work(void *arg, struct kc_client *cl, const char *qkey)
{
	struct ctl *c = arg;
	const struct reconciler *rec = NULL;
	uint64_t t0 = kc_clock_now_ms();
	int64_t res;

	for (size_t i = 0; reconcilers[i] != NULL && rec == NULL; i++)
		if (reconcilers[i]->tag == qkey[0])
			rec = reconcilers[i];
	if (rec == NULL) {
		kc_workqueue_forget(c->queue, qkey);
		return;
	}
	res = rec->reconcile(c, cl, qkey + 1);
	if (c->metrics != NULL)
		metrics_reconcile(c->metrics, res < 0 ? "error" :
		    res > 0 ? "requeue_after" : "success",
		    (double)(kc_clock_now_ms() - t0) / 1000.0);
	if (res < 0)
		(void)kc_workqueue_add_rate_limited(c->queue, qkey);
	else {
		kc_workqueue_forget(c->queue, qkey);
		if (res > 0)
			(void)kc_workqueue_add_after(c->queue, qkey, (uint64_t)res);
	}
}

static int
worker_client(void *arg, struct kc_client **ret, struct kc_status *st)
{
	return manager_client(arg, ret, st);
}

/* ---- threads ------------------------------------------------------------- */

static void *
informer_main(void *arg)
{
	struct thread *t = arg;
	struct kc_status st = { 0 };
	struct kc_client *cl = NULL;
	int r;

	if ((r = manager_client(t->c, &cl, &st)) < 0) {
		kc_log_error_r(&mlog, r, "client: %s", st.message);
		return NULL;
	}
	(void)kc_informer_run(t->inf, cl, &st);
	kc_client_free(cl);
	return NULL;
}

/* Starts the informer of cache 'id' (its thread). */
static int
add_informer(struct ctl *c, enum ty_cache_id id)
{
	const struct ty_cache_kind *k = &cache_kinds[id];
	const struct kc_resource *res = id == TY_CACHE_RUNS ?
	    cache_runs_res(c->mgr->version) : id == TY_CACHE_PROFILES ?
	    cache_profiles_res(c->mgr->version) : k->res != NULL ? k->res :
	    c->pg_api == TY_PODGROUP_SIGS_K8S ? &ty_res_podgroups_sigs : &ty_res_podgroups_x;
	struct kc_status st = { 0 };
	struct thread *t = &c->mgr->informers[c->mgr->ninformers];
	struct watch *w = &c->mgr->watches[id];
	int r;

	*w = (struct watch){ .c = c, .id = id };
	if ((r = kc_informer_new(&(struct kc_informer_opts){
		.res = res,
		.ns = c->cfg.watch_namespace[0] != '\0' && res->namespaced ?
		    c->cfg.watch_namespace : NULL,
		.label_selector = k->selector,
		.keep = k->keep, .nkeep = k->nkeep,
		.transform = k->transform, .free_item = k->free_item, .index = k->index,
		.on_add = on_add, .on_update = on_update, .on_delete = on_delete,
		.on_error = informer_error, .arg = w,
	    }, &c->caches[id], &st)) < 0)
		return kc_log_error_r(&mlog, r, "informer %s: %s", res->resource, st.message);
	*t = (struct thread){ .c = c, .inf = c->caches[id] };
	if ((r = pthread_create(&t->tid, NULL, informer_main, t)) != 0)
		return kc_log_error_r(&mlog, -r, "thread: %s", kc_strerror(-r));
	t->started = true;
	pthread_mutex_lock(&c->mgr->lock);
	c->mgr->ninformers++;
	if (atomic_load(&c->stop_requested))
		kc_informer_stop(c->caches[id]);
	pthread_mutex_unlock(&c->mgr->lock);
	return 0;
}

/*
 * Whether discovery lists res->resource in its group/version: 1, 0 (the
 * group version is not served), or the error (401, 5xx, no
 * connection...), which must not be mistaken for "not served".
 */
static int
has_resource(struct kc_client *cl, const struct kc_resource *res, struct kc_status *st)
{
	struct json_object *list = NULL, *items;
	char path[128];
	bool found = false;
	int r;

	(void)snprintf(path, sizeof(path), "/apis/%s/%s", res->group, res->version);
	if ((r = kc_client_get_path(cl, path, &list, st)) == KC_ENOTFOUND)
		return 0;
	if (r < 0)
		return r;
	items = kc_json_get(list, "resources");
	for (size_t i = 0; items != NULL && json_object_is_type(items, json_type_array) &&
	    i < json_object_array_length(items); i++) {
		const char *name = kc_json_str(json_object_array_get_idx(items, i), "name");

		found = found || (name != NULL && strcmp(name, res->resource) == 0);
	}
	json_object_put(list);
	return found ? 1 : 0;
}

/*
 * The version of trainyard.dev to follow after 'current' (NULL at start),
 * cache_version_follow() of the group's discovery document, in *ret: NULL
 * only when nothing is known yet and the group is not served. The group
 * also holds the Projects' kinds, served at v1beta1 alone: v1beta1 counts
 * only when it lists runs (else v1alpha1 when that does, else 'current'),
 * so Projects installed beside Runs rolled back to v1alpha1 do not hold
 * the caches at a version that no longer serves Runs. Or the error (no
 * answer, 5xx...), which changes nothing.
 */
static int
trainyard_version(struct kc_client *cl, const char *current, const char **ret,
    struct kc_status *st)
{
	struct json_object *group = NULL;
	const char *v;
	int r;

	*ret = current;
	if ((r = kc_client_get_path(cl, "/apis/" TY_GROUP, &group, st)) < 0 &&
	    r != KC_ENOTFOUND)
		return r;
	v = cache_version_follow(current, group);
	json_object_put(group);
	if (v != NULL && strcmp(v, "v1beta1") == 0) {
		if ((r = has_resource(cl, &ty_res_runs_v1beta1, st)) < 0)
			return r;
		if (r == 0) {		/* v1beta1 serves Projects, not Runs */
			if ((r = has_resource(cl, &ty_res_runs, st)) < 0)
				return r;
			v = r == 1 ? "v1alpha1" : current;
		}
	}
	*ret = v;
	return 0;
}

/*
 * Discovery at startup, retried until the server answers (a guess would
 * turn gangs off for good, or read Runs at a version about to go): the
 * PodGroup API (unless the config names one), and the newest version of
 * trainyard.dev served, so that the same binary runs before, during and
 * after an upgrade of the CRDs.
 */
static int
discover(struct ctl *c)
{
	struct kc_status st = { 0 };
	struct kc_client *cl = NULL;
	bool pg_auto = c->cfg.podgroup_api == TY_PODGROUP_AUTO;
	const char *version = NULL;
	int r, x = 0, sigs = 0, projects = 0;

	if (!pg_auto)
		c->pg_api = c->cfg.podgroup_api;
	if ((r = manager_client(c, &cl, &st)) < 0)
		return kc_log_error_r(&mlog, r, "client: %s", st.message);
	pthread_mutex_lock(&c->mgr->lock);
	c->mgr->discovery_cl = cl;
	pthread_mutex_unlock(&c->mgr->lock);
	while (!atomic_load(&c->stop_requested)) {
		st = (struct kc_status){ 0 };
		if ((r = trainyard_version(cl, NULL, &version, &st)) >= 0 &&
		    (!pg_auto || ((x = has_resource(cl, &ty_res_podgroups_x, &st)) >= 0 &&
		    (x == 1 || (sigs = has_resource(cl, &ty_res_podgroups_sigs, &st)) >= 0))) &&
		    (projects = has_resource(cl, &ty_res_projects, &st)) >= 0)
			break;
		kc_log_warn(&mlog, "discovery failed, retrying: %s",
		    st.message[0] != '\0' ? st.message :
		    kc_strerror(r < 0 ? r : x < 0 ? x : sigs < 0 ? sigs : projects));
		for (int i = 0; i < 20 && !atomic_load(&c->stop_requested); i++)
			(void)kc_clock_sleep_ms(100);
		x = sigs = projects = 0;
	}
	pthread_mutex_lock(&c->mgr->lock);
	c->mgr->discovery_cl = NULL;
	pthread_mutex_unlock(&c->mgr->lock);
	kc_client_free(cl);
	if (atomic_load(&c->stop_requested))
		return -ECANCELED;
	if (pg_auto)
		c->pg_api = x == 1 ? TY_PODGROUP_X_K8S : sigs == 1 ? TY_PODGROUP_SIGS_K8S :
		    TY_PODGROUP_NONE;
	kc_log_info(&mlog, "PodGroup API: %s", config_podgroup_api_name(c->pg_api));
	/* Projects own cluster-scoped objects: not for a one-namespace controller. */
	c->projects = projects == 1 && c->cfg.watch_namespace[0] == '\0';
	kc_log_info(&mlog, "Projects: %s", c->projects ? "on" : projects == 1 ?
	    "off (the controller watches one namespace)" :
	    "off (" TY_GROUP "/v1beta1 does not serve projects)");
	if (version == NULL)
		kc_log_warn(&mlog, "trainyard.dev is not served (are the CRDs installed?): "
		    "using v1alpha1");
	version = cache_runs_res(version)->version;
	pthread_mutex_lock(&c->mgr->lock);
	c->mgr->version = version;
	pthread_mutex_unlock(&c->mgr->lock);
	if (c->metrics != NULL)
		metrics_set_api_version(c->metrics, TY_GROUP, version);
	kc_log_info(&mlog, "Runs and ResourceProfiles at %s/%s", TY_GROUP, version);
	return 0;
}

/* ---- the version thread ------------------------------------------------------ */

/* Wakes the version thread: to look now ('stop' false), or to end. */
static void
version_wake(struct manager *m, bool stop)
{
	pthread_mutex_lock(&m->lock);
	if (stop) {
		m->vstop = true;
		if (m->discovery_cl != NULL)
			kc_client_cancel(m->discovery_cl);
	} else
		m->vpoke = true;
	if (m->vcv_ok)
		pthread_cond_broadcast(&m->vcv);
	pthread_mutex_unlock(&m->lock);
}

static void
version_poke(struct manager *m)
{
	version_wake(m, false);
}

/*
 * Waits until 'ms' passed, a poke or a stop (under m->lock): true unless
 * stopped. Pokes closer than POKE_MIN_MS to the last look wait for that.
 */
static bool
version_wait(struct manager *m, uint64_t last_ms, uint64_t ms)
{
	for (;;) {
		uint64_t now = kc_clock_now_ms(), due = last_ms + ms, wait_ms;
		struct timespec ts;

		if (m->vstop)
			return false;
		if (m->vpoke && now >= last_ms + POKE_MIN_MS)
			break;
		if (now >= due)
			break;
		wait_ms = due - now;
		if (m->vpoke)
			wait_ms = KC_MIN(wait_ms, last_ms + POKE_MIN_MS - now);
		(void)clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)(wait_ms / 1000);
		ts.tv_nsec += (long)(wait_ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		(void)pthread_cond_timedwait(&m->vcv, &m->lock, &ts);
	}
	m->vpoke = false;
	return true;
}

/* Moves the Run and ResourceProfile caches to 'version'. */
static void
version_switch(struct ctl *c, const char *was, const char *version)
{
	struct kc_status st = { 0 };
	int r;

	kc_log_info(&mlog, "serving version changed: reading %s/%s (was %s)", TY_GROUP,
	    version, was);
	if (c->caches[TY_CACHE_RUNS] != NULL &&
	    (r = kc_informer_set_resource(c->caches[TY_CACHE_RUNS], cache_runs_res(version),
	    &st)) < 0)
		kc_log_error_r(&mlog, r, "runs: %s", st.message);
	if (c->caches[TY_CACHE_PROFILES] != NULL &&
	    (r = kc_informer_set_resource(c->caches[TY_CACHE_PROFILES],
	    cache_profiles_res(version), &st)) < 0)
		kc_log_error_r(&mlog, r, "resourceprofiles: %s", st.message);
	if (c->metrics != NULL)
		metrics_set_api_version(c->metrics, TY_GROUP, version);
}

static void *
version_main(void *arg)
{
	struct ctl *c = arg;
	struct manager *m = c->mgr;
	struct kc_client *cl = m->discovery_cl;
	uint64_t last = kc_clock_now_ms();

	pthread_mutex_lock(&m->lock);
	while (version_wait(m, last, KC_MAX(c->cfg.api_discovery_interval_ms, 1000))) {
		struct kc_status st = { 0 };
		const char *was = m->version, *next;
		int r;

		pthread_mutex_unlock(&m->lock);
		last = kc_clock_now_ms();
		if ((r = trainyard_version(cl, was, &next, &st)) < 0)
			kc_log_debug(&mlog, "discovery of %s: %s", TY_GROUP,
			    st.message[0] != '\0' ? st.message : kc_strerror(r));
		pthread_mutex_lock(&m->lock);
		if (r < 0 || m->vstop || next == NULL || strcmp(next, was) == 0)
			continue;
		m->version = next;
		pthread_mutex_unlock(&m->lock);
		version_switch(c, was, next);
		pthread_mutex_lock(&m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* Starts the version thread, with a client of its own. */
static int
version_start(struct ctl *c)
{
	struct manager *m = c->mgr;
	struct kc_status st = { 0 };
	struct kc_client *cl = NULL;
	int r;

	if ((r = manager_client(c, &cl, &st)) < 0)
		return kc_log_error_r(&mlog, r, "client: %s", st.message);
	pthread_mutex_lock(&m->lock);
	m->discovery_cl = cl;
	pthread_mutex_unlock(&m->lock);
	if ((r = pthread_create(&m->vtid, NULL, version_main, c)) != 0)
		return kc_log_error_r(&mlog, -r, "thread: %s", kc_strerror(-r));
	m->vstarted = true;
	return 0;
}

static void
version_stop(struct manager *m)
{
	struct kc_client *cl;

	version_wake(m, true);
	if (m->vstarted)
		pthread_join(m->vtid, NULL);
	m->vstarted = false;
	/* manager_cancel_start() may look at it from the signal thread. */
	pthread_mutex_lock(&m->lock);
	cl = m->discovery_cl;
	m->discovery_cl = NULL;
	pthread_mutex_unlock(&m->lock);
	kc_client_free(cl);
}

void
manager_cancel_start(struct ctl *c)
{
	atomic_store(&c->stop_requested, true);
	if (c->mgr == NULL)
		return;
	pthread_mutex_lock(&c->mgr->lock);
	for (size_t i = 0; i < c->mgr->ninformers; i++)
		kc_informer_stop(c->mgr->informers[i].inf);
	if (c->mgr->discovery_cl != NULL)
		kc_client_cancel(c->mgr->discovery_cl);
	pthread_mutex_unlock(&c->mgr->lock);
}

int
manager_init(struct ctl *c)
{
	pthread_condattr_t ca;

	if ((c->mgr = kc_calloc(1, sizeof(*c->mgr))) == NULL)
		return -ENOMEM;
	if (pthread_mutex_init(&c->mgr->lock, NULL) != 0) {
		c->mgr = kc_free(c->mgr);
		return -ENOMEM;
	}
	if (pthread_condattr_init(&ca) != 0)
		return -ENOMEM;
	(void)pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	c->mgr->vcv_ok = pthread_cond_init(&c->mgr->vcv, &ca) == 0;
	(void)pthread_condattr_destroy(&ca);
	return c->mgr->vcv_ok ? 0 : -ENOMEM;
}

int
manager_start(struct ctl *c)
{
	uint32_t watched = 0;
	int r;

	if (c->mgr == NULL && (r = manager_init(c)) < 0)
		return r;
	if ((r = kc_ratelimit_new(c->cfg.kube_api_qps, c->cfg.kube_api_burst,
	    &c->limiter)) < 0 ||
	    (r = kc_workqueue_new(&(struct kc_workqueue_opts){
		.observe = c->metrics != NULL ? metrics_workqueue_observe : NULL,
		.observe_arg = c->metrics,
	    }, &c->queue)) < 0 ||
	    (r = expect_new(&c->expect)) < 0 ||
	    (r = quota_ledger_new(&c->ledger)) < 0 ||
	    (r = recorder_new(c->instance, &c->rec)) < 0 ||
	    (r = workers_new(&(struct workers_opts){
		.max = c->cfg.workers, .queue = c->queue, .client = worker_client,
		.work = work, .arg = c,
	    }, &c->mgr->workers)) < 0)
		return kc_log_error_r(&mlog, r, "start: %s", kc_strerror(r));
	if ((r = discover(c)) < 0)
		return r;

	/* The caches some reconciler watches; PodGroups only with an API. */
	for (size_t i = 0; reconcilers[i] != NULL; i++)
		watched |= reconcilers[i]->watches;
	for (int id = 0; id < TY_CACHE_N; id++)
		if ((watched & (1u << id)) != 0 &&
		    (id != TY_CACHE_PODGROUPS || c->pg_api != TY_PODGROUP_NONE) &&
		    (!cache_kinds[id].projects || c->projects) &&
		    (r = add_informer(c, (enum ty_cache_id)id)) < 0)
			return r;

	for (size_t i = 0; i < c->mgr->ninformers; i++)
		if ((r = kc_informer_wait_synced(c->mgr->informers[i].inf, SYNC_TIMEOUT_MS)) < 0)
			return kc_log_error_r(&mlog, r, "caches did not sync");
	kc_log_info(&mlog, "caches synced: %zu runs, %zu pods",
	    c->caches[TY_CACHE_RUNS] != NULL ? kc_informer_len(c->caches[TY_CACHE_RUNS]) : 0,
	    c->caches[TY_CACHE_PODS] != NULL ? kc_informer_len(c->caches[TY_CACHE_PODS]) : 0);
	if (c->projects)
		run_ledger_rebuild(c);
	atomic_store(&c->caches_ready, true);
	if ((r = version_start(c)) < 0)
		return r;

	if (c->metrics != NULL)
		metrics_set_collect(c->metrics, collect, c);
	return 0;
}

int
manager_start_workers(struct ctl *c)
{
	if (c->mgr == NULL || c->mgr->workers == NULL)
		return -EINVAL;
	return workers_start(c->mgr->workers);
}

/* Scrape time: queue, caches and Runs by phase, for /metrics. */
struct phase_tally {
	const char	*phases[8];
	uint64_t	 counts[8];
};

static int
tally_run(void *arg, struct kc_item *it)
{
	static const char *const names[] = {
		"Pending", "Running", "Succeeded", "Failed", "Stopped",
	};
	struct phase_tally *t = arg;
	const char *phase = ty_obj_phase(kc_item_data(it));

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(phase, names[i]) == 0) {
			t->counts[i]++;
			return 0;
		}
	t->counts[5]++;		/* not started yet, or a phase we do not know */
	return 0;
}

static void
collect(void *arg, struct metrics *m)
{
	struct ctl *c = arg;
	struct kc_workqueue_stats qs;
	struct kc_informer_stats is;
	struct phase_tally t = { .phases = { "Pending", "Running", "Succeeded", "Failed",
	    "Stopped", "Unknown" } };

	kc_workqueue_stats(c->queue, &qs);
	metrics_collect_workqueue(m, &qs);
	for (int id = 0; id < TY_CACHE_N; id++)
		if (c->caches[id] != NULL) {
			kc_informer_stats(c->caches[id], &is);
			metrics_collect_informer(m, cache_kinds[id].name, &is);
		}
	if (c->caches[TY_CACHE_RUNS] != NULL)
		(void)kc_informer_foreach(c->caches[TY_CACHE_RUNS], tally_run, &t);
	metrics_set_runs(m, t.phases, t.counts, 6);
}

void
manager_stop(struct ctl *c, uint64_t drain_ms)
{
	if (c->mgr == NULL)
		return;
	if (c->metrics != NULL)
		metrics_set_collect(c->metrics, NULL, NULL);
	workers_stop(c->mgr->workers, drain_ms);
	version_stop(c->mgr);
	for (size_t i = 0; i < c->mgr->ninformers; i++)
		kc_informer_stop(c->mgr->informers[i].inf);
	for (size_t i = 0; i < c->mgr->ninformers; i++)
		if (c->mgr->informers[i].started)
			pthread_join(c->mgr->informers[i].tid, NULL);
}

void
manager_free(struct ctl *c)
{
	if (c->mgr != NULL) {
		c->mgr->workers = workers_free(c->mgr->workers);
		version_stop(c->mgr);
		if (c->mgr->vcv_ok)
			pthread_cond_destroy(&c->mgr->vcv);
		pthread_mutex_destroy(&c->mgr->lock);
	}
	c->mgr = kc_free(c->mgr);
	for (int id = 0; id < TY_CACHE_N; id++)
		c->caches[id] = kc_informer_free(c->caches[id]);
	c->queue = kc_workqueue_free(c->queue);
	c->expect = expect_free(c->expect);
	quota_ledger_free(c->ledger);
	c->ledger = NULL;
	c->rec = recorder_free(c->rec);
	c->limiter = kc_ratelimit_free(c->limiter);
}

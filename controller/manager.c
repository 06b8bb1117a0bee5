/*
 * manager.c: the controller's threads.
 *
 *	informer threads   one per cache: Runs, ResourceProfiles, and the
 *	                   pods, Services, NetworkPolicies and PodGroups with
 *	                   app.kubernetes.io/managed-by=trainyard
 *	worker threads     cfg.workers of them: key -> reconcile_run() -> done
 *	the trimmer        gives the free memory of a burst back to the
 *	                   system once the work stops (trim_main())
 *
 * Every thread owns its own kc_client; all of them share one token bucket
 * (kubeAPIQPS/kubeAPIBurst). Informer handlers only enqueue keys: a Run's
 * own, or for a managed object the Run named by its trainyard.dev/run
 * label. A ResourceProfile change enqueues the Runs that name it.
 *
 * The caches keep compact items, not JSON: a pod is session.c's struct
 * ty_pod plus its owner's uid and Run name (about 400 bytes with its
 * informer entry); a child object about 200. Runs and profiles keep their
 * JSON text (without managedFields and kubectl's last-applied
 * configuration), as the model reads them whole; there are few of them.
 *
 * The PodGroup API is chosen once at start from the configuration or,
 * for "auto", from discovery (scheduling.x-k8s.io first, then the older
 * scheduling.sigs.k8s.io); without one, runs still work without gang
 * scheduling and say so in their GangScheduling condition.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>

#include "controller.h"

#define SYNC_TIMEOUT_MS		(5 * 60 * 1000)
#define TRIM_QUIET_MS		200	/* a burst is over after this without work */
#define TRIM_BUSY_MS		(30 * 1000)	/* ... or trimmed anyway after this */
#define TRIM_MIN_WORK		16	/* enqueues and reconciles worth a trim */

struct thread {
	struct ctl		*c;
	struct kc_informer	*inf;		/* NULL for a worker */
	struct kc_client	*cl;		/* a worker's, for cancelling */
	pthread_t		 tid;
	bool			 started;
};

/* Gives a burst's memory back once it is over (see trim_main()). */
struct trimmer {
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;		/* work started; stop */
	atomic_uint_fast64_t	 work;		/* enqueues and reconciles so far */
	atomic_bool		 asleep;	/* waiting for work: signal cv */
	bool			 stop;		/* under mu */
	bool			 started;
	pthread_t		 tid;
};

struct manager {
	pthread_mutex_t	 lock;		/* workers vs. stop */
	struct trimmer	 trim;
	struct kc_client *discovery_cl;	/* at start, for cancelling */
	bool		 stopping;
	struct thread	 informers[6];
	size_t		 ninformers;
	struct thread	*workers;
	size_t		 nworkers;
};

static const struct kc_log_ctx mlog = { .action = "manager" };

static void	collect(void *arg, struct metrics *m);

int
manager_client(struct ctl *c, struct kc_client **ret, struct kc_status *st)
{
	return kc_client_new(&(struct kc_client_opts){
		.rc = c->rc,
		.limiter = c->limiter,
		.max_retries = 3,
		.user_agent = TY_COMPONENT "/" KC_VERSION,
		.observe = c->metrics != NULL ? metrics_client_observe : NULL,
		.observe_arg = c->metrics,
	}, ret, st);
}

/* ---- transforms ---------------------------------------------------------- */

/* Longest label value and profile name an item keeps (longer ones are cut). */
#define ITEM_LABEL_MAX		63
#define ITEM_PROFILE_MAX	253

#define LAST_APPLIED	"kubectl.kubernetes.io/last-applied-configuration"

/* Bytes put_str() takes for 's' (NULL is ""), NUL included. */
static size_t
str_size(const char *s, size_t max)
{
	return (s != NULL ? strnlen(s, max) : 0) + 1;
}

/* Copies at most 'max' bytes of 's' (NULL is "") to '*p' and moves it on. */
static const char *
put_str(char **p, const char *s, size_t max)
{
	size_t n = s != NULL ? strnlen(s, max) : 0;
	char *d = *p;

	if (n > 0)
		memcpy(d, s, n);
	d[n] = '\0';
	*p = d + n + 1;
	return d;
}

/*
 * A shallow copy of 'obj' without what the controller never reads and a
 * Run may carry in bulk: metadata.managedFields and kubectl's
 * last-applied-configuration annotation,
 * a second copy of the whole spec when Runs are applied client-side.
 */
static struct json_object *
trimmed_copy(const struct json_object *obj)
{
	struct json_object *copy, *md, *ann = NULL;

	if ((copy = json_object_new_object()) == NULL)
		return NULL;
	if ((md = json_object_new_object()) == NULL) {
		json_object_put(copy);
		return NULL;
	}
	(void)json_object_object_add(copy, "metadata", md);
	json_object_object_foreach((struct json_object *)(uintptr_t)obj, key, val) {
		if (strcmp(key, "metadata") != 0)
			(void)json_object_object_add(copy, key, json_object_get(val));
	}
	json_object_object_foreach(kc_json_obj_of(obj, "metadata"), mkey, mval) {
		if (strcmp(mkey, "managedFields") == 0)
			continue;
		if (strcmp(mkey, "annotations") != 0 ||
		    !json_object_object_get_ex(mval, LAST_APPLIED, NULL)) {
			(void)json_object_object_add(md, mkey, json_object_get(mval));
			continue;
		}
		if ((ann = json_object_new_object()) == NULL) {
			json_object_put(copy);
			return NULL;
		}
		json_object_object_foreach(mval, akey, aval) {
			if (strcmp(akey, LAST_APPLIED) != 0)
				(void)json_object_object_add(ann, akey, json_object_get(aval));
		}
		if (json_object_object_length(ann) > 0)
			(void)json_object_object_add(md, mkey, ann);
		else
			json_object_put(ann);
	}
	return copy;
}

static int
obj_transform(void *arg, const struct json_object *obj, void **ret,
    struct kc_status *st)
{
	_cleanup_(kc_freep) char *text = NULL;
	struct json_object *copy;
	struct ty_obj_item *it;
	const char *profile = kc_json_str(obj, "spec", "profile");
	const char *phase = kc_json_str(obj, "status", "phase");
	size_t len = 0;
	char *p;

	(void)arg;
	(void)st;
	if ((copy = trimmed_copy(obj)) == NULL)
		return -ENOMEM;
	text = kc_json_dump(copy, &len);
	json_object_put(copy);
	if (text == NULL || (it = kc_malloc(sizeof(*it) + len + 1 +
	    str_size(profile, ITEM_PROFILE_MAX))) == NULL)
		return -ENOMEM;
	p = it->strs;
	memcpy(p, text, len + 1);
	it->text = p;
	it->len = len;
	p += len + 1;
	it->profile = put_str(&p, profile, ITEM_PROFILE_MAX);
	kc_strlcpy(it->phase, phase != NULL ? phase : "", sizeof(it->phase));
	*ret = it;
	return 0;
}

/* The uid of the controller ownerReference of kind Run, or NULL. */
static const char *
owner_uid(const struct json_object *obj)
{
	struct json_object *refs = kc_json_get(obj, "metadata", "ownerReferences");
	size_t n = refs != NULL && json_object_is_type(refs, json_type_array) ?
	    json_object_array_length(refs) : 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *ref = json_object_array_get_idx(refs, i);
		const char *kind = kc_json_str(ref, "kind"), *uid = kc_json_str(ref, "uid");

		if (kc_json_bool(ref, false, "controller") && kind != NULL &&
		    strcmp(kind, "Run") == 0 && uid != NULL)
			return uid;
	}
	return NULL;
}

static const char *
run_label(const struct json_object *obj)
{
	return kc_json_str(obj, "metadata", "labels", TY_LABEL_RUN);
}

static int
pod_transform(void *arg, const struct json_object *obj, void **ret, struct kc_status *st)
{
	const char *owner = owner_uid(obj), *run = run_label(obj);
	struct ty_pod_item *it;
	char *p;
	int r;

	(void)arg;
	if ((it = kc_malloc(offsetof(struct ty_pod_item, run) +
	    str_size(run, ITEM_LABEL_MAX))) == NULL)
		return -ENOMEM;
	if ((r = session_pod_from_json(obj, &it->pod)) < 0) {
		kc_free(it);
		return r == -ENOMEM ? r : kc_status_set(st, r, "pod without a name");
	}
	kc_strlcpy(it->owner_uid, owner != NULL ? owner : "", sizeof(it->owner_uid));
	p = it->run;
	(void)put_str(&p, run, ITEM_LABEL_MAX);
	*ret = it;
	return 0;
}

static void
pod_free(void *arg, void *data)
{
	struct ty_pod_item *it = data;

	(void)arg;
	session_pod_free(it->pod);
	kc_free(it);
}

static bool
pod_index(void *arg, const struct kc_item *item, char *buf, size_t size)
{
	const struct ty_pod_item *it = kc_item_data(item);
	char ns[KC_NAMESPACE_MAX + 1];

	(void)arg;
	if (it->run[0] == '\0')
		return false;
	kc_item_ns(item, ns, sizeof(ns));
	return (size_t)snprintf(buf, size, "%s/%s", ns, it->run) < size;
}

/*
 * What pod_transform() (session_pod_from_json()) and child_transform()
 * read: only these members are built when a list or watch event is
 * decoded (the informer adds name, namespace and resourceVersion). A
 * pod's managedFields, spec and annotations are most of its JSON.
 */
static const char *const pod_keep[] = {
	"metadata.uid", "metadata.labels", "metadata.ownerReferences",
	"metadata.deletionTimestamp", "spec.nodeName", "status",
};
static const char *const child_keep[] = {
	"metadata.uid", "metadata.labels", "metadata.ownerReferences",
	"metadata.deletionTimestamp",
};

static int
child_transform(void *arg, const struct json_object *obj, void **ret,
    struct kc_status *st)
{
	const char *uid = kc_json_str(obj, "metadata", "uid"), *owner = owner_uid(obj);
	const char *run = run_label(obj);
	const char *session = kc_json_str(obj, "metadata", "labels", TY_LABEL_SESSION);
	struct ty_child_item *it;
	char *p;

	(void)arg;
	(void)st;
	if ((it = kc_malloc(offsetof(struct ty_child_item, run) +
	    str_size(run, ITEM_LABEL_MAX))) == NULL)
		return -ENOMEM;
	it->session = -1;
	if (session != NULL && kc_parse_i64(session, &it->session) < 0)
		it->session = -1;
	it->deleting = kc_json_get(obj, "metadata", "deletionTimestamp") != NULL;
	kc_strlcpy(it->uid, uid != NULL ? uid : "", sizeof(it->uid));
	kc_strlcpy(it->owner_uid, owner != NULL ? owner : "", sizeof(it->owner_uid));
	p = it->run;
	(void)put_str(&p, run, ITEM_LABEL_MAX);
	*ret = it;
	return 0;
}

/* ---- handlers ------------------------------------------------------------- */

/* Work happened: wakes the trimmer if it waits for a burst to start. */
static void
trim_note(struct manager *m)
{
	atomic_fetch_add(&m->trim.work, 1);
	if (atomic_load(&m->trim.asleep)) {
		pthread_mutex_lock(&m->trim.mu);
		pthread_cond_signal(&m->trim.cv);
		pthread_mutex_unlock(&m->trim.mu);
	}
}

static void
enqueue(struct ctl *c, const char *key)
{
	int r;

	trim_note(c->mgr);

	if ((r = kc_workqueue_add(c->queue, key)) < 0 && r != -ESHUTDOWN)
		kc_log_warn(&mlog, "queue %s: %s", key, kc_strerror(r));
}

static void
run_added(void *arg, struct kc_item *it)
{
	enqueue(arg, kc_item_key(it));
}

static void
run_updated(void *arg, struct kc_item *old, struct kc_item *it)
{
	(void)old;
	enqueue(arg, kc_item_key(it));
}

struct profile_walk {
	struct ctl	*c;
	const char	*name;
};

static int
enqueue_if_uses(void *arg, struct kc_item *it)
{
	struct profile_walk *w = arg;
	const char *p = ((const struct ty_obj_item *)kc_item_data(it))->profile;

	if (strcmp(p, w->name) == 0)
		enqueue(w->c, kc_item_key(it));
	return 0;
}

static void
profile_changed(void *arg, struct kc_item *it)
{
	struct ctl *c = arg;
	struct profile_walk w = { c, kc_item_name(it) };

	(void)kc_informer_foreach(c->runs, enqueue_if_uses, &w);
}

static void
profile_updated(void *arg, struct kc_item *old, struct kc_item *it)
{
	(void)old;
	profile_changed(arg, it);
}

static void
owned_changed(void *arg, struct kc_item *it, const char *run)
{
	char ns[KC_NAMESPACE_MAX + 1], key[KC_WORKQUEUE_KEY_MAX];

	if (run[0] == '\0')
		return;
	kc_item_ns(it, ns, sizeof(ns));
	if ((size_t)snprintf(key, sizeof(key), "%s/%s", ns, run) < sizeof(key))
		enqueue(arg, key);
}

static void
pod_changed(void *arg, struct kc_item *it)
{
	owned_changed(arg, it, ((const struct ty_pod_item *)kc_item_data(it))->run);
}

static void
pod_updated(void *arg, struct kc_item *old, struct kc_item *it)
{
	(void)old;
	pod_changed(arg, it);
}

/*
 * A pod left the cache. Unless this process deleted it, keep its last
 * view for the session rules (expect_pod_gone()): the pod GC fails and
 * deletes a pod of a lost node at once, and a reconcile may only see it
 * missing.
 */
static void
pod_deleted(void *arg, struct kc_item *it)
{
	struct ctl *c = arg;
	const struct ty_pod_item *pi = kc_item_data(it);
	char ns[KC_NAMESPACE_MAX + 1], key[KC_WORKQUEUE_KEY_MAX];

	kc_item_ns(it, ns, sizeof(ns));
	if (pi->run[0] != '\0' && pi->owner_uid[0] != '\0' && pi->pod->uid != NULL &&
	    pi->pod->session >= 0 &&
	    (size_t)snprintf(key, sizeof(key), "%s/%s", ns, pi->run) < sizeof(key) &&
	    !expect_deleted(c->expect, key, pi->pod->uid) &&
	    expect_pod_gone(c->expect, key, pi->owner_uid, pi->pod->session, it) < 0)
		kc_log_warn(&mlog, "pod %s: out of memory", pi->pod->name);
	pod_changed(arg, it);
}

static void
child_changed(void *arg, struct kc_item *it)
{
	owned_changed(arg, it, ((const struct ty_child_item *)kc_item_data(it))->run);
}

static void
child_updated(void *arg, struct kc_item *old, struct kc_item *it)
{
	(void)old;
	child_changed(arg, it);
}

static void
informer_error(void *arg, int code, const struct kc_status *st)
{
	(void)arg;
	/* Retried by the informer: worth a line, not an alarm. */
	kc_log_warn(&mlog, "list/watch: %s",
	    st != NULL && st->message[0] != '\0' ? st->message : kc_strerror(code));
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

static void *
worker_main(void *arg)
{
	struct thread *t = arg;
	struct ctl *c = t->c;
	struct kc_status st = { 0 };
	struct kc_client *cl = NULL;
	char key[KC_WORKQUEUE_KEY_MAX];
	int r;

	if ((r = manager_client(c, &cl, &st)) < 0) {
		kc_log_error_r(&mlog, r, "client: %s", st.message);
		return NULL;
	}
	__atomic_store_n(&t->cl, cl, __ATOMIC_RELEASE);
	while (kc_workqueue_get(c->queue, key, sizeof(key)) == 0) {
		uint64_t t0 = kc_clock_now_ms();
		int64_t res = reconcile_run(c, cl, key);

		trim_note(c->mgr);

		if (c->metrics != NULL)
			metrics_reconcile(c->metrics, res < 0 ? "error" :
			    res > 0 ? "requeue_after" : "success",
			    (double)(kc_clock_now_ms() - t0) / 1000.0);
		if (res < 0)
			(void)kc_workqueue_add_rate_limited(c->queue, key);
		else {
			kc_workqueue_forget(c->queue, key);
			if (res > 0)
				(void)kc_workqueue_add_after(c->queue, key, (uint64_t)res);
		}
		kc_workqueue_done(c->queue, key);
	}
	pthread_mutex_lock(&c->mgr->lock);	/* manager_stop() may cancel it */
	__atomic_store_n(&t->cl, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->mgr->lock);
	kc_client_free(cl);
	return NULL;
}

/* Waits on the trimmer's cv until 'ms' passed or stop; under mu. */
static void
trim_wait_ms(struct trimmer *t, uint64_t ms)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	while (!t->stop && pthread_cond_timedwait(&t->cv, &t->mu, &ts) != ETIMEDOUT)
		;
}

/*
 * The trimmer. glibc keeps what a thread frees in that thread's arena for
 * reuse and gives back only the top of a heap, so the pages a burst used
 * (watch events being decoded, pods being built, the reconcile of a
 * 4000-node Run) stay resident below the items that outlive the burst.
 * This thread sleeps until work starts (a handler enqueues, a worker
 * finishes a reconcile), then waits until none has come for
 * TRIM_QUIET_MS, and then malloc_trim(0) gives every free page of every
 * arena back to the system. Idle, it waits on its condition variable
 * with no timer; a trickle of work trims at most once per TRIM_MIN_WORK
 * units of it, and work that never pauses is trimmed every TRIM_BUSY_MS.
 * The cost of a trim (a few ms) is the page faults of the next burst,
 * paid once per burst.
 */
static void *
trim_main(void *arg)
{
	struct trimmer *t = arg;
	uint64_t trimmed = 0, busy_since = 0, w, start;

	pthread_mutex_lock(&t->mu);
	while (!t->stop) {
		if ((w = atomic_load(&t->work)) - trimmed < TRIM_MIN_WORK) {
			atomic_store(&t->asleep, true);
			if (atomic_load(&t->work) - trimmed < TRIM_MIN_WORK && !t->stop)
				pthread_cond_wait(&t->cv, &t->mu);
			atomic_store(&t->asleep, false);
			busy_since = kc_clock_now_ms();
			continue;
		}
		trim_wait_ms(t, TRIM_QUIET_MS);
		if (t->stop)
			break;
		start = kc_clock_now_ms();
		if (atomic_load(&t->work) != w && start - busy_since < TRIM_BUSY_MS)
			continue;		/* still busy: wait for quiet again */
		pthread_mutex_unlock(&t->mu);
		(void)malloc_trim(0);
		kc_log_debug(&mlog, "%s: free memory given back in %llu ms",
		    atomic_load(&t->work) == w ? "burst over" : "busy",
		    (unsigned long long)(kc_clock_now_ms() - start));
		pthread_mutex_lock(&t->mu);
		trimmed = atomic_load(&t->work);
		busy_since = kc_clock_now_ms();
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

static int
trim_start(struct manager *m)
{
	struct trimmer *t = &m->trim;
	pthread_condattr_t ca;
	int r;

	if (pthread_condattr_init(&ca) != 0)
		return -ENOMEM;
	(void)pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	r = pthread_cond_init(&t->cv, &ca);
	(void)pthread_condattr_destroy(&ca);
	if (r != 0)
		return -ENOMEM;
	if (pthread_mutex_init(&t->mu, NULL) != 0) {
		(void)pthread_cond_destroy(&t->cv);
		return -ENOMEM;
	}
	if ((r = pthread_create(&t->tid, NULL, trim_main, t)) != 0) {
		(void)pthread_mutex_destroy(&t->mu);
		(void)pthread_cond_destroy(&t->cv);
		return -r;
	}
	t->started = true;
	return 0;
}

static void
trim_stop(struct manager *m)
{
	struct trimmer *t = &m->trim;

	if (!t->started)
		return;
	pthread_mutex_lock(&t->mu);
	t->stop = true;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->tid, NULL);
	(void)pthread_mutex_destroy(&t->mu);
	(void)pthread_cond_destroy(&t->cv);
	t->started = false;
}

static int
add_informer(struct ctl *c, struct kc_informer **slot,
    const struct kc_informer_opts *opts)
{
	struct kc_informer_opts o = *opts;
	struct kc_status st = { 0 };
	struct thread *t = &c->mgr->informers[c->mgr->ninformers];
	int r;

	o.ns = c->cfg.watch_namespace[0] != '\0' && opts->res->namespaced ?
	    c->cfg.watch_namespace : NULL;
	o.on_error = informer_error;
	o.arg = c;
	if ((r = kc_informer_new(&o, slot, &st)) < 0)
		return kc_log_error_r(&mlog, r, "informer %s: %s", opts->res->resource,
		    st.message);
	*t = (struct thread){ .c = c, .inf = *slot };
	if ((r = pthread_create(&t->tid, NULL, informer_main, t)) != 0)
		return kc_log_error_r(&mlog, -r, "thread: %s", kc_strerror(-r));
	t->started = true;
	pthread_mutex_lock(&c->mgr->lock);
	c->mgr->ninformers++;
	if (atomic_load(&c->stop_requested))
		kc_informer_stop(*slot);
	pthread_mutex_unlock(&c->mgr->lock);
	return 0;
}

/*
 * Whether discovery lists podgroups in group/version: 1, 0 (the group
 * version is not served), or the error (401, 5xx, no connection...),
 * which must not be mistaken for "no PodGroup API".
 */
static int
has_podgroups(struct kc_client *cl, const struct kc_resource *res, struct kc_status *st)
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

		found = found || (name != NULL && strcmp(name, "podgroups") == 0);
	}
	json_object_put(list);
	return found ? 1 : 0;
}

static int
resolve_podgroup_api(struct ctl *c)
{
	struct kc_status st = { 0 };
	struct kc_client *cl = NULL;
	int r, x = 0, sigs = 0;

	if (c->cfg.podgroup_api != TY_PODGROUP_AUTO) {
		c->pg_api = c->cfg.podgroup_api;
		return 0;
	}
	if ((r = manager_client(c, &cl, &st)) < 0)
		return kc_log_error_r(&mlog, r, "client: %s", st.message);
	pthread_mutex_lock(&c->mgr->lock);
	c->mgr->discovery_cl = cl;
	pthread_mutex_unlock(&c->mgr->lock);
	/* Retry until discovery answers: a guess would turn gangs off for good. */
	while (!atomic_load(&c->stop_requested)) {
		st = (struct kc_status){ 0 };
		if ((x = has_podgroups(cl, &ty_res_podgroups_x, &st)) >= 0 &&
		    (x == 1 || (sigs = has_podgroups(cl, &ty_res_podgroups_sigs, &st)) >= 0))
			break;
		kc_log_warn(&mlog, "discovery of the PodGroup API failed, retrying: %s",
		    st.message[0] != '\0' ? st.message : kc_strerror(x < 0 ? x : sigs));
		for (int i = 0; i < 20 && !atomic_load(&c->stop_requested); i++)
			(void)kc_clock_sleep_ms(100);
		x = sigs = 0;
	}
	pthread_mutex_lock(&c->mgr->lock);
	c->mgr->discovery_cl = NULL;
	pthread_mutex_unlock(&c->mgr->lock);
	kc_client_free(cl);
	if (atomic_load(&c->stop_requested))
		return -ECANCELED;
	c->pg_api = x == 1 ? TY_PODGROUP_X_K8S : sigs == 1 ? TY_PODGROUP_SIGS_K8S :
	    TY_PODGROUP_NONE;
	kc_log_info(&mlog, "PodGroup API: %s", config_podgroup_api_name(c->pg_api));
	return 0;
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
	if ((c->mgr = kc_calloc(1, sizeof(*c->mgr))) == NULL)
		return -ENOMEM;
	if (pthread_mutex_init(&c->mgr->lock, NULL) != 0) {
		c->mgr = kc_free(c->mgr);
		return -ENOMEM;
	}
	return 0;
}

int
manager_start(struct ctl *c)
{
	const char *managed = TY_LABEL_MANAGED_BY "=" TY_MANAGER;
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
	    (r = recorder_new(c->instance, &c->rec)) < 0)
		return kc_log_error_r(&mlog, r, "start: %s", kc_strerror(r));
	if ((r = trim_start(c->mgr)) < 0)
		return kc_log_error_r(&mlog, r, "thread: %s", kc_strerror(r));
	if ((r = resolve_podgroup_api(c)) < 0)
		return r;

	if ((r = add_informer(c, &c->runs, &(struct kc_informer_opts){
		.res = &ty_res_runs, .transform = obj_transform,
		.on_add = run_added, .on_update = run_updated, .on_delete = run_added,
	    })) < 0 ||
	    (r = add_informer(c, &c->profiles, &(struct kc_informer_opts){
		.res = &ty_res_profiles, .transform = obj_transform,
		.on_add = profile_changed, .on_update = profile_updated,
		.on_delete = profile_changed,
	    })) < 0 ||
	    (r = add_informer(c, &c->pods, &(struct kc_informer_opts){
		.res = &kc_res_pods, .label_selector = managed,
		.keep = pod_keep, .nkeep = KC_ARRAY_SIZE(pod_keep),
		.transform = pod_transform, .free_item = pod_free, .index = pod_index,
		.on_add = pod_changed, .on_update = pod_updated, .on_delete = pod_deleted,
	    })) < 0 ||
	    (r = add_informer(c, &c->services, &(struct kc_informer_opts){
		.res = &kc_res_services, .label_selector = managed,
		.keep = child_keep, .nkeep = KC_ARRAY_SIZE(child_keep),
		.transform = child_transform,
		.on_add = child_changed, .on_update = child_updated,
		.on_delete = child_changed,
	    })) < 0 ||
	    (r = add_informer(c, &c->netpols, &(struct kc_informer_opts){
		.res = &kc_res_networkpolicies, .label_selector = managed,
		.keep = child_keep, .nkeep = KC_ARRAY_SIZE(child_keep),
		.transform = child_transform,
		.on_add = child_changed, .on_update = child_updated,
		.on_delete = child_changed,
	    })) < 0)
		return r;
	if (c->pg_api != TY_PODGROUP_NONE &&
	    (r = add_informer(c, &c->podgroups, &(struct kc_informer_opts){
		.res = c->pg_api == TY_PODGROUP_SIGS_K8S ? &ty_res_podgroups_sigs :
		    &ty_res_podgroups_x,
		.label_selector = managed, .transform = child_transform,
		.keep = child_keep, .nkeep = KC_ARRAY_SIZE(child_keep),
		.on_add = child_changed, .on_update = child_updated,
		.on_delete = child_changed,
	    })) < 0)
		return r;

	for (size_t i = 0; i < c->mgr->ninformers; i++)
		if ((r = kc_informer_wait_synced(c->mgr->informers[i].inf, SYNC_TIMEOUT_MS)) < 0)
			return kc_log_error_r(&mlog, r, "caches did not sync");
	kc_log_info(&mlog, "caches synced: %zu runs, %zu pods",
	    kc_informer_len(c->runs), kc_informer_len(c->pods));

	if (c->metrics != NULL)
		metrics_set_collect(c->metrics, collect, c);
	return 0;
}

int
manager_start_workers(struct ctl *c)
{
	int r = 0;

	pthread_mutex_lock(&c->mgr->lock);
	if (c->mgr->workers != NULL || c->mgr->stopping)
		goto out;
	if ((c->mgr->workers = kc_calloc(c->cfg.workers, sizeof(*c->mgr->workers))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < c->cfg.workers; i++) {
		struct thread *t = &c->mgr->workers[i];

		*t = (struct thread){ .c = c };
		if ((r = pthread_create(&t->tid, NULL, worker_main, t)) != 0) {
			r = kc_log_error_r(&mlog, -r, "thread: %s", kc_strerror(-r));
			goto out;
		}
		t->started = true;
		c->mgr->nworkers++;
	}
	kc_log_info(&mlog, "%u workers started", c->cfg.workers);
out:
	pthread_mutex_unlock(&c->mgr->lock);
	return r;
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
	const char *phase = ((const struct ty_obj_item *)kc_item_data(it))->phase;

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
	const struct {
		const char		*name;
		struct kc_informer	*inf;
	} infs[] = {
		{ "runs", c->runs }, { "resourceprofiles", c->profiles }, { "pods", c->pods },
		{ "services", c->services }, { "networkpolicies", c->netpols },
		{ "podgroups", c->podgroups },
	};

	kc_workqueue_stats(c->queue, &qs);
	metrics_collect_workqueue(m, &qs);
	for (size_t i = 0; i < sizeof(infs) / sizeof(infs[0]); i++)
		if (infs[i].inf != NULL) {
			kc_informer_stats(infs[i].inf, &is);
			metrics_collect_informer(m, infs[i].name, &is);
		}
	(void)kc_informer_foreach(c->runs, tally_run, &t);
	metrics_set_runs(m, t.phases, t.counts, 6);
}

void
manager_stop(struct ctl *c, uint64_t drain_ms)
{
	if (c->mgr == NULL)
		return;
	pthread_mutex_lock(&c->mgr->lock);
	c->mgr->stopping = true;
	pthread_mutex_unlock(&c->mgr->lock);
	if (c->metrics != NULL)
		metrics_set_collect(c->metrics, NULL, NULL);
	if (c->queue != NULL) {
		/*
		 * Intake stops; what is queued or in flight may finish within
		 * 'drain_ms', then the workers' requests are cancelled, so
		 * their reconciles fail fast and the queue empties.
		 */
		if (kc_workqueue_shut_down_with_drain(c->queue, drain_ms) == -ETIMEDOUT) {
			kc_log_warn(&mlog, "reconciles still running after %llu ms: "
			    "cancelling them", (unsigned long long)drain_ms);
			pthread_mutex_lock(&c->mgr->lock);
			for (size_t i = 0; i < c->mgr->nworkers; i++) {
				struct kc_client *cl = __atomic_load_n(&c->mgr->workers[i].cl,
				    __ATOMIC_ACQUIRE);

				if (cl != NULL)
					kc_client_cancel(cl);
			}
			pthread_mutex_unlock(&c->mgr->lock);
		}
		for (size_t i = 0; i < c->mgr->nworkers; i++)
			if (c->mgr->workers[i].started)
				pthread_join(c->mgr->workers[i].tid, NULL);
	}
	for (size_t i = 0; i < c->mgr->ninformers; i++)
		kc_informer_stop(c->mgr->informers[i].inf);
	for (size_t i = 0; i < c->mgr->ninformers; i++)
		if (c->mgr->informers[i].started)
			pthread_join(c->mgr->informers[i].tid, NULL);
	trim_stop(c->mgr);
}

void
manager_free(struct ctl *c)
{
	if (c->mgr != NULL) {
		kc_free(c->mgr->workers);
		pthread_mutex_destroy(&c->mgr->lock);
	}
	c->mgr = kc_free(c->mgr);
	c->runs = kc_informer_free(c->runs);
	c->profiles = kc_informer_free(c->profiles);
	c->pods = kc_informer_free(c->pods);
	c->services = kc_informer_free(c->services);
	c->netpols = kc_informer_free(c->netpols);
	c->podgroups = kc_informer_free(c->podgroups);
	c->queue = kc_workqueue_free(c->queue);
	c->expect = expect_free(c->expect);
	c->rec = recorder_free(c->rec);
	c->limiter = kc_ratelimit_free(c->limiter);
}

/*
 * manager.c: the controller's threads.
 *
 *	informer threads   one per cache: Runs, ResourceProfiles, and the
 *	                   pods, Services, NetworkPolicies and PodGroups with
 *	                   app.kubernetes.io/managed-by=trainyard
 *	worker threads     up to cfg.workers of them: key -> reconcile_run()
 *	                   -> done; one while idle (below)
 *	the trimmer        gives the free memory of a burst back to the
 *	                   system once the work stops (trim_main())
 *
 * Every thread owns its own kc_client; all of them share one token bucket
 * (kubeAPIQPS/kubeAPIBurst). Informer handlers only enqueue keys: a Run's
 * own, or for a managed object the Run named by its trainyard.dev/run
 * label. A ResourceProfile change enqueues the Runs that name it.
 *
 * The workers are a pool that grows with the work and shrinks after it.
 * One, the resident, always waits for keys (it also serves the queue's
 * timers). When a key is added, or a worker takes one and more are
 * ready, while no worker waits, another one starts (spawn_worker()), up
 * to cfg.workers. A worker that waits WORKER_IDLE_MS (the trimmer's
 * "burst over") without a key retires: its thread, its client with its
 * TLS connection, and glibc's cache of the blocks it freed (tcache, up
 * to about 100 KB a busy thread, which only the thread's end gives back)
 * go, and the trimmer returns the pages. A burst pays the workers' TLS
 * handshakes again; an idle controller keeps one worker.
 *
 * The caches keep compact items, not JSON, each one allocation from the
 * pool of long-lived blocks (kc_keep_malloc()), so that they pack
 * together instead of pinning the pages a burst used: a pod is
 * session.c's struct ty_pod, which holds its owner's uid and Run name
 * too (about 110 bytes, with its informer entry about 210); a child
 * object about 150 with its entry. Runs and profiles keep their JSON text
 * (without managedFields and kubectl's last-applied configuration), as
 * the model reads them whole, deflated with a preset dictionary
 * (kc/deflate.h): a Run of 1.7 KB takes about 150 bytes.
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
#include <kc/deflate.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>

#include "controller.h"

#define SYNC_TIMEOUT_MS		(5 * 60 * 1000)
#define TRIM_QUIET_MS		200	/* a burst is over after this without work */
#define TRIM_BUSY_MS		(30 * 1000)	/* ... or trimmed anyway after this */
#define TRIM_MIN_WORK		16	/* enqueues and reconciles worth a trim */
#define WORKER_IDLE_MS		TRIM_QUIET_MS	/* a surplus worker retires then */

struct thread {
	struct ctl		*c;
	struct kc_informer	*inf;		/* NULL for a worker */
	struct kc_client	*cl;		/* a worker's, for cancelling */
	pthread_t		 tid;
	bool			 started;	/* a thread to join */
	bool			 retired;	/* a worker that ended (lock) */
	bool			 resident;	/* the worker that never retires */
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
	struct thread	*workers;	/* cfg.workers slots */
	atomic_bool	 pool;		/* 'workers' is set: workers may start */
	bool		 has_resident;	/* a resident worker runs (lock) */
	atomic_uint	 nrunning;	/* workers not retired (changed under lock) */
	atomic_uint	 nwaiting;	/* workers waiting for a key */
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

/*
 * The preset dictionary Runs (and ResourceProfiles) are deflated with:
 * a Run as this controller writes it, with the keys, conditions, reasons
 * and messages of its status, most frequent last (closest to the text).
 * Part of the cached format, but only inside this process: change it
 * freely. A running Run of 1.7 KB deflates to about 150 bytes with it.
 */
static const char obj_dict[] =
	"{\"lastTransitionTime\":\"2025-01-01T00:00:00Z\",\"message\":\"every object of sessi"
	"on 1 is deleted\",\"observedGeneration\":1,\"reason\":\"AllDeleted\",\"status\":\"Tr"
	"ue\",\"type\":\"CleanedUp\"},{\"lastTransitionTime\":\"2025-01-01T00:00:00Z\",\"mess"
	"age\":\"session 1 ended\",\"observedGeneration\":1,\"reason\":\"SessionEnded\",\"sta"
	"tus\":\"False\",\"type\":\"Running\"}],\"failedNodes\":[{\"exitCode\":1,\"index\":0,"
	"\"message\":\"\",\"node\":\"node-0\",\"pod\":\"\",\"reason\":\"PodFailed\"}],\"histo"
	"ry\":[{\"endTime\":\"2025-01-01T00:00:00Z\",\"phase\":\"Succeeded\",\"reason\":\"Com"
	"pleted\",\"session\":1,\"startTime\":\"2025-01-01T00:00:00Z\"}],\"message\":\"\",\"r"
	"eason\":\"\",\"sessionEndTime\":\"2025-01-01T00:00:00Z\"{\"apiVersion\":\"trainyard."
	"dev/v1alpha1\",\"kind\":\"Run\",\"metadata\":{\"annotations\":{},\"creationTimestamp"
	"\":\"2025-01-01T00:00:00Z\",\"generation\":1,\"labels\":{\"app\":\"\"},\"name\":\"\""
	",\"namespace\":\"default\",\"resourceVersion\":\"1\",\"uid\":\"00000000-0000-0000-00"
	"00-000000000000\"},\"spec\":{\"activeDeadlineSeconds\":86400,\"args\":[],\"command\""
	":[\"sleep\",\"infinity\"],\"env\":[{\"name\":\"\",\"value\":\"\"}],\"image\":\"busyb"
	"ox:1.36\",\"maxRestarts\":3,\"nodes\":8,\"ports\":[{\"containerPort\":29500,\"name\""
	":\"master\"}],\"profile\":\"\",\"restartPolicy\":\"Never\",\"scheduleTimeoutSeconds\""
	":600,\"session\":1},\"status\":{\"allPodsCreated\":true,\"conditions\":[{\"lastTrans"
	"itionTime\":\"2025-01-01T00:00:00Z\",\"message\":\"the spec is valid\",\"observedGen"
	"eration\":1,\"reason\":\"Valid\",\"status\":\"True\",\"type\":\"Valid\"},{\"lastTran"
	"sitionTime\":\"2025-01-01T00:00:00Z\",\"message\":\"all nodes are scheduled together"
	" by scheduler-plugins-scheduler (PodGroup scheduling.x-k8s.io/v1alpha1)\",\"observed"
	"Generation\":1,\"reason\":\"PodGroup\",\"status\":\"True\",\"type\":\"GangScheduling"
	"\"},{\"lastTransitionTime\":\"2025-01-01T00:00:00Z\",\"message\":\"all 8 nodes are s"
	"cheduled\",\"observedGeneration\":1,\"reason\":\"AllNodesScheduled\",\"status\":\"Tr"
	"ue\",\"type\":\"Scheduled\"},{\"lastTransitionTime\":\"2025-01-01T00:00:00Z\",\"mess"
	"age\":\"all 8 nodes are running\",\"observedGeneration\":1,\"reason\":\"AllNodesRunn"
	"ing\",\"status\":\"True\",\"type\":\"Running\"},{\"lastTransitionTime\":\"2025-01-01"
	"T00:00:00Z\",\"message\":\"session 1 is active\",\"observedGeneration\":1,\"reason\""
	":\"SessionActive\",\"status\":\"False\",\"type\":\"Finished\"},{\"lastTransitionTime"
	"\":\"2025-01-01T00:00:00Z\",\"message\":\"session 1 is active\",\"observedGeneration"
	"\":1,\"reason\":\"SessionActive\",\"status\":\"False\",\"type\":\"CleanedUp\"}],\"gp"
	"us\":8,\"nodes\":{\"failed\":0,\"pending\":0,\"running\":8,\"succeeded\":0,\"total\""
	":8},\"observedGeneration\":1,\"phase\":\"Running\",\"readyNodes\":\"8/8\",\"restarts"
	"\":0,\"session\":1,\"sessionStartTime\":\"2025-01-01T00:00:00Z\"}}";

static int
obj_transform(void *arg, const struct json_object *obj, void **ret,
    struct kc_status *st)
{
	_cleanup_(kc_freep) char *text = NULL;
	_cleanup_(kc_freep) void *z = NULL;
	struct json_object *copy;
	struct ty_obj_item *it;
	const char *profile = kc_json_str(obj, "spec", "profile");
	const char *phase = kc_json_str(obj, "status", "phase");
	size_t len = 0, zlen = 0;
	char *p;
	int r;

	(void)arg;
	if ((copy = trimmed_copy(obj)) == NULL)
		return -ENOMEM;
	text = kc_json_dump(copy, &len);
	json_object_put(copy);
	if (text == NULL)
		return -ENOMEM;
	if (len > UINT32_MAX)
		return kc_status_set(st, -E2BIG, "object of %zu bytes", len);
	if ((r = kc_deflate(text, len, obj_dict, sizeof(obj_dict) - 1, &z, &zlen)) < 0)
		return r == -ENOMEM ? r : kc_status_set(st, r, "deflate: %s", kc_strerror(r));
	if ((it = kc_keep_malloc(sizeof(*it) + zlen + str_size(profile, ITEM_PROFILE_MAX))) ==
	    NULL)
		return -ENOMEM;
	p = it->strs;
	memcpy(p, z, zlen);
	it->z = (const unsigned char *)p;
	it->zlen = (uint32_t)zlen;
	it->len = (uint32_t)len;
	p += zlen;
	it->profile = put_str(&p, profile, ITEM_PROFILE_MAX);
	kc_strlcpy(it->phase, phase != NULL ? phase : "", sizeof(it->phase));
	*ret = it;
	return 0;
}

int
manager_obj_json(const struct ty_obj_item *it, struct json_object **ret)
{
	_cleanup_(kc_freep) char *text = NULL;
	struct kc_status st = { 0 };
	int r;

	if ((r = kc_inflate(it->z, it->zlen, obj_dict, sizeof(obj_dict) - 1, it->len,
	    &text)) < 0)
		return r;
	return kc_json_parse(text, it->len, ret, &st);
}

static const char *
run_label(const struct json_object *obj)
{
	return kc_json_str(obj, "metadata", "labels", TY_LABEL_RUN);
}

static int
pod_transform(void *arg, const struct json_object *obj, void **ret, struct kc_status *st)
{
	struct ty_pod *p;
	int r;

	(void)arg;
	if ((r = session_pod_from_json(obj, &p)) < 0)
		return r == -ENOMEM ? r : kc_status_set(st, r, "pod without a name");
	*ret = p;
	return 0;
}

static void
pod_free(void *arg, void *data)
{
	(void)arg;
	session_pod_free(data);
}

static bool
pod_index(void *arg, const struct kc_item *item, char *buf, size_t size)
{
	const char *run = ty_pod_str(kc_item_data(item), TY_POD_RUN);
	char ns[KC_NAMESPACE_MAX + 1];

	(void)arg;
	if (run == NULL || run[0] == '\0')
		return false;
	kc_item_ns(item, ns, sizeof(ns));
	return (size_t)snprintf(buf, size, "%s/%s", ns, run) < size;
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

/* Packs 'uid' (NULL and "" are none) at '*p', moving it on; its offset + 1. */
static uint8_t
put_uid(char *strs, char **p, const char *uid)
{
	uint8_t at = (uint8_t)(*p - strs + 1);

	if (uid == NULL || uid[0] == '\0')
		return 0;
	*p = session_uid_pack(uid, *p);
	return at;
}

static int
child_transform(void *arg, const struct json_object *obj, void **ret,
    struct kc_status *st)
{
	const char *uid = kc_json_str(obj, "metadata", "uid");
	const char *owner = session_owner_uid(obj);
	const char *run = run_label(obj);
	const char *session = kc_json_str(obj, "metadata", "labels", TY_LABEL_SESSION);
	struct ty_child_item *it;
	int64_t n;
	char *p;

	(void)arg;
	(void)st;
	/* At most 3 * 64 bytes of strings: 8-bit offsets reach them. */
	if ((it = kc_keep_malloc(sizeof(*it) + (uid != NULL && *uid != '\0' ?
	    session_uid_size(uid) : 0) + (owner != NULL && *owner != '\0' ?
	    session_uid_size(owner) : 0) + str_size(run, ITEM_LABEL_MAX))) == NULL)
		return -ENOMEM;
	it->session = session != NULL && kc_parse_i64(session, &n) == 0 && n >= 0 ?
	    (int32_t)KC_MIN(n, INT32_MAX) : -1;
	it->deleting = kc_json_get(obj, "metadata", "deletionTimestamp") != NULL;
	p = it->strs;
	it->uid = put_uid(it->strs, &p, uid);
	it->owner_uid = put_uid(it->strs, &p, owner);
	it->run = (uint8_t)(p - it->strs + 1);
	(void)put_str(&p, run, ITEM_LABEL_MAX);
	*ret = it;
	return 0;
}

/* ---- handlers ------------------------------------------------------------- */

/* Work happened: wakes the trimmer if it waits for a burst to start. */
static void
trim_note_n(struct manager *m, uint64_t n)
{
	atomic_fetch_add(&m->trim.work, n);
	if (atomic_load(&m->trim.asleep)) {
		pthread_mutex_lock(&m->trim.mu);
		pthread_cond_signal(&m->trim.cv);
		pthread_mutex_unlock(&m->trim.mu);
	}
}

static void
trim_note(struct manager *m)
{
	trim_note_n(m, 1);
}

static void	spawn_worker(struct ctl *c);
static void	*worker_main(void *arg);

static void
enqueue(struct ctl *c, const char *key)
{
	int r;

	trim_note(c->mgr);

	if ((r = kc_workqueue_add(c->queue, key)) < 0 && r != -ESHUTDOWN)
		kc_log_warn(&mlog, "queue %s: %s", key, kc_strerror(r));
	spawn_worker(c);
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
	const char *run = ty_pod_str(kc_item_data(it), TY_POD_RUN);

	owned_changed(arg, it, run != NULL ? run : "");
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
	const struct ty_pod *p = kc_item_data(it);
	char ns[KC_NAMESPACE_MAX + 1], key[KC_WORKQUEUE_KEY_MAX];
	char ubuf[TY_UID_TEXT_MAX], obuf[TY_UID_TEXT_MAX];
	const char *run = ty_pod_str(p, TY_POD_RUN);
	const char *owner = ty_pod_uid(p, TY_POD_OWNER_UID, obuf, sizeof(obuf));
	const char *uid = ty_pod_uid(p, TY_POD_UID, ubuf, sizeof(ubuf));

	kc_item_ns(it, ns, sizeof(ns));
	if (run != NULL && run[0] != '\0' && owner != NULL && uid != NULL && p->session >= 0 &&
	    (size_t)snprintf(key, sizeof(key), "%s/%s", ns, run) < sizeof(key) &&
	    !expect_deleted(c->expect, key, uid) &&
	    expect_pod_gone(c->expect, key, owner, p->session, it) < 0)
		kc_log_warn(&mlog, "pod %s: out of memory", kc_item_name(it));
	pod_changed(arg, it);
}

static void
child_changed(void *arg, struct kc_item *it)
{
	const struct ty_child_item *ci = kc_item_data(it);

	owned_changed(arg, it, ty_child_str(ci, ci->run));
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

/*
 * Starts a worker when a key is ready and none waits for one, up to
 * cfg.workers; the first to start (or to start again after the resident
 * failed) is the resident. Cheap when nothing is to be done: two atomic
 * loads. Any thread.
 */
static void
spawn_worker(struct ctl *c)
{
	struct manager *m = c->mgr;
	struct thread *t = NULL;
	int r;

	if (!atomic_load(&m->pool) || atomic_load(&m->nwaiting) > 0 ||
	    atomic_load(&m->nrunning) >= c->cfg.workers)
		return;
	pthread_mutex_lock(&m->lock);
	if (m->stopping || m->workers == NULL ||
	    atomic_load(&m->nrunning) >= c->cfg.workers ||
	    (m->has_resident && (atomic_load(&m->nwaiting) > 0 ||
	    kc_workqueue_len(c->queue) == 0)))
		goto out;
	for (unsigned i = 0; i < c->cfg.workers && t == NULL; i++)
		if (!m->workers[i].started || m->workers[i].retired)
			t = &m->workers[i];
	if (t == NULL)
		goto out;
	if (t->started)
		pthread_join(t->tid, NULL);	/* retired: returns at once */
	*t = (struct thread){ .c = c, .resident = !m->has_resident };
	if ((r = pthread_create(&t->tid, NULL, worker_main, t)) != 0) {
		kc_log_error_r(&mlog, -r, "worker thread: %s", kc_strerror(-r));
		goto out;
	}
	t->started = true;
	m->has_resident = m->has_resident || t->resident;
	atomic_fetch_add(&m->nrunning, 1);
out:
	pthread_mutex_unlock(&m->lock);
}

/* A worker's end, on its own or at shutdown; frees its client. */
static void
worker_end(struct thread *t, struct kc_client *cl)
{
	struct manager *m = t->c->mgr;

	pthread_mutex_lock(&m->lock);		/* manager_stop() may cancel it */
	__atomic_store_n(&t->cl, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&m->lock);
	kc_client_free(cl);
	pthread_mutex_lock(&m->lock);
	t->retired = true;
	if (t->resident)
		m->has_resident = false;
	atomic_fetch_sub(&m->nrunning, 1);
	pthread_mutex_unlock(&m->lock);
	/* What the thread's cache held is free now: make sure a trim follows. */
	trim_note_n(m, TRIM_MIN_WORK);
}

static void *
worker_main(void *arg)
{
	struct thread *t = arg;
	struct ctl *c = t->c;
	struct manager *m = c->mgr;
	struct kc_status st = { 0 };
	struct kc_client *cl = NULL;
	char key[KC_WORKQUEUE_KEY_MAX];
	int r;

	if ((r = manager_client(c, &cl, &st)) < 0) {
		kc_log_error_r(&mlog, r, "client: %s", st.message);
		worker_end(t, NULL);
		return NULL;
	}
	__atomic_store_n(&t->cl, cl, __ATOMIC_RELEASE);
	for (;;) {
		uint64_t t0;
		int64_t res;

		atomic_fetch_add(&m->nwaiting, 1);
		r = t->resident ? kc_workqueue_get(c->queue, key, sizeof(key)) :
		    kc_workqueue_get_timeout(c->queue, key, sizeof(key), WORKER_IDLE_MS);
		atomic_fetch_sub(&m->nwaiting, 1);
		if (r < 0)
			break;			/* idle (surplus), or shut down */
		spawn_worker(c);		/* more keys wait: a helper */
		t0 = kc_clock_now_ms();
		res = reconcile_run(c, cl, key);

		trim_note(m);

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
	worker_end(t, cl);
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
		(void)kc_keep_trim();
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
	struct manager *m = c->mgr;
	int r = 0;

	pthread_mutex_lock(&m->lock);
	if (m->workers != NULL || m->stopping) {
		pthread_mutex_unlock(&m->lock);
		return 0;
	}
	if ((m->workers = kc_calloc(c->cfg.workers, sizeof(*m->workers))) == NULL)
		r = -ENOMEM;
	else
		atomic_store(&m->pool, true);
	pthread_mutex_unlock(&m->lock);
	if (r < 0)
		return r;
	spawn_worker(c);			/* the resident */
	if (atomic_load(&m->nrunning) == 0)
		return kc_log_error_r(&mlog, -EAGAIN, "no worker thread");
	spawn_worker(c);			/* and help for what is queued */
	kc_log_info(&mlog, "workers started: up to %u, one while idle", c->cfg.workers);
	return 0;
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
			for (size_t i = 0; c->mgr->workers != NULL && i < c->cfg.workers; i++) {
				struct kc_client *cl = __atomic_load_n(&c->mgr->workers[i].cl,
				    __ATOMIC_ACQUIRE);

				if (cl != NULL)
					kc_client_cancel(cl);
			}
			pthread_mutex_unlock(&c->mgr->lock);
		}
		/* No worker starts once 'stopping' is set: the slots stay put. */
		for (size_t i = 0; c->mgr->workers != NULL && i < c->cfg.workers; i++)
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

/*
 * cmd_logs.c: "kubectl trainyard logs": every node's log of a Run,
 * interleaved line by line with a "[node-3]" prefix; logs_follow() also
 * serves "submit --follow" and "run --follow" (logs.h).
 *
 * Threads. The main thread waits on a self-pipe (ppoll, SIGINT unblocked
 * only there) and decides when to stop. One thread watches the Run (the
 * session's end, its deletion), one watches the Run's pods (label
 * trainyard.dev/run=RUN), and each node's log is one blocking stream on
 * its own thread with its own transport instance, started when the
 * node's container has started and ended when its container exits or its
 * pod goes. Why not one thread and a curl multi handle: libkc's transport
 * (lib/transport.c, the only place curl may be used) offers one blocking
 * ->stream() per instance and a non-blocking call that collects whole
 * bodies, not a streaming multi interface. So the streams are a bounded
 * pool (LOGS_STREAMS_MAX, small stacks) of threads that sleep in the
 * transport's poll until bytes arrive: no thread polls or spins, 256
 * followed nodes cost 256 sleeping threads and 256 connections, and the
 * only shared work is writing whole lines under one mutex.
 *
 * Resuming. Every stream is read with timestamps=true; a stream that
 * breaks (the connection, the API server restarting) is reopened with
 * sinceTime at the last line's second, and logmux drops what it already
 * printed (logmux.c). Watches resume from their resourceVersion and list
 * again on 410. Ctrl-C cancels every transport and touches nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>
#include <unistd.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/str.h>
#include <kc/transport.h>
#include <kc/watch.h>

#include "cli.h"
#include "logs.h"

/* At most this many node logs are followed at once. */
#define LOGS_STREAMS_MAX	1024
#define LOGS_STACK_SIZE		(512u << 10)
#define LOGS_BACKOFF_MIN_MS	250
#define LOGS_BACKOFF_MAX_MS	4000

struct follow;

struct pstream {
	TAILQ_ENTRY(pstream) link;
	struct follow	*f;
	char		 pod[KC_NAME_MAX + 1];
	char		 uid[64];
	int64_t		 index;
	int64_t		 session;
	void		*tp;		/* its own transport instance */
	pthread_t	 th;
	bool		 done;
	bool		 got_bytes;
	struct logmux_src mux;
};

TAILQ_HEAD(pstream_list, pstream);

struct follow {
	struct cli		*c;
	const struct logs_opts	*o;
	char			 selector[KC_NAME_MAX + 32];
	int64_t			 target;	/* the session shown (following: the first) */
	int			 wake[2];	/* self-pipe to the main thread */
	struct kc_client	*pods_cl, *run_cl;
	pthread_mutex_t		 mu;		/* everything below */
	pthread_cond_t		 cond;		/* stopping, for back-off sleeps */
	struct json_object	*run;		/* the Run as last seen */
	bool			 run_deleted;
	bool			 pods_listed;
	bool			 stopping;
	int			 error;		/* a watch failed for good: its exit code */
	struct pstream_list	 streams;
	size_t			 nstreams, nactive;
	size_t			 nstarted_target;	/* streams of session 'target' */
	int64_t			 last_session;	/* the newest session streamed */
	bool			 said_waiting, said_lost, said_cap;
	bool			 caught_up;	/* the pods listed again once the Run ended */
	char			 wait_reason[256];
	pthread_mutex_t		 out_mu;	/* stdout */
	atomic_bool		 out_broken;
};

static volatile sig_atomic_t interrupted;

static void
on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void
wake_main(struct follow *f)
{
	ssize_t r;

	do
		r = write(f->wake[1], "x", 1);
	while (r < 0 && errno == EINTR);
}

/* Sleeps 'ms' unless the follow stops first: false when it stopped. */
static bool
backoff_sleep(struct follow *f, uint64_t ms)
{
	struct timespec ts;
	bool stop;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	(void)pthread_mutex_lock(&f->mu);
	while (!f->stopping && pthread_cond_timedwait(&f->cond, &f->mu, &ts) == 0)
		;
	stop = f->stopping;
	(void)pthread_mutex_unlock(&f->mu);
	return !stop;
}

static bool
stopping(struct follow *f)
{
	bool s;

	(void)pthread_mutex_lock(&f->mu);
	s = f->stopping;
	(void)pthread_mutex_unlock(&f->mu);
	return s;
}

static int64_t
label_int(const struct json_object *obj, const char *key)
{
	const char *v = kc_json_str(obj, "metadata", "labels", key);
	int64_t n;

	if (v == NULL || kc_parse_i64(v, &n) < 0)
		return -1;
	return n;
}

static bool
phase_ended(const char *phase)
{
	return phase != NULL && (strcmp(phase, "Succeeded") == 0 ||
	    strcmp(phase, "Failed") == 0 || strcmp(phase, "Stopped") == 0);
}

/* Whether the controller will start another session after this failed one. */
static bool
restart_due(const struct json_object *run)
{
	const char *phase = kc_json_str(run, "status", "phase");
	const char *reason = kc_json_str(run, "status", "reason");
	const char *policy = kc_json_str(run, "spec", "restart", "policy");
	int64_t limit = kc_json_int(run, 3, "spec", "restart", "limit");
	int64_t restarts = kc_json_int(run, 0, "status", "restarts");
	bool preempted;

	if (phase == NULL || strcmp(phase, "Failed") != 0 || reason == NULL || policy == NULL ||
	    restarts >= limit)
		return false;
	preempted = strcmp(reason, "Preempted") == 0 || strcmp(reason, "Evicted") == 0 ||
	    strcmp(reason, "NodeLost") == 0;
	if (strcmp(policy, "OnPreemption") == 0)
		return preempted;
	if (strcmp(policy, "OnFailure") == 0)
		return preempted || strcmp(reason, "PodFailed") == 0 ||
		    strcmp(reason, "PodDeleted") == 0;
	return false;
}

/* Whether session 's' of the Run is over (a later one began, or it ended). */
static bool
session_over(const struct json_object *run, int64_t s)
{
	int64_t cur = kc_json_int(run, 0, "status", "session");

	return cur > s || (cur == s && phase_ended(kc_json_str(run, "status", "phase")));
}

/* ---- output --------------------------------------------------------------- */

static void
out_line(void *arg, const char *line, size_t len)
{
	struct follow *f = arg;

	if (atomic_load(&f->out_broken))
		return;
	if (fwrite(line, 1, len, stdout) != len) {
		atomic_store(&f->out_broken, true);
		wake_main(f);
	}
}

static int
on_chunk(void *arg, const char *data, size_t len)
{
	struct pstream *ps = arg;
	struct follow *f = ps->f;

	ps->got_bytes = true;
	(void)pthread_mutex_lock(&f->out_mu);
	logmux_feed(&ps->mux, data, len, out_line, f);
	if (fflush(stdout) != 0 && !atomic_load(&f->out_broken)) {
		atomic_store(&f->out_broken, true);
		wake_main(f);
	}
	(void)pthread_mutex_unlock(&f->out_mu);
	return atomic_load(&f->out_broken) ? -ECANCELED : 0;
}

static void
finish(struct pstream *ps)
{
	(void)pthread_mutex_lock(&ps->f->out_mu);
	logmux_finish(&ps->mux, out_line, ps->f);
	(void)fflush(stdout);
	(void)pthread_mutex_unlock(&ps->f->out_mu);
}

/* ---- one node's stream ------------------------------------------------------ */

enum pod_state { POD_GONE, POD_DONE, POD_RUNNING, POD_UNKNOWN };

/* Where the stream's pod is: gone (or replaced), its container ended, or running. */
static enum pod_state
pod_state(struct pstream *ps)
{
	struct follow *f = ps->f;
	struct kc_http_resp resp = { 0 };
	struct kc_status st = { 0 };
	struct json_object *pod = NULL;
	const struct json_object *cs;
	enum pod_state ret = POD_UNKNOWN;
	const char *phase, *uid;
	char path[512];

	(void)snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", f->c->ns, ps->pod);
	if (kc_transport_curl.request(ps->tp, &(struct kc_http_req){ .method = "GET",
	    .path = path, .idempotent = true }, &resp, &st) < 0)
		return POD_UNKNOWN;
	if (resp.status == 404)
		ret = POD_GONE;
	else if (resp.status == 200 &&
	    kc_json_parse(resp.body.data, resp.body.len, &pod, &st) == 0) {
		uid = kc_json_str(pod, "metadata", "uid");
		phase = kc_json_str(pod, "status", "phase");
		ret = POD_RUNNING;
		if (uid == NULL || strcmp(uid, ps->uid) != 0)
			ret = POD_GONE;
		else if (phase != NULL && (strcmp(phase, "Succeeded") == 0 ||
		    strcmp(phase, "Failed") == 0))
			ret = POD_DONE;
		else if ((cs = kc_json_get(pod, "status", "containerStatuses")) != NULL &&
		    json_object_is_type(cs, json_type_array))
			for (size_t i = 0; i < json_object_array_length(cs); i++) {
				const struct json_object *c = json_object_array_get_idx(cs, i);

				if (kc_json_str(c, "name") != NULL &&
				    strcmp(kc_json_str(c, "name"), "main") == 0 &&
				    kc_json_get(c, "state", "terminated") != NULL)
					ret = POD_DONE;
			}
	}
	json_object_put(pod);
	kc_http_resp_free(&resp);
	return ret;
}

static void
log_path(struct pstream *ps, char *buf, size_t size)
{
	const struct logs_opts *o = ps->f->o;
	char since[KC_TIME_MAX];
	size_t n;

	(void)snprintf(buf, size, "/api/v1/namespaces/%s/pods/%s/log?container=main&"
	    "timestamps=true%s", ps->f->c->ns, ps->pod, o->follow ? "&follow=true" : "");
	n = strlen(buf);
	if (logmux_since_time(&ps->mux, since, sizeof(since)) == 0) {
		/* Resuming: from the last line's second; logmux drops the repeats. */
		(void)snprintf(buf + n, size - n, "&sinceTime=%s", since);
		return;
	}
	if (o->since_ms > 0)
		(void)snprintf(buf + n, size - n, "&sinceSeconds=%llu",
		    (unsigned long long)((o->since_ms + 999) / 1000));
	n = strlen(buf);
	if (o->tail >= 0)
		(void)snprintf(buf + n, size - n, "&tailLines=%lld", (long long)o->tail);
}

static void
say_lost(struct follow *f, const char *pod, const char *why)
{
	bool say;

	(void)pthread_mutex_lock(&f->mu);
	say = !f->said_lost;
	f->said_lost = true;
	(void)pthread_mutex_unlock(&f->mu);
	if (say)
		(void)fprintf(stderr, "lost the log stream of pod %s (%s); resuming where it "
		    "stopped\n", pod, why);
}

static void *
stream_main(void *arg)
{
	struct pstream *ps = arg;
	struct follow *f = ps->f;
	uint64_t backoff = LOGS_BACKOFF_MIN_MS;
	char path[1024];

	while (!stopping(f)) {
		struct kc_http_resp resp = { 0 };
		struct kc_status st = { 0 };
		struct json_object *status = NULL;
		const char *msg;
		int r;

		log_path(ps, path, sizeof(path));
		ps->got_bytes = false;
		r = kc_transport_curl.stream(ps->tp, &(struct kc_http_req){ .method = "GET",
		    .path = path, .accept = "*/*" }, &resp, on_chunk, ps, &st);
		if (r == -ECANCELED) {
			kc_http_resp_free(&resp);
			break;
		}
		if (r == 0 && resp.status / 100 == 2) {
			enum pod_state s;

			kc_http_resp_free(&resp);
			if (!f->o->follow) {
				finish(ps);
				break;
			}
			if ((s = pod_state(ps)) == POD_GONE || s == POD_DONE) {
				finish(ps);
				break;
			}
			/* The server ended a stream of a running container: reopen it. */
			logmux_resume(&ps->mux);
			if (!ps->got_bytes && !backoff_sleep(f, backoff))
				break;
			backoff = ps->got_bytes ? LOGS_BACKOFF_MIN_MS :
			    KC_MIN(backoff * 2, LOGS_BACKOFF_MAX_MS);
			continue;
		}
		if (r == 0) {
			/* An HTTP error: a metav1.Status, or text from a proxy. */
			msg = NULL;
			if (kc_json_parse(resp.body.data, resp.body.len, &status, NULL) == 0)
				msg = kc_json_str(status, "message");
			if (resp.status == 404) {
				json_object_put(status);
				kc_http_resp_free(&resp);
				break;
			}
			if ((resp.status == 400 && msg != NULL &&
			    strstr(msg, "waiting to start") != NULL) ||
			    resp.status == 429 || resp.status >= 500) {
				/* Waiting to start again, throttled or a kubelet away. */
				if (resp.status >= 500)
					say_lost(f, ps->pod, msg != NULL ? msg : "server error");
				json_object_put(status);
				kc_http_resp_free(&resp);
				logmux_resume(&ps->mux);
					if (!backoff_sleep(f, backoff))
					break;
				backoff = KC_MIN(backoff * 2, LOGS_BACKOFF_MAX_MS);
				continue;
			}
			(void)fprintf(stderr, "error: logs of pod %s: %s\n", ps->pod,
			    msg != NULL ? msg : kc_strerror(kc_err_from_http(resp.status, NULL)));
			json_object_put(status);
			kc_http_resp_free(&resp);
			break;
		}
		kc_http_resp_free(&resp);
		/* The connection broke: reopen from the last line printed. */
		say_lost(f, ps->pod, st.message[0] != '\0' ? st.message : kc_strerror(r));
		logmux_resume(&ps->mux);
		if (!backoff_sleep(f, backoff))
			break;
		backoff = KC_MIN(backoff * 2, LOGS_BACKOFF_MAX_MS);
		if (pod_state(ps) == POD_GONE)
			break;
	}
	(void)pthread_mutex_lock(&f->mu);
	ps->done = true;
	f->nactive--;
	(void)pthread_mutex_unlock(&f->mu);
	wake_main(f);
	return NULL;
}

/* ---- the pods ------------------------------------------------------------- */

/* Whether the pod's container started (so it has a log), else why not in 'why'. */
static bool
pod_started(const struct json_object *pod, char *why, size_t size)
{
	const char *phase = kc_json_str(pod, "status", "phase");
	const struct json_object *cs = kc_json_get(pod, "status", "containerStatuses");
	const char *reason = NULL;

	if (phase != NULL && (strcmp(phase, "Running") == 0 ||
	    strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
		return true;
	if (cs != NULL && json_object_is_type(cs, json_type_array))
		for (size_t i = 0; i < json_object_array_length(cs); i++) {
			const struct json_object *c = json_object_array_get_idx(cs, i);

			if (kc_json_get(c, "state", "running") != NULL ||
			    kc_json_get(c, "state", "terminated") != NULL)
				return true;
			if (reason == NULL)
				reason = kc_json_str(c, "state", "waiting", "reason");
		}
	if (reason == NULL && kc_json_str(pod, "spec", "nodeName") == NULL)
		reason = "not scheduled yet";
	(void)snprintf(why, size, "%s: %s", kc_json_str(pod, "metadata", "name"),
	    reason != NULL ? reason : phase != NULL ? phase : "Pending");
	return false;
}

/* Starts following a pod: with f->mu held. */
static void
stream_start(struct follow *f, const struct json_object *pod, int64_t index, int64_t session)
{
	struct kc_status st = { 0 };
	struct pstream *ps;
	pthread_attr_t attr;
	char label[32];

	if (f->nstreams >= LOGS_STREAMS_MAX) {
		if (!f->said_cap)
			(void)fprintf(stderr, "warning: following the first %d nodes only; pick "
			    "others with --node\n", LOGS_STREAMS_MAX);
		f->said_cap = true;
		return;
	}
	if ((ps = kc_calloc(1, sizeof(*ps))) == NULL)
		return;
	ps->f = f;
	ps->index = index;
	ps->session = session;
	kc_strlcpy(ps->pod, kc_json_str(pod, "metadata", "name"), sizeof(ps->pod));
	kc_strlcpy(ps->uid, kc_json_str(pod, "metadata", "uid"), sizeof(ps->uid));
	(void)snprintf(label, sizeof(label), "node-%lld", (long long)index);
	logmux_src_init(&ps->mux, label, f->c->color ? (int)(index % 1000) : -1,
	    f->o->timestamps);
	if (kc_transport_curl.open(&(struct kc_transport_opts){
		.rc = f->c->rc,
		.max_retries = 3,
		.user_agent = "kubectl-trainyard/" KC_VERSION,
	    }, &ps->tp, &st) < 0) {
		(void)fprintf(stderr, "error: logs of pod %s: %s\n", ps->pod, st.message);
		kc_free(ps);
		return;
	}
	if (f->last_session > 0 && session > f->last_session)
		(void)fprintf(stderr, "session %lld of run %s started\n", (long long)session,
		    f->o->run);
	f->last_session = KC_MAX(f->last_session, session);
	(void)pthread_attr_init(&attr);
	(void)pthread_attr_setstacksize(&attr, LOGS_STACK_SIZE);
	if (pthread_create(&ps->th, &attr, stream_main, ps) != 0) {
		(void)pthread_attr_destroy(&attr);
		(void)fprintf(stderr, "error: logs of pod %s: cannot start a thread\n", ps->pod);
		ps->tp = kc_transport_curl.close(ps->tp);
		kc_free(ps);
		return;
	}
	(void)pthread_attr_destroy(&attr);
	TAILQ_INSERT_TAIL(&f->streams, ps, link);
	f->nstreams++;
	f->nactive++;
	if (session == f->target)
		f->nstarted_target++;
}

static void
pod_seen(struct follow *f, const struct json_object *pod)
{
	const struct logs_opts *o = f->o;
	int64_t session = label_int(pod, "trainyard.dev/session");
	int64_t index = label_int(pod, "trainyard.dev/node-index");
	const char *uid = kc_json_str(pod, "metadata", "uid");
	struct pstream *ps;
	char why[256];

	if (uid == NULL || kc_json_str(pod, "metadata", "name") == NULL || index < 0 ||
	    session < 1)
		return;
	if ((o->session > 0 || !o->follow) ? session != f->target : session < f->target)
		return;
	if (o->node >= 0 && index != o->node)
		return;
	(void)pthread_mutex_lock(&f->mu);
	for (ps = TAILQ_FIRST(&f->streams); ps != NULL; ps = TAILQ_NEXT(ps, link))
		if (strcmp(ps->uid, uid) == 0)
			break;
	if (ps == NULL && !f->stopping) {
		if (pod_started(pod, why, sizeof(why)))
			stream_start(f, pod, index, session);
		else if (f->wait_reason[0] == '\0')
			kc_strlcpy(f->wait_reason, why, sizeof(f->wait_reason));
	}
	(void)pthread_mutex_unlock(&f->mu);
}

static int
pod_event(void *arg, enum kc_watch_type type, struct json_object *obj)
{
	struct follow *f = arg;

	if (type == KC_WATCH_ADDED || type == KC_WATCH_MODIFIED) {
		pod_seen(f, obj);
		wake_main(f);
	}
	return stopping(f) ? KC_WATCH_STOP : 0;
}

static void
fail_for_good(struct follow *f, const char *what, int r, const struct kc_status *st)
{
	int code = cli_api_error(f->c, what, r, st);

	(void)pthread_mutex_lock(&f->mu);
	if (f->error == 0)
		f->error = code;
	(void)pthread_mutex_unlock(&f->mu);
	wake_main(f);
}

static bool
fatal_code(int r)
{
	return r == KC_EFORBIDDEN || r == KC_EUNAUTHORIZED || r == -EINVAL;
}

/*
 * Lists the Run's pods on 'cl' and follows those that started: 0 with the
 * list's resourceVersion in 'rv' (may be NULL), or the list's error.
 */
static int
list_pods(struct follow *f, struct kc_client *cl, char *rv, size_t rv_size,
    struct kc_status *st)
{
	struct json_object *list = NULL, *items;
	const char *v;
	int r;

	if ((r = kc_client_list(cl, &(struct kc_list_opts){ .res = &kc_res_pods,
	    .ns = f->c->ns, .label_selector = f->selector }, &list, st)) < 0)
		return r;
	items = kc_json_arr_of(list, "items");
	for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++)
		pod_seen(f, json_object_array_get_idx(items, i));
	if (rv != NULL)
		kc_strlcpy(rv, (v = kc_json_str(list, "metadata", "resourceVersion")) != NULL ?
		    v : "", rv_size);
	json_object_put(list);
	return 0;
}

/* What a watch's end asks for next. */
enum watch_next { WATCH_AGAIN, WATCH_RELIST, WATCH_RETRIED, WATCH_QUIT };

/*
 * One watch from 'rv' (updated to where it ended) and what to do next:
 * watch again, list again (410), watch again after a back-off sleep, or
 * quit (cancelled, or an error no retry cures, printed once).
 */
static enum watch_next
watch_once(struct follow *f, struct kc_client *cl, const struct kc_watch_opts *wo,
    kc_watch_fn *fn, char *rv, size_t rv_size, uint64_t *backoff, const char *what)
{
	struct kc_watch_result wr = { 0 };
	struct kc_status st = { 0 };
	struct kc_watch_opts o = *wo;
	int r;

	o.resource_version = rv;
	o.allow_bookmarks = true;
	o.timeout_s = 300;
	r = kc_watch_run(cl, &o, fn, f, &wr, &st);
	if (wr.resource_version[0] != '\0')
		kc_strlcpy(rv, wr.resource_version, rv_size);
	if (r == -ECANCELED || r == KC_WATCH_STOP)
		return WATCH_QUIT;
	if (r == KC_EEXPIRED)
		return WATCH_RELIST;
	if (fatal_code(r)) {
		fail_for_good(f, what, r, &st);
		return WATCH_QUIT;
	}
	if (r == 0) {
		*backoff = LOGS_BACKOFF_MIN_MS;
		return WATCH_AGAIN;
	}
	if (!backoff_sleep(f, *backoff))
		return WATCH_QUIT;
	*backoff = KC_MIN(*backoff * 2, LOGS_BACKOFF_MAX_MS);
	return WATCH_RETRIED;
}

static void *
pods_main(void *arg)
{
	struct follow *f = arg;
	char rv[KC_RV_MAX] = "";
	uint64_t backoff = LOGS_BACKOFF_MIN_MS;
	bool relist = true;

	while (!stopping(f)) {
		struct kc_status st = { 0 };
		enum watch_next next;
		int r;

		if (relist) {
			r = list_pods(f, f->pods_cl, rv, sizeof(rv), &st);
			if (r == -ECANCELED)
				break;
			if (fatal_code(r)) {
				fail_for_good(f, "list pods", r, &st);
				break;
			}
			if (r < 0) {
				if (!backoff_sleep(f, backoff))
					break;
				backoff = KC_MIN(backoff * 2, LOGS_BACKOFF_MAX_MS);
				continue;
			}
			relist = false;
			(void)pthread_mutex_lock(&f->mu);
			f->pods_listed = true;
			(void)pthread_mutex_unlock(&f->mu);
			wake_main(f);
		}
		next = watch_once(f, f->pods_cl, &(struct kc_watch_opts){ .res = &kc_res_pods,
		    .ns = f->c->ns, .label_selector = f->selector }, pod_event, rv, sizeof(rv),
		    &backoff, "watch pods");
		if (next == WATCH_QUIT)
			break;
		relist = next == WATCH_RELIST;
	}
	return NULL;
}

/* ---- the Run -------------------------------------------------------------- */

static void
run_seen(struct follow *f, struct json_object *run, bool deleted)
{
	(void)pthread_mutex_lock(&f->mu);
	if (deleted)
		f->run_deleted = true;
	else {
		json_object_put(f->run);
		f->run = json_object_get(run);
	}
	(void)pthread_mutex_unlock(&f->mu);
	wake_main(f);
}

static int
run_event(void *arg, enum kc_watch_type type, struct json_object *obj)
{
	struct follow *f = arg;

	if (type == KC_WATCH_ADDED || type == KC_WATCH_MODIFIED || type == KC_WATCH_DELETED)
		run_seen(f, obj, type == KC_WATCH_DELETED);
	return stopping(f) ? KC_WATCH_STOP : 0;
}

static void *
run_main(void *arg)
{
	struct follow *f = arg;
	char rv[KC_RV_MAX], sel[KC_NAME_MAX + 32];
	uint64_t backoff = LOGS_BACKOFF_MIN_MS;
	bool reget = false;

	(void)snprintf(sel, sizeof(sel), "metadata.name=%s", f->o->run);
	(void)pthread_mutex_lock(&f->mu);
	kc_strlcpy(rv, kc_json_str(f->run, "metadata", "resourceVersion") != NULL ?
	    kc_json_str(f->run, "metadata", "resourceVersion") : "", sizeof(rv));
	(void)pthread_mutex_unlock(&f->mu);
	while (!stopping(f)) {
		struct kc_status st = { 0 };
		struct json_object *run = NULL;
		enum watch_next next;
		int r;

		if (reget) {
			r = kc_client_get(f->run_cl, &(struct kc_get_opts){ .res = &cli_res_runs,
			    .ns = f->c->ns, .name = f->o->run }, &run, &st);
			if (r == -ECANCELED)
				break;
			if (r == KC_ENOTFOUND) {
				run_seen(f, NULL, true);
				break;
			}
			if (r < 0) {
				if (!backoff_sleep(f, backoff))
					break;
				backoff = KC_MIN(backoff * 2, LOGS_BACKOFF_MAX_MS);
				continue;
			}
			run_seen(f, run, false);
			kc_strlcpy(rv, kc_json_str(run, "metadata", "resourceVersion") != NULL ?
			    kc_json_str(run, "metadata", "resourceVersion") : "", sizeof(rv));
			json_object_put(run);
			reget = false;
		}
		next = watch_once(f, f->run_cl, &(struct kc_watch_opts){ .res = &cli_res_runs,
		    .ns = f->c->ns, .field_selector = sel }, run_event, rv, sizeof(rv), &backoff,
		    "watch runs");
		if (next == WATCH_QUIT)
			break;
		/* After an outage the watch may have missed the end: read the Run again. */
		reget = next == WATCH_RELIST || next == WATCH_RETRIED;
	}
	return NULL;
}

/* ---- the decision --------------------------------------------------------- */

/* Whether there is nothing more to show: with f->mu held. */
static bool
all_done(struct follow *f)
{
	const struct logs_opts *o = f->o;
	const struct json_object *run = f->run;
	int64_t cur = kc_json_int(run, 0, "status", "session");
	int64_t want;

	if (f->run_deleted || f->error != 0 || atomic_load(&f->out_broken))
		return true;
	if (!f->pods_listed || f->nactive > 0)
		return false;
	if (o->follow && o->session == 0) {
		/* Every session from the target on, until one ends for good. */
		return cur >= f->target && phase_ended(kc_json_str(run, "status", "phase")) &&
		    !restart_due(run) && kc_json_int(run, 0, "spec", "session") <= cur;
	}
	if (session_over(run, f->target))
		return true;
	if (o->follow)
		return false;
	want = o->node >= 0 ? 1 : kc_json_int(run, kc_json_int(run, 0, "spec", "nodes"),
	    "status", "nodes", "total");
	return want > 0 && (int64_t)f->nstarted_target >= want;
}

static void
print_failed_nodes(struct follow *f, const struct json_object *run)
{
	const struct json_object *fn = kc_json_get(run, "status", "failedNodes");

	for (size_t i = 0; fn != NULL && json_object_is_type(fn, json_type_array) &&
	    i < json_object_array_length(fn); i++) {
		const struct json_object *n = json_object_array_get_idx(fn, i);
		int64_t index = kc_json_int(n, -1, "index");
		const char *msg = kc_json_str(n, "message");
		struct logmux_src *src;
		char label[32];
		size_t len;

		if (f->o->node >= 0 && index != f->o->node)
			continue;
		if ((src = kc_malloc(sizeof(*src))) == NULL)
			return;
		(void)snprintf(label, sizeof(label), "node-%lld", (long long)index);
		logmux_src_init(src, label, f->c->color ? (int)(index % 1000) : -1, false);
		(void)printf("%sexit code %lld (%s), pod %s on %s:\n", src->prefix,
		    (long long)kc_json_int(n, -1, "exitCode"),
		    kc_json_str(n, "reason") != NULL ? kc_json_str(n, "reason") : "unknown",
		    kc_json_str(n, "pod") != NULL ? kc_json_str(n, "pod") : "?",
		    kc_json_str(n, "node") != NULL ? kc_json_str(n, "node") : "no machine");
		len = msg != NULL ? strlen(msg) : 0;
		logmux_feed(src, msg != NULL ? msg : "", len, out_line, f);
		logmux_finish(src, out_line, f);
		kc_free(src);
	}
	(void)fflush(stdout);
}

void
logs_print_end(const struct json_object *run, const char *name)
{
	const char *phase = kc_json_str(run, "status", "phase");
	const char *reason = kc_json_str(run, "status", "reason");
	const char *msg = kc_json_str(run, "status", "message");

	(void)fprintf(stderr, "run %s: session %lld %s", name,
	    (long long)kc_json_int(run, 0, "status", "session"),
	    phase != NULL ? phase : "ended");
	if (reason != NULL && (phase == NULL || strcmp(reason, phase) != 0))
		(void)fprintf(stderr, " (%s)", reason);
	if (msg != NULL && msg[0] != '\0')
		(void)fprintf(stderr, ": %s", msg);
	(void)fputc('\n', stderr);
}

static int
start_thread(pthread_t *th, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	int r;

	(void)pthread_attr_init(&attr);
	(void)pthread_attr_setstacksize(&attr, LOGS_STACK_SIZE);
	r = pthread_create(th, &attr, fn, arg);
	(void)pthread_attr_destroy(&attr);
	return r == 0 ? 0 : -r;
}

static int
new_client(struct cli *c, struct kc_client **ret)
{
	struct kc_status st = { 0 };

	if (kc_client_new(&(struct kc_client_opts){ .rc = c->rc, .max_retries = 3,
	    .user_agent = "kubectl-trainyard/" KC_VERSION }, ret, &st) < 0)
		return cli_error(c, "connecting to %s: %s", c->rc->server, st.message);
	return CLI_OK;
}

int
logs_follow(struct cli *c, const struct logs_opts *o, struct json_object **ret_run)
{
	struct follow *f;
	struct sigaction sa = { 0 }, old_sa;
	sigset_t block, old_mask;
	pthread_t pods_th, run_th;
	bool pods_started = false, run_started = false;
	struct pstream *ps;
	int64_t cur;
	int r;

	if ((f = kc_calloc(1, sizeof(*f))) == NULL)
		return cli_error(c, "out of memory");
	f->c = c;
	f->o = o;
	f->wake[0] = f->wake[1] = -1;
	TAILQ_INIT(&f->streams);
	atomic_init(&f->out_broken, false);
	(void)pthread_mutex_init(&f->mu, NULL);
	(void)pthread_mutex_init(&f->out_mu, NULL);
	{
		pthread_condattr_t ca;

		(void)pthread_condattr_init(&ca);
		(void)pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		(void)pthread_cond_init(&f->cond, &ca);
		(void)pthread_condattr_destroy(&ca);
	}
	(void)snprintf(f->selector, sizeof(f->selector), "trainyard.dev/run=%s", o->run);
	if ((r = cli_get_run(c, o->run, &f->run)) != CLI_OK)
		goto out_free;
	cur = kc_json_int(f->run, 0, "status", "session");
	if (o->session > 0) {
		if (o->session > cur && !o->follow) {
			r = cli_error(c, "run %s has no session %lld yet (its current session is "
			    "%lld); add -f to wait for it", o->run, (long long)o->session,
			    (long long)cur);
			goto out_free;
		}
		f->target = o->session;
	} else
		f->target = KC_MAX(KC_MAX(cur, o->min_session), 1);
	if (o->node >= 0 && o->node >= kc_json_int(f->run, 1, "spec", "nodes")) {
		r = cli_error(c, "run %s has %lld nodes: --node takes 0 to %lld", o->run,
		    (long long)kc_json_int(f->run, 1, "spec", "nodes"),
		    (long long)kc_json_int(f->run, 1, "spec", "nodes") - 1);
		goto out_free;
	}
	if (pipe2(f->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = cli_error(c, "pipe: %s", kc_strerror(-errno));
		goto out_free;
	}
	if ((r = new_client(c, &f->pods_cl)) != CLI_OK || (r = new_client(c, &f->run_cl)) !=
	    CLI_OK)
		goto out_free;

	/* Only the main thread takes SIGINT, and only while it waits. */
	interrupted = 0;
	sa.sa_handler = on_sigint;
	(void)sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGINT, &sa, &old_sa);
	(void)sigemptyset(&block);
	(void)sigaddset(&block, SIGINT);
	(void)sigaddset(&block, SIGPIPE);
	(void)pthread_sigmask(SIG_BLOCK, &block, &old_mask);

	if (start_thread(&pods_th, pods_main, f) == 0)
		pods_started = true;
	if (start_thread(&run_th, run_main, f) == 0)
		run_started = true;
	if (!pods_started || !run_started) {
		r = cli_error(c, "cannot start a thread");
		goto stop;
	}
	for (;;) {
		struct pollfd pfd = { .fd = f->wake[0], .events = POLLIN };
		sigset_t wait_mask = old_mask;
		char drain[64];
		bool done, say_wait = false, catch_up = false;

		if (interrupted)
			break;
		(void)pthread_mutex_lock(&f->mu);
		done = all_done(f);
		if (done && o->follow && !f->caught_up && !f->run_deleted && f->error == 0) {
			/* The Run's end may beat the pods' watch: look at the pods once more. */
			f->caught_up = catch_up = true;
			done = false;
		}
		if (!done && f->pods_listed && f->nstreams == 0 && !f->said_waiting &&
		    !session_over(f->run, f->target)) {
			f->said_waiting = say_wait = true;
		}
		(void)pthread_mutex_unlock(&f->mu);
		if (done)
			break;
		if (catch_up) {
			struct kc_status st = { 0 };

			(void)list_pods(f, c->cl, NULL, 0, &st);
			continue;
		}
		if (say_wait)
			(void)fprintf(stderr, "waiting for the pods of run %s (session %lld) to "
			    "start%s%s%s\n", o->run, (long long)f->target,
			    f->wait_reason[0] != '\0' ? " (" : "", f->wait_reason,
			    f->wait_reason[0] != '\0' ? ")" : "");
		(void)sigdelset(&wait_mask, SIGINT);
		(void)sigaddset(&wait_mask, SIGPIPE);
		if (ppoll(&pfd, 1, NULL, &wait_mask) < 0 && errno != EINTR) {
			r = cli_error(c, "poll: %s", kc_strerror(-errno));
			goto stop;
		}
		if (interrupted)
			break;
		while (read(f->wake[0], drain, sizeof(drain)) > 0)
			;
	}
	r = CLI_OK;
stop:
	(void)pthread_mutex_lock(&f->mu);
	f->stopping = true;
	for (ps = TAILQ_FIRST(&f->streams); ps != NULL; ps = TAILQ_NEXT(ps, link))
		kc_transport_curl.cancel(ps->tp);
	(void)pthread_cond_broadcast(&f->cond);
	(void)pthread_mutex_unlock(&f->mu);
	kc_client_cancel(f->pods_cl);
	kc_client_cancel(f->run_cl);
	if (pods_started)
		(void)pthread_join(pods_th, NULL);
	if (run_started)
		(void)pthread_join(run_th, NULL);
	while ((ps = TAILQ_FIRST(&f->streams)) != NULL) {
		TAILQ_REMOVE(&f->streams, ps, link);
		(void)pthread_join(ps->th, NULL);
		ps->tp = kc_transport_curl.close(ps->tp);
		kc_free(ps);
	}
	(void)pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	(void)sigaction(SIGINT, &old_sa, NULL);
	(void)fflush(stdout);
	if (r != CLI_OK)
		goto out_free;
	if (interrupted) {
		r = CLI_INTERRUPTED;
		goto out_free;
	}
	if (f->error != 0) {
		r = f->error;
		goto out_free;
	}
	if (atomic_load(&f->out_broken)) {
		r = CLI_ERROR;
		goto out_free;
	}
	if (f->run_deleted) {
		(void)fprintf(stderr, "error: run %s was deleted (namespace %s)\n", o->run, c->ns);
		r = CLI_NOT_FOUND;
		goto out_free;
	}
	if (f->nstarted_target == 0 && session_over(f->run, f->target) &&
	    kc_json_int(f->run, 0, "status", "session") == f->target) {
		const char *phase = kc_json_str(f->run, "status", "phase");
		const char *reason = kc_json_str(f->run, "status", "reason");

		if (phase == NULL)
			phase = "ended";
		if (reason == NULL || strcmp(reason, phase) == 0)
			reason = NULL;
		(void)fprintf(stderr, "session %lld of run %s has ended (%s%s%s) and its pods are "
		    "gone%s\n", (long long)f->target, o->run, phase, reason != NULL ? ": " : "",
		    reason != NULL ? reason : "",
		    kc_json_get(f->run, "status", "failedNodes") != NULL ?
		    "; the failure messages it kept:" : "; it kept no failure messages");
		print_failed_nodes(f, f->run);
	} else if (f->nstarted_target == 0 && session_over(f->run, f->target))
		(void)fprintf(stderr, "session %lld of run %s has ended and its pods are gone; the "
		    "Run keeps the failure messages of its last session (%lld) only\n",
		    (long long)f->target, o->run,
		    (long long)kc_json_int(f->run, 0, "status", "session"));
	r = CLI_OK;
out_free:
	if (ret_run != NULL && r != CLI_INTERRUPTED)
		*ret_run = f->run_deleted ? NULL : json_object_get(f->run);
	f->pods_cl = kc_client_free(f->pods_cl);
	f->run_cl = kc_client_free(f->run_cl);
	if (f->wake[0] >= 0)
		(void)close(f->wake[0]);
	if (f->wake[1] >= 0)
		(void)close(f->wake[1]);
	json_object_put(f->run);
	(void)pthread_mutex_destroy(&f->mu);
	(void)pthread_mutex_destroy(&f->out_mu);
	(void)pthread_cond_destroy(&f->cond);
	kc_free(f);
	return r;
}

/* ---- the command ---------------------------------------------------------- */

static const char help[] =
    "Print the logs of every node of a Run, interleaved line by line.\n"
    "\n"
    "Usage: kubectl trainyard logs RUN [--node I | --all] [-f] [--session S] [--since D]\n"
    "                              [--tail N] [--timestamps]\n"
    "\n"
    "Each line starts with its node, \"[node-3]\"; the lines of one node stay in order.\n"
    "Pods that have not started yet are waited for. When the session has ended and\n"
    "its pods are gone, the failure messages the Run kept are printed instead.\n"
    "\n"
    "  --node I        only node I (0 to nodes-1)\n"
    "  --all           every node (the default)\n"
    "  -f, --follow    stream new lines, and the pods of a later session (a restart),\n"
    "                  until the session ends; Ctrl-C stops without touching the Run\n"
    "  --session S     that session's pods (default: the current session)\n"
    "  --since D       only lines newer than D (10m, 1h)\n"
    "  --tail N        the last N lines of each node\n"
    "  --timestamps    prefix each line with its RFC 3339 time\n"
    "\n"
    "Exit codes: 0 done, 4 no such Run (or deleted while following), 5 any other error,\n"
    "130 after Ctrl-C.\n"
    "\n"
    "Examples:\n"
    "  kubectl trainyard logs llama -f\n"
    "  kubectl trainyard logs llama --node 3 --tail 100\n"
    "  kubectl trainyard logs llama --session 2 --timestamps\n";

static int
run(struct cli *c, int argc, char **argv)
{
	struct logs_opts o = { .node = -1, .tail = -1 };
	bool all = false, node_seen = false, tail_seen = false, done;
	int64_t node = 0;
	const struct cli_flag flags[] = {
		{ "node", 0, CLI_FLAG_INT, &node, &node_seen },
		{ "all", 0, CLI_FLAG_BOOL, &all, NULL },
		{ "follow", 'f', CLI_FLAG_BOOL, &o.follow, NULL },
		{ "session", 0, CLI_FLAG_INT, &o.session, NULL },
		{ "since", 0, CLI_FLAG_DURATION, &o.since_ms, NULL },
		{ "tail", 0, CLI_FLAG_INT, &o.tail, &tail_seen },
		{ "timestamps", 0, CLI_FLAG_BOOL, &o.timestamps, NULL },
		{ NULL, 0, 0, NULL, NULL },
	};
	struct json_object *last = NULL;
	int nargs, dd, r;

	if ((r = cli_parse(c, &cli_cmd_logs, flags, argc, argv, &nargs, &dd, &done)) !=
	    CLI_OK || done)
		return r;
	if (nargs != 1)
		return cli_error(c, "logs takes one Run's name; see %s logs --help", c->prog);
	if (node_seen && all)
		return cli_error(c, "--node and --all exclude each other");
	if (!tail_seen)
		o.tail = -1;
	o.node = node_seen ? node : -1;
	o.run = argv[1];
	if ((r = cli_connect(c)) != CLI_OK)
		return r;
	r = logs_follow(c, &o, &last);
	if (r == CLI_OK && o.follow && last != NULL &&
	    phase_ended(kc_json_str(last, "status", "phase")))
		logs_print_end(last, o.run);
	json_object_put(last);
	return r;
}

const struct cli_cmd cli_cmd_logs = {
	.name = "logs",
	.summary = "every node's log of a Run, interleaved; -f follows",
	.help = help,
	.run = run,
};

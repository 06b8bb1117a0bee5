/*
 * dc_bench.c: dc-bench, the devcluster's benchmark client.
 *
 *	dc-bench create|get|list|watch --kubeconfig PATH [options]
 *	dc-bench server --pid PID
 *
 * It is a client of trainyard-devcluster exactly as trainyard-controller
 * will be: libkc's kubeconfig loader, curl transport, REST client and
 * watch decoder, one struct kc_client per thread (a client belongs to
 * one thread; its curl handle keeps its HTTPS connection alive between
 * requests). Each run measures one scenario and prints one line,
 *
 *	bench: scenario=dc-create store=memory clients=16 objects=20000
 *	    seconds=4.1 per_s=4878 p50_ms=3.1 p99_ms=9.8 errors=0 ...
 *
 * (on one line), so `make bench` can grow a scenario at a time and the
 * lines can be compared or grepped. Scenarios:
 *
 *   create  --objects pods created by --clients threads, pod i named
 *           "pod-<i>" in namespace "dc-bench-<i % namespaces>" (the
 *           namespaces are created first, untimed). Latency is per
 *           request: from just before kc_client_create() to its return.
 *   get     --requests GETs of those pods (uniformly random names) from
 *           --clients threads; run it after create with the same
 *           --objects and --namespaces.
 *   list    --reps lists of namespace dc-bench-0, one after another from
 *           one client: unpaged, or with --limit N every page of N items
 *           as an informer lists (kc_client_list_all()); objects= is the
 *           item count, latency is per whole list.
 *   watch   --watchers threads, each its own client watching the pods of
 *           a fresh namespace; once all of them have seen a "sync" pod,
 *           one writer makes --writes writes, one every --interval-ms:
 *           the first half creates pods, the second half merge-patches
 *           them. Every write carries its sequence number in the
 *           annotation dc-bench/seq. Latency is from just BEFORE the
 *           write is sent (so it includes the write's own round trip,
 *           reported apart as write_p50_ms) to the moment a watcher's
 *           callback sees the event, CLOCK_MONOTONIC in one process;
 *           p50/p99 are over all deliveries (writes x watchers). A
 *           watcher counts the first delivery of each sequence number
 *           only; lost= is what never arrived.
 *   server  peak RSS (VmHWM) and CPU seconds of the devcluster process
 *           from /proc/PID/status and /proc/PID/stat.
 *
 * Every scenario but server also reports the benchmark's own CPU time
 * (client_cpu_s), and with --pid the server's CPU time spent during the
 * scenario (server_cpu_s): on a small machine both compete for the same
 * cores, so these say where the time went.
 *
 * --label KEY=VALUE (repeatable) adds fields right after the scenario
 * name, e.g. store=memory. Exit status: 0 when the scenario ran, even
 * with request errors (they are counted in errors=), 1 when it could not
 * run at all, 2 for bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/client.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/kubeconfig.h>
#include <kc/str.h>
#include <kc/transport.h>
#include <kc/watch.h>

#include "bench.h"

#define CLIENTS_MAX	1024
#define WATCHERS_MAX	2048
#define OBJECTS_MAX	10000000u
#define LABELS_MAX	8
#define LINE_MAX_LEN	1024
#define READY_WAIT_S	60
#define DRAIN_WAIT_S	10
#define SEQ_ANNOTATION	"dc-bench/seq"

struct opts {
	const char	*scenario;
	const char	*kubeconfig;
	unsigned	 clients;
	unsigned	 objects;
	unsigned	 namespaces;
	unsigned	 requests;
	unsigned	 watchers;
	unsigned	 writes;
	unsigned	 interval_ms;
	unsigned	 reps;
	unsigned	 limit;
	pid_t		 pid;
	const char	*labels[LABELS_MAX];
	size_t		 nlabels;
};

/* What a scenario measured, for the summary line. */
struct result {
	unsigned	 clients;
	uint64_t	 objects;
	uint64_t	 ops;
	double		 seconds;
	uint64_t	*lat_ns;	/* one latency per operation or delivery */
	size_t		 nlat;
	uint64_t	 errors;
	char		 extra[256];	/* scenario-specific fields */
};

/*
 * The start line of create and get: each worker connects, reports ready
 * and waits for 'go' (1: run, -1: give up), so the clock starts when all
 * connections are open.
 */
struct gate {
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	unsigned	 ready;
	int		 go;
};

/* One request thread of create and get. */
struct worker {
	pthread_t	 tid;
	unsigned	 idx;
	const struct opts *o;
	const struct kc_rest_config *rc;
	struct gate	*gate;
	uint64_t	*lat_ns;
	size_t		 nlat;
	uint64_t	 errors;
	int		 setup_r;
	char		 first_error[KC_STATUS_MESSAGE_MAX + 64];
};

/* The watch scenario's shared state; t_send[i] is 0 until write i is sent. */
struct fanout {
	const struct opts *o;
	char		 ns[64];
	_Atomic uint64_t *t_send;
	atomic_uint	 ready;
	atomic_uint	 done;
};

struct watcher {
	pthread_t	 tid;
	struct fanout	*f;
	struct kc_client *cl;
	bool		 ready;
	uint8_t		*seen;
	uint64_t	*lat_ns;
	size_t		 nlat;
	int		 r;
	char		 error[KC_STATUS_MESSAGE_MAX + 64];
};

static void
print_line(const struct opts *o, struct result *res, double client_cpu, double srv_cpu)
{
	char line[LINE_MAX_LEN];
	size_t i;
	int n;

	bench_sort_u64(res->lat_ns, res->nlat);
	n = snprintf(line, sizeof(line), "bench: scenario=dc-%s", o->scenario);
	for (i = 0; i < o->nlabels && n > 0 && (size_t)n < sizeof(line); i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %s", o->labels[i]);
	if (n > 0 && (size_t)n < sizeof(line))
		n += snprintf(line + n, sizeof(line) - (size_t)n,
		    " clients=%u objects=%" PRIu64 " ops=%" PRIu64 " seconds=%.3f"
		    " per_s=%.0f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f errors=%" PRIu64
		    "%s%s client_cpu_s=%.2f",
		    res->clients, res->objects, res->ops, res->seconds,
		    res->seconds > 0 ? (double)res->ops / res->seconds : 0.0,
		    bench_pct_ms(res->lat_ns, res->nlat, 0.50),
		    bench_pct_ms(res->lat_ns, res->nlat, 0.99),
		    res->nlat > 0 ? (double)res->lat_ns[res->nlat - 1] / 1e6 : 0.0,
		    res->errors, res->extra[0] != '\0' ? " " : "", res->extra,
		    client_cpu);
	if (n > 0 && (size_t)n < sizeof(line) && srv_cpu >= 0)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " server_cpu_s=%.2f",
		    srv_cpu);
	(void)n;
	printf("%s\n", line);
	(void)fflush(stdout);
}

static int
client_open(const struct kc_rest_config *rc, struct kc_client **ret, struct kc_status *st)
{
	return kc_client_new(&(struct kc_client_opts){
		.rc = rc,
		.timeout_ms = 30000,
		.user_agent = "dc-bench/" KC_VERSION,
	}, ret, st);
}

/* Makes sure a namespace exists. */
static int
ensure_namespace(struct kc_client *cl, const char *name, struct kc_status *st)
{
	_cleanup_(kc_json_putp) struct json_object *ns = NULL;
	struct json_object *md;
	int r;

	if ((ns = json_object_new_object()) == NULL ||
	    (md = kc_json_ensure_obj(ns, "metadata")) == NULL ||
	    kc_json_set_str(ns, "apiVersion", "v1") < 0 ||
	    kc_json_set_str(ns, "kind", "Namespace") < 0 ||
	    kc_json_set_str(md, "name", name) < 0)
		return -ENOMEM;
	r = kc_client_create(cl, &(struct kc_create_opts){ .res = &kc_res_namespaces },
	    ns, NULL, st);
	return r == KC_EEXISTS ? 0 : r;
}

/*
 * A minimal but realistic pod: one container with an image, a command,
 * resource requests and limits, a label and restartPolicy Never, as a
 * training worker's pod would look before the controller adds its own.
 */
static struct json_object *
pod_new(void)
{
	static const char text[] =
	    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"name\":\"x\",\"labels\":{\"app\":\"dc-bench\","
	    "\"trainyard.dev/run\":\"bench\"}},"
	    "\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\","
	    "\"image\":\"busybox:1.36\",\"command\":[\"sleep\",\"3600\"],"
	    "\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"64Mi\"},"
	    "\"limits\":{\"cpu\":\"1\",\"memory\":\"128Mi\"}}}]}}";

	return json_tokener_parse(text);
}

/* Reports ready and waits for the start; true to run. */
static bool
gate_pass(struct gate *g)
{
	int go;

	(void)pthread_mutex_lock(&g->mu);
	g->ready++;
	(void)pthread_cond_broadcast(&g->cv);
	while (g->go == 0)
		(void)pthread_cond_wait(&g->cv, &g->mu);
	go = g->go;
	(void)pthread_mutex_unlock(&g->mu);
	return go > 0;
}

static void
gate_open(struct gate *g, int go)
{
	(void)pthread_mutex_lock(&g->mu);
	g->go = go;
	(void)pthread_cond_broadcast(&g->cv);
	(void)pthread_mutex_unlock(&g->mu);
}

static void
gate_wait_ready(struct gate *g, unsigned n)
{
	(void)pthread_mutex_lock(&g->mu);
	while (g->ready < n)
		(void)pthread_cond_wait(&g->cv, &g->mu);
	(void)pthread_mutex_unlock(&g->mu);
}

static void
worker_fail(struct worker *w, int r, const struct kc_status *st)
{
	w->errors++;
	if (w->first_error[0] == '\0')
		(void)snprintf(w->first_error, sizeof(w->first_error), "%s: %s",
		    kc_strerror(r), st->message);
}

/* Opens the worker's client and its connection (outside the timing). */
static int
worker_setup(struct worker *w, struct kc_client **ret)
{
	_cleanup_(kc_json_putp) struct json_object *v = NULL;
	struct kc_status st = { 0 };
	int r;

	if ((r = client_open(w->rc, ret, &st)) < 0 ||
	    (r = kc_client_get_path(*ret, "/version", &v, &st)) < 0)
		worker_fail(w, r, &st);
	return r;
}

static void *
create_main(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	_cleanup_(kc_client_freep) struct kc_client *cl = NULL;
	_cleanup_(kc_json_putp) struct json_object *pod = NULL;
	struct json_object *md = NULL;
	struct kc_status st = { 0 };
	char name[64], ns[64];
	unsigned i;
	uint64_t t0;
	int r;

	w->setup_r = worker_setup(w, &cl);
	if (w->setup_r == 0 && ((pod = pod_new()) == NULL ||
	    (md = kc_json_obj_of(pod, "metadata")) == NULL))
		w->setup_r = -ENOMEM;
	if (!gate_pass(w->gate) || w->setup_r < 0)
		return NULL;
	for (i = w->idx; i < o->objects; i += o->clients) {
		(void)snprintf(name, sizeof(name), "pod-%u", i);
		(void)snprintf(ns, sizeof(ns), "dc-bench-%u", i % o->namespaces);
		if (kc_json_set_str(md, "name", name) < 0 ||
		    kc_json_set_str(md, "namespace", ns) < 0) {
			worker_fail(w, -ENOMEM, &st);
			break;
		}
		t0 = bench_now_ns();
		r = kc_client_create(cl, &(struct kc_create_opts){ .res = &kc_res_pods },
		    pod, NULL, &st);
		w->lat_ns[w->nlat++] = bench_now_ns() - t0;
		if (r < 0)
			worker_fail(w, r, &st);
	}
	return NULL;
}

static uint64_t
xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *
get_main(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	_cleanup_(kc_client_freep) struct kc_client *cl = NULL;
	struct kc_status st = { 0 };
	char name[64], ns[64];
	uint64_t seed = 0x9e3779b97f4a7c15ull * (w->idx + 1), t0;
	unsigned i, k;
	int r;

	w->setup_r = worker_setup(w, &cl);
	if (!gate_pass(w->gate) || w->setup_r < 0)
		return NULL;
	for (k = w->idx; k < o->requests; k += o->clients) {
		struct json_object *pod = NULL;

		i = (unsigned)(xorshift(&seed) % o->objects);
		(void)snprintf(name, sizeof(name), "pod-%u", i);
		(void)snprintf(ns, sizeof(ns), "dc-bench-%u", i % o->namespaces);
		t0 = bench_now_ns();
		r = kc_client_get(cl, &(struct kc_get_opts){
			.res = &kc_res_pods,
			.ns = ns,
			.name = name,
		}, &pod, &st);
		w->lat_ns[w->nlat++] = bench_now_ns() - t0;
		if (r < 0)
			worker_fail(w, r, &st);
		json_object_put(pod);
	}
	return NULL;
}

/*
 * create and get: --clients threads, each with its own client and
 * connection, released together once all are connected.
 */
static int
run_workers(const struct opts *o, const struct kc_rest_config *rc, void *(*fn)(void *),
    unsigned total, struct result *res)
{
	_cleanup_(kc_freep) struct worker *ws = NULL;
	struct gate gate = {
		.mu = PTHREAD_MUTEX_INITIALIZER,
		.cv = PTHREAD_COND_INITIALIZER,
	};
	uint64_t t0;
	unsigned i, started = 0;
	size_t n;
	int r = 0;

	if ((ws = kc_calloc(o->clients, sizeof(*ws))) == NULL ||
	    (res->lat_ns = kc_calloc(total, sizeof(uint64_t))) == NULL)
		return -ENOMEM;
	for (i = 0, n = 0; i < o->clients; i++) {
		ws[i].idx = i;
		ws[i].o = o;
		ws[i].rc = rc;
		ws[i].gate = &gate;
		ws[i].lat_ns = res->lat_ns + n;
		n += (total + o->clients - 1 - i) / o->clients;
	}
	for (i = 0; i < o->clients; i++) {
		if ((r = -pthread_create(&ws[i].tid, NULL, fn, &ws[i])) < 0) {
			fprintf(stderr, "dc-bench: pthread_create: %s\n", strerrordesc_np(-r));
			break;
		}
		started++;
	}
	gate_wait_ready(&gate, started);
	t0 = bench_now_ns();
	gate_open(&gate, started == o->clients ? 1 : -1);
	for (i = 0; i < started; i++)
		(void)pthread_join(ws[i].tid, NULL);
	res->seconds = (double)(bench_now_ns() - t0) / 1e9;
	if (started < o->clients)
		return r;

	res->clients = o->clients;
	res->nlat = 0;
	for (i = 0; i < o->clients; i++) {
		/* Compact: each worker filled the head of its slice. */
		if (ws[i].nlat > 0)
			memmove(res->lat_ns + res->nlat, ws[i].lat_ns,
			    ws[i].nlat * sizeof(uint64_t));
		res->nlat += ws[i].nlat;
		res->ops += ws[i].nlat;
		res->errors += ws[i].errors;
		if (ws[i].first_error[0] != '\0')
			fprintf(stderr, "dc-bench: %s: client %u: %" PRIu64 " errors, first: %s\n",
			    o->scenario, i, ws[i].errors, ws[i].first_error);
		if (ws[i].setup_r < 0)
			r = ws[i].setup_r;
	}
	return r;
}

static int
scenario_create(const struct opts *o, const struct kc_rest_config *rc, struct result *res)
{
	_cleanup_(kc_client_freep) struct kc_client *cl = NULL;
	struct kc_status st = { 0 };
	char ns[64];
	unsigned i;
	int r;

	if ((r = client_open(rc, &cl, &st)) < 0)
		goto fail;
	for (i = 0; i < o->namespaces; i++) {
		(void)snprintf(ns, sizeof(ns), "dc-bench-%u", i);
		if ((r = ensure_namespace(cl, ns, &st)) < 0)
			goto fail;
	}
	res->objects = o->objects;
	(void)snprintf(res->extra, sizeof(res->extra), "namespaces=%u", o->namespaces);
	return run_workers(o, rc, create_main, o->objects, res);
fail:
	fprintf(stderr, "dc-bench: create: namespaces: %s: %s\n", kc_strerror(r), st.message);
	return r;
}

static int
scenario_get(const struct opts *o, const struct kc_rest_config *rc, struct result *res)
{
	res->objects = o->objects;
	return run_workers(o, rc, get_main, o->requests, res);
}

static int
scenario_list(const struct opts *o, const struct kc_rest_config *rc, struct result *res)
{
	_cleanup_(kc_client_freep) struct kc_client *cl = NULL;
	struct kc_status st = { 0 };
	uint64_t t0, start;
	size_t items = 0;
	unsigned i;
	int r;

	if ((res->lat_ns = kc_calloc(o->reps, sizeof(uint64_t))) == NULL)
		return -ENOMEM;
	if ((r = client_open(rc, &cl, &st)) < 0) {
		fprintf(stderr, "dc-bench: list: %s: %s\n", kc_strerror(r), st.message);
		return r;
	}
	res->clients = 1;
	start = bench_now_ns();
	for (i = 0; i < o->reps; i++) {
		struct json_object *list = NULL, *arr;

		t0 = bench_now_ns();
		if (o->limit == 0)
			r = kc_client_list(cl, &(struct kc_list_opts){
				.res = &kc_res_pods,
				.ns = "dc-bench-0",
			}, &list, &st);
		else
			r = kc_client_list_all(cl, &(struct kc_list_opts){
				.res = &kc_res_pods,
				.ns = "dc-bench-0",
				.limit = o->limit,
			}, &list, &st);
		res->lat_ns[res->nlat++] = bench_now_ns() - t0;
		res->ops++;
		if (r < 0) {
			if (res->errors++ == 0)
				fprintf(stderr, "dc-bench: list: %s: %s\n", kc_strerror(r),
				    st.message);
			continue;
		}
		if ((arr = kc_json_arr_of(list, "items")) != NULL)
			items = json_object_array_length(arr);
		json_object_put(list);
	}
	res->seconds = (double)(bench_now_ns() - start) / 1e9;
	res->objects = items;
	(void)snprintf(res->extra, sizeof(res->extra), "limit=%u", o->limit);
	return 0;
}

/*
 * The watch callback: the first delivery of each sequence number counts;
 * the "sync" pod marks the watcher ready. Stops once all writes arrived.
 */
static int
on_watch_event(void *arg, enum kc_watch_type type, struct json_object *obj)
{
	struct watcher *w = arg;
	struct fanout *f = w->f;
	const char *name, *seq;
	uint64_t now = bench_now_ns(), k, sent;

	if (type == KC_WATCH_BOOKMARK || type == KC_WATCH_DELETED)
		return 0;
	if ((name = kc_json_str(obj, "metadata", "name")) == NULL)
		return 0;
	if (strcmp(name, "sync") == 0) {
		if (!w->ready) {
			w->ready = true;
			atomic_fetch_add(&f->ready, 1);
		}
		return 0;
	}
	if ((seq = kc_json_str(obj, "metadata", "annotations", SEQ_ANNOTATION)) == NULL ||
	    kc_parse_u64(seq, &k) < 0 || k >= f->o->writes || w->seen[k])
		return 0;
	if ((sent = atomic_load_explicit(&f->t_send[k], memory_order_acquire)) == 0)
		return 0;
	w->seen[k] = 1;
	w->lat_ns[w->nlat++] = now > sent ? now - sent : 0;
	return w->nlat == f->o->writes ? KC_WATCH_STOP : 0;
}

static void *
watcher_main(void *arg)
{
	struct watcher *w = arg;
	struct kc_status st = { 0 };

	w->r = kc_watch_run(w->cl, &(struct kc_watch_opts){
		.res = &kc_res_pods,
		.ns = w->f->ns,
	}, on_watch_event, w, NULL, &st);
	if (w->r < 0 && w->r != -ECANCELED)
		(void)snprintf(w->error, sizeof(w->error), "%s: %s", kc_strerror(w->r),
		    st.message);
	atomic_fetch_add(&w->f->done, 1);
	return NULL;
}

static int
watch_write(struct kc_client *cl, const struct fanout *f, struct json_object *pod,
    unsigned k, struct kc_status *st)
{
	const struct opts *o = f->o;
	unsigned creates = o->writes / 2 + o->writes % 2;
	char name[32], seq[32];
	struct json_object *ann;

	(void)snprintf(seq, sizeof(seq), "%u", k);
	(void)snprintf(name, sizeof(name), "w-%u", k < creates ? k : k - creates);
	if (k < creates) {
		if (kc_json_set_str(kc_json_obj_of(pod, "metadata"), "name", name) < 0 ||
		    (ann = kc_json_ensure_obj(kc_json_obj_of(pod, "metadata"),
		    "annotations")) == NULL || kc_json_set_str(ann, SEQ_ANNOTATION, seq) < 0)
			return -ENOMEM;
		atomic_store_explicit(&f->t_send[k], bench_now_ns(), memory_order_release);
		return kc_client_create(cl, &(struct kc_create_opts){
			.res = &kc_res_pods,
			.ns = f->ns,
		}, pod, NULL, st);
	} else {
		_cleanup_(kc_json_putp) struct json_object *patch = json_object_new_object();

		if (patch == NULL ||
		    (ann = kc_json_ensure_obj(kc_json_ensure_obj(patch, "metadata"),
		    "annotations")) == NULL || kc_json_set_str(ann, SEQ_ANNOTATION, seq) < 0)
			return -ENOMEM;
		atomic_store_explicit(&f->t_send[k], bench_now_ns(), memory_order_release);
		return kc_client_patch(cl, &(struct kc_patch_opts){
			.res = &kc_res_pods,
			.ns = f->ns,
			.name = name,
			.type = KC_PATCH_MERGE,
		}, patch, NULL, st);
	}
}

static void
sleep_until_ns(uint64_t t)
{
	struct timespec ts = {
		.tv_sec = (time_t)(t / 1000000000u),
		.tv_nsec = (long)(t % 1000000000u),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Waits until *counter reaches 'want' or 'secs' pass; true when reached. */
static bool
wait_count(atomic_uint *counter, unsigned want, unsigned secs)
{
	uint64_t deadline = bench_now_ns() + (uint64_t)secs * 1000000000u;

	while (atomic_load(counter) < want) {
		if (bench_now_ns() > deadline)
			return false;
		sleep_until_ns(bench_now_ns() + 1000000);
	}
	return true;
}

static int
watch_writes(struct fanout *f, struct kc_client *cl, struct result *res,
    uint64_t *write_lat)
{
	const struct opts *o = f->o;
	_cleanup_(kc_json_putp) struct json_object *pod = NULL;
	struct kc_status st = { 0 };
	uint64_t next, t0;
	unsigned k;
	int r;

	if ((pod = pod_new()) == NULL)
		return -ENOMEM;
	if ((r = kc_json_set_str(kc_json_obj_of(pod, "metadata"), "name", "sync")) < 0 ||
	    (r = kc_client_create(cl, &(struct kc_create_opts){
		.res = &kc_res_pods,
		.ns = f->ns,
	    }, pod, NULL, &st)) < 0) {
		fprintf(stderr, "dc-bench: watch: sync pod: %s: %s\n", kc_strerror(r),
		    st.message);
		return r;
	}
	if (!wait_count(&f->ready, o->watchers, READY_WAIT_S)) {
		fprintf(stderr, "dc-bench: watch: only %u of %u watchers ready\n",
		    atomic_load(&f->ready), o->watchers);
		return -ETIMEDOUT;
	}
	next = bench_now_ns();
	for (k = 0; k < o->writes; k++) {
		sleep_until_ns(next);
		next += (uint64_t)o->interval_ms * 1000000u;
		t0 = bench_now_ns();
		r = watch_write(cl, f, pod, k, &st);
		write_lat[k] = bench_now_ns() - t0;
		if (r < 0 && res->errors++ == 0)
			fprintf(stderr, "dc-bench: watch: write %u: %s: %s\n", k,
			    kc_strerror(r), st.message);
	}
	return 0;
}

static int
scenario_watch(const struct opts *o, const struct kc_rest_config *rc, struct result *res)
{
	_cleanup_(kc_client_freep) struct kc_client *cl = NULL;
	_cleanup_(kc_freep) struct watcher *ws = NULL;
	_cleanup_(kc_freep) uint64_t *write_lat = NULL;
	struct fanout f = { .o = o };
	struct kc_status st = { 0 };
	uint64_t t0, lost = 0;
	unsigned i, started = 0;
	int r;

	(void)snprintf(f.ns, sizeof(f.ns), "dc-bench-watch-%ld", (long)getpid());
	if ((ws = kc_calloc(o->watchers, sizeof(*ws))) == NULL ||
	    (write_lat = kc_calloc(o->writes, sizeof(uint64_t))) == NULL ||
	    (f.t_send = kc_calloc(o->writes, sizeof(*f.t_send))) == NULL ||
	    (res->lat_ns = kc_calloc((size_t)o->writes * o->watchers,
	    sizeof(uint64_t))) == NULL)
		return -ENOMEM;
	if ((r = client_open(rc, &cl, &st)) < 0 ||
	    (r = ensure_namespace(cl, f.ns, &st)) < 0) {
		fprintf(stderr, "dc-bench: watch: %s: %s\n", kc_strerror(r), st.message);
		goto out;
	}
	for (i = 0; i < o->watchers; i++) {
		ws[i].f = &f;
		ws[i].lat_ns = res->lat_ns + (size_t)i * o->writes;
		if ((ws[i].seen = kc_calloc(o->writes, 1)) == NULL) {
			r = -ENOMEM;
			goto out;
		}
		if ((r = client_open(rc, &ws[i].cl, &st)) < 0) {
			fprintf(stderr, "dc-bench: watch: %s: %s\n", kc_strerror(r), st.message);
			goto out;
		}
	}
	for (i = 0; i < o->watchers; i++) {
		if ((r = -pthread_create(&ws[i].tid, NULL, watcher_main, &ws[i])) < 0) {
			fprintf(stderr, "dc-bench: pthread_create: %s\n", strerrordesc_np(-r));
			goto out;
		}
		started++;
	}
	t0 = bench_now_ns();
	r = watch_writes(&f, cl, res, write_lat);
	if (r == 0 && !wait_count(&f.done, o->watchers, DRAIN_WAIT_S))
		fprintf(stderr, "dc-bench: watch: %u of %u watchers still short of events\n",
		    o->watchers - atomic_load(&f.done), o->watchers);
	res->seconds = (double)(bench_now_ns() - t0) / 1e9;
out:
	for (i = 0; i < started; i++)
		kc_watch_cancel(ws[i].cl);
	for (i = 0; i < started; i++)
		(void)pthread_join(ws[i].tid, NULL);
	res->clients = o->watchers;
	res->objects = o->writes / 2 + o->writes % 2;
	res->ops = (uint64_t)o->writes * o->watchers;
	for (i = 0; i < o->watchers; i++) {
		/* Compact into one array of deliveries. */
		if (ws[i].nlat > 0)
			memmove(res->lat_ns + res->nlat, ws[i].lat_ns,
			    ws[i].nlat * sizeof(uint64_t));
		res->nlat += ws[i].nlat;
		lost += o->writes - ws[i].nlat;
		if (ws[i].error[0] != '\0') {
			res->errors++;
			fprintf(stderr, "dc-bench: watch: watcher %u: %s\n", i, ws[i].error);
		}
		ws[i].cl = kc_client_free(ws[i].cl);
		ws[i].seen = kc_free(ws[i].seen);
	}
	f.t_send = kc_free(f.t_send);
	if (r == 0) {
		bench_sort_u64(write_lat, o->writes);
		(void)snprintf(res->extra, sizeof(res->extra),
		    "watchers=%u writes=%u interval_ms=%u deliveries=%zu lost=%" PRIu64
		    " write_p50_ms=%.3f", o->watchers, o->writes, o->interval_ms, res->nlat,
		    lost, bench_pct_ms(write_lat, o->writes, 0.5));
		/* Deliveries per second of the whole run, not of one write. */
		res->ops = res->nlat;
	}
	return r;
}

static int
scenario_server(const struct opts *o)
{
	char line[LINE_MAX_LEN];
	uint64_t hwm, rss;
	double u, s;
	size_t i;
	int n, r;

	if ((r = bench_proc_status_kb(o->pid, "VmHWM", &hwm)) < 0 ||
	    (r = bench_proc_status_kb(o->pid, "VmRSS", &rss)) < 0 ||
	    (r = bench_proc_cpu(o->pid, &u, &s)) < 0) {
		fprintf(stderr, "dc-bench: server: /proc/%d: %s\n", (int)o->pid,
		    kc_strerror(r));
		return r;
	}
	n = snprintf(line, sizeof(line), "bench: scenario=dc-server");
	for (i = 0; i < o->nlabels && n > 0 && (size_t)n < sizeof(line); i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %s", o->labels[i]);
	if (n > 0 && (size_t)n < sizeof(line))
		(void)snprintf(line + n, sizeof(line) - (size_t)n,
		    " pid=%d rss_peak_mb=%.1f rss_mb=%.1f cpu_s=%.2f user_s=%.2f sys_s=%.2f",
		    (int)o->pid, (double)hwm / 1024, (double)rss / 1024, u + s, u, s);
	printf("%s\n", line);
	(void)fflush(stdout);
	return 0;
}

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: dc-bench create|get|list|watch --kubeconfig PATH [--clients N]\n"
	    "                [--objects N] [--namespaces N] [--requests N] [--reps N]\n"
	    "                [--limit N] [--watchers N] [--writes N] [--interval-ms N]\n"
	    "                [--pid PID] [--label KEY=VALUE]...\n"
	    "       dc-bench server --pid PID [--label KEY=VALUE]...\n");
}

/* A numeric flag: getopt value, name, bounds and where the value goes. */
struct count_flag {
	int		 val;
	const char	*name;
	unsigned	 lo, hi;
	unsigned	*dst;
};

/* 0, 1 for --help, or -EINVAL (the reason is on stderr). */
static int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "kubeconfig",	 required_argument, NULL, 'k' },
		{ "clients",	 required_argument, NULL, 'c' },
		{ "objects",	 required_argument, NULL, 'o' },
		{ "namespaces",	 required_argument, NULL, 'n' },
		{ "requests",	 required_argument, NULL, 'r' },
		{ "reps",	 required_argument, NULL, 'R' },
		{ "limit",	 required_argument, NULL, 'L' },
		{ "watchers",	 required_argument, NULL, 'w' },
		{ "writes",	 required_argument, NULL, 'W' },
		{ "interval-ms", required_argument, NULL, 'i' },
		{ "pid",	 required_argument, NULL, 'p' },
		{ "label",	 required_argument, NULL, 'l' },
		{ "help",	 no_argument,	    NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct count_flag counts[] = {
		{ 'c', "--clients", 1, CLIENTS_MAX, &o->clients },
		{ 'o', "--objects", 1, OBJECTS_MAX, &o->objects },
		{ 'n', "--namespaces", 1, 1000, &o->namespaces },
		{ 'r', "--requests", 1, OBJECTS_MAX, &o->requests },
		{ 'R', "--reps", 1, 100000, &o->reps },
		{ 'L', "--limit", 0, 100000, &o->limit },
		{ 'w', "--watchers", 1, WATCHERS_MAX, &o->watchers },
		{ 'W', "--writes", 1, 1000000, &o->writes },
		{ 'i', "--interval-ms", 0, 60000, &o->interval_ms },
	};
	unsigned pid;
	size_t i;
	int c, r = 0;

	*o = (struct opts){
		.clients = 16, .objects = 20000, .namespaces = 2, .requests = 40000,
		.watchers = 100, .writes = 400, .interval_ms = 10, .reps = 10,
	};
	while (r == 0 && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		for (i = 0; i < KC_ARRAY_SIZE(counts); i++)
			if (counts[i].val == c)
				break;
		if (i < KC_ARRAY_SIZE(counts)) {
			r = bench_parse_count("dc-bench", counts[i].name, optarg, counts[i].lo, counts[i].hi,
			    counts[i].dst);
			continue;
		}
		switch (c) {
		case 'k':
			o->kubeconfig = optarg;
			break;
		case 'p':
			if ((r = bench_parse_count("dc-bench", "--pid", optarg, 1, INT32_MAX, &pid)) == 0)
				o->pid = (pid_t)pid;
			break;
		case 'l':
			if (o->nlabels == LABELS_MAX || strchr(optarg, '=') == NULL ||
			    strpbrk(optarg, " \t\n") != NULL) {
				fprintf(stderr, "dc-bench: --label: at most %d KEY=VALUE "
				    "without spaces\n", LABELS_MAX);
				r = -EINVAL;
			} else
				o->labels[o->nlabels++] = optarg;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			r = -EINVAL;
			break;
		}
	}
	if (r == 0 && optind + 1 != argc) {
		fprintf(stderr, "dc-bench: one scenario expected\n");
		r = -EINVAL;
	}
	if (r < 0) {
		usage(stderr);
		return r;
	}
	o->scenario = argv[optind];
	if (strcmp(o->scenario, "server") == 0 && o->pid == 0) {
		fprintf(stderr, "dc-bench: server needs --pid\n");
		return -EINVAL;
	}
	if (strcmp(o->scenario, "server") != 0 && o->kubeconfig == NULL) {
		fprintf(stderr, "dc-bench: %s needs --kubeconfig\n", o->scenario);
		return -EINVAL;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	_cleanup_(kc_rest_config_freep) struct kc_rest_config *rc = NULL;
	struct result res = { 0 };
	struct kc_status st = { 0 };
	struct opts o;
	double cpu0, srv0, srv1;
	int r;

	if ((r = parse_opts(argc, argv, &o)) != 0)
		return r < 0 ? 2 : 0;
	if (strcmp(o.scenario, "server") == 0)
		return scenario_server(&o) < 0 ? 1 : 0;
	if ((r = kc_transport_global_init()) < 0) {
		fprintf(stderr, "dc-bench: curl: %s\n", kc_strerror(r));
		return 1;
	}
	if ((r = kc_kubeconfig_load(&(struct kc_kubeconfig_opts){
		.paths = (const char *const[]){ o.kubeconfig },
		.npaths = 1,
	}, &rc, &st)) < 0) {
		fprintf(stderr, "dc-bench: %s\n", st.message);
		goto out;
	}
	cpu0 = bench_cpu_self_s();
	srv0 = bench_proc_cpu_s(o.pid);
	if (strcmp(o.scenario, "create") == 0)
		r = scenario_create(&o, rc, &res);
	else if (strcmp(o.scenario, "get") == 0)
		r = scenario_get(&o, rc, &res);
	else if (strcmp(o.scenario, "list") == 0)
		r = scenario_list(&o, rc, &res);
	else if (strcmp(o.scenario, "watch") == 0)
		r = scenario_watch(&o, rc, &res);
	else {
		fprintf(stderr, "dc-bench: unknown scenario \"%s\"\n", o.scenario);
		usage(stderr);
		r = -EINVAL;
	}
	if (r == 0) {
		srv1 = bench_proc_cpu_s(o.pid);
		print_line(&o, &res, bench_cpu_self_s() - cpu0, srv0 >= 0 && srv1 >= 0 ?
		    srv1 - srv0 : -1);
	}
out:
	res.lat_ns = kc_free(res.lat_ns);
	kc_transport_global_cleanup();
	return r < 0 ? 1 : 0;
}

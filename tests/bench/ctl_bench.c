/*
 * ctl_bench.c: ctl-bench, the load generator of the controller's benchmark.
 *
 *	ctl-bench --kubeconfig PATH --runs R --nodes N --pid CONTROLLER_PID
 *	    [--server-pid PID] [--clients C] [--namespace NS] [--profile NAME]
 *	    [--prefix P] [--timeout S] [--settle-ms MS] [--keep]
 *	    [--label KEY=VALUE]...
 *
 * One scenario per run, against a devcluster and a trainyard-controller
 * that tests/bench/ctl-bench.sh started: --clients threads, each with its
 * own libkc client and keep-alive connection, create R Runs of N nodes
 * ("<prefix><i>" in --namespace, profile --profile) as fast as they can;
 * then the Runs are deleted again. It prints one line,
 *
 *	bench: scenario=ctl-session runs=1000 nodes=8 pods=8000 create_s=...
 *	    pods_per_s=... api_calls_per_run=... api_writes_per_run=...
 *	    controller_cpu_s=... controller_peak_rss_kb=...
 *	    rss_per_cached_pod_b=... cleanup_s=... (and more fields)
 *
 * (on one line). The phases and what is measured:
 *
 *   create   from just before the first Run is sent until every pod of
 *            every Run exists: create_s (the wall clock), pods_per_s,
 *            submit_s (how long the Run creates themselves took).
 *   running  until every Run reports phase Running (all its pods run:
 *            running_s) and then the controller made no API write for
 *            --settle-ms: the session has started and the caches hold
 *            every pod. The API figures are the devcluster's request
 *            counters (GET /devcluster/stats) from before the first
 *            create to this point, less this program's own requests
 *            (its Run creates and its polls): api_calls_per_run,
 *            api_writes_per_run (create/update/patch/delete), split
 *            into w_pods, w_children (PodGroup, Service,
 *            NetworkPolicy), w_status (Run status), w_events and
 *            w_other per Run, and conflicts (409s). The controller's
 *            CPU (controller_cpu_s; controller_cpu_create_s until the
 *            create phase ended) and memory (VmHWM, and VmRSS at the
 *            end less VmRSS before the first create, per pod) come from
 *            /proc/PID.
 *   cleanup  from just before the first Run delete until no pod is left
 *            in the namespace: cleanup_s, cleanup_writes_per_run (the
 *            controller's writes in that phase). --keep skips it and
 *            leaves the Runs (cleanup_s=0), for a look at the controller
 *            with everything cached.
 *
 * Counting pods is cheap on purpose (no watch that would parse every pod
 * event next to the controller on a small machine): the namespace holds
 * only the benchmark's pods, and a list with limit=1 answers with
 * remainingItemCount, so items + remainingItemCount is the count. Runs
 * are listed in pages of 500 once per poll in the running phase.
 *
 * Exit status: 0 when every phase completed, 1 when one timed out or the
 * scenario could not run (the line is printed with what was measured and
 * complete=no), 2 for bad usage.
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
#include <sys/types.h>
#include <unistd.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/client.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/kubeconfig.h>
#include <kc/str.h>
#include <kc/transport.h>

#include "bench.h"

#define CLIENTS_MAX	256
#define LABELS_MAX	8
#define LINE_MAX_LEN	2048
#define POLL_MS		20
#define RUNS_POLL_MS	250
#define STATS_POLL_MS	250

static const struct kc_resource res_runs = {
	.group = "trainyard.dev", .version = "v1beta1", .resource = "runs",
	.kind = "Run", .namespaced = true,
};

struct opts {
	const char	*kubeconfig;
	unsigned	 runs;
	unsigned	 nodes;
	unsigned	 clients;
	unsigned	 timeout_s;
	unsigned	 settle_ms;
	bool		 keep;		/* --keep: no cleanup phase */
	pid_t		 pid;
	pid_t		 server_pid;
	const char	*ns;
	const char	*profile;
	const char	*prefix;
	const char	*labels[LABELS_MAX];
	size_t		 nlabels;
};

/* The controller's writes by kind (struct bench_stats' w[]). */
enum { W_PODS, W_CHILDREN, W_STATUS, W_EVENTS, W_OTHER };

/* One Run create or delete thread. */
struct worker {
	struct bench_worker b;
	bool		 del;
	const struct opts *o;
	const struct kc_rest_config *rc;
};

/* What the phases measured. */
struct result {
	double		 create_s, submit_s, running_s, cleanup_s;
	double		 cpu_create_s, cpu_s, server_cpu_s, cleanup_cpu_s;
	uint64_t	 hwm_kb, rss0_kb, rss1_kb;
	struct bench_stats start;	/* controller's share, start to settled */
	struct bench_stats cleanup;	/* controller's share during the cleanup */
	uint64_t	 own_lists_start, own_lists_cleanup;
	uint64_t	 create_errors, delete_errors;
	const char	*timed_out;	/* the phase that did not finish, or NULL */
};

static double
secs(uint64_t a, uint64_t b)
{
	return b > a ? (double)(b - a) / 1e9 : 0;
}

/* A "Key:   123 kB" line of /proc/PID/status, in kB; 0 when unreadable. */
static uint64_t
proc_status_kb(pid_t pid, const char *key)
{
	uint64_t v;

	return bench_proc_status_kb(pid, key, &v) < 0 ? 0 : v;
}

static int
client_open(const struct kc_rest_config *rc, struct kc_client **ret, struct kc_status *st)
{
	return bench_client_open(rc, "ctl-bench", ret, st);
}

static bool
has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

/* The kind of a write: our Run creates and deletes, or the controller's. */
static int
write_kind(const char *verb, const char *res)
{
	if (strcmp(res, "runs.trainyard.dev") == 0 &&
	    (strcmp(verb, "create") == 0 || strcmp(verb, "delete") == 0))
		return BENCH_OWN;
	if (strcmp(res, "pods") == 0)
		return W_PODS;
	if (has_prefix(res, "runs.trainyard.dev"))
		return W_STATUS;
	if (strcmp(res, "events") == 0 || strcmp(res, "events.events.k8s.io") == 0)
		return W_EVENTS;
	if (strcmp(res, "services") == 0 ||
	    strcmp(res, "networkpolicies.networking.k8s.io") == 0 ||
	    has_prefix(res, "podgroups."))
		return W_CHILDREN;
	return W_OTHER;
}

static const struct bench_counter counter = { .prog = "ctl-bench", .kind = write_kind };

static int
stats_get(struct kc_client *cl, struct bench_stats *ret)
{
	return bench_stats_get(cl, &counter, ret);
}

/* Pods in the namespace, counting the request in *lists. */
static int
count_pods(struct kc_client *cl, const char *ns, uint64_t *ret, atomic_uint_fast64_t *lists)
{
	atomic_fetch_add(lists, 1);
	return bench_count(cl, &kc_res_pods, ns, "ctl-bench", ret);
}

static void
running_add(void *arg, const struct json_object *run)
{
	const char *ph = kc_json_str(run, "status", "phase");

	*(uint64_t *)arg += ph != NULL && strcmp(ph, "Running") == 0;
}

/* Runs of the namespace whose status.phase is Running (pages of 500). */
static int
count_running(struct kc_client *cl, const char *ns, uint64_t *ret,
    atomic_uint_fast64_t *lists)
{
	uint64_t n = 0, nl = 0;
	int r;

	r = bench_list_each(cl, &(struct kc_list_opts){ .res = &res_runs, .ns = ns },
	    "ctl-bench", running_add, &n, &nl);
	atomic_fetch_add(lists, nl);
	if (r == 0)
		*ret = n;
	return r;
}

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

/* A Run of o->nodes nodes whose containers run until they are deleted. */
static struct json_object *
run_new(const struct opts *o)
{
	struct json_object *run = json_tokener_parse(
	    "{\"apiVersion\":\"trainyard.dev/v1beta1\",\"kind\":\"Run\","
	    "\"metadata\":{\"name\":\"x\",\"labels\":{\"app\":\"ctl-bench\"}},"
	    "\"spec\":{\"container\":{\"image\":\"busybox:1.36\","
	    "\"command\":[\"sleep\",\"infinity\"]}}}");
	struct json_object *spec = kc_json_obj_of(run, "spec");

	if (run == NULL || spec == NULL ||
	    kc_json_set_int(spec, "nodes", o->nodes) < 0 ||
	    kc_json_set_str(spec, "profile", o->profile) < 0) {
		json_object_put(run);
		return NULL;
	}
	return run;
}

/* Creates (or deletes) Runs idx, idx + clients, ... once the barrier opens. */
static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	const struct opts *o = w->o;
	_cleanup_(kc_client_freep) struct kc_client *cl = NULL;
	_cleanup_(kc_json_putp) struct json_object *run = NULL, *v = NULL;
	struct kc_status st = { 0 };
	struct json_object *md;
	char name[64];
	int r;

	if ((r = client_open(w->rc, &cl, &st)) < 0 ||
	    (r = kc_client_get_path(cl, "/version", &v, &st)) < 0)
		bench_fail(&w->b.fails, r, "connect", &st);
	else if (!w->del && ((run = run_new(o)) == NULL ||
	    (md = kc_json_obj_of(run, "metadata")) == NULL ||
	    kc_json_set_str(md, "namespace", o->ns) < 0))
		bench_fail(&w->b.fails, -ENOMEM, "run", &st);
	(void)pthread_barrier_wait(w->b.start);
	if (w->b.fails.n > 0)
		return NULL;
	for (unsigned i = w->b.idx; i < o->runs; i += o->clients) {
		(void)snprintf(name, sizeof(name), "%s%u", o->prefix, i);
		if (w->del)
			r = kc_client_delete(cl, &(struct kc_delete_opts){
				.res = &res_runs, .ns = o->ns, .name = name,
			}, NULL, &st);
		else if ((r = kc_json_set_str(kc_json_obj_of(run, "metadata"), "name",
		    name)) == 0)
			r = kc_client_create(cl, &(struct kc_create_opts){
				.res = &res_runs, .ns = o->ns,
			}, run, NULL, &st);
		if (r < 0)
			bench_fail(&w->b.fails, r, name, &st);
	}
	w->b.t_end = bench_now_ns();
	return NULL;
}

/*
 * Starts o->clients workers creating (del false) or deleting the Runs;
 * they connect first, then all start together at *ret_t0. Does not wait
 * for them.
 */
static int
workers_start(const struct opts *o, const struct kc_rest_config *rc, bool del,
    struct worker *ws, struct bench_workers *g, uint64_t *ret_t0)
{
	for (unsigned i = 0; i < o->clients; i++)
		ws[i] = (struct worker){ .del = del, .o = o, .rc = rc };
	*g = (struct bench_workers){ .ws = ws, .size = sizeof(*ws), .n = o->clients };
	return bench_workers_start(g, worker_main, ret_t0);
}

/* Joins the workers; the time the last one finished, errors summed. */
static uint64_t
workers_join(struct bench_workers *g, uint64_t *ret_errors)
{
	*ret_errors = 0;
	return bench_workers_join(g, "ctl-bench", ret_errors);
}

/* Polls the pod count until it is 'want'; the time it was seen, or 0. */
static uint64_t
wait_pods(const struct opts *o, struct kc_client *cl, uint64_t want, uint64_t deadline,
    atomic_uint_fast64_t *lists)
{
	uint64_t n = 0, t;

	for (;;) {
		t = bench_now_ns();
		if (count_pods(cl, o->ns, &n, lists) == 0 && n == want)
			return t;
		if (t > deadline) {
			fprintf(stderr, "ctl-bench: %" PRIu64 " pods, waiting for %" PRIu64
			    ": timed out\n", n, want);
			return 0;
		}
		bench_sleep_ms(POLL_MS);
	}
}

/*
 * Waits until every Run is Running, then until the controller made no
 * write for o->settle_ms; the stats at that point in *ret. 0 or -ETIMEDOUT.
 */
static int
wait_settled(const struct opts *o, struct kc_client *cl, uint64_t t0, uint64_t deadline,
    atomic_uint_fast64_t *lists, double *ret_running_s, struct bench_stats *ret)
{
	uint64_t running = 0;

	while (count_running(cl, o->ns, &running, lists) < 0 || running < o->runs) {
		if (bench_now_ns() > deadline) {
			fprintf(stderr, "ctl-bench: %" PRIu64 " of %u runs Running: timed out\n",
			    running, o->runs);
			return -ETIMEDOUT;
		}
		bench_sleep_ms(RUNS_POLL_MS);
	}
	*ret_running_s = secs(t0, bench_now_ns());
	return bench_wait_quiet(cl, &counter, o->settle_ms, deadline, ret);
}

/* The controller's and the server's figures from the start until now. */
static void
measure(const struct opts *o, double cpu0, double srv0, struct result *res)
{
	double cpu1 = bench_proc_cpu_s(o->pid), srv1 = bench_proc_cpu_s(o->server_pid);

	res->cpu_s = cpu1 - cpu0;
	res->server_cpu_s = srv0 >= 0 && srv1 >= 0 ? srv1 - srv0 : -1;
	res->rss1_kb = proc_status_kb(o->pid, "VmRSS");
	res->hwm_kb = proc_status_kb(o->pid, "VmHWM");
}

static int
scenario(const struct opts *o, const struct kc_rest_config *rc, struct result *res)
{
	_cleanup_(kc_client_freep) struct kc_client *cl = NULL;
	_cleanup_(kc_freep) struct worker *ws = NULL;
	struct kc_status st = { 0 };
	struct bench_stats s0, s1 = { 0 }, s2, s3;
	atomic_uint_fast64_t lists = 0;
	struct bench_workers g;
	uint64_t pods = (uint64_t)o->runs * o->nodes, n, t0, t1, tsub, deadline;
	double cpu0, srv0;
	int r;

	if ((ws = kc_calloc(o->clients, sizeof(*ws))) == NULL)
		return -ENOMEM;
	if ((r = client_open(rc, &cl, &st)) < 0 || (r = ensure_namespace(cl, o->ns, &st)) < 0) {
		fprintf(stderr, "ctl-bench: %s: %s\n", kc_strerror(r), st.message);
		return r;
	}
	if ((r = count_pods(cl, o->ns, &n, &lists)) < 0)
		return r;
	if (n != 0) {
		fprintf(stderr, "ctl-bench: namespace %s already holds %" PRIu64 " pods\n",
		    o->ns, n);
		return -EEXIST;
	}

	/* create */
	res->rss0_kb = proc_status_kb(o->pid, "VmRSS");
	if ((r = stats_get(cl, &s0)) < 0)
		return r;
	atomic_store(&lists, 0);
	cpu0 = bench_proc_cpu_s(o->pid);
	srv0 = bench_proc_cpu_s(o->server_pid);
	if ((r = workers_start(o, rc, false, ws, &g, &t0)) < 0)
		return r;
	deadline = t0 + (uint64_t)o->timeout_s * 1000000000u;
	t1 = wait_pods(o, cl, pods, deadline, &lists);
	tsub = workers_join(&g, &res->create_errors);
	res->submit_s = secs(t0, tsub);
	res->cpu_create_s = bench_proc_cpu_s(o->pid) - cpu0;
	if (t1 != 0)
		res->create_s = secs(t0, t1);
	else
		res->timed_out = "create";

	/* running, settled */
	if (t1 != 0 && (r = wait_settled(o, cl, t0, deadline, &lists, &res->running_s,
	    &s1)) < 0)
		res->timed_out = "running";
	measure(o, cpu0, srv0, res);
	if (res->timed_out != NULL && stats_get(cl, &s1) < 0)
		s1 = s0;
	res->start = bench_stats_sub(&s1, &s0);
	res->own_lists_start = atomic_load(&lists);
	if (res->timed_out != NULL)
		return -ETIMEDOUT;

	/* cleanup */
	if (o->keep)
		return 0;
	if ((r = stats_get(cl, &s2)) < 0)
		return r;
	atomic_store(&lists, 0);
	cpu0 = bench_proc_cpu_s(o->pid);
	if ((r = workers_start(o, rc, true, ws, &g, &t0)) < 0)
		return r;
	deadline = t0 + (uint64_t)o->timeout_s * 1000000000u;
	t1 = wait_pods(o, cl, 0, deadline, &lists);
	(void)workers_join(&g, &res->delete_errors);
	res->cleanup_cpu_s = bench_proc_cpu_s(o->pid) - cpu0;
	if (t1 == 0) {
		res->timed_out = "cleanup";
		return -ETIMEDOUT;
	}
	res->cleanup_s = secs(t0, t1);
	if ((r = stats_get(cl, &s3)) < 0)
		return r;
	res->cleanup = bench_stats_sub(&s3, &s2);
	res->own_lists_cleanup = atomic_load(&lists);
	return 0;
}

/* x / runs with two decimals. */
static double
per_run(const struct opts *o, uint64_t x)
{
	return (double)x / (double)o->runs;
}

static void
print_line(const struct opts *o, const struct result *res, bool complete)
{
	const struct bench_stats *s = &res->start;
	uint64_t pods = (uint64_t)o->runs * o->nodes;
	uint64_t calls = s->calls - s->own - res->own_lists_start;
	int64_t drss = (int64_t)res->rss1_kb - (int64_t)res->rss0_kb;
	char line[LINE_MAX_LEN];
	size_t i;
	int n;

	n = snprintf(line, sizeof(line), "bench: scenario=ctl-session");
	for (i = 0; i < o->nlabels && n > 0 && (size_t)n < sizeof(line); i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %s", o->labels[i]);
	if (n > 0 && (size_t)n < sizeof(line))
		n += snprintf(line + n, sizeof(line) - (size_t)n,
		    " runs=%u nodes=%u pods=%" PRIu64 " create_s=%.3f pods_per_s=%.0f"
		    " api_calls_per_run=%.2f api_writes_per_run=%.2f controller_cpu_s=%.2f"
		    " controller_peak_rss_kb=%" PRIu64 " rss_per_cached_pod_b=%.0f"
		    " cleanup_s=%.3f",
		    o->runs, o->nodes, pods, res->create_s,
		    res->create_s > 0 ? (double)pods / res->create_s : 0.0,
		    per_run(o, calls), per_run(o, bench_ctl_writes(s)), res->cpu_s, res->hwm_kb,
		    pods > 0 ? (double)drss * 1024 / (double)pods : 0.0, res->cleanup_s);
	if (n > 0 && (size_t)n < sizeof(line))
		n += snprintf(line + n, sizeof(line) - (size_t)n,
		    " submit_s=%.3f running_s=%.3f w_pods=%.2f w_children=%.2f"
		    " w_status=%.2f w_events=%.2f w_other=%.2f conflicts=%" PRIu64
		    " api_errors=%" PRIu64 " controller_cpu_create_s=%.2f rss_before_kb=%"
		    PRIu64 " rss_after_kb=%" PRIu64 " server_cpu_s=%.2f"
		    " cleanup_writes_per_run=%.2f cleanup_calls_per_run=%.2f"
		    " cleanup_cpu_s=%.2f clients=%u errors=%" PRIu64 " complete=%s",
		    res->submit_s, res->running_s, per_run(o, s->w[W_PODS]),
		    per_run(o, s->w[W_CHILDREN]), per_run(o, s->w[W_STATUS]),
		    per_run(o, s->w[W_EVENTS]), per_run(o, s->w[W_OTHER]), s->conflicts,
		    s->errors, res->cpu_create_s, res->rss0_kb, res->rss1_kb,
		    res->server_cpu_s, per_run(o, bench_ctl_writes(&res->cleanup)),
		    per_run(o, res->cleanup.calls - res->cleanup.own - res->own_lists_cleanup),
		    res->cleanup_cpu_s, o->clients, res->create_errors + res->delete_errors,
		    complete ? "yes" : res->timed_out != NULL ? res->timed_out : "no");
	(void)n;
	printf("%s\n", line);
	(void)fflush(stdout);
}

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: ctl-bench --kubeconfig PATH --pid CONTROLLER_PID [--server-pid PID]\n"
	    "                 [--runs R] [--nodes N] [--clients C] [--namespace NS]\n"
	    "                 [--profile NAME] [--prefix P] [--timeout S]\n"
	    "                 [--settle-ms MS] [--keep] [--label KEY=VALUE]...\n");
}

/* 0, 1 for --help, or -EINVAL (the reason is on stderr). */
static int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "kubeconfig",	 required_argument, NULL, 'k' },
		{ "runs",	 required_argument, NULL, 'r' },
		{ "nodes",	 required_argument, NULL, 'n' },
		{ "clients",	 required_argument, NULL, 'c' },
		{ "timeout",	 required_argument, NULL, 't' },
		{ "settle-ms",	 required_argument, NULL, 's' },
		{ "pid",	 required_argument, NULL, 'p' },
		{ "server-pid",	 required_argument, NULL, 'P' },
		{ "namespace",	 required_argument, NULL, 'N' },
		{ "profile",	 required_argument, NULL, 'f' },
		{ "prefix",	 required_argument, NULL, 'x' },
		{ "label",	 required_argument, NULL, 'l' },
		{ "keep",	 no_argument,	    NULL, 'K' },
		{ "help",	 no_argument,	    NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned pid;
	int c, r = 0;

	*o = (struct opts){
		.runs = 1000, .nodes = 8, .clients = 8, .timeout_s = 300, .settle_ms = 1000,
		.ns = "ctl-bench", .profile = "ctl-bench", .prefix = "r",
	};
	while (r == 0 && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
			o->kubeconfig = optarg;
			break;
		case 'r':
			r = bench_parse_count("ctl-bench", "--runs", optarg, 1, 100000, &o->runs);
			break;
		case 'n':
			r = bench_parse_count("ctl-bench", "--nodes", optarg, 1, 10000, &o->nodes);
			break;
		case 'c':
			r = bench_parse_count("ctl-bench", "--clients", optarg, 1, CLIENTS_MAX, &o->clients);
			break;
		case 't':
			r = bench_parse_count("ctl-bench", "--timeout", optarg, 1, 86400, &o->timeout_s);
			break;
		case 's':
			r = bench_parse_count("ctl-bench", "--settle-ms", optarg, 0, 600000, &o->settle_ms);
			break;
		case 'p':
		case 'P':
			if ((r = bench_parse_count("ctl-bench", c == 'p' ? "--pid" : "--server-pid", optarg, 1,
			    INT32_MAX, &pid)) == 0)
				*(c == 'p' ? &o->pid : &o->server_pid) = (pid_t)pid;
			break;
		case 'N':
			o->ns = optarg;
			break;
		case 'f':
			o->profile = optarg;
			break;
		case 'x':
			o->prefix = optarg;
			break;
		case 'K':
			o->keep = true;
			break;
		case 'l':
			if (o->nlabels == LABELS_MAX || strchr(optarg, '=') == NULL ||
			    strpbrk(optarg, " \t\n") != NULL) {
				fprintf(stderr, "ctl-bench: --label: at most %d KEY=VALUE "
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
	if (r == 0 && optind != argc) {
		fprintf(stderr, "ctl-bench: unexpected argument \"%s\"\n", argv[optind]);
		r = -EINVAL;
	}
	if (r == 0 && (o->kubeconfig == NULL || o->pid == 0)) {
		fprintf(stderr, "ctl-bench: --kubeconfig and --pid are required\n");
		r = -EINVAL;
	}
	if (r == 0 && strlen(o->prefix) > 32) {
		fprintf(stderr, "ctl-bench: --prefix: at most 32 characters\n");
		r = -EINVAL;
	}
	if (r < 0)
		usage(stderr);
	return r;
}

int
main(int argc, char **argv)
{
	_cleanup_(kc_rest_config_freep) struct kc_rest_config *rc = NULL;
	struct result res = { 0 };
	struct opts o;
	int r;

	if ((r = parse_opts(argc, argv, &o)) != 0)
		return r < 0 ? 2 : 0;
	if (bench_rest_config("ctl-bench", o.kubeconfig, &rc) < 0)
		return 1;
	r = scenario(&o, rc, &res);
	if (r == 0 || res.timed_out != NULL)
		print_line(&o, &res, r == 0);
	kc_transport_global_cleanup();
	return r < 0 ? 1 : 0;
}

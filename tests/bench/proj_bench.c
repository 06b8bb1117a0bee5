/*
 * proj_bench.c: proj-bench, the load generator of the controller's
 * Project benchmarks (tests/bench/ctl-bench.sh, scenario "projects").
 *
 *	proj-bench projects --kubeconfig PATH --pid CONTROLLER_PID
 *	    [--server-pid PID] [--projects P] [--members M] [--gpus G]
 *	    [--clients C] [--prefix X] [--timeout S] [--settle-ms MS]
 *	proj-bench quota --kubeconfig PATH --pid CONTROLLER_PID
 *	    [--server-pid PID] [--projects P] [--runs R] [--nodes N]
 *	    [--profile NAME] [--clients C] [--prefix X] [--timeout S]
 *	    [--settle-ms MS]
 *
 * projects  From scratch: --clients threads, each with its own libkc
 *           client, create P Projects "<prefix><i>" (the namespace of
 *           that name, and for even i also "<prefix><i>-eval"; owners
 *           the group "<prefix><i>-leads"; quota.hard G GPUs and 4 G
 *           pods, maxGPUsPerRun G), then M ProjectMembers in each home
 *           namespace ("m<j>", the user "user-<j>"; two admins, four
 *           viewers, the rest researchers). A member create that finds
 *           its namespace missing (the controller has not made it yet)
 *           is sent again 50 ms later (member_retries). Measured: the
 *           time until every Project is Ready=True and every member is
 *           Ready=True with reason Bound (ready_s), then until the
 *           controller made no write for --settle-ms (settled_s); the
 *           controller's writes over that window by kind, from the
 *           devcluster's /devcluster/stats less this program's own
 *           requests; its CPU and memory. Checked: the RoleBindings of
 *           the projects (owners' and members', one each per namespace)
 *           are all there (bindings, bindings_expected).
 * quota     In those Projects (listed by the label proj-bench=<prefix>), R
 *           Runs each ("q<j>", spread over the project's namespaces,
 *           profile --profile, N nodes), created round-robin across
 *           the projects. Measured: the time until every Run carries a
 *           QuotaReserved condition (reserved_s; True: admitted, False:
 *           waiting), bounded by --timeout; then the tally: admitted,
 *           waiting, expected_admitted (per project, as many as fit:
 *           min(R, hard GPUs / the Run's GPUs)), over_quota (projects
 *           whose admitted Runs hold more GPUs than quota.hard: must be
 *           0), short (projects with fewer admitted than fit: must be
 *           0), status_mismatch (projects whose status.runs.active,
 *           .waiting or usage.reserved GPUs differ from the tally once
 *           the controller is quiet). Then every Run is deleted and the scenario waits
 *           until they and their pods are gone (cleanup_s).
 *
 * Each prints one "bench: scenario=ctl-projects" or "ctl-quota" line
 * (tests/bench/README.md), ending in complete=yes (or the phase that
 * timed out: the line holds what was seen by then) and checks=ok (or
 * failed). Exit status: 0 when every phase completed and every check
 * held, 1 when not or the scenario could not run, 2 for bad usage.
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

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/client.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/kubeconfig.h>
#include <kc/quantity.h>
#include <kc/str.h>
#include <kc/transport.h>

#include "bench.h"

#define PROG		"proj-bench"
#define CLIENTS_MAX	64
#define PROJECTS_MAX	1000
#define MEMBERS_MAX	200
#define RUNS_MAX	100
#define NS_MAX		2	/* namespaces of a project made here */
#define POLL_MS		250
#define RETRY_MS	50
#define GPU		"nvidia.com/gpu"
#define QUOTA_GPU	"requests.nvidia.com/gpu"

static const struct kc_resource res_projects = {
	.group = "trainyard.dev", .version = "v1beta1", .resource = "projects",
	.kind = "Project",
};
static const struct kc_resource res_members = {
	.group = "trainyard.dev", .version = "v1beta1", .resource = "projectmembers",
	.kind = "ProjectMember", .namespaced = true,
};
static const struct kc_resource res_runs = {
	.group = "trainyard.dev", .version = "v1beta1", .resource = "runs",
	.kind = "Run", .namespaced = true,
};
static const struct kc_resource res_profiles = {
	.group = "trainyard.dev", .version = "v1beta1", .resource = "resourceprofiles",
	.kind = "ResourceProfile",
};
static const struct kc_resource res_rolebindings = {
	.group = "rbac.authorization.k8s.io", .version = "v1", .resource = "rolebindings",
	.kind = "RoleBinding", .namespaced = true,
};

enum mode { MODE_PROJECTS, MODE_QUOTA };

struct opts {
	enum mode	 mode;
	const char	*kubeconfig;
	unsigned	 projects;
	unsigned	 members;
	unsigned	 runs;		/* per project */
	unsigned	 nodes;
	unsigned	 gpus;		/* quota.hard GPUs of a project */
	unsigned	 clients;
	unsigned	 timeout_s;
	unsigned	 settle_ms;
	pid_t		 pid;
	pid_t		 server_pid;
	const char	*prefix;
	const char	*profile;
	char		 selector[64];	/* proj-bench=<prefix> */
};

/* The controller's writes by kind (struct bench_stats' w[]). */
enum {
	W_NS, W_QUOTA, W_POLICY, W_RB, W_CRBAC, W_PROJECT, W_PROJECT_STATUS, W_MEMBER,
	W_MEMBER_STATUS, W_PODS, W_RUN_STATUS, W_CHILDREN, W_EVENTS, W_OTHER, W_KINDS
};
_Static_assert(W_KINDS <= BENCH_KINDS, "too many kinds of write");

/* A project as the quota scenario found it. */
struct project {
	char		 name[64];
	char		 ns[NS_MAX][64];
	size_t		 nns;
	int64_t		 hard;		/* quota.hard GPUs, -1: none */
	uint64_t	 admitted, waiting, admitted_gpus;
	int64_t		 st_active, st_waiting;	/* its status.runs */
	int64_t		 st_reserved;	/* its status.usage.reserved GPUs, 0 when none */
};

/* What one thread creates or deletes. */
enum job { JOB_PROJECTS, JOB_RUNS, JOB_DELETE_RUNS };

struct worker {
	struct bench_worker b;
	enum job	 job;
	const struct opts *o;
	const struct kc_rest_config *rc;
	const struct project *ps;	/* JOB_RUNS, JOB_DELETE_RUNS */
	size_t		 nps;
	uint64_t	 deadline;
	uint64_t	 retries;
};

static double
secs(uint64_t a, uint64_t b)
{
	return b > a ? (double)(b - a) / 1e9 : 0;
}

static bool
has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static bool
is_any(const char *s, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, v[i]) == 0)
			return true;
	return false;
}

/*
 * The kind of a write: ours (creates of Projects, members and Runs, Run
 * deletes), or the controller's.
 */
static int
write_kind(const char *verb, const char *res)
{
	static const char *const mine[] = { "projects.trainyard.dev",
	    "projectmembers.trainyard.dev", "runs.trainyard.dev" };
	static const struct { const char *res; int kind; } kinds[] = {
		{ "namespaces", W_NS },
		{ "resourcequotas", W_QUOTA },
		{ "limitranges", W_QUOTA },
		{ "networkpolicies.networking.k8s.io", W_POLICY },
		{ "rolebindings.rbac.authorization.k8s.io", W_RB },
		{ "clusterroles.rbac.authorization.k8s.io", W_CRBAC },
		{ "clusterrolebindings.rbac.authorization.k8s.io", W_CRBAC },
		{ "projects.trainyard.dev", W_PROJECT },
		{ "projects.trainyard.dev/status", W_PROJECT_STATUS },
		{ "projectmembers.trainyard.dev", W_MEMBER },
		{ "projectmembers.trainyard.dev/status", W_MEMBER_STATUS },
		{ "pods", W_PODS },
		{ "services", W_CHILDREN },
		{ "podgroups.scheduling.x-k8s.io", W_CHILDREN },
		{ "events", W_EVENTS },
		{ "events.events.k8s.io", W_EVENTS },
	};

	if (is_any(res, mine, KC_ARRAY_SIZE(mine)) && (strcmp(verb, "create") == 0 ||
	    (strcmp(verb, "delete") == 0 && strcmp(res, "runs.trainyard.dev") == 0)))
		return BENCH_OWN;
	for (size_t i = 0; i < KC_ARRAY_SIZE(kinds); i++)
		if (strcmp(res, kinds[i].res) == 0)
			return kinds[i].kind;
	return has_prefix(res, "runs.trainyard.dev") ? W_RUN_STATUS : W_OTHER;
}

static const struct bench_counter counter = { .prog = PROG, .kind = write_kind };

static int
stats_get(struct kc_client *cl, struct bench_stats *ret)
{
	return bench_stats_get(cl, &counter, ret);
}

static int
client_open(const struct kc_rest_config *rc, struct kc_client **ret, struct kc_status *st)
{
	return bench_client_open(rc, PROG, ret, st);
}

/* Sets the label proj-bench=<prefix> on obj, which this batch is listed by. */
static int
label_set(const struct opts *o, struct json_object *obj)
{
	return kc_json_set_str(kc_json_get(obj, "metadata", "labels"), "proj-bench", o->prefix);
}

static void
project_name(const struct opts *o, unsigned i, char *buf, size_t size)
{
	(void)snprintf(buf, size, "%s%u", o->prefix, i);
}

/* Project i: see the head comment. */
static struct json_object *
project_new(const struct opts *o, unsigned i)
{
	char name[64], gpus[16], pods[16];
	struct json_object *p, *spec, *nss, *owner, *hard;

	project_name(o, i, name, sizeof(name));
	(void)snprintf(gpus, sizeof(gpus), "%u", o->gpus);
	(void)snprintf(pods, sizeof(pods), "%u", o->gpus * 4);
	p = json_tokener_parse("{\"apiVersion\":\"trainyard.dev/v1beta1\",\"kind\":\"Project\","
	    "\"metadata\":{\"labels\":{}},"
	    "\"spec\":{\"displayName\":\"proj-bench\",\"owners\":[{\"kind\":\"Group\"}],"
	    "\"namespaces\":[],\"quota\":{\"hard\":{}}}}");
	spec = kc_json_obj_of(p, "spec");
	nss = kc_json_arr_of(spec, "namespaces");
	owner = json_object_array_get_idx(kc_json_arr_of(spec, "owners"), 0);
	hard = kc_json_get(spec, "quota", "hard");
	if (p == NULL || nss == NULL || owner == NULL || hard == NULL || label_set(o, p) < 0 ||
	    kc_json_set_str(kc_json_obj_of(p, "metadata"), "name", name) < 0 ||
	    kc_json_set_str(hard, QUOTA_GPU, gpus) < 0 ||
	    kc_json_set_str(hard, "pods", pods) < 0 ||
	    kc_json_set_int(kc_json_obj_of(spec, "quota"), "maxGPUsPerRun", o->gpus) < 0)
		goto fail;
	for (unsigned k = 0; k < (i % 2 == 0 ? 2u : 1u); k++) {
		struct json_object *ns = json_object_new_object();
		char nsname[80];

		(void)snprintf(nsname, sizeof(nsname), "%s%s", name, k == 0 ? "" : "-eval");
		if (kc_json_append(nss, ns) < 0 || kc_json_set_str(ns, "name", nsname) < 0)
			goto fail;
	}
	(void)snprintf(name + strlen(name), sizeof(name) - strlen(name), "-leads");
	if (kc_json_set_str(owner, "name", name) < 0)
		goto fail;
	return p;
fail:
	json_object_put(p);
	return NULL;
}

/* Member j of a project: two admins, four viewers, the rest researchers. */
static struct json_object *
member_new(const struct opts *o, unsigned j)
{
	char name[32], user[32];
	const char *role = j < 2 ? "admin" : j + 4 >= o->members ? "viewer" : "researcher";
	struct json_object *m = json_tokener_parse(
	    "{\"apiVersion\":\"trainyard.dev/v1beta1\",\"kind\":\"ProjectMember\","
	    "\"metadata\":{\"labels\":{}},"
	    "\"spec\":{\"subject\":{\"kind\":\"User\"}}}");
	struct json_object *spec = kc_json_obj_of(m, "spec");

	(void)snprintf(name, sizeof(name), "m%u", j);
	(void)snprintf(user, sizeof(user), "user-%u", j);
	if (m == NULL || spec == NULL || label_set(o, m) < 0 ||
	    kc_json_set_str(kc_json_obj_of(m, "metadata"), "name", name) < 0 ||
	    kc_json_set_str(kc_json_obj_of(spec, "subject"), "name", user) < 0 ||
	    kc_json_set_str(spec, "role", role) < 0) {
		json_object_put(m);
		return NULL;
	}
	return m;
}

/* A Run of o->nodes nodes whose containers run until they are deleted. */
static struct json_object *
run_new(const struct opts *o, const char *name)
{
	struct json_object *run = json_tokener_parse(
	    "{\"apiVersion\":\"trainyard.dev/v1beta1\",\"kind\":\"Run\","
	    "\"metadata\":{\"labels\":{}},"
	    "\"spec\":{\"container\":{\"image\":\"busybox:1.36\","
	    "\"command\":[\"sleep\",\"infinity\"]}}}");
	struct json_object *spec = kc_json_obj_of(run, "spec");

	if (run == NULL || spec == NULL || label_set(o, run) < 0 ||
	    kc_json_set_str(kc_json_obj_of(run, "metadata"), "name", name) < 0 ||
	    kc_json_set_int(spec, "nodes", o->nodes) < 0 ||
	    kc_json_set_str(spec, "profile", o->profile) < 0) {
		json_object_put(run);
		return NULL;
	}
	return run;
}

/* Creates 'obj' (owned), sending it again while its namespace is missing. */
static void
create(struct worker *w, struct kc_client *cl, const struct kc_resource *res, const char *ns,
    struct json_object *obj)
{
	_cleanup_(kc_json_putp) struct json_object *o = obj;
	struct kc_status st = { 0 };
	const char *name = kc_json_str(obj, "metadata", "name");
	int r;

	if (obj == NULL) {
		bench_fail(&w->b.fails, -ENOMEM, "object", &st);
		return;
	}
	for (;;) {
		r = kc_client_create(cl, &(struct kc_create_opts){ .res = res, .ns = ns }, obj,
		    NULL, &st);
		if (r != KC_ENOTFOUND || ns == NULL || bench_now_ns() > w->deadline)
			break;
		w->retries++;
		bench_sleep_ms(RETRY_MS);
	}
	if (r < 0)
		bench_fail(&w->b.fails, r, name != NULL ? name : "?", &st);
}

/* This thread's Projects, then their members. */
static void
job_projects(struct worker *w, struct kc_client *cl)
{
	const struct opts *o = w->o;
	char ns[64];

	for (unsigned i = w->b.idx; i < o->projects; i += o->clients)
		create(w, cl, &res_projects, NULL, project_new(o, i));
	for (unsigned i = w->b.idx; i < o->projects; i += o->clients) {
		project_name(o, i, ns, sizeof(ns));
		for (unsigned j = 0; j < o->members; j++)
			create(w, cl, &res_members, ns, member_new(o, j));
	}
}

/*
 * This thread's share of the Runs (or their deletes): number k of all
 * projects x runs is Run k / nps of project k % nps, so that every
 * project fills at once, each in the order of its Runs.
 */
static void
job_runs(struct worker *w, struct kc_client *cl)
{
	const struct opts *o = w->o;
	struct kc_status st = { 0 };
	size_t total = w->nps * o->runs;
	char name[32];
	int r;

	for (size_t k = w->b.idx; k < total; k += o->clients) {
		const struct project *p = &w->ps[k % w->nps];
		size_t j = k / w->nps;
		const char *ns = p->ns[j % p->nns];

		(void)snprintf(name, sizeof(name), "q%zu", j);
		if (w->job == JOB_RUNS) {
			create(w, cl, &res_runs, ns, run_new(o, name));
			continue;
		}
		r = kc_client_delete(cl, &(struct kc_delete_opts){
			.res = &res_runs, .ns = ns, .name = name,
		}, NULL, &st);
		if (r < 0 && r != KC_ENOTFOUND)
			bench_fail(&w->b.fails, r, name, &st);
	}
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	_cleanup_(kc_client_freep) struct kc_client *cl = NULL;
	_cleanup_(kc_json_putp) struct json_object *v = NULL;
	struct kc_status st = { 0 };
	int r;

	if ((r = client_open(w->rc, &cl, &st)) < 0 ||
	    (r = kc_client_get_path(cl, "/version", &v, &st)) < 0)
		bench_fail(&w->b.fails, r, "connect", &st);
	(void)pthread_barrier_wait(w->b.start);
	if (w->b.fails.n > 0)
		return NULL;
	if (w->job == JOB_PROJECTS)
		job_projects(w, cl);
	else
		job_runs(w, cl);
	w->b.t_end = bench_now_ns();
	return NULL;
}

/*
 * Starts o->clients copies of 'w' (its job, options and data) in ws[];
 * they connect first, then all start together at *ret_t0. Does not wait
 * for them.
 */
static int
workers_start(const struct worker *w, struct worker *ws, struct bench_workers *g,
    uint64_t *ret_t0)
{
	const struct opts *o = w->o;

	for (unsigned i = 0; i < o->clients; i++) {
		ws[i] = *w;
		ws[i].deadline = bench_now_ns() + (uint64_t)o->timeout_s * 1000000000u;
	}
	*g = (struct bench_workers){ .ws = ws, .size = sizeof(*ws), .n = o->clients };
	return bench_workers_start(g, worker_main, ret_t0);
}

/* Joins the workers: the time the last one finished; errors and retries. */
static uint64_t
workers_join(struct bench_workers *g, uint64_t *ret_errors, uint64_t *ret_retries)
{
	const struct worker *ws = g->ws;

	for (unsigned i = 0; ret_retries != NULL && i < g->n; i++)
		*ret_retries += ws[i].retries;
	return bench_workers_join(g, PROG, ret_errors);
}

static int
wait_quiet(const struct opts *o, struct kc_client *cl, uint64_t deadline,
    struct bench_stats *ret)
{
	return bench_wait_quiet(cl, &counter, o->settle_ms, deadline, ret);
}

/* Counts of a list of objects by a condition. */
struct ready {
	const char	*type;		/* the condition */
	const char	*reason;	/* NULL: any */
	uint64_t	 n;		/* objects listed */
	uint64_t	 ready;		/* with the condition True (and 'reason') */
};

static void
ready_add(void *arg, const struct json_object *obj)
{
	struct ready *rd = arg;
	const char *reason = NULL, *status = bench_condition(obj, rd->type, &reason);

	rd->n++;
	rd->ready += status != NULL && strcmp(status, "True") == 0 &&
	    (rd->reason == NULL || (reason != NULL && strcmp(reason, rd->reason) == 0));
}

static void
count_add(void *arg, const struct json_object *obj)
{
	(void)obj;
	(*(uint64_t *)arg)++;
}

/* ---- projects ------------------------------------------------------ */

struct proj_result {
	double		 submit_s, projects_ready_s, ready_s, settled_s;
	double		 cpu_s, server_cpu_s;
	uint64_t	 hwm_kb, rss0_kb, rss1_kb;
	uint64_t	 projects_ready, members_ready, bindings, bindings_expected;
	uint64_t	 errors, retries, lists;
	struct bench_stats s;
	const char	*timed_out;	/* the phase that did not finish, or NULL */
	bool		 measured;	/* the line can be printed */
	bool		 checks_ok;
};

/* Every Project Ready and every member Bound: 0, or -ETIMEDOUT. */
static int
wait_ready(const struct opts *o, struct kc_client *cl, uint64_t t0, uint64_t deadline,
    struct proj_result *res)
{
	uint64_t members = (uint64_t)o->projects * o->members;

	for (;;) {
		struct ready pr = { .type = "Ready" }, mr = { .type = "Ready", .reason = "Bound" };

		if (bench_list_each(cl, &(struct kc_list_opts){ .res = &res_projects,
		    .label_selector = o->selector }, PROG, ready_add, &pr, &res->lists) == 0) {
			res->projects_ready = pr.ready;
			if (pr.ready == o->projects && res->projects_ready_s == 0)
				res->projects_ready_s = secs(t0, bench_now_ns());
		}
		if (bench_list_each(cl, &(struct kc_list_opts){ .res = &res_members,
		    .label_selector = o->selector }, PROG, ready_add, &mr, &res->lists) == 0)
			res->members_ready = mr.ready;
		if (res->projects_ready == o->projects && res->members_ready == members) {
			res->ready_s = secs(t0, bench_now_ns());
			return 0;
		}
		if (bench_now_ns() > deadline) {
			fprintf(stderr, PROG ": %" PRIu64 " of %u projects Ready, %" PRIu64 " of %"
			    PRIu64 " members Bound: timed out\n", res->projects_ready,
			    o->projects, res->members_ready, members);
			return -ETIMEDOUT;
		}
		bench_sleep_ms(POLL_MS);
	}
}

static void
measure(const struct opts *o, double cpu0, double srv0, double *ret_cpu, double *ret_srv,
    uint64_t *ret_hwm, uint64_t *ret_rss)
{
	double cpu1 = bench_proc_cpu_s(o->pid), srv1 = bench_proc_cpu_s(o->server_pid);

	*ret_cpu = cpu1 - cpu0;
	*ret_srv = srv0 >= 0 && srv1 >= 0 ? srv1 - srv0 : -1;
	if (bench_proc_status_kb(o->pid, "VmRSS", ret_rss) < 0)
		*ret_rss = 0;
	if (bench_proc_status_kb(o->pid, "VmHWM", ret_hwm) < 0)
		*ret_hwm = 0;
}

static int
scenario_projects(const struct opts *o, const struct kc_rest_config *rc,
    struct proj_result *res)
{
	_cleanup_(kc_client_freep) struct kc_client *cl = NULL;
	_cleanup_(kc_freep) struct worker *ws = NULL;
	struct kc_status st = { 0 };
	struct bench_stats s0, s1 = { 0 };
	struct bench_workers g;
	uint64_t t0, t1, deadline, nsns = 0;
	double cpu0, srv0;
	int r;

	if ((ws = kc_calloc(o->clients, sizeof(*ws))) == NULL)
		return -ENOMEM;
	if ((r = client_open(rc, &cl, &st)) < 0) {
		fprintf(stderr, PROG ": %s: %s\n", kc_strerror(r), st.message);
		return r;
	}
	for (unsigned i = 0; i < o->projects; i++)
		nsns += i % 2 == 0 ? 2 : 1;
	res->bindings_expected = nsns * (1 + o->members);
	if (bench_proc_status_kb(o->pid, "VmRSS", &res->rss0_kb) < 0)
		res->rss0_kb = 0;
	if ((r = stats_get(cl, &s0)) < 0)
		return r;
	cpu0 = bench_proc_cpu_s(o->pid);
	srv0 = bench_proc_cpu_s(o->server_pid);
	if ((r = workers_start(&(struct worker){ .job = JOB_PROJECTS, .o = o, .rc = rc }, ws,
	    &g, &t0)) < 0)
		return r;
	deadline = t0 + (uint64_t)o->timeout_s * 1000000000u;
	r = wait_ready(o, cl, t0, deadline, res);
	t1 = workers_join(&g, &res->errors, &res->retries);
	res->submit_s = secs(t0, t1);
	if (r < 0)
		res->timed_out = "ready";
	else if ((r = wait_quiet(o, cl, deadline, &s1)) < 0)
		res->timed_out = "settle";
	else
		res->settled_s = secs(t0, bench_now_ns()) - (double)o->settle_ms / 1000;
	measure(o, cpu0, srv0, &res->cpu_s, &res->server_cpu_s, &res->hwm_kb, &res->rss1_kb);
	if (res->timed_out != NULL && stats_get(cl, &s1) < 0)
		s1 = s0;
	res->s = bench_stats_sub(&s1, &s0);
	if (bench_list_each(cl, &(struct kc_list_opts){ .res = &res_rolebindings,
	    .label_selector = "trainyard.dev/project" }, PROG, count_add, &res->bindings,
	    NULL) < 0)
		res->bindings = 0;
	res->measured = true;
	res->checks_ok = res->bindings == res->bindings_expected;
	if (res->timed_out != NULL)
		return -ETIMEDOUT;
	if (!res->checks_ok)
		fprintf(stderr, PROG ": %" PRIu64 " project RoleBindings, want %" PRIu64 "\n",
		    res->bindings, res->bindings_expected);
	return res->checks_ok ? 0 : -EPROTO;
}

static void
print_projects(const struct opts *o, const struct proj_result *res)
{
	const struct bench_stats *s = &res->s;
	uint64_t members = (uint64_t)o->projects * o->members, nsns = 0;
	uint64_t w = bench_ctl_writes(s);

	for (unsigned i = 0; i < o->projects; i++)
		nsns += i % 2 == 0 ? 2 : 1;
	printf("bench: scenario=ctl-projects projects=%u members=%" PRIu64 " namespaces=%"
	    PRIu64 " ready_s=%.3f api_writes=%" PRIu64 " writes_per_project=%.2f"
	    " writes_per_member=%.2f controller_cpu_s=%.2f controller_peak_rss_kb=%" PRIu64
	    " submit_s=%.3f projects_ready_s=%.3f settled_s=%.3f api_calls=%" PRIu64
	    " w_namespaces=%" PRIu64 " w_quotas=%" PRIu64 " w_policies=%" PRIu64
	    " w_rolebindings=%" PRIu64 " w_cluster_rbac=%" PRIu64 " w_project=%" PRIu64
	    " w_project_status=%" PRIu64 " w_member=%" PRIu64 " w_member_status=%" PRIu64
	    " w_events=%" PRIu64 " w_other=%" PRIu64 " conflicts=%" PRIu64
	    " api_errors=%" PRIu64 " bindings=%" PRIu64 " bindings_expected=%" PRIu64
	    " rss_before_kb=%" PRIu64 " rss_after_kb=%" PRIu64 " server_cpu_s=%.2f"
	    " member_retries=%" PRIu64 " clients=%u errors=%" PRIu64 " complete=%s"
	    " checks=%s\n",
	    o->projects, members, nsns, res->ready_s, w,
	    (double)w / o->projects,
	    members > 0 ? (double)(s->w[W_MEMBER] + s->w[W_MEMBER_STATUS] + s->w[W_RB]) /
	    (double)members : 0,
	    res->cpu_s, res->hwm_kb, res->submit_s, res->projects_ready_s, res->settled_s,
	    s->calls - s->own - res->lists, s->w[W_NS], s->w[W_QUOTA], s->w[W_POLICY],
	    s->w[W_RB], s->w[W_CRBAC], s->w[W_PROJECT], s->w[W_PROJECT_STATUS],
	    s->w[W_MEMBER], s->w[W_MEMBER_STATUS], s->w[W_EVENTS], s->w[W_OTHER], s->conflicts,
	    s->errors > res->retries ? s->errors - res->retries : 0, res->bindings,
	    res->bindings_expected, res->rss0_kb, res->rss1_kb, res->server_cpu_s,
	    res->retries, o->clients, res->errors,
	    res->timed_out != NULL ? res->timed_out : "yes", res->checks_ok ? "ok" : "failed");
	(void)fflush(stdout);
}

/* ---- quota --------------------------------------------------------- */

struct quota_result {
	double		 submit_s, reserved_s, cleanup_s, cpu_s, server_cpu_s;
	uint64_t	 hwm_kb, rss_kb;
	uint64_t	 runs, reserved, admitted, waiting, expected;
	uint64_t	 over_quota, short_, status_mismatch;
	int64_t		 run_gpus, quota_gpus;
	uint64_t	 errors, lists;
	struct bench_stats s;
	const char	*timed_out;	/* the phase that did not finish, or NULL */
	bool		 measured;	/* the line can be printed */
	bool		 checks_ok;
};

/* A quantity as a JSON number or string, rounded up; -1 when absent or bad. */
static int64_t
quantity_of(struct json_object *v)
{
	struct kc_quantity q;
	int64_t n;

	if (v != NULL && json_object_is_type(v, json_type_int))
		return json_object_get_int64(v);
	if (v == NULL || !json_object_is_type(v, json_type_string) ||
	    kc_quantity_parse(json_object_get_string(v), &q, NULL) < 0 ||
	    kc_quantity_value(&q, &n) < 0)
		return -1;
	return n;
}

struct projects_found {
	struct project	*ps;
	size_t		 n, cap;
};

static void
project_add(void *arg, const struct json_object *obj)
{
	struct projects_found *pf = arg;
	struct json_object *nss = kc_json_arr_of(kc_json_obj_of(obj, "spec"), "namespaces");
	const char *name = kc_json_str(obj, "metadata", "name");
	struct project *p;

	if (pf->n == pf->cap || name == NULL || nss == NULL)
		return;
	p = &pf->ps[pf->n];
	*p = (struct project){ .hard = quantity_of(kc_json_get(obj, "spec", "quota", "hard",
	    QUOTA_GPU)), .st_active = kc_json_int(obj, -1, "status", "runs", "active"),
	    .st_waiting = kc_json_int(obj, -1, "status", "runs", "waiting"),
	    .st_reserved = quantity_of(kc_json_get(obj, "status", "usage", "reserved",
	    QUOTA_GPU)) };
	(void)kc_strlcpy(p->name, name, sizeof(p->name));
	for (size_t i = 0; i < json_object_array_length(nss) && p->nns < NS_MAX; i++) {
		const char *ns = kc_json_str(json_object_array_get_idx(nss, i), "name");

		if (ns != NULL && kc_strlcpy(p->ns[p->nns], ns, sizeof(p->ns[0])) <
		    sizeof(p->ns[0]))
			p->nns++;
	}
	if (p->nns > 0)
		pf->n++;
}

/* The project of a namespace, or NULL. */
static struct project *
project_of_ns(struct projects_found *pf, const char *ns)
{
	for (size_t i = 0; ns != NULL && i < pf->n; i++)
		for (size_t k = 0; k < pf->ps[i].nns; k++)
			if (strcmp(pf->ps[i].ns[k], ns) == 0)
				return &pf->ps[i];
	return NULL;
}

/* The Runs' verdicts, tallied per project. */
struct tally {
	struct projects_found *pf;
	int64_t		 gpus_per_node;
	uint64_t	 n, reserved, admitted, waiting;
};

static void
tally_add(void *arg, const struct json_object *run)
{
	struct tally *t = arg;
	const char *status = bench_condition(run, "QuotaReserved", NULL);
	struct project *p = project_of_ns(t->pf, kc_json_str(run, "metadata", "namespace"));

	t->n++;
	if (status == NULL || p == NULL)
		return;
	t->reserved++;
	if (strcmp(status, "True") == 0) {
		t->admitted++;
		p->admitted++;
		p->admitted_gpus += (uint64_t)(kc_json_int(run, 1, "spec", "nodes") *
		    t->gpus_per_node);
	} else if (strcmp(status, "False") == 0) {
		t->waiting++;
		p->waiting++;
	}
}

/* Lists the Runs into a fresh tally. */
static int
tally_runs(const struct opts *o, struct kc_client *cl, struct tally *t, uint64_t *lists)
{
	for (size_t i = 0; i < t->pf->n; i++)
		t->pf->ps[i].admitted = t->pf->ps[i].waiting = t->pf->ps[i].admitted_gpus = 0;
	t->n = t->reserved = t->admitted = t->waiting = 0;
	return bench_list_each(cl, &(struct kc_list_opts){ .res = &res_runs,
	    .label_selector = o->selector }, PROG, tally_add, t, lists);
}

/* Pods in all namespaces. */
static int
count_pods(struct kc_client *cl, uint64_t *ret)
{
	return bench_count(cl, &kc_res_pods, NULL, PROG, ret);
}

/* The profile's GPUs per node; -1 when it has none or cannot be read. */
static int64_t
profile_gpus(const struct opts *o, struct kc_client *cl)
{
	_cleanup_(kc_json_putp) struct json_object *prof = NULL;
	struct kc_status st = { 0 };
	int r;

	if ((r = kc_client_get(cl, &(struct kc_get_opts){ .res = &res_profiles,
	    .name = o->profile }, &prof, &st)) < 0) {
		fprintf(stderr, PROG ": resourceprofile %s: %s: %s\n", o->profile,
		    kc_strerror(r), st.message);
		return -1;
	}
	return quantity_of(kc_json_get(prof, "spec", "resources", GPU));
}

/* The per-project checks of a complete tally (and of the Projects' status). */
static void
check_tally(const struct opts *o, struct kc_client *cl, struct projects_found *pf,
    struct quota_result *res)
{
	struct projects_found now = { .cap = pf->n };

	for (size_t i = 0; i < pf->n; i++) {
		const struct project *p = &pf->ps[i];
		uint64_t fit = p->hard < 0 ? o->runs : (uint64_t)(p->hard / res->run_gpus);

		if (fit > o->runs)
			fit = o->runs;
		res->expected += fit;
		res->over_quota += p->hard >= 0 && p->admitted_gpus > (uint64_t)p->hard;
		res->short_ += p->admitted < fit;
		res->quota_gpus += p->hard > 0 ? p->hard : 0;
	}
	/* The Projects' status, as the controller left it once quiet. */
	if ((now.ps = kc_calloc(pf->n, sizeof(*now.ps))) == NULL ||
	    bench_list_each(cl, &(struct kc_list_opts){ .res = &res_projects,
	    .label_selector = o->selector }, PROG, project_add, &now, &res->lists) < 0) {
		res->status_mismatch = pf->n;
		free(now.ps);
		return;
	}
	for (size_t i = 0; i < pf->n; i++) {
		const struct project *p = &pf->ps[i], *q = NULL;

		for (size_t k = 0; k < now.n && q == NULL; k++)
			if (strcmp(now.ps[k].name, p->name) == 0)
				q = &now.ps[k];
		res->status_mismatch += q == NULL || q->st_active != (int64_t)p->admitted ||
		    q->st_waiting != (int64_t)p->waiting ||
		    (q->st_reserved < 0 ? 0 : q->st_reserved) != (int64_t)p->admitted_gpus;
	}
	free(now.ps);
}

/* Deletes the Runs, waits until they and the pods they made are gone. */
static int
quota_cleanup(const struct opts *o, const struct kc_rest_config *rc, struct kc_client *cl,
    struct projects_found *pf, uint64_t pods0, struct worker *ws, struct quota_result *res)
{
	struct bench_workers g;
	uint64_t t0, deadline, runs = 1, pods = UINT64_MAX;
	int r;

	if ((r = workers_start(&(struct worker){ .job = JOB_DELETE_RUNS, .o = o, .rc = rc,
	    .ps = pf->ps, .nps = pf->n }, ws, &g, &t0)) < 0)
		return r;
	(void)workers_join(&g, &res->errors, NULL);
	deadline = t0 + (uint64_t)o->timeout_s * 1000000000u;
	for (;;) {
		runs = 0;
		if (bench_list_each(cl, &(struct kc_list_opts){ .res = &res_runs,
		    .label_selector = o->selector }, PROG, count_add, &runs, NULL) == 0 &&
		    runs == 0 && count_pods(cl, &pods) == 0 && pods <= pods0) {
			res->cleanup_s = secs(t0, bench_now_ns());
			return 0;
		}
		if (bench_now_ns() > deadline) {
			fprintf(stderr, PROG ": %" PRIu64 " Runs left: timed out\n", runs);
			return -ETIMEDOUT;
		}
		bench_sleep_ms(POLL_MS);
	}
}

static int
scenario_quota(const struct opts *o, const struct kc_rest_config *rc, struct quota_result *res)
{
	_cleanup_(kc_client_freep) struct kc_client *cl = NULL;
	_cleanup_(kc_freep) struct worker *ws = NULL;
	_cleanup_(kc_freep) struct project *ps = NULL;
	struct projects_found pf = { .cap = o->projects };
	struct kc_status st = { 0 };
	struct tally t = { .pf = &pf };
	struct bench_stats s0, s1 = { 0 };
	struct bench_workers g;
	uint64_t t0, t1, deadline, pods0 = 0;
	double cpu0, srv0;
	int r, rc_cleanup;

	if ((ws = kc_calloc(o->clients, sizeof(*ws))) == NULL ||
	    (ps = kc_calloc(o->projects, sizeof(*ps))) == NULL)
		return -ENOMEM;
	pf.ps = ps;
	if ((r = client_open(rc, &cl, &st)) < 0) {
		fprintf(stderr, PROG ": %s: %s\n", kc_strerror(r), st.message);
		return r;
	}
	if ((r = bench_list_each(cl, &(struct kc_list_opts){ .res = &res_projects,
	    .label_selector = o->selector }, PROG, project_add, &pf, NULL)) < 0)
		return r;
	if (pf.n < o->projects) {
		fprintf(stderr, PROG ": %zu projects labelled %s, want %u (run "
		    "\"proj-bench projects\" first)\n", pf.n, o->selector, o->projects);
		return -ENOENT;
	}
	if ((t.gpus_per_node = profile_gpus(o, cl)) <= 0) {
		fprintf(stderr, PROG ": resourceprofile %s has no " GPU "\n", o->profile);
		return -EINVAL;
	}
	res->runs = pf.n * o->runs;
	res->run_gpus = t.gpus_per_node * o->nodes;
	if ((r = count_pods(cl, &pods0)) < 0 || (r = stats_get(cl, &s0)) < 0)
		return r;
	cpu0 = bench_proc_cpu_s(o->pid);
	srv0 = bench_proc_cpu_s(o->server_pid);
	if ((r = workers_start(&(struct worker){ .job = JOB_RUNS, .o = o, .rc = rc,
	    .ps = pf.ps, .nps = pf.n }, ws, &g, &t0)) < 0)
		return r;
	deadline = t0 + (uint64_t)o->timeout_s * 1000000000u;
	t1 = workers_join(&g, &res->errors, NULL);
	res->submit_s = secs(t0, t1);
	for (;;) {
		if (tally_runs(o, cl, &t, &res->lists) == 0 && t.reserved == res->runs) {
			res->reserved_s = secs(t0, bench_now_ns());
			break;
		}
		if (bench_now_ns() > deadline) {
			fprintf(stderr, PROG ": %" PRIu64 " of %" PRIu64 " Runs have a "
			    "QuotaReserved condition: timed out\n", t.reserved, res->runs);
			res->timed_out = "reserve";
			break;
		}
		bench_sleep_ms(POLL_MS);
	}
	if (res->timed_out == NULL) {
		if (wait_quiet(o, cl, bench_now_ns() + (uint64_t)o->timeout_s * 1000000000u,
		    &s1) < 0)
			res->timed_out = "settle";
		else if (tally_runs(o, cl, &t, &res->lists) < 0 || t.reserved != res->runs)
			res->timed_out = "reserve";
	}
	measure(o, cpu0, srv0, &res->cpu_s, &res->server_cpu_s, &res->hwm_kb, &res->rss_kb);
	if (res->timed_out != NULL && stats_get(cl, &s1) < 0)
		s1 = s0;
	res->s = bench_stats_sub(&s1, &s0);
	res->reserved = t.reserved;
	res->admitted = t.admitted;
	res->waiting = t.waiting;
	check_tally(o, cl, &pf, res);
	res->measured = true;
	res->checks_ok = res->over_quota == 0 && res->short_ == 0 && res->status_mismatch == 0;
	rc_cleanup = quota_cleanup(o, rc, cl, &pf, pods0, ws, res);
	if (res->timed_out == NULL && rc_cleanup < 0)
		res->timed_out = "cleanup";
	if (res->timed_out != NULL)
		return -ETIMEDOUT;
	if (!res->checks_ok)
		fprintf(stderr, PROG ": %" PRIu64 " projects over quota, %" PRIu64 " admitted "
		    "fewer Runs than fit, %" PRIu64 " have a status that differs\n",
		    res->over_quota, res->short_, res->status_mismatch);
	return res->checks_ok ? rc_cleanup : -EPROTO;
}

static void
print_quota(const struct opts *o, const struct quota_result *res)
{
	const struct bench_stats *s = &res->s;
	double runs = res->runs > 0 ? (double)res->runs : 1;

	printf("bench: scenario=ctl-quota projects=%u runs=%" PRIu64 " nodes=%u gpus_per_run=%"
	    PRId64 " quota_gpus=%" PRId64 " reserved_s=%.3f admitted=%" PRIu64 " waiting=%"
	    PRIu64 " expected_admitted=%" PRIu64 " over_quota=%" PRIu64 " short=%" PRIu64
	    " status_mismatch=%" PRIu64 " reserved=%" PRIu64 " submit_s=%.3f"
	    " api_writes_per_run=%.2f w_pods=%.2f w_run_status=%.2f w_children=%.2f"
	    " w_project_status=%.2f w_events=%.2f w_other=%.2f conflicts=%" PRIu64
	    " api_errors=%" PRIu64
	    " controller_cpu_s=%.2f controller_peak_rss_kb=%" PRIu64 " rss_after_kb=%" PRIu64
	    " server_cpu_s=%.2f cleanup_s=%.3f clients=%u errors=%" PRIu64 " complete=%s"
	    " checks=%s\n",
	    o->projects, res->runs, o->nodes, res->run_gpus, res->quota_gpus, res->reserved_s,
	    res->admitted, res->waiting, res->expected, res->over_quota, res->short_,
	    res->status_mismatch, res->reserved, res->submit_s,
	    (double)bench_ctl_writes(s) / runs, (double)s->w[W_PODS] / runs,
	    (double)s->w[W_RUN_STATUS] / runs,
	    (double)(s->w[W_CHILDREN] + s->w[W_POLICY]) / runs,
	    (double)s->w[W_PROJECT_STATUS] / runs, (double)s->w[W_EVENTS] / runs,
	    (double)(bench_ctl_writes(s) - s->w[W_PODS] - s->w[W_RUN_STATUS] -
	    s->w[W_CHILDREN] - s->w[W_POLICY] - s->w[W_PROJECT_STATUS] - s->w[W_EVENTS]) / runs,
	    s->conflicts, s->errors, res->cpu_s, res->hwm_kb, res->rss_kb, res->server_cpu_s,
	    res->cleanup_s, o->clients, res->errors,
	    res->timed_out != NULL ? res->timed_out : "yes", res->checks_ok ? "ok" : "failed");
	(void)fflush(stdout);
}

/* ---- main ---------------------------------------------------------- */

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: proj-bench projects --kubeconfig PATH --pid CONTROLLER_PID\n"
	    "                  [--server-pid PID] [--projects P] [--members M] [--gpus G]\n"
	    "                  [--clients C] [--prefix X] [--timeout S] [--settle-ms MS]\n"
	    "       proj-bench quota --kubeconfig PATH --pid CONTROLLER_PID\n"
	    "                  [--server-pid PID] [--projects P] [--runs R] [--nodes N]\n"
	    "                  [--profile NAME] [--clients C] [--prefix X] [--timeout S]\n"
	    "                  [--settle-ms MS]\n");
}

/* 0, 1 for --help, or -EINVAL (the reason is on stderr). */
static int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "kubeconfig",	 required_argument, NULL, 'k' },
		{ "projects",	 required_argument, NULL, 'P' },
		{ "members",	 required_argument, NULL, 'm' },
		{ "runs",	 required_argument, NULL, 'r' },
		{ "nodes",	 required_argument, NULL, 'n' },
		{ "gpus",	 required_argument, NULL, 'g' },
		{ "clients",	 required_argument, NULL, 'c' },
		{ "timeout",	 required_argument, NULL, 't' },
		{ "settle-ms",	 required_argument, NULL, 's' },
		{ "pid",	 required_argument, NULL, 'p' },
		{ "server-pid",	 required_argument, NULL, 'S' },
		{ "prefix",	 required_argument, NULL, 'x' },
		{ "profile",	 required_argument, NULL, 'f' },
		{ "help",	 no_argument,	    NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned pid;
	int c, r = 0;

	*o = (struct opts){
		.projects = 100, .members = 20, .runs = 10, .nodes = 1, .gpus = 40,
		.clients = 8, .timeout_s = 300, .settle_ms = 1000, .prefix = "bench-p",
		.profile = "ctl-quota",
	};
	if (argc < 2 || (strcmp(argv[1], "projects") != 0 && strcmp(argv[1], "quota") != 0)) {
		if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
			usage(stdout);
			return 1;
		}
		usage(stderr);
		return -EINVAL;
	}
	if (strcmp(argv[1], "quota") == 0) {
		o->mode = MODE_QUOTA;
		o->timeout_s = 60;
	}
	optind = 2;
	while (r == 0 && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
			o->kubeconfig = optarg;
			break;
		case 'P':
			r = bench_parse_count(PROG, "--projects", optarg, 1, PROJECTS_MAX,
			    &o->projects);
			break;
		case 'm':
			r = bench_parse_count(PROG, "--members", optarg, 0, MEMBERS_MAX,
			    &o->members);
			break;
		case 'r':
			r = bench_parse_count(PROG, "--runs", optarg, 1, RUNS_MAX, &o->runs);
			break;
		case 'n':
			r = bench_parse_count(PROG, "--nodes", optarg, 1, 1000, &o->nodes);
			break;
		case 'g':
			r = bench_parse_count(PROG, "--gpus", optarg, 1, 100000, &o->gpus);
			break;
		case 'c':
			r = bench_parse_count(PROG, "--clients", optarg, 1, CLIENTS_MAX,
			    &o->clients);
			break;
		case 't':
			r = bench_parse_count(PROG, "--timeout", optarg, 1, 86400, &o->timeout_s);
			break;
		case 's':
			r = bench_parse_count(PROG, "--settle-ms", optarg, 0, 600000,
			    &o->settle_ms);
			break;
		case 'p':
		case 'S':
			if ((r = bench_parse_count(PROG, c == 'p' ? "--pid" : "--server-pid",
			    optarg, 1, INT32_MAX, &pid)) == 0)
				*(c == 'p' ? &o->pid : &o->server_pid) = (pid_t)pid;
			break;
		case 'x':
			o->prefix = optarg;
			break;
		case 'f':
			o->profile = optarg;
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
		fprintf(stderr, PROG ": unexpected argument \"%s\"\n", argv[optind]);
		r = -EINVAL;
	}
	if (r == 0 && (o->kubeconfig == NULL || o->pid == 0)) {
		fprintf(stderr, PROG ": --kubeconfig and --pid are required\n");
		r = -EINVAL;
	}
	/* "<prefix><i>-eval" must stay a DNS label (63). */
	if (r == 0 && (strlen(o->prefix) > 40 || o->prefix[0] == '\0')) {
		fprintf(stderr, PROG ": --prefix: 1 to 40 characters\n");
		r = -EINVAL;
	}
	if (r < 0)
		usage(stderr);
	else
		(void)snprintf(o->selector, sizeof(o->selector), "proj-bench=%s", o->prefix);
	return r;
}

int
main(int argc, char **argv)
{
	_cleanup_(kc_rest_config_freep) struct kc_rest_config *rc = NULL;
	struct opts o;
	int r;

	if ((r = parse_opts(argc, argv, &o)) != 0)
		return r < 0 ? 2 : 0;
	if (bench_rest_config(PROG, o.kubeconfig, &rc) < 0)
		return 1;
	if (o.mode == MODE_PROJECTS) {
		struct proj_result res = { 0 };

		r = scenario_projects(&o, rc, &res);
		if (res.measured)
			print_projects(&o, &res);
	} else {
		struct quota_result res = { 0 };

		r = scenario_quota(&o, rc, &res);
		if (res.measured)
			print_quota(&o, &res);
	}
	kc_transport_global_cleanup();
	return r < 0 ? 1 : 0;
}

/*
 * test_ctl_session.c: the compact pod view and every session rule: start,
 * creation order, no duplicate pods, Running (without an Event), every end
 * reason and its root cause, cleanup, suspend and resume, a session bump,
 * deadlines and the schedule timeout, automatic restarts with backoff,
 * stale objects, invalid and suspended new runs, no PodGroup API,
 * idempotence, bounded status, and allocation failures; and the same
 * rules on the Run's session clock (expect_clock_ms()) while the wall
 * clock steps an hour ahead or back.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/err.h>
#include <kc/buf.h>
#include <kc/json.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "testutil.h"
#include "../../controller/config.h"
#include "../../controller/controller.h"
#include "../../controller/model.h"
#include "../../controller/session.h"

#define T0		1800000000LL	/* seconds: "2027-01-15T08:00:00Z" */
#define T0_TEXT		"2027-01-15T08:00:00Z"
#define MAX_PODS	64

#define RUNNING		"{phase: Running, conditions: [{type: Ready, status: \"True\"}, " \
			"{type: PodScheduled, status: \"True\"}]}"
#define PENDING		"{phase: Pending, conditions: [{type: PodScheduled, status: " \
			"\"False\", reason: Unschedulable, message: \"0/8 nodes are " \
			"available: 8 Insufficient nvidia.com/gpu.\"}]}"
#define SUCCEEDED	"{phase: Succeeded, containerStatuses: [{name: main, state: " \
			"{terminated: {exitCode: 0, reason: Completed}}}]}"
#define OOM		"{phase: Failed, containerStatuses: [{name: main, state: " \
			"{terminated: {exitCode: 137, reason: OOMKilled, message: " \
			"\"CUDA out of memory\"}}}]}"
#define EXIT1		"{phase: Failed, containerStatuses: [{name: main, state: " \
			"{terminated: {exitCode: 1, reason: Error}}}]}"
#define DISRUPTED(r)	"{phase: Running, conditions: [{type: DisruptionTarget, status: " \
			"\"True\", reason: " r "}]}"

struct world {
	struct json_object	*run;
	struct ty_control	 ctl;
	struct ty_spec		*spec;
	struct ty_problems	 probs;
	struct ty_config	 cfg;
	struct ty_session_in	 in;
	struct ty_pod		*pods[MAX_PODS];
	int32_t			 expected[MAX_PODS];
	struct ty_decision	 d;
	struct ty_write_state	 ws;		/* the write policy's memory */
	struct ty_refusal	 refusal;
};

static struct json_object *
yaml(const char *text)
{
	struct json_object *o = NULL;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_yaml_parse_one(text, strlen(text), NULL, &o, &st) == 0,
	    "bad test YAML: %s\n%s", st.message, text);
	return o;
}

/* Re-reads the spec and control fields after the Run changed. */
static void
world_reload(struct world *w)
{
	w->spec = model_spec_free(w->spec);
	model_control(w->run, &w->ctl);
	if (model_validate(w->run, NULL, &w->cfg, &w->spec, &w->probs) < 0)
		w->spec = NULL;
	w->in.spec = w->spec;
}

static void
world_init(struct world *w, const char *spec)
{
	char text[2048];

	memset(w, 0, sizeof(*w));
	snprintf(text, sizeof(text), "apiVersion: trainyard.dev/v1alpha1\nkind: Run\n"
	    "metadata: {name: r1, namespace: ns, uid: run-uid, generation: 1}\n"
	    "spec: {image: x, resources: {limits: {nvidia.com/gpu: 2}}, %s}\n", spec);
	w->run = yaml(text);
	config_defaults(&w->cfg);
	w->in = (struct ty_session_in){
		.run = w->run, .ctl = &w->ctl, .problems = &w->probs, .cfg = &w->cfg,
		.pods = (const struct ty_pod *const *)w->pods, .expected = w->expected,
		.api = TY_PODGROUP_X_K8S,
		.now_ms = (uint64_t)T0 * 1000,
	};
	world_reload(w);
}

static void
world_free(struct world *w)
{
	session_decision_release(&w->d);
	for (size_t i = 0; i < w->in.npods; i++)
		cache_pod_free(w->pods[i]);
	model_spec_free(w->spec);
	config_release(&w->cfg);
	json_object_put(w->run);
}

static void
set_spec(struct world *w, const char *key, struct json_object *v)
{
	ck_assert_int_eq(kc_json_put(kc_json_get(w->run, "spec"), key, v), 0);
	world_reload(w);
}

static void
at(struct world *w, int64_t s)
{
	w->in.now_ms = (uint64_t)(T0 + s) * 1000;
}

static void
decide(struct world *w)
{
	session_decision_release(&w->d);
	ck_assert_int_eq(session_decide(&w->in, &w->d), 0);
	ck_assert_ptr_nonnull(w->d.status);
}

/* The reconciler wrote the decided status. */
static void
apply(struct world *w)
{
	ck_assert_int_eq(kc_json_put(w->run, "status", kc_json_copy(w->d.status)), 0);
}

static void
clear_pods(struct world *w)
{
	for (size_t i = 0; i < w->in.npods; i++)
		w->pods[i] = cache_pod_free(w->pods[i]);
	w->in.npods = 0;
}

static void
add_pod(struct world *w, int64_t session, int idx, const char *status, bool deleting)
{
	char text[1024];
	struct json_object *o;

	snprintf(text, sizeof(text), "metadata: {name: r1-%d, uid: pod-uid-%d, "
	    "resourceVersion: \"7\", labels: {trainyard.dev/session: \"%" PRId64 "\", "
	    "trainyard.dev/node-index: \"%d\"}%s}\nspec: {nodeName: gpu-%d}\nstatus: %s\n",
	    idx, idx, session, idx, deleting ? ", deletionTimestamp: " T0_TEXT : "", idx,
	    status);
	o = yaml(text);
	ck_assert_uint_lt(w->in.npods, MAX_PODS);
	ck_assert_int_eq(cache_pod_from_json(o, &w->pods[w->in.npods++]), 0);
	json_object_put(o);
}

static void
all_pods(struct world *w, int64_t session, int n, const char *status)
{
	for (int i = 0; i < n; i++)
		add_pod(w, session, i, status, false);
}

static void
children(struct world *w, int64_t session)
{
	struct ty_child c = { .exists = true, .session = session };

	kc_strlcpy(c.uid, "child-uid", sizeof(c.uid));
	w->in.podgroup = w->in.service = w->in.netpol = c;
}

static void
no_children(struct world *w)
{
	memset(&w->in.podgroup, 0, sizeof(w->in.podgroup));
	memset(&w->in.service, 0, sizeof(w->in.service));
	memset(&w->in.netpol, 0, sizeof(w->in.netpol));
}

static const char *
st_str(const struct world *w, const char *key)
{
	return kc_json_str(w->d.status, key);
}

static int64_t
st_int(const struct world *w, const char *key)
{
	return kc_json_int(w->d.status, -1, key);
}

static const struct json_object *
cond(const struct world *w, const char *type)
{
	struct json_object *c = kc_json_get(w->d.status, "conditions");

	for (size_t i = 0; c != NULL && i < json_object_array_length(c); i++)
		if (strcmp(kc_json_str(json_object_array_get_idx(c, i), "type"), type) == 0)
			return json_object_array_get_idx(c, i);
	ck_abort_msg("no condition %s", type);
	return NULL;
}

static void
assert_cond(const struct world *w, const char *type, const char *status, const char *reason)
{
	const struct json_object *c = cond(w, type);

	ck_assert_str_eq(kc_json_str(c, "status"), status);
	ck_assert_str_eq(kc_json_str(c, "reason"), reason);
	ck_assert_int_eq(kc_json_int(c, -1, "observedGeneration"), w->ctl.generation);
}

static bool
has_event(const struct world *w, const char *reason)
{
	for (size_t i = 0; i < w->d.nevents; i++)
		if (strcmp(w->d.events[i].reason, reason) == 0)
			return true;
	return false;
}

static size_t
ndeletes(const struct world *w, enum ty_kind kind)
{
	size_t n = 0;

	for (size_t i = 0; i < w->d.ndeletes; i++)
		n += w->d.deletes[i].kind == kind;
	return n;
}

/* A run started at T0 whose session 1 has all four nodes in 'status'. */
static void
running_world(struct world *w, const char *spec, const char *status)
{
	world_init(w, spec);
	decide(w);
	apply(w);
	children(w, 1);
	all_pods(w, 1, kc_json_int(w->run, 0, "spec", "nodes"), status);
}

/* ------------------------------------------------------------------ */

START_TEST(test_start)
{
	struct world w;

	world_init(&w, "nodes: 4");
	decide(&w);
	ck_assert(w.d.status_changed);
	ck_assert_str_eq(st_str(&w, "phase"), "Pending");
	ck_assert_int_eq(st_int(&w, "session"), 1);
	ck_assert_int_eq(st_int(&w, "restarts"), 0);
	ck_assert_str_eq(st_str(&w, "sessionStartTime"), T0_TEXT);
	ck_assert_str_eq(st_str(&w, "readyNodes"), "0/4");
	ck_assert_int_eq(st_int(&w, "gpus"), 8);
	ck_assert_int_eq(kc_json_int(w.d.status, -1, "nodes", "pending"), 4);
	ck_assert_int_eq(st_int(&w, "observedGeneration"), 1);
	ck_assert_int_eq(w.d.session, 1);
	ck_assert(w.d.create_podgroup && w.d.create_service && w.d.create_netpol);
	/* Pods wait until the PodGroup, Service and NetworkPolicy exist. */
	ck_assert_uint_eq(w.d.ncreate_pods, 0);
	ck_assert_uint_eq(w.d.ndeletes, 0);
	/* The only Event of a session start (each one is an API write). */
	ck_assert(has_event(&w, "SessionStarted"));
	ck_assert_uint_eq(w.d.nevents, 1);
	assert_cond(&w, "Valid", "True", "Valid");
	assert_cond(&w, "GangScheduling", "True", "PodGroup");
	assert_cond(&w, "Scheduled", "False", "Pending");
	assert_cond(&w, "Running", "False", "Pending");
	assert_cond(&w, "Finished", "False", "SessionActive");
	assert_cond(&w, "CleanedUp", "False", "SessionActive");
	ck_assert_str_eq(kc_json_str(cond(&w, "Valid"), "lastTransitionTime"), T0_TEXT);
	/* The next reconcile, before the cache shows the children, creates them again. */
	apply(&w);
	at(&w, 1);
	decide(&w);
	ck_assert(w.d.create_podgroup && w.d.create_service && w.d.create_netpol);
	ck_assert_uint_eq(w.d.ncreate_pods, 0);
	ck_assert(!w.d.status_changed);
	ck_assert_uint_eq(w.d.nevents, 0);
	world_free(&w);
}
END_TEST

START_TEST(test_pods_created_once)
{
	struct world w;

	world_init(&w, "nodes: 4");
	decide(&w);
	apply(&w);
	children(&w, 1);
	decide(&w);
	ck_assert(!w.d.create_podgroup && !w.d.create_service && !w.d.create_netpol);
	ck_assert_uint_eq(w.d.ncreate_pods, 4);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(w.d.create_pods[i], i);
	/* No duplicate pods: created pods the cache does not show are not created. */
	w.expected[0] = 1;
	w.expected[1] = 2;
	w.in.nexpected = 2;
	add_pod(&w, 1, 3, PENDING, false);
	decide(&w);
	ck_assert_uint_eq(w.d.ncreate_pods, 1);
	ck_assert_int_eq(w.d.create_pods[0], 0);
	ck_assert(!kc_json_bool(w.d.status, true, "allPodsCreated"));
	world_free(&w);
}
END_TEST

START_TEST(test_running)
{
	struct world w;

	running_world(&w, "nodes: 4", RUNNING);
	at(&w, 30);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "phase"), "Running");
	ck_assert_str_eq(st_str(&w, "readyNodes"), "4/4");
	ck_assert(kc_json_bool(w.d.status, false, "allPodsCreated"));
	ck_assert_int_eq(kc_json_int(w.d.status, -1, "nodes", "running"), 4);
	ck_assert_uint_eq(w.d.ncreate_pods, 0);
	ck_assert_uint_eq(w.d.ndeletes, 0);
	/* No Event: the phase and the condition's transition time say it. */
	ck_assert(!has_event(&w, "Running"));
	ck_assert_uint_eq(w.d.nevents, 0);
	assert_cond(&w, "Scheduled", "True", "AllNodesScheduled");
	assert_cond(&w, "Running", "True", "AllNodesRunning");
	ck_assert_str_eq(kc_json_str(cond(&w, "Running"), "lastTransitionTime"),
	    "2027-01-15T08:00:30Z");
	/* Nothing changes: no status write, no event, same transition time. */
	apply(&w);
	at(&w, 90);
	decide(&w);
	ck_assert(!w.d.status_changed);
	ck_assert_uint_eq(w.d.nevents, 0);
	ck_assert_uint_eq(w.d.next_check_ms, 0);
	world_free(&w);
}
END_TEST

START_TEST(test_succeeded_and_cleanup)
{
	struct world w;

	running_world(&w, "nodes: 4", SUCCEEDED);
	at(&w, 60);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "phase"), "Succeeded");
	ck_assert_str_eq(st_str(&w, "reason"), "Succeeded");
	ck_assert_str_eq(st_str(&w, "message"), "all 4 nodes finished successfully");
	ck_assert_str_eq(st_str(&w, "sessionEndTime"), "2027-01-15T08:01:00Z");
	ck_assert_ptr_null(kc_json_get(w.d.status, "failedNodes"));
	ck_assert_uint_eq(ndeletes(&w, TY_KIND_POD), 4);
	ck_assert_uint_eq(ndeletes(&w, TY_KIND_PODGROUP), 1);
	ck_assert_uint_eq(ndeletes(&w, TY_KIND_SERVICE), 1);
	ck_assert_uint_eq(ndeletes(&w, TY_KIND_NETPOL), 1);
	ck_assert_str_eq(w.d.deletes[3].name, "r1-0");
	ck_assert_str_eq(w.d.deletes[3].uid, "pod-uid-0");
	ck_assert_str_eq(w.d.deletes[0].uid, "child-uid");
	ck_assert(has_event(&w, "SessionSucceeded"));
	assert_cond(&w, "Finished", "True", "Succeeded");
	assert_cond(&w, "Running", "False", "SessionEnded");
	assert_cond(&w, "CleanedUp", "False", "Deleting");
	ck_assert_int_eq(json_object_array_length(kc_json_get(w.d.status, "history")), 1);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(w.d.status,
	    "history"), 0), "reason"), "Succeeded");
	ck_assert_uint_eq(w.d.ncreate_pods, 0);
	apply(&w);
	/* Deleting objects are not deleted again. */
	clear_pods(&w);
	add_pod(&w, 1, 2, SUCCEEDED, true);
	w.in.service.deleting = true;
	no_children(&w);
	decide(&w);
	ck_assert_uint_eq(w.d.ndeletes, 0);
	assert_cond(&w, "CleanedUp", "False", "Deleting");
	clear_pods(&w);
	decide(&w);
	assert_cond(&w, "CleanedUp", "True", "AllDeleted");
	ck_assert_str_eq(st_str(&w, "phase"), "Succeeded");
	ck_assert(!w.d.create_service);
	ck_assert_uint_eq(w.d.next_check_ms, 0);
	world_free(&w);
}
END_TEST

struct end_case {
	const char	*name;
	const char	*statuses[4];	/* NULL: RUNNING */
	bool		 deleting[4];
	const char	*reason;
	const char	*message;
};

static const struct end_case end_cases[] = {
	{ "oom", { NULL, NULL, NULL, OOM }, { false }, "PodFailed",
	    "node 3 exited with code 137 (OOMKilled)" },
	{ "three failed", { NULL, EXIT1, OOM, EXIT1 }, { false }, "PodFailed",
	    "node 1 exited with code 1 (Error); 2 more nodes failed" },
	{ "preempted first", { EXIT1, DISRUPTED("PreemptionByScheduler"), NULL, NULL },
	    { false }, "Preempted", "node 1 (pod r1-1 on gpu-1) was preempted by a "
	    "higher-priority workload; 1 more node failed" },
	{ "evicted", { NULL, NULL, DISRUPTED("EvictionByEvictionAPI"), NULL }, { false },
	    "Evicted", "node 2 was evicted from gpu-2 (a drain or the eviction API)" },
	{ "taint", { NULL, DISRUPTED("DeletionByTaintManager"), NULL, NULL }, { false },
	    "Evicted", "node 1 was evicted from gpu-1, which is not ready or unreachable" },
	{ "node gone", { NULL, NULL, NULL, DISRUPTED("DeletionByPodGC") }, { false },
	    "NodeLost", "node 3 lost its machine gpu-3 (the node is gone)" },
	{ "kubelet evicted", { "{phase: Failed, reason: Evicted, message: \"The node was "
	    "low on resource: memory.\"}", NULL, NULL, NULL }, { false }, "Evicted",
	    "node 0 was evicted from gpu-0: The node was low on resource: memory." },
	{ "deleted", { NULL, NULL, NULL, NULL }, { false, true, false, false },
	    "PodDeleted", "the pod of node 1 (r1-1) was deleted" },
	{ "failed without exit", { "{phase: Failed, reason: UnexpectedAdmissionError, "
	    "message: \"Allocate failed\"}", NULL, NULL, NULL }, { false }, "PodFailed",
	    "node 0 failed on gpu-0: Allocate failed" },
};

START_TEST(test_end_reasons)
{
	const struct end_case *ec = &end_cases[_i];
	struct world w;
	const struct json_object *fn;

	world_init(&w, "nodes: 4");
	decide(&w);
	apply(&w);
	children(&w, 1);
	for (int i = 0; i < 4; i++)
		add_pod(&w, 1, i, ec->statuses[i] != NULL ? ec->statuses[i] : RUNNING,
		    ec->deleting[i]);
	at(&w, 100);
	decide(&w);
	ck_assert_msg(strcmp(st_str(&w, "reason"), ec->reason) == 0, "%s: %s", ec->name,
	    st_str(&w, "reason"));
	ck_assert_str_eq(st_str(&w, "phase"), "Failed");
	ck_assert_str_eq(st_str(&w, "message"), ec->message);
	ck_assert(has_event(&w, ec->reason));
	ck_assert(w.d.events[0].warning);
	fn = kc_json_get(w.d.status, "failedNodes");
	ck_assert_ptr_nonnull(fn);
	assert_cond(&w, "Finished", "True", ec->reason);
	/* Pods already being deleted are not deleted again. */
	ck_assert_uint_eq(ndeletes(&w, TY_KIND_POD), 4 - (ec->deleting[1] ? 1 : 0));
	world_free(&w);
}
END_TEST

START_TEST(test_failed_nodes)
{
	struct world w;
	const struct json_object *fn, *e;

	running_world(&w, "nodes: 4", RUNNING);
	clear_pods(&w);
	add_pod(&w, 1, 0, RUNNING, false);
	add_pod(&w, 1, 1, RUNNING, false);
	add_pod(&w, 1, 2, EXIT1, false);
	add_pod(&w, 1, 3, OOM, false);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "message"), "node 2 exited with code 1 (Error); 1 more "
	    "node failed");
	fn = kc_json_get(w.d.status, "failedNodes");
	ck_assert_int_eq(json_object_array_length(fn), 2);
	e = json_object_array_get_idx(fn, 1);
	ck_assert_int_eq(kc_json_int(e, -1, "index"), 3);
	ck_assert_str_eq(kc_json_str(e, "pod"), "r1-3");
	ck_assert_str_eq(kc_json_str(e, "node"), "gpu-3");
	ck_assert_int_eq(kc_json_int(e, -1, "exitCode"), 137);
	ck_assert_str_eq(kc_json_str(e, "reason"), "OOMKilled");
	ck_assert_str_eq(kc_json_str(e, "message"), "CUDA out of memory");
	e = json_object_array_get_idx(fn, 0);
	ck_assert_str_eq(kc_json_str(e, "message"), "node 2 exited with code 1 (Error)");
	world_free(&w);
}
END_TEST

START_TEST(test_missing_pod_after_created)
{
	struct world w;

	running_world(&w, "nodes: 4", RUNNING);
	decide(&w);
	apply(&w);
	ck_assert(kc_json_bool(w.d.status, false, "allPodsCreated"));
	/* Pod 2 vanished from the cache: someone deleted it; it is not re-created. */
	clear_pods(&w);
	add_pod(&w, 1, 0, RUNNING, false);
	add_pod(&w, 1, 1, RUNNING, false);
	add_pod(&w, 1, 3, RUNNING, false);
	decide(&w);
	ck_assert_uint_eq(w.d.ncreate_pods, 0);
	ck_assert_str_eq(st_str(&w, "reason"), "PodDeleted");
	ck_assert_str_eq(st_str(&w, "message"), "the pod of node 2 (r1-2) was deleted");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(w.d.status,
	    "failedNodes"), 0), "reason"), "PodDeleted");
	world_free(&w);
}
END_TEST

/* A pod deleted by hand: the kubelet's exit 143 is the deletion's, not a failure. */
START_TEST(test_deleted_pod_killed)
{
	struct world w;

	running_world(&w, "nodes: 2", RUNNING);
	decide(&w);
	apply(&w);
	clear_pods(&w);
	add_pod(&w, 1, 0, RUNNING, false);
	add_pod(&w, 1, 1, "{phase: Failed, containerStatuses: [{name: main, state: "
	    "{terminated: {exitCode: 143, reason: Error}}}]}", true);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "reason"), "PodDeleted");
	ck_assert_str_eq(st_str(&w, "message"), "the pod of node 1 (r1-1) was deleted");
	world_free(&w);

	/* A program that failed on its own and was then deleted keeps its exit code. */
	running_world(&w, "nodes: 2", RUNNING);
	decide(&w);
	apply(&w);
	clear_pods(&w);
	add_pod(&w, 1, 0, RUNNING, false);
	add_pod(&w, 1, 1, EXIT1, true);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "reason"), "PodFailed");
	ck_assert_str_eq(st_str(&w, "message"), "node 1 exited with code 1 (Error)");
	world_free(&w);
}
END_TEST

/* A pod that left the cache: its last view (the informer's delete) says why. */
START_TEST(test_gone_pod_last_view)
{
	struct world w;
	struct ty_pod *gone[1] = { NULL };
	struct json_object *o;

	running_world(&w, "nodes: 2", RUNNING);
	decide(&w);
	apply(&w);
	clear_pods(&w);
	add_pod(&w, 1, 0, RUNNING, false);
	o = yaml("metadata: {name: r1-1, uid: pod-uid-1, labels: {trainyard.dev/session: "
	    "\"1\", trainyard.dev/node-index: \"1\"}}\nspec: {nodeName: gpu-1}\n"
	    "status: {phase: Failed, conditions: [{type: DisruptionTarget, status: "
	    "\"True\", reason: DeletionByPodGC}]}\n");
	ck_assert_int_eq(cache_pod_from_json(o, &gone[0]), 0);
	json_object_put(o);
	w.in.gone = (const struct ty_pod *const *)gone;
	w.in.ngone = 1;
	decide(&w);
	ck_assert_str_eq(st_str(&w, "reason"), "NodeLost");
	ck_assert_str_eq(st_str(&w, "message"), "node 1 lost its machine gpu-1 (the node "
	    "is gone)");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(w.d.status,
	    "failedNodes"), 0), "reason"), "NodeLost");
	w.in.gone = NULL;
	w.in.ngone = 0;
	cache_pod_free(gone[0]);
	world_free(&w);
}
END_TEST

START_TEST(test_suspend_resume)
{
	struct world w;

	running_world(&w, "nodes: 2", RUNNING);
	set_spec(&w, "suspend", json_object_new_boolean(1));
	at(&w, 10);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "phase"), "Stopped");
	ck_assert_str_eq(st_str(&w, "reason"), "Suspended");
	ck_assert(has_event(&w, "SessionStopped"));
	ck_assert(!w.d.events[0].warning);
	ck_assert_uint_eq(ndeletes(&w, TY_KIND_POD), 2);
	apply(&w);
	clear_pods(&w);
	no_children(&w);
	decide(&w);
	assert_cond(&w, "CleanedUp", "True", "AllDeleted");
	ck_assert_str_eq(st_str(&w, "phase"), "Stopped");
	ck_assert(!w.d.create_service);
	apply(&w);
	set_spec(&w, "suspend", json_object_new_boolean(0));
	at(&w, 20);
	decide(&w);
	ck_assert_int_eq(st_int(&w, "session"), 2);
	ck_assert_str_eq(st_str(&w, "phase"), "Pending");
	ck_assert_ptr_null(st_str(&w, "reason"));
	ck_assert_ptr_null(st_str(&w, "sessionEndTime"));
	ck_assert(w.d.create_service);
	ck_assert_int_eq(w.d.session, 2);
	world_free(&w);
}
END_TEST

/*
 * A pod created for the session that the cache never showed when the
 * session ends: it exists all the same, so it is deleted by name and
 * CleanedUp waits for it, and no next session starts meanwhile. Before,
 * the cleanup counted only what the cache showed and reported CleanedUp
 * True with the pod still there.
 */
START_TEST(test_cleanup_waits_for_unseen_pods)
{
	struct world w;
	const struct ty_delete *del = NULL;

	world_init(&w, "nodes: 3");
	decide(&w);
	apply(&w);
	children(&w, 1);
	add_pod(&w, 1, 0, RUNNING, false);
	add_pod(&w, 1, 1, RUNNING, false);
	w.expected[0] = 2;			/* created, not cached yet */
	w.in.nexpected = 1;
	set_spec(&w, "suspend", json_object_new_boolean(1));
	at(&w, 10);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "reason"), "Suspended");
	ck_assert_uint_eq(ndeletes(&w, TY_KIND_POD), 3);
	for (size_t i = 0; i < w.d.ndeletes; i++)
		if (strcmp(w.d.deletes[i].name, "r1-2") == 0)
			del = &w.d.deletes[i];
	ck_assert_ptr_nonnull(del);
	ck_assert_str_eq(del->uid, "");
	ck_assert_int_eq(del->unseen_index, 2);
	ck_assert_int_eq(w.d.deletes[0].unseen_index, -1);
	apply(&w);
	/* The cached pods and children are gone; the unseen one is not known gone. */
	clear_pods(&w);
	no_children(&w);
	decide(&w);
	assert_cond(&w, "CleanedUp", "False", "Deleting");
	ck_assert_str_eq(kc_json_str(cond(&w, "CleanedUp"), "message"), "waiting for 1 "
	    "objects of session 1 to be deleted");
	ck_assert_uint_eq(ndeletes(&w, TY_KIND_POD), 1);
	apply(&w);
	set_spec(&w, "suspend", json_object_new_boolean(0));
	decide(&w);
	ck_assert_int_eq(st_int(&w, "session"), 1);	/* no start before the cleanup */
	/* A delete found it gone (the expectation is forgotten): cleaned up. */
	w.in.nexpected = 0;
	decide(&w);
	ck_assert_int_eq(st_int(&w, "session"), 2);
	world_free(&w);
}
END_TEST

START_TEST(test_session_bump)
{
	struct world w;

	running_world(&w, "nodes: 2", RUNNING);
	set_spec(&w, "session", json_object_new_int(5));
	/* The new spec (3 nodes) applies to the next session only. */
	set_spec(&w, "nodes", json_object_new_int(3));
	decide(&w);
	ck_assert_str_eq(st_str(&w, "phase"), "Stopped");
	ck_assert_str_eq(st_str(&w, "reason"), "NewSession");
	ck_assert_str_eq(st_str(&w, "message"), "spec.session asks for session 5");
	ck_assert_int_eq(kc_json_int(w.d.status, -1, "nodes", "total"), 2);
	ck_assert_uint_eq(w.d.ndeletes, 5);
	apply(&w);
	clear_pods(&w);
	no_children(&w);
	decide(&w);
	ck_assert_int_eq(st_int(&w, "session"), 5);
	ck_assert_int_eq(kc_json_int(w.d.status, -1, "nodes", "total"), 3);
	ck_assert_int_eq(st_int(&w, "gpus"), 6);
	ck_assert_int_eq(json_object_array_length(kc_json_get(w.d.status, "history")), 1);
	world_free(&w);
}
END_TEST

START_TEST(test_deadline)
{
	struct world w;

	running_world(&w, "nodes: 2, activeDeadlineSeconds: 3600", RUNNING);
	at(&w, 100);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "phase"), "Running");
	ck_assert_uint_eq(w.d.next_check_ms, (uint64_t)(T0 + 3600) * 1000);
	apply(&w);
	at(&w, 3600);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "phase"), "Failed");
	ck_assert_str_eq(st_str(&w, "reason"), "DeadlineExceeded");
	ck_assert_str_eq(st_str(&w, "message"), "the session ran longer than "
	    "activeDeadlineSeconds (3600s)");
	ck_assert_uint_eq(ndeletes(&w, TY_KIND_POD), 2);
	world_free(&w);
}
END_TEST

/* A Run read at v1beta1: the message names its field. */
START_TEST(test_deadline_v1beta1)
{
	struct world w;

	running_world(&w, "nodes: 2, activeDeadlineSeconds: 60", RUNNING);
	apply(&w);
	w.ctl.v1beta1 = true;
	at(&w, 60);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "reason"), "DeadlineExceeded");
	ck_assert_str_eq(st_str(&w, "message"), "the session ran longer than "
	    "deadlines.activeSeconds (60s)");
	world_free(&w);
}
END_TEST

START_TEST(test_schedule_timeout)
{
	struct world w;

	world_init(&w, "nodes: 4, scheduleTimeoutSeconds: 300, activeDeadlineSeconds: 100000");
	decide(&w);
	ck_assert_uint_eq(w.d.next_check_ms, (uint64_t)(T0 + 300) * 1000);
	apply(&w);
	children(&w, 1);
	add_pod(&w, 1, 0, RUNNING, false);
	add_pod(&w, 1, 1, RUNNING, false);
	add_pod(&w, 1, 2, PENDING, false);
	at(&w, 299);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "phase"), "Pending");
	ck_assert_uint_eq(w.d.next_check_ms, (uint64_t)(T0 + 300) * 1000);
	ck_assert_str_eq(kc_json_str(cond(&w, "Scheduled"), "message"), "2 of 4 nodes "
	    "scheduled; 0/8 nodes are available: 8 Insufficient nvidia.com/gpu.");
	apply(&w);
	at(&w, 300);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "reason"), "Unschedulable");
	ck_assert_str_eq(st_str(&w, "message"), "2 of 4 nodes running after 300s "
	    "(scheduleTimeoutSeconds); 2 pending, 1 of them not created; node 2: 0/8 nodes "
	    "are available: 8 Insufficient nvidia.com/gpu.");
	world_free(&w);
}
END_TEST

START_TEST(test_timeout_after_running)
{
	struct world w;

	/* Once the gang ran, the schedule timeout no longer applies. */
	running_world(&w, "nodes: 2, scheduleTimeoutSeconds: 60", RUNNING);
	decide(&w);
	apply(&w);
	clear_pods(&w);
	add_pod(&w, 1, 0, RUNNING, false);
	add_pod(&w, 1, 1, SUCCEEDED, false);
	at(&w, 1000);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "phase"), "Running");
	ck_assert_uint_eq(w.d.next_check_ms, 0);
	world_free(&w);
}
END_TEST

/* Ends session 1 with 'status' on every pod, cleans up, returns at T0+100. */
static void
ended_world(struct world *w, const char *spec, const char *status)
{
	running_world(w, spec, status);
	at(w, 100);
	decide(w);
	apply(w);
	clear_pods(w);
	no_children(w);
}

START_TEST(test_restart_on_preemption)
{
	struct world w;

	ended_world(&w, "nodes: 2, restartPolicy: OnPreemption, maxRestarts: 2",
	    DISRUPTED("PreemptionByScheduler"));
	ck_assert_str_eq(st_str(&w, "reason"), "Preempted");
	ck_assert(has_event(&w, "RestartScheduled"));
	/* Backoff: base 10 s for the first restart. */
	decide(&w);
	ck_assert_int_eq(st_int(&w, "session"), 1);
	ck_assert_uint_eq(w.d.next_check_ms, (uint64_t)(T0 + 110) * 1000);
	apply(&w);
	at(&w, 110);
	decide(&w);
	ck_assert_int_eq(st_int(&w, "session"), 2);
	ck_assert_int_eq(st_int(&w, "restarts"), 1);
	ck_assert(w.d.create_podgroup);
	apply(&w);
	/* The second preemption waits 20 s; the third is not restarted. */
	children(&w, 2);
	all_pods(&w, 2, 2, DISRUPTED("PreemptionByKubeScheduler"));
	at(&w, 200);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "reason"), "Preempted");
	apply(&w);
	clear_pods(&w);
	no_children(&w);
	decide(&w);
	ck_assert_uint_eq(w.d.next_check_ms, (uint64_t)(T0 + 220) * 1000);
	at(&w, 220);
	decide(&w);
	ck_assert_int_eq(st_int(&w, "session"), 3);
	ck_assert_int_eq(st_int(&w, "restarts"), 2);
	apply(&w);
	children(&w, 3);
	all_pods(&w, 3, 2, DISRUPTED("PreemptionByScheduler"));
	at(&w, 300);
	decide(&w);
	ck_assert(!has_event(&w, "RestartScheduled"));
	apply(&w);
	clear_pods(&w);
	no_children(&w);
	at(&w, 10000);
	decide(&w);
	ck_assert_int_eq(st_int(&w, "session"), 3);
	ck_assert_uint_eq(w.d.next_check_ms, 0);
	ck_assert_int_eq(json_object_array_length(kc_json_get(w.d.status, "history")), 3);
	world_free(&w);
}
END_TEST

struct restart_case {
	const char	*policy;
	const char	*status;
	bool		 restarts;
};

static const struct restart_case restart_cases[] = {
	{ "Never", DISRUPTED("PreemptionByScheduler"), false },
	{ "OnPreemption", DISRUPTED("PreemptionByScheduler"), true },
	{ "OnPreemption", DISRUPTED("DeletionByPodGC"), true },
	{ "OnPreemption", DISRUPTED("EvictionByEvictionAPI"), true },
	{ "OnPreemption", OOM, false },
	{ "OnFailure", OOM, true },
	{ "OnFailure", DISRUPTED("DeletionByTaintManager"), true },
	{ "OnFailure", SUCCEEDED, false },
};

START_TEST(test_restart_policy)
{
	const struct restart_case *rc = &restart_cases[_i];
	struct world w;
	char spec[128];

	snprintf(spec, sizeof(spec), "nodes: 2, restartPolicy: %s", rc->policy);
	ended_world(&w, spec, rc->status);
	at(&w, 100000);
	decide(&w);
	ck_assert_int_eq(st_int(&w, "session"), rc->restarts ? 2 : 1);
	world_free(&w);
}
END_TEST

/* ---- steps of the wall clock --------------------------------------------- */

/*
 * reconcile_run.c's now_ms: the Run's session clock. The fake wall clock
 * steps by step_ms (an hour ahead or back) 'at_s' seconds into the test;
 * the monotonic clock moves one second per look.
 */
static const int64_t clock_steps[] = { 3600 * 1000, -3600 * 1000 };

struct stepped {
	struct expect	*x;
	int64_t		 step_ms;
	int64_t		 at_s;
	int64_t		 t;		/* seconds of monotonic time so far */
};

static void
stepped_init(struct stepped *sc, int64_t step_ms, int64_t at_s)
{
	*sc = (struct stepped){ .step_ms = step_ms, .at_s = at_s };
	fake_clock_install(1000000);
	ck_assert_int_eq(expect_new(&sc->x), 0);
}

/* A Run of 'spec' whose first session starts on the session clock, children made. */
static void
stepped_world(struct stepped *sc, struct world *w, const char *spec)
{
	world_init(w, spec);
	w->in.now_ms = expect_clock_ms(sc->x, "ns/r1");
	decide(w);
	apply(w);
	children(w, 1);
}

static void
stepped_free(struct stepped *sc)
{
	sc->x = expect_free(sc->x);
	fake_clock_uninstall();
}

/* One second on, maybe the step, then now_ms as reconcile_run.c reads it. */
static void
stepped_tick(struct stepped *sc, struct world *w)
{
	fake_clock_advance(1000);
	if (++sc->t == sc->at_s)
		fake_clock_step_wall(sc->step_ms);
	w->in.now_ms = expect_clock_ms(sc->x, "ns/r1");
}

/* Decides with the raw wall clock instead: what the step does to it. */
static const char *
reason_on_wall_clock(struct world *w)
{
	static char reason[64];
	struct ty_session_in in = w->in;
	struct ty_decision d = { 0 };

	in.now_ms = (uint64_t)kc_clock_wall_us() / 1000;
	ck_assert_int_eq(session_decide(&in, &d), 0);
	kc_strlcpy(reason, kc_json_str(d.status, "reason") != NULL ?
	    kc_json_str(d.status, "reason") : "", sizeof(reason));
	session_decision_release(&d);
	return reason;
}

/*
 * Looks once a second while the phase stays 'phase' (at most 'limit' s);
 * the seconds it took. At the step, the same look on the raw wall clock
 * would end the session with 'reason' when the step is ahead (at once)
 * and not when it is back; 'deadline_s' > 0: each look's timed check is
 * that deadline.
 */
static int64_t
stepped_run(struct stepped *sc, struct world *w, const char *phase, const char *reason,
    int64_t limit, int64_t deadline_s)
{
	for (;;) {
		stepped_tick(sc, w);
		decide(w);
		if (strcmp(st_str(w, "phase"), phase) != 0)
			return sc->t;
		if (deadline_s > 0)
			ck_assert_uint_eq(w->d.next_check_ms - w->in.now_ms,
			    (uint64_t)(deadline_s - sc->t) * 1000);
		if (sc->t == sc->at_s)
			ck_assert_str_eq(reason_on_wall_clock(w), sc->step_ms > 0 ? reason : "");
		apply(w);
		ck_assert_int_lt(sc->t, limit);
	}
}

/*
 * An 8 s deadline ends the session after 8 s of real time, and a 5 s
 * schedule timeout a pending one after 5 s, whether the wall clock stepped
 * an hour ahead (on the wall clock alone they would end at once) or back
 * (they would overrun by the hour).
 */
static const struct timed_case {
	const char	*spec;
	const char	*pod1;		/* the second pod's status */
	const char	*phase;		/* while it lasts */
	const char	*reason;	/* its end */
	int64_t		 step_at_s, end_s, deadline_s;
} timed_cases[] = {
	{ "nodes: 2, activeDeadlineSeconds: 8", RUNNING, "Running", "DeadlineExceeded", 3, 8,
	    8 },
	{ "nodes: 2, scheduleTimeoutSeconds: 5", PENDING, "Pending", "Unschedulable", 2, 5,
	    0 },
};

START_TEST(test_timeouts_across_wall_steps)
{
	const struct timed_case *tc = &timed_cases[_i / KC_ARRAY_SIZE(clock_steps)];
	struct stepped sc;
	struct world w;

	stepped_init(&sc, clock_steps[_i % KC_ARRAY_SIZE(clock_steps)], tc->step_at_s);
	stepped_world(&sc, &w, tc->spec);
	add_pod(&w, 1, 0, RUNNING, false);
	add_pod(&w, 1, 1, tc->pod1, false);
	ck_assert_int_eq(stepped_run(&sc, &w, tc->phase, tc->reason, tc->end_s,
	    tc->deadline_s), tc->end_s);
	ck_assert_str_eq(st_str(&w, "reason"), tc->reason);
	world_free(&w);
	stepped_free(&sc);
}
END_TEST

/*
 * The restart backoff (1 s base, here 4 s) after a failure waits its time,
 * not an hour more and not none; the next session's start is written on
 * the same clock, so its deadline is measured from it.
 */
START_TEST(test_restart_backoff_across_wall_steps)
{
	struct stepped sc;
	struct world w;

	stepped_init(&sc, clock_steps[_i], 1);
	stepped_world(&sc, &w, "nodes: 2, restartPolicy: OnFailure, activeDeadlineSeconds: 60");
	w.cfg.restart_backoff_base_ms = 4000;	/* read when the session ends */
	all_pods(&w, 1, 2, EXIT1);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "reason"), "PodFailed");
	apply(&w);
	clear_pods(&w);
	no_children(&w);
	for (;;) {
		stepped_tick(&sc, &w);
		decide(&w);
		if (st_int(&w, "session") == 2)
			break;
		apply(&w);
		ck_assert_int_lt(sc.t, 4);
	}
	ck_assert_int_eq(sc.t, 4);
	ck_assert_uint_eq(w.d.next_check_ms - w.in.now_ms, 60 * 1000);
	world_free(&w);
	stepped_free(&sc);
}
END_TEST

/* Nothing timed: the anchor goes, and the next look reads the wall clock. */
START_TEST(test_session_clock_released)
{
	struct expect *x = NULL;
	uint64_t wall0, c;

	fake_clock_install(1000000);
	ck_assert_int_eq(expect_new(&x), 0);
	wall0 = (uint64_t)kc_clock_wall_us() / 1000;
	ck_assert_uint_eq(expect_clock_ms(x, "ns/r1"), wall0);
	fake_clock_step_wall(-3600 * 1000);
	fake_clock_advance(1500);
	ck_assert_uint_eq(expect_clock_ms(x, "ns/r1"), wall0 + 1500);
	/* Another Run looks for the first time: the wall clock, stepped. */
	ck_assert_uint_eq(expect_clock_ms(x, "ns/r2"), wall0 + 1500 - 3600 * 1000);
	expect_clock_release(x, "ns/r1");
	c = expect_clock_ms(x, "ns/r1");
	ck_assert_uint_eq(c, wall0 + 1500 - 3600 * 1000);
	x = expect_free(x);
	fake_clock_uninstall();
}
END_TEST

START_TEST(test_stale_objects)
{
	struct world w;

	world_init(&w, "nodes: 2, session: 2");
	ck_assert_int_eq(kc_json_put(w.run, "status", yaml("{session: 2, phase: Pending, "
	    "sessionStartTime: " T0_TEXT ", nodes: {total: 2}}")), 0);
	children(&w, 1);
	w.in.netpol.session = 2;
	add_pod(&w, 1, 0, RUNNING, false);
	decide(&w);
	/* Session 1's PodGroup, Service and pod go; the new NetworkPolicy stays. */
	ck_assert_uint_eq(ndeletes(&w, TY_KIND_PODGROUP), 1);
	ck_assert_uint_eq(ndeletes(&w, TY_KIND_SERVICE), 1);
	ck_assert_uint_eq(ndeletes(&w, TY_KIND_NETPOL), 0);
	ck_assert_uint_eq(ndeletes(&w, TY_KIND_POD), 1);
	ck_assert(!w.d.create_netpol);
	ck_assert_uint_eq(w.d.ncreate_pods, 0);
	world_free(&w);
}
END_TEST

START_TEST(test_invalid_new_run)
{
	struct world w;

	world_init(&w, "nodes: 0");
	ck_assert_ptr_null(w.spec);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "phase"), "Failed");
	ck_assert_str_eq(st_str(&w, "reason"), "InvalidSpec");
	ck_assert_str_eq(st_str(&w, "message"), "spec.nodes: 0 is out of range: a run has 1 "
	    "to 10000 nodes");
	assert_cond(&w, "Valid", "False", "InvalidSpec");
	ck_assert(has_event(&w, "InvalidSpec"));
	ck_assert(!w.d.create_service);
	ck_assert_int_eq(st_int(&w, "session"), -1);
	apply(&w);
	decide(&w);
	ck_assert(!w.d.status_changed);
	ck_assert_uint_eq(w.d.nevents, 0);
	/* Fixed: the first session starts. */
	set_spec(&w, "nodes", json_object_new_int(1));
	decide(&w);
	ck_assert_int_eq(st_int(&w, "session"), 1);
	ck_assert_ptr_null(st_str(&w, "reason"));
	assert_cond(&w, "Valid", "True", "Valid");
	world_free(&w);
}
END_TEST

START_TEST(test_invalid_during_session)
{
	struct world w;

	/* An invalid spec does not stop a running session. */
	running_world(&w, "nodes: 2", RUNNING);
	set_spec(&w, "image", json_object_new_string(""));
	decide(&w);
	ck_assert_str_eq(st_str(&w, "phase"), "Running");
	assert_cond(&w, "Valid", "False", "InvalidSpec");
	world_free(&w);
}
END_TEST

START_TEST(test_suspended_new_run)
{
	struct world w;

	world_init(&w, "nodes: 2, suspend: true");
	decide(&w);
	ck_assert_str_eq(st_str(&w, "phase"), "Stopped");
	ck_assert_str_eq(st_str(&w, "reason"), "Suspended");
	ck_assert(!w.d.create_service);
	apply(&w);
	set_spec(&w, "suspend", json_object_new_boolean(0));
	decide(&w);
	ck_assert_int_eq(st_int(&w, "session"), 1);
	world_free(&w);
}
END_TEST

START_TEST(test_no_podgroup_api)
{
	struct world w;

	world_init(&w, "nodes: 2");
	w.in.api = TY_PODGROUP_NONE;
	decide(&w);
	ck_assert(!w.d.create_podgroup);
	ck_assert(w.d.create_service && w.d.create_netpol);
	assert_cond(&w, "GangScheduling", "False", "NoPodGroupAPI");
	apply(&w);
	w.in.service = w.in.netpol = (struct ty_child){ .exists = true, .session = 1 };
	decide(&w);
	ck_assert_uint_eq(w.d.ncreate_pods, 2);
	w.cfg.podgroup_api = TY_PODGROUP_NONE;
	decide(&w);
	assert_cond(&w, "GangScheduling", "False", "Disabled");
	world_free(&w);
}
END_TEST

START_TEST(test_bounded_status)
{
	struct world w;
	char *text;
	size_t len;

	/* 40 failed pods keep 16 failedNodes; 14 sessions keep 10 history entries. */
	world_init(&w, "nodes: 40, restartPolicy: OnFailure, maxRestarts: 100");
	for (int s = 1; s <= 14; s++) {
		at(&w, s * 1000);
		decide(&w);
		ck_assert_int_eq(st_int(&w, "session"), s);
		apply(&w);
		children(&w, s);
		all_pods(&w, s, 40, OOM);
		at(&w, s * 1000 + 10);
		decide(&w);
		ck_assert_str_eq(st_str(&w, "reason"), "PodFailed");
		ck_assert_int_eq(json_object_array_length(kc_json_get(w.d.status,
		    "failedNodes")), TY_FAILED_NODES_MAX);
		apply(&w);
		clear_pods(&w);
		no_children(&w);
	}
	ck_assert_int_eq(json_object_array_length(kc_json_get(w.d.status, "history")),
	    TY_HISTORY_MAX);
	ck_assert_int_eq(kc_json_int(json_object_array_get_idx(kc_json_get(w.d.status,
	    "history"), 0), -1, "session"), 5);
	text = kc_json_dump(w.d.status, &len);
	ck_assert_uint_lt(len, 16 * 1024);
	kc_free(text);
	world_free(&w);
}
END_TEST

START_TEST(test_large_run_status)
{
	struct world w;
	char *text;
	size_t len;

	/* A 10,000-node session: counts, not entries. */
	world_init(&w, "nodes: 10000");
	decide(&w);
	apply(&w);
	children(&w, 1);
	decide(&w);
	ck_assert_uint_eq(w.d.ncreate_pods, 10000);
	text = kc_json_dump(w.d.status, &len);
	ck_assert_uint_lt(len, 4096);
	kc_free(text);
	world_free(&w);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The pod view */

/* ------------------------------------------------------------------ */
/* The reasons table and the status-write policy (fake clock) */

#define SCHEDULED	"{phase: Pending, conditions: [{type: PodScheduled, status: \"True\"}]}"

START_TEST(test_reasons_table)
{
	static const char *const on_preemption[] = { "Preempted", "Evicted", "NodeLost" };
	static const char *const on_failure[] = { "PodFailed", "PodDeleted" };

	for (int i = 1; i < TY_REASON_N; i++) {
		const struct ty_reason_row *row = &ty_reasons[i];

		ck_assert_ptr_eq(session_reason(row->name), row);
		ck_assert(strcmp(row->phase, "Failed") == 0 ||
		    strcmp(row->phase, "Succeeded") == 0 || strcmp(row->phase, "Stopped") == 0);
		ck_assert_int_eq(row->warning, strcmp(row->phase, "Failed") == 0);
		ck_assert_uint_gt(strlen(row->event), 0);
		if (row->restarts != TY_RESTARTS_NEVER)
			ck_assert_str_eq(row->phase, "Failed");
	}
	ck_assert_ptr_null(session_reason("Completed"));
	ck_assert_ptr_null(session_reason(""));
	for (size_t i = 0; i < KC_ARRAY_SIZE(on_preemption); i++)
		ck_assert_int_eq(session_reason(on_preemption[i])->restarts,
		    TY_RESTARTS_ON_PREEMPTION);
	for (size_t i = 0; i < KC_ARRAY_SIZE(on_failure); i++)
		ck_assert_int_eq(session_reason(on_failure[i])->restarts, TY_RESTARTS_ON_FAILURE);
	/* Only what a Run's deletion also looks like is held. */
	for (int i = 1; i < TY_REASON_N; i++)
		ck_assert_int_eq(ty_reasons[i].held, i == TY_REASON_POD_DELETED);
	ck_assert_str_eq(ty_reasons[TY_REASON_SUCCEEDED].event, "SessionSucceeded");
	ck_assert_str_eq(ty_reasons[TY_REASON_SUSPENDED].event, "SessionStopped");
}
END_TEST

/* Both clocks move: the wall clock of the rules, the policy's monotonic one. */
static void
tick(struct world *w, uint64_t ms)
{
	fake_clock_advance(ms);
	w->in.now_ms += ms;
}

/*
 * A reconcile with the write policy, as reconcile_run.c carries it out:
 * a status it writes becomes the Run's, and the policy's memory is kept.
 */
static void
pol(struct world *w)
{
	w->ws.now_ms = kc_clock_now_ms();
	w->in.write = &w->ws;
	decide(w);
	if (w->d.write_status) {
		apply(w);
		w->ws.last_write_ms = w->ws.now_ms;
		w->ws.wait_hash = w->ws.wait_since_ms = 0;
	} else {
		w->ws.wait_hash = w->d.write.wait_hash;
		w->ws.wait_since_ms = w->d.write.wait_since_ms;
	}
}

START_TEST(test_policy_stalled_start)
{
	struct world w;

	fake_clock_install(1000000);
	world_init(&w, "nodes: 2");
	pol(&w);
	ck_assert(w.d.write_status);		/* a start: at once */
	children(&w, 1);
	tick(&w, 100);
	pol(&w);
	ck_assert_uint_eq(w.d.ncreate_pods, 2);
	ck_assert(!w.d.status_changed);
	/* The gang does not fit: progress (the scheduler's message) waits... */
	all_pods(&w, 1, 2, PENDING);
	tick(&w, 900);
	pol(&w);
	ck_assert(w.d.status_changed);
	ck_assert(!w.d.write_status && !w.d.hold);
	ck_assert_uint_eq(w.d.after_ms, TY_PROGRESS_QUIET_MS);
	tick(&w, TY_PROGRESS_QUIET_MS - 1);
	pol(&w);
	ck_assert(!w.d.write_status);
	ck_assert_uint_eq(w.d.after_ms, 1);
	/* ... until it stood still for 15 s. */
	tick(&w, 1);
	pol(&w);
	ck_assert(w.d.write_status);
	ck_assert_str_eq(kc_json_str(cond(&w, "Scheduled"), "message"), "0 of 2 nodes "
	    "scheduled; 0/8 nodes are available: 8 Insufficient nvidia.com/gpu.");
	ck_assert_str_eq(st_str(&w, "phase"), "Pending");
	tick(&w, 5000);
	pol(&w);
	ck_assert(!w.d.status_changed && !w.d.write_status);
	ck_assert_uint_eq(w.d.after_ms, 0);
	world_free(&w);
	fake_clock_uninstall();
}
END_TEST

START_TEST(test_policy_moving_start)
{
	struct world w;

	fake_clock_install(1000000);
	world_init(&w, "nodes: 4");
	pol(&w);
	children(&w, 1);
	all_pods(&w, 1, 4, PENDING);
	/* One more node scheduled every 10 s: written once a minute at most. */
	for (int i = 0; i < 4; i++) {
		tick(&w, 10000);
		clear_pods(&w);
		for (int k = 0; k < 4; k++)
			add_pod(&w, 1, k, k <= i ? SCHEDULED : PENDING, false);
		pol(&w);
		ck_assert_msg(!w.d.write_status, "written after %d s", (i + 1) * 10);
		ck_assert_uint_le(w.d.after_ms, TY_PROGRESS_QUIET_MS);
	}
	clear_pods(&w);
	all_pods(&w, 1, 4, PENDING);
	tick(&w, 10000);
	pol(&w);
	ck_assert(!w.d.write_status);
	ck_assert_uint_eq(w.d.after_ms, 10000);	/* the minute is up then */
	clear_pods(&w);
	all_pods(&w, 1, 4, SCHEDULED);
	tick(&w, 10000);
	pol(&w);
	ck_assert(w.d.write_status);
	/* Running is news: at once. */
	clear_pods(&w);
	all_pods(&w, 1, 4, RUNNING);
	tick(&w, 1000);
	pol(&w);
	ck_assert(w.d.write_status);
	ck_assert_str_eq(st_str(&w, "phase"), "Running");
	world_free(&w);
	fake_clock_uninstall();
}
END_TEST

START_TEST(test_policy_creating_waits)
{
	struct world w;

	fake_clock_install(1000000);
	world_init(&w, "nodes: 4");
	pol(&w);
	children(&w, 1);
	/* Two pods in the cache, two created and not seen: the creates move. */
	add_pod(&w, 1, 0, PENDING, false);
	add_pod(&w, 1, 1, PENDING, false);
	w.expected[0] = 2;
	w.expected[1] = 3;
	w.in.nexpected = 2;
	for (int i = 0; i < 5; i++) {
		tick(&w, 10000);
		pol(&w);
		ck_assert(!w.d.write_status);
	}
	/* ... but the counts are never older than a minute. */
	tick(&w, 10000);
	pol(&w);
	ck_assert(w.d.write_status);
	world_free(&w);
	fake_clock_uninstall();
}
END_TEST

START_TEST(test_policy_deleted_pods_held)
{
	struct world w;

	fake_clock_install(1000000);
	running_world(&w, "nodes: 2", RUNNING);
	tick(&w, 5000);
	pol(&w);
	ck_assert(w.d.write_status);		/* Running */
	/* The garbage collector deletes the pods of a Run being deleted. */
	clear_pods(&w);
	add_pod(&w, 1, 0, RUNNING, true);
	add_pod(&w, 1, 1, RUNNING, true);
	tick(&w, 100);
	pol(&w);
	ck_assert(w.d.hold);
	ck_assert(!w.d.write_status);
	ck_assert_uint_eq(w.d.after_ms, TY_HOLD_MS);
	tick(&w, TY_HOLD_MS - 1);
	pol(&w);
	ck_assert(w.d.hold);
	ck_assert_uint_eq(w.d.after_ms, 1);
	/* Still there after TY_HOLD_MS: someone deleted the pods. */
	tick(&w, 1);
	pol(&w);
	ck_assert(!w.d.hold);
	ck_assert(w.d.write_status);
	ck_assert_str_eq(st_str(&w, "reason"), "PodDeleted");
	ck_assert(has_event(&w, "PodDeleted"));
	world_free(&w);
	fake_clock_uninstall();
}
END_TEST

START_TEST(test_policy_vanished_child_held)
{
	struct world w;

	fake_clock_install(1000000);
	running_world(&w, "nodes: 2", RUNNING);
	pol(&w);
	memset(&w.in.service, 0, sizeof(w.in.service));
	tick(&w, 100);
	pol(&w);
	ck_assert(w.d.hold);
	ck_assert(w.d.create_service);		/* decided, not executed */
	tick(&w, TY_HOLD_MS);
	pol(&w);
	ck_assert(!w.d.hold);
	ck_assert(w.d.create_service);
	world_free(&w);
	fake_clock_uninstall();
}
END_TEST

START_TEST(test_policy_failures_at_once)
{
	struct world w;

	fake_clock_install(1000000);
	running_world(&w, "nodes: 2", RUNNING);
	pol(&w);
	clear_pods(&w);
	add_pod(&w, 1, 0, RUNNING, false);
	add_pod(&w, 1, 1, DISRUPTED("PreemptionByScheduler"), false);
	tick(&w, 100);
	pol(&w);
	ck_assert(!w.d.hold);
	ck_assert(w.d.write_status);
	ck_assert_str_eq(st_str(&w, "reason"), "Preempted");
	ck_assert_uint_gt(w.d.ndeletes, 0);
	world_free(&w);
	fake_clock_uninstall();
}
END_TEST

START_TEST(test_refused_create)
{
	struct world w;
	uint64_t t;

	fake_clock_install(1000000);
	world_init(&w, "nodes: 2");
	pol(&w);
	children(&w, 1);
	tick(&w, 100);
	pol(&w);
	ck_assert_uint_eq(w.d.ncreate_pods, 2);
	/* The API server refused the first pod. */
	t = w.in.now_ms;
	w.refusal = (struct ty_refusal){ .session = 1, .failures = 1, .at_ms = t };
	kc_strlcpy(w.refusal.message, "Error creating Pod r1-0: pods \"r1-0\" is forbidden: "
	    "no PriorityClass with name nope was found", sizeof(w.refusal.message));
	w.in.refused = &w.refusal;
	tick(&w, 100);
	pol(&w);
	ck_assert(w.d.write_status);		/* why nothing starts: at once */
	assert_cond(&w, "Scheduled", "False", "FailedCreate");
	ck_assert_str_eq(kc_json_str(cond(&w, "Scheduled"), "message"),
	    w.refusal.message);
	ck_assert_uint_eq(w.d.ncreate_pods, 0);	/* backing off */
	ck_assert_uint_eq(w.d.next_check_ms, t + 1000);
	tick(&w, 900);
	pol(&w);
	ck_assert_uint_eq(w.d.ncreate_pods, 2);	/* retried */
	ck_assert(!w.d.status_changed);
	/* Each refusal in a row doubles the wait, up to the cap. */
	w.refusal.failures = 3;
	w.refusal.at_ms = w.in.now_ms;
	pol(&w);
	ck_assert_uint_eq(w.d.ncreate_pods, 0);
	ck_assert_uint_eq(w.d.next_check_ms, w.in.now_ms + 4000);
	ck_assert_uint_eq(session_create_backoff_ms(1), 1000);
	ck_assert_uint_eq(session_create_backoff_ms(2), 2000);
	ck_assert_uint_eq(session_create_backoff_ms(30), TY_CREATE_BACKOFF_MAX_MS);
	ck_assert_uint_eq(session_create_backoff_ms(UINT32_MAX), TY_CREATE_BACKOFF_MAX_MS);
	/* A refusal of another session says nothing about this one. */
	w.refusal.session = 7;
	pol(&w);
	ck_assert_uint_eq(w.d.ncreate_pods, 2);
	ck_assert_str_ne(kc_json_str(cond(&w, "Scheduled"), "reason"), "FailedCreate");
	world_free(&w);
	fake_clock_uninstall();
}
END_TEST

/*
 * A create of the session met someone else's object of a name the Run
 * takes: the session fails at once with NameConflict and the message, a
 * Warning Event, what the session made is deleted, and no restart policy
 * starts it again (the name stays taken).
 */
START_TEST(test_name_conflict)
{
	struct world w;
	struct ty_conflict cf = { .session = 1 };
	const char *msg = "service ns/r1 exists and is not owned by this Run (owner: "
	    "Deployment r1); pod ns/r1-1 exists and is not owned by this Run";

	running_world(&w, "nodes: 2, restartPolicy: OnFailure, maxRestarts: 3", PENDING);
	clear_pods(&w);
	add_pod(&w, 1, 0, PENDING, false);
	kc_strlcpy(cf.message, msg, sizeof(cf.message));
	w.in.conflict = &cf;
	decide(&w);
	ck_assert_str_eq(st_str(&w, "phase"), "Failed");
	ck_assert_str_eq(st_str(&w, "reason"), "NameConflict");
	ck_assert_str_eq(st_str(&w, "message"), msg);
	assert_cond(&w, "Finished", "True", "NameConflict");
	ck_assert_str_eq(kc_json_str(cond(&w, "Finished"), "message"), msg);
	ck_assert(has_event(&w, "NameConflict"));
	ck_assert(w.d.events[0].warning);
	ck_assert_str_eq(w.d.events[0].message, "session 1 failed: service ns/r1 exists and "
	    "is not owned by this Run (owner: Deployment r1); pod ns/r1-1 exists and is not "
	    "owned by this Run");
	ck_assert(!has_event(&w, "RestartScheduled"));
	/* Its own children and pod are deleted, by uid; nothing is created. */
	ck_assert_uint_eq(ndeletes(&w, TY_KIND_POD), 1);
	ck_assert_uint_eq(ndeletes(&w, TY_KIND_SERVICE), 1);
	ck_assert_uint_eq(w.d.ncreate_pods, 0);
	ck_assert(!w.d.create_service && !w.d.create_netpol && !w.d.create_podgroup);
	/* Cleaned up: it stays Failed, with no new session. */
	apply(&w);
	clear_pods(&w);
	no_children(&w);
	at(&w, 60);
	decide(&w);
	ck_assert_int_eq(st_int(&w, "session"), 1);
	ck_assert_str_eq(st_str(&w, "reason"), "NameConflict");
	assert_cond(&w, "CleanedUp", "True", "AllDeleted");
	ck_assert(!w.d.create_service && w.d.ncreate_pods == 0);
	world_free(&w);
}
END_TEST

/* A conflict met by another session says nothing about this one. */
START_TEST(test_name_conflict_other_session)
{
	struct world w;
	struct ty_conflict cf = { .session = 3 };

	running_world(&w, "nodes: 2", PENDING);
	kc_strlcpy(cf.message, "pod ns/r1-0 exists and is not owned by this Run",
	    sizeof(cf.message));
	w.in.conflict = &cf;
	decide(&w);
	ck_assert_str_eq(st_str(&w, "phase"), "Pending");
	ck_assert_ptr_null(st_str(&w, "reason"));
	world_free(&w);
}
END_TEST

/*
 * An earlier Run of the same name still owns objects of the names: no
 * session starts and the Scheduled condition says what it waits for;
 * once they are gone, the session starts.
 */
START_TEST(test_name_wait)
{
	struct world w;
	const char *why = "waiting for service ns/r1, pod ns/r1-0 of an earlier Run "
	    "named r1 to be deleted";

	world_init(&w, "nodes: 2");
	w.in.name_wait = why;
	decide(&w);
	ck_assert(w.d.status_changed);
	ck_assert_str_eq(st_str(&w, "phase"), "Pending");
	ck_assert_str_eq(st_str(&w, "reason"), TY_WAITING_FOR_NAME);
	ck_assert_int_eq(st_int(&w, "session"), -1);
	assert_cond(&w, "Scheduled", "False", TY_WAITING_FOR_NAME);
	ck_assert_str_eq(kc_json_str(cond(&w, "Scheduled"), "message"), why);
	ck_assert(!w.d.started);
	ck_assert(!w.d.create_service && !w.d.create_netpol && !w.d.create_podgroup);
	ck_assert_uint_eq(w.d.nevents, 0);
	ck_assert_uint_eq(w.d.ndeletes, 0);
	apply(&w);
	w.in.name_wait = NULL;
	at(&w, 5);
	decide(&w);
	ck_assert(w.d.started);
	ck_assert_int_eq(st_int(&w, "session"), 1);
	ck_assert_ptr_null(st_str(&w, "reason"));
	assert_cond(&w, "Scheduled", "False", "Pending");
	ck_assert(w.d.create_service && w.d.create_netpol && w.d.create_podgroup);
	ck_assert(has_event(&w, "SessionStarted"));
	world_free(&w);
}
END_TEST

/* A pod refused for Pod Security ends the session at once: no retry loop. */
START_TEST(test_pod_security_refused)
{
	struct world w;

	fake_clock_install(1000000);
	world_init(&w, "nodes: 2");
	pol(&w);
	children(&w, 1);
	tick(&w, 100);
	pol(&w);
	ck_assert_uint_eq(w.d.ncreate_pods, 2);
	w.refusal = (struct ty_refusal){ .session = 1, .failures = 1, .at_ms = w.in.now_ms };
	kc_strlcpy(w.refusal.message, "Error creating Pod r1-0: pods \"r1-0\" is forbidden: "
	    "violates PodSecurity \"baseline:latest\": non-default capabilities (container "
	    "\"main\" must not include \"IPC_LOCK\" in securityContext.capabilities.add)",
	    sizeof(w.refusal.message));
	w.in.refused = &w.refusal;
	tick(&w, 100);
	pol(&w);
	ck_assert(w.d.write_status);
	ck_assert_str_eq(kc_json_str(w.d.status, "phase"), "Failed");
	ck_assert_str_eq(kc_json_str(w.d.status, "reason"), "PodSecurity");
	ck_assert_str_eq(kc_json_str(w.d.status, "message"), w.refusal.message);
	assert_cond(&w, "Finished", "True", "PodSecurity");
	ck_assert_uint_eq(w.d.ncreate_pods, 0);
	ck_assert_uint_ge(w.d.ndeletes, 1);		/* the usual cleanup */
	ck_assert(has_event(&w, "PodSecurity"));
	ck_assert_ptr_nonnull(strstr(w.d.events[0].message, "violates PodSecurity"));
	ck_assert_ptr_nonnull(session_reason("PodSecurity"));
	ck_assert(!session_reason("PodSecurity")->restarts);
	/* Even with OnFailure, no session follows. */
	set_spec(&w, "restartPolicy", json_object_new_string("OnFailure"));
	tick(&w, 3600 * 1000);
	pol(&w);
	ck_assert_uint_eq(w.d.ncreate_pods, 0);
	ck_assert(!w.d.started);
	world_free(&w);
	fake_clock_uninstall();
}
END_TEST

START_TEST(test_pod_view)
{
	struct kc_buf b;
	struct json_object *o;
	struct ty_pod *p = NULL;
	char *big = kc_malloc(3000), buf[TY_UID_TEXT_MAX];
	size_t size;

	memset(big, 'a', 2999);
	big[2999] = '\0';
	big[1023] = '\xc3';	/* a two-byte sequence across the 1 KiB cut */
	big[1024] = '\xa9';
	kc_buf_init(&b, 1 << 16);
	ck_assert_int_eq(kc_buf_printf(&b, "metadata: {name: r1-3, uid: u3, "
	    "resourceVersion: \"42\", deletionTimestamp: " T0_TEXT ", labels: "
	    "{trainyard.dev/session: \"2\", trainyard.dev/node-index: \"3\", "
	    "trainyard.dev/run: r1}, ownerReferences: [{kind: Run, name: r0, uid: "
	    "not-the-controller}, {kind: Run, name: r1, uid: run-uid-1, controller: true}]}\n"
	    "spec: {nodeName: gpu-9}\nstatus: {phase: Failed, startTime: " T0_TEXT ", "
	    "conditions: [{type: DisruptionTarget, status: \"True\", reason: "
	    "PreemptionByScheduler}, {type: Ready, status: \"False\"}, {type: PodScheduled, "
	    "status: \"True\"}], containerStatuses: [{name: sidecar}, {name: main, state: "
	    "{terminated: {exitCode: 137, reason: OOMKilled, finishedAt: "
	    "\"2027-01-15T08:00:10Z\", message: \"%s\"}}}]}\n", big), 0);
	o = yaml(kc_buf_str(&b));
	kc_buf_free(&b);
	count_alloc_start();
	ck_assert_int_eq(cache_pod_from_json(o, &p), 0);
	size = count_alloc_held();
	ck_assert_str_eq(ty_pod_str(p, TY_POD_NAME), "r1-3");
	/* Uids that are not UUIDs are kept as text. */
	ck_assert_str_eq(ty_pod_uid(p, TY_POD_UID, buf, sizeof(buf)), "u3");
	ck_assert(ty_pod_uid_is(p, TY_POD_UID, "u3"));
	ck_assert(!ty_pod_uid_is(p, TY_POD_UID, "u"));
	ck_assert_str_eq(ty_pod_str(p, TY_POD_NODE), "gpu-9");
	ck_assert_str_eq(ty_pod_str(p, TY_POD_RUN), "r1");
	/* The controller reference, not the first one. */
	ck_assert_str_eq(ty_pod_uid(p, TY_POD_OWNER_UID, buf, sizeof(buf)), "run-uid-1");
	ck_assert_int_eq(p->session, 2);
	ck_assert_int_eq(p->index, 3);
	ck_assert_int_eq(p->phase, TY_POD_FAILED);
	ck_assert(p->deleting && !p->ready && p->scheduled);
	ck_assert_str_eq(ty_pod_str(p, TY_POD_DISRUPTION), "PreemptionByScheduler");
	ck_assert_int_eq(p->exit_code, 137);
	ck_assert_str_eq(ty_pod_str(p, TY_POD_TERM_REASON), "OOMKilled");
	ck_assert_uint_eq(strlen(ty_pod_str(p, TY_POD_TERM_MESSAGE)), 1023);
	ck_assert_int_eq(p->start_time, T0);
	ck_assert_int_eq(p->finish_time, T0 + 10);
	ck_assert_ptr_null(ty_pod_str(p, TY_POD_SCHED_MESSAGE));
	ck_assert_ptr_null(ty_pod_str(p, TY_POD_REASON));
	ck_assert_uint_lt(size, sizeof(*p) + 1200);
	cache_pod_free(p);
	ck_assert_uint_eq(count_alloc_held(), 0);
	count_alloc_stop();
	json_object_put(o);
	kc_free(big);
}
END_TEST

START_TEST(test_pod_view_small)
{
	struct json_object *o = yaml("metadata: {name: r1-0, uid: "
	    "0f4c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b, resourceVersion: \"123456\", labels: "
	    "{trainyard.dev/session: \"1\", trainyard.dev/node-index: \"0\", "
	    "trainyard.dev/run: r1}, ownerReferences: [{kind: Run, name: r1, controller: true, "
	    "uid: d8a57ecd-6cfc-4bf0-8350-c99c5170c1ef}]}\n"
	    "spec: {nodeName: gpu-node-017}\nstatus: {phase: Succeeded, conditions: [{type: "
	    "Ready, status: \"False\"}], containerStatuses: [{name: main, state: {terminated: "
	    "{exitCode: 0, reason: Completed, message: \"all good\"}}}]}\n");
	struct json_object *bad = yaml("metadata: {labels: {trainyard.dev/session: x}}\n");
	struct json_object *odd = yaml("metadata: {name: p, labels: {trainyard.dev/session: "
	    "x, trainyard.dev/node-index: \"-3\"}}\nstatus: {phase: Weird}\n");
	struct ty_pod *p = NULL, *keep = (struct ty_pod *)0x1;
	char buf[TY_UID_TEXT_MAX];
	size_t size;

	count_alloc_start();
	ck_assert_int_eq(cache_pod_from_json(o, &p), 0);
	size = count_alloc_held();
	/* A container that succeeded keeps no message. */
	ck_assert_ptr_null(ty_pod_str(p, TY_POD_TERM_MESSAGE));
	ck_assert_ptr_null(ty_pod_str(p, TY_POD_TERM_REASON));
	ck_assert_int_eq(p->exit_code, 0);
	ck_assert_int_eq(p->phase, TY_POD_SUCCEEDED);
	/* UUIDs are kept in 16 bytes, and come back the same. */
	ck_assert_str_eq(ty_pod_uid(p, TY_POD_UID, buf, sizeof(buf)),
	    "0f4c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b");
	ck_assert_str_eq(ty_pod_uid(p, TY_POD_OWNER_UID, buf, sizeof(buf)),
	    "d8a57ecd-6cfc-4bf0-8350-c99c5170c1ef");
	ck_assert(ty_pod_uid_is(p, TY_POD_OWNER_UID, "d8a57ecd-6cfc-4bf0-8350-c99c5170c1ef"));
	ck_assert(!ty_pod_uid_is(p, TY_POD_OWNER_UID, "d8a57ecd-6cfc-4bf0-8350-c99c5170c1ee"));
	ck_assert(!ty_pod_uid_is(p, TY_POD_OWNER_UID, "D8A57ECD-6CFC-4BF0-8350-C99C5170C1EF"));
	ck_assert(!ty_pod_uid_is(p, TY_POD_OWNER_UID, ""));
	ck_assert_str_eq(ty_pod_str(p, TY_POD_RUN), "r1");
	/*
	 * The typical cached pod, measured: 56 bytes and its strings, 111 in
	 * all (docs/operations.md, "Sizing", counts on it).
	 */
	ck_assert_uint_le(size, 112);
	cache_pod_free(p);
	count_alloc_stop();
	ck_assert_int_eq(cache_pod_from_json(bad, &keep), KC_EINVALID);
	ck_assert_ptr_eq(keep, (struct ty_pod *)0x1);
	ck_assert_int_eq(cache_pod_from_json(odd, &p), 0);
	ck_assert_int_eq(p->session, -1);
	ck_assert_int_eq(p->index, -1);
	ck_assert_ptr_null(ty_pod_uid(p, TY_POD_UID, buf, sizeof(buf)));
	ck_assert_ptr_null(ty_pod_uid(p, TY_POD_OWNER_UID, buf, sizeof(buf)));
	ck_assert(!ty_pod_uid_is(p, TY_POD_UID, "x"));
	ck_assert_ptr_null(ty_pod_str(p, TY_POD_RUN));
	ck_assert_int_eq(p->phase, TY_POD_UNKNOWN);
	ck_assert_int_eq(p->exit_code, -1);
	cache_pod_free(p);
	json_object_put(o);
	json_object_put(bad);
	json_object_put(odd);
}
END_TEST

START_TEST(test_oom)
{
	struct world w;
	struct ty_pod *p = NULL;
	struct json_object *o = yaml("metadata: {name: r1-0}\n");
	int r;

	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = cache_pod_from_json(o, &p);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
	}
	cache_pod_free(p);
	json_object_put(o);
	running_world(&w, "nodes: 4", OOM);
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		session_decision_release(&w.d);
		r = session_decide(&w.in, &w.d);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(w.d.status);
		ck_assert_ptr_null(w.d.deletes);
	}
	ck_assert_str_eq(st_str(&w, "reason"), "PodFailed");
	world_free(&w);
}
END_TEST

/* ---- the project quota's gate ---- */

START_TEST(test_quota_wait_admit_release)
{
	struct json_object *demand = yaml("{requests.nvidia.com/gpu: '8', pods: '4'}");
	struct ty_quota_gate g = { .project = "p", .reason = "QuotaExceeded",
	    .message = "waiting for quota in project p", .demand = demand };
	struct world w;

	world_init(&w, "nodes: 4");
	w.in.quota = &g;
	decide(&w);
	/* Waits: nothing created, why in the condition, phase and reason. */
	ck_assert(!w.d.started);
	ck_assert_str_eq(st_str(&w, "phase"), "Pending");
	ck_assert_str_eq(st_str(&w, "reason"), "QuotaExceeded");
	ck_assert_int_eq(st_int(&w, "session"), -1);
	assert_cond(&w, "QuotaReserved", "False", "QuotaExceeded");
	ck_assert_str_eq(kc_json_str(cond(&w, "QuotaReserved"), "message"),
	    "waiting for quota in project p");
	ck_assert_str_eq(kc_json_str(w.d.status, "quota", "project"), "p");
	ck_assert_ptr_null(kc_json_get(w.d.status, "quota", "reserved"));
	ck_assert(!w.d.create_service && !w.d.create_podgroup);
	ck_assert_uint_eq(w.d.nevents, 0);
	apply(&w);
	/* Admitted: the start records what the session holds. */
	g.admit = true;
	at(&w, 5);
	decide(&w);
	ck_assert(w.d.started);
	ck_assert_int_eq(st_int(&w, "session"), 1);
	ck_assert_ptr_null(st_str(&w, "reason"));
	assert_cond(&w, "QuotaReserved", "True", "QuotaReserved");
	ck_assert_str_eq(kc_json_str(w.d.status, "quota", "reserved", "pods"), "4");
	ck_assert_str_eq(kc_json_str(cond(&w, "QuotaReserved"), "message"),
	    "session 1 holds 8 requests.nvidia.com/gpu, 4 pods of project p's quota");
	ck_assert(w.d.create_service);
	apply(&w);
	children(&w, 1);
	all_pods(&w, 1, 4, SUCCEEDED);
	at(&w, 10);
	decide(&w);
	ck_assert(!w.d.started);
	ck_assert_str_eq(st_str(&w, "phase"), "Succeeded");
	/* Held until the session's objects are deleted. */
	ck_assert_ptr_nonnull(kc_json_get(w.d.status, "quota", "reserved"));
	apply(&w);
	clear_pods(&w);
	no_children(&w);
	decide(&w);
	assert_cond(&w, "CleanedUp", "True", "AllDeleted");
	assert_cond(&w, "QuotaReserved", "False", "Released");
	ck_assert_ptr_null(kc_json_get(w.d.status, "quota"));
	ck_assert(!w.d.started);
	world_free(&w);
	json_object_put(demand);
}
END_TEST

START_TEST(test_quota_drain_hold_resume)
{
	struct json_object *demand = yaml("{requests.nvidia.com/gpu: '4'}");
	struct ty_quota_gate g = { .project = "p", .admit = true, .demand = demand };
	struct world w;

	/* A session that started before the quota applied holds its demand. */
	running_world(&w, "nodes: 2", RUNNING);
	w.in.quota = &g;
	at(&w, 5);
	decide(&w);
	assert_cond(&w, "QuotaReserved", "True", "QuotaReserved");
	ck_assert_str_eq(kc_json_str(w.d.status, "quota", "reserved",
	    "requests.nvidia.com/gpu"), "4");
	ck_assert_str_eq(st_str(&w, "phase"), "Running");
	apply(&w);
	/* Drain: the session ends, reason ProjectSuspended. */
	g = (struct ty_quota_gate){ .project = "p", .stop = true,
	    .stop_reason = TY_REASON_PROJECT_SUSPENDED, .reason = "ProjectSuspended",
	    .message = "project p is suspended (suspend: Drain): no new sessions start",
	    .demand = demand };
	at(&w, 10);
	decide(&w);
	ck_assert_str_eq(st_str(&w, "phase"), "Stopped");
	ck_assert_str_eq(st_str(&w, "reason"), "ProjectSuspended");
	ck_assert(has_event(&w, "SessionStopped"));
	ck_assert_uint_eq(ndeletes(&w, TY_KIND_POD), 2);
	apply(&w);
	clear_pods(&w);
	no_children(&w);
	/* Cleaned up: released, and in line again while the project is held. */
	decide(&w);
	assert_cond(&w, "QuotaReserved", "False", "ProjectSuspended");
	ck_assert_ptr_null(kc_json_get(w.d.status, "quota", "reserved"));
	ck_assert_str_eq(st_str(&w, "phase"), "Stopped");
	ck_assert(!w.d.started);
	apply(&w);
	/* Back to None: a new session. */
	g = (struct ty_quota_gate){ .project = "p", .admit = true, .demand = demand };
	at(&w, 20);
	decide(&w);
	ck_assert(w.d.started);
	ck_assert_int_eq(st_int(&w, "session"), 2);
	assert_cond(&w, "QuotaReserved", "True", "QuotaReserved");
	world_free(&w);
	json_object_put(demand);
}
END_TEST

START_TEST(test_quota_leaves_the_line)
{
	struct json_object *demand = yaml("{requests.nvidia.com/gpu: '4'}");
	struct ty_quota_gate g = { .project = "p", .reason = "QuotaExceeded",
	    .message = "waiting", .demand = demand };
	struct world w;

	world_init(&w, "nodes: 2");
	w.in.quota = &g;
	decide(&w);
	assert_cond(&w, "QuotaReserved", "False", "QuotaExceeded");
	apply(&w);
	/* Suspended by its user: it no longer waits in the project's line. */
	set_spec(&w, "suspend", json_object_new_boolean(1));
	decide(&w);
	ck_assert_str_eq(st_str(&w, "reason"), "Suspended");
	ck_assert_ptr_null(kc_json_get(w.d.status, "quota"));
	{
		struct json_object *c = kc_json_get(w.d.status, "conditions");

		for (size_t i = 0; i < json_object_array_length(c); i++)
			ck_assert_str_ne(kc_json_str(json_object_array_get_idx(c, i), "type"),
			    "QuotaReserved");
	}
	world_free(&w);
	json_object_put(demand);
}
END_TEST

Suite *
ctl_session_suite(void)
{
	Suite *s = suite_create("ctl_session");
	TCase *tc = tcase_create("session");

	tcase_add_test(tc, test_start);
	tcase_add_test(tc, test_pods_created_once);
	tcase_add_test(tc, test_running);
	tcase_add_test(tc, test_succeeded_and_cleanup);
	tcase_add_loop_test(tc, test_end_reasons, 0, KC_ARRAY_SIZE(end_cases));
	tcase_add_test(tc, test_failed_nodes);
	tcase_add_test(tc, test_missing_pod_after_created);
	tcase_add_test(tc, test_deleted_pod_killed);
	tcase_add_test(tc, test_gone_pod_last_view);
	tcase_add_test(tc, test_suspend_resume);
	tcase_add_test(tc, test_cleanup_waits_for_unseen_pods);
	tcase_add_test(tc, test_session_bump);
	tcase_add_test(tc, test_deadline);
	tcase_add_test(tc, test_deadline_v1beta1);
	tcase_add_test(tc, test_schedule_timeout);
	tcase_add_test(tc, test_timeout_after_running);
	tcase_add_test(tc, test_restart_on_preemption);
	tcase_add_loop_test(tc, test_restart_policy, 0, KC_ARRAY_SIZE(restart_cases));
	tcase_add_test(tc, test_stale_objects);
	tcase_add_loop_test(tc, test_timeouts_across_wall_steps, 0,
	    KC_ARRAY_SIZE(timed_cases) * KC_ARRAY_SIZE(clock_steps));
	tcase_add_loop_test(tc, test_restart_backoff_across_wall_steps, 0,
	    KC_ARRAY_SIZE(clock_steps));
	tcase_add_test(tc, test_session_clock_released);
	tcase_add_test(tc, test_invalid_new_run);
	tcase_add_test(tc, test_invalid_during_session);
	tcase_add_test(tc, test_suspended_new_run);
	tcase_add_test(tc, test_no_podgroup_api);
	tcase_add_test(tc, test_bounded_status);
	tcase_add_test(tc, test_large_run_status);
	tcase_add_test(tc, test_reasons_table);
	tcase_add_test(tc, test_policy_stalled_start);
	tcase_add_test(tc, test_policy_moving_start);
	tcase_add_test(tc, test_policy_creating_waits);
	tcase_add_test(tc, test_policy_deleted_pods_held);
	tcase_add_test(tc, test_policy_vanished_child_held);
	tcase_add_test(tc, test_policy_failures_at_once);
	tcase_add_test(tc, test_refused_create);
	tcase_add_test(tc, test_name_conflict);
	tcase_add_test(tc, test_name_conflict_other_session);
	tcase_add_test(tc, test_name_wait);
	tcase_add_test(tc, test_pod_security_refused);
	tcase_add_test(tc, test_pod_view);
	tcase_add_test(tc, test_pod_view_small);
	tcase_add_test(tc, test_oom);
	tcase_add_test(tc, test_quota_wait_admit_release);
	tcase_add_test(tc, test_quota_drain_hold_resume);
	tcase_add_test(tc, test_quota_leaves_the_line);
	suite_add_tcase(s, tc);
	return s;
}

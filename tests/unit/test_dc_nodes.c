/*
 * test_dc_nodes.c: devcluster/nodes.c on the fake clock: the simulated
 * kubelet's registration, Lease renewals and status reports, node IPAM,
 * the node lifecycle controller (Unknown after the grace period, the
 * condition and unschedulable taints, pods marked not Ready), taint
 * eviction with tolerationSeconds, pod GC of pods on deleted nodes,
 * DefaultTolerationSeconds admission, and a restart.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/str.h>

#include "dc_testutil.h"
#include "testutil.h"

#define NODES_PATH	"/api/v1/nodes"
#define PODS_PATH	"/api/v1/namespaces/default/pods"

static struct dc *dc;
static struct json_object *last_deleted;	/* the final state of the last pod deleted */

static size_t
alen(const struct json_object *a)
{
	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static void
on_delete(void *arg, const struct dc_event *ev)
{
	(void)arg;
	if (ev->type != DC_EV_DELETED || strcmp(coll_resource(ev->coll), "pods") != 0)
		return;
	if (last_deleted != NULL)
		json_object_put(last_deleted);
	last_deleted = kc_json_copy(ev->obj);
}

/* A kubelet that takes graceful deletions and never finishes them. */
static int
hold_graceful(struct dc *d, const struct dc_rtype *rt, const struct json_object *obj)
{
	(void)d;
	(void)rt;
	(void)obj;
	return 0;
}

static void
start(const struct nodes_opts *opts)
{
	ck_assert_int_eq(nodes_init(dc, opts), 0);
}

static void
setup(void)
{
	fake_clock_install(5000000);
	dc = dct_new(NULL);
	ck_assert_int_eq(storage_subscribe(dc->store, on_delete, NULL), 0);
}

static void
teardown(void)
{
	nodes_fini(dc);
	storage_unsubscribe(dc->store, on_delete, NULL);
	dc = api_free(dc);
	if (last_deleted != NULL)
		json_object_put(last_deleted);
	last_deleted = NULL;
	fake_clock_uninstall();
}

/* Moves the clock 'ms' forward, firing every timer on the way. */
static void
advance(uint64_t ms)
{
	uint64_t end = kc_clock_now_ms() + ms;

	(void)timers_run(dc);
	for (int i = 0; i < 100000; i++) {
		int64_t next = timers_next(dc);
		uint64_t now = kc_clock_now_ms();

		if (next < 0 || now + (uint64_t)next > end) {
			fake_clock_advance(end - now);
			(void)timers_run(dc);
			return;
		}
		fake_clock_advance((uint64_t)next);
		(void)timers_run(dc);
	}
	ck_abort_msg("the timers never settled");
}

static const struct json_object *
node(const char *name)
{
	return coll_get(dct_type(dc, "nodes")->coll, "", name);
}

static const struct json_object *
pod(const char *name)
{
	return coll_get(dct_type(dc, "pods")->coll, "default", name);
}

static const struct json_object *
lease(const char *name)
{
	return coll_get(registry_find(dc, "coordination.k8s.io", "v1", "leases")->coll,
	    "kube-node-lease", name);
}

static const char *
cond(const struct json_object *obj, const char *type, const char *field)
{
	struct json_object *conds = kc_json_get(obj, "status", "conditions");

	for (size_t i = 0; i < alen(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);

		if (strcmp(kc_json_str(c, "type"), type) == 0)
			return kc_json_str(c, field);
	}
	return NULL;
}

/* The taint (key, effect) of a node, or NULL. */
static struct json_object *
taint(const char *name, const char *key, const char *effect)
{
	struct json_object *ts = kc_json_get(node(name), "spec", "taints");

	for (size_t i = 0; i < alen(ts); i++) {
		struct json_object *t = json_object_array_get_idx(ts, i);

		if (strcmp(kc_json_str(t, "key"), key) == 0 &&
		    strcmp(kc_json_str(t, "effect"), effect) == 0)
			return t;
	}
	return NULL;
}

static void
create_node(const char *name, const char *annotations)
{
	char body[1024];

	(void)snprintf(body, sizeof(body), "{\"apiVersion\":\"v1\",\"kind\":\"Node\","
	    "\"metadata\":{\"name\":\"%s\",\"annotations\":{%s}},\"status\":{\"capacity\":"
	    "{\"cpu\":\"4\",\"memory\":\"8Gi\"}}}", name, annotations);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = NODES_PATH,
	    .body = body }, 201, NULL));
}

static void
patch(const char *target, const char *ctype, const char *body)
{
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = target,
	    .ctype = ctype, .body = body }, 200, NULL));
}

static void
annotate(const char *name, const char *value)
{
	char target[256], body[256];

	(void)snprintf(target, sizeof(target), NODES_PATH "/%s", name);
	if (value != NULL)
		(void)snprintf(body, sizeof(body), "{\"metadata\":{\"annotations\":{"
		    "\"" NODES_ANN_KUBELET "\":\"%s\"}}}", value);
	else
		(void)snprintf(body, sizeof(body), "{\"metadata\":{\"annotations\":{"
		    "\"" NODES_ANN_KUBELET "\":null}}}");
	patch(target, "application/merge-patch+json", body);
}

static void
set_ready(const char *name, const char *status)
{
	char target[256], body[256];

	(void)snprintf(target, sizeof(target), NODES_PATH "/%s/status", name);
	(void)snprintf(body, sizeof(body), "{\"status\":{\"conditions\":[{\"type\":\"Ready\","
	    "\"status\":\"%s\",\"reason\":\"Test\"}]}}", status);
	patch(target, "application/strategic-merge-patch+json", body);
}

static void
create_pod(const char *name, const char *node_name, const char *tolerations)
{
	char body[1024];

	(void)snprintf(body, sizeof(body), "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"nodeName\":\"%s\","
	    "\"tolerations\":[%s],\"containers\":[{\"name\":\"c\",\"image\":\"busybox\"}]}}",
	    name, node_name, tolerations);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = PODS_PATH,
	    .body = body }, 201, NULL));
}

/* Gives a pod a Ready True condition and phase Running, as a kubelet would. */
static void
pod_running(const char *name)
{
	char target[256];

	(void)snprintf(target, sizeof(target), PODS_PATH "/%s/status", name);
	patch(target, "application/merge-patch+json", "{\"status\":{\"phase\":\"Running\","
	    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
}

static struct json_object *
find_toleration(const struct json_object *p, const char *key)
{
	struct json_object *tols = kc_json_get(p, "spec", "tolerations");

	for (size_t i = 0; i < alen(tols); i++) {
		struct json_object *t = json_object_array_get_idx(tols, i);
		const char *k = kc_json_str(t, "key");

		if (k != NULL && strcmp(k, key) == 0)
			return t;
	}
	return NULL;
}

static size_t
count_events(const char *reason)
{
	struct json_object **evs = NULL;
	size_t n = 0, found = 0;

	ck_assert_int_eq(coll_list(dct_type(dc, "events")->coll, NULL, NULL, &evs, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(kc_json_str(evs[i], "reason"), reason) == 0)
			found++;
	objs_free(evs, n);
	return found;
}

START_TEST(test_register)
{
	const struct json_object *n, *l;
	struct json_object *as, *refs;

	start(NULL);
	create_node("n1", "");
	create_node("n2", "");
	advance(100);
	n = node("n1");
	as = kc_json_get(n, "status", "addresses");
	ck_assert_uint_eq(json_object_array_length(as), 2);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(as, 0), "type"), "InternalIP");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(as, 0), "address"), "10.0.0.1");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(as, 1), "type"), "Hostname");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(as, 1), "address"), "n1");
	ck_assert_str_eq(kc_json_str(n, "status", "nodeInfo", "kubeletVersion"), "v1.32.0");
	ck_assert_str_eq(kc_json_str(n, "status", "nodeInfo", "containerRuntimeVersion"),
	    NODES_RUNTIME_VERSION);
	ck_assert_str_eq(kc_json_str(n, "status", "nodeInfo", "architecture"), "amd64");
	ck_assert_str_eq(kc_json_str(n, "status", "nodeInfo", "operatingSystem"), "linux");
	ck_assert_uint_eq(strlen(kc_json_str(n, "status", "nodeInfo", "machineID")), 32);
	ck_assert_uint_eq(strlen(kc_json_str(n, "status", "nodeInfo", "systemUUID")), 36);
	ck_assert_int_eq(kc_json_int(n, 0, "status", "daemonEndpoints", "kubeletEndpoint",
	    "Port"), 10250);
	/* Allocatable defaults to capacity; the kubelet adds pods. */
	ck_assert_str_eq(kc_json_str(n, "status", "allocatable", "cpu"), "4");
	ck_assert_str_eq(kc_json_str(n, "status", "allocatable", "memory"), "8Gi");
	ck_assert_str_eq(kc_json_str(n, "status", "capacity", "pods"), "110");
	ck_assert_str_eq(kc_json_str(n, "status", "allocatable", "pods"), "110");
	ck_assert_str_eq(kc_json_str(n, "metadata", "labels", "kubernetes.io/hostname"), "n1");
	ck_assert_str_eq(kc_json_str(n, "metadata", "labels", "kubernetes.io/os"), "linux");
	ck_assert_str_eq(cond(n, "Ready", "status"), "True");
	ck_assert_str_eq(cond(n, "Ready", "reason"), "KubeletReady");
	ck_assert_str_eq(cond(n, "Ready", "message"), "kubelet is posting ready status");
	ck_assert_ptr_nonnull(cond(n, "Ready", "lastHeartbeatTime"));
	ck_assert_str_eq(cond(n, "MemoryPressure", "status"), "False");
	ck_assert_str_eq(cond(n, "MemoryPressure", "reason"), "KubeletHasSufficientMemory");
	ck_assert_str_eq(cond(n, "DiskPressure", "reason"), "KubeletHasNoDiskPressure");
	ck_assert_str_eq(cond(n, "PIDPressure", "reason"), "KubeletHasSufficientPID");
	/* Node IPAM: /24 blocks of the cluster CIDR in order. */
	ck_assert_str_eq(kc_json_str(n, "spec", "podCIDR"), "10.244.0.0/24");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(kc_json_get(n,
	    "spec", "podCIDRs"), 0)), "10.244.0.0/24");
	ck_assert_str_eq(kc_json_str(node("n2"), "spec", "podCIDR"), "10.244.1.0/24");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(node("n2"),
	    "status", "addresses"), 0), "address"), "10.0.0.2");
	ck_assert_ptr_null(kc_json_get(n, "spec", "taints"));
	/* The Lease, owned by the Node. */
	ck_assert_ptr_nonnull(l = lease("n1"));
	ck_assert_str_eq(kc_json_str(l, "spec", "holderIdentity"), "n1");
	ck_assert_int_eq(kc_json_int(l, 0, "spec", "leaseDurationSeconds"), 40);
	ck_assert_ptr_nonnull(kc_json_str(l, "spec", "renewTime"));
	refs = kc_json_get(l, "metadata", "ownerReferences");
	ck_assert_uint_eq(json_object_array_length(refs), 1);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(refs, 0), "kind"), "Node");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(refs, 0), "uid"),
	    kc_json_str(n, "metadata", "uid"));
	ck_assert_uint_eq(nodes_count(dc), 2);
}
END_TEST

START_TEST(test_heartbeats)
{
	char lease_rv[32], node_rv[32], renew[64];

	start(NULL);
	create_node("n1", "");
	advance(100);
	(void)kc_strlcpy(lease_rv, dct_rv(lease("n1")), sizeof(lease_rv));
	(void)kc_strlcpy(node_rv, dct_rv(node("n1")), sizeof(node_rv));
	(void)kc_strlcpy(renew, kc_json_str(lease("n1"), "spec", "renewTime"), sizeof(renew));
	/* The lease is renewed every 10 s; the node is not written. */
	advance(10000);
	ck_assert_str_ne(dct_rv(lease("n1")), lease_rv);
	ck_assert_str_ne(kc_json_str(lease("n1"), "spec", "renewTime"), renew);
	ck_assert_str_eq(dct_rv(node("n1")), node_rv);
	advance(4 * 60000);
	ck_assert_str_eq(dct_rv(node("n1")), node_rv);
	ck_assert_str_eq(cond(node("n1"), "Ready", "status"), "True");
	/* After nodeStatusReportFrequency the status is reported again. */
	advance(61000);
	ck_assert_str_ne(dct_rv(node("n1")), node_rv);
	ck_assert_str_eq(cond(node("n1"), "Ready", "status"), "True");
}
END_TEST

/*
 * renewTime is one wall-clock reading at microsecond precision. Seconds
 * from the wall clock glued to milliseconds from the monotonic one (which
 * do not turn over together) went backwards: at monotonic x.900 with the
 * wall clock 500 ms ahead, "s+1.900", then 200 ms later "s+1.100".
 */
START_TEST(test_lease_renew_time)
{
	char want[KC_TIME_MAX], prev[KC_TIME_MAX];

	start(NULL);
	create_node("n1", "");
	advance(100);
	fake_clock_skew_wall(500);
	for (int i = 0; i < 4; i++) {
		const char *got;

		(void)kc_strlcpy(prev, kc_json_str(lease("n1"), "spec", "renewTime"),
		    sizeof(prev));
		/* Late, at a phase of its own: the renewal runs now. */
		fake_clock_advance(10000 + 300 * (uint64_t)i + 137);
		(void)timers_run(dc);
		ck_assert_int_eq(kc_time_format_us(kc_clock_wall_us(), KC_TIME_MICRO, want,
		    sizeof(want)), 0);
		got = kc_json_str(lease("n1"), "spec", "renewTime");
		ck_assert_str_eq(got, want);
		ck_assert_int_gt(strcmp(got, prev), 0);
	}
}
END_TEST

START_TEST(test_stopped_kubelet)
{
	struct json_object *t;

	start(NULL);
	create_node("n1", "");
	create_node("n2", "");
	advance(100);
	create_pod("p1", "n1", "{\"key\":\"node.kubernetes.io/unreachable\","
	    "\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":3600}");
	pod_running("p1");
	annotate("n1", "stopped");
	advance(30000);
	ck_assert_str_eq(cond(node("n1"), "Ready", "status"), "True");
	advance(20000);
	ck_assert_str_eq(cond(node("n1"), "Ready", "status"), "Unknown");
	ck_assert_str_eq(cond(node("n1"), "Ready", "reason"), "NodeStatusUnknown");
	ck_assert_str_eq(cond(node("n1"), "Ready", "message"),
	    "Kubelet stopped posting node status.");
	ck_assert_str_eq(cond(node("n1"), "MemoryPressure", "status"), "Unknown");
	ck_assert_str_eq(cond(node("n1"), "PIDPressure", "reason"), "NodeStatusUnknown");
	ck_assert_ptr_nonnull(t = taint("n1", "node.kubernetes.io/unreachable", "NoExecute"));
	ck_assert_ptr_nonnull(kc_json_str(t, "timeAdded"));
	ck_assert_ptr_nonnull(taint("n1", "node.kubernetes.io/unreachable", "NoSchedule"));
	ck_assert_ptr_null(taint("n1", "node.kubernetes.io/not-ready", "NoExecute"));
	/* The other node stays Ready. */
	ck_assert_str_eq(cond(node("n2"), "Ready", "status"), "True");
	ck_assert_ptr_null(kc_json_get(node("n2"), "spec", "taints"));
	/* Its pods are marked not Ready, and the controller records it. */
	ck_assert_str_eq(cond(pod("p1"), "Ready", "status"), "False");
	ck_assert_uint_eq(count_events("NodeNotReady"), 1);
	ck_assert_ptr_nonnull(pod("p1"));
	/* The kubelet comes back. */
	annotate("n1", NULL);
	advance(100);
	ck_assert_str_eq(cond(node("n1"), "Ready", "status"), "True");
	ck_assert_str_eq(cond(node("n1"), "Ready", "reason"), "KubeletReady");
	ck_assert_str_eq(cond(node("n1"), "MemoryPressure", "status"), "False");
	ck_assert_ptr_null(taint("n1", "node.kubernetes.io/unreachable", "NoExecute"));
	ck_assert_ptr_null(taint("n1", "node.kubernetes.io/unreachable", "NoSchedule"));
	advance(60000);
	ck_assert_str_eq(cond(node("n1"), "Ready", "status"), "True");
	ck_assert_ptr_nonnull(pod("p1"));
}
END_TEST

START_TEST(test_never_posted)
{
	start(&(struct nodes_opts){ .grace_ms = 2000, .startup_grace_ms = 5000,
	    .monitor_ms = 500, .not_ready_toleration_s = -1,
	    .unreachable_toleration_s = -1 });
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = NODES_PATH,
	    .body = "{\"metadata\":{\"name\":\"cold\",\"annotations\":{\""
	    NODES_ANN_KUBELET "\":\"stopped\"}}}" }, 201, NULL));
	advance(4000);
	ck_assert_ptr_null(kc_json_get(node("cold"), "status", "conditions"));
	ck_assert_ptr_null(lease("cold"));
	/* IPAM does not need the kubelet. */
	ck_assert_str_eq(kc_json_str(node("cold"), "spec", "podCIDR"), "10.244.0.0/24");
	advance(2000);
	ck_assert_str_eq(cond(node("cold"), "Ready", "status"), "Unknown");
	ck_assert_str_eq(cond(node("cold"), "Ready", "reason"), "NodeStatusNeverUpdated");
	ck_assert_str_eq(cond(node("cold"), "Ready", "message"),
	    "Kubelet never posted node status.");
	ck_assert_str_eq(cond(node("cold"), "DiskPressure", "reason"), "NodeStatusNeverUpdated");
	ck_assert_ptr_nonnull(taint("cold", "node.kubernetes.io/unreachable", "NoExecute"));
}
END_TEST

START_TEST(test_not_ready_taints)
{
	start(NULL);
	create_node("n1", "");
	advance(100);
	set_ready("n1", "False");
	advance(100);
	ck_assert_str_eq(cond(node("n1"), "Ready", "status"), "False");
	ck_assert_ptr_nonnull(taint("n1", "node.kubernetes.io/not-ready", "NoSchedule"));
	ck_assert_ptr_nonnull(taint("n1", "node.kubernetes.io/not-ready", "NoExecute"));
	ck_assert_ptr_null(taint("n1", "node.kubernetes.io/unreachable", "NoExecute"));
	/* The running kubelet does not overwrite what a client wrote. */
	advance(6 * 60000);
	ck_assert_str_eq(cond(node("n1"), "Ready", "status"), "False");
	ck_assert_ptr_nonnull(taint("n1", "node.kubernetes.io/not-ready", "NoExecute"));
	set_ready("n1", "True");
	advance(100);
	ck_assert_ptr_null(kc_json_get(node("n1"), "spec", "taints"));
	/* Pressure conditions taint NoSchedule only. */
	patch(NODES_PATH "/n1/status", "application/strategic-merge-patch+json",
	    "{\"status\":{\"conditions\":[{\"type\":\"MemoryPressure\",\"status\":\"True\"}]}}");
	advance(100);
	ck_assert_ptr_nonnull(taint("n1", "node.kubernetes.io/memory-pressure", "NoSchedule"));
	ck_assert_ptr_null(taint("n1", "node.kubernetes.io/memory-pressure", "NoExecute"));
}
END_TEST

START_TEST(test_cordon)
{
	start(NULL);
	create_node("n1", "");
	advance(100);
	patch(NODES_PATH "/n1", "application/strategic-merge-patch+json",
	    "{\"spec\":{\"unschedulable\":true}}");
	advance(100);
	ck_assert_ptr_nonnull(kc_json_str(taint("n1", "node.kubernetes.io/unschedulable",
	    "NoSchedule"), "timeAdded"));
	patch(NODES_PATH "/n1", "application/strategic-merge-patch+json",
	    "{\"spec\":{\"unschedulable\":null}}");
	advance(100);
	ck_assert_ptr_null(taint("n1", "node.kubernetes.io/unschedulable", "NoSchedule"));
	/* Other taints are the user's. */
	patch(NODES_PATH "/n1", "application/merge-patch+json",
	    "{\"spec\":{\"taints\":[{\"key\":\"gpu\",\"effect\":\"NoSchedule\"}]}}");
	advance(100);
	ck_assert_ptr_nonnull(taint("n1", "gpu", "NoSchedule"));
}
END_TEST

START_TEST(test_taint_eviction)
{
	dc->hooks.graceful_delete = hold_graceful;
	start(NULL);
	create_node("n1", "");
	advance(100);
	create_pod("plain", "n1", "");
	create_pod("brief", "n1", "{\"key\":\"x\",\"operator\":\"Exists\","
	    "\"effect\":\"NoExecute\",\"tolerationSeconds\":30}");
	create_pod("always", "n1", "{\"key\":\"x\",\"operator\":\"Equal\","
	    "\"value\":\"1\",\"effect\":\"NoExecute\"}");
	create_pod("wrongval", "n1", "{\"key\":\"x\",\"operator\":\"Equal\","
	    "\"value\":\"2\",\"effect\":\"NoExecute\"}");
	advance(100);
	ck_assert_uint_eq(nodes_pods_on(dc, "n1"), 4);
	patch(NODES_PATH "/n1", "application/merge-patch+json",
	    "{\"spec\":{\"taints\":[{\"key\":\"x\",\"value\":\"1\",\"effect\":\"NoExecute\"}]}}");
	advance(100);
	/* Not tolerated: evicted at once, gracefully (the kubelet holds it). */
	ck_assert_ptr_nonnull(kc_json_get(pod("plain"), "metadata", "deletionTimestamp"));
	ck_assert_str_eq(cond(pod("plain"), "DisruptionTarget", "status"), "True");
	ck_assert_str_eq(cond(pod("plain"), "DisruptionTarget", "reason"),
	    "DeletionByTaintManager");
	ck_assert_str_eq(cond(pod("plain"), "DisruptionTarget", "message"),
	    "Taint manager: deleting due to NoExecute taint");
	ck_assert_ptr_nonnull(kc_json_get(pod("wrongval"), "metadata", "deletionTimestamp"));
	ck_assert_uint_eq(count_events("TaintManagerEviction"), 2);
	ck_assert_ptr_null(kc_json_get(pod("brief"), "metadata", "deletionTimestamp"));
	ck_assert_ptr_null(cond(pod("brief"), "DisruptionTarget", "status"));
	advance(25000);
	ck_assert_ptr_null(kc_json_get(pod("brief"), "metadata", "deletionTimestamp"));
	advance(6000);
	ck_assert_ptr_nonnull(kc_json_get(pod("brief"), "metadata", "deletionTimestamp"));
	ck_assert_str_eq(cond(pod("brief"), "DisruptionTarget", "reason"),
	    "DeletionByTaintManager");
	/* Tolerating forever: stays. */
	advance(600000);
	ck_assert_ptr_null(kc_json_get(pod("always"), "metadata", "deletionTimestamp"));
	ck_assert_uint_eq(count_events("TaintManagerEviction"), 3);
	dc->hooks.graceful_delete = NULL;
}
END_TEST

START_TEST(test_unreachable_default_toleration)
{
	dc->hooks.graceful_delete = hold_graceful;
	start(&(struct nodes_opts){ .grace_ms = 2000, .monitor_ms = 200,
	    .not_ready_toleration_s = -1, .unreachable_toleration_s = 3 });
	create_node("n1", "");
	advance(100);
	create_pod("p", "n1", "");
	ck_assert_int_eq(kc_json_int(find_toleration(pod("p"),
	    "node.kubernetes.io/unreachable"), 0, "tolerationSeconds"), 3);
	annotate("n1", "stopped");
	advance(2500);
	ck_assert_str_eq(cond(node("n1"), "Ready", "status"), "Unknown");
	ck_assert_ptr_null(kc_json_get(pod("p"), "metadata", "deletionTimestamp"));
	advance(4000);
	ck_assert_ptr_nonnull(kc_json_get(pod("p"), "metadata", "deletionTimestamp"));
	ck_assert_str_eq(cond(pod("p"), "DisruptionTarget", "reason"), "DeletionByTaintManager");
	dc->hooks.graceful_delete = NULL;
}
END_TEST

START_TEST(test_pod_gc)
{
	dc->hooks.graceful_delete = hold_graceful;
	start(NULL);
	create_node("n1", "");
	advance(100);
	create_pod("p1", "n1", "");
	pod_running("p1");
	/* A pod being deleted gracefully on the node is force-deleted too. */
	create_pod("p2", "n1", "");
	ck_assert_int_eq(api_delete_object(dc, dct_type(dc, "pods"), "default", "p2", 30), 0);
	ck_assert_ptr_nonnull(pod("p2"));
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_DELETE,
	    .target = NODES_PATH "/n1" }, 200, NULL));
	advance(500);
	ck_assert_ptr_nonnull(pod("p1"));
	advance(1000);
	ck_assert_ptr_null(pod("p1"));
	ck_assert_ptr_null(pod("p2"));
	ck_assert_ptr_nonnull(last_deleted);
	ck_assert_str_eq(kc_json_str(last_deleted, "status", "phase"), "Failed");
	ck_assert_str_eq(cond(last_deleted, "DisruptionTarget", "reason"), "DeletionByPodGC");
	ck_assert_str_eq(cond(last_deleted, "DisruptionTarget", "message"),
	    "PodGC: node no longer exists");
	/* A pod bound to a node that never existed goes the same way. */
	create_pod("lost", "nowhere", "");
	advance(100);
	ck_assert_ptr_nonnull(pod("lost"));
	ck_assert_uint_eq(nodes_pods_on(dc, "nowhere"), 1);
	advance(1500);
	ck_assert_ptr_null(pod("lost"));
	ck_assert_uint_eq(nodes_pods_on(dc, "nowhere"), 0);
	/* A pod a finalizer holds: failed, deleted, retried only now and then. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = PODS_PATH,
	    .body = "{\"metadata\":{\"name\":\"held\",\"finalizers\":[\"x/y\"]},"
	    "\"spec\":{\"nodeName\":\"gone\",\"containers\":[{\"name\":\"c\","
	    "\"image\":\"busybox\"}]}}" }, 201, NULL));
	advance(1500);
	ck_assert_ptr_nonnull(pod("held"));
	ck_assert_ptr_nonnull(kc_json_get(pod("held"), "metadata", "deletionTimestamp"));
	ck_assert_str_eq(kc_json_str(pod("held"), "status", "phase"), "Failed");
	{
		size_t runs = 0;

		for (int i = 0; i < 100; i++) {
			fake_clock_advance(10);
			runs += timers_run(dc);
		}
		ck_assert_uint_lt(runs, 15);	/* no 20 ms retry loop */
	}
	patch(PODS_PATH "/held", "application/merge-patch+json",
	    "{\"metadata\":{\"finalizers\":null}}");
	advance(100);
	ck_assert_ptr_null(pod("held"));
	/* A node that shows up within the quarantine saves its pods. */
	create_pod("early", "late", "");
	advance(200);
	create_node("late", "");
	advance(2000);
	ck_assert_ptr_nonnull(pod("early"));
	dc->hooks.graceful_delete = NULL;
}
END_TEST

START_TEST(test_default_tolerations)
{
	struct nodes_opts o = { .not_ready_toleration_s = 7, .unreachable_toleration_s = 9 };
	struct json_object *p = NULL, *t;

	start(NULL);
	create_pod("d", "", "");
	t = find_toleration(pod("d"), "node.kubernetes.io/not-ready");
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(kc_json_str(t, "operator"), "Exists");
	ck_assert_str_eq(kc_json_str(t, "effect"), "NoExecute");
	ck_assert_int_eq(kc_json_int(t, 0, "tolerationSeconds"), 300);
	ck_assert_int_eq(kc_json_int(find_toleration(pod("d"),
	    "node.kubernetes.io/unreachable"), 0, "tolerationSeconds"), 300);
	/* A pod tolerating everything gets nothing. */
	create_pod("all", "", "{\"operator\":\"Exists\"}");
	ck_assert_uint_eq(json_object_array_length(kc_json_get(pod("all"), "spec",
	    "tolerations")), 1);
	/* Its own not-ready toleration stays as it is. */
	create_pod("own", "", "{\"key\":\"node.kubernetes.io/not-ready\","
	    "\"operator\":\"Exists\",\"tolerationSeconds\":5}");
	ck_assert_uint_eq(json_object_array_length(kc_json_get(pod("own"), "spec",
	    "tolerations")), 2);
	ck_assert_int_eq(kc_json_int(find_toleration(pod("own"),
	    "node.kubernetes.io/not-ready"), 0, "tolerationSeconds"), 5);
	/* The flags' values; updates are not admitted again. */
	ck_assert_int_eq(kc_json_parse("{\"spec\":{}}", 11, &p, NULL), 0);
	ck_assert_int_eq(nodes_default_tolerations(&o, p), 0);
	ck_assert_int_eq(kc_json_int(find_toleration(p, "node.kubernetes.io/not-ready"), 0,
	    "tolerationSeconds"), 7);
	ck_assert_int_eq(kc_json_int(find_toleration(p, "node.kubernetes.io/unreachable"), 0,
	    "tolerationSeconds"), 9);
	json_object_put(p);
	/* Without the plug-in, nothing is added. */
	nodes_fini(dc);
	create_pod("bare", "", "");
	ck_assert_ptr_null(find_toleration(pod("bare"), "node.kubernetes.io/not-ready"));
}
END_TEST

START_TEST(test_restart)
{
	char renew[64];

	start(&(struct nodes_opts){ .cluster_cidr = "10.9.0.0/23",
	    .not_ready_toleration_s = -1, .unreachable_toleration_s = -1 });
	create_node("n1", "");
	create_node("n2", "");
	advance(100);
	ck_assert_str_eq(kc_json_str(node("n2"), "spec", "podCIDR"), "10.9.1.0/24");
	(void)kc_strlcpy(renew, kc_json_str(lease("n1"), "spec", "renewTime"), sizeof(renew));
	/* Down for 30 s, less than the grace period. */
	nodes_fini(dc);
	fake_clock_advance(30000);
	start(&(struct nodes_opts){ .cluster_cidr = "10.9.0.0/23",
	    .not_ready_toleration_s = -1, .unreachable_toleration_s = -1 });
	advance(100);
	ck_assert_str_ne(kc_json_str(lease("n1"), "spec", "renewTime"), renew);
	advance(60000);
	ck_assert_str_eq(cond(node("n1"), "Ready", "status"), "True");
	ck_assert_ptr_null(kc_json_get(node("n1"), "spec", "taints"));
	/* The restored nodes hold their blocks: none is left for a third. */
	create_node("n3", "");
	advance(100);
	ck_assert_ptr_null(kc_json_str(node("n3"), "spec", "podCIDR"));
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(node("n3"),
	    "status", "addresses"), 0), "address"), "10.0.0.3");
	/* Deleting a node releases its block. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_DELETE,
	    .target = NODES_PATH "/n1" }, 200, NULL));
	create_node("n4", "");
	advance(100);
	ck_assert_str_eq(kc_json_str(node("n4"), "spec", "podCIDR"), "10.9.0.0/24");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(node("n4"),
	    "status", "addresses"), 0), "address"), "10.0.0.1");
}
END_TEST

START_TEST(test_cidr_parse)
{
	uint32_t base = 0, blocks = 0;

	ck_assert_int_eq(nodes_parse_cidr("10.244.0.0/16", &base, &blocks), 0);
	ck_assert_uint_eq(base, (10u << 24) | (244u << 16));
	ck_assert_uint_eq(blocks, 256);
	ck_assert_int_eq(nodes_parse_cidr("10.0.0.0/8", &base, &blocks), 0);
	ck_assert_uint_eq(blocks, 65536);
	ck_assert_int_eq(nodes_parse_cidr("192.168.5.0/24", &base, &blocks), 0);
	ck_assert_uint_eq(blocks, 1);
	ck_assert_int_eq(nodes_parse_cidr("10.244.0.1/16", &base, &blocks), -EINVAL);
	ck_assert_int_eq(nodes_parse_cidr("10.244.0.0/25", &base, &blocks), -EINVAL);
	ck_assert_int_eq(nodes_parse_cidr("10.244.0.0/7", &base, &blocks), -EINVAL);
	ck_assert_int_eq(nodes_parse_cidr("10.244.0.0", &base, &blocks), -EINVAL);
	ck_assert_int_eq(nodes_parse_cidr("fd00::/48", &base, &blocks), -EINVAL);
	ck_assert_int_eq(nodes_parse_cidr("10.244.0.0/x", &base, &blocks), -EINVAL);
	ck_assert_int_eq(nodes_parse_cidr(NULL, &base, &blocks), -EINVAL);
	ck_assert_int_eq(nodes_init(dc, &(struct nodes_opts){ .cluster_cidr = "nope" }),
	    -EINVAL);
	ck_assert_ptr_null(plugin_state(dc, &nodes_plugin));
	start(NULL);
	ck_assert_int_eq(nodes_init(dc, NULL), -EEXIST);
}
END_TEST

START_TEST(test_init_alloc_failures)
{
	int r = -ENOMEM;

	create_pod("p", "n0", "");
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = NODES_PATH,
	    .body = "{\"metadata\":{\"name\":\"n0\"}}" }, 201, NULL));
	for (size_t i = 0; i < 200 && r == -ENOMEM; i++) {
		fail_alloc_after(i);
		r = nodes_init(dc, NULL);
		fail_alloc_after(SIZE_MAX);
		if (r == -ENOMEM)
			ck_assert_ptr_null(plugin_state(dc, &nodes_plugin));
	}
	ck_assert_int_eq(r, 0);
	ck_assert_uint_eq(nodes_count(dc), 1);
	ck_assert_uint_eq(nodes_pods_on(dc, "n0"), 1);
	/* A pass under allocation failures leaves no leak and recovers. */
	for (size_t i = 0; i < 60; i += 3) {
		fail_alloc_after(i);
		(void)timers_run(dc);
		fail_alloc_after(SIZE_MAX);
	}
	advance(100);
	ck_assert_str_eq(cond(node("n0"), "Ready", "status"), "True");
}
END_TEST

Suite *
dc_nodes_suite(void)
{
	Suite *s = suite_create("dc_nodes");
	TCase *tc = tcase_create("nodes");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_register);
	tcase_add_test(tc, test_heartbeats);
	tcase_add_test(tc, test_lease_renew_time);
	tcase_add_test(tc, test_stopped_kubelet);
	tcase_add_test(tc, test_never_posted);
	tcase_add_test(tc, test_not_ready_taints);
	tcase_add_test(tc, test_cordon);
	tcase_add_test(tc, test_taint_eviction);
	tcase_add_test(tc, test_unreachable_default_toleration);
	tcase_add_test(tc, test_pod_gc);
	tcase_add_test(tc, test_default_tolerations);
	tcase_add_test(tc, test_restart);
	tcase_add_test(tc, test_cidr_parse);
	tcase_add_test(tc, test_init_alloc_failures);
	suite_add_tcase(s, tc);
	return s;
}

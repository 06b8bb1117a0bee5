/*
 * test_dc_scheduler.c: the devcluster's scheduler loop (scheduler.c) on
 * top of sched.c: --nodes loading, binds, unschedulable conditions and
 * FailedScheduling Events, a gang that waits for its members, and
 * PodGroup statuses kept by the events that touch them.
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

#define PODS_PATH	"/api/v1/namespaces/default/pods"

static struct dc *dc;
static char *tmp;

static const char nodes_yaml[] =
    "apiVersion: v1\n"
    "kind: List\n"
    "items:\n"
    "- apiVersion: v1\n"
    "  kind: Node\n"
    "  metadata: {name: n1}\n"
    "  status:\n"
    "    allocatable: {cpu: '4', memory: 8Gi, pods: '10', nvidia.com/gpu: '2'}\n"
    "    capacity: {cpu: '4', memory: 8Gi, pods: '10', nvidia.com/gpu: '2'}\n"
    "    conditions: [{type: Ready, status: 'True'}]\n"
    "- apiVersion: v1\n"
    "  kind: Node\n"
    "  metadata: {name: n2}\n"
    "  status:\n"
    "    allocatable: {cpu: '4', memory: 8Gi, pods: '10', nvidia.com/gpu: '2'}\n"
    "    capacity: {cpu: '4', memory: 8Gi, pods: '10', nvidia.com/gpu: '2'}\n"
    "    conditions: [{type: Ready, status: 'True'}]\n";

static void
setup(void)
{
	struct kc_status st = { 0 };
	char *path;

	fake_clock_install(5000000);
	dc = dct_new(NULL);
	ck_assert_int_eq(scheduler_init(dc, NULL), 0);
	tmp = tu_tmpdir();
	path = tu_write(tmp, "nodes.yaml", nodes_yaml);
	ck_assert_int_eq(scheduler_load_nodes(dc, path, &st), 0);
	/* A second load leaves the existing nodes alone. */
	ck_assert_int_eq(scheduler_load_nodes(dc, path, &st), 0);
	kc_free(path);
}

static void
teardown(void)
{
	scheduler_fini(dc);
	dc = api_free(dc);
	tu_tmpdir_remove(tmp);
	tmp = NULL;
	fake_clock_uninstall();
}

static void
settle(void)
{
	for (int i = 0; i < 100; i++) {
		int64_t next;

		(void)timers_run(dc);
		next = timers_next(dc);
		if (next < 0 || next > 500)
			return;
		if (next > 0)
			fake_clock_advance((uint64_t)next);
	}
	ck_abort_msg("the timers never settled");
}

static const struct json_object *
pod(const char *name)
{
	return coll_get(dct_type(dc, "pods")->coll, "default", name);
}

static void
create_pod(const char *name, int gpus, const char *labels, const char *sched)
{
	char body[1024];

	(void)snprintf(body, sizeof(body),
	    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
	    "\"labels\":{%s}},\"spec\":{\"schedulerName\":\"%s\",\"containers\":[{"
	    "\"name\":\"c\",\"image\":\"busybox\",\"resources\":{\"limits\":{"
	    "\"nvidia.com/gpu\":\"%d\"}}}]}}", name, labels, sched, gpus);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = PODS_PATH,
	    .body = body }, 201, NULL));
}

static const char *
cond(const char *name, const char *type, const char *field)
{
	struct json_object *conds = kc_json_get(pod(name), "status", "conditions");

	for (size_t i = 0; i < json_object_array_length(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);

		if (strcmp(kc_json_str(c, "type"), type) == 0)
			return kc_json_str(c, field);
	}
	return NULL;
}

START_TEST(test_nodes_loaded)
{
	const struct json_object *n1 = coll_get(dct_type(dc, "nodes")->coll, "", "n1");

	ck_assert_ptr_nonnull(n1);
	ck_assert_str_eq(kc_json_str(n1, "status", "allocatable", "nvidia.com/gpu"), "2");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(n1, "status",
	    "conditions"), 0), "status"), "True");
}
END_TEST

START_TEST(test_load_errors)
{
	struct kc_status st = { 0 };
	char *path = tu_write(tmp, "bad.yaml", "apiVersion: v1\nkind: Pod\n"
	    "metadata: {name: x}\n");

	ck_assert_int_eq(scheduler_load_nodes(dc, path, &st), KC_EINVALID);
	ck_assert_ptr_nonnull(strstr(st.message, "expected Node"));
	kc_free(path);
	ck_assert_int_lt(scheduler_load_nodes(dc, "/nonexistent/nodes.yaml", &st), 0);
}
END_TEST

START_TEST(test_bound)
{
	create_pod("a", 2, "", "default-scheduler");
	create_pod("b", 1, "", "default-scheduler");
	settle();
	ck_assert_ptr_nonnull(kc_json_str(pod("a"), "spec", "nodeName"));
	ck_assert_ptr_nonnull(kc_json_str(pod("b"), "spec", "nodeName"));
	/* Bin packing: b goes where there is least left, the other node. */
	ck_assert_str_ne(kc_json_str(pod("a"), "spec", "nodeName"),
	    kc_json_str(pod("b"), "spec", "nodeName"));
	ck_assert_str_eq(cond("a", "PodScheduled", "status"), "True");
	/* Other schedulers' pods are left alone. */
	create_pod("other", 1, "", "my-scheduler");
	settle();
	ck_assert_ptr_null(kc_json_str(pod("other"), "spec", "nodeName"));
}
END_TEST

START_TEST(test_unschedulable)
{
	struct json_object **evs = NULL;
	size_t n = 0, found = 0;

	create_pod("huge", 3, "", "default-scheduler");
	settle();
	ck_assert_ptr_null(kc_json_str(pod("huge"), "spec", "nodeName"));
	ck_assert_str_eq(cond("huge", "PodScheduled", "status"), "False");
	ck_assert_str_eq(cond("huge", "PodScheduled", "reason"), "Unschedulable");
	ck_assert_ptr_nonnull(strstr(cond("huge", "PodScheduled", "message"),
	    "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."));
	/* Retries do not repeat the Event while the message stays. */
	fake_clock_advance(5000);
	settle();
	ck_assert_int_eq(coll_list(dct_type(dc, "events")->coll, "default", NULL,
	    &evs, &n), 0);
	for (size_t i = 0; i < n; i++)
		if (strcmp(kc_json_str(evs[i], "reason"), "FailedScheduling") == 0) {
			found++;
			ck_assert_str_eq(kc_json_str(evs[i], "type"), "Warning");
			ck_assert_str_eq(kc_json_str(evs[i], "involvedObject", "name"),
			    "huge");
			ck_assert_str_eq(kc_json_str(evs[i], "involvedObject", "kind"),
			    "Pod");
		}
	objs_free(evs, n);
	ck_assert_uint_eq(found, 1);
}
END_TEST

static void
create_crd(void)
{
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
	    .body = "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":"
	    "\"CustomResourceDefinition\",\"metadata\":{\"name\":"
	    "\"podgroups.scheduling.x-k8s.io\"},\"spec\":{\"group\":"
	    "\"scheduling.x-k8s.io\",\"scope\":\"Namespaced\",\"names\":{"
	    "\"plural\":\"podgroups\",\"singular\":\"podgroup\",\"kind\":\"PodGroup\"},"
	    "\"versions\":[{\"name\":\"v1alpha1\",\"served\":true,\"storage\":true,"
	    "\"subresources\":{\"status\":{}},\"schema\":{\"openAPIV3Schema\":{"
	    "\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}]}}" },
	    201, NULL));
	settle();
}

START_TEST(test_gang)
{
	const char *lbl = "\"scheduling.x-k8s.io/pod-group\":\"g\"";
	const struct json_object *pg;

	ck_assert_int_eq(crd_init(dc) >= 0, 1);
	create_crd();
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups",
	    .body = "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
	    "\"metadata\":{\"name\":\"g\"},\"spec\":{\"minMember\":3}}" }, 201, NULL));
	create_pod("g1", 1, lbl, "scheduler-plugins-scheduler");
	create_pod("g2", 1, lbl, "scheduler-plugins-scheduler");
	settle();
	ck_assert_ptr_null(kc_json_str(pod("g1"), "spec", "nodeName"));
	ck_assert_ptr_null(kc_json_str(pod("g2"), "spec", "nodeName"));
	create_pod("g3", 1, lbl, "scheduler-plugins-scheduler");
	settle();
	ck_assert_ptr_nonnull(kc_json_str(pod("g1"), "spec", "nodeName"));
	ck_assert_ptr_nonnull(kc_json_str(pod("g2"), "spec", "nodeName"));
	ck_assert_ptr_nonnull(kc_json_str(pod("g3"), "spec", "nodeName"));
	pg = coll_get(registry_find_any(dc, "scheduling.x-k8s.io", "podgroups")->coll,
	    "default", "g");
	ck_assert_ptr_nonnull(pg);
	/* Today's controller: Scheduling until minMember pods run. */
	ck_assert_str_eq(kc_json_str(pg, "status", "phase"), "Scheduling");
	ck_assert_ptr_nonnull(kc_json_str(pg, "status", "scheduleStartTime"));
}
END_TEST

START_TEST(test_binding)
{
	struct json_object *o;

	create_pod("m", 0, "", "elsewhere");
	create_pod("gated", 0, "", "elsewhere");
	settle();
	/* The subresource: 201 Success, nodeName and PodScheduled in one write. */
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = PODS_PATH
	    "/m/binding", .body = "{\"apiVersion\":\"v1\",\"kind\":\"Binding\","
	    "\"metadata\":{\"name\":\"m\",\"annotations\":{\"k\":\"v\"}},"
	    "\"target\":{\"kind\":\"Node\",\"name\":\"n2\"}}" }, 201, NULL);
	ck_assert_str_eq(kc_json_str(o, "status"), "Success");
	dct_put(o);
	ck_assert_str_eq(kc_json_str(pod("m"), "spec", "nodeName"), "n2");
	ck_assert_str_eq(kc_json_str(pod("m"), "metadata", "annotations", "k"), "v");
	ck_assert_str_eq(cond("m", "PodScheduled", "status"), "True");
	/* Bound already: 409 on pods/binding. */
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = PODS_PATH
	    "/m/binding", .body = "{\"metadata\":{\"name\":\"m\"},\"target\":"
	    "{\"name\":\"n1\"}}" }, 409, NULL);
	ck_assert_str_eq(kc_json_str(o, "details", "kind"), "pods/binding");
	dct_expect_message(o, "Operation cannot be fulfilled on pods/binding \"m\": pod m "
	    "is already assigned to node \"n2\"");
	/* The bindings collection; a missing pod; mismatched names; validation. */
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/bindings", .body = "{\"kind\":"
	    "\"Binding\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"nope\"},"
	    "\"target\":{\"name\":\"n1\"}}" }, 404, NULL), "pods \"nope\" not found");
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = PODS_PATH "/gated/binding", .body = "{\"metadata\":{\"name\":"
	    "\"other\"},\"target\":{\"name\":\"n1\"}}" }, 400, NULL),
	    "name in URL does not match name in Binding object");
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = PODS_PATH "/gated/binding", .body = "{\"metadata\":{\"name\":"
	    "\"gated\"},\"target\":{\"kind\":\"Pod\"}}" }, 500, NULL),
	    "[target.kind: Unsupported value: \"Pod\": supported values: \"Node\", "
	    "\"<empty>\", target.name: Required value]");
	/* A uid precondition that does not hold. */
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = PODS_PATH
	    "/gated/binding", .body = "{\"metadata\":{\"name\":\"gated\",\"uid\":"
	    "\"x\"},\"target\":{\"name\":\"n1\"}}" }, 409, NULL);
	ck_assert_str_eq(kc_json_str(o, "details", "kind"), "pods");
	dct_put(o);
	/* dryRun binds nothing; then the collection binds. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/bindings?dryRun=All", .body =
	    "{\"metadata\":{\"name\":\"gated\"},\"target\":{\"name\":\"n1\"}}" },
	    201, NULL));
	ck_assert_ptr_null(kc_json_str(pod("gated"), "spec", "nodeName"));
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/bindings", .body =
	    "{\"metadata\":{\"name\":\"gated\"},\"target\":{\"name\":\"n1\"}}" },
	    201, NULL));
	ck_assert_str_eq(kc_json_str(pod("gated"), "spec", "nodeName"), "n1");
	/* Create only. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = "/api/v1/namespaces/default/bindings" }, 405, NULL));
}
END_TEST

START_TEST(test_priority_admission)
{
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/apis/scheduling.k8s.io/v1/priorityclasses", .body =
	    "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\","
	    "\"metadata\":{\"name\":\"hi\"},\"value\":1000,\"globalDefault\":true,"
	    "\"preemptionPolicy\":\"Never\"}" }, 201, NULL));
	create_pod("p", 0, "", "elsewhere");
	ck_assert_int_eq(kc_json_int(pod("p"), -1, "spec", "priority"), 1000);
	ck_assert_str_eq(kc_json_str(pod("p"), "spec", "priorityClassName"), "hi");
	ck_assert_str_eq(kc_json_str(pod("p"), "spec", "preemptionPolicy"), "Never");
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = PODS_PATH, .body = "{\"metadata\":{\"name\":\"q\"},\"spec\":{"
	    "\"priorityClassName\":\"nope\",\"containers\":[{\"name\":\"c\","
	    "\"image\":\"b\"}]}}" }, 403, NULL),
	    "pods \"q\" is forbidden: no PriorityClass with name nope was found");
}
END_TEST

START_TEST(test_gang_timeout)
{
	const char *lbl = "\"scheduling.x-k8s.io/pod-group\":\"t\"";

	ck_assert_int_eq(crd_init(dc) >= 0, 1);
	create_crd();
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups",
	    .body = "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":"
	    "\"PodGroup\",\"metadata\":{\"name\":\"t\"},\"spec\":{\"minMember\":2,"
	    "\"scheduleTimeoutSeconds\":90}}" }, 201, NULL));
	create_pod("t1", 3, lbl, "scheduler-plugins-scheduler");
	create_pod("t2", 3, lbl, "scheduler-plugins-scheduler");
	settle();
	ck_assert_ptr_nonnull(strstr(cond("t1", "PodScheduled", "message"),
	    "Insufficient nvidia.com/gpu"));
	for (int i = 0; i < 95; i++) {
		fake_clock_advance(1000);
		(void)timers_run(dc);
		if (strstr(cond("t1", "PodScheduled", "message"), "timeout") != NULL)
			break;
	}
	ck_assert_str_eq(cond("t1", "PodScheduled", "message"),
	    "rejected due to timeout after waiting 1m30s at plugin Coscheduling");
	ck_assert_str_eq(cond("t2", "PodScheduled", "message"), "rejection in Unreserve");
	ck_assert_str_eq(cond("t2", "PodScheduled", "reason"), "Unschedulable");
	ck_assert_ptr_null(kc_json_str(pod("t1"), "spec", "nodeName"));
}
END_TEST

static const char *
pg_phase(const char *name)
{
	const struct json_object *pg = coll_get(registry_find_any(dc, "scheduling.x-k8s.io",
	    "podgroups")->coll, "default", name);

	ck_assert_ptr_nonnull(pg);
	return kc_json_str(pg, "status", "phase");
}

static void
create_podgroup(const char *name, int min)
{
	char body[512];

	(void)snprintf(body, sizeof(body), "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\","
	    "\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"%s\"},\"spec\":{\"minMember\":%d}}",
	    name, min);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups",
	    .body = body }, 201, NULL));
}

/*
 * Only the PodGroups an event touches are recomputed: with many groups
 * settled, one pod's creation, relabelling (both its old and its new
 * group) and deletion still reach the right statuses.
 */
START_TEST(test_podgroup_dirty)
{
	const char *lbl = "\"scheduling.x-k8s.io/pod-group\":\"target\"";
	char name[32];

	ck_assert_int_eq(crd_init(dc) >= 0, 1);
	create_crd();
	for (int i = 0; i < 40; i++) {
		(void)snprintf(name, sizeof(name), "g%d", i);
		create_podgroup(name, 1);
	}
	create_podgroup("target", 2);
	create_pod("t1", 0, lbl, "elsewhere");
	settle();
	ck_assert_str_eq(pg_phase("target"), "Pending");
	ck_assert_str_eq(pg_phase("g7"), "Pending");
	/* A second member: minMember pods exist. */
	create_pod("t2", 0, lbl, "elsewhere");
	settle();
	ck_assert_str_eq(pg_phase("target"), "Scheduling");
	ck_assert_ptr_nonnull(kc_json_get(coll_get(registry_find_any(dc,
	    "scheduling.x-k8s.io", "podgroups")->coll, "default", "target"), "status",
	    "scheduleStartTime"));
	/* t2 moves to g7: target drops below minMember, g7 reaches it. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH,
	    .target = PODS_PATH "/t2", .ctype = "application/merge-patch+json",
	    .body = "{\"metadata\":{\"labels\":{\"scheduling.x-k8s.io/pod-group\":"
	    "\"g7\"}}}" }, 200, NULL));
	settle();
	ck_assert_str_eq(pg_phase("target"), "Pending");
	ck_assert_str_eq(pg_phase("g7"), "Scheduling");
	ck_assert_str_eq(pg_phase("g8"), "Pending");
	/* The old label names a group of the other API group: g7 loses t2. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH,
	    .target = PODS_PATH "/t2", .ctype = "application/merge-patch+json",
	    .body = "{\"metadata\":{\"labels\":{\"scheduling.x-k8s.io/pod-group\":null,"
	    "\"pod-group.scheduling.sigs.k8s.io\":\"g7\"}}}" }, 200, NULL));
	settle();
	ck_assert_str_eq(pg_phase("g7"), "Pending");
	/* Back to target, then a deletion. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH,
	    .target = PODS_PATH "/t2", .ctype = "application/merge-patch+json",
	    .body = "{\"metadata\":{\"labels\":{\"scheduling.x-k8s.io/pod-group\":"
	    "\"target\"}}}" }, 200, NULL));
	settle();
	ck_assert_str_eq(pg_phase("target"), "Scheduling");
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_DELETE,
	    .target = PODS_PATH "/t1?gracePeriodSeconds=0" }, 200, NULL));
	settle();
	ck_assert_ptr_null(pod("t1"));
	ck_assert_str_eq(pg_phase("target"), "Pending");
}
END_TEST

Suite *
dc_scheduler_suite(void)
{
	Suite *s = suite_create("dc_scheduler");
	TCase *tc = tcase_create("loop");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_nodes_loaded);
	tcase_add_test(tc, test_load_errors);
	tcase_add_test(tc, test_bound);
	tcase_add_test(tc, test_unschedulable);
	tcase_add_test(tc, test_gang);
	tcase_add_test(tc, test_binding);
	tcase_add_test(tc, test_priority_admission);
	tcase_add_test(tc, test_gang_timeout);
	tcase_add_test(tc, test_podgroup_dirty);
	suite_add_tcase(s, tc);
	return s;
}

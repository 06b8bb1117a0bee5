/*
 * test_dc_kubelet.c: the simulated kubelets (devcluster/kubelet.c) driven
 * by timers_run() and the fake clock: pod start, IPs from the node's pod
 * CIDR, the annotations that end containers, CrashLoopBackOff, graceful
 * deletion, stopped kubelets, clients that own a pod's status, pods/log
 * (plain, tail, timestamps, previous, follow) and resuming at start.
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
#define ANN		"devcluster.trainyard.dev/"

static struct dc *dc;
static char *tmp;
static struct json_object *deleted_pod;	/* the last DELETED pod event's object */

static const char nodes_yaml[] =
    "apiVersion: v1\n"
    "kind: List\n"
    "items:\n"
    "- apiVersion: v1\n"
    "  kind: Node\n"
    "  metadata: {name: n1}\n"
    "  spec: {podCIDR: 10.244.1.0/24, podCIDRs: [10.244.1.0/24]}\n"
    "  status:\n"
    "    addresses: [{type: InternalIP, address: 10.0.0.1}, {type: Hostname, address: n1}]\n"
    "    allocatable: {cpu: '4', memory: 8Gi, pods: '110'}\n"
    "    conditions: [{type: Ready, status: 'True'}]\n"
    "- apiVersion: v1\n"
    "  kind: Node\n"
    "  metadata: {name: bare}\n"
    "  status:\n"
    "    addresses: [{type: InternalIP, address: 10.0.0.2}]\n"
    "    conditions: [{type: Ready, status: 'True'}]\n";

static void
on_deleted(void *arg, const struct dc_event *ev)
{
	(void)arg;
	if (ev->type != DC_EV_DELETED || strcmp(coll_resource(ev->coll), "pods") != 0)
		return;
	if (deleted_pod != NULL)
		json_object_put(deleted_pod);
	deleted_pod = json_object_get(ev->obj);
}

static void
start(uint64_t delay_ms, bool no_events)
{
	ck_assert_int_eq(kubelet_init(dc, &(struct kubelet_opts){
	    .start_delay_ms = delay_ms, .no_events = no_events }), 0);
}

static void
setup(void)
{
	struct kc_status st = { 0 };
	char *path;

	fake_clock_install(5000000);
	dc = dct_new(NULL);
	tmp = tu_tmpdir();
	path = tu_write(tmp, "nodes.yaml", nodes_yaml);
	ck_assert_int_eq(scheduler_load_nodes(dc, path, &st), 0);
	kc_free(path);
	ck_assert_int_eq(storage_subscribe(dc->store, on_deleted, NULL), 0);
	deleted_pod = NULL;
	start(1000, false);
}

static void
teardown(void)
{
	kubelet_fini(dc);
	storage_unsubscribe(dc->store, on_deleted, NULL);
	if (deleted_pod != NULL)
		json_object_put(deleted_pod);
	deleted_pod = NULL;
	dc = api_free(dc);
	tu_tmpdir_remove(tmp);
	tmp = NULL;
	fake_clock_uninstall();
}

/* Moves the fake clock 'ms' forward, firing every timer on the way. */
static void
advance(uint64_t ms)
{
	(void)timers_run(dc);
	for (int i = 0; i < 100000; i++) {
		int64_t next = timers_next(dc);

		if (next < 0 || (uint64_t)next > ms) {
			fake_clock_advance(ms);
			(void)timers_run(dc);
			return;
		}
		fake_clock_advance((uint64_t)next);
		ms -= (uint64_t)next;
		(void)timers_run(dc);
	}
	ck_abort_msg("the timers never settled");
}

static const struct json_object *
pod(const char *name)
{
	return coll_get(dct_type(dc, "pods")->coll, "default", name);
}

static const char *
pstr(const char *name, const char *a, const char *b)
{
	return kc_json_str(pod(name), "status", a, b);
}

static struct json_object *
cstatus(const char *name, size_t i)
{
	return json_object_array_get_idx(kc_json_get(pod(name), "status",
	    "containerStatuses"), i);
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

/* A pod on 'node' with annotations 'anns' ("\"k\":\"v\",...") and 'spec' extras. */
static void
mkpod_on(const char *name, const char *node, const char *anns, const char *spec)
{
	char body[20000];

	(void)snprintf(body, sizeof(body),
	    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
	    "\"annotations\":{%s}},\"spec\":{\"nodeName\":\"%s\",%s}}", name,
	    anns != NULL ? anns : "", node,
	    spec != NULL ? spec : "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]");
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = PODS_PATH,
	    .body = body }, 201, NULL));
}

static void
mkpod(const char *name, const char *anns, const char *spec)
{
	mkpod_on(name, "n1", anns, spec);
}

static void
patch(const char *target, const char *body)
{
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = target,
	    .ctype = "application/merge-patch+json", .body = body }, 200, NULL));
}

static void
delete_pod(const char *name, int grace)
{
	char target[256], body[128];

	(void)snprintf(target, sizeof(target), PODS_PATH "/%s", name);
	(void)snprintf(body, sizeof(body), "{\"gracePeriodSeconds\":%d}", grace);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_DELETE, .target = target,
	    .body = grace >= 0 ? body : NULL }, 200, NULL));
}

/* Events about pod 'name' with 'reason'; the last one's message in 'msg'. */
static size_t
events(const char *name, const char *reason, char *msg, size_t size)
{
	struct json_object **evs = NULL;
	size_t n = 0, found = 0;

	ck_assert_int_eq(coll_list(dct_type(dc, "events")->coll, "default", NULL, &evs, &n),
	    0);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(kc_json_str(evs[i], "reason"), reason) != 0 ||
		    strcmp(kc_json_str(evs[i], "involvedObject", "name"), name) != 0)
			continue;
		found++;
		ck_assert_str_eq(kc_json_str(evs[i], "source", "component"), "kubelet");
		ck_assert_str_eq(kc_json_str(evs[i], "source", "host"), "n1");
		ck_assert_str_eq(kc_json_str(evs[i], "reportingComponent"), "kubelet");
		if (msg != NULL)
			kc_strlcpy(msg, kc_json_str(evs[i], "message"), size);
	}
	objs_free(evs, n);
	return found;
}

/* GET pods/<name>/log?<query>: the body (static), after checking the status. */
static const char *
get_log(const char *name, const char *query, int want)
{
	static char text[16384];
	struct dc_resp resp;
	char target[512];

	(void)snprintf(target, sizeof(target), PODS_PATH "/%s/log%s%s", name,
	    query != NULL ? "?" : "", query != NULL ? query : "");
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = target }, want,
	    &resp));
	ck_assert_ptr_null(resp.stream);
	kc_strlcpy(text, resp.body.data != NULL ? resp.body.data : "", sizeof(text));
	resp_clear(&resp);
	return text;
}

static bool
is_hex64_id(const char *id)
{
	if (id == NULL || strncmp(id, "containerd://", 13) != 0 || strlen(id) != 13 + 64)
		return false;
	for (const char *p = id + 13; *p != '\0'; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

START_TEST(test_pending_then_running)
{
	struct json_object *c;
	char msg[256];

	mkpod("p", NULL, NULL);
	advance(50);
	ck_assert_uint_eq(kubelet_pods(dc), 1);
	ck_assert_str_eq(pstr("p", "phase", NULL), "Pending");
	ck_assert_str_eq(pstr("p", "hostIP", NULL), "10.0.0.1");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(pod("p"),
	    "status", "hostIPs"), 0), "ip"), "10.0.0.1");
	ck_assert_ptr_nonnull(pstr("p", "startTime", NULL));
	ck_assert_ptr_null(pstr("p", "podIP", NULL));
	ck_assert_str_eq(cond("p", "PodReadyToStartContainers", "status"), "False");
	ck_assert_str_eq(cond("p", "Initialized", "status"), "True");
	ck_assert_str_eq(cond("p", "Ready", "status"), "False");
	ck_assert_str_eq(cond("p", "Ready", "reason"), "ContainersNotReady");
	ck_assert_str_eq(cond("p", "Ready", "message"), "containers with unready status: [main]");
	ck_assert_str_eq(cond("p", "ContainersReady", "reason"), "ContainersNotReady");
	ck_assert_str_eq(cond("p", "PodScheduled", "status"), "True");
	c = cstatus("p", 0);
	ck_assert_str_eq(kc_json_str(c, "state", "waiting", "reason"), "ContainerCreating");
	ck_assert_str_eq(kc_json_str(c, "image"), "busybox");
	ck_assert_str_eq(kc_json_str(c, "imageID"), "");
	ck_assert_str_eq(kc_json_str(c, "name"), "main");
	ck_assert(!kc_json_bool(c, true, "ready"));
	ck_assert(!kc_json_bool(c, true, "started"));
	ck_assert_int_eq(kc_json_int(c, -1, "restartCount"), 0);
	ck_assert_ptr_null(kc_json_get(c, "containerID"));
	/* Still Pending just before the start delay. */
	advance(900);
	ck_assert_str_eq(pstr("p", "phase", NULL), "Pending");
	advance(100);
	ck_assert_str_eq(pstr("p", "phase", NULL), "Running");
	ck_assert_str_eq(pstr("p", "podIP", NULL), "10.244.1.2");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(pod("p"),
	    "status", "podIPs"), 0), "ip"), "10.244.1.2");
	c = cstatus("p", 0);
	ck_assert_ptr_nonnull(kc_json_str(c, "state", "running", "startedAt"));
	ck_assert(kc_json_bool(c, false, "ready"));
	ck_assert(kc_json_bool(c, false, "started"));
	ck_assert(is_hex64_id(kc_json_str(c, "containerID")));
	ck_assert_str_eq(kc_json_str(c, "image"), "docker.io/library/busybox:latest");
	ck_assert_ptr_nonnull(strstr(kc_json_str(c, "imageID"),
	    "docker.io/library/busybox@sha256:"));
	ck_assert_str_eq(cond("p", "PodReadyToStartContainers", "status"), "True");
	ck_assert_str_eq(cond("p", "Ready", "status"), "True");
	ck_assert_str_eq(cond("p", "ContainersReady", "status"), "True");
	ck_assert_ptr_null(cond("p", "Ready", "reason"));
	ck_assert_uint_eq(events("p", "Pulled", msg, sizeof(msg)), 1);
	ck_assert_str_eq(msg, "Container image \"busybox\" already present on machine");
	ck_assert_uint_eq(events("p", "Created", msg, sizeof(msg)), 1);
	ck_assert_str_eq(msg, "Created container: main");
	ck_assert_uint_eq(events("p", "Started", msg, sizeof(msg)), 1);
	ck_assert_str_eq(msg, "Started container main");
	/* Idle: nothing more is written. */
	{
		uint64_t rv = obj_rv(pod("p"));

		advance(60000);
		ck_assert_uint_eq(obj_rv(pod("p")), rv);
	}
}
END_TEST

START_TEST(test_ips)
{
	char ips[3][64];

	mkpod("a", NULL, NULL);
	mkpod("b", NULL, NULL);
	mkpod("h", NULL, "\"hostNetwork\":true,\"containers\":[{\"name\":\"main\","
	    "\"image\":\"busybox\"}]");
	mkpod_on("w", "bare", NULL, NULL);
	advance(1100);
	kc_strlcpy(ips[0], pstr("a", "podIP", NULL), sizeof(ips[0]));
	kc_strlcpy(ips[1], pstr("b", "podIP", NULL), sizeof(ips[1]));
	ck_assert_str_ne(ips[0], ips[1]);
	ck_assert_int_eq(strncmp(ips[0], "10.244.1.", 9), 0);
	ck_assert_int_eq(strncmp(ips[1], "10.244.1.", 9), 0);
	ck_assert_str_eq(pstr("h", "podIP", NULL), "10.0.0.1");
	/* A node without podCIDR: the pod waits. */
	ck_assert_str_eq(pstr("w", "phase", NULL), "Pending");
	ck_assert_str_eq(pstr("w", "hostIP", NULL), "10.0.0.2");
	ck_assert_str_eq(cond("w", "PodReadyToStartContainers", "status"), "False");
	advance(5000);
	ck_assert_str_eq(pstr("w", "phase", NULL), "Pending");
	patch("/api/v1/nodes/bare", "{\"spec\":{\"podCIDR\":\"10.244.7.0/24\"}}");
	advance(50);
	ck_assert_str_eq(pstr("w", "phase", NULL), "Running");
	ck_assert_str_eq(pstr("w", "podIP", NULL), "10.244.7.2");
	/* A pod that goes away gives its address back; the next one gets a fresh one. */
	delete_pod("a", 0);
	advance(50);
	ck_assert_ptr_null(pod("a"));
	mkpod("c", NULL, NULL);
	advance(1100);
	kc_strlcpy(ips[2], pstr("c", "podIP", NULL), sizeof(ips[2]));
	ck_assert_str_ne(ips[2], ips[1]);
	ck_assert_uint_eq(kubelet_pods(dc), 4);
}
END_TEST

START_TEST(test_exit_code_fallback)
{
	struct json_object *t;

	mkpod("f", "\"" ANN "run-seconds\":\"0.5\",\"" ANN "exit-code\":\"3\","
	    "\"" ANN "log\":\"one\\ntwo\\nthree\\n\"",
	    "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\","
	    "\"image\":\"busybox\",\"terminationMessagePolicy\":\"FallbackToLogsOnError\"}]");
	advance(1400);
	ck_assert_str_eq(pstr("f", "phase", NULL), "Running");
	advance(200);
	ck_assert_str_eq(pstr("f", "phase", NULL), "Failed");
	t = kc_json_get(cstatus("f", 0), "state", "terminated");
	ck_assert_int_eq(kc_json_int(t, -1, "exitCode"), 3);
	ck_assert_str_eq(kc_json_str(t, "reason"), "Error");
	ck_assert_str_eq(kc_json_str(t, "message"), "one\ntwo\nthree\n");
	ck_assert(is_hex64_id(kc_json_str(t, "containerID")));
	ck_assert_ptr_nonnull(kc_json_str(t, "startedAt"));
	ck_assert_ptr_nonnull(kc_json_str(t, "finishedAt"));
	ck_assert_str_eq(cond("f", "Ready", "reason"), "PodFailed");
	ck_assert_str_eq(cond("f", "ContainersReady", "reason"), "PodFailed");
	ck_assert_str_eq(cond("f", "PodReadyToStartContainers", "status"), "False");
	ck_assert(!kc_json_bool(cstatus("f", 0), true, "ready"));
	/* Terminal: never touched again, deleted at once. */
	delete_pod("f", -1);
	advance(10);
	ck_assert_ptr_null(pod("f"));
}
END_TEST

START_TEST(test_fallback_limits)
{
	char anns[16384], *p = anns;
	const char *m;

	/* 100 lines of 40 bytes: the last 80 lines, capped at their last 2048 bytes. */
	p += snprintf(p, sizeof(anns), "\"" ANN "run-seconds\":\"0\",\"" ANN "exit-code\":\"1\","
	    "\"" ANN "log\":\"");
	for (int i = 0; i < 100; i++)
		p += snprintf(p, sizeof(anns) - (size_t)(p - anns), "line %03d "
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\\n", i);
	(void)snprintf(p, sizeof(anns) - (size_t)(p - anns), "\"");
	mkpod("big", anns, "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\","
	    "\"image\":\"busybox\",\"terminationMessagePolicy\":\"FallbackToLogsOnError\"}]");
	advance(1100);
	m = kc_json_str(cstatus("big", 0), "state", "terminated", "message");
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(strlen(m), 2048);
	ck_assert_ptr_nonnull(strstr(m, "line 099 "));
	ck_assert_ptr_null(strstr(m, "line 020 "));
}
END_TEST

START_TEST(test_succeeded_and_reasons)
{
	struct json_object *t;

	mkpod("ok", "\"" ANN "run-seconds\":\"2\"", "\"restartPolicy\":\"Never\","
	    "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]");
	mkpod("oom", "\"" ANN "run-seconds\":\"1\",\"" ANN "exit-code\":\"137\","
	    "\"" ANN "reason\":\"OOMKilled\",\"" ANN "termination-message\":\"bye\"",
	    "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\","
	    "\"image\":\"busybox\"}]");
	mkpod("kill", "\"" ANN "run-seconds\":\"1\",\"" ANN "exit-code\":\"137\"",
	    "\"restartPolicy\":\"OnFailure\",\"containers\":[{\"name\":\"main\","
	    "\"image\":\"busybox\"}]");
	mkpod("of", "\"" ANN "run-seconds\":\"1\"", "\"restartPolicy\":\"OnFailure\","
	    "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]");
	advance(2500);
	ck_assert_str_eq(pstr("ok", "phase", NULL), "Running");
	advance(600);
	ck_assert_str_eq(pstr("ok", "phase", NULL), "Succeeded");
	t = kc_json_get(cstatus("ok", 0), "state", "terminated");
	ck_assert_int_eq(kc_json_int(t, -1, "exitCode"), 0);
	ck_assert_str_eq(kc_json_str(t, "reason"), "Completed");
	ck_assert_ptr_null(kc_json_get(t, "message"));
	ck_assert_str_eq(cond("ok", "Ready", "reason"), "PodCompleted");
	ck_assert_str_eq(cond("ok", "Initialized", "status"), "True");
	t = kc_json_get(cstatus("oom", 0), "state", "terminated");
	ck_assert_str_eq(pstr("oom", "phase", NULL), "Failed");
	ck_assert_int_eq(kc_json_int(t, -1, "exitCode"), 137);
	ck_assert_str_eq(kc_json_str(t, "reason"), "OOMKilled");
	ck_assert_str_eq(kc_json_str(t, "message"), "bye");
	/* OnFailure: 137 without the reason annotation is Error and restarts. */
	ck_assert_str_eq(pstr("kill", "phase", NULL), "Running");
	ck_assert_int_eq(kc_json_int(cstatus("kill", 0), -1, "restartCount"), 1);
	ck_assert_str_eq(kc_json_str(cstatus("kill", 0), "lastState", "terminated", "reason"),
	    "Error");
	/* OnFailure and exit 0: done. */
	ck_assert_str_eq(pstr("of", "phase", NULL), "Succeeded");
}
END_TEST

START_TEST(test_config_error)
{
	struct json_object *w;
	char msg[512];

	mkpod("bad", "\"" ANN "exit-code\":\"abc\"", NULL);
	advance(1100);
	ck_assert_str_eq(pstr("bad", "phase", NULL), "Pending");
	w = kc_json_get(cstatus("bad", 0), "state", "waiting");
	ck_assert_str_eq(kc_json_str(w, "reason"), "CreateContainerConfigError");
	ck_assert_str_eq(kc_json_str(w, "message"), "invalid annotation " ANN "exit-code: "
	    "\"abc\": must be an integer from 0 to 255");
	ck_assert_uint_eq(events("bad", "Failed", msg, sizeof(msg)), 1);
	ck_assert_ptr_nonnull(strstr(msg, "Error: invalid annotation " ANN "exit-code"));
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = PODS_PATH "/bad/log" }, 400, NULL), "container \"main\" in pod \"bad\" "
	    "is waiting to start: CreateContainerConfigError");
	/* Fixed: the container starts. */
	patch(PODS_PATH "/bad", "{\"metadata\":{\"annotations\":{\"" ANN "exit-code\":\"0\"}}}");
	advance(50);
	ck_assert_str_eq(pstr("bad", "phase", NULL), "Running");
	ck_assert_uint_eq(events("bad", "Failed", NULL, 0), 1);
	/* Other bad values are named too. */
	mkpod("bad2", "\"" ANN "run-seconds\":\"-1\"", NULL);
	mkpod("bad3", "\"" ANN "log-interval\":\"fast\"", NULL);
	mkpod("bad4", "\"" ANN "ignore-sigterm\":\"yes\"", NULL);
	advance(1100);
	ck_assert_ptr_nonnull(strstr(kc_json_str(cstatus("bad2", 0), "state", "waiting",
	    "message"), ANN "run-seconds"));
	ck_assert_ptr_nonnull(strstr(kc_json_str(cstatus("bad3", 0), "state", "waiting",
	    "message"), ANN "log-interval"));
	ck_assert_ptr_nonnull(strstr(kc_json_str(cstatus("bad4", 0), "state", "waiting",
	    "message"), ANN "ignore-sigterm"));
}
END_TEST

START_TEST(test_crashloop)
{
	struct json_object *c;
	char msg[512], want[512];

	mkpod("crash", "\"" ANN "run-seconds\":\"1\",\"" ANN "exit-code\":\"1\"", NULL);
	advance(2050);
	/* The first exit restarts at once. */
	c = cstatus("crash", 0);
	ck_assert_int_eq(kc_json_int(c, -1, "restartCount"), 1);
	ck_assert_ptr_nonnull(kc_json_get(c, "state", "running"));
	ck_assert_int_eq(kc_json_int(c, -1, "lastState", "terminated", "exitCode"), 1);
	ck_assert_str_ne(kc_json_str(c, "containerID"),
	    kc_json_str(c, "lastState", "terminated", "containerID"));
	ck_assert_str_eq(pstr("crash", "phase", NULL), "Running");
	/* The second waits 10 s. */
	advance(1000);
	c = cstatus("crash", 0);
	ck_assert_str_eq(kc_json_str(c, "state", "waiting", "reason"), "CrashLoopBackOff");
	(void)snprintf(want, sizeof(want), "back-off 10s restarting failed container=main "
	    "pod=crash_default(%s)", kc_json_str(pod("crash"), "metadata", "uid"));
	ck_assert_str_eq(kc_json_str(c, "state", "waiting", "message"), want);
	ck_assert_int_eq(kc_json_int(c, -1, "restartCount"), 1);
	ck_assert_str_eq(pstr("crash", "phase", NULL), "Running");
	ck_assert_str_eq(cond("crash", "Ready", "status"), "False");
	ck_assert_uint_eq(events("crash", "BackOff", msg, sizeof(msg)), 1);
	ck_assert_ptr_nonnull(strstr(msg, "Back-off restarting failed container main in pod "
	    "crash_default("));
	/* previous: the run that just ended. */
	ck_assert_str_eq(get_log("crash", "previous=true", 200), "");
	advance(9900);
	ck_assert_ptr_nonnull(kc_json_get(cstatus("crash", 0), "state", "waiting"));
	advance(200);
	c = cstatus("crash", 0);
	ck_assert_ptr_nonnull(kc_json_get(c, "state", "running"));
	ck_assert_int_eq(kc_json_int(c, -1, "restartCount"), 2);
	/* Then 20 s, 40 s... */
	advance(1100);
	ck_assert_ptr_nonnull(strstr(kc_json_str(cstatus("crash", 0), "state", "waiting",
	    "message"), "back-off 20s "));
	advance(20000);
	advance(1000);
	ck_assert_ptr_nonnull(strstr(kc_json_str(cstatus("crash", 0), "state", "waiting",
	    "message"), "back-off 40s "));
	for (int i = 0; i < 6; i++)
		advance(301000);
	ck_assert_ptr_nonnull(strstr(kc_json_str(cstatus("crash", 0), "state", "waiting",
	    "message"), "back-off 5m0s "));
}
END_TEST

START_TEST(test_graceful_delete)
{
	struct json_object *t;
	char msg[256];

	mkpod("g", NULL, NULL);
	advance(1100);
	ck_assert_str_eq(pstr("g", "phase", NULL), "Running");
	delete_pod("g", -1);
	ck_assert_ptr_nonnull(kc_json_str(pod("g"), "metadata", "deletionTimestamp"));
	advance(50);
	ck_assert_ptr_null(pod("g"));
	ck_assert_ptr_nonnull(deleted_pod);
	ck_assert_str_eq(kc_json_str(deleted_pod, "status", "phase"), "Failed");
	t = kc_json_get(json_object_array_get_idx(kc_json_get(deleted_pod, "status",
	    "containerStatuses"), 0), "state", "terminated");
	ck_assert_int_eq(kc_json_int(t, -1, "exitCode"), 143);
	ck_assert_str_eq(kc_json_str(t, "reason"), "Error");
	ck_assert_uint_eq(events("g", "Killing", msg, sizeof(msg)), 1);
	ck_assert_str_eq(msg, "Stopping container main");
	ck_assert_uint_eq(kubelet_pods(dc), 0);
	/* Deleted before it started: ContainerStatusUnknown. */
	mkpod("early", NULL, NULL);
	advance(100);
	delete_pod("early", -1);
	advance(50);
	ck_assert_ptr_null(pod("early"));
	t = kc_json_get(json_object_array_get_idx(kc_json_get(deleted_pod, "status",
	    "containerStatuses"), 0), "state", "terminated");
	ck_assert_str_eq(kc_json_str(t, "reason"), "ContainerStatusUnknown");
	ck_assert_int_eq(kc_json_int(t, -1, "exitCode"), 137);
}
END_TEST

START_TEST(test_ignore_sigterm)
{
	struct json_object *t;

	mkpod("stub", "\"" ANN "ignore-sigterm\":\"true\"", NULL);
	advance(1100);
	delete_pod("stub", 3);
	advance(1000);
	ck_assert_ptr_nonnull(pod("stub"));
	ck_assert_ptr_nonnull(kc_json_get(cstatus("stub", 0), "state", "running"));
	ck_assert_uint_eq(events("stub", "Killing", NULL, 0), 1);
	advance(2100);
	ck_assert_ptr_null(pod("stub"));
	t = kc_json_get(json_object_array_get_idx(kc_json_get(deleted_pod, "status",
	    "containerStatuses"), 0), "state", "terminated");
	ck_assert_int_eq(kc_json_int(t, -1, "exitCode"), 137);
	ck_assert_str_eq(kc_json_str(t, "reason"), "Error");
}
END_TEST

START_TEST(test_stopped_kubelet)
{
	mkpod("s", NULL, NULL);
	advance(1100);
	patch("/api/v1/nodes/n1", "{\"metadata\":{\"annotations\":{\"" ANN "kubelet\":"
	    "\"stopped\"}}}");
	delete_pod("s", -1);
	advance(60000);
	ck_assert_ptr_nonnull(pod("s"));
	ck_assert_str_eq(pstr("s", "phase", NULL), "Running");
	ck_assert_ptr_nonnull(strstr(get_log("s", NULL, 500), "connect: connection refused"));
	/* New pods are not started either. */
	mkpod("s2", NULL, NULL);
	advance(2000);
	ck_assert_str_eq(pstr("s2", "phase", NULL), "Pending");
	ck_assert_ptr_null(pstr("s2", "hostIP", NULL));
	/* Back: the deletion finishes, the new pod starts. */
	patch("/api/v1/nodes/n1", "{\"metadata\":{\"annotations\":{\"" ANN "kubelet\":null}}}");
	advance(1100);
	ck_assert_ptr_null(pod("s"));
	ck_assert_str_eq(pstr("s2", "phase", NULL), "Running");
}
END_TEST

START_TEST(test_client_wins)
{
	uint64_t rv;

	mkpod("c1", "\"" ANN "run-seconds\":\"5\"", NULL);
	mkpod("c2", NULL, NULL);
	advance(1100);
	patch(PODS_PATH "/c1/status", "{\"status\":{\"phase\":\"Succeeded\"}}");
	advance(10000);
	ck_assert_str_eq(pstr("c1", "phase", NULL), "Succeeded");
	ck_assert_ptr_nonnull(kc_json_get(cstatus("c1", 0), "state", "running"));
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH,
	    .target = PODS_PATH "/c2/status", .ctype = "application/json-patch+json",
	    .body = "[{\"op\":\"replace\",\"path\":\"/status/containerStatuses/0/state\","
	    "\"value\":{\"terminated\":{\"exitCode\":7,\"reason\":\"Mine\"}}}]" }, 200, NULL));
	rv = obj_rv(pod("c2"));
	advance(60000);
	ck_assert_uint_eq(obj_rv(pod("c2")), rv);
	ck_assert_int_eq(kc_json_int(cstatus("c2", 0), -1, "state", "terminated", "exitCode"),
	    7);
	/* Its deletion still finishes. */
	delete_pod("c2", -1);
	advance(50);
	ck_assert_ptr_null(pod("c2"));
}
END_TEST

START_TEST(test_init_containers)
{
	struct json_object *ic;

	mkpod("i", NULL, "\"initContainers\":[{\"name\":\"setup\",\"image\":\"alpine:3\"}],"
	    "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]");
	advance(50);
	ck_assert_str_eq(cond("i", "Initialized", "status"), "False");
	ck_assert_str_eq(cond("i", "Initialized", "reason"), "ContainersNotInitialized");
	ck_assert_str_eq(cond("i", "Initialized", "message"),
	    "containers with incomplete status: [setup]");
	ck_assert_str_eq(kc_json_str(cstatus("i", 0), "state", "waiting", "reason"),
	    "PodInitializing");
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = PODS_PATH "/i/log" }, 400, NULL), "container \"main\" in pod \"i\" "
	    "is waiting to start: PodInitializing");
	advance(1000);
	ck_assert_str_eq(pstr("i", "phase", NULL), "Running");
	ic = json_object_array_get_idx(kc_json_get(pod("i"), "status",
	    "initContainerStatuses"), 0);
	ck_assert_str_eq(kc_json_str(ic, "state", "terminated", "reason"), "Completed");
	ck_assert_int_eq(kc_json_int(ic, -1, "state", "terminated", "exitCode"), 0);
	ck_assert(kc_json_bool(ic, false, "ready"));
	ck_assert_str_eq(kc_json_str(ic, "image"), "docker.io/library/alpine:3");
	ck_assert_str_eq(cond("i", "Initialized", "status"), "True");
	ck_assert_uint_eq(events("i", "Started", NULL, 0), 2);
	/* One regular container: the log needs no container name. */
	ck_assert_str_eq(get_log("i", NULL, 200), "");
	ck_assert_str_eq(get_log("i", "container=setup", 200), "");
}
END_TEST

START_TEST(test_logs)
{
	static const struct { const char *query, *msg; } bad_ints[] = {
		{ "tailLines=x", "strconv.ParseInt: parsing \"x\": invalid syntax" },
		{ "tailLines=", "strconv.ParseInt: parsing \"\": invalid syntax" },
		{ "tailLines=y&sinceSeconds=x", "strconv.ParseInt: parsing \"x\": invalid syntax" },
		{ "limitBytes=99999999999999999999",
		    "strconv.ParseInt: parsing \"99999999999999999999\": value out of range" },
	};
	struct dc_resp resp;
	struct json_object *o;
	const char *t;

	mkpod("l", "\"" ANN "log\":\"alpha\\nbeta\\ngamma\"", NULL);
	mkpod("two", "\"" ANN "log.side\":\"from side\"", "\"containers\":[{\"name\":\"main\","
	    "\"image\":\"busybox\"},{\"name\":\"side\",\"image\":\"busybox\"}]");
	advance(50);
	o = dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = PODS_PATH "/l/log" },
	    400, NULL);
	dct_expect_message(o, "container \"main\" in pod \"l\" is waiting to start: "
	    "ContainerCreating");
	advance(1000);
	ck_assert_str_eq(get_log("l", NULL, 200), "alpha\nbeta\ngamma\n");
	ck_assert_str_eq(get_log("l", "tailLines=2", 200), "beta\ngamma\n");
	ck_assert_str_eq(get_log("l", "tailLines=0", 200), "");
	ck_assert_str_eq(get_log("l", "limitBytes=8", 200), "alpha\nbe");
	ck_assert_str_eq(get_log("l", "sinceSeconds=60", 200), "alpha\nbeta\ngamma\n");
	ck_assert_str_eq(get_log("l", "sinceTime=2100-01-01T00:00:00Z", 200), "");
	t = get_log("l", "timestamps=true&tailLines=1", 200);
	ck_assert_uint_eq(strlen(t), strlen("2023-11-14T22:13:20.000000000Z gamma\n"));
	ck_assert_ptr_nonnull(strstr(t, "Z gamma\n"));
	ck_assert_int_eq(t[4], '-');
	ck_assert_int_eq(t[19], '.');
	o = dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = PODS_PATH "/l/log?previous=true" }, 400, NULL);
	dct_expect_message(o, "previous terminated container \"main\" in pod \"l\" not found");
	o = dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = PODS_PATH "/l/log?tailLines=-1" }, 422, NULL);
	dct_expect_message(o, "PodLogOptions \"l\" is invalid: tailLines: Invalid value: -1: "
	    "must be greater than or equal to 0");
	o = dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = PODS_PATH "/l/log?limitBytes=0&sinceSeconds=0" }, 422, NULL);
	dct_expect_message(o, "PodLogOptions \"l\" is invalid: [limitBytes: Invalid value: 0: "
	    "must be greater than 0, sinceSeconds: Invalid value: 0: must be greater than 0]");
	/* Each int64 as strconv.ParseInt, "" included; sinceSeconds first. */
	for (size_t i = 0; i < KC_ARRAY_SIZE(bad_ints); i++) {
		char target[256];

		(void)snprintf(target, sizeof(target), PODS_PATH "/l/log?%s", bad_ints[i].query);
		o = dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = target }, 400,
		    NULL);
		dct_expect_message(o, bad_ints[i].msg);
	}
	/* Further back than the epoch: every line. */
	ck_assert_str_eq(get_log("l", "sinceSeconds=9223372036854775807", 200),
	    "alpha\nbeta\ngamma\n");
	o = dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = PODS_PATH "/two/log" }, 400, NULL);
	dct_expect_message(o, "a container name must be specified for pod two, choose one of: "
	    "[main side]");
	o = dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = PODS_PATH "/two/log?container=nope" }, 400, NULL);
	dct_expect_message(o, "container nope is not valid for pod two");
	ck_assert_str_eq(get_log("two", "container=side", 200), "from side\n");
	ck_assert_str_eq(get_log("two", "container=main", 200), "");
	/* follow on a running container: a stream. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = PODS_PATH "/l/log?follow=true" }, 200, &resp));
	ck_assert_ptr_nonnull(resp.stream);
	resp_clear(&resp);
}
END_TEST

/* Pulls what a stream has; '*end' when it is over. */
static void
pull_all(struct dc_stream *s, char *out, size_t size, bool *end)
{
	struct dc_chunk *c;

	*end = false;
	while ((c = s->ops->pull(s, end)) != NULL) {
		kc_strlcat(out, c->data, size);
		chunk_unref(c);
	}
	(void)size;
}

START_TEST(test_follow)
{
	struct dc_resp resp;
	char out[1024] = "";
	bool end = false;

	mkpod("fl", "\"" ANN "log\":\"l1\\nl2\\nl3\\nl4\",\"" ANN "log-interval\":\"1s\","
	    "\"" ANN "run-seconds\":\"2.5\"", "\"restartPolicy\":\"Never\","
	    "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]");
	advance(1050);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = PODS_PATH "/fl/log?follow=true" }, 200, &resp));
	ck_assert_ptr_nonnull(resp.stream);
	pull_all(resp.stream, out, sizeof(out), &end);
	ck_assert_str_eq(out, "l1\n");
	ck_assert(!end);
	advance(1000);
	pull_all(resp.stream, out, sizeof(out), &end);
	ck_assert_str_eq(out, "l1\nl2\n");
	ck_assert(!end);
	advance(1000);
	pull_all(resp.stream, out, sizeof(out), &end);
	ck_assert_str_eq(out, "l1\nl2\nl3\n");
	/* The container exits at 2.5 s: l4 is never printed, the stream ends. */
	advance(1000);
	pull_all(resp.stream, out, sizeof(out), &end);
	ck_assert_str_eq(out, "l1\nl2\nl3\n");
	ck_assert(end);
	resp_clear(&resp);
	ck_assert_str_eq(pstr("fl", "phase", NULL), "Succeeded");
	ck_assert_str_eq(get_log("fl", NULL, 200), "l1\nl2\nl3\n");

	/* A followed pod that is deleted ends the stream. */
	mkpod("f2", "\"" ANN "log\":\"x\"", NULL);
	advance(1050);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = PODS_PATH "/f2/log?follow=true&timestamps=true" }, 200, &resp));
	out[0] = '\0';
	pull_all(resp.stream, out, sizeof(out), &end);
	ck_assert_ptr_nonnull(strstr(out, "Z x\n"));
	ck_assert(!end);
	delete_pod("f2", 0);
	pull_all(resp.stream, out, sizeof(out), &end);
	ck_assert(end);
	resp_clear(&resp);

	/* A stream outliving the kubelet ends. */
	mkpod("f3", NULL, NULL);
	advance(1050);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = PODS_PATH "/f3/log?follow=true" }, 200, &resp));
	kubelet_fini(dc);
	pull_all(resp.stream, out, sizeof(out), &end);
	ck_assert(end);
	resp_clear(&resp);
	start(1000, false);
}
END_TEST

START_TEST(test_per_container)
{
	mkpod("pc", "\"" ANN "run-seconds\":\"1\",\"" ANN "exit-code.side\":\"2\"",
	    "\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\","
	    "\"image\":\"busybox\"},{\"name\":\"side\",\"image\":\"busybox\"}]");
	advance(2100);
	ck_assert_str_eq(pstr("pc", "phase", NULL), "Failed");
	ck_assert_int_eq(kc_json_int(cstatus("pc", 0), -1, "state", "terminated", "exitCode"),
	    0);
	ck_assert_int_eq(kc_json_int(cstatus("pc", 1), -1, "state", "terminated", "exitCode"),
	    2);
}
END_TEST

START_TEST(test_resume)
{
	const char *started;
	char before[64];

	mkpod("r", "\"" ANN "run-seconds\":\"20\"", "\"restartPolicy\":\"Never\","
	    "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]");
	mkpod("r2", "\"" ANN "run-seconds\":\"1\",\"" ANN "exit-code\":\"1\"", NULL);
	advance(1100);
	started = kc_json_str(cstatus("r", 0), "state", "running", "startedAt");
	kc_strlcpy(before, started, sizeof(before));
	kubelet_fini(dc);
	ck_assert_uint_eq(kubelet_pods(dc), 0);
	advance(5000);
	start(1000, false);
	ck_assert_uint_eq(kubelet_pods(dc), 2);
	advance(100);
	ck_assert_str_eq(kc_json_str(cstatus("r", 0), "state", "running", "startedAt"), before);
	ck_assert_str_eq(pstr("r", "phase", NULL), "Running");
	/* run-seconds counts from startedAt: 20 s after the start, not after the restart. */
	advance(13000);
	ck_assert_str_eq(pstr("r", "phase", NULL), "Running");
	advance(2000);
	ck_assert_str_eq(pstr("r", "phase", NULL), "Succeeded");
	/* The crash-looping one restarts again. */
	ck_assert_int_ge(kc_json_int(cstatus("r2", 0), -1, "restartCount"), 2);
	/* Its pod IP stays taken: a new pod gets another. */
	mkpod("r3", NULL, NULL);
	advance(1100);
	ck_assert_str_ne(pstr("r3", "podIP", NULL), pstr("r", "podIP", NULL));
	ck_assert_str_ne(pstr("r3", "podIP", NULL), pstr("r2", "podIP", NULL));
}
END_TEST

START_TEST(test_no_events)
{
	kubelet_fini(dc);
	start(0, true);
	mkpod("q", NULL, NULL);
	advance(50);
	ck_assert_str_eq(pstr("q", "phase", NULL), "Running");
	ck_assert_uint_eq(events("q", "Started", NULL, 0), 0);
}
END_TEST

START_TEST(test_init_oom)
{
	mkpod("m1", NULL, NULL);
	mkpod("m2", "\"" ANN "run-seconds\":\"1\"", NULL);
	advance(2500);
	kubelet_fini(dc);
	for (size_t n = 0; n < 200; n++) {
		int r;

		fail_alloc_after(n);
		r = kubelet_init(dc, NULL);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert_uint_eq(kubelet_pods(dc), 2);
			kubelet_fini(dc);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(plugin_state(dc, &kubelet_plugin));
	}
	start(1000, false);
	advance(100);
	ck_assert_str_eq(pstr("m1", "phase", NULL), "Running");
}
END_TEST

static const char small_nodes_yaml[] =
    "apiVersion: v1\n"
    "kind: List\n"
    "items:\n"
    "- apiVersion: v1\n"
    "  kind: Node\n"
    "  metadata: {name: dual}\n"
    "  spec: {podCIDR: 10.244.9.0/24, podCIDRs: [10.244.9.0/24, 'fd00:10:244:9::/64']}\n"
    "  status:\n"
    "    addresses: [{type: InternalIP, address: 10.0.0.9}, {type: InternalIP, "
    "address: 'fd00::9'}]\n"
    "- apiVersion: v1\n"
    "  kind: Node\n"
    "  metadata: {name: tiny}\n"
    "  spec: {podCIDR: 10.244.20.0/30}\n"
    "  status:\n"
    "    addresses: [{type: InternalIP, address: 10.0.0.20}]\n";

START_TEST(test_dual_stack_and_full_range)
{
	struct kc_status st = { 0 };
	struct json_object *ips;
	char *path = tu_write(tmp, "small.yaml", small_nodes_yaml);

	ck_assert_int_eq(scheduler_load_nodes(dc, path, &st), 0);
	kc_free(path);
	mkpod_on("d", "dual", NULL, NULL);
	mkpod_on("t1", "tiny", NULL, NULL);
	advance(1100);
	ips = kc_json_get(pod("d"), "status", "podIPs");
	ck_assert_uint_eq(json_object_array_length(ips), 2);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(ips, 0), "ip"), "10.244.9.2");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(ips, 1), "ip"), "fd00:10:244:9::2");
	ck_assert_uint_eq(json_object_array_length(kc_json_get(pod("d"), "status", "hostIPs")),
	    2);
	/* A /30 has one pod address (.2): the second pod waits for it. */
	ck_assert_str_eq(pstr("t1", "podIP", NULL), "10.244.20.2");
	mkpod_on("t2", "tiny", NULL, NULL);
	advance(1100);
	ck_assert_str_eq(pstr("t2", "phase", NULL), "Pending");
	{
		struct json_object **evs = NULL;
		size_t n = 0, found = 0;

		ck_assert_int_eq(coll_list(dct_type(dc, "events")->coll, "default", NULL, &evs,
		    &n), 0);
		for (size_t i = 0; i < n; i++)
			if (strcmp(kc_json_str(evs[i], "reason"), "FailedCreatePodSandBox") == 0 &&
			    strstr(kc_json_str(evs[i], "message"), "no IP addresses available") !=
			    NULL)
				found++;
		objs_free(evs, n);
		ck_assert_uint_eq(found, 1);
	}
	delete_pod("t1", 0);
	advance(100);
	ck_assert_str_eq(pstr("t2", "phase", NULL), "Running");
	ck_assert_str_eq(pstr("t2", "podIP", NULL), "10.244.20.2");
}
END_TEST

Suite *
dc_kubelet_suite(void)
{
	Suite *s = suite_create("dc_kubelet");
	TCase *tc = tcase_create("kubelet");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_pending_then_running);
	tcase_add_test(tc, test_ips);
	tcase_add_test(tc, test_exit_code_fallback);
	tcase_add_test(tc, test_fallback_limits);
	tcase_add_test(tc, test_succeeded_and_reasons);
	tcase_add_test(tc, test_config_error);
	tcase_add_test(tc, test_crashloop);
	tcase_add_test(tc, test_graceful_delete);
	tcase_add_test(tc, test_ignore_sigterm);
	tcase_add_test(tc, test_stopped_kubelet);
	tcase_add_test(tc, test_client_wins);
	tcase_add_test(tc, test_init_containers);
	tcase_add_test(tc, test_logs);
	tcase_add_test(tc, test_follow);
	tcase_add_test(tc, test_per_container);
	tcase_add_test(tc, test_resume);
	tcase_add_test(tc, test_no_events);
	tcase_add_test(tc, test_init_oom);
	tcase_add_test(tc, test_dual_stack_and_full_range);
	suite_add_tcase(s, tc);
	return s;
}

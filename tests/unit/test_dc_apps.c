/*
 * test_dc_apps.c: apps/v1 Deployments and ReplicaSets (devcluster/apps.c):
 * the pure arithmetic of the rolling update and the pod-template-hash,
 * the strategies' defaults and validation messages, the scale
 * subresource, and the two controllers driven through api_handle(), with
 * pods made Ready by hand as the kubelet would.
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

#define NS		"/api/v1/namespaces/default"
#define DEPLOYS		"/apis/apps/v1/namespaces/default/deployments"
#define MERGE		"application/merge-patch+json"

static struct dc *dc;

static void
setup(void)
{
	fake_clock_install(5000000);
	dc = dct_new(NULL);
	ck_assert_int_eq(apps_init(dc), 0);
	ck_assert_int_eq(apps_init(dc), 0);
}

static void
teardown(void)
{
	apps_fini(dc);
	apps_fini(dc);
	dc = api_free(dc);
	fake_clock_uninstall();
}

/* Runs the loop timers until nothing is due soon. */
static void
settle(void)
{
	for (int i = 0; i < 200; i++) {
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

static struct json_object *
parse(const char *text)
{
	struct json_object *o = NULL;

	ck_assert_int_eq(kc_json_parse(text, strlen(text), &o, NULL), 0);
	return o;
}

/*
 * Pure parts
 */

START_TEST(test_hash)
{
	struct json_object *a = parse("{\"metadata\":{\"labels\":{\"app\":\"web\",\"x\":\"y\"}},"
	    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx\"}]}}");
	struct json_object *b = parse("{\"spec\":{\"containers\":[{\"image\":\"nginx\","
	    "\"name\":\"c\"}]},\"metadata\":{\"labels\":{\"x\":\"y\",\"app\":\"web\"}}}");
	struct json_object *c = parse("{\"metadata\":{\"labels\":{\"app\":\"web\",\"x\":\"y\"}},"
	    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"nginx:2\"}]}}");
	char ha[APPS_HASH_MAX], hb[APPS_HASH_MAX], hc[APPS_HASH_MAX], h1[APPS_HASH_MAX];

	ck_assert_int_eq(apps_template_hash(a, -1, ha), 0);
	ck_assert_int_eq(apps_template_hash(b, -1, hb), 0);
	ck_assert_int_eq(apps_template_hash(c, -1, hc), 0);
	ck_assert_int_eq(apps_template_hash(a, 1, h1), 0);
	/* Key order does not matter; content and the collision count do. */
	ck_assert_str_eq(ha, hb);
	ck_assert_str_ne(ha, hc);
	ck_assert_str_ne(ha, h1);
	/* SafeEncodeString of a decimal uint32: 1 to 10 of these characters. */
	ck_assert_uint_ge(strlen(ha), 1);
	ck_assert_uint_le(strlen(ha), 10);
	ck_assert_uint_eq(strspn(ha, "bcdfghjklmnpqrstvwxz2456789"), strlen(ha));
	json_object_put(a);
	json_object_put(b);
	json_object_put(c);
}
END_TEST

START_TEST(test_scaled)
{
	struct json_object *p = json_object_new_string("25%");
	struct json_object *i = json_object_new_int(2);
	struct json_object *bad = json_object_new_string("25");
	int64_t v, s, u;

	ck_assert_int_eq(apps_scaled(p, 10, true, &v), 0);
	ck_assert_int_eq(v, 3);
	ck_assert_int_eq(apps_scaled(p, 10, false, &v), 0);
	ck_assert_int_eq(v, 2);
	ck_assert_int_eq(apps_scaled(i, 10, false, &v), 0);
	ck_assert_int_eq(v, 2);
	ck_assert_int_eq(apps_scaled(bad, 10, false, &v), -EINVAL);
	/* Defaults 25%/25%: surge rounds up, unavailable down. */
	ck_assert_int_eq(apps_fenceposts(NULL, NULL, 3, &s, &u), 0);
	ck_assert_int_eq(s, 1);
	ck_assert_int_eq(u, 0);
	ck_assert_int_eq(apps_fenceposts(NULL, NULL, 10, &s, &u), 0);
	ck_assert_int_eq(s, 3);
	ck_assert_int_eq(u, 2);
	/* Both zero: maxUnavailable becomes 1. */
	json_object_put(i);
	i = json_object_new_int(0);
	ck_assert_int_eq(apps_fenceposts(i, i, 5, &s, &u), 0);
	ck_assert_int_eq(s, 0);
	ck_assert_int_eq(u, 1);
	json_object_put(p);
	json_object_put(i);
	json_object_put(bad);
}
END_TEST

START_TEST(test_scale_plan)
{
	struct apps_scale_rs one[] = { { .spec = 3, .is_new = true, .desired = 3 } };
	/* 4 -> 8 with maxSurge 2: 5 to add, by size, the larger first. */
	struct apps_scale_rs prop[] = {
		{ .spec = 2, .max_before = 5, .desired = 4, .order = 1, .is_new = true },
		{ .spec = 3, .max_before = 5, .desired = 4, .order = 0 },
	};
	struct apps_scale_rs sat[] = {
		{ .spec = 4, .available = 4, .desired = 4, .order = 1, .is_new = true },
		{ .spec = 1, .desired = 5, .order = 0 },
	};
	struct apps_scale_rs zero[] = {
		{ .spec = 2, .max_before = 5, .order = 1, .is_new = true },
		{ .spec = 3, .max_before = 5, .order = 0 },
	};
	struct apps_scale_rs none[] = {
		{ .spec = 0, .order = 0 }, { .spec = 0, .order = 1 },
	};

	apps_scale_plan(one, 1, 5, 1, 3, true);
	ck_assert_int_eq(one[0].spec, 5);
	apps_scale_plan(prop, 2, 8, 2, 5, true);
	ck_assert_int_eq(prop[0].spec, 4);
	ck_assert_int_eq(prop[1].spec, 6);
	apps_scale_plan(sat, 2, 4, 1, 5, true);
	ck_assert_int_eq(sat[0].spec, 4);
	ck_assert_int_eq(sat[1].spec, 0);
	apps_scale_plan(zero, 2, 0, 0, 5, true);
	ck_assert_int_eq(zero[0].spec, 0);
	ck_assert_int_eq(zero[1].spec, 0);
	/* Nothing active, no new one: the newest takes them. */
	apps_scale_plan(none, 2, 3, 1, 0, true);
	ck_assert_int_eq(none[0].spec, 0);
	ck_assert_int_eq(none[1].spec, 3);
}
END_TEST

START_TEST(test_rolling_plan)
{
	/* A new ReplicaSet to create beside an old one of 4: surge 1. */
	struct apps_rs a[] = { { -1, 0 }, { 4, 4 } };
	/* The new one at 1 and not available: old scaled down by 1 at most. */
	struct apps_rs b[] = { { 1, 0 }, { 4, 4 } };
	/* The new one available: old scaled down further. */
	struct apps_rs c[] = { { 1, 1 }, { 3, 3 } };
	/* Unhealthy old pods go first, whatever the budget. */
	struct apps_rs d[] = { { 2, 2 }, { 1, 1 }, { 2, 0 } };
	/* The new one above the wanted count: scaled down, nothing else. */
	struct apps_rs e[] = { { 6, 6 }, { 1, 1 } };

	apps_rolling_plan(a, 2, 4, 1, 1);
	ck_assert_int_eq(a[0].spec, 1);
	ck_assert_int_eq(a[1].spec, 3);
	apps_rolling_plan(b, 2, 4, 1, 1);
	ck_assert_int_eq(b[0].spec, 1);
	ck_assert_int_eq(b[1].spec, 3);
	apps_rolling_plan(c, 2, 4, 1, 1);
	ck_assert_int_eq(c[0].spec, 2);
	ck_assert_int_eq(c[1].spec, 3);
	apps_rolling_plan(d, 3, 4, 1, 1);
	ck_assert_int_eq(d[0].spec, 2);
	ck_assert_int_eq(d[2].spec, 0);
	apps_rolling_plan(e, 2, 4, 1, 1);
	ck_assert_int_eq(e[0].spec, 4);
	ck_assert_int_eq(e[1].spec, 1);
}
END_TEST

/*
 * The types
 */

static void
create_deploy(const char *name, int replicas, const char *extra_spec, const char *image)
{
	char body[2048];

	(void)snprintf(body, sizeof(body), "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\","
	    "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"replicas\":%d,%s\"selector\":{"
	    "\"matchLabels\":{\"app\":\"%s\"}},\"template\":{\"metadata\":{\"labels\":{"
	    "\"app\":\"%s\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"%s\"}]}}}}",
	    name, replicas, extra_spec, name, name, image);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = DEPLOYS,
	    .body = body }, 201, NULL));
}

static const struct json_object *
deploy(const char *name)
{
	return coll_get(registry_find(dc, "apps", "v1", "deployments")->coll, "default", name);
}

START_TEST(test_defaults)
{
	const struct json_object *d;

	create_deploy("web", 2, "", "nginx:1.25");
	d = deploy("web");
	ck_assert_ptr_nonnull(d);
	ck_assert_str_eq(kc_json_str(d, "spec", "strategy", "type"), "RollingUpdate");
	ck_assert_str_eq(kc_json_str(d, "spec", "strategy", "rollingUpdate", "maxSurge"), "25%");
	ck_assert_str_eq(kc_json_str(d, "spec", "strategy", "rollingUpdate", "maxUnavailable"),
	    "25%");
	ck_assert_int_eq(kc_json_int(d, 0, "spec", "revisionHistoryLimit"), 10);
	ck_assert_int_eq(kc_json_int(d, 0, "spec", "progressDeadlineSeconds"), 600);
	ck_assert_int_eq(kc_json_int(d, 0, "metadata", "generation"), 1);
	/* The template got the pod defaults. */
	ck_assert_str_eq(kc_json_str(d, "spec", "template", "spec", "restartPolicy"), "Always");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(d, "spec",
	    "template", "spec", "containers"), 0), "imagePullPolicy"), "IfNotPresent");
	ck_assert_ptr_nonnull(kc_json_get(d, "status"));
}
END_TEST

START_TEST(test_validation)
{
	struct json_object *o;

	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = DEPLOYS,
	    .body = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"
	    "\"bad\"},\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"x\"}},\"template\":{"
	    "\"metadata\":{\"labels\":{\"app\":\"y\"}},\"spec\":{\"containers\":[{\"name\":"
	    "\"c\",\"image\":\"i\"}]}}}}" }, 422, NULL);
	dct_expect_message(o, "Deployment.apps \"bad\" is invalid: "
	    "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"y\"}: "
	    "`selector` does not match template `labels`");

	create_deploy("web", 1, "", "nginx");
	o = dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = DEPLOYS "/web",
	    .ctype = MERGE, .body = "{\"spec\":{\"selector\":{\"matchLabels\":{\"app\":\"z\"}},"
	    "\"template\":{\"metadata\":{\"labels\":{\"app\":\"z\"}}}}}" }, 422, NULL);
	dct_expect_message(o, "Deployment.apps \"web\" is invalid: spec.selector: Invalid "
	    "value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"z\"}, "
	    "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable");

	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = DEPLOYS,
	    .body = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":"
	    "\"neg\"},\"spec\":{\"replicas\":-1,\"selector\":{\"matchLabels\":{\"app\":\"x\"}},"
	    "\"template\":{\"metadata\":{\"labels\":{\"app\":\"x\"}},\"spec\":{\"restartPolicy\":"
	    "\"Never\",\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}" }, 422, NULL);
	dct_expect_message(o, "Deployment.apps \"neg\" is invalid: [spec.replicas: Invalid "
	    "value: -1: must be greater than or equal to 0, spec.template.spec.restartPolicy: "
	    "Unsupported value: \"Never\": supported values: \"Always\"]");
}
END_TEST

/*
 * The controllers
 */

/* Marks every pod of the namespace Running and Ready, as the kubelet would. */
static size_t
ready_all(void)
{
	struct json_object **pods = NULL;
	size_t n = 0, made = 0;
	char path[512];

	ck_assert_int_eq(coll_list(dct_type(dc, "pods")->coll, "default", NULL, &pods, &n), 0);
	for (size_t i = 0; i < n; i++) {
		const char *phase = kc_json_str(pods[i], "status", "phase");

		if (kc_json_get(pods[i], "metadata", "deletionTimestamp") != NULL ||
		    (phase != NULL && strcmp(phase, "Running") == 0))
			continue;
		(void)snprintf(path, sizeof(path), NS "/pods/%s/status",
		    kc_json_str(pods[i], "metadata", "name"));
		dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = path,
		    .ctype = MERGE, .body = "{\"status\":{\"phase\":\"Running\",\"conditions\":"
		    "[{\"type\":\"Ready\",\"status\":\"True\"}]}}" }, 200, NULL));
		made++;
	}
	objs_free(pods, n);
	return made;
}

/* Pods not being deleted, and how many of them have 'image'. */
static size_t
live_pods(const char *image, size_t *ret_with)
{
	struct json_object **pods = NULL;
	size_t n = 0, live = 0, with = 0;

	ck_assert_int_eq(coll_list(dct_type(dc, "pods")->coll, "default", NULL, &pods, &n), 0);
	for (size_t i = 0; i < n; i++) {
		const char *img = kc_json_str(json_object_array_get_idx(kc_json_get(pods[i], "spec",
		    "containers"), 0), "image");

		if (kc_json_get(pods[i], "metadata", "deletionTimestamp") != NULL)
			continue;
		live++;
		with += img != NULL && strcmp(img, image) == 0;
	}
	objs_free(pods, n);
	*ret_with = with;
	return live;
}

static const char *
cond_reason(const struct json_object *obj, const char *type)
{
	struct json_object *conds = kc_json_get(obj, "status", "conditions");

	for (size_t i = 0; i < json_object_array_length(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);

		if (strcmp(kc_json_str(c, "type"), type) == 0)
			return kc_json_str(c, "reason");
	}
	return "";
}

START_TEST(test_deployment_rollout)
{
	const struct json_object *d;
	struct json_object *o;
	size_t with;

	create_deploy("web", 3, "\"strategy\":{\"rollingUpdate\":{\"maxSurge\":1,"
	    "\"maxUnavailable\":0}},", "nginx:1");
	settle();
	ck_assert_uint_eq(live_pods("nginx:1", &with), 3);
	ck_assert_uint_eq(with, 3);
	d = deploy("web");
	ck_assert_str_eq(cond_reason(d, "Available"), "MinimumReplicasUnavailable");
	ck_assert_str_eq(cond_reason(d, "Progressing"), "ReplicaSetUpdated");
	ready_all();
	settle();
	d = deploy("web");
	ck_assert_int_eq(kc_json_int(d, 0, "status", "availableReplicas"), 3);
	ck_assert_int_eq(kc_json_int(d, 0, "status", "updatedReplicas"), 3);
	ck_assert_str_eq(cond_reason(d, "Available"), "MinimumReplicasAvailable");
	ck_assert_str_eq(cond_reason(d, "Progressing"), "NewReplicaSetAvailable");
	ck_assert_str_eq(kc_json_str(d, "metadata", "annotations",
	    "deployment.kubernetes.io/revision"), "1");

	/* A new image: one surge pod at a time, no old pod goes before it is Ready. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = DEPLOYS "/web",
	    .ctype = MERGE, .body = "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{"
	    "\"name\":\"c\",\"image\":\"nginx:2\"}]}}}}" }, 200, NULL));
	settle();
	ck_assert_uint_eq(live_pods("nginx:2", &with), 4);
	ck_assert_uint_eq(with, 1);
	d = deploy("web");
	ck_assert_str_eq(cond_reason(d, "Progressing"), "ReplicaSetUpdated");
	for (int round = 0; round < 10 && (live_pods("nginx:2", &with), with) < 3; round++) {
		ready_all();
		settle();
		ck_assert_uint_le(live_pods("nginx:2", &with), 4);
	}
	ready_all();
	settle();
	ck_assert_uint_eq(live_pods("nginx:2", &with), 3);
	ck_assert_uint_eq(with, 3);
	d = deploy("web");
	ck_assert_int_eq(kc_json_int(d, 0, "status", "updatedReplicas"), 3);
	ck_assert_str_eq(cond_reason(d, "Progressing"), "NewReplicaSetAvailable");
	ck_assert_str_eq(kc_json_str(d, "metadata", "annotations",
	    "deployment.kubernetes.io/revision"), "2");
	/* Events: three ScalingReplicaSet on the Deployment, pods created and deleted. */
	{
		struct json_object **evs = NULL;
		size_t nev = 0, scaling = 0, created = 0, deleted = 0;

		ck_assert_int_eq(coll_list(dct_type(dc, "events")->coll, "default", NULL, &evs,
		    &nev), 0);
		for (size_t i = 0; i < nev; i++) {
			const char *reason = kc_json_str(evs[i], "reason");

			scaling += strcmp(reason, "ScalingReplicaSet") == 0;
			created += strcmp(reason, "SuccessfulCreate") == 0;
			deleted += strcmp(reason, "SuccessfulDelete") == 0;
		}
		objs_free(evs, nev);
		ck_assert_uint_ge(scaling, 4);
		ck_assert_uint_eq(created, 6);
		ck_assert_uint_eq(deleted, 3);
	}

	/* Scale through the scale subresource. */
	o = dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = DEPLOYS "/web/scale",
	    .ctype = MERGE, .body = "{\"spec\":{\"replicas\":1}}" }, 200, NULL);
	ck_assert_str_eq(kc_json_str(o, "kind"), "Scale");
	ck_assert_int_eq(kc_json_int(o, 0, "spec", "replicas"), 1);
	ck_assert_str_eq(kc_json_str(o, "status", "selector"), "app=web");
	dct_put(o);
	settle();
	ck_assert_uint_eq(live_pods("nginx:2", &with), 1);
	o = dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = DEPLOYS "/web/scale",
	    .ctype = MERGE, .body = "{\"spec\":{\"replicas\":-2}}" }, 422, NULL);
	dct_expect_message(o, "Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid "
	    "value: -2: must be greater than or equal to 0");
}
END_TEST

START_TEST(test_unready_blocks)
{
	size_t with;

	/* maxUnavailable 0: an old pod goes only once a new one is Ready. */
	create_deploy("api", 2, "\"progressDeadlineSeconds\":30,\"strategy\":{"
	    "\"rollingUpdate\":{\"maxSurge\":1,\"maxUnavailable\":0}},", "busybox:1");
	settle();
	ready_all();
	settle();
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = DEPLOYS "/api",
	    .ctype = MERGE, .body = "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{"
	    "\"name\":\"c\",\"image\":\"busybox:2\"}]}}}}" }, 200, NULL));
	for (int i = 0; i < 5; i++) {
		fake_clock_advance(1000);
		settle();
	}
	ck_assert_uint_eq(live_pods("busybox:2", &with), 3);
	ck_assert_uint_eq(with, 1);
	ck_assert_str_eq(cond_reason(deploy("api"), "Progressing"), "ReplicaSetUpdated");
	/* No progress for progressDeadlineSeconds: the deadline fires by itself. */
	fake_clock_advance(30000);
	settle();
	ck_assert_str_eq(cond_reason(deploy("api"), "Progressing"), "ProgressDeadlineExceeded");
	ck_assert_uint_eq(live_pods("busybox:2", &with), 3);
	/* Scaled in the middle of it: spread over both ReplicaSets by size. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = DEPLOYS "/api",
	    .ctype = MERGE, .body = "{\"spec\":{\"replicas\":4}}" }, 200, NULL));
	settle();
	ck_assert_uint_eq(live_pods("busybox:2", &with), 5);
	ck_assert_uint_eq(with, 2);
}
END_TEST

START_TEST(test_recreate_and_cleanup)
{
	size_t with;
	struct json_object **rss = NULL;
	size_t n = 0;

	create_deploy("rec", 2, "\"revisionHistoryLimit\":0,\"strategy\":{\"type\":"
	    "\"Recreate\"},", "img:1");
	settle();
	ready_all();
	settle();
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH, .target = DEPLOYS "/rec",
	    .ctype = MERGE, .body = "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{"
	    "\"name\":\"c\",\"image\":\"img:2\"}]}}}}" }, 200, NULL));
	settle();
	/* The old pods are deleted (graceful deletion is immediate without a node). */
	ck_assert_uint_eq(live_pods("img:2", &with), 2);
	ck_assert_uint_eq(with, 2);
	ready_all();
	settle();
	/* revisionHistoryLimit 0: the old ReplicaSet is gone. */
	ck_assert_int_eq(coll_list(registry_find(dc, "apps", "v1", "replicasets")->coll,
	    "default", NULL, &rss, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(kc_json_str(rss[0], "metadata", "annotations",
	    "deployment.kubernetes.io/revision"), "2");
	objs_free(rss, n);
}
END_TEST

START_TEST(test_table)
{
	struct json_object *o, *rows;

	create_deploy("web", 2, "", "nginx:1.25");
	settle();
	ready_all();
	settle();
	o = dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = DEPLOYS,
	    .accept = "application/json;as=Table;v=v1;g=meta.k8s.io" }, 200, NULL);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o,
	    "columnDefinitions"), 1), "name"), "Ready");
	rows = kc_json_get(o, "rows");
	ck_assert_uint_eq(json_object_array_length(rows), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(kc_json_get(
	    json_object_array_get_idx(rows, 0), "cells"), 1)), "2/2");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(kc_json_get(
	    json_object_array_get_idx(rows, 0), "cells"), 7)), "app=web");
	dct_put(o);
}
END_TEST

START_TEST(test_alloc_failures)
{
	struct json_object *t = parse("{\"metadata\":{\"labels\":{\"app\":\"a\"}},"
	    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}");
	const struct dc_rtype *rst = registry_find(dc, "apps", "v1", "replicasets");
	char ok[APPS_HASH_MAX], h[APPS_HASH_MAX];
	int r;

	ck_assert_int_eq(apps_template_hash(t, -1, ok), 0);
	for (size_t n = 0;; n++) {
		fail_alloc_after(n);
		r = apps_template_hash(t, -1, h);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_uint_lt(n, 1000);
	}
	ck_assert_str_eq(h, ok);
	json_object_put(t);
	/* A Deployment and its controllers' passes under a growing budget: no leak. */
	for (size_t n = 0; n < 400; n++) {
		struct dc_resp resp;

		dct_raw(dc, &(struct dct_call){ .method = DC_POST, .target = DEPLOYS,
		    .body = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{"
		    "\"name\":\"web\"},\"spec\":{\"replicas\":2,\"selector\":{\"matchLabels\":{"
		    "\"app\":\"web\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":"
		    "\"web\"}},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
		    "\"nginx\"}]}}}}" }, &resp, n);
		resp_clear(&resp);
		fail_alloc_after(n);
		(void)timers_run(dc);
		fail_alloc_after(SIZE_MAX);
		if (deploy("web") != NULL && coll_count(rst->coll, "default") > 0)
			break;
	}
	settle();
	ck_assert_ptr_nonnull(deploy("web"));
	ck_assert_uint_eq(coll_count(rst->coll, "default"), 1);
}
END_TEST

Suite *
dc_apps_suite(void)
{
	Suite *s = suite_create("dc_apps");
	TCase *tc = tcase_create("apps");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_hash);
	tcase_add_test(tc, test_scaled);
	tcase_add_test(tc, test_rolling_plan);
	tcase_add_test(tc, test_scale_plan);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_validation);
	tcase_add_test(tc, test_deployment_rollout);
	tcase_add_test(tc, test_unready_blocks);
	tcase_add_test(tc, test_recreate_and_cleanup);
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_alloc_failures);
	suite_add_tcase(s, tc);
	return s;
}

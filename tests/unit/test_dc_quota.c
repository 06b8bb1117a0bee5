/*
 * test_dc_quota.c: ResourceQuota admission and status (quota.c): the
 * pod evaluator's usage, canonical quantities, the exact "exceeded
 * quota" and "must specify" messages, status.used after creates,
 * deletes and terminal phases, dry runs that charge nothing, and
 * count/configmaps.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/json.h>

#include "dc_testutil.h"
#include "testutil.h"

static struct dc *dc;

static void
setup(void)
{
	dc = dct_new(NULL);
	ck_assert_int_eq(quota_init(dc), 0);
}

static void
teardown(void)
{
	quota_fini(dc);
	dc = api_free(dc);
	fail_alloc_after(SIZE_MAX);
}

static void
post(const char *target, const char *body, int want)
{
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = target,
	    .body = body }, want, NULL));
}

static void
post_msg(const char *target, const char *body, const char *msg)
{
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = target, .body = body }, 403, NULL), msg);
}

static void
gpu_pod(const char *name, const char *gpus, int want)
{
	char body[512];

	(void)snprintf(body, sizeof(body), "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"containers\":[{\"name\":\"c\","
	    "\"image\":\"x\",\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"%s\","
	    "\"memory\":\"512Mi\",\"cpu\":\"250m\"},\"limits\":{\"nvidia.com/gpu\":\"%s\","
	    "\"memory\":\"512Mi\",\"cpu\":\"250m\"}}}]}}", name, gpus, gpus);
	post("/api/v1/namespaces/default/pods", body, want);
}

static void
quota(const char *ns, const char *name, const char *hard)
{
	char target[128], body[512];

	(void)snprintf(target, sizeof(target), "/api/v1/namespaces/%s/resourcequotas", ns);
	(void)snprintf(body, sizeof(body), "{\"apiVersion\":\"v1\",\"kind\":\"ResourceQuota\","
	    "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"hard\":%s}}", name, hard);
	post(target, body, 201);
}

/* Fails unless status.used of quota ns/name serializes as 'want'. */
static void
expect_used(const char *ns, const char *name, const char *want)
{
	struct dc_coll *c = storage_find_coll(dc->store, "", "resourcequotas");
	const struct json_object *q;

	ck_assert_ptr_nonnull(c);
	q = coll_get(c, ns, name);
	ck_assert_ptr_nonnull(q);
	ck_assert_str_eq(json_object_to_json_string_ext(kc_json_get(q, "status", "used"),
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), want);
}

START_TEST(format_canonical)
{
	char b[48];

	quota_format(0, false, b, sizeof(b));
	ck_assert_str_eq(b, "0");
	quota_format(500, false, b, sizeof(b));
	ck_assert_str_eq(b, "500m");
	quota_format(1500, false, b, sizeof(b));
	ck_assert_str_eq(b, "1500m");
	quota_format(2000, false, b, sizeof(b));
	ck_assert_str_eq(b, "2");
	quota_format(1000000, false, b, sizeof(b));
	ck_assert_str_eq(b, "1k");
	quota_format(1536LL * 1024 * 1024 * 1000, true, b, sizeof(b));
	ck_assert_str_eq(b, "1536Mi");
	quota_format(1024LL * 1024 * 1024 * 1000, true, b, sizeof(b));
	ck_assert_str_eq(b, "1Gi");
	quota_format(1000LL * 1000, true, b, sizeof(b));
	ck_assert_str_eq(b, "1k");
	/* BinarySI at 1024 or more that is no multiple of 1024: no suffix. */
	quota_format(3000LL * 1000, true, b, sizeof(b));
	ck_assert_str_eq(b, "3000");
}
END_TEST

START_TEST(pod_usage)
{
	struct json_object *pod;
	struct quota_list u;
	struct quota_ent *e;
	static const char text[] = "{\"spec\":{\"containers\":[{\"name\":\"a\","
	    "\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\","
	    "\"nvidia.com/gpu\":\"2\",\"hugepages-2Mi\":\"2Mi\"},\"limits\":{\"cpu\":\"2\","
	    "\"nvidia.com/gpu\":\"2\"}}},{\"name\":\"b\",\"resources\":{\"requests\":"
	    "{\"cpu\":\"500m\"}}}],\"initContainers\":[{\"name\":\"i\",\"resources\":"
	    "{\"requests\":{\"cpu\":\"3\"}}}],\"overhead\":{\"cpu\":\"100m\"}}}";

	ck_assert_int_eq(kc_json_parse(text, strlen(text), &pod, NULL), 0);
	quota_pod_usage(pod, &u);
	ck_assert_ptr_nonnull(e = quota_list_find(&u, "requests.cpu"));
	ck_assert_int_eq(e->milli, 3100);	/* max(1.5, 3) + overhead */
	ck_assert_ptr_nonnull(e = quota_list_find(&u, "cpu"));
	ck_assert_int_eq(e->milli, 3100);
	ck_assert_ptr_nonnull(e = quota_list_find(&u, "limits.cpu"));
	ck_assert_int_eq(e->milli, 2100);	/* limits count the overhead too */
	ck_assert_ptr_nonnull(e = quota_list_find(&u, "requests.memory"));
	ck_assert(e->bin);
	ck_assert_ptr_nonnull(e = quota_list_find(&u, "requests.nvidia.com/gpu"));
	ck_assert_int_eq(e->milli, 2000);
	ck_assert_ptr_null(quota_list_find(&u, "limits.nvidia.com/gpu"));
	ck_assert_ptr_null(quota_list_find(&u, "nvidia.com/gpu"));
	ck_assert_ptr_nonnull(quota_list_find(&u, "hugepages-2Mi"));
	ck_assert_ptr_nonnull(quota_list_find(&u, "requests.hugepages-2Mi"));
	ck_assert_ptr_nonnull(e = quota_list_find(&u, "pods"));
	ck_assert_int_eq(e->milli, 1000);
	ck_assert_ptr_nonnull(quota_list_find(&u, "count/pods"));
	ck_assert_ptr_null(quota_list_find(&u, "limits.memory"));
	/* A terminal pod only counts as an object. */
	ck_assert_int_eq(kc_json_set_str(kc_json_ensure_obj(pod, "status"), "phase",
	    "Succeeded"), 0);
	quota_pod_usage(pod, &u);
	ck_assert_uint_eq(u.n, 1);
	ck_assert_str_eq(u.e[0].name, "count/pods");
	json_object_put(pod);
}
END_TEST

START_TEST(exceeded_message)
{
	quota("default", "q1", "{\"requests.nvidia.com/gpu\":\"8\",\"pods\":\"3\"}");
	expect_used("default", "q1", "{\"pods\":\"0\",\"requests.nvidia.com/gpu\":\"0\"}");
	gpu_pod("p0", "6", 201);
	expect_used("default", "q1", "{\"pods\":\"1\",\"requests.nvidia.com/gpu\":\"6\"}");
	post_msg("/api/v1/namespaces/default/pods", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"name\":\"p1\"},\"spec\":{\"containers\":[{\"name\":\"c\","
	    "\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"4\"}}}]}}",
	    "pods \"p1\" is forbidden: exceeded quota: q1, requested: "
	    "requests.nvidia.com/gpu=4, used: requests.nvidia.com/gpu=6, limited: "
	    "requests.nvidia.com/gpu=8");
	gpu_pod("p2", "2", 201);
	gpu_pod("p3", "0", 201);
	expect_used("default", "q1", "{\"pods\":\"3\",\"requests.nvidia.com/gpu\":\"8\"}");
	post_msg("/api/v1/namespaces/default/pods", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"name\":\"p4\"},\"spec\":{\"containers\":[{\"name\":\"c\","
	    "\"image\":\"x\"}]}}", "pods \"p4\" is forbidden: exceeded quota: q1, "
	    "requested: pods=1, used: pods=3, limited: pods=3");
	/* Other namespaces are not limited. */
	post("/api/v1/namespaces/kube-system/pods", "{\"apiVersion\":\"v1\",\"kind\":"
	    "\"Pod\",\"metadata\":{\"name\":\"p4\"},\"spec\":{\"containers\":[{\"name\":"
	    "\"c\",\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"9\"}}}]}}",
	    201);
}
END_TEST

START_TEST(must_specify)
{
	quota("default", "q1", "{\"limits.cpu\":\"4\",\"requests.memory\":\"1Gi\"}");
	post_msg("/api/v1/namespaces/default/pods", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"name\":\"p1\"},\"spec\":{\"containers\":[{\"name\":\"b\","
	    "\"image\":\"x\"},{\"name\":\"a\",\"image\":\"x\",\"resources\":{\"requests\":"
	    "{\"memory\":\"1Mi\"}}}]}}", "pods \"p1\" is forbidden: failed quota: q1: "
	    "must specify limits.cpu for: a,b; requests.memory for: b");
	gpu_pod("p2", "1", 201);
	expect_used("default", "q1", "{\"limits.cpu\":\"250m\",\"requests.memory\":\"512Mi\"}");
}
END_TEST

START_TEST(used_after_delete_and_terminal)
{
	struct dc_coll *pods = storage_find_coll(dc->store, "", "pods");
	struct json_object *cp;

	quota("default", "q1", "{\"pods\":\"2\",\"count/pods\":\"5\",\"memory\":\"2Gi\"}");
	gpu_pod("p1", "1", 201);
	gpu_pod("p2", "1", 201);
	expect_used("default", "q1",
	    "{\"count/pods\":\"2\",\"memory\":\"1Gi\",\"pods\":\"2\"}");
	/* A pod that finished no longer counts as a pod. */
	ck_assert_ptr_nonnull(cp = kc_json_copy(coll_get(pods, "default", "p1")));
	ck_assert_int_eq(kc_json_set_str(kc_json_ensure_obj(cp, "status"), "phase",
	    "Failed"), 0);
	ck_assert_int_eq(storage_update(dc->store, pods, cp, 0, NULL), 0);
	expect_used("default", "q1",
	    "{\"count/pods\":\"2\",\"memory\":\"512Mi\",\"pods\":\"1\"}");
	gpu_pod("p3", "1", 201);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_DELETE,
	    .target = "/api/v1/namespaces/default/pods/p2?gracePeriodSeconds=0" }, 200,
	    NULL));
	timers_run(dc);
	ck_assert_ptr_null(coll_get(pods, "default", "p2"));
	expect_used("default", "q1",
	    "{\"count/pods\":\"2\",\"memory\":\"512Mi\",\"pods\":\"1\"}");
}
END_TEST

START_TEST(dry_run_not_charged)
{
	quota("default", "q1", "{\"requests.nvidia.com/gpu\":\"4\"}");
	gpu_pod("p1", "3", 201);
	post("/api/v1/namespaces/default/pods?dryRun=All", "{\"apiVersion\":\"v1\","
	    "\"kind\":\"Pod\",\"metadata\":{\"name\":\"p2\"},\"spec\":{\"containers\":"
	    "[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"limits\":"
	    "{\"nvidia.com/gpu\":\"1\"}}}]}}", 201);
	expect_used("default", "q1", "{\"requests.nvidia.com/gpu\":\"3\"}");
	/* A dry run past the limit is still refused. */
	post_msg("/api/v1/namespaces/default/pods?dryRun=All", "{\"apiVersion\":\"v1\","
	    "\"kind\":\"Pod\",\"metadata\":{\"name\":\"p3\"},\"spec\":{\"containers\":"
	    "[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"limits\":"
	    "{\"nvidia.com/gpu\":\"2\"}}}]}}", "pods \"p3\" is forbidden: exceeded quota: "
	    "q1, requested: requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=3, "
	    "limited: requests.nvidia.com/gpu=4");
}
END_TEST

START_TEST(count_configmaps)
{
	static const char cm[] = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
	    "\"metadata\":{\"name\":\"%s\"}}";
	char body[128];

	quota("default", "objects", "{\"count/configmaps\":\"2\",\"configmaps\":\"5\"}");
	for (int i = 0; i < 2; i++) {
		(void)snprintf(body, sizeof(body), cm, i == 0 ? "a" : "b");
		post("/api/v1/namespaces/default/configmaps", body, 201);
	}
	expect_used("default", "objects", "{\"configmaps\":\"2\",\"count/configmaps\":\"2\"}");
	(void)snprintf(body, sizeof(body), cm, "c");
	post_msg("/api/v1/namespaces/default/configmaps", body, "configmaps \"c\" is "
	    "forbidden: exceeded quota: objects, requested: count/configmaps=1, used: "
	    "count/configmaps=2, limited: count/configmaps=2");
	/* Secrets are not limited by it. */
	post("/api/v1/namespaces/default/secrets", "{\"apiVersion\":\"v1\",\"kind\":"
	    "\"Secret\",\"metadata\":{\"name\":\"s\"}}", 201);
}
END_TEST

START_TEST(alloc_failures)
{
	quota("default", "q1", "{\"pods\":\"1\"}");
	for (size_t n = 0; n < 200; n++) {
		struct dc_resp resp;

		dct_raw(dc, &(struct dct_call){ .method = DC_POST,
		    .target = "/api/v1/namespaces/default/configmaps",
		    .body = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
		    "\"metadata\":{\"name\":\"x\"}}" }, &resp, n);
		fail_alloc_after(SIZE_MAX);
		resp_clear(&resp);
		if (coll_get(storage_find_coll(dc->store, "", "configmaps"), "default",
		    "x") != NULL)
			break;
	}
	ck_assert_ptr_nonnull(coll_get(storage_find_coll(dc->store, "", "configmaps"),
	    "default", "x"));
	ck_assert_int_eq(quota_sync_ns(dc, "default"), 0);
	expect_used("default", "q1", "{\"pods\":\"0\"}");
}
END_TEST

Suite *
dc_quota_suite(void)
{
	Suite *s = suite_create("dc_quota");
	TCase *tc = tcase_create("quota");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, format_canonical);
	tcase_add_test(tc, pod_usage);
	tcase_add_test(tc, exceeded_message);
	tcase_add_test(tc, must_specify);
	tcase_add_test(tc, used_after_delete_and_terminal);
	tcase_add_test(tc, dry_run_not_charged);
	tcase_add_test(tc, count_configmaps);
	tcase_add_test(tc, alloc_failures);
	suite_add_tcase(s, tc);
	return s;
}

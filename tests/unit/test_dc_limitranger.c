/*
 * test_dc_limitranger.c: LimitRanger admission and the LimitRange type's
 * defaults (limitranger.c), through api_handle() as kubectl would and
 * through api_create_object() as the simulated controllers do: defaults
 * and the kubernetes.io/limit-ranger annotation, upstream's min, max and
 * ratio messages, Pod sums with sidecars, claims, and the order before
 * ResourceQuota.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/json.h>

#include "dc_testutil.h"
#include "testutil.h"

#define NS	"/api/v1/namespaces/default"

static struct dc *dc;

static void
setup(void)
{
	dc = dct_new(NULL);
	ck_assert_int_eq(limitranger_plugin.init(dc, NULL, NULL), 0);
}

static void
teardown(void)
{
	quota_fini(dc);
	limitranger_plugin.fini(dc);
	ck_assert_ptr_null(plugin_state(dc, &limitranger_plugin));
	dc = api_free(dc);
}

static struct json_object *
call(enum dc_method m, const char *target, const char *body, int want)
{
	return dct_run(dc, &(struct dct_call){ .method = m, .target = target, .body = body },
	    want, NULL);
}

static void
limit_range(const char *name, const char *limits)
{
	char body[2048];

	(void)snprintf(body, sizeof(body), "{\"apiVersion\":\"v1\",\"kind\":\"LimitRange\","
	    "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"limits\":%s}}", name, limits);
	dct_put(call(DC_POST, NS "/limitranges", body, 201));
}

/* POSTs a pod of one container "c" with 'resources' (JSON); returns the reply. */
static struct json_object *
pod(const char *name, const char *resources, int want)
{
	char body[2048];

	(void)snprintf(body, sizeof(body), "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"containers\":[{\"name\":\"c\","
	    "\"image\":\"x\",\"resources\":%s}]}}", name, resources);
	return call(DC_POST, NS "/pods", body, want);
}

/* Item 'i' of the array at o.a.b. */
static struct json_object *
item(const struct json_object *o, const char *a, const char *b, size_t i)
{
	return json_object_array_get_idx(kc_json_get(o, a, b), i);
}

static void
expect_qty(const struct json_object *o, const char *want, const char *which,
    const char *res)
{
	const char *got = kc_json_str(item(o, "spec", "containers", 0), "resources", which,
	    res);

	ck_assert_msg(got != NULL && strcmp(got, want) == 0, "%s.%s: %s, want %s", which,
	    res, got != NULL ? got : "(none)", want);
}

START_TEST(item_defaults)
{
	struct json_object *o;

	limit_range("d", "[{\"type\":\"Container\",\"max\":{\"cpu\":\"2\"},\"min\":"
	    "{\"memory\":\"64Mi\"},\"default\":{\"memory\":\"256Mi\"}},{\"type\":\"Pod\","
	    "\"max\":{\"cpu\":\"4\"}}]");
	o = call(DC_GET, NS "/limitranges/d", NULL, 200);
	ck_assert_str_eq(kc_json_str(item(o, "spec", "limits", 0), "default", "cpu"), "2");
	ck_assert_str_eq(kc_json_str(item(o, "spec", "limits", 0), "default", "memory"),
	    "256Mi");
	ck_assert_str_eq(kc_json_str(item(o, "spec", "limits", 0), "defaultRequest", "cpu"),
	    "2");
	ck_assert_str_eq(kc_json_str(item(o, "spec", "limits", 0), "defaultRequest",
	    "memory"), "256Mi");
	ck_assert_ptr_null(kc_json_get(item(o, "spec", "limits", 1), "default"));
	dct_put(o);
}
END_TEST

/*
 * ValidateLimitRange's texts, in its order; upstream prints the value as
 * the Go struct of the Quantity, here as its quoted text.
 */
START_TEST(item_validation)
{
	struct json_object *o;

	o = call(DC_POST, NS "/limitranges", "{\"apiVersion\":\"v1\",\"kind\":\"LimitRange\","
	    "\"metadata\":{\"name\":\"bad\"},\"spec\":{\"limits\":[{\"type\":\"Container\","
	    "\"min\":{\"cpu\":\"400m\"},\"max\":{\"cpu\":\"200m\"},\"maxLimitRequestRatio\":"
	    "{\"memory\":\"500m\"}},{\"type\":\"Pod\",\"default\":{\"cpu\":\"1\"}},"
	    "{\"type\":\"PersistentVolumeClaim\",\"min\":{\"cpu\":\"1\"}}]}}", 422);
	dct_expect_message(o, "LimitRange \"bad\" is invalid: [spec.limits[0].min[cpu]: "
	    "Invalid value: \"400m\": min value 400m is greater than max value 200m, "
	    "spec.limits[0].defaultRequest[cpu]: Invalid value: \"200m\": min value 400m is "
	    "greater than default request value 200m, spec.limits[0].default[cpu]: Invalid "
	    "value: \"400m\": min value 400m is greater than default value 200m, "
	    "spec.limits[0].maxLimitRequestRatio[memory]: Invalid value: \"500m\": ratio "
	    "500m is less than 1, spec.limits[1].default: Forbidden: may not be specified when "
	    "`type` is 'Pod', spec.limits[2].limits: Required value: either minimum or maximum "
	    "storage value is required, but neither was provided]");
}
END_TEST

START_TEST(pod_defaults)
{
	struct json_object *o;

	/* No LimitRange: nothing is set. */
	o = pod("p0", "{}", 201);
	ck_assert_ptr_null(kc_json_get(o, "metadata", "annotations"));
	dct_put(o);
	limit_range("d", "[{\"type\":\"Container\",\"default\":{\"cpu\":\"500m\","
	    "\"memory\":\"1Gi\"},\"defaultRequest\":{\"cpu\":\"100m\"}}]");
	o = pod("p1", "{\"limits\":{\"memory\":\"512Mi\"}}", 201);
	expect_qty(o, "500m", "limits", "cpu");
	expect_qty(o, "512Mi", "limits", "memory");
	expect_qty(o, "100m", "requests", "cpu");
	ck_assert_str_eq(kc_json_str(o, "metadata", "annotations", "kubernetes.io/limit-ranger"),
	    "LimitRanger plugin set: cpu request for container c; cpu limit for container c");
	dct_put(o);
	/*
	 * Init containers too (defaultRequest memory came from default); a
	 * container that sets everything gets no note.
	 */
	o = call(DC_POST, NS "/pods", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":"
	    "{\"name\":\"p2\"},\"spec\":{\"initContainers\":[{\"name\":\"i\",\"image\":\"x\"}],"
	    "\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"limits\":"
	    "{\"cpu\":\"1\",\"memory\":\"1Gi\"},\"requests\":{\"cpu\":\"1\"}}}]}}", 201);
	ck_assert_str_eq(kc_json_str(o, "metadata", "annotations", "kubernetes.io/limit-ranger"),
	    "LimitRanger plugin set: cpu, memory request for init container i; cpu, memory "
	    "limit for init container i");
	dct_put(o);
}
END_TEST

START_TEST(container_messages)
{
	limit_range("m", "[{\"type\":\"Container\",\"min\":{\"cpu\":\"100m\"},\"max\":"
	    "{\"cpu\":\"1\",\"memory\":\"1Gi\"},\"maxLimitRequestRatio\":{\"cpu\":\"3\"}}]");
	/* max defaults the limits (1, 1Gi) and so the requests. */
	dct_put(pod("ok", "{}", 201));
	dct_expect_message(pod("big", "{\"limits\":{\"cpu\":\"1500m\"}}", 403),
	    "pods \"big\" is forbidden: maximum cpu usage per Container is 1, but limit is "
	    "1500m");
	dct_expect_message(pod("small", "{\"requests\":{\"cpu\":\"50m\"},\"limits\":{\"cpu\":"
	    "\"60m\"}}", 403), "pods \"small\" is forbidden: minimum cpu usage per Container "
	    "is 100m, but request is 50m");
	dct_expect_message(pod("ratio", "{\"requests\":{\"cpu\":\"150m\"},\"limits\":{\"cpu\":"
	    "\"1\"}}", 403), "pods \"ratio\" is forbidden: cpu max limit to request ratio per "
	    "Container is 3, but provided ratio is 6.666667");
	dct_expect_message(pod("two", "{\"requests\":{\"cpu\":\"10m\"},\"limits\":{\"cpu\":"
	    "\"2\",\"memory\":\"2Gi\"}}", 403), "pods \"two\" is forbidden: [minimum cpu usage "
	    "per Container is 100m, but request is 10m, maximum cpu usage per Container is 1, "
	    "but limit is 2, maximum memory usage per Container is 1Gi, but limit is 2Gi, cpu "
	    "max limit to request ratio per Container is 3, but provided ratio is 200.000000]");
}
END_TEST

START_TEST(pod_sums)
{
	limit_range("p", "[{\"type\":\"Pod\",\"max\":{\"memory\":\"600Mi\"},\"min\":"
	    "{\"cpu\":\"1\"}}]");
	/* 200Mi + a 200Mi sidecar = 400Mi; an init container beside the sidecar: 700Mi. */
	dct_expect_message(call(DC_POST, NS "/pods", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"name\":\"s\"},\"spec\":{\"initContainers\":[{\"name\":\"side\","
	    "\"image\":\"x\",\"restartPolicy\":\"Always\",\"resources\":{\"limits\":"
	    "{\"memory\":\"200Mi\"},\"requests\":{\"cpu\":\"500m\"}}},{\"name\":\"init\","
	    "\"image\":\"x\",\"resources\":{\"limits\":{\"memory\":\"500Mi\"}}}],"
	    "\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"limits\":"
	    "{\"memory\":\"200Mi\"},\"requests\":{\"cpu\":\"500m\"}}}]}}", 403),
	    "pods \"s\" is forbidden: maximum memory usage per Pod is 600Mi, but limit is 700Mi");
	dct_expect_message(pod("nocpu", "{}", 403), "pods \"nocpu\" is forbidden: [minimum cpu "
	    "usage per Pod is 1.  No request is specified, maximum memory usage per Pod is "
	    "600Mi.  No limit is specified]");
	dct_put(call(DC_POST, NS "/pods", "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
	    "\"metadata\":{\"name\":\"fits\"},\"spec\":{\"containers\":[{\"name\":\"a\","
	    "\"image\":\"x\",\"resources\":{\"limits\":{\"memory\":\"300Mi\",\"cpu\":"
	    "\"600m\"}}},{\"name\":\"b\",\"image\":\"x\",\"resources\":{\"limits\":{\"memory\":"
	    "\"300Mi\",\"cpu\":\"400m\"}}}]}}", 201));
}
END_TEST

/* Every LimitRange's defaults come before any check. */
START_TEST(defaults_before_checks)
{
	struct json_object *o;

	limit_range("a-min", "[{\"type\":\"Pod\",\"min\":{\"memory\":\"64Mi\"}}]");
	limit_range("b-default", "[{\"type\":\"Container\",\"default\":{\"memory\":"
	    "\"128Mi\"}}]");
	o = pod("p", "{}", 201);
	expect_qty(o, "128Mi", "requests", "memory");
	dct_put(o);
}
END_TEST

START_TEST(claims)
{
	const char *pvc = "{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\","
	    "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
	    "\"resources\":{\"requests\":{\"storage\":\"%s\"}}}}";
	char body[512];

	limit_range("s", "[{\"type\":\"PersistentVolumeClaim\",\"min\":{\"storage\":\"1Gi\"},"
	    "\"max\":{\"storage\":\"10Gi\"}}]");
	(void)snprintf(body, sizeof(body), pvc, "tiny", "500Mi");
	dct_expect_message(call(DC_POST, NS "/persistentvolumeclaims", body, 403),
	    "persistentvolumeclaims \"tiny\" is forbidden: minimum storage usage per "
	    "PersistentVolumeClaim is 1Gi, but request is 500Mi");
	(void)snprintf(body, sizeof(body), pvc, "huge", "20Gi");
	dct_expect_message(call(DC_POST, NS "/persistentvolumeclaims", body, 403),
	    "persistentvolumeclaims \"huge\" is forbidden: maximum storage usage per "
	    "PersistentVolumeClaim is 10Gi, but request is 20Gi");
	(void)snprintf(body, sizeof(body), pvc, "fine", "5Gi");
	dct_put(call(DC_POST, NS "/persistentvolumeclaims", body, 201));
}
END_TEST

START_TEST(controllers_and_quota)
{
	const struct dc_rtype *rt = registry_find(dc, "", "v1", "pods");
	struct json_object *p = NULL, *o;

	ck_assert_int_eq(quota_init(dc), 0);
	limit_range("d", "[{\"type\":\"Container\",\"default\":{\"cpu\":\"400m\"},"
	    "\"defaultRequest\":{\"cpu\":\"250m\"}}]");
	dct_put(call(DC_POST, NS "/resourcequotas", "{\"apiVersion\":\"v1\",\"kind\":"
	    "\"ResourceQuota\",\"metadata\":{\"name\":\"q\"},\"spec\":{\"hard\":"
	    "{\"requests.cpu\":\"1\"}}}", 201));
	/* The quota needs a cpu request, which the LimitRange supplied first. */
	dct_put(pod("a", "{}", 201));
	const char *text = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":"
	    "{\"name\":\"b\",\"namespace\":\"default\"},\"spec\":{\"containers\":[{\"name\":"
	    "\"c\",\"image\":\"x\"}]}}";

	ck_assert_int_eq(kc_json_parse(text, strlen(text), &p, NULL), 0);
	ck_assert_int_eq(api_create_object(dc, rt, p, &o), 0);
	expect_qty(o, "250m", "requests", "cpu");
	json_object_put(o);
	o = call(DC_GET, NS "/resourcequotas/q", NULL, 200);
	ck_assert_str_eq(kc_json_str(o, "status", "used", "requests.cpu"), "500m");
	dct_put(o);
}
END_TEST

Suite *
dc_limitranger_suite(void)
{
	Suite *s = suite_create("dc_limitranger");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, item_defaults);
	tcase_add_test(tc, item_validation);
	tcase_add_test(tc, pod_defaults);
	tcase_add_test(tc, container_messages);
	tcase_add_test(tc, pod_sums);
	tcase_add_test(tc, defaults_before_checks);
	tcase_add_test(tc, claims);
	tcase_add_test(tc, controllers_and_quota);
	suite_add_tcase(s, tc);
	return s;
}

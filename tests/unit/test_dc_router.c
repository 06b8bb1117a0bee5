/*
 * test_dc_router.c: request paths to routes (devcluster/router.c), query
 * parameters and percent-decoding.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>

#include "../../devcluster/devcluster.h"
#include "testutil.h"

struct rcase {
	enum dc_method		 method;
	const char		*path;
	bool			 watch;
	enum dc_route_kind	 kind;
	const char		*verb;
	const char		*group;
	const char		*version;
	const char		*ns;
	const char		*resource;
	const char		*name;
	const char		*sub;
};

static const struct rcase cases[] = {
	{ DC_GET, "/api", false, DC_ROUTE_API, "get", "", "", "", "", "", "" },
	{ DC_GET, "/apis", false, DC_ROUTE_APIS, "get", "", "", "", "", "", "" },
	{ DC_GET, "/apis/", false, DC_ROUTE_APIS, "get", "", "", "", "", "", "" },
	{ DC_GET, "/api/v1", false, DC_ROUTE_GROUP_VERSION, "get", "", "v1", "", "", "", "" },
	{ DC_GET, "/apis/apps", false, DC_ROUTE_GROUP, "get", "apps", "", "", "", "", "" },
	{ DC_GET, "/apis/apps/v1", false, DC_ROUTE_GROUP_VERSION, "get", "apps", "v1",
	  "", "", "", "" },
	{ DC_GET, "/api/v1/pods", false, DC_ROUTE_RESOURCE, "list", "", "v1", "", "pods",
	  "", "" },
	{ DC_GET, "/api/v1/pods", true, DC_ROUTE_RESOURCE, "watch", "", "v1", "", "pods",
	  "", "" },
	{ DC_GET, "/api/v1/namespaces/default/pods", false, DC_ROUTE_RESOURCE, "list", "",
	  "v1", "default", "pods", "", "" },
	{ DC_GET, "/api/v1/namespaces/default/pods/p1", false, DC_ROUTE_RESOURCE, "get",
	  "", "v1", "default", "pods", "p1", "" },
	{ DC_GET, "/api/v1/namespaces/default/pods/p1", true, DC_ROUTE_RESOURCE, "get",
	  "", "v1", "default", "pods", "p1", "" },
	{ DC_GET, "/api/v1/namespaces/default/pods/p1/log", false, DC_ROUTE_RESOURCE,
	  "get", "", "v1", "default", "pods", "p1", "log" },
	{ DC_PUT, "/api/v1/namespaces/default/pods/p1/status", false, DC_ROUTE_RESOURCE,
	  "update", "", "v1", "default", "pods", "p1", "status" },
	{ DC_POST, "/api/v1/namespaces/default/configmaps", false, DC_ROUTE_RESOURCE,
	  "create", "", "v1", "default", "configmaps", "", "" },
	{ DC_PATCH, "/api/v1/namespaces/default/configmaps/c", false, DC_ROUTE_RESOURCE,
	  "patch", "", "v1", "default", "configmaps", "c", "" },
	{ DC_DELETE, "/api/v1/namespaces/default/configmaps/c", false, DC_ROUTE_RESOURCE,
	  "delete", "", "v1", "default", "configmaps", "c", "" },
	{ DC_DELETE, "/api/v1/namespaces/default/configmaps", false, DC_ROUTE_RESOURCE,
	  "deletecollection", "", "v1", "default", "configmaps", "", "" },
	/* The namespace itself and its subresources. */
	{ DC_GET, "/api/v1/namespaces", false, DC_ROUTE_RESOURCE, "list", "", "v1", "",
	  "namespaces", "", "" },
	{ DC_GET, "/api/v1/namespaces/team-a", false, DC_ROUTE_RESOURCE, "get", "", "v1",
	  "", "namespaces", "team-a", "" },
	{ DC_PUT, "/api/v1/namespaces/team-a/finalize", false, DC_ROUTE_RESOURCE, "update",
	  "", "v1", "", "namespaces", "team-a", "finalize" },
	{ DC_GET, "/api/v1/namespaces/team-a/status", false, DC_ROUTE_RESOURCE, "get", "",
	  "v1", "", "namespaces", "team-a", "status" },
	/* Groups. */
	{ DC_GET, "/apis/trainyard.dev/v1beta1/namespaces/ns/runs/r1/status", false,
	  DC_ROUTE_RESOURCE, "get", "trainyard.dev", "v1beta1", "ns", "runs", "r1",
	  "status" },
	{ DC_GET, "/apis/rbac.authorization.k8s.io/v1/clusterroles", false,
	  DC_ROUTE_RESOURCE, "list", "rbac.authorization.k8s.io", "v1", "", "clusterroles",
	  "", "" },
	/* The deprecated watch prefix. */
	{ DC_GET, "/api/v1/watch/namespaces/ns/pods", false, DC_ROUTE_RESOURCE, "watch", "",
	  "v1", "ns", "pods", "", "" },
	{ DC_GET, "/api/v1/watch/namespaces/ns/pods/p1", false, DC_ROUTE_RESOURCE, "watch",
	  "", "v1", "ns", "pods", "p1", "" },
	{ DC_GET, "/api/v1/watch/pods", false, DC_ROUTE_RESOURCE, "watch", "", "v1", "",
	  "pods", "", "" },
	/* Trailing slashes are tolerated, as strings.Trim does upstream. */
	{ DC_GET, "/api/v1/pods/", false, DC_ROUTE_RESOURCE, "list", "", "v1", "", "pods",
	  "", "" },
	/* Non-resource paths. */
	{ DC_GET, "/healthz", false, DC_ROUTE_HEALTH, "get", "", "", "", "healthz", "", "" },
	{ DC_GET, "/livez/ping", false, DC_ROUTE_HEALTH, "get", "", "", "", "livez", "ping",
	  "" },
	{ DC_GET, "/readyz", false, DC_ROUTE_HEALTH, "get", "", "", "", "readyz", "", "" },
	{ DC_GET, "/version", false, DC_ROUTE_VERSION, "get", "", "", "", "", "", "" },
	{ DC_GET, "/version/", false, DC_ROUTE_VERSION, "get", "", "", "", "", "", "" },
	{ DC_GET, "/openapi/v2", false, DC_ROUTE_OPENAPI, "get", "", "", "", "", "", "" },
	{ DC_GET, "/openapi/v3/apis/apps/v1", false, DC_ROUTE_OPENAPI, "get", "", "", "", "",
	  "", "" },
	{ DC_GET, "/swagger-2.0.0.pb-v1", false, DC_ROUTE_OPENAPI, "get", "", "", "", "", "",
	  "" },
	{ DC_POST, "/healthz", false, DC_ROUTE_HEALTH, "post", "", "", "", "healthz", "", "" },
	{ DC_OPTIONS, "/api/v1/pods", false, DC_ROUTE_RESOURCE, "options", "", "v1", "",
	  "pods", "", "" },
};

static const struct { enum dc_method m; const char *path; } bad[] = {
	{ DC_GET, "" },
	{ DC_GET, "api" },
	{ DC_GET, "/" },
	{ DC_GET, "/foo" },
	{ DC_GET, "/version/extra" },
	{ DC_GET, "/api/v1//pods" },
	{ DC_GET, "//api/v1/pods" },
	{ DC_GET, "/api/v1/namespaces/ns/pods/p1/status/extra" },
	{ DC_GET, "/api/v1/pods/p1/status/x" },
	{ DC_GET, "/apis/g/v/a/b/c/d/e/f/g/h/i/j" },
	{ DC_GET, "/api/v1/watch" },
	{ DC_GET, "/api/v1/watch/" },
	{ DC_GET, "/apisx" },
	{ DC_GET, "/api/v1/namespaces/a//pods" },
};

START_TEST(routes)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		const struct rcase *c = &cases[i];
		struct dc_route r;

		ck_assert_int_eq(router_parse(c->method, c->path, c->watch, &r), 0);
		ck_assert_msg(r.kind == c->kind, "%s: kind %d, want %d", c->path, r.kind,
		    c->kind);
		ck_assert_msg(strcmp(r.verb, c->verb) == 0, "%s: verb %s, want %s", c->path,
		    r.verb, c->verb);
		ck_assert_str_eq(r.group, c->group);
		ck_assert_str_eq(r.version, c->version);
		ck_assert_str_eq(r.ns, c->ns);
		ck_assert_str_eq(r.resource, c->resource);
		ck_assert_str_eq(r.name, c->name);
		ck_assert_str_eq(r.subresource, c->sub);
	}
}
END_TEST

START_TEST(malformed)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
		struct dc_route r;

		memset(&r, 0x55, sizeof(r));
		ck_assert_int_eq(router_parse(bad[i].m, bad[i].path, false, &r), 0);
		ck_assert_msg(r.kind == DC_ROUTE_NONE, "%s parsed as %d", bad[i].path,
		    r.kind);
	}
	{
		struct dc_route r;

		ck_assert_int_eq(router_parse(DC_GET, NULL, false, &r), 0);
		ck_assert_int_eq(r.kind, DC_ROUTE_NONE);
	}
}
END_TEST

START_TEST(long_segments)
{
	char path[2 * DC_SEGMENT_MAX + 64], name[DC_SEGMENT_MAX + 2];
	struct dc_route r;

	/* A segment that just fits. */
	memset(name, 'a', DC_SEGMENT_MAX - 1);
	name[DC_SEGMENT_MAX - 1] = '\0';
	(void)snprintf(path, sizeof(path), "/api/v1/namespaces/d/pods/%s", name);
	ck_assert_int_eq(router_parse(DC_GET, path, false, &r), 0);
	ck_assert_int_eq(r.kind, DC_ROUTE_RESOURCE);
	ck_assert_str_eq(r.name, name);
	/* One byte more: nothing. */
	memset(name, 'a', DC_SEGMENT_MAX);
	name[DC_SEGMENT_MAX] = '\0';
	(void)snprintf(path, sizeof(path), "/api/v1/namespaces/d/pods/%s", name);
	ck_assert_int_eq(router_parse(DC_GET, path, false, &r), 0);
	ck_assert_int_eq(r.kind, DC_ROUTE_NONE);
}
END_TEST

START_TEST(huge_path)
{
	size_t n = 10000;
	char *path = kc_malloc(n + 1);
	struct dc_route r;

	ck_assert_ptr_nonnull(path);
	memset(path, '/', n);
	path[n] = '\0';
	ck_assert_int_eq(router_parse(DC_GET, path, false, &r), 0);
	ck_assert_int_eq(r.kind, DC_ROUTE_NONE);
	kc_free(path);
}
END_TEST

START_TEST(methods)
{
	ck_assert_int_eq(method_from("GET"), DC_GET);
	ck_assert_int_eq(method_from("patch"), DC_PATCH);
	ck_assert_int_eq(method_from("DELETE"), DC_DELETE);
	ck_assert_int_eq(method_from("BREW"), DC_METHOD_OTHER);
	ck_assert_str_eq(method_name(DC_PUT), "PUT");
	ck_assert_str_eq(method_name((enum dc_method)99), "OTHER");
}
END_TEST

START_TEST(targets)
{
	struct dc_req req = { 0 };

	ck_assert_int_eq(req_set_target(&req, "/api/v1/namespaces/a%2Db/pods?"
	    "fieldSelector=metadata.name%3Dr1&labelSelector=tier+in+(a,b)&watch&limit=5"
	    "&limit=7"), 0);
	ck_assert_str_eq(req.path, "/api/v1/namespaces/a-b/pods");
	ck_assert_uint_eq(req.nparams, 5);
	ck_assert_str_eq(req_param(&req, "fieldSelector"), "metadata.name=r1");
	ck_assert_str_eq(req_param(&req, "labelSelector"), "tier in (a,b)");
	ck_assert_str_eq(req_param(&req, "watch"), "");
	ck_assert(req_has_param(&req, "watch"));
	/* The first of repeated parameters wins, as Go's Values.Get(). */
	ck_assert_str_eq(req_param(&req, "limit"), "5");
	ck_assert_ptr_null(req_param(&req, "continue"));
	ck_assert(!req_has_param(&req, "continue"));
	req_clear(&req);
	ck_assert_ptr_null(req.path);
	ck_assert_uint_eq(req.nparams, 0);

	/* A '+' in the path stays; empty query items are skipped. */
	ck_assert_int_eq(req_set_target(&req, "/a+b?&&x=1&"), 0);
	ck_assert_str_eq(req.path, "/a+b");
	ck_assert_uint_eq(req.nparams, 1);
	req_clear(&req);
}
END_TEST

/*
 * Boolean parameters as apimachinery's Convert_Slice_string_To_bool reads
 * them: only absent, "0" and "false" (strings.EqualFold) are false. The
 * official Python client sends watch=True.
 */
START_TEST(bool_params)
{
	static const struct { const char *target; bool want; } bools[] = {
		{ "/x", false },
		{ "/x?watch=true", true },
		{ "/x?watch=True", true },
		{ "/x?watch=TRUE", true },
		{ "/x?watch=1", true },
		{ "/x?watch=t", true },
		{ "/x?watch=yes", true },
		{ "/x?watch=2", true },
		{ "/x?watch=", true },
		{ "/x?watch", true },
		{ "/x?watch=false", false },
		{ "/x?watch=False", false },
		{ "/x?watch=FALSE", false },
		{ "/x?watch=fAlSe", false },
		{ "/x?watch=0", false },
		{ "/x?watch=fal%C5%BFe", false },	/* EqualFold: the long s is an s */
		{ "/x?watch=00", true },
		{ "/x?watch=+0", true },
		{ "/x?watch=f", true },
		{ "/x?watch=falsey", true },
		{ "/x?watch=false%20", true },
		{ "/x?watch=fals", true },
		{ "/x?watch=0&watch=1", false },	/* the first value, as upstream */
		{ "/x?watch=1&watch=0", true },
		{ "/x?watchx=1", false },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(bools); i++) {
		struct dc_req req = { 0 };

		ck_assert_int_eq(req_set_target(&req, bools[i].target), 0);
		ck_assert_msg(req_param_bool(&req, "watch") == bools[i].want, "%s",
		    bools[i].target);
		req_clear(&req);
	}
}
END_TEST

/*
 * int64 parameters as apimachinery's Convert_Slice_string_To_int64 (and
 * _Pointer_int64) read them: strconv.ParseInt(first value, 10, 64), the
 * error strconv's, its input quoted as Go's %q does.
 */
START_TEST(int_params)
{
	static const struct {
		const char	*target;
		int		 r;
		int64_t		 want;
		const char	*err;
	} ints[] = {
		{ "/x", 0, 7, NULL },
		{ "/x?limit=5", 1, 5, NULL },
		{ "/x?limit=0", 1, 0, NULL },
		{ "/x?limit=-3", 1, -3, NULL },
		{ "/x?limit=%2B4", 1, 4, NULL },		/* "+4" */
		{ "/x?limit=007", 1, 7, NULL },
		{ "/x?limit=9223372036854775807", 1, INT64_MAX, NULL },
		{ "/x?limit=-9223372036854775808", 1, INT64_MIN, NULL },
		{ "/x?limit=2&limit=abc", 1, 2, NULL },		/* the first value */
		{ "/x?limitx=1&limit=3", 1, 3, NULL },
		{ "/x?limit=abc", -EINVAL, 0, "strconv.ParseInt: parsing \"abc\": invalid syntax" },
		{ "/x?limit=", -EINVAL, 0, "strconv.ParseInt: parsing \"\": invalid syntax" },
		{ "/x?limit", -EINVAL, 0, "strconv.ParseInt: parsing \"\": invalid syntax" },
		{ "/x?limit=abc&limit=2", -EINVAL, 0,
		    "strconv.ParseInt: parsing \"abc\": invalid syntax" },
		{ "/x?limit=-", -EINVAL, 0, "strconv.ParseInt: parsing \"-\": invalid syntax" },
		{ "/x?limit=%2B-1", -EINVAL, 0,
		    "strconv.ParseInt: parsing \"+-1\": invalid syntax" },
		{ "/x?limit=+1", -EINVAL, 0, "strconv.ParseInt: parsing \" 1\": invalid syntax" },
		{ "/x?limit=1%20", -EINVAL, 0, "strconv.ParseInt: parsing \"1 \": invalid syntax" },
		{ "/x?limit=1_000", -EINVAL, 0,
		    "strconv.ParseInt: parsing \"1_000\": invalid syntax" },
		{ "/x?limit=0x10", -EINVAL, 0,
		    "strconv.ParseInt: parsing \"0x10\": invalid syntax" },
		{ "/x?limit=1.5", -EINVAL, 0, "strconv.ParseInt: parsing \"1.5\": invalid syntax" },
		{ "/x?limit=1s", -EINVAL, 0, "strconv.ParseInt: parsing \"1s\": invalid syntax" },
		{ "/x?limit=a%22b%0A", -EINVAL, 0,
		    "strconv.ParseInt: parsing \"a\\\"b\\n\": invalid syntax" },
		{ "/x?limit=9223372036854775808", -ERANGE, 0,
		    "strconv.ParseInt: parsing \"9223372036854775808\": value out of range" },
		{ "/x?limit=-9223372036854775809", -ERANGE, 0,
		    "strconv.ParseInt: parsing \"-9223372036854775809\": value out of range" },
		{ "/x?limit=99999999999999999999", -ERANGE, 0,
		    "strconv.ParseInt: parsing \"99999999999999999999\": value out of range" },
		/* Left to right: the first fault names the error. */
		{ "/x?limit=99999999999999999999x", -ERANGE, 0,
		    "strconv.ParseInt: parsing \"99999999999999999999x\": value out of range" },
		{ "/x?limit=9x9999999999999999999", -EINVAL, 0,
		    "strconv.ParseInt: parsing \"9x9999999999999999999\": invalid syntax" },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(ints); i++) {
		struct dc_req req = { 0 };
		int64_t v = 7;
		char err[128] = "";

		ck_assert_int_eq(req_set_target(&req, ints[i].target), 0);
		ck_assert_msg(req_param_i64(&req, "limit", &v, err, sizeof(err)) == ints[i].r,
		    "%s", ints[i].target);
		if (ints[i].r >= 0)
			ck_assert_msg(v == ints[i].want, "%s: %" PRId64, ints[i].target, v);
		else
			ck_assert_str_eq(err, ints[i].err);
		req_clear(&req);
	}
}
END_TEST

/* dryRun as a []string: every value counts, each must be "All". */
START_TEST(dry_run_params)
{
	static const struct {
		const char	*target;
		bool		 ok, dry;
		const char	*repr;
	} runs[] = {
		{ "/x", true, false, "[]string{}" },
		{ "/x?dryRun=All", true, true, "[]string{\"All\"}" },
		{ "/x?dryRun=All&dryRun=All", true, true, "[]string{\"All\", \"All\"}" },
		{ "/x?dryRun=", false, false, "[]string{\"\"}" },
		{ "/x?dryRun", false, false, "[]string{\"\"}" },
		{ "/x?dryRun=all", false, false, "[]string{\"all\"}" },
		{ "/x?dryRun=All&dryRun=x", false, false, "[]string{\"All\", \"x\"}" },
		{ "/x?dryRun=a%22b", false, false, "[]string{\"a\\\"b\"}" },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(runs); i++) {
		struct dc_req req = { 0 };
		char val[64];
		bool dry = !runs[i].dry;

		ck_assert_int_eq(req_set_target(&req, runs[i].target), 0);
		ck_assert_msg(req_param_dry_run(&req, &dry, val, sizeof(val)) == runs[i].ok, "%s",
		    runs[i].target);
		ck_assert_msg(dry == runs[i].dry, "%s", runs[i].target);
		ck_assert_str_eq(val, runs[i].repr);
		req_clear(&req);
	}
}
END_TEST

START_TEST(bad_escapes)
{
	static const char *const bad_targets[] = {
		"/a%zz", "/a%", "/a%2", "/a%00b", "/ok?x=%G0", "/ok?x=%", "/ok?x=%0",
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(bad_targets); i++) {
		struct dc_req req = { 0 };

		ck_assert_msg(req_set_target(&req, bad_targets[i]) == -EINVAL, "%s",
		    bad_targets[i]);
		req_clear(&req);
	}
}
END_TEST

START_TEST(too_many_params)
{
	struct dc_req req = { 0 };
	char kv[32];

	for (int i = 0; i < DC_PARAMS_MAX; i++) {
		(void)snprintf(kv, sizeof(kv), "k%d=v", i);
		ck_assert_int_eq(req_add_param(&req, kv), 0);
	}
	ck_assert_int_eq(req_add_param(&req, "one=more"), -E2BIG);
	ck_assert_uint_eq(req.nparams, DC_PARAMS_MAX);
	req_clear(&req);
}
END_TEST

START_TEST(decode)
{
	char *out = NULL;

	ck_assert_int_eq(percent_decode("a%41+%2f", 8, &out), 0);
	ck_assert_str_eq(out, "aA+/");
	kc_free(out);
	ck_assert_int_eq(percent_decode("%", 1, &out), -EINVAL);
	ck_assert_int_eq(percent_decode("x%4", 3, &out), -EINVAL);
}
END_TEST

START_TEST(alloc_failures)
{
	for (size_t budget = 0;; budget++) {
		struct dc_req req = { 0 };
		int r;

		fail_alloc_after(budget);
		r = req_set_target(&req, "/api/v1/pods?a=1&b=2&c");
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert_uint_eq(req.nparams, 3);
			req_clear(&req);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		req_clear(&req);
	}
}
END_TEST

Suite *
dc_router_suite(void)
{
	Suite *s = suite_create("dc_router");
	TCase *tc = tcase_create("router");

	tcase_add_test(tc, routes);
	tcase_add_test(tc, malformed);
	tcase_add_test(tc, long_segments);
	tcase_add_test(tc, huge_path);
	tcase_add_test(tc, methods);
	tcase_add_test(tc, targets);
	tcase_add_test(tc, bool_params);
	tcase_add_test(tc, int_params);
	tcase_add_test(tc, dry_run_params);
	tcase_add_test(tc, bad_escapes);
	tcase_add_test(tc, too_many_params);
	tcase_add_test(tc, decode);
	tcase_add_test(tc, alloc_failures);
	suite_add_tcase(s, tc);
	return s;
}

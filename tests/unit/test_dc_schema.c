/*
 * test_dc_schema.c: CustomResourceDefinition validation, custom resource
 * validation, pruning and defaulting (devcluster/schema.c).
 *
 * Most cases are data under tests/fixtures/schema/: run-crd.yaml and
 * podgroup-crd.yaml (realistic CRDs that must pass), crd-cases.yaml (CRDs
 * kube-apiserver rejects, as edits of a valid base, with every cause it
 * prints), validate.yaml (one case per keyword, passing and failing, with
 * exact messages), prune.yaml and default.yaml. Every case also checks
 * what must not change: validation never touches its input.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/yaml.h>

#include "../../devcluster/schema.h"
#include "testutil.h"

static int sentinel_storage;
#define SENTINEL	((struct json_object *)(void *)&sentinel_storage)

static struct json_object *
load(const char *name)
{
	struct kc_status st = { 0 };
	struct json_object *o = NULL;
	size_t len;
	char *text;
	int r;

	text = tu_fixture(name, &len);
	r = kc_yaml_parse_one(text, len, NULL, &o, &st);
	kc_free(text);
	ck_assert_msg(r == 0, "%s: %s", name, st.message);
	return o;
}

static struct json_object *
parse(const char *json)
{
	struct kc_status st = { 0 };
	struct json_object *o = NULL;

	ck_assert_msg(kc_json_parse(json, strlen(json), &o, &st) == 0, "%s: %s", json,
	    st.message);
	return o;
}

/* '*' matches any run of characters; everything else is literal. */
static bool
glob(const char *p, const char *s)
{
	if (*p == '\0')
		return *s == '\0';
	if (*p == '*') {
		for (;; s++) {
			if (glob(p + 1, s))
				return true;
			if (*s == '\0')
				return false;
		}
	}
	return *s == *p && glob(p + 1, s + 1);
}

static void
err_line(const struct schema_err *e, char *buf, size_t size)
{
	(void)snprintf(buf, size, "%s %s: %s", e->type, e->field, e->body);
}

static void
dump_errs(const char *name, const struct schema_errs *errs)
{
	char line[2048];

	for (size_t i = 0; i < errs->n; i++) {
		err_line(&errs->items[i], line, sizeof(line));
		fprintf(stderr, "  %s: got [%zu] %s\n", name, i, line);
	}
}

/* Asserts the list is exactly 'want' (an array of patterns), in order. */
static void
check_errs(const char *name, const struct schema_errs *errs, const struct json_object *want)
{
	size_t n = want != NULL ? json_object_array_length(want) : 0;
	char line[2048];

	if (errs->n != n)
		dump_errs(name, errs);
	ck_assert_msg(errs->n == n, "%s: %zu errors, want %zu", name, errs->n, n);
	for (size_t i = 0; i < n; i++) {
		const char *w = json_object_get_string(json_object_array_get_idx(want, i));

		err_line(&errs->items[i], line, sizeof(line));
		if (!glob(w, line))
			dump_errs(name, errs);
		ck_assert_msg(glob(w, line), "%s: error %zu:\n got: %s\nwant: %s", name, i, line, w);
	}
}

/*
 * JSON pointers for the edits of crd-cases.yaml.
 */
static struct json_object *
jp_parent(struct json_object *root, const char *ptr, char *last, size_t size)
{
	struct json_object *cur = root;
	const char *p = ptr;

	ck_assert_msg(*p == '/', "pointer %s", ptr);
	for (;;) {
		const char *next = strchr(p + 1, '/');
		size_t n = next != NULL ? (size_t)(next - p - 1) : strlen(p + 1);
		char tok[256];

		ck_assert_uint_lt(n, sizeof(tok));
		memcpy(tok, p + 1, n);
		tok[n] = '\0';
		if (next == NULL) {
			ck_assert_uint_lt(n, size);
			memcpy(last, tok, n + 1);
			return cur;
		}
		if (json_object_get_type(cur) == json_type_array)
			cur = json_object_array_get_idx(cur, (size_t)strtoul(tok, NULL, 10));
		else
			cur = json_object_object_get(cur, tok);
		ck_assert_msg(cur != NULL, "pointer %s: no %s", ptr, tok);
		p = next;
	}
}

static void
jp_set(struct json_object *root, const char *ptr, const struct json_object *v)
{
	char last[256];
	struct json_object *parent = jp_parent(root, ptr, last, sizeof(last));
	struct json_object *copy = v != NULL ? kc_json_copy(v) : NULL;

	if (json_object_get_type(parent) == json_type_array) {
		size_t i = (size_t)strtoul(last, NULL, 10);

		ck_assert_int_eq(json_object_array_put_idx(parent, i, copy), 0);
	} else
		ck_assert_int_eq(json_object_object_add(parent, last, copy), 0);
}

/* jp_set() that takes ownership of 'v'. */
static void
jp_put(struct json_object *root, const char *ptr, struct json_object *v)
{
	jp_set(root, ptr, v);
	json_object_put(v);
}

static void
jp_remove(struct json_object *root, const char *ptr)
{
	char last[256];
	struct json_object *parent = jp_parent(root, ptr, last, sizeof(last));

	ck_assert_int_eq(json_object_get_type(parent), json_type_object);
	json_object_object_del(parent, last);
}

/*
 * CRDs
 */

START_TEST(test_crd_run_valid)
{
	struct json_object *crd = load("schema/run-crd.yaml"), *before;
	struct schema_errs errs = { 0 };
	struct kc_status st = { 0 };
	const struct json_object *s, *conv;

	ck_assert_int_eq(schema_crd_default(crd), 0);
	conv = kc_json_get(crd, "spec", "conversion");
	ck_assert_str_eq(kc_json_str(conv, "strategy"), "None");
	before = kc_json_copy(crd);
	ck_assert_int_eq(schema_crd_validate(crd, NULL, &errs, &st), 0);
	dump_errs("run", &errs);
	ck_assert_uint_eq(errs.n, 0);
	ck_assert(kc_json_equal(crd, before));
	/* Valid against itself as an update, too. */
	ck_assert_int_eq(schema_crd_validate(crd, before, &errs, &st), 0);
	ck_assert_uint_eq(errs.n, 0);
	s = schema_crd_version_schema(crd, "v1alpha1");
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(kc_json_str(s, "description"), "Run is a distributed training job.");
	ck_assert_ptr_null(schema_crd_version_schema(crd, "v1"));
	ck_assert_ptr_null(schema_crd_version(crd, NULL));
	ck_assert_str_eq(schema_crd_storage_version(crd), "v1alpha1");
	json_object_put(before);
	json_object_put(crd);
}
END_TEST

START_TEST(test_crd_podgroup_valid)
{
	struct json_object *crd = load("schema/podgroup-crd.yaml");
	struct schema_errs errs = { 0 };
	struct kc_status st = { 0 };

	ck_assert_int_eq(schema_crd_default(crd), 0);
	ck_assert_int_eq(schema_crd_validate(crd, NULL, &errs, &st), 0);
	dump_errs("podgroup", &errs);
	ck_assert_uint_eq(errs.n, 0);
	ck_assert_ptr_nonnull(schema_crd_version_schema(crd, "v1alpha1"));
	json_object_put(crd);
}
END_TEST

START_TEST(test_crd_cases)
{
	struct json_object *cases = load("schema/crd-cases.yaml");
	size_t n = json_object_array_length(cases);

	ck_assert_uint_gt(n, 60);
	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(cases, i), *crd, *before;
		const char *name = kc_json_str(c, "name");
		struct json_object *set = kc_json_obj_of(c, "set");
		struct json_object *remove = kc_json_arr_of(c, "remove");
		struct schema_errs errs = { 0 };
		struct kc_status st = { 0 };
		int status = (int)kc_json_int(c, 422, "status"), r;

		crd = load(kc_json_str(c, "base") != NULL ?
		    (strcmp(kc_json_str(c, "base"), "widget2-crd.yaml") == 0 ?
		    "schema/widget2-crd.yaml" : "schema/widget-crd.yaml") : "schema/widget-crd.yaml");
		if (set != NULL) {
			json_object_object_foreach(set, k, v) {
				jp_set(crd, k, v);
			}
		}
		for (size_t j = 0; remove != NULL && j < json_object_array_length(remove); j++)
			jp_remove(crd, json_object_get_string(json_object_array_get_idx(remove, j)));
		before = kc_json_copy(crd);
		r = schema_crd_validate(crd, NULL, &errs, &st);
		ck_assert_msg(kc_json_equal(crd, before), "%s: input modified", name);
		if (status == 400) {
			ck_assert_msg(r == KC_EBADREQUEST, "%s: r=%d %s", name, r, st.message);
			ck_assert_msg(strcmp(st.message, kc_json_str(c, "message")) == 0,
			    "%s:\n got: %s\nwant: %s", name, st.message, kc_json_str(c, "message"));
			ck_assert_uint_eq(errs.n, 0);
		} else {
			struct json_object *want = kc_json_arr_of(c, "errors");

			ck_assert_msg(r == (json_object_array_length(want) > 0 ? KC_EINVALID : 0),
			    "%s: r=%d", name, r);
			check_errs(name, &errs, want);
		}
		json_object_put(before);
		json_object_put(crd);
	}
	json_object_put(cases);
}
END_TEST

START_TEST(test_crd_update)
{
	struct json_object *old = load("schema/widget-crd.yaml"), *crd;
	struct schema_errs errs = { 0 };
	struct json_object *cond;

	crd = kc_json_copy(old);
	jp_put(crd, "/spec/group", json_object_new_string("example.org"));
	jp_put(crd, "/metadata/name", json_object_new_string("widgets.example.org"));
	jp_put(crd, "/spec/scope", json_object_new_string("Cluster"));
	/* Not established: scope may change, group may not. */
	ck_assert_int_eq(schema_crd_validate(crd, old, &errs, NULL), KC_EINVALID);
	ck_assert_uint_eq(errs.n, 1);
	ck_assert_str_eq(errs.items[0].field, "spec.group");
	ck_assert_str_eq(errs.items[0].body, "Invalid value: \"example.org\": field is immutable");

	/* Established: scope and kind are frozen too. */
	cond = parse("{\"conditions\":[{\"type\":\"Established\",\"status\":\"True\"}]}");
	ck_assert_int_eq(json_object_object_add(old, "status", cond), 0);
	memset(&errs, 0, sizeof(errs));
	jp_put(crd, "/spec/group", json_object_new_string("example.com"));
	jp_put(crd, "/metadata/name", json_object_new_string("widgets.example.com"));
	jp_put(crd, "/spec/names/kind", json_object_new_string("Gadget"));
	ck_assert_int_eq(schema_crd_validate(crd, old, &errs, NULL), KC_EINVALID);
	ck_assert_uint_eq(errs.n, 2);
	ck_assert_str_eq(errs.items[0].field, "spec.scope");
	ck_assert_str_eq(errs.items[0].body, "Invalid value: \"Cluster\": field is immutable");
	ck_assert_str_eq(errs.items[1].field, "spec.names.kind");
	json_object_put(crd);
	json_object_put(old);
}
END_TEST

START_TEST(test_crd_misc)
{
	struct json_object *crd = load("schema/widget-crd.yaml"), *deep, *cur;
	struct schema_errs errs = { 0 };
	struct kc_status st = { 0 };

	/* Not an object at all. */
	ck_assert_int_eq(schema_crd_validate(NULL, NULL, &errs, &st), KC_EBADREQUEST);
	ck_assert_ptr_nonnull(strstr(st.message, "cannot be handled as a "
	    "CustomResourceDefinition"));
	/* A schema nested past the bound. */
	deep = parse("{\"type\":\"object\"}");
	cur = deep;
	for (int i = 0; i < SCHEMA_DEPTH_MAX + 2; i++) {
		struct json_object *props = json_object_new_object();
		struct json_object *child = parse("{\"type\":\"object\"}");

		ck_assert_int_eq(json_object_object_add(props, "a", child), 0);
		ck_assert_int_eq(json_object_object_add(cur, "properties", props), 0);
		cur = child;
	}
	jp_put(crd, "/spec/versions/0/schema/openAPIV3Schema", deep);
	ck_assert_int_eq(schema_crd_validate(crd, NULL, &errs, &st), -E2BIG);
	ck_assert_uint_eq(errs.n, 0);

	/* The API approval annotation: present and valid, or "unapproved...". */
	json_object_put(crd);
	crd = load("schema/widget-crd.yaml");
	jp_put(crd, "/metadata/name", json_object_new_string("widgets.apps.k8s.io"));
	jp_put(crd, "/spec/group", json_object_new_string("apps.k8s.io"));
	jp_put(crd, "/metadata/annotations", json_object_new_object());
	jp_put(crd, "/metadata/annotations/api-approved.kubernetes.io",
	    json_object_new_string("unapproved, experimental"));
	ck_assert_int_eq(schema_crd_validate(crd, NULL, &errs, &st), 0);
	jp_put(crd, "/metadata/annotations/api-approved.kubernetes.io",
	    json_object_new_string("no url here"));
	ck_assert_int_eq(schema_crd_validate(crd, NULL, &errs, &st), KC_EINVALID);
	ck_assert_str_eq(errs.items[0].field,
	    "metadata.annotations[api-approved.kubernetes.io]");
	ck_assert_ptr_nonnull(strstr(errs.items[0].body, "with either a URL or a reason"));

	/* Defaults: conversion added; a webhook service gets port 443. */
	json_object_put(crd);
	crd = load("schema/widget-crd.yaml");
	jp_put(crd, "/spec/conversion", parse("{\"strategy\":\"Webhook\",\"webhook\":"
	    "{\"conversionReviewVersions\":[\"v1\"],\"clientConfig\":{\"service\":"
	    "{\"namespace\":\"ns\",\"name\":\"conv\",\"path\":\"/convert\"}}}}"));
	ck_assert_int_eq(schema_crd_default(crd), 0);
	ck_assert_int_eq(kc_json_int(crd, 0, "spec", "conversion", "webhook", "clientConfig",
	    "service", "port"), 443);
	memset(&errs, 0, sizeof(errs));
	ck_assert_int_eq(schema_crd_validate(crd, NULL, &errs, &st), 0);
	ck_assert_int_eq(schema_crd_default(NULL), 0);

	/* No versions at all (json-c asserted on the missing array): 422. */
	json_object_put(crd);
	crd = load("schema/widget-crd.yaml");
	jp_remove(crd, "/spec/versions");
	memset(&errs, 0, sizeof(errs));
	ck_assert_int_eq(schema_crd_validate(crd, NULL, &errs, &st), KC_EINVALID);
	ck_assert_uint_gt(errs.n, 0);
	json_object_put(crd);
}
END_TEST

/* A pattern this module cannot translate is accepted and never fails. */
START_TEST(test_crd_untranslatable_pattern)
{
	struct json_object *crd = load("schema/widget-crd.yaml");
	struct schema_errs errs = { 0 };
	struct json_object *obj = parse("{\"spec\":{\"size\":\"123\"}}");
	const struct json_object *s;

	jp_put(crd, "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size",
	    parse("{\"type\":\"string\",\"pattern\":\"^\\\\p{L}+$\"}"));
	ck_assert_int_eq(schema_crd_validate(crd, NULL, &errs, NULL), 0);
	s = schema_crd_version_schema(crd, "v1");
	ck_assert_int_eq(schema_validate(s, obj, &errs), 0);
	ck_assert_uint_eq(errs.n, 0);
	json_object_put(obj);
	json_object_put(crd);
}
END_TEST

/*
 * Custom resources
 */

/* The case's schema and object, expanding the "x"/"value" shorthand. */
static void
case_inputs(struct json_object *c, struct json_object **ret_schema,
    struct json_object **ret_obj)
{
	struct json_object *x;

	if (json_object_object_get_ex(c, "x", &x)) {
		struct json_object *schema = parse("{\"type\":\"object\",\"properties\":"
		    "{\"spec\":{\"type\":\"object\",\"properties\":{}}}}");
		struct json_object *obj = parse("{\"spec\":{}}"), *v;

		ck_assert_int_eq(json_object_object_add(json_object_object_get(
		    json_object_object_get(json_object_object_get(schema, "properties"), "spec"),
		    "properties"), "x", kc_json_copy(x)), 0);
		if (json_object_object_get_ex(c, "value", &v))
			ck_assert_int_eq(json_object_object_add(json_object_object_get(obj, "spec"),
			    "x", v != NULL ? kc_json_copy(v) : NULL), 0);
		*ret_schema = schema;
		*ret_obj = obj;
		return;
	}
	*ret_schema = kc_json_copy(json_object_object_get(c, "schema"));
	*ret_obj = kc_json_copy(json_object_object_get(c, "object"));
}

START_TEST(test_validate_cases)
{
	struct json_object *cases = load("schema/validate.yaml");
	size_t n = json_object_array_length(cases);

	ck_assert_uint_gt(n, 80);
	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(cases, i), *schema, *obj, *before;
		struct json_object *want = kc_json_arr_of(c, "errors");
		const char *name = kc_json_str(c, "name");
		struct schema_errs errs = { 0 };
		int r;

		case_inputs(c, &schema, &obj);
		before = kc_json_copy(obj);
		r = schema_validate(schema, obj, &errs);
		ck_assert_msg(r == (json_object_array_length(want) > 0 ? KC_EINVALID : 0),
		    "%s: r=%d", name, r);
		check_errs(name, &errs, want);
		ck_assert_msg(kc_json_equal(obj, before), "%s: object modified", name);
		json_object_put(before);
		json_object_put(schema);
		json_object_put(obj);
	}
	json_object_put(cases);
}
END_TEST

/* A Run through the whole write path: prune, default, validate. */
START_TEST(test_validate_run)
{
	struct json_object *crd = load("schema/run-crd.yaml"), *obj, *unknown = NULL, *want;
	struct schema_errs errs = { 0 };
	const struct json_object *s = schema_crd_version_schema(crd, "v1alpha1");

	obj = parse("{\"apiVersion\":\"trainyard.dev/v1alpha1\",\"kind\":\"Run\","
	    "\"metadata\":{\"name\":\"r1\",\"namespace\":\"team-a\"},"
	    "\"spec\":{\"image\":\"trainer:1\",\"nodes\":4,\"env\":[{\"name\":\"A\",\"value\":\"1\"}],"
	    "\"resources\":{\"limits\":{\"nvidia.com/gpu\":8,\"memory\":\"64Gi\"}},"
	    "\"podTemplate\":{\"spec\":{\"anything\":true}},\"typo\":1},"
	    "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\","
	    "\"status\":\"True\",\"lastTransitionTime\":\"2026-01-02T03:04:05Z\"}]}}");
	ck_assert_int_eq(schema_prune(s, obj, &unknown), 0);
	ck_assert_str_eq(json_object_to_json_string_ext(unknown, JSON_C_TO_STRING_PLAIN),
	    "[\"spec.typo\"]");
	json_object_put(unknown);
	ck_assert_int_eq(schema_default(s, obj), 0);
	ck_assert_int_eq(kc_json_int(obj, 0, "spec", "gpusPerNode"), 8);
	ck_assert_int_eq(kc_json_int(obj, 0, "spec", "backoffLimit"), 3);
	ck_assert(!kc_json_bool(obj, true, "spec", "suspend"));
	ck_assert_str_eq(kc_json_str(obj, "spec", "mode"), "Train");
	ck_assert_int_eq(kc_json_int(obj, 0, "spec", "nodes"), 4);
	ck_assert_int_eq(schema_validate(s, obj, &errs), 0);
	dump_errs("run", &errs);
	json_object_put(obj);

	/* The messages of the brief, all at once, in kube-apiserver's order. */
	obj = parse("{\"apiVersion\":\"trainyard.dev/v1alpha1\",\"kind\":\"Run\","
	    "\"metadata\":{\"name\":\"r2\"},\"spec\":{\"nodes\":0,\"mode\":\"x\","
	    "\"env\":[{\"name\":\"A\"},{\"name\":\"1B\"},{\"name\":\"A\"}],"
	    "\"resources\":{\"requests\":{\"cpu\":\"lots\"}}}}");
	ck_assert_int_eq(schema_validate(s, obj, &errs), KC_EINVALID);
	want = parse("{\"e\":["
	    "\"Invalid spec.nodes: Invalid value: 0: spec.nodes in body should be greater than "
	    "or equal to 1\","
	    "\"Invalid spec.env[1].name: Invalid value: \\\"1B\\\": spec.env[1].name in body "
	    "should match '^[A-Za-z_][A-Za-z0-9_]*$'\","
	    "\"Invalid spec.resources.requests.cpu: Invalid value: \\\"lots\\\": "
	    "spec.resources.requests.cpu in body should match '*'\","
	    "\"NotSupported spec.mode: Unsupported value: \\\"x\\\": supported values: "
	    "\\\"Train\\\", \\\"Eval\\\"\","
	    "\"Required spec.image: Required value\","
	    "\"Duplicate spec.env[2]: Duplicate value: map[string]interface {}{\\\"name\\\":\\\"A\\\"}\""
	    "]}");
	check_errs("run2", &errs, json_object_object_get(want, "e"));
	json_object_put(want);
	json_object_put(obj);
	obj = parse("{\"spec\":{\"image\":\"i\",\"nodes\":\"string\"}}");
	memset(&errs, 0, sizeof(errs));
	ck_assert_int_eq(schema_validate(s, obj, &errs), KC_EINVALID);
	ck_assert_uint_eq(errs.n, 1);
	ck_assert_str_eq(errs.items[0].type, "TypeInvalid");
	ck_assert_str_eq(errs.items[0].field, "spec.nodes");
	ck_assert_str_eq(errs.items[0].body, "Invalid value: \"string\": spec.nodes in body "
	    "must be of type integer: \"string\"");
	json_object_put(obj);
	json_object_put(crd);
}
END_TEST

START_TEST(test_prune_cases)
{
	struct json_object *cases = load("schema/prune.yaml");

	for (size_t i = 0; i < json_object_array_length(cases); i++) {
		struct json_object *c = json_object_array_get_idx(cases, i), *unknown = NULL;
		struct json_object *obj = kc_json_copy(json_object_object_get(c, "object"));
		const char *name = kc_json_str(c, "name");

		ck_assert_int_eq(schema_prune(json_object_object_get(c, "schema"), obj, &unknown), 0);
		ck_assert_msg(kc_json_equal(obj, json_object_object_get(c, "expect")),
		    "%s: got %s", name, json_object_to_json_string(obj));
		ck_assert_msg(kc_json_equal(unknown, json_object_object_get(c, "unknown")),
		    "%s: unknown %s", name, json_object_to_json_string(unknown));
		json_object_put(unknown);
		json_object_put(obj);
	}
	json_object_put(cases);
}
END_TEST

START_TEST(test_prune_misc)
{
	struct json_object *obj = parse("{\"a\":{\"b\":1}}"), *before = kc_json_copy(obj);
	struct json_object *schema = parse("{\"type\":\"object\"}");

	/* No schema: everything stays. */
	ck_assert_int_eq(schema_prune(NULL, obj, NULL), 0);
	ck_assert(kc_json_equal(obj, before));
	/* A schema without properties drops everything but the root's meta. */
	ck_assert_int_eq(json_object_object_add(obj, "kind", json_object_new_string("K")), 0);
	ck_assert_int_eq(schema_prune(schema, obj, NULL), 0);
	ck_assert_str_eq(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN),
	    "{\"kind\":\"K\"}");
	json_object_put(schema);
	json_object_put(before);
	json_object_put(obj);
}
END_TEST

START_TEST(test_default_cases)
{
	struct json_object *cases = load("schema/default.yaml");

	for (size_t i = 0; i < json_object_array_length(cases); i++) {
		struct json_object *c = json_object_array_get_idx(cases, i);
		struct json_object *obj = kc_json_copy(json_object_object_get(c, "object"));
		struct json_object *schema = json_object_object_get(c, "schema");
		const char *name = kc_json_str(c, "name");

		ck_assert_int_eq(schema_default(schema, obj), 0);
		ck_assert_msg(kc_json_equal(obj, json_object_object_get(c, "expect")),
		    "%s: got %s", name, json_object_to_json_string(obj));
		/* Defaulting twice changes nothing more. */
		ck_assert_int_eq(schema_default(schema, obj), 0);
		ck_assert_msg(kc_json_equal(obj, json_object_object_get(c, "expect")),
		    "%s: not idempotent", name);
		json_object_put(obj);
	}
	ck_assert_int_eq(schema_default(NULL, NULL), 0);
	json_object_put(cases);
}
END_TEST

/* Defaults are deep copies: changing the result leaves the schema alone. */
START_TEST(test_default_copies)
{
	struct json_object *schema = parse("{\"type\":\"object\",\"properties\":{\"spec\":"
	    "{\"type\":\"object\",\"properties\":{\"m\":{\"type\":\"object\",\"default\":"
	    "{\"a\":1}}}}}}");
	struct json_object *o1 = parse("{\"spec\":{}}"), *o2 = parse("{\"spec\":{}}");

	ck_assert_int_eq(schema_default(schema, o1), 0);
	ck_assert_int_eq(kc_json_set_int(json_object_object_get(json_object_object_get(o1,
	    "spec"), "m"), "a", 2), 0);
	ck_assert_int_eq(schema_default(schema, o2), 0);
	ck_assert_int_eq(kc_json_int(o2, 0, "spec", "m", "a"), 1);
	json_object_put(o1);
	json_object_put(o2);
	json_object_put(schema);
}
END_TEST

START_TEST(test_navigation)
{
	struct json_object *crd = load("schema/run-crd.yaml");
	const struct json_object *s = schema_crd_version_schema(crd, "v1alpha1"), *keys = NULL;
	const struct json_object *env;

	env = schema_find(s, "spec.env");
	ck_assert_ptr_nonnull(env);
	ck_assert_str_eq(schema_list_type(env, &keys), "map");
	ck_assert_str_eq(json_object_to_json_string_ext((struct json_object *)(uintptr_t)keys,
	    JSON_C_TO_STRING_PLAIN), "[\"name\"]");
	ck_assert_str_eq(schema_list_type(schema_find(s, "spec.tags"), &keys), "set");
	ck_assert_ptr_null(keys);
	ck_assert_str_eq(schema_list_type(schema_find(s, "spec.command"), NULL), "atomic");
	ck_assert_ptr_null(schema_list_type(schema_find(s, "spec.image"), NULL));
	ck_assert_str_eq(schema_list_type(schema_find(s, "status.conditions"), &keys), "map");
	ck_assert_str_eq(kc_json_str(schema_find(s, "spec.env[].name"), "type"), "string");
	ck_assert_str_eq(kc_json_str(schema_find(s, "spec.env[0].value"), "type"), "string");
	ck_assert_ptr_nonnull(kc_json_get(schema_find(s, "spec.resources.limits.cpu"),
	    "anyOf"));
	ck_assert_ptr_eq(schema_items(env), schema_find(s, "spec.env[]"));
	ck_assert_ptr_eq(schema_child(schema_find(s, "spec.resources.limits"), "memory"),
	    schema_find(s, "spec.resources.limits.x"));
	ck_assert_ptr_null(schema_find(s, "spec.nope"));
	ck_assert_ptr_null(schema_find(s, "spec.env[.name"));
	ck_assert_ptr_eq(schema_find(s, ""), s);
	ck_assert_ptr_eq(schema_find(s, NULL), s);
	ck_assert_str_eq(schema_map_type(s), "granular");
	json_object_put(crd);
}
END_TEST

START_TEST(test_names)
{
	struct schema_errs errs = { 0 };
	char line[1024];

	ck_assert_int_eq(schema_check_object_name("r1", NULL, &errs), 0);
	ck_assert_int_eq(schema_check_object_name("run.v1-a", "", &errs), 0);
	ck_assert_int_eq(schema_check_object_name(NULL, "gen-", &errs), 1);
	ck_assert_str_eq(errs.items[0].field, "metadata.name");
	ck_assert_str_eq(errs.items[0].body, "Required value: name or generateName is required");
	ck_assert_int_eq(schema_check_object_name("R1", "Gen-", &errs), 2);
	ck_assert_str_eq(errs.items[1].field, "metadata.generateName");
	ck_assert_str_eq(errs.items[2].field, "metadata.name");
	ck_assert_int_eq(schema_check_dns1123_label("f", "a.b", &errs), 1);
	ck_assert_int_eq(schema_check_dns1123_label("f", "a-b", &errs), 0);
	ck_assert_int_eq(schema_check_dns1035_label("f", "1ab", &errs), 1);
	ck_assert_int_eq(schema_check_dns1123_subdomain("f", "1a.b", &errs), 0);
	schema_err_string(&errs.items[3], line, sizeof(line));
	ck_assert_str_eq(line, "f: Invalid value: \"a.b\": a lowercase RFC 1123 label must "
	    "consist of lower case alphanumeric characters or '-', and must start and end with "
	    "an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
	    "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
	ck_assert_str_eq(errs.items[3].type, "Invalid");
	/* Values are quoted as Go's strconv.Quote does. */
	ck_assert_int_eq(schema_check_dns1035_label("f", "\xff\x01\xe2\x80\xa8x", &errs), 1);
	ck_assert(strncmp(errs.items[errs.n - 1].body,
	    "Invalid value: \"\\xff\\x01\\u2028x\": a DNS-1035 label", 47) == 0);
}
END_TEST

/* The caller's list is bounded: extra errors are counted, not kept. */
START_TEST(test_errs_bounded)
{
	struct json_object *schema, *obj = parse("{\"spec\":{\"list\":[]}}");
	struct json_object *list = json_object_object_get(json_object_object_get(obj, "spec"),
	    "list");
	struct schema_errs errs = { 0 };
	char line[64];

	schema = parse("{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
	    "\"properties\":{\"list\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}}}}}");
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(json_object_array_add(list, json_object_new_string("x")), 0);
	ck_assert_int_eq(schema_validate(schema, obj, NULL), KC_EINVALID);
	ck_assert_int_eq(schema_validate(schema, obj, &errs), KC_EINVALID);
	ck_assert_uint_eq(errs.n, SCHEMA_ERRS_MAX);
	ck_assert(errs.truncated);
	ck_assert_uint_eq(errs.dropped, 100 - SCHEMA_ERRS_MAX);
	ck_assert_str_eq(errs.items[31].field, "spec.list[31]");
	schema_errs_add(&errs, "Invalid", "x", "more");
	ck_assert_uint_eq(errs.dropped, 101 - SCHEMA_ERRS_MAX);
	memset(&errs, 0, sizeof(errs));
	schema_errs_add(&errs, "Required", "", "Required value");
	schema_err_string(&errs.items[0], line, sizeof(line));
	ck_assert_str_eq(line, "Required value");
	json_object_put(schema);
	json_object_put(obj);
}
END_TEST

/* Large sets are checked in O(n log n): 50000 items, one repeat. */
START_TEST(test_large_set)
{
	struct json_object *schema = parse("{\"type\":\"object\",\"properties\":{\"tags\":"
	    "{\"type\":\"array\",\"x-kubernetes-list-type\":\"set\",\"items\":"
	    "{\"type\":\"string\"}}}}");
	struct json_object *obj = parse("{\"tags\":[]}"), *tags;
	struct schema_errs errs = { 0 };

	tags = json_object_object_get(obj, "tags");
	for (int i = 0; i < 50000; i++) {
		char v[32];

		(void)snprintf(v, sizeof(v), "tag-%d", i);
		ck_assert_int_eq(json_object_array_add(tags, json_object_new_string(v)), 0);
	}
	ck_assert_int_eq(schema_validate(schema, obj, &errs), 0);
	ck_assert_int_eq(json_object_array_add(tags, json_object_new_string("tag-17")), 0);
	ck_assert_int_eq(schema_validate(schema, obj, &errs), KC_EINVALID);
	ck_assert_uint_eq(errs.n, 1);
	ck_assert_str_eq(errs.items[0].field, "tags[50000]");
	ck_assert_str_eq(errs.items[0].body, "Duplicate value: \"tag-17\"");
	json_object_put(schema);
	json_object_put(obj);
}
END_TEST

/* Objects and schemas nested past the bound fail with -E2BIG. */
START_TEST(test_depth_bounds)
{
	struct json_object *schema = parse("{\"type\":\"object\"}"), *obj = parse("{}");
	struct json_object *cs = schema, *co = obj, *unknown = SENTINEL;
	struct schema_errs errs = { 0 };

	for (int i = 0; i < SCHEMA_DEPTH_MAX + 5; i++) {
		struct json_object *props = json_object_new_object();
		struct json_object *sc = parse("{\"type\":\"object\",\"default\":{}}");
		struct json_object *oc = json_object_new_object();

		ck_assert_int_eq(json_object_object_add(props, "a", sc), 0);
		ck_assert_int_eq(json_object_object_add(cs, "properties", props), 0);
		ck_assert_int_eq(json_object_object_add(co, "a", oc), 0);
		cs = sc;
		co = oc;
	}
	ck_assert_int_eq(schema_validate(schema, obj, &errs), -E2BIG);
	ck_assert_uint_eq(errs.n, 0);
	ck_assert_int_eq(schema_prune(schema, obj, &unknown), -E2BIG);
	ck_assert_ptr_eq(unknown, SENTINEL);
	ck_assert_int_eq(schema_default(schema, obj), -E2BIG);
	json_object_put(schema);
	json_object_put(obj);
}
END_TEST

START_TEST(test_alloc_failures)
{
	struct json_object *crd = load("schema/run-crd.yaml");
	struct json_object *bad = load("schema/widget2-crd.yaml");
	const struct json_object *s = schema_crd_version_schema(crd, "v1alpha1");
	struct json_object *obj = parse("{\"kind\":\"Run\",\"spec\":{\"nodes\":0,\"x\":1,"
	    "\"env\":[{\"name\":\"A\",\"q\":1},{\"name\":\"A\"}],\"mode\":\"y\","
	    "\"tags\":[\"a\",\"a\"]}}");
	size_t budget;
	int r;

	jp_put(bad, "/spec/versions/1/schema/openAPIV3Schema/properties/spec/properties/size",
	    parse("{\"type\":\"array\",\"x-kubernetes-list-type\":\"map\",\"items\":"
	    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}},"
	    "\"default\":[{\"b\":1}]}"));
	for (budget = 0;; budget++) {
		struct schema_errs errs = { 0 };

		fail_alloc_after(budget);
		r = schema_crd_validate(bad, NULL, &errs, NULL);
		fail_alloc_after(SIZE_MAX);
		if (r != -ENOMEM)
			break;
		ck_assert_uint_eq(errs.n, 0);
	}
	ck_assert_int_eq(r, KC_EINVALID);
	ck_assert_uint_gt(budget, 0);
	for (budget = 0;; budget++) {
		struct schema_errs errs = { 0 };

		fail_alloc_after(budget);
		r = schema_validate(s, obj, &errs);
		fail_alloc_after(SIZE_MAX);
		if (r != -ENOMEM)
			break;
		ck_assert_uint_eq(errs.n, 0);
	}
	ck_assert_int_eq(r, KC_EINVALID);
	for (budget = 0;; budget++) {
		struct json_object *copy = kc_json_copy(obj), *unknown = SENTINEL;

		fail_alloc_after(budget);
		r = schema_prune(s, copy, &unknown);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert_uint_eq(json_object_array_length(unknown), 2);
			json_object_put(unknown);
			json_object_put(copy);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_eq(unknown, SENTINEL);
		json_object_put(copy);
	}
	for (budget = 0;; budget++) {
		struct json_object *copy = parse("{\"spec\":{\"a\":null,\"env\":[{}]}}");

		fail_alloc_after(budget);
		r = schema_default(s, copy);
		fail_alloc_after(SIZE_MAX);
		json_object_put(copy);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
	}
	json_object_put(obj);
	json_object_put(bad);
	json_object_put(crd);
}
END_TEST

Suite *
dc_schema_suite(void)
{
	Suite *s = suite_create("dc_schema");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_crd_run_valid);
	tcase_add_test(tc, test_crd_podgroup_valid);
	tcase_add_test(tc, test_crd_cases);
	tcase_add_test(tc, test_crd_update);
	tcase_add_test(tc, test_crd_misc);
	tcase_add_test(tc, test_crd_untranslatable_pattern);
	tcase_add_test(tc, test_validate_cases);
	tcase_add_test(tc, test_validate_run);
	tcase_add_test(tc, test_prune_cases);
	tcase_add_test(tc, test_prune_misc);
	tcase_add_test(tc, test_default_cases);
	tcase_add_test(tc, test_default_copies);
	tcase_add_test(tc, test_navigation);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_errs_bounded);
	tcase_add_test(tc, test_large_set);
	tcase_add_test(tc, test_depth_bounds);
	tcase_add_test(tc, test_alloc_failures);
	suite_add_tcase(s, tc);
	return s;
}

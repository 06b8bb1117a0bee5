/*
 * test_dc_fieldmanager.c: server-side apply and managedFields
 * (devcluster/fieldmanager.c).
 *
 * The expected field sets and messages are kube-apiserver's: FieldsV1
 * trees as structured-merge-diff serializes them (key order included),
 * conflict messages and causes as NewConflictError words them, entries
 * sorted and merged as the field manager does. Objects are custom
 * resources of kind Run (tests/fixtures/fieldmanager/), with the list
 * shapes of a CRD schema given by run_lookup() below, and a Pod with the
 * strategic merge schema. Every call also checks that its inputs are
 * unchanged; an allocation-failure loop walks every entry point.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/patch.h>

#include "../../devcluster/fieldmanager.h"
#include "testutil.h"

#define API		"trainyard.dev/v1beta1"
#define T0		((time_t)1768471200)	/* 2026-01-15T10:00:00Z */
#define LAST_APPLIED	"kubectl.kubernetes.io/last-applied-configuration"

static int sentinel_storage;
#define SENTINEL	((struct json_object *)(void *)&sentinel_storage)

/* x-kubernetes-list-type and friends of the Run CRD used here. */
static bool
run_lookup(const void *arg, const char *path, struct fm_type *ret)
{
	(void)arg;
	if (strcmp(path, "spec.env") == 0) {
		ret->kind = FM_MAP_LIST;
		ret->nkeys = 1;
		ret->keys[0] = "name";
	} else if (strcmp(path, "spec.ports") == 0) {
		ret->kind = FM_MAP_LIST;
		ret->nkeys = 2;
		ret->keys[0] = "protocol";
		ret->keys[1] = "containerPort";
		ret->key_defaults[0] = "\"TCP\"";
	} else if (strcmp(path, "spec.tags") == 0)
		ret->kind = FM_SET;
	else if (strcmp(path, "spec.selector") == 0)
		ret->kind = FM_MAP;
	else if (strcmp(path, "spec.args") == 0)
		ret->kind = FM_ATOMIC;
	else if (strcmp(path, "spec.opts") == 0)
		ret->kind = FM_STRUCT;
	else if (strcmp(path, "spec.lists") == 0)
		ret->kind = FM_MAP_LIST;
	else
		return false;
	return true;
}

static const struct fm_schema run_schema = { run_lookup, NULL };
static const struct fm_schema pod_schema = { fieldmanager_smp_lookup, &kc_smp_schema_pod };

static struct json_object *
parse(const char *text)
{
	struct kc_status st = { 0 };
	struct json_object *o = NULL;

	ck_assert_msg(kc_json_parse(text, strlen(text), &o, &st) == 0, "%s: %s", text,
	    st.message);
	return o;
}

static struct json_object *
load(const char *name)
{
	struct kc_status st = { 0 };
	struct json_object *o = NULL;
	size_t len;
	char *text;

	text = tu_fixture(name, &len);
	ck_assert_msg(kc_json_parse(text, len, &o, &st) == 0, "%s: %s", name, st.message);
	kc_free(text);
	return o;
}

static char *
dump(const struct json_object *o)
{
	char *s = kc_json_dump(o, NULL);

	ck_assert_ptr_nonnull(s);
	return s;
}

/* Same JSON, member order included. */
static void
assert_dump(const struct json_object *got, const char *want, const char *what)
{
	struct json_object *w = parse(want);
	char *g = dump(got), *ws = dump(w);

	ck_assert_msg(strcmp(g, ws) == 0, "%s:\n  got  %s\n  want %s", what, g, ws);
	kc_free(g);
	kc_free(ws);
	json_object_put(w);
}

/* Same JSON as 'want', member order included. */
static void
assert_same(const struct json_object *got, const struct json_object *want, const char *what)
{
	char *g = dump(got), *w = dump(want);

	ck_assert_msg(strcmp(g, w) == 0, "%s:\n  got  %s\n  want %s", what, g, w);
	kc_free(g);
	kc_free(w);
}

/*
 * A copy of 'o' with every raw value (the FieldsV1 sets the field manager
 * writes) parsed into the tree it stands for, for comparisons that ignore
 * member order.
 */
static struct json_object *
expand(const struct json_object *co)
{
	struct json_object *o = (struct json_object *)(uintptr_t)co;
	struct kc_status st = { 0 };
	struct json_object *c = NULL;

	if (kc_json_is_raw(o)) {
		ck_assert_int_eq(kc_json_parse(json_object_get_string(o),
		    (size_t)json_object_get_string_len(o), &c, &st), 0);
		return c;
	}
	if (json_object_is_type(o, json_type_object)) {
		ck_assert_ptr_nonnull(c = json_object_new_object());
		json_object_object_foreach(o, k, v) {
			ck_assert_int_eq(json_object_object_add(c, k, expand(v)), 0);
		}
		return c;
	}
	if (json_object_is_type(o, json_type_array)) {
		ck_assert_ptr_nonnull(c = json_object_new_array());
		for (size_t i = 0; i < json_object_array_length(o); i++)
			ck_assert_int_eq(json_object_array_add(c,
			    expand(json_object_array_get_idx(o, i))), 0);
		return c;
	}
	return kc_json_copy(o);
}

/* Same JSON regardless of member order (raw values as their trees). */
static bool
same_json(const struct json_object *a, const struct json_object *b)
{
	struct json_object *x = expand(a), *y = expand(b);
	bool eq = kc_json_equal(x, y);

	json_object_put(x);
	json_object_put(y);
	return eq;
}

/* Same JSON regardless of member order. */
static void
assert_json(const struct json_object *got, const char *want, const char *what)
{
	struct json_object *w = parse(want);
	char *g, *ws;

	if (!same_json(got, w)) {
		g = dump(got);
		ws = dump(w);
		ck_abort_msg("%s:\n  got  %s\n  want %s", what, g, ws);
	}
	json_object_put(w);
}

static struct json_object *
entries(const struct json_object *obj)
{
	return kc_json_get(obj, "metadata", "managedFields");
}

static size_t
nentries(const struct json_object *obj)
{
	struct json_object *mf = entries(obj);

	return mf == NULL ? 0 : json_object_array_length(mf);
}

/* The entry of 'manager' with 'op', or NULL. */
static struct json_object *
entry(const struct json_object *obj, const char *manager, const char *op)
{
	struct json_object *mf = entries(obj);

	for (size_t i = 0; mf != NULL && i < json_object_array_length(mf); i++) {
		struct json_object *e = json_object_array_get_idx(mf, i);
		const char *m = kc_json_str(e, "manager"), *o = kc_json_str(e, "operation");

		if (m != NULL && o != NULL && strcmp(m, manager) == 0 && strcmp(o, op) == 0)
			return e;
	}
	return NULL;
}

static void
assert_fields(const struct json_object *obj, const char *manager, const char *op,
    const char *want)
{
	struct json_object *e = entry(obj, manager, op);

	ck_assert_msg(e != NULL, "no %s entry for %s", op, manager);
	assert_dump(kc_json_get(e, "fieldsV1"), want, manager);
}

/* Runs an apply that must succeed; checks the inputs are untouched. */
static struct json_object *
apply_ok(const struct fm_apply *a)
{
	struct json_object *out = SENTINEL, *details = SENTINEL;
	struct kc_status st = { 0 };
	char *before_live = a->live != NULL ? dump(a->live) : NULL;
	char *before_cfg = dump(a->config), *after;
	int r;

	r = fieldmanager_apply(a, &out, &details, &st);
	ck_assert_msg(r == 0, "apply: %d %s", r, st.message);
	ck_assert_ptr_eq(details, SENTINEL);
	ck_assert_ptr_ne(out, SENTINEL);
	after = dump(a->config);
	ck_assert_str_eq(after, before_cfg);
	kc_free(after);
	if (before_live != NULL) {
		after = dump(a->live);
		ck_assert_str_eq(after, before_live);
		kc_free(after);
	}
	kc_free(before_live);
	kc_free(before_cfg);
	return out;
}

/* Runs an apply that must fail with 'want'; '*ret_details' may be NULL. */
static void
apply_fail(const struct fm_apply *a, int want, struct kc_status *st,
    struct json_object **ret_details)
{
	struct json_object *out = SENTINEL, *details = SENTINEL;
	int r;

	r = fieldmanager_apply(a, &out, &details, st);
	ck_assert_msg(r == want, "apply: %d, want %d: %s", r, want, st->message);
	ck_assert_ptr_eq(out, SENTINEL);
	if (ret_details != NULL)
		*ret_details = details == SENTINEL ? NULL : details;
	else if (details != SENTINEL)
		json_object_put(details);
}

static struct json_object *
update_ok(const struct fm_update *u)
{
	struct json_object *out = SENTINEL;
	struct kc_status st = { 0 };
	char *before_old = u->old != NULL ? dump(u->old) : NULL;
	char *before_obj = dump(u->obj), *after;
	int r;

	r = fieldmanager_update(u, &out, &st);
	ck_assert_msg(r == 0, "update: %d %s", r, st.message);
	after = dump(u->obj);
	ck_assert_str_eq(after, before_obj);
	kc_free(after);
	if (before_old != NULL) {
		after = dump(u->old);
		ck_assert_str_eq(after, before_old);
		kc_free(after);
	}
	kc_free(before_old);
	kc_free(before_obj);
	return out;
}

static struct json_object *
run_apply(const struct json_object *live, const char *config, const char *manager, bool force,
    time_t now)
{
	struct json_object *cfg = parse(config), *out;
	struct fm_apply a = {
		.live = live, .config = cfg, .manager = manager, .force = force,
		.api_version = API, .kind = "Run", .schema = &run_schema, .now = now,
	};

	out = apply_ok(&a);
	json_object_put(cfg);
	return out;
}

static struct json_object *
run_update(const struct json_object *old, const struct json_object *obj, const char *manager,
    const char *subresource, time_t now)
{
	struct fm_update u = {
		.old = old, .obj = obj, .manager = manager, .api_version = API,
		.subresource = subresource, .schema = &run_schema, .now = now,
	};

	return update_ok(&u);
}

/* A copy of 'obj' with one member at a dotted path set to JSON 'value'. */
static struct json_object *
with(const struct json_object *obj, const char *path, const char *value)
{
	struct json_object *c = kc_json_copy(obj), *o = c, *v = parse(value);
	char buf[256], *p = buf, *dot;

	ck_assert_ptr_nonnull(c);
	ck_assert_uint_lt(strlen(path), sizeof(buf));
	memcpy(buf, path, strlen(path) + 1);
	while ((dot = strchr(p, '.')) != NULL) {
		*dot = '\0';
		o = kc_json_ensure_obj(o, p);
		ck_assert_ptr_nonnull(o);
		p = dot + 1;
	}
	json_object_object_add(o, p, v);
	return c;
}

/* ------------------------------------------------------------------------
 * Path elements
 */

START_TEST(test_pe_parse)
{
	static const struct {
		const char	*text;
		enum fm_pe_type	 type;
		const char	*value;
	} cases[] = {
		{ "f:spec", FM_PE_FIELD, "\"spec\"" },
		{ "f:", FM_PE_FIELD, "\"\"" },
		{ "f:kubectl.kubernetes.io/x", FM_PE_FIELD, "\"kubectl.kubernetes.io/x\"" },
		{ "k:{\"protocol\":\"TCP\",\"containerPort\":80}", FM_PE_KEY,
		  "{\"containerPort\":80,\"protocol\":\"TCP\"}" },
		{ "v:\"a\"", FM_PE_VALUE, "\"a\"" },
		{ "v:5", FM_PE_VALUE, "5" },
		{ "v:null", FM_PE_VALUE, "null" },
		{ "i:3", FM_PE_INDEX, "3" },
		{ "i:-1", FM_PE_INDEX, "-1" },
		{ "x:whatever", FM_PE_UNKNOWN, "null" },
	};
	struct kc_status st = { 0 };

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct json_object *v = SENTINEL;
		enum fm_pe_type type = FM_PE_INDEX + 1;

		ck_assert_int_eq(fieldmanager_pe_parse(cases[i].text, &type, &v, &st), 0);
		ck_assert_int_eq(type, cases[i].type);
		ck_assert_ptr_ne(v, SENTINEL);
		if (strcmp(cases[i].value, "null") == 0)
			ck_assert_ptr_null(v);
		else
			assert_dump(v, cases[i].value, cases[i].text);
		if (v != NULL)
			json_object_put(v);
	}
}
END_TEST

START_TEST(test_pe_parse_errors)
{
	static const struct {
		const char	*text;
		const char	*message;
	} cases[] = {
		{ "f", "key must be 2 characters long" },
		{ "", "key must be 2 characters long" },
		{ "fx", "missing colon: fx" },
		{ "k:{bad", "parsing k:{bad" },
		{ "k:[1]", "expected an object" },
		{ "v:", "parsing v:" },
		{ "i:x", "invalid index" },
		{ "i:1.5", "invalid index" },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct kc_status st = { 0 };
		struct json_object *v = SENTINEL;
		enum fm_pe_type type = FM_PE_UNKNOWN;

		ck_assert_int_eq(fieldmanager_pe_parse(cases[i].text, &type, &v, &st),
		    KC_EINVALID);
		ck_assert_ptr_eq(v, SENTINEL);
		ck_assert_msg(strstr(st.message, cases[i].message) != NULL, "%s: %s",
		    cases[i].text, st.message);
	}
}
END_TEST

START_TEST(test_pe_format)
{
	static const struct {
		enum fm_pe_type	 type;
		const char	*value;
		const char	*want;
	} cases[] = {
		{ FM_PE_FIELD, "\"spec\"", "f:spec" },
		{ FM_PE_FIELD, "\"a.b/c\"", "f:a.b/c" },
		{ FM_PE_KEY, "{\"protocol\":\"TCP\",\"containerPort\":80}",
		  "k:{\"containerPort\":80,\"protocol\":\"TCP\"}" },
		{ FM_PE_KEY, "{\"name\":\"A\"}", "k:{\"name\":\"A\"}" },
		{ FM_PE_KEY, "{\"name\":\"<a&b>\"}", "k:{\"name\":\"\\u003ca\\u0026b\\u003e\"}" },
		{ FM_PE_KEY, "{\"b\":{\"y\":1,\"x\":[true,null]},\"a\":1.5}",
		  "k:{\"a\":1.5,\"b\":{\"x\":[true,null],\"y\":1}}" },
		{ FM_PE_VALUE, "\"a\\nb\"", "v:\"a\\nb\"" },
		{ FM_PE_VALUE, "42", "v:42" },
		{ FM_PE_VALUE, "0.0000001", "v:1e-7" },
		{ FM_PE_VALUE, "1e21", "v:1e+21" },
		{ FM_PE_VALUE, "120.0", "v:120" },
		{ FM_PE_VALUE, "0.000001", "v:0.000001" },
		{ FM_PE_VALUE, "-2.5", "v:-2.5" },
		{ FM_PE_VALUE, "0.0", "v:0" },
		{ FM_PE_VALUE, "123456789012345680000.0", "v:123456789012345680000" },
		{ FM_PE_VALUE, "-1.5e-300", "v:-1.5e-300" },
		{ FM_PE_VALUE, "\"\\\"\\\\\\t\\r\\b\\f\\u0001<>&\\u2028\\u00e9\"",
		  "v:\"\\\"\\\\\\t\\r\\b\\f\\u0001\\u003c\\u003e\\u0026\\u2028\u00e9\"" },
		{ FM_PE_VALUE, "[1,\"a\",{}]", "v:[1,\"a\",{}]" },
		{ FM_PE_INDEX, "7", "i:7" },
	};
	struct kc_status st = { 0 };
	struct json_object *v;
	char *s;

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		v = parse(cases[i].value);
		s = NULL;
		ck_assert_int_eq(fieldmanager_pe_format(cases[i].type, v, &s, &st), 0);
		ck_assert_str_eq(s, cases[i].want);
		kc_free(s);
		json_object_put(v);
	}
	v = parse("5");
	s = NULL;
	ck_assert_int_eq(fieldmanager_pe_format(FM_PE_FIELD, v, &s, &st), KC_EINVALID);
	ck_assert_int_eq(fieldmanager_pe_format(FM_PE_KEY, v, &s, &st), KC_EINVALID);
	ck_assert_int_eq(fieldmanager_pe_format(FM_PE_UNKNOWN, v, &s, &st), KC_EINVALID);
	ck_assert_ptr_null(s);
	json_object_put(v);
	v = parse("\"5\"");
	ck_assert_int_eq(fieldmanager_pe_format(FM_PE_INDEX, v, &s, &st), KC_EINVALID);
	json_object_put(v);
}
END_TEST

/* ------------------------------------------------------------------------
 * Field sets of objects
 */

START_TEST(test_fieldset_maps)
{
	struct json_object *obj = parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
	    "\"metadata\":{\"name\":\"c\",\"namespace\":\"d\",\"uid\":\"u\","
	    "\"resourceVersion\":\"5\",\"generation\":2,\"creationTimestamp\":\"x\","
	    "\"selfLink\":\"/x\",\"managedFields\":[{\"manager\":\"m\"}],"
	    "\"labels\":{\"app\":\"x\",\"tier\":\"a\"},\"annotations\":{\"a.b/c\":\"d\"}},"
	    "\"data\":{\"b\":\"2\",\"a\":\"1\"},\"status\":{\"x\":{\"y\":1}}}");
	struct kc_status st = { 0 };
	struct json_object *fs = NULL;
	char *before = dump(obj), *after;

	ck_assert_int_eq(fieldmanager_fieldset(obj, NULL, NULL, &fs, &st), 0);
	assert_dump(fs, "{\"f:data\":{\"f:a\":{},\"f:b\":{}},\"f:metadata\":{\"f:annotations\":"
	    "{\"f:a.b/c\":{}},\"f:labels\":{\"f:app\":{},\"f:tier\":{}}},\"f:status\":{\"f:x\":"
	    "{\"f:y\":{}}}}", "configmap");
	json_object_put(fs);
	/* With a status subresource, status is the status writer's. */
	ck_assert_int_eq(fieldmanager_fieldset(obj, NULL, fieldmanager_reset_status, &fs,
	    &st), 0);
	assert_dump(fs, "{\"f:data\":{\"f:a\":{},\"f:b\":{}},\"f:metadata\":{\"f:annotations\":"
	    "{\"f:a.b/c\":{}},\"f:labels\":{\"f:app\":{},\"f:tier\":{}}}}", "reset");
	json_object_put(fs);
	after = dump(obj);
	ck_assert_str_eq(after, before);
	kc_free(after);
	kc_free(before);
	json_object_put(obj);

	/* Only metadata no entry holds: nothing. */
	obj = parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
	    "\"c\"},\"data\":{}}");
	ck_assert_int_eq(fieldmanager_fieldset(obj, NULL, NULL, &fs, &st), 0);
	assert_dump(fs, "{}", "empty");
	json_object_put(fs);
	json_object_put(obj);

	fs = SENTINEL;
	obj = parse("[1]");
	ck_assert_int_eq(fieldmanager_fieldset(obj, NULL, NULL, &fs, &st), KC_EINVALID);
	ck_assert_ptr_eq(fs, SENTINEL);
	json_object_put(obj);
}
END_TEST

START_TEST(test_fieldset_lists)
{
	struct json_object *obj = parse("{\"spec\":{"
	    "\"tags\":[\"b\",\"a\",3],"
	    "\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\"}],"
	    "\"ports\":[{\"containerPort\":80},{\"containerPort\":53,\"protocol\":\"UDP\"}],"
	    "\"args\":[\"x\",\"y\"],"
	    "\"other\":[{\"a\":1}],"
	    "\"selector\":{\"m\":{\"k\":\"v\"},\"n\":\"w\"},"
	    "\"empty\":{},\"nul\":null}}");
	struct kc_status st = { 0 };
	struct json_object *fs = NULL;

	ck_assert_int_eq(fieldmanager_fieldset(obj, &run_schema, NULL, &fs, &st), 0);
	assert_dump(fs, "{\"f:spec\":{"
	    "\"f:args\":{},"
	    "\"f:env\":{\"k:{\\\"name\\\":\\\"A\\\"}\":{\".\":{},\"f:name\":{},\"f:value\":{}},"
	    "\"k:{\\\"name\\\":\\\"B\\\"}\":{\".\":{},\"f:name\":{}}},"
	    "\"f:nul\":{},"
	    "\"f:other\":{},"
	    "\"f:ports\":{\"k:{\\\"containerPort\\\":53,\\\"protocol\\\":\\\"UDP\\\"}\":{\".\":{},"
	    "\"f:containerPort\":{},\"f:protocol\":{}},"
	    "\"k:{\\\"containerPort\\\":80,\\\"protocol\\\":\\\"TCP\\\"}\":{\".\":{},"
	    "\"f:containerPort\":{}}},"
	    "\"f:selector\":{\"f:m\":{\".\":{},\"f:k\":{}},\"f:n\":{}},"
	    "\"f:tags\":{\"v:3\":{},\"v:\\\"a\\\"\":{},\"v:\\\"b\\\"\":{}}}}", "lists");
	json_object_put(fs);
	json_object_put(obj);
}
END_TEST

START_TEST(test_fieldset_list_errors)
{
	static const struct {
		const char	*obj;
		const char	*message;
	} cases[] = {
		{ "{\"spec\":{\"env\":[{\"name\":\"A\"},{\"name\":\"A\",\"value\":\"x\"}]}}",
		  ".spec.env: duplicate entries for key [name=\"A\"]" },
		{ "{\"spec\":{\"env\":[{\"value\":\"1\"}]}}",
		  ".spec.env: element 0: associative list with keys has an element that "
		  "omits key field \"name\" (and doesn't have default value)" },
		{ "{\"spec\":{\"env\":[\"x\"]}}",
		  ".spec.env: element 0: associative list with keys may not have non-map "
		  "elements" },
		{ "{\"spec\":{\"env\":[null]}}",
		  ".spec.env: element 0: associative list with keys may not have a null "
		  "element" },
		{ "{\"spec\":{\"tags\":[\"a\",{\"b\":1}]}}",
		  ".spec.tags: element 1: associative list without keys has an element "
		  "that's a map type" },
		{ "{\"spec\":{\"tags\":[\"a\",\"a\"]}}",
		  ".spec.tags: duplicate entries for key [=\"a\"]" },
		{ "{\"spec\":{\"ports\":[{\"containerPort\":80},{\"containerPort\":80,"
		  "\"protocol\":\"TCP\"}]}}",
		  ".spec.ports: duplicate entries for key [containerPort=80,protocol=\"TCP\"]" },
		{ "{\"spec\":{\"env\":[{\"name\":\"A\",\"x\":{\"tags\":[1]}}],\"x\":[{\"y\":"
		  "[{\"name\":1},{\"name\":1}]}]}}", NULL },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct json_object *obj = parse(cases[i].obj), *fs = SENTINEL;
		struct kc_status st = { 0 };
		int r = fieldmanager_fieldset(obj, &run_schema, NULL, &fs, &st);

		if (cases[i].message == NULL) {
			ck_assert_int_eq(r, 0);
			json_object_put(fs);
		} else {
			ck_assert_int_eq(r, KC_EINVALID);
			ck_assert_ptr_eq(fs, SENTINEL);
			ck_assert_str_eq(st.message, cases[i].message);
		}
		json_object_put(obj);
	}
}
END_TEST

START_TEST(test_fieldset_pod)
{
	struct json_object *pod = load("fieldmanager/pod.json"), *fs = NULL;
	struct kc_status st = { 0 };
	struct fm_type t;

	ck_assert(fieldmanager_smp_lookup(&kc_smp_schema_pod, "spec.containers", &t));
	ck_assert_int_eq(t.kind, FM_MAP_LIST);
	ck_assert_uint_eq(t.nkeys, 1);
	ck_assert_str_eq(t.keys[0], "name");
	ck_assert(fieldmanager_smp_lookup(&kc_smp_schema_pod, "spec.containers.ports", &t));
	ck_assert_uint_eq(t.nkeys, 2);
	ck_assert_str_eq(t.keys[1], "protocol");
	ck_assert_str_eq(t.key_defaults[1], "\"TCP\"");
	ck_assert(fieldmanager_smp_lookup(&kc_smp_schema_service, "spec.ports", &t));
	ck_assert_uint_eq(t.nkeys, 2);
	ck_assert_str_eq(t.keys[0], "port");
	ck_assert(fieldmanager_smp_lookup(&kc_smp_schema_pod, "metadata.finalizers", &t));
	ck_assert_int_eq(t.kind, FM_SET);
	ck_assert(!fieldmanager_smp_lookup(&kc_smp_schema_pod, "spec.tolerations", &t));
	ck_assert(!fieldmanager_smp_lookup(NULL, "spec.containers", &t));

	ck_assert_int_eq(fieldmanager_fieldset(pod, &pod_schema, NULL, &fs, &st), 0);
	assert_dump(fs, "{\"f:metadata\":{\"f:finalizers\":{\"v:\\\"example.com/keep\\\"\":{}}},"
	    "\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"main\\\"}\":{\".\":{},"
	    "\"f:env\":{\"k:{\\\"name\\\":\\\"A\\\"}\":{\".\":{},\"f:name\":{},\"f:value\":{}}},"
	    "\"f:image\":{},\"f:name\":{},"
	    "\"f:ports\":{\"k:{\\\"containerPort\\\":53,\\\"protocol\\\":\\\"UDP\\\"}\":{\".\":{},"
	    "\"f:containerPort\":{},\"f:protocol\":{}},"
	    "\"k:{\\\"containerPort\\\":80,\\\"protocol\\\":\\\"TCP\\\"}\":{\".\":{},"
	    "\"f:containerPort\":{}}}}},"
	    "\"f:tolerations\":{}}}", "pod");
	json_object_put(fs);
	json_object_put(pod);
}
END_TEST

/* ------------------------------------------------------------------------
 * Set algebra
 */

START_TEST(test_fieldset_ops)
{
	struct json_object *a = parse("{\"f:b\":{\"f:d\":{},\"f:c\":{}},\"f:a\":{}}");
	struct json_object *b = parse("{\"f:e\":{},\"f:b\":{\"f:d\":{},\".\":{}}}");
	struct json_object *out = NULL;
	struct kc_status st = { 0 };

	ck_assert_int_eq(fieldmanager_fieldset_union(a, b, &out, &st), 0);
	assert_dump(out, "{\"f:a\":{},\"f:b\":{\".\":{},\"f:c\":{},\"f:d\":{}},\"f:e\":{}}",
	    "union");
	json_object_put(out);
	ck_assert_int_eq(fieldmanager_fieldset_intersection(a, b, &out, &st), 0);
	assert_dump(out, "{\"f:b\":{\"f:d\":{}}}", "intersection");
	json_object_put(out);
	/* Members only: b's ".b" does not take a's ".b.c". */
	ck_assert_int_eq(fieldmanager_fieldset_difference(a, b, &out, &st), 0);
	assert_dump(out, "{\"f:a\":{},\"f:b\":{\"f:c\":{}}}", "a-b");
	json_object_put(out);
	ck_assert_int_eq(fieldmanager_fieldset_difference(b, a, &out, &st), 0);
	assert_dump(out, "{\"f:b\":{},\"f:e\":{}}", "b-a");
	json_object_put(out);
	ck_assert_int_eq(fieldmanager_fieldset_empty(a, &st), 0);
	json_object_put(a);
	json_object_put(b);

	/* Orders: f: < k: < v: < i:; numbers < strings < bools < null. */
	a = parse("{\"i:1\":{},\"v:null\":{},\"v:true\":{},\"v:\\\"x\\\"\":{},\"v:2.5\":{},"
	    "\"v:2\":{},\"k:{\\\"b\\\":1,\\\"a\\\":2}\":{},\"k:{\\\"a\\\":1}\":{},\"f:z\":{},"
	    "\"i:0\":{},\"x:unknown\":{}}");
	b = parse("{}");
	ck_assert_int_eq(fieldmanager_fieldset_union(a, b, &out, &st), 0);
	assert_dump(out, "{\"f:z\":{},\"k:{\\\"a\\\":1}\":{},\"k:{\\\"a\\\":2,\\\"b\\\":1}\":{},"
	    "\"v:2\":{},\"v:2.5\":{},\"v:\\\"x\\\"\":{},\"v:true\":{},\"v:null\":{},"
	    "\"i:0\":{},\"i:1\":{}}", "order");
	json_object_put(out);
	ck_assert_int_eq(fieldmanager_fieldset_empty(b, &st), 1);
	json_object_put(a);
	json_object_put(b);

	/* A key whose children are all of unknown kinds is a member. */
	a = parse("{\"f:a\":{\"x:y\":{}},\"f:b\":{\"f:c\":{\"y:z\":{}}}}");
	ck_assert_int_eq(fieldmanager_fieldset_empty(a, &st), 0);
	b = parse("{}");
	ck_assert_int_eq(fieldmanager_fieldset_union(a, b, &out, &st), 0);
	assert_dump(out, "{\"f:a\":{},\"f:b\":{\"f:c\":{}}}", "unknown kinds");
	json_object_put(out);
	json_object_put(a);
	a = parse("{\"x:only\":{}}");
	ck_assert_int_eq(fieldmanager_fieldset_empty(a, &st), 1);
	json_object_put(a);

	/*
	 * A key that is not UTF-8 reads as encoding/json reads it, U+FFFD
	 * for the bad byte, so the set is the same once written and read
	 * back (it became "\\ufffd", then the raw U+FFFD).
	 */
	a = parse("{\"k:{\\\"\x92" "me\\\":\\\"A\\\"}\":{}}");
	ck_assert_int_eq(fieldmanager_fieldset_union(a, b, &out, &st), 0);
	{
		struct json_object *again = NULL;
		char *t1 = kc_json_dump(out, NULL), *t2;

		ck_assert_int_eq(fieldmanager_fieldset_union(out, b, &again, &st), 0);
		t2 = kc_json_dump(again, NULL);
		ck_assert_ptr_nonnull(t1);
		ck_assert_str_eq(t1, t2);
		ck_assert_ptr_nonnull(strstr(t1, "\xef\xbf\xbd" "me"));
		kc_free(t1);
		kc_free(t2);
		json_object_put(again);
	}
	json_object_put(out);
	json_object_put(a);
	json_object_put(b);
}
END_TEST

START_TEST(test_fieldset_ops_errors)
{
	static const char *const bad[] = {
		"[]", "5", "null", "{\"f:a\":1}", "{\"zz\":{}}", "{\"k:{x\":{}}",
		"{\"f:a\":{\"f:b\":[]}}", "{\"i:z\":{}}",
	};
	struct json_object *good = parse("{\"f:a\":{}}");

	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
		struct json_object *x = parse(bad[i]), *out = SENTINEL;
		struct kc_status st = { 0 };

		ck_assert_int_eq(fieldmanager_fieldset_union(x, good, &out, &st), KC_EINVALID);
		ck_assert_ptr_eq(out, SENTINEL);
		ck_assert_msg(strncmp(st.message, "invalid FieldsV1: ", 18) == 0, "%s",
		    st.message);
		ck_assert_int_eq(fieldmanager_fieldset_intersection(good, x, &out, &st),
		    KC_EINVALID);
		ck_assert_int_eq(fieldmanager_fieldset_difference(good, x, &out, &st),
		    KC_EINVALID);
		ck_assert_int_eq(fieldmanager_fieldset_empty(x, &st), KC_EINVALID);
		ck_assert_ptr_eq(out, SENTINEL);
		if (x != NULL)
			json_object_put(x);
	}
	json_object_put(good);
}
END_TEST

/* ------------------------------------------------------------------------
 * Apply
 */

START_TEST(test_apply_create)
{
	struct json_object *sample = load("fieldmanager/managedfields-example.json");
	struct json_object *obj;

	obj = run_apply(NULL, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\",\"namespace\":\"default\",\"labels\":{\"app\":\"x\"}},\"spec\":{"
	    "\"image\":\"i\",\"nodes\":2,\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}}",
	    "kubectl", false, T0);
	assert_dump(obj, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\",\"namespace\":\"default\",\"labels\":{\"app\":\"x\"},"
	    "\"managedFields\":[{\"manager\":\"kubectl\",\"operation\":\"Apply\","
	    "\"apiVersion\":\"" API "\",\"time\":\"2026-01-15T10:00:00Z\","
	    "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":"
	    "{\"f:app\":{}}},\"f:spec\":{\"f:env\":{\"k:{\\\"name\\\":\\\"A\\\"}\":{\".\":{},"
	    "\"f:name\":{},\"f:value\":{}}},\"f:image\":{},\"f:nodes\":{}}}}]},"
	    "\"spec\":{\"image\":\"i\",\"nodes\":2,\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}}",
	    "created");
	/* The same set as the sample's Apply entry. */
	ck_assert(same_json(kc_json_get(entry(obj, "kubectl", "Apply"), "fieldsV1"),
	    kc_json_get(json_object_array_get_idx(entries(sample), 0), "fieldsV1")));
	json_object_put(obj);
	json_object_put(sample);
}
END_TEST

START_TEST(test_apply_create_empty_object)
{
	/* A built-in's empty object keeps "spec" from being recorded as added. */
	struct json_object *cfg = parse("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{"
	    "\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}");
	struct json_object *empty = parse("{\"metadata\":{},\"spec\":{},\"status\":{}}");
	struct fm_apply a = {
		.config = cfg, .manager = "kubectl", .api_version = "v1", .kind = "Pod",
		.schema = &pod_schema, .empty = empty, .now = T0,
	};
	struct json_object *obj = apply_ok(&a);

	assert_fields(obj, "kubectl", "Apply", "{\"f:spec\":{\"f:containers\":{"
	    "\"k:{\\\"name\\\":\\\"c\\\"}\":{\".\":{},\"f:image\":{},\"f:name\":{}}}}}");
	/* The empty object's members that the body lacks stay. */
	ck_assert_ptr_nonnull(kc_json_get(obj, "status"));
	json_object_put(obj);
	json_object_put(cfg);
	json_object_put(empty);
}
END_TEST

START_TEST(test_apply_update_merge)
{
	struct json_object *v1, *v2, *v3;

	v1 = run_apply(NULL, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"image\":\"i\",\"nodes\":2,\"opts\":{\"a\":1}}}",
	    "kubectl", false, T0);
	/* Another writer adds a field of its own. */
	v2 = with(v1, "spec.opts.b", "2");
	v3 = run_update(v1, v2, "ctl", NULL, T0 + 5);
	json_object_put(v2);
	json_object_put(v1);
	assert_fields(v3, "ctl", "Update", "{\"f:spec\":{\"f:opts\":{\"f:b\":{}}}}");
	/* The applier changes its field; maps merge, ctl's field stays. */
	v1 = run_apply(v3, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"image\":\"i2\",\"nodes\":2,\"opts\":{\"a\":1}}}",
	    "kubectl", false, T0 + 10);
	assert_json(kc_json_get(v1, "spec"), "{\"image\":\"i2\",\"nodes\":2,\"opts\":{\"a\":1,"
	    "\"b\":2}}", "merged");
	assert_fields(v1, "kubectl", "Apply", "{\"f:spec\":{\"f:image\":{},\"f:nodes\":{},"
	    "\"f:opts\":{\"f:a\":{}}}}");
	ck_assert_str_eq(kc_json_str(entry(v1, "kubectl", "Apply"), "time"),
	    "2026-01-15T10:00:10Z");
	assert_fields(v1, "ctl", "Update", "{\"f:spec\":{\"f:opts\":{\"f:b\":{}}}}");
	/* Apply entries sort before Update entries. */
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(entries(v1), 0), "operation"),
	    "Apply");
	json_object_put(v3);

	/* The same apply again changes nothing, times included. */
	v2 = run_apply(v1, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"image\":\"i2\",\"nodes\":2,\"opts\":{\"a\":1}}}",
	    "kubectl", false, T0 + 99);
	ck_assert(kc_json_equal(v1, v2));
	json_object_put(v2);
	json_object_put(v1);
}
END_TEST

START_TEST(test_apply_shared)
{
	struct json_object *v1, *v2;

	v1 = run_apply(NULL, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"image\":\"i\",\"nodes\":2}}", "kubectl", false, T0);
	/* Same value: no conflict, both own it, and the object did not change. */
	v2 = run_apply(v1, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"image\":\"i\"}}", "helm", false, T0 + 1);
	assert_fields(v2, "kubectl", "Apply", "{\"f:spec\":{\"f:image\":{},\"f:nodes\":{}}}");
	assert_fields(v2, "helm", "Apply", "{\"f:spec\":{\"f:image\":{}}}");
	ck_assert_ptr_null(kc_json_get(entry(v2, "helm", "Apply"), "time"));
	ck_assert_uint_eq(nentries(v2), 2);
	/* No time sorts first. */
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(entries(v2), 0), "manager"),
	    "helm");
	json_object_put(v1);

	/* One owner changing the shared field conflicts with the other. */
	{
		struct json_object *cfg = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\","
		    "\"metadata\":{\"name\":\"r1\"},\"spec\":{\"image\":\"j\"}}");
		struct fm_apply a = {
			.live = v2, .config = cfg, .manager = "helm", .api_version = API,
			.kind = "Run", .schema = &run_schema, .now = T0 + 2,
		};
		struct kc_status st = { 0 };

		apply_fail(&a, KC_ECONFLICT, &st, NULL);
		ck_assert_str_eq(st.message, "Apply failed with 1 conflict: conflict with "
		    "\"kubectl\": .spec.image");
		ck_assert_str_eq(st.causes[0].message, "conflict with \"kubectl\"");
		json_object_put(cfg);
	}
	json_object_put(v2);
}
END_TEST

static struct json_object *
csa_object(time_t now)
{
	struct json_object *obj = parse("{\"apiVersion\":\"v1\",\"kind\":\"Thing\",\"metadata\":"
	    "{\"name\":\"t\",\"namespace\":\"default\"},\"spec\":{\"replicas\":3,\"x\":1,"
	    "\"y\":2}}"), *out;
	struct fm_update u = {
		.obj = obj, .manager = "kubectl-client-side-apply", .api_version = "v1",
		.now = now,
	};

	out = update_ok(&u);
	json_object_put(obj);
	return out;
}

START_TEST(test_apply_conflict)
{
	struct json_object *live = csa_object(T0), *cfg, *details = NULL;
	struct fm_apply a = {
		.live = live, .manager = "other", .api_version = "v1", .kind = "Thing",
		.now = T0 + 1,
	};
	struct kc_status st = { 0 };

	assert_fields(live, "kubectl-client-side-apply", "Update", "{\"f:spec\":{\".\":{},"
	    "\"f:replicas\":{},\"f:x\":{},\"f:y\":{}}}");
	cfg = parse("{\"apiVersion\":\"v1\",\"kind\":\"Thing\",\"metadata\":{\"name\":\"t\"},"
	    "\"spec\":{\"replicas\":5}}");
	a.config = cfg;
	apply_fail(&a, KC_ECONFLICT, &st, &details);
	ck_assert_str_eq(st.message, "Apply failed with 1 conflict: conflict with "
	    "\"kubectl-client-side-apply\" using v1: .spec.replicas");
	ck_assert_int_eq(st.http_code, 409);
	ck_assert_str_eq(st.reason, "Conflict");
	ck_assert_uint_eq(st.ncauses, 1);
	ck_assert_str_eq(st.causes[0].reason, "FieldManagerConflict");
	ck_assert_str_eq(st.causes[0].message,
	    "conflict with \"kubectl-client-side-apply\" using v1");
	ck_assert_str_eq(st.causes[0].field, ".spec.replicas");
	assert_dump(details, "{\"causes\":[{\"reason\":\"FieldManagerConflict\",\"message\":"
	    "\"conflict with \\\"kubectl-client-side-apply\\\" using v1\",\"field\":"
	    "\".spec.replicas\"}]}", "details");
	json_object_put(details);
	json_object_put(cfg);

	/* "kubectl" without a last-applied annotation conflicts the same way. */
	cfg = parse("{\"apiVersion\":\"v1\",\"kind\":\"Thing\",\"metadata\":{\"name\":\"t\"},"
	    "\"spec\":{\"replicas\":5,\"x\":1}}");
	a.config = cfg;
	a.manager = "kubectl";
	apply_fail(&a, KC_ECONFLICT, &st, NULL);
	ck_assert_str_eq(st.message, "Apply failed with 1 conflict: conflict with "
	    "\"kubectl-client-side-apply\" using v1: .spec.replicas");
	json_object_put(cfg);
	json_object_put(live);
}
END_TEST

START_TEST(test_apply_conflicts_many)
{
	struct json_object *v1, *v2, *cfg, *details = NULL;
	struct kc_status st = { 0 };
	struct fm_apply a = {
		.manager = "me", .api_version = "v1", .kind = "Thing", .now = T0 + 3,
	};

	v1 = csa_object(T0);
	/* "b" applies z (and the status subresource writer owns status). */
	cfg = parse("{\"apiVersion\":\"v1\",\"kind\":\"Thing\",\"metadata\":{\"name\":\"t\"},"
	    "\"spec\":{\"z\":\"q\"}}");
	a.live = v1;
	a.config = cfg;
	a.manager = "b";
	v2 = apply_ok(&a);
	json_object_put(cfg);
	json_object_put(v1);

	cfg = parse("{\"apiVersion\":\"v1\",\"kind\":\"Thing\",\"metadata\":{\"name\":\"t\"},"
	    "\"spec\":{\"z\":\"r\",\"y\":0,\"x\":0,\"replicas\":3}}");
	a.live = v2;
	a.config = cfg;
	a.manager = "me";
	apply_fail(&a, KC_ECONFLICT, &st, &details);
	ck_assert_str_eq(st.message, "Apply failed with 3 conflicts: conflicts with \"b\":\n"
	    "- .spec.z\nconflicts with \"kubectl-client-side-apply\" using v1:\n"
	    "- .spec.x\n- .spec.y");
	ck_assert_uint_eq(st.ncauses, 3);
	ck_assert_str_eq(st.causes[0].field, ".spec.z");
	ck_assert_str_eq(st.causes[0].message, "conflict with \"b\"");
	ck_assert_str_eq(st.causes[2].field, ".spec.y");
	ck_assert_uint_eq(json_object_array_length(kc_json_get(details, "causes")), 3);
	json_object_put(details);

	/* Forced: the fields move to "me"; "b" is left with nothing and goes. */
	a.force = true;
	v1 = apply_ok(&a);
	assert_json(kc_json_get(v1, "spec"), "{\"replicas\":3,\"x\":0,\"y\":0,\"z\":\"r\"}",
	    "forced");
	assert_fields(v1, "me", "Apply", "{\"f:spec\":{\"f:replicas\":{},\"f:x\":{},"
	    "\"f:y\":{},\"f:z\":{}}}");
	assert_fields(v1, "kubectl-client-side-apply", "Update", "{\"f:spec\":{\".\":{},"
	    "\"f:replicas\":{}}}");
	ck_assert_ptr_null(entry(v1, "b", "Apply"));
	ck_assert_uint_eq(nentries(v1), 2);
	json_object_put(v1);
	json_object_put(v2);
	json_object_put(cfg);
}
END_TEST

START_TEST(test_apply_remove_omitted)
{
	struct json_object *v1, *v2, *v3;

	v1 = run_apply(NULL, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\",\"labels\":{\"a\":\"1\",\"b\":\"2\"}},\"spec\":{\"image\":\"i\","
	    "\"nodes\":2,\"opts\":{\"x\":1}}}", "kubectl", false, T0);
	/* Omitted: nodes, label b, and all of opts. */
	v2 = run_apply(v1, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\",\"labels\":{\"a\":\"1\"}},\"spec\":{\"image\":\"i\"}}", "kubectl",
	    false, T0 + 1);
	assert_json(v2, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\",\"labels\":{\"a\":\"1\"},\"managedFields\":[{\"manager\":"
	    "\"kubectl\",\"operation\":\"Apply\",\"apiVersion\":\"" API "\",\"time\":"
	    "\"2026-01-15T10:00:01Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{"
	    "\"f:metadata\":{\"f:labels\":{\"f:a\":{}}},\"f:spec\":{\"f:image\":{}}}}]},"
	    "\"spec\":{\"image\":\"i\"}}", "pruned");
	json_object_put(v2);

	/* A field another manager also owns stays. */
	v2 = run_apply(v1, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"nodes\":2}}", "helm", false, T0 + 1);
	v3 = run_apply(v2, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"image\":\"i\"}}", "kubectl", false, T0 + 2);
	assert_json(kc_json_get(v3, "spec"), "{\"image\":\"i\",\"nodes\":2}", "kept");
	ck_assert_ptr_null(kc_json_get(v3, "metadata", "labels"));
	json_object_put(v3);
	json_object_put(v2);

	/* Everything omitted: the applier's fields go, the entry too. */
	v2 = run_apply(v1, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"}}", "kubectl", false, T0 + 3);
	assert_json(v2, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"}}", "all gone");
	json_object_put(v2);
	json_object_put(v1);
}
END_TEST

START_TEST(test_apply_list_map)
{
	struct json_object *v1, *v2, *v3;

	v1 = run_apply(NULL, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
	    "{\"name\":\"B\",\"value\":\"2\"}]}}", "kubectl", false, T0);
	v2 = run_apply(v1, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"env\":[{\"name\":\"C\",\"value\":\"3\"}]}}", "helm",
	    false, T0 + 1);
	assert_json(kc_json_get(v2, "spec"), "{\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
	    "{\"name\":\"B\",\"value\":\"2\"},{\"name\":\"C\",\"value\":\"3\"}]}", "merged");
	/* kubectl drops B: B goes, C (helm's) stays. */
	v3 = run_apply(v2, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}}",
	    "kubectl", false, T0 + 2);
	assert_dump(kc_json_get(v3, "spec"), "{\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
	    "{\"name\":\"C\",\"value\":\"3\"}]}", "pruned");
	assert_fields(v3, "kubectl", "Apply", "{\"f:spec\":{\"f:env\":{"
	    "\"k:{\\\"name\\\":\\\"A\\\"}\":{\".\":{},\"f:name\":{},\"f:value\":{}}}}}");
	assert_fields(v3, "helm", "Apply", "{\"f:spec\":{\"f:env\":{"
	    "\"k:{\\\"name\\\":\\\"C\\\"}\":{\".\":{},\"f:name\":{},\"f:value\":{}}}}}");
	json_object_put(v3);

	/* One field of an item: the item merges, its other fields stay. */
	v3 = run_apply(v2, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"env\":[{\"name\":\"C\",\"extra\":\"z\"}]}}", "helm",
	    false, T0 + 3);
	assert_dump(kc_json_get(v3, "spec"), "{\"env\":[{\"name\":\"A\",\"value\":\"1\"},"
	    "{\"name\":\"B\",\"value\":\"2\"},{\"name\":\"C\",\"extra\":\"z\"}]}",
	    "item pruned of value");
	json_object_put(v3);

	/* Applied order wins for the shared items, others stay in place. */
	v3 = run_apply(v2, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"env\":[{\"name\":\"C\",\"value\":\"3\"},"
	    "{\"name\":\"A\",\"value\":\"1\"}]}}", "ctl", false, T0 + 4);
	assert_dump(kc_json_get(v3, "spec"), "{\"env\":[{\"name\":\"B\",\"value\":\"2\"},"
	    "{\"name\":\"C\",\"value\":\"3\"},{\"name\":\"A\",\"value\":\"1\"}]}", "order");
	json_object_put(v3);
	json_object_put(v2);
	json_object_put(v1);
}
END_TEST

START_TEST(test_apply_set_and_atomic)
{
	struct json_object *v1, *v2, *v3;

	v1 = run_apply(NULL, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"tags\":[\"a\",\"b\"],\"args\":[\"x\",\"y\"]}}",
	    "kubectl", false, T0);
	assert_fields(v1, "kubectl", "Apply", "{\"f:spec\":{\"f:args\":{},\"f:tags\":{"
	    "\"v:\\\"a\\\"\":{},\"v:\\\"b\\\"\":{}}}}");
	v2 = run_apply(v1, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"tags\":[\"c\"]}}", "helm", false, T0 + 1);
	assert_dump(kc_json_get(v2, "spec", "tags"), "[\"a\",\"b\",\"c\"]", "union");
	/* kubectl keeps b, drops a, adds d; helm's c stays; args replaced whole. */
	v3 = run_apply(v2, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"tags\":[\"b\",\"d\"],\"args\":[\"z\"]}}", "kubectl",
	    false, T0 + 2);
	assert_dump(kc_json_get(v3, "spec"), "{\"tags\":[\"b\",\"c\",\"d\"],\"args\":[\"z\"]}",
	    "set");
	assert_fields(v3, "kubectl", "Apply", "{\"f:spec\":{\"f:args\":{},\"f:tags\":{"
	    "\"v:\\\"b\\\"\":{},\"v:\\\"d\\\"\":{}}}}");
	json_object_put(v3);

	/* An atomic list owned by someone else is a conflict as a whole. */
	{
		struct json_object *cfg = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\","
		    "\"metadata\":{\"name\":\"r1\"},\"spec\":{\"args\":[\"x\",\"y\",\"w\"]}}");
		struct fm_apply a = {
			.live = v2, .config = cfg, .manager = "helm", .api_version = API,
			.kind = "Run", .schema = &run_schema, .now = T0 + 3,
		};
		struct kc_status st = { 0 };

		apply_fail(&a, KC_ECONFLICT, &st, NULL);
		ck_assert_str_eq(st.message, "Apply failed with 1 conflict: conflict with "
		    "\"kubectl\": .spec.args");
		json_object_put(cfg);
	}
	json_object_put(v2);
	json_object_put(v1);
}
END_TEST

START_TEST(test_apply_status_reset)
{
	/* The main resource ignores status; the status writer owns it. */
	struct json_object *cfg = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\","
	    "\"metadata\":{\"name\":\"r1\"},\"spec\":{\"image\":\"i\"},\"status\":{"
	    "\"phase\":\"Hacked\"}}");
	struct json_object *live = load("fieldmanager/run-live.json"), *l2, *obj;
	struct fm_apply a = {
		.config = cfg, .manager = "kubectl", .api_version = API, .kind = "Run",
		.schema = &run_schema, .reset = fieldmanager_reset_status, .now = T0 + 1,
	};

	l2 = run_update(NULL, live, "trainyard-controller", "status", T0);
	assert_fields(l2, "trainyard-controller", "Update", "{\"f:metadata\":{\"f:labels\":"
	    "{\".\":{},\"f:app\":{}}},\"f:spec\":{\".\":{},\"f:env\":{\".\":{},"
	    "\"k:{\\\"name\\\":\\\"A\\\"}\":{\".\":{},\"f:name\":{},\"f:value\":{}}},"
	    "\"f:image\":{},\"f:nodes\":{}},\"f:status\":{\".\":{},\"f:phase\":{}}}");
	a.live = l2;
	obj = apply_ok(&a);
	/* No conflict on status, and status is not the applier's. */
	assert_fields(obj, "kubectl", "Apply", "{\"f:spec\":{\"f:image\":{}}}");
	ck_assert_str_eq(kc_json_str(obj, "status", "phase"), "Hacked");
	json_object_put(obj);
	json_object_put(l2);
	json_object_put(live);
	json_object_put(cfg);
}
END_TEST

START_TEST(test_apply_before_first_apply)
{
	struct json_object *live = parse("{\"apiVersion\":\"v1\",\"kind\":\"Thing\","
	    "\"metadata\":{\"name\":\"t\"},\"spec\":{\"a\":1,\"b\":2}}");
	struct json_object *cfg = parse("{\"apiVersion\":\"v1\",\"kind\":\"Thing\","
	    "\"metadata\":{\"name\":\"t\"},\"spec\":{\"a\":5}}"), *obj;
	struct fm_apply a = {
		.live = live, .config = cfg, .manager = "kubectl", .api_version = "v1",
		.kind = "Thing", .now = T0,
	};
	struct kc_status st = { 0 };

	apply_fail(&a, KC_ECONFLICT, &st, NULL);
	ck_assert_str_eq(st.message, "Apply failed with 1 conflict: conflict with "
	    "\"before-first-apply\" using v1: .spec.a");
	a.force = true;
	obj = apply_ok(&a);
	assert_fields(obj, "before-first-apply", "Update", "{\"f:spec\":{\".\":{},"
	    "\"f:b\":{}}}");
	assert_fields(obj, "kubectl", "Apply", "{\"f:spec\":{\"f:a\":{}}}");
	json_object_put(obj);
	json_object_put(cfg);
	json_object_put(live);
}
END_TEST

START_TEST(test_apply_subresource)
{
	struct json_object *live = load("fieldmanager/run-live.json"), *l2, *obj, *cfg;
	struct fm_apply a = {
		.manager = "ctl", .api_version = API, .kind = "Run", .schema = &run_schema,
		.subresource = "status", .reset = fieldmanager_reset_spec, .now = T0 + 1,
	};
	struct kc_status st = { 0 };

	l2 = run_apply(NULL, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"status\":{\"phase\":\"Running\"}}", "ctl", false, T0);
	cfg = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{\"name\":"
	    "\"r1\"},\"status\":{\"phase\":\"Done\"},\"spec\":{\"image\":\"ignored\"}}");
	a.live = l2;
	a.config = cfg;
	/* A different entry: ctl on the main resource owns status.phase. */
	apply_fail(&a, KC_ECONFLICT, &st, NULL);
	ck_assert_str_eq(st.message, "Apply failed with 1 conflict: conflict with \"ctl\": "
	    ".status.phase");
	a.force = true;
	obj = apply_ok(&a);
	/* The main-resource entry lost its only field and went. */
	{
		struct json_object *mf = entries(obj), *e;

		ck_assert_uint_eq(json_object_array_length(mf), 1);
		e = json_object_array_get_idx(mf, 0);
		ck_assert_str_eq(kc_json_str(e, "subresource"), "status");
		assert_dump(kc_json_get(e, "fieldsV1"), "{\"f:status\":{\"f:phase\":{}}}",
		    "status entry");
	}
	json_object_put(obj);
	json_object_put(cfg);
	json_object_put(l2);
	json_object_put(live);
}
END_TEST

/* ------------------------------------------------------------------------
 * Update tracking
 */

START_TEST(test_update_tracking)
{
	struct json_object *created, *obj, *v2, *v3, *v4;

	obj = load("fieldmanager/run-live.json");
	json_object_object_del(obj, "status");
	created = run_update(NULL, obj, "kubectl-create", NULL, T0);
	assert_dump(entries(created), "[{\"manager\":\"kubectl-create\",\"operation\":"
	    "\"Update\",\"apiVersion\":\"" API "\",\"time\":\"2026-01-15T10:00:00Z\","
	    "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{\".\":{},"
	    "\"f:app\":{}}},\"f:spec\":{\".\":{},\"f:env\":{\".\":{},"
	    "\"k:{\\\"name\\\":\\\"A\\\"}\":{\".\":{},\"f:name\":{},\"f:value\":{}}},"
	    "\"f:image\":{},\"f:nodes\":{}}}}]", "create");
	json_object_put(obj);

	/* The status writer, on /status: its own entry, with the subresource. */
	obj = with(created, "status.phase", "\"Running\"");
	v2 = run_update(created, obj, "trainyard-controller", "status", T0 + 1);
	json_object_put(obj);
	assert_dump(entry(v2, "trainyard-controller", "Update"), "{\"manager\":"
	    "\"trainyard-controller\",\"operation\":\"Update\",\"apiVersion\":\"" API "\","
	    "\"time\":\"2026-01-15T10:00:01Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{"
	    "\"f:status\":{\".\":{},\"f:phase\":{}}},\"subresource\":\"status\"}", "status");
	/* The creator's entry was not touched: kept as it was. */
	assert_same(entry(v2, "kubectl-create", "Update"), entry(created, "kubectl-create",
	    "Update"), "untouched");

	/* An edit of nodes: the creator loses it, the editor gains it. */
	obj = with(v2, "spec.nodes", "5");
	v3 = run_update(v2, obj, "kubectl-edit", NULL, T0 + 2);
	json_object_put(obj);
	assert_fields(v3, "kubectl-edit", "Update", "{\"f:spec\":{\"f:nodes\":{}}}");
	assert_fields(v3, "kubectl-create", "Update", "{\"f:metadata\":{\"f:labels\":{\".\":{},"
	    "\"f:app\":{}}},\"f:spec\":{\".\":{},\"f:env\":{\".\":{},"
	    "\"k:{\\\"name\\\":\\\"A\\\"}\":{\".\":{},\"f:name\":{},\"f:value\":{}}},"
	    "\"f:image\":{}}}");
	/* Sorted by time: create, status, edit. */
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(entries(v3), 2), "manager"),
	    "kubectl-edit");

	/* The same editor again: one entry, fields merged, the new time. */
	obj = with(v3, "spec.image", "\"j\"");
	v4 = run_update(v3, obj, "kubectl-edit", NULL, T0 + 3);
	json_object_put(obj);
	assert_fields(v4, "kubectl-edit", "Update", "{\"f:spec\":{\"f:image\":{},"
	    "\"f:nodes\":{}}}");
	ck_assert_str_eq(kc_json_str(entry(v4, "kubectl-edit", "Update"), "time"),
	    "2026-01-15T10:00:03Z");
	ck_assert_uint_eq(nentries(v4), 3);
	json_object_put(v4);

	/* A write that changes nothing changes no entry. */
	v4 = run_update(v3, v3, "someone", NULL, T0 + 9);
	ck_assert(kc_json_equal(v4, v3));
	json_object_put(v4);

	/* Removing a field takes it from its owner; the remover owns nothing. */
	obj = kc_json_copy(v3);
	json_object_object_del(kc_json_obj_of(obj, "spec"), "nodes");
	v4 = run_update(v3, obj, "kubectl-patch", NULL, T0 + 4);
	json_object_put(obj);
	ck_assert_ptr_null(entry(v4, "kubectl-patch", "Update"));
	ck_assert_ptr_null(entry(v4, "kubectl-edit", "Update"));
	ck_assert_uint_eq(nentries(v4), 2);
	json_object_put(v4);

	/* No manager name: "unknown". */
	obj = with(v3, "spec.image", "\"k\"");
	v4 = run_update(v3, obj, "", NULL, T0 + 5);
	json_object_put(obj);
	assert_fields(v4, "unknown", "Update", "{\"f:spec\":{\"f:image\":{}}}");
	json_object_put(v4);
	json_object_put(v3);
	json_object_put(v2);
	json_object_put(created);
}
END_TEST

START_TEST(test_update_client_managed_fields)
{
	struct json_object *old, *obj, *out, *mf;

	old = csa_object(T0);
	/* Valid entries from the client replace the stored ones. */
	obj = kc_json_copy(old);
	mf = parse("[{\"manager\":\"kubectl\",\"operation\":\"Apply\",\"apiVersion\":\"v1\","
	    "\"time\":\"2026-01-15T10:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{"
	    "\"f:spec\":{\"f:y\":{},\"f:x\":{}}}}]");
	json_object_object_add(kc_json_obj_of(obj, "metadata"), "managedFields", mf);
	{
		struct fm_update u = {
			.old = old, .obj = obj, .manager = "kubectl", .api_version = "v1",
			.now = T0 + 1,
		};

		out = update_ok(&u);
		/* Unchanged entries are kept as sent, key order included. */
		assert_same(entries(out), mf, "client entries");
		json_object_put(out);
		/* On a subresource the client's entries are ignored. */
		u.subresource = "status";
		out = update_ok(&u);
		assert_same(entries(out), entries(old), "subresource");
		json_object_put(out);
	}
	json_object_put(obj);

	/* Invalid entries from the client: the stored ones are kept. */
	static const char *const bad[] = {
		"[{\"manager\":\"x\",\"operation\":\"Bogus\",\"apiVersion\":\"v1\","
		"\"fieldsType\":\"FieldsV1\"}]",
		"[{\"manager\":\"x\",\"operation\":\"Update\",\"fieldsType\":\"FieldsV1\"}]",
		"[{\"manager\":\"x\",\"operation\":\"Update\",\"apiVersion\":\"v1\"}]",
		"[{\"manager\":\"x\",\"operation\":\"Update\",\"apiVersion\":\"v1\","
		"\"fieldsType\":\"FieldsV2\"}]",
		"[{\"manager\":\"x\",\"operation\":\"Update\",\"apiVersion\":\"v1\","
		"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"zz\":{}}}]",
		"[{\"manager\":\"x\",\"operation\":\"Update\",\"apiVersion\":\"v1\","
		"\"fieldsType\":\"FieldsV1\",\"time\":\"yesterday\"}]",
		"[5]", "{}", "[{\"manager\":5}]", "null",
	};
	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
		struct fm_update u = {
			.old = old, .manager = "kubectl", .api_version = "v1", .now = T0 + 1,
		};

		obj = kc_json_copy(old);
		json_object_object_add(kc_json_obj_of(obj, "metadata"), "managedFields",
		    parse(bad[i]));
		u.obj = obj;
		out = update_ok(&u);
		ck_assert_msg(kc_json_equal(entries(out), entries(old)), "%s", bad[i]);
		json_object_put(out);
		json_object_put(obj);
	}

	/* [{}] and [] reset: only this write's own changes are recorded. */
	static const char *const resets[] = { "[{}]", "[]", "[{\"manager\":\"\"}]" };
	for (size_t i = 0; i < KC_ARRAY_SIZE(resets); i++) {
		struct fm_update u = {
			.old = old, .manager = "kubectl", .api_version = "v1", .now = T0 + 1,
		};

		obj = with(old, "metadata.managedFields", resets[i]);
		u.obj = obj;
		out = update_ok(&u);
		ck_assert_ptr_null(entries(out));
		ck_assert_ptr_nonnull(kc_json_get(out, "metadata"));
		json_object_put(out);
		json_object_put(obj);
		obj = with(old, "metadata.managedFields", resets[i]);
		json_object_object_add(kc_json_obj_of(obj, "spec"), "x", json_object_new_int(9));
		u.obj = obj;
		out = update_ok(&u);
		assert_dump(entries(out), "[{\"manager\":\"kubectl\",\"operation\":\"Update\","
		    "\"apiVersion\":\"v1\",\"time\":\"2026-01-15T10:00:01Z\",\"fieldsType\":"
		    "\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:x\":{}}}}]", resets[i]);
		json_object_put(out);
		json_object_put(obj);
	}
	json_object_put(old);

	/* An object that cannot be typed loses its managedFields. */
	obj = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"env\":[{\"name\":\"A\"}]}}");
	old = run_update(NULL, obj, "ctl", NULL, T0);
	json_object_put(obj);
	ck_assert_uint_eq(nentries(old), 1);
	obj = with(old, "spec.env", "[{\"value\":\"x\"}]");
	out = run_update(old, obj, "ctl", NULL, T0 + 1);
	ck_assert_ptr_null(entries(out));
	assert_json(kc_json_get(out, "spec"), "{\"env\":[{\"value\":\"x\"}]}", "kept");
	json_object_put(out);
	json_object_put(obj);
	json_object_put(old);
}
END_TEST

/* ------------------------------------------------------------------------
 * The sample, and kubectl's client-side to server-side apply upgrade
 */

#define RUN_CONFIG	"{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"	\
	"\"name\":\"r1\",\"namespace\":\"default\",\"labels\":{\"app\":\"x\"}},"	\
	"\"spec\":{\"image\":\"i\",\"nodes\":2,\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}}"

START_TEST(test_sample_roundtrip)
{
	struct json_object *sample = load("fieldmanager/managedfields-example.json");
	struct json_object *mf = entries(sample), *live, *out, *cfg, *old, *obj, *u;
	struct kc_status st = { 0 };
	struct fm_apply a = {
		.manager = "kubectl", .api_version = API, .kind = "Run", .schema = &run_schema,
		.reset = fieldmanager_reset_status, .now = T0 + 600,
	};
	char *want, *want_mf = dump(mf);

	live = load("fieldmanager/run-live.json");
	json_object_object_add(kc_json_obj_of(live, "metadata"), "managedFields",
	    kc_json_copy(mf));
	want = dump(live);

	/* A write that changes nothing keeps every entry as it was. */
	out = run_update(live, live, "kubectl-edit", NULL, T0 + 60);
	assert_dump(out, want, "no-op update");
	json_object_put(out);

	/* So does applying the same configuration again. */
	cfg = parse(RUN_CONFIG);
	a.live = live;
	a.config = cfg;
	out = apply_ok(&a);
	assert_dump(out, want, "no-op apply");
	json_object_put(out);

	/* Each set survives decoding and encoding. */
	for (size_t i = 0; i < json_object_array_length(mf); i++) {
		struct json_object *e = json_object_array_get_idx(mf, i), *empty = parse("{}");

		ck_assert_int_eq(fieldmanager_fieldset_union(kc_json_get(e, "fieldsV1"), empty,
		    &u, &st), 0);
		ck_assert(same_json(u, kc_json_get(e, "fieldsV1")));
		ck_assert_int_eq(fieldmanager_fieldset_empty(u, &st), 0);
		json_object_put(u);
		json_object_put(empty);
	}

	/* The sample again, written the way the devcluster would write it. */
	old = run_apply(NULL, RUN_CONFIG, "kubectl", false, T0);
	obj = with(old, "status.phase", "\"Running\"");
	out = run_update(old, obj, "trainyard-controller", "status", T0);
	/* Equal sets; the sample's keys are not in canonical order. */
	assert_json(entries(out), want_mf, "rebuilt");
	assert_dump(kc_json_get(entry(out, "trainyard-controller", "Update"), "fieldsV1"),
	    "{\"f:status\":{\".\":{},\"f:phase\":{}}}", "status entry");
	json_object_put(out);
	json_object_put(obj);
	json_object_put(old);

	kc_free(want);
	kc_free(want_mf);
	json_object_put(cfg);
	json_object_put(live);
	json_object_put(sample);
}
END_TEST

START_TEST(test_csa_migration)
{
	struct json_object *post = load("fieldmanager/csa-create.json");
	struct json_object *ssa = load("fieldmanager/ssa-apply.json");
	struct json_object *v1, *v2, *v3, *v4, *v5, *cfg, *patched, *mf;
	struct fm_apply a = {
		.config = ssa, .manager = "kubectl", .api_version = API, .kind = "Run",
		.schema = &run_schema,
	};
	struct kc_status st = { 0 };
	const char *uid = "4b1c6e8a-0d0e-4c35-9a53-2f3a9d1b7c11";
	char *la, *want_mf;

	/* kubectl apply: POST ?fieldManager=kubectl-client-side-apply. */
	v1 = run_update(NULL, post, "kubectl-client-side-apply", NULL, T0);
	assert_fields(v1, "kubectl-client-side-apply", "Update", "{\"f:metadata\":{"
	    "\"f:annotations\":{\".\":{},\"f:" LAST_APPLIED "\":{}}},\"f:spec\":{\".\":{},"
	    "\"f:extra\":{},\"f:image\":{},\"f:nodes\":{}}}");

	/* Once something else changed nodes, the annotation explains nothing. */
	{
		struct json_object *scaled = with(v1, "spec.nodes", "5"), *v1s;

		v1s = run_update(v1, scaled, "kubectl-scale", NULL, T0 + 1);
		a.live = v1s;
		a.now = T0 + 2;
		apply_fail(&a, KC_ECONFLICT, &st, NULL);
		ck_assert_str_eq(st.message, "Apply failed with 1 conflict: conflict with "
		    "\"kubectl-scale\" using " API ": .spec.nodes");
		json_object_put(v1s);
		json_object_put(scaled);
	}
	/* Only kubectl's apply gets the upgrade. */
	a.live = v1;
	a.manager = "flux";
	apply_fail(&a, KC_ECONFLICT, &st, NULL);
	ck_assert_str_eq(st.message, "Apply failed with 1 conflict: conflict with "
	    "\"kubectl-client-side-apply\" using " API ": .spec.nodes");

	/* kubectl apply --server-side: nodes changes without a conflict. */
	a.manager = "kubectl";
	v2 = apply_ok(&a);
	assert_json(kc_json_get(v2, "spec"), "{\"extra\":\"e\",\"image\":\"i\",\"nodes\":3}",
	    "applied");
	assert_fields(v2, "kubectl", "Apply", "{\"f:spec\":{\"f:image\":{},\"f:nodes\":{}}}");
	assert_fields(v2, "kubectl-client-side-apply", "Update", "{\"f:metadata\":{"
	    "\"f:annotations\":{\".\":{},\"f:" LAST_APPLIED "\":{}}},\"f:spec\":{\".\":{},"
	    "\"f:extra\":{},\"f:image\":{}}}");
	/* The annotation follows the applied body, as Go encodes it. */
	ck_assert_str_eq(kc_json_str(v2, "metadata", "annotations", LAST_APPLIED),
	    "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{\"name\":\"r1\","
	    "\"namespace\":\"default\"},\"spec\":{\"image\":\"i\",\"nodes\":3}}\n");
	ck_assert_str_eq(kc_json_str(v2, "metadata", "uid"), uid);
	la = kc_strdup(kc_json_str(v2, "metadata", "annotations", LAST_APPLIED));

	/* The second request: kubectl-last-applied takes the annotation. */
	cfg = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{\"name\":"
	    "\"r1\",\"namespace\":\"default\",\"annotations\":{}}}");
	ck_assert_int_eq(kc_json_set_str(kc_json_get(cfg, "metadata", "annotations"),
	    LAST_APPLIED, la), 0);
	{
		struct fm_apply b = {
			.live = v2, .config = cfg, .manager = "kubectl-last-applied",
			.api_version = API, .kind = "Run", .schema = &run_schema, .now = T0 + 3,
		};

		v3 = apply_ok(&b);
	}
	assert_fields(v3, "kubectl-last-applied", "Apply", "{\"f:metadata\":{"
	    "\"f:annotations\":{\"f:" LAST_APPLIED "\":{}}}}");
	ck_assert_ptr_null(kc_json_get(entry(v3, "kubectl-last-applied", "Apply"), "time"));

	/* The third: a JSON patch replacing managedFields (csaupgrade). */
	mf = parse("[{\"manager\":\"kubectl-last-applied\",\"operation\":\"Apply\","
	    "\"apiVersion\":\"" API "\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{"
	    "\"f:metadata\":{\"f:annotations\":{\"f:" LAST_APPLIED "\":{}}}}},"
	    "{\"manager\":\"kubectl\",\"operation\":\"Apply\",\"apiVersion\":\"" API "\","
	    "\"time\":\"2026-01-15T10:00:02Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{"
	    "\"f:metadata\":{\"f:annotations\":{\".\":{},\"f:" LAST_APPLIED "\":{}}},"
	    "\"f:spec\":{\".\":{},\"f:extra\":{},\"f:image\":{},\"f:nodes\":{}}}}]");
	want_mf = dump(mf);
	patched = kc_json_copy(v3);
	json_object_object_add(kc_json_obj_of(patched, "metadata"), "managedFields", mf);
	v4 = run_update(v3, patched, "kubectl", NULL, T0 + 4);
	assert_dump(entries(v4), want_mf, "migrated");

	/* The re-apply: what only client-side apply had set is pruned now. */
	a.live = v4;
	a.now = T0 + 5;
	v5 = apply_ok(&a);
	assert_json(kc_json_get(v5, "spec"), "{\"image\":\"i\",\"nodes\":3}", "pruned");
	assert_fields(v5, "kubectl", "Apply", "{\"f:spec\":{\"f:image\":{},\"f:nodes\":{}}}");
	ck_assert_str_eq(kc_json_str(entry(v5, "kubectl", "Apply"), "time"),
	    "2026-01-15T10:00:05Z");
	ck_assert_str_eq(kc_json_str(v5, "metadata", "annotations", LAST_APPLIED), la);
	ck_assert_str_eq(kc_json_str(v5, "metadata", "uid"), uid);
	ck_assert_str_eq(kc_json_str(v5, "metadata", "resourceVersion"), "7");
	ck_assert_uint_eq(nentries(v5), 2);

	kc_free(la);
	kc_free(want_mf);
	json_object_put(patched);
	json_object_put(cfg);
	json_object_put(v5);
	json_object_put(v4);
	json_object_put(v3);
	json_object_put(v2);
	json_object_put(v1);
	json_object_put(ssa);
	json_object_put(post);
}
END_TEST

/* ------------------------------------------------------------------------
 * Validation
 */

START_TEST(test_validation_apply)
{
	struct json_object *cfg, *details = NULL, *live, *obj;
	struct kc_status st = { 0 };
	struct fm_apply a = {
		.manager = "kubectl", .api_version = API, .kind = "Run", .schema = &run_schema,
		.now = T0,
	};

	cfg = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{\"name\":"
	    "\"r1\",\"managedFields\":[]}}");
	a.config = cfg;
	apply_fail(&a, KC_EBADREQUEST, &st, NULL);
	ck_assert_str_eq(st.message, "metadata.managedFields must be nil");
	ck_assert_int_eq(st.http_code, 400);
	ck_assert_str_eq(st.reason, "BadRequest");
	json_object_put(cfg);

	/* null is nil. */
	cfg = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{\"name\":"
	    "\"r1\",\"managedFields\":null},\"spec\":{\"image\":\"i\"}}");
	a.config = cfg;
	obj = apply_ok(&a);
	ck_assert_uint_eq(nentries(obj), 1);
	json_object_put(obj);

	/* fieldManager is required. */
	a.manager = "";
	apply_fail(&a, KC_EINVALID, &st, &details);
	ck_assert_str_eq(st.message, "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: "
	    "Required value: is required for apply patch");
	ck_assert_int_eq(st.http_code, 422);
	ck_assert_str_eq(st.reason, "Invalid");
	ck_assert_uint_eq(st.ncauses, 1);
	ck_assert_str_eq(st.causes[0].reason, "FieldValueRequired");
	ck_assert_str_eq(st.causes[0].field, "fieldManager");
	ck_assert_str_eq(st.causes[0].message, "Required value: is required for apply patch");
	assert_dump(details, "{\"group\":\"meta.k8s.io\",\"kind\":\"PatchOptions\",\"causes\":"
	    "[{\"reason\":\"FieldValueRequired\",\"message\":\"Required value: is required for "
	    "apply patch\",\"field\":\"fieldManager\"}]}", "details");
	json_object_put(details);
	a.manager = NULL;
	apply_fail(&a, KC_EINVALID, &st, NULL);
	a.manager = "kubectl";

	/* The body must be of the URL's kind and version. */
	a.kind = "Job";
	apply_fail(&a, KC_EBADREQUEST, &st, NULL);
	ck_assert_str_eq(st.message, "invalid object type: " API ", Kind=Run");
	a.kind = "Run";
	a.api_version = "trainyard.dev/v1alpha1";
	apply_fail(&a, KC_EBADREQUEST, &st, NULL);
	ck_assert_str_eq(st.message, "invalid object type: " API ", Kind=Run");
	json_object_put(cfg);
	cfg = parse("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
	    "\"c\"}}");
	a.config = cfg;
	a.api_version = "v1";
	a.kind = "Secret";
	apply_fail(&a, KC_EBADREQUEST, &st, NULL);
	ck_assert_str_eq(st.message, "invalid object type: /v1, Kind=ConfigMap");
	json_object_put(cfg);
	cfg = parse("{\"metadata\":{\"name\":\"c\"}}");
	a.config = cfg;
	apply_fail(&a, KC_EBADREQUEST, &st, NULL);
	ck_assert_str_eq(st.message, "invalid object type: /, Kind=");
	json_object_put(cfg);
	cfg = parse("[1]");
	a.config = cfg;
	apply_fail(&a, KC_EBADREQUEST, &st, NULL);
	json_object_put(cfg);

	/* Bodies and live objects the schema cannot type: 500, no reason. */
	a.api_version = API;
	a.kind = "Run";
	cfg = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{\"name\":"
	    "\"r1\",\"namespace\":\"default\"},\"spec\":{\"env\":[{\"name\":\"A\"},"
	    "{\"name\":\"A\"}]}}");
	a.config = cfg;
	apply_fail(&a, KC_EINTERNAL, &st, NULL);
	ck_assert_str_eq(st.message, "failed to create typed patch object (default/r1; "
	    API ", Kind=Run): .spec.env: duplicate entries for key [name=\"A\"]");
	ck_assert_int_eq(st.http_code, 500);
	ck_assert_str_eq(st.reason, "");
	json_object_put(cfg);

	cfg = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{\"name\":"
	    "\"r1\"},\"spec\":{\"image\":\"i\"}}");
	a.config = cfg;
	live = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{\"name\":"
	    "\"r1\"},\"spec\":{\"env\":[{\"value\":\"x\"}]}}");
	a.live = live;
	apply_fail(&a, KC_EINTERNAL, &st, NULL);
	ck_assert_str_eq(st.message, "failed to create typed live object (/r1; " API
	    ", Kind=Run): .spec.env: element 0: associative list with keys has an element "
	    "that omits key field \"name\" (and doesn't have default value)");
	json_object_put(live);
	live = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{\"name\":"
	    "\"r1\",\"managedFields\":[{\"manager\":\"x\",\"operation\":\"Patch\","
	    "\"apiVersion\":\"v1\",\"fieldsType\":\"FieldsV1\"}]}}");
	a.live = live;
	apply_fail(&a, KC_EINTERNAL, &st, NULL);
	ck_assert_str_eq(st.message,
	    "failed to decode managed fields: operation must be `Apply` or `Update`");
	json_object_put(live);
	live = parse("[]");
	a.live = live;
	apply_fail(&a, KC_EINVALID, &st, NULL);
	json_object_put(live);
	json_object_put(cfg);
	ck_assert_int_eq(fieldmanager_apply(NULL, &obj, NULL, &st), KC_EINVALID);
	{
		struct fm_update u = { .manager = "m" };

		obj = SENTINEL;
		ck_assert_int_eq(fieldmanager_update(&u, &obj, &st), KC_EINVALID);
		ck_assert_int_eq(fieldmanager_update(NULL, &obj, &st), KC_EINVALID);
		u.obj = cfg = parse("{}");
		u.old = live = parse("[]");
		ck_assert_int_eq(fieldmanager_update(&u, &obj, &st), KC_EINVALID);
		ck_assert_ptr_eq(obj, SENTINEL);
		json_object_put(live);
		json_object_put(cfg);
	}
}
END_TEST

START_TEST(test_validation_options)
{
	struct json_object *details = NULL;
	struct kc_status st = { 0 };
	char long_name[200];

	ck_assert_int_eq(fieldmanager_validate_options("PatchOptions", true, "kubectl", false,
	    &details, &st), 0);
	ck_assert_int_eq(fieldmanager_validate_options("CreateOptions", false, "", false,
	    NULL, &st), 0);
	ck_assert_int_eq(fieldmanager_validate_options("PatchOptions", true, "kubectl", true,
	    NULL, &st), 0);
	ck_assert_ptr_null(details);

	ck_assert_int_eq(fieldmanager_validate_options("PatchOptions", false, "kubectl-patch",
	    true, &details, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "PatchOptions.meta.k8s.io \"\" is invalid: force: "
	    "Forbidden: may not be specified for non-apply patch");
	assert_dump(details, "{\"group\":\"meta.k8s.io\",\"kind\":\"PatchOptions\",\"causes\":"
	    "[{\"reason\":\"FieldValueForbidden\",\"message\":\"Forbidden: may not be specified "
	    "for non-apply patch\",\"field\":\"force\"}]}", "forbidden");
	json_object_put(details);

	memset(long_name, 'a', 129);
	long_name[129] = '\0';
	ck_assert_int_eq(fieldmanager_validate_options("PatchOptions", false, long_name, true,
	    NULL, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "PatchOptions.meta.k8s.io \"\" is invalid: [force: "
	    "Forbidden: may not be specified for non-apply patch, fieldManager: Too long: may "
	    "not be more than 128 bytes]");
	ck_assert_uint_eq(st.ncauses, 2);
	ck_assert_str_eq(st.causes[1].reason, "FieldValueTooLong");
	long_name[128] = '\0';
	ck_assert_int_eq(fieldmanager_validate_options("UpdateOptions", false, long_name,
	    false, NULL, &st), 0);

	ck_assert_int_eq(fieldmanager_validate_options("UpdateOptions", false, "a\001b",
	    false, NULL, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "UpdateOptions.meta.k8s.io \"\" is invalid: "
	    "fieldManager: Invalid value: \"a\\x01b\": invalid character U+0001 (at "
	    "position 1)");
	ck_assert_str_eq(st.causes[0].reason, "FieldValueInvalid");
}
END_TEST

/* ------------------------------------------------------------------------
 * Entries: the cap, manager names
 */

START_TEST(test_cap_managers)
{
	struct json_object *cur = parse("{\"apiVersion\":\"v1\",\"kind\":\"Thing\","
	    "\"metadata\":{\"name\":\"t\"},\"spec\":{}}"), *next, *out;
	char field[32], manager[32];

	for (int i = 0; i <= FM_UPDATE_MANAGERS_MAX; i++) {
		struct fm_update u = {
			.old = cur, .api_version = "v1", .now = T0 + i, .manager = manager,
		};

		snprintf(field, sizeof(field), "spec.f%02d", i);
		snprintf(manager, sizeof(manager), "m%02d", i);
		next = with(cur, field, "1");
		u.obj = next;
		out = update_ok(&u);
		json_object_put(next);
		json_object_put(cur);
		cur = out;
	}
	ck_assert_uint_eq(nentries(cur), FM_UPDATE_MANAGERS_MAX);
	ck_assert_ptr_null(entry(cur, "m00", "Update"));
	ck_assert_ptr_null(entry(cur, "m01", "Update"));
	assert_fields(cur, "ancient-changes", "Update", "{\"f:spec\":{\"f:f00\":{},"
	    "\"f:f01\":{}}}");
	ck_assert_str_eq(kc_json_str(entry(cur, "ancient-changes", "Update"), "time"),
	    "2026-01-15T10:00:01Z");
	ck_assert_ptr_nonnull(entry(cur, "m02", "Update"));
	ck_assert_ptr_nonnull(entry(cur, "m10", "Update"));
	json_object_put(cur);
}
END_TEST

START_TEST(test_manager_name)
{
	char buf[256], small[4];
	char ua[300];

	ck_assert_int_eq(fieldmanager_manager_name("kubectl", "curl/8", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "kubectl");
	ck_assert_int_eq(fieldmanager_manager_name(NULL, "kubectl/v1.32.4 (linux/amd64) "
	    "kubernetes/4cb5f07", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "kubectl");
	ck_assert_int_eq(fieldmanager_manager_name("", "Go-http-client/1.1", buf,
	    sizeof(buf)), 0);
	ck_assert_str_eq(buf, "Go-http-client");
	ck_assert_int_eq(fieldmanager_manager_name(NULL, "a\tb\001c d/x", buf, sizeof(buf)),
	    0);
	ck_assert_str_eq(buf, "abc d");
	ck_assert_int_eq(fieldmanager_manager_name(NULL, "caf\xc3\xa9/1", buf, sizeof(buf)),
	    0);
	ck_assert_str_eq(buf, "caf\xc3\xa9");
	ck_assert_int_eq(fieldmanager_manager_name(NULL, "x\xffy", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "x\xef\xbf\xbdy");
	ck_assert_int_eq(fieldmanager_manager_name(NULL, NULL, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "");
	memset(ua, 'u', sizeof(ua) - 1);
	ua[sizeof(ua) - 1] = '\0';
	ck_assert_int_eq(fieldmanager_manager_name(NULL, ua, buf, sizeof(buf)), 0);
	ck_assert_uint_eq(strlen(buf), FM_MANAGER_MAX);
	ck_assert_int_eq(fieldmanager_manager_name("kubectl", NULL, small, sizeof(small)),
	    -ENOBUFS);
	ck_assert_int_eq(fieldmanager_manager_name(NULL, "kubectl/1", small, sizeof(small)),
	    -ENOBUFS);
	ck_assert_int_eq(fieldmanager_manager_name(NULL, "kubectl/1", small, 0), -ENOBUFS);
}
END_TEST

/* ------------------------------------------------------------------------
 * Edges: nulls, opaque keys, duplicates, versions, escaping, limits
 */

START_TEST(test_fieldset_edges)
{
	struct json_object *obj, *fs = NULL, *deep, *o;
	struct kc_status st = { 0 };

	/* Under a key with '.', the schema says nothing: env is atomic there. */
	obj = parse("{\"spec\":{\"a.b\":{\"env\":[{\"name\":\"x\"}]},\"env\":[{\"name\":"
	    "\"y\"}]},\"metadata\":{\"ownerReferences\":[{\"uid\":\"u1\",\"kind\":\"K\"}],"
	    "\"finalizers\":[\"f\"]}}");
	ck_assert_int_eq(fieldmanager_fieldset(obj, &run_schema, NULL, &fs, &st), 0);
	assert_dump(fs, "{\"f:metadata\":{\"f:finalizers\":{\"v:\\\"f\\\"\":{}},"
	    "\"f:ownerReferences\":{\"k:{\\\"uid\\\":\\\"u1\\\"}\":{\".\":{},\"f:kind\":{},"
	    "\"f:uid\":{}}}},\"f:spec\":{\"f:a.b\":{\"f:env\":{}},\"f:env\":{"
	    "\"k:{\\\"name\\\":\\\"y\\\"}\":{\".\":{},\"f:name\":{}}}}}", "opaque");
	json_object_put(fs);
	json_object_put(obj);

	/* null where the schema has an object or a list: nothing to own. */
	obj = parse("{\"spec\":{\"opts\":null,\"env\":null,\"tags\":null,\"x\":null}}");
	ck_assert_int_eq(fieldmanager_fieldset(obj, &run_schema, NULL, &fs, &st), 0);
	assert_dump(fs, "{\"f:spec\":{\"f:x\":{}}}", "nulls");
	json_object_put(fs);
	json_object_put(obj);

	/* Keys shown in messages: floats, bools, lists, maps. */
	obj = parse("{\"spec\":{\"ports\":[{\"containerPort\":1.5,\"protocol\":true},"
	    "{\"containerPort\":1.5,\"protocol\":true}]}}");
	ck_assert_int_eq(fieldmanager_fieldset(obj, &run_schema, NULL, &fs, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, ".spec.ports: duplicate entries for key "
	    "[containerPort=1.5,protocol=true]");
	json_object_put(obj);
	obj = parse("{\"spec\":{\"ports\":[{\"containerPort\":[1,{\"b\":null,\"a\":1e-5}]},"
	    "{\"containerPort\":[1,{\"a\":1e-5,\"b\":null}],\"protocol\":\"TCP\"}]}}");
	ck_assert_int_eq(fieldmanager_fieldset(obj, &run_schema, NULL, &fs, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, ".spec.ports: duplicate entries for key "
	    "[containerPort=[1,{a=1e-05,b=null}],protocol=\"TCP\"]");
	json_object_put(obj);
	obj = parse("{\"spec\":{\"tags\":[[1]]}}");
	ck_assert_int_eq(fieldmanager_fieldset(obj, &run_schema, NULL, &fs, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, ".spec.tags: element 0: not supported: associative list "
	    "with lists as elements");
	json_object_put(obj);
	obj = parse("{\"spec\":{\"tags\":[null]}}");
	ck_assert_int_eq(fieldmanager_fieldset(obj, &run_schema, NULL, &fs, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, ".spec.tags: element 0: associative list without keys "
	    "has an element that's an explicit null");
	json_object_put(obj);
	/* A list-type map without keys is atomic. */
	obj = parse("{\"spec\":{\"lists\":[{\"a\":1}]}}");
	ck_assert_int_eq(fieldmanager_fieldset(obj, &run_schema, NULL, &fs, &st), 0);
	assert_dump(fs, "{\"f:spec\":{\"f:lists\":{}}}", "keyless map list");
	json_object_put(fs);
	json_object_put(obj);

	/* Nesting past FM_DEPTH_MAX. */
	deep = json_object_new_object();
	o = deep;
	for (int i = 0; i < FM_DEPTH_MAX + 5; i++) {
		struct json_object *c = json_object_new_object();

		json_object_object_add(o, "x", c);
		o = c;
	}
	fs = SENTINEL;
	ck_assert_int_eq(fieldmanager_fieldset(deep, NULL, NULL, &fs, &st), KC_ETOOLARGE);
	ck_assert_ptr_eq(fs, SENTINEL);
	ck_assert_ptr_nonnull(strstr(st.message, "nested deeper than 100"));
	json_object_put(deep);
	deep = json_object_new_object();
	o = deep;
	for (int i = 0; i < FM_DEPTH_MAX + 5; i++) {
		struct json_object *c = json_object_new_object();

		json_object_object_add(o, "f:x", c);
		o = c;
	}
	ck_assert_int_eq(fieldmanager_fieldset_empty(deep, &st), KC_ETOOLARGE);
	json_object_put(deep);

	/* An apply of a too deep body. */
	deep = parse("{\"apiVersion\":\"v1\",\"kind\":\"Thing\",\"metadata\":{\"name\":"
	    "\"t\"}}");
	o = deep;
	for (int i = 0; i < FM_DEPTH_MAX + 5; i++) {
		struct json_object *c = json_object_new_object();

		json_object_object_add(o, "x", c);
		o = c;
	}
	{
		struct fm_apply a = {
			.config = deep, .manager = "m", .api_version = "v1", .kind = "Thing",
			.now = T0,
		};

		apply_fail(&a, KC_ETOOLARGE, &st, NULL);
		ck_assert_ptr_nonnull(strstr(st.message, "nested deeper than 100"));
	}
	json_object_put(deep);
}
END_TEST

START_TEST(test_apply_edges)
{
	struct json_object *v1, *v2, *v3, *obj, *live, *cfg;
	struct kc_status st = { 0 };

	/* null over an object the schema knows leaves it, and owns nothing. */
	v1 = run_apply(NULL, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"opts\":{\"a\":1}}}", "ctl", false, T0);
	v2 = run_apply(v1, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"opts\":null,\"image\":\"i\"}}", "kubectl", false,
	    T0 + 1);
	assert_json(kc_json_get(v2, "spec"), "{\"opts\":{\"a\":1},\"image\":\"i\"}", "null");
	assert_fields(v2, "kubectl", "Apply", "{\"f:spec\":{\"f:image\":{}}}");
	json_object_put(v2);
	/* Unknown to the schema, null is a value like any other. */
	v2 = run_apply(v1, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"other\":null}}", "kubectl", false, T0 + 1);
	assert_json(kc_json_get(v2, "spec"), "{\"opts\":{\"a\":1},\"other\":null}", "null leaf");
	assert_fields(v2, "kubectl", "Apply", "{\"f:spec\":{\"f:other\":{}}}");
	json_object_put(v2);
	/* A scalar over an object replaces it. */
	v2 = run_apply(v1, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"opts\":\"flat\"}}", "ctl", false, T0 + 1);
	assert_json(kc_json_get(v2, "spec"), "{\"opts\":\"flat\"}", "flattened");
	json_object_put(v2);

	/* Applied at another version: still one Apply entry, the new version. */
	cfg = parse("{\"apiVersion\":\"trainyard.dev/v1\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"opts\":{\"a\":1}}}");
	{
		struct fm_apply a = {
			.live = v1, .config = cfg, .manager = "ctl",
			.api_version = "trainyard.dev/v1", .kind = "Run", .schema = &run_schema,
			.now = T0 + 2,
		};

		v2 = apply_ok(&a);
	}
	ck_assert_uint_eq(nentries(v2), 1);
	ck_assert_str_eq(kc_json_str(entry(v2, "ctl", "Apply"), "apiVersion"),
	    "trainyard.dev/v1");
	json_object_put(v2);
	json_object_put(cfg);

	/* Update entries are per version: two of them. */
	obj = with(v1, "spec.opts.b", "1");
	v2 = run_update(v1, obj, "ed", NULL, T0 + 3);
	json_object_put(obj);
	obj = with(v2, "spec.opts.c", "1");
	{
		struct fm_update u = {
			.old = v2, .obj = obj, .manager = "ed", .api_version = "trainyard.dev/v1",
			.schema = &run_schema, .now = T0 + 3,
		};

		v3 = update_ok(&u);
	}
	json_object_put(obj);
	ck_assert_uint_eq(nentries(v3), 3);
	/* Same time: sorted by manager, then version. */
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(entries(v3), 1), "apiVersion"),
	    "trainyard.dev/v1");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(entries(v3), 2), "apiVersion"),
	    API);
	json_object_put(v3);
	json_object_put(v2);

	/* A conflict with a status writer names its subresource. */
	obj = with(v1, "status.phase", "\"Running\"");
	v2 = run_update(v1, obj, "ctl", "status", T0 + 4);
	json_object_put(obj);
	cfg = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{\"name\":"
	    "\"r1\"},\"status\":{\"phase\":\"Hacked\"}}");
	{
		struct fm_apply a = {
			.live = v2, .config = cfg, .manager = "kubectl", .api_version = API,
			.kind = "Run", .schema = &run_schema, .now = T0 + 5,
		};

		apply_fail(&a, KC_ECONFLICT, &st, NULL);
	}
	ck_assert_str_eq(st.message, "Apply failed with 1 conflict: conflict with \"ctl\" with "
	    "subresource \"status\" using " API ": .status.phase");
	json_object_put(cfg);
	json_object_put(v2);
	json_object_put(v1);

	/* Duplicates in the live list: kept unless the apply names them. */
	live = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{\"name\":"
	    "\"r1\",\"managedFields\":[{\"manager\":\"old\",\"operation\":\"Update\","
	    "\"apiVersion\":\"" API "\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":"
	    "{\"f:x\":{}}}},{\"manager\":\"old\",\"operation\":\"Update\",\"apiVersion\":\""
	    API "\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:y\":{}}}}]},"
	    "\"spec\":{\"x\":1,\"y\":2,\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":"
	    "\"B\"},{\"name\":\"A\",\"value\":\"2\"}]}}");
	v2 = run_apply(live, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"env\":[{\"name\":\"C\"}]}}", "kubectl", false, T0);
	assert_dump(kc_json_get(v2, "spec", "env"), "[{\"name\":\"A\",\"value\":\"1\"},"
	    "{\"name\":\"B\"},{\"name\":\"A\",\"value\":\"2\"},{\"name\":\"C\"}]", "dups kept");
	/* The later of two entries with one identity wins. */
	assert_fields(v2, "old", "Update", "{\"f:spec\":{\"f:y\":{}}}");
	json_object_put(v2);
	v2 = run_apply(live, "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
	    "\"name\":\"r1\"},\"spec\":{\"env\":[{\"name\":\"A\",\"value\":\"3\"}]}}",
	    "kubectl", false, T0);
	assert_dump(kc_json_get(v2, "spec", "env"), "[{\"name\":\"A\",\"value\":\"3\"},"
	    "{\"name\":\"B\"}]", "dups replaced");
	json_object_put(v2);
	json_object_put(live);
}
END_TEST

START_TEST(test_last_applied_edges)
{
	struct json_object *post = load("fieldmanager/csa-create.json"), *v1, *v2, *cfg, *big;
	struct fm_apply a = {
		.manager = "kubectl", .api_version = API, .kind = "Run", .schema = &run_schema,
		.now = T0 + 1,
	};
	struct kc_status st = { 0 };
	char *pad;

	/* Two conflicts, one the annotation explains: only the other is reported. */
	big = with(post, "spec.image", "\"j\"");
	v1 = run_update(NULL, big, "kubectl-client-side-apply", NULL, T0);
	json_object_put(big);
	cfg = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{\"name\":\"r1\","
	    "\"namespace\":\"default\"},\"spec\":{\"image\":\"k\",\"nodes\":3}}");
	a.live = v1;
	a.config = cfg;
	apply_fail(&a, KC_ECONFLICT, &st, NULL);
	ck_assert_str_eq(st.message, "Apply failed with 1 conflict: conflict with "
	    "\"kubectl-client-side-apply\" using " API ": .spec.image");
	json_object_put(cfg);

	/* Conflicts with two managers: the explained one drops out. */
	{
		struct json_object *ed = with(v1, "spec.extra2", "1"), *v1e;

		v1e = run_update(v1, ed, "ed", NULL, T0 + 1);
		json_object_put(ed);
		cfg = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{"
		    "\"name\":\"r1\",\"namespace\":\"default\"},\"spec\":{\"nodes\":3,"
		    "\"extra2\":2}}");
		a.live = v1e;
		a.config = cfg;
		apply_fail(&a, KC_ECONFLICT, &st, NULL);
		ck_assert_str_eq(st.message, "Apply failed with 1 conflict: conflict with "
		    "\"ed\" using " API ": .spec.extra2");
		/* Without the allowance both show, sorted by manager. */
		a.manager = "flux";
		apply_fail(&a, KC_ECONFLICT, &st, NULL);
		ck_assert_str_eq(st.message, "Apply failed with 2 conflicts: conflicts with "
		    "\"ed\" using " API ":\n- .spec.extra2\nconflicts with "
		    "\"kubectl-client-side-apply\" using " API ":\n- .spec.nodes");
		a.manager = "kubectl";
		a.live = v1;
		json_object_put(cfg);
		json_object_put(v1e);
	}

	/* The body's own annotation is not part of the new value. */
	cfg = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{\"name\":\"r1\","
	    "\"namespace\":\"default\",\"annotations\":{\"" LAST_APPLIED "\":\"x\",\"b\":\"c\"}},"
	    "\"spec\":{\"image\":\"j\"}}");
	a.config = cfg;
	a.force = true;
	v2 = apply_ok(&a);
	ck_assert_str_eq(kc_json_str(v2, "metadata", "annotations", LAST_APPLIED),
	    "{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{\"annotations\":{\"b\":"
	    "\"c\"},\"name\":\"r1\",\"namespace\":\"default\"},\"spec\":{\"image\":\"j\"}}\n");
	json_object_put(v2);
	json_object_put(cfg);
	json_object_put(v1);

	/* Annotations past 256 KiB: the annotation goes. */
	pad = kc_malloc(262000);
	ck_assert_ptr_nonnull(pad);
	memset(pad, 'p', 261999);
	pad[261999] = '\0';
	big = kc_json_copy(post);
	ck_assert_int_eq(kc_json_set_str(kc_json_get(big, "metadata", "annotations"), "pad",
	    pad), 0);
	kc_free(pad);
	v1 = run_update(NULL, big, "kubectl-client-side-apply", NULL, T0);
	json_object_put(big);
	cfg = load("fieldmanager/ssa-apply.json");
	a.live = v1;
	a.config = cfg;
	v2 = apply_ok(&a);
	ck_assert_ptr_null(kc_json_str(v2, "metadata", "annotations", LAST_APPLIED));
	ck_assert_ptr_nonnull(kc_json_str(v2, "metadata", "annotations", "pad"));
	json_object_put(v2);
	json_object_put(v1);
	json_object_put(cfg);

	/* An annotation of another version, or not JSON, allows nothing. */
	static const char *const useless[] = {
		"\"{\\\"apiVersion\\\":\\\"other/v1\\\",\\\"spec\\\":{\\\"nodes\\\":2}}\"",
		"\"not json\"", "\"[1]\"",
		"\"{\\\"apiVersion\\\":\\\"" API "\\\",\\\"spec\\\":{\\\"env\\\":[{}]}}\"",
	};
	for (size_t i = 0; i < KC_ARRAY_SIZE(useless); i++) {
		struct json_object *v = parse(useless[i]);

		big = kc_json_copy(post);
		ck_assert_int_eq(kc_json_set_str(kc_json_get(big, "metadata", "annotations"),
		    LAST_APPLIED, json_object_get_string(v)), 0);
		json_object_put(v);
		v1 = run_update(NULL, big, "kubectl-client-side-apply", NULL, T0);
		json_object_put(big);
		cfg = load("fieldmanager/ssa-apply.json");
		a.live = v1;
		a.config = cfg;
		a.force = false;
		apply_fail(&a, KC_ECONFLICT, &st, NULL);
		json_object_put(cfg);
		json_object_put(v1);
	}
	json_object_put(post);
}
END_TEST

START_TEST(test_cap_order)
{
	/* Entries older by time merge first, whatever their order in the list. */
	struct json_object *cur = parse("{\"apiVersion\":\"v1\",\"kind\":\"Thing\","
	    "\"metadata\":{\"name\":\"t\"},\"spec\":{}}"), *next, *out;
	char field[32], manager[32];

	for (int i = 0; i <= FM_UPDATE_MANAGERS_MAX + 1; i++) {
		struct fm_update u = {
			.old = cur, .api_version = i % 2 ? "v1" : "v2", .now = T0 + 100 - i,
			.manager = manager,
		};

		snprintf(field, sizeof(field), "spec.f%02d", i);
		snprintf(manager, sizeof(manager), "m%02d", i);
		next = with(cur, field, "1");
		u.obj = next;
		out = update_ok(&u);
		json_object_put(next);
		json_object_put(cur);
		cur = out;
	}
	/*
	 * The eleventh write (m10, v2) merged the oldest v2 entries, m10 and
	 * m08, into a v2 bucket; the twelfth (m11, v1) m11 and m09 into a v1
	 * bucket. Each bucket has the time of the newer entry it took.
	 */
	ck_assert_uint_eq(nentries(cur), FM_UPDATE_MANAGERS_MAX);
	for (int i = 8; i <= 11; i++) {
		snprintf(manager, sizeof(manager), "m%02d", i);
		ck_assert_ptr_null(entry(cur, manager, "Update"));
	}
	ck_assert_ptr_nonnull(entry(cur, "m07", "Update"));
	for (size_t i = 0, n = 0; i < nentries(cur); i++) {
		struct json_object *e = json_object_array_get_idx(entries(cur), i);

		if (strcmp(kc_json_str(e, "manager"), "ancient-changes") != 0)
			continue;
		if (strcmp(kc_json_str(e, "apiVersion"), "v1") == 0) {
			assert_dump(kc_json_get(e, "fieldsV1"), "{\"f:spec\":{\"f:f09\":{},"
			    "\"f:f11\":{}}}", "v1 bucket");
			ck_assert_str_eq(kc_json_str(e, "time"), "2026-01-15T10:01:31Z");
		} else {
			assert_dump(kc_json_get(e, "fieldsV1"), "{\"f:spec\":{\"f:f08\":{},"
			    "\"f:f10\":{}}}", "v2 bucket");
			ck_assert_str_eq(kc_json_str(e, "time"), "2026-01-15T10:01:32Z");
		}
		ck_assert_uint_le(++n, 2);
	}
	json_object_put(cur);
}
END_TEST

/*
 * The sets the field manager writes are raw values: they print as the set
 * (canonical order, no escaped slashes), survive copies, are read back by
 * the next write, and the input's members are shared, never changed.
 */
START_TEST(test_raw_sets)
{
	struct json_object *old, *obj, *out, *fv, *c, *out2, *tree;
	char *text, *before;

	old = run_apply(NULL, RUN_CONFIG, "kubectl", false, T0);
	fv = kc_json_get(entry(old, "kubectl", "Apply"), "fieldsV1");
	ck_assert(kc_json_is_raw(fv));
	obj = with(old, "metadata.labels", "{\"app\":\"x\",\"k8s.io/a\":\"b\"}");
	before = dump(obj);
	out = run_update(old, obj, "kubectl-edit", NULL, T0 + 5);
	text = dump(obj);
	ck_assert_str_eq(text, before);
	kc_free(text);
	kc_free(before);
	fv = kc_json_get(entry(out, "kubectl-edit", "Update"), "fieldsV1");
	ck_assert(kc_json_is_raw(fv));
	ck_assert_str_eq(json_object_get_string(fv),
	    "{\"f:metadata\":{\"f:labels\":{\"f:k8s.io/a\":{}}}}");
	/* A copy is raw too and prints the same. */
	c = kc_json_copy(out);
	ck_assert(kc_json_is_raw(kc_json_get(entry(c, "kubectl-edit", "Update"), "fieldsV1")));
	assert_same(c, out, "copy");
	/* The next write decodes the raw sets: the label moves to the new manager. */
	json_object_put(obj);
	obj = with(out, "metadata.labels", "{\"app\":\"y\",\"k8s.io/a\":\"b\"}");
	out2 = run_update(out, obj, "other", NULL, T0 + 9);
	assert_dump(kc_json_get(entry(out2, "other", "Update"), "fieldsV1"),
	    "{\"f:metadata\":{\"f:labels\":{\"f:app\":{}}}}", "moved");
	assert_dump(kc_json_get(entry(out2, "kubectl-edit", "Update"), "fieldsV1"),
	    "{\"f:metadata\":{\"f:labels\":{\"f:k8s.io/a\":{}}}}", "kept");
	/* A tree (from a client or from disk) becomes raw, printing the same. */
	tree = expand(out2);
	ck_assert(!kc_json_is_raw(kc_json_get(entry(tree, "other", "Update"), "fieldsV1")));
	ck_assert_int_eq(fieldmanager_compact(tree), 0);
	ck_assert(kc_json_is_raw(kc_json_get(entry(tree, "other", "Update"), "fieldsV1")));
	assert_same(tree, out2, "compacted");
	json_object_put(tree);
	/* Not a set: left for the next write to reject. */
	tree = parse("{\"metadata\":{\"managedFields\":[1,{\"fieldsV1\":\"x\"}]}}");
	ck_assert_int_eq(fieldmanager_compact(tree), 0);
	assert_dump(tree, "{\"metadata\":{\"managedFields\":[1,{\"fieldsV1\":\"x\"}]}}",
	    "not sets");
	json_object_put(tree);
	json_object_put(out2);
	json_object_put(c);
	json_object_put(out);
	json_object_put(obj);
	json_object_put(old);
}
END_TEST

/*
 * Sets are printed straight to text: keys that need escaping (quotes,
 * backslashes, control characters, a slash, UTF-8, one longer than the
 * printer's stack buffer) print as json-c prints the same tree.
 */
START_TEST(test_raw_escapes)
{
	struct json_object *out, *fv, *tree;
	char cfg[2048], longkey[301];
	const char *text, *want;

	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	(void)snprintf(cfg, sizeof(cfg), "{\"apiVersion\":\"" API "\",\"kind\":\"Run\","
	    "\"metadata\":{\"name\":\"r1\",\"labels\":{\"a/b\":\"1\",\"q\\\"u\\\\o\":\"2\","
	    "\"c\\u0001\\t\\n\\f\\b\\r\":\"3\",\"\\u00e9\\u4e2d\":\"4\",\"%s\":\"5\"}},"
	    "\"spec\":{\"image\":\"i\",\"nodes\":1,\"env\":[{\"name\":\"N\\\"1\",\"value\":\"x\"}]}}",
	    longkey);
	out = run_apply(NULL, cfg, "kubectl", false, T0);
	fv = kc_json_get(entry(out, "kubectl", "Apply"), "fieldsV1");
	ck_assert(kc_json_is_raw(fv));
	tree = expand(fv);
	text = json_object_get_string(fv);
	want = json_object_to_json_string_ext(tree,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	ck_assert_str_eq(text, want);
	ck_assert_ptr_nonnull(strstr(text, "\"f:q\\\"u\\\\o\":{}"));
	ck_assert_ptr_nonnull(strstr(text, "\"f:c\\u0001\\t\\n\\f\\b\\r\":{}"));
	ck_assert_ptr_nonnull(strstr(text, "\"f:a/b\":{}"));
	ck_assert_ptr_nonnull(strstr(text, "\"k:{\\\"name\\\":\\\"N\\\\\\\"1\\\"}\":{\".\":{}"));
	ck_assert_ptr_nonnull(strstr(text, longkey));
	json_object_put(tree);
	json_object_put(out);
}
END_TEST

/*
 * With a cache, a write over an object whose sets print like those of an
 * earlier one finds them decoded; the result is the same as without it.
 */
START_TEST(test_cache)
{
	struct json_object *old1, *old2, *obj1, *obj2, *a, *b;
	struct fm_cache *cache = NULL;
	uint64_t hits, misses;
	struct fm_update u = {
		.manager = "trainyard-controller", .api_version = API, .subresource = "status",
		.schema = &run_schema, .reset = fieldmanager_reset_status, .now = T0 + 5,
	};

	ck_assert_int_eq(fm_cache_new(&cache), 0);
	old1 = run_apply(NULL, RUN_CONFIG, "kubectl", false, T0);
	old2 = with(old1, "metadata.name", "\"r2\"");
	obj1 = with(old1, "status", "{\"phase\":\"Running\"}");
	obj2 = with(old2, "status", "{\"phase\":\"Running\"}");
	u.cache = cache;
	u.old = old1;
	u.obj = obj1;
	a = update_ok(&u);
	fm_cache_counts(cache, &hits, &misses);
	ck_assert_uint_eq(hits, 0);
	ck_assert_uint_eq(misses, 1);
	u.old = old2;
	u.obj = obj2;
	b = update_ok(&u);
	fm_cache_counts(cache, &hits, &misses);
	ck_assert_uint_eq(hits, 1);
	ck_assert_uint_eq(misses, 1);
	assert_same(kc_json_get(a, "metadata", "managedFields"),
	    kc_json_get(b, "metadata", "managedFields"), "cached");
	/* The same new set is encoded once: both objects share its text. */
	ck_assert_ptr_eq(kc_json_get(entry(a, "trainyard-controller", "Update"), "fieldsV1"),
	    kc_json_get(entry(b, "trainyard-controller", "Update"), "fieldsV1"));
	json_object_put(b);
	u.cache = NULL;
	b = update_ok(&u);
	assert_same(kc_json_get(a, "metadata", "managedFields"),
	    kc_json_get(b, "metadata", "managedFields"), "uncached");
	/* More distinct sets than slots: the oldest go, lookups still work. */
	for (int i = 0; i < FM_CACHE_ENTRIES + 8; i++) {
		char cfg[256];
		struct json_object *o;

		(void)snprintf(cfg, sizeof(cfg), "{\"apiVersion\":\"" API "\",\"kind\":\"Run\","
		    "\"metadata\":{\"name\":\"r1\",\"labels\":{\"l%d\":\"x\"}}}", i);
		o = run_apply(NULL, cfg, "kubectl", false, T0);
		json_object_put(a);
		u.cache = cache;
		u.old = o;
		u.obj = o;
		a = update_ok(&u);
		json_object_put(o);
	}
	fm_cache_counts(cache, &hits, &misses);
	ck_assert_uint_eq(misses, 1 + FM_CACHE_ENTRIES + 8);
	fm_cache_free(cache);
	fm_cache_free(NULL);
	json_object_put(a);
	json_object_put(b);
	json_object_put(obj1);
	json_object_put(obj2);
	json_object_put(old1);
	json_object_put(old2);
}
END_TEST

START_TEST(test_quoting)
{
	struct kc_status st = { 0 };

	ck_assert_int_eq(fieldmanager_validate_options("PatchOptions", true,
	    "a\tb\"\\\a\b\f\n\r\v\x7f\xc2\x85\xc3\xa9\xff", false, NULL, &st), KC_EINVALID);
	ck_assert_str_eq(st.causes[0].message, "Invalid value: "
	    "\"a\\tb\\\"\\\\\\a\\b\\f\\n\\r\\v\\x7f\\u0085\xc3\xa9\\xff\": invalid character "
	    "U+0009 (at position 1)");
	ck_assert_uint_eq(st.ncauses, 8);
}
END_TEST

/* ------------------------------------------------------------------------
 * Allocation failures: every entry point, under a growing budget
 */

static void
alloc_loop(int (*fn)(const void *), const void *arg)
{
	size_t budget;
	int r;

	for (budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = fn(arg);
		fail_alloc_after(SIZE_MAX);
		if (r != -ENOMEM)
			break;
		ck_assert_uint_lt(budget, 1000000);
	}
	ck_assert_uint_gt(budget, 0);
}

struct apply_case {
	const struct fm_apply	*a;
	int			 want;
};

static int
op_apply(const void *arg)
{
	const struct apply_case *c = arg;
	struct json_object *out = SENTINEL, *details = SENTINEL;
	struct kc_status st = { 0 };
	int r = fieldmanager_apply(c->a, &out, &details, &st);

	if (r == -ENOMEM) {
		ck_assert_ptr_eq(out, SENTINEL);
		ck_assert_ptr_eq(details, SENTINEL);
		return r;
	}
	ck_assert_msg(r == c->want, "%d: %s", r, st.message);
	if (out != SENTINEL)
		json_object_put(out);
	if (details != SENTINEL)
		json_object_put(details);
	return r;
}

static int
op_update(const void *arg)
{
	struct json_object *out = SENTINEL;
	struct kc_status st = { 0 };
	int r = fieldmanager_update(arg, &out, &st);

	if (r == -ENOMEM) {
		ck_assert_ptr_eq(out, SENTINEL);
		return r;
	}
	ck_assert_msg(r == 0, "%d: %s", r, st.message);
	json_object_put(out);
	return r;
}

static int
op_fieldset(const void *arg)
{
	struct json_object *out = SENTINEL;
	struct kc_status st = { 0 };
	int r = fieldmanager_fieldset(arg, &pod_schema, fieldmanager_reset_status, &out, &st);

	if (r == -ENOMEM) {
		ck_assert_ptr_eq(out, SENTINEL);
		return r;
	}
	ck_assert_int_eq(r, 0);
	json_object_put(out);
	return r;
}

static int
op_sets(const void *arg)
{
	struct json_object *const *ab = arg, *out = SENTINEL;
	struct kc_status st = { 0 };
	int r;

	if ((r = fieldmanager_fieldset_union(ab[0], ab[1], &out, &st)) == 0) {
		json_object_put(out);
		out = SENTINEL;
		r = fieldmanager_fieldset_difference(ab[0], ab[1], &out, &st);
	}
	if (r == 0) {
		json_object_put(out);
		out = SENTINEL;
		r = fieldmanager_fieldset_intersection(ab[0], ab[1], &out, &st);
	}
	if (r == 0) {
		json_object_put(out);
		r = fieldmanager_fieldset_empty(ab[0], &st);
		ck_assert_int_ne(r, 1);
		return r;
	}
	ck_assert_int_eq(r, -ENOMEM);
	ck_assert_ptr_eq(out, SENTINEL);
	return r;
}

static int
op_pe(const void *arg)
{
	struct json_object *v = SENTINEL;
	enum fm_pe_type type;
	struct kc_status st = { 0 };
	char *s = NULL;
	int r;

	(void)arg;
	if ((r = fieldmanager_pe_parse("k:{\"protocol\":\"TCP\",\"containerPort\":80}", &type,
	    &v, &st)) < 0) {
		ck_assert_ptr_eq(v, SENTINEL);
		return r;
	}
	r = fieldmanager_pe_format(type, v, &s, &st);
	json_object_put(v);
	if (r < 0) {
		ck_assert_ptr_null(s);
		return r;
	}
	ck_assert_str_eq(s, "k:{\"containerPort\":80,\"protocol\":\"TCP\"}");
	kc_free(s);
	return 0;
}

START_TEST(test_alloc_failures)
{
	struct json_object *post = load("fieldmanager/csa-create.json");
	struct json_object *ssa = load("fieldmanager/ssa-apply.json");
	struct json_object *pod = load("fieldmanager/pod.json");
	struct json_object *sets[2], *live, *csa, *cfg, *v1, *obj, *sample;
	struct fm_update u = {
		.obj = post, .manager = "kubectl-client-side-apply", .api_version = API,
		.schema = &run_schema, .now = T0,
	};
	struct fm_apply a = {
		.config = ssa, .manager = "kubectl", .api_version = API, .kind = "Run",
		.schema = &run_schema, .now = T0 + 1,
	};
	struct apply_case c = { &a, 0 };

	alloc_loop(op_fieldset, pod);
	sets[0] = parse("{\"f:b\":{\"k:{\\\"a\\\":1}\":{\".\":{},\"f:c\":{}}},\"f:a\":{},"
	    "\"v:[1]\":{}}");
	sets[1] = parse("{\"f:b\":{\".\":{},\"k:{\\\"a\\\":1}\":{\"f:c\":{}}},\"i:2\":{}}");
	alloc_loop(op_sets, sets);
	alloc_loop(op_pe, NULL);

	/* Update: a create, then a status write over existing entries. */
	alloc_loop(op_update, &u);
	csa = update_ok(&u);
	sample = load("fieldmanager/managedfields-example.json");
	live = load("fieldmanager/run-live.json");
	json_object_object_add(kc_json_obj_of(live, "metadata"), "managedFields",
	    kc_json_copy(entries(sample)));
	obj = with(live, "status.phase", "\"Done\"");
	u.old = live;
	u.obj = obj;
	u.manager = "trainyard-controller";
	u.subresource = "status";
	alloc_loop(op_update, &u);
	json_object_put(obj);

	/* Apply: the client-side apply upgrade (conflict, annotation, force). */
	a.live = csa;
	alloc_loop(op_apply, &c);
	/* A conflict reported. */
	a.manager = "flux";
	c.want = KC_ECONFLICT;
	alloc_loop(op_apply, &c);
	/* Create, then prune a list item and a field. */
	cfg = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{\"name\":"
	    "\"r1\"},\"spec\":{\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\"}],"
	    "\"tags\":[\"x\",\"y\"],\"image\":\"i\",\"nodes\":1}}");
	a.live = NULL;
	a.config = cfg;
	a.manager = "kubectl";
	c.want = 0;
	alloc_loop(op_apply, &c);
	v1 = apply_ok(&a);
	json_object_put(cfg);
	cfg = parse("{\"apiVersion\":\"" API "\",\"kind\":\"Run\",\"metadata\":{\"name\":"
	    "\"r1\"},\"spec\":{\"env\":[{\"name\":\"B\"}],\"tags\":[\"y\"]}}");
	a.live = v1;
	a.config = cfg;
	alloc_loop(op_apply, &c);
	/* A live object that never had managedFields. */
	a.live = post;
	a.config = ssa;
	a.force = true;
	alloc_loop(op_apply, &c);

	json_object_put(cfg);
	json_object_put(v1);
	json_object_put(live);
	json_object_put(sample);
	json_object_put(csa);
	json_object_put(sets[0]);
	json_object_put(sets[1]);
	json_object_put(pod);
	json_object_put(ssa);
	json_object_put(post);
}
END_TEST

/*
 * A converter between ex.io/v1 (spec.color) and ex.io/v2 (spec.colour),
 * as a conversion webhook would be: 'later' calls answer -EINPROGRESS
 * first; ex.io/v0 is not a version.
 */
struct fake_conv {
	int	later;
	int	calls;
	bool	fail;
	int	fail_at;	/* the call that fails, counting from 1; 0: none */
};

static int
fake_convert(void *arg, const struct json_object *obj, const char *to, struct json_object **ret,
    struct fm_schema *ret_schema, struct kc_status *st)
{
	struct fake_conv *fc = arg;
	struct json_object *o, *spec, *v;
	bool to2 = strcmp(to, "ex.io/v2") == 0;

	fc->calls++;
	if (strcmp(to, "ex.io/v1") != 0 && !to2)
		return kc_status_set(st, KC_EINTERNAL, "request to convert CR to an invalid "
		    "group/version: %s", to);
	if (fc->fail || fc->calls == fc->fail_at)
		return kc_status_set(st, KC_EINTERNAL, "conversion webhook for ex.io/v2, "
		    "Kind=Hook failed: down");
	if (fc->later > 0) {
		fc->later--;
		return -EINPROGRESS;
	}
	ck_assert_ptr_nonnull(o = kc_json_copy(obj));
	ck_assert_int_eq(kc_json_set_str(o, "apiVersion", to), 0);
	if ((spec = kc_json_obj_of(o, "spec")) != NULL &&
	    (v = kc_json_get(spec, to2 ? "color" : "colour")) != NULL) {
		json_object_get(v);
		json_object_object_del(spec, to2 ? "color" : "colour");
		ck_assert_int_eq(kc_json_put(spec, to2 ? "colour" : "color", v), 0);
	}
	ret_schema->lookup = NULL;
	ret_schema->arg = NULL;
	*ret = o;
	return 0;
}

static struct json_object *
conv_apply(struct fake_conv *fc, const struct json_object *live, const char *cfg,
    const char *manager, bool force, int want, struct kc_status *st)
{
	struct json_object *config = parse(cfg), *out = SENTINEL, *details = NULL;
	const char *av = kc_json_str(config, "apiVersion");
	int r;

	for (;;) {
		r = fieldmanager_apply(&(struct fm_apply){ .live = live, .config = config,
		    .manager = manager, .force = force, .api_version = av, .kind = "Hook",
		    .now = 1000, .convert = fake_convert, .convert_arg = fc },
		    &out, &details, st);
		if (r != -EINPROGRESS)
			break;
		ck_assert_ptr_eq(out, SENTINEL);
	}
	json_object_put(config);
	if (details != NULL)
		json_object_put(details);
	ck_assert_msg(r == want, "apply: %d, want %d: %s", r, want, st->message);
	return r == 0 ? out : NULL;
}

/* The live object at 'av' (a stored one is read at the request's version). */
static struct json_object *
at_version(struct fake_conv *fc, const struct json_object *obj, const char *av)
{
	struct json_object *out = NULL;
	struct fm_schema sc;
	struct kc_status st = { 0 };
	int later = fc->later;

	fc->later = 0;
	ck_assert_int_eq(fake_convert(fc, obj, av, &out, &sc, &st), 0);
	fc->later = later;
	return out;
}

START_TEST(test_apply_across_versions)
{
	struct fake_conv fc = { .later = 2 };
	struct kc_status st = { 0 };
	struct json_object *o1, *o2, *v2, *o3;

	o1 = conv_apply(&fc, NULL, "{\"apiVersion\":\"ex.io/v1\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"s\"},\"spec\":{\"color\":\"navy\"}}", "alice", false, 0, &st);
	/* bob at v2 changes what alice holds at v1: the conflict names her path. */
	v2 = at_version(&fc, o1, "ex.io/v2");
	fc.later = 2;
	ck_assert_ptr_null(conv_apply(&fc, v2, "{\"apiVersion\":\"ex.io/v2\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"s\"},\"spec\":{\"colour\":\"pink\"}}", "bob", false,
	    KC_ECONFLICT, &st));
	ck_assert_str_eq(st.message, "Apply failed with 1 conflict: conflict with \"alice\": "
	    ".spec.color");
	ck_assert_int_ge(fc.calls, 4);
	/* The same value is no conflict; force takes the field over. */
	o2 = conv_apply(&fc, v2, "{\"apiVersion\":\"ex.io/v2\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"s\"},\"spec\":{\"colour\":\"navy\",\"size\":\"L\"}}",
	    "bob", false, 0, &st);
	json_object_put(o2);
	o2 = conv_apply(&fc, v2, "{\"apiVersion\":\"ex.io/v2\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"s\"},\"spec\":{\"colour\":\"pink\"}}", "bob", true, 0,
	    &st);
	ck_assert_ptr_null(entry(o2, "alice", "Apply"));
	assert_fields(o2, "bob", "Apply", "{\"f:spec\":{\"f:colour\":{}}}");
	/* Back at v1: alice conflicts with bob's v2 field. */
	o3 = at_version(&fc, o2, "ex.io/v1");
	ck_assert_ptr_null(conv_apply(&fc, o3, "{\"apiVersion\":\"ex.io/v1\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"s\"},\"spec\":{\"color\":\"navy\"}}", "alice", false,
	    KC_ECONFLICT, &st));
	ck_assert_str_eq(st.message, "Apply failed with 1 conflict: conflict with \"bob\": "
	    ".spec.colour");
	/* A failing conversion fails the apply with its message, as is. */
	fc.fail = true;
	ck_assert_ptr_null(conv_apply(&fc, o3, "{\"apiVersion\":\"ex.io/v1\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"s\"},\"spec\":{\"color\":\"navy\"}}", "alice", true,
	    KC_EINTERNAL, &st));
	ck_assert_str_eq(st.message, "conversion webhook for ex.io/v2, Kind=Hook failed: down");
	fc.fail = false;
	json_object_put(o3);
	json_object_put(o2);
	json_object_put(v2);
	json_object_put(o1);
}
END_TEST

START_TEST(test_apply_prune_across_versions)
{
	struct fake_conv fc = { .later = 1 };
	struct kc_status st = { 0 };
	struct json_object *o1, *v2, *o2, *o3, *o4;

	o1 = conv_apply(&fc, NULL, "{\"apiVersion\":\"ex.io/v1\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"s\"},\"spec\":{\"color\":\"navy\"}}", "alice", false, 0, &st);
	/* alice again, at v2, without the colour: pruned at v1, where she set it. */
	v2 = at_version(&fc, o1, "ex.io/v2");
	fc.later = 3;
	o2 = conv_apply(&fc, v2, "{\"apiVersion\":\"ex.io/v2\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"s\"},\"spec\":{\"size\":\"L\"}}", "alice", false, 0, &st);
	ck_assert_str_eq(kc_json_str(o2, "apiVersion"), "ex.io/v2");
	ck_assert_ptr_null(kc_json_get(o2, "spec", "colour"));
	ck_assert_str_eq(kc_json_str(o2, "spec", "size"), "L");
	assert_fields(o2, "alice", "Apply", "{\"f:spec\":{\"f:size\":{}}}");
	/* What another entry owns stays: bob's v2 colour survives alice's v1 apply. */
	o3 = conv_apply(&fc, o2, "{\"apiVersion\":\"ex.io/v2\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"s\"},\"spec\":{\"colour\":\"red\"}}", "bob", false, 0, &st);
	json_object_put(v2);
	v2 = at_version(&fc, o3, "ex.io/v1");
	json_object_put(o1);
	o1 = conv_apply(&fc, v2, "{\"apiVersion\":\"ex.io/v1\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"s\"}}", "alice", false, 0, &st);
	ck_assert_str_eq(kc_json_str(o1, "spec", "color"), "red");
	ck_assert_ptr_null(entry(o1, "alice", "Apply"));
	/* alice's v2 entry needs the webhook for her apply at v1: its failure fails it. */
	o4 = at_version(&fc, o2, "ex.io/v1");
	fc.fail = true;
	ck_assert_ptr_null(conv_apply(&fc, o4, "{\"apiVersion\":\"ex.io/v1\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"s\"},\"spec\":{\"color\":\"red\"}}", "alice", false,
	    KC_EINTERNAL, &st));
	ck_assert_str_eq(st.message, "conversion webhook for ex.io/v2, Kind=Hook failed: down");
	fc.fail = false;
	/* The live object converts; the merged one, for pruning at v2, does not. */
	fc.fail_at = fc.calls + 2;
	ck_assert_ptr_null(conv_apply(&fc, o4, "{\"apiVersion\":\"ex.io/v1\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"s\"},\"spec\":{\"color\":\"red\"}}", "alice", false,
	    KC_EINTERNAL, &st));
	ck_assert_str_eq(st.message, "failed to prune fields: failed to convert merged object "
	    "to last applied version: conversion webhook for ex.io/v2, Kind=Hook failed: down");
	fc.fail_at = 0;
	json_object_put(o4);
	json_object_put(o1);
	json_object_put(o2);
	json_object_put(o3);
	json_object_put(v2);
}
END_TEST

/* A patch at v2 by kubectl-patch through the fake converter. */
static int
conv_update(struct fake_conv *fc, const struct json_object *old,
    const struct json_object *obj, struct json_object **ret, struct kc_status *st)
{
	return fieldmanager_update(&(struct fm_update){ .convert = fake_convert,
	    .convert_arg = fc, .old = old, .obj = obj, .manager = "kubectl-patch",
	    .api_version = "ex.io/v2", .now = 2000 }, ret, st);
}

START_TEST(test_update_across_versions)
{
	struct fake_conv fc = { 0 };
	struct kc_status st = { 0 };
	struct json_object *o1, *v2, *next, *out = NULL;
	int r;

	o1 = conv_apply(&fc, NULL, "{\"apiVersion\":\"ex.io/v1\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"s\"},\"spec\":{\"color\":\"navy\"}}", "alice", false, 0, &st);
	/* A patch at v2 changes the colour: alice's v1 entry loses it there. */
	v2 = at_version(&fc, o1, "ex.io/v2");
	next = kc_json_copy(v2);
	ck_assert_int_eq(kc_json_set_str(kc_json_obj_of(next, "spec"), "colour", "teal"), 0);
	fc.later = 2;
	while ((r = conv_update(&fc, v2, next, &out, &st)) == -EINPROGRESS)
		continue;
	ck_assert_msg(r == 0, "update: %d %s", r, st.message);
	ck_assert_ptr_null(entry(out, "alice", "Apply"));
	assert_fields(out, "kubectl-patch", "Update", "{\"f:spec\":{\"f:colour\":{}}}");
	json_object_put(out);
	out = NULL;
	/* A failing conversion: the caller gets it (and drops managedFields). */
	fc.fail = true;
	ck_assert_int_eq(conv_update(&fc, v2, next, &out, &st), KC_EINTERNAL);
	ck_assert_ptr_null(out);
	json_object_put(next);
	json_object_put(v2);
	json_object_put(o1);
}
END_TEST

START_TEST(test_apply_removed_version)
{
	struct fake_conv fc = { 0 };
	struct kc_status st = { 0 };
	struct json_object *live = parse("{\"apiVersion\":\"ex.io/v1\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"s\",\"managedFields\":[{\"manager\":\"old\","
	    "\"operation\":\"Update\",\"apiVersion\":\"ex.io/v0\",\"fieldsType\":\"FieldsV1\","
	    "\"fieldsV1\":{\"f:spec\":{\"f:color\":{}}}}]},\"spec\":{\"color\":\"navy\"}}");

	/* An entry of a version no longer in spec.versions breaks apply, as upstream. */
	ck_assert_ptr_null(conv_apply(&fc, live, "{\"apiVersion\":\"ex.io/v1\",\"kind\":\"Hook\","
	    "\"metadata\":{\"name\":\"s\"},\"spec\":{\"color\":\"red\"}}", "alice", true,
	    KC_EINTERNAL, &st));
	ck_assert_str_eq(st.message, "request to convert CR to an invalid group/version: "
	    "ex.io/v0");
	json_object_put(live);
}
END_TEST

Suite *
dc_fieldmanager_suite(void)
{
	Suite *s = suite_create("dc_fieldmanager");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_pe_parse);
	tcase_add_test(tc, test_pe_parse_errors);
	tcase_add_test(tc, test_pe_format);
	tcase_add_test(tc, test_fieldset_maps);
	tcase_add_test(tc, test_fieldset_lists);
	tcase_add_test(tc, test_fieldset_list_errors);
	tcase_add_test(tc, test_fieldset_pod);
	tcase_add_test(tc, test_fieldset_ops);
	tcase_add_test(tc, test_fieldset_ops_errors);
	tcase_add_test(tc, test_apply_create);
	tcase_add_test(tc, test_apply_create_empty_object);
	tcase_add_test(tc, test_apply_update_merge);
	tcase_add_test(tc, test_apply_shared);
	tcase_add_test(tc, test_apply_conflict);
	tcase_add_test(tc, test_apply_conflicts_many);
	tcase_add_test(tc, test_apply_remove_omitted);
	tcase_add_test(tc, test_apply_list_map);
	tcase_add_test(tc, test_apply_set_and_atomic);
	tcase_add_test(tc, test_apply_status_reset);
	tcase_add_test(tc, test_apply_before_first_apply);
	tcase_add_test(tc, test_apply_subresource);
	tcase_add_test(tc, test_update_tracking);
	tcase_add_test(tc, test_update_client_managed_fields);
	tcase_add_test(tc, test_sample_roundtrip);
	tcase_add_test(tc, test_csa_migration);
	tcase_add_test(tc, test_validation_apply);
	tcase_add_test(tc, test_validation_options);
	tcase_add_test(tc, test_cap_managers);
	tcase_add_test(tc, test_manager_name);
	tcase_add_test(tc, test_fieldset_edges);
	tcase_add_test(tc, test_apply_edges);
	tcase_add_test(tc, test_last_applied_edges);
	tcase_add_test(tc, test_cap_order);
	tcase_add_test(tc, test_quoting);
	tcase_add_test(tc, test_raw_sets);
	tcase_add_test(tc, test_raw_escapes);
	tcase_add_test(tc, test_cache);
	tcase_add_test(tc, test_alloc_failures);
	tcase_add_test(tc, test_apply_across_versions);
	tcase_add_test(tc, test_apply_removed_version);
	tcase_add_test(tc, test_apply_prune_across_versions);
	tcase_add_test(tc, test_update_across_versions);
	suite_add_tcase(s, tc);
	return s;
}

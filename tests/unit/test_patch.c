/*
 * test_patch.c: JSON merge patch, JSON patch, JSON Pointer and strategic
 * merge patch.
 *
 * Most cases are data: tests/fixtures/patch/rfc7386.json (RFC 7386
 * appendix A and section 3), rfc6902.json (RFC 6902 appendix A and the
 * error paths), rfc6901.json (RFC 6901 section 5), mergepairs.json (merge
 * patch creation) and smp.json (the patches kubectl sends, and cases
 * ported from k8s.io/apimachinery's strategicpatch tests). Every case
 * also checks that the inputs are unchanged and that the result shares
 * no node with them.
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

#include "testutil.h"

/* A pointer no function may write: out-parameters must stay this on failure. */
static int sentinel_storage;
#define SENTINEL	((struct json_object *)(void *)&sentinel_storage)

static struct json_object *
parse(const char *text)
{
	struct kc_status st = { 0 };
	struct json_object *o = NULL;

	if (strcmp(text, "null") == 0)
		return NULL;
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

static struct json_object *
copy(const struct json_object *o)
{
	struct json_object *c = kc_json_copy(o);

	ck_assert(o == NULL || c != NULL);
	return c;
}

static void
assert_json_eq(const struct json_object *got, const struct json_object *want,
    const char *what)
{
	char *g, *w;

	if (kc_json_equal(got, want))
		return;
	g = kc_json_dump(got, NULL);
	w = kc_json_dump(want, NULL);
	ck_abort_msg("%s:\n  got  %s\n  want %s", what, g, w);
}

/*
 * Writes into every container of 'o': if the result shared a node with
 * an input, the input would change and the caller's comparison fails.
 */
static void
poison(struct json_object *o)
{
	size_t n;

	if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, k, v) {
			(void)k;
			poison(v);
		}
		ck_assert_int_eq(kc_json_set_str(o, "__poison", "x"), 0);
	} else if (json_object_is_type(o, json_type_array)) {
		n = json_object_array_length(o);
		for (size_t i = 0; i < n; i++)
			poison(json_object_array_get_idx(o, i));
		ck_assert_int_eq(kc_json_append(o, json_object_new_int(7)), 0);
	}
}

/* ------------------------------------------------------------------------
 * Fixture-driven cases
 */

enum kind { K_MERGE, K_JSON, K_SMP };

static bool
test_lookup(const void *arg, const char *path, struct kc_smp_field *ret)
{
	static const struct kc_smp_field fields[] = {
		{ "mergingList", KC_SMP_MERGE, "name" },
		{ "retainKeysMergingList", KC_SMP_MERGE | KC_SMP_RETAIN_KEYS, "name" },
		{ "mergeItemPtr", KC_SMP_MERGE, "name" },
		{ "mergingIntList", KC_SMP_MERGE, NULL },
		{ "keylessList", KC_SMP_MERGE, NULL },
		{ "replacingItem", KC_SMP_REPLACE, NULL },
		{ "retainKeysMap", KC_SMP_RETAIN_KEYS, NULL },
	};
	const char *last = strrchr(path, '.');

	ck_assert_ptr_null(arg);
	last = last != NULL ? last + 1 : path;
	for (size_t i = 0; i < KC_ARRAY_SIZE(fields); i++) {
		if (strcmp(fields[i].path, last) == 0) {
			*ret = fields[i];
			return true;
		}
	}
	return false;
}

/* The MergeItem type of upstream's tests, by its last path segment. */
static const struct kc_smp_schema test_schema = {
	.name = "MergeItem",
	.lookup = test_lookup,
};

static const struct kc_smp_schema *
schema_named(const char *name)
{
	if (name == NULL || strcmp(name, "none") == 0)
		return NULL;
	if (strcmp(name, "test") == 0)
		return &test_schema;
	if (strcmp(name, "pod") == 0)
		return &kc_smp_schema_pod;
	if (strcmp(name, "node") == 0)
		return &kc_smp_schema_node;
	if (strcmp(name, "service") == 0)
		return &kc_smp_schema_service;
	ck_abort_msg("unknown schema %s", name);
	return NULL;
}

static int
run(enum kind k, const struct json_object *doc, const struct json_object *patch,
    const struct kc_smp_schema *schema, struct json_object **ret, struct kc_status *st)
{
	switch (k) {
	case K_MERGE:
		return kc_merge_patch_apply(doc, patch, ret, st);
	case K_JSON:
		return kc_json_patch_apply(doc, patch, ret, st);
	case K_SMP:
		return kc_smp_apply(doc, patch, schema, ret, st);
	}
	return -EINVAL;
}

/*
 * One case: {"name", "doc", "patch", and "expected", or "expected_changes"
 * (a merge patch onto 'doc'), or "error" (a code name) and "message" (a
 * substring)}. 'docs' resolves a string "doc" by name.
 */
static void
check_case(enum kind k, const struct json_object *c, const struct json_object *docs)
{
	struct json_object *doc, *patch, *want = NULL, *v, *doc0, *patch0;
	struct json_object *ret = SENTINEL, *owned_want = NULL;
	const struct kc_smp_schema *schema;
	struct kc_status st = { 0 };
	const char *name, *err;
	int r;

	name = kc_json_str(c, "name");
	ck_assert_ptr_nonnull(name);
	ck_assert_msg(json_object_object_get_ex(c, "doc", &doc), "%s: no doc", name);
	ck_assert_msg(json_object_object_get_ex(c, "patch", &patch), "%s: no patch", name);
	if (json_object_is_type(doc, json_type_string))
		doc = kc_json_get(docs, json_object_get_string(doc));
	schema = schema_named(kc_json_str(c, "schema"));
	doc0 = copy(doc);
	patch0 = copy(patch);

	r = run(k, doc, patch, schema, &ret, &st);

	if ((err = kc_json_str(c, "error")) != NULL) {
		ck_assert_msg(r < 0 && strcmp(kc_err_name(r), err) == 0,
		    "%s: want %s, got %d (%s): %s", name, err, r, kc_err_name(r), st.message);
		ck_assert_msg(ret == SENTINEL, "%s: out-parameter written on failure", name);
		ck_assert_msg(strstr(st.message, kc_json_str(c, "message")) != NULL,
		    "%s: message \"%s\" lacks \"%s\"", name, st.message,
		    kc_json_str(c, "message"));
	} else {
		ck_assert_msg(r == 0, "%s: %d (%s): %s", name, r, kc_err_name(r), st.message);
		if (json_object_object_get_ex(c, "expected", &v)) {
			want = v;
		} else {
			ck_assert_msg(json_object_object_get_ex(c, "expected_changes", &v),
			    "%s: no expectation", name);
			ck_assert_int_eq(kc_merge_patch_apply(doc, v, &owned_want, NULL), 0);
			want = owned_want;
		}
		assert_json_eq(ret, want, name);
		poison(ret);
		json_object_put(ret);
	}
	assert_json_eq(doc, doc0, "the document changed");
	assert_json_eq(patch, patch0, "the patch changed");
	json_object_put(owned_want);
	json_object_put(doc0);
	json_object_put(patch0);
}

static void
run_fixture(enum kind k, const char *file)
{
	struct json_object *f = load(file), *cases, *docs = NULL;
	size_t n;

	if (json_object_is_type(f, json_type_array)) {
		cases = f;
	} else {
		cases = kc_json_arr_of(f, "cases");
		docs = kc_json_obj_of(f, "docs");
	}
	ck_assert_ptr_nonnull(cases);
	n = json_object_array_length(cases);
	ck_assert_uint_gt(n, 10);
	for (size_t i = 0; i < n; i++)
		check_case(k, json_object_array_get_idx(cases, i), docs);
	json_object_put(f);
}

START_TEST(test_rfc7386)
{
	run_fixture(K_MERGE, "patch/rfc7386.json");
}
END_TEST

START_TEST(test_rfc6902)
{
	run_fixture(K_JSON, "patch/rfc6902.json");
}
END_TEST

START_TEST(test_smp_fixture)
{
	run_fixture(K_SMP, "patch/smp.json");
}
END_TEST

/* ------------------------------------------------------------------------
 * JSON Pointer
 */

START_TEST(test_rfc6901)
{
	struct json_object *f = load("patch/rfc6901.json"), *doc, *list, *pair;
	struct json_object *v, *foo;
	struct kc_status st = { 0 };
	size_t n;

	doc = kc_json_obj_of(f, "doc");
	list = kc_json_arr_of(f, "found");
	n = json_object_array_length(list);
	ck_assert_uint_eq(n, 12);
	for (size_t i = 0; i < n; i++) {
		const char *ptr;

		pair = json_object_array_get_idx(list, i);
		ptr = json_object_get_string(json_object_array_get_idx(pair, 0));
		v = SENTINEL;
		ck_assert_msg(kc_json_pointer_get(doc, ptr, &v, &st) == 0, "%s: %s", ptr,
		    st.message);
		assert_json_eq(v, json_object_array_get_idx(pair, 1), ptr);
	}
	/* The result is borrowed from the document. */
	ck_assert_int_eq(kc_json_pointer_get(doc, "/foo", &v, NULL), 0);
	ck_assert(json_object_object_get_ex(doc, "foo", &foo));
	ck_assert_ptr_eq(v, foo);
	ck_assert_int_eq(kc_json_pointer_get(doc, "", &v, NULL), 0);
	ck_assert_ptr_eq(v, doc);

	list = kc_json_arr_of(f, "notfound");
	n = json_object_array_length(list);
	for (size_t i = 0; i < n; i++) {
		const char *ptr = json_object_get_string(json_object_array_get_idx(list, i));

		v = SENTINEL;
		ck_assert_msg(kc_json_pointer_get(doc, ptr, &v, &st) == KC_ENOTFOUND, "%s", ptr);
		ck_assert_ptr_eq(v, SENTINEL);
		ck_assert_msg(strstr(st.message, ptr) != NULL, "%s", st.message);
	}
	list = kc_json_arr_of(f, "malformed");
	n = json_object_array_length(list);
	for (size_t i = 0; i < n; i++) {
		const char *ptr = json_object_get_string(json_object_array_get_idx(list, i));

		v = SENTINEL;
		ck_assert_msg(kc_json_pointer_get(doc, ptr, &v, &st) == KC_EPARSE, "%s", ptr);
		ck_assert_ptr_eq(v, SENTINEL);
	}
	ck_assert_int_eq(kc_json_pointer_get(doc, "/m~2n", &v, &st), KC_EPARSE);
	ck_assert_str_eq(st.message, "pointer /m~2n: \"~\" must be followed by \"0\" or \"1\"");
	ck_assert_int_eq(kc_json_pointer_get(doc, "/foo/7", &v, &st), KC_ENOTFOUND);
	ck_assert_str_eq(st.message, "pointer /foo/7: index 7 is out of range (length 2)");

	/* A null value is found, and is NULL. */
	ck_assert_int_eq(kc_json_pointer_get(NULL, "", &v, NULL), 0);
	ck_assert_ptr_null(v);
	ck_assert_int_eq(kc_json_pointer_get(NULL, "/a", &v, NULL), KC_ENOTFOUND);
	json_object_put(f);
}
END_TEST

/* ------------------------------------------------------------------------
 * Merge patch creation
 */

/* True when some object member in 'o' is null. */
static bool
has_null_member(const struct json_object *o)
{
	size_t n;

	if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, k, v) {
			(void)k;
			if (v == NULL || has_null_member(v))
				return true;
		}
	} else if (json_object_is_type(o, json_type_array)) {
		n = json_object_array_length(o);
		for (size_t i = 0; i < n; i++)
			if (has_null_member(json_object_array_get_idx(o, i)))
				return true;
	}
	return false;
}

/* create(orig, mod), applied to orig, must give 'want'; nothing may change 'mod'. */
static void
round_trip(const struct json_object *orig, const struct json_object *mod,
    const struct json_object *want, const char *what)
{
	struct json_object *p = SENTINEL, *res = SENTINEL, *orig0 = copy(orig), *mod0 = copy(mod);
	struct kc_status st = { 0 };

	ck_assert_msg(kc_merge_patch_create(orig, mod, &p, &st) == 0, "%s: %s", what, st.message);
	ck_assert_msg(kc_merge_patch_apply(orig, p, &res, &st) == 0, "%s: %s", what, st.message);
	assert_json_eq(res, want, what);
	assert_json_eq(orig, orig0, "create changed the original");
	assert_json_eq(mod, mod0, "create changed the modified");
	poison(p);
	assert_json_eq(mod, mod0, "the patch shares a node with the modified");
	json_object_put(p);
	json_object_put(res);
	json_object_put(orig0);
	json_object_put(mod0);
}

START_TEST(test_merge_create)
{
	struct json_object *f = load("patch/mergepairs.json"), *c, *orig, *mod, *want, *p;
	struct kc_status st = { 0 };
	size_t n = json_object_array_length(f);

	ck_assert_uint_gt(n, 10);
	for (size_t i = 0; i < n; i++) {
		const char *name;

		c = json_object_array_get_idx(f, i);
		name = kc_json_str(c, "name");
		ck_assert(json_object_object_get_ex(c, "orig", &orig));
		ck_assert(json_object_object_get_ex(c, "mod", &mod));
		ck_assert(json_object_object_get_ex(c, "patch", &want));
		p = SENTINEL;
		ck_assert_msg(kc_merge_patch_create(orig, mod, &p, &st) == 0, "%s", st.message);
		assert_json_eq(p, want, name);
		json_object_put(p);
		if (!json_object_object_get_ex(c, "result", &want))
			want = mod;
		round_trip(orig, mod, want, name);
	}
	json_object_put(f);
}
END_TEST

/*
 * The round-trip property over every pair drawn from the documents of the
 * fixtures: create(a, b) applied to a gives b.
 */
START_TEST(test_merge_create_property)
{
	static const char *const files[] = {
		"patch/rfc7386.json", "patch/mergepairs.json", "patch/smp.json",
	};
	static const char *const members[] = { "doc", "expected", "orig", "mod" };
	struct json_object *fx[KC_ARRAY_SIZE(files)], *values[256], *list, *v;
	size_t nv = 0, n, pairs = 0;
	char what[64];

	for (size_t f = 0; f < KC_ARRAY_SIZE(files); f++) {
		fx[f] = load(files[f]);
		list = json_object_is_type(fx[f], json_type_array) ? fx[f] :
		    kc_json_arr_of(fx[f], "cases");
		n = json_object_array_length(list);
		for (size_t i = 0; i < n; i++) {
			struct json_object *c = json_object_array_get_idx(list, i);

			for (size_t m = 0; m < KC_ARRAY_SIZE(members); m++)
				if (json_object_object_get_ex(c, members[m], &v) &&
				    !json_object_is_type(v, json_type_string) &&
				    nv < KC_ARRAY_SIZE(values))
					values[nv++] = v;
		}
	}
	{
		json_object_object_foreach(kc_json_obj_of(fx[2], "docs"), k, d) {
			(void)k;
			if (nv < KC_ARRAY_SIZE(values))
				values[nv++] = d;
		}
	}
	ck_assert_uint_gt(nv, 100);
	for (size_t a = 0; a < nv; a++) {
		for (size_t b = 0; b < nv; b++) {
			if (has_null_member(values[b]))
				continue;
			snprintf(what, sizeof(what), "pair %zu -> %zu", a, b);
			round_trip(values[a], values[b], values[b], what);
			pairs++;
		}
	}
	ck_assert_uint_gt(pairs, 5000);
	for (size_t f = 0; f < KC_ARRAY_SIZE(files); f++)
		json_object_put(fx[f]);
}
END_TEST

/* ------------------------------------------------------------------------
 * Strategic merge patch: schemas
 */

START_TEST(test_smp_schemas)
{
	struct kc_smp_field f;

	ck_assert_ptr_eq(kc_smp_schema_for("", "Pod"), &kc_smp_schema_pod);
	ck_assert_ptr_eq(kc_smp_schema_for("", "Service"), &kc_smp_schema_service);
	ck_assert_ptr_eq(kc_smp_schema_for("", "Node"), &kc_smp_schema_node);
	ck_assert_ptr_eq(kc_smp_schema_for("", "Namespace"), &kc_smp_schema_namespace);
	ck_assert_ptr_eq(kc_smp_schema_for("", "ConfigMap"), &kc_smp_schema_object);
	ck_assert_ptr_eq(kc_smp_schema_for("", "ServiceAccount"), &kc_smp_schema_serviceaccount);
	ck_assert_ptr_eq(kc_smp_schema_for("coordination.k8s.io", "Lease"), &kc_smp_schema_object);
	ck_assert_ptr_eq(kc_smp_schema_for("admissionregistration.k8s.io",
	    "ValidatingWebhookConfiguration"), &kc_smp_schema_webhookconfiguration);
	/* Custom resources have no strategic merge patch. */
	ck_assert_ptr_null(kc_smp_schema_for("trainyard.dev", "Run"));
	ck_assert_ptr_null(kc_smp_schema_for("batch", "Job"));
	ck_assert_ptr_eq(kc_smp_schema_for("apps", "Deployment"), &kc_smp_schema_workload);
	ck_assert_ptr_eq(kc_smp_schema_for("apps", "ReplicaSet"), &kc_smp_schema_workload);
	ck_assert_ptr_null(kc_smp_schema_for("", "Run"));
	ck_assert_ptr_null(kc_smp_schema_for(NULL, "Pod"));
	ck_assert_ptr_null(kc_smp_schema_for("", NULL));

	ck_assert(kc_smp_lookup(&kc_smp_schema_pod, "spec.containers", &f));
	ck_assert_str_eq(f.merge_key, "name");
	ck_assert_uint_eq(f.strategy, KC_SMP_MERGE);
	ck_assert(kc_smp_lookup(&kc_smp_schema_pod, "spec.initContainers.volumeMounts", &f));
	ck_assert_str_eq(f.merge_key, "mountPath");
	ck_assert(kc_smp_lookup(&kc_smp_schema_pod, "spec.containers.ports", &f));
	ck_assert_str_eq(f.merge_key, "containerPort");
	ck_assert(kc_smp_lookup(&kc_smp_schema_pod, "spec.volumes", &f));
	ck_assert_uint_eq(f.strategy, KC_SMP_MERGE | KC_SMP_RETAIN_KEYS);
	ck_assert(kc_smp_lookup(&kc_smp_schema_pod, "metadata.ownerReferences", &f));
	ck_assert_str_eq(f.merge_key, "uid");
	ck_assert(kc_smp_lookup(&kc_smp_schema_object, "metadata.finalizers", &f));
	ck_assert_ptr_null(f.merge_key);
	ck_assert(kc_smp_lookup(&kc_smp_schema_service, "status.conditions", &f));
	ck_assert_str_eq(f.merge_key, "type");
	ck_assert(kc_smp_lookup(&kc_smp_schema_node, "spec.podCIDRs", &f));
	ck_assert(!kc_smp_lookup(&kc_smp_schema_pod, "spec.tolerations", &f));
	ck_assert_uint_eq(f.strategy, 0);
	ck_assert_ptr_null(f.path);
	ck_assert(!kc_smp_lookup(&kc_smp_schema_pod, "spec.containers.env.name", &f));
	ck_assert(!kc_smp_lookup(NULL, "spec.containers", &f));
}
END_TEST

static bool
extra_lookup(const void *arg, const char *path, struct kc_smp_field *ret)
{
	if (strcmp(path, "spec.workers") != 0)
		return false;
	*ret = (struct kc_smp_field){ path, KC_SMP_MERGE, arg };
	return true;
}

/* A table with a callback behind it: the table wins, the callback fills in. */
START_TEST(test_smp_callback)
{
	static const struct kc_smp_field fields[] = {
		{ "spec.items", KC_SMP_MERGE, "id" },
	};
	const struct kc_smp_schema schema = {
		.name = "Custom",
		.fields = fields,
		.nfields = KC_ARRAY_SIZE(fields),
		.lookup = extra_lookup,
		.arg = "rank",
	};
	struct json_object *doc, *patch, *ret = SENTINEL, *want;
	struct kc_status st = { 0 };
	struct kc_smp_field f;

	ck_assert(kc_smp_lookup(&schema, "spec.items", &f));
	ck_assert_str_eq(f.merge_key, "id");
	ck_assert(kc_smp_lookup(&schema, "spec.workers", &f));
	ck_assert_str_eq(f.merge_key, "rank");
	ck_assert(!kc_smp_lookup(&schema, "spec.other", &f));

	doc = parse("{\"spec\":{\"items\":[{\"id\":1,\"v\":1}],\"workers\":[{\"rank\":0}],"
	    "\"other\":[1]}}");
	patch = parse("{\"spec\":{\"items\":[{\"id\":1,\"v\":2}],\"workers\":[{\"rank\":1}],"
	    "\"other\":[2]}}");
	want = parse("{\"spec\":{\"items\":[{\"id\":1,\"v\":2}],"
	    "\"workers\":[{\"rank\":1},{\"rank\":0}],\"other\":[2]}}");
	ck_assert_msg(kc_smp_apply(doc, patch, &schema, &ret, &st) == 0, "%s", st.message);
	assert_json_eq(ret, want, "callback schema");
	json_object_put(ret);
	json_object_put(doc);
	json_object_put(patch);
	json_object_put(want);
}
END_TEST

/* ------------------------------------------------------------------------
 * Limits and parsing
 */

/* An array nested 'depth' levels deep. */
static struct json_object *
nested(unsigned depth)
{
	struct json_object *o = json_object_new_array(), *outer;

	for (unsigned i = 1; i < depth; i++) {
		outer = json_object_new_array();
		ck_assert_int_eq(kc_json_append(outer, o), 0);
		o = outer;
	}
	return o;
}

START_TEST(test_limits_depth)
{
	struct json_object *deep = nested(150), *shallow = nested(50), *empty, *arr;
	struct json_object *ret = SENTINEL, *obj, *p;
	struct kc_status st = { 0 };

	empty = parse("{}");
	arr = parse("[]");
	ck_assert_int_eq(kc_merge_patch_apply(deep, empty, &ret, &st), KC_ETOOLARGE);
	ck_assert_str_eq(st.message, "the document is nested deeper than 100 levels");
	ck_assert_int_eq(kc_merge_patch_apply(empty, deep, &ret, &st), KC_ETOOLARGE);
	ck_assert_str_eq(st.message, "the merge patch is nested deeper than 100 levels");
	ck_assert_int_eq(kc_merge_patch_create(deep, empty, &ret, &st), KC_ETOOLARGE);
	ck_assert_int_eq(kc_merge_patch_create(empty, deep, &ret, &st), KC_ETOOLARGE);
	ck_assert_int_eq(kc_json_patch_apply(deep, arr, &ret, &st), KC_ETOOLARGE);
	obj = json_object_new_object();
	ck_assert_int_eq(kc_json_put(obj, "a", json_object_get(deep)), 0);
	ck_assert_int_eq(kc_smp_apply(obj, empty, &kc_smp_schema_pod, &ret, &st), KC_ETOOLARGE);
	ck_assert_int_eq(kc_smp_apply(empty, obj, &kc_smp_schema_pod, &ret, &st), KC_ETOOLARGE);
	ck_assert_ptr_eq(ret, SENTINEL);

	/* Within the limit, all is well. */
	ck_assert_int_eq(kc_merge_patch_apply(shallow, empty, &ret, &st), 0);
	json_object_put(ret);
	ck_assert_int_eq(kc_json_patch_apply(shallow, arr, &ret, &st), 0);
	assert_json_eq(ret, shallow, "shallow");
	json_object_put(ret);

	/* A JSON patch may not deepen the document past the limit. */
	p = json_object_new_array();
	{
		struct json_object *op = json_object_new_object();

		ck_assert_int_eq(kc_json_set_str(op, "op", "add"), 0);
		ck_assert_int_eq(kc_json_set_str(op, "path", "/a/b/c"), 0);
		ck_assert_int_eq(kc_json_put(op, "value", nested(98)), 0);
		ck_assert_int_eq(kc_json_append(p, op), 0);
	}
	ret = SENTINEL;
	json_object_put(obj);
	obj = parse("{\"a\":{\"b\":{}}}");
	ck_assert_int_eq(kc_json_patch_apply(obj, p, &ret, &st), KC_ETOOLARGE);
	ck_assert_str_eq(st.message, "op 0 (add) at /a/b/c: the document would nest deeper "
	    "than 100 levels");
	ck_assert_ptr_eq(ret, SENTINEL);
	json_object_put(p);
	p = parse("[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/b/c\"},"
	    "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/b/c/b/c\"}]");
	ck_assert_int_eq(kc_json_patch_apply(obj, p, &ret, &st), 0);
	json_object_put(ret);
	json_object_put(p);

	json_object_put(obj);
	json_object_put(deep);
	json_object_put(shallow);
	json_object_put(empty);
	json_object_put(arr);
}
END_TEST

static struct json_object *
ops_of(size_t n, const char *op)
{
	struct json_object *p = json_object_new_array_ext((int)n);

	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(kc_json_append(p, parse(op)), 0);
	return p;
}

START_TEST(test_limits_ops)
{
	struct json_object *doc = parse("{\"a\":1}"), *p, *ret = SENTINEL;
	struct kc_status st = { 0 };

	p = ops_of(KC_PATCH_OPS_MAX, "{\"op\":\"test\",\"path\":\"/a\",\"value\":1}");
	ck_assert_int_eq(kc_json_patch_apply(doc, p, &ret, &st), 0);
	assert_json_eq(ret, doc, "10000 tests");
	json_object_put(ret);
	ret = SENTINEL;
	ck_assert_int_eq(kc_json_append(p,
	    parse("{\"op\":\"test\",\"path\":\"/a\",\"value\":1}")), 0);
	ck_assert_int_eq(kc_json_patch_apply(doc, p, &ret, &st), KC_ETOOLARGE);
	ck_assert_str_eq(st.message, "the allowed maximum operations in a JSON patch is 10000, "
	    "got 10001");
	ck_assert_ptr_eq(ret, SENTINEL);
	json_object_put(p);
	json_object_put(doc);
}
END_TEST

START_TEST(test_limits_copy_and_pointer)
{
	struct json_object *doc, *list, *p, *ret = SENTINEL;
	struct kc_status st = { 0 };
	char op[128], *longp;

	/* Copies multiply a document; they are capped. */
	doc = json_object_new_object();
	list = json_object_new_array();
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(kc_json_append(list, json_object_new_int(i)), 0);
	ck_assert_int_eq(kc_json_put(doc, "a", list), 0);
	p = json_object_new_array();
	for (int i = 0; i < 1100; i++) {
		snprintf(op, sizeof(op), "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/b%d\"}", i);
		ck_assert_int_eq(kc_json_append(p, parse(op)), 0);
	}
	ck_assert_int_eq(kc_json_patch_apply(doc, p, &ret, &st), KC_ETOOLARGE);
	ck_assert_msg(strstr(st.message, "the patch copies more than 1048576 values") != NULL,
	    "%s", st.message);
	ck_assert_ptr_eq(ret, SENTINEL);
	json_object_put(p);
	json_object_put(doc);

	/* Pointers have a length limit. */
	longp = kc_malloc(KC_PATCH_POINTER_MAX + 2);
	ck_assert_ptr_nonnull(longp);
	memset(longp, 'a', KC_PATCH_POINTER_MAX + 1);
	longp[0] = '/';
	longp[KC_PATCH_POINTER_MAX + 1] = '\0';
	doc = parse("{}");
	p = json_object_new_array();
	{
		struct json_object *o = json_object_new_object();

		ck_assert_int_eq(kc_json_set_str(o, "op", "remove"), 0);
		ck_assert_int_eq(kc_json_set_str(o, "path", longp), 0);
		ck_assert_int_eq(kc_json_append(p, o), 0);
	}
	ck_assert_int_eq(kc_json_patch_apply(doc, p, &ret, &st), KC_ETOOLARGE);
	ck_assert_msg(strstr(st.message, "the pointer is too long") != NULL, "%s", st.message);
	ck_assert_int_eq(kc_json_pointer_get(doc, longp, &ret, &st), KC_ETOOLARGE);
	ck_assert_ptr_eq(ret, SENTINEL);
	longp[KC_PATCH_POINTER_MAX] = '\0';
	ck_assert_int_eq(kc_json_pointer_get(doc, longp, &ret, &st), KC_ENOTFOUND);
	kc_free(longp);
	json_object_put(p);
	json_object_put(doc);
}
END_TEST

START_TEST(test_limits_smp_list)
{
	struct json_object *doc, *fin, *patch, *ret = SENTINEL;
	struct kc_status st = { 0 };
	char name[32];

	doc = parse("{\"metadata\":{}}");
	fin = json_object_new_array();
	for (int i = 0; i <= KC_PATCH_LIST_MAX; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(kc_json_append(fin, json_object_new_string(name)), 0);
	}
	ck_assert_int_eq(kc_json_put(kc_json_obj_of(doc, "metadata"), "finalizers", fin), 0);
	patch = parse("{\"metadata\":{\"finalizers\":[\"x\"]}}");
	ck_assert_int_eq(kc_smp_apply(doc, patch, &kc_smp_schema_pod, &ret, &st), KC_ETOOLARGE);
	ck_assert_str_eq(st.message, "strategic merge patch at metadata.finalizers: a merged "
	    "list may have at most 4096 elements");
	ck_assert_ptr_eq(ret, SENTINEL);
	/* Replacing it is fine. */
	ck_assert_int_eq(kc_smp_apply(doc, patch, NULL, &ret, &st), 0);
	json_object_put(ret);
	json_object_put(patch);
	json_object_put(doc);
}
END_TEST

START_TEST(test_patch_parse)
{
	struct json_object *ret = SENTINEL, *want;
	struct kc_status st = { 0 };
	const char *text;
	char *big;

	ck_assert_int_eq(kc_patch_parse(" null\n", 6, &ret, &st), 0);
	ck_assert_ptr_null(ret);
	text = "[{\"op\":\"remove\",\"path\":\"/a\"}]";
	ck_assert_int_eq(kc_patch_parse(text, strlen(text), &ret, &st), 0);
	want = parse(text);
	assert_json_eq(ret, want, "parsed patch");
	json_object_put(ret);
	json_object_put(want);
	ret = SENTINEL;
	ck_assert_int_eq(kc_patch_parse("{\"a\":", 5, &ret, &st), KC_EPARSE);
	ck_assert_int_eq(kc_patch_parse("[1] x", 5, &ret, &st), KC_EPARSE);
	ck_assert_int_eq(kc_patch_parse("nul", 3, &ret, &st), KC_EPARSE);
	ck_assert_ptr_eq(ret, SENTINEL);
	big = kc_malloc(KC_PATCH_SIZE_MAX + 1);
	ck_assert_ptr_nonnull(big);
	memset(big, ' ', KC_PATCH_SIZE_MAX + 1);
	big[0] = '1';
	ck_assert_int_eq(kc_patch_parse(big, KC_PATCH_SIZE_MAX + 1, &ret, &st), KC_ETOOLARGE);
	ck_assert_str_eq(st.message, "patch of 3145729 bytes is larger than the limit of "
	    "3145728 bytes");
	ck_assert_ptr_eq(ret, SENTINEL);
	ck_assert_int_eq(kc_patch_parse(big, KC_PATCH_SIZE_MAX, &ret, &st), 0);
	ck_assert_int_eq(json_object_get_int(ret), 1);
	json_object_put(ret);
	kc_free(big);
}
END_TEST

/* ------------------------------------------------------------------------
 * Allocation failures
 */

typedef int (*apply_fn)(const struct json_object *, const struct json_object *,
    struct json_object **, struct kc_status *);

static int
smp_pod(const struct json_object *doc, const struct json_object *patch,
    struct json_object **ret, struct kc_status *st)
{
	return kc_smp_apply(doc, patch, &kc_smp_schema_pod, ret, st);
}

static void
oom_loop(apply_fn fn, const char *doc_text, const char *patch_text, const char *want_text)
{
	struct json_object *doc = parse(doc_text), *patch = parse(patch_text);
	struct json_object *want = parse(want_text), *ret;
	struct kc_status st;
	size_t budget;
	int r;

	for (budget = 0;; budget++) {
		ret = SENTINEL;
		memset(&st, 0, sizeof(st));
		fail_alloc_after(budget);
		r = fn(doc, patch, &ret, &st);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_msg(r == -ENOMEM, "budget %zu: %d (%s): %s", budget, r,
		    kc_err_name(r), st.message);
		ck_assert_ptr_eq(ret, SENTINEL);
		ck_assert_msg(strstr(st.message, "out of memory") != NULL, "%s", st.message);
		ck_assert_uint_lt(budget, 10000);
	}
	assert_json_eq(ret, want, patch_text);
	json_object_put(ret);
	json_object_put(doc);
	json_object_put(patch);
	json_object_put(want);
}

static int
merge_create(const struct json_object *orig, const struct json_object *mod,
    struct json_object **ret, struct kc_status *st)
{
	return kc_merge_patch_create(orig, mod, ret, st);
}

START_TEST(test_alloc_failures)
{
	struct json_object *doc, *v;
	struct kc_status st;
	size_t budget;
	int r;

	oom_loop(kc_json_patch_apply, "{\"a\":[1,2,3],\"b\":{\"c\":1}}",
	    "[{\"op\":\"add\",\"path\":\"/a/0\",\"value\":0},"
	    "{\"op\":\"move\",\"from\":\"/b/c\",\"path\":\"/a/1\"},"
	    "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/b/d\"},"
	    "{\"op\":\"test\",\"path\":\"/b/d/4\",\"value\":3},"
	    "{\"op\":\"remove\",\"path\":\"/a/4\"}]",
	    "{\"a\":[0,1,1,2],\"b\":{\"d\":[0,1,1,2,3]}}");
	oom_loop(smp_pod,
	    "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]},\"spec\":{\"containers\":["
	    "{\"name\":\"main\",\"env\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\"}]},"
	    "{\"name\":\"side\"}]}}",
	    "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":[\"a\"],"
	    "\"finalizers\":[\"c\"]},"
	    "\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"side\"},{\"name\":\"main\"}],"
	    "\"containers\":[{\"name\":\"main\",\"$setElementOrder/env\":[{\"name\":\"B\"},"
	    "{\"name\":\"C\"}],\"env\":[{\"name\":\"C\",\"value\":\"3\"},"
	    "{\"name\":\"A\",\"$patch\":\"delete\"}]}]}}",
	    "{\"metadata\":{\"finalizers\":[\"c\",\"b\"]},\"spec\":{\"containers\":["
	    "{\"name\":\"side\"},{\"name\":\"main\",\"env\":[{\"name\":\"B\"},"
	    "{\"name\":\"C\",\"value\":\"3\"}]}]}}");
	oom_loop(smp_pod, "{\"spec\":{\"volumes\":[{\"name\":\"v\",\"emptyDir\":{}}]}}",
	    "{\"spec\":{\"volumes\":[{\"$patch\":\"replace\"},{\"name\":\"w\",\"$retainKeys\":"
	    "[\"name\",\"hostPath\"],\"hostPath\":{\"path\":\"/x\"}}],"
	    "\"containers\":[{\"name\":\"n\",\"ports\":[{\"containerPort\":1}]}]}}",
	    "{\"spec\":{\"volumes\":[{\"name\":\"w\",\"hostPath\":{\"path\":\"/x\"}}],"
	    "\"containers\":[{\"name\":\"n\",\"ports\":[{\"containerPort\":1}]}]}}");
	oom_loop(kc_merge_patch_apply, "{\"a\":{\"b\":1},\"c\":[1]}",
	    "{\"a\":{\"b\":null,\"d\":2},\"c\":null}", "{\"a\":{\"d\":2}}");
	oom_loop(merge_create, "{\"a\":{\"b\":1},\"c\":[1]}", "{\"a\":{\"d\":2}}",
	    "{\"a\":{\"b\":null,\"d\":2},\"c\":null}");

	doc = parse("{\"a\":[{\"b~/\":1}]}");
	for (budget = 0;; budget++) {
		v = SENTINEL;
		memset(&st, 0, sizeof(st));
		fail_alloc_after(budget);
		r = kc_json_pointer_get(doc, "/a/0/b~0~1", &v, &st);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_eq(v, SENTINEL);
	}
	ck_assert_int_eq(json_object_get_int(v), 1);
	json_object_put(doc);
}
END_TEST

static Suite *
patch_suite_build(void)
{
	Suite *s = suite_create("patch");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_rfc7386);
	tcase_add_test(tc, test_rfc6902);
	tcase_add_test(tc, test_rfc6901);
	tcase_add_test(tc, test_merge_create);
	tcase_add_test(tc, test_merge_create_property);
	tcase_add_test(tc, test_smp_fixture);
	tcase_add_test(tc, test_smp_schemas);
	tcase_add_test(tc, test_smp_callback);
	tcase_add_test(tc, test_limits_depth);
	tcase_add_test(tc, test_limits_ops);
	tcase_add_test(tc, test_limits_copy_and_pointer);
	tcase_add_test(tc, test_limits_smp_list);
	tcase_add_test(tc, test_patch_parse);
	tcase_add_test(tc, test_alloc_failures);
	suite_add_tcase(s, tc);
	return s;
}

Suite *
patch_suite(void)
{
	return patch_suite_build();
}

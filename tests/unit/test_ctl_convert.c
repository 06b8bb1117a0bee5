/*
 * test_ctl_convert.c: Run and ResourceProfile conversion between
 * trainyard.dev/v1alpha1 and v1beta1 (controller/convert.c).
 *
 * Golden files: tests/fixtures/convert/<case>.json holds {"to": version,
 * "in": object, "want": object}; each is converted and compared by value
 * (key order aside), then converted back to the input's version, which
 * must give the input again unless the case says "lossy": true (a stale
 * or unreadable annotation, which up-conversion drops).
 *
 * Property tests: seeded generators make schema-valid Runs of each
 * version (every field absent, empty or set at random, nulls, unknown
 * fields in the preserved blocks, labels, annotations, managedFields);
 * each must survive the round trip unchanged, and one conversion must
 * leave metadata other than annotations as it was.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/macro.h>

#include "testutil.h"
#include "../../controller/convert.h"

#define PROPERTY_RUNS	10000

static struct json_object *
parse(const char *text)
{
	struct json_object *o = NULL;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_json_parse(text, strlen(text), &o, &st) == 0, "bad test JSON: %s",
	    st.message);
	return o;
}

static struct json_object *
convert_ok(struct json_object *in, const char *to)
{
	struct json_object *out = NULL;
	struct kc_status st = { 0 };

	if (ty_convert(in, to, &out, &st) != 0)
		ck_abort_msg("convert to %s: %s\n%s", to, st.message,
		    json_object_to_json_string(in));
	/* Plain tests: each Check assertion writes a record, 20,000 times over. */
	if (out == NULL || strcmp(kc_json_str(out, "apiVersion"), to) != 0)
		ck_abort_msg("convert to %s: no object, or of another apiVersion", to);
	return out;
}

/* ---- golden files ---- */

static const char *const golden_cases[] = {
	"alpha-full", "alpha-absent", "alpha-null", "alpha-defaults", "alpha-preserved",
	"alpha-annotation", "alpha-stale-annotation", "alpha-bad-annotation",
	"beta-full", "beta-empty", "beta-null", "beta-unknown-members", "beta-no-metadata",
	"beta-no-annotations", "beta-stale-annotation", "beta-alpha-names",
	"profile-up", "profile-down",
};

START_TEST(test_golden)
{
	struct json_object *c, *in, *want, *got, *back;
	char file[128], *text;
	size_t len;
	struct kc_status st = { 0 };
	const char *to;

	snprintf(file, sizeof(file), "convert/%s.json", golden_cases[_i]);
	text = tu_fixture(file, &len);
	ck_assert_msg(kc_json_parse(text, len, &c, &st) == 0, "%s: %s", file, st.message);
	kc_free(text);
	in = kc_json_get(c, "in");
	want = kc_json_get(c, "want");
	to = kc_json_str(c, "to");
	ck_assert_ptr_nonnull(to);
	got = convert_ok(in, to);
	ck_assert_msg(kc_json_equal(got, want), "%s: got\n%s", file,
	    json_object_to_json_string_ext(got, JSON_C_TO_STRING_PRETTY |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
	if (!kc_json_bool(c, false, "lossy")) {
		back = convert_ok(got, kc_json_str(in, "apiVersion"));
		ck_assert_msg(kc_json_equal(back, in), "%s: back\n%s", file,
		    json_object_to_json_string_ext(back, JSON_C_TO_STRING_PRETTY));
		json_object_put(back);
	}
	json_object_put(got);
	json_object_put(c);
}
END_TEST

/* The annotation is one compact line, its keys sorted, and only what has no home. */
START_TEST(test_annotation_text)
{
	struct json_object *in = parse("{\"apiVersion\":\"trainyard.dev/v1beta1\","
	    "\"kind\":\"Run\",\"metadata\":{\"name\":\"r\",\"annotations\":{\"a\":\"b\"}},"
	    "\"spec\":{\"nodes\":2,\"restart\":{},\"container\":{\"image\":\"x\"},"
	    "\"network\":{\"ingressFrom\":[{\"podSelector\":{}}]}}}");
	struct json_object *out = convert_ok(in, TY_V1ALPHA1);

	ck_assert_str_eq(kc_json_str(out, "metadata", "annotations", TY_CONVERT_ANNOTATION),
	    "{\"spec\":{\"network\":{\"ingressFrom\":[{\"podSelector\":{}}]},\"restart\":{}}}");
	ck_assert_str_eq(kc_json_str(out, "metadata", "annotations", "a"), "b");
	ck_assert_str_eq(kc_json_str(out, "spec", "image"), "x");
	json_object_put(out);
	json_object_put(in);
}
END_TEST

/* An annotation over the bound is removed unread; one at the bound is read. */
START_TEST(test_oversized_annotation)
{
	static const char head[] = "{\"spec\":{\"network\":{\"pad\":\"";
	static const char tail[] = "\"}}}";
	struct json_object *in, *out, *ann;
	size_t n = TY_CONVERT_ANNOTATION_MAX + 1;
	char *text = kc_malloc(n + 1);

	ck_assert_ptr_nonnull(text);
	memset(text, 'x', n);
	memcpy(text, head, sizeof(head) - 1);
	memcpy(text + n - (sizeof(tail) - 1), tail, sizeof(tail) - 1);
	text[n] = '\0';
	in = parse("{\"apiVersion\":\"trainyard.dev/v1alpha1\",\"kind\":\"Run\","
	    "\"metadata\":{\"name\":\"r\",\"annotations\":{\"keep\":\"1\"}},"
	    "\"spec\":{\"nodes\":1,\"image\":\"i\"}}");
	ann = kc_json_get(in, "metadata", "annotations");
	ck_assert_int_eq(kc_json_set_str(ann, TY_CONVERT_ANNOTATION, text), 0);
	out = convert_ok(in, TY_V1BETA1);
	ck_assert_ptr_null(kc_json_get(out, "spec", "network"));
	ck_assert(!json_object_object_get_ex(kc_json_get(out, "metadata", "annotations"),
	    TY_CONVERT_ANNOTATION, NULL));
	ck_assert_str_eq(kc_json_str(out, "metadata", "annotations", "keep"), "1");
	json_object_put(out);

	/* One byte shorter: read. */
	memmove(text + n - sizeof(tail), tail, sizeof(tail));
	ck_assert_int_eq(kc_json_set_str(ann, TY_CONVERT_ANNOTATION, text), 0);
	out = convert_ok(in, TY_V1BETA1);
	ck_assert_uint_eq(strlen(kc_json_str(out, "spec", "network", "pad")),
	    TY_CONVERT_ANNOTATION_MAX - sizeof(head) - sizeof(tail) + 2);
	json_object_put(out);
	json_object_put(in);
	kc_free(text);
}
END_TEST

/* ---- errors ---- */

static const struct error_case {
	const char	*in;
	const char	*to;
	const char	*message;
} error_cases[] = {
	{ "[]", TY_V1BETA1, "the object must be a JSON object" },
	{ "{\"apiVersion\":\"trainyard.dev/v1alpha1\",\"kind\":\"Run\"}", "trainyard.dev/v2",
	  "desired apiVersion \"trainyard.dev/v2\" is not trainyard.dev/v1alpha1 or "
	  "trainyard.dev/v1beta1" },
	{ "{\"apiVersion\":\"trainyard.dev/v1alpha1\",\"kind\":\"Run\"}", NULL,
	  "desired apiVersion \"\" is not trainyard.dev/v1alpha1 or trainyard.dev/v1beta1" },
	{ "{\"apiVersion\":\"v1\",\"kind\":\"Run\"}", TY_V1BETA1,
	  "apiVersion: \"v1\" is not trainyard.dev/v1alpha1 or trainyard.dev/v1beta1" },
	{ "{\"kind\":\"Run\"}", TY_V1BETA1,
	  "apiVersion: \"\" is not trainyard.dev/v1alpha1 or trainyard.dev/v1beta1" },
	{ "{\"apiVersion\":\"trainyard.dev/v1alpha1\",\"kind\":\"Project\"}", TY_V1BETA1,
	  "kind: \"Project\" is not Run or ResourceProfile" },
	{ "{\"apiVersion\":\"trainyard.dev/v1alpha1\",\"kind\":7}", TY_V1BETA1,
	  "kind: \"\" is not Run or ResourceProfile" },
	{ "{\"apiVersion\":\"trainyard.dev/v1alpha1\",\"kind\":\"Run\",\"spec\":[]}",
	  TY_V1BETA1, "spec: must be an object" },
	{ "{\"apiVersion\":\"trainyard.dev/v1beta1\",\"kind\":\"Run\",\"spec\":\"x\"}",
	  TY_V1ALPHA1, "spec: must be an object" },
	{ "{\"apiVersion\":\"trainyard.dev/v1beta1\",\"kind\":\"Run\",\"spec\":"
	  "{\"container\":\"busybox\"}}", TY_V1ALPHA1, "spec.container: must be an object" },
	{ "{\"apiVersion\":\"trainyard.dev/v1beta1\",\"kind\":\"Run\",\"spec\":"
	  "{\"restart\":3}}", TY_V1ALPHA1, "spec.restart: must be an object" },
	{ "{\"apiVersion\":\"trainyard.dev/v1beta1\",\"kind\":\"Run\",\"spec\":"
	  "{\"deadlines\":[]}}", TY_V1ALPHA1, "spec.deadlines: must be an object" },
	{ "{\"apiVersion\":\"trainyard.dev/v1beta1\",\"kind\":\"Run\",\"spec\":"
	  "{\"network\":true}}", TY_V1ALPHA1, "spec.network: must be an object" },
	{ "{\"apiVersion\":\"trainyard.dev/v1beta1\",\"kind\":\"Run\",\"metadata\":1}",
	  TY_V1ALPHA1, "metadata: must be an object" },
	{ "{\"apiVersion\":\"trainyard.dev/v1alpha1\",\"kind\":\"Run\",\"metadata\":null}",
	  TY_V1BETA1, "metadata: must be an object" },
	{ "{\"apiVersion\":\"trainyard.dev/v1alpha1\",\"kind\":\"Run\",\"metadata\":"
	  "{\"annotations\":[]}}", TY_V1BETA1, "metadata.annotations: must be an object" },
};

START_TEST(test_errors)
{
	const struct error_case *ec = &error_cases[_i];
	struct json_object *in = parse(ec->in), *out = (struct json_object *)&out;
	struct kc_status st = { 0 };

	ck_assert_int_eq(ty_convert(in, ec->to, &out, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, ec->message);
	ck_assert_ptr_eq(out, (struct json_object *)&out);	/* untouched */
	json_object_put(in);
}
END_TEST

/* A ResourceProfile's spec is never looked at; same-version is a copy. */
START_TEST(test_passthrough)
{
	struct json_object *in = parse("{\"apiVersion\":\"trainyard.dev/v1alpha1\","
	    "\"kind\":\"ResourceProfile\",\"spec\":\"odd\",\"metadata\":7}");
	struct json_object *out = convert_ok(in, TY_V1BETA1);

	ck_assert_str_eq(kc_json_str(out, "spec"), "odd");
	json_object_put(out);
	json_object_put(in);
	in = parse("{\"apiVersion\":\"trainyard.dev/v1beta1\",\"kind\":\"Run\","
	    "\"spec\":{\"image\":\"flat\"}}");
	out = convert_ok(in, TY_V1BETA1);
	ck_assert(kc_json_equal(in, out));
	json_object_put(out);
	json_object_put(in);
}
END_TEST

/* Every allocation failure is -ENOMEM with *ret untouched, until it works. */
START_TEST(test_enomem)
{
	static const char *const files[] = { "convert/beta-full.json",
	    "convert/alpha-annotation.json" };

	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		struct json_object *c, *in, *out;
		struct kc_status st = { 0 };
		size_t len;
		char *text = tu_fixture(files[f], &len);
		int r;

		ck_assert_int_eq(kc_json_parse(text, len, &c, &st), 0);
		kc_free(text);
		in = kc_json_get(c, "in");
		for (size_t budget = 0;; budget++) {
			out = NULL;
			fail_alloc_after(budget);
			r = ty_convert(in, kc_json_str(c, "to"), &out, &st);
			fail_alloc_after(SIZE_MAX);
			if (r == 0)
				break;
			ck_assert_int_eq(r, -ENOMEM);
			ck_assert_ptr_null(out);
		}
		json_object_put(out);
		json_object_put(c);
	}
}
END_TEST

/* ---- property tests ---- */

struct gen {
	uint64_t	s;
};

static uint64_t
next(struct gen *g)
{
	g->s ^= g->s << 13;
	g->s ^= g->s >> 7;
	g->s ^= g->s << 17;
	return g->s;
}

static unsigned
pick(struct gen *g, unsigned n)
{
	return (unsigned)(next(g) % n);
}

static const char *const words[] = {
	"alpha", "", "b", "gpu", "main", "x/y", "0", "true", "ünï", "a\"q", "data", "null",
};

static struct json_object *
word(struct gen *g)
{
	return json_object_new_string(words[pick(g, KC_ARRAY_SIZE(words))]);
}

static void
put(struct json_object *o, const char *k, struct json_object *v)
{
	if (kc_json_put_nullable(o, k, v) != 0)
		ck_abort_msg("out of memory");
}

static void
add(struct json_object *a, struct json_object *v)
{
	if (kc_json_append_nullable(a, v) != 0)
		ck_abort_msg("out of memory");
}

/* An arbitrary JSON value, for preserved-unknown blocks. */
static struct json_object *
any(struct gen *g, int depth)
{
	struct json_object *o;

	switch (pick(g, depth > 2 ? 5 : 7)) {
	case 0:
		return NULL;
	case 1:
		return json_object_new_boolean(pick(g, 2));
	case 2:
		return json_object_new_int64((int64_t)(next(g) % 100000) - 50000);
	case 3:
		return json_object_new_double((double)pick(g, 1000) / 8.0);
	case 4:
		return word(g);
	case 5:
		o = json_object_new_array();
		for (unsigned i = pick(g, 3); i > 0; i--)
			add(o, any(g, depth + 1));
		return o;
	default:
		o = json_object_new_object();
		for (unsigned i = pick(g, 3); i > 0; i--)
			put(o, words[pick(g, KC_ARRAY_SIZE(words))], any(g, depth + 1));
		return o;
	}
}

static struct json_object *
strings(struct gen *g)
{
	struct json_object *a = json_object_new_array();

	for (unsigned i = pick(g, 3); i > 0; i--)
		add(a, word(g));
	return a;
}

static struct json_object *
string_map(struct gen *g)
{
	struct json_object *o = json_object_new_object();
	char k[32];

	for (unsigned i = pick(g, 3); i > 0; i--) {
		snprintf(k, sizeof(k), "k%u.example/%s", pick(g, 50), i % 2 ? "a" : "b");
		put(o, k, word(g));
	}
	return o;
}

/* Sets 'key' with probability 1/2 to 'v' (else frees it); 1/16 to null. */
static void
maybe(struct gen *g, struct json_object *o, const char *key, struct json_object *v)
{
	unsigned p = pick(g, 16);

	if (p == 0) {
		json_object_put(v);
		put(o, key, NULL);
	} else if (p < 8) {
		put(o, key, v);
	} else {
		json_object_put(v);
	}
}

/* The container fields (shared by both versions, v1beta1 nests them). */
static void
container_fields(struct gen *g, struct json_object *o)
{
	struct json_object *a, *e, *res;

	maybe(g, o, "image", word(g));
	maybe(g, o, "command", strings(g));
	maybe(g, o, "args", strings(g));
	a = json_object_new_array();
	for (unsigned i = pick(g, 3); i > 0; i--) {
		e = json_object_new_object();
		put(e, "name", word(g));
		if (pick(g, 2))
			put(e, "value", word(g));
		else
			put(e, "valueFrom", any(g, 1));
		add(a, e);
	}
	maybe(g, o, "env", a);
	maybe(g, o, "workingDir", word(g));
	a = json_object_new_array();
	for (unsigned i = pick(g, 3); i > 0; i--) {
		e = json_object_new_object();
		put(e, "containerPort", json_object_new_int64(1 + pick(g, 65535)));
		maybe(g, e, "name", word(g));
		maybe(g, e, "protocol", json_object_new_string("UDP"));
		add(a, e);
	}
	maybe(g, o, "ports", a);
	a = json_object_new_array();
	for (unsigned i = pick(g, 2); i > 0; i--) {
		e = json_object_new_object();
		put(e, "name", word(g));
		put(e, "mountPath", word(g));
		maybe(g, e, "readOnly", json_object_new_boolean(1));
		add(a, e);
	}
	maybe(g, o, "volumeMounts", a);
	maybe(g, o, "securityContext", any(g, 1));
	res = json_object_new_object();
	maybe(g, res, "requests", string_map(g));
	maybe(g, res, "limits", string_map(g));
	maybe(g, o, "resources", res);
}

static void
common_spec(struct gen *g, struct json_object *spec)
{
	struct json_object *t, *ts;

	maybe(g, spec, "nodes", json_object_new_int64(1 + pick(g, 10000)));
	maybe(g, spec, "profile", word(g));
	maybe(g, spec, "preemptible", json_object_new_boolean(pick(g, 2)));
	maybe(g, spec, "session", json_object_new_int64(1 + pick(g, 5)));
	maybe(g, spec, "suspend", json_object_new_boolean(pick(g, 2)));
	t = json_object_new_object();
	ts = json_object_new_object();
	maybe(g, ts, "nodeSelector", string_map(g));
	maybe(g, ts, "volumes", any(g, 1));
	maybe(g, ts, "securityContext", any(g, 1));
	maybe(g, t, "spec", ts);
	maybe(g, spec, "template", t);
}

static struct json_object *
metadata(struct gen *g)
{
	struct json_object *md = json_object_new_object(), *mf, *e;

	put(md, "name", json_object_new_string("r1"));
	put(md, "namespace", json_object_new_string("team-a"));
	put(md, "uid", json_object_new_string("4f1a6c2e-0000-4000-8000-000000000001"));
	put(md, "resourceVersion", json_object_new_int64(1 + pick(g, 99999)));
	put(md, "generation", json_object_new_int64(1 + pick(g, 9)));
	maybe(g, md, "labels", string_map(g));
	if (pick(g, 4) != 0)
		put(md, "annotations", string_map(g));
	mf = json_object_new_array();
	for (unsigned i = pick(g, 3); i > 0; i--) {
		e = json_object_new_object();
		put(e, "manager", word(g));
		put(e, "apiVersion", json_object_new_string(pick(g, 2) ? TY_V1ALPHA1 :
		    TY_V1BETA1));
		put(e, "fieldsV1", any(g, 1));
		add(mf, e);
	}
	maybe(g, md, "managedFields", mf);
	return md;
}

static struct json_object *
status(struct gen *g)
{
	struct json_object *s = json_object_new_object();

	maybe(g, s, "phase", json_object_new_string("Running"));
	maybe(g, s, "session", json_object_new_int64(pick(g, 4)));
	maybe(g, s, "conditions", any(g, 1));
	return s;
}

static struct json_object *
gen_alpha(struct gen *g)
{
	static const char *const policies[] = { "Never", "OnPreemption", "OnFailure" };
	struct json_object *o = json_object_new_object(), *spec = json_object_new_object();

	put(o, "apiVersion", json_object_new_string(TY_V1ALPHA1));
	put(o, "kind", json_object_new_string("Run"));
	put(o, "metadata", metadata(g));
	common_spec(g, spec);
	container_fields(g, spec);
	maybe(g, spec, "restartPolicy", json_object_new_string(policies[pick(g, 3)]));
	maybe(g, spec, "maxRestarts", json_object_new_int64(pick(g, 10)));
	maybe(g, spec, "activeDeadlineSeconds", json_object_new_int64(1 + pick(g, 99999)));
	maybe(g, spec, "scheduleTimeoutSeconds", json_object_new_int64(1 + pick(g, 999)));
	put(o, "spec", spec);
	maybe(g, o, "status", status(g));
	return o;
}

static struct json_object *
gen_beta(struct gen *g)
{
	static const char *const policies[] = { "Never", "OnPreemption", "OnFailure" };
	struct json_object *o = json_object_new_object(), *spec = json_object_new_object();
	struct json_object *c, *w, *a, *peer;

	put(o, "apiVersion", json_object_new_string(TY_V1BETA1));
	put(o, "kind", json_object_new_string("Run"));
	put(o, "metadata", metadata(g));
	common_spec(g, spec);
	c = json_object_new_object();
	container_fields(g, c);
	maybe(g, spec, "container", c);
	w = json_object_new_object();
	maybe(g, w, "policy", json_object_new_string(policies[pick(g, 3)]));
	maybe(g, w, "limit", json_object_new_int64(pick(g, 10)));
	maybe(g, spec, "restart", w);
	w = json_object_new_object();
	maybe(g, w, "activeSeconds", json_object_new_int64(1 + pick(g, 99999)));
	maybe(g, w, "schedulingSeconds", json_object_new_int64(1 + pick(g, 999)));
	maybe(g, spec, "deadlines", w);
	w = json_object_new_object();
	a = json_object_new_array();
	for (unsigned i = pick(g, 4); i > 0; i--) {
		peer = json_object_new_object();
		maybe(g, peer, "podSelector", any(g, 2));
		maybe(g, peer, "namespaceSelector", any(g, 2));
		add(a, peer);
	}
	maybe(g, w, "ingressFrom", a);
	maybe(g, spec, "network", w);
	put(o, "spec", spec);
	maybe(g, o, "status", status(g));
	return o;
}

/* Whether the metadata of 'a' and 'b' are equal but for annotations. */
static bool
md_equal_but_annotations(struct json_object *a, struct json_object *b)
{
	struct json_object *ma = kc_json_get(a, "metadata"), *mb = kc_json_get(b, "metadata");
	size_t n = 0;

	json_object_object_foreach(ma, k, v) {
		struct json_object *w;

		if (strcmp(k, "annotations") == 0)
			continue;
		if (!json_object_object_get_ex(mb, k, &w) || !kc_json_equal(v, w))
			return false;
		n++;
	}
	return n + json_object_object_get_ex(mb, "annotations", NULL) ==
	    (size_t)json_object_object_length(mb);
}

static void
round_trip(struct json_object *(*gen)(struct gen *), const char *from, const char *via,
    uint64_t seed)
{
	struct gen g = { .s = seed };

	for (unsigned i = 0; i < PROPERTY_RUNS; i++) {
		struct json_object *in = gen(&g), *mid, *back;

		mid = convert_ok(in, via);
		back = convert_ok(mid, from);
		if (!kc_json_equal(in, back))
			ck_abort_msg("seed %" PRIu64 " run %u:\n%s\n%s\n%s", seed, i,
			    json_object_to_json_string(in), json_object_to_json_string(mid),
			    json_object_to_json_string(back));
		if (!md_equal_but_annotations(in, mid) ||
		    !kc_json_equal(kc_json_get(in, "status"), kc_json_get(mid, "status")))
			ck_abort_msg("seed %" PRIu64 " run %u: metadata or status changed", seed,
			    i);
		json_object_put(back);
		json_object_put(mid);
		json_object_put(in);
	}
}

START_TEST(test_property_alpha)
{
	round_trip(gen_alpha, TY_V1ALPHA1, TY_V1BETA1, 0x9e3779b97f4a7c15ULL);
}
END_TEST

START_TEST(test_property_beta)
{
	round_trip(gen_beta, TY_V1BETA1, TY_V1ALPHA1, 0xd1b54a32d192ed03ULL);
}
END_TEST

Suite *
ctl_convert_suite(void)
{
	Suite *s = suite_create("ctl_convert");
	TCase *tc = tcase_create("convert");

	tcase_add_loop_test(tc, test_golden, 0, (int)KC_ARRAY_SIZE(golden_cases));
	tcase_add_test(tc, test_annotation_text);
	tcase_add_test(tc, test_oversized_annotation);
	tcase_add_loop_test(tc, test_errors, 0, (int)KC_ARRAY_SIZE(error_cases));
	tcase_add_test(tc, test_passthrough);
	tcase_add_test(tc, test_enomem);
	suite_add_tcase(s, tc);
	tc = tcase_create("property");
	tcase_add_test(tc, test_property_alpha);
	tcase_add_test(tc, test_property_beta);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

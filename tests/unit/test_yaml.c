/*
 * test_yaml.c: YAML to json-c as Kubernetes reads it, and back.
 *
 * The scalar, key, stream, anchor and error cases are tables, one Check
 * test per row, so a failure names its row. The Kubernetes fixtures'
 * expected JSON was produced by kubectl itself ("kubectl patch --local
 * -o json", sigs.k8s.io/yaml) and is compared with kc_json_equal().
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "testutil.h"

/* A pointer no parser returns, to see that out-parameters stay untouched. */
static struct json_object *const SENTINEL = (struct json_object *)(uintptr_t)0x5a5a;

static struct json_object *
yaml_ok(const char *text, const struct kc_yaml_opts *opts)
{
	struct json_object *o = NULL;
	struct kc_status st = { 0 };
	int r;

	r = kc_yaml_parse(text, strlen(text), opts, &o, &st);
	ck_assert_msg(r == 0, "kc_yaml_parse(%s): %d %s", text, r, st.message);
	ck_assert(json_object_is_type(o, json_type_array));
	return o;
}

/* Parses 'text', expecting failure 'code'; returns the message. */
static void
yaml_fails(const char *text, size_t len, const struct kc_yaml_opts *opts, int code,
    struct kc_status *st)
{
	struct json_object *o = SENTINEL;
	int r;

	memset(st, 0, sizeof(*st));
	r = kc_yaml_parse(text, len, opts, &o, st);
	ck_assert_msg(r == code, "kc_yaml_parse(%s): %d, want %d (%s)", text, r, code,
	    st->message);
	ck_assert_ptr_eq(o, SENTINEL);
	ck_assert_str_ne(st->message, "");
}

static struct json_object *
json_ok(const char *text)
{
	struct json_object *o = NULL;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_json_parse(text, strlen(text), &o, &st) == 0, "%s: %s", text,
	    st.message);
	return o;
}

/* Asserts that YAML 'yaml' reads as the JSON array 'want'. */
static void
assert_stream(const char *yaml, const char *want)
{
	struct json_object *got = yaml_ok(yaml, NULL), *exp = json_ok(want);
	char *dump = kc_json_dump(got, NULL);

	ck_assert_msg(kc_json_equal(got, exp), "%s: got %s, want %s", yaml, dump, want);
	kc_free(dump);
	json_object_put(got);
	json_object_put(exp);
}

static bool
has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ------------------------------------------------------------------------
 * Scalar typing: each row is one sequence item, "- <yaml>".
 */

static const struct scalar_case {
	const char	*yaml;
	enum json_type	 type;
	const char	*json;		/* exactly as kc_json_dump() prints it */
} scalar_cases[] = {
	/* booleans: the YAML 1.2 core schema's spellings only */
	{ "true",		json_type_boolean,	"true" },
	{ "True",		json_type_boolean,	"true" },
	{ "TRUE",		json_type_boolean,	"true" },
	{ "false",		json_type_boolean,	"false" },
	{ "False",		json_type_boolean,	"false" },
	{ "FALSE",		json_type_boolean,	"false" },
	{ "tRUE",		json_type_string,	"\"tRUE\"" },
	{ "\"true\"",		json_type_string,	"\"true\"" },
	{ "'false'",		json_type_string,	"\"false\"" },
	/* YAML 1.1 booleans stay strings */
	{ "yes",		json_type_string,	"\"yes\"" },
	{ "Yes",		json_type_string,	"\"Yes\"" },
	{ "NO",			json_type_string,	"\"NO\"" },
	{ "no",			json_type_string,	"\"no\"" },
	{ "on",			json_type_string,	"\"on\"" },
	{ "OFF",		json_type_string,	"\"OFF\"" },
	{ "off",		json_type_string,	"\"off\"" },
	{ "y",			json_type_string,	"\"y\"" },
	{ "n",			json_type_string,	"\"n\"" },
	{ "N",			json_type_string,	"\"N\"" },
	/* null */
	{ "null",		json_type_null,		"null" },
	{ "Null",		json_type_null,		"null" },
	{ "NULL",		json_type_null,		"null" },
	{ "~",			json_type_null,		"null" },
	{ "",			json_type_null,		"null" },
	{ "nULL",		json_type_string,	"\"nULL\"" },
	{ "\"null\"",		json_type_string,	"\"null\"" },
	{ "'~'",		json_type_string,	"\"~\"" },
	{ "\"\"",		json_type_string,	"\"\"" },
	{ "''",			json_type_string,	"\"\"" },
	/* integers */
	{ "0",			json_type_int,		"0" },
	{ "12",			json_type_int,		"12" },
	{ "+12",		json_type_int,		"12" },
	{ "-12",		json_type_int,		"-12" },
	{ "-0",			json_type_int,		"0" },
	{ "0x1F",		json_type_int,		"31" },
	{ "0X1f",		json_type_int,		"31" },
	{ "-0x10",		json_type_int,		"-16" },
	{ "0o17",		json_type_int,		"15" },
	{ "0O17",		json_type_int,		"15" },
	{ "0b101",		json_type_int,		"5" },
	{ "0644",		json_type_int,		"420" },
	{ "1_000",		json_type_int,		"1000" },
	{ "0x_1F",		json_type_int,		"31" },
	{ "9223372036854775807", json_type_int,		"9223372036854775807" },
	{ "-9223372036854775808", json_type_int,	"-9223372036854775808" },
	{ "9223372036854775808", json_type_int,		"9223372036854775808" },
	{ "18446744073709551615", json_type_int,	"18446744073709551615" },
	{ "000000000000000000000000000000000000000000000000000000000000000000000012",
				json_type_int,		"10" },
	{ "\"12\"",		json_type_string,	"\"12\"" },
	{ "'0x1F'",		json_type_string,	"\"0x1F\"" },
	/* integers past uint64: decimal ones become floats, others strings */
	{ "18446744073709551616", json_type_double,	"18446744073709552000" },
	{ "99999999999999999999", json_type_double,	"100000000000000000000" },
	{ "-9223372036854775809", json_type_double,	"-9223372036854776000" },
	{ "0xFFFFFFFFFFFFFFFFFF", json_type_string,	"\"0xFFFFFFFFFFFFFFFFFF\"" },
	{ "0x",			json_type_string,	"\"0x\"" },
	{ "0o8",		json_type_string,	"\"0o8\"" },
	{ "08",			json_type_double,	"8" },
	/* floats, printed as Go's encoding/json prints them */
	{ "1.5",		json_type_double,	"1.5" },
	{ "-1.5",		json_type_double,	"-1.5" },
	{ ".5",			json_type_double,	"0.5" },
	{ "+.5",		json_type_double,	"0.5" },
	{ "-.5",		json_type_double,	"-0.5" },
	{ "1.",			json_type_double,	"1" },
	{ "1.0",		json_type_double,	"1" },
	{ "0.1",		json_type_double,	"0.1" },
	{ "1e3",		json_type_double,	"1000" },
	{ "1E3",		json_type_double,	"1000" },
	{ "-1.5E-3",		json_type_double,	"-0.0015" },
	{ "1e-7",		json_type_double,	"1e-7" },
	{ "1.5e-10",		json_type_double,	"1.5e-10" },
	{ "1e21",		json_type_double,	"1e+21" },
	{ "6.02e23",		json_type_double,	"6.02e+23" },
	{ "1_0.5",		json_type_double,	"10.5" },
	{ "3.14159265358979323846264338327950288419716939937510582097494459230781",
				json_type_double,	"3.141592653589793" },
	{ "1e400",		json_type_string,	"\"1e400\"" },
	{ "\"1.5\"",		json_type_string,	"\"1.5\"" },
	{ "'.inf'",		json_type_string,	"\".inf\"" },
	{ "\".nan\"",		json_type_string,	"\".nan\"" },
	{ "1e",			json_type_string,	"\"1e\"" },
	{ ".",			json_type_string,	"\".\"" },
	{ "-x",			json_type_string,	"\"-x\"" },
	{ "+",			json_type_string,	"\"+\"" },
	{ "+-1",		json_type_string,	"\"+-1\"" },
	{ "--1",		json_type_string,	"\"--1\"" },
	{ "1-2",		json_type_string,	"\"1-2\"" },
	{ "Infinity",		json_type_string,	"\"Infinity\"" },
	{ "NaN",		json_type_string,	"\"NaN\"" },
	/* Kubernetes quantities, versions, times and such stay strings */
	{ "1Ti",		json_type_string,	"\"1Ti\"" },
	{ "500m",		json_type_string,	"\"500m\"" },
	{ "1.5Gi",		json_type_string,	"\"1.5Gi\"" },
	{ "100M",		json_type_string,	"\"100M\"" },
	{ "1e3Ki",		json_type_string,	"\"1e3Ki\"" },
	{ "1.2.3",		json_type_string,	"\"1.2.3\"" },
	{ "v1",			json_type_string,	"\"v1\"" },
	{ "12:30",		json_type_string,	"\"12:30\"" },
	{ "2001-12-14",		json_type_string,	"\"2001-12-14\"" },
	{ "2001-12-14T21:59:43.10-05:00", json_type_string, "\"2001-12-14T21:59:43.10-05:00\"" },
	{ "25%",		json_type_string,	"\"25%\"" },
	{ "<<",			json_type_string,	"\"<<\"" },
	/* block and flow scalars are strings whatever they hold */
	{ "|\n  12\n",		json_type_string,	"\"12\\n\"" },
	{ "|-\n  true\n",	json_type_string,	"\"true\"" },
	{ ">\n  a\n  b\n",	json_type_string,	"\"a b\\n\"" },
	{ "\"a\\tb\\u00e9\"",	json_type_string,	"\"a\\tbé\"" },
	{ "'it''s'",		json_type_string,	"\"it's\"" },
	{ "multi\n  line",	json_type_string,	"\"multi line\"" },
	/* explicit tags */
	{ "!!str 12",		json_type_string,	"\"12\"" },
	{ "!!str true",		json_type_string,	"\"true\"" },
	{ "!!str",		json_type_string,	"\"\"" },
	{ "!!int \"12\"",	json_type_int,		"12" },
	{ "!!int 0x10",		json_type_int,		"16" },
	{ "!!float 1",		json_type_double,	"1" },
	{ "!!float \"1.5\"",	json_type_double,	"1.5" },
	{ "!!bool \"true\"",	json_type_boolean,	"true" },
	{ "!!null \"\"",	json_type_null,		"null" },
	{ "!!null ~",		json_type_null,		"null" },
	{ "!!binary aGVsbG8=",	json_type_string,	"\"aGVsbG8=\"" },
	{ "!!timestamp 2001-12-14", json_type_string,	"\"2001-12-14\"" },
	{ "! 12",		json_type_string,	"\"12\"" },
	{ "!custom 12",		json_type_string,	"\"12\"" },
	{ "!<tag:example.com,2000:x> true", json_type_string, "\"true\"" },
	{ "!!map {a: 1}",	json_type_object,	"{\"a\":1}" },
	{ "!!seq [1]",		json_type_array,	"[1]" },
	{ "!!set {a: }",	json_type_object,	"{\"a\":null}" },
	{ "!custom [1]",	json_type_array,	"[1]" },
};

START_TEST(scalar_typing)
{
	const struct scalar_case *t = &scalar_cases[_i];
	struct json_object *got, *v, *want;
	char *yaml, *dump, *exp;

	yaml = kc_asprintf("- %s\n", t->yaml);
	exp = kc_asprintf("[%s]", t->json);
	got = yaml_ok(yaml, NULL);
	ck_assert_uint_eq(json_object_array_length(got), 1);
	v = json_object_array_get_idx(got, 0);
	ck_assert(json_object_is_type(v, json_type_array));
	v = json_object_array_get_idx(v, 0);
	ck_assert_msg(json_object_get_type(v) == t->type, "%s: type %s, want %s", t->yaml,
	    json_type_to_name(json_object_get_type(v)), json_type_to_name(t->type));
	dump = kc_json_dump(json_object_array_get_idx(got, 0), NULL);
	ck_assert_msg(strcmp(dump, exp) == 0, "%s: got %s, want %s", t->yaml, dump, exp);
	want = json_ok(exp);
	if (t->type == json_type_double)	/* json-c reads "1" as an integer */
		ck_assert(json_object_get_double(v) == strtod(t->json, NULL));
	else
		ck_assert(kc_json_equal(json_object_array_get_idx(got, 0), want));
	json_object_put(want);
	kc_free(dump);
	json_object_put(got);
	kc_free(exp);
	kc_free(yaml);
}
END_TEST

/* ------------------------------------------------------------------------
 * Map keys: typed scalars turn into the string Go gives them.
 */

static const struct key_case {
	const char	*yaml;
	const char	*key;
} key_cases[] = {
	{ "1: x",			"1" },
	{ "+1: x",			"1" },
	{ "0x10: x",			"16" },
	{ "0644: x",			"420" },
	{ "1_000: x",			"1000" },
	{ "18446744073709551615: x",	"18446744073709551615" },
	{ "true: x",			"true" },
	{ "True: x",			"true" },
	{ "FALSE: x",			"false" },
	{ "1.5: x",			"1.5" },
	{ "1.0: x",			"1" },
	{ "0.1: x",			"0.1" },
	{ "1e6: x",			"1e+06" },
	{ "123456.5: x",		"123456.5" },
	{ "1234567.0: x",		"1.234567e+06" },
	{ "1e-5: x",			"1e-05" },
	{ "3.14159265358979: x",	"3.1415927" },
	{ ".inf: x",			".inf" },
	{ "-.Inf: x",			"-.inf" },
	{ ".NaN: x",			".nan" },
	{ "yes: x",			"yes" },
	{ "n: x",			"n" },
	{ "\"1\": x",			"1" },
	{ "'true': x",			"true" },
	{ "\"\": x",			"" },
	{ "\"null\": x",		"null" },
	{ "!!str 0x10: x",		"0x10" },
	{ "!!int \"0x10\": x",		"16" },
	{ "2001-12-14: x",		"2001-12-14" },
	{ "app.kubernetes.io/name: x",	"app.kubernetes.io/name" },
	{ "\"<<\": x",			"<<" },
	{ "? |\n  block\n: x",		"block\n" },
};

START_TEST(key_typing)
{
	const struct key_case *t = &key_cases[_i];
	struct json_object *docs = yaml_ok(t->yaml, NULL), *o, *v;

	o = json_object_array_get_idx(docs, 0);
	ck_assert(json_object_is_type(o, json_type_object));
	ck_assert_int_eq(json_object_object_length(o), 1);
	ck_assert_msg(json_object_object_get_ex(o, t->key, &v), "%s: no key \"%s\" in %s",
	    t->yaml, t->key, json_object_to_json_string(o));
	ck_assert_str_eq(json_object_get_string(v), "x");
	json_object_put(docs);
}
END_TEST

/* ------------------------------------------------------------------------
 * Streams: documents, empty documents, directives.
 */

static const struct stream_case {
	const char	*yaml;
	const char	*json;
} stream_cases[] = {
	{ "",					"[]" },
	{ "# only a comment\n",			"[]" },
	{ "---\n",				"[]" },
	{ "---\n---\n...\n",			"[]" },
	{ "--- # comment\n...\n---\n",		"[]" },
	{ "a: 1\n",				"[{\"a\":1}]" },
	{ "a: 1\n---\nb: 2\n",			"[{\"a\":1},{\"b\":2}]" },
	{ "---\na: 1\n...\n---\nb: 2\n...\n",	"[{\"a\":1},{\"b\":2}]" },
	{ "---\n# c\n---\na: 1\n---\n",		"[{\"a\":1}]" },
	{ "--- 1\n--- two\n--- [3]\n",		"[1,\"two\",[3]]" },
	{ "--- null\n--- ~\n",			"[null,null]" },
	{ "--- \"\"\n",				"[\"\"]" },
	{ "--- !!str\n",			"[\"\"]" },
	{ "--- |\n  text\n",			"[\"text\\n\"]" },
	{ "%YAML 1.2\n---\na: 1\n",		"[{\"a\":1}]" },
	{ "%YAML 1.1\n---\na: 1\n",		"[{\"a\":1}]" },
	{ "%TAG !k! tag:k8s.io,2024:\n---\na: !k!x 1\n", "[{\"a\":\"1\"}]" },
	{ "a: 1\r\nb: [x, y]\r\n",		"[{\"a\":1,\"b\":[\"x\",\"y\"]}]" },
	{ "\xef\xbb\xbf" "a: 1\n",		"[{\"a\":1}]" },
	{ "{a: {b: [1, {c: d}]}, e: []}",	"[{\"a\":{\"b\":[1,{\"c\":\"d\"}]},\"e\":[]}]" },
	{ "- a\n- - b\n  - c\n- {}\n",		"[[\"a\",[\"b\",\"c\"],{}]]" },
	{ "a:\nb:\n  c:\n",			"[{\"a\":null,\"b\":{\"c\":null}}]" },
	{ "k: v # comment\n# more\n",		"[{\"k\":\"v\"}]" },
	{ "\"quoted key\": 'single'\n",		"[{\"quoted key\":\"single\"}]" },
	{ "? complex\n: value\n",		"[{\"complex\":\"value\"}]" },
	{ "a: 'x''y'\n",			"[{\"a\":\"x'y\"}]" },
	{ "a: \"\\u00e9\\x41\"\n",		"[{\"a\":\"éA\"}]" },
	{ "emoji: 🚀\n",			"[{\"emoji\":\"🚀\"}]" },
};

START_TEST(streams)
{
	assert_stream(stream_cases[_i].yaml, stream_cases[_i].json);
}
END_TEST

START_TEST(utf16_input)
{
	/* "a: 1\n" in UTF-16LE with a byte-order mark. */
	static const char text[] = "\xff\xfe" "a\0:\0 \0" "1\0\n\0";
	struct json_object *o = NULL, *want = json_ok("[{\"a\":1}]");
	struct kc_status st = { 0 };

	ck_assert_int_eq(kc_yaml_parse(text, sizeof(text) - 1, NULL, &o, &st), 0);
	ck_assert(kc_json_equal(o, want));
	json_object_put(o);
	json_object_put(want);
}
END_TEST

START_TEST(null_text)
{
	struct json_object *o = NULL;
	struct kc_status st = { 0 };

	ck_assert_int_eq(kc_yaml_parse(NULL, 0, NULL, &o, &st), 0);
	ck_assert_uint_eq(json_object_array_length(o), 0);
	json_object_put(o);
	o = SENTINEL;
	ck_assert_int_eq(kc_yaml_parse(NULL, 3, NULL, &o, &st), -EINVAL);
	ck_assert_ptr_eq(o, SENTINEL);
}
END_TEST

START_TEST(parse_one)
{
	struct json_object *o = SENTINEL;
	struct kc_status st = { 0 };
	const char *two = "a: 1\n---\nb: 2\n";

	ck_assert_int_eq(kc_yaml_parse_one("a: 1\n", 5, NULL, &o, &st), 0);
	ck_assert_int_eq(kc_json_int(o, -1, "a"), 1);
	json_object_put(o);

	o = SENTINEL;
	ck_assert_int_eq(kc_yaml_parse_one("--- 5\n", 6, NULL, &o, &st), 0);
	ck_assert_int_eq(json_object_get_int(o), 5);
	json_object_put(o);

	/* A null document is JSON null, which json-c spells NULL. */
	o = SENTINEL;
	ck_assert_int_eq(kc_yaml_parse_one("null\n", 5, NULL, &o, &st), 0);
	ck_assert_ptr_null(o);

	o = SENTINEL;
	ck_assert_int_eq(kc_yaml_parse_one(two, strlen(two), NULL, &o, &st), KC_EPARSE);
	ck_assert_str_eq(st.message, "expected one YAML document, found 2");
	ck_assert_ptr_eq(o, SENTINEL);

	ck_assert_int_eq(kc_yaml_parse_one("# none\n---\n", 11, NULL, &o, &st), KC_EPARSE);
	ck_assert_str_eq(st.message, "expected one YAML document, found 0");
	ck_assert_ptr_eq(o, SENTINEL);

	ck_assert_int_eq(kc_yaml_parse_one("a: [", 4, NULL, &o, &st), KC_EPARSE);
	ck_assert_str_eq(st.message, "line 2, column 1: did not find expected node content "
	    "(while parsing a flow node)");
	ck_assert_ptr_eq(o, SENTINEL);

	/* A NULL status is allowed on every path. */
	ck_assert_int_eq(kc_yaml_parse_one(two, strlen(two), NULL, &o, NULL), KC_EPARSE);
	ck_assert_int_eq(kc_yaml_parse("a: *x", 5, NULL, &o, NULL), KC_EPARSE);
	ck_assert_ptr_eq(o, SENTINEL);
}
END_TEST

/* ------------------------------------------------------------------------
 * Anchors, aliases and merge keys.
 */

static const struct stream_case anchor_cases[] = {
	{ "a: &x 1\nb: *x\n",				"[{\"a\":1,\"b\":1}]" },
	{ "a: &x {k: v}\nb: *x\n",
	  "[{\"a\":{\"k\":\"v\"},\"b\":{\"k\":\"v\"}}]" },
	{ "- &a [1, 2]\n- *a\n- [*a]\n",		"[[[1,2],[1,2],[[1,2]]]]" },
	{ "a: &x 1\nb: &x 2\nc: *x\n",			"[{\"a\":1,\"b\":2,\"c\":2}]" },
	{ "a: &n\nb: *n\n",				"[{\"a\":null,\"b\":null}]" },
	{ "a: &s \"\"\nb: *s\n",			"[{\"a\":\"\",\"b\":\"\"}]" },
	{ "a: &f 0.1\nb: *f\n",				"[{\"a\":0.1,\"b\":0.1}]" },
	{ "&k 0x10: a\nb: *k\n",			"[{\"16\":\"a\",\"b\":16}]" },
	{ "a: &k name\n*k : x\n",			"[{\"a\":\"name\",\"name\":\"x\"}]" },
	{ "a: &k 1.5\n*k : x\n",			"[{\"a\":1.5,\"1.5\":\"x\"}]" },
	{ "--- &r [1]\n",				"[[1]]" },
	/* an alias names the closest anchor before it, even one inside */
	{ "a: &x [&x 1, *x]\nb: *x\n",			"[{\"a\":[1,1],\"b\":1}]" },
	{ "a: &x {k: &x v}\nb: *x\n",
	  "[{\"a\":{\"k\":\"v\"},\"b\":\"v\"}]" },
	{ "a: &a\n  b: &b [x]\n  c: *b\nd: *a\n",
	  "[{\"a\":{\"b\":[\"x\"],\"c\":[\"x\"]},\"d\":{\"b\":[\"x\"],\"c\":[\"x\"]}}]" },
	/* merge keys */
	{ "b: &b {x: 1, y: 2}\nm:\n  <<: *b\n  y: 3\n",
	  "[{\"b\":{\"x\":1,\"y\":2},\"m\":{\"x\":1,\"y\":3}}]" },
	{ "b: &b {x: 1, y: 2}\nm: {y: 3, <<: *b}\n",
	  "[{\"b\":{\"x\":1,\"y\":2},\"m\":{\"y\":3,\"x\":1}}]" },
	{ "a: &a {x: 1}\nb: &b {x: 2, y: 2}\nm: {<<: [*a, *b], z: 3}\n",
	  "[{\"a\":{\"x\":1},\"b\":{\"x\":2,\"y\":2},\"m\":{\"x\":1,\"y\":2,\"z\":3}}]" },
	{ "m: {<<: {x: 1, y: 1}, y: 2}\n",		"[{\"m\":{\"x\":1,\"y\":2}}]" },
	{ "m: {<<: [{x: 1}, {x: 2, y: 2}]}\n",		"[{\"m\":{\"x\":1,\"y\":2}}]" },
	{ "m: {<<: []}\n",				"[{\"m\":{}}]" },
	{ "a: &a {x: 1}\nb: &b {<<: *a, y: 2}\nc: {<<: *b, z: 3}\n",
	  "[{\"a\":{\"x\":1},\"b\":{\"x\":1,\"y\":2},\"c\":{\"x\":1,\"y\":2,\"z\":3}}]" },
	{ "a: &a {x: {deep: 1}}\nm:\n  <<: *a\n",
	  "[{\"a\":{\"x\":{\"deep\":1}},\"m\":{\"x\":{\"deep\":1}}}]" },
	{ "m: {\"<<\": 1}\n",				"[{\"m\":{\"<<\":1}}]" },
	{ "a: &a {x: 1}\nm: {<<: *a, x: 2}\n",
	  "[{\"a\":{\"x\":1},\"m\":{\"x\":2}}]" },
	{ "m: {<<: &i {x: 1}}\nn: *i\n",		"[{\"m\":{\"x\":1},\"n\":{\"x\":1}}]" },
	/* the Kubernetes idiom: shared container defaults */
	{ "x-defaults: &d\n  imagePullPolicy: Always\n  resources: {limits: {cpu: 1}}\n"
	  "containers:\n- <<: *d\n  name: a\n- <<: *d\n  name: b\n  imagePullPolicy: Never\n",
	  "[{\"x-defaults\":{\"imagePullPolicy\":\"Always\","
	  "\"resources\":{\"limits\":{\"cpu\":1}}},"
	  "\"containers\":[{\"imagePullPolicy\":\"Always\",\"resources\":{\"limits\":{\"cpu\":1}},"
	  "\"name\":\"a\"},{\"imagePullPolicy\":\"Never\",\"resources\":{\"limits\":{\"cpu\":1}},"
	  "\"name\":\"b\"}]}]" },
};

START_TEST(anchors)
{
	assert_stream(anchor_cases[_i].yaml, anchor_cases[_i].json);
}
END_TEST

START_TEST(alias_copies)
{
	/* Each alias is a deep copy: changing one leaves the others alone. */
	const char *yaml = "a: &x {k: [1]}\nb: *x\nm: {<<: *x}\n";
	struct json_object *docs = yaml_ok(yaml, NULL), *o, *a, *b, *m;

	o = json_object_array_get_idx(docs, 0);
	a = kc_json_get(o, "a", "k");
	b = kc_json_get(o, "b", "k");
	m = kc_json_get(o, "m", "k");
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_ne(a, b);
	ck_assert_ptr_ne(a, m);
	ck_assert_ptr_ne(b, m);
	ck_assert_int_eq(json_object_array_add(b, json_object_new_int(2)), 0);
	ck_assert_uint_eq(json_object_array_length(a), 1);
	ck_assert_uint_eq(json_object_array_length(m), 1);
	ck_assert_int_eq(kc_json_set_str(kc_json_get(o, "a"), "new", "v"), 0);
	ck_assert_ptr_null(kc_json_get(o, "b", "new"));
	json_object_put(docs);
}
END_TEST

/* ------------------------------------------------------------------------
 * Errors, with the line and column they report.
 */

static const struct error_case {
	const char	*yaml;
	int		 code;
	const char	*where;		/* the message starts with this */
	const char	*what;		/* and contains this */
} error_cases[] = {
	/* malformed YAML, from libyaml */
	{ "a:\n  b: 1\n c: 2\n",	KC_EPARSE, "line 3, column 2: ",
	  "did not find expected key (while parsing a block mapping at line 1, column 1)" },
	{ "a:\n  - 1\n  b: 2\n",	KC_EPARSE, "line 3, column 3: ",
	  "did not find expected '-' indicator" },
	{ "a: [1, 2\n",			KC_EPARSE, "line 2, column 1: ",
	  "did not find expected ',' or ']' (while parsing a flow sequence at line 1, column 4)" },
	{ "a: [1, 2\nb: 3\n",		KC_EPARSE, "line 2, column 2: ",
	  "did not find expected ',' or ']'" },
	{ "{a: 1\n",			KC_EPARSE, "line 2, column 1: ",
	  "did not find expected ',' or '}'" },
	{ "[1, 2]]\n",			KC_EPARSE, "line 1, column 7: ",
	  "did not find expected <document start>" },
	{ "a:\n\tb: 1\n",		KC_EPARSE, "line 2, column 1: ",
	  "found character that cannot start any token" },
	{ "a:\n\tb: 1\n",		KC_EPARSE, "line 2, column 1: ",
	  "tabs cannot indent YAML" },
	{ "\xef\xbb\xbf" "a:\n\tb: 1\n", KC_EPARSE, "line 2, column 1: ",
	  "tabs cannot indent YAML" },
	{ "key: value: x\n",		KC_EPARSE, "line 1, column 11: ",
	  "mapping values are not allowed in this context" },
	{ "- a\nb: 1\n",		KC_EPARSE, "line 2, column 1: ",
	  "did not find expected '-' indicator" },
	{ "a: \"abc\n",			KC_EPARSE, "line 2, column 1: ",
	  "found unexpected end of stream (while scanning a quoted scalar at line 1, column 4)" },
	{ "a: 'x\n",			KC_EPARSE, "line 2, column 1: ",
	  "found unexpected end of stream" },
	{ "a: *\n",			KC_EPARSE, "line 1, column 5: ",
	  "while scanning an alias" },
	{ "a: !<tag\n",			KC_EPARSE, "line 1, column 9: ",
	  "while scanning a tag" },
	{ "%YAML 2.0\n---\na: 1\n",	KC_EPARSE, "line 1, column 1: ",
	  "found incompatible YAML document" },
	{ "a: \"\xff\"\n",		KC_EPARSE, "line 1, column 5: ",
	  "invalid leading UTF-8 octet (byte 0xFF)" },
	{ "ok: 1\nbad: \xc3\n",		KC_EPARSE, "line 2, column 7: ",
	  "invalid trailing UTF-8 octet (byte 0x0A)" },
	/* aliases */
	{ "a: 1\nb: *nope\n",		KC_EPARSE, "line 2, column 4: ",
	  "unknown alias \"*nope\"" },
	{ "a: &x 1\n---\nb: *x\n",	KC_EPARSE, "line 3, column 4: ",
	  "unknown alias \"*x\"" },
	{ "a: &a [1, *a]\n",		KC_EPARSE, "line 1, column 11: ",
	  "alias \"*a\" refers to a node that contains it" },
	{ "a: &x 1\nb: &x [*x]\n",	KC_EPARSE, "line 2, column 8: ",
	  "alias \"*x\" refers to a node that contains it" },
	{ "a: &x {k: [{j: *x}]}\n",	KC_EPARSE, "line 1, column 16: ",
	  "alias \"*x\" refers to a node that contains it" },
	{ "b: *later\nc: &later 1\n",	KC_EPARSE, "line 1, column 4: ",
	  "unknown alias \"*later\"" },
	/* keys */
	{ "? [a, b]\n: 1\n",		KC_EPARSE, "line 1, column 3: ",
	  "a mapping key must be a scalar, not a sequence" },
	{ "? {a: 1}\n: 2\n",		KC_EPARSE, "line 1, column 3: ",
	  "a mapping key must be a scalar, not a mapping" },
	{ "x: 1\n[a]: 1\n",		KC_EPARSE, "line 2, column 1: ",
	  "a mapping key must be a scalar, not a sequence" },
	{ "{a: 1}: 2\n",		KC_EPARSE, "line 1, column 1: ",
	  "a mapping key must be a scalar, not a mapping" },
	{ "a: &s [1]\n*s : 2\n",	KC_EPARSE, "line 2, column 1: ",
	  "a mapping key must be a scalar; alias \"*s\" is a sequence" },
	{ "a: &m {k: v}\n*m : 2\n",	KC_EPARSE, "line 2, column 1: ",
	  "alias \"*m\" is a mapping" },
	{ "a: 1\nnull: 2\n",		KC_EPARSE, "line 2, column 1: ",
	  "a mapping key cannot be null" },
	{ "~: 2\n",			KC_EPARSE, "line 1, column 1: ",
	  "a mapping key cannot be null" },
	{ "? \n: x\n",			KC_EPARSE, "line 1, column 2: ",
	  "a mapping key cannot be null" },
	{ "a: &n\n*n : x\n",		KC_EPARSE, "line 2, column 1: ",
	  "a mapping key cannot be null" },
	{ "\"a\\0b\": 1\n",		KC_EPARSE, "line 1, column 1: ",
	  "a mapping key cannot contain a NUL character" },
	/* duplicate keys, after typing */
	{ "a: 1\na: 2\n",		KC_EPARSE, "line 2, column 1: ",
	  "duplicate mapping key \"a\"" },
	{ "{a: 1, a: 2}\n",		KC_EPARSE, "line 1, column 8: ",
	  "duplicate mapping key \"a\"" },
	{ "m:\n  x: 1\n  y: 2\n  x: 3\n", KC_EPARSE, "line 4, column 3: ",
	  "duplicate mapping key \"x\"" },
	{ "1: a\n\"1\": b\n",		KC_EPARSE, "line 2, column 1: ",
	  "duplicate mapping key \"1\"" },
	{ "0x10: a\n16: b\n",		KC_EPARSE, "line 2, column 1: ",
	  "duplicate mapping key \"16\"" },
	{ "true: a\nTrue: b\n",		KC_EPARSE, "line 2, column 1: ",
	  "duplicate mapping key \"true\"" },
	{ "a: &k x\nx: 1\n*k : 2\n",	KC_EPARSE, "line 3, column 1: ",
	  "duplicate mapping key \"x\"" },
	{ "b: &b {x: 1}\nm: {<<: *b, z: 1, z: 2}\n", KC_EPARSE, "line 2, column 19: ",
	  "duplicate mapping key \"z\"" },
	{ "a: &a {x: 1}\nm:\n  <<: *a\n  <<: *a\n", KC_EPARSE, "line 4, column 3: ",
	  "duplicate mapping key \"<<\"" },
	/* merge values */
	{ "m:\n  <<: 1\n",		KC_EPARSE, "line 2, column 7: ",
	  "the merge key \"<<\" needs a mapping or a sequence of mappings" },
	{ "s: &s str\nm: {<<: *s}\n",	KC_EPARSE, "line 2, column 9: ",
	  "the merge key \"<<\" needs a mapping" },
	{ "a: &a {x: 1}\nm: {<<: [*a, 1]}\n", KC_EPARSE, "line 2, column 9: ",
	  "item 2 is not a mapping" },
	{ "m: {<<: }\n",		KC_EPARSE, "line 1, column 9: ",
	  "the merge key \"<<\" needs a mapping" },
	/* numbers JSON cannot hold */
	{ "x: .inf\n",			KC_EPARSE, "line 1, column 4: ",
	  "\".inf\" is not a number JSON can hold" },
	{ "- -.Inf\n",			KC_EPARSE, "line 1, column 3: ",
	  "is not a number JSON can hold" },
	{ "- +.INF\n",			KC_EPARSE, "line 1, column 3: ",
	  "is not a number JSON can hold" },
	{ "a:\n  b: .nan\n",		KC_EPARSE, "line 2, column 6: ",
	  "\".nan\" is not a number JSON can hold" },
	{ "x: !!float .NaN\n",		KC_EPARSE, "line 1, column 4: ",
	  "is not a number JSON can hold" },
	/* tags */
	{ "a: !!int x\n",		KC_EPARSE, "line 1, column 4: ",
	  "cannot read \"x\" as !!int" },
	{ "a: !!int 1.5\n",		KC_EPARSE, "line 1, column 4: ",
	  "cannot read \"1.5\" as !!int" },
	{ "a: !!bool yes\n",		KC_EPARSE, "line 1, column 4: ",
	  "cannot read \"yes\" as !!bool" },
	{ "a: !!null x\n",		KC_EPARSE, "line 1, column 4: ",
	  "cannot read \"x\" as !!null" },
	{ "a: !!float 1Gi\n",		KC_EPARSE, "line 1, column 4: ",
	  "cannot read \"1Gi\" as !!float" },
	{ "a: !!map x\n",		KC_EPARSE, "line 1, column 4: ",
	  "!!map tag on a scalar" },
	{ "a: !!seq {}\n",		KC_EPARSE, "line 1, column 4: ",
	  "!!seq tag on a mapping" },
	{ "a: !!map [1]\n",		KC_EPARSE, "line 1, column 4: ",
	  "!!map tag on a sequence" },
	{ "a: !!str [1]\n",		KC_EPARSE, "line 1, column 4: ",
	  "!!str tag on a sequence" },
	{ "a: !!int {b: 1}\n",		KC_EPARSE, "line 1, column 4: ",
	  "!!int tag on a mapping" },
};

START_TEST(errors)
{
	const struct error_case *t = &error_cases[_i];
	struct kc_status st;

	yaml_fails(t->yaml, strlen(t->yaml), NULL, t->code, &st);
	ck_assert_msg(has_prefix(st.message, t->where), "%s: message \"%s\", want \"%s...\"",
	    t->yaml, st.message, t->where);
	ck_assert_msg(strstr(st.message, t->what) != NULL, "%s: message \"%s\" lacks \"%s\"",
	    t->yaml, st.message, t->what);
}
END_TEST

START_TEST(nul_in_input)
{
	static const char text[] = "a: 1\nb: x\0y\n";
	struct kc_status st;

	yaml_fails(text, sizeof(text) - 1, NULL, KC_EPARSE, &st);
	ck_assert_str_eq(st.message,
	    "line 2, column 5: control characters are not allowed (byte 0x00)");
}
END_TEST

/* ------------------------------------------------------------------------
 * Limits: nodes (aliases expanded), depth, size.
 */

static const char billion_laughs[] =
    "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
    "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
    "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";

START_TEST(billion_laughs_bounded)
{
	struct kc_status st;

	/* 9^9 strings; the default limit stops it at the alias that passes 2^20. */
	yaml_fails(billion_laughs, strlen(billion_laughs), NULL, -E2BIG, &st);
	ck_assert_str_eq(st.message,
	    "line 7, column 8: more than 1048576 YAML nodes (aliases expanded)");
	yaml_fails(billion_laughs, strlen(billion_laughs),
	    &(struct kc_yaml_opts){ .max_nodes = 1000 }, -E2BIG, &st);
	ck_assert_str_eq(st.message,
	    "line 4, column 8: more than 1000 YAML nodes (aliases expanded)");
}
END_TEST

START_TEST(merge_laughs_bounded)
{
	const char *yaml =
	    "a: &a {a1: 1, a2: 2, a3: 3, a4: 4, a5: 5, a6: 6, a7: 7, a8: 8}\n"
	    "b: &b {b: [*a, *a, *a, *a, *a, *a, *a, *a]}\n"
	    "c: &c {c: [*b, *b, *b, *b, *b, *b, *b, *b]}\n"
	    "d: &d {<<: [*c, *c, *c, *c, *c, *c, *c, *c]}\n"
	    "e: &e {e: [*d, *d, *d, *d, *d, *d, *d, *d]}\n";
	struct kc_status st;
	struct json_object *o;

	/* A merge counts what its aliases expand to, like any other use. */
	yaml_fails(yaml, strlen(yaml), &(struct kc_yaml_opts){ .max_nodes = 10000 },
	    -E2BIG, &st);
	ck_assert_str_eq(st.message,
	    "line 4, column 41: more than 10000 YAML nodes (aliases expanded)");
	o = yaml_ok(yaml, NULL);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(json_object_array_get_idx(o, 0),
	    "e", "e")), 8);
	json_object_put(o);
}
END_TEST

START_TEST(node_limit_exact)
{
	/* Every node counts: the sequence and its three items are four. */
	struct json_object *o = yaml_ok("[1, 2, 3]", &(struct kc_yaml_opts){ .max_nodes = 4 });
	struct kc_status st;

	json_object_put(o);
	yaml_fails("[1, 2, 3]", 9, &(struct kc_yaml_opts){ .max_nodes = 3 }, -E2BIG, &st);
	ck_assert_str_eq(st.message, "line 1, column 8: more than 3 YAML nodes (aliases expanded)");

	/* A mapping, its key and its value are three; the alias adds one. */
	o = yaml_ok("{a: &x 1, b: *x}", &(struct kc_yaml_opts){ .max_nodes = 5 });
	json_object_put(o);
	yaml_fails("{a: &x 1, b: *x}", 16, &(struct kc_yaml_opts){ .max_nodes = 4 }, -E2BIG,
	    &st);
	ck_assert(has_prefix(st.message, "line 1, column 14: "));

	/* The count runs over the whole stream. */
	yaml_fails("--- [1]\n--- [2]\n", 16, &(struct kc_yaml_opts){ .max_nodes = 3 },
	    -E2BIG, &st);
	ck_assert(has_prefix(st.message, "line 2, column 6: "));
}
END_TEST

/* "[" x n, then "1", then "]" x n. */
static char *
nested_flow(unsigned n)
{
	char *s = kc_malloc(2 * (size_t)n + 2);
	char *p = s;

	ck_assert_ptr_nonnull(s);
	for (unsigned i = 0; i < n; i++)
		*p++ = '[';
	*p++ = '1';
	for (unsigned i = 0; i < n; i++)
		*p++ = ']';
	*p = '\0';
	return s;
}

START_TEST(depth_limit)
{
	struct kc_status st;
	struct json_object *o, *v;
	char *s;
	unsigned levels = 0;

	s = nested_flow(KC_YAML_DEPTH_MAX);
	o = yaml_ok(s, NULL);
	for (v = json_object_array_get_idx(o, 0); json_object_is_type(v, json_type_array);
	    v = json_object_array_get_idx(v, 0))
		levels++;
	ck_assert_uint_eq(levels, KC_YAML_DEPTH_MAX);
	json_object_put(o);
	kc_free(s);

	s = nested_flow(KC_YAML_DEPTH_MAX + 1);
	yaml_fails(s, strlen(s), NULL, -E2BIG, &st);
	ck_assert_str_eq(st.message, "line 1, column 101: YAML nests deeper than 100 levels");
	kc_free(s);

	/* A huge nesting fails as early, without building anything. */
	s = nested_flow(200000);
	yaml_fails(s, strlen(s), NULL, -E2BIG, &st);
	ck_assert(has_prefix(st.message, "line 1, column 101: "));
	kc_free(s);

	o = yaml_ok("a:\n  b:\n    - c", &(struct kc_yaml_opts){ .max_depth = 3 });
	json_object_put(o);
	yaml_fails("a:\n  b:\n    - [c]", 17, &(struct kc_yaml_opts){ .max_depth = 3 }, -E2BIG,
	    &st);
	ck_assert_str_eq(st.message, "line 3, column 7: YAML nests deeper than 3 levels");
}
END_TEST

START_TEST(depth_limit_aliases)
{
	/* An alias brings its anchor's depth along. */
	const char *ok = "a: &a [[1]]\nb: *a\n";
	const char *deep = "a: &a [[1]]\nb: [*a]\n";
	struct kc_yaml_opts opts = { .max_depth = 3 };
	struct json_object *o;
	struct kc_status st;

	o = yaml_ok(ok, &opts);
	json_object_put(o);
	yaml_fails(deep, strlen(deep), &opts, -E2BIG, &st);
	ck_assert_str_eq(st.message,
	    "line 2, column 5: alias \"*a\" nests deeper than 3 levels");

	/*
	 * Depth is the YAML's, aliases expanded, merge values included: a
	 * merge nests its mapping under the key before flattening it.
	 */
	yaml_fails("a: &a {x: [1]}\nm: {<<: *a}\n", 26, &opts, -E2BIG, &st);
	ck_assert_str_eq(st.message,
	    "line 2, column 9: alias \"*a\" nests deeper than 3 levels");
	opts.max_depth = 4;
	o = yaml_ok("a: &a {x: [1]}\nm: &m {<<: *a}\nn: *m\n", &opts);
	json_object_put(o);
	yaml_fails("a: &a {x: [1]}\nm: &m {<<: *a}\nn: [*m]\n", 38, &opts, -E2BIG, &st);
	ck_assert_str_eq(st.message,
	    "line 3, column 5: alias \"*m\" nests deeper than 4 levels");
}
END_TEST

START_TEST(size_limit)
{
	struct kc_yaml_opts opts = { .max_size = 10 };
	struct json_object *o;
	struct kc_status st;
	char *big;

	o = yaml_ok("a: 1234567", &opts);	/* exactly 10 bytes */
	json_object_put(o);
	yaml_fails("a: 12345678", 11, &opts, -E2BIG, &st);
	ck_assert_str_eq(st.message, "YAML input of 11 bytes is larger than the limit of 10");

	big = kc_malloc(KC_YAML_SIZE_MAX + 1);
	ck_assert_ptr_nonnull(big);
	memset(big, ' ', KC_YAML_SIZE_MAX + 1);
	yaml_fails(big, KC_YAML_SIZE_MAX + 1, NULL, -E2BIG, &st);
	ck_assert(strstr(st.message, "larger than the limit of 16777216") != NULL);
	kc_free(big);
}
END_TEST

/* ------------------------------------------------------------------------
 * Kubernetes manifests, against the JSON kubectl makes of them.
 */

static const struct fixture_case {
	const char	*yaml;
	const char	*json;
	bool		 one;		/* the JSON is the document, not the stream */
} fixture_cases[] = {
	{ "yaml/deployment.yaml",	"yaml/deployment.json",		true },
	{ "yaml/crd.yaml",		"yaml/crd.json",		true },
	{ "yaml/service-configmap.yaml", "yaml/service-configmap.json",	false },
	{ "yaml/kubeconfig.yaml",	"yaml/kubeconfig.json",		true },
};

START_TEST(fixtures)
{
	const struct fixture_case *t = &fixture_cases[_i];
	struct json_object *got = NULL, *want = NULL;
	struct kc_status st = { 0 };
	char *yaml, *json, *dump;
	size_t ylen, jlen;
	int r;

	yaml = tu_fixture(t->yaml, &ylen);
	json = tu_fixture(t->json, &jlen);
	if (t->one)
		r = kc_yaml_parse_one(yaml, ylen, NULL, &got, &st);
	else
		r = kc_yaml_parse(yaml, ylen, NULL, &got, &st);
	ck_assert_msg(r == 0, "%s: %s", t->yaml, st.message);
	ck_assert_int_eq(kc_json_parse(json, jlen, &want, &st), 0);
	dump = kc_json_dump(got, NULL);
	ck_assert_msg(kc_json_equal(got, want), "%s: got %s", t->yaml, dump);
	kc_free(dump);
	json_object_put(got);
	json_object_put(want);
	kc_free(json);
	kc_free(yaml);
}
END_TEST

START_TEST(fixture_details)
{
	struct json_object *dep = NULL, *docs = NULL, *cm, *c0;
	struct kc_status st = { 0 };
	size_t len;
	char *text;

	text = tu_fixture("yaml/deployment.yaml", &len);
	ck_assert_int_eq(kc_yaml_parse_one(text, len, NULL, &dep, &st), 0);
	kc_free(text);
	ck_assert_int_eq(kc_json_int(dep, -1, "spec", "replicas"), 3);
	ck_assert_str_eq(kc_json_str(dep, "spec", "selector", "matchLabels", "tier"), "backend");
	ck_assert_str_eq(kc_json_str(dep, "spec", "strategy", "rollingUpdate", "maxSurge"),
	    "25%");
	c0 = json_object_array_get_idx(kc_json_get(dep, "spec", "template", "spec",
	    "containers"), 0);
	ck_assert_str_eq(kc_json_str(c0, "resources", "requests", "cpu"), "250m");
	ck_assert_int_eq(kc_json_int(c0, -1, "resources", "limits", "cpu"), 2);
	ck_assert_int_eq(kc_json_int(json_object_array_get_idx(kc_json_get(dep, "spec",
	    "template", "spec", "volumes"), 0), -1, "configMap", "defaultMode"), 0644);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(c0, "env"), 1),
	    "value"), "true");
	json_object_put(dep);

	text = tu_fixture("yaml/service-configmap.yaml", &len);
	ck_assert_int_eq(kc_yaml_parse(text, len, NULL, &docs, &st), 0);
	kc_free(text);
	ck_assert_uint_eq(json_object_array_length(docs), 2);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(docs, 0), "kind"), "Service");
	cm = json_object_array_get_idx(docs, 1);
	ck_assert_str_eq(kc_json_str(cm, "data", "run.sh"),
	    "#!/bin/sh\nset -eu\nexec trainer --config /etc/trainer/trainer.yaml \"$@\"");
	ck_assert_str_eq(kc_json_str(cm, "data", "motd"), "Welcome to Trainyard.\n\n\n");
	ck_assert_str_eq(kc_json_str(cm, "data", "trainer.yaml"),
	    "epochs: 10\noptimizer:\n  name: adam\n  lr: 0.0003\n");
	ck_assert_str_eq(kc_json_str(cm, "data", "indent-indicator"),
	    "  starts with two spaces\nthen none\n");
	json_object_put(docs);
}
END_TEST

/* ------------------------------------------------------------------------
 * Dumping.
 */

START_TEST(dump_exact)
{
	struct json_object *o = json_ok(
	    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
	    "\"metadata\":{\"name\":\"c\",\"labels\":{}},"
	    "\"data\":{\"on\":\"yes\",\"t\":\"true\",\"n\":\"123\",\"e\":\"\",\"z\":\"null\","
	    "\"f\":\"1.5\",\"d\":\"2001-12-14\",\"m\":\"a\\nb\\n\",\"s\":\"a: b\"},"
	    "\"list\":[1,-2,0.5,1.0,true,null,[],[\"x\",{\"k\":\"v\"}]]}");
	const char *want =
	    "apiVersion: v1\n"
	    "kind: ConfigMap\n"
	    "metadata:\n"
	    "  name: c\n"
	    "  labels: {}\n"
	    "data:\n"
	    "  \"on\": \"yes\"\n"
	    "  t: \"true\"\n"
	    "  \"n\": \"123\"\n"
	    "  e: \"\"\n"
	    "  z: \"null\"\n"
	    "  f: \"1.5\"\n"
	    "  d: \"2001-12-14\"\n"
	    "  m: |\n"
	    "    a\n"
	    "    b\n"
	    "  s: 'a: b'\n"
	    "list:\n"
	    "- 1\n"
	    "- -2\n"
	    "- 0.5\n"
	    "- 1.0\n"
	    "- true\n"
	    "- null\n"
	    "- []\n"
	    "- - x\n"
	    "  - k: v\n";
	size_t len = 0;
	char *y = kc_yaml_dump(o, &len);

	ck_assert_ptr_nonnull(y);
	ck_assert_str_eq(y, want);
	ck_assert_uint_eq(len, strlen(want));
	kc_free(y);
	json_object_put(o);
}
END_TEST

START_TEST(dump_scalars)
{
	struct json_object *o;
	char *y;

	y = kc_yaml_dump(NULL, NULL);
	ck_assert_str_eq(y, "null\n");
	kc_free(y);

	o = json_object_new_string("plain");
	y = kc_yaml_dump(o, NULL);
	ck_assert_str_eq(y, "plain\n");
	kc_free(y);
	json_object_put(o);

	o = json_object_new_double(INFINITY);
	y = kc_yaml_dump(o, NULL);
	ck_assert_str_eq(y, ".inf\n");
	kc_free(y);
	json_object_put(o);

	o = json_object_new_double(-INFINITY);
	y = kc_yaml_dump(o, NULL);
	ck_assert_str_eq(y, "-.inf\n");
	kc_free(y);
	json_object_put(o);

	o = json_object_new_double(NAN);
	y = kc_yaml_dump(o, NULL);
	ck_assert_str_eq(y, ".nan\n");
	kc_free(y);
	json_object_put(o);

	/* Bytes that are not UTF-8 come out as U+FFFD, as Go's JSON does. */
	o = json_object_new_string_len("a\xff" "b\xc3", 4);
	y = kc_yaml_dump(o, NULL);
	ck_assert_str_eq(y, "a\xef\xbf\xbd" "b\xef\xbf\xbd\n");
	kc_free(y);
	json_object_put(o);
}
END_TEST

/* Values that need care on the way out, each checked by a round trip. */
static const char *const round_trip_cases[] = {
	"{\"s\":[\"true\",\"False\",\"123\",\"-1\",\"0x1F\",\"0o7\",\"0644\",\"1_000\",\"1.5\","
	"\".5\",\"1e3\",\".inf\",\"-.Inf\",\".nan\",\"null\",\"~\",\"\",\"yes\",\"No\",\"on\","
	"\"OFF\",\"y\",\"n\",\"<<\",\"=\",\"2001-12-14\",\"1:30\",\"-1:30:00.5\",\"a: b\","
	"\"- x\",\"#c\",\"x #c\",\"[a]\",\"{a}\",\"*a\",\"&a\",\"!t\",\"%p\",\"@x\",\"`x\","
	"\"|\",\">\",\"?\",\"-\",\":\",\",\",\" lead\",\"trail \",\"tab\\tin\",\"\\u0001\","
	"\"x\\u0000y\",\"é🚀\",\"\\u2028\",\"\\ufeffbom\",\"'q'\",\"\\\"dq\\\"\",\"\\\\\"]}",
	"{\"m\":[\"a\\nb\",\"a\\nb\\n\",\"a\\n\\n\",\"\\n\",\"\\nlead\",\"  indented\\nx\","
	"\"trail \\nx\",\"x\\n  more\\n\",\"\\ttab\\nx\",\"a\\r\\nb\",\"long line that goes on "
	"and on and on past eighty columns without any line break in it at all, really\"]}",
	"{\"1\":1,\"true\":2,\"\":3,\"<<\":4,\"null\":5,\"yes\":6,\"a: b\":7,\"- x\":8,"
	"\"k\\ny\":9,\" sp\":10,\"1.5\":11,\"é\":12}",
	"{\"n\":[0,-0,1,-1,9223372036854775807,-9223372036854775808,18446744073709551615,"
	"0.1,1.0,-0.0,1.5e300,-2.5e-300,5e-324,1e21,1e20,123456789.125,0.000001,1e-7]}",
	"{\"b\":[true,false,null],\"e\":[{},[],[[]],[{}],{\"a\":{}}],\"deep\":"
	"[[[[[[[[[[{\"k\":[[[\"v\"]]]}]]]]]]]]]]}",
	"\"root\"",
	"\"true\"",
	"12",
	"[]",
	"{}",
	"\"multi\\nline\\n\"",
};

static void
assert_round_trip(struct json_object *o)
{
	struct json_object *back = NULL;
	struct kc_status st = { 0 };
	size_t len = 0;
	char *y = kc_yaml_dump(o, &len), *a, *b;

	ck_assert_ptr_nonnull(y);
	ck_assert_uint_eq(len, strlen(y));
	ck_assert_msg(kc_yaml_parse_one(y, len, NULL, &back, &st) == 0, "%s: %s", y,
	    st.message);
	a = kc_json_dump(o, NULL);
	b = kc_json_dump(back, NULL);
	ck_assert_msg(kc_json_equal(o, back), "dumped\n%s\nread back %s, want %s", y, b, a);
	kc_free(a);
	kc_free(b);
	json_object_put(back);
	kc_free(y);
}

START_TEST(round_trip_values)
{
	struct json_object *o = json_ok(round_trip_cases[_i]);

	assert_round_trip(o);
	json_object_put(o);
}
END_TEST

START_TEST(round_trip_fixtures)
{
	struct json_object *docs = NULL;
	struct kc_status st = { 0 };
	size_t len;
	char *text;

	text = tu_fixture(fixture_cases[_i].yaml, &len);
	ck_assert_int_eq(kc_yaml_parse(text, len, NULL, &docs, &st), 0);
	kc_free(text);
	for (size_t i = 0; i < json_object_array_length(docs); i++)
		assert_round_trip(json_object_array_get_idx(docs, i));
	assert_round_trip(docs);
	json_object_put(docs);
}
END_TEST

/* ------------------------------------------------------------------------
 * Garbage: mutated manifests never crash, every error has a position,
 * and whatever still parses survives a dump and a parse unchanged.
 */

static const char mutation_seed[] =
    "%YAML 1.2\n---\n"
    "base: &b {cpu: 1, mem: 2Gi, list: [1, 2.5, \"x\"], n: ~}\n"
    "m: {<<: *b, cpu: 4}\n"
    "l: {<<: [*b, {z: 1}], y: !!str 12, f: !!float 3, i: !!int \"0x10\"}\n"
    "? complex\n: value\n"
    "\"q\": 'single'\n0x10: hex\n1.5: f\ntrue: b\n"
    "seq:\n- &s |\n  block\n  text\n- *s\n- >-\n  folded\n"
    "- - nested\n  - [flow, {a: b}]\n...\n--- plain root\n--- !!map {}\n--- [1, 2, 3]\n";

static uint64_t
xorshift(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

START_TEST(mutations)
{
	static const char alphabet[] = "-:[]{}&*!|>'\"#%@`,? \n\t\\0123456789.~<eEx_+";
	struct kc_yaml_opts opts = { .max_nodes = 20000 };
	uint64_t state = 0x9e3779b97f4a7c15ULL + (uint64_t)_i;
	size_t flen, cap, n;
	char *fixture, *base, *buf;
	unsigned parsed = 0;

	fixture = tu_fixture("yaml/deployment.yaml", &flen);
	base = kc_asprintf("%s%s", _i == 0 ? fixture : "", mutation_seed);
	ck_assert_ptr_nonnull(base);
	kc_free(fixture);
	n = strlen(base);
	cap = n + 400;
	buf = kc_malloc(cap);
	ck_assert_ptr_nonnull(buf);

	for (unsigned iter = 0; iter < 1500; iter++) {
		struct json_object *o = SENTINEL, *back = NULL;
		struct kc_status st = { 0 };
		size_t len = n, ylen = 0;
		unsigned muts = 1 + (unsigned)(xorshift(&state) % 6);
		char *y;
		int r;

		memcpy(buf, base, n);
		for (unsigned m = 0; m < muts; m++) {
			size_t pos = (size_t)(xorshift(&state) % len);

			switch (xorshift(&state) % 4) {
			case 0:
				buf[pos] = alphabet[xorshift(&state) % (sizeof(alphabet) - 1)];
				break;
			case 1:
				buf[pos] = (char)xorshift(&state);
				break;
			case 2:
				if (len > 1) {
					memmove(buf + pos, buf + pos + 1, len - pos - 1);
					len--;
				}
				break;
			default:
				if (len + 40 < cap) {
					size_t src = (size_t)(xorshift(&state) % (len - pos));
					size_t k = KC_MIN((size_t)(1 + xorshift(&state) % 40),
					    len - pos - src);

					/* Repeat a piece of what follows 'pos' at 'pos'. */
					memmove(buf + pos + k, buf + pos, len - pos);
					memmove(buf + pos, buf + pos + k + src, k);
					len += k;
				}
				break;
			}
		}
		r = kc_yaml_parse(buf, len, &opts, &o, &st);
		if (r < 0) {
			ck_assert_msg(r == KC_EPARSE || r == -E2BIG, "%d %s", r, st.message);
			ck_assert_msg(has_prefix(st.message, "line "), "%s", st.message);
			ck_assert_ptr_eq(o, SENTINEL);
			continue;
		}
		parsed++;
		y = kc_yaml_dump(o, &ylen);
		ck_assert_ptr_nonnull(y);
		r = kc_yaml_parse_one(y, ylen, NULL, &back, &st);
		ck_assert_msg(r == 0, "%s\n%s", st.message, y);
		ck_assert_msg(kc_json_equal(o, back), "round trip differs:\n%s", y);
		json_object_put(back);
		json_object_put(o);
		kc_free(y);
	}
	/* The mutations must leave enough valid YAML to test the round trip. */
	ck_assert_uint_gt(parsed, 50);
	kc_free(buf);
	kc_free(base);
}
END_TEST

/* ------------------------------------------------------------------------
 * Allocation failures: -ENOMEM with *ret untouched, until it works.
 */

START_TEST(parse_alloc_failures)
{
	/* Anchors, merges, long numbers, typed keys: every kc_ allocation site. */
	const char *extra =
	    "---\n"
	    "a: &a {x: 1, 0x10: 2, 1.5: 3, true: 4}\n"
	    "b: &b [*a, *a]\n"
	    "c: {<<: *a, y: 5}\n"
	    "d: 0000000000000000000000000000000000000000000000000000000000000000000000012\n"
	    "e: 3.1415926535897932384626433832795028841971693993751058209749445923078164\n"
	    "f: [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]\n"
	    "&k g: *b\n"
	    "h: *k\n";
	size_t len, total;
	char *fixture, *text;
	unsigned budget;
	int r;

	fixture = tu_fixture("yaml/deployment.yaml", &len);
	text = kc_asprintf("%s%s", fixture, extra);
	ck_assert_ptr_nonnull(text);
	kc_free(fixture);
	len = strlen(text);

	fail_alloc_count();
	for (budget = 0;; budget++) {
		struct json_object *o = SENTINEL;
		struct kc_status st = { 0 };

		fail_alloc_after(budget);
		r = kc_yaml_parse(text, len, NULL, &o, &st);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert_ptr_ne(o, SENTINEL);
			ck_assert_uint_eq(json_object_array_length(o), 2);
			json_object_put(o);
			break;
		}
		ck_assert_msg(r == -ENOMEM, "budget %u: %d %s", budget, r, st.message);
		ck_assert_ptr_eq(o, SENTINEL);
	}
	total = fail_alloc_count();
	/* The loop must have walked real allocation sites. */
	ck_assert_uint_gt(budget, 10);
	ck_assert_uint_gt(total, budget);
	kc_free(text);
}
END_TEST

START_TEST(parse_one_alloc_failures)
{
	const char *text = "a: &x {k: [1, 2]}\nb: *x\n";
	int r;

	for (size_t budget = 0;; budget++) {
		struct json_object *o = SENTINEL;

		fail_alloc_after(budget);
		r = kc_yaml_parse_one(text, strlen(text), NULL, &o, NULL);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert(json_object_is_type(o, json_type_object));
			json_object_put(o);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_eq(o, SENTINEL);
	}
}
END_TEST

START_TEST(dump_alloc_failures)
{
	struct json_object *o = json_ok(round_trip_cases[0]);
	char *want = kc_yaml_dump(o, NULL), *y;
	size_t budget;

	ck_assert_ptr_nonnull(want);
	for (budget = 0;; budget++) {
		size_t len = 12345;

		fail_alloc_after(budget);
		y = kc_yaml_dump(o, &len);
		fail_alloc_after(SIZE_MAX);
		if (y != NULL)
			break;
		ck_assert_uint_eq(len, 12345);
	}
	ck_assert_uint_gt(budget, 0);
	ck_assert_str_eq(y, want);
	kc_free(y);
	kc_free(want);
	json_object_put(o);
}
END_TEST

Suite *
yaml_suite(void)
{
	Suite *s = suite_create("yaml");
	TCase *tc;

	tc = tcase_create("scalars");
	tcase_add_loop_test(tc, scalar_typing, 0, (int)KC_ARRAY_SIZE(scalar_cases));
	tcase_add_loop_test(tc, key_typing, 0, (int)KC_ARRAY_SIZE(key_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("streams");
	tcase_add_loop_test(tc, streams, 0, (int)KC_ARRAY_SIZE(stream_cases));
	tcase_add_test(tc, utf16_input);
	tcase_add_test(tc, null_text);
	tcase_add_test(tc, parse_one);
	suite_add_tcase(s, tc);

	tc = tcase_create("anchors");
	tcase_add_loop_test(tc, anchors, 0, (int)KC_ARRAY_SIZE(anchor_cases));
	tcase_add_test(tc, alias_copies);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_loop_test(tc, errors, 0, (int)KC_ARRAY_SIZE(error_cases));
	tcase_add_test(tc, nul_in_input);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, billion_laughs_bounded);
	tcase_add_test(tc, merge_laughs_bounded);
	tcase_add_test(tc, node_limit_exact);
	tcase_add_test(tc, depth_limit);
	tcase_add_test(tc, depth_limit_aliases);
	tcase_add_test(tc, size_limit);
	suite_add_tcase(s, tc);

	tc = tcase_create("kubernetes");
	tcase_add_loop_test(tc, fixtures, 0, (int)KC_ARRAY_SIZE(fixture_cases));
	tcase_add_test(tc, fixture_details);
	suite_add_tcase(s, tc);

	tc = tcase_create("dump");
	tcase_add_test(tc, dump_exact);
	tcase_add_test(tc, dump_scalars);
	tcase_add_loop_test(tc, round_trip_values, 0, (int)KC_ARRAY_SIZE(round_trip_cases));
	tcase_add_loop_test(tc, round_trip_fixtures, 0, (int)KC_ARRAY_SIZE(fixture_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("garbage");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, mutations, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("alloc");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, parse_alloc_failures);
	tcase_add_test(tc, parse_one_alloc_failures);
	tcase_add_test(tc, dump_alloc_failures);
	suite_add_tcase(s, tc);

	return s;
}

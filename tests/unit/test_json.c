/*
 * test_json.c: typed accessors, strict parsing, copies and dumps.
 */
#include <errno.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/json.h>
#include <kc/patch.h>
#include <kc/yaml.h>

#include "testutil.h"

static struct json_object *
parse(const char *text)
{
	struct json_object *o = NULL;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_json_parse(text, strlen(text), &o, &st) == 0, "%s", st.message);
	return o;
}

START_TEST(accessors)
{
	struct json_object *o = parse(
	    "{\"metadata\":{\"name\":\"r1\",\"generation\":3,"
	    "\"labels\":{\"trainyard.dev/run\":\"r1\"}},"
	    "\"spec\":{\"suspend\":true,\"nodes\":\"8\"}}");

	ck_assert_str_eq(kc_json_str(o, "metadata", "name"), "r1");
	ck_assert_str_eq(kc_json_str(o, "metadata", "labels", "trainyard.dev/run"), "r1");
	ck_assert_ptr_null(kc_json_str(o, "metadata", "missing"));
	ck_assert_ptr_null(kc_json_str(o, "metadata", "generation"));	/* not a string */
	ck_assert_ptr_null(kc_json_str(o, "metadata", "name", "deeper"));
	ck_assert_int_eq(kc_json_int(o, -1, "metadata", "generation"), 3);
	ck_assert_int_eq(kc_json_int(o, -1, "spec", "nodes"), -1);	/* a string */
	ck_assert(kc_json_bool(o, false, "spec", "suspend"));
	ck_assert(kc_json_bool(o, true, "spec", "missing"));
	ck_assert_ptr_nonnull(kc_json_obj_of(o, "spec"));
	ck_assert_ptr_null(kc_json_arr_of(o, "spec"));
	ck_assert_ptr_null(kc_json_str(NULL, "x"));
	json_object_put(o);
}
END_TEST

START_TEST(setters)
{
	struct json_object *o = json_object_new_object(), *md;
	char *s;

	md = kc_json_ensure_obj(o, "metadata");
	ck_assert_ptr_nonnull(md);
	ck_assert_ptr_eq(kc_json_ensure_obj(o, "metadata"), md);
	ck_assert_int_eq(kc_json_set_str(md, "name", "a/b"), 0);
	ck_assert_int_eq(kc_json_set_int(md, "generation", 2), 0);
	ck_assert_int_eq(kc_json_set_bool(o, "x", false), 0);
	ck_assert_int_eq(kc_json_put(o, "items", json_object_new_array()), 0);
	ck_assert_int_eq(kc_json_append(kc_json_arr_of(o, "items"),
	    json_object_new_int(1)), 0);
	ck_assert_int_eq(kc_json_put(o, "bad", NULL), -ENOMEM);
	s = kc_json_dump(o, NULL);
	ck_assert_str_eq(s,
	    "{\"metadata\":{\"name\":\"a/b\",\"generation\":2},\"x\":false,\"items\":[1]}");
	kc_free(s);
	ck_assert_int_eq(kc_json_set_str(md, "name", NULL), 0);
	ck_assert_ptr_null(kc_json_get(md, "name"));
	json_object_put(o);
}
END_TEST

START_TEST(strict_parse)
{
	static const char *const bad[] = {
		"",
		"{",
		"{\"a\":1",
		"{\"a\":1}x",
		"{\"a\":1} {\"b\":2}",
		"[1,2,]",
		"nul",
		"\"unterminated",
		/* json-c takes these even in strict mode; JSON has no such numbers. */
		"NaN",
		"[1, Infinity]",
		"{\"a\": {\"b\": [-Infinity]}}",
	};
	struct json_object *o = NULL;
	struct kc_status st;

	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
		kc_status_clear(&st);
		ck_assert_msg(kc_json_parse(bad[i], strlen(bad[i]), &o, &st) == KC_EPARSE,
		    "accepted: %s", bad[i]);
		ck_assert_ptr_null(o);
		ck_assert_msg(strncmp(st.message, "JSON: ", 6) == 0, "%s", st.message);
	}
	/* Past a double's range is JSON still, and prints as it came. */
	ck_assert_int_eq(kc_json_parse("[-1e400]", 8, &o, NULL), 0);
	{
		char *text = kc_json_dump(o, NULL);

		ck_assert_str_eq(text, "[-1e400]");
		kc_free(text);
	}
	json_object_put(o);
	o = NULL;
	/* Trailing white space is fine; a bare number at the end completes. */
	ck_assert_int_eq(kc_json_parse("{\"a\":1}\n  ", 10, &o, NULL), 0);
	json_object_put(o);
	{
		struct json_object *sentinel = json_object_new_object();

		o = sentinel;
		ck_assert_int_eq(kc_json_parse("null", 4, &o, NULL), 0);
		ck_assert_ptr_null(o);
		json_object_put(sentinel);
	}
	ck_assert_int_eq(kc_json_parse("42", 2, &o, NULL), 0);
	ck_assert_int_eq(json_object_get_int(o), 42);
	json_object_put(o);
}
END_TEST

START_TEST(depth_bound)
{
	char deep[2 * (KC_JSON_DEPTH_MAX + 10) + 1];
	struct json_object *o = NULL;
	struct kc_status st = { 0 };
	size_t n = KC_JSON_DEPTH_MAX + 10;

	for (size_t i = 0; i < n; i++) {
		deep[i] = '[';
		deep[2 * n - 1 - i] = ']';
	}
	deep[2 * n] = '\0';
	ck_assert_int_eq(kc_json_parse(deep, 2 * n, &o, &st), KC_EPARSE);
	ck_assert_ptr_null(o);
	ck_assert_ptr_nonnull(strstr(st.message, "nesting"));
}
END_TEST

/*
 * An object as deep as YAML and patches allow, inside a List, parses: the
 * client reads back whatever the devcluster accepted.
 */
START_TEST(depth_fits_other_bounds)
{
	size_t n = KC_YAML_DEPTH_MAX > KC_PATCH_DEPTH_MAX ? KC_YAML_DEPTH_MAX :
	    KC_PATCH_DEPTH_MAX;
	struct json_object *o = NULL;
	struct kc_status st = { 0 };
	struct kc_buf b;

	kc_buf_init(&b, 1 << 16);
	ck_assert_int_eq(kc_buf_puts(&b, "{\"kind\":\"List\",\"items\":["), 0);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(kc_buf_puts(&b, "{\"a\":"), 0);
	ck_assert_int_eq(kc_buf_puts(&b, "1"), 0);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(kc_buf_putc(&b, '}'), 0);
	ck_assert_int_eq(kc_buf_puts(&b, "]}"), 0);
	ck_assert_msg(kc_json_parse(b.data, b.len, &o, &st) == 0, "%s", st.message);
	ck_assert_ptr_nonnull(o);
	json_object_put(o);
	kc_buf_free(&b);
}
END_TEST

START_TEST(copy_equal_dump)
{
	struct json_object *a = parse("{\"x\":[1,{\"y\":null}],\"z\":\"s\",\"f\":1.5}");
	struct json_object *b = parse("{\"z\":\"s\",\"f\":1.5,\"x\":[1,{\"y\":null}]}");
	struct json_object *c;
	char *s1, *s2;

	ck_assert(kc_json_equal(a, b));
	c = kc_json_copy(a);
	ck_assert_ptr_ne(c, a);
	ck_assert(kc_json_equal(a, c));
	ck_assert_int_eq(kc_json_set_str(c, "z", "t"), 0);
	ck_assert(!kc_json_equal(a, c));
	ck_assert_str_eq(kc_json_str(a, "z"), "s");
	s1 = kc_json_dump(a, NULL);
	s2 = kc_json_dump(a, NULL);
	ck_assert_str_eq(s1, s2);
	ck_assert_str_eq(s1, "{\"x\":[1,{\"y\":null}],\"z\":\"s\",\"f\":1.5}");
	kc_free(s1);
	kc_free(s2);
	s1 = kc_json_dump(NULL, NULL);
	ck_assert_str_eq(s1, "null");
	kc_free(s1);
	json_object_put(a);
	json_object_put(b);
	json_object_put(c);
}
END_TEST

START_TEST(nullable_setters)
{
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();
	struct json_object *v = (struct json_object *)&v;
	char *s;

	ck_assert_ptr_nonnull(o);
	ck_assert_ptr_nonnull(a);
	/* kc_json_put() takes NULL for a failed constructor ... */
	ck_assert_int_eq(kc_json_put(o, "x", NULL), -ENOMEM);
	ck_assert(!json_object_object_get_ex(o, "x", NULL));
	/* ... the nullable forms store JSON null. */
	ck_assert_int_eq(kc_json_put_null(o, "a"), 0);
	ck_assert_int_eq(kc_json_put_nullable(o, "b", NULL), 0);
	ck_assert_int_eq(kc_json_put_nullable(o, "c", json_object_new_int(1)), 0);
	ck_assert_int_eq(kc_json_append_nullable(a, NULL), 0);
	ck_assert_int_eq(kc_json_append_nullable(a, json_object_new_string("s")), 0);
	ck_assert_int_eq(kc_json_put_nullable(o, "d", a), 0);
	ck_assert(json_object_object_get_ex(o, "a", &v));
	ck_assert_ptr_null(v);
	s = kc_json_dump(o, NULL);
	ck_assert_str_eq(s, "{\"a\":null,\"b\":null,\"c\":1,\"d\":[null,\"s\"]}");
	kc_free(s);
	/* Replacing a member with null drops the old value. */
	ck_assert_int_eq(kc_json_put_null(o, "c"), 0);
	ck_assert(json_object_object_get_ex(o, "c", &v));
	ck_assert_ptr_null(v);
	json_object_put(o);
}
END_TEST

START_TEST(equal_numeric)
{
	static const struct {
		const char	*a, *b;
		bool		 exact, numeric;
	} cases[] = {
		{ "1", "1", true, true },
		{ "1", "1.0", false, true },
		{ "1.0", "1e0", true, true },
		{ "1", "2", false, false },
		{ "1", "\"1\"", false, false },
		{ "-0.5", "-5e-1", true, true },
		{ "9223372036854775807", "9223372036854775807", true, true },
		{ "9223372036854775807", "9223372036854775806", false, false },
		{ "18446744073709551615", "18446744073709551615", true, true },
		{ "{\"a\":[1,{\"b\":2.0}],\"c\":null}",
		  "{\"c\":null,\"a\":[1.0,{\"b\":2}]}", false, true },
		{ "{\"a\":1}", "{\"a\":1,\"b\":1}", false, false },
		{ "[1,2]", "[2,1]", false, false },
		{ "\"a\\u0000b\"", "\"a\\u0000c\"", false, false },
		{ "\"a\\u0000b\"", "\"a\\u0000b\"", true, true },
		{ "true", "1", false, false },
		{ "null", "null", true, true },
		{ "null", "0", false, false },
		{ "{}", "[]", false, false },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct json_object *a = NULL, *b = NULL;

		ck_assert_int_eq(kc_json_parse(cases[i].a, strlen(cases[i].a), &a, NULL), 0);
		ck_assert_int_eq(kc_json_parse(cases[i].b, strlen(cases[i].b), &b, NULL), 0);
		ck_assert_msg(kc_json_equal(a, b) == cases[i].exact, "exact %zu", i);
		ck_assert_msg(kc_json_equal_numeric(a, b) == cases[i].numeric,
		    "numeric %zu", i);
		ck_assert_msg(kc_json_equal_numeric(b, a) == cases[i].numeric,
		    "numeric %zu reversed", i);
		json_object_put(a);
		json_object_put(b);
	}
}
END_TEST

/* Trees past KC_JSON_EQUAL_DEPTH_MAX compare unequal instead of recursing on. */
START_TEST(equal_numeric_depth)
{
	struct json_object *a = json_object_new_array(), *b = json_object_new_array();
	struct json_object *ca = a, *cb = b;

	for (int i = 0; i < KC_JSON_EQUAL_DEPTH_MAX + 5; i++) {
		struct json_object *na = json_object_new_array(), *nb = json_object_new_array();

		ck_assert_int_eq(kc_json_append(ca, na), 0);
		ck_assert_int_eq(kc_json_append(cb, nb), 0);
		ca = na;
		cb = nb;
	}
	ck_assert(!kc_json_equal_numeric(a, b));
	json_object_put(a);
	json_object_put(b);
}
END_TEST

/* Raw values print their text unquoted, stay raw in copies, and are strings. */
START_TEST(raw_values)
{
	struct json_object *o, *raw, *c, *s;
	char *text;

	raw = kc_json_new_raw("{\"f:a\":{},\"k\":[1,\"x/y\"]}", 24);
	ck_assert_ptr_nonnull(raw);
	ck_assert(kc_json_is_raw(raw));
	ck_assert(json_object_is_type(raw, json_type_string));
	ck_assert_ptr_nonnull(s = json_object_new_string("{}"));
	ck_assert(!kc_json_is_raw(s));
	ck_assert(!kc_json_is_raw(NULL));
	o = json_object_new_object();
	ck_assert_int_eq(kc_json_put(o, "fields", raw), 0);
	ck_assert_int_eq(kc_json_put(o, "s", s), 0);
	text = kc_json_dump(o, NULL);
	ck_assert_str_eq(text, "{\"fields\":{\"f:a\":{},\"k\":[1,\"x/y\"]},\"s\":\"{}\"}");
	kc_free(text);
	c = kc_json_copy(o);
	ck_assert_ptr_nonnull(c);
	ck_assert(kc_json_is_raw(kc_json_get(c, "fields")));
	ck_assert(!kc_json_is_raw(kc_json_get(c, "s")));
	ck_assert(kc_json_equal(c, o));
	text = kc_json_dump(c, NULL);
	ck_assert_str_eq(text, "{\"fields\":{\"f:a\":{},\"k\":[1,\"x/y\"]},\"s\":\"{}\"}");
	kc_free(text);
	json_object_put(c);
	json_object_put(o);
}
END_TEST


Suite *
json_suite(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, accessors);
	tcase_add_test(tc, setters);
	tcase_add_test(tc, strict_parse);
	tcase_add_test(tc, depth_bound);
	tcase_add_test(tc, depth_fits_other_bounds);
	tcase_add_test(tc, copy_equal_dump);
	tcase_add_test(tc, nullable_setters);
	tcase_add_test(tc, equal_numeric);
	tcase_add_test(tc, equal_numeric_depth);
	tcase_add_test(tc, raw_values);
	suite_add_tcase(s, tc);
	return s;
}

/*
 * test_json.c: typed accessors, strict parsing, copies and dumps.
 */
#include <errno.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/json.h>

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

Suite *
json_suite(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, accessors);
	tcase_add_test(tc, setters);
	tcase_add_test(tc, strict_parse);
	tcase_add_test(tc, depth_bound);
	tcase_add_test(tc, copy_equal_dump);
	suite_add_tcase(s, tc);
	return s;
}

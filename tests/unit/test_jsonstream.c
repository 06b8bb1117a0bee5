/*
 * test_jsonstream.c: filters, filtered documents, and object streams in
 * every split, against json-c's own parse of the same text.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/json.h>
#include <kc/jsonstream.h>
#include <kc/str.h>

#include "testutil.h"

/* A pod as the API server sends it, with the members a controller skips. */
static const char pod[] =
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"r-0\","
    "\"namespace\":\"ns\",\"uid\":\"u-1\",\"resourceVersion\":\"42\","
    "\"labels\":{\"trainyard.dev/run\":\"r\",\"a.b/c\":\"d\"},"
    "\"annotations\":{\"big\":\"xxxxxxxxxxxxxxxx\"},"
    "\"managedFields\":[{\"manager\":\"m\",\"fieldsV1\":{\"f:spec\":{\"f:a\":{}}}}],"
    "\"ownerReferences\":[{\"kind\":\"Run\",\"uid\":\"o-1\",\"controller\":true}]},"
    "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"main\",\"env\":"
    "[{\"name\":\"A\",\"value\":\"1\"}]}],\"priority\":-7},"
    "\"status\":{\"phase\":\"Failed\",\"containerStatuses\":[{\"name\":\"main\","
    "\"state\":{\"terminated\":{\"exitCode\":137,\"reason\":\"OOMKilled\"}}}],"
    "\"ratio\":1.50,\"big\":18446744073709551615,\"neg\":-9223372036854775808,"
    "\"huge\":1e400,\"ok\":true,\"nothing\":null,\"esc\":\"a\\u00e9\\n\\\"\"}}";

static const char *const pod_keep[] = {
	"metadata.name", "metadata.labels", "metadata.ownerReferences",
	"spec.nodeName", "status",
};

static struct kc_json_filter *
filter(const char *const *paths, size_t n)
{
	struct kc_json_filter *f = NULL;
	struct kc_status st;

	ck_assert_msg(kc_json_filter_new(paths, n, &f, &st) == 0, "%s", st.message);
	return f;
}

static struct json_object *
parse(const char *text)
{
	struct json_object *o = NULL;
	struct kc_status st;

	ck_assert_msg(kc_json_parse(text, strlen(text), &o, &st) == 0, "%s", st.message);
	return o;
}

START_TEST(filter_paths)
{
	static const char *const bad[] = { "", ".a", "a.", "a..b" };
	struct kc_json_filter *f = NULL;
	struct kc_status st;
	char longpath[KC_JSON_FILTER_PATH_MAX + 2];

	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
		ck_assert_int_eq(kc_json_filter_new(&bad[i], 1, &f, &st), KC_EINVALID);
		ck_assert_ptr_null(f);
		ck_assert_ptr_nonnull(strstr(st.message, "JSON filter"));
	}
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[sizeof(longpath) - 1] = '\0';
	ck_assert_int_eq(kc_json_filter_new(&(const char *){ longpath }, 1, &f, &st),
	    KC_EINVALID);
	ck_assert_int_eq(kc_json_filter_new(bad, KC_JSON_FILTER_PATHS_MAX + 1, &f, &st),
	    KC_EINVALID);
	/* Repeated and overlapping paths: the shorter keeps the member whole. */
	f = filter((const char *const[]){ "spec.nodeName", "spec", "spec.x" }, 3);
	{
		struct json_object *o = NULL;

		ck_assert_int_eq(kc_json_parse_filtered(pod, strlen(pod), f, &o, &st), 0);
		ck_assert_str_eq(kc_json_str(o, "spec", "containers", "0") == NULL ?
		    "none" : "some", "none");
		ck_assert_int_eq(kc_json_int(o, 0, "spec", "priority"), -7);
		ck_assert_ptr_null(kc_json_get(o, "metadata"));
		json_object_put(o);
	}
	kc_json_filter_free(f);
	ck_assert_ptr_null(kc_json_filter_free(NULL));
}
END_TEST

START_TEST(filtered_document)
{
	struct kc_json_filter *f = filter(pod_keep, KC_ARRAY_SIZE(pod_keep));
	struct json_object *o = NULL, *full = parse(pod), *want;
	struct kc_status st;

	ck_assert_msg(kc_json_parse_filtered(pod, strlen(pod), f, &o, &st) == 0, "%s",
	    st.message);
	want = parse("{\"metadata\":{\"name\":\"r-0\",\"labels\":{\"trainyard.dev/run\":"
	    "\"r\",\"a.b/c\":\"d\"},\"ownerReferences\":[{\"kind\":\"Run\",\"uid\":"
	    "\"o-1\",\"controller\":true}]},\"spec\":{\"nodeName\":\"n1\"}}");
	ck_assert(kc_json_equal(kc_json_get(o, "metadata"), kc_json_get(want, "metadata")));
	ck_assert(kc_json_equal(kc_json_get(o, "spec"), kc_json_get(want, "spec")));
	/* The kept status is exactly json-c's, numbers and escapes included. */
	ck_assert(kc_json_equal(kc_json_get(o, "status"), kc_json_get(full, "status")));
	ck_assert_str_eq(json_object_to_json_string_ext(kc_json_get(o, "status"),
	    JSON_C_TO_STRING_PLAIN), json_object_to_json_string_ext(
	    kc_json_get(full, "status"), JSON_C_TO_STRING_PLAIN));
	ck_assert_int_eq(json_object_get_type(kc_json_get(o, "status", "big")),
	    json_type_int);
	ck_assert_int_eq(kc_json_int(o, 0, "status", "neg"), INT64_MIN);
	ck_assert_int_eq(json_object_object_length(o), 3);
	json_object_put(o);
	json_object_put(want);

	/* No filter: the same tree as json-c's. */
	ck_assert_int_eq(kc_json_parse_filtered(pod, strlen(pod), NULL, &o, &st), 0);
	ck_assert(kc_json_equal(o, full));
	json_object_put(o);
	json_object_put(full);

	/* Scalars and null documents, as kc_json_parse() returns them. */
	ck_assert_int_eq(kc_json_parse_filtered(" 12 ", 4, f, &o, &st), 0);
	ck_assert_int_eq(json_object_get_int64(o), 12);
	json_object_put(o);
	o = parse("[]");
	json_object_put(o);
	ck_assert_int_eq(kc_json_parse_filtered("null", 4, f, &o, &st), 0);
	ck_assert_ptr_null(o);
	kc_json_filter_free(f);
}
END_TEST

START_TEST(arrays_are_transparent)
{
	static const char list[] =
	    "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"9\"},\"items\":"
	    "[{\"metadata\":{\"name\":\"a\",\"x\":1},\"spec\":{}},"
	    "{\"metadata\":{\"name\":\"b\"}},7,[{\"metadata\":{\"name\":\"c\",\"y\":2}}]]}";
	static const char *const whole[] = { "kind", "metadata" };
	struct kc_json_filter *f = filter((const char *const[]){ "metadata.name" }, 1);
	struct kc_json_filter *w = NULL;
	struct json_object *o = NULL, *want;
	struct kc_status st;

	ck_assert_int_eq(kc_json_filter_wrap(f, "items", whole, 2, &w), 0);
	ck_assert_int_eq(kc_json_parse_filtered(list, strlen(list), w, &o, &st), 0);
	want = parse("{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"9\"},"
	    "\"items\":[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":\"b\"}},7,"
	    "[{\"metadata\":{\"name\":\"c\"}}]]}");
	ck_assert_msg(kc_json_equal(o, want), "%s", json_object_to_json_string(o));
	json_object_put(o);
	json_object_put(want);
	kc_json_filter_free(w);

	/* Wrapping no filter keeps the member whole. */
	ck_assert_int_eq(kc_json_filter_wrap(NULL, "items", whole, 2, &w), 0);
	ck_assert_int_eq(kc_json_parse_filtered(list, strlen(list), w, &o, &st), 0);
	ck_assert(kc_json_equal(o, want = parse(list)));
	json_object_put(o);
	json_object_put(want);
	kc_json_filter_free(w);
	kc_json_filter_free(f);
}
END_TEST

START_TEST(document_errors)
{
	static const char *const bad[] = {
		"", "  ", "{", "{\"a\":1,}", "{'a':1}", "[1 2]", "{} {}", "{\"a\":\"\xff\"}",
		"nul", "{\"a\":tru}", "{\"a\":1}x", "/* c */ {}", "{\f}", "{\"a\":\v1}",
	};
	struct kc_json_filter *f = filter(pod_keep, KC_ARRAY_SIZE(pod_keep));
	struct json_object *o = NULL;
	struct kc_status st;
	struct kc_buf b;

	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
		ck_assert_msg(kc_json_parse_filtered(bad[i], strlen(bad[i]), f, &o, &st) ==
		    KC_EPARSE, "case %zu", i);
		ck_assert_ptr_null(o);
		ck_assert_str_ne(st.message, "");
	}
	/* Nesting: as deep as kc_json_parse() takes, and not one level more. */
	for (int depth = KC_JSON_DEPTH_MAX; depth <= KC_JSON_DEPTH_MAX + 1; depth++) {
		int r;

		kc_buf_init(&b, 4096);
		for (int i = 0; i < depth; i++)
			ck_assert_int_eq(kc_buf_puts(&b, i % 2 ? "[" : "{\"status\":"), 0);
		for (int i = depth - 1; i >= 0; i--)
			ck_assert_int_eq(kc_buf_puts(&b, i % 2 ? "]" : "}"), 0);
		/* The innermost is an empty array or object either way. */
		r = kc_json_parse(b.data, b.len, &o, NULL);
		json_object_put(o);
		o = NULL;
		ck_assert_int_eq(kc_json_parse_filtered(b.data, b.len, f, &o, &st),
		    r == 0 ? 0 : KC_EPARSE);
		r = o != NULL ? 0 : KC_EPARSE;
		if (r == 0)
			json_object_put(o);
		else
			ck_assert_ptr_nonnull(strstr(st.message, "too deep"));
		o = NULL;
		kc_buf_free(&b);
	}
	kc_json_filter_free(f);
}
END_TEST

/* ---- streams --------------------------------------------------------------------- */

struct seen {
	size_t		 n;
	char		 names[8][16];
	size_t		 stop_at;
	int		 stop_ret;
	bool		 spec_seen;
};

static int
seen_fn(void *arg, struct json_object *obj, struct kc_status *st)
{
	struct seen *s = arg;
	const char *name = kc_json_str(obj, "object", "metadata", "name");

	(void)st;
	ck_assert_uint_lt(s->n, 8);
	(void)kc_strlcpy(s->names[s->n], name != NULL ? name : "", sizeof(s->names[0]));
	if (kc_json_get(obj, "object", "spec", "containers") != NULL)
		s->spec_seen = true;
	s->n++;
	return s->stop_at != 0 && s->n == s->stop_at ? s->stop_ret : 0;
}

static int
feed_split(const char *text, size_t len, size_t cut, size_t max,
    const struct kc_json_filter *f, struct seen *s, struct kc_status *st)
{
	struct kc_json_stream *js = NULL;
	int r;

	ck_assert_int_eq(kc_json_stream_new(&(struct kc_json_stream_opts){
		.filter = f, .max_value = max, .what = "test stream", .unit = "event",
		.fn = seen_fn, .arg = s,
	}, &js), 0);
	if ((r = kc_json_stream_feed(js, text, cut, st)) == 0 &&
	    (r = kc_json_stream_feed(js, text + cut, len - cut, st)) == 0)
		r = kc_json_stream_finish(js, st);
	kc_json_stream_free(js);
	return r;
}

START_TEST(stream_every_split)
{
	struct kc_json_filter *inner = filter(pod_keep, KC_ARRAY_SIZE(pod_keep)), *f = NULL;
	struct kc_buf b;
	struct kc_status st;

	ck_assert_int_eq(kc_json_filter_wrap(inner, "object", (const char *const[]){ "type" },
	    1, &f), 0);
	kc_buf_init(&b, 1 << 16);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(kc_buf_printf(&b, "{\"type\":\"ADDED\",\"object\":%s}%s", pod,
		    i == 0 ? "\n" : i == 1 ? " \r\n\t" : ""), 0);
	for (int filtered = 0; filtered < 2; filtered++)
		for (size_t cut = 0; cut <= b.len; cut++) {
			struct seen s = { 0 };

			ck_assert_msg(feed_split(b.data, b.len, cut, b.len,
			    filtered ? f : NULL, &s, &st) == 0, "cut %zu: %s", cut, st.message);
			ck_assert_uint_eq(s.n, 3);
			ck_assert_str_eq(s.names[2], "r-0");
			ck_assert(s.spec_seen == !filtered);
		}
	kc_buf_free(&b);
	kc_json_filter_free(f);
	kc_json_filter_free(inner);
}
END_TEST

START_TEST(stream_bounds)
{
	static const char ev[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}";
	size_t len = strlen(ev);
	char two[256];
	struct kc_status st;

	/* An event of exactly the bound passes; white space between is free. */
	(void)snprintf(two, sizeof(two), "%s\n\n\n%s", ev, ev);
	for (size_t cut = 0; cut <= strlen(two); cut++) {
		struct seen s = { 0 };

		ck_assert_msg(feed_split(two, strlen(two), cut, len, NULL, &s, &st) == 0,
		    "cut %zu: %s", cut, st.message);
		ck_assert_uint_eq(s.n, 2);
	}
	/* Counted from where each starts, also inside one piece. */
	(void)snprintf(two, sizeof(two), "%s\n\n\n%.*s     %s", ev, 1, ev, ev + 1);
	for (size_t cut = 0; cut <= strlen(two); cut++) {
		struct seen s = { 0 };

		ck_assert_msg(feed_split(two, strlen(two), cut, len + 5, NULL, &s, &st) == 0,
		    "cut %zu: %s", cut, st.message);
		ck_assert_uint_eq(s.n, 2);
	}
	/* The second one byte over. */
	(void)snprintf(two, sizeof(two), "%s\n\n\n%.*s %s", ev, 1, ev, ev + 1);
	for (size_t cut = 0; cut <= strlen(two); cut++) {
		struct seen s = { 0 };

		ck_assert_int_eq(feed_split(two, strlen(two), cut, len, NULL, &s, &st),
		    -E2BIG);
		ck_assert_uint_eq(s.n, 1);
	}
	/* One byte over, wherever the input is split. */
	(void)snprintf(two, sizeof(two), "%s\n\n\n%s", ev, ev);
	for (size_t cut = 0; cut <= strlen(two); cut++) {
		struct seen s = { 0 };

		ck_assert_int_eq(feed_split(two, strlen(two), cut, len - 1, NULL, &s, &st),
		    -E2BIG);
		ck_assert_ptr_nonnull(strstr(st.message, "event larger than"));
		ck_assert_uint_eq(s.n, 0);
	}
}
END_TEST

START_TEST(stream_errors)
{
	static const struct {
		const char	*text;
		size_t		 events;
		const char	*msg;
	} cases[] = {
		{ "x", 0, "expected an event object, got byte 0x78" },
		{ "[]", 0, "expected an event object" },
		{ "{} 7", 1, "expected an event object, got byte 0x37" },
		{ "{}}", 1, "test stream: " },
		{ "{\"a\":[1,]}", 0, "test stream: " },
		{ "{\"a\":\"\xc3\x28\"}", 0, "test stream: " },
		{ "{\"a\":1", 0, "ended inside an event" },
		/* yajl's white space, not JSON's: refused at any split. */
		{ "{\"a\":\f1}", 0, "test stream: invalid byte 0x0c" },
		{ "{\"a\":1\v}", 0, "test stream: invalid byte 0x0b" },
	};
	struct kc_status st;

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++)
		for (size_t cut = 0; cut <= strlen(cases[i].text); cut++) {
			struct seen s = { 0 };
			int r = feed_split(cases[i].text, strlen(cases[i].text), cut, 1024,
			    NULL, &s, &st);

			ck_assert_msg(r == KC_EPARSE, "case %zu cut %zu: %d", i, cut, r);
			ck_assert_msg(strstr(st.message, cases[i].msg) != NULL,
			    "case %zu cut %zu: %s", i, cut, st.message);
			ck_assert_uint_eq(s.n, cases[i].events);
		}
}
END_TEST

START_TEST(stream_callback_stops)
{
	struct kc_json_stream *js = NULL;
	struct seen s = { .stop_at = 2, .stop_ret = -ENOSPC };
	struct kc_status st;

	ck_assert_int_eq(kc_json_stream_new(&(struct kc_json_stream_opts){ .max_value = 64,
	    .fn = seen_fn, .arg = &s }, &js), 0);
	ck_assert_int_eq(kc_json_stream_feed(js, "{}{}{}", 6, &st), -ENOSPC);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_int_eq(kc_json_stream_feed(js, "{}", 2, &st), -EINVAL);
	kc_json_stream_free(js);
	ck_assert_ptr_null(kc_json_stream_free(NULL));
	/* Required options. */
	ck_assert_int_eq(kc_json_stream_new(&(struct kc_json_stream_opts){ .max_value = 1 },
	    &js), -EINVAL);
	ck_assert_int_eq(kc_json_stream_new(&(struct kc_json_stream_opts){ .fn = seen_fn },
	    &js), -EINVAL);
}
END_TEST

START_TEST(oom)
{
	for (size_t budget = 0;; budget++) {
		struct kc_json_filter *f = NULL, *w = NULL;
		struct kc_status st;
		int r;

		fail_alloc_after(budget);
		r = kc_json_filter_new(pod_keep, KC_ARRAY_SIZE(pod_keep), &f, &st);
		if (r == 0)
			r = kc_json_filter_wrap(f, "items", pod_keep, 2, &w);
		fail_alloc_after(SIZE_MAX);
		kc_json_filter_free(w);
		kc_json_filter_free(f);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
	}
}
END_TEST

Suite *
jsonstream_suite(void)
{
	Suite *s = suite_create("jsonstream");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, filter_paths);
	tcase_add_test(tc, filtered_document);
	tcase_add_test(tc, arrays_are_transparent);
	tcase_add_test(tc, document_errors);
	tcase_add_test(tc, stream_every_split);
	tcase_add_test(tc, stream_bounds);
	tcase_add_test(tc, stream_errors);
	tcase_add_test(tc, stream_callback_stops);
	tcase_add_test(tc, oom);
	suite_add_tcase(s, tc);
	return s;
}

/*
 * test_watch.c: the incremental watch decoder driven directly with every
 * kind of chunk split, then kc_watch_run() against the fake transport:
 * resume points, bookmarks, 410s, truncation, limits and cancellation
 * from another thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/client.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/patch.h>
#include <kc/str.h>
#include <kc/watch.h>

#include "../../lib/internal.h"
#include "../fakes/fake_transport.h"
#include "../server/testserver.h"
#include "testutil.h"

#define ck_ok(r, st)	ck_assert_msg((r) == 0, "%s: %s", kc_err_name(r), (st).message)

#define EVENTS_MAX	2048

static const struct kc_resource res_runs = {
	.group = "trainyard.dev", .version = "v1beta1", .resource = "runs",
	.kind = "Run", .namespaced = true,
};

/* What a decoder callback saw. */
struct seen {
	size_t		 n;
	int		 types[EVENTS_MAX];
	char		 rv[EVENTS_MAX][24];
	size_t		 stop_at;	/* return stop_ret at this event; 0: never */
	int		 stop_ret;
};

static int
seen_fn(void *arg, int type, struct json_object *obj, struct kc_status *st)
{
	struct seen *s = arg;
	const char *rv = kc_json_str(obj, "metadata", "resourceVersion");

	(void)st;
	ck_assert_uint_lt(s->n, EVENTS_MAX);
	s->types[s->n] = type;
	(void)kc_strlcpy(s->rv[s->n], rv != NULL ? rv : "", sizeof(s->rv[0]));
	s->n++;
	if (s->stop_at != 0 && s->n == s->stop_at)
		return s->stop_ret;
	return 0;
}

/* Decodes 'text' fed in the given pieces; returns the first error or finish(). */
static int
decode_pieces(const char *text, const size_t *cuts, size_t ncuts, size_t len,
    size_t max_event, struct seen *s, struct kc_status *st)
{
	struct kc__watch_decoder *d = NULL;
	size_t off = 0;
	int r;

	ck_assert_int_eq(kc__watch_decoder_new(max_event, NULL, seen_fn, s, &d), 0);
	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = cuts != NULL && i < ncuts ? cuts[i] : len;

		if ((r = kc__watch_decoder_feed(d, text + off, end - off, st)) != 0)
			goto out;
		off = end;
	}
	r = kc__watch_decoder_finish(d, st);
out:
	kc__watch_decoder_free(d);
	return r;
}

static void
assert_sample_stream(const struct seen *s)
{
	static const int types[] = { KC_WATCH_ADDED, KC_WATCH_MODIFIED,
	    KC_WATCH_BOOKMARK, KC_WATCH_DELETED };
	static const char *const rvs[] = { "401", "405", "450", "460" };

	ck_assert_uint_eq(s->n, 4);
	for (size_t i = 0; i < 4; i++) {
		ck_assert_int_eq(s->types[i], types[i]);
		ck_assert_str_eq(s->rv[i], rvs[i]);
	}
}

/* ---- the decoder -------------------------------------------------------- */

START_TEST(test_decoder_every_split)
{
	size_t len;
	char *text = tu_fixture("watch/watch-stream.jsonl", &len);
	struct kc_status st;

	for (size_t i = 0; i <= len; i++) {
		struct seen s = { 0 };
		int r = decode_pieces(text, &i, 1, len, 0, &s, &st);

		ck_assert_msg(r == 0, "split at %zu: %s: %s", i, kc_err_name(r), st.message);
		assert_sample_stream(&s);
	}
	kc_free(text);
}
END_TEST

START_TEST(test_decoder_two_splits)
{
	size_t len;
	char *text = tu_fixture("watch/watch-stream.jsonl", &len);
	struct kc_status st;

	for (size_t i = 0; i <= len; i += 5)
		for (size_t j = i; j <= len; j += 13) {
			size_t cuts[2] = { i, j };
			struct seen s = { 0 };
			int r = decode_pieces(text, cuts, 2, len, 0, &s, &st);

			ck_assert_msg(r == 0, "splits %zu, %zu: %s", i, j, st.message);
			assert_sample_stream(&s);
		}
	kc_free(text);
}
END_TEST

START_TEST(test_decoder_bytewise)
{
	size_t len;
	char *text = tu_fixture("watch/watch-stream.jsonl", &len);
	size_t *cuts = kc_calloc(len, sizeof(*cuts));
	struct seen s = { 0 };
	struct kc_status st;
	uint32_t x = 12345;
	size_t n = 0;

	ck_assert_ptr_nonnull(cuts);
	for (size_t i = 1; i < len; i++)
		cuts[i - 1] = i;
	ck_assert_int_eq(decode_pieces(text, cuts, len - 1, len, 0, &s, &st), 0);
	assert_sample_stream(&s);

	/* Pieces of pseudo-random sizes, 1 to 64 bytes. */
	for (size_t off = 0; off < len; n++) {
		x = x * 1103515245u + 12345u;
		off += 1 + (x >> 16) % 64;
		cuts[n] = KC_MIN(off, len);
	}
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(decode_pieces(text, cuts, n, len, 0, &s, &st), 0);
	assert_sample_stream(&s);
	kc_free(cuts);
	kc_free(text);
}
END_TEST

START_TEST(test_decoder_error_event_splits)
{
	size_t len;
	char *text = tu_fixture("watch/watch-error-event.json", &len);
	struct kc_status st;

	/* Pretty-printed over many lines: still one event, at every split. */
	for (size_t i = 0; i <= len; i++) {
		struct seen s = { 0 };

		ck_assert_int_eq(decode_pieces(text, &i, 1, len, 0, &s, &st), 0);
		ck_assert_uint_eq(s.n, 1);
		ck_assert_int_eq(s.types[0], KC_WATCH_ERROR);
	}
	kc_free(text);
}
END_TEST

START_TEST(test_decoder_many_per_chunk)
{
	static const char *const seps[] = { "", "\n", "\r\n \t", "\n\n\n" };

	for (size_t k = 0; k < KC_ARRAY_SIZE(seps); k++) {
		struct kc_buf b;
		struct seen s = { 0 };
		struct kc_status st;
		size_t cuts[2];

		kc_buf_init(&b, 1u << 20);
		for (int i = 1; i <= 1000; i++)
			ck_assert_int_eq(kc_buf_printf(&b, "%s{\"type\":\"%s\",\"object\":"
			    "{\"metadata\":{\"name\":\"o%d\",\"resourceVersion\":\"%d\"}}}",
			    seps[k], i % 3 == 0 ? "MODIFIED" : "ADDED", i, i), 0);
		ck_assert_int_eq(decode_pieces(b.data, NULL, 0, b.len, 0, &s, &st), 0);
		ck_assert_uint_eq(s.n, 1000);
		ck_assert_str_eq(s.rv[0], "1");
		ck_assert_int_eq(s.types[2], KC_WATCH_MODIFIED);
		ck_assert_str_eq(s.rv[999], "1000");

		/* The same in three big pieces cut mid-event. */
		memset(&s, 0, sizeof(s));
		cuts[0] = b.len / 3 + 1;
		cuts[1] = 2 * b.len / 3 + 7;
		ck_assert_int_eq(decode_pieces(b.data, cuts, 2, b.len, 0, &s, &st), 0);
		ck_assert_uint_eq(s.n, 1000);
		ck_assert_str_eq(s.rv[999], "1000");
		kc_buf_free(&b);
	}
}
END_TEST

/* An ADDED event of exactly 'len' bytes. */
static char *
event_of_size(size_t len)
{
	static const char head[] = "{\"type\":\"ADDED\",\"object\":{\"pad\":\"";
	static const char tail[] = "\"}}";
	size_t fixed = sizeof(head) - 1 + sizeof(tail) - 1;
	char *e = kc_malloc(len + 1);

	ck_assert_ptr_nonnull(e);
	ck_assert_uint_ge(len, fixed);
	memcpy(e, head, sizeof(head) - 1);
	memset(e + sizeof(head) - 1, 'x', len - fixed);
	memcpy(e + len - (sizeof(tail) - 1), tail, sizeof(tail) - 1);
	e[len] = '\0';
	return e;
}

START_TEST(test_decoder_oversized)
{
	char *ok = event_of_size(100), *big = event_of_size(101);
	struct kc__watch_decoder *d = NULL;
	struct seen s = { 0 };
	struct kc_status st;
	size_t cuts[10];

	/* At the bound, twice, with white space between (which is free). */
	ck_assert_int_eq(kc__watch_decoder_new(100, NULL, seen_fn, &s, &d), 0);
	ck_assert_int_eq(kc__watch_decoder_feed(d, ok, 100, &st), 0);
	ck_assert_int_eq(kc__watch_decoder_feed(d, "\n\n\n\n\n", 5, &st), 0);
	ck_assert_int_eq(kc__watch_decoder_feed(d, ok, 100, &st), 0);
	ck_assert_int_eq(kc__watch_decoder_finish(d, &st), 0);
	ck_assert_uint_eq(s.n, 2);

	/* One byte over: in one piece, then in 10-byte pieces. */
	ck_assert_int_eq(kc__watch_decoder_feed(d, big, 101, &st), -E2BIG);
	ck_assert_ptr_nonnull(strstr(st.message, "larger than 100"));
	ck_assert_uint_eq(s.n, 2);
	/* A stopped decoder stays stopped. */
	ck_assert_int_eq(kc__watch_decoder_feed(d, ok, 100, &st), -EINVAL);
	d = kc__watch_decoder_free(d);
	ck_assert_ptr_null(d);

	for (size_t i = 0; i < 10; i++)
		cuts[i] = 10 * (i + 1);
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(decode_pieces(big, cuts, 10, 101, 100, &s, &st), -E2BIG);
	ck_assert_uint_eq(s.n, 0);

	/* The default bound is KC_WATCH_EVENT_MAX. */
	ck_assert_int_eq(kc__watch_decoder_new(0, NULL, seen_fn, &s, &d), 0);
	ck_assert_int_eq(kc__watch_decoder_feed(d, big, 101, &st), 0);
	kc__watch_decoder_free(d);
	kc_free(ok);
	kc_free(big);
}
END_TEST

START_TEST(test_decoder_garbage)
{
	static const struct {
		const char *text;
		size_t events;		/* delivered before the error */
	} cases[] = {
		{ "hello", 0 },
		{ "[{\"type\":\"ADDED\",\"object\":{}}]", 0 },
		{ "123 ", 0 },
		{ "\"ADDED\"", 0 },
		{ "{\"type\":\"ADDED\",\"object\":{}}}", 1 },
		{ "{\"type\":\"ADDED\",\"object\":{}} x", 1 },
		{ "{\"type\":\"ADDED\",\"object\":{}},{}", 1 },
		{ "{\"type\":\"NOPE\",\"object\":{}}", 0 },
		{ "{\"type\":\"added\",\"object\":{}}", 0 },
		{ "{\"type\":\"ADDED\"}", 0 },
		{ "{\"type\":\"ADDED\",\"object\":[]}", 0 },
		{ "{\"type\":\"ADDED\",\"object\":null}", 0 },
		{ "{\"type\":7,\"object\":{}}", 0 },
		{ "{\"object\":{}}", 0 },
		{ "{'type':'ADDED','object':{}}", 0 },
		{ "{\"type\":\"ADDED\",\"object\":{},}", 0 },
		{ "{\"type\":\"ADDED\",\"object\":{\"a\":\"\xff\xfe\"}}", 0 },
		{ "\x00{}", 0 },
	};
	struct kc_status st;

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		size_t len = i == KC_ARRAY_SIZE(cases) - 1 ? 3 : strlen(cases[i].text);

		for (size_t cut = 0; cut <= len; cut++) {
			struct seen s = { 0 };
			int r = decode_pieces(cases[i].text, &cut, 1, len, 0, &s, &st);

			ck_assert_msg(r == KC_EPARSE, "case %zu split %zu: %s", i, cut,
			    kc_err_name(r));
			ck_assert_uint_eq(s.n, cases[i].events);
			ck_assert_str_ne(st.message, "");
		}
	}
}
END_TEST

START_TEST(test_decoder_depth)
{
	struct kc_buf b;
	struct seen s = { 0 };
	struct kc_status st;

	/* As deep as the devcluster accepts an object: decoded. */
	kc_buf_init(&b, 4096);
	ck_assert_int_eq(kc_buf_puts(&b, "{\"type\":\"ADDED\",\"object\":"), 0);
	for (int i = 0; i < KC_PATCH_DEPTH_MAX; i++)
		ck_assert_int_eq(kc_buf_puts(&b, "{\"a\":"), 0);
	ck_assert_int_eq(kc_buf_puts(&b, "1"), 0);
	for (int i = 0; i < KC_PATCH_DEPTH_MAX + 1; i++)
		ck_assert_int_eq(kc_buf_putc(&b, '}'), 0);
	ck_assert_msg(decode_pieces(b.data, NULL, 0, b.len, 0, &s, &st) == 0, "%s",
	    st.message);
	ck_assert_uint_eq(s.n, 1);
	kc_buf_free(&b);

	/* Past the JSON bound: refused before anything is delivered. */
	memset(&s, 0, sizeof(s));
	kc_buf_init(&b, 4096);
	ck_assert_int_eq(kc_buf_puts(&b, "{\"type\":\"ADDED\",\"object\":"), 0);
	for (int i = 0; i < KC_JSON_DEPTH_MAX; i++)
		ck_assert_int_eq(kc_buf_puts(&b, "{\"a\":"), 0);
	ck_assert_int_eq(kc_buf_puts(&b, "1"), 0);
	for (int i = 0; i < KC_JSON_DEPTH_MAX + 1; i++)
		ck_assert_int_eq(kc_buf_putc(&b, '}'), 0);
	ck_assert_int_eq(decode_pieces(b.data, NULL, 0, b.len, 0, &s, &st), KC_EPARSE);
	ck_assert_uint_eq(s.n, 0);
	kc_buf_free(&b);
}
END_TEST

START_TEST(test_decoder_truncated)
{
	size_t len;
	char *text = tu_fixture("watch/watch-stream.jsonl", &len);
	struct kc_status st;
	struct seen s = { 0 };

	/* Ending inside the second event: the first was delivered. */
	ck_assert_int_eq(decode_pieces(text, NULL, 0, 400, 0, &s, &st), KC_EPARSE);
	ck_assert_ptr_nonnull(strstr(st.message, "ended inside an event"));
	ck_assert_uint_eq(s.n, 1);
	ck_assert_str_eq(s.rv[0], "401");

	/* Nothing, or only white space, is a clean end. */
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(decode_pieces("", NULL, 0, 0, 0, &s, &st), 0);
	ck_assert_int_eq(decode_pieces(" \n\r\n\t", NULL, 0, 5, 0, &s, &st), 0);
	ck_assert_uint_eq(s.n, 0);
	/* A single opening brace is not. */
	ck_assert_int_eq(decode_pieces("\n{", NULL, 0, 2, 0, &s, &st), KC_EPARSE);
	kc_free(text);
}
END_TEST

START_TEST(test_decoder_callback_stops)
{
	size_t len;
	char *text = tu_fixture("watch/watch-stream.jsonl", &len);
	struct kc__watch_decoder *d = NULL;
	struct seen s = { .stop_at = 2, .stop_ret = 7 };
	struct kc_status st;

	ck_assert_int_eq(kc__watch_decoder_new(0, NULL, seen_fn, &s, &d), 0);
	ck_assert_int_eq(kc__watch_decoder_feed(d, text, len, &st), 7);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_int_eq(kc__watch_decoder_feed(d, "\n", 1, &st), -EINVAL);
	kc__watch_decoder_free(d);

	memset(&s, 0, sizeof(s));
	s.stop_at = 1;
	s.stop_ret = -ENOSPC;
	ck_assert_int_eq(decode_pieces(text, NULL, 0, len, 0, &s, &st), -ENOSPC);
	ck_assert_uint_eq(s.n, 1);
	kc_free(text);
}
END_TEST

START_TEST(test_decoder_oom)
{
	struct seen s = { 0 };
	int r;

	for (size_t budget = 0;; budget++) {
		struct kc__watch_decoder *d = NULL;

		fail_alloc_after(budget);
		r = kc__watch_decoder_new(0, NULL, seen_fn, &s, &d);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			static const char ev[] = "{\"type\":\"ADDED\",\"object\":{}}";

			ck_assert_int_eq(kc__watch_decoder_feed(d, ev, sizeof(ev) - 1,
			    NULL), 0);
			ck_assert_uint_eq(s.n, 1);
			kc__watch_decoder_free(d);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(d);
	}
	ck_assert_ptr_null(kc__watch_decoder_free(NULL));
}
END_TEST

START_TEST(test_type_names)
{
	ck_assert_str_eq(kc_watch_type_name(KC_WATCH_ADDED), "ADDED");
	ck_assert_str_eq(kc_watch_type_name(KC_WATCH_BOOKMARK), "BOOKMARK");
	ck_assert_str_eq(kc_watch_type_name(KC_WATCH_ERROR), "ERROR");
	ck_assert_str_eq(kc_watch_type_name((enum kc_watch_type)0), "UNKNOWN");
	ck_assert_str_eq(kc_watch_type_name((enum kc_watch_type)99), "UNKNOWN");
}
END_TEST

/* ---- kc_watch_run ---------------------------------------------------------- */

static struct kc_rest_config test_rc = { .server = "https://fake.invalid" };

static struct kc_client *
new_client(void)
{
	struct kc_client *cl = NULL;
	struct kc_status st;
	int r;

	r = kc_client_new(&(struct kc_client_opts){ .rc = &test_rc,
	    .ops = &fake_transport_ops }, &cl, &st);
	ck_ok(r, st);
	return cl;
}

/* What a kc_watch_fn saw. */
struct got {
	size_t		 n;
	enum kc_watch_type types[16];
	char		 names[16][16];
	size_t		 stop_at;	/* return stop_ret at this event */
	int		 stop_ret;
};

static int
got_fn(void *arg, enum kc_watch_type type, struct json_object *obj)
{
	struct got *g = arg;
	const char *name = kc_json_str(obj, "metadata", "name");

	ck_assert_uint_lt(g->n, 16);
	ck_assert_int_ne(type, KC_WATCH_ERROR);
	g->types[g->n] = type;
	(void)kc_strlcpy(g->names[g->n], name != NULL ? name : "", sizeof(g->names[0]));
	g->n++;
	if (g->stop_at != 0 && g->n == g->stop_at)
		return g->stop_ret;
	return 0;
}

/* What the client's observer heard. */
struct heard {
	size_t			 n;
	char			 verb[16];
	const struct kc_resource *res;
	int			 http_code;
};

static void
heard_fn(void *arg, const struct kc_request_info *info)
{
	struct heard *h = arg;

	h->n++;
	(void)kc_strlcpy(h->verb, info->verb != NULL ? info->verb : "(null)",
	    sizeof(h->verb));
	h->res = info->res;
	h->http_code = info->http_code;
}

START_TEST(test_run_stream)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = NULL;
	struct kc_watch_result wr;
	struct kc_status st;
	struct got g = { 0 };
	struct heard h = { 0 };
	int r;

	/* The observer (API metrics) hears a watch of runs, not a get of nothing. */
	r = kc_client_new(&(struct kc_client_opts){ .rc = &test_rc,
	    .ops = &fake_transport_ops, .observe = heard_fn, .observe_arg = &h }, &cl, &st);
	ck_ok(r, st);
	ft_load_script(ft, "watch/stream.script");
	r = kc_watch_run(cl, &(struct kc_watch_opts){
		.res = &res_runs,
		.ns = "default",
		.label_selector = "app=demo",
		.resource_version = "400",
		.allow_bookmarks = true,
		.timeout_s = 300,
	}, got_fn, &g, &wr, &st);
	ck_ok(r, st);
	ft_done(ft);
	ck_assert(ft_request(ft, 0)->stream);
	ck_assert(!ft_request(ft, 0)->idempotent);
	ck_assert_uint_eq(g.n, 4);
	ck_assert_int_eq(g.types[0], KC_WATCH_ADDED);
	ck_assert_str_eq(g.names[0], "r1");
	ck_assert_int_eq(g.types[2], KC_WATCH_BOOKMARK);
	ck_assert_int_eq(g.types[3], KC_WATCH_DELETED);
	ck_assert_str_eq(wr.resource_version, "460");
	ck_assert_uint_eq(wr.events, 4);
	ck_assert_uint_eq(wr.added, 1);
	ck_assert_uint_eq(wr.modified, 1);
	ck_assert_uint_eq(wr.bookmarks, 1);
	ck_assert_uint_eq(wr.deleted, 1);
	ck_assert_uint_eq(h.n, 1);
	ck_assert_str_eq(h.verb, "watch");
	ck_assert_ptr_eq(h.res, &res_runs);
	ck_assert_int_eq(h.http_code, 200);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_run_bookmark_rv)
{
	static const char *const chunks[] = {
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p1\","
		"\"resourceVersion\":\"5\"}}}\n",
		"{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
		"\"metadata\":{\"resourceVersion\":\"90\"}}}\n",
		"{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"p1\"}}}\n",
		NULL,
	};
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct kc_watch_result wr;
	struct kc_status st;
	struct got g = { 0 };
	int r;

	/* The last bookmark is the resume point; an event without one keeps it. */
	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/api/v1/pods?allowWatchBookmarks=true&fieldSelector="
	    "spec.nodeName%3Dn1&watch=true", .status = 200, .chunks = chunks });
	r = kc_watch_run(cl, &(struct kc_watch_opts){ .res = &kc_res_pods,
	    .field_selector = "spec.nodeName=n1", .allow_bookmarks = true },
	    got_fn, &g, &wr, &st);
	ck_ok(r, st);
	ck_assert_uint_eq(g.n, 3);
	ck_assert_str_eq(wr.resource_version, "90");
	ck_assert_uint_eq(wr.bookmarks, 1);
	ck_assert_uint_eq(wr.events, 3);
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_run_expired_event)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct kc_watch_result wr;
	struct kc_status st;
	struct got g = { 0 };
	int r;

	ft_load_script(ft, "watch/expired.script");
	r = kc_watch_run(cl, &(struct kc_watch_opts){ .res = &res_runs,
	    .resource_version = "120" }, got_fn, &g, &wr, &st);
	ck_assert_int_eq(r, KC_EEXPIRED);
	ck_assert_int_eq(st.http_code, 410);
	ck_assert_str_eq(st.reason, "Expired");
	ck_assert_str_eq(st.message, "too old resource version: 120 (300)");
	/* The events before it were handled; nothing after it was. */
	ck_assert_uint_eq(g.n, 2);
	ck_assert_str_eq(wr.resource_version, "125");
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_run_error_events)
{
	static const struct {
		const char *event;
		int code;
		const char *message;
	} cases[] = {
		{ "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":"
		  "\"Failure\",\"message\":\"gone\",\"reason\":\"Gone\",\"code\":410}}",
		  KC_EEXPIRED, "gone" },
		{ "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"message\":"
		  "\"odd\",\"code\":410}}", KC_EEXPIRED, "odd" },
		{ "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":"
		  "\"Failure\",\"message\":\"etcd down\",\"reason\":\"InternalError\","
		  "\"code\":500}}", KC_EINTERNAL, "etcd down" },
		{ "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"message\":"
		  "\"no\",\"reason\":\"Forbidden\",\"code\":403}}", KC_EFORBIDDEN, "no" },
	};
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct kc_status st;

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		const char *const chunks[] = { cases[i].event, NULL };
		struct kc_watch_result wr;
		struct got g = { 0 };
		int r;

		ft_expect(ft, &(struct ft_exchange){ .method = "GET",
		    .path = "/api/v1/namespaces/a/pods?resourceVersion=3&watch=true",
		    .status = 200, .chunks = chunks });
		r = kc_watch_run(cl, &(struct kc_watch_opts){ .res = &kc_res_pods,
		    .ns = "a", .resource_version = "3" }, got_fn, &g, &wr, &st);
		ck_assert_msg(r == cases[i].code, "case %zu: %s", i, kc_err_name(r));
		ck_assert_str_eq(st.message, cases[i].message);
		ck_assert_str_eq(wr.resource_version, "3");
		ck_assert_uint_eq(g.n, 0);
	}
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_run_http_errors)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct kc_watch_result wr;
	struct kc_status st;
	struct got g = { 0 };
	int r;

	ft_load_script(ft, "watch/http-410.script");
	r = kc_watch_run(cl, &(struct kc_watch_opts){ .res = &kc_res_pods,
	    .ns = "team-a", .resource_version = "1" }, got_fn, &g, &wr, &st);
	ck_assert_int_eq(r, KC_EEXPIRED);
	ck_assert_int_eq(st.http_code, 410);
	ck_assert_str_eq(st.reason, "Gone");
	ck_assert_str_eq(wr.resource_version, "1");
	ft_done(ft);

	/* A 410 with no Status body at all. */
	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/api/v1/pods?watch=true", .status = 410, .resp_body = "gone",
	    .resp_content_type = "text/plain" });
	ck_assert_int_eq(kc_watch_run(cl, &(struct kc_watch_opts){
	    .res = &kc_res_pods }, got_fn, &g, &wr, &st), KC_EEXPIRED);
	ck_assert_str_eq(st.message, "gone");

	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/api/v1/pods?watch=true", .status = 403,
	    .resp_body = "{\"kind\":\"Status\",\"reason\":\"Forbidden\","
	    "\"message\":\"pods is forbidden\",\"code\":403}" });
	ck_assert_int_eq(kc_watch_run(cl, &(struct kc_watch_opts){
	    .res = &kc_res_pods }, got_fn, &g, &wr, &st), KC_EFORBIDDEN);
	ck_assert_str_eq(st.message, "pods is forbidden");

	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/api/v1/pods?watch=true", .error = KC_ETRANSPORT });
	ck_assert_int_eq(kc_watch_run(cl, &(struct kc_watch_opts){
	    .res = &kc_res_pods }, got_fn, &g, &wr, &st), KC_ETRANSPORT);
	ck_assert_uint_eq(g.n, 0);
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_run_truncated)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct kc_watch_result wr;
	struct kc_status st;
	struct got g = { 0 };

	ft_load_script(ft, "watch/truncated.script");
	ck_assert_int_eq(kc_watch_run(cl, &(struct kc_watch_opts){
	    .res = &kc_res_pods }, got_fn, &g, &wr, &st), KC_EPARSE);
	ck_assert_ptr_nonnull(strstr(st.message, "ended inside an event"));
	ck_assert_uint_eq(g.n, 1);
	ck_assert_str_eq(wr.resource_version, "7");
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_run_limits_and_garbage)
{
	static const char *const big[] = {
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\","
		"\"resourceVersion\":\"1\"}}}\n{\"type\":\"ADDED\",\"object\":{\"pad\":\"",
		"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
		"\"}}\n", NULL,
	};
	static const char *const garbage[] = {
		"{\"type\":\"ADDED\",\"object\":{}}\n<html>oops</html>", NULL,
	};
	static const char *const long_rv[] = {
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"resourceVersion\":"
		"\"11111111111111111111111111111111111111111111111111111111111111111\"}}}",
		NULL,
	};
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct kc_watch_result wr;
	struct kc_status st;
	struct got g = { 0 };

	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/api/v1/pods?watch=true", .status = 200, .chunks = big });
	ck_assert_int_eq(kc_watch_run(cl, &(struct kc_watch_opts){ .res = &kc_res_pods,
	    .max_event = 80 }, got_fn, &g, &wr, &st), -E2BIG);
	ck_assert_uint_eq(g.n, 1);
	ck_assert_str_eq(wr.resource_version, "1");

	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/api/v1/pods?watch=true", .status = 200, .chunks = garbage });
	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(kc_watch_run(cl, &(struct kc_watch_opts){ .res = &kc_res_pods },
	    got_fn, &g, &wr, &st), KC_EPARSE);
	ck_assert_uint_eq(g.n, 1);
	ck_assert_str_eq(wr.resource_version, "");

	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/api/v1/pods?watch=true", .status = 200, .chunks = long_rv });
	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(kc_watch_run(cl, &(struct kc_watch_opts){ .res = &kc_res_pods },
	    got_fn, &g, &wr, &st), KC_EPARSE);
	ck_assert_uint_eq(g.n, 0);
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_run_callback_stops)
{
	size_t len;
	char *text = tu_fixture("watch/watch-stream.jsonl", &len);
	const char *const chunks[] = { text, NULL };
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct kc_watch_result wr;
	struct kc_status st;
	struct got g = { .stop_at = 2, .stop_ret = KC_WATCH_STOP };

	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/apis/trainyard.dev/v1beta1/runs?watch=true", .status = 200,
	    .chunks = chunks });
	ck_assert_int_eq(kc_watch_run(cl, &(struct kc_watch_opts){ .res = &res_runs },
	    got_fn, &g, &wr, &st), KC_WATCH_STOP);
	ck_assert_uint_eq(g.n, 2);
	ck_assert_str_eq(wr.resource_version, "405");
	ck_assert_uint_eq(wr.events, 2);

	/* A failing callback: its code, and its event is not the resume point. */
	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/apis/trainyard.dev/v1beta1/runs?watch=true", .status = 200,
	    .chunks = chunks });
	memset(&g, 0, sizeof(g));
	g.stop_at = 3;
	g.stop_ret = -EIO;
	ck_assert_int_eq(kc_watch_run(cl, &(struct kc_watch_opts){ .res = &res_runs },
	    got_fn, &g, &wr, &st), -EIO);
	ck_assert_uint_eq(g.n, 3);
	ck_assert_str_eq(wr.resource_version, "405");
	ck_assert_uint_eq(wr.events, 2);
	ck_assert_ptr_nonnull(strstr(st.message, "BOOKMARK"));
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
	kc_free(text);
}
END_TEST

START_TEST(test_run_bad_options)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct kc_watch_result wr, keep;
	struct kc_status st;
	struct got g = { 0 };
	char rv[KC_RV_MAX + 1];

	memset(rv, '1', KC_RV_MAX);
	rv[KC_RV_MAX] = '\0';
	memset(&wr, 0x5a, sizeof(wr));
	keep = wr;
	ck_assert_int_eq(kc_watch_run(cl, NULL, got_fn, &g, &wr, &st), -EINVAL);
	ck_assert_int_eq(kc_watch_run(cl, &(struct kc_watch_opts){ .res = &kc_res_pods },
	    NULL, &g, &wr, &st), -EINVAL);
	ck_assert_int_eq(kc_watch_run(cl, &(struct kc_watch_opts){ .res = NULL },
	    got_fn, &g, &wr, &st), -EINVAL);
	ck_assert_int_eq(kc_watch_run(cl, &(struct kc_watch_opts){ .res = &kc_res_pods,
	    .ns = "../x" }, got_fn, &g, &wr, &st), -EINVAL);
	ck_assert_int_eq(kc_watch_run(cl, &(struct kc_watch_opts){ .res = &kc_res_nodes,
	    .ns = "a" }, got_fn, &g, &wr, &st), -EINVAL);
	ck_assert_int_eq(kc_watch_run(cl, &(struct kc_watch_opts){ .res = &kc_res_pods,
	    .resource_version = rv }, got_fn, &g, &wr, &st), -EINVAL);
	ck_assert_mem_eq(&wr, &keep, sizeof(wr));
	ck_assert_uint_eq(ft_nrequests(ft), 0);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

struct canceller {
	struct fake_transport	*ft;
	struct kc_client	*cl;
};

static void *
cancel_main(void *arg)
{
	struct canceller *c = arg;

	ft_wait_blocked(c->ft);
	kc_watch_cancel(c->cl);
	return NULL;
}

START_TEST(test_run_cancel)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct canceller c = { ft, cl };
	struct kc_watch_result wr;
	struct kc_status st;
	struct got g = { 0 };
	pthread_t t;
	int r;

	ft_load_script(ft, "watch/block.script");
	ck_assert_int_eq(pthread_create(&t, NULL, cancel_main, &c), 0);
	r = kc_watch_run(cl, &(struct kc_watch_opts){ .res = &kc_res_pods,
	    .ns = "team-a", .allow_bookmarks = true }, got_fn, &g, &wr, &st);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(r, -ECANCELED);
	ck_assert_uint_eq(g.n, 2);
	ck_assert_str_eq(wr.resource_version, "11");
	ft_done(ft);

	/* Still cancelled: the next watch does not even start... */
	ck_assert_int_eq(kc_watch_run(cl, &(struct kc_watch_opts){ .res = &kc_res_pods },
	    got_fn, &g, &wr, &st), -ECANCELED);
	ck_assert_uint_eq(ft_nrequests(ft), 1);
	/* ...until the cancel is reset. */
	kc_client_reset_cancel(cl);
	ft_expect(ft, &(struct ft_exchange){ .method = "GET",
	    .path = "/api/v1/pods?watch=true", .status = 200 });
	ck_ok(kc_watch_run(cl, &(struct kc_watch_opts){ .res = &kc_res_pods },
	    got_fn, &g, &wr, &st), st);
	ck_assert_uint_eq(wr.events, 0);
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_run_oom)
{
	size_t len;
	char *text = tu_fixture("watch/watch-stream.jsonl", &len);
	const char *const chunks[] = { text, NULL };
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = new_client();
	struct kc_status st;
	int r;

	for (size_t budget = 0;; budget++) {
		struct kc_watch_result wr;
		struct got g = { 0 };

		if (ft_pending(ft) == 0)
			ft_expect(ft, &(struct ft_exchange){ .method = "GET",
			    .path = "/apis/trainyard.dev/v1beta1/runs?watch=true",
			    .status = 200, .chunks = chunks });
		fail_alloc_after(budget);
		r = kc_watch_run(cl, &(struct kc_watch_opts){ .res = &res_runs },
		    got_fn, &g, &wr, &st);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert_uint_eq(g.n, 4);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_uint_eq(g.n, 0);
	}
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
	kc_free(text);
}
END_TEST


/* ---- through curl and the loopback test server ------------------------- */

struct live {
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	size_t		 n;		/* events seen */
	char		 rv[KC_RV_MAX];
	struct kc_client *cl;
};

static int
live_fn(void *arg, enum kc_watch_type type, struct json_object *obj)
{
	struct live *l = arg;
	const char *rv = kc_json_str(obj, "metadata", "resourceVersion");

	(void)type;
	pthread_mutex_lock(&l->mu);
	l->n++;
	(void)kc_strlcpy(l->rv, rv != NULL ? rv : "", sizeof(l->rv));
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	return 0;
}

/* Waits for the first event of the running watch, then cancels it. */
static void *
live_cancel(void *arg)
{
	struct live *l = arg;

	pthread_mutex_lock(&l->mu);
	while (l->n == 0)
		pthread_cond_wait(&l->cv, &l->mu);
	pthread_mutex_unlock(&l->mu);
	kc_watch_cancel(l->cl);
	return NULL;
}

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

START_TEST(test_server_watch)
{
	struct ts_server *srv = NULL;
	struct kc_rest_config rc = { 0 };
	struct kc_client *cl = NULL;
	struct live l = { .mu = PTHREAD_MUTEX_INITIALIZER,
	    .cv = PTHREAD_COND_INITIALIZER };
	struct kc_watch_result wr;
	struct kc_status st;
	pthread_t t;
	uint64_t t0;
	int r;

	ck_assert_int_eq(ts_start(&(struct ts_opts){
	    .script = tu_fixture_path("watch/server-stream.script") }, &srv), 0);
	rc.server = (char *)(uintptr_t)ts_url(srv);
	rc.ca_pem = (char *)(uintptr_t)ts_ca_pem(srv);
	rc.ca_pem_len = strlen(rc.ca_pem);
	r = kc_client_new(&(struct kc_client_opts){ .rc = &rc }, &cl, &st);
	ck_ok(r, st);
	l.cl = cl;

	/* Split event, bookmark, clean end. */
	r = kc_watch_run(cl, &(struct kc_watch_opts){ .res = &res_runs,
	    .ns = "default", .allow_bookmarks = true, .timeout_s = 60 },
	    live_fn, &l, &wr, &st);
	ck_ok(r, st);
	ck_assert_uint_eq(l.n, 2);
	ck_assert_str_eq(wr.resource_version, "9");
	ck_assert_uint_eq(wr.bookmarks, 1);

	/* Expired. */
	r = kc_watch_run(cl, &(struct kc_watch_opts){ .res = &res_runs,
	    .ns = "default", .resource_version = wr.resource_version }, live_fn, &l,
	    &wr, &st);
	ck_assert_int_eq(r, KC_EEXPIRED);
	ck_assert_str_eq(st.message, "too old resource version: 9 (300)");

	/* Cancelled from another thread while the server keeps it open. */
	l.n = 0;
	ck_assert_int_eq(pthread_create(&t, NULL, live_cancel, &l), 0);
	t0 = mono_ms();
	r = kc_watch_run(cl, &(struct kc_watch_opts){ .res = &res_runs,
	    .ns = "default" }, live_fn, &l, &wr, &st);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(r, -ECANCELED);
	ck_assert_uint_lt(mono_ms() - t0, 5000);
	ck_assert_uint_eq(l.n, 1);
	ck_assert_str_eq(wr.resource_version, "310");

	ck_assert_uint_eq(ts_nrequests(srv), 3);
	ck_assert_ptr_nonnull(strstr(ts_request(srv, 0)->path, "watch=true"));
	ck_assert_ptr_nonnull(strstr(ts_request(srv, 0)->path, "allowWatchBookmarks=true"));
	ck_assert_ptr_nonnull(strstr(ts_request(srv, 0)->path, "timeoutSeconds=60"));
	ck_assert_ptr_nonnull(strstr(ts_request(srv, 1)->path, "resourceVersion=9"));
	kc_client_free(cl);
	ts_stop(srv);
}
END_TEST

Suite *
watch_suite(void)
{
	Suite *s = suite_create("watch");
	TCase *dec = tcase_create("decoder");
	TCase *run = tcase_create("run");
	TCase *srv = tcase_create("server");

	tcase_set_timeout(dec, 60);
	tcase_add_test(dec, test_decoder_every_split);
	tcase_add_test(dec, test_decoder_two_splits);
	tcase_add_test(dec, test_decoder_bytewise);
	tcase_add_test(dec, test_decoder_error_event_splits);
	tcase_add_test(dec, test_decoder_many_per_chunk);
	tcase_add_test(dec, test_decoder_oversized);
	tcase_add_test(dec, test_decoder_garbage);
	tcase_add_test(dec, test_decoder_depth);
	tcase_add_test(dec, test_decoder_truncated);
	tcase_add_test(dec, test_decoder_callback_stops);
	tcase_add_test(dec, test_decoder_oom);
	tcase_add_test(dec, test_type_names);
	suite_add_tcase(s, dec);

	tcase_add_test(run, test_run_stream);
	tcase_add_test(run, test_run_bookmark_rv);
	tcase_add_test(run, test_run_expired_event);
	tcase_add_test(run, test_run_error_events);
	tcase_add_test(run, test_run_http_errors);
	tcase_add_test(run, test_run_truncated);
	tcase_add_test(run, test_run_limits_and_garbage);
	tcase_add_test(run, test_run_callback_stops);
	tcase_add_test(run, test_run_bad_options);
	tcase_add_test(run, test_run_cancel);
	tcase_add_test(run, test_run_oom);
	suite_add_tcase(s, run);

	tcase_set_timeout(srv, 30);
	tcase_add_test(srv, test_server_watch);
	suite_add_tcase(s, srv);
	return s;
}

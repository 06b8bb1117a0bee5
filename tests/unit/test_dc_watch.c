/*
 * test_dc_watch.c: devcluster/watchhub.c: initial events, selector
 * transitions, history replay and 410, backlog overflow, timeouts,
 * bookmarks, Table events and shared serializations.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/str.h>

#include "../../devcluster/devcluster.h"
#include "testutil.h"

#define EVENTS_MAX	32

struct events {
	size_t			 n;
	char			 type[EVENTS_MAX][16];
	struct json_object	*obj[EVENTS_MAX];
	bool			 end;
};

static struct dc *
new_dc(const struct dc_opts *opts)
{
	struct dc *dc = NULL;
	struct dc_opts o = { .no_bootstrap = true };

	if (opts != NULL)
		o = *opts;
	o.no_bootstrap = true;
	ck_assert_int_eq(api_new(&o, &dc), 0);
	return dc;
}

static struct dc_rtype *
cms(struct dc *dc)
{
	struct dc_rtype *rt = registry_find(dc, "", "v1", "configmaps");

	ck_assert_ptr_nonnull(rt);
	return rt;
}

static struct json_object *
cm(const char *ns, const char *name, const char *labels, const char *data)
{
	struct json_object *o = NULL;
	char text[1024];

	(void)snprintf(text, sizeof(text), "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
	    "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"labels\":{%s}},"
	    "\"data\":{\"v\":\"%s\"}}", name, ns, labels != NULL ? labels : "",
	    data != NULL ? data : "");
	ck_assert_int_eq(kc_json_parse(text, strlen(text), &o, NULL), 0);
	return o;
}

static void
put(struct dc *dc, struct json_object *o)
{
	struct dc_rtype *rt = cms(dc);
	const char *ns = kc_json_str(o, "metadata", "namespace");
	const char *name = kc_json_str(o, "metadata", "name");
	int r;

	if (coll_get(rt->coll, ns, name) != NULL)
		r = storage_update(dc->store, rt->coll, o, 0, NULL);
	else
		r = storage_create(dc->store, rt->coll, o, NULL);
	ck_assert_int_ge(r, 0);
}

static void
del(struct dc *dc, const char *ns, const char *name)
{
	struct dc_rtype *rt = cms(dc);
	const struct json_object *o = coll_get(rt->coll, ns, name);

	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(storage_delete(dc->store, rt->coll,
	    json_object_get((struct json_object *)(uintptr_t)o), 0, NULL), 0);
}

static void
events_clear(struct events *e)
{
	for (size_t i = 0; i < e->n; i++)
		if (e->obj[i] != NULL)
			json_object_put(e->obj[i]);
	memset(e, 0, sizeof(*e));
}

/* Pulls every chunk ready now; each is one JSON line. */
static void
drain(struct dc_stream *s, struct events *e)
{
	events_clear(e);
	for (;;) {
		struct json_object *ev = NULL;
		struct dc_chunk *c = s->ops->pull(s, &e->end);

		if (c == NULL)
			break;
		ck_assert_uint_gt(c->len, 0);
		ck_assert_int_eq(c->data[c->len - 1], '\n');
		ck_assert_int_eq(kc_json_parse(c->data, c->len, &ev, NULL), 0);
		ck_assert_uint_lt(e->n, EVENTS_MAX);
		(void)kc_strlcpy(e->type[e->n], kc_json_str(ev, "type"), sizeof(e->type[0]));
		e->obj[e->n] = json_object_get(kc_json_get(ev, "object"));
		e->n++;
		json_object_put(ev);
		chunk_unref(c);
	}
}

static struct dc_stream *
start(struct dc *dc, const struct dc_watch_opts *o)
{
	struct dc_stream *s = NULL;
	struct kc_status st = { 0 };

	ck_assert_int_eq(watchhub_start(dc, o, &s, &st), 0);
	ck_assert_ptr_nonnull(s);
	return s;
}

static const char *
ev_name(const struct events *e, size_t i)
{
	return kc_json_str(e->obj[i], "metadata", "name");
}

START_TEST(initial_then_live)
{
	struct dc *dc = new_dc(NULL);
	struct events e = { 0 };
	struct dc_stream *s;

	put(dc, cm("a", "one", NULL, "1"));
	put(dc, cm("a", "two", NULL, "2"));
	put(dc, cm("b", "three", NULL, "3"));
	s = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .ns = "a", .initial = true });
	ck_assert_uint_eq(watchhub_count(dc->hub), 1);
	drain(s, &e);
	ck_assert_uint_eq(e.n, 2);
	ck_assert_str_eq(e.type[0], "ADDED");
	ck_assert_str_eq(ev_name(&e, 0), "one");
	ck_assert_str_eq(ev_name(&e, 1), "two");
	/* Watch events carry apiVersion and kind. */
	ck_assert_str_eq(kc_json_str(e.obj[0], "apiVersion"), "v1");
	ck_assert_str_eq(kc_json_str(e.obj[0], "kind"), "ConfigMap");
	ck_assert(!e.end);
	put(dc, cm("a", "one", NULL, "1b"));
	put(dc, cm("b", "three", NULL, "3b"));
	del(dc, "a", "two");
	drain(s, &e);
	ck_assert_uint_eq(e.n, 2);
	ck_assert_str_eq(e.type[0], "MODIFIED");
	ck_assert_str_eq(kc_json_str(e.obj[0], "data", "v"), "1b");
	ck_assert_str_eq(e.type[1], "DELETED");
	ck_assert_str_eq(ev_name(&e, 1), "two");
	ck_assert_uint_eq(obj_rv(e.obj[1]), storage_rv(dc->store));
	events_clear(&e);
	s->ops->release(s);
	ck_assert_uint_eq(watchhub_count(dc->hub), 0);
	api_free(dc);
}
END_TEST

START_TEST(selector_transitions)
{
	struct dc *dc = new_dc(NULL);
	struct events e = { 0 };
	struct dc_stream *s;
	uint64_t rv;

	s = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .initial = true,
	    .label_selector = "team=x" });
	put(dc, cm("a", "c", NULL, "0"));			/* not selected */
	drain(s, &e);
	ck_assert_uint_eq(e.n, 0);
	put(dc, cm("a", "c", "\"team\":\"x\"", "1"));	/* enters: ADDED */
	put(dc, cm("a", "c", "\"team\":\"x\"", "2"));	/* stays: MODIFIED */
	put(dc, cm("a", "c", "\"team\":\"y\"", "3"));	/* leaves: DELETED */
	rv = storage_rv(dc->store);
	put(dc, cm("a", "c", "\"team\":\"y\"", "4"));	/* still out: nothing */
	del(dc, "a", "c");					/* out: nothing */
	drain(s, &e);
	ck_assert_uint_eq(e.n, 3);
	ck_assert_str_eq(e.type[0], "ADDED");
	ck_assert_str_eq(kc_json_str(e.obj[0], "data", "v"), "1");
	ck_assert_str_eq(e.type[1], "MODIFIED");
	ck_assert_str_eq(e.type[2], "DELETED");
	/* The previous state, under the event's resourceVersion. */
	ck_assert_str_eq(kc_json_str(e.obj[2], "data", "v"), "2");
	ck_assert_str_eq(kc_json_str(e.obj[2], "metadata", "labels", "team"), "x");
	ck_assert_uint_eq(obj_rv(e.obj[2]), rv);
	events_clear(&e);
	s->ops->release(s);

	/* Field selectors too. */
	s = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .initial = true,
	    .field_selector = "metadata.name=f" });
	put(dc, cm("a", "g", NULL, "1"));
	put(dc, cm("a", "f", NULL, "1"));
	drain(s, &e);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_str_eq(ev_name(&e, 0), "f");
	events_clear(&e);
	s->ops->release(s);
	api_free(dc);
}
END_TEST

START_TEST(bad_selectors)
{
	struct dc *dc = new_dc(NULL);
	struct dc_stream *s = NULL;
	struct kc_status st = { 0 };

	ck_assert_int_eq(watchhub_start(dc, &(struct dc_watch_opts){ .rt = cms(dc),
	    .initial = true, .field_selector = "spec.nope=1" }, &s, &st), KC_EBADREQUEST);
	ck_assert_str_eq(st.message, "field label not supported: spec.nope");
	ck_assert_int_eq(watchhub_start(dc, &(struct dc_watch_opts){ .rt = cms(dc),
	    .initial = true, .label_selector = "a in (" }, &s, &st), KC_EBADREQUEST);
	ck_assert_ptr_null(s);
	ck_assert_uint_eq(watchhub_count(dc->hub), 0);
	api_free(dc);
}
END_TEST

START_TEST(replay_and_expired)
{
	struct dc *dc = new_dc(&(struct dc_opts){ .history_max = 3 });
	struct events e = { 0 };
	struct dc_stream *s;

	put(dc, cm("a", "x", NULL, "1"));	/* 1 */
	put(dc, cm("a", "x", NULL, "2"));	/* 2 */
	put(dc, cm("a", "y", NULL, "1"));	/* 3 */
	/* From rv 1: the two later events. */
	s = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .since = 1 });
	drain(s, &e);
	ck_assert_uint_eq(e.n, 2);
	ck_assert_str_eq(e.type[0], "MODIFIED");
	ck_assert_str_eq(e.type[1], "ADDED");
	ck_assert_str_eq(ev_name(&e, 1), "y");
	ck_assert(!e.end);
	events_clear(&e);
	s->ops->release(s);

	put(dc, cm("a", "z", NULL, "1"));	/* 4: rv 1 drops out */
	/* Still fine from 1: everything after it is kept. */
	s = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .since = 1 });
	drain(s, &e);
	ck_assert_uint_eq(e.n, 3);
	ck_assert(!e.end);
	events_clear(&e);
	s->ops->release(s);
	put(dc, cm("a", "z", NULL, "2"));	/* 5: rv 2 drops out */
	s = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .since = 1 });
	drain(s, &e);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_str_eq(e.type[0], "ERROR");
	ck_assert_int_eq(kc_json_int(e.obj[0], 0, "code"), 410);
	ck_assert_str_eq(kc_json_str(e.obj[0], "reason"), "Expired");
	ck_assert_str_eq(kc_json_str(e.obj[0], "message"), "too old resource version: 1 (2)");
	ck_assert_str_eq(kc_json_str(e.obj[0], "kind"), "Status");
	ck_assert(e.end);
	events_clear(&e);
	s->ops->release(s);
	api_free(dc);
}
END_TEST

START_TEST(overflow)
{
	struct dc *dc = new_dc(&(struct dc_opts){ .backlog_events = 2 });
	struct events e = { 0 };
	struct dc_stream *s;

	s = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .initial = true });
	put(dc, cm("a", "x", NULL, "1"));
	put(dc, cm("a", "x", NULL, "2"));
	put(dc, cm("a", "x", NULL, "3"));	/* the client did not read: overflow */
	drain(s, &e);
	ck_assert_uint_eq(e.n, 0);
	ck_assert(e.end);
	events_clear(&e);
	/* Later events no longer reach it. */
	put(dc, cm("a", "x", NULL, "4"));
	drain(s, &e);
	ck_assert_uint_eq(e.n, 0);
	ck_assert(e.end);
	s->ops->release(s);
	api_free(dc);
}
END_TEST

/*
 * A client that fell further behind than the backlog resumes from the
 * history: the replay is not cut short (which made it watch again from the
 * same resourceVersion forever); only what piles up after it counts.
 */
START_TEST(replay_beyond_backlog)
{
	struct dc *dc = new_dc(&(struct dc_opts){ .backlog_events = 2 });
	struct events e = { 0 };
	struct dc_stream *s;

	put(dc, cm("a", "x", NULL, "1"));	/* 1 */
	put(dc, cm("a", "x", NULL, "2"));	/* 2 */
	put(dc, cm("a", "x", NULL, "3"));	/* 3 */
	put(dc, cm("a", "x", NULL, "4"));	/* 4 */
	put(dc, cm("a", "x", NULL, "5"));	/* 5 */
	s = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .since = 1 });
	put(dc, cm("a", "y", NULL, "1"));	/* live: within the backlog */
	put(dc, cm("a", "z", NULL, "1"));
	drain(s, &e);
	ck_assert_uint_eq(e.n, 6);
	ck_assert_str_eq(e.type[0], "MODIFIED");
	ck_assert_str_eq(ev_name(&e, 5), "z");
	ck_assert(!e.end);
	events_clear(&e);
	s->ops->release(s);

	/* Unread, the replay plus two live events fit; a third does not. */
	s = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .since = 1 });
	put(dc, cm("a", "x", NULL, "6"));
	put(dc, cm("a", "x", NULL, "7"));
	put(dc, cm("a", "x", NULL, "8"));
	drain(s, &e);
	ck_assert_uint_eq(e.n, 0);
	ck_assert(e.end);
	events_clear(&e);
	s->ops->release(s);
	api_free(dc);
}
END_TEST

/*
 * A full history whose oldest event is fresh grows (kube-apiserver keeps
 * 75 s of events); once the oldest is older, a full ring drops it again.
 */
START_TEST(history_keeps_fresh_events)
{
	struct dc *dc;
	struct events e = { 0 };
	struct dc_stream *s;
	char v[16];

	fake_clock_install(1000000);
	dc = new_dc(&(struct dc_opts){ .history_max = 4, .history_fresh_ms = 1000 });
	for (int i = 0; i < 9; i++) {
		(void)snprintf(v, sizeof(v), "%d", i);
		put(dc, cm("a", "x", NULL, v));		/* rv 1..9 */
	}
	/* Nine events in a history of four: the ring grew, rv 1 still serves. */
	s = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .since = 1 });
	drain(s, &e);
	ck_assert_uint_eq(e.n, 8);
	ck_assert(!e.end);
	events_clear(&e);
	s->ops->release(s);
	/* Two seconds later a full ring (16 now) drops its old events again. */
	fake_clock_advance(2000);
	for (int i = 0; i < 10; i++)
		put(dc, cm("a", "y", NULL, i % 2 == 0 ? "a" : "b"));	/* rv 10..19 */
	s = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .since = 1 });
	drain(s, &e);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_str_eq(e.type[0], "ERROR");
	ck_assert(e.end);
	events_clear(&e);
	s->ops->release(s);
	/* Without the option a history of four is four. */
	api_free(dc);
	dc = new_dc(&(struct dc_opts){ .history_max = 4 });
	for (int i = 0; i < 6; i++) {
		(void)snprintf(v, sizeof(v), "%d", i);
		put(dc, cm("a", "x", NULL, v));
	}
	s = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .since = 1 });
	drain(s, &e);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_str_eq(e.type[0], "ERROR");
	events_clear(&e);
	s->ops->release(s);
	api_free(dc);
	fake_clock_uninstall();
}
END_TEST

START_TEST(timeout_and_bookmarks)
{
	struct dc *dc;
	struct events e = { 0 };
	struct dc_stream *s, *quiet;

	fake_clock_install(1000000);
	dc = new_dc(&(struct dc_opts){ .bookmark_ms = 1000 });
	put(dc, cm("a", "x", NULL, "1"));
	s = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .since = 1, .timeout_s = 5,
	    .bookmarks = true });
	quiet = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .since = 1,
	    .timeout_s = 60 });
	fake_clock_advance(1000);
	ck_assert_uint_ge(timers_run(dc), 1);
	drain(s, &e);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_str_eq(e.type[0], "BOOKMARK");
	ck_assert_str_eq(kc_json_str(e.obj[0], "kind"), "ConfigMap");
	ck_assert_uint_eq(obj_rv(e.obj[0]), 1);
	ck_assert(!e.end);
	drain(quiet, &e);
	ck_assert_uint_eq(e.n, 0);
	ck_assert_int_ge(timers_next(dc), 0);
	fake_clock_advance(4000);
	(void)timers_run(dc);
	drain(s, &e);
	ck_assert(e.end);
	drain(quiet, &e);
	ck_assert(!e.end);
	events_clear(&e);
	/* Shutdown ends the rest. */
	watchhub_close_all(dc->hub);
	drain(quiet, &e);
	ck_assert(e.end);
	s->ops->release(s);
	quiet->ops->release(quiet);
	api_free(dc);
	fake_clock_uninstall();
}
END_TEST

/*
 * A watch that asked for bookmarks gets one 2 s before its timeout, as
 * the watch cache sends it, however long the bookmark period; one that
 * did not ask gets none.
 */
START_TEST(bookmark_before_timeout)
{
	struct dc *dc;
	struct events e = { 0 };
	struct dc_stream *s, *plain, *brief;

	fake_clock_install(1000000);
	dc = new_dc(NULL);
	put(dc, cm("a", "x", NULL, "1"));
	s = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .since = 1, .timeout_s = 3,
	    .bookmarks = true });
	plain = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .since = 1,
	    .timeout_s = 3 });
	/* Too short for a bookmark before its end. */
	brief = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .since = 1,
	    .timeout_s = 2, .bookmarks = true });
	fake_clock_advance(999);
	(void)timers_run(dc);
	drain(s, &e);
	ck_assert_uint_eq(e.n, 0);
	fake_clock_advance(1);
	ck_assert_uint_ge(timers_run(dc), 1);
	drain(s, &e);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_str_eq(e.type[0], "BOOKMARK");
	ck_assert_uint_eq(obj_rv(e.obj[0]), 1);
	ck_assert(!e.end);
	events_clear(&e);
	fake_clock_advance(2000);
	(void)timers_run(dc);
	drain(s, &e);
	ck_assert_uint_eq(e.n, 0);
	ck_assert(e.end);
	drain(plain, &e);
	ck_assert_uint_eq(e.n, 0);
	ck_assert(e.end);
	drain(brief, &e);
	ck_assert_uint_eq(e.n, 0);
	ck_assert(e.end);
	events_clear(&e);
	s->ops->release(s);
	plain->ops->release(plain);
	brief->ops->release(brief);
	api_free(dc);
	fake_clock_uninstall();
}
END_TEST

START_TEST(tables)
{
	struct dc *dc = new_dc(NULL);
	struct events e = { 0 };
	struct dc_stream *s;

	put(dc, cm("a", "x", NULL, "1"));
	s = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .initial = true,
	    .format = DC_FMT_TABLE_V1 });
	put(dc, cm("a", "y", NULL, "1"));
	drain(s, &e);
	ck_assert_uint_eq(e.n, 2);
	ck_assert_str_eq(kc_json_str(e.obj[0], "kind"), "Table");
	ck_assert_str_eq(kc_json_str(e.obj[0], "apiVersion"), "meta.k8s.io/v1");
	/* Column definitions (Name, Data, Age) come with the first event only. */
	ck_assert_uint_eq(json_object_array_length(kc_json_get(e.obj[0],
	    "columnDefinitions")), 3);
	ck_assert_ptr_null(kc_json_get(e.obj[1], "columnDefinitions"));
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	    kc_json_get(json_object_array_get_idx(kc_json_get(e.obj[1], "rows"), 0),
	    "cells"), 0)), "y");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(e.obj[1],
	    "rows"), 0), "object", "kind"), "PartialObjectMetadata");
	events_clear(&e);
	s->ops->release(s);
	api_free(dc);
}
END_TEST

START_TEST(shared_chunks)
{
	struct dc *dc = new_dc(NULL);
	struct dc_stream *a, *b, *t;
	struct dc_chunk *ca, *cb, *ct;
	bool end;

	a = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .since = 0 });
	b = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .since = 0 });
	t = start(dc, &(struct dc_watch_opts){ .rt = cms(dc), .since = 0,
	    .format = DC_FMT_TABLE_V1 });
	put(dc, cm("a", "x", NULL, "1"));
	ca = a->ops->pull(a, &end);
	cb = b->ops->pull(b, &end);
	ct = t->ops->pull(t, &end);
	/* One serialization per event and format. */
	ck_assert_ptr_nonnull(ca);
	ck_assert_ptr_eq(ca, cb);
	ck_assert_ptr_ne(ca, ct);
	chunk_unref(ca);
	chunk_unref(cb);
	chunk_unref(ct);
	a->ops->release(a);
	b->ops->release(b);
	t->ops->release(t);
	api_free(dc);
}
END_TEST

START_TEST(events_view)
{
	struct dc *dc = new_dc(NULL);
	struct dc_rtype *v1 = registry_find(dc, "events.k8s.io", "v1", "events");
	struct dc_rtype *core = registry_find(dc, "", "v1", "events");
	struct json_object *o = NULL;
	struct events e = { 0 };
	struct dc_stream *s;
	const char *text = "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":"
	    "{\"name\":\"e1\",\"namespace\":\"a\"},\"involvedObject\":{\"kind\":\"Pod\","
	    "\"name\":\"p1\"},\"message\":\"hello\",\"reason\":\"Started\"}";

	ck_assert_ptr_nonnull(v1);
	ck_assert_ptr_eq(v1->coll, core->coll);
	s = start(dc, &(struct dc_watch_opts){ .rt = v1, .initial = true });
	ck_assert_int_eq(kc_json_parse(text, strlen(text), &o, NULL), 0);
	ck_assert_int_eq(storage_create(dc->store, core->coll, o, NULL), 0);
	drain(s, &e);
	ck_assert_uint_eq(e.n, 1);
	/* events.k8s.io/v1 names the fields its own way. */
	ck_assert_str_eq(kc_json_str(e.obj[0], "apiVersion"), "events.k8s.io/v1");
	ck_assert_str_eq(kc_json_str(e.obj[0], "note"), "hello");
	ck_assert_str_eq(kc_json_str(e.obj[0], "regarding", "name"), "p1");
	ck_assert_ptr_null(kc_json_get(e.obj[0], "message"));
	events_clear(&e);
	s->ops->release(s);
	api_free(dc);
}
END_TEST

Suite *
dc_watch_suite(void)
{
	Suite *s = suite_create("dc_watch");
	TCase *tc = tcase_create("watch");

	tcase_add_test(tc, initial_then_live);
	tcase_add_test(tc, selector_transitions);
	tcase_add_test(tc, bad_selectors);
	tcase_add_test(tc, replay_and_expired);
	tcase_add_test(tc, overflow);
	tcase_add_test(tc, replay_beyond_backlog);
	tcase_add_test(tc, history_keeps_fresh_events);
	tcase_add_test(tc, timeout_and_bookmarks);
	tcase_add_test(tc, bookmark_before_timeout);
	tcase_add_test(tc, tables);
	tcase_add_test(tc, shared_chunks);
	tcase_add_test(tc, events_view);
	suite_add_tcase(s, tc);
	return s;
}

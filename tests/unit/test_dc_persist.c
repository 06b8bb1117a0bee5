/*
 * test_dc_persist.c: --data-dir persistence (devcluster/persist.c):
 * objects and the resourceVersion counter survive a restart, restored
 * CRDs are served again, writes are committed in groups, and a
 * database that cannot be trusted stops the start with a clear error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <sqlite3.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/str.h>

#include "dc_testutil.h"
#include "testutil.h"

#define CM_PATH		"/api/v1/namespaces/default/configmaps"
#define WIDGETS		"/apis/example.com/v1/namespaces/default/widgets"

static const char crd_json[] =
    "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
    "\"metadata\":{\"name\":\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\","
    "\"names\":{\"plural\":\"widgets\",\"singular\":\"widget\",\"kind\":\"Widget\","
    "\"listKind\":\"WidgetList\"},\"scope\":\"Namespaced\",\"versions\":[{\"name\":\"v1\","
    "\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\","
    "\"x-kubernetes-preserve-unknown-fields\":true}}}]}}";

static struct dc *dc;
static char *dir;

static void
setup(void)
{
	fake_clock_install(5000000);
	dir = tu_tmpdir();
}

static void
stop(void)
{
	if (dc == NULL)
		return;
	gc_fini(dc);
	namespace_fini(dc);
	crd_fini(dc);
	persist_fini(dc);
	dc = api_free(dc);
}

static void
teardown(void)
{
	stop();
	tu_tmpdir_remove(dir);
	dir = NULL;
	fake_clock_uninstall();
}

/* Starts an instance on 'dir' (as main.c does): 0 or persist_open()'s code. */
static int
start(struct kc_status *st)
{
	struct dc_persist *p = NULL;
	int r;

	if ((r = persist_open(dir, &p, st)) < 0)
		return r;
	dc = dct_new(&(struct dc_opts){ .kube_version = "1.32", .restore = persist_restore,
	    .restore_arg = p });
	ck_assert_int_eq(crd_init(dc), 0);
	ck_assert_int_eq(gc_init(dc), 0);
	ck_assert_int_eq(namespace_init(dc), 0);
	(void)timers_run(dc);
	return 0;
}

static void
restart(void)
{
	struct kc_status st = { 0 };

	stop();
	ck_assert_msg(start(&st) == 0, "%s", st.message);
}

/* Runs a request; returns the parsed reply (NULL when not JSON). */
static struct json_object *
call(enum dc_method m, const char *target, const char *body, int want)
{
	return dct_run(dc, &(struct dct_call){ .method = m, .target = target, .body = body,
	    .ctype = body != NULL && m == DC_PATCH ? "application/merge-patch+json" : NULL },
	    want, NULL);
}

static void
expect(enum dc_method m, const char *target, const char *body, int want)
{
	dct_put(call(m, target, body, want));
}

static int
no_event(void *arg, struct dc_event *ev)
{
	(void)arg;
	(void)ev;
	return 0;
}

/* Every object of every collection, as one JSON object keyed by collection. */
static struct json_object *
snapshot(void)
{
	struct json_object *all = json_object_new_object();
	const struct dc_rtype *t;

	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link)) {
		struct json_object **objs = NULL, *arr = json_object_new_array();
		char key[2 * DC_SEGMENT_MAX];
		size_t n = 0;

		(void)snprintf(key, sizeof(key), "%s/%s", coll_group(t->coll),
		    coll_resource(t->coll));
		ck_assert_int_eq(coll_list(t->coll, NULL, NULL, &objs, &n), 0);
		for (size_t i = 0; i < n; i++)
			ck_assert_int_eq(kc_json_append(arr, kc_json_copy(objs[i])), 0);
		objs_free(objs, n);
		ck_assert_int_eq(kc_json_put(all, key, arr), 0);
	}
	return all;
}

START_TEST(round_trip)
{
	struct kc_status st = { 0 };
	struct json_object *before, *after, *o;
	uint64_t rv;
	char rvs[32];

	ck_assert_int_eq(start(&st), 0);
	expect(DC_POST, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"team\"}}", 201);
	expect(DC_POST, CM_PATH, "{\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":\"1\"}},"
	    "\"data\":{\"k\":\"v\"}}", 201);
	expect(DC_POST, "/api/v1/namespaces/team/secrets", "{\"metadata\":{\"name\":\"s\"},"
	    "\"stringData\":{\"p\":\"w\"}}", 201);
	expect(DC_POST, CM_PATH, "{\"metadata\":{\"name\":\"gone\"}}", 201);
	expect(DC_PATCH, CM_PATH "/a", "{\"data\":{\"k\":\"v2\"}}", 200);
	o = call(DC_GET, CM_PATH "/a", NULL, 200);
	(void)kc_strlcpy(rvs, kc_json_str(o, "metadata", "resourceVersion"), sizeof(rvs));
	json_object_put(o);
	expect(DC_POST, "/api/v1/nodes", "{\"metadata\":{\"name\":\"n1\"}}", 201);
	/* A deletion moves the counter but leaves no row: the counter is kept apart. */
	expect(DC_DELETE, CM_PATH "/gone", NULL, 200);
	rv = storage_rv(dc->store);
	before = snapshot();
	restart();
	after = snapshot();
	ck_assert_msg(kc_json_equal(before, after), "before %s\nafter %s",
	    json_object_to_json_string(before), json_object_to_json_string(after));
	json_object_put(before);
	json_object_put(after);
	ck_assert_uint_eq(storage_rv(dc->store), rv);
	o = call(DC_GET, CM_PATH "/a", NULL, 200);
	ck_assert_str_eq(kc_json_str(o, "metadata", "resourceVersion"), rvs);
	ck_assert_str_eq(kc_json_str(o, "data", "k"), "v2");
	json_object_put(o);
	expect(DC_GET, CM_PATH "/gone", NULL, 404);
	/* The next write continues the counter. */
	o = call(DC_POST, CM_PATH, "{\"metadata\":{\"name\":\"b\"}}", 201);
	ck_assert_uint_eq(obj_rv(o), rv + 1);
	json_object_put(o);
	/* No history across a restart: an older watch start is expired (410). */
	ck_assert_int_eq(coll_history(dct_type(dc, "configmaps")->coll, rv - 1, no_event,
	    NULL, NULL), KC_EEXPIRED);
	/* The bootstrap does not duplicate, and recreates what was deleted. */
	expect(DC_DELETE, "/api/v1/namespaces/kube-node-lease", NULL, 200);
	(void)timers_run(dc);
	restart();
	expect(DC_GET, "/api/v1/namespaces/kube-node-lease", NULL, 200);
	expect(DC_GET, "/api/v1/namespaces/team/serviceaccounts/default", NULL, 200);
	expect(DC_GET, "/api/v1/namespaces/default/services/kubernetes", NULL, 200);
}
END_TEST

START_TEST(group_commit)
{
	struct kc_status st = { 0 };
	struct dc_persist_stats s0, s;
	char body[128];

	ck_assert_int_eq(start(&st), 0);
	ck_assert_int_eq(persist_flush(dc), 0);
	persist_stats(dc, &s0);
	ck_assert(!s0.in_txn);
	ck_assert_uint_ge(s0.commits, 1);	/* the bootstrap's */
	/* One loop turn's writes: one transaction, committed at the flush. */
	for (int i = 0; i < 20; i++) {
		(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"c%d\"}}", i);
		expect(DC_POST, CM_PATH, body, 201);
	}
	persist_stats(dc, &s);
	ck_assert(s.in_txn);
	ck_assert_uint_eq(s.commits, s0.commits);
	ck_assert_uint_eq(s.writes, s0.writes + 20);
	/* What http.c asks before a reply: not yet; at the end of the turn: commit. */
	ck_assert_int_eq(dc->hooks.flush(dc, false), DC_DECLINED);
	ck_assert_int_eq(dc->hooks.flush(dc, true), 0);
	ck_assert_int_eq(dc->hooks.flush(dc, false), 0);
	persist_stats(dc, &s);
	ck_assert(!s.in_txn);
	ck_assert_uint_eq(s.commits, s0.commits + 1);
	/* Nothing to commit: no transaction. */
	ck_assert_int_eq(persist_flush(dc), 0);
	persist_stats(dc, &s);
	ck_assert_uint_eq(s.commits, s0.commits + 1);
	/* Without a reply to write, the loop timer commits. */
	expect(DC_DELETE, CM_PATH "/c0", NULL, 200);
	ck_assert_uint_ge(timers_run(dc), 1);
	persist_stats(dc, &s);
	ck_assert(!s.in_txn);
	ck_assert_uint_eq(s.commits, s0.commits + 2);
	restart();
	persist_stats(dc, &s);
	expect(DC_GET, CM_PATH "/c19", NULL, 200);
	expect(DC_GET, CM_PATH "/c0", NULL, 404);
}
END_TEST

/* A write that cannot be saved is never acknowledged; the file is rewritten later. */
START_TEST(failed_writes_rewrite)
{
	struct kc_status st = { 0 };
	struct dc_persist_stats ps;
	char body[2400];
	int i;

	ck_assert_int_eq(start(&st), 0);
	expect(DC_POST, CM_PATH, "{\"metadata\":{\"name\":\"before\"}}", 201);
	ck_assert_int_eq(persist_flush(dc), 0);
	/* The disk is full: the database may not grow. */
	ck_assert_int_eq(persist_sql(dc, "PRAGMA max_page_count = 1"), 0);
	for (i = 0; i < 100; i++) {
		(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"c%d\"},"
		    "\"data\":{\"k\":\"%02000d\"}}", i, i);
		expect(DC_POST, CM_PATH, body, 201);
	}
	/* http.c would close the connection rather than answer. */
	ck_assert_int_lt(dc->hooks.flush(dc, false), 0);
	ck_assert_int_eq(persist_flush(dc), KC_EUNAVAILABLE);
	/* Space again: after the retry delay, the whole table is rewritten. */
	ck_assert_int_eq(persist_sql(dc, "PRAGMA max_page_count = 1000000"), 0);
	ck_assert_int_eq(persist_flush(dc), KC_EUNAVAILABLE);
	fake_clock_advance(1000);
	ck_assert_int_eq(persist_flush(dc), 0);
	ck_assert_int_eq(dc->hooks.flush(dc, false), 0);
	persist_stats(dc, &ps);
	ck_assert(!ps.in_txn);
	restart();
	expect(DC_GET, CM_PATH "/before", NULL, 200);
	expect(DC_GET, CM_PATH "/c0", NULL, 200);
	expect(DC_GET, CM_PATH "/c99", NULL, 200);
}
END_TEST

/*
 * Terminating namespaces and foreground deletions carry on after a
 * restart, although no event tells the controllers about them.
 */
START_TEST(controllers_resume)
{
	struct kc_status st = { 0 };
	struct json_object *o;
	char body[512];

	ck_assert_int_eq(start(&st), 0);
	expect(DC_POST, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"t\"}}", 201);
	expect(DC_POST, "/api/v1/namespaces/t/configmaps", "{\"metadata\":{\"name\":\"c\"}}",
	    201);
	o = call(DC_POST, CM_PATH, "{\"metadata\":{\"name\":\"owner\"}}", 201);
	(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"dep\","
	    "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":"
	    "\"owner\",\"uid\":\"%s\",\"blockOwnerDeletion\":true}]}}",
	    kc_json_str(o, "metadata", "uid"));
	json_object_put(o);
	expect(DC_POST, CM_PATH, body, 201);
	/* Stopped before any loop timer ran: the controllers never saw these. */
	expect(DC_DELETE, "/api/v1/namespaces/t", NULL, 200);
	expect(DC_DELETE, CM_PATH "/owner?propagationPolicy=Foreground", NULL, 200);
	restart();
	for (int i = 0; i < 10; i++) {
		fake_clock_advance(100);
		(void)timers_run(dc);
	}
	expect(DC_GET, "/api/v1/namespaces/t", NULL, 404);
	expect(DC_GET, "/api/v1/namespaces/t/configmaps/c", NULL, 404);
	expect(DC_GET, CM_PATH "/owner", NULL, 404);
	expect(DC_GET, CM_PATH "/dep", NULL, 404);
}
END_TEST

START_TEST(crds_are_served_after_restart)
{
	struct kc_status st = { 0 };
	struct json_object *o;

	ck_assert_int_eq(start(&st), 0);
	expect(DC_POST, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd_json,
	    201);
	(void)timers_run(dc);
	expect(DC_POST, WIDGETS, "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\","
	    "\"metadata\":{\"name\":\"w1\"},\"spec\":{\"size\":3}}", 201);
	restart();
	o = call(DC_GET, WIDGETS "/w1", NULL, 200);
	ck_assert_int_eq(kc_json_int(o, 0, "spec", "size"), 3);
	json_object_put(o);
	/* The CRD goes, its resources go, and they stay gone. */
	expect(DC_DELETE, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
	    "widgets.example.com", NULL, 200);
	for (int i = 0; i < 20 && registry_find_any(dc, "example.com", "widgets") != NULL; i++) {
		fake_clock_advance(100);
		(void)timers_run(dc);
	}
	ck_assert_ptr_null(registry_find_any(dc, "example.com", "widgets"));
	restart();
	ck_assert_ptr_null(registry_find_any(dc, "example.com", "widgets"));
	ck_assert(storage_find_coll(dc->store, "example.com", "widgets") == NULL ||
	    coll_count(storage_find_coll(dc->store, "example.com", "widgets"), NULL) == 0);
}
END_TEST

/* Writes a devcluster database, then changes it behind its back with 'sql'. */
static void
tamper(const char *sql)
{
	struct kc_status st = { 0 };
	sqlite3 *db;
	char *path = kc_asprintf("%s/state.db", dir), *wal = kc_asprintf("%s-wal", path);
	char *err = NULL;

	/* A fresh database each time. */
	(void)unlink(path);
	(void)unlink(wal);
	kc_free(wal);
	ck_assert_msg(start(&st) == 0, "%s", st.message);
	expect(DC_POST, CM_PATH, "{\"metadata\":{\"name\":\"ok\"}}", 201);
	stop();
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &err) == SQLITE_OK, "%s", err);
	sqlite3_close(db);
	kc_free(path);
}

static void
expect_open_error(const char *fragment)
{
	struct kc_status st = { 0 };
	struct dc_persist *p = NULL;

	ck_assert_int_eq(persist_open(dir, &p, &st), KC_ECONFIG);
	ck_assert_ptr_null(p);
	ck_assert_msg(strstr(st.message, fragment) != NULL, "\"%s\" lacks \"%s\"", st.message,
	    fragment);
	ck_assert_msg(strstr(st.message, "state.db") != NULL, "%s", st.message);
}

START_TEST(corrupt_databases)
{
	char *path;

	/* Not a database at all. */
	kc_free(tu_write(dir, "state.db", "this is not an SQLite file, not at all, no....."
	    "................................................................................"));
	expect_open_error("file is not a database");
	/* A database of another program. */
	path = kc_asprintf("%s/state.db", dir);
	ck_assert_int_eq(unlink(path), 0);
	{
		sqlite3 *db;

		ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
		ck_assert_int_eq(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL),
		    SQLITE_OK);
		sqlite3_close(db);
	}
	expect_open_error("not a trainyard-devcluster database");
	/* ... which was left as it was (no write-ahead log of ours). */
	{
		char *wal = kc_asprintf("%s-wal", path);

		ck_assert_int_ne(access(wal, F_OK), 0);
		kc_free(wal);
	}
	ck_assert_int_eq(unlink(path), 0);
	kc_free(path);
	/* Rows that disagree with their objects, or are not JSON. */
	tamper("UPDATE objects SET data = '{\"metadata\":' WHERE name = 'ok'");
	expect_open_error("row configmaps/default/ok: malformed JSON");
	tamper("UPDATE objects SET name = 'other' WHERE name = 'ok'");
	expect_open_error("row configmaps/default/other: metadata.name does not match");
	tamper("UPDATE objects SET rv = rv + 1 WHERE name = 'ok'");
	expect_open_error("resourceVersion does not match");
	tamper("UPDATE meta SET value = 'many' WHERE key = 'rv'");
	expect_open_error("the resourceVersion counter \"many\" is malformed");
	tamper("PRAGMA user_version = 7");
	expect_open_error("schema version 7");
}
END_TEST

START_TEST(damaged_pages)
{
	struct kc_status st = { 0 };
	char *path, body[256], junk[4096];
	int fd;

	ck_assert_int_eq(start(&st), 0);
	/* Enough rows for several pages, then scribble over the middle of the file. */
	for (int i = 0; i < 200; i++) {
		(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"c%03d\"},"
		    "\"data\":{\"k\":\"%0100d\"}}", i, i);
		expect(DC_POST, CM_PATH, body, 201);
	}
	stop();
	path = kc_asprintf("%s/state.db", dir);
	memset(junk, 0xa5, sizeof(junk));
	ck_assert_int_ge(fd = open(path, O_WRONLY), 0);
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), 4 * 4096), (ssize_t)sizeof(junk));
	ck_assert_int_eq(close(fd), 0);
	kc_free(path);
	ck_assert_int_eq(persist_open(dir, &(struct dc_persist *){ NULL }, &st), KC_ECONFIG);
	ck_assert_msg(strstr(st.message, "corrupt") != NULL ||
	    strstr(st.message, "malformed") != NULL, "%s", st.message);
}
END_TEST

START_TEST(one_process_per_data_dir)
{
	struct kc_status st = { 0 };
	struct dc_persist *p = NULL;

	ck_assert_int_eq(start(&st), 0);
	ck_assert_int_eq(persist_open(dir, &p, &st), KC_ECONFIG);
	ck_assert_msg(strstr(st.message, "in use by another process") != NULL, "%s",
	    st.message);
	stop();
	ck_assert_int_eq(persist_open(dir, &p, &st), 0);
	p = persist_free(p);
}
END_TEST

START_TEST(unreadable_dir)
{
	struct kc_status st = { 0 };
	struct dc_persist *p = NULL;
	char *sub = kc_asprintf("%s/missing/deeper", dir);

	ck_assert_int_eq(persist_open(sub, &p, &st), KC_ECONFIG);
	ck_assert(strstr(st.message, "unable to open database file") != NULL);
	kc_free(sub);
}
END_TEST

START_TEST(open_alloc_failures)
{
	struct kc_status st = { 0 };
	struct dc_persist *p = NULL;

	ck_assert_int_eq(start(&st), 0);
	expect(DC_POST, CM_PATH, "{\"metadata\":{\"name\":\"a\"}}", 201);
	stop();
	for (size_t i = 0;; i++) {
		int r;

		fail_alloc_after(i);
		r = persist_open(dir, &p, &st);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_msg(i < 10000, "persist_open never succeeded");
	}
	p = persist_free(p);
}
END_TEST

Suite *
dc_persist_suite(void)
{
	Suite *s = suite_create("dc_persist");
	TCase *tc = tcase_create("persist");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, group_commit);
	tcase_add_test(tc, failed_writes_rewrite);
	tcase_add_test(tc, controllers_resume);
	tcase_add_test(tc, crds_are_served_after_restart);
	tcase_add_test(tc, corrupt_databases);
	tcase_add_test(tc, damaged_pages);
	tcase_add_test(tc, one_process_per_data_dir);
	tcase_add_test(tc, unreadable_dir);
	tcase_add_test(tc, open_alloc_failures);
	suite_add_tcase(s, tc);
	return s;
}

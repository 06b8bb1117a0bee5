/*
 * test_dc_storage.c: devcluster/storage.c: the resourceVersion counter,
 * no-op writes, conflicts, ordering, history windows and snapshots, and
 * subscriber ordering, and the cached JSON texts of stored objects.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/json.h>

#include "../../devcluster/devcluster.h"
#include "testutil.h"

static struct json_object *
obj(const char *ns, const char *name, const char *extra)
{
	struct json_object *o = NULL;
	char text[1024];

	(void)snprintf(text, sizeof(text), "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
	    "\"metadata\":{\"name\":\"%s\"%s%s%s}%s%s}", name, ns != NULL ? ",\"namespace\":\"" : "",
	    ns != NULL ? ns : "", ns != NULL ? "\"" : "", extra != NULL ? "," : "",
	    extra != NULL ? extra : "");
	ck_assert_int_eq(kc_json_parse(text, strlen(text), &o, NULL), 0);
	return o;
}

static struct dc_store *
store(uint32_t history)
{
	struct dc_store *st = NULL;

	ck_assert_int_eq(storage_new(&(struct dc_store_opts){ .history_max = history }, &st),
	    0);
	return st;
}

/* Records the events a subscriber sees. */
struct rec {
	char		 log[64][64];
	size_t		 n;
	struct dc_store	*st;
	struct dc_coll	*coll;
	bool		 write_once;
};

static const char *const ev_type_names[] = { "ADDED", "MODIFIED", "DELETED" };

static void
record(void *arg, const struct dc_event *ev)
{
	struct rec *r = arg;

	if (r->n < 64)
		(void)snprintf(r->log[r->n++], sizeof(r->log[0]), "%s %s %lu",
		    ev_type_names[ev->type], kc_json_str(ev->obj, "metadata", "name"),
		    (unsigned long)ev->rv);
	if (r->write_once) {
		/* A write from inside a callback is delivered after this one. */
		r->write_once = false;
		ck_assert_int_eq(storage_create(r->st, r->coll, obj("ns", "nested", NULL),
		    NULL), 0);
	}
}

static void
record2(void *arg, const struct dc_event *ev)
{
	record(arg, ev);
}

START_TEST(create_update_delete)
{
	struct dc_store *st = store(0);
	struct dc_coll *c = NULL, *c2 = NULL;
	struct json_object *out = NULL, *next;
	struct rec rec = { 0 };

	ck_assert_int_eq(storage_coll(st, "", "configmaps", true, &c), 0);
	ck_assert_int_eq(storage_coll(st, "", "configmaps", true, &c2), 0);
	ck_assert_ptr_eq(c, c2);
	ck_assert_ptr_eq(storage_find_coll(st, "", "configmaps"), c);
	ck_assert_ptr_null(storage_find_coll(st, "", "secrets"));
	ck_assert_str_eq(coll_group(c), "");
	ck_assert_str_eq(coll_resource(c), "configmaps");
	ck_assert(coll_namespaced(c));
	ck_assert_int_eq(storage_subscribe(st, record, &rec), 0);

	ck_assert_uint_eq(storage_rv(st), 0);
	ck_assert_int_eq(storage_create(st, c, obj("ns", "a", "\"data\":{\"k\":\"1\"}"), &out),
	    0);
	ck_assert_str_eq(kc_json_str(out, "metadata", "resourceVersion"), "1");
	ck_assert_uint_eq(obj_rv(out), 1);
	json_object_put(out);
	ck_assert_uint_eq(storage_rv(st), 1);
	ck_assert_int_eq(storage_create(st, c, obj("ns", "a", NULL), NULL), KC_EEXISTS);
	ck_assert_uint_eq(storage_rv(st), 1);

	/* An update that changes nothing stores nothing. */
	next = obj("ns", "a", "\"data\":{\"k\":\"1\"}");
	ck_assert_int_eq(storage_update(st, c, next, 0, &out), DC_UNCHANGED);
	ck_assert_uint_eq(obj_rv(out), 1);
	json_object_put(out);
	ck_assert_uint_eq(storage_rv(st), 1);
	ck_assert_uint_eq(rec.n, 1);

	/* A stale expected resourceVersion conflicts. */
	ck_assert_int_eq(storage_update(st, c, obj("ns", "a", "\"data\":{\"k\":\"2\"}"), 7,
	    NULL), KC_ECONFLICT);
	ck_assert_int_eq(storage_update(st, c, obj("ns", "a", "\"data\":{\"k\":\"2\"}"), 1,
	    &out), 0);
	ck_assert_uint_eq(obj_rv(out), 2);
	json_object_put(out);
	ck_assert_int_eq(storage_update(st, c, obj("ns", "zz", NULL), 0, NULL), KC_ENOTFOUND);
	ck_assert_int_eq(storage_update(st, c, obj(NULL, "a", NULL), 0, NULL), -EINVAL);

	/* Deletion keeps the final state under a new resourceVersion. */
	ck_assert_int_eq(storage_delete(st, c, obj("ns", "a", "\"data\":{\"k\":\"2\"}"), 1,
	    NULL), KC_ECONFLICT);
	ck_assert_int_eq(storage_delete(st, c, json_object_get((struct json_object *)
	    (uintptr_t)coll_get(c, "ns", "a")), 0, &out), 0);
	ck_assert_uint_eq(obj_rv(out), 3);
	ck_assert_str_eq(kc_json_str(out, "data", "k"), "2");
	json_object_put(out);
	ck_assert_ptr_null(coll_get(c, "ns", "a"));
	ck_assert_int_eq(storage_delete(st, c, obj("ns", "a", NULL), 0, NULL), KC_ENOTFOUND);

	ck_assert_uint_eq(rec.n, 3);
	ck_assert_str_eq(rec.log[0], "ADDED a 1");
	ck_assert_str_eq(rec.log[1], "MODIFIED a 2");
	ck_assert_str_eq(rec.log[2], "DELETED a 3");
	storage_unsubscribe(st, record, &rec);
	ck_assert_int_eq(storage_create(st, c, obj("ns", "b", NULL), NULL), 0);
	ck_assert_uint_eq(rec.n, 3);
	storage_free(st);
}
END_TEST

START_TEST(cluster_scoped)
{
	struct dc_store *st = store(0);
	struct dc_coll *c = NULL;
	char key[64];

	ck_assert_int_eq(storage_coll(st, "", "namespaces", false, &c), 0);
	/* A namespace in the body of a cluster-scoped object is ignored. */
	ck_assert_int_eq(storage_create(st, c, obj("x", "n1", NULL), NULL), 0);
	ck_assert_ptr_nonnull(coll_get(c, NULL, "n1"));
	ck_assert_ptr_nonnull(coll_get(c, "", "n1"));
	ck_assert_int_eq(storage_create(st, c, obj(NULL, "", NULL), NULL), -EINVAL);
	ck_assert_int_eq(obj_key(coll_get(c, "", "n1"), key, sizeof(key)), 0);
	ck_assert_str_eq(key, "x/n1");
	ck_assert_int_eq(obj_key(coll_get(c, "", "n1"), key, 3), -ENAMETOOLONG);
	storage_free(st);
}
END_TEST

static void
expect_names(struct json_object **objs, size_t n, const char *const *want)
{
	size_t i;

	for (i = 0; want[i] != NULL; i++) {
		char key[128];

		ck_assert_uint_lt(i, n);
		ck_assert_int_eq(obj_key(objs[i], key, sizeof(key)), 0);
		ck_assert_str_eq(key, want[i]);
	}
	ck_assert_uint_eq(i, n);
}

START_TEST(ordering)
{
	struct dc_store *st = store(0);
	struct dc_coll *c = NULL;
	struct json_object **objs = NULL;
	size_t n = 0;
	static const char *const names[][2] = {
		{ "a-b", "y" }, { "a", "x" }, { "b", "a" }, { "a", "c" }, { "a", "a" },
		{ "a-b", "a" },
	};

	ck_assert_int_eq(storage_coll(st, "", "configmaps", true, &c), 0);
	for (size_t i = 0; i < KC_ARRAY_SIZE(names); i++)
		ck_assert_int_eq(storage_create(st, c, obj(names[i][0], names[i][1], NULL),
		    NULL), 0);
	/* (namespace, name) order, not the order of "ns/name" strings. */
	ck_assert_int_eq(coll_list(c, NULL, NULL, &objs, &n), 0);
	expect_names(objs, n, (const char *const []){ "a/a", "a/c", "a/x", "a-b/a",
	    "a-b/y", "b/a", NULL });
	objs_free(objs, n);
	ck_assert_int_eq(coll_list(c, "a", NULL, &objs, &n), 0);
	expect_names(objs, n, (const char *const []){ "a/a", "a/c", "a/x", NULL });
	objs_free(objs, n);
	ck_assert_int_eq(coll_list(c, "a", "a/c", &objs, &n), 0);
	expect_names(objs, n, (const char *const []){ "a/x", NULL });
	objs_free(objs, n);
	ck_assert_int_eq(coll_list(c, NULL, "a/x", &objs, &n), 0);
	expect_names(objs, n, (const char *const []){ "a-b/a", "a-b/y", "b/a", NULL });
	objs_free(objs, n);
	ck_assert_int_eq(coll_list(c, "zz", NULL, &objs, &n), 0);
	ck_assert_uint_eq(n, 0);
	objs_free(objs, n);
	ck_assert_int_eq(coll_list(c, NULL, "no-slash", &objs, &n), -EINVAL);
	ck_assert_uint_eq(coll_count(c, NULL), 6);
	ck_assert_uint_eq(coll_count(c, "a"), 3);
	ck_assert_uint_eq(coll_count(c, "a-b"), 2);
	ck_assert_uint_eq(coll_count(c, "zz"), 0);
	storage_free(st);
}
END_TEST

START_TEST(many_objects)
{
	struct dc_store *st = store(100);
	struct dc_coll *c = NULL;
	struct json_object **objs = NULL;
	size_t n = 0;
	char name[32];

	ck_assert_int_eq(storage_coll(st, "", "configmaps", true, &c), 0);
	for (int i = 0; i < 2000; i++) {
		(void)snprintf(name, sizeof(name), "o%04d", (i * 7919) % 2000);
		ck_assert_int_eq(storage_create(st, c, obj(i % 2 ? "odd" : "even", name, NULL),
		    NULL), 0);
	}
	ck_assert_uint_eq(coll_count(c, NULL), 2000);
	for (int i = 0; i < 2000; i += 3) {
		(void)snprintf(name, sizeof(name), "o%04d", (i * 7919) % 2000);
		ck_assert_int_eq(storage_delete(st, c, obj(i % 2 ? "odd" : "even", name, NULL),
		    0, NULL), 0);
	}
	ck_assert_int_eq(coll_list(c, NULL, NULL, &objs, &n), 0);
	ck_assert_uint_eq(n, coll_count(c, NULL));
	for (size_t i = 1; i < n; i++) {
		char a[64], b[64];

		(void)obj_key(objs[i - 1], a, sizeof(a));
		(void)obj_key(objs[i], b, sizeof(b));
		ck_assert_int_lt(strcmp(a, b), 0);
	}
	objs_free(objs, n);
	storage_free(st);
}
END_TEST

struct hist {
	uint64_t	 rvs[16];
	size_t		 n;
};

static int
collect(void *arg, struct dc_event *ev)
{
	struct hist *h = arg;

	h->rvs[h->n++] = ev->rv;
	return 0;
}

START_TEST(history_window)
{
	struct dc_store *st = store(3);
	struct dc_coll *c = NULL, *other = NULL;
	struct hist h = { 0 };
	uint64_t oldest = 0;

	ck_assert_int_eq(storage_coll(st, "", "configmaps", true, &c), 0);
	ck_assert_int_eq(storage_coll(st, "", "secrets", true, &other), 0);
	ck_assert_int_eq(storage_create(st, c, obj("ns", "a", NULL), NULL), 0);	/* 1 */
	ck_assert_int_eq(storage_create(st, other, obj("ns", "s", NULL), NULL), 0);	/* 2 */
	ck_assert_int_eq(storage_create(st, c, obj("ns", "b", NULL), NULL), 0);	/* 3 */
	ck_assert_int_eq(coll_history(c, 0, collect, &h, &oldest), 0);
	ck_assert_uint_eq(h.n, 2);
	ck_assert_uint_eq(h.rvs[0], 1);
	ck_assert_uint_eq(h.rvs[1], 3);
	ck_assert_int_eq(storage_create(st, c, obj("ns", "c", NULL), NULL), 0);	/* 4 */
	ck_assert_int_eq(storage_create(st, c, obj("ns", "d", NULL), NULL), 0);	/* 5 */
	/* The window keeps 3, 4 and 5; 1 is gone. */
	h.n = 0;
	ck_assert_int_eq(coll_history(c, 0, collect, &h, &oldest), KC_EEXPIRED);
	ck_assert_uint_eq(oldest, 2);
	ck_assert_uint_eq(h.n, 0);
	ck_assert_int_eq(coll_history(c, 1, collect, &h, &oldest), 0);
	ck_assert_uint_eq(h.n, 3);
	ck_assert_uint_eq(h.rvs[0], 3);
	h.n = 0;
	ck_assert_int_eq(coll_history(c, 4, collect, &h, NULL), 0);
	ck_assert_uint_eq(h.n, 1);
	ck_assert_uint_eq(h.rvs[0], 5);
	/* The other collection's window is its own. */
	h.n = 0;
	ck_assert_int_eq(coll_history(other, 0, collect, &h, NULL), 0);
	ck_assert_uint_eq(h.n, 1);
	/* The current resourceVersion is always watchable. */
	ck_assert_int_eq(coll_history(c, storage_rv(st), collect, &h, NULL), 0);
	storage_free(st);
}
END_TEST

START_TEST(snapshots)
{
	struct dc_store *st = store(10);
	struct dc_coll *c = NULL;
	struct json_object **objs = NULL;
	size_t n = 0;

	ck_assert_int_eq(storage_coll(st, "", "configmaps", true, &c), 0);
	ck_assert_int_eq(storage_create(st, c, obj("ns", "a", "\"data\":{\"v\":\"1\"}"), NULL),
	    0);							/* 1 */
	ck_assert_int_eq(storage_create(st, c, obj("ns", "b", NULL), NULL), 0);	/* 2 */
	ck_assert_int_eq(storage_update(st, c, obj("ns", "a", "\"data\":{\"v\":\"2\"}"), 0,
	    NULL), 0);						/* 3 */
	ck_assert_int_eq(storage_delete(st, c, obj("ns", "b", NULL), 0, NULL), 0);	/* 4 */
	ck_assert_int_eq(storage_create(st, c, obj("ns", "c", NULL), NULL), 0);	/* 5 */

	/* At 2: a (v1), b. */
	ck_assert_int_eq(coll_list_at(c, 2, NULL, NULL, &objs, &n), 0);
	expect_names(objs, n, (const char *const []){ "ns/a", "ns/b", NULL });
	ck_assert_str_eq(kc_json_str(objs[0], "data", "v"), "1");
	objs_free(objs, n);
	/* At 3: a (v2), b; after "ns/a": b. */
	ck_assert_int_eq(coll_list_at(c, 3, NULL, "ns/a", &objs, &n), 0);
	expect_names(objs, n, (const char *const []){ "ns/b", NULL });
	objs_free(objs, n);
	/* At 4: a only. */
	ck_assert_int_eq(coll_list_at(c, 4, "ns", NULL, &objs, &n), 0);
	expect_names(objs, n, (const char *const []){ "ns/a", NULL });
	ck_assert_str_eq(kc_json_str(objs[0], "data", "v"), "2");
	objs_free(objs, n);
	/* Current. */
	ck_assert_int_eq(coll_list_at(c, 99, NULL, NULL, &objs, &n), 0);
	expect_names(objs, n, (const char *const []){ "ns/a", "ns/c", NULL });
	objs_free(objs, n);
	/* Other namespaces hold nothing. */
	ck_assert_int_eq(coll_list_at(c, 2, "other", NULL, &objs, &n), 0);
	ck_assert_uint_eq(n, 0);
	objs_free(objs, n);
	storage_free(st);

	/* Compacted history cannot rebuild an old snapshot. */
	st = store(2);
	ck_assert_int_eq(storage_coll(st, "", "configmaps", true, &c), 0);
	for (int i = 0; i < 4; i++) {
		char name[24];

		(void)snprintf(name, sizeof(name), "o%d", i);
		ck_assert_int_eq(storage_create(st, c, obj("ns", name, NULL), NULL), 0);
	}
	ck_assert_int_eq(coll_list_at(c, 1, NULL, NULL, &objs, &n), KC_EEXPIRED);
	ck_assert_int_eq(coll_list_at(c, 2, NULL, NULL, &objs, &n), 0);
	expect_names(objs, n, (const char *const []){ "ns/o0", "ns/o1", NULL });
	objs_free(objs, n);
	storage_free(st);
}
END_TEST

START_TEST(subscriber_order)
{
	struct dc_store *st = store(0);
	struct dc_coll *c = NULL;
	struct rec a = { 0 }, b = { 0 };

	ck_assert_int_eq(storage_coll(st, "", "configmaps", true, &c), 0);
	a.st = st;
	a.coll = c;
	a.write_once = true;
	ck_assert_int_eq(storage_subscribe(st, record, &a), 0);
	ck_assert_int_eq(storage_subscribe(st, record2, &b), 0);
	ck_assert_int_eq(storage_create(st, c, obj("ns", "first", NULL), NULL), 0);
	/* Both subscribers see first, then nested, in one order. */
	ck_assert_uint_eq(a.n, 2);
	ck_assert_uint_eq(b.n, 2);
	ck_assert_str_eq(a.log[0], "ADDED first 1");
	ck_assert_str_eq(a.log[1], "ADDED nested 2");
	ck_assert_str_eq(b.log[0], "ADDED first 1");
	ck_assert_str_eq(b.log[1], "ADDED nested 2");
	storage_free(st);
}
END_TEST

START_TEST(sameness)
{
	struct json_object *a = obj("ns", "a", "\"data\":{\"k\":\"v\"}");
	struct json_object *b = obj("ns", "a", "\"data\":{\"k\":\"v\"}");
	struct json_object *c, *mf1 = NULL, *mf2 = NULL;
	const char *t1 = "[{\"manager\":\"m\",\"operation\":\"Update\","
	    "\"time\":\"2026-01-01T00:00:00Z\"}]";
	const char *t2 = "[{\"manager\":\"m\",\"operation\":\"Update\","
	    "\"time\":\"2027-01-01T00:00:00Z\"}]";
	const char *t3 = "[{\"manager\":\"n\",\"operation\":\"Update\","
	    "\"time\":\"2027-01-01T00:00:00Z\"}]";

	ck_assert(kc_json_set_str(kc_json_obj_of(a, "metadata"), "resourceVersion", "5") == 0);
	ck_assert(obj_same(a, b));
	ck_assert_int_eq(kc_json_parse(t1, strlen(t1), &mf1, NULL), 0);
	ck_assert_int_eq(kc_json_parse(t2, strlen(t2), &mf2, NULL), 0);
	ck_assert_int_eq(kc_json_put(kc_json_obj_of(a, "metadata"), "managedFields", mf1), 0);
	ck_assert(!obj_same(a, b));
	ck_assert_int_eq(kc_json_put(kc_json_obj_of(b, "metadata"), "managedFields", mf2), 0);
	/* Only the times differ. */
	ck_assert(obj_same(a, b));
	ck_assert_int_eq(kc_json_parse(t3, strlen(t3), &mf2, NULL), 0);
	ck_assert_int_eq(kc_json_put(kc_json_obj_of(b, "metadata"), "managedFields", mf2), 0);
	ck_assert(!obj_same(a, b));
	c = obj("ns", "a", "\"data\":{\"k\":\"w\"}");
	ck_assert(!obj_same(a, c));
	json_object_put(a);
	json_object_put(b);
	json_object_put(c);
}
END_TEST

START_TEST(with_rv)
{
	struct json_object *a = obj("ns", "a", "\"data\":{\"k\":\"v\"}"), *b;

	b = obj_with_rv(a, 42);
	ck_assert_ptr_nonnull(b);
	ck_assert_str_eq(kc_json_str(b, "metadata", "resourceVersion"), "42");
	ck_assert_ptr_null(kc_json_str(a, "metadata", "resourceVersion"));
	ck_assert_str_eq(kc_json_str(b, "data", "k"), "v");
	json_object_put(a);
	json_object_put(b);
}
END_TEST

static struct json_object *
parse(const char *text)
{
	struct json_object *o = NULL;

	ck_assert_int_eq(kc_json_parse(text, strlen(text), &o, NULL), 0);
	return o;
}

/* Equal members become references to the old tree's; the value stays the same. */
START_TEST(share_equal)
{
	struct json_object *old = parse("{\"phase\":\"Running\",\"podIP\":\"10.0.0.1\","
	    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"
	    "{\"type\":\"PodScheduled\",\"status\":\"True\"}],"
	    "\"hostIPs\":[{\"ip\":\"1.2.3.4\"}],\"nested\":{\"a\":{\"x\":1},\"b\":2}}");
	const char *text = "{\"phase\":\"Running\",\"podIP\":\"10.0.0.2\","
	    "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"},"
	    "{\"type\":\"PodScheduled\",\"status\":\"True\"}],"
	    "\"hostIPs\":[{\"ip\":\"1.2.3.4\"},{\"ip\":\"::1\"}],"
	    "\"nested\":{\"a\":{\"x\":1},\"b\":3},\"extra\":true}";
	struct json_object *v = parse(text), *want = parse(text);
	struct json_object *vc, *oc;

	obj_share_equal(v, old);
	ck_assert(json_object_equal(v, want));
	ck_assert_ptr_eq(kc_json_get(v, "phase"), kc_json_get(old, "phase"));
	ck_assert_ptr_ne(kc_json_get(v, "podIP"), kc_json_get(old, "podIP"));
	vc = kc_json_get(v, "conditions");
	oc = kc_json_get(old, "conditions");
	ck_assert_ptr_ne(vc, oc);
	ck_assert_ptr_ne(json_object_array_get_idx(vc, 0), json_object_array_get_idx(oc, 0));
	/* Inside the changed condition, the equal member is shared. */
	ck_assert_ptr_eq(kc_json_get(json_object_array_get_idx(vc, 0), "type"),
	    kc_json_get(json_object_array_get_idx(oc, 0), "type"));
	ck_assert_ptr_eq(json_object_array_get_idx(vc, 1), json_object_array_get_idx(oc, 1));
	/* Arrays of another length are left alone. */
	ck_assert_ptr_ne(json_object_array_get_idx(kc_json_get(v, "hostIPs"), 0),
	    json_object_array_get_idx(kc_json_get(old, "hostIPs"), 0));
	ck_assert_ptr_eq(kc_json_get(v, "nested", "a"), kc_json_get(old, "nested", "a"));
	ck_assert_ptr_ne(kc_json_get(v, "nested"), kc_json_get(old, "nested"));
	/* The old tree is untouched, and both can be freed in any order. */
	json_object_put(old);
	ck_assert(json_object_equal(v, want));
	obj_share_equal(v, NULL);
	json_object_put(v);
	json_object_put(want);
}
END_TEST

START_TEST(restore_and_set_rv)
{
	struct dc_store *st = store(0);
	struct dc_coll *c = NULL;
	struct json_object *o = obj("ns", "a", NULL), **objs = NULL;
	struct hist h = { 0 };
	uint64_t oldest = 0;
	size_t n = 0;

	ck_assert_int_eq(storage_coll(st, "", "configmaps", true, &c), 0);
	ck_assert_int_eq(kc_json_set_str(kc_json_obj_of(o, "metadata"), "resourceVersion",
	    "40"), 0);
	ck_assert_int_eq(storage_restore(st, c, o), 0);
	ck_assert_int_eq(storage_restore(st, c, obj("ns", "a", NULL)), KC_EEXISTS);
	storage_set_rv(st, 40);
	storage_set_rv(st, 10);
	ck_assert_uint_eq(storage_rv(st), 40);
	/* Nothing before the reload can be watched. */
	ck_assert_int_eq(coll_history(c, 39, collect, &h, &oldest), KC_EEXPIRED);
	ck_assert_int_eq(coll_history(c, 40, collect, &h, &oldest), 0);
	ck_assert_int_eq(storage_create(st, c, obj("ns", "b", NULL), NULL), 0);
	ck_assert_uint_eq(storage_rv(st), 41);
	ck_assert_int_eq(coll_list(c, NULL, NULL, &objs, &n), 0);
	ck_assert_uint_eq(n, 2);
	objs_free(objs, n);
	coll_clear(c);
	ck_assert_uint_eq(coll_count(c, NULL), 0);
	ck_assert_ptr_null(coll_get(c, "ns", "a"));
	storage_free(st);
}
END_TEST

START_TEST(alloc_failures)
{
	for (size_t budget = 0;; budget++) {
		struct dc_store *st = NULL;
		struct dc_coll *c = NULL;
		struct json_object *o = obj("ns", "a", NULL), *out = NULL;
		int r;

		fail_alloc_after(budget);
		r = storage_new(NULL, &st);
		if (r == 0)
			r = storage_coll(st, "", "configmaps", true, &c);
		if (r == 0) {
			r = storage_create(st, c, o, &out);
			o = NULL;
		}
		fail_alloc_after(SIZE_MAX);
		if (o != NULL)
			json_object_put(o);
		if (r == 0) {
			ck_assert_uint_eq(obj_rv(out), 1);
			json_object_put(out);
			storage_free(st);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(out);
		if (st != NULL) {
			/* A failed write leaves nothing behind. */
			if (c != NULL)
				ck_assert_uint_eq(coll_count(c, NULL), 0);
			ck_assert_uint_eq(storage_rv(st), 0);
		}
		storage_free(st);
	}
}
END_TEST

/*
 * coll_text(): the cached text is api_serialize()'s bytes, printed once,
 * and never outlives the stored object it was printed from.
 */
static void
assert_printed_as(const struct json_object *o, const char *text, size_t len)
{
	struct kc_buf b;

	kc_buf_init(&b, SIZE_MAX);
	ck_assert_int_eq(api_serialize(o, &b), 0);
	ck_assert_uint_eq(b.len, len);
	ck_assert_int_eq(memcmp(b.data, text, len), 0);
	kc_buf_free(&b);
}

START_TEST(text_cache)
{
	struct dc_store *st = store(0);
	struct dc_coll *c = NULL;
	struct json_object *v1 = NULL, *v2 = NULL, *same = NULL, *final = NULL;
	struct json_object **objs = NULL;
	const char *t, *t2, *it;
	size_t len, len2, ilen, n = 0;

	ck_assert_int_eq(storage_coll(st, "", "configmaps", true, &c), 0);
	ck_assert_int_eq(storage_create(st, c, obj("ns", "a",
	    "\"data\":{\"u\":\"\\u00e9\\\"/<>&\\n\",\"n\":1.50,\"l\":[1,{},[]]}"), &v1), 0);
	ck_assert_int_eq(coll_text(c, v1, false, &t, &len), 0);
	assert_printed_as(v1, t, len);
	ck_assert_str_eq(t, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
	    "{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"1\"},\"data\":"
	    "{\"u\":\"\xc3\xa9\\\"/<>&\\n\",\"n\":1.50,\"l\":[1,{},[]]}}");
	/* Printed once: the second read gets the same bytes. */
	ck_assert_int_eq(coll_text(c, v1, false, &t2, &len2), 0);
	ck_assert_ptr_eq(t, t2);
	ck_assert_uint_eq(len, len2);
	/* The item form leaves out apiVersion and kind. */
	ck_assert_int_eq(coll_text(c, v1, true, &it, &ilen), 0);
	ck_assert_str_eq(it, "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
	    "\"resourceVersion\":\"1\"},\"data\":{\"u\":\"\xc3\xa9\\\"/<>&\\n\",\"n\":1.50,"
	    "\"l\":[1,{},[]]}}");
	ck_assert_uint_eq(ilen, strlen(it));
	/* The stored tree itself was not written to. */
	assert_printed_as(v1, t, len);
	/* A no-op update keeps the object and its text. */
	ck_assert_int_eq(storage_update(st, c, obj("ns", "a",
	    "\"data\":{\"u\":\"\\u00e9\\\"/<>&\\n\",\"n\":1.50,\"l\":[1,{},[]]}"), 0, &same),
	    DC_UNCHANGED);
	ck_assert_ptr_eq(same, v1);
	ck_assert_int_eq(coll_text(c, v1, false, &t2, &len2), 0);
	ck_assert_ptr_eq(t, t2);
	json_object_put(same);
	/* An update drops it: the old tree is a past state, the new one prints anew. */
	ck_assert_int_eq(storage_update(st, c, obj("ns", "a", "\"data\":{\"k\":\"2\"}"), 0,
	    &v2), 0);
	ck_assert_int_eq(coll_text(c, v1, false, &t, &len), 1);
	ck_assert_int_eq(coll_text(c, v2, false, &t, &len), 0);
	ck_assert_str_eq(t, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
	    "{\"name\":\"a\",\"namespace\":\"ns\",\"resourceVersion\":\"2\"},\"data\":"
	    "{\"k\":\"2\"}}");
	assert_printed_as(v2, t, len);
	ck_assert_int_eq(coll_text(c, v2, true, &it, &ilen), 0);
	ck_assert_str_eq(it, "{\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\","
	    "\"resourceVersion\":\"2\"},\"data\":{\"k\":\"2\"}}");
	/* A snapshot from before the update holds the past state: no text. */
	ck_assert_int_eq(coll_list_at(c, 1, NULL, NULL, &objs, &n), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert_ptr_eq(objs[0], v1);
	ck_assert_int_eq(coll_text(c, objs[0], false, &t, &len), 1);
	objs_free(objs, n);
	/* Not an object, or no such key. */
	ck_assert_int_eq(coll_text(c, NULL, false, &t, &len), 1);
	{
		struct json_object *other = obj("ns", "zz", NULL);

		ck_assert_int_eq(coll_text(c, other, false, &t, &len), 1);
		json_object_put(other);
	}
	/* Printing fails cleanly without memory, and works afterwards. */
	ck_assert_int_eq(storage_update(st, c, obj("ns", "a", "\"data\":{\"k\":\"3\"}"), 0,
	    &same), 0);
	fail_alloc_after(0);
	ck_assert_int_eq(coll_text(c, same, false, &t, &len), -ENOMEM);
	fail_alloc_after(SIZE_MAX);
	ck_assert_int_eq(coll_text(c, same, false, &t, &len), 0);
	assert_printed_as(same, t, len);
	/* A delete drops it too; the final state is not stored. */
	ck_assert_int_eq(storage_delete(st, c, json_object_get(same), 0, &final), 0);
	ck_assert_int_eq(coll_text(c, same, false, &t, &len), 1);
	ck_assert_int_eq(coll_text(c, final, false, &t, &len), 1);
	json_object_put(final);
	json_object_put(same);
	/* Cached texts of objects still stored are freed with the store (LSan). */
	ck_assert_int_eq(storage_create(st, c, obj("ns", "b", NULL), NULL), 0);
	ck_assert_int_eq(coll_text(c, coll_get(c, "ns", "b"), false, &t, &len), 0);
	ck_assert_int_eq(coll_text(c, coll_get(c, "ns", "b"), true, &t, &len), 0);
	json_object_put(v1);
	json_object_put(v2);
	storage_free(st);
}
END_TEST

Suite *
dc_storage_suite(void)
{
	Suite *s = suite_create("dc_storage");
	TCase *tc = tcase_create("storage");

	tcase_add_test(tc, create_update_delete);
	tcase_add_test(tc, cluster_scoped);
	tcase_add_test(tc, ordering);
	tcase_add_test(tc, many_objects);
	tcase_add_test(tc, history_window);
	tcase_add_test(tc, snapshots);
	tcase_add_test(tc, subscriber_order);
	tcase_add_test(tc, sameness);
	tcase_add_test(tc, with_rv);
	tcase_add_test(tc, share_equal);
	tcase_add_test(tc, restore_and_set_rv);
	tcase_add_test(tc, alloc_failures);
	tcase_add_test(tc, text_cache);
	suite_add_tcase(s, tc);
	return s;
}

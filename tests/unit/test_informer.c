/*
 * test_informer.c: informers against the fake transport (scripts under
 * tests/fixtures/informer/): paged lists, watch events and bookmarks,
 * resume from the last resourceVersion, 410 and the relist diff, backoff
 * on 500 and 429, skipped objects, the secondary index, items that
 * outlive the informer; then against the loopback HTTPS server: a stream
 * cut short and a stop from another thread while the watch hangs; a move
 * to another version of the resource (kc_informer_set_resource()); and
 * the cache's memory per item, measured.
 *
 * Most tests run the informer on the test's thread and stop it from a
 * handler, when the last expected event arrives; the handlers also check
 * that the cache already shows the change they report.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/client.h>
#include <kc/clock.h>
#include <kc/err.h>
#include <kc/informer.h>
#include <kc/json.h>
#include <kc/str.h>
#include <kc/watch.h>

#include "../fakes/fake_transport.h"
#include "../server/testserver.h"
#include "testutil.h"

#define ck_ok(r, st)	ck_assert_msg((r) == 0, "%s: %s", kc_err_name(r), (st).message)

#define LOG_MAX		64

/* The caller's compact item. */
struct pod {
	char	phase[16];
	char	run[64];
	char	ns[64];
};

struct ctx {
	struct kc_informer	*inf;
	char			 log[LOG_MAX][128];
	size_t			 n;
	const char		*stop_on;	/* stop the informer after this line */
	unsigned		 errors;
	atomic_uint		 nerrors;	/* the same, for another thread */
	int			 last_error;
	char			 last_msg[256];
	atomic_uint		 events;
	unsigned		 calls;		/* of the transform */
	unsigned		 enomem_on;	/* fail this call with -ENOMEM */
};

static struct kc_rest_config test_rc = { .server = "https://fake.invalid" };

static void
teardown(void)
{
	fake_clock_uninstall();
	fail_alloc_after(SIZE_MAX);
}

static void
logf_(struct ctx *c, const char *fmt, const char *a, const char *b, const char *d)
{
	ck_assert_uint_lt(c->n, LOG_MAX);
	(void)snprintf(c->log[c->n], sizeof(c->log[0]), fmt, a, b, d);
	if (c->stop_on != NULL && strcmp(c->log[c->n], c->stop_on) == 0)
		kc_informer_stop(c->inf);
	c->n++;
	atomic_fetch_add(&c->events, 1);
}

/* The cache must already hold 'it' under its key. */
static void
assert_cached(struct ctx *c, struct kc_item *it)
{
	struct kc_item *got = kc_informer_get_key(c->inf, kc_item_key(it));

	ck_assert_ptr_eq(got, it);
	kc_item_unref(got);
}

static void
on_add(void *arg, struct kc_item *it)
{
	struct ctx *c = arg;

	assert_cached(c, it);
	logf_(c, "add %s %s%s", kc_item_key(it), kc_item_rv(it), "");
}

static void
on_update(void *arg, struct kc_item *old, struct kc_item *it)
{
	struct ctx *c = arg;

	assert_cached(c, it);
	ck_assert_str_eq(kc_item_key(old), kc_item_key(it));
	logf_(c, "update %s %s->%s", kc_item_key(it), kc_item_rv(old), kc_item_rv(it));
}

static void
on_delete(void *arg, struct kc_item *it)
{
	struct ctx *c = arg;
	struct kc_item *got = kc_informer_get_key(c->inf, kc_item_key(it));

	ck_assert_ptr_null(got);
	logf_(c, "delete %s%s%s", kc_item_key(it), "", "");
}

static void
on_error(void *arg, int code, const struct kc_status *st)
{
	struct ctx *c = arg;

	c->errors++;
	c->last_error = code;
	atomic_fetch_add(&c->nerrors, 1);
	(void)kc_strlcpy(c->last_msg, st->message, sizeof(c->last_msg));
}

static int
pod_transform(void *arg, const struct json_object *obj, void **ret, struct kc_status *st)
{
	const char *skip = kc_json_str(obj, "metadata", "labels", "skip");
	struct ctx *c = arg;
	const char *s;
	struct pod *p;

	if (c != NULL && ++c->calls == c->enomem_on)
		return -ENOMEM;
	if (skip != NULL && strcmp(skip, "yes") == 0)
		return kc_status_set(st, KC_EPARSE, "refused: the skip label");
	if ((p = kc_calloc(1, sizeof(*p))) == NULL)
		return -ENOMEM;
	if ((s = kc_json_str(obj, "status", "phase")) != NULL)
		(void)kc_strlcpy(p->phase, s, sizeof(p->phase));
	if ((s = kc_json_str(obj, "metadata", "labels", "run")) != NULL)
		(void)kc_strlcpy(p->run, s, sizeof(p->run));
	if ((s = kc_json_str(obj, "metadata", "namespace")) != NULL)
		(void)kc_strlcpy(p->ns, s, sizeof(p->ns));
	*ret = p;
	return 0;
}

static bool
pod_index(void *arg, const struct kc_item *it, char *buf, size_t size)
{
	const struct pod *p = kc_item_data(it);
	int n;

	(void)arg;
	if (p->run[0] == '\0')
		return false;
	n = snprintf(buf, size, "%s/%s", p->ns, p->run);
	return n > 0 && (size_t)n < size;
}

static struct kc_informer *
new_informer(struct ctx *c, const char *ns, const char *label, uint32_t page)
{
	struct kc_informer *inf = NULL;
	struct kc_status st;
	int r;

	r = kc_informer_new(&(struct kc_informer_opts){
		.res = &kc_res_pods,
		.ns = ns,
		.label_selector = label,
		.page_size = page,
		.watch_timeout_s = 300,
		.backoff_base_ms = 100,
		.backoff_max_ms = 10000,
		.transform = pod_transform,
		.index = pod_index,
		.on_add = on_add,
		.on_update = on_update,
		.on_delete = on_delete,
		.on_error = on_error,
		.arg = c,
	}, &inf, &st);
	ck_ok(r, st);
	c->inf = inf;
	return inf;
}

static struct kc_client *
fake_client(void)
{
	struct kc_client *cl = NULL;
	struct kc_status st;

	ck_assert_int_eq(kc_client_new(&(struct kc_client_opts){
		.rc = &test_rc, .ops = &fake_transport_ops,
	}, &cl, &st), 0);
	return cl;
}

static void
assert_log(const struct ctx *c, const char *const *want, size_t n)
{
	for (size_t i = 0; i < KC_MIN(n, c->n); i++)
		ck_assert_msg(strcmp(c->log[i], want[i]) == 0, "event %zu: \"%s\", "
		    "expected \"%s\"", i, c->log[i], want[i]);
	ck_assert_uint_eq(c->n, n);
}

static const char *
phase_of(struct kc_informer *inf, const char *name)
{
	static char phase[16];
	struct kc_item *it = kc_informer_get(inf, "team-a", name);

	if (it == NULL)
		return NULL;
	(void)kc_strlcpy(phase, ((const struct pod *)kc_item_data(it))->phase,
	    sizeof(phase));
	kc_item_unref(it);
	return phase;
}

struct names {
	char	 s[8][32];
	size_t	 n;
};

static int
collect(void *arg, struct kc_item *it)
{
	struct names *nm = arg;

	ck_assert_uint_lt(nm->n, 8);
	(void)kc_strlcpy(nm->s[nm->n++], kc_item_name(it), sizeof(nm->s[0]));
	return 0;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The names of the pods of one index key, sorted, joined with ','. */
static const char *
by_index(struct kc_informer *inf, const char *key)
{
	static char out[256];
	struct names nm = { .n = 0 };
	size_t off = 0;
	int n = kc_informer_by_index(inf, key, collect, &nm);

	ck_assert_int_eq(n, (int)nm.n);
	qsort(nm.s, nm.n, sizeof(nm.s[0]), cmp_str);
	out[0] = '\0';
	for (size_t i = 0; i < nm.n; i++)
		off += (size_t)snprintf(out + off, sizeof(out) - off, "%s%s",
		    i > 0 ? "," : "", nm.s[i]);
	return out;
}

/* ---- options and construction ------------------------------------------- */

START_TEST(test_new_args)
{
	struct kc_informer *inf = NULL;
	struct kc_status st;
	struct ctx c = { 0 };

	ck_assert_int_eq(kc_informer_new(NULL, &inf, &st), -EINVAL);
	ck_assert_int_eq(kc_informer_new(&(struct kc_informer_opts){
		.res = &kc_res_pods }, &inf, &st), -EINVAL);
	ck_assert_ptr_nonnull(strstr(st.message, "transform"));
	ck_assert_int_eq(kc_informer_new(&(struct kc_informer_opts){
		.res = &kc_res_pods, .transform = pod_transform, .ns = "Bad_NS",
	}, &inf, &st), -EINVAL);
	ck_assert_int_eq(kc_informer_new(&(struct kc_informer_opts){
		.res = &kc_res_nodes, .transform = pod_transform, .ns = "a",
	}, &inf, &st), -EINVAL);
	ck_assert_int_eq(kc_informer_new(&(struct kc_informer_opts){
		.res = &kc_res_pods, .transform = pod_transform,
		.backoff_base_ms = 500, .backoff_max_ms = 100,
	}, &inf, &st), -EINVAL);
	ck_assert_ptr_null(inf);

	inf = new_informer(&c, NULL, NULL, 0);
	ck_assert(!kc_informer_synced(inf));
	ck_assert_uint_eq(kc_informer_len(inf), 0);
	ck_assert_ptr_null(kc_informer_get(inf, "a", "b"));
	ck_assert_ptr_null(kc_informer_get(inf, NULL, NULL));
	ck_assert_int_eq(kc_informer_run(inf, NULL, &st), -EINVAL);
	/* Not synced yet: the wait times out (real clock, 5 ms). */
	ck_assert_int_eq(kc_informer_wait_synced(inf, 5), -ETIMEDOUT);
	/* Stopped before it ran: run returns at once, waits are cancelled. */
	kc_informer_stop(inf);
	kc_informer_stop(inf);
	ck_assert_int_eq(kc_informer_wait_synced(inf, 5000), -ECANCELED);
	{
		struct fake_transport *ft = ft_new();
		struct kc_client *cl = fake_client();

		ck_assert_int_eq(kc_informer_run(inf, cl, &st), 0);
		ck_assert_uint_eq(ft_nrequests(ft), 0);
		kc_client_free(cl);
		ft_free(ft);
	}
	inf = kc_informer_free(inf);
	ck_assert_ptr_null(inf);
	ck_assert_ptr_null(kc_informer_free(NULL));
	ck_assert_ptr_null(kc_item_unref(NULL));
}
END_TEST

START_TEST(test_new_oom)
{
	struct ctx c = { 0 };

	for (size_t budget = 0;; budget++) {
		struct kc_informer *inf = NULL;
		struct kc_status st;
		int r;

		fail_alloc_after(budget);
		r = kc_informer_new(&(struct kc_informer_opts){
			.res = &kc_res_pods, .ns = "team-a", .label_selector = "a=b",
			.field_selector = "status.phase=Running",
			.transform = pod_transform, .index = pod_index, .arg = &c,
		}, &inf, &st);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			kc_informer_free(inf);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(inf);
	}
}
END_TEST

START_TEST(test_rv_compare)
{
	ck_assert_int_eq(kc_rv_compare("9", "10"), -1);
	ck_assert_int_eq(kc_rv_compare("10", "9"), 1);
	ck_assert_int_eq(kc_rv_compare("123", "123"), 0);
	ck_assert_int_eq(kc_rv_compare("0123", "123"), 0);
	ck_assert_int_eq(kc_rv_compare("122", "123"), -1);
	ck_assert_int_eq(kc_rv_compare(NULL, "1"), -1);
	ck_assert_int_eq(kc_rv_compare("", NULL), 0);
	ck_assert_int_eq(kc_rv_compare("18446744073709551616", "18446744073709551615"), 1);
}
END_TEST

/* ---- against the fake transport ------------------------------------------- */

struct runner {
	struct kc_informer	*inf;
	struct kc_client	*cl;
	int			 r;
};

static void *
runner_main(void *arg)
{
	struct runner *rn = arg;
	struct kc_status st;

	rn->r = kc_informer_run(rn->inf, rn->cl, &st);
	return NULL;
}

START_TEST(test_list_watch_resume_stop)
{
	static const char *const want[] = {
		"add team-a/p1 10", "add team-a/p2 11", "add team-a/p3 12",
		"update team-a/p1 10->13",
		"add team-a/p4 21", "delete team-a/p3",
		"update team-a/p4 21->23",
	};
	struct fake_transport *ft = ft_new();
	struct ctx c = { 0 };
	struct kc_informer *inf = new_informer(&c, "team-a", "app=t", 2);
	struct runner rn = { inf, fake_client(), -1 };
	struct kc_informer_stats s;
	struct kc_item *it, *kept;
	struct kc_status st;
	char rv[KC_RV_MAX], ns[64];
	pthread_t th;

	ft_load_script(ft, "informer/basic.script");
	ck_assert_int_eq(pthread_create(&th, NULL, runner_main, &rn), 0);
	ck_assert_int_eq(kc_informer_wait_synced(inf, 10000), 0);
	ft_wait_blocked(ft);

	/* The cache, read from this thread while the watch is open. */
	assert_log(&c, want, KC_ARRAY_SIZE(want));
	ck_assert(kc_informer_synced(inf));
	ck_assert_uint_eq(kc_informer_len(inf), 3);
	ck_assert_str_eq(phase_of(inf, "p1"), "Running");
	ck_assert_str_eq(phase_of(inf, "p2"), "Pending");
	ck_assert_ptr_null(phase_of(inf, "p3"));
	ck_assert_str_eq(phase_of(inf, "p4"), "Running");
	kc_informer_rv(inf, rv, sizeof(rv));
	ck_assert_str_eq(rv, "23");
	it = kc_informer_get(inf, "team-a", "p4");
	ck_assert_ptr_nonnull(it);
	ck_assert_str_eq(kc_item_key(it), "team-a/p4");
	ck_assert_str_eq(kc_item_name(it), "p4");
	ck_assert_str_eq(kc_item_rv(it), "23");
	kc_item_ns(it, ns, sizeof(ns));
	ck_assert_str_eq(ns, "team-a");
	kc_item_ns(it, ns, 3);
	ck_assert_str_eq(ns, "te");
	kept = kc_item_ref(it);
	kc_item_unref(it);
	/* The index follows label changes: p4 moved from r2 to r1. */
	ck_assert_str_eq(by_index(inf, "team-a/r1"), "p1,p2,p4");
	ck_assert_str_eq(by_index(inf, "team-a/r2"), "");
	ck_assert_str_eq(by_index(inf, "team-b/r1"), "");
	{
		struct names nm = { .n = 0 };

		ck_assert_int_eq(kc_informer_foreach(inf, collect, &nm), 3);
	}
	/* A second run at the same time is refused. */
	ck_assert_int_eq(kc_informer_run(inf, rn.cl, &st), -EBUSY);

	/* Stopped from this thread while the informer's watch blocks. */
	kc_informer_stop(inf);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(rn.r, 0);
	ft_done(ft);
	ck_assert_uint_eq(c.errors, 0);
	kc_informer_stats(inf, &s);
	ck_assert_uint_eq(s.lists, 1);
	ck_assert_uint_eq(s.relists, 0);
	ck_assert_uint_eq(s.watches, 2);
	ck_assert_uint_eq(s.watch_restarts, 1);
	ck_assert_uint_eq(s.added, 1);
	ck_assert_uint_eq(s.modified, 3);
	ck_assert_uint_eq(s.deleted, 1);
	ck_assert_uint_eq(s.bookmarks, 1);
	ck_assert_uint_eq(s.items, 3);
	ck_assert_uint_eq(s.errors, 0);
	ck_assert_uint_eq(s.backoff_ms, 0);
	/* A stopped informer stays stopped. */
	ck_assert_int_eq(kc_informer_run(inf, rn.cl, &st), 0);
	kc_informer_free(inf);
	/* An item outlives its informer. */
	ck_assert_str_eq(((const struct pod *)kc_item_data(kept))->run, "r1");
	kc_item_unref(kept);
	kc_client_free(rn.cl);
	ft_free(ft);
}
END_TEST

/* Transform of test_keep: sees only the kept members and the informer's. */
static int
keep_transform(void *arg, const struct json_object *obj, void **ret, struct kc_status *st)
{
	struct ctx *c = arg;

	ck_assert_ptr_null(kc_json_get(obj, "metadata", "annotations"));
	ck_assert_ptr_null(kc_json_get(obj, "metadata", "managedFields"));
	ck_assert_ptr_null(kc_json_get(obj, "metadata", "uid"));
	ck_assert_ptr_null(kc_json_get(obj, "spec", "containers"));
	ck_assert_ptr_nonnull(kc_json_str(obj, "spec", "nodeName"));
	ck_assert_ptr_nonnull(kc_json_str(obj, "metadata", "resourceVersion"));
	return pod_transform(c, obj, ret, st);
}

START_TEST(test_keep)
{
	static const char *const keep[] = { "metadata.labels", "spec.nodeName", "status" };
	static const char *const want[] = {
		"add team-a/p1 10", "update team-a/p1 10->13", "update team-a/p1 13->14",
	};
	struct fake_transport *ft = ft_new();
	struct ctx c = { 0 };
	struct kc_informer *inf = NULL;
	struct kc_status st;
	struct runner rn;
	pthread_t th;

	ck_ok(kc_informer_new(&(struct kc_informer_opts){
		.res = &kc_res_pods, .ns = "team-a", .label_selector = "app=t",
		.page_size = 2, .watch_timeout_s = 300, .backoff_base_ms = 100,
		.keep = keep, .nkeep = KC_ARRAY_SIZE(keep),
		.transform = keep_transform, .on_add = on_add, .on_update = on_update,
		.on_delete = on_delete, .on_error = on_error, .arg = &c,
	}, &inf, &st), st);
	c.inf = inf;
	rn = (struct runner){ inf, fake_client(), -1 };
	ft_load_script(ft, "informer/keep.script");
	ck_assert_int_eq(pthread_create(&th, NULL, runner_main, &rn), 0);
	ck_assert_int_eq(kc_informer_wait_synced(inf, 10000), 0);
	ft_wait_blocked(ft);
	assert_log(&c, want, KC_ARRAY_SIZE(want));
	ck_assert_str_eq(phase_of(inf, "p1"), "Succeeded");
	/* The ERROR event's Status kept its code: a 410, then a relist. */
	{
		struct kc_informer_stats s;

		kc_informer_stats(inf, &s);
		ck_assert_uint_eq(s.relists, 1);
		ck_assert_uint_eq(s.errors, 0);
	}
	kc_informer_stop(inf);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ft_done(ft);
	kc_informer_free(inf);
	kc_client_free(rn.cl);
	ft_free(ft);

	/* A bad path is refused when the informer is made. */
	ck_assert_int_eq(kc_informer_new(&(struct kc_informer_opts){
		.res = &kc_res_pods, .keep = (const char *const[]){ "spec..x" }, .nkeep = 1,
		.transform = pod_transform,
	}, &inf, &st), KC_EINVALID);
	ck_assert_ptr_nonnull(strstr(st.message, "spec..x"));
}
END_TEST

START_TEST(test_relist_diff)
{
	static const char *const want[] = {
		"add team-a/a 90", "add team-a/b 91", "add team-a/c 92",
		"update team-a/a 90->101",
		"update team-a/b 91->150", "add team-a/d 160", "delete team-a/c",
	};
	struct fake_transport *ft = ft_new();
	struct ctx c = { .stop_on = "add team-a/d 160" };
	struct kc_informer *inf;
	struct kc_client *cl = fake_client();
	struct kc_informer_stats s;
	struct kc_status st;
	char rv[KC_RV_MAX];

	fake_clock_install(0);
	ft_load_script(ft, "informer/relist.script");
	ck_assert_int_eq(kc_informer_new(&(struct kc_informer_opts){
		.res = &kc_res_pods, .watch_timeout_s = 300,
		.transform = pod_transform, .index = pod_index,
		.on_add = on_add, .on_update = on_update, .on_delete = on_delete,
		.on_error = on_error, .arg = &c,
	}, &inf, &st), 0);
	c.inf = inf;
	ck_assert_int_eq(kc_informer_run(inf, cl, &st), 0);
	ft_done(ft);
	assert_log(&c, want, KC_ARRAY_SIZE(want));
	/* A 410 after a healthy watch relists at once. */
	ck_assert_uint_eq(fake_clock_slept_ms(), 0);
	ck_assert_uint_eq(c.errors, 0);
	kc_informer_stats(inf, &s);
	ck_assert_uint_eq(s.lists, 2);
	ck_assert_uint_eq(s.relists, 1);
	ck_assert_uint_eq(s.watch_restarts, 1);
	ck_assert_uint_eq(s.items, 3);
	kc_informer_rv(inf, rv, sizeof(rv));
	ck_assert_str_eq(rv, "200");
	ck_assert_str_eq(by_index(inf, "team-a/r1"), "a,b");
	ck_assert_str_eq(by_index(inf, "team-a/r2"), "d");
	kc_informer_free(inf);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_resume_after_broken_stream)
{
	static const char *const want[] = { "add team-a/x 6", "add team-a/y 7" };
	struct fake_transport *ft = ft_new();
	struct ctx c = { .stop_on = "add team-a/y 7" };
	struct kc_informer *inf = new_informer(&c, NULL, NULL, 0);
	struct kc_client *cl = fake_client();
	struct kc_informer_stats s;
	struct kc_status st;

	fake_clock_install(0);
	ft_load_script(ft, "informer/resume.script");
	ck_assert_int_eq(kc_informer_run(inf, cl, &st), 0);
	ft_done(ft);
	assert_log(&c, want, KC_ARRAY_SIZE(want));
	ck_assert_uint_eq(c.errors, 1);
	ck_assert_int_eq(c.last_error, KC_EPARSE);
	ck_assert_ptr_nonnull(strstr(c.last_msg, "inside an event"));
	/* One failure after a healthy watch: base 100 ms, equal jitter. */
	ck_assert_uint_ge(fake_clock_slept_ms(), 50);
	ck_assert_uint_le(fake_clock_slept_ms(), 100);
	kc_informer_stats(inf, &s);
	ck_assert_uint_eq(s.errors, 1);
	ck_assert_uint_eq(s.last_error, KC_EPARSE);
	ck_assert_uint_eq(s.lists, 1);
	ck_assert_uint_eq(s.backoff_ms, fake_clock_slept_ms());
	kc_informer_free(inf);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_backoff_500_429)
{
	static const char *const want[] = { "add team-a/z 2" };
	struct fake_transport *ft = ft_new();
	struct ctx c = { .stop_on = "add team-a/z 2" };
	struct kc_informer *inf = new_informer(&c, NULL, NULL, 0);
	struct kc_client *cl = fake_client();
	struct kc_informer_stats s;
	struct kc_status st;

	fake_clock_install(0);
	ft_load_script(ft, "informer/backoff.script");
	ck_assert_int_eq(kc_informer_run(inf, cl, &st), 0);
	ft_done(ft);
	assert_log(&c, want, KC_ARRAY_SIZE(want));
	ck_assert(kc_informer_synced(inf));
	/*
	 * list 500: 50..100; list 429: Retry-After 3000; watch 500: 50..100;
	 * a watch that ended at once with nothing: 100..200.
	 */
	ck_assert_uint_ge(fake_clock_slept_ms(), 3200);
	ck_assert_uint_le(fake_clock_slept_ms(), 3400);
	/* Slept in slices, so stop() is seen quickly. */
	ck_assert_uint_ge(fake_clock_sleeps(), 3200 / 50);
	ck_assert_uint_eq(c.errors, 3);
	ck_assert_int_eq(c.last_error, KC_EINTERNAL);
	ck_assert_str_eq(c.last_msg, "no watch for you");
	kc_informer_stats(inf, &s);
	ck_assert_uint_eq(s.errors, 3);
	ck_assert_uint_eq(s.lists, 1);
	ck_assert_uint_eq(s.watches, 3);
	ck_assert_uint_eq(s.watch_restarts, 2);
	kc_informer_free(inf);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_skipped_objects)
{
	static const char *const want[] = {
		"add team-a/ok 21", "add team-a/ok2 25",
		"delete team-a/ok", "add team-a/last 32",
	};
	struct fake_transport *ft = ft_new();
	struct ctx c = { .stop_on = "add team-a/last 32" };
	struct kc_informer *inf = new_informer(&c, NULL, NULL, 0);
	struct kc_client *cl = fake_client();
	struct kc_informer_stats s;
	struct kc_status st;

	fake_clock_install(0);
	ft_load_script(ft, "informer/skip.script");
	ck_assert_int_eq(kc_informer_run(inf, cl, &st), 0);
	ft_done(ft);
	assert_log(&c, want, KC_ARRAY_SIZE(want));
	ck_assert_uint_eq(c.errors, 4);
	ck_assert_str_eq(c.last_msg, "refused: the skip label");
	kc_informer_stats(inf, &s);
	ck_assert_uint_eq(s.skipped, 4);
	ck_assert_uint_eq(s.errors, 0);
	ck_assert_uint_eq(s.items, 2);
	ck_assert_ptr_null(phase_of(inf, "bad"));
	ck_assert_uint_eq(fake_clock_slept_ms(), 0);
	kc_informer_free(inf);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_limits_and_enomem)
{
	static const char *const want[] = {
		"add team-a/a 1", "add team-a/b 2", "update team-a/a 1->12",
	};
	struct fake_transport *ft = ft_new();
	struct ctx c = { .stop_on = "update team-a/a 1->12", .enomem_on = 3 };
	struct kc_informer *inf;
	struct kc_client *cl = fake_client();
	struct kc_informer_stats s;
	struct kc_status st;

	fake_clock_install(0);
	ft_load_script(ft, "informer/limits.script");
	ck_assert_int_eq(kc_informer_new(&(struct kc_informer_opts){
		.res = &kc_res_pods, .watch_timeout_s = 300, .max_items = 2,
		.backoff_base_ms = 100,
		.transform = pod_transform, .index = pod_index,
		.on_add = on_add, .on_update = on_update, .on_delete = on_delete,
		.on_error = on_error, .arg = &c,
	}, &inf, &st), 0);
	c.inf = inf;
	ck_assert_int_eq(kc_informer_run(inf, cl, &st), 0);
	ft_done(ft);
	assert_log(&c, want, KC_ARRAY_SIZE(want));
	ck_assert_uint_eq(c.errors, 3);
	ck_assert_int_eq(c.last_error, -E2BIG);
	ck_assert_ptr_nonnull(strstr(c.last_msg, "team-a/c not cached"));
	kc_informer_stats(inf, &s);
	ck_assert_uint_eq(s.errors, 2);
	ck_assert_uint_eq(s.skipped, 1);
	ck_assert_uint_eq(s.lists, 1);
	ck_assert_uint_eq(s.items, 2);
	/* Two failed lists: 50..100, then 100..200 ms. */
	ck_assert_uint_ge(fake_clock_slept_ms(), 150);
	ck_assert_uint_le(fake_clock_slept_ms(), 300);
	kc_informer_free(inf);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

/* ---- against the loopback server -------------------------------------------- */

static const char server_script[] =
    "request GET /api/v1/namespaces/default/pods?limit=500\n"
    "body {\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"5\"},\"items\":"
    "[{\"metadata\":{\"namespace\":\"default\",\"name\":\"a\",\"resourceVersion\":\"4\"}}]}\n"
    "\n"
    "request GET /api/v1/namespaces/default/pods?allowWatchBookmarks=true&"
    "resourceVersion=5&timeoutSeconds=\n"
    "chunk {\"type\":\"ADDED\",\"object\":{\"metadata\":{\"namespace\":\"default\","
    "\"name\":\"b\",\"resourceVersion\":\"6\"}}}\\n\n"
    "chunk {\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"na\n"
    "close\n"
    "\n"
    "request GET /api/v1/namespaces/default/pods?allowWatchBookmarks=true&"
    "resourceVersion=6&timeoutSeconds=\n"
    "chunk {\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"namespace\":\"default\","
    "\"name\":\"b\",\"resourceVersion\":\"7\"}}}\\n\n"
    "hang\n";

START_TEST(test_server_cut_and_stop)
{
	struct ts_server *srv = NULL;
	struct kc_rest_config rc = { 0 };
	struct ctx c = { 0 };
	struct kc_informer *inf = NULL;
	struct runner rn = { 0 };
	struct kc_informer_stats s;
	struct kc_status st;
	const char *p;
	pthread_t th;
	uint64_t t0, deadline;
	uint64_t timeout;
	int r;

	ck_assert_int_eq(ts_start(&(struct ts_opts){ .script_text = server_script },
	    &srv), 0);
	rc.server = (char *)(uintptr_t)ts_url(srv);
	rc.ca_pem = (char *)(uintptr_t)ts_ca_pem(srv);
	rc.ca_pem_len = strlen(rc.ca_pem);
	r = kc_client_new(&(struct kc_client_opts){ .rc = &rc }, &rn.cl, &st);
	ck_ok(r, st);
	r = kc_informer_new(&(struct kc_informer_opts){
		.res = &kc_res_pods, .ns = "default",
		.backoff_base_ms = 10, .backoff_max_ms = 20,
		.transform = pod_transform, .on_add = on_add, .on_update = on_update,
		.on_delete = on_delete, .on_error = on_error, .arg = &c,
	}, &inf, &st);
	ck_ok(r, st);
	c.inf = inf;
	rn.inf = inf;
	ck_assert_int_eq(pthread_create(&th, NULL, runner_main, &rn), 0);
	ck_assert_int_eq(kc_informer_wait_synced(inf, 20000), 0);
	/* Wait for the update from the resumed watch (3 events in all). */
	deadline = kc_clock_now_ms() + 20000;
	while (atomic_load(&c.events) < 3 && kc_clock_now_ms() < deadline)
		(void)kc_clock_sleep_ms(1);
	ck_assert_uint_eq(atomic_load(&c.events), 3);
	t0 = kc_clock_now_ms();
	kc_informer_stop(inf);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_uint_lt(kc_clock_now_ms() - t0, 2000);
	ck_assert_int_eq(rn.r, 0);
	ck_assert_str_eq(c.log[0], "add default/a 4");
	ck_assert_str_eq(c.log[1], "add default/b 6");
	ck_assert_str_eq(c.log[2], "update default/b 6->7");
	ck_assert_uint_eq(c.errors, 1);		/* the cut stream */
	kc_informer_stats(inf, &s);
	ck_assert_uint_eq(s.errors, 1);
	ck_assert_uint_eq(s.watches, 2);
	/* The watch timeout is random in [300, 600) seconds, as client-go's. */
	ck_assert_uint_eq(ts_nrequests(srv), 3);
	for (size_t i = 1; i < 3; i++) {
		p = strstr(ts_request(srv, i)->path, "timeoutSeconds=");
		ck_assert_ptr_nonnull(p);
		timeout = 0;
		for (p += 15; *p >= '0' && *p <= '9'; p++)
			timeout = timeout * 10 + (uint64_t)(*p - '0');
		ck_assert_uint_ge(timeout, 300);
		ck_assert_uint_lt(timeout, 600);
	}
	kc_informer_free(inf);
	kc_client_free(rn.cl);
	ts_stop(srv);
}
END_TEST

START_TEST(test_stop_during_backoff)
{
	struct fake_transport *ft = ft_new();
	struct ctx c = { 0 };
	struct kc_informer *inf = NULL;
	struct runner rn = { 0 };
	struct kc_status st;
	pthread_t th;
	uint64_t t0, deadline;

	/* Real clock: after a 500 the informer naps 30 to 60 s. */
	ft_expect(ft, &(struct ft_exchange){
		.method = "GET", .path = "/api/v1/pods?limit=500", .status = 500,
		.resp_body = "{\"kind\":\"Status\",\"message\":\"down\",\"code\":500}",
	});
	ck_assert_int_eq(kc_informer_new(&(struct kc_informer_opts){
		.res = &kc_res_pods, .backoff_base_ms = 60000, .backoff_max_ms = 60000,
		.transform = pod_transform, .on_error = on_error, .arg = &c,
	}, &inf, &st), 0);
	rn.inf = inf;
	rn.cl = fake_client();
	ck_assert_int_eq(pthread_create(&th, NULL, runner_main, &rn), 0);
	deadline = kc_clock_now_ms() + 10000;
	while (ft_nrequests(ft) == 0 && kc_clock_now_ms() < deadline)
		(void)kc_clock_sleep_ms(1);
	(void)kc_clock_sleep_ms(5);
	t0 = kc_clock_now_ms();
	kc_informer_stop(inf);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_uint_lt(kc_clock_now_ms() - t0, 1000);
	ck_assert_int_eq(rn.r, 0);
	ck_assert(!kc_informer_synced(inf));
	ft_done(ft);
	kc_informer_free(inf);
	kc_client_free(rn.cl);
	ft_free(ft);
}
END_TEST

/* ---- another version of the resource --------------------------------------------- */

static const struct kc_resource runs_alpha = {
	"trainyard.dev", "v1alpha1", "runs", "Run", true,
};
static const struct kc_resource runs_beta = {
	"trainyard.dev", "v1beta1", "runs", "Run", true,
};

/* Waits (real clock, 10 s at most) until the handlers logged 'n' lines. */
static void
wait_events(struct ctx *c, unsigned n)
{
	uint64_t deadline = kc_clock_now_ms() + 10000;

	while (atomic_load(&c->events) < n && kc_clock_now_ms() < deadline)
		(void)kc_clock_sleep_ms(1);
	ck_assert_uint_eq(atomic_load(&c->events), n);
}

static struct kc_informer *
runs_informer(struct ctx *c, uint32_t backoff_ms)
{
	struct kc_informer *inf = NULL;
	struct kc_status st;

	ck_assert_int_eq(kc_informer_new(&(struct kc_informer_opts){
		.res = &runs_alpha, .ns = "team-a", .watch_timeout_s = 300,
		.backoff_base_ms = backoff_ms, .backoff_max_ms = backoff_ms,
		.transform = pod_transform,
		.on_add = on_add, .on_update = on_update, .on_delete = on_delete,
		.on_error = on_error, .arg = c,
	}, &inf, &st), 0);
	c->inf = inf;
	return inf;
}

START_TEST(test_set_resource)
{
	static const char *const want[] = {
		"add team-a/a 10", "add team-a/b 11", "add team-a/c 12",
		"update team-a/a 10->13",
		"update team-a/a 13->13", "update team-a/b 11->11", "add team-a/d 20",
		"delete team-a/c",
		"update team-a/d 20->21",
	};
	struct fake_transport *ft = ft_new();
	struct ctx c = { 0 };
	struct kc_informer *inf = runs_informer(&c, 100);
	struct runner rn = { inf, fake_client(), -1 };
	struct kc_informer_stats s;
	struct kc_item *old_b, *new_b;
	struct kc_status st;
	pthread_t th;

	/* Same scope only; a resource is required. */
	ck_assert_int_eq(kc_informer_set_resource(inf, &kc_res_namespaces, &st), -EINVAL);
	ck_assert_ptr_nonnull(strstr(st.message, "scope"));
	ck_assert_int_eq(kc_informer_set_resource(inf, NULL, &st), -EINVAL);

	ft_load_script(ft, "informer/switch.script");
	ck_assert_int_eq(pthread_create(&th, NULL, runner_main, &rn), 0);
	wait_events(&c, 4);
	old_b = kc_informer_get(inf, "team-a", "b");
	ck_assert_ptr_nonnull(old_b);
	ck_assert_int_eq(kc_informer_set_resource(inf, &runs_beta, &st), 0);
	wait_events(&c, 9);
	/* Never gone in between: b was replaced in place by its v1beta1 form. */
	new_b = kc_informer_get(inf, "team-a", "b");
	ck_assert_ptr_nonnull(new_b);
	ck_assert_ptr_ne(new_b, old_b);
	ck_assert_str_eq(kc_item_rv(new_b), "11");
	kc_item_unref(old_b);
	kc_item_unref(new_b);
	kc_informer_stop(inf);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(rn.r, 0);
	ft_done(ft);
	assert_log(&c, want, KC_ARRAY_SIZE(want));
	/* The cancelled watch is not a failure. */
	ck_assert_uint_eq(c.errors, 0);
	kc_informer_stats(inf, &s);
	ck_assert_uint_eq(s.lists, 2);
	ck_assert_uint_eq(s.items, 3);
	ck_assert(kc_informer_synced(inf));
	kc_informer_free(inf);
	kc_client_free(rn.cl);
	ft_free(ft);
}
END_TEST

/* A version that answers 404 backs off; the switch cuts the wait short. */
START_TEST(test_set_resource_during_backoff)
{
	static const char *const want[] = { "add team-a/a 10" };
	static const char *const chunks[] = { NULL };
	struct fake_transport *ft = ft_new();
	struct ctx c = { 0 };
	struct kc_informer *inf = runs_informer(&c, 60000);
	struct runner rn = { inf, fake_client(), -1 };
	struct kc_status st;
	uint64_t deadline, t0;
	pthread_t th;

	ft_expect(ft, &(struct ft_exchange){
		.method = "GET", .path = "/apis/trainyard.dev/v1alpha1/namespaces/team-a/"
		    "runs?limit=500", .status = 404,
		.resp_body = "{\"kind\":\"Status\",\"message\":\"the server could not find "
		    "the requested resource\",\"reason\":\"NotFound\",\"code\":404}",
	});
	ft_expect(ft, &(struct ft_exchange){
		.method = "GET", .path = "/apis/trainyard.dev/v1beta1/namespaces/team-a/"
		    "runs?limit=500", .status = 200,
		.resp_body = "{\"kind\":\"RunList\",\"metadata\":{\"resourceVersion\":\"10\"},"
		    "\"items\":[{\"metadata\":{\"namespace\":\"team-a\",\"name\":\"a\","
		    "\"resourceVersion\":\"10\"}}]}",
	});
	ft_expect(ft, &(struct ft_exchange){
		.method = "GET", .path = "/apis/trainyard.dev/v1beta1/namespaces/team-a/"
		    "runs?allowWatchBookmarks=true&resourceVersion=10&timeoutSeconds=300&"
		    "watch=true", .status = 200, .chunks = chunks, .block = true,
	});
	ck_assert_int_eq(pthread_create(&th, NULL, runner_main, &rn), 0);
	deadline = kc_clock_now_ms() + 10000;
	while (atomic_load(&c.nerrors) == 0 && kc_clock_now_ms() < deadline)
		(void)kc_clock_sleep_ms(1);
	ck_assert_uint_eq(atomic_load(&c.nerrors), 1);
	t0 = kc_clock_now_ms();
	ck_assert_int_eq(kc_informer_set_resource(inf, &runs_beta, &st), 0);
	wait_events(&c, 1);
	ck_assert_uint_lt(kc_clock_now_ms() - t0, 5000);
	kc_informer_stop(inf);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ft_done(ft);
	assert_log(&c, want, KC_ARRAY_SIZE(want));
	ck_assert_int_eq(c.last_error, KC_ENOTFOUND);
	kc_informer_free(inf);
	kc_client_free(rn.cl);
	ft_free(ft);
}
END_TEST

/* ---- memory per cached item ----------------------------------------------------- */

static size_t	mem_requested;
static size_t	mem_chunks;

/* glibc's chunk for a request: 8 bytes of header, 16-byte multiples, 32 minimum. */
static size_t
chunk_of(size_t n)
{
	size_t c = (n + 8 + 15) & ~(size_t)15;

	return c < 32 ? 32 : c;
}

static void *
cnt_malloc(size_t n)
{
	void *p = malloc(n);

	if (p != NULL) {
		mem_requested += malloc_usable_size(p);
		mem_chunks += chunk_of(malloc_usable_size(p));
	}
	return p;
}

static void *
cnt_realloc(void *p, size_t n)
{
	size_t old = p != NULL ? malloc_usable_size(p) : 0;
	void *q = realloc(p, n);

	if (q != NULL) {
		mem_requested += malloc_usable_size(q) - old;
		mem_chunks += chunk_of(malloc_usable_size(q)) - (p != NULL ? chunk_of(old) : 0);
	}
	return q;
}

static void
cnt_free(void *p)
{
	if (p != NULL) {
		mem_requested -= malloc_usable_size(p);
		mem_chunks -= chunk_of(malloc_usable_size(p));
	}
	free(p);
}

static const struct kc_allocator counting = {
	.malloc = cnt_malloc, .realloc = cnt_realloc, .free = cnt_free,
};

static int	dummy_item;

static int
dummy_transform(void *arg, const struct json_object *obj, void **ret, struct kc_status *st)
{
	(void)arg;
	(void)obj;
	(void)st;
	*ret = &dummy_item;
	return 0;
}

static void
dummy_free(void *arg, void *data)
{
	(void)arg;
	ck_assert_ptr_eq(data, &dummy_item);
}

struct counter {
	struct kc_informer	*inf;
	unsigned		 n, stop_at;
};

static void
count_add(void *arg, struct kc_item *it)
{
	struct counter *k = arg;

	(void)it;
	if (++k->n == k->stop_at)
		kc_informer_stop(k->inf);
}

#define MEM_ITEMS	10000

START_TEST(test_memory_per_item)
{
	struct fake_transport *ft = ft_new();
	struct counter k = { .stop_at = MEM_ITEMS };
	struct kc_informer *inf = NULL;
	struct kc_client *cl = fake_client();
	struct kc_status st;
	struct kc_buf b;
	size_t req0, chunks0, req1, chunks1;
	char path[64];

	kc_buf_init(&b, 64u << 20);
	ck_assert_int_eq(kc_buf_puts(&b, "{\"kind\":\"PodList\",\"metadata\":"
	    "{\"resourceVersion\":\"2000000\"},\"items\":["), 0);
	for (int i = 0; i < MEM_ITEMS; i++)
		ck_assert_int_eq(kc_buf_printf(&b, "%s{\"metadata\":{\"namespace\":\"team-a\","
		    "\"name\":\"run-%04d-%d\",\"resourceVersion\":\"%d\"}}", i > 0 ? "," : "",
		    i / 8, i % 8, 1000000 + i), 0);
	ck_assert_int_eq(kc_buf_puts(&b, "]}"), 0);
	(void)snprintf(path, sizeof(path), "/api/v1/pods?limit=%d", MEM_ITEMS);
	ft_expect(ft, &(struct ft_exchange){
		.method = "GET", .path = path, .status = 200, .resp_body = b.data,
	});
	ck_assert_int_eq(kc_informer_new(&(struct kc_informer_opts){
		.res = &kc_res_pods, .page_size = MEM_ITEMS,
		.transform = dummy_transform, .free_item = dummy_free,
		.on_add = count_add, .arg = &k,
	}, &inf, &st), 0);
	k.inf = inf;

	kc_set_allocator(&counting);
	req0 = mem_requested;
	chunks0 = mem_chunks;
	ck_assert_int_eq(kc_informer_run(inf, cl, &st), 0);
	req1 = mem_requested;
	chunks1 = mem_chunks;
	kc_set_allocator(NULL);

	ck_assert_uint_eq(kc_informer_len(inf), MEM_ITEMS);
	/* Keys are "team-a/run-0123-4" (17 bytes), resourceVersions 7. */
	fprintf(stderr, "informer: cache overhead per item: %zu bytes allocated, "
	    "%zu bytes with glibc chunk headers (key 17 + rv 7 bytes)\n",
	    (req1 - req0) / MEM_ITEMS, (chunks1 - chunks0) / MEM_ITEMS);
	ck_assert_uint_lt((req1 - req0) / MEM_ITEMS, 128);
	ck_assert_uint_lt((chunks1 - chunks0) / MEM_ITEMS, 144);
	kc_informer_free(inf);
	kc_client_free(cl);
	kc_buf_free(&b);
	ft_done(ft);
	ft_free(ft);
}
END_TEST

Suite *
informer_suite(void)
{
	Suite *s = suite_create("informer");
	TCase *tc = tcase_create("fake");
	TCase *srv = tcase_create("server");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_new_args);
	tcase_add_test(tc, test_new_oom);
	tcase_add_test(tc, test_rv_compare);
	tcase_add_test(tc, test_list_watch_resume_stop);
	tcase_add_test(tc, test_keep);
	tcase_add_test(tc, test_relist_diff);
	tcase_add_test(tc, test_resume_after_broken_stream);
	tcase_add_test(tc, test_backoff_500_429);
	tcase_add_test(tc, test_skipped_objects);
	tcase_add_test(tc, test_limits_and_enomem);
	tcase_add_test(tc, test_stop_during_backoff);
	tcase_add_test(tc, test_set_resource);
	tcase_add_test(tc, test_set_resource_during_backoff);
	tcase_add_test(tc, test_memory_per_item);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(srv, NULL, teardown);
	tcase_set_timeout(srv, 60);
	tcase_add_test(srv, test_server_cut_and_stop);
	suite_add_tcase(s, srv);
	return s;
}

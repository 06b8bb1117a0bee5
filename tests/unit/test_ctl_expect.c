/*
 * test_ctl_expect.c: the controller's expectations (controller/expect.c):
 * pods created and not cached yet are reported until the cache shows
 * them or their TTL passes, per Run uid and session; deletes; children;
 * status writes the cache does not show yet; and what a Run costs once
 * the cache shows everything (the entry frees what it no longer needs).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/clock.h>

#include "testutil.h"
#include "../../controller/controller.h"

#define TTL_MS		(5 * 60 * 1000)
#define KEY		"team-a/r1"
#define UID		"0f4c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b"

/* ---- helpers -------------------------------------------------------------- */

static struct expect *
new_expect(void)
{
	struct expect *x = NULL;

	fake_clock_install(1000000);
	ck_assert_int_eq(expect_new(&x), 0);
	return x;
}

static void
free_expect(struct expect *x)
{
	expect_free(x);
	fake_clock_uninstall();
}

/* The indices expect_pods() reports, as a string "1,3". */
static const char *
pods(struct expect *x, const char *uid, int64_t session, const int32_t *seen,
    size_t nseen)
{
	static char buf[256];
	int32_t *exp = (int32_t *)0x1;
	size_t n = 99, len = 0;

	ck_assert_int_eq(expect_pods(x, KEY, uid, session, seen, nseen, &exp, &n), 0);
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%d", i > 0 ? "," : "",
		    exp[i]);
	if (n == 0)
		ck_assert_ptr_null(exp);
	kc_free(exp);
	return buf;
}

/* ---- tests ---------------------------------------------------------------- */

START_TEST(created_until_cached)
{
	struct expect *x = new_expect();
	const int32_t seen02[] = { 2, 0 }, all[] = { 0, 1, 2, 3 };

	for (int32_t i = 0; i < 4; i++)
		ck_assert_int_eq(expect_pod_created(x, KEY, UID, 1, i), 0);
	/* A lagging cache: every created pod still counts. */
	ck_assert_str_eq(pods(x, UID, 1, NULL, 0), "0,1,2,3");
	ck_assert_str_eq(pods(x, UID, 1, seen02, 2), "1,3");
	/* Shown once is enough: a later look without them does not bring them back. */
	ck_assert_str_eq(pods(x, UID, 1, NULL, 0), "1,3");
	ck_assert_str_eq(pods(x, UID, 1, all, 4), "");
	ck_assert_str_eq(pods(x, UID, 1, NULL, 0), "");
	/* Another Run (same name, new uid) or another session starts afresh. */
	ck_assert_int_eq(expect_pod_created(x, KEY, UID, 2, 5), 0);
	ck_assert_str_eq(pods(x, "other-uid", 2, NULL, 0), "");
	ck_assert_int_eq(expect_pod_created(x, KEY, UID, 2, 5), 0);
	ck_assert_str_eq(pods(x, UID, 3, NULL, 0), "");
	/* The TTL: an event that never came does not block forever. */
	ck_assert_int_eq(expect_pod_created(x, KEY, UID, 3, 6), 0);
	fake_clock_advance(TTL_MS - 1);
	ck_assert_str_eq(pods(x, UID, 3, NULL, 0), "6");
	fake_clock_advance(1);
	ck_assert_str_eq(pods(x, UID, 3, NULL, 0), "");
	free_expect(x);
}
END_TEST

/* A pod created and never cached that a delete by name found gone is forgotten. */
START_TEST(created_then_gone_unseen)
{
	struct expect *x = new_expect();

	for (int32_t i = 0; i < 3; i++)
		ck_assert_int_eq(expect_pod_created(x, KEY, UID, 1, i), 0);
	expect_pod_forget(x, KEY, 1);
	ck_assert_str_eq(pods(x, UID, 1, NULL, 0), "0,2");
	expect_pod_forget(x, KEY, 0);
	expect_pod_forget(x, KEY, 2);
	expect_pod_forget(x, "team-a/none", 2);
	ck_assert_str_eq(pods(x, UID, 1, NULL, 0), "");
	free_expect(x);
}
END_TEST

/*
 * The session clock: anchored at the first look, then monotonic, so a
 * step of the wall clock does not move it; a refusal is timed on it; an
 * anchored Run keeps its entry until the anchor is let go.
 */
START_TEST(session_clock)
{
	struct expect *x;
	struct ty_refusal f;
	uint64_t wall0;
	size_t base;

	count_alloc_start();
	x = new_expect();
	base = count_alloc_held();
	wall0 = (uint64_t)kc_clock_wall_us() / 1000;
	ck_assert_uint_eq(expect_clock_ms(x, KEY), wall0);
	fake_clock_step_wall(3600 * 1000);
	fake_clock_advance(2000);
	ck_assert_uint_eq(expect_clock_ms(x, KEY), wall0 + 2000);
	ck_assert_int_eq(expect_refused(x, KEY, 1, "quota"), 1);
	ck_assert(expect_refusal(x, KEY, 1, &f));
	ck_assert_uint_eq(f.at_ms, wall0 + 2000);
	expect_refusal_clear(x, KEY);
	ck_assert_uint_gt(count_alloc_held(), base);	/* the anchor keeps the entry */
	expect_clock_release(x, KEY);
	ck_assert_uint_eq(count_alloc_held(), base);
	ck_assert_uint_eq(expect_clock_ms(x, KEY), wall0 + 2000 + 3600 * 1000);
	expect_clock_release(x, KEY);
	free_expect(x);
	ck_assert_uint_eq(count_alloc_held(), 0);
	count_alloc_stop();
}
END_TEST

START_TEST(deletes_and_children)
{
	struct expect *x = new_expect();

	ck_assert(!expect_deleted(x, KEY, "u1"));
	ck_assert_int_eq(expect_delete(x, KEY, "u1"), 0);
	ck_assert(expect_deleted(x, KEY, "u1"));
	ck_assert(!expect_deleted(x, KEY, "u2"));
	ck_assert(!expect_deleted(x, "team-a/r2", "u1"));
	fake_clock_advance(TTL_MS);
	ck_assert(!expect_deleted(x, KEY, "u1"));

	expect_child_created(x, KEY, TY_KIND_SERVICE, 2);
	ck_assert(expect_child(x, KEY, TY_KIND_SERVICE, 2, false));
	ck_assert(!expect_child(x, KEY, TY_KIND_NETPOL, 2, false));
	ck_assert(!expect_child(x, KEY, TY_KIND_SERVICE, 3, false));	/* moot now */
	ck_assert(!expect_child(x, KEY, TY_KIND_SERVICE, 2, false));
	expect_child_created(x, KEY, TY_KIND_PODGROUP, 4);
	ck_assert(!expect_child(x, KEY, TY_KIND_PODGROUP, 4, true));	/* cached */
	ck_assert(!expect_child(x, KEY, TY_KIND_PODGROUP, 4, false));
	free_expect(x);
}
END_TEST

/*
 * A session that ends at once (a name conflict 100 ms after its start)
 * deletes by name the children the cache does not show yet. Their create
 * and delete may both reach the cache between two reconciles, which then
 * never see them: the delete forgets them, or they would count as
 * present until the TTL and the session would never be cleaned up.
 */
START_TEST(children_deleted_unseen)
{
	struct expect *x = new_expect();

	expect_child_created(x, KEY, TY_KIND_PODGROUP, 1);
	expect_child_created(x, KEY, TY_KIND_SERVICE, 1);
	ck_assert(expect_child(x, KEY, TY_KIND_SERVICE, 1, false));
	expect_child_deleted(x, KEY, TY_KIND_SERVICE);
	ck_assert(!expect_child(x, KEY, TY_KIND_SERVICE, 1, false));
	ck_assert(expect_child(x, KEY, TY_KIND_PODGROUP, 1, false));
	expect_child_deleted(x, KEY, TY_KIND_PODGROUP);
	ck_assert(!expect_child(x, KEY, TY_KIND_PODGROUP, 1, false));
	/* Nothing else, or another Run's, is touched. */
	expect_child_deleted(x, KEY, TY_KIND_NETPOL);
	expect_child_deleted(x, "team-a/r2", TY_KIND_SERVICE);
	expect_child_created(x, "team-a/r2", TY_KIND_NETPOL, 2);
	expect_child_deleted(x, KEY, TY_KIND_NETPOL);
	ck_assert(expect_child(x, "team-a/r2", TY_KIND_NETPOL, 2, false));
	free_expect(x);
}
END_TEST

START_TEST(status_writes)
{
	struct expect *x = new_expect();

	ck_assert(!expect_status_stale(x, KEY, "5"));
	ck_assert_uint_eq(expect_status_age_ms(x, KEY), UINT64_MAX);
	expect_status_written(x, KEY, "10");
	fake_clock_advance(300);
	ck_assert_uint_eq(expect_status_age_ms(x, KEY), 300);
	ck_assert(expect_status_stale(x, KEY, "9"));
	ck_assert(!expect_status_stale(x, KEY, "10"));
	/* Once the cache showed the write, an older version is not expected. */
	ck_assert(!expect_status_stale(x, KEY, "9"));
	ck_assert_uint_eq(expect_status_age_ms(x, KEY), 300);
	/* A write whose event is lost stops blocking after the TTL. */
	expect_status_written(x, KEY, "20");
	fake_clock_advance(TTL_MS - 1);
	ck_assert(expect_status_stale(x, KEY, "19"));
	fake_clock_advance(1);
	ck_assert(!expect_status_stale(x, KEY, "19"));

	/* The write policy's memory: a change waiting, forgotten on a write. */
	{
		struct ty_write_state ws;

		expect_write_wait(x, KEY, 7, 1234);
		expect_write_state(x, KEY, &ws);
		ck_assert_uint_eq(ws.wait_hash, 7);
		ck_assert_uint_eq(ws.wait_since_ms, 1234);
		expect_status_written(x, KEY, "30");
		expect_write_state(x, KEY, &ws);
		ck_assert_uint_eq(ws.wait_hash, 0);
		ck_assert_uint_eq(ws.last_write_ms, kc_clock_now_ms());
	}
	free_expect(x);
}
END_TEST

/* A refused create: counted per session, copied out, forgotten. */
START_TEST(refusals)
{
	struct expect *x = new_expect();
	struct ty_refusal f;

	ck_assert(!expect_refusal(x, KEY, 1, &f));
	ck_assert_int_eq(expect_refused(x, KEY, 1, "Error creating Pod r-0: no"), 1);
	ck_assert_int_eq(expect_refused(x, KEY, 1, "Error creating Pod r-0: no"), 2);
	ck_assert(expect_refusal(x, KEY, 1, &f));
	ck_assert_uint_eq(f.failures, 2);
	ck_assert_int_eq(f.session, 1);
	ck_assert_str_eq(f.message, "Error creating Pod r-0: no");
	/* Another session starts counting again. */
	ck_assert_int_eq(expect_refused(x, KEY, 2, "quota"), 1);
	ck_assert(!expect_refusal(x, KEY, 1, &f));
	expect_refusal_clear(x, KEY);
	ck_assert(!expect_refusal(x, KEY, 2, &f));
	free_expect(x);
}
END_TEST

/* A name conflict: kept for its session, copied out, forgotten with the Run. */
START_TEST(conflicts)
{
	struct expect *x = new_expect();
	struct ty_conflict f;

	ck_assert(!expect_conflict(x, KEY, 1, &f));
	ck_assert_int_eq(expect_conflict_set(x, KEY, 1, "service ns/r exists and is not "
	    "owned by this Run"), 0);
	ck_assert(expect_conflict(x, KEY, 1, &f));
	ck_assert_int_eq(f.session, 1);
	ck_assert_str_eq(f.message, "service ns/r exists and is not owned by this Run");
	/* A later session's decision does not see it, and it is dropped then. */
	ck_assert(!expect_conflict(x, KEY, 2, &f));
	ck_assert(!expect_conflict(x, KEY, 1, &f));
	ck_assert_int_eq(expect_conflict_set(x, KEY, 3, "pod ns/r-1 exists"), 0);
	expect_forget(x, KEY);
	ck_assert(!expect_conflict(x, KEY, 3, &f));
	free_expect(x);
}
END_TEST

/*
 * A Run whose pods, children and status write the cache shows costs its
 * entry's header and key, and nothing once the status write is older
 * than the TTL. Before, it kept about 850 bytes for 5 minutes at least.
 */
START_TEST(settled_run_is_small)
{
	struct expect *x;
	int32_t seen[8];
	size_t base, settled;

	count_alloc_start();
	x = new_expect();
	base = count_alloc_held();
	/* A session start, as reconcile_run.c does it. */
	expect_status_written(x, KEY, "100");
	expect_child_created(x, KEY, TY_KIND_PODGROUP, 1);
	expect_child_created(x, KEY, TY_KIND_SERVICE, 1);
	expect_child_created(x, KEY, TY_KIND_NETPOL, 1);
	for (int32_t i = 0; i < 8; i++) {
		ck_assert_int_eq(expect_pod_created(x, KEY, UID, 1, i), 0);
		seen[i] = i;
	}
	expect_write_wait(x, KEY, 0, 0);
	ck_assert_uint_gt(count_alloc_held() - base, 256);
	/* The next reconciles see everything in the caches. */
	ck_assert(!expect_status_stale(x, KEY, "101"));
	for (enum ty_kind k = TY_KIND_PODGROUP; k < TY_KIND_POD; k++)
		ck_assert(!expect_child(x, KEY, k, 1, true));
	ck_assert_str_eq(pods(x, UID, 1, seen, 8), "");
	expect_status_written(x, KEY, "102");	/* all running */
	ck_assert(!expect_status_stale(x, KEY, "102"));
	settled = count_alloc_held() - base;
	ck_assert_uint_le(settled, 72 + sizeof(KEY));
	/* The status write time matters for the TTL, then nothing is left. */
	ck_assert_uint_eq(expect_status_age_ms(x, KEY), 0);
	fake_clock_advance(TTL_MS);
	ck_assert_str_eq(pods(x, UID, 1, seen, 8), "");
	ck_assert_uint_eq(count_alloc_held(), base);
	ck_assert_uint_eq(expect_status_age_ms(x, KEY), UINT64_MAX);
	free_expect(x);
	ck_assert_uint_eq(count_alloc_held(), 0);
	count_alloc_stop();
}
END_TEST

START_TEST(out_of_memory)
{
	struct expect *x = new_expect();
	int r;

	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = expect_pod_created(x, KEY, UID, 1, 3);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_str_eq(pods(x, UID, 1, NULL, 0), "");
	}
	ck_assert_str_eq(pods(x, UID, 1, NULL, 0), "3");
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = expect_delete(x, "team-a/r2", "u9");
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert(!expect_deleted(x, "team-a/r2", "u9"));
	}
	ck_assert(expect_deleted(x, "team-a/r2", "u9"));
	free_expect(x);
}
END_TEST

Suite *
ctl_expect_suite(void)
{
	Suite *s = suite_create("ctl_expect");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, created_until_cached);
	tcase_add_test(tc, created_then_gone_unseen);
	tcase_add_test(tc, session_clock);
	tcase_add_test(tc, deletes_and_children);
	tcase_add_test(tc, children_deleted_unseen);
	tcase_add_test(tc, status_writes);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, conflicts);
	tcase_add_test(tc, settled_run_is_small);
	tcase_add_test(tc, out_of_memory);
	suite_add_tcase(s, tc);
	return s;
}

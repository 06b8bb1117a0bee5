/*
 * test_connguard.c: the connection guard's deadlines, eviction order,
 * body budget and counters, on a fake clock.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/connguard.h>

#include "testutil.h"

#define NH	16

/* The handles are slots of this array; kill marks them. */
static struct {
	int	killed[NH];
	int	nkills;
	int	last;
} k;

static void
kill_fn(void *arg, void *handle)
{
	int i = (int)((int *)handle - (int *)arg);

	ck_assert_int_ge(i, 0);
	ck_assert_int_lt(i, NH);
	k.killed[i]++;
	k.nkills++;
	k.last = i;
}

static int handles[NH];

static struct kc_guard *
guard(unsigned max, uint32_t answer_ms, size_t budget)
{
	struct kc_guard *g;

	memset(&k, 0, sizeof(k));
	k.last = -1;
	fake_clock_install(1000);
	ck_assert_int_eq(kc_guard_new(&(struct kc_guard_opts){
		.max_conns = max,
		.request_ms = 5000,
		.idle_ms = 30000,
		.body_ms = 10000,
		.answer_ms = answer_ms,
		.body_budget = budget,
		.kill = kill_fn,
		.arg = handles,
	}, &g), 0);
	return g;
}

static void
done(struct kc_guard *g)
{
	kc_guard_free(g);
	fake_clock_uninstall();
}

static uint64_t
dropped(struct kc_guard *g, enum kc_guard_drop d)
{
	struct kc_guard_stats s;

	kc_guard_stats(g, &s);
	return s.dropped[d];
}

START_TEST(guard_deadlines)
{
	struct kc_guard *g = guard(8, 20000, 0);
	struct kc_guard_conn *slow, *fast, *body, *answer, *stream;
	struct kc_guard_stats s;

	slow = kc_guard_open(g, &handles[0]);
	fast = kc_guard_open(g, &handles[1]);
	body = kc_guard_open(g, &handles[2]);
	answer = kc_guard_open(g, &handles[3]);
	stream = kc_guard_open(g, &handles[4]);
	ck_assert_uint_eq(kc_guard_next_ms(g), 6000);
	kc_guard_phase(g, fast, KC_GUARD_ANSWER);
	kc_guard_phase(g, fast, KC_GUARD_REQUEST);	/* keep-alive */
	kc_guard_phase(g, body, KC_GUARD_BODY);
	kc_guard_phase(g, answer, KC_GUARD_ANSWER);
	kc_guard_phase(g, stream, KC_GUARD_STREAM);

	/* Progress does not push a deadline back: only a phase change does. */
	fake_clock_advance(4999);
	kc_guard_sweep(g);
	ck_assert_int_eq(k.nkills, 0);
	fake_clock_advance(1);
	kc_guard_sweep(g);
	ck_assert_int_eq(k.nkills, 1);
	ck_assert_int_eq(k.killed[0], 1);
	ck_assert_uint_eq(dropped(g, KC_GUARD_DROP_HEADERS), 1);
	ck_assert(kc_guard_killed(slow));
	ck_assert(!kc_guard_killed(fast));
	ck_assert(!kc_guard_killed(NULL));
	/* Not closed 200 ms later: killed again, counted once. */
	ck_assert_uint_eq(kc_guard_next_ms(g), 6200);
	fake_clock_advance(200);
	kc_guard_sweep(g);
	ck_assert_int_eq(k.killed[0], 2);
	ck_assert_uint_eq(dropped(g, KC_GUARD_DROP_HEADERS), 1);
	/* Killed, then closed by the server: not malformed. */
	kc_guard_close(g, slow);
	ck_assert_uint_eq(dropped(g, KC_GUARD_DROP_MALFORMED), 0);

	fake_clock_advance(4800);		/* 10 s: the body's deadline */
	kc_guard_sweep(g);
	ck_assert_int_eq(k.killed[2], 1);
	ck_assert_uint_eq(dropped(g, KC_GUARD_DROP_BODY), 1);
	kc_guard_close(g, body);
	fake_clock_advance(10000);		/* 20 s: the answer's */
	kc_guard_sweep(g);
	ck_assert_int_eq(k.killed[3], 1);
	ck_assert_uint_eq(dropped(g, KC_GUARD_DROP_ANSWER), 1);
	kc_guard_close(g, answer);
	ck_assert_uint_eq(kc_guard_next_ms(g), 31000);	/* the idle one's */
	fake_clock_advance(10000);		/* 30 s: the keep-alive's */
	kc_guard_sweep(g);
	ck_assert_int_eq(k.killed[1], 1);
	ck_assert_uint_eq(dropped(g, KC_GUARD_DROP_IDLE), 1);
	kc_guard_close(g, fast);
	/* A stream has no deadline. */
	fake_clock_advance(3600 * 1000);
	kc_guard_sweep(g);
	ck_assert_int_eq(k.killed[4], 0);
	ck_assert_uint_eq(kc_guard_next_ms(g), 0);
	kc_guard_stats(g, &s);
	ck_assert_uint_eq(s.open, 1);
	ck_assert_uint_eq(s.accepted, 5);
	kc_guard_close(g, stream);
	kc_guard_stats(g, &s);
	ck_assert_uint_eq(s.open, 0);
	done(g);
}
END_TEST

START_TEST(guard_no_answer_deadline)
{
	struct kc_guard *g = guard(8, 0, 0);
	struct kc_guard_conn *c = kc_guard_open(g, &handles[0]);

	kc_guard_phase(g, c, KC_GUARD_ANSWER);
	fake_clock_advance(3600 * 1000);
	kc_guard_sweep(g);
	ck_assert_int_eq(k.nkills, 0);
	kc_guard_close(g, c);
	done(g);
}
END_TEST

/* The cap closes the longest idle first, then the slowest; never one being answered. */
START_TEST(guard_evicts)
{
	struct kc_guard *g = guard(4, 0, 0);
	struct kc_guard_conn *c[NH] = { 0 };

	c[0] = kc_guard_open(g, &handles[0]);	/* will wait for its headers */
	fake_clock_advance(10);
	c[1] = kc_guard_open(g, &handles[1]);
	kc_guard_phase(g, c[1], KC_GUARD_ANSWER);	/* being answered */
	fake_clock_advance(10);
	c[2] = kc_guard_open(g, &handles[2]);
	kc_guard_phase(g, c[2], KC_GUARD_BODY);	/* a body, newer than c[0] */
	fake_clock_advance(10);
	c[3] = kc_guard_open(g, &handles[3]);
	kc_guard_phase(g, c[3], KC_GUARD_ANSWER);
	kc_guard_phase(g, c[3], KC_GUARD_REQUEST);	/* idle, the newest */

	/* Full: the idle one goes, though it is the newest. */
	c[4] = kc_guard_open(g, &handles[4]);
	ck_assert_ptr_nonnull(c[4]);
	ck_assert_int_eq(k.last, 3);
	ck_assert_uint_eq(dropped(g, KC_GUARD_DROP_EVICTED), 1);
	kc_guard_close(g, c[3]);

	/* No idle one: the slowest of those waiting for headers or a body. */
	c[5] = kc_guard_open(g, &handles[5]);
	ck_assert_int_eq(k.last, 0);
	kc_guard_close(g, c[0]);
	c[6] = kc_guard_open(g, &handles[6]);
	ck_assert_int_eq(k.last, 2);
	kc_guard_close(g, c[2]);
	c[7] = kc_guard_open(g, &handles[7]);
	ck_assert_int_eq(k.last, 4);		/* c[4], older than c[5] */
	kc_guard_close(g, c[4]);

	/* Everything answered: the newcomer is refused, nothing else closed. */
	kc_guard_phase(g, c[5], KC_GUARD_ANSWER);
	kc_guard_phase(g, c[6], KC_GUARD_STREAM);
	kc_guard_phase(g, c[7], KC_GUARD_ANSWER);
	ck_assert_ptr_null(kc_guard_open(g, &handles[8]));
	ck_assert_int_eq(k.last, 8);
	ck_assert_uint_eq(dropped(g, KC_GUARD_DROP_REFUSED), 1);
	ck_assert_int_eq(k.killed[1] + k.killed[5] + k.killed[6] + k.killed[7], 0);
	ck_assert_uint_eq(dropped(g, KC_GUARD_DROP_EVICTED), 4);
	for (int i = 0; i < 8; i++)
		if (i != 0 && i != 2 && i != 3 && i != 4)
			kc_guard_close(g, c[i]);
	done(g);
}
END_TEST

START_TEST(guard_malformed)
{
	struct kc_guard *g = guard(4, 0, 0);
	struct kc_guard_conn *a = kc_guard_open(g, &handles[0]);
	struct kc_guard_conn *b = kc_guard_open(g, &handles[1]);

	/* a closes before a request; b after one (a normal keep-alive end). */
	kc_guard_phase(g, b, KC_GUARD_ANSWER);
	kc_guard_phase(g, b, KC_GUARD_REQUEST);
	kc_guard_close(g, a);
	kc_guard_close(g, b);
	kc_guard_close(g, NULL);
	ck_assert_uint_eq(dropped(g, KC_GUARD_DROP_MALFORMED), 1);
	ck_assert_str_eq(kc_guard_drop_name(KC_GUARD_DROP_MALFORMED), "malformed");
	ck_assert_str_eq(kc_guard_drop_name(KC_GUARD_DROP_HEADERS), "timeout_headers");
	ck_assert_str_eq(kc_guard_drop_name(KC_GUARD_DROP_COUNT), "unknown");
	done(g);
}
END_TEST

/* Bodies share a budget: the oldest other body makes room, else the request is refused. */
START_TEST(guard_body_budget)
{
	struct kc_guard *g = guard(8, 0, 1000);
	struct kc_guard_conn *a, *b, *c;
	struct kc_guard_stats s;

	a = kc_guard_open(g, &handles[0]);
	b = kc_guard_open(g, &handles[1]);
	c = kc_guard_open(g, &handles[2]);
	kc_guard_phase(g, a, KC_GUARD_BODY);
	kc_guard_phase(g, b, KC_GUARD_BODY);
	kc_guard_phase(g, c, KC_GUARD_BODY);
	ck_assert(kc_guard_body(g, a, 400));
	ck_assert(kc_guard_body(g, b, 400));
	ck_assert(kc_guard_body(g, c, 100));
	kc_guard_stats(g, &s);
	ck_assert_uint_eq(s.body_bytes, 900);
	ck_assert(kc_guard_body(g, c, 300));		/* a, the oldest, goes */
	ck_assert_int_eq(k.last, 0);
	ck_assert(!kc_guard_body(g, c, 1000));		/* b goes, still too much */
	ck_assert_int_eq(k.killed[1], 1);
	kc_guard_stats(g, &s);
	ck_assert_uint_eq(s.body_bytes, 400);
	/* Answered and back to keep-alive: its body is released. */
	kc_guard_phase(g, c, KC_GUARD_ANSWER);
	kc_guard_phase(g, c, KC_GUARD_REQUEST);
	kc_guard_stats(g, &s);
	ck_assert_uint_eq(s.body_bytes, 0);
	ck_assert(!kc_guard_body(g, a, 1));		/* killed: nothing counted */
	kc_guard_close(g, a);
	kc_guard_close(g, b);
	kc_guard_close(g, c);
	done(g);
}
END_TEST

/* Many connections: a sweep kills exactly the expired ones, oldest first. */
static int many[1001];
static int many_killed, many_last;

static void
many_kill(void *arg, void *handle)
{
	(void)arg;
	many_last = (int)((int *)handle - many);
	many_killed++;
}

START_TEST(guard_many)
{
	struct kc_guard *g;
	struct kc_guard_conn *c[1001];
	struct kc_guard_stats s;

	many_killed = 0;
	fake_clock_install(0);
	ck_assert_int_eq(kc_guard_new(&(struct kc_guard_opts){
		.max_conns = 1000,
		.kill = many_kill,
	}, &g), 0);
	for (int i = 0; i < 1000; i++) {
		c[i] = kc_guard_open(g, &many[i]);
		ck_assert_ptr_nonnull(c[i]);
		fake_clock_advance(1);
	}
	kc_guard_stats(g, &s);
	ck_assert_uint_eq(s.open, 1000);
	ck_assert_int_eq(many_killed, 0);
	/* Full: the 1001st evicts the one that waited the longest. */
	c[1000] = kc_guard_open(g, &many[1000]);
	ck_assert_ptr_nonnull(c[1000]);
	ck_assert_int_eq(many_killed, 1);
	ck_assert_int_eq(many_last, 0);
	kc_guard_close(g, c[0]);
	c[0] = NULL;
	/* The default request deadline (5 s): those opened by 0.5 s are gone at 5.5 s. */
	fake_clock_advance(5500 - 1000);
	kc_guard_sweep(g);
	ck_assert_int_eq(many_killed, 501);
	ck_assert_int_eq(many_last, 500);
	ck_assert_uint_eq(kc_guard_next_ms(g), 501 + 5000);
	ck_assert_uint_eq(dropped(g, KC_GUARD_DROP_HEADERS), 500);
	for (int i = 0; i <= 1000; i++)
		kc_guard_close(g, c[i]);
	kc_guard_stats(g, &s);
	ck_assert_uint_eq(s.open, 0);
	ck_assert_uint_eq(s.accepted, 1001);
	ck_assert_uint_eq(s.dropped[KC_GUARD_DROP_MALFORMED], 500);	/* closed unserved */
	kc_guard_free(g);
	fake_clock_uninstall();
}
END_TEST

Suite *
connguard_suite(void)
{
	Suite *s = suite_create("connguard");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, guard_deadlines);
	tcase_add_test(tc, guard_no_answer_deadline);
	tcase_add_test(tc, guard_evicts);
	tcase_add_test(tc, guard_malformed);
	tcase_add_test(tc, guard_body_budget);
	tcase_add_test(tc, guard_many);
	suite_add_tcase(s, tc);
	return s;
}

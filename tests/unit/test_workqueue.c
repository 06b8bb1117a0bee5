/*
 * test_workqueue.c: the work queue's contract. Single-threaded on the
 * fake clock: deduplication, FIFO order, dirty-while-processing, delays
 * (order, earlier deadline wins), per-key backoff and forget, the overall
 * bucket, shutdown, counters and allocation failures. Threaded on the real
 * clock: blocking get woken by add, timers and shutdown, get with a
 * timeout, drain, and a
 * stress test asserting that no key is ever with two workers and no add
 * is lost.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <kc/clock.h>
#include <kc/macro.h>
#include <kc/ratelimit.h>
#include <kc/workqueue.h>

#include "testutil.h"

static void
teardown(void)
{
	fake_clock_uninstall();
	fail_alloc_after(SIZE_MAX);
}

static struct kc_workqueue *
new_queue(const struct kc_workqueue_opts *opts)
{
	struct kc_workqueue *q = NULL;

	ck_assert_int_eq(kc_workqueue_new(opts, &q), 0);
	ck_assert_ptr_nonnull(q);
	return q;
}

/* try_get() that must succeed with 'want'. */
static void
take(struct kc_workqueue *q, const char *want)
{
	char key[KC_WORKQUEUE_KEY_MAX];
	int r = kc_workqueue_try_get(q, key, sizeof(key));

	ck_assert_msg(r == 0, "wanted %s, got error %d", want, r);
	ck_assert_str_eq(key, want);
}

static void
none(struct kc_workqueue *q)
{
	char key[KC_WORKQUEUE_KEY_MAX];

	ck_assert_int_eq(kc_workqueue_try_get(q, key, sizeof(key)), -EAGAIN);
}

START_TEST(test_new_and_args)
{
	struct kc_workqueue *q = NULL;
	char key[KC_WORKQUEUE_KEY_MAX + 10], small[16];

	ck_assert_int_eq(kc_workqueue_new(&(struct kc_workqueue_opts){
		.backoff_base_ms = 100, .backoff_max_ms = 10,
	}, &q), -EINVAL);
	ck_assert_ptr_null(q);
	q = new_queue(NULL);
	ck_assert_int_eq(kc_workqueue_add(q, NULL), -EINVAL);
	ck_assert_int_eq(kc_workqueue_add(q, ""), -EINVAL);
	memset(key, 'k', sizeof(key));
	key[KC_WORKQUEUE_KEY_MAX] = '\0';
	ck_assert_int_eq(kc_workqueue_add(q, key), -EINVAL);
	ck_assert_int_eq(kc_workqueue_add_after(q, key, 5), -EINVAL);
	ck_assert_int_eq(kc_workqueue_add_rate_limited(q, key), -EINVAL);
	key[KC_WORKQUEUE_KEY_MAX - 1] = '\0';
	ck_assert_int_eq(kc_workqueue_add(q, key), 0);
	ck_assert_int_eq(kc_workqueue_try_get(q, small, sizeof(small)), -EINVAL);
	ck_assert_int_eq(kc_workqueue_get(q, NULL, 0), -EINVAL);
	ck_assert_uint_eq(kc_workqueue_len(q), 1);
	take(q, key);
	ck_assert_int_eq(kc_workqueue_done(q, key), 0);
	ck_assert_int_eq(kc_workqueue_done(q, key), -ENOENT);
	ck_assert_int_eq(kc_workqueue_done(q, "never"), -ENOENT);
	ck_assert_int_eq(kc_workqueue_done(q, ""), -ENOENT);
	ck_assert_uint_eq(kc_workqueue_num_requeues(q, "never"), 0);
	kc_workqueue_forget(q, "never");
	q = kc_workqueue_free(q);
	ck_assert_ptr_null(q);
	ck_assert_ptr_null(kc_workqueue_free(NULL));
}
END_TEST

START_TEST(test_oom)
{
	struct kc_workqueue_stats s;

	for (size_t budget = 0;; budget++) {
		struct kc_workqueue *q = NULL;
		int r;

		fail_alloc_after(budget);
		r = kc_workqueue_new(NULL, &q);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			kc_workqueue_free(q);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(q);
	}
	/* A failed add changes nothing; the same add works afterwards. */
	for (size_t budget = 0;; budget++) {
		struct kc_workqueue *q = new_queue(NULL);
		int r1, r2, r3;

		fail_alloc_after(budget);
		r1 = kc_workqueue_add(q, "a/1");
		r2 = kc_workqueue_add_after(q, "a/2", 10);
		r3 = kc_workqueue_add_rate_limited(q, "a/3");
		fail_alloc_after(SIZE_MAX);
		kc_workqueue_stats(q, &s);
		ck_assert(r1 == 0 || r1 == -ENOMEM);
		ck_assert(r2 == 0 || r2 == -ENOMEM);
		ck_assert(r3 == 0 || r3 == -ENOMEM);
		ck_assert_uint_eq(s.depth, r1 == 0);
		ck_assert_uint_eq(s.delayed, (r2 == 0) + (r3 == 0));
		ck_assert_uint_eq(s.keys, (r1 == 0) + (r2 == 0) + (r3 == 0));
		ck_assert_int_eq(kc_workqueue_add(q, "a/1"), 0);
		ck_assert_uint_eq(kc_workqueue_len(q), 1);
		kc_workqueue_free(q);
		if (r1 == 0 && r2 == 0 && r3 == 0)
			break;
	}
}
END_TEST

START_TEST(test_dedup_fifo)
{
	struct kc_workqueue *q = new_queue(NULL);
	struct kc_workqueue_stats s;

	fake_clock_install(0);
	ck_assert_int_eq(kc_workqueue_add(q, "ns/a"), 0);
	ck_assert_int_eq(kc_workqueue_add(q, "ns/b"), 0);
	ck_assert_int_eq(kc_workqueue_add(q, "ns/a"), 0);
	ck_assert_int_eq(kc_workqueue_add(q, "ns/c"), 0);
	ck_assert_int_eq(kc_workqueue_add(q, "ns/b"), 0);
	ck_assert_uint_eq(kc_workqueue_len(q), 3);
	take(q, "ns/a");
	take(q, "ns/b");
	take(q, "ns/c");
	none(q);
	/* A key being processed is not handed out again. */
	ck_assert_int_eq(kc_workqueue_add(q, "ns/a"), 0);
	ck_assert_uint_eq(kc_workqueue_len(q), 0);
	none(q);
	ck_assert_int_eq(kc_workqueue_add(q, "ns/a"), 0);	/* still once */
	ck_assert_int_eq(kc_workqueue_done(q, "ns/b"), 0);
	none(q);
	/* ... until done(), which queues it again, once. */
	ck_assert_int_eq(kc_workqueue_done(q, "ns/a"), 0);
	ck_assert_uint_eq(kc_workqueue_len(q), 1);
	take(q, "ns/a");
	none(q);
	ck_assert_int_eq(kc_workqueue_done(q, "ns/a"), 0);
	ck_assert_int_eq(kc_workqueue_done(q, "ns/c"), 0);
	none(q);
	kc_workqueue_stats(q, &s);
	ck_assert_uint_eq(s.adds, 7);
	ck_assert_uint_eq(s.keys, 0);		/* all released */
	ck_assert_uint_eq(s.processing, 0);
	ck_assert_uint_eq(s.latency_count, 4);
	ck_assert_uint_eq(s.work_count, 4);
	kc_workqueue_free(q);
}
END_TEST

START_TEST(test_add_after_order)
{
	struct kc_workqueue *q = new_queue(NULL);
	struct kc_workqueue_stats s;

	fake_clock_install(10000);
	ck_assert_int_eq(kc_workqueue_add_after(q, "a", 100), 0);
	ck_assert_int_eq(kc_workqueue_add_after(q, "b", 50), 0);
	ck_assert_int_eq(kc_workqueue_add_after(q, "c", 50), 0);
	ck_assert_int_eq(kc_workqueue_add_after(q, "d", 0), 0);	/* at once */
	ck_assert_int_eq(kc_workqueue_add_after(q, "e", 300), 0);
	ck_assert_int_eq(kc_workqueue_add_after(q, "e", 20), 0);	/* earlier wins */
	ck_assert_int_eq(kc_workqueue_add_after(q, "e", 400), 0);	/* later loses */
	kc_workqueue_stats(q, &s);
	ck_assert_uint_eq(s.delayed, 4);
	ck_assert_uint_eq(s.depth, 1);
	take(q, "d");
	none(q);
	fake_clock_advance(19);
	none(q);
	fake_clock_advance(1);
	take(q, "e");
	fake_clock_advance(30);
	take(q, "b");		/* equal deadlines: in the order set */
	take(q, "c");
	none(q);
	fake_clock_advance(49);
	none(q);
	fake_clock_advance(1);
	take(q, "a");
	none(q);
	fake_clock_advance(1000);
	none(q);		/* "e" fired once only */
	kc_workqueue_stats(q, &s);
	ck_assert_uint_eq(s.delayed, 0);

	/* A delayed add of a key being processed queues it after done(). */
	ck_assert_int_eq(kc_workqueue_add_after(q, "a", 5), 0);
	fake_clock_advance(5);
	none(q);
	ck_assert_int_eq(kc_workqueue_done(q, "a"), 0);
	take(q, "a");
	/* A delay does not hold back a key that is queued now. */
	ck_assert_int_eq(kc_workqueue_add_after(q, "z", 500), 0);
	ck_assert_int_eq(kc_workqueue_add(q, "z"), 0);
	take(q, "z");
	ck_assert_int_eq(kc_workqueue_done(q, "z"), 0);
	fake_clock_advance(500);
	take(q, "z");		/* and the timer still fires */
	for (const char *k = "abcdez"; *k != '\0'; k++)
		(void)kc_workqueue_done(q, (char[]){ *k, '\0' });
	kc_workqueue_stats(q, &s);
	ck_assert_uint_eq(s.keys, 0);
	kc_workqueue_free(q);
}
END_TEST

START_TEST(test_many_timers)
{
	struct kc_workqueue *q = new_queue(NULL);
	char key[32], got[KC_WORKQUEUE_KEY_MAX];
	uint32_t x = 7;

	/* 2000 keys at pseudo-random delays come out in deadline order. */
	fake_clock_install(0);
	for (int i = 0; i < 2000; i++) {
		x = x * 1103515245u + 12345u;
		(void)snprintf(key, sizeof(key), "k%05u", (x >> 8) % 100000);
		ck_assert_int_eq(kc_workqueue_add_after(q, key, 1 + (x >> 8) % 100000), 0);
	}
	fake_clock_advance(200000);
	{
		char prev[KC_WORKQUEUE_KEY_MAX] = "";
		int n = 0;

		while (kc_workqueue_try_get(q, got, sizeof(got)) == 0) {
			ck_assert_str_gt(got, prev);	/* delay grows with the name */
			memcpy(prev, got, sizeof(prev));
			ck_assert_int_eq(kc_workqueue_done(q, got), 0);
			n++;
		}
		ck_assert_int_gt(n, 1500);	/* some names repeat */
	}
	kc_workqueue_free(q);
}
END_TEST

/* The key comes out exactly 'want' ms from now on the fake clock. */
static void
assert_delay(struct kc_workqueue *q, const char *key, uint64_t want)
{
	ck_assert_uint_gt(want, 0);
	fake_clock_advance(want - 1);
	none(q);
	fake_clock_advance(1);
	take(q, key);
	ck_assert_int_eq(kc_workqueue_done(q, key), 0);
}

START_TEST(test_backoff)
{
	struct kc_workqueue *q = new_queue(&(struct kc_workqueue_opts){
		.backoff_base_ms = 5, .backoff_max_ms = 40,
	});
	static const uint64_t want[] = { 5, 10, 20, 40, 40 };
	struct kc_workqueue_stats s;

	fake_clock_install(0);
	for (size_t i = 0; i < KC_ARRAY_SIZE(want); i++) {
		ck_assert_int_eq(kc_workqueue_add_rate_limited(q, "ns/x"), 0);
		ck_assert_uint_eq(kc_workqueue_num_requeues(q, "ns/x"), i + 1);
		assert_delay(q, "ns/x", want[i]);
	}
	/* Backoff is per key. */
	ck_assert_int_eq(kc_workqueue_add_rate_limited(q, "ns/y"), 0);
	assert_delay(q, "ns/y", 5);
	/* The key is remembered while it counts failures... */
	kc_workqueue_stats(q, &s);
	ck_assert_uint_eq(s.keys, 2);
	ck_assert_uint_eq(s.retries, 6);
	/* ... and forget() starts it over and releases it. */
	kc_workqueue_forget(q, "ns/x");
	kc_workqueue_forget(q, "ns/y");
	ck_assert_uint_eq(kc_workqueue_num_requeues(q, "ns/x"), 0);
	kc_workqueue_stats(q, &s);
	ck_assert_uint_eq(s.keys, 0);
	ck_assert_int_eq(kc_workqueue_add_rate_limited(q, "ns/x"), 0);
	assert_delay(q, "ns/x", 5);
	kc_workqueue_forget(q, "ns/x");
	kc_workqueue_free(q);

	/* The defaults: 5 ms doubling, capped at 1000 s; no overflow later. */
	q = new_queue(NULL);
	for (unsigned i = 0; i < 40; i++) {
		uint64_t d = i < 20 ? KC_MIN(5ull << i, 1000000ull) : 1000000;

		ck_assert_int_eq(kc_workqueue_add_rate_limited(q, "d"), 0);
		assert_delay(q, "d", d);
	}
	ck_assert_uint_eq(kc_workqueue_num_requeues(q, "d"), 40);
	kc_workqueue_free(q);
}
END_TEST

START_TEST(test_overall_bucket)
{
	struct kc_ratelimit *rl;
	struct kc_workqueue *q;

	fake_clock_install(0);
	ck_assert_int_eq(kc_ratelimit_new(1, 1, &rl), 0);
	q = new_queue(&(struct kc_workqueue_opts){ .limiter = rl });
	/* The first retry takes the bucket's token: the key's own 5 ms. */
	ck_assert_int_eq(kc_workqueue_add_rate_limited(q, "a"), 0);
	/* The second key's first retry waits for the bucket: 1 s. */
	ck_assert_int_eq(kc_workqueue_add_rate_limited(q, "b"), 0);
	assert_delay(q, "a", 5);
	assert_delay(q, "b", 995);
	kc_workqueue_free(q);
	kc_ratelimit_free(rl);
}
END_TEST

struct samples {
	unsigned	 latency, work;
	uint64_t	 latency_ms, work_ms;
};

static void
observe(void *arg, enum kc_workqueue_metric m, uint64_t ms)
{
	struct samples *s = arg;

	if (m == KC_WORKQUEUE_LATENCY) {
		s->latency++;
		s->latency_ms += ms;
	} else {
		ck_assert_int_eq(m, KC_WORKQUEUE_WORK);
		s->work++;
		s->work_ms += ms;
	}
}

START_TEST(test_metrics)
{
	struct samples smp = { 0 };
	struct kc_workqueue *q = new_queue(&(struct kc_workqueue_opts){
		.observe = observe, .observe_arg = &smp,
	});
	struct kc_workqueue_stats s;

	fake_clock_install(500);
	ck_assert_int_eq(kc_workqueue_add(q, "a"), 0);
	ck_assert_int_eq(kc_workqueue_add(q, "b"), 0);
	ck_assert_int_eq(kc_workqueue_add_after(q, "c", 1000), 0);
	fake_clock_advance(30);
	take(q, "a");				/* waited 30 */
	fake_clock_advance(10);
	take(q, "b");				/* waited 40 */
	fake_clock_advance(7);
	kc_workqueue_stats(q, &s);
	ck_assert_uint_eq(s.depth, 0);
	ck_assert_uint_eq(s.processing, 2);
	ck_assert_uint_eq(s.delayed, 1);
	ck_assert_uint_eq(s.keys, 3);
	ck_assert_uint_eq(s.adds, 2);
	ck_assert_uint_eq(s.latency_count, 2);
	ck_assert_uint_eq(s.latency_ms_sum, 70);
	ck_assert_uint_eq(s.unfinished_work_ms, 17 + 7);
	ck_assert_uint_eq(s.longest_running_ms, 17);
	ck_assert_int_eq(kc_workqueue_done(q, "a"), 0);	/* worked 17 */
	ck_assert_int_eq(kc_workqueue_done(q, "b"), 0);	/* worked 7 */
	kc_workqueue_stats(q, &s);
	ck_assert_uint_eq(s.work_count, 2);
	ck_assert_uint_eq(s.work_ms_sum, 24);
	ck_assert_uint_eq(s.unfinished_work_ms, 0);
	ck_assert_uint_eq(s.longest_running_ms, 0);
	ck_assert_uint_eq(smp.latency, 2);
	ck_assert_uint_eq(smp.latency_ms, 70);
	ck_assert_uint_eq(smp.work, 2);
	ck_assert_uint_eq(smp.work_ms, 24);
	/* The timer's latency counts from when it fired. */
	fake_clock_advance(2000);
	take(q, "c");
	kc_workqueue_stats(q, &s);
	ck_assert_uint_eq(s.adds, 3);
	ck_assert_uint_eq(s.latency_ms_sum, 70);
	ck_assert_int_eq(kc_workqueue_done(q, "c"), 0);
	kc_workqueue_free(q);
}
END_TEST

START_TEST(test_shutdown)
{
	struct kc_workqueue *q = new_queue(NULL);
	char key[KC_WORKQUEUE_KEY_MAX];
	struct kc_workqueue_stats s;

	fake_clock_install(0);
	ck_assert_int_eq(kc_workqueue_add(q, "a"), 0);
	ck_assert_int_eq(kc_workqueue_add(q, "b"), 0);
	ck_assert_int_eq(kc_workqueue_add_after(q, "later", 10), 0);
	take(q, "a");
	ck_assert_int_eq(kc_workqueue_add(q, "a"), 0);	/* dirty while processing */
	ck_assert(!kc_workqueue_shutting_down(q));
	kc_workqueue_shut_down(q);
	kc_workqueue_shut_down(q);			/* idempotent */
	ck_assert(kc_workqueue_shutting_down(q));
	ck_assert_int_eq(kc_workqueue_add(q, "c"), -ESHUTDOWN);
	ck_assert_int_eq(kc_workqueue_add_after(q, "c", 1), -ESHUTDOWN);
	ck_assert_int_eq(kc_workqueue_add_rate_limited(q, "c"), -ESHUTDOWN);
	kc_workqueue_stats(q, &s);
	ck_assert_uint_eq(s.delayed, 0);		/* timers dropped */
	fake_clock_advance(100);
	/* What was queued is still handed out, then -ESHUTDOWN. */
	take(q, "b");
	ck_assert_int_eq(kc_workqueue_done(q, "b"), 0);
	ck_assert_int_eq(kc_workqueue_done(q, "a"), 0);	/* requeued: dirty */
	take(q, "a");
	ck_assert_int_eq(kc_workqueue_done(q, "a"), 0);
	ck_assert_int_eq(kc_workqueue_try_get(q, key, sizeof(key)), -ESHUTDOWN);
	ck_assert_int_eq(kc_workqueue_get(q, key, sizeof(key)), -ESHUTDOWN);
	ck_assert_int_eq(kc_workqueue_shut_down_with_drain(q, 0), 0);
	kc_workqueue_stats(q, &s);
	ck_assert_uint_eq(s.keys, 0);
	kc_workqueue_free(q);
}
END_TEST

/* ---- threads, real clock --------------------------------------------------- */

struct getter {
	struct kc_workqueue	*q;
	char			 key[KC_WORKQUEUE_KEY_MAX];
	int			 r;
	uint64_t		 took_ms;
	atomic_bool		 started;
};

static void *
getter_main(void *arg)
{
	struct getter *g = arg;
	uint64_t start = kc_clock_now_ms();

	atomic_store(&g->started, true);
	g->r = kc_workqueue_get(g->q, g->key, sizeof(g->key));
	g->took_ms = kc_clock_now_ms() - start;
	return NULL;
}

static void
start_getter(struct getter *g, struct kc_workqueue *q, pthread_t *th)
{
	memset(g, 0, sizeof(*g));
	g->q = q;
	atomic_init(&g->started, false);
	ck_assert_int_eq(pthread_create(th, NULL, getter_main, g), 0);
	while (!atomic_load(&g->started))
		(void)kc_clock_sleep_ms(1);
	(void)kc_clock_sleep_ms(2);		/* let it block */
}

START_TEST(test_blocking_get)
{
	struct kc_workqueue *q = new_queue(NULL);
	struct getter g;
	pthread_t th;

	/* Woken by an add. */
	start_getter(&g, q, &th);
	ck_assert_int_eq(kc_workqueue_add(q, "x"), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(g.r, 0);
	ck_assert_str_eq(g.key, "x");
	ck_assert_int_eq(kc_workqueue_done(q, "x"), 0);

	/* A timer set while it sleeps fires with no other event. */
	start_getter(&g, q, &th);
	ck_assert_int_eq(kc_workqueue_add_after(q, "t", 15), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(g.r, 0);
	ck_assert_str_eq(g.key, "t");
	ck_assert_uint_ge(g.took_ms, 15);
	ck_assert_int_eq(kc_workqueue_done(q, "t"), 0);

	/* Woken by shutdown. */
	start_getter(&g, q, &th);
	kc_workqueue_shut_down(q);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(g.r, -ESHUTDOWN);
	kc_workqueue_free(q);
}
END_TEST

START_TEST(test_get_timeout)
{
	struct kc_workqueue *q = new_queue(NULL);
	char key[KC_WORKQUEUE_KEY_MAX];
	uint64_t start;

	/* Nothing comes: -ETIMEDOUT once the time is up, not before. */
	start = kc_clock_now_ms();
	ck_assert_int_eq(kc_workqueue_get_timeout(q, key, sizeof(key), 30), -ETIMEDOUT);
	ck_assert_uint_ge(kc_clock_now_ms() - start, 30);
	ck_assert_int_eq(kc_workqueue_get_timeout(q, key, sizeof(key), 0), -EAGAIN);
	ck_assert_int_eq(kc_workqueue_get_timeout(q, key, 8, 10), -EINVAL);

	/* A key ready at once, and a timer due before the time is up. */
	ck_assert_int_eq(kc_workqueue_add(q, "now"), 0);
	ck_assert_int_eq(kc_workqueue_get_timeout(q, key, sizeof(key), 10), 0);
	ck_assert_str_eq(key, "now");
	ck_assert_int_eq(kc_workqueue_done(q, "now"), 0);
	ck_assert_int_eq(kc_workqueue_add_after(q, "soon", 15), 0);
	start = kc_clock_now_ms();
	ck_assert_int_eq(kc_workqueue_get_timeout(q, key, sizeof(key), 5000), 0);
	ck_assert_str_eq(key, "soon");
	ck_assert_uint_ge(kc_clock_now_ms() - start, 15);
	ck_assert_uint_lt(kc_clock_now_ms() - start, 5000);
	ck_assert_int_eq(kc_workqueue_done(q, "soon"), 0);

	/* A timer due after it: the wait ends first, the timer stays. */
	ck_assert_int_eq(kc_workqueue_add_after(q, "later", 200), 0);
	ck_assert_int_eq(kc_workqueue_get_timeout(q, key, sizeof(key), 20), -ETIMEDOUT);
	ck_assert_int_eq(kc_workqueue_get(q, key, sizeof(key)), 0);
	ck_assert_str_eq(key, "later");
	ck_assert_int_eq(kc_workqueue_done(q, "later"), 0);

	kc_workqueue_shut_down(q);
	ck_assert_int_eq(kc_workqueue_get_timeout(q, key, sizeof(key), 1000), -ESHUTDOWN);
	kc_workqueue_free(q);
}
END_TEST

START_TEST(test_fake_clock_wake)
{
	struct kc_workqueue *q = new_queue(NULL);
	struct getter g;
	pthread_t th;

	/* A getter asleep on a far fake deadline looks again when woken. */
	fake_clock_install(0);
	ck_assert_int_eq(kc_workqueue_add_after(q, "far", 3600 * 1000), 0);
	start_getter(&g, q, &th);
	kc_workqueue_wake(q);			/* nothing due yet: sleeps on */
	fake_clock_advance(3600 * 1000);
	kc_workqueue_wake(q);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(g.r, 0);
	ck_assert_str_eq(g.key, "far");
	ck_assert_int_eq(kc_workqueue_done(q, "far"), 0);
	kc_workqueue_free(q);
}
END_TEST

struct doner {
	struct kc_workqueue	*q;
	const char		*key;
	unsigned		 after_ms;
};

static void *
doner_main(void *arg)
{
	struct doner *d = arg;

	(void)kc_clock_sleep_ms(d->after_ms);
	ck_assert_int_eq(kc_workqueue_done(d->q, d->key), 0);
	return NULL;
}

START_TEST(test_drain)
{
	struct kc_workqueue *q = new_queue(NULL);
	struct doner d = { q, "busy", 5 };
	pthread_t th;
	uint64_t start;

	ck_assert_int_eq(kc_workqueue_add(q, "busy"), 0);
	take(q, "busy");
	/* Not done within 3 ms: the drain times out. */
	ck_assert_int_eq(kc_workqueue_shut_down_with_drain(q, 3), -ETIMEDOUT);
	/* Done by another thread: the drain returns then. */
	start = kc_clock_now_ms();
	ck_assert_int_eq(pthread_create(&th, NULL, doner_main, &d), 0);
	ck_assert_int_eq(kc_workqueue_shut_down_with_drain(q, 10000), 0);
	ck_assert_uint_lt(kc_clock_now_ms() - start, 5000);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	kc_workqueue_free(q);
}
END_TEST

#define STRESS_KEYS	64
#define STRESS_WORKERS	8
#define STRESS_ADDS	4000

struct stress {
	struct kc_workqueue	*q;
	atomic_int		 busy[STRESS_KEYS];	/* workers holding the key */
	atomic_uint		 version[STRESS_KEYS];	/* bumped before each add */
	atomic_uint		 seen[STRESS_KEYS];	/* highest version processed */
	atomic_uint		 processed;
	atomic_uint		 overlaps;
};

static int
key_index(const char *key)
{
	int i = 0;

	for (const char *p = key + 2; *p != '\0'; p++)
		i = i * 10 + (*p - '0');
	return i;
}

static void *
stress_worker(void *arg)
{
	struct stress *s = arg;
	char key[KC_WORKQUEUE_KEY_MAX];

	while (kc_workqueue_get(s->q, key, sizeof(key)) == 0) {
		int i = key_index(key);
		unsigned v = atomic_load(&s->version[i]), old;

		if (atomic_fetch_add(&s->busy[i], 1) != 0)
			atomic_fetch_add(&s->overlaps, 1);
		sched_yield();
		old = atomic_load(&s->seen[i]);
		while (v > old && !atomic_compare_exchange_weak(&s->seen[i], &old, v))
			;
		atomic_fetch_add(&s->processed, 1);
		atomic_fetch_sub(&s->busy[i], 1);
		ck_assert_int_eq(kc_workqueue_done(s->q, key), 0);
	}
	return NULL;
}

static void *
stress_producer(void *arg)
{
	struct stress *s = arg;
	uint32_t x = (uint32_t)(uintptr_t)pthread_self() | 1;
	char key[16];

	for (int n = 0; n < STRESS_ADDS; n++) {
		int i;

		x = x * 1103515245u + 12345u;
		i = (int)((x >> 8) % STRESS_KEYS);
		(void)snprintf(key, sizeof(key), "k/%d", i);
		atomic_fetch_add(&s->version[i], 1);
		if ((x >> 4) % 7 == 0)
			ck_assert_int_eq(kc_workqueue_add_after(s->q, key, 1), 0);
		else
			ck_assert_int_eq(kc_workqueue_add(s->q, key), 0);
		if (n % 64 == 0)
			sched_yield();
	}
	return NULL;
}

START_TEST(test_stress)
{
	struct stress *s = calloc(1, sizeof(*s));
	pthread_t w[STRESS_WORKERS], p[2];
	struct kc_workqueue_stats st;
	uint64_t deadline;

	ck_assert_ptr_nonnull(s);
	s->q = new_queue(NULL);
	for (int i = 0; i < STRESS_WORKERS; i++)
		ck_assert_int_eq(pthread_create(&w[i], NULL, stress_worker, s), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&p[i], NULL, stress_producer, s), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_join(p[i], NULL), 0);
	/* Let the 1 ms timers fire, then drain. */
	deadline = kc_clock_now_ms() + 5000;
	for (;;) {
		kc_workqueue_stats(s->q, &st);
		if ((st.delayed == 0 && st.depth == 0 && st.processing == 0) ||
		    kc_clock_now_ms() > deadline)
			break;
		(void)kc_clock_sleep_ms(1);
	}
	ck_assert_int_eq(kc_workqueue_shut_down_with_drain(s->q, 5000), 0);
	for (int i = 0; i < STRESS_WORKERS; i++)
		ck_assert_int_eq(pthread_join(w[i], NULL), 0);
	ck_assert_uint_eq(atomic_load(&s->overlaps), 0);
	/* No add lost: every key was processed after its last add. */
	for (int i = 0; i < STRESS_KEYS; i++)
		ck_assert_uint_eq(atomic_load(&s->seen[i]), atomic_load(&s->version[i]));
	/* Deduplication: far fewer reconciles than adds. */
	ck_assert_uint_le(atomic_load(&s->processed), 2 * STRESS_ADDS);
	kc_workqueue_stats(s->q, &st);
	/* Timers for a key already waiting merge: those adds never happen. */
	ck_assert_uint_le(st.adds, 2 * STRESS_ADDS);
	ck_assert_uint_ge(st.adds, 2 * STRESS_ADDS * 5 / 7);
	ck_assert_uint_eq(st.keys, 0);
	kc_workqueue_free(s->q);
	free(s);
}
END_TEST

Suite *
workqueue_suite(void)
{
	Suite *s = suite_create("workqueue");
	TCase *tc = tcase_create("queue");
	TCase *th = tcase_create("threads");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_new_and_args);
	tcase_add_test(tc, test_oom);
	tcase_add_test(tc, test_dedup_fifo);
	tcase_add_test(tc, test_add_after_order);
	tcase_add_test(tc, test_many_timers);
	tcase_add_test(tc, test_backoff);
	tcase_add_test(tc, test_overall_bucket);
	tcase_add_test(tc, test_metrics);
	tcase_add_test(tc, test_shutdown);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(th, NULL, teardown);
	tcase_set_timeout(th, 60);
	tcase_add_test(th, test_blocking_get);
	tcase_add_test(th, test_get_timeout);
	tcase_add_test(th, test_fake_clock_wake);
	tcase_add_test(th, test_drain);
	tcase_add_test(th, test_stress);
	suite_add_tcase(s, th);
	return s;
}

/*
 * A work queue of string keys for controllers, with the contract of
 * client-go's util/workqueue: fair, stingy, delayed and rate limited.
 *
 * - Fair: keys come out in the order they went in.
 * - Stingy: a key is queued at most once however often it is added, and
 *   is never handed to two workers at once. A key added again while a
 *   worker holds it is marked dirty and queued again when the worker
 *   calls kc_workqueue_done(), so the change that came in during the
 *   reconcile is not lost.
 * - Delayed: kc_workqueue_add_after() queues a key once its time comes;
 *   for the same key the earlier deadline wins. The timers live in a heap
 *   that kc_workqueue_get() itself serves while it waits, so a deadline
 *   fires with no other event and no thread of the queue's own.
 * - Rate limited: kc_workqueue_add_rate_limited() delays a key by its own
 *   exponential backoff, base << failures up to a maximum (5 ms to 1000 s
 *   by default, client-go's default controller rate limiter), and
 *   optionally by an overall token bucket; kc_workqueue_forget() resets
 *   the key's count after a success.
 *
 * A worker thread:
 *
 *	char key[KC_WORKQUEUE_KEY_MAX];
 *
 *	while (kc_workqueue_get(q, key, sizeof(key)) == 0) {
 *		r = reconcile(key);
 *		if (r < 0)
 *			kc_workqueue_add_rate_limited(q, key);
 *		else {
 *			kc_workqueue_forget(q, key);
 *			if (r > 0)
 *				kc_workqueue_add_after(q, key, r);
 *		}
 *		kc_workqueue_done(q, key);
 *	}
 *
 * and informer handlers call kc_workqueue_add(q, "ns/name").
 *
 * Shutdown. kc_workqueue_shut_down() refuses new adds (-ESHUTDOWN) and
 * drops pending timers; kc_workqueue_get() keeps handing out what is
 * already queued and returns -ESHUTDOWN once the queue is empty, so every
 * worker ends. kc_workqueue_shut_down_with_drain() does the same and then
 * waits until every key handed out has been done()ed.
 *
 * Time is read from kc_clock_now_ms(). Waits are condition-variable waits
 * on the real monotonic clock, bounded by what is left on the kc clock,
 * so a test with a fake clock moves the clock and then calls
 * kc_workqueue_wake() to have the waiting getters look again.
 *
 * Memory: one allocation per distinct key, made by the first add of the
 * key and freed once the key is neither queued, processing, delayed nor
 * counting failures. Queueing, delaying and deduplicating allocate
 * nothing more (the timer heap grows with the key count, at key creation).
 *
 * Threads: every function is thread-safe, except kc_workqueue_free().
 */
#ifndef KC_WORKQUEUE_H
#define KC_WORKQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kc/macro.h>

/* Room for the longest key, "namespace/name", with its NUL. */
#define KC_WORKQUEUE_KEY_MAX	320

/* kc_workqueue_add_rate_limited() defaults: 5 ms doubling up to 1000 s. */
#define KC_WORKQUEUE_BACKOFF_BASE_MS	5
#define KC_WORKQUEUE_BACKOFF_MAX_MS	(1000u * 1000)

struct kc_ratelimit;
struct kc_workqueue;

enum kc_workqueue_metric {
	KC_WORKQUEUE_LATENCY = 1,	/* from add to get, ms */
	KC_WORKQUEUE_WORK,		/* from get to done, ms */
};

/*
 * Hears every latency and work-duration sample (for histograms). Called
 * without the queue's lock, on the thread of get() or done(); must not
 * block for long.
 */
typedef void	kc_workqueue_observe_fn(void *arg, enum kc_workqueue_metric m,
		    uint64_t ms);

struct kc_workqueue_opts {
	uint32_t	 backoff_base_ms;	/* 0: KC_WORKQUEUE_BACKOFF_BASE_MS */
	uint32_t	 backoff_max_ms;	/* 0: KC_WORKQUEUE_BACKOFF_MAX_MS */
	/*
	 * An overall bucket for add_rate_limited() (client-go's 10 qps,
	 * burst 100 one); the larger delay wins. NULL: none. The caller
	 * owns it and frees it after the queue.
	 */
	struct kc_ratelimit *limiter;
	kc_workqueue_observe_fn *observe;	/* NULL: none */
	void		*observe_arg;
};

/* A snapshot for metrics; the sums are in milliseconds. */
struct kc_workqueue_stats {
	uint64_t	 depth;		/* queued, waiting for a worker */
	uint64_t	 processing;	/* handed out, not done yet */
	uint64_t	 delayed;	/* waiting for their add_after() time */
	uint64_t	 keys;		/* distinct keys known to the queue */
	uint64_t	 adds;		/* add() calls, timers that fired included */
	uint64_t	 retries;	/* add_rate_limited() calls */
	uint64_t	 latency_count, latency_ms_sum;	/* add to get */
	uint64_t	 work_count, work_ms_sum;	/* get to done */
	uint64_t	 unfinished_work_ms;	/* sum over keys being processed */
	uint64_t	 longest_running_ms;	/* the oldest key being processed */
};

/*
 * A new, empty queue. 'opts' may be NULL for the defaults. -EINVAL when
 * backoff_max_ms is below backoff_base_ms; -ENOMEM. '*ret' is written
 * only on success.
 */
int	kc_workqueue_new(const struct kc_workqueue_opts *opts,
	    struct kc_workqueue **ret) _must_check_;

/*
 * Frees the queue and every key in it. NULL is fine; returns NULL. No
 * other thread may use the queue any more: shut it down and join the
 * workers first.
 */
struct kc_workqueue *kc_workqueue_free(struct kc_workqueue *);

KC_DEFINE_CLEANUP(struct kc_workqueue, kc_workqueue_free)

/*
 * Queues 'key' unless it is already queued; a key being processed is
 * queued again once done. 0 (also when deduplicated), -EINVAL for an
 * empty key or one of KC_WORKQUEUE_KEY_MAX bytes or more, -ESHUTDOWN
 * after shut_down, -ENOMEM (nothing changed). Thread-safe.
 */
int	kc_workqueue_add(struct kc_workqueue *, const char *key);

/*
 * Queues 'key' after 'delay_ms' (0: now, as add()). A key already waiting
 * keeps the earlier of the two deadlines. The key's queued or processing
 * state is not affected until the timer fires, when it is an add().
 * Errors as for add(). Thread-safe.
 */
int	kc_workqueue_add_after(struct kc_workqueue *, const char *key,
	    uint64_t delay_ms);

/*
 * add_after() with the key's backoff: base << (its failures so far),
 * capped, or the overall bucket's delay if longer; then counts one more
 * failure for the key. Errors as for add(). Thread-safe.
 */
int	kc_workqueue_add_rate_limited(struct kc_workqueue *, const char *key);

/* Resets the key's failure count (after a success). Thread-safe. */
void	kc_workqueue_forget(struct kc_workqueue *, const char *key);

/* The key's failure count: add_rate_limited() calls since forget(). */
unsigned kc_workqueue_num_requeues(struct kc_workqueue *, const char *key);

/*
 * Blocks until a key is ready, serving due timers while it waits, and
 * copies it into 'buf' (of 'size' bytes, at least KC_WORKQUEUE_KEY_MAX,
 * else -EINVAL). The key is then being processed: no other get() returns
 * it until kc_workqueue_done(). -ESHUTDOWN once the queue is shut down
 * and empty. Thread-safe; any number of workers.
 */
int	kc_workqueue_get(struct kc_workqueue *, char *buf, size_t size);

/*
 * get() that waits at most 'timeout_ms' (kc clock) for a key: -ETIMEDOUT
 * when none became ready by then. Due timers are served meanwhile as in
 * get(). For a worker that retires when idle (one that waits in get()
 * keeps the timers served). 0 is the same as try_get().
 */
int	kc_workqueue_get_timeout(struct kc_workqueue *, char *buf, size_t size,
	    uint64_t timeout_ms);

/* get() that never blocks: -EAGAIN when no key is ready now. */
int	kc_workqueue_try_get(struct kc_workqueue *, char *buf, size_t size);

/*
 * Ends the processing of 'key' (returned by get()): if it was added
 * meanwhile it is queued again. 0, or -ENOENT when the key is not being
 * processed (a bug in the caller; nothing changes). Thread-safe.
 */
int	kc_workqueue_done(struct kc_workqueue *, const char *key);

/*
 * Stops intake: later adds fail with -ESHUTDOWN, pending timers are
 * dropped, and get() returns -ESHUTDOWN once the queued keys are handed
 * out. Idempotent. Thread-safe.
 */
void	kc_workqueue_shut_down(struct kc_workqueue *);

/*
 * shut_down(), then waits up to 'timeout_ms' (kc clock) until every queued
 * key was handed out and every handed-out key done(). 0, or -ETIMEDOUT.
 * Do not call it from a worker. Thread-safe.
 */
int	kc_workqueue_shut_down_with_drain(struct kc_workqueue *, uint64_t timeout_ms);

/* Whether shut_down (or shut_down_with_drain) was called. Thread-safe. */
bool	kc_workqueue_shutting_down(struct kc_workqueue *);

/* The number of queued keys (not those processing or delayed). Thread-safe. */
size_t	kc_workqueue_len(struct kc_workqueue *);

/*
 * Wakes every thread waiting in get() or shut_down_with_drain() to look
 * at the clock again: for tests that move a fake clock. Thread-safe.
 */
void	kc_workqueue_wake(struct kc_workqueue *);

/* A snapshot of the counters. Thread-safe. */
void	kc_workqueue_stats(struct kc_workqueue *, struct kc_workqueue_stats *ret);

#endif

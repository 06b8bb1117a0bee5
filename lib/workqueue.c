/*
 * workqueue.c: deduplicating, rate-limited, delayed work queue.
 *
 * Every key the queue knows has one struct wq_item, found through a
 * seeded kc_hmap, and three flags that are client-go's three sets:
 *
 *	dirty       the key needs processing (its "dirty set"): set by add,
 *	            cleared when a worker takes the key
 *	queued      the key is on the ready list, waiting for a worker;
 *	            queued implies dirty and not processing
 *	processing  a worker holds the key (the "processing set")
 *
 * add() of a dirty key does nothing: that is the deduplication. add() of
 * a key that is processing but not dirty marks it dirty and does not
 * queue it, and done() queues a dirty key again: so a key is never with
 * two workers, and an add during processing is not lost. get() takes the
 * head of the ready list, clears dirty, sets processing.
 *
 * Delays are a kc/heap.h min-heap of items (array of pointers, the item
 * remembers its index), ordered by due time and then by a sequence
 * number, so equal deadlines fire in the order they were set. A key is in
 * the heap at most once (the earlier deadline wins), so the heap never
 * holds more than the number of keys, and its array grows when a key is
 * created, never when one is delayed. The timers have no thread: every
 * get() moves due items to the ready list before it looks, and a getter
 * with nothing to do sleeps only until the earliest deadline.
 *
 * The ready list's link is also the processing list's (an item is never
 * on both), ordered by get() time, so the longest-running key is its head.
 *
 * An item is freed as soon as nothing refers to it: not dirty, not
 * processing, not in the heap, and no failures counted for backoff.
 *
 * One mutex guards everything; 'cv' wakes getters (new key, new earliest
 * timer, shutdown), 'drained' wakes shut_down_with_drain(). Metric
 * callbacks run after the mutex is released.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/hash.h>
#include <kc/heap.h>
#include <kc/macro.h>
#include <kc/ratelimit.h>
#include <kc/workqueue.h>

#define WAIT_MAX_MS	1000	/* longest real sleep before looking at the clock again */

struct wq_item {
	TAILQ_ENTRY(wq_item)	 link;		/* ready list or processing list */
	struct kc_hmap_node	 h;		/* in items; h.key is key[] */
	uint64_t		 due_ms;	/* in the heap: when it fires */
	uint64_t		 seq;		/* in the heap: ties in order */
	uint64_t		 added_ms;	/* dirty: when it was added */
	uint64_t		 started_ms;	/* processing: when get() returned it */
	struct kc_heap_node	 delay;		/* on the delay heap */
	uint32_t		 failures;
	unsigned		 dirty:1, queued:1, processing:1;
	char			 key[];
};

TAILQ_HEAD(wq_list, wq_item);

struct kc_workqueue {
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	pthread_cond_t		 drained;
	struct kc_workqueue_opts opts;

	struct kc_hmap		 items;		/* every key, seeded */

	struct wq_list		 ready;
	struct wq_list		 processing;
	struct kc_heap		 delays;	/* items by due_ms, then seq */
	uint64_t		 seq;

	bool			 shutting_down;
	struct kc_workqueue_stats stats;	/* counters; gauges filled on read */
	uint64_t		 started_sum;	/* sum of started_ms while processing */
};

/* ---- keys --------------------------------------------------------------- */

static int
check_key(const char *key)
{
	if (key == NULL || key[0] == '\0' || strnlen(key, KC_WORKQUEUE_KEY_MAX) ==
	    KC_WORKQUEUE_KEY_MAX)
		return -EINVAL;
	return 0;
}

static struct wq_item *
find(struct kc_workqueue *q, const char *key)
{
	struct kc_hmap_node *n = kc_hmap_get(&q->items, key);

	return n != NULL ? (struct wq_item *)(void *)((char *)n -
	    offsetof(struct wq_item, h)) : NULL;
}

/* The key's item, created when absent; NULL only for -ENOMEM. */
static struct wq_item *
get_item(struct kc_workqueue *q, const char *key)
{
	size_t len;
	struct wq_item *it;

	if ((it = find(q, key)) != NULL)
		return it;
	if (kc_heap_reserve(&q->delays, q->items.n + 1) < 0)
		return NULL;
	len = strlen(key);
	if ((it = kc_keep_malloc(sizeof(*it) + len + 1)) == NULL)
		return NULL;
	memset(it, 0, sizeof(*it));
	memcpy(it->key, key, len + 1);
	it->h.key = it->key;
	kc_heap_node_init(&it->delay);
	if (kc_hmap_put(&q->items, &it->h) < 0) {
		kc_free(it);
		return NULL;
	}
	return it;
}

/* Frees the item when nothing refers to it any more. */
static void
release(struct kc_workqueue *q, struct wq_item *it)
{
	if (it->dirty || it->processing || kc_heap_node_queued(&it->delay) ||
	    it->failures != 0)
		return;
	kc_hmap_del(&q->items, &it->h);
	kc_free(it);
}

/* ---- the timer heap ------------------------------------------------------ */

static const struct wq_item *
delay_citem(const struct kc_heap_node *n)
{
	return (const struct wq_item *)(const void *)((const char *)n -
	    offsetof(struct wq_item, delay));
}

/* The item of a heap node, or NULL for none. */
static struct wq_item *
delay_item(struct kc_heap_node *n)
{
	return n != NULL ? (struct wq_item *)(void *)((char *)n -
	    offsetof(struct wq_item, delay)) : NULL;
}

static bool
earlier(const struct kc_heap_node *na, const struct kc_heap_node *nb)
{
	const struct wq_item *a = delay_citem(na), *b = delay_citem(nb);

	return a->due_ms < b->due_ms || (a->due_ms == b->due_ms && a->seq < b->seq);
}

/* ---- queueing ------------------------------------------------------------ */

static void
enqueue(struct kc_workqueue *q, struct wq_item *it)
{
	TAILQ_INSERT_TAIL(&q->ready, it, link);
	it->queued = 1;
	q->stats.depth++;
	(void)pthread_cond_signal(&q->cv);
}

/* add() under the lock, on an existing item. */
static void
add_item(struct kc_workqueue *q, struct wq_item *it, uint64_t now)
{
	q->stats.adds++;
	if (it->dirty)
		return;
	it->dirty = 1;
	it->added_ms = now;
	if (!it->processing)
		enqueue(q, it);
}

/* Moves the due timers to the ready list. */
static void
fire_timers(struct kc_workqueue *q, uint64_t now)
{
	struct wq_item *it;

	while ((it = delay_item(kc_heap_top(&q->delays))) != NULL && it->due_ms <= now) {
		kc_heap_remove(&q->delays, &it->delay);
		add_item(q, it, now);
	}
}

int
kc_workqueue_new(const struct kc_workqueue_opts *opts, struct kc_workqueue **ret)
{
	struct kc_workqueue *q;
	pthread_condattr_t ca;
	int n = 0;

	if ((q = kc_calloc(1, sizeof(*q))) == NULL)
		return -ENOMEM;
	if (opts != NULL)
		q->opts = *opts;
	if (q->opts.backoff_base_ms == 0)
		q->opts.backoff_base_ms = KC_WORKQUEUE_BACKOFF_BASE_MS;
	if (q->opts.backoff_max_ms == 0)
		q->opts.backoff_max_ms = KC_WORKQUEUE_BACKOFF_MAX_MS;
	if (q->opts.backoff_max_ms < q->opts.backoff_base_ms) {
		kc_free(q);
		return -EINVAL;
	}
	q->items = (struct kc_hmap)KC_HMAP_INIT;
	q->items.seed = (uint32_t)kc_random_u64();
	TAILQ_INIT(&q->ready);
	kc_heap_init(&q->delays, earlier);
	TAILQ_INIT(&q->processing);
	if (pthread_condattr_init(&ca) != 0)
		goto fail;
	(void)pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (pthread_mutex_init(&q->mu, NULL) != 0 ||
	    (++n, pthread_cond_init(&q->cv, &ca) != 0) ||
	    (++n, pthread_cond_init(&q->drained, &ca) != 0)) {
		(void)pthread_condattr_destroy(&ca);
		goto fail;
	}
	(void)pthread_condattr_destroy(&ca);
	*ret = q;
	return 0;
fail:
	if (n >= 2)
		(void)pthread_cond_destroy(&q->cv);
	if (n >= 1)
		(void)pthread_mutex_destroy(&q->mu);
	kc_free(q);
	return -ENOMEM;
}

struct kc_workqueue *
kc_workqueue_free(struct kc_workqueue *q)
{
	struct kc_hmap_node *n, *tmp;
	size_t i;

	if (q == NULL)
		return NULL;
	KC_HMAP_FOREACH_SAFE(n, tmp, i, &q->items)
		kc_free((char *)n - offsetof(struct wq_item, h));
	kc_hmap_free(&q->items);
	kc_heap_free(&q->delays);
	(void)pthread_cond_destroy(&q->cv);
	(void)pthread_cond_destroy(&q->drained);
	(void)pthread_mutex_destroy(&q->mu);
	return kc_free(q);
}

int
kc_workqueue_add(struct kc_workqueue *q, const char *key)
{
	struct wq_item *it;
	int r = 0;

	if (check_key(key) < 0)
		return -EINVAL;
	(void)pthread_mutex_lock(&q->mu);
	if (q->shutting_down)
		r = -ESHUTDOWN;
	else if ((it = get_item(q, key)) == NULL)
		r = -ENOMEM;
	else
		add_item(q, it, kc_clock_now_ms());
	(void)pthread_mutex_unlock(&q->mu);
	return r;
}

/* add_after() under the lock. */
static int
add_after_locked(struct kc_workqueue *q, struct wq_item *it, uint64_t delay_ms)
{
	uint64_t now = kc_clock_now_ms();
	uint64_t due = delay_ms > UINT64_MAX - now ? UINT64_MAX : now + delay_ms;

	if (delay_ms == 0) {
		add_item(q, it, now);
		return 0;
	}
	if (kc_heap_node_queued(&it->delay)) {
		if (due >= it->due_ms)
			return 0;
		it->due_ms = due;
		kc_heap_fix(&q->delays, &it->delay);
	} else {
		int r;

		it->due_ms = due;
		it->seq = q->seq++;
		/* Never allocates: get_item() made room for every key. */
		if ((r = kc_heap_push(&q->delays, &it->delay)) < 0)
			return r;
	}
	/* A new earliest deadline: sleeping getters must wake sooner. */
	if (kc_heap_top(&q->delays) == &it->delay)
		(void)pthread_cond_broadcast(&q->cv);
	return 0;
}

int
kc_workqueue_add_after(struct kc_workqueue *q, const char *key, uint64_t delay_ms)
{
	struct wq_item *it;
	int r;

	if (check_key(key) < 0)
		return -EINVAL;
	(void)pthread_mutex_lock(&q->mu);
	if (q->shutting_down)
		r = -ESHUTDOWN;
	else if ((it = get_item(q, key)) == NULL)
		r = -ENOMEM;
	else
		r = add_after_locked(q, it, delay_ms);
	(void)pthread_mutex_unlock(&q->mu);
	return r;
}

static uint64_t
backoff_ms(const struct kc_workqueue *q, uint32_t failures)
{
	uint64_t d = q->opts.backoff_base_ms;

	for (uint32_t i = 0; i < failures && d < q->opts.backoff_max_ms; i++)
		d *= 2;
	return KC_MIN(d, (uint64_t)q->opts.backoff_max_ms);
}

int
kc_workqueue_add_rate_limited(struct kc_workqueue *q, const char *key)
{
	struct wq_item *it;
	uint64_t delay;
	int r;

	if (check_key(key) < 0)
		return -EINVAL;
	(void)pthread_mutex_lock(&q->mu);
	if (q->shutting_down)
		r = -ESHUTDOWN;
	else if ((it = get_item(q, key)) == NULL)
		r = -ENOMEM;
	else {
		delay = backoff_ms(q, it->failures);
		if (it->failures < UINT32_MAX)
			it->failures++;
		q->stats.retries++;
		if (q->opts.limiter != NULL) {
			uint64_t overall = kc_ratelimit_reserve(q->opts.limiter);

			delay = KC_MAX(delay, overall);
		}
		r = add_after_locked(q, it, delay);
	}
	(void)pthread_mutex_unlock(&q->mu);
	return r;
}

void
kc_workqueue_forget(struct kc_workqueue *q, const char *key)
{
	struct wq_item *it;

	if (check_key(key) < 0)
		return;
	(void)pthread_mutex_lock(&q->mu);
	if ((it = find(q, key)) != NULL) {
		it->failures = 0;
		release(q, it);
	}
	(void)pthread_mutex_unlock(&q->mu);
}

unsigned
kc_workqueue_num_requeues(struct kc_workqueue *q, const char *key)
{
	struct wq_item *it;
	unsigned n = 0;

	if (check_key(key) < 0)
		return 0;
	(void)pthread_mutex_lock(&q->mu);
	if ((it = find(q, key)) != NULL)
		n = it->failures;
	(void)pthread_mutex_unlock(&q->mu);
	return n;
}

/* ---- getting --------------------------------------------------------------- */

/* Waits on 'cv' for at most 'ms' of real time. Under the lock. */
static void
timed_wait(struct kc_workqueue *q, pthread_cond_t *cv, uint64_t ms)
{
	struct timespec ts;

	ms = KC_MIN(ms, (uint64_t)WAIT_MAX_MS);
	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	(void)pthread_cond_timedwait(cv, &q->mu, &ts);
}

/* get() waits forever with this timeout, try_get() with 0. */
#define WAIT_FOREVER	UINT64_MAX

static int
get_common(struct kc_workqueue *q, char *buf, size_t size, uint64_t timeout_ms)
{
	struct wq_item *it, *first;
	uint64_t now, start, latency = 0;
	int r = 0;

	if (buf == NULL || size < KC_WORKQUEUE_KEY_MAX)
		return -EINVAL;
	(void)pthread_mutex_lock(&q->mu);
	start = kc_clock_now_ms();
	for (;;) {
		uint64_t left = WAIT_FOREVER;

		now = kc_clock_now_ms();
		if (!q->shutting_down)
			fire_timers(q, now);
		if (!TAILQ_EMPTY(&q->ready))
			break;
		if (q->shutting_down) {
			r = -ESHUTDOWN;
			goto out;
		}
		if (timeout_ms == 0) {
			r = -EAGAIN;
			goto out;
		}
		if (timeout_ms != WAIT_FOREVER) {
			if (now - start >= timeout_ms) {
				r = -ETIMEDOUT;
				goto out;
			}
			left = timeout_ms - (now - start);
		}
		if ((first = delay_item(kc_heap_top(&q->delays))) != NULL)
			left = KC_MIN(left, first->due_ms - now);
		if (left != WAIT_FOREVER)
			timed_wait(q, &q->cv, left);
		else
			(void)pthread_cond_wait(&q->cv, &q->mu);
	}
	it = TAILQ_FIRST(&q->ready);
	TAILQ_REMOVE(&q->ready, it, link);
	q->stats.depth--;
	it->queued = 0;
	it->dirty = 0;
	it->processing = 1;
	it->started_ms = now;
	TAILQ_INSERT_TAIL(&q->processing, it, link);
	q->stats.processing++;
	q->started_sum += now;
	latency = now >= it->added_ms ? now - it->added_ms : 0;
	q->stats.latency_count++;
	q->stats.latency_ms_sum += latency;
	memcpy(buf, it->key, strlen(it->key) + 1);
out:
	(void)pthread_mutex_unlock(&q->mu);
	if (r == 0 && q->opts.observe != NULL)
		q->opts.observe(q->opts.observe_arg, KC_WORKQUEUE_LATENCY, latency);
	return r;
}

int
kc_workqueue_get(struct kc_workqueue *q, char *buf, size_t size)
{
	return get_common(q, buf, size, WAIT_FOREVER);
}

int
kc_workqueue_get_timeout(struct kc_workqueue *q, char *buf, size_t size,
    uint64_t timeout_ms)
{
	return get_common(q, buf, size, timeout_ms == WAIT_FOREVER ? timeout_ms - 1 :
	    timeout_ms);
}

int
kc_workqueue_try_get(struct kc_workqueue *q, char *buf, size_t size)
{
	return get_common(q, buf, size, 0);
}

int
kc_workqueue_done(struct kc_workqueue *q, const char *key)
{
	struct wq_item *it;
	uint64_t now, work = 0;
	int r = 0;

	if (check_key(key) < 0)
		return -ENOENT;
	(void)pthread_mutex_lock(&q->mu);
	if ((it = find(q, key)) == NULL || !it->processing) {
		r = -ENOENT;
		goto out;
	}
	now = kc_clock_now_ms();
	TAILQ_REMOVE(&q->processing, it, link);
	it->processing = 0;
	q->stats.processing--;
	q->started_sum -= it->started_ms;
	work = now >= it->started_ms ? now - it->started_ms : 0;
	q->stats.work_count++;
	q->stats.work_ms_sum += work;
	if (it->dirty)
		enqueue(q, it);
	else
		release(q, it);
	if (q->stats.processing == 0 && TAILQ_EMPTY(&q->ready))
		(void)pthread_cond_broadcast(&q->drained);
out:
	(void)pthread_mutex_unlock(&q->mu);
	if (r == 0 && q->opts.observe != NULL)
		q->opts.observe(q->opts.observe_arg, KC_WORKQUEUE_WORK, work);
	return r;
}

/* ---- shutdown and state ---------------------------------------------------- */

/* Under the lock: marks the shutdown and drops the timers. */
static void
shut_down_locked(struct kc_workqueue *q)
{
	struct kc_heap_node *n;

	if (q->shutting_down)
		return;
	q->shutting_down = true;
	while ((n = kc_heap_pop(&q->delays)) != NULL)
		release(q, delay_item(n));
	(void)pthread_cond_broadcast(&q->cv);
	(void)pthread_cond_broadcast(&q->drained);
}

void
kc_workqueue_shut_down(struct kc_workqueue *q)
{
	(void)pthread_mutex_lock(&q->mu);
	shut_down_locked(q);
	(void)pthread_mutex_unlock(&q->mu);
}

int
kc_workqueue_shut_down_with_drain(struct kc_workqueue *q, uint64_t timeout_ms)
{
	uint64_t start, now;
	int r = 0;

	(void)pthread_mutex_lock(&q->mu);
	shut_down_locked(q);
	start = kc_clock_now_ms();
	while (q->stats.processing > 0 || !TAILQ_EMPTY(&q->ready)) {
		now = kc_clock_now_ms();
		if (now - start >= timeout_ms) {
			r = -ETIMEDOUT;
			break;
		}
		timed_wait(q, &q->drained, timeout_ms - (now - start));
	}
	(void)pthread_mutex_unlock(&q->mu);
	return r;
}

bool
kc_workqueue_shutting_down(struct kc_workqueue *q)
{
	bool s;

	(void)pthread_mutex_lock(&q->mu);
	s = q->shutting_down;
	(void)pthread_mutex_unlock(&q->mu);
	return s;
}

size_t
kc_workqueue_len(struct kc_workqueue *q)
{
	size_t n;

	(void)pthread_mutex_lock(&q->mu);
	n = q->stats.depth;
	(void)pthread_mutex_unlock(&q->mu);
	return n;
}

void
kc_workqueue_wake(struct kc_workqueue *q)
{
	(void)pthread_mutex_lock(&q->mu);
	(void)pthread_cond_broadcast(&q->cv);
	(void)pthread_cond_broadcast(&q->drained);
	(void)pthread_mutex_unlock(&q->mu);
}

void
kc_workqueue_stats(struct kc_workqueue *q, struct kc_workqueue_stats *ret)
{
	struct wq_item *oldest;
	uint64_t now;

	(void)pthread_mutex_lock(&q->mu);
	now = kc_clock_now_ms();
	*ret = q->stats;
	ret->keys = q->items.n;
	ret->delayed = q->delays.n;
	ret->unfinished_work_ms = q->stats.processing * now > q->started_sum ?
	    q->stats.processing * now - q->started_sum : 0;
	oldest = TAILQ_FIRST(&q->processing);
	ret->longest_running_ms = oldest != NULL && now > oldest->started_ms ?
	    now - oldest->started_ms : 0;
	(void)pthread_mutex_unlock(&q->mu);
}

/*
 * A token bucket shared by threads: client-side QPS and burst for a whole
 * process, as client-go's flowcontrol.NewTokenBucketRateLimiter.
 *
 * The bucket holds up to 'burst' tokens and refills at 'qps' tokens per
 * second. A request takes one token; when none is left it waits until one
 * has been refilled. Waiters are served in the order they reserved: each
 * reservation takes a token at once, even one that is not there yet (the
 * count goes negative), and the time it must wait is how long the refill
 * needs to pay the debt back. So N threads sharing one bucket get
 * 'burst' requests at once and then 'qps' per second between them all,
 * never more.
 *
 * Several clients share one bucket by pointing kc_client_opts.limiter at
 * it; the caller owns the bucket and frees it after every client that
 * uses it:
 *
 *	struct kc_ratelimit *rl;
 *	r = kc_ratelimit_new(20, 30, &rl);		(--kube-api-qps/burst)
 *	for (i = 0; i < nworkers; i++)
 *		r = kc_client_new(&(struct kc_client_opts){
 *			.rc = rc,
 *			.limiter = rl,
 *		}, &w[i].client, &st);
 *	...
 *	kc_ratelimit_stats(rl, &s);		s.wait_ms: time spent throttled
 *
 * Time comes from kc_clock_now_ms() and waits sleep through
 * kc_clock_sleep_ms() in short slices, so a fake clock drives the bucket
 * in tests and a waiting thread notices cancellation within a slice.
 *
 * Threads: every function is thread-safe except kc_ratelimit_free(),
 * which must run after every other use has returned.
 */
#ifndef KC_RATELIMIT_H
#define KC_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include <kc/macro.h>

/* Longest single sleep of a wait, so cancellation is seen this often. */
#define KC_RATELIMIT_SLICE_MS	20

/* Bounds: a higher rate is "no limit" anyway; a longer debt is clamped. */
#define KC_RATELIMIT_QPS_MAX		1e9
#define KC_RATELIMIT_WAIT_MAX_MS	(24u * 3600 * 1000)

struct kc_ratelimit;

/*
 * Asks whether the wait should give up. Called from the waiting thread
 * between sleeps; must be cheap and thread-safe (an atomic flag).
 */
typedef bool	kc_ratelimit_cancel_fn(void *arg);

struct kc_ratelimit_stats {
	double		 qps;
	unsigned	 burst;
	uint64_t	 acquired;	/* tokens handed out (waits that completed too) */
	uint64_t	 waited;	/* acquisitions that had to wait */
	uint64_t	 wait_ms;	/* total time reserved waiting, all threads */
	uint64_t	 cancelled;	/* waits given up; their tokens went back */
};

/*
 * A bucket of 'burst' tokens (0 means 1), full at the start, refilled at
 * 'qps' per second. -EINVAL unless 0 < qps <= KC_RATELIMIT_QPS_MAX; -ENOMEM.
 * '*ret' is written only on success.
 */
int	kc_ratelimit_new(double qps, unsigned burst, struct kc_ratelimit **ret)
	    _must_check_;

/* Frees the bucket. NULL is fine; returns NULL. No thread may still use it. */
struct kc_ratelimit *kc_ratelimit_free(struct kc_ratelimit *);

KC_DEFINE_CLEANUP(struct kc_ratelimit, kc_ratelimit_free)

/*
 * Takes one token, sleeping until it is due. 'cancelled' (NULL: never) is
 * asked between sleeps; when it says yes the wait ends with -ECANCELED and
 * the token is given back. 0 once the token is ours. Thread-safe.
 */
int	kc_ratelimit_wait(struct kc_ratelimit *, kc_ratelimit_cancel_fn *cancelled,
	    void *arg);

/*
 * Takes one token without sleeping and returns how many milliseconds the
 * caller must wait before using it (0: now). For callers that wait in
 * their own way, such as a work queue's delayed add. Thread-safe.
 */
uint64_t kc_ratelimit_reserve(struct kc_ratelimit *);

/* Takes a token only if one is there now: true when it did. Thread-safe. */
bool	kc_ratelimit_try(struct kc_ratelimit *);

/* A snapshot of the counters. Thread-safe. */
void	kc_ratelimit_stats(struct kc_ratelimit *, struct kc_ratelimit_stats *ret);

#endif

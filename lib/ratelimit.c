/*
 * ratelimit.c: a thread-safe token bucket with reservations.
 *
 * State: 'tokens' (a double, may go negative) as of 'last_ms'. Every
 * operation first refills, tokens += elapsed * qps, capped at the burst,
 * then acts under the mutex. A reservation subtracts one token; if that
 * leaves the count below zero, the debt divided by the rate is how long
 * the reserving thread must wait, and because later reservations see the
 * debt of earlier ones, they wait longer: the bucket serves reservations
 * in order without a queue of waiters. The sleep itself happens outside
 * the lock. A cancelled wait gives its token back (it never used it), so
 * an abandoned request does not slow down the others for long.
 *
 * The clock is kc_clock_now_ms(); a clock that goes backwards (a test
 * reinstalling a fake clock) only restarts the refill from the new time.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/ratelimit.h>

struct kc_ratelimit {
	pthread_mutex_t	 mu;
	double		 qps;
	double		 burst;
	double		 tokens;
	uint64_t	 last_ms;
	struct kc_ratelimit_stats stats;
};

int
kc_ratelimit_new(double qps, unsigned burst, struct kc_ratelimit **ret)
{
	struct kc_ratelimit *rl;

	if (!(qps > 0) || !(qps <= KC_RATELIMIT_QPS_MAX))	/* NaN fails both */
		return -EINVAL;
	if ((rl = kc_calloc(1, sizeof(*rl))) == NULL)
		return -ENOMEM;
	if (pthread_mutex_init(&rl->mu, NULL) != 0) {
		kc_free(rl);
		return -ENOMEM;
	}
	rl->qps = qps;
	rl->burst = burst != 0 ? burst : 1;
	rl->tokens = rl->burst;
	rl->last_ms = kc_clock_now_ms();
	rl->stats.qps = qps;
	rl->stats.burst = (unsigned)rl->burst;
	*ret = rl;
	return 0;
}

struct kc_ratelimit *
kc_ratelimit_free(struct kc_ratelimit *rl)
{
	if (rl == NULL)
		return NULL;
	(void)pthread_mutex_destroy(&rl->mu);
	return kc_free(rl);
}

/* Refills for the time since the last look. Under the mutex. */
static void
refill(struct kc_ratelimit *rl, uint64_t now)
{
	if (now > rl->last_ms) {
		rl->tokens += (double)(now - rl->last_ms) * rl->qps / 1000.0;
		if (rl->tokens > rl->burst)
			rl->tokens = rl->burst;
	}
	rl->last_ms = now;
}

/* Takes a token; returns the wait in ms. Under the mutex. */
static uint64_t
reserve_locked(struct kc_ratelimit *rl)
{
	double debt_ms;
	uint64_t wait;

	refill(rl, kc_clock_now_ms());
	rl->tokens -= 1.0;
	rl->stats.acquired++;
	if (rl->tokens >= 0)
		return 0;
	debt_ms = -rl->tokens * 1000.0 / rl->qps;
	if (debt_ms > (double)KC_RATELIMIT_WAIT_MAX_MS)
		debt_ms = (double)KC_RATELIMIT_WAIT_MAX_MS;
	wait = (uint64_t)debt_ms;
	if ((double)wait < debt_ms)
		wait++;			/* round up: never early */
	rl->stats.waited++;
	rl->stats.wait_ms += wait;
	return wait;
}

uint64_t
kc_ratelimit_reserve(struct kc_ratelimit *rl)
{
	uint64_t wait;

	(void)pthread_mutex_lock(&rl->mu);
	wait = reserve_locked(rl);
	(void)pthread_mutex_unlock(&rl->mu);
	return wait;
}

bool
kc_ratelimit_try(struct kc_ratelimit *rl)
{
	bool ok = false;

	(void)pthread_mutex_lock(&rl->mu);
	refill(rl, kc_clock_now_ms());
	if (rl->tokens >= 1.0) {
		rl->tokens -= 1.0;
		rl->stats.acquired++;
		ok = true;
	}
	(void)pthread_mutex_unlock(&rl->mu);
	return ok;
}

/* A wait given up: the token goes back and its unserved time is not counted. */
static void
unreserve(struct kc_ratelimit *rl, uint64_t unserved_ms)
{
	(void)pthread_mutex_lock(&rl->mu);
	refill(rl, kc_clock_now_ms());
	rl->tokens += 1.0;
	if (rl->tokens > rl->burst)
		rl->tokens = rl->burst;
	rl->stats.acquired--;
	rl->stats.cancelled++;
	rl->stats.wait_ms -= KC_MIN(unserved_ms, rl->stats.wait_ms);
	(void)pthread_mutex_unlock(&rl->mu);
}

int
kc_ratelimit_wait(struct kc_ratelimit *rl, kc_ratelimit_cancel_fn *cancelled, void *arg)
{
	uint64_t wait, start, deadline, now;

	if (cancelled != NULL && cancelled(arg))
		return -ECANCELED;
	if ((wait = kc_ratelimit_reserve(rl)) == 0)
		return 0;
	start = kc_clock_now_ms();
	deadline = start + wait;
	while ((now = kc_clock_now_ms()) < deadline) {
		if (cancelled != NULL && cancelled(arg)) {
			unreserve(rl, deadline - now);
			return -ECANCELED;
		}
		(void)kc_clock_sleep_ms(KC_MIN(deadline - now,
		    (uint64_t)KC_RATELIMIT_SLICE_MS));
	}
	return 0;
}

void
kc_ratelimit_stats(struct kc_ratelimit *rl, struct kc_ratelimit_stats *ret)
{
	(void)pthread_mutex_lock(&rl->mu);
	*ret = rl->stats;
	(void)pthread_mutex_unlock(&rl->mu);
}

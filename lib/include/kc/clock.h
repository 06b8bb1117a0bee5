/*
 * The clock hook. Backoff, rate limits, requeue delays and lease expiry
 * read kc_clock_now_ms(), and waits go through kc_clock_sleep_ms(), so a
 * test can install a fake clock (tests/fakes/fake_clock.c) that advances
 * instantly and never sleeps.
 */
#ifndef KC_CLOCK_H
#define KC_CLOCK_H

#include <stdint.h>
#include <time.h>

struct kc_clock {
	uint64_t (*now_ms)(void *arg);		/* monotonic milliseconds */
	time_t	 (*wall)(void *arg);		/* seconds since the epoch */
	/* Microseconds since the epoch; NULL: wall() seconds, whole. */
	int64_t	 (*wall_us)(void *arg);
	/* Waits 'ms'; returns early, with -EINTR, only if the hook chooses. */
	int	 (*sleep_ms)(void *arg, uint64_t ms);
	void	*arg;
};

/*
 * Installs 'c' (NULL restores the system clock). Call once at startup, or
 * between tests; not thread-safe.
 */
void		kc_clock_set(const struct kc_clock *c);

/*
 * The installed clock: monotonic milliseconds (for intervals, never for
 * dates), wall-clock seconds since the epoch, and a sleep that returns 0
 * once 'ms' passed, or -EINTR early if the hook chooses. Thread-safe.
 */
uint64_t	kc_clock_now_ms(void);
time_t		kc_clock_wall(void);
/*
 * The wall clock in microseconds since the epoch, one reading: format a
 * sub-second timestamp (metav1.MicroTime) from it, never from wall()
 * seconds and monotonic milliseconds glued together, which do not agree.
 */
int64_t		kc_clock_wall_us(void);
int		kc_clock_sleep_ms(uint64_t ms);

/*
 * A random 64-bit value for jitter, from a per-thread generator seeded
 * from the OS. Not for secrets.
 */
uint64_t	kc_random_u64(void);

#endif

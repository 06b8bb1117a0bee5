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

#include <kc/macro.h>

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
 * A clock for tests of wall-clock steps (an NTP step, a VM resumed): the
 * system clock, whose wall (wall() and wall_us()) is moved by an offset
 * in seconds read from a file, while the monotonic clock and the sleeps
 * are the system's, untouched. The file holds a decimal number of
 * seconds, maybe negative ("3600", "-3600\n"); a missing file means 0.
 * It is read when the clock is made, then again at most every
 * 'reread_ms' (monotonic) by whichever thread reads the wall clock. When
 * its content changes, 'report' (may be NULL) is called once, by that
 * thread: with err 0 and the new offset, or, for content that is not a
 * number of seconds within KC_CLOCK_OFFSET_MAX_S or a file that cannot be
 * read, with the negative error and the offset, which stays as it was.
 * 'report' may read the clock (the file is not read again meanwhile).
 * lib/ itself never logs; the program's 'report' may.
 */
#define KC_CLOCK_OFFSET_MAX_S		(100LL * 366 * 86400)	/* a century */
#define KC_CLOCK_OFFSET_REREAD_MS	100

typedef void	kc_clock_offset_fn(void *arg, const char *path, int err, int64_t offset_s);

struct kc_clock_offset_opts {
	const char		*path;		/* required */
	uint64_t		 reread_ms;	/* 0: KC_CLOCK_OFFSET_REREAD_MS */
	kc_clock_offset_fn	*report;
	void			*arg;
};

struct kc_clock_offset;

/*
 * Makes the clock and reads the file once (a file that cannot be read is
 * reported and counts as offset 0). 0, -EINVAL without a path, or
 * -ENOMEM. Install it with kc_clock_set(kc_clock_offset_clock(o)) and
 * free it only after kc_clock_set(NULL). Its functions are thread-safe.
 */
int		kc_clock_offset_new(const struct kc_clock_offset_opts *,
		    struct kc_clock_offset **ret) _must_check_;
const struct kc_clock *kc_clock_offset_clock(struct kc_clock_offset *);
/* The offset now, in seconds (the file is read first if it is due). */
int64_t		kc_clock_offset_s(struct kc_clock_offset *);
struct kc_clock_offset *kc_clock_offset_free(struct kc_clock_offset *);

/*
 * A random 64-bit value for jitter, from a per-thread generator seeded
 * from the OS. Not for secrets.
 */
uint64_t	kc_random_u64(void);

#endif

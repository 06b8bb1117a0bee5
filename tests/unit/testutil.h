/*
 * Helpers shared by the unit suites, and the fakes' interfaces.
 */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include <check.h>

/* Every suite's constructor, from suites.h. */
#define SUITE(n)	Suite *n##_suite(void);
#include "suites.h"
#undef SUITE

/*
 * Reads tests/fixtures/<name> into a NUL-terminated allocation (free with
 * kc_free()); fails the test when it cannot.
 */
char	*tu_fixture(const char *name, size_t *ret_len);

/* The absolute path of tests/fixtures/<name>, in a static buffer. */
const char *tu_fixture_path(const char *name);

/*
 * A fresh temporary directory (mkdtemp under $TMPDIR or /tmp), removed
 * with everything in it by tu_tmpdir_remove().
 */
char	*tu_tmpdir(void);
void	 tu_tmpdir_remove(char *dir);

/* Writes 'text' to dir/name and returns the path (free with kc_free()). */
char	*tu_write(const char *dir, const char *name, const char *text);

/*
 * A number in [0, n) from a xorshift64 sequence with a fixed seed, the
 * same in every run: fuzz loops that fail fail again. Not thread-safe.
 */
unsigned tu_rand(unsigned n);

/* tests/fakes/fail_alloc.c: kc_malloc() fails after 'n' more successes. */
void	 fail_alloc_after(size_t n);	/* SIZE_MAX: never fail (uninstall) */
size_t	 fail_alloc_count(void);	/* allocations since the last call */
/*
 * The same file: an allocator that counts the bytes its blocks hold (what
 * a structure costs). Free every block made meanwhile before the stop.
 */
void	 count_alloc_start(void);
size_t	 count_alloc_held(void);		/* bytes held now */
void	 count_alloc_stop(void);

/*
 * tests/fakes/fake_clock.c: a clock that starts at 'start_ms', moves only
 * when told (or when code "sleeps" on it, which advances it at once), and
 * counts sleeps.
 */
void	 fake_clock_install(uint64_t start_ms);
void	 fake_clock_uninstall(void);
void	 fake_clock_advance(uint64_t ms);
/*
 * Puts the wall clock 'ms' ahead of the monotonic one, so its seconds no
 * longer turn over together with the monotonic thousands, as on a real
 * machine. Reset by fake_clock_install().
 */
void	 fake_clock_skew_wall(uint64_t ms);
/*
 * Steps the wall clock by 'ms' (negative: back), as an NTP step or a VM
 * resume does; the monotonic clock does not move.
 */
void	 fake_clock_step_wall(int64_t ms);
uint64_t fake_clock_slept_ms(void);	/* total slept since install */
unsigned fake_clock_sleeps(void);	/* number of sleeps since install */

#endif

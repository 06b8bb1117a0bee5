/*
 * fake_clock.c: a clock under the test's control. Sleeping on it moves it
 * forward at once, so backoff and rate-limit code runs without waiting.
 */
#include <stdint.h>
#include <time.h>

#include <kc/clock.h>

#include "../unit/testutil.h"

static uint64_t	now;
static int64_t	wall_skew;	/* wall-clock ms ahead of the monotonic one */
static uint64_t	slept;
static unsigned	sleeps;

static uint64_t
fc_now_ms(void *arg)
{
	(void)arg;
	return now;
}

static time_t
fc_wall(void *arg)
{
	(void)arg;
	return (time_t)((INT64_C(1700000000000) + (int64_t)now + wall_skew) / 1000);
}

static int64_t
fc_wall_us(void *arg)
{
	(void)arg;
	return (INT64_C(1700000000000) + (int64_t)now + wall_skew) * 1000;
}

static int
fc_sleep_ms(void *arg, uint64_t ms)
{
	(void)arg;
	now += ms;
	slept += ms;
	sleeps++;
	return 0;
}

static const struct kc_clock fake_clock = {
	.now_ms = fc_now_ms,
	.wall = fc_wall,
	.wall_us = fc_wall_us,
	.sleep_ms = fc_sleep_ms,
};

void
fake_clock_install(uint64_t start_ms)
{
	now = start_ms;
	wall_skew = 0;
	slept = 0;
	sleeps = 0;
	kc_clock_set(&fake_clock);
}

void
fake_clock_uninstall(void)
{
	kc_clock_set(NULL);
}

void
fake_clock_skew_wall(uint64_t ms)
{
	wall_skew = (int64_t)ms;
}

void
fake_clock_step_wall(int64_t ms)
{
	wall_skew += ms;
}

void
fake_clock_advance(uint64_t ms)
{
	now += ms;
}

uint64_t
fake_clock_slept_ms(void)
{
	return slept;
}

unsigned
fake_clock_sleeps(void)
{
	return sleeps;
}

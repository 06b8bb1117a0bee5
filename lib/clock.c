/*
 * clock.c: the replaceable clock and a per-thread jitter source.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>

#include <kc/clock.h>

static uint64_t
sys_now_ms(void *arg)
{
	struct timespec ts;

	(void)arg;
	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static time_t
sys_wall(void *arg)
{
	(void)arg;
	return time(NULL);
}

static int64_t
sys_wall_us(void *arg)
{
	struct timespec ts;

	(void)arg;
	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int
sys_sleep_ms(void *arg, uint64_t ms)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ms / 1000),
		.tv_nsec = (long)(ms % 1000) * 1000000,
	};

	(void)arg;
	while (nanosleep(&ts, &ts) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

static const struct kc_clock sys_clock = {
	.now_ms = sys_now_ms,
	.wall = sys_wall,
	.wall_us = sys_wall_us,
	.sleep_ms = sys_sleep_ms,
};

static const struct kc_clock *clock_hook = &sys_clock;

void
kc_clock_set(const struct kc_clock *c)
{
	clock_hook = c != NULL ? c : &sys_clock;
}

uint64_t
kc_clock_now_ms(void)
{
	return clock_hook->now_ms(clock_hook->arg);
}

time_t
kc_clock_wall(void)
{
	return clock_hook->wall(clock_hook->arg);
}

int64_t
kc_clock_wall_us(void)
{
	if (clock_hook->wall_us != NULL)
		return clock_hook->wall_us(clock_hook->arg);
	return (int64_t)clock_hook->wall(clock_hook->arg) * 1000000;
}

int
kc_clock_sleep_ms(uint64_t ms)
{
	return clock_hook->sleep_ms(clock_hook->arg, ms);
}

uint64_t
kc_random_u64(void)
{
	static _Thread_local uint64_t state;

	if (state == 0) {
		if (getrandom(&state, sizeof(state), GRND_NONBLOCK) != sizeof(state))
			state = sys_now_ms(NULL) ^ (uint64_t)(uintptr_t)&state;
		state |= 1;
	}
	/* xorshift64* */
	state ^= state >> 12;
	state ^= state << 25;
	state ^= state >> 27;
	return state * 0x2545F4914F6CDD1DULL;
}

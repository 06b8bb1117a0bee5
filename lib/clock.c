/*
 * clock.c: the replaceable clock, a clock whose wall a test steps
 * (kc_clock_offset_*), and a per-thread jitter source.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/hash.h>
#include <kc/str.h>

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

/* ---- the offset clock (tests of wall-clock steps) ---------------------------- */

#define OFFSET_FILE_MAX		64	/* "-3153600000\n" and room to spare */

struct kc_clock_offset {
	struct kc_clock		 clock;
	pthread_mutex_t		 mu;		/* one reader of the file at a time */
	_Atomic int64_t		 offset_s;
	_Atomic uint64_t	 due_ms;	/* monotonic: when to read it again */
	uint64_t		 seen;		/* hash of what was read last (mu) */
	uint64_t		 reread_ms;
	kc_clock_offset_fn	*report;
	void			*arg;
	char			 path[];
};

/* The offset 'text' gives: 0 or -EINVAL (out of range included). */
static int
offset_parse(const char *text, int64_t *ret)
{
	struct kc_str t = kc_str_trim(kc_str_from(text));
	int64_t v;

	if (kc_str_to_i64(t, &v) < 0 || v > KC_CLOCK_OFFSET_MAX_S || v < -KC_CLOCK_OFFSET_MAX_S)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* What a read gave: its outcome and the text (NULL: no file). */
static uint64_t
content_hash(int r, const char *text)
{
	uint64_t h = kc_fnv1a64(KC_FNV1A64_INIT, &r, sizeof(r));

	return text != NULL ? kc_fnv1a64_str(h, text) : h;
}

/* Reads the file (lock held) and reports a change of its content: how the read went. */
static int
offset_read(struct kc_clock_offset *o)
{
	_cleanup_(kc_freep) char *text = NULL;
	int64_t v = 0;
	uint64_t h;
	int r;

	r = kc_read_file(o->path, OFFSET_FILE_MAX, &text, NULL);
	if (r == -ENOMEM)
		return r;	/* no news: read again next time */
	if (r == -ENOENT)
		r = 0;		/* no file: no offset */
	else if (r == 0)
		r = offset_parse(text, &v);
	if ((h = content_hash(r, text)) == o->seen)
		return r;
	o->seen = h;
	if (r == 0)
		atomic_store(&o->offset_s, v);
	if (o->report != NULL)
		o->report(o->arg, o->path, r, atomic_load(&o->offset_s));
	return r;
}

/* Reads the file again when it is due; a thread that finds it being read goes on. */
static void
offset_refresh(struct kc_clock_offset *o)
{
	uint64_t now = sys_now_ms(NULL);

	if (now < atomic_load(&o->due_ms) || pthread_mutex_trylock(&o->mu) != 0)
		return;
	if (now >= atomic_load(&o->due_ms)) {
		(void)offset_read(o);
		atomic_store(&o->due_ms, now + o->reread_ms);
	}
	pthread_mutex_unlock(&o->mu);
}

static time_t
offset_wall(void *arg)
{
	struct kc_clock_offset *o = arg;

	offset_refresh(o);
	return sys_wall(NULL) + (time_t)atomic_load(&o->offset_s);
}

static int64_t
offset_wall_us(void *arg)
{
	struct kc_clock_offset *o = arg;

	offset_refresh(o);
	return sys_wall_us(NULL) + atomic_load(&o->offset_s) * 1000000;
}

int
kc_clock_offset_new(const struct kc_clock_offset_opts *opts, struct kc_clock_offset **ret)
{
	struct kc_clock_offset *o;
	size_t len;
	int r;

	if (opts->path == NULL || *opts->path == '\0')
		return -EINVAL;
	len = strlen(opts->path);
	if ((o = kc_calloc(1, sizeof(*o) + len + 1)) == NULL)
		return -ENOMEM;
	if (pthread_mutex_init(&o->mu, NULL) != 0) {
		kc_free(o);
		return -ENOMEM;
	}
	memcpy(o->path, opts->path, len + 1);
	o->clock = (struct kc_clock){
		.now_ms = sys_now_ms,
		.wall = offset_wall,
		.wall_us = offset_wall_us,
		.sleep_ms = sys_sleep_ms,
		.arg = o,
	};
	o->reread_ms = opts->reread_ms != 0 ? opts->reread_ms : KC_CLOCK_OFFSET_REREAD_MS;
	o->report = opts->report;
	o->arg = opts->arg;
	o->seen = content_hash(0, NULL);	/* as if no file: only news is reported */
	pthread_mutex_lock(&o->mu);
	r = offset_read(o);
	atomic_store(&o->due_ms, sys_now_ms(NULL) + o->reread_ms);
	pthread_mutex_unlock(&o->mu);
	if (r == -ENOMEM) {
		kc_clock_offset_free(o);
		return r;
	}
	*ret = o;
	return 0;
}

const struct kc_clock *
kc_clock_offset_clock(struct kc_clock_offset *o)
{
	return &o->clock;
}

int64_t
kc_clock_offset_s(struct kc_clock_offset *o)
{
	offset_refresh(o);
	return atomic_load(&o->offset_s);
}

struct kc_clock_offset *
kc_clock_offset_free(struct kc_clock_offset *o)
{
	if (o == NULL)
		return NULL;
	pthread_mutex_destroy(&o->mu);
	return kc_free(o);
}

/* ---- jitter ------------------------------------------------------------------ */

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

/*
 * test_clock.c: the clock hook and the offset clock (kc_clock_offset_*),
 * which steps the wall clock as a file says and leaves the monotonic one
 * alone: the offset applies at once, a change of the file within the
 * re-read period, bad content keeps the offset and is reported once, a
 * missing file is no offset, and readers on several threads agree.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/str.h>

#include "testutil.h"

struct reports {
	unsigned	 n;
	int		 err;
	int64_t		 offset_s;
	char		 path[256];
};

static char	 dir[64];
static char	 path[128];

static void
record(void *arg, const char *p, int err, int64_t offset_s)
{
	struct reports *r = arg;

	r->n++;
	r->err = err;
	r->offset_s = offset_s;
	kc_strlcpy(r->path, p, sizeof(r->path));
}

static void
put(const char *text)
{
	ck_assert_int_eq(kc_write_file_atomic(path, text, strlen(text), 0600), 0);
}

static void
setup(void)
{
	kc_strlcpy(dir, "/tmp/kc-clock-XXXXXX", sizeof(dir));
	ck_assert_ptr_nonnull(mkdtemp(dir));
	(void)snprintf(path, sizeof(path), "%s/offset", dir);
}

static void
teardown(void)
{
	kc_clock_set(NULL);
	(void)unlink(path);
	(void)rmdir(dir);
}

static int64_t
sys_wall_s(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec;
}

static uint64_t
sys_mono_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Waits (at most 2 s) until the offset reads 'want'. */
static int64_t
until_offset(struct kc_clock_offset *o, int64_t want)
{
	struct timespec ts = { .tv_nsec = 2 * 1000 * 1000 };
	int64_t v = 0;

	for (int i = 0; i < 1000 && (v = kc_clock_offset_s(o)) != want; i++)
		(void)nanosleep(&ts, NULL);
	return v;
}

START_TEST(offset_applies_to_the_wall_clock_only)
{
	struct kc_clock_offset *o = NULL;
	struct reports rep = { 0 };
	int64_t d;
	uint64_t m0, m1;

	put("3600\n");
	ck_assert_int_eq(kc_clock_offset_new(&(struct kc_clock_offset_opts){
		.path = path, .report = record, .arg = &rep,
	}, &o), 0);
	ck_assert_uint_eq(rep.n, 1);
	ck_assert_int_eq(rep.err, 0);
	ck_assert_int_eq(rep.offset_s, 3600);
	ck_assert_str_eq(rep.path, path);
	kc_clock_set(kc_clock_offset_clock(o));
	d = (int64_t)kc_clock_wall() - sys_wall_s();
	ck_assert(d >= 3599 && d <= 3601);
	d = kc_clock_wall_us() / 1000000 - sys_wall_s();
	ck_assert(d >= 3599 && d <= 3601);
	m0 = sys_mono_ms();
	m1 = kc_clock_now_ms();
	ck_assert(m1 >= m0 && m1 - m0 < 1000);
	ck_assert_int_eq(kc_clock_sleep_ms(1), 0);
	/* Back an hour: within the re-read period, and reported once. */
	put("-3600");
	ck_assert_int_eq(until_offset(o, -3600), -3600);
	d = (int64_t)kc_clock_wall() - sys_wall_s();
	ck_assert(d >= -3601 && d <= -3599);
	ck_assert_uint_eq(rep.n, 2);
	ck_assert_int_eq(rep.offset_s, -3600);
	m1 = kc_clock_now_ms();
	ck_assert(m1 >= m0 && m1 - m0 < 5000);
	kc_clock_set(NULL);
	o = kc_clock_offset_free(o);
	ck_assert_ptr_null(o);
}
END_TEST

START_TEST(bad_content_keeps_the_offset)
{
	static const char *const bad[] = {
		"abc", "12x", "1.5", "", "99999999999", "-99999999999", "0x10",
	};
	struct kc_clock_offset *o = NULL;
	struct reports rep = { 0 };
	struct timespec ts = { .tv_nsec = 5 * 1000 * 1000 };

	put(" 120 \n");
	ck_assert_int_eq(kc_clock_offset_new(&(struct kc_clock_offset_opts){
		.path = path, .reread_ms = 1, .report = record, .arg = &rep,
	}, &o), 0);
	ck_assert_int_eq(kc_clock_offset_s(o), 120);
	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
		unsigned n = rep.n;

		put(bad[i]);
		for (int k = 0; k < 400 && rep.n == n; k++) {
			(void)nanosleep(&ts, NULL);
			ck_assert_int_eq(kc_clock_offset_s(o), 120);
		}
		ck_assert_msg(rep.n == n + 1, "\"%s\" not reported", bad[i]);
		ck_assert_int_eq(rep.err, -EINVAL);
		ck_assert_int_eq(rep.offset_s, 120);
		/* The same content again: no new report. */
		(void)nanosleep(&ts, NULL);
		ck_assert_int_eq(kc_clock_offset_s(o), 120);
		ck_assert_uint_eq(rep.n, n + 1);
	}
	/* A missing file: no offset. */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(until_offset(o, 0), 0);
	ck_assert_int_eq(rep.err, 0);
	o = kc_clock_offset_free(o);
}
END_TEST

START_TEST(missing_file_and_bad_options)
{
	struct kc_clock_offset *o = (struct kc_clock_offset *)0x1;
	struct reports rep = { 0 };

	ck_assert_int_eq(kc_clock_offset_new(&(struct kc_clock_offset_opts){ 0 }, &o),
	    -EINVAL);
	ck_assert_int_eq(kc_clock_offset_new(&(struct kc_clock_offset_opts){ .path = "" },
	    &o), -EINVAL);
	ck_assert_ptr_eq(o, (struct kc_clock_offset *)0x1);
	o = NULL;
	ck_assert_int_eq(kc_clock_offset_new(&(struct kc_clock_offset_opts){
		.path = path, .report = record, .arg = &rep,
	}, &o), 0);
	ck_assert_int_eq(kc_clock_offset_s(o), 0);
	ck_assert_uint_eq(rep.n, 0);	/* no file, no news */
	ck_assert_ptr_null(kc_clock_offset_free(o));
	ck_assert_ptr_null(kc_clock_offset_free(NULL));
}
END_TEST

START_TEST(out_of_memory)
{
	struct kc_clock_offset *o = NULL;
	int r;

	put("-60");
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = kc_clock_offset_new(&(struct kc_clock_offset_opts){ .path = path }, &o);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(o);
	}
	ck_assert_int_eq(kc_clock_offset_s(o), -60);
	o = kc_clock_offset_free(o);
}
END_TEST

struct reader {
	pthread_t	 tid;
	atomic_bool	*stop;
	unsigned	 odd;	/* readings neither of the two offsets */
};

static void *
reader_main(void *arg)
{
	struct reader *rd = arg;

	while (!atomic_load(rd->stop)) {
		int64_t d = (int64_t)kc_clock_wall() - sys_wall_s();

		if (!(d >= 599 && d <= 601) && !(d >= -601 && d <= -599))
			rd->odd++;
	}
	return NULL;
}

/* Four threads read while the file flips between +600 and -600. */
START_TEST(readers_on_threads)
{
	struct kc_clock_offset *o = NULL;
	struct reader rd[4];
	atomic_bool stop = false;

	put("600");
	ck_assert_int_eq(kc_clock_offset_new(&(struct kc_clock_offset_opts){
		.path = path, .reread_ms = 1,
	}, &o), 0);
	kc_clock_set(kc_clock_offset_clock(o));
	for (size_t i = 0; i < KC_ARRAY_SIZE(rd); i++) {
		rd[i] = (struct reader){ .stop = &stop };
		ck_assert_int_eq(pthread_create(&rd[i].tid, NULL, reader_main, &rd[i]), 0);
	}
	for (int i = 0; i < 20; i++) {
		put(i % 2 == 0 ? "-600" : "600");
		ck_assert_int_eq(until_offset(o, i % 2 == 0 ? -600 : 600), i % 2 == 0 ?
		    -600 : 600);
	}
	atomic_store(&stop, true);
	for (size_t i = 0; i < KC_ARRAY_SIZE(rd); i++) {
		ck_assert_int_eq(pthread_join(rd[i].tid, NULL), 0);
		ck_assert_uint_eq(rd[i].odd, 0);
	}
	kc_clock_set(NULL);
	o = kc_clock_offset_free(o);
}
END_TEST

Suite *
clock_suite(void)
{
	Suite *s = suite_create("clock");
	TCase *tc = tcase_create("offset");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, offset_applies_to_the_wall_clock_only);
	tcase_add_test(tc, bad_content_keeps_the_offset);
	tcase_add_test(tc, missing_file_and_bad_options);
	tcase_add_test(tc, out_of_memory);
	tcase_add_test(tc, readers_on_threads);
	suite_add_tcase(s, tc);
	return s;
}

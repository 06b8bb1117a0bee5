/*
 * test_str.c: slices, number parsing, strlcpy, files and time.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/macro.h>
#include <kc/str.h>
#include <kc/validation.h>

#include "testutil.h"

START_TEST(slices)
{
	struct kc_str s = kc_str_from("  key=value,rest  "), head;
	char *d;

	s = kc_str_trim(s);
	ck_assert(kc_str_eq_cstr(s, "key=value,rest"));
	ck_assert(kc_str_has_prefix(s, "key"));
	ck_assert(!kc_str_has_prefix(s, "value"));
	ck_assert(kc_str_cut(&s, '=', &head));
	ck_assert(kc_str_eq(head, KC_STR("key")));
	ck_assert(kc_str_cut(&s, ',', &head));
	ck_assert(kc_str_eq_cstr(head, "value"));
	ck_assert(!kc_str_cut(&s, ',', &head));
	ck_assert(kc_str_eq_cstr(head, "rest"));
	ck_assert_uint_eq(s.len, 0);
	d = kc_str_dup(head);
	ck_assert_str_eq(d, "rest");
	kc_free(d);
	ck_assert(kc_str_eq(kc_str_from(NULL), KC_STR("")));
	ck_assert(kc_str_eq_cstr(kc_str_trim(KC_STR(" \t\n")), ""));
}
END_TEST

START_TEST(dns1123)
{
	static const struct {
		const char	*s;
		bool		 label, subdomain;
	} cases[] = {
		{ "a", true, true },
		{ "team-a", true, true },
		{ "0abc9", true, true },
		{ "a.b", false, true },
		{ "example.com", false, true },
		{ "kube-system.svc.cluster.local", false, true },
		{ "", false, false },
		{ "-a", false, false },
		{ "a-", false, false },
		{ "A", false, false },
		{ "a_b", false, false },
		{ "a..b", false, false },
		{ ".a", false, false },
		{ "a.", false, false },
		{ "a.-b", false, false },
		{ "a-.b", false, false },
		{ "a b", false, false },
		{ "a/b", false, false },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct kc_str s = kc_str_from(cases[i].s);

		ck_assert_msg(kc_valid_is_dns1123_label(s) == cases[i].label, "label \"%s\"",
		    cases[i].s);
		ck_assert_msg(kc_valid_is_dns1123_subdomain(s) == cases[i].subdomain,
		    "subdomain \"%s\"", cases[i].s);
	}
	/* Slices: only the bytes in the slice count. */
	ck_assert(kc_valid_is_dns1123_label((struct kc_str){ "ab-", 2 }));
	ck_assert(kc_valid_is_dns1123_subdomain((struct kc_str){ "a.b.", 3 }));
}
END_TEST

START_TEST(numbers)
{
	static const struct {
		const char	*in;
		int		 r;
		int64_t		 v;
	} i64[] = {
		{ "0", 0, 0 },
		{ "42", 0, 42 },
		{ "-42", 0, -42 },
		{ "+7", 0, 7 },
		{ "9223372036854775807", 0, INT64_MAX },
		{ "-9223372036854775808", 0, INT64_MIN },
		{ "9223372036854775808", -ERANGE, 0 },
		{ "-9223372036854775809", -ERANGE, 0 },
		{ "", -EINVAL, 0 },
		{ "-", -EINVAL, 0 },
		{ " 1", -EINVAL, 0 },
		{ "1 ", -EINVAL, 0 },
		{ "12abc", -EINVAL, 0 },
		{ "0x10", -EINVAL, 0 },
		{ "1.5", -EINVAL, 0 },
	};
	uint64_t u;
	uint32_t u32;
	int iv;

	for (size_t i = 0; i < KC_ARRAY_SIZE(i64); i++) {
		int64_t v = -1;
		int r = kc_parse_i64(i64[i].in, &v);

		ck_assert_msg(r == i64[i].r, "%s: r=%d", i64[i].in, r);
		if (r == 0)
			ck_assert_int_eq(v, i64[i].v);
		else
			ck_assert_int_eq(v, -1);	/* untouched on failure */
	}
	ck_assert_int_eq(kc_parse_u64("18446744073709551615", &u), 0);
	ck_assert_uint_eq(u, UINT64_MAX);
	ck_assert_int_eq(kc_parse_u64("18446744073709551616", &u), -ERANGE);
	ck_assert_int_eq(kc_parse_u64("-1", &u), -EINVAL);
	ck_assert_int_eq(kc_parse_u32("4294967295", &u32), 0);
	ck_assert_uint_eq(u32, UINT32_MAX);
	ck_assert_int_eq(kc_parse_u32("4294967296", &u32), -ERANGE);
	ck_assert_int_eq(kc_parse_int("-2147483648", &iv), 0);
	ck_assert_int_eq(iv, INT_MIN);
	ck_assert_int_eq(kc_parse_int("2147483648", &iv), -ERANGE);
	ck_assert_int_eq(kc_str_to_u64(KC_STR("123456"), &u), 0);
	ck_assert_uint_eq(u, 123456);
}
END_TEST

START_TEST(strlcpy_truncation)
{
	char small[5];

	ck_assert_uint_eq(kc_strlcpy(small, "abc", sizeof(small)), 3);
	ck_assert_str_eq(small, "abc");
	ck_assert_uint_eq(kc_strlcpy(small, "abcdefgh", sizeof(small)), 8);
	ck_assert_str_eq(small, "abcd");
	ck_assert_uint_eq(kc_strlcpy(small, "xyz", 0), 3);
	ck_assert_str_eq(small, "abcd");
	kc_strlcpy(small, "ab", sizeof(small));
	ck_assert_uint_eq(kc_strlcat(small, "cdef", sizeof(small)), 6);
	ck_assert_str_eq(small, "abcd");
}
END_TEST

START_TEST(files)
{
	char *dir = tu_tmpdir(), *path, *text = NULL, *p2;
	size_t len = 0;

	path = tu_write(dir, "f.txt", "hello\nworld\n");
	ck_assert_int_eq(kc_read_file(path, 100, &text, &len), 0);
	ck_assert_str_eq(text, "hello\nworld\n");
	ck_assert_uint_eq(len, 12);
	kc_free(text);
	text = NULL;
	/* Bigger than the bound: refused, nothing returned. */
	ck_assert_int_eq(kc_read_file(path, 11, &text, NULL), -E2BIG);
	ck_assert_ptr_null(text);
	ck_assert_int_eq(kc_read_file(path, 12, &text, NULL), 0);
	kc_free(text);
	text = NULL;
	/* No bound at all: max + 1 must not wrap to 0 (a 1-byte buffer). */
	ck_assert_int_eq(kc_read_file(path, SIZE_MAX, &text, &len), 0);
	ck_assert_str_eq(text, "hello\nworld\n");
	kc_free(text);
	text = NULL;
	ck_assert_int_eq(kc_read_file("/proc/self/status", SIZE_MAX, &text, &len), 0);
	ck_assert_ptr_nonnull(strstr(text, "Name:"));
	kc_free(text);
	text = NULL;
	ck_assert_int_eq(kc_read_file(dir, 100, &text, NULL), -EISDIR);
	p2 = kc_asprintf("%s/missing", dir);
	ck_assert_int_eq(kc_read_file(p2, 100, &text, NULL), -ENOENT);
	ck_assert_ptr_null(text);
	/* Files with no size, like /proc ones, are read to their end. */
	ck_assert_int_eq(kc_read_file("/proc/self/status", 1 << 20, &text, &len), 0);
	ck_assert_ptr_nonnull(strstr(text, "Name:"));
	kc_free(text);
	/* Atomic writes replace the file and leave no temporary behind. */
	ck_assert_int_eq(kc_write_file_atomic(path, "new", 3, 0640), 0);
	ck_assert_int_eq(kc_read_file(path, 100, &text, &len), 0);
	ck_assert_str_eq(text, "new");
	kc_free(text);
	kc_free(p2);
	p2 = kc_asprintf("%s/nodir/x", dir);
	ck_assert_int_eq(kc_write_file_atomic(p2, "x", 1, 0600), -ENOENT);
	kc_free(p2);
	kc_free(path);
	tu_tmpdir_remove(dir);
}
END_TEST

START_TEST(times)
{
	char buf[KC_TIME_MAX];
	time_t t;

	ck_assert_int_eq(kc_time_format(0, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "1970-01-01T00:00:00Z");
	ck_assert_int_eq(kc_time_format(1795290554, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "2026-11-21T19:49:14Z");
	ck_assert_int_eq(kc_time_parse("2026-11-21T19:49:14Z", &t), 0);
	ck_assert_int_eq(t, 1795290554);
	ck_assert_int_eq(kc_time_parse("2026-11-21T19:49:14.123456Z", &t), 0);
	ck_assert_int_eq(t, 1795290554);
	ck_assert_int_eq(kc_time_parse("2026-11-21T21:49:14+02:00", &t), 0);
	ck_assert_int_eq(t, 1795290554);
	ck_assert_int_eq(kc_time_parse("2026-11-21T18:49:14-01:00", &t), 0);
	ck_assert_int_eq(t, 1795290554);
	ck_assert_int_eq(kc_time_parse("2026-11-21", &t), -EINVAL);
	ck_assert_int_eq(kc_time_parse("2026-13-21T19:49:14Z", &t), -EINVAL);
	ck_assert_int_eq(kc_time_parse("2026-11-21T19:49:14", &t), -EINVAL);
	ck_assert_int_eq(kc_time_parse("2026-11-21T19:49:14Zjunk", &t), -EINVAL);
	ck_assert_int_eq(kc_time_parse("", &t), -EINVAL);
	ck_assert_int_eq(kc_time_format(0, buf, 5), -ENOBUFS);
}
END_TEST

/* RFC 3339 at each precision: metav1.Time, log lines, MicroTime, NanoFixed. */
START_TEST(time_precisions)
{
	const int64_t us = INT64_C(1795290554) * 1000000 + 123456;
	char buf[KC_TIME_MAX];

	ck_assert_int_eq(kc_time_format_us(us, KC_TIME_SEC, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "2026-11-21T19:49:14Z");
	ck_assert_int_eq(kc_time_format_us(us, KC_TIME_MILLI, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "2026-11-21T19:49:14.123Z");
	ck_assert_int_eq(kc_time_format_us(us, KC_TIME_MICRO, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "2026-11-21T19:49:14.123456Z");
	ck_assert_int_eq(kc_time_format_us(us, KC_TIME_NANO, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "2026-11-21T19:49:14.123456000Z");
	/* Fixed width, truncated, never rounded up into the next second. */
	ck_assert_int_eq(kc_time_format_us(INT64_C(999999), KC_TIME_MILLI, buf, sizeof(buf)),
	    0);
	ck_assert_str_eq(buf, "1970-01-01T00:00:00.999Z");
	ck_assert_int_eq(kc_time_format_us(INT64_C(5), KC_TIME_MICRO, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "1970-01-01T00:00:00.000005Z");
	/* Before the epoch: the fraction counts forward from the second before. */
	ck_assert_int_eq(kc_time_format_us(INT64_C(-1), KC_TIME_MICRO, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "1969-12-31T23:59:59.999999Z");
	/* Years RFC 3339 cannot write, and buffers too small. */
	ck_assert_int_eq(kc_time_format_us(INT64_C(253402300800) * 1000000, KC_TIME_SEC, buf,
	    sizeof(buf)), -EOVERFLOW);
	ck_assert_int_eq(kc_time_format_us(us, KC_TIME_MICRO, buf, 27), -ENOBUFS);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(kc_time_format_us(us, KC_TIME_MICRO, buf, 28), 0);
}
END_TEST

START_TEST(asprintf_alloc_failure)
{
	char *s;

	fail_alloc_after(0);
	s = kc_asprintf("%d", 5);
	fail_alloc_after(SIZE_MAX);
	ck_assert_ptr_null(s);
	s = kc_asprintf("%s-%d", "a", 5);
	ck_assert_str_eq(s, "a-5");
	kc_free(s);
}
END_TEST

START_TEST(hex_digits)
{
	ck_assert_int_eq(kc_hex_digit('0'), 0);
	ck_assert_int_eq(kc_hex_digit('9'), 9);
	ck_assert_int_eq(kc_hex_digit('a'), 10);
	ck_assert_int_eq(kc_hex_digit('F'), 15);
	ck_assert_int_eq(kc_hex_digit('g'), -1);
	ck_assert_int_eq(kc_hex_digit('G'), -1);
	ck_assert_int_eq(kc_hex_digit('/'), -1);
	ck_assert_int_eq(kc_hex_digit(':'), -1);
	ck_assert_int_eq(kc_hex_digit('%'), -1);
	ck_assert_int_eq(kc_hex_digit('\0'), -1);
	ck_assert_int_eq(kc_hex_digit(-1), -1);
	ck_assert_int_eq(kc_hex_digit(0xe0), -1);
}
END_TEST

START_TEST(utf8)
{
	static const struct {
		const char	*s;
		size_t		 n;
		size_t		 len;	/* 0: invalid */
		uint32_t	 c;
	} cases[] = {
		{ "a", 1, 1, 'a' },
		{ "\x7f", 1, 1, 0x7f },
		{ "\xc2\x80", 2, 2, 0x80 },
		{ "\xc3\xa9x", 3, 2, 0xe9 },
		{ "\xdf\xbf", 2, 2, 0x7ff },
		{ "\xe0\xa0\x80", 3, 3, 0x800 },
		{ "\xe2\x80\xa8", 3, 3, 0x2028 },
		{ "\xef\xbf\xbd", 3, 3, 0xfffd },
		{ "\xf0\x90\x80\x80", 4, 4, 0x10000 },
		{ "\xf4\x8f\xbf\xbf", 4, 4, 0x10ffff },
		{ "", 0, 0, 0 },			/* empty */
		{ "\x80", 1, 0, 0 },			/* lone continuation byte */
		{ "\xc0\x80", 2, 0, 0 },		/* overlong NUL */
		{ "\xc1\xbf", 2, 0, 0 },		/* overlong */
		{ "\xe0\x9f\xbf", 3, 0, 0 },		/* overlong */
		{ "\xf0\x8f\xbf\xbf", 4, 0, 0 },	/* overlong */
		{ "\xed\xa0\x80", 3, 0, 0 },		/* surrogate U+D800 */
		{ "\xed\xbf\xbf", 3, 0, 0 },		/* surrogate U+DFFF */
		{ "\xf4\x90\x80\x80", 4, 0, 0 },	/* above U+10FFFF */
		{ "\xf5\x80\x80\x80", 4, 0, 0 },
		{ "\xff", 1, 0, 0 },
		{ "\xc3", 1, 0, 0 },			/* truncated */
		{ "\xe2\x80\xa8", 2, 0, 0 },		/* truncated by 'n' */
		{ "\xc3(", 2, 0, 0 },			/* bad continuation */
		{ "\xf0\x90\x80(", 4, 0, 0 },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		uint32_t c = 0x55aa;
		char out[4];
		size_t len = kc_utf8_decode(cases[i].s, cases[i].n, &c);

		ck_assert_msg(len == cases[i].len, "case %zu: length %zu, want %zu", i, len,
		    cases[i].len);
		if (len == 0) {
			ck_assert_uint_eq(c, 0x55aa);
			continue;
		}
		ck_assert_uint_eq(c, cases[i].c);
		/* Encoding gives back the same bytes. */
		ck_assert_uint_eq(kc_utf8_encode(c, out), len);
		ck_assert_int_eq(memcmp(out, cases[i].s, len), 0);
	}
}
END_TEST

/* Invalid bytes become U+FFFD one by one, as Go writes them. */
START_TEST(utf8_sanitize)
{
	size_t len;
	char *s;

	ck_assert(kc_utf8_valid("", 0));
	ck_assert(kc_utf8_valid("h\xc3\xa9 \xf0\x9f\x98\x80", 8));
	ck_assert(!kc_utf8_valid("a\xff" "b", 3));
	ck_assert(!kc_utf8_valid("\xed\xa0\x80", 3));	/* a surrogate */
	ck_assert(!kc_utf8_valid("\xe2\x82", 2));		/* truncated */
	s = kc_utf8_dup_valid("a\xff" "b\xe2\x82", 5, &len);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(len, 11);
	ck_assert_str_eq(s, "a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd");
	kc_free(s);
	s = kc_utf8_dup_valid("ok", 2, &len);
	ck_assert_str_eq(s, "ok");
	ck_assert_uint_eq(len, 2);
	kc_free(s);
	fail_alloc_after(0);
	ck_assert_ptr_null(kc_utf8_dup_valid("x", 1, &len));
	fail_alloc_after(SIZE_MAX);
}
END_TEST

START_TEST(durations)
{
	static const struct {
		const char	*in;
		int		 r;
		uint64_t	 ms;
	} cases[] = {
		{ "0", 0, 0 }, { "1500ms", 0, 1500 }, { "2s", 0, 2000 },
		{ "1.5h", 0, 5400000 }, { "1m30s", 0, 90000 }, { "250us", 0, 0 },
		{ "1500000ns", 0, 1 }, { "0.5s", 0, 500 }, { "3m", 0, 180000 },
		{ "1h2m3s4ms", 0, 3723004 }, { "2\xc2\xb5s", 0, 0 },
		{ "", -EINVAL, 0 }, { "5", -EINVAL, 0 }, { "-1s", -EINVAL, 0 },
		{ "1d", -EINVAL, 0 }, { "s", -EINVAL, 0 }, { ".s", -EINVAL, 0 },
		{ "1s ", -EINVAL, 0 }, { "99999999999999999999h", -ERANGE, 0 },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		uint64_t v = 7;
		int r = kc_parse_duration_ms(cases[i].in, &v);

		ck_assert_msg(r == cases[i].r, "%s: r=%d", cases[i].in, r);
		ck_assert_uint_eq(v, r == 0 ? cases[i].ms : 7);
	}
	ck_assert_int_eq(kc_parse_duration_ms(NULL, &(uint64_t){ 0 }), -EINVAL);
}
END_TEST

/* kubectl's AGE column (apimachinery duration.HumanDuration), at each boundary. */
START_TEST(duration_human)
{
	static const struct {
		int64_t		 s;
		const char	*want;
	} cases[] = {
		{ -2, "<invalid>" }, { -1, "0s" }, { 0, "0s" }, { 5, "5s" }, { 119, "119s" },
		{ 120, "2m" }, { 200, "3m20s" }, { 599, "9m59s" }, { 600, "10m" },
		{ 10799, "179m" }, { 10800, "3h" }, { 11100, "3h5m" }, { 28799, "7h59m" },
		{ 28800, "8h" }, { 172799, "47h" }, { 172800, "2d" }, { 190800, "2d5h" },
		{ 691199, "7d23h" }, { 691200, "8d" }, { 63071999, "729d" },
		{ 63072000, "2y" }, { 65664000, "2y30d" }, { 252288000, "8y" },
		{ 315360000, "10y" },
	};
	char buf[KC_DURATION_HUMAN_MAX], small[3];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		kc_duration_human(cases[i].s, buf, sizeof(buf));
		ck_assert_msg(strcmp(buf, cases[i].want) == 0, "%lld: got %s, want %s",
		    (long long)cases[i].s, buf, cases[i].want);
	}
	kc_duration_human(200, small, sizeof(small));
	ck_assert_str_eq(small, "3m");
}
END_TEST

Suite *
str_suite(void)
{
	Suite *s = suite_create("str");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, slices);
	tcase_add_test(tc, dns1123);
	tcase_add_test(tc, numbers);
	tcase_add_test(tc, durations);
	tcase_add_test(tc, strlcpy_truncation);
	tcase_add_test(tc, files);
	tcase_add_test(tc, times);
	tcase_add_test(tc, time_precisions);
	tcase_add_test(tc, asprintf_alloc_failure);
	tcase_add_test(tc, hex_digits);
	tcase_add_test(tc, utf8);
	tcase_add_test(tc, utf8_sanitize);
	tcase_add_test(tc, duration_human);
	suite_add_tcase(s, tc);
	return s;
}

/*
 * test_sbuf.c: bounded string building and Go's strconv.Quote.
 */
#include <stdint.h>
#include <math.h>
#include <string.h>

#include <check.h>

#include <kc/sbuf.h>
#include <kc/str.h>

#include "testutil.h"

/* Go's strconv quote_test.go cases, and a few more, with Go's output. */
static const struct {
	const char	*in;
	size_t		 len;		/* 0: strlen(in) */
	const char	*out;
} quotes[] = {
	{ "\a\b\f\r\n\t\v", 0, "\"\\a\\b\\f\\r\\n\\t\\v\"" },
	{ "\\", 0, "\"\\\\\"" },
	{ "abc\xff" "def", 0, "\"abc\\xffdef\"" },
	{ "\xe2\x98\xba", 0, "\"\xe2\x98\xba\"" },			/* U+263A */
	{ "\xf4\x8f\xbf\xbf", 0, "\"\\U0010ffff\"" },			/* U+10FFFF */
	{ "\x04", 0, "\"\\x04\"" },
	{ "!\xc2\xa0!\xe2\x80\x80!\xe3\x80\x80!", 0,			/* spaces */
	  "\"!\\u00a0!\\u2000!\\u3000!\"" },
	{ "\x7f", 0, "\"\\x7f\"" },
	{ "", 0, "\"\"" },
	{ "say \"hi\"", 0, "\"say \\\"hi\\\"\"" },
	{ "a\0b", 3, "\"a\\x00b\"" },
	{ "\xc2\x85", 0, "\"\\u0085\"" },				/* NEL */
	{ "\xc2\xad", 0, "\"\\u00ad\"" },				/* soft hyphen */
	{ "\xef\xbb\xbf", 0, "\"\\ufeff\"" },				/* BOM */
	{ "\xe2\x80\xa8", 0, "\"\\u2028\"" },
	{ "\xee\x80\x80", 0, "\"\\ue000\"" },				/* private use */
	{ "\xf3\xa0\x80\x81", 0, "\"\\U000e0001\"" },			/* tag */
	{ "\xed\xa0\x80", 0, "\"\\xed\\xa0\\x80\"" },			/* surrogate */
	{ "\xc0\xaf", 0, "\"\\xc0\\xaf\"" },				/* overlong */
	{ "\xe2\x98", 0, "\"\\xe2\\x98\"" },				/* truncated */
	{ "\xef\xbf\xbd", 0, "\"\xef\xbf\xbd\"" },			/* U+FFFD itself */
	{ "\xf0\x9f\x98\x80 \xc3\xa9", 0, "\"\xf0\x9f\x98\x80 \xc3\xa9\"" },
};

START_TEST(go_quote)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(quotes); i++) {
		char buf[64];
		struct kc_sbuf b;
		size_t n = quotes[i].len != 0 ? quotes[i].len : strlen(quotes[i].in);

		kc_sbuf_init(&b, buf, sizeof(buf));
		kc_sbuf_quote(&b, quotes[i].in, n);
		ck_assert_msg(strcmp(buf, quotes[i].out) == 0, "case %zu: %s", i, buf);
		ck_assert_uint_eq(kc_sbuf_end(&b), strlen(quotes[i].out));
		ck_assert(!kc_sbuf_truncated(&b));
	}
	ck_assert(kc_rune_is_print(' '));
	ck_assert(!kc_rune_is_print(0xa0));
	ck_assert(kc_rune_is_print(0x263a));
	ck_assert(!kc_rune_is_print(0x10ffff));
}
END_TEST

START_TEST(quote_truncates_whole_units)
{
	char buf[8];
	struct kc_sbuf b;

	/* "\"ab\\ncd\"" needs 9 bytes: 'd' does not fit, the quote closes. */
	kc_sbuf_init(&b, buf, sizeof(buf));
	kc_sbuf_quote(&b, "ab\ncd", 5);
	ck_assert_str_eq(buf, "\"ab\\nc\"");
	ck_assert(kc_sbuf_truncated(&b));
	ck_assert_uint_eq(kc_sbuf_end(&b), 8);
	kc_sbuf_puts(&b, "x");
	ck_assert_str_eq(buf, "\"ab\\nc\"");
	ck_assert_uint_eq(kc_sbuf_end(&b), 9);
	/* An escape is never split. */
	kc_sbuf_init(&b, buf, 6);
	kc_sbuf_quote(&b, "ab\ncd", 5);
	ck_assert_str_eq(buf, "\"ab\"");

	/* A character is never split. */
	kc_sbuf_init(&b, buf, 6);
	kc_sbuf_quote(&b, "ab\xe2\x98\xba", 5);
	ck_assert_str_eq(buf, "\"ab\"");
	kc_sbuf_init(&b, buf, 6);
	kc_sbuf_puts(&b, "abc\xe2\x98\xba");
	ck_assert_str_eq(buf, "abc");
	ck_assert_uint_eq(kc_sbuf_end(&b), 6);

	/* Not even the quotes. */
	kc_sbuf_init(&b, buf, 2);
	kc_sbuf_quote(&b, "ab", 2);
	ck_assert_str_eq(buf, "");
	ck_assert_uint_eq(kc_sbuf_end(&b), 4);

	/* Size 0: counted only. */
	kc_sbuf_init(&b, NULL, 0);
	kc_sbuf_printf(&b, "%d", 12345);
	ck_assert_uint_eq(kc_sbuf_end(&b), 5);
	ck_assert(kc_sbuf_truncated(&b));

	ck_assert_str_eq(kc_sbuf_quoted(buf, sizeof(buf), "a\tb"), "\"a\\tb\"");
	ck_assert_str_eq(kc_sbuf_quoted(buf, sizeof(buf), NULL), "\"\"");
}
END_TEST

START_TEST(build_and_html)
{
	char buf[128], big[600];
	struct kc_sbuf b;

	kc_sbuf_init(&b, buf, sizeof(buf));
	kc_sbuf_puts(&b, "a<b> ");
	b.flags = KC_SBUF_HTML;
	kc_sbuf_puts(&b, "x<y>&z ");
	kc_sbuf_quote(&b, "<\"q\">", 5);
	b.flags = 0;
	kc_sbuf_putc(&b, '!');
	kc_sbuf_printf(&b, " %s=%d", "n", 7);
	kc_sbuf_put(&b, "tail", 2);
	kc_sbuf_puts(&b, NULL);
	ck_assert_str_eq(buf, "a<b> x&lt;y&gt;&amp;z \"&lt;\\\"q\\\"&gt;\"! n=7ta");
	ck_assert_uint_eq(kc_sbuf_end(&b), strlen(buf));
	ck_assert(!kc_sbuf_truncated(&b));

	/* printf longer than its scratch space. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	{
		char out[1024];

		kc_sbuf_init(&b, out, sizeof(out));
		kc_sbuf_printf(&b, "<%s>", big);
		ck_assert_uint_eq(strlen(out), 601);
		ck_assert_uint_eq(kc_sbuf_end(&b), 601);
		kc_sbuf_init(&b, out, 300);
		kc_sbuf_printf(&b, "<%s>", big);
		ck_assert_uint_eq(kc_sbuf_end(&b), 601);
		ck_assert(kc_sbuf_truncated(&b));
		ck_assert_uint_eq(strlen(out), 255);
	}
}
END_TEST

/* Go's strconv / fmt / encoding/json output for each case. */
START_TEST(go_floats)
{
	static const struct {
		double		 f;
		const char	*g64;	/* fmt %v, FormatFloat(f, 'g', -1, 64) */
		const char	*js;	/* encoding/json */
		const char	*g32;	/* FormatFloat(f, 'g', -1, 32) */
	} cases[] = {
		{ 0, "0", "0", "0" },
		{ -0.0, "-0", "-0", "-0" },
		{ 1.5, "1.5", "1.5", "1.5" },
		{ -2.5, "-2.5", "-2.5", "-2.5" },
		{ 0.1, "0.1", "0.1", "0.1" },
		{ 100, "100", "100", "100" },
		{ 123456, "123456", "123456", "123456" },
		{ 1234567, "1.234567e+06", "1234567", "1.234567e+06" },
		{ 1e6, "1e+06", "1000000", "1e+06" },
		{ 0.0001, "0.0001", "0.0001", "0.0001" },
		{ 0.00001, "1e-05", "0.00001", "1e-05" },
		{ 1e-7, "1e-07", "1e-7", "1e-07" },
		{ 1e21, "1e+21", "1e+21", "1e+21" },
		{ 1e100, "1e+100", "1e+100", "+Inf" },
		{ 3.14159265358979, "3.14159265358979", "3.14159265358979", "3.1415927" },
		{ 2.0 / 3.0, "0.6666666666666666", "0.6666666666666666", "0.6666667" },
		{ 5e-324, "5e-324", "5e-324", "0" },
		{ -1.7976931348623157e308, "-1.7976931348623157e+308",
		  "-1.7976931348623157e+308", "-Inf" },
		{ NAN, "NaN", "null", "NaN" },
		{ -INFINITY, "-Inf", "null", "-Inf" },
	};
	char buf[KC_FLOAT_MAX];

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		kc_sbuf_float_str(buf, sizeof(buf), cases[i].f, KC_FLOAT_G64);
		ck_assert_msg(strcmp(buf, cases[i].g64) == 0, "%%v of %.17g: %s, want %s",
		    cases[i].f, buf, cases[i].g64);
		kc_sbuf_float_str(buf, sizeof(buf), cases[i].f, KC_FLOAT_JSON);
		ck_assert_msg(strcmp(buf, cases[i].js) == 0, "json of %.17g: %s, want %s",
		    cases[i].f, buf, cases[i].js);
		kc_sbuf_float_str(buf, sizeof(buf), cases[i].f, KC_FLOAT_G32);
		ck_assert_msg(strcmp(buf, cases[i].g32) == 0, "32-bit of %.17g: %s, want %s",
		    cases[i].f, buf, cases[i].g32);
	}
	/* A small buffer gets a NUL-terminated prefix. */
	ck_assert_str_eq(kc_sbuf_float_str(buf, 4, 0.6666, KC_FLOAT_G64), "0.6");
}
END_TEST

Suite *
sbuf_suite(void)
{
	Suite *s = suite_create("sbuf");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, go_quote);
	tcase_add_test(tc, quote_truncates_whole_units);
	tcase_add_test(tc, build_and_html);
	tcase_add_test(tc, go_floats);
	suite_add_tcase(s, tc);
	return s;
}

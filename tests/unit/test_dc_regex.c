/*
 * test_dc_regex.c: CRD patterns (devcluster/regex.c), run directly: the
 * ECMA/RE2 syntax translated to POSIX expressions, what cannot be
 * translated, and Go's messages for invalid patterns. The schema suite
 * covers patterns inside CRDs and custom resources.
 */
#include <string.h>

#include <check.h>

#include "../../devcluster/regex.h"
#include "testutil.h"

static int
run(const char *pat, const char *subject)
{
	char why[256] = "";

	return regex_run(pat, subject, subject != NULL ? strlen(subject) : 0, why,
	    sizeof(why));
}

static const struct {
	const char	*pat;
	const char	*subject;
	int		 want;
} cases[] = {
	{ "^[a-z]+$", "abc", 1 },
	{ "^[a-z]+$", "aBc", 0 },
	{ "abc", "xxabcxx", 1 },		/* unanchored: a search */
	{ "^\\d{3}$", "123", 1 },
	{ "^\\d{3}$", "12a", 0 },
	{ "^\\D+$", "abc", 1 },
	{ "^\\w+$", "a_1", 1 },
	{ "^\\W$", "-", 1 },
	{ "^\\s$", "\t", 1 },
	{ "^\\S+$", "a b", 0 },
	{ "^[\\d.]+$", "1.2", 1 },		/* classes inside brackets */
	{ "^.$", "\xc3\xa9", 1 },		/* "." is one UTF-8 character */
	{ "^\\x41\\x{42}$", "AB", 1 },
	{ "^a\\.b$", "a.b", 1 },
	{ "^a\\.b$", "axb", 0 },
	{ "^(?:ab)+$", "abab", 1 },
	{ "^(?P<x>a)b$", "ab", 1 },
	{ "^a+?b$", "aab", 1 },			/* lazy: same verdict */
	{ "(?i)^abc$", "ABC", 1 },
	{ "^abc$", "ABC", 0 },
	{ "\\bfoo\\b", "a foo b", 1 },
	{ "\\Afoo\\z", "foo", 1 },
	{ "^a{2,3}$", "aaaa", 0 },
	{ "^\\p{L}+$", "123", 2 },		/* not translated: never fails */
};

START_TEST(test_match)
{
	ck_assert_msg(run(cases[_i].pat, cases[_i].subject) == cases[_i].want,
	    "%s on %s: want %d", cases[_i].pat, cases[_i].subject, cases[_i].want);
}
END_TEST

static const struct {
	const char	*pat;
	const char	*why;
} bad[] = {
	{ "^(abc", "error parsing regexp: missing closing ): `^(abc`" },
	{ "a(?=b)", "error parsing regexp: invalid or unsupported Perl syntax: `(?=`" },
	{ "(a)\\1", "error parsing regexp: invalid escape sequence: `\\1`" },
	{ "[a", "error parsing regexp: missing closing ]: `[a`" },
	{ "a)", "error parsing regexp: unexpected ): `a)`" },
	{ "a**", "error parsing regexp: invalid nested repetition operator: `**`" },
	{ "^a{3,2}$", "error parsing regexp: invalid repeat count: `{3,2}`" },
	{ "^a{1001}$", "error parsing regexp: invalid repeat count: `{1001}`" },
};

START_TEST(test_invalid)
{
	char why[256] = "";

	ck_assert_int_eq(regex_run(bad[_i].pat, "x", 1, why, sizeof(why)), -1);
	ck_assert_str_eq(why, bad[_i].why);
	/* Compiling alone gives the same verdict. */
	ck_assert_int_eq(regex_run(bad[_i].pat, NULL, 0, why, sizeof(why)), -1);
}
END_TEST

/* A NULL subject only compiles; 'slen' bounds the subject. */
START_TEST(test_compile_and_length)
{
	char why[64] = "";

	ck_assert_int_eq(regex_run("^[a-z]+$", NULL, 0, why, sizeof(why)), 1);
	ck_assert_str_eq(why, "");
	ck_assert_int_eq(regex_run("^abc$", "abcdef", 3, why, sizeof(why)), 1);
	ck_assert_int_eq(regex_run("^abcd", "abcdef", 3, why, sizeof(why)), 0);
}
END_TEST

Suite *
dc_regex_suite(void)
{
	Suite *s = suite_create("dc_regex");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_match, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_loop_test(tc, test_invalid, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, test_compile_and_length);
	suite_add_tcase(s, tc);
	return s;
}

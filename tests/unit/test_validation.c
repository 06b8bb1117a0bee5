/*
 * test_validation.c: names and labels, with upstream's cases
 * (apimachinery pkg/util/validation/validation_test.go) and messages.
 */
#include <string.h>

#include <check.h>

#include <kc/str.h>
#include <kc/validation.h>

#include "testutil.h"

#define LABEL_ERR	"a lowercase RFC 1123 label must consist of lower case " \
	"alphanumeric characters or '-', and must start and end with an alphanumeric " \
	"character (e.g. 'my-name',  or '123-abc', regex used for validation is " \
	"'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
#define SUBDOMAIN_ERR	"a lowercase RFC 1123 subdomain must consist of lower case " \
	"alphanumeric characters, '-' or '.', and must start and end with an " \
	"alphanumeric character (e.g. 'example.com', regex used for validation is " \
	"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
#define DNS1035_ERR	"a DNS-1035 label must consist of lower case alphanumeric " \
	"characters or '-', start with an alphabetic character, and end with an " \
	"alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for " \
	"validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
#define QNAME_ERR	"must consist of alphanumeric characters, '-', '_' or '.', and " \
	"must start and end with an alphanumeric character (e.g. 'MyName',  or " \
	"'my.name',  or '123-abc', regex used for validation is " \
	"'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define LVALUE_ERR	"a valid label must be an empty string or consist of " \
	"alphanumeric characters, '-', '_' or '.', and must start and end with an " \
	"alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex " \
	"used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
#define KEY_ERR		"a valid config key must consist of alphanumeric characters, " \
	"'-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used " \
	"for validation is '[-._a-zA-Z0-9]+')"

static char a63[64], a64[65], a253[254], a254[255];

static void
fill(void)
{
	memset(a63, 'a', 63);
	memset(a64, 'a', 64);
	for (size_t i = 0; i < 253; i++)
		a253[i] = i % 2 == 1 ? '.' : 'a';
	memcpy(a254, a253, 253);
	a254[253] = 'a';
}

#define S(x)	kc_str_from(x)

START_TEST(dns1123_label)
{
	static const char *const good[] = { "a", "ab", "abc", "a1", "a-1", "a--1--2--b",
	    "0", "01", "012", "1a", "1-a", "1--a--b--2" };
	static const char *const bad[] = { "", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-",
	    "a-", "-a", "1-", "-1", "_", "a_", "_a", "a_b", "1_", "_1", "1_2", ".", "a.",
	    ".a", "a.b", "1.", ".1", "1.2", " ", "a ", " a", "a b", "1 ", " 1", "1 2" };
	struct kc_valid v;

	fill();
	for (size_t i = 0; i < KC_ARRAY_SIZE(good); i++)
		ck_assert_msg(kc_valid_dns1123_label(S(good[i]), &v) == 0, "%s", good[i]);
	ck_assert_uint_eq(kc_valid_dns1123_label(S(a63), &v), 0);
	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
		ck_assert_msg(kc_valid_dns1123_label(S(bad[i]), &v) == 1, "%s", bad[i]);
		ck_assert_str_eq(v.msg[0], LABEL_ERR);
	}
	ck_assert_uint_eq(kc_valid_dns1123_label(S(a64), &v), 1);
	ck_assert_str_eq(v.msg[0], "must be no more than 63 characters");
	ck_assert(kc_valid_is_dns1123_label(S(a64)));
}
END_TEST

START_TEST(dns1123_subdomain)
{
	static const char *const good[] = { "a", "ab", "abc", "a1", "a-1", "a--1--2--b",
	    "0", "01", "012", "1a", "1-a", "1--a--b--2", "a.a", "ab.a", "abc.a", "a1.a",
	    "a-1.a", "a--1--2--b.a", "a.1", "ab.1", "abc.1", "a1.1", "a-1.1",
	    "a--1--2--b.1", "0.a", "01.a", "012.a", "1a.a", "1-a.a", "1--a--b--2",
	    "0.1", "01.1", "012.1", "1a.1", "1-a.1", "1--a--b--2.1", "a.b.c.d.e",
	    "aa.bb.cc.dd.ee", "1.2.3.4.5", "11.22.33.44.55" };
	static const char *const bad[] = { "", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-",
	    "a-", "-a", "1-", "-1", "_", "a_", "_a", "a_b", "1_", "_1", "1_2", ".", "a.",
	    ".a", "a..b", "1.", ".1", "1..2", " ", "a ", " a", "a b", "1 ", " 1", "1 2",
	    "A.a", "aB.a", "ab.A", "A1.a", "a1.A", "A.1", "aB.1", "A1.1", "1A.1", "0.A",
	    "01.A", "012.A", "1A.a", "1a.A", "A.B.C.D.E", "AA.BB.CC.DD.EE", "a.B.c.d.e",
	    "aa.bB.cc.dd.ee", "a@b", "a,b", "a_b", "a;b", "a:b", "a%b", "a?b", "a$b" };
	struct kc_valid v;

	fill();
	for (size_t i = 0; i < KC_ARRAY_SIZE(good); i++)
		ck_assert_msg(kc_valid_dns1123_subdomain(S(good[i]), &v) == 0, "%s", good[i]);
	ck_assert_uint_eq(kc_valid_dns1123_subdomain(S(a253), &v), 0);
	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
		ck_assert_msg(kc_valid_dns1123_subdomain(S(bad[i]), &v) == 1, "%s", bad[i]);
		ck_assert_str_eq(v.msg[0], SUBDOMAIN_ERR);
	}
	ck_assert_uint_eq(kc_valid_dns1123_subdomain(S(a254), &v), 1);
	ck_assert_str_eq(v.msg[0], "must be no more than 253 characters");
	ck_assert_uint_eq(kc_valid_dns1123_subdomain(S("-x" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), &v), 2);
	ck_assert_str_eq(v.msg[1], SUBDOMAIN_ERR);
}
END_TEST

START_TEST(dns1035_label)
{
	static const char *const good[] = { "a", "ab", "abc", "a1", "a-1", "a--1--2--b" };
	static const char *const bad[] = { "0", "01", "012", "1a", "1-a", "1--a--b--2", "",
	    "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_",
	    "_a", "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a.b", "1.", ".1", "1.2", " ",
	    "a ", " a", "a b", "1 ", " 1", "1 2" };
	struct kc_valid v;

	fill();
	for (size_t i = 0; i < KC_ARRAY_SIZE(good); i++)
		ck_assert_msg(kc_valid_dns1035_label(S(good[i]), &v) == 0, "%s", good[i]);
	ck_assert_uint_eq(kc_valid_dns1035_label(S(a63), &v), 0);
	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
		ck_assert_msg(kc_valid_dns1035_label(S(bad[i]), &v) == 1, "%s", bad[i]);
		ck_assert_str_eq(v.msg[0], DNS1035_ERR);
	}
	ck_assert_uint_eq(kc_valid_dns1035_label(S(a64), &v), 1);
	ck_assert_str_eq(v.msg[0], "must be no more than 63 characters");
}
END_TEST

START_TEST(qualified_name)
{
	static const char *const good[] = { "simple", "now-with-dashes", "1-starts-with-num",
	    "1234", "simple/simple", "now-with-dashes/simple", "now-with-dashes/now-with-dashes",
	    "now.with.dots/simple", "now-with.dashes-and.dots/simple",
	    "1-num.2-num/3-num", "1234/5678", "1.2.3.4/5678", "Uppercase_Is_OK_123",
	    "example.com/Uppercase_Is_OK_123", "requests.storage-foo",
	    "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk" };
	static const char *const bad[] = { "nospecialchars%^=@", "cantendwithadash-",
	    "-cantstartwithadash-", "only/one/slash", "Example.com/abc", "example_com/abc",
	    "example.com/", "/simple",
	    "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl" };
	struct kc_valid v;

	for (size_t i = 0; i < KC_ARRAY_SIZE(good); i++)
		ck_assert_msg(kc_valid_qualified_name(S(good[i]), &v) == 0, "%s", good[i]);
	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++)
		ck_assert_msg(kc_valid_qualified_name(S(bad[i]), &v) > 0, "%s", bad[i]);

	ck_assert_uint_eq(kc_valid_qualified_name(S("a/b/c"), &v), 1);
	ck_assert_str_eq(v.msg[0], "a qualified name " QNAME_ERR " with an optional DNS "
	    "subdomain prefix and '/' (e.g. 'example.com/MyName')");
	ck_assert_uint_eq(kc_valid_qualified_name(S("/"), &v), 3);
	ck_assert_str_eq(v.msg[0], "prefix part must be non-empty");
	ck_assert_str_eq(v.msg[1], "name part must be non-empty");
	ck_assert_str_eq(v.msg[2], "name part " QNAME_ERR);
	ck_assert_uint_eq(kc_valid_qualified_name(S("Example.com/-x"), &v), 2);
	ck_assert_str_eq(v.msg[0], "prefix part " SUBDOMAIN_ERR);
	ck_assert_str_eq(v.msg[1], "name part " QNAME_ERR);
	ck_assert_uint_eq(kc_valid_qualified_name(S(
	    "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl"), &v), 1);
	ck_assert_str_eq(v.msg[0], "name part must be no more than 63 characters");
}
END_TEST

START_TEST(label_value)
{
	static const char *const good[] = { "simple", "now-with-dashes", "1-starts-with-num",
	    "end-with-num-1", "1234", "", "A", "AB", "AbC", "a.b", "a_b", "Uppercase_Is_OK_123",
	    "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk" };
	static const char *const bad[] = { "nospecialchars%^=@", "Tama-nui-te-rā.is.Māori.sun",
	    "\\backslashes\\are\\bad", "-starts-with-dash", "ends-with-dash-",
	    ".starts.with.dot", "ends.with.dot." };
	struct kc_valid v;

	for (size_t i = 0; i < KC_ARRAY_SIZE(good); i++)
		ck_assert_msg(kc_valid_label_value(S(good[i]), &v) == 0, "%s", good[i]);
	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
		ck_assert_msg(kc_valid_label_value(S(bad[i]), &v) == 1, "%s", bad[i]);
		ck_assert_str_eq(v.msg[0], LVALUE_ERR);
	}
	ck_assert_uint_eq(kc_valid_label_value(S(
	    "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl"), &v), 1);
	ck_assert_str_eq(v.msg[0], "must be no more than 63 characters");
}
END_TEST

START_TEST(config_map_key)
{
	static const char *const good[] = { "a", "good", "good_key", "good-key", "good.key",
	    "GOOD_KEY", ".dotted", "a..b" };
	struct kc_valid v;

	for (size_t i = 0; i < KC_ARRAY_SIZE(good); i++)
		ck_assert_msg(kc_valid_config_map_key(S(good[i]), &v) == 0, "%s", good[i]);
	ck_assert_uint_eq(kc_valid_config_map_key(S("a b"), &v), 1);
	ck_assert_str_eq(v.msg[0], KEY_ERR);
	ck_assert_uint_eq(kc_valid_config_map_key(S(""), &v), 1);
	ck_assert_str_eq(v.msg[0], KEY_ERR);
	ck_assert_uint_eq(kc_valid_config_map_key(S("."), &v), 1);
	ck_assert_str_eq(v.msg[0], "must not be '.'");
	ck_assert_uint_eq(kc_valid_config_map_key(S(".."), &v), 1);
	ck_assert_str_eq(v.msg[0], "must not be '..'");
	ck_assert_uint_eq(kc_valid_config_map_key(S("..a/b"), &v), 2);
	ck_assert_str_eq(v.msg[0], KEY_ERR);
	ck_assert_str_eq(v.msg[1], "must not start with '..'");
}
END_TEST

Suite *
validation_suite(void)
{
	Suite *s = suite_create("validation");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, dns1123_label);
	tcase_add_test(tc, dns1123_subdomain);
	tcase_add_test(tc, dns1035_label);
	tcase_add_test(tc, qualified_name);
	tcase_add_test(tc, label_value);
	tcase_add_test(tc, config_map_key);
	suite_add_tcase(s, tc);
	return s;
}

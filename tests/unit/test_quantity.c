/*
 * test_quantity.c: resource quantities against upstream's tables
 * (k8s.io/apimachinery/pkg/api/resource/quantity_test.go: TestQuantityParse,
 * TestQuantityCanonicalize, the invalid list) and exact sums and products.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include <check.h>

#include <kc/err.h>
#include <kc/macro.h>
#include <kc/quantity.h>

#include "testutil.h"

struct parse_case {
	const char	*in;
	const char	*out;		/* canonical String() */
	enum kc_quantity_fmt fmt;
};

static const struct parse_case parse_cases[] = {
	{ "0", "0", KC_QTY_DECIMAL_SI },
	{ "0n", "0", KC_QTY_DECIMAL_SI },
	{ "0u", "0", KC_QTY_DECIMAL_SI },
	{ "0m", "0", KC_QTY_DECIMAL_SI },
	{ "0Ki", "0", KC_QTY_BINARY_SI },
	{ "0k", "0", KC_QTY_DECIMAL_SI },
	{ "0Mi", "0", KC_QTY_BINARY_SI },
	{ "0M", "0", KC_QTY_DECIMAL_SI },
	{ "0Gi", "0", KC_QTY_BINARY_SI },
	{ "0Ti", "0", KC_QTY_BINARY_SI },
	{ "0Ei", "0", KC_QTY_BINARY_SI },
	{ "0E", "0", KC_QTY_DECIMAL_SI },
	{ "-0", "0", KC_QTY_DECIMAL_SI },
	{ "0e99999", "0", KC_QTY_DECIMAL_EXPONENT },
	{ "1", "1", KC_QTY_DECIMAL_SI },
	{ "1n", "1n", KC_QTY_DECIMAL_SI },
	{ "1u", "1u", KC_QTY_DECIMAL_SI },
	{ "1m", "1m", KC_QTY_DECIMAL_SI },
	{ "1k", "1k", KC_QTY_DECIMAL_SI },
	{ "1M", "1M", KC_QTY_DECIMAL_SI },
	{ "1G", "1G", KC_QTY_DECIMAL_SI },
	{ "1T", "1T", KC_QTY_DECIMAL_SI },
	{ "1P", "1P", KC_QTY_DECIMAL_SI },
	{ "1E", "1E", KC_QTY_DECIMAL_SI },
	{ "1Ki", "1Ki", KC_QTY_BINARY_SI },
	{ "1Mi", "1Mi", KC_QTY_BINARY_SI },
	{ "1Gi", "1Gi", KC_QTY_BINARY_SI },
	{ "1Ti", "1Ti", KC_QTY_BINARY_SI },
	{ "1Pi", "1Pi", KC_QTY_BINARY_SI },
	{ "1Ei", "1Ei", KC_QTY_BINARY_SI },
	{ "8Ei", "8Ei", KC_QTY_BINARY_SI },
	{ "1000", "1k", KC_QTY_DECIMAL_SI },
	{ "1000000", "1M", KC_QTY_DECIMAL_SI },
	{ "1500", "1500", KC_QTY_DECIMAL_SI },
	{ "1000m", "1", KC_QTY_DECIMAL_SI },
	{ "1000000n", "1m", KC_QTY_DECIMAL_SI },
	{ "100M", "100M", KC_QTY_DECIMAL_SI },
	{ "0.5", "500m", KC_QTY_DECIMAL_SI },
	{ ".5", "500m", KC_QTY_DECIMAL_SI },
	{ "1.5", "1500m", KC_QTY_DECIMAL_SI },
	{ "+1.5", "1500m", KC_QTY_DECIMAL_SI },
	{ "-1.5", "-1500m", KC_QTY_DECIMAL_SI },
	{ "1.001", "1001m", KC_QTY_DECIMAL_SI },
	{ "0.001", "1m", KC_QTY_DECIMAL_SI },
	{ "0.0001", "100u", KC_QTY_DECIMAL_SI },
	{ "0.1m", "100u", KC_QTY_DECIMAL_SI },
	{ "0.000000001", "1n", KC_QTY_DECIMAL_SI },
	{ "0.0000000001", "1n", KC_QTY_DECIMAL_SI },
	{ "0.1n", "1n", KC_QTY_DECIMAL_SI },
	{ "1.23456789n", "2n", KC_QTY_DECIMAL_SI },
	{ "-0.1n", "-1n", KC_QTY_DECIMAL_SI },
	{ "1.50000", "1500m", KC_QTY_DECIMAL_SI },
	{ "001.5", "1500m", KC_QTY_DECIMAL_SI },
	{ "1.G", "1G", KC_QTY_DECIMAL_SI },
	{ ".", "0", KC_QTY_DECIMAL_SI },
	{ "-", "0", KC_QTY_DECIMAL_SI },
	{ "-500m", "-500m", KC_QTY_DECIMAL_SI },
	{ "1024Ki", "1Mi", KC_QTY_BINARY_SI },
	{ "2048Ki", "2Mi", KC_QTY_BINARY_SI },
	{ "1025Ki", "1025Ki", KC_QTY_BINARY_SI },
	{ "1.5Gi", "1536Mi", KC_QTY_BINARY_SI },
	{ "5.5Mi", "5632Ki", KC_QTY_BINARY_SI },
	{ "1.1Ki", "1126400m", KC_QTY_BINARY_SI },
	{ "0.5Ki", "512", KC_QTY_BINARY_SI },
	{ "1023Ki", "1023Ki", KC_QTY_BINARY_SI },
	{ "1024", "1024", KC_QTY_DECIMAL_SI },
	{ "-1Mi", "-1Mi", KC_QTY_BINARY_SI },
	{ "0.0000000001Ki", "103n", KC_QTY_BINARY_SI },
	{ "1e3", "1e3", KC_QTY_DECIMAL_EXPONENT },
	{ "1E6", "1e6", KC_QTY_DECIMAL_EXPONENT },
	{ "1e+6", "1e6", KC_QTY_DECIMAL_EXPONENT },
	{ "12e6", "12e6", KC_QTY_DECIMAL_EXPONENT },
	{ "120e3", "120e3", KC_QTY_DECIMAL_EXPONENT },
	{ "1e-3", "1e-3", KC_QTY_DECIMAL_EXPONENT },
	{ "1e-9", "1e-9", KC_QTY_DECIMAL_EXPONENT },
	{ "5e-10", "1e-9", KC_QTY_DECIMAL_EXPONENT },
	{ "1e-1000000000", "1e-9", KC_QTY_DECIMAL_EXPONENT },
	{ "1.5e3", "1500", KC_QTY_DECIMAL_EXPONENT },
	{ "12.34e3", "12340", KC_QTY_DECIMAL_EXPONENT },
	{ "1e0", "1", KC_QTY_DECIMAL_EXPONENT },
	{ "1000e0", "1e3", KC_QTY_DECIMAL_EXPONENT },
	{ "1e29", "100e27", KC_QTY_DECIMAL_EXPONENT },
	{ "100000000000000000000000000000", "100000000000E", KC_QTY_DECIMAL_SI },
};

struct bad_case {
	const char	*in;
	int		 err;
	const char	*msg;
};

static const struct bad_case bad_cases[] = {
	{ "", -EINVAL, KC_QUANTITY_ERR_FORMAT },
	{ "1.1.M", -EINVAL, KC_QUANTITY_ERR_FORMAT },
	{ "1+1.0M", -EINVAL, KC_QUANTITY_ERR_FORMAT },
	{ "0.1am", -EINVAL, KC_QUANTITY_ERR_FORMAT },
	{ "aoeu", -EINVAL, KC_QUANTITY_ERR_FORMAT },
	{ " 1", -EINVAL, KC_QUANTITY_ERR_FORMAT },
	{ "1 ", -EINVAL, KC_QUANTITY_ERR_FORMAT },
	{ "1.5 Gi", -EINVAL, KC_QUANTITY_ERR_FORMAT },
	{ "1e3.5", -EINVAL, KC_QUANTITY_ERR_FORMAT },
	{ "--1", -EINVAL, KC_QUANTITY_ERR_SUFFIX },
	{ "0.1mi", -EINVAL, KC_QUANTITY_ERR_SUFFIX },
	{ ".5i", -EINVAL, KC_QUANTITY_ERR_SUFFIX },
	{ "1i", -EINVAL, KC_QUANTITY_ERR_SUFFIX },
	{ "-3.01i", -EINVAL, KC_QUANTITY_ERR_SUFFIX },
	{ "-3.01e-", -EINVAL, KC_QUANTITY_ERR_SUFFIX },
	{ "1e", -EINVAL, KC_QUANTITY_ERR_SUFFIX },
	{ "1Ki2", -EINVAL, KC_QUANTITY_ERR_SUFFIX },
	{ "1kk", -EINVAL, KC_QUANTITY_ERR_SUFFIX },
	{ "1KI", -EINVAL, KC_QUANTITY_ERR_FORMAT },
	{ "1e99999999999999999999", -EINVAL, KC_QUANTITY_ERR_SUFFIX },
	{ "1e30", -ERANGE, KC_QUANTITY_ERR_RANGE },
	{ "1e1000000000", -ERANGE, KC_QUANTITY_ERR_RANGE },
	{ "99999999999999999999999999999999999999999", -ERANGE, KC_QUANTITY_ERR_RANGE },
	{ "200000000000000000000Ei", -ERANGE, KC_QUANTITY_ERR_RANGE },
};

static struct kc_quantity
q(const char *s)
{
	struct kc_quantity v;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_quantity_parse(s, &v, &st) == 0, "%s: %s", s, st.message);
	return v;
}

/* A pointer to a parsed quantity, valid until the next call. */
static const struct kc_quantity *
qp(const char *s)
{
	static struct kc_quantity v;

	v = q(s);
	return &v;
}

static void
assert_str(const struct kc_quantity *v, const char *want)
{
	char buf[KC_QUANTITY_STR_MAX];
	int n = kc_quantity_format(v, buf, sizeof(buf));

	ck_assert_int_eq(n, (int)strlen(want));
	ck_assert_str_eq(buf, want);
}

START_TEST(test_parse)
{
	const struct parse_case *c = &parse_cases[_i];
	struct kc_quantity v = q(c->in), again;

	ck_assert_msg(v.fmt == c->fmt, "%s: format %d", c->in, v.fmt);
	assert_str(&v, c->out);
	/* The canonical form reads back as the same value. */
	again = q(c->out);
	ck_assert_int_eq(kc_quantity_cmp(&v, &again), 0);
}
END_TEST

START_TEST(test_parse_bad)
{
	const struct bad_case *c = &bad_cases[_i];
	struct kc_quantity v = { .nanos = 7, .fmt = KC_QTY_BINARY_SI };
	struct kc_status st = { 0 };

	ck_assert_int_eq(kc_quantity_parse(c->in, &v, &st), c->err);
	ck_assert_str_eq(st.message, c->msg);
	ck_assert_msg(v.nanos == 7 && v.fmt == KC_QTY_BINARY_SI, "%s: out touched", c->in);
	ck_assert_int_eq(kc_quantity_parse(NULL, &v, NULL), -EINVAL);
}
END_TEST

START_TEST(test_sum_and_scale)
{
	struct kc_quantity v = q("500m"), mem = q("64Gi"), total;

	ck_assert_int_eq(kc_quantity_mul(&v, 3), 0);
	assert_str(&v, "1500m");
	ck_assert_int_eq(kc_quantity_mul(&mem, 4), 0);
	assert_str(&mem, "256Gi");
	v = q("8Ei");
	ck_assert_int_eq(kc_quantity_mul(&v, 10000), 0);
	assert_str(&v, "80000Ei");
	/* A zero sum takes the format of what is added to it. */
	total = kc_quantity_from_int(0);
	ck_assert_int_eq(kc_quantity_add(&total, &mem), 0);
	ck_assert_int_eq(total.fmt, KC_QTY_BINARY_SI);
	ck_assert_int_eq(kc_quantity_add(&total, &mem), 0);
	assert_str(&total, "512Gi");
	/* A non-zero sum keeps its own format. */
	v = q("1");
	mem = q("1Ki");
	ck_assert_int_eq(kc_quantity_add(&v, &mem), 0);
	assert_str(&v, "1025");
	v = q("100m");
	for (int i = 0; i < 9; i++)
		ck_assert_int_eq(kc_quantity_add(&v, qp("100m")), 0);
	assert_str(&v, "1");
	v = kc_quantity_from_int(2);
	ck_assert_int_eq(kc_quantity_mul(&v, -3), 0);
	assert_str(&v, "-6");
}
END_TEST

START_TEST(test_overflow)
{
	struct kc_quantity v = q("1e29"), big = v, half = q("5e28");

	ck_assert_int_eq(kc_quantity_mul(&v, 2), -ERANGE);
	ck_assert_int_eq(kc_quantity_cmp(&v, &big), 0);
	ck_assert_int_eq(kc_quantity_add(&v, &half), 0);
	ck_assert_int_eq(kc_quantity_add(&v, &half), -ERANGE);
	assert_str(&v, "150e27");
	v = q("1e29");
	ck_assert_int_eq(kc_quantity_mul(&v, INT64_MAX), -ERANGE);
}
END_TEST

START_TEST(test_cmp_value)
{
	struct kc_quantity a = q("1Gi"), b = q("1G"), c = q("1000m"), d = q("1");
	int64_t v = 42;

	ck_assert_int_eq(kc_quantity_cmp(&a, &b), 1);
	ck_assert_int_eq(kc_quantity_cmp(&b, &a), -1);
	ck_assert_int_eq(kc_quantity_cmp(&c, &d), 0);
	ck_assert_int_eq(kc_quantity_sign(&a), 1);
	ck_assert_int_eq(kc_quantity_sign(qp("-1m")), -1);
	ck_assert_int_eq(kc_quantity_sign(qp("0Ki")), 0);
	ck_assert_int_eq(kc_quantity_value(qp("1500m"), &v), 0);
	ck_assert_int_eq(v, 2);
	ck_assert_int_eq(kc_quantity_value(qp("-1500m"), &v), 0);
	ck_assert_int_eq(v, -2);
	ck_assert_int_eq(kc_quantity_value(qp("8"), &v), 0);
	ck_assert_int_eq(v, 8);
	ck_assert_int_eq(kc_quantity_value(qp("8Ei"), &v), -ERANGE);
	ck_assert_int_eq(v, 8);
}
END_TEST

/* MilliValue() and the saturating forms, as the devcluster reads requests. */
static const struct {
	const char	*in;
	int64_t		 milli, value;
} sat_cases[] = {
	{ "0", 0, 0 },
	{ "100m", 100, 1 },
	{ "1.5", 1500, 2 },
	{ "-1.5", -1500, -2 },
	{ "-100m", -100, -1 },
	{ "1n", 1, 1 },
	{ "0.1n", 1, 1 },
	{ "1e-100000", 1, 1 },
	{ "64Gi", INT64_C(68719476736000), INT64_C(68719476736) },
	{ "9223372036854775.807m", INT64_C(9223372036854776), INT64_C(9223372036854776) / 1000 + 1 },
	{ "9223372036854775807", INT64_MAX, INT64_MAX },
	{ "-9223372036854775808", -INT64_MAX, -INT64_MAX },
	{ "99999999999999999999999999999999", INT64_MAX, INT64_MAX },
	{ "-99999999999999999999999999999999", -INT64_MAX, -INT64_MAX },
	{ "1e100000", INT64_MAX, INT64_MAX },
	{ "8Ei", INT64_MAX, INT64_MAX },
	{ "0.123456789012345678901234567890", 124, 1 },
	{ "123456789012345678901234567890e-29", 1235, 2 },
	/* Long fractions with a binary suffix stay exact. */
	{ "70.077281378559151902951256194564Gi", INT64_C(75244907928376), INT64_C(75244907929) },
	{ "0.000000000000000000000000000000000000000001Ki", 1, 1 },
	{ "1.0000000000000000000000000000000000000000000000000000000000001Ki", 1024001, 1025 },
	{ "0.5Ki", 512000, 512 },
	/* strconv.ParseInt takes the smallest int64 as an exponent. */
	{ "1e-9223372036854775808", 1, 1 },
};

START_TEST(test_sat)
{
	struct kc_quantity v;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_quantity_parse_sat(sat_cases[_i].in, &v, &st) == 0, "%s: %s",
	    sat_cases[_i].in, st.message);
	ck_assert_msg(kc_quantity_milli_sat(&v) == sat_cases[_i].milli, "%s: milli %" PRId64,
	    sat_cases[_i].in, kc_quantity_milli_sat(&v));
	ck_assert_msg(kc_quantity_value_sat(&v) == sat_cases[_i].value, "%s: value %" PRId64,
	    sat_cases[_i].in, kc_quantity_value_sat(&v));
}
END_TEST

START_TEST(test_sat_errors)
{
	struct kc_quantity v = kc_quantity_from_int(7), want = v;
	struct kc_status st = { 0 };

	/* Out of range: an error for kc_quantity_parse() only. */
	ck_assert_int_eq(kc_quantity_parse("1e30", &v, &st), -ERANGE);
	ck_assert_int_eq(kc_quantity_parse_sat("1e30", &v, &st), 0);
	ck_assert_int_eq(kc_quantity_sign(&v), 1);
	/* Bad text: the same error and message, *ret untouched. */
	v = want;
	ck_assert_int_eq(kc_quantity_parse_sat("1x", &v, &st), -EINVAL);
	ck_assert_str_eq(st.message, KC_QUANTITY_ERR_FORMAT);
	ck_assert_int_eq(kc_quantity_parse_sat("5K", &v, &st), -EINVAL);
	ck_assert_str_eq(st.message, KC_QUANTITY_ERR_SUFFIX);
	ck_assert_int_eq(kc_quantity_parse_sat(NULL, &v, NULL), -EINVAL);
	ck_assert_int_eq(kc_quantity_parse_sat("1e-9223372036854775809", &v, &st), -EINVAL);
	ck_assert_str_eq(st.message, KC_QUANTITY_ERR_SUFFIX);
	ck_assert_int_eq(kc_quantity_cmp(&v, &want), 0);
}
END_TEST

START_TEST(test_milli_value)
{
	int64_t v = 42;

	ck_assert_int_eq(kc_quantity_milli_value(qp("1500m"), &v), 0);
	ck_assert_int_eq(v, 1500);
	ck_assert_int_eq(kc_quantity_milli_value(qp("1.0001"), &v), 0);
	ck_assert_int_eq(v, 1001);
	ck_assert_int_eq(kc_quantity_milli_value(qp("-0.1m"), &v), 0);
	ck_assert_int_eq(v, -1);
	ck_assert_int_eq(kc_quantity_milli_value(qp("8Ei"), &v), -ERANGE);
	ck_assert_int_eq(v, -1);
	ck_assert_int_eq(kc_quantity_milli_value(qp("70.077281378559151902951256194564Gi"), &v),
	    0);
	ck_assert_int_eq(v, INT64_C(75244907928376));
	ck_assert_int_eq(kc_quantity_milli_value(qp("9223372036854775807m"), &v), 0);
	ck_assert_int_eq(v, INT64_MAX);
}
END_TEST

START_TEST(test_format_space)
{
	struct kc_quantity v = q("1500m");
	char buf[6];

	ck_assert_int_eq(kc_quantity_format(&v, buf, 5), -ENOSPC);
	ck_assert_int_eq(kc_quantity_format(&v, buf, 6), 5);
	ck_assert_str_eq(buf, "1500m");
	v = q("-170141183460469231731687303715884105727n");
	{
		char big[KC_QUANTITY_STR_MAX];

		ck_assert_int_gt(kc_quantity_format(&v, big, sizeof(big)), 0);
		ck_assert_str_eq(big, "-170141183460469231731687303715884105727n");
	}
}
END_TEST

Suite *
quantity_suite(void)
{
	Suite *s = suite_create("quantity");
	TCase *tc = tcase_create("quantity");

	tcase_add_loop_test(tc, test_parse, 0, KC_ARRAY_SIZE(parse_cases));
	tcase_add_loop_test(tc, test_parse_bad, 0, KC_ARRAY_SIZE(bad_cases));
	tcase_add_test(tc, test_sum_and_scale);
	tcase_add_test(tc, test_overflow);
	tcase_add_test(tc, test_cmp_value);
	tcase_add_test(tc, test_format_space);
	tcase_add_loop_test(tc, test_sat, 0, KC_ARRAY_SIZE(sat_cases));
	tcase_add_test(tc, test_sat_errors);
	tcase_add_test(tc, test_milli_value);
	suite_add_tcase(s, tc);
	return s;
}

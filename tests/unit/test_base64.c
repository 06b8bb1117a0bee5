/*
 * test_base64.c: base64 variants, round trips and rejects.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/base64.h>

#include "testutil.h"

/* RFC 4648, section 10. */
static const char *const vec[][3] = {
	{ "", "", "" },
	{ "f", "Zg==", "Zg" },
	{ "fo", "Zm8=", "Zm8" },
	{ "foo", "Zm9v", "Zm9v" },
	{ "foob", "Zm9vYg==", "Zm9vYg" },
	{ "fooba", "Zm9vYmE=", "Zm9vYmE" },
	{ "foobar", "Zm9vYmFy", "Zm9vYmFy" },
};

START_TEST(vectors)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(vec); i++) {
		char *s;
		size_t n;

		ck_assert_int_eq(kc_base64_encode(vec[i][0], strlen(vec[i][0]), 0, &s, &n), 0);
		ck_assert_str_eq(s, vec[i][1]);
		ck_assert_uint_eq(n, strlen(vec[i][1]));
		kc_free(s);
		ck_assert_int_eq(kc_base64_encode(vec[i][0], strlen(vec[i][0]), KC_BASE64_URL,
		    &s, &n), 0);
		ck_assert_str_eq(s, vec[i][2]);
		ck_assert_uint_eq(n, kc_base64_encoded_len(strlen(vec[i][0]), KC_BASE64_URL));
		kc_free(s);
		ck_assert_int_eq(kc_base64_decode(vec[i][1], strlen(vec[i][1]), 0, &s, &n,
		    NULL, 0), 0);
		ck_assert_str_eq(s, vec[i][0]);
		ck_assert_uint_eq(n, strlen(vec[i][0]));
		kc_free(s);
		ck_assert_int_eq(kc_base64_decode(vec[i][2], strlen(vec[i][2]), KC_BASE64_URL,
		    &s, &n, NULL, 0), 0);
		ck_assert_str_eq(s, vec[i][0]);
		kc_free(s);
	}
}
END_TEST

START_TEST(round_trip)
{
	unsigned char bin[256];

	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (unsigned char)(255 - i);
	for (size_t len = 0; len <= sizeof(bin); len += 7) {
		static const unsigned flags[] = { 0, KC_BASE64_URL };

		for (size_t f = 0; f < KC_ARRAY_SIZE(flags); f++) {
			char *enc, *dec;
			size_t n;

			ck_assert_int_eq(kc_base64_encode(bin, len, flags[f], &enc, NULL), 0);
			ck_assert(strchr(enc, flags[f] ? '+' : '-') == NULL);
			ck_assert_int_eq(kc_base64_decode(enc, strlen(enc), flags[f], &dec, &n,
			    NULL, 0), 0);
			ck_assert_uint_eq(n, len);
			ck_assert(memcmp(dec, bin, len) == 0);
			kc_free(enc);
			kc_free(dec);
		}
	}
}
END_TEST

static int
dec(const char *s, unsigned flags, char *why, size_t size)
{
	char *out = NULL;
	int r = kc_base64_decode(s, strlen(s), flags, &out, NULL, why, size);

	if (r == 0)
		kc_free(out);
	else
		ck_assert_ptr_null(out);
	return r;
}

START_TEST(rejects_and_leniency)
{
	char why[128];
	char *out;
	size_t n;

	ck_assert_int_eq(dec("Zm9v\nYmFy", 0, why, sizeof(why)), -EINVAL);
	ck_assert_str_eq(why, "invalid base64 at offset 4");
	ck_assert_int_eq(dec("Zm9vYg", 0, why, sizeof(why)), -EINVAL);
	ck_assert_str_eq(why, "invalid base64: 6 characters is not a whole number of "
	    "4-character groups (bad padding?)");
	ck_assert_int_eq(dec("Zg=a", 0, why, sizeof(why)), -EINVAL);
	ck_assert_str_eq(why, "invalid base64 at offset 3");
	ck_assert_int_eq(dec("Z===", 0, why, sizeof(why)), -EINVAL);
	ck_assert_str_eq(why, "invalid base64: more than two '=' of padding");
	ck_assert_int_eq(dec("Zm-_", 0, NULL, 0), -EINVAL);
	ck_assert_int_eq(dec("Zm+/", KC_BASE64_URL, NULL, 0), -EINVAL);
	ck_assert_int_eq(dec("Zg==", KC_BASE64_URL, NULL, 0), -EINVAL);
	ck_assert_int_eq(dec("Zm9vY", KC_BASE64_URL, why, sizeof(why)), -EINVAL);
	ck_assert_int_eq(dec("Zm9v YmFy", KC_BASE64_LINES, NULL, 0), -EINVAL);

	/* Go's decoder skips line breaks anywhere; kubeconfigs also blanks. */
	ck_assert_int_eq(kc_base64_decode("Zm9v\r\nYm\nFy\n", 12, KC_BASE64_LINES, &out, &n,
	    NULL, 0), 0);
	ck_assert_str_eq(out, "foobar");
	kc_free(out);
	ck_assert_int_eq(kc_base64_decode(" Zm9v\tYmE=\n", 11, KC_BASE64_SPACE, &out, &n,
	    NULL, 0), 0);
	ck_assert_str_eq(out, "fooba");
	ck_assert_uint_eq(n, 5);
	kc_free(out);
}
END_TEST

START_TEST(alloc_failure)
{
	for (size_t budget = 0;; budget++) {
		char *out = NULL;
		int r;

		fail_alloc_after(budget);
		r = kc_base64_decode("Zm9vYmFy", 8, 0, &out, NULL, NULL, 0);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert_str_eq(out, "foobar");
			kc_free(out);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(out);
	}
}
END_TEST

Suite *
base64_suite(void)
{
	Suite *s = suite_create("base64");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, vectors);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, rejects_and_leniency);
	tcase_add_test(tc, alloc_failure);
	suite_add_tcase(s, tc);
	return s;
}

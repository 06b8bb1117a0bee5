/*
 * test_deflate.c: deflate with a preset dictionary.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/deflate.h>
#include <kc/err.h>

#include "testutil.h"

static const char dict[] =
    "{\"apiVersion\":\"example.dev/v1\",\"kind\":\"Thing\",\"metadata\":{\"name\":\"\","
    "\"namespace\":\"default\",\"resourceVersion\":\"1\",\"uid\":\"\"},\"spec\":"
    "{\"image\":\"busybox:1.36\",\"nodes\":8},\"status\":{\"conditions\":[{"
    "\"lastTransitionTime\":\"2025-01-01T00:00:00Z\",\"message\":\"all 8 nodes are "
    "running\",\"reason\":\"AllNodesRunning\",\"status\":\"True\",\"type\":\"Running\"}],"
    "\"phase\":\"Running\"}}";

static const char text[] =
    "{\"apiVersion\":\"example.dev/v1\",\"kind\":\"Thing\",\"metadata\":{\"name\":\"t-17\","
    "\"namespace\":\"team-a\",\"resourceVersion\":\"48213\",\"uid\":"
    "\"d8a57ecd-6cfc-4bf0-8350-c99c5170c1ef\"},\"spec\":{\"image\":\"busybox:1.36\","
    "\"nodes\":4},\"status\":{\"conditions\":[{\"lastTransitionTime\":"
    "\"2026-11-22T04:32:58Z\",\"message\":\"all 4 nodes are running\",\"reason\":"
    "\"AllNodesRunning\",\"status\":\"True\",\"type\":\"Running\"}],\"phase\":"
    "\"Running\"}}";

static void
round_trip(const void *in, size_t len, const void *d, size_t dlen, size_t *ret_zlen)
{
	void *z = NULL;
	char *out = NULL;
	size_t zlen = 0;

	ck_assert_int_eq(kc_deflate(in, len, d, dlen, &z, &zlen), 0);
	ck_assert_ptr_nonnull(z);
	ck_assert_int_eq(kc_inflate(z, zlen, d, dlen, len, &out), 0);
	ck_assert_mem_eq(out, in, len);
	ck_assert_int_eq(out[len], '\0');
	kc_free(out);
	kc_free(z);
	if (ret_zlen != NULL)
		*ret_zlen = zlen;
}

START_TEST(round_trips)
{
	size_t with = 0, without = 0, empty = 0;
	char big[40000];

	round_trip(text, strlen(text), dict, strlen(dict), &with);
	round_trip(text, strlen(text), NULL, 0, &without);
	/* The dictionary is what makes a small text small. */
	ck_assert_uint_lt(with, without / 2);
	ck_assert_uint_lt(with, strlen(text) / 3);
	round_trip("", 0, dict, strlen(dict), &empty);
	ck_assert_uint_gt(empty, 0);
	/* Larger than the largest window, with a dictionary too. */
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + (i * 7919) % 26);
	round_trip(big, sizeof(big), dict, strlen(dict), NULL);
}
END_TEST

START_TEST(refuses_other_bytes)
{
	const size_t len = strlen(text);
	void *z = NULL;
	char *out = (char *)0x1, *other = kc_strdup(dict);
	unsigned char *bad;
	size_t zlen = 0;

	ck_assert_int_eq(kc_deflate(text, len, dict, strlen(dict), &z, &zlen), 0);
	/* Another dictionary of the same length: caught by its checksum. */
	other[10] = 'X';
	ck_assert_int_eq(kc_inflate(z, zlen, other, strlen(other), len, &out), KC_EPARSE);
	ck_assert_int_eq(kc_inflate(z, zlen, NULL, 0, len, &out), KC_EPARSE);
	/* Another length, shorter or longer. */
	ck_assert_int_eq(kc_inflate(z, zlen, dict, strlen(dict), len - 1, &out), KC_EPARSE);
	ck_assert_int_eq(kc_inflate(z, zlen, dict, strlen(dict), len + 1, &out), KC_EPARSE);
	/* Cut short, or a byte changed in the middle. */
	ck_assert_int_eq(kc_inflate(z, zlen - 1, dict, strlen(dict), len, &out), KC_EPARSE);
	bad = kc_memdup(z, zlen);
	bad[zlen / 2] ^= 0x55;
	ck_assert_int_eq(kc_inflate(bad, zlen, dict, strlen(dict), len, &out), KC_EPARSE);
	/* Too large either way. */
	ck_assert_int_eq(kc_inflate(z, zlen, dict, strlen(dict), KC_DEFLATE_MAX + 1, &out),
	    -E2BIG);
	ck_assert_int_eq(kc_deflate(text, (size_t)KC_DEFLATE_MAX + 1, NULL, 0, &z, &zlen),
	    -E2BIG);
	ck_assert_ptr_eq(out, (char *)0x1);
	kc_free(bad);
	kc_free(other);
	kc_free(z);
}
END_TEST

START_TEST(out_of_memory)
{
	const size_t len = strlen(text);
	void *z = NULL, *keep = (void *)0x1;
	char *out = (char *)0x1;
	size_t zlen = 0, klen = 7;
	int r;

	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = kc_deflate(text, len, dict, strlen(dict), &keep, &klen);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_eq(keep, (void *)0x1);
		ck_assert_uint_eq(klen, 7);
	}
	z = keep;
	zlen = klen;
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = kc_inflate(z, zlen, dict, strlen(dict), len, &out);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_eq(out, (char *)0x1);
	}
	ck_assert_str_eq(out, text);
	kc_free(out);
	kc_free(z);
}
END_TEST

Suite *
deflate_suite(void)
{
	Suite *s = suite_create("deflate");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, round_trips);
	tcase_add_test(tc, refuses_other_bytes);
	tcase_add_test(tc, out_of_memory);
	suite_add_tcase(s, tc);
	return s;
}

/*
 * test_buf.c: bounded buffers.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/buf.h>

#include "testutil.h"

START_TEST(append_and_take)
{
	struct kc_buf b;
	size_t len;
	char *s;

	kc_buf_init(&b, 100);
	ck_assert_str_eq(kc_buf_str(&b), "");
	ck_assert_int_eq(kc_buf_puts(&b, "hello"), 0);
	ck_assert_int_eq(kc_buf_putc(&b, ' '), 0);
	ck_assert_int_eq(kc_buf_printf(&b, "%s %d", "world", 42), 0);
	ck_assert_str_eq(kc_buf_str(&b), "hello world 42");
	ck_assert_uint_eq(b.len, 14);
	s = kc_buf_take(&b, &len);
	ck_assert_str_eq(s, "hello world 42");
	ck_assert_uint_eq(len, 14);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.max, 100);
	kc_free(s);
	/* Taking an empty buffer gives an empty allocated string. */
	s = kc_buf_take(&b, NULL);
	ck_assert_str_eq(s, "");
	kc_free(s);
}
END_TEST

START_TEST(ceiling_frees)
{
	struct kc_buf b;
	char big[64];

	memset(big, 'a', sizeof(big));
	kc_buf_init(&b, 10);
	ck_assert_int_eq(kc_buf_append(&b, big, 10), 0);
	ck_assert_uint_eq(b.len, 10);
	/* One byte past the ceiling: the buffer is freed, not half-built. */
	ck_assert_int_eq(kc_buf_putc(&b, 'x'), -E2BIG);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	/* It can be used again after the failure. */
	ck_assert_int_eq(kc_buf_append(&b, big, 3), 0);
	ck_assert_int_eq(kc_buf_printf(&b, "%s", "0123456789"), -E2BIG);
	ck_assert_ptr_null(b.data);
	/* A single huge append is refused without overflow. */
	ck_assert_int_eq(kc_buf_append(&b, big, SIZE_MAX), -E2BIG);
	kc_buf_free(&b);
}
END_TEST

START_TEST(growth_and_reset)
{
	struct kc_buf b;

	kc_buf_init(&b, 1 << 20);
	for (int i = 0; i < 10000; i++)
		ck_assert_int_eq(kc_buf_printf(&b, "%d,", i % 10), 0);
	ck_assert_uint_eq(b.len, 20000);
	ck_assert_int_eq(b.data[b.len], '\0');
	kc_buf_reset(&b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_str_eq(kc_buf_str(&b), "");
	ck_assert_int_eq(kc_buf_puts(&b, "x"), 0);
	ck_assert_str_eq(kc_buf_str(&b), "x");
	kc_buf_free(&b);
	kc_buf_free(&b);	/* twice is fine */
}
END_TEST

START_TEST(unbounded_ceiling)
{
	struct kc_buf b;

	/* SIZE_MAX as the ceiling must not wrap the capacity computation. */
	kc_buf_init(&b, SIZE_MAX);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(kc_buf_puts(&b, "0123456789"), 0);
	ck_assert_uint_eq(b.len, 1000);
	ck_assert_uint_ge(b.cap, 1001);
	kc_buf_free(&b);
}
END_TEST

START_TEST(alloc_failure)
{
	struct kc_buf b;
	int r;

	for (size_t budget = 0;; budget++) {
		kc_buf_init(&b, 1 << 16);
		fail_alloc_after(budget);
		r = 0;
		for (int i = 0; i < 200 && r == 0; i++)
			r = kc_buf_puts(&b, "0123456789");
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert_uint_eq(b.len, 2000);
			kc_buf_free(&b);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(b.data);
		ck_assert_uint_eq(b.len, 0);
	}
}
END_TEST

Suite *
buf_suite(void)
{
	Suite *s = suite_create("buf");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, append_and_take);
	tcase_add_test(tc, ceiling_frees);
	tcase_add_test(tc, growth_and_reset);
	tcase_add_test(tc, unbounded_ceiling);
	tcase_add_test(tc, alloc_failure);
	suite_add_tcase(s, tc);
	return s;
}

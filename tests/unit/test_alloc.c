/*
 * test_alloc.c: the allocator wrappers and the pool of blocks that live
 * long (kc_keep_malloc()): blocks of one size class share slabs, freed
 * blocks are reused, a slab whose blocks are all freed goes to the empty
 * list and kc_keep_trim() gives its pages back, kc_realloc() and
 * kc_free() take pool blocks, and what the pool does not serve (large
 * sizes, an installed allocator) falls back to kc_malloc().
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>

#include "testutil.h"

#define N	2000		/* more than one slab of 128-byte blocks */

START_TEST(wrappers)
{
	char *s = kc_strdup("hello"), *t = kc_strndup("hello", 3);
	int *a = kc_calloc(4, sizeof(*a));

	ck_assert_str_eq(s, "hello");
	ck_assert_str_eq(t, "hel");
	ck_assert_int_eq(a[0] | a[1] | a[2] | a[3], 0);
	ck_assert_ptr_null(kc_calloc(SIZE_MAX / 2, 4));
	ck_assert_ptr_null(kc_reallocarray(NULL, SIZE_MAX / 2, 4));
	ck_assert_ptr_null(kc_strdup(NULL));
	ck_assert_ptr_null(kc_free(s));
	kc_free(t);
	kc_free(a);
}
END_TEST

START_TEST(keep_blocks)
{
	static char *p[N];
	struct kc_keep_stats st0, st;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	char *again;

	kc_keep_stats(&st0);
	for (size_t i = 0; i < N; i++) {
		p[i] = kc_keep_malloc(120 + i % 8);	/* all in the 128-byte class */
		ck_assert_ptr_nonnull(p[i]);
		ck_assert_uint_eq((uintptr_t)p[i] % 16, 0);
		memset(p[i], (int)(i & 0x7f), 120 + i % 8);
		lo = (uintptr_t)p[i] < lo ? (uintptr_t)p[i] : lo;
		hi = (uintptr_t)p[i] > hi ? (uintptr_t)p[i] : hi;
	}
	kc_keep_stats(&st);
	ck_assert_uint_eq(st.blocks - st0.blocks, N);
	ck_assert_uint_eq(st.bytes - st0.bytes, (size_t)N * 128);
	/* Packed together: a few slabs for all of them, not N malloc chunks. */
	ck_assert_uint_le(st.slabs - st0.slabs, N * 128 / KC_KEEP_SLAB + 2);
	ck_assert_uint_lt(hi - lo, (N * 128 / KC_KEEP_SLAB + 2) * (uintptr_t)KC_KEEP_SLAB);
	for (size_t i = 0; i < N; i++)
		ck_assert_int_eq(p[i][119], (int)(i & 0x7f));

	/* A freed block is the next one of its class. */
	again = p[7];
	kc_free(p[7]);
	p[7] = kc_keep_calloc(125);
	ck_assert_ptr_eq(p[7], again);
	for (size_t i = 0; i < 125; i++)
		ck_assert_int_eq(p[7][i], 0);

	/* kc_realloc() moves a pool block to malloc with its bytes. */
	p[8] = kc_realloc(p[8], 4000);
	ck_assert_ptr_nonnull(p[8]);
	ck_assert_int_eq(p[8][0], 8);
	ck_assert_int_eq(p[8][119], 8);
	kc_free(p[8]);
	p[8] = NULL;
	kc_keep_stats(&st);
	ck_assert_uint_eq(st.blocks - st0.blocks, N - 1);

	/* Every block freed: the slabs empty, and trim gives them back. */
	for (size_t i = 0; i < N; i++)
		kc_free(p[i]);
	kc_keep_stats(&st);
	ck_assert_uint_eq(st.blocks, st0.blocks);
	ck_assert_uint_eq(st.bytes, st0.bytes);
	/* Earlier tests may have left slabs; at least those it filled alone empty. */
	ck_assert_uint_ge(st.empty, N * 128 / KC_KEEP_SLAB - 1);
	ck_assert_uint_gt(kc_keep_trim(), 0);
	ck_assert_uint_eq(kc_keep_trim(), 0);		/* once */
	/* An empty slab serves any class again. */
	p[0] = kc_keep_malloc(16);
	p[1] = kc_keep_malloc(KC_KEEP_MAX);
	ck_assert_ptr_nonnull(p[0]);
	ck_assert_ptr_nonnull(p[1]);
	memset(p[1], 1, KC_KEEP_MAX);
	kc_keep_stats(&st);
	ck_assert_uint_eq(st.blocks - st0.blocks, 2);
	ck_assert_uint_le(st.slabs, st0.slabs + N * 128 / KC_KEEP_SLAB + 2);
	kc_free(p[0]);
	kc_free(p[1]);
}
END_TEST

START_TEST(keep_falls_back)
{
	struct kc_keep_stats st0, st;
	char *big, *small;

	kc_keep_stats(&st0);
	big = kc_keep_malloc(KC_KEEP_MAX + 1);
	ck_assert_ptr_nonnull(big);
	memset(big, 0, KC_KEEP_MAX + 1);
	kc_keep_stats(&st);
	ck_assert_uint_eq(st.blocks, st0.blocks);	/* malloc's */
	kc_free(big);

	/* With an allocator installed (tests), the pool stays out of the way. */
	fail_alloc_after(0);
	small = kc_keep_malloc(32);
	fail_alloc_after(SIZE_MAX);
	ck_assert_ptr_null(small);
	fail_alloc_after(1);
	small = kc_keep_calloc(32);
	fail_alloc_after(SIZE_MAX);
	ck_assert_ptr_nonnull(small);
	kc_keep_stats(&st);
	ck_assert_uint_eq(st.blocks, st0.blocks);
	kc_free(small);
}
END_TEST

Suite *
alloc_suite(void)
{
	Suite *s = suite_create("alloc");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, wrappers);
	tcase_add_test(tc, keep_blocks);
	tcase_add_test(tc, keep_falls_back);
	suite_add_tcase(s, tc);
	return s;
}

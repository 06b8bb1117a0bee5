/*
 * test_hash.c: FNV-1a and the intrusive hash map.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/hash.h>

#include "testutil.h"

START_TEST(fnv_vectors)
{
	/* The FNV reference vectors (draft-eastlake-fnv). */
	ck_assert_uint_eq(kc_fnv1a32(KC_FNV1A32_INIT, "", 0), 0x811c9dc5u);
	ck_assert_uint_eq(kc_fnv1a32_str(KC_FNV1A32_INIT, "a"), 0xe40c292cu);
	ck_assert_uint_eq(kc_fnv1a32_str(KC_FNV1A32_INIT, "foobar"), 0xbf9cf968u);
	ck_assert(kc_fnv1a64_str(KC_FNV1A64_INIT, "a") == UINT64_C(0xaf63dc4c8601ec8c));
	ck_assert(kc_fnv1a64_str(KC_FNV1A64_INIT, "foobar") == UINT64_C(0x85944171f73967e8));
	/* Continuation: in parts as in one piece; NULL is the empty string. */
	ck_assert_uint_eq(kc_fnv1a32_str(kc_fnv1a32_str(KC_FNV1A32_INIT, "foo"), "bar"),
	    0xbf9cf968u);
	ck_assert(kc_fnv1a64(kc_fnv1a64(KC_FNV1A64_INIT, "foo", 3), "bar", 3) ==
	    UINT64_C(0x85944171f73967e8));
	ck_assert_uint_eq(kc_fnv1a32_str(7, NULL), 7);
}
END_TEST

struct ent {
	struct kc_hmap_node	h;
	char			key[16];
	int			val;
};

START_TEST(hmap_basics)
{
	struct kc_hmap m = KC_HMAP_INIT;
	struct kc_hmap_node *n, *tmp;
	static struct ent e[1000];
	size_t i, seen = 0;

	ck_assert_ptr_null(kc_hmap_get(&m, "x"));
	for (i = 0; i < KC_ARRAY_SIZE(e); i++) {
		(void)snprintf(e[i].key, sizeof(e[i].key), "k%zu", i);
		e[i].h.key = e[i].key;
		e[i].val = (int)i;
		ck_assert_int_eq(kc_hmap_put(&m, &e[i].h), 0);
	}
	ck_assert_uint_eq(m.n, 1000);
	ck_assert_uint_ge(m.nb, 512);
	for (i = 0; i < KC_ARRAY_SIZE(e); i++) {
		char k[16];

		(void)snprintf(k, sizeof(k), "k%zu", i);
		n = kc_hmap_get(&m, k);
		ck_assert_ptr_eq(n, &e[i].h);
	}
	ck_assert_ptr_null(kc_hmap_get(&m, "k1000"));
	/* Delete the odd ones while iterating. */
	KC_HMAP_FOREACH_SAFE(n, tmp, i, &m) {
		struct ent *x = (struct ent *)n;

		seen++;
		if (x->val % 2 == 1)
			kc_hmap_del(&m, n);
	}
	ck_assert_uint_eq(seen, 1000);
	ck_assert_uint_eq(m.n, 500);
	ck_assert_ptr_null(kc_hmap_get(&m, "k1"));
	ck_assert_ptr_eq(kc_hmap_get(&m, "k2"), &e[2].h);
	seen = 0;
	KC_HMAP_FOREACH_SAFE(n, tmp, i, &m)
		seen++;
	ck_assert_uint_eq(seen, 500);
	kc_hmap_free(&m);
	ck_assert_uint_eq(m.n, 0);
	ck_assert_ptr_null(kc_hmap_get(&m, "k2"));
	seen = 0;
	KC_HMAP_FOREACH_SAFE(n, tmp, i, &m)
		seen++;
	ck_assert_uint_eq(seen, 0);
}
END_TEST

/* A seeded map finds what it holds, and places keys differently. */
START_TEST(hmap_seeded)
{
	struct kc_hmap a = KC_HMAP_INIT, b = KC_HMAP_INIT;
	static struct ent ea[64], eb[64];
	size_t moved = 0;

	b.seed = 0x9e3779b9u;
	for (size_t i = 0; i < KC_ARRAY_SIZE(ea); i++) {
		(void)snprintf(ea[i].key, sizeof(ea[i].key), "ns/pod-%zu", i);
		memcpy(eb[i].key, ea[i].key, sizeof(eb[i].key));
		ea[i].h.key = ea[i].key;
		eb[i].h.key = eb[i].key;
		ck_assert_int_eq(kc_hmap_put(&a, &ea[i].h), 0);
		ck_assert_int_eq(kc_hmap_put(&b, &eb[i].h), 0);
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(ea); i++) {
		ck_assert_ptr_eq(kc_hmap_get(&a, ea[i].key), &ea[i].h);
		ck_assert_ptr_eq(kc_hmap_get(&b, ea[i].key), &eb[i].h);
		if (ea[i].h.hash != eb[i].h.hash)
			moved++;
	}
	ck_assert_uint_eq(moved, KC_ARRAY_SIZE(ea));
	/* Seed 0 is plain FNV-1a: the unseeded maps keep their layout. */
	ck_assert_uint_eq(ea[0].h.hash, kc_fnv1a32_str(KC_FNV1A32_INIT, "ns/pod-0"));
	kc_hmap_free(&a);
	kc_hmap_free(&b);
}
END_TEST

START_TEST(hmap_alloc_failure)
{
	struct kc_hmap m = KC_HMAP_INIT;
	struct ent a = { .key = "a" };

	a.h.key = a.key;
	fail_alloc_after(0);
	ck_assert_int_eq(kc_hmap_put(&m, &a.h), -ENOMEM);
	fail_alloc_after(SIZE_MAX);
	ck_assert_uint_eq(m.n, 0);
	ck_assert_ptr_null(kc_hmap_get(&m, "a"));
	ck_assert_int_eq(kc_hmap_put(&m, &a.h), 0);
	ck_assert_ptr_eq(kc_hmap_get(&m, "a"), &a.h);
	kc_hmap_free(&m);
}
END_TEST

Suite *
hash_suite(void)
{
	Suite *s = suite_create("hash");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, fnv_vectors);
	tcase_add_test(tc, hmap_basics);
	tcase_add_test(tc, hmap_seeded);
	tcase_add_test(tc, hmap_alloc_failure);
	suite_add_tcase(s, tc);
	return s;
}

/*
 * test_heap.c: the intrusive min-heap.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/heap.h>

#include "testutil.h"

struct item {
	struct kc_heap_node	hn;
	uint64_t		due;
};

static bool
item_less(const struct kc_heap_node *a, const struct kc_heap_node *b)
{
	return ((const struct item *)a)->due < ((const struct item *)b)->due;
}

START_TEST(heap_order)
{
	static struct item it[500];
	struct kc_heap h;
	struct kc_heap_node *n;
	uint64_t last = 0;
	size_t count = 0;

	kc_heap_init(&h, item_less);
	ck_assert_ptr_null(kc_heap_top(&h));
	ck_assert_ptr_null(kc_heap_pop(&h));
	for (size_t i = 0; i < KC_ARRAY_SIZE(it); i++) {
		kc_heap_node_init(&it[i].hn);
		it[i].due = kc_random_u64() % 1000;
		ck_assert_int_eq(kc_heap_push(&h, &it[i].hn), 0);
		ck_assert(kc_heap_node_queued(&it[i].hn));
	}
	/* Remove every third, move every fifth. */
	for (size_t i = 0; i < KC_ARRAY_SIZE(it); i += 3)
		kc_heap_remove(&h, &it[i].hn);
	kc_heap_remove(&h, &it[0].hn);		/* twice: left alone */
	for (size_t i = 1; i < KC_ARRAY_SIZE(it); i += 5) {
		if (!kc_heap_node_queued(&it[i].hn))
			continue;
		it[i].due = kc_random_u64() % 1000;
		kc_heap_fix(&h, &it[i].hn);
	}
	ck_assert_uint_eq(h.n, KC_ARRAY_SIZE(it) - 167);
	while ((n = kc_heap_pop(&h)) != NULL) {
		struct item *x = (struct item *)n;

		ck_assert(!kc_heap_node_queued(n));
		ck_assert_uint_ge(x->due, last);
		last = x->due;
		count++;
	}
	ck_assert_uint_eq(count, KC_ARRAY_SIZE(it) - 167);
	kc_heap_free(&h);
}
END_TEST

START_TEST(heap_reserve)
{
	struct item a = { .due = 2 }, b = { .due = 1 };
	struct kc_heap h;

	kc_heap_init(&h, item_less);
	kc_heap_node_init(&a.hn);
	kc_heap_node_init(&b.hn);
	fail_alloc_after(0);
	ck_assert_int_eq(kc_heap_push(&h, &a.hn), -ENOMEM);
	ck_assert(!kc_heap_node_queued(&a.hn));
	ck_assert_int_eq(kc_heap_reserve(&h, 2), -ENOMEM);
	fail_alloc_after(SIZE_MAX);
	ck_assert_int_eq(kc_heap_reserve(&h, 2), 0);
	/* Reserved: pushes do not allocate. */
	fail_alloc_after(0);
	ck_assert_int_eq(kc_heap_push(&h, &a.hn), 0);
	ck_assert_int_eq(kc_heap_push(&h, &b.hn), 0);
	fail_alloc_after(SIZE_MAX);
	ck_assert_ptr_eq(kc_heap_top(&h), &b.hn);
	b.due = 3;
	kc_heap_fix(&h, &b.hn);
	ck_assert_ptr_eq(kc_heap_pop(&h), &a.hn);
	ck_assert_ptr_eq(kc_heap_pop(&h), &b.hn);
	kc_heap_free(&h);
}
END_TEST

Suite *
heap_suite(void)
{
	Suite *s = suite_create("heap");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, heap_order);
	tcase_add_test(tc, heap_reserve);
	suite_add_tcase(s, tc);
	return s;
}

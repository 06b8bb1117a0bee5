/*
 * fail_alloc.c: an allocator that fails on demand.
 *
 *	for (size_t budget = 0;; budget++) {
 *		fail_alloc_after(budget);
 *		r = kc_thing_new(&t);
 *		fail_alloc_after(SIZE_MAX);
 *		if (r == 0)
 *			break;
 *		ck_assert_int_eq(r, -ENOMEM);
 *	}
 */
#include <stdint.h>
#include <stdlib.h>

#include <kc/alloc.h>

#include "../unit/testutil.h"

static size_t	budget = SIZE_MAX;
static size_t	count;

static void *
fa_malloc(size_t n)
{
	count++;
	if (budget == 0)
		return NULL;
	if (budget != SIZE_MAX)
		budget--;
	return malloc(n);
}

static void *
fa_realloc(void *p, size_t n)
{
	count++;
	if (budget == 0)
		return NULL;
	if (budget != SIZE_MAX)
		budget--;
	return realloc(p, n);
}

static const struct kc_allocator fail_allocator = {
	.malloc = fa_malloc,
	.realloc = fa_realloc,
	.free = free,
};

void
fail_alloc_after(size_t n)
{
	budget = n;
	kc_set_allocator(n == SIZE_MAX ? NULL : &fail_allocator);
}

size_t
fail_alloc_count(void)
{
	size_t c = count;

	count = 0;
	return c;
}

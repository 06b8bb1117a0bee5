/*
 * fail_alloc.c: an allocator that fails on demand, and one that counts
 * the bytes its blocks hold (count_alloc_start()).
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
#include <stddef.h>
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

/* ---- counting ---------------------------------------------------------- */

static size_t	held;

struct hdr {
	size_t		 n;
	max_align_t	 pad;	/* keeps the caller's part aligned */
};

static void *
cnt_malloc(size_t n)
{
	struct hdr *h = malloc(sizeof(*h) + n);

	if (h == NULL)
		return NULL;
	h->n = n;
	held += n;
	return h + 1;
}

static void *
cnt_realloc(void *p, size_t n)
{
	struct hdr *h = p != NULL ? (struct hdr *)p - 1 : NULL, *nh;
	size_t old = h != NULL ? h->n : 0;

	if ((nh = realloc(h, sizeof(*h) + n)) == NULL)
		return NULL;		/* 'p' stays the caller's */
	h = nh;
	h->n = n;
	held = held - old + n;
	return h + 1;
}

static void
cnt_free(void *p)
{
	struct hdr *h;

	if (p == NULL)
		return;
	h = (struct hdr *)p - 1;
	held -= h->n;
	free(h);
}

static const struct kc_allocator counting_allocator = {
	.malloc = cnt_malloc,
	.realloc = cnt_realloc,
	.free = cnt_free,
};

void
count_alloc_start(void)
{
	held = 0;
	kc_set_allocator(&counting_allocator);
}

size_t
count_alloc_held(void)
{
	return held;
}

void
count_alloc_stop(void)
{
	kc_set_allocator(NULL);
}

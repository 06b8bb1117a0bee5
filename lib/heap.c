/*
 * heap.c: an intrusive binary min-heap.
 *
 * v[0..n) is a binary heap under 'less': no child is less than its
 * parent, the children of i at 2i+1 and 2i+2. Every node in it has idx
 * equal to its slot, and every node out of it KC_HEAP_NONE; each move
 * goes through set() to keep that true.
 */
#include <errno.h>
#include <stdint.h>

#include <kc/alloc.h>
#include <kc/heap.h>

#define HEAP_CAP_MIN	64

void
kc_heap_init(struct kc_heap *h, kc_heap_less_fn *less)
{
	h->v = NULL;
	h->n = 0;
	h->cap = 0;
	h->less = less;
}

static void
set(struct kc_heap *h, size_t i, struct kc_heap_node *n)
{
	h->v[i] = n;
	n->idx = (uint32_t)i;
}

static void
sift_up(struct kc_heap *h, size_t i)
{
	struct kc_heap_node *n = h->v[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!h->less(n, h->v[parent]))
			break;
		set(h, i, h->v[parent]);
		i = parent;
	}
	set(h, i, n);
}

static void
sift_down(struct kc_heap *h, size_t i)
{
	struct kc_heap_node *n = h->v[i];

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->less(h->v[c + 1], h->v[c]))
			c++;
		if (!h->less(h->v[c], n))
			break;
		set(h, i, h->v[c]);
		i = c;
	}
	set(h, i, n);
}

int
kc_heap_reserve(struct kc_heap *h, size_t n)
{
	struct kc_heap_node **v;
	size_t cap;

	if (n <= h->cap)
		return 0;
	if (n >= KC_HEAP_NONE)
		return -ENOMEM;
	cap = KC_MAX(h->cap, (size_t)HEAP_CAP_MIN);
	while (cap < n)
		cap *= 2;
	if ((v = kc_reallocarray(h->v, cap, sizeof(*v))) == NULL)
		return -ENOMEM;
	h->v = v;
	h->cap = cap;
	return 0;
}

int
kc_heap_push(struct kc_heap *h, struct kc_heap_node *n)
{
	int r;

	if (h->n == h->cap && (r = kc_heap_reserve(h, h->n + 1)) < 0)
		return r;
	set(h, h->n++, n);
	sift_up(h, n->idx);
	return 0;
}

struct kc_heap_node *
kc_heap_top(const struct kc_heap *h)
{
	return h->n > 0 ? h->v[0] : NULL;
}

void
kc_heap_fix(struct kc_heap *h, struct kc_heap_node *n)
{
	size_t i = n->idx;

	sift_up(h, i);
	if (n->idx == i)
		sift_down(h, i);
}

void
kc_heap_remove(struct kc_heap *h, struct kc_heap_node *n)
{
	size_t i = n->idx;

	if (i == KC_HEAP_NONE)
		return;
	n->idx = KC_HEAP_NONE;
	if (i == --h->n)
		return;
	set(h, i, h->v[h->n]);
	kc_heap_fix(h, h->v[i]);
}

struct kc_heap_node *
kc_heap_pop(struct kc_heap *h)
{
	struct kc_heap_node *top = kc_heap_top(h);

	if (top != NULL)
		kc_heap_remove(h, top);
	return top;
}

void
kc_heap_free(struct kc_heap *h)
{
	h->v = kc_free(h->v);
	h->n = 0;
	h->cap = 0;
}

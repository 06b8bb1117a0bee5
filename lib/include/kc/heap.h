/*
 * An intrusive binary min-heap (timers, due times), like libuv's.
 *
 * Elements embed a struct kc_heap_node, which remembers the element's
 * place, so any element can be removed or moved after its key changed in
 * O(log n). The heap owns only its array of pointers; it never allocates
 * or frees elements. The order comes from the 'less' function given at
 * init; keep it a strict weak order (add a sequence number to break ties
 * where first-in-first-out matters). Not thread-safe.
 *
 *	struct timer { struct kc_heap_node hn; uint64_t due; };
 *	kc_heap_init(&h, timer_less);
 *	if ((r = kc_heap_push(&h, &t->hn)) < 0)
 *		return r;
 *	while ((n = kc_heap_top(&h)) != NULL && TIMER(n)->due <= now)
 *		fire(TIMER(kc_heap_pop(&h)));
 */
#ifndef KC_HEAP_H
#define KC_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kc/macro.h>

#define KC_HEAP_NONE	UINT32_MAX

struct kc_heap_node {
	uint32_t	idx;		/* its slot, or KC_HEAP_NONE */
};

typedef bool	kc_heap_less_fn(const struct kc_heap_node *, const struct kc_heap_node *);

struct kc_heap {
	struct kc_heap_node	**v;
	size_t			  n;
	size_t			  cap;
	kc_heap_less_fn		 *less;
};

/* An empty heap ordered by 'less'; allocates nothing. */
void	kc_heap_init(struct kc_heap *, kc_heap_less_fn *less);

/* Marks a node as in no heap: call once when the element is made. */
static inline void
kc_heap_node_init(struct kc_heap_node *n)
{
	n->idx = KC_HEAP_NONE;
}

static inline bool
kc_heap_node_queued(const struct kc_heap_node *n)
{
	return n->idx != KC_HEAP_NONE;
}

/*
 * Makes room for 'n' elements in all, so that pushes up to that many
 * never allocate. 0 or -ENOMEM (the heap is unchanged).
 */
int	kc_heap_reserve(struct kc_heap *, size_t n) _must_check_;

/*
 * Adds a node that is in no heap. 0, or -ENOMEM when the array had to
 * grow and could not (the node stays out).
 */
int	kc_heap_push(struct kc_heap *, struct kc_heap_node *) _must_check_;

/* The least node, or NULL when the heap is empty. */
struct kc_heap_node	*kc_heap_top(const struct kc_heap *);

/* Removes and returns the least node, or NULL when empty. */
struct kc_heap_node	*kc_heap_pop(struct kc_heap *);

/* Removes a node; one in no heap is left alone. */
void	kc_heap_remove(struct kc_heap *, struct kc_heap_node *);

/* Restores the order after the key of a node in the heap changed. */
void	kc_heap_fix(struct kc_heap *, struct kc_heap_node *);

/*
 * Frees the array. The nodes still in the heap are not told: free their
 * elements, or kc_heap_pop() them first.
 */
void	kc_heap_free(struct kc_heap *);

#endif

/*
 * Non-cryptographic hashing and an intrusive string-keyed hash map.
 *
 * FNV-1a (32 and 64 bits) for hash tables and stable simulated IDs; never
 * for anything an attacker may choose to collide on purpose where that
 * matters, nor for integrity (use OpenSSL's digests there). Each function
 * takes the hash so far, so a key made of several parts is hashed by
 * continuation:
 *
 *	h = kc_fnv1a32_str(KC_FNV1A32_INIT, ns);
 *	h = kc_fnv1a32(h, "", 1);		(a separator byte)
 *	h = kc_fnv1a32_str(h, name);
 *
 * struct kc_hmap chains elements that embed a struct kc_hmap_node, keyed
 * by a NUL-terminated string the element owns. The map allocates only its
 * bucket array (growing at twice as many elements as buckets) and never
 * the elements, nor frees them. Not thread-safe: the owner serializes.
 *
 *	struct pod { struct kc_hmap_node h; char key[256]; ... };
 *	p->h.key = p->key;
 *	if ((r = kc_hmap_put(&pods, &p->h)) < 0)
 *		return r;			(-ENOMEM; p is not in the map)
 *	p = (struct pod *)kc_hmap_get(&pods, "ns/name");
 */
#ifndef KC_HASH_H
#define KC_HASH_H

#include <stddef.h>
#include <stdint.h>

#include <kc/macro.h>

#define KC_FNV1A32_INIT		UINT32_C(2166136261)
#define KC_FNV1A64_INIT		UINT64_C(14695981039346656037)

/* FNV-1a of p[0..n), continuing from 'h' (KC_FNV1A*_INIT to start). */
uint32_t	kc_fnv1a32(uint32_t h, const void *p, size_t n);
uint64_t	kc_fnv1a64(uint64_t h, const void *p, size_t n);
/* The same over a NUL-terminated string (its NUL not included); NULL is "". */
uint32_t	kc_fnv1a32_str(uint32_t h, const char *s);
uint64_t	kc_fnv1a64_str(uint64_t h, const char *s);

struct kc_hmap_node {
	struct kc_hmap_node	*next;
	uint32_t		 hash;		/* set by kc_hmap_put() */
	char			*key;		/* set by the caller; owned by it */
};

/*
 * 'seed' is 0, or a random value the owner sets before the first put
 * (kc_random_u64()) when clients choose the keys: a seeded hash makes
 * long chains hard to provoke on purpose.
 */
struct kc_hmap {
	struct kc_hmap_node	**b;		/* NULL until the first put */
	size_t			  nb;		/* 0 or a power of two */
	size_t			  n;		/* elements */
	uint32_t		  seed;
};

#define KC_HMAP_INIT	{ NULL, 0, 0, 0 }

/* The element keyed 'key', or NULL. */
struct kc_hmap_node	*kc_hmap_get(const struct kc_hmap *, const char *key);

/*
 * Adds 'node', whose key the caller has set and which must not be in the
 * map yet (look it up first). 0, or -ENOMEM when the bucket array had to
 * grow and could not; the map is then unchanged.
 */
int	kc_hmap_put(struct kc_hmap *, struct kc_hmap_node *node) _must_check_;

/* Takes 'node', which is in the map, out of it. Never fails. */
void	kc_hmap_del(struct kc_hmap *, struct kc_hmap_node *node);

/*
 * Iteration in no particular order: 'i' (a size_t the caller keeps, 0 to
 * start) and the previous node (NULL to start) give the next node, or
 * NULL at the end. The current node may be deleted (and freed) before
 * the next call only if the caller fetched its successor first, as
 * KC_HMAP_FOREACH_SAFE does.
 */
struct kc_hmap_node	*kc_hmap_next(const struct kc_hmap *, size_t *i,
			    const struct kc_hmap_node *prev);

#define KC_HMAP_FOREACH_SAFE(n, tmp, i, map)				\
	for ((i) = 0, (n) = kc_hmap_next((map), &(i), NULL);		\
	    (n) != NULL && ((tmp) = kc_hmap_next((map), &(i), (n)), 1);	\
	    (n) = (tmp))

/*
 * Frees the bucket array and empties the map (the elements are the
 * caller's: free them first, with KC_HMAP_FOREACH_SAFE).
 */
void	kc_hmap_free(struct kc_hmap *);

#endif

/*
 * hash.c: FNV-1a and an intrusive chained hash map of string keys.
 *
 * The map keeps nb buckets, a power of two (64 at first), and doubles
 * them when it holds twice as many elements, so chains stay short. Each
 * node caches its key's 32-bit FNV-1a hash: a lookup compares strings only
 * on equal hashes, and growing never hashes a key again.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/hash.h>

#define HMAP_BUCKETS_MIN	64

uint32_t
kc_fnv1a32(uint32_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * UINT32_C(16777619);
	return h;
}

uint64_t
kc_fnv1a64(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * UINT64_C(1099511628211);
	return h;
}

uint32_t
kc_fnv1a32_str(uint32_t h, const char *s)
{
	for (; s != NULL && *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * UINT32_C(16777619);
	return h;
}

uint64_t
kc_fnv1a64_str(uint64_t h, const char *s)
{
	for (; s != NULL && *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
	return h;
}

struct kc_hmap_node *
kc_hmap_get(const struct kc_hmap *m, const char *key)
{
	uint32_t h;

	if (m->nb == 0)
		return NULL;
	h = kc_fnv1a32_str(KC_FNV1A32_INIT ^ m->seed, key);
	for (struct kc_hmap_node *e = m->b[h & (m->nb - 1)]; e != NULL; e = e->next)
		if (e->hash == h && strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

static int
hmap_grow(struct kc_hmap *m)
{
	size_t nb = m->nb != 0 ? m->nb * 2 : HMAP_BUCKETS_MIN;
	struct kc_hmap_node **b = kc_calloc(nb, sizeof(*b));

	if (b == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < m->nb; i++) {
		struct kc_hmap_node *e, *next;

		for (e = m->b[i]; e != NULL; e = next) {
			next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	}
	kc_free(m->b);
	m->b = b;
	m->nb = nb;
	return 0;
}

int
kc_hmap_put(struct kc_hmap *m, struct kc_hmap_node *e)
{
	struct kc_hmap_node **head;
	int r;

	if (m->n + 1 > m->nb * 2 && (r = hmap_grow(m)) < 0)
		return r;
	e->hash = kc_fnv1a32_str(KC_FNV1A32_INIT ^ m->seed, e->key);
	head = &m->b[e->hash & (m->nb - 1)];
	e->next = *head;
	*head = e;
	m->n++;
	return 0;
}

void
kc_hmap_del(struct kc_hmap *m, struct kc_hmap_node *e)
{
	struct kc_hmap_node **pp = &m->b[e->hash & (m->nb - 1)];

	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
	m->n--;
}

struct kc_hmap_node *
kc_hmap_next(const struct kc_hmap *m, size_t *i, const struct kc_hmap_node *prev)
{
	size_t j = *i;

	if (prev != NULL) {
		if (prev->next != NULL)
			return prev->next;
		j++;
	}
	for (; j < m->nb; j++) {
		if (m->b[j] != NULL) {
			*i = j;
			return m->b[j];
		}
	}
	*i = m->nb;
	return NULL;
}

void
kc_hmap_free(struct kc_hmap *m)
{
	m->b = kc_free(m->b);
	m->nb = 0;
	m->n = 0;
}

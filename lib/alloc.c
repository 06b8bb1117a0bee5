/*
 * alloc.c: the replaceable allocator, and the pool of blocks that live
 * long.
 *
 * All of libkc allocates through these wrappers so that tests can inject
 * failures (tests/fakes/fail_alloc.c). The hook is a plain pointer set
 * once at startup, one of the three mutable globals lib/ allows; the pool
 * below is the allocator's too.
 *
 * The pool (kc_keep_malloc()). At its first use it reserves KEEP_REGION
 * of address space (PROT_NONE: no memory) and carves 64 KiB slabs from
 * it, each made writable when carved and aligned to its size, so a
 * block's slab header is its address rounded down and kc_free() knows a
 * pool block by its address alone. A slab serves one size class; a class
 * keeps a list of its slabs with room, a block comes from a slab's free
 * list or, never used yet, from its end (so pages are touched only as
 * blocks need them). A slab whose last block is freed joins the empty
 * list, where any class may take it again, and kc_keep_trim() gives its
 * pages back (madvise). One mutex guards it all.
 *
 * Under AddressSanitizer, free blocks and never-used space are poisoned
 * and each block is followed by a poisoned 16-byte redzone, so a use
 * after free, a double free or an overflow past the block's size class
 * is reported as for malloc's blocks; the region is a LeakSanitizer
 * root, since pool blocks point at malloc's (a pool block that leaks is
 * not reported: kc_keep_stats() counts them).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/lsan_interface.h>
#define KEEP_REDZONE	16
#define POISON(p, n)	ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n)	ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define KEEP_REDZONE	0
#define POISON(p, n)	((void)(p), (void)(n))
#define UNPOISON(p, n)	((void)(p), (void)(n))
#endif

#include <kc/alloc.h>

#define KEEP_REGION	((size_t)1 << 30)	/* 16384 slabs: some 8 million pods */
#define KEEP_GRAIN	16
#define KEEP_CLASSES	(KC_KEEP_MAX / KEEP_GRAIN)

struct slab {
	struct slab	*next, *prev;	/* on its class's list or the empty list */
	void		*free;		/* freed blocks, linked by their first word */
	uint32_t	 cls;		/* block size / KEEP_GRAIN; 0 while empty */
	uint32_t	 used;		/* blocks handed out */
	uint32_t	 bump;		/* offset of the first block never handed out */
	bool		 listed;	/* on a list */
	bool		 released;	/* empty, its pages given back */
};

#define SLAB_HEAD	((sizeof(struct slab) + KEEP_GRAIN - 1) / KEEP_GRAIN * KEEP_GRAIN)

static pthread_mutex_t	 keep_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(uintptr_t) keep_base;		/* the region, once reserved */
static char		*keep_top;		/* the next slab to carve */
static bool		 keep_failed;		/* no region: kc_malloc() */
static struct slab	*keep_room[KEEP_CLASSES + 1];	/* slabs with room, by class */
static struct slab	*keep_empty;		/* empty slabs, for any class */
static struct kc_keep_stats keep_st;

static const struct kc_allocator libc_allocator = {
	.malloc = malloc,
	.realloc = realloc,
	.free = free,
};

static const struct kc_allocator *allocator = &libc_allocator;

void
kc_set_allocator(const struct kc_allocator *a)
{
	allocator = a != NULL ? a : &libc_allocator;
}

void *
kc_malloc(size_t n)
{
	return allocator->malloc(n == 0 ? 1 : n);
}

void *
kc_calloc(size_t n, size_t size)
{
	void *p;

	if (size != 0 && n > SIZE_MAX / size)
		return NULL;
	if ((p = kc_malloc(n * size)) != NULL)
		memset(p, 0, n * size);
	return p;
}

static bool	keep_owns(const void *p);
static size_t	keep_size(const void *p);
static void	keep_put(void *p);

void *
kc_realloc(void *p, size_t n)
{
	void *q;

	if (p != NULL && keep_owns(p)) {
		if ((q = kc_malloc(n)) == NULL)
			return NULL;
		memcpy(q, p, n < keep_size(p) ? n : keep_size(p));
		keep_put(p);
		return q;
	}
	return allocator->realloc(p, n == 0 ? 1 : n);
}

void *
kc_reallocarray(void *p, size_t n, size_t size)
{
	if (size != 0 && n > SIZE_MAX / size)
		return NULL;
	return kc_realloc(p, n * size);
}

char *
kc_strdup(const char *s)
{
	return s != NULL ? kc_memdup(s, strlen(s) + 1) : NULL;
}

char *
kc_strndup(const char *s, size_t n)
{
	char *p;
	size_t len;

	if (s == NULL)
		return NULL;
	len = strnlen(s, n);
	if ((p = kc_malloc(len + 1)) == NULL)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

void *
kc_memdup(const void *src, size_t n)
{
	void *p;

	if ((p = kc_malloc(n)) != NULL && n > 0)
		memcpy(p, src, n);
	return p;
}

void *
kc_free(void *p)
{
	if (p != NULL && keep_owns(p))
		keep_put(p);
	else if (p != NULL)
		allocator->free(p);
	return NULL;
}

void *
kc_free_secret(char *s)
{
	if (s != NULL)
		explicit_bzero(s, strlen(s));
	return kc_free(s);
}

/* ---- blocks that live long ----------------------------------------------- */

static size_t
block_size(uint32_t cls)
{
	return (size_t)cls * KEEP_GRAIN + KEEP_REDZONE;
}

static struct slab *
slab_of(const void *p)
{
	return (struct slab *)((uintptr_t)p & ~(uintptr_t)(KC_KEEP_SLAB - 1));
}

static bool
keep_owns(const void *p)
{
	uintptr_t base = atomic_load_explicit(&keep_base, memory_order_acquire);

	return base != 0 && (uintptr_t)p - base < KEEP_REGION;
}

/* The usable size of a live pool block (its class is fixed while it lives). */
static size_t
keep_size(const void *p)
{
	return (size_t)slab_of(p)->cls * KEEP_GRAIN;
}

static void
slab_link(struct slab **head, struct slab *s)
{
	s->prev = NULL;
	s->next = *head;
	if (*head != NULL)
		(*head)->prev = s;
	*head = s;
	s->listed = true;
}

static void
slab_unlink(struct slab **head, struct slab *s)
{
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		*head = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	s->next = s->prev = NULL;
	s->listed = false;
}

static bool
slab_full(const struct slab *s)
{
	return s->free == NULL && s->bump + block_size(s->cls) > KC_KEEP_SLAB;
}

/* Reserves the region (lock held): false when the system refuses. */
static bool
reserve(void)
{
	void *m;
	uintptr_t base;

	if (keep_failed)
		return false;
	m = mmap(NULL, KEEP_REGION + KC_KEEP_SLAB, PROT_NONE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		keep_failed = true;
		return false;
	}
	/* Slabs are aligned to their size: round up inside the reservation. */
	base = ((uintptr_t)m + KC_KEEP_SLAB - 1) & ~(uintptr_t)(KC_KEEP_SLAB - 1);
	keep_top = (char *)base;
#if defined(__SANITIZE_ADDRESS__)
	__lsan_register_root_region((void *)base, KEEP_REGION);
#endif
	atomic_store_explicit(&keep_base, base, memory_order_release);
	return true;
}

/* A slab for class 'cls': an empty one, or one carved anew (lock held). */
static struct slab *
slab_new(uint32_t cls)
{
	uintptr_t base = atomic_load_explicit(&keep_base, memory_order_relaxed);
	struct slab *s;

	if ((s = keep_empty) != NULL) {
		slab_unlink(&keep_empty, s);
		keep_st.empty--;
	} else {
		if (base == 0 && !reserve())
			return NULL;
		base = atomic_load_explicit(&keep_base, memory_order_relaxed);
		if ((uintptr_t)keep_top + KC_KEEP_SLAB > base + KEEP_REGION ||
		    mprotect(keep_top, KC_KEEP_SLAB, PROT_READ | PROT_WRITE) != 0)
			return NULL;
		s = (struct slab *)(void *)keep_top;
		keep_top += KC_KEEP_SLAB;
		keep_st.slabs++;
		POISON((char *)s + SLAB_HEAD, KC_KEEP_SLAB - SLAB_HEAD);
	}
	*s = (struct slab){ .cls = cls, .bump = SLAB_HEAD };
	return s;
}

void *
kc_keep_malloc(size_t n)
{
	struct slab *s;
	uint32_t cls;
	char *p = NULL;

	if (allocator != &libc_allocator || n == 0 || n > KC_KEEP_MAX)
		return kc_malloc(n);
	cls = (uint32_t)((n + KEEP_GRAIN - 1) / KEEP_GRAIN);
	(void)pthread_mutex_lock(&keep_mu);
	if ((s = keep_room[cls]) == NULL && (s = slab_new(cls)) != NULL)
		slab_link(&keep_room[cls], s);
	if (s != NULL) {
		if (s->free != NULL) {
			p = s->free;
			UNPOISON(p, sizeof(void *));
			s->free = *(void **)(void *)p;
		} else {
			p = (char *)s + s->bump;
			s->bump += (uint32_t)block_size(cls);
		}
		UNPOISON(p, (size_t)cls * KEEP_GRAIN);
		s->used++;
		keep_st.blocks++;
		keep_st.bytes += (size_t)cls * KEEP_GRAIN;
		if (slab_full(s))
			slab_unlink(&keep_room[cls], s);
	}
	(void)pthread_mutex_unlock(&keep_mu);
	return p != NULL ? p : kc_malloc(n);	/* no address space left */
}

void *
kc_keep_calloc(size_t n)
{
	void *p = kc_keep_malloc(n);

	if (p != NULL)
		memset(p, 0, n);
	return p;
}

static void
keep_put(void *p)
{
	struct slab *s = slab_of(p);

	(void)pthread_mutex_lock(&keep_mu);
	*(void **)p = s->free;
	s->free = p;
	POISON(p, (size_t)s->cls * KEEP_GRAIN);
	s->used--;
	keep_st.blocks--;
	keep_st.bytes -= (size_t)s->cls * KEEP_GRAIN;
	if (!s->listed)
		slab_link(&keep_room[s->cls], s);	/* it was full */
	if (s->used == 0) {
		slab_unlink(&keep_room[s->cls], s);
		*s = (struct slab){ .bump = SLAB_HEAD };
		slab_link(&keep_empty, s);
		keep_st.empty++;
	}
	(void)pthread_mutex_unlock(&keep_mu);
}

size_t
kc_keep_trim(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = 0;

	(void)pthread_mutex_lock(&keep_mu);
	for (struct slab *s = keep_empty; s != NULL; s = s->next) {
		if (s->released || page < SLAB_HEAD || page >= KC_KEEP_SLAB)
			continue;
		/* The header's page stays: the slab is on the empty list. */
		if (madvise((char *)s + page, KC_KEEP_SLAB - page, MADV_DONTNEED) == 0) {
			s->released = true;
			n += KC_KEEP_SLAB - page;
		}
	}
	(void)pthread_mutex_unlock(&keep_mu);
	return n;
}

void
kc_keep_stats(struct kc_keep_stats *ret)
{
	(void)pthread_mutex_lock(&keep_mu);
	*ret = keep_st;
	(void)pthread_mutex_unlock(&keep_mu);
}

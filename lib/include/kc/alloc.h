/*
 * The replaceable allocator. Every allocation libkc makes goes through
 * kc_malloc() and friends, so a test can install a failing allocator
 * (tests/fakes/fail_alloc.c) and walk every error path. json-c, libcurl
 * and libyaml allocate on their own. Long-lived cache entries come from
 * kc_keep_malloc() (below).
 */
#ifndef KC_ALLOC_H
#define KC_ALLOC_H

#include <stddef.h>

#include <kc/macro.h>

struct kc_allocator {
	void	*(*malloc)(size_t);
	void	*(*realloc)(void *, size_t);
	void	 (*free)(void *);
};

/*
 * Installs 'a' (NULL restores libc's). Call it once at startup, before
 * any thread starts; tests call it between cases. Not thread-safe.
 */
void	 kc_set_allocator(const struct kc_allocator *a);

/*
 * The libc functions through the installed allocator: NULL on failure
 * (the caller returns -ENOMEM), never a NULL for a zero size. Memory from
 * them is released with kc_free(). Thread-safe whenever the installed
 * allocator is (libc's is).
 */
void	*kc_malloc(size_t) _must_check_;
void	*kc_calloc(size_t n, size_t size) _must_check_;	/* overflow-checked */
void	*kc_realloc(void *, size_t) _must_check_;
void	*kc_reallocarray(void *, size_t n, size_t size) _must_check_;
char	*kc_strdup(const char *) _must_check_;		/* NULL in, NULL out */
char	*kc_strndup(const char *, size_t) _must_check_;
void	*kc_memdup(const void *, size_t) _must_check_;

/*
 * Blocks that live long: the entries of a cache, kept for as long as the
 * object they describe (hours), made in bursts among many short-lived
 * blocks. glibc would place them between those, and once the burst's
 * blocks are freed each page that holds one cache entry stays resident:
 * a cache of 300 bytes a pod took 900 bytes of RSS. These come instead
 * from pages of their own (64 KiB slabs of one size class, 16 to
 * KC_KEEP_MAX bytes in steps of 16), so the burst's pages go back whole.
 * Free them with kc_free() (or kc_realloc()) like any other block. A
 * larger size, an installed allocator (tests) or no address space left
 * falls back to kc_malloc(). NULL on allocation failure. Thread-safe (one
 * mutex; a cache makes a few per object change).
 */
#define KC_KEEP_MAX	1024

void	*kc_keep_malloc(size_t) _must_check_;
void	*kc_keep_calloc(size_t) _must_check_;	/* zeroed */

/*
 * Gives the pages of slabs that emptied back to the system: for a
 * program's trimmer, beside malloc_trim(). Returns the bytes released.
 * Thread-safe.
 */
size_t	 kc_keep_trim(void);

struct kc_keep_stats {
	size_t	 blocks;	/* handed out, not freed */
	size_t	 bytes;		/* their size classes summed */
	size_t	 slabs;		/* carved so far (KC_KEEP_SLAB bytes each) */
	size_t	 empty;		/* of those, empty: in no class */
};

#define KC_KEEP_SLAB	(64u << 10)

/* A snapshot of the counters. Thread-safe. */
void	 kc_keep_stats(struct kc_keep_stats *ret);

/* Frees and returns NULL: "p = kc_free(p);". */
void	*kc_free(void *);

static inline void
kc_freep(void *p)
{
	*(void **)p = kc_free(*(void **)p);
}

/* Frees a string and overwrites it first: for tokens and keys. */
void	*kc_free_secret(char *);

#endif

/*
 * The replaceable allocator. Every allocation libkc makes goes through
 * kc_malloc() and friends, so a test can install a failing allocator
 * (tests/fakes/fail_alloc.c) and walk every error path. json-c, libcurl
 * and libyaml allocate on their own.
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

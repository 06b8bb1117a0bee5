/*
 * alloc.c: the replaceable allocator.
 *
 * All of libkc allocates through these wrappers so that tests can inject
 * failures (tests/fakes/fail_alloc.c). The hook is a plain pointer set
 * once at startup, one of the three mutable globals lib/ allows.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>

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

void *
kc_realloc(void *p, size_t n)
{
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
	if (p != NULL)
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

/*
 * buf.c: bounded growable buffers.
 *
 * The invariant: either data is NULL (len == cap == 0) or data holds len
 * bytes plus a NUL, in cap bytes, with len <= max. Every failing append
 * frees the buffer before returning, so callers never see a partial one.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/buf.h>

void
kc_buf_init(struct kc_buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void
kc_buf_free(struct kc_buf *b)
{
	b->data = kc_free(b->data);
	b->len = 0;
	b->cap = 0;
}

void
kc_buf_reset(struct kc_buf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

static int
buf_fail(struct kc_buf *b, int r)
{
	kc_buf_free(b);
	return r;
}

/* Makes room for 'n' more bytes plus the NUL. */
static int
buf_reserve(struct kc_buf *b, size_t n)
{
	size_t need, cap;
	char *p;

	if (n > b->max || b->len > b->max - n)
		return buf_fail(b, -E2BIG);
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap != 0 ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (b->max < SIZE_MAX && cap > b->max + 1)
		cap = b->max + 1;
	if ((p = kc_realloc(b->data, cap)) == NULL)
		return buf_fail(b, -ENOMEM);
	b->data = p;
	b->cap = cap;
	return 0;
}

int
kc_buf_append(struct kc_buf *b, const void *src, size_t n)
{
	int r;

	if ((r = buf_reserve(b, n)) < 0)
		return r;
	if (n > 0)
		memcpy(b->data + b->len, src, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int
kc_buf_puts(struct kc_buf *b, const char *s)
{
	return kc_buf_append(b, s, strlen(s));
}

int
kc_buf_putc(struct kc_buf *b, char c)
{
	return kc_buf_append(b, &c, 1);
}

int
kc_buf_vprintf(struct kc_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n, r;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return buf_fail(b, -EINVAL);
	if ((r = buf_reserve(b, (size_t)n)) < 0)
		return r;
	(void)vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int
kc_buf_printf(struct kc_buf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = kc_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return r;
}

const char *
kc_buf_str(const struct kc_buf *b)
{
	return b->data != NULL ? b->data : "";
}

char *
kc_buf_take(struct kc_buf *b, size_t *ret_len)
{
	char *p;

	if (b->data == NULL) {
		if ((p = kc_strdup("")) == NULL)
			return NULL;
	} else
		p = b->data;
	if (ret_len != NULL)
		*ret_len = b->len;
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}

/*
 * sbuf.c: bounded string building, and Go's strconv.Quote.
 *
 * The invariant: buf[0..used) holds the text written so far and buf[used]
 * is its NUL (when size > 0); len >= used counts what was asked for. A
 * unit (a byte of ASCII, a UTF-8 sequence, an escape) is written whole
 * or, once one did not fit, not at all: 'full' stops every later write,
 * so the buffer holds a prefix of the text, never one with holes.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <kc/sbuf.h>
#include <kc/str.h>

void
kc_sbuf_init(struct kc_sbuf *b, char *buf, size_t size)
{
	b->buf = buf;
	b->size = size;
	b->len = 0;
	b->used = 0;
	b->flags = 0;
	b->full = false;
	if (size > 0)
		buf[0] = '\0';
}

/* Writes one unit, s[0..n), whole or not at all, keeping 'reserve' free. */
static void
unit(struct kc_sbuf *b, const char *s, size_t n, size_t reserve)
{
	b->len += n;
	if (b->full)
		return;
	if (b->size == 0 || b->used + n + reserve >= b->size) {
		b->full = true;
		return;
	}
	memcpy(b->buf + b->used, s, n);
	b->used += n;
	b->buf[b->used] = '\0';
}

static void
raw(struct kc_sbuf *b, const char *s, size_t n, size_t reserve)
{
	if (!(b->flags & KC_SBUF_HTML)) {
		unit(b, s, n, reserve);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '&')
			unit(b, "&amp;", 5, reserve);
		else if (s[i] == '<')
			unit(b, "&lt;", 4, reserve);
		else if (s[i] == '>')
			unit(b, "&gt;", 4, reserve);
		else
			unit(b, s + i, 1, reserve);
	}
}

void
kc_sbuf_putc(struct kc_sbuf *b, char c)
{
	raw(b, &c, 1, 0);
}

/* Appends s[0..n) cut only between UTF-8 sequences (invalid bytes alone). */
static void
put_text(struct kc_sbuf *b, const char *s, size_t n, size_t reserve)
{
	for (size_t i = 0; i < n;) {
		uint32_t c;
		size_t w = kc_utf8_decode(s + i, n - i, &c);

		if (w == 0)
			w = 1;
		raw(b, s + i, w, reserve);
		i += w;
	}
}

void
kc_sbuf_put(struct kc_sbuf *b, const char *s, size_t n)
{
	put_text(b, s, n, 0);
}

void
kc_sbuf_puts(struct kc_sbuf *b, const char *s)
{
	if (s != NULL)
		put_text(b, s, strlen(s), 0);
}

void
kc_sbuf_printf(struct kc_sbuf *b, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		put_text(b, small, (size_t)n, 0);
		return;
	}
	/* Longer than the scratch buffer: format straight into place. */
	if (!b->full && b->size > 0 && b->used + (size_t)n < b->size &&
	    !(b->flags & KC_SBUF_HTML)) {
		va_start(ap, fmt);
		(void)vsnprintf(b->buf + b->used, b->size - b->used, fmt, ap);
		va_end(ap);
		b->used += (size_t)n;
		b->len += (size_t)n;
		return;
	}
	put_text(b, small, sizeof(small) - 1, 0);
	b->len += (size_t)n - (sizeof(small) - 1);
	b->full = true;
}

static void
escape(struct kc_sbuf *b, char kind, uint32_t v, int digits, size_t reserve)
{
	static const char hex[] = "0123456789abcdef";
	char e[10];
	size_t n = 0;

	e[n++] = '\\';
	e[n++] = kind;
	while (digits-- > 0)
		e[n++] = hex[(v >> (4 * digits)) & 0xf];
	raw(b, e, n, reserve);
}

/* strconv's appendEscapedRune() for a double-quoted string. */
static void
quote_rune(struct kc_sbuf *b, const char *s, size_t w, uint32_t r, size_t reserve)
{
	static const char named[] = "abtnvfr";	/* \a (7) to \r (13) */
	char e[2] = { '\\', 0 };

	if (r == '"' || r == '\\') {
		e[1] = (char)r;
		raw(b, e, 2, reserve);
	} else if (kc_rune_is_print(r))
		raw(b, s, w, reserve);
	else if (r >= 7 && r <= 13) {
		e[1] = named[r - 7];
		raw(b, e, 2, reserve);
	} else if (r < ' ' || r == 0x7f)
		escape(b, 'x', r, 2, reserve);
	else if (r < 0x10000)
		escape(b, 'u', r, 4, reserve);
	else
		escape(b, 'U', r, 8, reserve);
}

static void
quote_body(struct kc_sbuf *b, const char *s, size_t n, size_t reserve)
{
	for (size_t i = 0; i < n;) {
		uint32_t r;
		size_t w = kc_utf8_decode(s + i, n - i, &r);

		if (w == 0) {
			escape(b, 'x', (unsigned char)s[i], 2, reserve);
			i++;
			continue;
		}
		quote_rune(b, s + i, w, r, reserve);
		i += w;
	}
}

void
kc_sbuf_quote_inner(struct kc_sbuf *b, const char *s, size_t n)
{
	quote_body(b, s, n, 0);
}

void
kc_sbuf_quote(struct kc_sbuf *b, const char *s, size_t n)
{
	bool was_full = b->full;

	raw(b, "\"", 1, 1);
	if (b->full && !was_full) {
		/* Not even the quotes fit. */
		b->len++;
		quote_body(b, s, n, 1);
		return;
	}
	quote_body(b, s, n, 1);
	if (b->full && !was_full) {
		/* Cut: close the quote in the byte kept for it. */
		b->full = false;
		unit(b, "\"", 1, 0);
		b->full = true;
		return;
	}
	unit(b, "\"", 1, 0);
}

bool
kc_sbuf_truncated(const struct kc_sbuf *b)
{
	return b->full;
}

size_t
kc_sbuf_end(const struct kc_sbuf *b)
{
	return b->len;
}

const char *
kc_sbuf_quoted_len(char *buf, size_t size, const char *s, size_t n)
{
	struct kc_sbuf b;

	kc_sbuf_init(&b, buf, size);
	kc_sbuf_quote(&b, s, n);
	return buf;
}

const char *
kc_sbuf_quoted(char *buf, size_t size, const char *s)
{
	return kc_sbuf_quoted_len(buf, size, s != NULL ? s : "", s != NULL ? strlen(s) : 0);
}

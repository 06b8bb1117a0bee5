/*
 * sbuf.c: bounded string building, and Go's strconv.Quote.
 *
 * The invariant: buf[0..used) holds the text written so far and buf[used]
 * is its NUL (when size > 0); len >= used counts what was asked for. A
 * unit (a byte of ASCII, a UTF-8 sequence, an escape) is written whole
 * or, once one did not fit, not at all: 'full' stops every later write,
 * so the buffer holds a prefix of the text, never one with holes.
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* ---- Go's shortest float formatting ---------------------------------------- */

/* The shortest decimal digits that read back as 'a' (> 0, finite): 0.d x 10^dp. */
struct fdigits {
	char	d[24];
	int	nd;
	int	dp;
};

static void
float_digits(double a, bool single, struct fdigits *g)
{
	char tmp[48], *p;
	int prec;

	for (prec = 1; prec < (single ? 9 : 17); prec++) {
		(void)snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, a);
		if (single ? (double)strtof(tmp, NULL) == a : strtod(tmp, NULL) == a)
			break;
	}
	(void)snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, a);
	g->nd = 0;
	for (p = tmp; *p != 'e' && *p != '\0'; p++)
		if (*p >= '0' && *p <= '9' && g->nd < (int)sizeof(g->d))
			g->d[g->nd++] = *p;
	while (g->nd > 1 && g->d[g->nd - 1] == '0')
		g->nd--;
	g->dp = (*p == 'e' ? (int)strtol(p + 1, NULL, 10) : 0) + 1;
}

/* strconv's %e layout of the digits: d.ddde+XX ('json': e-7, not e-07). */
static void
float_layout_e(struct kc_sbuf *b, const struct fdigits *g, bool json)
{
	int e = g->dp - 1;

	kc_sbuf_putc(b, g->d[0]);
	if (g->nd > 1) {
		kc_sbuf_putc(b, '.');
		kc_sbuf_put(b, g->d + 1, (size_t)g->nd - 1);
	}
	if (json && e < 0 && e > -10)
		kc_sbuf_printf(b, "e-%d", -e);
	else
		kc_sbuf_printf(b, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
}

/* strconv's %f layout with exactly the digits there are. */
static void
float_layout_f(struct kc_sbuf *b, const struct fdigits *g)
{
	int k;

	if (g->dp <= 0)
		kc_sbuf_putc(b, '0');
	for (k = 0; k < g->dp; k++)
		kc_sbuf_putc(b, k < g->nd ? g->d[k] : '0');
	if (g->nd > g->dp) {
		kc_sbuf_putc(b, '.');
		for (k = g->dp; k < 0; k++)
			kc_sbuf_putc(b, '0');
		for (k = g->dp > 0 ? g->dp : 0; k < g->nd; k++)
			kc_sbuf_putc(b, g->d[k]);
	}
}

void
kc_sbuf_float(struct kc_sbuf *b, double v, enum kc_float_style style)
{
	bool single = style == KC_FLOAT_G32;
	struct fdigits g = { .d = "0", .nd = 1, .dp = 1 };
	double a;
	bool e;

	if (single && isfinite(v))
		v = (double)(float)v;
	if (isnan(v) || isinf(v)) {
		kc_sbuf_puts(b, style == KC_FLOAT_JSON ? "null" : isnan(v) ? "NaN" :
		    v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (signbit(v))
		kc_sbuf_putc(b, '-');
	a = fabs(v);
	if (a != 0)
		float_digits(a, single, &g);
	if (style == KC_FLOAT_JSON)
		e = a != 0 && (a < 1e-6 || a >= 1e21);
	else
		e = a != 0 && (g.dp - 1 < -4 || g.dp - 1 >= 6);
	if (e)
		float_layout_e(b, &g, style == KC_FLOAT_JSON);
	else
		float_layout_f(b, &g);
}

const char *
kc_sbuf_float_str(char *buf, size_t size, double v, enum kc_float_style style)
{
	struct kc_sbuf b;

	kc_sbuf_init(&b, buf, size);
	kc_sbuf_float(&b, v, style);
	return buf;
}

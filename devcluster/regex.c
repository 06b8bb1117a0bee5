/*
 * regex.c: the patterns of CRD schemas (the "pattern" keyword, and the
 * formats checked by a regular expression), as Go's RE2 reads them.
 *
 * Patterns are ECMA-262 in the CRD and Go RE2 upstream; here they are
 * translated to POSIX extended expressions (regcomp) run in the C.UTF-8
 * locale, so "." is one character: \d \D \w \W \s \S (also inside
 * brackets, except the negated ones), \t \n \r \f \v, \xHH, \x{H...},
 * \b \B \A \z, escaped punctuation, (?:...), (?P<name>...), lazy
 * quantifiers (which cannot change whether a match exists) and a leading
 * (?i) are translated. Lookaround, backreferences and \u are invalid, as in
 * Go. Unicode classes (\p{L}), other flags and \Q...\E are not translated:
 * such a pattern is accepted in a CRD and never fails a value. Invalid
 * patterns are reported with regcomp's words where Go's differ.
 *
 * The translation writes into a bounded string builder (schema_int.h);
 * the module keeps no state and never logs.
 */
#include <errno.h>
#include <locale.h>
#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <kc/str.h>

#include "regex.h"
#include "schema_int.h"

enum re_result {
	RE_OK,
	RE_UNSUPPORTED,		/* valid upstream, but not translatable: skip */
	RE_INVALID,		/* Go's regexp would reject it too */
};

static bool
is_ere_special(char c)
{
	return strchr(".[]()*+?{}|^$\\", c) != NULL;
}

/* \xHH or \x{H...}: the code point; the number of bytes after "\x" used. */
static size_t
parse_hex_escape(const char *p, uint32_t *ret)
{
	uint32_t c = 0;
	size_t i;

	if (p[0] == '{') {
		for (i = 1; p[i] != '}'; i++) {
			if (kc_hex_digit(p[i]) < 0 || i > 8)
				return 0;
			c = c * 16 + (uint32_t)kc_hex_digit(p[i]);
		}
		if (i == 1 || c > 0x10ffff)
			return 0;
		*ret = c;
		return i + 1;
	}
	if (kc_hex_digit(p[0]) < 0 || kc_hex_digit(p[1]) < 0)
		return 0;
	*ret = (uint32_t)(kc_hex_digit(p[0]) * 16 + kc_hex_digit(p[1]));
	return 2;
}

static void
re_why(char *why, size_t size, const char *what, const char *p, size_t n)
{
	(void)snprintf(why, size, "error parsing regexp: %s: `%.*s`", what, (int)n, p);
}

/* A literal code point outside brackets. */
static enum re_result
re_literal(struct kc_sbuf *o, uint32_t c)
{
	char u[4];
	size_t n;

	if (c == 0)
		return RE_UNSUPPORTED;
	n = kc_utf8_encode(c, u);
	if (n == 1 && is_ere_special(u[0]))
		kc_sbuf_putc(o, '\\');
	kc_sbuf_put(o, u, n);
	return RE_OK;
}

/* A bracket expression starting after '['; '*pp' ends after its ']'. */
static enum re_result
re_bracket(const char **pp, struct kc_sbuf *o, const char *pat, char *why, size_t wsize)
{
	const char *p = *pp;
	bool negate = false, rb = false, dash = false, caret = false;
	char body[MSG_MAX];
	struct kc_sbuf b;

	kc_sbuf_init(&b, body, sizeof(body));
	if (*p == '^') {
		negate = true;
		p++;
	}
	if (*p == ']') {
		rb = true;
		p++;
	}
	for (;;) {
		if (*p == '\0') {
			re_why(why, wsize, "missing closing ]", *pp - 1, strlen(*pp - 1));
			return RE_INVALID;
		}
		if (*p == ']')
			break;
		if (*p == '[' && p[1] == ':') {
			const char *end = strstr(p + 2, ":]");

			if (end == NULL) {
				re_why(why, wsize, "missing closing ]", *pp - 1, strlen(*pp - 1));
				return RE_INVALID;
			}
			kc_sbuf_put(&b, p, (size_t)(end + 2 - p));
			p = end + 2;
			continue;
		}
		if (*p != '\\') {
			if (*p == '[')
				kc_sbuf_putc(&b, '[');
			else
				kc_sbuf_putc(&b, *p);
			p++;
			continue;
		}
		p++;
		switch (*p) {
		case 'd': kc_sbuf_puts(&b, "0-9"); break;
		case 'w': kc_sbuf_puts(&b, "A-Za-z0-9_"); break;
		case 's': kc_sbuf_puts(&b, "\t\n\f\r "); break;
		case 'D': case 'W': case 'S': case 'p': case 'P':
			return RE_UNSUPPORTED;
		case 't': kc_sbuf_putc(&b, '\t'); break;
		case 'n': kc_sbuf_putc(&b, '\n'); break;
		case 'r': kc_sbuf_putc(&b, '\r'); break;
		case 'f': kc_sbuf_putc(&b, '\f'); break;
		case 'v': kc_sbuf_putc(&b, '\v'); break;
		case 'x': {
			uint32_t c;
			size_t used = parse_hex_escape(p + 1, &c);
			char u[4];

			if (used == 0) {
				re_why(why, wsize, "invalid escape sequence", p - 1, 2);
				return RE_INVALID;
			}
			if (c == 0)
				return RE_UNSUPPORTED;
			if (c == ']')
				rb = true;
			else if (c == '-')
				dash = true;
			else if (c == '^')
				caret = true;
			else
				kc_sbuf_put(&b, u, kc_utf8_encode(c, u));
			p += used;
			break;
		}
		case ']': rb = true; break;
		case '-': dash = true; break;
		case '^': caret = true; break;
		case '\0':
			re_why(why, wsize, "trailing backslash at end of expression", "", 0);
			return RE_INVALID;
		default:
			if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			    (*p >= '0' && *p <= '9')) {
				re_why(why, wsize, "invalid escape sequence", p - 1, 2);
				return RE_INVALID;
			}
			kc_sbuf_putc(&b, *p);
		}
		p++;
	}
	*pp = p + 1;
	if (!negate && caret && !rb && !dash && kc_sbuf_end(&b) == 0) {
		kc_sbuf_puts(o, "\\^");
		return RE_OK;
	}
	if (!negate && !rb && !caret && !dash && kc_sbuf_end(&b) == 0) {
		re_why(why, wsize, "missing closing ]", pat, strlen(pat));
		return RE_INVALID;
	}
	kc_sbuf_putc(o, '[');
	if (negate)
		kc_sbuf_putc(o, '^');
	if (rb)
		kc_sbuf_putc(o, ']');
	kc_sbuf_puts(o, body);
	if (caret)
		kc_sbuf_putc(o, '^');
	if (dash)
		kc_sbuf_putc(o, '-');
	kc_sbuf_putc(o, ']');
	return RE_OK;
}

/* Whether 'p' (after '{') is a repetition "n}", "n,}" or "n,m}". */
static bool
re_interval(const char *p)
{
	size_t i = 0;

	if (!(p[i] >= '0' && p[i] <= '9'))
		return false;
	while (p[i] >= '0' && p[i] <= '9')
		i++;
	if (p[i] == ',') {
		i++;
		while (p[i] >= '0' && p[i] <= '9')
			i++;
	}
	return p[i] == '}';
}

static enum re_result
re_translate(const char *pat, struct kc_sbuf *o, int *cflags, char *why, size_t wsize)
{
	const char *p = pat;
	bool quantified = false;	/* the last item was a quantifier */
	int depth = 0;
	enum re_result r;

	if (strncmp(p, "(?i)", 4) == 0) {
		*cflags |= REG_ICASE;
		p += 4;
	}
	while (*p != '\0') {
		bool q = false;

		switch (*p) {
		case '\\':
			p++;
			switch (*p) {
			case 'd': kc_sbuf_puts(o, "[0-9]"); break;
			case 'D': kc_sbuf_puts(o, "[^0-9]"); break;
			case 'w': kc_sbuf_puts(o, "[A-Za-z0-9_]"); break;
			case 'W': kc_sbuf_puts(o, "[^A-Za-z0-9_]"); break;
			case 's': kc_sbuf_puts(o, "[\t\n\f\r ]"); break;
			case 'S': kc_sbuf_puts(o, "[^\t\n\f\r ]"); break;
			case 't': kc_sbuf_putc(o, '\t'); break;
			case 'n': kc_sbuf_putc(o, '\n'); break;
			case 'r': kc_sbuf_putc(o, '\r'); break;
			case 'f': kc_sbuf_putc(o, '\f'); break;
			case 'v': kc_sbuf_putc(o, '\v'); break;
			case 'b': kc_sbuf_puts(o, "\\b"); break;
			case 'B': kc_sbuf_puts(o, "\\B"); break;
			case 'A': kc_sbuf_putc(o, '^'); break;
			case 'z': kc_sbuf_putc(o, '$'); break;
			case 'p': case 'P': case 'Q': case 'E': case 'C':
				return RE_UNSUPPORTED;
			case 'x': {
				uint32_t c;
				size_t used = parse_hex_escape(p + 1, &c);

				if (used == 0) {
					re_why(why, wsize, "invalid escape sequence", p - 1, 2);
					return RE_INVALID;
				}
				if ((r = re_literal(o, c)) != RE_OK)
					return r;
				p += used;
				break;
			}
			case '\0':
				re_why(why, wsize, "trailing backslash at end of expression", "", 0);
				return RE_INVALID;
			default:
				if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
				    (*p >= '0' && *p <= '9')) {
					re_why(why, wsize, "invalid escape sequence", p - 1, 2);
					return RE_INVALID;
				}
				if (is_ere_special(*p))
					kc_sbuf_putc(o, '\\');
				kc_sbuf_putc(o, *p);
			}
			p++;
			break;
		case '[':
			p++;
			if ((r = re_bracket(&p, o, pat, why, wsize)) != RE_OK)
				return r;
			break;
		case '(':
			depth++;
			if (p[1] != '?') {
				kc_sbuf_putc(o, '(');
				p++;
				break;
			}
			if (p[2] == ':') {
				kc_sbuf_putc(o, '(');
				p += 3;
			} else if (p[2] == 'P' && p[3] == '<') {
				const char *end = strchr(p, '>');

				if (end == NULL) {
					re_why(why, wsize, "invalid named capture", p, strlen(p));
					return RE_INVALID;
				}
				kc_sbuf_putc(o, '(');
				p = end + 1;
			} else if (p[2] == '=' || p[2] == '!' ||
			    (p[2] == '<' && (p[3] == '=' || p[3] == '!'))) {
				re_why(why, wsize, "invalid or unsupported Perl syntax", p,
				    p[2] == '<' ? 4 : 3);
				return RE_INVALID;
			} else
				return RE_UNSUPPORTED;
			break;
		case ')':
			if (depth == 0) {
				re_why(why, wsize, "unexpected )", pat, strlen(pat));
				return RE_INVALID;
			}
			depth--;
			kc_sbuf_putc(o, ')');
			p++;
			break;
		case '*':
		case '+':
		case '?':
			if (quantified) {
				if (*p == '?') {	/* lazy: same matches */
					p++;
					break;
				}
				re_why(why, wsize, "invalid nested repetition operator", p - 1, 2);
				return RE_INVALID;
			}
			kc_sbuf_putc(o, *p);
			p++;
			q = true;
			break;
		case '{':
			if (re_interval(p + 1)) {
				const char *end = strchr(p, '}'), *comma = strchr(p, ',');
				long lo = strtol(p + 1, NULL, 10), hi = lo;

				if (comma != NULL && comma < end)
					hi = comma + 1 < end ? strtol(comma + 1, NULL, 10) : lo;
				/* Go refuses counts over 1000, as RE2 does. */
				if (lo > 1000 || hi > 1000 || hi < lo) {
					re_why(why, wsize, "invalid repeat count", p,
					    (size_t)(end - p) + 1);
					return RE_INVALID;
				}
				if (quantified) {
					re_why(why, wsize, "invalid nested repetition operator", p,
					    (size_t)(end - p) + 1);
					return RE_INVALID;
				}
				kc_sbuf_put(o, p, (size_t)(end - p) + 1);
				p = end + 1;
				q = true;
			} else {
				kc_sbuf_puts(o, "\\{");
				p++;
			}
			break;
		case '}':
			kc_sbuf_puts(o, "\\}");
			p++;
			break;
		default:
			kc_sbuf_putc(o, *p);
			p++;
		}
		quantified = q;
	}
	if (depth > 0) {
		re_why(why, wsize, "missing closing )", pat, strlen(pat));
		return RE_INVALID;
	}
	return RE_OK;
}

int
regex_run(const char *pat, const char *subject, size_t slen, char *why, size_t wsize)
{
	char ere[4 * MSG_MAX];
	locale_t loc, old = (locale_t)0;
	int cflags = REG_EXTENDED | REG_NOSUB, r, ret;
	regex_t re;
	struct kc_sbuf o;

	kc_sbuf_init(&o, ere, sizeof(ere));
	switch (re_translate(pat, &o, &cflags, why, wsize)) {
	case RE_UNSUPPORTED:
		return 2;
	case RE_INVALID:
		return -1;
	case RE_OK:
		break;
	}
	if (kc_sbuf_end(&o) >= sizeof(ere) - 1)
		return 2;
	loc = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
	if (loc != (locale_t)0)
		old = uselocale(loc);
	r = regcomp(&re, ere, cflags);
	if (r != 0) {
		char msg[256];

		/* An expression regcomp cannot hold is too large, as for Go. */
		if (r == REG_ESPACE)
			(void)kc_strlcpy(msg, "expression too large", sizeof(msg));
		else
			(void)regerror(r, &re, msg, sizeof(msg));
		ret = -1;
		(void)snprintf(why, wsize, "error parsing regexp: %s: `%s`", msg, pat);
	} else {
		ret = 1;
		if (subject != NULL) {
			regmatch_t m[1];

			m[0].rm_so = 0;
			m[0].rm_eo = (regoff_t)slen;
			r = regexec(&re, subject, 1, m, REG_STARTEND);
			ret = r == 0 ? 1 : r == REG_NOMATCH ? 0 : -ENOMEM;
		}
		regfree(&re);
	}
	if (loc != (locale_t)0) {
		(void)uselocale(old);
		freelocale(loc);
	}
	return ret;
}


/*
 * jsonpath.c: the Kubernetes JSONPath template language, compiled once and
 * evaluated many times.
 *
 * Model. The parser follows k8s.io/client-go/util/jsonpath/parser.go rule
 * for rule, because CRD printer columns are only as good as their fidelity
 * to it: a template is a list of text runs and actions; an action is a
 * list of nodes (field, array slice, filter, wildcard, recursive descent,
 * union, number, boolean, quoted text, identifier). Upstream re-parses some
 * substrings as new actions: every union member ("[0,'a']" gives "[0]" and
 * "['a']"), a quoted key ("['a.b']" gives ".a.b", two keys) and each side
 * of a filter. So does this file, with a depth bound. Upstream's parser
 * recurses once per token; this one loops.
 *
 * The program owns every node and string it allocates through one
 * ownership table, so a failed parse frees everything with
 * jsonpath_free(), and a parsed program is never written again.
 *
 * Evaluation mirrors jsonpath.go: a step maps a list of values to a list
 * of values; missing keys give nothing (JSONPATH_ALLOW_MISSING) or an
 * error; a JSON null is a nil interface and is skipped by most steps;
 * filter comparisons follow the forked text/template rules (no mixing of
 * int and float, strings compare bytewise). Range blocks keep upstream's
 * counters (beginRange, inRange, endRange, the last end reached) in a
 * per-call context, which also counts steps, values and lists against
 * fixed ceilings so no template can make an evaluation run away.
 *
 * Known differences from upstream, all outside what printer columns use:
 * every non-ASCII byte counts as a letter (upstream asks Unicode); object
 * members are visited in document order where Go visits a map in random
 * order (* and ..); and upstream's FindResults()
 * leaves its parser truncated after a range block, so a reused upstream
 * program loses its leading nodes, which this one does not.
 *
 *	struct jsonpath *jp;
 *	struct jsonpath_results res;
 *	if ((r = jsonpath_parse_column(".status.conditions[?(@.type==\"Ready\")]"
 *	    ".status", &jp, &st)) < 0)
 *		return r;
 *	if (jsonpath_find(jp, run, JSONPATH_ALLOW_MISSING, &res, &st) == 0) {
 *		... res.lists[0].vals[0] ...
 *		jsonpath_results_free(&res);
 *	}
 *	jp = jsonpath_free(jp);
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/err.h>
#include <kc/sbuf.h>
#include <kc/str.h>

#include "jsonpath.h"

#define END_OF_INPUT	(-1)
#define STEPS_MAX	(1u << 24)	/* node evaluations per jsonpath_find() */
#define EVAL_DEPTH_MAX	128		/* range nesting plus .. recursion */
#define SPRINT_DEPTH	8		/* nesting shown in error messages */

/*
 * The program
 */

enum ntype {
	N_TEXT,		/* s: text run or unquoted string */
	N_LIST,		/* u.list: an action, a union member, a filter side */
	N_FIELD,	/* s: the key, backslashes removed */
	N_ARRAY,	/* u.p: start, end, step */
	N_FILTER,	/* u.filter */
	N_INT,
	N_FLOAT,
	N_BOOL,
	N_WILDCARD,
	N_RECURSIVE,
	N_UNION,	/* u.list: N_LIST nodes */
	N_IDENT,	/* s: "range", "end" or anything else */
};

struct param {
	int64_t		value;
	bool		known;
	bool		derived;
};

enum fop {
	F_EXISTS, F_LT, F_GT, F_EQ, F_NE, F_LE, F_GE, F_UNKNOWN,
};

struct nlist {
	struct node	**v;
	size_t		  n;
	size_t		  cap;
};

struct node {
	enum ntype	 type;
	struct kc_str	 s;		/* N_TEXT, N_FIELD, N_IDENT; filter operator */
	union {
		int64_t		 i;
		double		 f;
		bool		 b;
		struct param	 p[3];
		struct nlist	*list;
		struct {
			struct nlist	*left;
			struct nlist	*right;
			enum fop	 op;
		} filter;
	} u;
};

struct owned {
	void		*p;
	bool		 list;	/* a struct nlist: free its array too */
};

struct jsonpath {
	struct nlist	*root;	/* N_TEXT and N_LIST nodes */
	struct owned	*own;
	size_t		 nown;
	size_t		 capown;
};

static int
own_add(struct jsonpath *jp, void *p, bool list)
{
	if (jp->nown == jp->capown) {
		size_t cap = jp->capown == 0 ? 16 : jp->capown * 2;
		struct owned *o = kc_reallocarray(jp->own, cap, sizeof(*o));

		if (o == NULL) {
			kc_free(p);
			return -ENOMEM;
		}
		jp->own = o;
		jp->capown = cap;
	}
	jp->own[jp->nown].p = p;
	jp->own[jp->nown].list = list;
	jp->nown++;
	return 0;
}

static void *
own_calloc(struct jsonpath *jp, size_t size)
{
	void *p = kc_calloc(1, size);

	if (p == NULL || own_add(jp, p, false) < 0)
		return NULL;
	return p;
}

static struct nlist *
list_new(struct jsonpath *jp)
{
	struct nlist *l = kc_calloc(1, sizeof(*l));

	if (l == NULL || own_add(jp, l, true) < 0)
		return NULL;
	return l;
}

static int
list_append(struct nlist *l, struct node *n)
{
	if (l->n == l->cap) {
		size_t cap = l->cap == 0 ? 4 : l->cap * 2;
		struct node **v = kc_reallocarray(l->v, cap, sizeof(*v));

		if (v == NULL)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = n;
	return 0;
}

static struct node *
node_add(struct jsonpath *jp, struct nlist *l, enum ntype type)
{
	struct node *n = own_calloc(jp, sizeof(*n));

	if (n == NULL || list_append(l, n) < 0)
		return NULL;
	n->type = type;
	return n;
}

struct jsonpath *
jsonpath_free(struct jsonpath *jp)
{
	if (jp == NULL)
		return NULL;
	for (size_t i = 0; i < jp->nown; i++) {
		if (jp->own[i].list)
			kc_free(((struct nlist *)jp->own[i].p)->v);
		kc_free(jp->own[i].p);
	}
	kc_free(jp->own);
	kc_free(jp);
	return NULL;
}

/*
 * The parser
 */

struct parser {
	struct jsonpath		*jp;
	const char		*in;
	size_t			 len;
	size_t			 pos;
	size_t			 start;
	size_t			 width;
	struct nlist		*root;
	unsigned		 depth;
	struct kc_status	*st;
};

static int perr(struct parser *, const char *, ...) _printf_(2, 3);

static int
perr(struct parser *p, const char *fmt, ...)
{
	char msg[sizeof(((struct kc_status *)NULL)->message)];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return kc_status_set(p->st, KC_EINVALID, "%s", msg);
}

static int
next(struct parser *p)
{
	if (p->pos >= p->len) {
		p->width = 0;
		return END_OF_INPUT;
	}
	p->width = 1;
	return (unsigned char)p->in[p->pos++];
}

static void
backup(struct parser *p)
{
	p->pos -= p->width;
}

static int
peek(struct parser *p)
{
	int r = next(p);

	backup(p);
	return r;
}

static struct kc_str
consume(struct parser *p)
{
	struct kc_str s = { p->in + p->start, p->pos - p->start };

	p->start = p->pos;
	return s;
}

static bool
has_prefix(const struct parser *p, const char *prefix)
{
	size_t n = strlen(prefix);

	return p->len - p->pos >= n && memcmp(p->in + p->pos, prefix, n) == 0;
}

static bool
is_digit(int r)
{
	return r >= '0' && r <= '9';
}

/* unicode.IsLetter/IsDigit, with every non-ASCII byte taken as a letter. */
static bool
is_alnum(int r)
{
	return r == '_' || is_digit(r) || (r >= 'a' && r <= 'z') ||
	    (r >= 'A' && r <= 'Z') || r >= 0x80;
}

static bool
is_terminator(int r)
{
	switch (r) {
	case END_OF_INPUT: case ' ': case '\t': case '\r': case '\n':
	case '.': case ',': case '[': case ']': case '$': case '@':
	case '{': case '}':
		return true;
	default:
		return false;
	}
}

/* A copy of 's' owned by the program, minus every byte 'drop' (or none). */
static int
own_str(struct jsonpath *jp, struct kc_str s, int drop, struct kc_str *ret)
{
	char *d = own_calloc(jp, s.len + 1);
	size_t n = 0;

	if (d == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < s.len; i++)
		if ((unsigned char)s.p[i] != drop)
			d[n++] = s.p[i];
	ret->p = d;
	ret->len = n;
	return 0;
}

static int
add_text(struct parser *p, struct nlist *cur, struct kc_str s)
{
	struct node *n = node_add(p->jp, cur, N_TEXT);

	if (n == NULL)
		return -ENOMEM;
	return own_str(p->jp, s, -1, &n->s);
}

static int parse_text(struct parser *p);

/*
 * parseAction(): parses "{" text "}" on its own and returns the action's
 * node list.
 */
static int
parse_action(struct parser *p, const char *text, size_t len, struct nlist **ret)
{
	struct parser sub;
	char *buf;
	int r;

	if (p->depth + 1 > JSONPATH_DEPTH_MAX)
		return perr(p, "template nested too deeply (more than %d levels)",
		    JSONPATH_DEPTH_MAX);
	if ((buf = own_calloc(p->jp, len + 3)) == NULL)
		return -ENOMEM;
	buf[0] = '{';
	memcpy(buf + 1, text, len);
	buf[len + 1] = '}';
	sub = (struct parser){
		.jp = p->jp,
		.in = buf,
		.len = len + 2,
		.depth = p->depth + 1,
		.st = p->st,
	};
	if ((sub.root = list_new(p->jp)) == NULL)
		return -ENOMEM;
	if ((r = parse_text(&sub)) < 0)
		return r;
	*ret = sub.root->v[0]->u.list;
	return 0;
}

static int
parse_field(struct parser *p, struct nlist *cur)
{
	struct kc_str v;
	struct node *n;
	int r;

	(void)consume(p);
	for (;;) {
		r = next(p);
		if (r == '\\')
			(void)next(p);
		else if (is_terminator(r)) {
			backup(p);
			break;
		}
	}
	v = consume(p);
	if (kc_str_eq_cstr(v, "*"))
		return node_add(p->jp, cur, N_WILDCARD) == NULL ? -ENOMEM : 0;
	if ((n = node_add(p->jp, cur, N_FIELD)) == NULL)
		return -ENOMEM;
	return own_str(p->jp, v, '\\', &n->s);
}

static int
parse_recursive(struct parser *p, struct nlist *cur)
{
	if (cur->n > 0 && cur->v[cur->n - 1]->type == N_RECURSIVE)
		return perr(p, "invalid multiple recursive descent");
	p->pos += 2;
	(void)consume(p);
	if (node_add(p->jp, cur, N_RECURSIVE) == NULL)
		return -ENOMEM;
	if (is_alnum(peek(p)))
		return parse_field(p, cur);
	return 0;
}

static int
parse_identifier(struct parser *p, struct nlist *cur)
{
	struct kc_str v;
	struct node *n;

	while (!is_terminator(next(p)))
		;
	backup(p);
	v = consume(p);
	if (kc_str_eq_cstr(v, "true") || kc_str_eq_cstr(v, "false")) {
		if ((n = node_add(p->jp, cur, N_BOOL)) == NULL)
			return -ENOMEM;
		n->u.b = kc_str_eq_cstr(v, "true");
		return 0;
	}
	if ((n = node_add(p->jp, cur, N_IDENT)) == NULL)
		return -ENOMEM;
	return own_str(p->jp, v, -1, &n->s);
}

/* strconv.Atoi(): optional sign, decimal digits, no overflow. */
static bool
atoi64(struct kc_str s, int64_t *ret)
{
	uint64_t v = 0, lim;
	size_t i = 0;
	bool neg = false;

	if (s.len > 0 && (s.p[0] == '+' || s.p[0] == '-')) {
		neg = s.p[0] == '-';
		i++;
	}
	if (i == s.len)
		return false;
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < s.len; i++) {
		if (!is_digit((unsigned char)s.p[i]))
			return false;
		if (v > (lim - (uint64_t)(s.p[i] - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(s.p[i] - '0');
	}
	*ret = neg ? (int64_t)(0 - v) : (int64_t)v;
	return true;
}

/* strconv.ParseFloat() of what parseNumber scans: sign, digits, one dot. */
static bool
atof64(struct kc_str s, double *ret)
{
	char buf[512];
	size_t i = 0, digits = 0, dots = 0;
	char *end;
	double f;

	if (s.len >= sizeof(buf))
		return false;
	if (s.len > 0 && (s.p[0] == '+' || s.p[0] == '-'))
		i++;
	for (; i < s.len; i++) {
		if (s.p[i] == '.')
			dots++;
		else if (is_digit((unsigned char)s.p[i]))
			digits++;
		else
			return false;
	}
	if (digits == 0 || dots > 1)
		return false;
	memcpy(buf, s.p, s.len);
	buf[s.len] = '\0';
	f = strtod(buf, &end);
	if (*end != '\0' || isinf(f))
		return false;
	*ret = f;
	return true;
}

static int
parse_number(struct parser *p, struct nlist *cur)
{
	struct kc_str v;
	struct node *n;
	int64_t i;
	double f;
	int r = peek(p);

	if (r == '+' || r == '-')
		(void)next(p);
	for (;;) {
		r = next(p);
		if (r != '.' && !is_digit(r)) {
			backup(p);
			break;
		}
	}
	v = consume(p);
	if (atoi64(v, &i)) {
		if ((n = node_add(p->jp, cur, N_INT)) == NULL)
			return -ENOMEM;
		n->u.i = i;
		return 0;
	}
	if (atof64(v, &f)) {
		if ((n = node_add(p->jp, cur, N_FLOAT)) == NULL)
			return -ENOMEM;
		n->u.f = f;
		return 0;
	}
	return perr(p, "cannot parse number %.*s", (int)v.len, v.p);
}

/*
 * UnquoteExtend(): strconv.Unquote() that also takes single quotes. 's'
 * includes both quotes. Writes at most 3 bytes per input byte into 'out'.
 */
static bool
unquote(struct kc_str s, char *out, size_t *ret_len)
{
	const unsigned char *q;
	size_t n, o = 0, w;
	char quote;

	if (s.len < 2)
		return false;
	quote = s.p[0];
	if (quote != s.p[s.len - 1] || (quote != '"' && quote != '\''))
		return false;
	q = (const unsigned char *)s.p + 1;
	n = s.len - 2;
	if (memchr(q, '\\', n) == NULL && memchr(q, quote, n) == NULL) {
		memcpy(out, q, n);
		*ret_len = n;
		return true;
	}
	while (n > 0) {
		unsigned char c = q[0];
		uint32_t v = 0;
		size_t digits;

		if (c == (unsigned char)quote)
			return false;
		if (c >= 0x80) {
			if ((w = kc_utf8_decode((const char *)q, n, &v)) == 0) {
				v = 0xfffd;
				w = 1;
			}
			o += kc_utf8_encode(v, out + o);
			q += w;
			n -= w;
			continue;
		}
		if (c != '\\') {
			out[o++] = (char)c;
			q++;
			n--;
			continue;
		}
		if (n < 2)
			return false;
		c = q[1];
		q += 2;
		n -= 2;
		switch (c) {
		case 'a': out[o++] = '\a'; break;
		case 'b': out[o++] = '\b'; break;
		case 'f': out[o++] = '\f'; break;
		case 'n': out[o++] = '\n'; break;
		case 'r': out[o++] = '\r'; break;
		case 't': out[o++] = '\t'; break;
		case 'v': out[o++] = '\v'; break;
		case 'x': case 'u': case 'U':
			digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
			if (n < digits)
				return false;
			for (size_t i = 0; i < digits; i++) {
				int h = kc_hex_digit(q[i]);

				if (h < 0)
					return false;
				v = (v << 4) | (uint32_t)h;
			}
			q += digits;
			n -= digits;
			if (c == 'x')
				out[o++] = (char)v;
			else if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
				return false;
			else
				o += kc_utf8_encode(v, out + o);
			break;
		case '0': case '1': case '2': case '3':
		case '4': case '5': case '6': case '7':
			v = (uint32_t)(c - '0');
			if (n < 2)
				return false;
			for (size_t i = 0; i < 2; i++) {
				if (q[i] < '0' || q[i] > '7')
					return false;
				v = v * 8 + (uint32_t)(q[i] - '0');
			}
			q += 2;
			n -= 2;
			if (v > 255)
				return false;
			out[o++] = (char)v;
			break;
		case '\\':
			out[o++] = '\\';
			break;
		case '\'': case '"':
			if (c != (unsigned char)quote)
				return false;
			out[o++] = (char)c;
			break;
		default:
			return false;
		}
	}
	*ret_len = o;
	return true;
}

static int
parse_quote(struct parser *p, struct nlist *cur, int quote)
{
	struct kc_str v;
	struct node *n;
	char *buf;
	size_t len;

	for (;;) {
		int r = next(p);

		if (r == END_OF_INPUT || r == '\n')
			return perr(p, "unterminated quoted string");
		if (r == quote && p->in[p->pos - 2] != '\\')
			break;
	}
	v = consume(p);
	if ((buf = own_calloc(p->jp, v.len * 3 + 1)) == NULL)
		return -ENOMEM;
	if (!unquote(v, buf, &len))
		return perr(p, "unquote string %.*s error invalid syntax", (int)v.len, v.p);
	if ((n = node_add(p->jp, cur, N_TEXT)) == NULL)
		return -ENOMEM;
	n->s.p = buf;
	n->s.len = len;
	return 0;
}

/* ^(-?[\d]*)(:-?[\d]*)?(:-?[\d]*)?$, its three groups into g[]. */
static bool
match_slice(struct kc_str t, struct kc_str g[3])
{
	size_t i = 0;

	for (int k = 0; k < 3; k++) {
		size_t b = i;

		g[k].p = t.p + i;
		g[k].len = 0;
		if (k > 0) {
			if (i >= t.len || t.p[i] != ':')
				continue;
			i++;
		}
		if (i < t.len && t.p[i] == '-')
			i++;
		while (i < t.len && is_digit((unsigned char)t.p[i]))
			i++;
		g[k].len = i - b;
	}
	return i == t.len;
}

static int
parse_slice(struct parser *p, struct nlist *cur, struct kc_str text)
{
	struct kc_str g[3];
	struct node *n;

	if (!match_slice(text, g))
		return perr(p, "invalid array index %.*s", (int)text.len, text.p);
	if ((n = node_add(p->jp, cur, N_ARRAY)) == NULL)
		return -ENOMEM;
	for (int i = 0; i < 3; i++) {
		struct param *pm = &n->u.p[i];

		if (g[i].len > 0) {
			if (i > 0) {
				g[i].p++;
				g[i].len--;
			}
			if (i > 0 && g[i].len == 0)
				pm->known = false;
			else {
				pm->known = true;
				if (!atoi64(g[i], &pm->value))
					return perr(p, "array index %.*s is not a number",
					    (int)g[i].len, g[i].p);
			}
		} else if (i == 1) {
			pm->known = true;
			pm->value = (int64_t)((uint64_t)n->u.p[0].value + 1);
			pm->derived = true;
		} else {
			pm->known = false;
			pm->value = 0;
		}
	}
	return 0;
}

static int
parse_array(struct parser *p, struct nlist *cur)
{
	struct kc_str text;
	size_t commas = 0;
	int r;

	for (;;) {
		r = next(p);
		if (r == END_OF_INPUT || r == '\n')
			return perr(p, "unterminated array");
		if (r == ']')
			break;
	}
	text = consume(p);
	text.p++;
	text.len -= 2;
	if (kc_str_eq_cstr(text, "*"))
		text = KC_STR(":");
	for (size_t i = 0; i < text.len; i++)
		commas += text.p[i] == ',';
	if (commas > 0) {
		struct node *u = node_add(p->jp, cur, N_UNION);
		struct kc_str rest = text, piece;

		if (u == NULL || (u->u.list = list_new(p->jp)) == NULL)
			return -ENOMEM;
		for (size_t k = 0; k <= commas; k++) {
			struct node *m;
			char *buf;

			(void)kc_str_cut(&rest, ',', &piece);
			while (piece.len > 0 && piece.p[0] == ' ') {
				piece.p++;
				piece.len--;
			}
			while (piece.len > 0 && piece.p[piece.len - 1] == ' ')
				piece.len--;
			if ((buf = own_calloc(p->jp, piece.len + 3)) == NULL ||
			    (m = node_add(p->jp, u->u.list, N_LIST)) == NULL)
				return -ENOMEM;
			buf[0] = '[';
			memcpy(buf + 1, piece.p, piece.len);
			buf[piece.len + 1] = ']';
			if ((r = parse_action(p, buf, piece.len + 2, &m->u.list)) < 0)
				return r;
		}
		return 0;
	}
	if (text.len >= 2 && text.p[0] == '\'' && text.p[text.len - 1] == '\'' &&
	    memchr(text.p + 1, '\'', text.len - 2) == NULL) {
		struct nlist *l;
		char *buf;

		if ((buf = own_calloc(p->jp, text.len)) == NULL)
			return -ENOMEM;
		buf[0] = '.';
		memcpy(buf + 1, text.p + 1, text.len - 2);
		if ((r = parse_action(p, buf, text.len - 1, &l)) < 0)
			return r;
		for (size_t i = 0; i < l->n; i++)
			if (list_append(cur, l->v[i]) < 0)
				return -ENOMEM;
		return 0;
	}
	return parse_slice(p, cur, text);
}

static bool
is_op_char(char c)
{
	return c == '!' || c == '<' || c == '>' || c == '=';
}

static enum fop
filter_op(struct kc_str s)
{
	static const struct {
		const char	*text;
		enum fop	 op;
	} ops[] = {
		{ "<", F_LT }, { ">", F_GT }, { "==", F_EQ }, { "!=", F_NE },
		{ "<=", F_LE }, { ">=", F_GE },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(ops); i++)
		if (kc_str_eq_cstr(s, ops[i].text))
			return ops[i].op;
	return F_UNKNOWN;
}

static int
parse_filter(struct parser *p, struct nlist *cur)
{
	bool begin = false, end = false;
	int pair = 0, r;
	struct kc_str text;
	struct node *n;
	size_t i, j;

	p->pos += 3;
	(void)consume(p);
	for (;;) {
		r = next(p);
		if (r == END_OF_INPUT || r == '\n')
			return perr(p, "unterminated filter");
		if (r == '"' || r == '\'') {
			if (!begin) {
				begin = true;
				pair = r;
				continue;
			}
			if (p->in[p->pos - 2] != '\\' && r == pair)
				end = true;
		} else if (r == ')' && begin == end)
			break;
	}
	if (next(p) != ']')
		return perr(p, "unclosed array expect ]");
	text = consume(p);
	text.len -= 2;
	if ((n = node_add(p->jp, cur, N_FILTER)) == NULL)
		return -ENOMEM;
	/* ^([^!<>=]+)([!<>=]+)(.+?)$ */
	for (i = 0; i < text.len && !is_op_char(text.p[i]); i++)
		;
	for (j = i; j < text.len && is_op_char(text.p[j]); j++)
		;
	if (i == 0 || i == text.len || j == text.len) {
		n->u.filter.op = F_EXISTS;
		n->s = KC_STR("exists");
		if ((n->u.filter.right = list_new(p->jp)) == NULL)
			return -ENOMEM;
		return parse_action(p, text.p, text.len, &n->u.filter.left);
	}
	if ((r = own_str(p->jp, (struct kc_str){ text.p + i, j - i }, -1, &n->s)) < 0)
		return r;
	n->u.filter.op = filter_op(n->s);
	if ((r = parse_action(p, text.p, i, &n->u.filter.left)) < 0)
		return r;
	return parse_action(p, text.p + j, text.len - j, &n->u.filter.right);
}

/* Go's %#U for an ASCII rune. */
static int
unrecognized(struct parser *p, int r)
{
	if (r >= 0x20 && r < 0x7f)
		return perr(p, "unrecognized character in action: U+%04X '%c'", r, r);
	return perr(p, "unrecognized character in action: U+%04X", r);
}

static int
parse_inside_action(struct parser *p, struct nlist *cur)
{
	int r;

	for (;;) {
		if (has_prefix(p, "}")) {
			p->pos++;
			(void)consume(p);
			return 0;
		}
		if (has_prefix(p, "[?("))
			r = parse_filter(p, cur);
		else if (has_prefix(p, ".."))
			r = parse_recursive(p, cur);
		else {
			int c = next(p);

			if (c == END_OF_INPUT || c == '\r' || c == '\n')
				return perr(p, "unclosed action");
			if (c == ' ' || c == '@' || c == '$') {
				(void)consume(p);
				r = 0;
			} else if (c == '[')
				r = parse_array(p, cur);
			else if (c == '"' || c == '\'')
				r = parse_quote(p, cur, c);
			else if (c == '.')
				r = parse_field(p, cur);
			else if (c == '+' || c == '-' || is_digit(c)) {
				backup(p);
				r = parse_number(p, cur);
			} else if (is_alnum(c)) {
				backup(p);
				r = parse_identifier(p, cur);
			} else
				return unrecognized(p, c);
		}
		if (r < 0)
			return r;
	}
}

static int
parse_text(struct parser *p)
{
	int r;

	for (;;) {
		if (has_prefix(p, "{")) {
			struct node *n;

			if (p->pos > p->start && (r = add_text(p, p->root, consume(p))) < 0)
				return r;
			p->pos++;
			(void)consume(p);
			if ((n = node_add(p->jp, p->root, N_LIST)) == NULL ||
			    (n->u.list = list_new(p->jp)) == NULL)
				return -ENOMEM;
			if ((r = parse_inside_action(p, n->u.list)) < 0)
				return r;
			continue;
		}
		if (next(p) == END_OF_INPUT)
			break;
	}
	if (p->pos > p->start)
		return add_text(p, p->root, consume(p));
	return 0;
}

int
jsonpath_parse(const char *text, struct jsonpath **ret, struct kc_status *st)
{
	struct jsonpath *jp;
	struct parser p;
	size_t len = strnlen(text, JSONPATH_TEXT_MAX + 1);
	int r;

	if (len > JSONPATH_TEXT_MAX)
		return kc_status_set(st, KC_EINVALID,
		    "template longer than %d bytes", JSONPATH_TEXT_MAX);
	if ((jp = kc_calloc(1, sizeof(*jp))) == NULL)
		return -ENOMEM;
	p = (struct parser){ .jp = jp, .in = text, .len = len, .st = st };
	if ((jp->root = p.root = list_new(jp)) == NULL) {
		jsonpath_free(jp);
		return -ENOMEM;
	}
	if ((r = parse_text(&p)) < 0) {
		jsonpath_free(jp);
		return r;
	}
	*ret = jp;
	return 0;
}

int
jsonpath_parse_column(const char *path, struct jsonpath **ret, struct kc_status *st)
{
	size_t len = strnlen(path, JSONPATH_TEXT_MAX + 1);
	char *text;
	int r;

	if (len > JSONPATH_TEXT_MAX - 2)
		return kc_status_set(st, KC_EINVALID,
		    "template longer than %d bytes", JSONPATH_TEXT_MAX);
	if ((text = kc_malloc(len + 3)) == NULL)
		return -ENOMEM;
	text[0] = '{';
	memcpy(text + 1, path, len);
	text[len + 1] = '}';
	text[len + 2] = '\0';
	r = jsonpath_parse(text, ret, st);
	kc_free(text);
	return r;
}

/*
 * Evaluation
 */

struct vlist {
	struct jsonpath_value	*v;
	size_t			 n;
	size_t			 cap;
};

struct ectx {
	unsigned		 flags;
	struct kc_status	*st;
	int			 begin_range;
	int			 in_range;
	int			 end_range;
	size_t			 last_end;	/* index of the last end reached */
	size_t			 steps;
	size_t			 lists;
	unsigned		 depth;
};

static int eerr(struct ectx *, const char *, ...) _printf_(2, 3);

static int
eerr(struct ectx *c, const char *fmt, ...)
{
	char msg[sizeof(((struct kc_status *)NULL)->message)];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return kc_status_set(c->st, KC_EINVALID, "%s", msg);
}

static void
vl_free(struct vlist *l)
{
	l->v = kc_free(l->v);
	l->n = l->cap = 0;
}

static int
vl_push(struct ectx *c, struct vlist *l, const struct jsonpath_value *v)
{
	if (l->n == l->cap) {
		size_t cap = l->cap == 0 ? 8 : l->cap * 2;
		struct jsonpath_value *nv;

		if (l->n >= JSONPATH_VALUES_MAX)
			return kc_status_set(c->st, -E2BIG,
			    "more than %d values in one step", JSONPATH_VALUES_MAX);
		if ((nv = kc_reallocarray(l->v, cap, sizeof(*nv))) == NULL)
			return -ENOMEM;
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n++] = *v;
	return 0;
}

static int
vl_copy(struct ectx *c, const struct vlist *from, struct vlist *to)
{
	int r;

	for (size_t i = 0; i < from->n; i++)
		if ((r = vl_push(c, to, &from->v[i])) < 0)
			return r;
	return 0;
}

static int
push_json(struct ectx *c, struct vlist *l, struct json_object *o)
{
	struct jsonpath_value v = { .kind = JSONPATH_JSON, .v.json = o };

	return vl_push(c, l, &v);
}

static int
push_byte(struct ectx *c, struct vlist *l, uint8_t b)
{
	struct jsonpath_value v = { .kind = JSONPATH_BYTE, .v.byte = b };

	return vl_push(c, l, &v);
}

/* Upstream returns its input with most errors; "exists" may look at it. */
static int
fail_with_input(struct ectx *c, const struct vlist *in, struct vlist *out, int r)
{
	vl_free(out);
	if (r == KC_EINVALID && vl_copy(c, in, out) < 0)
		return -ENOMEM;
	return r;
}

/* template.Indirect(): a nil interface (JSON null) is skipped by most steps. */
static bool
is_nil(const struct jsonpath_value *v)
{
	return v->kind == JSONPATH_JSON && v->v.json == NULL;
}

static bool
is_type(const struct jsonpath_value *v, enum json_type t)
{
	return v->kind == JSONPATH_JSON && json_object_is_type(v->v.json, t);
}

/* Go's reflect type name of a value, for error messages. */
static const char *
go_type(const struct jsonpath_value *v)
{
	switch (v->kind) {
	case JSONPATH_INT:
		return "int";
	case JSONPATH_FLOAT:
		return "float64";
	case JSONPATH_BOOL:
		return "bool";
	case JSONPATH_TEXT:
		return "string";
	case JSONPATH_BYTE:
		return "uint8";
	case JSONPATH_JSON:
		break;
	}
	switch (json_object_get_type(v->v.json)) {
	case json_type_object:
		return "map[string]interface {}";
	case json_type_array:
		return "[]interface {}";
	case json_type_string:
		return "string";
	case json_type_int:
		return "int64";
	case json_type_double:
		return "float64";
	case json_type_boolean:
		return "bool";
	case json_type_null:
		break;
	}
	return "<nil>";
}

/*
 * A JSON number as Go's unstructured decoder holds it: int64 when it fits,
 * else float64. Returns true for an int64.
 */
static bool
json_number(const struct json_object *o, int64_t *ret_i, double *ret_f)
{
	if (json_object_is_type(o, json_type_int)) {
		int64_t i = json_object_get_int64(o);

		if (i != INT64_MAX || json_object_get_uint64(o) <= INT64_MAX) {
			*ret_i = i;
			return true;
		}
		*ret_f = (double)json_object_get_uint64(o);
		return false;
	}
	*ret_f = json_object_get_double(o);
	return false;
}

static int
cmp_kv(const void *a, const void *b)
{
	const char *ka = *(const char *const *)a, *kb = *(const char *const *)b;

	return strcmp(ka, kb);
}

/*
 * The keys of an object, sorted bytewise (Go sorts map keys when it prints
 * or marshals them). '*ret' is an allocation of borrowed key pointers.
 */
static int
sorted_keys(const struct json_object *o, const char ***ret, size_t *ret_n)
{
	size_t n = (size_t)json_object_object_length(o), i = 0;
	const char **keys;

	if ((keys = kc_calloc(n == 0 ? 1 : n, sizeof(*keys))) == NULL)
		return -ENOMEM;
	json_object_object_foreach((struct json_object *)(uintptr_t)o, k, v) {
		(void)v;
		keys[i++] = k;
	}
	qsort(keys, n, sizeof(*keys), cmp_kv);
	*ret = keys;
	*ret_n = n;
	return 0;
}

static int go_sprint_json(const struct json_object *, struct kc_buf *, unsigned);

/* fmt's %v of an unstructured value, for error messages. */
static int
go_sprint_json(const struct json_object *o, struct kc_buf *b, unsigned depth)
{
	char num[40];
	int64_t i;
	double f;
	int r = 0;

	if (depth > SPRINT_DEPTH)
		return kc_buf_puts(b, "...");
	switch (json_object_get_type(o)) {
	case json_type_null:
		return kc_buf_puts(b, "<nil>");
	case json_type_boolean:
		return kc_buf_puts(b, json_object_get_boolean(o) ? "true" : "false");
	case json_type_int:
	case json_type_double:
		if (json_number(o, &i, &f))
			return kc_buf_printf(b, "%" PRId64, i);
		(void)kc_sbuf_float_str(num, sizeof(num), f, KC_FLOAT_G64);
		return kc_buf_puts(b, num);
	case json_type_string:
		return kc_buf_append(b, json_object_get_string((struct json_object *)
		    (uintptr_t)o), (size_t)json_object_get_string_len(o));
	case json_type_array:
		if ((r = kc_buf_putc(b, '[')) < 0)
			return r;
		for (size_t k = 0; k < json_object_array_length(o); k++)
			if ((k > 0 && (r = kc_buf_putc(b, ' ')) < 0) ||
			    (r = go_sprint_json(json_object_array_get_idx(o, k), b,
			    depth + 1)) < 0)
				return r;
		return kc_buf_putc(b, ']');
	case json_type_object: {
		const char **keys;
		size_t n;

		if ((r = sorted_keys(o, &keys, &n)) < 0) {
			kc_buf_free(b);
			return r;
		}
		if ((r = kc_buf_puts(b, "map[")) < 0)
			goto out;
		for (size_t k = 0; k < n; k++) {
			struct json_object *v = NULL;

			(void)json_object_object_get_ex(o, keys[k], &v);
			if ((k > 0 && (r = kc_buf_putc(b, ' ')) < 0) ||
			    (r = kc_buf_printf(b, "%s:", keys[k])) < 0 ||
			    (r = go_sprint_json(v, b, depth + 1)) < 0)
				goto out;
		}
		r = kc_buf_putc(b, ']');
out:
		kc_free(keys);
		return r;
	}
	}
	return 0;
}

/* eerr() with "%v" of 'v' in front of 'what'. */
static int
eerr_value(struct ectx *c, const struct jsonpath_value *v, const char *what)
{
	struct kc_buf b;
	int r;

	kc_buf_init(&b, 4096);
	if (v->kind == JSONPATH_JSON)
		r = go_sprint_json(v->v.json, &b, 0);
	else
		r = jsonpath_print(v, 1, &b);
	if (r == -ENOMEM)
		return r;
	r = eerr(c, "%s%s %s", kc_buf_str(&b), r < 0 ? "..." : "", what);
	kc_buf_free(&b);
	return r;
}

static int walk(struct ectx *, const struct vlist *, const struct node *, struct vlist *);

/*
 * evalList(): runs the nodes of 'l' in turn. On error '*out' holds what
 * the failing step returned (upstream's filter "exists" looks at it).
 */
static int
eval_list(struct ectx *c, const struct vlist *in, const struct nlist *l,
    struct vlist *out)
{
	struct vlist tmp = { 0 };
	const struct vlist *cur = in;
	int r;

	if (l->n == 0)
		return vl_copy(c, in, out);
	for (size_t i = 0; i < l->n; i++) {
		struct vlist next_vals = { 0 };

		r = walk(c, cur, l->v[i], &next_vals);
		vl_free(&tmp);
		tmp = next_vals;
		cur = &tmp;
		if (r < 0)
			break;
	}
	*out = tmp;
	return r;
}

static int
eval_field(struct ectx *c, const struct vlist *in, const struct node *n,
    struct vlist *out)
{
	int r;

	if (in->n == 0)
		return 0;
	for (size_t i = 0; i < in->n; i++) {
		struct json_object *v;

		if (is_nil(&in->v[i]) || !is_type(&in->v[i], json_type_object))
			continue;
		/* n->s is NUL-terminated; a key with a NUL in it is not found. */
		if (strlen(n->s.p) != n->s.len ||
		    !json_object_object_get_ex(in->v[i].v.json, n->s.p, &v))
			continue;
		if ((r = push_json(c, out, v)) < 0)
			return r;
	}
	if (out->n == 0 && !(c->flags & JSONPATH_ALLOW_MISSING))
		return eerr(c, "%.*s is not found", (int)n->s.len, n->s.p);
	return 0;
}

static int
eval_array(struct ectx *c, const struct vlist *in, const struct node *n,
    struct vlist *out)
{
	int r;

	for (size_t i = 0; i < in->n; i++) {
		const struct jsonpath_value *v = &in->v[i];
		struct param p[3] = { n->u.p[0], n->u.p[1], n->u.p[2] };
		int64_t len, step = 1;

		if (is_nil(v))
			continue;
		if (!is_type(v, json_type_array))
			return fail_with_input(c, in, out,
			    eerr(c, "%s is not array or slice", go_type(v)));
		len = (int64_t)json_object_array_length(v->v.json);
		if (!p[0].known)
			p[0].value = 0;
		if (p[0].value < 0)
			p[0].value += len;
		if (!p[1].known)
			p[1].value = len;
		if (p[1].value < 0 || (p[1].value == 0 && p[1].derived))
			p[1].value += len;
		if (p[1].value == p[0].value)
			return 0;
		if (p[0].value >= len || p[0].value < 0 || p[1].value > len ||
		    p[1].value < 0 || p[0].value > p[1].value || (p[2].known &&
		    p[2].value <= 0)) {
			if (p[0].value >= len || p[0].value < 0)
				r = eerr(c, "array index out of bounds: index %" PRId64
				    ", length %" PRId64, p[0].value, len);
			else if (p[1].value > len || p[1].value < 0)
				r = eerr(c, "array index out of bounds: index %" PRId64
				    ", length %" PRId64, p[1].value - 1, len);
			else if (p[0].value > p[1].value)
				r = eerr(c, "starting index %" PRId64 " is greater than "
				    "ending index %" PRId64, p[0].value, p[1].value);
			else
				r = eerr(c, "step must be > 0");
			return fail_with_input(c, in, out, r);
		}
		if (p[2].known)
			step = p[2].value;
		for (int64_t k = p[0].value; k < p[1].value; k += step) {
			if ((r = push_json(c, out,
			    json_object_array_get_idx(v->v.json, (size_t)k))) < 0)
				return r;
			if (p[1].value - k <= step)
				break;
		}
	}
	return 0;
}

/* The children of a value for * and ..: object values, elements, bytes. */
static int
children(struct ectx *c, const struct jsonpath_value *v, struct vlist *out)
{
	struct json_object *o = v->v.json;
	int r;

	if (v->kind == JSONPATH_TEXT) {
		for (size_t i = 0; i < v->v.text.len; i++)
			if ((r = push_byte(c, out, (uint8_t)v->v.text.p[i])) < 0)
				return r;
		return 0;
	}
	if (v->kind != JSONPATH_JSON || o == NULL)
		return 0;
	switch (json_object_get_type(o)) {
	case json_type_object: {
		json_object_object_foreach(o, k, val) {
			(void)k;
			if ((r = push_json(c, out, val)) < 0)
				return r;
		}
		return 0;
	}
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++)
			if ((r = push_json(c, out, json_object_array_get_idx(o, i))) < 0)
				return r;
		return 0;
	case json_type_string: {
		const char *s = json_object_get_string(o);
		size_t len = (size_t)json_object_get_string_len(o);

		for (size_t i = 0; i < len; i++)
			if ((r = push_byte(c, out, (uint8_t)s[i])) < 0)
				return r;
		return 0;
	}
	default:
		return 0;
	}
}

static int
eval_wildcard(struct ectx *c, const struct vlist *in, struct vlist *out)
{
	int r;

	for (size_t i = 0; i < in->n; i++)
		if (!is_nil(&in->v[i]) && (r = children(c, &in->v[i], out)) < 0)
			return r;
	return 0;
}

static int
eval_recursive(struct ectx *c, const struct vlist *in, struct vlist *out)
{
	int r = 0;

	if (++c->depth > EVAL_DEPTH_MAX) {
		c->depth--;
		return eerr(c, "document nested too deeply for ..");
	}
	for (size_t i = 0; i < in->n && r == 0; i++) {
		struct vlist kids = { 0 }, sub = { 0 };

		if (is_nil(&in->v[i]))
			continue;
		if ((r = children(c, &in->v[i], &kids)) == 0 && kids.n > 0 &&
		    (r = vl_push(c, out, &in->v[i])) == 0 &&
		    (r = eval_recursive(c, &kids, &sub)) == 0)
			r = vl_copy(c, &sub, out);
		vl_free(&kids);
		vl_free(&sub);
	}
	c->depth--;
	return r;
}

enum bkind { K_BAD, K_BOOL, K_INT, K_UINT, K_FLOAT, K_STRING };

struct basic {
	enum bkind	 kind;
	bool		 b;
	int64_t		 i;
	uint64_t	 u;
	double		 f;
	struct kc_str	 s;
};

/* template's basicKind(): the comparable view of a value. */
static struct basic
basic_of(const struct jsonpath_value *v)
{
	struct basic k = { .kind = K_BAD };

	switch (v->kind) {
	case JSONPATH_INT:
		k.kind = K_INT;
		k.i = v->v.i;
		break;
	case JSONPATH_FLOAT:
		k.kind = K_FLOAT;
		k.f = v->v.f;
		break;
	case JSONPATH_BOOL:
		k.kind = K_BOOL;
		k.b = v->v.b;
		break;
	case JSONPATH_TEXT:
		k.kind = K_STRING;
		k.s = v->v.text;
		break;
	case JSONPATH_BYTE:
		k.kind = K_UINT;
		k.u = v->v.byte;
		break;
	case JSONPATH_JSON:
		switch (json_object_get_type(v->v.json)) {
		case json_type_boolean:
			k.kind = K_BOOL;
			k.b = json_object_get_boolean(v->v.json);
			break;
		case json_type_int:
		case json_type_double:
			k.kind = json_number(v->v.json, &k.i, &k.f) ? K_INT : K_FLOAT;
			break;
		case json_type_string:
			k.kind = K_STRING;
			k.s.p = json_object_get_string(v->v.json);
			k.s.len = (size_t)json_object_get_string_len(v->v.json);
			break;
		default:
			break;
		}
		break;
	}
	return k;
}

static int
str_cmp(struct kc_str a, struct kc_str b)
{
	int d = memcmp(a.p, b.p, KC_MIN(a.len, b.len));

	if (d != 0)
		return d;
	return a.len < b.len ? -1 : a.len > b.len;
}

#define ERR_BAD_TYPE	"invalid type for comparison"
#define ERR_BAD_CMP	"incompatible types for comparison"

/* template's eq(): 0 with '*ret', or an error message. */
static const char *
cmp_eq(const struct basic *a, const struct basic *b, bool *ret)
{
	if (a->kind == K_BAD || b->kind == K_BAD)
		return ERR_BAD_TYPE;
	if (a->kind != b->kind) {
		if (a->kind == K_INT && b->kind == K_UINT)
			*ret = a->i >= 0 && (uint64_t)a->i == b->u;
		else if (a->kind == K_UINT && b->kind == K_INT)
			*ret = b->i >= 0 && a->u == (uint64_t)b->i;
		else
			return ERR_BAD_CMP;
		return NULL;
	}
	switch (a->kind) {
	case K_BOOL:	*ret = a->b == b->b; break;
	case K_INT:	*ret = a->i == b->i; break;
	case K_UINT:	*ret = a->u == b->u; break;
	case K_FLOAT:	*ret = a->f == b->f; break;
	case K_STRING:	*ret = str_cmp(a->s, b->s) == 0; break;
	case K_BAD:	break;
	}
	return NULL;
}

/* template's lt(). */
static const char *
cmp_lt(const struct basic *a, const struct basic *b, bool *ret)
{
	if (a->kind == K_BAD || b->kind == K_BAD)
		return ERR_BAD_TYPE;
	if (a->kind != b->kind) {
		if (a->kind == K_INT && b->kind == K_UINT)
			*ret = a->i < 0 || (uint64_t)a->i < b->u;
		else if (a->kind == K_UINT && b->kind == K_INT)
			*ret = b->i >= 0 && a->u < (uint64_t)b->i;
		else
			return ERR_BAD_CMP;
		return NULL;
	}
	switch (a->kind) {
	case K_BOOL:	return ERR_BAD_TYPE;
	case K_INT:	*ret = a->i < b->i; break;
	case K_UINT:	*ret = a->u < b->u; break;
	case K_FLOAT:	*ret = a->f < b->f; break;
	case K_STRING:	*ret = str_cmp(a->s, b->s) < 0; break;
	case K_BAD:	break;
	}
	return NULL;
}

static const char *
compare(enum fop op, const struct jsonpath_value *l, const struct jsonpath_value *r,
    bool *ret)
{
	struct basic a = basic_of(l), b = basic_of(r);
	const char *e;
	bool x = false;

	switch (op) {
	case F_EQ:
		return cmp_eq(&a, &b, ret);
	case F_NE:
		if ((e = cmp_eq(&a, &b, &x)) != NULL)
			return e;
		*ret = !x;
		return NULL;
	case F_LT:
		return cmp_lt(&a, &b, ret);
	case F_GE:
		if ((e = cmp_lt(&a, &b, &x)) != NULL)
			return e;
		*ret = !x;
		return NULL;
	case F_LE:
	case F_GT:
		if ((e = cmp_lt(&a, &b, &x)) != NULL)
			return e;
		if (!x && (e = cmp_eq(&a, &b, &x)) != NULL)
			return e;
		*ret = op == F_LE ? x : !x;
		return NULL;
	case F_EXISTS:
	case F_UNKNOWN:
		break;
	}
	return ERR_BAD_CMP;
}

/* Only a bad template or document is ignored by "exists", never ENOMEM. */
static bool
soft_error(int r)
{
	return r == KC_EINVALID;
}

static int
eval_filter(struct ectx *c, const struct vlist *in, const struct node *n,
    struct vlist *out)
{
	int r;

	for (size_t i = 0; i < in->n; i++) {
		const struct jsonpath_value *v = &in->v[i];
		size_t len;

		if (!is_type(v, json_type_array))
			return fail_with_input(c, in, out, eerr_value(c, v,
			    "is not array or slice and cannot be filtered"));
		len = json_object_array_length(v->v.json);
		for (size_t k = 0; k < len; k++) {
			struct jsonpath_value elem = {
				.kind = JSONPATH_JSON,
				.v.json = json_object_array_get_idx(v->v.json, k),
			};
			struct vlist temp = { &elem, 1, 1 };
			struct vlist lefts = { 0 }, rights = { 0 };
			const char *e = NULL;
			bool pass = false;

			r = eval_list(c, &temp, n->u.filter.left, &lefts);
			if (n->u.filter.op == F_EXISTS) {
				if (r == 0 || soft_error(r))
					r = lefts.n > 0 ? vl_push(c, out, &elem) : 0;
				vl_free(&lefts);
				if (r < 0)
					return r;
				continue;
			}
			if (r == 0 && lefts.n == 1)
				r = eval_list(c, &temp, n->u.filter.right, &rights);
			if (r == 0 && lefts.n == 1 && rights.n == 1) {
				if (n->u.filter.op == F_UNKNOWN)
					r = eerr(c, "unrecognized filter operator %.*s",
					    (int)n->s.len, n->s.p);
				else if ((e = compare(n->u.filter.op, &lefts.v[0],
				    &rights.v[0], &pass)) != NULL)
					r = eerr(c, "%s", e);
				else if (pass)
					r = vl_push(c, out, &elem);
				vl_free(&lefts);
				vl_free(&rights);
				if (r < 0)
					return r;
				continue;
			}
			if (r == 0 && (lefts.n > 1 || (lefts.n == 1 && rights.n > 1)))
				r = eerr(c, "can only compare one element at a time");
			vl_free(&lefts);
			vl_free(&rights);
			if (r < 0)
				return fail_with_input(c, in, out, r);
		}
	}
	return 0;
}

static int
eval_union(struct ectx *c, const struct vlist *in, const struct node *n,
    struct vlist *out)
{
	int r;

	for (size_t i = 0; i < n->u.list->n; i++) {
		struct vlist temp = { 0 };

		r = eval_list(c, in, n->u.list->v[i]->u.list, &temp);
		if (r == 0)
			r = vl_copy(c, &temp, out);
		vl_free(&temp);
		if (r < 0)
			return fail_with_input(c, in, out, r);
	}
	return 0;
}

static int
eval_ident(struct ectx *c, const struct vlist *in, const struct node *n,
    struct vlist *out)
{
	if (kc_str_eq_cstr(n->s, "range")) {
		c->begin_range++;
		return vl_copy(c, in, out);
	}
	if (kc_str_eq_cstr(n->s, "end")) {
		if (c->in_range > 0) {
			c->end_range++;
			return 0;
		}
		return eerr(c, "not in range, nothing to end");
	}
	return fail_with_input(c, in, out,
	    eerr(c, "unrecognized identifier %.*s", (int)n->s.len, n->s.p));
}

static int
walk(struct ectx *c, const struct vlist *in, const struct node *n, struct vlist *out)
{
	struct jsonpath_value v;
	int r;

	if (++c->steps > STEPS_MAX)
		return kc_status_set(c->st, -E2BIG, "template evaluation too long");
	switch (n->type) {
	case N_TEXT:
		v = (struct jsonpath_value){ .kind = JSONPATH_TEXT, .v.text = n->s };
		return vl_push(c, out, &v);
	case N_LIST:
		return eval_list(c, in, n->u.list, out);
	case N_FIELD:
		return eval_field(c, in, n, out);
	case N_ARRAY:
		return eval_array(c, in, n, out);
	case N_FILTER:
		return eval_filter(c, in, n, out);
	case N_INT:
	case N_FLOAT:
	case N_BOOL:
		if (n->type == N_INT)
			v = (struct jsonpath_value){ .kind = JSONPATH_INT, .v.i = n->u.i };
		else if (n->type == N_FLOAT)
			v = (struct jsonpath_value){ .kind = JSONPATH_FLOAT, .v.f = n->u.f };
		else
			v = (struct jsonpath_value){ .kind = JSONPATH_BOOL, .v.b = n->u.b };
		for (size_t i = 0; i < in->n; i++)
			if ((r = vl_push(c, out, &v)) < 0)
				return r;
		return 0;
	case N_WILDCARD:
		return eval_wildcard(c, in, out);
	case N_RECURSIVE:
		return eval_recursive(c, in, out);
	case N_UNION:
		return eval_union(c, in, n, out);
	case N_IDENT:
		return eval_ident(c, in, n, out);
	}
	return eerr(c, "unexpected node");
}

static int
results_push(struct ectx *c, struct jsonpath_results *res, struct vlist *l)
{
	struct jsonpath_list *nl;

	if (c->lists >= JSONPATH_LISTS_MAX)
		return kc_status_set(c->st, -E2BIG, "more than %d result lists",
		    JSONPATH_LISTS_MAX);
	if (res->n == res->cap) {
		size_t cap = res->cap == 0 ? 4 : res->cap * 2;

		if ((nl = kc_reallocarray(res->lists, cap, sizeof(*nl))) == NULL)
			return -ENOMEM;
		res->lists = nl;
		res->cap = cap;
	}
	nl = res->lists;
	nl[res->n].vals = l->v;
	nl[res->n].n = l->n;
	res->n++;
	c->lists++;
	*l = (struct vlist){ 0 };
	return 0;
}

/*
 * FindResults() from node 'from' of the root, with 'data' as the current
 * value. '*ret_stop' is the index of the end that stopped the block, or
 * the node count.
 */
static int
find_from(struct ectx *c, const struct nlist *root, size_t from,
    const struct jsonpath_value *data, struct jsonpath_results *out)
{
	struct vlist cur = { (struct jsonpath_value *)(uintptr_t)data, 1, 1 };
	int r = 0;

	if (++c->depth > EVAL_DEPTH_MAX) {
		c->depth--;
		return eerr(c, "range blocks nested too deeply");
	}
	for (size_t i = from; i < root->n && r == 0; i++) {
		struct vlist res = { 0 };

		if ((r = walk(c, &cur, root->v[i], &res)) < 0) {
			vl_free(&res);
			break;
		}
		if (c->end_range > 0 && c->end_range <= c->in_range) {
			c->end_range--;
			c->last_end = i;
			vl_free(&res);
			break;
		}
		if (c->begin_range > 0) {
			c->begin_range--;
			c->in_range++;
			if (res.n == 0) {
				struct jsonpath_value nil = { .kind = JSONPATH_JSON };
				struct jsonpath_results discard = { 0 };

				r = find_from(c, root, i + 1, &nil, &discard);
				jsonpath_results_free(&discard);
			}
			for (size_t k = 0; k < res.n && r == 0; k++)
				r = find_from(c, root, i + 1, &res.v[k], out);
			c->in_range--;
			vl_free(&res);
			if (c->last_end != SIZE_MAX && c->last_end > i && c->last_end < root->n)
				i = c->last_end;
			continue;
		}
		r = results_push(c, out, &res);
		vl_free(&res);
	}
	c->depth--;
	return r;
}

void
jsonpath_results_free(struct jsonpath_results *res)
{
	for (size_t i = 0; i < res->n; i++)
		kc_free(res->lists[i].vals);
	res->lists = kc_free(res->lists);
	res->n = res->cap = 0;
}

int
jsonpath_find(const struct jsonpath *jp, const struct json_object *doc,
    unsigned flags, struct jsonpath_results *ret, struct kc_status *st)
{
	struct jsonpath_value data = {
		.kind = JSONPATH_JSON,
		.v.json = (struct json_object *)(uintptr_t)doc,
	};
	struct jsonpath_results res = { 0 };
	struct ectx c = { .flags = flags, .st = st, .last_end = SIZE_MAX };
	int r;

	if ((r = find_from(&c, jp->root, 0, &data, &res)) < 0) {
		jsonpath_results_free(&res);
		return r;
	}
	*ret = res;
	return 0;
}

/*
 * Printing
 */


/* encoding/json's string encoder with HTML escaping. */
static int
json_string(struct kc_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	int r;

	if ((r = kc_buf_putc(b, '"')) < 0)
		return r;
	for (size_t i = 0; i < n && r == 0;) {
		unsigned char c = (unsigned char)s[i];
		size_t w;
		uint32_t rune;

		if (c < 0x80) {
			i++;
			if (c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' &&
			    c != '&') {
				r = kc_buf_putc(b, (char)c);
				continue;
			}
			switch (c) {
			case '"': r = kc_buf_puts(b, "\\\""); break;
			case '\\': r = kc_buf_puts(b, "\\\\"); break;
			case '\b': r = kc_buf_puts(b, "\\b"); break;
			case '\f': r = kc_buf_puts(b, "\\f"); break;
			case '\n': r = kc_buf_puts(b, "\\n"); break;
			case '\r': r = kc_buf_puts(b, "\\r"); break;
			case '\t': r = kc_buf_puts(b, "\\t"); break;
			default:
				r = kc_buf_printf(b, "\\u00%c%c", hex[c >> 4], hex[c & 0xf]);
				break;
			}
			continue;
		}
		if ((w = kc_utf8_decode(s + i, n - i, &rune)) == 0) {
			w = 1;
			r = kc_buf_puts(b, "\\ufffd");
		} else if (rune == 0x2028 || rune == 0x2029)
			r = kc_buf_printf(b, "\\u%04" PRIx32, rune);
		else
			r = kc_buf_append(b, s + i, w);
		i += w;
	}
	return r < 0 ? r : kc_buf_putc(b, '"');
}

static int
marshal(const struct json_object *o, struct kc_buf *b, unsigned depth)
{
	char num[KC_FLOAT_MAX];
	int64_t i;
	double f;
	int r;

	if (depth > 1000)
		return -E2BIG;
	switch (json_object_get_type(o)) {
	case json_type_null:
		return kc_buf_puts(b, "null");
	case json_type_boolean:
		return kc_buf_puts(b, json_object_get_boolean(o) ? "true" : "false");
	case json_type_int:
	case json_type_double:
		if (json_number(o, &i, &f))
			return kc_buf_printf(b, "%" PRId64, i);
		return kc_buf_puts(b, kc_sbuf_float_str(num, sizeof(num), f,
		    KC_FLOAT_JSON));
	case json_type_string:
		return json_string(b, json_object_get_string((struct json_object *)
		    (uintptr_t)o), (size_t)json_object_get_string_len(o));
	case json_type_array:
		if ((r = kc_buf_putc(b, '[')) < 0)
			return r;
		for (size_t k = 0; k < json_object_array_length(o); k++)
			if ((k > 0 && (r = kc_buf_putc(b, ',')) < 0) ||
			    (r = marshal(json_object_array_get_idx(o, k), b, depth + 1)) < 0)
				return r;
		return kc_buf_putc(b, ']');
	case json_type_object: {
		const char **keys;
		size_t n;

		if ((r = sorted_keys(o, &keys, &n)) < 0) {
			kc_buf_free(b);
			return r;
		}
		if ((r = kc_buf_putc(b, '{')) < 0)
			goto out;
		for (size_t k = 0; k < n; k++) {
			struct json_object *v = NULL;

			(void)json_object_object_get_ex(o, keys[k], &v);
			if ((k > 0 && (r = kc_buf_putc(b, ',')) < 0) ||
			    (r = json_string(b, keys[k], strlen(keys[k]))) < 0 ||
			    (r = kc_buf_putc(b, ':')) < 0 ||
			    (r = marshal(v, b, depth + 1)) < 0)
				goto out;
		}
		r = kc_buf_putc(b, '}');
out:
		kc_free(keys);
		return r;
	}
	}
	return 0;
}

/* Fails with -E2BIG (and frees 'b') once 'b' grows past JSONPATH_PRINT_MAX. */
static int
check_size(struct kc_buf *b, size_t base)
{
	if (b->len - base > JSONPATH_PRINT_MAX) {
		kc_buf_free(b);
		return -E2BIG;
	}
	return 0;
}

int
jsonpath_json_marshal(const struct json_object *o, struct kc_buf *out)
{
	size_t base = out->len;
	int r;

	if ((r = marshal(o, out, 0)) < 0) {
		kc_buf_free(out);
		return r;
	}
	return check_size(out, base);
}

static int
print_one(const struct jsonpath_value *v, struct kc_buf *b)
{
	char num[40];
	int64_t i;
	double f;

	switch (v->kind) {
	case JSONPATH_INT:
		return kc_buf_printf(b, "%" PRId64, v->v.i);
	case JSONPATH_FLOAT:
		(void)kc_sbuf_float_str(num, sizeof(num), v->v.f, KC_FLOAT_G64);
		return kc_buf_puts(b, num);
	case JSONPATH_BOOL:
		return kc_buf_puts(b, v->v.b ? "true" : "false");
	case JSONPATH_TEXT:
		return kc_buf_append(b, v->v.text.p, v->v.text.len);
	case JSONPATH_BYTE:
		return kc_buf_printf(b, "%u", (unsigned)v->v.byte);
	case JSONPATH_JSON:
		break;
	}
	switch (json_object_get_type(v->v.json)) {
	case json_type_null:
		return kc_buf_puts(b, "<nil>");
	case json_type_object:
	case json_type_array:
		return jsonpath_json_marshal(v->v.json, b);
	case json_type_boolean:
		return kc_buf_puts(b, json_object_get_boolean(v->v.json) ? "true" : "false");
	case json_type_int:
	case json_type_double:
		if (json_number(v->v.json, &i, &f))
			return kc_buf_printf(b, "%" PRId64, i);
		(void)kc_sbuf_float_str(num, sizeof(num), f, KC_FLOAT_G64);
		return kc_buf_puts(b, num);
	case json_type_string:
		return kc_buf_append(b, json_object_get_string(v->v.json),
		    (size_t)json_object_get_string_len(v->v.json));
	}
	return 0;
}

int
jsonpath_print(const struct jsonpath_value *vals, size_t n, struct kc_buf *out)
{
	size_t base = out->len;
	int r;

	for (size_t i = 0; i < n; i++) {
		if ((r = print_one(&vals[i], out)) < 0 ||
		    (i + 1 < n && (r = kc_buf_putc(out, ' ')) < 0))
			return r;
		if ((r = check_size(out, base)) < 0)
			return r;
	}
	return 0;
}

int
jsonpath_execute(const struct jsonpath *jp, const struct json_object *doc,
    unsigned flags, struct kc_buf *out, struct kc_status *st)
{
	struct jsonpath_results res;
	int r;

	if ((r = jsonpath_find(jp, doc, flags, &res, st)) < 0)
		return r;
	for (size_t i = 0; i < res.n; i++)
		if ((r = jsonpath_print(res.lists[i].vals, res.lists[i].n, out)) < 0)
			break;
	jsonpath_results_free(&res);
	return r < 0 ? r : 0;
}

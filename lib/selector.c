/*
 * selector.c: label and field selectors, parsed, converted, matched and
 * printed the way k8s.io/apimachinery does it.
 *
 * The client cache and the devcluster both filter with this file, so a
 * difference from upstream would pass every round trip between them and
 * only show against a real cluster. Hence the rule here: follow upstream
 * to the letter, quirks and error messages included.
 *
 * Label selectors (pkg/labels/selector.go). A hand-written lexer turns
 * the text into tokens: identifiers, the keywords "in" and "notin", and
 * the symbols = == != ! ( ) , > <. Keywords count as identifiers wherever
 * a value is expected, so "in in (in)" is a valid selector. The parser is
 * upstream's recursive descent with one token of lookahead; each
 * requirement then goes through the checks of labels.NewRequirement()
 * (key a qualified name, values valid label values, the right number of
 * values for the operator, integers for > and <). A parsed requirement
 * holds its values sorted and deduplicated, as upstream's sets.String
 * does, and the requirements are sorted by key, so the canonical string
 * falls out of a plain walk. metav1.LabelSelector objects come through
 * the same NewRequirement() checks; their values keep duplicates, as
 * upstream keeps them, and are sorted in memory since only the printed
 * order is observable.
 *
 * There are three kinds of selector: the empty one, which matches
 * everything and prints as ""; the match-nothing one of a nil
 * metav1.LabelSelector ('nothing' set), which also prints as "" upstream;
 * and one with requirements.
 *
 * Field selectors (pkg/fields/selector.go). The text is split at commas
 * not escaped by a backslash; the terms are sorted as raw strings, empty
 * ones are skipped, and each is cut at its first "!=", "==" or "=". Field
 * names are not checked at parse time (the server checks them against
 * what the resource supports); values are unescaped, and an unescaped ','
 * or '=' in a value is an error. A term with an empty field and an empty
 * value vanishes, as upstream's identity transform drops it.
 *
 * Error messages reproduce Go's formatting: %q quoting of bad values,
 * field paths such as "values[0][tier]", "<nil>" for the path of a key in
 * a parsed selector, and "[a, b]" around more than one error.
 *
 * Nothing here keeps state between calls; a built selector is read-only.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/json.h>
#include <kc/sbuf.h>
#include <kc/selector.h>
#include <kc/str.h>
#include <kc/validation.h>

/* Room for one formatted message: the size of kc_status.message. */
#define MSG_MAX		sizeof(((struct kc_status *)NULL)->message)

/*
 * Messages
 */

/* A bounded message that items are appended to, with separators. */
struct msg {
	char		buf[MSG_MAX];
	size_t		len;
	unsigned	n;		/* items appended */
};

static void msg_add(struct msg *, const char *sep, const char *fmt, ...)
    _printf_(3, 4);

static void
msg_add(struct msg *m, const char *sep, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (m->n++ > 0 && m->len < sizeof(m->buf) - 1) {
		w = snprintf(m->buf + m->len, sizeof(m->buf) - m->len, "%s", sep);
		if (w > 0)
			m->len = KC_MIN(m->len + (size_t)w, sizeof(m->buf) - 1);
	}
	if (m->len >= sizeof(m->buf) - 1)
		return;
	va_start(ap, fmt);
	w = vsnprintf(m->buf + m->len, sizeof(m->buf) - m->len, fmt, ap);
	va_end(ap);
	if (w > 0)
		m->len = KC_MIN(m->len + (size_t)w, sizeof(m->buf) - 1);
}

/* Go's %#v of a []string: []string{"a", "b"}, or []string(nil) when empty. */
static void
go_string_slice(char *dst, size_t size, const struct kc_str *v, size_t n)
{
	struct kc_sbuf b;

	kc_sbuf_init(&b, dst, size);
	if (n == 0) {
		kc_sbuf_puts(&b, "[]string(nil)");
		return;
	}
	kc_sbuf_puts(&b, "[]string{");
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			kc_sbuf_puts(&b, ", ");
		kc_sbuf_quote(&b, v[i].p, v[i].len);
	}
	kc_sbuf_putc(&b, '}');
}

/*
 * Validation (pkg/util/validation)
 */

/*
 * The messages of a pkg/util/validation check, joined with "; " into
 * 'm' as upstream's field.Invalid(..., strings.Join(errs, "; ")). True
 * when the value is valid.
 */
static bool
check(size_t (*valid)(struct kc_str, struct kc_valid *), struct kc_str s, struct msg *m)
{
	struct kc_valid v;
	size_t n = valid(s, &v);

	for (size_t i = 0; i < n; i++)
		msg_add(m, "; ", "%s", v.msg[i]);
	return n == 0;
}

/*
 * Label selectors
 */

enum label_op {
	OP_IN,
	OP_NOTIN,
	OP_EQ,			/* "=" */
	OP_DEQ,			/* "==" */
	OP_NEQ,
	OP_GT,
	OP_LT,
	OP_EXISTS,
	OP_NOTEXISTS,
};

struct label_req {
	char		 *key;
	char		**values;	/* sorted */
	size_t		  nvalues;
	int64_t		  num;		/* the operand of > and < */
	enum label_op	  op;
	size_t		  seq;		/* input order, for a stable sort */
};

struct kc_label_selector {
	struct label_req *reqs;		/* sorted by key, then seq */
	size_t		  nreqs;
	size_t		  cap;
	bool		  nothing;	/* a nil metav1.LabelSelector */
};

static void
req_clear(struct label_req *r)
{
	for (size_t i = 0; i < r->nvalues; i++)
		kc_free(r->values[i]);
	kc_free(r->values);
	kc_free(r->key);
}

struct kc_label_selector *
kc_label_selector_free(struct kc_label_selector *sel)
{
	if (sel == NULL)
		return NULL;
	for (size_t i = 0; i < sel->nreqs; i++)
		req_clear(&sel->reqs[i]);
	kc_free(sel->reqs);
	return kc_free(sel);
}

static int
cmp_str(const void *a, const void *b)
{
	const struct kc_str *x = a, *y = b;
	int c = memcmp(x->p, y->p, KC_MIN(x->len, y->len));

	if (c != 0)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

static int
cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
cmp_req(const void *a, const void *b)
{
	const struct label_req *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c != 0)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * labels.NewRequirement()'s checks: every reason the requirement is
 * invalid goes into 'el', in upstream's order. True when it is valid.
 */
static bool
req_validate(struct kc_str key, enum label_op op, const struct kc_str *vals,
    size_t n, struct msg *el)
{
	char q[MSG_MAX], vs[MSG_MAX];
	struct msg m = { 0 };
	int64_t num;

	if (!check(kc_valid_qualified_name, key, &m)) {
		(void)kc_sbuf_quoted_len(q, sizeof(q), key.p, key.len);
		msg_add(el, ", ", "key: Invalid value: %s: %s", q, m.buf);
	}
	switch (op) {
	case OP_IN:
	case OP_NOTIN:
		if (n == 0) {
			go_string_slice(vs, sizeof(vs), vals, n);
			msg_add(el, ", ", "values: Invalid value: %s: for 'in', "
			    "'notin' operators, values set can't be empty", vs);
		}
		break;
	case OP_EQ:
	case OP_DEQ:
	case OP_NEQ:
		if (n != 1) {
			go_string_slice(vs, sizeof(vs), vals, n);
			msg_add(el, ", ", "values: Invalid value: %s: exact-match "
			    "compatibility requires one single value", vs);
		}
		break;
	case OP_EXISTS:
	case OP_NOTEXISTS:
		if (n != 0) {
			go_string_slice(vs, sizeof(vs), vals, n);
			msg_add(el, ", ", "values: Invalid value: %s: values set "
			    "must be empty for exists and does not exist", vs);
		}
		break;
	case OP_GT:
	case OP_LT:
		if (n != 1) {
			go_string_slice(vs, sizeof(vs), vals, n);
			msg_add(el, ", ", "values: Invalid value: %s: for 'Gt', "
			    "'Lt' operators, exactly one value is required", vs);
		}
		for (size_t i = 0; i < n; i++) {
			if (kc_str_to_i64(vals[i], &num) == 0)
				continue;
			(void)kc_sbuf_quoted_len(q, sizeof(q), vals[i].p, vals[i].len);
			msg_add(el, ", ", "values[%zu]: Invalid value: %s: for "
			    "'Gt', 'Lt' operators, the value must be an integer",
			    i, q);
		}
		break;
	}
	for (size_t i = 0; i < n; i++) {
		struct msg vm = { 0 };

		if (check(kc_valid_label_value, vals[i], &vm))
			continue;
		(void)kc_sbuf_quoted_len(q, sizeof(q), vals[i].p, vals[i].len);
		msg_add(el, ", ", "values[%zu][%.*s]: Invalid value: %s: %s", i,
		    (int)KC_MIN(key.len, (size_t)KC_QUALIFIED_NAME_MAX * 5), key.p, q, vm.buf);
	}
	return el->n == 0;
}

/* The message of an aggregate of errors: one alone, more in brackets. */
static const char *
msg_aggregate(const struct msg *el, char *buf, size_t size)
{
	size_t n;

	if (el->n <= 1)
		return el->buf;
	n = KC_MIN(el->len, size - 3);
	buf[0] = '[';
	memcpy(buf + 1, el->buf, n);
	buf[n + 1] = ']';
	buf[n + 2] = '\0';
	return buf;
}

/*
 * Validates a requirement and appends it to 'sel'. KC_EINVALID with the
 * reasons in 'el', or -ENOMEM (with 'sel' unchanged).
 */
static int
sel_add(struct kc_label_selector *sel, struct kc_str key, enum label_op op,
    const struct kc_str *vals, size_t n, struct msg *el)
{
	struct label_req r = { .op = op, .seq = sel->nreqs };

	if (!req_validate(key, op, vals, n, el))
		return KC_EINVALID;
	if (sel->nreqs == sel->cap) {
		size_t cap = sel->cap == 0 ? 4 : sel->cap * 2;
		struct label_req *p;

		if ((p = kc_reallocarray(sel->reqs, cap, sizeof(*p))) == NULL)
			return -ENOMEM;
		sel->reqs = p;
		sel->cap = cap;
	}
	if ((op == OP_GT || op == OP_LT) && kc_str_to_i64(vals[0], &r.num) < 0)
		return KC_EINVALID;	/* not reached: req_validate() parsed it */
	if ((r.key = kc_str_dup(key)) == NULL)
		return -ENOMEM;
	if (n > 0 && (r.values = kc_calloc(n, sizeof(*r.values))) == NULL)
		goto nomem;
	for (; r.nvalues < n; r.nvalues++)
		if ((r.values[r.nvalues] = kc_str_dup(vals[r.nvalues])) == NULL)
			goto nomem;
	if (n > 1)
		qsort(r.values, n, sizeof(*r.values), cmp_cstr);
	sel->reqs[sel->nreqs++] = r;
	return 0;
nomem:
	req_clear(&r);
	return -ENOMEM;
}

static void
sel_sort(struct kc_label_selector *sel)
{
	if (sel->nreqs > 1)
		qsort(sel->reqs, sel->nreqs, sizeof(*sel->reqs), cmp_req);
}

/*
 * The label selector lexer and parser (labels.Lexer, labels.Parser).
 */

enum tok {
	T_EOS,
	T_CLOSEPAR,
	T_COMMA,
	T_NOT,
	T_DEQ,
	T_EQ,
	T_GT,
	T_ID,
	T_IN,
	T_LT,
	T_NEQ,
	T_NOTIN,
	T_OPENPAR,
};

/* In VALUES context the keywords "in" and "notin" are identifiers. */
enum ctx {
	KEYOP,
	VALUES,
};

struct token {
	enum tok	type;
	struct kc_str	lit;
};

struct parser {
	const char	*s;
	size_t		 len;
	size_t		 pos;
	struct token	 next;		/* the lookahead token, already lexed */
	struct kc_str	*vals;		/* values of the requirement at hand */
	size_t		 nvals;
	size_t		 capvals;
	bool		 in_req;	/* error inside a requirement */
	char		 msg[MSG_MAX];
};

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool
is_special(char c)
{
	switch (c) {
	case '=': case '!': case '(': case ')': case ',': case '>': case '<':
		return true;
	}
	return false;
}

static struct token
lex(struct parser *p)
{
	struct token t;
	size_t start;

	while (p->pos < p->len && is_space(p->s[p->pos]))
		p->pos++;
	start = p->pos;
	t.lit.p = p->s + start;
	if (p->pos == p->len) {
		t.type = T_EOS;
		t.lit.len = 0;
		return t;
	}
	if (is_special(p->s[start])) {
		/* Longest match; the only two-character symbols are != and ==. */
		char c = p->s[start];

		p->pos++;
		if ((c == '!' || c == '=') && p->pos < p->len &&
		    p->s[p->pos] == '=') {
			p->pos++;
			t.type = c == '!' ? T_NEQ : T_DEQ;
		} else {
			switch (c) {
			case '=': t.type = T_EQ; break;
			case '!': t.type = T_NOT; break;
			case '(': t.type = T_OPENPAR; break;
			case ')': t.type = T_CLOSEPAR; break;
			case ',': t.type = T_COMMA; break;
			case '>': t.type = T_GT; break;
			default: t.type = T_LT; break;
			}
		}
		t.lit.len = p->pos - start;
		return t;
	}
	while (p->pos < p->len && !is_special(p->s[p->pos]) &&
	    !is_space(p->s[p->pos]))
		p->pos++;
	t.lit.len = p->pos - start;
	if (kc_str_eq_cstr(t.lit, "in"))
		t.type = T_IN;
	else if (kc_str_eq_cstr(t.lit, "notin"))
		t.type = T_NOTIN;
	else
		t.type = T_ID;
	return t;
}

static struct token
in_ctx(struct token t, enum ctx ctx)
{
	if (ctx == VALUES && (t.type == T_IN || t.type == T_NOTIN))
		t.type = T_ID;
	return t;
}

static struct token
lookahead(const struct parser *p, enum ctx ctx)
{
	return in_ctx(p->next, ctx);
}

static struct token
consume(struct parser *p, enum ctx ctx)
{
	struct token t = p->next;

	if (t.type != T_EOS)
		p->next = lex(p);
	return in_ctx(t, ctx);
}

static int perr(struct parser *, const char *, ...) _printf_(2, 3);

static int
perr(struct parser *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(p->msg, sizeof(p->msg), fmt, ap);
	va_end(ap);
	return KC_EINVALID;
}

/* A token's literal for "%.*s"; literals are at most KC_SELECTOR_MAX long. */
#define LIT(t)	(int)(t).lit.len, (t).lit.p

static int
add_value(struct parser *p, struct kc_str v)
{
	if (p->nvals == p->capvals) {
		size_t cap = p->capvals == 0 ? 8 : p->capvals * 2;
		struct kc_str *n;

		if ((n = kc_reallocarray(p->vals, cap, sizeof(*n))) == NULL)
			return -ENOMEM;
		p->vals = n;
		p->capvals = cap;
	}
	p->vals[p->nvals++] = v;
	return 0;
}

/* parseKeyAndInferOperator: '*ret_op' is -1 when an operator follows. */
static int
parse_key(struct parser *p, struct kc_str *ret_key, int *ret_op)
{
	struct token t, la;
	struct msg m = { 0 };
	char q[MSG_MAX];
	bool not = false;

	t = consume(p, VALUES);
	if (t.type == T_NOT) {
		not = true;
		t = consume(p, VALUES);
	}
	if (t.type != T_ID)
		return perr(p, "found '%.*s', expected: identifier", LIT(t));
	if (!check(kc_valid_qualified_name, t.lit, &m)) {
		(void)kc_sbuf_quoted_len(q, sizeof(q), t.lit.p, t.lit.len);
		return perr(p, "<nil>: Invalid value: %s: %s", q, m.buf);
	}
	la = lookahead(p, VALUES);
	if (not)
		*ret_op = OP_NOTEXISTS;
	else if (la.type == T_EOS || la.type == T_COMMA)
		*ret_op = OP_EXISTS;
	else
		*ret_op = -1;
	*ret_key = t.lit;
	return 0;
}

static int
parse_operator(struct parser *p, enum label_op *ret_op)
{
	struct token t = consume(p, KEYOP);

	switch (t.type) {
	case T_IN: *ret_op = OP_IN; break;
	case T_EQ: *ret_op = OP_EQ; break;
	case T_DEQ: *ret_op = OP_DEQ; break;
	case T_GT: *ret_op = OP_GT; break;
	case T_LT: *ret_op = OP_LT; break;
	case T_NOTIN: *ret_op = OP_NOTIN; break;
	case T_NEQ: *ret_op = OP_NEQ; break;
	default:
		return perr(p, "found '%.*s', expected: in, notin, =, ==, !=, gt, lt",
		    LIT(t));
	}
	return 0;
}

/* parseIdentifiersList: a possibly empty list of possibly empty values. */
static int
parse_identifiers(struct parser *p)
{
	static const struct kc_str empty = { "", 0 };
	struct token t, la;
	int r;

	for (;;) {
		t = consume(p, VALUES);
		switch (t.type) {
		case T_ID:
			if ((r = add_value(p, t.lit)) < 0)
				return r;
			la = lookahead(p, VALUES);
			if (la.type == T_COMMA)
				continue;
			if (la.type == T_CLOSEPAR)
				return 0;
			return perr(p, "found '%.*s', expected: ',' or ')'", LIT(la));
		case T_COMMA:
			if (p->nvals == 0 && (r = add_value(p, empty)) < 0)
				return r;
			la = lookahead(p, VALUES);
			if (la.type == T_CLOSEPAR)
				return add_value(p, empty);
			if (la.type == T_COMMA) {
				(void)consume(p, VALUES);
				if ((r = add_value(p, empty)) < 0)
					return r;
			}
			break;
		default:
			return perr(p, "found '%.*s', expected: ',', or identifier",
			    LIT(t));
		}
	}
}

/* parseValues: "(" values ")". */
static int
parse_values(struct parser *p)
{
	static const struct kc_str empty = { "", 0 };
	struct token t, la;
	int r;

	t = consume(p, VALUES);
	if (t.type != T_OPENPAR)
		return perr(p, "found '%.*s' expected: '('", LIT(t));
	la = lookahead(p, VALUES);
	switch (la.type) {
	case T_ID:
	case T_COMMA:
		if ((r = parse_identifiers(p)) < 0)
			return r;
		if (consume(p, VALUES).type != T_CLOSEPAR)
			return perr(p, "found '%.*s', expected: ')'", LIT(la));
		return 0;
	case T_CLOSEPAR:
		(void)consume(p, VALUES);
		return add_value(p, empty);
	default:
		return perr(p, "found '%.*s', expected: ',', ')' or identifier",
		    LIT(la));
	}
}

/* parseExactValue: one value, possibly empty. */
static int
parse_exact_value(struct parser *p)
{
	static const struct kc_str empty = { "", 0 };
	struct token t = lookahead(p, VALUES);

	if (t.type == T_EOS || t.type == T_COMMA)
		return add_value(p, empty);
	t = consume(p, VALUES);
	if (t.type == T_ID)
		return add_value(p, t.lit);
	return perr(p, "found '%.*s', expected: identifier", LIT(t));
}

static int
parse_requirement(struct parser *p, struct kc_label_selector *sel)
{
	struct msg el = { 0 };
	struct kc_str key;
	enum label_op op = OP_EXISTS;
	size_t n = 0;
	int r, inferred = -1;

	p->nvals = 0;
	if ((r = parse_key(p, &key, &inferred)) < 0)
		return r;
	if (inferred >= 0) {
		op = (enum label_op)inferred;
	} else {
		if ((r = parse_operator(p, &op)) < 0)
			return r;
		if (op == OP_IN || op == OP_NOTIN)
			r = parse_values(p);
		else
			r = parse_exact_value(p);
		if (r < 0)
			return r;
		/* A set, as upstream's sets.String: sorted, no duplicates. */
		qsort(p->vals, p->nvals, sizeof(*p->vals), cmp_str);
		for (size_t i = 0; i < p->nvals; i++)
			if (n == 0 || cmp_str(&p->vals[n - 1], &p->vals[i]) != 0)
				p->vals[n++] = p->vals[i];
	}
	r = sel_add(sel, key, op, p->vals, n, &el);
	if (r == KC_EINVALID) {
		char agg[MSG_MAX];

		return perr(p, "%s", msg_aggregate(&el, agg, sizeof(agg)));
	}
	return r;
}

static int
parse_selector(struct parser *p, struct kc_label_selector *sel)
{
	struct token t;
	int r;

	p->next = lex(p);
	for (;;) {
		t = lookahead(p, VALUES);
		switch (t.type) {
		case T_ID:
		case T_NOT:
			if (sel->nreqs >= KC_SELECTOR_REQS_MAX)
				return perr(p, "label selector has more than %d "
				    "requirements", KC_SELECTOR_REQS_MAX);
			if ((r = parse_requirement(p, sel)) < 0) {
				p->in_req = true;
				return r;
			}
			t = consume(p, VALUES);
			switch (t.type) {
			case T_EOS:
				return 0;
			case T_COMMA:
				t = lookahead(p, VALUES);
				if (t.type != T_ID && t.type != T_NOT)
					return perr(p, "found '%.*s', expected: "
					    "identifier after ','", LIT(t));
				break;
			default:
				return perr(p, "found '%.*s', expected: ',' or "
				    "'end of string'", LIT(t));
			}
			break;
		case T_EOS:
			return 0;
		default:
			return perr(p, "found '%.*s', expected: !, identifier, or "
			    "'end of string'", LIT(t));
		}
	}
}

static struct kc_label_selector *
sel_new(void)
{
	return kc_calloc(1, sizeof(struct kc_label_selector));
}

int
kc_label_selector_parse(const char *text, struct kc_label_selector **ret,
    struct kc_status *st)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *sel = NULL;
	struct parser p = { 0 };
	size_t len;
	int r;

	if (text == NULL)
		text = "";
	if ((len = strnlen(text, KC_SELECTOR_MAX + 1)) > KC_SELECTOR_MAX)
		return kc_status_set(st, KC_EINVALID,
		    "label selector longer than %d bytes", KC_SELECTOR_MAX);
	if ((sel = sel_new()) == NULL)
		return -ENOMEM;
	p.s = text;
	p.len = len;
	r = parse_selector(&p, sel);
	kc_free(p.vals);
	if (r == KC_EINVALID)
		return kc_status_set(st, r, "%s%s",
		    p.in_req ? "unable to parse requirement: " : "", p.msg);
	if (r < 0)
		return r;
	sel_sort(sel);
	*ret = sel;
	sel = NULL;
	return 0;
}

/* The JSON type of 'o' by name, "null" for NULL. */
static const char *
json_type_of(const struct json_object *o)
{
	return json_type_to_name(json_object_get_type(o));
}

static bool
json_is_null(const struct json_object *o)
{
	return o == NULL || json_object_is_type(o, json_type_null);
}

static struct kc_str
json_slice(struct json_object *o)
{
	return (struct kc_str){ json_object_get_string(o),
	    (size_t)json_object_get_string_len(o) };
}

/* Adds the k=v requirements of a JSON object of strings to 'sel'. */
static int
add_set(struct kc_label_selector *sel, const struct json_object *set,
    const char *what, struct kc_status *st)
{
	char agg[MSG_MAX];

	json_object_object_foreach(set, key, val) {
		struct kc_str v;
		struct msg el = { 0 };
		int r;

		if (!json_object_is_type(val, json_type_string))
			return kc_status_set(st, KC_EINVALID, "%s[%s]: expected "
			    "a string, got %s", what, key, json_type_of(val));
		v = json_slice(val);
		r = sel_add(sel, kc_str_from(key), OP_EQ, &v, 1, &el);
		if (r == KC_EINVALID)
			return kc_status_set(st, r, "%s",
			    msg_aggregate(&el, agg, sizeof(agg)));
		if (r < 0)
			return r;
	}
	return 0;
}

/* Adds one metav1.LabelSelectorRequirement to 'sel'. */
static int
add_expression(struct kc_label_selector *sel, const struct json_object *e,
    size_t i, struct kc_status *st)
{
	static const struct {
		const char	*name;
		enum label_op	 op;
	} ops[] = {
		{ "In", OP_IN },
		{ "NotIn", OP_NOTIN },
		{ "Exists", OP_EXISTS },
		{ "DoesNotExist", OP_NOTEXISTS },
	};
	_cleanup_(kc_freep) struct kc_str *vals = NULL;
	struct json_object *k, *o, *v;
	struct kc_str key = { "", 0 }, opname = { "", 0 };
	struct msg el = { 0 };
	char q[MSG_MAX], agg[MSG_MAX];
	size_t n = 0, j;
	int r;

	if (!json_object_is_type(e, json_type_object))
		return kc_status_set(st, KC_EINVALID, "matchExpressions[%zu]: "
		    "expected an object, got %s", i, json_type_of(e));
	k = kc_json_get(e, "key");
	o = kc_json_get(e, "operator");
	v = kc_json_get(e, "values");
	if (!json_is_null(k)) {
		if (!json_object_is_type(k, json_type_string))
			return kc_status_set(st, KC_EINVALID, "matchExpressions[%zu]"
			    ".key: expected a string, got %s", i, json_type_of(k));
		key = json_slice(k);
	}
	if (!json_is_null(o)) {
		if (!json_object_is_type(o, json_type_string))
			return kc_status_set(st, KC_EINVALID, "matchExpressions[%zu]"
			    ".operator: expected a string, got %s", i,
			    json_type_of(o));
		opname = json_slice(o);
	}
	if (!json_is_null(v)) {
		if (!json_object_is_type(v, json_type_array))
			return kc_status_set(st, KC_EINVALID, "matchExpressions[%zu]"
			    ".values: expected an array, got %s", i, json_type_of(v));
		n = json_object_array_length(v);
		if (n > KC_SELECTOR_VALUES_MAX)
			return kc_status_set(st, KC_EINVALID, "matchExpressions[%zu]"
			    ".values: more than %d values", i,
			    KC_SELECTOR_VALUES_MAX);
	}
	for (j = 0; j < KC_ARRAY_SIZE(ops); j++)
		if (kc_str_eq_cstr(opname, ops[j].name))
			break;
	if (j == KC_ARRAY_SIZE(ops)) {
		(void)kc_sbuf_quoted_len(q, sizeof(q), opname.p, opname.len);
		return kc_status_set(st, KC_EINVALID, "%s is not a valid label "
		    "selector operator", q);
	}
	if (n > 0 && (vals = kc_calloc(n, sizeof(*vals))) == NULL)
		return -ENOMEM;
	for (size_t x = 0; x < n; x++) {
		struct json_object *s = json_object_array_get_idx(v, x);

		if (!json_object_is_type(s, json_type_string))
			return kc_status_set(st, KC_EINVALID, "matchExpressions[%zu]"
			    ".values[%zu]: expected a string, got %s", i, x,
			    json_type_of(s));
		vals[x] = json_slice(s);
	}
	r = sel_add(sel, key, ops[j].op, vals, n, &el);
	if (r == KC_EINVALID)
		return kc_status_set(st, r, "%s",
		    msg_aggregate(&el, agg, sizeof(agg)));
	return r;
}

int
kc_label_selector_from_json(const struct json_object *ls,
    struct kc_label_selector **ret, struct kc_status *st)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *sel = NULL;
	struct json_object *ml, *me;
	size_t nlabels = 0, nexprs = 0;
	int r;

	if (!json_is_null(ls) && !json_object_is_type(ls, json_type_object))
		return kc_status_set(st, KC_EINVALID, "label selector: expected "
		    "an object, got %s", json_type_of(ls));
	ml = kc_json_get(ls, "matchLabels");
	me = kc_json_get(ls, "matchExpressions");
	if (!json_is_null(ml)) {
		if (!json_object_is_type(ml, json_type_object))
			return kc_status_set(st, KC_EINVALID, "matchLabels: "
			    "expected an object, got %s", json_type_of(ml));
		nlabels = (size_t)json_object_object_length(ml);
	}
	if (!json_is_null(me)) {
		if (!json_object_is_type(me, json_type_array))
			return kc_status_set(st, KC_EINVALID, "matchExpressions: "
			    "expected an array, got %s", json_type_of(me));
		nexprs = json_object_array_length(me);
	}
	if (nlabels + nexprs > KC_SELECTOR_REQS_MAX)
		return kc_status_set(st, KC_EINVALID, "label selector has more "
		    "than %d requirements", KC_SELECTOR_REQS_MAX);
	if ((sel = sel_new()) == NULL)
		return -ENOMEM;
	if (json_is_null(ls))
		sel->nothing = true;
	else {
		if (nlabels > 0 && (r = add_set(sel, ml, "matchLabels", st)) < 0)
			return r;
		for (size_t i = 0; i < nexprs; i++)
			if ((r = add_expression(sel, json_object_array_get_idx(me, i),
			    i, st)) < 0)
				return r;
		sel_sort(sel);
	}
	*ret = sel;
	sel = NULL;
	return 0;
}

int
kc_label_selector_from_set(const struct json_object *set,
    struct kc_label_selector **ret, struct kc_status *st)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *sel = NULL;
	int r;

	if (!json_is_null(set)) {
		if (!json_object_is_type(set, json_type_object))
			return kc_status_set(st, KC_EINVALID, "label set: expected "
			    "an object, got %s", json_type_of(set));
		if (json_object_object_length(set) > KC_SELECTOR_REQS_MAX)
			return kc_status_set(st, KC_EINVALID, "label set has more "
			    "than %d labels", KC_SELECTOR_REQS_MAX);
	}
	if ((sel = sel_new()) == NULL)
		return -ENOMEM;
	if (!json_is_null(set) && (r = add_set(sel, set, "labels", st)) < 0)
		return r;
	sel_sort(sel);
	*ret = sel;
	sel = NULL;
	return 0;
}

static bool
req_has_value(const struct label_req *r, const char *v)
{
	for (size_t i = 0; i < r->nvalues; i++)
		if (strcmp(r->values[i], v) == 0)
			return true;
	return false;
}

/* Requirement.Matches(). */
static bool
req_matches(const struct label_req *r, const struct json_object *labels)
{
	const char *v = kc_json_str(labels, r->key);
	int64_t n;

	switch (r->op) {
	case OP_IN:
	case OP_EQ:
	case OP_DEQ:
		return v != NULL && req_has_value(r, v);
	case OP_NOTIN:
	case OP_NEQ:
		return v == NULL || !req_has_value(r, v);
	case OP_EXISTS:
		return v != NULL;
	case OP_NOTEXISTS:
		return v == NULL;
	case OP_GT:
	case OP_LT:
		if (v == NULL || kc_parse_i64(v, &n) < 0)
			return false;
		return r->op == OP_GT ? n > r->num : n < r->num;
	}
	return false;
}

bool
kc_label_selector_matches(const struct kc_label_selector *sel,
    const struct json_object *labels)
{
	if (sel == NULL)
		return true;
	if (sel->nothing)
		return false;
	for (size_t i = 0; i < sel->nreqs; i++)
		if (!req_matches(&sel->reqs[i], labels))
			return false;
	return true;
}

bool
kc_label_selector_matches_obj(const struct kc_label_selector *sel,
    const struct json_object *obj)
{
	return kc_label_selector_matches(sel,
	    kc_json_get(obj, "metadata", "labels"));
}

bool
kc_label_selector_is_empty(const struct kc_label_selector *sel)
{
	return sel == NULL || (!sel->nothing && sel->nreqs == 0);
}

bool
kc_label_selector_is_nothing(const struct kc_label_selector *sel)
{
	return sel != NULL && sel->nothing;
}

bool
kc_label_selector_requires_exact_match(const struct kc_label_selector *sel,
    const char *key, const char **ret_value)
{
	if (sel == NULL || sel->nothing)
		return false;
	for (size_t i = 0; i < sel->nreqs; i++) {
		const struct label_req *r = &sel->reqs[i];

		if (strcmp(r->key, key) != 0)
			continue;
		if ((r->op == OP_EQ || r->op == OP_DEQ || r->op == OP_IN) &&
		    r->nvalues == 1) {
			if (ret_value != NULL)
				*ret_value = r->values[0];
			return true;
		}
		return false;
	}
	return false;
}

static int
req_print(struct kc_buf *b, const struct label_req *r)
{
	static const char *const opstr[] = {
		[OP_IN] = " in (", [OP_NOTIN] = " notin (", [OP_EQ] = "=",
		[OP_DEQ] = "==", [OP_NEQ] = "!=", [OP_GT] = ">", [OP_LT] = "<",
		[OP_EXISTS] = "", [OP_NOTEXISTS] = "",
	};
	int r2;

	if (r->op == OP_NOTEXISTS && (r2 = kc_buf_putc(b, '!')) < 0)
		return r2;
	if ((r2 = kc_buf_puts(b, r->key)) < 0 ||
	    (r2 = kc_buf_puts(b, opstr[r->op])) < 0)
		return r2;
	if (r->op == OP_EXISTS || r->op == OP_NOTEXISTS)
		return 0;
	for (size_t i = 0; i < r->nvalues; i++)
		if ((i > 0 && (r2 = kc_buf_putc(b, ',')) < 0) ||
		    (r2 = kc_buf_puts(b, r->values[i])) < 0)
			return r2;
	if (r->op == OP_IN || r->op == OP_NOTIN)
		return kc_buf_putc(b, ')');
	return 0;
}

int
kc_label_selector_string(const struct kc_label_selector *sel, char **ret)
{
	struct kc_buf b;
	char *s;
	int r;

	kc_buf_init(&b, KC_SELECTOR_STRING_MAX);
	for (size_t i = 0; sel != NULL && !sel->nothing && i < sel->nreqs; i++) {
		if (i > 0 && (r = kc_buf_putc(&b, ',')) < 0)
			return r;
		if ((r = req_print(&b, &sel->reqs[i])) < 0)
			return r;
	}
	if ((s = kc_buf_take(&b, NULL)) == NULL) {
		kc_buf_free(&b);
		return -ENOMEM;
	}
	kc_buf_free(&b);
	*ret = s;
	return 0;
}

/*
 * Field selectors
 */

struct field_term {
	char		*field;
	char		*value;		/* unescaped */
	enum kc_field_op op;
};

struct kc_field_selector {
	struct field_term *terms;
	size_t		   nterms;
};

struct kc_field_selector *
kc_field_selector_free(struct kc_field_selector *sel)
{
	if (sel == NULL)
		return NULL;
	for (size_t i = 0; i < sel->nterms; i++) {
		kc_free(sel->terms[i].field);
		kc_free(sel->terms[i].value);
	}
	kc_free(sel->terms);
	return kc_free(sel);
}

/*
 * splitTerms: cuts 's' at commas not escaped by a backslash, into
 * '*ret' (allocated, '*ret_n' slices). The backslashes stay.
 */
static int
split_terms(struct kc_str s, struct kc_str **ret, size_t *ret_n)
{
	struct kc_str *terms;
	size_t n = 1, start = 0, k = 0;
	bool slash = false;

	for (size_t i = 0; i < s.len; i++) {
		if (slash)
			slash = false;
		else if (s.p[i] == '\\')
			slash = true;
		else if (s.p[i] == ',')
			n++;
	}
	if ((terms = kc_calloc(n, sizeof(*terms))) == NULL)
		return -ENOMEM;
	slash = false;
	for (size_t i = 0; i < s.len; i++) {
		if (slash)
			slash = false;
		else if (s.p[i] == '\\')
			slash = true;
		else if (s.p[i] == ',') {
			terms[k++] = (struct kc_str){ s.p + start, i - start };
			start = i + 1;
		}
	}
	terms[k] = (struct kc_str){ s.p + start, s.len - start };
	*ret = terms;
	*ret_n = n;
	return 0;
}

/*
 * splitTerm: cuts 't' at its first "!=", "==" or "=". False when it has
 * none of them.
 */
static bool
split_term(struct kc_str t, struct kc_str *lhs, enum kc_field_op *op,
    struct kc_str *rhs)
{
	for (size_t i = 0; i < t.len; i++) {
		size_t oplen;

		if (t.p[i] == '!' && i + 1 < t.len && t.p[i + 1] == '=') {
			*op = KC_FIELD_NEQ;
			oplen = 2;
		} else if (t.p[i] == '=') {
			*op = KC_FIELD_EQ;
			oplen = i + 1 < t.len && t.p[i + 1] == '=' ? 2 : 1;
		} else
			continue;
		*lhs = (struct kc_str){ t.p, i };
		*rhs = (struct kc_str){ t.p + i + oplen, t.len - i - oplen };
		return true;
	}
	return false;
}

/*
 * UnescapeValue: "\\", "\," and "\=" become the character; any other
 * escape, a trailing backslash, or a bare ',' or '=' is an error. Like
 * Go, the slow path rewrites invalid UTF-8 bytes as U+FFFD.
 */
static int
unescape_value(struct kc_str v, char **ret, struct kc_status *st)
{
	static const char replacement[] = "\xef\xbf\xbd";
	struct kc_buf b;
	bool slash = false;
	char *out;
	int r = 0;

	if (memchr(v.p, '\\', v.len) == NULL && memchr(v.p, ',', v.len) == NULL &&
	    memchr(v.p, '=', v.len) == NULL) {
		if ((out = kc_str_dup(v)) == NULL)
			return -ENOMEM;
		*ret = out;
		return 0;
	}
	kc_buf_init(&b, 3 * v.len + 1);
	for (size_t i = 0; i < v.len && r == 0;) {
		uint32_t cp;
		size_t l = kc_utf8_decode(v.p + i, v.len - i, &cp);

		if (l == 0) {
			l = 1;
			cp = 0xfffd;
		}
		const char *bytes = cp == 0xfffd && l == 1 ? replacement : v.p + i;
		size_t blen = cp == 0xfffd && l == 1 ? 3 : l;

		if (slash) {
			if (cp != '\\' && cp != ',' && cp != '=') {
				kc_buf_free(&b);
				return kc_status_set(st, KC_EINVALID, "invalid field "
				    "selector: invalid escape sequence: \\%.*s",
				    (int)blen, bytes);
			}
			r = kc_buf_putc(&b, (char)cp);
			slash = false;
		} else if (cp == '\\') {
			slash = true;
		} else if (cp == ',' || cp == '=') {
			/* Go prints the rune with %v: its number. */
			kc_buf_free(&b);
			return kc_status_set(st, KC_EINVALID, "invalid field "
			    "selector: unescaped character in value: %u",
			    (unsigned)cp);
		} else
			r = kc_buf_append(&b, bytes, blen);
		i += l;
	}
	if (r < 0)
		return r;	/* the buffer is already freed */
	if (slash) {
		kc_buf_free(&b);
		return kc_status_set(st, KC_EINVALID, "invalid field selector: "
		    "invalid escape sequence: \\");
	}
	if ((out = kc_buf_take(&b, NULL)) == NULL) {
		kc_buf_free(&b);
		return -ENOMEM;
	}
	kc_buf_free(&b);
	*ret = out;
	return 0;
}

int
kc_field_selector_parse(const char *text, struct kc_field_selector **ret,
    struct kc_status *st)
{
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *sel = NULL;
	_cleanup_(kc_freep) struct kc_str *parts = NULL;
	struct kc_str s;
	size_t nparts = 0, nonempty = 0;
	int r;

	if (text == NULL)
		text = "";
	s.p = text;
	if ((s.len = strnlen(text, KC_SELECTOR_MAX + 1)) > KC_SELECTOR_MAX)
		return kc_status_set(st, KC_EINVALID,
		    "field selector longer than %d bytes", KC_SELECTOR_MAX);
	if ((sel = kc_calloc(1, sizeof(*sel))) == NULL)
		return -ENOMEM;
	if (s.len > 0) {
		if ((r = split_terms(s, &parts, &nparts)) < 0)
			return r;
		for (size_t i = 0; i < nparts; i++)
			nonempty += parts[i].len > 0;
	}
	if (nonempty > KC_SELECTOR_REQS_MAX)
		return kc_status_set(st, KC_EINVALID, "field selector has more "
		    "than %d terms", KC_SELECTOR_REQS_MAX);
	if (nonempty > 0 &&
	    (sel->terms = kc_calloc(nonempty, sizeof(*sel->terms))) == NULL)
		return -ENOMEM;
	if (nparts > 1)
		qsort(parts, nparts, sizeof(*parts), cmp_str);
	for (size_t i = 0; i < nparts; i++) {
		struct field_term *t;
		struct kc_str lhs, rhs;
		enum kc_field_op op;
		char *value = NULL;

		if (parts[i].len == 0)
			continue;
		/* Not before: with only empty terms, 'terms' is NULL. */
		t = &sel->terms[sel->nterms];
		if (!split_term(parts[i], &lhs, &op, &rhs))
			return kc_status_set(st, KC_EINVALID, "invalid selector: "
			    "'%s'; can't understand '%.*s'", text,
			    (int)parts[i].len, parts[i].p);
		if ((r = unescape_value(rhs, &value, st)) < 0)
			return r;
		if (lhs.len == 0 && value[0] == '\0') {
			kc_free(value);
			continue;
		}
		if ((t->field = kc_str_dup(lhs)) == NULL) {
			kc_free(value);
			return -ENOMEM;
		}
		t->value = value;
		t->op = op;
		sel->nterms++;
	}
	*ret = sel;
	sel = NULL;
	return 0;
}

bool
kc_field_selector_matches(const struct kc_field_selector *sel,
    kc_field_get_fn *get, void *arg)
{
	for (size_t i = 0; sel != NULL && i < sel->nterms; i++) {
		const struct field_term *t = &sel->terms[i];
		const char *v = get(arg, t->field);
		bool eq = strcmp(v != NULL ? v : "", t->value) == 0;

		if (eq != (t->op == KC_FIELD_EQ))
			return false;
	}
	return true;
}

const char *
kc_field_json_lookup(const struct json_object *obj, const char *path,
    char *buf, size_t size)
{
	struct json_object *cur = (struct json_object *)(uintptr_t)obj;
	struct kc_str rest = kc_str_from(path), seg;
	char key[256];
	int n;

	if (rest.len == 0)
		return NULL;
	for (;;) {
		bool last = !kc_str_cut(&rest, '.', &seg);

		if (seg.len == 0 || seg.len >= sizeof(key) || cur == NULL ||
		    !json_object_is_type(cur, json_type_object))
			return NULL;
		memcpy(key, seg.p, seg.len);
		key[seg.len] = '\0';
		if (!json_object_object_get_ex(cur, key, &cur))
			return NULL;
		if (last)
			break;
	}
	switch (json_object_get_type(cur)) {
	case json_type_string:
		return json_object_get_string(cur);
	case json_type_boolean:
		return json_object_get_boolean(cur) ? "true" : "false";
	case json_type_int:
		n = snprintf(buf, size, "%" PRId64, json_object_get_int64(cur));
		return n > 0 && (size_t)n < size ? buf : NULL;
	default:
		return NULL;
	}
}

struct json_getter {
	const struct json_object *obj;
	char		 buf[32];
};

static const char *
json_get(void *arg, const char *field)
{
	struct json_getter *g = arg;

	return kc_field_json_lookup(g->obj, field, g->buf, sizeof(g->buf));
}

bool
kc_field_selector_matches_json(const struct kc_field_selector *sel,
    const struct json_object *obj)
{
	struct json_getter g = { .obj = obj };

	return kc_field_selector_matches(sel, json_get, &g);
}

int
kc_field_selector_check(const struct kc_field_selector *sel,
    const char *const *supported, struct kc_status *st)
{
	for (size_t i = 0; sel != NULL && i < sel->nterms; i++) {
		const char *f = sel->terms[i].field;
		size_t j;

		for (j = 0; supported != NULL && supported[j] != NULL; j++)
			if (strcmp(supported[j], f) == 0)
				break;
		if (supported == NULL || supported[j] == NULL)
			return kc_status_set(st, KC_EINVALID,
			    "field label not supported: %s", f);
	}
	return 0;
}

size_t
kc_field_selector_count(const struct kc_field_selector *sel)
{
	return sel != NULL ? sel->nterms : 0;
}

bool
kc_field_selector_term(const struct kc_field_selector *sel, size_t i,
    const char **ret_field, enum kc_field_op *ret_op, const char **ret_value)
{
	if (sel == NULL || i >= sel->nterms)
		return false;
	if (ret_field != NULL)
		*ret_field = sel->terms[i].field;
	if (ret_op != NULL)
		*ret_op = sel->terms[i].op;
	if (ret_value != NULL)
		*ret_value = sel->terms[i].value;
	return true;
}

bool
kc_field_selector_is_empty(const struct kc_field_selector *sel)
{
	return kc_field_selector_count(sel) == 0;
}

bool
kc_field_selector_requires_exact_match(const struct kc_field_selector *sel,
    const char *field, const char **ret_value)
{
	for (size_t i = 0; sel != NULL && i < sel->nterms; i++) {
		const struct field_term *t = &sel->terms[i];

		if (t->op == KC_FIELD_EQ && strcmp(t->field, field) == 0) {
			if (ret_value != NULL)
				*ret_value = t->value;
			return true;
		}
	}
	return false;
}

int
kc_field_selector_string(const struct kc_field_selector *sel, char **ret)
{
	struct kc_buf b;
	char *s;
	int r;

	kc_buf_init(&b, KC_SELECTOR_STRING_MAX);
	for (size_t i = 0; sel != NULL && i < sel->nterms; i++) {
		const struct field_term *t = &sel->terms[i];

		if ((i > 0 && (r = kc_buf_putc(&b, ',')) < 0) ||
		    (r = kc_buf_puts(&b, t->field)) < 0 ||
		    (r = kc_buf_puts(&b, t->op == KC_FIELD_EQ ? "=" : "!=")) < 0)
			return r;
		for (const char *p = t->value; *p != '\0'; p++) {
			if ((*p == '\\' || *p == ',' || *p == '=') &&
			    (r = kc_buf_putc(&b, '\\')) < 0)
				return r;
			if ((r = kc_buf_putc(&b, *p)) < 0)
				return r;
		}
	}
	if ((s = kc_buf_take(&b, NULL)) == NULL) {
		kc_buf_free(&b);
		return -ENOMEM;
	}
	kc_buf_free(&b);
	*ret = s;
	return 0;
}

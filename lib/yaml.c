/*
 * yaml.c: YAML to json-c, and json-c back to YAML.
 *
 * Kubernetes never stores YAML: kubectl and the API server turn it into
 * JSON first (sigs.k8s.io/yaml on top of go-yaml) and work on that. This
 * file does the same with libyaml's event parser, building json-c values
 * as the events arrive, so that every limit is checked at the event that
 * would pass it, before any large structure exists.
 *
 * The model. A stack of frames holds the collections still open; each
 * mapping frame remembers the key waiting for its value. A finished value
 * (scalar, alias copy or closed collection) is "delivered" to the frame
 * on top: appended to a sequence, or stored under the pending key. The
 * stack's height is the nesting depth, counted on the YAML as written
 * (a merge value nests under its "<<" key). Anchors live in a small hash table
 * (per document, as YAML scopes them) holding a reference to the anchored
 * value plus its expanded node count and height, so an alias is checked
 * against the node and depth limits before it is copied. A billion-laughs
 * document therefore fails on the alias that would pass max_nodes, having
 * built no more than max_nodes values.
 *
 * Scalars. Quoted and block scalars are strings. A plain scalar is typed
 * the way go-yaml types it for Kubernetes, minus YAML 1.1's booleans
 * (kubectl, through go-yaml v2, still reads "yes" as true; libkc follows
 * YAML 1.2 there, so "enabled: yes" stays the string it looks like):
 *
 *	""  ~  null  Null  NULL			null
 *	true  True  TRUE  false  False  FALSE	booleans
 *	yes  no  on  off  y  n  (any case)	strings
 *	12  +12  -12  0x1F  0o17  0b101  0644	integers (0644 is octal, 420:
 *						go-yaml's reading, which
 *						"defaultMode: 0644" relies on)
 *	1_000					integer 1000 (go-yaml drops
 *						underscores in numbers)
 *	1.5  .5  1e3  -1.5E-3			floats
 *	08  09					floats 8 and 9 (not octal, so
 *						go-yaml reads them as floats)
 *	.inf  -.inf  .nan			KC_EPARSE: JSON has no such
 *						numbers, and sigs.k8s.io/yaml
 *						fails on them as well
 *	2001-12-14  1Ti  500m  1.2.3		strings
 *
 * An integer past int64 but within uint64 is a json-c uint64; a longer
 * decimal integer is a float (as in go-yaml); a longer hexadecimal,
 * octal or binary one stays a string. A float is a json-c double whose
 * JSON text (json_object_to_json_string(), kc_json_dump()) is what Go's
 * encoding/json prints, so "cpu: 0.1" is sent as 0.1, not as
 * 0.10000000000000001. Timestamps stay strings, as go-yaml gives them
 * to sigs.k8s.io/yaml.
 *
 * Tags. !!str, !!binary and !!timestamp make a string (!!binary is not
 * decoded); !!int, !!bool, !!null need a scalar of that type and !!float
 * one of float or integer type; !!map and !!seq must sit on a mapping and
 * a sequence. "!" and unknown tags leave scalars as strings and are
 * ignored on collections.
 *
 * Mappings. Keys must be scalars; a typed key becomes the string Go
 * gives it (1 -> "1", 0x10 -> "16", True -> "true", 1.5 -> "1.5"), and
 * a null key is an error, as it is for sigs.k8s.io/yaml. Two keys with
 * the same string are an error (kubectl's strict decoding). A merge key
 * "<<" takes a mapping or a sequence of mappings: their keys are added
 * unless the mapping sets them itself, wherever it does so; in a sequence
 * the earlier mapping wins.
 *
 *	base: &b {cpu: 1, mem: 2Gi}
 *	big:  {<<: *b, cpu: 4}		-> {"cpu": 4, "mem": "2Gi"}
 *
 * Documents. The result is a json-c array, one element per document
 * that has content: a stream of "---" lines and comments gives []. A
 * document holding "null" or "~" is JSON null, a NULL element in json-c.
 *
 * Dumping walks a json-c tree into libyaml's emitter in block style and
 * double-quotes every string a YAML 1.2 or 1.1 reader would take for
 * another type ("true", "123", "", "yes", "2001-12-14"), so that dumping
 * and parsing again gives an equal tree.
 *
 * Numbers are parsed and printed in the C locale whatever the program's
 * locale is (uselocale() for the duration of the call).
 */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/hash.h>
#include <kc/json.h>
#include <kc/sbuf.h>
#include <kc/str.h>
#include <kc/yaml.h>

#define YAML_TAG_PREFIX		"tag:yaml.org,2002:"

/* ------------------------------------------------------------------------
 * The C numeric locale, for strtod() and snprintf("%e").
 */

struct c_numeric {
	locale_t	c;
	locale_t	old;
};

static int
c_numeric_begin(struct c_numeric *cn)
{
	/* glibc hands out its static "C" locale here: no allocation. */
	if ((cn->c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0)) == (locale_t)0)
		return -ENOMEM;
	cn->old = uselocale(cn->c);
	return 0;
}

static void
c_numeric_end(struct c_numeric *cn)
{
	uselocale(cn->old);
	freelocale(cn->c);
}

/* ------------------------------------------------------------------------
 * Scalar resolution, shared by the parser (typing) and the dumper
 * (deciding what needs quotes).
 */

enum scalar_kind {
	SK_STR,
	SK_NULL,
	SK_BOOL,
	SK_INT,		/* .i */
	SK_UINT,	/* .u, above INT64_MAX */
	SK_FLOAT	/* .d, maybe infinite or NaN */
};

struct scalar {
	enum scalar_kind kind;
	bool		 b;
	int64_t		 i;
	uint64_t	 u;
	double		 d;
};

static const char *const null_words[] = { "~", "null", "Null", "NULL", NULL };
static const char *const true_words[] = { "true", "True", "TRUE", NULL };
static const char *const false_words[] = { "false", "False", "FALSE", NULL };
static const char *const nan_words[] = { ".nan", ".NaN", ".NAN", NULL };
static const char *const inf_words[] = {
	".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", NULL
};
static const char *const neg_inf_words[] = { "-.inf", "-.Inf", "-.INF", NULL };

/* YAML 1.1 booleans: strings here, quoted on output for 1.1 readers. */
static const char *const yaml11_bool_words[] = {
	"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
	"on", "On", "ON", "off", "Off", "OFF", NULL
};

static bool
word_in(const char *s, size_t len, const char *const *words)
{
	for (; *words != NULL; words++)
		if (strlen(*words) == len && memcmp(*words, s, len) == 0)
			return true;
	return false;
}

static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Go's strconv.ParseUint(s, 0, 64): a 0x, 0o or 0b prefix (either case)
 * picks the base, a leading 0 means octal, anything else is decimal.
 */
static bool
parse_go_uint(const char *s, size_t len, uint64_t *ret)
{
	unsigned base = 10;
	uint64_t v = 0;
	size_t i = 0;

	if (len == 0)
		return false;
	if (s[0] == '0' && len > 1) {
		switch (s[1]) {
		case 'x': case 'X':
			base = 16;
			i = 2;
			break;
		case 'o': case 'O':
			base = 8;
			i = 2;
			break;
		case 'b': case 'B':
			base = 2;
			i = 2;
			break;
		default:
			base = 8;
			i = 1;
			break;
		}
		if (i == len)
			return false;
	}
	for (; i < len; i++) {
		char c = s[i];
		unsigned d;

		if (is_digit(c))
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a') + 10;
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A') + 10;
		else
			return false;
		if (d >= base || v > (UINT64_MAX - d) / base)
			return false;
		v = v * base + d;
	}
	*ret = v;
	return true;
}

/* Go's strconv.ParseInt(s, 0, 64): an optional sign, then as above. */
static bool
parse_go_int(const char *s, size_t len, int64_t *ret)
{
	bool neg = false;
	uint64_t u;

	if (len > 0 && (s[0] == '+' || s[0] == '-')) {
		neg = s[0] == '-';
		s++;
		len--;
	}
	if (!parse_go_uint(s, len, &u))
		return false;
	if (neg) {
		if (u > (uint64_t)INT64_MAX + 1)
			return false;
		*ret = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
	} else {
		if (u > (uint64_t)INT64_MAX)
			return false;
		*ret = (int64_t)u;
	}
	return true;
}

/* go-yaml's float syntax: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool
is_yaml_float(const char *s, size_t len)
{
	size_t i = 0, start;

	if (i < len && (s[i] == '+' || s[i] == '-'))
		i++;
	if (i < len && s[i] == '.') {
		i++;
		for (start = i; i < len && is_digit(s[i]); i++)
			;
		if (i == start)
			return false;
	} else {
		for (start = i; i < len && is_digit(s[i]); i++)
			;
		if (i == start)
			return false;
		if (i < len && s[i] == '.')
			for (i++; i < len && is_digit(s[i]); i++)
				;
	}
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		for (start = i; i < len && is_digit(s[i]); i++)
			;
		if (i == start)
			return false;
	}
	return i == len;
}

/*
 * Parses 's' (NUL-terminated, already known to be float syntax). False
 * when it is out of range, as Go's ParseFloat() fails then.
 */
static bool
parse_float(const char *s, double *ret)
{
	char *end;
	double d;

	d = strtod(s, &end);
	if (*end != '\0' || isinf(d))
		return false;
	*ret = d;
	return true;
}

/*
 * Types a plain scalar (see the file header). Only fails with -ENOMEM,
 * for a copy of a long number without its underscores.
 */
static int
resolve_plain(const char *s, size_t len, struct scalar *ret)
{
	char small[64], *buf = small, *heap = NULL;
	size_t n = 0;
	int64_t i;
	uint64_t u;
	double d;

	memset(ret, 0, sizeof(*ret));
	ret->kind = SK_STR;
	if (len == 0 || word_in(s, len, null_words)) {
		ret->kind = SK_NULL;
		return 0;
	}
	if (word_in(s, len, true_words) || word_in(s, len, false_words)) {
		ret->kind = SK_BOOL;
		ret->b = s[0] == 't' || s[0] == 'T';
		return 0;
	}
	if (word_in(s, len, nan_words)) {
		ret->kind = SK_FLOAT;
		ret->d = NAN;
		return 0;
	}
	if (word_in(s, len, inf_words) || word_in(s, len, neg_inf_words)) {
		ret->kind = SK_FLOAT;
		ret->d = s[0] == '-' ? -INFINITY : INFINITY;
		return 0;
	}
	if (s[0] != '.' && s[0] != '+' && s[0] != '-' && !is_digit(s[0]))
		return 0;

	/* go-yaml removes every '_' from a number candidate, except ".5" ones. */
	for (size_t k = 0; k < len; k++)
		if (s[0] == '.' || s[k] != '_')
			n++;
	if (n >= sizeof(small)) {
		if ((heap = kc_malloc(n + 1)) == NULL)
			return -ENOMEM;
		buf = heap;
	}
	n = 0;
	for (size_t k = 0; k < len; k++)
		if (s[0] == '.' || s[k] != '_')
			buf[n++] = s[k];
	buf[n] = '\0';

	if (s[0] != '.' && parse_go_int(buf, n, &i)) {
		ret->kind = SK_INT;
		ret->i = i;
	} else if (s[0] != '.' && parse_go_uint(buf, n, &u)) {
		ret->kind = SK_UINT;
		ret->u = u;
	} else if (strlen(buf) == n && is_yaml_float(buf, n) && parse_float(buf, &d)) {
		ret->kind = SK_FLOAT;
		ret->d = d;
	}
	kc_free(heap);
	return 0;
}

/* ------------------------------------------------------------------------
 * Printing floats as Go does.
 */

#define FLOAT_TEXT_MAX	KC_FLOAT_MAX

/*
 * strconv.FormatFloat(v, 'g', -1, 32), which sigs.k8s.io/yaml uses for a
 * float map key, with its names for infinities and NaN.
 */
static void
format_key_float(double v, char *buf, size_t size)
{
	if (isnan(v)) {
		(void)snprintf(buf, size, ".nan");
		return;
	}
	if (!(fabs(v) <= FLT_MAX)) {
		(void)snprintf(buf, size, "%s.inf", v < 0 ? "-" : "");
		return;
	}
	(void)kc_sbuf_float_str(buf, size, v, KC_FLOAT_G32);
}

/* ------------------------------------------------------------------------
 * Anchors: name -> value, an open-addressing hash table per document.
 */

struct anchor {
	char			*name;		/* NULL: a free slot */
	struct json_object	*value;		/* a reference; NULL is null */
	size_t			 nodes;		/* nodes, aliases expanded */
	unsigned		 height;	/* collection levels */
	uint64_t		 gen;		/* which definition of the name */
	bool			 pending;	/* its collection is still open */
};

struct anchors {
	struct anchor	*slots;
	size_t		 cap;		/* 0 or a power of two */
	size_t		 n;
};

static size_t
anchor_hash(const char *s)
{
	return (size_t)kc_fnv1a64_str(KC_FNV1A64_INIT, s);
}

static struct anchor *
anchors_slot(const struct anchors *t, const char *name)
{
	size_t i;

	for (i = anchor_hash(name) & (t->cap - 1);; i = (i + 1) & (t->cap - 1))
		if (t->slots[i].name == NULL || strcmp(t->slots[i].name, name) == 0)
			return &t->slots[i];
}

static const struct anchor *
anchors_find(const struct anchors *t, const char *name)
{
	const struct anchor *a;

	if (t->cap == 0)
		return NULL;
	a = anchors_slot(t, name);
	return a->name != NULL ? a : NULL;
}

static void
anchors_clear(struct anchors *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		kc_free(t->slots[i].name);
		if (t->slots[i].value != NULL)
			json_object_put(t->slots[i].value);
	}
	t->slots = kc_free(t->slots);
	t->cap = 0;
	t->n = 0;
}

static int
anchors_grow(struct anchors *t)
{
	struct anchor *old = t->slots, *slots;
	size_t oldcap = t->cap, cap = oldcap != 0 ? oldcap * 2 : 16;

	if (cap < oldcap || (slots = kc_calloc(cap, sizeof(*slots))) == NULL)
		return -ENOMEM;
	t->slots = slots;
	t->cap = cap;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].name != NULL)
			*anchors_slot(t, old[i].name) = old[i];
	kc_free(old);
	return 0;
}

/*
 * Binds 'name' to 'v' (a new reference is taken) as definition 'gen',
 * replacing an earlier binding, as a later anchor of the same name does
 * in YAML. A pending binding is one whose collection is still open: an
 * alias to it would contain itself.
 */
static int
anchors_set(struct anchors *t, const char *name, struct json_object *v,
    size_t nodes, unsigned height, uint64_t gen, bool pending)
{
	struct anchor *a;
	int r;

	if ((t->n + 1) * 2 > t->cap && (r = anchors_grow(t)) < 0)
		return r;
	a = anchors_slot(t, name);
	if (a->name == NULL) {
		if ((a->name = kc_strdup(name)) == NULL)
			return -ENOMEM;
		t->n++;
	} else if (a->value != NULL) {
		json_object_put(a->value);
	}
	a->value = v != NULL ? json_object_get(v) : NULL;
	a->nodes = nodes;
	a->height = height;
	a->gen = gen;
	a->pending = pending;
	return 0;
}

/* ------------------------------------------------------------------------
 * The parser.
 */

struct frame {
	struct json_object	*c;		/* the object or array being built */
	char			*anchor;	/* bound when the collection ends */
	uint64_t		 anchor_gen;	/* its definition, in anchors */
	char			*key;		/* mapping: key waiting for a value */
	struct json_object	*merged;	/* mapping: keys taken from "<<" */
	yaml_mark_t		 mark;		/* where the collection starts */
	yaml_mark_t		 key_mark;	/* where 'key' starts */
	size_t			 nodes0;	/* node count at the start */
	unsigned		 height;	/* levels below this one */
	bool			 is_map;
	bool			 have_key;	/* 'key', or a merge, is pending */
	bool			 merge;		/* the pending key is "<<" */
	bool			 merged_once;	/* a "<<" was seen */
};

struct ctx {
	const char		*text;
	size_t			 len;
	size_t			 max_nodes;
	unsigned		 max_depth;
	struct kc_status	*st;

	size_t			 nodes;
	struct frame		*stack;
	unsigned		 depth;		/* frames in use */
	unsigned		 cap;
	struct anchors		 anchors;
	uint64_t		 anchor_gen;	/* definitions so far */

	struct json_object	*docs;
	struct json_object	*root;
	bool			 have_root;
	bool			 root_empty;
};

/* A short, printable excerpt of 's' for a message. */
static const char *
excerpt(const char *s, size_t len, char *buf, size_t size)
{
	size_t n = 0, max = size - 4;

	for (size_t i = 0; i < len && n < max; i++)
		buf[n++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	if (len > max) {
		/* Cut before a character, not inside one. */
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
		buf[n++] = '.';
		buf[n++] = '.';
		buf[n++] = '.';
	}
	buf[n] = '\0';
	return buf;
}

static int
fail_at(struct ctx *c, int code, const yaml_mark_t *m, const char *fmt, ...)
    _printf_(4, 5);

static int
fail_at(struct ctx *c, int code, const yaml_mark_t *m, const char *fmt, ...)
{
	char what[448];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return kc_status_set(c->st, code, "line %zu, column %zu: %s",
	    (size_t)m->line + 1, (size_t)m->column + 1, what);
}

/* "!!int" for a core tag, the tag itself otherwise. */
static const char *
short_tag(const char *tag, char *buf, size_t size)
{
	if (strncmp(tag, YAML_TAG_PREFIX, strlen(YAML_TAG_PREFIX)) != 0)
		return tag;
	(void)snprintf(buf, size, "!!%s", tag + strlen(YAML_TAG_PREFIX));
	return buf;
}

/* The suffix of a core tag ("int" for !!int), or NULL for any other. */
static const char *
core_tag(const yaml_char_t *tag)
{
	const char *t = (const char *)tag;

	if (t == NULL || strncmp(t, YAML_TAG_PREFIX, strlen(YAML_TAG_PREFIX)) != 0)
		return NULL;
	return t + strlen(YAML_TAG_PREFIX);
}

static int
count_nodes(struct ctx *c, size_t n, const yaml_mark_t *m)
{
	if (n > c->max_nodes || c->nodes > c->max_nodes - n)
		return fail_at(c, -E2BIG, m,
		    "more than %zu YAML nodes (aliases expanded)", c->max_nodes);
	c->nodes += n;
	return 0;
}

/* Types a scalar event: its tag decides, else its style, else its text. */
static int
classify(struct ctx *c, const yaml_event_t *ev, struct scalar *sc)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	const char *tag = (const char *)ev->data.scalar.tag;
	const char *core = core_tag(ev->data.scalar.tag);
	char tbuf[64], vbuf[48];
	bool ok;
	int r;

	memset(sc, 0, sizeof(*sc));
	sc->kind = SK_STR;
	if (tag == NULL) {
		if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
			return 0;
		return resolve_plain(s, len, sc);
	}
	if (core == NULL)
		return 0;
	if (strcmp(core, "map") == 0 || strcmp(core, "seq") == 0)
		return fail_at(c, KC_EPARSE, &ev->start_mark, "%s tag on a scalar",
		    short_tag(tag, tbuf, sizeof(tbuf)));
	if (strcmp(core, "int") != 0 && strcmp(core, "float") != 0 &&
	    strcmp(core, "bool") != 0 && strcmp(core, "null") != 0)
		return 0;
	if ((r = resolve_plain(s, len, sc)) < 0)
		return r;
	if (strcmp(core, "int") == 0) {
		ok = sc->kind == SK_INT || sc->kind == SK_UINT;
	} else if (strcmp(core, "float") == 0) {
		if (sc->kind == SK_INT)
			sc->d = (double)sc->i;
		else if (sc->kind == SK_UINT)
			sc->d = (double)sc->u;
		ok = sc->kind == SK_INT || sc->kind == SK_UINT || sc->kind == SK_FLOAT;
		sc->kind = SK_FLOAT;
	} else if (strcmp(core, "bool") == 0) {
		ok = sc->kind == SK_BOOL;
	} else {
		ok = sc->kind == SK_NULL;
	}
	if (!ok)
		return fail_at(c, KC_EPARSE, &ev->start_mark, "cannot read \"%s\" as %s",
		    excerpt(s, len, vbuf, sizeof(vbuf)), short_tag(tag, tbuf, sizeof(tbuf)));
	return 0;
}

/*
 * The JSON value of a typed scalar. *ret is NULL for null. -ERANGE for
 * an infinity or NaN, which the caller reports.
 */
static int
scalar_json(const struct scalar *sc, const char *s, size_t len, struct json_object **ret)
{
	char text[FLOAT_TEXT_MAX];
	struct json_object *v;

	switch (sc->kind) {
	case SK_NULL:
		*ret = NULL;
		return 0;
	case SK_BOOL:
		v = json_object_new_boolean(sc->b);
		break;
	case SK_INT:
		v = json_object_new_int64(sc->i);
		break;
	case SK_UINT:
		v = json_object_new_uint64(sc->u);
		break;
	case SK_FLOAT:
		if (!isfinite(sc->d))
			return -ERANGE;
		(void)kc_sbuf_float_str(text, sizeof(text), sc->d, KC_FLOAT_JSON);
		v = json_object_new_double_s(sc->d, text);
		break;
	case SK_STR:
	default:
		v = json_object_new_string_len(s, (int)len);
		break;
	}
	if (v == NULL)
		return -ENOMEM;
	*ret = v;
	return 0;
}

/*
 * The string form of a typed key, as sigs.k8s.io/yaml writes it, in a
 * new allocation. -EINVAL for a null key, -EILSEQ for a NUL in a string
 * (json-c keys are C strings); the caller reports those.
 */
static int
scalar_key(const struct scalar *sc, const char *s, size_t len, char **ret)
{
	char text[FLOAT_TEXT_MAX];
	char *k;

	switch (sc->kind) {
	case SK_NULL:
		return -EINVAL;
	case SK_BOOL:
		k = kc_strdup(sc->b ? "true" : "false");
		break;
	case SK_INT:
		k = kc_asprintf("%" PRId64, sc->i);
		break;
	case SK_UINT:
		k = kc_asprintf("%" PRIu64, sc->u);
		break;
	case SK_FLOAT:
		format_key_float(sc->d, text, sizeof(text));
		k = kc_strdup(text);
		break;
	case SK_STR:
	default:
		if (memchr(s, '\0', len) != NULL)
			return -EILSEQ;
		k = kc_strndup(s, len);
		break;
	}
	if (k == NULL)
		return -ENOMEM;
	*ret = k;
	return 0;
}

/* The scalar a JSON value stands for, for an alias used as a key. */
static bool
json_scalar(struct json_object *v, struct scalar *sc, const char **s, size_t *len)
{
	memset(sc, 0, sizeof(*sc));
	*s = "";
	*len = 0;
	switch (json_object_get_type(v)) {
	case json_type_null:
		sc->kind = SK_NULL;
		return true;
	case json_type_boolean:
		sc->kind = SK_BOOL;
		sc->b = json_object_get_boolean(v);
		return true;
	case json_type_int:
		sc->i = json_object_get_int64(v);
		if (sc->i >= 0 && (sc->u = json_object_get_uint64(v)) > (uint64_t)INT64_MAX)
			sc->kind = SK_UINT;
		else
			sc->kind = SK_INT;
		return true;
	case json_type_double:
		sc->kind = SK_FLOAT;
		sc->d = json_object_get_double(v);
		return true;
	case json_type_string:
		sc->kind = SK_STR;
		*s = json_object_get_string(v);
		*len = (size_t)json_object_get_string_len(v);
		return true;
	case json_type_object:
	case json_type_array:
	default:
		return false;
	}
}

static int
key_error(struct ctx *c, int r, const yaml_mark_t *m)
{
	if (r == -EINVAL)
		return fail_at(c, KC_EPARSE, m, "a mapping key cannot be null");
	if (r == -EILSEQ)
		return fail_at(c, KC_EPARSE, m, "a mapping key cannot contain a NUL character");
	return kc_status_set(c->st, r, "YAML: out of memory");
}

static struct frame *
top(struct ctx *c)
{
	return c->depth > 0 ? &c->stack[c->depth - 1] : NULL;
}

static bool
want_key(struct ctx *c)
{
	struct frame *f = top(c);

	return f != NULL && f->is_map && !f->have_key;
}

static void
frame_clear(struct frame *f)
{
	if (f->c != NULL)
		json_object_put(f->c);
	if (f->merged != NULL)
		json_object_put(f->merged);
	kc_free(f->anchor);
	kc_free(f->key);
	memset(f, 0, sizeof(*f));
}

static void
frame_take_key(struct frame *f)
{
	f->key = kc_free(f->key);
	f->have_key = false;
	f->merge = false;
}

/* Adds the keys of mapping 'src' that 'f' does not have yet. */
static int
merge_one(struct ctx *c, struct frame *f, struct json_object *src)
{
	json_object_object_foreach(src, k, v) {
		if (json_object_object_get_ex(f->c, k, NULL))
			continue;
		if (f->merged == NULL && (f->merged = json_object_new_object()) == NULL)
			return kc_status_set(c->st, -ENOMEM, "YAML: out of memory");
		if (kc_json_put_null(f->merged, k) < 0 ||
		    kc_json_put_nullable(f->c, k, json_object_get(v)) < 0)
			return kc_status_set(c->st, -ENOMEM, "YAML: out of memory");
	}
	return 0;
}

/* The value 'v' (owned) of a "<<" key in 'f'. */
static int
merge_into(struct ctx *c, struct frame *f, struct json_object *v, const yaml_mark_t *m)
{
	int r = 0;

	if (json_object_is_type(v, json_type_object)) {
		r = merge_one(c, f, v);
	} else if (json_object_is_type(v, json_type_array)) {
		size_t n = json_object_array_length(v);

		for (size_t i = 0; i < n && r == 0; i++) {
			struct json_object *e = json_object_array_get_idx(v, i);

			if (!json_object_is_type(e, json_type_object))
				r = fail_at(c, KC_EPARSE, m, "the merge key \"<<\" needs a "
				    "mapping or a sequence of mappings; item %zu is not a mapping",
				    i + 1);
			else
				r = merge_one(c, f, e);
		}
	} else {
		r = fail_at(c, KC_EPARSE, m,
		    "the merge key \"<<\" needs a mapping or a sequence of mappings");
	}
	if (v != NULL)
		json_object_put(v);
	return r;
}

/* Stores 'v' (owned) under the pending key of mapping 'f'. */
static int
map_put(struct ctx *c, struct frame *f, struct json_object *v)
{
	char kbuf[72];

	if (json_object_object_get_ex(f->c, f->key, NULL)) {
		if (f->merged == NULL || !json_object_object_get_ex(f->merged, f->key, NULL)) {
			if (v != NULL)
				json_object_put(v);
			return fail_at(c, KC_EPARSE, &f->key_mark, "duplicate mapping key \"%s\"",
			    excerpt(f->key, strlen(f->key), kbuf, sizeof(kbuf)));
		}
		/* An explicit key overrides what a merge brought in. */
		json_object_object_del(f->merged, f->key);
	}
	if (kc_json_put_nullable(f->c, f->key, v) < 0)
		return kc_status_set(c->st, -ENOMEM, "YAML: out of memory");
	return 0;
}

/*
 * Hands a finished value to whatever waits for it: the anchor it carries,
 * then the open collection, or the document. 'v' is owned (NULL is null);
 * 'nodes' and 'height' describe it with aliases expanded.
 */
static int
deliver(struct ctx *c, struct json_object *v, size_t nodes, unsigned height,
    const char *anchor, uint64_t gen, bool empty, const yaml_mark_t *m)
{
	struct frame *f = top(c);
	const struct anchor *a;
	int r = 0;

	if (anchor != NULL && gen == 0) {
		r = anchors_set(&c->anchors, anchor, v, nodes, height, ++c->anchor_gen, false);
	} else if (anchor != NULL) {
		/* Unless a later anchor inside took the name, it is ours now. */
		a = anchors_find(&c->anchors, anchor);
		if (a != NULL && a->gen == gen)
			r = anchors_set(&c->anchors, anchor, v, nodes, height, gen, false);
	}
	if (r < 0) {
		if (v != NULL)
			json_object_put(v);
		return kc_status_set(c->st, r, "YAML: out of memory");
	}
	if (f == NULL) {
		c->root = v;
		c->have_root = true;
		c->root_empty = empty;
		return 0;
	}
	if (!f->is_map) {
		f->height = KC_MAX(f->height, height);
		if (kc_json_append_nullable(f->c, v) < 0)
			return kc_status_set(c->st, -ENOMEM, "YAML: out of memory");
		return 0;
	}
	/* Heights are the YAML's: a merge value counts as nested here. */
	f->height = KC_MAX(f->height, height);
	if (f->merge)
		r = merge_into(c, f, v, m);
	else
		r = map_put(c, f, v);
	frame_take_key(f);
	return r;
}

/* Makes 'key' (owned) the pending key of the mapping on top. */
static void
set_key(struct ctx *c, char *key, bool merge, const yaml_mark_t *m)
{
	struct frame *f = top(c);

	f->key = key;
	f->merge = merge;
	f->have_key = true;
	f->key_mark = *m;
}

static int
on_scalar(struct ctx *c, const yaml_event_t *ev)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	const char *anchor = (const char *)ev->data.scalar.anchor;
	struct json_object *v = NULL;
	struct scalar sc;
	char *key = NULL;
	bool plain = ev->data.scalar.tag == NULL &&
	    ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	int r;

	if ((r = count_nodes(c, 1, &ev->start_mark)) < 0)
		return r;
	if ((r = classify(c, ev, &sc)) < 0)
		return r;
	if (!want_key(c)) {
		if ((r = scalar_json(&sc, s, len, &v)) == -ERANGE)
			return fail_at(c, KC_EPARSE, &ev->start_mark, "\"%.*s\" is not a number "
			    "JSON can hold (infinity or NaN); quote it to keep it as a string",
			    (int)KC_MIN(len, 16), s);
		if (r < 0)
			return kc_status_set(c->st, r, "YAML: out of memory");
		return deliver(c, v, 1, 0, anchor, 0, plain && len == 0 && anchor == NULL,
		    &ev->start_mark);
	}

	if (plain && len == 2 && memcmp(s, "<<", 2) == 0) {
		struct frame *f = top(c);

		if (f->merged_once)
			return fail_at(c, KC_EPARSE, &ev->start_mark,
			    "duplicate mapping key \"<<\"");
		f->merged_once = true;
		set_key(c, NULL, true, &ev->start_mark);
		return 0;
	}
	if ((r = scalar_key(&sc, s, len, &key)) < 0)
		return key_error(c, r, &ev->start_mark);
	if (anchor != NULL) {
		/* An anchored key may be aliased as a value later. */
		r = scalar_json(&sc, s, len, &v);
		if (r == -ERANGE)
			r = (v = json_object_new_string(key)) != NULL ? 0 : -ENOMEM;
		if (r == 0)
			r = anchors_set(&c->anchors, anchor, v, 1, 0, ++c->anchor_gen, false);
		if (v != NULL)
			json_object_put(v);
		if (r < 0) {
			kc_free(key);
			return kc_status_set(c->st, r, "YAML: out of memory");
		}
	}
	set_key(c, key, false, &ev->start_mark);
	return 0;
}

static int
on_alias(struct ctx *c, const yaml_event_t *ev)
{
	const char *name = (const char *)ev->data.alias.anchor;
	const struct anchor *a = anchors_find(&c->anchors, name);
	struct json_object *v = NULL;
	struct scalar sc;
	const char *s;
	size_t len;
	char *key = NULL, nbuf[72];
	int r;

	if (a == NULL)
		return fail_at(c, KC_EPARSE, &ev->start_mark, "unknown alias \"*%s\"",
		    excerpt(name, strlen(name), nbuf, sizeof(nbuf)));
	if (a->pending)
		return fail_at(c, KC_EPARSE, &ev->start_mark,
		    "alias \"*%s\" refers to a node that contains it",
		    excerpt(name, strlen(name), nbuf, sizeof(nbuf)));
	if ((r = count_nodes(c, a->nodes, &ev->start_mark)) < 0)
		return r;
	if (a->height > c->max_depth || c->depth > c->max_depth - a->height)
		return fail_at(c, -E2BIG, &ev->start_mark,
		    "alias \"*%s\" nests deeper than %u levels",
		    excerpt(name, strlen(name), nbuf, sizeof(nbuf)), c->max_depth);
	if (want_key(c)) {
		if (!json_scalar(a->value, &sc, &s, &len))
			return fail_at(c, KC_EPARSE, &ev->start_mark,
			    "a mapping key must be a scalar; alias \"*%s\" is a %s",
			    excerpt(name, strlen(name), nbuf, sizeof(nbuf)),
			    json_object_is_type(a->value, json_type_array) ?
			    "sequence" : "mapping");
		if ((r = scalar_key(&sc, s, len, &key)) < 0)
			return key_error(c, r, &ev->start_mark);
		set_key(c, key, false, &ev->start_mark);
		return 0;
	}
	if (a->value != NULL && json_object_deep_copy(a->value, &v, NULL) < 0)
		return kc_status_set(c->st, -ENOMEM, "YAML: out of memory");
	return deliver(c, v, a->nodes, a->height, NULL, 0, false, &ev->start_mark);
}

static int
on_collection_start(struct ctx *c, const yaml_event_t *ev, bool is_map)
{
	const yaml_char_t *atag = is_map ? ev->data.mapping_start.tag :
	    ev->data.sequence_start.tag;
	const yaml_char_t *aanchor = is_map ? ev->data.mapping_start.anchor :
	    ev->data.sequence_start.anchor;
	const char *core = core_tag(atag);
	const char *what = is_map ? "mapping" : "sequence";
	struct frame *f;
	char tbuf[64];
	int r;

	if (want_key(c))
		return fail_at(c, KC_EPARSE, &ev->start_mark,
		    "a mapping key must be a scalar, not a %s", what);
	if (core != NULL && strcmp(core, is_map ? "map" : "seq") != 0 &&
	    (strcmp(core, is_map ? "seq" : "map") == 0 || strcmp(core, "str") == 0 ||
	    strcmp(core, "int") == 0 || strcmp(core, "float") == 0 ||
	    strcmp(core, "bool") == 0 || strcmp(core, "null") == 0 ||
	    strcmp(core, "binary") == 0 || strcmp(core, "timestamp") == 0))
		return fail_at(c, KC_EPARSE, &ev->start_mark, "%s tag on a %s",
		    short_tag((const char *)atag, tbuf, sizeof(tbuf)), what);
	if ((r = count_nodes(c, 1, &ev->start_mark)) < 0)
		return r;
	if (c->depth >= c->max_depth)
		return fail_at(c, -E2BIG, &ev->start_mark,
		    "YAML nests deeper than %u levels", c->max_depth);
	if (c->depth == c->cap) {
		unsigned cap = c->cap != 0 ? c->cap * 2 : 16;
		struct frame *s;

		if ((s = kc_reallocarray(c->stack, cap, sizeof(*s))) == NULL)
			return kc_status_set(c->st, -ENOMEM, "YAML: out of memory");
		c->stack = s;
		c->cap = cap;
	}
	f = &c->stack[c->depth];
	memset(f, 0, sizeof(*f));
	f->is_map = is_map;
	f->mark = ev->start_mark;
	f->nodes0 = c->nodes - 1;
	if ((f->c = is_map ? json_object_new_object() : json_object_new_array()) == NULL)
		return kc_status_set(c->st, -ENOMEM, "YAML: out of memory");
	if (aanchor != NULL) {
		f->anchor_gen = ++c->anchor_gen;
		if ((f->anchor = kc_strdup((const char *)aanchor)) == NULL ||
		    (r = anchors_set(&c->anchors, f->anchor, NULL, 0, 0, f->anchor_gen,
		    true)) < 0) {
			frame_clear(f);
			return kc_status_set(c->st, -ENOMEM, "YAML: out of memory");
		}
	}
	c->depth++;
	return 0;
}

static int
on_collection_end(struct ctx *c)
{
	struct frame *f = top(c);
	struct json_object *v = f->c;
	char *anchor = f->anchor;
	uint64_t gen = f->anchor_gen;
	yaml_mark_t mark = f->mark;
	size_t nodes = c->nodes - f->nodes0;
	unsigned height = f->height + 1;
	int r;

	f->c = NULL;
	f->anchor = NULL;
	frame_clear(f);
	c->depth--;
	r = deliver(c, v, nodes, height, anchor, gen, false, &mark);
	kc_free(anchor);
	return r;
}

static int
on_document_end(struct ctx *c)
{
	int r = 0;

	if (c->have_root && !c->root_empty && kc_json_append_nullable(c->docs, c->root) < 0)
		r = kc_status_set(c->st, -ENOMEM, "YAML: out of memory");
	else if (c->root_empty && c->root != NULL)
		json_object_put(c->root);
	c->root = NULL;
	c->have_root = false;
	c->root_empty = false;
	anchors_clear(&c->anchors);
	return r;
}

/* Where byte 'off' of the input is, for libyaml's reader errors. */
static void
offset_mark(const char *text, size_t len, size_t off, yaml_mark_t *m)
{
	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < off && i < len; i++) {
		if (text[i] == '\n') {
			m->line++;
			m->column = 0;
		} else if (((unsigned char)text[i] & 0xc0) != 0x80) {
			m->column++;
		}
	}
}

static int
parser_error(struct ctx *c, const yaml_parser_t *p)
{
	const yaml_mark_t *pm = &p->problem_mark, *cm = &p->context_mark;
	const char *problem = p->problem != NULL ? p->problem : "malformed YAML";
	const char *hint = "";
	yaml_mark_t m;
	size_t idx;

	switch (p->error) {
	case YAML_MEMORY_ERROR:
		return kc_status_set(c->st, -ENOMEM, "YAML: out of memory");
	case YAML_READER_ERROR:
		offset_mark(c->text, c->len, p->problem_offset, &m);
		if (p->problem_value != -1)
			return fail_at(c, KC_EPARSE, &m, "%s (byte 0x%02X)", problem,
			    (unsigned)p->problem_value & 0xffu);
		return fail_at(c, KC_EPARSE, &m, "%s", problem);
	case YAML_SCANNER_ERROR:
	case YAML_PARSER_ERROR:
	default:
		/* libyaml's mark index leaves out a UTF-8 byte-order mark. */
		idx = pm->index + (c->len >= 3 && memcmp(c->text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0);
		if (idx < c->len && c->text[idx] == '\t')
			hint = "; tabs cannot indent YAML, use spaces";
		if (p->context != NULL && (cm->line != pm->line || cm->column != pm->column))
			return fail_at(c, KC_EPARSE, pm, "%s (%s at line %zu, column %zu)%s",
			    problem, p->context, (size_t)cm->line + 1, (size_t)cm->column + 1,
			    hint);
		if (p->context != NULL)
			return fail_at(c, KC_EPARSE, pm, "%s (%s)%s", problem, p->context, hint);
		return fail_at(c, KC_EPARSE, pm, "%s%s", problem, hint);
	}
}

static int
on_event(struct ctx *c, const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return on_scalar(c, ev);
	case YAML_ALIAS_EVENT:
		return on_alias(c, ev);
	case YAML_SEQUENCE_START_EVENT:
		return on_collection_start(c, ev, false);
	case YAML_MAPPING_START_EVENT:
		return on_collection_start(c, ev, true);
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		return on_collection_end(c);
	case YAML_DOCUMENT_END_EVENT:
		return on_document_end(c);
	case YAML_NO_EVENT:
	case YAML_STREAM_START_EVENT:
	case YAML_STREAM_END_EVENT:
	case YAML_DOCUMENT_START_EVENT:
	default:
		return 0;
	}
}

static void
ctx_free(struct ctx *c)
{
	for (unsigned i = 0; i < c->depth; i++)
		frame_clear(&c->stack[i]);
	c->stack = kc_free(c->stack);
	c->depth = 0;
	c->cap = 0;
	anchors_clear(&c->anchors);
	if (c->root != NULL)
		json_object_put(c->root);
	c->root = NULL;
	if (c->docs != NULL)
		json_object_put(c->docs);
	c->docs = NULL;
}

int
kc_yaml_parse(const char *text, size_t len, const struct kc_yaml_opts *opts,
    struct json_object **ret, struct kc_status *st)
{
	size_t max_size = opts != NULL && opts->max_size != 0 ? opts->max_size :
	    KC_YAML_SIZE_MAX;
	struct ctx c = {
		.text = text != NULL ? text : "",
		.len = len,
		.max_nodes = opts != NULL && opts->max_nodes != 0 ? opts->max_nodes :
		    KC_YAML_NODES_MAX,
		.max_depth = opts != NULL && opts->max_depth != 0 ? opts->max_depth :
		    KC_YAML_DEPTH_MAX,
		.st = st,
	};
	struct c_numeric cn;
	yaml_parser_t p;
	yaml_event_t ev;
	bool done = false;
	int r = 0;

	if (text == NULL && len != 0)
		return kc_status_set(st, -EINVAL, "YAML: no input");
	if (len > max_size || len > INT32_MAX)
		return kc_status_set(st, -E2BIG, "YAML input of %zu bytes is larger than "
		    "the limit of %zu", len, KC_MIN(max_size, (size_t)INT32_MAX));
	if ((c.docs = json_object_new_array()) == NULL)
		return kc_status_set(st, -ENOMEM, "YAML: out of memory");
	if ((r = c_numeric_begin(&cn)) < 0) {
		json_object_put(c.docs);
		return kc_status_set(st, r, "YAML: out of memory");
	}
	if (!yaml_parser_initialize(&p)) {
		c_numeric_end(&cn);
		json_object_put(c.docs);
		return kc_status_set(st, -ENOMEM, "YAML: out of memory");
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)c.text, len);
	while (!done && r == 0) {
		if (!yaml_parser_parse(&p, &ev)) {
			r = parser_error(&c, &p);
			break;
		}
		r = on_event(&c, &ev);
		done = ev.type == YAML_STREAM_END_EVENT;
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	c_numeric_end(&cn);
	if (r < 0) {
		ctx_free(&c);
		return r;
	}
	*ret = c.docs;
	c.docs = NULL;
	ctx_free(&c);
	return 0;
}

int
kc_yaml_parse_one(const char *text, size_t len, const struct kc_yaml_opts *opts,
    struct json_object **ret, struct kc_status *st)
{
	struct json_object *docs = NULL, *v;
	size_t n;
	int r;

	if ((r = kc_yaml_parse(text, len, opts, &docs, st)) < 0)
		return r;
	if ((n = json_object_array_length(docs)) != 1) {
		json_object_put(docs);
		return kc_status_set(st, KC_EPARSE, "expected one YAML document, found %zu", n);
	}
	v = json_object_array_get_idx(docs, 0);
	*ret = v != NULL ? json_object_get(v) : NULL;
	json_object_put(docs);
	return 0;
}

/* ------------------------------------------------------------------------
 * The dumper.
 */

/*
 * The output is as large as the tree it prints, which the caller already
 * holds; the ceiling only keeps the buffer's arithmetic away from SIZE_MAX.
 */
#define DUMP_MAX	(SIZE_MAX / 4)

static int
write_out(void *data, unsigned char *buf, size_t size)
{
	return kc_buf_append(data, buf, size) == 0;
}

/* Whether 's' looks like a YAML 1.1 timestamp: YYYY-M-D, then anything. */
static bool
looks_like_timestamp(const char *s, size_t len)
{
	size_t i = 0, n;

	for (n = 0; i < len && is_digit(s[i]); i++, n++)
		;
	if (n != 4 || i >= len || s[i++] != '-')
		return false;
	for (n = 0; i < len && is_digit(s[i]); i++, n++)
		;
	if (n < 1 || n > 2 || i >= len || s[i++] != '-')
		return false;
	for (n = 0; i < len && is_digit(s[i]); i++, n++)
		;
	return n >= 1 && n <= 2;
}

/* Whether 's' is a YAML 1.1 sexagesimal number: 1:30, -2:00:00.5. */
static bool
looks_like_base60(const char *s, size_t len)
{
	size_t i = 0, n;
	bool colon = false;

	if (i < len && (s[i] == '+' || s[i] == '-'))
		i++;
	if (i >= len || !is_digit(s[i]))
		return false;
	while (i < len && (is_digit(s[i]) || s[i] == '_'))
		i++;
	while (i < len && s[i] == ':') {
		i++;
		for (n = 0; i < len && is_digit(s[i]); i++, n++)
			;
		if (n < 1 || n > 2)
			return false;
		colon = true;
	}
	if (colon && i < len && s[i] == '.')
		for (i++; i < len && (is_digit(s[i]) || s[i] == '_'); i++)
			;
	return colon && i == len;
}

/*
 * Whether a string must be quoted to read back as a string, here or in a
 * YAML 1.1 reader. Fails only with -ENOMEM.
 */
static int
needs_quotes(const char *s, size_t len, bool *ret)
{
	struct scalar sc;
	int r;

	if ((r = resolve_plain(s, len, &sc)) < 0)
		return r;
	*ret = sc.kind != SK_STR || word_in(s, len, yaml11_bool_words) ||
	    (len == 2 && memcmp(s, "<<", 2) == 0) || (len == 1 && s[0] == '=') ||
	    looks_like_timestamp(s, len) || looks_like_base60(s, len);
	return 0;
}

static int
emit(yaml_emitter_t *e, yaml_event_t *ev)
{
	/* The emitter frees the event, even when it fails. */
	return yaml_emitter_emit(e, ev) ? 0 : -ENOMEM;
}

static int
emit_plain(yaml_emitter_t *e, const char *s)
{
	yaml_event_t ev;

	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (const yaml_char_t *)s,
	    (int)strlen(s), 1, 1, YAML_PLAIN_SCALAR_STYLE))
		return -ENOMEM;
	return emit(e, &ev);
}

static int
emit_string(yaml_emitter_t *e, const char *s, size_t len, bool key)
{
	yaml_scalar_style_t style = YAML_ANY_SCALAR_STYLE;
	char *fixed = NULL;
	yaml_event_t ev;
	bool quote;
	int r;

	/* Invalid UTF-8 is written as U+FFFD, as Go's encoding/json does. */
	if (!kc_utf8_valid(s, len)) {
		if (len > DUMP_MAX)
			return -E2BIG;
		if ((fixed = kc_utf8_dup_valid(s, len, &len)) == NULL)
			return -ENOMEM;
		s = fixed;
	}
	if (len > INT32_MAX) {
		kc_free(fixed);
		return -E2BIG;
	}
	if ((r = needs_quotes(s, len, &quote)) < 0) {
		kc_free(fixed);
		return r;
	}
	if (quote)
		style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
	else if (!key && memchr(s, '\n', len) != NULL)
		style = YAML_LITERAL_SCALAR_STYLE;
	r = yaml_scalar_event_initialize(&ev, NULL, NULL, (const yaml_char_t *)s,
	    (int)len, 1, 1, style) ? emit(e, &ev) : -ENOMEM;
	kc_free(fixed);
	return r;
}

static int
emit_value(yaml_emitter_t *e, struct json_object *o)
{
	char text[FLOAT_TEXT_MAX + 2];
	yaml_event_t ev;
	double d;
	int64_t i;
	int r;

	switch (json_object_get_type(o)) {
	case json_type_null:
		return emit_plain(e, "null");
	case json_type_boolean:
		return emit_plain(e, json_object_get_boolean(o) ? "true" : "false");
	case json_type_int:
		if ((i = json_object_get_int64(o)) >= 0)
			(void)snprintf(text, sizeof(text), "%" PRIu64, json_object_get_uint64(o));
		else
			(void)snprintf(text, sizeof(text), "%" PRId64, i);
		return emit_plain(e, text);
	case json_type_double:
		d = json_object_get_double(o);
		if (isnan(d))
			return emit_plain(e, ".nan");
		if (isinf(d))
			return emit_plain(e, d < 0 ? "-.inf" : ".inf");
		(void)kc_sbuf_float_str(text, FLOAT_TEXT_MAX, d, KC_FLOAT_JSON);
		/* Keep it a float when read back: 1 is an integer, 1.0 is not. */
		if (strpbrk(text, ".e") == NULL)
			(void)kc_strlcat(text, ".0", sizeof(text));
		return emit_plain(e, text);
	case json_type_string:
		return emit_string(e, json_object_get_string(o),
		    (size_t)json_object_get_string_len(o), false);
	case json_type_array:
		if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
		    YAML_BLOCK_SEQUENCE_STYLE) || (r = emit(e, &ev)) < 0)
			return -ENOMEM;
		for (size_t k = 0, n = json_object_array_length(o); k < n; k++)
			if ((r = emit_value(e, json_object_array_get_idx(o, k))) < 0)
				return r;
		if (!yaml_sequence_end_event_initialize(&ev))
			return -ENOMEM;
		return emit(e, &ev);
	case json_type_object:
		if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
		    YAML_BLOCK_MAPPING_STYLE) || (r = emit(e, &ev)) < 0)
			return -ENOMEM;
		json_object_object_foreach(o, k, v) {
			if ((r = emit_string(e, k, strlen(k), true)) < 0 ||
			    (r = emit_value(e, v)) < 0)
				return r;
		}
		if (!yaml_mapping_end_event_initialize(&ev))
			return -ENOMEM;
		return emit(e, &ev);
	default:
		return -EINVAL;
	}
}

char *
kc_yaml_dump(const struct json_object *o, size_t *ret_len)
{
	struct json_object *root = (struct json_object *)(uintptr_t)o;
	struct c_numeric cn;
	yaml_emitter_t e;
	yaml_event_t ev;
	struct kc_buf out;
	char *text = NULL;
	int r;

	if (c_numeric_begin(&cn) < 0)
		return NULL;
	if (!yaml_emitter_initialize(&e)) {
		c_numeric_end(&cn);
		return NULL;
	}
	kc_buf_init(&out, DUMP_MAX);
	yaml_emitter_set_output(&e, write_out, &out);
	yaml_emitter_set_unicode(&e, 1);
	yaml_emitter_set_width(&e, -1);
	yaml_emitter_set_indent(&e, 2);
	yaml_emitter_set_break(&e, YAML_LN_BREAK);

	r = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) ? emit(&e, &ev) : -ENOMEM;
	if (r == 0)
		r = yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) ?
		    emit(&e, &ev) : -ENOMEM;
	if (r == 0)
		r = emit_value(&e, root);
	if (r == 0)
		r = yaml_document_end_event_initialize(&ev, 1) ? emit(&e, &ev) : -ENOMEM;
	if (r == 0)
		r = yaml_stream_end_event_initialize(&ev) ? emit(&e, &ev) : -ENOMEM;
	if (r == 0 && !yaml_emitter_flush(&e))
		r = -ENOMEM;
	yaml_emitter_delete(&e);
	c_numeric_end(&cn);
	if (r == 0)
		text = kc_buf_take(&out, ret_len);
	kc_buf_free(&out);
	return text;
}

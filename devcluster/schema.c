/*
 * schema.c: CustomResourceDefinition structural schemas.
 *
 * kube-apiserver hands a CRD and its custom resources to three pieces of
 * upstream code, and this file plays all three on json-c trees:
 *
 *   1. apiextensions' CRD validation (pkg/apis/apiextensions/validation):
 *      names, versions, subresources, printer columns, conversion, and
 *      the openAPIV3Schema rules: the allowed keywords, list and map
 *      types, defaults, and the structural-schema invariants of
 *      pkg/apiserver/schema (every node has a type unless it is
 *      int-or-string or preserves unknown fields; anyOf/allOf/oneOf/not
 *      only restrict values; metadata at the root only restricts name and
 *      generateName...). A v1 CRD is first converted to the internal type
 *      upstream, which moves a schema, subresources or printer columns
 *      that every version shares to the top level, so its errors read
 *      "spec.validation.openAPIV3Schema..." then; schema_crd_validate()
 *      reproduces that.
 *   2. k8s.io/kube-openapi's validator for custom resources, with
 *      apiextensions' translation of its results into field errors. Its
 *      quirks are kept: every validator of a node runs and errors are
 *      merged in validator order (type, anyOf/oneOf/allOf/not, string,
 *      format, number, array, enum, object); minProperties and
 *      maxProperties failures hide the object's other errors; composite
 *      failures carry the field "<nil>"; maxLength, maxItems and
 *      maxProperties lose their limit ("Too long: value is too long",
 *      "Too many: 4: has too many items") because kube-openapi never fills
 *      the limit in; an integer below a float minimum compares with the
 *      minimum truncated, as Go converts it; formats outside the list
 *      upstream keeps (StripUnsupportedFormatsPostProcess) are ignored.
 *   3. Pruning and defaulting (pkg/apiserver/schema/pruning, defaulting),
 *      which change the caller's tree in place, as upstream changes the
 *      decoded object.
 *
 * Values inside messages print as Go prints them: strings quoted as
 * strconv.Quote does, floats as %v (shortest, "1e+06"), maps as %#v
 * ("map[string]interface {}{\"a\":1}"). Upstream's dumps of Go structs
 * (the versions list, a whole JSONSchemaProps) cannot be reproduced and
 * print as compact JSON instead.
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
 * Not done: CEL (x-kubernetes-validations rules are checked for form,
 * never compiled or run), selectableFields, status.acceptedNames and
 * storedVersions (the core owns CRD status), the scale subresource's
 * runtime checks, and the "must result in valid metadata" checks of
 * defaults inside embedded metadata (they are validated as plain values).
 * Go's decoder errors for mistyped CRD fields are reproduced for the usual
 * cases, not for every path through JSONSchemaProps' custom decoders.
 *
 * Every input is untrusted. Recursion over schemas and objects stops at
 * SCHEMA_DEPTH_MAX (-E2BIG), error lists are bounded, and messages are
 * cut to fit their buffers. The module keeps no state and never logs.
 *
 *	struct schema_errs errs = { 0 };
 *	const struct json_object *s = schema_crd_version_schema(crd, "v1alpha1");
 *	if ((r = schema_prune(s, obj, &unknown)) < 0 ||
 *	    (r = schema_default(s, obj)) < 0)
 *		return r;
 *	if ((r = schema_validate(s, obj, &errs)) == KC_EINVALID)
 *		... 422 with errs ...
 */
#include <arpa/inet.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/str.h>

#include "schema.h"

#define PATH_MAX_LEN	1024		/* field paths while walking */
#define MSG_MAX		2048		/* one message being built */
#define ELIST_MAX	4096		/* errors gathered internally */
#define VALUE_DEPTH_MAX	16		/* nesting printed inside a message */

/* json-c's accessors take non-const pointers but only read. */
static struct json_object *
mut(const struct json_object *o)
{
	return (struct json_object *)(uintptr_t)o;
}

static enum json_type
jtype(const struct json_object *o)
{
	return json_object_get_type(o);
}

/* The member 'key' of object 'o', or NULL (also for JSON null). */
static const struct json_object *
jget(const struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o == NULL || jtype(o) != json_type_object ||
	    !json_object_object_get_ex(mut(o), key, &v))
		return NULL;
	return v;
}

/* Whether 'o' has member 'key', even with a null value. */
static bool
jhas(const struct json_object *o, const char *key)
{
	return o != NULL && jtype(o) == json_type_object &&
	    json_object_object_get_ex(mut(o), key, NULL);
}

static const char *
jstr(const struct json_object *o, const char *key)
{
	const struct json_object *v = jget(o, key);

	return v != NULL && jtype(v) == json_type_string ? json_object_get_string(mut(v)) :
	    NULL;
}

/* A string member, "" when absent or not a string. */
static const char *
jstr0(const struct json_object *o, const char *key)
{
	const char *s = jstr(o, key);

	return s != NULL ? s : "";
}

static bool
jbool(const struct json_object *o, const char *key)
{
	const struct json_object *v = jget(o, key);

	return v != NULL && jtype(v) == json_type_boolean && json_object_get_boolean(mut(v));
}

static const struct json_object *
jobj(const struct json_object *o, const char *key)
{
	const struct json_object *v = jget(o, key);

	return v != NULL && jtype(v) == json_type_object ? v : NULL;
}

static const struct json_object *
jarr(const struct json_object *o, const char *key)
{
	const struct json_object *v = jget(o, key);

	return v != NULL && jtype(v) == json_type_array ? v : NULL;
}

/* The number of members of an object; 0 for anything else. */
static size_t
jnkeys(const struct json_object *o)
{
	return o != NULL && jtype(o) == json_type_object ?
	    (size_t)json_object_object_length(mut(o)) : 0;
}

static size_t
jlen(const struct json_object *a)
{
	return a != NULL && jtype(a) == json_type_array ? json_object_array_length(mut(a)) :
	    0;
}

static const struct json_object *
jidx(const struct json_object *a, size_t i)
{
	return json_object_array_get_idx(mut(a), i);
}

static bool
jisnum(const struct json_object *v)
{
	return v != NULL && (jtype(v) == json_type_int || jtype(v) == json_type_double);
}

static double
jdouble(const struct json_object *v)
{
	return json_object_get_double(mut(v));
}

static int64_t
jint(const struct json_object *v)
{
	return json_object_get_int64(mut(v));
}

/* A number member as a double; false when absent or not a number. */
static bool
jnum(const struct json_object *o, const char *key, double *ret)
{
	const struct json_object *v = jget(o, key);

	if (!jisnum(v))
		return false;
	*ret = jdouble(v);
	return true;
}

/* An integer member; false when absent or not an integer. */
static bool
jinteger(const struct json_object *o, const char *key, int64_t *ret)
{
	const struct json_object *v = jget(o, key);

	if (v == NULL || jtype(v) != json_type_int)
		return false;
	*ret = jint(v);
	return true;
}

static double
dabs(double d)
{
	return d < 0 ? -d : d;
}

/* Go's conversion of a float64 to int64 (truncation), clamped. */
static int64_t
go_int64(double d)
{
	if (isnan(d))
		return INT64_MIN;
	if (d >= 9223372036854775807.0)
		return INT64_MAX;
	if (d <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)d;
}

/*
 * A bounded string builder that truncates instead of failing: messages
 * are cut, never lost.
 */
struct sb {
	char	*p;
	size_t	 size;
	size_t	 len;
};

static void
sb_init(struct sb *b, char *buf, size_t size)
{
	b->p = buf;
	b->size = size;
	b->len = 0;
	if (size > 0)
		buf[0] = '\0';
}

static void
sb_putn(struct sb *b, const char *s, size_t n)
{
	size_t room;

	if (b->size == 0 || b->len >= b->size - 1)
		return;
	room = b->size - 1 - b->len;
	if (n > room)
		n = room;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
sb_puts(struct sb *b, const char *s)
{
	sb_putn(b, s, strlen(s));
}

static void
sb_putc(struct sb *b, char c)
{
	sb_putn(b, &c, 1);
}

static void _printf_(2, 3)
sb_printf(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->size == 0 || b->len >= b->size - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->size - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	b->len += (size_t)n;
	if (b->len >= b->size)
		b->len = b->size - 1;
}

/*
 * Field paths, built as field.Path prints them: "spec" + ".nodes",
 * "[0]", "[key]". Each push returns the old length to restore.
 */
struct path {
	char	 buf[PATH_MAX_LEN];
	size_t	 len;
};

static void
path_reset(struct path *p, const char *s)
{
	p->len = kc_strlcpy(p->buf, s != NULL ? s : "", sizeof(p->buf));
	if (p->len >= sizeof(p->buf))
		p->len = sizeof(p->buf) - 1;
}

static size_t
path_push(struct path *p, const char *fmt, ...) _printf_(2, 3);

static size_t
path_push(struct path *p, const char *fmt, ...)
{
	size_t old = p->len;
	va_list ap;
	int n;

	if (p->len >= sizeof(p->buf) - 1)
		return old;
	va_start(ap, fmt);
	n = vsnprintf(p->buf + p->len, sizeof(p->buf) - p->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		p->len = KC_MIN(p->len + (size_t)n, sizeof(p->buf) - 1);
	return old;
}

/* Child("name"): "name" at the root, ".name" below it. */
static size_t
path_child(struct path *p, const char *name)
{
	return path_push(p, "%s%s", p->len > 0 ? "." : "", name);
}

static size_t
path_index(struct path *p, size_t i)
{
	return path_push(p, "[%zu]", i);
}

static size_t
path_key(struct path *p, const char *key)
{
	return path_push(p, "[%s]", key);
}

static void
path_pop(struct path *p, size_t len)
{
	p->len = len;
	p->buf[len] = '\0';
}

/* utf8.RuneCountInString: an invalid byte counts as one rune. */
static size_t
utf8_count(const char *s, size_t n)
{
	size_t count = 0, i = 0;
	uint32_t c;

	while (i < n) {
		size_t l = kc_utf8_decode(s + i, n - i, &c);

		i += l > 0 ? l : 1;
		count++;
	}
	return count;
}

/*
 * unicode.IsPrint, approximately: every assigned rune outside the
 * control, format, separator (but ASCII space), private-use and
 * surrogate ranges Go knows of.
 */
static bool
rune_printable(uint32_t c)
{
	if (c < 0x20 || (c >= 0x7f && c <= 0xa0) || c == 0xad)
		return false;
	if (c == 0x1680 || (c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f) ||
	    (c >= 0x205f && c <= 0x206f) || c == 0x3000 || c == 0xfeff ||
	    (c >= 0xfff9 && c <= 0xfffb) || (c >= 0xe000 && c <= 0xf8ff) ||
	    c >= 0xf0000)
		return false;
	return true;
}

/* strconv.Quote. */
static void
go_quote(struct sb *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	sb_putc(b, '"');
	while (i < n) {
		uint32_t c;
		size_t l = kc_utf8_decode(s + i, n - i, &c);

		if (l == 0) {
			sb_printf(b, "\\x%02x", u[i]);
			i++;
			continue;
		}
		switch (c) {
		case '"':  sb_puts(b, "\\\""); break;
		case '\\': sb_puts(b, "\\\\"); break;
		case '\a': sb_puts(b, "\\a"); break;
		case '\b': sb_puts(b, "\\b"); break;
		case '\f': sb_puts(b, "\\f"); break;
		case '\n': sb_puts(b, "\\n"); break;
		case '\r': sb_puts(b, "\\r"); break;
		case '\t': sb_puts(b, "\\t"); break;
		case '\v': sb_puts(b, "\\v"); break;
		default:
			if (rune_printable(c))
				sb_putn(b, s + i, l);
			else if (c < 0x80)
				sb_printf(b, "\\x%02x", (unsigned)c);
			else if (c < 0x10000)
				sb_printf(b, "\\u%04x", (unsigned)c);
			else
				sb_printf(b, "\\U%08x", (unsigned)c);
		}
		i += l;
	}
	sb_putc(b, '"');
}

static void
go_quote_str(struct sb *b, const char *s)
{
	go_quote(b, s, strlen(s));
}

/*
 * The shortest decimal digits that read back as 'v' (strconv's
 * shortest formatting): '*digits' gets them without a point, '*exp' the
 * decimal exponent of the first digit.
 */
static void
float_shortest(double v, char *digits, size_t size, int *exp)
{
	char buf[64];

	for (int prec = 1; prec <= 17; prec++) {
		char *e;
		size_t o = 0;

		(void)snprintf(buf, sizeof(buf), "%.*e", prec - 1, v);
		if (strtod(buf, NULL) != v && prec < 17)
			continue;
		e = strchr(buf, 'e');
		for (char *q = buf; q < e && o + 1 < size; q++)
			if (*q >= '0' && *q <= '9')
				digits[o++] = *q;
		while (o > 1 && digits[o - 1] == '0')
			o--;
		digits[o] = '\0';
		*exp = (int)strtol(e + 1, NULL, 10);
		return;
	}
}

/* Go's %v of a float64 ('g', shortest): "1", "0.5", "1e+06", "1.5e-07". */
static void
go_float(struct sb *b, double v)
{
	char digits[32];
	size_t nd;
	int exp;

	if (isnan(v)) {
		sb_puts(b, "NaN");
		return;
	}
	if (isinf(v)) {
		sb_puts(b, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (v == 0) {
		sb_puts(b, 1 / v < 0 ? "-0" : "0");
		return;
	}
	if (v < 0) {
		sb_putc(b, '-');
		v = -v;
	}
	float_shortest(v, digits, sizeof(digits), &exp);
	nd = strlen(digits);
	/* strconv's 'g' with the shortest precision switches at 1e+06. */
	if (exp < -4 || exp >= 6) {
		sb_putc(b, digits[0]);
		if (nd > 1) {
			sb_putc(b, '.');
			sb_puts(b, digits + 1);
		}
		sb_printf(b, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
		return;
	}
	if (exp < 0) {
		sb_puts(b, "0.");
		for (int i = -1; i > exp; i--)
			sb_putc(b, '0');
		sb_puts(b, digits);
		return;
	}
	for (int i = 0; i <= exp || (size_t)i < nd; i++) {
		if (i == exp + 1)
			sb_putc(b, '.');
		sb_putc(b, (size_t)i < nd ? digits[i] : '0');
	}
}

/* encoding/json's float64: 'f' between 1e-6 and 1e21, else 'e' ("1e-07"). */
static void
json_float(struct sb *b, double v)
{
	char digits[32];
	size_t nd;
	int exp;
	double a = dabs(v);

	if (v == 0) {
		sb_putc(b, '0');
		return;
	}
	if (v < 0) {
		sb_putc(b, '-');
		v = -v;
	}
	float_shortest(v, digits, sizeof(digits), &exp);
	nd = strlen(digits);
	if (a < 1e-6 || a >= 1e21) {
		sb_putc(b, digits[0]);
		if (nd > 1) {
			sb_putc(b, '.');
			sb_puts(b, digits + 1);
		}
		sb_printf(b, "e%c%d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
		return;
	}
	if (exp < 0) {
		sb_puts(b, "0.");
		for (int i = -1; i > exp; i--)
			sb_putc(b, '0');
		sb_puts(b, digits);
		return;
	}
	for (int i = 0; i <= exp || (size_t)i < nd; i++) {
		if (i == exp + 1)
			sb_putc(b, '.');
		sb_putc(b, (size_t)i < nd ? digits[i] : '0');
	}
}

/* Object keys in sorted order, as Go prints and marshals maps. */
static int
key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* At most this many keys are sorted for printing; the rest are skipped. */
#define PRINT_KEYS_MAX	64

static size_t
sorted_keys(const struct json_object *o, const char **keys)
{
	size_t n = 0;

	json_object_object_foreach(mut(o), k, v) {
		(void)v;
		if (n == PRINT_KEYS_MAX)
			break;
		keys[n++] = k;
	}
	if (n > 1)
		qsort(keys, n, sizeof(keys[0]), key_cmp);
	return n;
}

/* A JSON string as encoding/json writes it (HTML characters escaped). */
static void
json_string(struct sb *b, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;

	sb_putc(b, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (c == '"' || c == '\\') {
			sb_putc(b, '\\');
			sb_putc(b, (char)c);
		} else if (c == '\n')
			sb_puts(b, "\\n");
		else if (c == '\r')
			sb_puts(b, "\\r");
		else if (c == '\t')
			sb_puts(b, "\\t");
		else if (c < 0x20 || c == '<' || c == '>' || c == '&')
			sb_printf(b, "\\u%04x", c);
		else
			sb_putc(b, (char)c);
	}
	sb_putc(b, '"');
}

/* json.Marshal of a value (sorted keys, Go's escaping and floats). */
static void
go_json(struct sb *b, const struct json_object *v, unsigned depth)
{
	const char *keys[PRINT_KEYS_MAX];

	if (depth > VALUE_DEPTH_MAX) {
		sb_puts(b, "...");
		return;
	}
	switch (jtype(v)) {
	case json_type_null:
		sb_puts(b, "null");
		return;
	case json_type_boolean:
		sb_puts(b, json_object_get_boolean(mut(v)) ? "true" : "false");
		return;
	case json_type_int:
		sb_printf(b, "%lld", (long long)jint(v));
		return;
	case json_type_double:
		json_float(b, jdouble(v));
		return;
	case json_type_string:
		json_string(b, json_object_get_string(mut(v)),
		    (size_t)json_object_get_string_len(mut(v)));
		return;
	case json_type_array:
		sb_putc(b, '[');
		for (size_t i = 0; i < jlen(v); i++) {
			if (i > 0)
				sb_putc(b, ',');
			go_json(b, jidx(v, i), depth + 1);
		}
		sb_putc(b, ']');
		return;
	case json_type_object: {
		size_t n = sorted_keys(v, keys);

		sb_putc(b, '{');
		for (size_t i = 0; i < n; i++) {
			if (i > 0)
				sb_putc(b, ',');
			json_string(b, keys[i], strlen(keys[i]));
			sb_putc(b, ':');
			go_json(b, jget(v, keys[i]), depth + 1);
		}
		sb_putc(b, '}');
		return;
	}
	}
}

/* Go's %#v of a decoded JSON value held in an interface{}. */
static void
go_sharpv(struct sb *b, const struct json_object *v, unsigned depth)
{
	const char *keys[PRINT_KEYS_MAX];

	if (depth > VALUE_DEPTH_MAX) {
		sb_puts(b, "...");
		return;
	}
	switch (jtype(v)) {
	case json_type_null:
		sb_puts(b, "interface {}(nil)");
		return;
	case json_type_boolean:
		sb_puts(b, json_object_get_boolean(mut(v)) ? "true" : "false");
		return;
	case json_type_int:
		sb_printf(b, "%lld", (long long)jint(v));
		return;
	case json_type_double:
		go_float(b, jdouble(v));
		return;
	case json_type_string:
		go_quote(b, json_object_get_string(mut(v)),
		    (size_t)json_object_get_string_len(mut(v)));
		return;
	case json_type_array:
		sb_puts(b, "[]interface {}{");
		for (size_t i = 0; i < jlen(v); i++) {
			if (i > 0)
				sb_puts(b, ", ");
			go_sharpv(b, jidx(v, i), depth + 1);
		}
		sb_putc(b, '}');
		return;
	case json_type_object: {
		size_t n = sorted_keys(v, keys);

		sb_puts(b, "map[string]interface {}{");
		for (size_t i = 0; i < n; i++) {
			if (i > 0)
				sb_puts(b, ", ");
			go_quote_str(b, keys[i]);
			sb_putc(b, ':');
			go_sharpv(b, jget(v, keys[i]), depth + 1);
		}
		sb_putc(b, '}');
		return;
	}
	}
}

/*
 * A bad value as field.Error's ErrorBody prints it: null as "null",
 * strings quoted, numbers and booleans bare, maps and slices as %#v.
 */
static void
go_value(struct sb *b, const struct json_object *v)
{
	switch (jtype(v)) {
	case json_type_null:
		sb_puts(b, "\"null\"");
		return;
	case json_type_string:
		go_quote(b, json_object_get_string(mut(v)),
		    (size_t)json_object_get_string_len(mut(v)));
		return;
	case json_type_double:
		go_float(b, jdouble(v));
		return;
	default:
		go_sharpv(b, v, 0);
		return;
	}
}

/* Compact JSON, for upstream's dumps of Go structs. 0 or -ENOMEM. */
static int
json_dump_value(struct sb *b, const struct json_object *v)
{
	char *s;

	if (v == NULL) {
		sb_puts(b, "null");
		return 0;
	}
	if ((s = kc_json_dump(v, NULL)) == NULL)
		return -ENOMEM;
	sb_puts(b, s);
	kc_free(s);
	return 0;
}

/*
 * Error lists. Internally errors go into a growable list (composite
 * validators keep some and drop others); the caller's fixed list is filled
 * at the end.
 */
struct ierr {
	const char	*type;
	char		*field;		/* one allocation: field, NUL, body, NUL */
	const char	*body;
};

struct elist {
	struct ierr	*v;
	size_t		 n;
	size_t		 cap;
	size_t		 dropped;
};

static void
elist_free(struct elist *l)
{
	for (size_t i = 0; i < l->n; i++)
		kc_free(l->v[i].field);
	l->v = kc_free(l->v);
	l->n = l->cap = l->dropped = 0;
}

static int
elist_reserve(struct elist *l, size_t more)
{
	struct ierr *v;
	size_t cap;

	if (l->n + more <= l->cap)
		return 0;
	cap = KC_MAX(l->cap * 2, l->n + more);
	cap = KC_MAX(cap, 8);
	if ((v = kc_reallocarray(l->v, cap, sizeof(*v))) == NULL)
		return -ENOMEM;
	l->v = v;
	l->cap = cap;
	return 0;
}

static int
elist_add_raw(struct elist *l, const char *type, const char *field, const char *body)
{
	size_t fl = strlen(field), bl = strlen(body);
	char *p;

	if (l->n >= ELIST_MAX) {
		l->dropped++;
		return 0;
	}
	if (elist_reserve(l, 1) < 0 || (p = kc_malloc(fl + bl + 2)) == NULL)
		return -ENOMEM;
	memcpy(p, field, fl + 1);
	memcpy(p + fl + 1, body, bl + 1);
	l->v[l->n].type = type;
	l->v[l->n].field = p;
	l->v[l->n].body = p + fl + 1;
	l->n++;
	return 0;
}

/* Moves every error of 'src' to the end of 'dst'; 'src' ends empty. */
static int
elist_move(struct elist *dst, struct elist *src)
{
	size_t take;

	if (src->n == 0) {
		dst->dropped += src->dropped;
		elist_free(src);
		return 0;
	}
	take = KC_MIN(src->n, ELIST_MAX > dst->n ? ELIST_MAX - dst->n : 0);
	if (elist_reserve(dst, take) < 0)
		return -ENOMEM;
	memcpy(dst->v + dst->n, src->v, take * sizeof(*src->v));
	dst->n += take;
	for (size_t i = take; i < src->n; i++)
		kc_free(src->v[i].field);
	dst->dropped += src->dropped + (src->n - take);
	src->v = kc_free(src->v);
	src->n = src->cap = src->dropped = 0;
	return 0;
}

/* field.Error.Error(): the sort key of ValidateStructural. */
static int
ierr_cmp(const void *a, const void *b)
{
	const struct ierr *x = a, *y = b;
	int c = strcmp(x->field, y->field);

	/* "<field>: <body>": a field that is a prefix of the other sorts by ':'. */
	if (c != 0) {
		size_t lx = strlen(x->field), ly = strlen(y->field);

		if (lx < ly && strncmp(x->field, y->field, lx) == 0)
			return (unsigned char)':' - (unsigned char)y->field[lx];
		if (ly < lx && strncmp(x->field, y->field, ly) == 0)
			return (unsigned char)x->field[ly] - (unsigned char)':';
		return c;
	}
	return strcmp(x->body, y->body);
}

static void
elist_sort_from(struct elist *l, size_t from)
{
	if (l->n > from + 1)
		qsort(l->v + from, l->n - from, sizeof(*l->v), ierr_cmp);
}

static void
errs_put(struct schema_errs *errs, const char *type, const char *field, const char *body)
{
	struct schema_err *e;

	if (errs == NULL)
		return;
	if (errs->n == SCHEMA_ERRS_MAX) {
		errs->truncated = true;
		errs->dropped++;
		return;
	}
	e = &errs->items[errs->n++];
	e->type = type;
	(void)kc_strlcpy(e->field, field, sizeof(e->field));
	(void)kc_strlcpy(e->body, body, sizeof(e->body));
}

static void
elist_export(const struct elist *l, struct schema_errs *errs)
{
	if (errs == NULL)
		return;
	for (size_t i = 0; i < l->n; i++)
		errs_put(errs, l->v[i].type, l->v[i].field, l->v[i].body);
	if (l->dropped > 0) {
		errs->truncated = true;
		errs->dropped += l->dropped;
	}
}

void
schema_errs_add(struct schema_errs *errs, const char *type, const char *field,
    const char *fmt, ...)
{
	char body[SCHEMA_BODY_MAX];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	errs_put(errs, type, field != NULL ? field : "", body);
}

void
schema_err_string(const struct schema_err *e, char *buf, size_t size)
{
	if (e->field[0] != '\0')
		(void)snprintf(buf, size, "%s: %s", e->field, e->body);
	else
		(void)snprintf(buf, size, "%s", e->body);
}

/*
 * Field error constructors, as k8s.io/apimachinery's field package
 * prints them. 'detail' may be NULL or "".
 */
static int
fe_required(struct elist *l, const char *field, const char *detail)
{
	char body[MSG_MAX];

	if (detail != NULL && detail[0] != '\0')
		(void)snprintf(body, sizeof(body), "Required value: %s", detail);
	else
		(void)snprintf(body, sizeof(body), "Required value");
	return elist_add_raw(l, "Required", field, body);
}

static int
fe_forbidden(struct elist *l, const char *field, const char *detail)
{
	char body[MSG_MAX];

	(void)snprintf(body, sizeof(body), "Forbidden: %s", detail);
	return elist_add_raw(l, "Forbidden", field, body);
}

/* Invalid/TypeInvalid/Duplicate with an already printed value. */
static int
fe_valued(struct elist *l, const char *type, const char *field, const char *value,
    const char *detail)
{
	const char *word = strcmp(type, "Duplicate") == 0 ? "Duplicate value" : "Invalid value";
	char body[MSG_MAX];

	if (detail != NULL && detail[0] != '\0')
		(void)snprintf(body, sizeof(body), "%s: %s: %s", word, value, detail);
	else
		(void)snprintf(body, sizeof(body), "%s: %s", word, value);
	return elist_add_raw(l, type, field, body);
}

static int
fe_invalid_str(struct elist *l, const char *field, const char *value, const char *detail)
{
	char v[MSG_MAX];
	struct sb b;

	sb_init(&b, v, sizeof(v));
	go_quote_str(&b, value);
	return fe_valued(l, "Invalid", field, v, detail);
}

static int
fe_invalid_json(struct elist *l, const char *field, const struct json_object *value,
    const char *detail)
{
	char v[MSG_MAX];
	struct sb b;

	sb_init(&b, v, sizeof(v));
	go_value(&b, value);
	return fe_valued(l, "Invalid", field, v, detail);
}

/* field.NotSupported: the supported values quoted and joined. */
static int
fe_not_supported(struct elist *l, const char *field, const char *value_repr,
    const char *const *supported, size_t n)
{
	char body[MSG_MAX];
	struct sb b;

	sb_init(&b, body, sizeof(body));
	sb_printf(&b, "Unsupported value: %s", value_repr);
	if (n > 0) {
		sb_puts(&b, ": supported values: ");
		for (size_t i = 0; i < n; i++) {
			if (i > 0)
				sb_puts(&b, ", ");
			go_quote_str(&b, supported[i]);
		}
	}
	return elist_add_raw(l, "NotSupported", field, body);
}

static int
fe_not_supported_str(struct elist *l, const char *field, const char *value,
    const char *const *supported, size_t n)
{
	char v[MSG_MAX];
	struct sb b;

	sb_init(&b, v, sizeof(v));
	go_quote_str(&b, value);
	return fe_not_supported(l, field, v, supported, n);
}

/*
 * Names (k8s.io/apimachinery/pkg/util/validation)
 */

#define DNS1123_LABEL_FMT	"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define DNS1123_SUBDOMAIN_FMT	DNS1123_LABEL_FMT "(\\." DNS1123_LABEL_FMT ")*"
#define DNS1035_LABEL_FMT	"[a-z]([-a-z0-9]*[a-z0-9])?"
#define QUALIFIED_NAME_FMT	"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define QUALIFIED_NAME_MSG	"must consist of alphanumeric characters, '-', '_' or '.', " \
				"and must start and end with an alphanumeric character"

enum namekind {
	NAME_DNS1123_LABEL,
	NAME_DNS1123_SUBDOMAIN,
	NAME_DNS1035_LABEL,
};

static bool
is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool
is_alnum(char c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* One DNS label of [a-z0-9-] that starts with 'first' and ends alphanumeric. */
static bool
label_ok(const char *s, size_t n, bool alpha_first)
{
	if (n == 0)
		return false;
	if (alpha_first ? !(s[0] >= 'a' && s[0] <= 'z') : !is_lower_alnum(s[0]))
		return false;
	if (!is_lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 1; i + 1 < n; i++)
		if (!is_lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

/* validation.RegexError: msg, the examples, and the expression. */
static void
regex_error(struct sb *b, const char *msg, const char *fmt, const char *const *examples,
    size_t n)
{
	sb_puts(b, msg);
	if (n == 0) {
		sb_printf(b, " (regex used for validation is '%s')", fmt);
		return;
	}
	sb_puts(b, " (e.g. ");
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			sb_puts(b, " or ");
		sb_printf(b, "'%s', ", examples[i]);
	}
	sb_printf(b, "regex used for validation is '%s')", fmt);
}

/*
 * The messages IsDNS1123Label, IsDNS1123Subdomain and IsDNS1035Label
 * give for 'v': up to two, into msgs[0..1]. Returns how many.
 */
static size_t
dns_msgs(enum namekind kind, const char *v, char msgs[2][MSG_MAX])
{
	static const char *const ex_label[] = { "my-name", "123-abc" };
	static const char *const ex_sub[] = { "example.com" };
	static const char *const ex_1035[] = { "my-name", "abc-123" };
	size_t n = strlen(v), count = 0, max = kind == NAME_DNS1123_SUBDOMAIN ? 253 : 63;
	bool ok = true;
	struct sb b;

	if (n > max) {
		(void)snprintf(msgs[count++], MSG_MAX, "must be no more than %zu characters", max);
	}
	switch (kind) {
	case NAME_DNS1123_LABEL:
	case NAME_DNS1035_LABEL:
		ok = label_ok(v, n, kind == NAME_DNS1035_LABEL);
		break;
	case NAME_DNS1123_SUBDOMAIN:
		for (const char *p = v;;) {
			const char *dot = strchr(p, '.');
			size_t l = dot != NULL ? (size_t)(dot - p) : strlen(p);

			if (!label_ok(p, l, false)) {
				ok = false;
				break;
			}
			if (dot == NULL)
				break;
			p = dot + 1;
		}
		break;
	}
	if (ok)
		return count;
	sb_init(&b, msgs[count++], MSG_MAX);
	switch (kind) {
	case NAME_DNS1123_LABEL:
		regex_error(&b, "a lowercase RFC 1123 label must consist of lower case alphanumeric "
		    "characters or '-', and must start and end with an alphanumeric character",
		    DNS1123_LABEL_FMT, ex_label, 2);
		break;
	case NAME_DNS1123_SUBDOMAIN:
		regex_error(&b, "a lowercase RFC 1123 subdomain must consist of lower case "
		    "alphanumeric characters, '-' or '.', and must start and end with an "
		    "alphanumeric character", DNS1123_SUBDOMAIN_FMT, ex_sub, 1);
		break;
	case NAME_DNS1035_LABEL:
		regex_error(&b, "a DNS-1035 label must consist of lower case alphanumeric "
		    "characters or '-', start with an alphabetic character, and end with an "
		    "alphanumeric character", DNS1035_LABEL_FMT, ex_1035, 2);
		break;
	}
	return count;
}

/* The messages joined with "," as the CRD validation prints them. */
static bool
dns_joined(enum namekind kind, const char *v, const char *prefix, char *out, size_t size)
{
	char msgs[2][MSG_MAX];
	size_t n = dns_msgs(kind, v, msgs);
	struct sb b;

	sb_init(&b, out, size);
	sb_puts(&b, prefix);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			sb_putc(&b, ',');
		sb_puts(&b, msgs[i]);
	}
	return n > 0;
}

static int
check_dns(enum namekind kind, const char *field, const char *value, struct schema_errs *errs)
{
	char msgs[2][MSG_MAX], q[MSG_MAX];
	size_t n = dns_msgs(kind, value, msgs);
	struct sb b;

	sb_init(&b, q, sizeof(q));
	go_quote_str(&b, value);
	for (size_t i = 0; i < n; i++)
		schema_errs_add(errs, "Invalid", field, "Invalid value: %s: %s", q, msgs[i]);
	return (int)n;
}

int
schema_check_dns1123_subdomain(const char *field, const char *value,
    struct schema_errs *errs)
{
	return check_dns(NAME_DNS1123_SUBDOMAIN, field, value, errs);
}

int
schema_check_dns1123_label(const char *field, const char *value, struct schema_errs *errs)
{
	return check_dns(NAME_DNS1123_LABEL, field, value, errs);
}

int
schema_check_dns1035_label(const char *field, const char *value, struct schema_errs *errs)
{
	return check_dns(NAME_DNS1035_LABEL, field, value, errs);
}

int
schema_check_object_name(const char *name, const char *generate_name,
    struct schema_errs *errs)
{
	int n = 0;

	if (generate_name != NULL && generate_name[0] != '\0') {
		char masked[512];
		size_t l = kc_strlcpy(masked, generate_name, sizeof(masked));

		/* NameIsDNSSubdomain(prefix): maskTrailingDash. */
		if (l < sizeof(masked) && l > 1 && masked[l - 1] == '-') {
			masked[l - 2] = 'a';
			masked[l - 1] = '\0';
		}
		if (l >= sizeof(masked))
			n += check_dns(NAME_DNS1123_SUBDOMAIN, "metadata.generateName",
			    generate_name, errs);
		else {
			char msgs[2][MSG_MAX], q[MSG_MAX];
			size_t m = dns_msgs(NAME_DNS1123_SUBDOMAIN, masked, msgs);
			struct sb b;

			sb_init(&b, q, sizeof(q));
			go_quote_str(&b, generate_name);
			for (size_t i = 0; i < m; i++)
				schema_errs_add(errs, "Invalid", "metadata.generateName",
				    "Invalid value: %s: %s", q, msgs[i]);
			n += (int)m;
		}
	}
	if (name == NULL || name[0] == '\0') {
		schema_errs_add(errs, "Required", "metadata.name",
		    "Required value: name or generateName is required");
		return n + 1;
	}
	return n + check_dns(NAME_DNS1123_SUBDOMAIN, "metadata.name", name, errs);
}

/* IsQualifiedName's messages for a label key. */
static size_t
qualified_name_msgs(const char *v, char msgs[4][MSG_MAX])
{
	static const char *const ex[] = { "MyName", "my.name", "123-abc" };
	const char *slash = strchr(v, '/'), *name = v;
	size_t count = 0, nl;
	bool ok = true;
	struct sb b;

	if (slash != NULL && strchr(slash + 1, '/') != NULL) {
		sb_init(&b, msgs[0], MSG_MAX);
		sb_puts(&b, "a qualified name ");
		regex_error(&b, QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, ex, 3);
		sb_puts(&b, " with an optional DNS subdomain prefix and '/' (e.g. "
		    "'example.com/MyName')");
		return 1;
	}
	if (slash != NULL) {
		char prefix[512], pm[2][MSG_MAX];
		size_t pl = (size_t)(slash - v);

		name = slash + 1;
		if (pl == 0)
			(void)snprintf(msgs[count++], MSG_MAX, "prefix part must be non-empty");
		else {
			size_t m;

			if (pl >= sizeof(prefix))
				pl = sizeof(prefix) - 1;
			memcpy(prefix, v, pl);
			prefix[pl] = '\0';
			m = dns_msgs(NAME_DNS1123_SUBDOMAIN, prefix, pm);
			for (size_t i = 0; i < m; i++)
				(void)snprintf(msgs[count++], MSG_MAX, "prefix part %s", pm[i]);
		}
	}
	nl = strlen(name);
	if (nl == 0)
		(void)snprintf(msgs[count++], MSG_MAX, "name part must be non-empty");
	else if (nl > 63)
		(void)snprintf(msgs[count++], MSG_MAX,
		    "name part must be no more than 63 characters");
	if (nl == 0 || !is_alnum(name[0]) || !is_alnum(name[nl - 1]))
		ok = false;
	for (size_t i = 0; ok && i < nl; i++)
		if (!is_alnum(name[i]) && name[i] != '-' && name[i] != '_' && name[i] != '.')
			ok = false;
	if (!ok) {
		sb_init(&b, msgs[count++], MSG_MAX);
		sb_puts(&b, "name part ");
		regex_error(&b, QUALIFIED_NAME_MSG, QUALIFIED_NAME_FMT, ex, 3);
	}
	return count;
}

/* IsValidLabelValue's messages. */
static size_t
label_value_msgs(const char *v, char msgs[2][MSG_MAX])
{
	static const char *const ex[] = { "MyValue", "my_value", "12345" };
	size_t n = strlen(v), count = 0;
	bool ok = true;
	struct sb b;

	if (n > 63)
		(void)snprintf(msgs[count++], MSG_MAX, "must be no more than 63 characters");
	if (n > 0) {
		if (!is_alnum(v[0]) || !is_alnum(v[n - 1]))
			ok = false;
		for (size_t i = 0; ok && i < n; i++)
			if (!is_alnum(v[i]) && v[i] != '-' && v[i] != '_' && v[i] != '.')
				ok = false;
	}
	if (!ok) {
		sb_init(&b, msgs[count++], MSG_MAX);
		regex_error(&b, "a valid label must be an empty string or consist of alphanumeric "
		    "characters, '-', '_' or '.', and must start and end with an alphanumeric "
		    "character", "(" QUALIFIED_NAME_FMT ")?", ex, 3);
	}
	return count;
}

/*
 * Patterns: ECMA/RE2 syntax to POSIX extended expressions.
 */

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
re_literal(struct sb *o, uint32_t c)
{
	char u[4];
	size_t n;

	if (c == 0)
		return RE_UNSUPPORTED;
	n = kc_utf8_encode(c, u);
	if (n == 1 && is_ere_special(u[0]))
		sb_putc(o, '\\');
	sb_putn(o, u, n);
	return RE_OK;
}

/* A bracket expression starting after '['; '*pp' ends after its ']'. */
static enum re_result
re_bracket(const char **pp, struct sb *o, const char *pat, char *why, size_t wsize)
{
	const char *p = *pp;
	bool negate = false, rb = false, dash = false, caret = false;
	char body[MSG_MAX];
	struct sb b;

	sb_init(&b, body, sizeof(body));
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
			sb_putn(&b, p, (size_t)(end + 2 - p));
			p = end + 2;
			continue;
		}
		if (*p != '\\') {
			if (*p == '[')
				sb_putc(&b, '[');
			else
				sb_putc(&b, *p);
			p++;
			continue;
		}
		p++;
		switch (*p) {
		case 'd': sb_puts(&b, "0-9"); break;
		case 'w': sb_puts(&b, "A-Za-z0-9_"); break;
		case 's': sb_puts(&b, "\t\n\f\r "); break;
		case 'D': case 'W': case 'S': case 'p': case 'P':
			return RE_UNSUPPORTED;
		case 't': sb_putc(&b, '\t'); break;
		case 'n': sb_putc(&b, '\n'); break;
		case 'r': sb_putc(&b, '\r'); break;
		case 'f': sb_putc(&b, '\f'); break;
		case 'v': sb_putc(&b, '\v'); break;
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
				sb_putn(&b, u, kc_utf8_encode(c, u));
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
			sb_putc(&b, *p);
		}
		p++;
	}
	*pp = p + 1;
	if (!negate && caret && !rb && !dash && b.len == 0) {
		sb_puts(o, "\\^");
		return RE_OK;
	}
	if (!negate && !rb && !caret && !dash && b.len == 0) {
		re_why(why, wsize, "missing closing ]", pat, strlen(pat));
		return RE_INVALID;
	}
	sb_putc(o, '[');
	if (negate)
		sb_putc(o, '^');
	if (rb)
		sb_putc(o, ']');
	sb_puts(o, body);
	if (caret)
		sb_putc(o, '^');
	if (dash)
		sb_putc(o, '-');
	sb_putc(o, ']');
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
re_translate(const char *pat, struct sb *o, int *cflags, char *why, size_t wsize)
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
			case 'd': sb_puts(o, "[0-9]"); break;
			case 'D': sb_puts(o, "[^0-9]"); break;
			case 'w': sb_puts(o, "[A-Za-z0-9_]"); break;
			case 'W': sb_puts(o, "[^A-Za-z0-9_]"); break;
			case 's': sb_puts(o, "[\t\n\f\r ]"); break;
			case 'S': sb_puts(o, "[^\t\n\f\r ]"); break;
			case 't': sb_putc(o, '\t'); break;
			case 'n': sb_putc(o, '\n'); break;
			case 'r': sb_putc(o, '\r'); break;
			case 'f': sb_putc(o, '\f'); break;
			case 'v': sb_putc(o, '\v'); break;
			case 'b': sb_puts(o, "\\b"); break;
			case 'B': sb_puts(o, "\\B"); break;
			case 'A': sb_putc(o, '^'); break;
			case 'z': sb_putc(o, '$'); break;
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
					sb_putc(o, '\\');
				sb_putc(o, *p);
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
				sb_putc(o, '(');
				p++;
				break;
			}
			if (p[2] == ':') {
				sb_putc(o, '(');
				p += 3;
			} else if (p[2] == 'P' && p[3] == '<') {
				const char *end = strchr(p, '>');

				if (end == NULL) {
					re_why(why, wsize, "invalid named capture", p, strlen(p));
					return RE_INVALID;
				}
				sb_putc(o, '(');
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
			sb_putc(o, ')');
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
			sb_putc(o, *p);
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
				sb_putn(o, p, (size_t)(end - p) + 1);
				p = end + 1;
				q = true;
			} else {
				sb_puts(o, "\\{");
				p++;
			}
			break;
		case '}':
			sb_puts(o, "\\}");
			p++;
			break;
		default:
			sb_putc(o, *p);
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

/*
 * Compiles 'pat' in the C.UTF-8 locale (when the system has it) and, when
 * 'subject' is not NULL, searches it. Returns 1 for a match, 0 for none,
 * 2 when the pattern cannot be translated (treated as a match), -1 for an
 * invalid pattern (reason in 'why'), or -ENOMEM.
 */
static int
re_run(const char *pat, const char *subject, size_t slen, char *why, size_t wsize)
{
	char ere[4 * MSG_MAX];
	locale_t loc, old = (locale_t)0;
	int cflags = REG_EXTENDED | REG_NOSUB, r, ret;
	regex_t re;
	struct sb o;

	sb_init(&o, ere, sizeof(ere));
	switch (re_translate(pat, &o, &cflags, why, wsize)) {
	case RE_UNSUPPORTED:
		return 2;
	case RE_INVALID:
		return -1;
	case RE_OK:
		break;
	}
	if (o.len >= sizeof(ere) - 1)
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

/*
 * Formats: those apiextensions keeps (StripUnsupportedFormatsPostProcess),
 * checked as k8s.io/kube-openapi's strfmt registry does.
 */

static bool
all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return n > 0;
}

static int
num2(const char *s)
{
	return (s[0] - '0') * 10 + (s[1] - '0');
}

/* time.Parse("2006-01-02", s). */
static bool
fmt_date(const char *s, size_t n)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, m, d, max;

	if (n != 10 || s[4] != '-' || s[7] != '-' || !all_digits(s, 4) ||
	    !all_digits(s + 5, 2) || !all_digits(s + 8, 2))
		return false;
	y = num2(s) * 100 + num2(s + 2);
	m = num2(s + 5);
	d = num2(s + 8);
	if (m < 1 || m > 12 || d < 1)
		return false;
	max = days[m - 1];
	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		max = 29;
	return d <= max;
}

/* strfmt.IsDateTime: date, 't', "hh:mm:ss", any char + digits, z or offset. */
static bool
fmt_datetime(const char *s, size_t n)
{
	const char *t = NULL, *second = NULL, *p;
	size_t rest;

	if (n < 4)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] == 't' || s[i] == 'T') {
			if (t == NULL)
				t = s + i;
			else if (second == NULL)
				second = s + i;
		}
	if (t == NULL || !fmt_date(s, (size_t)(t - s)))
		return false;
	p = t + 1;
	rest = (size_t)((second != NULL ? second : s + n) - p);
	if (rest < 9 || !all_digits(p, 2) || p[2] != ':' || !all_digits(p + 3, 2) ||
	    p[5] != ':' || !all_digits(p + 6, 2))
		return false;
	if (num2(p) > 23 || num2(p + 3) > 59 || num2(p + 6) > 59)
		return false;
	p += 8;
	rest -= 8;
	if (rest >= 2 && !(p[0] == 'z' || p[0] == 'Z' || p[0] == '+' || p[0] == '-')) {
		size_t i = 1;

		while (i < rest && p[i] >= '0' && p[i] <= '9')
			i++;
		if (i == 1)
			return false;
		p += i;
		rest -= i;
	}
	if (rest == 1 && (p[0] == 'z' || p[0] == 'Z'))
		return true;
	return rest == 6 && (p[0] == '+' || p[0] == '-') && all_digits(p + 1, 2) &&
	    p[3] == ':' && all_digits(p + 4, 2);
}

/* base64.StdEncoding.DecodeString, which skips '\r' and '\n'. */
static bool
fmt_byte(const char *s, size_t n)
{
	size_t count = 0, pad = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\r' || c == '\n')
			continue;
		if (c == '=') {
			pad++;
			count++;
			continue;
		}
		if (pad > 0)
			return false;
		if (!(is_alnum(c) || c == '+' || c == '/'))
			return false;
		count++;
	}
	return count % 4 == 0 && pad <= 2;
}

/* An IPv4 address as Go's net.ParseIP reads it (no leading zeros). */
static bool
ipv4_ok(const char *s, size_t n)
{
	size_t parts = 0, i = 0;

	while (i <= n) {
		size_t start = i;
		int v = 0;

		while (i < n && s[i] >= '0' && s[i] <= '9') {
			v = v * 10 + (s[i] - '0');
			if (v > 255)
				return false;
			i++;
		}
		if (i == start || i - start > 3 || (i - start > 1 && s[start] == '0'))
			return false;
		parts++;
		if (i == n)
			break;
		if (s[i] != '.' || parts == 4)
			return false;
		i++;
	}
	return parts == 4;
}

/* net.ParseIP. */
static bool
ip_ok(const char *s, size_t n)
{
	char buf[64];
	unsigned char addr[16];

	if (ipv4_ok(s, n))
		return true;
	if (n == 0 || n >= sizeof(buf) || memchr(s, ':', n) == NULL)
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (strchr(buf, '%') != NULL)
		return false;
	return inet_pton(AF_INET6, buf, addr) == 1;
}

/* net.ParseCIDR. */
static bool
fmt_cidr(const char *s, size_t n)
{
	const char *slash = memchr(s, '/', n);
	size_t al, ml;
	int bits = 0;

	if (slash == NULL)
		return false;
	al = (size_t)(slash - s);
	ml = n - al - 1;
	if (!ip_ok(s, al) || !all_digits(slash + 1, ml) || ml > 3)
		return false;
	for (size_t i = 0; i < ml; i++)
		bits = bits * 10 + (slash[1 + i] - '0');
	return bits <= (memchr(s, ':', al) != NULL ? 128 : 32);
}

static bool
xtoi2(const char *s, size_t n, char sep)
{
	if (n < 2 || (n > 2 && s[2] != sep))
		return false;
	return kc_hex_digit(s[0]) >= 0 && kc_hex_digit(s[1]) >= 0;
}

/* net.ParseMAC: 6, 8 or 20 octets as aa:bb, aa-bb or aabb.ccdd. */
static bool
fmt_mac(const char *s, size_t n)
{
	size_t groups;

	if (n < 14)
		return false;
	if (s[2] == ':' || s[2] == '-') {
		if ((n + 1) % 3 != 0)
			return false;
		groups = (n + 1) / 3;
		if (groups != 6 && groups != 8 && groups != 20)
			return false;
		for (size_t i = 0, x = 0; i < groups; i++, x += 3)
			if (!xtoi2(s + x, n - x, s[2]))
				return false;
		return true;
	}
	if (s[4] == '.') {
		if ((n + 1) % 5 != 0)
			return false;
		groups = 2 * (n + 1) / 5;
		if (groups != 6 && groups != 8 && groups != 20)
			return false;
		for (size_t i = 0, x = 0; i < groups; i += 2, x += 5)
			if (!xtoi2(s + x, 2, 0) || !xtoi2(s + x + 2, n - x - 2, s[4]))
				return false;
		return true;
	}
	return false;
}

/* mail.ParseAddress, approximately: [name] <local@domain> or local@domain. */
static bool
fmt_email(const char *s, size_t n)
{
	static const char atext[] = "!#$%&'*+-/=?^_`{|}~.";
	const char *lt = memchr(s, '<', n), *at;
	size_t ln, dn;

	if (lt != NULL) {
		if (n < 2 || s[n - 1] != '>')
			return false;
		n = (size_t)(s + n - 1 - (lt + 1));
		s = lt + 1;
	}
	at = NULL;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '@')
			at = s + i;
	if (at == NULL)
		return false;
	ln = (size_t)(at - s);
	dn = n - ln - 1;
	if (ln == 0 || dn == 0 || s[0] == '.' || s[ln - 1] == '.' || at[1] == '.' ||
	    at[dn] == '.')
		return false;
	for (size_t i = 0; i < ln; i++)
		if (!is_alnum(s[i]) && strchr(atext, s[i]) == NULL &&
		    !((unsigned char)s[i] >= 0x80))
			return false;
	for (size_t i = 0; i < dn; i++) {
		char c = at[1 + i];

		if (!is_alnum(c) && c != '-' && c != '.' && !((unsigned char)c >= 0x80))
			return false;
		if (c == '.' && at[i] == '.')
			return false;
	}
	return true;
}

/* url.ParseRequestURI, approximately. */
static bool
fmt_uri(const char *s, size_t n)
{
	size_t i = 0;

	if (n == 0)
		return false;
	for (size_t j = 0; j < n; j++) {
		unsigned char c = (unsigned char)s[j];

		if (c < 0x20 || c == 0x7f)
			return false;
		if (c == '%' && (j + 2 >= n || kc_hex_digit(s[j + 1]) < 0 ||
		    kc_hex_digit(s[j + 2]) < 0))
			return false;
	}
	if (n == 1 && s[0] == '*')
		return true;
	if ((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')) {
		while (i < n && (is_alnum(s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.'))
			i++;
		if (i < n && s[i] == ':') {
			const char *rest = s + i + 1;
			size_t rl = n - i - 1;

			if (rl >= 2 && rest[0] == '/' && rest[1] == '/') {
				const char *h = rest + 2, *end = h, *colon = NULL;

				while (end < s + n && *end != '/' && *end != '?' && *end != '#')
					end++;
				for (const char *q = h; q < end; q++) {
					if (*q == '@')
						h = q + 1;
					if (*q == ']')
						colon = NULL;
					else if (*q == ':')
						colon = q;
				}
				if (colon != NULL && colon + 1 < end &&
				    !all_digits(colon + 1, (size_t)(end - colon - 1)))
					return false;
			}
			return true;
		}
	}
	return s[0] == '/';
}

/* Go's time.ParseDuration grammar, or strfmt's "<n> <unit>" fallback. */
static bool
fmt_duration(const char *s, size_t n)
{
	static const char *const units[] = { "ns", "us", "\xc2\xb5s", "\xce\xbcs", "ms", "s",
		"m", "h" };
	static const char *const words[][2] = {
		{ "ns", "nanoseconds" }, { "us", "microseconds" }, { "ms", "milliseconds" },
		{ "s", "seconds" }, { "m", "minutes" }, { "h", "hours" }, { "d", "days" },
		{ "w", "weeks" },
	};
	size_t i = 0;
	bool go = true;

	if (i < n && (s[i] == '-' || s[i] == '+'))
		i++;
	if (n - i == 1 && s[i] == '0')
		return true;
	if (i == n)
		go = false;
	while (go && i < n) {
		size_t start = i, best = 0;
		bool dot = false;

		while (i < n && ((s[i] >= '0' && s[i] <= '9') || (s[i] == '.' && !dot))) {
			dot |= s[i] == '.';
			i++;
		}
		if (i == start || (i - start == 1 && dot)) {
			go = false;
			break;
		}
		for (size_t u = 0; u < KC_ARRAY_SIZE(units); u++) {
			size_t ul = strlen(units[u]);

			if (n - i >= ul && memcmp(s + i, units[u], ul) == 0 && ul > best)
				best = ul;
		}
		/* "m" must not win over "ms". */
		if (best == 0) {
			go = false;
			break;
		}
		i += best;
	}
	if (go)
		return true;
	for (i = 0; i < n;) {
		size_t ds = i, us;
		char unit[32];

		if (!(s[i] >= '0' && s[i] <= '9')) {
			i++;
			continue;
		}
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i - ds > 18)
			continue;
		while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' ||
		    s[i] == '\f' || s[i] == '\v'))
			i++;
		us = i;
		while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
			i++;
		if (i == us || i - us >= sizeof(unit))
			continue;
		for (size_t k = 0; k < i - us; k++)
			unit[k] = (char)(s[us + k] | 0x20);
		unit[i - us] = '\0';
		for (size_t w = 0; w < KC_ARRAY_SIZE(words); w++)
			if (strcmp(unit, words[w][0]) == 0 ||
			    strncmp(unit, words[w][1], strlen(words[w][1])) == 0)
				return true;
	}
	return false;
}

/* strfmt.IsISBN10 / IsISBN13 on the string without white space and '-'. */
static bool
fmt_isbn(const char *s, size_t n, int version)
{
	char d[32];
	size_t l = 0;
	int sum = 0;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '-' || s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' ||
		    s[i] == '\f' || s[i] == '\v')
			continue;
		if (l == sizeof(d) - 1)
			return false;
		d[l++] = s[i];
	}
	d[l] = '\0';
	if (version == 10) {
		if (l != 10 || !all_digits(d, 9) || !(d[9] == 'X' || (d[9] >= '0' && d[9] <= '9')))
			return false;
		for (int i = 0; i < 9; i++)
			sum += (i + 1) * (d[i] - '0');
		sum += 10 * (d[9] == 'X' ? 10 : d[9] - '0');
		return sum % 11 == 0;
	}
	if (version == 13) {
		if (l != 13 || !all_digits(d, 13))
			return false;
		for (int i = 0; i < 12; i++)
			sum += (i % 2 == 0 ? 1 : 3) * (d[i] - '0');
		return (d[12] - '0') - ((10 - (sum % 10)) % 10) == 0;
	}
	return fmt_isbn(s, n, 10) || fmt_isbn(s, n, 13);
}

/* strfmt.IsCreditCard: digits only, a known issuer prefix, Luhn. */
static bool
fmt_creditcard(const char *s, size_t n)
{
	static const char *const re = "^(4[0-9]{12}([0-9]{3})?|5[1-5][0-9]{14}|"
	    "6(011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(0[0-5]|[68][0-9])[0-9]{11}|"
	    "(2131|1800|35[0-9]{3})[0-9]{11})$";
	char d[64], why[64];
	size_t l = 0;
	int sum = 0;
	bool dbl = false;

	for (size_t i = 0; i < n; i++)
		if (s[i] >= '0' && s[i] <= '9') {
			if (l == sizeof(d) - 1)
				return false;
			d[l++] = s[i];
		}
	d[l] = '\0';
	if (re_run(re, d, l, why, sizeof(why)) != 1)
		return false;
	for (size_t i = l; i-- > 0;) {
		int v = d[i] - '0';

		if (dbl) {
			v *= 2;
			if (v > 9)
				v = v % 10 + 1;
		}
		sum += v;
		dbl = !dbl;
	}
	return sum % 10 == 0;
}

/*
 * strfmt's hostname: labels of letters, digits and symbols (bytes above
 * 0x7f count as letters), '-' inside, at most 63 bytes each and 255 in
 * all, and a final label of two or more letters when there are several.
 */
static bool
fmt_hostname(const char *s, size_t n)
{
	static const char *const re =
	    "^([a-zA-Z0-9$+<=>^`|~[:alpha:]]((-?[a-zA-Z0-9$+<=>^`|~[:alpha:]]{0,62})?)|"
	    "([a-zA-Z0-9$+<=>^`|~[:alpha:]](([-a-zA-Z0-9$+<=>^`|~[:alpha:]]{0,61}"
	    "[a-zA-Z0-9$+<=>^`|~[:alpha:]])?)(\\.)){1,}([a-zA-Z[:alpha:]]){2,63})$";
	char why[64];
	size_t label = 0;

	if (n > 255 || re_run(re, s, n, why, sizeof(why)) != 1)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '.')
			label = 0;
		else if (++label > 63)
			return false;
	}
	return true;
}

struct format {
	const char	*name;		/* normalized: no '-' */
	const char	*re;		/* an extended expression to match, or NULL */
	bool		 icase;
	bool		(*fn)(const char *, size_t);
};

static bool
fmt_isbn_any(const char *s, size_t n)
{
	return fmt_isbn(s, n, 0);
}

static bool
fmt_isbn10(const char *s, size_t n)
{
	return fmt_isbn(s, n, 10);
}

static bool
fmt_isbn13(const char *s, size_t n)
{
	return fmt_isbn(s, n, 13);
}

static bool
fmt_ipv4(const char *s, size_t n)
{
	return ip_ok(s, n) && memchr(s, '.', n) != NULL;
}

static bool
fmt_ipv6(const char *s, size_t n)
{
	return ip_ok(s, n) && memchr(s, ':', n) != NULL;
}

#define HEX8_4_4_4_12(v, w) "^[0-9a-f]{8}-?[0-9a-f]{4}-?" v "[0-9a-f]{3}-?" w \
	"[0-9a-f]{3}-?[0-9a-f]{12}$"
#define RGB_PART	"[[:space:]]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[[:space:]]*"

static const struct format formats[] = {
	{ "bsonobjectid", "^[0-9a-fA-F]{24}$", false, NULL },
	{ "uri", NULL, false, fmt_uri },
	{ "email", NULL, false, fmt_email },
	{ "hostname", NULL, false, fmt_hostname },
	{ "ipv4", NULL, false, fmt_ipv4 },
	{ "ipv6", NULL, false, fmt_ipv6 },
	{ "cidr", NULL, false, fmt_cidr },
	{ "mac", NULL, false, fmt_mac },
	{ "uuid", HEX8_4_4_4_12("[0-9a-f]", "[0-9a-f]"), true, NULL },
	{ "uuid3", HEX8_4_4_4_12("3", "[0-9a-f]"), true, NULL },
	{ "uuid4", HEX8_4_4_4_12("4", "[89ab]"), true, NULL },
	{ "uuid5", HEX8_4_4_4_12("5", "[89ab]"), true, NULL },
	{ "isbn", NULL, false, fmt_isbn_any },
	{ "isbn10", NULL, false, fmt_isbn10 },
	{ "isbn13", NULL, false, fmt_isbn13 },
	{ "creditcard", NULL, false, fmt_creditcard },
	{ "ssn", "^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$", false, NULL },
	{ "hexcolor", "^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$", false, NULL },
	{ "rgbcolor", "^rgb\\(" RGB_PART "," RGB_PART "," RGB_PART "\\)$", false, NULL },
	{ "byte", NULL, false, fmt_byte },
	{ "password", NULL, false, NULL },
	{ "date", NULL, false, fmt_date },
	{ "duration", NULL, false, fmt_duration },
	{ "datetime", NULL, false, fmt_datetime },
};

/* The format upstream keeps for 'name' ("date-time" is "datetime"), or NULL. */
static const struct format *
format_lookup(const char *name)
{
	char norm[32];
	size_t n = 0;

	if (name == NULL)
		return NULL;
	for (const char *p = name; *p != '\0'; p++) {
		if (*p == '-')
			continue;
		if (n == sizeof(norm) - 1)
			return NULL;
		norm[n++] = *p;
	}
	norm[n] = '\0';
	for (size_t i = 0; i < KC_ARRAY_SIZE(formats); i++)
		if (strcmp(formats[i].name, norm) == 0)
			return &formats[i];
	return NULL;
}

/* 1 when 's' is valid for 'f', 0 when not, -ENOMEM. */
static int
format_check(const struct format *f, const char *s, size_t n)
{
	if (f->re != NULL) {
		char why[64], pat[256];
		int r;

		(void)snprintf(pat, sizeof(pat), "%s%s", f->icase ? "(?i)" : "", f->re);
		r = re_run(pat, s, n, why, sizeof(why));
		return r < 0 && r != -1 ? r : r == 1;
	}
	return f->fn == NULL || f->fn(s, n);
}

/*
 * Repeated array items, in O(n log n): items are grouped by a hash that
 * agrees with equality and compared only within their group.
 */

static bool
scalar_equal(const struct json_object *a, const struct json_object *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return jtype(a) == jtype(b) && kc_json_equal(a, b);
}

static bool
list_map_keys_equal(const struct json_object *a, const struct json_object *b,
    const struct json_object *keys)
{
	for (size_t i = 0; i < jlen(keys); i++) {
		const char *k = json_object_get_string(mut(jidx(keys, i)));

		if (k == NULL)
			continue;
		if (jhas(a, k) != jhas(b, k) || !scalar_equal(jget(a, k), jget(b, k)))
			return false;
	}
	return true;
}

static uint64_t
hmix(uint64_t h, uint64_t v)
{
	return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
}

static uint64_t
hbytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/* A hash of a JSON value; equal values (kc_json_equal) hash alike. */
static uint64_t
jhash(const struct json_object *v, unsigned depth)
{
	uint64_t h = (uint64_t)jtype(v) + 1, acc = 0;
	double d;

	if (depth > SCHEMA_DEPTH_MAX)
		return h;
	switch (jtype(v)) {
	case json_type_null:
		return h;
	case json_type_boolean:
		return hmix(h, (uint64_t)json_object_get_boolean(mut(v)));
	case json_type_int:
		return hmix(h, (uint64_t)jint(v));
	case json_type_double:
		d = jdouble(v);
		if (d == 0)
			d = 0;		/* -0 equals 0 */
		memcpy(&acc, &d, sizeof(acc));
		return hmix(h, acc);
	case json_type_string:
		return hmix(h, hbytes(json_object_get_string(mut(v)),
		    (size_t)json_object_get_string_len(mut(v))));
	case json_type_array:
		for (size_t i = 0; i < jlen(v); i++)
			h = hmix(h, jhash(jidx(v, i), depth + 1));
		return h;
	case json_type_object: {
		json_object_object_foreach(mut(v), k, e)
			acc += hbytes(k, strlen(k)) * (jhash(e, depth + 1) | 1);
		return hmix(h, acc);
	}
	}
	return h;
}

struct hidx {
	uint64_t	h;
	size_t		i;
};

static int
hidx_cmp(const void *a, const void *b)
{
	const struct hidx *x = a, *y = b;

	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int
size_cmp(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The indexes of the second occurrences of repeated items of 'arr'
 * (compared whole, or by the map-list 'keys' when not NULL), ascending,
 * into a new allocation '*ret' (NULL when there are none). 0 or -ENOMEM.
 */
static int
find_dups(const struct json_object *arr, const struct json_object *keys, size_t **ret,
    size_t *ret_n)
{
	size_t n = jlen(arr), m = 0, *out = NULL, *reps = NULL, *counts = NULL;
	struct hidx *hs = NULL;
	int r = -ENOMEM;

	*ret = NULL;
	*ret_n = 0;
	if (n < 2)
		return 0;
	if ((hs = kc_calloc(n, sizeof(*hs))) == NULL || (out = kc_calloc(n, sizeof(*out))) == NULL ||
	    (reps = kc_calloc(n, sizeof(*reps))) == NULL ||
	    (counts = kc_calloc(n, sizeof(*counts))) == NULL)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct json_object *e = jidx(arr, i);

		hs[i].i = i;
		if (keys == NULL)
			hs[i].h = jhash(e, 0);
		else {
			uint64_t h = 7;

			for (size_t k = 0; k < jlen(keys); k++) {
				const char *key = json_object_get_string(mut(jidx(keys, k)));

				h = hmix(h, key != NULL && jhas(e, key) ?
				    jhash(jget(e, key), 0) + 1 : 0);
			}
			hs[i].h = h;
		}
	}
	qsort(hs, n, sizeof(*hs), hidx_cmp);
	for (size_t g = 0; g < n;) {
		size_t end = g, nreps = 0;

		while (end < n && hs[end].h == hs[g].h)
			end++;
		for (size_t k = g; k < end; k++) {
			const struct json_object *e = jidx(arr, hs[k].i);
			size_t found = nreps;

			for (size_t r2 = 0; r2 < nreps && found == nreps; r2++) {
				const struct json_object *f = jidx(arr, reps[r2]);

				if (keys == NULL ? scalar_equal(e, f) : list_map_keys_equal(e, f, keys))
					found = r2;
			}
			if (found == nreps) {
				reps[nreps] = hs[k].i;
				counts[nreps++] = 1;
			} else if (++counts[found] == 2)
				out[m++] = hs[k].i;
		}
		g = end;
	}
	if (m > 1)
		qsort(out, m, sizeof(*out), size_cmp);
	if (m > 0) {
		*ret = out;
		*ret_n = m;
		out = NULL;
	}
	r = 0;
out:
	kc_free(hs);
	kc_free(out);
	kc_free(reps);
	kc_free(counts);
	return r;
}

/*
 * Value validation: k8s.io/kube-openapi's SchemaValidator, with errors
 * converted as apiextensions' ValidateCustomResource converts them.
 */

struct vstate {
	const char	*base;		/* field path of the value validated; NULL: "<nil>" */
	struct path	 name;		/* kube-openapi's name of the current value */
	unsigned	 depth;
	int		 rc;		/* first failure: -ENOMEM or -E2BIG */
};

/* errPath: base.Child(name without its leading "."). */
static void
vfield(const struct vstate *vs, char *buf, size_t size)
{
	const char *n = vs->name.buf;

	if (n[0] == '\0' || strcmp(n, ".") == 0) {
		(void)snprintf(buf, size, "%s", vs->base != NULL ? vs->base : "<nil>");
		return;
	}
	if (n[0] == '.')
		n++;
	if (vs->base == NULL)
		(void)snprintf(buf, size, "%s", n);
	else
		(void)snprintf(buf, size, "%s.%s", vs->base, n);
}

static void
vadd(struct vstate *vs, struct elist *out, const char *type, const char *body)
{
	char field[PATH_MAX_LEN + 256];

	vfield(vs, field, sizeof(field));
	if (elist_add_raw(out, type, field, body) < 0 && vs->rc == 0)
		vs->rc = -ENOMEM;
}

/* field.Invalid(errPath, value, "<name> in body <detail>"). */
static void _printf_(4, 5)
vinvalid(struct vstate *vs, struct elist *out, const char *value, const char *fmt, ...)
{
	char detail[MSG_MAX], body[MSG_MAX];
	struct sb b;
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	sb_init(&b, body, sizeof(body));
	sb_printf(&b, "Invalid value: %s: %s", value, detail);
	vadd(vs, out, "Invalid", body);
}

/* errors.InvalidType with a string value, as field.TypeInvalid. */
static void
vtype(struct vstate *vs, struct elist *out, const char *type, const char *value)
{
	char body[MSG_MAX];
	struct sb b;

	sb_init(&b, body, sizeof(body));
	sb_puts(&b, "Invalid value: ");
	go_quote_str(&b, value);
	sb_printf(&b, ": %s in body must be of type %s: ", vs->name.buf, type);
	go_quote_str(&b, value);
	vadd(vs, out, "TypeInvalid", body);
}

/* A composite (anyOf...) error: not a Validation, so field.Invalid(fldPath, ""). */
static void
vcomposite(struct vstate *vs, struct elist *out, const char *what, const char *extra)
{
	char body[MSG_MAX];
	struct sb b;

	sb_init(&b, body, sizeof(body));
	sb_puts(&b, "Invalid value: \"\": ");
	go_quote_str(&b, vs->name.buf);
	sb_printf(&b, " %s%s", what, extra);
	if (elist_add_raw(out, "Invalid", vs->base != NULL ? vs->base : "<nil>", body) < 0 &&
	    vs->rc == 0)
		vs->rc = -ENOMEM;
}

static void
repr_value(char *buf, size_t size, const struct json_object *v)
{
	struct sb b;

	sb_init(&b, buf, size);
	go_value(&b, v);
}

struct types {
	const char	*t[2];
	size_t		 n;
};

/* The schema's types as kube-openapi sees them (int-or-string: both). */
static void
schema_types(const struct json_object *s, struct types *ty)
{
	const char *t = jstr(s, "type");

	ty->n = 0;
	if (jbool(s, "x-kubernetes-int-or-string")) {
		ty->t[0] = "integer";
		ty->t[1] = "string";
		ty->n = 2;
	} else if (t != NULL && t[0] != '\0') {
		ty->t[0] = t;
		ty->n = 1;
	}
}

static bool
types_has(const struct types *ty, const char *t)
{
	for (size_t i = 0; i < ty->n; i++)
		if (strcmp(ty->t[i], t) == 0)
			return true;
	return false;
}

static void
types_join(const struct types *ty, char *buf, size_t size)
{
	(void)snprintf(buf, size, "%s%s%s", ty->n > 0 ? ty->t[0] : "", ty->n > 1 ? "," : "",
	    ty->n > 1 ? ty->t[1] : "");
}

/* The JSON type and format kube-openapi infers from a decoded value. */
static const char *
value_schtype(const struct json_object *d, const char **ret_format)
{
	*ret_format = "";
	switch (jtype(d)) {
	case json_type_boolean:
		return "boolean";
	case json_type_int:
		*ret_format = "int64";
		return "integer";
	case json_type_double:
		*ret_format = "float64";
		return "number";
	case json_type_string:
		return "string";
	case json_type_array:
		return "array";
	case json_type_object:
		return "object";
	case json_type_null:
		return "null";
	}
	return "";
}

/* swag.IsFloat64AJSONInteger. */
static bool
json_integer(double f)
{
	double g, diff;

	if (isnan(f) || f < -9007199254740991.0 || f > 9007199254740991.0)
		return false;
	if (f == (double)(int64_t)f)
		return true;
	if (f < 0)
		return false;
	g = (double)(uint64_t)f;
	diff = dabs(f - g);
	if (g == 0)
		return false;
	return diff / (dabs(f) + dabs(g)) < 1e-6;
}

/* The format upstream keeps on a schema, or NULL (stripped or absent). */
static const struct format *
schema_format(const struct json_object *s, const char **ret_name)
{
	const char *f = jstr(s, "format");
	const struct format *fmt = format_lookup(f);

	*ret_name = fmt != NULL ? f : "";
	return fmt;
}

/* typeValidator; returns whether the value passed. */
static bool
vtypecheck(struct vstate *vs, const struct json_object *s, const struct json_object *d,
    struct elist *out)
{
	const char *format, *schtype, *dfmt;
	struct types ty;
	char joined[64];
	enum json_type k = jtype(d);
	bool float_int, int_float;

	schema_types(s, &ty);
	(void)schema_format(s, &format);
	types_join(&ty, joined, sizeof(joined));
	if (ty.n == 0 && format[0] == '\0')
		return true;
	if (d == NULL) {
		if (ty.n > 0 && !types_has(&ty, "null") && !jbool(s, "nullable")) {
			vtype(vs, out, joined, "null");
			return false;
		}
		return true;
	}
	schtype = value_schtype(d, &dfmt);
	float_int = k == json_type_double && json_integer(jdouble(d)) &&
	    types_has(&ty, "integer");
	int_float = k == json_type_int && types_has(&ty, "number");
	if (k != json_type_string && k != json_type_array && format[0] != '\0' &&
	    !(types_has(&ty, schtype) || strcmp(dfmt, format) == 0 || float_int || int_float)) {
		vtype(vs, out, format, dfmt);
		return false;
	}
	if (!(types_has(&ty, "number") || types_has(&ty, "integer")) && format[0] != '\0' &&
	    (k == json_type_string || k == json_type_array))
		return true;
	if (!(types_has(&ty, schtype) || float_int || int_float)) {
		vtype(vs, out, joined, schtype);
		return false;
	}
	return true;
}

static bool
enum_match(const struct json_object *d, const struct json_object *e)
{
	if (d == NULL || e == NULL)
		return false;
	switch (jtype(e)) {
	case json_type_string:
		return jtype(d) == json_type_string &&
		    json_object_get_string_len(mut(d)) == json_object_get_string_len(mut(e)) &&
		    memcmp(json_object_get_string(mut(d)), json_object_get_string(mut(e)),
		    (size_t)json_object_get_string_len(mut(e))) == 0;
	case json_type_int:
		if (jtype(d) == json_type_int)
			return jint(d) == jint(e);
		return jtype(d) == json_type_double && go_int64(jdouble(d)) == jint(e);
	case json_type_double:
		if (jtype(d) == json_type_int)
			return (double)jint(d) == jdouble(e);
		return jtype(d) == json_type_double && jdouble(d) == jdouble(e);
	case json_type_boolean:
		return jtype(d) == json_type_boolean &&
		    json_object_get_boolean(mut(d)) == json_object_get_boolean(mut(e));
	default:
		return jtype(d) == jtype(e) && kc_json_equal(d, e);
	}
}

/* basicCommonValidator (enum) as field.NotSupported. */
static void
venum(struct vstate *vs, const struct json_object *s, const struct json_object *d,
    struct elist *out)
{
	const struct json_object *e = jarr(s, "enum");
	size_t n = jlen(e);
	char value[MSG_MAX], body[MSG_MAX];
	struct sb b;

	if (n == 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (enum_match(d, jidx(e, i)))
			return;
	repr_value(value, sizeof(value), d);
	sb_init(&b, body, sizeof(body));
	sb_printf(&b, "Unsupported value: %s: supported values: ", value);
	for (size_t i = 0; i < n; i++) {
		const struct json_object *v = jidx(e, i);
		char one[MSG_MAX];
		struct sb ob;

		if (i > 0)
			sb_puts(&b, ", ");
		sb_init(&ob, one, sizeof(one));
		if (jtype(v) == json_type_string)
			sb_puts(&ob, json_object_get_string(mut(v)));
		else
			go_json(&ob, v, 0);
		go_quote_str(&b, one);
	}
	vadd(vs, out, "NotSupported", body);
}

static void vnode(struct vstate *, const struct json_object *, const struct json_object *,
	    struct elist *, unsigned long *);

/* Validates 'd' against 's' into a fresh list; whether it passed. */
static bool
vsub(struct vstate *vs, const struct json_object *s, const struct json_object *d,
    struct elist *res, unsigned long *match)
{
	*match = 0;
	vnode(vs, s, d, res, match);
	return res->n == 0 && res->dropped == 0;
}

static void
vmove(struct vstate *vs, struct elist *dst, struct elist *src)
{
	if (elist_move(dst, src) < 0 && vs->rc == 0)
		vs->rc = -ENOMEM;
	elist_free(src);
}

/* schemaPropsValidator: anyOf, oneOf, allOf, not. */
static void
vcompose(struct vstate *vs, const struct json_object *s, const struct json_object *d,
    struct elist *out, unsigned long *match)
{
	const struct json_object *any = jarr(s, "anyOf"), *one = jarr(s, "oneOf");
	const struct json_object *all = jarr(s, "allOf"), *not = jobj(s, "not");
	struct elist best = { 0 };
	unsigned long bm = 0, m;
	bool have = false;

	if (jlen(any) > 0) {
		bool ok = false;

		for (size_t i = 0; i < jlen(any) && vs->rc == 0; i++) {
			struct elist r = { 0 };

			if (vsub(vs, jidx(any, i), d, &r, &m)) {
				ok = true;
				elist_free(&best);
				have = false;
				*match += m;
				break;
			}
			if (!have || m > bm) {
				elist_free(&best);
				best = r;
				bm = m;
				have = true;
			} else
				elist_free(&r);
		}
		if (!ok)
			vcomposite(vs, out, "must validate at least one schema (anyOf)", "");
		if (have) {
			*match += bm;
			vmove(vs, out, &best);
		}
		have = false;
	}
	if (jlen(one) > 0) {
		size_t valid = 0;

		for (size_t i = 0; i < jlen(one) && vs->rc == 0; i++) {
			struct elist r = { 0 };

			if (vsub(vs, jidx(one, i), d, &r, &m)) {
				valid++;
				elist_free(&best);
				have = false;
				if (valid == 1)
					*match += m;
				continue;
			}
			if (valid == 0 && (!have || m > bm)) {
				elist_free(&best);
				best = r;
				bm = m;
				have = true;
			} else
				elist_free(&r);
		}
		if (valid != 1) {
			char extra[64];

			if (valid == 0)
				(void)snprintf(extra, sizeof(extra), "Found none valid");
			else
				(void)snprintf(extra, sizeof(extra), "Found %zu valid alternatives",
				    valid);
			vcomposite(vs, out, "must validate one and only one schema (oneOf). ",
			    extra);
			if (have)
				vmove(vs, out, &best);
		}
		elist_free(&best);
		have = false;
	}
	if (jlen(all) > 0) {
		size_t valid = 0;

		for (size_t i = 0; i < jlen(all) && vs->rc == 0; i++) {
			struct elist r = { 0 };

			if (vsub(vs, jidx(all, i), d, &r, &m))
				valid++;
			*match += m;
			vmove(vs, out, &r);
		}
		if (valid != jlen(all))
			vcomposite(vs, out, "must validate all the schemas (allOf)",
			    valid == 0 ? ". None validated" : "");
	}
	if (not != NULL && vs->rc == 0) {
		struct elist r = { 0 };

		if (vsub(vs, not, d, &r, &m))
			vcomposite(vs, out, "must not validate the schema (not)", "");
		elist_free(&r);
	}
}

/* stringValidator: maxLength, minLength, pattern; the first failure only. */
static void
vstring(struct vstate *vs, const struct json_object *s, const struct json_object *d,
    struct elist *out)
{
	const char *str = json_object_get_string(mut(d)), *pattern = jstr(s, "pattern");
	size_t len = (size_t)json_object_get_string_len(mut(d));
	size_t runes = utf8_count(str, len);
	char q[MSG_MAX];
	int64_t lim;

	repr_value(q, sizeof(q), d);
	if (jinteger(s, "maxLength", &lim) && (int64_t)runes > lim) {
		vadd(vs, out, "TooLong", "Too long: value is too long");
		return;
	}
	if (jinteger(s, "minLength", &lim) && (int64_t)runes < lim) {
		vinvalid(vs, out, q, "%s in body should be at least %lld chars long", vs->name.buf,
		    (long long)lim);
		return;
	}
	if (pattern != NULL && pattern[0] != '\0') {
		char why[MSG_MAX];
		int r = re_run(pattern, str, len, why, sizeof(why));

		if (r == -ENOMEM) {
			if (vs->rc == 0)
				vs->rc = -ENOMEM;
		} else if (r == 0)
			vinvalid(vs, out, q, "%s in body should match '%s'", vs->name.buf, pattern);
		else if (r == -1)
			vinvalid(vs, out, q, "%s in body should match '%s, but pattern is invalid: %s'",
			    vs->name.buf, pattern, why);
	}
}

static void
vformat(struct vstate *vs, const struct json_object *s, const struct json_object *d,
    struct elist *out)
{
	const char *name;
	const struct format *f = schema_format(s, &name);
	int r;

	if (f == NULL)
		return;
	r = format_check(f, json_object_get_string(mut(d)),
	    (size_t)json_object_get_string_len(mut(d)));
	if (r < 0) {
		if (vs->rc == 0)
			vs->rc = r;
	} else if (r == 0)
		vtype(vs, out, name, json_object_get_string(mut(d)));
}

/* numberValidator: multipleOf, minimum, maximum, in Go's native types. */
static void
vnumber(struct vstate *vs, const struct json_object *s, const struct json_object *d,
    struct elist *out)
{
	bool isint = jtype(d) == json_type_int;
	int64_t iv = isint ? jint(d) : 0;
	double dv = jdouble(d), lim;
	char val[MSG_MAX], bound[64];
	struct sb b;

	repr_value(val, sizeof(val), d);
	if (jnum(s, "multipleOf", &lim)) {
		sb_init(&b, bound, sizeof(bound));
		if (isint && (lim >= 1 || lim <= -1)) {
			int64_t f = go_int64(lim);

			sb_printf(&b, "%lld", (long long)f);
			if (f < 0)
				vinvalid(vs, out, bound, "factor MultipleOf declared for %s must be "
				    "positive: %s", vs->name.buf, bound);
			else if (f != 0 && iv % f != 0)
				vinvalid(vs, out, val, "%s in body should be a multiple of %s",
				    vs->name.buf, bound);
		} else {
			go_float(&b, lim);
			if (lim < 0)
				vinvalid(vs, out, bound, "factor MultipleOf declared for %s must be "
				    "positive: %s", vs->name.buf, bound);
			else if (!json_integer(lim < 1 ? 1 / lim * dv : dv / lim))
				vinvalid(vs, out, val, "%s in body should be a multiple of %s",
				    vs->name.buf, bound);
		}
	}
	if (jnum(s, "minimum", &lim)) {
		bool excl = jbool(s, "exclusiveMinimum"), fail;

		sb_init(&b, bound, sizeof(bound));
		if (isint) {
			int64_t m = go_int64(lim);

			fail = excl ? iv <= m : iv < m;
			sb_printf(&b, "%lld", (long long)m);
		} else {
			fail = excl ? dv <= lim : dv < lim;
			go_float(&b, lim);
		}
		if (fail)
			vinvalid(vs, out, val, "%s in body should be greater than %s%s",
			    vs->name.buf, excl ? "" : "or equal to ", bound);
	}
	if (jnum(s, "maximum", &lim)) {
		bool excl = jbool(s, "exclusiveMaximum"), fail;

		sb_init(&b, bound, sizeof(bound));
		if (isint) {
			int64_t m = go_int64(lim);

			fail = excl ? iv >= m : iv > m;
			sb_printf(&b, "%lld", (long long)m);
		} else {
			fail = excl ? dv >= lim : dv > lim;
			go_float(&b, lim);
		}
		if (fail)
			vinvalid(vs, out, val, "%s in body should be less than %s%s",
			    vs->name.buf, excl ? "" : "or equal to ", bound);
	}
}

/* schemaSliceValidator: items, minItems, maxItems, uniqueItems. */
static void
varray(struct vstate *vs, const struct json_object *s, const struct json_object *d,
    struct elist *out, unsigned long *match)
{
	const struct json_object *items = jobj(s, "items");
	size_t n = jlen(d);
	int64_t lim;
	char val[64];

	if (items != NULL)
		for (size_t i = 0; i < n && vs->rc == 0; i++) {
			size_t old = path_index(&vs->name, i);

			vnode(vs, items, jidx(d, i), out, match);
			path_pop(&vs->name, old);
		}
	(void)snprintf(val, sizeof(val), "%zu", n);
	if (jinteger(s, "minItems", &lim) && (int64_t)n < lim)
		vinvalid(vs, out, val, "%s in body should have at least %lld items", vs->name.buf,
		    (long long)lim);
	if (jinteger(s, "maxItems", &lim) && (int64_t)n > lim) {
		char body[128];

		(void)snprintf(body, sizeof(body), "Too many: %zu: has too many items", n);
		vadd(vs, out, "TooMany", body);
	}
	if (jbool(s, "uniqueItems")) {
		size_t *dups, ndups;

		if (find_dups(d, NULL, &dups, &ndups) < 0) {
			if (vs->rc == 0)
				vs->rc = -ENOMEM;
			return;
		}
		if (ndups > 0)
			vinvalid(vs, out, "\"\"", "%s in body shouldn't contain duplicates",
			    vs->name.buf);
		kc_free(dups);
	}
}

/* objectValidator. */
static void
vobject(struct vstate *vs, const struct json_object *s, const struct json_object *d,
    struct elist *out, unsigned long *match)
{
	const struct json_object *props = jobj(s, "properties"), *ap = jget(s, "additionalProperties");
	const struct json_object *req = jarr(s, "required");
	size_t n = (size_t)jnkeys(d);
	char val[64];
	int64_t lim;

	(void)snprintf(val, sizeof(val), "%zu", n);
	if (jinteger(s, "minProperties", &lim) && (int64_t)n < lim) {
		vinvalid(vs, out, val, "%s in body should have at least %lld properties",
		    vs->name.buf, (long long)lim);
		return;
	}
	if (jinteger(s, "maxProperties", &lim) && (int64_t)n > lim) {
		char body[128];

		(void)snprintf(body, sizeof(body), "Too many: %zu: has too many items", n);
		vadd(vs, out, "TooMany", body);
		return;
	}
	if (ap != NULL && jtype(ap) == json_type_boolean && !json_object_get_boolean(mut(ap))) {
		json_object_object_foreach(mut(d), k, v) {
			char q[MSG_MAX];
			struct sb b;

			(void)v;
			if (jhas(props, k))
				continue;
			sb_init(&b, q, sizeof(q));
			go_quote_str(&b, k);
			vinvalid(vs, out, q, "%s.%s in body is a forbidden property", vs->name.buf, k);
		}
	} else if (ap != NULL && jtype(ap) == json_type_object) {
		json_object_object_foreach(mut(d), k, v) {
			size_t old;

			if (jhas(props, k) || vs->rc != 0)
				continue;
			old = path_push(&vs->name, ".%s", k);
			vnode(vs, ap, v, out, match);
			path_pop(&vs->name, old);
		}
	}
	if (props != NULL) {
		json_object_object_foreach(mut(props), k, ps) {
			struct json_object *v;
			size_t old;

			if (vs->rc != 0 || jtype(ps) != json_type_object ||
			    !json_object_object_get_ex(mut(d), k, &v))
				continue;
			old = path_child(&vs->name, k);
			vnode(vs, ps, v, out, match);
			path_pop(&vs->name, old);
		}
	}
	for (size_t i = 0; i < jlen(req); i++) {
		const struct json_object *k = jidx(req, i);
		size_t old;

		if (jtype(k) != json_type_string || jhas(d, json_object_get_string(mut(k))))
			continue;
		old = path_push(&vs->name, ".%s", json_object_get_string(mut(k)));
		vadd(vs, out, "Required", "Required value");
		path_pop(&vs->name, old);
	}
}

/* SchemaValidator.Validate. */
static void
vnode(struct vstate *vs, const struct json_object *s, const struct json_object *d,
    struct elist *out, unsigned long *match)
{
	enum json_type k;

	if (s == NULL || jtype(s) != json_type_object || vs->rc != 0)
		return;
	if (++vs->depth > SCHEMA_DEPTH_MAX) {
		vs->rc = -E2BIG;
		vs->depth--;
		return;
	}
	if (d == NULL) {
		*match += vtypecheck(vs, s, d, out) ? 2 : 1;
		venum(vs, s, d, out);
		vs->depth--;
		return;
	}
	k = jtype(d);
	*match += vtypecheck(vs, s, d, out) ? 2 : 1;
	vcompose(vs, s, d, out, match);
	if (k == json_type_string) {
		vstring(vs, s, d, out);
		vformat(vs, s, d, out);
		*match += 2;
	}
	if (k == json_type_int || k == json_type_double) {
		vnumber(vs, s, d, out);
		*match += 1;
	}
	if (k == json_type_array) {
		varray(vs, s, d, out, match);
		*match += 1;
	}
	venum(vs, s, d, out);
	if (k == json_type_object) {
		vobject(vs, s, d, out, match);
		*match += 1;
	}
	*match += 2;
	vs->depth--;
}

/*
 * x-kubernetes-embedded-resource objects (schema/objectmeta Validate):
 * apiVersion and kind required and well-formed, metadata an object with
 * a valid name, namespace and labels.
 */

struct wstate {
	struct path	 p;		/* field.Path */
	struct elist	*out;
	unsigned	 depth;
	int		 rc;
};

static void
wrc(struct wstate *w, int r)
{
	if (r < 0 && w->rc == 0)
		w->rc = r;
}

static const char *
go_type_name(const struct json_object *v)
{
	switch (jtype(v)) {
	case json_type_null:
		return "<nil>";
	case json_type_boolean:
		return "bool";
	case json_type_int:
		return "int64";
	case json_type_double:
		return "float64";
	case json_type_string:
		return "string";
	case json_type_array:
		return "[]interface {}";
	case json_type_object:
		return "map[string]interface {}";
	}
	return "";
}

/* IsValidPathSegmentName / Prefix. */
static size_t
path_segment_msgs(const char *v, bool prefix, char msgs[3][MSG_MAX])
{
	size_t n = 0;

	if (!prefix && (strcmp(v, ".") == 0 || strcmp(v, "..") == 0)) {
		(void)snprintf(msgs[0], MSG_MAX, "may not be '%s'", v);
		return 1;
	}
	if (strchr(v, '/') != NULL)
		(void)snprintf(msgs[n++], MSG_MAX, "may not contain '/'");
	if (strchr(v, '%') != NULL)
		(void)snprintf(msgs[n++], MSG_MAX, "may not contain '%%'");
	return n;
}

static void
wembedded_meta(struct wstate *w, const struct json_object *meta)
{
	static const char *const fields[] = { "generateName", "name" };
	const struct json_object *labels;
	const char *ns;
	size_t old;

	for (size_t i = 0; i < KC_ARRAY_SIZE(fields); i++) {
		const char *v = jstr(meta, fields[i]);
		char msgs[3][MSG_MAX];
		size_t n;

		if (v == NULL || v[0] == '\0')
			continue;
		n = path_segment_msgs(v, i == 0, msgs);
		old = path_child(&w->p, fields[i]);
		for (size_t j = 0; j < n; j++)
			wrc(w, fe_invalid_str(w->out, w->p.buf, v, msgs[j]));
		path_pop(&w->p, old);
	}
	if ((ns = jstr(meta, "namespace")) != NULL && ns[0] != '\0') {
		char msgs[2][MSG_MAX];
		size_t n = dns_msgs(NAME_DNS1123_LABEL, ns, msgs);

		old = path_child(&w->p, "namespace");
		for (size_t j = 0; j < n; j++)
			wrc(w, fe_invalid_str(w->out, w->p.buf, ns, msgs[j]));
		path_pop(&w->p, old);
	}
	if ((labels = jobj(meta, "labels")) != NULL) {
		old = path_child(&w->p, "labels");
		json_object_object_foreach(mut(labels), k, v) {
			char km[4][MSG_MAX], vm[2][MSG_MAX];
			size_t n = qualified_name_msgs(k, km);

			for (size_t j = 0; j < n; j++)
				wrc(w, fe_invalid_str(w->out, w->p.buf, k, km[j]));
			if (jtype(v) != json_type_string)
				continue;
			n = label_value_msgs(json_object_get_string(v), vm);
			for (size_t j = 0; j < n; j++)
				wrc(w, fe_invalid_str(w->out, w->p.buf, json_object_get_string(v),
				    vm[j]));
		}
		path_pop(&w->p, old);
	}
}

static void
wembedded(struct wstate *w, const struct json_object *x)
{
	const struct json_object *v;
	size_t old;

	if (!jhas(x, "apiVersion")) {
		old = path_child(&w->p, "apiVersion");
		wrc(w, fe_required(w->out, w->p.buf, "must not be empty"));
		path_pop(&w->p, old);
	}
	if (!jhas(x, "kind")) {
		old = path_child(&w->p, "kind");
		wrc(w, fe_required(w->out, w->p.buf, "must not be empty"));
		path_pop(&w->p, old);
	}
	if (jhas(x, "apiVersion")) {
		v = jget(x, "apiVersion");
		old = path_child(&w->p, "apiVersion");
		if (jtype(v) != json_type_string)
			wrc(w, fe_invalid_json(w->out, w->p.buf, v, "must be a string"));
		else {
			const char *s = json_object_get_string(mut(v)), *slash = strchr(s, '/');

			if (s[0] == '\0')
				wrc(w, fe_invalid_str(w->out, w->p.buf, s, "must not be empty"));
			else if (slash != NULL && strchr(slash + 1, '/') != NULL) {
				char msg[MSG_MAX];

				(void)snprintf(msg, sizeof(msg), "unexpected GroupVersion string: %s", s);
				wrc(w, fe_invalid_str(w->out, w->p.buf, s, msg));
			}
		}
		path_pop(&w->p, old);
	}
	if (jhas(x, "kind")) {
		v = jget(x, "kind");
		old = path_child(&w->p, "kind");
		if (jtype(v) != json_type_string)
			wrc(w, fe_invalid_json(w->out, w->p.buf, v, "must be a string"));
		else {
			const char *s = json_object_get_string(mut(v));
			char lower[512], msg[2 * MSG_MAX];
			size_t i;

			for (i = 0; i < sizeof(lower) - 1 && s[i] != '\0'; i++)
				lower[i] = (s[i] >= 'A' && s[i] <= 'Z') ? (char)(s[i] | 0x20) : s[i];
			lower[i] = '\0';
			if (s[0] == '\0')
				wrc(w, fe_invalid_str(w->out, w->p.buf, s, "must not be empty"));
			else if (dns_joined(NAME_DNS1035_LABEL, lower,
			    "may have mixed case, but should otherwise match: ", msg, sizeof(msg)))
				wrc(w, fe_invalid_str(w->out, w->p.buf, s, msg));
		}
		path_pop(&w->p, old);
	}
	if (jhas(x, "metadata")) {
		v = jget(x, "metadata");
		old = path_child(&w->p, "metadata");
		if (jtype(v) != json_type_object) {
			char msg[128];

			(void)snprintf(msg, sizeof(msg), "invalid metadata: expected object, got %s",
			    go_type_name(v));
			wrc(w, fe_invalid_json(w->out, w->p.buf, v, msg));
		} else
			wembedded_meta(w, v);
		path_pop(&w->p, old);
	}
}

static void
wembedded_walk(struct wstate *w, const struct json_object *x, const struct json_object *s)
{
	if (s == NULL || x == NULL || w->rc != 0)
		return;
	if (++w->depth > SCHEMA_DEPTH_MAX) {
		w->rc = -E2BIG;
		return;
	}
	if (jtype(x) == json_type_object) {
		const struct json_object *props = jobj(s, "properties"), *ap;

		ap = jobj(s, "additionalProperties");
		if (jbool(s, "x-kubernetes-embedded-resource"))
			wembedded(w, x);
		json_object_object_foreach(mut(x), k, v) {
			const struct json_object *ps = jobj(props, k);
			size_t old;

			if (ps != NULL) {
				old = path_child(&w->p, k);
				wembedded_walk(w, v, ps);
				path_pop(&w->p, old);
			} else if (ap != NULL) {
				old = path_key(&w->p, k);
				wembedded_walk(w, v, ap);
				path_pop(&w->p, old);
			}
		}
	} else if (jtype(x) == json_type_array) {
		const struct json_object *items = jobj(s, "items");

		for (size_t i = 0; i < jlen(x); i++) {
			size_t old = path_index(&w->p, i);

			wembedded_walk(w, jidx(x, i), items);
			path_pop(&w->p, old);
		}
	}
	w->depth--;
}

/*
 * x-kubernetes-list-type set and map (schema/listtype): items unique, by
 * value or by their map keys; each repeated value is reported once, at
 * its second occurrence.
 */

/* The map-list key of item 'x': {"k1":v1,...} printed as Go's %#v. */
static void
list_map_key_repr(struct sb *b, const struct json_object *x, const struct json_object *keys)
{
	const char *names[PRINT_KEYS_MAX];
	size_t n = 0;

	for (size_t i = 0; i < jlen(keys) && n < PRINT_KEYS_MAX; i++)
		if (jtype(jidx(keys, i)) == json_type_string)
			names[n++] = json_object_get_string(mut(jidx(keys, i)));
	if (n > 1)
		qsort(names, n, sizeof(names[0]), key_cmp);
	sb_puts(b, "map[string]interface {}{");
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			sb_puts(b, ", ");
		go_quote_str(b, names[i]);
		sb_putc(b, ':');
		go_sharpv(b, jget(x, names[i]), 0);
	}
	sb_putc(b, '}');
}

static void wlist_walk(struct wstate *, const struct json_object *, const struct json_object *);

static void
wlist_array(struct wstate *w, const struct json_object *x, const struct json_object *s)
{
	const char *lt = jstr(s, "x-kubernetes-list-type");
	const struct json_object *keys = jarr(s, "x-kubernetes-list-map-keys");
	const struct json_object *items = jobj(s, "items");
	size_t n = jlen(x);
	bool map_ok = true;

	if (lt != NULL && strcmp(lt, "map") == 0)
		for (size_t i = 0; i < n; i++) {
			const struct json_object *e = jidx(x, i);

			if (e != NULL && jtype(e) != json_type_object) {
				size_t old = path_index(&w->p, i);

				wrc(w, fe_invalid_json(w->out, w->p.buf, e,
				    "must be an object for an array of list-type map"));
				path_pop(&w->p, old);
				map_ok = false;
				break;
			}
		}
	if (lt != NULL && (strcmp(lt, "set") == 0 || (strcmp(lt, "map") == 0 && map_ok))) {
		bool set = strcmp(lt, "set") == 0;
		size_t *dups, ndups;

		/* Each repeated value is reported once, at its second occurrence. */
		if (find_dups(x, set ? NULL : keys, &dups, &ndups) < 0) {
			wrc(w, -ENOMEM);
			return;
		}
		for (size_t k = 0; k < ndups && w->rc == 0; k++) {
			const struct json_object *e = jidx(x, dups[k]);
			char val[MSG_MAX];
			struct sb b;
			size_t old;

			sb_init(&b, val, sizeof(val));
			if (set)
				go_value(&b, e);
			else
				list_map_key_repr(&b, e, keys);
			old = path_index(&w->p, dups[k]);
			wrc(w, fe_valued(w->out, "Duplicate", w->p.buf, val, NULL));
			path_pop(&w->p, old);
		}
		kc_free(dups);
	}
	for (size_t i = 0; i < n && w->rc == 0; i++) {
		const struct json_object *e = jidx(x, i);
		size_t old;

		if (e == NULL || (jtype(e) != json_type_object && jtype(e) != json_type_array))
			continue;
		old = path_index(&w->p, i);
		wlist_walk(w, e, items);
		path_pop(&w->p, old);
	}
}

static void
wlist_walk(struct wstate *w, const struct json_object *x, const struct json_object *s)
{
	if (s == NULL || x == NULL || w->rc != 0)
		return;
	if (++w->depth > SCHEMA_DEPTH_MAX) {
		w->rc = -E2BIG;
		return;
	}
	if (jtype(x) == json_type_array)
		wlist_array(w, x, s);
	else if (jtype(x) == json_type_object) {
		const struct json_object *props = jobj(s, "properties");
		const struct json_object *ap = jobj(s, "additionalProperties");

		json_object_object_foreach(mut(x), k, v) {
			const struct json_object *sub = jobj(props, k);
			size_t old;

			if (sub == NULL)
				sub = ap;
			if (sub == NULL || v == NULL ||
			    (jtype(v) != json_type_object && jtype(v) != json_type_array))
				continue;
			old = path_child(&w->p, k);
			wlist_walk(w, v, sub);
			path_pop(&w->p, old);
		}
	}
	w->depth--;
}

/* Value validation, embedded resources, then list types, at 'base'. */
static int
validate_all(const struct json_object *schema, const struct json_object *obj,
    const char *base, bool embedded_root, struct elist *out)
{
	struct vstate vs = { .base = base };
	struct wstate w = { .out = out };
	unsigned long match = 0;

	path_reset(&vs.name, "");
	vnode(&vs, schema, obj, out, &match);
	if (vs.rc != 0)
		return vs.rc;
	path_reset(&w.p, base);
	if (embedded_root && jtype(obj) == json_type_object)
		wembedded(&w, obj);
	wembedded_walk(&w, obj, schema);
	if (w.rc != 0)
		return w.rc;
	w.depth = 0;
	path_reset(&w.p, base);
	wlist_walk(&w, obj, schema);
	return w.rc;
}

int
schema_validate(const struct json_object *schema, const struct json_object *obj,
    struct schema_errs *errs)
{
	struct elist out = { 0 };
	int r;

	if (schema == NULL)
		return 0;
	if ((r = validate_all(schema, obj, NULL, false, &out)) < 0) {
		elist_free(&out);
		return r;
	}
	elist_export(&out, errs);
	r = out.n > 0 || out.dropped > 0 ? KC_EINVALID : 0;
	elist_free(&out);
	return r;
}

/*
 * Pruning (schema/pruning), in place.
 */

/* ObjectMeta's fields: what survives the round trip through the Go type. */
static const char *const objectmeta_fields[] = {
	"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
	"generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
	"labels", "annotations", "ownerReferences", "finalizers", "managedFields",
};

struct pstate {
	struct path		 p;		/* "a.b[0].c" */
	struct json_object	*unknown;	/* array of paths, or NULL */
	unsigned		 depth;
	int			 rc;
};

static void
precord(struct pstate *ps, const char *key)
{
	char path[PATH_MAX_LEN + 256];

	if (ps->unknown == NULL)
		return;
	(void)snprintf(path, sizeof(path), "%s%s%s", ps->p.buf, ps->p.len > 0 ? "." : "", key);
	if (kc_json_append(ps->unknown, json_object_new_string(path)) < 0 && ps->rc == 0)
		ps->rc = -ENOMEM;
}

/* Deletes the keys of 'x' for which keep() says no, recording them. */
static void
pdelete(struct pstate *ps, struct json_object *x,
    bool (*keep)(const char *key, const void *arg), const void *arg)
{
	size_t n = (size_t)json_object_object_length(x), m = 0;
	char **keys;

	if (n == 0)
		return;
	if ((keys = kc_calloc(n, sizeof(*keys))) == NULL) {
		if (ps->rc == 0)
			ps->rc = -ENOMEM;
		return;
	}
	json_object_object_foreach(x, k, v) {
		(void)v;
		if (!keep(k, arg))
			keys[m++] = k;
	}
	for (size_t i = 0; i < m; i++) {
		precord(ps, keys[i]);
		json_object_object_del(x, keys[i]);
	}
	kc_free(keys);
}

static bool
keep_objectmeta(const char *key, const void *arg)
{
	(void)arg;
	for (size_t i = 0; i < KC_ARRAY_SIZE(objectmeta_fields); i++)
		if (strcmp(key, objectmeta_fields[i]) == 0)
			return true;
	return false;
}

static bool
keep_nothing(const char *key, const void *arg)
{
	(void)key;
	(void)arg;
	return false;
}

struct pkeep {
	const struct json_object	*s;
	bool				 embedded;
};

static bool
keep_known(const char *key, const void *arg)
{
	const struct pkeep *pk = arg;

	if (pk->embedded && (strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0 ||
	    strcmp(key, "metadata") == 0))
		return true;
	return jhas(jobj(pk->s, "properties"), key) || jhas(pk->s, "additionalProperties");
}

static void pnode(struct pstate *, struct json_object *, const struct json_object *, bool);

/* The schema additionalProperties gives values: NULL for a boolean. */
static const struct json_object *
ap_schema(const struct json_object *s)
{
	return jobj(s, "additionalProperties");
}

/* Embedded (non-root) metadata: only ObjectMeta's fields survive. */
static void
pmeta(struct pstate *ps, struct json_object *x)
{
	struct json_object *meta;
	size_t old;

	if (!json_object_object_get_ex(x, "metadata", &meta) || jtype(meta) != json_type_object)
		return;
	old = path_child(&ps->p, "metadata");
	pdelete(ps, meta, keep_objectmeta, NULL);
	path_pop(&ps->p, old);
}

/* skipPrune: under x-kubernetes-preserve-unknown-fields. */
static void
pskip(struct pstate *ps, struct json_object *x, const struct json_object *s, bool root)
{
	bool embedded = root || jbool(s, "x-kubernetes-embedded-resource");

	if (s == NULL || x == NULL || ps->rc != 0)
		return;
	if (++ps->depth > SCHEMA_DEPTH_MAX) {
		ps->rc = -E2BIG;
		return;
	}
	if (jtype(x) == json_type_object) {
		const struct json_object *props = jobj(s, "properties");

		if (embedded && !root)
			pmeta(ps, x);
		json_object_object_foreach(x, k, v) {
			const struct json_object *sub = jobj(props, k);
			size_t old;

			if (embedded && (strcmp(k, "apiVersion") == 0 || strcmp(k, "kind") == 0 ||
			    strcmp(k, "metadata") == 0))
				continue;
			if (sub == NULL && !jhas(s, "additionalProperties"))
				continue;
			old = path_child(&ps->p, k);
			pnode(ps, v, sub != NULL ? sub : ap_schema(s), false);
			path_pop(&ps->p, old);
		}
	} else if (jtype(x) == json_type_array)
		for (size_t i = 0; i < jlen(x); i++) {
			size_t old = path_index(&ps->p, i);

			pskip(ps, json_object_array_get_idx(x, i), jobj(s, "items"), false);
			path_pop(&ps->p, old);
		}
	ps->depth--;
}

static void
pnode(struct pstate *ps, struct json_object *x, const struct json_object *s, bool root)
{
	if (x == NULL || ps->rc != 0)
		return;
	if (s != NULL && jbool(s, "x-kubernetes-preserve-unknown-fields")) {
		pskip(ps, x, s, root);
		return;
	}
	if (++ps->depth > SCHEMA_DEPTH_MAX) {
		ps->rc = -E2BIG;
		return;
	}
	if (jtype(x) == json_type_object) {
		struct pkeep pk = { s, root || jbool(s, "x-kubernetes-embedded-resource") };

		if (s == NULL)
			pdelete(ps, x, keep_nothing, NULL);
		else {
			const struct json_object *props = jobj(s, "properties");

			if (pk.embedded && !root)
				pmeta(ps, x);
			pdelete(ps, x, keep_known, &pk);
			json_object_object_foreach(x, k, v) {
				const struct json_object *sub = jobj(props, k);
				size_t old;

				if (pk.embedded && (strcmp(k, "apiVersion") == 0 ||
				    strcmp(k, "kind") == 0 || strcmp(k, "metadata") == 0))
					continue;
				old = path_child(&ps->p, k);
				pnode(ps, v, sub != NULL ? sub : ap_schema(s), false);
				path_pop(&ps->p, old);
			}
		}
	} else if (jtype(x) == json_type_array)
		for (size_t i = 0; i < jlen(x); i++) {
			size_t old = path_index(&ps->p, i);

			pnode(ps, json_object_array_get_idx(x, i), jobj(s, "items"), false);
			path_pop(&ps->p, old);
		}
	ps->depth--;
}

static int
path_str_cmp(const void *a, const void *b)
{
	const struct json_object *const *x = a, *const *y = b;

	return strcmp(json_object_get_string(mut(*x)), json_object_get_string(mut(*y)));
}

int
schema_prune(const struct json_object *schema, struct json_object *obj,
    struct json_object **ret_unknown)
{
	struct pstate ps = { 0 };

	if (ret_unknown != NULL && (ps.unknown = json_object_new_array()) == NULL)
		return -ENOMEM;
	path_reset(&ps.p, "");
	if (schema != NULL)
		pnode(&ps, obj, schema, true);
	if (ps.rc != 0) {
		if (ps.unknown != NULL)
			json_object_put(ps.unknown);
		return ps.rc;
	}
	if (ps.unknown != NULL) {
		json_object_array_sort(ps.unknown, path_str_cmp);
		*ret_unknown = ps.unknown;
	}
	return 0;
}

/*
 * Defaulting (schema/defaulting), in place.
 */

static bool
has_default(const struct json_object *s)
{
	return jget(s, "default") != NULL;
}

/* PruneNonNullableNullsWithoutDefaults. */
static int
dnulls(struct json_object *x, const struct json_object *s, unsigned depth)
{
	int r;

	if (s == NULL || x == NULL)
		return 0;
	if (depth > SCHEMA_DEPTH_MAX)
		return -E2BIG;
	if (jtype(x) == json_type_object) {
		const struct json_object *props = jobj(s, "properties"), *ap = ap_schema(s);
		size_t n = (size_t)json_object_object_length(x), m = 0;
		char **drop;

		if (n == 0)
			return 0;
		if ((drop = kc_calloc(n, sizeof(*drop))) == NULL)
			return -ENOMEM;
		json_object_object_foreach(x, k, v) {
			const struct json_object *sub = jobj(props, k);

			if (sub == NULL && !jhas(props, k))
				sub = ap;
			if (sub == NULL)
				continue;
			if (v == NULL && !jbool(sub, "nullable") && !has_default(sub))
				drop[m++] = k;
			else if ((r = dnulls(v, sub, depth + 1)) < 0) {
				kc_free(drop);
				return r;
			}
		}
		for (size_t i = 0; i < m; i++)
			json_object_object_del(x, drop[i]);
		kc_free(drop);
	} else if (jtype(x) == json_type_array) {
		for (size_t i = 0; i < jlen(x); i++)
			if ((r = dnulls(json_object_array_get_idx(x, i), jobj(s, "items"),
			    depth + 1)) < 0)
				return r;
	}
	return 0;
}

static bool
nonnullable_null(const struct json_object *v, const struct json_object *s)
{
	return v == NULL && s != NULL && !jbool(s, "nullable");
}

/* defaulting.Default. */
static int
dapply(struct json_object *x, const struct json_object *s, unsigned depth)
{
	int r;

	if (s == NULL || x == NULL)
		return 0;
	if (depth > SCHEMA_DEPTH_MAX)
		return -E2BIG;
	if (jtype(x) == json_type_object) {
		const struct json_object *props = jobj(s, "properties"), *ap = ap_schema(s);

		if (props != NULL) {
			json_object_object_foreach(mut(props), k, ps) {
				struct json_object *cur;
				bool found = json_object_object_get_ex(x, k, &cur);

				if (!has_default(ps) || (found && !nonnullable_null(cur, ps)))
					continue;
				if (kc_json_put(x, k, kc_json_copy(jget(ps, "default"))) < 0)
					return -ENOMEM;
			}
		}
		json_object_object_foreach(x, k, v) {
			const struct json_object *sub = jobj(props, k);

			if (sub != NULL) {
				if ((r = dapply(v, sub, depth + 1)) < 0)
					return r;
			} else if (ap != NULL && !jhas(props, k)) {
				if (nonnullable_null(v, ap) && has_default(ap)) {
					if (kc_json_put(x, k, kc_json_copy(jget(ap, "default"))) < 0)
						return -ENOMEM;
					continue;
				}
				if ((r = dapply(v, ap, depth + 1)) < 0)
					return r;
			}
		}
	} else if (jtype(x) == json_type_array) {
		const struct json_object *items = jobj(s, "items");

		for (size_t i = 0; i < jlen(x); i++) {
			struct json_object *v = json_object_array_get_idx(x, i);

			if (nonnullable_null(v, items) && has_default(items)) {
				struct json_object *c = kc_json_copy(jget(items, "default"));

				if (c == NULL)
					return -ENOMEM;
				if (json_object_array_put_idx(x, i, c) < 0) {
					json_object_put(c);
					return -ENOMEM;
				}
				continue;
			}
			if ((r = dapply(v, items, depth + 1)) < 0)
				return r;
		}
	}
	return 0;
}

int
schema_default(const struct json_object *schema, struct json_object *obj)
{
	int r;

	if (schema == NULL || obj == NULL)
		return 0;
	if ((r = dnulls(obj, schema, 0)) < 0)
		return r;
	return dapply(obj, schema, 0);
}

/*
 * Schema navigation.
 */

const struct json_object *
schema_child(const struct json_object *schema, const char *key)
{
	const struct json_object *s = jobj(jobj(schema, "properties"), key);

	return s != NULL ? s : ap_schema(schema);
}

const struct json_object *
schema_items(const struct json_object *schema)
{
	return jobj(schema, "items");
}

const struct json_object *
schema_find(const struct json_object *root, const char *path)
{
	const struct json_object *s = root;
	const char *p = path;

	if (path == NULL)
		return root;
	while (s != NULL && *p != '\0') {
		char key[256];
		size_t n = strcspn(p, ".[");

		if (n >= sizeof(key))
			return NULL;
		if (n > 0) {
			memcpy(key, p, n);
			key[n] = '\0';
			s = schema_child(s, key);
			p += n;
		}
		while (s != NULL && *p == '[') {
			const char *end = strchr(p, ']');

			if (end == NULL)
				return NULL;
			s = schema_items(s);
			p = end + 1;
		}
		if (*p == '.')
			p++;
		else if (*p != '\0' && *p != '[')
			return NULL;
	}
	return s;
}

const char *
schema_list_type(const struct json_object *schema, const struct json_object **ret_keys)
{
	const char *lt;

	if (!(jstr(schema, "type") != NULL && strcmp(jstr(schema, "type"), "array") == 0))
		return NULL;
	lt = jstr(schema, "x-kubernetes-list-type");
	if (lt == NULL || (strcmp(lt, "set") != 0 && strcmp(lt, "map") != 0))
		lt = "atomic";
	if (ret_keys != NULL)
		*ret_keys = strcmp(lt, "map") == 0 ? jarr(schema, "x-kubernetes-list-map-keys") :
		    NULL;
	return lt;
}

const char *
schema_map_type(const struct json_object *schema)
{
	const char *mt = jstr(schema, "x-kubernetes-map-type");

	return mt != NULL && strcmp(mt, "atomic") == 0 ? "atomic" : "granular";
}

/*
 * CustomResourceDefinition validation.
 */

struct cstate {
	struct elist	 out;
	struct path	 p;		/* field.Path of the current check */
	int		 rc;
};

static void
crc(struct cstate *cs, int r)
{
	if (r < 0 && cs->rc == 0)
		cs->rc = r;
}

/* Pushes field.Path's Child(name); the caller restores with path_pop(). */
#define CHILD(cs, name)	path_child(&(cs)->p, (name))

static void
c_required(struct cstate *cs, const char *child, const char *detail)
{
	size_t old = child != NULL ? CHILD(cs, child) : cs->p.len;

	crc(cs, fe_required(&cs->out, cs->p.buf, detail));
	path_pop(&cs->p, old);
}

static void
c_forbidden(struct cstate *cs, const char *child, const char *detail)
{
	size_t old = child != NULL ? CHILD(cs, child) : cs->p.len;

	crc(cs, fe_forbidden(&cs->out, cs->p.buf, detail));
	path_pop(&cs->p, old);
}

static void
c_invalid_str(struct cstate *cs, const char *child, const char *value, const char *detail)
{
	size_t old = child != NULL ? CHILD(cs, child) : cs->p.len;

	crc(cs, fe_invalid_str(&cs->out, cs->p.buf, value, detail));
	path_pop(&cs->p, old);
}

static void
c_invalid_raw(struct cstate *cs, const char *child, const char *value, const char *detail)
{
	size_t old = child != NULL ? CHILD(cs, child) : cs->p.len;

	crc(cs, fe_valued(&cs->out, "Invalid", cs->p.buf, value, detail));
	path_pop(&cs->p, old);
}

/* An Invalid whose value upstream prints as a Go struct: compact JSON here. */
static void
c_invalid_dump(struct cstate *cs, const char *child, const struct json_object *v,
    const char *detail)
{
	char val[MSG_MAX];
	struct sb b;

	sb_init(&b, val, sizeof(val));
	if (json_dump_value(&b, v) < 0) {
		crc(cs, -ENOMEM);
		return;
	}
	c_invalid_raw(cs, child, val, detail);
}

static void
c_not_supported(struct cstate *cs, const char *child, const char *value,
    const char *const *supported, size_t n)
{
	size_t old = child != NULL ? CHILD(cs, child) : cs->p.len;

	crc(cs, fe_not_supported_str(&cs->out, cs->p.buf, value, supported, n));
	path_pop(&cs->p, old);
}

/* []string as Go's %#v prints it. */
static void
strings_repr(char *buf, size_t size, const struct json_object *a)
{
	struct sb b;

	sb_init(&b, buf, size);
	if (a == NULL) {
		sb_puts(&b, "[]string(nil)");
		return;
	}
	sb_puts(&b, "[]string{");
	for (size_t i = 0; i < jlen(a); i++) {
		if (i > 0)
			sb_puts(&b, ", ");
		go_quote_str(&b, jtype(jidx(a, i)) == json_type_string ?
		    json_object_get_string(mut(jidx(a, i))) : "");
	}
	sb_putc(&b, '}');
}

static bool
str_in(const char *s, const char *const *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, set[i]) == 0)
			return true;
	return false;
}

/* A JSON value Go would see as its zero value (absent, null, false, ""). */
static bool
jzero(const struct json_object *o, const char *key)
{
	const struct json_object *v = jget(o, key);

	if (v == NULL)
		return true;
	switch (jtype(v)) {
	case json_type_boolean:
		return !json_object_get_boolean(mut(v));
	case json_type_string:
		return json_object_get_string_len(mut(v)) == 0;
	default:
		return false;
	}
}

static bool
jstr_eq(const struct json_object *o, const char *key, const char *want)
{
	const char *s = jstr(o, key);

	return s != NULL && strcmp(s, want) == 0;
}

static bool
has_newline(const char *s)
{
	return strchr(s, '\n') != NULL || strchr(s, '\r') != NULL;
}

/* strings.TrimSpace(s) == "", for ASCII white space. */
static bool
blank(const char *s)
{
	for (; *s != '\0'; s++)
		if (strchr(" \t\n\v\f\r", *s) == NULL)
			return false;
	return true;
}

/*
 * The Go decoder's view: a field of the wrong JSON type fails the whole
 * request with 400 before any validation. The first such field is
 * reported as encoding/json does, approximately: the innermost struct
 * and the JSON field path from the enclosing decode (map keys and array
 * indexes are not part of it).
 */

enum dkind {
	D_STR, D_BOOL, D_INT64, D_INT32, D_FLOAT, D_ANY, D_STRS, D_OBJ, D_OBJS, D_SCHEMA,
};

struct dstruct;

struct dfield {
	const char		*key;
	enum dkind		 kind;
	const char		*gotype;	/* for D_OBJS: the element type */
	const struct dstruct	*sub;
};

struct dstruct {
	const char		*name;
	const struct dfield	*fields;
	size_t			 n;
};

struct dstate {
	struct path	 dp;
	const char	*strct;
	char		 msg[MSG_MAX];
	bool		 failed;
	unsigned	 depth;
	bool		 too_deep;
};

static const char *
json_kind_name(const struct json_object *v, char *buf, size_t size)
{
	switch (jtype(v)) {
	case json_type_boolean:
		return "bool";
	case json_type_string:
		return "string";
	case json_type_array:
		return "array";
	case json_type_object:
		return "object";
	case json_type_int:
		return "number";
	case json_type_double: {
		struct sb b;

		sb_init(&b, buf, size);
		sb_puts(&b, "number ");
		json_float(&b, jdouble(v));
		return buf;
	}
	default:
		return "null";
	}
}

static void
dfail(struct dstate *ds, const char *key, const struct json_object *v, const char *gotype,
    bool numeric_detail)
{
	char kb[64];
	const char *kind;

	if (ds->failed)
		return;
	ds->failed = true;
	kind = json_kind_name(v, kb, sizeof(kb));
	if (!numeric_detail && jtype(v) == json_type_double)
		kind = "number";
	(void)snprintf(ds->msg, sizeof(ds->msg),
	    "json: cannot unmarshal %s into Go struct field %s.%s%s%s of type %s", kind,
	    ds->strct, ds->dp.buf, ds->dp.len > 0 && key[0] != '\0' ? "." : "", key, gotype);
}

/* Whether 'v' decodes into a scalar of 'kind'; null always does. */
static bool
dscalar_ok(const struct json_object *v, enum dkind kind)
{
	if (v == NULL)
		return true;
	switch (kind) {
	case D_STR:
		return jtype(v) == json_type_string;
	case D_BOOL:
		return jtype(v) == json_type_boolean;
	case D_INT64:
		return jtype(v) == json_type_int;
	case D_INT32:
		return jtype(v) == json_type_int && jint(v) >= INT32_MIN && jint(v) <= INT32_MAX;
	case D_FLOAT:
		return jisnum(v);
	default:
		return true;
	}
}

static void dschema(struct dstate *, const struct json_object *);
static void dstruct_check(struct dstate *, const struct json_object *, const struct dstruct *);

static void
dfield_check(struct dstate *ds, const struct json_object *o, const struct dfield *f)
{
	const struct json_object *v = jget(o, f->key);
	const char *saved = ds->strct;
	size_t old;

	if (v == NULL || ds->failed)
		return;
	switch (f->kind) {
	case D_STR: case D_BOOL: case D_INT64: case D_INT32: case D_FLOAT:
		if (!dscalar_ok(v, f->kind))
			dfail(ds, f->key, v, f->gotype, f->kind == D_INT64 || f->kind == D_INT32);
		return;
	case D_ANY:
		return;
	case D_STRS:
		if (jtype(v) != json_type_array) {
			dfail(ds, f->key, v, "[]string", false);
			return;
		}
		for (size_t i = 0; i < jlen(v); i++)
			if (!dscalar_ok(jidx(v, i), D_STR)) {
				dfail(ds, f->key, jidx(v, i), "string", false);
				return;
			}
		return;
	case D_OBJ:
		if (jtype(v) != json_type_object) {
			dfail(ds, f->key, v, f->gotype, false);
			return;
		}
		old = path_child(&ds->dp, f->key);
		dstruct_check(ds, v, f->sub);
		path_pop(&ds->dp, old);
		ds->strct = saved;
		return;
	case D_OBJS:
		if (jtype(v) != json_type_array) {
			dfail(ds, f->key, v, f->gotype, false);
			return;
		}
		for (size_t i = 0; i < jlen(v) && !ds->failed; i++) {
			const struct json_object *e = jidx(v, i);

			if (e == NULL)
				continue;
			if (jtype(e) != json_type_object) {
				dfail(ds, f->key, e, f->gotype + 2, false);
				return;
			}
			old = path_child(&ds->dp, f->key);
			dstruct_check(ds, e, f->sub);
			path_pop(&ds->dp, old);
			ds->strct = saved;
		}
		return;
	case D_SCHEMA:
		if (jtype(v) != json_type_object) {
			dfail(ds, f->key, v, "v1.JSONSchemaProps", false);
			return;
		}
		old = path_child(&ds->dp, f->key);
		dschema(ds, v);
		path_pop(&ds->dp, old);
		ds->strct = saved;
		return;
	}
}

static void
dstruct_check(struct dstate *ds, const struct json_object *o, const struct dstruct *d)
{
	ds->strct = d->name;
	for (size_t i = 0; i < d->n && !ds->failed; i++) {
		ds->strct = d->name;
		dfield_check(ds, o, &d->fields[i]);
	}
}

#define DSTRUCT(name, arr)	{ name, arr, KC_ARRAY_SIZE(arr) }

static const struct dfield d_validation_rule_f[] = {
	{ "rule", D_STR, "string", NULL },
	{ "message", D_STR, "string", NULL },
	{ "messageExpression", D_STR, "string", NULL },
	{ "reason", D_STR, "v1.FieldValueErrorReason", NULL },
	{ "fieldPath", D_STR, "string", NULL },
	{ "optionalOldSelf", D_BOOL, "bool", NULL },
};
static const struct dstruct d_validation_rule = DSTRUCT("ValidationRule", d_validation_rule_f);

static const struct dfield d_docs_f[] = {
	{ "description", D_STR, "string", NULL },
	{ "url", D_STR, "string", NULL },
};
static const struct dstruct d_docs = DSTRUCT("ExternalDocumentation", d_docs_f);

/* JSONSchemaProps' typed fields; the schema-valued ones are walked by hand. */
static const struct dfield d_schema_f[] = {
	{ "id", D_STR, "string", NULL },
	{ "$schema", D_STR, "v1.JSONSchemaURL", NULL },
	{ "$ref", D_STR, "string", NULL },
	{ "description", D_STR, "string", NULL },
	{ "type", D_STR, "string", NULL },
	{ "format", D_STR, "string", NULL },
	{ "title", D_STR, "string", NULL },
	{ "default", D_ANY, NULL, NULL },
	{ "maximum", D_FLOAT, "float64", NULL },
	{ "exclusiveMaximum", D_BOOL, "bool", NULL },
	{ "minimum", D_FLOAT, "float64", NULL },
	{ "exclusiveMinimum", D_BOOL, "bool", NULL },
	{ "maxLength", D_INT64, "int64", NULL },
	{ "minLength", D_INT64, "int64", NULL },
	{ "pattern", D_STR, "string", NULL },
	{ "maxItems", D_INT64, "int64", NULL },
	{ "minItems", D_INT64, "int64", NULL },
	{ "uniqueItems", D_BOOL, "bool", NULL },
	{ "multipleOf", D_FLOAT, "float64", NULL },
	{ "maxProperties", D_INT64, "int64", NULL },
	{ "minProperties", D_INT64, "int64", NULL },
	{ "required", D_STRS, NULL, NULL },
	{ "externalDocs", D_OBJ, "v1.ExternalDocumentation", &d_docs },
	{ "example", D_ANY, NULL, NULL },
	{ "nullable", D_BOOL, "bool", NULL },
	{ "x-kubernetes-preserve-unknown-fields", D_BOOL, "bool", NULL },
	{ "x-kubernetes-embedded-resource", D_BOOL, "bool", NULL },
	{ "x-kubernetes-int-or-string", D_BOOL, "bool", NULL },
	{ "x-kubernetes-list-map-keys", D_STRS, NULL, NULL },
	{ "x-kubernetes-list-type", D_STR, "string", NULL },
	{ "x-kubernetes-map-type", D_STR, "string", NULL },
	{ "x-kubernetes-validations", D_OBJS, "[]v1.ValidationRule", &d_validation_rule },
};
static const struct dstruct d_schema = DSTRUCT("JSONSchemaProps", d_schema_f);

/* A schema decoded by JSONSchemaPropsOr*'s own UnmarshalJSON: paths restart. */
static void
dschema_nested(struct dstate *ds, const struct json_object *v)
{
	struct path saved = ds->dp;
	const char *strct = ds->strct;

	path_reset(&ds->dp, "");
	dschema(ds, v);
	if (!ds->failed) {
		ds->dp = saved;
		ds->strct = strct;
	}
}

static void
dschema_map(struct dstate *ds, const struct json_object *s, const char *key)
{
	const struct json_object *m = jget(s, key);
	size_t old;

	if (m == NULL || ds->failed)
		return;
	if (jtype(m) != json_type_object) {
		dfail(ds, key, m, "map[string]v1.JSONSchemaProps", false);
		return;
	}
	old = path_child(&ds->dp, key);
	json_object_object_foreach(mut(m), k, v) {
		(void)k;
		if (ds->failed)
			break;
		if (v == NULL)
			continue;
		if (jtype(v) != json_type_object) {
			path_pop(&ds->dp, old);
			ds->strct = "JSONSchemaProps";
			dfail(ds, key, v, "v1.JSONSchemaProps", false);
			return;
		}
		dschema(ds, v);
	}
	path_pop(&ds->dp, old);
}

static void
dschema(struct dstate *ds, const struct json_object *s)
{
	static const char *const lists[] = { "allOf", "oneOf", "anyOf" };
	const struct json_object *v;

	if (ds->failed)
		return;
	if (++ds->depth > SCHEMA_DEPTH_MAX) {
		ds->too_deep = true;
		ds->failed = true;
		(void)snprintf(ds->msg, sizeof(ds->msg),
		    "schema nested deeper than %d levels", SCHEMA_DEPTH_MAX);
		return;
	}
	dstruct_check(ds, s, &d_schema);
	ds->strct = "JSONSchemaProps";
	if (!ds->failed && (v = jget(s, "enum")) != NULL && jtype(v) != json_type_array)
		dfail(ds, "enum", v, "[]v1.JSON", false);
	for (size_t i = 0; i < KC_ARRAY_SIZE(lists) && !ds->failed; i++) {
		size_t old;

		if ((v = jget(s, lists[i])) == NULL)
			continue;
		if (jtype(v) != json_type_array) {
			dfail(ds, lists[i], v, "[]v1.JSONSchemaProps", false);
			break;
		}
		old = path_child(&ds->dp, lists[i]);
		for (size_t j = 0; j < jlen(v) && !ds->failed; j++) {
			const struct json_object *e = jidx(v, j);

			if (e == NULL)
				continue;
			if (jtype(e) != json_type_object) {
				path_pop(&ds->dp, old);
				ds->strct = "JSONSchemaProps";
				dfail(ds, lists[i], e, "v1.JSONSchemaProps", false);
				return;
			}
			dschema(ds, e);
			ds->strct = "JSONSchemaProps";
		}
		path_pop(&ds->dp, old);
	}
	if (!ds->failed && (v = jget(s, "not")) != NULL) {
		size_t old;

		if (jtype(v) != json_type_object)
			dfail(ds, "not", v, "v1.JSONSchemaProps", false);
		else {
			old = path_child(&ds->dp, "not");
			dschema(ds, v);
			path_pop(&ds->dp, old);
			ds->strct = "JSONSchemaProps";
		}
	}
	dschema_map(ds, s, "properties");
	dschema_map(ds, s, "patternProperties");
	dschema_map(ds, s, "definitions");
	ds->strct = "JSONSchemaProps";
	/* items: an object or an array; anything else decodes as absent. */
	if (!ds->failed && (v = jget(s, "items")) != NULL) {
		if (jtype(v) == json_type_object)
			dschema_nested(ds, v);
		else if (jtype(v) == json_type_array)
			for (size_t j = 0; j < jlen(v) && !ds->failed; j++)
				if (jtype(jidx(v, j)) == json_type_object)
					dschema_nested(ds, jidx(v, j));
	}
	for (size_t i = 0; i < 2 && !ds->failed; i++) {
		const char *key = i == 0 ? "additionalProperties" : "additionalItems";

		if ((v = jget(s, key)) == NULL || jtype(v) == json_type_boolean)
			continue;
		if (jtype(v) != json_type_object) {
			ds->failed = true;
			(void)snprintf(ds->msg, sizeof(ds->msg), "boolean or JSON schema expected");
			break;
		}
		dschema_nested(ds, v);
	}
	ds->depth--;
}

static const struct dfield d_names_f[] = {
	{ "plural", D_STR, "string", NULL },
	{ "singular", D_STR, "string", NULL },
	{ "shortNames", D_STRS, NULL, NULL },
	{ "kind", D_STR, "string", NULL },
	{ "listKind", D_STR, "string", NULL },
	{ "categories", D_STRS, NULL, NULL },
};
static const struct dstruct d_names = DSTRUCT("CustomResourceDefinitionNames", d_names_f);

static const struct dfield d_cr_validation_f[] = {
	{ "openAPIV3Schema", D_SCHEMA, NULL, NULL },
};
static const struct dstruct d_cr_validation =
    DSTRUCT("CustomResourceValidation", d_cr_validation_f);

static const struct dfield d_scale_f[] = {
	{ "specReplicasPath", D_STR, "string", NULL },
	{ "statusReplicasPath", D_STR, "string", NULL },
	{ "labelSelectorPath", D_STR, "string", NULL },
};
static const struct dstruct d_scale = DSTRUCT("CustomResourceSubresourceScale", d_scale_f);

static const struct dfield d_empty_f[] = {
	{ "", D_ANY, NULL, NULL },
};
static const struct dstruct d_status_sub =
    DSTRUCT("CustomResourceSubresourceStatus", d_empty_f);

static const struct dfield d_subresources_f[] = {
	{ "status", D_OBJ, "v1.CustomResourceSubresourceStatus", &d_status_sub },
	{ "scale", D_OBJ, "v1.CustomResourceSubresourceScale", &d_scale },
};
static const struct dstruct d_subresources =
    DSTRUCT("CustomResourceSubresources", d_subresources_f);

static const struct dfield d_column_f[] = {
	{ "name", D_STR, "string", NULL },
	{ "type", D_STR, "string", NULL },
	{ "format", D_STR, "string", NULL },
	{ "description", D_STR, "string", NULL },
	{ "priority", D_INT32, "int32", NULL },
	{ "jsonPath", D_STR, "string", NULL },
};
static const struct dstruct d_column = DSTRUCT("CustomResourceColumnDefinition", d_column_f);

static const struct dfield d_selectable_f[] = {
	{ "jsonPath", D_STR, "string", NULL },
};
static const struct dstruct d_selectable = DSTRUCT("SelectableField", d_selectable_f);

static const struct dfield d_version_f[] = {
	{ "name", D_STR, "string", NULL },
	{ "served", D_BOOL, "bool", NULL },
	{ "storage", D_BOOL, "bool", NULL },
	{ "deprecated", D_BOOL, "bool", NULL },
	{ "deprecationWarning", D_STR, "string", NULL },
	{ "schema", D_OBJ, "v1.CustomResourceValidation", &d_cr_validation },
	{ "subresources", D_OBJ, "v1.CustomResourceSubresources", &d_subresources },
	{ "additionalPrinterColumns", D_OBJS, "[]v1.CustomResourceColumnDefinition",
	    &d_column },
	{ "selectableFields", D_OBJS, "[]v1.SelectableField", &d_selectable },
};
static const struct dstruct d_version = DSTRUCT("CustomResourceDefinitionVersion", d_version_f);

static const struct dfield d_service_f[] = {
	{ "namespace", D_STR, "string", NULL },
	{ "name", D_STR, "string", NULL },
	{ "path", D_STR, "string", NULL },
	{ "port", D_INT32, "int32", NULL },
};
static const struct dstruct d_service = DSTRUCT("ServiceReference", d_service_f);

static const struct dfield d_client_f[] = {
	{ "url", D_STR, "string", NULL },
	{ "service", D_OBJ, "v1.ServiceReference", &d_service },
	{ "caBundle", D_STR, "[]uint8", NULL },
};
static const struct dstruct d_client = DSTRUCT("WebhookClientConfig", d_client_f);

static const struct dfield d_webhook_f[] = {
	{ "clientConfig", D_OBJ, "v1.WebhookClientConfig", &d_client },
	{ "conversionReviewVersions", D_STRS, NULL, NULL },
};
static const struct dstruct d_webhook = DSTRUCT("WebhookConversion", d_webhook_f);

static const struct dfield d_conversion_f[] = {
	{ "strategy", D_STR, "v1.ConversionStrategyType", NULL },
	{ "webhook", D_OBJ, "v1.WebhookConversion", &d_webhook },
};
static const struct dstruct d_conversion = DSTRUCT("CustomResourceConversion", d_conversion_f);

static const struct dfield d_spec_f[] = {
	{ "group", D_STR, "string", NULL },
	{ "names", D_OBJ, "v1.CustomResourceDefinitionNames", &d_names },
	{ "scope", D_STR, "v1.ResourceScope", NULL },
	{ "versions", D_OBJS, "[]v1.CustomResourceDefinitionVersion", &d_version },
	{ "conversion", D_OBJ, "v1.CustomResourceConversion", &d_conversion },
	{ "preserveUnknownFields", D_BOOL, "bool", NULL },
};
static const struct dstruct d_spec = DSTRUCT("CustomResourceDefinitionSpec", d_spec_f);

static const struct dfield d_crd_f[] = {
	{ "spec", D_OBJ, "v1.CustomResourceDefinitionSpec", &d_spec },
};
static const struct dstruct d_crd = DSTRUCT("CustomResourceDefinition", d_crd_f);

/* 0, or KC_EBADREQUEST / -E2BIG with the message in 'st'. */
static int
crd_decode(const struct json_object *crd, struct kc_status *st)
{
	struct dstate ds = { .strct = "CustomResourceDefinition" };

	if (jtype(crd) != json_type_object)
		return kc_status_set(st, KC_EBADREQUEST, "CustomResourceDefinition in version "
		    "\"v1\" cannot be handled as a CustomResourceDefinition: json: cannot "
		    "unmarshal %s into Go value of type v1.CustomResourceDefinition",
		    crd == NULL ? "null" : jtype(crd) == json_type_array ? "array" : "value");
	path_reset(&ds.dp, "");
	dstruct_check(&ds, crd, &d_crd);
	if (ds.too_deep)
		return kc_status_set(st, -E2BIG, "%s", ds.msg);
	if (ds.failed)
		return kc_status_set(st, KC_EBADREQUEST, "CustomResourceDefinition in version "
		    "\"v1\" cannot be handled as a CustomResourceDefinition: %s", ds.msg);
	return 0;
}

/*
 * Structural schemas (pkg/apiserver/schema: NewStructural,
 * ValidateStructural), on the JSON schema directly. "Nested" nodes are
 * the schemas under anyOf, allOf, oneOf and not (NestedValueValidation).
 */

enum level {
	LVL_ROOT,
	LVL_ITEM,
	LVL_FIELD,
};

/* NewStructural's first error for 's', or NULL. */
static const char *
structural_init_error(const struct json_object *s, bool nested)
{
	static const char *const lists[] = { "allOf", "anyOf", "oneOf" };
	const struct json_object *v;
	const char *e;

	if (s == NULL || jtype(s) != json_type_object)
		return NULL;
	if (jstr0(s, "id")[0] != '\0')
		return "OpenAPIV3Schema 'id' is not supported";
	if (jstr0(s, "$schema")[0] != '\0')
		return "OpenAPIV3Schema 'schema' is not supported";
	if (jstr0(s, "$ref")[0] != '\0')
		return "OpenAPIV3Schema '$ref' is not supported";
	if (jnkeys(jobj(s, "patternProperties")) > 0)
		return "OpenAPIV3Schema 'patternProperties' is not supported";
	if (jnkeys(jobj(s, "dependencies")) > 0)
		return "OpenAPIV3Schema 'dependencies' is not supported";
	if (jget(s, "additionalItems") != NULL)
		return "OpenAPIV3Schema 'additionalItems' is not supported";
	if (jnkeys(jobj(s, "definitions")) > 0)
		return "OpenAPIV3Schema 'definitions' is not supported";
	for (size_t i = 0; i < KC_ARRAY_SIZE(lists); i++)
		for (size_t j = 0; j < jlen(jarr(s, lists[i])); j++)
			if ((e = structural_init_error(jidx(jarr(s, lists[i]), j), true)) != NULL)
				return e;
	if ((e = structural_init_error(jobj(s, "not"), true)) != NULL)
		return e;
	if ((v = jget(s, "x-kubernetes-preserve-unknown-fields")) != NULL &&
	    jtype(v) == json_type_boolean && !json_object_get_boolean(mut(v)))
		return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or "
		    "undefined";
	if (jlen(jarr(s, "items")) > 0)
		return "OpenAPIV3Schema 'items' must be a schema, but is an array";
	if ((e = structural_init_error(jobj(s, "items"), nested)) != NULL)
		return e;
	if (jobj(s, "properties") != NULL) {
		json_object_object_foreach(mut(jobj(s, "properties")), k, ps) {
			(void)k;
			if ((e = structural_init_error(ps, nested)) != NULL)
				return e;
		}
	}
	return structural_init_error(jobj(s, "additionalProperties"), nested);
}

/* An int-or-string branch: exactly {type: <t>} (other keys zero). */
static bool
is_type_only(const struct json_object *s, const char *t)
{
	if (s == NULL || jtype(s) != json_type_object || !jstr_eq(s, "type", t))
		return false;
	json_object_object_foreach(mut(s), k, v) {
		(void)v;
		if (strcmp(k, "type") != 0 && !jzero(s, k))
			return false;
	}
	return true;
}

static bool
int_or_string_any_of(const struct json_object *s)
{
	const struct json_object *a = jarr(s, "anyOf");

	return jlen(a) == 2 && is_type_only(jidx(a, 0), "integer") &&
	    is_type_only(jidx(a, 1), "string");
}

static bool
int_or_string_all_of(const struct json_object *s)
{
	const struct json_object *a = jarr(s, "allOf");

	return jlen(a) >= 1 && int_or_string_any_of(jidx(a, 0));
}

static void snested(struct cstate *, const struct json_object *, bool, enum level);

/* validateValueValidation: the junctors and the pattern. */
static void
svalue(struct cstate *cs, const struct json_object *s, bool skip_any_of,
    bool skip_first_all_of_any_of, enum level lvl)
{
	static const char *const names[] = { "anyOf", "allOf", "oneOf" };
	const char *pattern = jstr(s, "pattern");

	for (size_t k = 0; k < KC_ARRAY_SIZE(names); k++) {
		const struct json_object *a = jarr(s, names[k]);

		if (k == 0 && skip_any_of)
			continue;
		for (size_t i = 0; i < jlen(a); i++) {
			size_t old = CHILD(cs, names[k]);

			path_index(&cs->p, i);
			snested(cs, jidx(a, i), k == 1 && i == 0 && skip_first_all_of_any_of, lvl);
			path_pop(&cs->p, old);
		}
	}
	if (jobj(s, "not") != NULL) {
		size_t old = CHILD(cs, "not");

		snested(cs, jobj(s, "not"), false, lvl);
		path_pop(&cs->p, old);
	}
	if (pattern != NULL && pattern[0] != '\0') {
		char why[MSG_MAX], detail[2 * MSG_MAX];
		int r = re_run(pattern, NULL, 0, why, sizeof(why));

		if (r == -1) {
			(void)snprintf(detail, sizeof(detail),
			    "must be a valid regular expression, but isn't: %s", why);
			c_invalid_str(cs, "pattern", pattern, detail);
		} else
			crc(cs, r < 0 ? r : 0);
	}
}

/* validateNestedValueValidation. */
static void
snested(struct cstate *cs, const struct json_object *v, bool skip_any_of, enum level lvl)
{
	static const struct {
		const char	*key;
		const char	*detail;
	} forbidden[] = {
		{ "type", "must be empty to be structural" },
		{ "title", "must be empty to be structural" },
		{ "description", "must be empty to be structural" },
		{ "nullable", "must be false to be structural" },
		{ "x-kubernetes-preserve-unknown-fields", "must be false to be structural" },
		{ "x-kubernetes-embedded-resource", "must be false to be structural" },
		{ "x-kubernetes-int-or-string", "must be false to be structural" },
	};
	const struct json_object *props = jobj(v, "properties"), *ap;

	if (v == NULL || jtype(v) != json_type_object)
		return;
	svalue(cs, v, skip_any_of, false, lvl);
	if (jobj(v, "items") != NULL) {
		size_t old = CHILD(cs, "items");

		snested(cs, jobj(v, "items"), false, lvl);
		path_pop(&cs->p, old);
	}
	if (props != NULL) {
		json_object_object_foreach(mut(props), k, ps) {
			size_t old = CHILD(cs, "properties");

			path_key(&cs->p, k);
			snested(cs, ps, false, LVL_FIELD);
			path_pop(&cs->p, old);
		}
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(forbidden); i++)
		if (!jzero(v, forbidden[i].key))
			c_forbidden(cs, forbidden[i].key, forbidden[i].detail);
	ap = jget(v, "additionalProperties");
	if (ap != NULL && !(jtype(ap) == json_type_boolean && !json_object_get_boolean(mut(ap))))
		c_forbidden(cs, "additionalProperties", "must be undefined to be structural");
	if (jget(v, "default") != NULL)
		c_forbidden(cs, "default", "must be undefined to be structural");
	if (jlen(jarr(v, "x-kubernetes-list-map-keys")) > 0)
		c_forbidden(cs, "x-kubernetes-list-map-keys", "must be empty to be structural");
	if (jget(v, "x-kubernetes-list-type") != NULL)
		c_forbidden(cs, "x-kubernetes-list-type", "must be undefined to be structural");
	if (jget(v, "x-kubernetes-map-type") != NULL)
		c_forbidden(cs, "x-kubernetes-map-type", "must be undefined to be structural");
	if (jlen(jarr(v, "x-kubernetes-validations")) > 0)
		c_forbidden(cs, "x-kubernetes-validations", "must be empty to be structural");
	if (jhas(props, "metadata")) {
		size_t old = CHILD(cs, "properties");

		path_key(&cs->p, "metadata");
		crc(cs, fe_forbidden(&cs->out, cs->p.buf,
		    "must not be specified in a nested context"));
		path_pop(&cs->p, old);
	}
}

/* Root metadata may only restrict name and generateName. */
static bool
metadata_only_names(const struct json_object *m)
{
	static const char *const ignored[] = { "type", "default", "externalDocs", "example" };

	json_object_object_foreach(mut(m), k, v) {
		(void)v;
		if (str_in(k, ignored, KC_ARRAY_SIZE(ignored)))
			continue;
		if (strcmp(k, "properties") == 0) {
			const struct json_object *p = jobj(m, "properties");
			int n = jnkeys(p);
			bool name = jhas(p, "name"), gen = jhas(p, "generateName");

			if (p == NULL && jget(m, k) == NULL)
				continue;
			if (!((name && gen && n == 2) || ((name || gen) && n == 1)))
				return false;
			continue;
		}
		if (!jzero(m, k))
			return false;
	}
	return true;
}

static void
sprop_type(struct cstate *cs, const struct json_object *props, const char *name,
    const char *want, const char *detail)
{
	const struct json_object *ps = jobj(props, name);
	size_t old;

	if (ps == NULL || jstr_eq(ps, "type", want))
		return;
	old = CHILD(cs, "properties");
	path_key(&cs->p, name);
	c_invalid_str(cs, "type", jstr0(ps, "type"), detail);
	path_pop(&cs->p, old);
}

/* validateStructuralInvariants. */
static void
sinvariants(struct cstate *cs, const struct json_object *s, enum level lvl)
{
	const struct json_object *props = jobj(s, "properties"), *items = jobj(s, "items");
	const struct json_object *ap = jget(s, "additionalProperties");
	const char *type = jstr0(s, "type");
	bool embedded = jbool(s, "x-kubernetes-embedded-resource");
	bool ios = jbool(s, "x-kubernetes-int-or-string");
	bool preserve = jbool(s, "x-kubernetes-preserve-unknown-fields");

	if (s == NULL || jtype(s) != json_type_object)
		return;
	if (strcmp(type, "array") == 0 && items == NULL)
		c_required(cs, "items", "must be specified");
	if (items != NULL) {
		size_t old = CHILD(cs, "items");

		sinvariants(cs, items, LVL_ITEM);
		path_pop(&cs->p, old);
	}
	if (props != NULL) {
		json_object_object_foreach(mut(props), k, ps) {
			size_t old = CHILD(cs, "properties");

			path_key(&cs->p, k);
			sinvariants(cs, ps, LVL_FIELD);
			path_pop(&cs->p, old);
		}
	}
	if (ap != NULL) {
		if (lvl == LVL_ROOT)
			c_forbidden(cs, "additionalProperties", "must not be used at the root");
		if (jtype(ap) == json_type_object) {
			size_t old = CHILD(cs, "additionalProperties");

			sinvariants(cs, ap, LVL_FIELD);
			path_pop(&cs->p, old);
		}
	}
	if (ios && preserve)
		c_invalid_raw(cs, "x-kubernetes-preserve-unknown-fields", "true",
		    "must be false if x-kubernetes-int-or-string is true");
	if (ios && embedded)
		c_invalid_raw(cs, "x-kubernetes-embedded-resource", "true",
		    "must be false if x-kubernetes-int-or-string is true");
	svalue(cs, s, int_or_string_any_of(s), int_or_string_all_of(s), lvl);
	if (embedded && strcmp(type, "object") != 0) {
		if (type[0] == '\0')
			c_required(cs, "type", "must be object if x-kubernetes-embedded-resource is true");
		else
			c_invalid_str(cs, "type", type,
			    "must be object if x-kubernetes-embedded-resource is true");
	} else if (type[0] == '\0' && !ios && !preserve)
		c_required(cs, "type", lvl == LVL_ROOT ? "must not be empty at the root" :
		    lvl == LVL_ITEM ? "must not be empty for specified array items" :
		    "must not be empty for specified object fields");
	if (embedded && ap != NULL)
		c_forbidden(cs, "additionalProperties",
		    "must not be used if x-kubernetes-embedded-resource is set");
	if (lvl == LVL_ROOT && type[0] != '\0' && strcmp(type, "object") != 0)
		c_invalid_str(cs, "type", type, "must be object at the root");
	if (lvl == LVL_ROOT || embedded) {
		sprop_type(cs, props, "kind", "string", "must be string");
		sprop_type(cs, props, "apiVersion", "string", "must be string");
		sprop_type(cs, props, "metadata", "object", "must be object");
	}
	if (lvl == LVL_ROOT && jobj(props, "metadata") != NULL &&
	    !metadata_only_names(jobj(props, "metadata"))) {
		size_t old = CHILD(cs, "properties");

		path_key(&cs->p, "metadata");
		crc(cs, fe_forbidden(&cs->out, cs->p.buf, "must not specify anything other than "
		    "name and generateName, but metadata is implicitly specified"));
		path_pop(&cs->p, old);
	}
	if (embedded && !preserve && jnkeys(props) == 0)
		c_required(cs, "properties", "must not be empty if x-kubernetes-embedded-resource "
		    "is true without x-kubernetes-preserve-unknown-fields");
}

/* validateStructuralCompleteness: junctors may only restrict specified fields. */
static void scomplete_nested(struct cstate *, const struct json_object *,
	    const struct json_object *, struct path *);

static void
scomplete_vv(struct cstate *cs, const struct json_object *v, const struct json_object *s,
    struct path *vp)
{
	static const char *const names[] = { "allOf", "anyOf", "oneOf" };

	if (jobj(v, "not") != NULL) {
		size_t old = path_child(vp, "not");

		scomplete_nested(cs, jobj(v, "not"), s, vp);
		path_pop(vp, old);
	}
	for (size_t k = 0; k < KC_ARRAY_SIZE(names); k++)
		for (size_t i = 0; i < jlen(jarr(v, names[k])); i++) {
			size_t old = path_child(vp, names[k]);

			path_index(vp, i);
			scomplete_nested(cs, jidx(jarr(v, names[k]), i), s, vp);
			path_pop(vp, old);
		}
}

static void
scomplete_nested(struct cstate *cs, const struct json_object *v, const struct json_object *s,
    struct path *vp)
{
	const struct json_object *props = jobj(v, "properties");
	char detail[PATH_MAX_LEN + 64];

	if (v == NULL || jtype(v) != json_type_object)
		return;
	if (s == NULL) {
		(void)snprintf(detail, sizeof(detail), "because it is defined in %s", vp->buf);
		c_required(cs, NULL, detail);
		return;
	}
	scomplete_vv(cs, v, s, vp);
	if (jobj(v, "items") != NULL) {
		size_t olds = CHILD(cs, "items"), oldv = path_child(vp, "items");

		scomplete_nested(cs, jobj(v, "items"), jobj(s, "items"), vp);
		path_pop(vp, oldv);
		path_pop(&cs->p, olds);
	}
	if (props != NULL) {
		json_object_object_foreach(mut(props), k, pv) {
			size_t olds = CHILD(cs, "properties"), oldv = path_child(vp, "properties");

			path_key(&cs->p, k);
			path_key(vp, k);
			scomplete_nested(cs, pv, jobj(jobj(s, "properties"), k), vp);
			path_pop(vp, oldv);
			path_pop(&cs->p, olds);
		}
	}
}

/*
 * Defaults (schema/defaulting ValidateDefaults): each default must be
 * pruned already and valid for its schema. Defaults under
 * additionalProperties are not checked, as upstream.
 */
static void
sdefaults(struct cstate *cs, const struct json_object *s, bool resource_root)
{
	const struct json_object *props = jobj(s, "properties"), *def = jget(s, "default");
	bool embedded = resource_root || jbool(s, "x-kubernetes-embedded-resource");

	if (s == NULL || jtype(s) != json_type_object || cs->rc != 0)
		return;
	if (def != NULL) {
		struct json_object *pruned = kc_json_copy(def);
		size_t old = CHILD(cs, "default");
		size_t mark;

		if (pruned == NULL) {
			crc(cs, -ENOMEM);
			path_pop(&cs->p, old);
			return;
		}
		{
			struct pstate ps = { 0 };

			path_reset(&ps.p, "");
			pnode(&ps, pruned, s, embedded);
			crc(cs, ps.rc);
		}
		if (cs->rc == 0 && !kc_json_equal(pruned, def)) {
			char val[MSG_MAX];
			struct sb b;

			sb_init(&b, val, sizeof(val));
			go_value(&b, def);
			crc(cs, fe_valued(&cs->out, "Invalid", cs->p.buf, val,
			    "must not have unknown fields"));
		}
		json_object_put(pruned);
		mark = cs->out.n;
		if (cs->rc == 0) {
			struct wstate w = { .out = &cs->out };
			struct elist tmp = { 0 };

			path_reset(&w.p, cs->p.buf);
			if (embedded && jtype(def) == json_type_object)
				wembedded(&w, def);
			wembedded_walk(&w, def, s);
			crc(cs, w.rc);
			if (cs->out.n == mark && cs->rc == 0) {
				crc(cs, validate_all(s, def, cs->p.buf, false, &tmp));
				crc(cs, elist_move(&cs->out, &tmp));
			}
			elist_free(&tmp);
		}
		path_pop(&cs->p, old);
	}
	if (jobj(s, "items") != NULL) {
		size_t old = CHILD(cs, "items");

		sdefaults(cs, jobj(s, "items"), false);
		path_pop(&cs->p, old);
	}
	if (props != NULL) {
		json_object_object_foreach(mut(props), k, ps) {
			size_t old = CHILD(cs, "properties");

			path_key(&cs->p, k);
			sdefaults(cs, ps, false);
			path_pop(&cs->p, old);
		}
	}
}

/*
 * ValidateCustomResourceDefinitionOpenAPISchema: the keywords Kubernetes
 * allows, and the rules of its extensions.
 */
struct ssv {
	bool		 allow_defaults;
	const char	*reason;	/* why defaults are forbidden */
	bool		 inside_meta;
};

static const char *const openapi_types[] = {
	"array", "boolean", "integer", "number", "object", "string",
};

static void
sopenapi_keywords(struct cstate *cs, const struct json_object *s, const struct ssv *v)
{
	const char *type = jstr0(s, "type");

	if (type[0] != '\0' && !str_in(type, openapi_types, KC_ARRAY_SIZE(openapi_types)))
		c_not_supported(cs, "type", type, openapi_types, KC_ARRAY_SIZE(openapi_types));
	if (jget(s, "default") != NULL && !v->allow_defaults) {
		char detail[256];

		(void)snprintf(detail, sizeof(detail), "must not be set%s%s",
		    v->reason != NULL ? " " : "", v->reason != NULL ? v->reason : "");
		c_forbidden(cs, "default", detail);
	}
	if (jstr0(s, "id")[0] != '\0')
		c_forbidden(cs, "id", "id is not supported");
	if (jget(s, "additionalItems") != NULL)
		c_forbidden(cs, "additionalItems", "additionalItems is not supported");
	if (jnkeys(jobj(s, "patternProperties")) > 0)
		c_forbidden(cs, "patternProperties", "patternProperties is not supported");
	if (jnkeys(jobj(s, "definitions")) > 0)
		c_forbidden(cs, "definitions", "definitions is not supported");
	if (jget(s, "dependencies") != NULL)
		c_forbidden(cs, "dependencies", "dependencies is not supported");
	if (jget(s, "$ref") != NULL)
		c_forbidden(cs, "$ref", "$ref is not supported");
	if (strcmp(type, "null") == 0)
		c_forbidden(cs, "type", "type cannot be set to null, use nullable as an alternative");
	if (jlen(jarr(s, "items")) > 0)
		c_forbidden(cs, "items", "items must be a schema object and not an array");
	if (v->inside_meta && jbool(s, "x-kubernetes-embedded-resource"))
		c_forbidden(cs, "x-kubernetes-embedded-resource",
		    "must not be used inside of resource meta");
}

static void
slist_rules(struct cstate *cs, const struct json_object *s)
{
	static const char *const list_types[] = { "atomic", "set", "map" };
	static const char *const map_types[] = { "atomic", "granular" };
	const char *type = jstr0(s, "type"), *lt = jstr(s, "x-kubernetes-list-type");
	const char *mt = jstr(s, "x-kubernetes-map-type");
	const struct json_object *keys = jarr(s, "x-kubernetes-list-map-keys");
	const struct json_object *items = jobj(s, "items"), *v;
	char repr[MSG_MAX];

	if ((v = jget(s, "x-kubernetes-preserve-unknown-fields")) != NULL &&
	    jtype(v) == json_type_boolean && !json_object_get_boolean(mut(v)))
		c_invalid_raw(cs, "x-kubernetes-preserve-unknown-fields", "false",
		    "must be true or undefined");
	if (mt != NULL && strcmp(type, "object") != 0) {
		if (type[0] == '\0')
			c_required(cs, "type", "must be object if x-kubernetes-map-type is specified");
		else
			c_invalid_str(cs, "type", type,
			    "must be object if x-kubernetes-map-type is specified");
	}
	if (mt != NULL && !str_in(mt, map_types, 2))
		c_not_supported(cs, "x-kubernetes-map-type", mt, map_types, 2);
	if (lt != NULL && strcmp(type, "array") != 0) {
		if (type[0] == '\0')
			c_required(cs, "type", "must be array if x-kubernetes-list-type is specified");
		else
			c_invalid_str(cs, "type", type,
			    "must be array if x-kubernetes-list-type is specified");
	} else if (lt != NULL && strcmp(lt, "set") == 0 && items != NULL) {
		const char *it = jstr0(items, "type");
		size_t old = CHILD(cs, "items");

		if (strcmp(it, "array") == 0 && jstr(items, "x-kubernetes-list-type") != NULL &&
		    !jstr_eq(items, "x-kubernetes-list-type", "atomic"))
			c_invalid_str(cs, "x-kubernetes-list-type",
			    jstr(items, "x-kubernetes-list-type"),
			    "must be atomic as item of a list with x-kubernetes-list-type=set");
		else if (strcmp(it, "object") == 0 &&
		    !jstr_eq(items, "x-kubernetes-map-type", "atomic")) {
			const char *ilt = jstr(items, "x-kubernetes-list-type");

			c_invalid_str(cs, "x-kubernetes-map-type", ilt != NULL ? ilt : "null",
			    "must be atomic as item of a list with x-kubernetes-list-type=set");
		}
		path_pop(&cs->p, old);
	}
	if (lt != NULL && !str_in(lt, list_types, 3))
		c_not_supported(cs, "x-kubernetes-list-type", lt, list_types, 3);
	if (jlen(keys) > 0) {
		if (lt == NULL)
			c_required(cs, "x-kubernetes-list-type",
			    "must be map if x-kubernetes-list-map-keys is non-empty");
		else if (strcmp(lt, "map") != 0)
			c_invalid_str(cs, "x-kubernetes-list-type", lt,
			    "must be map if x-kubernetes-list-map-keys is non-empty");
	}
	if (lt != NULL && strcmp(lt, "map") == 0) {
		if (jlen(keys) == 0)
			c_required(cs, "x-kubernetes-list-map-keys",
			    "must not be empty if x-kubernetes-list-type is map");
		if (jget(s, "items") == NULL)
			c_required(cs, "items", "must have a schema if x-kubernetes-list-type is map");
		if (jarr(s, "items") != NULL)
			c_invalid_dump(cs, "items", jget(s, "items"),
			    "must only have a single schema if x-kubernetes-list-type is map");
		if (items != NULL && !jstr_eq(items, "type", "object")) {
			size_t old = CHILD(cs, "items");

			c_invalid_str(cs, "type", jstr0(items, "type"),
			    "must be object if parent array's x-kubernetes-list-type is map");
			path_pop(&cs->p, old);
		}
		if (items != NULL && jstr_eq(items, "type", "object")) {
			strings_repr(repr, sizeof(repr), keys);
			for (size_t i = 0; i < jlen(keys); i++) {
				const char *k = json_object_get_string(mut(jidx(keys, i)));
				const struct json_object *ks = jobj(jobj(items, "properties"), k);

				if (k == NULL)
					continue;
				if (ks != NULL) {
					const char *kt = jstr0(ks, "type");

					if (strcmp(kt, "array") == 0 || strcmp(kt, "object") == 0) {
						size_t old = CHILD(cs, "items");

						CHILD(cs, "properties");
						path_key(&cs->p, k);
						c_invalid_str(cs, "type", jstr0(items, "type"),
						    "must be a scalar type if parent array's "
						    "x-kubernetes-list-type is map");
						path_pop(&cs->p, old);
					}
				} else
					c_invalid_raw(cs, "x-kubernetes-list-map-keys", repr,
					    "entries must all be names of item properties");
				for (size_t j = 0; j < i; j++)
					if (jtype(jidx(keys, j)) == json_type_string &&
					    strcmp(json_object_get_string(mut(jidx(keys, j))), k) == 0) {
						c_invalid_raw(cs, "x-kubernetes-list-map-keys", repr,
						    "must not contain duplicate entries");
						break;
					}
			}
		}
	}
	/* validateMapListKeysMapSet */
	if (items != NULL && lt != NULL && (strcmp(lt, "set") == 0 || strcmp(lt, "map") == 0)) {
		if (jbool(items, "nullable")) {
			char detail[128];
			size_t old = CHILD(cs, "items");

			(void)snprintf(detail, sizeof(detail),
			    "cannot be nullable when x-kubernetes-list-type is %s", lt);
			c_forbidden(cs, "nullable", detail);
			path_pop(&cs->p, old);
		}
		if (strcmp(lt, "map") == 0)
			for (size_t i = 0; i < jlen(keys); i++) {
				const char *k = json_object_get_string(mut(jidx(keys, i)));
				const struct json_object *ks = jobj(jobj(items, "properties"), k);
				const struct json_object *req = jarr(items, "required");
				bool required = false;
				size_t old;

				if (k == NULL || ks == NULL)
					continue;
				for (size_t j = 0; j < jlen(req); j++)
					if (jtype(jidx(req, j)) == json_type_string &&
					    strcmp(json_object_get_string(mut(jidx(req, j))), k) == 0)
						required = true;
				old = CHILD(cs, "items");
				CHILD(cs, "properties");
				path_key(&cs->p, k);
				if (!required && jget(ks, "default") == NULL)
					c_required(cs, "default", "this property is in "
					    "x-kubernetes-list-map-keys, so it must have a default or be "
					    "a required property");
				if (jbool(ks, "nullable"))
					c_forbidden(cs, "nullable", "this property is in "
					    "x-kubernetes-list-map-keys, so it cannot be nullable");
				path_pop(&cs->p, old);
			}
	}
}

/* x-kubernetes-validations: the static checks (CEL itself is not evaluated). */
static void
svalidations(struct cstate *cs, const struct json_object *s)
{
	static const char *const reasons[] = { "FieldValueDuplicate", "FieldValueForbidden",
		"FieldValueInvalid", "FieldValueRequired" };
	const struct json_object *rules = jarr(s, "x-kubernetes-validations");

	for (size_t i = 0; i < jlen(rules); i++) {
		const struct json_object *r = jidx(rules, i);
		const char *rule = jstr0(r, "rule"), *msg = jstr0(r, "message");
		const char *mexpr = jstr0(r, "messageExpression"), *fp = jstr0(r, "fieldPath");
		const char *reason = jstr(r, "reason");
		size_t old = CHILD(cs, "x-kubernetes-validations");

		path_index(&cs->p, i);
		if (blank(rule))
			c_required(cs, "rule", "rule is not specified");
		else if (msg[0] != '\0' && blank(msg))
			c_invalid_str(cs, "message", msg, "message must be non-empty if specified");
		else if (has_newline(msg))
			c_invalid_str(cs, "message", msg, "message must not contain line breaks");
		else if (has_newline(rule) && blank(msg))
			c_required(cs, "message", "message must be specified if rule contains line "
			    "breaks");
		if (mexpr[0] != '\0' && blank(mexpr))
			c_required(cs, "messageExpression",
			    "messageExpression must be non-empty if specified");
		if (reason != NULL && !str_in(reason, reasons, KC_ARRAY_SIZE(reasons)))
			c_not_supported(cs, "reason", reason, reasons, KC_ARRAY_SIZE(reasons));
		if (fp[0] != '\0' && blank(fp))
			c_invalid_str(cs, "fieldPath", fp, "fieldPath must be non-empty if specified");
		if (has_newline(fp))
			c_invalid_str(cs, "fieldPath", fp, "fieldPath must not contain line breaks");
		path_pop(&cs->p, old);
	}
}

static void
sopenapi(struct cstate *cs, const struct json_object *s, const struct ssv *v, bool root)
{
	static const char *const lists[] = { "allOf", "oneOf", "anyOf" };
	static const char *const meta_fields[] = { "metadata", "kind", "apiVersion" };
	const struct json_object *props = jobj(s, "properties"), *ap, *items;
	bool embedded = jbool(s, "x-kubernetes-embedded-resource");

	if (s == NULL || jtype(s) != json_type_object)
		return;
	sopenapi_keywords(cs, s, v);
	if (jbool(s, "uniqueItems"))
		c_forbidden(cs, "uniqueItems", "uniqueItems cannot be set to true since the "
		    "runtime complexity becomes quadratic");
	if ((ap = jget(s, "additionalProperties")) != NULL) {
		struct ssv sub = *v;

		if (jnkeys(props) > 0 &&
		    (jtype(ap) == json_type_object ||
		    (jtype(ap) == json_type_boolean && !json_object_get_boolean(mut(ap)))))
			c_forbidden(cs, "additionalProperties",
			    "additionalProperties and properties are mutual exclusive");
		if (v->inside_meta) {
			sub.allow_defaults = false;
			sub.reason = "inside additionalProperties applying to object metadata";
		}
		if (jtype(ap) == json_type_object) {
			size_t old = CHILD(cs, "additionalProperties");

			sopenapi(cs, ap, &sub, false);
			path_pop(&cs->p, old);
		}
	}
	if (props != NULL) {
		json_object_object_foreach(mut(props), k, ps) {
			struct ssv sub = *v;
			char reason[64];
			size_t old;

			if ((root || embedded) && str_in(k, meta_fields, 3)) {
				sub.inside_meta = true;
				if (root) {
					(void)snprintf(reason, sizeof(reason), "in top-level %s", k);
					sub.allow_defaults = false;
					sub.reason = reason;
				}
			}
			old = CHILD(cs, "properties");
			path_key(&cs->p, k);
			sopenapi(cs, ps, &sub, false);
			path_pop(&cs->p, old);
		}
	}
	if (jobj(s, "not") != NULL) {
		size_t old = CHILD(cs, "not");

		sopenapi(cs, jobj(s, "not"), v, false);
		path_pop(&cs->p, old);
	}
	for (size_t k = 0; k < KC_ARRAY_SIZE(lists); k++)
		for (size_t i = 0; i < jlen(jarr(s, lists[k])); i++) {
			size_t old = CHILD(cs, lists[k]);

			path_index(&cs->p, i);
			sopenapi(cs, jidx(jarr(s, lists[k]), i), v, false);
			path_pop(&cs->p, old);
		}
	if (jobj(s, "definitions") != NULL) {
		json_object_object_foreach(mut(jobj(s, "definitions")), k, ds) {
			size_t old = CHILD(cs, "definitions");

			path_key(&cs->p, k);
			sopenapi(cs, ds, v, false);
			path_pop(&cs->p, old);
		}
	}
	if ((items = jobj(s, "items")) != NULL) {
		size_t old = CHILD(cs, "items");

		sopenapi(cs, items, v, false);
		path_pop(&cs->p, old);
	}
	for (size_t i = 0; i < jlen(jarr(s, "items")); i++) {
		size_t old = CHILD(cs, "items");

		path_index(&cs->p, i);
		sopenapi(cs, jidx(jarr(s, "items"), i), v, false);
		path_pop(&cs->p, old);
	}
	slist_rules(cs, s);
	svalidations(cs, s);
}

/* The fields of JSONSchemaProps in declaration order, for the status check. */
static const struct {
	const char	*key;
	const char	*field;
	bool		 allowed;
} root_fields[] = {
	{ "id", "ID", false }, { "$schema", "Schema", false }, { "$ref", "Ref", false },
	{ "description", "Description", true }, { "type", "Type", true },
	{ "format", "Format", true }, { "title", "Title", true },
	{ "default", "Default", false }, { "maximum", "Maximum", true },
	{ "exclusiveMaximum", "ExclusiveMaximum", true }, { "minimum", "Minimum", true },
	{ "exclusiveMinimum", "ExclusiveMinimum", true }, { "maxLength", "MaxLength", true },
	{ "minLength", "MinLength", true }, { "pattern", "Pattern", true },
	{ "maxItems", "MaxItems", true }, { "minItems", "MinItems", true },
	{ "uniqueItems", "UniqueItems", true }, { "multipleOf", "MultipleOf", true },
	{ "enum", "Enum", false }, { "maxProperties", "MaxProperties", false },
	{ "minProperties", "MinProperties", false }, { "required", "Required", true },
	{ "items", "Items", true }, { "allOf", "AllOf", false }, { "oneOf", "OneOf", false },
	{ "anyOf", "AnyOf", false }, { "not", "Not", false },
	{ "properties", "Properties", true },
	{ "additionalProperties", "AdditionalProperties", false },
	{ "patternProperties", "PatternProperties", false },
	{ "dependencies", "Dependencies", false },
	{ "additionalItems", "AdditionalItems", false },
	{ "definitions", "Definitions", false }, { "externalDocs", "ExternalDocs", true },
	{ "example", "Example", true }, { "nullable", "Nullable", false },
	{ "x-kubernetes-preserve-unknown-fields", "XPreserveUnknownFields", true },
	{ "x-kubernetes-embedded-resource", "XEmbeddedResource", false },
	{ "x-kubernetes-int-or-string", "XIntOrString", false },
	{ "x-kubernetes-list-map-keys", "XListMapKeys", false },
	{ "x-kubernetes-list-type", "XListType", false },
	{ "x-kubernetes-map-type", "XMapType", false },
	{ "x-kubernetes-validations", "XValidations", true },
};

static void
sstatus_root(struct cstate *cs, const struct json_object *schema)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(root_fields); i++) {
		const char *key = root_fields[i].key;
		char detail[1024];
		struct sb b;

		if (jzero(schema, key))
			continue;
		if (strcmp(key, "type") == 0) {
			if (!jstr_eq(schema, "type", "object")) {
				c_invalid_str(cs, "openAPIV3Schema.type", jstr0(schema, "type"),
				    "only \"object\" is allowed as the type at the root of the "
				    "schema if the status subresource is enabled");
				return;
			}
			continue;
		}
		if (root_fields[i].allowed)
			continue;
		sb_init(&b, detail, sizeof(detail));
		sb_puts(&b, "only [");
		for (size_t j = 0, n = 0; j < KC_ARRAY_SIZE(root_fields); j++)
			if (root_fields[j].allowed)
				sb_printf(&b, "%s%s", n++ > 0 ? " " : "", root_fields[j].field);
		sb_puts(&b, "] fields are allowed at the root of the schema if the status "
		    "subresource is enabled");
		c_invalid_dump(cs, "openAPIV3Schema", schema, detail);
		return;
	}
}

/* validateCustomResourceDefinitionValidation at cs->p ("...schema"). */
static void
cvalidation(struct cstate *cs, const struct json_object *cv, bool status_enabled)
{
	const struct json_object *schema = jobj(cv, "openAPIV3Schema");
	size_t start = cs->out.n;
	const char *init;
	struct ssv v = { .allow_defaults = true };

	if (cv == NULL || schema == NULL)
		return;
	if (status_enabled)
		sstatus_root(cs, schema);
	if (jbool(schema, "nullable"))
		c_forbidden(cs, "openAPIV3Schema.nullable", "nullable cannot be true at the root");
	init = structural_init_error(schema, false);
	if (init == NULL) {
		size_t old = CHILD(cs, "openAPIV3Schema"), mark = cs->out.n;
		struct path vp;

		sinvariants(cs, schema, LVL_ROOT);
		path_reset(&vp, cs->p.buf);
		scomplete_vv(cs, schema, schema, &vp);
		elist_sort_from(&cs->out, mark);
		if (cs->out.n == mark)
			sdefaults(cs, schema, true);
		path_pop(&cs->p, old);
	}
	{
		size_t old = CHILD(cs, "openAPIV3Schema");

		sopenapi(cs, schema, &v, true);
		path_pop(&cs->p, old);
	}
	if (cs->out.n == start && init != NULL) {
		size_t old = CHILD(cs, "openAPIV3Schema");

		crc(cs, fe_valued(&cs->out, "Invalid", cs->p.buf, "\"\"", init));
		path_pop(&cs->p, old);
	}
}

/* validateSimpleJSONPath: the first character must be '.'. */
static bool
simple_json_path(struct cstate *cs, const char *child, const char *s)
{
	if (s[0] == '\0') {
		c_invalid_str(cs, child, s, "must not be empty");
		return false;
	}
	if (s[0] != '.') {
		c_invalid_str(cs, child, s, "must be a simple json path starting with .");
		return false;
	}
	return true;
}

static bool
has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void
csubresources(struct cstate *cs, const struct json_object *sub)
{
	const struct json_object *scale = jobj(sub, "scale");
	const char *p, *sel;

	if (scale == NULL)
		return;
	p = jstr0(scale, "specReplicasPath");
	if (p[0] == '\0')
		c_required(cs, "scale.specReplicasPath", NULL);
	else if (simple_json_path(cs, "scale.specReplicasPath", p) && !has_prefix(p, ".spec."))
		c_invalid_str(cs, "scale.specReplicasPath", p, "should be a json path under .spec");
	p = jstr0(scale, "statusReplicasPath");
	if (p[0] == '\0')
		c_required(cs, "scale.statusReplicasPath", NULL);
	else if (simple_json_path(cs, "scale.statusReplicasPath", p) &&
	    !has_prefix(p, ".status."))
		c_invalid_str(cs, "scale.statusReplicasPath", p,
		    "should be a json path under .status");
	sel = jstr0(scale, "labelSelectorPath");
	if (sel[0] != '\0' && simple_json_path(cs, "scale.labelSelectorPath", sel) &&
	    !has_prefix(sel, ".spec.") && !has_prefix(sel, ".status."))
		c_invalid_str(cs, "scale.labelSelectorPath", sel,
		    "should be a json path under either .spec or .status");
}

static void
ccolumn(struct cstate *cs, const struct json_object *col)
{
	static const char *const types[] = { "boolean", "date", "integer", "number", "string" };
	static const char *const formats_ok[] = { "byte", "date", "date-time", "double",
		"float", "int32", "int64", "password" };
	const char *type = jstr0(col, "type"), *format = jstr0(col, "format");
	const char *jp = jstr0(col, "jsonPath");

	if (jstr0(col, "name")[0] == '\0')
		c_required(cs, "name", NULL);
	if (type[0] == '\0')
		c_required(cs, "type", "must be one of boolean,date,integer,number,string");
	else if (!str_in(type, types, KC_ARRAY_SIZE(types)))
		c_invalid_str(cs, "type", type, "must be one of boolean,date,integer,number,string");
	if (format[0] != '\0' && !str_in(format, formats_ok, KC_ARRAY_SIZE(formats_ok)))
		c_invalid_str(cs, "format", format,
		    "must be one of byte,date,date-time,double,float,int32,int64,password");
	if (jp[0] == '\0')
		c_required(cs, "JSONPath", NULL);
	else
		(void)simple_json_path(cs, "JSONPath", jp);
}

static void
ccolumns(struct cstate *cs, const struct json_object *cols, const char *child)
{
	for (size_t i = 0; i < jlen(cols); i++) {
		size_t old = CHILD(cs, child);

		path_index(&cs->p, i);
		ccolumn(cs, jidx(cols, i));
		path_pop(&cs->p, old);
	}
}

static void
cdeprecation(struct cstate *cs, const struct json_object *ver)
{
	const char *w = jstr(ver, "deprecationWarning");
	size_t n;

	if (w == NULL)
		return;
	if (!jbool(ver, "deprecated")) {
		c_invalid_str(cs, "deprecationWarning", w, "can only be set for deprecated versions");
		return;
	}
	n = strlen(w);
	if (n > 256)
		c_invalid_str(cs, "deprecationWarning", w, "must be <= 256 characters long");
	if (n == 0)
		c_invalid_str(cs, "deprecationWarning", w, "must not be an empty string");
	for (size_t i = 0; i < n;) {
		uint32_t c;
		size_t l = kc_utf8_decode(w + i, n - i, &c);
		char detail[160];

		if (l == 0) {
			i++;
			continue;
		}
		if (!rune_printable(c) && c != ' ') {
			(void)snprintf(detail, sizeof(detail), "must only contain printable UTF-8 "
			    "characters; non-printable character found at index %zu", i);
			c_invalid_str(cs, "deprecationWarning", w, detail);
			break;
		}
		i += l;
	}
	for (size_t i = 0; i < n;) {
		uint32_t c;
		size_t l = kc_utf8_decode(w + i, n - i, &c);

		if (l == 0) {
			c_invalid_str(cs, "deprecationWarning", w,
			    "must only contain printable UTF-8 characters");
			break;
		}
		i += l;
	}
}

/* webhook.ValidateWebhookURL(path, url, forceHttps). */
static void
curl_check(struct cstate *cs, const char *url)
{
	static const char form[] = "; desired format: https://host[/path]";
	char scheme[64] = "", host[512] = "", user[512] = "", frag[512] = "", query[512] = "";
	const char *p = url, *colon = NULL;
	char detail[256];
	bool has_user = false;

	for (const char *q = url; *q != '\0' && *q != '/' && *q != '?' && *q != '#'; q++)
		if (*q == ':') {
			colon = q;
			break;
		}
	if (colon != NULL && colon > url && ((url[0] >= 'a' && url[0] <= 'z') ||
	    (url[0] >= 'A' && url[0] <= 'Z'))) {
		bool ok = true;

		for (const char *q = url; q < colon; q++)
			if (!is_alnum(*q) && *q != '+' && *q != '-' && *q != '.')
				ok = false;
		if (ok && (size_t)(colon - url) < sizeof(scheme)) {
			memcpy(scheme, url, (size_t)(colon - url));
			scheme[colon - url] = '\0';
			for (char *q = scheme; *q != '\0'; q++)
				if (*q >= 'A' && *q <= 'Z')
					*q = (char)(*q | 0x20);
			p = colon + 1;
		}
	} else if (colon != NULL && colon == url) {
		(void)snprintf(detail, sizeof(detail), "url must be a valid URL: parse \"%s\": "
		    "missing protocol scheme%s", url, form);
		c_required(cs, "url", detail);
		return;
	}
	{
		const char *hash = strchr(p, '#'), *qm;

		if (hash != NULL)
			(void)kc_strlcpy(frag, hash + 1, sizeof(frag));
		qm = strchr(p, '?');
		if (qm != NULL && (hash == NULL || qm < hash)) {
			size_t l = (size_t)((hash != NULL ? hash : qm + strlen(qm)) - qm - 1);

			if (l >= sizeof(query))
				l = sizeof(query) - 1;
			memcpy(query, qm + 1, l);
			query[l] = '\0';
		}
	}
	if (p[0] == '/' && p[1] == '/') {
		const char *a = p + 2, *end = a, *at = NULL;
		size_t l;

		while (*end != '\0' && *end != '/' && *end != '?' && *end != '#')
			end++;
		for (const char *q = a; q < end; q++)
			if (*q == '@')
				at = q;
		if (at != NULL) {
			has_user = true;
			l = KC_MIN((size_t)(at - a), sizeof(user) - 1);
			memcpy(user, a, l);
			user[l] = '\0';
			a = at + 1;
		}
		l = KC_MIN((size_t)(end - a), sizeof(host) - 1);
		memcpy(host, a, l);
		host[l] = '\0';
	}
	if (strcmp(scheme, "https") != 0) {
		(void)snprintf(detail, sizeof(detail), "'https' is the only allowed URL scheme%s",
		    form);
		c_invalid_str(cs, "url", scheme, detail);
	}
	if (host[0] == '\0') {
		(void)snprintf(detail, sizeof(detail), "host must be specified%s", form);
		c_invalid_str(cs, "url", host, detail);
	}
	if (has_user)
		c_invalid_str(cs, "url", user, "user information is not permitted in the URL");
	if (frag[0] != '\0')
		c_invalid_str(cs, "url", frag, "fragments are not permitted in the URL");
	if (query[0] != '\0')
		c_invalid_str(cs, "url", query, "query parameters are not permitted in the URL");
}

/* webhook.ValidateWebhookService. */
static void
cservice(struct cstate *cs, const struct json_object *svc)
{
	const char *path = jstr(svc, "path");
	const struct json_object *port = jget(svc, "port");
	int64_t pn = port != NULL && jtype(port) == json_type_int ? jint(port) : 443;

	if (jstr0(svc, "name")[0] == '\0')
		c_required(cs, "name", "service name is required");
	if (jstr0(svc, "namespace")[0] == '\0')
		c_required(cs, "namespace", "service namespace is required");
	if (pn < 1 || pn > 65535) {
		char val[32];

		(void)snprintf(val, sizeof(val), "%lld", (long long)pn);
		c_invalid_raw(cs, "port", val,
		    "port is not valid: must be between 1 and 65535, inclusive");
	}
	if (path == NULL || path[0] == '\0' || strcmp(path, "/") == 0)
		return;
	if (strcmp(path, "//") == 0) {
		c_invalid_str(cs, "path", path, "segment[0] may not be empty");
		return;
	}
	if (path[0] != '/')
		c_invalid_str(cs, "path", path, "must start with a '/'");
	{
		char check[1024];
		size_t l = kc_strlcpy(check, path + 1, sizeof(check));
		size_t seg = 0;
		char *p = check;

		if (l > 0 && l < sizeof(check) && check[l - 1] == '/')
			check[l - 1] = '\0';
		for (;;) {
			char *slash = strchr(p, '/');
			char detail[2 * MSG_MAX], msgs[2][MSG_MAX];
			size_t m;

			if (slash != NULL)
				*slash = '\0';
			if (p[0] == '\0') {
				(void)snprintf(detail, sizeof(detail), "segment[%zu] may not be empty",
				    seg);
				c_invalid_str(cs, "path", path, detail);
			} else {
				m = dns_msgs(NAME_DNS1123_SUBDOMAIN, p, msgs);
				for (size_t i = 0; i < m; i++) {
					(void)snprintf(detail, sizeof(detail), "segment[%zu]: %s", seg,
					    msgs[i]);
					c_invalid_str(cs, "path", path, detail);
				}
			}
			if (slash == NULL)
				break;
			p = slash + 1;
			seg++;
		}
	}
}

static void
cconversion(struct cstate *cs, const struct json_object *conv, bool preserve)
{
	static const char *const strategies[] = { "None", "Webhook" };
	const char *strategy;
	const struct json_object *webhook, *cc, *crv;

	if (conv == NULL)
		return;
	strategy = jstr0(conv, "strategy");
	webhook = jobj(conv, "webhook");
	cc = jobj(webhook, "clientConfig");
	crv = jarr(webhook, "conversionReviewVersions");
	if (strcmp(strategy, "None") != 0 && preserve)
		c_invalid_str(cs, "strategy", strategy,
		    "must be None if spec.preserveUnknownFields is true");
	if (strategy[0] == '\0')
		c_required(cs, "strategy", NULL);
	else if (!str_in(strategy, strategies, 2))
		c_not_supported(cs, "strategy", strategy, strategies, 2);
	if (strcmp(strategy, "Webhook") == 0) {
		if (cc == NULL)
			c_required(cs, "webhookClientConfig", "required when strategy is set to "
			    "Webhook");
		else {
			bool has_url = jstr(cc, "url") != NULL;
			const struct json_object *svc = jobj(cc, "service");

			if (has_url == (svc != NULL))
				c_required(cs, "webhookClientConfig",
				    "exactly one of url or service is required");
			else if (has_url) {
				size_t old = CHILD(cs, "webhookClientConfig");

				curl_check(cs, jstr(cc, "url"));
				path_pop(&cs->p, old);
			} else {
				size_t old = CHILD(cs, "webhookClientConfig");

				CHILD(cs, "service");
				cservice(cs, svc);
				path_pop(&cs->p, old);
			}
		}
		if (jlen(crv) == 0)
			c_required(cs, "conversionReviewVersions", NULL);
		else {
			bool accepted = false;
			char repr[MSG_MAX];

			for (size_t i = 0; i < jlen(crv); i++) {
				const char *v = json_object_get_string(mut(jidx(crv, i)));
				char msgs[2][MSG_MAX];
				bool dup = false;
				size_t old, m;

				if (v == NULL)
					v = "";
				for (size_t j = 0; j < i; j++)
					if (strcmp(json_object_get_string(mut(jidx(crv, j))) != NULL ?
					    json_object_get_string(mut(jidx(crv, j))) : "", v) == 0)
						dup = true;
				old = CHILD(cs, "conversionReviewVersions");
				path_index(&cs->p, i);
				if (dup)
					c_invalid_str(cs, NULL, v, "duplicate version");
				else {
					m = dns_msgs(NAME_DNS1035_LABEL, v, msgs);
					for (size_t k = 0; k < m; k++)
						c_invalid_str(cs, NULL, v, msgs[k]);
				}
				path_pop(&cs->p, old);
				if (!dup && (strcmp(v, "v1") == 0 || strcmp(v, "v1beta1") == 0))
					accepted = true;
			}
			if (!accepted) {
				strings_repr(repr, sizeof(repr), crv);
				c_invalid_raw(cs, "conversionReviewVersions", repr,
				    "must include at least one of v1, v1beta1");
			}
		}
	} else {
		if (cc != NULL)
			c_forbidden(cs, "webhookClientConfig",
			    "should not be set when strategy is not set to Webhook");
		if (jlen(crv) > 0)
			c_forbidden(cs, "conversionReviewVersions",
			    "should not be set when strategy is not set to Webhook");
	}
}

static void
cnames(struct cstate *cs, const struct json_object *names)
{
	static const char *const lower_keys[] = { "plural", "singular" };
	static const char *const mixed_keys[] = { "kind", "listKind" };
	static const char *const lists[] = { "shortNames", "categories" };
	const char *kind = jstr0(names, "kind"), *list_kind = jstr0(names, "listKind");
	char joined[2 * MSG_MAX];
	size_t old = CHILD(cs, "names");

	for (size_t i = 0; i < 2; i++) {
		const char *v = jstr0(names, lower_keys[i]);

		if (v[0] != '\0' && dns_joined(NAME_DNS1035_LABEL, v, "", joined, sizeof(joined)))
			c_invalid_str(cs, lower_keys[i], v, joined);
	}
	for (size_t i = 0; i < 2; i++) {
		const char *v = jstr0(names, mixed_keys[i]);
		char lower[512];
		size_t k;

		for (k = 0; k < sizeof(lower) - 1 && v[k] != '\0'; k++)
			lower[k] = (v[k] >= 'A' && v[k] <= 'Z') ? (char)(v[k] | 0x20) : v[k];
		lower[k] = '\0';
		if (v[0] != '\0' && dns_joined(NAME_DNS1035_LABEL, lower,
		    "may have mixed case, but should otherwise match: ", joined, sizeof(joined)))
			c_invalid_str(cs, mixed_keys[i], v, joined);
		if (i == 0) {
			const struct json_object *sn = jarr(names, "shortNames");

			for (size_t j = 0; j < jlen(sn); j++) {
				const char *s = json_object_get_string(mut(jidx(sn, j)));
				size_t o;

				if (s == NULL || !dns_joined(NAME_DNS1035_LABEL, s, "", joined,
				    sizeof(joined)))
					continue;
				o = CHILD(cs, lists[0]);
				path_index(&cs->p, j);
				c_invalid_str(cs, NULL, s, joined);
				path_pop(&cs->p, o);
			}
		}
	}
	if (kind[0] != '\0' && strcmp(kind, list_kind) == 0)
		c_invalid_str(cs, "listKind", list_kind, "kind and listKind may not be the same");
	{
		const struct json_object *cat = jarr(names, "categories");

		for (size_t j = 0; j < jlen(cat); j++) {
			const char *s = json_object_get_string(mut(jidx(cat, j)));
			size_t o;

			if (s == NULL || !dns_joined(NAME_DNS1035_LABEL, s, "", joined,
			    sizeof(joined)))
				continue;
			o = CHILD(cs, lists[1]);
			path_index(&cs->p, j);
			c_invalid_str(cs, NULL, s, joined);
			path_pop(&cs->p, o);
		}
	}
	path_pop(&cs->p, old);
}

/* Whether any schema in the spec has a default. */
static bool
schema_has_default(const struct json_object *s, unsigned depth)
{
	static const char *const lists[] = { "allOf", "anyOf", "oneOf" };

	if (s == NULL || jtype(s) != json_type_object || depth > SCHEMA_DEPTH_MAX)
		return false;
	if (jget(s, "default") != NULL)
		return true;
	if (schema_has_default(jobj(s, "items"), depth + 1) ||
	    schema_has_default(jobj(s, "not"), depth + 1) ||
	    schema_has_default(jobj(s, "additionalProperties"), depth + 1))
		return true;
	for (size_t k = 0; k < KC_ARRAY_SIZE(lists); k++)
		for (size_t i = 0; i < jlen(jarr(s, lists[k])); i++)
			if (schema_has_default(jidx(jarr(s, lists[k]), i), depth + 1))
				return true;
	if (jobj(s, "properties") != NULL) {
		json_object_object_foreach(mut(jobj(s, "properties")), k, ps) {
			(void)k;
			if (schema_has_default(ps, depth + 1))
				return true;
		}
	}
	return false;
}

/* apiequality.Semantic.DeepEqual of two optional members (nil == empty list). */
static bool
member_equal(const struct json_object *a, const struct json_object *b, bool list)
{
	if (list) {
		if (jlen(a) == 0 && jlen(b) == 0)
			return true;
	}
	if (a == NULL || b == NULL)
		return a == b;
	return kc_json_equal(a, b);
}

static bool
versions_identical(const struct json_object *versions, const char *key, bool list)
{
	const struct json_object *first = jget(jidx(versions, 0), key);

	for (size_t i = 1; i < jlen(versions); i++)
		if (!member_equal(first, jget(jidx(versions, i), key), list))
			return false;
	return jlen(versions) > 0;
}

static bool
status_enabled(const struct json_object *sub)
{
	return jobj(sub, "status") != NULL;
}

/* validateCustomResourceDefinitionSpec on the internal form of a v1 spec. */
static void
cspec(struct cstate *cs, const struct json_object *spec)
{
	static const char *const scopes[] = { "Cluster", "Namespaced" };
	const struct json_object *versions = jarr(spec, "versions"), *names = jobj(spec, "names");
	const char *group = jstr0(spec, "group"), *scope = jstr0(spec, "scope");
	bool hoist_schema = versions_identical(versions, "schema", false);
	bool hoist_sub = versions_identical(versions, "subresources", false);
	bool hoist_cols = versions_identical(versions, "additionalPrinterColumns", true);
	const struct json_object *top_val = hoist_schema ? jobj(jidx(versions, 0), "schema") : NULL;
	const struct json_object *top_sub = hoist_sub ?
	    jobj(jidx(versions, 0), "subresources") : NULL;
	const struct json_object *top_cols = hoist_cols ?
	    jarr(jidx(versions, 0), "additionalPrinterColumns") : NULL;
	bool preserve = jbool(spec, "preserveUnknownFields"), any_status = status_enabled(top_sub);
	size_t nv = jlen(versions), storage = 0;
	bool unique = true, has_defaults = false;
	char joined[2 * MSG_MAX];
	size_t old = CHILD(cs, "spec");

	if (group[0] == '\0')
		c_required(cs, "group", NULL);
	else if (dns_joined(NAME_DNS1123_SUBDOMAIN, group, "", joined, sizeof(joined)))
		c_invalid_str(cs, "group", group, joined);
	else if (strchr(group, '.') == NULL)
		c_invalid_str(cs, "group", group, "should be a domain with at least one dot");
	if (scope[0] == '\0')
		c_required(cs, "scope", NULL);
	else if (!str_in(scope, scopes, 2))
		c_not_supported(cs, "scope", scope, scopes, 2);
	if (top_val == NULL || jobj(top_val, "openAPIV3Schema") == NULL)
		for (size_t i = 0; i < nv; i++) {
			const struct json_object *ver = jidx(versions, i);
			size_t o;

			if (!hoist_schema && jobj(jobj(ver, "schema"), "openAPIV3Schema") != NULL)
				continue;
			o = CHILD(cs, "versions");
			path_index(&cs->p, i);
			c_required(cs, "schema.openAPIV3Schema", "schemas are required");
			path_pop(&cs->p, o);
		}
	for (size_t i = 0; i < nv; i++)
		has_defaults |= schema_has_default(
		    jobj(jobj(jidx(versions, i), "schema"), "openAPIV3Schema"), 0);
	if (has_defaults && preserve)
		c_invalid_raw(cs, "preserveUnknownFields", "true",
		    "must be false in order to use defaults in the schema");
	for (size_t i = 0; i < nv; i++)
		any_status |= !hoist_sub && status_enabled(jobj(jidx(versions, i), "subresources"));
	for (size_t i = 0; i < nv && cs->rc == 0; i++) {
		const struct json_object *ver = jidx(versions, i);
		const char *name = jstr0(ver, "name");
		size_t o = CHILD(cs, "versions");

		path_index(&cs->p, i);
		if (jbool(ver, "storage"))
			storage++;
		for (size_t j = 0; j < i; j++)
			if (strcmp(jstr0(jidx(versions, j), "name"), name) == 0)
				unique = false;
		if (dns_joined(NAME_DNS1035_LABEL, name, "", joined, sizeof(joined)))
			c_invalid_str(cs, "name", name, joined);
		cdeprecation(cs, ver);
		if (!hoist_schema) {
			size_t o2 = CHILD(cs, "schema");

			cvalidation(cs, jobj(ver, "schema"), status_enabled(hoist_sub ? top_sub :
			    jobj(ver, "subresources")));
			path_pop(&cs->p, o2);
		}
		if (!hoist_sub) {
			size_t o2 = CHILD(cs, "subresources");

			csubresources(cs, jobj(ver, "subresources"));
			path_pop(&cs->p, o2);
		}
		if (!hoist_cols)
			ccolumns(cs, jarr(ver, "additionalPrinterColumns"), "additionalPrinterColumns");
		path_pop(&cs->p, o);
	}
	if (!unique)
		c_invalid_dump(cs, "versions", versions, "must contain unique version names");
	if (storage != 1) {
		if (nv == 0)
			c_invalid_raw(cs, "versions", versions == NULL ?
			    "[]apiextensions.CustomResourceDefinitionVersion(nil)" :
			    "[]apiextensions.CustomResourceDefinitionVersion{}",
			    "must have exactly one version marked as storage version");
		else
			c_invalid_dump(cs, "versions", versions,
			    "must have exactly one version marked as storage version");
	}
	if (nv > 0 && jstr0(jidx(versions, 0), "name")[0] != '\0' &&
	    dns_joined(NAME_DNS1035_LABEL, jstr0(jidx(versions, 0), "name"), "", joined,
	    sizeof(joined)))
		c_invalid_str(cs, "version", jstr0(jidx(versions, 0), "name"), joined);
	if (jstr0(names, "plural")[0] == '\0')
		c_required(cs, "names.plural", NULL);
	if (jstr0(names, "singular")[0] == '\0')
		c_required(cs, "names.singular", NULL);
	if (jstr0(names, "kind")[0] == '\0')
		c_required(cs, "names.kind", NULL);
	if (jstr0(names, "listKind")[0] == '\0')
		c_required(cs, "names.listKind", NULL);
	cnames(cs, names);
	if (top_val != NULL && cs->rc == 0) {
		size_t o = CHILD(cs, "validation");

		cvalidation(cs, top_val, any_status);
		path_pop(&cs->p, o);
	}
	if (top_sub != NULL) {
		size_t o = CHILD(cs, "subresources");

		csubresources(cs, top_sub);
		path_pop(&cs->p, o);
	}
	ccolumns(cs, top_cols, "additionalPrinterColumns");
	{
		size_t o = CHILD(cs, "conversion");

		cconversion(cs, jobj(spec, "conversion"), preserve);
		path_pop(&cs->p, o);
	}
	path_pop(&cs->p, old);
}

/* apihelpers.GetAPIApprovalState: 0 approved or bypassed, 1 missing, 2 invalid. */
static int
approval_state(const struct json_object *crd)
{
	const char *a = jstr0(jobj(jobj(crd, "metadata"), "annotations"),
	    "api-approved.kubernetes.io");

	if (a[0] == '\0')
		return 1;
	if (has_prefix(a, "unapproved"))
		return 0;
	return fmt_uri(a, strlen(a)) ? 0 : 2;
}

static bool
protected_group(const char *g)
{
	size_t n = strlen(g);

	return strcmp(g, "k8s.io") == 0 || strcmp(g, "kubernetes.io") == 0 ||
	    (n > 7 && strcmp(g + n - 7, ".k8s.io") == 0) ||
	    (n > 14 && strcmp(g + n - 14, ".kubernetes.io") == 0);
}

static void
capproval(struct cstate *cs, const struct json_object *crd, const struct json_object *old)
{
	static const char field[] = "metadata.annotations[api-approved.kubernetes.io]";
	int state;

	if (!protected_group(jstr0(jobj(crd, "spec"), "group")))
		return;
	state = approval_state(crd);
	if (old != NULL && approval_state(old) == state)
		return;
	if (state == 1)
		crc(cs, fe_required(&cs->out, field, "protected groups must have approval "
		    "annotation \"api-approved.kubernetes.io\", see "
		    "https://github.com/kubernetes/enhancements/pull/1111"));
	else if (state == 2)
		crc(cs, fe_invalid_str(&cs->out, field, jstr0(jobj(jobj(crd, "metadata"),
		    "annotations"), "api-approved.kubernetes.io"), "protected groups must have "
		    "approval annotation \"api-approved.kubernetes.io\" with either a URL or a "
		    "reason starting with \"unapproved\", see "
		    "https://github.com/kubernetes/enhancements/pull/1111"));
}

static bool
established(const struct json_object *crd)
{
	const struct json_object *conds = jarr(jobj(crd, "status"), "conditions");

	for (size_t i = 0; i < jlen(conds); i++)
		if (jstr_eq(jidx(conds, i), "type", "Established") &&
		    jstr_eq(jidx(conds, i), "status", "True"))
			return true;
	return false;
}

static void
cimmutable(struct cstate *cs, const char *field, const char *now, const char *was)
{
	if (strcmp(now, was) != 0)
		crc(cs, fe_invalid_str(&cs->out, field, now, "field is immutable"));
}

int
schema_crd_validate(const struct json_object *crd, const struct json_object *old,
    struct schema_errs *errs, struct kc_status *st)
{
	const struct json_object *meta, *spec, *ospec;
	struct cstate cs = { 0 };
	const char *name, *plural, *group;
	int r;

	if ((r = crd_decode(crd, st)) != 0)
		return r;
	meta = jobj(crd, "metadata");
	spec = jobj(crd, "spec");
	name = jstr0(meta, "name");
	plural = jstr0(jobj(spec, "names"), "plural");
	group = jstr0(spec, "group");
	path_reset(&cs.p, "");
	if (name[0] == '\0')
		crc(&cs, fe_required(&cs.out, "metadata.name", "name or generateName is required"));
	else {
		char msgs[2][MSG_MAX], want[1024];
		size_t n = dns_msgs(NAME_DNS1123_SUBDOMAIN, name, msgs);

		for (size_t i = 0; i < n; i++)
			crc(&cs, fe_invalid_str(&cs.out, "metadata.name", name, msgs[i]));
		(void)snprintf(want, sizeof(want), "%s.%s", plural, group);
		if (strcmp(name, want) != 0)
			crc(&cs, fe_invalid_str(&cs.out, "metadata.name", name,
			    "must be spec.names.plural+\".\"+spec.group"));
	}
	cspec(&cs, spec);
	if (old != NULL && (ospec = jobj(old, "spec")) != NULL && cs.rc == 0) {
		if (established(old)) {
			cimmutable(&cs, "spec.scope", jstr0(spec, "scope"), jstr0(ospec, "scope"));
			cimmutable(&cs, "spec.names.kind", jstr0(jobj(spec, "names"), "kind"),
			    jstr0(jobj(ospec, "names"), "kind"));
		}
		cimmutable(&cs, "spec.group", group, jstr0(ospec, "group"));
		cimmutable(&cs, "spec.names.plural", plural, jstr0(jobj(ospec, "names"), "plural"));
	}
	capproval(&cs, crd, old);
	if (jbool(spec, "preserveUnknownFields") &&
	    !(old != NULL && jbool(jobj(old, "spec"), "preserveUnknownFields")))
		crc(&cs, fe_valued(&cs.out, "Invalid", "spec.preserveUnknownFields", "true",
		    "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
		    "spec.versions[*].schema instead"));
	if (cs.rc != 0) {
		elist_free(&cs.out);
		return cs.rc;
	}
	elist_export(&cs.out, errs);
	r = cs.out.n > 0 || cs.out.dropped > 0 ? KC_EINVALID : 0;
	elist_free(&cs.out);
	return r;
}

int
schema_crd_default(struct json_object *crd)
{
	struct json_object *spec = json_object_object_get(crd, "spec"), *conv, *svc;

	if (spec == NULL || jtype(spec) != json_type_object)
		return 0;
	if (!json_object_object_get_ex(spec, "conversion", &conv) || conv == NULL) {
		if (kc_json_put(spec, "conversion", json_object_new_object()) < 0)
			return -ENOMEM;
		conv = json_object_object_get(spec, "conversion");
		if (kc_json_set_str(conv, "strategy", "None") < 0)
			return -ENOMEM;
	}
	if (jtype(conv) != json_type_object)
		return 0;
	svc = json_object_object_get(json_object_object_get(json_object_object_get(conv,
	    "webhook"), "clientConfig"), "service");
	if (svc != NULL && jtype(svc) == json_type_object && jget(svc, "port") == NULL &&
	    kc_json_set_int(svc, "port", 443) < 0)
		return -ENOMEM;
	return 0;
}

const struct json_object *
schema_crd_version(const struct json_object *crd, const char *version)
{
	const struct json_object *versions = jarr(jobj(crd, "spec"), "versions");

	for (size_t i = 0; i < jlen(versions); i++)
		if (version != NULL && jstr_eq(jidx(versions, i), "name", version))
			return jidx(versions, i);
	return NULL;
}

const struct json_object *
schema_crd_version_schema(const struct json_object *crd, const char *version)
{
	return jobj(jobj(schema_crd_version(crd, version), "schema"), "openAPIV3Schema");
}

const char *
schema_crd_storage_version(const struct json_object *crd)
{
	const struct json_object *versions = jarr(jobj(crd, "spec"), "versions");

	for (size_t i = 0; i < jlen(versions); i++)
		if (jbool(jidx(versions, i), "storage"))
			return jstr(jidx(versions, i), "name");
	return NULL;
}

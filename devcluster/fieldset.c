/*
 * fieldset.c: field sets, the FieldsV1 format of
 * sigs.k8s.io/structured-merge-diff that metadata.managedFields holds:
 *
 *	{"f:spec": {"f:replicas": {}, "f:containers": {
 *	    "k:{\"name\":\"app\"}": {".": {}, "f:image": {}}}}}
 *
 * A key is a path element: "f:<field>", "k:<key fields of a list-type
 * map item, as compact JSON with sorted members>", "v:<value of a set
 * item>" or "i:<index>"; "." says the node itself is a member.
 *
 *	values		structured-merge-diff's total order of values
 *			(numbers < strings < bools < lists < maps < null) and
 *			equality, and Go's printing of them (quoted strings,
 *			%v numbers, encoding/json's compact JSON with sorted
 *			keys), which is how keys and values are written
 *	fieldset_pe_parse()	one FieldsV1 key into a path element
 *	sets		struct fs: a sorted tree of path elements, each node a
 *			member or not, with union, intersection, difference
 *			(members only: a.b - a = a.b) and recursive difference
 *			(a.b - a = {}), serialized in structured-merge-diff's
 *			order ("." first; f: < k: < v: < i:)
 *	FieldsV1	trees decoded (fs_from_json()) and sets encoded as
 *			raw values, the text a tree would print as
 *			(fs_to_raw()), both through a caller-owned
 *			set-associative cache (fieldset_decode(),
 *			fieldset_to_raw_cached()), since the same sets come back
 *			write after write
 *
 * fieldmanager.c builds sets from objects and keeps managedFields with
 * them. Values are json-c trees read in place and never written to;
 * every walk is bounded by FM_DEPTH_MAX. No state but the caller's cache;
 * never logs.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/hash.h>
#include <kc/json.h>
#include <kc/sbuf.h>
#include <kc/str.h>

#include "fieldmanager.h"
#include "fieldset.h"

/* ------------------------------------------------------------------------
 * Numbers as Go prints them
 */

/*
 * The shortest decimal digits that read back as 'd' (> 0), without the
 * point, and the exponent of the first digit: 1.5 is "15", 0.
 */
static void
float_digits(double d, char *dig, size_t size, int *ret_exp)
{
	char tmp[48];
	const char *s;
	size_t n = 0;
	int e = 0, sign = 1;

	for (int p = 0; p <= 16; p++) {
		snprintf(tmp, sizeof(tmp), "%.*e", p, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	for (s = tmp; *s != '\0' && *s != 'e'; s++)
		if (*s >= '0' && *s <= '9' && n + 1 < size)
			dig[n++] = *s;
	dig[n] = '\0';
	while (n > 1 && dig[n - 1] == '0')
		dig[--n] = '\0';
	if (*s == 'e') {
		s++;
		if (*s == '-' || *s == '+')
			sign = *s++ == '-' ? -1 : 1;
		for (; *s >= '0' && *s <= '9'; s++)
			e = e * 10 + (*s - '0');
	}
	*ret_exp = sign * e;
}

/*
 * Formats 'd' as Go does: 'json' as encoding/json (exponent form below
 * 1e-6 and from 1e21, "e-7" not "e-07"), otherwise as fmt's %v
 * (exponent form below 1e-4 and from 1e21).
 */
static void
format_float(double d, bool json, char *out, size_t size)
{
	char dig[32];
	struct kc_sbuf b;
	double a = d < 0 ? -d : d;
	int e;
	size_t n;

	kc_sbuf_init(&b, out, size);
	if (d == 0) {
		kc_sbuf_puts(&b, "0");
		return;
	}
	if (d < 0)
		kc_sbuf_puts(&b, "-");
	float_digits(a, dig, sizeof(dig), &e);
	n = strlen(dig);
	if (json ? (a < 1e-6 || a >= 1e21) : (e < -4 || e >= 21)) {
		kc_sbuf_put(&b, dig, 1);
		if (n > 1) {
			kc_sbuf_puts(&b, ".");
			kc_sbuf_puts(&b, dig + 1);
		}
		if (json && e < 0 && e > -10)
			kc_sbuf_printf(&b, "e-%d", -e);
		else
			kc_sbuf_printf(&b, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
		return;
	}
	if (e < 0) {
		kc_sbuf_puts(&b, "0.");
		for (int i = -1; i > e; i--)
			kc_sbuf_puts(&b, "0");
		kc_sbuf_puts(&b, dig);
	} else if ((size_t)e + 1 >= n) {
		kc_sbuf_puts(&b, dig);
		for (size_t i = n; i < (size_t)e + 1; i++)
			kc_sbuf_puts(&b, "0");
	} else {
		kc_sbuf_put(&b, dig, (size_t)e + 1);
		kc_sbuf_puts(&b, ".");
		kc_sbuf_puts(&b, dig + e + 1);
	}
}

/* ------------------------------------------------------------------------
 * Values: structured-merge-diff's order and equality
 */

int
fieldset_vclass(const struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_double:	return VC_FLOAT;
	case json_type_int:	return VC_INT;
	case json_type_string:	return VC_STRING;
	case json_type_boolean:	return VC_BOOL;
	case json_type_array:	return VC_LIST;
	case json_type_object:	return VC_MAP;
	default:		return VC_NULL;
	}
}

static int
cmp_double(double a, double b)
{
	return a < b ? -1 : a > b ? 1 : 0;
}

static int
cmp_bytes(const char *a, size_t al, const char *b, size_t bl)
{
	int c = memcmp(a, b, KC_MIN(al, bl));

	if (c != 0)
		return c < 0 ? -1 : 1;
	return al < bl ? -1 : al > bl ? 1 : 0;
}

/* The smallest key of 'o' after 'prev' (NULL: the smallest), or NULL. */
static const char *
next_key(const struct json_object *o, const char *prev)
{
	const char *best = NULL;

	json_object_object_foreach(unconst(o), k, v) {
		(void)v;
		if ((prev == NULL || strcmp(k, prev) > 0) &&
		    (best == NULL || strcmp(k, best) < 0))
			best = k;
	}
	return best;
}

/*
 * A total order (value.Compare): numbers by value, then strings, bools,
 * lists, maps, null. Maps compare key by key in sorted order. Never
 * allocates, so it can sort.
 */
int
fieldset_value_cmp(const struct json_object *a, const struct json_object *b, unsigned depth)
{
	int ca = fieldset_vclass(a), cb = fieldset_vclass(b), c;

	if (ca == VC_FLOAT || cb == VC_FLOAT || (ca == VC_INT && cb == VC_INT)) {
		if ((ca == VC_FLOAT || ca == VC_INT) && (cb == VC_FLOAT || cb == VC_INT)) {
			if (ca == VC_INT && cb == VC_INT) {
				int64_t x = json_object_get_int64(unconst(a));
				int64_t y = json_object_get_int64(unconst(b));

				return x < y ? -1 : x > y ? 1 : 0;
			}
			return cmp_double(json_object_get_double(unconst(a)),
			    json_object_get_double(unconst(b)));
		}
		return ca == VC_FLOAT || ca == VC_INT ? -1 : 1;
	}
	if (ca != cb)
		return ca < cb ? -1 : 1;
	if (depth > FM_DEPTH_MAX)
		return 0;
	switch (ca) {
	case VC_STRING:
		return cmp_bytes(json_object_get_string(unconst(a)),
		    (size_t)json_object_get_string_len(unconst(a)),
		    json_object_get_string(unconst(b)),
		    (size_t)json_object_get_string_len(unconst(b)));
	case VC_BOOL:
		return (int)json_object_get_boolean(unconst(a)) -
		    (int)json_object_get_boolean(unconst(b));
	case VC_LIST: {
		size_t na = jlen(a), nb = jlen(b);

		for (size_t i = 0; i < na && i < nb; i++) {
			c = fieldset_value_cmp(json_object_array_get_idx(a, i),
			    json_object_array_get_idx(b, i), depth + 1);
			if (c != 0)
				return c;
		}
		return na < nb ? -1 : na > nb ? 1 : 0;
	}
	case VC_MAP: {
		const char *ka = next_key(a, NULL), *kb = next_key(b, NULL);

		for (;;) {
			struct json_object *va = NULL, *vb = NULL;

			if (ka == NULL || kb == NULL)
				return ka == NULL ? (kb == NULL ? 0 : -1) : 1;
			if ((c = strcmp(ka, kb)) != 0)
				return c < 0 ? -1 : 1;
			(void)jget(a, ka, &va);
			(void)jget(b, kb, &vb);
			if ((c = fieldset_value_cmp(va, vb, depth + 1)) != 0)
				return c;
			ka = next_key(a, ka);
			kb = next_key(b, kb);
		}
	}
	default:
		return 0;
	}
}

/* value.Equals: numbers by value (1 == 1.0), maps regardless of order. */
bool
fieldset_value_equal(const struct json_object *a, const struct json_object *b, unsigned depth)
{
	int ca = fieldset_vclass(a), cb = fieldset_vclass(b);

	if (ca == VC_FLOAT || cb == VC_FLOAT) {
		if ((ca != VC_FLOAT && ca != VC_INT) || (cb != VC_FLOAT && cb != VC_INT))
			return false;
		return json_object_get_double(unconst(a)) == json_object_get_double(unconst(b));
	}
	if (ca != cb)
		return false;
	if (depth > FM_DEPTH_MAX)
		return false;
	switch (ca) {
	case VC_INT:
		return json_object_get_int64(unconst(a)) == json_object_get_int64(unconst(b));
	case VC_STRING:
	case VC_BOOL:
		return fieldset_value_cmp(a, b, depth) == 0;
	case VC_LIST:
		if (jlen(a) != jlen(b))
			return false;
		for (size_t i = 0; i < jlen(a); i++)
			if (!fieldset_value_equal(json_object_array_get_idx(a, i),
			    json_object_array_get_idx(b, i), depth + 1))
				return false;
		return true;
	case VC_MAP:
		if (jlen(a) != jlen(b))
			return false;
		json_object_object_foreach(unconst(a), k, va) {
			struct json_object *vb = NULL;

			if (!jget(b, k, &vb) || !fieldset_value_equal(va, vb, depth + 1))
				return false;
		}
		return true;
	default:
		return true;
	}
}

/* value.ToString, for paths in messages: strings quoted, maps sorted. */
static void
sb_value(struct kc_sbuf *b, const struct json_object *v, unsigned depth)
{
	char num[64];
	const char *k;
	size_t n;

	if (depth > FM_DEPTH_MAX) {
		kc_sbuf_puts(b, "...");
		return;
	}
	switch (fieldset_vclass(v)) {
	case VC_FLOAT:
		format_float(json_object_get_double(unconst(v)), false, num, sizeof(num));
		kc_sbuf_puts(b, num);
		return;
	case VC_INT:
		kc_sbuf_printf(b, "%" PRId64, json_object_get_int64(unconst(v)));
		return;
	case VC_STRING:
		kc_sbuf_quote(b, json_object_get_string(unconst(v)),
		    (size_t)json_object_get_string_len(unconst(v)));
		return;
	case VC_BOOL:
		kc_sbuf_puts(b, json_object_get_boolean(unconst(v)) ? "true" : "false");
		return;
	case VC_LIST:
		kc_sbuf_puts(b, "[");
		n = jlen(v);
		for (size_t i = 0; i < n; i++) {
			if (i > 0)
				kc_sbuf_puts(b, ",");
			sb_value(b, json_object_array_get_idx(v, i), depth + 1);
		}
		kc_sbuf_puts(b, "]");
		return;
	case VC_MAP:
		kc_sbuf_puts(b, "{");
		for (k = next_key(v, NULL); k != NULL; k = next_key(v, k)) {
			struct json_object *x = NULL;

			if (b->used > 0 && b->buf[b->used - 1] != '{')
				kc_sbuf_puts(b, ",");
			(void)jget(v, k, &x);
			kc_sbuf_puts(b, k);
			kc_sbuf_puts(b, "=");
			sb_value(b, x, depth + 1);
		}
		kc_sbuf_puts(b, "}");
		return;
	default:
		kc_sbuf_puts(b, "null");
		return;
	}
}

/* ------------------------------------------------------------------------
 * JSON as Go's encoding/json writes it: compact, map keys sorted, HTML
 * characters escaped
 */

int
fieldset_gj_string(struct kc_buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	int r;

	if ((r = kc_buf_putc(b, '"')) < 0)
		return r;
	for (size_t i = 0; i < len; ) {
		const char *esc = NULL;
		char tmp[8];
		uint32_t cp;
		size_t n;

		if (u[i] < 0x80) {
			switch (u[i]) {
			case '"':	esc = "\\\""; break;
			case '\\':	esc = "\\\\"; break;
			case '\n':	esc = "\\n"; break;
			case '\r':	esc = "\\r"; break;
			case '\t':	esc = "\\t"; break;
			case '\b':	esc = "\\b"; break;
			case '\f':	esc = "\\f"; break;
			default:	break;
			}
			if (esc != NULL)
				r = kc_buf_puts(b, esc);
			else if (u[i] < 0x20 || u[i] == '<' || u[i] == '>' || u[i] == '&') {
				memcpy(tmp, "\\u00", 4);
				tmp[4] = hex[u[i] >> 4];
				tmp[5] = hex[u[i] & 15];
				r = kc_buf_append(b, tmp, 6);
			} else
				r = kc_buf_putc(b, (char)u[i]);
			i++;
		} else if ((n = kc_utf8_decode(s + i, len - i, &cp)) == 0) {
			r = kc_buf_puts(b, "\\ufffd");
			i++;
		} else {
			if (cp == 0x2028 || cp == 0x2029)
				r = kc_buf_puts(b, cp == 0x2028 ? "\\u2028" : "\\u2029");
			else
				r = kc_buf_append(b, s + i, n);
			i += n;
		}
		if (r < 0)
			return r;
	}
	return kc_buf_putc(b, '"');
}

static int
cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int
gj_value(struct kc_buf *b, const struct json_object *v, unsigned depth)
{
	char num[64];
	const char **keys = NULL;
	size_t n, i = 0;
	int r = 0;

	if (depth > FM_DEPTH_MAX) {
		kc_buf_free(b);
		return KC_ETOOLARGE;
	}
	switch (fieldset_vclass(v)) {
	case VC_FLOAT:
		format_float(json_object_get_double(unconst(v)), true, num, sizeof(num));
		return kc_buf_puts(b, num);
	case VC_INT:
		return kc_buf_printf(b, "%" PRId64, json_object_get_int64(unconst(v)));
	case VC_STRING:
		return fieldset_gj_string(b, json_object_get_string(unconst(v)),
		    (size_t)json_object_get_string_len(unconst(v)));
	case VC_BOOL:
		return kc_buf_puts(b, json_object_get_boolean(unconst(v)) ? "true" : "false");
	case VC_LIST:
		if ((r = kc_buf_putc(b, '[')) < 0)
			return r;
		n = jlen(v);
		for (i = 0; i < n; i++)
			if ((i > 0 && (r = kc_buf_putc(b, ',')) < 0) ||
			    (r = gj_value(b, json_object_array_get_idx(v, i), depth + 1)) < 0)
				return r;
		return kc_buf_putc(b, ']');
	case VC_MAP:
		n = jlen(v);
		if (n > 0 && (keys = kc_reallocarray(NULL, n, sizeof(*keys))) == NULL) {
			kc_buf_free(b);
			return -ENOMEM;
		}
		json_object_object_foreach(unconst(v), k, mv) {
			(void)mv;
			if (i < n)
				keys[i++] = k;
		}
		n = i;
		if (n > 1)
			qsort(keys, n, sizeof(*keys), cmp_cstr);
		if ((r = kc_buf_putc(b, '{')) < 0)
			goto out;
		for (i = 0; i < n; i++) {
			struct json_object *x = NULL;

			(void)jget(v, keys[i], &x);
			if ((i > 0 && (r = kc_buf_putc(b, ',')) < 0) ||
			    (r = fieldset_gj_string(b, keys[i], strlen(keys[i]))) < 0 ||
			    (r = kc_buf_putc(b, ':')) < 0 ||
			    (r = gj_value(b, x, depth + 1)) < 0)
				goto out;
		}
		r = kc_buf_putc(b, '}');
	out:
		kc_free(keys);
		return r;
	default:
		return kc_buf_puts(b, "null");
	}
}

/* 'v' as Go's encoding/json, with 'suffix' appended: a new string. */
int
fieldset_gj_dump(const struct json_object *v, const char *suffix, char **ret)
{
	struct kc_buf b;
	char *s;
	int r;

	kc_buf_init(&b, FM_TEXT_MAX);
	if ((r = gj_value(&b, v, 0)) < 0 || (r = kc_buf_puts(&b, suffix)) < 0)
		return r;
	if ((s = kc_buf_take(&b, NULL)) == NULL) {
		kc_buf_free(&b);
		return -ENOMEM;
	}
	kc_buf_free(&b);
	*ret = s;
	return 0;
}

/* ------------------------------------------------------------------------
 * Path elements
 */

void
fieldset_pe_free(struct pe *pe)
{
	pe->own = kc_free(pe->own);
	if (pe->v != NULL)
		json_object_put(pe->v);
	pe->v = NULL;
	pe->s = NULL;
}

int
fieldset_pe_copy(struct pe *dst, const struct pe *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->type = src->type;
	dst->i = src->i;
	if (src->s != NULL && (dst->own = kc_strdup(src->s)) == NULL)
		return -ENOMEM;
	dst->s = dst->own;
	dst->v = src->v != NULL ? json_object_get(src->v) : NULL;
	return 0;
}

/* A borrowed FIELD element. */
void
fieldset_pe_field(struct pe *pe, const char *name)
{
	memset(pe, 0, sizeof(*pe));
	pe->type = FM_PE_FIELD;
	pe->s = name;
}

/* Takes 'v' (owned, NULL for null) as the element's value. */
int
fieldset_pe_take_value(struct pe *pe, enum fm_pe_type type, struct json_object *v)
{
	int r;

	memset(pe, 0, sizeof(*pe));
	pe->type = type;
	pe->v = v;
	if ((r = fieldset_gj_dump(v, "", &pe->own)) < 0) {
		fieldset_pe_free(pe);
		return r;
	}
	pe->s = pe->own;
	return 0;
}

int
fieldset_pe_cmp(const struct pe *a, const struct pe *b)
{
	int c;

	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	switch (a->type) {
	case FM_PE_FIELD:
		c = strcmp(a->s, b->s);
		return c < 0 ? -1 : c > 0;
	case FM_PE_KEY:
	case FM_PE_VALUE:
		return fieldset_value_cmp(a->v, b->v, 0);
	case FM_PE_INDEX:
		return a->i < b->i ? -1 : a->i > b->i;
	default:
		return 0;
	}
}

/* The serialized key: "f:name", "k:{...}", "v:...", "i:3". */
static char *
pe_text(const struct pe *pe)
{
	switch (pe->type) {
	case FM_PE_FIELD:
		return kc_asprintf("f:%s", pe->s);
	case FM_PE_KEY:
		return kc_asprintf("k:%s", pe->s);
	case FM_PE_VALUE:
		return kc_asprintf("v:%s", pe->s);
	default:
		return kc_asprintf("i:%" PRId64, pe->i);
	}
}

/* PathElement.String(): ".name", "[k=\"v\",n=1]", "[=\"v\"]", "[3]". */
void
fieldset_put_pe(struct kc_sbuf *b, const struct pe *pe)
{
	const char *k;

	switch (pe->type) {
	case FM_PE_FIELD:
		kc_sbuf_puts(b, ".");
		kc_sbuf_puts(b, pe->s);
		return;
	case FM_PE_KEY:
		kc_sbuf_puts(b, "[");
		for (k = next_key(pe->v, NULL); k != NULL; k = next_key(pe->v, k)) {
			struct json_object *x = NULL;

			if (b->used > 0 && b->buf[b->used - 1] != '[')
				kc_sbuf_puts(b, ",");
			(void)jget(pe->v, k, &x);
			kc_sbuf_puts(b, k);
			kc_sbuf_puts(b, "=");
			sb_value(b, x, 0);
		}
		kc_sbuf_puts(b, "]");
		return;
	case FM_PE_VALUE:
		kc_sbuf_puts(b, "[=");
		sb_value(b, pe->v, 0);
		kc_sbuf_puts(b, "]");
		return;
	default:
		kc_sbuf_printf(b, "[%" PRId64 "]", pe->i);
		return;
	}
}

void
fieldset_put_path(struct kc_sbuf *b, const struct pe *const *path, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fieldset_put_pe(b, path[i]);
}

/* A copy of the object 'o' with its members in sorted order. */
int
fieldset_sorted_object(const struct json_object *o, struct json_object **ret)
{
	struct json_object *out, *c;
	const char *k;
	int r;

	if ((out = json_object_new_object()) == NULL)
		return -ENOMEM;
	for (k = next_key(o, NULL); k != NULL; k = next_key(o, k)) {
		struct json_object *x = NULL;

		(void)jget(o, k, &x);
		if ((r = jcopy(x, &c)) < 0 || (r = jput(out, k, c)) < 0) {
			json_object_put(out);
			return r;
		}
	}
	*ret = out;
	return 0;
}

/*
 * DeserializePathElement. Returns 0, 1 for a prefix it does not know
 * (skipped, as structured-merge-diff skips them), or KC_EINVALID with the
 * reason in 'err'.
 */
int
fieldset_pe_parse(const char *text, struct pe *ret, char *err, size_t errsize)
{
	struct json_object *v = NULL, *sorted = NULL;
	struct kc_status st = { 0 };
	size_t len = strlen(text);
	int64_t idx;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (len < 2) {
		errf(err, errsize, "key must be 2 characters long: %s", text);
		return KC_EINVALID;
	}
	if (text[1] != ':') {
		errf(err, errsize, "missing colon: %s", text);
		return KC_EINVALID;
	}
	switch (text[0]) {
	case 'f':
		if ((ret->own = kc_strdup(text + 2)) == NULL)
			return -ENOMEM;
		ret->s = ret->own;
		ret->type = FM_PE_FIELD;
		return 0;
	case 'i':
		if (kc_parse_i64(text + 2, &idx) < 0) {
			errf(err, errsize, "invalid index in %s", text);
			return KC_EINVALID;
		}
		ret->type = FM_PE_INDEX;
		ret->i = idx;
		return 0;
	case 'v':
	case 'k': {
		/*
		 * encoding/json decodes each byte of a string that is not
		 * UTF-8 as U+FFFD; so must the value, or it would print as
		 * "\ufffd" now and as the raw U+FFFD once read back.
		 */
		_cleanup_(kc_freep) char *valid = kc_utf8_dup_valid(text + 2, len - 2, &len);

		if (valid == NULL)
			return -ENOMEM;
		if ((r = kc_json_parse(valid, len, &v, &st)) < 0) {
			if (r == -ENOMEM)
				return r;
			errf(err, errsize, "parsing %s: %s", text, st.message);
			return KC_EINVALID;
		}
		if (text[0] == 'v')
			return fieldset_pe_take_value(ret, FM_PE_VALUE, v);
		if (!json_object_is_type(v, json_type_object)) {
			if (v != NULL)
				json_object_put(v);
			errf(err, errsize, "parsing %s: expected an object", text);
			return KC_EINVALID;
		}
		r = fieldset_sorted_object(v, &sorted);
		json_object_put(v);
		if (r < 0)
			return r;
		return fieldset_pe_take_value(ret, FM_PE_KEY, sorted);
	}
	default:
		return 1;
	}
}

/* ------------------------------------------------------------------------
 * Field sets: a tree of path elements, each level sorted, a node kept
 * only while it is a member or has members below it
 */

void
fieldset_free(struct fs *s)
{
	for (size_t i = 0; i < s->n; i++) {
		fieldset_pe_free(&s->v[i].pe);
		fieldset_free(&s->v[i].kids);
	}
	kc_free(s->v);
	memset(s, 0, sizeof(*s));
}

void
fieldset_node_free(struct fs_node *n)
{
	fieldset_pe_free(&n->pe);
	fieldset_free(&n->kids);
}

/* Where 'pe' is, or would go. */
static bool
fs_find(const struct fs *s, const struct pe *pe, size_t *ret_pos)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = fieldset_pe_cmp(&s->v[mid].pe, pe);

		if (c == 0) {
			*ret_pos = mid;
			return true;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_pos = lo;
	return false;
}

const struct fs_node *
fieldset_get(const struct fs *s, const struct pe *pe)
{
	size_t pos;

	return fs_find(s, pe, &pos) ? &s->v[pos] : NULL;
}

static int
fs_grow(struct fs *s)
{
	struct fs_node *v;
	size_t cap;

	if (s->n < s->cap)
		return 0;
	cap = s->cap == 0 ? 4 : s->cap * 2;
	if ((v = kc_reallocarray(s->v, cap, sizeof(*v))) == NULL)
		return -ENOMEM;
	s->v = v;
	s->cap = cap;
	return 0;
}

/* Moves 'node' to the end of 's'; on failure 'node' is still the caller's. */
int
fieldset_push(struct fs *s, struct fs_node *node)
{
	int r;

	if ((r = fs_grow(s)) < 0)
		return r;
	s->v[s->n++] = *node;
	memset(node, 0, sizeof(*node));
	return 0;
}

/* The node for 'pe' in 's', added (not a member, no children) if absent. */
static int
fs_descend(struct fs *s, const struct pe *pe, struct fs_node **ret)
{
	struct fs_node node = { 0 };
	size_t pos;
	int r;

	if (fs_find(s, pe, &pos)) {
		*ret = &s->v[pos];
		return 0;
	}
	if ((r = fieldset_pe_copy(&node.pe, pe)) < 0 || (r = fs_grow(s)) < 0) {
		fieldset_node_free(&node);
		return r;
	}
	memmove(&s->v[pos + 1], &s->v[pos], (s->n - pos) * sizeof(s->v[0]));
	s->v[pos] = node;
	s->n++;
	*ret = &s->v[pos];
	return 0;
}

/* Adds the path 'path[0..n)' as a member; the empty path is ignored. */
int
fieldset_insert(struct fs *s, const struct pe *const *path, size_t n)
{
	struct fs_node *node = NULL;
	int r;

	for (size_t i = 0; i < n; i++) {
		if ((r = fs_descend(s, path[i], &node)) < 0)
			return r;
		s = &node->kids;
	}
	if (node != NULL)
		node->member = true;
	return 0;
}

bool
fieldset_empty(const struct fs *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].member || !fieldset_empty(&s->v[i].kids))
			return false;
	return true;
}

size_t
fieldset_count(const struct fs *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n; i++)
		n += (s->v[i].member ? 1 : 0) + fieldset_count(&s->v[i].kids);
	return n;
}

bool
fieldset_equal(const struct fs *a, const struct fs *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].member != b->v[i].member ||
		    fieldset_pe_cmp(&a->v[i].pe, &b->v[i].pe) != 0 ||
		    !fieldset_equal(&a->v[i].kids, &b->v[i].kids))
			return false;
	return true;
}


static int
node_copy(struct fs_node *dst, const struct fs_node *src)
{
	int r;

	memset(dst, 0, sizeof(*dst));
	dst->member = src->member;
	if ((r = fieldset_pe_copy(&dst->pe, &src->pe)) < 0 ||
	    (r = fieldset_copy(&dst->kids, &src->kids)) < 0) {
		fieldset_node_free(dst);
		return r;
	}
	return 0;
}

/* 'dst' must be empty; on failure it is left empty. */
int
fieldset_copy(struct fs *dst, const struct fs *src)
{
	struct fs_node node;
	int r;

	for (size_t i = 0; i < src->n; i++) {
		if ((r = node_copy(&node, &src->v[i])) < 0 ||
		    (r = fieldset_push(dst, &node)) < 0) {
			fieldset_node_free(&node);
			fieldset_free(dst);
			return r;
		}
	}
	return 0;
}

/*
 * The set operations, into 'out' (empty; left empty on failure):
 *	union		members of either
 *	intersection	members of both
 *	difference	members of 'a' that are not members of 'b'
 *	recursive	the same, and nothing below a member of 'b'
 */
int
fieldset_op(int op, const struct fs *a, const struct fs *b, struct fs *out)
{
	size_t i = 0, j = 0;
	int r = 0;

	while (i < a->n || (op == OP_UNION && j < b->n)) {
		struct fs_node node = { 0 };
		const struct fs_node *x = i < a->n ? &a->v[i] : NULL;
		const struct fs_node *y = j < b->n ? &b->v[j] : NULL;
		int c = x == NULL ? 1 : y == NULL ? -1 : fieldset_pe_cmp(&x->pe, &y->pe);

		if (c < 0) {
			i++;
			if (op == OP_INTERSECT)
				continue;
			r = node_copy(&node, x);
		} else if (c > 0) {
			j++;
			if (op != OP_UNION)
				continue;
			r = node_copy(&node, y);
		} else {
			i++, j++;
			if (op == OP_RDIFF && y->member)
				continue;
			switch (op) {
			case OP_UNION:
				node.member = x->member || y->member;
				break;
			case OP_INTERSECT:
				node.member = x->member && y->member;
				break;
			default:
				node.member = x->member && !y->member;
				break;
			}
			if ((r = fieldset_pe_copy(&node.pe, &x->pe)) == 0)
				r = fieldset_op(op, &x->kids, &y->kids, &node.kids);
		}
		if (r == 0 && !node.member && fieldset_empty(&node.kids)) {
			fieldset_node_free(&node);
			continue;
		}
		if (r < 0 || (r = fieldset_push(out, &node)) < 0) {
			fieldset_node_free(&node);
			fieldset_free(out);
			return r;
		}
	}
	return 0;
}

/*
 * '*a' becomes 'a op b' in place: the nodes of 'a' move, only what a
 * union takes from 'b' is copied, or moved too when 'take' (then 'b' is
 * consumed: left empty). Sets are normalized (no node that is neither a
 * member nor above one), so nodes of 'a' that 'b' does not reach stay
 * as they are. On failure '*a' (and a taken 'b') is left empty. 'a' and
 * 'b' must be different sets.
 */
static int
fs_merge(int op, struct fs *a, struct fs *b, bool take)
{
	struct fs out = { 0 };
	size_t i = 0, j = 0, k = 0;
	int r = 0;

	if (b->n == 0 || (a->n == 0 && op != OP_UNION)) {
		if (op == OP_INTERSECT)
			fieldset_free(a);
		goto done;
	}
	if (a->n == 0 && take) {
		*a = *b;
		memset(b, 0, sizeof(*b));
		return 0;
	}
	if (op == OP_UNION && (out.v = kc_reallocarray(NULL, a->n + b->n,
	    sizeof(*out.v))) == NULL) {
		r = -ENOMEM;
		goto done;
	}
	out.cap = op == OP_UNION ? a->n + b->n : 0;
	while (i < a->n || (op == OP_UNION && j < b->n)) {
		struct fs_node *x = i < a->n ? &a->v[i] : NULL;
		struct fs_node *y = j < b->n ? &b->v[j] : NULL;
		struct fs_node node = { 0 };
		int c = x == NULL ? 1 : y == NULL ? -1 : fieldset_pe_cmp(&x->pe, &y->pe);

		if (c < 0) {
			i++;
			if (op == OP_INTERSECT) {
				fieldset_node_free(x);
				continue;
			}
			node = *x;
			memset(x, 0, sizeof(*x));
		} else if (c > 0) {
			j++;
			if (op != OP_UNION)
				continue;
			if (take) {
				node = *y;
				memset(y, 0, sizeof(*y));
			} else if ((r = node_copy(&node, y)) < 0)
				break;
		} else {
			i++, j++;
			if (op == OP_RDIFF && y->member) {
				fieldset_node_free(x);
				continue;
			}
			node = *x;
			memset(x, 0, sizeof(*x));
			switch (op) {
			case OP_UNION:
				node.member = node.member || y->member;
				break;
			case OP_INTERSECT:
				node.member = node.member && y->member;
				break;
			default:
				node.member = node.member && !y->member;
				break;
			}
			if ((r = fs_merge(op, &node.kids, &y->kids, take)) < 0) {
				fieldset_node_free(&node);
				break;
			}
			/* Merged children are normalized: none left, nothing below. */
			if (!node.member && node.kids.n == 0) {
				fieldset_node_free(&node);
				continue;
			}
		}
		/* Without a union the result is never longer than 'a': in place. */
		if (op == OP_UNION)
			out.v[out.n++] = node;
		else
			a->v[k++] = node;
	}
	if (r < 0) {
		fieldset_free(&out);
		fieldset_free(a);
		goto done;
	}
	if (op == OP_UNION) {
		fieldset_free(a);
		*a = out;
	} else {
		/* The rest of 'a' moved or was freed: only zeroed nodes remain. */
		a->n = k;
		if (k == 0)
			fieldset_free(a);
	}
done:
	if (take)
		fieldset_free(b);
	return r;
}

/* Replaces '*a' with 'a op b' (on failure '*a' is left empty). */
int
fieldset_apply_op(int op, struct fs *a, const struct fs *b)
{
	return fs_merge(op, a, (struct fs *)(uintptr_t)b, false);
}

/* '*a' becomes 'a | b', moving the nodes of 'b' (left empty). */
int
fieldset_union_take(struct fs *a, struct fs *b)
{
	return fs_merge(OP_UNION, a, b, true);
}

/*
 * Calls 'fn' on each member's path, in Set.Iterate order: the members
 * of a level, then each child's members, depth first.
 */
int
fieldset_iterate(const struct fs *s, const struct pe **stack, size_t depth, fs_iter_fn *fn,
    void *arg)
{
	int r;

	if (depth >= FM_DEPTH_MAX)
		return KC_ETOOLARGE;
	for (size_t i = 0; i < s->n; i++) {
		if (!s->v[i].member)
			continue;
		stack[depth] = &s->v[i].pe;
		if ((r = fn(arg, stack, depth + 1)) < 0)
			return r;
	}
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i].kids.n == 0)
			continue;
		stack[depth] = &s->v[i].pe;
		if ((r = fieldset_iterate(&s->v[i].kids, stack, depth + 1, fn, arg)) < 0)
			return r;
	}
	return 0;
}

/* A set from dotted paths ("status", "metadata.name"). */
int
fieldset_from_paths(const char *const *paths, struct fs *out)
{
	const struct pe *stack[FM_DEPTH_MAX];
	struct pe pes[FM_DEPTH_MAX];
	char buf[FM_PATH_MAX];
	size_t n;
	char *p, *dot;
	int r;

	for (; paths != NULL && *paths != NULL; paths++) {
		if (kc_strlcpy(buf, *paths, sizeof(buf)) >= sizeof(buf))
			continue;
		for (n = 0, p = buf; p != NULL && n < FM_DEPTH_MAX; n++, p = dot) {
			if ((dot = strchr(p, '.')) != NULL)
				*dot++ = '\0';
			fieldset_pe_field(&pes[n], p);
			stack[n] = &pes[n];
		}
		if ((r = fieldset_insert(out, stack, n)) < 0) {
			fieldset_free(out);
			return r;
		}
	}
	return 0;
}

/* FieldsV1 of a set: "." first, then the elements in order. */
int
fieldset_to_json(const struct fs *s, bool self, struct json_object **ret)
{
	struct json_object *o, *child = NULL;
	char *key;
	int r;

	if ((o = json_object_new_object()) == NULL)
		return -ENOMEM;
	if (self && s->n > 0) {
		if ((child = json_object_new_object()) == NULL) {
			r = -ENOMEM;
			goto fail;
		}
		if ((r = jput(o, ".", child)) < 0)
			goto fail;
	}
	for (size_t i = 0; i < s->n; i++) {
		const struct fs_node *n = &s->v[i];

		if (n->kids.n == 0)
			r = (child = json_object_new_object()) == NULL ? -ENOMEM : 0;
		else
			r = fieldset_to_json(&n->kids, n->member, &child);
		if (r < 0)
			goto fail;
		if ((key = pe_text(&n->pe)) == NULL) {
			json_object_put(child);
			r = -ENOMEM;
			goto fail;
		}
		r = jput(o, key, child);
		kc_free(key);
		if (r < 0)
			goto fail;
	}
	*ret = o;
	return 0;
fail:
	json_object_put(o);
	return r;
}

/*
 * A set from FieldsV1, as readIterV1 reads it: a key whose object is
 * empty, holds ".", or holds only keys of unknown kinds is a member.
 */
static int
fs_from_json(const struct json_object *o, unsigned depth, struct fs *out, bool *ret_self,
    char *err, size_t errsize)
{
	bool self = false, any = false;
	int r = 0;

	if (!json_object_is_type(o, json_type_object)) {
		errf(err, errsize, "expected an object, got %s",
		    json_type_to_name(json_object_get_type(o)));
		r = KC_EINVALID;
		goto fail;
	}
	if (depth >= FM_DEPTH_MAX) {
		errf(err, errsize, "nested deeper than %d", FM_DEPTH_MAX);
		r = KC_ETOOLARGE;
		goto fail;
	}
	json_object_object_foreach(unconst(o), key, val) {
		struct fs_node *node;
		struct fs kids = { 0 };
		struct pe pe;
		bool member;

		if (strcmp(key, ".") == 0) {
			self = true;
			continue;
		}
		if ((r = fieldset_pe_parse(key, &pe, err, errsize)) < 0)
			goto fail;
		if (r == 1) {
			r = 0;
			continue;
		}
		r = fs_from_json(val, depth + 1, &kids, &member, err, errsize);
		if (r == 0)
			r = fs_descend(out, &pe, &node);
		fieldset_pe_free(&pe);
		if (r == 0 && (r = fieldset_apply_op(OP_UNION, &node->kids, &kids)) == 0)
			node->member = node->member || member;
		fieldset_free(&kids);
		if (r < 0)
			goto fail;
		any = true;
	}
	if (ret_self != NULL)
		*ret_self = self || !any;
	return 0;
fail:
	fieldset_free(out);
	return r;
}


/*
 * FieldsV1 in the trees this module returns is a raw value
 * (kc_json_new_raw()): the set's compact JSON text, printed as it is. A
 * pod's field sets are four fifths of its JSON objects, and a json-c
 * object costs a hash table of some 700 bytes, so as trees they made most
 * of every stored object's memory and of every copy's time. Sets written
 * by clients (or read back from disk) arrive as trees and are read as
 * such; an entry kept as it came (mentry.orig) has its tree turned into
 * text, byte for byte as the tree prints.
 */

/*
 * A raw value with the text the private tree 't' prints as (json-c keeps
 * the printed text in 't': it must not be shared).
 */
int
fieldset_tree_to_raw(struct json_object *t, struct json_object **ret)
{
	const char *text;
	size_t len;

	if ((text = json_object_to_json_string_length(t,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len)) == NULL ||
	    (*ret = kc_json_new_raw(text, len)) == NULL)
		return -ENOMEM;
	return 0;
}

/* The set as a raw value, printed as kube-apiserver prints FieldsV1. */
/*
 * A key of fieldset_to_json() printed as json-c prints it: json-c escapes the
 * text, held in one reused string object.
 */
static int
key_print(struct kc_buf *b, struct json_object *str, const struct pe *pe)
{
	char small[256], *key = small;
	const char *text;
	size_t len;
	int n, r;

	switch (pe->type) {
	case FM_PE_FIELD:
		n = snprintf(small, sizeof(small), "f:%s", pe->s);
		break;
	case FM_PE_KEY:
		n = snprintf(small, sizeof(small), "k:%s", pe->s);
		break;
	case FM_PE_VALUE:
		n = snprintf(small, sizeof(small), "v:%s", pe->s);
		break;
	default:
		n = snprintf(small, sizeof(small), "i:%" PRId64, pe->i);
		break;
	}
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= sizeof(small) && (key = pe_text(pe)) == NULL)
		return -ENOMEM;
	if (json_object_set_string_len(str, key, n) == 0 ||
	    (text = json_object_to_json_string_length(str,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len)) == NULL)
		r = -ENOMEM;
	else
		r = kc_buf_append(b, text, len);
	if (key != small)
		kc_free(key);
	return r;
}

/*
 * The text of fieldset_to_json()'s tree, printed without building the tree:
 * nodes in the set's order (the order fieldset_to_json() inserts them, which
 * json-c keeps), "." first for a member with children, {} for a leaf.
 */
static int
fs_print(struct kc_buf *b, struct json_object *str, const struct fs *s, bool self)
{
	int r;

	if ((r = kc_buf_putc(b, '{')) < 0)
		return r;
	if (self && s->n > 0 && (r = kc_buf_puts(b, "\".\":{}")) < 0)
		return r;
	for (size_t i = 0; i < s->n; i++) {
		const struct fs_node *n = &s->v[i];

		if (((i > 0 || (self && s->n > 0)) && (r = kc_buf_putc(b, ',')) < 0) ||
		    (r = key_print(b, str, &n->pe)) < 0 || (r = kc_buf_putc(b, ':')) < 0)
			return r;
		if (n->kids.n == 0)
			r = kc_buf_puts(b, "{}");
		else
			r = fs_print(b, str, &n->kids, n->member);
		if (r < 0)
			return r;
	}
	return kc_buf_putc(b, '}');
}

/* A set as a raw FieldsV1 value: fieldset_to_json()'s tree as json-c prints it. */
static int
fs_to_raw(const struct fs *s, struct json_object **ret)
{
	struct json_object *str;
	struct kc_buf b;
	int r;

	if ((str = json_object_new_string("")) == NULL)
		return -ENOMEM;
	kc_buf_init(&b, FM_TEXT_MAX);
	if ((r = fs_print(&b, str, s, false)) == 0 &&
	    (*ret = kc_json_new_raw(kc_buf_str(&b), b.len)) == NULL)
		r = -ENOMEM;
	kc_buf_free(&b);
	json_object_put(str);
	return r;
}

struct cache_entry {
	uint64_t	 hash;
	uint64_t	 used;		/* the cache's clock at the last hit */
	char		*text;		/* NULL: a free slot */
	size_t		 len;
	struct fs	 set;
};

/* The other way: a set (compared whole on a hit) and the raw value it prints as. */
struct enc_entry {
	uint64_t	 hash;		/* set_hash() */
	uint64_t	 used;
	struct json_object *raw;	/* NULL: a free slot */
	size_t		 len;		/* of its text */
	struct fs	 set;
};

/*
 * Both directions are set-associative: a hash picks a row of
 * FM_CACHE_WAYS slots, the least recently used slot of the row is
 * replaced. A lookup costs a row, not the whole cache, so the cache can
 * hold the sets of every object a burst of writes keeps touching (a
 * kubelet's second status write finds the sets its first one encoded).
 */
#define FM_CACHE_WAYS	4
#define FM_CACHE_ROWS	(FM_CACHE_ENTRIES / FM_CACHE_WAYS)

/* Not a kc_hmap: a fixed-size LRU cache that evicts, never grows nor allocates. */
struct fm_cache {
	struct cache_entry e[FM_CACHE_ENTRIES];
	struct enc_entry enc[FM_CACHE_ENTRIES];
	uint64_t	 clock;
	uint64_t	 hits;
	uint64_t	 misses;
	size_t		 bytes;		/* of the texts held, at most FM_CACHE_BYTES */
};

int
fm_cache_new(struct fm_cache **ret)
{
	return (*ret = kc_calloc(1, sizeof(**ret))) == NULL ? -ENOMEM : 0;
}

static void
cache_entry_clear(struct fm_cache *c, struct cache_entry *e)
{
	if (e->text != NULL)
		c->bytes -= e->len;
	kc_free(e->text);
	fieldset_free(&e->set);
	memset(e, 0, sizeof(*e));
}

static void
enc_entry_clear(struct fm_cache *c, struct enc_entry *e)
{
	if (e->raw != NULL) {
		c->bytes -= e->len;
		json_object_put(e->raw);
	}
	fieldset_free(&e->set);
	memset(e, 0, sizeof(*e));
}

void
fm_cache_free(struct fm_cache *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < FM_CACHE_ENTRIES; i++) {
		cache_entry_clear(c, &c->e[i]);
		enc_entry_clear(c, &c->enc[i]);
	}
	kc_free(c);
}

void
fm_cache_counts(const struct fm_cache *c, uint64_t *ret_hits, uint64_t *ret_misses)
{
	*ret_hits = c != NULL ? c->hits : 0;
	*ret_misses = c != NULL ? c->misses : 0;
}

/* The first slot of the row of 'h' (the high bits: FNV's low bits mix least). */
static size_t
cache_row(uint64_t h)
{
	return (size_t)((h >> 32) % FM_CACHE_ROWS) * FM_CACHE_WAYS;
}

/* The cached set of 'text' into 'out'; false when there is none. */
static bool
cache_find(struct fm_cache *c, uint64_t h, const char *text, size_t len, struct fs *out,
    int *ret)
{
	size_t row = cache_row(h);

	for (size_t i = row; i < row + FM_CACHE_WAYS; i++) {
		struct cache_entry *e = &c->e[i];

		if (e->text != NULL && e->hash == h && e->len == len &&
		    memcmp(e->text, text, len) == 0) {
			e->used = ++c->clock;
			c->hits++;
			*ret = fieldset_copy(out, &e->set);
			return true;
		}
	}
	c->misses++;
	return false;
}

/*
 * Keeps a copy of 'set' for 'text' in the least recently used slot of its
 * row (or in the slot that already holds 'text').
 */
static void
cache_add(struct fm_cache *c, uint64_t h, const char *text, size_t len, const struct fs *set)
{
	size_t row = cache_row(h);
	struct cache_entry *v = &c->e[row];

	for (size_t i = row; i < row + FM_CACHE_WAYS; i++) {
		struct cache_entry *e = &c->e[i];

		if (e->text != NULL && e->hash == h && e->len == len &&
		    memcmp(e->text, text, len) == 0) {
			e->used = ++c->clock;
			return;
		}
		if (v->text != NULL && (e->text == NULL || e->used < v->used))
			v = e;
	}
	cache_entry_clear(c, v);
	if (c->bytes + len > FM_CACHE_BYTES)
		return;
	/* Without memory for the copy the set is not cached; nothing fails. */
	if ((v->text = kc_memdup(text, len)) == NULL || fieldset_copy(&v->set, set) < 0) {
		kc_free(v->text);
		v->text = NULL;
		cache_entry_clear(c, v);
		return;
	}
	v->hash = h;
	v->len = len;
	v->used = ++c->clock;
	c->bytes += len;
}

/* The set a FieldsV1 value holds, raw (through 'cache', if any) or a tree. */
int
fieldset_decode(const struct json_object *fv, struct fm_cache *cache, struct fs *out,
    char *err, size_t errsize)
{
	const char *text = json_object_get_string(unconst(fv));
	size_t len = (size_t)json_object_get_string_len(unconst(fv));
	struct json_object *t = NULL;
	struct kc_status st = { 0 };
	uint64_t h = 0;
	int r;

	if (!kc_json_is_raw(fv))
		return fs_from_json(fv, 0, out, NULL, err, errsize);
	if (cache != NULL && len <= FM_CACHE_TEXT_MAX) {
		h = kc_fnv1a64(KC_FNV1A64_INIT, text, len);
		if (cache_find(cache, h, text, len, out, &r))
			return r;
	}
	if ((r = kc_json_parse(text, len, &t, &st)) < 0) {
		if (r != -ENOMEM)
			errf(err, errsize, "%s", st.message);
		return r == -ENOMEM ? r : KC_EINVALID;
	}
	r = fs_from_json(t, 0, out, NULL, err, errsize);
	json_object_put(t);
	if (r == 0 && cache != NULL && len <= FM_CACHE_TEXT_MAX)
		cache_add(cache, h, text, len, out);
	return r;
}

/*
 * A hash of a set's shape: element types, field names, indexes and
 * membership (keys and values count by type only; equal hashes are
 * confirmed with fieldset_equal()).
 */
static uint64_t
set_hash(const struct fs *s, uint64_t h)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct fs_node *n = &s->v[i];
		unsigned char tag[2] = { (unsigned char)n->pe.type, n->member ? 1 : 0 };

		h = kc_fnv1a64(h, tag, sizeof(tag));
		if (n->pe.s != NULL)
			h = kc_fnv1a64(h, n->pe.s, strlen(n->pe.s) + 1);
		if (n->pe.type == FM_PE_INDEX)
			h = kc_fnv1a64(h, &n->pe.i, sizeof(n->pe.i));
		h = set_hash(&n->kids, h);
		h = kc_fnv1a64(h, "", 1);
	}
	return h;
}

/*
 * fs_to_raw(), through the cache: sets of one shape share one raw value.
 * A new value is also remembered the other way, text to set, since the
 * next write of the object decodes it.
 */
int
fieldset_to_raw_cached(struct fm_cache *c, const struct fs *set, struct json_object **ret)
{
	struct enc_entry *v;
	const char *text;
	size_t row, len;
	uint64_t h;
	int r;

	if (c == NULL)
		return fs_to_raw(set, ret);
	h = set_hash(set, KC_FNV1A64_INIT);
	row = cache_row(h);
	for (size_t i = row; i < row + FM_CACHE_WAYS; i++) {
		struct enc_entry *e = &c->enc[i];

		if (e->raw != NULL && e->hash == h && fieldset_equal(&e->set, set)) {
			e->used = ++c->clock;
			*ret = json_object_get(e->raw);
			return 0;
		}
	}
	if ((r = fs_to_raw(set, ret)) < 0)
		return r;
	text = json_object_get_string(*ret);
	len = (size_t)json_object_get_string_len(*ret);
	if (len <= FM_CACHE_TEXT_MAX)
		cache_add(c, kc_fnv1a64(KC_FNV1A64_INIT, text, len), text, len, set);
	v = &c->enc[row];
	for (size_t i = row; i < row + FM_CACHE_WAYS && v->raw != NULL; i++)
		if (c->enc[i].raw == NULL || c->enc[i].used < v->used)
			v = &c->enc[i];
	enc_entry_clear(c, v);
	/* Without memory for the copy the value is not cached; nothing fails. */
	if (len > FM_CACHE_TEXT_MAX || c->bytes + len > FM_CACHE_BYTES ||
	    fieldset_copy(&v->set, set) < 0)
		return 0;
	v->raw = json_object_get(*ret);
	v->len = len;
	v->hash = h;
	v->used = ++c->clock;
	c->bytes += len;
	return 0;
}


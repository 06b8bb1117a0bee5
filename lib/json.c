/*
 * json.c: typed json-c accessors and bounded parsing.
 *
 * json-c does the parsing and printing; this file adds what every caller
 * would otherwise repeat: path lookups that tolerate missing keys and
 * wrong types, setters that never leak on allocation failure, strict
 * whole-input parsing with a depth bound, and a copy that never writes
 * to its source.
 *
 * json-c stores JSON null as a NULL pointer. So kc_json_put(), meant for
 * "kc_json_put(o, k, json_object_new_…())", reads NULL as a failed
 * constructor, and the _nullable forms exist for values that may be null.
 * Equality comes in two strengths: kc_json_equal() is json-c's (types
 * must match, so 1 differs from 1.0) and kc_json_equal_numeric() is
 * JSON's own, which RFC 6902's "test" and strategic merge keys need.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <string.h>

#include <json-c/printbuf.h>

#include <kc/alloc.h>
#include <kc/json.h>

/*
 * Whether 'o' holds no NaN, Infinity or -Infinity literal. json-c takes
 * those even in strict mode, and prints them back as such; none is JSON
 * (RFC 8259, section 6), and neither encoding/json nor yajl (the stream
 * of kc/jsonstream.h) takes them. A number past the range of a double
 * ("1e400") is JSON: json-c keeps its text, so it prints as it came.
 */
static bool
json_no_literals(struct json_object *o)
{
	const char *text;

	switch (json_object_get_type(o)) {
	case json_type_double:
		if (isfinite(json_object_get_double(o)))
			return true;
		text = json_object_get_string(o);
		return text != NULL && strpbrk(text, "0123456789") != NULL;
	case json_type_object: {
		json_object_object_foreach(o, key, v) {
			(void)key;
			if (!json_no_literals(v))
				return false;
		}
		return true;
	}
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++)
			if (!json_no_literals(json_object_array_get_idx(o, i)))
				return false;
		return true;
	default:
		return true;
	}
}

int
kc_json_parse(const char *text, size_t len, struct json_object **ret,
    struct kc_status *st)
{
	struct json_tokener *tok;
	struct json_object *o;
	enum json_tokener_error jerr;
	size_t off;

	if (len > INT32_MAX)
		return kc_status_set(st, -E2BIG, "JSON document too large");
	if ((tok = json_tokener_new_ex(KC_JSON_DEPTH_MAX)) == NULL)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	off = json_tokener_get_parse_end(tok);
	if (o == NULL && jerr == json_tokener_continue) {
		/* Input ended inside a value; a number may still complete. */
		o = json_tokener_parse_ex(tok, "", 1);
		jerr = json_tokener_get_error(tok);
		if (o == NULL && jerr == json_tokener_continue) {
			json_tokener_free(tok);
			return kc_status_set(st, KC_EPARSE,
			    "JSON: unexpected end of input at offset %zu", len);
		}
		off = len;
	}
	json_tokener_free(tok);
	/* json-c represents a JSON null as NULL, with success. */
	if (o == NULL && jerr != json_tokener_success)
		return kc_status_set(st, KC_EPARSE, "JSON: %s at offset %zu",
		    json_tokener_error_desc(jerr), off);
	for (; off < len; off++) {
		char c = text[off];

		if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
			if (o != NULL)
				json_object_put(o);
			return kc_status_set(st, KC_EPARSE,
			    "JSON: unexpected data after the value at offset %zu", off);
		}
	}
	if (!json_no_literals(o)) {
		json_object_put(o);
		return kc_status_set(st, KC_EPARSE,
		    "JSON: NaN and Infinity are not JSON numbers");
	}
	*ret = o;
	return 0;
}

static struct json_object *
json_walk(const struct json_object *o, va_list ap)
{
	const char *key;
	struct json_object *cur = (struct json_object *)(uintptr_t)o;

	while ((key = va_arg(ap, const char *)) != NULL) {
		if (cur == NULL || !json_object_is_type(cur, json_type_object))
			return NULL;
		if (!json_object_object_get_ex(cur, key, &cur))
			return NULL;
	}
	return cur;
}

struct json_object *
kc_json_getv(const struct json_object *o, ...)
{
	struct json_object *v;
	va_list ap;

	va_start(ap, o);
	v = json_walk(o, ap);
	va_end(ap);
	return v;
}

const char *
kc_json_strv(const struct json_object *o, ...)
{
	struct json_object *v;
	va_list ap;

	va_start(ap, o);
	v = json_walk(o, ap);
	va_end(ap);
	if (v == NULL || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int64_t
kc_json_intv(const struct json_object *o, int64_t def, ...)
{
	struct json_object *v;
	va_list ap;

	va_start(ap, def);
	v = json_walk(o, ap);
	va_end(ap);
	if (v == NULL || !json_object_is_type(v, json_type_int))
		return def;
	return json_object_get_int64(v);
}

/*
 * 'def' is an int: va_start() after a parameter that default argument
 * promotion changes (bool becomes int) is undefined behaviour (C11
 * 7.16.1.4).
 */
bool
kc_json_boolv(const struct json_object *o, int def, ...)
{
	struct json_object *v;
	va_list ap;

	va_start(ap, def);
	v = json_walk(o, ap);
	va_end(ap);
	if (v == NULL || !json_object_is_type(v, json_type_boolean))
		return def != 0;
	return json_object_get_boolean(v);
}

struct json_object *
kc_json_obj_of(const struct json_object *o, const char *key)
{
	struct json_object *v = kc_json_get(o, key);

	return v != NULL && json_object_is_type(v, json_type_object) ? v : NULL;
}

struct json_object *
kc_json_arr_of(const struct json_object *o, const char *key)
{
	struct json_object *v = kc_json_get(o, key);

	return v != NULL && json_object_is_type(v, json_type_array) ? v : NULL;
}

int
kc_json_put(struct json_object *o, const char *key, struct json_object *v)
{
	if (v == NULL)
		return -ENOMEM;
	if (json_object_object_add(o, key, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

int
kc_json_append(struct json_object *a, struct json_object *v)
{
	if (v == NULL)
		return -ENOMEM;
	if (json_object_array_add(a, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

int
kc_json_put_nullable(struct json_object *o, const char *key, struct json_object *v)
{
	if (json_object_object_add(o, key, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

int
kc_json_append_nullable(struct json_object *a, struct json_object *v)
{
	if (json_object_array_add(a, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

int
kc_json_put_null(struct json_object *o, const char *key)
{
	return kc_json_put_nullable(o, key, NULL);
}

struct json_object *
kc_json_ensure_obj(struct json_object *o, const char *key)
{
	struct json_object *v = kc_json_obj_of(o, key);

	if (v != NULL)
		return v;
	if (kc_json_put(o, key, json_object_new_object()) < 0)
		return NULL;
	return kc_json_obj_of(o, key);
}

int
kc_json_set_str(struct json_object *o, const char *key, const char *value)
{
	if (value == NULL) {
		json_object_object_del(o, key);
		return 0;
	}
	return kc_json_put(o, key, json_object_new_string(value));
}

int
kc_json_set_int(struct json_object *o, const char *key, int64_t value)
{
	return kc_json_put(o, key, json_object_new_int64(value));
}

int
kc_json_set_bool(struct json_object *o, const char *key, bool value)
{
	return kc_json_put(o, key, json_object_new_boolean(value));
}

/*
 * Raw values are strings whose serializer prints the string's bytes
 * themselves. The serializer's user data, the address of raw_marker, tells
 * them from strings; json-c's default deep copy refuses user data it does
 * not know, so kc_json_copy() copies with copy_node(), which sets it again.
 */
static const char raw_marker[] = "kc-raw-json";

static int
raw_print(struct json_object *o, struct printbuf *pb, int level, int flags)
{
	(void)level;
	(void)flags;
	return printbuf_memappend(pb, json_object_get_string(o),
	    json_object_get_string_len(o)) < 0 ? -1 : 0;
}

struct json_object *
kc_json_new_raw(const char *text, size_t len)
{
	struct json_object *o;

	if (len > INT_MAX || (o = json_object_new_string_len(text, (int)len)) == NULL)
		return NULL;
	json_object_set_serializer(o, raw_print, (void *)(uintptr_t)raw_marker, NULL);
	return o;
}

bool
kc_json_is_raw(const struct json_object *o)
{
	struct json_object *m = (struct json_object *)(uintptr_t)o;

	return json_object_is_type(m, json_type_string) &&
	    json_object_get_userdata(m) == (const void *)raw_marker;
}

static int
copy_node(struct json_object *src, struct json_object *parent, const char *key,
    size_t index, struct json_object **dst)
{
	int r;

	if ((r = json_c_shallow_copy_default(src, parent, key, index, dst)) < 0 ||
	    !kc_json_is_raw(src))
		return r;
	json_object_set_serializer(*dst, raw_print, (void *)(uintptr_t)raw_marker, NULL);
	return 2;	/* the serializer and its user data are set */
}

struct json_object *
kc_json_copy(const struct json_object *o)
{
	struct json_object *src = (struct json_object *)(uintptr_t)o;
	struct json_object *dst = NULL;

	if (o == NULL)
		return NULL;
	if (json_object_deep_copy(src, &dst, copy_node) < 0)
		return NULL;
	return dst;
}

bool
kc_json_equal(const struct json_object *a, const struct json_object *b)
{
	/* json_object_equal() only reads, despite its non-const signature. */
	return json_object_equal((struct json_object *)(uintptr_t)a,
	    (struct json_object *)(uintptr_t)b) != 0;
}

static bool
equal_numeric(const struct json_object *a, const struct json_object *b, unsigned depth)
{
	enum json_type ta = json_object_get_type(a), tb = json_object_get_type(b);
	struct json_object *ma = (struct json_object *)(uintptr_t)a;
	struct json_object *mb = (struct json_object *)(uintptr_t)b;
	size_t n;

	if (depth > KC_JSON_EQUAL_DEPTH_MAX)
		return false;
	if ((ta == json_type_int || ta == json_type_double) &&
	    (tb == json_type_int || tb == json_type_double)) {
		if (ta == json_type_int && tb == json_type_int)
			return kc_json_equal(a, b);
		return json_object_get_double(ma) == json_object_get_double(mb);
	}
	if (ta != tb)
		return false;
	switch (ta) {
	case json_type_null:
		return true;
	case json_type_boolean:
		return json_object_get_boolean(ma) == json_object_get_boolean(mb);
	case json_type_string:
		n = (size_t)json_object_get_string_len(ma);
		return n == (size_t)json_object_get_string_len(mb) &&
		    memcmp(json_object_get_string(ma), json_object_get_string(mb), n) == 0;
	case json_type_object:
		if (json_object_object_length(ma) != json_object_object_length(mb))
			return false;
		{
			json_object_object_foreach(ma, k, av) {
				struct json_object *bv;

				if (!json_object_object_get_ex(mb, k, &bv) ||
				    !equal_numeric(av, bv, depth + 1))
					return false;
			}
		}
		return true;
	case json_type_array:
		n = json_object_array_length(ma);
		if (n != json_object_array_length(mb))
			return false;
		for (size_t i = 0; i < n; i++)
			if (!equal_numeric(json_object_array_get_idx(ma, i),
			    json_object_array_get_idx(mb, i), depth + 1))
				return false;
		return true;
	default:
		return false;
	}
}

bool
kc_json_equal_numeric(const struct json_object *a, const struct json_object *b)
{
	return equal_numeric(a, b, 0);
}

char *
kc_json_dump(const struct json_object *o, size_t *ret_len)
{
	struct json_object *c = NULL;
	const char *s;
	size_t len;
	char *out;

	/*
	 * json_object_to_json_string_length() caches its output inside the
	 * object it prints. Print a private copy so a frozen tree shared
	 * between threads is never written to.
	 */
	if (o != NULL && (c = kc_json_copy(o)) == NULL)
		return NULL;
	s = json_object_to_json_string_length(c,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	out = s != NULL ? kc_memdup(s, len + 1) : NULL;
	if (c != NULL)
		json_object_put(c);
	if (out != NULL && ret_len != NULL)
		*ret_len = len;
	return out;
}

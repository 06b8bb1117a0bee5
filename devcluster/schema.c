/*
 * schema.c: custom resources against their structural schemas: value
 * validation, pruning, defaulting and schema navigation.
 *
 * kube-apiserver hands a CRD and its custom resources to three pieces of
 * upstream code. CRD validation (apiextensions'
 * pkg/apis/apiextensions/validation) is schema_crd.c's; this file plays
 * the other two on json-c trees, and holds what the schema files share
 * (schema_int.h):
 *
 *   1. k8s.io/kube-openapi's validator for custom resources, with
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
 *   2. Pruning and defaulting (pkg/apiserver/schema/pruning, defaulting),
 *      which change the caller's tree in place, as upstream changes the
 *      decoded object.
 *
 * One idea, so one large file: the walks share the field paths, error
 * lists and value printing defined here.
 *
 * Values inside messages print as Go prints them: strings quoted as
 * strconv.Quote does, floats as %v (shortest, "1e+06"), maps as %#v
 * ("map[string]interface {}{\"a\":1}"). Upstream's dumps of Go structs
 * (the versions list, a whole JSONSchemaProps) cannot be reproduced and
 * print as compact JSON instead.
 *
 * Patterns (the pattern keyword, and formats checked by an expression)
 * are compiled and run by regex.c.
 *
 * Not done: the scale subresource's runtime checks, and the "must result
 * in valid metadata" checks of defaults inside embedded metadata (they
 * are validated as plain values).
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
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/err.h>
#include <kc/hash.h>
#include <kc/json.h>
#include <kc/sbuf.h>
#include <kc/str.h>
#include <kc/validation.h>

#include "regex.h"
#include "schema.h"
#include "schema_int.h"

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
json_string(struct kc_sbuf *b, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;

	kc_sbuf_putc(b, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (c == '"' || c == '\\') {
			kc_sbuf_putc(b, '\\');
			kc_sbuf_putc(b, (char)c);
		} else if (c == '\n')
			kc_sbuf_puts(b, "\\n");
		else if (c == '\r')
			kc_sbuf_puts(b, "\\r");
		else if (c == '\t')
			kc_sbuf_puts(b, "\\t");
		else if (c < 0x20 || c == '<' || c == '>' || c == '&')
			kc_sbuf_printf(b, "\\u%04x", c);
		else
			kc_sbuf_putc(b, (char)c);
	}
	kc_sbuf_putc(b, '"');
}

/* json.Marshal of a value (sorted keys, Go's escaping and floats). */
static void
go_json(struct kc_sbuf *b, const struct json_object *v, unsigned depth)
{
	const char *keys[PRINT_KEYS_MAX];

	if (depth > VALUE_DEPTH_MAX) {
		kc_sbuf_puts(b, "...");
		return;
	}
	switch (jtype(v)) {
	case json_type_null:
		kc_sbuf_puts(b, "null");
		return;
	case json_type_boolean:
		kc_sbuf_puts(b, json_object_get_boolean(mut(v)) ? "true" : "false");
		return;
	case json_type_int:
		kc_sbuf_printf(b, "%lld", (long long)jint(v));
		return;
	case json_type_double:
		kc_sbuf_float(b, jdouble(v), KC_FLOAT_JSON);
		return;
	case json_type_string:
		json_string(b, json_object_get_string(mut(v)),
		    (size_t)json_object_get_string_len(mut(v)));
		return;
	case json_type_array:
		kc_sbuf_putc(b, '[');
		for (size_t i = 0; i < jlen(v); i++) {
			if (i > 0)
				kc_sbuf_putc(b, ',');
			go_json(b, jidx(v, i), depth + 1);
		}
		kc_sbuf_putc(b, ']');
		return;
	case json_type_object: {
		size_t n = sorted_keys(v, keys);

		kc_sbuf_putc(b, '{');
		for (size_t i = 0; i < n; i++) {
			if (i > 0)
				kc_sbuf_putc(b, ',');
			json_string(b, keys[i], strlen(keys[i]));
			kc_sbuf_putc(b, ':');
			go_json(b, jget(v, keys[i]), depth + 1);
		}
		kc_sbuf_putc(b, '}');
		return;
	}
	}
}

/* Go's %#v of a decoded JSON value held in an interface{}. */
static void
go_sharpv(struct kc_sbuf *b, const struct json_object *v, unsigned depth)
{
	const char *keys[PRINT_KEYS_MAX];

	if (depth > VALUE_DEPTH_MAX) {
		kc_sbuf_puts(b, "...");
		return;
	}
	switch (jtype(v)) {
	case json_type_null:
		kc_sbuf_puts(b, "interface {}(nil)");
		return;
	case json_type_boolean:
		kc_sbuf_puts(b, json_object_get_boolean(mut(v)) ? "true" : "false");
		return;
	case json_type_int:
		kc_sbuf_printf(b, "%lld", (long long)jint(v));
		return;
	case json_type_double:
		kc_sbuf_float(b, jdouble(v), KC_FLOAT_G64);
		return;
	case json_type_string:
		kc_sbuf_quote(b, json_object_get_string(mut(v)),
		    (size_t)json_object_get_string_len(mut(v)));
		return;
	case json_type_array:
		kc_sbuf_puts(b, "[]interface {}{");
		for (size_t i = 0; i < jlen(v); i++) {
			if (i > 0)
				kc_sbuf_puts(b, ", ");
			go_sharpv(b, jidx(v, i), depth + 1);
		}
		kc_sbuf_putc(b, '}');
		return;
	case json_type_object: {
		size_t n = sorted_keys(v, keys);

		kc_sbuf_puts(b, "map[string]interface {}{");
		for (size_t i = 0; i < n; i++) {
			if (i > 0)
				kc_sbuf_puts(b, ", ");
			kc_sbuf_quote(b, keys[i], strlen(keys[i]));
			kc_sbuf_putc(b, ':');
			go_sharpv(b, jget(v, keys[i]), depth + 1);
		}
		kc_sbuf_putc(b, '}');
		return;
	}
	}
}

/*
 * A bad value as field.Error's ErrorBody prints it: null as "null",
 * strings quoted, numbers and booleans bare, maps and slices as %#v.
 */
void
go_value(struct kc_sbuf *b, const struct json_object *v)
{
	switch (jtype(v)) {
	case json_type_null:
		kc_sbuf_puts(b, "\"null\"");
		return;
	case json_type_string:
		kc_sbuf_quote(b, json_object_get_string(mut(v)),
		    (size_t)json_object_get_string_len(mut(v)));
		return;
	case json_type_double:
		kc_sbuf_float(b, jdouble(v), KC_FLOAT_G64);
		return;
	default:
		go_sharpv(b, v, 0);
		return;
	}
}

/* Compact JSON, for upstream's dumps of Go structs. 0 or -ENOMEM. */
int
json_dump_value(struct kc_sbuf *b, const struct json_object *v)
{
	char *s;

	if (v == NULL) {
		kc_sbuf_puts(b, "null");
		return 0;
	}
	if ((s = kc_json_dump(v, NULL)) == NULL)
		return -ENOMEM;
	kc_sbuf_puts(b, s);
	kc_free(s);
	return 0;
}

/*
 * Error lists. Internally errors go into a growable list (composite
 * validators keep some and drop others); the caller's fixed list is filled
 * at the end.
 */
void
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
int
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

void
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

void
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
int
fe_required(struct elist *l, const char *field, const char *detail)
{
	char body[MSG_MAX];

	if (detail != NULL && detail[0] != '\0')
		(void)snprintf(body, sizeof(body), "Required value: %s", detail);
	else
		(void)snprintf(body, sizeof(body), "Required value");
	return elist_add_raw(l, "Required", field, body);
}

int
fe_forbidden(struct elist *l, const char *field, const char *detail)
{
	char body[MSG_MAX];

	(void)snprintf(body, sizeof(body), "Forbidden: %s", detail);
	return elist_add_raw(l, "Forbidden", field, body);
}

/* Invalid/TypeInvalid/Duplicate with an already printed value. */
int
fe_valued(struct elist *l, const char *type, const char *field, const char *value,
    const char *detail)
{
	const char *word = strcmp(type, "Duplicate") == 0 ? "Duplicate value" : "Invalid value";
	char body[MSG_MAX];
	struct kc_sbuf b;

	kc_sbuf_init(&b, body, sizeof(body));
	kc_sbuf_printf(&b, "%s: %s", word, value);
	if (detail != NULL && detail[0] != '\0')
		kc_sbuf_printf(&b, ": %s", detail);
	return elist_add_raw(l, type, field, body);
}

int
fe_invalid_str(struct elist *l, const char *field, const char *value, const char *detail)
{
	char v[MSG_MAX];
	struct kc_sbuf b;

	kc_sbuf_init(&b, v, sizeof(v));
	kc_sbuf_quote(&b, value, strlen(value));
	return fe_valued(l, "Invalid", field, v, detail);
}

static int
fe_invalid_json(struct elist *l, const char *field, const struct json_object *value,
    const char *detail)
{
	char v[MSG_MAX];
	struct kc_sbuf b;

	kc_sbuf_init(&b, v, sizeof(v));
	go_value(&b, value);
	return fe_valued(l, "Invalid", field, v, detail);
}

/* field.NotSupported: the supported values quoted and joined. */
static int
fe_not_supported(struct elist *l, const char *field, const char *value_repr,
    const char *const *supported, size_t n)
{
	char body[MSG_MAX];
	struct kc_sbuf b;

	kc_sbuf_init(&b, body, sizeof(body));
	kc_sbuf_printf(&b, "Unsupported value: %s", value_repr);
	if (n > 0) {
		kc_sbuf_puts(&b, ": supported values: ");
		for (size_t i = 0; i < n; i++) {
			if (i > 0)
				kc_sbuf_puts(&b, ", ");
			kc_sbuf_quote(&b, supported[i], strlen(supported[i]));
		}
	}
	return elist_add_raw(l, "NotSupported", field, body);
}

int
fe_not_supported_str(struct elist *l, const char *field, const char *value,
    const char *const *supported, size_t n)
{
	char v[MSG_MAX];
	struct kc_sbuf b;

	kc_sbuf_init(&b, v, sizeof(v));
	kc_sbuf_quote(&b, value, strlen(value));
	return fe_not_supported(l, field, v, supported, n);
}

/*
 * Names (k8s.io/apimachinery/pkg/util/validation)
 */

bool
is_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Copies up to 'max' of the messages in 'v' into msgs[]; returns how many. */
static size_t
valid_copy(const struct kc_valid *v, char msgs[][MSG_MAX], size_t max)
{
	size_t n = KC_MIN(v->n, max);

	for (size_t i = 0; i < n; i++)
		(void)kc_strlcpy(msgs[i], v->msg[i], MSG_MAX);
	return n;
}

/*
 * The messages IsDNS1123Label, IsDNS1123Subdomain and IsDNS1035Label
 * give for 'v': up to two, into msgs[0..1]. Returns how many.
 */
size_t
dns_msgs(enum namekind kind, const char *v, char msgs[2][MSG_MAX])
{
	struct kc_str s = kc_str_from(v);
	struct kc_valid r;

	switch (kind) {
	case NAME_DNS1123_LABEL:
		(void)kc_valid_dns1123_label(s, &r);
		break;
	case NAME_DNS1035_LABEL:
		(void)kc_valid_dns1035_label(s, &r);
		break;
	case NAME_DNS1123_SUBDOMAIN:
	default:
		(void)kc_valid_dns1123_subdomain(s, &r);
		break;
	}
	return valid_copy(&r, msgs, 2);
}

/* The messages joined with "," as the CRD validation prints them. */
bool
dns_joined(enum namekind kind, const char *v, const char *prefix, char *out, size_t size)
{
	char msgs[2][MSG_MAX];
	size_t n = dns_msgs(kind, v, msgs);
	struct kc_sbuf b;

	kc_sbuf_init(&b, out, size);
	kc_sbuf_puts(&b, prefix);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			kc_sbuf_putc(&b, ',');
		kc_sbuf_puts(&b, msgs[i]);
	}
	return n > 0;
}

static int
check_dns(enum namekind kind, const char *field, const char *value, struct schema_errs *errs)
{
	char msgs[2][MSG_MAX], q[MSG_MAX];
	size_t n = dns_msgs(kind, value, msgs);
	struct kc_sbuf b;

	kc_sbuf_init(&b, q, sizeof(q));
	kc_sbuf_quote(&b, value, strlen(value));
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
			struct kc_sbuf b;

			kc_sbuf_init(&b, q, sizeof(q));
			kc_sbuf_quote(&b, generate_name, strlen(generate_name));
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
	struct kc_valid r;

	(void)kc_valid_qualified_name(kc_str_from(v), &r);
	return valid_copy(&r, msgs, 4);
}

/* IsValidLabelValue's messages. */
static size_t
label_value_msgs(const char *v, char msgs[2][MSG_MAX])
{
	struct kc_valid r;

	(void)kc_valid_label_value(kc_str_from(v), &r);
	return valid_copy(&r, msgs, 2);
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
	char *out = NULL;

	if (kc_base64_decode(s, n, KC_BASE64_LINES, &out, NULL, NULL, 0) < 0)
		return false;
	kc_free(out);
	return true;
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
bool
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
	if (regex_run(re, d, l, why, sizeof(why)) != 1)
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

	if (n > 255 || regex_run(re, s, n, why, sizeof(why)) != 1)
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
		r = regex_run(pat, s, n, why, sizeof(why));
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
		return hmix(h, kc_fnv1a64(KC_FNV1A64_INIT, json_object_get_string(mut(v)),
		    (size_t)json_object_get_string_len(mut(v))));
	case json_type_array:
		for (size_t i = 0; i < jlen(v); i++)
			h = hmix(h, jhash(jidx(v, i), depth + 1));
		return h;
	case json_type_object: {
		json_object_object_foreach(mut(v), k, e)
			acc += kc_fnv1a64(KC_FNV1A64_INIT, k, strlen(k)) * (jhash(e, depth + 1) | 1);
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
	struct kc_sbuf b;
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	kc_sbuf_init(&b, body, sizeof(body));
	kc_sbuf_printf(&b, "Invalid value: %s: %s", value, detail);
	vadd(vs, out, "Invalid", body);
}

/* errors.InvalidType with a string value, as field.TypeInvalid. */
static void
vtype(struct vstate *vs, struct elist *out, const char *type, const char *value)
{
	char body[MSG_MAX];
	struct kc_sbuf b;

	kc_sbuf_init(&b, body, sizeof(body));
	kc_sbuf_puts(&b, "Invalid value: ");
	kc_sbuf_quote(&b, value, strlen(value));
	kc_sbuf_printf(&b, ": %s in body must be of type %s: ", vs->name.buf, type);
	kc_sbuf_quote(&b, value, strlen(value));
	vadd(vs, out, "TypeInvalid", body);
}

/* A composite (anyOf...) error: not a Validation, so field.Invalid(fldPath, ""). */
static void
vcomposite(struct vstate *vs, struct elist *out, const char *what, const char *extra)
{
	char body[MSG_MAX];
	struct kc_sbuf b;

	kc_sbuf_init(&b, body, sizeof(body));
	kc_sbuf_puts(&b, "Invalid value: \"\": ");
	kc_sbuf_quote(&b, vs->name.buf, strlen(vs->name.buf));
	kc_sbuf_printf(&b, " %s%s", what, extra);
	if (elist_add_raw(out, "Invalid", vs->base != NULL ? vs->base : "<nil>", body) < 0 &&
	    vs->rc == 0)
		vs->rc = -ENOMEM;
}

static void
repr_value(char *buf, size_t size, const struct json_object *v)
{
	struct kc_sbuf b;

	kc_sbuf_init(&b, buf, size);
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
	struct kc_sbuf b;

	if (n == 0)
		return;
	for (size_t i = 0; i < n; i++)
		if (enum_match(d, jidx(e, i)))
			return;
	repr_value(value, sizeof(value), d);
	kc_sbuf_init(&b, body, sizeof(body));
	kc_sbuf_printf(&b, "Unsupported value: %s: supported values: ", value);
	for (size_t i = 0; i < n; i++) {
		const struct json_object *v = jidx(e, i);
		char one[MSG_MAX];
		struct kc_sbuf ob;

		if (i > 0)
			kc_sbuf_puts(&b, ", ");
		kc_sbuf_init(&ob, one, sizeof(one));
		if (jtype(v) == json_type_string)
			kc_sbuf_puts(&ob, json_object_get_string(mut(v)));
		else
			go_json(&ob, v, 0);
		kc_sbuf_quote(&b, one, strlen(one));
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
		int r = regex_run(pattern, str, len, why, sizeof(why));

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
	struct kc_sbuf b;

	repr_value(val, sizeof(val), d);
	if (jnum(s, "multipleOf", &lim)) {
		kc_sbuf_init(&b, bound, sizeof(bound));
		if (isint && (lim >= 1 || lim <= -1)) {
			int64_t f = go_int64(lim);

			kc_sbuf_printf(&b, "%lld", (long long)f);
			if (f < 0)
				vinvalid(vs, out, bound, "factor MultipleOf declared for %s must be "
				    "positive: %s", vs->name.buf, bound);
			else if (f != 0 && iv % f != 0)
				vinvalid(vs, out, val, "%s in body should be a multiple of %s",
				    vs->name.buf, bound);
		} else {
			kc_sbuf_float(&b, lim, KC_FLOAT_G64);
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

		kc_sbuf_init(&b, bound, sizeof(bound));
		if (isint) {
			int64_t m = go_int64(lim);

			fail = excl ? iv <= m : iv < m;
			kc_sbuf_printf(&b, "%lld", (long long)m);
		} else {
			fail = excl ? dv <= lim : dv < lim;
			kc_sbuf_float(&b, lim, KC_FLOAT_G64);
		}
		if (fail)
			vinvalid(vs, out, val, "%s in body should be greater than %s%s",
			    vs->name.buf, excl ? "" : "or equal to ", bound);
	}
	if (jnum(s, "maximum", &lim)) {
		bool excl = jbool(s, "exclusiveMaximum"), fail;

		kc_sbuf_init(&b, bound, sizeof(bound));
		if (isint) {
			int64_t m = go_int64(lim);

			fail = excl ? iv >= m : iv > m;
			kc_sbuf_printf(&b, "%lld", (long long)m);
		} else {
			fail = excl ? dv >= lim : dv > lim;
			kc_sbuf_float(&b, lim, KC_FLOAT_G64);
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
			struct kc_sbuf b;

			(void)v;
			if (jhas(props, k))
				continue;
			kc_sbuf_init(&b, q, sizeof(q));
			kc_sbuf_quote(&b, k, strlen(k));
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

void
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

void
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
list_map_key_repr(struct kc_sbuf *b, const struct json_object *x, const struct json_object *keys)
{
	const char *names[PRINT_KEYS_MAX];
	size_t n = 0;

	for (size_t i = 0; i < jlen(keys) && n < PRINT_KEYS_MAX; i++)
		if (jtype(jidx(keys, i)) == json_type_string)
			names[n++] = json_object_get_string(mut(jidx(keys, i)));
	if (n > 1)
		qsort(names, n, sizeof(names[0]), key_cmp);
	kc_sbuf_puts(b, "map[string]interface {}{");
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			kc_sbuf_puts(b, ", ");
		kc_sbuf_quote(b, names[i], strlen(names[i]));
		kc_sbuf_putc(b, ':');
		go_sharpv(b, jget(x, names[i]), 0);
	}
	kc_sbuf_putc(b, '}');
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
			struct kc_sbuf b;
			size_t old;

			kc_sbuf_init(&b, val, sizeof(val));
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
int
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

void
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


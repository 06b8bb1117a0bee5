/*
 * schema_int.h: what the schema files share, and no other file may use:
 * schema.c (structural schemas: value validation, pruning, defaulting),
 * schema_crd.c (CustomResourceDefinition validation) and regex.c (CRD
 * patterns).
 *
 * json-c accessors, the bounded string builder (struct kc_sbuf), field paths
 * (struct path), the growable error list (struct elist) with the field
 * error constructors, Go's printing of values, the name checks, and the
 * walks of schema.c that CRD validation runs on a schema's defaults
 * (value validation, embedded resources, pruning). The small helpers are
 * static inline; the others are defined in schema.c.
 */
#ifndef DC_SCHEMA_INT_H
#define DC_SCHEMA_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include <kc/macro.h>
#include <kc/sbuf.h>
#include <kc/str.h>

#include "schema.h"

#define PATH_MAX_LEN	1024		/* field paths while walking */
#define MSG_MAX		2048		/* one message being built */
#define ELIST_MAX	4096		/* errors gathered internally */
#define VALUE_DEPTH_MAX	16		/* nesting printed inside a message */

/* json-c's accessors take non-const pointers but only read. */
static inline struct json_object *
mut(const struct json_object *o)
{
	return (struct json_object *)(uintptr_t)o;
}

static inline enum json_type
jtype(const struct json_object *o)
{
	return json_object_get_type(o);
}

/* The member 'key' of object 'o', or NULL (also for JSON null). */
static inline const struct json_object *
jget(const struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o == NULL || jtype(o) != json_type_object ||
	    !json_object_object_get_ex(mut(o), key, &v))
		return NULL;
	return v;
}

/* Whether 'o' has member 'key', even with a null value. */
static inline bool
jhas(const struct json_object *o, const char *key)
{
	return o != NULL && jtype(o) == json_type_object &&
	    json_object_object_get_ex(mut(o), key, NULL);
}

static inline const char *
jstr(const struct json_object *o, const char *key)
{
	const struct json_object *v = jget(o, key);

	return v != NULL && jtype(v) == json_type_string ? json_object_get_string(mut(v)) :
	    NULL;
}

/* A string member, "" when absent or not a string. */
static inline const char *
jstr0(const struct json_object *o, const char *key)
{
	const char *s = jstr(o, key);

	return s != NULL ? s : "";
}

static inline bool
jbool(const struct json_object *o, const char *key)
{
	const struct json_object *v = jget(o, key);

	return v != NULL && jtype(v) == json_type_boolean && json_object_get_boolean(mut(v));
}

static inline const struct json_object *
jobj(const struct json_object *o, const char *key)
{
	const struct json_object *v = jget(o, key);

	return v != NULL && jtype(v) == json_type_object ? v : NULL;
}

static inline const struct json_object *
jarr(const struct json_object *o, const char *key)
{
	const struct json_object *v = jget(o, key);

	return v != NULL && jtype(v) == json_type_array ? v : NULL;
}

/* The number of members of an object; 0 for anything else. */
static inline size_t
jnkeys(const struct json_object *o)
{
	return o != NULL && jtype(o) == json_type_object ?
	    (size_t)json_object_object_length(mut(o)) : 0;
}

static inline size_t
jlen(const struct json_object *a)
{
	return a != NULL && jtype(a) == json_type_array ? json_object_array_length(mut(a)) :
	    0;
}

/* Item 'i' of an array; NULL past its end or when 'a' is no array (json-c asserts). */
static inline const struct json_object *
jidx(const struct json_object *a, size_t i)
{
	return i < jlen(a) ? json_object_array_get_idx(mut(a), i) : NULL;
}

static inline bool
jisnum(const struct json_object *v)
{
	return v != NULL && (jtype(v) == json_type_int || jtype(v) == json_type_double);
}

static inline double
jdouble(const struct json_object *v)
{
	return json_object_get_double(mut(v));
}

static inline int64_t
jint(const struct json_object *v)
{
	return json_object_get_int64(mut(v));
}

/*
 * Field paths, built as field.Path prints them: "spec" + ".nodes",
 * "[0]", "[key]". Each push returns the old length to restore.
 */
struct path {
	char	 buf[PATH_MAX_LEN];
	size_t	 len;
};

static inline void
path_reset(struct path *p, const char *s)
{
	p->len = kc_strlcpy(p->buf, s != NULL ? s : "", sizeof(p->buf));
	if (p->len >= sizeof(p->buf))
		p->len = sizeof(p->buf) - 1;
}

static inline size_t
path_push(struct path *p, const char *fmt, ...) _printf_(2, 3);

static inline size_t
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
static inline size_t
path_child(struct path *p, const char *name)
{
	return path_push(p, "%s%s", p->len > 0 ? "." : "", name);
}

static inline size_t
path_index(struct path *p, size_t i)
{
	return path_push(p, "[%zu]", i);
}

static inline size_t
path_key(struct path *p, const char *key)
{
	return path_push(p, "[%s]", key);
}

static inline void
path_pop(struct path *p, size_t len)
{
	p->len = len;
	p->buf[len] = '\0';
}

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

enum namekind {
	NAME_DNS1123_LABEL,
	NAME_DNS1123_SUBDOMAIN,
	NAME_DNS1035_LABEL,
};

struct wstate {
	struct path	 p;		/* field.Path */
	struct elist	*out;
	unsigned	 depth;
	int		 rc;
};

struct pstate {
	struct path		 p;		/* "a.b[0].c" */
	struct json_object	*unknown;	/* array of paths, or NULL */
	unsigned		 depth;
	int			 rc;
};

/* schema.c */
void go_value(struct kc_sbuf *b, const struct json_object *v);
int json_dump_value(struct kc_sbuf *b, const struct json_object *v);
void elist_free(struct elist *l);
int elist_move(struct elist *dst, struct elist *src);
void elist_sort_from(struct elist *l, size_t from);
void elist_export(const struct elist *l, struct schema_errs *errs);
int fe_required(struct elist *l, const char *field, const char *detail);
int fe_forbidden(struct elist *l, const char *field, const char *detail);
int fe_valued(struct elist *l, const char *type, const char *field, const char *value,
    const char *detail);
int fe_invalid_str(struct elist *l, const char *field, const char *value, const char *detail);
int fe_not_supported_str(struct elist *l, const char *field, const char *value,
    const char *const *supported, size_t n);
bool is_alnum(char c);
size_t dns_msgs(enum namekind kind, const char *v, char msgs[2][MSG_MAX]);
bool dns_joined(enum namekind kind, const char *v, const char *prefix, char *out, size_t size);
bool fmt_uri(const char *s, size_t n);
void wembedded(struct wstate *w, const struct json_object *x);
void wembedded_walk(struct wstate *w, const struct json_object *x, const struct json_object *s);
int validate_all(const struct json_object *schema, const struct json_object *obj,
    const char *base, bool embedded_root, struct elist *out);
void pnode(struct pstate *ps, struct json_object *x, const struct json_object *s, bool root);

#endif

/*
 * fieldset.h: field sets (FieldsV1) for the field manager
 * (devcluster/fieldset.c); only fieldset.c and fieldmanager.c include it.
 * The public face of both is fieldmanager.h.
 *
 * A set is a struct fs: a sorted tree of path elements (struct pe), each
 * node a member or not. Here are the path elements and the values they
 * are keyed by (structured-merge-diff's order, Go's printing), the set
 * algebra, FieldsV1 trees and raw texts in and out, and the caller-owned
 * cache of decoded and encoded sets (struct fm_cache). Also the small
 * helpers both files use: json-c readers and a bounded text builder.
 */
#ifndef DC_FIELDSET_H
#define DC_FIELDSET_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include <kc/buf.h>
#include <kc/json.h>
#include <kc/macro.h>
#include <kc/sbuf.h>

#include "fieldmanager.h"

#define DISPLAY_MAX		4096		/* a path as messages print it */
#define ERR_MAX			512

/* json-c's readers take non-const pointers but only read. */
static inline struct json_object *
unconst(const struct json_object *o)
{
	return (struct json_object *)(uintptr_t)o;
}

/* A deep copy of 'v' (NULL, JSON null, copies to NULL). */
static inline int
jcopy(const struct json_object *v, struct json_object **ret)
{
	struct json_object *c = NULL;

	if (v != NULL && (c = kc_json_copy(v)) == NULL)
		return -ENOMEM;
	*ret = c;
	return 0;
}

/* Sets 'key' of 'o' to 'v' (owned; NULL is JSON null). */
static inline int
jput(struct json_object *o, const char *key, struct json_object *v)
{
	if (json_object_object_add(o, key, v) != 0) {
		if (v != NULL)
			json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

/* Appends 'v' (owned; NULL is JSON null) to the array 'a'. */
static inline int
jappend(struct json_object *a, struct json_object *v)
{
	if (json_object_array_add(a, v) != 0) {
		if (v != NULL)
			json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

/* Member 'key' of 'o': true when present (then '*ret' may be NULL, null). */
static inline bool
jget(const struct json_object *o, const char *key, struct json_object **ret)
{
	struct json_object *v = NULL;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(unconst(o), key, &v))
		return false;
	*ret = v;
	return true;
}

static inline size_t
jlen(const struct json_object *o)
{
	if (json_object_is_type(o, json_type_object))
		return (size_t)json_object_object_length(unconst(o));
	if (json_object_is_type(o, json_type_array))
		return json_object_array_length(unconst(o));
	return 0;
}

static inline void errf(char *, size_t, const char *, ...) _printf_(3, 4);

/* A message into a caller's buffer, truncated. */
static inline void
errf(char *err, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(err, size, fmt, ap);
	va_end(ap);
}


enum {
	VC_FLOAT, VC_INT, VC_STRING, VC_BOOL, VC_LIST, VC_MAP, VC_NULL,
};

/*
 * One path element. 's' is the field name (FIELD) or the canonical JSON
 * of the key object or value (KEY, VALUE); it points into 'own' when the
 * element owns it, or into someone else's string for the short-lived
 * elements of a walk. 'v' (KEY, VALUE) is a private tree.
 */
struct pe {
	enum fm_pe_type	 type;
	const char	*s;
	char		*own;
	struct json_object *v;
	int64_t		 i;
};

struct fs_node;

struct fs {
	struct fs_node	*v;
	size_t		 n;
	size_t		 cap;
};

struct fs_node {
	struct pe	 pe;
	bool		 member;
	struct fs	 kids;
};

enum { OP_UNION, OP_INTERSECT, OP_DIFF, OP_RDIFF };

typedef int	fs_iter_fn(void *arg, const struct pe *const *path, size_t n);

/* fieldset.c */
int fieldset_vclass(const struct json_object *v);
int fieldset_value_cmp(const struct json_object *a, const struct json_object *b, unsigned depth);
bool fieldset_value_equal(const struct json_object *a, const struct json_object *b, unsigned depth);
int fieldset_gj_string(struct kc_buf *b, const char *s, size_t len);
int fieldset_gj_dump(const struct json_object *v, const char *suffix, char **ret);
void fieldset_pe_free(struct pe *pe);
int fieldset_pe_copy(struct pe *dst, const struct pe *src);
void fieldset_pe_field(struct pe *pe, const char *name);
int fieldset_pe_take_value(struct pe *pe, enum fm_pe_type type, struct json_object *v);
int fieldset_pe_cmp(const struct pe *a, const struct pe *b);
void fieldset_put_pe(struct kc_sbuf *b, const struct pe *pe);
void fieldset_put_path(struct kc_sbuf *b, const struct pe *const *path, size_t n);
int fieldset_sorted_object(const struct json_object *o, struct json_object **ret);
int fieldset_pe_parse(const char *text, struct pe *ret, char *err, size_t errsize);
void fieldset_free(struct fs *s);
void fieldset_node_free(struct fs_node *n);
const struct fs_node *fieldset_get(const struct fs *s, const struct pe *pe);
int fieldset_push(struct fs *s, struct fs_node *node);
int fieldset_insert(struct fs *s, const struct pe *const *path, size_t n);
bool fieldset_empty(const struct fs *s);
size_t fieldset_count(const struct fs *s);
bool fieldset_equal(const struct fs *a, const struct fs *b);
int fieldset_copy(struct fs *dst, const struct fs *src);
int fieldset_op(int op, const struct fs *a, const struct fs *b, struct fs *out);
int fieldset_apply_op(int op, struct fs *a, const struct fs *b);
int fieldset_union_take(struct fs *a, struct fs *b);
int fieldset_iterate(const struct fs *s, const struct pe **stack, size_t depth, fs_iter_fn *fn,
    void *arg);
int fieldset_from_paths(const char *const *paths, struct fs *out);
int fieldset_to_json(const struct fs *s, bool self, struct json_object **ret);
int fieldset_tree_to_raw(struct json_object *t, struct json_object **ret);
int fieldset_decode(const struct json_object *fv, struct fm_cache *cache, struct fs *out,
    char *err, size_t errsize);
int fieldset_to_raw_cached(struct fm_cache *c, const struct fs *set, struct json_object **ret);

#endif

/*
 * Typed json-c accessors and bounded parsing.
 *
 * json-c objects are part of libkc's API on purpose: Kubernetes objects
 * are JSON trees and every module passes them around as such. These
 * helpers read paths without building temporary strings and never abort
 * on a wrong type: a missing key and a value of the wrong type both read
 * as absent.
 *
 *	const char *name = kc_json_str(pod, "metadata", "name");
 *	int64_t gen = kc_json_int(run, -1, "metadata", "generation");
 */
#ifndef KC_JSON_H
#define KC_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/macro.h>

/*
 * Nesting kc_json_parse() and the watch decoder accept. It must exceed
 * what the rest of libkc lets into an object (KC_YAML_DEPTH_MAX and
 * KC_PATCH_DEPTH_MAX, 100) by the envelopes around one: a List's items
 * and a watch event add two levels. Otherwise the client could not read
 * back an object the devcluster accepted.
 */
#define KC_JSON_DEPTH_MAX	128

/*
 * Parses exactly one JSON value from 'len' bytes (trailing white space
 * allowed, anything else is an error). KC_EPARSE with the json-c error and
 * byte offset in 'st' on malformed or over-deep input. '*ret' is a new
 * reference, or NULL for the document "null" (json-c's null).
 */
int	kc_json_parse(const char *text, size_t len, struct json_object **ret,
	    struct kc_status *st) _must_check_;

/*
 * Path lookups. The variadic arguments are object keys, ended by NULL (the
 * macros add it). Returns NULL when any step is missing or not an object.
 * The result is borrowed from 'o'.
 */
struct json_object *kc_json_getv(const struct json_object *o, ...);
#define kc_json_get(o, ...)	kc_json_getv((o), __VA_ARGS__, (const char *)NULL)

/* A string at the path, or NULL when absent or not a string. */
const char	*kc_json_strv(const struct json_object *o, ...);
#define kc_json_str(o, ...)	kc_json_strv((o), __VA_ARGS__, (const char *)NULL)

/* An integer at the path, or 'def' when absent or not an integer. */
int64_t		 kc_json_intv(const struct json_object *o, int64_t def, ...);
#define kc_json_int(o, def, ...) kc_json_intv((o), (def), __VA_ARGS__, (const char *)NULL)

/* A boolean at the path, or 'def' when absent or not a boolean. */
bool		 kc_json_boolv(const struct json_object *o, int def, ...);
#define kc_json_bool(o, def, ...) kc_json_boolv((o), (def), __VA_ARGS__, (const char *)NULL)

/* Typed single-step lookups: NULL when absent or of another type. */
struct json_object *kc_json_obj_of(const struct json_object *o, const char *key);
struct json_object *kc_json_arr_of(const struct json_object *o, const char *key);

/*
 * Returns the object at 'key' of 'o', creating an empty object there when
 * absent (replacing a non-object). NULL on allocation failure.
 */
struct json_object *kc_json_ensure_obj(struct json_object *o, const char *key);

/*
 * Sets 'key' of 'o' to a new string / integer / boolean. 0 or -ENOMEM.
 * A NULL 'value' to kc_json_set_str() removes the key.
 */
int	kc_json_set_str(struct json_object *o, const char *key, const char *value)
	    _must_check_;
int	kc_json_set_int(struct json_object *o, const char *key, int64_t value)
	    _must_check_;
int	kc_json_set_bool(struct json_object *o, const char *key, bool value)
	    _must_check_;

/*
 * Moves 'v' (a reference the caller owns) into 'o' at 'key'. On failure
 * 'v' is released, so "kc_json_put(o, k, json_object_new_…())" never leaks.
 * A NULL 'v' is an allocation failure: -ENOMEM.
 */
int	kc_json_put(struct json_object *o, const char *key, struct json_object *v)
	    _must_check_;

/* Appends 'v' (owned) to the array 'a'; same contract as kc_json_put(). */
int	kc_json_append(struct json_object *a, struct json_object *v) _must_check_;

/*
 * As kc_json_put() and kc_json_append(), except that a NULL 'v' is the
 * JSON value null (json-c's representation of it) and is stored as such.
 * For values copied from or computed out of other trees, which may be
 * null. 0, or -ENOMEM with 'v' released.
 */
int	kc_json_put_nullable(struct json_object *o, const char *key,
	    struct json_object *v) _must_check_;
int	kc_json_append_nullable(struct json_object *a, struct json_object *v)
	    _must_check_;

/* Sets 'key' of 'o' to JSON null. 0 or -ENOMEM. */
int	kc_json_put_null(struct json_object *o, const char *key) _must_check_;

/*
 * A deep copy (new reference) or NULL on allocation failure. Safe on a
 * frozen tree shared between threads: it never writes to 'o'. Raw values
 * (kc_json_new_raw()) stay raw.
 */
struct json_object *kc_json_copy(const struct json_object *o);

/*
 * A raw value: a json-c string holding 'len' bytes of JSON text that
 * json-c prints as they are, unquoted, wherever the value sits in a tree
 * being printed. It stands for a large subtree that is stored and sent but
 * rarely read (every json-c object costs a hash table of several hundred
 * bytes; the text costs its length). The text must be valid JSON from a
 * trusted printer: nothing checks it. Readers see a string; those that
 * want the tree parse the text (kc_json_parse()). NULL on allocation
 * failure or a length over INT_MAX.
 */
struct json_object *kc_json_new_raw(const char *text, size_t len);

/* True if 'o' is a raw value made by kc_json_new_raw() (or a copy of one). */
bool	kc_json_is_raw(const struct json_object *o);

/*
 * Deep equality by value; objects compare without regard to key order.
 * Numbers compare by type too: 1 and 1.0 differ, as they print differently.
 * NULL (JSON null) equals only NULL. Never writes to either tree.
 */
bool	kc_json_equal(const struct json_object *a, const struct json_object *b);

/*
 * Deep equality as JSON defines it (RFC 6902's "test", strategic merge
 * keys): as kc_json_equal(), except that numbers compare by numeric value,
 * so 1 equals 1.0 and 1e0. Integers compare exactly; an integer and a
 * double compare as doubles. Trees nested deeper than
 * KC_JSON_EQUAL_DEPTH_MAX levels compare unequal. Never writes to either
 * tree, so it is safe on frozen shared ones.
 */
#define KC_JSON_EQUAL_DEPTH_MAX	1000
bool	kc_json_equal_numeric(const struct json_object *a, const struct json_object *b);

/*
 * Serializes compactly into a new allocation ('ret_len' may be NULL).
 * Unlike json_object_to_json_string(), never caches output inside 'o', so
 * it is safe on shared trees. NULL on allocation failure.
 */
char	*kc_json_dump(const struct json_object *o, size_t *ret_len) _must_check_;

/* Release helper for _cleanup_: json_object_put() on *p, then NULL. */
static inline void
kc_json_putp(struct json_object **p)
{
	if (*p != NULL)
		json_object_put(*p);
	*p = NULL;
}

#endif

/*
 * Label and field selectors: parse, convert, match and print them exactly
 * as Kubernetes does (k8s.io/apimachinery pkg/labels, pkg/fields and
 * metav1.LabelSelectorAsSelector).
 *
 * The client-side cache filters with them and the devcluster answers
 * ?labelSelector= and ?fieldSelector= with them, so both sides share one
 * implementation and one set of error messages.
 *
 * A label selector is an AND of requirements on an object's labels:
 *
 *	k=v  k==v	k is present and equal to v
 *	k!=v		k is absent or not equal to v
 *	k in (a,b)	k is present and one of a, b
 *	k notin (a,b)	k is absent or none of a, b
 *	k  !k		k is present / absent
 *	k>5  k<5	k is present and its value, as an integer, compares so
 *
 * The empty string selects everything. A nil metav1.LabelSelector selects
 * nothing, which no selector string can express: see
 * kc_label_selector_from_json().
 *
 * A field selector is an AND of f=v, f==v and f!=v terms on field values,
 * where a backslash escapes ',', '=' and '\' in values and a missing field
 * reads as "".
 *
 * Selectors are immutable once built; matching and printing only read, so
 * one selector may be used from several threads at once.
 *
 *	struct kc_label_selector *sel;
 *	if ((r = kc_label_selector_parse("tier in (db, cache),!canary",
 *	    &sel, &st)) < 0)
 *		return r;		(KC_EINVALID, message in st)
 *	if (kc_label_selector_matches(sel, kc_json_get(pod, "metadata", "labels")))
 *		...
 *	sel = kc_label_selector_free(sel);
 */
#ifndef KC_SELECTOR_H
#define KC_SELECTOR_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/macro.h>

/* Longest selector text accepted by the parsers, in bytes. */
#define KC_SELECTOR_MAX		(64 * 1024)

/* Most requirements (or terms) one selector may hold. */
#define KC_SELECTOR_REQS_MAX	1024

/* Most values one requirement of a metav1.LabelSelector may list. */
#define KC_SELECTOR_VALUES_MAX	4096

/* Longest string kc_label_selector_string() builds (-E2BIG past it). */
#define KC_SELECTOR_STRING_MAX	(1024 * 1024)

struct kc_label_selector;
struct kc_field_selector;

/*
 * Label selectors
 */

/*
 * Parses a label selector string as labels.Parse() does. NULL and "" give
 * a selector that matches everything. Requirements are sorted by key
 * (stably), and the values of each are sorted with duplicates removed.
 *
 * On a syntax or validation error, returns KC_EINVALID with upstream's
 * message in 'st' ("unable to parse requirement: ...", "found ',',
 * expected: ..."); text longer than KC_SELECTOR_MAX or with more than
 * KC_SELECTOR_REQS_MAX requirements is KC_EINVALID as well. -ENOMEM on
 * allocation failure. '*ret' is set only on success; free it with
 * kc_label_selector_free().
 */
int	kc_label_selector_parse(const char *text, struct kc_label_selector **ret,
	    struct kc_status *st) _must_check_;

/*
 * Converts a metav1.LabelSelector ({"matchLabels": {...},
 * "matchExpressions": [{"key", "operator", "values"}]}) as
 * metav1.LabelSelectorAsSelector() does:
 *
 *	NULL or JSON null		matches nothing (upstream labels.Nothing())
 *	{} or both parts empty		matches everything
 *
 * Operators are In, NotIn, Exists and DoesNotExist. Keys and values are
 * validated like labels.NewRequirement(): In and NotIn need values, Exists
 * and DoesNotExist must have none. Errors are KC_EINVALID with upstream's
 * message ("values: Invalid value: []string(nil): for 'in', 'notin'
 * operators, values set can't be empty", "\"Foo\" is not a valid label
 * selector operator"); a part of the wrong JSON type is KC_EINVALID too.
 * -ENOMEM on allocation failure. 'ls' is only read.
 */
int	kc_label_selector_from_json(const struct json_object *ls,
	    struct kc_label_selector **ret, struct kc_status *st) _must_check_;

/*
 * Builds the selector that matches exactly the labels of 'set' (a JSON
 * object of strings, such as a Service's spec.selector), validating keys
 * and values as labels.ValidatedSelectorFromSet() does. NULL, JSON null
 * and {} match everything. Errors as for kc_label_selector_from_json().
 */
int	kc_label_selector_from_set(const struct json_object *set,
	    struct kc_label_selector **ret, struct kc_status *st) _must_check_;

/*
 * Whether 'labels' (an object's metadata.labels; NULL means no labels)
 * satisfies every requirement. A label whose JSON value is not a string
 * counts as absent. A NULL selector matches everything. Thread-safe.
 */
bool	kc_label_selector_matches(const struct kc_label_selector *,
	    const struct json_object *labels);

/* The same, reading metadata.labels of the object 'obj'. */
bool	kc_label_selector_matches_obj(const struct kc_label_selector *,
	    const struct json_object *obj);

/*
 * True when the selector has no requirements and so matches everything
 * (labels.Selector.Empty()). False for the match-nothing selector, and
 * true for NULL.
 */
bool	kc_label_selector_is_empty(const struct kc_label_selector *);

/* True for the match-nothing selector of a nil metav1.LabelSelector. */
bool	kc_label_selector_is_nothing(const struct kc_label_selector *);

/*
 * Introspects whether the selector requires 'key' to have one exact value
 * (labels.Selector.RequiresExactMatch()): the first requirement on 'key'
 * is =, == or in with a single value. Sets '*ret_value' (borrowed from the
 * selector) and returns true if so.
 */
bool	kc_label_selector_requires_exact_match(const struct kc_label_selector *,
	    const char *key, const char **ret_value);

/*
 * Upstream's canonical string, as labels.Selector.String() prints it:
 * requirements in key order joined by ",", "!k", "k", "k=v", "k==v",
 * "k!=v", "k>5", "k<5", "k in (a,b)", "k notin (a,b)" with the values of
 * sets sorted. Parsing it again gives the same selector. The empty and the
 * match-nothing selectors both print "" (as upstream): never put the
 * match-nothing selector into a query. '*ret' is a new allocation; -ENOMEM,
 * or -E2BIG past KC_SELECTOR_STRING_MAX.
 */
int	kc_label_selector_string(const struct kc_label_selector *, char **ret)
	    _must_check_;

/* Frees the selector; NULL is fine. Returns NULL. */
struct kc_label_selector *kc_label_selector_free(struct kc_label_selector *);

KC_DEFINE_CLEANUP(struct kc_label_selector, kc_label_selector_free)

/*
 * Field selectors
 */

enum kc_field_op {
	KC_FIELD_EQ,		/* "=" or "==" */
	KC_FIELD_NEQ,		/* "!=" */
};

/*
 * Returns the value of 'field' for the object being matched, or NULL when
 * the object has no such field (which matches as ""). The string must stay
 * valid until the next call.
 */
typedef const char *kc_field_get_fn(void *arg, const char *field);

/*
 * Parses a field selector as fields.ParseSelector() does. NULL and "" match
 * everything. Terms are split at unescaped commas and kept in sorted order;
 * empty terms and terms whose field and value are both empty are dropped.
 * Field names are not checked here: see kc_field_selector_check().
 *
 * Errors are KC_EINVALID with upstream's message ("invalid selector:
 * 'a'; can't understand 'a'", "invalid field selector: invalid escape
 * sequence: \x"); text longer than KC_SELECTOR_MAX or with more than
 * KC_SELECTOR_REQS_MAX terms is KC_EINVALID too. -ENOMEM on allocation
 * failure. '*ret' is set only on success.
 */
int	kc_field_selector_parse(const char *text, struct kc_field_selector **ret,
	    struct kc_status *st) _must_check_;

/*
 * Whether every term holds, reading field values through 'get'. A NULL
 * selector matches everything. Thread-safe if 'get' is.
 */
bool	kc_field_selector_matches(const struct kc_field_selector *,
	    kc_field_get_fn *get, void *arg);

/*
 * The same, reading each field as a dotted path into the JSON object 'obj'
 * ("metadata.name", "spec.nodeName", "status.phase") with
 * kc_field_json_lookup(). Fields that are not plain paths (an Event's
 * "source") need a kc_field_get_fn of the caller's.
 */
bool	kc_field_selector_matches_json(const struct kc_field_selector *,
	    const struct json_object *obj);

/*
 * Reads the dotted path 'path' in 'obj' as a field selector value: a
 * string as itself, a boolean as "true" or "false", and an integer in
 * decimal, formatted into 'buf' (NULL if it does not fit). Returns NULL
 * when a step is missing or the value is of another type (null, a number
 * with a fraction, an object, an array). The result is borrowed from 'obj',
 * from 'buf' or is static. Never writes to 'obj'.
 */
const char *kc_field_json_lookup(const struct json_object *obj, const char *path,
	    char *buf, size_t size);

/*
 * Returns 0 when every term's field is one of 'supported' (a NULL-ended
 * list), else KC_EINVALID with "field label not supported: <field>" in
 * 'st' for the first that is not; the devcluster answers it with 400
 * BadRequest, as upstream does.
 */
int	kc_field_selector_check(const struct kc_field_selector *,
	    const char *const *supported, struct kc_status *st) _must_check_;

/* The number of terms; 0 for NULL. */
size_t	kc_field_selector_count(const struct kc_field_selector *);

/*
 * Term 'i' (in the selector's sorted order): its field, operator and
 * unescaped value, borrowed from the selector; any out-pointer may be NULL.
 * Returns false when 'i' is out of range.
 */
bool	kc_field_selector_term(const struct kc_field_selector *, size_t i,
	    const char **ret_field, enum kc_field_op *ret_op,
	    const char **ret_value);

/* True when the selector has no terms and so matches everything. */
bool	kc_field_selector_is_empty(const struct kc_field_selector *);

/*
 * Whether some term requires 'field' to equal one value
 * (fields.Selector.RequiresExactMatch()): the first "=" term on 'field'.
 * Sets '*ret_value' (borrowed) and returns true if so.
 */
bool	kc_field_selector_requires_exact_match(const struct kc_field_selector *,
	    const char *field, const char **ret_value);

/*
 * Upstream's canonical string: terms in the selector's order, "f=v" or
 * "f!=v", with '\', ',' and '=' in values escaped, joined by ",". '*ret'
 * is a new allocation; -ENOMEM on failure, -E2BIG past
 * KC_SELECTOR_STRING_MAX.
 */
int	kc_field_selector_string(const struct kc_field_selector *, char **ret)
	    _must_check_;

/* Frees the selector; NULL is fine. Returns NULL. */
struct kc_field_selector *kc_field_selector_free(struct kc_field_selector *);

KC_DEFINE_CLEANUP(struct kc_field_selector, kc_field_selector_free)

#endif

/*
 * jsonpath.h: the Kubernetes JSONPath template language
 * (k8s.io/client-go/util/jsonpath), as the apiserver runs it for a CRD's
 * additionalPrinterColumns and kubectl runs it for -o jsonpath.
 *
 * A template is text with actions in braces: "{.spec.nodes}",
 * "{.status.conditions[?(@.type==\"Ready\")].status}", "name: {.a}".
 * jsonpath_parse() compiles it once into a program; jsonpath_find()
 * evaluates the program against any number of documents. A program is
 * immutable after parsing, so evaluations never interfere.
 *
 * Evaluation gives one list of values per top-level node of the template
 * (a text run or an action; a range block gives one list per item and
 * per action inside it), exactly as JSONPath.FindResults() does. Values
 * point into the document or into the program: keep both alive while the
 * results are in use.
 *
 * This is a pure module: no globals, no logging, no event loop.
 */
#ifndef DC_JSONPATH_H
#define DC_JSONPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <kc/buf.h>
#include <kc/err.h>
#include <kc/macro.h>
#include <kc/str.h>

/* Longest template accepted, in bytes. */
#define JSONPATH_TEXT_MAX	(16 * 1024)

/* Deepest nesting of unions, quoted keys and filter sides in a template. */
#define JSONPATH_DEPTH_MAX	16

/* Most values one evaluation step (and one result list) may hold. */
#define JSONPATH_VALUES_MAX	(64 * 1024)

/* Most result lists one evaluation may produce (range blocks multiply). */
#define JSONPATH_LISTS_MAX	(64 * 1024)

/* Longest text jsonpath_print() and jsonpath_execute() build. */
#define JSONPATH_PRINT_MAX	(4 * 1024 * 1024)

/* jsonpath_find() flags. */
#define JSONPATH_ALLOW_MISSING	0x1	/* missing keys give no value, not an error */

/* What a value is; Go's reflect kind of the same value in brackets. */
enum jsonpath_kind {
	JSONPATH_JSON,		/* a value of the document; NULL is JSON null */
	JSONPATH_INT,		/* an integer literal of the template [int] */
	JSONPATH_FLOAT,		/* a decimal literal of the template [float64] */
	JSONPATH_BOOL,		/* true or false in the template [bool] */
	JSONPATH_TEXT,		/* template text or a quoted string [string] */
	JSONPATH_BYTE,		/* a byte of a string, from * or .. [uint8] */
};

struct jsonpath_value {
	enum jsonpath_kind	 kind;
	union {
		struct json_object	*json;	/* borrowed from the document */
		int64_t			 i;
		double			 f;
		bool			 b;
		struct kc_str		 text;	/* borrowed from the program */
		uint8_t			 byte;
	} v;
};

struct jsonpath_list {
	struct jsonpath_value	*vals;
	size_t			 n;
};

struct jsonpath_results {
	struct jsonpath_list	*lists;
	size_t			 n;
	size_t			 cap;	/* lists allocated */
};

struct jsonpath;

/*
 * Compiles the template 'text' (NUL-terminated, at most JSONPATH_TEXT_MAX
 * bytes) as jsonpath.Parse() does. Fields end at white space, '.', ',',
 * '[', ']', '$', '@', '{' or '}' unless escaped with a backslash (the
 * backslashes are dropped: ".labels.a\.b/c" is the key "a.b/c");
 * ['key'] is parsed as ".key", so ['a.b'] is two keys, as upstream; [n],
 * [-n], [a:b:c], [*], unions [0,2] and ['a','b'], filters [?(@.k==v)]
 * with ==, !=, <, >, <=, >= or none (exists), .. and .*, quoted strings
 * with Go escapes, numbers, true/false, and range/end blocks.
 *
 * Errors are KC_EINVALID with upstream's message in 'st' ("unclosed
 * action", "unterminated array", "invalid array index x", "unrecognized
 * character in action: U+0021 '!'", ...); -ENOMEM on allocation failure.
 * Unknown identifiers and filter operators are accepted here and fail at
 * evaluation, as upstream. '*ret' is set only on success; free it with
 * jsonpath_free().
 */
int	jsonpath_parse(const char *text, struct jsonpath **ret, struct kc_status *st)
	    _must_check_;

/*
 * Compiles a CRD printer column's jsonPath as the apiserver's table
 * convertor does: the path wrapped in braces, "{" path "}". Same errors.
 */
int	jsonpath_parse_column(const char *path, struct jsonpath **ret,
	    struct kc_status *st) _must_check_;

/* Frees a program; NULL is fine. Returns NULL. */
struct jsonpath *jsonpath_free(struct jsonpath *);

KC_DEFINE_CLEANUP(struct jsonpath, jsonpath_free)

/*
 * Evaluates the program against 'doc' (NULL is JSON null) as
 * JSONPath.FindResults() does and fills '*ret' (free it with
 * jsonpath_results_free()). With JSONPATH_ALLOW_MISSING a missing key
 * yields nothing; without it, "<key> is not found". Other errors are
 * KC_EINVALID with upstream's message: "array index out of bounds: index
 * 3, length 1", "<x> is not array or slice", "can only compare one element
 * at a time", "unrecognized filter operator =~", "unrecognized identifier
 * x", "not in range, nothing to end", comparisons of unlike types. -E2BIG
 * past JSONPATH_VALUES_MAX or JSONPATH_LISTS_MAX, -ENOMEM. '*ret' is set
 * only on success. Only reads 'jp' and 'doc': one program may be
 * evaluated from several threads at once.
 */
int	jsonpath_find(const struct jsonpath *jp, const struct json_object *doc,
	    unsigned flags, struct jsonpath_results *ret, struct kc_status *st)
	    _must_check_;

/* Frees the lists of a result and empties it. */
void	jsonpath_results_free(struct jsonpath_results *);

/*
 * Appends 'n' values as JSONPath.PrintResults() writes them: objects and
 * arrays as compact JSON (encoding/json: keys sorted, <, > and & escaped),
 * strings as they are, numbers as Go's fmt prints them ("1.5", "1e+06"),
 * JSON null as "<no value>", values separated by one space. -E2BIG past
 * JSONPATH_PRINT_MAX or the buffer's own ceiling, -ENOMEM; 'out' is freed
 * on failure, as every kc_buf append does.
 */
int	jsonpath_print(const struct jsonpath_value *vals, size_t n, struct kc_buf *out)
	    _must_check_;

/*
 * JSONPath.Execute(): evaluates and prints every list into 'out'. Errors
 * of jsonpath_find() and jsonpath_print().
 */
int	jsonpath_execute(const struct jsonpath *jp, const struct json_object *doc,
	    unsigned flags, struct kc_buf *out, struct kc_status *st) _must_check_;

/*
 * Appends 'o' as Go's json.Marshal() writes an unstructured value: compact,
 * object keys sorted bytewise, strings escaped as encoding/json does,
 * integers in decimal, floats in the shortest form ('e' notation below
 * 1e-6 and from 1e21). Errors as jsonpath_print().
 */
int	jsonpath_json_marshal(const struct json_object *o, struct kc_buf *out)
	    _must_check_;

#endif

/*
 * YAML to json-c, as Kubernetes reads YAML.
 *
 * Kubernetes decodes YAML by converting it to JSON (sigs.k8s.io/yaml) with
 * YAML 1.2 core-schema scalar rules: plain true/false, null/~/empty,
 * integers and floats become typed values; quoted scalars always stay
 * strings; yes/no/on/off and other YAML 1.1 booleans stay strings. Map
 * keys become strings. Anchors and aliases are expanded; merge keys
 * ("<<") are honoured. Multi-document streams give one value per document
 * ("---" separated; empty documents are skipped, as kubectl does).
 *
 * Numbers follow go-yaml, the parser under sigs.k8s.io/yaml: 0x1F, 0o17,
 * 0b101 and 0644 (octal, 420) are integers and underscores are dropped
 * (1_000 is 1000); an integer past int64 is a uint64 up to UINT64_MAX,
 * then a float if it is decimal and a string if not. Floats are json-c
 * doubles that serialize as Go's encoding/json would ("0.1", "1e-7").
 * .inf, -.inf and .nan fail with KC_EPARSE: JSON cannot hold them, and
 * sigs.k8s.io/yaml fails on them too. Timestamps stay strings. A typed
 * key becomes the string Go gives it (0x10 -> "16", True -> "true"); a
 * null key is an error. lib/yaml.c's header lists every rule, and the tags
 * (!!str, !!int, !!float, !!bool, !!null, !!binary, !!map, !!seq) honoured.
 *
 * Input is untrusted: size, nesting depth and alias expansion are bounded,
 * and errors say what is wrong with the line and column (1-based).
 */
#ifndef KC_YAML_H
#define KC_YAML_H

#include <stddef.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/macro.h>

#define KC_YAML_SIZE_MAX	(16u << 20)	/* input bytes */
#define KC_YAML_DEPTH_MAX	100		/* nesting */
#define KC_YAML_NODES_MAX	(1u << 20)	/* values, aliases expanded */

/*
 * Limits; a zero field takes the default. Depth counts nested mappings
 * and sequences as the YAML writes them, aliases expanded (a merge value
 * counts too). Nodes count every scalar (keys included), mapping and
 * sequence, over the whole stream, with each alias counting as the nodes
 * of what it refers to: this is what bounds a "billion laughs" document.
 * Input larger than INT32_MAX bytes is refused whatever max_size says.
 * A max_depth in the thousands or more lets json-c's recursive functions
 * (free, copy, print) run deep on the caller's stack.
 */
struct kc_yaml_opts {
	size_t		 max_size;	/* 0: KC_YAML_SIZE_MAX */
	unsigned	 max_depth;	/* 0: KC_YAML_DEPTH_MAX */
	size_t		 max_nodes;	/* 0: KC_YAML_NODES_MAX */
};

/*
 * Parses a YAML stream (UTF-8, or UTF-16 with a byte-order mark). On
 * success *ret is a new json-c array with one element per non-empty
 * document (possibly none); a document that holds "null" or "~" is a
 * NULL element, json-c's JSON null. Every value in the tree is its own:
 * aliases are deep copies, so the caller may modify any part of it.
 *
 * On failure *ret is untouched and the result is KC_EPARSE (bad YAML, a
 * non-scalar or null map key, a duplicate key, an unknown alias, a tag
 * that does not fit its value, an infinity or NaN), -E2BIG (a limit
 * passed), -EINVAL (NULL text with a non-zero length) or -ENOMEM, with
 * "line L, column C: what" in st->message. 'opts' and 'st' may be NULL.
 * 'text' need not be NUL-terminated and may be NULL when 'len' is 0.
 *
 * Thread-safe: no shared state; numbers are read in the C locale
 * whatever the thread's locale is.
 */
int	kc_yaml_parse(const char *text, size_t len, const struct kc_yaml_opts *opts,
	    struct json_object **ret, struct kc_status *st) _must_check_;

/*
 * Parses a stream that must hold exactly one document; KC_EPARSE ("expected
 * one YAML document, found N") otherwise. *ret is a new reference to that
 * document's value, NULL for a null document. Errors as kc_yaml_parse().
 */
int	kc_yaml_parse_one(const char *text, size_t len, const struct kc_yaml_opts *opts,
	    struct json_object **ret, struct kc_status *st) _must_check_;

/*
 * Writes a json-c value as block-style YAML (for kubectl-like output and
 * for tests), keys in the object's order, ending in a newline. Strings
 * that a YAML 1.2 or 1.1 reader would take for another type ("true",
 * "123", "null", "", "yes", "2001-12-14") are double-quoted; multi-line
 * strings use literal block style ("|"); bytes that are not UTF-8 become
 * U+FFFD, as in Go's JSON. Doubles keep a decimal point or exponent so
 * they read back as floats; infinities and NaN come out as .inf, -.inf
 * and .nan. kc_yaml_parse_one() of the output gives a tree equal to 'o'
 * (kc_json_equal()) whenever 'o' holds valid UTF-8 and finite numbers.
 *
 * Returns an allocation (free with kc_free()) with its length in
 * *ret_len (which may be NULL), or NULL on -ENOMEM, leaving *ret_len
 * untouched. Never writes to 'o', so it is safe on a shared frozen tree.
 */
char	*kc_yaml_dump(const struct json_object *o, size_t *ret_len) _must_check_;

#endif

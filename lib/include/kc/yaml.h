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

struct kc_yaml_opts {
	size_t		 max_size;	/* 0: KC_YAML_SIZE_MAX */
	unsigned	 max_depth;	/* 0: KC_YAML_DEPTH_MAX */
	size_t		 max_nodes;	/* 0: KC_YAML_NODES_MAX */
};

/*
 * Parses a YAML stream. On success *ret is a new json-c array with one
 * element per non-empty document (possibly none). On failure returns
 * KC_EPARSE (bad YAML, a non-scalar map key, duplicate keys, an unknown
 * alias), -E2BIG (a limit passed) or -ENOMEM, with "line L, column C:
 * what" in st->message. 'opts' may be NULL.
 */
int	kc_yaml_parse(const char *text, size_t len, const struct kc_yaml_opts *opts,
	    struct json_object **ret, struct kc_status *st) _must_check_;

/*
 * Parses a stream that must hold exactly one document; KC_EPARSE ("expected
 * one YAML document, found N") otherwise.
 */
int	kc_yaml_parse_one(const char *text, size_t len, const struct kc_yaml_opts *opts,
	    struct json_object **ret, struct kc_status *st) _must_check_;

/*
 * Writes a json-c value as block-style YAML (for kubectl-like output and
 * for tests). Strings that would read back as another type are quoted.
 * Returns an allocation (free with kc_free()) or NULL on -ENOMEM.
 */
char	*kc_yaml_dump(const struct json_object *o, size_t *ret_len) _must_check_;

#endif

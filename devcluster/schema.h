/*
 * schema.h: CustomResourceDefinition structural schemas, as kube-apiserver's
 * apiextensions-apiserver applies them (devcluster/schema.c).
 *
 * A pure module: json-c trees in, json-c trees and field errors out. It
 * keeps no state and never logs. The core calls it at these points:
 *
 *	CRD create/update	schema_crd_default(), then schema_crd_validate();
 *				422 with the collected causes when it says
 *				KC_EINVALID, 400 with st->message for KC_EBADREQUEST.
 *	CR write		schema_crd_version_schema() for the request's
 *				version, then on the decoded object:
 *				schema_prune() (unknown fields: fieldValidation),
 *				schema_default(), schema_validate() (422).
 *	CR read			schema_default() on what storage returns.
 *	server-side apply	schema_find()/schema_child()/schema_items() and
 *				schema_list_type() for list and map semantics.
 *
 * Field errors are collected into a caller-owned struct schema_errs, in
 * kube-apiserver's order, each already printed as k8s.io/apimachinery's
 * field.Error prints itself: 'field' is the path ("spec.nodes",
 * "spec.versions[0].schema.openAPIV3Schema.properties[spec].type") and
 * 'body' the rest ("Invalid value: 0: spec.nodes in body should be greater
 * than or equal to 1"); the Status cause reason is "FieldValue" + 'type'.
 * Every function that takes a struct schema_errs appends to it (it is
 * never reset), so one list can gather the errors of several checks; a
 * NULL list only learns the verdict.
 *
 * Nothing here keeps state, logs, or touches a tree it was given as
 * const; functions are thread-safe on distinct arguments (patterns are
 * matched under a thread-local uselocale()).
 */
#ifndef DC_SCHEMA_H
#define DC_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/macro.h>

/*
 * Nesting bound for schemas and objects: schema levels for CRDs (each
 * properties/items/additionalProperties/anyOf... step is one level), and
 * JSON levels for the objects walked under them.
 */
#define SCHEMA_DEPTH_MAX	64
#define SCHEMA_ERRS_MAX		32	/* field errors kept in one list */
#define SCHEMA_FIELD_MAX	256
#define SCHEMA_BODY_MAX		768

/* One field error, as field.Error prints it: "<field>: <body>". */
struct schema_err {
	/*
	 * "Required", "Invalid", "TypeInvalid", "NotSupported", "Forbidden",
	 * "Duplicate", "TooLong" or "TooMany" (a static string): the cause
	 * reason is "FieldValue" followed by it.
	 */
	const char	*type;
	char		 field[SCHEMA_FIELD_MAX];	/* may be "<nil>", as upstream */
	char		 body[SCHEMA_BODY_MAX];		/* "Required value", ... */
};

/*
 * A caller-owned list of field errors; zero it before the first use
 * ("struct schema_errs errs = { 0 };"). Errors past SCHEMA_ERRS_MAX are
 * counted in 'dropped' and set 'truncated'. Long fields and bodies are
 * cut to fit. No allocation: it may live on the stack (about 32 KiB).
 */
struct schema_errs {
	size_t			 n;
	size_t			 dropped;
	bool			 truncated;
	struct schema_err	 items[SCHEMA_ERRS_MAX];
};

/* Appends one error (printf-style body); a full list counts it as dropped. */
void	 schema_errs_add(struct schema_errs *, const char *type, const char *field,
	    const char *fmt, ...) _printf_(4, 5);

/* "<field>: <body>" (or the body alone for an empty field) into 'buf'. */
void	 schema_err_string(const struct schema_err *, char *buf, size_t size);

/*
 * CustomResourceDefinitions (apiextensions.k8s.io/v1)
 */

/*
 * Applies the defaults kube-apiserver sets on a v1 CRD before validating
 * it: spec.conversion {strategy: None} when absent, and port 443 on a
 * conversion webhook service without one. Mutates 'crd' (which the caller
 * owns). 0 or -ENOMEM (the tree may then hold some of the defaults).
 */
int	 schema_crd_default(struct json_object *crd) _must_check_;

/*
 * Validates a CRD as kube-apiserver does on create ('old' NULL) and on
 * update ('old' is the stored CRD: group and names.plural may not change,
 * nor scope and names.kind once old's Established condition is True).
 * Covers metadata.name (<plural>.<group>, DNS-1123 subdomain), the
 * api-approved.kubernetes.io annotation for *.k8s.io and *.kubernetes.io
 * groups, group, scope, names (plural, singular, kind, listKind,
 * shortNames, categories), versions (DNS-1035 names, unique, exactly one
 * storage: true, deprecationWarning), schemas (required; structural;
 * allowed keywords; list and map types; defaults valid and pruned;
 * patterns compile), subresources (status, scale paths), printer columns
 * and conversion (strategy, webhook url or service, review versions).
 *
 * As upstream converts a v1 CRD to its internal form before validating,
 * schemas, subresources and printer columns that are identical in every
 * version are reported under spec.validation.openAPIV3Schema,
 * spec.subresources and spec.additionalPrinterColumns[i]; different ones
 * under spec.versions[i].
 *
 * Returns 0 when valid, KC_EINVALID after appending the field errors to
 * 'errs' (422), KC_EBADREQUEST when a field has the wrong JSON type (the
 * Go decoder's message in 'st': a 400 "cannot be handled as a
 * CustomResourceDefinition"), -E2BIG when a schema nests deeper than
 * SCHEMA_DEPTH_MAX (message in 'st'), or -ENOMEM. 'st' may be NULL. Call
 * schema_crd_default() first. Does not touch status (the core sets it).
 */
int	 schema_crd_validate(const struct json_object *crd, const struct json_object *old,
	    struct schema_errs *errs, struct kc_status *st) _must_check_;

/* The entry of spec.versions named 'version', or NULL. Borrowed from 'crd'. */
const struct json_object *schema_crd_version(const struct json_object *crd,
	    const char *version);

/*
 * The openAPIV3Schema of 'version' (spec.versions[].schema.openAPIV3Schema;
 * v1 CRDs have no top-level schema), or NULL. Borrowed from 'crd'.
 */
const struct json_object *schema_crd_version_schema(const struct json_object *crd,
	    const char *version);

/* The name of the version with storage: true, or NULL. Borrowed. */
const char *schema_crd_storage_version(const struct json_object *crd);
/*
 * A JSON array of strings as Go's %#v prints a []string: `[]string{"a",
 * "b"}`, `[]string(nil)` for NULL. Cut to 'size'.
 */
void	 schema_crd_strings_repr(char *buf, size_t size, const struct json_object *a);

/*
 * Custom resources. 'schema' is an openAPIV3Schema that passed
 * schema_crd_validate(); a NULL schema accepts and keeps everything.
 */

/*
 * Validates 'obj' as kube-apiserver validates a custom resource against
 * its schema (k8s.io/kube-openapi's validator and apiextensions' error
 * conversion, then x-kubernetes-embedded-resource objects, then
 * x-kubernetes-list-type set and map uniqueness). Keywords: type (integer
 * also takes a whole double; number takes both), nullable, enum, minimum,
 * maximum, exclusiveMinimum, exclusiveMaximum, multipleOf, minLength and
 * maxLength (in characters), pattern, format (see schema.c), minItems,
 * maxItems, uniqueItems, minProperties, maxProperties, required,
 * properties, additionalProperties (false or a schema), allOf, anyOf,
 * oneOf, not, x-kubernetes-int-or-string, -preserve-unknown-fields,
 * -embedded-resource and -list-type/-list-map-keys.
 *
 * Root metadata (name, labels...) is not checked here: the core validates
 * ObjectMeta for every kind (schema_check_object_name() helps). Returns 0
 * when valid, KC_EINVALID after appending errors, -E2BIG past
 * SCHEMA_DEPTH_MAX, or -ENOMEM. Never modifies 'obj'.
 */
int	 schema_validate(const struct json_object *schema, const struct json_object *obj,
	    struct schema_errs *errs) _must_check_;

/*
 * Prunes 'obj' in place (the caller owns it; never pass a shared or
 * frozen tree): drops every field the schema does not specify, except
 * under x-kubernetes-preserve-unknown-fields, and apiVersion, kind and
 * metadata at the root and in x-kubernetes-embedded-resource objects;
 * unknown ObjectMeta fields in embedded metadata are dropped too. When
 * 'ret_unknown' is not NULL it gets a new json array of the dropped
 * paths, sorted ("spec.x", "spec.env[0].y"), for fieldValidation (Strict:
 * 400 with `unknown field "spec.x"`; Warn: one warning each). 0, -E2BIG
 * past SCHEMA_DEPTH_MAX, or -ENOMEM; on failure 'obj' may be partly
 * pruned and '*ret_unknown' is untouched.
 */
int	 schema_prune(const struct json_object *schema, struct json_object *obj,
	    struct json_object **ret_unknown) _must_check_;

/*
 * Defaults 'obj' in place (the caller owns it), as upstream: first drops
 * null values of fields that are neither nullable nor defaulted, then sets
 * each absent (or non-nullable null) property that has a default to a
 * copy of it, wherever its parent object exists, inside array items and
 * additionalProperties too, and descends into the result. 0, -E2BIG or
 * -ENOMEM (then 'obj' may be partly defaulted).
 */
int	 schema_default(const struct json_object *schema, struct json_object *obj)
	    _must_check_;

/*
 * Schema navigation, for server-side apply. All results are borrowed from
 * the schema and NULL when there is nothing to say.
 */

/* The schema of field 'key' of an object: properties[key], else a schema
 * in additionalProperties. */
const struct json_object *schema_child(const struct json_object *schema, const char *key);

/* The schema of an array's items. */
const struct json_object *schema_items(const struct json_object *schema);

/*
 * The schema at a field path below 'root': dot-separated keys, "[]" or
 * "[N]" after a key for array items ("spec.env[].name",
 * "spec.resources.limits"). An empty path gives 'root'.
 */
const struct json_object *schema_find(const struct json_object *root, const char *path);

/*
 * x-kubernetes-list-type of an array schema: "atomic" (also when absent),
 * "set" or "map"; NULL when 'schema' is not an array schema. For "map",
 * '*ret_keys' (may be NULL) gets x-kubernetes-list-map-keys.
 */
const char *schema_list_type(const struct json_object *schema,
	    const struct json_object **ret_keys);

/* x-kubernetes-map-type of an object schema: "granular" or "atomic". */
const char *schema_map_type(const struct json_object *schema);

/*
 * Names, with k8s.io/apimachinery's messages, appended to 'errs' as
 * Invalid errors on 'field'. Each returns the number of errors added.
 */

/* ObjectMeta name rules for custom resources: name or generateName
 * required; a DNS-1123 subdomain (generateName checked as a prefix). */
int	 schema_check_object_name(const char *name, const char *generate_name,
	    struct schema_errs *errs);
int	 schema_check_dns1123_subdomain(const char *field, const char *value,
	    struct schema_errs *errs);
int	 schema_check_dns1123_label(const char *field, const char *value,
	    struct schema_errs *errs);
int	 schema_check_dns1035_label(const char *field, const char *value,
	    struct schema_errs *errs);

#endif

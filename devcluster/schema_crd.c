/*
 * schema_crd.c: CustomResourceDefinition validation, as apiextensions'
 * pkg/apis/apiextensions/validation does it: names, versions,
 * subresources, printer columns, conversion, and the openAPIV3Schema
 * rules: the allowed keywords, list and map types, defaults, and the
 * structural-schema invariants of pkg/apiserver/schema (every node has a
 * type unless it is int-or-string or preserves unknown fields;
 * anyOf/allOf/oneOf/not only restrict values; metadata at the root only
 * restricts name and generateName...). A v1 CRD is first converted to the
 * internal type upstream, which moves a schema, subresources or printer
 * columns that every version shares to the top level, so its errors read
 * "spec.validation.openAPIV3Schema..." then; schema_crd_validate()
 * reproduces that. schema_crd_default() sets the defaults kube-apiserver
 * sets on a CRD first.
 *
 * One idea, so one large file: each part of a CRD has its checks here, in
 * the order upstream runs them. The checks on a schema's defaults reuse
 * schema.c's value validation and pruning (schema_int.h); pattern
 * keywords are compiled by regex.c. Go's decoder errors for mistyped CRD
 * fields are reproduced for the usual cases, not for every path through
 * JSONSchemaProps' custom decoders. Not done: CEL (x-kubernetes-validations
 * rules are checked for form, never compiled or run), selectableFields,
 * status.acceptedNames and storedVersions (the core owns CRD status).
 *
 * Every input is untrusted: recursion stops at SCHEMA_DEPTH_MAX (-E2BIG)
 * and error lists are bounded. The module keeps no state and never logs.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/str.h>

#include "regex.h"
#include "schema.h"
#include "schema_int.h"

/*
 * CustomResourceDefinition validation.
 */

struct cstate {
	struct elist	 out;
	struct path	 p;		/* field.Path of the current check */
	int		 rc;
};

static void
crc(struct cstate *cs, int r)
{
	if (r < 0 && cs->rc == 0)
		cs->rc = r;
}

/* Pushes field.Path's Child(name); the caller restores with path_pop(). */
#define CHILD(cs, name)	path_child(&(cs)->p, (name))

static void
c_required(struct cstate *cs, const char *child, const char *detail)
{
	size_t old = child != NULL ? CHILD(cs, child) : cs->p.len;

	crc(cs, fe_required(&cs->out, cs->p.buf, detail));
	path_pop(&cs->p, old);
}

static void
c_forbidden(struct cstate *cs, const char *child, const char *detail)
{
	size_t old = child != NULL ? CHILD(cs, child) : cs->p.len;

	crc(cs, fe_forbidden(&cs->out, cs->p.buf, detail));
	path_pop(&cs->p, old);
}

static void
c_invalid_str(struct cstate *cs, const char *child, const char *value, const char *detail)
{
	size_t old = child != NULL ? CHILD(cs, child) : cs->p.len;

	crc(cs, fe_invalid_str(&cs->out, cs->p.buf, value, detail));
	path_pop(&cs->p, old);
}

static void
c_invalid_raw(struct cstate *cs, const char *child, const char *value, const char *detail)
{
	size_t old = child != NULL ? CHILD(cs, child) : cs->p.len;

	crc(cs, fe_valued(&cs->out, "Invalid", cs->p.buf, value, detail));
	path_pop(&cs->p, old);
}

/* An Invalid whose value upstream prints as a Go struct: compact JSON here. */
static void
c_invalid_dump(struct cstate *cs, const char *child, const struct json_object *v,
    const char *detail)
{
	char val[MSG_MAX];
	struct kc_sbuf b;

	kc_sbuf_init(&b, val, sizeof(val));
	if (json_dump_value(&b, v) < 0) {
		crc(cs, -ENOMEM);
		return;
	}
	c_invalid_raw(cs, child, val, detail);
}

static void
c_not_supported(struct cstate *cs, const char *child, const char *value,
    const char *const *supported, size_t n)
{
	size_t old = child != NULL ? CHILD(cs, child) : cs->p.len;

	crc(cs, fe_not_supported_str(&cs->out, cs->p.buf, value, supported, n));
	path_pop(&cs->p, old);
}

void
schema_crd_strings_repr(char *buf, size_t size, const struct json_object *a)
{
	struct kc_sbuf b;

	kc_sbuf_init(&b, buf, size);
	if (a == NULL) {
		kc_sbuf_puts(&b, "[]string(nil)");
		return;
	}
	kc_sbuf_puts(&b, "[]string{");
	for (size_t i = 0; i < jlen(a); i++) {
		const char *v = jtype(jidx(a, i)) == json_type_string ?
		    json_object_get_string(mut(jidx(a, i))) : "";

		if (i > 0)
			kc_sbuf_puts(&b, ", ");
		kc_sbuf_quote(&b, v, strlen(v));
	}
	kc_sbuf_putc(&b, '}');
}

static bool
str_in(const char *s, const char *const *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, set[i]) == 0)
			return true;
	return false;
}

/* A JSON value Go would see as its zero value (absent, null, false, ""). */
static bool
jzero(const struct json_object *o, const char *key)
{
	const struct json_object *v = jget(o, key);

	if (v == NULL)
		return true;
	switch (jtype(v)) {
	case json_type_boolean:
		return !json_object_get_boolean(mut(v));
	case json_type_string:
		return json_object_get_string_len(mut(v)) == 0;
	default:
		return false;
	}
}

static bool
jstr_eq(const struct json_object *o, const char *key, const char *want)
{
	const char *s = jstr(o, key);

	return s != NULL && strcmp(s, want) == 0;
}

static bool
has_newline(const char *s)
{
	return strchr(s, '\n') != NULL || strchr(s, '\r') != NULL;
}

/* strings.TrimSpace(s) == "", for ASCII white space. */
static bool
blank(const char *s)
{
	for (; *s != '\0'; s++)
		if (strchr(" \t\n\v\f\r", *s) == NULL)
			return false;
	return true;
}

/*
 * The Go decoder's view: a field of the wrong JSON type fails the whole
 * request with 400 before any validation. The first such field is
 * reported as encoding/json does, approximately: the innermost struct
 * and the JSON field path from the enclosing decode (map keys and array
 * indexes are not part of it).
 */

enum dkind {
	D_STR, D_BOOL, D_INT64, D_INT32, D_FLOAT, D_ANY, D_STRS, D_OBJ, D_OBJS, D_SCHEMA,
};

struct dstruct;

struct dfield {
	const char		*key;
	enum dkind		 kind;
	const char		*gotype;	/* for D_OBJS: the element type */
	const struct dstruct	*sub;
};

struct dstruct {
	const char		*name;
	const struct dfield	*fields;
	size_t			 n;
};

struct dstate {
	struct path	 dp;
	const char	*strct;
	char		 msg[MSG_MAX];
	bool		 failed;
	unsigned	 depth;
	bool		 too_deep;
};

static const char *
json_kind_name(const struct json_object *v, char *buf, size_t size)
{
	switch (jtype(v)) {
	case json_type_boolean:
		return "bool";
	case json_type_string:
		return "string";
	case json_type_array:
		return "array";
	case json_type_object:
		return "object";
	case json_type_int:
		return "number";
	case json_type_double: {
		struct kc_sbuf b;

		kc_sbuf_init(&b, buf, size);
		kc_sbuf_puts(&b, "number ");
		kc_sbuf_float(&b, jdouble(v), KC_FLOAT_JSON);
		return buf;
	}
	default:
		return "null";
	}
}

static void
dfail(struct dstate *ds, const char *key, const struct json_object *v, const char *gotype,
    bool numeric_detail)
{
	char kb[64];
	const char *kind;

	if (ds->failed)
		return;
	ds->failed = true;
	kind = json_kind_name(v, kb, sizeof(kb));
	if (!numeric_detail && jtype(v) == json_type_double)
		kind = "number";
	(void)snprintf(ds->msg, sizeof(ds->msg),
	    "json: cannot unmarshal %s into Go struct field %s.%s%s%s of type %s", kind,
	    ds->strct, ds->dp.buf, ds->dp.len > 0 && key[0] != '\0' ? "." : "", key, gotype);
}

/* Whether 'v' decodes into a scalar of 'kind'; null always does. */
static bool
dscalar_ok(const struct json_object *v, enum dkind kind)
{
	if (v == NULL)
		return true;
	switch (kind) {
	case D_STR:
		return jtype(v) == json_type_string;
	case D_BOOL:
		return jtype(v) == json_type_boolean;
	case D_INT64:
		return jtype(v) == json_type_int;
	case D_INT32:
		return jtype(v) == json_type_int && jint(v) >= INT32_MIN && jint(v) <= INT32_MAX;
	case D_FLOAT:
		return jisnum(v);
	default:
		return true;
	}
}

static void dschema(struct dstate *, const struct json_object *);
static void dstruct_check(struct dstate *, const struct json_object *, const struct dstruct *);

static void
dfield_check(struct dstate *ds, const struct json_object *o, const struct dfield *f)
{
	const struct json_object *v = jget(o, f->key);
	const char *saved = ds->strct;
	size_t old;

	if (v == NULL || ds->failed)
		return;
	switch (f->kind) {
	case D_STR: case D_BOOL: case D_INT64: case D_INT32: case D_FLOAT:
		if (!dscalar_ok(v, f->kind))
			dfail(ds, f->key, v, f->gotype, f->kind == D_INT64 || f->kind == D_INT32);
		return;
	case D_ANY:
		return;
	case D_STRS:
		if (jtype(v) != json_type_array) {
			dfail(ds, f->key, v, "[]string", false);
			return;
		}
		for (size_t i = 0; i < jlen(v); i++)
			if (!dscalar_ok(jidx(v, i), D_STR)) {
				dfail(ds, f->key, jidx(v, i), "string", false);
				return;
			}
		return;
	case D_OBJ:
		if (jtype(v) != json_type_object) {
			dfail(ds, f->key, v, f->gotype, false);
			return;
		}
		old = path_child(&ds->dp, f->key);
		dstruct_check(ds, v, f->sub);
		path_pop(&ds->dp, old);
		ds->strct = saved;
		return;
	case D_OBJS:
		if (jtype(v) != json_type_array) {
			dfail(ds, f->key, v, f->gotype, false);
			return;
		}
		for (size_t i = 0; i < jlen(v) && !ds->failed; i++) {
			const struct json_object *e = jidx(v, i);

			if (e == NULL)
				continue;
			if (jtype(e) != json_type_object) {
				dfail(ds, f->key, e, f->gotype + 2, false);
				return;
			}
			old = path_child(&ds->dp, f->key);
			dstruct_check(ds, e, f->sub);
			path_pop(&ds->dp, old);
			ds->strct = saved;
		}
		return;
	case D_SCHEMA:
		if (jtype(v) != json_type_object) {
			dfail(ds, f->key, v, "v1.JSONSchemaProps", false);
			return;
		}
		old = path_child(&ds->dp, f->key);
		dschema(ds, v);
		path_pop(&ds->dp, old);
		ds->strct = saved;
		return;
	}
}

static void
dstruct_check(struct dstate *ds, const struct json_object *o, const struct dstruct *d)
{
	ds->strct = d->name;
	for (size_t i = 0; i < d->n && !ds->failed; i++) {
		ds->strct = d->name;
		dfield_check(ds, o, &d->fields[i]);
	}
}

#define DSTRUCT(name, arr)	{ name, arr, KC_ARRAY_SIZE(arr) }

static const struct dfield d_validation_rule_f[] = {
	{ "rule", D_STR, "string", NULL },
	{ "message", D_STR, "string", NULL },
	{ "messageExpression", D_STR, "string", NULL },
	{ "reason", D_STR, "v1.FieldValueErrorReason", NULL },
	{ "fieldPath", D_STR, "string", NULL },
	{ "optionalOldSelf", D_BOOL, "bool", NULL },
};
static const struct dstruct d_validation_rule = DSTRUCT("ValidationRule", d_validation_rule_f);

static const struct dfield d_docs_f[] = {
	{ "description", D_STR, "string", NULL },
	{ "url", D_STR, "string", NULL },
};
static const struct dstruct d_docs = DSTRUCT("ExternalDocumentation", d_docs_f);

/* JSONSchemaProps' typed fields; the schema-valued ones are walked by hand. */
static const struct dfield d_schema_f[] = {
	{ "id", D_STR, "string", NULL },
	{ "$schema", D_STR, "v1.JSONSchemaURL", NULL },
	{ "$ref", D_STR, "string", NULL },
	{ "description", D_STR, "string", NULL },
	{ "type", D_STR, "string", NULL },
	{ "format", D_STR, "string", NULL },
	{ "title", D_STR, "string", NULL },
	{ "default", D_ANY, NULL, NULL },
	{ "maximum", D_FLOAT, "float64", NULL },
	{ "exclusiveMaximum", D_BOOL, "bool", NULL },
	{ "minimum", D_FLOAT, "float64", NULL },
	{ "exclusiveMinimum", D_BOOL, "bool", NULL },
	{ "maxLength", D_INT64, "int64", NULL },
	{ "minLength", D_INT64, "int64", NULL },
	{ "pattern", D_STR, "string", NULL },
	{ "maxItems", D_INT64, "int64", NULL },
	{ "minItems", D_INT64, "int64", NULL },
	{ "uniqueItems", D_BOOL, "bool", NULL },
	{ "multipleOf", D_FLOAT, "float64", NULL },
	{ "maxProperties", D_INT64, "int64", NULL },
	{ "minProperties", D_INT64, "int64", NULL },
	{ "required", D_STRS, NULL, NULL },
	{ "externalDocs", D_OBJ, "v1.ExternalDocumentation", &d_docs },
	{ "example", D_ANY, NULL, NULL },
	{ "nullable", D_BOOL, "bool", NULL },
	{ "x-kubernetes-preserve-unknown-fields", D_BOOL, "bool", NULL },
	{ "x-kubernetes-embedded-resource", D_BOOL, "bool", NULL },
	{ "x-kubernetes-int-or-string", D_BOOL, "bool", NULL },
	{ "x-kubernetes-list-map-keys", D_STRS, NULL, NULL },
	{ "x-kubernetes-list-type", D_STR, "string", NULL },
	{ "x-kubernetes-map-type", D_STR, "string", NULL },
	{ "x-kubernetes-validations", D_OBJS, "[]v1.ValidationRule", &d_validation_rule },
};
static const struct dstruct d_schema = DSTRUCT("JSONSchemaProps", d_schema_f);

/* A schema decoded by JSONSchemaPropsOr*'s own UnmarshalJSON: paths restart. */
static void
dschema_nested(struct dstate *ds, const struct json_object *v)
{
	struct path saved = ds->dp;
	const char *strct = ds->strct;

	path_reset(&ds->dp, "");
	dschema(ds, v);
	if (!ds->failed) {
		ds->dp = saved;
		ds->strct = strct;
	}
}

static void
dschema_map(struct dstate *ds, const struct json_object *s, const char *key)
{
	const struct json_object *m = jget(s, key);
	size_t old;

	if (m == NULL || ds->failed)
		return;
	if (jtype(m) != json_type_object) {
		dfail(ds, key, m, "map[string]v1.JSONSchemaProps", false);
		return;
	}
	old = path_child(&ds->dp, key);
	json_object_object_foreach(mut(m), k, v) {
		(void)k;
		if (ds->failed)
			break;
		if (v == NULL)
			continue;
		if (jtype(v) != json_type_object) {
			path_pop(&ds->dp, old);
			ds->strct = "JSONSchemaProps";
			dfail(ds, key, v, "v1.JSONSchemaProps", false);
			return;
		}
		dschema(ds, v);
	}
	path_pop(&ds->dp, old);
}

static void
dschema(struct dstate *ds, const struct json_object *s)
{
	static const char *const lists[] = { "allOf", "oneOf", "anyOf" };
	const struct json_object *v;

	if (ds->failed)
		return;
	if (++ds->depth > SCHEMA_DEPTH_MAX) {
		ds->too_deep = true;
		ds->failed = true;
		(void)snprintf(ds->msg, sizeof(ds->msg),
		    "schema nested deeper than %d levels", SCHEMA_DEPTH_MAX);
		return;
	}
	dstruct_check(ds, s, &d_schema);
	ds->strct = "JSONSchemaProps";
	if (!ds->failed && (v = jget(s, "enum")) != NULL && jtype(v) != json_type_array)
		dfail(ds, "enum", v, "[]v1.JSON", false);
	for (size_t i = 0; i < KC_ARRAY_SIZE(lists) && !ds->failed; i++) {
		size_t old;

		if ((v = jget(s, lists[i])) == NULL)
			continue;
		if (jtype(v) != json_type_array) {
			dfail(ds, lists[i], v, "[]v1.JSONSchemaProps", false);
			break;
		}
		old = path_child(&ds->dp, lists[i]);
		for (size_t j = 0; j < jlen(v) && !ds->failed; j++) {
			const struct json_object *e = jidx(v, j);

			if (e == NULL)
				continue;
			if (jtype(e) != json_type_object) {
				path_pop(&ds->dp, old);
				ds->strct = "JSONSchemaProps";
				dfail(ds, lists[i], e, "v1.JSONSchemaProps", false);
				return;
			}
			dschema(ds, e);
			ds->strct = "JSONSchemaProps";
		}
		path_pop(&ds->dp, old);
	}
	if (!ds->failed && (v = jget(s, "not")) != NULL) {
		size_t old;

		if (jtype(v) != json_type_object)
			dfail(ds, "not", v, "v1.JSONSchemaProps", false);
		else {
			old = path_child(&ds->dp, "not");
			dschema(ds, v);
			path_pop(&ds->dp, old);
			ds->strct = "JSONSchemaProps";
		}
	}
	dschema_map(ds, s, "properties");
	dschema_map(ds, s, "patternProperties");
	dschema_map(ds, s, "definitions");
	ds->strct = "JSONSchemaProps";
	/* items: an object or an array; anything else decodes as absent. */
	if (!ds->failed && (v = jget(s, "items")) != NULL) {
		if (jtype(v) == json_type_object)
			dschema_nested(ds, v);
		else if (jtype(v) == json_type_array)
			for (size_t j = 0; j < jlen(v) && !ds->failed; j++)
				if (jtype(jidx(v, j)) == json_type_object)
					dschema_nested(ds, jidx(v, j));
	}
	for (size_t i = 0; i < 2 && !ds->failed; i++) {
		const char *key = i == 0 ? "additionalProperties" : "additionalItems";

		if ((v = jget(s, key)) == NULL || jtype(v) == json_type_boolean)
			continue;
		if (jtype(v) != json_type_object) {
			ds->failed = true;
			(void)snprintf(ds->msg, sizeof(ds->msg), "boolean or JSON schema expected");
			break;
		}
		dschema_nested(ds, v);
	}
	ds->depth--;
}

static const struct dfield d_names_f[] = {
	{ "plural", D_STR, "string", NULL },
	{ "singular", D_STR, "string", NULL },
	{ "shortNames", D_STRS, NULL, NULL },
	{ "kind", D_STR, "string", NULL },
	{ "listKind", D_STR, "string", NULL },
	{ "categories", D_STRS, NULL, NULL },
};
static const struct dstruct d_names = DSTRUCT("CustomResourceDefinitionNames", d_names_f);

static const struct dfield d_cr_validation_f[] = {
	{ "openAPIV3Schema", D_SCHEMA, NULL, NULL },
};
static const struct dstruct d_cr_validation =
    DSTRUCT("CustomResourceValidation", d_cr_validation_f);

static const struct dfield d_scale_f[] = {
	{ "specReplicasPath", D_STR, "string", NULL },
	{ "statusReplicasPath", D_STR, "string", NULL },
	{ "labelSelectorPath", D_STR, "string", NULL },
};
static const struct dstruct d_scale = DSTRUCT("CustomResourceSubresourceScale", d_scale_f);

static const struct dfield d_empty_f[] = {
	{ "", D_ANY, NULL, NULL },
};
static const struct dstruct d_status_sub =
    DSTRUCT("CustomResourceSubresourceStatus", d_empty_f);

static const struct dfield d_subresources_f[] = {
	{ "status", D_OBJ, "v1.CustomResourceSubresourceStatus", &d_status_sub },
	{ "scale", D_OBJ, "v1.CustomResourceSubresourceScale", &d_scale },
};
static const struct dstruct d_subresources =
    DSTRUCT("CustomResourceSubresources", d_subresources_f);

static const struct dfield d_column_f[] = {
	{ "name", D_STR, "string", NULL },
	{ "type", D_STR, "string", NULL },
	{ "format", D_STR, "string", NULL },
	{ "description", D_STR, "string", NULL },
	{ "priority", D_INT32, "int32", NULL },
	{ "jsonPath", D_STR, "string", NULL },
};
static const struct dstruct d_column = DSTRUCT("CustomResourceColumnDefinition", d_column_f);

static const struct dfield d_selectable_f[] = {
	{ "jsonPath", D_STR, "string", NULL },
};
static const struct dstruct d_selectable = DSTRUCT("SelectableField", d_selectable_f);

static const struct dfield d_version_f[] = {
	{ "name", D_STR, "string", NULL },
	{ "served", D_BOOL, "bool", NULL },
	{ "storage", D_BOOL, "bool", NULL },
	{ "deprecated", D_BOOL, "bool", NULL },
	{ "deprecationWarning", D_STR, "string", NULL },
	{ "schema", D_OBJ, "v1.CustomResourceValidation", &d_cr_validation },
	{ "subresources", D_OBJ, "v1.CustomResourceSubresources", &d_subresources },
	{ "additionalPrinterColumns", D_OBJS, "[]v1.CustomResourceColumnDefinition",
	    &d_column },
	{ "selectableFields", D_OBJS, "[]v1.SelectableField", &d_selectable },
};
static const struct dstruct d_version = DSTRUCT("CustomResourceDefinitionVersion", d_version_f);

static const struct dfield d_service_f[] = {
	{ "namespace", D_STR, "string", NULL },
	{ "name", D_STR, "string", NULL },
	{ "path", D_STR, "string", NULL },
	{ "port", D_INT32, "int32", NULL },
};
static const struct dstruct d_service = DSTRUCT("ServiceReference", d_service_f);

static const struct dfield d_client_f[] = {
	{ "url", D_STR, "string", NULL },
	{ "service", D_OBJ, "v1.ServiceReference", &d_service },
	{ "caBundle", D_STR, "[]uint8", NULL },
};
static const struct dstruct d_client = DSTRUCT("WebhookClientConfig", d_client_f);

static const struct dfield d_webhook_f[] = {
	{ "clientConfig", D_OBJ, "v1.WebhookClientConfig", &d_client },
	{ "conversionReviewVersions", D_STRS, NULL, NULL },
};
static const struct dstruct d_webhook = DSTRUCT("WebhookConversion", d_webhook_f);

static const struct dfield d_conversion_f[] = {
	{ "strategy", D_STR, "v1.ConversionStrategyType", NULL },
	{ "webhook", D_OBJ, "v1.WebhookConversion", &d_webhook },
};
static const struct dstruct d_conversion = DSTRUCT("CustomResourceConversion", d_conversion_f);

static const struct dfield d_spec_f[] = {
	{ "group", D_STR, "string", NULL },
	{ "names", D_OBJ, "v1.CustomResourceDefinitionNames", &d_names },
	{ "scope", D_STR, "v1.ResourceScope", NULL },
	{ "versions", D_OBJS, "[]v1.CustomResourceDefinitionVersion", &d_version },
	{ "conversion", D_OBJ, "v1.CustomResourceConversion", &d_conversion },
	{ "preserveUnknownFields", D_BOOL, "bool", NULL },
};
static const struct dstruct d_spec = DSTRUCT("CustomResourceDefinitionSpec", d_spec_f);

static const struct dfield d_crd_f[] = {
	{ "spec", D_OBJ, "v1.CustomResourceDefinitionSpec", &d_spec },
};
static const struct dstruct d_crd = DSTRUCT("CustomResourceDefinition", d_crd_f);

/* 0, or KC_EBADREQUEST / -E2BIG with the message in 'st'. */
static int
crd_decode(const struct json_object *crd, struct kc_status *st)
{
	struct dstate ds = { .strct = "CustomResourceDefinition" };

	if (jtype(crd) != json_type_object)
		return kc_status_set(st, KC_EBADREQUEST, "CustomResourceDefinition in version "
		    "\"v1\" cannot be handled as a CustomResourceDefinition: json: cannot "
		    "unmarshal %s into Go value of type v1.CustomResourceDefinition",
		    crd == NULL ? "null" : jtype(crd) == json_type_array ? "array" : "value");
	path_reset(&ds.dp, "");
	dstruct_check(&ds, crd, &d_crd);
	if (ds.too_deep)
		return kc_status_set(st, -E2BIG, "%s", ds.msg);
	if (ds.failed)
		return kc_status_set(st, KC_EBADREQUEST, "CustomResourceDefinition in version "
		    "\"v1\" cannot be handled as a CustomResourceDefinition: %s", ds.msg);
	return 0;
}

/*
 * Structural schemas (pkg/apiserver/schema: NewStructural,
 * ValidateStructural), on the JSON schema directly. "Nested" nodes are
 * the schemas under anyOf, allOf, oneOf and not (NestedValueValidation).
 */

enum level {
	LVL_ROOT,
	LVL_ITEM,
	LVL_FIELD,
};

/* NewStructural's first error for 's', or NULL. */
static const char *
structural_init_error(const struct json_object *s, bool nested)
{
	static const char *const lists[] = { "allOf", "anyOf", "oneOf" };
	const struct json_object *v;
	const char *e;

	if (s == NULL || jtype(s) != json_type_object)
		return NULL;
	if (jstr0(s, "id")[0] != '\0')
		return "OpenAPIV3Schema 'id' is not supported";
	if (jstr0(s, "$schema")[0] != '\0')
		return "OpenAPIV3Schema 'schema' is not supported";
	if (jstr0(s, "$ref")[0] != '\0')
		return "OpenAPIV3Schema '$ref' is not supported";
	if (jnkeys(jobj(s, "patternProperties")) > 0)
		return "OpenAPIV3Schema 'patternProperties' is not supported";
	if (jnkeys(jobj(s, "dependencies")) > 0)
		return "OpenAPIV3Schema 'dependencies' is not supported";
	if (jget(s, "additionalItems") != NULL)
		return "OpenAPIV3Schema 'additionalItems' is not supported";
	if (jnkeys(jobj(s, "definitions")) > 0)
		return "OpenAPIV3Schema 'definitions' is not supported";
	for (size_t i = 0; i < KC_ARRAY_SIZE(lists); i++)
		for (size_t j = 0; j < jlen(jarr(s, lists[i])); j++)
			if ((e = structural_init_error(jidx(jarr(s, lists[i]), j), true)) != NULL)
				return e;
	if ((e = structural_init_error(jobj(s, "not"), true)) != NULL)
		return e;
	if ((v = jget(s, "x-kubernetes-preserve-unknown-fields")) != NULL &&
	    jtype(v) == json_type_boolean && !json_object_get_boolean(mut(v)))
		return "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or "
		    "undefined";
	if (jlen(jarr(s, "items")) > 0)
		return "OpenAPIV3Schema 'items' must be a schema, but is an array";
	if ((e = structural_init_error(jobj(s, "items"), nested)) != NULL)
		return e;
	if (jobj(s, "properties") != NULL) {
		json_object_object_foreach(mut(jobj(s, "properties")), k, ps) {
			(void)k;
			if ((e = structural_init_error(ps, nested)) != NULL)
				return e;
		}
	}
	return structural_init_error(jobj(s, "additionalProperties"), nested);
}

/* An int-or-string branch: exactly {type: <t>} (other keys zero). */
static bool
is_type_only(const struct json_object *s, const char *t)
{
	if (s == NULL || jtype(s) != json_type_object || !jstr_eq(s, "type", t))
		return false;
	json_object_object_foreach(mut(s), k, v) {
		(void)v;
		if (strcmp(k, "type") != 0 && !jzero(s, k))
			return false;
	}
	return true;
}

static bool
int_or_string_any_of(const struct json_object *s)
{
	const struct json_object *a = jarr(s, "anyOf");

	return jlen(a) == 2 && is_type_only(jidx(a, 0), "integer") &&
	    is_type_only(jidx(a, 1), "string");
}

static bool
int_or_string_all_of(const struct json_object *s)
{
	const struct json_object *a = jarr(s, "allOf");

	return jlen(a) >= 1 && int_or_string_any_of(jidx(a, 0));
}

static void snested(struct cstate *, const struct json_object *, bool, enum level);

/* validateValueValidation: the junctors and the pattern. */
static void
svalue(struct cstate *cs, const struct json_object *s, bool skip_any_of,
    bool skip_first_all_of_any_of, enum level lvl)
{
	static const char *const names[] = { "anyOf", "allOf", "oneOf" };
	const char *pattern = jstr(s, "pattern");

	for (size_t k = 0; k < KC_ARRAY_SIZE(names); k++) {
		const struct json_object *a = jarr(s, names[k]);

		if (k == 0 && skip_any_of)
			continue;
		for (size_t i = 0; i < jlen(a); i++) {
			size_t old = CHILD(cs, names[k]);

			path_index(&cs->p, i);
			snested(cs, jidx(a, i), k == 1 && i == 0 && skip_first_all_of_any_of, lvl);
			path_pop(&cs->p, old);
		}
	}
	if (jobj(s, "not") != NULL) {
		size_t old = CHILD(cs, "not");

		snested(cs, jobj(s, "not"), false, lvl);
		path_pop(&cs->p, old);
	}
	if (pattern != NULL && pattern[0] != '\0') {
		char why[MSG_MAX], detail[2 * MSG_MAX];
		int r = regex_run(pattern, NULL, 0, why, sizeof(why));

		if (r == -1) {
			(void)snprintf(detail, sizeof(detail),
			    "must be a valid regular expression, but isn't: %s", why);
			c_invalid_str(cs, "pattern", pattern, detail);
		} else
			crc(cs, r < 0 ? r : 0);
	}
}

/* validateNestedValueValidation. */
static void
snested(struct cstate *cs, const struct json_object *v, bool skip_any_of, enum level lvl)
{
	static const struct {
		const char	*key;
		const char	*detail;
	} forbidden[] = {
		{ "type", "must be empty to be structural" },
		{ "title", "must be empty to be structural" },
		{ "description", "must be empty to be structural" },
		{ "nullable", "must be false to be structural" },
		{ "x-kubernetes-preserve-unknown-fields", "must be false to be structural" },
		{ "x-kubernetes-embedded-resource", "must be false to be structural" },
		{ "x-kubernetes-int-or-string", "must be false to be structural" },
	};
	const struct json_object *props = jobj(v, "properties"), *ap;

	if (v == NULL || jtype(v) != json_type_object)
		return;
	svalue(cs, v, skip_any_of, false, lvl);
	if (jobj(v, "items") != NULL) {
		size_t old = CHILD(cs, "items");

		snested(cs, jobj(v, "items"), false, lvl);
		path_pop(&cs->p, old);
	}
	if (props != NULL) {
		json_object_object_foreach(mut(props), k, ps) {
			size_t old = CHILD(cs, "properties");

			path_key(&cs->p, k);
			snested(cs, ps, false, LVL_FIELD);
			path_pop(&cs->p, old);
		}
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(forbidden); i++)
		if (!jzero(v, forbidden[i].key))
			c_forbidden(cs, forbidden[i].key, forbidden[i].detail);
	ap = jget(v, "additionalProperties");
	if (ap != NULL && !(jtype(ap) == json_type_boolean && !json_object_get_boolean(mut(ap))))
		c_forbidden(cs, "additionalProperties", "must be undefined to be structural");
	if (jget(v, "default") != NULL)
		c_forbidden(cs, "default", "must be undefined to be structural");
	if (jlen(jarr(v, "x-kubernetes-list-map-keys")) > 0)
		c_forbidden(cs, "x-kubernetes-list-map-keys", "must be empty to be structural");
	if (jget(v, "x-kubernetes-list-type") != NULL)
		c_forbidden(cs, "x-kubernetes-list-type", "must be undefined to be structural");
	if (jget(v, "x-kubernetes-map-type") != NULL)
		c_forbidden(cs, "x-kubernetes-map-type", "must be undefined to be structural");
	if (jlen(jarr(v, "x-kubernetes-validations")) > 0)
		c_forbidden(cs, "x-kubernetes-validations", "must be empty to be structural");
	if (jhas(props, "metadata")) {
		size_t old = CHILD(cs, "properties");

		path_key(&cs->p, "metadata");
		crc(cs, fe_forbidden(&cs->out, cs->p.buf,
		    "must not be specified in a nested context"));
		path_pop(&cs->p, old);
	}
}

/* Root metadata may only restrict name and generateName. */
static bool
metadata_only_names(const struct json_object *m)
{
	static const char *const ignored[] = { "type", "default", "externalDocs", "example" };

	json_object_object_foreach(mut(m), k, v) {
		(void)v;
		if (str_in(k, ignored, KC_ARRAY_SIZE(ignored)))
			continue;
		if (strcmp(k, "properties") == 0) {
			const struct json_object *p = jobj(m, "properties");
			int n = jnkeys(p);
			bool name = jhas(p, "name"), gen = jhas(p, "generateName");

			if (p == NULL && jget(m, k) == NULL)
				continue;
			if (!((name && gen && n == 2) || ((name || gen) && n == 1)))
				return false;
			continue;
		}
		if (!jzero(m, k))
			return false;
	}
	return true;
}

static void
sprop_type(struct cstate *cs, const struct json_object *props, const char *name,
    const char *want, const char *detail)
{
	const struct json_object *ps = jobj(props, name);
	size_t old;

	if (ps == NULL || jstr_eq(ps, "type", want))
		return;
	old = CHILD(cs, "properties");
	path_key(&cs->p, name);
	c_invalid_str(cs, "type", jstr0(ps, "type"), detail);
	path_pop(&cs->p, old);
}

/* validateStructuralInvariants. */
static void
sinvariants(struct cstate *cs, const struct json_object *s, enum level lvl)
{
	const struct json_object *props = jobj(s, "properties"), *items = jobj(s, "items");
	const struct json_object *ap = jget(s, "additionalProperties");
	const char *type = jstr0(s, "type");
	bool embedded = jbool(s, "x-kubernetes-embedded-resource");
	bool ios = jbool(s, "x-kubernetes-int-or-string");
	bool preserve = jbool(s, "x-kubernetes-preserve-unknown-fields");

	if (s == NULL || jtype(s) != json_type_object)
		return;
	if (strcmp(type, "array") == 0 && items == NULL)
		c_required(cs, "items", "must be specified");
	if (items != NULL) {
		size_t old = CHILD(cs, "items");

		sinvariants(cs, items, LVL_ITEM);
		path_pop(&cs->p, old);
	}
	if (props != NULL) {
		json_object_object_foreach(mut(props), k, ps) {
			size_t old = CHILD(cs, "properties");

			path_key(&cs->p, k);
			sinvariants(cs, ps, LVL_FIELD);
			path_pop(&cs->p, old);
		}
	}
	if (ap != NULL) {
		if (lvl == LVL_ROOT)
			c_forbidden(cs, "additionalProperties", "must not be used at the root");
		if (jtype(ap) == json_type_object) {
			size_t old = CHILD(cs, "additionalProperties");

			sinvariants(cs, ap, LVL_FIELD);
			path_pop(&cs->p, old);
		}
	}
	if (ios && preserve)
		c_invalid_raw(cs, "x-kubernetes-preserve-unknown-fields", "true",
		    "must be false if x-kubernetes-int-or-string is true");
	if (ios && embedded)
		c_invalid_raw(cs, "x-kubernetes-embedded-resource", "true",
		    "must be false if x-kubernetes-int-or-string is true");
	svalue(cs, s, int_or_string_any_of(s), int_or_string_all_of(s), lvl);
	if (embedded && strcmp(type, "object") != 0) {
		if (type[0] == '\0')
			c_required(cs, "type", "must be object if x-kubernetes-embedded-resource is true");
		else
			c_invalid_str(cs, "type", type,
			    "must be object if x-kubernetes-embedded-resource is true");
	} else if (type[0] == '\0' && !ios && !preserve)
		c_required(cs, "type", lvl == LVL_ROOT ? "must not be empty at the root" :
		    lvl == LVL_ITEM ? "must not be empty for specified array items" :
		    "must not be empty for specified object fields");
	if (embedded && ap != NULL)
		c_forbidden(cs, "additionalProperties",
		    "must not be used if x-kubernetes-embedded-resource is set");
	if (lvl == LVL_ROOT && type[0] != '\0' && strcmp(type, "object") != 0)
		c_invalid_str(cs, "type", type, "must be object at the root");
	if (lvl == LVL_ROOT || embedded) {
		sprop_type(cs, props, "kind", "string", "must be string");
		sprop_type(cs, props, "apiVersion", "string", "must be string");
		sprop_type(cs, props, "metadata", "object", "must be object");
	}
	if (lvl == LVL_ROOT && jobj(props, "metadata") != NULL &&
	    !metadata_only_names(jobj(props, "metadata"))) {
		size_t old = CHILD(cs, "properties");

		path_key(&cs->p, "metadata");
		crc(cs, fe_forbidden(&cs->out, cs->p.buf, "must not specify anything other than "
		    "name and generateName, but metadata is implicitly specified"));
		path_pop(&cs->p, old);
	}
	if (embedded && !preserve && jnkeys(props) == 0)
		c_required(cs, "properties", "must not be empty if x-kubernetes-embedded-resource "
		    "is true without x-kubernetes-preserve-unknown-fields");
}

/* validateStructuralCompleteness: junctors may only restrict specified fields. */
static void scomplete_nested(struct cstate *, const struct json_object *,
	    const struct json_object *, struct path *);

static void
scomplete_vv(struct cstate *cs, const struct json_object *v, const struct json_object *s,
    struct path *vp)
{
	static const char *const names[] = { "allOf", "anyOf", "oneOf" };

	if (jobj(v, "not") != NULL) {
		size_t old = path_child(vp, "not");

		scomplete_nested(cs, jobj(v, "not"), s, vp);
		path_pop(vp, old);
	}
	for (size_t k = 0; k < KC_ARRAY_SIZE(names); k++)
		for (size_t i = 0; i < jlen(jarr(v, names[k])); i++) {
			size_t old = path_child(vp, names[k]);

			path_index(vp, i);
			scomplete_nested(cs, jidx(jarr(v, names[k]), i), s, vp);
			path_pop(vp, old);
		}
}

static void
scomplete_nested(struct cstate *cs, const struct json_object *v, const struct json_object *s,
    struct path *vp)
{
	const struct json_object *props = jobj(v, "properties");
	char detail[PATH_MAX_LEN + 64];

	if (v == NULL || jtype(v) != json_type_object)
		return;
	if (s == NULL) {
		(void)snprintf(detail, sizeof(detail), "because it is defined in %s", vp->buf);
		c_required(cs, NULL, detail);
		return;
	}
	scomplete_vv(cs, v, s, vp);
	if (jobj(v, "items") != NULL) {
		size_t olds = CHILD(cs, "items"), oldv = path_child(vp, "items");

		scomplete_nested(cs, jobj(v, "items"), jobj(s, "items"), vp);
		path_pop(vp, oldv);
		path_pop(&cs->p, olds);
	}
	if (props != NULL) {
		json_object_object_foreach(mut(props), k, pv) {
			size_t olds = CHILD(cs, "properties"), oldv = path_child(vp, "properties");

			path_key(&cs->p, k);
			path_key(vp, k);
			scomplete_nested(cs, pv, jobj(jobj(s, "properties"), k), vp);
			path_pop(vp, oldv);
			path_pop(&cs->p, olds);
		}
	}
}

/*
 * Defaults (schema/defaulting ValidateDefaults): each default must be
 * pruned already and valid for its schema. Defaults under
 * additionalProperties are not checked, as upstream.
 */
static void
sdefaults(struct cstate *cs, const struct json_object *s, bool resource_root)
{
	const struct json_object *props = jobj(s, "properties"), *def = jget(s, "default");
	bool embedded = resource_root || jbool(s, "x-kubernetes-embedded-resource");

	if (s == NULL || jtype(s) != json_type_object || cs->rc != 0)
		return;
	if (def != NULL) {
		struct json_object *pruned = kc_json_copy(def);
		size_t old = CHILD(cs, "default");
		size_t mark;

		if (pruned == NULL) {
			crc(cs, -ENOMEM);
			path_pop(&cs->p, old);
			return;
		}
		{
			struct pstate ps = { 0 };

			path_reset(&ps.p, "");
			pnode(&ps, pruned, s, embedded);
			crc(cs, ps.rc);
		}
		if (cs->rc == 0 && !kc_json_equal(pruned, def)) {
			char val[MSG_MAX];
			struct kc_sbuf b;

			kc_sbuf_init(&b, val, sizeof(val));
			go_value(&b, def);
			crc(cs, fe_valued(&cs->out, "Invalid", cs->p.buf, val,
			    "must not have unknown fields"));
		}
		json_object_put(pruned);
		mark = cs->out.n;
		if (cs->rc == 0) {
			struct wstate w = { .out = &cs->out };
			struct elist tmp = { 0 };

			path_reset(&w.p, cs->p.buf);
			if (embedded && jtype(def) == json_type_object)
				wembedded(&w, def);
			wembedded_walk(&w, def, s);
			crc(cs, w.rc);
			if (cs->out.n == mark && cs->rc == 0) {
				crc(cs, validate_all(s, def, cs->p.buf, false, &tmp));
				crc(cs, elist_move(&cs->out, &tmp));
			}
			elist_free(&tmp);
		}
		path_pop(&cs->p, old);
	}
	if (jobj(s, "items") != NULL) {
		size_t old = CHILD(cs, "items");

		sdefaults(cs, jobj(s, "items"), false);
		path_pop(&cs->p, old);
	}
	if (props != NULL) {
		json_object_object_foreach(mut(props), k, ps) {
			size_t old = CHILD(cs, "properties");

			path_key(&cs->p, k);
			sdefaults(cs, ps, false);
			path_pop(&cs->p, old);
		}
	}
}

/*
 * ValidateCustomResourceDefinitionOpenAPISchema: the keywords Kubernetes
 * allows, and the rules of its extensions.
 */
struct ssv {
	bool		 allow_defaults;
	const char	*reason;	/* why defaults are forbidden */
	bool		 inside_meta;
};

static const char *const openapi_types[] = {
	"array", "boolean", "integer", "number", "object", "string",
};

static void
sopenapi_keywords(struct cstate *cs, const struct json_object *s, const struct ssv *v)
{
	const char *type = jstr0(s, "type");

	if (type[0] != '\0' && !str_in(type, openapi_types, KC_ARRAY_SIZE(openapi_types)))
		c_not_supported(cs, "type", type, openapi_types, KC_ARRAY_SIZE(openapi_types));
	if (jget(s, "default") != NULL && !v->allow_defaults) {
		char detail[256];

		(void)snprintf(detail, sizeof(detail), "must not be set%s%s",
		    v->reason != NULL ? " " : "", v->reason != NULL ? v->reason : "");
		c_forbidden(cs, "default", detail);
	}
	if (jstr0(s, "id")[0] != '\0')
		c_forbidden(cs, "id", "id is not supported");
	if (jget(s, "additionalItems") != NULL)
		c_forbidden(cs, "additionalItems", "additionalItems is not supported");
	if (jnkeys(jobj(s, "patternProperties")) > 0)
		c_forbidden(cs, "patternProperties", "patternProperties is not supported");
	if (jnkeys(jobj(s, "definitions")) > 0)
		c_forbidden(cs, "definitions", "definitions is not supported");
	if (jget(s, "dependencies") != NULL)
		c_forbidden(cs, "dependencies", "dependencies is not supported");
	if (jget(s, "$ref") != NULL)
		c_forbidden(cs, "$ref", "$ref is not supported");
	if (strcmp(type, "null") == 0)
		c_forbidden(cs, "type", "type cannot be set to null, use nullable as an alternative");
	if (jlen(jarr(s, "items")) > 0)
		c_forbidden(cs, "items", "items must be a schema object and not an array");
	if (v->inside_meta && jbool(s, "x-kubernetes-embedded-resource"))
		c_forbidden(cs, "x-kubernetes-embedded-resource",
		    "must not be used inside of resource meta");
}

static void
slist_rules(struct cstate *cs, const struct json_object *s)
{
	static const char *const list_types[] = { "atomic", "set", "map" };
	static const char *const map_types[] = { "atomic", "granular" };
	const char *type = jstr0(s, "type"), *lt = jstr(s, "x-kubernetes-list-type");
	const char *mt = jstr(s, "x-kubernetes-map-type");
	const struct json_object *keys = jarr(s, "x-kubernetes-list-map-keys");
	const struct json_object *items = jobj(s, "items"), *v;
	char repr[MSG_MAX];

	if ((v = jget(s, "x-kubernetes-preserve-unknown-fields")) != NULL &&
	    jtype(v) == json_type_boolean && !json_object_get_boolean(mut(v)))
		c_invalid_raw(cs, "x-kubernetes-preserve-unknown-fields", "false",
		    "must be true or undefined");
	if (mt != NULL && strcmp(type, "object") != 0) {
		if (type[0] == '\0')
			c_required(cs, "type", "must be object if x-kubernetes-map-type is specified");
		else
			c_invalid_str(cs, "type", type,
			    "must be object if x-kubernetes-map-type is specified");
	}
	if (mt != NULL && !str_in(mt, map_types, 2))
		c_not_supported(cs, "x-kubernetes-map-type", mt, map_types, 2);
	if (lt != NULL && strcmp(type, "array") != 0) {
		if (type[0] == '\0')
			c_required(cs, "type", "must be array if x-kubernetes-list-type is specified");
		else
			c_invalid_str(cs, "type", type,
			    "must be array if x-kubernetes-list-type is specified");
	} else if (lt != NULL && strcmp(lt, "set") == 0 && items != NULL) {
		const char *it = jstr0(items, "type");
		size_t old = CHILD(cs, "items");

		if (strcmp(it, "array") == 0 && jstr(items, "x-kubernetes-list-type") != NULL &&
		    !jstr_eq(items, "x-kubernetes-list-type", "atomic"))
			c_invalid_str(cs, "x-kubernetes-list-type",
			    jstr(items, "x-kubernetes-list-type"),
			    "must be atomic as item of a list with x-kubernetes-list-type=set");
		else if (strcmp(it, "object") == 0 &&
		    !jstr_eq(items, "x-kubernetes-map-type", "atomic")) {
			const char *ilt = jstr(items, "x-kubernetes-list-type");

			c_invalid_str(cs, "x-kubernetes-map-type", ilt != NULL ? ilt : "null",
			    "must be atomic as item of a list with x-kubernetes-list-type=set");
		}
		path_pop(&cs->p, old);
	}
	if (lt != NULL && !str_in(lt, list_types, 3))
		c_not_supported(cs, "x-kubernetes-list-type", lt, list_types, 3);
	if (jlen(keys) > 0) {
		if (lt == NULL)
			c_required(cs, "x-kubernetes-list-type",
			    "must be map if x-kubernetes-list-map-keys is non-empty");
		else if (strcmp(lt, "map") != 0)
			c_invalid_str(cs, "x-kubernetes-list-type", lt,
			    "must be map if x-kubernetes-list-map-keys is non-empty");
	}
	if (lt != NULL && strcmp(lt, "map") == 0) {
		if (jlen(keys) == 0)
			c_required(cs, "x-kubernetes-list-map-keys",
			    "must not be empty if x-kubernetes-list-type is map");
		if (jget(s, "items") == NULL)
			c_required(cs, "items", "must have a schema if x-kubernetes-list-type is map");
		if (jarr(s, "items") != NULL)
			c_invalid_dump(cs, "items", jget(s, "items"),
			    "must only have a single schema if x-kubernetes-list-type is map");
		if (items != NULL && !jstr_eq(items, "type", "object")) {
			size_t old = CHILD(cs, "items");

			c_invalid_str(cs, "type", jstr0(items, "type"),
			    "must be object if parent array's x-kubernetes-list-type is map");
			path_pop(&cs->p, old);
		}
		if (items != NULL && jstr_eq(items, "type", "object")) {
			schema_crd_strings_repr(repr, sizeof(repr), keys);
			for (size_t i = 0; i < jlen(keys); i++) {
				const char *k = json_object_get_string(mut(jidx(keys, i)));
				const struct json_object *ks = jobj(jobj(items, "properties"), k);

				if (k == NULL)
					continue;
				if (ks != NULL) {
					const char *kt = jstr0(ks, "type");

					if (strcmp(kt, "array") == 0 || strcmp(kt, "object") == 0) {
						size_t old = CHILD(cs, "items");

						CHILD(cs, "properties");
						path_key(&cs->p, k);
						c_invalid_str(cs, "type", jstr0(items, "type"),
						    "must be a scalar type if parent array's "
						    "x-kubernetes-list-type is map");
						path_pop(&cs->p, old);
					}
				} else
					c_invalid_raw(cs, "x-kubernetes-list-map-keys", repr,
					    "entries must all be names of item properties");
				for (size_t j = 0; j < i; j++)
					if (jtype(jidx(keys, j)) == json_type_string &&
					    strcmp(json_object_get_string(mut(jidx(keys, j))), k) == 0) {
						c_invalid_raw(cs, "x-kubernetes-list-map-keys", repr,
						    "must not contain duplicate entries");
						break;
					}
			}
		}
	}
	/* validateMapListKeysMapSet */
	if (items != NULL && lt != NULL && (strcmp(lt, "set") == 0 || strcmp(lt, "map") == 0)) {
		if (jbool(items, "nullable")) {
			char detail[128];
			size_t old = CHILD(cs, "items");

			(void)snprintf(detail, sizeof(detail),
			    "cannot be nullable when x-kubernetes-list-type is %s", lt);
			c_forbidden(cs, "nullable", detail);
			path_pop(&cs->p, old);
		}
		if (strcmp(lt, "map") == 0)
			for (size_t i = 0; i < jlen(keys); i++) {
				const char *k = json_object_get_string(mut(jidx(keys, i)));
				const struct json_object *ks = jobj(jobj(items, "properties"), k);
				const struct json_object *req = jarr(items, "required");
				bool required = false;
				size_t old;

				if (k == NULL || ks == NULL)
					continue;
				for (size_t j = 0; j < jlen(req); j++)
					if (jtype(jidx(req, j)) == json_type_string &&
					    strcmp(json_object_get_string(mut(jidx(req, j))), k) == 0)
						required = true;
				old = CHILD(cs, "items");
				CHILD(cs, "properties");
				path_key(&cs->p, k);
				if (!required && jget(ks, "default") == NULL)
					c_required(cs, "default", "this property is in "
					    "x-kubernetes-list-map-keys, so it must have a default or be "
					    "a required property");
				if (jbool(ks, "nullable"))
					c_forbidden(cs, "nullable", "this property is in "
					    "x-kubernetes-list-map-keys, so it cannot be nullable");
				path_pop(&cs->p, old);
			}
	}
}

/* x-kubernetes-validations: the static checks (CEL itself is not evaluated). */
static void
svalidations(struct cstate *cs, const struct json_object *s)
{
	static const char *const reasons[] = { "FieldValueDuplicate", "FieldValueForbidden",
		"FieldValueInvalid", "FieldValueRequired" };
	const struct json_object *rules = jarr(s, "x-kubernetes-validations");

	for (size_t i = 0; i < jlen(rules); i++) {
		const struct json_object *r = jidx(rules, i);
		const char *rule = jstr0(r, "rule"), *msg = jstr0(r, "message");
		const char *mexpr = jstr0(r, "messageExpression"), *fp = jstr0(r, "fieldPath");
		const char *reason = jstr(r, "reason");
		size_t old = CHILD(cs, "x-kubernetes-validations");

		path_index(&cs->p, i);
		if (blank(rule))
			c_required(cs, "rule", "rule is not specified");
		else if (msg[0] != '\0' && blank(msg))
			c_invalid_str(cs, "message", msg, "message must be non-empty if specified");
		else if (has_newline(msg))
			c_invalid_str(cs, "message", msg, "message must not contain line breaks");
		else if (has_newline(rule) && blank(msg))
			c_required(cs, "message", "message must be specified if rule contains line "
			    "breaks");
		if (mexpr[0] != '\0' && blank(mexpr))
			c_required(cs, "messageExpression",
			    "messageExpression must be non-empty if specified");
		if (reason != NULL && !str_in(reason, reasons, KC_ARRAY_SIZE(reasons)))
			c_not_supported(cs, "reason", reason, reasons, KC_ARRAY_SIZE(reasons));
		if (fp[0] != '\0' && blank(fp))
			c_invalid_str(cs, "fieldPath", fp, "fieldPath must be non-empty if specified");
		if (has_newline(fp))
			c_invalid_str(cs, "fieldPath", fp, "fieldPath must not contain line breaks");
		path_pop(&cs->p, old);
	}
}

static void
sopenapi(struct cstate *cs, const struct json_object *s, const struct ssv *v, bool root)
{
	static const char *const lists[] = { "allOf", "oneOf", "anyOf" };
	static const char *const meta_fields[] = { "metadata", "kind", "apiVersion" };
	const struct json_object *props = jobj(s, "properties"), *ap, *items;
	bool embedded = jbool(s, "x-kubernetes-embedded-resource");

	if (s == NULL || jtype(s) != json_type_object)
		return;
	sopenapi_keywords(cs, s, v);
	if (jbool(s, "uniqueItems"))
		c_forbidden(cs, "uniqueItems", "uniqueItems cannot be set to true since the "
		    "runtime complexity becomes quadratic");
	if ((ap = jget(s, "additionalProperties")) != NULL) {
		struct ssv sub = *v;

		if (jnkeys(props) > 0 &&
		    (jtype(ap) == json_type_object ||
		    (jtype(ap) == json_type_boolean && !json_object_get_boolean(mut(ap)))))
			c_forbidden(cs, "additionalProperties",
			    "additionalProperties and properties are mutual exclusive");
		if (v->inside_meta) {
			sub.allow_defaults = false;
			sub.reason = "inside additionalProperties applying to object metadata";
		}
		if (jtype(ap) == json_type_object) {
			size_t old = CHILD(cs, "additionalProperties");

			sopenapi(cs, ap, &sub, false);
			path_pop(&cs->p, old);
		}
	}
	if (props != NULL) {
		json_object_object_foreach(mut(props), k, ps) {
			struct ssv sub = *v;
			char reason[64];
			size_t old;

			if ((root || embedded) && str_in(k, meta_fields, 3)) {
				sub.inside_meta = true;
				if (root) {
					(void)snprintf(reason, sizeof(reason), "in top-level %s", k);
					sub.allow_defaults = false;
					sub.reason = reason;
				}
			}
			old = CHILD(cs, "properties");
			path_key(&cs->p, k);
			sopenapi(cs, ps, &sub, false);
			path_pop(&cs->p, old);
		}
	}
	if (jobj(s, "not") != NULL) {
		size_t old = CHILD(cs, "not");

		sopenapi(cs, jobj(s, "not"), v, false);
		path_pop(&cs->p, old);
	}
	for (size_t k = 0; k < KC_ARRAY_SIZE(lists); k++)
		for (size_t i = 0; i < jlen(jarr(s, lists[k])); i++) {
			size_t old = CHILD(cs, lists[k]);

			path_index(&cs->p, i);
			sopenapi(cs, jidx(jarr(s, lists[k]), i), v, false);
			path_pop(&cs->p, old);
		}
	if (jobj(s, "definitions") != NULL) {
		json_object_object_foreach(mut(jobj(s, "definitions")), k, ds) {
			size_t old = CHILD(cs, "definitions");

			path_key(&cs->p, k);
			sopenapi(cs, ds, v, false);
			path_pop(&cs->p, old);
		}
	}
	if ((items = jobj(s, "items")) != NULL) {
		size_t old = CHILD(cs, "items");

		sopenapi(cs, items, v, false);
		path_pop(&cs->p, old);
	}
	for (size_t i = 0; i < jlen(jarr(s, "items")); i++) {
		size_t old = CHILD(cs, "items");

		path_index(&cs->p, i);
		sopenapi(cs, jidx(jarr(s, "items"), i), v, false);
		path_pop(&cs->p, old);
	}
	slist_rules(cs, s);
	svalidations(cs, s);
}

/* The fields of JSONSchemaProps in declaration order, for the status check. */
static const struct {
	const char	*key;
	const char	*field;
	bool		 allowed;
} root_fields[] = {
	{ "id", "ID", false }, { "$schema", "Schema", false }, { "$ref", "Ref", false },
	{ "description", "Description", true }, { "type", "Type", true },
	{ "format", "Format", true }, { "title", "Title", true },
	{ "default", "Default", false }, { "maximum", "Maximum", true },
	{ "exclusiveMaximum", "ExclusiveMaximum", true }, { "minimum", "Minimum", true },
	{ "exclusiveMinimum", "ExclusiveMinimum", true }, { "maxLength", "MaxLength", true },
	{ "minLength", "MinLength", true }, { "pattern", "Pattern", true },
	{ "maxItems", "MaxItems", true }, { "minItems", "MinItems", true },
	{ "uniqueItems", "UniqueItems", true }, { "multipleOf", "MultipleOf", true },
	{ "enum", "Enum", false }, { "maxProperties", "MaxProperties", false },
	{ "minProperties", "MinProperties", false }, { "required", "Required", true },
	{ "items", "Items", true }, { "allOf", "AllOf", false }, { "oneOf", "OneOf", false },
	{ "anyOf", "AnyOf", false }, { "not", "Not", false },
	{ "properties", "Properties", true },
	{ "additionalProperties", "AdditionalProperties", false },
	{ "patternProperties", "PatternProperties", false },
	{ "dependencies", "Dependencies", false },
	{ "additionalItems", "AdditionalItems", false },
	{ "definitions", "Definitions", false }, { "externalDocs", "ExternalDocs", true },
	{ "example", "Example", true }, { "nullable", "Nullable", false },
	{ "x-kubernetes-preserve-unknown-fields", "XPreserveUnknownFields", true },
	{ "x-kubernetes-embedded-resource", "XEmbeddedResource", false },
	{ "x-kubernetes-int-or-string", "XIntOrString", false },
	{ "x-kubernetes-list-map-keys", "XListMapKeys", false },
	{ "x-kubernetes-list-type", "XListType", false },
	{ "x-kubernetes-map-type", "XMapType", false },
	{ "x-kubernetes-validations", "XValidations", true },
};

static void
sstatus_root(struct cstate *cs, const struct json_object *schema)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(root_fields); i++) {
		const char *key = root_fields[i].key;
		char detail[1024];
		struct kc_sbuf b;

		if (jzero(schema, key))
			continue;
		if (strcmp(key, "type") == 0) {
			if (!jstr_eq(schema, "type", "object")) {
				c_invalid_str(cs, "openAPIV3Schema.type", jstr0(schema, "type"),
				    "only \"object\" is allowed as the type at the root of the "
				    "schema if the status subresource is enabled");
				return;
			}
			continue;
		}
		if (root_fields[i].allowed)
			continue;
		kc_sbuf_init(&b, detail, sizeof(detail));
		kc_sbuf_puts(&b, "only [");
		for (size_t j = 0, n = 0; j < KC_ARRAY_SIZE(root_fields); j++)
			if (root_fields[j].allowed)
				kc_sbuf_printf(&b, "%s%s", n++ > 0 ? " " : "", root_fields[j].field);
		kc_sbuf_puts(&b, "] fields are allowed at the root of the schema if the status "
		    "subresource is enabled");
		c_invalid_dump(cs, "openAPIV3Schema", schema, detail);
		return;
	}
}

/* validateCustomResourceDefinitionValidation at cs->p ("...schema"). */
static void
cvalidation(struct cstate *cs, const struct json_object *cv, bool status_enabled)
{
	const struct json_object *schema = jobj(cv, "openAPIV3Schema");
	size_t start = cs->out.n;
	const char *init;
	struct ssv v = { .allow_defaults = true };

	if (cv == NULL || schema == NULL)
		return;
	if (status_enabled)
		sstatus_root(cs, schema);
	if (jbool(schema, "nullable"))
		c_forbidden(cs, "openAPIV3Schema.nullable", "nullable cannot be true at the root");
	init = structural_init_error(schema, false);
	if (init == NULL) {
		size_t old = CHILD(cs, "openAPIV3Schema"), mark = cs->out.n;
		struct path vp;

		sinvariants(cs, schema, LVL_ROOT);
		path_reset(&vp, cs->p.buf);
		scomplete_vv(cs, schema, schema, &vp);
		elist_sort_from(&cs->out, mark);
		if (cs->out.n == mark)
			sdefaults(cs, schema, true);
		path_pop(&cs->p, old);
	}
	{
		size_t old = CHILD(cs, "openAPIV3Schema");

		sopenapi(cs, schema, &v, true);
		path_pop(&cs->p, old);
	}
	if (cs->out.n == start && init != NULL) {
		size_t old = CHILD(cs, "openAPIV3Schema");

		crc(cs, fe_valued(&cs->out, "Invalid", cs->p.buf, "\"\"", init));
		path_pop(&cs->p, old);
	}
}

/* validateSimpleJSONPath: the first character must be '.'. */
static bool
simple_json_path(struct cstate *cs, const char *child, const char *s)
{
	if (s[0] == '\0') {
		c_invalid_str(cs, child, s, "must not be empty");
		return false;
	}
	if (s[0] != '.') {
		c_invalid_str(cs, child, s, "must be a simple json path starting with .");
		return false;
	}
	return true;
}

static bool
has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void
csubresources(struct cstate *cs, const struct json_object *sub)
{
	const struct json_object *scale = jobj(sub, "scale");
	const char *p, *sel;

	if (scale == NULL)
		return;
	p = jstr0(scale, "specReplicasPath");
	if (p[0] == '\0')
		c_required(cs, "scale.specReplicasPath", NULL);
	else if (simple_json_path(cs, "scale.specReplicasPath", p) && !has_prefix(p, ".spec."))
		c_invalid_str(cs, "scale.specReplicasPath", p, "should be a json path under .spec");
	p = jstr0(scale, "statusReplicasPath");
	if (p[0] == '\0')
		c_required(cs, "scale.statusReplicasPath", NULL);
	else if (simple_json_path(cs, "scale.statusReplicasPath", p) &&
	    !has_prefix(p, ".status."))
		c_invalid_str(cs, "scale.statusReplicasPath", p,
		    "should be a json path under .status");
	sel = jstr0(scale, "labelSelectorPath");
	if (sel[0] != '\0' && simple_json_path(cs, "scale.labelSelectorPath", sel) &&
	    !has_prefix(sel, ".spec.") && !has_prefix(sel, ".status."))
		c_invalid_str(cs, "scale.labelSelectorPath", sel,
		    "should be a json path under either .spec or .status");
}

static void
ccolumn(struct cstate *cs, const struct json_object *col)
{
	static const char *const types[] = { "boolean", "date", "integer", "number", "string" };
	static const char *const formats_ok[] = { "byte", "date", "date-time", "double",
		"float", "int32", "int64", "password" };
	const char *type = jstr0(col, "type"), *format = jstr0(col, "format");
	const char *jp = jstr0(col, "jsonPath");

	if (jstr0(col, "name")[0] == '\0')
		c_required(cs, "name", NULL);
	if (type[0] == '\0')
		c_required(cs, "type", "must be one of boolean,date,integer,number,string");
	else if (!str_in(type, types, KC_ARRAY_SIZE(types)))
		c_invalid_str(cs, "type", type, "must be one of boolean,date,integer,number,string");
	if (format[0] != '\0' && !str_in(format, formats_ok, KC_ARRAY_SIZE(formats_ok)))
		c_invalid_str(cs, "format", format,
		    "must be one of byte,date,date-time,double,float,int32,int64,password");
	if (jp[0] == '\0')
		c_required(cs, "JSONPath", NULL);
	else
		(void)simple_json_path(cs, "JSONPath", jp);
}

static void
ccolumns(struct cstate *cs, const struct json_object *cols, const char *child)
{
	for (size_t i = 0; i < jlen(cols); i++) {
		size_t old = CHILD(cs, child);

		path_index(&cs->p, i);
		ccolumn(cs, jidx(cols, i));
		path_pop(&cs->p, old);
	}
}

static void
cdeprecation(struct cstate *cs, const struct json_object *ver)
{
	const char *w = jstr(ver, "deprecationWarning");
	size_t n;

	if (w == NULL)
		return;
	if (!jbool(ver, "deprecated")) {
		c_invalid_str(cs, "deprecationWarning", w, "can only be set for deprecated versions");
		return;
	}
	n = strlen(w);
	if (n > 256)
		c_invalid_str(cs, "deprecationWarning", w, "must be <= 256 characters long");
	if (n == 0)
		c_invalid_str(cs, "deprecationWarning", w, "must not be an empty string");
	for (size_t i = 0; i < n;) {
		uint32_t c;
		size_t l = kc_utf8_decode(w + i, n - i, &c);
		char detail[160];

		if (l == 0) {
			i++;
			continue;
		}
		if (!kc_rune_is_print(c)) {
			(void)snprintf(detail, sizeof(detail), "must only contain printable UTF-8 "
			    "characters; non-printable character found at index %zu", i);
			c_invalid_str(cs, "deprecationWarning", w, detail);
			break;
		}
		i += l;
	}
	for (size_t i = 0; i < n;) {
		uint32_t c;
		size_t l = kc_utf8_decode(w + i, n - i, &c);

		if (l == 0) {
			c_invalid_str(cs, "deprecationWarning", w,
			    "must only contain printable UTF-8 characters");
			break;
		}
		i += l;
	}
}

/* webhook.ValidateWebhookURL(path, url, forceHttps). */
static void
curl_check(struct cstate *cs, const char *url)
{
	static const char form[] = "; desired format: https://host[/path]";
	char scheme[64] = "", host[512] = "", user[512] = "", frag[512] = "", query[512] = "";
	const char *p = url, *colon = NULL;
	char detail[256];
	bool has_user = false;

	for (const char *q = url; *q != '\0' && *q != '/' && *q != '?' && *q != '#'; q++)
		if (*q == ':') {
			colon = q;
			break;
		}
	if (colon != NULL && colon > url && ((url[0] >= 'a' && url[0] <= 'z') ||
	    (url[0] >= 'A' && url[0] <= 'Z'))) {
		bool ok = true;

		for (const char *q = url; q < colon; q++)
			if (!is_alnum(*q) && *q != '+' && *q != '-' && *q != '.')
				ok = false;
		if (ok && (size_t)(colon - url) < sizeof(scheme)) {
			memcpy(scheme, url, (size_t)(colon - url));
			scheme[colon - url] = '\0';
			for (char *q = scheme; *q != '\0'; q++)
				if (*q >= 'A' && *q <= 'Z')
					*q = (char)(*q | 0x20);
			p = colon + 1;
		}
	} else if (colon != NULL && colon == url) {
		(void)snprintf(detail, sizeof(detail), "url must be a valid URL: parse \"%s\": "
		    "missing protocol scheme%s", url, form);
		c_required(cs, "url", detail);
		return;
	}
	{
		const char *hash = strchr(p, '#'), *qm;

		if (hash != NULL)
			(void)kc_strlcpy(frag, hash + 1, sizeof(frag));
		qm = strchr(p, '?');
		if (qm != NULL && (hash == NULL || qm < hash)) {
			size_t l = (size_t)((hash != NULL ? hash : qm + strlen(qm)) - qm - 1);

			if (l >= sizeof(query))
				l = sizeof(query) - 1;
			memcpy(query, qm + 1, l);
			query[l] = '\0';
		}
	}
	if (p[0] == '/' && p[1] == '/') {
		const char *a = p + 2, *end = a, *at = NULL;
		size_t l;

		while (*end != '\0' && *end != '/' && *end != '?' && *end != '#')
			end++;
		for (const char *q = a; q < end; q++)
			if (*q == '@')
				at = q;
		if (at != NULL) {
			has_user = true;
			l = KC_MIN((size_t)(at - a), sizeof(user) - 1);
			memcpy(user, a, l);
			user[l] = '\0';
			a = at + 1;
		}
		l = KC_MIN((size_t)(end - a), sizeof(host) - 1);
		memcpy(host, a, l);
		host[l] = '\0';
	}
	if (strcmp(scheme, "https") != 0) {
		(void)snprintf(detail, sizeof(detail), "'https' is the only allowed URL scheme%s",
		    form);
		c_invalid_str(cs, "url", scheme, detail);
	}
	if (host[0] == '\0') {
		(void)snprintf(detail, sizeof(detail), "host must be specified%s", form);
		c_invalid_str(cs, "url", host, detail);
	}
	if (has_user)
		c_invalid_str(cs, "url", user, "user information is not permitted in the URL");
	if (frag[0] != '\0')
		c_invalid_str(cs, "url", frag, "fragments are not permitted in the URL");
	if (query[0] != '\0')
		c_invalid_str(cs, "url", query, "query parameters are not permitted in the URL");
}

/* webhook.ValidateWebhookService. */
static void
cservice(struct cstate *cs, const struct json_object *svc)
{
	const char *path = jstr(svc, "path");
	const struct json_object *port = jget(svc, "port");
	int64_t pn = port != NULL && jtype(port) == json_type_int ? jint(port) : 443;

	if (jstr0(svc, "name")[0] == '\0')
		c_required(cs, "name", "service name is required");
	if (jstr0(svc, "namespace")[0] == '\0')
		c_required(cs, "namespace", "service namespace is required");
	if (pn < 1 || pn > 65535) {
		char val[32];

		(void)snprintf(val, sizeof(val), "%lld", (long long)pn);
		c_invalid_raw(cs, "port", val,
		    "port is not valid: must be between 1 and 65535, inclusive");
	}
	if (path == NULL || path[0] == '\0' || strcmp(path, "/") == 0)
		return;
	if (strcmp(path, "//") == 0) {
		c_invalid_str(cs, "path", path, "segment[0] may not be empty");
		return;
	}
	if (path[0] != '/')
		c_invalid_str(cs, "path", path, "must start with a '/'");
	{
		char check[1024];
		size_t l = kc_strlcpy(check, path + 1, sizeof(check));
		size_t seg = 0;
		char *p = check;

		if (l > 0 && l < sizeof(check) && check[l - 1] == '/')
			check[l - 1] = '\0';
		for (;;) {
			char *slash = strchr(p, '/');
			char detail[2 * MSG_MAX], msgs[2][MSG_MAX];
			size_t m;

			if (slash != NULL)
				*slash = '\0';
			if (p[0] == '\0') {
				(void)snprintf(detail, sizeof(detail), "segment[%zu] may not be empty",
				    seg);
				c_invalid_str(cs, "path", path, detail);
			} else {
				m = dns_msgs(NAME_DNS1123_SUBDOMAIN, p, msgs);
				for (size_t i = 0; i < m; i++) {
					(void)snprintf(detail, sizeof(detail), "segment[%zu]: %s", seg,
					    msgs[i]);
					c_invalid_str(cs, "path", path, detail);
				}
			}
			if (slash == NULL)
				break;
			p = slash + 1;
			seg++;
		}
	}
}

static void
cconversion(struct cstate *cs, const struct json_object *conv, bool preserve)
{
	static const char *const strategies[] = { "None", "Webhook" };
	const char *strategy;
	const struct json_object *webhook, *cc, *crv;

	if (conv == NULL)
		return;
	strategy = jstr0(conv, "strategy");
	webhook = jobj(conv, "webhook");
	cc = jobj(webhook, "clientConfig");
	crv = jarr(webhook, "conversionReviewVersions");
	if (strcmp(strategy, "None") != 0 && preserve)
		c_invalid_str(cs, "strategy", strategy,
		    "must be None if spec.preserveUnknownFields is true");
	if (strategy[0] == '\0')
		c_required(cs, "strategy", NULL);
	else if (!str_in(strategy, strategies, 2))
		c_not_supported(cs, "strategy", strategy, strategies, 2);
	if (strcmp(strategy, "Webhook") == 0) {
		if (cc == NULL)
			c_required(cs, "webhookClientConfig", "required when strategy is set to "
			    "Webhook");
		else {
			bool has_url = jstr(cc, "url") != NULL;
			const struct json_object *svc = jobj(cc, "service");

			if (has_url == (svc != NULL))
				c_required(cs, "webhookClientConfig",
				    "exactly one of url or service is required");
			else if (has_url) {
				size_t old = CHILD(cs, "webhookClientConfig");

				curl_check(cs, jstr(cc, "url"));
				path_pop(&cs->p, old);
			} else {
				size_t old = CHILD(cs, "webhookClientConfig");

				CHILD(cs, "service");
				cservice(cs, svc);
				path_pop(&cs->p, old);
			}
		}
		if (jlen(crv) == 0)
			c_required(cs, "conversionReviewVersions", NULL);
		else {
			bool accepted = false;
			char repr[MSG_MAX];

			for (size_t i = 0; i < jlen(crv); i++) {
				const char *v = json_object_get_string(mut(jidx(crv, i)));
				char msgs[2][MSG_MAX];
				bool dup = false;
				size_t old, m;

				if (v == NULL)
					v = "";
				for (size_t j = 0; j < i; j++)
					if (strcmp(json_object_get_string(mut(jidx(crv, j))) != NULL ?
					    json_object_get_string(mut(jidx(crv, j))) : "", v) == 0)
						dup = true;
				old = CHILD(cs, "conversionReviewVersions");
				path_index(&cs->p, i);
				if (dup)
					c_invalid_str(cs, NULL, v, "duplicate version");
				else {
					m = dns_msgs(NAME_DNS1035_LABEL, v, msgs);
					for (size_t k = 0; k < m; k++)
						c_invalid_str(cs, NULL, v, msgs[k]);
				}
				path_pop(&cs->p, old);
				if (!dup && (strcmp(v, "v1") == 0 || strcmp(v, "v1beta1") == 0))
					accepted = true;
			}
			if (!accepted) {
				schema_crd_strings_repr(repr, sizeof(repr), crv);
				c_invalid_raw(cs, "conversionReviewVersions", repr,
				    "must include at least one of v1, v1beta1");
			}
		}
	} else {
		if (cc != NULL)
			c_forbidden(cs, "webhookClientConfig",
			    "should not be set when strategy is not set to Webhook");
		if (jlen(crv) > 0)
			c_forbidden(cs, "conversionReviewVersions",
			    "should not be set when strategy is not set to Webhook");
	}
}

static void
cnames(struct cstate *cs, const struct json_object *names)
{
	static const char *const lower_keys[] = { "plural", "singular" };
	static const char *const mixed_keys[] = { "kind", "listKind" };
	static const char *const lists[] = { "shortNames", "categories" };
	const char *kind = jstr0(names, "kind"), *list_kind = jstr0(names, "listKind");
	char joined[2 * MSG_MAX];
	size_t old = CHILD(cs, "names");

	for (size_t i = 0; i < 2; i++) {
		const char *v = jstr0(names, lower_keys[i]);

		if (v[0] != '\0' && dns_joined(NAME_DNS1035_LABEL, v, "", joined, sizeof(joined)))
			c_invalid_str(cs, lower_keys[i], v, joined);
	}
	for (size_t i = 0; i < 2; i++) {
		const char *v = jstr0(names, mixed_keys[i]);
		char lower[512];
		size_t k;

		for (k = 0; k < sizeof(lower) - 1 && v[k] != '\0'; k++)
			lower[k] = (v[k] >= 'A' && v[k] <= 'Z') ? (char)(v[k] | 0x20) : v[k];
		lower[k] = '\0';
		if (v[0] != '\0' && dns_joined(NAME_DNS1035_LABEL, lower,
		    "may have mixed case, but should otherwise match: ", joined, sizeof(joined)))
			c_invalid_str(cs, mixed_keys[i], v, joined);
		if (i == 0) {
			const struct json_object *sn = jarr(names, "shortNames");

			for (size_t j = 0; j < jlen(sn); j++) {
				const char *s = json_object_get_string(mut(jidx(sn, j)));
				size_t o;

				if (s == NULL || !dns_joined(NAME_DNS1035_LABEL, s, "", joined,
				    sizeof(joined)))
					continue;
				o = CHILD(cs, lists[0]);
				path_index(&cs->p, j);
				c_invalid_str(cs, NULL, s, joined);
				path_pop(&cs->p, o);
			}
		}
	}
	if (kind[0] != '\0' && strcmp(kind, list_kind) == 0)
		c_invalid_str(cs, "listKind", list_kind, "kind and listKind may not be the same");
	{
		const struct json_object *cat = jarr(names, "categories");

		for (size_t j = 0; j < jlen(cat); j++) {
			const char *s = json_object_get_string(mut(jidx(cat, j)));
			size_t o;

			if (s == NULL || !dns_joined(NAME_DNS1035_LABEL, s, "", joined,
			    sizeof(joined)))
				continue;
			o = CHILD(cs, lists[1]);
			path_index(&cs->p, j);
			c_invalid_str(cs, NULL, s, joined);
			path_pop(&cs->p, o);
		}
	}
	path_pop(&cs->p, old);
}

/* Whether any schema in the spec has a default. */
static bool
schema_has_default(const struct json_object *s, unsigned depth)
{
	static const char *const lists[] = { "allOf", "anyOf", "oneOf" };

	if (s == NULL || jtype(s) != json_type_object || depth > SCHEMA_DEPTH_MAX)
		return false;
	if (jget(s, "default") != NULL)
		return true;
	if (schema_has_default(jobj(s, "items"), depth + 1) ||
	    schema_has_default(jobj(s, "not"), depth + 1) ||
	    schema_has_default(jobj(s, "additionalProperties"), depth + 1))
		return true;
	for (size_t k = 0; k < KC_ARRAY_SIZE(lists); k++)
		for (size_t i = 0; i < jlen(jarr(s, lists[k])); i++)
			if (schema_has_default(jidx(jarr(s, lists[k]), i), depth + 1))
				return true;
	if (jobj(s, "properties") != NULL) {
		json_object_object_foreach(mut(jobj(s, "properties")), k, ps) {
			(void)k;
			if (schema_has_default(ps, depth + 1))
				return true;
		}
	}
	return false;
}

/* apiequality.Semantic.DeepEqual of two optional members (nil == empty list). */
static bool
member_equal(const struct json_object *a, const struct json_object *b, bool list)
{
	if (list) {
		if (jlen(a) == 0 && jlen(b) == 0)
			return true;
	}
	if (a == NULL || b == NULL)
		return a == b;
	return kc_json_equal(a, b);
}

static bool
versions_identical(const struct json_object *versions, const char *key, bool list)
{
	const struct json_object *first = jget(jidx(versions, 0), key);

	for (size_t i = 1; i < jlen(versions); i++)
		if (!member_equal(first, jget(jidx(versions, i), key), list))
			return false;
	return jlen(versions) > 0;
}

static bool
status_enabled(const struct json_object *sub)
{
	return jobj(sub, "status") != NULL;
}

/* validateCustomResourceDefinitionSpec on the internal form of a v1 spec. */
static void
cspec(struct cstate *cs, const struct json_object *spec)
{
	static const char *const scopes[] = { "Cluster", "Namespaced" };
	const struct json_object *versions = jarr(spec, "versions"), *names = jobj(spec, "names");
	const char *group = jstr0(spec, "group"), *scope = jstr0(spec, "scope");
	bool hoist_schema = versions_identical(versions, "schema", false);
	bool hoist_sub = versions_identical(versions, "subresources", false);
	bool hoist_cols = versions_identical(versions, "additionalPrinterColumns", true);
	const struct json_object *top_val = hoist_schema ? jobj(jidx(versions, 0), "schema") : NULL;
	const struct json_object *top_sub = hoist_sub ?
	    jobj(jidx(versions, 0), "subresources") : NULL;
	const struct json_object *top_cols = hoist_cols ?
	    jarr(jidx(versions, 0), "additionalPrinterColumns") : NULL;
	bool preserve = jbool(spec, "preserveUnknownFields"), any_status = status_enabled(top_sub);
	size_t nv = jlen(versions), storage = 0;
	bool unique = true, has_defaults = false;
	char joined[2 * MSG_MAX];
	size_t old = CHILD(cs, "spec");

	if (group[0] == '\0')
		c_required(cs, "group", NULL);
	else if (dns_joined(NAME_DNS1123_SUBDOMAIN, group, "", joined, sizeof(joined)))
		c_invalid_str(cs, "group", group, joined);
	else if (strchr(group, '.') == NULL)
		c_invalid_str(cs, "group", group, "should be a domain with at least one dot");
	if (scope[0] == '\0')
		c_required(cs, "scope", NULL);
	else if (!str_in(scope, scopes, 2))
		c_not_supported(cs, "scope", scope, scopes, 2);
	if (top_val == NULL || jobj(top_val, "openAPIV3Schema") == NULL)
		for (size_t i = 0; i < nv; i++) {
			const struct json_object *ver = jidx(versions, i);
			size_t o;

			if (!hoist_schema && jobj(jobj(ver, "schema"), "openAPIV3Schema") != NULL)
				continue;
			o = CHILD(cs, "versions");
			path_index(&cs->p, i);
			c_required(cs, "schema.openAPIV3Schema", "schemas are required");
			path_pop(&cs->p, o);
		}
	for (size_t i = 0; i < nv; i++)
		has_defaults |= schema_has_default(
		    jobj(jobj(jidx(versions, i), "schema"), "openAPIV3Schema"), 0);
	if (has_defaults && preserve)
		c_invalid_raw(cs, "preserveUnknownFields", "true",
		    "must be false in order to use defaults in the schema");
	for (size_t i = 0; i < nv; i++)
		any_status |= !hoist_sub && status_enabled(jobj(jidx(versions, i), "subresources"));
	for (size_t i = 0; i < nv && cs->rc == 0; i++) {
		const struct json_object *ver = jidx(versions, i);
		const char *name = jstr0(ver, "name");
		size_t o = CHILD(cs, "versions");

		path_index(&cs->p, i);
		if (jbool(ver, "storage"))
			storage++;
		for (size_t j = 0; j < i; j++)
			if (strcmp(jstr0(jidx(versions, j), "name"), name) == 0)
				unique = false;
		if (dns_joined(NAME_DNS1035_LABEL, name, "", joined, sizeof(joined)))
			c_invalid_str(cs, "name", name, joined);
		cdeprecation(cs, ver);
		if (!hoist_schema) {
			size_t o2 = CHILD(cs, "schema");

			cvalidation(cs, jobj(ver, "schema"), status_enabled(hoist_sub ? top_sub :
			    jobj(ver, "subresources")));
			path_pop(&cs->p, o2);
		}
		if (!hoist_sub) {
			size_t o2 = CHILD(cs, "subresources");

			csubresources(cs, jobj(ver, "subresources"));
			path_pop(&cs->p, o2);
		}
		if (!hoist_cols)
			ccolumns(cs, jarr(ver, "additionalPrinterColumns"), "additionalPrinterColumns");
		path_pop(&cs->p, o);
	}
	if (!unique)
		c_invalid_dump(cs, "versions", versions, "must contain unique version names");
	if (storage != 1) {
		if (nv == 0)
			c_invalid_raw(cs, "versions", versions == NULL ?
			    "[]apiextensions.CustomResourceDefinitionVersion(nil)" :
			    "[]apiextensions.CustomResourceDefinitionVersion{}",
			    "must have exactly one version marked as storage version");
		else
			c_invalid_dump(cs, "versions", versions,
			    "must have exactly one version marked as storage version");
	}
	if (nv > 0 && jstr0(jidx(versions, 0), "name")[0] != '\0' &&
	    dns_joined(NAME_DNS1035_LABEL, jstr0(jidx(versions, 0), "name"), "", joined,
	    sizeof(joined)))
		c_invalid_str(cs, "version", jstr0(jidx(versions, 0), "name"), joined);
	if (jstr0(names, "plural")[0] == '\0')
		c_required(cs, "names.plural", NULL);
	if (jstr0(names, "singular")[0] == '\0')
		c_required(cs, "names.singular", NULL);
	if (jstr0(names, "kind")[0] == '\0')
		c_required(cs, "names.kind", NULL);
	if (jstr0(names, "listKind")[0] == '\0')
		c_required(cs, "names.listKind", NULL);
	cnames(cs, names);
	if (top_val != NULL && cs->rc == 0) {
		size_t o = CHILD(cs, "validation");

		cvalidation(cs, top_val, any_status);
		path_pop(&cs->p, o);
	}
	if (top_sub != NULL) {
		size_t o = CHILD(cs, "subresources");

		csubresources(cs, top_sub);
		path_pop(&cs->p, o);
	}
	ccolumns(cs, top_cols, "additionalPrinterColumns");
	{
		size_t o = CHILD(cs, "conversion");

		cconversion(cs, jobj(spec, "conversion"), preserve);
		path_pop(&cs->p, o);
	}
	path_pop(&cs->p, old);
}

/* apihelpers.GetAPIApprovalState: 0 approved or bypassed, 1 missing, 2 invalid. */
static int
approval_state(const struct json_object *crd)
{
	const char *a = jstr0(jobj(jobj(crd, "metadata"), "annotations"),
	    "api-approved.kubernetes.io");

	if (a[0] == '\0')
		return 1;
	if (has_prefix(a, "unapproved"))
		return 0;
	return fmt_uri(a, strlen(a)) ? 0 : 2;
}

static bool
protected_group(const char *g)
{
	size_t n = strlen(g);

	return strcmp(g, "k8s.io") == 0 || strcmp(g, "kubernetes.io") == 0 ||
	    (n > 7 && strcmp(g + n - 7, ".k8s.io") == 0) ||
	    (n > 14 && strcmp(g + n - 14, ".kubernetes.io") == 0);
}

static void
capproval(struct cstate *cs, const struct json_object *crd, const struct json_object *old)
{
	static const char field[] = "metadata.annotations[api-approved.kubernetes.io]";
	int state;

	if (!protected_group(jstr0(jobj(crd, "spec"), "group")))
		return;
	state = approval_state(crd);
	if (old != NULL && approval_state(old) == state)
		return;
	if (state == 1)
		crc(cs, fe_required(&cs->out, field, "protected groups must have approval "
		    "annotation \"api-approved.kubernetes.io\", see "
		    "https://github.com/kubernetes/enhancements/pull/1111"));
	else if (state == 2)
		crc(cs, fe_invalid_str(&cs->out, field, jstr0(jobj(jobj(crd, "metadata"),
		    "annotations"), "api-approved.kubernetes.io"), "protected groups must have "
		    "approval annotation \"api-approved.kubernetes.io\" with either a URL or a "
		    "reason starting with \"unapproved\", see "
		    "https://github.com/kubernetes/enhancements/pull/1111"));
}

static bool
established(const struct json_object *crd)
{
	const struct json_object *conds = jarr(jobj(crd, "status"), "conditions");

	for (size_t i = 0; i < jlen(conds); i++)
		if (jstr_eq(jidx(conds, i), "type", "Established") &&
		    jstr_eq(jidx(conds, i), "status", "True"))
			return true;
	return false;
}

static void
cimmutable(struct cstate *cs, const char *field, const char *now, const char *was)
{
	if (strcmp(now, was) != 0)
		crc(cs, fe_invalid_str(&cs->out, field, now, "field is immutable"));
}

int
schema_crd_validate(const struct json_object *crd, const struct json_object *old,
    struct schema_errs *errs, struct kc_status *st)
{
	const struct json_object *meta, *spec, *ospec;
	struct cstate cs = { 0 };
	const char *name, *plural, *group;
	int r;

	if ((r = crd_decode(crd, st)) != 0)
		return r;
	meta = jobj(crd, "metadata");
	spec = jobj(crd, "spec");
	name = jstr0(meta, "name");
	plural = jstr0(jobj(spec, "names"), "plural");
	group = jstr0(spec, "group");
	path_reset(&cs.p, "");
	if (name[0] == '\0')
		crc(&cs, fe_required(&cs.out, "metadata.name", "name or generateName is required"));
	else {
		char msgs[2][MSG_MAX], want[1024];
		size_t n = dns_msgs(NAME_DNS1123_SUBDOMAIN, name, msgs);

		for (size_t i = 0; i < n; i++)
			crc(&cs, fe_invalid_str(&cs.out, "metadata.name", name, msgs[i]));
		(void)snprintf(want, sizeof(want), "%s.%s", plural, group);
		if (strcmp(name, want) != 0)
			crc(&cs, fe_invalid_str(&cs.out, "metadata.name", name,
			    "must be spec.names.plural+\".\"+spec.group"));
	}
	cspec(&cs, spec);
	if (old != NULL && (ospec = jobj(old, "spec")) != NULL && cs.rc == 0) {
		if (established(old)) {
			cimmutable(&cs, "spec.scope", jstr0(spec, "scope"), jstr0(ospec, "scope"));
			cimmutable(&cs, "spec.names.kind", jstr0(jobj(spec, "names"), "kind"),
			    jstr0(jobj(ospec, "names"), "kind"));
		}
		cimmutable(&cs, "spec.group", group, jstr0(ospec, "group"));
		cimmutable(&cs, "spec.names.plural", plural, jstr0(jobj(ospec, "names"), "plural"));
	}
	capproval(&cs, crd, old);
	if (jbool(spec, "preserveUnknownFields") &&
	    !(old != NULL && jbool(jobj(old, "spec"), "preserveUnknownFields")))
		crc(&cs, fe_valued(&cs.out, "Invalid", "spec.preserveUnknownFields", "true",
		    "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
		    "spec.versions[*].schema instead"));
	if (cs.rc != 0) {
		elist_free(&cs.out);
		return cs.rc;
	}
	elist_export(&cs.out, errs);
	r = cs.out.n > 0 || cs.out.dropped > 0 ? KC_EINVALID : 0;
	elist_free(&cs.out);
	return r;
}

int
schema_crd_default(struct json_object *crd)
{
	struct json_object *spec = json_object_object_get(crd, "spec"), *conv, *svc;

	if (spec == NULL || jtype(spec) != json_type_object)
		return 0;
	if (!json_object_object_get_ex(spec, "conversion", &conv) || conv == NULL) {
		if (kc_json_put(spec, "conversion", json_object_new_object()) < 0)
			return -ENOMEM;
		conv = json_object_object_get(spec, "conversion");
		if (kc_json_set_str(conv, "strategy", "None") < 0)
			return -ENOMEM;
	}
	if (jtype(conv) != json_type_object)
		return 0;
	svc = json_object_object_get(json_object_object_get(json_object_object_get(conv,
	    "webhook"), "clientConfig"), "service");
	if (svc != NULL && jtype(svc) == json_type_object && jget(svc, "port") == NULL &&
	    kc_json_set_int(svc, "port", 443) < 0)
		return -ENOMEM;
	return 0;
}

const struct json_object *
schema_crd_version(const struct json_object *crd, const char *version)
{
	const struct json_object *versions = jarr(jobj(crd, "spec"), "versions");

	for (size_t i = 0; i < jlen(versions); i++)
		if (version != NULL && jstr_eq(jidx(versions, i), "name", version))
			return jidx(versions, i);
	return NULL;
}

const struct json_object *
schema_crd_version_schema(const struct json_object *crd, const char *version)
{
	return jobj(jobj(schema_crd_version(crd, version), "schema"), "openAPIV3Schema");
}

const char *
schema_crd_storage_version(const struct json_object *crd)
{
	const struct json_object *versions = jarr(jobj(crd, "spec"), "versions");

	for (size_t i = 0; i < jlen(versions); i++)
		if (jbool(jidx(versions, i), "storage"))
			return jstr(jidx(versions, i), "name");
	return NULL;
}

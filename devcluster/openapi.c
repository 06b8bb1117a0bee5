/*
 * openapi.c: the OpenAPI documents kubectl reads before it writes, and
 * protobuf request bodies: the two jobs of protobuf.c, wired into the
 * core through hooks.openapi and hooks.decode_protobuf.
 *
 * Before "apply", "create -f" and "replace -f", kubectl looks for the
 * PATCH operation of the object's group-version-kind in the OpenAPI
 * document of its group version, and for a fieldValidation query
 * parameter there (KUBE-API.md section 3). Found, it sends
 * fieldValidation=Strict and leaves validation to the server; not found,
 * it fails ("failed to download openapi"). So this file serves
 *
 *	/openapi/v3		{"paths": {"api/v1": {"serverRelativeURL":
 *				"/openapi/v3/api/v1?hash=H"}, ...}}, one
 *				entry per served group version
 *	/openapi/v3/<gv>	an OpenAPI 3.0 document with one PATCH
 *				operation per kind (x-kubernetes-group-
 *				version-kind, the query parameters dryRun,
 *				fieldManager, fieldValidation and force), and
 *				components.schemas: each custom resource's
 *				openAPIV3Schema (for kubectl explain), with
 *				apiVersion, kind and metadata added as
 *				kube-apiserver adds them
 *	/openapi/v2		the same operations as a gnostic
 *				openapi.v2.Document in protobuf, which kubectl
 *				1.27 and 1.28 require, or as JSON
 *	/swagger-2.0.0.pb-v1	the protobuf document again: the path the
 *				1.27/1.28 client falls back to after a 404
 *
 * Built-in kinds get no schema: a schema carrying a kind's
 * x-kubernetes-group-version-kind makes kubectl compute client-side
 * apply patches from it, and a partial one would make those patches
 * wrong, while without one kubectl uses its compiled-in types.
 *
 * H is a content hash of the group version's document (FNV-1a, 64 bits,
 * upper-case hex), so it changes exactly when the document does, and
 * kubectl, which caches documents by URL, refetches. A request naming an
 * outdated hash is redirected (301) to the current URL, as kube-apiserver
 * does. Every document is built at once, on first use after the registry
 * generation changed or a CustomResourceDefinition was written (a storage
 * subscription notices those), and kept until then.
 *
 * Accept negotiation follows kube-openapi's handlers: clauses by quality,
 * then the first clause the server can serve; 406 when none.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/hash.h>
#include <kc/json.h>
#include <kc/str.h>

#include "devcluster.h"
#include "openapi.h"
#include "crd.h"
#include "protobuf.h"

#define CT_JSON		"application/json"
#define CT_V2_PB	"application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
#define SUB_V2_PB	"com.github.proto-openapi.spec.v2@v1.0+protobuf"
#define CT_OCTETS	"application/octet-stream"
#define HASH_LEN	16
#define ACCEPT_MAX	32		/* Accept clauses considered */
#define CRD_GROUP	"apiextensions.k8s.io"
#define CRD_RESOURCE	"customresourcedefinitions"
#define OBJECTMETA	"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

/* One group version's document. */
struct oa_doc {
	char	*gv;			/* "api/v1", "apis/<group>/<version>" */
	char	*body;
	size_t	 len;
	char	 hash[HASH_LEN + 1];
};

struct oa {
	bool		 valid;
	uint64_t	 gen;		/* registry generation built from */
	struct oa_doc	*docs;		/* sorted by gv */
	size_t		 ndocs;
	char		*root;
	size_t		 root_len;
	char		 root_hash[HASH_LEN + 1];
	char		*v2pb;
	size_t		 v2pb_len;
	char		*v2json;
	size_t		 v2json_len;
	bool		 subscribed;
};

/*
 * Hashes and names
 */

static void
content_hash(const char *data, size_t len, char buf[HASH_LEN + 1])
{
	uint64_t h = kc_fnv1a64(KC_FNV1A64_INIT, data, len);

	(void)snprintf(buf, HASH_LEN + 1, "%016" PRIX64, h);
}

/* "api/v1" or "apis/<group>/<version>". */
static void
gv_name(const struct dc_rtype *rt, char *buf, size_t size)
{
	if (rt->group[0] == '\0')
		(void)snprintf(buf, size, "api/%s", rt->version);
	else
		(void)snprintf(buf, size, "apis/%s/%s", rt->group, rt->version);
}

/* Appends 's' with its first letter upper-cased and '-' dropped. */
static int
camel(struct kc_buf *b, const char *s, size_t len)
{
	bool up = true;
	int r;

	for (size_t i = 0; i < len; i++) {
		char ch = s[i];

		if (ch == '-' || ch == '.') {
			up = true;
			continue;
		}
		if (up && ch >= 'a' && ch <= 'z')
			ch = (char)(ch - 32);
		up = false;
		if ((r = kc_buf_putc(b, ch)) < 0)
			return r;
	}
	return 0;
}

/*
 * The operationId kube-apiserver gives a PATCH: "patchCoreV1NamespacedPod",
 * "patchRbacAuthorizationV1ClusterRole", "patchTrainyardDevV1beta1NamespacedRun"
 * (the group without ".k8s.io", each part capitalized).
 */
static char *
operation_id(const struct dc_rtype *rt)
{
	struct kc_buf b;
	const char *g = rt->group;
	size_t glen = strlen(g);
	char *s;

	kc_buf_init(&b, 4096);
	if (glen > 7 && strcmp(g + glen - 7, ".k8s.io") == 0)
		glen -= 7;
	if (kc_buf_puts(&b, "patch") < 0 ||
	    (glen == 0 ? kc_buf_puts(&b, "Core") : camel(&b, g, glen)) < 0 ||
	    camel(&b, rt->version, strlen(rt->version)) < 0 ||
	    (rt->namespaced && kc_buf_puts(&b, "Namespaced") < 0) ||
	    kc_buf_puts(&b, rt->kind) < 0) {
		kc_buf_free(&b);
		return NULL;
	}
	s = kc_buf_take(&b, NULL);
	kc_buf_free(&b);
	return s;
}

/* "/api/v1/namespaces/{namespace}/pods/{name}". */
static char *
object_path(const struct dc_rtype *rt)
{
	char gv[2 * DC_SEGMENT_MAX + 8];

	gv_name(rt, gv, sizeof(gv));
	return kc_asprintf("/%s/%s%s/{name}", gv, rt->namespaced ?
	    "namespaces/{namespace}/" : "", rt->plural);
}

/*
 * The schema name kube-apiserver gives a custom resource: the group's
 * labels reversed, the version, the kind ("dev.trainyard.v1beta1.Run").
 */
static char *
schema_name(const struct dc_rtype *rt)
{
	struct kc_buf b;
	const char *g = rt->group, *end = g + strlen(g), *dot;
	char *s;
	int r = 0;

	kc_buf_init(&b, 4096);
	while (r == 0 && end > g) {
		for (dot = end; dot > g && dot[-1] != '.'; dot--)
			;
		r = kc_buf_append(&b, dot, (size_t)(end - dot));
		if (r == 0)
			r = kc_buf_putc(&b, '.');
		end = dot > g ? dot - 1 : g;
	}
	if (r < 0 || kc_buf_printf(&b, "%s.%s", rt->version, rt->kind) < 0) {
		kc_buf_free(&b);
		return NULL;
	}
	s = kc_buf_take(&b, NULL);
	kc_buf_free(&b);
	return s;
}

/* Whether a type gets a PATCH operation. */
static bool
documented(const struct dc_rtype *rt)
{
	return !(rt->flags & DC_RT_HIDDEN) && (rt->verbs & DC_VERB_PATCH);
}

/*
 * Document pieces
 */

static struct json_object *
gvk_object(const struct dc_rtype *rt)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL || kc_json_set_str(o, "group", rt->group) < 0 ||
	    kc_json_set_str(o, "version", rt->version) < 0 ||
	    kc_json_set_str(o, "kind", rt->kind) < 0) {
		if (o != NULL)
			json_object_put(o);
		return NULL;
	}
	return o;
}

/* A parameter: {name, in, description, required?, schema {type, uniqueItems}}. */
static struct json_object *
parameter(const char *name, const char *in, const char *type, const char *desc)
{
	struct json_object *p = json_object_new_object(), *s;

	if (p == NULL)
		return NULL;
	if (kc_json_set_str(p, "name", name) < 0 || kc_json_set_str(p, "in", in) < 0 ||
	    kc_json_set_str(p, "description", desc) < 0 ||
	    (strcmp(in, "path") == 0 && kc_json_set_bool(p, "required", true) < 0) ||
	    (s = kc_json_ensure_obj(p, "schema")) == NULL ||
	    kc_json_set_str(s, "type", type) < 0 ||
	    kc_json_set_bool(s, "uniqueItems", true) < 0) {
		json_object_put(p);
		return NULL;
	}
	return p;
}

static const struct {
	const char	*name;
	const char	*type;
	const char	*desc;
} query_params[] = {
	{ "dryRun", "string", "When present, indicates that modifications should not "
	    "be persisted. An invalid or unrecognized dryRun directive will result in an "
	    "error response and no further processing of the request. Valid values are: "
	    "- All: all dry run stages will be processed" },
	{ "fieldManager", "string", "fieldManager is a name associated with the actor or "
	    "entity that is making these changes. The value must be less than or 128 "
	    "characters long, and only contain printable characters, as defined by "
	    "https://golang.org/pkg/unicode/#IsPrint. This field is required for apply "
	    "requests (application/apply-patch) but optional for non-apply patch types "
	    "(JsonPatch, MergePatch, StrategicMergePatch)." },
	{ "fieldValidation", "string", "fieldValidation instructs the server on how to "
	    "handle objects in the request (POST/PUT/PATCH) containing unknown or "
	    "duplicate fields. Valid values are: - Ignore: This will ignore any unknown "
	    "fields that are silently dropped from the object, and will ignore all but "
	    "the last duplicate field that the decoder encounters. - Warn: This will "
	    "send a warning via the standard warning response header for each unknown "
	    "field that is dropped from the object, and for each duplicate field that "
	    "is encountered. - Strict: This will fail the request with a BadRequest "
	    "error if any unknown fields would be dropped from the object, or if any "
	    "duplicate fields are present. The error returned from the server will "
	    "contain all unknown and duplicate fields encountered." },
	{ "force", "boolean", "Force is going to \"force\" Apply requests. It means user "
	    "will re-acquire conflicting fields owned by other people. Force flag must "
	    "be unset for non-apply patch requests." },
};

/* The path item of a kind: its path parameters and the PATCH operation. */
static struct json_object *
path_item(const struct dc_rtype *rt, const char *tag)
{
	struct json_object *item, *op, *params, *resp, *r200, *r201;
	char desc[DC_SEGMENT_MAX + 64];
	char *opid = operation_id(rt);

	if (opid == NULL || (item = json_object_new_object()) == NULL) {
		kc_free(opid);
		return NULL;
	}
	(void)snprintf(desc, sizeof(desc), "name of the %s", rt->kind);
	if ((params = json_object_new_array()) == NULL ||
	    kc_json_put(item, "parameters", params) < 0 ||
	    kc_json_append(params, parameter("name", "path", "string", desc)) < 0 ||
	    (rt->namespaced && kc_json_append(params, parameter("namespace", "path",
	    "string", "object name and auth scope, such as for teams and projects")) < 0))
		goto fail;
	(void)snprintf(desc, sizeof(desc), "partially update the specified %s", rt->kind);
	if ((op = kc_json_ensure_obj(item, "patch")) == NULL ||
	    kc_json_put(op, "tags", json_object_new_array()) < 0 ||
	    kc_json_append(kc_json_arr_of(op, "tags"), json_object_new_string(tag)) < 0 ||
	    kc_json_set_str(op, "description", desc) < 0 ||
	    kc_json_set_str(op, "operationId", opid) < 0 ||
	    (params = json_object_new_array()) == NULL ||
	    kc_json_put(op, "parameters", params) < 0)
		goto fail;
	for (size_t i = 0; i < KC_ARRAY_SIZE(query_params); i++)
		if (kc_json_append(params, parameter(query_params[i].name, "query",
		    query_params[i].type, query_params[i].desc)) < 0)
			goto fail;
	if ((resp = kc_json_ensure_obj(op, "responses")) == NULL ||
	    (r200 = kc_json_ensure_obj(resp, "200")) == NULL ||
	    kc_json_set_str(r200, "description", "OK") < 0 ||
	    (r201 = kc_json_ensure_obj(resp, "201")) == NULL ||
	    kc_json_set_str(r201, "description", "Created") < 0 ||
	    kc_json_set_str(op, "x-kubernetes-action", "patch") < 0 ||
	    kc_json_put(op, "x-kubernetes-group-version-kind", gvk_object(rt)) < 0)
		goto fail;
	kc_free(opid);
	return item;
fail:
	kc_free(opid);
	json_object_put(item);
	return NULL;
}

/* A property {type, description} (type NULL: description only). */
static struct json_object *
prop(const char *type, const char *format, const char *desc)
{
	struct json_object *p = json_object_new_object();

	if (p == NULL || (type != NULL && kc_json_set_str(p, "type", type) < 0) ||
	    (format != NULL && kc_json_set_str(p, "format", format) < 0) ||
	    kc_json_set_str(p, "description", desc) < 0) {
		if (p != NULL)
			json_object_put(p);
		return NULL;
	}
	return p;
}

/* {type: object, additionalProperties: {type: string}, description}. */
static struct json_object *
string_map(const char *desc)
{
	struct json_object *p = prop("object", NULL, desc), *ap;

	if (p == NULL)
		return NULL;
	if ((ap = kc_json_ensure_obj(p, "additionalProperties")) == NULL ||
	    kc_json_set_str(ap, "type", "string") < 0 ||
	    kc_json_set_str(ap, "default", "") < 0) {
		json_object_put(p);
		return NULL;
	}
	return p;
}

/* {type: array, items: <items>, description}; 'items' is consumed. */
static struct json_object *
array_of(struct json_object *items, const char *desc)
{
	struct json_object *p = prop("array", NULL, desc);

	if (p == NULL) {
		if (items != NULL)
			json_object_put(items);
		return NULL;
	}
	if (kc_json_put(p, "items", items) < 0) {
		json_object_put(p);
		return NULL;
	}
	return p;
}

/*
 * A short ObjectMeta schema, so the custom resources' metadata property
 * resolves (kubectl explain <kind>.metadata).
 */
static struct json_object *
objectmeta_schema(void)
{
	struct json_object *s = prop("object", NULL, "ObjectMeta is metadata that all "
	    "persisted resources must have, which includes all objects users must "
	    "create."), *props, *owner, *oprops;

	if (s == NULL)
		return NULL;
	if ((props = kc_json_ensure_obj(s, "properties")) == NULL ||
	    kc_json_put(props, "annotations", string_map("Annotations is an unstructured "
	    "key value map stored with a resource that may be set by external tools to "
	    "store and retrieve arbitrary metadata.")) < 0 ||
	    kc_json_put(props, "creationTimestamp", prop("string", "date-time",
	    "CreationTimestamp is a timestamp representing the server time when this "
	    "object was created.")) < 0 ||
	    kc_json_put(props, "deletionTimestamp", prop("string", "date-time",
	    "DeletionTimestamp is RFC 3339 date and time at which this resource will be "
	    "deleted.")) < 0 ||
	    kc_json_put(props, "finalizers", array_of(prop("string", NULL, ""),
	    "Must be empty before the object is deleted from the registry.")) < 0 ||
	    kc_json_put(props, "generateName", prop("string", NULL, "GenerateName is an "
	    "optional prefix, used by the server, to generate a unique name ONLY IF the "
	    "Name field has not been provided.")) < 0 ||
	    kc_json_put(props, "generation", prop("integer", "int64", "A sequence number "
	    "representing a specific generation of the desired state.")) < 0 ||
	    kc_json_put(props, "labels", string_map("Map of string keys and values that "
	    "can be used to organize and categorize (scope and select) objects.")) < 0 ||
	    kc_json_put(props, "managedFields", array_of(prop("object", NULL,
	    "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of "
	    "the resource that the fieldset applies to."), "ManagedFields maps "
	    "workflow-id and version to the set of fields that are managed by that "
	    "workflow.")) < 0 ||
	    kc_json_put(props, "name", prop("string", NULL, "Name must be unique within a "
	    "namespace.")) < 0 ||
	    kc_json_put(props, "namespace", prop("string", NULL, "Namespace defines the "
	    "space within which each name must be unique.")) < 0 ||
	    (owner = prop("object", NULL, "OwnerReference contains enough information to "
	    "let you identify an owning object.")) == NULL ||
	    kc_json_put(props, "ownerReferences", array_of(owner, "List of objects "
	    "depended by this object.")) < 0 ||
	    (oprops = kc_json_ensure_obj(owner, "properties")) == NULL ||
	    kc_json_put(oprops, "apiVersion", prop("string", NULL, "API version of the "
	    "referent.")) < 0 ||
	    kc_json_put(oprops, "blockOwnerDeletion", prop("boolean", NULL, "If true, AND "
	    "if the owner has the \"foregroundDeletion\" finalizer, then the owner cannot "
	    "be deleted from the key-value store until this reference is removed.")) < 0 ||
	    kc_json_put(oprops, "controller", prop("boolean", NULL, "If true, this "
	    "reference points to the managing controller.")) < 0 ||
	    kc_json_put(oprops, "kind", prop("string", NULL, "Kind of the referent.")) < 0 ||
	    kc_json_put(oprops, "name", prop("string", NULL, "Name of the referent.")) < 0 ||
	    kc_json_put(oprops, "uid", prop("string", NULL, "UID of the referent.")) < 0 ||
	    kc_json_put(props, "resourceVersion", prop("string", NULL, "An opaque value "
	    "that represents the internal version of this object.")) < 0 ||
	    kc_json_put(props, "uid", prop("string", NULL, "UID is the unique in time and "
	    "space value for this object.")) < 0) {
		json_object_put(s);
		return NULL;
	}
	return s;
}

/*
 * The components schema of a custom resource: a copy of its version's
 * openAPIV3Schema (an object schema when it has none), with apiVersion,
 * kind and metadata as kube-apiserver's CRD builder adds them, and the
 * x-kubernetes-group-version-kind list kubectl explain looks for.
 */
static struct json_object *
cr_schema(const struct dc_rtype *rt)
{
	const struct json_object *src = crd_owns(rt) ? crd_schema(rt) : NULL;
	struct json_object *s, *props, *meta, *all, *ref, *gvks;

	s = src != NULL ? kc_json_copy(src) : json_object_new_object();
	if (s == NULL)
		return NULL;
	if (!json_object_is_type(s, json_type_object)) {
		json_object_put(s);
		return NULL;
	}
	if (kc_json_str(s, "type") == NULL && kc_json_set_str(s, "type", "object") < 0)
		goto fail;
	if ((props = kc_json_ensure_obj(s, "properties")) == NULL)
		goto fail;
	if (kc_json_put(props, "apiVersion", prop("string", NULL, "APIVersion defines "
	    "the versioned schema of this representation of an object. Servers should "
	    "convert recognized schemas to the latest internal value, and may reject "
	    "unrecognized values. More info: https://git.k8s.io/community/contributors/"
	    "devel/sig-architecture/api-conventions.md#resources")) < 0 ||
	    kc_json_put(props, "kind", prop("string", NULL, "Kind is a string value "
	    "representing the REST resource this object represents. Servers may infer "
	    "this from the endpoint the client submits requests to. Cannot be updated. "
	    "In CamelCase. More info: https://git.k8s.io/community/contributors/devel/"
	    "sig-architecture/api-conventions.md#types-kinds")) < 0)
		goto fail;
	if ((meta = prop(NULL, NULL, "Standard object's metadata. More info: "
	    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
	    "api-conventions.md#metadata")) == NULL ||
	    kc_json_put(props, "metadata", meta) < 0 ||
	    (all = json_object_new_array()) == NULL ||
	    kc_json_put(meta, "allOf", all) < 0 ||
	    (ref = json_object_new_object()) == NULL ||
	    kc_json_append(all, ref) < 0 ||
	    kc_json_set_str(ref, "$ref", "#/components/schemas/" OBJECTMETA) < 0 ||
	    (gvks = json_object_new_array()) == NULL ||
	    kc_json_put(s, "x-kubernetes-group-version-kind", gvks) < 0 ||
	    kc_json_append(gvks, gvk_object(rt)) < 0)
		goto fail;
	return s;
fail:
	json_object_put(s);
	return NULL;
}

static int
strp_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Moves the members of 'o' into a new object, keys sorted (Go's map order). */
static struct json_object *
sorted(struct json_object *o)
{
	size_t n = (size_t)json_object_object_length(o), i = 0;
	const char **keys;
	struct json_object *out;

	if ((keys = kc_calloc(n > 0 ? n : 1, sizeof(*keys))) == NULL)
		return NULL;
	json_object_object_foreach(o, k, v) {
		(void)v;
		keys[i++] = k;
	}
	qsort(keys, n, sizeof(*keys), strp_cmp);
	if ((out = json_object_new_object()) == NULL) {
		kc_free(keys);
		return NULL;
	}
	for (i = 0; i < n; i++)
		if (kc_json_put(out, keys[i], json_object_get(json_object_object_get(o,
		    keys[i]))) < 0) {
			json_object_put(out);
			kc_free(keys);
			return NULL;
		}
	kc_free(keys);
	return out;
}

/* The document of the group version named 'gv'. */
static int
build_gv(struct dc *dc, const char *gv, struct json_object **ret)
{
	struct json_object *doc, *info, *paths, *schemas, *comp;
	const struct dc_rtype *t;
	char tgv[2 * DC_SEGMENT_MAX + 8], tag[2 * DC_SEGMENT_MAX + 8];
	bool any_cr = false;
	int r = -ENOMEM;

	if ((doc = json_object_new_object()) == NULL)
		return -ENOMEM;
	if ((paths = json_object_new_object()) == NULL)
		goto out;
	if ((schemas = json_object_new_object()) == NULL) {
		json_object_put(paths);
		goto out;
	}
	TAILQ_FOREACH(t, &dc->reg.types, link) {
		char *path;

		gv_name(t, tgv, sizeof(tgv));
		if (!documented(t) || strcmp(tgv, gv) != 0)
			continue;
		/* Tags as upstream: "core_v1", "rbacAuthorization_v1"... */
		(void)snprintf(tag, sizeof(tag), "%s_%s", t->group[0] != '\0' ? t->group :
		    "core", t->version);
		if ((path = object_path(t)) == NULL) {
			r = -ENOMEM;
			goto fail;
		}
		r = kc_json_put(paths, path, path_item(t, tag));
		kc_free(path);
		if (r < 0)
			goto fail;
		if (t->flags & DC_RT_CUSTOM) {
			char *name = schema_name(t);

			r = name != NULL ? kc_json_put(schemas, name, cr_schema(t)) :
			    -ENOMEM;
			kc_free(name);
			if (r < 0)
				goto fail;
			any_cr = true;
		}
	}
	r = -ENOMEM;
	if (any_cr && kc_json_put(schemas, OBJECTMETA, objectmeta_schema()) < 0)
		goto fail;
	if (kc_json_set_str(doc, "openapi", "3.0.0") < 0 ||
	    (info = kc_json_ensure_obj(doc, "info")) == NULL ||
	    kc_json_set_str(info, "title", "Kubernetes") < 0 ||
	    kc_json_set_str(info, "version", dc->git_version) < 0 ||
	    kc_json_put(doc, "paths", sorted(paths)) < 0 ||
	    (comp = kc_json_ensure_obj(doc, "components")) == NULL ||
	    kc_json_put(comp, "schemas", sorted(schemas)) < 0)
		goto fail;
	json_object_put(paths);
	json_object_put(schemas);
	*ret = doc;
	return 0;
fail:
	json_object_put(paths);
	json_object_put(schemas);
out:
	json_object_put(doc);
	return r;
}

/*
 * The OpenAPI v2 document: protobuf (protobuf_openapi_v2()) and JSON, the
 * same paths and operations.
 */
static int
build_v2(struct dc *dc, struct oa *oa)
{
	struct protobuf_openapi_op *ops = NULL;
	struct json_object *doc = NULL, *info, *paths = NULL, *p2 = NULL;
	struct kc_status st = { 0 };
	const struct dc_rtype *t;
	size_t n = 0, cap = 0, i;
	char *pb = NULL, *js = NULL;
	size_t pb_len = 0, js_len = 0;
	int r = -ENOMEM;

	TAILQ_FOREACH(t, &dc->reg.types, link)
		if (documented(t))
			cap++;
	if ((ops = kc_calloc(cap > 0 ? cap : 1, sizeof(*ops))) == NULL)
		return -ENOMEM;
	if ((paths = json_object_new_object()) == NULL)
		goto out;
	TAILQ_FOREACH(t, &dc->reg.types, link) {
		struct json_object *item, *op, *params, *param, *pv;

		if (!documented(t))
			continue;
		ops[n] = (struct protobuf_openapi_op){
			.path = object_path(t), .operation_id = operation_id(t),
			.group = t->group, .version = t->version, .kind = t->kind,
		};
		n++;
		if (ops[n - 1].path == NULL || ops[n - 1].operation_id == NULL)
			goto out;
		if ((item = json_object_new_object()) == NULL ||
		    kc_json_put(paths, ops[n - 1].path, item) < 0 ||
		    (op = kc_json_ensure_obj(item, "patch")) == NULL ||
		    kc_json_set_str(op, "operationId", ops[n - 1].operation_id) < 0 ||
		    (params = json_object_new_array()) == NULL ||
		    kc_json_put(op, "parameters", params) < 0 ||
		    (param = json_object_new_object()) == NULL ||
		    kc_json_append(params, param) < 0 ||
		    kc_json_set_bool(param, "uniqueItems", true) < 0 ||
		    kc_json_set_str(param, "type", "string") < 0 ||
		    kc_json_set_str(param, "description", query_params[2].desc) < 0 ||
		    kc_json_set_str(param, "name", "fieldValidation") < 0 ||
		    kc_json_set_str(param, "in", "query") < 0 ||
		    kc_json_set_str(op, "x-kubernetes-action", "patch") < 0 ||
		    (pv = gvk_object(t)) == NULL ||
		    kc_json_put(op, "x-kubernetes-group-version-kind", pv) < 0)
			goto out;
	}
	if ((r = protobuf_openapi_v2("Kubernetes", dc->git_version, ops, n, &pb, &pb_len,
	    &st)) < 0)
		goto out;
	r = -ENOMEM;
	if ((doc = json_object_new_object()) == NULL ||
	    kc_json_set_str(doc, "swagger", "2.0") < 0 ||
	    (info = kc_json_ensure_obj(doc, "info")) == NULL ||
	    kc_json_set_str(info, "title", "Kubernetes") < 0 ||
	    kc_json_set_str(info, "version", dc->git_version) < 0 ||
	    (p2 = sorted(paths)) == NULL ||
	    kc_json_put(doc, "paths", p2) < 0 ||
	    kc_json_put(doc, "definitions", json_object_new_object()) < 0 ||
	    (js = kc_json_dump(doc, &js_len)) == NULL)
		goto out;
	kc_free(oa->v2pb);
	kc_free(oa->v2json);
	oa->v2pb = pb;
	oa->v2pb_len = pb_len;
	oa->v2json = js;
	oa->v2json_len = js_len;
	pb = NULL;
	js = NULL;
	r = 0;
out:
	for (i = 0; i < n; i++) {
		kc_free((char *)(uintptr_t)ops[i].path);
		kc_free((char *)(uintptr_t)ops[i].operation_id);
	}
	kc_free(ops);
	kc_free(pb);
	kc_free(js);
	if (paths != NULL)
		json_object_put(paths);
	if (doc != NULL)
		json_object_put(doc);
	return r;
}

/*
 * The cache
 */

static void
docs_free(struct oa *oa)
{
	for (size_t i = 0; i < oa->ndocs; i++) {
		kc_free(oa->docs[i].gv);
		kc_free(oa->docs[i].body);
	}
	oa->docs = kc_free(oa->docs);
	oa->ndocs = 0;
	oa->root = kc_free(oa->root);
	oa->root_len = 0;
	oa->v2pb = kc_free(oa->v2pb);
	oa->v2pb_len = 0;
	oa->v2json = kc_free(oa->v2json);
	oa->v2json_len = 0;
	oa->valid = false;
}

static int
doc_cmp(const void *a, const void *b)
{
	return strcmp(((const struct oa_doc *)a)->gv, ((const struct oa_doc *)b)->gv);
}

/* Builds every document from the registry and the stored CRDs. */
static int
rebuild(struct dc *dc, struct oa *oa)
{
	struct json_object *root = NULL, *paths;
	const struct dc_rtype *t;
	size_t cap = 0;
	int r = -ENOMEM;

	docs_free(oa);
	TAILQ_FOREACH(t, &dc->reg.types, link)
		cap++;
	if ((oa->docs = kc_calloc(cap > 0 ? cap : 1, sizeof(*oa->docs))) == NULL)
		return -ENOMEM;
	TAILQ_FOREACH(t, &dc->reg.types, link) {
		char gv[2 * DC_SEGMENT_MAX + 8];
		bool seen = false;

		if (t->flags & DC_RT_HIDDEN)
			continue;
		gv_name(t, gv, sizeof(gv));
		for (size_t i = 0; i < oa->ndocs && !seen; i++)
			seen = strcmp(oa->docs[i].gv, gv) == 0;
		if (seen)
			continue;
		if ((oa->docs[oa->ndocs].gv = kc_strdup(gv)) == NULL)
			goto fail;
		oa->ndocs++;
	}
	qsort(oa->docs, oa->ndocs, sizeof(*oa->docs), doc_cmp);
	if ((root = json_object_new_object()) == NULL ||
	    (paths = kc_json_ensure_obj(root, "paths")) == NULL)
		goto fail;
	for (size_t i = 0; i < oa->ndocs; i++) {
		struct oa_doc *d = &oa->docs[i];
		struct json_object *doc = NULL, *entry;
		char *url;

		if ((r = build_gv(dc, d->gv, &doc)) < 0)
			goto fail;
		d->body = kc_json_dump(doc, &d->len);
		json_object_put(doc);
		r = -ENOMEM;
		if (d->body == NULL)
			goto fail;
		content_hash(d->body, d->len, d->hash);
		if ((url = kc_asprintf("/openapi/v3/%s?hash=%s", d->gv, d->hash)) == NULL)
			goto fail;
		if ((entry = json_object_new_object()) == NULL ||
		    kc_json_put(paths, d->gv, entry) < 0 ||
		    kc_json_set_str(entry, "serverRelativeURL", url) < 0) {
			kc_free(url);
			goto fail;
		}
		kc_free(url);
	}
	if ((oa->root = kc_json_dump(root, &oa->root_len)) == NULL)
		goto fail;
	content_hash(oa->root, oa->root_len, oa->root_hash);
	if ((r = build_v2(dc, oa)) < 0)
		goto fail;
	json_object_put(root);
	oa->gen = dc->reg.generation;
	oa->valid = true;
	return 0;
fail:
	if (root != NULL)
		json_object_put(root);
	docs_free(oa);
	return r;
}

static int
ensure_built(struct dc *dc, struct oa *oa)
{
	if (oa->valid && oa->gen == dc->reg.generation)
		return 0;
	return rebuild(dc, oa);
}

/* A CRD written: its schema may have changed. */
static void
on_event(void *arg, const struct dc_event *ev)
{
	struct dc *dc = arg;
	struct oa *oa = plugin_state(dc, &openapi_plugin);

	if (oa != NULL && strcmp(coll_group(ev->coll), CRD_GROUP) == 0 &&
	    strcmp(coll_resource(ev->coll), CRD_RESOURCE) == 0)
		oa->valid = false;
}

/*
 * Requests
 */

struct clause {
	char	 type[64];
	char	 sub[128];
	double	 q;
	int	 spec;		/* 2: type/sub, 1: type/x, 0: x/x */
	size_t	 order;
};

static int
clause_cmp(const void *a, const void *b)
{
	const struct clause *x = a, *y = b;

	if (x->q != y->q)
		return x->q > y->q ? -1 : 1;
	if (x->spec != y->spec)
		return x->spec > y->spec ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Parses an Accept header as goautoneg does (sorted); returns the count. */
static size_t
accept_parse(const char *accept, struct clause *out, size_t max)
{
	const char *p = accept != NULL && accept[0] != '\0' ? accept : "*/*";
	size_t n = 0;

	while (*p != '\0' && n < max) {
		const char *end = strchr(p, ',');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
		char item[512], *s, *semi, *slash;
		struct clause *c = &out[n];

		if (len < sizeof(item)) {
			memcpy(item, p, len);
			item[len] = '\0';
			s = item;
			while (*s == ' ' || *s == '\t')
				s++;
			semi = strchr(s, ';');
			if (semi != NULL)
				*semi++ = '\0';
			for (size_t k = strlen(s); k > 0 && (s[k - 1] == ' ' || s[k - 1] == '\t');
			    k--)
				s[k - 1] = '\0';
			memset(c, 0, sizeof(*c));
			c->q = 1.0;
			c->order = n;
			if ((slash = strchr(s, '/')) != NULL) {
				*slash = '\0';
				(void)kc_strlcpy(c->type, s, sizeof(c->type));
				(void)kc_strlcpy(c->sub, slash + 1, sizeof(c->sub));
			} else if (strcmp(s, "*") == 0) {
				(void)kc_strlcpy(c->type, "*", sizeof(c->type));
				(void)kc_strlcpy(c->sub, "*", sizeof(c->sub));
			}
			while (semi != NULL) {
				char *next = strchr(semi, ';'), *eq;

				if (next != NULL)
					*next++ = '\0';
				while (*semi == ' ')
					semi++;
				if ((eq = strchr(semi, '=')) != NULL && eq - semi == 1 &&
				    semi[0] == 'q')
					c->q = strtod(eq + 1, NULL);
				semi = next;
			}
			c->spec = strcmp(c->type, "*") == 0 ? 0 : strcmp(c->sub, "*") == 0 ?
			    1 : 2;
			if (c->type[0] != '\0' && c->q > 0)
				n++;
		}
		if (end == NULL)
			break;
		p = end + 1;
	}
	qsort(out, n, sizeof(*out), clause_cmp);
	return n;
}

/*
 * The first of 'subs' (subtypes of "application") the Accept header
 * takes, in the header's preference order; -1 when none.
 */
static int
accept_pick(const char *accept, const char *const *subs, size_t nsubs)
{
	struct clause cl[ACCEPT_MAX] = { 0 };
	size_t n = accept_parse(accept, cl, ACCEPT_MAX);

	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < nsubs; j++) {
			if (strcmp(cl[i].type, "application") != 0 &&
			    strcmp(cl[i].type, "*") != 0)
				continue;
			if (strcmp(cl[i].sub, subs[j]) != 0 && strcmp(cl[i].sub, "*") != 0)
				continue;
			return (int)j;
		}
	return -1;
}

static int
reply_bytes(struct dc_resp *resp, int status, const char *ctype, const char *data,
    size_t len, const char *etag)
{
	int r;

	resp->status = status;
	resp->content_type = ctype;
	kc_buf_reset(&resp->body);
	if ((r = kc_buf_append(&resp->body, data, len)) < 0)
		return r;
	if (etag != NULL) {
		char q[HASH_LEN + 3];

		(void)snprintf(q, sizeof(q), "\"%s\"", etag);
		if ((r = resp_header(resp, "Etag", q)) < 0)
			return r;
	}
	return 0;
}

static int
not_acceptable(struct dc_resp *resp)
{
	return resp_text(resp, 406, "text/plain; charset=utf-8", "");
}

/* /openapi/v3/<gv>: the document, a redirect to its current hash, or 404/406. */
static int
serve_gv(struct dc *dc, struct oa *oa, const struct dc_req *req, const char *gv,
    struct dc_resp *resp)
{
	/* kube-apiserver also serves protobuf here; kubectl asks for JSON. */
	static const char *const subs[] = { "json" };
	const char *hash = req_param(req, "hash");
	const struct oa_doc *d = NULL;
	int pick, r;

	for (size_t i = 0; i < oa->ndocs && d == NULL; i++)
		if (strcmp(oa->docs[i].gv, gv) == 0)
			d = &oa->docs[i];
	if (d == NULL)
		return DC_DECLINED;
	pick = accept_pick(req->accept, subs, KC_ARRAY_SIZE(subs));
	if (pick != 0)
		return not_acceptable(resp);
	if (hash != NULL && hash[0] != '\0' && strcmp(hash, d->hash) != 0) {
		char *url = kc_asprintf("/openapi/v3/%s?hash=%s", d->gv, d->hash);
		char *html;

		if (url == NULL)
			return -ENOMEM;
		html = kc_asprintf("<a href=\"%s\">Moved Permanently</a>.\n\n", url);
		r = html == NULL ? -ENOMEM :
		    resp_text(resp, 301, "text/html; charset=utf-8", html);
		if (r == 0)
			r = resp_header(resp, "Location", url);
		kc_free(html);
		kc_free(url);
		return r;
	}
	(void)dc;
	return reply_bytes(resp, 200, CT_JSON, d->body, d->len, d->hash);
}

/* /openapi/v2: protobuf or JSON by Accept, else 406. */
static int
serve_v2(struct oa *oa, const struct dc_req *req, struct dc_resp *resp)
{
	static const char *const subs[] = { "json", SUB_V2_PB };
	int pick = accept_pick(req->accept, subs, KC_ARRAY_SIZE(subs));

	if (pick == 0)
		return reply_bytes(resp, 200, CT_JSON, oa->v2json, oa->v2json_len, NULL);
	if (pick == 1)
		return reply_bytes(resp, 200, CT_V2_PB, oa->v2pb, oa->v2pb_len, NULL);
	return not_acceptable(resp);
}

/* hooks.openapi */
static int
openapi_handle(struct dc *dc, const struct dc_req *req, const struct dc_route *route,
    struct dc_resp *resp)
{
	struct oa *oa = plugin_state(dc, &openapi_plugin);
	const char *path = req->path;
	int r;

	(void)route;
	if (oa == NULL || (req->method != DC_GET && req->method != DC_HEAD))
		return DC_DECLINED;
	if (strcmp(path, "/openapi/v3") != 0 && strcmp(path, "/openapi/v3/") != 0 &&
	    strncmp(path, "/openapi/v3/", 12) != 0 && strcmp(path, "/openapi/v2") != 0 &&
	    strcmp(path, "/swagger-2.0.0.pb-v1") != 0)
		return DC_DECLINED;
	if ((r = ensure_built(dc, oa)) < 0)
		return r;
	if (strcmp(path, "/openapi/v3") == 0 || strcmp(path, "/openapi/v3/") == 0)
		return reply_bytes(resp, 200, CT_JSON, oa->root, oa->root_len,
		    oa->root_hash);
	if (strncmp(path, "/openapi/v3/", 12) == 0)
		return serve_gv(dc, oa, req, path + 12, resp);
	if (strcmp(path, "/openapi/v2") == 0)
		return serve_v2(oa, req, resp);
	return reply_bytes(resp, 200, CT_OCTETS, oa->v2pb, oa->v2pb_len, NULL);
}

/*
 * Protobuf request bodies
 */

/* hooks.decode_protobuf */
static int
decode_protobuf(struct dc *dc, const struct dc_rtype *rt, const char *body, size_t len,
    struct json_object **ret, struct kc_status *st)
{
	struct kc_status pst = { 0 };
	int r;

	(void)dc;
	/* Custom resources have no protobuf form; kube-apiserver answers so. */
	if (rt->flags & DC_RT_CUSTOM)
		return kc_status_set(st, KC_EMEDIATYPE, "the body of the request was in an "
		    "unknown format - accepted media types include: application/json, "
		    "application/yaml");
	r = protobuf_decode(body, len, rt->api_version, rt->kind, ret, &pst);
	if (r == KC_EBADREQUEST)
		return kc_status_set(st, r, "%s in version \"%s\" cannot be handled as a %s: "
		    "%s", rt->kind, rt->version, rt->kind, pst.message);
	if (r < 0 && r != -ENOMEM)
		return kc_status_set(st, r, "%s", pst.message);
	return r;
}

/*
 * Setup
 */

int
openapi_init(struct dc *dc)
{
	struct oa *oa;
	int r;

	if (plugin_state(dc, &openapi_plugin) != NULL)
		return 0;
	if ((oa = kc_calloc(1, sizeof(*oa))) == NULL)
		return -ENOMEM;
	if ((r = storage_subscribe(dc->store, on_event, dc)) < 0) {
		kc_free(oa);
		return r;
	}
	oa->subscribed = true;
	plugin_set_state(dc, &openapi_plugin, oa);
	dc->hooks.openapi = openapi_handle;
	dc->hooks.decode_protobuf = decode_protobuf;
	return 0;
}

void
openapi_fini(struct dc *dc)
{
	struct oa *oa = plugin_state(dc, &openapi_plugin);

	if (oa == NULL)
		return;
	if (oa->subscribed && dc->store != NULL)
		storage_unsubscribe(dc->store, on_event, dc);
	docs_free(oa);
	kc_free(oa);
	plugin_set_state(dc, &openapi_plugin, NULL);
	if (dc->hooks.openapi == openapi_handle)
		dc->hooks.openapi = NULL;
	if (dc->hooks.decode_protobuf == decode_protobuf)
		dc->hooks.decode_protobuf = NULL;
}

int
openapi_hash(struct dc *dc, const char *gv, char buf[OPENAPI_HASH_MAX])
{
	struct oa *oa = plugin_state(dc, &openapi_plugin);
	int r;

	if (oa == NULL)
		return -EINVAL;
	if ((r = ensure_built(dc, oa)) < 0)
		return r;
	for (size_t i = 0; i < oa->ndocs; i++)
		if (strcmp(oa->docs[i].gv, gv) == 0) {
			(void)kc_strlcpy(buf, oa->docs[i].hash, OPENAPI_HASH_MAX);
			return 0;
		}
	return KC_ENOTFOUND;
}

static int
openapi_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	(void)cfg;
	(void)st;
	return openapi_init(dc);
}

const struct dc_plugin openapi_plugin = {
	.name = "openapi",
	.init = openapi_start,
	.fini = openapi_fini,
};

/*
 * Patches: JSON merge patch (RFC 7386), JSON patch (RFC 6902) with JSON
 * Pointer (RFC 6901), and Kubernetes strategic merge patch.
 *
 * Every function here reads its inputs and builds a new tree: a document
 * may be a frozen tree shared between threads, so nothing is written to
 * it, not even a reference count or json-c's cached serialization.
 * json-c represents JSON null as a NULL pointer, so a NULL document is the
 * JSON value null, and a result may be NULL (null) on success.
 *
 * Error codes follow the API server: a patch that is not a patch of its
 * kind (undecodable, not an array, an unknown op, a missing member, a bad
 * pointer, a bad directive) is KC_EPARSE (400); a well-formed patch that
 * cannot be applied to this document (a failed test, a missing path, an
 * index out of range) is KC_EINVALID (422); a document, patch or list
 * past a limit below is KC_ETOOLARGE (413). 'st' says what and where:
 *
 *	op 2 (test) at /spec/x: value differs
 *
 *	struct json_object *pod2 = NULL;
 *	r = kc_smp_apply(pod, patch, &kc_smp_schema_pod, &pod2, &st);
 */
#ifndef KC_PATCH_H
#define KC_PATCH_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/macro.h>

#define KC_PATCH_SIZE_MAX	(3u << 20)	/* patch bytes, as kube-apiserver */
#define KC_PATCH_OPS_MAX	10000		/* operations in one JSON patch */
#define KC_PATCH_DEPTH_MAX	100		/* nesting of documents and patches */
#define KC_PATCH_POINTER_MAX	4096		/* bytes in one JSON pointer */
#define KC_PATCH_LIST_MAX	4096		/* elements of a merged SMP list */

/*
 * Parses a patch body of 'len' bytes: KC_ETOOLARGE past KC_PATCH_SIZE_MAX,
 * KC_EPARSE for anything but one JSON value. '*ret' is a new reference
 * (NULL for the JSON value null).
 */
int	kc_patch_parse(const char *text, size_t len, struct json_object **ret,
	    struct kc_status *st) _must_check_;

/*
 * Applies a JSON merge patch (RFC 7386) to 'doc': an object patch merges
 * member by member, a null member deletes, anything else (arrays
 * included) replaces. On success '*ret' is a new tree (NULL when the
 * result is null). KC_ETOOLARGE for over-deep input, -ENOMEM.
 */
int	kc_merge_patch_apply(const struct json_object *doc,
	    const struct json_object *patch, struct json_object **ret,
	    struct kc_status *st) _must_check_;

/*
 * Computes a merge patch that turns 'orig' into 'mod': removed members
 * become null, nested objects are diffed, arrays and other values are
 * replaced whole; equal objects give {}. Values compare exactly (1 and
 * 1.0 differ), so applying the result to 'orig' gives 'mod', except that
 * a merge patch cannot set a member to null: null members of 'mod' read
 * as absent, and the result may lack them. When 'mod' is not an object
 * the patch is a copy of it. '*ret' is a new tree.
 */
int	kc_merge_patch_create(const struct json_object *orig,
	    const struct json_object *mod, struct json_object **ret,
	    struct kc_status *st) _must_check_;

/*
 * Applies a JSON patch (RFC 6902): an array of add, remove, replace,
 * move, copy and test operations, applied in order to a private copy, so
 * a failing operation leaves nothing changed. Array indices are decimal
 * without leading zeros; "-" appends (add only). Unknown members of an
 * operation are ignored. 'test' compares by value (numbers by numeric
 * value, objects regardless of key order). More than KC_PATCH_OPS_MAX
 * operations is KC_ETOOLARGE. Operation indices in messages count from 0.
 */
int	kc_json_patch_apply(const struct json_object *doc,
	    const struct json_object *patch, struct json_object **ret,
	    struct kc_status *st) _must_check_;

/*
 * Resolves a JSON Pointer (RFC 6901; "" is the whole document, ~0 is "~"
 * and ~1 is "/") in 'doc'. On success '*ret' is borrowed from 'doc' (NULL
 * for a null value). KC_EPARSE for a malformed pointer, KC_ENOTFOUND when
 * nothing is there.
 */
int	kc_json_pointer_get(const struct json_object *doc, const char *ptr,
	    struct json_object **ret, struct kc_status *st) _must_check_;

/*
 * Strategic merge patch, as k8s.io/apimachinery/pkg/util/strategicpatch
 * applies it on the server. Maps merge as in a merge patch. A list is
 * replaced unless the schema gives its field KC_SMP_MERGE: a list of maps
 * then merges element by element on 'merge_key', and a list of
 * primitives merges as a set. Directives in the patch:
 *
 *	"$patch": "replace"		in a map: the map becomes the rest of
 *					the patch map; as a list element: the
 *					list becomes the other patch elements
 *	"$patch": "delete"		in a map: it becomes {}; in a list
 *					element with the merge key: that
 *					element is removed
 *	"$patch": "merge"		the default, accepted and ignored
 *	"$setElementOrder/<list>": [..]	the order of the merged list
 *	"$deleteFromPrimitiveList/<list>": [..]  values to remove
 *	"$retainKeys": [..]		members of the map to keep
 *
 * Fields are named by dotted paths from the object's root; a list element
 * adds no segment ("spec.containers.env"). A key containing '.' ends
 * matching for everything below it.
 */
enum {
	KC_SMP_MERGE		= 1 << 0,	/* lists: merge by key or as a set */
	KC_SMP_REPLACE		= 1 << 1,	/* maps: replace instead of merging */
	KC_SMP_RETAIN_KEYS	= 1 << 2,	/* takes $retainKeys (informational) */
};

struct kc_smp_field {
	const char	*path;		/* "spec.containers" */
	unsigned	 strategy;	/* KC_SMP_* */
	const char	*merge_key;	/* "name"; NULL for primitive lists */
};

struct kc_smp_schema {
	const char			*name;		/* "Pod", for messages */
	const struct kc_smp_field	*fields;
	size_t				 nfields;
	/*
	 * Optional, consulted when no row of 'fields' names the path: fills
	 * '*ret' and returns true when it knows the field.
	 */
	bool	(*lookup)(const void *arg, const char *path,
		    struct kc_smp_field *ret);
	const void			*arg;
};

/*
 * Schemas for the built-in kinds the devcluster serves. Every one knows
 * metadata.ownerReferences (merge on uid) and metadata.finalizers (a
 * merged set of strings).
 */
extern const struct kc_smp_schema kc_smp_schema_object;	/* metadata only */
extern const struct kc_smp_schema kc_smp_schema_pod;
extern const struct kc_smp_schema kc_smp_schema_service;
extern const struct kc_smp_schema kc_smp_schema_workload;	/* apps/v1 */
extern const struct kc_smp_schema kc_smp_schema_node;
extern const struct kc_smp_schema kc_smp_schema_namespace;
extern const struct kc_smp_schema kc_smp_schema_serviceaccount;
extern const struct kc_smp_schema kc_smp_schema_webhookconfiguration;

/*
 * The schema of a built-in group ("" for core) and kind: Pod, Service,
 * ConfigMap, Secret, Node, Namespace, ServiceAccount, Event, Endpoints,
 * Lease, NetworkPolicy, the RBAC kinds, webhook configurations, apps/v1
 * Deployment and ReplicaSet, and
 * CustomResourceDefinition. NULL for anything else: a custom resource
 * has no strategic merge patch (the server answers 415).
 */
const struct kc_smp_schema *kc_smp_schema_for(const char *group, const char *kind);

/*
 * Looks 'path' up in 'schema' (NULL: no schema). Returns false, with
 * '*ret' zeroed, when the field has no strategy.
 */
bool	kc_smp_lookup(const struct kc_smp_schema *schema, const char *path,
	    struct kc_smp_field *ret);

/*
 * Applies a strategic merge patch (a JSON object) to 'doc' (an object, or
 * NULL for none) following 'schema' (NULL: no list merges). '*ret' is a
 * new tree. Errors as for the others: KC_EPARSE for a patch that is not
 * an object or a malformed directive (an unknown "$patch" value, a list
 * element without its merge key, a $setElementOrder list that disagrees
 * with the patch list), KC_EINVALID when the patch does not fit the
 * document (mixed or nested lists, a patch member outside $retainKeys).
 */
int	kc_smp_apply(const struct json_object *doc, const struct json_object *patch,
	    const struct kc_smp_schema *schema, struct json_object **ret,
	    struct kc_status *st) _must_check_;

#endif

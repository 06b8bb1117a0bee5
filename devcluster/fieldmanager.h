/*
 * fieldmanager.h: server-side apply and metadata.managedFields, as
 * kube-apiserver's field manager (k8s.io/apimachinery
 * pkg/util/managedfields/internal) and sigs.k8s.io/structured-merge-diff
 * do them.
 *
 * A pure module: json-c trees in, new json-c trees out, no state, no
 * logging, inputs never modified (a result may hold references to parts
 * of them, so they are for one thread, as the devcluster's loop is). The
 * FieldsV1 sets of the managedFields it writes are raw values
 * (kc_json_new_raw()): text that prints as the set, not a tree. Two
 * entry points do the work the API handlers need:
 *
 *	fieldmanager_apply()	an application/apply-patch+yaml request:
 *				merge, prune, conflicts, the Apply entry
 *	fieldmanager_update()	every other write (create, update, patch,
 *				/status): the Update entry of the writer
 *
 * and smaller pieces are public for the handlers and for tests: the
 * field set of an object, set algebra on FieldsV1 trees, the FieldsV1
 * key forms, manager names and PatchOptions validation.
 *
 * List and map shapes come from the caller through struct fm_schema (see
 * there). Without one, lists are atomic and objects are structs with
 * named fields, except the shapes ObjectMeta has on every kind
 * (labels and annotations are maps, finalizers a set, ownerReferences a
 * map keyed by uid, managedFields atomic).
 */
#ifndef DC_FIELDMANAGER_H
#define DC_FIELDMANAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/macro.h>

/* Limits. */
#define FM_DEPTH_MAX		100		/* nesting of objects and FieldsV1 */
#define FM_PATH_MAX		1024		/* a dotted schema path, with NUL */
#define FM_KEYS_MAX		8		/* key fields of a list-type map */
#define FM_TEXT_MAX		(4u << 20)	/* one serialized key or annotation */
#define FM_MANAGER_MAX		128		/* bytes of a manager name */
#define FM_UPDATE_MANAGERS_MAX	10		/* Update entries before merging */

/*
 * The shape of the value at one path, as a schema tells it:
 * x-kubernetes-list-type and x-kubernetes-list-map-keys (or a strategic
 * merge key), x-kubernetes-map-type, properties or additionalProperties.
 */
enum fm_kind {
	FM_UNKNOWN = 0,	/* not known: a list is atomic, an object a struct */
	FM_ATOMIC,	/* list-type atomic or map-type atomic: one leaf */
	FM_SET,		/* list-type set: items are scalars, "v:<value>" */
	FM_MAP_LIST,	/* list-type map: items keyed, "k:{<keys>}" */
	FM_STRUCT,	/* an object with named fields (properties); say so,
			   and a null applied there leaves the object be,
			   as upstream (unknown, null is a plain value) */
	FM_MAP,		/* an object with free keys (additionalProperties,
			   x-kubernetes-preserve-unknown-fields) */
};

struct fm_type {
	enum fm_kind	 kind;
	size_t		 nkeys;			/* FM_MAP_LIST: 1..FM_KEYS_MAX */
	const char	*keys[FM_KEYS_MAX];	/* key field names */
	/*
	 * The JSON text of a key field's schema default ("\"TCP\""), used
	 * when an item omits that key; NULL when it has none.
	 */
	const char	*key_defaults[FM_KEYS_MAX];
};

/*
 * Paths are dotted from the object's root, a list item adding no segment
 * and a key of an FM_MAP object reading "*": "spec.template.spec.
 * containers.ports", "spec.selectors.*.values". A key containing '.'
 * (an annotation name) ends the lookups below it: everything there is
 * FM_UNKNOWN. 'lookup' fills '*ret' and returns true when it knows the
 * path; the strings it stores must outlive the call (static, or owned by
 * 'arg'). Called from the calling thread only.
 */
struct fm_schema {
	bool	(*lookup)(const void *arg, const char *path, struct fm_type *ret);
	const void *arg;
};

/*
 * A lookup over a strategic merge schema from lib/patch.c ('arg' is a
 * const struct kc_smp_schema *, from kc_smp_schema_for()): a merge key
 * makes a list-type map on that key, a merge without a key a set;
 * anything else is unknown (so atomic). Container ports are keyed by
 * containerPort and protocol, Service ports by port and protocol, the
 * protocol defaulting to "TCP", as in the OpenAPI schema.
 */
bool	fieldmanager_smp_lookup(const void *arg, const char *path, struct fm_type *ret);

/*
 * Reset fields, as the registry strategies declare them: a main-resource
 * write of a kind with a status subresource ignores "status"; a /status
 * write ignores "spec". NULL-terminated lists of dotted paths.
 */
extern const char *const fieldmanager_reset_status[];
extern const char *const fieldmanager_reset_spec[];

/* The kinds of FieldsV1 keys ("path elements"). */
enum fm_pe_type {
	FM_PE_UNKNOWN = 0,	/* a prefix this version does not know: skipped */
	FM_PE_FIELD,		/* "f:<name>" */
	FM_PE_KEY,		/* "k:{<key fields, sorted, compact JSON>}" */
	FM_PE_VALUE,		/* "v:<JSON value>" */
	FM_PE_INDEX,		/* "i:<index>" */
};

/*
 * Parses one FieldsV1 key. On success '*ret_type' is its kind and
 * '*ret_value' a new reference: the field name (a string), the key
 * object with its members sorted, the value (NULL for null), or the
 * index (an int); NULL for FM_PE_UNKNOWN. KC_EINVALID for a key shorter
 * than two bytes, without ':' second, or with bad JSON or a bad index,
 * with structured-merge-diff's message in 'st'.
 */
int	fieldmanager_pe_parse(const char *text, enum fm_pe_type *ret_type,
	    struct json_object **ret_value, struct kc_status *st) _must_check_;

/*
 * Formats a FieldsV1 key as structured-merge-diff serializes it: "f:"
 * and the name (a string 'value'), "k:" and the object compact with its
 * members sorted, "v:" and the value, "i:" and an int. JSON is written
 * as Go's encoding/json does (<, >, & escaped). '*ret' is allocated
 * (kc_free()). KC_EINVALID when 'value' does not fit 'type'.
 */
int	fieldmanager_pe_format(enum fm_pe_type type, const struct json_object *value,
	    char **ret, struct kc_status *st) _must_check_;

/*
 * The FieldsV1 set of 'obj' (an object) as an Apply entry records it:
 * every scalar and atomic leaf, every list item ("k:" and "v:" keys,
 * with "." when the item also has fields), and every key of an FM_MAP
 * object; objects with named fields are only their fields. The fields
 * no entry ever holds are left out (apiVersion, kind, metadata itself,
 * metadata name, namespace, uid, resourceVersion, generation,
 * creationTimestamp, selfLink, clusterName, managedFields), and so is
 * everything at or below each path of 'reset' (NULL: none). '*ret' is
 * a new object. KC_EINVALID when a list item has no key or repeats one
 * (the message names the path, as structured-merge-diff does).
 */
int	fieldmanager_fieldset(const struct json_object *obj, const struct fm_schema *schema,
	    const char *const *reset, struct json_object **ret, struct kc_status *st)
	    _must_check_;

/*
 * Set algebra on FieldsV1 trees, with structured-merge-diff's meaning
 * ("." marks a node that is itself in the set). The difference removes
 * the members of 'b' from 'a' and no more: a.b minus a is a.b. Results
 * are new canonical trees ("." first, keys in structured-merge-diff
 * order). KC_EINVALID for a tree that is not FieldsV1.
 */
int	fieldmanager_fieldset_union(const struct json_object *a, const struct json_object *b,
	    struct json_object **ret, struct kc_status *st) _must_check_;
int	fieldmanager_fieldset_intersection(const struct json_object *a,
	    const struct json_object *b, struct json_object **ret, struct kc_status *st)
	    _must_check_;
int	fieldmanager_fieldset_difference(const struct json_object *a,
	    const struct json_object *b, struct json_object **ret, struct kc_status *st)
	    _must_check_;
/* 1 when the set has no member, 0 when it has one, KC_EINVALID. */
int	fieldmanager_fieldset_empty(const struct json_object *a, struct kc_status *st)
	    _must_check_;

/*
 * The manager a write is recorded under, as kube-apiserver names it:
 * 'field_manager' when non-empty, else the User-Agent up to its first
 * '/', without unprintable characters, cut at FM_MANAGER_MAX bytes
 * ("kubectl/v1.32.4 (linux/amd64) ..." -> "kubectl"). Either may be
 * NULL. The result may be empty; the writes record "unknown" then.
 * -ENOBUFS when 'size' is too small.
 */
int	fieldmanager_manager_name(const char *field_manager, const char *user_agent,
	    char *buf, size_t size) _must_check_;

/*
 * Validates the fieldManager and force query parameters of a write, as
 * ValidatePatchOptions (and ValidateCreateOptions/UpdateOptions) do.
 * 'kind' is "PatchOptions", "CreateOptions" or "UpdateOptions"; 'apply'
 * says the patch is an apply patch (fieldManager required); 'force_set'
 * that a force parameter was given (forbidden except for apply). On
 * failure returns KC_EINVALID (422) with the message
 *
 *	PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required
 *	value: is required for apply patch
 *
 * in 'st' (and its causes), and '*ret_details' (may be NULL) a new
 * metav1.StatusDetails object {group, kind, causes}.
 */
int	fieldmanager_validate_options(const char *kind, bool apply, const char *field_manager,
	    bool force_set, struct json_object **ret_details, struct kc_status *st)
	    _must_check_;
/*
 * The same, and the rest of Create-, Update- and PatchOptions' validation
 * in upstream's order and one 422: 'bad_dry_run', when not NULL, is the
 * dryRun values as Go prints a []string (some value is not "All");
 * 'field_validation', when not NULL, must be "", "Ignore", "Strict" or
 * "Warn".
 */
int	fieldmanager_validate_write_options(const char *kind, bool apply,
	    const char *field_manager, bool force_set, const char *bad_dry_run,
	    const char *field_validation, struct json_object **ret_details,
	    struct kc_status *st) _must_check_;

/*
 * Decoded FieldsV1 sets, by their text, and the raw text of encoded sets,
 * by their shape. Objects of one shape (the pods of one Run, the
 * scheduler's condition entries) have sets that print the same, and a
 * write finds the sets of the object it replaces already decoded (the
 * write before it encoded them) instead of parsing them again. At most
 * FM_CACHE_ENTRIES sets each way, of at most FM_CACHE_TEXT_MAX bytes of
 * text and FM_CACHE_BYTES in all; when a slot is needed the least
 * recently used of its row of four goes. For one thread. fm_cache_new():
 * 0 or -ENOMEM; fm_cache_free(NULL) is a no-op.
 */
#define FM_CACHE_ENTRIES	4096
#define FM_CACHE_TEXT_MAX	(64u << 10)
#define FM_CACHE_BYTES		(32u << 20)
struct fm_cache;
int	fm_cache_new(struct fm_cache **ret) _must_check_;
void	fm_cache_free(struct fm_cache *);
/* Lookups that found their set, and that did not (for tests and stats). */
void	fm_cache_counts(const struct fm_cache *, uint64_t *ret_hits, uint64_t *ret_misses);

/* One server-side apply. */
/*
 * Entries recorded at another apiVersion are compared there, as
 * structured-merge-diff's Updater does: a converter turns 'obj' (at the
 * write's apiVersion, without managedFields) into 'to', giving 0, a new
 * tree in '*ret' and that version's shapes in '*ret_schema' (NULL lookup:
 * none; what it points to must outlive the call). It may give
 * -EINPROGRESS (the answer comes later): the field manager then asks for
 * the other conversions it can and returns -EINPROGRESS, and the caller
 * calls it again with the same inputs once the answers are in. Any other
 * code fails the write with the message the converter put in 'st'
 * (prefixed as upstream: "failed to convert new object: ...").
 */
typedef int	fm_convert_fn(void *arg, const struct json_object *obj, const char *to,
		    struct json_object **ret, struct fm_schema *ret_schema,
		    struct kc_status *st);

struct fm_apply {
	/* The stored object with its managedFields, or NULL to create. */
	const struct json_object *live;
	/* The applied configuration (the decoded request body). */
	const struct json_object *config;
	const char	*manager;	/* fieldManager, required */
	bool		 force;		/* force=true: take conflicting fields */
	const char	*api_version;	/* of the request URL: "trainyard.dev/v1beta1" */
	const char	*kind;		/* "Run"; NULL: not checked */
	const char	*subresource;	/* "status" or NULL */
	const struct fm_schema *schema;	/* NULL: no list or map shapes */
	const char *const *reset;	/* ignored paths, or NULL */
	/*
	 * The empty object the kind decodes to, which a create starts from
	 * (built-ins: {"spec":{},"status":{}} and the like, so that those
	 * parents are not recorded as added); NULL means {}.
	 */
	const struct json_object *empty;
	time_t		 now;		/* recorded as the entry's time */
	struct fm_cache	*cache;		/* decoded sets (fm_cache_new()), or NULL */
	fm_convert_fn	*convert;	/* entries of other versions; NULL: none */
	void		*convert_arg;
};

/*
 * Applies 'a->config' to 'a->live' as kube-apiserver does, in order:
 *
 *	- the body must be of the URL's kind (400 "invalid object type:
 *	  <group>/<version>, Kind=<kind>") and carry no
 *	  metadata.managedFields (400 "metadata.managedFields must be nil");
 *	  the manager must be valid (422 as fieldmanager_validate_options());
 *	- a live object without managedFields first gets an Update entry
 *	  "before-first-apply" owning everything it has;
 *	- maps merge, lists by their type (atomic lists are replaced, sets
 *	  take the union, list-type maps merge item by item), the applied
 *	  value winning;
 *	- what this manager applied last time and omits now is removed,
 *	  unless another entry owns it (at the version the manager applied
 *	  at last time, through 'convert', when it differs);
 *	- every entry recorded at another apiVersion needs the live object
 *	  converted to it (through 'convert'; its failure fails the apply
 *	  with the converter's message as is);
 *	- a field owned by another entry (Apply or Update) whose value the
 *	  apply changes (compared at that entry's apiVersion, with the live
 *	  and the new object converted there) is a conflict: 409 unless
 *	  'force', which moves the field to this manager. For manager "kubectl", conflicts with
 *	  values the live last-applied-configuration annotation holds are
 *	  forced (the client-side to server-side apply upgrade), and that
 *	  annotation, when present, is rewritten from the applied body;
 *	- the manager's Apply entry becomes exactly the applied set (minus
 *	  the metadata no entry holds and the reset paths); its time is
 *	  'now' when the object changed; entries left empty are dropped;
 *	  Update entries beyond FM_UPDATE_MANAGERS_MAX are merged, oldest
 *	  first, into "ancient-changes".
 *
 * On success '*ret' is the new object (a new tree) with
 * metadata.managedFields set (or removed when empty). It keeps
 * whatever server-set metadata the live object had, and whatever
 * uid/resourceVersion the body brought: preconditions, defaults,
 * status resets and validation are the caller's. Compare it with the
 * stored object (managedFields times aside) to skip no-op writes.
 *
 * Errors ('st' filled; '*ret' untouched; '*ret_details', may be NULL,
 * set to a new metav1.StatusDetails object when the error has one):
 *	KC_ECONFLICT	409 "Apply failed with 1 conflict: conflict with
 *			\"kubectl-client-side-apply\" using v1: .spec.replicas",
 *			details {causes: [{reason: FieldManagerConflict,
 *			message: "conflict with ...", field: ".spec.replicas"}]}
 *	KC_EBADREQUEST	400 as above
 *	KC_EINVALID	422 bad manager
 *	KC_EINTERNAL	500 with an empty reason, as kube-apiserver answers
 *			"failed to create typed patch object (ns/name;
 *			g/v, Kind=K): .spec.env: duplicate entries for key
 *			[name=\"A\"]" and undecodable live managedFields
 *	KC_ETOOLARGE	nesting past FM_DEPTH_MAX
 *	-EINPROGRESS	'convert' will answer later
 *	other		'convert''s code, with its message
 *	-ENOMEM
 */
int	fieldmanager_apply(const struct fm_apply *a, struct json_object **ret,
	    struct json_object **ret_details, struct kc_status *st) _must_check_;

/* One write that is not an apply. */
struct fm_update {
	fm_convert_fn	*convert;	/* as in struct fm_apply */
	void		*convert_arg;
	/* The stored object, or NULL for a create. */
	const struct json_object *old;
	/*
	 * The object about to be stored: after the patch, defaults and the
	 * strategy's resets, carrying the managedFields the client sent
	 * (or the stored ones a patch left in place).
	 */
	const struct json_object *obj;
	const char	*manager;	/* fieldmanager_manager_name(); "" -> "unknown" */
	const char	*api_version;	/* of the request URL */
	const char	*subresource;	/* "status" or NULL */
	const struct fm_schema *schema;
	const char *const *reset;
	const struct json_object *empty;	/* as in struct fm_apply */
	time_t		 now;
	struct fm_cache	*cache;		/* as in struct fm_apply */
};

/*
 * Records a create, update or non-apply patch, as kube-apiserver's
 * FieldManager.Update does (entries recorded at other versions are
 * compared there through 'u->convert'; its -EINPROGRESS and failures come
 * back as for fieldmanager_apply(), and the caller then drops
 * managedFields, as UpdateNoErrors does). The entries start from the
 * managedFields in 'u->obj' when they are valid and non-empty (a client
 * may rewrite them: kubectl's client-side to server-side apply upgrade
 * replaces them with a JSON patch), from "[]" or "[{}]" there as empty
 * (a reset), and otherwise (or always, on a subresource) from the
 * stored object's. Then the fields the write changed or added move to
 * the manager's Update entry (keyed by manager, apiVersion and
 * subresource; its time becomes 'now'), every other entry loses them
 * and the removed ones, and empty entries are dropped. A write that
 * changes nothing changes no entry.
 *
 * On success '*ret' is 'u->obj' with the new metadata.managedFields
 * (none when no entry is left): a new top level and metadata, the other
 * members shared with 'u->obj' (read them; do not change them). When the object
 * cannot be typed (a list-type map item without its key), it comes back
 * without managedFields, as upstream does. -ENOMEM, KC_ETOOLARGE, or
 * KC_EINVALID for an 'obj' that is not an object.
 */
int	fieldmanager_update(const struct fm_update *u, struct json_object **ret,
	    struct kc_status *st) _must_check_;

/*
 * Turns the FieldsV1 trees in the metadata.managedFields of 'obj' (a
 * private tree: parsed from a client or from disk) into raw values, so
 * they cost their text instead of a json-c object per path element.
 * Entries that are not objects and fieldsV1 that is not an object are left
 * as they are (the field manager rejects them on the next write). 0 or
 * -ENOMEM.
 */
int	fieldmanager_compact(struct json_object *obj) _must_check_;

#endif

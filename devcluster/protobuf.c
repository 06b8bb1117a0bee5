/*
 * protobuf.c: a small, bounded protobuf wire-format reader and writer.
 *
 * kubectl 1.32 and later send the bodies of typed clients (create
 * namespace, configmap, secret, serviceaccount, role, rolebinding...; auth
 * can-i) as Kubernetes protobuf:
 *
 *	"k8s\0" runtime.Unknown{typeMeta{apiVersion 1, kind 2} 1, raw 2,
 *	    contentEncoding 3, contentType 4}
 *
 * with the object's own message in 'raw'. The devcluster stores JSON, so
 * protobuf_decode() turns such a body into exactly the JSON object that
 * kubectl 1.31 sends for the same command. It works in two passes:
 *
 *	1. decode: the bytes become a tree of struct pb_obj, one per
 *	   message, with one slot per known field. Slots hold slices into the
 *	   body (nothing is copied), the last varint, child messages, and
 *	   vectors for repeated and map fields. Go's proto2 rules hold: the
 *	   last scalar wins, an embedded message seen twice is merged, repeated
 *	   fields append, unknown fields are skipped (wire types 0, 1, 2, 5).
 *	2. emit: the tree becomes json-c following Go's encoding/json: Go
 *	   struct order, "omitempty" dropping "", 0, false, nil and empty
 *	   maps and slices but never a struct, pointers emitted when set,
 *	   metav1.Time as RFC 3339 or null, []byte as base64, maps sorted by
 *	   key, invalid UTF-8 as U+FFFD.
 *
 * A static table (struct pb_msgtype) describes each message: field
 * number, JSON name, kind, Go flags. A new kind is a few table lines.
 *
 * Everything is bounded: the body size, the nesting depth, the number of
 * values (messages, list items, map entries), every varint (at most ten
 * bytes, no overflow) and every length (never past the enclosing message).
 * Groups (wire types 3 and 4) and wire types 6 and 7 are errors.
 *
 * The same primitives write the OpenAPI v2 document kubectl reads before
 * a write (protobuf_openapi_v2()): gnostic's openapi.v2.Document with one
 * PATCH operation per path. Lengths are computed bottom-up, so the bytes
 * are written in one pass.
 *
 *	r = protobuf_decode(req->body, req->body_len, "v1", "Namespace",
 *	    &obj, &st);
 *	-> {"kind":"Namespace","apiVersion":"v1","metadata":{"name":"foo",
 *	    "creationTimestamp":null},"spec":{},"status":{}}
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/buf.h>
#include <kc/json.h>
#include <kc/str.h>

#include "protobuf.h"

/* Wire types. */
enum {
	WT_VARINT = 0,
	WT_I64 = 1,
	WT_LEN = 2,
	WT_SGROUP = 3,
	WT_EGROUP = 4,
	WT_I32 = 5,
};

#define FIELD_NUM_MAX	536870911u	/* 2^29 - 1 */

/*
 * metav1.Time bounds, in Unix seconds: 0001-01-01T00:00:00Z is Go's zero
 * time (JSON null); 9999-12-31T23:59:59Z is the last one RFC 3339 prints.
 */
#define TIME_ZERO_SECONDS	(-62135596800LL)
#define TIME_MAX_SECONDS	253402300799LL

/*
 * Message descriptions
 */

enum pb_ftype {
	PBF_STRING,		/* string */
	PBF_BYTES,		/* bytes, kept as a slice (not emitted) */
	PBF_INT64,		/* int64 varint */
	PBF_BOOL,		/* bool varint */
	PBF_TIME,		/* metav1.Time {seconds 1, nanos 2} */
	PBF_MSG,		/* embedded message, merged */
	PBF_STRINGS,		/* repeated string */
	PBF_MSGS,		/* repeated message */
	PBF_MAP_STRING,		/* map<string, string> */
	PBF_MAP_BYTES,		/* map<string, bytes>: base64 values */
	PBF_INT32,		/* int32 varint (truncated as Go truncates) */
	PBF_MAP_QUANTITY,	/* map<string, resource.Quantity {string 1}> */
};

#define PBF_OMITEMPTY	0x1	/* json:",omitempty" (no effect on structs) */
#define PBF_POINTER	0x2	/* a Go pointer: emitted iff set */
#define PBF_NULL	0x4	/* with PBF_POINTER, no omitempty: null when unset */

struct pb_msgtype;

struct pb_field {
	uint32_t		 num;
	uint8_t			 type;		/* enum pb_ftype */
	uint8_t			 flags;
	const char		*json;
	const struct pb_msgtype	*msg;		/* PBF_MSG, PBF_MSGS */
};

struct pb_msgtype {
	const char		*name;		/* for error messages */
	const struct pb_field	*fields;	/* in Go struct (JSON) order */
	size_t			 nfields;
	bool			 rawjson;	/* FieldsV1: its bytes are JSON */
	bool			 intorstr;	/* intstr.IntOrString: a string or a number */
};

#define F(n, j, t, fl)		{ .num = (n), .json = (j), .type = (t), .flags = (fl) }
#define M(n, j, t, fl, m)	{ .num = (n), .json = (j), .type = (t), .flags = (fl), \
				  .msg = (m) }
#define MSGTYPE(nm, f)		{ .name = (nm), .fields = (f), .nfields = KC_ARRAY_SIZE(f) }

#define OE	PBF_OMITEMPTY
#define PTR	PBF_POINTER

/* k8s.io/apimachinery/pkg/apis/meta/v1 */

static const struct pb_field fieldsv1_fields[] = {
	F(1, "Raw", PBF_BYTES, 0),
};
static const struct pb_msgtype t_fieldsv1 = {
	.name = "FieldsV1", .fields = fieldsv1_fields,
	.nfields = KC_ARRAY_SIZE(fieldsv1_fields), .rawjson = true,
};

static const struct pb_field owner_ref_fields[] = {
	F(5, "apiVersion", PBF_STRING, 0),
	F(1, "kind", PBF_STRING, 0),
	F(3, "name", PBF_STRING, 0),
	F(4, "uid", PBF_STRING, 0),
	F(6, "controller", PBF_BOOL, PTR),
	F(7, "blockOwnerDeletion", PBF_BOOL, PTR),
};
static const struct pb_msgtype t_owner_ref = MSGTYPE("OwnerReference", owner_ref_fields);

static const struct pb_field managed_fields[] = {
	F(1, "manager", PBF_STRING, OE),
	F(2, "operation", PBF_STRING, OE),
	F(3, "apiVersion", PBF_STRING, OE),
	F(4, "time", PBF_TIME, PTR),
	F(6, "fieldsType", PBF_STRING, OE),
	M(7, "fieldsV1", PBF_MSG, PTR, &t_fieldsv1),
	F(8, "subresource", PBF_STRING, OE),
};
static const struct pb_msgtype t_managed = MSGTYPE("ManagedFieldsEntry", managed_fields);

static const struct pb_field objectmeta_fields[] = {
	F(1, "name", PBF_STRING, OE),
	F(2, "generateName", PBF_STRING, OE),
	F(3, "namespace", PBF_STRING, OE),
	F(4, "selfLink", PBF_STRING, OE),
	F(5, "uid", PBF_STRING, OE),
	F(6, "resourceVersion", PBF_STRING, OE),
	F(7, "generation", PBF_INT64, OE),
	F(8, "creationTimestamp", PBF_TIME, 0),
	F(9, "deletionTimestamp", PBF_TIME, PTR),
	F(10, "deletionGracePeriodSeconds", PBF_INT64, PTR),
	F(11, "labels", PBF_MAP_STRING, OE),
	F(12, "annotations", PBF_MAP_STRING, OE),
	M(13, "ownerReferences", PBF_MSGS, OE, &t_owner_ref),
	F(14, "finalizers", PBF_STRINGS, OE),
	M(17, "managedFields", PBF_MSGS, OE, &t_managed),
};
static const struct pb_msgtype t_objectmeta = MSGTYPE("ObjectMeta", objectmeta_fields);

/* Requirements of field and label selectors share one shape. */
static const struct pb_field requirement_fields[] = {
	F(1, "key", PBF_STRING, 0),
	F(2, "operator", PBF_STRING, 0),
	F(3, "values", PBF_STRINGS, OE),
};
static const struct pb_msgtype t_field_req = MSGTYPE("FieldSelectorRequirement",
    requirement_fields);
static const struct pb_msgtype t_label_req = MSGTYPE("LabelSelectorRequirement",
    requirement_fields);

/* k8s.io/api/core/v1 */

static const struct pb_field ns_spec_fields[] = {
	F(1, "finalizers", PBF_STRINGS, OE),
};
static const struct pb_msgtype t_ns_spec = MSGTYPE("NamespaceSpec", ns_spec_fields);

static const struct pb_field ns_cond_fields[] = {
	F(1, "type", PBF_STRING, 0),
	F(2, "status", PBF_STRING, 0),
	F(4, "lastTransitionTime", PBF_TIME, 0),
	F(5, "reason", PBF_STRING, OE),
	F(6, "message", PBF_STRING, OE),
};
static const struct pb_msgtype t_ns_cond = MSGTYPE("NamespaceCondition", ns_cond_fields);

static const struct pb_field ns_status_fields[] = {
	F(1, "phase", PBF_STRING, OE),
	M(2, "conditions", PBF_MSGS, OE, &t_ns_cond),
};
static const struct pb_msgtype t_ns_status = MSGTYPE("NamespaceStatus", ns_status_fields);

static const struct pb_field namespace_fields[] = {
	M(1, "metadata", PBF_MSG, 0, &t_objectmeta),
	M(2, "spec", PBF_MSG, 0, &t_ns_spec),
	M(3, "status", PBF_MSG, 0, &t_ns_status),
};
static const struct pb_msgtype t_namespace = MSGTYPE("Namespace", namespace_fields);

static const struct pb_field configmap_fields[] = {
	M(1, "metadata", PBF_MSG, 0, &t_objectmeta),
	F(4, "immutable", PBF_BOOL, PTR),
	F(2, "data", PBF_MAP_STRING, OE),
	F(3, "binaryData", PBF_MAP_BYTES, OE),
};
static const struct pb_msgtype t_configmap = MSGTYPE("ConfigMap", configmap_fields);

static const struct pb_field secret_fields[] = {
	M(1, "metadata", PBF_MSG, 0, &t_objectmeta),
	F(5, "immutable", PBF_BOOL, PTR),
	F(2, "data", PBF_MAP_BYTES, OE),
	F(4, "stringData", PBF_MAP_STRING, OE),
	F(3, "type", PBF_STRING, OE),
};
static const struct pb_msgtype t_secret = MSGTYPE("Secret", secret_fields);

static const struct pb_field object_ref_fields[] = {
	F(1, "kind", PBF_STRING, OE),
	F(2, "namespace", PBF_STRING, OE),
	F(3, "name", PBF_STRING, OE),
	F(4, "uid", PBF_STRING, OE),
	F(5, "apiVersion", PBF_STRING, OE),
	F(6, "resourceVersion", PBF_STRING, OE),
	F(7, "fieldPath", PBF_STRING, OE),
};
static const struct pb_msgtype t_object_ref = MSGTYPE("ObjectReference", object_ref_fields);

static const struct pb_field local_ref_fields[] = {
	F(1, "name", PBF_STRING, OE),
};
static const struct pb_msgtype t_local_ref = MSGTYPE("LocalObjectReference",
    local_ref_fields);

static const struct pb_field serviceaccount_fields[] = {
	M(1, "metadata", PBF_MSG, 0, &t_objectmeta),
	M(2, "secrets", PBF_MSGS, OE, &t_object_ref),
	M(3, "imagePullSecrets", PBF_MSGS, OE, &t_local_ref),
	F(4, "automountServiceAccountToken", PBF_BOOL, PTR),
};
static const struct pb_msgtype t_serviceaccount = MSGTYPE("ServiceAccount",
    serviceaccount_fields);

/* k8s.io/api/rbac/v1 */

static const struct pb_field label_selector_fields[] = {
	F(1, "matchLabels", PBF_MAP_STRING, OE),
	M(2, "matchExpressions", PBF_MSGS, OE, &t_label_req),
};
static const struct pb_msgtype t_label_selector = MSGTYPE("LabelSelector",
    label_selector_fields);

static const struct pb_field policy_rule_fields[] = {
	F(1, "verbs", PBF_STRINGS, 0),
	F(2, "apiGroups", PBF_STRINGS, OE),
	F(3, "resources", PBF_STRINGS, OE),
	F(4, "resourceNames", PBF_STRINGS, OE),
	F(5, "nonResourceURLs", PBF_STRINGS, OE),
};
static const struct pb_msgtype t_policy_rule = MSGTYPE("PolicyRule", policy_rule_fields);

static const struct pb_field aggregation_fields[] = {
	M(1, "clusterRoleSelectors", PBF_MSGS, OE, &t_label_selector),
};
static const struct pb_msgtype t_aggregation = MSGTYPE("AggregationRule",
    aggregation_fields);

static const struct pb_field subject_fields[] = {
	F(1, "kind", PBF_STRING, 0),
	F(2, "apiGroup", PBF_STRING, OE),
	F(3, "name", PBF_STRING, 0),
	F(4, "namespace", PBF_STRING, OE),
};
static const struct pb_msgtype t_subject = MSGTYPE("Subject", subject_fields);

static const struct pb_field role_ref_fields[] = {
	F(1, "apiGroup", PBF_STRING, 0),
	F(2, "kind", PBF_STRING, 0),
	F(3, "name", PBF_STRING, 0),
};
static const struct pb_msgtype t_role_ref = MSGTYPE("RoleRef", role_ref_fields);

static const struct pb_field role_fields[] = {
	M(1, "metadata", PBF_MSG, 0, &t_objectmeta),
	M(2, "rules", PBF_MSGS, 0, &t_policy_rule),
};
static const struct pb_msgtype t_role = MSGTYPE("Role", role_fields);

static const struct pb_field cluster_role_fields[] = {
	M(1, "metadata", PBF_MSG, 0, &t_objectmeta),
	M(2, "rules", PBF_MSGS, 0, &t_policy_rule),
	M(3, "aggregationRule", PBF_MSG, PTR, &t_aggregation),
};
static const struct pb_msgtype t_cluster_role = MSGTYPE("ClusterRole", cluster_role_fields);

/* RoleBinding and ClusterRoleBinding share one shape. */
static const struct pb_field binding_fields[] = {
	M(1, "metadata", PBF_MSG, 0, &t_objectmeta),
	M(2, "subjects", PBF_MSGS, OE, &t_subject),
	M(3, "roleRef", PBF_MSG, 0, &t_role_ref),
};
static const struct pb_msgtype t_role_binding = MSGTYPE("RoleBinding", binding_fields);
static const struct pb_msgtype t_cluster_role_binding = MSGTYPE("ClusterRoleBinding",
    binding_fields);

/* k8s.io/api/authorization/v1 */

static const struct pb_field field_sel_fields[] = {
	F(1, "rawSelector", PBF_STRING, OE),
	M(2, "requirements", PBF_MSGS, OE, &t_field_req),
};
static const struct pb_msgtype t_field_sel = MSGTYPE("FieldSelectorAttributes",
    field_sel_fields);

static const struct pb_field label_sel_fields[] = {
	F(1, "rawSelector", PBF_STRING, OE),
	M(2, "requirements", PBF_MSGS, OE, &t_label_req),
};
static const struct pb_msgtype t_label_sel = MSGTYPE("LabelSelectorAttributes",
    label_sel_fields);

static const struct pb_field res_attr_fields[] = {
	F(1, "namespace", PBF_STRING, OE),
	F(2, "verb", PBF_STRING, OE),
	F(3, "group", PBF_STRING, OE),
	F(4, "version", PBF_STRING, OE),
	F(5, "resource", PBF_STRING, OE),
	F(6, "subresource", PBF_STRING, OE),
	F(7, "name", PBF_STRING, OE),
	M(8, "fieldSelector", PBF_MSG, PTR, &t_field_sel),
	M(9, "labelSelector", PBF_MSG, PTR, &t_label_sel),
};
static const struct pb_msgtype t_res_attr = MSGTYPE("ResourceAttributes", res_attr_fields);

static const struct pb_field nonres_attr_fields[] = {
	F(1, "path", PBF_STRING, OE),
	F(2, "verb", PBF_STRING, OE),
};
static const struct pb_msgtype t_nonres_attr = MSGTYPE("NonResourceAttributes",
    nonres_attr_fields);

static const struct pb_field ssar_spec_fields[] = {
	M(1, "resourceAttributes", PBF_MSG, PTR, &t_res_attr),
	M(2, "nonResourceAttributes", PBF_MSG, PTR, &t_nonres_attr),
};
static const struct pb_msgtype t_ssar_spec = MSGTYPE("SelfSubjectAccessReviewSpec",
    ssar_spec_fields);

static const struct pb_field sar_status_fields[] = {
	F(1, "allowed", PBF_BOOL, 0),
	F(4, "denied", PBF_BOOL, OE),
	F(2, "reason", PBF_STRING, OE),
	F(3, "evaluationError", PBF_STRING, OE),
};
static const struct pb_msgtype t_sar_status = MSGTYPE("SubjectAccessReviewStatus",
    sar_status_fields);

static const struct pb_field ssar_fields[] = {
	M(1, "metadata", PBF_MSG, 0, &t_objectmeta),
	M(2, "spec", PBF_MSG, 0, &t_ssar_spec),
	M(3, "status", PBF_MSG, 0, &t_sar_status),
};
static const struct pb_msgtype t_ssar = MSGTYPE("SelfSubjectAccessReview", ssar_fields);

static const struct pb_field res_rule_fields[] = {
	F(1, "verbs", PBF_STRINGS, 0),
	F(2, "apiGroups", PBF_STRINGS, OE),
	F(3, "resources", PBF_STRINGS, OE),
	F(4, "resourceNames", PBF_STRINGS, OE),
};
static const struct pb_msgtype t_res_rule = MSGTYPE("ResourceRule", res_rule_fields);

static const struct pb_field nonres_rule_fields[] = {
	F(1, "verbs", PBF_STRINGS, 0),
	F(2, "nonResourceURLs", PBF_STRINGS, OE),
};
static const struct pb_msgtype t_nonres_rule = MSGTYPE("NonResourceRule", nonres_rule_fields);

static const struct pb_field ssrr_spec_fields[] = {
	F(1, "namespace", PBF_STRING, OE),
};
static const struct pb_msgtype t_ssrr_spec = MSGTYPE("SelfSubjectRulesReviewSpec",
    ssrr_spec_fields);

static const struct pb_field rules_status_fields[] = {
	M(1, "resourceRules", PBF_MSGS, 0, &t_res_rule),
	M(2, "nonResourceRules", PBF_MSGS, 0, &t_nonres_rule),
	F(3, "incomplete", PBF_BOOL, 0),
	F(4, "evaluationError", PBF_STRING, OE),
};
static const struct pb_msgtype t_rules_status = MSGTYPE("SubjectRulesReviewStatus",
    rules_status_fields);

static const struct pb_field ssrr_fields[] = {
	M(1, "metadata", PBF_MSG, 0, &t_objectmeta),
	M(2, "spec", PBF_MSG, 0, &t_ssrr_spec),
	M(3, "status", PBF_MSG, 0, &t_rules_status),
};
static const struct pb_msgtype t_ssrr = MSGTYPE("SelfSubjectRulesReview", ssrr_fields);

/*
 * Kinds kubectl 1.32+ sends as protobuf to "create quota | priorityclass |
 * pdb | token".
 */

#define NUL	(PBF_POINTER | PBF_NULL)

/* k8s.io/api/core/v1 ResourceQuota */

static const struct pb_field scoped_req_fields[] = {
	F(1, "scopeName", PBF_STRING, 0),
	F(2, "operator", PBF_STRING, 0),
	F(3, "values", PBF_STRINGS, OE),
};
static const struct pb_msgtype t_scoped_req = MSGTYPE("ScopedResourceSelectorRequirement",
    scoped_req_fields);

static const struct pb_field scope_selector_fields[] = {
	M(1, "matchExpressions", PBF_MSGS, OE, &t_scoped_req),
};
static const struct pb_msgtype t_scope_selector = MSGTYPE("ScopeSelector",
    scope_selector_fields);

static const struct pb_field quota_spec_fields[] = {
	F(1, "hard", PBF_MAP_QUANTITY, OE),
	F(2, "scopes", PBF_STRINGS, OE),
	M(3, "scopeSelector", PBF_MSG, PTR, &t_scope_selector),
};
static const struct pb_msgtype t_quota_spec = MSGTYPE("ResourceQuotaSpec", quota_spec_fields);

static const struct pb_field quota_status_fields[] = {
	F(1, "hard", PBF_MAP_QUANTITY, OE),
	F(2, "used", PBF_MAP_QUANTITY, OE),
};
static const struct pb_msgtype t_quota_status = MSGTYPE("ResourceQuotaStatus",
    quota_status_fields);

static const struct pb_field quota_fields[] = {
	M(1, "metadata", PBF_MSG, 0, &t_objectmeta),
	M(2, "spec", PBF_MSG, 0, &t_quota_spec),
	M(3, "status", PBF_MSG, 0, &t_quota_status),
};
static const struct pb_msgtype t_quota = MSGTYPE("ResourceQuota", quota_fields);

/* k8s.io/api/scheduling/v1 PriorityClass */

static const struct pb_field priority_class_fields[] = {
	M(1, "metadata", PBF_MSG, 0, &t_objectmeta),
	F(2, "value", PBF_INT32, 0),
	F(3, "globalDefault", PBF_BOOL, OE),
	F(4, "description", PBF_STRING, OE),
	F(5, "preemptionPolicy", PBF_STRING, PTR),
};
static const struct pb_msgtype t_priority_class = MSGTYPE("PriorityClass",
    priority_class_fields);

/* k8s.io/api/policy/v1 PodDisruptionBudget (status.disruptedPods is skipped) */

static const struct pb_field intorstr_fields[] = {
	F(1, "type", PBF_INT64, 0),
	F(2, "intVal", PBF_INT32, 0),
	F(3, "strVal", PBF_STRING, 0),
};
static const struct pb_msgtype t_intorstr = {
	.name = "IntOrString", .fields = intorstr_fields,
	.nfields = KC_ARRAY_SIZE(intorstr_fields), .intorstr = true,
};

static const struct pb_field condition_fields[] = {
	F(1, "type", PBF_STRING, 0),
	F(2, "status", PBF_STRING, 0),
	F(3, "observedGeneration", PBF_INT64, OE),
	F(4, "lastTransitionTime", PBF_TIME, 0),
	F(5, "reason", PBF_STRING, 0),
	F(6, "message", PBF_STRING, 0),
};
static const struct pb_msgtype t_condition = MSGTYPE("Condition", condition_fields);

static const struct pb_field pdb_spec_fields[] = {
	M(1, "minAvailable", PBF_MSG, PTR, &t_intorstr),
	M(2, "selector", PBF_MSG, PTR, &t_label_selector),
	M(3, "maxUnavailable", PBF_MSG, PTR, &t_intorstr),
	F(4, "unhealthyPodEvictionPolicy", PBF_STRING, PTR),
};
static const struct pb_msgtype t_pdb_spec = MSGTYPE("PodDisruptionBudgetSpec",
    pdb_spec_fields);

static const struct pb_field pdb_status_fields[] = {
	F(1, "observedGeneration", PBF_INT64, OE),
	F(3, "disruptionsAllowed", PBF_INT32, 0),
	F(4, "currentHealthy", PBF_INT32, 0),
	F(5, "desiredHealthy", PBF_INT32, 0),
	F(6, "expectedPods", PBF_INT32, 0),
	M(7, "conditions", PBF_MSGS, OE, &t_condition),
};
static const struct pb_msgtype t_pdb_status = MSGTYPE("PodDisruptionBudgetStatus",
    pdb_status_fields);

static const struct pb_field pdb_fields[] = {
	M(1, "metadata", PBF_MSG, 0, &t_objectmeta),
	M(2, "spec", PBF_MSG, 0, &t_pdb_spec),
	M(3, "status", PBF_MSG, 0, &t_pdb_status),
};
static const struct pb_msgtype t_pdb = MSGTYPE("PodDisruptionBudget", pdb_fields);

/* k8s.io/api/authentication/v1 TokenRequest */

static const struct pb_field bound_ref_fields[] = {
	F(1, "kind", PBF_STRING, OE),
	F(2, "apiVersion", PBF_STRING, OE),
	F(3, "name", PBF_STRING, OE),
	F(4, "uid", PBF_STRING, OE),
};
static const struct pb_msgtype t_bound_ref = MSGTYPE("BoundObjectReference",
    bound_ref_fields);

static const struct pb_field token_spec_fields[] = {
	F(1, "audiences", PBF_STRINGS, 0),
	F(4, "expirationSeconds", PBF_INT64, NUL),
	M(3, "boundObjectRef", PBF_MSG, NUL, &t_bound_ref),
};
static const struct pb_msgtype t_token_spec = MSGTYPE("TokenRequestSpec", token_spec_fields);

static const struct pb_field token_status_fields[] = {
	F(1, "token", PBF_STRING, 0),
	F(2, "expirationTimestamp", PBF_TIME, 0),
};
static const struct pb_msgtype t_token_status = MSGTYPE("TokenRequestStatus",
    token_status_fields);

static const struct pb_field token_request_fields[] = {
	M(1, "metadata", PBF_MSG, 0, &t_objectmeta),
	M(2, "spec", PBF_MSG, 0, &t_token_spec),
	M(3, "status", PBF_MSG, 0, &t_token_status),
};
static const struct pb_msgtype t_token_request = MSGTYPE("TokenRequest",
    token_request_fields);

#undef NUL

/*
 * apps/v1 Deployment, for kubectl 1.32+ "create deployment". The pod template knows the fields that command sets
 * and the common ones beside them; others are skipped as unknown.
 */

static const struct pb_field container_port_fields[] = {
	F(1, "name", PBF_STRING, OE),
	F(2, "hostPort", PBF_INT32, OE),
	F(3, "containerPort", PBF_INT32, 0),
	F(4, "protocol", PBF_STRING, OE),
	F(5, "hostIP", PBF_STRING, OE),
};
static const struct pb_msgtype t_container_port = MSGTYPE("ContainerPort",
    container_port_fields);

static const struct pb_field env_var_fields[] = {
	F(1, "name", PBF_STRING, 0),
	F(2, "value", PBF_STRING, OE),
};
static const struct pb_msgtype t_env_var = MSGTYPE("EnvVar", env_var_fields);

static const struct pb_field resources_fields[] = {
	F(1, "limits", PBF_MAP_QUANTITY, OE),
	F(2, "requests", PBF_MAP_QUANTITY, OE),
};
static const struct pb_msgtype t_resources = MSGTYPE("ResourceRequirements",
    resources_fields);

static const struct pb_field container_fields[] = {
	F(1, "name", PBF_STRING, 0),
	F(2, "image", PBF_STRING, OE),
	F(3, "command", PBF_STRINGS, OE),
	F(4, "args", PBF_STRINGS, OE),
	F(5, "workingDir", PBF_STRING, OE),
	M(6, "ports", PBF_MSGS, OE, &t_container_port),
	M(7, "env", PBF_MSGS, OE, &t_env_var),
	M(8, "resources", PBF_MSG, OE, &t_resources),
	F(13, "terminationMessagePath", PBF_STRING, OE),
	F(20, "terminationMessagePolicy", PBF_STRING, OE),
	F(14, "imagePullPolicy", PBF_STRING, OE),
	F(16, "stdin", PBF_BOOL, OE),
	F(17, "stdinOnce", PBF_BOOL, OE),
	F(18, "tty", PBF_BOOL, OE),
};
static const struct pb_msgtype t_container = MSGTYPE("Container", container_fields);

static const struct pb_field pod_spec_fields[] = {
	M(20, "initContainers", PBF_MSGS, OE, &t_container),
	M(2, "containers", PBF_MSGS, 0, &t_container),
	F(3, "restartPolicy", PBF_STRING, OE),
	F(4, "terminationGracePeriodSeconds", PBF_INT64, PTR),
	F(6, "dnsPolicy", PBF_STRING, OE),
	F(7, "nodeSelector", PBF_MAP_STRING, OE),
	F(8, "serviceAccountName", PBF_STRING, OE),
	F(10, "nodeName", PBF_STRING, OE),
	F(19, "schedulerName", PBF_STRING, OE),
};
static const struct pb_msgtype t_pod_spec = MSGTYPE("PodSpec", pod_spec_fields);

static const struct pb_field pod_template_fields[] = {
	M(1, "metadata", PBF_MSG, 0, &t_objectmeta),
	M(2, "spec", PBF_MSG, 0, &t_pod_spec),
};
static const struct pb_msgtype t_pod_template = MSGTYPE("PodTemplateSpec",
    pod_template_fields);

static const struct pb_field rolling_update_fields[] = {
	M(1, "maxUnavailable", PBF_MSG, PTR, &t_intorstr),
	M(2, "maxSurge", PBF_MSG, PTR, &t_intorstr),
};
static const struct pb_msgtype t_rolling_update = MSGTYPE("RollingUpdateDeployment",
    rolling_update_fields);

static const struct pb_field strategy_fields[] = {
	F(1, "type", PBF_STRING, OE),
	M(2, "rollingUpdate", PBF_MSG, PTR, &t_rolling_update),
};
static const struct pb_msgtype t_strategy = MSGTYPE("DeploymentStrategy", strategy_fields);

static const struct pb_field deploy_spec_fields[] = {
	F(1, "replicas", PBF_INT32, PTR),
	M(2, "selector", PBF_MSG, PTR, &t_label_selector),
	M(3, "template", PBF_MSG, 0, &t_pod_template),
	M(4, "strategy", PBF_MSG, OE, &t_strategy),
	F(5, "minReadySeconds", PBF_INT32, OE),
	F(6, "revisionHistoryLimit", PBF_INT32, PTR),
	F(7, "paused", PBF_BOOL, OE),
	F(9, "progressDeadlineSeconds", PBF_INT32, PTR),
};
static const struct pb_msgtype t_deploy_spec = MSGTYPE("DeploymentSpec", deploy_spec_fields);

static const struct pb_field deploy_status_fields[] = {
	F(1, "observedGeneration", PBF_INT64, OE),
	F(2, "replicas", PBF_INT32, OE),
	F(3, "updatedReplicas", PBF_INT32, OE),
	F(7, "readyReplicas", PBF_INT32, OE),
	F(4, "availableReplicas", PBF_INT32, OE),
	F(5, "unavailableReplicas", PBF_INT32, OE),
	F(8, "collisionCount", PBF_INT32, PTR),
};
static const struct pb_msgtype t_deploy_status = MSGTYPE("DeploymentStatus",
    deploy_status_fields);

static const struct pb_field deployment_fields[] = {
	M(1, "metadata", PBF_MSG, 0, &t_objectmeta),
	M(2, "spec", PBF_MSG, 0, &t_deploy_spec),
	M(3, "status", PBF_MSG, 0, &t_deploy_status),
};
static const struct pb_msgtype t_deployment = MSGTYPE("Deployment", deployment_fields);

/*
 * k8s.io/api/core/v1 Service, for kubectl 1.32+ "create service clusterip |
 * nodeport | loadbalancer | externalname".
 */

static const struct pb_field service_port_fields[] = {
	F(1, "name", PBF_STRING, OE),
	F(2, "protocol", PBF_STRING, OE),
	F(6, "appProtocol", PBF_STRING, PTR),
	F(3, "port", PBF_INT32, 0),
	M(4, "targetPort", PBF_MSG, OE, &t_intorstr),
	F(5, "nodePort", PBF_INT32, OE),
};
static const struct pb_msgtype t_service_port = MSGTYPE("ServicePort", service_port_fields);

static const struct pb_field client_ip_fields[] = {
	F(1, "timeoutSeconds", PBF_INT32, PTR),
};
static const struct pb_msgtype t_client_ip = MSGTYPE("ClientIPConfig", client_ip_fields);

static const struct pb_field session_affinity_fields[] = {
	M(1, "clientIP", PBF_MSG, PTR, &t_client_ip),
};
static const struct pb_msgtype t_session_affinity = MSGTYPE("SessionAffinityConfig",
    session_affinity_fields);

static const struct pb_field service_spec_fields[] = {
	M(1, "ports", PBF_MSGS, OE, &t_service_port),
	F(2, "selector", PBF_MAP_STRING, OE),
	F(3, "clusterIP", PBF_STRING, OE),
	F(18, "clusterIPs", PBF_STRINGS, OE),
	F(4, "type", PBF_STRING, OE),
	F(5, "externalIPs", PBF_STRINGS, OE),
	F(7, "sessionAffinity", PBF_STRING, OE),
	F(8, "loadBalancerIP", PBF_STRING, OE),
	F(9, "loadBalancerSourceRanges", PBF_STRINGS, OE),
	F(10, "externalName", PBF_STRING, OE),
	F(11, "externalTrafficPolicy", PBF_STRING, OE),
	F(12, "healthCheckNodePort", PBF_INT32, OE),
	F(13, "publishNotReadyAddresses", PBF_BOOL, OE),
	M(14, "sessionAffinityConfig", PBF_MSG, PTR, &t_session_affinity),
	F(19, "ipFamilies", PBF_STRINGS, OE),
	F(17, "ipFamilyPolicy", PBF_STRING, PTR),
	F(20, "allocateLoadBalancerNodePorts", PBF_BOOL, PTR),
	F(21, "loadBalancerClass", PBF_STRING, PTR),
	F(22, "internalTrafficPolicy", PBF_STRING, PTR),
	F(23, "trafficDistribution", PBF_STRING, PTR),
};
static const struct pb_msgtype t_service_spec = MSGTYPE("ServiceSpec", service_spec_fields);

static const struct pb_field port_status_fields[] = {
	F(1, "port", PBF_INT32, 0),
	F(2, "protocol", PBF_STRING, 0),
	F(3, "error", PBF_STRING, PTR),
};
static const struct pb_msgtype t_port_status = MSGTYPE("PortStatus", port_status_fields);

static const struct pb_field lb_ingress_fields[] = {
	F(1, "ip", PBF_STRING, OE),
	F(2, "hostname", PBF_STRING, OE),
	F(3, "ipMode", PBF_STRING, PTR),
	M(4, "ports", PBF_MSGS, OE, &t_port_status),
};
static const struct pb_msgtype t_lb_ingress = MSGTYPE("LoadBalancerIngress",
    lb_ingress_fields);

static const struct pb_field lb_status_fields[] = {
	M(1, "ingress", PBF_MSGS, OE, &t_lb_ingress),
};
static const struct pb_msgtype t_lb_status = MSGTYPE("LoadBalancerStatus", lb_status_fields);

static const struct pb_field service_status_fields[] = {
	M(1, "loadBalancer", PBF_MSG, OE, &t_lb_status),
	M(2, "conditions", PBF_MSGS, OE, &t_condition),
};
static const struct pb_msgtype t_service_status = MSGTYPE("ServiceStatus",
    service_status_fields);

static const struct pb_field service_fields[] = {
	M(1, "metadata", PBF_MSG, 0, &t_objectmeta),
	M(2, "spec", PBF_MSG, 0, &t_service_spec),
	M(3, "status", PBF_MSG, 0, &t_service_status),
};
static const struct pb_msgtype t_service = MSGTYPE("Service", service_fields);

/* k8s.io/apimachinery/pkg/runtime: the envelope. */

static const struct pb_field typemeta_fields[] = {
	F(1, "apiVersion", PBF_STRING, 0),
	F(2, "kind", PBF_STRING, 0),
};
static const struct pb_msgtype t_typemeta = MSGTYPE("TypeMeta", typemeta_fields);

static const struct pb_field unknown_fields[] = {
	M(1, "typeMeta", PBF_MSG, 0, &t_typemeta),
	F(2, "raw", PBF_BYTES, 0),
	F(3, "contentEncoding", PBF_STRING, 0),
	F(4, "contentType", PBF_STRING, 0),
};
static const struct pb_msgtype t_unknown = MSGTYPE("Unknown", unknown_fields);

#undef F
#undef M
#undef OE
#undef PTR

/* Slot indexes in the envelope, as in unknown_fields[]. */
enum { UNK_TYPEMETA, UNK_RAW };
enum { TM_APIVERSION, TM_KIND };

struct pb_kind {
	const char		*group;
	const char		*version;
	const char		*kind;
	const struct pb_msgtype	*type;
};

static const struct pb_kind kinds[] = {
	{ "", "v1", "Namespace", &t_namespace },
	{ "", "v1", "ConfigMap", &t_configmap },
	{ "", "v1", "Secret", &t_secret },
	{ "", "v1", "ServiceAccount", &t_serviceaccount },
	{ "rbac.authorization.k8s.io", "v1", "Role", &t_role },
	{ "rbac.authorization.k8s.io", "v1", "ClusterRole", &t_cluster_role },
	{ "rbac.authorization.k8s.io", "v1", "RoleBinding", &t_role_binding },
	{ "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", &t_cluster_role_binding },
	{ "authorization.k8s.io", "v1", "SelfSubjectAccessReview", &t_ssar },
	{ "authorization.k8s.io", "v1", "SelfSubjectRulesReview", &t_ssrr },
	/* kubectl 1.32+ create quota | priorityclass | pdb | token */
	{ "", "v1", "ResourceQuota", &t_quota },
	{ "scheduling.k8s.io", "v1", "PriorityClass", &t_priority_class },
	{ "policy", "v1", "PodDisruptionBudget", &t_pdb },
	{ "authentication.k8s.io", "v1", "TokenRequest", &t_token_request },
	{ "apps", "v1", "Deployment", &t_deployment },
	/* kubectl 1.32+ create service */
	{ "", "v1", "Service", &t_service },
};

#define SUPPORTED_KINDS	"v1 Namespace, ConfigMap, Secret and ServiceAccount, " \
			"rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding and " \
			"ClusterRoleBinding, authorization.k8s.io/v1 " \
			"SelfSubjectAccessReview and SelfSubjectRulesReview, v1 ResourceQuota, " \
			"scheduling.k8s.io/v1 PriorityClass, policy/v1 PodDisruptionBudget, " \
			"authentication.k8s.io/v1 TokenRequest, apps/v1 Deployment and " \
			"v1 Service"

/*
 * Decoded state
 */

struct pb_vec {
	void		*items;
	size_t		 n;
	size_t		 cap;
};

struct pb_kv {
	struct kc_str	 key;
	struct kc_str	 value;
	size_t		 seq;		/* arrival order: the last duplicate wins */
};

struct pb_slot {
	bool		 present;	/* seen at least once */
	bool		 zero_time;	/* PBF_TIME: Go's zero time */
	uint64_t	 u;		/* PBF_INT64, PBF_BOOL; PBF_TIME: seconds */
	struct kc_str	 s;		/* PBF_STRING, PBF_BYTES */
	struct pb_obj	*sub;		/* PBF_MSG */
	struct pb_vec	 vec;		/* struct kc_str, struct pb_obj *, struct pb_kv */
};

struct pb_obj {
	const struct pb_msgtype	*type;
	struct pb_slot		 slot[];	/* type->nfields */
};

struct pb_ctx {
	const unsigned char	*base;		/* the body, for offsets */
	size_t			 values;	/* against PROTOBUF_VALUES_MAX */
	struct kc_status	*st;
};

/* A slice being read. */
struct pb_rd {
	const unsigned char	*p;
	const unsigned char	*end;
};

static const struct pb_slot empty_slot;

static struct pb_obj *
obj_free(struct pb_obj *o)
{
	if (o == NULL)
		return NULL;
	for (size_t i = 0; i < o->type->nfields; i++) {
		struct pb_slot *s = &o->slot[i];

		switch (o->type->fields[i].type) {
		case PBF_MSG:
			obj_free(s->sub);
			break;
		case PBF_MSGS:
			for (size_t j = 0; j < s->vec.n; j++)
				obj_free(((struct pb_obj **)s->vec.items)[j]);
			break;
		default:
			break;
		}
		kc_free(s->vec.items);
	}
	return kc_free(o);
}

KC_DEFINE_CLEANUP(struct pb_obj, obj_free)

static struct pb_obj *
obj_new(const struct pb_msgtype *type)
{
	struct pb_obj *o;

	o = kc_calloc(1, sizeof(*o) + type->nfields * sizeof(o->slot[0]));
	if (o == NULL)
		return NULL;
	o->type = type;
	return o;
}

static int
vec_push(struct pb_vec *v, const void *item, size_t size)
{
	if (v->n == v->cap) {
		size_t cap = v->cap == 0 ? 4 : v->cap * 2;
		void *items = kc_reallocarray(v->items, cap, size);

		if (items == NULL)
			return -ENOMEM;
		v->items = items;
		v->cap = cap;
	}
	memcpy((char *)v->items + v->n * size, item, size);
	v->n++;
	return 0;
}

/*
 * Errors
 */

/* An untrusted slice, printable and short, for a message. */
static const char *
quote(char *buf, size_t size, struct kc_str s)
{
	size_t o = 0;

	for (size_t i = 0; i < s.len && o + 8 < size; i++) {
		unsigned char ch = (unsigned char)s.p[i];

		if (i == 64) {
			o += (size_t)snprintf(buf + o, size - o, "...");
			break;
		}
		if (ch == '"' || ch == '\\')
			o += (size_t)snprintf(buf + o, size - o, "\\%c", ch);
		else if (ch >= 0x20 && ch < 0x7f)
			buf[o++] = (char)ch;
		else
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", ch);
	}
	buf[o < size ? o : size - 1] = '\0';
	return buf;
}

/* A malformed-input error at 'at' (a position in the body). */
static int _printf_(3, 4)
fail(struct pb_ctx *c, const unsigned char *at, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return kc_status_set(c->st, KC_EBADREQUEST, "proto: %s at offset %zu", msg,
	    (size_t)(at - c->base));
}

static int
count_value(struct pb_ctx *c)
{
	if (++c->values > PROTOBUF_VALUES_MAX)
		return kc_status_set(c->st, KC_ETOOLARGE, "proto: more than %u values "
		    "(messages, list items and map entries) in one body",
		    PROTOBUF_VALUES_MAX);
	return 0;
}

/*
 * Reading the wire format
 */

/* A varint of at most ten bytes that fits in 64 bits. */
static int
rd_varint(struct pb_ctx *c, struct pb_rd *r, const char *what, uint64_t *ret)
{
	const unsigned char *start = r->p;
	uint64_t v = 0;

	for (unsigned shift = 0;; shift += 7) {
		unsigned char b;

		if (r->p >= r->end)
			return fail(c, start, "%s: unexpected end of data in a varint", what);
		b = *r->p++;
		if (shift == 63 && b > 1)
			return fail(c, start, "%s: varint overflows 64 bits", what);
		v |= (uint64_t)(b & 0x7f) << shift;
		if (b < 0x80)
			break;
	}
	*ret = v;
	return 0;
}

/* A field key: a field number from 1 to 2^29-1 and a wire type. */
static int
rd_key(struct pb_ctx *c, struct pb_rd *r, const char *what, uint32_t *ret_num,
    unsigned *ret_wt)
{
	const unsigned char *start = r->p;
	uint64_t key;
	int rv;

	if ((rv = rd_varint(c, r, what, &key)) < 0)
		return rv;
	if ((key >> 3) == 0 || (key >> 3) > FIELD_NUM_MAX)
		return fail(c, start, "%s: illegal field number %llu (wire type %u)", what,
		    (unsigned long long)(key >> 3), (unsigned)(key & 7));
	*ret_num = (uint32_t)(key >> 3);
	*ret_wt = (unsigned)(key & 7);
	return 0;
}

/* A length-delimited payload that must lie inside 'r'. */
static int
rd_len(struct pb_ctx *c, struct pb_rd *r, const char *what, struct pb_rd *ret)
{
	const unsigned char *start = r->p;
	uint64_t n;
	int rv;

	if ((rv = rd_varint(c, r, what, &n)) < 0)
		return rv;
	if (n > (uint64_t)(r->end - r->p))
		return fail(c, start, "%s: length %llu goes past the end of the message "
		    "(%zu bytes left)", what, (unsigned long long)n, (size_t)(r->end - r->p));
	ret->p = r->p;
	ret->end = r->p + n;
	r->p += n;
	return 0;
}

static int
rd_fixed(struct pb_ctx *c, struct pb_rd *r, const char *what, size_t n)
{
	if ((size_t)(r->end - r->p) < n)
		return fail(c, r->p, "%s: unexpected end of data in a %zu-byte value", what, n);
	r->p += n;
	return 0;
}

/* Skips the value of an unknown field. */
static int
skip_value(struct pb_ctx *c, struct pb_rd *r, const unsigned char *at, unsigned wt,
    const char *what)
{
	struct pb_rd payload;
	uint64_t v;

	switch (wt) {
	case WT_VARINT:
		return rd_varint(c, r, what, &v);
	case WT_I64:
		return rd_fixed(c, r, what, 8);
	case WT_LEN:
		return rd_len(c, r, what, &payload);
	case WT_I32:
		return rd_fixed(c, r, what, 4);
	case WT_SGROUP:
	case WT_EGROUP:
		return fail(c, at, "%s: wire type %u (group) is not supported", what, wt);
	default:
		return fail(c, at, "%s: illegal wire type %u", what, wt);
	}
}

static struct kc_str
slice(const struct pb_rd *r)
{
	return (struct kc_str){ (const char *)r->p, (size_t)(r->end - r->p) };
}

/*
 * metav1.Time, as Time.Unmarshal() reads it: an empty message is the
 * zero time; otherwise Timestamp {seconds 1, nanos 2}, nanos dropped.
 * Each occurrence replaces the last.
 */
static int
decode_time(struct pb_ctx *c, struct pb_rd *r, const char *what, struct pb_slot *slot)
{
	const unsigned char *start = r->p;
	uint64_t v, secs = 0;
	int64_t s;
	int rv;

	while (r->p < r->end) {
		const unsigned char *at = r->p;
		uint32_t num;
		unsigned wt;

		if ((rv = rd_key(c, r, what, &num, &wt)) < 0)
			return rv;
		if (num != 1 && num != 2) {
			if ((rv = skip_value(c, r, at, wt, what)) < 0)
				return rv;
			continue;
		}
		if (wt != WT_VARINT)
			return fail(c, at, "%s: wrong wire type %u for Timestamp.%s", what, wt,
			    num == 1 ? "seconds" : "nanos");
		if ((rv = rd_varint(c, r, what, &v)) < 0)
			return rv;
		if (num == 1)
			secs = v;
	}
	s = (int64_t)secs;
	if (r->p != start && s != TIME_ZERO_SECONDS &&
	    (s < TIME_ZERO_SECONDS || s > TIME_MAX_SECONDS))
		return fail(c, start, "%s: timestamp %lld is outside years 1 to 9999", what,
		    (long long)s);
	slot->present = true;
	slot->zero_time = r->p == start || s == TIME_ZERO_SECONDS;
	slot->u = secs;
	return 0;
}

/* A map entry {key 1, value 2}; missing parts are empty. */
static int
decode_entry(struct pb_ctx *c, struct pb_rd *r, const char *what, struct pb_kv *ret)
{
	struct pb_kv kv = { .key = { "", 0 }, .value = { "", 0 } };
	struct pb_rd part;
	int rv;

	while (r->p < r->end) {
		const unsigned char *at = r->p;
		uint32_t num;
		unsigned wt;

		if ((rv = rd_key(c, r, what, &num, &wt)) < 0)
			return rv;
		if (num != 1 && num != 2) {
			if ((rv = skip_value(c, r, at, wt, what)) < 0)
				return rv;
			continue;
		}
		if (wt != WT_LEN)
			return fail(c, at, "%s: wrong wire type %u for the map entry's %s", what,
			    wt, num == 1 ? "key" : "value");
		if ((rv = rd_len(c, r, what, &part)) < 0)
			return rv;
		if (num == 1) {
			kv.key = slice(&part);
			if (memchr(kv.key.p, '\0', kv.key.len) != NULL)
				return fail(c, part.p, "%s: a map key contains a NUL byte", what);
		} else {
			kv.value = slice(&part);
		}
	}
	*ret = kv;
	return 0;
}

/* Whether 's' has the shape of a resource.Quantity (its regular expression). */
static bool
quantity_shaped(struct kc_str s)
{
	size_t i = 0, digits = 0;

	if (i < s.len && (s.p[i] == '+' || s.p[i] == '-'))
		i++;
	for (; i < s.len && ((s.p[i] >= '0' && s.p[i] <= '9') || s.p[i] == '.'); i++)
		digits++;
	if (digits == 0)
		return false;
	while (i < s.len && s.p[i] != '\0' && strchr("eEinumkKMGTP", s.p[i]) != NULL)
		i++;
	if (i < s.len && (s.p[i] == '+' || s.p[i] == '-'))
		i++;
	while (i < s.len && s.p[i] >= '0' && s.p[i] <= '9')
		i++;
	return i == s.len;
}

/*
 * A resource.Quantity message {string 1} into its string, in place: the
 * last occurrence wins, an absent string is Go's zero Quantity ("0"), and
 * a string that is not shaped like a quantity fails as ParseQuantity()
 * does. The string is kept as sent (kubectl sends canonical forms).
 */
static int
decode_quantity(struct pb_ctx *c, struct kc_str *q, const char *what)
{
	struct pb_rd r = { (const unsigned char *)q->p, (const unsigned char *)q->p + q->len };
	struct pb_rd part;
	bool seen = false;
	int rv;

	while (r.p < r.end) {
		const unsigned char *at = r.p;
		uint32_t num;
		unsigned wt;

		if ((rv = rd_key(c, &r, what, &num, &wt)) < 0)
			return rv;
		if (num != 1) {
			if ((rv = skip_value(c, &r, at, wt, what)) < 0)
				return rv;
			continue;
		}
		if (wt != WT_LEN)
			return fail(c, at, "%s: wrong wire type %u for Quantity.string", what, wt);
		if ((rv = rd_len(c, &r, what, &part)) < 0)
			return rv;
		*q = slice(&part);
		seen = true;
	}
	if (!seen) {
		*q = (struct kc_str){ "0", 1 };
		return 0;
	}
	if (!quantity_shaped(*q))
		return fail(c, (const unsigned char *)q->p, "%s: quantities must match the "
		    "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'", what);
	return 0;
}

static const struct pb_field *
find_field(const struct pb_msgtype *t, uint32_t num)
{
	for (size_t i = 0; i < t->nfields; i++)
		if (t->fields[i].num == num)
			return &t->fields[i];
	return NULL;
}

static int	decode_msg(struct pb_ctx *, struct pb_obj *, struct pb_rd *, unsigned);

/* One occurrence of a known field, its key already read and checked. */
static int
decode_field(struct pb_ctx *c, struct pb_obj *o, const struct pb_field *f,
    struct pb_rd *r, const char *what, unsigned depth)
{
	struct pb_slot *slot = &o->slot[f - o->type->fields];
	_cleanup_(obj_freep) struct pb_obj *child = NULL;
	struct pb_rd payload;
	struct kc_str s;
	struct pb_kv kv;
	int rv;

	if (f->type == PBF_INT64 || f->type == PBF_BOOL || f->type == PBF_INT32) {
		if ((rv = rd_varint(c, r, what, &slot->u)) < 0)
			return rv;
		slot->present = true;
		return 0;
	}
	if ((rv = rd_len(c, r, what, &payload)) < 0)
		return rv;
	switch (f->type) {
	case PBF_STRING:
	case PBF_BYTES:
		slot->s = slice(&payload);
		slot->present = true;
		return 0;
	case PBF_TIME:
		return decode_time(c, &payload, what, slot);
	case PBF_MSG:
		if (slot->sub == NULL) {
			if ((rv = count_value(c)) < 0)
				return rv;
			if ((slot->sub = obj_new(f->msg)) == NULL)
				return -ENOMEM;
		}
		slot->present = true;
		return decode_msg(c, slot->sub, &payload, depth + 1);
	case PBF_STRINGS:
		if ((rv = count_value(c)) < 0)
			return rv;
		s = slice(&payload);
		return vec_push(&slot->vec, &s, sizeof(s));
	case PBF_MSGS:
		if ((rv = count_value(c)) < 0)
			return rv;
		if ((child = obj_new(f->msg)) == NULL)
			return -ENOMEM;
		if ((rv = decode_msg(c, child, &payload, depth + 1)) < 0)
			return rv;
		if ((rv = vec_push(&slot->vec, &child, sizeof(child))) < 0)
			return rv;
		child = NULL;
		return 0;
	case PBF_MAP_STRING:
	case PBF_MAP_BYTES:
		if ((rv = count_value(c)) < 0)
			return rv;
		if ((rv = decode_entry(c, &payload, what, &kv)) < 0)
			return rv;
		kv.seq = slot->vec.n;
		return vec_push(&slot->vec, &kv, sizeof(kv));
	case PBF_MAP_QUANTITY:
		if ((rv = count_value(c)) < 0)
			return rv;
		if ((rv = decode_entry(c, &payload, what, &kv)) < 0 ||
		    (rv = decode_quantity(c, &kv.value, what)) < 0)
			return rv;
		kv.seq = slot->vec.n;
		return vec_push(&slot->vec, &kv, sizeof(kv));
	default:
		return kc_status_set(c->st, KC_EINTERNAL, "proto: bad field table");
	}
}

/* Decodes the fields in 'r' into 'o', merging with what it holds. */
static int
decode_msg(struct pb_ctx *c, struct pb_obj *o, struct pb_rd *r, unsigned depth)
{
	const struct pb_msgtype *t = o->type;
	char what[96];
	int rv;

	if (depth > PROTOBUF_DEPTH_MAX)
		return fail(c, r->p, "%s: messages nested more than %d deep", t->name,
		    PROTOBUF_DEPTH_MAX);
	while (r->p < r->end) {
		const unsigned char *at = r->p;
		const struct pb_field *f;
		uint32_t num;
		unsigned wt, want;

		if ((rv = rd_key(c, r, t->name, &num, &wt)) < 0)
			return rv;
		if ((f = find_field(t, num)) == NULL) {
			(void)snprintf(what, sizeof(what), "%s field %u", t->name, num);
			if ((rv = skip_value(c, r, at, wt, what)) < 0)
				return rv;
			continue;
		}
		(void)snprintf(what, sizeof(what), "%s.%s", t->name, f->json);
		want = f->type == PBF_INT64 || f->type == PBF_BOOL || f->type == PBF_INT32 ?
		    WT_VARINT : WT_LEN;
		if (wt != want)
			return fail(c, at, "wrong wire type %u for field %s (want %u)", wt, what,
			    want);
		if ((rv = decode_field(c, o, f, r, what, depth)) < 0)
			return rv;
	}
	return 0;
}

/*
 * Writing JSON as Go's encoding/json does
 */

static int
json_string(struct kc_str s, struct json_object **ret)
{
	char *copy;
	size_t len;

	if (kc_utf8_valid(s.p, s.len)) {
		*ret = json_object_new_string_len(s.p, (int)s.len);
	} else {
		if ((copy = kc_utf8_dup_valid(s.p, s.len, &len)) == NULL)
			return -ENOMEM;
		*ret = json_object_new_string_len(copy, (int)len);
		kc_free(copy);
	}
	return *ret != NULL ? 0 : -ENOMEM;
}

/* []byte: standard base64 with padding. */
static int
json_base64(struct kc_str s, struct json_object **ret)
{
	char *b;
	size_t n;
	int r;

	if ((r = kc_base64_encode(s.p, s.len, 0, &b, &n)) < 0)
		return r;
	*ret = json_object_new_string_len(b, (int)n);
	kc_free(b);
	return *ret != NULL ? 0 : -ENOMEM;
}

/* metav1.Time: RFC 3339 in UTC, whole seconds; null for the zero time. */
static int
json_time(const struct pb_slot *slot, struct json_object **ret)
{
	char buf[KC_TIME_MAX];
	int r;

	if (!slot->present || slot->zero_time) {
		*ret = NULL;
		return 0;
	}
	if ((r = kc_time_format((time_t)(int64_t)slot->u, buf, sizeof(buf))) < 0)
		return r;
	*ret = json_object_new_string(buf);
	return *ret != NULL ? 0 : -ENOMEM;
}

/* Adds 'v' (owned, NULL for JSON null) to 'o' at 'key'. */
static int
add(struct json_object *o, const char *key, struct json_object *v)
{
	if (json_object_object_add(o, key, v) < 0) {
		if (v != NULL)
			json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

static int
kv_cmp(const void *a, const void *b)
{
	const struct pb_kv *x = a, *y = b;
	int d = memcmp(x->key.p, y->key.p, KC_MIN(x->key.len, y->key.len));

	if (d != 0)
		return d;
	if (x->key.len != y->key.len)
		return x->key.len < y->key.len ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A Go map: keys sorted, the last of duplicate keys wins. */
static int
json_map(struct pb_vec *v, bool bytes, struct json_object **ret)
{
	struct pb_kv *kv = v->items;
	struct json_object *o, *val;
	char *key;
	size_t len;
	int r;

	qsort(kv, v->n, sizeof(*kv), kv_cmp);
	if ((o = json_object_new_object()) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < v->n; i++) {
		if (i + 1 < v->n && kv[i].key.len == kv[i + 1].key.len &&
		    memcmp(kv[i].key.p, kv[i + 1].key.p, kv[i].key.len) == 0)
			continue;
		r = bytes ? json_base64(kv[i].value, &val) : json_string(kv[i].value, &val);
		if (r < 0)
			goto fail;
		if ((key = kc_utf8_dup_valid(kv[i].key.p, kv[i].key.len, &len)) == NULL) {
			json_object_put(val);
			r = -ENOMEM;
			goto fail;
		}
		r = add(o, key, val);
		kc_free(key);
		if (r < 0)
			goto fail;
	}
	*ret = o;
	return 0;
fail:
	json_object_put(o);
	return r;
}

static int	emit_obj(struct pb_ctx *, const struct pb_msgtype *, struct pb_obj *,
		    struct json_object **);

/* A repeated field: an array, or null when empty. */
static int
json_list(struct pb_ctx *c, const struct pb_field *f, struct pb_vec *v,
    struct json_object **ret)
{
	struct json_object *a, *item;
	int r;

	if (v->n == 0) {
		*ret = NULL;
		return 0;
	}
	if ((a = json_object_new_array_ext((int)v->n)) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < v->n; i++) {
		if (f->type == PBF_STRINGS)
			r = json_string(((struct kc_str *)v->items)[i], &item);
		else
			r = emit_obj(c, f->msg, ((struct pb_obj **)v->items)[i], &item);
		if (r < 0 || (r = kc_json_append(a, item)) < 0) {
			json_object_put(a);
			return r;
		}
	}
	*ret = a;
	return 0;
}

/* Adds one field to 'o' unless Go's encoding/json would leave it out. */
static int
emit_field(struct pb_ctx *c, const struct pb_field *f, struct pb_slot *slot,
    struct json_object *o)
{
	struct json_object *v = NULL;
	bool omitempty = (f->flags & PBF_OMITEMPTY) != 0;
	bool pointer = (f->flags & PBF_POINTER) != 0;
	int r = 0;

	if (pointer && !slot->present)
		return (f->flags & PBF_NULL) != 0 ? add(o, f->json, NULL) : 0;
	switch (f->type) {
	case PBF_STRING:
		if (omitempty && slot->s.len == 0)
			return 0;
		r = json_string(slot->present ? slot->s : (struct kc_str){ "", 0 }, &v);
		break;
	case PBF_INT64:
		if (omitempty && slot->u == 0)
			return 0;
		r = (v = json_object_new_int64((int64_t)slot->u)) != NULL ? 0 : -ENOMEM;
		break;
	case PBF_BOOL:
		if (omitempty && slot->u == 0)
			return 0;
		r = (v = json_object_new_boolean(slot->u != 0)) != NULL ? 0 : -ENOMEM;
		break;
	case PBF_INT32:
		if (omitempty && (uint32_t)slot->u == 0)
			return 0;
		r = (v = json_object_new_int((int32_t)(uint32_t)slot->u)) != NULL ? 0 : -ENOMEM;
		break;
	case PBF_TIME:
		r = json_time(slot, &v);
		break;
	case PBF_MSG:
		r = emit_obj(c, f->msg, slot->sub, &v);
		break;
	case PBF_STRINGS:
	case PBF_MSGS:
		if (omitempty && slot->vec.n == 0)
			return 0;
		r = json_list(c, f, &slot->vec, &v);
		break;
	case PBF_MAP_STRING:
	case PBF_MAP_BYTES:
	case PBF_MAP_QUANTITY:
		if (omitempty && slot->vec.n == 0)
			return 0;
		if (slot->vec.n == 0)
			break;		/* a nil map is null */
		r = json_map(&slot->vec, f->type == PBF_MAP_BYTES, &v);
		break;
	default:
		/* PBF_BYTES: only in the envelope and in FieldsV1, never emitted. */
		return kc_status_set(c->st, KC_EINTERNAL, "proto: bad field table");
	}
	if (r < 0)
		return r;
	return add(o, f->json, v);
}

static int
emit_fields(struct pb_ctx *c, const struct pb_msgtype *t, struct pb_obj *src,
    struct json_object *o)
{
	int r;

	for (size_t i = 0; i < t->nfields; i++) {
		struct pb_slot *slot = src != NULL ? &src->slot[i] : NULL;
		struct pb_slot zero = empty_slot;

		if ((r = emit_field(c, &t->fields[i], slot != NULL ? slot : &zero, o)) < 0)
			return r;
	}
	return 0;
}

/*
 * A message as JSON. 'src' is NULL for a struct that never appeared on
 * the wire (its zero value). FieldsV1 is its raw JSON.
 */
static int
emit_obj(struct pb_ctx *c, const struct pb_msgtype *t, struct pb_obj *src,
    struct json_object **ret)
{
	struct json_object *o = NULL;
	struct kc_status jst = { 0 };
	const struct pb_slot *raw;
	int r;

	if (t->rawjson) {
		raw = src != NULL ? &src->slot[0] : &empty_slot;
		if (!raw->present) {
			*ret = NULL;
			return 0;
		}
		if ((r = kc_json_parse(raw->s.p, raw->s.len, &o, &jst)) < 0)
			return r == -ENOMEM ? r : kc_status_set(c->st, KC_EBADREQUEST,
			    "proto: %s is not valid JSON: %s", t->name, jst.message);
		*ret = o;
		return 0;
	}
	if (t->intorstr) {
		const struct pb_slot *ty = src != NULL ? &src->slot[0] : &empty_slot;
		const struct pb_slot *iv = src != NULL ? &src->slot[1] : &empty_slot;
		const struct pb_slot *sv = src != NULL ? &src->slot[2] : &empty_slot;

		if (ty->u == 1)
			return json_string(sv->present ? sv->s : (struct kc_str){ "", 0 }, ret);
		*ret = json_object_new_int((int32_t)(uint32_t)iv->u);
		return *ret != NULL ? 0 : -ENOMEM;
	}
	if ((o = json_object_new_object()) == NULL)
		return -ENOMEM;
	if ((r = emit_fields(c, t, src, o)) < 0) {
		json_object_put(o);
		return r;
	}
	*ret = o;
	return 0;
}

/*
 * The envelope
 */

struct gvk {
	struct kc_str	 group;
	struct kc_str	 version;
	struct kc_str	 kind;
};

/* schema.ParseGroupVersion(): "v1", "g/v"; anything else is empty. */
static void
parse_api_version(struct kc_str av, struct gvk *g)
{
	const char *slash = av.len > 0 ? memchr(av.p, '/', av.len) : NULL;

	g->group = (struct kc_str){ "", 0 };
	g->version = (struct kc_str){ "", 0 };
	if (slash == NULL) {
		g->version = av;
		return;
	}
	if (memchr(slash + 1, '/', av.len - (size_t)(slash - av.p) - 1) != NULL)
		return;
	g->group = (struct kc_str){ av.p, (size_t)(slash - av.p) };
	g->version = (struct kc_str){ slash + 1, av.len - (size_t)(slash - av.p) - 1 };
}

static const struct pb_kind *
find_kind(const struct gvk *g)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(kinds); i++)
		if (kc_str_eq_cstr(g->group, kinds[i].group) &&
		    kc_str_eq_cstr(g->version, kinds[i].version) &&
		    kc_str_eq_cstr(g->kind, kinds[i].kind))
			return &kinds[i];
	return NULL;
}

bool
protobuf_supports(const char *api_version, const char *kind)
{
	struct gvk g;

	if (api_version == NULL || kind == NULL)
		return false;
	parse_api_version(kc_str_from(api_version), &g);
	g.kind = kc_str_from(kind);
	return find_kind(&g) != NULL;
}

/*
 * The group, version and kind of the body, with kube-apiserver's
 * defaulting from the URL (copyKindDefaults()).
 */
static int
resolve_gvk(struct pb_ctx *c, const struct pb_obj *env, const char *def_api_version,
    const char *def_kind, struct gvk *ret)
{
	const struct pb_obj *tm = env->slot[UNK_TYPEMETA].sub;
	struct kc_str av = tm != NULL ? tm->slot[TM_APIVERSION].s : (struct kc_str){ "", 0 };
	struct kc_str kind = tm != NULL ? tm->slot[TM_KIND].s : (struct kc_str){ "", 0 };
	char qav[128], qkind[128];
	struct gvk def;

	parse_api_version(av, ret);
	ret->kind = kind;
	parse_api_version(kc_str_from(def_api_version), &def);
	def.kind = kc_str_from(def_kind);
	if (ret->kind.len == 0)
		ret->kind = def.kind;
	if (ret->version.len == 0 && def.version.len > 0) {
		ret->group = def.group;
		ret->version = def.version;
	}
	if (ret->kind.len == 0)
		return kc_status_set(c->st, KC_EBADREQUEST, "Object 'Kind' is missing in "
		    "'runtime.TypeMeta{APIVersion:\"%s\", Kind:\"%s\"}'",
		    quote(qav, sizeof(qav), av), quote(qkind, sizeof(qkind), kind));
	if (ret->version.len == 0)
		return kc_status_set(c->st, KC_EBADREQUEST, "Object 'apiVersion' is missing "
		    "in 'runtime.TypeMeta{APIVersion:\"%s\", Kind:\"%s\"}'",
		    quote(qav, sizeof(qav), av), quote(qkind, sizeof(qkind), kind));
	return 0;
}

/* The JSON object: kind, apiVersion, then the message's fields. */
static int
emit_top(struct pb_ctx *c, const struct pb_kind *k, struct pb_obj *src,
    struct json_object **ret)
{
	struct json_object *o;
	char av[128];
	int r;

	if (k->group[0] != '\0')
		(void)snprintf(av, sizeof(av), "%s/%s", k->group, k->version);
	else
		(void)snprintf(av, sizeof(av), "%s", k->version);
	if ((o = json_object_new_object()) == NULL)
		return -ENOMEM;
	if ((r = kc_json_set_str(o, "kind", k->kind)) < 0 ||
	    (r = kc_json_set_str(o, "apiVersion", av)) < 0 ||
	    (r = emit_fields(c, k->type, src, o)) < 0) {
		json_object_put(o);
		return r;
	}
	*ret = o;
	return 0;
}

int
protobuf_decode(const char *body, size_t len, const char *def_api_version,
    const char *def_kind, struct json_object **ret, struct kc_status *st)
{
	static const unsigned char magic[4] = { 'k', '8', 's', '\0' };
	_cleanup_(obj_freep) struct pb_obj *env = NULL, *obj = NULL;
	struct pb_ctx c = { .base = (const unsigned char *)body, .st = st };
	const struct pb_kind *k;
	const struct pb_slot *raw;
	struct pb_rd rd;
	char qg[128], qv[128], qk[128];
	struct gvk g;
	int r;

	if (len > PROTOBUF_BODY_MAX)
		return kc_status_set(st, KC_ETOOLARGE, "proto: a body of %zu bytes is "
		    "over the limit of %u", len, PROTOBUF_BODY_MAX);
	if (body == NULL || len == 0)
		return kc_status_set(st, KC_EBADREQUEST, "empty data");
	if (len < sizeof(magic) || memcmp(body, magic, sizeof(magic)) != 0)
		return kc_status_set(st, KC_EBADREQUEST, "provided data does not appear "
		    "to be a protobuf message, expected prefix [107 56 115 0]");
	if (len == sizeof(magic))
		return kc_status_set(st, KC_EBADREQUEST, "empty body");

	if ((env = obj_new(&t_unknown)) == NULL)
		return -ENOMEM;
	rd = (struct pb_rd){ c.base + sizeof(magic), c.base + len };
	if ((r = decode_msg(&c, env, &rd, 0)) < 0)
		return r;
	if ((r = resolve_gvk(&c, env, def_api_version, def_kind, &g)) < 0)
		return r;
	if ((k = find_kind(&g)) == NULL)
		return kc_status_set(st, KC_EMEDIATYPE, "protobuf bodies of kind \"%s\" in "
		    "group \"%s\" version \"%s\" are not supported by this devcluster, which "
		    "decodes protobuf only for " SUPPORTED_KINDS,
		    quote(qk, sizeof(qk), g.kind), quote(qg, sizeof(qg), g.group),
		    quote(qv, sizeof(qv), g.version));

	if ((obj = obj_new(k->type)) == NULL)
		return -ENOMEM;
	raw = &env->slot[UNK_RAW];
	rd = raw->present ? (struct pb_rd){ (const unsigned char *)raw->s.p,
	    (const unsigned char *)raw->s.p + raw->s.len } : (struct pb_rd){ NULL, NULL };
	if ((r = decode_msg(&c, obj, &rd, 0)) < 0)
		return r;
	return emit_top(&c, k, obj, ret);
}

/*
 * The OpenAPI v2 document (gnostic openapiv2/OpenAPIv2.proto)
 */

#define GVK_EXTENSION	"x-kubernetes-group-version-kind"

static size_t
varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* A length-delimited field of 'n' bytes; every field number here is < 16. */
static size_t
ld_size(size_t n)
{
	return 1 + varint_size(n) + n;
}

/* A proto3 string field: left out when empty. */
static size_t
str_size(size_t n)
{
	return n == 0 ? 0 : ld_size(n);
}

static int
put_varint(struct kc_buf *b, uint64_t v)
{
	char tmp[10];
	size_t n = 0;

	do {
		unsigned char byte = v & 0x7f;

		v >>= 7;
		if (v != 0)
			byte |= 0x80;
		tmp[n++] = (char)byte;
	} while (v != 0);
	return kc_buf_append(b, tmp, n);
}

/* The key and length of a length-delimited field of 'n' bytes. */
static int
put_ld(struct kc_buf *b, unsigned field, size_t n)
{
	int r;

	if ((r = kc_buf_putc(b, (char)(field << 3 | WT_LEN))) < 0)
		return r;
	return put_varint(b, n);
}

static int
put_str(struct kc_buf *b, unsigned field, const char *s, size_t n)
{
	int r;

	if (n == 0)
		return 0;
	if ((r = put_ld(b, field, n)) < 0)
		return r;
	return kc_buf_append(b, s, n);
}

#define PUT_STR(b, field, lit)	put_str((b), (field), (lit), sizeof(lit) - 1)

/* A YAML scalar that reads back as the same string. */
static bool
yaml_plain(const char *s)
{
	static const char *const words[] = {
		"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
		"true", "True", "TRUE", "false", "False", "FALSE",
		"on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL",
	};

	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
		return false;
	for (const char *p = s; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_' ||
		    *p == '/'))
			return false;
	for (size_t i = 0; i < KC_ARRAY_SIZE(words); i++)
		if (strcmp(s, words[i]) == 0)
			return false;
	return true;
}

static int
put_yaml_scalar(struct kc_buf *b, const char *s)
{
	int r;

	if (yaml_plain(s))
		return kc_buf_puts(b, s);
	if ((r = kc_buf_putc(b, '"')) < 0)
		return r;
	for (const char *p = s; *p != '\0'; p++) {
		unsigned char ch = (unsigned char)*p;

		if (ch == '"' || ch == '\\')
			r = kc_buf_printf(b, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			r = kc_buf_printf(b, "\\x%02x", ch);
		else
			r = kc_buf_putc(b, (char)ch);
		if (r < 0)
			return r;
	}
	return kc_buf_putc(b, '"');
}

/* "group: ...\nkind: ...\nversion: ...\n", the keys sorted as yaml.Marshal does. */
static int
put_gvk_yaml(struct kc_buf *b, const struct protobuf_openapi_op *op)
{
	int r;

	if ((r = kc_buf_puts(b, "group: ")) < 0 ||
	    (r = put_yaml_scalar(b, op->group)) < 0 ||
	    (r = kc_buf_puts(b, "\nkind: ")) < 0 ||
	    (r = put_yaml_scalar(b, op->kind)) < 0 ||
	    (r = kc_buf_puts(b, "\nversion: ")) < 0 ||
	    (r = put_yaml_scalar(b, op->version)) < 0 ||
	    (r = kc_buf_putc(b, '\n')) < 0)
		return r;
	return 0;
}

/*
 * One Paths.path entry:
 *
 *	NamedPathItem{name 1: path, value 2: PathItem{patch 8: Operation{
 *	    operation_id 5,
 *	    parameters 8: ParametersItem{parameter 1: Parameter{
 *		non_body_parameter 2: NonBodyParameter{
 *		query_parameter_sub_schema 3: QueryParameterSubSchema{
 *		in 2: "query", name 4: "fieldValidation", type 6: "string"}}}},
 *	    vendor_extension 13: NamedAny{name 1: GVK_EXTENSION,
 *		value 2: Any{yaml 2}}}}}
 */
static int
put_path(struct kc_buf *b, struct kc_buf *yaml, const struct protobuf_openapi_op *op)
{
	size_t path_len = strlen(op->path), opid_len = strlen(op->operation_id);
	size_t query, nonbody, param, pitem, any, named, oper, item, npi;
	int r;

	kc_buf_reset(yaml);
	if ((r = put_gvk_yaml(yaml, op)) < 0)
		return r;
	query = ld_size(5) + ld_size(15) + ld_size(6);
	nonbody = ld_size(query);
	param = ld_size(nonbody);
	pitem = ld_size(param);
	any = str_size(yaml->len);
	named = ld_size(sizeof(GVK_EXTENSION) - 1) + ld_size(any);
	oper = str_size(opid_len) + ld_size(pitem) + ld_size(named);
	item = ld_size(oper);
	npi = str_size(path_len) + ld_size(item);

	if ((r = put_ld(b, 2, npi)) < 0 ||
	    (r = put_str(b, 1, op->path, path_len)) < 0 ||
	    (r = put_ld(b, 2, item)) < 0 ||
	    (r = put_ld(b, 8, oper)) < 0 ||
	    (r = put_str(b, 5, op->operation_id, opid_len)) < 0 ||
	    (r = put_ld(b, 8, pitem)) < 0 ||
	    (r = put_ld(b, 1, param)) < 0 ||
	    (r = put_ld(b, 2, nonbody)) < 0 ||
	    (r = put_ld(b, 3, query)) < 0 ||
	    (r = PUT_STR(b, 2, "query")) < 0 ||
	    (r = PUT_STR(b, 4, "fieldValidation")) < 0 ||
	    (r = PUT_STR(b, 6, "string")) < 0 ||
	    (r = put_ld(b, 13, named)) < 0 ||
	    (r = PUT_STR(b, 1, GVK_EXTENSION)) < 0 ||
	    (r = put_ld(b, 2, any)) < 0 ||
	    (r = put_str(b, 2, kc_buf_str(yaml), yaml->len)) < 0)
		return r;
	return 0;
}

static int
check_string(const char *s, const char *where, const char *what, struct kc_status *st)
{
	if (s == NULL)
		return kc_status_set(st, -EINVAL, "openapi v2: %s: %s is NULL", where, what);
	if (strlen(s) > PROTOBUF_STRING_MAX)
		return kc_status_set(st, -EINVAL, "openapi v2: %s: %s is longer than %d bytes",
		    where, what, PROTOBUF_STRING_MAX);
	return 0;
}

int
protobuf_openapi_v2(const char *title, const char *version,
    const struct protobuf_openapi_op *ops, size_t nops, char **ret, size_t *ret_len,
    struct kc_status *st)
{
	struct kc_buf paths, yaml, doc;
	size_t title_len, version_len, len;
	char where[32], *out;
	int r;

	if ((r = check_string(title, "info", "title", st)) < 0 ||
	    (r = check_string(version, "info", "version", st)) < 0)
		return r;
	if (nops > 0 && ops == NULL)
		return kc_status_set(st, -EINVAL, "openapi v2: %zu operations but no array",
		    nops);
	if (nops > PROTOBUF_OPENAPI_OPS_MAX)
		return kc_status_set(st, -EINVAL, "openapi v2: %zu operations (at most %d)",
		    nops, PROTOBUF_OPENAPI_OPS_MAX);
	for (size_t i = 0; i < nops; i++) {
		(void)snprintf(where, sizeof(where), "operation %zu", i);
		if ((r = check_string(ops[i].path, where, "path", st)) < 0 ||
		    (r = check_string(ops[i].operation_id, where, "operation_id", st)) < 0 ||
		    (r = check_string(ops[i].group, where, "group", st)) < 0 ||
		    (r = check_string(ops[i].version, where, "version", st)) < 0 ||
		    (r = check_string(ops[i].kind, where, "kind", st)) < 0)
			return r;
	}
	title_len = strlen(title);
	version_len = strlen(version);

	kc_buf_init(&paths, PROTOBUF_OPENAPI_MAX);
	kc_buf_init(&yaml, PROTOBUF_STRING_MAX * 16);
	kc_buf_init(&doc, PROTOBUF_OPENAPI_MAX);
	for (size_t i = 0; i < nops; i++)
		if ((r = put_path(&paths, &yaml, &ops[i])) < 0)
			goto out;
	/* Document{swagger 1, info 2: Info{title 1, version 2}, paths 8} */
	if ((r = PUT_STR(&doc, 1, "2.0")) < 0 ||
	    (r = put_ld(&doc, 2, str_size(title_len) + str_size(version_len))) < 0 ||
	    (r = put_str(&doc, 1, title, title_len)) < 0 ||
	    (r = put_str(&doc, 2, version, version_len)) < 0 ||
	    (r = put_ld(&doc, 8, paths.len)) < 0 ||
	    (r = kc_buf_append(&doc, kc_buf_str(&paths), paths.len)) < 0)
		goto out;
	if ((out = kc_buf_take(&doc, &len)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	*ret = out;
	*ret_len = len;
	r = 0;
out:
	if (r == -E2BIG)
		(void)kc_status_set(st, r, "openapi v2: the document is larger than %u bytes",
		    PROTOBUF_OPENAPI_MAX);
	kc_buf_free(&paths);
	kc_buf_free(&yaml);
	kc_buf_free(&doc);
	return r;
}

/*
 * protobuf.h: the protobuf wire format the devcluster needs, and no more.
 *
 * Two jobs, both pure (bytes and json-c in, bytes and json-c out; no
 * state, no logging):
 *
 *	protobuf_decode()	a Kubernetes protobuf request body
 *				(application/vnd.kubernetes.protobuf), as
 *				kubectl 1.32+ sends for "create namespace |
 *				configmap | secret | serviceaccount | role |
 *				rolebinding | clusterrole | clusterrolebinding"
 *				and "auth can-i", into the
 *				JSON object kubectl 1.31 would have sent
 *	protobuf_openapi_v2()	the gnostic openapi.v2.Document that
 *				GET /openapi/v2 answers (KUBE-API.md section 3)
 *
 * The wire format is read with explicit bounds everywhere; see
 * protobuf.c for the model and the Go rules it follows.
 */
#ifndef DC_PROTOBUF_H
#define DC_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/macro.h>

/* Limits. */
#define PROTOBUF_BODY_MAX	(3u << 20)	/* a request body, as DC_BODY_MAX */
#define PROTOBUF_DEPTH_MAX	16		/* nested messages */
#define PROTOBUF_VALUES_MAX	(1u << 18)	/* messages, list items, map entries */
#define PROTOBUF_OPENAPI_MAX	(64u << 20)	/* an encoded OpenAPI document */
#define PROTOBUF_OPENAPI_OPS_MAX 65536		/* operations in one document */
#define PROTOBUF_STRING_MAX	4096		/* one string given to the encoder */

/*
 * Decodes a protobuf request body: the magic "k8s\0", then a
 * runtime.Unknown envelope {typeMeta {apiVersion, kind}, raw,
 * contentEncoding, contentType} whose 'raw' is the object.
 *
 * The kind comes from the envelope's typeMeta; an empty kind or version
 * there is filled from 'def_api_version' and 'def_kind' (the group,
 * version and kind the URL implies; either may be NULL), exactly as
 * kube-apiserver's protobuf serializer defaults them.
 *
 * Supported kinds: v1 Namespace, ConfigMap, Secret and ServiceAccount;
 * rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding and
 * ClusterRoleBinding; authorization.k8s.io/v1 SelfSubjectAccessReview and
 * SelfSubjectRulesReview; v1 ResourceQuota (quantities kept as sent, after
 * a check of their shape), scheduling.k8s.io/v1 PriorityClass, policy/v1
 * PodDisruptionBudget (status.disruptedPods is skipped) and
 * authentication.k8s.io/v1 TokenRequest (protobuf_supports() tells). On success '*ret'
 * is a new JSON object (the caller owns it) equal to what Go's
 * encoding/json makes of the typed object: "kind" and "apiVersion" first,
 * then the fields in Go struct order, omitempty honoured (so
 * metadata.creationTimestamp is null and "spec":{} appears where the Go
 * struct has no omitempty effect), bytes as base64, map keys sorted,
 * invalid UTF-8 replaced by U+FFFD. Unknown fields are skipped, as Go
 * skips them.
 *
 * Returns 0, or on failure ('*ret' untouched; 'st' filled except for
 * -ENOMEM):
 *	KC_EBADREQUEST	malformed body: wrong magic, empty body, truncated
 *			or overlong varint, length past the end, wire
 *			types 3/4 (groups) or 6/7, a wrong wire type for a
 *			known field, a timestamp out of range, NUL in a map
 *			key, invalid managedFields JSON, missing kind or
 *			apiVersion. The message reads like the Go
 *			decoder's error ("proto: ..." with the field and
 *			byte offset); kube-apiserver wraps it as "<Kind> in
 *			version \"<v>\" cannot be handled as a <Kind>:
 *			<message>". Answer 400.
 *	KC_EMEDIATYPE	a well-formed envelope of a kind this decoder does
 *			not know. Answer 415 with the message.
 *	KC_ETOOLARGE	more than PROTOBUF_BODY_MAX bytes or
 *			PROTOBUF_VALUES_MAX values. Answer 413.
 *	-ENOMEM
 * 'st' may be NULL. No global state; safe to call from any thread.
 */
int	protobuf_decode(const char *body, size_t len, const char *def_api_version,
	    const char *def_kind, struct json_object **ret, struct kc_status *st)
	    _must_check_;

/* True when protobuf_decode() handles bodies of this apiVersion and kind. */
bool	protobuf_supports(const char *api_version, const char *kind);

/*
 * One PATCH operation of the OpenAPI v2 document: the object path, its
 * operationId, and the group ("" for the core group), version and kind
 * that its x-kubernetes-group-version-kind extension names.
 */
struct protobuf_openapi_op {
	const char	*path;		/* "/api/v1/namespaces/{name}" */
	const char	*operation_id;	/* "patchCoreV1Namespace" */
	const char	*group;
	const char	*version;
	const char	*kind;
};

/*
 * Encodes a gnostic openapi.v2.Document: swagger "2.0", info {title,
 * version}, and for each op one path item whose PATCH operation has the
 * operationId, a query parameter "fieldValidation" of type string, and
 * the x-kubernetes-group-version-kind extension (its value as YAML,
 * "group: ...\nkind: ...\nversion: ...\n"). This is all kubectl
 * 1.27-1.33 look for before a write (KUBE-API.md section 3); the bytes
 * for the section's example are its 206-byte test vector.
 *
 * Empty strings are left out, as proto3 does. Paths should be unique
 * (the document is a map by path); the encoder keeps the order given.
 *
 * On success '*ret' is a new allocation (free with kc_free()) of
 * '*ret_len' bytes, followed by a NUL that the length does not count.
 * Returns 0; -EINVAL (with 'st') for a NULL string, a string longer than
 * PROTOBUF_STRING_MAX or more than PROTOBUF_OPENAPI_OPS_MAX ops; -E2BIG
 * past PROTOBUF_OPENAPI_MAX; -ENOMEM. Outputs are untouched on failure.
 */
int	protobuf_openapi_v2(const char *title, const char *version,
	    const struct protobuf_openapi_op *ops, size_t nops, char **ret,
	    size_t *ret_len, struct kc_status *st) _must_check_;

#endif

/*
 * rbac.h: Kubernetes RBAC authorization as kube-apiserver's RBAC
 * authorizer evaluates it (kubernetes plugin/pkg/auth/authorizer/rbac,
 * pkg/registry/rbac/validation/rule.go), ClusterRole aggregation as
 * kube-controller-manager's clusterrole-aggregation controller does it,
 * the bootstrap policy, SelfSubjectRulesReview, and the impersonation
 * and 403 message pieces of the apiserver filters around it.
 *
 * A pure module: json-c trees in, json-c trees or bytes out, no event
 * loop, no globals, no logging; input trees are only read (not even a
 * reference count is taken). The core drives it at these points:
 *
 *	startup		rbac_index_new(); store every object of
 *			rbac_bootstrap_cluster_roles() and
 *			rbac_bootstrap_cluster_role_bindings() that is not
 *			stored yet
 *	storage event	every ADDED or MODIFIED Role, ClusterRole,
 *			RoleBinding or ClusterRoleBinding goes to
 *			rbac_index_put(), every DELETED one to
 *			rbac_index_remove(); after a ClusterRole event,
 *			rbac_aggregate() and write each role it returns
 *			back through storage (whose events feed the index
 *			again; the next rbac_aggregate() then returns none)
 *	request		rbac_user_is_privileged() (system:masters) allows
 *			at once; otherwise rbac_authorize(); a denial is
 *			answered with rbac_forbidden_message() and the
 *			authorizer's reason
 *	impersonation	rbac_impersonation_plan() from the Impersonate-*
 *			headers, authorize each of its checks for the
 *			caller, then continue as plan->user
 *	rules review	rbac_rules_review() answers SelfSubjectRulesReview
 *
 * Evaluation order. Upstream walks bindings in informer-cache order,
 * which only decides which binding an allow reason names; here
 * ClusterRoleBindings come first, by name, then the RoleBindings of the
 * request's namespace, by name, so reasons are deterministic.
 *
 *	struct rbac_index *idx;
 *	char reason[RBAC_REASON_MAX];
 *	if ((r = rbac_index_new(&idx)) < 0)
 *		return r;
 *	r = rbac_index_put(idx, "ClusterRoleBinding", crb, &st);
 *	if (!rbac_authorize(idx, &(struct rbac_user){ .name = "alice" },
 *	    &(struct rbac_attrs){ .verb = "list", .resource = "pods",
 *	    .ns = "team-a", .resource_request = true }, reason, sizeof(reason)))
 *		...403...
 */
#ifndef DC_RBAC_H
#define DC_RBAC_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/macro.h>

/* Limits. */
#define RBAC_OBJECTS_MAX	100000	/* objects of one kind in an index */
#define RBAC_RULES_MAX		4096	/* rules of one role, aggregated ones too */
#define RBAC_LIST_MAX		1024	/* entries of one list of a rule */
#define RBAC_SUBJECTS_MAX	1024	/* subjects of one binding */
#define RBAC_SELECTORS_MAX	64	/* aggregationRule.clusterRoleSelectors */
#define RBAC_STRING_MAX		4096	/* bytes of one name, verb, URL... */
#define RBAC_OBJECT_BYTES_MAX	(16u << 20) /* strings of one object, in all */
#define RBAC_AGGREGATE_ROUNDS_MAX 64	/* passes of rbac_aggregate() */
#define RBAC_REVIEW_RULES_MAX	65536	/* rules in one rules review */
#define RBAC_REASON_ERRORS_MAX	64	/* distinct errors a denial reason lists */
#define RBAC_REASON_MAX		1024	/* a reason buffer of ample size */
#define RBAC_IMP_GROUPS_MAX	64	/* Impersonate-Group values */
#define RBAC_IMP_EXTRAS_MAX	64	/* Impersonate-Extra-* values */
#define RBAC_IMP_CHECKS_MAX	(2 + RBAC_IMP_GROUPS_MAX + RBAC_IMP_EXTRAS_MAX)
#define RBAC_BREAKDOWN_MAX	262144	/* permission tuples one escalation check compares */
#define RBAC_MESSAGE_MAX	(1u << 20) /* bytes of an escalation message */

struct rbac_index;

/*
 * Who is asking (user.Info). Every pointer is borrowed for the call;
 * NULL strings read as "".
 */
struct rbac_user {
	const char		*name;
	const char		*uid;
	const char *const	*groups;
	size_t			 ngroups;
};

/*
 * What is asked (authorizer.Attributes). resource_request selects the
 * resource fields (verb, group, resource, subresource, name, ns) or the
 * non-resource ones (verb, path). A collection request (list, watch,
 * create, deletecollection) has an empty name; a cluster-scoped request,
 * and a list across all namespaces, an empty ns. NULL strings read as "".
 * version is carried for the caller and ignored by RBAC.
 */
struct rbac_attrs {
	const char	*verb;
	const char	*group;
	const char	*version;
	const char	*resource;
	const char	*subresource;
	const char	*name;
	const char	*ns;
	const char	*path;
	bool		 resource_request;
};

/*
 * Index
 */

/* A new, empty index: 0 or -ENOMEM. Free it with rbac_index_free(). */
int	rbac_index_new(struct rbac_index **ret) _must_check_;

/* Frees the index; NULL is fine. Returns NULL. */
struct rbac_index *rbac_index_free(struct rbac_index *);

KC_DEFINE_CLEANUP(struct rbac_index, rbac_index_free)

/* True for "Role", "ClusterRole", "RoleBinding" and "ClusterRoleBinding". */
bool	rbac_kind_valid(const char *kind);

/*
 * Adds 'obj', an object of 'kind' (one of rbac_kind_valid()'s), or
 * replaces the one of the same namespace and name: the core calls it
 * for every stored or updated object of those kinds. The index keeps its
 * own parsed copy and never holds on to 'obj'.
 *
 * Objects come from storage and so have passed validation; the index
 * still checks what it reads: metadata.name (and for Role and
 * RoleBinding metadata.namespace) present, rules, subjects, roleRef and
 * aggregationRule of the right JSON types and within the limits above.
 * On such an error: KC_EINVALID with the reason in 'st' ("ClusterRole
 * "r": rules[0].verbs[0]: expected a string"); -E2BIG past
 * RBAC_OBJECTS_MAX objects of a kind; -ENOMEM. When an object with a
 * name is rejected, the entry of that namespace and name, if there was
 * one, is removed too, so an object the index could not take grants
 * nothing. An unknown kind or a non-object 'obj' is KC_EINVALID and
 * changes nothing.
 *
 * A ClusterRole's aggregationRule is kept for rbac_aggregate(); a
 * selector that does not convert (LabelSelectorAsSelector fails) leaves
 * the role out of aggregation, as the controller's sync fails for it.
 */
int	rbac_index_put(struct rbac_index *, const char *kind,
	    const struct json_object *obj, struct kc_status *st) _must_check_;

/*
 * Removes the object of 'kind' named 'name' (in 'ns' for Role and
 * RoleBinding; 'ns' is ignored for the cluster kinds). 0, KC_ENOTFOUND
 * when there is none, KC_EINVALID for an unknown kind. Never allocates.
 */
int	rbac_index_remove(struct rbac_index *, const char *kind, const char *ns,
	    const char *name);

/* The number of objects of 'kind' in the index; 0 for an unknown kind. */
size_t	rbac_index_count(const struct rbac_index *, const char *kind);

/*
 * Authorization
 */

/*
 * True when 'user' is in the group system:masters, which kube-apiserver's
 * privileged-group authorizer allows before RBAC runs (with reason "").
 */
bool	rbac_user_is_privileged(const struct rbac_user *user);

/*
 * RBACAuthorizer.Authorize: true when some rule bound to 'user' allows
 * 'a'. A request with a namespace uses every ClusterRoleBinding and the
 * RoleBindings of that namespace; one without uses the
 * ClusterRoleBindings only. A RoleBinding names a Role of its namespace
 * or a ClusterRole, which it grants in its namespace only.
 *
 * 'reason' (NUL-terminated, truncated to 'size'; may be NULL when 'size'
 * is 0) gets upstream's reason: on allow, "RBAC: allowed by
 * ClusterRoleBinding "b" of ClusterRole "r" to User "alice"" or
 * "RBAC: allowed by RoleBinding "b/ns" of Role "r" to Group "g"" (a
 * ServiceAccount subject reads ServiceAccount "name/ns"); on denial ""
 * unless a binding that applies to the user names a role that is
 * missing, then "RBAC: role.rbac.authorization.k8s.io "x" not found"
 * (clusterrole.rbac.authorization.k8s.io for a ClusterRole; several
 * distinct errors as "RBAC: [e1, e2]"; at most RBAC_REASON_ERRORS_MAX).
 * system:masters is not special here: see rbac_user_is_privileged().
 * Never allocates; the index is only read.
 */
bool	rbac_authorize(const struct rbac_index *, const struct rbac_user *user,
	    const struct rbac_attrs *a, char *reason, size_t size);

/*
 * SelfSubjectRulesReview (pkg/registry/authorization/
 * selfsubjectrulesreview): the rules that apply to 'user' in namespace
 * 'ns', in evaluation order, as the reply object
 *
 *	{"kind": "SelfSubjectRulesReview",
 *	 "apiVersion": "authorization.k8s.io/v1",
 *	 "metadata": {"creationTimestamp": null}, "spec": {},
 *	 "status": {"resourceRules": [{verbs, apiGroups?, resources,
 *	     resourceNames?}], "nonResourceRules": [{verbs,
 *	     nonResourceURLs}], "incomplete": false,
 *	     "evaluationError"?: "<missing roles, as in a denial>"}}
 *
 * (a rule with both resources and URLs appears in both lists; upstream
 * echoes no spec). Past RBAC_REVIEW_RULES_MAX rules the rest are left out
 * and "incomplete" is true. An empty 'ns' is KC_EBADREQUEST "no
 * namespace on request" (400 upstream). '*ret' is a new tree; -ENOMEM.
 */
int	rbac_rules_review(const struct rbac_index *, const struct rbac_user *user,
	    const char *ns, struct json_object **ret, struct kc_status *st)
	    _must_check_;

/*
 * Escalation prevention (pkg/registry/rbac/{role,clusterrole,rolebinding,
 * clusterrolebinding}/policybased, pkg/registry/rbac/validation)
 *
 * Upstream's storage of the four RBAC kinds refuses a create or update
 * that would grant more than its requester holds. The caller decides the
 * exemptions first, as upstream does: a member of system:masters
 * (EscalationAllowed), for roles the "escalate" verb on the role
 * (RoleEscalationAuthorized), for bindings the "bind" verb on the role
 * named (BindingAuthorized), and an update that changes only
 * ownerReferences and finalizers (IsOnlyMutatingGCFields). Then:
 */

/*
 * ConfirmNoEscalation of the "rules" of the Role or ClusterRole 'obj' for
 * 'user' in 'ns' (the request's namespace: "" for a ClusterRole), whose
 * own rules are those of its ClusterRoleBindings and of its RoleBindings
 * in 'ns'. A rule is held when, broken down into tuples of one verb and
 * one group, resource and resource name (or one non-resource URL), each
 * tuple is covered by some one rule of the user: verbs, groups and
 * resources by equality or "*", a subresource also by "*\/<sub>", a
 * resource name by an owner rule without resourceNames or naming it, a
 * URL by equality or a prefix ending in "*".
 *
 * 0 when covered. Otherwise KC_EFORBIDDEN and '*ret_msg' (a new string;
 * kc_free()) holds upstream's error, to follow "<resource>.<group>
 * "<name>" is forbidden: ":
 *
 *	user "bob" (groups=["dev" "system:authenticated"]) is attempting
 *	to grant RBAC permissions not currently held:
 *	{APIGroups:[""], Resources:["pods"], Verbs:["create" "delete"]}
 *	{NonResourceURLs:["/metrics"], Verbs:["get"]}
 *
 * one CompactString a line, sorted, the tuples of one group, resource and
 * name merged with their verbs in order; "; resolution errors: [...]"
 * follows when a binding of the user names a role that does not exist
 * (the registry's plural texts: roles.rbac.authorization.k8s.io "x" not
 * found). When 'obj' or 'old' (the stored object on update, else NULL)
 * has an aggregationRule with selectors, the user must also hold "*" on
 * "*.*" and every URL, else KC_EFORBIDDEN "must have cluster-admin
 * privileges to use the aggregationRule". Past RBAC_BREAKDOWN_MAX tuples
 * the answer is KC_EFORBIDDEN, "...not currently held:\nmore than N
 * permissions to compare"; a message is cut at RBAC_MESSAGE_MAX bytes.
 * KC_EINVALID (reason in 'st') for malformed rules; -ENOMEM.
 */
int	rbac_confirm_role(const struct rbac_index *, const struct rbac_user *user,
	    const char *ns, const struct json_object *obj, const struct json_object *old,
	    char **ret_msg, struct kc_status *st) _must_check_;

/*
 * The same for a RoleBinding in 'ns' or a ClusterRoleBinding ('ns' ""):
 * the rules of the role its roleRef names (a Role of 'ns' or a
 * ClusterRole; GetRoleReferenceRules). A role that does not exist is
 * KC_ENOTFOUND with '*ret_msg' "roles.rbac.authorization.k8s.io "x" not
 * found" (clusterroles... for a ClusterRole), as upstream answers 404; a
 * kind other than Role or ClusterRole is KC_EINTERNAL "unsupported role
 * reference kind: "X"". Otherwise as rbac_confirm_role().
 */
int	rbac_confirm_binding(const struct rbac_index *, const struct rbac_user *user,
	    const char *ns, const char *role_kind, const char *role_name, char **ret_msg)
	    _must_check_;

/*
 * Aggregation
 */

/*
 * The clusterrole-aggregation controller over the index's ClusterRoles:
 * each ClusterRole with an aggregationRule gets as rules the union of the
 * rules of every other ClusterRole matched by its clusterRoleSelectors
 * (OR-ed metav1.LabelSelectors; selectors in order, the matches of each
 * by name, a rule equal to one already taken dropped), replacing whatever
 * rules it had. Roles are synced in name order, each seeing the results
 * of those before it, and passes repeat until nothing changes (at most
 * RBAC_AGGREGATE_ROUNDS_MAX), so chains such as admin <- edit <- view
 * settle in one call. A role whose union would pass RBAC_RULES_MAX keeps
 * its rules.
 *
 * '*ret' is a new JSON array of {"name": <ClusterRole>, "rules": [...]}
 * for each role whose rules differ from those in the index, in name
 * order ([] when none). The core sets each stored role's "rules" to that
 * array, writes it, and feeds the result back to rbac_index_put(). The
 * index is only read. 0 or -ENOMEM.
 */
int	rbac_aggregate(const struct rbac_index *, struct json_object **ret)
	    _must_check_;

/*
 * Bootstrap policy (plugin/pkg/auth/authorizer/rbac/bootstrappolicy),
 * each a new JSON array of complete objects carrying the label
 * kubernetes.io/bootstrapping: rbac-defaults and the annotation
 * rbac.authorization.kubernetes.io/autoupdate: "true":
 *
 * ClusterRoles: cluster-admin; admin, edit and view (aggregationRule on
 * rbac.authorization.k8s.io/aggregate-to-<role>: "true", no rules until
 * aggregated; edit carries aggregate-to-admin and view aggregate-to-edit,
 * so admin contains edit contains view); system:aggregate-to-admin,
 * system:aggregate-to-edit and system:aggregate-to-view with upstream's
 * rules; system:discovery, system:basic-user, system:public-info-viewer.
 *
 * ClusterRoleBindings: cluster-admin to Group system:masters;
 * system:discovery and system:basic-user to Group system:authenticated;
 * system:public-info-viewer to system:authenticated and
 * system:unauthenticated.
 *
 * 0 or -ENOMEM.
 */
int	rbac_bootstrap_cluster_roles(struct json_object **ret) _must_check_;
int	rbac_bootstrap_cluster_role_bindings(struct json_object **ret) _must_check_;

/*
 * Impersonation (k8s.io/apiserver pkg/endpoints/filters/impersonation.go)
 */

/* One Impersonate-Extra-<key> value; 'key' decoded by rbac_extra_key(). */
struct rbac_extra {
	const char	*key;
	const char	*value;
};

/* The Impersonate-* headers of a request; NULL or "" when absent. */
struct rbac_impersonation {
	const char		*user;		/* Impersonate-User */
	const char		*uid;		/* Impersonate-Uid */
	const char *const	*groups;	/* each Impersonate-Group */
	size_t			 ngroups;
	const struct rbac_extra	*extras;	/* each Impersonate-Extra-* value */
	size_t			 nextras;
};

/*
 * What impersonation needs: the checks to authorize for the caller, in
 * upstream's order, and the identity to continue as once all pass. The
 * strings point into the plan or into the rbac_impersonation it was made
 * from, which must outlive it.
 */
struct rbac_imp_plan {
	/*
	 * verb "impersonate" on: users <name>, or serviceaccounts <name> in
	 * <ns> for "system:serviceaccount:<ns>:<name>"; groups <group>
	 * each; userextras/<key> <value> in authentication.k8s.io (version
	 * v1) each; uids <uid> in authentication.k8s.io. All
	 * resource_request, cluster-scoped except serviceaccounts. The
	 * first denied check fails the request: 403 with
	 * rbac_forbidden_message() for that check and the caller.
	 */
	struct rbac_attrs	 checks[RBAC_IMP_CHECKS_MAX];
	size_t			 nchecks;
	/*
	 * The impersonated identity: the user, the uid, the groups given
	 * (a service account without any gets system:serviceaccounts and
	 * system:serviceaccounts:<ns>), plus system:authenticated unless
	 * a group is system:authenticated or system:unauthenticated (for
	 * system:anonymous: plus system:unauthenticated unless present),
	 * and the extras as given.
	 */
	struct rbac_user	 user;
	const struct rbac_extra	*extras;
	size_t			 nextras;
	const char		*groups[RBAC_IMP_GROUPS_MAX + 3];
	char			 sa_ns[64];
	char			 sa_name[254];
	char			 sa_group[96];
};

/*
 * Builds the plan for 'imp'. '*ret' is NULL when no impersonation is
 * asked for (no user, groups, uid or extras), else a new plan to free
 * with rbac_imp_plan_free(). Groups, extras or a uid without a user are
 * KC_EINTERNAL with upstream's error in 'st' ("requested [{Group  g
 * ...}] without impersonating a user"; kube-apiserver answers 500 with
 * text/plain "Internal Server Error: "<uri>": <that>"). More than
 * RBAC_IMP_GROUPS_MAX groups or RBAC_IMP_EXTRAS_MAX extras is
 * KC_EBADREQUEST. -ENOMEM.
 */
int	rbac_impersonation_plan(const struct rbac_impersonation *imp,
	    struct rbac_imp_plan **ret, struct kc_status *st) _must_check_;

/* Frees a plan; NULL is fine. Returns NULL. */
struct rbac_imp_plan *rbac_imp_plan_free(struct rbac_imp_plan *);

KC_DEFINE_CLEANUP(struct rbac_imp_plan, rbac_imp_plan_free)

/*
 * The extra key of an "Impersonate-Extra-<suffix>" header as upstream
 * reads it: lower-cased, then percent-decoded (url.PathUnescape; a
 * malformed escape keeps the lower-cased text as it is). Writes it
 * NUL-terminated into 'buf' and returns its length, or -E2BIG when it
 * does not fit in 'size'.
 */
int	rbac_extra_key(const char *suffix, char *buf, size_t size) _must_check_;

/*
 * Messages
 */

/*
 * The message of kube-apiserver's 403 for 'a' denied to the user named
 * 'user' (responsewriters.Forbidden, apierrors.NewForbidden):
 *
 *	pods "p" is forbidden: User "u" cannot get resource "pods" in API
 *	    group "" in the namespace "ns"
 *	runs.trainyard.dev is forbidden: User "u" cannot list resource
 *	    "runs" in API group "trainyard.dev" at the cluster scope
 *	forbidden: User "u" cannot get path "/x"
 *
 * with ": <reason>" appended when 'reason' is not empty. The resource
 * reads "<resource>/<subresource>" for a subresource; the qualified
 * resource is "<resource>[.<group>]"; strings are quoted as Go's %q does
 * and &, < and > in the part after "forbidden: " before the reason are
 * HTML-escaped as upstream's sanitizer does. The Status's details are
 * {name, group, kind: <resource>}. Writes into 'buf' (NUL-terminated,
 * truncated to 'size') and returns the length of the whole message, as
 * snprintf() does.
 */
size_t	rbac_forbidden_message(const char *user, const struct rbac_attrs *a,
	    const char *reason, char *buf, size_t size);

#endif

/*
 * project.h: the Project API in C: a Project (trainyard.dev/v1beta1,
 * cluster-scoped) read and checked into a struct ty_project, the rules a
 * ProjectMember must keep, and the objects a Project asks for in each of
 * its namespaces.
 *
 * Pure code, as model.h: json-c in, json-c out, no I/O, no clock (callers
 * pass the time), no logging. The Project and ProjectMember reconcilers and
 * the validating webhook all decide with these functions, so a rule and its
 * message live in one place.
 *
 * Objects a Project owns carry the labels app.kubernetes.io/managed-by=
 * trainyard and trainyard.dev/project=<project> and a controller
 * ownerReference to the Project; namespaces carry the labels only (a
 * namespace outlives its Project under deletionPolicy.namespaces Retain).
 * A member's RoleBindings carry trainyard.dev/member=<member> too.
 */
#ifndef TY_PROJECT_H
#define TY_PROJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <json-c/json.h>

#include <kc/macro.h>
#include <kc/podsecurity.h>

#include "model.h"

#define TY_PROJECT_API_VERSION	"trainyard.dev/v1beta1"
#define TY_LABEL_PROJECT	"trainyard.dev/project"
#define TY_LABEL_MEMBER		"trainyard.dev/member"
#define TY_PROJECT_NS_MAX	16
#define TY_PROJECT_OWNERS_MAX	32
#define TY_PROJECT_PROFILES_MAX	64
#define TY_PROJECT_INGRESS_MAX	32
#define TY_PROJECT_HARD_MAX	32
#define TY_PROJECT_MEMBERS_MAX	10000
#define TY_SUBJECT_NAME_MAX	253

/* The names of the objects a Project keeps in each of its namespaces. */
#define TY_PROJECT_QUOTA	"trainyard-project"
#define TY_PROJECT_LIMITS	"trainyard-project-defaults"
#define TY_PROJECT_POLICY	"trainyard-project-isolation"
#define TY_PROJECT_POLICY_ALLOW	"trainyard-project-allowed-namespaces"
#define TY_PROJECT_OWNERS_RB	"trainyard-project-owners"

enum ty_subject_kind {
	TY_SUBJECT_USER,
	TY_SUBJECT_GROUP,
	TY_SUBJECT_SERVICE_ACCOUNT,
	TY_SUBJECT_KIND_N,
};

enum ty_member_role {
	TY_ROLE_VIEWER,
	TY_ROLE_RESEARCHER,
	TY_ROLE_ADMIN,
	TY_ROLE_N,
};

/* The modes of Pod Security Admission a Project sets on its namespaces. */
enum ty_psa_mode {
	TY_PSA_ENFORCE,
	TY_PSA_WARN,
	TY_PSA_AUDIT,
	TY_PSA_MODES,
};

enum ty_project_suspend {
	TY_SUSPEND_NONE,
	TY_SUSPEND_HOLD,	/* no new sessions */
	TY_SUSPEND_DRAIN,	/* and running ones stopped */
};

struct ty_subject {
	enum ty_subject_kind	 kind;
	char			 name[TY_SUBJECT_NAME_MAX + 1];
	char			 ns[64];	/* ServiceAccount only */
};

/*
 * A valid Project. Owned by the caller (project_free()); read-only
 * afterwards. Limits of -1 mean none.
 */
struct ty_project {
	char			 name[64], uid[128];
	int64_t			 generation;
	size_t			 nns;
	char			 ns[TY_PROJECT_NS_MAX][64];	/* [0]: home */
	size_t			 nowners;
	struct ty_subject	 owners[TY_PROJECT_OWNERS_MAX];
	struct json_object	*hard;		/* canonical ResourceList, maybe empty */
	int64_t			 max_gpus_per_run;
	size_t			 nprofiles;	/* 0: every profile allowed */
	char			 profiles[TY_PROJECT_PROFILES_MAX][TY_SUBDOMAIN_MAX];
	char			 default_profile[TY_SUBDOMAIN_MAX];	/* "": none */
	unsigned		 subject_kinds;	/* 1 << enum ty_subject_kind */
	int64_t			 max_members;
	uint64_t		 max_ttl_ms;	/* 0: no limit, expiry optional */
	int64_t			 max_gpus_per_member;
	size_t			 ningress;
	char			 ingress_ns[TY_PROJECT_INGRESS_MAX][64];
	enum ty_project_suspend	 suspend;
	bool			 wait_for_runs;		/* deletionPolicy.runs */
	bool			 delete_namespaces;	/* deletionPolicy.namespaces */
	/* spec.podSecurity: enforce (default baseline), warn and audit (restricted). */
	enum kc_psa_level	 psa[TY_PSA_MODES];
};

/* "trainyard-project-admin", ...; the ClusterRoles of manifests/project-roles.yaml. */
const char	*project_role_cluster_role(enum ty_member_role);
/* "admin", "researcher", "viewer"; the parse gives -EINVAL for others. */
const char	*project_role_name(enum ty_member_role);
int		 project_role_parse(const char *, enum ty_member_role *ret) _must_check_;
/* "User", "Group", "ServiceAccount". */
const char	*project_subject_kind_name(enum ty_subject_kind);

/*
 * Checks 'proj' (a Project object). A valid one gives 0 and a new
 * ty_project in *ret; an invalid one KC_EINVALID, *ret untouched, and every
 * problem in 'probs' (field path and message, as model_validate()).
 * -ENOMEM on allocation failure.
 */
int	project_parse(const struct json_object *proj, struct ty_project **ret,
	    struct ty_problems *probs) _must_check_;
struct ty_project *project_free(struct ty_project *);
KC_DEFINE_CLEANUP(struct ty_project, project_free)

/*
 * Puts the pod-security.kubernetes.io/{enforce,warn,audit} labels of the
 * project's spec.podSecurity, each with its -version "latest", into
 * 'labels' (a JSON object). 0 or -ENOMEM.
 */
int	project_psa_labels(const struct ty_project *, struct json_object *labels)
	    _must_check_;

/* Whether 'ns' is one of the project's namespaces. */
bool	project_has_namespace(const struct ty_project *, const char *ns);
/* Whether 'name' is an allowed profile (every name when none are listed). */
bool	project_profile_allowed(const struct ty_project *, const char *name);

/* The profile a Run of the project uses: its spec.profile, else the default, else "". */
const char *project_run_profile(const struct ty_project *, const char *run_profile);

/*
 * A Run's rules in its project, one problem each in 'probs' (the webhook
 * refuses with the first; the controller marks the Run invalid): the
 * profile 'profile' (project_run_profile()) is allowed, and, with 's' (the
 * validated spec), its GPUs stay within maxGPUsPerRun and it names a limit
 * of every resource whose limits the quota counts (limits.<r>: no default
 * limit is made up). The number of problems added.
 */
unsigned project_run_check(const struct ty_project *, const char *profile,
	    const struct ty_spec *s, struct ty_problems *probs);

/*
 * Whether the pods of 's' (a valid Run of namespace 'ns' of the project,
 * using ResourceProfile 'profile', "" for none) pass the Pod Security
 * level the project enforces there: 0, or 1 with one problem in 'probs'
 * saying so as kube-apiserver would ('violates PodSecurity
 * "baseline:latest": ...', every violation) and what to change. -ENOMEM.
 */
int	project_run_pod_security(const struct ty_project *, const char *ns, const char *profile,
	    const struct ty_spec *s, const struct ty_config *cfg, struct ty_problems *probs)
	    _must_check_;

/*
 * The verdict on one ProjectMember. 'reason' is the Ready condition's:
 * "Bound" (ready is true) or why not: "Expired", "DuplicateSubject",
 * "SubjectNotAllowed", "NotHomeNamespace", "TooManyMembers",
 * "InvalidSpec". 'message' says it in words for the condition.
 * 'expires_at' is when the membership ends (0: never): spec.expiresAt, or
 * creation + maxInvitationTTL when that is sooner. 'max_gpus' is the
 * member's cap (-1: none), the smaller of spec.maxGPUs and the policy's.
 */
struct ty_member_verdict {
	bool			 ready;
	const char		*reason;
	char			 message[512];
	struct ty_subject	 subject;
	enum ty_member_role	 role;
	time_t			 expires_at;
	int64_t			 max_gpus;
};

/*
 * The rules of one membership, checked against 'p' at wall-clock time
 * 'now'. 'rank' is the member's place among the project's members, oldest
 * first (creationTimestamp, then name), and 'first_same' the rank of the
 * oldest member with the same subject (== rank when it is the first): the
 * oldest wins a duplicate, and members ranked at or beyond maxMembers are
 * refused. Never fails; a malformed member gets InvalidSpec.
 */
void	project_member_check(const struct ty_project *p, const struct json_object *member,
	    size_t rank, size_t first_same, time_t now, struct ty_member_verdict *ret);

/*
 * A subject's identity for duplicate detection: "User:alice",
 * "ServiceAccount:ns:name". 'buf' of at least TY_SUBJECT_KEY_MAX bytes.
 */
#define TY_SUBJECT_KEY_MAX	(TY_SUBJECT_NAME_MAX + 64 + 20)
void	project_subject_key(const struct ty_subject *, char *buf, size_t size);

/*
 * The desired objects, new json-c trees in *ret (0) or -ENOMEM (-EINVAL for
 * an index out of range):
 *
 *	project_namespace	Namespace ns[i], labelled (the project's
 *				and Pod Security's, project_psa_labels())
 *	project_quota		ResourceQuota "trainyard-project" in ns[i], the
 *				project's whole quota as a backstop (-ENOENT
 *				when the project has no quota)
 *	project_limit_range	LimitRange "trainyard-project-defaults" in ns[i]:
 *				the default requests of project_default_request()
 *				for the cpu, memory and ephemeral-storage requests
 *				the quota counts, so a container that names none is
 *				not refused by the ResourceQuota (-ENOENT when the
 *				quota counts none of them)
 *	project_policy		NetworkPolicy "trainyard-project-isolation": pods
 *				that are not a Run's accept ingress only from
 *				the project's namespaces and the allowed ones
 *				(a Run's pods keep their own Run's policy)
 *	project_policy_allow	NetworkPolicy "trainyard-project-allowed-namespaces":
 *				every pod accepts ingress from the allowed
 *				namespaces (-ENOENT when there are none)
 *	project_owner_binding	RoleBinding "trainyard-project-owners" of the
 *				owners to trainyard-project-admin (-ENOENT
 *				without owners)
 *	project_reader_role	ClusterRole "trainyard-project-reader:<project>":
 *				get on this Project only
 *	project_reader_binding	its ClusterRoleBinding, to the owners and the
 *				bound members given ('subjects', n of them)
 *	project_member_binding	RoleBinding of one member in ns[i]
 */
int	project_namespace(const struct ty_project *, size_t i, struct json_object **ret)
	    _must_check_;
int	project_quota(const struct ty_project *, size_t i, struct json_object **ret)
	    _must_check_;
int	project_limit_range(const struct ty_project *, size_t i, struct json_object **ret)
	    _must_check_;
int	project_policy(const struct ty_project *, size_t i, struct json_object **ret)
	    _must_check_;

/*
 * The request the project's LimitRange gives a container that names no
 * request of 'resource' ("cpu", "memory", "ephemeral-storage"), when the
 * quota counts it (requests.<r> or a bare <r>); NULL otherwise. The quota
 * admission counts the same (quota_demand()).
 */
const char *project_default_request(const struct ty_project *, const char *resource);
int	project_policy_allow(const struct ty_project *, size_t i, struct json_object **ret)
	    _must_check_;
int	project_owner_binding(const struct ty_project *, size_t i, struct json_object **ret)
	    _must_check_;
int	project_reader_role(const struct ty_project *, struct json_object **ret)
	    _must_check_;
int	project_reader_binding(const struct ty_project *, const struct ty_subject *subjects,
	    size_t n, struct json_object **ret) _must_check_;
int	project_member_binding(const struct ty_project *, size_t i, const char *member,
	    const struct ty_member_verdict *, struct json_object **ret) _must_check_;

/*
 * The name of a member's RoleBinding: "trainyard-<role>-<member>", the
 * member's name shortened with a hash when the whole would pass 253 bytes.
 * The role is in the name because a RoleBinding's roleRef cannot change:
 * a new role is a new binding, created before the old one is pruned.
 * 'buf' of at least 254 bytes.
 */
void	project_member_binding_name(enum ty_member_role, const char *member, char *buf,
	    size_t size);

/* The label value of a member's name (hashed past 63 bytes). 'buf' >= 64 bytes. */
void	project_member_label(const char *member, char *buf, size_t size);

#endif

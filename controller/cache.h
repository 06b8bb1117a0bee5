/*
 * cache.h: what the controller's caches hold (cache.c).
 *
 * Every cached form is one immutable allocation from the pool of
 * long-lived blocks (kc_keep_malloc()): a fixed head, then its strings,
 * packed uids and bytes, found by 16-bit offsets made by one packing
 * helper (1 + the offset in strs[], 0 when absent; ty_cache_str()).
 * Informer caches share the items between threads without locks.
 *
 *	struct ty_pod        a pod Trainyard manages
 *	struct ty_child_item a PodGroup, Service or NetworkPolicy
 *	struct ty_obj_item   a Run or ResourceProfile: its JSON text deflated
 *	                     with a dictionary that looks like a Run
 *
 *	struct ty_owned_item an object a Project owns: labels and a hash of
 *	                     the fields the controller keeps
 *
 * cache_kinds[] describes each cache: the resource, the label selector
 * (app.kubernetes.io/managed-by=trainyard, and trainyard.dev/project for
 * what Projects own, so memory follows what Trainyard manages, not the
 * cluster), the members decoding keeps, the transform and the index.
 */
#ifndef TY_CACHE_H
#define TY_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <kc/client.h>
#include <kc/informer.h>
#include <kc/macro.h>

/*
 * The kinds the controller follows, beside the built-ins of libkc. Runs
 * and ResourceProfiles at each served version of trainyard.dev; the
 * controller uses the newest the server serves (cache_trainyard_version()).
 */
extern const struct kc_resource ty_res_runs;		/* v1alpha1 */
extern const struct kc_resource ty_res_profiles;
extern const struct kc_resource ty_res_runs_v1beta1;
extern const struct kc_resource ty_res_profiles_v1beta1;
extern const struct kc_resource ty_res_podgroups_x;	/* scheduling.x-k8s.io */
extern const struct kc_resource ty_res_podgroups_sigs;	/* scheduling.sigs.k8s.io */
extern const struct kc_resource ty_res_projects;	/* v1beta1 only */
extern const struct kc_resource ty_res_projectmembers;

/* A string (or packed uid, or bytes) of a cached form at offset 'at', or NULL. */
static inline const char *
ty_cache_str(const char *strs, uint16_t at)
{
	return at != 0 ? strs + at - 1 : NULL;
}

/*
 * Uids as the caches keep them: a UUID in its canonical form (36 bytes of
 * lowercase hex and dashes, what Kubernetes makes) in 17 bytes, a NUL and
 * the 16 bytes of the UUID; any other uid (at most TY_UID_TEXT_MAX - 1
 * bytes) as its text and NUL. An empty uid is kept as none.
 */
#define TY_UID_TEXT_MAX		64	/* a uid's text and its NUL */

/* The text of the packed uid 'packed': itself, or made in 'buf'. */
const char *cache_uid_text(const char *packed, char *buf, size_t size);
/* Whether the packed uid 'packed' is 'uid' (false for NULL). */
bool	cache_uid_eq(const char *packed, const char *uid);

/* ---- pods ---- */

enum ty_pod_phase {
	TY_POD_PENDING,
	TY_POD_RUNNING,
	TY_POD_SUCCEEDED,
	TY_POD_FAILED,
	TY_POD_UNKNOWN,
};

#define TY_TERM_MESSAGE_MAX	1024	/* bytes of a termination message kept */
#define TY_POD_MESSAGE_MAX	256	/* bytes of a scheduler or pod message kept */

/* The strings of a pod view (ty_pod_str()). */
enum ty_pod_strs {
	TY_POD_NAME,
	TY_POD_NODE,		/* spec.nodeName */
	TY_POD_SCHED_REASON,	/* PodScheduled=False */
	TY_POD_SCHED_MESSAGE,
	TY_POD_DISRUPTION,	/* DisruptionTarget=True reason */
	TY_POD_REASON,		/* status.reason and message */
	TY_POD_MESSAGE,
	TY_POD_TERM_REASON,	/* "main" terminated, failed only */
	TY_POD_TERM_MESSAGE,
	TY_POD_RUN,		/* the trainyard.dev/run label */
	TY_POD_NSTRS
};

/* The uids of a pod view (ty_pod_uid(), ty_pod_uid_is()). */
enum ty_pod_uids {
	TY_POD_UID,
	TY_POD_OWNER_UID,	/* the controller ownerReference's of kind Run */
	TY_POD_NUIDS
};

/*
 * What the controller keeps of a pod, which the pod cache holds for every
 * pod Trainyard manages. Its resourceVersion is the cache entry's
 * (kc_item_rv()).
 */
struct ty_pod {
	int64_t			 start_time;	/* status.startTime, epoch s; 0 none */
	int64_t			 finish_time;	/* main's terminated.finishedAt; 0 */
	int32_t			 session;	/* label; -1 when absent or bad */
	int32_t			 index;		/* label; -1 when absent or bad */
	int32_t			 exit_code;	/* main's terminated.exitCode; -1 */
	uint8_t			 phase;		/* enum ty_pod_phase */
	bool			 deleting;	/* metadata.deletionTimestamp */
	bool			 ready;		/* condition Ready=True */
	bool			 scheduled;	/* condition PodScheduled=True */
	uint16_t		 str[TY_POD_NSTRS];	/* offsets (ty_cache_str()) */
	uint16_t		 uid[TY_POD_NUIDS];	/* the same, of packed uids */
	char			 strs[];
};

/* String 'i' of the pod view, or NULL when the pod has none. */
static inline const char *
ty_pod_str(const struct ty_pod *p, enum ty_pod_strs i)
{
	return ty_cache_str(p->strs, p->str[i]);
}

/*
 * Uid 'i' of the pod view as text (made in 'buf' of 'size' bytes,
 * TY_UID_TEXT_MAX is enough), or NULL when the pod has none.
 */
static inline const char *
ty_pod_uid(const struct ty_pod *p, enum ty_pod_uids i, char *buf, size_t size)
{
	return p->uid[i] != 0 ? cache_uid_text(ty_cache_str(p->strs, p->uid[i]), buf, size) :
	    NULL;
}

/* Whether uid 'i' of the pod view is 'uid' (false when the pod has none). */
static inline bool
ty_pod_uid_is(const struct ty_pod *p, enum ty_pod_uids i, const char *uid)
{
	return p->uid[i] != 0 && cache_uid_eq(ty_cache_str(p->strs, p->uid[i]), uid);
}

/*
 * The uid of the controller ownerReference of kind Run of 'obj' (any
 * object), or NULL. Borrowed from 'obj'.
 */
const char *cache_owner_uid(const struct json_object *obj);

/*
 * Makes the compact view of 'pod' (a v1 Pod) in *ret (free with
 * cache_pod_free()). Messages are truncated (TY_POD_MESSAGE_MAX,
 * TY_TERM_MESSAGE_MAX) at a UTF-8 boundary; the termination message is
 * kept only when the container exited non-zero; names and uids longer
 * than Kubernetes allows are cut. KC_EINVALID when the pod has no name,
 * -ENOMEM. Thread-safe; 'pod' is only read.
 */
int	cache_pod_from_json(const struct json_object *pod, struct ty_pod **ret)
	    _must_check_;
struct ty_pod *cache_pod_free(struct ty_pod *);
KC_DEFINE_CLEANUP(struct ty_pod, cache_pod_free)

/* ---- children: PodGroup, Service, NetworkPolicy ---- */

struct ty_child_item {
	int32_t		 session;	/* trainyard.dev/session; -1 when absent */
	bool		 deleting;
	uint16_t	 uid;		/* packed */
	uint16_t	 owner_uid;	/* the controller ownerReference's, packed */
	uint16_t	 run;		/* trainyard.dev/run */
	char		 strs[];
};

/* Makes the cached form of a child object; -ENOMEM. */
int	cache_child_from_json(const struct json_object *obj, struct ty_child_item **ret)
	    _must_check_;

/* ---- Runs and ResourceProfiles ---- */

/*
 * Their compact JSON text without managedFields and kubectl's
 * last-applied-configuration, deflated with a dictionary, inflated and
 * parsed again for each reconcile (cache_obj_json()), plus the two fields
 * handlers read. The deflated bytes come last, so the offsets of the
 * strings before them stay small.
 */
struct ty_obj_item {
	uint32_t	 zlen;		/* bytes of the deflated text */
	uint32_t	 len;		/* bytes of the text */
	uint16_t	 profile;	/* a Run's spec.profile, or "" */
	uint16_t	 phase;		/* a Run's status.phase, or "" */
	uint16_t	 z;		/* the deflated text */
	char		 strs[];
};

static inline const char *
ty_obj_profile(const struct ty_obj_item *it)
{
	return ty_cache_str(it->strs, it->profile);
}

static inline const char *
ty_obj_phase(const struct ty_obj_item *it)
{
	return ty_cache_str(it->strs, it->phase);
}

/* Makes the cached form of a Run or profile; -ENOMEM, -E2BIG, a deflate error. */
int	cache_obj_from_json(const struct json_object *obj, struct ty_obj_item **ret,
	    struct kc_status *st) _must_check_;
/*
 * A new tree (json_object_put()) of a cached Run or ResourceProfile: 0,
 * -ENOMEM, KC_EPARSE (not a text this process cached). Thread-safe.
 */
int	cache_obj_json(const struct ty_obj_item *, struct json_object **ret) _must_check_;
/* The preset dictionary (for the tests: how well it still fits a Run). */
const char *cache_obj_dict(size_t *ret_len);

/* ---- objects a Project owns ---- */

/*
 * A Namespace, ResourceQuota, NetworkPolicy, RoleBinding, ClusterRole or
 * ClusterRoleBinding labelled with trainyard.dev/project: its labels and
 * a hash of the fields the Project reconcilers own (cache_owned_hash();
 * for a Namespace, whose spec is the API server's, of its Pod Security
 * labels, cache_psa_hash()), so drift is seen without keeping the object.
 */
struct ty_owned_item {
	uint64_t	 hash;		/* cache_owned_hash(); a namespace's: cache_psa_hash() */
	bool		 deleting;
	uint16_t	 project;	/* trainyard.dev/project, or "" */
	uint16_t	 member;	/* trainyard.dev/member, or "" */
	char		 strs[];
};

static inline const char *
ty_owned_project(const struct ty_owned_item *it)
{
	return ty_cache_str(it->strs, it->project);
}

static inline const char *
ty_owned_member(const struct ty_owned_item *it)
{
	return ty_cache_str(it->strs, it->member);
}

/*
 * A hash of what the controller owns of an object it keeps for a
 * Project: the values of the labels app.kubernetes.io/managed-by,
 * trainyard.dev/project and trainyard.dev/member, and the members spec,
 * rules, roleRef and subjects, whatever the order of their keys (an API
 * server may print them in any order). The same for a desired object and
 * for its cached copy when nobody changed it. Pure.
 */
uint64_t cache_owned_hash(const struct json_object *obj);
/*
 * A hash of the Pod Security labels of an object (a namespace):
 * pod-security.kubernetes.io/{enforce,warn,audit} and their -version,
 * absent ones included. Pure.
 */
uint64_t cache_psa_hash(const struct json_object *obj);
/* Makes the cached form of an object a Project owns; -ENOMEM. */
int	cache_owned_from_json(const struct json_object *obj, struct ty_owned_item **ret)
	    _must_check_;

/* ---- the caches ---- */

enum ty_cache_id {
	TY_CACHE_RUNS,
	TY_CACHE_PROFILES,
	TY_CACHE_PODS,
	TY_CACHE_SERVICES,
	TY_CACHE_NETPOLS,
	TY_CACHE_PODGROUPS,	/* only with a PodGroup API */
	/* Only when trainyard.dev/v1beta1 serves Projects: */
	TY_CACHE_PROJECTS,	/* struct ty_obj_item */
	TY_CACHE_MEMBERS,	/* struct ty_obj_item, indexed by namespace */
	/* struct ty_owned_item, labelled trainyard.dev/project, indexed by it: */
	TY_CACHE_NAMESPACES,
	TY_CACHE_QUOTAS,
	TY_CACHE_LIMITRANGES,
	TY_CACHE_PROJECT_NETPOLS,
	TY_CACHE_ROLEBINDINGS,
	TY_CACHE_CLUSTERROLES,
	TY_CACHE_CLUSTERROLEBINDINGS,
	TY_CACHE_N
};

struct ty_cache_kind {
	const char		*name;		/* "pods": metrics, logs */
	const struct kc_resource *res;		/* NULL: the PodGroup API in use */
	const char		*selector;	/* label selector; NULL: every object */
	bool			 projects;	/* only when Projects are served */
	const char *const	*keep;
	size_t			 nkeep;
	kc_informer_transform_fn *transform;
	kc_informer_free_fn	*free_item;	/* NULL: kc_free() */
	kc_informer_index_fn	*index;		/* NULL: none */
};

extern const struct ty_cache_kind cache_kinds[TY_CACHE_N];

/*
 * The version of trainyard.dev to read and write Runs and ResourceProfiles
 * at, from the discovery document of the group (GET /apis/trainyard.dev,
 * an APIGroup): "v1beta1" when it is served, else "v1alpha1" when it is,
 * else NULL (the group lists neither, or 'group' is not an APIGroup).
 */
const char *cache_trainyard_version(const struct json_object *group);

/*
 * The version to follow from now on, for a controller reading at
 * 'current' ("v1alpha1" or "v1beta1"; NULL before the first answer):
 * the newest one 'group' serves (cache_trainyard_version()), so the
 * controller moves up when v1beta1 is served and down when the CRDs go
 * back to v1alpha1 alone; 'current' when 'group' is NULL (the group is
 * not served: the CRDs are being replaced, the informers retry) or serves
 * neither. Pure: served versions in, version out.
 */
const char *cache_version_follow(const char *current, const struct json_object *group);

/* The Run and ResourceProfile resources of 'version' (v1beta1, else v1alpha1). */
const struct kc_resource *cache_runs_res(const char *version);
const struct kc_resource *cache_profiles_res(const char *version);

/*
 * Splits a queue key "ns/name" into 'ns' (KC_NAMESPACE_MAX + 1 bytes) and
 * 'name' (KC_NAME_MAX + 1): 0, or -EINVAL for a key without '/' or with
 * a part too long.
 */
int	cache_key_split(const char *key, char *ns, char *name) _must_check_;

/*
 * The Run named by a cached managed object (its trainyard.dev/run label),
 * or NULL: what a change of a pod or child maps to.
 */
const char *cache_run_of(enum ty_cache_id, const struct kc_item *);

#endif

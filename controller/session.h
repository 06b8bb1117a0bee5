/*
 * session.h: the compact pod view and the session decision function.
 *
 * A Run lives as a sequence of sessions. A session starts (status.session
 * = n, sessionStartTime), its PodGroup, Service and NetworkPolicy are
 * created, then its pods; it ends (sessionEndTime, phase, reason) when
 * every pod succeeded, a pod failed or was taken away, a deadline passed or
 * the user stopped it; then everything it made is deleted, and once that is
 * gone (CleanedUp) the next session may start. session_decide() holds all
 * of these rules; it is pure: it reads the Run, what the caches show and
 * the clock, and says what to write and what to create or delete.
 *
 * The reconciler's contract:
 *	1. Build the input from the caches: the Run, model_control(),
 *	   model_validate() (spec or problems), the Run's children (PodGroup,
 *	   Service, NetworkPolicy: present, their session label, deleting),
 *	   its pods as struct ty_pod (every session, filtered by the
 *	   trainyard.dev/run label and the Run's uid as owner), the indices of
 *	   pods it created for status.session that the cache does not show yet
 *	   ("expected"), the PodGroup API in use and the wall-clock now.
 *	   A child it created that the cache does not show yet may be
 *	   reported as present (its own expectation), which saves a round.
 *	2. When status_changed, write 'status' through the status subresource
 *	   with the Run's resourceVersion. If that fails (conflict), stop:
 *	   execute nothing else and retry later. The end of a session is
 *	   recorded before its pods are deleted, so a deleted pod is never
 *	   mistaken for one someone else removed.
 *	3. Execute the deletes (uid preconditions), then the creates (session
 *	   'session' of the decision, objects from model_*()). AlreadyExists
 *	   and NotFound are success. Remember created pod indices until the
 *	   cache shows them.
 *	4. Emit the events, and requeue at next_check_ms (wall clock) if set.
 * Calling session_decide() again with the same input gives the same
 * decision, so any step may be repeated after a crash.
 */
#ifndef TY_SESSION_H
#define TY_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/macro.h>

#include "config.h"
#include "model.h"

#define TY_FAILED_NODES_MAX	16	/* status.failedNodes entries */
#define TY_HISTORY_MAX		10	/* status.history entries */
#define TY_TERM_MESSAGE_MAX	1024	/* bytes of a termination message kept */
#define TY_POD_MESSAGE_MAX	256	/* bytes of a scheduler or pod message kept */
#define TY_EVENTS_MAX		4

enum ty_pod_phase {
	TY_POD_PENDING,
	TY_POD_RUNNING,
	TY_POD_SUCCEEDED,
	TY_POD_FAILED,
	TY_POD_UNKNOWN,
};

/*
 * Uids as the caches keep them: a UUID in its canonical form (36 bytes of
 * lowercase hex and dashes, what Kubernetes makes) in 17 bytes, a NUL and
 * the 16 bytes of the UUID; any other uid (at most TY_UID_TEXT_MAX - 1
 * bytes) as its text and NUL. An empty uid is kept as none.
 */
#define TY_UID_TEXT_MAX		64	/* a uid's text and its NUL */

/* The bytes session_uid_pack() writes for 'uid' (not NULL, not ""). */
size_t	session_uid_size(const char *uid);
/* Packs 'uid' at 'dst' (session_uid_size() bytes); returns the end. */
char	*session_uid_pack(const char *uid, char *dst);
/* The text of the packed uid 'packed': itself, or made in 'buf'. */
const char *session_uid_text(const char *packed, char *buf, size_t size);
/* Whether the packed uid 'packed' is 'uid' (false for NULL). */
bool	session_uid_eq(const char *packed, const char *uid);

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
 * pod Trainyard manages: one allocation, the strings and packed uids
 * after the struct, found by 16-bit offsets (no pointers: a running pod
 * of the bench takes 115 bytes), immutable once made, so the informer
 * cache shares it between threads without locks. Its resourceVersion is
 * the cache entry's (kc_item_rv()).
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
	uint16_t		 str[TY_POD_NSTRS];	/* 1 + offset in strs[]; 0 absent */
	uint16_t		 uid[TY_POD_NUIDS];	/* the same, of packed uids */
	char			 strs[];
};

/* String 'i' of the pod view, or NULL when the pod has none. */
static inline const char *
ty_pod_str(const struct ty_pod *p, enum ty_pod_strs i)
{
	return p->str[i] != 0 ? p->strs + p->str[i] - 1 : NULL;
}

/*
 * Uid 'i' of the pod view as text (made in 'buf' of 'size' bytes,
 * TY_UID_TEXT_MAX is enough), or NULL when the pod has none.
 */
static inline const char *
ty_pod_uid(const struct ty_pod *p, enum ty_pod_uids i, char *buf, size_t size)
{
	return p->uid[i] != 0 ? session_uid_text(p->strs + p->uid[i] - 1, buf, size) : NULL;
}

/* Whether uid 'i' of the pod view is 'uid' (false when the pod has none). */
static inline bool
ty_pod_uid_is(const struct ty_pod *p, enum ty_pod_uids i, const char *uid)
{
	return p->uid[i] != 0 && session_uid_eq(p->strs + p->uid[i] - 1, uid);
}

/*
 * The uid of the controller ownerReference of kind Run of 'obj' (any
 * object), or NULL. Borrowed from 'obj'.
 */
const char *session_owner_uid(const struct json_object *obj);

/*
 * Makes the compact view of 'pod' (a v1 Pod) in *ret (free with
 * session_pod_free()). Messages are truncated (TY_POD_MESSAGE_MAX,
 * TY_TERM_MESSAGE_MAX) at a UTF-8 boundary; the termination message is
 * kept only when the container exited non-zero; names and uids longer
 * than Kubernetes allows are cut. KC_EINVALID when the pod has no name,
 * -ENOMEM. Thread-safe; 'pod' is only read.
 */
int	session_pod_from_json(const struct json_object *pod, struct ty_pod **ret)
	    _must_check_;
struct ty_pod *session_pod_free(struct ty_pod *);
KC_DEFINE_CLEANUP(struct ty_pod, session_pod_free)

/* A PodGroup, Service or NetworkPolicy named after the Run, as cached. */
struct ty_child {
	bool		 exists;
	bool		 deleting;
	int64_t		 session;	/* its trainyard.dev/session label; -1 */
	char		 uid[64];
};

enum ty_kind {
	TY_KIND_PODGROUP,
	TY_KIND_SERVICE,
	TY_KIND_NETPOL,
	TY_KIND_POD,
};

struct ty_session_in {
	const struct json_object *run;		/* the Run (its status is read) */
	const struct ty_control	*ctl;		/* model_control() */
	const struct ty_spec	*spec;		/* NULL when invalid */
	const struct ty_problems *problems;	/* when spec is NULL; may be NULL */
	const struct ty_config	*cfg;
	struct ty_child		 podgroup, service, netpol;
	const struct ty_pod *const *pods;	/* the Run's pods, any session */
	size_t			 npods;
	const int32_t		*expected;	/* created for status.session, unseen */
	size_t			 nexpected;
	/*
	 * Pods of status.session that left the cache, as last seen (the
	 * informer's delete): a pod deleted by the pod GC or with grace
	 * period 0 may vanish between two reconciles, and its last view
	 * still says why (DisruptionTarget, exit code). Only read for
	 * indices no pod in 'pods' holds; may be NULL.
	 */
	const struct ty_pod *const *gone;
	size_t			 ngone;
	enum ty_podgroup_api	 api;		/* in use: X_K8S, SIGS_K8S or NONE */
	uint64_t		 now_ms;	/* wall clock, ms since the epoch */
};

struct ty_delete {
	enum ty_kind	 kind;
	char		 name[80];
	char		 uid[64];	/* precondition; "" for none */
};

struct ty_event {
	bool		 warning;
	char		 reason[64];
	char		 message[512];
};

struct ty_decision {
	struct json_object	*status;	/* the new status (owned) */
	bool			 status_changed;
	int64_t			 session;	/* the session the creates belong to */
	bool			 create_podgroup, create_service, create_netpol;
	int32_t			*create_pods;	/* indices, ascending */
	size_t			 ncreate_pods;
	struct ty_delete	*deletes;
	size_t			 ndeletes;
	struct ty_event		 events[TY_EVENTS_MAX];
	size_t			 nevents;
	uint64_t		 next_check_ms;	/* wall clock; 0: no timed check */
};

/*
 * Decides what a reconcile does (see the contract above) and fills *ret,
 * which the caller releases with session_decision_release(). 0, or
 * -ENOMEM with *ret empty. Thread-safe; the input is only read.
 */
int	session_decide(const struct ty_session_in *in, struct ty_decision *ret)
	    _must_check_;
void	session_decision_release(struct ty_decision *);

#endif

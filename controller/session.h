/*
 * session.h: the session decision function.
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
 * The reconcile contract (this is its one copy; ARCHITECTURE.md,
 * controller/README.md and docs/api.md point here):
 *	1. Gather the input from the caches: the Run, model_control(),
 *	   model_validate() (spec or problems), the Run's children (PodGroup,
 *	   Service, NetworkPolicy: present, their session label, deleting),
 *	   its pods as struct ty_pod (every session, filtered by the
 *	   trainyard.dev/run label and the Run's uid as owner), the indices of
 *	   pods it created for status.session that the cache does not show yet
 *	   ("expected"), pods of the session that left the cache ("gone"), the
 *	   last refused create of the session, the write policy's memory, the
 *	   PodGroup API in use and the clocks (the Run's session clock for
 *	   its times, expect_clock_ms(); the monotonic one for the write
 *	   policy). A child it created that the
 *	   cache does not show yet may be reported as present (its own
 *	   expectation), which saves a round. A Run with a deletionTimestamp,
 *	   or one the cache no longer holds, is not decided at all: deleting a
 *	   Run costs no write.
 *	2. Decide (session_decide(), pure). When the decision holds, execute
 *	   nothing and look again after after_ms.
 *	3. When write_status, write 'status' through the status subresource
 *	   with the Run's resourceVersion. If that fails (conflict, gone),
 *	   stop: execute nothing else and retry later. The end of a session
 *	   is recorded before its pods are deleted, so a deleted pod is never
 *	   mistaken for one someone else removed. Otherwise keep the
 *	   decision's 'write' memory for the next decision.
 *	4. Execute the deletes (uid preconditions), then the creates (session
 *	   'session' of the decision, objects from model_*()). NotFound is
 *	   success, and so is AlreadyExists for an object that is the Run's;
 *	   someone else's is a name conflict (names.h), remembered for the
 *	   next decision, which ends the session (NameConflict), and an
 *	   earlier Run's of the name is looked at again later. Remember
 *	   created pod indices (never another's of the name) until the
 *	   cache shows them or, once the session ended, a delete by name
 *	   finds them gone (the decision deletes them by name and counts
 *	   them as remaining meanwhile). A refused create (Forbidden, Invalid) stops the
 *	   creates and is remembered for the next decision, which says why in
 *	   the Scheduled condition and backs the creates off; a create that
 *	   goes through forgets it.
 *	5. Emit the events, and look again at the earlier of next_check_ms
 *	   (on the session clock) and after_ms; with no timed check, the
 *	   session clock is let go (expect_clock_release()).
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

#include "cache.h"
#include "config.h"
#include "model.h"
#include "names.h"

#define TY_FAILED_NODES_MAX	16	/* status.failedNodes entries */
#define TY_HISTORY_MAX		10	/* status.history entries */
#define TY_EVENTS_MAX		4

/*
 * Why a session ended: status.reason, the Finished condition's reason,
 * the history's reason, the Event. One row per reason; the failures come
 * first in root-cause order (when several nodes fail, the lowest row
 * wins: a preemption, a lost machine, an eviction or a deletion before an
 * exit code, as the other nodes usually exit because a peer vanished).
 */
enum ty_reason {
	TY_REASON_NONE,
	TY_REASON_PREEMPTED,
	TY_REASON_NODE_LOST,
	TY_REASON_EVICTED,
	TY_REASON_POD_DELETED,
	TY_REASON_POD_FAILED,
	TY_REASON_DEADLINE,
	TY_REASON_UNSCHEDULABLE,
	TY_REASON_SUCCEEDED,
	TY_REASON_SUSPENDED,
	TY_REASON_PROJECT_SUSPENDED,
	TY_REASON_PROJECT_DELETED,
	TY_REASON_NEW_SESSION,
	TY_REASON_INVALID_SPEC,
	TY_REASON_NAME_CONFLICT,
	TY_REASON_POD_SECURITY,		/* the API server refused a pod for Pod Security */
	TY_REASON_N
};

/* Which spec.restartPolicy starts a new session after a reason. */
enum ty_restart_class {
	TY_RESTARTS_NEVER,		/* no policy */
	TY_RESTARTS_ON_PREEMPTION,	/* OnPreemption and OnFailure */
	TY_RESTARTS_ON_FAILURE,		/* OnFailure */
};

struct ty_reason_row {
	const char		*name;		/* "Preempted" */
	const char		*phase;		/* Failed, Succeeded, Stopped */
	bool			 warning;	/* the Event's type */
	const char		*event;		/* the Event's reason */
	enum ty_restart_class	 restarts;
	/*
	 * What a Run's deletion looks like from its pods (the garbage
	 * collector deletes them while the Run's delete is on its way to the
	 * cache): written only once it stood still for TY_HOLD_MS.
	 */
	bool			 held;
};

extern const struct ty_reason_row ty_reasons[TY_REASON_N];

/* The row of status reason 'name', or NULL. */
const struct ty_reason_row *session_reason(const char *name);

/*
 * The status-write policy (session_decide() applies it when the input
 * has a 'write' state): when a status change is written, and what waits.
 *
 *	- a change a user cannot see (allPodsCreated alone) waits for the
 *	  next write of anything else;
 *	- progress only (node counts, readyNodes, condition messages, the
 *	  Scheduled condition): waits while the session's objects are being
 *	  created, then is written once it stood still for TY_PROGRESS_QUIET_MS,
 *	  and at most TY_PROGRESS_MAX_MS after the last status write while it
 *	  keeps moving;
 *	- an end that a Run's deletion also causes (a row with 'held': pods
 *	  deleted without a disruption reason), and a child of a running
 *	  session that vanished, wait TY_HOLD_MS with nothing executed: the
 *	  Run's delete usually reaches the cache by then, and deleting a Run
 *	  costs no write;
 *	- everything else (a start, phase Running, an end, a refused create)
 *	  is written at once.
 */
#define TY_PROGRESS_QUIET_MS	15000	/* beyond kube-scheduler's 10 s pod backoff */
#define TY_PROGRESS_MAX_MS	60000
#define TY_HOLD_MS		3000

/* The policy's memory of one Run, kept by the caller between decisions. */
struct ty_write_state {
	uint64_t	 now_ms;	/* monotonic clock (kc_clock_now_ms()) */
	uint64_t	 last_write_ms;	/* of the last status write; 0: none known */
	uint64_t	 wait_hash;	/* the change waiting; 0: none */
	uint64_t	 wait_since_ms;	/* since when it looked the same */
};

/*
 * A create the API server refused (quota, admission, a missing
 * PriorityClass), as the caller remembers it: the session's pods and
 * children are not created again until session_create_backoff_ms() of
 * 'failures' after the last, and the Scheduled condition says why
 * (reason FailedCreate, the server's message). A pod refused for Pod
 * Security ("Error creating Pod x: pods \"x\" is forbidden: violates
 * PodSecurity ...") would be refused again: the session fails at once
 * with reason PodSecurity and the server's message.
 */
struct ty_refusal {
	int64_t		 session;	/* the session the create was for */
	uint32_t	 failures;	/* refusals in a row */
	uint64_t	 at_ms;		/* of the last, on the session clock (now_ms) */
	char		 message[640];	/* "Error creating Pod r-0: ..." */
};

#define TY_CREATE_BACKOFF_BASE_MS	1000
#define TY_CREATE_BACKOFF_MAX_MS	(2 * 60 * 1000)

/* How long creates wait after 'failures' refusals in a row (1 s doubling). */
uint64_t session_create_backoff_ms(uint32_t failures);

/*
 * A create of this session met an object of the name that is not the
 * Run's (names.h, TY_NAME_FOREIGN): the session ends with reason
 * NameConflict and 'message', which names every taken object.
 */
struct ty_conflict {
	int64_t		 session;
	char		 message[TY_NAMES_MSG_MAX];
};

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

/*
 * The project quota's say on a Run of a project namespace (reconcile_run.c
 * asks quota.c's ledger). A session starts only when 'admit'; otherwise
 * the Run waits with QuotaReserved=False ('reason', 'message') and, when it
 * never ran, phase Pending with that reason. A session that starts records
 * status.quota {project, reserved: demand} and QuotaReserved=True; the
 * reservation is dropped once the session's objects are deleted. 'stop'
 * ends a running session with 'stop_reason' (PROJECT_SUSPENDED,
 * PROJECT_DELETED) and 'message'. Without a gate nothing of this applies.
 */
struct ty_quota_gate {
	const char		*project;
	bool			 admit;
	bool			 stop;
	enum ty_reason		 stop_reason;
	const char		*reason;	/* quota.h's TY_QUOTA_* */
	const char		*message;
	struct json_object	*demand;	/* quota_demand(); NULL: spec invalid */
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
	/*
	 * Wall-clock ms since the epoch, on the Run's session clock
	 * (expect_clock_ms()): a step of the wall clock does not move it.
	 */
	uint64_t		 now_ms;
	/* The last refused create of status.session; NULL: none. */
	const struct ty_refusal	*refused;
	/* The status-write policy's memory; NULL: write every change at once. */
	const struct ty_write_state *write;
	/* The project quota's gate; NULL: not a project's Run. */
	const struct ty_quota_gate *quota;
	/* A name conflict met by a create of status.session; NULL: none. */
	const struct ty_conflict *conflict;
	/*
	 * Objects of the Run's names that an earlier Run of the same name
	 * owns, not deleted yet: no session starts, and the Scheduled
	 * condition says what it waits for ("service default/web of an
	 * earlier Run web"); NULL: the names are free.
	 */
	const char		*name_wait;
};

/* The reason of a Run that waits for its names (phase Pending, Scheduled). */
#define TY_WAITING_FOR_NAME	"WaitingForName"

struct ty_delete {
	enum ty_kind	 kind;
	char		 name[80];
	char		 uid[64];	/* precondition; "" for none */
	/*
	 * A pod created for the ended session that the cache never showed
	 * (in 'expected'): its index, deleted by name; -1 otherwise. When the
	 * delete finds it gone, the caller forgets its expectation
	 * (expect_pod_forget()).
	 */
	int32_t		 unseen_index;
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
	bool			 started;	/* this decision starts 'session' */
	bool			 create_podgroup, create_service, create_netpol;
	int32_t			*create_pods;	/* indices, ascending */
	size_t			 ncreate_pods;
	struct ty_delete	*deletes;
	size_t			 ndeletes;
	struct ty_event		 events[TY_EVENTS_MAX];
	size_t			 nevents;
	uint64_t		 next_check_ms;	/* on now_ms's clock; 0: none timed */
	/* The write policy's verdict (all of them false/0 without 'write'). */
	bool			 write_status;	/* status_changed, and written now */
	bool			 hold;		/* execute nothing, look again */
	uint64_t		 after_ms;	/* look again after this; 0: no need */
	struct ty_write_state	 write;		/* the memory to keep for next time */
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

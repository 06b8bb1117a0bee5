/*
 * controller.h: trainyard-controller's internal index.
 *
 *	main.c        flags, configuration, signals, startup and shutdown order
 *	manager.c     the caches (informers), the work queue, the reconciler
 *	              table, the PodGroup API discovery, the trainyard.dev
 *	              version followed (the version thread)
 *	workers.c     the worker pool and the memory trimmer
 *	reconcile_run.c  the Run reconciler: gather, session_decide(), execute
 *	reconcile_project.c  the Project reconciler, and what it shares with
 *	              reconcile_member.c, the ProjectMember reconciler
 *	expect.c      what this process created or deleted that the caches do
 *	              not show yet ("expectations": no duplicate pods)
 *	events.c      the Event recorder
 *	metrics.c     /metrics (secure: TokenReview, SubjectAccessReview), health
 *	review.c webhook.c   the conversion webhook: ConversionReviews (pure), its
 *	              HTTPS server (webhook.h); certs.c its self-managed
 *	              certificates (certs.h)
 *	config.c model.c session.c cache.c   pure: configuration, the Run API
 *	              and the desired objects, the session rules and the
 *	              status-write policy, the cached forms (their own headers)
 *
 * Data flow: informer threads keep compact caches (cache.c) of Runs,
 * ResourceProfiles and the objects Trainyard manages (filtered by the
 * managed-by label) and hand every change to the reconcilers that watch
 * that cache, which enqueue their keys; worker threads take keys from the
 * queue and call the key's reconciler with the worker's own client.
 * Nothing but the caches, the queue, the expectations and the recorder is
 * shared between threads.
 */
#ifndef TY_CONTROLLER_H
#define TY_CONTROLLER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <kc/client.h>
#include <kc/err.h>
#include <kc/informer.h>
#include <kc/kubeconfig.h>
#include <kc/leader.h>
#include <kc/log.h>
#include <kc/macro.h>
#include <kc/ratelimit.h>
#include <kc/workqueue.h>

#include "admission.h"
#include "cache.h"
#include "config.h"
#include "metrics.h"
#include "model.h"
#include "project.h"
#include "quota.h"
#include "session.h"

#define TY_COMPONENT		"trainyard-controller"
#define TY_FIELD_MANAGER	"trainyard-controller"

struct ctl;
struct expect;
struct manager;
struct recorder;
struct workers;

/* Counters read by the metrics endpoint and the benchmarks. */
struct ty_counters {
	atomic_uint_fast64_t	 reconciles, reconcile_errors;
	atomic_uint_fast64_t	 pods_created, pods_deleted;
	atomic_uint_fast64_t	 objects_created, objects_deleted;
	atomic_uint_fast64_t	 status_updates, conflicts;
	atomic_uint_fast64_t	 sessions_started, sessions_ended;
};

struct ctl {
	struct ty_config	 cfg;
	struct kc_rest_config	*rc;
	struct kc_ratelimit	*limiter;	/* every client's QPS/burst */
	struct kc_workqueue	*queue;
	struct kc_informer	*caches[TY_CACHE_N];	/* podgroups: NULL without API */
	enum ty_podgroup_api	 pg_api;	/* resolved: X_K8S, SIGS_K8S, NONE */
	bool			 projects;	/* Projects served and followed */
	atomic_bool		 caches_ready;	/* synced: other threads may read */
	struct admission_ops	 admission;	/* the webhook's view of the caches */
	struct expect		*expect;
	struct quota_ledger	*ledger;	/* quota.h: what project Runs hold */
	struct recorder		*rec;
	struct manager		*mgr;		/* manager.c's threads */
	struct metrics		*metrics;	/* /metrics, /healthz, /readyz */
	struct kc_leader	*leader;	/* NULL without leader election */
	atomic_bool		 lost;		/* leadership lost: exit 1 */
	atomic_bool		 stop_requested;	/* SIGTERM, maybe during start */
	struct ty_counters	 n;
	char			 instance[64];	/* host name, for Events */
	/*
	 * Tests only (--exit-after-writes-for-testing): the process kills
	 * itself with SIGKILL right after this many successful API writes
	 * of the manager's clients (0: never); 'writes' counts them.
	 */
	uint64_t		 exit_after_writes;
	atomic_uint_fast64_t	 writes;
};

/* manager.c */
/* Allocates the manager's state (before any thread may cancel the start). */
int	 manager_init(struct ctl *) _must_check_;
/*
 * Starts everything after main() loaded the configuration and the rest
 * config: the shared rate limiter, the queue, discovery (the PodGroup API,
 * the newest trainyard.dev version served), one informer thread per
 * cache, waits until the caches are synced (0, or -ETIMEDOUT/-ECANCELED
 * with a log line), then starts the version thread, which moves the Run
 * and ResourceProfile caches when the newest version served changes. The workers start with
 * manager_start_workers(): at once, or when this process leads.
 */
int	 manager_start(struct ctl *) _must_check_;
/*
 * Makes a manager_start() in progress (or about to run) give up promptly
 * with -ECANCELED: SIGTERM while the caches sync. Any thread.
 */
void	 manager_cancel_start(struct ctl *);
/* Starts the workers (once; from main or on_started_leading). */
int	 manager_start_workers(struct ctl *) _must_check_;
/* Stops intake, lets the workers finish (up to 'drain_ms'), stops the rest. */
void	 manager_stop(struct ctl *, uint64_t drain_ms);
/* Frees what manager_start() made (after manager_stop()). */
void	 manager_free(struct ctl *);
/* A new client for one thread, sharing the rate limiter. */
int	 manager_client(struct ctl *, struct kc_client **ret, struct kc_status *st)
	    _must_check_;

/*
 * The reconcilers (STYLE.md, "Static dispatch tables"). The manager owns
 * the caches, the work queue (one for every reconciler: a key is the
 * reconciler's tag and its object's "ns/name"), the shared rate limiter,
 * the expectations and the Event recorder; a reconciler says which caches
 * it watches, maps their changes to its keys, and reconciles one key.
 * A new kind is a reconcile_<kind>.c, a row in manager.c's table and a
 * Makefile line.
 */
enum ty_change { TY_ADDED, TY_UPDATED, TY_DELETED };

/* Queues 'key' ("ns/name", or "name" for a cluster-scoped kind). */
typedef void	ty_enqueue_fn(void *arg, const char *key);

struct reconciler {
	const char	*kind;		/* "Run": logs */
	char		 tag;		/* first byte of its queue keys */
	uint32_t	 watches;	/* 1u << enum ty_cache_id, each cache */
	/*
	 * An item of cache 'id' changed (the informer's thread; 'it' is
	 * borrowed): enqueue() each key it concerns. Reads caches and notes
	 * expectations, nothing else.
	 */
	void		(*changed)(struct ctl *, enum ty_cache_id id, enum ty_change,
			    struct kc_item *it, ty_enqueue_fn *enqueue, void *arg);
	/*
	 * Reconciles 'key' with the worker's client: RECONCILE_DONE,
	 * RECONCILE_AFTER(ms) to look again, or a negative code (retried
	 * with the queue's per-key backoff).
	 */
	int64_t		(*reconcile)(struct ctl *, struct kc_client *, const char *key);
};

#define RECONCILE_DONE		0
#define RECONCILE_AFTER(ms)	((int64_t)(ms))

/* workers.c */
struct workers_opts {
	unsigned		 max;		/* threads at most */
	struct kc_workqueue	*queue;
	/* A new client for a worker thread. */
	int	(*client)(void *arg, struct kc_client **ret, struct kc_status *st);
	/* One key, with the worker's client; the pool calls done() after. */
	void	(*work)(void *arg, struct kc_client *cl, const char *key);
	void			*arg;
};
/* The pool (no worker yet) and the trimmer thread. */
int	 workers_new(const struct workers_opts *, struct workers **ret) _must_check_;
/* Starts the resident worker, and more while keys wait (once). */
int	 workers_start(struct workers *) _must_check_;
/* A key was queued: a worker starts if none waits (any thread). */
void	 workers_kick(struct workers *);
/* Work happened (for the trimmer). */
void	 workers_note(struct workers *);
/* Shuts the queue down, drains it for up to 'drain_ms', joins the workers. */
void	 workers_stop(struct workers *, uint64_t drain_ms);
/* Stops the trimmer and frees (after the informers stopped). */
struct workers *workers_free(struct workers *);

/* reconcile_run.c */
extern const struct reconciler run_reconciler;
/*
 * Feeds the quota ledger every cached Run once, after the caches synced:
 * Runs listed before the namespaces' cache knew their project. Before the
 * workers start.
 */
void	run_ledger_rebuild(struct ctl *);

/* reconcile_project.c */
#define TY_PROJECT_FINALIZER	"trainyard.dev/project"
#define TY_MEMBER_FINALIZER	"trainyard.dev/project-member"

extern const struct reconciler project_reconciler;

/*
 * The Project 'name' from the cache: 0 with a private copy in *obj (the
 * caller puts it) and, when its spec is valid, a new ty_project in *p
 * (NULL and the problems in 'probs' when it is not); KC_ENOTFOUND when
 * it is not cached; -ENOMEM. Any thread.
 */
int	project_cached(struct ctl *, const char *name, struct json_object **obj,
	    struct ty_project **p, struct ty_problems *probs) _must_check_;
/*
 * The project of namespace 'ns' (its trainyard.dev/project label, as the
 * namespace cache holds it) into 'buf' (64 bytes): true, or false when
 * the namespace is not a project's. Any thread.
 */
bool	project_of_namespace(struct ctl *, const char *ns, char *buf, size_t size);

/* One ProjectMember of a project and the verdict on it. */
struct ty_member_entry {
	char			 name[KC_NAME_MAX + 1];
	struct ty_member_verdict v;
};

/*
 * The verdicts on every ProjectMember of the home namespace of 'p' not
 * being deleted, ranked oldest first (creationTimestamp, then name) as
 * project_member_check() wants, at wall-clock time 'now': a new array in
 * *ret (kc_free()), its length in *ret_n, and in *ret_total every member
 * cached there, those being deleted included. -ENOMEM. Any thread.
 */
int	project_members(struct ctl *, const struct ty_project *p, time_t now,
	    struct ty_member_entry **ret, size_t *ret_n, size_t *ret_total) _must_check_;

/*
 * Makes the cluster hold 'want' (consumed), an object of owned cache
 * 'id': created when absent (one that exists without the project's
 * labels is taken over), replaced when the fields the controller owns
 * differ from the cache's (cache_owned_hash()). 1 when it wrote, 0 when
 * nothing was needed, or a negative code with the server's message in
 * 'st' (KC_EFORBIDDEN, KC_EINVALID: refused).
 */
int	project_ensure(struct ctl *, struct kc_client *, const struct kc_log_ctx *,
	    enum ty_cache_id id, struct json_object *want, struct kc_status *st)
	    _must_check_;
/* Deletes an object of owned cache 'id'; absent is fine. */
int	project_delete(struct ctl *, struct kc_client *, const struct kc_log_ctx *,
	    enum ty_cache_id id, const char *ns, const char *name) _must_check_;
/*
 * The cached items of owned cache 'id' labelled with project 'name': new
 * references in *ret (unref each, kc_free() the array), n in *ret_n.
 */
int	project_owned(struct ctl *, enum ty_cache_id id, const char *name,
	    struct kc_item ***ret, size_t *ret_n) _must_check_;
void	project_owned_release(struct kc_item **items, size_t n);

/* Whether 'obj' lists finalizer 'fin'. */
bool	finalizer_has(const struct json_object *obj, const char *fin);
/*
 * Adds ('add') or removes finalizer 'fin' of 'obj' (a cached copy) with a
 * merge patch made conditional on its resourceVersion: 0, KC_ECONFLICT,
 * or another code with the message in 'st'.
 */
int	finalizer_set(struct kc_client *, const struct kc_resource *res,
	    const struct json_object *obj, const char *fin, bool add, struct kc_status *st)
	    _must_check_;
/*
 * Appends the condition 'type' to 'conds', keeping its lastTransitionTime
 * from 'old_status' when its status did not change. -ENOMEM.
 */
int	condition_add(struct json_object *conds, const struct json_object *old_status,
	    const char *type, bool ok, const char *reason, const char *message, int64_t gen,
	    time_t now) _must_check_;
/*
 * Writes 'status' (consumed) as the status of 'obj' (a private copy, at
 * its resourceVersion) unless it equals the one it has: 1 written, 0 not
 * needed, KC_ECONFLICT, or another code with the message in 'st'. 'xkey'
 * is the expectations' key: reconciles skip the cached copies older than
 * the write (expect_status_stale()).
 */
int	status_put(struct ctl *, struct kc_client *, const struct kc_resource *res,
	    struct json_object *obj, struct json_object *status, const char *xkey,
	    struct kc_status *st) _must_check_;

/*
 * The admission webhooks' view of the caches (admission.h's callbacks),
 * into *ret: nothing is found until the caches are synced. Thread-safe.
 */
void	project_admission_ops(struct ctl *, struct admission_ops *ret);

/* reconcile_member.c */
extern const struct reconciler member_reconciler;

/* expect.c */
int	 expect_new(struct expect **ret) _must_check_;
struct expect *expect_free(struct expect *);
/*
 * Pods this process created for (run 'key' with uid 'run_uid', session
 * 'session') that the cache may not show yet. expect_pods() drops the
 * entries the cache now shows ('seen', sorted or not, n entries), those
 * of other sessions or another Run uid, and those older than the TTL,
 * then copies what is left into *ret (a new array, caller frees), n into
 * *ret_n. -ENOMEM.
 */
int	 expect_pod_created(struct expect *, const char *key, const char *run_uid,
	    int64_t session, int32_t index) _must_check_;
int	 expect_pods(struct expect *, const char *key, const char *run_uid,
	    int64_t session, const int32_t *seen, size_t nseen, int32_t **ret,
	    size_t *ret_n) _must_check_;
/* A pod created as 'index' of run 'key' is gone unseen (a delete by name found none). */
void	 expect_pod_forget(struct expect *, const char *key, int32_t index);
/*
 * Objects this process deleted (by uid) that the cache may still show
 * without a deletionTimestamp: expect_deleted() answers whether 'uid' was
 * deleted recently (so it is not deleted again).
 */
int	 expect_delete(struct expect *, const char *key, const char *uid);
bool	 expect_deleted(struct expect *, const char *key, const char *uid);
/*
 * A pod of run 'key' (uid 'run_uid') and session 'session' left the pod
 * cache: keeps a reference to its last item (a struct ty_pod) while
 * that session lasts. expect_gone() gives new references to those of
 * 'session' in *ret (caller unrefs each and frees the array). -ENOMEM.
 */
int	 expect_pod_gone(struct expect *, const char *key, const char *run_uid,
	    int64_t session, struct kc_item *item) _must_check_;
int	 expect_gone(struct expect *, const char *key, const char *run_uid,
	    int64_t session, struct kc_item ***ret, size_t *ret_n) _must_check_;
/*
 * The status of run 'key' was written at resourceVersion 'rv' now.
 * expect_status_stale(): whether a cached Run at 'rv' predates that
 * write; once one does not (the cache shows the write), the write is
 * forgotten, as it is after the TTL. expect_status_age_ms(): how long
 * ago the last status write of 'key' was (UINT64_MAX when none is known,
 * or it was longer ago than the TTL).
 */
void	 expect_status_written(struct expect *, const char *key, const char *rv);
bool	 expect_status_stale(struct expect *, const char *key, const char *rv);
uint64_t expect_status_age_ms(struct expect *, const char *key);
/*
 * The status-write policy's memory of run 'key' (session.h): the time of
 * the last status write and the change waiting, into *ret (now_ms is the
 * caller's). expect_write_wait() keeps what the decision left waiting;
 * expect_status_written() forgets it.
 */
void	 expect_write_state(struct expect *, const char *key, struct ty_write_state *ret);
void	 expect_write_wait(struct expect *, const char *key, uint64_t hash,
	    uint64_t since_ms);
/*
 * A create for session 'session' of run 'key' was refused with 'message':
 * the refusals in a row (1, 2, ...), or -ENOMEM. expect_refusal() copies
 * the last refusal of 'session' into *ret (false: none);
 * expect_refusal_clear() forgets it once a create went through.
 */
int	 expect_refused(struct expect *, const char *key, int64_t session,
	    const char *message) _must_check_;
bool	 expect_refusal(struct expect *, const char *key, int64_t session,
	    struct ty_refusal *ret);
void	 expect_refusal_clear(struct expect *, const char *key);
/*
 * A create for session 'session' of run 'key' met an object of the name
 * that is not the Run's: 'message' names every taken object (0, or
 * -ENOMEM). expect_conflict() copies it into *ret while status.session is
 * still 'session' (false: none), so the decision ends the session.
 */
int	 expect_conflict_set(struct expect *, const char *key, int64_t session,
	    const char *message) _must_check_;
bool	 expect_conflict(struct expect *, const char *key, int64_t session,
	    struct ty_conflict *ret);
/*
 * A PodGroup, Service or NetworkPolicy of run 'key' was created for
 * 'session'. expect_child(): whether one created for 'session' is not
 * yet in the cache ('seen' false) and so counts as present; 'seen' true
 * (the cache shows it) forgets the entry. expect_child_deleted(): one the
 * cache did not show was deleted by name (a session that ended at once):
 * forgets the entry too, as the cache may never show it (its create and
 * delete can both reach the cache between two reconciles).
 */
void	 expect_child_created(struct expect *, const char *key, enum ty_kind kind,
	    int64_t session);
bool	 expect_child(struct expect *, const char *key, enum ty_kind kind,
	    int64_t session, bool seen);
void	 expect_child_deleted(struct expect *, const char *key, enum ty_kind kind);
/*
 * The session clock of run 'key' (expect.c's header): wall-clock
 * milliseconds since the epoch, measured on the monotonic clock from the
 * first look since the last expect_clock_release(), which takes the wall
 * clock; without memory, the wall clock. session_decide()'s now_ms, a
 * refusal's time and the timed requeue read it. expect_clock_release():
 * the Run has nothing timed; its next look reads the wall clock again.
 */
uint64_t expect_clock_ms(struct expect *, const char *key);
void	 expect_clock_release(struct expect *, const char *key);
/* Forgets everything about run 'key' (the Run is gone). */
void	 expect_forget(struct expect *, const char *key);

/* events.c */
int	 recorder_new(const char *instance, struct recorder **ret) _must_check_;
struct recorder *recorder_free(struct recorder *);
/*
 * Records an Event about the Run 'run' with the worker's client; failures
 * are logged at debug level and ignored (events are best effort).
 */
void	 recorder_emit(struct recorder *, struct kc_client *cl,
	    const struct json_object *run, bool warning, const char *reason,
	    const char *message);

#endif

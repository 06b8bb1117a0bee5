/*
 * controller.h: trainyard-controller's internal index.
 *
 *	main.c        flags, configuration, signals, startup and shutdown order
 *	manager.c     the caches (informers), the work queue, the workers, the
 *	              PodGroup API discovery; the only file with threads
 *	reconcile_run.c  one Run: read the caches, session_decide(), execute
 *	expect.c      what this process created or deleted that the caches do
 *	              not show yet ("expectations": no duplicate pods)
 *	events.c      the Event recorder
 *	config.c model.c session.c   pure: configuration, the Run API and the
 *	              desired objects, the session rules (their own headers)
 *
 * Data flow: informer threads keep compact caches of Runs, ResourceProfiles
 * and the objects Trainyard manages (filtered by the managed-by label) and
 * enqueue the owning Run's "ns/name" key on every change; worker threads
 * take keys from the queue, and reconcile_run() does the rest with the
 * worker's own client. Nothing but the caches, the queue and the
 * expectations is shared between threads.
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

#include "config.h"
#include "metrics.h"
#include "model.h"
#include "session.h"

#define TY_COMPONENT		"trainyard-controller"
#define TY_FIELD_MANAGER	"trainyard-controller"

/* The kinds the controller follows, beside the built-ins of libkc. */
extern const struct kc_resource ty_res_runs;
extern const struct kc_resource ty_res_profiles;
extern const struct kc_resource ty_res_podgroups_x;	/* scheduling.x-k8s.io */
extern const struct kc_resource ty_res_podgroups_sigs;	/* scheduling.sigs.k8s.io */

/*
 * The cached items (manager.c's transforms). Each is one allocation,
 * its variable string last and sized to fit: a cache holds one per
 * object, so every byte counts thousands of times. Longer uids and
 * names are cut (uids are 36 bytes, label values at most 63).
 */

/*
 * The cached form of a Service, NetworkPolicy or PodGroup: its strings
 * after the struct, the uids packed (session_uid_pack()), found by 8-bit
 * offsets (1 + offset in strs[], 0 when absent).
 */
struct ty_child_item {
	int32_t		 session;	/* trainyard.dev/session; -1 when absent */
	bool		 deleting;
	uint8_t		 uid;		/* packed */
	uint8_t		 owner_uid;	/* the controller ownerReference's, packed */
	uint8_t		 run;		/* trainyard.dev/run */
	char		 strs[];
};

/* A string of a child item ('at' one of its offsets), or NULL. */
static inline const char *
ty_child_str(const struct ty_child_item *ci, uint8_t at)
{
	return at != 0 ? ci->strs + at - 1 : NULL;
}

/*
 * The cached form of a Run or ResourceProfile: its compact JSON text
 * without managedFields and kubectl's last-applied-configuration (a few
 * KB, where a json-c tree takes 15-20 KB), deflated with a dictionary
 * (a tenth of that), inflated and parsed again for each reconcile
 * (manager_obj_json()), plus the two fields handlers read.
 */
struct ty_obj_item {
	const unsigned char *z;		/* the text, deflated (manager.c) */
	uint32_t	 zlen;		/* bytes of z */
	uint32_t	 len;		/* bytes of the text */
	const char	*profile;	/* a Run's spec.profile, or "" */
	char		 phase[16];	/* a Run's status.phase, or "" */
	char		 strs[];
};

struct expect;
struct manager;
struct recorder;

/* Counters read by the metrics endpoint (#6) and the benchmarks. */
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
	struct kc_informer	*runs, *profiles, *pods, *services, *netpols;
	struct kc_informer	*podgroups;	/* NULL without a PodGroup API */
	enum ty_podgroup_api	 pg_api;	/* resolved: X_K8S, SIGS_K8S, NONE */
	struct expect		*expect;
	struct recorder		*rec;
	struct manager		*mgr;		/* manager.c's threads */
	struct metrics		*metrics;	/* /metrics, /healthz, /readyz */
	struct kc_leader	*leader;	/* NULL without leader election */
	atomic_bool		 lost;		/* leadership lost: exit 1 */
	atomic_bool		 stop_requested;	/* SIGTERM, maybe during start */
	struct ty_counters	 n;
	char			 instance[64];	/* host name, for Events */
};

/* manager.c */
/* Allocates the manager's state (before any thread may cancel the start). */
int	 manager_init(struct ctl *) _must_check_;
/*
 * Starts everything after main() loaded the configuration and the rest
 * config: the shared rate limiter, the queue, the PodGroup API discovery,
 * one informer thread per cache, and waits until the caches are synced
 * (0, or -ETIMEDOUT/-ECANCELED with a log line). The workers start with
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
 * A new tree (json_object_put()) of a cached Run or ResourceProfile: 0,
 * -ENOMEM, KC_EPARSE (not a text this process cached). Thread-safe.
 */
int	 manager_obj_json(const struct ty_obj_item *, struct json_object **ret)
	    _must_check_;

/* reconcile_run.c */
#define RECONCILE_DONE		0
#define RECONCILE_AFTER(ms)	((int64_t)(ms))
/*
 * Reconciles the Run of 'key' ("ns/name") with the worker's client:
 * RECONCILE_DONE, RECONCILE_AFTER(ms) to look again, or a negative code
 * (retried with backoff by the caller).
 */
int64_t	 reconcile_run(struct ctl *, struct kc_client *cl, const char *key);

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
 * A progress-only status change of run 'key', fingerprint 'hash', waits
 * to be written. Returns for how many ms the waiting change has had this
 * fingerprint: 0 when it is new or changed since the last call, when
 * 'hash' is 0 (which starts the clock again) or on -ENOMEM.
 * expect_status_written() forgets the waiting change.
 */
uint64_t expect_progress(struct expect *, const char *key, uint64_t hash);
/*
 * A PodGroup, Service or NetworkPolicy of run 'key' was created for
 * 'session'. expect_child(): whether one created for 'session' is not
 * yet in the cache ('seen' false) and so counts as present; 'seen' true
 * (the cache shows it) forgets the entry.
 */
void	 expect_child_created(struct expect *, const char *key, enum ty_kind kind,
	    int64_t session);
bool	 expect_child(struct expect *, const char *key, enum ty_kind kind,
	    int64_t session, bool seen);
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

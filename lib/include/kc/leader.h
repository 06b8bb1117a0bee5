/*
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's
 * tools/leaderelection with a LeaseLock.
 *
 * Several replicas of a controller run the same elector against one
 * Lease ("namespace/name"). The Lease's spec is the election record:
 *
 *	holderIdentity		who leads ("" after a release)
 *	leaseDurationSeconds	how long others wait before they take over
 *	acquireTime, renewTime	MicroTime of the take-over and the last renewal
 *	leaseTransitions	how many times the holder changed
 *
 * Every retry period a candidate reads the Lease. It takes it when there
 * is none (create), when the holder is empty (released), or when the
 * record has not changed for a whole lease duration on the candidate's
 * own monotonic clock: the holder's timestamps are never compared with
 * the local time, so clock skew between nodes cannot cause two leaders.
 * Every write carries the resourceVersion that was read, so of two
 * candidates racing for an expired Lease exactly one wins (the other gets
 * a Conflict and tries again later). The leader renews every retry
 * period; when no renewal succeeded for the renew deadline it gives up
 * leadership (lost), well before the lease duration after which the
 * others may take over.
 *
 * Defaults are client-go's: lease 15 s, renew deadline 10 s, retry
 * period 2 s. The acquire loop waits retry * (1 + up to 1.2) between
 * attempts (client-go's jitter); the renew loop waits retry exactly.
 *
 *	r = kc_leader_new(&(struct kc_leader_opts){
 *		.ns = "trainyard-system",
 *		.name = "trainyard-controller",
 *		.identity = "node-a_4f3c",
 *		.on_started_leading = started,	start the workers
 *		.on_stopped_leading = stopped,
 *		.arg = ctl,
 *	}, &le, &st);
 *	thread:  r = kc_leader_run(le, its_own_client, &st);
 *	         KC_LEADER_LOST: exit the process (client-go's advice)
 *	SIGTERM: kc_leader_stop(le);	releases the Lease if leading
 *	         join the thread; kc_leader_free(le);
 *
 * Time: kc_clock_now_ms() for the observation clock and the waits (in
 * slices, so a stop is seen quickly), kc_clock_wall() for the record's
 * timestamps; a test installs a fake clock.
 *
 * Threads: kc_leader_run() (or kc_leader_try()/kc_leader_release()) on one
 * thread at a time, with a client no other thread uses meanwhile.
 * kc_leader_stop(), kc_leader_is_leader() and kc_leader_holder() from any
 * thread. kc_leader_free() once run() has returned.
 */
#ifndef KC_LEADER_H
#define KC_LEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kc/client.h>
#include <kc/err.h>
#include <kc/macro.h>

#define KC_LEADER_LEASE_DURATION_MS	15000
#define KC_LEADER_RENEW_DEADLINE_MS	10000
#define KC_LEADER_RETRY_PERIOD_MS	2000

/* Longest holderIdentity, with its NUL. */
#define KC_LEADER_IDENTITY_MAX		256

/* What kc_leader_run() returns when it ends normally. */
enum kc_leader_end {
	KC_LEADER_STOPPED = 0,	/* kc_leader_stop(); released if it led */
	KC_LEADER_LOST = 1,	/* led, then could not renew in time */
};

struct kc_leader;

struct kc_leader_opts {
	const char	*ns;		/* required: the Lease's namespace */
	const char	*name;		/* required: the Lease's name */
	/* Required and unique per process: host name plus a random suffix. */
	const char	*identity;
	uint64_t	 lease_duration_ms;	/* 0: KC_LEADER_LEASE_DURATION_MS */
	uint64_t	 renew_deadline_ms;	/* 0: KC_LEADER_RENEW_DEADLINE_MS */
	uint64_t	 retry_period_ms;	/* 0: KC_LEADER_RETRY_PERIOD_MS */
	/*
	 * Callbacks on the thread of kc_leader_run() (or kc_leader_try()),
	 * NULL for none. They must return promptly (start or stop threads,
	 * set flags): renewals wait for them. on_started_leading: this
	 * process now leads. on_stopped_leading: it no longer does (lost or
	 * stopped), called after the release. on_new_leader: the observed
	 * holder changed to 'identity' (this process's own included), not
	 * called for an empty holder.
	 */
	void	(*on_started_leading)(void *arg);
	void	(*on_stopped_leading)(void *arg);
	void	(*on_new_leader)(void *arg, const char *identity);
	void		*arg;
};

/*
 * A new elector; nothing is sent until run. Strings are copied. -EINVAL
 * (reason in 'st') for a missing or bad namespace, name or identity, or
 * timings that break lease > renew deadline > 1.2 * retry period > 0
 * (client-go's rule); -ENOMEM. '*ret' is written only on success.
 */
int	kc_leader_new(const struct kc_leader_opts *opts, struct kc_leader **ret,
	    struct kc_status *st) _must_check_;

/* Frees the elector. NULL is fine; returns NULL. Only after run() returned. */
struct kc_leader *kc_leader_free(struct kc_leader *);

KC_DEFINE_CLEANUP(struct kc_leader, kc_leader_free)

/*
 * Campaigns with 'cl' (used by the elector alone until it returns) until
 * this process leads, calls on_started_leading, then renews until it is
 * stopped or loses the Lease. Failed attempts (API errors, conflicts) are
 * retried, never returned. Returns KC_LEADER_STOPPED after
 * kc_leader_stop(): if it led, it first wrote the release (empty holder,
 * leaseDurationSeconds 1, so a standby takes over at once) and called
 * on_stopped_leading. Returns KC_LEADER_LOST when it led and no renewal
 * succeeded for the renew deadline (on_stopped_leading called; a release
 * is attempted, harmless if someone else holds the Lease). -EBUSY if
 * already running, -EINVAL without a client. A stopped elector returns
 * KC_LEADER_STOPPED at once. The release is one PUT: give the client a
 * timeout_ms (renew deadline / 2 is a good value) so a hung API server
 * cannot hold the shutdown. The client may be left cancelled.
 */
int	kc_leader_run(struct kc_leader *, struct kc_client *cl, struct kc_status *st);

/*
 * Makes run() end: interrupts its wait or request, and run() releases the
 * Lease if it leads. Any thread, any number of times; also from a
 * callback. The elector stays stopped.
 */
void	kc_leader_stop(struct kc_leader *);

/*
 * Whether this process leads now, as of its last successful renewal (it
 * turns false when run() gives up, at most the renew deadline plus one
 * request's timeout after the last renewal). Any thread.
 */
bool	kc_leader_is_leader(struct kc_leader *);

/*
 * The holder last observed ("" before the first read or after a release)
 * copied into 'buf' (truncated to 'size'). Any thread.
 */
void	kc_leader_holder(struct kc_leader *, char *buf, size_t size);

/*
 * One attempt to acquire or renew, for callers that run their own loop
 * (and for tests): 1 when this process now holds the Lease, 0 when
 * another does (or a racing write won: Conflict, AlreadyExists), or the
 * client's error code (with 'st') when the API could not be read or
 * written. Calls on_new_leader and, on the first success,
 * on_started_leading; it never calls on_stopped_leading (run() decides
 * when a lease is lost).
 */
int	kc_leader_try(struct kc_leader *, struct kc_client *cl, struct kc_status *st);

/*
 * Gives the Lease up if this process holds it: writes an empty holder with
 * leaseDurationSeconds 1 over the last Lease read (its resourceVersion as
 * precondition), then calls on_stopped_leading. 0 (also when it did not
 * lead, or the Lease changed meanwhile: KC_ECONFLICT is not an error
 * here), or the client's error code. Leadership ends either way.
 */
int	kc_leader_release(struct kc_leader *, struct kc_client *cl, struct kc_status *st);

#endif

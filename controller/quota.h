/*
 * quota.h: a project's quota as the Run admission counts it.
 *
 * A Run of a project namespace starts a session only when its demand
 * (quota_demand(): what the session's pods and Service take of each
 * resource the project's quota.hard names) fits beside what the project's
 * other Runs hold, all or nothing, first come first served. A Run holds
 * its reservation from the status write that starts its session until the
 * one that records its cleanup: status.quota.reserved says what,
 * status.quota.project where. The ledger is the controller's view of
 * those, rebuilt from the Run cache's events (so after a restart nothing
 * is counted twice or forgotten) plus the reservations this process made
 * that the cache does not show yet.
 *
 *	quota_run_read()	what a Run says of itself (its status)
 *	quota_observe()		the Run cache's add or update; quota_forget()
 *				its delete
 *	quota_admit()		one admission, under the ledger's lock: FIFO
 *				per project, the submitter's cap, the quota;
 *				an admitted Run holds its demand at once
 *	quota_cancel()		the status write of an admission failed
 *	quota_usage()		a project's sums, for its status
 *
 * The demand and fit functions are pure; the ledger is thread-safe (one
 * mutex) and does no I/O.
 */
#ifndef TY_QUOTA_H
#define TY_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <kc/macro.h>

#include "model.h"
#include "project.h"

#define TY_COND_QUOTA		"QuotaReserved"
/* The QuotaReserved condition's reasons. */
#define TY_QUOTA_RESERVED	"QuotaReserved"
#define TY_QUOTA_EXCEEDED	"QuotaExceeded"
#define TY_QUOTA_MEMBER		"MemberQuotaExceeded"
#define TY_QUOTA_SUSPENDED	"ProjectSuspended"
#define TY_QUOTA_DELETING	"ProjectDeleting"
#define TY_QUOTA_INVALID	"ProjectInvalid"
#define TY_QUOTA_RELEASED	"Released"

/*
 * What one session of 's' takes of each resource 'hard' names: "pods" and
 * "count/pods" the nodes, "services" and "count/services" its Service,
 * "requests.<r>" and a bare "<r>" the nodes times the pod's request of r
 * (with project 'p', which may be NULL, the LimitRange's default request
 * when the pod names none: project_default_request()), "limits.<r>" times
 * its limit; other names nothing. A new ResourceList in *ret (canonical
 * quantities, zero ones left out): 0, -ENOMEM, -ERANGE.
 */
int	quota_demand(const struct ty_spec *s, struct json_object *hard,
	    const struct ty_project *p, struct json_object **ret) _must_check_;

/* sum[k] += add[k] for every k of 'add': 0, -ENOMEM, -ERANGE, -EINVAL. */
int	quota_add(struct json_object *sum, struct json_object *add) _must_check_;

/*
 * Whether 'demand' fits 'hard' beside 'used' (either may lack a key:
 * zero). When it does not, 'why' says for the first resource that does
 * not: "needs 16 requests.nvidia.com/gpu; 8 of 128 are free". With 'used'
 * NULL it asks whether the demand could ever fit.
 */
bool	quota_fits(const struct json_object *hard, const struct json_object *used,
	    struct json_object *demand, char *why, size_t size);

/* "16 requests.nvidia.com/gpu, 2 pods": a ResourceList for messages. */
void	quota_text(struct json_object *list, char *buf, size_t size);

/* ---- the ledger ---- */

enum quota_state {
	QUOTA_NONE,		/* neither holds nor waits */
	QUOTA_WAITING,		/* in its project's queue (FIFO) */
	QUOTA_WAITING_MEMBER,	/* waits for its submitter's cap: no queue place */
	QUOTA_RESERVED,		/* holds status.quota.reserved */
};

/* What a Run says of itself; the pointers point into the Run. */
struct quota_run {
	const char		*key;		/* "ns/name" */
	const char		*uid;
	const char		*project;	/* "" when none */
	const char		*user;		/* trainyard.dev/submitted-by, or "" */
	int64_t			 created;	/* creationTimestamp, s */
	int64_t			 session;	/* status.session */
	int64_t			 gpus;		/* status.gpus while it holds */
	enum quota_state	 state;
	const struct json_object *reserved;	/* status.quota.reserved, or NULL */
};

/*
 * Reads 'run' (the cached object) into *ret. 'ns_project' is the project
 * of the Run's namespace (or NULL): what a Run that holds or waits
 * recorded in status.quota.project wins. A Run with no status yet waits
 * (it is about to be looked at), unless suspended or being deleted.
 */
void	quota_run_read(const struct json_object *run, const char *key,
	    const char *ns_project, struct quota_run *ret);

struct quota_ledger;

int	quota_ledger_new(struct quota_ledger **ret) _must_check_;
void	quota_ledger_free(struct quota_ledger *);

/*
 * The Run cache's view of one Run. A reservation this process made for a
 * later session than the view shows is kept. Returns 1 when the Run's
 * project's sums or queue changed (the project's waiting Runs may move),
 * with the project in 'project' (and the one it left, when it moved, in
 * 'old_project'), 0 when not, -ENOMEM.
 */
int	quota_observe(struct quota_ledger *, const struct quota_run *,
	    char project[64], char old_project[64]) _must_check_;
/* Whether the ledger has an entry for the Run 'key'. */
bool	quota_known(struct quota_ledger *, const char *key);
/* The Run 'key' left the cache: as quota_observe(). */
int	quota_forget(struct quota_ledger *, const char *key, char project[64]);

/* One admission: a Run about to start session 'session'. */
struct quota_ask {
	const char		*key, *uid, *project;
	const char		*user;		/* "" when unknown */
	int64_t			 created;
	int64_t			 session;
	int64_t			 gpus;		/* nodes x GPUs per node */
	int64_t			 user_max_gpus;	/* the submitter's cap; -1: none */
	const struct json_object *hard;
	struct json_object	*demand;
};

struct quota_verdict {
	bool	 admit;
	char	 reason[32];		/* TY_QUOTA_* when not admitted */
	char	 message[512];
};

/*
 * Decides 'ask' against the ledger, under its lock: a Run of the project
 * that waits and came first (creationTimestamp, then key) goes first; the
 * submitter's Runs may hold at most user_max_gpus; reserved + demand must
 * fit 'hard'. Admitted, the demand counts as held at once (until the
 * cache shows it, or quota_cancel()). 0, or -ENOMEM.
 */
int	quota_admit(struct quota_ledger *, const struct quota_ask *,
	    struct quota_verdict *ret) _must_check_;
/* The status write that started 'session' of 'key' failed: release it. */
void	quota_cancel(struct quota_ledger *, const char *key, int64_t session);

/* A project's sums: what its Runs hold, how many hold, how many wait. */
struct quota_usage {
	struct json_object	*reserved;	/* a new ResourceList */
	int64_t			 gpus;
	size_t			 active, waiting;
};
int	quota_usage(struct quota_ledger *, const char *project, struct quota_usage *ret)
	    _must_check_;

/*
 * The projects whose sums or queue changed since the last call, as
 * quota_observe() and quota_forget() found them: fn(arg, project) each
 * (the Project reconciler writes their status). At most QUOTA_DIRTY_MAX
 * are remembered between calls; the informer's thread drains them at
 * once after each change.
 */
#define QUOTA_DIRTY_MAX	8
void	quota_take_dirty(struct quota_ledger *, void (*fn)(void *arg, const char *project),
	    void *arg);

/* Calls fn(arg, key) for each Run of 'project' that waits (all: every Run). */
void	quota_foreach(struct quota_ledger *, const char *project, bool all,
	    void (*fn)(void *arg, const char *key), void *arg);

#endif

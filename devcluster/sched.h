/*
 * sched.h: the decisions of a simulated kube-scheduler running the
 * scheduler-plugins Coscheduling plugin (devcluster/sched.c).
 *
 * A pure module: the devcluster's scheduler loop keeps a struct sched, a
 * snapshot of the cluster as the scheduler sees it, and updates it as
 * watch events arrive. A plan computed from the snapshot says what to do;
 * the loop does it through the API and the resulting events flow back
 * into the snapshot. Nothing here logs, keeps global state or talks to
 * storage.
 *
 *	node ADDED/MODIFIED		sched_node_put(s, node, &st)
 *	node DELETED			sched_node_remove(s, name)
 *	pod ADDED/MODIFIED		sched_pod_put(s, pod, &st)   (every pod,
 *					bound or not, any schedulerName)
 *	pod DELETED			sched_pod_remove(s, ns, name)
 *	PodGroup ADDED/MODIFIED		sched_podgroup_put(s, pg, &st)
 *	PodGroup DELETED		sched_podgroup_remove(s, group, ns, name)
 *	namespace ADDED/MODIFIED	sched_namespace_put(s, ns, &st)   (only
 *					for pod affinity namespaceSelectors)
 *	namespace DELETED		sched_namespace_remove(s, name)
 *
 *	when anything changed		sched_plan(s, &plan)
 *	  plan->binds[i]		POST pods/<name>/binding to binds[i].node
 *	  plan->victims[i]		patch status: condition DisruptionTarget
 *					True, reason PreemptionByScheduler,
 *					message "<victims[i].scheduler>:
 *					preempting to accommodate a higher
 *					priority pod"; then DELETE the pod; Event
 *					"Preempted": "Preempted by pod <uid> on
 *					node <node>" (the preemptor's uid)
 *	  plan->noms[i]			set status.nominatedNodeName (clear it
 *					when noms[i].node is NULL)
 *	  plan->unsched[i]		condition PodScheduled False with
 *					unsched[i].reason and .message, and a
 *					Warning Event "FailedScheduling" with the
 *					message cut to 1024 bytes (upstream's
 *					truncateMessage: first 1020 bytes + " ...")
 *	PodGroup or member pod changed	sched_podgroup_status_of() (or
 *					sched_podgroup_status() with the pods)
 *					and patch the PodGroup's status when
 *					it changed; scheduleTimeoutSeconds is
 *					the loop's to enforce, if at all
 *
 * A plan is deterministic: the same snapshot always gives the same plan,
 * whatever order the objects were put in. It is computed against a
 * scratch copy of the free capacity, so what an earlier pod or gang of
 * the plan takes is gone for the later ones, and a gang that does not
 * fit takes nothing. Pods bound by the plan are only assumed until the
 * loop's binding comes back as a pod update; calling sched_plan() again
 * before that would plan them again, so the loop should put the bound
 * pods (or wait for their events) before the next plan.
 *
 * Resource quantities are read as Kubernetes' resource.Quantity parses
 * them (sched_quantity_parse()): cpu in milli-units, everything else in
 * units, rounded up, saturating at INT64_MAX.
 *
 * Thread safety: a struct sched has one owner (the event loop). Plans
 * and the pure helpers share nothing.
 */
#ifndef DC_SCHED_H
#define DC_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/macro.h>

#define SCHED_DEFAULT_NAME	"default-scheduler"
#define SCHED_COSCHED_NAME	"scheduler-plugins-scheduler"

/* The PodGroup API groups and the pod labels that name a PodGroup. */
#define SCHED_PG_GROUP		"scheduling.x-k8s.io"
#define SCHED_PG_LABEL		"scheduling.x-k8s.io/pod-group"
#define SCHED_PG_GROUP_OLD	"scheduling.sigs.k8s.io"
#define SCHED_PG_LABEL_OLD	"pod-group.scheduling.sigs.k8s.io"

#define SCHED_QUANTITY_MAX	64	/* longest quantity string read */
#define SCHED_RESOURCES_MAX	256	/* distinct resource names known */
#define SCHED_MESSAGE_MAX	(64 * 1024)	/* longest unschedulable message */
#define SCHED_EVENT_MESSAGE_MAX	1024	/* validation.NoteLengthLimit */

struct sched;

struct sched_opts {
	/* Pods with this schedulerName get the default profile. NULL: */
	const char	*default_name;		/* SCHED_DEFAULT_NAME */
	/* Pods with this one get the Coscheduling profile. NULL: */
	const char	*cosched_name;		/* SCHED_COSCHED_NAME */
	/* Also run Coscheduling in the default profile (one scheduler). */
	bool		 cosched_default;
};

/*
 * Creates an empty snapshot. 'opts' may be NULL; its strings are copied.
 * 0 or -ENOMEM; '*ret' is set only on success. Free with sched_free().
 */
int	 sched_new(const struct sched_opts *opts, struct sched **ret) _must_check_;

/* Frees the snapshot; NULL is fine. Returns NULL. */
struct sched *sched_free(struct sched *);

KC_DEFINE_CLEANUP(struct sched, sched_free)

/*
 * Adds or replaces a Node (by metadata.name). Read: metadata.labels,
 * spec.unschedulable, spec.taints, status.allocatable (not capacity, as
 * upstream), status.conditions Ready. A node whose Ready condition is
 * False gets the taint node.kubernetes.io/not-ready:NoSchedule, and one
 * whose Ready is Unknown or missing node.kubernetes.io/unreachable:
 * NoSchedule, as the node lifecycle controller would add them (unless
 * spec.taints already has them). 'node' is only read; nothing of it is
 * kept. KC_EINVALID (message in 'st') for a node without a name, with an
 * allocatable quantity that does not parse, or when it would bring the
 * distinct resource names past SCHED_RESOURCES_MAX; the snapshot is then
 * unchanged. -ENOMEM likewise.
 */
int	 sched_node_put(struct sched *, const struct json_object *node,
	    struct kc_status *st) _must_check_;

/* Forgets a node; false when it was not known. Its pods stay, unplaced. */
bool	 sched_node_remove(struct sched *, const char *name);

/*
 * Adds or replaces a Pod (by namespace and name). Put every pod: bound
 * pods use capacity and count for affinity, pending pods with one of the
 * two scheduler names are scheduled, and PodGroup members count for
 * minMember whoever schedules them. Pods in phase Succeeded or Failed use
 * nothing (the scheduler's informer ignores them) but still count for the
 * PodGroup status.
 *
 * A pending pod whose spec cannot be read (a quantity that does not parse,
 * a bad label selector in an affinity term) is kept, and every plan
 * reports it with reason "SchedulerError" and the problem as message.
 * KC_EINVALID only for a pod without namespace or name, or past
 * SCHED_RESOURCES_MAX resource names; -ENOMEM. On failure the snapshot is
 * unchanged. 'pod' is only read.
 */
int	 sched_pod_put(struct sched *, const struct json_object *pod,
	    struct kc_status *st) _must_check_;

/*
 * sched_pod_put() of a new version of a known pod whose spec and metadata
 * are those of the version put before (a status write): only what the
 * snapshot takes from the status changes (phase, nominatedNodeName,
 * startTime, a DisruptionTarget by preemption). 0; KC_ENOTFOUND for a pod
 * not in the snapshot, -ENOMEM (the snapshot unchanged either way).
 */
int	 sched_pod_put_status(struct sched *, const struct json_object *pod)
	    _must_check_;

/* Forgets a pod; false when it was not known. */
bool	 sched_pod_remove(struct sched *, const char *ns, const char *name);

/*
 * Adds or replaces a PodGroup of scheduling.x-k8s.io or
 * scheduling.sigs.k8s.io (by apiVersion; v1alpha1). Read: metadata,
 * spec.minMember (default 0). KC_EINVALID for another group or a missing
 * name or namespace; -ENOMEM.
 */
int	 sched_podgroup_put(struct sched *, const struct json_object *pg,
	    struct kc_status *st) _must_check_;

/* 'group' is SCHED_PG_GROUP or SCHED_PG_GROUP_OLD. */
bool	 sched_podgroup_remove(struct sched *, const char *group, const char *ns,
	    const char *name);

/*
 * Namespace labels, for pod affinity terms with a namespaceSelector. A
 * namespace never put has the one label kube-apiserver always sets,
 * kubernetes.io/metadata.name=<name>. KC_EINVALID without a name.
 */
int	 sched_namespace_put(struct sched *, const struct json_object *ns,
	    struct kc_status *st) _must_check_;
bool	 sched_namespace_remove(struct sched *, const char *name);

size_t	 sched_node_count(const struct sched *);
size_t	 sched_pod_count(const struct sched *);

/*
 * Plans
 */

struct sched_bind {
	char	*ns, *name, *uid;
	char	*node;
};

/*
 * Set status.nominatedNodeName of a pending pod to 'node' (it preempted,
 * or its gang did), or clear it when 'node' is NULL (upstream clears a
 * nomination that no longer holds: the pod failed without preempting, or
 * a higher-priority preemptor took the node).
 */
struct sched_nominate {
	char	*ns, *name;
	char	*node;			/* NULL: clear */
};

/* A pod to evict for a preemptor. */
struct sched_victim {
	char	*ns, *name, *uid;
	char	*node;
	char	*by_ns, *by_name, *by_uid;	/* the preemptor (the first of a gang) */
	char	*scheduler;			/* the preemptor's schedulerName */
};

/*
 * A pod that stays pending: condition PodScheduled False with 'reason'
 * and 'message'. A pod of a gang that was placed and then given up gets
 * "optimistic rejection in PostFilter" (upstream's waiting pods); a pod
 * upstream would leave waiting on its siblings gets no entry at all.
 */
struct sched_unsched {
	char		*ns, *name;
	const char	*reason;	/* "Unschedulable" or "SchedulerError" */
	char		*message;
};

struct sched_plan {
	struct sched_bind	*binds;
	size_t			 nbinds;
	struct sched_nominate	*noms;
	size_t			 nnoms;
	struct sched_victim	*victims;
	size_t			 nvictims;
	struct sched_unsched	*unsched;
	size_t			 nunsched;
};

/*
 * Plans one scheduling round over every pending pod it serves (schedulerName
 * is one of the two names, no spec.nodeName, phase Pending, no
 * deletionTimestamp, no schedulingGates).
 *
 * Order: pods and gangs by priority (high first), then creation time (a
 * gang's is its PodGroup's), then namespace/name, as PrioritySort and
 * Coscheduling's QueueSort order them.
 *
 * A pod is filtered as kube-scheduler's default plugins do, in their order,
 * and the first plugin that rejects a node gives that node's reasons:
 * NodeUnschedulable, TaintToleration, NodeAffinity (nodeSelector and
 * required terms), NodeResourcesFit, InterPodAffinity (required terms).
 * Of the nodes that pass, it takes its nominated node if that passes,
 * else the most allocated one (bin packing): least left after it of each
 * extended resource it requests (by resource name), then of cpu, then of
 * memory, then the first by name.
 *
 * A gang (pods with a PodGroup label under the Coscheduling profile)
 * waits until its PodGroup exists and minMember of its pods exist (not
 * Succeeded or Failed). Then its pending pods are placed together on the
 * scratch capacity; the gang binds only if at least minMember minus its
 * already bound pods fit, else nothing of it is kept. Pods with required
 * pod affinity to each other land in one topology domain: each domain the
 * first pod may open is tried in turn.
 *
 * A pod or gang that does not fit may preempt pods of lower priority
 * (never equal or higher, never its own gang): for a single pod, on one
 * node, as DefaultPreemption chooses; for a gang, across the cluster, the
 * lowest priority level that makes every pending pod fit, then as few of
 * those pods as still let it fit. If evicting every lower-priority pod
 * would not make it fit, nothing is evicted. Preemptors get nominations
 * and their space is held for the rest of the plan.
 *
 * Messages are kube-scheduler's FitError texts, with the preemption and
 * Coscheduling PostFilter parts ("0/8 nodes are available: 2 node(s) were
 * unschedulable, 6 Insufficient nvidia.com/gpu. preemption: 0/8 nodes are
 * available: 2 Preemption is not helpful for scheduling, 6 No preemption
 * victims found for incoming pod."), Coscheduling's PreFilter and Permit
 * texts ("... cannot find enough sibling pods, current pods number: 2,
 * minMember of group: 4", "0/1 nodes are available: 1 PodGroup not
 * found.") and "no nodes available to schedule pods". A pod that
 * preempted gets the FitError alone, as upstream.
 *
 * 0 or -ENOMEM; '*ret' is set only on success. The snapshot is not
 * changed. Free the plan with sched_plan_free().
 */
int	 sched_plan(const struct sched *, struct sched_plan **ret) _must_check_;

struct sched_plan *sched_plan_free(struct sched_plan *);

KC_DEFINE_CLEANUP(struct sched_plan, sched_plan_free)

/*
 * Pure helpers
 */

/*
 * Parses a resource.Quantity string exactly as k8s.io/apimachinery's
 * ParseQuantity(), with lib/quantity.c (kc_quantity_parse_sat()): an
 * optional sign, digits with an optional fraction, then a decimal SI
 * suffix (n u m k M G T P E), a binary one (Ki Mi Gi Ti Pi Ei) or an
 * exponent (e3, E-2). '*ret_milli' gets MilliValue() and
 * '*ret_value' Value(): rounded up (away from zero), saturating at
 * INT64_MAX (-INT64_MAX below zero) where upstream would wrap or cap.
 * Either may be NULL. Upstream quirks are kept: "-", "+" and "." are 0,
 * "1." and "1.G" parse, "e3" is 0.
 * KC_EINVALID with upstream's message ("quantities must match the regular
 * expression ...", "unable to parse quantity's suffix") or "quantity
 * longer than 64 bytes"; the out-parameters are untouched then.
 */
int	 sched_quantity_parse(const char *text, int64_t *ret_milli, int64_t *ret_value,
	    struct kc_status *st) _must_check_;

/*
 * The requests the scheduler counts for a pod, as a new JSON object of
 * integers: "cpu" in millicores, every other resource in units. Requests
 * default to limits where a container has only limits (as the API server
 * defaults them); the pod's request is the larger of the containers'
 * sum (restartable init containers included) and each init container,
 * plus spec.overhead. Zero requests are left out. KC_EINVALID for a
 * quantity that does not parse; -ENOMEM.
 */
int	 sched_pod_requests(const struct json_object *pod, struct json_object **ret,
	    struct kc_status *st) _must_check_;

/*
 * The status the scheduler-plugins PodGroup controller keeps for 'pg',
 * from its member pods 'pods' (the pods of its namespace with its label;
 * any order) at wall time 'now'. For scheduling.x-k8s.io, today's
 * controller: "" -> Pending; Pending -> Scheduling once minMember pods
 * exist (occupiedBy, and scheduleStartTime = 'now', the devcluster's start
 * of the gang's Permit wait; upstream leaves it unset); then Pending below
 * minMember pods, Scheduling while running + succeeded < minMember, else
 * Running; Failed and Finished as below; no status.scheduled. For the
 * older scheduling.sigs.k8s.io, the older controller with PostBind:
 *
 *	phase			"" -> Pending; Pending -> PreScheduling once
 *				minMember pods exist; on a new binding,
 *				Scheduling (and scheduleStartTime) while fewer
 *				than minMember are bound, else Scheduled;
 *				Scheduling -> Scheduled at minMember bound;
 *				Scheduled -> Running when running + succeeded
 *				reach minMember; Failed when some failed and
 *				failed + running + succeeded reach minMember;
 *				Finished when succeeded reach minMember; back to
 *				Pending when no pod is left. Finished and
 *				Failed are final.
 *	scheduled		pods bound to a node (any phase)
 *	running/succeeded/failed  pods in those phases
 *	scheduleStartTime	kept, or set to 'now' on entering Scheduling
 *	occupiedBy		"<ns>/<owner>,..." of the first pod by name,
 *				set when leaving Pending
 *
 * The controller's steps are applied until nothing changes. '*ret' is a
 * new status object (zero counts and unset fields left out, as upstream
 * omits them); '*ret_changed' (may be NULL) says whether it differs from
 * pg's status. KC_EINVALID when 'pg' has no metadata; -ENOMEM.
 */
int	 sched_podgroup_status(const struct json_object *pg,
	    struct json_object *const *pods, size_t npods, time_t now,
	    struct json_object **ret, bool *ret_changed, struct kc_status *st)
	    _must_check_;

/* The same, with the member pods taken from the snapshot. */
int	 sched_podgroup_status_of(const struct sched *, const struct json_object *pg,
	    time_t now, struct json_object **ret, bool *ret_changed,
	    struct kc_status *st) _must_check_;

/*
 * sched_podgroup_status_of() for each of 'pgs' in one pass over the
 * snapshot's pods: ret[i] (a new status, or NULL when pgs[i] is invalid)
 * and ret_changed[i] for each. 0, or -ENOMEM with every ret[i] NULL.
 */
int	 sched_podgroup_statuses_of(const struct sched *,
	    struct json_object *const *pgs, size_t npg, time_t now,
	    struct json_object **ret, bool *ret_changed) _must_check_;

/*
 * The member pods of each of 'pgs' bound to a node (spec.nodeName set),
 * from the snapshot, in one pass: ret_bound[i]. 0 or -ENOMEM.
 */
int	 sched_podgroups_bound(const struct sched *, struct json_object *const *pgs,
	    size_t npg, int64_t *ret_bound) _must_check_;

#endif

/*
 * apps.h: apps/v1 Deployments and ReplicaSets (their registry strategy
 * and the scale subresource) and the simulated deployment and replicaset
 * controllers of kube-controller-manager. See apps.c.
 */
#ifndef DEVCLUSTER_APPS_H
#define DEVCLUSTER_APPS_H

#include <stdint.h>

#include "devcluster.h"

extern const struct dc_plugin apps_plugin;

#define APPS_ANN_REVISION	"deployment.kubernetes.io/revision"
#define APPS_ANN_REV_HISTORY	"deployment.kubernetes.io/revision-history"
#define APPS_ANN_DESIRED	"deployment.kubernetes.io/desired-replicas"
#define APPS_ANN_MAX		"deployment.kubernetes.io/max-replicas"
#define APPS_LABEL_HASH		"pod-template-hash"
#define APPS_HASH_MAX		16	/* a rendered pod-template-hash, with NUL */

/* The hooks of apps/v1 Deployment and ReplicaSet (apps_plugin's types). */
extern const struct dc_type_ops ops_deployment;
extern const struct dc_type_ops ops_replicaset;

int	 apps_init(struct dc *) _must_check_;
void	 apps_fini(struct dc *);
/* Runs both controllers over every namespace now (tests). -EINVAL without init. */
int	 apps_sync(struct dc *) _must_check_;

/*
 * The pure parts, as upstream's pkg/controller/deployment/util computes
 * them.
 *
 * apps_template_hash: controller.ComputeHash(template, collisionCount):
 * FNV-32a over the template, then the collision count as 8 little-endian
 * bytes (when 'collision' >= 0), the sum printed in decimal and encoded
 * with rand.SafeEncodeString. Upstream hashes Go's spew dump of the
 * typed struct, which a JSON server cannot reproduce; here the input is
 * the template's JSON with object keys in sorted order, so equal
 * templates hash equal and any change gives another name. 0 or -ENOMEM.
 */
int	 apps_template_hash(const struct json_object *template, int64_t collision,
	    char buf[APPS_HASH_MAX]) _must_check_;

/*
 * intstr.GetScaledValueFromIntOrPercent: an integer as is, "N%" of
 * 'total' rounded up or down. -EINVAL for anything else.
 */
int	 apps_scaled(const struct json_object *v, int64_t total, bool round_up,
	    int64_t *ret) _must_check_;

/*
 * deploymentutil.ResolveFenceposts: maxSurge (rounded up) and
 * maxUnavailable (rounded down) of 'replicas'; both 0 makes
 * maxUnavailable 1. Absent values are 25%. -EINVAL as apps_scaled().
 */
int	 apps_fenceposts(const struct json_object *max_surge,
	    const struct json_object *max_unavailable, int64_t replicas,
	    int64_t *ret_surge, int64_t *ret_unavailable) _must_check_;

/* One ReplicaSet as the rolling update sees it; old ones oldest first. */
struct apps_rs {
	int64_t	 spec;		/* spec.replicas; the plan rewrites it */
	int64_t	 available;	/* status.availableReplicas */
};

/*
 * One step of a rolling update (rolling.go: reconcileNewReplicaSet, then
 * reconcileOldReplicaSets with cleanupUnhealthyReplicas and
 * scaleDownOldReplicaSetsForRollingUpdate), on 'rs[0]' the new
 * ReplicaSet (spec -1 when it does not exist yet: its replicas are then
 * computed as for a creation) and 'rs[1..n-1]' the old ones, oldest
 * first. Rewrites each spec to what the controller writes. Upstream
 * stops after a scale-up of the new ReplicaSet and looks again; so does
 * this: the old ones are only considered when the new one did not grow.
 */
void	 apps_rolling_plan(struct apps_rs *rs, size_t n, int64_t replicas, int64_t surge,
	    int64_t unavailable);

/* One ReplicaSet as a scaling event sees it. */
struct apps_scale_rs {
	int64_t	 spec;		/* spec.replicas; the plan rewrites it */
	int64_t	 available;	/* status.availableReplicas */
	int64_t	 desired;	/* desired-replicas annotation; -1: none */
	int64_t	 max_before;	/* max-replicas annotation; 0: none */
	uint64_t order;		/* creation order: larger is newer */
	bool	 is_new;	/* the new ReplicaSet (at most one) */
};

/*
 * A scaling event (sync.go, scale()): the one active ReplicaSet (or, with
 * none, the new one or else the newest) takes 'replicas'; a saturated new
 * ReplicaSet leaves the old ones at 0; otherwise, for a RollingUpdate, the
 * replicas to add or remove (up to replicas + surge in all) are spread in
 * proportion to each active ReplicaSet's size (GetProportion: its share of
 * the max-replicas it was sized for, 'status_replicas' when unannotated),
 * the leftovers to the largest. Rewrites each spec.
 */
void	 apps_scale_plan(struct apps_scale_rs *rs, size_t n, int64_t replicas, int64_t surge,
	    int64_t status_replicas, bool rolling);

#endif

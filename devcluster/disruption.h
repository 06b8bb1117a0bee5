/*
 * disruption.h: the disruption plug-in, PodDisruptionBudgets and pods/eviction.
 * What other files need from disruption.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_DISRUPTION_H
#define DEVCLUSTER_DISRUPTION_H

#include "devcluster.h"

extern const struct dc_plugin disruption_plugin;

#define DISRUPTION_TIMEOUT_S	120	/* disruptedPods entries expire (DeletionTimeout) */
#define DISRUPTED_PODS_MAX	2000	/* MaxDisruptedPodSize */

/* The hooks of policy/v1 PodDisruptionBudget (disruption_plugin's types). */
extern const struct dc_type_ops ops_pdb;
/*
 * Starts the disruption controller (a storage subscription and a loop
 * timer keep every PodDisruptionBudget's status current); while it runs,
 * disruption_plugin serves pods/eviction. 0 or -ENOMEM. State in
 * plugin_state(dc, &disruption_plugin); disruption_fini() stops it
 * (harmless when not started).
 */
int	 disruption_init(struct dc *) _must_check_;
void	 disruption_fini(struct dc *);
/* Recomputes and writes every budget's status now (tests). -EINVAL without init. */
int	 disruption_sync(struct dc *) _must_check_;
/*
 * The status the controller writes for 'pdb' (a stored object) given
 * every pod of its namespace: a new object in '*ret'. '*ret_recheck' is
 * when the earliest kept disruptedPods entry expires (0: none). A
 * selector or percentage that cannot be used gives upstream's failSafe
 * status (DisruptionAllowed False, reason SyncFailed). 0 or -ENOMEM.
 */
int	 disruption_status(const struct json_object *pdb, struct json_object *const *pods,
	    size_t npods, time_t now, struct json_object **ret, time_t *ret_recheck)
	    _must_check_;

#endif

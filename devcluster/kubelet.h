/*
 * kubelet.h: the kubelet plug-in, the simulated kubelets.
 * What other files need from kubelet.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_KUBELET_H
#define DEVCLUSTER_KUBELET_H

#include "devcluster.h"

extern const struct dc_plugin kubelet_plugin;

#define KUBELET_START_DELAY_MS	1000	/* --pod-start-delay default */

struct kubelet_opts {
	uint64_t	 start_delay_ms;	/* bound -> containers running */
	bool		 no_events;		/* --no-kubelet-events */
};

/*
 * Starts the simulated kubelets (one per Node, all on one loop timer,
 * fed by a storage subscription): pod phases, container statuses, pod
 * IPs from spec.podCIDR, conditions, kubelet Events, the
 * devcluster.trainyard.dev/ annotations that drive containers, graceful
 * deletion (hooks.graceful_delete) and pods/log (hooks.pod_log). Resumes
 * the stored pods. 'opts' NULL: a 1 s start delay with Events. 0 or
 * -ENOMEM. State in plugin_state(dc, &kubelet_plugin); kubelet_fini() stops it (harmless when
 * not started).
 */
int	 kubelet_init(struct dc *, const struct kubelet_opts *opts) _must_check_;
void	 kubelet_fini(struct dc *);
/* Pods the kubelets track (tests, diagnostics). */
size_t	 kubelet_pods(const struct dc *);

#endif

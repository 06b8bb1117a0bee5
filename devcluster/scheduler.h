/*
 * scheduler.h: the scheduler plug-in, the simulated kube-scheduler.
 * What other files need from scheduler.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_SCHEDULER_H
#define DEVCLUSTER_SCHEDULER_H

#include "devcluster.h"

extern const struct dc_plugin scheduler_plugin;

/*
 * Starts the simulated kube-scheduler (sched.c's decisions on a loop
 * timer, fed by a storage subscription); state in plugin_state(dc, &scheduler_plugin).
 * 'cosched_name' is the Coscheduling profile's schedulerName (NULL:
 * scheduler-plugins-scheduler). 0 or -ENOMEM. scheduler_fini() stops it
 * (harmless when not started).
 */
int	 scheduler_init(struct dc *, const char *cosched_name) _must_check_;
void	 scheduler_fini(struct dc *);
/*
 * --nodes FILE: creates the Node objects of a YAML file (documents or a
 * v1 List) that do not exist yet, with the status the file gives. 0, or a
 * code with the message in 'st'.
 */
int	 scheduler_load_nodes(struct dc *, const char *path, struct kc_status *st)
	    _must_check_;

#endif

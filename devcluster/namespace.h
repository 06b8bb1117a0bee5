/*
 * namespace.h: the namespace plug-in, the namespace controller.
 * What other files need from namespace.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_NAMESPACE_H
#define DEVCLUSTER_NAMESPACE_H

#include "devcluster.h"

extern const struct dc_plugin namespace_plugin;

/*
 * Starts the namespace controller: installs hooks.namespace_terminate,
 * subscribes to storage and takes over every terminating namespace
 * (also those restored at start). 0 or -ENOMEM. State in plugin_state(dc, &namespace_plugin).
 */
int	 namespace_init(struct dc *) _must_check_;
void	 namespace_fini(struct dc *);
/*
 * One pass over namespace 'ns': deletes its content, writes the
 * deletion conditions, finalizes and removes it once empty. 1 while
 * content remains, 0 when done (or not terminating), or a negative code.
 */
int	 namespace_sync(struct dc *, const char *ns);
/*
 * The status.conditions array (a new reference in '*ret') the
 * controller writes for a pass that left 'counts[i]' objects of
 * 'remaining[i]' ("pods.", "runs.trainyard.dev"), 'fin_counts[i]' objects
 * holding finalizer 'fins[i]' and the delete errors 'errs'; times are
 * the epoch. For tests of the messages. 0 or -ENOMEM.
 */
int	 namespace_conditions(const char *const *remaining, const size_t *counts, size_t n,
	    const char *const *fins, const size_t *fin_counts, size_t nfins,
	    const char *const *errs, size_t nerrs, struct json_object **ret) _must_check_;

#endif

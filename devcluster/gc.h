/*
 * gc.h: the gc plug-in, the garbage collector.
 * What other files need from gc.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_GC_H
#define DEVCLUSTER_GC_H

#include "devcluster.h"

extern const struct dc_plugin gc_plugin;

/*
 * Starts the garbage collector: indexes the dependents of every stored
 * object by owner uid, subscribes to storage, installs
 * hooks.gc_finalizer (so Foreground and Orphan deletions get their
 * finalizers) and works from a loop timer: Background, Foreground
 * (blockOwnerDeletion) and Orphan propagation, and dependents of owners
 * that do not exist. 0 or -ENOMEM. State in plugin_state(dc, &gc_plugin).
 */
int	 gc_init(struct dc *) _must_check_;
/* Stops and frees it (before api_free()). Harmless when not started. */
void	 gc_fini(struct dc *);
/* Objects queued for a look (tests and diagnostics). */
size_t	 gc_pending(const struct dc *);
/* Dependents indexed under an owner uid (tests and diagnostics). */
size_t	 gc_dependents(const struct dc *, const char *owner_uid);

#endif

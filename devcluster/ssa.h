/*
 * ssa.h: the ssa plug-in, server-side apply and managedFields.
 * What other files need from ssa.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_SSA_H
#define DEVCLUSTER_SSA_H

#include "devcluster.h"

extern const struct dc_plugin ssa_plugin;

/*
 * Installs hooks.apply (server-side apply through fieldmanager_apply():
 * merge, ownership conflicts, force) and hooks.managed_fields (the Update
 * entry of every other write, fieldmanager_update()), with one cache of
 * decoded FieldsV1 sets for both (struct fm_cache). 0 or -ENOMEM.
 */
int	 ssa_init(struct dc *) _must_check_;
/* Frees the cache and removes the hooks; api_free() calls it. */
void	 ssa_fini(struct dc *);

#endif

/*
 * authz.h: the authz plug-in, RBAC authorization and access reviews.
 * What other files need from authz.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_AUTHZ_H
#define DEVCLUSTER_AUTHZ_H

#include "devcluster.h"

extern const struct dc_plugin authz_plugin;

/*
 * RBAC authorization (rbac.c underneath): indexes the stored Roles,
 * ClusterRoles and bindings (a scan, then a storage subscriber), creates
 * the bootstrap policy that is missing (unless opts.no_bootstrap), runs
 * ClusterRole aggregation and writes the results back through storage,
 * installs hooks.authorize, and registers the create-only review types
 * (authorization.k8s.io/v1 selfsubjectaccessreviews, subjectaccess-
 * reviews, localsubjectaccessreviews, selfsubjectrulesreviews;
 * authentication.k8s.io/v1 selfsubjectreviews), answered with 201 and
 * never stored. 0 or -ENOMEM. State in plugin_state(dc, &authz_plugin).
 */
int	 authz_init(struct dc *) _must_check_;
/* Uninstalls the hook and frees the state. Harmless when not initialised. */
void	 authz_fini(struct dc *);
/* Objects of an RBAC kind ("ClusterRole"...) in the index (tests). */
size_t	 authz_count(const struct dc *, const char *kind);

#endif

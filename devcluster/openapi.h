/*
 * openapi.h: the openapi plug-in, the OpenAPI documents and protobuf request bodies.
 * What other files need from openapi.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_OPENAPI_H
#define DEVCLUSTER_OPENAPI_H

#include "devcluster.h"

extern const struct dc_plugin openapi_plugin;

#define OPENAPI_HASH_MAX	17	/* a document's hash, with the NUL */

/*
 * Serves /openapi/v3 (the root and one document per served group
 * version), /openapi/v2 (protobuf or JSON) and /swagger-2.0.0.pb-v1
 * through hooks.openapi, and decodes protobuf request bodies through
 * hooks.decode_protobuf. Documents are rebuilt after the registry
 * generation changes or a CRD is written. 0 or -ENOMEM. State in
 * plugin_state(dc, &openapi_plugin); api_free() calls openapi_fini().
 */
int	 openapi_init(struct dc *) _must_check_;
/* Uninstalls the hooks and frees the state. Harmless when not initialised. */
void	 openapi_fini(struct dc *);
/*
 * The current content hash of group version 'gv' ("api/v1",
 * "apis/<g>/<v>"), as its serverRelativeURL carries it: 0,
 * KC_ENOTFOUND for a group version not served, -EINVAL without
 * openapi_init(), -ENOMEM.
 */
int	 openapi_hash(struct dc *, const char *gv, char buf[OPENAPI_HASH_MAX])
	    _must_check_;

#endif

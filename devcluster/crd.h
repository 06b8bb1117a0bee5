/*
 * crd.h: the crd plug-in, custom resources from CustomResourceDefinitions.
 * What other files need from crd.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_CRD_H
#define DEVCLUSTER_CRD_H

#include "devcluster.h"

extern const struct dc_plugin crd_plugin;

struct fm_schema;
struct table_conv;

/*
 * Serves CustomResourceDefinitions: installs the CRD type's hooks
 * (schema defaults and validation, the naming and establishing
 * controllers, the cleanup finalizer), subscribes to CRD changes, and
 * registers the custom resource types of every CRD already stored (and
 * again from a loop timer when the loop starts, so CRDs restored after
 * this call are served too). 0 or -ENOMEM. State in plugin_state(dc, &crd_plugin).
 */
int	 crd_init(struct dc *) _must_check_;
/*
 * Removes the custom resource types, uninstalls the hooks and frees the
 * state; api_free() calls it. Harmless when not initialised.
 */
void	 crd_fini(struct dc *);
/*
 * Registers, updates or removes the custom resource types of every
 * stored CRD (after storage_restore()); also resumes the cleanup of
 * CRDs being deleted. 0 or -ENOMEM.
 */
int	 crd_sync_all(struct dc *) _must_check_;
/* Whether 'rt' is a custom resource type served for a CRD by crd.c. */
bool	 crd_owns(const struct dc_rtype *);
/* The openAPIV3Schema of a custom resource type's version (borrowed), or NULL. */
const struct json_object *crd_schema(const struct dc_rtype *);
/* The stored CustomResourceDefinition behind a custom resource type, or NULL. */
const struct json_object *crd_object(const struct dc_rtype *);
/*
 * The Table converter of a custom resource type's version (Name, then
 * additionalPrinterColumns, or Name and Age), or NULL; valid until the
 * CRD changes.
 */
const struct table_conv *crd_table_conv(const struct dc_rtype *);
/*
 * Server-side apply shapes of a custom resource type (list types and
 * map keys, map types, from its schema) for fieldmanager_apply() and
 * fieldmanager_update(): 0 with '*ret' filled, or -ENOENT for a type
 * that is not a custom resource (use the strategic merge schema). The
 * lookup stays valid until the CRD changes.
 */
int	 crd_fm_schema(const struct dc_rtype *, struct fm_schema *ret) _must_check_;
/*
 * 'obj', a custom resource of the CRD behind 'rt' (its apiVersion set),
 * at apiVersion 'av' of the same CRD, for server-side apply's entries
 * recorded at other versions: 0 with a new reference in '*ret' and the
 * shapes of that version in '*ret_schema' (valid until the CRD
 * changes). A version not in spec.versions is KC_EINTERNAL "request to
 * convert CR to an invalid group/version: <av>", as kube-apiserver
 * answers; strategy None only sets apiVersion; strategy Webhook asks
 * hooks.convert (-EINPROGRESS as it does, KC_EINTERNAL with its
 * message in 'st', taken from dc->conv_error). -ENOMEM.
 */
int	 crd_convert_to(const struct dc_rtype *, const struct json_object *obj, const char *av,
	    struct json_object **ret, struct fm_schema *ret_schema, struct kc_status *st)
	    _must_check_;

#endif

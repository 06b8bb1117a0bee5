/*
 * migrate.h: "trainyard-controller migrate", the storage migration of the
 * trainyard.dev custom resources (migrate.c).
 */
#ifndef TY_MIGRATE_H
#define TY_MIGRATE_H

#include <stddef.h>

#include <json-c/json.h>

#include <kc/macro.h>

/*
 * Runs the command: argv[0] is "migrate", the rest its flags. Returns the
 * process's exit status: 0 when every object was rewritten (or, with
 * --dry-run, could be), 1 when any failed, 2 for bad usage or setup.
 */
int	migrate_main(int argc, char **argv);

/*
 * The storage version of a CustomResourceDefinition ("v1beta1": the
 * version with storage true) into 'buf', or -ENOENT when it has none (or
 * more than one: a CRD the API server would refuse). Pure.
 */
int	migrate_storage_version(const struct json_object *crd, char *buf, size_t size)
	    _must_check_;

/*
 * Removes from obj's metadata.managedFields every entry whose apiVersion
 * is not 'api_version' ("trainyard.dev/v1beta1"): server-side apply fails
 * on entries of a version no longer served. When none would be left, the
 * list becomes [{}], which the API server takes as "clear them" (an empty
 * list leaves them as they are). Returns the number removed (0: 'obj'
 * untouched), or -ENOMEM. Pure.
 */
int	migrate_filter_managed_fields(struct json_object *obj, const char *api_version)
	    _must_check_;

#endif

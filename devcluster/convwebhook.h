/*
 * convwebhook.h: the conversion webhook caller (convwebhook.c), a
 * plug-in that gives the core hooks.convert.
 */
#ifndef DEVCLUSTER_CONVWEBHOOK_H
#define DEVCLUSTER_CONVWEBHOOK_H

#include <stddef.h>

#include <json-c/json.h>

#include "devcluster.h"

#define CONVWEBHOOK_TIMEOUT_MS	30000		/* the call's deadline, as upstream */
#define CONVWEBHOOK_RESP_MAX	(64u << 20)	/* a ConversionReview answer */
#define CONVWEBHOOK_CACHE_MAX	65536		/* conversions kept ... */
#define CONVWEBHOOK_FRESH_MS	5000		/* ... this long */

extern const struct dc_plugin convwebhook_plugin;

/*
 * The ConversionReview kube-apiserver sends ('review_version' "v1" or
 * "v1beta1"): request {uid, desiredAPIVersion, objects}, an empty
 * response. A new tree in '*ret'; 0 or -ENOMEM.
 */
int	convwebhook_review(const char *review_version, const char *uid, const char *desired,
	    const struct json_object *const *objs, size_t n, struct json_object **ret)
	    _must_check_;

/*
 * The first of a CRD's conversionReviewVersions the devcluster speaks
 * ("v1", "v1beta1"), or NULL.
 */
const char *convwebhook_review_version(const struct json_object *crd);

/*
 * Checks the answer 'body' to a review as kube-apiserver does and
 * builds the converted objects: kind and apiVersion of the review, uid,
 * result, count, then each object's apiVersion ('desired'), kind, name,
 * namespace and uid against objs[i]; metadata restored from objs[i]
 * except labels and annotations, which come from the answer. On
 * success, 0 and a new array of n new trees in '*ret' (free with
 * objs_free()). KC_EINTERNAL with kube-apiserver's message
 * (its "conversion webhook for <gvk> ..." form) in 'err'; -ENOMEM.
 */
int	convwebhook_check(const char *review_version, const char *uid, const char *desired,
	    const char *body, size_t len, const struct json_object *const *objs, size_t n,
	    struct json_object ***ret, char *err, size_t err_size) _must_check_;

#endif

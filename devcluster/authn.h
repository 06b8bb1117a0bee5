/*
 * authn.h: authentication.k8s.io/v1 TokenReview. See authn.c.
 */
#ifndef DEVCLUSTER_AUTHN_H
#define DEVCLUSTER_AUTHN_H

#include "devcluster.h"

extern const struct dc_plugin authn_plugin;

/* Registers the tokenreviews type; 0 or -ENOMEM. A second call is harmless. */
int	 authn_init(struct dc *) _must_check_;
void	 authn_fini(struct dc *);

/*
 * The status of a TokenReview of 'token' for 'audiences' (spec.audiences,
 * NULL or empty: the API audience), as a new object: authenticated, user
 * and audiences, or authenticated false with error. 0 or -ENOMEM.
 */
int	 authn_review_status(struct dc *, const char *token,
	    const struct json_object *audiences, struct json_object **ret) _must_check_;

#endif

/*
 * convert_standin.h: a small Run converter with ty_convert()'s signature,
 * for the review and webhook suites, which test the handler and the
 * server, not the conversion (tests/unit/test_ctl_convert.c does that).
 * It moves the fields the v1alpha1 and v1beta1 Run differ in and fails,
 * as ty_convert() does, for an unknown apiVersion or kind and for a spec
 * that is not an object.
 */
#ifndef TY_CONVERT_STANDIN_H
#define TY_CONVERT_STANDIN_H

#include <json-c/json.h>

#include <kc/err.h>

int	standin_convert(const struct json_object *obj, const char *to,
	    struct json_object **ret, struct kc_status *st);

/* Counts calls; the webhook suite checks every object went through. */
extern unsigned standin_calls;

#endif

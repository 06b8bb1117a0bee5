/*
 * convert.h: conversion of Runs and ResourceProfiles between the served
 * versions of trainyard.dev (convert.c).
 *
 * One pure function, shared by the conversion webhook, the controller
 * (which parses Runs of either version) and the tests: json-c in, a new
 * json-c tree out, no clock, no randomness, no I/O. docs/api.md has the
 * mapping table.
 */
#ifndef TY_CONVERT_H
#define TY_CONVERT_H

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/macro.h>

#define TY_V1ALPHA1		"trainyard.dev/v1alpha1"
#define TY_V1BETA1		"trainyard.dev/v1beta1"

/*
 * The annotation that carries a Run's v1beta1-only fields through
 * v1alpha1: compact JSON of exactly those fields, in the shape of the
 * object ({"spec":{"network":{...}}}). Up-conversion reads and removes it;
 * a value longer than TY_CONVERT_ANNOTATION_MAX bytes (the API server's
 * limit on all annotations together), or one that is not a JSON object,
 * is removed unread.
 */
#define TY_CONVERT_ANNOTATION		"conversion.trainyard.dev/v1beta1-only"
#define TY_CONVERT_ANNOTATION_MAX	(256 * 1024)

/*
 * Converts a Run or ResourceProfile (a whole object, as JSON) to 'to'
 * ("trainyard.dev/v1alpha1" or "trainyard.dev/v1beta1"); a new object in
 * '*ret'. Never validates nor defaults, never fails for data reasons:
 * KC_EINVALID only for an unknown apiVersion or kind or a malformed
 * object (not an object, spec not an object, ...), with st->message naming
 * the field, e.g. "spec.container: must be an object". -ENOMEM.
 */
int ty_convert(const struct json_object *obj, const char *to,
    struct json_object **ret, struct kc_status *st) _must_check_;

#endif

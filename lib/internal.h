/*
 * lib/internal.h: kc__ prototypes shared between libkc's files, grouped by
 * the file that defines them. Not installed; only lib/ and the unit tests
 * include it.
 */
#ifndef KC_INTERNAL_H
#define KC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/macro.h>

/* watch.c */

/* client.c */

/* transport.c */

/* yaml.c */

/* kubeconfig.c */

#endif

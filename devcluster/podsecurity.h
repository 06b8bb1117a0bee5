/*
 * podsecurity.h: the podsecurity plug-in, kube-apiserver's PodSecurity
 * admission (the Pod Security Standards of <kc/podsecurity.h> enforced,
 * audited and warned about by namespace labels). What other files need
 * from podsecurity.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_PODSECURITY_H
#define DEVCLUSTER_PODSECURITY_H

#include "devcluster.h"

extern const struct dc_plugin podsecurity_plugin;

#endif

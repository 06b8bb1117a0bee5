/*
 * limitranger.h: the limitranger plug-in, kube-apiserver's LimitRanger
 * admission (defaults and limits of pods and claims from the LimitRanges
 * of their namespace) and the LimitRange type's defaults. What other
 * files need from limitranger.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_LIMITRANGER_H
#define DEVCLUSTER_LIMITRANGER_H

#include "devcluster.h"

extern const struct dc_plugin limitranger_plugin;

#endif

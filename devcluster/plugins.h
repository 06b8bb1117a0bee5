/*
 * plugins.h: the plug-ins' options and headers, for main.c, plugins.c
 * and tests. The core (devcluster.h) never includes it.
 */
#ifndef DEVCLUSTER_PLUGINS_H
#define DEVCLUSTER_PLUGINS_H

#include "devcluster.h"

#include "admwebhook.h"
#include "apps.h"
#include "authn.h"
#include "authz.h"
#include "convwebhook.h"
#include "crd.h"
#include "disruption.h"
#include "exec.h"
#include "faults.h"
#include "gc.h"
#include "kubelet.h"
#include "limitranger.h"
#include "namespace.h"
#include "nodes.h"
#include "openapi.h"
#include "persist.h"
#include "podsecurity.h"
#include "quota.h"
#include "scheduler.h"
#include "ssa.h"
#include "tokens.h"

/*
 * What the plug-ins take at start (struct dc_plugin.init), filled by
 * main.c from its flags. Each member means what its plug-in's header
 * says (nodes.h: a negative toleration takes the default); a NULL config
 * takes every default.
 */
struct dc_config {
	const char		*nodes_file;	/* scheduler.c: --nodes FILE */
	const char		*cosched_name;	/* scheduler.c: Coscheduling's schedulerName */
	struct nodes_opts	 nodes;		/* nodes.c */
	struct kubelet_opts	 kubelet;	/* kubelet.c */
	struct tokens_opts	 tokens;	/* tokens.c */
};

#endif

/*
 * plugins.c: the one ordered table of the devcluster's plug-ins.
 *
 * Every plug-in describes itself in its own file with a const struct
 * dc_plugin (devcluster.h): its name, init and fini, the paths and
 * subresources it serves, its request filter, its admission, and the
 * type hooks it gives built-in types. This table is the only place that lists them, and its order is
 * the only order there is:
 *
 *	start	in table order (api_plugins_start(), from main.c)
 *	stop	in reverse table order (api_free())
 *	admit	in table order, on every create, update and delete that
 *		passed validation, each with the object the one before
 *		left (the write pipeline in write.c)
 *
 * The admission chain, in kube-apiserver's recommended order
 * (pkg/kubeapiserver/options/plugins.go, AllOrderedPlugins):
 *
 *	NamespaceLifecycle	the core write pipeline (write.c), on
 *				create, before the table: 404 in a missing
 *				namespace, 403 in a terminating one
 *	(RBAC escalation)	authz.c: creates and updates of the four
 *				RBAC kinds need what they grant, or the
 *				escalate or bind verb (upstream does this in
 *				their storage, before validation)
 *	LimitRanger		limitranger.c: containers' default limits
 *				and requests from the namespace's
 *				LimitRanges (mutating), then their min, max
 *				and ratios (403)
 *	Priority		scheduler.c: spec.priority from the
 *				PriorityClass (mutating; 403 without one)
 *	DefaultTolerationSeconds nodes.c: the not-ready and unreachable
 *				NoExecute tolerations (mutating)
 *	MutatingAdmissionWebhook admwebhook.c: the mutating webhooks, one
 *				after the other (JSON patches), then the
 *				type's defaults and validation again
 *	ValidatingAdmissionWebhook admwebhook.c, the same step: the
 *				validating webhooks, all at once
 *	PodSecurity		podsecurity.c: the Pod Security Standards a
 *				namespace's labels enforce (403), audit and
 *				warn about; after the webhooks' mutations,
 *				as upstream validates after every mutation
 *	ResourceQuota		quota.c: last, as upstream puts it after
 *				every mutating and validating plug-in
 *
 * A new plug-in is a new file with its struct dc_plugin, a header, one
 * line below and one in the Makefile's DC_SRCS. One with admission goes
 * where upstream's order puts it; one that validates goes before quota.
 */
#include "plugins.h"

const struct dc_plugin *const dc_plugins[] = {
	&persist_plugin,	/* restored in api_new(); stops last, after a flush */
	&openapi_plugin,	/* /openapi/v2, /openapi/v3, protobuf bodies */
	&ssa_plugin,		/* server-side apply, managedFields */
	&crd_plugin,		/* CustomResourceDefinitions; Tables of custom resources */
	&convwebhook_plugin,	/* conversion webhooks of custom resources (hooks.convert) */
	&gc_plugin,		/* garbage collector */
	&namespace_plugin,	/* namespace controller */
	&authz_plugin,		/* RBAC authorizer, access reviews, escalation checks */
	&faults_plugin,		/* /devcluster/faults, /devcluster/stats, injected faults */
	&limitranger_plugin,	/* admission: LimitRanger; LimitRange defaults */
	&scheduler_plugin,	/* admission: Priority; binds pods; --nodes */
	&nodes_plugin,		/* admission: DefaultTolerationSeconds; node controllers */
	&admwebhook_plugin,	/* admission: MutatingAdmissionWebhook, then
				   ValidatingAdmissionWebhook; webhook configurations */
	&podsecurity_plugin,	/* admission: PodSecurity (namespace labels) */
	&quota_plugin,		/* admission: ResourceQuota (last); quota status */
	&kubelet_plugin,	/* pods after binding, pods/log, graceful deletion */
	&disruption_plugin,	/* PodDisruptionBudgets; subresource pods/eviction */
	&apps_plugin,		/* Deployments, ReplicaSets: scale, their controllers */
	&tokens_plugin,		/* serviceaccounts/token, JWTs, OIDC discovery */
	&authn_plugin,		/* TokenReview */
	&exec_plugin,		/* pods/exec over WebSocket */
};

const size_t dc_nplugins = KC_ARRAY_SIZE(dc_plugins);

_Static_assert(KC_ARRAY_SIZE(dc_plugins) <= DC_PLUGINS_MAX,
    "DC_PLUGINS_MAX is smaller than the plug-in table");

/*
 * model.h: the Run API in C: validation of a Run (trainyard.dev/v1alpha1 or
 * v1beta1; a v1beta1 Run is checked in its v1alpha1 form, convert.h, and
 * its problems name the v1beta1 fields) and its ResourceProfile into a
 * struct ty_spec, and the desired objects of a session built from it.
 *
 * Pure code: json-c in, json-c out, no I/O, no threads, no logging. The
 * reconciler calls model_control() on every Run (it never fails), then
 * model_validate(); a valid Run gives a ty_spec, from which model_podgroup(),
 * model_service(), model_network_policy() and model_pod() build the
 * objects of a session. Every object carries the labels
 * app.kubernetes.io/managed-by=trainyard, trainyard.dev/run=<run> and
 * trainyard.dev/session=<n>, and a controller ownerReference to the Run
 * (blockOwnerDeletion), so deleting the Run deletes them.
 */
#ifndef TY_MODEL_H
#define TY_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/macro.h>

#include "config.h"

#define TY_GROUP		"trainyard.dev"
#define TY_API_VERSION		"trainyard.dev/v1alpha1"
#define TY_NODES_MAX		10000
#define TY_MASTER_PORT		29500
/* NetworkPolicy peers a Run may add (v1beta1 spec.network.ingressFrom). */
#define TY_INGRESS_FROM_MAX	16
/* TRAINYARD_HOSTS lists every hostname only up to this many nodes. */
#define TY_HOSTS_ENV_MAX_NODES	256

#define TY_LABEL_MANAGED_BY	"app.kubernetes.io/managed-by"
#define TY_MANAGER		"trainyard"
#define TY_LABEL_RUN		"trainyard.dev/run"
#define TY_LABEL_SESSION	"trainyard.dev/session"
#define TY_LABEL_INDEX		"trainyard.dev/node-index"
#define TY_LABEL_PREEMPTIBLE	"trainyard.dev/preemptible"
#define TY_ANN_GENERATION	"trainyard.dev/generation"
#define TY_PG_LABEL		"scheduling.x-k8s.io/pod-group"
#define TY_PG_LABEL_OLD		"pod-group.scheduling.sigs.k8s.io"

enum ty_restart_policy {
	TY_RESTART_NEVER,
	TY_RESTART_ON_PREEMPTION,
	TY_RESTART_ON_FAILURE,
};

/*
 * The lifecycle fields of a Run, read live on every reconcile (they do not
 * shape any object): model_control() fills them from whatever the Run
 * holds, using the defaults for missing or malformed values, so the
 * session logic can stop or end a session even when the rest of the spec
 * is invalid.
 */
struct ty_control {
	int64_t			 generation;	/* metadata.generation */
	int64_t			 session;	/* spec.session, default 1 */
	bool			 suspend;
	int64_t			 active_deadline_s;	/* 0: none */
	int64_t			 schedule_timeout_s;	/* 0: none */
	enum ty_restart_policy	 restart_policy;	/* default Never */
	int64_t			 max_restarts;		/* default 3 */
	bool			 v1beta1;	/* read at v1beta1: messages name its fields */
};

/*
 * A valid Run merged with its profile and the controller's config. Owned
 * by the caller (model_spec_free()); read-only afterwards, so one spec may
 * build the pods of a session from several threads.
 */
struct ty_spec {
	char			 ns[64], name[64], uid[128];
	int64_t			 generation;
	int32_t			 nodes;
	bool			 preemptible;
	int64_t			 schedule_timeout_s;	/* copied to the PodGroup */
	int32_t			 master_port;
	int64_t			 gpus_per_node;		/* sum of limits ".../gpu" */
	char			 priority_class[TY_SUBDOMAIN_MAX];	/* "": none */
	char			 profile[TY_SUBDOMAIN_MAX];		/* "": none */
	char			 zone_key[320];	/* profile's zoneTopologyKey or "" */
	struct json_object	*requests;	/* merged ResourceList, canonical */
	struct json_object	*limits;
	struct json_object	*ports;		/* the container's ports */
	struct json_object	*container;	/* "main", without env */
	struct json_object	*env;		/* profile's then the Run's EnvVars */
	struct json_object	*pod_spec;	/* scheduling and template settings */
	struct json_object	*labels;	/* template.metadata.labels */
	struct json_object	*annotations;	/* profile's, then the template's */
	struct json_object	*ingress_from;	/* spec.network.ingressFrom, or NULL */
	char			 api_version[32];	/* the Run's, for ownerReferences */
};

/* One validation problem: where (a field path) and what, in plain words. */
#define TY_PROBLEMS_MAX	16
struct ty_problem {
	char	field[128];	/* "spec.resources.limits[nvidia.com/gpu]" */
	char	message[768];
};

struct ty_problems {
	unsigned		n;	/* entries in p[] */
	unsigned		total;	/* found, including those not kept */
	/*
	 * 1 + the index in p[] of the problem listing what the Run's pods
	 * ask outside their profile's security envelope; 0: none.
	 */
	unsigned		envelope;
	struct ty_problem	p[TY_PROBLEMS_MAX];
};

/*
 * Adds a problem to 'p' (counted in 'total' even past TY_PROBLEMS_MAX).
 * The message is formatted as printf() does and cut to fit.
 */
void	model_problem(struct ty_problems *p, const char *field, const char *fmt, ...)
	    _printf_(3, 4);

/*
 * Reads the lifecycle fields of 'run' into *ret (see struct ty_control).
 * Never fails; 'run' is only read.
 */
void	model_control(const struct json_object *run, struct ty_control *ret);

/*
 * Validates 'run' (a Run object) with 'profile' (the ResourceProfile that
 * spec.profile names, or NULL when the Run names none or it does not
 * exist) and 'cfg'. A valid Run gives 0 and a new spec in *ret. An invalid
 * one gives KC_EINVALID, *ret untouched, and every problem found (up to
 * TY_PROBLEMS_MAX kept, 'total' counting all) in 'probs', each as a field
 * path and a message a researcher can act on. -ENOMEM on allocation
 * failure. Nothing is kept from the arguments.
 */
int	model_validate(const struct json_object *run, const struct json_object *profile,
	    const struct ty_config *cfg, struct ty_spec **ret, struct ty_problems *probs)
	    _must_check_;

/* Frees a spec (NULL is fine); returns NULL. */
struct ty_spec *model_spec_free(struct ty_spec *);
KC_DEFINE_CLEANUP(struct ty_spec, model_spec_free)

/*
 * The problems as one line for status.message and events: "spec.nodes:
 * ...; metadata.name: ... (and 3 more)", truncated to fit 'size' bytes.
 */
void	model_problems_text(const struct ty_problems *, char *buf, size_t size);

/*
 * The desired objects of session 'session' (>= 1) as new json-c trees in
 * *ret (0), or -ENOMEM. 'api' is the PodGroup API in use, already resolved
 * from discovery (TY_PODGROUP_X_K8S, TY_PODGROUP_SIGS_K8S or
 * TY_PODGROUP_NONE); model_podgroup() with NONE is -EINVAL. The names are
 * <run> for the PodGroup, Service and NetworkPolicy and <run>-<index> for
 * pods (index 0 .. nodes-1; others are -EINVAL).
 */
int	model_podgroup(const struct ty_spec *, int64_t session, enum ty_podgroup_api api,
	    struct json_object **ret) _must_check_;
int	model_service(const struct ty_spec *, int64_t session, struct json_object **ret)
	    _must_check_;
int	model_network_policy(const struct ty_spec *, const struct ty_config *cfg,
	    int64_t session, struct json_object **ret) _must_check_;
int	model_pod(const struct ty_spec *, const struct ty_config *cfg, int64_t session,
	    enum ty_podgroup_api api, int32_t index, struct json_object **ret) _must_check_;

/* The apiVersion of a PodGroup of 'api' ("scheduling.x-k8s.io/v1alpha1"). */
const char *model_podgroup_api_version(enum ty_podgroup_api api);

#endif

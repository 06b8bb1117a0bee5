/*
 * devcluster.h: the core of trainyard-devcluster, and its index.
 * Prototypes are grouped under the file that defines them. Each plug-in
 * has its own header (crd.h, quota.h, ...); plugins.h lists them.
 *
 * The devcluster is a single-process Kubernetes API server. One
 * libwebsockets event loop, in one thread, owns every structure declared
 * here; nothing is locked and no handler blocks. A request travels
 *
 *	http.c      bytes -> struct dc_req (method, path, query, headers, body)
 *	dispatch.c  authenticate (auth.c), plug-in filters and routes, route
 *	            (router.c), authorize (hooks.authorize), then a verb
 *	            handler, discovery.c or the OpenAPI hook
 *	write.c     the write pipeline (create, update, patch, delete) and
 *	            the same pipeline for the simulated controllers' writes
 *	registry.c  group/version/resource -> struct dc_rtype and its ops
 *	storage.c   every change: one resourceVersion counter, per-resource
 *	            event history, subscribers (watchhub.c first)
 *	watchhub.c  fans events out to watch streams, each serialized once
 *	reply.c     replies; errors.c metav1.Status bodies from KC_E* codes
 *	api.c       the instance, the plug-in lifecycle, object helpers
 *
 * Extension points:
 *
 *	struct dc_plugin	one per plug-in, in dc_plugins[] (plugins.c):
 *				init and fini, routes, request filters,
 *				admission (in table order), type hooks
 *	struct dc_type_ops	per resource type: defaults, validation,
 *				create/update preparation, strategic
 *				merge schema, field selectors, version
 *				conversion, deletion grace (Table columns
 *				come from table.c: the built-in printers,
 *				or a plug-in's for custom resources)
 *	registry_add()		new resource types (CRDs); bumps the
 *				registry generation so discovery rebuilds
 *	storage_subscribe()	every committed change, in order (garbage
 *				collection, persistence, controllers)
 *	struct dc_hooks		single providers: authorizer, OpenAPI,
 *				server-side apply, managedFields, protobuf
 *				decoding, pod logs and exec, bindings,
 *				namespace content, finalizers, graceful
 *				deletion, shutdown flush
 *	dc_timer_*()		loop timers (lws_sul underneath) that return
 *				their next delay
 */
#ifndef DEVCLUSTER_H
#define DEVCLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <time.h>

#include <json-c/json.h>

#include <kc/buf.h>
#include <kc/err.h>
#include <kc/macro.h>
#include <kc/patch.h>
#include <kc/str.h>
#include <kc/selector.h>

/* Limits. */
#define DC_BODY_MAX		(3u << 20)	/* request body, as kube-apiserver */
#define DC_RESP_MAX		(512u << 20)	/* one reply body */
#define DC_PARAMS_MAX		64		/* query parameters kept */
#define DC_RESP_HEADERS_MAX	8		/* extra reply headers */
#define DC_WARNING_MAX		4096		/* one Warning header value */
#define DC_SEGMENT_MAX		256		/* one path segment, with NUL */
#define DC_NAME_MAX		253		/* object names */
#define DC_ERRS_MAX		32		/* field errors in one reply */
#define DC_GROUPS_MAX		64		/* groups of one user */
#define DC_USER_EXTRA_MAX	8		/* user.Info extra keys of one user */
#define DC_AUDIENCES_MAX	16		/* audiences a credential is valid for */
#define DC_HISTORY_DEFAULT	10000		/* events kept per resource */
#define DC_HISTORY_FRESH_MS	75000		/* ... or as many as are younger */
#define DC_HISTORY_UPPER	102400		/* ... up to this many */
#define DC_BACKLOG_EVENTS	4096		/* queued events per watcher */
#define DC_BACKLOG_BYTES	(64u << 20)	/* queued bytes per watcher */
#define DC_SER_CACHE_EVENTS	16384		/* events keeping their watch text */
#define DC_BOOKMARK_MS		60000		/* bookmark period */
#define DC_TOKEN_FILE_MAX	(4u << 20)	/* --token-auth-file size */
#define DC_TIMER_STOP		(-1)		/* a timer callback's "no more" */
#define DC_UNCHANGED		1		/* a write that changed nothing */
#define DC_DECLINED		1		/* a hook that did not handle it */
#define DC_IMP_GROUPS_MAX	64		/* Impersonate-Group values of a request */
#define DC_PLUGINS_MAX		32		/* rows of the plug-in table */
#define DC_CONV_PASSES_MAX	16		/* passes of a request for conversions */

/* 's', or "" for NULL. */
static inline const char *
or_empty(const char *s)
{
	return s != NULL ? s : "";
}

struct dc;
struct dc_api;
struct dc_auth;
struct dc_coll;
struct dc_disc;
struct dc_http;
struct dc_hub;
struct dc_rtype;
struct dc_store;
struct dc_timer;
struct dc_watcher;

/*
 * Requests and replies (http.c fills a request, dispatch.c answers it)
 */

enum dc_method {
	DC_GET,
	DC_POST,
	DC_PUT,
	DC_PATCH,
	DC_DELETE,
	DC_HEAD,
	DC_OPTIONS,
	DC_METHOD_OTHER,
};

struct dc_param {
	char	*key;
	char	*value;
};

/* An authenticated identity. */
struct dc_user {
	char	*name;
	char	*uid;
	char	*groups[DC_GROUPS_MAX + 1];	/* NULL-terminated */
	size_t	 ngroups;
	/* user.Info extra, one value a key, as service-account tokens give it */
	char	*extra[DC_USER_EXTRA_MAX][2];	/* key, value */
	size_t	 nextra;
	/*
	 * The audiences the credential was accepted for, among those asked
	 * (service-account tokens); none: the API audience.
	 */
	char	*audiences[DC_AUDIENCES_MAX + 1];	/* NULL-terminated */
	size_t	 naudiences;
};

struct dc_req {
	enum dc_method	 method;
	char		*path;		/* percent-decoded, no query */
	struct dc_param	 params[DC_PARAMS_MAX];
	size_t		 nparams;
	char		*accept;
	char		*content_type;
	char		*authorization;
	char		*user_agent;
	char		*imp_user;	/* Impersonate-User */
	char		*imp_uid;	/* Impersonate-Uid */
	/*
	 * Each Impersonate-Group value http.c could read. libwebsockets
	 * (lws_hdr_custom_copy(), every version) returns the first of
	 * repeated unknown headers only, so a request from the network
	 * carries one here; the pipeline takes them all.
	 */
	char		*imp_groups[DC_IMP_GROUPS_MAX];
	size_t		 imp_ngroups;
	char		*body;		/* NUL-terminated, may be NULL */
	size_t		 body_len;
	uint64_t	 id;
	struct dc_user	 user;		/* set by dispatch.c after authentication */
	bool		 authenticated;
	/*
	 * Set by api_handle() when the answer waits for a conversion
	 * webhook: http.c holds the request (the plug-ins' hold_ms says
	 * how long) and hands it to api_handle() again, with its reply
	 * as api_handle() left it.
	 */
	bool		 redo;
	unsigned	 passes;	/* answers thrown away for a webhook */
	uint64_t	 conv_lo, conv_hi;	/* the webhook calls it waits for */
	uint64_t	 first_id;	/* 'id' of its first pass (admission webhooks) */
	/* What a create's first pass made, kept by the later passes. */
	char		 keep_uid[37];
	char		 keep_stamp[KC_TIME_MAX];
	char		 keep_name[DC_NAME_MAX + 1];
};

/*
 * A chunk of a streamed reply, shared between every watcher that sends
 * it: one serialization per event and format.
 */
struct dc_chunk {
	unsigned	 refs;
	size_t		 len;
	char		 data[];
};

/*
 * A streamed reply (a watch). http.c pulls chunks until the stream says
 * it ended, and calls release() once, when the reply is complete or the
 * connection went away; the stream frees itself there. The producer
 * calls wake() when a chunk becomes ready.
 */
struct dc_stream;

struct dc_stream_ops {
	/*
	 * The next chunk (a new reference) or NULL when none is ready;
	 * *ret_end is set once everything has been pulled.
	 */
	struct dc_chunk	*(*pull)(struct dc_stream *, bool *ret_end);
	void		 (*release)(struct dc_stream *);
};

struct dc_stream {
	const struct dc_stream_ops *ops;
	void		(*wake)(void *arg);	/* set by the consumer */
	void		*wake_arg;
};

struct resp_header {
	const char	*name;		/* static, "Warning" */
	char		*value;
};

struct dc_resp {
	int		 status;		/* HTTP code */
	const char	*content_type;		/* static string */
	struct kc_buf	 body;
	struct resp_header headers[DC_RESP_HEADERS_MAX];
	size_t		 nheaders;
	struct dc_stream *stream;		/* a streamed reply */
	/*
	 * A committed write whose reply waits for a conversion webhook:
	 * the stored object (a reference), its type and the status the
	 * reply will have. api_handle() finishes it when it comes again.
	 */
	struct json_object	*deferred;
	const struct dc_rtype	*deferred_rt;
	int			 deferred_status;
};

/*
 * Routes (router.c)
 */

enum dc_route_kind {
	DC_ROUTE_NONE,		/* 404 page not found */
	DC_ROUTE_HEALTH,	/* /healthz, /livez, /readyz and below */
	DC_ROUTE_VERSION,	/* /version */
	DC_ROUTE_API,		/* /api */
	DC_ROUTE_APIS,		/* /apis */
	DC_ROUTE_GROUP,		/* /apis/<g> */
	DC_ROUTE_GROUP_VERSION,	/* /api/v1, /apis/<g>/<v> */
	DC_ROUTE_RESOURCE,	/* a resource request */
	DC_ROUTE_OPENAPI,	/* /openapi/..., /swagger-2.0.0.pb-v1 */
};

struct dc_route {
	enum dc_route_kind kind;
	const char	*verb;		/* "get", "list", ..., or the method */
	bool		 watch_prefix;	/* the deprecated /watch/ form */
	char		 group[DC_SEGMENT_MAX];
	char		 version[DC_SEGMENT_MAX];
	char		 ns[DC_SEGMENT_MAX];
	char		 resource[DC_SEGMENT_MAX];
	char		 name[DC_SEGMENT_MAX];
	char		 subresource[DC_SEGMENT_MAX];
};

/*
 * Resource types (registry.c)
 */

enum {
	DC_VERB_CREATE		= 1 << 0,
	DC_VERB_DELETE		= 1 << 1,
	DC_VERB_DELETECOLLECTION = 1 << 2,
	DC_VERB_GET		= 1 << 3,
	DC_VERB_LIST		= 1 << 4,
	DC_VERB_PATCH		= 1 << 5,
	DC_VERB_UPDATE		= 1 << 6,
	DC_VERB_WATCH		= 1 << 7,
};
#define DC_VERBS_ALL	0xffu
#define DC_VERBS_RW	(DC_VERB_GET | DC_VERB_PATCH | DC_VERB_UPDATE)

/* Flags of a resource type. */
enum {
	DC_RT_STATUS		= 1 << 0,	/* status subresource semantics */
	DC_RT_CUSTOM		= 1 << 1,	/* a custom resource (CRD) */
	DC_RT_GENERATION	= 1 << 2,	/* tracks metadata.generation */
	DC_RT_CREATE_ON_UPDATE	= 1 << 3,	/* PUT may create */
	DC_RT_RETURN_DELETED	= 1 << 4,	/* DELETE answers the object */
	DC_RT_STORAGE		= 1 << 5,	/* the storage version */
	DC_RT_HIDDEN		= 1 << 6,	/* served, not in discovery */
};

/* Object-name rules (upstream's ValidateNameFunc of each kind). */
enum dc_name_rule {
	DC_NAME_SUBDOMAIN,	/* DNS-1123 subdomain: most kinds, CRs */
	DC_NAME_LABEL,		/* DNS-1123 label: namespaces */
	DC_NAME_DNS1035,	/* DNS-1035 label: services */
	DC_NAME_PATH,		/* path segment: RBAC kinds */
};

struct dc_subres {
	const char	*name;		/* "status", "log", "exec" */
	const char	*kind;		/* reply kind; NULL: the parent's */
	unsigned	 verbs;		/* DC_VERB_* */
	const char	*group;		/* the kind's group ("policy"); NULL: the parent's */
	const char	*version;	/* the kind's version ("v1"); with 'group' */
};

/* Field errors for a 422 Invalid (errors.c formats them). */
struct dc_ferr {
	const char	*type;		/* "Required", "Invalid", ... */
	char		 field[256];
	char		 body[768];	/* "Required value", "Invalid value: ..." */
};

struct dc_errs {
	size_t		 n;
	bool		 truncated;
	struct dc_ferr	 items[DC_ERRS_MAX];
};

enum dc_op {
	DC_OP_CREATE,
	DC_OP_UPDATE,
	DC_OP_DELETE,
};

/* What a type hook knows about the write it takes part in. */
struct dc_write_ctx {
	struct dc		*dc;
	const struct dc_rtype	*rt;
	const struct dc_req	*req;		/* NULL for internal writes */
	enum dc_op		 op;
	const char		*subresource;	/* "status" or NULL */
	const char		*field_manager;
	bool			 dry_run;
	const struct json_object *old;		/* stored object, or NULL */
	/*
	 * The reply. An admit hook whose answer does not fit a kc_status
	 * (upstream's RBAC escalation messages) writes its Status here, sets
	 * 'answered' and returns its code.
	 */
	struct dc_resp		*resp;
	bool			 answered;
	/* A delete's gracePeriodSeconds (-1: none) and propagationPolicy (or NULL). */
	int64_t			 delete_grace;
	const char		*delete_policy;
};

/*
 * Per-type hooks. Every member may be NULL. Hooks that return int give
 * 0 or a negative code (-ENOMEM); validation problems go into 'errs'.
 * Objects handed to hooks are private trees the hook may modify; 'old'
 * is the frozen stored object and is never modified.
 */
struct dc_type_ops {
	/* Fills defaulted fields (pod restartPolicy, service type...). */
	int	(*defaults)(struct dc_write_ctx *, struct json_object *obj);
	/* Server-set state on create (pod status, clusterIP, ns phase). */
	int	(*prepare_create)(struct dc_write_ctx *, struct json_object *obj);
	/* Keeps server-owned fields from the stored object on update. */
	int	(*prepare_update)(struct dc_write_ctx *, struct json_object *obj,
		    const struct json_object *old);
	/* Type validation, 'old' NULL on create. */
	int	(*validate)(struct dc_write_ctx *, const struct json_object *obj,
		    const struct json_object *old, struct dc_errs *errs);
	/* Field selectors beyond metadata.name and metadata.namespace. */
	const char *const *field_selectors;
	/* A selector field's value when it is not a plain JSON path. */
	const char *(*field_value)(const struct json_object *obj, const char *field,
		    char *buf, size_t size);
	/* Converts between the storage form and this version (new refs). */
	int	(*convert_out)(const struct dc_rtype *, const struct json_object *stored,
		    struct json_object **ret);
	int	(*convert_in)(const struct dc_rtype *, const struct json_object *obj,
		    struct json_object **ret);
	/*
	 * The grace period of a delete (pods); 'requested' is
	 * gracePeriodSeconds or -1. NULL: 0, deleted at once.
	 */
	int64_t	(*delete_grace)(struct dc_write_ctx *, const struct json_object *obj,
		    int64_t requested);
	/*
	 * Runs first for every request on the type, after authorization
	 * (custom resources: deprecation warnings, 405 while their CRD
	 * terminates). 0 to go on, 1 when it answered the request itself
	 * (the reply in 'resp' stands), or a negative code (500).
	 */
	int	(*request)(struct dc *, const struct dc_rtype *, const struct dc_req *,
		    const struct dc_route *, struct dc_resp *);
	/*
	 * The body of a create, update, patch or apply, in the URL's
	 * version (decoded, or the patched object), before conversion to
	 * storage: may prune and default it and add reply headers
	 * (fieldValidation). 0, or a negative code after writing the reply
	 * into 'resp' (400). 'wc->old' is NULL here.
	 */
	int	(*decoded)(struct dc_write_ctx *, struct json_object *obj,
		    struct dc_resp *resp);
	/*
	 * The first delete of an object that is not deleting yet, before
	 * its finalizers are looked at: may add finalizers and conditions
	 * to 'obj', a private copy of the stored object (CRDs add
	 * customresourcecleanup.apiextensions.k8s.io).
	 */
	int	(*prepare_delete)(struct dc_write_ctx *, struct json_object *obj);
};

struct dc_rtype_def {
	const char		*group;
	const char		*version;
	const char		*plural;
	const char		*singular;
	const char		*kind;
	const char		*list_kind;	/* NULL: kind + "List" */
	bool			 namespaced;
	unsigned		 verbs;
	unsigned		 flags;		/* DC_RT_* */
	enum dc_name_rule	 name_rule;
	const char *const	*short_names;	/* NULL-terminated, or NULL */
	const char *const	*categories;
	const struct dc_subres	*subres;
	size_t			 nsubres;
	const struct dc_type_ops *ops;
	const void		*ops_arg;	/* the hooks' own data */
	const struct kc_smp_schema *smp;	/* NULL: no strategic merge */
	int			 group_priority; /* discovery order; 0: 1000 */
	const char		*storage_group;	/* shares this storage ... */
	const char		*storage_resource; /* ... (events.k8s.io) */
};

struct dc_rtype {
	TAILQ_ENTRY(dc_rtype)	 link;
	char			*group;
	char			*version;
	char			*plural;
	char			*singular;
	char			*kind;
	char			*list_kind;
	char			*api_version;	/* "v1", "apps/v1" */
	char			*qualified;	/* "pods", "runs.trainyard.dev" */
	char			*qualified_kind; /* "Pod", "Run.trainyard.dev" */
	bool			 namespaced;
	unsigned		 verbs;
	unsigned		 flags;
	enum dc_name_rule	 name_rule;
	char			**short_names;	/* NULL-terminated */
	char			**categories;
	struct dc_subres	*subres;	/* names and kinds allocated */
	size_t			 nsubres;
	const struct dc_type_ops *ops;
	const void		*ops_arg;
	const struct kc_smp_schema *smp;
	int			 group_priority;
	struct dc_coll		*coll;
};

TAILQ_HEAD(dc_rtype_list, dc_rtype);

struct dc_registry {
	struct dc_rtype_list	 types;
	uint64_t		 generation;	/* bumped on every change */
};

/*
 * Storage (storage.c)
 */

enum dc_ev_type {
	DC_EV_ADDED,
	DC_EV_MODIFIED,
	DC_EV_DELETED,
};

struct dc_ser;

/*
 * One committed change. 'obj' is the new state (for DELETED, the last
 * state carrying the deletion's resourceVersion), 'prev' the state
 * before (NULL for ADDED). Both trees are frozen. Events are reference
 * counted: the history and each watcher's initial phase hold them.
 */
struct dc_event {
	unsigned		 refs;
	enum dc_ev_type		 type;
	uint64_t		 rv;
	uint64_t		 at_ms;		/* kc_clock_now_ms() at the commit */
	struct json_object	*obj;
	struct json_object	*prev;
	struct dc_coll		*coll;
	struct dc_ser		*sers;		/* watchhub.c's serializations */
};

TAILQ_HEAD(dc_watcher_list, dc_watcher);

/* Called for every committed change, in commit order. */
typedef void	dc_store_sub_fn(void *arg, const struct dc_event *ev);

/*
 * Timers (http.c)
 */

/*
 * Returns the next delay in milliseconds, or DC_TIMER_STOP. A callback
 * may arm and cancel timers, but must not free its own.
 */
typedef int64_t	dc_timer_fn(void *arg);

struct dc_timer {
	TAILQ_ENTRY(dc_timer)	 link;
	struct dc		*dc;
	dc_timer_fn		*fn;
	void			*arg;
	uint64_t		 due_ms;
	uint64_t		 round;		/* timers_run() pass that armed it */
	bool			 armed;
};

TAILQ_HEAD(dc_timer_list, dc_timer);

/*
 * Authorization attributes, the authorizer hook's input.
 */
struct dc_attrs {
	const struct dc_user	*user;
	const char		*verb;
	bool			 resource_request;
	const char		*group;
	const char		*version;
	const char		*resource;
	const char		*subresource;
	const char		*ns;
	const char		*name;
	const char		*path;		/* non-resource requests */
};

/*
 * Hooks other files install. Each may be NULL (the default behaviour
 * noted). A handler hook returns 0 after filling 'resp', DC_DECLINED to
 * fall back to the default, or a negative code (500).
 */
/* What an injected fault does to a conversion webhook call. */
enum dc_conv_wrong {
	DC_CONV_RIGHT,		/* the answer as the webhook gave it */
	DC_CONV_BAD_UID,	/* response.uid replaced */
	DC_CONV_WRONG_COUNT,	/* the last converted object dropped */
	DC_CONV_RENAME,		/* the first converted object renamed */
	DC_CONV_UNREACHABLE,	/* no call: the connection fails */
	DC_CONV_BAD_LABELS,	/* the first converted object gets an invalid label */
};

struct dc_conv_fault {
	enum dc_conv_wrong	 wrong;
	uint32_t		 delay_ms;	/* the answer is held this long */
};

struct dc_hooks {
	/* true to allow; NULL: allow everything (no RBAC yet). */
	bool	(*authorize)(struct dc *, const struct dc_attrs *, char *reason,
		    size_t size);
	/* /openapi/v2, /openapi/v3...; NULL: 404. */
	int	(*openapi)(struct dc *, const struct dc_req *, const struct dc_route *,
		    struct dc_resp *);
	/*
	 * application/apply-patch+yaml on 'rt'. 'cur' is the current object
	 * in rt's version, or NULL; 'applied' the parsed body (apiVersion,
	 * kind, name and namespace checked, fieldManager present). On
	 * success '*ret' is the object to write (a new tree in rt's
	 * version; it then goes through the update or create pipeline). On
	 * failure: KC_EINVALID with 'errs' (422), or another code with 'st'
	 * and, when the Status has details (conflict causes), a new
	 * metav1.StatusDetails object in '*ret_details' (write.c sends and
	 * releases it). NULL: a minimal apply (create, or merge the body).
	 */
	int	(*apply)(struct dc *, const struct dc_rtype *, const struct dc_req *,
		    const struct json_object *cur, const struct json_object *applied,
		    struct json_object **ret, struct dc_errs *errs, struct kc_status *st,
		    struct json_object **ret_details);
	/* Updates metadata.managedFields of 'obj' for a write; NULL: none. */
	int	(*managed_fields)(struct dc_write_ctx *, struct json_object *obj);
	/*
	 * Decodes a protobuf body into JSON for 'rt': 0, or KC_EBADREQUEST,
	 * KC_EMEDIATYPE, KC_ETOOLARGE with 'st'. NULL: 415.
	 */
	int	(*decode_protobuf)(struct dc *, const struct dc_rtype *, const char *body,
		    size_t len, struct json_object **ret, struct kc_status *st);
	/* pods/log of an existing pod; NULL or DC_DECLINED: builtin_pod_log(). */
	int	(*pod_log)(struct dc *, const struct dc_req *, const struct json_object *pod,
		    struct dc_resp *);
	/*
	 * Namespace termination, called from a loop timer for each
	 * namespace with a deletionTimestamp until it returns 0 (done; 1:
	 * again in 100 ms). NULL: api_namespace_terminate().
	 */
	int	(*ns_terminate)(struct dc *, const char *ns);
	/*
	 * Foreground/orphan deletion: called after the finalizer was added.
	 * NULL: propagationPolicy is treated as Background (no finalizer).
	 */
	int	(*finalizer_added)(struct dc *, const struct dc_rtype *,
		    const struct json_object *obj);
	/*
	 * An object got a graceful deletionTimestamp (a pod on a node): the
	 * kubelet finishes it. DC_DECLINED or NULL: write.c deletes it on a
	 * loop timer at once, as if its containers had stopped.
	 */
	int	(*graceful_delete)(struct dc *, const struct dc_rtype *,
		    const struct json_object *obj);
	/* Called before exit (persistence flushes). */
	void	(*shutdown)(struct dc *);
	/*
	 * Converts 'obj' (a stored object or a request's, its apiVersion
	 * set) of the CustomResourceDefinition 'crd', whose conversion
	 * strategy is Webhook, to 'api_version': 0 with a new tree in
	 * '*ret'; -EINPROGRESS when the webhook has been asked (the
	 * request is answered again once it replied: dc->conv_pending);
	 * KC_EINTERNAL when it failed (dc->conv_error holds kube-apiserver's
	 * message); -ENOMEM. NULL: KC_EINTERNAL. A call it asks for widens
	 * [dc->conv_lo, dc->conv_hi], the sequence numbers of the calls the
	 * request then waits for. With 'raw' the object is as the webhook
	 * gave it (metadata restored), neither pruned nor defaulted, as
	 * server-side apply's version converter takes it.
	 */
	int	(*convert)(struct dc *, const struct json_object *crd,
		    const struct json_object *obj, const char *api_version, bool raw,
		    struct json_object **ret);
	/*
	 * Fault injection for a conversion webhook call to the CRD named
	 * 'crd' ("runs.trainyard.dev"), asked once per call (faults.c):
	 * fills 'ret', zeroed by the caller. NULL: no faults.
	 */
	void	(*conv_fault)(struct dc *, const char *crd, struct dc_conv_fault *ret);
	/*
	 * The same for an admission webhook call to the webhook named
	 * 'webhook' ("admit" rules: bad-uid, unreachable, a delay).
	 */
	void	(*adm_fault)(struct dc *, const char *webhook, struct dc_conv_fault *ret);
	/*
	 * Group commit (persistence). With 'commit' false, http.c asks it
	 * before writing any reply or watch bytes: 0 when every write so
	 * far is durable, DC_DECLINED while some are not (the bytes wait
	 * for the end of the loop turn), or a negative code (the connection
	 * is closed unanswered). At the end of every loop turn http.c calls
	 * it with 'commit' true, which makes the turn's writes durable.
	 */
	int	(*flush)(struct dc *, bool commit);
	/*
	 * A v1 Binding POSTed to pods/<name>/binding ('name' the URL's) or
	 * to the bindings collection ('name' NULL), decoded, its namespace
	 * checked against the URL's (scheduler.c). Fills 'resp'; 0, or a
	 * negative code (500). NULL: 405.
	 */
	int	(*binding)(struct dc *, const struct dc_req *, const char *ns, const char *name,
		    struct json_object *binding, bool dry_run, struct dc_resp *);
	/*
	 * pods/<name>/exec of the existing 'pod' (GET or POST, authorized;
	 * exec.c): fills 'resp' (status 101 when it accepted an upgrade) and
	 * returns 0, or DC_DECLINED, or a negative code (500). NULL or
	 * DC_DECLINED: 400 "Upgrade request required".
	 */
	int	(*pod_exec)(struct dc *, const struct dc_req *, const struct json_object *pod,
		    struct dc_resp *);
};

/*
 * Plug-ins. Everything beyond the core (dispatch, the write pipeline,
 * storage, the registry, the router, the watch hub, http.c) is a plug-in
 * described by one const struct dc_plugin in its own file, and installed
 * from one ordered table, dc_plugins[] in plugins.c. The core walks the
 * table and never names a plug-in: it starts them in table order, runs
 * their admission in table order, and stops them in reverse order. A
 * plug-in is started while its state slot (plugin_state()) is not NULL;
 * only started plug-ins' routes, filters and admission run.
 */
struct dc_config;		/* plugins.h: the options plug-ins take */
struct table_conv;		/* table.h */
struct lws_protocols;		/* libwebsockets' protocol, seen by http.c only */

/* A path outside the API groups that a plug-in serves. */
struct dc_plugin_route {
	const char	*path;		/* exact, or a prefix when it ends in '/' */
	/*
	 * Runs after authentication: 0 after filling 'resp', DC_DECLINED
	 * to let the request go on (404 when nobody takes it), or a
	 * negative code (500). It authorizes the request itself.
	 */
	int		(*serve)(struct dc *, const struct dc_req *, struct dc_resp *);
};

/* A subresource of a resource type that a plug-in answers (pods/eviction). */
struct dc_plugin_subres {
	const char	*group;
	const char	*plural;
	const char	*subresource;
	/*
	 * After authorization, before the type's request hook and the verb:
	 * 0 after filling 'resp', DC_DECLINED to go on, or a negative code
	 * (500).
	 */
	int		(*serve)(struct dc *, const struct dc_rtype *, const struct dc_req *,
			    const struct dc_route *, struct dc_resp *);
};

/* The hooks a plug-in gives a built-in resource type (registry.c applies them). */
struct dc_plugin_type {
	const char			*group;
	const char			*plural;
	const struct dc_type_ops	*ops;
};

struct dc_plugin {
	const char	*name;		/* "quota"; also in log lines */
	/*
	 * Starts the plug-in and sets its state slot; 'cfg' may be NULL
	 * (every default). 0, or a negative code with the reason in 'st'
	 * when there is one. NULL: started by other means (persist.c's
	 * restore inside api_new()).
	 */
	int	(*init)(struct dc *, const struct dc_config *cfg, struct kc_status *st);
	/* Stops it and clears its slot; harmless when it is not started. */
	void	(*fini)(struct dc *);
	/* Paths it serves outside the API groups (route.kind DC_ROUTE_NONE). */
	const struct dc_plugin_route *routes;
	size_t	 nroutes;
	/* Subresources it answers (dispatch.c, after authorization). */
	const struct dc_plugin_subres *subres;
	size_t	 nsubres;
	/*
	 * Admission, after validation, in table order; may modify 'obj'.
	 * 0, or a code (its HTTP status answers) with the message in 'st'.
	 */
	int	(*admit)(struct dc_write_ctx *, struct json_object *obj, struct kc_status *st);
	/* Type hooks of built-in resource types (used whether started or not). */
	const struct dc_plugin_type *types;
	size_t	 ntypes;
	/*
	 * Every authenticated request, before it is routed further (fault
	 * injection): 0 after answering it in 'resp', DC_DECLINED to go on.
	 */
	int	(*filter)(struct dc *, const struct dc_req *, const struct dc_route *,
		    struct dc_resp *);
	/* http.c, before api_handle(): milliseconds to hold the request. */
	uint64_t (*hold_ms)(struct dc *, const struct dc_req *);
	/* http.c, after api_handle(): milliseconds to hold the reply. */
	uint64_t (*after)(struct dc *, const struct dc_req *, const struct dc_resp *);
	/* The Table converter of a custom resource type it serves, or NULL. */
	const struct table_conv *(*table_conv)(const struct dc_rtype *);
	/*
	 * WebSocket upgrades (http.c, while libwebsockets holds the
	 * headers; 'protocols' is Sec-WebSocket-Protocol, may be NULL). The
	 * first started plug-in with one answers every upgrade: 0 with
	 * '*ret_session' when accepted (http.c puts it on the connection's
	 * opaque pointer for the protocol's callback), 1 when 'resp' holds
	 * the refusal, or -ENOMEM. Without one, upgrades are hung up.
	 */
	int	(*upgrade)(struct dc *, struct dc_req *, const char *protocols,
		    struct dc_resp *resp, void **ret_session);
	/* Its WebSocket protocols, ended by a NULL name (http.c's context). */
	const struct lws_protocols *ws_protocols;
};

/* The table, in order (plugins.c); 'dc_nplugins' rows. */
extern const struct dc_plugin *const dc_plugins[];
extern const size_t dc_nplugins;

/*
 * The instance (api.c)
 */

struct dc_opts {
	const char	*kube_version;	/* "1.32"; NULL: 1.32 */
	uint32_t	 history_max;	/* 0: DC_HISTORY_DEFAULT */
	uint32_t	 history_fresh_ms; /* as in struct dc_store_opts */
	uint32_t	 backlog_events; /* 0: DC_BACKLOG_EVENTS */
	size_t		 backlog_bytes;	/* 0: DC_BACKLOG_BYTES */
	uint32_t	 bookmark_ms;	/* 0: DC_BOOKMARK_MS */
	bool		 no_bootstrap;	/* no default objects or SA controller */
	/*
	 * Runs inside api_new() after the registry is set up and before the
	 * bootstrap objects are created (persistence reloads here, so the
	 * bootstrap only adds what is missing). Objects it restores come
	 * without events: files initialised later scan storage at init.
	 */
	int		(*restore)(struct dc *, void *arg);
	void		*restore_arg;
};

struct dc {
	struct dc_opts		 opts;
	char			 major[8];
	char			 minor[8];
	char			 git_version[32];
	char			 server_address[300];	/* host:port */
	struct dc_registry	 reg;
	struct dc_store		*store;
	struct dc_hub		*hub;
	struct dc_auth		*auth;
	struct dc_http		*http;		/* NULL in unit tests */
	struct dc_hooks		 hooks;
	struct dc_timer_list	 timers;	/* armed, by due time */
	uint64_t		 timer_round;
	struct dc_api		*api;		/* write.c's own state */
	struct dc_disc		*disc;		/* discovery.c's cache */
	uint64_t		 next_rid;
	bool			 stopping;	/* SIGTERM received */
	/*
	 * The request being answered waits for a conversion webhook
	 * (hooks.convert gave -EINPROGRESS), or a conversion failed with
	 * conv_error: api_handle() resets both, and at its end answers
	 * again later (req->redo) or with a 500 carrying the message.
	 */
	bool			 conv_pending;
	bool			 conv_allowed;	/* inside api_handle(), not a watch */
	bool			 conv_again;	/* a later pass of a held request */
	uint64_t		 conv_lo, conv_hi;	/* calls asked for (hooks.convert) */
	char			 conv_error[1024];
	/*
	 * This pass started a webhook call no earlier pass made (admission
	 * webhooks, each called once per object of a request): it does not
	 * count toward DC_CONV_PASSES_MAX.
	 */
	bool			 conv_progress;
	uint64_t		 webhook_seq;	/* whcall.c's call numbers */
	void			*plugin_states[DC_PLUGINS_MAX]; /* plugin_state() */
};

/* main.c */
/* (flags, certificates, kubeconfig, signals, the loop: nothing exported) */

/* http.c */
struct dc_http_opts {
	const char	*host;		/* "127.0.0.1"; "0.0.0.0": every address */
	int		 port;		/* 0: any free port */
	const char	*cert_pem;	/* serving certificate (chain) */
	const char	*key_pem;
	size_t		 body_max;	/* 0: DC_BODY_MAX */
};

/*
 * Creates the libwebsockets context and starts listening (HTTPS, ALPN
 * http/1.1); sets dc->http. KC_ECONFIG with the reason in 'st' when the
 * address cannot be bound or the certificate is refused. The PEM texts
 * are copied by libwebsockets.
 */
int	 http_start(struct dc *, const struct dc_http_opts *, struct dc_http **ret,
	    struct kc_status *st) _must_check_;
/* The port actually listened on (the kernel's pick for port 0). */
int	 http_port(const struct dc_http *);
struct kc_guard_stats;
/* The connection guard's counters (all zero without a server). */
void	 http_conn_stats(const struct dc_http *, struct kc_guard_stats *);
/* Services the loop until http_stop(); 0, or -EIO when the loop fails. */
int	 http_run(struct dc_http *);
/* Asks the loop to stop; http_run() returns. Safe from any callback. */
void	 http_stop(struct dc_http *);
/* Services the loop until every watch has finished, or 'ms' passed. */
void	 http_drain(struct dc_http *, uint64_t ms);
/*
 * Watches a file descriptor (a signalfd): 'fn' runs on the loop when it
 * is readable. At most a few; -E2BIG past them, -EIO when it cannot be
 * adopted. The descriptor stays the caller's to close.
 */
int	 http_watch_fd(struct dc_http *, int fd, void (*fn)(void *), void *arg)
	    _must_check_;
/* Closes every connection (streams are released) and frees. NULL is fine. */
struct dc_http *http_free(struct dc_http *);

/*
 * Loop timers. A struct dc_timer is embedded in its owner and initialised
 * once; timer_arm() (re)schedules it 'delay_ms' from kc_clock_now_ms(),
 * timer_cancel() unschedules it (harmless when idle). When it fires, its
 * callback's return value re-arms it (or DC_TIMER_STOP). With a server
 * they fire from the loop (one lws_sul tracks the earliest); without one
 * (unit tests) timers_run() fires those due, each at most once per call.
 * Owners cancel their timers before freeing them.
 */
void	 timer_init(struct dc_timer *, struct dc *, dc_timer_fn *, void *arg);
void	 timer_arm(struct dc_timer *, uint64_t delay_ms);
void	 timer_cancel(struct dc_timer *);
/* Runs every timer due at kc_clock_now_ms(); returns how many ran. */
size_t	 timers_run(struct dc *);
/* Milliseconds until the next timer, or -1 when none is armed. */
int64_t	 timers_next(const struct dc *);

/* router.c */
/*
 * Parses a request path (already percent-decoded) into *ret: always 0;
 * ret->kind is DC_ROUTE_NONE for anything that names nothing (empty or
 * overlong segments, unknown prefixes, too many segments). 'watch_param'
 * is the watch parameter (req_param_bool()), which turns a collection GET
 * into "watch".
 */
int	 router_parse(enum dc_method, const char *path, bool watch_param,
	    struct dc_route *ret);
/* "GET"...; "OTHER" for unknown values. */
const char *method_name(enum dc_method);
/* Case-insensitive; DC_METHOD_OTHER when unknown. */
enum dc_method method_from(const char *);
/*
 * Splits "path?query" into req->path and req->params, percent-decoding
 * both ('+' is a space in the query), as libwebsockets does for the
 * server. -EINVAL for a bad escape or %00, -E2BIG past DC_PARAMS_MAX
 * parameters, -ENOMEM. For tests and tools.
 */
int	 req_set_target(struct dc_req *, const char *target) _must_check_;
/* Adds a decoded "key=value" (or "key") query parameter; -E2BIG, -ENOMEM. */
int	 req_add_param(struct dc_req *, const char *kv) _must_check_;
/* The first value of a parameter (borrowed), or NULL. */
const char *req_param(const struct dc_req *, const char *key);
bool	 req_has_param(const struct dc_req *, const char *key);
/*
 * A boolean parameter as kube-apiserver reads every one (watch,
 * allowWatchBookmarks, orphanDependents, force, stdin, follow...):
 * false when absent, "0", or "false" in any case; true for anything
 * else, "" and "True" included.
 */
bool	 req_param_bool(const struct dc_req *, const char *key);
/* Frees everything a request owns and zeroes it. */
void	 req_clear(struct dc_req *);
/* Percent-decodes 'len' bytes into a new string; -EINVAL, -ENOMEM. */
int	 percent_decode(const char *in, size_t len, char **ret) _must_check_;

/* registry.c */
/* Registers the built-in types (builtin_types[]); 0 or -ENOMEM. */
int	 registry_init(struct dc *) _must_check_;
/* Frees every type. The collections stay (storage owns them). */
void	 registry_fini(struct dc *);
/*
 * Adds a resource type from 'def' (copied; 'ops', 'ops_arg' and 'smp'
 * are borrowed and must outlive it), creating or sharing its storage
 * collection, in discovery order. Bumps the generation and invalidates
 * discovery. -EEXIST for a group/version/plural already served, -ENOMEM.
 * *ret (may be NULL) is owned by the registry.
 */
int	 registry_add(struct dc *, const struct dc_rtype_def *,
	    struct dc_rtype **ret) _must_check_;
/*
 * Removes and frees a type (its objects stay in storage; see
 * coll_clear()). End its watches first with watchhub_drop_rtype().
 */
void	 registry_remove(struct dc *, struct dc_rtype *);
/* Lookups: the type or NULL; the pointers stay valid until removal. */
struct dc_rtype *registry_find(const struct dc *, const char *group,
	    const char *version, const char *plural);
/* The preferred (first-listed) version of a group's resource. */
struct dc_rtype *registry_find_any(const struct dc *, const char *group,
	    const char *plural);
/* By kind; 'version' NULL takes the preferred version. */
struct dc_rtype *registry_find_kind(const struct dc *, const char *group,
	    const char *version, const char *kind);
/* Whether discovery lists the group version / the group. */
bool	 registry_has_gv(const struct dc *, const char *group,
	    const char *version);
bool	 registry_has_group(const struct dc *, const char *group);
bool	 rtype_has_subres(const struct dc_rtype *, const char *name);
/*
 * Kubernetes version order (apimachinery's CompareKubeAwareVersionStrings,
 * as a sort comparator): GA before beta before alpha, higher major then
 * higher minor first, then names not shaped vN[alpha|betaM], by name.
 * <0 when 'a' comes first.
 */
int	 version_compare(const char *a, const char *b);
/* The built-in resource types. */
extern const struct dc_rtype_def builtin_types[];
extern const size_t builtin_ntypes;

/* builtin.c */
/* The hooks of the built-in kinds (ops_default has none). */
extern const struct dc_type_ops ops_namespace;
extern const struct dc_type_ops ops_pod;
extern const struct dc_type_ops ops_service;
extern const struct dc_type_ops ops_secret;
extern const struct dc_type_ops ops_configmap;
extern const struct dc_type_ops ops_event;
extern const struct dc_type_ops ops_event_v1;
extern const struct dc_type_ops ops_node;
extern const struct dc_type_ops ops_default;
/* Upstream's name validation for 'rule'; appends to 'errs' (at 'field'). */
void	 builtin_validate_name(enum dc_name_rule, const char *field, const char *name,
	    struct dc_errs *errs);
/* Labels, annotations, finalizers and owner references; appends to 'errs'. */
void	 builtin_validate_meta(const struct json_object *obj, struct dc_errs *errs);
/*
 * ValidateLabels and ValidateAnnotations of a map (NULL: nothing), the
 * errors at 'field' ("metadata.labels"); append to 'errs'.
 */
void	 builtin_validate_labels(const struct json_object *labels, const char *field,
	    struct dc_errs *errs);
void	 builtin_validate_annotations(const struct json_object *ann, const char *field,
	    struct dc_errs *errs);
/* The pod's QoS class: "BestEffort", "Burstable" or "Guaranteed". */
const char *builtin_pod_qos(const struct json_object *pod);
/*
 * pods/log without a kubelet: 400 when the container is missing or
 * ambiguous (upstream's messages), else an empty text/plain log. 0, or
 * -ENOMEM with 'resp' unset.
 */
int	 builtin_pod_log(struct dc *, const struct dc_req *, const struct json_object *pod,
	    struct dc_resp *) _must_check_;
/* Creates what every cluster has: four namespaces, the kubernetes Service. */
int	 builtin_bootstrap(struct dc *) _must_check_;

/* storage.c */
struct dc_store_opts {
	uint32_t	 history_max;	/* events kept per collection; 0: default */
	/*
	 * A full history whose oldest event is younger than this grows (up
	 * to DC_HISTORY_UPPER). 0: DC_HISTORY_FRESH_MS with the default
	 * history_max, none with a history_max given.
	 */
	uint32_t	 history_fresh_ms;
};

int	 storage_new(const struct dc_store_opts *, struct dc_store **ret) _must_check_;
/* Frees every collection, object and event. NULL is fine. */
struct dc_store *storage_free(struct dc_store *);
/* The resourceVersion of the last committed write. */
uint64_t storage_rv(const struct dc_store *);
/* Sets the counter (persistence reload); never moves it backwards. */
void	 storage_set_rv(struct dc_store *, uint64_t rv);
/*
 * Adds a subscriber: 'fn' sees every committed event, in commit order,
 * after the ones subscribed earlier (the watch hub is first). It may
 * write; the events that causes are delivered after the current one.
 */
int	 storage_subscribe(struct dc_store *, dc_store_sub_fn *, void *arg) _must_check_;
void	 storage_unsubscribe(struct dc_store *, dc_store_sub_fn *, void *arg);
/* The collection for group/resource, created on first use. */
int	 storage_coll(struct dc_store *, const char *group, const char *resource,
	    bool namespaced, struct dc_coll **ret) _must_check_;
struct dc_coll *storage_find_coll(const struct dc_store *, const char *group,
	    const char *resource);
/* Calls 'fn' per collection until it returns non-zero (returned). */
typedef int	dc_coll_fn(void *arg, struct dc_coll *);
int	 storage_foreach_coll(struct dc_store *, dc_coll_fn *, void *arg);
/* Drops every object of a collection without events (CRD removal). */
void	 coll_clear(struct dc_coll *);
/*
 * Drops the retained history and moves the compaction point to the
 * current resourceVersion (faults.c): a watch or list from an older
 * resourceVersion then gets 410 Expired.
 */
void	 coll_compact(struct dc_coll *);
const char *coll_group(const struct dc_coll *);
const char *coll_resource(const struct dc_coll *);
bool	 coll_namespaced(const struct dc_coll *);
/* Objects in namespace 'ns' (NULL: all). */
size_t	 coll_count(const struct dc_coll *, const char *ns);
/* The watchers of a collection (watchhub.c's list). */
struct dc_watcher_list *coll_watchers(struct dc_coll *);
/* The stored object (borrowed, frozen) or NULL; 'ns' NULL or "" if cluster-scoped. */
const struct json_object *coll_get(const struct dc_coll *, const char *ns,
	    const char *name);
/*
 * The JSON text of 'obj' as api_serialize() prints it (no newline),
 * 'item' without the top-level apiVersion and kind; printed on first use
 * and kept by the collection until the object is replaced or deleted, so
 * *ret is valid until the next write. 0; 1 when 'obj' is not the stored
 * object of its key (a past state, a copy); -ENOMEM.
 */
int	 coll_text(const struct dc_coll *, const struct json_object *obj, bool item,
	    const char **ret, size_t *ret_len) _must_check_;
/*
 * New references to the objects in (ns, name) order, 'ns' NULL for all,
 * starting after 'after' ("ns/name" key, NULL for the start; -EINVAL when
 * malformed). *ret is an array the caller frees with objs_free().
 */
int	 coll_list(const struct dc_coll *, const char *ns, const char *after,
	    struct json_object ***ret, size_t *ret_n) _must_check_;
/*
 * The same as it was at 'rv' (a list snapshot), rebuilt from the
 * history; KC_EEXPIRED when the history no longer reaches back.
 */
int	 coll_list_at(const struct dc_coll *, uint64_t rv, const char *ns,
	    const char *after, struct json_object ***ret, size_t *ret_n) _must_check_;
/* Releases the objects of a list and the array. NULL is fine. */
void	 objs_free(struct json_object **, size_t n);
/*
 * Calls 'fn' for each retained event after 'since', in order, until it
 * returns non-zero (returned). Returns KC_EEXPIRED, with the oldest
 * retained rv - 1 in *ret_oldest (may be NULL), when events after
 * 'since' were already dropped.
 */
typedef int	dc_event_fn(void *arg, struct dc_event *);
int	 coll_history(struct dc_coll *, uint64_t since, dc_event_fn *fn, void *arg,
	    uint64_t *ret_oldest);
/*
 * Writes. 'obj' is consumed (stored and frozen, or released); *ret, if
 * not NULL, gets a new reference to the stored state. Create fails with
 * KC_EEXISTS; update and delete with KC_ENOTFOUND, or KC_ECONFLICT when
 * 'expect_rv' is not 0 and differs; all with -EINVAL for an object
 * without a name (or namespace, in a namespaced collection) and -ENOMEM,
 * leaving the store as it was. An update equal to the stored object
 * (resourceVersion and managedFields times aside) stores nothing and
 * returns DC_UNCHANGED. Delete emits DELETED with 'obj' (the final state)
 * under a new resourceVersion, without modifying 'obj'.
 */
int	 storage_create(struct dc_store *, struct dc_coll *, struct json_object *obj,
	    struct json_object **ret) _must_check_;
int	 storage_update(struct dc_store *, struct dc_coll *, struct json_object *obj,
	    uint64_t expect_rv, struct json_object **ret) _must_check_;
int	 storage_delete(struct dc_store *, struct dc_coll *, struct json_object *obj,
	    uint64_t expect_rv, struct json_object **ret) _must_check_;
/* Inserts without an event or a new resourceVersion (reload); consumes 'obj'. */
int	 storage_restore(struct dc_store *, struct dc_coll *, struct json_object *obj)
	    _must_check_;
/* Event references (the history and watchers hold them). */
void	 event_unref(struct dc_event *);
struct dc_event *event_ref(struct dc_event *);
/* The "ns/name" key, into 'buf'; 0 or -ENAMETOOLONG. */
int	 obj_key(const struct json_object *obj, char *buf, size_t size);
/* metadata.resourceVersion as a number; 0 when absent or malformed. */
uint64_t obj_rv(const struct json_object *obj);
/*
 * A copy of 'obj' for a write that replaces members: a new top level and a
 * new metadata object, every other member shared by reference. The writer
 * may add, replace or remove members of those two levels (status,
 * metadata.managedFields, metadata.resourceVersion) and nothing below them,
 * which still belongs to 'obj'. NULL on allocation failure.
 */
struct json_object *obj_cow(const struct json_object *obj);
/*
 * Makes the members of the private tree 'v' that equal their counterpart
 * in 'old' (a frozen tree) references to it, recursively through objects
 * and through arrays of the same length, so that a new version built
 * from scratch shares what it did not change (the field manager then
 * compares those by identity, and the history keeps them once). 'v'
 * itself stays private; 'old' may be NULL.
 */
void	 obj_share_equal(struct json_object *v, const struct json_object *old);
/* A shallow copy of 'obj' whose metadata.resourceVersion is 'rv'; NULL: -ENOMEM. */
struct json_object *obj_with_rv(const struct json_object *obj, uint64_t rv);
/* Equal apart from resourceVersion and managedFields[].time. */
bool	 obj_same(const struct json_object *a, const struct json_object *b);

/* watchhub.c */
enum dc_format {
	DC_FMT_JSON,
	DC_FMT_TABLE_V1,
	DC_FMT_TABLE_V1BETA1,
};

enum dc_include {
	DC_INCLUDE_METADATA,	/* the default */
	DC_INCLUDE_NONE,
	DC_INCLUDE_OBJECT,
};

struct dc_watch_opts {
	const struct dc_rtype	*rt;
	const char		*ns;		/* NULL: every namespace */
	const char		*label_selector;
	const char		*field_selector;
	bool			 initial;	/* ADDED for what exists */
	uint64_t		 since;		/* when !initial */
	bool			 bookmarks;
	uint32_t		 timeout_s;	/* 0: 1800-3600 s */
	enum dc_format		 format;
	enum dc_include		 include;
};

/* The hub of dc (subscribes to storage, arms the bookmark timer). */
int	 watchhub_new(struct dc *, struct dc_hub **ret) _must_check_;
/* Frees the hub and any watcher not yet released. NULL is fine. */
struct dc_hub *watchhub_free(struct dc_hub *);
/*
 * Starts a watch; on success *ret is the stream for resp->stream, which
 * the consumer releases. A resourceVersion that is too old still
 * succeeds: the stream holds one ERROR event (410 Expired) and ends.
 * Selector errors are KC_EBADREQUEST with the message in 'st'; -ENOMEM.
 */
int	 watchhub_start(struct dc *, const struct dc_watch_opts *, struct dc_stream **ret,
	    struct kc_status *st) _must_check_;
/* Ends every watch (shutdown): the streams finish cleanly. */
void	 watchhub_close_all(struct dc_hub *);
/* Ends the watches of a resource type about to be removed (CRDs). */
void	 watchhub_drop_rtype(struct dc_hub *, const struct dc_rtype *);
/* Watchers not yet released. */
size_t	 watchhub_count(const struct dc_hub *);
/* Sends bookmarks to the watchers that asked (the periodic timer). */
void	 watchhub_bookmarks(struct dc_hub *);
/*
 * Conversion webhook calls ended: the watchers waiting for one try again
 * (their events were held back in order, -EINPROGRESS from api_view()).
 */
void	 watchhub_conversions_done(struct dc_hub *);
/* Reference-counted byte chunks; chunk_new() copies, NULL on -ENOMEM. */
struct dc_chunk *chunk_new(const void *data, size_t len);
struct dc_chunk *chunk_ref(struct dc_chunk *);
void	 chunk_unref(struct dc_chunk *);
/* Frees an event's cached serializations (storage.c, at event free). */
void	 watchhub_ser_free(struct dc_ser *);

/* api.c */
/*
 * Creates an instance: storage, watch hub, auth, registry and (unless
 * opts->no_bootstrap) the bootstrap objects. -EINVAL for a malformed
 * kube_version, -ENOMEM. No server: see http_start().
 */
int	 api_new(const struct dc_opts *, struct dc **ret) _must_check_;
/*
 * The Kubernetes minor version the devcluster emulates (--kubernetes-version,
 * 32 for 1.32), for behaviour that changed between minors.
 */
unsigned api_minor(const struct dc *);
/*
 * Frees an instance (after http_free()), stopping every plug-in first, in
 * reverse table order. NULL is fine; returns NULL.
 */
struct dc *api_free(struct dc *);
/*
 * Starts every plug-in of dc_plugins[] that has an init, in table order.
 * 0, or the first failure's code with "<name>: <reason>" in 'st'; the
 * plug-ins started before it stay started (api_free() stops them).
 */
int	 api_plugins_start(struct dc *, const struct dc_config *, struct kc_status *st)
	    _must_check_;
/* Stops every plug-in, in reverse table order. */
void	 api_plugins_stop(struct dc *);
/* A plug-in's state (NULL while it is not started) and its setter. */
void	*plugin_state(const struct dc *, const struct dc_plugin *);
void	 plugin_set_state(struct dc *, const struct dc_plugin *, void *state);
/*
 * The view of a stored object in 'rt''s version (a new reference, which
 * may share subtrees with 'stored'): convert_out, or the object with
 * rt's apiVersion. -ENOMEM.
 */
int	 api_view(const struct dc_rtype *, const struct json_object *stored,
	    struct json_object **ret) _must_check_;
/*
 * A Table (meta.k8s.io v1 or v1beta1, by 'fmt') for 'rt', with the
 * column definitions of its converter or, when !columns, null ones
 * (later watch events). The converter is a plug-in's table_conv for a
 * custom resource type (Name and Age when none has one), else table.c's
 * built-in printer of the group and resource (table_conv_builtin()).
 * Rows are added with api_table_add_row().
 */
int	 api_table_new(const struct dc_rtype *, enum dc_format, bool columns,
	    struct json_object **ret) _must_check_;
/*
 * Appends the row of 'obj' (a view), as table_object() makes it with the
 * same converter: cells, and the object per 'include'.
 */
int	 api_table_add_row(const struct dc_rtype *, struct json_object *table,
	    const struct json_object *obj, enum dc_include, time_t now) _must_check_;
/* Human age, upstream's duration.HumanDuration(); "<invalid>" below -1 s. */
void	 api_age_format(int64_t seconds, char *buf, size_t size);
/* The age cell of a timestamp: age, "<unknown>" or "<invalid>". */
void	 api_age_of(const char *timestamp, time_t now, char *buf, size_t size);
/* A random v4 UUID. */
void	 api_uuid(char buf[37]);
/* Appends compact JSON (never caching inside 'o'); -E2BIG, -ENOMEM. */
int	 api_serialize(const struct json_object *o, struct kc_buf *b) _must_check_;
/*
 * Parses label and field selectors for 'rt' (NULL or "" selects
 * everything; field names checked against the type's). KC_EBADREQUEST
 * with upstream's message in 'st', -ENOMEM. Free with the kc_ destructors.
 */
int	 api_selectors(const struct dc_rtype *, const char *label, const char *field,
	    struct kc_label_selector **ret_ls, struct kc_field_selector **ret_fs,
	    struct kc_status *st) _must_check_;
/* Whether 'obj' (storage form) matches both selectors (NULL: all). */
bool	 api_matches(const struct dc_rtype *, const struct kc_label_selector *,
	    const struct kc_field_selector *, const struct json_object *obj);

/* dispatch.c */
/*
 * Answers one request into 'resp' (from resp_init()). Never fails: every
 * error becomes a Status reply. Sets req->id and req->user.
 */
void	 api_handle(struct dc *, struct dc_req *, struct dc_resp *);

/* reply.c */
/* Replies: init before use, clear to free (a stream is released). */
void	 resp_init(struct dc_resp *);
void	 resp_clear(struct dc_resp *);
/* Adds a reply header ("Warning"); 'name' is static. -E2BIG, -ENOMEM. */
int	 resp_header(struct dc_resp *, const char *name, const char *value)
	    _must_check_;
/*
 * A Warning header value for 'text': 299 - "text", quoted as Go's
 * strconv.Quote does (control characters escaped, so no text can end
 * the header), cut to DC_WARNING_MAX bytes. NULL: -ENOMEM.
 */
char	*resp_warning_value(const char *text);
/* Adds that Warning header; -E2BIG once the reply has no room, -ENOMEM. */
int	 resp_warning(struct dc_resp *, const char *text) _must_check_;
/* Sets the reply to 'o' as JSON (a newline after it) or to plain text. */
int	 resp_json(struct dc_resp *, int status, const struct json_object *o)
	    _must_check_;
int	 resp_text(struct dc_resp *, int status, const char *ctype, const char *text)
	    _must_check_;

/* write.c */
/* The write pipeline's own state in dc->api (graceful deletions, timers). */
int	 write_init(struct dc *) _must_check_;
/* Frees it; harmless when not initialised. */
void	 write_fini(struct dc *);
/*
 * Creates an object through the full create path (defaults, validation,
 * namespace checks), as a controller would; 'obj' is consumed. 0, or
 * KC_EEXISTS, KC_EINVALID, KC_ENOTFOUND, KC_EFORBIDDEN, -ENOMEM...
 * *ret (may be NULL) gets the stored object.
 */
int	 api_create_object(struct dc *, const struct dc_rtype *, struct json_object *obj,
	    struct json_object **ret) _must_check_;
/*
 * The same, with the refusal's Status message (admission's answer) in
 * msg[0..size), cut to fit; "" on success or when there is none.
 */
int	 api_create_object_msg(struct dc *, const struct dc_rtype *, struct json_object *obj,
	    struct json_object **ret, char *msg, size_t size) _must_check_;
/*
 * Deletes an object through the full delete path (finalizers, grace;
 * 'grace' -1 for the type's default), as a controller would. 0,
 * KC_ENOTFOUND or another code.
 */
int	 api_delete_object(struct dc *, const struct dc_rtype *, const char *ns,
	    const char *name, int64_t grace) _must_check_;
/*
 * The same with a propagationPolicy ("Background", "Foreground",
 * "Orphan"; NULL for none) and a uid precondition (NULL: none;
 * KC_ECONFLICT when it differs), as the garbage collector sends them.
 */
int	 api_delete_object_opts(struct dc *, const struct dc_rtype *, const char *ns,
	    const char *name, int64_t grace, const char *policy, const char *uid)
	    _must_check_;
/*
 * Writes 'next' (consumed) over the stored 'old' as field manager
 * 'manager' would through 'sub' (NULL or "status"), as the simulated
 * controllers write: a write that changes nothing costs nothing (no
 * managedFields entry, no event), managedFields are kept up to date, and
 * the old resourceVersion is the precondition. 0, KC_ECONFLICT when 'old'
 * is no longer the stored version, KC_ENOTFOUND, -ENOMEM.
 */
int	 api_update_object(struct dc *, const struct dc_rtype *, const struct json_object *old,
	    struct json_object *next, const char *sub, const char *manager) _must_check_;

/*
 * For an admission step that changed the object (a mutating webhook's
 * patch), as kube-apiserver validates what mutating admission left:
 * the server-owned metadata (uid, creationTimestamp, resourceVersion,
 * generation, deletion fields, managedFields) back from 'before' (the
 * object the step got; may be NULL), the type's defaults, validation,
 * and for an update the generation again. 0, or KC_EINVALID with the 422
 * written in wc->resp (wc->answered set), or another failure (-ENOMEM).
 */
int	 api_admission_revalidate(struct dc_write_ctx *, struct json_object *obj,
	    const struct json_object *before) _must_check_;

/*
 * A PUT or PATCH of a scale subresource of 'rt' object 'name': the
 * replicas asked for in '*ret_replicas'. The body is an update's Scale
 * (JSON or YAML), or a JSON, merge or strategic merge patch (Scale has no
 * merge keys) of 'current', the Scale now. A resourceVersion in it must
 * be 'stored_rv' (409), and the replicas within 0..2^31-1 (422). On
 * failure the reply is written in 'resp' and its code returned.
 */
int	 api_scale_request(const struct dc_req *req, const struct dc_rtype *rt,
	    const char *verb, const char *name, const struct json_object *current,
	    const char *stored_rv, int64_t *ret_replicas, struct dc_resp *resp) _must_check_;

/* Now, RFC 3339 in seconds (the epoch if the clock cannot be read). */
void	 api_now(char buf[KC_TIME_MAX]);

/* A core/v1 Event that a simulated component records (api_record_event). */
struct api_event {
	const struct json_object *about;	/* the involved object */
	const char	*kind;		/* its kind (core/v1: "Pod", "Node") */
	const char	*field_path;	/* involvedObject.fieldPath, or NULL */
	bool		 with_rv;	/* involvedObject.resourceVersion too */
	const char	*type;		/* "Normal", "Warning" */
	const char	*reason, *message;
	const char	*component;	/* source.component, reportingComponent */
	const char	*host;		/* source.host and reportingInstance; NULL: none
					   and the component */
	const char	*now;		/* first/lastTimestamp; NULL: api_now() */
	uint64_t	 stamp;		/* the name's suffix, unique per component */
};
/*
 * Creates the Event "<name>.<stamp in hex>" in the object's namespace
 * ("default" for cluster-scoped objects). An Event that cannot be made
 * (namespace gone, forbidden, name taken) is dropped, as client-go's
 * recorder drops it: 0, or -ENOMEM.
 */
int	 api_record_event(struct dc *, const struct api_event *) _must_check_;

/*
 * Namespace termination (the namespace controller): deletes what is in
 * 'ns', then finalizes and removes the namespace. 1 while objects remain
 * (call again later), 0 when done or absent, or a negative code.
 */
int	 api_namespace_terminate(struct dc *, const char *ns);

/* errors.c */
/* snprintf() of a message into 'buf': cut when it does not fit. */
void	 errors_textf(char *buf, size_t size, const char *fmt, ...) _printf_(3, 4);
/*
 * A Status body for 'code' (KC_E*; HTTP code and reason from the table,
 * 400 for KC_EPARSE and -EINVAL, 413 for -E2BIG, else 500). 'details' is
 * copied. -ENOMEM.
 */
int	 errors_status_body(int code, const char *message, const struct json_object *details,
	    struct json_object **ret) _must_check_;
/*
 * Status replies; each fills 'resp' (a fixed 500 if memory runs out).
 * errors_reply: a printf-formatted message, no details.
 */
void	 errors_reply(struct dc_resp *, int code, const char *fmt, ...) _printf_(3, 4);
/* The same with details {name, group, kind: plural}. */
void	 errors_obj(struct dc_resp *, int code, const struct dc_rtype *, const char *name,
	    const char *fmt, ...) _printf_(5, 6);
/* 404 "<qr> \"name\" not found" */
/*
 * A Status with 'message' as is, of any length (admission's long
 * answers), and details {name, group, kind}, each left out when empty.
 */
void	 errors_details(struct dc_resp *, int code, const char *group, const char *kind,
	    const char *name, const char *message);
void	 errors_notfound(struct dc_resp *, const struct dc_rtype *, const char *name);
/*
 * 422 "<Kind>[.<group>] \"name\" is invalid: <err>" (or "[e1, e2]") with
 * details {name, group, kind: Kind, causes}.
 */
void	 errors_invalid(struct dc_resp *, const char *qualified_kind, const char *group,
	    const char *name, const struct dc_errs *);
/* 500 "Internal error occurred: <text>" for a failure code (-ENOMEM...). */
void	 errors_internal(struct dc_resp *, int code);
/* A libkc failure with 'st': its code decides, st->message is the message. */
void	 errors_kc(struct dc_resp *, int code, const struct kc_status *st);
/*
 * Field errors, as field.Error prints them: errs_add() formats the body
 * itself; the others build upstream's bodies ("Required value[: detail]",
 * "Invalid value: <value>[: detail]", "Forbidden: detail",
 * "Unsupported value: \"v\": supported values: ...", "Duplicate value:
 * <value>"). Past DC_ERRS_MAX, errs->truncated is set and they are dropped.
 */
void	 errs_add(struct dc_errs *, const char *type, const char *field,
	    const char *fmt, ...) _printf_(4, 5);
void	 errs_required(struct dc_errs *, const char *field, const char *detail);
void	 errs_invalid(struct dc_errs *, const char *field, const char *value_repr,
	    const char *detail);
void	 errs_forbidden(struct dc_errs *, const char *field, const char *detail);
void	 errs_unsupported(struct dc_errs *, const char *field, const char *value,
	    const char *const *supported);
void	 errs_duplicate(struct dc_errs *, const char *field, const char *value_repr);
/* The full message of one field error: "<field>: <body>". */
void	 ferr_string(const struct dc_ferr *, char *buf, size_t size);
/*
 * The errors as Go's field.ErrorList.ToAggregate() prints them: one
 * message alone, several as "[e1, e2]", repeated messages once. Cut to
 * 'size'.
 */
void	 errs_string(const struct dc_errs *, char *buf, size_t size);

/* discovery.c */
/*
 * Answers /api, /apis, /apis/<g> and /api/v1 or /apis/<g>/<v>: 404 for
 * an unknown group or version, 406 for an unacceptable Accept. 0, or
 * -ENOMEM with 'resp' unset.
 */
int	 discovery_handle(struct dc *, const struct dc_req *, const struct dc_route *,
	    struct dc_resp *) _must_check_;
/* Which document an Accept header picks: 2 (v2), 1 (v2beta1), 0 legacy, -1 none. */
int	 discovery_accept(const char *accept);
/* Drops the cached documents (the registry or the address changed). */
void	 discovery_invalidate(struct dc *);
void	 discovery_fini(struct dc *);

/* auth.c */
int	 auth_new(struct dc_auth **ret) _must_check_;
/* Frees (and wipes) every token. NULL is fine; returns NULL. */
struct dc_auth *auth_free(struct dc_auth *);
/* Adds (or replaces) a token; 'groups' NULL-terminated, may be NULL. */
int	 auth_add(struct dc_auth *, const char *token, const char *name,
	    const char *uid, const char *const *groups) _must_check_;
/*
 * Adds the tokens of kube-apiserver's --token-auth-file CSV text ('path'
 * names it in messages). KC_ECONFIG with upstream's reason in 'st' (a
 * record of fewer than 3 columns, a quoting error, a NUL byte); tokens
 * read before the error stay. -ENOMEM.
 */
int	 auth_load_csv(struct dc_auth *, const char *text, size_t len,
	    const char *path, struct kc_status *st) _must_check_;
/* The same from a file; -errno when it cannot be read. */
int	 auth_load_file(struct dc_auth *, const char *path, struct kc_status *st)
	    _must_check_;
size_t	 auth_count(const struct dc_auth *);
/*
 * Authenticates an Authorization header ("Bearer <token>", scheme
 * case-insensitive) into 'user' (replaced; clear with user_clear()), plus
 * group system:authenticated. KC_EUNAUTHORIZED for a missing, malformed
 * or unknown token; -ENOMEM.
 */
int	 auth_authenticate(const struct dc_auth *, const char *authorization,
	    struct dc_user *user) _must_check_;
/*
 * The same for a credential asked to be valid for 'audiences' (a
 * TokenReview's spec.audiences, NULL-terminated; NULL: the API audience),
 * which only the verifier (service-account tokens) tells apart: it sets
 * user->audiences to the ones the token is valid for. Static tokens are
 * valid for the API audience only: the caller checks that. On
 * KC_EUNAUTHORIZED 'err' may hold the verifier's reason (upstream's
 * text), else "".
 */
int	 auth_authenticate_for(const struct dc_auth *, const char *authorization,
	    const char *const *audiences, struct dc_user *user, char *err, size_t errsize)
	    _must_check_;
/*
 * Applies the Impersonate-* headers of 'req' to req->user as
 * kube-apiserver's impersonation filter does (rbac_impersonation_plan()):
 * asks the authorizer for "impersonate" on users (or serviceaccounts),
 * each group and the uid (authentication.k8s.io uids), in that order,
 * then continues as the impersonated user with every group asked for plus
 * system:authenticated (a service account without groups gets its
 * own). KC_EFORBIDDEN with upstream's message in 'st' ("users "bob" is
 * forbidden: User "alice" cannot impersonate resource "users" in API group
 * "" at the cluster scope", the authorizer's reason appended), KC_EINTERNAL
 * for groups or a uid without a user ("Internal error occurred: requested
 * [{Group  g    }] without impersonating a user": kube-apiserver's text,
 * which it sends as text/plain), KC_EBADREQUEST past DC_IMP_GROUPS_MAX groups,
 * -ENOMEM. 0 when there is nothing to impersonate.
 */
int	 auth_impersonate(struct dc *, struct dc_req *, struct kc_status *st)
	    _must_check_;
/* Users: set replaces (copies everything), add_group appends (-E2BIG). */
int	 user_set(struct dc_user *, const char *name, const char *uid,
	    const char *const *groups) _must_check_;
int	 user_add_group(struct dc_user *, const char *group) _must_check_;
/* Appends an extra key and value, or an audience: 0, -E2BIG, -ENOMEM. */
int	 user_add_extra(struct dc_user *, const char *key, const char *value) _must_check_;
int	 user_add_audience(struct dc_user *, const char *audience) _must_check_;
bool	 user_in_group(const struct dc_user *, const char *group);
/*
 * The user as an authentication.k8s.io UserInfo (username, uid, groups,
 * extra): a new object in '*ret'; 0 or -ENOMEM.
 */
int	 user_info_json(const struct dc_user *, struct json_object **ret) _must_check_;
void	 user_clear(struct dc_user *);
/*
 * Runs the authorizer hook: system:masters always passes, and everyone
 * when no hook is installed. 'reason' gets the hook's explanation.
 */
bool	 auth_authorize(struct dc *, const struct dc_attrs *, char *reason, size_t size);
/*
 * A second authenticator (tokens.c's service-account JWTs), asked for
 * every bearer token the static tokens do not know, for 'audiences'
 * (NULL: the API audience). It fills 'user' (system:authenticated
 * included) and returns 0, KC_EUNAUTHORIZED (with upstream's reason in
 * 'err' when it has one), DC_DECLINED (not its token: 401 as well) or
 * -ENOMEM. NULL removes it.
 */
typedef int	auth_verify_fn(void *arg, const char *token, const char *const *audiences,
		    struct dc_user *user, char *err, size_t errsize);
void	 auth_set_verifier(struct dc_auth *, auth_verify_fn *, void *arg);

#endif

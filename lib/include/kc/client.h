/*
 * The REST client: Kubernetes verbs over a struct kc_transport_ops.
 *
 * A resource is described by a const struct kc_resource (group, version,
 * plural, kind, scope); the built-ins Trainyard uses are below and any
 * other group/version/resource, custom resources included, is described
 * the same way. Each verb takes an options struct meant for designated
 * initializers:
 *
 *	r = kc_client_list(cl, &(struct kc_list_opts){
 *		.res = &kc_res_pods,
 *		.ns = "team-a",
 *		.label_selector = "trainyard.dev/run=r1",
 *	}, &list, &st);
 *
 * Objects go in and come out as json-c trees. Inputs are borrowed and
 * never modified; results are new references the caller puts. Out
 * parameters are written only on success.
 *
 * Names, namespaces and subresources are checked before anything is sent
 * (-EINVAL, nothing reaches the server). Query values are percent-encoded
 * (RFC 3986); path segments never need it, because the checks only let
 * through characters that are legal in a segment.
 *
 * Errors. An answer other than 2xx is decoded as a metav1.Status and
 * mapped to a libkc code with kc_err_from_http(): KC_ENOTFOUND, KC_EEXISTS
 * (409 AlreadyExists) and KC_ECONFLICT (409 Conflict), KC_EINVALID (422,
 * with the field causes in st->causes), KC_ETHROTTLED (429, Retry-After in
 * st->retry_after_ms), KC_EEXPIRED (410 Expired, e.g. a stale continue
 * token), and so on; 'st' gets the HTTP code, reason and message. A body
 * that is not a Status (a proxy's "404 page not found") maps by HTTP code
 * with the text as message. A 2xx body that is not JSON is KC_EPARSE; one
 * larger than max_response is -E2BIG. Transport failures pass through
 * (KC_ETRANSPORT, KC_ETLS, KC_ETIMEOUT, -ECANCELED, -ENOMEM).
 *
 * Retries. Only reads (get, list, list_all, get_path) are marked
 * idempotent, so only they are retried by the transport on transport
 * errors, 429 and 5xx. A POST may have been applied before the answer was
 * lost, and a retried create then fails with AlreadyExists; a PUT or
 * DELETE carrying a resourceVersion or precondition would be safe, but
 * one without is a blind overwrite or a second delete, and the client
 * cannot tell which the caller meant. Writes therefore fail fast and the
 * caller, which knows, decides: a controller simply requeues.
 *
 * Threads: a client belongs to one thread at a time (it owns one
 * transport handle); only kc_client_cancel() may be called from another.
 */
#ifndef KC_CLIENT_H
#define KC_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/kubeconfig.h>
#include <kc/macro.h>
#include <kc/transport.h>

/* Longest object name (DNS-1123 subdomain) and namespace (DNS-1123 label). */
#define KC_NAME_MAX		253
#define KC_NAMESPACE_MAX	63

/* Longest request path with its query string. */
#define KC_URL_MAX		(32u << 10)

/* kc_client_list_all(): default page size and item ceiling. */
#define KC_LIST_PAGE_DEFAULT	500
#define KC_LIST_ALL_MAX_DEFAULT	100000
#define KC_LIST_ALL_PAGES_MAX	100000

/*
 * A group/version/resource. 'group' is "" (or NULL) for the core group,
 * served under /api/<version>; every other group is under
 * /apis/<group>/<version>. 'resource' is the lower-case plural.
 */
struct kc_resource {
	const char	*group;
	const char	*version;
	const char	*resource;
	const char	*kind;
	bool		 namespaced;
};

/* Descriptors of the built-in resources Trainyard uses; read-only. */
extern const struct kc_resource kc_res_pods;
extern const struct kc_resource kc_res_services;
extern const struct kc_resource kc_res_endpoints;
extern const struct kc_resource kc_res_namespaces;
extern const struct kc_resource kc_res_nodes;
extern const struct kc_resource kc_res_configmaps;
extern const struct kc_resource kc_res_secrets;
extern const struct kc_resource kc_res_serviceaccounts;
extern const struct kc_resource kc_res_events;		/* core/v1 */
extern const struct kc_resource kc_res_events_v1;	/* events.k8s.io/v1 */
extern const struct kc_resource kc_res_networkpolicies;
extern const struct kc_resource kc_res_leases;
extern const struct kc_resource kc_res_customresourcedefinitions;
extern const struct kc_resource kc_res_roles;
extern const struct kc_resource kc_res_rolebindings;
extern const struct kc_resource kc_res_clusterroles;
extern const struct kc_resource kc_res_clusterrolebindings;
extern const struct kc_resource kc_res_priorityclasses;
extern const struct kc_resource kc_res_resourcequotas;
extern const struct kc_resource kc_res_limitranges;
extern const struct kc_resource kc_res_persistentvolumeclaims;

struct kc_client;
struct kc_ratelimit;

/*
 * What kc_client_opts.observe hears after every request: for metrics
 * (API requests by verb, resource and code, with latency).
 */
struct kc_request_info {
	const char	*verb;		/* "get", "list", "watch", "create", "update",
					   "patch", "delete", "deletecollection" */
	const struct kc_resource *res;	/* NULL for kc_client_get_path() */
	const char	*method;	/* "GET", "POST", ... */
	const char	*path;		/* path and query as sent */
	int		 http_code;	/* 0 when no answer arrived */
	int		 result;	/* 0 or the code the call returns */
	uint64_t	 latency_ms;	/* kc_clock time from sending to the end
					   (for a watch: how long it ran) */
	uint64_t	 throttle_ms;	/* of which waiting on opts.limiter */
};

/*
 * Called on the thread that made the request, once it ended (requests
 * refused by the checks before sending are not reported). Must not call
 * back into the same client.
 */
typedef void	kc_client_observe_fn(void *arg, const struct kc_request_info *info);

struct kc_client_opts {
	const struct kc_rest_config *rc;	/* required; the transport copies it */
	const struct kc_transport_ops *ops;	/* NULL: kc_transport_curl */
	double		 qps;		/* <= 0: no client-side rate limit */
	unsigned	 burst;		/* 0: 1 */
	unsigned	 max_retries;	/* retries of idempotent requests */
	uint32_t	 backoff_base_ms;	/* 0: the transport's default */
	uint32_t	 backoff_max_ms;
	uint32_t	 connect_timeout_ms;	/* 0: 10 s */
	uint32_t	 timeout_ms;	/* per request, 0: 60 s; not for watches */
	size_t		 max_response;	/* 0: KC_RESPONSE_MAX_DEFAULT */
	const char	*user_agent;	/* NULL: "trainyard/<version>" */
	/*
	 * A token bucket shared with other clients (<kc/ratelimit.h>); owned
	 * by the caller, who frees it after this client. When set it replaces
	 * qps/burst: every request and every watch takes one token from it
	 * before it is sent (the transport's retries of a read do not take
	 * more), and kc_client_cancel() interrupts the wait.
	 */
	struct kc_ratelimit *limiter;
	kc_client_observe_fn *observe;	/* NULL: none */
	void		*observe_arg;
};

/*
 * Creates a client: opens a transport instance for opts->rc. -EINVAL when
 * 'opts' or opts->rc is missing; otherwise what the transport's open()
 * returns (-ENOMEM, KC_ECONFIG, KC_ETLS for bad certificates). '*ret' is
 * written only on success. The client is for one thread at a time.
 */
int	kc_client_new(const struct kc_client_opts *opts, struct kc_client **ret,
	    struct kc_status *st) _must_check_;

/* Closes the transport and frees the client. NULL is fine; returns NULL. */
struct kc_client *kc_client_free(struct kc_client *);

KC_DEFINE_CLEANUP(struct kc_client, kc_client_free)

/*
 * The rest config's namespace ("default" when it names none). Borrowed
 * from the client, valid until kc_client_free().
 */
const char	*kc_client_namespace(const struct kc_client *);

/*
 * Makes the request or watch running on 'cl' in another thread (or the
 * next one to start) fail promptly with -ECANCELED, and every later one
 * too until kc_client_reset_cancel(). Callable from any thread while the
 * client is alive; not async-signal-safe.
 */
void	kc_client_cancel(struct kc_client *);

/* Clears a cancellation so the client can be used again. Owner thread. */
void	kc_client_reset_cancel(struct kc_client *);

/* fieldValidation on writes; DEFAULT sends nothing (the server's Warn). */
enum kc_field_validation {
	KC_FIELD_VALIDATION_DEFAULT = 0,
	KC_FIELD_VALIDATION_STRICT,
	KC_FIELD_VALIDATION_WARN,
	KC_FIELD_VALIDATION_IGNORE,
};

/* resourceVersionMatch on lists; UNSET sends nothing. */
enum kc_rv_match {
	KC_RV_MATCH_UNSET = 0,
	KC_RV_MATCH_NOT_OLDER_THAN,
	KC_RV_MATCH_EXACT,
};

/* DeleteOptions.propagationPolicy; DEFAULT sends nothing. */
enum kc_propagation {
	KC_PROPAGATION_DEFAULT = 0,
	KC_PROPAGATION_FOREGROUND,
	KC_PROPAGATION_BACKGROUND,
	KC_PROPAGATION_ORPHAN,
};

/* The body of a PATCH. There is no default: say which. */
enum kc_patch_type {
	KC_PATCH_NONE = 0,
	KC_PATCH_MERGE,		/* application/merge-patch+json (RFC 7386) */
	KC_PATCH_JSON,		/* application/json-patch+json (RFC 6902) */
	KC_PATCH_STRATEGIC,	/* application/strategic-merge-patch+json */
	KC_PATCH_APPLY,		/* application/apply-patch+yaml (server-side apply) */
};

struct kc_get_opts {
	const struct kc_resource *res;
	const char	*ns;		/* required for namespaced resources */
	const char	*name;		/* required */
	const char	*subresource;	/* "status", "scale"; NULL: the object */
	const char	*resource_version;	/* NULL: latest; "0": any cached */
};

/*
 * GET one object: '*ret' is a new reference to the decoded body.
 * KC_ENOTFOUND when it does not exist.
 */
int	kc_client_get(struct kc_client *cl, const struct kc_get_opts *opts,
	    struct json_object **ret, struct kc_status *st) _must_check_;

struct kc_json_filter;

struct kc_list_opts {
	const struct kc_resource *res;
	const char	*ns;		/* NULL: all namespaces (or cluster-scoped) */
	const char	*label_selector;
	const char	*field_selector;
	uint64_t	 limit;		/* 0: no limit (list_all: KC_LIST_PAGE_DEFAULT) */
	const char	*cont;		/* continue token of the previous page */
	const char	*resource_version;
	enum kc_rv_match rv_match;	/* needs resource_version */
	uint32_t	 timeout_s;	/* server-side timeoutSeconds; 0: none */
	size_t		 max_items;	/* list_all only; 0: KC_LIST_ALL_MAX_DEFAULT */
	const struct kc_json_filter *filter;	/* members of each item to build
					   (kc/jsonstream.h); NULL: all */
};

/*
 * GET a collection, one page: '*ret' is the List object as served
 * (metadata.continue set when more pages remain).
 */
int	kc_client_list(struct kc_client *cl, const struct kc_list_opts *opts,
	    struct json_object **ret, struct kc_status *st) _must_check_;

/*
 * Lists every page, following metadata.continue, and returns one List:
 * the first page's object with the items of all pages, in order, and no
 * continue token. opts->cont must be NULL. -E2BIG when more than
 * opts->max_items items (or KC_LIST_ALL_PAGES_MAX pages) arrive;
 * KC_EEXPIRED when a continue token expired mid-way (list again from
 * scratch); KC_EPARSE when a page has no items array.
 */
int	kc_client_list_all(struct kc_client *cl, const struct kc_list_opts *opts,
	    struct json_object **ret, struct kc_status *st) _must_check_;

struct kc_create_opts {
	const struct kc_resource *res;
	const char	*ns;		/* NULL: the object's metadata.namespace */
	const char	*name;		/* with 'subresource' only: its parent */
	const char	*subresource;	/* "eviction", "binding", "token" */
	bool		 dry_run;	/* dryRun=All */
	const char	*field_manager;
	enum kc_field_validation field_validation;
};

/*
 * POST 'obj' to the collection (or to name/subresource). '*ret', when
 * 'ret' is not NULL, is the created object as the server returned it.
 * KC_EEXISTS when the name is taken, KC_EINVALID on validation errors.
 */
int	kc_client_create(struct kc_client *cl, const struct kc_create_opts *opts,
	    const struct json_object *obj, struct json_object **ret,
	    struct kc_status *st) _must_check_;

struct kc_update_opts {
	const struct kc_resource *res;
	const char	*ns;		/* NULL: the object's metadata.namespace */
	const char	*name;		/* NULL: the object's metadata.name */
	const char	*subresource;	/* "status" for the status subresource */
	bool		 dry_run;
	const char	*field_manager;
	enum kc_field_validation field_validation;
};

/*
 * PUT 'obj' as it is: its metadata.resourceVersion, when present, makes
 * the write conditional (KC_ECONFLICT when stale); without one most
 * built-ins are overwritten unconditionally and custom resources refuse
 * (KC_EINVALID). A name or namespace in opts that differs from the
 * object's is -EINVAL.
 */
int	kc_client_update(struct kc_client *cl, const struct kc_update_opts *opts,
	    const struct json_object *obj, struct json_object **ret,
	    struct kc_status *st) _must_check_;

struct kc_patch_opts {
	const struct kc_resource *res;
	const char	*ns;
	const char	*name;		/* required */
	const char	*subresource;
	enum kc_patch_type type;	/* required */
	bool		 dry_run;
	const char	*field_manager;	/* required for KC_PATCH_APPLY */
	enum kc_field_validation field_validation;
	bool		 force;		/* KC_PATCH_APPLY only: take over fields */
};

/*
 * PATCH the object with 'patch': a JSON array for KC_PATCH_JSON, an
 * object for the others (server-side apply sends JSON, which is YAML).
 * -EINVAL, before sending, for a missing type, an apply without
 * field_manager, 'force' on anything but apply, or a patch of the wrong
 * JSON type.
 */
int	kc_client_patch(struct kc_client *cl, const struct kc_patch_opts *opts,
	    const struct json_object *patch, struct json_object **ret,
	    struct kc_status *st) _must_check_;

struct kc_apply_opts {
	const struct kc_resource *res;
	const struct json_object *obj;	/* the desired state; required */
	const char	*ns;		/* NULL: the object's */
	const char	*name;		/* NULL: the object's */
	const char	*subresource;
	const char	*field_manager;	/* required */
	bool		 force;
	bool		 dry_run;
	enum kc_field_validation field_validation;
};

/*
 * Server-side apply of opts->obj: kc_client_patch() with KC_PATCH_APPLY,
 * name and namespace taken from the object unless given. Creates the
 * object when absent.
 */
int	kc_client_apply(struct kc_client *cl, const struct kc_apply_opts *opts,
	    struct json_object **ret, struct kc_status *st) _must_check_;

struct kc_delete_opts {
	const struct kc_resource *res;
	const char	*ns;
	const char	*name;		/* required */
	enum kc_propagation propagation;
	bool		 has_grace_period;	/* send grace_period_s (0 is "now") */
	int64_t		 grace_period_s;
	const char	*precondition_uid;
	const char	*precondition_rv;
	bool		 dry_run;
};

/*
 * DELETE one object with a DeleteOptions body. '*ret', when 'ret' is not
 * NULL, is what the server returned: the object (still there with a
 * deletionTimestamp when finalizers hold it) or a Status. KC_ENOTFOUND
 * when absent; KC_ECONFLICT when a precondition fails.
 */
int	kc_client_delete(struct kc_client *cl, const struct kc_delete_opts *opts,
	    struct json_object **ret, struct kc_status *st) _must_check_;

struct kc_delete_collection_opts {
	const struct kc_resource *res;
	const char	*ns;		/* required for namespaced resources */
	const char	*label_selector;
	const char	*field_selector;
	enum kc_propagation propagation;
	bool		 has_grace_period;
	int64_t		 grace_period_s;
	bool		 dry_run;
};

/*
 * DELETE every object of the collection matching the selectors (all of
 * them when none is given). '*ret', when not NULL, is the returned List
 * or Status.
 */
int	kc_client_delete_collection(struct kc_client *cl,
	    const struct kc_delete_collection_opts *opts, struct json_object **ret,
	    struct kc_status *st) _must_check_;

/*
 * GET a path that is not a resource ("/version", "/apis") and decode the
 * answer, which must be a JSON object. 'path' starts with '/' and may
 * carry a query string the caller already encoded; spaces, control bytes,
 * '#' and non-ASCII bytes are -EINVAL.
 */
int	kc_client_get_path(struct kc_client *cl, const char *path,
	    struct json_object **ret, struct kc_status *st) _must_check_;

/*
 * Name checks as the client applies them: 0, or -EINVAL with the reason
 * in 'st'. A name is 1..KC_NAME_MAX bytes of RFC 3986 path-segment
 * characters without '%' and is not "." or ".."; a namespace is a
 * DNS-1123 label.
 */
int	kc_client_check_name(const char *name, struct kc_status *st);
int	kc_client_check_namespace(const char *ns, struct kc_status *st);

struct kc_buf;

/*
 * Appends "?key=value" (or "&key=value" once 'b' holds a '?'), the value
 * percent-encoded as every kc_client_* query is (RFC 3986 unreserved
 * characters kept): for requests made outside the client, such as
 * pods/exec over WebSocket. A NULL value appends nothing; -E2BIG or
 * -ENOMEM from the buffer.
 */
int	kc_client_query_add(struct kc_buf *b, const char *key, const char *value)
	    _must_check_;

#endif

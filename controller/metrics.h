/*
 * metrics.h: trainyard-controller's metrics registry and its HTTP server
 * (/metrics, /healthz, /readyz).
 *
 * One struct metrics per process holds every metric family the controller
 * exports (names in metrics.c's table, Prometheus conventions: the
 * trainyard_ prefix, base units, _total counters). The program feeds it
 * from wherever the events happen, all functions thread-safe:
 *
 *	kc_client_opts.observe = metrics_client_observe	(API requests)
 *	kc_workqueue_opts.observe = metrics_workqueue_observe	(queue latency)
 *	metrics_reconcile()      after each reconcile
 *	metrics_session_ended(), metrics_all_running(),
 *	metrics_pods_created(), metrics_pods_deleted()   from reconcile_run.c
 *	metrics_set_leader(), metrics_set_ready()        from main.c / manager.c
 *	metrics_set_api_version()                        from manager.c
 *
 * and, for what is cheaper to read than to count (work-queue depth,
 * informer counters, runs by phase), a collect callback that runs on the
 * server thread at the start of every scrape and calls
 * metrics_collect_workqueue(), metrics_collect_informer() and
 * metrics_set_runs().
 *
 * Cardinality is bounded: each family holds at most a fixed number of
 * label combinations (metrics.c's table); observations of new ones past
 * that are recorded under the label values "_other". Label values are cut
 * to METRICS_LABEL_MAX - 1 bytes and made valid UTF-8.
 *
 * The server is libwebsockets in a thread of its own with its own context,
 * HTTP/1.1 (the metrics listener over TLS with bearer-token authentication
 * and authorization when secure, below), GET and HEAD only (405 otherwise), 404 for other paths,
 * on one or two listen addresses (--metrics-bind-address and
 * --health-probe-bind-address; the same address twice is one listener).
 * Every path is served on every listener.
 */
#ifndef TY_METRICS_H
#define TY_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kc/buf.h>
#include <kc/client.h>
#include <kc/connguard.h>
#include <kc/err.h>
#include <kc/informer.h>
#include <kc/kubeconfig.h>
#include <kc/macro.h>
#include <kc/workqueue.h>

#define METRICS_CONNS_MAX	1024		/* connections per listener */
#define METRICS_REQUEST_S	5		/* a request's line and headers */
#define METRICS_LABEL_MAX	64		/* bytes of a label value, with NUL */
#define METRICS_TEXT_MAX	(8u << 20)	/* largest /metrics answer */
#define METRICS_REASON_MAX	256		/* the /readyz reason, with NUL */
#define METRICS_TOKEN_MAX	8192		/* a scrape's bearer token */

struct metrics;
struct metrics_auth;

/*
 * Prepares the SSL_CTX (passed as void *) of the secure metrics listener:
 * its certificate, TLS version floor. 0 or -1. webhook_tls_setup() is one.
 */
typedef int	metrics_tls_fn(void *arg, void *ssl_ctx);

/* Called on the server thread before each scrape is rendered. */
typedef void	metrics_collect_fn(void *arg, struct metrics *m);

struct metrics_opts {
	/*
	 * "HOST:PORT", ":PORT" (every interface) or "[V6]:PORT"; port 0 lets
	 * the kernel pick (tests). NULL, "" or "0": no listener. When both
	 * are off metrics_start() starts nothing.
	 */
	const char	*metrics_addr;
	const char	*health_addr;
	/*
	 * Secure /metrics (--metrics-secure): both set, or both NULL (plain
	 * HTTP). The metrics listener then speaks TLS set up by 'tls_setup',
	 * and each /metrics request needs a bearer token 'auth' allows
	 * (401 without or with a bad one, 403 when not allowed). The health
	 * listener stays plain and must be another address. 'auth' is the
	 * caller's and must outlive the server.
	 */
	metrics_tls_fn	*tls_setup;
	void		*tls_arg;
	struct metrics_auth *auth;
};

struct metrics_auth_opts {
	const struct kc_rest_config *rc;	/* the API server */
	const struct kc_transport_ops *ops;	/* NULL: libcurl (tests: a fake) */
	uint32_t	 ttl_ms;		/* decisions are cached; 0: 10 s */
};

/*
 * A scrape authenticator: TokenReview (authentication.k8s.io/v1), then
 * SubjectAccessReview (authorization.k8s.io/v1) for GET on the
 * non-resource URL /metrics. Errors as kc_client_new().
 */
int	metrics_auth_new(const struct metrics_auth_opts *opts, struct metrics_auth **ret,
	    struct kc_status *st) _must_check_;

/* NULL is fine; returns NULL. */
struct metrics_auth *metrics_auth_free(struct metrics_auth *);

/*
 * Decides a token: 200 allowed, 401 not authenticated, 403 not allowed
 * (the reason in 'why'), 500 when the API server cannot answer (not
 * cached). Cached answers come at once; others make up to two API
 * requests. One caller at a time (the server's auth thread); -ENOMEM.
 */
int	metrics_auth_check(struct metrics_auth *, const char *token, char *why,
	    size_t size);

/* The cached decision for a token (as metrics_auth_check()), or 0. Any thread. */
int	metrics_auth_cached(struct metrics_auth *, const char *token, char *why,
	    size_t size);

/*
 * A registry with every family and trainyard_build_info{version} = 1.
 * -ENOMEM. '*ret' is written only on success.
 */
int	metrics_new(const char *version, struct metrics **ret) _must_check_;

/* Stops the server if it runs, frees everything. NULL is fine; returns NULL. */
struct metrics *metrics_free(struct metrics *);

/*
 * Listens on the addresses of 'opts' and serves from a new thread. 0;
 * KC_ECONFIG with "ADDRESS: reason" in 'st' for an address that does
 * not parse or cannot be bound; -EBUSY if already started; -ENOMEM.
 */
int	metrics_start(struct metrics *, const struct metrics_opts *opts,
	    struct kc_status *st) _must_check_;

/* Stops the server and joins its thread. Idempotent; any thread but its own. */
void	metrics_stop(struct metrics *);

/*
 * The port a listener is bound to (the metrics one, or the health one
 * when 'health'), or -1 when there is none. After metrics_start().
 */
int	metrics_port(struct metrics *, bool health);

/*
 * Parses a bind address into 'host' ("" for every interface) and
 * '*ret_port' (-1 when the address says "off"). 0 or -EINVAL.
 */
int	metrics_parse_addr(const char *addr, char *host, size_t size, int *ret_port)
	    _must_check_;

/*
 * Sets the scrape-time callback (NULL: none). Any time, any thread but
 * the callback's own: once it returns, the previous callback is not
 * running and will not run again, so metrics_set_collect(m, NULL, NULL)
 * comes before freeing what the callback reads.
 */
void	metrics_set_collect(struct metrics *, metrics_collect_fn *fn, void *arg);

/*
 * /readyz answers 200 "ok" once 'ready', else 500 "not ready: REASON"
 * (reason copied, cut to METRICS_REASON_MAX - 1; NULL: "starting").
 * Starts not ready. Thread-safe.
 */
void	metrics_set_ready(struct metrics *, bool ready, const char *reason);

/*
 * Whether the conversion and admission webhook can serve ('why' when
 * not): webhook_ready() is one.
 */
typedef bool	metrics_ready_fn(void *arg, char *why, size_t size);

/*
 * The health listener's /readyz/webhook answers 200 "ok" when 'fn' says
 * ready, else 500 "not ready: WHY"; 404 while none is set (no webhook).
 * The readiness probe goes there, so no webhook traffic can starve it.
 * Thread-safe; 'arg' must outlive the server or be unset first.
 */
void	metrics_set_webhook_ready(struct metrics *, metrics_ready_fn *fn, void *arg);

/*
 * trainyard_api_version_info{group,version} = 1 for the version followed
 * now; the previous series goes. Thread-safe.
 */
void	metrics_set_api_version(struct metrics *, const char *group, const char *version);

/* trainyard_leader: 1 while this process leads. Thread-safe. */
void	metrics_set_leader(struct metrics *, bool leader);

/*
 * A kc_client_observe_fn: 'arg' is the struct metrics. Counts
 * trainyard_api_requests_total{verb,resource,code} (code "<error>" when
 * no answer came) and, except for watches, whose latency is how long they
 * ran, trainyard_api_request_duration_seconds{verb,resource}.
 */
void	metrics_client_observe(void *arg, const struct kc_request_info *info);

/*
 * One ConversionReview answered (webhook.c): 'version' the review's
 * ("v1", "v1beta1", "unknown"), 'result' ("success", "failure",
 * "invalid", "error"), 'desired' its desiredAPIVersion ("" when none),
 * 'objects' how many it held, 'seconds' how long the answer took:
 * trainyard_webhook_conversion_reviews_total{version,result},
 * _objects_total{desired_version,result} and _duration_seconds{result}.
 */
void	metrics_webhook_review(struct metrics *, const char *version, const char *result,
	    const char *desired, size_t objects, double seconds);

/*
 * One AdmissionReview answered (webhook.c): 'webhook' ("mutate",
 * "validate"), 'kind' of the object ("Run", "ProjectMember", "" for
 * others), 'result' ("allowed", "patched", "denied", "invalid",
 * "error"): trainyard_webhook_admission_reviews_total{webhook,kind,result}
 * and _admission_duration_seconds{webhook}.
 */
void	metrics_webhook_admission(struct metrics *, const char *webhook, const char *kind,
	    const char *result, double seconds);

/* trainyard_webhook_certificate_expiry_timestamp_seconds: the serving notAfter. */
void	metrics_webhook_cert_expiry(struct metrics *, double unix_s);

/* libwebsockets' log lines, at debug level: for lws_set_log_level(). */
void	metrics_lws_logger(int level, const char *line);

struct lws;
struct lws_context;

/* Services 'ctx' until '*stop' (then woken by lws_cancel_service()). */
void	metrics_lws_run(struct lws_context *ctx, atomic_bool *stop);

/*
 * The libwebsockets interface for a bind address's host: "127.0.0.1" for
 * "localhost", NULL (every interface) for "", "0.0.0.0" and "::".
 */
const char *metrics_lws_iface(const char *host);

/*
 * An HTTP/1.1 answer written from libwebsockets' writable callbacks, for
 * the controller's servers (metrics.c, webhook.c): the status line, the
 * Content-Type, "Cache-Control: no-store", "Allow" when set, "Connection:
 * close" when close_after, the Content-Length, then the body (none for a
 * HEAD) in pieces. Zero it, fill status, ctype and body.
 */
struct metrics_http_out {
	struct kc_buf	 body;
	size_t		 off;		/* of the body, written */
	int		 status;
	const char	*ctype;
	const char	*allow;		/* NULL: no Allow header */
	bool		 head;		/* headers only */
	bool		 headers_sent;
	bool		 close_after;	/* the caller closes once written */
};

/*
 * Writes what one writable callback may: 1 when more is to come (the next
 * callback is asked for), 0 when the answer is out (the caller then ends
 * the transaction or closes), -1 when the connection failed. Server
 * thread only.
 */
int	metrics_http_write(struct lws *wsi, struct metrics_http_out *o);

/*
 * trainyard_http_connections{listener}, _connections_accepted_total and
 * _connections_dropped_total{listener,reason} from 'g' at each scrape,
 * until metrics_remove_guard() (before 'g' is freed). At most
 * METRICS_GUARDS_MAX listeners. Thread-safe.
 */
#define METRICS_GUARDS_MAX	4
void	metrics_add_guard(struct metrics *, const char *listener,
	    const struct kc_guard_lws *g);
void	metrics_remove_guard(struct metrics *, const struct kc_guard_lws *g);

/*
 * A kc_workqueue_observe_fn: 'arg' is the struct metrics. Feeds
 * trainyard_workqueue_queue_duration_seconds and _work_duration_seconds.
 */
void	metrics_workqueue_observe(void *arg, enum kc_workqueue_metric metric,
	    uint64_t ms);

/*
 * One reconcile ended with 'result' ("success", "error", "requeue_after"
 * are the expected values) after 'seconds': trainyard_reconcile_total and
 * trainyard_reconcile_duration_seconds, both by result. Thread-safe.
 */
void	metrics_reconcile(struct metrics *, const char *result, double seconds);

/* A session ended ('reason': "Succeeded", "Failed", ...) after 'duration_s'. */
void	metrics_session_ended(struct metrics *, const char *reason, double duration_s);

/* A session had all its pods running 'seconds' after it started. */
void	metrics_all_running(struct metrics *, double seconds);

/* Pods this process created or deleted. Thread-safe. */
void	metrics_pods_created(struct metrics *, unsigned n);
void	metrics_pods_deleted(struct metrics *, unsigned n);

/*
 * For the collect callback: mirror a queue's counters
 * (trainyard_workqueue_depth, _adds_total, _retries_total,
 * _unfinished_work_seconds, _longest_running_processor_seconds), an
 * informer's (trainyard_watch_restarts_total, trainyard_relists_total,
 * trainyard_cache_objects, by resource), and the Runs by phase
 * (trainyard_runs{phase}: phases not given drop to 0). Thread-safe.
 */
void	metrics_collect_workqueue(struct metrics *, const struct kc_workqueue_stats *s);
void	metrics_collect_informer(struct metrics *, const char *resource,
	    const struct kc_informer_stats *s);
void	metrics_set_runs(struct metrics *, const char *const *phases,
	    const uint64_t *counts, size_t n);

/*
 * Runs the collect callback, then appends the exposition (text format
 * 0.0.4: HELP and TYPE lines, one sample per line, process metrics last)
 * to 'out'. 0, or -E2BIG/-ENOMEM from the buffer (then emptied).
 * Thread-safe (the server calls it; tests too).
 */
int	metrics_render(struct metrics *, struct kc_buf *out) _must_check_;

#endif

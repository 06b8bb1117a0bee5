/*
 * The HTTP transport seam.
 *
 * The REST client (client.c) speaks to the API server only through a
 * struct kc_transport_ops. kc_transport_curl is libcurl; tests install
 * tests/fakes/fake_transport.c. The client cannot tell them apart.
 *
 * The transport owns everything below the HTTP semantics: TLS (the
 * config's CA, client certificate, server name, insecure mode), the
 * bearer token (re-read through kc_rest_config_token()), keep-alive and
 * HTTP/2 when offered, gzip, timeouts, the response size cap, the
 * client-side token-bucket rate limit, and retries with jittered
 * exponential backoff for transport errors, 5xx and 429 (honouring
 * Retry-After) when the request says it is idempotent. It does not map
 * HTTP codes to libkc errors: any HTTP answer is a success of the
 * transport, with the code in the response; the client maps it.
 *
 * A transport instance belongs to one thread at a time, except
 * ->cancel(), which any thread may call.
 */
#ifndef KC_TRANSPORT_H
#define KC_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kc/buf.h>
#include <kc/err.h>
#include <kc/kubeconfig.h>

#define KC_RESPONSE_MAX_DEFAULT	(64u << 20)	/* 64 MiB */

struct kc_transport_opts {
	const struct kc_rest_config *rc;	/* copied by open() */
	double		 qps;		/* <= 0: no client-side rate limit */
	unsigned	 burst;		/* bucket size; 0 means 1 */
	unsigned	 max_retries;	/* retries after the first try */
	uint32_t	 backoff_base_ms;	/* first retry delay; default 200 */
	uint32_t	 backoff_max_ms;	/* cap; default 10000 */
	uint32_t	 connect_timeout_ms;	/* 0: 10 s */
	uint32_t	 timeout_ms;	/* whole request, 0: 60 s; not for streams */
	size_t		 max_response;	/* 0: KC_RESPONSE_MAX_DEFAULT */
	const char	*user_agent;	/* NULL: "trainyard/<version>" */
	bool		 http1;		/* HTTP/1.1 only (webhooks), no h2 */
	/*
	 * "host:port" ("[::1]:port") every connection goes to instead of
	 * the server URL's host, which still names the Host header, the SNI
	 * and the certificate's verification name, as kube-apiserver calls
	 * a webhook Service at one of its endpoints. Read by open() only;
	 * NULL: the URL's host. Not with a different rc->tls_server_name.
	 */
	const char	*connect_to;
};

struct kc_http_req {
	const char	*method;	/* "GET", "POST", ... */
	const char	*path;		/* "/api/v1/pods?limit=5": path and query */
	const char	*accept;	/* NULL: "application/json" */
	const char	*content_type;	/* NULL unless there is a body */
	const char	*body;
	size_t		 body_len;
	bool		 idempotent;	/* may be retried */
	uint32_t	 timeout_ms;	/* 0: the transport's */
};

struct kc_http_resp {
	int		 status;	/* HTTP status code */
	char		 content_type[128];
	uint32_t	 retry_after_ms;	/* parsed Retry-After, 0 if none */
	struct kc_buf	 body;		/* the body; the transport inits it */
	unsigned	 retries;	/* retries it took */
};

/* Frees the body; the response may be reused. */
void	kc_http_resp_free(struct kc_http_resp *);

/*
 * A stream callback gets each piece of a 2xx body as it arrives. Return 0
 * to go on, or a negative code to stop the stream; that code is then what
 * ->stream() returns.
 */
typedef int	kc_chunk_fn(void *arg, const char *data, size_t len);

struct kc_transport_ops {
	const char	*name;

	/* A new instance for opts (which open copies). */
	int	 (*open)(const struct kc_transport_opts *, void **ret,
		    struct kc_status *);

	/*
	 * One request. 0 when an HTTP answer arrived (any status, body in
	 * 'resp', which open() initialized and the caller frees);
	 * KC_ETRANSPORT, KC_ETLS or KC_ETIMEOUT when none did after the
	 * retries; -E2BIG past max_response; -ECANCELED after ->cancel().
	 */
	int	 (*request)(void *, const struct kc_http_req *,
		    struct kc_http_resp *resp, struct kc_status *);

	/*
	 * A streamed request (watch, log follow). When the answer is 2xx each
	 * piece of the body goes to 'fn' and resp->body stays empty; for
	 * any other status the body is collected in resp->body (bounded) and
	 * 'fn' is never called. Streams are never retried. Returns 0 when
	 * the server ended the body, a callback's code, -ECANCELED after
	 * ->cancel(), or a transport error as for ->request().
	 */
	int	 (*stream)(void *, const struct kc_http_req *,
		    struct kc_http_resp *resp, kc_chunk_fn *fn, void *arg,
		    struct kc_status *);

	/*
	 * Makes the request or stream in progress (or the next one to start)
	 * return -ECANCELED promptly. Any thread; async-signal-unsafe.
	 */
	void	 (*cancel)(void *);

	/* Undoes cancel() so the instance can be used again. */
	void	 (*reset_cancel)(void *);

	void	*(*close)(void *);	/* NULL is fine; returns NULL */
};

/* The libcurl transport, the one kc_client_new() uses by default. */
extern const struct kc_transport_ops kc_transport_curl;

/*
 * A call that never waits, for an event loop (the devcluster's conversion
 * webhook caller): kc_transport_curl_start() sends 'req' on an instance
 * of kc_transport_curl (one call at a time, no rate limit, no retries),
 * and each kc_transport_curl_step() moves it on without blocking. 'req'
 * and its strings must stay valid until the call ends. _step() returns
 * 1 while the call runs, 0 once an HTTP answer arrived (any status, in
 * 'resp'), or an error as ->request() does, which frees resp's body.
 * ->close() abandons a call in progress. Call _step() from a timer
 * (the transfer makes progress only then); the request's timeout
 * counts from _start().
 */
int	kc_transport_curl_start(void *, const struct kc_http_req *, struct kc_http_resp *resp,
	    struct kc_status *);
int	kc_transport_curl_step(void *, struct kc_status *);

/*
 * Global setup of the curl transport: call once from main() before any
 * thread starts (curl_global_init()), and kc_transport_global_cleanup()
 * at exit.
 */
int	kc_transport_global_init(void);
void	kc_transport_global_cleanup(void);

#endif

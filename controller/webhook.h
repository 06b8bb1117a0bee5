/*
 * webhook.h: trainyard-controller's conversion webhook: the pure
 * ConversionReview handler (review.c) and the HTTPS server that feeds it
 * (webhook.c).
 *
 * review.c takes the bytes of a POST /convert body and returns the bytes
 * of the answer and its HTTP status, with no I/O, clock or global state,
 * so the unit suites drive it with golden files and malformed input. The
 * conversion itself comes in as a function with ty_convert()'s signature
 * (convert.c), so the handler can be tested on its own.
 *
 * webhook.c is a libwebsockets server in a thread of its own, started
 * before leader election and served by every replica: POST /convert,
 * GET /readyz and /healthz, over TLS 1.2+ with the certificate of a
 * directory (tls.crt, tls.key) or of memory (self-managed certificates,
 * certs.c), swapped for new connections when it changes while the
 * established ones keep theirs.
 */
#ifndef TY_WEBHOOK_H
#define TY_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <kc/buf.h>
#include <kc/err.h>
#include <kc/macro.h>

struct admission_ops;
struct metrics;

/* review.c */

#define REVIEW_BODY_MAX		(3u << 20)	/* kube-apiserver's request limit */
#define REVIEW_OBJECTS_MAX	4096		/* objects in one review */
#define REVIEW_ANSWER_MAX	(16u << 20)	/* the answer's bytes */
#define REVIEW_FIELD_MAX	256		/* uid, desiredAPIVersion */

/*
 * ty_convert()'s signature: converts 'obj' to the apiVersion 'to' into a
 * new tree '*ret'. KC_EINVALID with the field in st->message for an
 * object it cannot convert.
 */
typedef int	review_convert_fn(const struct json_object *obj, const char *to,
		    struct json_object **ret, struct kc_status *st);

/* What one review was, for the metrics and the log. */
struct review_info {
	const char	*version;	/* "v1", "v1beta1"; "unknown" for a 400 */
	const char	*result;	/* "success", "failure", "invalid" (400) */
	size_t		 objects;	/* objects in the request */
	char		 to[REVIEW_FIELD_MAX];	/* desiredAPIVersion ("" for a 400) */
	char		 message[512];	/* the failure, "" on success */
};

/*
 * Handles one ConversionReview (apiextensions.k8s.io/v1 or v1beta1) of
 * 'len' bytes: converts each of request.objects with 'convert', in order,
 * and appends to 'out' (a kc_buf the caller initialized, bounded by the
 * caller) a ConversionReview of the same apiVersion with response.uid =
 * request.uid. Returns the HTTP status: 200 with result.status
 * "Success" and response.convertedObjects, or 200 with result.status
 * "Failure" and a message that names the object (index,
 * namespace/name, apiVersion, kind) and the field, when an object cannot
 * be converted (nothing is converted then); 400 with a plain-text reason
 * in 'out' for a body that is not a ConversionReview (not JSON, nested
 * deeper than KC_JSON_DEPTH_MAX, another kind or apiVersion, no request,
 * uid, desiredAPIVersion or objects list); 413 past REVIEW_BODY_MAX.
 * -ENOMEM or -E2BIG (the answer outgrew 'out') when no answer could be
 * made. 'info' (may be NULL) says what the review was. Thread-safe.
 */
int	review_handle(const char *body, size_t len, review_convert_fn *convert,
	    struct kc_buf *out, struct review_info *info) _must_check_;

/*
 * Converts a built-in Run from trainyard.dev/v1alpha1 to v1beta1 and
 * back through review_handle() and checks the round trip gives the Run
 * back. 0, or KC_EINVALID with the reason in 'st'. For /readyz.
 */
int	review_selftest(review_convert_fn *convert, struct kc_status *st) _must_check_;

/* webhook.c */

#define WEBHOOK_CONNS_MAX	1024		/* default connection cap */
#define WEBHOOK_BODIES_MAX	(64u << 20)	/* request bodies buffered at once */
#define WEBHOOK_PEM_MAX		(256u << 10)	/* tls.crt or tls.key */

struct webhook;

struct webhook_opts {
	/*
	 * "HOST:PORT", ":PORT" or "[V6]:PORT"; port 0 lets the kernel pick
	 * (tests). NULL, "" or "0": webhook_start() starts nothing.
	 */
	const char		*addr;
	/*
	 * Directory with tls.crt and tls.key, re-read every 'reload_ms'
	 * when their size, mtime or content changed. NULL: certificates
	 * come only from webhook_set_cert() (self-managed).
	 */
	const char		*cert_dir;
	uint32_t		 reload_ms;	/* 0: 2000 */
	review_convert_fn	*convert;	/* required: ty_convert */
	/* POST /mutate and /validate; NULL: not served. Called on the server thread. */
	const struct admission_ops *admission;
	struct metrics		*metrics;	/* NULL: none recorded */
	unsigned		 max_conns;	/* 0: WEBHOOK_CONNS_MAX */
	size_t			 body_max;	/* 0: REVIEW_BODY_MAX */
	unsigned		 request_s;	/* TLS handshake, line and headers; 0: METRICS_REQUEST_S */
	unsigned		 timeout_s;	/* a body's and an answer's deadline; 0: 10 */
	unsigned		 keepalive_s;	/* idle keep-alive; 0: 60 */
};

/*
 * Listens on opts->addr with TLS and serves from a new thread. A
 * certificate is not needed to start: until one is loaded, handshakes
 * fail and /readyz (once one is) says why. 0 (also when the address is
 * off); KC_ECONFIG with "ADDRESS: reason" for an address that does not
 * parse or cannot be bound; -ENOMEM. '*ret' is the caller's
 * (webhook_free()); NULL when the address is off.
 */
int	webhook_start(const struct webhook_opts *opts, struct webhook **ret,
	    struct kc_status *st) _must_check_;

/* Stops the server, joins its thread, frees it. NULL is fine; returns NULL. */
struct webhook *webhook_free(struct webhook *);

KC_DEFINE_CLEANUP(struct webhook, webhook_free)

/* The bound port. */
int	webhook_port(const struct webhook *);

/*
 * Serves 'cert_pem' (the leaf first, then its chain) with 'key_pem' to
 * new connections from now on; established connections keep the one
 * they have. 0; KC_EPARSE or -EINVAL (the key does not match) with the
 * reason in 'st', and then the certificate in use stays. Any thread.
 */
int	webhook_set_cert(struct webhook *, const char *cert_pem, size_t cert_len,
	    const char *key_pem, size_t key_len, struct kc_status *st) _must_check_;

/*
 * Checks the certificate directory now (as the timer does): 1 when a new
 * certificate was loaded, 0 when nothing changed, < 0 with the reason in
 * 'st' when the files are unreadable or invalid (the old one stays).
 */
int	webhook_reload(struct webhook *, struct kc_status *st) _must_check_;

/* Whether /readyz answers 200; the reason in 'reason' when not. */
bool	webhook_ready(struct webhook *, char *reason, size_t size);

/*
 * Sets up another server's SSL_CTX (a void * so that callers need no
 * OpenSSL) to serve this webhook's certificate, renewals included, with
 * TLS 1.2 as the floor: secure /metrics uses it (a metrics_tls_fn, 'arg'
 * is the webhook). 0, or -1 when OpenSSL refuses.
 */
int	webhook_tls_setup(void *arg, void *ssl_ctx);

/* The notAfter of the certificate being served (unix seconds), 0 if none. */
int64_t	webhook_cert_expiry(struct webhook *);

#endif

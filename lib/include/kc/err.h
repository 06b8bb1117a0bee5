/*
 * One error vocabulary for libkc and the programs.
 *
 * A function that can fail returns an int: 0 (or a count) on success and a
 * negative code on failure. Operating-system errors pass through as -errno;
 * libkc's own codes come from KC_ERR_MAP below, all below -1000 so they
 * never collide with an errno value.
 *
 * Each row of KC_ERR_MAP is (NAME, value, HTTP code, metav1.Status reason,
 * text). Only lib/client.c maps an HTTP answer to a code, and the
 * devcluster reads the table in reverse for its error replies.
 */
#ifndef KC_ERR_H
#define KC_ERR_H

#include <stdint.h>

#include <kc/macro.h>

/* Append only: never renumber, reuse or remove a code. */
#define KC_ERR_MAP(X)							\
	X(NOTFOUND,     -1001, 404, "NotFound",        "object not found")	\
	X(EXISTS,       -1002, 409, "AlreadyExists",   "object already exists") \
	X(CONFLICT,     -1003, 409, "Conflict",        "conflict: the object was modified") \
	X(EXPIRED,      -1004, 410, "Expired",         "resource version expired, relist") \
	X(INVALID,      -1005, 422, "Invalid",         "rejected by validation") \
	X(THROTTLED,    -1006, 429, "TooManyRequests", "too many requests")	\
	X(TRANSPORT,    -1007,   0, "",                "transport failure")	\
	X(FORBIDDEN,    -1008, 403, "Forbidden",       "forbidden")		\
	X(UNAUTHORIZED, -1009, 401, "Unauthorized",    "unauthorized")	\
	X(BADREQUEST,   -1010, 400, "BadRequest",      "bad request")	\
	X(TIMEOUT,      -1011, 504, "Timeout",         "timed out")		\
	X(PARSE,        -1012,   0, "",                "malformed input")	\
	X(GONE,         -1013, 410, "Gone",            "gone")		\
	X(INTERNAL,     -1014, 500, "InternalError",   "internal server error") \
	X(UNAVAILABLE,  -1015, 503, "ServiceUnavailable", "service unavailable") \
	X(METHOD,       -1016, 405, "MethodNotAllowed", "method not allowed")	\
	X(MEDIATYPE,    -1017, 415, "UnsupportedMediaType", "unsupported media type") \
	X(NOTACCEPTABLE, -1018, 406, "NotAcceptable",  "not acceptable")	\
	X(TOOLARGE,     -1019, 413, "RequestEntityTooLarge", "request entity too large") \
	X(SERVERTIMEOUT, -1020, 500, "ServerTimeout",  "server timeout")	\
	X(HTTP,         -1021,   0, "",                "unexpected HTTP status") \
	X(TLS,          -1022,   0, "",                "TLS or certificate failure") \
	X(CONFIG,       -1023,   0, "",                "invalid configuration")

enum kc_err {
#define X(name, val, http, reason, text)	KC_E##name = (val),
	KC_ERR_MAP(X)
#undef X
};

/*
 * The text for a code: the table's for libkc codes, strerror_r()'s for
 * -errno values. Always a static string; thread-safe.
 */
const char	*kc_strerror(int);

/* The symbolic name of a code, "KC_ECONFLICT" or "ENOMEM", for log fields. */
const char	*kc_err_name(int);

/* The HTTP code and Status reason of a libkc code; 0 and "" for others. */
int		 kc_err_http(int);
const char	*kc_err_reason(int);

/*
 * The code for a metav1.Status reason and HTTP code, as a client decodes an
 * error reply: the reason decides when it is one of the table's, else the
 * HTTP code's class (KC_EINTERNAL for 5xx, KC_EHTTP for the rest).
 */
int		 kc_err_from_http(int http_code, const char *reason);

/*
 * Error detail. The code says what kind of failure happened; this struct,
 * owned by the caller and usually on its stack, says the rest. Every libkc
 * function that takes one may be given NULL. It is written only on
 * failure; kc_status_clear() resets it.
 */
#define KC_STATUS_CAUSES_MAX	8
#define KC_STATUS_MESSAGE_MAX	512	/* bytes of st->message, with the NUL */

struct kc_status_cause {
	char		reason[48];	/* "FieldValueRequired" */
	char		field[128];	/* "spec.image" */
	char		message[256];
};

struct kc_status {
	int		http_code;	/* 0 when no response arrived */
	uint32_t	retry_after_ms;	/* from Retry-After; 0 if absent */
	char		reason[64];	/* metav1.Status.reason */
	char		message[KC_STATUS_MESSAGE_MAX];	/* Status.message or ours */
	unsigned	ncauses;	/* entries used in causes[] */
	struct kc_status_cause causes[KC_STATUS_CAUSES_MAX];
};

/* Zeroes every field of 'st' (NULL is fine), as a fresh one on the stack. */
void	kc_status_clear(struct kc_status *st);

/*
 * Resets 'st' (http_code, retry_after_ms, reason and causes from an
 * earlier failure never linger) and formats a message into st->message,
 * truncating, then returns 'code', so a failure and its detail leave in
 * one statement:
 *	return kc_status_set(st, KC_EPARSE, "line %d: bad indent", line);
 * The arguments may point into 'st' itself, as in prefixing its own
 * message: kc_status_set(st, r, "%s: %s", path, st->message). 'st' may be
 * NULL. Thread-safe for distinct 'st'.
 */
int	kc_status_set(struct kc_status *st, int code, const char *fmt, ...)
	    _printf_(3, 4);

#endif

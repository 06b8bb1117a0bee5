/*
 * The structured logger of the programs (trainyard-controller and
 * trainyard-devcluster). libkc itself never logs above debug level.
 *
 * A line is one event. Context travels as key=value fields: the fixed
 * ones of struct kc_log_ctx (action, kind, namespace, name, request id)
 * and any extra pairs given to kc_log_kv(). Two formats:
 *
 *	text: 2026-11-21T19:49:14.123Z info reconcile ns=a name=r1 rid=7
 *	      msg="pods created" pods=4		(one line)
 *	json: {"ts":"2026-11-21T19:49:14.123Z","level":"info","action":"reconcile",
 *	       "ns":"a","name":"r1","rid":7,"msg":"pods created","pods":"4"}
 *
 * Each line is formatted into a bounded buffer and written with a single
 * write(2), so lines from different threads never interleave. The level
 * is checked before any argument is formatted. Thread-safe, except the
 * setters, which are for startup.
 */
#ifndef KC_LOG_H
#define KC_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kc/macro.h>

enum kc_log_level {
	KC_LOG_DEBUG,
	KC_LOG_INFO,
	KC_LOG_WARN,
	KC_LOG_ERROR,
	KC_LOG_OFF,
};

enum kc_log_format {
	KC_LOG_TEXT,
	KC_LOG_JSON,
};

/* Longest line written; a longer message is cut and marked with "...". */
#define KC_LOG_LINE_MAX		8192

struct kc_log_ctx {
	const char	*action;	/* "reconcile", "watch", "request" */
	const char	*kind;
	const char	*ns;
	const char	*name;
	uint64_t	 rid;		/* reconcile or request id; 0: none */
};

struct kc_log_field {
	const char	*key;
	const char	*value;
};

/*
 * The level below which events are dropped (default info), the format
 * (default text) and the descriptor lines go to (default 2, stderr; the
 * logger never closes it). Plain settings for startup, before threads log.
 */
void	kc_log_set_level(enum kc_log_level);
void	kc_log_set_format(enum kc_log_format);
void	kc_log_set_fd(int fd);			/* default 2 (stderr) */

/* "debug", "info", "warn"/"warning", "error", "off"; -EINVAL otherwise. */
int	kc_log_parse_level(const char *, enum kc_log_level *ret) _must_check_;
/* "text", "json"; -EINVAL otherwise. */
int	kc_log_parse_format(const char *, enum kc_log_format *ret) _must_check_;

/* Whether an event at 'level' would be written; thread-safe. */
bool	kc_log_enabled(enum kc_log_level);

/*
 * Writes one event as one line with one write(2): the timestamp, the
 * level, the fields of 'ctx' (may be NULL), the message and then the
 * 'nfields' key=value 'fields' (pairs with a NULL key or value are
 * skipped). A message over 4096 bytes or a value over 1024 is cut and
 * marked "..."; a failed write is dropped. Nothing is formatted below the
 * level. Never allocates through kc_malloc(); thread-safe.
 */
void	kc_log(enum kc_log_level, const struct kc_log_ctx *ctx, const char *fmt, ...)
	    _printf_(3, 4);
void	kc_logv(enum kc_log_level, const struct kc_log_ctx *ctx,
	    const struct kc_log_field *fields, size_t nfields, const char *fmt, va_list);
void	kc_log_kv(enum kc_log_level, const struct kc_log_ctx *ctx,
	    const struct kc_log_field *fields, size_t nfields, const char *fmt, ...)
	    _printf_(5, 6);

/*
 * Logs at error level with the code's name and text appended as fields
 * ("err=KC_ECONFLICT error=...") and returns 'code', so a program can log
 * and return in one statement.
 */
int	kc_log_error_r(const struct kc_log_ctx *ctx, int code, const char *fmt, ...)
	    _printf_(3, 4);

#define kc_log_debug(ctx, ...) do {					\
	if (kc_log_enabled(KC_LOG_DEBUG))				\
		kc_log(KC_LOG_DEBUG, (ctx), __VA_ARGS__);		\
} while (0)
#define kc_log_info(ctx, ...)	kc_log(KC_LOG_INFO, (ctx), __VA_ARGS__)
#define kc_log_warn(ctx, ...)	kc_log(KC_LOG_WARN, (ctx), __VA_ARGS__)

#endif

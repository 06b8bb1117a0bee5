/*
 * log.c: the programs' structured logger.
 *
 * A line is built in a stack buffer of KC_LOG_LINE_MAX bytes and written
 * with one write(2); POSIX makes such writes atomic with respect to each
 * other for pipes up to PIPE_BUF and, in practice, for regular files
 * opened with O_APPEND, so concurrent threads never interleave. The JSON
 * format is built with json-c, so escaping is json-c's; the text format
 * is logfmt, quoting values that contain spaces, quotes or '='.
 *
 * The settings are plain globals written once at startup (STYLE.md's
 * "log hook" exception).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/log.h>
#include <kc/macro.h>
#include <kc/sbuf.h>
#include <kc/str.h>

#define LOG_MSG_MAX	4096	/* message bytes kept; the rest becomes "..." */
#define LOG_VALUE_MAX	1024	/* bytes kept of each field value */

static enum kc_log_level	log_level = KC_LOG_INFO;
static enum kc_log_format	log_format = KC_LOG_TEXT;
static int			log_fd = 2;

static const char *const level_names[] = {
	[KC_LOG_DEBUG] = "debug",
	[KC_LOG_INFO] = "info",
	[KC_LOG_WARN] = "warn",
	[KC_LOG_ERROR] = "error",
	[KC_LOG_OFF] = "off",
};

void
kc_log_set_level(enum kc_log_level l)
{
	log_level = l;
}

void
kc_log_set_format(enum kc_log_format f)
{
	log_format = f;
}

void
kc_log_set_fd(int fd)
{
	log_fd = fd;
}

int
kc_log_parse_level(const char *s, enum kc_log_level *ret)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(level_names); i++)
		if (strcasecmp(s, level_names[i]) == 0) {
			*ret = (enum kc_log_level)i;
			return 0;
		}
	if (strcasecmp(s, "warning") == 0) {
		*ret = KC_LOG_WARN;
		return 0;
	}
	return -EINVAL;
}

int
kc_log_parse_format(const char *s, enum kc_log_format *ret)
{
	if (strcasecmp(s, "text") == 0)
		*ret = KC_LOG_TEXT;
	else if (strcasecmp(s, "json") == 0)
		*ret = KC_LOG_JSON;
	else
		return -EINVAL;
	return 0;
}

bool
kc_log_enabled(enum kc_log_level l)
{
	return l >= log_level && l < KC_LOG_OFF;
}

static void
log_timestamp(char *buf, size_t size)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	if (kc_time_format_us((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000, KC_TIME_MILLI,
	    buf, size) < 0)
		(void)kc_strlcpy(buf, "1970-01-01T00:00:00.000Z", size);
}

static bool
needs_quotes(const char *v)
{
	if (*v == '\0')
		return true;
	for (; *v != '\0'; v++)
		if (*v <= ' ' || *v == '"' || *v == '=' || *v == '\\' || *v == 0x7f)
			return true;
	return false;
}

/* logfmt value: bare when safe, else quoted with \" \\ \n \t \xNN escapes. */
static void
line_put_value(struct kc_sbuf *l, const char *v, size_t max)
{
	size_t n = 0;

	if (!needs_quotes(v)) {
		n = strnlen(v, max);
		kc_sbuf_put(l, v, n);
		if (v[n] != '\0')
			kc_sbuf_puts(l, "...");
		return;
	}
	kc_sbuf_puts(l, "\"");
	for (; *v != '\0' && n < max; v++, n++) {
		char esc[8];
		unsigned char c = (unsigned char)*v;

		switch (c) {
		case '"':  kc_sbuf_puts(l, "\\\""); break;
		case '\\': kc_sbuf_puts(l, "\\\\"); break;
		case '\n': kc_sbuf_puts(l, "\\n"); break;
		case '\r': kc_sbuf_puts(l, "\\r"); break;
		case '\t': kc_sbuf_puts(l, "\\t"); break;
		default:
			if (c < 0x20 || c == 0x7f) {
				(void)snprintf(esc, sizeof(esc), "\\x%02x", c);
				kc_sbuf_puts(l, esc);
			} else
				kc_sbuf_put(l, (const char *)v, 1);
		}
	}
	if (*v != '\0')
		kc_sbuf_puts(l, "...");
	kc_sbuf_puts(l, "\"");
}

static void
line_put_field(struct kc_sbuf *l, const char *key, const char *value)
{
	kc_sbuf_puts(l, " ");
	kc_sbuf_puts(l, key);
	kc_sbuf_puts(l, "=");
	line_put_value(l, value, LOG_VALUE_MAX);
}

static void
json_add(struct json_object *o, const char *key, const char *value)
{
	char cut[LOG_VALUE_MAX + 4];

	if (strlen(value) > LOG_VALUE_MAX) {
		memcpy(cut, value, LOG_VALUE_MAX);
		memcpy(cut + LOG_VALUE_MAX, "...", 4);
		value = cut;
	}
	(void)json_object_object_add(o, key, json_object_new_string(value));
}

static void
format_json(struct kc_sbuf *l, const char *ts, enum kc_log_level level,
    const struct kc_log_ctx *ctx, const struct kc_log_field *fields,
    size_t nfields, const char *msg)
{
	struct json_object *o;
	const char *s;

	if ((o = json_object_new_object()) == NULL)
		return;
	json_add(o, "ts", ts);
	json_add(o, "level", level_names[level]);
	if (ctx != NULL) {
		if (ctx->action != NULL)
			json_add(o, "action", ctx->action);
		if (ctx->kind != NULL)
			json_add(o, "kind", ctx->kind);
		if (ctx->ns != NULL)
			json_add(o, "ns", ctx->ns);
		if (ctx->name != NULL)
			json_add(o, "name", ctx->name);
		if (ctx->rid != 0)
			(void)json_object_object_add(o, "rid",
			    json_object_new_uint64(ctx->rid));
	}
	json_add(o, "msg", msg);
	for (size_t i = 0; i < nfields; i++)
		if (fields[i].key != NULL && fields[i].value != NULL)
			json_add(o, fields[i].key, fields[i].value);
	s = json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	/* A line too long for the buffer would be invalid JSON: drop fields. */
	if (s != NULL && strlen(s) + 2 <= KC_LOG_LINE_MAX)
		kc_sbuf_puts(l, s);
	else
		kc_sbuf_puts(l, "{\"level\":\"error\",\"msg\":\"log line too long\"}");
	json_object_put(o);
}

static void
format_text(struct kc_sbuf *l, const char *ts, enum kc_log_level level,
    const struct kc_log_ctx *ctx, const struct kc_log_field *fields,
    size_t nfields, const char *msg)
{
	char rid[24];

	kc_sbuf_puts(l, ts);
	kc_sbuf_puts(l, " ");
	kc_sbuf_puts(l, level_names[level]);
	if (ctx != NULL) {
		if (ctx->action != NULL) {
			kc_sbuf_puts(l, " ");
			kc_sbuf_puts(l, ctx->action);
		}
		if (ctx->kind != NULL)
			line_put_field(l, "kind", ctx->kind);
		if (ctx->ns != NULL)
			line_put_field(l, "ns", ctx->ns);
		if (ctx->name != NULL)
			line_put_field(l, "name", ctx->name);
		if (ctx->rid != 0) {
			(void)snprintf(rid, sizeof(rid), "%" PRIu64, ctx->rid);
			line_put_field(l, "rid", rid);
		}
	}
	kc_sbuf_puts(l, " msg=");
	line_put_value(l, msg, LOG_MSG_MAX);
	for (size_t i = 0; i < nfields; i++)
		if (fields[i].key != NULL && fields[i].value != NULL)
			line_put_field(l, fields[i].key, fields[i].value);
}

void
kc_logv(enum kc_log_level level, const struct kc_log_ctx *ctx,
    const struct kc_log_field *fields, size_t nfields, const char *fmt, va_list ap)
{
	char buf[KC_LOG_LINE_MAX], msg[LOG_MSG_MAX + 4], ts[40];
	struct kc_sbuf l;
	size_t len;
	int n;

	if (!kc_log_enabled(level))
		return;
	n = vsnprintf(msg, LOG_MSG_MAX + 1, fmt, ap);
	if (n > LOG_MSG_MAX)
		memcpy(msg + LOG_MSG_MAX, "...", 4);
	kc_sbuf_init(&l, buf, sizeof(buf));
	log_timestamp(ts, sizeof(ts));
	if (log_format == KC_LOG_JSON)
		format_json(&l, ts, level, ctx, fields, nfields, msg);
	else
		format_text(&l, ts, level, ctx, fields, nfields, msg);
	/* Keep room for the newline even when the line was cut. */
	len = KC_MIN(strlen(buf), sizeof(buf) - 2);
	buf[len++] = '\n';
	while (write(log_fd, buf, len) < 0 && errno == EINTR)
		;
}

void
kc_log(enum kc_log_level level, const struct kc_log_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	if (!kc_log_enabled(level))
		return;
	va_start(ap, fmt);
	kc_logv(level, ctx, NULL, 0, fmt, ap);
	va_end(ap);
}

void
kc_log_kv(enum kc_log_level level, const struct kc_log_ctx *ctx,
    const struct kc_log_field *fields, size_t nfields, const char *fmt, ...)
{
	va_list ap;

	if (!kc_log_enabled(level))
		return;
	va_start(ap, fmt);
	kc_logv(level, ctx, fields, nfields, fmt, ap);
	va_end(ap);
}

int
kc_log_error_r(const struct kc_log_ctx *ctx, int code, const char *fmt, ...)
{
	struct kc_log_field f[] = {
		{ "err", kc_err_name(code) },
		{ "error", kc_strerror(code) },
	};
	va_list ap;

	if (!kc_log_enabled(KC_LOG_ERROR))
		return code;
	va_start(ap, fmt);
	kc_logv(KC_LOG_ERROR, ctx, f, KC_ARRAY_SIZE(f), fmt, ap);
	va_end(ap);
	return code;
}

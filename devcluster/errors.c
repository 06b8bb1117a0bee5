/*
 * errors.c: metav1.Status replies.
 *
 * Every error the devcluster answers is a Status whose HTTP code and
 * reason come from <kc/err.h>'s KC_ERR_MAP, read in reverse: the handler
 * says KC_ECONFLICT, this file says 409 and "Conflict". The bodies follow
 * k8s.io/apimachinery pkg/api/errors exactly (the samples in
 * status-errors.json): key order kind, apiVersion, metadata, status,
 * message, reason, details, code; details.kind is the plural resource,
 * except for 422 Invalid where it is the Kind.
 *
 * Field errors (struct dc_errs) are collected by validation and printed
 * as field.Error does: "<field>: <body>", where the body is "Required
 * value", "Invalid value: \"x\": <detail>", "Unsupported value: ...",
 * and each becomes a cause {reason: "FieldValue<Type>", message: body,
 * field}.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/sbuf.h>
#include <kc/str.h>

#include "devcluster.h"

/* The HTTP code and reason of a code, for codes the table leaves open. */
static void
code_status(int code, int *ret_http, const char **ret_reason)
{
	int http = kc_err_http(code);

	if (http != 0) {
		*ret_http = http;
		*ret_reason = kc_err_reason(code);
		return;
	}
	switch (code) {
	case KC_EPARSE:
	case -EINVAL:
		*ret_http = 400;
		*ret_reason = "BadRequest";
		return;
	case -E2BIG:
		*ret_http = 413;
		*ret_reason = "RequestEntityTooLarge";
		return;
	default:
		*ret_http = 500;
		*ret_reason = "InternalError";
		return;
	}
}

int
errors_status_body(int code, const char *message, const struct json_object *details,
    struct json_object **ret)
{
	struct json_object *o;
	const char *reason;
	int http;

	code_status(code, &http, &reason);
	if ((o = json_object_new_object()) == NULL)
		return -ENOMEM;
	if (kc_json_set_str(o, "kind", "Status") < 0 ||
	    kc_json_set_str(o, "apiVersion", "v1") < 0 ||
	    kc_json_put(o, "metadata", json_object_new_object()) < 0 ||
	    kc_json_set_str(o, "status", "Failure") < 0 ||
	    (message != NULL && kc_json_set_str(o, "message", message) < 0) ||
	    kc_json_set_str(o, "reason", reason) < 0 ||
	    (details != NULL && kc_json_put(o, "details",
	    kc_json_copy(details)) < 0) ||
	    kc_json_set_int(o, "code", http) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	*ret = o;
	return 0;
}

/* Writes a Status reply; on allocation failure a fixed 500 body. */
static void
reply(struct dc_resp *resp, int code, const char *message,
    struct json_object *details)
{
	struct json_object *o = NULL;
	const char *reason;
	int http;

	code_status(code, &http, &reason);
	if (errors_status_body(code, message, details, &o) < 0 ||
	    resp_json(resp, http, o) < 0) {
		kc_buf_free(&resp->body);
		resp->status = 500;
		resp->content_type = "text/plain; charset=utf-8";
		if (kc_buf_puts(&resp->body, "internal error: out of memory\n") < 0)
			kc_buf_free(&resp->body);
	}
	if (o != NULL)
		json_object_put(o);
	if (details != NULL)
		json_object_put(details);
}

void
errors_textf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

void
errors_reply(struct dc_resp *resp, int code, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	reply(resp, code, msg, NULL);
}

static struct json_object *
details_new(const char *name, const char *group, const char *kind)
{
	struct json_object *d;

	if ((d = json_object_new_object()) == NULL)
		return NULL;
	if ((name != NULL && name[0] != '\0' && kc_json_set_str(d, "name", name) < 0) ||
	    (group != NULL && group[0] != '\0' && kc_json_set_str(d, "group", group) < 0) ||
	    (kind != NULL && kind[0] != '\0' && kc_json_set_str(d, "kind", kind) < 0)) {
		json_object_put(d);
		return NULL;
	}
	return d;
}

void
errors_obj(struct dc_resp *resp, int code, const struct dc_rtype *rt, const char *name,
    const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	reply(resp, code, msg, details_new(name, rt != NULL ? rt->group : NULL,
	    rt != NULL ? rt->plural : NULL));
}

void
errors_details(struct dc_resp *resp, int code, const char *group, const char *kind,
    const char *name, const char *message)
{
	reply(resp, code, message, details_new(name, group, kind));
}

void
errors_notfound(struct dc_resp *resp, const struct dc_rtype *rt, const char *name)
{
	errors_obj(resp, KC_ENOTFOUND, rt, name, "%s \"%s\" not found", rt->qualified,
	    name);
}

void
ferr_string(const struct dc_ferr *fe, char *buf, size_t size)
{
	if (fe->field[0] != '\0')
		(void)snprintf(buf, size, "%s: %s", fe->field, fe->body);
	else
		(void)snprintf(buf, size, "%s", fe->body);
}

/* Whether errs->items[i] prints as an earlier item does. */
static bool
errs_repeated(const struct dc_errs *errs, size_t i)
{
	char one[1100], other[1100];

	ferr_string(&errs->items[i], one, sizeof(one));
	for (size_t j = 0; j < i; j++) {
		ferr_string(&errs->items[j], other, sizeof(other));
		if (strcmp(one, other) == 0)
			return true;
	}
	return false;
}

void
errs_string(const struct dc_errs *errs, char *buf, size_t size)
{
	struct kc_sbuf b;
	char one[1100];
	size_t unique = 0, shown = 0;

	for (size_t i = 0; i < errs->n; i++)
		unique += !errs_repeated(errs, i);
	kc_sbuf_init(&b, buf, size);
	if (unique > 1)
		kc_sbuf_putc(&b, '[');
	for (size_t i = 0; i < errs->n; i++) {
		if (errs_repeated(errs, i))
			continue;
		ferr_string(&errs->items[i], one, sizeof(one));
		if (shown++ > 0)
			kc_sbuf_puts(&b, ", ");
		kc_sbuf_puts(&b, one);
	}
	if (unique > 1)
		kc_sbuf_putc(&b, ']');
	(void)kc_sbuf_end(&b);
}

void
errors_invalid(struct dc_resp *resp, const char *qualified_kind, const char *group,
    const char *name, const struct dc_errs *errs)
{
	struct json_object *details = NULL, *causes;
	struct kc_buf msg;
	char kind[DC_SEGMENT_MAX], one[1100];
	const char *dot = strchr(qualified_kind, '.');
	size_t klen = dot != NULL ? (size_t)(dot - qualified_kind) : strlen(qualified_kind);

	if (klen >= sizeof(kind))
		klen = sizeof(kind) - 1;
	memcpy(kind, qualified_kind, klen);
	kind[klen] = '\0';
	kc_buf_init(&msg, 64 * 1024);
	if (kc_buf_printf(&msg, "%s \"%s\" is invalid: %s", qualified_kind,
	    name != NULL ? name : "", errs->n > 1 ? "[" : "") < 0)
		goto oom;
	for (size_t i = 0; i < errs->n; i++) {
		ferr_string(&errs->items[i], one, sizeof(one));
		if (kc_buf_printf(&msg, "%s%s", i > 0 ? ", " : "", one) < 0)
			goto oom;
	}
	if (errs->n > 1 && kc_buf_putc(&msg, ']') < 0)
		goto oom;
	if ((details = details_new(name, group, kind)) == NULL ||
	    (causes = json_object_new_array()) == NULL)
		goto oom;
	if (kc_json_put(details, "causes", causes) < 0)
		goto oom;
	for (size_t i = 0; i < errs->n; i++) {
		const struct dc_ferr *fe = &errs->items[i];
		struct json_object *c = json_object_new_object();
		char reason[64];

		(void)snprintf(reason, sizeof(reason), "FieldValue%s", fe->type);
		if (kc_json_append(causes, c) < 0 ||
		    kc_json_set_str(c, "reason", reason) < 0 ||
		    kc_json_set_str(c, "message", fe->body) < 0 ||
		    (fe->field[0] != '\0' && kc_json_set_str(c, "field", fe->field) < 0))
			goto oom;
	}
	reply(resp, KC_EINVALID, kc_buf_str(&msg), details);
	kc_buf_free(&msg);
	return;
oom:
	if (details != NULL)
		json_object_put(details);
	kc_buf_free(&msg);
	errors_internal(resp, -ENOMEM);
}

void
errors_internal(struct dc_resp *resp, int code)
{
	errors_reply(resp, KC_EINTERNAL, "Internal error occurred: %s", kc_strerror(code));
}

void
errors_kc(struct dc_resp *resp, int code, const struct kc_status *st)
{
	const char *msg = st != NULL && st->message[0] != '\0' ? st->message :
	    kc_strerror(code);

	reply(resp, code, msg, NULL);
}

/*
 * Field errors
 */

void
errs_add(struct dc_errs *errs, const char *type, const char *field, const char *fmt, ...)
{
	struct dc_ferr *fe;
	va_list ap;

	if (errs->n == DC_ERRS_MAX) {
		errs->truncated = true;
		return;
	}
	fe = &errs->items[errs->n++];
	fe->type = type;
	(void)kc_strlcpy(fe->field, field != NULL ? field : "", sizeof(fe->field));
	va_start(ap, fmt);
	(void)vsnprintf(fe->body, sizeof(fe->body), fmt, ap);
	va_end(ap);
}

void
errs_required(struct dc_errs *errs, const char *field, const char *detail)
{
	if (detail != NULL && detail[0] != '\0')
		errs_add(errs, "Required", field, "Required value: %s", detail);
	else
		errs_add(errs, "Required", field, "Required value");
}

void
errs_invalid(struct dc_errs *errs, const char *field, const char *value_repr,
    const char *detail)
{
	if (detail != NULL && detail[0] != '\0')
		errs_add(errs, "Invalid", field, "Invalid value: %s: %s", value_repr, detail);
	else
		errs_add(errs, "Invalid", field, "Invalid value: %s", value_repr);
}

void
errs_forbidden(struct dc_errs *errs, const char *field, const char *detail)
{
	errs_add(errs, "Forbidden", field, "Forbidden: %s", detail);
}

void
errs_unsupported(struct dc_errs *errs, const char *field, const char *value,
    const char *const *supported)
{
	char q[512], list[512] = "";
	size_t off = 0;

	for (size_t i = 0; supported != NULL && supported[i] != NULL; i++) {
		char one[128];
		int n;

		n = snprintf(list + off, sizeof(list) - off, "%s%s", i > 0 ? ", " : "",
		    kc_sbuf_quoted(one, sizeof(one), supported[i]));
		if (n < 0 || (size_t)n >= sizeof(list) - off)
			break;
		off += (size_t)n;
	}
	kc_sbuf_quoted(q, sizeof(q), value);
	if (list[0] != '\0')
		errs_add(errs, "NotSupported", field,
		    "Unsupported value: %s: supported values: %s", q, list);
	else
		errs_add(errs, "NotSupported", field, "Unsupported value: %s", q);
}

void
errs_duplicate(struct dc_errs *errs, const char *field, const char *value_repr)
{
	errs_add(errs, "Duplicate", field, "Duplicate value: %s", value_repr);
}

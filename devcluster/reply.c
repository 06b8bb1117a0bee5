/*
 * reply.c: replies. A request's answer is a struct dc_resp: a status, a
 * content type, a bounded body, a few headers, or a stream (a watch).
 * Here are its constructors and the replies dispatch.c and write.c
 * share: objects in the URL's version (printed once and cached by
 * storage when no conversion applies), list items, and the Status
 * replies that errors.c's metav1.Status bodies do not cover (404 pages,
 * 405, failures with details).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/sbuf.h>
#include <kc/str.h>

#include "devcluster.h"
#include "request.h"

void
resp_init(struct dc_resp *resp)
{
	memset(resp, 0, sizeof(*resp));
	kc_buf_init(&resp->body, DC_RESP_MAX);
}

void
resp_clear(struct dc_resp *resp)
{
	kc_buf_free(&resp->body);
	for (size_t i = 0; i < resp->nheaders; i++)
		kc_free(resp->headers[i].value);
	if (resp->stream != NULL)
		resp->stream->ops->release(resp->stream);
	if (resp->deferred != NULL)
		json_object_put(resp->deferred);
	resp_init(resp);
}

int
resp_header(struct dc_resp *resp, const char *name, const char *value)
{
	char *v;

	if (resp->nheaders == DC_RESP_HEADERS_MAX)
		return -E2BIG;
	if ((v = kc_strdup(value)) == NULL)
		return -ENOMEM;
	resp->headers[resp->nheaders].name = name;
	resp->headers[resp->nheaders].value = v;
	resp->nheaders++;
	return 0;
}

char *
resp_warning_value(const char *text)
{
	char *buf = kc_malloc(DC_WARNING_MAX);
	struct kc_sbuf b;

	if (buf == NULL)
		return NULL;
	kc_sbuf_init(&b, buf, DC_WARNING_MAX);
	kc_sbuf_puts(&b, "299 - ");
	kc_sbuf_quote(&b, text, strlen(text));
	return buf;
}

int
resp_warning(struct dc_resp *resp, const char *text)
{
	char *v = resp_warning_value(text);
	int r;

	if (v == NULL)
		return -ENOMEM;
	r = resp_header(resp, "Warning", v);
	kc_free(v);
	return r;
}

int
resp_json(struct dc_resp *resp, int status, const struct json_object *o)
{
	int r;

	kc_buf_reset(&resp->body);
	if ((r = api_serialize(o, &resp->body)) < 0 ||
	    (r = kc_buf_putc(&resp->body, '\n')) < 0)
		return r;
	resp->status = status;
	resp->content_type = JSON_CT;
	return 0;
}

int
resp_text(struct dc_resp *resp, int status, const char *ctype, const char *text)
{
	int r;

	kc_buf_reset(&resp->body);
	if ((r = kc_buf_puts(&resp->body, text)) < 0)
		return r;
	resp->status = status;
	resp->content_type = ctype;
	return 0;
}

void
reply_json(struct dc_resp *resp, int status, struct json_object *o)
{
	int r;

	if (o == NULL) {
		errors_internal(resp, -ENOMEM);
		return;
	}
	if ((r = resp_json(resp, status, o)) < 0)
		errors_internal(resp, r);
	json_object_put(o);
}

/* A Status for an error whose reason upstream leaves empty (500). */
void
reply_unknown(struct dc_resp *resp, int http, const char *msg)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL || kc_json_set_str(o, "kind", "Status") < 0 ||
	    kc_json_set_str(o, "apiVersion", "v1") < 0 ||
	    kc_json_put(o, "metadata", json_object_new_object()) < 0 ||
	    kc_json_set_str(o, "status", "Failure") < 0 ||
	    kc_json_set_str(o, "message", msg) < 0 ||
	    kc_json_set_int(o, "code", http) < 0) {
		if (o != NULL)
			json_object_put(o);
		errors_internal(resp, -ENOMEM);
		return;
	}
	reply_json(resp, http, o);
}

void
reply_not_found_page(struct dc_resp *resp)
{
	if (resp_text(resp, 404, TEXT_CT, "404 page not found\n") < 0)
		errors_internal(resp, -ENOMEM);
}

/* 404 for a path inside /api or /apis that names nothing. */
void
reply_not_found(struct dc_resp *resp)
{
	struct json_object *d = json_object_new_object(), *o = NULL;

	if (d == NULL || errors_status_body(KC_ENOTFOUND,
	    "the server could not find the requested resource", d, &o) < 0) {
		if (d != NULL)
			json_object_put(d);
		errors_internal(resp, -ENOMEM);
		return;
	}
	json_object_put(d);
	reply_json(resp, 404, o);
}

void
reply_method_not_allowed(struct dc_resp *resp)
{
	struct json_object *d = json_object_new_object(), *o = NULL;

	if (d == NULL || errors_status_body(KC_EMETHOD,
	    "the server does not allow this method on the requested resource", d,
	    &o) < 0) {
		if (d != NULL)
			json_object_put(d);
		errors_internal(resp, -ENOMEM);
		return;
	}
	json_object_put(d);
	reply_json(resp, 405, o);
}

/* Whether api_view() of 'stored' is 'stored' itself (no conversion). */
static bool
view_is_stored(const struct dc_rtype *rt, const struct json_object *stored)
{
	const char *av;

	if (rt->ops->convert_out != NULL)
		return false;
	av = kc_json_str(stored, "apiVersion");
	return av != NULL && strcmp(av, rt->api_version) == 0;
}

/*
 * The stored object's cached text (coll_text()) when no conversion
 * applies: 0 with *ret set, 1 when the tree must be printed, -ENOMEM.
 */
int
reply_stored_text(const struct dc_rtype *rt, const struct json_object *stored, bool item,
    const char **ret, size_t *ret_len)
{
	if (rt->coll == NULL || !view_is_stored(rt, stored))
		return 1;
	return coll_text(rt->coll, stored, item, ret, ret_len);
}

void
reply_object(struct rctx *c, int status, const struct json_object *stored)
{
	struct json_object *view = NULL;
	const char *text;
	size_t len;
	int r;

	if ((r = reply_stored_text(c->rt, stored, false, &text, &len)) <= 0) {
		kc_buf_reset(&c->resp->body);
		if (r < 0 || (r = kc_buf_append(&c->resp->body, text, len)) < 0 ||
		    (r = kc_buf_putc(&c->resp->body, '\n')) < 0) {
			errors_internal(c->resp, r);
			return;
		}
		c->resp->status = status;
		c->resp->content_type = JSON_CT;
		return;
	}
	if ((r = api_view(c->rt, stored, &view)) == -EINPROGRESS) {
		/* Committed: only the reply waits for the conversion webhook. */
		c->resp->deferred = json_object_get((struct json_object *)(uintptr_t)stored);
		c->resp->deferred_rt = c->rt;
		c->resp->deferred_status = status;
		return;
	}
	if (r < 0) {
		errors_internal(c->resp, r);
		return;
	}
	reply_json(c->resp, status, view);
}

/* An item of a built-in list carries no apiVersion or kind. */
struct json_object *
reply_list_item(const struct dc_rtype *rt, struct json_object *view)
{
	struct json_object *o;

	if (rt->flags & DC_RT_CUSTOM)
		return json_object_get(view);
	if ((o = json_object_new_object()) == NULL)
		return NULL;
	json_object_object_foreach(view, k, v) {
		if (strcmp(k, "apiVersion") == 0 || strcmp(k, "kind") == 0)
			continue;
		if (json_object_object_add(o, k, json_object_get(v)) < 0) {
			json_object_put(v);
			json_object_put(o);
			return NULL;
		}
	}
	return o;
}

/*
 * A Status reply for a failure 'code' with st's message and 'details'
 * (a metav1.StatusDetails, consumed; may be NULL).
 */
void
reply_details(struct dc_resp *resp, int code, const struct kc_status *st,
    struct json_object *details)
{
	const char *msg = st->message[0] != '\0' ? st->message : kc_strerror(code);
	struct json_object *o = NULL;
	int r;

	if (code == -ENOMEM || code == KC_EINTERNAL) {
		if (details != NULL)
			json_object_put(details);
		if (code == -ENOMEM)
			errors_internal(resp, code);
		else
			reply_unknown(resp, 500, msg);
		return;
	}
	r = errors_status_body(code, msg, details, &o);
	if (details != NULL)
		json_object_put(details);
	if (r < 0) {
		errors_internal(resp, r);
		return;
	}
	reply_json(resp, (int)kc_json_int(o, 500, "code"), o);
}

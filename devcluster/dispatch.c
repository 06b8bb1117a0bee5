/*
 * dispatch.c: from a parsed request to the handler that answers it.
 *
 * api_handle() takes one request and always produces a reply:
 *
 *	authenticate	auth.c; public paths (health, /version) also
 *			anonymously, everything else needs a token
 *	impersonate	Impersonate-* headers (auth.c)
 *	plug-ins	the started plug-ins' routes (paths outside the API
 *			groups: /devcluster/..., the OIDC documents) and
 *			request filters (fault injection), in table order
 *	route		router.c; then discovery.c, health, version,
 *			OpenAPI (a hook), or a resource request
 *	authorize	hooks.authorize (everything allowed without one)
 *	verb		get, list and watch here; create, update, patch,
 *			delete and deletecollection in write.c
 *
 * The read verbs answer from storage in the URL's version (api_view()),
 * as JSON or as Tables for kubectl get. A list is a snapshot at one
 * resourceVersion, paged with continue tokens; a watch is a stream from
 * watchhub.c that http.c writes out. Boolean query parameters read as
 * kube-apiserver reads them (req_param_bool(), router.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/patch.h>
#include <kc/selector.h>
#include <kc/sbuf.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "devcluster.h"
#include "fieldmanager.h"
#include "request.h"
#include "table.h"

#define LIST_LIMIT_MAX	1000000

/*
 * Request parameters
 */

/* The media type of a Content-Type, lower-cased, without parameters. */
void
dispatch_media_type(const char *ct, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	if (ct == NULL)
		return;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	for (; *ct != '\0' && *ct != ';' && *ct != ' ' && n + 1 < size; ct++)
		buf[n++] = (char)(*ct >= 'A' && *ct <= 'Z' ? *ct + 32 : *ct);
	buf[n] = '\0';
}

/*
 * Accept: which answer format the client asked for. Returns 0 with
 * '*fmt' set, or -1 when nothing acceptable is offered (406).
 */
static int
negotiate(const char *accept, enum dc_format *fmt)
{
	const char *p = accept;

	*fmt = DC_FMT_JSON;
	if (accept == NULL || accept[0] == '\0')
		return 0;
	while (*p != '\0') {
		const char *end = strchr(p, ',');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
		char item[512], type[128], *save = NULL, *tok;
		char as[64] = "", g[64] = "", v[64] = "";

		if (len < sizeof(item)) {
			memcpy(item, p, len);
			item[len] = '\0';
			dispatch_media_type(item, type, sizeof(type));
			tok = strtok_r(item, ";", &save);
			while ((tok = strtok_r(NULL, ";", &save)) != NULL) {
				char *eq = strchr(tok, '=');

				while (*tok == ' ')
					tok++;
				if (eq == NULL)
					continue;
				*eq = '\0';
				if (strcmp(tok, "as") == 0)
					(void)kc_strlcpy(as, eq + 1, sizeof(as));
				else if (strcmp(tok, "g") == 0)
					(void)kc_strlcpy(g, eq + 1, sizeof(g));
				else if (strcmp(tok, "v") == 0)
					(void)kc_strlcpy(v, eq + 1, sizeof(v));
			}
			if (strcmp(type, "application/json") == 0 ||
			    strcmp(type, "*/*") == 0 || strcmp(type, "application/*") == 0) {
				if (as[0] == '\0')
					return 0;
				if (strcmp(as, "Table") == 0 && strcmp(g, "meta.k8s.io") == 0) {
					if (strcmp(v, "v1") == 0) {
						*fmt = DC_FMT_TABLE_V1;
						return 0;
					}
					if (strcmp(v, "v1beta1") == 0) {
						*fmt = DC_FMT_TABLE_V1BETA1;
						return 0;
					}
				}
			}
		}
		if (end == NULL)
			break;
		p = end + 1;
	}
	return -1;
}

static enum dc_include
include_param(const struct dc_req *req)
{
	const char *v = req_param(req, "includeObject");

	if (v == NULL)
		return DC_INCLUDE_METADATA;
	if (strcmp(v, "None") == 0)
		return DC_INCLUDE_NONE;
	if (strcmp(v, "Object") == 0)
		return DC_INCLUDE_OBJECT;
	return DC_INCLUDE_METADATA;
}

/*
 * List and watch options
 */

/* ValidateListOptions() (list) and validateWatchOptions() (watch). */
static void
validate_list_opts(const struct dc_req *req, bool watch, struct dc_errs *errs)
{
	const char *rv = req_param(req, "resourceVersion");
	const char *match = req_param(req, "resourceVersionMatch");
	const char *cont = req_param(req, "continue");
	bool sie = req_has_param(req, "sendInitialEvents");

	if (match != NULL && match[0] == '\0')
		match = NULL;
	if (cont != NULL && cont[0] == '\0')
		cont = NULL;
	if (watch) {
		if (sie) {
			if (match == NULL || strcmp(match, "NotOlderThan") != 0)
				errs_forbidden(errs, "resourceVersionMatch",
				    "sendInitialEvents requires setting resourceVersionMatch "
				    "to NotOlderThan");
			errs_forbidden(errs, "sendInitialEvents",
			    "sendInitialEvents is forbidden for watch unless the "
			    "WatchList feature gate is enabled");
		}
		if (match != NULL) {
			if (!sie)
				errs_forbidden(errs, "resourceVersionMatch",
				    "resourceVersionMatch is forbidden for watch unless "
				    "sendInitialEvents is provided");
			if (strcmp(match, "NotOlderThan") != 0)
				errs_unsupported(errs, "resourceVersionMatch", match,
				    (const char *const []){ "NotOlderThan", NULL });
			if (cont != NULL)
				errs_forbidden(errs, "resourceVersionMatch",
				    "resourceVersionMatch is forbidden when continue is "
				    "provided");
		}
		return;
	}
	if (match != NULL) {
		if (rv == NULL || rv[0] == '\0')
			errs_forbidden(errs, "resourceVersionMatch",
			    "resourceVersionMatch is forbidden unless resourceVersion "
			    "is provided");
		if (cont != NULL)
			errs_forbidden(errs, "resourceVersionMatch",
			    "resourceVersionMatch is forbidden when continue is provided");
		if (strcmp(match, "Exact") != 0 && strcmp(match, "NotOlderThan") != 0)
			errs_unsupported(errs, "resourceVersionMatch", match,
			    (const char *const []){ "Exact", "NotOlderThan", "", NULL });
		if (strcmp(match, "Exact") == 0 && rv != NULL && strcmp(rv, "0") == 0)
			errs_forbidden(errs, "resourceVersionMatch",
			    "resourceVersionMatch \"exact\" is forbidden for "
			    "resourceVersion \"0\"");
	}
	if (sie)
		errs_forbidden(errs, "sendInitialEvents",
		    "sendInitialEvents is forbidden for list");
}

int
dispatch_list_ints(const struct dc_req *req, int64_t *timeout, int64_t *limit,
    struct dc_resp *resp)
{
	char err[256];

	*timeout = *limit = 0;
	if (req_param_i64(req, "timeoutSeconds", timeout, err, sizeof(err)) < 0 ||
	    req_param_i64(req, "limit", limit, err, sizeof(err)) < 0) {
		errors_reply(resp, KC_EBADREQUEST, "%s", err);
		return -1;
	}
	return 0;
}

/* A resourceVersion query value: 0 for "" and "0"; -1 when malformed. */
static int
parse_rv(const char *s, uint64_t *ret)
{
	if (s == NULL || s[0] == '\0') {
		*ret = 0;
		return 0;
	}
	return kc_parse_u64(s, ret) < 0 ? -1 : 0;
}

static void
too_large_rv(struct dc_resp *resp, uint64_t want, uint64_t cur)
{
	struct json_object *d = json_object_new_object(), *causes, *c, *o = NULL;
	char msg[160];

	(void)snprintf(msg, sizeof(msg),
	    "Timeout: Too large resource version: %" PRIu64 ", current: %" PRIu64,
	    want, cur);
	causes = json_object_new_array();
	c = json_object_new_object();
	if (d == NULL || kc_json_put(d, "causes", causes) < 0 ||
	    kc_json_append(causes, c) < 0 ||
	    kc_json_set_str(c, "reason", "ResourceVersionTooLarge") < 0 ||
	    kc_json_set_str(c, "message", "Too large resource version") < 0 ||
	    kc_json_set_int(d, "retryAfterSeconds", 1) < 0 ||
	    errors_status_body(KC_ETIMEOUT, msg, d, &o) < 0) {
		if (d != NULL)
			json_object_put(d);
		errors_internal(resp, -ENOMEM);
		return;
	}
	json_object_put(d);
	reply_json(resp, 504, o);
}

/*
 * Continue tokens: base64 of {"v":"meta.k8s.io/v1","rv":N,"start":"ns/name"},
 * the last key served; the next page starts after it, at the same rv.
 */
static char *
continue_token(uint64_t rv, const struct json_object *last)
{
	struct json_object *o = json_object_new_object();
	char key[2 * DC_SEGMENT_MAX + 2], *json = NULL, *tok = NULL;
	size_t len;

	if (o == NULL || obj_key(last, key, sizeof(key)) < 0 ||
	    kc_json_set_str(o, "v", "meta.k8s.io/v1") < 0 ||
	    kc_json_set_int(o, "rv", (int64_t)rv) < 0 ||
	    kc_json_set_str(o, "start", key) < 0 ||
	    (json = kc_json_dump(o, &len)) == NULL)
		goto out;
	if (kc_base64_encode(json, len, 0, &tok, NULL) < 0)
		tok = NULL;
out:
	if (o != NULL)
		json_object_put(o);
	kc_free(json);
	return tok;
}

static int
parse_continue(const char *tok, uint64_t *ret_rv, char **ret_start)
{
	_cleanup_(kc_freep) char *json = NULL;
	struct json_object *o = NULL;
	const char *start;
	size_t len;
	int64_t rv;
	int r;

	if ((r = kc_base64_decode(tok, strlen(tok), 0, &json, &len, NULL, 0)) < 0)
		return r;
	if (kc_json_parse(json, len, &o, NULL) < 0)
		return -EINVAL;
	rv = kc_json_int(o, -1, "rv");
	start = kc_json_str(o, "start");
	if (rv <= 0 || start == NULL || strchr(start, '/') == NULL ||
	    kc_json_str(o, "v") == NULL || strcmp(kc_json_str(o, "v"), "meta.k8s.io/v1") != 0) {
		json_object_put(o);
		return -EINVAL;
	}
	*ret_start = kc_strdup(start);
	json_object_put(o);
	if (*ret_start == NULL)
		return -ENOMEM;
	*ret_rv = (uint64_t)rv;
	return 0;
}

/*
 * get, list, watch
 */

/*
 * pods/<name>/exec by GET (WebSocket) or POST (SPDY): hooks.pod_exec, or
 * 400 "Upgrade request required" without it.
 */
bool
dispatch_upgrade(struct rctx *c)
{
	const struct json_object *pod;
	int r = DC_DECLINED;

	if (strcmp(c->sub, "exec") != 0 || c->rt->group[0] != '\0' ||
	    strcmp(c->rt->plural, "pods") != 0)
		return false;
	if ((pod = coll_get(c->rt->coll, c->ns, c->name)) == NULL)
		errors_notfound(c->resp, c->rt, c->name);
	else if (c->dc->hooks.pod_exec != NULL &&
	    (r = c->dc->hooks.pod_exec(c->dc, c->req, pod, c->resp)) < 0)
		errors_internal(c->resp, r);
	else if (r == DC_DECLINED)
		errors_reply(c->resp, KC_EBADREQUEST, "Upgrade request required");
	return true;
}

static void
do_get(struct rctx *c, enum dc_format fmt)
{
	const struct json_object *obj = coll_get(c->rt->coll, c->ns, c->name);
	struct json_object *view = NULL, *table = NULL;
	int r;

	if (obj == NULL) {
		errors_notfound(c->resp, c->rt, c->name);
		return;
	}
	if (dispatch_upgrade(c))
		return;
	if (strcmp(c->sub, "log") == 0) {
		if (c->dc->hooks.pod_log != NULL &&
		    (r = c->dc->hooks.pod_log(c->dc, c->req, obj, c->resp)) != DC_DECLINED) {
			if (r < 0)
				errors_internal(c->resp, r);
			return;
		}
		r = builtin_pod_log(c->dc, c->req, obj, c->resp);
		if (r < 0)
			errors_internal(c->resp, r);
		return;
	}
	if (strcmp(c->sub, "exec") == 0 || strcmp(c->sub, "attach") == 0 ||
	    strcmp(c->sub, "portforward") == 0) {
		errors_reply(c->resp, KC_EBADREQUEST, "Upgrade request required");
		return;
	}
	if (fmt == DC_FMT_JSON) {
		reply_object(c, 200, obj);
		return;
	}
	if ((r = api_view(c->rt, obj, &view)) < 0 ||
	    (r = api_table_new(c->rt, fmt, true, &table)) < 0 ||
	    (r = api_table_add_row(c->rt, table, view, include_param(c->req), c->now)) < 0) {
		if (view != NULL)
			json_object_put(view);
		if (table != NULL)
			json_object_put(table);
		errors_internal(c->resp, r);
		return;
	}
	json_object_put(view);
	{
		char rv[24];

		(void)snprintf(rv, sizeof(rv), "%" PRIu64, obj_rv(obj));
		if (kc_json_set_str(kc_json_obj_of(table, "metadata"), "resourceVersion",
		    rv) < 0) {
			json_object_put(table);
			errors_internal(c->resp, -ENOMEM);
			return;
		}
	}
	reply_json(c->resp, 200, table);
}

static void
do_list(struct rctx *c, enum dc_format fmt)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *ls = NULL;
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *fs = NULL;
	_cleanup_(kc_freep) char *start = NULL;
	_cleanup_(kc_freep) char *tok = NULL;
	struct json_object **objs = NULL, *out = NULL, *meta;
	struct kc_buf ib;
	struct dc_errs errs = { 0 };
	struct kc_status st = { 0 };
	const char *rvs = req_param(c->req, "resourceVersion");
	const char *match = req_param(c->req, "resourceVersionMatch");
	const char *cont = req_param(c->req, "continue");
	const struct json_object *last = NULL;
	uint64_t rv = 0, snap, cur = storage_rv(c->dc->store);
	int64_t limit = 0, timeout = 0;
	size_t n = 0, i, matched = 0;
	bool more = false, pending = false, selecting;
	char rvbuf[24];
	int r;

	if (dispatch_list_ints(c->req, &timeout, &limit, c->resp) < 0)
		return;
	validate_list_opts(c->req, false, &errs);
	if (errs.n > 0) {
		errors_invalid(c->resp, "ListOptions.meta.k8s.io", "meta.k8s.io", "", &errs);
		return;
	}
	if ((r = api_selectors(c->rt, req_param(c->req, "labelSelector"),
	    req_param(c->req, "fieldSelector"), &ls, &fs, &st)) < 0) {
		errors_kc(c->resp, r, &st);
		return;
	}
	if (limit < 0 || limit > LIST_LIMIT_MAX)
		limit = limit < 0 ? 0 : LIST_LIMIT_MAX;
	if (parse_rv(rvs, &rv) < 0) {
		errors_reply(c->resp, KC_EBADREQUEST, "invalid resource version: %s", rvs);
		return;
	}
	snap = cur;
	if (cont != NULL && cont[0] != '\0') {
		if (rvs != NULL && rvs[0] != '\0' && strcmp(rvs, "0") != 0) {
			errors_reply(c->resp, KC_EBADREQUEST,
			    "specifying resource version is not allowed when using continue");
			return;
		}
		if ((r = parse_continue(cont, &snap, &start)) < 0) {
			if (r == -ENOMEM)
				errors_internal(c->resp, r);
			else
				errors_reply(c->resp, KC_EBADREQUEST,
				    "continue key is not valid: invalid continue token");
			return;
		}
	} else if (rv > cur) {
		too_large_rv(c->resp, rv, cur);
		return;
	} else if (match != NULL && strcmp(match, "Exact") == 0)
		snap = rv;
	r = coll_list_at(c->rt->coll, snap, c->rt->namespaced && c->ns[0] != '\0' ?
	    c->ns : NULL, start, &objs, &n);
	if (r == KC_EEXPIRED) {
		if (cont != NULL && cont[0] != '\0')
			errors_reply(c->resp, KC_EEXPIRED,
			    "The provided continue parameter is too old to display a "
			    "consistent list result. You can start a new list without the "
			    "continue parameter.");
		else
			errors_reply(c->resp, KC_EEXPIRED, "too old resource version: %"
			    PRIu64 " (%" PRIu64 ")", snap, cur);
		return;
	}
	if (r < 0) {
		errors_internal(c->resp, r);
		return;
	}
	selecting = ls != NULL || fs != NULL;
	/*
	 * A JSON list's items are printed into 'ib' (the stored objects'
	 * cached texts where no conversion applies) and joined to the
	 * printed head below: the same bytes as printing one tree.
	 */
	kc_buf_init(&ib, DC_RESP_MAX);
	if (fmt != DC_FMT_JSON) {
		if ((r = api_table_new(c->rt, fmt, true, &out)) < 0)
			goto fail;
	} else {
		r = -ENOMEM;
		if ((out = json_object_new_object()) == NULL ||
		    kc_json_set_str(out, "kind", c->rt->list_kind) < 0 ||
		    kc_json_set_str(out, "apiVersion", c->rt->api_version) < 0 ||
		    kc_json_put(out, "metadata", json_object_new_object()) < 0)
			goto fail;
	}
	for (i = 0; i < n; i++) {
		struct json_object *view = NULL, *item;
		const char *text;
		size_t len;

		if (!api_matches(c->rt, ls, fs, objs[i]))
			continue;
		if (limit > 0 && matched == (size_t)limit) {
			more = true;
			break;
		}
		if (fmt == DC_FMT_JSON && matched > 0 && (r = kc_buf_putc(&ib, ',')) < 0)
			goto fail;
		if (fmt == DC_FMT_JSON && (r = reply_stored_text(c->rt, objs[i],
		    !(c->rt->flags & DC_RT_CUSTOM), &text, &len)) <= 0) {
			if (r < 0 || (r = kc_buf_append(&ib, text, len)) < 0)
				goto fail;
			matched++;
			last = objs[i];
			continue;
		}
		if ((r = api_view(c->rt, objs[i], &view)) == -EINPROGRESS) {
			/* Ask for every item that needs it: one review, one more pass. */
			pending = true;
			matched++;
			continue;
		}
		if (r < 0)
			goto fail;
		if (fmt != DC_FMT_JSON)
			r = api_table_add_row(c->rt, out, view, include_param(c->req), c->now);
		else if ((item = reply_list_item(c->rt, view)) == NULL)
			r = -ENOMEM;
		else {
			r = api_serialize(item, &ib);
			json_object_put(item);
		}
		json_object_put(view);
		if (r < 0)
			goto fail;
		matched++;
		last = objs[i];
	}
	if (pending) {
		r = -EINPROGRESS;
		goto fail;
	}
	meta = kc_json_obj_of(out, "metadata");
	(void)snprintf(rvbuf, sizeof(rvbuf), "%" PRIu64, snap);
	r = -ENOMEM;
	if (kc_json_set_str(meta, "resourceVersion", rvbuf) < 0)
		goto fail;
	if (more && last != NULL) {
		if ((tok = continue_token(snap, last)) == NULL ||
		    kc_json_set_str(meta, "continue", tok) < 0)
			goto fail;
		if (!selecting && kc_json_set_int(meta, "remainingItemCount",
		    (int64_t)(n - i)) < 0)
			goto fail;
	}
	objs_free(objs, n);
	objs = NULL;
	if (fmt != DC_FMT_JSON) {
		kc_buf_free(&ib);
		reply_json(c->resp, 200, out);
		return;
	}
	/* The head is printed whole and its closing brace replaced. */
	kc_buf_reset(&c->resp->body);
	if ((r = api_serialize(out, &c->resp->body)) < 0 ||
	    (r = kc_buf_puts(&ib, "]}\n")) < 0)
		goto fail;
	c->resp->body.len--;
	if ((r = kc_buf_puts(&c->resp->body, ",\"items\":[")) < 0 ||
	    (r = kc_buf_append(&c->resp->body, ib.data, ib.len)) < 0)
		goto fail;
	kc_buf_free(&ib);
	json_object_put(out);
	c->resp->status = 200;
	c->resp->content_type = JSON_CT;
	return;
fail:
	kc_buf_free(&ib);
	objs_free(objs, n);
	if (out != NULL)
		json_object_put(out);
	errors_internal(c->resp, r);
}

static void
do_watch(struct rctx *c, enum dc_format fmt)
{
	struct dc_watch_opts wo = { 0 };
	struct dc_errs errs = { 0 };
	struct kc_status st = { 0 };
	struct dc_stream *stream = NULL;
	const char *rvs = req_param(c->req, "resourceVersion");
	const char *fsel = req_param(c->req, "fieldSelector");
	_cleanup_(kc_freep) char *fsel_name = NULL;
	uint64_t rv = 0, cur = storage_rv(c->dc->store);
	int64_t timeout = 0, limit = 0;
	int r;

	if (dispatch_list_ints(c->req, &timeout, &limit, c->resp) < 0)
		return;
	validate_list_opts(c->req, true, &errs);
	if (errs.n > 0) {
		errors_invalid(c->resp, "ListOptions.meta.k8s.io", "meta.k8s.io", "", &errs);
		return;
	}
	if (parse_rv(rvs, &rv) < 0) {
		errors_reply(c->resp, KC_EBADREQUEST, "invalid resource version: %s", rvs);
		return;
	}
	if (rv > cur) {
		too_large_rv(c->resp, rv, cur);
		return;
	}
	if (c->name[0] != '\0') {
		fsel_name = fsel != NULL && fsel[0] != '\0' ?
		    kc_asprintf("%s,metadata.name=%s", fsel, c->name) :
		    kc_asprintf("metadata.name=%s", c->name);
		if (fsel_name == NULL) {
			errors_internal(c->resp, -ENOMEM);
			return;
		}
		fsel = fsel_name;
	}
	wo.rt = c->rt;
	wo.ns = c->rt->namespaced && c->ns[0] != '\0' ? c->ns : NULL;
	wo.label_selector = req_param(c->req, "labelSelector");
	wo.field_selector = fsel;
	wo.initial = rv == 0;
	wo.since = rv;
	wo.bookmarks = req_param_bool(c->req, "allowWatchBookmarks");
	wo.timeout_s = timeout > 0 ? (uint32_t)KC_MIN(timeout, (int64_t)UINT32_MAX) : 0;
	wo.format = fmt;
	wo.include = include_param(c->req);
	if ((r = watchhub_start(c->dc, &wo, &stream, &st)) < 0) {
		if (r == -ENOMEM)
			errors_internal(c->resp, r);
		else
			errors_kc(c->resp, r, &st);
		return;
	}
	c->resp->status = 200;
	c->resp->content_type = JSON_CT;
	c->resp->stream = stream;
}

/*
 * Requests
 */

static bool
verb_allowed(const struct dc_rtype *rt, const char *sub, const char *verb)
{
	static const struct { const char *name; unsigned bit; } verbs[] = {
		{ "create", DC_VERB_CREATE }, { "delete", DC_VERB_DELETE },
		{ "deletecollection", DC_VERB_DELETECOLLECTION }, { "get", DC_VERB_GET },
		{ "list", DC_VERB_LIST }, { "patch", DC_VERB_PATCH },
		{ "update", DC_VERB_UPDATE }, { "watch", DC_VERB_WATCH },
	};
	unsigned have = rt->verbs;

	if (sub[0] != '\0') {
		have = 0;
		for (size_t i = 0; i < rt->nsubres; i++)
			if (strcmp(rt->subres[i].name, sub) == 0)
				have = rt->subres[i].verbs;
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(verbs); i++)
		if (strcmp(verbs[i].name, verb) == 0)
			return (have & verbs[i].bit) != 0;
	return false;
}

static void
forbidden(struct rctx *c, const struct dc_route *route, const char *reason)
{
	char res[2 * DC_SEGMENT_MAX + 2], scope[DC_SEGMENT_MAX + 32], who[600];
	const struct dc_user *u = &c->req->user;

	if (c->sub[0] != '\0')
		(void)snprintf(res, sizeof(res), "%s/%s", c->rt->plural, c->sub);
	else
		(void)snprintf(res, sizeof(res), "%s", c->rt->plural);
	if (c->ns[0] != '\0')
		(void)snprintf(scope, sizeof(scope), "in the namespace \"%s\"", c->ns);
	else
		(void)snprintf(scope, sizeof(scope), "at the cluster scope");
	if (c->name[0] != '\0')
		(void)snprintf(who, sizeof(who), "%s \"%s\"", c->rt->qualified, c->name);
	else
		(void)snprintf(who, sizeof(who), "%s", c->rt->qualified);
	errors_obj(c->resp, KC_EFORBIDDEN, c->rt, c->name,
	    "%s is forbidden: User \"%s\" cannot %s resource \"%s\" in API group \"%s\" "
	    "%s%s%s", who, u->name != NULL ? u->name : "", route->verb, res, c->rt->group,
	    scope, reason[0] != '\0' ? ": " : "", reason);
}

/* DeleteOptions' dryRun, from the query (a request without a body). */
static bool
delete_dry_run(struct rctx *c)
{
	struct dc_errs errs = { 0 };
	char val[512];

	if (req_param_dry_run(c->req, &c->dry_run, val, sizeof(val)))
		return true;
	errs_add(&errs, "NotSupported", "dryRun",
	    "Unsupported value: %s: supported values: \"All\"", val);
	errors_invalid(c->resp, "DeleteOptions.meta.k8s.io", "meta.k8s.io", "", &errs);
	return false;
}

/*
 * Create-, Update- and PatchOptions validated as upstream does, in one
 * 422: force and fieldManager, dryRun, fieldValidation.
 */
static bool
write_options(struct rctx *c, const char *opts_kind)
{
	struct json_object *details = NULL;
	struct kc_status st = { 0 };
	bool patch = strcmp(opts_kind, "PatchOptions") == 0;
	char val[512];
	int r;

	r = fieldmanager_validate_write_options(opts_kind, patch &&
	    write_patch_kind(c->req->content_type) == PATCH_APPLY, c->manager,
	    patch && req_has_param(c->req, "force"),
	    req_param_dry_run(c->req, &c->dry_run, val, sizeof(val)) ? NULL : val,
	    req_param(c->req, "fieldValidation"), &details, &st);
	if (r == 0)
		return true;
	reply_details(c->resp, r, &st, details);
	return false;
}

/* A started plug-in's subresource (pods/eviction): true when it answered. */
static bool
plugin_subresource(struct dc *dc, const struct dc_rtype *rt, const struct dc_req *req,
    const struct dc_route *route, struct dc_resp *resp)
{
	int r;

	if (route->subresource[0] == '\0')
		return false;
	for (size_t i = 0; i < dc_nplugins; i++) {
		const struct dc_plugin *p = dc_plugins[i];

		for (size_t j = 0; j < p->nsubres; j++) {
			const struct dc_plugin_subres *s = &p->subres[j];

			if (strcmp(s->subresource, route->subresource) != 0 ||
			    strcmp(s->plural, rt->plural) != 0 || strcmp(s->group, rt->group) != 0 ||
			    plugin_state(dc, p) == NULL)
				continue;
			if ((r = s->serve(dc, rt, req, route, resp)) == DC_DECLINED)
				continue;
			if (r < 0)
				errors_internal(resp, r);
			return true;
		}
	}
	return false;
}

static void
resource_request(struct dc *dc, struct dc_req *req, const struct dc_route *route,
    struct dc_resp *resp)
{
	const struct dc_rtype *rt = registry_find(dc, route->group, route->version,
	    route->resource);
	struct dc_attrs attrs;
	struct rctx c;
	enum dc_format fmt = DC_FMT_JSON;
	char reason[512] = "";
	const char *v = route->verb;
	bool object_verb;

	if (rt == NULL || (route->subresource[0] != '\0' &&
	    !rtype_has_subres(rt, route->subresource))) {
		reply_not_found(resp);
		return;
	}
	object_verb = route->name[0] != '\0';
	if ((rt->namespaced && route->ns[0] == '\0' && object_verb) ||
	    (!rt->namespaced && route->ns[0] != '\0')) {
		reply_not_found(resp);
		return;
	}
	memset(&c, 0, sizeof(c));
	c.dc = dc;
	c.req = req;
	c.resp = resp;
	c.rt = rt;
	c.ns = rt->namespaced ? route->ns : "";
	c.name = route->name;
	c.sub = route->subresource;
	c.now = kc_clock_wall();
	c.manager = req_param(req, "fieldManager");
	/* PUT and PATCH need an object; POST takes a collection or subresource. */
	if (!verb_allowed(rt, c.sub, v) || (!object_verb && (strcmp(v, "update") == 0 ||
	    strcmp(v, "patch") == 0)) || (object_verb && c.sub[0] == '\0' &&
	    strcmp(v, "create") == 0)) {
		reply_method_not_allowed(resp);
		return;
	}
	attrs = (struct dc_attrs){
		.user = &req->user, .verb = v, .resource_request = true,
		.group = rt->group, .version = rt->version, .resource = rt->plural,
		.subresource = c.sub, .ns = c.ns, .name = c.name,
	};
	if (!auth_authorize(dc, &attrs, reason, sizeof(reason))) {
		forbidden(&c, route, reason);
		return;
	}
	if ((strcmp(v, "get") == 0 || strcmp(v, "list") == 0 || strcmp(v, "watch") == 0) &&
	    negotiate(req->accept, &fmt) < 0) {
		errors_reply(resp, KC_ENOTACCEPTABLE, "only the following media types are "
		    "accepted: application/json, application/yaml, "
		    "application/json;as=Table;v=v1;g=meta.k8s.io");
		return;
	}
	if (fmt != DC_FMT_JSON) {
		struct kc_status st = { 0 };
		enum table_include inc;

		if (table_include_parse(req_param(req, "includeObject"), &inc, &st) < 0) {
			errors_kc(resp, KC_EBADREQUEST, &st);
			return;
		}
	}
	if (plugin_subresource(dc, rt, req, route, resp))
		return;
	if (rt->ops->request != NULL) {
		int r = rt->ops->request(dc, rt, req, route, resp);

		if (r < 0)
			errors_internal(resp, r);
		if (r != 0)
			return;
	}
	if (strcmp(v, "get") == 0)
		do_get(&c, fmt);
	else if (strcmp(v, "list") == 0)
		do_list(&c, fmt);
	else if (strcmp(v, "watch") == 0)
		do_watch(&c, fmt);
	else if (strcmp(v, "create") == 0) {
		if (write_options(&c, "CreateOptions"))
			write_verb_create(&c);
	} else if (strcmp(v, "update") == 0) {
		if (write_options(&c, "UpdateOptions"))
			write_verb_update(&c);
	} else if (strcmp(v, "patch") == 0) {
		if (write_options(&c, "PatchOptions"))
			write_verb_patch(&c);
	} else if (strcmp(v, "delete") == 0) {
		/* With a body, DeleteOptions come from it alone. */
		if (req->body_len > 0 || delete_dry_run(&c))
			write_verb_delete(&c);
	} else if (strcmp(v, "deletecollection") == 0) {
		/* With a body, DeleteOptions come from it alone. */
		if (req->body_len > 0 || delete_dry_run(&c))
			write_verb_deletecollection(&c);
	} else
		reply_method_not_allowed(resp);
}

static void
version_reply(struct dc *dc, struct dc_resp *resp)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL || kc_json_set_str(o, "major", dc->major) < 0 ||
	    kc_json_set_str(o, "minor", dc->minor) < 0 ||
	    kc_json_set_str(o, "gitVersion", dc->git_version) < 0 ||
	    kc_json_set_str(o, "gitCommit", "0000000000000000000000000000000000000000") < 0 ||
	    kc_json_set_str(o, "gitTreeState", "clean") < 0 ||
	    kc_json_set_str(o, "buildDate", "2026-01-01T00:00:00Z") < 0 ||
	    kc_json_set_str(o, "goVersion", "go1.23.4") < 0 ||
	    kc_json_set_str(o, "compiler", "gc") < 0 ||
	    kc_json_set_str(o, "platform", "linux/amd64") < 0) {
		if (o != NULL)
			json_object_put(o);
		errors_internal(resp, -ENOMEM);
		return;
	}
	reply_json(resp, 200, o);
}

static void
health_reply(const struct dc_req *req, const struct dc_route *route,
    struct dc_resp *resp)
{
	char text[DC_SEGMENT_MAX + 64];

	if (route->name[0] != '\0') {
		if (strcmp(route->name, "ping") != 0 && strcmp(route->name, "log") != 0 &&
		    strcmp(route->name, "etcd") != 0) {
			reply_not_found_page(resp);
			return;
		}
		(void)snprintf(text, sizeof(text), "ok");
	} else if (req_has_param(req, "verbose"))
		(void)snprintf(text, sizeof(text), "[+]ping ok\n[+]log ok\n[+]etcd ok\n"
		    "%s check passed\n", route->resource);
	else
		(void)snprintf(text, sizeof(text), "ok");
	if (resp_text(resp, 200, TEXT_CT, text) < 0)
		errors_internal(resp, -ENOMEM);
}

/* Whether 'path' is a plug-in route's: its exact path, or below its prefix. */
static bool
route_matches(const struct dc_plugin_route *pr, const char *path)
{
	size_t len = strlen(pr->path);

	if (len > 0 && pr->path[len - 1] == '/')
		return strncmp(path, pr->path, len) == 0;
	return strcmp(path, pr->path) == 0;
}

/*
 * The started plug-ins' routes (paths outside the API groups) and request
 * filters (fault injection), in table order: true when one answered.
 */
static bool
plugin_routes(struct dc *dc, const struct dc_req *req, const struct dc_route *route,
    struct dc_resp *resp)
{
	int r;

	for (size_t i = 0; i < dc_nplugins; i++) {
		const struct dc_plugin *p = dc_plugins[i];

		if (plugin_state(dc, p) == NULL)
			continue;
		for (size_t j = 0; route->kind == DC_ROUTE_NONE && req->path != NULL &&
		    j < p->nroutes; j++) {
			if (!route_matches(&p->routes[j], req->path))
				continue;
			if ((r = p->routes[j].serve(dc, req, resp)) == DC_DECLINED)
				continue;
			if (r < 0)
				errors_internal(resp, r);
			return true;
		}
		if (p->filter != NULL && (r = p->filter(dc, req, route, resp)) != DC_DECLINED) {
			if (r < 0)
				errors_internal(resp, r);
			return true;
		}
	}
	return false;
}

static bool
public_route(const struct dc_route *route)
{
	return route->kind == DC_ROUTE_HEALTH || route->kind == DC_ROUTE_VERSION;
}

static void
handle(struct dc *dc, struct dc_req *req, struct dc_resp *resp)
{
	struct dc_route route;
	struct kc_status st = { 0 };
	bool watch = req_param_bool(req, "watch");
	int r;

	req->id = ++dc->next_rid;
	if (!dc->conv_again || req->first_id == 0)
		req->first_id = req->id;
	(void)router_parse(req->method, req->path, watch, &route);
	user_clear(&req->user);
	req->authenticated = false;
	if (req->authorization == NULL && public_route(&route)) {
		if (user_set(&req->user, "system:anonymous", "",
		    (const char *const []){ "system:unauthenticated", NULL }) < 0) {
			errors_internal(resp, -ENOMEM);
			return;
		}
	} else if ((r = auth_authenticate(dc->auth, req->authorization, &req->user)) < 0) {
		if (r == -ENOMEM)
			errors_internal(resp, r);
		else
			errors_reply(resp, KC_EUNAUTHORIZED, "Unauthorized");
		return;
	} else
		req->authenticated = true;
	if ((r = auth_impersonate(dc, req, &st)) < 0) {
		if (r == -ENOMEM)
			errors_internal(resp, r);
		else
			errors_kc(resp, r, &st);
		return;
	}
	if (plugin_routes(dc, req, &route, resp))
		return;
	if (route.kind != DC_ROUTE_RESOURCE && route.kind != DC_ROUTE_NONE) {
		struct dc_attrs attrs = {
			.user = &req->user, .verb = route.verb, .path = req->path,
		};
		char reason[512] = "";

		if (!auth_authorize(dc, &attrs, reason, sizeof(reason))) {
			errors_reply(resp, KC_EFORBIDDEN, "forbidden: User \"%s\" cannot %s "
			    "path \"%s\"%s%s", req->user.name, route.verb, req->path,
			    reason[0] != '\0' ? ": " : "", reason);
			return;
		}
	}
	switch (route.kind) {
	case DC_ROUTE_NONE:
		reply_not_found_page(resp);
		break;
	case DC_ROUTE_HEALTH:
		health_reply(req, &route, resp);
		break;
	case DC_ROUTE_VERSION:
		version_reply(dc, resp);
		break;
	case DC_ROUTE_API:
	case DC_ROUTE_APIS:
	case DC_ROUTE_GROUP:
	case DC_ROUTE_GROUP_VERSION:
		if ((r = discovery_handle(dc, req, &route, resp)) < 0)
			errors_internal(resp, r);
		break;
	case DC_ROUTE_OPENAPI:
		if (dc->hooks.openapi != NULL &&
		    (r = dc->hooks.openapi(dc, req, &route, resp)) != DC_DECLINED) {
			if (r < 0)
				errors_internal(resp, r);
			break;
		}
		reply_not_found_page(resp);
		break;
	case DC_ROUTE_RESOURCE:
		if (!registry_has_gv(dc, route.group, route.version)) {
			reply_not_found_page(resp);
			break;
		}
		resource_request(dc, req, &route, resp);
		break;
	}
	if (kc_log_enabled(KC_LOG_DEBUG)) {
		struct kc_log_ctx lc = { .action = "request", .rid = req->id };

		kc_log_debug(&lc, "%s %s -> %d (%s)", method_name(req->method), req->path,
		    resp->status, req->user.name != NULL ? req->user.name : "");
	}
}

/* The reply of a committed write that waited for a conversion webhook. */
static void
deferred_reply(struct dc_resp *resp)
{
	struct json_object *view = NULL;
	int r;

	if ((r = api_view(resp->deferred_rt, resp->deferred, &view)) == -EINPROGRESS)
		return;
	json_object_put(resp->deferred);
	resp->deferred = NULL;
	if (r < 0)
		errors_internal(resp, r);
	else
		reply_json(resp, resp->deferred_status, view);
}

/*
 * A request that needs a conversion webhook's answer is answered in
 * passes: each pass that meets a conversion not done yet asks the
 * webhook (hooks.convert: -EINPROGRESS, dc->conv_pending), throws its
 * reply away and sets req->redo, and http.c holds the request while
 * the webhook works, then calls again. Only reads and the steps of a
 * write before it commits are repeated; a committed write keeps its
 * outcome in resp->deferred and only its reply waits. A failed
 * conversion ends the request with a 500 and kube-apiserver's message.
 * Admission webhooks (admwebhook.c) wait the same way, before the write
 * commits; a pass that starts a call no pass made before is progress
 * (dc->conv_progress) and is not counted.
 */
void
api_handle(struct dc *dc, struct dc_req *req, struct dc_resp *resp)
{
	dc->conv_pending = false;
	dc->conv_progress = false;
	dc->conv_error[0] = '\0';
	dc->conv_allowed = true;
	dc->conv_again = req->redo;
	dc->conv_lo = dc->conv_hi = 0;
	req->redo = false;
	if (resp->deferred != NULL)
		deferred_reply(resp);
	else
		handle(dc, req, resp);
	if (dc->conv_error[0] != '\0') {
		resp_clear(resp);
		errors_reply(resp, KC_EINTERNAL, "%s", dc->conv_error);
	} else if (dc->conv_pending && !dc->conv_progress &&
	    ++req->passes > DC_CONV_PASSES_MAX) {
		/* What it needs changes faster than the webhook converts it. */
		resp_clear(resp);
		errors_reply(resp, KC_EINTERNAL, "conversion webhook: the objects changed "
		    "during %d conversions in a row", DC_CONV_PASSES_MAX);
	} else if (dc->conv_pending) {
		if (resp->deferred == NULL)
			resp_clear(resp);
		req->redo = true;
		req->conv_lo = dc->conv_lo;
		req->conv_hi = dc->conv_hi;
	}
	dc->conv_allowed = false;
	dc->conv_again = false;
	dc->conv_pending = false;
	dc->conv_progress = false;
	dc->conv_error[0] = '\0';
}

/*
 * api.c: the verb handlers, and the instance that ties the files
 * together.
 *
 * api_handle() takes one parsed request and always produces a reply:
 *
 *	authenticate	auth.c; public paths (health, /version) also
 *			anonymously, everything else needs a token
 *	impersonate	Impersonate-* headers (auth.c)
 *	route		router.c; then discovery.c, health, version,
 *			OpenAPI (a hook), or a resource request
 *	authorize	hooks.authorize (everything allowed without one)
 *	verb		get, list, watch, create, update, patch, delete,
 *			deletecollection, and the status, finalize and
 *			log subresources
 *
 * Writes go through one pipeline whatever the verb:
 *
 *	decode (JSON, YAML; protobuf through a hook) or apply the patch to
 *	the current object -> check apiVersion, kind, namespace and name
 *	-> convert to the storage version -> keep server-owned fields
 *	(uid, creationTimestamp, status on the main resource, everything
 *	but status on /status) -> type defaults -> validation (422 with
 *	causes) -> admission hook -> managedFields hook -> generation
 *	(bumped only when something outside metadata and status changed)
 *	-> storage, unless dryRun=All.
 *
 * Deletion follows the registry store of kube-apiserver: preconditions,
 * finalizers (deletionTimestamp, MODIFIED) or grace periods (pods on a
 * node), else removal (DELETED). Namespaces go Terminating and a loop
 * timer empties them, then removes them.
 *
 * Objects are stored in their storage version; api_view() gives the
 * version of the URL. Replies are JSON (or Tables for kubectl get).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include <openssl/evp.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/patch.h>
#include <kc/selector.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "devcluster.h"
#include "fieldmanager.h"
#include "table.h"

#define JSON_CT		"application/json"
#define TEXT_CT		"text/plain; charset=utf-8"
#define LIST_LIMIT_MAX	1000000

/* One resource request being answered. */
struct rctx {
	struct dc		*dc;
	struct dc_req		*req;		/* NULL for internal writes */
	struct dc_resp		*resp;
	const struct dc_rtype	*rt;
	const char		*ns;		/* "" when cluster-scoped */
	const char		*name;
	const char		*sub;		/* "" when none */
	bool			 dry_run;
	const char		*manager;
	time_t			 now;
};

/* A graceful deletion waiting for its grace period (no kubelet hook). */
struct pending {
	char	*group;
	char	*resource;
	char	*ns;
	char	*name;
	char	*uid;
	uint64_t due_ms;
};

struct dc_api {
	struct pending	*pending;
	size_t		 npending;
	struct dc_timer	 grace_timer;
	struct dc_timer	 ns_timer;
	struct dc_timer	 bookmark_timer;
};

static int	write_create(struct rctx *, struct json_object *, struct json_object **);
static int	write_update(struct rctx *, struct json_object *, const struct json_object *,
		    bool, struct json_object **);
static int	delete_one(struct rctx *, const struct json_object *, int64_t,
		    const char *, const struct json_object *, struct json_object **,
		    bool *);

/*
 * Small helpers
 */

void
api_uuid(char buf[37])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[16];
	size_t o = 0;

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		uint64_t x = kc_random_u64(), y = kc_random_u64();

		memcpy(b, &x, 8);
		memcpy(b + 8, &y, 8);
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	for (size_t i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			buf[o++] = '-';
		buf[o++] = hex[b[i] >> 4];
		buf[o++] = hex[b[i] & 15];
	}
	buf[o] = '\0';
}

char *
api_b64_encode(const void *data, size_t len)
{
	char *out;

	if (len > INT32_MAX / 2)
		return NULL;
	if ((out = kc_malloc(4 * ((len + 2) / 3) + 1)) == NULL)
		return NULL;
	(void)EVP_EncodeBlock((unsigned char *)out, data, (int)len);
	return out;
}

int
api_b64_decode(const char *text, char **ret, size_t *ret_len)
{
	size_t len = strlen(text), pad = 0;
	char *out;
	int n;

	if (len % 4 != 0 || len > INT32_MAX / 2)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		char c = text[i];

		if (c == '=') {
			if (i < len - 2)
				return -EINVAL;
			pad++;
		} else if (pad > 0 || !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '+' || c == '/'))
			return -EINVAL;
	}
	if ((out = kc_malloc(len / 4 * 3 + 1)) == NULL)
		return -ENOMEM;
	n = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)text, (int)len);
	if (n < 0 || (size_t)n < pad) {
		kc_free(out);
		return -EINVAL;
	}
	n -= (int)pad;
	out[n] = '\0';
	*ret = out;
	if (ret_len != NULL)
		*ret_len = (size_t)n;
	return 0;
}

static void
now_stamp(char buf[KC_TIME_MAX], time_t t)
{
	if (kc_time_format(t, buf, KC_TIME_MAX) < 0)
		(void)kc_strlcpy(buf, "1970-01-01T00:00:00Z", KC_TIME_MAX);
}

int
api_serialize(const struct json_object *o, struct kc_buf *b)
{
	struct json_object *w;
	const char *s;
	size_t len;
	int r;

	if (!json_object_is_type(o, json_type_object))
		return kc_buf_puts(b, o == NULL ? "null" :
		    json_object_to_json_string_ext((struct json_object *)(uintptr_t)o,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	/*
	 * json-c keeps the printed text in the object it prints: print a
	 * shallow wrapper so stored trees are never written to.
	 */
	if ((w = json_object_new_object()) == NULL)
		return -ENOMEM;
	json_object_object_foreach((struct json_object *)(uintptr_t)o, k, v) {
		if (json_object_object_add(w, k, json_object_get(v)) < 0) {
			json_object_put(v);
			json_object_put(w);
			return -ENOMEM;
		}
	}
	s = json_object_to_json_string_length(w,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	r = s != NULL ? kc_buf_append(b, s, len) : -ENOMEM;
	json_object_put(w);
	return r;
}

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

static void
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
static void
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

static void
not_found_page(struct dc_resp *resp)
{
	if (resp_text(resp, 404, TEXT_CT, "404 page not found\n") < 0)
		errors_internal(resp, -ENOMEM);
}

/* 404 for a path inside /api or /apis that names nothing. */
static void
not_found_status(struct dc_resp *resp)
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

static void
method_not_allowed(struct dc_resp *resp)
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

/* The media type of a Content-Type, lower-cased, without parameters. */
static void
media_type(const char *ct, char *buf, size_t size)
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
			media_type(item, type, sizeof(type));
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
 * Views and tables
 */

int
api_view(const struct dc_rtype *rt, const struct json_object *stored,
    struct json_object **ret)
{
	struct json_object *out;
	const char *av;

	if (rt->ops->convert_out != NULL)
		return rt->ops->convert_out(rt, stored, ret);
	av = kc_json_str(stored, "apiVersion");
	if (av != NULL && strcmp(av, rt->api_version) == 0) {
		*ret = json_object_get((struct json_object *)(uintptr_t)stored);
		return 0;
	}
	if ((out = json_object_new_object()) == NULL)
		return -ENOMEM;
	json_object_object_foreach((struct json_object *)(uintptr_t)stored, k, v) {
		if (strcmp(k, "apiVersion") == 0)
			continue;
		if (json_object_object_add(out, k, json_object_get(v)) < 0) {
			json_object_put(v);
			json_object_put(out);
			return -ENOMEM;
		}
	}
	if (kc_json_set_str(out, "apiVersion", rt->api_version) < 0) {
		json_object_put(out);
		return -ENOMEM;
	}
	*ret = out;
	return 0;
}

void
api_age_format(int64_t s, char *buf, size_t size)
{
	char age[TABLE_AGE_MAX];

	if (s > INT64_MAX / 1000000000 || s < INT64_MIN / 1000000000)
		s = s > 0 ? INT64_MAX / 1000000000 : INT64_MIN / 1000000000;
	table_human_duration(s * 1000000000, age);
	(void)kc_strlcpy(buf, age, size);
}

void
api_age_of(const char *timestamp, time_t now, char *buf, size_t size)
{
	char age[TABLE_AGE_MAX];

	table_age(timestamp, now, age);
	(void)kc_strlcpy(buf, age, size);
}

/*
 * The converter of 'rt': a plug-in's for a custom resource (its CRD's
 * printer columns; Name and Age when none has one), else the built-in
 * printer. '*ret_own' is a new converter the
 * caller frees, or NULL when '*ret' is borrowed.
 */
static int
table_conv_of(const struct dc_rtype *rt, const struct table_conv **ret,
    struct table_conv **ret_own)
{
	struct kc_status st = { 0 };
	const struct table_conv *tc = NULL;
	struct table_conv *own = NULL;
	int r;

	for (size_t i = 0; (rt->flags & DC_RT_CUSTOM) && tc == NULL && i < dc_nplugins; i++)
		if (dc_plugins[i]->table_conv != NULL)
			tc = dc_plugins[i]->table_conv(rt);
	if (tc == NULL) {
		if (rt->flags & DC_RT_CUSTOM)
			r = table_conv_columns(NULL, &own, &st);
		else
			r = table_conv_builtin(rt->group, rt->plural, &own);
		if (r < 0)
			return r == -ENOMEM ? r : KC_EINTERNAL;
		tc = own;
	}
	*ret = tc;
	*ret_own = own;
	return 0;
}

int
api_table_new(const struct dc_rtype *rt, enum dc_format fmt, bool columns,
    struct json_object **ret)
{
	const struct table_conv *tc;
	struct table_conv *own = NULL;
	struct json_object *t, *cols = NULL;
	int r;

	if ((t = json_object_new_object()) == NULL)
		return -ENOMEM;
	r = -ENOMEM;
	if (kc_json_set_str(t, "kind", "Table") < 0 ||
	    kc_json_set_str(t, "apiVersion", fmt == DC_FMT_TABLE_V1BETA1 ?
	    "meta.k8s.io/v1beta1" : "meta.k8s.io/v1") < 0 ||
	    kc_json_put(t, "metadata", json_object_new_object()) < 0)
		goto fail;
	if (columns) {
		if ((r = table_conv_of(rt, &tc, &own)) < 0 ||
		    (r = table_conv_definitions(tc, &cols)) < 0 ||
		    (r = kc_json_put(t, "columnDefinitions", cols)) < 0)
			goto fail;
	} else if (json_object_object_add(t, "columnDefinitions", NULL) < 0)
		goto fail;
	if ((r = kc_json_put(t, "rows", json_object_new_array())) < 0)
		goto fail;
	table_conv_free(own);
	*ret = t;
	return 0;
fail:
	table_conv_free(own);
	json_object_put(t);
	return r;
}

int
api_table_add_row(const struct dc_rtype *rt, struct json_object *table,
    const struct json_object *obj, enum dc_include include, time_t now)
{
	static const enum table_include inc[] = {
		[DC_INCLUDE_METADATA] = TABLE_INCLUDE_METADATA,
		[DC_INCLUDE_NONE] = TABLE_INCLUDE_NONE,
		[DC_INCLUDE_OBJECT] = TABLE_INCLUDE_OBJECT,
	};
	struct json_object *rows = kc_json_arr_of(table, "rows"), *one = NULL, *row;
	const char *av = kc_json_str(table, "apiVersion");
	const struct table_conv *tc;
	struct table_conv *own = NULL;
	struct kc_status st = { 0 };
	int r;

	if (rows == NULL)
		return -EINVAL;
	if ((r = table_conv_of(rt, &tc, &own)) < 0)
		return r;
	r = table_object(tc, obj, &(struct table_opts){
		.version = av != NULL && strcmp(av, "meta.k8s.io/v1beta1") == 0 ?
		    TABLE_V1BETA1 : TABLE_V1,
		.include = inc[include],
		.no_headers = true,
		.now = now,
	}, &one, &st);
	table_conv_free(own);
	if (r < 0)
		return r == -ENOMEM ? r : KC_EINTERNAL;
	row = json_object_array_get_idx(kc_json_arr_of(one, "rows"), 0);
	r = row != NULL ? kc_json_append(rows, json_object_get(row)) : KC_EINTERNAL;
	json_object_put(one);
	return r;
}

/*
 * Selectors and list options
 */

struct fieldget {
	const struct dc_rtype		*rt;
	const struct json_object	*obj;
	char				 buf[64];
};

static const char *
field_get(void *arg, const char *field)
{
	struct fieldget *fg = arg;
	const char *v;

	if (strcmp(field, "metadata.namespace") == 0) {
		v = kc_json_str(fg->obj, "metadata", "namespace");
		return v != NULL ? v : "";
	}
	if (fg->rt->ops->field_value != NULL &&
	    (v = fg->rt->ops->field_value(fg->obj, field, fg->buf, sizeof(fg->buf))) != NULL)
		return v;
	return kc_field_json_lookup(fg->obj, field, fg->buf, sizeof(fg->buf));
}

bool
api_matches(const struct dc_rtype *rt, const struct kc_label_selector *ls,
    const struct kc_field_selector *fs, const struct json_object *obj)
{
	struct fieldget fg = { .rt = rt, .obj = obj };

	if (ls != NULL && !kc_label_selector_matches_obj(ls, obj))
		return false;
	return fs == NULL || kc_field_selector_matches(fs, field_get, &fg);
}

int
api_selectors(const struct dc_rtype *rt, const char *label, const char *field,
    struct kc_label_selector **ret_ls, struct kc_field_selector **ret_fs,
    struct kc_status *st)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *ls = NULL;
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *fs = NULL;
	const char *supported[40];
	size_t n = 0;
	int r;

	if (label != NULL && label[0] != '\0' &&
	    (r = kc_label_selector_parse(label, &ls, st)) < 0)
		return r == -ENOMEM ? r : KC_EBADREQUEST;
	if (field != NULL && field[0] != '\0') {
		if ((r = kc_field_selector_parse(field, &fs, st)) < 0)
			return r == -ENOMEM ? r : KC_EBADREQUEST;
		supported[n++] = "metadata.name";
		if (rt->namespaced)
			supported[n++] = "metadata.namespace";
		for (size_t i = 0; rt->ops->field_selectors != NULL &&
		    rt->ops->field_selectors[i] != NULL && n + 1 < KC_ARRAY_SIZE(supported); i++)
			supported[n++] = rt->ops->field_selectors[i];
		supported[n] = NULL;
		if ((r = kc_field_selector_check(fs, supported, st)) < 0)
			return r == -ENOMEM ? r : KC_EBADREQUEST;
	}
	*ret_ls = ls;
	*ret_fs = fs;
	ls = NULL;
	fs = NULL;
	return 0;
}

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
	tok = api_b64_encode(json, len);
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

	if ((r = api_b64_decode(tok, &json, &len)) < 0)
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
static int
stored_text(const struct dc_rtype *rt, const struct json_object *stored, bool item,
    const char **ret, size_t *ret_len)
{
	if (rt->coll == NULL || !view_is_stored(rt, stored))
		return 1;
	return coll_text(rt->coll, stored, item, ret, ret_len);
}

static void
reply_object(struct rctx *c, int status, const struct json_object *stored)
{
	struct json_object *view = NULL;
	const char *text;
	size_t len;
	int r;

	if ((r = stored_text(c->rt, stored, false, &text, &len)) <= 0) {
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
	if ((r = api_view(c->rt, stored, &view)) < 0) {
		errors_internal(c->resp, r);
		return;
	}
	reply_json(c->resp, status, view);
}

/*
 * pods/<name>/exec by GET (WebSocket) or POST (SPDY): hooks.pod_exec, or
 * 400 "Upgrade request required" without it.
 */
static bool
upgrade_subresource(struct rctx *c)
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
	if (upgrade_subresource(c))
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

/* An item of a built-in list carries no apiVersion or kind. */
static struct json_object *
list_item(const struct dc_rtype *rt, struct json_object *view)
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
	const char *lim = req_param(c->req, "limit");
	const struct json_object *last = NULL;
	uint64_t rv = 0, snap, cur = storage_rv(c->dc->store);
	int64_t limit = 0;
	size_t n = 0, i, matched = 0;
	bool more = false, selecting;
	char rvbuf[24];
	int r;

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
	if (lim != NULL && lim[0] != '\0' && kc_parse_i64(lim, &limit) < 0) {
		errors_reply(c->resp, KC_EBADREQUEST,
		    "strconv.ParseInt: parsing \"%s\": invalid syntax", lim);
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
		if (fmt == DC_FMT_JSON && (r = stored_text(c->rt, objs[i],
		    !(c->rt->flags & DC_RT_CUSTOM), &text, &len)) <= 0) {
			if (r < 0 || (r = kc_buf_append(&ib, text, len)) < 0)
				goto fail;
			matched++;
			last = objs[i];
			continue;
		}
		if ((r = api_view(c->rt, objs[i], &view)) < 0)
			goto fail;
		if (fmt != DC_FMT_JSON)
			r = api_table_add_row(c->rt, out, view, include_param(c->req), c->now);
		else if ((item = list_item(c->rt, view)) == NULL)
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
	const char *to = req_param(c->req, "timeoutSeconds");
	const char *bm = req_param(c->req, "allowWatchBookmarks");
	const char *fsel = req_param(c->req, "fieldSelector");
	_cleanup_(kc_freep) char *fsel_name = NULL;
	uint64_t rv = 0, cur = storage_rv(c->dc->store);
	int64_t timeout = 0;
	int r;

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
	if (to != NULL && to[0] != '\0' && kc_parse_i64(to, &timeout) < 0) {
		errors_reply(c->resp, KC_EBADREQUEST,
		    "strconv.ParseInt: parsing \"%s\": invalid syntax", to);
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
	wo.bookmarks = bm != NULL && (strcmp(bm, "true") == 0 || strcmp(bm, "1") == 0);
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
 * The write pipeline
 */

static struct dc_write_ctx
write_ctx(const struct rctx *c, enum dc_op op, const struct json_object *old)
{
	return (struct dc_write_ctx){
		.dc = c->dc,
		.rt = c->rt,
		.req = c->req,
		.op = op,
		.subresource = c->sub[0] != '\0' ? c->sub : NULL,
		.field_manager = c->manager,
		.dry_run = c->dry_run,
		.old = old,
	};
}

static void
bad_request(struct rctx *c, const char *fmt, const char *a, const char *b)
{
	errors_reply(c->resp, KC_EBADREQUEST, fmt, a, b);
}

/* Decodes a request body; on failure the reply is written. */
static int
decode_body(struct rctx *c, struct json_object **ret)
{
	struct kc_status st = { 0 };
	struct json_object *o = NULL;
	char mt[128];
	int r;

	media_type(c->req->content_type, mt, sizeof(mt));
	if (strcmp(mt, "application/json") == 0) {
		if (c->req->body_len == 0) {
			errors_reply(c->resp, KC_EBADREQUEST, "Object 'Kind' is missing in ''");
			return KC_EBADREQUEST;
		}
		if ((r = kc_json_parse(c->req->body, c->req->body_len, &o, &st)) < 0) {
			if (r == -ENOMEM)
				errors_internal(c->resp, r);
			else
				errors_reply(c->resp, KC_EBADREQUEST,
				    "couldn't get version/kind; json parse error: %s", st.message);
			return r;
		}
	} else if (strcmp(mt, "application/yaml") == 0) {
		if ((r = kc_yaml_parse_one(c->req->body != NULL ? c->req->body : "",
		    c->req->body_len, NULL, &o, &st)) < 0) {
			if (r == -ENOMEM)
				errors_internal(c->resp, r);
			else
				errors_reply(c->resp, KC_EBADREQUEST,
				    "error converting YAML to JSON: %s", st.message);
			return r;
		}
	} else if (strcmp(mt, "application/vnd.kubernetes.protobuf") == 0 &&
	    c->dc->hooks.decode_protobuf != NULL) {
		if ((r = c->dc->hooks.decode_protobuf(c->dc, c->rt, c->req->body,
		    c->req->body_len, &o, &st)) < 0) {
			if (r == -ENOMEM)
				errors_internal(c->resp, r);
			else
				errors_kc(c->resp, r, &st);
			return r;
		}
	} else {
		errors_reply(c->resp, KC_EMEDIATYPE, "the body of the request was in an "
		    "unknown format - accepted media types include: application/json, "
		    "application/yaml%s%s",
		    c->dc->hooks.decode_protobuf != NULL ?
		    ", application/vnd.kubernetes.protobuf" : "",
		    strcmp(mt, "application/vnd.kubernetes.protobuf") == 0 ?
		    " (protobuf request bodies are not supported by this devcluster)" : "");
		return KC_EMEDIATYPE;
	}
	if (!json_object_is_type(o, json_type_object)) {
		if (o != NULL)
			json_object_put(o);
		errors_reply(c->resp, KC_EBADREQUEST,
		    "couldn't get version/kind; json parse error: the body is not a JSON "
		    "object");
		return KC_EBADREQUEST;
	}
	*ret = o;
	return 0;
}

/* apiVersion and kind of a body: filled from the URL when absent. */
static int
check_typemeta(struct rctx *c, struct json_object *obj)
{
	const char *kind = kc_json_str(obj, "kind");
	const char *av = kc_json_str(obj, "apiVersion");

	if (kind == NULL || kind[0] == '\0') {
		if (kc_json_set_str(obj, "kind", c->rt->kind) < 0)
			goto oom;
	} else if (strcmp(kind, c->rt->kind) != 0) {
		char msg[512];

		(void)snprintf(msg, sizeof(msg), "%s in version \"%s\" cannot be handled "
		    "as a %s: the kind of the object does not match the resource",
		    kind, c->rt->version, c->rt->kind);
		errors_reply(c->resp, KC_EBADREQUEST, "%s", msg);
		return KC_EBADREQUEST;
	}
	if (av == NULL || av[0] == '\0') {
		if (kc_json_set_str(obj, "apiVersion", c->rt->api_version) < 0)
			goto oom;
	} else if (strcmp(av, c->rt->api_version) != 0) {
		bad_request(c, "the API version in the data (%s) does not match the "
		    "expected API version (%s)", av, c->rt->api_version);
		return KC_EBADREQUEST;
	}
	return 0;
oom:
	errors_internal(c->resp, -ENOMEM);
	return -ENOMEM;
}

/* metadata.namespace of a body against the URL's. */
static int
check_namespace(struct rctx *c, struct json_object *obj)
{
	struct json_object *meta = kc_json_ensure_obj(obj, "metadata");
	const char *ns;

	if (meta == NULL) {
		errors_internal(c->resp, -ENOMEM);
		return -ENOMEM;
	}
	ns = kc_json_str(meta, "namespace");
	if (!c->rt->namespaced) {
		json_object_object_del(meta, "namespace");
		return 0;
	}
	if (ns != NULL && ns[0] != '\0' && strcmp(ns, c->ns) != 0) {
		errors_reply(c->resp, KC_EBADREQUEST, "the namespace of the provided object "
		    "does not match the namespace sent on the request");
		return KC_EBADREQUEST;
	}
	if (kc_json_set_str(meta, "namespace", c->ns) < 0) {
		errors_internal(c->resp, -ENOMEM);
		return -ENOMEM;
	}
	return 0;
}

/* To the storage version (the object is consumed, *ret is new). */
static int
to_storage(struct rctx *c, struct json_object *obj, struct json_object **ret)
{
	int r;

	if (c->rt->ops->decoded != NULL) {
		struct dc_write_ctx wc = write_ctx(c, c->name[0] != '\0' ? DC_OP_UPDATE :
		    DC_OP_CREATE, NULL);

		if ((r = c->rt->ops->decoded(&wc, obj, c->resp)) < 0) {
			json_object_put(obj);
			return r;
		}
	}
	if (c->rt->ops->convert_in == NULL) {
		*ret = obj;
		return 0;
	}
	r = c->rt->ops->convert_in(c->rt, obj, ret);
	json_object_put(obj);
	if (r < 0)
		errors_internal(c->resp, r);
	return r;
}

static void
generate_name(const char *prefix, char *buf, size_t size)
{
	static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
	char suffix[6];
	size_t plen = strlen(prefix);

	if (plen > 58)
		plen = 58;
	for (size_t i = 0; i < 5; i++)
		suffix[i] = alphabet[kc_random_u64() % (sizeof(alphabet) - 1)];
	suffix[5] = '\0';
	(void)snprintf(buf, size, "%.*s%s", (int)plen, prefix, suffix);
}

/* Everything outside metadata (and status when it is a subresource). */
static bool
same_spec(const struct dc_rtype *rt, const struct json_object *a,
    const struct json_object *b)
{
	size_t na = 0, nb = 0;

	json_object_object_foreach((struct json_object *)(uintptr_t)a, k, av) {
		struct json_object *bv;

		if (strcmp(k, "metadata") == 0 || strcmp(k, "apiVersion") == 0 ||
		    strcmp(k, "kind") == 0 ||
		    (strcmp(k, "status") == 0 && (rt->flags & DC_RT_STATUS)))
			continue;
		na++;
		if (!json_object_object_get_ex(b, k, &bv) || !kc_json_equal(av, bv))
			return false;
	}
	json_object_object_foreach((struct json_object *)(uintptr_t)b, k2, bv2) {
		(void)bv2;
		if (strcmp(k2, "metadata") == 0 || strcmp(k2, "apiVersion") == 0 ||
		    strcmp(k2, "kind") == 0 ||
		    (strcmp(k2, "status") == 0 && (rt->flags & DC_RT_STATUS)))
			continue;
		nb++;
	}
	return na == nb;
}

/* Sets (or removes, when 'v' is NULL) key 'k' of 'o' to a copy of 'v'. */
static int
copy_key(struct json_object *o, const char *k, const struct json_object *v)
{
	struct json_object *cp;

	if (v == NULL) {
		json_object_object_del(o, k);
		return 0;
	}
	if ((cp = kc_json_copy(v)) == NULL)
		return -ENOMEM;
	return kc_json_put(o, k, cp);
}

static bool
strv_has(const struct json_object *arr, const char *s)
{
	size_t n = json_object_is_type(arr, json_type_array) ?
	    json_object_array_length(arr) : 0;

	for (size_t i = 0; i < n; i++) {
		const char *v = json_object_get_string(json_object_array_get_idx(arr, i));

		if (v != NULL && strcmp(v, s) == 0)
			return true;
	}
	return false;
}

static size_t
arr_len(const struct json_object *arr)
{
	return json_object_is_type(arr, json_type_array) ?
	    json_object_array_length(arr) : 0;
}

static bool
ns_exists(struct rctx *c, bool *terminating)
{
	struct dc_rtype *nst = registry_find(c->dc, "", "v1", "namespaces");
	const struct json_object *ns;

	*terminating = false;
	if (nst == NULL)
		return true;
	if ((ns = coll_get(nst->coll, "", c->ns)) == NULL)
		return false;
	*terminating = kc_json_get(ns, "metadata", "deletionTimestamp") != NULL;
	return true;
}

static void
ns_terminating(struct rctx *c, const char *name)
{
	struct json_object *d = json_object_new_object(), *causes, *cause, *o = NULL;
	char msg[1024], cmsg[512];

	(void)snprintf(msg, sizeof(msg), "%s \"%s\" is forbidden: unable to create new "
	    "content in namespace %s because it is being terminated", c->rt->qualified,
	    name, c->ns);
	(void)snprintf(cmsg, sizeof(cmsg), "namespace %s is being terminated", c->ns);
	causes = json_object_new_array();
	cause = json_object_new_object();
	if (d == NULL || kc_json_set_str(d, "name", name) < 0 ||
	    (c->rt->group[0] != '\0' && kc_json_set_str(d, "group", c->rt->group) < 0) ||
	    kc_json_set_str(d, "kind", c->rt->plural) < 0 ||
	    kc_json_put(d, "causes", causes) < 0 || kc_json_append(causes, cause) < 0 ||
	    kc_json_set_str(cause, "reason", "NamespaceTerminating") < 0 ||
	    kc_json_set_str(cause, "message", cmsg) < 0 ||
	    kc_json_set_str(cause, "field", "metadata.namespace") < 0 ||
	    errors_status_body(KC_EFORBIDDEN, msg, d, &o) < 0) {
		if (d != NULL)
			json_object_put(d);
		errors_internal(c->resp, -ENOMEM);
		return;
	}
	json_object_put(d);
	reply_json(c->resp, 403, o);
}

static int
run_validation(struct rctx *c, enum dc_op op, struct json_object *obj,
    const struct json_object *old)
{
	struct dc_write_ctx wc = write_ctx(c, op, old);
	struct dc_errs errs = { 0 };
	const char *name = kc_json_str(obj, "metadata", "name");
	int r;

	if (name == NULL || name[0] == '\0')
		errs_required(&errs, "metadata.name", "name or generateName is required");
	else
		builtin_validate_name(c->rt->name_rule, "metadata.name", name, &errs);
	builtin_validate_meta(obj, &errs);
	if (old != NULL && kc_json_get(old, "metadata", "deletionTimestamp") != NULL) {
		struct json_object *nf = kc_json_get(obj, "metadata", "finalizers");
		struct json_object *of = kc_json_get(old, "metadata", "finalizers");
		char list[512] = "";
		size_t off = 0;

		for (size_t i = 0; i < arr_len(nf); i++) {
			const char *f = json_object_get_string(json_object_array_get_idx(nf, i));
			char q[256];
			int n;

			if (f == NULL || strv_has(of, f))
				continue;
			n = snprintf(list + off, sizeof(list) - off, "%s%s", off > 0 ? ", " : "",
			    errors_quote(f, q, sizeof(q)));
			if (n > 0 && (size_t)n < sizeof(list) - off)
				off += (size_t)n;
		}
		if (off > 0) {
			char detail[700];

			(void)snprintf(detail, sizeof(detail), "no new finalizers can be added "
			    "if the object is being deleted, found new finalizers []string{%s}",
			    list);
			errs_forbidden(&errs, "metadata.finalizers", detail);
		}
	}
	if (c->rt->ops->validate != NULL &&
	    (r = c->rt->ops->validate(&wc, obj, old, &errs)) < 0) {
		errors_internal(c->resp, r);
		return r;
	}
	if (errs.n > 0) {
		errors_invalid(c->resp, c->rt->qualified_kind, c->rt->group,
		    name != NULL ? name : "", &errs);
		return KC_EINVALID;
	}
	return 0;
}

/* Admission, the last step before storage: the plug-ins' in table order. */
static int
run_hooks(struct rctx *c, enum dc_op op, struct json_object *obj,
    const struct json_object *old)
{
	struct dc_write_ctx wc = write_ctx(c, op, old);
	struct kc_status st = { 0 };
	int r;

	for (size_t i = 0; i < dc_nplugins; i++) {
		const struct dc_plugin *p = dc_plugins[i];

		if (p->admit == NULL || plugin_state(c->dc, p) == NULL)
			continue;
		if ((r = p->admit(&wc, obj, &st)) < 0) {
			if (r == -ENOMEM)
				errors_internal(c->resp, r);
			else
				errors_kc(c->resp, r, &st);
			return r;
		}
	}
	return 0;
}

/*
 * managedFields, recorded where kube-apiserver records them: on the
 * decoded and defaulted object, before admission and the strategy's
 * preparation (so server-set fields are nobody's).
 */
static int
run_managed_fields(struct rctx *c, enum dc_op op, struct json_object *obj,
    const struct json_object *old)
{
	struct dc_write_ctx wc = write_ctx(c, op, old);
	int r;

	if (c->dc->hooks.managed_fields != NULL &&
	    (r = c->dc->hooks.managed_fields(&wc, obj)) < 0) {
		errors_internal(c->resp, r);
		return r;
	}
	return 0;
}

static int
write_create(struct rctx *c, struct json_object *obj, struct json_object **ret)
{
	struct dc_write_ctx wc = write_ctx(c, DC_OP_CREATE, NULL);
	struct json_object *meta;
	const char *name, *gen, *rv;
	char stamp[KC_TIME_MAX], uid[37], gname[DC_NAME_MAX + 1];
	bool generated = false, term;
	int r;

	if ((meta = kc_json_ensure_obj(obj, "metadata")) == NULL)
		goto oom;
	rv = kc_json_str(meta, "resourceVersion");
	if (rv != NULL && rv[0] != '\0') {
		reply_unknown(c->resp, 500,
		    "resourceVersion should not be set on objects to be created");
		r = KC_EINTERNAL;
		goto fail;
	}
	name = kc_json_str(meta, "name");
	gen = kc_json_str(meta, "generateName");
	if ((name == NULL || name[0] == '\0') && gen != NULL && gen[0] != '\0') {
		generate_name(gen, gname, sizeof(gname));
		generated = true;
		if (kc_json_set_str(meta, "name", gname) < 0)
			goto oom;
	}
	api_uuid(uid);
	now_stamp(stamp, c->now);
	json_object_object_del(meta, "resourceVersion");
	json_object_object_del(meta, "deletionTimestamp");
	json_object_object_del(meta, "deletionGracePeriodSeconds");
	json_object_object_del(meta, "selfLink");
	if (kc_json_set_str(meta, "uid", uid) < 0 ||
	    kc_json_set_str(meta, "creationTimestamp", stamp) < 0)
		goto oom;
	if (c->rt->flags & DC_RT_GENERATION) {
		if (kc_json_set_int(meta, "generation", 1) < 0)
			goto oom;
	} else
		json_object_object_del(meta, "generation");
	if ((c->rt->flags & DC_RT_STATUS) && !(c->rt->flags & DC_RT_CUSTOM) &&
	    c->rt->ops->prepare_create == NULL)
		json_object_object_del(obj, "status");
	if ((c->rt->flags & DC_RT_STATUS) && (c->rt->flags & DC_RT_CUSTOM))
		json_object_object_del(obj, "status");
	if (c->rt->ops->defaults != NULL && (r = c->rt->ops->defaults(&wc, obj)) < 0)
		goto internal;
	if ((r = run_managed_fields(c, DC_OP_CREATE, obj, NULL)) < 0)
		goto fail;
	if (c->rt->ops->prepare_create != NULL &&
	    (r = c->rt->ops->prepare_create(&wc, obj)) < 0)
		goto internal;
	if ((r = run_validation(c, DC_OP_CREATE, obj, NULL)) < 0)
		goto fail;
	name = kc_json_str(obj, "metadata", "name");
	if (c->rt->namespaced) {
		if (!ns_exists(c, &term)) {
			struct dc_rtype *nst = registry_find(c->dc, "", "v1", "namespaces");

			errors_notfound(c->resp, nst, c->ns);
			r = KC_ENOTFOUND;
			goto fail;
		}
		if (term) {
			ns_terminating(c, name);
			r = KC_EFORBIDDEN;
			goto fail;
		}
	}
	for (int tries = 0; generated && tries < 8 &&
	    coll_get(c->rt->coll, c->ns, name) != NULL; tries++) {
		generate_name(gen, gname, sizeof(gname));
		if (kc_json_set_str(kc_json_obj_of(obj, "metadata"), "name", gname) < 0)
			goto oom;
		name = kc_json_str(obj, "metadata", "name");
	}
	if ((r = run_hooks(c, DC_OP_CREATE, obj, NULL)) < 0)
		goto fail;
	if (c->dry_run) {
		if (coll_get(c->rt->coll, c->ns, name) != NULL) {
			errors_obj(c->resp, KC_EEXISTS, c->rt, name,
			    "%s \"%s\" already exists", c->rt->qualified, name);
			r = KC_EEXISTS;
			goto fail;
		}
		*ret = obj;
		return 0;
	}
	{
		char nbuf[DC_SEGMENT_MAX];

		(void)kc_strlcpy(nbuf, name, sizeof(nbuf));
		r = storage_create(c->dc->store, c->rt->coll, obj, ret);
		if (r == KC_EEXISTS) {
			errors_obj(c->resp, KC_EEXISTS, c->rt, nbuf,
			    "%s \"%s\" already exists", c->rt->qualified, nbuf);
			return r;
		}
		if (r < 0) {
			errors_internal(c->resp, r);
			return r;
		}
	}
	return 0;
oom:
	r = -ENOMEM;
internal:
	errors_internal(c->resp, r);
fail:
	json_object_put(obj);
	return r;
}

static void
conflict(struct rctx *c, const char *name)
{
	errors_obj(c->resp, KC_ECONFLICT, c->rt, name, "Operation cannot be fulfilled on "
	    "%s \"%s\": the object has been modified; please apply your changes to the "
	    "latest version and try again", c->rt->qualified, name);
}

/* An update of a deleting object that leaves no finalizers removes it. */
static bool
finalized(const struct dc_rtype *rt, const struct json_object *obj)
{
	if (kc_json_get(obj, "metadata", "deletionTimestamp") == NULL)
		return false;
	if (arr_len(kc_json_get(obj, "metadata", "finalizers")) > 0)
		return false;
	if (strcmp(rt->plural, "namespaces") == 0 && rt->group[0] == '\0' &&
	    arr_len(kc_json_get(obj, "spec", "finalizers")) > 0)
		return false;
	return true;
}

static int
write_update(struct rctx *c, struct json_object *obj, const struct json_object *old,
    bool require_rv, struct json_object **ret)
{
	struct dc_write_ctx wc = write_ctx(c, DC_OP_UPDATE, old);
	struct json_object *meta, *next = NULL, *oldmeta = kc_json_obj_of(old, "metadata");
	const char *brv, *buid, *ouid, *orv;
	char name[DC_SEGMENT_MAX];
	int64_t gen;
	int r;

	(void)kc_strlcpy(name, c->name, sizeof(name));
	if ((meta = kc_json_ensure_obj(obj, "metadata")) == NULL)
		goto oom;
	brv = kc_json_str(meta, "resourceVersion");
	orv = kc_json_str(oldmeta, "resourceVersion");
	if (brv == NULL || brv[0] == '\0') {
		if (require_rv && (c->rt->flags & DC_RT_CUSTOM)) {
			struct dc_errs errs = { 0 };

			errs_invalid(&errs, "metadata.resourceVersion", "0x0",
			    "must be specified for an update");
			errors_invalid(c->resp, c->rt->qualified_kind, c->rt->group, name,
			    &errs);
			r = KC_EINVALID;
			goto fail;
		}
	} else if (orv == NULL || strcmp(brv, orv) != 0) {
		conflict(c, name);
		r = KC_ECONFLICT;
		goto fail;
	}
	buid = kc_json_str(meta, "uid");
	ouid = kc_json_str(oldmeta, "uid");
	if (buid != NULL && buid[0] != '\0' && ouid != NULL && strcmp(buid, ouid) != 0) {
		errors_obj(c->resp, KC_ECONFLICT, c->rt, name, "Precondition failed: UID in "
		    "precondition: %s, UID in object meta: %s", buid, ouid);
		r = KC_ECONFLICT;
		goto fail;
	}
	if (strcmp(c->sub, "status") == 0 || strcmp(c->sub, "finalize") == 0) {
		/* Only status (or spec.finalizers) comes from the body. */
		if ((next = kc_json_copy(old)) == NULL)
			goto oom;
		if (strcmp(c->sub, "status") == 0)
			r = copy_key(next, "status", kc_json_get(obj, "status"));
		else {
			struct json_object *spec = kc_json_ensure_obj(next, "spec");

			r = spec == NULL ? -ENOMEM :
			    copy_key(spec, "finalizers", kc_json_get(obj, "spec", "finalizers"));
		}
		/*
		 * managedFields are the field manager's: an apply's result
		 * keeps its own, other writes get theirs recomputed.
		 */
		if (r == 0 && c->dc->hooks.managed_fields != NULL)
			r = copy_key(kc_json_obj_of(next, "metadata"), "managedFields",
			    kc_json_get(obj, "metadata", "managedFields"));
		if (r < 0)
			goto oom;
		json_object_put(obj);
		obj = next;
		next = NULL;
		meta = kc_json_obj_of(obj, "metadata");
	} else {
		static const char *const kept[] = {
			"uid", "creationTimestamp", "deletionTimestamp",
			"deletionGracePeriodSeconds", "generation", NULL
		};

		for (size_t i = 0; kept[i] != NULL; i++)
			if (copy_key(meta, kept[i], kc_json_get(oldmeta, kept[i])) < 0)
				goto oom;
		json_object_object_del(meta, "selfLink");
		if ((c->rt->flags & DC_RT_STATUS) &&
		    copy_key(obj, "status", kc_json_get(old, "status")) < 0)
			goto oom;
		if (c->rt->ops->prepare_update != NULL &&
		    (r = c->rt->ops->prepare_update(&wc, obj, old)) < 0)
			goto internal;
		if (c->rt->ops->defaults != NULL && (r = c->rt->ops->defaults(&wc, obj)) < 0)
			goto internal;
	}
	if ((r = run_managed_fields(c, DC_OP_UPDATE, obj, old)) < 0)
		goto fail;
	if ((r = run_validation(c, DC_OP_UPDATE, obj, old)) < 0)
		goto fail;
	if (c->rt->flags & DC_RT_GENERATION) {
		gen = kc_json_int(old, 1, "metadata", "generation");
		if (!same_spec(c->rt, obj, old))
			gen++;
		if (kc_json_set_int(meta, "generation", gen) < 0)
			goto oom;
	}
	if (orv != NULL && kc_json_set_str(meta, "resourceVersion", orv) < 0)
		goto oom;
	if ((r = run_hooks(c, DC_OP_UPDATE, obj, old)) < 0)
		goto fail;
	if (c->dry_run) {
		*ret = obj;
		return 0;
	}
	if (finalized(c->rt, obj))
		r = storage_delete(c->dc->store, c->rt->coll, obj, 0, ret);
	else
		r = storage_update(c->dc->store, c->rt->coll, obj, 0, ret);
	if (r == KC_ECONFLICT) {
		conflict(c, name);
		return r;
	}
	if (r < 0) {
		errors_internal(c->resp, r);
		return r;
	}
	return 0;
oom:
	r = -ENOMEM;
internal:
	errors_internal(c->resp, r);
fail:
	if (next != NULL)
		json_object_put(next);
	json_object_put(obj);
	return r;
}

/*
 * create, update, patch
 */

/* hooks.binding: POST pods/<name>/binding and the bindings collection. */
static bool
binding_request(struct rctx *c)
{
	struct json_object *obj = NULL;
	int r;

	if (c->dc->hooks.binding == NULL || !(strcmp(c->sub, "binding") == 0 ||
	    (c->sub[0] == '\0' && c->rt->group[0] == '\0' &&
	    strcmp(c->rt->plural, "bindings") == 0)))
		return false;
	if (decode_body(c, &obj) < 0)
		return true;
	if (check_namespace(c, obj) == 0 && (r = c->dc->hooks.binding(c->dc, c->req, c->ns,
	    c->sub[0] != '\0' ? c->name : NULL, obj, c->dry_run, c->resp)) < 0)
		errors_internal(c->resp, r);
	json_object_put(obj);
	return true;
}

static void
do_create(struct rctx *c)
{
	struct json_object *obj = NULL, *st = NULL, *stored = NULL;

	if (binding_request(c) || upgrade_subresource(c))
		return;
	if (c->name[0] != '\0') {
		method_not_allowed(c->resp);
		return;
	}
	if (decode_body(c, &obj) < 0)
		return;
	if (check_typemeta(c, obj) < 0 || check_namespace(c, obj) < 0) {
		json_object_put(obj);
		return;
	}
	if (to_storage(c, obj, &st) < 0)
		return;
	if (write_create(c, st, &stored) < 0)
		return;
	reply_object(c, 201, stored);
	json_object_put(stored);
}

/* The body's name against the URL's. */
static int
check_name(struct rctx *c, const struct json_object *obj)
{
	const char *name = kc_json_str(obj, "metadata", "name");

	if (name == NULL || strcmp(name, c->name) != 0) {
		bad_request(c, "the name of the object (%s) does not match the name on "
		    "the URL (%s)", name != NULL ? name : "", c->name);
		return KC_EBADREQUEST;
	}
	return 0;
}

static void
do_update(struct rctx *c)
{
	struct json_object *obj = NULL, *st = NULL, *stored = NULL;
	const struct json_object *old;
	bool created = false;

	if (decode_body(c, &obj) < 0)
		return;
	if (check_typemeta(c, obj) < 0 || check_namespace(c, obj) < 0 ||
	    check_name(c, obj) < 0) {
		json_object_put(obj);
		return;
	}
	if (to_storage(c, obj, &st) < 0)
		return;
	old = coll_get(c->rt->coll, c->ns, c->name);
	if (old == NULL) {
		if (!(c->rt->flags & DC_RT_CREATE_ON_UPDATE) || c->sub[0] != '\0') {
			json_object_put(st);
			errors_notfound(c->resp, c->rt, c->name);
			return;
		}
		json_object_object_del(kc_json_obj_of(st, "metadata"), "resourceVersion");
		if (write_create(c, st, &stored) < 0)
			return;
		created = true;
	} else {
		struct json_object *hold = json_object_get((struct json_object *)(uintptr_t)old);
		int r = write_update(c, st, hold, true, &stored);

		json_object_put(hold);
		if (r < 0)
			return;
	}
	reply_object(c, created ? 201 : 200, stored);
	json_object_put(stored);
}

enum patch_kind { PATCH_JSON, PATCH_MERGE, PATCH_SMP, PATCH_APPLY, PATCH_NONE };

static enum patch_kind
patch_kind(const char *ct)
{
	char mt[128];

	media_type(ct, mt, sizeof(mt));
	if (strcmp(mt, "application/json-patch+json") == 0)
		return PATCH_JSON;
	if (strcmp(mt, "application/merge-patch+json") == 0)
		return PATCH_MERGE;
	if (strcmp(mt, "application/strategic-merge-patch+json") == 0)
		return PATCH_SMP;
	if (strcmp(mt, "application/apply-patch+yaml") == 0 ||
	    strcmp(mt, "application/apply-patch+cbor") == 0)
		return strcmp(mt, "application/apply-patch+yaml") == 0 ? PATCH_APPLY :
		    PATCH_NONE;
	return PATCH_NONE;
}

static void
patch_unsupported(struct rctx *c)
{
	errors_reply(c->resp, KC_EMEDIATYPE, "the body of the request was in an unknown "
	    "format - accepted media types include: application/json-patch+json, "
	    "application/merge-patch+json, application/apply-patch+yaml%s",
	    c->rt->smp != NULL ? ", application/strategic-merge-patch+json" : "");
}

/*
 * A Status reply for a failure 'code' with st's message and 'details'
 * (a metav1.StatusDetails, consumed; may be NULL).
 */
static void
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

/* Server-side apply: the hook, or create-or-merge. */
static int
do_apply(struct rctx *c, const struct json_object *old, struct json_object **ret)
{
	struct kc_status st = { 0 };
	struct dc_errs errs = { 0 };
	struct json_object *applied = NULL, *view = NULL, *result = NULL, *details = NULL;
	int r;

	if (c->manager == NULL || c->manager[0] == '\0') {
		errs_required(&errs, "fieldManager", "is required for apply patch");
		errors_invalid(c->resp, "PatchOptions.meta.k8s.io", "meta.k8s.io", "", &errs);
		return KC_EINVALID;
	}
	if ((r = kc_yaml_parse_one(c->req->body != NULL ? c->req->body : "",
	    c->req->body_len, NULL, &applied, &st)) < 0) {
		if (r == -ENOMEM)
			errors_internal(c->resp, r);
		else
			errors_reply(c->resp, KC_EBADREQUEST,
			    "error decoding YAML: %s", st.message);
		return r;
	}
	if (!json_object_is_type(applied, json_type_object)) {
		if (applied != NULL)
			json_object_put(applied);
		errors_reply(c->resp, KC_EBADREQUEST, "the apply patch is not an object");
		return KC_EBADREQUEST;
	}
	if (kc_json_get(applied, "metadata", "managedFields") != NULL) {
		json_object_put(applied);
		errors_reply(c->resp, KC_EBADREQUEST, "metadata.managedFields must be nil");
		return KC_EBADREQUEST;
	}
	if (check_typemeta(c, applied) < 0 || check_namespace(c, applied) < 0 ||
	    check_name(c, applied) < 0) {
		json_object_put(applied);
		return KC_EBADREQUEST;
	}
	if (old != NULL && (r = api_view(c->rt, old, &view)) < 0) {
		json_object_put(applied);
		errors_internal(c->resp, r);
		return r;
	}
	if (c->dc->hooks.apply != NULL) {
		r = c->dc->hooks.apply(c->dc, c->rt, c->req, view, applied, &result, &errs,
		    &st, &details);
		if (r == KC_EINVALID && errs.n > 0)
			errors_invalid(c->resp, c->rt->qualified_kind, c->rt->group, c->name,
			    &errs);
		else if (r < 0) {
			reply_details(c->resp, r, &st, details);
			details = NULL;
		}
		if (details != NULL)
			json_object_put(details);
	} else if (view == NULL) {
		result = json_object_get(applied);
		r = 0;
	} else {
		if (c->rt->flags & DC_RT_STATUS)
			json_object_object_del(applied, "status");
		r = kc_merge_patch_apply(view, applied, &result, &st);
		if (r < 0)
			errors_kc(c->resp, r, &st);
	}
	json_object_put(applied);
	if (view != NULL)
		json_object_put(view);
	if (r < 0)
		return r;
	*ret = result;
	return 0;
}

static void
do_patch(struct rctx *c)
{
	struct kc_status st = { 0 };
	struct json_object *patch = NULL, *view = NULL, *result = NULL;
	struct json_object *stored = NULL, *hold = NULL, *sto = NULL;
	const struct json_object *old = coll_get(c->rt->coll, c->ns, c->name);
	enum patch_kind pk = patch_kind(c->req->content_type);
	int r;

	if (pk == PATCH_NONE || (pk == PATCH_SMP && c->rt->smp == NULL)) {
		patch_unsupported(c);
		return;
	}
	if (pk == PATCH_APPLY) {
		if (do_apply(c, old, &result) < 0)
			return;
		if (check_namespace(c, result) < 0) {
			json_object_put(result);
			return;
		}
		if (to_storage(c, result, &sto) < 0)
			return;
		if (old == NULL) {
			if (c->sub[0] != '\0') {
				json_object_put(sto);
				errors_notfound(c->resp, c->rt, c->name);
				return;
			}
			if (write_create(c, sto, &stored) < 0)
				return;
			reply_object(c, 201, stored);
			json_object_put(stored);
			return;
		}
		hold = json_object_get((struct json_object *)(uintptr_t)old);
		r = write_update(c, sto, hold, false, &stored);
		json_object_put(hold);
		if (r < 0)
			return;
		reply_object(c, 200, stored);
		json_object_put(stored);
		return;
	}
	if (old == NULL) {
		errors_notfound(c->resp, c->rt, c->name);
		return;
	}
	if ((r = kc_patch_parse(c->req->body != NULL ? c->req->body : "", c->req->body_len,
	    &patch, &st)) < 0) {
		errors_kc(c->resp, r, &st);
		return;
	}
	if ((r = api_view(c->rt, old, &view)) < 0) {
		if (patch != NULL)
			json_object_put(patch);
		errors_internal(c->resp, r);
		return;
	}
	switch (pk) {
	case PATCH_JSON:
		r = kc_json_patch_apply(view, patch, &result, &st);
		break;
	case PATCH_MERGE:
		r = kc_merge_patch_apply(view, patch, &result, &st);
		break;
	default:
		r = kc_smp_apply(view, patch, c->rt->smp, &result, &st);
		break;
	}
	json_object_put(view);
	if (patch != NULL)
		json_object_put(patch);
	if (r < 0) {
		errors_kc(c->resp, r, &st);
		return;
	}
	if (!json_object_is_type(result, json_type_object)) {
		if (result != NULL)
			json_object_put(result);
		errors_reply(c->resp, KC_EBADREQUEST, "the patched object is not an object");
		return;
	}
	if (check_typemeta(c, result) < 0 || check_namespace(c, result) < 0 ||
	    check_name(c, result) < 0) {
		json_object_put(result);
		return;
	}
	if (to_storage(c, result, &sto) < 0)
		return;
	hold = json_object_get((struct json_object *)(uintptr_t)old);
	r = write_update(c, sto, hold, false, &stored);
	json_object_put(hold);
	if (r < 0)
		return;
	reply_object(c, 200, stored);
	json_object_put(stored);
}

/*
 * delete, deletecollection
 */

struct delopts {
	int64_t	 grace;		/* -1: unset */
	char	 policy[32];	/* "": unset */
	char	 pre_uid[64];
	char	 pre_rv[32];
	bool	 orphan;
};

static int
parse_delete_opts(struct rctx *c, struct delopts *o)
{
	struct json_object *body = NULL, *v;
	struct dc_errs errs = { 0 };
	const char *q;
	int r;

	memset(o, 0, sizeof(*o));
	o->grace = -1;
	if (c->req->body_len > 0) {
		char mt[128];

		media_type(c->req->content_type, mt, sizeof(mt));
		if (mt[0] == '\0') {
			kc_free(c->req->content_type);
			if ((c->req->content_type = kc_strdup("application/json")) == NULL) {
				errors_internal(c->resp, -ENOMEM);
				return -ENOMEM;
			}
		}
		if ((r = decode_body(c, &body)) < 0)
			return r;
		if (json_object_object_get_ex(body, "gracePeriodSeconds", &v) &&
		    json_object_is_type(v, json_type_int))
			o->grace = json_object_get_int64(v);
		if ((q = kc_json_str(body, "propagationPolicy")) != NULL)
			(void)kc_strlcpy(o->policy, q, sizeof(o->policy));
		if ((q = kc_json_str(body, "preconditions", "uid")) != NULL)
			(void)kc_strlcpy(o->pre_uid, q, sizeof(o->pre_uid));
		if ((q = kc_json_str(body, "preconditions", "resourceVersion")) != NULL)
			(void)kc_strlcpy(o->pre_rv, q, sizeof(o->pre_rv));
		o->orphan = kc_json_bool(body, false, "orphanDependents");
		v = kc_json_arr_of(body, "dryRun");
		for (size_t i = 0; i < arr_len(v); i++) {
			const char *d = json_object_get_string(json_object_array_get_idx(v, i));

			if (d != NULL && strcmp(d, "All") == 0)
				c->dry_run = true;
		}
		json_object_put(body);
	}
	if ((q = req_param(c->req, "gracePeriodSeconds")) != NULL && q[0] != '\0' &&
	    kc_parse_i64(q, &o->grace) < 0) {
		errors_reply(c->resp, KC_EBADREQUEST,
		    "strconv.ParseInt: parsing \"%s\": invalid syntax", q);
		return KC_EBADREQUEST;
	}
	if ((q = req_param(c->req, "propagationPolicy")) != NULL && q[0] != '\0')
		(void)kc_strlcpy(o->policy, q, sizeof(o->policy));
	if ((q = req_param(c->req, "orphanDependents")) != NULL)
		o->orphan = strcmp(q, "true") == 0 || strcmp(q, "1") == 0;
	if (o->policy[0] != '\0' && strcmp(o->policy, "Foreground") != 0 &&
	    strcmp(o->policy, "Background") != 0 && strcmp(o->policy, "Orphan") != 0)
		errs_unsupported(&errs, "propagationPolicy", o->policy,
		    (const char *const []){ "Foreground", "Background", "Orphan", "nil",
		    NULL });
	if (o->grace < -1)
		o->grace = 0;
	if (errs.n > 0) {
		errors_invalid(c->resp, "DeleteOptions.meta.k8s.io", "meta.k8s.io", "", &errs);
		return KC_EINVALID;
	}
	return 0;
}

static int
pending_add(struct dc *dc, const struct dc_rtype *rt, const struct json_object *obj)
{
	struct dc_api *api = dc->api;
	struct pending *p, *arr;
	const char *ns = kc_json_str(obj, "metadata", "namespace");
	const char *uid = kc_json_str(obj, "metadata", "uid");

	arr = kc_reallocarray(api->pending, api->npending + 1, sizeof(*arr));
	if (arr == NULL)
		return -ENOMEM;
	api->pending = arr;
	p = &arr[api->npending];
	memset(p, 0, sizeof(*p));
	p->group = kc_strdup(rt->group);
	p->resource = kc_strdup(rt->plural);
	p->ns = kc_strdup(ns != NULL ? ns : "");
	p->name = kc_strdup(kc_json_str(obj, "metadata", "name"));
	p->uid = kc_strdup(uid != NULL ? uid : "");
	p->due_ms = kc_clock_now_ms();
	if (p->group == NULL || p->resource == NULL || p->ns == NULL || p->name == NULL ||
	    p->uid == NULL) {
		kc_free(p->group);
		kc_free(p->resource);
		kc_free(p->ns);
		kc_free(p->name);
		kc_free(p->uid);
		return -ENOMEM;
	}
	api->npending++;
	timer_arm(&api->grace_timer, 0);
	return 0;
}

static void
pending_free(struct pending *p)
{
	kc_free(p->group);
	kc_free(p->resource);
	kc_free(p->ns);
	kc_free(p->name);
	kc_free(p->uid);
}

/* Graceful deletions whose time has come are finished (no kubelet). */
static int64_t
grace_tick(void *arg)
{
	struct dc *dc = arg;
	struct dc_api *api = dc->api;
	uint64_t now = kc_clock_now_ms();
	int64_t next = DC_TIMER_STOP;
	size_t i = 0;

	while (i < api->npending) {
		struct pending p = api->pending[i];
		const struct dc_rtype *rt;
		const struct json_object *obj;

		if (p.due_ms > now) {
			int64_t d = (int64_t)(p.due_ms - now);

			if (next == DC_TIMER_STOP || d < next)
				next = d;
			i++;
			continue;
		}
		api->pending[i] = api->pending[--api->npending];
		rt = registry_find_any(dc, p.group, p.resource);
		obj = rt != NULL ? coll_get(rt->coll, p.ns, p.name) : NULL;
		if (obj != NULL && kc_json_get(obj, "metadata", "deletionTimestamp") != NULL &&
		    strcmp(p.uid, kc_json_str(obj, "metadata", "uid") != NULL ?
		    kc_json_str(obj, "metadata", "uid") : "") == 0) {
			struct kc_log_ctx lc = { .action = "delete", .kind = rt->kind,
			    .ns = p.ns, .name = p.name };
			int r = api_delete_object(dc, rt, p.ns, p.name, 0);

			if (r < 0 && r != KC_ENOTFOUND)
				kc_log_warn(&lc, "finishing a graceful deletion failed: %s",
				    kc_strerror(r));
		}
		pending_free(&p);
	}
	return next;
}

static bool
protected_namespace(const char *name)
{
	return strcmp(name, "default") == 0 || strcmp(name, "kube-system") == 0 ||
	    strcmp(name, "kube-public") == 0;
}

static int
delete_namespace(struct rctx *c, const struct json_object *old, struct json_object **ret,
    bool *ret_deleted)
{
	struct json_object *next, *meta, *status;
	char stamp[KC_TIME_MAX];
	int r;

	*ret_deleted = false;
	if (protected_namespace(c->name)) {
		errors_obj(c->resp, KC_EFORBIDDEN, c->rt, c->name,
		    "namespaces \"%s\" is forbidden: this namespace may not be deleted",
		    c->name);
		return KC_EFORBIDDEN;
	}
	if (kc_json_get(old, "metadata", "deletionTimestamp") != NULL) {
		*ret = json_object_get((struct json_object *)(uintptr_t)old);
		return 0;
	}
	if ((next = kc_json_copy(old)) == NULL)
		goto oom;
	now_stamp(stamp, c->now);
	meta = kc_json_obj_of(next, "metadata");
	status = kc_json_ensure_obj(next, "status");
	if (meta == NULL || status == NULL ||
	    kc_json_set_str(meta, "deletionTimestamp", stamp) < 0 ||
	    kc_json_set_str(status, "phase", "Terminating") < 0) {
		json_object_put(next);
		goto oom;
	}
	if (c->dry_run) {
		*ret = next;
		return 0;
	}
	if ((r = storage_update(c->dc->store, c->rt->coll, next, 0, ret)) < 0) {
		errors_internal(c->resp, r);
		return r;
	}
	timer_arm(&c->dc->api->ns_timer, 0);
	return 0;
oom:
	errors_internal(c->resp, -ENOMEM);
	return -ENOMEM;
}

static int
delete_one(struct rctx *c, const struct json_object *old, int64_t grace_req,
    const char *policy, const struct json_object *pre, struct json_object **ret,
    bool *ret_deleted)
{
	struct dc_write_ctx wc = write_ctx(c, DC_OP_DELETE, old);
	struct json_object *next = NULL, *meta, *fins;
	const char *uid = kc_json_str(old, "metadata", "uid");
	const char *rv = kc_json_str(old, "metadata", "resourceVersion");
	const char *pu = kc_json_str(pre, "uid"), *prv = kc_json_str(pre, "resourceVersion");
	const char *add = NULL;
	char stamp[KC_TIME_MAX], name[DC_SEGMENT_MAX];
	bool deleting = kc_json_get(old, "metadata", "deletionTimestamp") != NULL;
	int64_t grace = 0, cur_grace;
	size_t nfin;
	int r;

	*ret_deleted = false;
	(void)kc_strlcpy(name, kc_json_str(old, "metadata", "name"), sizeof(name));
	if (pu != NULL && pu[0] != '\0' && (uid == NULL || strcmp(pu, uid) != 0)) {
		errors_obj(c->resp, KC_ECONFLICT, c->rt, name, "Precondition failed: UID in "
		    "precondition: %s, UID in object meta: %s", pu, uid != NULL ? uid : "");
		return KC_ECONFLICT;
	}
	if (prv != NULL && prv[0] != '\0' && (rv == NULL || strcmp(prv, rv) != 0)) {
		errors_obj(c->resp, KC_ECONFLICT, c->rt, name, "Precondition failed: "
		    "ResourceVersion in precondition: %s, ResourceVersion in object meta: %s",
		    prv, rv != NULL ? rv : "");
		return KC_ECONFLICT;
	}
	if (c->rt->group[0] == '\0' && strcmp(c->rt->plural, "namespaces") == 0)
		return delete_namespace(c, old, ret, ret_deleted);
	if (c->rt->ops->delete_grace != NULL)
		grace = c->rt->ops->delete_grace(&wc, old, grace_req);
	if (grace < 0)
		grace = 0;
	if (c->dc->hooks.finalizer_added != NULL && policy != NULL) {
		if (strcmp(policy, "Foreground") == 0)
			add = "foregroundDeletion";
		else if (strcmp(policy, "Orphan") == 0)
			add = "orphan";
	}
	if (!deleting && c->rt->ops->prepare_delete != NULL) {
		if ((next = kc_json_copy(old)) == NULL)
			goto oom;
		if ((r = c->rt->ops->prepare_delete(&wc, next)) < 0) {
			json_object_put(next);
			errors_internal(c->resp, r);
			return r;
		}
	}
	fins = kc_json_get(next != NULL ? next : old, "metadata", "finalizers");
	if (add != NULL && strv_has(fins, add))
		add = NULL;
	nfin = arr_len(fins);
	if (deleting) {
		cur_grace = kc_json_int(old, 0, "metadata", "deletionGracePeriodSeconds");
		if (!(nfin == 0 && add == NULL && cur_grace > 0 && grace < cur_grace)) {
			*ret = json_object_get((struct json_object *)(uintptr_t)old);
			return 0;
		}
	}
	if (nfin > 0 || add != NULL || grace > 0) {
		time_t at = c->now + (time_t)grace;

		/* Only metadata changes: the rest is shared (obj_cow()). */
		if (next == NULL && (next = obj_cow(old)) == NULL)
			goto oom;
		meta = kc_json_obj_of(next, "metadata");
		now_stamp(stamp, at);
		if (kc_json_set_str(meta, "deletionTimestamp", stamp) < 0 ||
		    kc_json_set_int(meta, "deletionGracePeriodSeconds", grace) < 0)
			goto oom;
		if (add != NULL) {
			struct json_object *nf = kc_json_arr_of(meta, "finalizers");

			/* The list may be the stored one's: a private copy. */
			if (nf != NULL && ((nf = kc_json_copy(nf)) == NULL ||
			    kc_json_put(meta, "finalizers", nf) < 0))
				goto oom;
			if (nf == NULL && ((nf = json_object_new_array()) == NULL ||
			    kc_json_put(meta, "finalizers", nf) < 0))
				goto oom;
			if (kc_json_append(nf, json_object_new_string(add)) < 0)
				goto oom;
		}
		if ((c->rt->flags & DC_RT_GENERATION) && !deleting &&
		    kc_json_set_int(meta, "generation",
		    kc_json_int(old, 1, "metadata", "generation") + 1) < 0)
			goto oom;
		if (c->dry_run) {
			*ret = next;
			return 0;
		}
		if ((r = storage_update(c->dc->store, c->rt->coll, next, 0, ret)) < 0) {
			errors_internal(c->resp, r);
			return r;
		}
		if (add != NULL && (r = c->dc->hooks.finalizer_added(c->dc, c->rt, *ret)) < 0)
			kc_log_warn(NULL, "garbage collection hook: %s", kc_strerror(r));
		if (grace > 0 && nfin == 0) {
			r = c->dc->hooks.graceful_delete != NULL ?
			    c->dc->hooks.graceful_delete(c->dc, c->rt, *ret) : DC_DECLINED;
			if (r == DC_DECLINED)
				r = pending_add(c->dc, c->rt, *ret);
			if (r < 0)
				kc_log_warn(NULL, "graceful deletion: %s", kc_strerror(r));
		}
		return 0;
	}
	kc_json_putp(&next);
	*ret_deleted = true;
	if (c->dry_run) {
		*ret = json_object_get((struct json_object *)(uintptr_t)old);
		return 0;
	}
	r = storage_delete(c->dc->store, c->rt->coll,
	    json_object_get((struct json_object *)(uintptr_t)old), 0, ret);
	if (r < 0) {
		*ret_deleted = false;
		errors_internal(c->resp, r);
	}
	return r;
oom:
	if (next != NULL)
		json_object_put(next);
	errors_internal(c->resp, -ENOMEM);
	return -ENOMEM;
}

static void
reply_deleted(struct rctx *c, const struct json_object *obj, bool deleted)
{
	struct json_object *o, *d;
	const char *uid = kc_json_str(obj, "metadata", "uid");

	if (!deleted || (c->rt->flags & DC_RT_RETURN_DELETED)) {
		reply_object(c, 200, obj);
		return;
	}
	o = json_object_new_object();
	d = json_object_new_object();
	if (o == NULL || d == NULL || kc_json_set_str(o, "kind", "Status") < 0 ||
	    kc_json_set_str(o, "apiVersion", "v1") < 0 ||
	    kc_json_put(o, "metadata", json_object_new_object()) < 0 ||
	    kc_json_set_str(o, "status", "Success") < 0 ||
	    kc_json_put(o, "details", json_object_get(d)) < 0 ||
	    kc_json_set_str(d, "name", kc_json_str(obj, "metadata", "name")) < 0 ||
	    (c->rt->group[0] != '\0' && kc_json_set_str(d, "group", c->rt->group) < 0) ||
	    kc_json_set_str(d, "kind", c->rt->plural) < 0 ||
	    (uid != NULL && kc_json_set_str(d, "uid", uid) < 0)) {
		if (o != NULL)
			json_object_put(o);
		if (d != NULL)
			json_object_put(d);
		errors_internal(c->resp, -ENOMEM);
		return;
	}
	json_object_put(d);
	reply_json(c->resp, 200, o);
}

static struct json_object *
preconditions(const struct delopts *o)
{
	struct json_object *p = json_object_new_object();

	if (p == NULL)
		return NULL;
	if ((o->pre_uid[0] != '\0' && kc_json_set_str(p, "uid", o->pre_uid) < 0) ||
	    (o->pre_rv[0] != '\0' && kc_json_set_str(p, "resourceVersion", o->pre_rv) < 0)) {
		json_object_put(p);
		return NULL;
	}
	return p;
}

static const char *
policy_of(const struct delopts *o)
{
	if (o->policy[0] != '\0')
		return o->policy;
	return o->orphan ? "Orphan" : NULL;
}

static void
do_delete(struct rctx *c)
{
	const struct json_object *old = coll_get(c->rt->coll, c->ns, c->name);
	struct json_object *hold, *out = NULL, *pre;
	struct delopts o;
	bool deleted;
	int r;

	if (c->sub[0] != '\0') {
		method_not_allowed(c->resp);
		return;
	}
	if (parse_delete_opts(c, &o) < 0)
		return;
	if (old == NULL) {
		errors_notfound(c->resp, c->rt, c->name);
		return;
	}
	if ((pre = preconditions(&o)) == NULL) {
		errors_internal(c->resp, -ENOMEM);
		return;
	}
	hold = json_object_get((struct json_object *)(uintptr_t)old);
	r = delete_one(c, hold, o.grace, policy_of(&o), pre, &out, &deleted);
	json_object_put(pre);
	if (r == 0)
		reply_deleted(c, out, deleted);
	if (out != NULL)
		json_object_put(out);
	json_object_put(hold);
}

static void
do_deletecollection(struct rctx *c)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *ls = NULL;
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *fs = NULL;
	struct kc_status st = { 0 };
	struct json_object **objs = NULL, *list = NULL, *items, *pre = NULL;
	struct delopts o;
	size_t n = 0;
	char rv[24];
	int r;

	if (parse_delete_opts(c, &o) < 0)
		return;
	if ((r = api_selectors(c->rt, req_param(c->req, "labelSelector"),
	    req_param(c->req, "fieldSelector"), &ls, &fs, &st)) < 0) {
		errors_kc(c->resp, r, &st);
		return;
	}
	if ((r = coll_list(c->rt->coll, c->rt->namespaced && c->ns[0] != '\0' ? c->ns : NULL,
	    NULL, &objs, &n)) < 0) {
		errors_internal(c->resp, r);
		return;
	}
	r = -ENOMEM;
	if ((pre = preconditions(&o)) == NULL || (list = json_object_new_object()) == NULL ||
	    kc_json_set_str(list, "kind", c->rt->list_kind) < 0 ||
	    kc_json_set_str(list, "apiVersion", c->rt->api_version) < 0 ||
	    kc_json_put(list, "metadata", json_object_new_object()) < 0 ||
	    kc_json_put(list, "items", json_object_new_array()) < 0)
		goto fail;
	items = kc_json_arr_of(list, "items");
	for (size_t i = 0; i < n; i++) {
		struct json_object *out = NULL, *view = NULL;
		bool deleted;

		if (!api_matches(c->rt, ls, fs, objs[i]))
			continue;
		c->name = kc_json_str(objs[i], "metadata", "name");
		if ((r = delete_one(c, objs[i], o.grace, policy_of(&o), pre, &out,
		    &deleted)) < 0) {
			if (out != NULL)
				json_object_put(out);
			objs_free(objs, n);
			json_object_put(list);
			json_object_put(pre);
			return;
		}
		r = api_view(c->rt, out, &view);
		json_object_put(out);
		if (r < 0 || (r = kc_json_append(items, list_item(c->rt, view))) < 0) {
			if (view != NULL)
				json_object_put(view);
			goto fail;
		}
		json_object_put(view);
	}
	(void)snprintf(rv, sizeof(rv), "%" PRIu64, storage_rv(c->dc->store));
	if (kc_json_set_str(kc_json_obj_of(list, "metadata"), "resourceVersion", rv) < 0)
		goto fail;
	objs_free(objs, n);
	json_object_put(pre);
	reply_json(c->resp, 200, list);
	return;
fail:
	objs_free(objs, n);
	if (list != NULL)
		json_object_put(list);
	if (pre != NULL)
		json_object_put(pre);
	errors_internal(c->resp, r);
}

/*
 * Internal writes and namespace termination
 */

static void
internal_ctx(struct rctx *c, struct dc *dc, const struct dc_rtype *rt, const char *ns,
    const char *name, struct dc_resp *resp)
{
	memset(c, 0, sizeof(*c));
	c->dc = dc;
	c->rt = rt;
	c->ns = rt->namespaced && ns != NULL ? ns : "";
	c->name = name != NULL ? name : "";
	c->sub = "";
	c->resp = resp;
	c->manager = "devcluster";
	c->now = kc_clock_wall();
	resp_init(resp);
}

/* The code of an internal write that failed with a Status reply. */
static int
internal_code(const struct dc_resp *resp, int r)
{
	if (r >= 0 || r == -ENOMEM)
		return r;
	switch (resp->status) {
	case 404: return KC_ENOTFOUND;
	case 409: return strstr(kc_buf_str(&resp->body), "AlreadyExists") != NULL ?
	    KC_EEXISTS : KC_ECONFLICT;
	case 422: return KC_EINVALID;
	case 403: return KC_EFORBIDDEN;
	default: return r;
	}
}

int
api_create_object(struct dc *dc, const struct dc_rtype *rt, struct json_object *obj,
    struct json_object **ret)
{
	struct dc_resp resp;
	struct json_object *stored = NULL;
	const char *ons = kc_json_str(obj, "metadata", "namespace");
	char ns[DC_SEGMENT_MAX];
	struct rctx c;
	int r;

	(void)kc_strlcpy(ns, ons != NULL ? ons : "", sizeof(ns));
	internal_ctx(&c, dc, rt, ns, NULL, &resp);
	if (check_typemeta(&c, obj) < 0 || check_namespace(&c, obj) < 0) {
		json_object_put(obj);
		r = internal_code(&resp, KC_EBADREQUEST);
		resp_clear(&resp);
		return r;
	}
	r = write_create(&c, obj, &stored);
	if (r < 0) {
		kc_log_debug(NULL, "internal create of %s failed: %s", rt->kind,
		    kc_buf_str(&resp.body));
		r = internal_code(&resp, r);
	} else if (ret != NULL)
		*ret = stored;
	else
		json_object_put(stored);
	resp_clear(&resp);
	return r;
}

int
api_delete_object(struct dc *dc, const struct dc_rtype *rt, const char *ns,
    const char *name, int64_t grace)
{
	return api_delete_object_opts(dc, rt, ns, name, grace, "Background", NULL);
}

int
api_delete_object_opts(struct dc *dc, const struct dc_rtype *rt, const char *ns,
    const char *name, int64_t grace, const char *policy, const char *uid)
{
	const struct json_object *old;
	struct json_object *out = NULL, *hold, *pre = NULL;
	struct dc_resp resp;
	struct rctx c;
	bool deleted;
	int r;

	if ((old = coll_get(rt->coll, rt->namespaced ? ns : "", name)) == NULL)
		return KC_ENOTFOUND;
	if (uid != NULL && ((pre = json_object_new_object()) == NULL ||
	    kc_json_set_str(pre, "uid", uid) < 0)) {
		if (pre != NULL)
			json_object_put(pre);
		return -ENOMEM;
	}
	internal_ctx(&c, dc, rt, ns, name, &resp);
	hold = json_object_get((struct json_object *)(uintptr_t)old);
	r = delete_one(&c, hold, grace, policy, pre, &out, &deleted);
	json_object_put(hold);
	if (pre != NULL)
		json_object_put(pre);
	if (out != NULL)
		json_object_put(out);
	r = internal_code(&resp, r);
	resp_clear(&resp);
	return r;
}

/* The resource type serving a collection (its preferred version). */
static const struct dc_rtype *
coll_rtype(const struct dc *dc, const struct dc_coll *coll)
{
	const struct dc_rtype *t;

	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link))
		if (t->coll == coll && (t->flags & DC_RT_STORAGE || t->ops->convert_in == NULL))
			return t;
	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link))
		if (t->coll == coll)
			return t;
	return NULL;
}

struct nsterm {
	struct dc	*dc;
	const char	*ns;
	size_t		 remaining;
	int		 err;
};

static int
nsterm_coll(void *arg, struct dc_coll *coll)
{
	struct nsterm *t = arg;
	const struct dc_rtype *rt;
	struct json_object **objs = NULL;
	size_t n = 0;
	int r;

	if (!coll_namespaced(coll) || coll_count(coll, t->ns) == 0)
		return 0;
	if ((rt = coll_rtype(t->dc, coll)) == NULL)
		return 0;
	if ((r = coll_list(coll, t->ns, NULL, &objs, &n)) < 0) {
		t->err = r;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (kc_json_get(objs[i], "metadata", "deletionTimestamp") != NULL)
			continue;
		r = api_delete_object(t->dc, rt, t->ns, kc_json_str(objs[i], "metadata", "name"),
		    -1);
		if (r < 0 && r != KC_ENOTFOUND)
			t->err = r;
	}
	objs_free(objs, n);
	t->remaining += coll_count(coll, t->ns);
	return 0;
}

int
api_namespace_terminate(struct dc *dc, const char *ns)
{
	struct nsterm t = { .dc = dc, .ns = ns };
	struct dc_rtype *nst = registry_find(dc, "", "v1", "namespaces");
	const struct json_object *obj;
	struct json_object *next, *fins, *keep;
	int r;

	if (nst == NULL || (obj = coll_get(nst->coll, "", ns)) == NULL)
		return 0;
	(void)storage_foreach_coll(dc->store, nsterm_coll, &t);
	if (t.err < 0) {
		struct kc_log_ctx lc = { .action = "namespace", .name = ns };

		kc_log_warn(&lc, "emptying the namespace: %s", kc_strerror(t.err));
	}
	if (t.remaining > 0)
		return 1;
	/* Empty: the namespace controller's finalize, then removal. */
	if ((next = kc_json_copy(obj)) == NULL)
		return -ENOMEM;
	fins = kc_json_get(next, "spec", "finalizers");
	if ((keep = json_object_new_array()) == NULL) {
		json_object_put(next);
		return -ENOMEM;
	}
	for (size_t i = 0; i < arr_len(fins); i++) {
		struct json_object *f = json_object_array_get_idx(fins, i);
		const char *s = json_object_get_string(f);

		if (s != NULL && strcmp(s, "kubernetes") == 0)
			continue;
		if (kc_json_append(keep, json_object_get(f)) < 0) {
			json_object_put(keep);
			json_object_put(next);
			return -ENOMEM;
		}
	}
	if (json_object_array_length(keep) > 0) {
		if ((r = kc_json_put(kc_json_ensure_obj(next, "spec"), "finalizers", keep)) < 0) {
			json_object_put(next);
			return r;
		}
	} else {
		json_object_put(keep);
		json_object_object_del(kc_json_obj_of(next, "spec"), "finalizers");
	}
	if (finalized(nst, next))
		r = storage_delete(dc->store, nst->coll, next, 0, NULL);
	else
		r = storage_update(dc->store, nst->coll, next, 0, NULL);
	return r < 0 ? r : 0;
}

static int64_t
ns_tick(void *arg)
{
	struct dc *dc = arg;
	struct dc_rtype *nst = registry_find(dc, "", "v1", "namespaces");
	struct json_object **objs = NULL;
	size_t n = 0;
	bool again = false;

	if (nst == NULL || coll_list(nst->coll, NULL, NULL, &objs, &n) < 0)
		return 100;
	for (size_t i = 0; i < n; i++) {
		const char *name = kc_json_str(objs[i], "metadata", "name");
		int r;

		if (kc_json_get(objs[i], "metadata", "deletionTimestamp") == NULL)
			continue;
		r = dc->hooks.ns_terminate != NULL ?
		    dc->hooks.ns_terminate(dc, name) : api_namespace_terminate(dc, name);
		if (r != 0)
			again = true;
	}
	objs_free(objs, n);
	return again ? 100 : DC_TIMER_STOP;
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

static bool
dry_run_param(struct rctx *c, const char *opts_kind)
{
	const char *d = req_param(c->req, "dryRun");

	if (d == NULL || d[0] == '\0')
		return true;
	if (strcmp(d, "All") == 0) {
		c->dry_run = true;
		return true;
	}
	{
		struct dc_errs errs = { 0 };
		char q[256], val[300], kind[64];

		(void)snprintf(val, sizeof(val), "[]string{%s}", errors_quote(d, q, sizeof(q)));
		errs_add(&errs, "NotSupported", "dryRun",
		    "Unsupported value: %s: supported values: \"All\"", val);
		(void)snprintf(kind, sizeof(kind), "%s.meta.k8s.io", opts_kind);
		errors_invalid(c->resp, kind, "meta.k8s.io", "", &errs);
	}
	return false;
}

/* fieldManager and force, validated as Create-, Update- and PatchOptions are. */
static bool
manager_params(struct rctx *c, const char *opts_kind)
{
	struct json_object *details = NULL;
	struct kc_status st = { 0 };
	bool patch = strcmp(opts_kind, "PatchOptions") == 0;
	int r;

	r = fieldmanager_validate_options(opts_kind, patch &&
	    patch_kind(c->req->content_type) == PATCH_APPLY, c->manager,
	    patch && req_has_param(c->req, "force"), &details, &st);
	if (r == 0)
		return true;
	reply_details(c->resp, r, &st, details);
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
		not_found_status(resp);
		return;
	}
	object_verb = route->name[0] != '\0';
	if ((rt->namespaced && route->ns[0] == '\0' && object_verb) ||
	    (!rt->namespaced && route->ns[0] != '\0')) {
		not_found_status(resp);
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
		method_not_allowed(resp);
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
		if (dry_run_param(&c, "CreateOptions") && manager_params(&c, "CreateOptions"))
			do_create(&c);
	} else if (strcmp(v, "update") == 0) {
		if (dry_run_param(&c, "UpdateOptions") && manager_params(&c, "UpdateOptions"))
			do_update(&c);
	} else if (strcmp(v, "patch") == 0) {
		if (dry_run_param(&c, "PatchOptions") && manager_params(&c, "PatchOptions"))
			do_patch(&c);
	} else if (strcmp(v, "delete") == 0) {
		if (dry_run_param(&c, "DeleteOptions"))
			do_delete(&c);
	} else if (strcmp(v, "deletecollection") == 0) {
		if (dry_run_param(&c, "DeleteOptions"))
			do_deletecollection(&c);
	} else
		method_not_allowed(resp);
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
			not_found_page(resp);
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

void
api_handle(struct dc *dc, struct dc_req *req, struct dc_resp *resp)
{
	struct dc_route route;
	struct kc_status st = { 0 };
	const char *w = req_param(req, "watch");
	bool watch = w != NULL && (strcmp(w, "true") == 0 || strcmp(w, "1") == 0);
	int r;

	req->id = ++dc->next_rid;
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
		not_found_page(resp);
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
		not_found_page(resp);
		break;
	case DC_ROUTE_RESOURCE:
		if (!registry_has_gv(dc, route.group, route.version)) {
			not_found_page(resp);
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

/*
 * The service account controller's one job the devcluster does: every
 * new namespace gets a "default" ServiceAccount, which pods name.
 */
static void
sa_controller(void *arg, const struct dc_event *ev)
{
	struct dc *dc = arg;
	struct dc_rtype *nst, *sat;
	struct json_object *sa = NULL;
	const char *ns;
	char json[DC_SEGMENT_MAX + 96];
	int r;

	if (ev->type != DC_EV_ADDED || (nst = registry_find(dc, "", "v1",
	    "namespaces")) == NULL || ev->coll != nst->coll ||
	    (sat = registry_find(dc, "", "v1", "serviceaccounts")) == NULL)
		return;
	ns = kc_json_str(ev->obj, "metadata", "name");
	if (ns == NULL || coll_get(sat->coll, ns, "default") != NULL)
		return;
	(void)snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"default\","
	    "\"namespace\":\"%s\"}}", ns);
	if ((r = kc_json_parse(json, strlen(json), &sa, NULL)) == 0)
		r = api_create_object(dc, sat, sa, NULL);
	if (r < 0 && r != KC_EEXISTS) {
		struct kc_log_ctx lc = { .action = "serviceaccount", .ns = ns };

		kc_log_warn(&lc, "creating the default service account: %s", kc_strerror(r));
	}
}

/*
 * The instance
 */

static int
parse_kube_version(struct dc *dc, const char *v)
{
	uint32_t major, minor, patch = 0;
	char buf[32], *dot1, *dot2;

	if (v == NULL)
		v = "1.32";
	if (v[0] == 'v')
		v++;
	if (kc_strlcpy(buf, v, sizeof(buf)) >= sizeof(buf))
		return -EINVAL;
	if ((dot1 = strchr(buf, '.')) == NULL)
		return -EINVAL;
	*dot1++ = '\0';
	if ((dot2 = strchr(dot1, '.')) != NULL) {
		*dot2++ = '\0';
		if (kc_parse_u32(dot2, &patch) < 0)
			return -EINVAL;
	}
	if (kc_parse_u32(buf, &major) < 0 || kc_parse_u32(dot1, &minor) < 0 ||
	    major > 99 || minor > 999 || patch > 9999)
		return -EINVAL;
	(void)snprintf(dc->major, sizeof(dc->major), "%u", major);
	(void)snprintf(dc->minor, sizeof(dc->minor), "%u", minor);
	(void)snprintf(dc->git_version, sizeof(dc->git_version), "v%u.%u.%u", major, minor,
	    patch);
	return 0;
}

int
api_new(const struct dc_opts *opts, struct dc **ret)
{
	struct dc *dc;
	int r;

	if ((dc = kc_calloc(1, sizeof(*dc))) == NULL)
		return -ENOMEM;
	TAILQ_INIT(&dc->timers);
	TAILQ_INIT(&dc->reg.types);
	if (opts != NULL)
		dc->opts = *opts;
	if ((r = parse_kube_version(dc, dc->opts.kube_version)) < 0)
		goto fail;
	(void)kc_strlcpy(dc->server_address, "127.0.0.1:6443", sizeof(dc->server_address));
	if ((dc->api = kc_calloc(1, sizeof(*dc->api))) == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	timer_init(&dc->api->grace_timer, dc, grace_tick, dc);
	timer_init(&dc->api->ns_timer, dc, ns_tick, dc);
	if ((r = storage_new(&(struct dc_store_opts){
	    .history_max = dc->opts.history_max,
	    .history_fresh_ms = dc->opts.history_fresh_ms }, &dc->store)) < 0)
		goto fail;
	if ((r = watchhub_new(dc, &dc->hub)) < 0)
		goto fail;
	if ((r = auth_new(&dc->auth)) < 0)
		goto fail;
	if ((r = registry_init(dc)) < 0)
		goto fail;
	if (dc->opts.restore != NULL && (r = dc->opts.restore(dc, dc->opts.restore_arg)) < 0)
		goto fail;
	if (!dc->opts.no_bootstrap &&
	    ((r = storage_subscribe(dc->store, sa_controller, dc)) < 0 ||
	    (r = builtin_bootstrap(dc)) < 0))
		goto fail;
	*ret = dc;
	return 0;
fail:
	api_free(dc);
	return r;
}

void *
plugin_state(const struct dc *dc, const struct dc_plugin *p)
{
	for (size_t i = 0; i < dc_nplugins; i++)
		if (dc_plugins[i] == p)
			return dc->plugin_states[i];
	return NULL;
}

void
plugin_set_state(struct dc *dc, const struct dc_plugin *p, void *state)
{
	for (size_t i = 0; i < dc_nplugins; i++)
		if (dc_plugins[i] == p)
			dc->plugin_states[i] = state;
}

int
api_plugins_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	struct kc_status pst;
	int r;

	for (size_t i = 0; i < dc_nplugins; i++) {
		const struct dc_plugin *p = dc_plugins[i];

		if (p->init == NULL)
			continue;
		memset(&pst, 0, sizeof(pst));
		if ((r = p->init(dc, cfg, &pst)) < 0)
			return kc_status_set(st, r, "%s: %s", p->name,
			    pst.message[0] != '\0' ? pst.message : kc_strerror(r));
	}
	return 0;
}

void
api_plugins_stop(struct dc *dc)
{
	for (size_t i = dc_nplugins; i > 0; i--)
		if (dc_plugins[i - 1]->fini != NULL)
			dc_plugins[i - 1]->fini(dc);
}

struct dc *
api_free(struct dc *dc)
{
	if (dc == NULL)
		return NULL;
	api_plugins_stop(dc);
	if (dc->api != NULL) {
		timer_cancel(&dc->api->grace_timer);
		timer_cancel(&dc->api->ns_timer);
		for (size_t i = 0; i < dc->api->npending; i++)
			pending_free(&dc->api->pending[i]);
		kc_free(dc->api->pending);
		kc_free(dc->api);
	}
	dc->hub = watchhub_free(dc->hub);
	registry_fini(dc);
	discovery_fini(dc);
	dc->store = storage_free(dc->store);
	dc->auth = auth_free(dc->auth);
	kc_free(dc);
	return NULL;
}

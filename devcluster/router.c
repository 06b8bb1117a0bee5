/*
 * router.c: from a request path to what it names.
 *
 * The rules are kube-apiserver's RequestInfoFactory
 * (k8s.io/apiserver pkg/endpoints/request/requestinfo.go):
 *
 *	/api                                   APIVersions
 *	/api/v1                                APIResourceList of the core group
 *	/apis, /apis/<g>, /apis/<g>/<v>        groups, one group, its resources
 *	<prefix>/[watch/][namespaces/<ns>/]<resource>[/<name>[/<subresource>]]
 *	<prefix>/namespaces/<name>[/status|/finalize]   the namespace itself
 *	/healthz, /livez, /readyz [/...]       health
 *	/version                               the version document
 *	/openapi/..., /swagger-2.0.0.pb-v1     OpenAPI (a hook answers)
 *
 * where <prefix> is /api/v1 or /apis/<g>/<v>. The verb comes from the
 * method and the shape: GET of a collection is list (watch with
 * ?watch=true or the deprecated /watch/ prefix), GET of an object get,
 * POST create, PUT update, PATCH patch, DELETE of an object delete and
 * of a collection deletecollection. Anything else is DC_ROUTE_NONE, which
 * the server answers with a plain "404 page not found".
 *
 * libwebsockets has already percent-decoded the path and folded "//" and
 * "/../" when a request arrives over HTTP; router_parse() still refuses
 * empty segments and overlong ones so that it is safe on any input.
 *
 * The rest of the file is small request plumbing: query parameters, and
 * req_set_target(), which splits and decodes "path?query" for the unit
 * tests the way libwebsockets does for the server.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include <kc/alloc.h>
#include <kc/sbuf.h>
#include <kc/str.h>

#include "devcluster.h"

#define SEGMENTS_MAX	12

static const char *const method_names[] = {
	[DC_GET] = "GET",
	[DC_POST] = "POST",
	[DC_PUT] = "PUT",
	[DC_PATCH] = "PATCH",
	[DC_DELETE] = "DELETE",
	[DC_HEAD] = "HEAD",
	[DC_OPTIONS] = "OPTIONS",
	[DC_METHOD_OTHER] = "OTHER",
};

const char *
method_name(enum dc_method m)
{
	if ((size_t)m >= KC_ARRAY_SIZE(method_names))
		return "OTHER";
	return method_names[m];
}

enum dc_method
method_from(const char *s)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(method_names); i++)
		if (strcasecmp(s, method_names[i]) == 0)
			return (enum dc_method)i;
	return DC_METHOD_OTHER;
}

static const char *
method_verb(enum dc_method m)
{
	switch (m) {
	case DC_GET:	 return "get";
	case DC_POST:	 return "post";
	case DC_PUT:	 return "put";
	case DC_PATCH:	 return "patch";
	case DC_DELETE:	 return "delete";
	case DC_HEAD:	 return "head";
	case DC_OPTIONS: return "options";
	default:	 return "other";
	}
}

static int
copy_seg(char *dst, const char *src)
{
	return kc_strlcpy(dst, src, DC_SEGMENT_MAX) < DC_SEGMENT_MAX ? 0 : -1;
}

/* The resource part: [watch/][namespaces/<ns>/]<res>[/<name>[/<sub>]]. */
static int
parse_resource(enum dc_method method, char **parts, size_t n, bool watch_param,
    struct dc_route *rt)
{
	if (n > 0 && strcmp(parts[0], "watch") == 0) {
		rt->watch_prefix = true;
		parts++;
		n--;
		if (n == 0)
			return -1;
	}
	if (strcmp(parts[0], "namespaces") == 0 && n > 2 &&
	    strcmp(parts[2], "status") != 0 && strcmp(parts[2], "finalize") != 0) {
		if (copy_seg(rt->ns, parts[1]) < 0)
			return -1;
		parts += 2;
		n -= 2;
	}
	if (n > 3)
		return -1;
	if (copy_seg(rt->resource, parts[0]) < 0 ||
	    (n > 1 && copy_seg(rt->name, parts[1]) < 0) ||
	    (n > 2 && copy_seg(rt->subresource, parts[2]) < 0))
		return -1;
	rt->kind = DC_ROUTE_RESOURCE;
	if (rt->watch_prefix) {
		rt->verb = method == DC_GET ? "watch" : method_verb(method);
		return 0;
	}
	switch (method) {
	case DC_GET:
	case DC_HEAD:
		if (n > 1)
			rt->verb = "get";
		else
			rt->verb = watch_param ? "watch" : "list";
		break;
	case DC_POST:
		rt->verb = "create";
		break;
	case DC_PUT:
		rt->verb = "update";
		break;
	case DC_PATCH:
		rt->verb = "patch";
		break;
	case DC_DELETE:
		rt->verb = n > 1 ? "delete" : "deletecollection";
		break;
	default:
		rt->verb = method_verb(method);
		break;
	}
	return 0;
}

int
router_parse(enum dc_method method, const char *path, bool watch_param,
    struct dc_route *ret)
{
	struct dc_route rt;
	char buf[4096], *parts[SEGMENTS_MAX];
	size_t n = 0, len;
	char *p;

	memset(&rt, 0, sizeof(rt));
	rt.kind = DC_ROUTE_NONE;
	rt.verb = method_verb(method);
	*ret = rt;
	if (path == NULL || path[0] != '/')
		return 0;
	if ((len = kc_strlcpy(buf, path + 1, sizeof(buf))) >= sizeof(buf))
		return 0;
	while (len > 0 && buf[len - 1] == '/')
		buf[--len] = '\0';
	if (len == 0)
		return 0;
	for (p = buf;;) {
		char *slash = strchr(p, '/');

		if (n == SEGMENTS_MAX)
			return 0;
		parts[n++] = p;
		if (slash == NULL)
			break;
		*slash = '\0';
		p = slash + 1;
	}
	for (size_t i = 0; i < n; i++)
		if (parts[i][0] == '\0' || strlen(parts[i]) >= DC_SEGMENT_MAX)
			return 0;

	if (strcmp(parts[0], "healthz") == 0 || strcmp(parts[0], "livez") == 0 ||
	    strcmp(parts[0], "readyz") == 0) {
		rt.kind = DC_ROUTE_HEALTH;
		(void)copy_seg(rt.resource, parts[0]);
		if (n > 1)
			(void)copy_seg(rt.name, parts[1]);
	} else if (strcmp(parts[0], "version") == 0 && n == 1) {
		rt.kind = DC_ROUTE_VERSION;
	} else if (strcmp(parts[0], "openapi") == 0 ||
	    (n == 1 && strcmp(parts[0], "swagger-2.0.0.pb-v1") == 0)) {
		rt.kind = DC_ROUTE_OPENAPI;
	} else if (strcmp(parts[0], "api") == 0) {
		if (n == 1)
			rt.kind = DC_ROUTE_API;
		else {
			(void)copy_seg(rt.version, parts[1]);
			if (n == 2)
				rt.kind = DC_ROUTE_GROUP_VERSION;
			else if (parse_resource(method, parts + 2, n - 2, watch_param,
			    &rt) < 0)
				return 0;
		}
	} else if (strcmp(parts[0], "apis") == 0) {
		if (n == 1)
			rt.kind = DC_ROUTE_APIS;
		else {
			(void)copy_seg(rt.group, parts[1]);
			if (n == 2)
				rt.kind = DC_ROUTE_GROUP;
			else {
				(void)copy_seg(rt.version, parts[2]);
				if (n == 3)
					rt.kind = DC_ROUTE_GROUP_VERSION;
				else if (parse_resource(method, parts + 3, n - 3,
				    watch_param, &rt) < 0)
					return 0;
			}
		}
	} else
		return 0;
	*ret = rt;
	return 0;
}

/*
 * Query parameters and targets
 */

/* Percent-decodes 'len' bytes; '+' becomes a space when 'plus' is set. */
static int
decode(const char *in, size_t len, bool plus, char **ret)
{
	char *out, *o;

	if ((out = kc_malloc(len + 1)) == NULL)
		return -ENOMEM;
	o = out;
	for (size_t i = 0; i < len; i++) {
		if (in[i] == '%') {
			int hi, lo;

			if (i + 2 >= len) {
				kc_free(out);
				return -EINVAL;
			}
			hi = kc_hex_digit(in[i + 1]);
			lo = hi >= 0 ? kc_hex_digit(in[i + 2]) : -1;
			if (lo < 0 || (hi == 0 && lo == 0)) {
				kc_free(out);
				return -EINVAL;
			}
			*o++ = (char)(hi << 4 | lo);
			i += 2;
		} else if (in[i] == '+' && plus)
			*o++ = ' ';
		else
			*o++ = in[i];
	}
	*o = '\0';
	*ret = out;
	return 0;
}

int
percent_decode(const char *in, size_t len, char **ret)
{
	return decode(in, len, false, ret);
}

int
req_add_param(struct dc_req *req, const char *kv)
{
	const char *eq = strchr(kv, '=');
	char *key, *value;

	if (req->nparams == DC_PARAMS_MAX)
		return -E2BIG;
	if (eq != NULL) {
		key = kc_strndup(kv, (size_t)(eq - kv));
		value = kc_strdup(eq + 1);
	} else {
		key = kc_strdup(kv);
		value = kc_strdup("");
	}
	if (key == NULL || value == NULL) {
		kc_free(key);
		kc_free(value);
		return -ENOMEM;
	}
	req->params[req->nparams].key = key;
	req->params[req->nparams].value = value;
	req->nparams++;
	return 0;
}

const char *
req_param(const struct dc_req *req, const char *key)
{
	for (size_t i = 0; i < req->nparams; i++)
		if (strcmp(req->params[i].key, key) == 0)
			return req->params[i].value;
	return NULL;
}

/*
 * upstream's query-parameter conversion for a bool (apimachinery,
 * runtime/conversion.go, Convert_Slice_string_To_bool and
 * Convert_Slice_string_To_Pointer_bool): absent is false; the first
 * value is false when it is "0" or equals "false" under
 * strings.EqualFold; anything else, "" included, is true. EqualFold uses
 * Unicode simple folding, in which the long s (U+017F) folds to 's', so
 * "falſe" is false too.
 */
bool
req_param_bool(const struct dc_req *req, const char *key)
{
	static const char word[] = "false";
	const char *v = req_param(req, key);
	size_t i = 0;

	if (v == NULL)
		return false;
	if (strcmp(v, "0") == 0)
		return false;
	for (size_t w = 0; w < sizeof(word) - 1; w++) {
		if ((v[i] | 0x20) == word[w] && v[i] != '\0')
			i++;
		else if (word[w] == 's' && (unsigned char)v[i] == 0xc5 &&
		    (unsigned char)v[i + 1] == 0xbf)
			i += 2;
		else
			return true;
	}
	return v[i] != '\0';
}

bool
req_has_param(const struct dc_req *req, const char *key)
{
	return req_param(req, key) != NULL;
}

bool
req_param_dry_run(const struct dc_req *req, bool *dry_run, char *val, size_t size)
{
	struct kc_sbuf b;
	size_t n = 0;
	bool bad = false;

	kc_sbuf_init(&b, val, size);
	kc_sbuf_puts(&b, "[]string{");
	for (size_t i = 0; i < req->nparams; i++) {
		const char *d = req->params[i].value;

		if (strcmp(req->params[i].key, "dryRun") != 0)
			continue;
		kc_sbuf_puts(&b, n++ > 0 ? ", " : "");
		kc_sbuf_quote(&b, d, strlen(d));
		bad |= strcmp(d, "All") != 0;
	}
	kc_sbuf_puts(&b, "}");
	*dry_run = !bad && n > 0;
	return !bad;
}

/*
 * upstream's query-parameter conversion for an int64 (apimachinery,
 * runtime/conversion.go, Convert_Slice_string_To_int64 and
 * Convert_Slice_string_To_Pointer_int64): strconv.ParseInt(first value,
 * 10, 64). ParseInt takes one optional sign and decimal digits, nothing
 * else ("" and " 1" included); it reads left to right and stops at the
 * first fault, a syntax error or an overflow, which names the error.
 */
int
req_param_i64(const struct dc_req *req, const char *key, int64_t *ret, char *err,
    size_t errsz)
{
	const char *v = req_param(req, key), *p;
	uint64_t n = 0, cutoff;
	struct kc_sbuf b;
	bool neg;
	int r = 0;

	if (v == NULL)
		return 0;
	p = v;
	neg = *p == '-';
	if (*p == '-' || *p == '+')
		p++;
	cutoff = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	if (*p == '\0')
		r = -EINVAL;
	for (; *p != '\0' && r == 0; p++) {
		if (*p < '0' || *p > '9')
			r = -EINVAL;
		else if (n > (cutoff - (uint64_t)(*p - '0')) / 10)
			r = -ERANGE;
		else
			n = n * 10 + (uint64_t)(*p - '0');
	}
	if (r < 0) {
		kc_sbuf_init(&b, err, errsz);
		kc_sbuf_puts(&b, "strconv.ParseInt: parsing ");
		kc_sbuf_quote(&b, v, strlen(v));
		kc_sbuf_puts(&b, r == -ERANGE ? ": value out of range" : ": invalid syntax");
		return r;
	}
	*ret = neg ? (n == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)n) : (int64_t)n;
	return 1;
}

int
req_set_target(struct dc_req *req, const char *target)
{
	const char *q = strchr(target, '?');
	size_t plen = q != NULL ? (size_t)(q - target) : strlen(target);
	char *path = NULL;
	int r;

	if ((r = decode(target, plen, false, &path)) < 0)
		return r;
	kc_free(req->path);
	req->path = path;
	if (q == NULL)
		return 0;
	for (const char *p = q + 1; *p != '\0';) {
		const char *amp = strchr(p, '&');
		size_t n = amp != NULL ? (size_t)(amp - p) : strlen(p);
		char *kv;

		if (n > 0) {
			if ((r = decode(p, n, true, &kv)) < 0)
				return r;
			r = req_add_param(req, kv);
			kc_free(kv);
			if (r < 0)
				return r;
		}
		if (amp == NULL)
			break;
		p = amp + 1;
	}
	return 0;
}

void
req_clear(struct dc_req *req)
{
	for (size_t i = 0; i < req->nparams; i++) {
		kc_free(req->params[i].key);
		kc_free(req->params[i].value);
	}
	kc_free(req->path);
	kc_free(req->accept);
	kc_free(req->content_type);
	kc_free_secret(req->authorization);
	kc_free(req->user_agent);
	kc_free(req->imp_user);
	kc_free(req->imp_uid);
	for (size_t i = 0; i < req->imp_ngroups; i++)
		kc_free(req->imp_groups[i]);
	kc_free(req->body);
	user_clear(&req->user);
	memset(req, 0, sizeof(*req));
}

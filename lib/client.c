/*
 * client.c: REST verbs, options structs, HTTP status to KC_E* mapping.
 *
 * Every verb has the same shape: check the options (names, namespace,
 * subresource, the combination of flags), build the path and query into
 * a bounded buffer, serialize the body, hand one struct kc_http_req to
 * the transport, then decode what came back. Nothing is sent when a check
 * fails, so a bad name never becomes a request to some other URL.
 *
 * Paths. /api/<v> for the core group, /apis/<g>/<v> otherwise, then
 * namespaces/<ns>/ for namespaced resources, the plural, the name and the
 * subresource. Segments are checked rather than escaped: the characters
 * allowed are exactly RFC 3986's segment characters minus '%', so the
 * path the server routes is the path the caller named. Query values are
 * percent-encoded (everything but the unreserved set), and parameters are
 * written in alphabetical order, as Go's url.Values does.
 *
 * Answers. 2xx: the body is parsed with kc_json_parse() and must be a
 * JSON object. Anything else: a metav1.Status body gives the reason,
 * message, field causes and retryAfterSeconds; kc_err_from_http() turns
 * reason and code into the one libkc code. This file is the only place
 * that turns HTTP into KC_E* codes (STYLE.md section 5).
 *
 * Retries are the transport's, and only for requests marked idempotent:
 * the reads. The header's comment says why writes are not.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/client.h>
#include <kc/clock.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/jsonstream.h>
#include <kc/ratelimit.h>
#include <kc/str.h>
#include <kc/transport.h>
#include <kc/validation.h>

#include "internal.h"

#define FIELD_MANAGER_MAX	128	/* the API server's limit */
#define RETRY_AFTER_MAX_S	3600	/* ceiling on a Status's retryAfterSeconds */

#define RES(g, v, r, k, ns)	{ .group = (g), .version = (v), .resource = (r), \
				  .kind = (k), .namespaced = (ns) }

const struct kc_resource kc_res_pods = RES("", "v1", "pods", "Pod", true);
const struct kc_resource kc_res_services = RES("", "v1", "services", "Service", true);
const struct kc_resource kc_res_endpoints = RES("", "v1", "endpoints", "Endpoints", true);
const struct kc_resource kc_res_namespaces =
    RES("", "v1", "namespaces", "Namespace", false);
const struct kc_resource kc_res_nodes = RES("", "v1", "nodes", "Node", false);
const struct kc_resource kc_res_configmaps =
    RES("", "v1", "configmaps", "ConfigMap", true);
const struct kc_resource kc_res_secrets = RES("", "v1", "secrets", "Secret", true);
const struct kc_resource kc_res_serviceaccounts =
    RES("", "v1", "serviceaccounts", "ServiceAccount", true);
const struct kc_resource kc_res_events = RES("", "v1", "events", "Event", true);
const struct kc_resource kc_res_events_v1 =
    RES("events.k8s.io", "v1", "events", "Event", true);
const struct kc_resource kc_res_networkpolicies =
    RES("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true);
const struct kc_resource kc_res_leases =
    RES("coordination.k8s.io", "v1", "leases", "Lease", true);
const struct kc_resource kc_res_customresourcedefinitions =
    RES("apiextensions.k8s.io", "v1", "customresourcedefinitions",
	"CustomResourceDefinition", false);
const struct kc_resource kc_res_roles =
    RES("rbac.authorization.k8s.io", "v1", "roles", "Role", true);
const struct kc_resource kc_res_rolebindings =
    RES("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true);
const struct kc_resource kc_res_clusterroles =
    RES("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false);
const struct kc_resource kc_res_clusterrolebindings =
    RES("rbac.authorization.k8s.io", "v1", "clusterrolebindings",
	"ClusterRoleBinding", false);
const struct kc_resource kc_res_priorityclasses =
    RES("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false);
const struct kc_resource kc_res_resourcequotas =
    RES("", "v1", "resourcequotas", "ResourceQuota", true);
const struct kc_resource kc_res_limitranges =
    RES("", "v1", "limitranges", "LimitRange", true);
const struct kc_resource kc_res_persistentvolumeclaims =
    RES("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true);

struct kc_client {
	const struct kc_transport_ops *ops;
	void		*tr;		/* the transport instance */
	size_t		 max_response;
	char		*ns;		/* the rest config's namespace */
	struct kc_ratelimit *limiter;	/* shared, the caller's */
	kc_client_observe_fn *observe;
	void		*observe_arg;
	atomic_bool	 cancelled;	/* for waits on 'limiter' */
};

/* What a request is, for the limiter wait and the observer. */
struct call {
	const char		 *verb;
	const struct kc_resource *res;
	const struct kc_json_filter *filter;	/* of the 2xx body; NULL: all */
};

/* ---- names, paths and queries ---------------------------------------- */

/* RFC 3986 pchar, without '%': a segment that needs no escaping. */
static bool
segment_char(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return c != '\0' && strchr("-._~!$&'()*+,;=:@", c) != NULL;
}

static int
check_segment(const char *what, const char *s, size_t max, struct kc_status *st)
{
	size_t len;

	if (s == NULL || s[0] == '\0')
		return kc_status_set(st, -EINVAL, "%s is empty", what);
	len = strnlen(s, max + 1);
	if (len > max)
		return kc_status_set(st, -EINVAL, "%s is longer than %zu bytes", what, max);
	if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return kc_status_set(st, -EINVAL, "%s \"%s\" is not allowed", what, s);
	for (size_t i = 0; i < len; i++)
		if (!segment_char((unsigned char)s[i]))
			return kc_status_set(st, -EINVAL, "%s \"%.*s\": character 0x%02x at %zu "
			    "is not allowed", what, (int)KC_MIN(len, 64), s,
			    (unsigned char)s[i], i);
	return 0;
}

int
kc_client_check_name(const char *name, struct kc_status *st)
{
	return check_segment("name", name, KC_NAME_MAX, st);
}

int
kc_client_check_namespace(const char *ns, struct kc_status *st)
{
	size_t len;

	if (ns == NULL || ns[0] == '\0')
		return kc_status_set(st, -EINVAL, "namespace is empty");
	len = strnlen(ns, KC_NAMESPACE_MAX + 1);
	if (len > KC_NAMESPACE_MAX)
		return kc_status_set(st, -EINVAL, "namespace is longer than %d bytes",
		    KC_NAMESPACE_MAX);
	if (!kc_valid_is_dns1123_label((struct kc_str){ ns, len }))
		return kc_status_set(st, -EINVAL, "namespace \"%.*s\" is not a DNS-1123 "
		    "label (lower-case letters, digits and inner '-')", (int)len, ns);
	return 0;
}

static int
check_resource(const struct kc_resource *res, struct kc_status *st)
{
	int r;

	if (res == NULL)
		return kc_status_set(st, -EINVAL, "no resource given");
	if (res->group != NULL && res->group[0] != '\0' &&
	    (r = check_segment("API group", res->group, KC_NAME_MAX, st)) < 0)
		return r;
	if ((r = check_segment("API version", res->version, 64, st)) < 0)
		return r;
	return check_segment("resource", res->resource, KC_NAME_MAX, st);
}

static int
url_put(struct kc_buf *b, const char *s, struct kc_status *st)
{
	int r;

	if ((r = kc_buf_puts(b, s)) == -E2BIG)
		return kc_status_set(st, r, "request path longer than %zu bytes", b->max);
	return r;
}

int
kc__client_path(struct kc_buf *b, const struct kc_resource *res, const char *ns,
    const char *name, const char *subresource, struct kc_status *st)
{
	bool core;
	int r;

	if ((r = check_resource(res, st)) < 0)
		return r;
	if (ns != NULL && !res->namespaced)
		return kc_status_set(st, -EINVAL, "%s is cluster-scoped: no namespace allowed",
		    res->resource);
	if (ns != NULL && (r = kc_client_check_namespace(ns, st)) < 0)
		return r;
	if (name != NULL && (r = kc_client_check_name(name, st)) < 0)
		return r;
	if (subresource != NULL) {
		if (name == NULL)
			return kc_status_set(st, -EINVAL, "subresource \"%s\" without a name",
			    subresource);
		if ((r = check_segment("subresource", subresource, 64, st)) < 0)
			return r;
	}
	core = res->group == NULL || res->group[0] == '\0';
	if ((r = url_put(b, core ? "/api/" : "/apis/", st)) < 0)
		return r;
	if (!core && ((r = url_put(b, res->group, st)) < 0 ||
	    (r = url_put(b, "/", st)) < 0))
		return r;
	if ((r = url_put(b, res->version, st)) < 0)
		return r;
	if (ns != NULL && ((r = url_put(b, "/namespaces/", st)) < 0 ||
	    (r = url_put(b, ns, st)) < 0))
		return r;
	if ((r = url_put(b, "/", st)) < 0 || (r = url_put(b, res->resource, st)) < 0)
		return r;
	if (name != NULL && ((r = url_put(b, "/", st)) < 0 ||
	    (r = url_put(b, name, st)) < 0))
		return r;
	if (subresource != NULL && ((r = url_put(b, "/", st)) < 0 ||
	    (r = url_put(b, subresource, st)) < 0))
		return r;
	return 0;
}

/* RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~". */
static bool
unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
}

int
kc__query_add(struct kc_buf *b, const char *key, const char *value)
{
	static const char hex[] = "0123456789ABCDEF";
	bool first;
	int r;

	if (value == NULL)
		return 0;
	first = b->len == 0 || memchr(b->data, '?', b->len) == NULL;
	if ((r = kc_buf_putc(b, first ? '?' : '&')) < 0 ||
	    (r = kc_buf_puts(b, key)) < 0 || (r = kc_buf_putc(b, '=')) < 0)
		return r;
	for (const unsigned char *p = (const unsigned char *)value; *p != '\0'; p++) {
		if (unreserved(*p))
			r = kc_buf_putc(b, (char)*p);
		else
			r = kc_buf_append(b, (char[3]){ '%', hex[*p >> 4],
			    hex[*p & 0xf] }, 3);
		if (r < 0)
			return r;
	}
	return 0;
}

int
kc_client_query_add(struct kc_buf *b, const char *key, const char *value)
{
	return kc__query_add(b, key, value);
}

static int
query(struct kc_buf *b, const char *key, const char *value, struct kc_status *st)
{
	int r;

	if ((r = kc__query_add(b, key, value)) == -E2BIG)
		return kc_status_set(st, r, "request path longer than %zu bytes", b->max);
	return r;
}

static int
query_u64(struct kc_buf *b, const char *key, uint64_t v, struct kc_status *st)
{
	char num[24];

	(void)snprintf(num, sizeof(num), "%" PRIu64, v);
	return query(b, key, num, st);
}

static const char *
field_validation_name(enum kc_field_validation v)
{
	switch (v) {
	case KC_FIELD_VALIDATION_STRICT:	return "Strict";
	case KC_FIELD_VALIDATION_WARN:		return "Warn";
	case KC_FIELD_VALIDATION_IGNORE:	return "Ignore";
	case KC_FIELD_VALIDATION_DEFAULT:	break;
	}
	return NULL;
}

static const char *
propagation_name(enum kc_propagation p)
{
	switch (p) {
	case KC_PROPAGATION_FOREGROUND:	return "Foreground";
	case KC_PROPAGATION_BACKGROUND:	return "Background";
	case KC_PROPAGATION_ORPHAN:	return "Orphan";
	case KC_PROPAGATION_DEFAULT:	break;
	}
	return NULL;
}

/* dryRun, fieldManager, fieldValidation: the query of every write. */
static int
write_query(struct kc_buf *b, bool dry_run, const char *field_manager,
    enum kc_field_validation fv, struct kc_status *st)
{
	int r;

	if (field_manager != NULL && (field_manager[0] == '\0' ||
	    strlen(field_manager) > FIELD_MANAGER_MAX))
		return kc_status_set(st, -EINVAL, "fieldManager must be 1 to %d bytes",
		    FIELD_MANAGER_MAX);
	if (fv != KC_FIELD_VALIDATION_DEFAULT && field_validation_name(fv) == NULL)
		return kc_status_set(st, -EINVAL, "unknown fieldValidation %d", (int)fv);
	if ((r = query(b, "dryRun", dry_run ? "All" : NULL, st)) < 0 ||
	    (r = query(b, "fieldManager", field_manager, st)) < 0 ||
	    (r = query(b, "fieldValidation", field_validation_name(fv), st)) < 0)
		return r;
	return 0;
}

/* ---- the client ------------------------------------------------------- */

int
kc_client_new(const struct kc_client_opts *opts, struct kc_client **ret,
    struct kc_status *st)
{
	struct kc_client *cl;
	const struct kc_transport_ops *ops;
	struct kc_transport_opts topts;
	int r;

	if (opts == NULL || opts->rc == NULL)
		return kc_status_set(st, -EINVAL, "kc_client_new: no rest config");
	ops = opts->ops != NULL ? opts->ops : &kc_transport_curl;
	if (ops->open == NULL || ops->request == NULL || ops->close == NULL)
		return kc_status_set(st, -EINVAL, "kc_client_new: transport %s is incomplete",
		    ops->name != NULL ? ops->name : "(unnamed)");
	if ((cl = kc_calloc(1, sizeof(*cl))) == NULL)
		return -ENOMEM;
	cl->ops = ops;
	cl->limiter = opts->limiter;
	cl->observe = opts->observe;
	cl->observe_arg = opts->observe_arg;
	atomic_init(&cl->cancelled, false);
	cl->max_response = opts->max_response != 0 ? opts->max_response :
	    KC_RESPONSE_MAX_DEFAULT;
	cl->ns = kc_strdup(opts->rc->namespace != NULL && opts->rc->namespace[0] != '\0' ?
	    opts->rc->namespace : "default");
	if (cl->ns == NULL) {
		kc_client_free(cl);
		return -ENOMEM;
	}
	topts = (struct kc_transport_opts){
		.rc = opts->rc,
		.qps = opts->limiter != NULL ? 0 : opts->qps,
		.burst = opts->limiter != NULL ? 0 : opts->burst,
		.max_retries = opts->max_retries,
		.backoff_base_ms = opts->backoff_base_ms,
		.backoff_max_ms = opts->backoff_max_ms,
		.connect_timeout_ms = opts->connect_timeout_ms,
		.timeout_ms = opts->timeout_ms,
		.max_response = cl->max_response,
		.user_agent = opts->user_agent,
	};
	if ((r = ops->open(&topts, &cl->tr, st)) < 0) {
		cl->tr = NULL;
		kc_client_free(cl);
		return r;
	}
	*ret = cl;
	return 0;
}

struct kc_client *
kc_client_free(struct kc_client *cl)
{
	if (cl == NULL)
		return NULL;
	if (cl->tr != NULL)
		cl->tr = cl->ops->close(cl->tr);
	kc_free(cl->ns);
	return kc_free(cl);
}

const char *
kc_client_namespace(const struct kc_client *cl)
{
	return cl->ns;
}

void
kc_client_cancel(struct kc_client *cl)
{
	atomic_store(&cl->cancelled, true);
	if (cl->ops->cancel != NULL)
		cl->ops->cancel(cl->tr);
}

void
kc_client_reset_cancel(struct kc_client *cl)
{
	atomic_store(&cl->cancelled, false);
	if (cl->ops->reset_cancel != NULL)
		cl->ops->reset_cancel(cl->tr);
}

/* ---- answers ------------------------------------------------------------ */

static void
copy_field(char *dst, size_t size, const char *src)
{
	(void)kc_strlcpy(dst, src != NULL ? src : "", size);
}

int
kc__status_decode(const struct json_object *o, int http_code,
    uint32_t retry_after_ms, struct kc_status *st)
{
	const char *reason = kc_json_str(o, "reason");
	const char *message = kc_json_str(o, "message");
	struct json_object *causes;
	int64_t code = kc_json_int(o, 0, "code");
	int r;

	if (http_code == 0 && code >= 100 && code <= 599)
		http_code = (int)code;
	r = kc_err_from_http(http_code, reason);
	if (st == NULL)
		return r;
	kc_status_clear(st);
	st->http_code = http_code;
	copy_field(st->reason, sizeof(st->reason), reason);
	if (message != NULL && message[0] != '\0')
		copy_field(st->message, sizeof(st->message), message);
	else
		(void)snprintf(st->message, sizeof(st->message), "HTTP %d: %s",
		    http_code, kc_strerror(r));
	st->retry_after_ms = retry_after_ms;
	if (retry_after_ms == 0) {
		int64_t s = kc_json_int(o, 0, "details", "retryAfterSeconds");

		if (s > 0)
			st->retry_after_ms = (uint32_t)KC_MIN(s, RETRY_AFTER_MAX_S) * 1000;
	}
	causes = kc_json_get(o, "details", "causes");
	if (causes != NULL && json_object_is_type(causes, json_type_array)) {
		size_t n = json_object_array_length(causes);

		for (size_t i = 0; i < n && st->ncauses < KC_STATUS_CAUSES_MAX; i++) {
			struct json_object *c = json_object_array_get_idx(causes, i);
			struct kc_status_cause *sc = &st->causes[st->ncauses];

			if (!json_object_is_type(c, json_type_object))
				continue;
			copy_field(sc->reason, sizeof(sc->reason), kc_json_str(c, "reason"));
			copy_field(sc->field, sizeof(sc->field), kc_json_str(c, "field"));
			copy_field(sc->message, sizeof(sc->message),
			    kc_json_str(c, "message"));
			st->ncauses++;
		}
	}
	return r;
}

/*
 * A non-2xx answer. A JSON object that looks like a Status is decoded;
 * anything else maps by HTTP code with the text (printable bytes only,
 * white space folded) as message.
 */
static int
http_error(const struct kc_http_resp *resp, struct kc_status *st)
{
	struct json_object *o = NULL;
	struct kc_str text;
	int r;
	size_t n = 0;

	if (kc_json_parse(kc_buf_str(&resp->body), resp->body.len, &o, NULL) == 0) {
		if (json_object_is_type(o, json_type_object) &&
		    (kc_json_str(o, "reason") != NULL ||
		    kc_json_str(o, "message") != NULL)) {
			r = kc__status_decode(o, resp->status, resp->retry_after_ms, st);
			json_object_put(o);
			return r;
		}
		json_object_put(o);
	}
	r = kc_err_from_http(resp->status, NULL);
	if (st == NULL)
		return r;
	kc_status_clear(st);
	st->http_code = resp->status;
	st->retry_after_ms = resp->retry_after_ms;
	text = kc_str_trim((struct kc_str){ kc_buf_str(&resp->body), resp->body.len });
	for (size_t i = 0; i < text.len && n < sizeof(st->message) - 1; i++) {
		unsigned char c = (unsigned char)text.p[i];

		if (c < 0x20 || c == 0x7f)
			c = ' ';
		if (c == ' ' && n > 0 && st->message[n - 1] == ' ')
			continue;
		st->message[n++] = (char)c;
	}
	st->message[n] = '\0';
	if (n == 0)
		(void)snprintf(st->message, sizeof(st->message), "HTTP %d: %s",
		    resp->status, kc_strerror(r));
	return r;
}

static bool
http_ok(int status)
{
	return status >= 200 && status <= 299;
}

static bool
client_cancelled(void *arg)
{
	struct kc_client *cl = arg;

	return atomic_load(&cl->cancelled);
}

/*
 * Takes a token from the shared limiter, if any: 0, or -ECANCELED after
 * kc_client_cancel(). '*ret_ms' is the time it took.
 */
static int
throttle(struct kc_client *cl, uint64_t *ret_ms, struct kc_status *st)
{
	uint64_t start;
	int r;

	*ret_ms = 0;
	if (cl->limiter == NULL)
		return 0;
	start = kc_clock_now_ms();
	r = kc_ratelimit_wait(cl->limiter, client_cancelled, cl);
	*ret_ms = kc_clock_now_ms() - start;
	if (r < 0)
		return kc_status_set(st, r, "cancelled while waiting for the rate limit");
	return 0;
}

/* Tells the observer how a request went. */
static void
observe(struct kc_client *cl, const struct call *c, const struct kc_http_req *req,
    int http_code, int result, uint64_t start_ms, uint64_t throttle_ms)
{
	struct kc_request_info info;

	if (cl->observe == NULL)
		return;
	info = (struct kc_request_info){
		.verb = c->verb,
		.res = c->res,
		.method = req->method,
		.path = req->path,
		.http_code = http_code,
		.result = result,
		.latency_ms = kc_clock_now_ms() - start_ms,
		.throttle_ms = throttle_ms,
	};
	cl->observe(cl->observe_arg, &info);
}

/* Runs one request and decodes the answer into '*ret' (when not NULL). */
static int
client_exec(struct kc_client *cl, const struct call *c, const struct kc_http_req *req,
    struct json_object **ret, struct kc_status *st)
{
	struct kc_http_resp resp;
	struct kc_status perr;
	struct json_object *o = NULL;
	uint64_t start = kc_clock_now_ms(), throttled;
	int r;

	memset(&resp, 0, sizeof(resp));
	kc_buf_init(&resp.body, cl->max_response);
	if ((r = throttle(cl, &throttled, st)) < 0)
		goto out;
	if ((r = cl->ops->request(cl->tr, req, &resp, st)) < 0) {
		resp.status = 0;
		goto out;
	}
	if (!http_ok(resp.status)) {
		r = http_error(&resp, st);
		goto out;
	}
	if (resp.body.len > cl->max_response) {
		r = kc_status_set(st, -E2BIG, "%s %s: response larger than %zu bytes",
		    req->method, req->path, cl->max_response);
		goto out;
	}
	if (ret == NULL)
		goto out;
	if ((r = c->filter != NULL ?
	    kc_json_parse_filtered(kc_buf_str(&resp.body), resp.body.len, c->filter, &o,
	    &perr) :
	    kc_json_parse(kc_buf_str(&resp.body), resp.body.len, &o, &perr)) < 0) {
		r = kc_status_set(st, r, "%s %s: %s", req->method, req->path, perr.message);
		if (st != NULL)
			st->http_code = resp.status;
		goto out;
	}
	if (!json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		r = kc_status_set(st, KC_EPARSE, "%s %s: the answer is not a JSON object",
		    req->method, req->path);
		if (st != NULL)
			st->http_code = resp.status;
		goto out;
	}
	*ret = o;
out:
	observe(cl, c, req, resp.status, r, start, throttled);
	kc_http_resp_free(&resp);
	return r;
}

/* Serializes 'body' (when not NULL) and runs the request. */
static int
client_call(struct kc_client *cl, const struct call *c, const char *method,
    const struct kc_buf *url, const char *content_type, const struct json_object *body,
    bool idempotent, struct json_object **ret, struct kc_status *st)
{
	_cleanup_(kc_freep) char *text = NULL;
	struct kc_http_req req;
	size_t len = 0;

	if (body != NULL && (text = kc_json_dump(body, &len)) == NULL)
		return -ENOMEM;
	req = (struct kc_http_req){
		.method = method,
		.path = kc_buf_str(url),
		.content_type = body != NULL ? content_type : NULL,
		.body = text,
		.body_len = len,
		.idempotent = idempotent,
	};
	return client_exec(cl, c, &req, ret, st);
}

int
kc__client_stream(struct kc_client *cl, const char *verb, const struct kc_resource *res,
    const char *path, int (*fn)(void *, const char *, size_t), void *arg,
    struct kc_status *st)
{
	struct kc_http_req req = { .method = "GET", .path = path };
	struct call c = { .verb = verb, .res = res };
	struct kc_http_resp resp;
	uint64_t start = kc_clock_now_ms(), throttled;
	int r;

	if (cl->ops->stream == NULL)
		return kc_status_set(st, -EOPNOTSUPP, "transport %s cannot stream",
		    cl->ops->name != NULL ? cl->ops->name : "(unnamed)");
	memset(&resp, 0, sizeof(resp));
	kc_buf_init(&resp.body, cl->max_response);
	if ((r = throttle(cl, &throttled, st)) == 0)
		r = cl->ops->stream(cl->tr, &req, &resp, fn, arg, st);
	if (r == 0 && !http_ok(resp.status))
		r = http_error(&resp, st);
	observe(cl, &c, &req, resp.status, r, start, throttled);
	kc_http_resp_free(&resp);
	return r;
}

/* ---- verbs -------------------------------------------------------------- */

/*
 * The namespace of a request about 'obj': the option, else the object's,
 * and the two must agree. NULL for cluster-scoped resources.
 */
static int
object_ns(const struct kc_resource *res, const char *opt,
    const struct json_object *obj, const char **ret, struct kc_status *st)
{
	const char *mine = obj != NULL ? kc_json_str(obj, "metadata", "namespace") : NULL;

	if (!res->namespaced) {
		if (opt != NULL)
			return kc_status_set(st, -EINVAL,
			    "%s is cluster-scoped: no namespace allowed", res->resource);
		*ret = NULL;
		return 0;
	}
	if (opt != NULL && mine != NULL && mine[0] != '\0' && strcmp(opt, mine) != 0)
		return kc_status_set(st, -EINVAL, "namespace \"%s\" differs from the object's "
		    "metadata.namespace \"%s\"", opt, mine);
	*ret = opt != NULL ? opt : (mine != NULL && mine[0] != '\0' ? mine : NULL);
	if (*ret == NULL)
		return kc_status_set(st, -EINVAL, "%s is namespaced: a namespace is required",
		    res->resource);
	return 0;
}

/* The same for the name: the option, else metadata.name; they agree. */
static int
object_name(const char *opt, const struct json_object *obj, const char **ret,
    struct kc_status *st)
{
	const char *mine = obj != NULL ? kc_json_str(obj, "metadata", "name") : NULL;

	if (opt != NULL && mine != NULL && mine[0] != '\0' && strcmp(opt, mine) != 0)
		return kc_status_set(st, -EINVAL, "name \"%s\" differs from the object's "
		    "metadata.name \"%s\"", opt, mine);
	*ret = opt != NULL ? opt : mine;
	if (*ret == NULL || (*ret)[0] == '\0')
		return kc_status_set(st, -EINVAL, "no name given and the object has none");
	return 0;
}

/* The namespace of a request about one named object. */
static int
named_ns(const struct kc_resource *res, const char *ns, struct kc_status *st)
{
	int r;

	if ((r = check_resource(res, st)) < 0)
		return r;
	if (res->namespaced && ns == NULL)
		return kc_status_set(st, -EINVAL, "%s is namespaced: a namespace is required",
		    res->resource);
	return 0;
}

static int
check_object(const struct json_object *obj, struct kc_status *st)
{
	if (obj == NULL || !json_object_is_type(obj, json_type_object))
		return kc_status_set(st, -EINVAL, "the body must be a JSON object");
	return 0;
}

int
kc_client_get(struct kc_client *cl, const struct kc_get_opts *opts,
    struct json_object **ret, struct kc_status *st)
{
	_cleanup_(kc_buf_free) struct kc_buf url;
	int r;

	kc_buf_init(&url, KC_URL_MAX);
	if ((r = named_ns(opts->res, opts->ns, st)) < 0)
		return r;
	if (opts->name == NULL)
		return kc_status_set(st, -EINVAL, "get: a name is required");
	if ((r = kc__client_path(&url, opts->res, opts->ns, opts->name,
	    opts->subresource, st)) < 0 ||
	    (r = query(&url, "resourceVersion", opts->resource_version, st)) < 0)
		return r;
	return client_call(cl, &(struct call){ "get", opts->res, NULL }, "GET", &url, NULL,
	    NULL, true, ret, st);
}

static const char *
rv_match_name(enum kc_rv_match m)
{
	switch (m) {
	case KC_RV_MATCH_NOT_OLDER_THAN:	return "NotOlderThan";
	case KC_RV_MATCH_EXACT:			return "Exact";
	case KC_RV_MATCH_UNSET:			break;
	}
	return NULL;
}

/*
 * One page with the options' selectors and timeout; the paging fields
 * come from the caller, because list_all changes them between pages.
 */
static int
list_page(struct kc_client *cl, const struct kc_list_opts *opts, const char *cont,
    uint64_t limit, const char *rv, enum kc_rv_match match,
    struct json_object **ret, struct kc_status *st)
{
	static const char *const whole[] = { "apiVersion", "kind", "metadata" };
	_cleanup_(kc_json_filter_freep) struct kc_json_filter *filter = NULL;
	_cleanup_(kc_buf_free) struct kc_buf url;
	int r;

	kc_buf_init(&url, KC_URL_MAX);
	if (match != KC_RV_MATCH_UNSET && rv_match_name(match) == NULL)
		return kc_status_set(st, -EINVAL, "unknown resourceVersionMatch %d", (int)match);
	if (match != KC_RV_MATCH_UNSET && rv == NULL)
		return kc_status_set(st, -EINVAL, "resourceVersionMatch needs a resourceVersion");
	if ((r = kc__client_path(&url, opts->res, opts->ns, NULL, NULL, st)) < 0 ||
	    (r = query(&url, "continue", cont, st)) < 0 ||
	    (r = query(&url, "fieldSelector", opts->field_selector, st)) < 0 ||
	    (r = query(&url, "labelSelector", opts->label_selector, st)) < 0 ||
	    (limit != 0 && (r = query_u64(&url, "limit", limit, st)) < 0) ||
	    (r = query(&url, "resourceVersion", rv, st)) < 0 ||
	    (r = query(&url, "resourceVersionMatch", rv_match_name(match), st)) < 0 ||
	    (opts->timeout_s != 0 &&
	    (r = query_u64(&url, "timeoutSeconds", opts->timeout_s, st)) < 0))
		return r;
	if (opts->filter != NULL && (r = kc_json_filter_wrap(opts->filter, "items", whole,
	    KC_ARRAY_SIZE(whole), &filter)) < 0)
		return r;
	return client_call(cl, &(struct call){ "list", opts->res, filter }, "GET", &url,
	    NULL, NULL, true, ret, st);
}

int
kc_client_list(struct kc_client *cl, const struct kc_list_opts *opts,
    struct json_object **ret, struct kc_status *st)
{
	return list_page(cl, opts, opts->cont, opts->limit, opts->resource_version,
	    opts->rv_match, ret, st);
}

/* The items array of a page: KC_EPARSE when absent, created when null. */
static int
page_items(struct json_object *page, struct json_object **ret, struct kc_status *st)
{
	struct json_object *items;

	if (!json_object_object_get_ex(page, "items", &items))
		return kc_status_set(st, KC_EPARSE, "list answer without items");
	if (items == NULL) {
		if (kc_json_put(page, "items", json_object_new_array()) < 0)
			return -ENOMEM;
		items = kc_json_arr_of(page, "items");
	}
	if (!json_object_is_type(items, json_type_array))
		return kc_status_set(st, KC_EPARSE, "list answer: items is not an array");
	*ret = items;
	return 0;
}

int
kc_client_list_all(struct kc_client *cl, const struct kc_list_opts *opts,
    struct json_object **ret, struct kc_status *st)
{
	_cleanup_(kc_json_putp) struct json_object *list = NULL;
	_cleanup_(kc_freep) char *cont = NULL;
	struct json_object *items = NULL, *meta;
	size_t max = opts->max_items != 0 ? opts->max_items : KC_LIST_ALL_MAX_DEFAULT;
	uint64_t limit = opts->limit != 0 ? opts->limit : KC_LIST_PAGE_DEFAULT;
	int r;

	if (opts->cont != NULL)
		return kc_status_set(st, -EINVAL,
		    "list_all starts from the first page: no continue");
	for (size_t pages = 0;; pages++) {
		_cleanup_(kc_json_putp) struct json_object *page = NULL;
		struct json_object *these = NULL;
		const char *next;
		size_t n;

		if (pages == KC_LIST_ALL_PAGES_MAX)
			return kc_status_set(st, -E2BIG, "list of %s: more than %d pages",
			    opts->res->resource, KC_LIST_ALL_PAGES_MAX);
		/* A continued page is pinned by its token: no resourceVersion. */
		if ((r = list_page(cl, opts, cont, limit,
		    cont == NULL ? opts->resource_version : NULL,
		    cont == NULL ? opts->rv_match : KC_RV_MATCH_UNSET, &page, st)) < 0)
			return r;
		if ((r = page_items(page, &these, st)) < 0)
			return r;
		n = json_object_array_length(these);
		if (n > max - (items != NULL ? json_object_array_length(items) : 0))
			return kc_status_set(st, -E2BIG, "list of %s: more than %zu items",
			    opts->res->resource, max);
		if (list == NULL) {
			list = page;
			page = NULL;
			items = these;
		} else {
			for (size_t i = 0; i < n; i++)
				if (kc_json_append(items, json_object_get(
				    json_object_array_get_idx(these, i))) < 0)
					return -ENOMEM;
		}
		cont = kc_free(cont);
		next = kc_json_str(page != NULL ? page : list, "metadata", "continue");
		if (next == NULL || next[0] == '\0')
			break;
		if ((cont = kc_strdup(next)) == NULL)
			return -ENOMEM;
	}
	if ((meta = kc_json_obj_of(list, "metadata")) != NULL) {
		json_object_object_del(meta, "continue");
		json_object_object_del(meta, "remainingItemCount");
	}
	*ret = list;
	list = NULL;
	return 0;
}

int
kc_client_create(struct kc_client *cl, const struct kc_create_opts *opts,
    const struct json_object *obj, struct json_object **ret, struct kc_status *st)
{
	_cleanup_(kc_buf_free) struct kc_buf url;
	const char *ns;
	int r;

	kc_buf_init(&url, KC_URL_MAX);
	if ((r = check_resource(opts->res, st)) < 0 || (r = check_object(obj, st)) < 0)
		return r;
	if ((opts->name != NULL) != (opts->subresource != NULL))
		return kc_status_set(st, -EINVAL, "create: name and subresource go together");
	if ((r = object_ns(opts->res, opts->ns, obj, &ns, st)) < 0)
		return r;
	if ((r = kc__client_path(&url, opts->res, ns, opts->name, opts->subresource,
	    st)) < 0 ||
	    (r = write_query(&url, opts->dry_run, opts->field_manager,
	    opts->field_validation, st)) < 0)
		return r;
	return client_call(cl, &(struct call){ "create", opts->res, NULL }, "POST", &url,
	    "application/json", obj, false, ret, st);
}

int
kc_client_update(struct kc_client *cl, const struct kc_update_opts *opts,
    const struct json_object *obj, struct json_object **ret, struct kc_status *st)
{
	_cleanup_(kc_buf_free) struct kc_buf url;
	const char *ns, *name;
	int r;

	kc_buf_init(&url, KC_URL_MAX);
	if ((r = check_resource(opts->res, st)) < 0 || (r = check_object(obj, st)) < 0)
		return r;
	if ((r = object_ns(opts->res, opts->ns, obj, &ns, st)) < 0 ||
	    (r = object_name(opts->name, obj, &name, st)) < 0)
		return r;
	if ((r = kc__client_path(&url, opts->res, ns, name, opts->subresource, st)) < 0 ||
	    (r = write_query(&url, opts->dry_run, opts->field_manager,
	    opts->field_validation, st)) < 0)
		return r;
	return client_call(cl, &(struct call){ "update", opts->res, NULL }, "PUT", &url,
	    "application/json", obj, false, ret, st);
}

static const char *
patch_content_type(enum kc_patch_type t)
{
	switch (t) {
	case KC_PATCH_MERGE:		return "application/merge-patch+json";
	case KC_PATCH_JSON:		return "application/json-patch+json";
	case KC_PATCH_STRATEGIC:	return "application/strategic-merge-patch+json";
	case KC_PATCH_APPLY:		return "application/apply-patch+yaml";
	case KC_PATCH_NONE:		break;
	}
	return NULL;
}

int
kc_client_patch(struct kc_client *cl, const struct kc_patch_opts *opts,
    const struct json_object *patch, struct json_object **ret, struct kc_status *st)
{
	_cleanup_(kc_buf_free) struct kc_buf url;
	const char *ctype = patch_content_type(opts->type);
	enum json_type want;
	int r;

	kc_buf_init(&url, KC_URL_MAX);
	if ((r = named_ns(opts->res, opts->ns, st)) < 0)
		return r;
	if (opts->name == NULL)
		return kc_status_set(st, -EINVAL, "patch: a name is required");
	if (ctype == NULL)
		return kc_status_set(st, -EINVAL, "patch: no patch type given");
	if (opts->type == KC_PATCH_APPLY && opts->field_manager == NULL)
		return kc_status_set(st, -EINVAL, "apply: a fieldManager is required");
	if (opts->force && opts->type != KC_PATCH_APPLY)
		return kc_status_set(st, -EINVAL, "patch: force is for apply patches only");
	want = opts->type == KC_PATCH_JSON ? json_type_array : json_type_object;
	if (patch == NULL || !json_object_is_type(patch, want))
		return kc_status_set(st, -EINVAL, "patch: the body must be a JSON %s",
		    want == json_type_array ? "array" : "object");
	if ((r = kc__client_path(&url, opts->res, opts->ns, opts->name,
	    opts->subresource, st)) < 0 ||
	    (r = write_query(&url, opts->dry_run, opts->field_manager,
	    opts->field_validation, st)) < 0 ||
	    (r = query(&url, "force", opts->force ? "true" : NULL, st)) < 0)
		return r;
	return client_call(cl, &(struct call){ "patch", opts->res, NULL }, "PATCH", &url,
	    ctype, patch, false, ret, st);
}

int
kc_client_apply(struct kc_client *cl, const struct kc_apply_opts *opts,
    struct json_object **ret, struct kc_status *st)
{
	const char *ns, *name;
	int r;

	if ((r = check_resource(opts->res, st)) < 0 ||
	    (r = check_object(opts->obj, st)) < 0)
		return r;
	if ((r = object_ns(opts->res, opts->ns, opts->obj, &ns, st)) < 0 ||
	    (r = object_name(opts->name, opts->obj, &name, st)) < 0)
		return r;
	return kc_client_patch(cl, &(struct kc_patch_opts){
		.res = opts->res,
		.ns = ns,
		.name = name,
		.subresource = opts->subresource,
		.type = KC_PATCH_APPLY,
		.dry_run = opts->dry_run,
		.field_manager = opts->field_manager,
		.field_validation = opts->field_validation,
		.force = opts->force,
	}, opts->obj, ret, st);
}

/* The DeleteOptions body shared by delete and deletecollection. */
static int
delete_options(enum kc_propagation prop, bool has_grace, int64_t grace,
    const char *uid, const char *rv, bool dry_run, struct json_object **ret,
    struct kc_status *st)
{
	_cleanup_(kc_json_putp) struct json_object *o = NULL;
	struct json_object *pre;

	if (prop != KC_PROPAGATION_DEFAULT && propagation_name(prop) == NULL)
		return kc_status_set(st, -EINVAL, "unknown propagationPolicy %d", (int)prop);
	if (has_grace && grace < 0)
		return kc_status_set(st, -EINVAL, "gracePeriodSeconds %" PRId64 " is negative",
		    grace);
	if ((o = json_object_new_object()) == NULL)
		return -ENOMEM;
	if (prop != KC_PROPAGATION_DEFAULT &&
	    kc_json_set_str(o, "propagationPolicy", propagation_name(prop)) < 0)
		return -ENOMEM;
	if (has_grace && kc_json_set_int(o, "gracePeriodSeconds", grace) < 0)
		return -ENOMEM;
	if (uid != NULL || rv != NULL) {
		if ((pre = kc_json_ensure_obj(o, "preconditions")) == NULL ||
		    kc_json_set_str(pre, "uid", uid) < 0 ||
		    kc_json_set_str(pre, "resourceVersion", rv) < 0)
			return -ENOMEM;
	}
	if (dry_run) {
		struct json_object *a = json_object_new_array();

		if (kc_json_put(o, "dryRun", a) < 0 ||
		    kc_json_append(a, json_object_new_string("All")) < 0)
			return -ENOMEM;
	}
	*ret = o;
	o = NULL;
	return 0;
}

int
kc_client_delete(struct kc_client *cl, const struct kc_delete_opts *opts,
    struct json_object **ret, struct kc_status *st)
{
	_cleanup_(kc_buf_free) struct kc_buf url;
	_cleanup_(kc_json_putp) struct json_object *body = NULL;
	int r;

	kc_buf_init(&url, KC_URL_MAX);
	if ((r = named_ns(opts->res, opts->ns, st)) < 0)
		return r;
	if (opts->name == NULL)
		return kc_status_set(st, -EINVAL, "delete: a name is required");
	if ((r = kc__client_path(&url, opts->res, opts->ns, opts->name, NULL, st)) < 0)
		return r;
	if ((r = delete_options(opts->propagation, opts->has_grace_period,
	    opts->grace_period_s, opts->precondition_uid, opts->precondition_rv,
	    opts->dry_run, &body, st)) < 0)
		return r;
	return client_call(cl, &(struct call){ "delete", opts->res, NULL }, "DELETE", &url,
	    "application/json", body, false, ret, st);
}

int
kc_client_delete_collection(struct kc_client *cl,
    const struct kc_delete_collection_opts *opts, struct json_object **ret,
    struct kc_status *st)
{
	_cleanup_(kc_buf_free) struct kc_buf url;
	_cleanup_(kc_json_putp) struct json_object *body = NULL;
	int r;

	kc_buf_init(&url, KC_URL_MAX);
	if ((r = named_ns(opts->res, opts->ns, st)) < 0)
		return r;
	if ((r = kc__client_path(&url, opts->res, opts->ns, NULL, NULL, st)) < 0 ||
	    (r = query(&url, "fieldSelector", opts->field_selector, st)) < 0 ||
	    (r = query(&url, "labelSelector", opts->label_selector, st)) < 0)
		return r;
	if ((r = delete_options(opts->propagation, opts->has_grace_period,
	    opts->grace_period_s, NULL, NULL, opts->dry_run, &body, st)) < 0)
		return r;
	return client_call(cl, &(struct call){ "deletecollection", opts->res, NULL }, "DELETE",
	    &url, "application/json", body, false, ret, st);
}

int
kc_client_get_path(struct kc_client *cl, const char *path,
    struct json_object **ret, struct kc_status *st)
{
	_cleanup_(kc_buf_free) struct kc_buf url;
	int r;

	kc_buf_init(&url, KC_URL_MAX);
	if (path == NULL || path[0] != '/')
		return kc_status_set(st, -EINVAL, "path must start with '/'");
	for (const char *p = path; *p != '\0'; p++)
		if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f || *p == '#')
			return kc_status_set(st, -EINVAL, "path: character 0x%02x at %zu is not "
			    "allowed", (unsigned char)*p, (size_t)(p - path));
	if ((r = url_put(&url, path, st)) < 0)
		return r;
	return client_call(cl, &(struct call){ "get", NULL, NULL }, "GET", &url, NULL, NULL,
	    true, ret, st);
}

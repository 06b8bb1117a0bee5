/*
 * faults.c: fault injection and request counters, for reliability tests
 * and benchmarks.
 *
 * Two endpoints outside the Kubernetes API, both for members of
 * system:masters only (401 without a valid token, 403 for anyone else):
 *
 *	/devcluster/faults	GET lists the rules, POST adds one from a
 *				JSON body, DELETE clears them all (or
 *				/devcluster/faults/<id> one); POST to
 *				.../drop-watches, .../compact and
 *				.../pause?seconds=N are one-shot actions
 *	/devcluster/stats	GET: requests by verb, resource and HTTP
 *				code; DELETE resets the counters
 *
 * A rule matches resource requests (never discovery, health, /version
 * or these endpoints) by verb, resource, group and namespace, and
 * fails a share of them with a metav1.Status of its code (plus a
 * Retry-After header for 429 and 503 when asked), delays their reply,
 * or both. The share is a deterministic pattern, so a test can count:
 * the k-th matching request is hit when floor(k * share) moves past
 * floor((k - 1) * share) (share 0.5 hits the 2nd, 4th, ...; 1 hits all).
 * With "count" a rule stops after that many hits. The first rule that
 * matches and hits decides.
 *
 * The plug-in (faults_plugin, at the end) serves the endpoints as routes
 * and injects errors as a request filter, both right after
 * authentication. http.c asks its hold_ms (faults_hold_ms()) before it
 * hands a request to dispatch.c (a pause holds every request, health
 * checks included, except these endpoints) and its after (faults_after())
 * once the reply is made: that counts the request and returns the
 * injected latency. Both waits are loop timers in http.c; nothing here
 * blocks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/connguard.h>
#include <kc/json.h>
#include <kc/str.h>

#include "devcluster.h"
#include "faults.h"

#define PPM		1000000u

struct fault {
	uint64_t	 id;
	char		 verb[24];
	char		 resource[2 * DC_SEGMENT_MAX];	/* "pods", "pods/status", "*" */
	char		 group[DC_SEGMENT_MAX];
	char		 ns[DC_SEGMENT_MAX];
	bool		 any_group;
	bool		 any_ns;
	int		 code;		/* HTTP code, 0: latency only */
	uint32_t	 retry_after;	/* seconds, 0: no header */
	uint32_t	 share_ppm;
	uint64_t	 count;		/* 0: unlimited */
	uint32_t	 latency_ms;
	char		 message[512];
	int		 webhook;	/* verb "convert": enum dc_conv_wrong */
	uint64_t	 matched;
	uint64_t	 injected;
};

struct stat_row {
	char		 verb[24];
	char		 resource[3 * DC_SEGMENT_MAX + 2];
	int		 code;
	uint64_t	 n;
};

struct faults {
	struct fault	 rules[FAULTS_MAX];
	size_t		 nrules;
	uint64_t	 next_id;
	uint64_t	 pause_until_ms;
	uint64_t	 delay_rid;	/* the request faults_after() delays */
	uint32_t	 delay_ms;
	struct faults_stats stats;
	struct stat_row	*rows;		/* FAULTS_STAT_ROWS */
	size_t		 nrows;
};

/* The HTTP codes a rule may inject, and their libkc codes. */
static const struct {
	int	http;
	int	code;
} codes[] = {
	{ 400, KC_EBADREQUEST }, { 401, KC_EUNAUTHORIZED }, { 403, KC_EFORBIDDEN },
	{ 404, KC_ENOTFOUND }, { 409, KC_ECONFLICT }, { 410, KC_EEXPIRED },
	{ 429, KC_ETHROTTLED }, { 500, KC_EINTERNAL }, { 503, KC_EUNAVAILABLE },
	{ 504, KC_ETIMEOUT },
};

static const char *const verbs[] = {
	"create", "get", "list", "watch", "update", "patch", "delete",
	"deletecollection", "convert", "admit", "*", NULL,
};

static struct faults *
state(const struct dc *dc)
{
	return plugin_state(dc, &faults_plugin);
}

static void	faults_conv_fault(struct dc *, const char *, struct dc_conv_fault *);
static void	faults_adm_fault(struct dc *, const char *, struct dc_conv_fault *);

int
faults_init(struct dc *dc)
{
	struct faults *f;

	if (plugin_state(dc, &faults_plugin) != NULL)
		return 0;
	if ((f = kc_calloc(1, sizeof(*f))) == NULL)
		return -ENOMEM;
	if ((f->rows = kc_calloc(FAULTS_STAT_ROWS, sizeof(*f->rows))) == NULL) {
		kc_free(f);
		return -ENOMEM;
	}
	f->next_id = 1;
	dc->hooks.conv_fault = faults_conv_fault;
	dc->hooks.adm_fault = faults_adm_fault;
	plugin_set_state(dc, &faults_plugin, f);
	return 0;
}

void
faults_fini(struct dc *dc)
{
	struct faults *f = state(dc);

	if (f == NULL)
		return;
	if (dc->hooks.conv_fault == faults_conv_fault)
		dc->hooks.conv_fault = NULL;
	if (dc->hooks.adm_fault == faults_adm_fault)
		dc->hooks.adm_fault = NULL;
	kc_free(f->rows);
	kc_free(f);
	plugin_set_state(dc, &faults_plugin, NULL);
}

static int
kc_code_of(int http)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(codes); i++)
		if (codes[i].http == http)
			return codes[i].code;
	return 0;
}

/*
 * Rules
 */

/* A string member: absent is fine ('*ret' NULL), another type is not. */
static int
member_str(const struct json_object *o, const char *key, const char **ret,
    struct kc_status *st)
{
	struct json_object *v;

	*ret = NULL;
	if (!json_object_object_get_ex(o, key, &v) || v == NULL)
		return 0;
	if (!json_object_is_type(v, json_type_string)) {
		kc_status_set(st, KC_EBADREQUEST, "%s: expected a string", key);
		return KC_EBADREQUEST;
	}
	*ret = json_object_get_string(v);
	return 0;
}

/* A number member in [0, max]: absent leaves '*ret' as it is. */
static int
member_num(const struct json_object *o, const char *key, double max, double *ret,
    struct kc_status *st)
{
	struct json_object *v;
	double d;

	if (!json_object_object_get_ex(o, key, &v) || v == NULL)
		return 0;
	if (!json_object_is_type(v, json_type_int) &&
	    !json_object_is_type(v, json_type_double)) {
		kc_status_set(st, KC_EBADREQUEST, "%s: expected a number", key);
		return KC_EBADREQUEST;
	}
	d = json_object_get_double(v);
	if (!(d >= 0 && d <= max)) {
		kc_status_set(st, KC_EBADREQUEST, "%s: must be between 0 and %g", key, max);
		return KC_EBADREQUEST;
	}
	*ret = d;
	return 0;
}

static int
copy_field(char *dst, size_t size, const char *value, const char *key,
    struct kc_status *st)
{
	if (kc_strlcpy(dst, value, size) >= size) {
		kc_status_set(st, KC_EBADREQUEST, "%s: too long", key);
		return KC_EBADREQUEST;
	}
	return 0;
}

int
faults_parse(const struct json_object *o, struct fault_spec *ret, struct kc_status *st)
{
	static const char *const known[] = {
		"verb", "resource", "group", "namespace", "code", "retryAfterSeconds",
		"share", "count", "latencyMs", "message", "webhook", NULL,
	};
	static const char *const wrongs[] = {
		"", "bad-uid", "wrong-count", "rename", "unreachable", "bad-labels", NULL,
	};
	const char *verb, *resource, *group, *ns, *message, *webhook;
	double code = 0, retry = 0, share = 1, count = 0, latency = 0;
	size_t i;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (o == NULL || !json_object_is_type(o, json_type_object)) {
		kc_status_set(st, KC_EBADREQUEST, "the body must be a JSON object");
		return KC_EBADREQUEST;
	}
	json_object_object_foreach((struct json_object *)(uintptr_t)o, key, val) {
		(void)val;
		for (i = 0; known[i] != NULL; i++)
			if (strcmp(known[i], key) == 0)
				break;
		if (known[i] == NULL) {
			kc_status_set(st, KC_EBADREQUEST, "unknown field \"%.64s\"", key);
			return KC_EBADREQUEST;
		}
	}
	if ((r = member_str(o, "verb", &verb, st)) < 0 ||
	    (r = member_str(o, "resource", &resource, st)) < 0 ||
	    (r = member_str(o, "group", &group, st)) < 0 ||
	    (r = member_str(o, "namespace", &ns, st)) < 0 ||
	    (r = member_str(o, "message", &message, st)) < 0 ||
	    (r = member_str(o, "webhook", &webhook, st)) < 0 ||
	    (r = member_num(o, "code", 599, &code, st)) < 0 ||
	    (r = member_num(o, "retryAfterSeconds", 3600, &retry, st)) < 0 ||
	    (r = member_num(o, "share", 1, &share, st)) < 0 ||
	    (r = member_num(o, "count", 1e12, &count, st)) < 0 ||
	    (r = member_num(o, "latencyMs", FAULTS_LATENCY_MAX_MS, &latency, st)) < 0)
		return r;
	if (verb == NULL || resource == NULL) {
		kc_status_set(st, KC_EBADREQUEST, "verb and resource are required "
		    "(\"*\" matches any)");
		return KC_EBADREQUEST;
	}
	for (i = 0; verbs[i] != NULL; i++)
		if (strcmp(verbs[i], verb) == 0)
			break;
	if (verbs[i] == NULL) {
		kc_status_set(st, KC_EBADREQUEST, "verb: unsupported value \"%.32s\": "
		    "supported values: create, get, list, watch, update, patch, delete, "
		    "deletecollection, convert, admit, *", verb);
		return KC_EBADREQUEST;
	}
	if (resource[0] == '\0') {
		kc_status_set(st, KC_EBADREQUEST, "resource: must not be empty");
		return KC_EBADREQUEST;
	}
	if (code != (double)(int)code || (code != 0 && kc_code_of((int)code) == 0)) {
		kc_status_set(st, KC_EBADREQUEST, "code: unsupported value %g: supported "
		    "values: 400, 401, 403, 404, 409, 410, 429, 500, 503, 504", code);
		return KC_EBADREQUEST;
	}
	if (strcmp(verb, "admit") == 0) {
		for (i = 0; wrongs[i] != NULL; i++)
			if (strcmp(wrongs[i], webhook != NULL ? webhook : "") == 0)
				break;
		if (wrongs[i] == NULL || (i != DC_CONV_RIGHT && i != DC_CONV_BAD_UID &&
		    i != DC_CONV_UNREACHABLE)) {
			kc_status_set(st, KC_EBADREQUEST, "webhook: unsupported value \"%.32s\": "
			    "supported values: bad-uid, unreachable", webhook);
			return KC_EBADREQUEST;
		}
		if (code != 0 || (i == 0 && latency == 0)) {
			kc_status_set(st, KC_EBADREQUEST, "an admit rule takes webhook, "
			    "latencyMs or both, and no code");
			return KC_EBADREQUEST;
		}
		ret->webhook = (int)i;
	} else if (strcmp(verb, "convert") == 0) {
		for (i = 0; wrongs[i] != NULL; i++)
			if (strcmp(wrongs[i], webhook != NULL ? webhook : "") == 0)
				break;
		if (wrongs[i] == NULL) {
			kc_status_set(st, KC_EBADREQUEST, "webhook: unsupported value \"%.32s\": "
			    "supported values: bad-uid, wrong-count, rename, unreachable, "
			    "bad-labels",
			    webhook);
			return KC_EBADREQUEST;
		}
		if (code != 0 || (i == 0 && latency == 0)) {
			kc_status_set(st, KC_EBADREQUEST, "a convert rule takes webhook, "
			    "latencyMs or both, and no code");
			return KC_EBADREQUEST;
		}
		ret->webhook = (int)i;
	} else if (webhook != NULL) {
		kc_status_set(st, KC_EBADREQUEST, "webhook: only for the verbs convert and admit");
		return KC_EBADREQUEST;
	} else if (code == 0 && latency == 0) {
		kc_status_set(st, KC_EBADREQUEST, "a rule needs a code, latencyMs or both");
		return KC_EBADREQUEST;
	}
	if (retry != 0 && code != 429 && code != 503) {
		kc_status_set(st, KC_EBADREQUEST, "retryAfterSeconds: only for codes 429 "
		    "and 503");
		return KC_EBADREQUEST;
	}
	if (share <= 0) {
		kc_status_set(st, KC_EBADREQUEST, "share: must be above 0 (at most 1)");
		return KC_EBADREQUEST;
	}
	if (count != (double)(uint64_t)count || retry != (double)(uint32_t)retry ||
	    latency != (double)(uint32_t)latency) {
		kc_status_set(st, KC_EBADREQUEST, "count, retryAfterSeconds and latencyMs "
		    "must be whole numbers");
		return KC_EBADREQUEST;
	}
	if ((r = copy_field(ret->verb, sizeof(ret->verb), verb, "verb", st)) < 0 ||
	    (r = copy_field(ret->resource, sizeof(ret->resource), resource, "resource",
	    st)) < 0 ||
	    (r = copy_field(ret->group, sizeof(ret->group), group != NULL ? group : "*",
	    "group", st)) < 0 ||
	    (r = copy_field(ret->ns, sizeof(ret->ns), ns != NULL ? ns : "", "namespace",
	    st)) < 0 ||
	    (r = copy_field(ret->message, sizeof(ret->message),
	    message != NULL ? message : "", "message", st)) < 0)
		return r;
	ret->code = (int)code;
	ret->retry_after = (uint32_t)retry;
	ret->share_ppm = (uint32_t)(share * PPM + 0.5);
	if (ret->share_ppm == 0)
		ret->share_ppm = 1;
	ret->count = (uint64_t)count;
	ret->latency_ms = (uint32_t)latency;
	return 0;
}

int
faults_add(struct dc *dc, const struct fault_spec *spec, uint64_t *ret_id)
{
	struct faults *f = state(dc);
	struct fault *r;

	if (f == NULL)
		return -EINVAL;
	if (f->nrules == FAULTS_MAX)
		return -E2BIG;
	r = &f->rules[f->nrules++];
	memset(r, 0, sizeof(*r));
	r->id = f->next_id++;
	(void)kc_strlcpy(r->verb, spec->verb, sizeof(r->verb));
	(void)kc_strlcpy(r->resource, spec->resource, sizeof(r->resource));
	r->any_group = strcmp(spec->group, "*") == 0;
	(void)kc_strlcpy(r->group, spec->group, sizeof(r->group));
	r->any_ns = spec->ns[0] == '\0' || strcmp(spec->ns, "*") == 0;
	(void)kc_strlcpy(r->ns, spec->ns, sizeof(r->ns));
	r->code = spec->code;
	r->retry_after = spec->retry_after;
	r->share_ppm = spec->share_ppm;
	r->count = spec->count;
	r->latency_ms = spec->latency_ms;
	r->webhook = spec->webhook;
	(void)kc_strlcpy(r->message, spec->message, sizeof(r->message));
	if (ret_id != NULL)
		*ret_id = r->id;
	return 0;
}

int
faults_remove(struct dc *dc, uint64_t id)
{
	struct faults *f = state(dc);

	if (f == NULL)
		return KC_ENOTFOUND;
	if (id == 0) {
		f->nrules = 0;
		return 0;
	}
	for (size_t i = 0; i < f->nrules; i++) {
		if (f->rules[i].id != id)
			continue;
		memmove(&f->rules[i], &f->rules[i + 1],
		    (f->nrules - i - 1) * sizeof(f->rules[0]));
		f->nrules--;
		return 0;
	}
	return KC_ENOTFOUND;
}

size_t
faults_count(const struct dc *dc)
{
	const struct faults *f = state(dc);

	return f != NULL ? f->nrules : 0;
}

static bool
rule_matches(const struct fault *r, const struct dc_route *route)
{
	const char *slash;

	if (strcmp(r->verb, "*") != 0 && strcmp(r->verb, route->verb) != 0)
		return false;
	if (!r->any_group && strcmp(r->group, route->group) != 0)
		return false;
	if (!r->any_ns && strcmp(r->ns, route->ns) != 0)
		return false;
	if (strcmp(r->resource, "*") == 0)
		return true;
	if ((slash = strchr(r->resource, '/')) == NULL)
		return strcmp(r->resource, route->resource) == 0;
	return strncmp(r->resource, route->resource, (size_t)(slash - r->resource)) == 0 &&
	    route->resource[slash - r->resource] == '\0' &&
	    strcmp(slash + 1, route->subresource) == 0;
}

const struct fault *
faults_decide(struct dc *dc, const struct dc_route *route)
{
	struct faults *f = state(dc);

	if (f == NULL || route->kind != DC_ROUTE_RESOURCE)
		return NULL;
	for (size_t i = 0; i < f->nrules; i++) {
		struct fault *r = &f->rules[i];
		uint64_t k;

		if ((r->count != 0 && r->injected >= r->count) || !rule_matches(r, route))
			continue;
		k = ++r->matched;
		if (k * r->share_ppm / PPM == (k - 1) * r->share_ppm / PPM)
			continue;
		r->injected++;
		return r;
	}
	return NULL;
}

/*
 * The first rule of 'verb' ("convert", "admit") for 'name' (a CRD's or
 * an admission webhook's, or "*") that hits decides what happens to
 * this webhook call.
 */
static void
webhook_fault(struct dc *dc, const char *verb, const char *name, struct dc_conv_fault *ret)
{
	struct faults *f = state(dc);

	if (f == NULL)
		return;
	for (size_t i = 0; i < f->nrules; i++) {
		struct fault *r = &f->rules[i];
		uint64_t k;

		if (strcmp(r->verb, verb) != 0 || (r->count != 0 && r->injected >= r->count) ||
		    (strcmp(r->resource, "*") != 0 && strcmp(r->resource, name) != 0))
			continue;
		k = ++r->matched;
		if (k * r->share_ppm / PPM == (k - 1) * r->share_ppm / PPM)
			continue;
		r->injected++;
		ret->wrong = (enum dc_conv_wrong)r->webhook;
		ret->delay_ms = r->latency_ms;
		return;
	}
}

/* hooks.conv_fault: "convert" rules, for the CRD named 'crd'. */
static void
faults_conv_fault(struct dc *dc, const char *crd, struct dc_conv_fault *ret)
{
	webhook_fault(dc, "convert", crd, ret);
}

/* hooks.adm_fault: "admit" rules, for the admission webhook named 'webhook'. */
static void
faults_adm_fault(struct dc *dc, const char *webhook, struct dc_conv_fault *ret)
{
	webhook_fault(dc, "admit", webhook, ret);
}

int
fault_code(const struct fault *r)
{
	return r->code;
}

uint32_t
fault_latency_ms(const struct fault *r)
{
	return r->latency_ms;
}

/* The injected error reply of rule 'r'. */
static void
inject_error(const struct fault *r, const struct dc_route *route, struct dc_resp *resp)
{
	char ra[16];

	if (r->message[0] != '\0')
		errors_reply(resp, kc_code_of(r->code), "%s", r->message);
	else
		errors_reply(resp, kc_code_of(r->code), "injected fault: %d for %s %s%s%s "
		    "(devcluster)", r->code, route->verb, route->resource,
		    route->subresource[0] != '\0' ? "/" : "", route->subresource);
	if (r->retry_after == 0)
		return;
	(void)snprintf(ra, sizeof(ra), "%" PRIu32, r->retry_after);
	if (resp_header(resp, "Retry-After", ra) < 0)
		errors_internal(resp, -ENOMEM);
}

/*
 * Rendering
 */

static int
rule_json(const struct fault *r, struct json_object **ret)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL ||
	    kc_json_set_int(o, "id", (int64_t)r->id) < 0 ||
	    kc_json_set_str(o, "verb", r->verb) < 0 ||
	    kc_json_set_str(o, "resource", r->resource) < 0 ||
	    kc_json_set_str(o, "group", r->group) < 0 ||
	    kc_json_set_str(o, "namespace", r->any_ns ? "*" : r->ns) < 0 ||
	    kc_json_set_int(o, "code", r->code) < 0 ||
	    kc_json_set_int(o, "retryAfterSeconds", r->retry_after) < 0 ||
	    kc_json_put(o, "share", json_object_new_double((double)r->share_ppm / PPM)) < 0 ||
	    kc_json_set_int(o, "count", (int64_t)r->count) < 0 ||
	    (r->webhook != 0 && kc_json_set_str(o, "webhook", (const char *const []){
	    "", "bad-uid", "wrong-count", "rename", "unreachable", "bad-labels" }[r->webhook])
	    < 0) ||
	    kc_json_set_int(o, "latencyMs", r->latency_ms) < 0 ||
	    kc_json_set_str(o, "message", r->message) < 0 ||
	    kc_json_set_int(o, "matched", (int64_t)r->matched) < 0 ||
	    kc_json_set_int(o, "injected", (int64_t)r->injected) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	*ret = o;
	return 0;
}

int
faults_list_json(struct dc *dc, struct json_object **ret)
{
	struct faults *f = state(dc);
	struct json_object *o = json_object_new_object(), *items = json_object_new_array();
	uint64_t now = kc_clock_now_ms();
	int r = -ENOMEM;

	if (o == NULL || items == NULL || f == NULL)
		goto fail;
	for (size_t i = 0; i < f->nrules; i++) {
		struct json_object *it;

		if (rule_json(&f->rules[i], &it) < 0)
			goto fail;
		if (kc_json_append(items, it) < 0)
			goto fail;
	}
	if (kc_json_put(o, "faults", items) < 0) {
		items = NULL;
		goto fail;
	}
	items = NULL;
	if (kc_json_set_int(o, "pausedMs", f->pause_until_ms > now ?
	    (int64_t)(f->pause_until_ms - now) : 0) < 0)
		goto fail;
	*ret = o;
	return 0;
fail:
	json_object_put(items);
	json_object_put(o);
	return r;
}

/* Adds 'n' to o[key]. */
static int
bump(struct json_object *o, const char *key, uint64_t n)
{
	struct json_object *v;

	if (json_object_object_get_ex(o, key, &v))
		n += (uint64_t)json_object_get_int64(v);
	return kc_json_set_int(o, key, (int64_t)n);
}

/*
 * "connections": the HTTP front's connection guard (http.c): open now,
 * accepted, and dropped by reason (timeout_headers, ..., malformed).
 */
static int
conn_stats_json(struct dc *dc, struct json_object *o)
{
	struct kc_guard_stats gs;
	struct json_object *c, *d;

	http_conn_stats(dc->http, &gs);
	if (kc_json_put(o, "connections", c = json_object_new_object()) < 0 ||
	    kc_json_put(c, "dropped", d = json_object_new_object()) < 0 ||
	    kc_json_set_int(c, "open", (int64_t)gs.open) < 0 ||
	    kc_json_set_int(c, "accepted", (int64_t)gs.accepted) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < KC_GUARD_DROP_COUNT; i++)
		if (kc_json_set_int(d, kc_guard_drop_name((enum kc_guard_drop)i),
		    (int64_t)gs.dropped[i]) < 0)
			return -ENOMEM;
	return 0;
}

int
faults_stats_json(struct dc *dc, struct json_object **ret)
{
	struct faults *f = state(dc);
	struct json_object *o = NULL, *by_verb, *by_res, *by_code, *rows, *inj;
	char code[8];

	if (f == NULL || (o = json_object_new_object()) == NULL)
		goto fail;
	if (kc_json_put(o, "byVerb", by_verb = json_object_new_object()) < 0 ||
	    kc_json_put(o, "byResource", by_res = json_object_new_object()) < 0 ||
	    kc_json_put(o, "byCode", by_code = json_object_new_object()) < 0 ||
	    kc_json_put(o, "requests", rows = json_object_new_array()) < 0 ||
	    kc_json_put(o, "injected", inj = json_object_new_object()) < 0 ||
	    kc_json_set_int(o, "total", (int64_t)f->stats.total) < 0 ||
	    kc_json_set_int(o, "resourceRequests", (int64_t)f->stats.resource) < 0 ||
	    kc_json_set_int(o, "untracked", (int64_t)f->stats.untracked) < 0 ||
	    kc_json_set_int(inj, "errors", (int64_t)f->stats.injected_errors) < 0 ||
	    kc_json_set_int(inj, "latency", (int64_t)f->stats.injected_latency) < 0 ||
	    kc_json_set_int(inj, "paused", (int64_t)f->stats.paused) < 0 ||
	    kc_json_set_int(inj, "droppedWatches", (int64_t)f->stats.dropped_watches) < 0 ||
	    kc_json_set_int(inj, "compactions", (int64_t)f->stats.compactions) < 0)
		goto fail;
	if (conn_stats_json(dc, o) < 0)
		goto fail;
	for (size_t i = 0; i < KC_ARRAY_SIZE(f->stats.by_code); i++) {
		if (f->stats.by_code[i] == 0)
			continue;
		(void)snprintf(code, sizeof(code), "%zu", i + 100);
		if (bump(by_code, code, f->stats.by_code[i]) < 0)
			goto fail;
	}
	for (size_t i = 0; i < f->nrows; i++) {
		const struct stat_row *s = &f->rows[i];
		struct json_object *row = json_object_new_object();

		if (row == NULL || kc_json_append(rows, row) < 0) {
			json_object_put(row);
			goto fail;
		}
		if (kc_json_set_str(row, "verb", s->verb) < 0 ||
		    kc_json_set_str(row, "resource", s->resource) < 0 ||
		    kc_json_set_int(row, "code", s->code) < 0 ||
		    kc_json_set_int(row, "count", (int64_t)s->n) < 0 ||
		    bump(by_verb, s->verb, s->n) < 0 || bump(by_res, s->resource, s->n) < 0)
			goto fail;
	}
	*ret = o;
	return 0;
fail:
	json_object_put(o);
	return -ENOMEM;
}

void
faults_stats(const struct dc *dc, struct faults_stats *ret)
{
	const struct faults *f = state(dc);

	if (f != NULL)
		*ret = f->stats;
	else
		memset(ret, 0, sizeof(*ret));
}

uint64_t
faults_stat_count(const struct dc *dc, const char *verb, const char *resource, int code)
{
	const struct faults *f = state(dc);
	uint64_t n = 0;

	if (f == NULL)
		return 0;
	for (size_t i = 0; i < f->nrows; i++)
		if ((verb == NULL || strcmp(f->rows[i].verb, verb) == 0) &&
		    (resource == NULL || strcmp(f->rows[i].resource, resource) == 0) &&
		    (code == 0 || f->rows[i].code == code))
			n += f->rows[i].n;
	return n;
}

void
faults_stats_reset(struct dc *dc)
{
	struct faults *f = state(dc);

	if (f == NULL)
		return;
	memset(&f->stats, 0, sizeof(f->stats));
	f->nrows = 0;
}

/*
 * Actions
 */

static int
compact_one(void *arg, struct dc_coll *c)
{
	(void)arg;
	coll_compact(c);
	return 0;
}

void
faults_compact(struct dc *dc)
{
	struct faults *f = state(dc);

	(void)storage_foreach_coll(dc->store, compact_one, NULL);
	if (f != NULL)
		f->stats.compactions++;
}

size_t
faults_drop_watches(struct dc *dc)
{
	struct faults *f = state(dc);
	size_t n = watchhub_count(dc->hub);

	watchhub_close_all(dc->hub);
	if (f != NULL)
		f->stats.dropped_watches += n;
	return n;
}

void
faults_pause(struct dc *dc, uint32_t seconds)
{
	struct faults *f = state(dc);

	if (f != NULL)
		f->pause_until_ms = seconds == 0 ? 0 : kc_clock_now_ms() + seconds * 1000ull;
}

/*
 * The endpoints
 */

static bool
is_devcluster_path(const char *path)
{
	return path != NULL && (strcmp(path, "/devcluster") == 0 ||
	    strncmp(path, "/devcluster/", 12) == 0);
}

static void
reply_json(struct dc_resp *resp, int status, int r, struct json_object *o)
{
	if (r < 0 || resp_json(resp, status, o) < 0)
		errors_internal(resp, -ENOMEM);
	json_object_put(o);
}

/* {"kind":"Status",...,"status":"Success","message":...}, for actions. */
static void
reply_ok(struct dc_resp *resp, const char *fmt, ...) _printf_(2, 3);

static void
reply_ok(struct dc_resp *resp, const char *fmt, ...)
{
	struct json_object *o = json_object_new_object();
	char msg[256];
	va_list ap;
	int r = -ENOMEM;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (o != NULL && kc_json_set_str(o, "kind", "Status") == 0 &&
	    kc_json_set_str(o, "apiVersion", "v1") == 0 &&
	    kc_json_put(o, "metadata", json_object_new_object()) == 0 &&
	    kc_json_set_str(o, "status", "Success") == 0 &&
	    kc_json_set_str(o, "message", msg) == 0 && kc_json_set_int(o, "code", 200) == 0)
		r = 0;
	reply_json(resp, 200, r, o);
}

static void
method_not_allowed(const struct dc_req *req, struct dc_resp *resp)
{
	errors_reply(resp, KC_EMETHOD, "the server does not allow %s on %s",
	    method_name(req->method), req->path);
}

static void
serve_add(struct dc *dc, const struct dc_req *req, struct dc_resp *resp)
{
	struct kc_status st = { 0 };
	struct json_object *body = NULL, *o = NULL;
	struct fault_spec spec;
	uint64_t id;
	int r;

	if (req->body == NULL || req->body_len == 0) {
		errors_reply(resp, KC_EBADREQUEST, "a JSON body is required");
		return;
	}
	if ((r = kc_json_parse(req->body, req->body_len, &body, &st)) < 0) {
		if (r == -ENOMEM)
			errors_internal(resp, r);
		else
			errors_reply(resp, KC_EBADREQUEST, "malformed JSON: %s", st.message);
		return;
	}
	if ((r = faults_parse(body, &spec, &st)) < 0) {
		json_object_put(body);
		errors_reply(resp, KC_EBADREQUEST, "%s", st.message);
		return;
	}
	json_object_put(body);
	if ((r = faults_add(dc, &spec, &id)) < 0) {
		errors_reply(resp, KC_EBADREQUEST, "too many faults (at most %u)", FAULTS_MAX);
		return;
	}
	r = rule_json(&state(dc)->rules[state(dc)->nrules - 1], &o);
	reply_json(resp, 201, r, o);
}

static void
serve_faults(struct dc *dc, const struct dc_req *req, const char *rest,
    struct dc_resp *resp)
{
	struct json_object *o = NULL;
	uint64_t id;
	uint32_t secs;
	const char *s;
	int r;

	if (rest[0] == '\0') {
		switch (req->method) {
		case DC_GET:
			r = faults_list_json(dc, &o);
			reply_json(resp, 200, r, o);
			return;
		case DC_POST:
			serve_add(dc, req, resp);
			return;
		case DC_DELETE:
			(void)faults_remove(dc, 0);
			faults_pause(dc, 0);
			reply_ok(resp, "every fault cleared");
			return;
		default:
			method_not_allowed(req, resp);
			return;
		}
	}
	if (strcmp(rest, "drop-watches") == 0 || strcmp(rest, "compact") == 0 ||
	    strcmp(rest, "pause") == 0) {
		if (req->method != DC_POST) {
			method_not_allowed(req, resp);
			return;
		}
		if (rest[0] == 'd') {
			reply_ok(resp, "%zu watches dropped", faults_drop_watches(dc));
			return;
		}
		if (rest[0] == 'c') {
			faults_compact(dc);
			reply_ok(resp, "watch history compacted at resourceVersion %" PRIu64,
			    storage_rv(dc->store));
			return;
		}
		if ((s = req_param(req, "seconds")) == NULL || kc_parse_u32(s, &secs) < 0 ||
		    secs > FAULTS_PAUSE_MAX_S) {
			errors_reply(resp, KC_EBADREQUEST, "pause: ?seconds=N is required, "
			    "0 to %u", FAULTS_PAUSE_MAX_S);
			return;
		}
		faults_pause(dc, secs);
		reply_ok(resp, "paused for %" PRIu32 " seconds", secs);
		return;
	}
	if (kc_parse_u64(rest, &id) < 0 || id == 0) {
		errors_reply(resp, KC_ENOTFOUND, "fault \"%.64s\" not found", rest);
		return;
	}
	if (req->method != DC_DELETE) {
		method_not_allowed(req, resp);
		return;
	}
	if (faults_remove(dc, id) < 0) {
		errors_reply(resp, KC_ENOTFOUND, "fault \"%" PRIu64 "\" not found", id);
		return;
	}
	reply_ok(resp, "fault %" PRIu64 " removed", id);
}

static void
serve(struct dc *dc, const struct dc_req *req, struct dc_resp *resp)
{
	struct json_object *o = NULL;
	const char *p = req->path + strlen("/devcluster");
	int r;

	if (!user_in_group(&req->user, "system:masters")) {
		errors_reply(resp, KC_EFORBIDDEN, "forbidden: User \"%s\" cannot %s path "
		    "\"%s\": the devcluster endpoints are for system:masters only",
		    req->user.name != NULL ? req->user.name : "",
		    req->method == DC_GET ? "get" : req->method == DC_DELETE ? "delete" :
		    "post", req->path);
		return;
	}
	if (strcmp(p, "/stats") == 0) {
		if (req->method == DC_GET) {
			r = faults_stats_json(dc, &o);
			reply_json(resp, 200, r, o);
		} else if (req->method == DC_DELETE) {
			faults_stats_reset(dc);
			reply_ok(resp, "counters reset");
		} else
			method_not_allowed(req, resp);
		return;
	}
	if (strcmp(p, "/faults") == 0 || strcmp(p, "/faults/") == 0) {
		serve_faults(dc, req, "", resp);
		return;
	}
	if (strncmp(p, "/faults/", 8) == 0) {
		serve_faults(dc, req, p + 8, resp);
		return;
	}
	if (resp_text(resp, 404, "text/plain; charset=utf-8", "404 page not found\n") < 0)
		errors_internal(resp, -ENOMEM);
}

/* The routes /devcluster and /devcluster/... */
static int
serve_route(struct dc *dc, const struct dc_req *req, struct dc_resp *resp)
{
	serve(dc, req, resp);
	return 0;
}

/*
 * The request filter: 0 after answering with an injected error, else
 * DC_DECLINED; may note an injected latency for faults_after().
 */
static int
faults_filter(struct dc *dc, const struct dc_req *req, const struct dc_route *route,
    struct dc_resp *resp)
{
	struct faults *f = state(dc);
	const struct fault *r;

	if (f == NULL || (r = faults_decide(dc, route)) == NULL)
		return DC_DECLINED;
	if (r->latency_ms > 0) {
		f->delay_rid = req->id;
		f->delay_ms = r->latency_ms;
	}
	if (r->code == 0)
		return DC_DECLINED;
	f->stats.injected_errors++;
	inject_error(r, route, resp);
	return 0;
}

uint64_t
faults_hold_ms(struct dc *dc, const struct dc_req *req)
{
	struct faults *f = state(dc);
	uint64_t now;

	if (f == NULL || f->pause_until_ms == 0 || is_devcluster_path(req->path))
		return 0;
	if ((now = kc_clock_now_ms()) >= f->pause_until_ms) {
		f->pause_until_ms = 0;
		return 0;
	}
	f->stats.paused++;
	return f->pause_until_ms - now;
}

/* The counters' row for a request, created on first use; NULL when full. */
static struct stat_row *
stat_row(struct faults *f, const char *verb, const char *resource, int code)
{
	struct stat_row *s;

	for (size_t i = 0; i < f->nrows; i++) {
		s = &f->rows[i];
		if (s->code == code && strcmp(s->verb, verb) == 0 &&
		    strcmp(s->resource, resource) == 0)
			return s;
	}
	if (f->nrows == FAULTS_STAT_ROWS)
		return NULL;
	s = &f->rows[f->nrows++];
	(void)kc_strlcpy(s->verb, verb, sizeof(s->verb));
	(void)kc_strlcpy(s->resource, resource, sizeof(s->resource));
	s->code = code;
	s->n = 0;
	return s;
}

uint64_t
faults_after(struct dc *dc, const struct dc_req *req, const struct dc_resp *resp)
{
	struct faults *f = state(dc);
	struct dc_route route;
	struct stat_row *s;
	char res[3 * DC_SEGMENT_MAX + 2];
	uint64_t delay = 0;

	if (f == NULL || is_devcluster_path(req->path))
		return 0;
	if (f->delay_rid != 0 && f->delay_rid == req->id) {
		delay = f->delay_ms;
		f->stats.injected_latency++;
	}
	f->delay_rid = 0;
	f->stats.total++;
	if (resp->status >= 100 && resp->status < 600)
		f->stats.by_code[resp->status - 100]++;
	(void)router_parse(req->method, req->path, req_param_bool(req, "watch"), &route);
	if (route.kind != DC_ROUTE_RESOURCE)
		return delay;
	f->stats.resource++;
	(void)snprintf(res, sizeof(res), "%s%s%s%s%s", route.resource,
	    route.group[0] != '\0' ? "." : "", route.group,
	    route.subresource[0] != '\0' ? "/" : "", route.subresource);
	if ((s = stat_row(f, route.verb, res, resp->status)) != NULL)
		s->n++;
	else
		f->stats.untracked++;
	return delay;
}

static int
faults_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	(void)cfg;
	(void)st;
	return faults_init(dc);
}

const struct dc_plugin faults_plugin = {
	.name = "faults",
	.init = faults_start,
	.fini = faults_fini,
	.routes = (const struct dc_plugin_route []){
		{ "/devcluster", serve_route },
		{ "/devcluster/", serve_route },
	},
	.nroutes = 2,
	.filter = faults_filter,
	.hold_ms = faults_hold_ms,
	.after = faults_after,
};

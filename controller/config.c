/*
 * config.c: the ControllerConfig file, flags and defaults.
 *
 * One table describes every key: its dotted name as the file writes it
 * ("leaderElection.leaseDuration"), the setter for its type and where the
 * field lives in struct ty_config. The file walker and the flag setter both
 * go through the table, so a key is validated the same way wherever it
 * comes from, and an unknown key is simply one the table lacks.
 *
 * Two keys are sections (leaderElection, restartBackoff): objects whose
 * keys are looked up as "section.key". Everything is applied to a copy of
 * the caller's config, which replaces it only once the whole file passed,
 * so a bad file never leaves a half-applied config behind.
 *
 * Values are checked as Kubernetes would check them where they end up:
 * scheduler and PriorityClass names are DNS-1123 subdomains (pod
 * validation), the namespace and the Lease name follow namespace and
 * object naming, label selectors of the peers go through
 * kc_label_selector_from_json(), and ipBlock CIDRs through inet_pton().
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/sbuf.h>
#include <kc/selector.h>
#include <kc/str.h>
#include <kc/validation.h>
#include <kc/yaml.h>

#include "config.h"

struct key;
typedef int key_set_fn(struct ty_config *, const struct key *,
    struct json_object *, struct kc_status *);

enum str_rule {
	S_SUBDOMAIN,		/* a DNS-1123 subdomain, required */
	S_SUBDOMAIN_OPT,	/* a DNS-1123 subdomain or "" */
	S_LABEL,		/* a DNS-1123 label, required */
	S_LABEL_OPT,		/* a DNS-1123 label or "" */
	S_ADDR,			/* "HOST:PORT" or "0" */
	S_ADDR_OPT,		/* "HOST:PORT", "0" or "" */
	S_PATH_OPT,		/* an absolute path or "" */
};

struct key {
	const char	*name;
	key_set_fn	*set;
	size_t		 off;		/* offsetof() the field */
	size_t		 size;		/* of a char[] field */
	enum str_rule	 rule;		/* strings */
	uint64_t	 min, max;	/* integers, durations (ms) */
	bool		 text;		/* a flag value is taken as a string */
};

#define FIELD(f)	offsetof(struct ty_config, f)
#define FIELD_PTR(c, k, type)	((type *)(void *)((char *)(c) + (k)->off))

static key_set_fn set_string, set_uint, set_qps, set_bool, set_duration;
static key_set_fn set_podgroup_api, set_log_level, set_log_format, set_peers;
static key_set_fn set_cert_mode;

static const struct key keys[] = {
	{ "schedulerName", set_string, FIELD(scheduler_name), TY_SUBDOMAIN_MAX,
	    S_SUBDOMAIN, 0, 0, true },
	{ "podGroupAPI", set_podgroup_api, FIELD(podgroup_api), 0, 0, 0, 0, true },
	{ "clusterDomain", set_string, FIELD(cluster_domain), TY_SUBDOMAIN_MAX,
	    S_SUBDOMAIN, 0, 0, true },
	{ "networkPolicyPeers", set_peers, FIELD(ingress_peers), 0, 0, 0, 0, false },
	{ "defaultPriorityClassName", set_string, FIELD(default_priority_class),
	    TY_SUBDOMAIN_MAX, S_SUBDOMAIN_OPT, 0, 0, true },
	{ "preemptiblePriorityClassName", set_string,
	    FIELD(preemptible_priority_class), TY_SUBDOMAIN_MAX, S_SUBDOMAIN_OPT,
	    0, 0, true },
	{ "nodeFailureTolerationSeconds", set_uint, FIELD(node_failure_toleration_s),
	    sizeof(uint32_t), 0, 0, 86400, false },
	{ "restartBackoff.base", set_duration, FIELD(restart_backoff_base_ms), 0, 0,
	    1, 24 * 3600 * 1000ull, false },
	{ "restartBackoff.max", set_duration, FIELD(restart_backoff_max_ms), 0, 0,
	    1, 24 * 3600 * 1000ull, false },
	{ "workers", set_uint, FIELD(workers), sizeof(unsigned), 0, 1, 1024, false },
	{ "kubeAPIQPS", set_qps, FIELD(kube_api_qps), 0, 0, 0, 100000, false },
	{ "kubeAPIBurst", set_uint, FIELD(kube_api_burst), sizeof(unsigned), 0, 1,
	    100000, false },
	{ "leaderElection.enabled", set_bool, FIELD(leader.enabled), 0, 0, 0, 0, false },
	{ "leaderElection.namespace", set_string, FIELD(leader.ns), TY_LABEL_MAX,
	    S_LABEL, 0, 0, true },
	{ "leaderElection.id", set_string, FIELD(leader.id), TY_SUBDOMAIN_MAX,
	    S_SUBDOMAIN, 0, 0, true },
	{ "leaderElection.leaseDuration", set_duration, FIELD(leader.lease_duration_ms),
	    0, 0, 1000, 3600 * 1000ull, false },
	{ "leaderElection.renewDeadline", set_duration, FIELD(leader.renew_deadline_ms),
	    0, 0, 1000, 3600 * 1000ull, false },
	{ "leaderElection.retryPeriod", set_duration, FIELD(leader.retry_period_ms),
	    0, 0, 100, 3600 * 1000ull, false },
	{ "metricsBindAddress", set_string, FIELD(metrics_bind_address), TY_ADDR_MAX,
	    S_ADDR, 0, 0, true },
	{ "healthProbeBindAddress", set_string, FIELD(health_probe_bind_address),
	    TY_ADDR_MAX, S_ADDR, 0, 0, true },
	{ "logLevel", set_log_level, FIELD(log_level), 0, 0, 0, 0, true },
	{ "logFormat", set_log_format, FIELD(log_format), 0, 0, 0, 0, true },
	{ "watchNamespace", set_string, FIELD(watch_namespace), TY_LABEL_MAX,
	    S_LABEL_OPT, 0, 0, true },
	{ "metricsSecure", set_bool, FIELD(metrics_secure), 0, 0, 0, 0, false },
	{ "apiDiscoveryInterval", set_duration, FIELD(api_discovery_interval_ms), 0, 0,
	    1000, 600 * 1000ull, false },
	{ "webhook.bindAddress", set_string, FIELD(webhook.bind_address), TY_ADDR_MAX,
	    S_ADDR_OPT, 0, 0, true },
	{ "webhook.certDir", set_string, FIELD(webhook.cert_dir), TY_PATH_MAX, S_PATH_OPT,
	    0, 0, true },
	{ "webhook.certMode", set_cert_mode, FIELD(webhook.cert_mode), 0, 0, 0, 0, true },
	{ "webhook.serviceName", set_string, FIELD(webhook.service), TY_LABEL_MAX, S_LABEL,
	    0, 0, true },
	{ "webhook.secretName", set_string, FIELD(webhook.secret), TY_SUBDOMAIN_MAX,
	    S_SUBDOMAIN, 0, 0, true },
	{ "webhook.certLifetimeForTesting", set_duration,
	    FIELD(webhook.cert_lifetime_for_testing_ms), 0, 0, TY_CERT_TEST_LIFETIME_MIN,
	    TY_CERT_TEST_LIFETIME_MAX, false },
};

static const char *const sections[] = { "leaderElection", "restartBackoff", "webhook" };

static const char *const cert_mode_names[] = {
	[TY_CERT_FILES] = "files",
	[TY_CERT_SELF] = "self",
};

static const char *const podgroup_api_names[] = {
	[TY_PODGROUP_AUTO] = "auto",
	[TY_PODGROUP_X_K8S] = "scheduling.x-k8s.io",
	[TY_PODGROUP_SIGS_K8S] = "scheduling.sigs.k8s.io",
	[TY_PODGROUP_NONE] = "none",
};

void
config_defaults(struct ty_config *c)
{
	memset(c, 0, sizeof(*c));
	kc_strlcpy(c->scheduler_name, "scheduler-plugins-scheduler",
	    sizeof(c->scheduler_name));
	c->podgroup_api = TY_PODGROUP_AUTO;
	kc_strlcpy(c->cluster_domain, "cluster.local", sizeof(c->cluster_domain));
	kc_strlcpy(c->default_priority_class, "trainyard-default",
	    sizeof(c->default_priority_class));
	kc_strlcpy(c->preemptible_priority_class, "trainyard-preemptible",
	    sizeof(c->preemptible_priority_class));
	c->node_failure_toleration_s = 30;
	c->restart_backoff_base_ms = 10 * 1000;
	c->restart_backoff_max_ms = 5 * 60 * 1000;
	c->workers = 4;
	c->kube_api_qps = 100;
	c->kube_api_burst = 200;
	c->leader.enabled = false;
	kc_strlcpy(c->leader.ns, "trainyard-system", sizeof(c->leader.ns));
	kc_strlcpy(c->leader.id, "trainyard-controller", sizeof(c->leader.id));
	c->leader.lease_duration_ms = 15 * 1000;
	c->leader.renew_deadline_ms = 10 * 1000;
	c->leader.retry_period_ms = 2 * 1000;
	kc_strlcpy(c->metrics_bind_address, ":8080", sizeof(c->metrics_bind_address));
	kc_strlcpy(c->health_probe_bind_address, ":8081",
	    sizeof(c->health_probe_bind_address));
	c->log_level = KC_LOG_INFO;
	c->log_format = KC_LOG_TEXT;
	c->metrics_secure = false;
	kc_strlcpy(c->webhook.bind_address, ":9443", sizeof(c->webhook.bind_address));
	kc_strlcpy(c->webhook.cert_dir, "/tmp/k8s-webhook-server/serving-certs",
	    sizeof(c->webhook.cert_dir));
	c->webhook.cert_mode = TY_CERT_FILES;
	kc_strlcpy(c->webhook.service, "trainyard-webhook", sizeof(c->webhook.service));
	kc_strlcpy(c->webhook.secret, "trainyard-webhook-certs", sizeof(c->webhook.secret));
	c->api_discovery_interval_ms = 30 * 1000;
}

void
config_release(struct ty_config *c)
{
	kc_json_putp(&c->ingress_peers);
}

const char *
config_cert_mode_name(enum ty_cert_mode mode)
{
	if ((size_t)mode >= KC_ARRAY_SIZE(cert_mode_names))
		return "?";
	return cert_mode_names[mode];
}

const char *
config_podgroup_api_name(enum ty_podgroup_api api)
{
	if ((size_t)api >= KC_ARRAY_SIZE(podgroup_api_names))
		return "?";
	return podgroup_api_names[api];
}

static int
bad(struct kc_status *st, const struct key *k, const char *why)
{
	return kc_status_set(st, KC_ECONFIG, "%s: %s", k->name, why);
}

static const char *
json_type_word(const struct json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_null:	return "null";
	case json_type_boolean:	return "a boolean";
	case json_type_double:
	case json_type_int:	return "a number";
	case json_type_string:	return "a string";
	case json_type_array:	return "a list";
	case json_type_object:	return "a mapping";
	}
	return "?";
}

static int
want_type(const struct json_object *v, enum json_type t, const char *what,
    const struct key *k, struct kc_status *st)
{
	if (v != NULL && json_object_is_type(v, t))
		return 0;
	return kc_status_set(st, KC_ECONFIG, "%s: must be %s, not %s", k->name, what,
	    json_type_word(v));
}

/* "HOST:PORT" (HOST may be empty, an IPv6 address in brackets) or "0". */
static bool
is_bind_address(const char *s)
{
	const char *colon = strrchr(s, ':');
	uint32_t port;

	if (strcmp(s, "0") == 0)
		return true;
	if (colon == NULL || kc_parse_u32(colon + 1, &port) < 0 || port > 65535)
		return false;
	if (s[0] == '[')
		return colon > s + 1 && colon[-1] == ']';
	return memchr(s, ':', (size_t)(colon - s)) == NULL;
}

static const char *
string_problem(const char *s, enum str_rule rule)
{
	size_t len = strlen(s);

	switch (rule) {
	case S_SUBDOMAIN_OPT:
		if (len == 0)
			return NULL;
		/* FALLTHROUGH */
	case S_SUBDOMAIN:
		if (len == 0)
			return "must not be empty";
		if (len > 253 || !kc_valid_is_dns1123_subdomain(kc_str_from(s)))
			return "must be a lowercase DNS-1123 subdomain (at most 253 "
			    "characters: a-z, 0-9, '-' and '.')";
		return NULL;
	case S_LABEL_OPT:
		if (len == 0)
			return NULL;
		/* FALLTHROUGH */
	case S_LABEL:
		if (len == 0)
			return "must not be empty";
		if (len > 63 || !kc_valid_is_dns1123_label(kc_str_from(s)))
			return "must be a lowercase DNS-1123 label (at most 63 "
			    "characters: a-z, 0-9 and '-')";
		return NULL;
	case S_PATH_OPT:
		if (len == 0)
			return NULL;
		if (s[0] != '/')
			return "must be an absolute path";
		for (size_t i = 0; i < len; i++)
			if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
				return "must not hold control characters";
		return NULL;
	case S_ADDR_OPT:
		if (len == 0)
			return NULL;
		/* FALLTHROUGH */
	case S_ADDR:
		if (!is_bind_address(s))
			return "must be HOST:PORT (\":8080\", \"127.0.0.1:8080\", "
			    "\"[::1]:8080\") or \"0\" to turn it off";
		return NULL;
	}
	return "unknown rule";
}

static int
set_string(struct ty_config *c, const struct key *k, struct json_object *v,
    struct kc_status *st)
{
	const char *s, *why;
	int r;

	if ((r = want_type(v, json_type_string, "a string", k, st)) < 0)
		return r;
	s = json_object_get_string(v);
	if ((why = string_problem(s, k->rule)) != NULL)
		return kc_status_set(st, KC_ECONFIG, "%s: \"%.64s\": %s", k->name, s, why);
	if (kc_strlcpy(FIELD_PTR(c, k, char), s, k->size) >= k->size)
		return bad(st, k, "too long");
	return 0;
}

static int
get_int(const struct key *k, struct json_object *v, int64_t *ret,
    struct kc_status *st)
{
	int64_t n;
	int r;

	if ((r = want_type(v, json_type_int, "an integer", k, st)) < 0)
		return r;
	n = json_object_get_int64(v);
	if (n < (int64_t)k->min || (uint64_t)n > k->max)
		return kc_status_set(st, KC_ECONFIG, "%s: %lld is out of range %llu..%llu",
		    k->name, (long long)n, (unsigned long long)k->min,
		    (unsigned long long)k->max);
	*ret = n;
	return 0;
}

static int
set_uint(struct ty_config *c, const struct key *k, struct json_object *v,
    struct kc_status *st)
{
	int64_t n = 0;
	int r;

	if ((r = get_int(k, v, &n, st)) < 0)
		return r;
	if (k->size == sizeof(uint32_t))
		*FIELD_PTR(c, k, uint32_t) = (uint32_t)n;
	else
		*FIELD_PTR(c, k, unsigned) = (unsigned)n;
	return 0;
}

static int
set_qps(struct ty_config *c, const struct key *k, struct json_object *v,
    struct kc_status *st)
{
	double q;

	if (v == NULL || (!json_object_is_type(v, json_type_int) &&
	    !json_object_is_type(v, json_type_double)))
		return kc_status_set(st, KC_ECONFIG, "%s: must be a number, not %s",
		    k->name, json_type_word(v));
	q = json_object_get_double(v);
	if (!(q > 0 && q <= (double)k->max))
		return kc_status_set(st, KC_ECONFIG, "%s: %g is out of range (0, %llu]",
		    k->name, q, (unsigned long long)k->max);
	*FIELD_PTR(c, k, double) = q;
	return 0;
}

static int
set_bool(struct ty_config *c, const struct key *k, struct json_object *v,
    struct kc_status *st)
{
	int r;

	if ((r = want_type(v, json_type_boolean, "true or false", k, st)) < 0)
		return r;
	*FIELD_PTR(c, k, bool) = json_object_get_boolean(v);
	return 0;
}

static void
format_ms(uint64_t ms, char *buf, size_t size)
{
	if (ms % 1000 == 0)
		snprintf(buf, size, "%llus", (unsigned long long)(ms / 1000));
	else
		snprintf(buf, size, "%llums", (unsigned long long)ms);
}

static int
set_duration(struct ty_config *c, const struct key *k, struct json_object *v,
    struct kc_status *st)
{
	char lo[32], hi[32];
	const char *s;
	uint64_t ms;

	if (v == NULL || !json_object_is_type(v, json_type_string))
		return kc_status_set(st, KC_ECONFIG, "%s: must be a duration such as "
		    "\"15s\" or \"1m30s\", not %s", k->name, json_type_word(v));
	s = json_object_get_string(v);
	if (kc_parse_duration_ms(s, &ms) < 0)
		return kc_status_set(st, KC_ECONFIG, "%s: \"%.64s\" is not a duration "
		    "(examples: \"500ms\", \"15s\", \"1m30s\")", k->name, s);
	format_ms(k->min, lo, sizeof(lo));
	format_ms(k->max, hi, sizeof(hi));
	if (ms < k->min || ms > k->max)
		return kc_status_set(st, KC_ECONFIG, "%s: \"%.64s\" is out of range "
		    "%s..%s", k->name, s, lo, hi);
	*FIELD_PTR(c, k, uint64_t) = ms;
	return 0;
}

/*
 * A string that must be one of 'names' (n of them): its index, stored in
 * the key's enum field. The message lists them all.
 */
static int
set_named(struct ty_config *c, const struct key *k, struct json_object *v,
    const char *const *names, size_t n, struct kc_status *st)
{
	char list[256];
	struct kc_sbuf sb;
	const char *s;
	int r;

	if ((r = want_type(v, json_type_string, "a string", k, st)) < 0)
		return r;
	s = json_object_get_string(v);
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0) {
			*FIELD_PTR(c, k, int) = (int)i;
			return 0;
		}
	kc_sbuf_init(&sb, list, sizeof(list));
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			kc_sbuf_puts(&sb, ", ");
		kc_sbuf_puts(&sb, names[i]);
	}
	return kc_status_set(st, KC_ECONFIG, "%s: \"%.64s\" is not one of %s", k->name, s,
	    list);
}

static int
set_podgroup_api(struct ty_config *c, const struct key *k, struct json_object *v,
    struct kc_status *st)
{
	return set_named(c, k, v, podgroup_api_names, KC_ARRAY_SIZE(podgroup_api_names), st);
}

static int
set_log_level(struct ty_config *c, const struct key *k, struct json_object *v,
    struct kc_status *st)
{
	enum kc_log_level l;
	int r;

	if ((r = want_type(v, json_type_string, "a string", k, st)) < 0)
		return r;
	if (kc_log_parse_level(json_object_get_string(v), &l) < 0)
		return kc_status_set(st, KC_ECONFIG, "%s: \"%.64s\" is not one of debug, "
		    "info, warn, error, off", k->name,
		    json_object_get_string(v));
	*FIELD_PTR(c, k, enum kc_log_level) = l;
	return 0;
}

static int
set_log_format(struct ty_config *c, const struct key *k, struct json_object *v,
    struct kc_status *st)
{
	enum kc_log_format f;
	int r;

	if ((r = want_type(v, json_type_string, "a string", k, st)) < 0)
		return r;
	if (kc_log_parse_format(json_object_get_string(v), &f) < 0)
		return kc_status_set(st, KC_ECONFIG, "%s: \"%.64s\" is not one of text, "
		    "json", k->name, json_object_get_string(v));
	*FIELD_PTR(c, k, enum kc_log_format) = f;
	return 0;
}

static int
set_cert_mode(struct ty_config *c, const struct key *k, struct json_object *v,
    struct kc_status *st)
{
	return set_named(c, k, v, cert_mode_names, KC_ARRAY_SIZE(cert_mode_names), st);
}

/* "10.0.0.0/8", "fd00::/64": an address and a prefix length that fits it. */
static bool
is_cidr(const char *s)
{
	char addr[64];
	unsigned char bin[16];
	const char *slash = strchr(s, '/');
	uint32_t bits;
	size_t n;

	if (slash == NULL || (n = (size_t)(slash - s)) >= sizeof(addr))
		return false;
	memcpy(addr, s, n);
	addr[n] = '\0';
	if (kc_parse_u32(slash + 1, &bits) < 0)
		return false;
	if (inet_pton(AF_INET, addr, bin) == 1)
		return bits <= 32;
	return inet_pton(AF_INET6, addr, bin) == 1 && bits <= 128;
}

static int
check_ip_block(struct json_object *b, const char *where, struct kc_status *st)
{
	const struct json_object *except;
	const char *cidr;

	json_object_object_foreach(b, key, val) {
		(void)val;
		if (strcmp(key, "cidr") != 0 && strcmp(key, "except") != 0)
			return kc_status_set(st, KC_ECONFIG, "%s.ipBlock.%.64s: unknown key",
			    where, key);
	}
	if ((cidr = kc_json_str(b, "cidr")) == NULL || !is_cidr(cidr))
		return kc_status_set(st, KC_ECONFIG, "%s.ipBlock.cidr: must be a CIDR "
		    "such as \"10.0.0.0/8\"", where);
	if ((except = kc_json_get(b, "except")) == NULL)
		return 0;
	if (!json_object_is_type(except, json_type_array))
		return kc_status_set(st, KC_ECONFIG, "%s.ipBlock.except: must be a list",
		    where);
	for (size_t i = 0; i < json_object_array_length(except); i++) {
		const char *e = json_object_get_string(json_object_array_get_idx(except, i));

		if (!json_object_is_type(json_object_array_get_idx(except, i),
		    json_type_string) || !is_cidr(e))
			return kc_status_set(st, KC_ECONFIG, "%s.ipBlock.except[%zu]: must "
			    "be a CIDR such as \"10.1.0.0/16\"", where, i);
	}
	return 0;
}

static int
check_selector(const struct json_object *sel, const char *where, const char *key,
    struct kc_status *st)
{
	struct kc_label_selector *ls = NULL;
	int r;

	if (!json_object_is_type(sel, json_type_object))
		return kc_status_set(st, KC_ECONFIG, "%s.%s: must be a label selector "
		    "(matchLabels, matchExpressions)", where, key);
	if ((r = kc_label_selector_from_json(sel, &ls, st)) == -ENOMEM)
		return r;
	ls = kc_label_selector_free(ls);
	if (r < 0)
		return kc_status_set(st, KC_ECONFIG, "%s.%s: %s", where, key, st->message);
	return 0;
}

/* A NetworkPolicyPeer: podSelector and/or namespaceSelector, or ipBlock. */
static int
check_peer(struct json_object *p, size_t i, struct kc_status *st)
{
	char where[48];
	bool sel = false, ip = false;
	int r;

	snprintf(where, sizeof(where), "networkPolicyPeers[%zu]", i);
	if (p == NULL || !json_object_is_type(p, json_type_object))
		return kc_status_set(st, KC_ECONFIG, "%s: must be a NetworkPolicyPeer "
		    "(podSelector, namespaceSelector or ipBlock)", where);
	json_object_object_foreach(p, key, val) {
		if (strcmp(key, "podSelector") == 0 || strcmp(key, "namespaceSelector") == 0) {
			if ((r = check_selector(val, where, key, st)) < 0)
				return r;
			sel = true;
		} else if (strcmp(key, "ipBlock") == 0) {
			if (!json_object_is_type(val, json_type_object))
				return kc_status_set(st, KC_ECONFIG, "%s.ipBlock: must be a "
				    "mapping", where);
			if ((r = check_ip_block(val, where, st)) < 0)
				return r;
			ip = true;
		} else
			return kc_status_set(st, KC_ECONFIG, "%s.%.64s: unknown key", where,
			    key);
	}
	if (!sel && !ip)
		return kc_status_set(st, KC_ECONFIG, "%s: must set podSelector, "
		    "namespaceSelector or ipBlock", where);
	if (sel && ip)
		return kc_status_set(st, KC_ECONFIG, "%s: ipBlock cannot be combined with "
		    "a selector (use two peers)", where);
	return 0;
}

static int
set_peers(struct ty_config *c, const struct key *k, struct json_object *v,
    struct kc_status *st)
{
	struct json_object *copy;
	size_t n;
	int r;

	if ((r = want_type(v, json_type_array, "a list of NetworkPolicyPeer", k, st)) < 0)
		return r;
	if ((n = json_object_array_length(v)) > TY_CONFIG_PEERS_MAX)
		return kc_status_set(st, KC_ECONFIG, "%s: %zu peers, at most %d", k->name,
		    n, TY_CONFIG_PEERS_MAX);
	for (size_t i = 0; i < n; i++)
		if ((r = check_peer(json_object_array_get_idx(v, i), i, st)) < 0)
			return r;
	if ((copy = kc_json_copy(v)) == NULL)
		return -ENOMEM;
	json_object_put(c->ingress_peers);
	c->ingress_peers = copy;
	return 0;
}

static const struct key *
key_find(const char *name)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(keys); i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

static bool
is_section(const char *name)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(sections); i++)
		if (strcmp(sections[i], name) == 0)
			return true;
	return false;
}

static int
apply_key(struct ty_config *c, const char *name, struct json_object *v,
    struct kc_status *st)
{
	const struct key *k = key_find(name);

	if (k == NULL)
		return kc_status_set(st, KC_ECONFIG, "%.128s: unknown key", name);
	return k->set(c, k, v, st);
}

static int
apply_section(struct ty_config *c, const char *section, struct json_object *v,
    struct kc_status *st)
{
	char name[160];
	int r;

	if (v == NULL || !json_object_is_type(v, json_type_object))
		return kc_status_set(st, KC_ECONFIG, "%s: must be a mapping, not %s",
		    section, json_type_word(v));
	json_object_object_foreach(v, key, val) {
		snprintf(name, sizeof(name), "%s.%.128s", section, key);
		if ((r = apply_key(c, name, val, st)) < 0)
			return r;
	}
	return 0;
}

static int
check_header(const struct json_object *doc, struct kc_status *st)
{
	const char *av = kc_json_str(doc, "apiVersion"), *kind = kc_json_str(doc, "kind");

	if (av == NULL || strcmp(av, TY_CONFIG_API_VERSION) != 0)
		return kc_status_set(st, KC_ECONFIG, "apiVersion: must be %s",
		    TY_CONFIG_API_VERSION);
	if (kind == NULL || strcmp(kind, TY_CONFIG_KIND) != 0)
		return kc_status_set(st, KC_ECONFIG, "kind: must be %s", TY_CONFIG_KIND);
	return 0;
}

static int
apply_doc(struct ty_config *c, struct json_object *doc, struct kc_status *st)
{
	int r;

	if (doc == NULL || !json_object_is_type(doc, json_type_object))
		return kc_status_set(st, KC_ECONFIG, "the file must hold a mapping "
		    "(apiVersion: %s, kind: %s, ...)", TY_CONFIG_API_VERSION,
		    TY_CONFIG_KIND);
	if ((r = check_header(doc, st)) < 0)
		return r;
	json_object_object_foreach(doc, key, val) {
		if (strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0)
			continue;
		r = is_section(key) ? apply_section(c, key, val, st) :
		    apply_key(c, key, val, st);
		if (r < 0)
			return r;
	}
	return config_validate(c, st);
}

int
config_parse(struct ty_config *c, const char *text, size_t len, const char *name,
    struct kc_status *st)
{
	struct json_object *doc = NULL;
	struct ty_config tmp = *c;
	int r;

	if ((r = kc_yaml_parse_one(text, len, NULL, &doc, st)) < 0) {
		if (r == -ENOMEM)
			return r;
		return kc_status_set(st, KC_ECONFIG, "%s: %s", name,
		    st != NULL ? st->message : "not YAML");
	}
	tmp.ingress_peers = c->ingress_peers != NULL ?
	    json_object_get(c->ingress_peers) : NULL;
	r = apply_doc(&tmp, doc, st);
	json_object_put(doc);
	if (r < 0) {
		config_release(&tmp);
		if (r == -ENOMEM)
			return r;
		return kc_status_set(st, r, "%s: %s", name, st != NULL ? st->message : "");
	}
	config_release(c);
	*c = tmp;
	return 0;
}

int
config_load(struct ty_config *c, const char *path, struct kc_status *st)
{
	_cleanup_(kc_freep) char *text = NULL;
	size_t len;
	int r;

	if ((r = kc_read_file(path, TY_CONFIG_FILE_MAX, &text, &len)) < 0)
		return kc_status_set(st, r, "%s: %s", path, r == -E2BIG ?
		    "larger than 1 MiB" : kc_strerror(r));
	return config_parse(c, text, len, path, st);
}

int
config_set_flag(struct ty_config *c, const char *name, const char *value,
    struct kc_status *st)
{
	const struct key *k = key_find(name);
	struct json_object *v = NULL;
	struct ty_config tmp;
	int r;

	if (k == NULL)
		return kc_status_set(st, KC_ECONFIG, "%.128s: unknown key", name);
	if (k->set == set_peers)
		return kc_status_set(st, KC_ECONFIG, "%s: takes a list; set it in the "
		    "config file", name);
	if (k->text)
		v = json_object_new_string(value);
	else if ((r = kc_yaml_parse_one(value, strlen(value), NULL, &v, st)) < 0)
		return r == -ENOMEM ? r : kc_status_set(st, KC_ECONFIG,
		    "%s: \"%.64s\" is not a valid value", name, value);
	if (k->text && v == NULL)
		return -ENOMEM;
	tmp = *c;
	r = k->set(&tmp, k, v, st);
	json_object_put(v);
	if (r == 0)
		*c = tmp;
	return r;
}

int
config_validate(const struct ty_config *c, struct kc_status *st)
{
	char a[32], b[32];

	format_ms(c->leader.lease_duration_ms, a, sizeof(a));
	format_ms(c->leader.renew_deadline_ms, b, sizeof(b));
	if (c->leader.renew_deadline_ms >= c->leader.lease_duration_ms)
		return kc_status_set(st, KC_ECONFIG, "leaderElection.renewDeadline: must "
		    "be less than leaderElection.leaseDuration (%s)", a);
	if (c->leader.retry_period_ms * 12 >= c->leader.renew_deadline_ms * 10)
		return kc_status_set(st, KC_ECONFIG, "leaderElection.retryPeriod: 1.2 "
		    "times it must be less than leaderElection.renewDeadline (%s)", b);
	format_ms(c->restart_backoff_max_ms, a, sizeof(a));
	if (c->restart_backoff_base_ms > c->restart_backoff_max_ms)
		return kc_status_set(st, KC_ECONFIG, "restartBackoff.base: must not be "
		    "more than restartBackoff.max (%s)", a);
	return 0;
}

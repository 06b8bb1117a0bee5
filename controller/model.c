/*
 * model.c: Run validation and the desired objects of a session.
 *
 * Validation walks the Run and its ResourceProfile once, field by field,
 * and never stops at the first problem: every problem becomes a field path
 * and a sentence ("spec.nodes: 16 nodes is more than ResourceProfile
 * \"h100x8\" allows (maxNodes 8)"), so a researcher fixes a Run in one
 * round. The API server's schema already rejects most malformed input;
 * the controller checks again because a CRD may be older than the
 * controller and because some rules span two objects (the Run and its
 * profile) or the config.
 *
 * Merging, in one place:
 *	resources	per key: limit = run limit, else profile; request = run
 *			request, else run limit, else profile. Extended resources
 *			(names with a '/' outside kubernetes.io) need request ==
 *			limit and whole numbers; others need request <= limit.
 *	env		the profile's, then the Run's; a Run entry replaces the
 *			profile's of the same name in place. Names Trainyard sets
 *			are reserved.
 *	nodeSelector	profile, then the zoneSelectors rule for the run's size,
 *			then template.spec.nodeSelector (later keys win).
 *	tolerations	profile's, the template's, then not-ready/unreachable
 *			with the config's tolerationSeconds unless already there.
 *	annotations	profile podAnnotations, then template annotations.
 *	priority	preemptible: the profile's preemptiblePriorityClassName,
 *			else the config's; otherwise priorityClassName, else the
 *			config's default.
 *
 * The spec keeps pre-built pieces (the "main" container without env, the
 * pod spec settings shared by every node), so model_pod() only copies them
 * and adds what depends on the index and the session.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/podsecurity.h>
#include <kc/quantity.h>
#include <kc/sbuf.h>
#include <kc/selector.h>
#include <kc/str.h>
#include <kc/validation.h>

#include "config.h"
#include "convert.h"
#include "model.h"

#define RESOURCES_MAX	64	/* distinct resource names of one Run */

struct vctx {
	const struct json_object *run, *rspec, *profile, *pspec;
	const struct ty_config	*cfg;
	struct ty_problems	*probs;
	struct ty_spec		*spec;
	char			 pfx[300];	/* "ResourceProfile \"x\": " */
};

void
model_problem(struct ty_problems *p, const char *field, const char *fmt, ...)
{
	struct ty_problem *e;
	va_list ap;

	p->total++;
	if (p->n >= TY_PROBLEMS_MAX)
		return;
	e = &p->p[p->n++];
	kc_strlcpy(e->field, field, sizeof(e->field));
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
}

void
model_problems_text(const struct ty_problems *p, char *buf, size_t size)
{
	size_t len = 0;

	if (size == 0)
		return;
	buf[0] = '\0';
	for (unsigned i = 0; i < p->n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s: %s",
		    i > 0 ? "; " : "", p->p[i].field, p->p[i].message);
	if (p->total > p->n && len < size)
		snprintf(buf + len, size - len, " (and %u more)", p->total - p->n);
}

/* ------------------------------------------------------------------ */
/* Lifecycle fields */

static int64_t
int_or(const struct json_object *o, const char *key, int64_t def, int64_t min)
{
	int64_t v = kc_json_int(o, def, key);

	return v < min ? def : v;
}

static enum ty_restart_policy
restart_policy_of(const char *s, bool *ok)
{
	*ok = true;
	if (s == NULL || strcmp(s, "Never") == 0)
		return TY_RESTART_NEVER;
	if (strcmp(s, "OnPreemption") == 0)
		return TY_RESTART_ON_PREEMPTION;
	if (strcmp(s, "OnFailure") == 0)
		return TY_RESTART_ON_FAILURE;
	*ok = false;
	return TY_RESTART_NEVER;
}

static bool
is_beta(const struct json_object *run)
{
	const char *v = kc_json_str(run, "apiVersion");

	return v != NULL && strcmp(v, TY_V1BETA1) == 0;
}

void
model_control(const struct json_object *run, struct ty_control *ret)
{
	const struct json_object *spec = kc_json_get(run, "spec");
	const struct json_object *restart = spec, *deadlines = spec;
	bool beta = is_beta(run), ok;

	if (beta) {
		restart = kc_json_get(spec, "restart");
		deadlines = kc_json_get(spec, "deadlines");
	}
	ret->generation = kc_json_int(run, 0, "metadata", "generation");
	ret->session = int_or(spec, "session", 1, 1);
	ret->suspend = kc_json_bool(spec, false, "suspend");
	ret->active_deadline_s = int_or(deadlines, beta ? "activeSeconds" :
	    "activeDeadlineSeconds", 0, 1);
	ret->schedule_timeout_s = int_or(deadlines, beta ? "schedulingSeconds" :
	    "scheduleTimeoutSeconds", 0, 1);
	ret->restart_policy = restart_policy_of(kc_json_str(restart, beta ? "policy" :
	    "restartPolicy"), &ok);
	ret->max_restarts = int_or(restart, beta ? "limit" : "maxRestarts", 3, 0);
	ret->v1beta1 = beta;
}

/* ------------------------------------------------------------------ */
/* Small checks */

static bool
is_type(const struct json_object *v, enum json_type t)
{
	return v != NULL && json_object_is_type(v, t);
}

/* A field that must be absent or of type 't'; false (with a problem) if not. */
static bool
want(struct vctx *c, const struct json_object *v, enum json_type t, const char *field,
    const char *what)
{
	if (v == NULL || json_object_is_type(v, t))
		return true;
	model_problem(c->probs, field, "must be %s", what);
	return false;
}

static bool
is_dns1035_label(const char *s)
{
	return strlen(s) <= KC_DNS1035_LABEL_MAX && kc_valid_is_dns1035_label(kc_str_from(s));
}

static bool
is_subdomain(const char *s)
{
	return strlen(s) <= KC_DNS1123_SUBDOMAIN_MAX &&
	    kc_valid_is_dns1123_subdomain(kc_str_from(s));
}

static unsigned
digits(int64_t v)
{
	unsigned n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* [-._a-zA-Z][-._a-zA-Z0-9]*: what Kubernetes accepts as an env name. */
static bool
is_env_name(const char *s)
{
	if (s[0] == '\0' || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.'))
			return false;
	return true;
}

/* IANA_SVC_NAME: at most 15, lowercase alphanumerics and '-', a letter. */
static bool
is_port_name(const char *s)
{
	size_t n = strlen(s);
	bool letter = false;

	if (n == 0 || n > 15 || s[0] == '-' || s[n - 1] == '-' || strstr(s, "--"))
		return false;
	for (; *s != '\0'; s++) {
		if (*s >= 'a' && *s <= 'z')
			letter = true;
		else if (!(*s >= '0' && *s <= '9') && *s != '-')
			return false;
	}
	return letter;
}

/* ------------------------------------------------------------------ */
/* Names, size, profile reference */

static void
v_identity(struct vctx *c)
{
	const char *name = kc_json_str(c->run, "metadata", "name");
	const char *ns = kc_json_str(c->run, "metadata", "namespace");
	const char *uid = kc_json_str(c->run, "metadata", "uid");
	int64_t nodes = kc_json_int(c->rspec, 0, "nodes");
	struct ty_spec *s = c->spec;

	if (name == NULL || !is_dns1035_label(name)) {
		model_problem(c->probs, "metadata.name", "\"%.80s\" cannot name the run's "
		    "Service: use at most 63 lowercase letters, digits and '-', "
		    "starting with a letter and ending with a letter or digit",
		    name != NULL ? name : "");
	} else if (nodes >= 1 && strlen(name) + 1 + digits(nodes - 1) > 63) {
		model_problem(c->probs, "metadata.name", "\"%s\" is too long for %" PRId64
		    " nodes: the pod hostname \"%s-%" PRId64 "\" would have %zu "
		    "characters, and hostnames allow 63; use a name of at most %u "
		    "characters", name, nodes, name, nodes - 1,
		    strlen(name) + 1 + digits(nodes - 1), 62 - digits(nodes - 1));
	} else
		kc_strlcpy(s->name, name, sizeof(s->name));
	if (ns == NULL || strlen(ns) > 63 || !kc_valid_is_dns1123_label(kc_str_from(ns)))
		model_problem(c->probs, "metadata.namespace", "missing or not a namespace name");
	else
		kc_strlcpy(s->ns, ns, sizeof(s->ns));
	if (uid == NULL || uid[0] == '\0' || strlen(uid) >= sizeof(s->uid))
		model_problem(c->probs, "metadata.uid", "missing: the Run must come from the "
		    "API server");
	else
		kc_strlcpy(s->uid, uid, sizeof(s->uid));
	s->generation = kc_json_int(c->run, 0, "metadata", "generation");
}

static void
v_nodes(struct vctx *c)
{
	const struct json_object *v = kc_json_get(c->rspec, "nodes");
	int64_t n = kc_json_int(c->rspec, 0, "nodes"), max;

	if (!is_type(v, json_type_int)) {
		model_problem(c->probs, "spec.nodes", "required: the number of nodes (pods), "
		    "1 to %d", TY_NODES_MAX);
		return;
	}
	if (n < 1 || n > TY_NODES_MAX) {
		model_problem(c->probs, "spec.nodes", "%" PRId64 " is out of range: a run has "
		    "1 to %d nodes", n, TY_NODES_MAX);
		return;
	}
	max = kc_json_int(c->pspec, 0, "maxNodes");
	if (c->profile != NULL && max > 0 && n > max)
		model_problem(c->probs, "spec.nodes", "%" PRId64 " nodes is more than "
		    "ResourceProfile \"%s\" allows (maxNodes %" PRId64 ")", n,
		    c->spec->profile, max);
	c->spec->nodes = (int32_t)n;
}

static void
v_profile_ref(struct vctx *c)
{
	const char *p = kc_json_str(c->rspec, "profile");

	if (!want(c, kc_json_get(c->rspec, "profile"), json_type_string, "spec.profile",
	    "the name of a ResourceProfile"))
		return;
	if (p == NULL || p[0] == '\0') {
		c->profile = c->pspec = NULL;
		return;
	}
	kc_strlcpy(c->spec->profile, p, sizeof(c->spec->profile));
	snprintf(c->pfx, sizeof(c->pfx), "ResourceProfile \"%.200s\" ", p);
	if (c->profile == NULL)
		model_problem(c->probs, "spec.profile", "ResourceProfile \"%.200s\" not found "
		    "(\"kubectl get resourceprofiles\" lists them)", p);
}

static void
v_lifecycle(struct vctx *c)
{
	static const char *const positive[] = {
		"activeDeadlineSeconds", "scheduleTimeoutSeconds",
	};
	struct json_object *v;
	bool ok;
	char field[64];

	for (size_t i = 0; i < KC_ARRAY_SIZE(positive); i++) {
		v = kc_json_get(c->rspec, positive[i]);
		snprintf(field, sizeof(field), "spec.%s", positive[i]);
		if (v != NULL && (!is_type(v, json_type_int) ||
		    json_object_get_int64(v) < 1))
			model_problem(c->probs, field, "must be a whole number of seconds, at "
			    "least 1");
	}
	v = kc_json_get(c->rspec, "session");
	if (v != NULL && (!is_type(v, json_type_int) || json_object_get_int64(v) < 1))
		model_problem(c->probs, "spec.session", "must be a whole number, at least 1");
	v = kc_json_get(c->rspec, "maxRestarts");
	if (v != NULL && (!is_type(v, json_type_int) || json_object_get_int64(v) < 0))
		model_problem(c->probs, "spec.maxRestarts", "must be a whole number, at least 0");
	v = kc_json_get(c->rspec, "restartPolicy");
	restart_policy_of(is_type(v, json_type_string) ? json_object_get_string(v) : NULL,
	    &ok);
	if (!ok || (v != NULL && !is_type(v, json_type_string)))
		model_problem(c->probs, "spec.restartPolicy", "must be Never, OnPreemption or "
		    "OnFailure");
	v = kc_json_get(c->rspec, "suspend");
	want(c, v, json_type_boolean, "spec.suspend", "true or false");
	v = kc_json_get(c->rspec, "preemptible");
	if (want(c, v, json_type_boolean, "spec.preemptible", "true or false"))
		c->spec->preemptible = kc_json_bool(c->rspec, false, "preemptible");
	c->spec->schedule_timeout_s = int_or(c->rspec, "scheduleTimeoutSeconds", 0, 1);
}

/* ------------------------------------------------------------------ */
/* Resources */

struct res {
	const char		*name;
	struct kc_quantity	 req, lim, prof;
	bool			 has_req, has_lim, has_prof;
};

struct resset {
	struct res	r[RESOURCES_MAX];
	size_t		n;
};

static bool
is_gpu(const char *name)
{
	size_t n = strlen(name);

	return n > 4 && strcmp(name + n - 4, "/gpu") == 0;
}

static bool
is_extended(const char *name)
{
	return strchr(name, '/') != NULL && strstr(name, "kubernetes.io/") == NULL;
}

static struct res *
res_get(struct resset *rs, const char *name)
{
	for (size_t i = 0; i < rs->n; i++)
		if (strcmp(rs->r[i].name, name) == 0)
			return &rs->r[i];
	if (rs->n == RESOURCES_MAX)
		return NULL;
	rs->r[rs->n] = (struct res){ .name = name };
	return &rs->r[rs->n++];
}

/* Reads a quantity given as a string or a number; false with a problem. */
static bool
read_qty(struct vctx *c, struct json_object *v, const char *field, const char *name,
    struct kc_quantity *q)
{
	struct kc_status st = { 0 };
	struct kc_quantity w;
	const char *text;
	int64_t whole;

	if (!is_type(v, json_type_string) && !is_type(v, json_type_int) &&
	    !is_type(v, json_type_double)) {
		model_problem(c->probs, field, "must be a quantity such as \"4\", \"500m\" or "
		    "\"64Gi\"");
		return false;
	}
	text = json_object_get_string(v);
	if (kc_quantity_parse(text, q, &st) < 0) {
		model_problem(c->probs, field, "\"%.64s\" is not a quantity (examples: 4, "
		    "500m, 64Gi): %s", text, st.message);
		return false;
	}
	if (kc_quantity_sign(q) < 0) {
		model_problem(c->probs, field, "\"%.64s\" is negative", text);
		return false;
	}
	if (is_extended(name) && (kc_quantity_value(q, &whole) < 0 ||
	    (w = kc_quantity_from_int(whole), kc_quantity_cmp(q, &w) != 0))) {
		model_problem(c->probs, field, "\"%.64s\" is not a whole number: %s is counted "
		    "in whole devices", text, name);
		return false;
	}
	return true;
}

enum res_slot { SLOT_REQ, SLOT_LIM, SLOT_PROF };

static void
read_list(struct vctx *c, struct json_object *list, const char *where,
    enum res_slot slot, struct resset *rs)
{
	char field[200];
	struct kc_quantity q;
	struct res *r;

	if (list == NULL)
		return;
	if (!is_type(list, json_type_object)) {
		model_problem(c->probs, where, "must be a map of resource names to quantities");
		return;
	}
	json_object_object_foreach(list, key, val) {
		snprintf(field, sizeof(field), "%s[%.100s]", where, key);
		if (!read_qty(c, val, field, key, &q))
			continue;
		if ((r = res_get(rs, key)) == NULL) {
			model_problem(c->probs, where, "more than %d resource names", RESOURCES_MAX);
			return;
		}
		if (slot == SLOT_REQ)
			r->req = q, r->has_req = true;
		else if (slot == SLOT_LIM)
			r->lim = q, r->has_lim = true;
		else
			r->prof = q, r->has_prof = true;
	}
}

static int
put_qty(struct json_object *o, const char *name, const struct kc_quantity *q)
{
	char buf[KC_QUANTITY_STR_MAX];

	if (kc_quantity_format(q, buf, sizeof(buf)) < 0)
		return -ERANGE;
	return kc_json_put(o, name, json_object_new_string(buf));
}

static int
cmp_res(const void *a, const void *b)
{
	return strcmp(((const struct res *)a)->name, ((const struct res *)b)->name);
}

static void
fmt_qty(const struct kc_quantity *q, char *buf)
{
	if (kc_quantity_format(q, buf, KC_QUANTITY_STR_MAX) < 0)
		kc_strlcpy(buf, "?", KC_QUANTITY_STR_MAX);
}

/* One merged resource: checks and the final request and limit. */
static bool
merge_res(struct vctx *c, struct res *r, struct kc_quantity *req, struct kc_quantity *lim,
    bool *has_lim)
{
	char a[KC_QUANTITY_STR_MAX], b[KC_QUANTITY_STR_MAX], field[200];
	const char *from = r->has_lim ? "spec.resources.limits" : "the profile";

	*has_lim = r->has_lim || r->has_prof || (is_extended(r->name) && r->has_req);
	*lim = r->has_lim ? r->lim : r->has_prof ? r->prof : r->req;
	*req = r->has_req ? r->req : r->has_lim ? r->lim : r->prof;
	snprintf(field, sizeof(field), "spec.resources.requests[%.100s]", r->name);
	fmt_qty(req, a);
	fmt_qty(lim, b);
	if (*has_lim && is_extended(r->name) && kc_quantity_cmp(req, lim) != 0) {
		model_problem(c->probs, field, "%s must equal its limit (%s, from %s): "
		    "devices such as %s cannot be overcommitted", a, b, from, r->name);
		return false;
	}
	if (*has_lim && kc_quantity_cmp(req, lim) > 0) {
		model_problem(c->probs, field, "%s is more than the limit of %s (from %s); "
		    "raise spec.resources.limits[%s] too", a, b, from, r->name);
		return false;
	}
	return true;
}

static int
build_resources(struct vctx *c, struct resset *rs)
{
	struct ty_spec *s = c->spec;
	struct kc_quantity req, lim, gpus = kc_quantity_from_int(0);
	bool has_lim;
	int r;

	qsort(rs->r, rs->n, sizeof(rs->r[0]), cmp_res);
	if ((s->requests = json_object_new_object()) == NULL ||
	    (s->limits = json_object_new_object()) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < rs->n; i++) {
		if (!merge_res(c, &rs->r[i], &req, &lim, &has_lim))
			continue;
		if ((r = put_qty(s->requests, rs->r[i].name, &req)) < 0 ||
		    (has_lim && (r = put_qty(s->limits, rs->r[i].name, &lim)) < 0))
			return r;
		if (has_lim && is_gpu(rs->r[i].name) && kc_quantity_add(&gpus, &lim) < 0)
			return -ERANGE;
	}
	if (kc_quantity_value(&gpus, &s->gpus_per_node) < 0)
		s->gpus_per_node = 0;
	return 0;
}

static int
v_resources(struct vctx *c)
{
	struct resset rs = { .n = 0 };
	struct json_object *res = kc_json_get(c->rspec, "resources");
	char where[400];
	int r;

	if (c->profile != NULL) {
		snprintf(where, sizeof(where), "%sspec.resources", c->pfx);
		read_list(c, kc_json_get(c->pspec, "resources"), where, SLOT_PROF, &rs);
	}
	if (want(c, res, json_type_object, "spec.resources", "a map with requests "
	    "and limits")) {
		read_list(c, kc_json_get(res, "requests"), "spec.resources.requests",
		    SLOT_REQ, &rs);
		read_list(c, kc_json_get(res, "limits"), "spec.resources.limits",
		    SLOT_LIM, &rs);
	}
	if (rs.n == 0 && c->spec->profile[0] == '\0')
		model_problem(c->probs, "spec", "neither spec.profile nor spec.resources is set: "
		    "say what each node gets, with a ResourceProfile (spec.profile) or "
		    "spec.resources.limits such as {nvidia.com/gpu: 8}");
	if ((r = build_resources(c, &rs)) == -ERANGE) {
		model_problem(c->probs, "spec.resources", "the quantities are too large");
		return 0;
	}
	return r;
}

/* ------------------------------------------------------------------ */
/* Environment */

static const char *const reserved_env[] = {
	"MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "NODE_RANK", "NNODES",
	"GPUS_PER_NODE",
};

static bool
is_reserved_env(const char *name)
{
	if (strncmp(name, "TRAINYARD_", 10) == 0)
		return true;
	for (size_t i = 0; i < KC_ARRAY_SIZE(reserved_env); i++)
		if (strcmp(name, reserved_env[i]) == 0)
			return true;
	return false;
}

static bool
check_env_var(struct vctx *c, struct json_object *e, const char *field)
{
	const char *name = kc_json_str(e, "name");
	char f[460];

	if (!is_type(e, json_type_object)) {
		model_problem(c->probs, field, "must be a map with name and value (or valueFrom)");
		return false;
	}
	snprintf(f, sizeof(f), "%s.name", field);
	if (name == NULL || !is_env_name(name)) {
		model_problem(c->probs, f, "\"%.64s\" is not a valid variable name (letters, "
		    "digits, '_', '-' and '.', not starting with a digit)",
		    name != NULL ? name : "");
		return false;
	}
	if (is_reserved_env(name)) {
		model_problem(c->probs, f, "%s is set by Trainyard for every node and cannot "
		    "be overridden", name);
		return false;
	}
	if (kc_json_get(e, "value") != NULL && kc_json_get(e, "valueFrom") != NULL) {
		model_problem(c->probs, field, "%s sets both value and valueFrom", name);
		return false;
	}
	if (!want(c, kc_json_get(e, "value"), json_type_string, field, "a string value"))
		return false;
	return want(c, kc_json_get(e, "valueFrom"), json_type_object, field,
	    "a valueFrom map");
}

static ssize_t
env_find(struct json_object *list, const char *name, size_t upto)
{
	for (size_t i = 0; i < upto; i++) {
		const char *n = kc_json_str(json_object_array_get_idx(list, i), "name");

		if (n != NULL && strcmp(n, name) == 0)
			return (ssize_t)i;
	}
	return -1;
}

/*
 * Adds the valid entries of 'src' to spec->env: an entry replaces an
 * earlier list's entry of the same name in place, or is appended. A name
 * twice in 'src' itself is a problem.
 */
static int
merge_env(struct vctx *c, struct json_object *src, const char *where)
{
	struct json_object *env = c->spec->env, *copy;
	char field[440];
	ssize_t at;
	int r;

	if (src == NULL || !want(c, src, json_type_array, where, "a list of variables"))
		return 0;
	for (size_t i = 0; i < json_object_array_length(src); i++) {
		struct json_object *e = json_object_array_get_idx(src, i);

		snprintf(field, sizeof(field), "%s[%zu]", where, i);
		if (!check_env_var(c, e, field))
			continue;
		if (env_find(src, kc_json_str(e, "name"), i) >= 0) {
			model_problem(c->probs, field, "%s is set twice in %s", kc_json_str(e,
			    "name"), where);
			continue;
		}
		if ((copy = kc_json_copy(e)) == NULL)
			return -ENOMEM;
		at = env_find(env, kc_json_str(e, "name"), json_object_array_length(env));
		if (at < 0)
			r = kc_json_append(env, copy);
		else if (json_object_array_put_idx(env, (size_t)at, copy) < 0) {
			json_object_put(copy);
			r = -ENOMEM;
		} else
			r = 0;
		if (r < 0)
			return r;
	}
	return 0;
}

static int
v_env(struct vctx *c)
{
	char where[400];
	int r;

	if ((c->spec->env = json_object_new_array()) == NULL)
		return -ENOMEM;
	snprintf(where, sizeof(where), "%sspec.env", c->pfx);
	if (c->profile != NULL && (r = merge_env(c, kc_json_get(c->pspec, "env"),
	    where)) < 0)
		return r;
	return merge_env(c, kc_json_get(c->rspec, "env"), "spec.env");
}

/* ------------------------------------------------------------------ */
/* The container */

static void
v_ports(struct vctx *c)
{
	struct json_object *ports = kc_json_get(c->rspec, "ports");
	char field[64];

	c->spec->master_port = TY_MASTER_PORT;
	if (!want(c, ports, json_type_array, "spec.ports", "a list of ports"))
		return;
	for (size_t i = 0; ports != NULL && i < json_object_array_length(ports); i++) {
		struct json_object *p = json_object_array_get_idx(ports, i);
		const char *name = kc_json_str(p, "name"), *proto = kc_json_str(p, "protocol");
		int64_t port = kc_json_int(p, 0, "containerPort");

		snprintf(field, sizeof(field), "spec.ports[%zu]", i);
		if (port < 1 || port > 65535)
			model_problem(c->probs, field, "containerPort must be 1 to 65535");
		if (name != NULL && !is_port_name(name))
			model_problem(c->probs, field, "name \"%.32s\" must be at most 15 lowercase "
			    "letters, digits and '-', with at least one letter", name);
		if (proto != NULL && strcmp(proto, "TCP") != 0 && strcmp(proto, "UDP") != 0 &&
		    strcmp(proto, "SCTP") != 0)
			model_problem(c->probs, field, "protocol must be TCP, UDP or SCTP");
		for (size_t j = 0; name != NULL && j < i; j++) {
			const char *other = kc_json_str(json_object_array_get_idx(ports, j),
			    "name");

			if (other != NULL && strcmp(other, name) == 0)
				model_problem(c->probs, field, "name \"%.32s\" is used twice", name);
		}
		if (name != NULL && strcmp(name, "master") == 0 && port >= 1 && port <= 65535)
			c->spec->master_port = (int32_t)port;
	}
}

static int
copy_key(struct json_object *dst, const char *dkey, const struct json_object *src,
    const char *skey)
{
	struct json_object *v = kc_json_get(src, skey);

	if (v == NULL)
		return 0;
	return kc_json_put(dst, dkey, kc_json_copy(v));
}

static int
v_container(struct vctx *c)
{
	struct ty_spec *s = c->spec;
	struct json_object *ctr, *res;
	const char *image = kc_json_str(c->rspec, "image");
	int r;

	if (image == NULL || image[0] == '\0')
		model_problem(c->probs, "spec.image", "required: the container image every "
		    "node runs");
	want(c, kc_json_get(c->rspec, "command"), json_type_array, "spec.command",
	    "a list of strings");
	want(c, kc_json_get(c->rspec, "args"), json_type_array, "spec.args",
	    "a list of strings");
	want(c, kc_json_get(c->rspec, "workingDir"), json_type_string, "spec.workingDir",
	    "a string");
	want(c, kc_json_get(c->rspec, "volumeMounts"), json_type_array,
	    "spec.volumeMounts", "a list of volume mounts");
	want(c, kc_json_get(c->rspec, "securityContext"), json_type_object,
	    "spec.securityContext", "a container securityContext");
	v_ports(c);
	if ((s->container = ctr = json_object_new_object()) == NULL)
		return -ENOMEM;
	if ((r = kc_json_set_str(ctr, "name", "main")) < 0 ||
	    (r = kc_json_set_str(ctr, "image", image != NULL ? image : "")) < 0 ||
	    (r = copy_key(ctr, "command", c->rspec, "command")) < 0 ||
	    (r = copy_key(ctr, "args", c->rspec, "args")) < 0 ||
	    (r = copy_key(ctr, "workingDir", c->rspec, "workingDir")) < 0 ||
	    (r = copy_key(ctr, "ports", c->rspec, "ports")) < 0)
		return r;
	if ((res = kc_json_ensure_obj(ctr, "resources")) == NULL ||
	    (r = kc_json_put(res, "requests", kc_json_copy(s->requests))) < 0 ||
	    (r = kc_json_put(res, "limits", kc_json_copy(s->limits))) < 0)
		return r ? r : -ENOMEM;
	if ((r = copy_key(ctr, "volumeMounts", c->rspec, "volumeMounts")) < 0 ||
	    (r = copy_key(ctr, "securityContext", c->rspec, "securityContext")) < 0 ||
	    (r = kc_json_set_str(ctr, "terminationMessagePolicy",
	    "FallbackToLogsOnError")) < 0)
		return r;
	s->ports = kc_json_get(ctr, "ports");
	return 0;
}

/* ------------------------------------------------------------------ */
/* Labels, annotations, node selection, tolerations */

static bool
is_reserved_key(const char *k)
{
	return strncmp(k, "trainyard.dev/", 14) == 0 || strcmp(k, TY_LABEL_MANAGED_BY) == 0 ||
	    strcmp(k, TY_PG_LABEL) == 0 || strcmp(k, TY_PG_LABEL_OLD) == 0;
}

/* A map of strings (labels when 'labels'), merged into *dst. */
static int
merge_map(struct vctx *c, struct json_object *src, const char *field, bool labels,
    bool reserved, struct json_object **dst)
{
	struct kc_label_selector *ls = NULL;
	struct kc_status st = { 0 };
	int r;

	if (src == NULL || !want(c, src, json_type_object, field, "a map of strings"))
		return 0;
	json_object_object_foreach(src, key, val) {
		if (!is_type(val, json_type_string)) {
			model_problem(c->probs, field, "%.100s: the value must be a string", key);
			return 0;
		}
		if (reserved && is_reserved_key(key)) {
			model_problem(c->probs, field, "%.100s is set by Trainyard", key);
			return 0;
		}
	}
	if (labels) {
		r = kc_label_selector_from_set(src, &ls, &st);
		ls = kc_label_selector_free(ls);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			model_problem(c->probs, field, "%s", st.message);
			return 0;
		}
	}
	if (*dst == NULL && (*dst = json_object_new_object()) == NULL)
		return -ENOMEM;
	json_object_object_foreach(src, k2, v2)
		if ((r = kc_json_put(*dst, k2, kc_json_copy(v2))) < 0)
			return r;
	return 0;
}

static struct json_object *
zone_rule(struct vctx *c, char *field, size_t size)
{
	struct json_object *rules = kc_json_get(c->pspec, "zoneSelectors");
	int32_t n = c->spec->nodes;

	for (size_t i = 0; rules != NULL && i < json_object_array_length(rules); i++) {
		struct json_object *z = json_object_array_get_idx(rules, i);
		int64_t lo = kc_json_int(z, 1, "minNodes"), hi = kc_json_int(z, TY_NODES_MAX,
		    "maxNodes");

		if (n >= lo && n <= hi) {
			snprintf(field, size, "%sspec.zoneSelectors[%zu].nodeSelector",
			    c->pfx, i);
			return kc_json_get(z, "nodeSelector");
		}
	}
	return NULL;
}

static int
v_zone(struct vctx *c, struct json_object **sel)
{
	struct json_object *rules = kc_json_get(c->pspec, "zoneSelectors");
	const char *key = kc_json_str(c->pspec, "zoneTopologyKey");
	struct json_object *rule;
	char field[400], list[256] = "";
	size_t len = 0;

	if (key != NULL && key[0] != '\0')
		kc_strlcpy(c->spec->zone_key, key, sizeof(c->spec->zone_key));
	snprintf(field, sizeof(field), "%sspec.zoneSelectors", c->pfx);
	if (rules == NULL || !want(c, rules, json_type_array, field, "a list of rules") ||
	    json_object_array_length(rules) == 0 || c->spec->nodes == 0)
		return 0;
	if ((rule = zone_rule(c, field, sizeof(field))) != NULL)
		return merge_map(c, rule, field, false, false, sel);
	for (size_t i = 0; i < json_object_array_length(rules) && len < sizeof(list); i++) {
		struct json_object *z = json_object_array_get_idx(rules, i);

		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%" PRId64 "-%"
		    PRId64, i > 0 ? ", " : "", kc_json_int(z, 1, "minNodes"),
		    kc_json_int(z, TY_NODES_MAX, "maxNodes"));
	}
	model_problem(c->probs, "spec.nodes", "no zone of ResourceProfile \"%s\" takes runs of "
	    "%d nodes (its zoneSelectors take %s nodes)", c->spec->profile,
	    c->spec->nodes, list);
	return 0;
}

static int
append_all(struct vctx *c, struct json_object *dst, struct json_object *src,
    const char *field)
{
	int r;

	if (src == NULL || !want(c, src, json_type_array, field, "a list of tolerations"))
		return 0;
	for (size_t i = 0; i < json_object_array_length(src); i++) {
		struct json_object *t = json_object_array_get_idx(src, i);

		if (!is_type(t, json_type_object)) {
			model_problem(c->probs, field, "item %zu must be a toleration map", i);
			continue;
		}
		if ((r = kc_json_append(dst, kc_json_copy(t))) < 0)
			return r;
	}
	return 0;
}

static bool
has_toleration(struct json_object *tols, const char *key)
{
	for (size_t i = 0; i < json_object_array_length(tols); i++) {
		const char *k = kc_json_str(json_object_array_get_idx(tols, i), "key");

		if (k != NULL && strcmp(k, key) == 0)
			return true;
	}
	return false;
}

static int
node_failure_tolerations(const struct ty_config *cfg, struct json_object *tols)
{
	static const char *const keys[] = {
		"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
	};
	struct json_object *t;
	int r;

	for (size_t i = 0; i < KC_ARRAY_SIZE(keys); i++) {
		if (has_toleration(tols, keys[i]))
			continue;
		if ((t = json_object_new_object()) == NULL)
			return -ENOMEM;
		if ((r = kc_json_append(tols, t)) < 0 ||
		    (r = kc_json_set_str(t, "key", keys[i])) < 0 ||
		    (r = kc_json_set_str(t, "operator", "Exists")) < 0 ||
		    (r = kc_json_set_str(t, "effect", "NoExecute")) < 0 ||
		    (r = kc_json_set_int(t, "tolerationSeconds",
		    cfg->node_failure_toleration_s)) < 0)
			return r;
	}
	return 0;
}

static int
v_scheduling(struct vctx *c, struct json_object *ps)
{
	struct json_object *tspec = kc_json_get(c->rspec, "template", "spec");
	struct json_object *sel = NULL, *tols;
	char field[400];
	int r;

	snprintf(field, sizeof(field), "%sspec.nodeSelector", c->pfx);
	if ((r = merge_map(c, kc_json_get(c->pspec, "nodeSelector"), field, false, false,
	    &sel)) < 0 || (r = v_zone(c, &sel)) < 0 ||
	    (r = merge_map(c, kc_json_get(tspec, "nodeSelector"),
	    "spec.template.spec.nodeSelector", false, false, &sel)) < 0) {
		kc_json_putp(&sel);
		return r;
	}
	if (sel != NULL && (r = kc_json_put(ps, "nodeSelector", sel)) < 0)
		return r;
	if ((tols = json_object_new_array()) == NULL ||
	    (r = kc_json_put(ps, "tolerations", tols)) < 0)
		return tols == NULL ? -ENOMEM : r;
	snprintf(field, sizeof(field), "%sspec.tolerations", c->pfx);
	if ((r = append_all(c, tols, kc_json_get(c->pspec, "tolerations"), field)) < 0 ||
	    (r = append_all(c, tols, kc_json_get(tspec, "tolerations"),
	    "spec.template.spec.tolerations")) < 0)
		return r;
	return node_failure_tolerations(c->cfg, tols);
}

static void
v_priority(struct vctx *c)
{
	const char *key = c->spec->preemptible ? "preemptiblePriorityClassName" :
	    "priorityClassName";
	const char *pc = kc_json_str(c->pspec, key);
	char field[400];

	if (pc == NULL || pc[0] == '\0')
		pc = c->spec->preemptible ? c->cfg->preemptible_priority_class :
		    c->cfg->default_priority_class;
	else if (!is_subdomain(pc)) {
		snprintf(field, sizeof(field), "%sspec.%s", c->pfx, key);
		model_problem(c->probs, field, "\"%.64s\" is not a PriorityClass name", pc);
		return;
	}
	kc_strlcpy(c->spec->priority_class, pc, sizeof(c->spec->priority_class));
}

static int
v_template(struct vctx *c, struct json_object *ps)
{
	static const char *const host_keys[] = { "hostNetwork", "hostPID", "hostIPC" };
	struct json_object *tspec = kc_json_get(c->rspec, "template", "spec");
	struct json_object *tmeta = kc_json_get(c->rspec, "template", "metadata");
	const char *sa = kc_json_str(tspec, "serviceAccountName");
	char field[400];
	int r;

	want(c, kc_json_get(tspec, "volumes"), json_type_array,
	    "spec.template.spec.volumes", "a list of volumes");
	want(c, kc_json_get(tspec, "imagePullSecrets"), json_type_array,
	    "spec.template.spec.imagePullSecrets", "a list of {name: ...}");
	want(c, kc_json_get(tspec, "securityContext"), json_type_object,
	    "spec.template.spec.securityContext", "a pod securityContext");
	if (sa != NULL && !is_subdomain(sa))
		model_problem(c->probs, "spec.template.spec.serviceAccountName", "\"%.64s\" is "
		    "not a ServiceAccount name", sa);
	if ((r = copy_key(ps, "serviceAccountName", tspec, "serviceAccountName")) < 0 ||
	    (r = copy_key(ps, "imagePullSecrets", tspec, "imagePullSecrets")) < 0 ||
	    (r = copy_key(ps, "securityContext", tspec, "securityContext")) < 0 ||
	    (r = copy_key(ps, "volumes", tspec, "volumes")) < 0)
		return r;
	for (size_t i = 0; i < KC_ARRAY_SIZE(host_keys); i++) {
		snprintf(field, sizeof(field), "spec.template.spec.%s", host_keys[i]);
		if (want(c, kc_json_get(tspec, host_keys[i]), json_type_boolean, field,
		    "true or false") && kc_json_bool(tspec, false, host_keys[i]) &&
		    (r = kc_json_set_bool(ps, host_keys[i], true)) < 0)
			return r;
	}
	snprintf(field, sizeof(field), "%sspec.podAnnotations", c->pfx);
	if ((r = merge_map(c, kc_json_get(c->pspec, "podAnnotations"), field, false, true,
	    &c->spec->annotations)) < 0 ||
	    (r = merge_map(c, kc_json_get(tmeta, "annotations"),
	    "spec.template.metadata.annotations", false, true, &c->spec->annotations)) < 0)
		return r;
	return merge_map(c, kc_json_get(tmeta, "labels"), "spec.template.metadata.labels",
	    true, true, &c->spec->labels);
}

/* ------------------------------------------------------------------ */
/* The security envelope */

/*
 * What a Run's pods may ask for, from its profile's spec.security; without
 * a profile, or without the field, the tightest envelope: nothing
 * privileged, no host namespaces or ports, no added capabilities, no
 * hostPath, and the volume types of default_volumes. The rest of Pod
 * Security's baseline level (seccomp, AppArmor, SELinux, /proc, sysctls,
 * Windows host processes), which no profile relaxes, is its engine's
 * (kc/podsecurity.h). Each violation is worded as Pod Security words it,
 * "reason (detail)", and all of them make one problem.
 */
struct envelope {
	bool				 privileged, host_network, host_pid, host_ipc;
	const struct json_object	*caps;		/* allowedCapabilities */
	const struct json_object	*volumes;	/* allowedVolumeTypes; NULL: default */
	const struct json_object	*host_paths;	/* allowedHostPaths */
};

/* The volume types of the tightest envelope (Pod Security's restricted list). */
static const char *const default_volumes[] = {
	"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
	"projected", "secret",
};

static bool
in_list(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

/* A capability's name without CAP_, upper case, as the runtimes read it. */
static void
cap_name(const char *s, char *buf, size_t size)
{
	size_t i = 0;

	if (strncasecmp(s, "CAP_", 4) == 0)
		s += 4;
	for (; s[i] != '\0' && i + 1 < size; i++)
		buf[i] = (char)(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 'a' + 'A' : s[i]);
	buf[i] = '\0';
}

/* Whether the JSON list 'l' holds 's' or "*" ('caps': compared as capabilities). */
static bool
listed(const struct json_object *l, const char *s, bool caps)
{
	char a[64], b[64];

	/* No capability has a longer name: never let a cut one match. */
	if (caps && strlen(s) >= sizeof(a))
		return false;
	if (caps)
		cap_name(s, a, sizeof(a));
	for (size_t i = 0; l != NULL && json_object_is_type(l, json_type_array) &&
	    i < json_object_array_length(l); i++) {
		const char *e = json_object_get_string(json_object_array_get_idx(l, i));

		if (e == NULL || !json_object_is_type(json_object_array_get_idx(l, i),
		    json_type_string))
			continue;
		if (strcmp(e, "*") == 0)
			return true;
		if (caps) {
			cap_name(e, b, sizeof(b));
			if (strlen(e) < sizeof(b) && strcmp(a, b) == 0)
				return true;
		} else if (strcmp(e, s) == 0)
			return true;
	}
	return false;
}

/* One violation "reason (detail)" appended to 'b', comma-separated. */
static void
violation(struct kc_sbuf *b, unsigned *n, const char *reason, const char *fmt, ...)
    _printf_(4, 5);

static void
violation(struct kc_sbuf *b, unsigned *n, const char *reason, const char *fmt, ...)
{
	char detail[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	kc_sbuf_printf(b, "%s%s (%s)", *n > 0 ? ", " : "", reason, detail);
	(*n)++;
}

static void
env_read(struct vctx *c, struct envelope *e)
{
	const struct json_object *sec = kc_json_get(c->pspec, "security");
	static const char *const lists[] = {
		"allowedCapabilities", "allowedVolumeTypes", "allowedHostPaths",
	};
	char field[400];

	*e = (struct envelope){ 0 };
	if (c->profile == NULL || sec == NULL)
		return;
	snprintf(field, sizeof(field), "%sspec.security", c->pfx);
	if (!want(c, sec, json_type_object, field, "an object"))
		return;
	for (size_t i = 0; i < KC_ARRAY_SIZE(lists); i++) {
		snprintf(field, sizeof(field), "%sspec.security.%s", c->pfx, lists[i]);
		want(c, kc_json_get(sec, lists[i]), json_type_array, field, "a list");
	}
	e->privileged = kc_json_bool(sec, false, "allowPrivileged");
	e->host_network = kc_json_bool(sec, false, "allowHostNetwork");
	e->host_pid = kc_json_bool(sec, false, "allowHostPID");
	e->host_ipc = kc_json_bool(sec, false, "allowHostIPC");
	e->caps = kc_json_arr_of(sec, "allowedCapabilities");
	e->volumes = kc_json_arr_of(sec, "allowedVolumeTypes");
	e->host_paths = kc_json_arr_of(sec, "allowedHostPaths");
}

/* Whether 'path' is 'prefix' or below it, by whole components. */
static bool
path_under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	while (n > 1 && prefix[n - 1] == '/')
		n--;
	if (n == 1 && prefix[0] == '/')
		return path[0] == '/';
	return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* An absolute path without "." or ".." components nor "//". */
static bool
path_clean(const char *p)
{
	if (p[0] != '/')
		return false;
	for (const char *s = p; *s != '\0'; s++) {
		if (*s != '/')
			continue;
		if (s[1] == '/' || (s[1] == '.' && (s[2] == '/' || s[2] == '\0')) ||
		    (s[1] == '.' && s[2] == '.' && (s[3] == '/' || s[3] == '\0')))
			return false;
	}
	return true;
}

/*
 * The allowedHostPaths entry 'path' falls under (NULL: none), preferring
 * a writable one.
 */
static const struct json_object *
host_path_rule(const struct envelope *e, const char *path)
{
	const struct json_object *found = NULL;

	for (size_t i = 0; e->host_paths != NULL &&
	    i < json_object_array_length(e->host_paths); i++) {
		const struct json_object *r = json_object_array_get_idx(e->host_paths, i);
		const char *pfx = kc_json_str(r, "pathPrefix");

		if (pfx == NULL || pfx[0] != '/' || !path_under(path, pfx))
			continue;
		if (!kc_json_bool(r, false, "readOnly"))
			return r;
		found = r;
	}
	return found;
}

/* Whether every mount of volume 'name' in the main container is read-only. */
static bool
mounted_read_only(const struct vctx *c, const char *name)
{
	const struct json_object *m = kc_json_arr_of(c->rspec, "volumeMounts");

	for (size_t i = 0; m != NULL && i < json_object_array_length(m); i++) {
		const struct json_object *v = json_object_array_get_idx(m, i);
		const char *n = kc_json_str(v, "name");

		if (n != NULL && strcmp(n, name) == 0 && !kc_json_bool(v, false, "readOnly"))
			return false;
	}
	return true;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Appends "\"s\"" to the list 'l' of 'n' entries, ", "-separated, once. */
static void
quote_into(struct kc_sbuf *l, unsigned *n, const char *s)
{
	char q[96];

	kc_sbuf_quoted(q, sizeof(q), s);
	if (strstr(l->buf, q) != NULL)
		return;
	kc_sbuf_printf(l, "%s%s", *n > 0 ? ", " : "", q);
	(*n)++;
}

static void
env_volumes(const struct vctx *c, const struct envelope *e, struct kc_sbuf *b, unsigned *n)
{
	const struct json_object *vols = kc_json_arr_of(kc_json_get(c->rspec, "template",
	    "spec"), "volumes");
	char hp[256] = "", rv[256] = "", rt[256] = "";
	struct kc_sbuf lhp, lrv, lrt;
	unsigned nhp = 0, nrv = 0, nrt = 0, ntypes = 0;
	const char *types[32] = { NULL };

	kc_sbuf_init(&lhp, hp, sizeof(hp));
	kc_sbuf_init(&lrv, rv, sizeof(rv));
	kc_sbuf_init(&lrt, rt, sizeof(rt));
	for (size_t i = 0; vols != NULL && i < json_object_array_length(vols); i++) {
		struct json_object *v = json_object_array_get_idx(vols, i);
		const char *name = kc_json_str(v, "name");
		char q[96];

		if (!is_type(v, json_type_object))
			continue;
		name = name != NULL ? name : "";
		json_object_object_foreach(v, type, src) {
			const char *path = kc_json_str(src, "path");
			const struct json_object *rule;

			if (strcmp(type, "name") == 0)
				continue;
			if (strcmp(type, "hostPath") != 0) {
				if (e->volumes != NULL ? !listed(e->volumes, type, false) :
				    !in_list(type, default_volumes, KC_ARRAY_SIZE(default_volumes))) {
					quote_into(&lrv, &nrv, name);
					if (ntypes < KC_ARRAY_SIZE(types))
						types[ntypes++] = type;
				}
				continue;
			}
			if (path == NULL || !path_clean(path) ||
			    (rule = host_path_rule(e, path)) == NULL)
				quote_into(&lhp, &nhp, name);
			else if (kc_json_bool(rule, false, "readOnly") &&
			    !mounted_read_only(c, name))
				violation(b, n, "hostPath volumes", "volume %s must be mounted "
				    "readOnly: %.100s is allowed read-only",
				    kc_sbuf_quoted(q, sizeof(q), name), kc_json_str(rule, "pathPrefix"));
		}
	}
	if (nhp > 0)
		violation(b, n, "hostPath volumes", "%s %s", nhp > 1 ? "volumes" : "volume", hp);
	/* The types sorted, as Pod Security lists a set. */
	qsort(types, ntypes, sizeof(types[0]), cmp_str);
	for (unsigned i = 0; i < ntypes; i++)
		quote_into(&lrt, &nrt, types[i]);
	if (nrv > 0)
		violation(b, n, "restricted volume types", "%s %s %s %s %s", nrv > 1 ? "volumes" :
		    "volume", rv, nrv > 1 ? "use" : "uses", nrt > 1 ? "restricted volume types" :
		    "restricted volume type", rt);
}

static void
env_host(const struct vctx *c, const struct envelope *e, struct kc_sbuf *b, unsigned *n)
{
	const struct json_object *ts = kc_json_get(c->rspec, "template", "spec");
	const struct json_object *ports = kc_json_arr_of(c->rspec, "ports");
	char list[64] = "";
	struct kc_sbuf l;

	/* Sorted, as Pod Security lists them. */
	kc_sbuf_init(&l, list, sizeof(list));
	if (kc_json_bool(ts, false, "hostIPC") && !e->host_ipc)
		kc_sbuf_puts(&l, "hostIPC");
	if (kc_json_bool(ts, false, "hostNetwork") && !e->host_network)
		kc_sbuf_printf(&l, "%shostNetwork", list[0] != '\0' ? ", " : "");
	if (kc_json_bool(ts, false, "hostPID") && !e->host_pid)
		kc_sbuf_printf(&l, "%shostPID", list[0] != '\0' ? ", " : "");
	if (list[0] != '\0')
		violation(b, n, "host namespaces", "%s", list);
	for (size_t i = 0; ports != NULL && i < json_object_array_length(ports); i++) {
		int64_t hp = kc_json_int(json_object_array_get_idx(ports, i), 0, "hostPort");

		if (hp != 0)
			violation(b, n, "hostPort", "container \"main\" uses hostPort %" PRId64, hp);
	}
}

static void
env_caps(const struct vctx *c, const struct envelope *e, struct kc_sbuf *b, unsigned *n)
{
	const struct json_object *add = kc_json_arr_of(kc_json_get(c->rspec,
	    "securityContext", "capabilities"), "add");
	char list[256] = "", q[72];
	struct kc_sbuf l;

	kc_sbuf_init(&l, list, sizeof(list));
	for (size_t i = 0; add != NULL && i < json_object_array_length(add); i++) {
		const char *cap = json_object_get_string(json_object_array_get_idx(add, i));

		if (cap == NULL || listed(e->caps, cap, true))
			continue;
		kc_sbuf_printf(&l, "%s%s", list[0] != '\0' ? ", " : "",
		    kc_sbuf_quoted(q, sizeof(q), cap));
	}
	if (list[0] != '\0')
		violation(b, n, "non-default capabilities", "container \"main\" must not "
		    "include %s in securityContext.capabilities.add", list);
}

/*
 * The rest of Pod Security's baseline level, which no profile relaxes, by
 * its engine: the pod's securityContext, the main container's without
 * what the envelope governs (privileged, added capabilities), the
 * template's annotations (AppArmor). Appends its reasons to 'b'.
 */
static int
env_baseline(const struct vctx *c, struct kc_sbuf *b, unsigned *n)
{
	_cleanup_(kc_json_putp) struct json_object *meta = json_object_new_object();
	_cleanup_(kc_json_putp) struct json_object *spec = json_object_new_object();
	const struct kc_psa_policy baseline = { .level = KC_PSA_BASELINE };
	struct json_object *ctrs, *ctr, *sc;
	char list[768] = "";
	struct kc_sbuf l;
	int r;

	if (meta == NULL || spec == NULL)
		return -ENOMEM;
	if ((r = copy_key(meta, "annotations", kc_json_get(c->rspec, "template", "metadata"),
	    "annotations")) < 0 ||
	    (r = copy_key(spec, "securityContext", kc_json_get(c->rspec, "template", "spec"),
	    "securityContext")) < 0 ||
	    (r = kc_json_put(spec, "containers", ctrs = json_object_new_array())) < 0 ||
	    (r = kc_json_append(ctrs, ctr = json_object_new_object())) < 0 ||
	    (r = kc_json_set_str(ctr, "name", "main")) < 0 ||
	    (r = copy_key(ctr, "securityContext", c->rspec, "securityContext")) < 0)
		return r;
	if ((sc = kc_json_obj_of(ctr, "securityContext")) != NULL) {
		json_object_object_del(sc, "privileged");
		if (kc_json_obj_of(sc, "capabilities") != NULL)
			json_object_object_del(kc_json_obj_of(sc, "capabilities"), "add");
	}
	kc_sbuf_init(&l, list, sizeof(list));
	if ((r = kc_psa_check(meta, spec, &baseline, &l)) <= 0)
		return r;
	kc_sbuf_printf(b, "%s%s", *n > 0 ? ", " : "", list);
	*n += (unsigned)r;
	return 0;
}

static int
v_envelope(struct vctx *c)
{
	const struct json_object *csc = kc_json_get(c->rspec, "securityContext");
	struct envelope e;
	char list[1024] = "";
	struct kc_sbuf b;
	unsigned n = 0;
	int r;

	env_read(c, &e);
	kc_sbuf_init(&b, list, sizeof(list));
	if (kc_json_bool(csc, false, "privileged") && !e.privileged)
		violation(&b, &n, "privileged", "container \"main\" must not set "
		    "securityContext.privileged=true");
	env_caps(c, &e, &b, &n);
	env_host(c, &e, &b, &n);
	env_volumes(c, &e, &b, &n);
	if ((r = env_baseline(c, &b, &n)) < 0)
		return r;
	if (n == 0)
		return 0;
	c->probs->envelope = c->probs->n < TY_PROBLEMS_MAX ? c->probs->n + 1 : 0;
	if (c->spec->profile[0] != '\0')
		model_problem(c->probs, "spec", "outside the security envelope of "
		    "ResourceProfile \"%s\": %s", c->spec->profile, list);
	else
		model_problem(c->probs, "spec", "outside the default security envelope "
		    "(no ResourceProfile): %s", list);
	return 0;
}

/* ------------------------------------------------------------------ */

struct ty_spec *
model_spec_free(struct ty_spec *s)
{
	if (s == NULL)
		return NULL;
	json_object_put(s->requests);
	json_object_put(s->limits);
	json_object_put(s->container);
	json_object_put(s->env);
	json_object_put(s->pod_spec);
	json_object_put(s->labels);
	json_object_put(s->annotations);
	json_object_put(s->ingress_from);
	return kc_free(s);
}

static int
validate_all(struct vctx *c)
{
	int r;

	v_profile_ref(c);
	v_identity(c);
	v_nodes(c);
	v_lifecycle(c);
	if ((r = v_resources(c)) < 0 || (r = v_env(c)) < 0 || (r = v_container(c)) < 0)
		return r;
	if ((c->spec->pod_spec = json_object_new_object()) == NULL)
		return -ENOMEM;
	v_priority(c);
	if ((r = v_scheduling(c, c->spec->pod_spec)) < 0 ||
	    (r = v_template(c, c->spec->pod_spec)) < 0)
		return r;
	return v_envelope(c);
}

/* spec.network.ingressFrom of the v1beta1 view, if any: NetworkPolicy peers. */
static int
v_network(struct vctx *c, const struct json_object *beta)
{
	struct json_object *net = kc_json_get(beta, "spec", "network"), *from;
	char field[64];

	if (!want(c, net, json_type_object, "spec.network", "an object with ingressFrom"))
		return 0;
	from = kc_json_get(net, "ingressFrom");
	if (!want(c, from, json_type_array, "spec.network.ingressFrom",
	    "a list of NetworkPolicy peers") || from == NULL)
		return 0;
	if (json_object_array_length(from) > TY_INGRESS_FROM_MAX) {
		model_problem(c->probs, "spec.network.ingressFrom", "%zu peers is more than the "
		    "%d allowed", json_object_array_length(from), TY_INGRESS_FROM_MAX);
		return 0;
	}
	for (size_t i = 0; i < json_object_array_length(from); i++) {
		snprintf(field, sizeof(field), "spec.network.ingressFrom[%zu]", i);
		if (!is_type(json_object_array_get_idx(from, i), json_type_object))
			model_problem(c->probs, field, "must be a NetworkPolicyPeer (podSelector, "
			    "namespaceSelector or ipBlock)");
	}
	if ((c->spec->ingress_from = kc_json_copy(from)) == NULL)
		return -ENOMEM;
	return 0;
}

/*
 * The views of 'run' that validation reads: the v1alpha1 shape it checks
 * (the Run itself, or converted) and, when it has v1beta1-only fields, the
 * v1beta1 one. KC_EINVALID (a problem noted) for a malformed Run.
 */
static int
views(const struct json_object *run, struct json_object **alpha, struct json_object **beta,
    struct ty_problems *probs)
{
	struct kc_status st = { 0 };
	int r = 0;

	*alpha = *beta = NULL;
	if (is_beta(run)) {
		if ((*beta = kc_json_copy(run)) == NULL)
			return -ENOMEM;
		r = ty_convert(run, TY_V1ALPHA1, alpha, &st);
	} else if (kc_json_get(run, "metadata", "annotations", TY_CONVERT_ANNOTATION) != NULL) {
		r = ty_convert(run, TY_V1BETA1, beta, &st);
	}
	if (r == KC_EINVALID) {
		model_problem(probs, "spec", "%s", st.message);
		return r;
	}
	return r;
}

static bool
is_path_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	    ch == '.' || ch == '_' || ch == '[' || ch == ']' || ch == '/' || ch == '-';
}

/*
 * Rewrites, in the NUL-terminated 'text' of 'size' bytes, every v1alpha1
 * field path ("spec.image", "spec.resources.limits[cpu]") into its
 * v1beta1 path (convert.h), truncating to fit.
 */
static void
beta_paths(char *text, size_t size)
{
	char out[512], path[256], tok[256];
	size_t o = 0, i = 0;

	while (text[i] != '\0' && o + 1 < sizeof(out)) {
		size_t n = 0;

		if (strncmp(text + i, "spec.", 5) != 0 ||
		    (i > 0 && is_path_char(text[i - 1]))) {
			out[o++] = text[i++];
			continue;
		}
		while (is_path_char(text[i + n]) && n + 1 < sizeof(tok)) {
			tok[n] = text[i + n];
			n++;
		}
		tok[n] = '\0';
		ty_convert_beta_path(tok, path, sizeof(path));
		o += kc_strlcpy(out + o, path, sizeof(out) - o);
		if (o >= sizeof(out))
			o = sizeof(out) - 1;
		i += n;
	}
	out[o] = '\0';
	kc_strlcpy(text, out, size);
}

int
model_validate(const struct json_object *run, const struct json_object *profile,
    const struct ty_config *cfg, struct ty_spec **ret, struct ty_problems *probs)
{
	_cleanup_(model_spec_freep) struct ty_spec *s = NULL;
	_cleanup_(kc_json_putp) struct json_object *alpha = NULL, *beta = NULL;
	struct vctx c = { .run = run, .profile = profile, .cfg = cfg, .probs = probs };
	const char *v = kc_json_str(run, "apiVersion");
	int r;

	memset(probs, 0, sizeof(*probs));
	if ((r = views(run, &alpha, &beta, probs)) < 0)
		return r;
	if (alpha != NULL)
		c.run = alpha;
	if ((s = kc_calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	kc_strlcpy(s->api_version, v != NULL && (strcmp(v, TY_V1BETA1) == 0) ? TY_V1BETA1 :
	    TY_V1ALPHA1, sizeof(s->api_version));
	c.spec = s;
	c.rspec = kc_json_get(c.run, "spec");
	c.pspec = kc_json_get(profile, "spec");
	if (!is_type(c.rspec, json_type_object)) {
		model_problem(probs, "spec", "missing: a Run needs at least nodes and image");
		return KC_EINVALID;
	}
	if ((r = validate_all(&c)) < 0 || (r = v_network(&c, beta)) < 0)
		return r;
	if (probs->total > 0) {
		/* Name the fields as the author wrote them. */
		for (unsigned i = 0; is_beta(run) && i < probs->n; i++) {
			beta_paths(probs->p[i].field, sizeof(probs->p[i].field));
			beta_paths(probs->p[i].message, sizeof(probs->p[i].message));
		}
		return KC_EINVALID;
	}
	*ret = s;
	s = NULL;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Desired objects */

const char *
model_podgroup_api_version(enum ty_podgroup_api api)
{
	return api == TY_PODGROUP_SIGS_K8S ? "scheduling.sigs.k8s.io/v1alpha1" :
	    "scheduling.x-k8s.io/v1alpha1";
}

static int
owner_refs(const struct ty_spec *s, struct json_object *meta)
{
	struct json_object *refs, *ref;
	int r;

	if ((refs = json_object_new_array()) == NULL)
		return -ENOMEM;
	if ((r = kc_json_put(meta, "ownerReferences", refs)) < 0)
		return r;
	if ((ref = json_object_new_object()) == NULL)
		return -ENOMEM;
	if ((r = kc_json_append(refs, ref)) < 0 ||
	    (r = kc_json_set_str(ref, "apiVersion", s->api_version)) < 0 ||
	    (r = kc_json_set_str(ref, "kind", "Run")) < 0 ||
	    (r = kc_json_set_str(ref, "name", s->name)) < 0 ||
	    (r = kc_json_set_str(ref, "uid", s->uid)) < 0 ||
	    (r = kc_json_set_bool(ref, "controller", true)) < 0 ||
	    (r = kc_json_set_bool(ref, "blockOwnerDeletion", true)) < 0)
		return r;
	return 0;
}

/* A new object with apiVersion, kind and the common metadata. */
static int
object_new(const struct ty_spec *s, const char *api_version, const char *kind,
    const char *name, int64_t session, struct json_object **ret)
{
	struct json_object *o, *meta, *labels, *ann;
	char buf[24];
	int r;

	if ((o = json_object_new_object()) == NULL)
		return -ENOMEM;
	if ((r = kc_json_set_str(o, "apiVersion", api_version)) < 0 ||
	    (r = kc_json_set_str(o, "kind", kind)) < 0 ||
	    (meta = kc_json_ensure_obj(o, "metadata")) == NULL ||
	    (r = kc_json_set_str(meta, "name", name)) < 0 ||
	    (r = kc_json_set_str(meta, "namespace", s->ns)) < 0 ||
	    (labels = kc_json_ensure_obj(meta, "labels")) == NULL ||
	    (r = kc_json_set_str(labels, TY_LABEL_MANAGED_BY, TY_MANAGER)) < 0 ||
	    (r = kc_json_set_str(labels, TY_LABEL_RUN, s->name)) < 0)
		goto fail;
	snprintf(buf, sizeof(buf), "%" PRId64, session);
	if ((r = kc_json_set_str(labels, TY_LABEL_SESSION, buf)) < 0 ||
	    (ann = kc_json_ensure_obj(meta, "annotations")) == NULL)
		goto fail;
	snprintf(buf, sizeof(buf), "%" PRId64, s->generation);
	if ((r = kc_json_set_str(ann, TY_ANN_GENERATION, buf)) < 0 ||
	    (r = owner_refs(s, meta)) < 0)
		goto fail;
	*ret = o;
	return 0;
fail:
	json_object_put(o);
	return r < 0 ? r : -ENOMEM;
}

static struct json_object *
run_selector(const struct ty_spec *s)
{
	struct json_object *sel = json_object_new_object();

	if (sel == NULL || kc_json_set_str(sel, TY_LABEL_RUN, s->name) < 0)
		return json_object_put(sel), NULL;
	return sel;
}

int
model_podgroup(const struct ty_spec *s, int64_t session, enum ty_podgroup_api api,
    struct json_object **ret)
{
	struct json_object *o = NULL, *spec, *minres;
	struct kc_quantity q;
	int r;

	if (api != TY_PODGROUP_X_K8S && api != TY_PODGROUP_SIGS_K8S)
		return -EINVAL;
	if ((r = object_new(s, model_podgroup_api_version(api), "PodGroup", s->name,
	    session, &o)) < 0)
		return r;
	if ((spec = kc_json_ensure_obj(o, "spec")) == NULL ||
	    (r = kc_json_set_int(spec, "minMember", s->nodes)) < 0 ||
	    (minres = kc_json_ensure_obj(spec, "minResources")) == NULL)
		goto fail;
	json_object_object_foreach(s->requests, key, val) {
		if (kc_quantity_parse(json_object_get_string(val), &q, NULL) < 0 ||
		    kc_quantity_mul(&q, s->nodes) < 0) {
			r = -ERANGE;
			goto fail;
		}
		if ((r = put_qty(minres, key, &q)) < 0)
			goto fail;
	}
	if (s->schedule_timeout_s > 0 &&
	    (r = kc_json_set_int(spec, "scheduleTimeoutSeconds", s->schedule_timeout_s)) < 0)
		goto fail;
	*ret = o;
	return 0;
fail:
	json_object_put(o);
	return r < 0 ? r : -ENOMEM;
}

static int
service_ports(const struct ty_spec *s, struct json_object *spec)
{
	struct json_object *ports, *p;
	int r;

	if (s->ports == NULL || json_object_array_length(s->ports) == 0)
		return 0;
	if ((ports = json_object_new_array()) == NULL)
		return -ENOMEM;
	if ((r = kc_json_put(spec, "ports", ports)) < 0)
		return r;
	for (size_t i = 0; i < json_object_array_length(s->ports); i++) {
		struct json_object *cp = json_object_array_get_idx(s->ports, i);
		int64_t port = kc_json_int(cp, 0, "containerPort");
		const char *proto = kc_json_str(cp, "protocol");
		char name[16];

		if ((p = json_object_new_object()) == NULL)
			return -ENOMEM;

		/* A Service with several ports needs a name on each. */
		snprintf(name, sizeof(name), "port-%d", (int)port);
		if ((r = kc_json_append(ports, p)) < 0 ||
		    (r = kc_json_set_str(p, "name", kc_json_str(cp, "name") != NULL ?
		    kc_json_str(cp, "name") : name)) < 0 ||
		    (r = kc_json_set_str(p, "protocol", proto != NULL ? proto : "TCP")) < 0 ||
		    (r = kc_json_set_int(p, "port", port)) < 0 ||
		    (r = kc_json_set_int(p, "targetPort", port)) < 0)
			return r;
	}
	return 0;
}

int
model_service(const struct ty_spec *s, int64_t session, struct json_object **ret)
{
	struct json_object *o = NULL, *spec;
	int r;

	if ((r = object_new(s, "v1", "Service", s->name, session, &o)) < 0)
		return r;
	if ((spec = kc_json_ensure_obj(o, "spec")) == NULL ||
	    (r = kc_json_set_str(spec, "clusterIP", "None")) < 0 ||
	    (r = kc_json_put(spec, "selector", run_selector(s))) < 0 ||
	    (r = kc_json_set_bool(spec, "publishNotReadyAddresses", true)) < 0 ||
	    (r = service_ports(s, spec)) < 0) {
		json_object_put(o);
		return r < 0 ? r : -ENOMEM;
	}
	*ret = o;
	return 0;
}

static int
policy_peers(const struct ty_spec *s, const struct ty_config *cfg, struct json_object *from)
{
	struct json_object *peer;
	int r;

	if ((peer = json_object_new_object()) == NULL)
		return -ENOMEM;
	if ((r = kc_json_append(from, peer)) < 0)
		return r;
	if ((peer = kc_json_ensure_obj(peer, "podSelector")) == NULL ||
	    (r = kc_json_put(peer, "matchLabels", run_selector(s))) < 0)
		return peer == NULL ? -ENOMEM : r;
	for (size_t i = 0; cfg->ingress_peers != NULL &&
	    i < json_object_array_length(cfg->ingress_peers); i++)
		if ((r = kc_json_append(from, kc_json_copy(json_object_array_get_idx(
		    cfg->ingress_peers, i)))) < 0)
			return r;
	for (size_t i = 0; s->ingress_from != NULL &&
	    i < json_object_array_length(s->ingress_from); i++)
		if ((r = kc_json_append(from, kc_json_copy(json_object_array_get_idx(
		    s->ingress_from, i)))) < 0)
			return r;
	return 0;
}

int
model_network_policy(const struct ty_spec *s, const struct ty_config *cfg, int64_t session,
    struct json_object **ret)
{
	struct json_object *o = NULL, *spec, *sel, *types, *ingress, *rule, *from;
	int r;

	if ((r = object_new(s, "networking.k8s.io/v1", "NetworkPolicy", s->name, session,
	    &o)) < 0)
		return r;
	r = -ENOMEM;
	if ((spec = kc_json_ensure_obj(o, "spec")) == NULL ||
	    (sel = kc_json_ensure_obj(spec, "podSelector")) == NULL ||
	    (r = kc_json_put(sel, "matchLabels", run_selector(s))) < 0 ||
	    (r = kc_json_put(spec, "policyTypes", types = json_object_new_array())) < 0 ||
	    (r = kc_json_append(types, json_object_new_string("Ingress"))) < 0 ||
	    (r = kc_json_put(spec, "ingress", ingress = json_object_new_array())) < 0 ||
	    (r = kc_json_append(ingress, rule = json_object_new_object())) < 0 ||
	    (r = kc_json_put(rule, "from", from = json_object_new_array())) < 0 ||
	    (r = policy_peers(s, cfg, from)) < 0) {
		json_object_put(o);
		return r < 0 ? r : -ENOMEM;
	}
	*ret = o;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Pods */

static int
env_put(struct json_object *env, const char *name, const char *value)
{
	struct json_object *e = json_object_new_object();
	int r;

	if (e == NULL)
		return -ENOMEM;
	if ((r = kc_json_append(env, e)) < 0 ||
	    (r = kc_json_set_str(e, "name", name)) < 0 ||
	    (r = kc_json_set_str(e, "value", value)) < 0)
		return r;
	return 0;
}

static int
env_put_int(struct json_object *env, const char *name, int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return env_put(env, name, buf);
}

static int
hosts_env(const struct ty_spec *s, struct json_object *env)
{
	struct kc_buf b;
	int r = 0;

	if (s->nodes > TY_HOSTS_ENV_MAX_NODES)
		return 0;
	kc_buf_init(&b, (size_t)TY_HOSTS_ENV_MAX_NODES * 64);
	for (int32_t i = 0; i < s->nodes && r == 0; i++)
		r = kc_buf_printf(&b, "%s%s-%d", i > 0 ? "," : "", s->name, i);
	if (r == 0)
		r = env_put(env, "TRAINYARD_HOSTS", kc_buf_str(&b));
	kc_buf_free(&b);
	return r;
}

static int
pod_env(const struct ty_spec *s, int64_t session, int32_t index, struct json_object **ret)
{
	struct json_object *env = json_object_new_array();
	char master[80];
	int r;

	if (env == NULL)
		return -ENOMEM;
	snprintf(master, sizeof(master), "%s-0", s->name);
	if ((r = env_put(env, "TRAINYARD_RUN", s->name)) < 0 ||
	    (r = env_put_int(env, "TRAINYARD_SESSION", session)) < 0 ||
	    (r = env_put_int(env, "TRAINYARD_NODE_INDEX", index)) < 0 ||
	    (r = env_put_int(env, "TRAINYARD_NODES", s->nodes)) < 0 ||
	    (r = hosts_env(s, env)) < 0 ||
	    (r = env_put(env, "MASTER_ADDR", master)) < 0 ||
	    (r = env_put_int(env, "MASTER_PORT", s->master_port)) < 0 ||
	    (r = env_put_int(env, "WORLD_SIZE", s->nodes)) < 0 ||
	    (r = env_put_int(env, "RANK", index)) < 0 ||
	    (r = env_put_int(env, "NODE_RANK", index)) < 0 ||
	    (r = env_put_int(env, "NNODES", s->nodes)) < 0 ||
	    (r = env_put_int(env, "GPUS_PER_NODE", s->gpus_per_node)) < 0)
		goto fail;
	for (size_t i = 0; i < json_object_array_length(s->env); i++)
		if ((r = kc_json_append(env, kc_json_copy(json_object_array_get_idx(s->env,
		    i)))) < 0)
			goto fail;
	*ret = env;
	return 0;
fail:
	json_object_put(env);
	return r;
}

static int
pod_labels(const struct ty_spec *s, enum ty_podgroup_api api, int32_t index,
    struct json_object *meta)
{
	struct json_object *labels = kc_json_get(meta, "labels"), *ann;
	char buf[24];
	int r;

	snprintf(buf, sizeof(buf), "%d", index);
	if ((r = kc_json_set_str(labels, TY_LABEL_INDEX, buf)) < 0 ||
	    (r = kc_json_set_str(labels, TY_LABEL_PREEMPTIBLE,
	    s->preemptible ? "true" : "false")) < 0)
		return r;
	if (api == TY_PODGROUP_X_K8S && (r = kc_json_set_str(labels, TY_PG_LABEL,
	    s->name)) < 0)
		return r;
	if (api == TY_PODGROUP_SIGS_K8S && (r = kc_json_set_str(labels, TY_PG_LABEL_OLD,
	    s->name)) < 0)
		return r;
	if (s->labels != NULL) {
		json_object_object_foreach(s->labels, key, val)
			if ((r = kc_json_put(labels, key, kc_json_copy(val))) < 0)
				return r;
	}
	ann = kc_json_get(meta, "annotations");
	if (s->annotations != NULL) {
		json_object_object_foreach(s->annotations, k2, v2)
			if ((r = kc_json_put(ann, k2, kc_json_copy(v2))) < 0)
				return r;
	}
	return 0;
}

static int
pod_affinity(const struct ty_spec *s, int64_t session, struct json_object *spec)
{
	struct json_object *terms, *term, *sel, *ml, *aff;
	char buf[24];
	int r;

	if (s->zone_key[0] == '\0')
		return 0;
	snprintf(buf, sizeof(buf), "%" PRId64, session);
	if ((aff = kc_json_ensure_obj(spec, "affinity")) == NULL ||
	    (aff = kc_json_ensure_obj(aff, "podAffinity")) == NULL ||
	    (r = kc_json_put(aff, "requiredDuringSchedulingIgnoredDuringExecution",
	    terms = json_object_new_array())) < 0)
		return -ENOMEM;
	if ((r = kc_json_append(terms, term = json_object_new_object())) < 0)
		return r;
	if ((sel = kc_json_ensure_obj(term, "labelSelector")) == NULL ||
	    (ml = kc_json_ensure_obj(sel, "matchLabels")) == NULL ||
	    (r = kc_json_set_str(ml, TY_LABEL_RUN, s->name)) < 0 ||
	    (r = kc_json_set_str(ml, TY_LABEL_SESSION, buf)) < 0 ||
	    (r = kc_json_set_str(term, "topologyKey", s->zone_key)) < 0)
		return r < 0 ? r : -ENOMEM;
	return 0;
}

/* Pod spec fields in the order kubectl shows them, scheduling first. */
static int
pod_spec(const struct ty_spec *s, const struct ty_config *cfg, int64_t session,
    enum ty_podgroup_api api, int32_t index, struct json_object *spec)
{
	static const char *const base_keys[] = {
		"nodeSelector", "tolerations", "serviceAccountName", "imagePullSecrets",
		"securityContext", "volumes", "hostNetwork", "hostPID", "hostIPC",
	};
	struct json_object *dns, *ctrs, *ctr, *env = NULL;
	char host[80], search[400];
	int r;

	snprintf(host, sizeof(host), "%s-%d", s->name, index);
	snprintf(search, sizeof(search), "%s.%s.svc.%s", s->name, s->ns, cfg->cluster_domain);
	if ((r = kc_json_set_str(spec, "hostname", host)) < 0 ||
	    (r = kc_json_set_str(spec, "subdomain", s->name)) < 0 ||
	    (dns = kc_json_ensure_obj(spec, "dnsConfig")) == NULL ||
	    (r = kc_json_put(dns, "searches", json_object_new_array())) < 0 ||
	    (r = kc_json_append(kc_json_get(dns, "searches"),
	    json_object_new_string(search))) < 0 ||
	    (r = kc_json_set_str(spec, "restartPolicy", "Never")) < 0)
		return r < 0 ? r : -ENOMEM;
	if (api != TY_PODGROUP_NONE &&
	    (r = kc_json_set_str(spec, "schedulerName", cfg->scheduler_name)) < 0)
		return r;
	if (s->priority_class[0] != '\0' &&
	    (r = kc_json_set_str(spec, "priorityClassName", s->priority_class)) < 0)
		return r;
	for (size_t i = 0; i < KC_ARRAY_SIZE(base_keys); i++)
		if ((r = copy_key(spec, base_keys[i], s->pod_spec, base_keys[i])) < 0)
			return r;
	if ((r = pod_affinity(s, session, spec)) < 0)
		return r;
	if ((r = kc_json_put(spec, "containers", ctrs = json_object_new_array())) < 0 ||
	    (r = kc_json_append(ctrs, ctr = kc_json_copy(s->container))) < 0 ||
	    (r = pod_env(s, session, index, &env)) < 0)
		return r;
	return kc_json_put(ctr, "env", env);
}

int
model_pod(const struct ty_spec *s, const struct ty_config *cfg, int64_t session,
    enum ty_podgroup_api api, int32_t index, struct json_object **ret)
{
	struct json_object *o = NULL, *spec;
	char name[80];
	int r;

	if (index < 0 || index >= s->nodes)
		return -EINVAL;
	snprintf(name, sizeof(name), "%s-%d", s->name, index);
	if ((r = object_new(s, "v1", "Pod", name, session, &o)) < 0)
		return r;
	if ((r = pod_labels(s, api, index, kc_json_get(o, "metadata"))) < 0 ||
	    (spec = kc_json_ensure_obj(o, "spec")) == NULL ||
	    (r = pod_spec(s, cfg, session, api, index, spec)) < 0) {
		json_object_put(o);
		return r < 0 ? r : -ENOMEM;
	}
	*ret = o;
	return 0;
}

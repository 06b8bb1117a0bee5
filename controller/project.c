/*
 * project.c: a Project read and checked, a ProjectMember's rules, and the
 * objects a Project keeps in its namespaces (see project.h).
 *
 * The CRD's schema already bounds lengths, counts and enums on a real API
 * server; everything is checked again here because the controller must
 * not trust that the schema in place is ours (an older CRD, a server that
 * skipped validation), and because the validating webhook refuses with
 * the same messages.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/hash.h>
#include <kc/json.h>
#include <kc/quantity.h>
#include <kc/sbuf.h>
#include <kc/str.h>
#include <kc/validation.h>

#include "project.h"

static const char *const role_names[TY_ROLE_N] = {
	[TY_ROLE_VIEWER] = "viewer",
	[TY_ROLE_RESEARCHER] = "researcher",
	[TY_ROLE_ADMIN] = "admin",
};

static const char *const role_cluster_roles[TY_ROLE_N] = {
	[TY_ROLE_VIEWER] = "trainyard-project-viewer",
	[TY_ROLE_RESEARCHER] = "trainyard-project-researcher",
	[TY_ROLE_ADMIN] = "trainyard-project-admin",
};

static const char *const kind_names[TY_SUBJECT_KIND_N] = {
	[TY_SUBJECT_USER] = "User",
	[TY_SUBJECT_GROUP] = "Group",
	[TY_SUBJECT_SERVICE_ACCOUNT] = "ServiceAccount",
};

const char *
project_role_name(enum ty_member_role r)
{
	return (size_t)r < TY_ROLE_N ? role_names[r] : "";
}

const char *
project_role_cluster_role(enum ty_member_role r)
{
	return (size_t)r < TY_ROLE_N ? role_cluster_roles[r] : "";
}

int
project_role_parse(const char *s, enum ty_member_role *ret)
{
	for (size_t i = 0; s != NULL && i < TY_ROLE_N; i++)
		if (strcmp(s, role_names[i]) == 0) {
			*ret = (enum ty_member_role)i;
			return 0;
		}
	return -EINVAL;
}

const char *
project_subject_kind_name(enum ty_subject_kind k)
{
	return (size_t)k < TY_SUBJECT_KIND_N ? kind_names[k] : "";
}

static int
kind_parse(const char *s, enum ty_subject_kind *ret)
{
	for (size_t i = 0; s != NULL && i < TY_SUBJECT_KIND_N; i++)
		if (strcmp(s, kind_names[i]) == 0) {
			*ret = (enum ty_subject_kind)i;
			return 0;
		}
	return -EINVAL;
}

/* ------------------------------------------------------------------ */
/* Reading a Project */

struct pctx {
	const struct json_object *spec;
	struct ty_problems	*probs;
	struct ty_project	*p;
};

/*
 * The value at 'key' of 'o' when it has type 't'; NULL when absent or null,
 * and NULL with a problem ("must be <what>") when of another type.
 */
static struct json_object *
opt_of(struct pctx *c, const struct json_object *o, const char *key, const char *field,
    enum json_type t, const char *what)
{
	struct json_object *v;

	if (o == NULL || !json_object_object_get_ex(o, key, &v) || v == NULL)
		return NULL;
	if (!json_object_is_type(v, t)) {
		model_problem(c->probs, field, "must be %s", what);
		return NULL;
	}
	return v;
}

static const char *
opt_str(struct pctx *c, const struct json_object *o, const char *key, const char *field)
{
	return json_object_get_string(opt_of(c, o, key, field, json_type_string, "a string"));
}

static struct json_object *
opt_obj(struct pctx *c, const struct json_object *o, const char *key, const char *field)
{
	return opt_of(c, o, key, field, json_type_object, "an object");
}

/* A list of at most 'max' items (a longer one is a problem, and NULL). */
static struct json_object *
opt_arr(struct pctx *c, const struct json_object *o, const char *key, const char *field,
    size_t max)
{
	struct json_object *v = opt_of(c, o, key, field, json_type_array, "a list");

	if (v != NULL && json_object_array_length(v) > max) {
		model_problem(c->probs, field, "must have at most %zu items", max);
		return NULL;
	}
	return v;
}

/* An integer >= 'min' at 'key', or 'def' when absent. */
static int64_t
opt_int(struct pctx *c, const struct json_object *o, const char *key, const char *field,
    int64_t min, int64_t max, int64_t def)
{
	struct json_object *v = opt_of(c, o, key, field, json_type_int, "an integer");
	int64_t n;

	if (v == NULL)
		return def;
	n = json_object_get_int64(v);
	if (n < min || n > max) {
		model_problem(c->probs, field, "must be between %" PRId64 " and %" PRId64
		    ", not %" PRId64, min, max, n);
		return def;
	}
	return n;
}

/* Reads one subject (owners[i], a member's spec.subject) into *s. */
static bool
read_subject(struct ty_problems *probs, const struct json_object *o, const char *field,
    struct ty_subject *s)
{
	char f[160];
	const char *kind = kc_json_str(o, "kind"), *name = kc_json_str(o, "name");
	const char *ns = kc_json_str(o, "namespace");
	struct kc_valid v;
	bool ok = true;

	memset(s, 0, sizeof(*s));
	snprintf(f, sizeof(f), "%s.kind", field);
	if (kind == NULL || kind_parse(kind, &s->kind) < 0) {
		model_problem(probs, f, "must be User, Group or ServiceAccount");
		ok = false;
	}
	snprintf(f, sizeof(f), "%s.name", field);
	if (name == NULL || name[0] == '\0') {
		model_problem(probs, f, "must be set");
		ok = false;
	} else if (strlen(name) > TY_SUBJECT_NAME_MAX) {
		model_problem(probs, f, "must be at most %d characters", TY_SUBJECT_NAME_MAX);
		ok = false;
	} else if (strncmp(name, "system:", 7) == 0) {
		model_problem(probs, f, "\"%.80s\": system: users and groups cannot be "
		    "granted through a Project", name);
		ok = false;
	} else {
		kc_strlcpy(s->name, name, sizeof(s->name));
	}
	if (!ok)
		return false;
	snprintf(f, sizeof(f), "%s.namespace", field);
	if (s->kind == TY_SUBJECT_SERVICE_ACCOUNT) {
		if (kc_valid_dns1123_subdomain(kc_str_from(name), &v) > 0) {
			snprintf(f, sizeof(f), "%s.name", field);
			model_problem(probs, f, "\"%.80s\": %s", name, v.msg[0]);
			return false;
		}
		if (ns == NULL || kc_valid_dns1123_label(kc_str_from(ns), &v) > 0) {
			model_problem(probs, f, "a ServiceAccount needs its namespace");
			return false;
		}
		kc_strlcpy(s->ns, ns, sizeof(s->ns));
	} else if (ns != NULL && ns[0] != '\0') {
		model_problem(probs, f, "only a ServiceAccount has a namespace");
		return false;
	}
	return true;
}

static void
p_namespaces(struct pctx *c)
{
	struct json_object *list = opt_arr(c, c->spec, "namespaces", "spec.namespaces",
	    TY_PROJECT_NS_MAX);
	const char *project = c->p->name;
	size_t plen = strlen(project);
	struct kc_valid v;
	char f[64];

	if (list == NULL || json_object_array_length(list) == 0) {
		model_problem(c->probs, "spec.namespaces", "must list at least the home "
		    "namespace (\"%s\")", project);
		return;
	}
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		const char *ns = kc_json_str(json_object_array_get_idx(list, i), "name");

		snprintf(f, sizeof(f), "spec.namespaces[%zu].name", i);
		if (ns == NULL) {
			model_problem(c->probs, f, "must be set");
			continue;
		}
		if (kc_valid_dns1123_label(kc_str_from(ns), &v) > 0) {
			model_problem(c->probs, f, "\"%.80s\": %s", ns, v.msg[0]);
			continue;
		}
		if (strncmp(ns, project, plen) != 0 ||
		    (ns[plen] != '\0' && (ns[plen] != '-' || ns[plen + 1] == '\0'))) {
			model_problem(c->probs, f, "\"%s\" must be \"%s\" or start with \"%s-\"",
			    ns, project, project);
			continue;
		}
		if (project_has_namespace(c->p, ns)) {
			model_problem(c->probs, f, "\"%s\" is listed twice", ns);
			continue;
		}
		kc_strlcpy(c->p->ns[c->p->nns++], ns, sizeof(c->p->ns[0]));
	}
}

static void
p_owners(struct pctx *c)
{
	struct json_object *list = opt_arr(c, c->spec, "owners", "spec.owners",
	    TY_PROJECT_OWNERS_MAX);
	char f[48];

	for (size_t i = 0; list != NULL && i < json_object_array_length(list); i++) {
		snprintf(f, sizeof(f), "spec.owners[%zu]", i);
		if (read_subject(c->probs, json_object_array_get_idx(list, i), f,
		    &c->p->owners[c->p->nowners]))
			c->p->nowners++;
	}
}

static int
p_quota(struct pctx *c)
{
	struct json_object *quota = opt_obj(c, c->spec, "quota", "spec.quota"), *hard;
	struct kc_quantity q;
	struct kc_valid v;
	char f[320], buf[64];
	int r;

	if ((c->p->hard = json_object_new_object()) == NULL)
		return -ENOMEM;
	c->p->max_gpus_per_run = opt_int(c, quota, "maxGPUsPerRun", "spec.quota.maxGPUsPerRun",
	    1, INT32_MAX, -1);
	if ((hard = opt_obj(c, quota, "hard", "spec.quota.hard")) == NULL)
		return 0;
	if (json_object_object_length(hard) > TY_PROJECT_HARD_MAX) {
		model_problem(c->probs, "spec.quota.hard", "must have at most %d resources",
		    TY_PROJECT_HARD_MAX);
		return 0;
	}
	json_object_object_foreach(hard, key, val) {
		snprintf(f, sizeof(f), "spec.quota.hard[%.200s]", key);
		if (kc_valid_qualified_name(kc_str_from(key), &v) > 0) {
			model_problem(c->probs, f, "%s", v.msg[0]);
			continue;
		}
		if (json_object_is_type(val, json_type_int))
			q = kc_quantity_from_int(json_object_get_int64(val));
		else if (!json_object_is_type(val, json_type_string) ||
		    kc_quantity_parse(json_object_get_string(val), &q, NULL) < 0) {
			model_problem(c->probs, f, "must be a quantity such as \"128\" or \"64Gi\"");
			continue;
		}
		if (kc_quantity_sign(&q) < 0) {
			model_problem(c->probs, f, "must not be negative");
			continue;
		}
		if (kc_quantity_format(&q, buf, sizeof(buf)) < 0) {
			model_problem(c->probs, f, "is out of range");
			continue;
		}
		if ((r = kc_json_put(c->p->hard, key, json_object_new_string(buf))) < 0)
			return r;
	}
	return 0;
}

static void
p_profiles(struct pctx *c)
{
	struct json_object *rp = opt_obj(c, c->spec, "resourceProfiles", "spec.resourceProfiles");
	struct json_object *list = opt_arr(c, rp, "allowed", "spec.resourceProfiles.allowed",
	    TY_PROJECT_PROFILES_MAX);
	const char *def = opt_str(c, rp, "default", "spec.resourceProfiles.default");
	char f[64];

	for (size_t i = 0; list != NULL && i < json_object_array_length(list); i++) {
		struct json_object *e = json_object_array_get_idx(list, i);
		const char *name = json_object_get_string(e);

		snprintf(f, sizeof(f), "spec.resourceProfiles.allowed[%zu]", i);
		if (!json_object_is_type(e, json_type_string) ||
		    !kc_valid_is_dns1123_subdomain(kc_str_from(name)) ||
		    strlen(name) >= TY_SUBDOMAIN_MAX) {
			model_problem(c->probs, f, "must be a ResourceProfile's name");
			continue;
		}
		if (project_profile_allowed(c->p, name) && c->p->nprofiles > 0)
			continue;	/* a set: duplicates are harmless */
		kc_strlcpy(c->p->profiles[c->p->nprofiles++], name, sizeof(c->p->profiles[0]));
	}
	if (def == NULL || def[0] == '\0')
		return;
	if (!kc_valid_is_dns1123_subdomain(kc_str_from(def)) || strlen(def) >= TY_SUBDOMAIN_MAX)
		model_problem(c->probs, "spec.resourceProfiles.default",
		    "must be a ResourceProfile's name");
	else if (!project_profile_allowed(c->p, def))
		model_problem(c->probs, "spec.resourceProfiles.default",
		    "\"%s\" is not in spec.resourceProfiles.allowed", def);
	else
		kc_strlcpy(c->p->default_profile, def, sizeof(c->p->default_profile));
}

static void
p_member_policy(struct pctx *c)
{
	struct json_object *mp = opt_obj(c, c->spec, "memberPolicy", "spec.memberPolicy");
	struct json_object *kinds = opt_arr(c, mp, "subjectKinds",
	    "spec.memberPolicy.subjectKinds", TY_SUBJECT_KIND_N);
	const char *ttl = opt_str(c, mp, "maxInvitationTTL", "spec.memberPolicy.maxInvitationTTL");
	enum ty_subject_kind k;

	c->p->subject_kinds = 1u << TY_SUBJECT_USER | 1u << TY_SUBJECT_GROUP;
	if (kinds != NULL) {
		c->p->subject_kinds = 0;
		for (size_t i = 0; i < json_object_array_length(kinds); i++) {
			if (kind_parse(json_object_get_string(json_object_array_get_idx(kinds, i)),
			    &k) < 0) {
				model_problem(c->probs, "spec.memberPolicy.subjectKinds",
				    "must list only User, Group and ServiceAccount");
				continue;
			}
			c->p->subject_kinds |= 1u << k;
		}
	}
	c->p->max_members = opt_int(c, mp, "maxMembers", "spec.memberPolicy.maxMembers", 0,
	    TY_PROJECT_MEMBERS_MAX, 200);
	c->p->max_gpus_per_member = opt_int(c, mp, "maxGPUsPerMember",
	    "spec.memberPolicy.maxGPUsPerMember", 0, INT32_MAX, -1);
	if (ttl != NULL && (kc_parse_duration_ms(ttl, &c->p->max_ttl_ms) < 0 ||
	    c->p->max_ttl_ms == 0))
		model_problem(c->probs, "spec.memberPolicy.maxInvitationTTL",
		    "\"%.40s\" must be a positive duration such as 2160h", ttl);
}

static void
p_isolation(struct pctx *c)
{
	struct json_object *iso = opt_obj(c, c->spec, "isolation", "spec.isolation");
	struct json_object *list = opt_arr(c, iso, "allowIngressFromNamespaces",
	    "spec.isolation.allowIngressFromNamespaces", TY_PROJECT_INGRESS_MAX);
	char f[64];

	for (size_t i = 0; list != NULL && i < json_object_array_length(list); i++) {
		const char *ns = json_object_get_string(json_object_array_get_idx(list, i));

		snprintf(f, sizeof(f), "spec.isolation.allowIngressFromNamespaces[%zu]", i);
		if (!json_object_is_type(json_object_array_get_idx(list, i), json_type_string) ||
		    !kc_valid_is_dns1123_label(kc_str_from(ns)) || strlen(ns) > 63) {
			model_problem(c->probs, f, "must be a namespace's name");
			continue;
		}
		kc_strlcpy(c->p->ingress_ns[c->p->ningress++], ns, sizeof(c->p->ingress_ns[0]));
	}
}

/* An enum field: its index in 'names', 0 when absent. */
static unsigned
opt_enum(struct pctx *c, const struct json_object *o, const char *key, const char *field,
    const char *const *names, size_t n)
{
	const char *s = opt_str(c, o, key, field);

	if (s == NULL)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return (unsigned)i;
	model_problem(c->probs, field, "must be %s or %s%s%s, not \"%.40s\"", names[0],
	    names[1], n > 2 ? " or " : "", n > 2 ? names[2] : "", s);
	return 0;
}

static void
p_lifecycle(struct pctx *c)
{
	static const char *const suspend[] = { "None", "Hold", "Drain" };
	static const char *const runs[] = { "Cancel", "WaitForCompletion" };
	static const char *const nss[] = { "Retain", "Delete" };
	struct json_object *dp = opt_obj(c, c->spec, "deletionPolicy", "spec.deletionPolicy");

	c->p->suspend = opt_enum(c, c->spec, "suspend", "spec.suspend", suspend, 3);
	c->p->wait_for_runs = opt_enum(c, dp, "runs", "spec.deletionPolicy.runs", runs, 2) == 1;
	c->p->delete_namespaces = opt_enum(c, dp, "namespaces",
	    "spec.deletionPolicy.namespaces", nss, 2) == 1;
}

static const char *const psa_modes[] = { "enforce", "warn", "audit" };

static void
p_pod_security(struct pctx *c)
{
	static const enum kc_psa_level defaults[] = {
		KC_PSA_BASELINE, KC_PSA_RESTRICTED, KC_PSA_RESTRICTED,
	};
	struct json_object *ps = opt_obj(c, c->spec, "podSecurity", "spec.podSecurity");
	char f[64];

	for (size_t i = 0; i < TY_PSA_MODES; i++) {
		const char *v;

		snprintf(f, sizeof(f), "spec.podSecurity.%s", psa_modes[i]);
		c->p->psa[i] = defaults[i];
		if ((v = opt_str(c, ps, psa_modes[i], f)) != NULL &&
		    kc_psa_parse_level(v, &c->p->psa[i]) < 0)
			model_problem(c->probs, f, "must be privileged, baseline or restricted, "
			    "not \"%.40s\"", v);
	}
	/* Only the platform team writes Projects; this makes the choice explicit. */
	if (c->p->psa[TY_PSA_ENFORCE] == KC_PSA_PRIVILEGED && c->p->nprofiles == 0)
		model_problem(c->probs, "spec.podSecurity.enforce", "privileged needs "
		    "spec.resourceProfiles.allowed: list the ResourceProfiles whose security "
		    "envelopes bound what the project's Runs may ask");
}

int
project_psa_labels(const struct ty_project *p, struct json_object *labels)
{
	char key[64];
	int r;

	for (size_t i = 0; i < TY_PSA_MODES; i++) {
		snprintf(key, sizeof(key), KC_PSA_LABEL_PREFIX "%s", psa_modes[i]);
		if ((r = kc_json_set_str(labels, key, kc_psa_level_name(p->psa[i]))) < 0)
			return r;
		snprintf(key, sizeof(key), KC_PSA_LABEL_PREFIX "%s-version", psa_modes[i]);
		if ((r = kc_json_set_str(labels, key, "latest")) < 0)
			return r;
	}
	return 0;
}

int
project_run_pod_security(const struct ty_project *p, const char *ns, const char *profile,
    const struct ty_spec *s, const struct ty_config *cfg, struct ty_problems *probs)
{
	_cleanup_(kc_json_putp) struct json_object *pod = NULL;
	const struct kc_psa_policy pol = { .level = p->psa[TY_PSA_ENFORCE] };
	char list[sizeof(probs->p[0].message)], name[KC_PSA_POLICY_NAME_MAX];
	const char *level = kc_psa_level_name(pol.level);
	struct kc_sbuf b;
	int r;

	if (pol.level == KC_PSA_PRIVILEGED)
		return 0;
	if ((r = model_pod(s, cfg, 1, TY_PODGROUP_NONE, 0, &pod)) < 0)
		return r;
	kc_sbuf_init(&b, list, sizeof(list));
	if ((r = kc_psa_check(kc_json_get(pod, "metadata"), kc_json_get(pod, "spec"), &pol,
	    &b)) <= 0)
		return r;
	kc_psa_policy_name(&pol, name, sizeof(name));
	if (pol.level == KC_PSA_BASELINE)
		model_problem(probs, "spec", "violates PodSecurity \"%s\": %s; namespace %s "
		    "enforces Pod Security level %s (Project %s, spec.podSecurity.enforce): "
		    "take these out of the Run, or run it in a namespace of a project the "
		    "platform team sets to enforce privileged, listing %s%s%s in "
		    "spec.resourceProfiles.allowed, whose security envelope then bounds "
		    "what Runs ask", name, list, ns, level, p->name,
		    profile[0] != '\0' ? "ResourceProfile \"" : "the ResourceProfile",
		    profile, profile[0] != '\0' ? "\"" : "");
	else
		model_problem(probs, "spec", "violates PodSecurity \"%s\": %s; namespace %s "
		    "enforces Pod Security level %s (Project %s, spec.podSecurity.enforce): set "
		    "what it requires in the container's and the pod's securityContext "
		    "(runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities.drop: "
		    "[ALL], seccompProfile.type: RuntimeDefault), or ask the platform team "
		    "for a namespace that enforces baseline", name, list, ns, level, p->name);
	return 1;
}

int
project_parse(const struct json_object *proj, struct ty_project **ret,
    struct ty_problems *probs)
{
	_cleanup_(project_freep) struct ty_project *p = NULL;
	struct pctx c = { .probs = probs };
	const char *name = kc_json_str(proj, "metadata", "name");
	const char *uid = kc_json_str(proj, "metadata", "uid");
	unsigned before = probs->total;
	int r;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return -ENOMEM;
	c.p = p;
	if (name == NULL || !kc_valid_is_dns1123_label(kc_str_from(name)) ||
	    strlen(name) > 63) {
		/* Its namespaces are named after it, so it must be a label. */
		model_problem(probs, "metadata.name", "\"%.80s\" must be a DNS label "
		    "(at most 63 lower-case letters, digits and '-'): the project's "
		    "namespaces are named after it", name != NULL ? name : "");
		return KC_EINVALID;
	}
	kc_strlcpy(p->name, name, sizeof(p->name));
	kc_strlcpy(p->uid, uid != NULL ? uid : "", sizeof(p->uid));
	p->generation = kc_json_int(proj, 0, "metadata", "generation");
	if ((c.spec = kc_json_get(proj, "spec")) == NULL ||
	    !json_object_is_type(c.spec, json_type_object)) {
		model_problem(probs, "spec", "must be set");
		return KC_EINVALID;
	}
	p_namespaces(&c);
	p_owners(&c);
	if ((r = p_quota(&c)) < 0)
		return r;
	p_profiles(&c);
	p_member_policy(&c);
	p_isolation(&c);
	p_lifecycle(&c);
	p_pod_security(&c);
	if (probs->total > before)
		return KC_EINVALID;
	*ret = p;
	p = NULL;
	return 0;
}

struct ty_project *
project_free(struct ty_project *p)
{
	if (p != NULL) {
		json_object_put(p->hard);
		free(p);
	}
	return NULL;
}

bool
project_has_namespace(const struct ty_project *p, const char *ns)
{
	for (size_t i = 0; i < p->nns; i++)
		if (strcmp(p->ns[i], ns) == 0)
			return true;
	return false;
}

bool
project_profile_allowed(const struct ty_project *p, const char *name)
{
	if (p->nprofiles == 0)
		return true;
	for (size_t i = 0; i < p->nprofiles; i++)
		if (strcmp(p->profiles[i], name) == 0)
			return true;
	return false;
}

const char *
project_run_profile(const struct ty_project *p, const char *run_profile)
{
	if (run_profile != NULL && run_profile[0] != '\0')
		return run_profile;
	return p->default_profile;
}

unsigned
project_run_check(const struct ty_project *p, const char *profile, const struct ty_spec *s,
    struct ty_problems *probs)
{
	unsigned before = probs->total;
	char list[512];
	size_t len = 0;
	int64_t gpus;

	if (profile != NULL && profile[0] != '\0' && !project_profile_allowed(p, profile)) {
		list[0] = '\0';
		for (size_t i = 0; i < p->nprofiles && len < sizeof(list); i++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
			    i > 0 ? ", " : "", p->profiles[i]);
		model_problem(probs, "spec.profile", "ResourceProfile \"%.200s\" is not "
		    "allowed in project %s (allowed: %s)", profile, p->name, list);
	}
	if (s != NULL && p->max_gpus_per_run >= 0 &&
	    (gpus = s->gpus_per_node * s->nodes) > p->max_gpus_per_run)
		model_problem(probs, "spec.nodes", "the Run asks for %" PRId64 " GPUs (%" PRId32
		    " nodes of %" PRId64 "); project %s allows at most %" PRId64 " per Run",
		    gpus, s->nodes, s->gpus_per_node, p->name, p->max_gpus_per_run);
	if (s != NULL) {
		json_object_object_foreach(p->hard, key, val) {
			char field[128];

			(void)val;
			if (strncmp(key, "limits.", 7) != 0 || kc_json_get(s->limits, key + 7) != NULL)
				continue;
			(void)snprintf(field, sizeof(field), "spec.resources.limits[%.100s]", key + 7);
			model_problem(probs, field, "project %s's quota counts %s: say how much "
			    "of it each node may use (in the Run or its profile)", p->name, key);
		}
	}
	return probs->total - before;
}

/* ------------------------------------------------------------------ */
/* Members */

void
project_subject_key(const struct ty_subject *s, char *buf, size_t size)
{
	if (s->kind == TY_SUBJECT_SERVICE_ACCOUNT)
		snprintf(buf, size, "%s:%s:%s", kind_names[s->kind], s->ns, s->name);
	else
		snprintf(buf, size, "%s:%s", project_subject_kind_name(s->kind), s->name);
}

static void
verdict(struct ty_member_verdict *v, const char *reason, const char *fmt, ...)
    _printf_(3, 4);

static void
verdict(struct ty_member_verdict *v, const char *reason, const char *fmt, ...)
{
	va_list ap;

	v->ready = false;
	v->reason = reason;
	va_start(ap, fmt);
	vsnprintf(v->message, sizeof(v->message), fmt, ap);
	va_end(ap);
}

void
project_member_check(const struct ty_project *p, const struct json_object *member,
    size_t rank, size_t first_same, time_t now, struct ty_member_verdict *v)
{
	const char *ns = kc_json_str(member, "metadata", "namespace");
	const char *created = kc_json_str(member, "metadata", "creationTimestamp");
	const char *expires = kc_json_str(member, "spec", "expiresAt");
	struct json_object *subj = kc_json_get(member, "spec", "subject");
	struct ty_problems probs = { 0 };
	time_t t_created = 0, t_expires = 0;
	const char *sname = kc_json_str(subj, "name");
	int64_t gpus;

	memset(v, 0, sizeof(*v));
	v->max_gpus = -1;
	if (subj == NULL || !read_subject(&probs, subj, "spec.subject", &v->subject) ||
	    project_role_parse(kc_json_str(member, "spec", "role"), &v->role) < 0) {
		if (probs.n == 0)
			model_problem(&probs, "spec.role", "must be admin, researcher or viewer");
		model_problems_text(&probs, v->message, sizeof(v->message));
		v->ready = false;
		/* A system: subject is well formed, and not allowed. */
		v->reason = sname != NULL && strncmp(sname, "system:", 7) == 0 ?
		    "SubjectNotAllowed" : "InvalidSpec";
		return;
	}
	if (ns == NULL || p->nns == 0 || strcmp(ns, p->ns[0]) != 0) {
		verdict(v, "NotHomeNamespace", "project %s keeps its members in namespace %s",
		    p->name, p->nns > 0 ? p->ns[0] : "(none)");
		return;
	}
	if ((p->subject_kinds & 1u << v->subject.kind) == 0) {
		verdict(v, "SubjectNotAllowed", "project %s does not admit members of kind %s",
		    p->name, kind_names[v->subject.kind]);
		return;
	}
	if (v->subject.kind == TY_SUBJECT_SERVICE_ACCOUNT &&
	    !project_has_namespace(p, v->subject.ns)) {
		verdict(v, "SubjectNotAllowed", "service account %s/%s is not in a namespace "
		    "of project %s", v->subject.ns, v->subject.name, p->name);
		return;
	}
	if (first_same < rank) {
		verdict(v, "DuplicateSubject", "%s %s is already a member of project %s "
		    "through an older ProjectMember", kind_names[v->subject.kind],
		    v->subject.name, p->name);
		return;
	}
	if ((int64_t)rank >= p->max_members) {
		verdict(v, "TooManyMembers", "project %s admits at most %" PRId64 " members",
		    p->name, p->max_members);
		return;
	}
	if (expires != NULL && kc_time_parse(expires, &t_expires) < 0) {
		verdict(v, "InvalidSpec", "spec.expiresAt: \"%.40s\" must be a time such as "
		    "2027-01-01T00:00:00Z", expires);
		return;
	}
	if (p->max_ttl_ms > 0) {
		time_t limit;

		if (created == NULL || kc_time_parse(created, &t_created) < 0)
			t_created = now;
		limit = t_created + (time_t)(p->max_ttl_ms / 1000);
		if (expires == NULL || t_expires > limit)
			t_expires = limit;
	}
	v->expires_at = t_expires;
	gpus = kc_json_int(member, -1, "spec", "maxGPUs");
	v->max_gpus = p->max_gpus_per_member;
	if (gpus >= 0 && (v->max_gpus < 0 || gpus < v->max_gpus))
		v->max_gpus = gpus;
	if (t_expires != 0 && t_expires <= now) {
		char when[32];

		if (kc_time_format(t_expires, when, sizeof(when)) < 0)
			when[0] = '\0';
		verdict(v, "Expired", "the membership ended at %s", when);
		return;
	}
	v->ready = true;
	v->reason = "Bound";
	snprintf(v->message, sizeof(v->message), "%s %s is %s %s in %zu namespace%s",
	    kind_names[v->subject.kind], v->subject.name,
	    v->role == TY_ROLE_ADMIN ? "an" : "a", role_names[v->role], p->nns,
	    p->nns == 1 ? "" : "s");
}

/* ------------------------------------------------------------------ */
/* Desired objects */

void
project_member_label(const char *member, char *buf, size_t size)
{
	size_t len = strlen(member);

	if (len <= KC_LABEL_VALUE_MAX) {
		kc_strlcpy(buf, member, size);
		return;
	}
	/* 46 bytes of the name, '-', 16 hex digits: 63, still a valid value. */
	snprintf(buf, size, "%.46s-%016" PRIx64, member, kc_fnv1a64_str(KC_FNV1A64_INIT, member));
}

void
project_member_binding_name(enum ty_member_role role, const char *member, char *buf,
    size_t size)
{
	int n = snprintf(buf, size, "trainyard-%s-%s", project_role_name(role), member);

	if (n >= 0 && (size_t)n <= 253 && (size_t)n < size)
		return;
	snprintf(buf, size, "trainyard-%s-%.200s-%016" PRIx64, project_role_name(role), member,
	    kc_fnv1a64_str(KC_FNV1A64_INIT, member));
}

/* A new object with the project's labels; owned (ownerReference) unless a Namespace. */
static int
object_new(const struct ty_project *p, const char *api_version, const char *kind,
    const char *ns, const char *name, struct json_object **ret)
{
	struct json_object *o, *meta, *labels, *refs, *ref;
	int r = -ENOMEM;

	if ((o = json_object_new_object()) == NULL)
		return -ENOMEM;
	if ((r = kc_json_set_str(o, "apiVersion", api_version)) < 0 ||
	    (r = kc_json_set_str(o, "kind", kind)) < 0 ||
	    (meta = kc_json_ensure_obj(o, "metadata")) == NULL ||
	    (r = kc_json_set_str(meta, "name", name)) < 0 ||
	    (r = kc_json_set_str(meta, "namespace", ns)) < 0 ||
	    (labels = kc_json_ensure_obj(meta, "labels")) == NULL ||
	    (r = kc_json_set_str(labels, TY_LABEL_MANAGED_BY, TY_MANAGER)) < 0 ||
	    (r = kc_json_set_str(labels, TY_LABEL_PROJECT, p->name)) < 0)
		goto fail;
	if (strcmp(kind, "Namespace") != 0) {
		if ((r = kc_json_put(meta, "ownerReferences", refs = json_object_new_array())) < 0 ||
		    (r = kc_json_append(refs, ref = json_object_new_object())) < 0 ||
		    (r = kc_json_set_str(ref, "apiVersion", TY_PROJECT_API_VERSION)) < 0 ||
		    (r = kc_json_set_str(ref, "kind", "Project")) < 0 ||
		    (r = kc_json_set_str(ref, "name", p->name)) < 0 ||
		    (r = kc_json_set_str(ref, "uid", p->uid)) < 0 ||
		    (r = kc_json_set_bool(ref, "controller", true)) < 0)
			goto fail;
	}
	*ret = o;
	return 0;
fail:
	json_object_put(o);
	return r < 0 ? r : -ENOMEM;
}

int
project_namespace(const struct ty_project *p, size_t i, struct json_object **ret)
{
	struct json_object *o = NULL;
	int r;

	if (i >= p->nns)
		return -EINVAL;
	if ((r = object_new(p, "v1", "Namespace", NULL, p->ns[i], &o)) < 0)
		return r;
	if ((r = project_psa_labels(p, kc_json_get(o, "metadata", "labels"))) < 0) {
		json_object_put(o);
		return r;
	}
	*ret = o;
	return 0;
}

int
project_quota(const struct ty_project *p, size_t i, struct json_object **ret)
{
	struct json_object *o, *spec;
	int r;

	if (i >= p->nns)
		return -EINVAL;
	if (json_object_object_length(p->hard) == 0)
		return -ENOENT;
	if ((r = object_new(p, "v1", "ResourceQuota", p->ns[i], TY_PROJECT_QUOTA, &o)) < 0)
		return r;
	if ((spec = kc_json_ensure_obj(o, "spec")) == NULL ||
	    (r = kc_json_put(spec, "hard", kc_json_copy(p->hard))) < 0) {
		json_object_put(o);
		return spec == NULL ? -ENOMEM : r;
	}
	*ret = o;
	return 0;
}

/* The requests a LimitRange gives a container that names none. */
static const struct {
	const char	*resource;
	const char	*request;
} default_requests[] = {
	{ "cpu", "100m" },
	{ "memory", "256Mi" },
	{ "ephemeral-storage", "1Gi" },
};

const char *
project_default_request(const struct ty_project *p, const char *resource)
{
	char key[64];

	for (size_t i = 0; i < KC_ARRAY_SIZE(default_requests); i++) {
		if (strcmp(default_requests[i].resource, resource) != 0)
			continue;
		(void)snprintf(key, sizeof(key), "requests.%s", resource);
		if (kc_json_get(p->hard, key) != NULL || kc_json_get(p->hard, resource) != NULL)
			return default_requests[i].request;
	}
	return NULL;
}

int
project_limit_range(const struct ty_project *p, size_t i, struct json_object **ret)
{
	struct json_object *o, *spec, *limits, *limit, *req;
	const char *v;
	int r;

	if (i >= p->nns)
		return -EINVAL;
	if ((r = object_new(p, "v1", "LimitRange", p->ns[i], TY_PROJECT_LIMITS, &o)) < 0)
		return r;
	if ((spec = kc_json_ensure_obj(o, "spec")) == NULL ||
	    (r = kc_json_put(spec, "limits", limits = json_object_new_array())) < 0 ||
	    (r = kc_json_append(limits, limit = json_object_new_object())) < 0 ||
	    (r = kc_json_set_str(limit, "type", "Container")) < 0 ||
	    (req = kc_json_ensure_obj(limit, "defaultRequest")) == NULL) {
		json_object_put(o);
		return r < 0 ? r : -ENOMEM;
	}
	for (size_t k = 0; k < KC_ARRAY_SIZE(default_requests); k++)
		if ((v = project_default_request(p, default_requests[k].resource)) != NULL &&
		    (r = kc_json_set_str(req, default_requests[k].resource, v)) < 0) {
			json_object_put(o);
			return r;
		}
	if (json_object_object_length(req) == 0) {
		json_object_put(o);
		return -ENOENT;
	}
	*ret = o;
	return 0;
}

/* A peer selecting namespace 'ns' by its kubernetes.io/metadata.name label. */
static int
ns_peer(struct json_object *from, const char *label, const char *value)
{
	struct json_object *peer, *sel, *ml;
	int r;

	if ((r = kc_json_append(from, peer = json_object_new_object())) < 0)
		return r;
	if ((sel = kc_json_ensure_obj(peer, "namespaceSelector")) == NULL ||
	    (ml = kc_json_ensure_obj(sel, "matchLabels")) == NULL)
		return -ENOMEM;
	return kc_json_set_str(ml, label, value);
}

static int
policy_new(const struct ty_project *p, size_t i, const char *name,
    struct json_object **ret, struct json_object **from)
{
	struct json_object *o, *spec, *types, *ingress, *rule;
	int r;

	if ((r = object_new(p, "networking.k8s.io/v1", "NetworkPolicy", p->ns[i], name, &o)) < 0)
		return r;
	if ((spec = kc_json_ensure_obj(o, "spec")) == NULL ||
	    kc_json_ensure_obj(spec, "podSelector") == NULL ||
	    (r = kc_json_put(spec, "policyTypes", types = json_object_new_array())) < 0 ||
	    (r = kc_json_append(types, json_object_new_string("Ingress"))) < 0 ||
	    (r = kc_json_put(spec, "ingress", ingress = json_object_new_array())) < 0 ||
	    (r = kc_json_append(ingress, rule = json_object_new_object())) < 0 ||
	    (r = kc_json_put(rule, "from", *from = json_object_new_array())) < 0) {
		json_object_put(o);
		return r < 0 ? r : -ENOMEM;
	}
	*ret = o;
	return 0;
}

int
project_policy(const struct ty_project *p, size_t i, struct json_object **ret)
{
	struct json_object *o, *from, *sel, *exprs, *e;
	int r;

	if (i >= p->nns)
		return -EINVAL;
	if ((r = policy_new(p, i, TY_PROJECT_POLICY, &o, &from)) < 0)
		return r;
	/*
	 * Only pods that are not a Run's: policies add up, and a Run's pods
	 * accept only their own Run (its NetworkPolicy), which a policy
	 * admitting the whole project would widen.
	 */
	sel = kc_json_get(o, "spec", "podSelector");
	if ((r = kc_json_put(sel, "matchExpressions", exprs = json_object_new_array())) < 0 ||
	    (r = kc_json_append(exprs, e = json_object_new_object())) < 0 ||
	    (r = kc_json_set_str(e, "key", TY_LABEL_RUN)) < 0 ||
	    (r = kc_json_set_str(e, "operator", "DoesNotExist")) < 0 ||
	    (r = ns_peer(from, TY_LABEL_PROJECT, p->name)) < 0)
		goto fail;
	for (size_t k = 0; k < p->ningress; k++)
		if ((r = ns_peer(from, "kubernetes.io/metadata.name", p->ingress_ns[k])) < 0)
			goto fail;
	*ret = o;
	return 0;
fail:
	json_object_put(o);
	return r;
}

int
project_policy_allow(const struct ty_project *p, size_t i, struct json_object **ret)
{
	struct json_object *o, *from;
	int r;

	if (i >= p->nns)
		return -EINVAL;
	if (p->ningress == 0)
		return -ENOENT;
	if ((r = policy_new(p, i, TY_PROJECT_POLICY_ALLOW, &o, &from)) < 0)
		return r;
	for (size_t k = 0; k < p->ningress; k++)
		if ((r = ns_peer(from, "kubernetes.io/metadata.name", p->ingress_ns[k])) < 0) {
			json_object_put(o);
			return r;
		}
	*ret = o;
	return 0;
}

static int
put_subject(struct json_object *subjects, const struct ty_subject *s)
{
	struct json_object *o;
	int r;

	if ((r = kc_json_append(subjects, o = json_object_new_object())) < 0)
		return r;
	if ((r = kc_json_set_str(o, "kind", kind_names[s->kind])) < 0 ||
	    (r = kc_json_set_str(o, "name", s->name)) < 0)
		return r;
	if (s->kind == TY_SUBJECT_SERVICE_ACCOUNT)
		return kc_json_set_str(o, "namespace", s->ns);
	return kc_json_set_str(o, "apiGroup", "rbac.authorization.k8s.io");
}

static int
role_ref(struct json_object *o, const char *kind, const char *name)
{
	struct json_object *ref = kc_json_ensure_obj(o, "roleRef");
	int r;

	if (ref == NULL)
		return -ENOMEM;
	if ((r = kc_json_set_str(ref, "apiGroup", "rbac.authorization.k8s.io")) < 0 ||
	    (r = kc_json_set_str(ref, "kind", kind)) < 0)
		return r;
	return kc_json_set_str(ref, "name", name);
}

static int
binding(const struct ty_project *p, const char *kind, const char *ns, const char *name,
    const char *role_kind, const char *role, const struct ty_subject *subjects, size_t n,
    struct json_object **ret)
{
	struct json_object *o, *list;
	int r;

	if ((r = object_new(p, "rbac.authorization.k8s.io/v1", kind, ns, name, &o)) < 0)
		return r;
	if ((r = role_ref(o, role_kind, role)) < 0 ||
	    (r = kc_json_put(o, "subjects", list = json_object_new_array())) < 0)
		goto fail;
	for (size_t k = 0; k < n; k++)
		if ((r = put_subject(list, &subjects[k])) < 0)
			goto fail;
	*ret = o;
	return 0;
fail:
	json_object_put(o);
	return r;
}

int
project_owner_binding(const struct ty_project *p, size_t i, struct json_object **ret)
{
	if (i >= p->nns)
		return -EINVAL;
	if (p->nowners == 0)
		return -ENOENT;
	return binding(p, "RoleBinding", p->ns[i], TY_PROJECT_OWNERS_RB, "ClusterRole",
	    role_cluster_roles[TY_ROLE_ADMIN], p->owners, p->nowners, ret);
}

static void
reader_name(const struct ty_project *p, char *buf, size_t size)
{
	snprintf(buf, size, "trainyard-project-reader:%s", p->name);
}

int
project_reader_role(const struct ty_project *p, struct json_object **ret)
{
	struct json_object *o, *rules, *rule, *a;
	char name[128];
	int r;

	reader_name(p, name, sizeof(name));
	if ((r = object_new(p, "rbac.authorization.k8s.io/v1", "ClusterRole", NULL, name,
	    &o)) < 0)
		return r;
	if ((r = kc_json_put(o, "rules", rules = json_object_new_array())) < 0 ||
	    (r = kc_json_append(rules, rule = json_object_new_object())) < 0 ||
	    (r = kc_json_put(rule, "apiGroups", a = json_object_new_array())) < 0 ||
	    (r = kc_json_append(a, json_object_new_string(TY_GROUP))) < 0 ||
	    (r = kc_json_put(rule, "resources", a = json_object_new_array())) < 0 ||
	    (r = kc_json_append(a, json_object_new_string("projects"))) < 0 ||
	    (r = kc_json_put(rule, "resourceNames", a = json_object_new_array())) < 0 ||
	    (r = kc_json_append(a, json_object_new_string(p->name))) < 0 ||
	    (r = kc_json_put(rule, "verbs", a = json_object_new_array())) < 0 ||
	    (r = kc_json_append(a, json_object_new_string("get"))) < 0) {
		json_object_put(o);
		return r;
	}
	*ret = o;
	return 0;
}

int
project_reader_binding(const struct ty_project *p, const struct ty_subject *subjects,
    size_t n, struct json_object **ret)
{
	struct json_object *o, *list;
	char name[128];
	int r;

	reader_name(p, name, sizeof(name));
	if ((r = binding(p, "ClusterRoleBinding", NULL, name, "ClusterRole", name, p->owners,
	    p->nowners, &o)) < 0)
		return r;
	list = kc_json_get(o, "subjects");
	for (size_t k = 0; k < n; k++)
		if ((r = put_subject(list, &subjects[k])) < 0) {
			json_object_put(o);
			return r;
		}
	*ret = o;
	return 0;
}

int
project_member_binding(const struct ty_project *p, size_t i, const char *member,
    const struct ty_member_verdict *v, struct json_object **ret)
{
	struct json_object *o, *labels;
	char name[256], label[64];
	int r;

	if (i >= p->nns)
		return -EINVAL;
	project_member_binding_name(v->role, member, name, sizeof(name));
	if ((r = binding(p, "RoleBinding", p->ns[i], name, "ClusterRole",
	    role_cluster_roles[v->role], &v->subject, 1, &o)) < 0)
		return r;
	project_member_label(member, label, sizeof(label));
	if ((labels = kc_json_get(o, "metadata", "labels")) == NULL ||
	    (r = kc_json_set_str(labels, TY_LABEL_MEMBER, label)) < 0) {
		json_object_put(o);
		return labels == NULL ? -ENOMEM : r;
	}
	*ret = o;
	return 0;
}

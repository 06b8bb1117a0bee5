/*
 * registry.c: the resource types the devcluster serves.
 *
 * A resource type (struct dc_rtype) is one group/version/resource: its
 * names for discovery and kubectl (plural, singular, kind, short names,
 * categories), scope, verbs, subresources, semantics flags (DC_RT_*),
 * and the hooks of its struct dc_type_ops. Several types may share one
 * storage collection: the versions of a custom resource, or core/v1 and
 * events.k8s.io/v1 events.
 *
 * The built-in types are the static table builtin_types[] below;
 * registry_init() registers them, with the type hooks a plug-in of
 * dc_plugins[] gives (struct dc_plugin.types) where it gives any.
 * Custom resource definitions add and remove types at run time with
 * registry_add() and registry_remove().
 * Every change bumps reg.generation and invalidates discovery, so the
 * next /api or /apis request sees the new set.
 *
 * The list is kept in discovery order: groups by priority (as
 * kube-apiserver orders its built-in groups; CRD groups get 1000) and
 * then by name, versions by Kubernetes version order (version_compare()),
 * and resources by plural. The first version of a group is its preferred
 * version.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/str.h>

#include "devcluster.h"

#define SN(...)		((const char *const []){ __VA_ARGS__, NULL })

static const struct dc_subres sub_status[] = {
	{ "status", NULL, DC_VERBS_RW, NULL, NULL },
};

static const struct dc_subres sub_namespace[] = {
	{ "status", NULL, DC_VERBS_RW, NULL, NULL },
	{ "finalize", NULL, DC_VERB_UPDATE, NULL, NULL },
};

static const struct dc_subres sub_pod[] = {
	{ "status", NULL, DC_VERBS_RW, NULL, NULL },
	{ "log", NULL, DC_VERB_GET, NULL, NULL },
	{ "binding", "Binding", DC_VERB_CREATE, NULL, NULL },	/* scheduler.c */
	{ "eviction", "Eviction", DC_VERB_CREATE, "policy", "v1" },	/* disruption.c */
	{ "exec", "PodExecOptions", DC_VERB_CREATE | DC_VERB_GET, NULL, NULL },
	{ "attach", "PodAttachOptions", DC_VERB_CREATE | DC_VERB_GET, NULL, NULL },
	{ "portforward", "PodPortForwardOptions", DC_VERB_CREATE | DC_VERB_GET,
	  NULL, NULL },
};

/* tokens.c answers it */
static const struct dc_subres sub_serviceaccount[] = {
	{ "token", "TokenRequest", DC_VERB_CREATE, "authentication.k8s.io", "v1" },
};

/* apps.c answers scale */
static const struct dc_subres sub_apps[] = {
	{ "status", NULL, DC_VERBS_RW, NULL, NULL },
	{ "scale", "Scale", DC_VERBS_RW, "autoscaling", "v1" },
};

#define NS_VERBS	(DC_VERBS_ALL & ~DC_VERB_DELETECOLLECTION)

const struct dc_rtype_def builtin_types[] = {
	{ .group = "", .version = "v1", .plural = "configmaps", .singular = "configmap",
	  .kind = "ConfigMap", .namespaced = true, .verbs = DC_VERBS_ALL,
	  .short_names = SN("cm"), .ops = &ops_configmap, .group_priority = 18000 },
	{ .group = "", .version = "v1", .plural = "endpoints", .singular = "endpoints",
	  .kind = "Endpoints", .namespaced = true, .verbs = DC_VERBS_ALL,
	  .flags = DC_RT_CREATE_ON_UPDATE, .short_names = SN("ep"),
	  .ops = &ops_default, .group_priority = 18000 },
	{ .group = "", .version = "v1", .plural = "events", .singular = "event",
	  .kind = "Event", .namespaced = true, .verbs = DC_VERBS_ALL,
	  .flags = DC_RT_CREATE_ON_UPDATE, .short_names = SN("ev"),
	  .ops = &ops_event, .group_priority = 18000 },
	{ .group = "", .version = "v1", .plural = "limitranges", .singular = "limitrange",
	  .kind = "LimitRange", .namespaced = true, .verbs = DC_VERBS_ALL,
	  .flags = DC_RT_CREATE_ON_UPDATE, .short_names = SN("limits"),
	  .ops = &ops_default, .group_priority = 18000 },
	{ .group = "", .version = "v1", .plural = "namespaces", .singular = "namespace",
	  .kind = "Namespace", .namespaced = false, .verbs = NS_VERBS,
	  .flags = DC_RT_STATUS | DC_RT_RETURN_DELETED, .name_rule = DC_NAME_LABEL,
	  .short_names = SN("ns"), .subres = sub_namespace,
	  .nsubres = KC_ARRAY_SIZE(sub_namespace), .ops = &ops_namespace,
	  .group_priority = 18000 },
	{ .group = "", .version = "v1", .plural = "nodes", .singular = "node",
	  .kind = "Node", .namespaced = false, .verbs = DC_VERBS_ALL,
	  .flags = DC_RT_STATUS, .short_names = SN("no"), .subres = sub_status,
	  .nsubres = KC_ARRAY_SIZE(sub_status), .ops = &ops_node,
	  .group_priority = 18000 },
	{ .group = "", .version = "v1", .plural = "persistentvolumeclaims",
	  .singular = "persistentvolumeclaim", .kind = "PersistentVolumeClaim",
	  .namespaced = true, .verbs = DC_VERBS_ALL, .flags = DC_RT_STATUS,
	  .short_names = SN("pvc"), .subres = sub_status,
	  .nsubres = KC_ARRAY_SIZE(sub_status), .ops = &ops_default,
	  .group_priority = 18000 },
	{ .group = "", .version = "v1", .plural = "pods", .singular = "pod",
	  .kind = "Pod", .namespaced = true, .verbs = DC_VERBS_ALL,
	  .flags = DC_RT_STATUS | DC_RT_RETURN_DELETED, .short_names = SN("po"),
	  .categories = SN("all"), .subres = sub_pod, .nsubres = KC_ARRAY_SIZE(sub_pod),
	  .ops = &ops_pod, .group_priority = 18000 },
	{ .group = "", .version = "v1", .plural = "resourcequotas",
	  .singular = "resourcequota", .kind = "ResourceQuota", .namespaced = true,
	  .verbs = DC_VERBS_ALL, .flags = DC_RT_STATUS, .short_names = SN("quota"),
	  .subres = sub_status, .nsubres = KC_ARRAY_SIZE(sub_status),
	  .ops = &ops_default, .group_priority = 18000 },
	{ .group = "", .version = "v1", .plural = "secrets", .singular = "secret",
	  .kind = "Secret", .namespaced = true, .verbs = DC_VERBS_ALL,
	  .ops = &ops_secret, .group_priority = 18000 },
	{ .group = "", .version = "v1", .plural = "serviceaccounts",
	  .singular = "serviceaccount", .kind = "ServiceAccount", .namespaced = true,
	  .verbs = DC_VERBS_ALL, .short_names = SN("sa"), .subres = sub_serviceaccount,
	  .nsubres = KC_ARRAY_SIZE(sub_serviceaccount),
	  .group_priority = 18000 },		/* hooks: a plug-in's types */
	{ .group = "", .version = "v1", .plural = "services", .singular = "service",
	  .kind = "Service", .namespaced = true,
	  .verbs = DC_VERBS_ALL, .flags = DC_RT_STATUS | DC_RT_RETURN_DELETED,
	  .name_rule = DC_NAME_DNS1035, .short_names = SN("svc"),
	  .categories = SN("all"), .subres = sub_status,
	  .nsubres = KC_ARRAY_SIZE(sub_status), .ops = &ops_service,
	  .group_priority = 18000 },
	{ .group = "apps", .version = "v1", .plural = "deployments",
	  .singular = "deployment", .kind = "Deployment", .namespaced = true,
	  .verbs = DC_VERBS_ALL, .flags = DC_RT_STATUS | DC_RT_GENERATION,
	  .short_names = SN("deploy"), .categories = SN("all"), .subres = sub_apps,
	  .nsubres = KC_ARRAY_SIZE(sub_apps), .group_priority = 17800 },
						/* hooks: a plug-in's types */
	{ .group = "apps", .version = "v1", .plural = "replicasets",
	  .singular = "replicaset", .kind = "ReplicaSet", .namespaced = true,
	  .verbs = DC_VERBS_ALL, .flags = DC_RT_STATUS | DC_RT_GENERATION,
	  .short_names = SN("rs"), .categories = SN("all"), .subres = sub_apps,
	  .nsubres = KC_ARRAY_SIZE(sub_apps), .group_priority = 17800 },
						/* hooks: a plug-in's types */
	{ .group = "events.k8s.io", .version = "v1", .plural = "events",
	  .singular = "event", .kind = "Event", .namespaced = true,
	  .verbs = DC_VERBS_ALL, .flags = DC_RT_CREATE_ON_UPDATE,
	  .short_names = SN("ev"), .ops = &ops_event_v1, .group_priority = 17750,
	  .storage_group = "", .storage_resource = "events" },
	{ .group = "networking.k8s.io", .version = "v1", .plural = "networkpolicies",
	  .singular = "networkpolicy", .kind = "NetworkPolicy", .namespaced = true,
	  .verbs = DC_VERBS_ALL, .flags = DC_RT_GENERATION, .short_names = SN("netpol"),
	  .ops = &ops_default, .group_priority = 17200 },
	{ .group = "policy", .version = "v1", .plural = "poddisruptionbudgets",
	  .singular = "poddisruptionbudget", .kind = "PodDisruptionBudget",
	  .namespaced = true, .verbs = DC_VERBS_ALL,
	  .flags = DC_RT_STATUS | DC_RT_GENERATION, .short_names = SN("pdb"),
	  .subres = sub_status, .nsubres = KC_ARRAY_SIZE(sub_status),
	  .group_priority = 17100 },		/* hooks: a plug-in's types */
	{ .group = "rbac.authorization.k8s.io", .version = "v1",
	  .plural = "clusterrolebindings", .singular = "clusterrolebinding",
	  .kind = "ClusterRoleBinding", .namespaced = false, .verbs = DC_VERBS_ALL,
	  .flags = DC_RT_CREATE_ON_UPDATE, .name_rule = DC_NAME_PATH,
	  .ops = &ops_default, .group_priority = 17000 },
	{ .group = "rbac.authorization.k8s.io", .version = "v1",
	  .plural = "clusterroles", .singular = "clusterrole", .kind = "ClusterRole",
	  .namespaced = false, .verbs = DC_VERBS_ALL, .flags = DC_RT_CREATE_ON_UPDATE,
	  .name_rule = DC_NAME_PATH, .ops = &ops_default, .group_priority = 17000 },
	{ .group = "rbac.authorization.k8s.io", .version = "v1",
	  .plural = "rolebindings", .singular = "rolebinding", .kind = "RoleBinding",
	  .namespaced = true, .verbs = DC_VERBS_ALL, .flags = DC_RT_CREATE_ON_UPDATE,
	  .name_rule = DC_NAME_PATH, .ops = &ops_default, .group_priority = 17000 },
	{ .group = "rbac.authorization.k8s.io", .version = "v1", .plural = "roles",
	  .singular = "role", .kind = "Role", .namespaced = true,
	  .verbs = DC_VERBS_ALL, .flags = DC_RT_CREATE_ON_UPDATE,
	  .name_rule = DC_NAME_PATH, .ops = &ops_default, .group_priority = 17000 },
	{ .group = "admissionregistration.k8s.io", .version = "v1",
	  .plural = "mutatingwebhookconfigurations",
	  .singular = "mutatingwebhookconfiguration",
	  .kind = "MutatingWebhookConfiguration", .namespaced = false,
	  .verbs = DC_VERBS_ALL, .flags = DC_RT_GENERATION, .ops = &ops_default,
	  .group_priority = 16700 },
	{ .group = "admissionregistration.k8s.io", .version = "v1",
	  .plural = "validatingwebhookconfigurations",
	  .singular = "validatingwebhookconfiguration",
	  .kind = "ValidatingWebhookConfiguration", .namespaced = false,
	  .verbs = DC_VERBS_ALL, .flags = DC_RT_GENERATION, .ops = &ops_default,
	  .group_priority = 16700 },
	{ .group = "apiextensions.k8s.io", .version = "v1",
	  .plural = "customresourcedefinitions",
	  .singular = "customresourcedefinition", .kind = "CustomResourceDefinition",
	  .namespaced = false, .verbs = DC_VERBS_ALL,
	  .flags = DC_RT_STATUS | DC_RT_GENERATION, .short_names = SN("crd", "crds"),
	  .subres = sub_status, .nsubres = KC_ARRAY_SIZE(sub_status),
	  .ops = &ops_default, .group_priority = 16700 },
	{ .group = "scheduling.k8s.io", .version = "v1", .plural = "priorityclasses",
	  .singular = "priorityclass", .kind = "PriorityClass", .namespaced = false,
	  .verbs = DC_VERBS_ALL, .short_names = SN("pc"), .ops = &ops_default,
	  .group_priority = 16600 },
	{ .group = "coordination.k8s.io", .version = "v1", .plural = "leases",
	  .singular = "lease", .kind = "Lease", .namespaced = true,
	  .verbs = DC_VERBS_ALL, .flags = DC_RT_CREATE_ON_UPDATE, .ops = &ops_default,
	  .group_priority = 16500 },
};

const size_t builtin_ntypes = KC_ARRAY_SIZE(builtin_types);

/*
 * Version order
 */

enum vtype { V_ALPHA, V_BETA, V_GA };

static bool
parse_version(const char *v, enum vtype *type, uint64_t *major, uint64_t *minor)
{
	const char *p = v;
	uint64_t ma = 0, mi = 0;

	if (*p++ != 'v' || *p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (ma > UINT32_MAX)
			return false;
		ma = ma * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '\0') {
		*type = V_GA;
		*major = ma;
		*minor = 0;
		return true;
	}
	if (strncmp(p, "alpha", 5) == 0) {
		*type = V_ALPHA;
		p += 5;
	} else if (strncmp(p, "beta", 4) == 0) {
		*type = V_BETA;
		p += 4;
	} else
		return false;
	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (mi > UINT32_MAX)
			return false;
		mi = mi * 10 + (uint64_t)(*p - '0');
	}
	if (*p != '\0')
		return false;
	*major = ma;
	*minor = mi;
	return true;
}

int
version_compare(const char *a, const char *b)
{
	enum vtype ta, tb;
	uint64_t maa, mab, mia, mib;
	bool oka, okb;

	if (strcmp(a, b) == 0)
		return 0;
	oka = parse_version(a, &ta, &maa, &mia);
	okb = parse_version(b, &tb, &mab, &mib);
	if (!oka && !okb)
		return strcmp(a, b);
	if (!oka)
		return 1;
	if (!okb)
		return -1;
	if (ta != tb)
		return ta > tb ? -1 : 1;
	if (maa != mab)
		return maa > mab ? -1 : 1;
	if (mia != mib)
		return mia > mib ? -1 : 1;
	return 0;
}

/*
 * The registry
 */

static int
group_priority(const struct dc_rtype *t)
{
	return t->group_priority;
}

/* Discovery order: <0 when 'a' comes first. */
static int
rtype_order(const struct dc_rtype *a, const struct dc_rtype *b)
{
	int c;

	if (group_priority(a) != group_priority(b))
		return group_priority(a) > group_priority(b) ? -1 : 1;
	if ((c = strcmp(a->group, b->group)) != 0)
		return c;
	if ((c = version_compare(a->version, b->version)) != 0)
		return c;
	return strcmp(a->plural, b->plural);
}

static char **
strv_dup(const char *const *v)
{
	size_t n = 0;
	char **out;

	while (v != NULL && v[n] != NULL)
		n++;
	if ((out = kc_calloc(n + 1, sizeof(*out))) == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if ((out[i] = kc_strdup(v[i])) == NULL) {
			for (size_t j = 0; j < i; j++)
				kc_free(out[j]);
			kc_free(out);
			return NULL;
		}
	}
	return out;
}

static void
strv_free(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		kc_free(v[i]);
	kc_free(v);
}

static void
rtype_free(struct dc_rtype *t)
{
	if (t == NULL)
		return;
	kc_free(t->group);
	kc_free(t->version);
	kc_free(t->plural);
	kc_free(t->singular);
	kc_free(t->kind);
	kc_free(t->list_kind);
	kc_free(t->api_version);
	kc_free(t->qualified);
	kc_free(t->qualified_kind);
	strv_free(t->short_names);
	strv_free(t->categories);
	if (t->subres != NULL)
		for (size_t i = 0; i < t->nsubres; i++) {
			kc_free((char *)(uintptr_t)t->subres[i].name);
			kc_free((char *)(uintptr_t)t->subres[i].kind);
			kc_free((char *)(uintptr_t)t->subres[i].group);
			kc_free((char *)(uintptr_t)t->subres[i].version);
		}
	kc_free(t->subres);
	kc_free(t);
}

static int
rtype_new(struct dc *dc, const struct dc_rtype_def *d, struct dc_rtype **ret)
{
	struct dc_rtype *t;
	bool core = d->group[0] == '\0';
	int r;

	if ((t = kc_calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	t->group = kc_strdup(d->group);
	t->version = kc_strdup(d->version);
	t->plural = kc_strdup(d->plural);
	t->singular = kc_strdup(d->singular != NULL ? d->singular : "");
	t->kind = kc_strdup(d->kind);
	t->list_kind = d->list_kind != NULL ? kc_strdup(d->list_kind) :
	    kc_asprintf("%sList", d->kind);
	t->api_version = core ? kc_strdup(d->version) :
	    kc_asprintf("%s/%s", d->group, d->version);
	t->qualified = core ? kc_strdup(d->plural) :
	    kc_asprintf("%s.%s", d->plural, d->group);
	t->qualified_kind = core ? kc_strdup(d->kind) :
	    kc_asprintf("%s.%s", d->kind, d->group);
	t->short_names = strv_dup(d->short_names);
	t->categories = strv_dup(d->categories);
	if (t->group == NULL || t->version == NULL || t->plural == NULL ||
	    t->singular == NULL || t->kind == NULL || t->list_kind == NULL ||
	    t->api_version == NULL || t->qualified == NULL ||
	    t->qualified_kind == NULL || t->short_names == NULL ||
	    t->categories == NULL)
		goto oom;
	if (d->nsubres > 0) {
		if ((t->subres = kc_calloc(d->nsubres, sizeof(*t->subres))) == NULL)
			goto oom;
		t->nsubres = d->nsubres;
		for (size_t i = 0; i < d->nsubres; i++) {
			t->subres[i].verbs = d->subres[i].verbs;
			t->subres[i].name = kc_strdup(d->subres[i].name);
			t->subres[i].kind = d->subres[i].kind != NULL ?
			    kc_strdup(d->subres[i].kind) : NULL;
			if (t->subres[i].name == NULL ||
			    (d->subres[i].kind != NULL && t->subres[i].kind == NULL))
				goto oom;
			if (d->subres[i].group != NULL && d->subres[i].version != NULL &&
			    ((t->subres[i].group = kc_strdup(d->subres[i].group)) == NULL ||
			    (t->subres[i].version = kc_strdup(d->subres[i].version)) == NULL))
				goto oom;
		}
	}
	t->namespaced = d->namespaced;
	t->verbs = d->verbs;
	t->flags = d->flags;
	t->name_rule = d->name_rule;
	t->ops = d->ops != NULL ? d->ops : &ops_default;
	t->ops_arg = d->ops_arg;
	t->smp = d->smp;
	if (t->smp == NULL && !(d->flags & DC_RT_CUSTOM)) {
		t->smp = kc_smp_schema_for(d->group, d->kind);
		if (t->smp == NULL)
			t->smp = &kc_smp_schema_object;
	}
	t->group_priority = d->group_priority != 0 ? d->group_priority : 1000;
	r = storage_coll(dc->store, d->storage_group != NULL ? d->storage_group : d->group,
	    d->storage_resource != NULL ? d->storage_resource : d->plural,
	    d->namespaced, &t->coll);
	if (r < 0)
		goto oom;
	*ret = t;
	return 0;
oom:
	rtype_free(t);
	return -ENOMEM;
}

int
registry_add(struct dc *dc, const struct dc_rtype_def *d, struct dc_rtype **ret)
{
	struct dc_rtype *t, *it;
	int r;

	if (registry_find(dc, d->group, d->version, d->plural) != NULL)
		return -EEXIST;
	if ((r = rtype_new(dc, d, &t)) < 0)
		return r;
	for (it = TAILQ_FIRST(&dc->reg.types); it != NULL; it = TAILQ_NEXT(it, link))
		if (rtype_order(t, it) < 0)
			break;
	if (it != NULL)
		TAILQ_INSERT_BEFORE(it, t, link);
	else
		TAILQ_INSERT_TAIL(&dc->reg.types, t, link);
	dc->reg.generation++;
	discovery_invalidate(dc);
	if (ret != NULL)
		*ret = t;
	return 0;
}

void
registry_remove(struct dc *dc, struct dc_rtype *t)
{
	TAILQ_REMOVE(&dc->reg.types, t, link);
	rtype_free(t);
	dc->reg.generation++;
	discovery_invalidate(dc);
}

/* The type hooks a plug-in of the table gives group/plural, or NULL. */
static const struct dc_type_ops *
plugin_type_ops(const char *group, const char *plural)
{
	for (size_t i = 0; i < dc_nplugins; i++) {
		const struct dc_plugin *p = dc_plugins[i];

		for (size_t j = 0; j < p->ntypes; j++)
			if (strcmp(p->types[j].group, group) == 0 &&
			    strcmp(p->types[j].plural, plural) == 0)
				return p->types[j].ops;
	}
	return NULL;
}

int
registry_init(struct dc *dc)
{
	int r;

	TAILQ_INIT(&dc->reg.types);
	for (size_t i = 0; i < builtin_ntypes; i++) {
		struct dc_rtype_def d = builtin_types[i];

		if ((d.ops = plugin_type_ops(d.group, d.plural)) == NULL)
			d.ops = builtin_types[i].ops;
		if ((r = registry_add(dc, &d, NULL)) < 0)
			return r;
	}
	return 0;
}

void
registry_fini(struct dc *dc)
{
	struct dc_rtype *t;

	if (dc->reg.types.tqh_last == NULL)
		return;
	while ((t = TAILQ_FIRST(&dc->reg.types)) != NULL) {
		TAILQ_REMOVE(&dc->reg.types, t, link);
		rtype_free(t);
	}
}

struct dc_rtype *
registry_find(const struct dc *dc, const char *group, const char *version,
    const char *plural)
{
	struct dc_rtype *t;

	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link))
		if (strcmp(t->plural, plural) == 0 && strcmp(t->group, group) == 0 &&
		    strcmp(t->version, version) == 0)
			return t;
	return NULL;
}

struct dc_rtype *
registry_find_any(const struct dc *dc, const char *group, const char *plural)
{
	struct dc_rtype *t;

	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link))
		if (strcmp(t->plural, plural) == 0 && strcmp(t->group, group) == 0)
			return t;
	return NULL;
}

struct dc_rtype *
registry_find_kind(const struct dc *dc, const char *group, const char *version,
    const char *kind)
{
	struct dc_rtype *t;

	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link))
		if (strcmp(t->kind, kind) == 0 && strcmp(t->group, group) == 0 &&
		    (version == NULL || strcmp(t->version, version) == 0))
			return t;
	return NULL;
}

bool
registry_has_gv(const struct dc *dc, const char *group, const char *version)
{
	struct dc_rtype *t;

	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link))
		if (strcmp(t->group, group) == 0 && strcmp(t->version, version) == 0 &&
		    !(t->flags & DC_RT_HIDDEN))
			return true;
	return false;
}

bool
registry_has_group(const struct dc *dc, const char *group)
{
	struct dc_rtype *t;

	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link))
		if (strcmp(t->group, group) == 0 && !(t->flags & DC_RT_HIDDEN))
			return true;
	return false;
}

bool
rtype_has_subres(const struct dc_rtype *t, const char *name)
{
	for (size_t i = 0; i < t->nsubres; i++)
		if (strcmp(t->subres[i].name, name) == 0)
			return true;
	return false;
}

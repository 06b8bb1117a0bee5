/*
 * discovery.c: /api, /apis, /api/v1, /apis/<g> and /apis/<g>/<v>.
 *
 * Two shapes of the same information. Legacy discovery answers /api
 * with APIVersions and /apis with APIGroupList, and the client then
 * fetches an APIResourceList per group version. Aggregated discovery
 * (apidiscovery.k8s.io v2, or v2beta1 for kubectl 1.27-1.29) answers
 * /api and /apis with APIGroupDiscoveryList documents holding every
 * resource at once. The Accept header picks (discovery_accept()): the
 * first entry the server can serve wins, as kube-apiserver negotiates,
 * and the reply's Content-Type names what was chosen, because clients
 * pick their parser from it:
 *
 *	application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList
 *
 * Groups come in the registry's order (built-in groups by priority, then
 * CRD groups by name), versions in Kubernetes version order, the first
 * being the preferred one; resources and subresources by name. Bodies
 * are cached until the registry changes (discovery_invalidate()).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/str.h>

#include "devcluster.h"

#define CT_LEGACY	"application/json"
#define CT_V2		"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
#define CT_V2BETA1	"application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
#define CACHE_MAX	64

struct cached {
	char		*key;
	char		*body;
	size_t		 len;
	const char	*ctype;
};

struct dc_disc {
	struct cached	 e[CACHE_MAX];
	size_t		 n;
};

static const char *const verb_names[] = {
	"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch",
};

static const unsigned verb_bits[] = {
	DC_VERB_CREATE, DC_VERB_DELETE, DC_VERB_DELETECOLLECTION, DC_VERB_GET,
	DC_VERB_LIST, DC_VERB_PATCH, DC_VERB_UPDATE, DC_VERB_WATCH,
};

int
discovery_accept(const char *accept)
{
	const char *p = accept;

	if (accept == NULL || accept[0] == '\0')
		return 0;
	while (*p != '\0') {
		const char *end = strchr(p, ',');
		size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
		char item[512], type[128] = "", g[64] = "", v[64] = "", as[64] = "";
		char *q, *semi;
		size_t n = 0;

		if (len < sizeof(item)) {
			memcpy(item, p, len);
			item[len] = '\0';
			q = item;
			while (*q == ' ' || *q == '\t')
				q++;
			for (; *q != '\0' && *q != ';' && *q != ' ' && n + 1 < sizeof(type); q++)
				type[n++] = (char)(*q >= 'A' && *q <= 'Z' ? *q + 32 : *q);
			type[n] = '\0';
			while ((semi = strchr(q, ';')) != NULL) {
				char *param = semi + 1, *eq, *next = strchr(param, ';');

				if (next != NULL)
					*next = '\0';
				while (*param == ' ')
					param++;
				if ((eq = strchr(param, '=')) != NULL) {
					*eq = '\0';
					if (strcmp(param, "g") == 0)
						(void)kc_strlcpy(g, eq + 1, sizeof(g));
					else if (strcmp(param, "v") == 0)
						(void)kc_strlcpy(v, eq + 1, sizeof(v));
					else if (strcmp(param, "as") == 0)
						(void)kc_strlcpy(as, eq + 1, sizeof(as));
				}
				if (next == NULL)
					break;
				*next = ';';
				q = next;
			}
			if (strcmp(type, "application/json") == 0 &&
			    strcmp(as, "APIGroupDiscoveryList") == 0 &&
			    strcmp(g, "apidiscovery.k8s.io") == 0) {
				if (strcmp(v, "v2") == 0)
					return 2;
				if (strcmp(v, "v2beta1") == 0)
					return 1;
			} else if (as[0] == '\0' && (strcmp(type, "application/json") == 0 ||
			    strcmp(type, "*/*") == 0 || strcmp(type, "application/*") == 0))
				return 0;
		}
		if (end == NULL)
			break;
		p = end + 1;
	}
	return -1;
}

static struct json_object *
verbs_array(unsigned verbs)
{
	struct json_object *a = json_object_new_array();

	if (a == NULL)
		return NULL;
	for (size_t i = 0; i < KC_ARRAY_SIZE(verb_bits); i++)
		if ((verbs & verb_bits[i]) &&
		    kc_json_append(a, json_object_new_string(verb_names[i])) < 0) {
			json_object_put(a);
			return NULL;
		}
	return a;
}

static int
put_strv(struct json_object *o, const char *key, char **v)
{
	struct json_object *a;

	if (v == NULL || v[0] == NULL)
		return 0;
	if ((a = json_object_new_array()) == NULL)
		return -ENOMEM;
	if (kc_json_put(o, key, a) < 0)
		return -ENOMEM;
	for (size_t i = 0; v[i] != NULL; i++)
		if (kc_json_append(a, json_object_new_string(v[i])) < 0)
			return -ENOMEM;
	return 0;
}

/* Subresource indices of 't', sorted by name. */
/* A scale subresource answers autoscaling/v1 Scale (custom resources). */
static bool
scale_subres(const struct dc_subres *s)
{
	return strcmp(s->name, "scale") == 0 && s->kind != NULL && strcmp(s->kind, "Scale") == 0;
}

static size_t
sorted_subres(const struct dc_rtype *t, size_t *idx, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nsubres && n < max; i++) {
		size_t j = n++;

		while (j > 0 && strcmp(t->subres[idx[j - 1]].name, t->subres[i].name) > 0) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = i;
	}
	return n;
}

static bool
visible(const struct dc_rtype *t)
{
	return !(t->flags & DC_RT_HIDDEN);
}

/* APIResourceList for one group version. */
static int
resource_list(const struct dc *dc, const char *group, const char *version,
    struct json_object **ret)
{
	struct json_object *o, *res;
	const struct dc_rtype *t;
	char gv[2 * DC_SEGMENT_MAX + 2];

	if (group[0] == '\0')
		(void)snprintf(gv, sizeof(gv), "%s", version);
	else
		(void)snprintf(gv, sizeof(gv), "%s/%s", group, version);
	if ((o = json_object_new_object()) == NULL)
		return -ENOMEM;
	if (kc_json_set_str(o, "kind", "APIResourceList") < 0 ||
	    kc_json_set_str(o, "apiVersion", "v1") < 0 ||
	    kc_json_set_str(o, "groupVersion", gv) < 0 ||
	    (res = json_object_new_array()) == NULL || kc_json_put(o, "resources", res) < 0)
		goto oom;
	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link)) {
		struct json_object *r;
		size_t idx[32], ns;

		if (!visible(t) || strcmp(t->group, group) != 0 ||
		    strcmp(t->version, version) != 0)
			continue;
		if ((r = json_object_new_object()) == NULL || kc_json_append(res, r) < 0 ||
		    kc_json_set_str(r, "name", t->plural) < 0 ||
		    kc_json_set_str(r, "singularName", t->singular) < 0 ||
		    kc_json_set_bool(r, "namespaced", t->namespaced) < 0 ||
		    kc_json_set_str(r, "kind", t->kind) < 0 ||
		    kc_json_put(r, "verbs", verbs_array(t->verbs)) < 0 ||
		    put_strv(r, "shortNames", t->short_names) < 0 ||
		    put_strv(r, "categories", t->categories) < 0)
			goto oom;
		ns = sorted_subres(t, idx, KC_ARRAY_SIZE(idx));
		for (size_t i = 0; i < ns; i++) {
			const struct dc_subres *s = &t->subres[idx[i]];
			struct json_object *sr;
			char name[2 * DC_SEGMENT_MAX + 2];

			(void)snprintf(name, sizeof(name), "%s/%s", t->plural, s->name);
			if ((sr = json_object_new_object()) == NULL ||
			    kc_json_append(res, sr) < 0 ||
			    kc_json_set_str(sr, "name", name) < 0 ||
			    kc_json_set_str(sr, "singularName", "") < 0 ||
			    kc_json_set_bool(sr, "namespaced", t->namespaced) < 0 ||
			    (scale_subres(s) && (kc_json_set_str(sr, "group", "autoscaling") < 0 ||
			    kc_json_set_str(sr, "version", "v1") < 0)) ||
			    (s->group != NULL && (kc_json_set_str(sr, "group", s->group) < 0 ||
			    kc_json_set_str(sr, "version", s->version) < 0)) ||
			    kc_json_set_str(sr, "kind", s->kind != NULL ? s->kind : t->kind) < 0 ||
			    kc_json_put(sr, "verbs", verbs_array(s->verbs)) < 0)
				goto oom;
		}
	}
	*ret = o;
	return 0;
oom:
	json_object_put(o);
	return -ENOMEM;
}

/* The versions of a group, in order (the registry keeps them sorted). */
static size_t
group_versions(const struct dc *dc, const char *group, const char **out, size_t max)
{
	const struct dc_rtype *t;
	size_t n = 0;

	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link)) {
		bool seen = false;

		if (!visible(t) || strcmp(t->group, group) != 0)
			continue;
		for (size_t i = 0; i < n; i++)
			if (strcmp(out[i], t->version) == 0)
				seen = true;
		if (!seen && n < max)
			out[n++] = t->version;
	}
	return n;
}

static struct json_object *
gv_entry(const char *group, const char *version)
{
	struct json_object *e = json_object_new_object();
	char gv[2 * DC_SEGMENT_MAX + 2];

	(void)snprintf(gv, sizeof(gv), "%s/%s", group, version);
	if (e == NULL || kc_json_set_str(e, "groupVersion", gv) < 0 ||
	    kc_json_set_str(e, "version", version) < 0) {
		if (e != NULL)
			json_object_put(e);
		return NULL;
	}
	return e;
}

static struct json_object *
api_group(const struct dc *dc, const char *group, bool with_kind)
{
	struct json_object *g = json_object_new_object(), *vs;
	const char *versions[32];
	size_t n = group_versions(dc, group, versions, KC_ARRAY_SIZE(versions));

	if (g == NULL)
		return NULL;
	if ((with_kind && (kc_json_set_str(g, "kind", "APIGroup") < 0 ||
	    kc_json_set_str(g, "apiVersion", "v1") < 0)) ||
	    kc_json_set_str(g, "name", group) < 0 ||
	    (vs = json_object_new_array()) == NULL || kc_json_put(g, "versions", vs) < 0)
		goto oom;
	for (size_t i = 0; i < n; i++)
		if (kc_json_append(vs, gv_entry(group, versions[i])) < 0)
			goto oom;
	if (n > 0 && kc_json_put(g, "preferredVersion", gv_entry(group, versions[0])) < 0)
		goto oom;
	return g;
oom:
	json_object_put(g);
	return NULL;
}

/* The non-core groups in order. */
static size_t
groups(const struct dc *dc, const char **out, size_t max)
{
	const struct dc_rtype *t;
	size_t n = 0;

	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link)) {
		bool seen = false;

		if (!visible(t) || t->group[0] == '\0')
			continue;
		for (size_t i = 0; i < n; i++)
			if (strcmp(out[i], t->group) == 0)
				seen = true;
		if (!seen && n < max)
			out[n++] = t->group;
	}
	return n;
}

static int
legacy_apis(const struct dc *dc, struct json_object **ret)
{
	struct json_object *o = json_object_new_object(), *gs;
	const char *names[256];
	size_t n = groups(dc, names, KC_ARRAY_SIZE(names));

	if (o == NULL)
		return -ENOMEM;
	if (kc_json_set_str(o, "kind", "APIGroupList") < 0 ||
	    kc_json_set_str(o, "apiVersion", "v1") < 0 ||
	    (gs = json_object_new_array()) == NULL || kc_json_put(o, "groups", gs) < 0)
		goto oom;
	for (size_t i = 0; i < n; i++)
		if (kc_json_append(gs, api_group(dc, names[i], false)) < 0)
			goto oom;
	*ret = o;
	return 0;
oom:
	json_object_put(o);
	return -ENOMEM;
}

static int
legacy_api(const struct dc *dc, struct json_object **ret)
{
	struct json_object *o = json_object_new_object(), *a, *cidrs, *c;

	if (o == NULL)
		return -ENOMEM;
	if (kc_json_set_str(o, "kind", "APIVersions") < 0 ||
	    (a = json_object_new_array()) == NULL || kc_json_put(o, "versions", a) < 0 ||
	    kc_json_append(a, json_object_new_string("v1")) < 0 ||
	    (cidrs = json_object_new_array()) == NULL ||
	    kc_json_put(o, "serverAddressByClientCIDRs", cidrs) < 0 ||
	    (c = json_object_new_object()) == NULL || kc_json_append(cidrs, c) < 0 ||
	    kc_json_set_str(c, "clientCIDR", "0.0.0.0/0") < 0 ||
	    kc_json_set_str(c, "serverAddress", dc->server_address) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	*ret = o;
	return 0;
}

static struct json_object *
response_kind(const char *group, const char *version, const char *kind)
{
	struct json_object *k = json_object_new_object();

	if (k == NULL || kc_json_set_str(k, "group", group) < 0 ||
	    kc_json_set_str(k, "version", version) < 0 ||
	    kc_json_set_str(k, "kind", kind) < 0) {
		if (k != NULL)
			json_object_put(k);
		return NULL;
	}
	return k;
}

static struct json_object *
agg_resource(const struct dc_rtype *t)
{
	struct json_object *r = json_object_new_object(), *subs;
	size_t idx[32], n;

	if (r == NULL || kc_json_set_str(r, "resource", t->plural) < 0 ||
	    kc_json_put(r, "responseKind", response_kind(t->group, t->version, t->kind)) < 0 ||
	    kc_json_set_str(r, "scope", t->namespaced ? "Namespaced" : "Cluster") < 0 ||
	    kc_json_set_str(r, "singularResource", t->singular) < 0 ||
	    kc_json_put(r, "verbs", verbs_array(t->verbs)) < 0 ||
	    put_strv(r, "shortNames", t->short_names) < 0 ||
	    put_strv(r, "categories", t->categories) < 0)
		goto oom;
	n = sorted_subres(t, idx, KC_ARRAY_SIZE(idx));
	if (n == 0)
		return r;
	if ((subs = json_object_new_array()) == NULL || kc_json_put(r, "subresources", subs) < 0)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		const struct dc_subres *s = &t->subres[idx[i]];
		struct json_object *so = json_object_new_object();

		if (so == NULL || kc_json_append(subs, so) < 0 ||
		    kc_json_set_str(so, "subresource", s->name) < 0 ||
		    kc_json_put(so, "responseKind", scale_subres(s) ?
		    response_kind("autoscaling", "v1", "Scale") : s->group != NULL ?
		    response_kind(s->group, s->version, s->kind) : response_kind(t->group,
		    t->version, s->kind != NULL ? s->kind : t->kind)) < 0 ||
		    kc_json_put(so, "verbs", verbs_array(s->verbs)) < 0)
			goto oom;
	}
	return r;
oom:
	if (r != NULL)
		json_object_put(r);
	return NULL;
}

static struct json_object *
agg_group(const struct dc *dc, const char *group)
{
	struct json_object *g = json_object_new_object(), *meta, *vs;
	const char *versions[32];
	size_t n = group_versions(dc, group, versions, KC_ARRAY_SIZE(versions));

	if (g == NULL || (meta = json_object_new_object()) == NULL ||
	    kc_json_put(g, "metadata", meta) < 0 || kc_json_set_str(meta, "name", group) < 0 ||
	    (vs = json_object_new_array()) == NULL || kc_json_put(g, "versions", vs) < 0)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		struct json_object *v = json_object_new_object(), *res;
		const struct dc_rtype *t;

		if (v == NULL || kc_json_append(vs, v) < 0 ||
		    kc_json_set_str(v, "version", versions[i]) < 0 ||
		    (res = json_object_new_array()) == NULL ||
		    kc_json_put(v, "resources", res) < 0 ||
		    kc_json_set_str(v, "freshness", "Current") < 0)
			goto oom;
		for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link)) {
			if (!visible(t) || strcmp(t->group, group) != 0 ||
			    strcmp(t->version, versions[i]) != 0)
				continue;
			if (kc_json_append(res, agg_resource(t)) < 0)
				goto oom;
		}
	}
	return g;
oom:
	if (g != NULL)
		json_object_put(g);
	return NULL;
}

static int
aggregated(const struct dc *dc, bool core, int which, struct json_object **ret)
{
	struct json_object *o = json_object_new_object(), *items;
	const char *names[256];
	size_t n;

	if (o == NULL)
		return -ENOMEM;
	if (kc_json_set_str(o, "kind", "APIGroupDiscoveryList") < 0 ||
	    kc_json_set_str(o, "apiVersion", which == 2 ? "apidiscovery.k8s.io/v2" :
	    "apidiscovery.k8s.io/v2beta1") < 0 ||
	    kc_json_put(o, "metadata", json_object_new_object()) < 0 ||
	    (items = json_object_new_array()) == NULL || kc_json_put(o, "items", items) < 0)
		goto oom;
	if (core) {
		if (registry_has_group(dc, "") && kc_json_append(items, agg_group(dc, "")) < 0)
			goto oom;
	} else {
		n = groups(dc, names, KC_ARRAY_SIZE(names));
		for (size_t i = 0; i < n; i++)
			if (kc_json_append(items, agg_group(dc, names[i])) < 0)
				goto oom;
	}
	*ret = o;
	return 0;
oom:
	json_object_put(o);
	return -ENOMEM;
}

void
discovery_invalidate(struct dc *dc)
{
	struct dc_disc *d = dc->disc;

	if (d == NULL)
		return;
	for (size_t i = 0; i < d->n; i++) {
		kc_free(d->e[i].key);
		kc_free(d->e[i].body);
	}
	d->n = 0;
}

void
discovery_fini(struct dc *dc)
{
	discovery_invalidate(dc);
	kc_free(dc->disc);
	dc->disc = NULL;
}

static int
reply_cached(struct dc_resp *resp, const struct cached *e)
{
	int r;

	kc_buf_reset(&resp->body);
	if ((r = kc_buf_append(&resp->body, e->body, e->len)) < 0)
		return r;
	resp->status = 200;
	resp->content_type = e->ctype;
	return 0;
}

int
discovery_handle(struct dc *dc, const struct dc_req *req, const struct dc_route *route,
    struct dc_resp *resp)
{
	struct json_object *doc = NULL;
	struct kc_buf b;
	struct cached *e;
	const char *ctype = CT_LEGACY;
	char key[3 * DC_SEGMENT_MAX];
	int which = 0, r;

	if (route->kind == DC_ROUTE_API || route->kind == DC_ROUTE_APIS) {
		if ((which = discovery_accept(req->accept)) < 0) {
			errors_reply(resp, KC_ENOTACCEPTABLE, "only the following media types "
			    "are accepted: application/json, %s, %s", CT_V2, CT_V2BETA1);
			return 0;
		}
		ctype = which == 2 ? CT_V2 : which == 1 ? CT_V2BETA1 : CT_LEGACY;
	}
	switch (route->kind) {
	case DC_ROUTE_GROUP:
		if (!registry_has_group(dc, route->group))
			goto notfound;
		break;
	case DC_ROUTE_GROUP_VERSION:
		if (!registry_has_gv(dc, route->group, route->version))
			goto notfound;
		break;
	default:
		break;
	}
	(void)snprintf(key, sizeof(key), "%d:%d:%s/%s", route->kind, which, route->group,
	    route->version);
	if (dc->disc == NULL && (dc->disc = kc_calloc(1, sizeof(*dc->disc))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < dc->disc->n; i++)
		if (strcmp(dc->disc->e[i].key, key) == 0)
			return reply_cached(resp, &dc->disc->e[i]);
	switch (route->kind) {
	case DC_ROUTE_API:
		r = which > 0 ? aggregated(dc, true, which, &doc) : legacy_api(dc, &doc);
		break;
	case DC_ROUTE_APIS:
		r = which > 0 ? aggregated(dc, false, which, &doc) : legacy_apis(dc, &doc);
		break;
	case DC_ROUTE_GROUP:
		r = (doc = api_group(dc, route->group, true)) != NULL ? 0 : -ENOMEM;
		break;
	default:
		r = resource_list(dc, route->group, route->version, &doc);
		break;
	}
	if (r < 0)
		return r;
	kc_buf_init(&b, DC_RESP_MAX);
	r = api_serialize(doc, &b);
	json_object_put(doc);
	if (r < 0 || (r = kc_buf_putc(&b, '\n')) < 0)
		return r;
	if (dc->disc->n == CACHE_MAX)
		discovery_invalidate(dc);
	e = &dc->disc->e[dc->disc->n];
	e->ctype = ctype;
	e->key = kc_strdup(key);
	e->body = kc_buf_take(&b, &e->len);
	kc_buf_free(&b);
	if (e->key == NULL || e->body == NULL) {
		kc_free(e->key);
		kc_free(e->body);
		return -ENOMEM;
	}
	dc->disc->n++;
	return reply_cached(resp, e);
notfound:
	return resp_text(resp, 404, "text/plain; charset=utf-8", "404 page not found\n");
}

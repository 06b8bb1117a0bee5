/*
 * rbac.c: RBAC authorization, ClusterRole aggregation, the bootstrap
 * policy, SelfSubjectRulesReview, impersonation checks and 403 messages.
 *
 * The index. Each Role, ClusterRole, RoleBinding and ClusterRoleBinding
 * is parsed once, when the core puts it, into one allocation: a struct
 * role or struct binding followed by an arena holding its strings, rule
 * array and string-pointer arrays. Parsing runs twice over the JSON
 * tree: first measuring (the arena base is NULL, so nothing is written
 * and every check happens), then filling the exact-sized block, which
 * can no longer fail. A ClusterRole also keeps a copy of its labels and
 * its converted aggregation selectors.
 *
 * Each kind lives in a sorted array of pointers keyed by (namespace,
 * name), ClusterRoles and ClusterRoleBindings with namespace "". Lookups
 * are binary searches; the RoleBindings of one namespace are the run
 * that starts at (ns, ""). Put and remove move pointers, never objects.
 *
 * Authorization is rule.go's VisitRulesFor with RBACAuthorizer's visitor:
 *
 *	for each ClusterRoleBinding (by name), then, when the request has
 *	a namespace, each RoleBinding of that namespace (by name):
 *		the first subject that applies to the user, or skip;
 *		the role it names (a RoleBinding's Role in its namespace,
 *		or a ClusterRole), or record "... not found" and go on;
 *		each rule: if it allows the request, stop: allowed
 *
 * A rule allows a resource request when verb, API group, resource (with
 * "*", "res/sub" and "*\/sub" forms) and resourceNames (empty, or the
 * request's name) all match, and a non-resource request when verb and
 * path (exact, "*", or a prefix ending in "*") do. Authorization never
 * allocates: the reason is formatted straight into the caller's buffer.
 *
 * Aggregation replays the controller: aggregated ClusterRoles, in name
 * order, take the union of the rules of the roles their selectors pick,
 * reading the working results of the roles synced before them, until a
 * pass changes nothing. Rules are compared as Semantic.DeepEqual does
 * (lists element by element; absent and empty alike). Working sets are
 * arrays of pointers to the parsed rules of the index, never copies.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/sbuf.h>
#include <kc/selector.h>
#include <kc/str.h>
#include <kc/validation.h>

#include "rbac.h"

#define S(s)		((s) != NULL ? (s) : "")

#define RBAC_GROUP	"rbac.authorization.k8s.io"
#define RBAC_API	RBAC_GROUP "/v1"
#define AUTHN_GROUP	"authentication.k8s.io"
#define SA_PREFIX	"system:serviceaccount:"

enum kind {
	K_ROLE,
	K_CLUSTER_ROLE,
	K_ROLE_BINDING,
	K_CLUSTER_ROLE_BINDING,
	K_NKINDS
};

static const char *const kind_names[K_NKINDS] = {
	"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding",
};

/* First member of struct role and struct binding: the sort key. */
struct key {
	const char	*ns;		/* "" for the cluster kinds */
	const char	*name;
};

struct strlist {
	const char *const	*v;
	size_t			 n;
};

struct rule {
	struct strlist	verbs;
	struct strlist	groups;
	struct strlist	resources;
	struct strlist	names;
	struct strlist	urls;
};

struct role {
	struct key		  key;
	const struct rule	 *rules;
	size_t			  nrules;
	bool			  aggregated;	/* has an aggregationRule */
	bool			  agg_invalid;	/* a selector did not convert */
	struct kc_label_selector **selectors;
	size_t			  nselectors;
	struct json_object	 *labels;	/* copy of metadata.labels */
	/* the arena follows */
};

struct subject {
	const char	*kind;
	const char	*name;
	const char	*ns;		/* "" when absent */
};

struct binding {
	struct key		 key;
	const char		*role_kind;
	const char		*role_name;
	const struct subject	*subjects;
	size_t			 nsubjects;
	/* the arena follows */
};

struct vec {
	void	**v;
	size_t	  n;
	size_t	  cap;
};

struct rbac_index {
	struct vec	vecs[K_NKINDS];
};

/* Go's %q of 's' (NULL as ""). */
static void
sb_quote(struct kc_sbuf *b, const char *s)
{
	kc_sbuf_quote(b, S(s), strlen(S(s)));
}

/* %q of a + "/" + c. */
static void
sb_quote_pair(struct kc_sbuf *b, const char *a, const char *c)
{
	kc_sbuf_putc(b, '"');
	kc_sbuf_quote_inner(b, S(a), strlen(S(a)));
	kc_sbuf_putc(b, '/');
	kc_sbuf_quote_inner(b, S(c), strlen(S(c)));
	kc_sbuf_putc(b, '"');
}

/* The user of a NULL struct rbac_user: no name, no groups. */
static const struct rbac_user nobody = { NULL, NULL, NULL, 0 };

/*
 * The arena: measuring while base is NULL, filling after.
 */

struct arena {
	char	*base;
	size_t	 off;
};

static void *
arena_take(struct arena *a, size_t size, size_t align)
{
	void *p;

	a->off = (a->off + align - 1) / align * align;
	p = a->base != NULL ? a->base + a->off : NULL;
	a->off += size;
	return p;
}

/* Copies a string of at most RBAC_STRING_MAX bytes: 0 or -E2BIG. */
static int
take_str(struct arena *a, const char *s, const char **ret)
{
	size_t n = strlen(s);
	char *p;

	if (n > RBAC_STRING_MAX)
		return -E2BIG;
	if ((p = arena_take(a, n + 1, 1)) != NULL)
		memcpy(p, s, n + 1);
	*ret = p;
	return 0;
}

static bool
kind_of(const char *name, enum kind *ret)
{
	for (size_t k = 0; k < K_NKINDS; k++)
		if (name != NULL && strcmp(name, kind_names[k]) == 0) {
			*ret = (enum kind)k;
			return true;
		}
	return false;
}

static bool
kind_namespaced(enum kind k)
{
	return k == K_ROLE || k == K_ROLE_BINDING;
}

/* metadata.name and metadata.namespace into the arena. */
static int
parse_key(struct arena *a, enum kind k, const struct json_object *obj,
    struct key *ret, struct kc_status *st)
{
	const char *name = kc_json_str(obj, "metadata", "name");
	const char *ns = kind_namespaced(k) ? kc_json_str(obj, "metadata", "namespace") : "";

	if (name == NULL || name[0] == '\0')
		return kc_status_set(st, KC_EINVALID, "metadata.name: Required value");
	if (ns == NULL || (kind_namespaced(k) && ns[0] == '\0'))
		return kc_status_set(st, KC_EINVALID, "metadata.namespace: Required value");
	if (take_str(a, name, &ret->name) < 0 || take_str(a, ns, &ret->ns) < 0)
		return kc_status_set(st, KC_EINVALID, "metadata: name or namespace "
		    "longer than %d bytes", RBAC_STRING_MAX);
	return 0;
}

static int
parse_list(struct arena *a, const struct json_object *rule, const char *field,
    size_t ri, struct strlist *ret, struct kc_status *st)
{
	struct json_object *arr = kc_json_get(rule, field);
	const char **v;
	size_t n;

	ret->v = NULL;
	ret->n = 0;
	if (arr == NULL)
		return 0;
	if (!json_object_is_type(arr, json_type_array))
		return kc_status_set(st, KC_EINVALID, "rules[%zu].%s: expected an array",
		    ri, field);
	if ((n = json_object_array_length(arr)) > RBAC_LIST_MAX)
		return kc_status_set(st, KC_EINVALID, "rules[%zu].%s: more than %d "
		    "entries", ri, field, RBAC_LIST_MAX);
	v = arena_take(a, n * sizeof(*v), alignof(const char *));
	for (size_t i = 0; i < n; i++) {
		struct json_object *it = json_object_array_get_idx(arr, i);
		const char *s;

		if (!json_object_is_type(it, json_type_string))
			return kc_status_set(st, KC_EINVALID, "rules[%zu].%s[%zu]: "
			    "expected a string", ri, field, i);
		if (take_str(a, json_object_get_string(it), &s) < 0)
			return kc_status_set(st, KC_EINVALID, "rules[%zu].%s[%zu]: "
			    "longer than %d bytes", ri, field, i, RBAC_STRING_MAX);
		if (v != NULL)
			v[i] = s;
	}
	ret->v = v;
	ret->n = n;
	return 0;
}

/* A "rules" array (NULL: none) into the arena. */
static int
parse_rules(struct arena *a, const struct json_object *arr, const struct rule **ret,
    size_t *ret_n, struct kc_status *st)
{
	struct rule *rules;
	size_t n = 0;
	int r;

	if (arr != NULL) {
		if (!json_object_is_type(arr, json_type_array))
			return kc_status_set(st, KC_EINVALID, "rules: expected an array");
		if ((n = json_object_array_length(arr)) > RBAC_RULES_MAX)
			return kc_status_set(st, KC_EINVALID, "rules: more than %d rules",
			    RBAC_RULES_MAX);
	}
	rules = arena_take(a, n * sizeof(*rules), alignof(struct rule));
	for (size_t i = 0; i < n; i++) {
		struct json_object *it = json_object_array_get_idx(arr, i);
		struct rule ru;

		if (!json_object_is_type(it, json_type_object))
			return kc_status_set(st, KC_EINVALID, "rules[%zu]: expected an "
			    "object", i);
		if ((r = parse_list(a, it, "verbs", i, &ru.verbs, st)) < 0 ||
		    (r = parse_list(a, it, "apiGroups", i, &ru.groups, st)) < 0 ||
		    (r = parse_list(a, it, "resources", i, &ru.resources, st)) < 0 ||
		    (r = parse_list(a, it, "resourceNames", i, &ru.names, st)) < 0 ||
		    (r = parse_list(a, it, "nonResourceURLs", i, &ru.urls, st)) < 0)
			return r;
		if (rules != NULL)
			rules[i] = ru;
	}
	*ret = rules;
	*ret_n = n;
	return 0;
}

static int
parse_role(struct arena *a, enum kind k, const struct json_object *obj,
    struct role *role, struct kc_status *st)
{
	int r;

	if ((r = parse_key(a, k, obj, &role->key, st)) < 0)
		return r;
	return parse_rules(a, kc_json_get(obj, "rules"), &role->rules, &role->nrules, st);
}

/* A required string member of 'o' into the arena. */
static int
take_member(struct arena *a, const struct json_object *o, const char *key,
    bool required, const char *what, const char **ret, struct kc_status *st)
{
	struct json_object *v = kc_json_get(o, key);

	if (v == NULL && !required) {
		*ret = "";
		return 0;
	}
	if (!json_object_is_type(v, json_type_string) ||
	    (required && json_object_get_string_len(v) == 0))
		return kc_status_set(st, KC_EINVALID, "%s.%s: %s", what, key,
		    v == NULL || json_object_is_type(v, json_type_string) ?
		    "Required value" : "expected a string");
	if (take_str(a, json_object_get_string(v), ret) < 0)
		return kc_status_set(st, KC_EINVALID, "%s.%s: longer than %d bytes",
		    what, key, RBAC_STRING_MAX);
	return 0;
}

static int
parse_binding(struct arena *a, enum kind k, const struct json_object *obj,
    struct binding *b, struct kc_status *st)
{
	struct json_object *ref = kc_json_get(obj, "roleRef");
	struct json_object *arr = kc_json_get(obj, "subjects");
	struct subject *subjects;
	size_t n = 0;
	int r;

	if ((r = parse_key(a, k, obj, &b->key, st)) < 0)
		return r;
	if (!json_object_is_type(ref, json_type_object))
		return kc_status_set(st, KC_EINVALID, "roleRef: %s", ref == NULL ?
		    "Required value" : "expected an object");
	if ((r = take_member(a, ref, "kind", true, "roleRef", &b->role_kind, st)) < 0 ||
	    (r = take_member(a, ref, "name", true, "roleRef", &b->role_name, st)) < 0)
		return r;
	if (arr != NULL) {
		if (!json_object_is_type(arr, json_type_array))
			return kc_status_set(st, KC_EINVALID, "subjects: expected an array");
		if ((n = json_object_array_length(arr)) > RBAC_SUBJECTS_MAX)
			return kc_status_set(st, KC_EINVALID, "subjects: more than %d "
			    "subjects", RBAC_SUBJECTS_MAX);
	}
	subjects = arena_take(a, n * sizeof(*subjects), alignof(struct subject));
	for (size_t i = 0; i < n; i++) {
		struct json_object *it = json_object_array_get_idx(arr, i);
		struct subject s;
		char what[32];

		(void)snprintf(what, sizeof(what), "subjects[%zu]", i);
		if (!json_object_is_type(it, json_type_object))
			return kc_status_set(st, KC_EINVALID, "%s: expected an object", what);
		if ((r = take_member(a, it, "kind", true, what, &s.kind, st)) < 0 ||
		    (r = take_member(a, it, "name", true, what, &s.name, st)) < 0 ||
		    (r = take_member(a, it, "namespace", false, what, &s.ns, st)) < 0)
			return r;
		if (subjects != NULL)
			subjects[i] = s;
	}
	b->subjects = subjects;
	b->nsubjects = n;
	return 0;
}

static void
role_free(struct role *role)
{
	if (role == NULL)
		return;
	for (size_t i = 0; i < role->nselectors; i++)
		(void)kc_label_selector_free(role->selectors[i]);
	kc_free(role->selectors);
	if (role->labels != NULL)
		json_object_put(role->labels);
	kc_free(role);
}

static void
item_free(enum kind k, void *item)
{
	if (k == K_ROLE || k == K_CLUSTER_ROLE)
		role_free(item);
	else
		kc_free(item);
}

/* A ClusterRole's labels and aggregation selectors. */
static int
cluster_role_extras(struct role *role, const struct json_object *obj,
    struct kc_status *st)
{
	struct json_object *labels = kc_json_get(obj, "metadata", "labels");
	struct json_object *ar = kc_json_get(obj, "aggregationRule"), *sels;
	size_t n = 0;
	int r;

	if (json_object_is_type(labels, json_type_object) &&
	    (role->labels = kc_json_copy(labels)) == NULL)
		return -ENOMEM;
	if (ar == NULL)
		return 0;
	if (!json_object_is_type(ar, json_type_object))
		return kc_status_set(st, KC_EINVALID, "aggregationRule: expected an object");
	role->aggregated = true;
	if ((sels = kc_json_get(ar, "clusterRoleSelectors")) != NULL) {
		if (!json_object_is_type(sels, json_type_array))
			return kc_status_set(st, KC_EINVALID, "aggregationRule."
			    "clusterRoleSelectors: expected an array");
		if ((n = json_object_array_length(sels)) > RBAC_SELECTORS_MAX)
			return kc_status_set(st, KC_EINVALID, "aggregationRule."
			    "clusterRoleSelectors: more than %d selectors",
			    RBAC_SELECTORS_MAX);
	}
	if ((role->selectors = kc_calloc(n, sizeof(*role->selectors))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct json_object *it = json_object_array_get_idx(sels, i);
		struct kc_label_selector *sel = NULL;
		struct kc_status lst;

		/* A null selector decodes to the empty one: everything. */
		if (it == NULL)
			r = kc_label_selector_parse("", &sel, &lst);
		else
			r = kc_label_selector_from_json(it, &sel, &lst);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			role->agg_invalid = true;
			break;
		}
		role->selectors[role->nselectors++] = sel;
	}
	return 0;
}

static int
build_item(enum kind k, const struct json_object *obj, void **ret,
    struct kc_status *st)
{
	struct arena a = { NULL, 0 };
	size_t head;
	void *item;
	int r;

	if (k == K_ROLE || k == K_CLUSTER_ROLE) {
		struct role tmp;

		memset(&tmp, 0, sizeof(tmp));
		head = sizeof(struct role);
		r = parse_role(&a, k, obj, &tmp, st);
	} else {
		struct binding tmp;

		memset(&tmp, 0, sizeof(tmp));
		head = sizeof(struct binding);
		r = parse_binding(&a, k, obj, &tmp, st);
	}
	if (r < 0)
		return r;
	if (a.off > RBAC_OBJECT_BYTES_MAX)
		return kc_status_set(st, KC_EINVALID, "object larger than %u bytes",
		    RBAC_OBJECT_BYTES_MAX);
	if ((item = kc_calloc(1, head + a.off)) == NULL)
		return -ENOMEM;
	a.base = (char *)item + head;
	a.off = 0;
	if (k == K_ROLE || k == K_CLUSTER_ROLE)
		r = parse_role(&a, k, obj, item, st);
	else
		r = parse_binding(&a, k, obj, item, st);
	if (r == 0 && k == K_CLUSTER_ROLE)
		r = cluster_role_extras(item, obj, st);
	if (r < 0) {
		item_free(k, item);
		return r;
	}
	*ret = item;
	return 0;
}

/*
 * Sorted vectors
 */

static int
key_cmp(const void *item, const char *ns, const char *name)
{
	const struct key *k = item;
	int c = strcmp(k->ns, ns);

	return c != 0 ? c : strcmp(k->name, name);
}

/* Binary search: true and its position, or false and where it would go. */
static bool
vec_find(const struct vec *v, const char *ns, const char *name, size_t *ret_pos)
{
	size_t lo = 0, hi = v->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = key_cmp(v->v[mid], ns, name);

		if (c == 0) {
			*ret_pos = mid;
			return true;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_pos = lo;
	return false;
}

static const void *
vec_get(const struct vec *v, const char *ns, const char *name)
{
	size_t pos;

	return vec_find(v, ns, name, &pos) ? v->v[pos] : NULL;
}

static void
vec_delete(struct vec *v, size_t pos)
{
	memmove(&v->v[pos], &v->v[pos + 1], (v->n - pos - 1) * sizeof(*v->v));
	v->n--;
}

int
rbac_index_new(struct rbac_index **ret)
{
	struct rbac_index *idx;

	if ((idx = kc_calloc(1, sizeof(*idx))) == NULL)
		return -ENOMEM;
	*ret = idx;
	return 0;
}

struct rbac_index *
rbac_index_free(struct rbac_index *idx)
{
	if (idx == NULL)
		return NULL;
	for (size_t k = 0; k < K_NKINDS; k++) {
		for (size_t i = 0; i < idx->vecs[k].n; i++)
			item_free((enum kind)k, idx->vecs[k].v[i]);
		kc_free(idx->vecs[k].v);
	}
	kc_free(idx);
	return NULL;
}

bool
rbac_kind_valid(const char *kind)
{
	enum kind k;

	return kind_of(kind, &k);
}

/* Removes the entry an object that could not be taken would replace. */
static void
drop_key(struct rbac_index *idx, enum kind k, const struct json_object *obj)
{
	const char *name = kc_json_str(obj, "metadata", "name");
	const char *ns = kind_namespaced(k) ? kc_json_str(obj, "metadata", "namespace") : "";

	if (name != NULL && ns != NULL)
		(void)rbac_index_remove(idx, kind_names[k], ns, name);
}

int
rbac_index_put(struct rbac_index *idx, const char *kind, const struct json_object *obj,
    struct kc_status *st)
{
	struct kc_status lst;
	const struct key *key;
	struct vec *v;
	void *item = NULL, **nv;
	size_t pos;
	enum kind k;
	int r;

	if (!kind_of(kind, &k))
		return kc_status_set(st, KC_EINVALID, "not an RBAC kind: \"%s\"", S(kind));
	if (!json_object_is_type(obj, json_type_object))
		return kc_status_set(st, KC_EINVALID, "%s: expected an object", kind);
	v = &idx->vecs[k];
	kc_status_clear(&lst);
	if ((r = build_item(k, obj, &item, &lst)) < 0) {
		drop_key(idx, k, obj);
		if (r == -ENOMEM)
			return r;
		return kc_status_set(st, r, "%s \"%s\": %s", kind,
		    S(kc_json_str(obj, "metadata", "name")), lst.message);
	}
	key = item;
	if (vec_find(v, key->ns, key->name, &pos)) {
		item_free(k, v->v[pos]);
		v->v[pos] = item;
		return 0;
	}
	if (v->n >= RBAC_OBJECTS_MAX) {
		item_free(k, item);
		return kc_status_set(st, -E2BIG, "more than %d objects of kind %s",
		    RBAC_OBJECTS_MAX, kind);
	}
	if (v->n == v->cap) {
		size_t cap = v->cap == 0 ? 16 : v->cap * 2;

		if ((nv = kc_reallocarray(v->v, cap, sizeof(*nv))) == NULL) {
			item_free(k, item);
			return -ENOMEM;
		}
		v->v = nv;
		v->cap = cap;
	}
	memmove(&v->v[pos + 1], &v->v[pos], (v->n - pos) * sizeof(*v->v));
	v->v[pos] = item;
	v->n++;
	return 0;
}

int
rbac_index_remove(struct rbac_index *idx, const char *kind, const char *ns,
    const char *name)
{
	struct vec *v;
	size_t pos;
	enum kind k;

	if (!kind_of(kind, &k))
		return KC_EINVALID;
	v = &idx->vecs[k];
	if (!vec_find(v, kind_namespaced(k) ? S(ns) : "", S(name), &pos))
		return KC_ENOTFOUND;
	item_free(k, v->v[pos]);
	vec_delete(v, pos);
	return 0;
}

size_t
rbac_index_count(const struct rbac_index *idx, const char *kind)
{
	enum kind k;

	return kind_of(kind, &k) ? idx->vecs[k].n : 0;
}

/*
 * Rule evaluation (rbac.go, k8s.io/kubernetes pkg/apis/rbac/v1/evaluation_helpers.go)
 */

static bool
list_has(const struct strlist *l, const char *s, const char *all)
{
	for (size_t i = 0; i < l->n; i++)
		if ((all != NULL && strcmp(l->v[i], all) == 0) || strcmp(l->v[i], s) == 0)
			return true;
	return false;
}

/* Whether 'rr' equals res, or res + "/" + sub when sub is not empty. */
static bool
combined_eq(const char *rr, const char *res, const char *sub)
{
	size_t rl = strlen(res);

	if (sub[0] == '\0')
		return strcmp(rr, res) == 0;
	return strncmp(rr, res, rl) == 0 && rr[rl] == '/' && strcmp(rr + rl + 1, sub) == 0;
}

static bool
resource_matches(const struct rule *ru, const char *res, const char *sub)
{
	for (size_t i = 0; i < ru->resources.n; i++) {
		const char *rr = ru->resources.v[i];

		if (strcmp(rr, "*") == 0 || combined_eq(rr, res, sub))
			return true;
		if (sub[0] != '\0' && rr[0] == '*' && rr[1] == '/' && strcmp(rr + 2, sub) == 0)
			return true;
	}
	return false;
}

static bool
url_matches(const struct rule *ru, const char *path)
{
	for (size_t i = 0; i < ru->urls.n; i++) {
		const char *u = ru->urls.v[i];
		size_t n = strlen(u);

		if (strcmp(u, "*") == 0 || strcmp(u, path) == 0)
			return true;
		if (n > 0 && u[n - 1] == '*') {
			while (n > 0 && u[n - 1] == '*')
				n--;
			if (strncmp(path, u, n) == 0)
				return true;
		}
	}
	return false;
}

static bool
rule_allows(const struct rbac_attrs *a, const struct rule *ru)
{
	if (!list_has(&ru->verbs, S(a->verb), "*"))
		return false;
	if (!a->resource_request)
		return url_matches(ru, S(a->path));
	return list_has(&ru->groups, S(a->group), "*") &&
	    resource_matches(ru, S(a->resource), S(a->subresource)) &&
	    (ru->names.n == 0 || list_has(&ru->names, S(a->name), NULL));
}

static bool
user_in_group(const struct rbac_user *u, const char *g)
{
	for (size_t i = 0; i < u->ngroups; i++)
		if (strcmp(S(u->groups[i]), g) == 0)
			return true;
	return false;
}

bool
rbac_user_is_privileged(const struct rbac_user *user)
{
	return user != NULL && user_in_group(user, "system:masters");
}

/* serviceaccount.MatchesUsername: "system:serviceaccount:<ns>:<name>". */
static bool
sa_matches(const char *ns, const char *name, const char *user)
{
	size_t pl = strlen(SA_PREFIX), nl = strlen(ns);

	return strncmp(user, SA_PREFIX, pl) == 0 && strncmp(user + pl, ns, nl) == 0 &&
	    user[pl + nl] == ':' && strcmp(user + pl + nl + 1, name) == 0;
}

/* appliesTo: the first subject of 'b' that is the user, or NULL. */
static const struct subject *
applies_to(const struct rbac_user *u, const struct binding *b, const char *ns)
{
	for (size_t i = 0; i < b->nsubjects; i++) {
		const struct subject *s = &b->subjects[i];

		if (strcmp(s->kind, "User") == 0) {
			if (strcmp(S(u->name), s->name) == 0)
				return s;
		} else if (strcmp(s->kind, "Group") == 0) {
			if (user_in_group(u, s->name))
				return s;
		} else if (strcmp(s->kind, "ServiceAccount") == 0) {
			const char *sa_ns = s->ns[0] != '\0' ? s->ns : ns;

			if (sa_ns[0] != '\0' && sa_matches(sa_ns, s->name, S(u->name)))
				return s;
		}
	}
	return NULL;
}

static bool
is_cluster_binding(const struct binding *b)
{
	return b->key.ns[0] == '\0';
}

/* GetRoleReferenceRules: the role a binding names, or NULL. */
static const struct role *
ref_role(const struct rbac_index *idx, const struct binding *b)
{
	if (strcmp(b->role_kind, "Role") == 0)
		return is_cluster_binding(b) ? NULL :
		    vec_get(&idx->vecs[K_ROLE], b->key.ns, b->role_name);
	if (strcmp(b->role_kind, "ClusterRole") == 0)
		return vec_get(&idx->vecs[K_CLUSTER_ROLE], "", b->role_name);
	return NULL;
}

/*
 * Called for each rule that applies (binding, subject and rule), or with
 * rule NULL for an applying binding whose role cannot be resolved.
 * Returns false to stop the walk.
 */
typedef bool visit_fn(void *arg, const struct binding *b, const struct subject *s,
    const struct rule *rule);

static bool
visit_binding(const struct rbac_index *idx, const struct rbac_user *u,
    const struct binding *b, const char *ns, visit_fn *fn, void *arg)
{
	const struct subject *s;
	const struct role *role;

	if ((s = applies_to(u, b, ns)) == NULL)
		return true;
	if ((role = ref_role(idx, b)) == NULL)
		return fn(arg, b, s, NULL);
	for (size_t i = 0; i < role->nrules; i++)
		if (!fn(arg, b, s, &role->rules[i]))
			return false;
	return true;
}

/* VisitRulesFor. */
static void
visit_rules_for(const struct rbac_index *idx, const struct rbac_user *u,
    const char *ns, visit_fn *fn, void *arg)
{
	const struct vec *crbs = &idx->vecs[K_CLUSTER_ROLE_BINDING];
	const struct vec *rbs = &idx->vecs[K_ROLE_BINDING];
	size_t pos;

	for (size_t i = 0; i < crbs->n; i++)
		if (!visit_binding(idx, u, crbs->v[i], "", fn, arg))
			return;
	if (ns[0] == '\0')
		return;
	(void)vec_find(rbs, ns, "", &pos);
	for (size_t i = pos; i < rbs->n; i++) {
		const struct binding *b = rbs->v[i];

		if (strcmp(b->key.ns, ns) != 0)
			break;
		if (!visit_binding(idx, u, b, ns, fn, arg))
			return;
	}
}

/*
 * Errors of unresolvable roles, deduplicated by message as
 * utilerrors.Aggregate prints them.
 */
struct errset {
	const struct binding	*v[RBAC_REASON_ERRORS_MAX];
	size_t			 n;
};

static bool
known_ref_kind(const char *kind)
{
	return strcmp(kind, "Role") == 0 || strcmp(kind, "ClusterRole") == 0;
}

static void
errset_add(struct errset *e, const struct binding *b)
{
	for (size_t i = 0; i < e->n; i++)
		if (strcmp(e->v[i]->role_kind, b->role_kind) == 0 &&
		    (!known_ref_kind(b->role_kind) ||
		    strcmp(e->v[i]->role_name, b->role_name) == 0))
			return;
	if (e->n < RBAC_REASON_ERRORS_MAX)
		e->v[e->n++] = b;
}

/*
 * The error of a role that cannot be resolved: the authorizer's listers
 * name the resource in the singular, the registry's getters (the
 * escalation checks') in the plural.
 */
static void
sb_binding_error(struct kc_sbuf *sb, const struct binding *b, bool plural)
{
	if (strcmp(b->role_kind, "Role") == 0)
		kc_sbuf_puts(sb, plural ? "roles." RBAC_GROUP " " : "role." RBAC_GROUP " ");
	else if (strcmp(b->role_kind, "ClusterRole") == 0)
		kc_sbuf_puts(sb, plural ? "clusterroles." RBAC_GROUP " " :
		    "clusterrole." RBAC_GROUP " ");
	else {
		kc_sbuf_puts(sb, "unsupported role reference kind: ");
		sb_quote(sb, b->role_kind);
		return;
	}
	sb_quote(sb, b->role_name);
	kc_sbuf_puts(sb, " not found");
}

static void
sb_errset(struct kc_sbuf *sb, const struct errset *e, bool plural)
{
	if (e->n > 1)
		kc_sbuf_putc(sb, '[');
	for (size_t i = 0; i < e->n; i++) {
		if (i > 0)
			kc_sbuf_puts(sb, ", ");
		sb_binding_error(sb, e->v[i], plural);
	}
	if (e->n > 1)
		kc_sbuf_putc(sb, ']');
}

struct authz {
	const struct rbac_attrs	*a;
	const struct binding	*b;
	const struct subject	*s;
	struct errset		 errs;
};

static bool
authz_visit(void *arg, const struct binding *b, const struct subject *s,
    const struct rule *rule)
{
	struct authz *z = arg;

	if (rule == NULL) {
		errset_add(&z->errs, b);
		return true;
	}
	if (!rule_allows(z->a, rule))
		return true;
	z->b = b;
	z->s = s;
	return false;
}

/* The clusterRoleBindingDescriber and roleBindingDescriber strings. */
static void
sb_describe(struct kc_sbuf *sb, const struct binding *b, const struct subject *s)
{
	if (is_cluster_binding(b)) {
		kc_sbuf_puts(sb, "ClusterRoleBinding ");
		sb_quote(sb, b->key.name);
	} else {
		kc_sbuf_puts(sb, "RoleBinding ");
		sb_quote_pair(sb, b->key.name, b->key.ns);
	}
	kc_sbuf_puts(sb, " of ");
	kc_sbuf_puts(sb, b->role_kind);
	kc_sbuf_putc(sb, ' ');
	sb_quote(sb, b->role_name);
	kc_sbuf_puts(sb, " to ");
	kc_sbuf_puts(sb, s->kind);
	kc_sbuf_putc(sb, ' ');
	if (strcmp(s->kind, "ServiceAccount") == 0)
		sb_quote_pair(sb, s->name, s->ns[0] != '\0' ? s->ns : b->key.ns);
	else
		sb_quote(sb, s->name);
}

bool
rbac_authorize(const struct rbac_index *idx, const struct rbac_user *user,
    const struct rbac_attrs *a, char *reason, size_t size)
{
	struct kc_sbuf sb;
	struct authz z;

	kc_sbuf_init(&sb, reason, size);
	memset(&z, 0, sizeof(z));
	z.a = a;
	visit_rules_for(idx, user != NULL ? user : &nobody, S(a->ns), authz_visit, &z);
	if (z.b != NULL) {
		kc_sbuf_puts(&sb, "RBAC: allowed by ");
		sb_describe(&sb, z.b, z.s);
	} else if (z.errs.n > 0) {
		kc_sbuf_puts(&sb, "RBAC: ");
		sb_errset(&sb, &z.errs, false);
	}
	return z.b != NULL;
}

/*
 * JSON output of rules
 */

static struct json_object *
strlist_json(const struct strlist *l)
{
	struct json_object *arr = json_object_new_array_ext((int)l->n);

	if (arr == NULL)
		return NULL;
	for (size_t i = 0; i < l->n; i++)
		if (kc_json_append(arr, json_object_new_string(l->v[i])) < 0) {
			json_object_put(arr);
			return NULL;
		}
	return arr;
}

/* Adds 'key': the list, always or only when it is not empty (omitempty). */
static int
put_list(struct json_object *o, const char *key, const struct strlist *l, bool always)
{
	if (l->n == 0 && !always)
		return 0;
	return kc_json_put(o, key, strlist_json(l));
}

/* rbac/v1 PolicyRule. */
static struct json_object *
rule_json(const struct rule *ru)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL || put_list(o, "verbs", &ru->verbs, true) < 0 ||
	    put_list(o, "apiGroups", &ru->groups, false) < 0 ||
	    put_list(o, "resources", &ru->resources, false) < 0 ||
	    put_list(o, "resourceNames", &ru->names, false) < 0 ||
	    put_list(o, "nonResourceURLs", &ru->urls, false) < 0) {
		if (o != NULL)
			json_object_put(o);
		return NULL;
	}
	return o;
}

/*
 * SelfSubjectRulesReview
 */

struct review {
	struct json_object	*res;
	struct json_object	*nonres;
	size_t			 count;
	bool			 incomplete;
	int			 r;
	struct errset		 errs;
};

/* authorization/v1 ResourceRule or NonResourceRule of a rule. */
static struct json_object *
review_rule_json(const struct rule *ru, bool resource)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL || put_list(o, "verbs", &ru->verbs, true) < 0 ||
	    (resource && (put_list(o, "apiGroups", &ru->groups, false) < 0 ||
	    put_list(o, "resources", &ru->resources, false) < 0 ||
	    put_list(o, "resourceNames", &ru->names, false) < 0)) ||
	    (!resource && put_list(o, "nonResourceURLs", &ru->urls, false) < 0)) {
		if (o != NULL)
			json_object_put(o);
		return NULL;
	}
	return o;
}

static bool
review_visit(void *arg, const struct binding *b, const struct subject *s,
    const struct rule *ru)
{
	struct review *rv = arg;

	(void)s;
	if (ru == NULL) {
		errset_add(&rv->errs, b);
		return true;
	}
	if (rv->count >= RBAC_REVIEW_RULES_MAX) {
		rv->incomplete = true;
		return false;
	}
	rv->count++;
	if ((ru->resources.n > 0 &&
	    kc_json_append(rv->res, review_rule_json(ru, true)) < 0) ||
	    (ru->urls.n > 0 &&
	    kc_json_append(rv->nonres, review_rule_json(ru, false)) < 0)) {
		rv->r = -ENOMEM;
		return false;
	}
	return true;
}

int
rbac_rules_review(const struct rbac_index *idx, const struct rbac_user *user,
    const char *ns, struct json_object **ret, struct kc_status *st)
{
	struct json_object *out = NULL, *status;
	struct review rv;
	char msg[RBAC_REASON_MAX];
	struct kc_sbuf sb;

	kc_sbuf_init(&sb, msg, sizeof(msg));
	if (ns == NULL || ns[0] == '\0')
		return kc_status_set(st, KC_EBADREQUEST, "no namespace on request");
	memset(&rv, 0, sizeof(rv));
	rv.res = json_object_new_array();
	rv.nonres = json_object_new_array();
	if (rv.res == NULL || rv.nonres == NULL)
		goto nomem;
	visit_rules_for(idx, user != NULL ? user : &nobody, ns, review_visit, &rv);
	if (rv.r < 0)
		goto nomem;
	if ((out = json_object_new_object()) == NULL ||
	    kc_json_set_str(out, "kind", "SelfSubjectRulesReview") < 0 ||
	    kc_json_set_str(out, "apiVersion", "authorization.k8s.io/v1") < 0 ||
	    kc_json_put(out, "metadata", json_object_new_object()) < 0 ||
	    kc_json_put_null(kc_json_get(out, "metadata"), "creationTimestamp") < 0 ||
	    kc_json_put(out, "spec", json_object_new_object()) < 0 ||
	    (status = kc_json_ensure_obj(out, "status")) == NULL)
		goto nomem;
	if (kc_json_put(status, "resourceRules", rv.res) < 0) {
		rv.res = NULL;
		goto nomem;
	}
	rv.res = NULL;
	if (kc_json_put(status, "nonResourceRules", rv.nonres) < 0) {
		rv.nonres = NULL;
		goto nomem;
	}
	rv.nonres = NULL;
	if (kc_json_set_bool(status, "incomplete", rv.incomplete) < 0)
		goto nomem;
	if (rv.errs.n > 0) {
		sb_errset(&sb, &rv.errs, false);
		if (kc_json_set_str(status, "evaluationError", msg) < 0)
			goto nomem;
	}
	*ret = out;
	return 0;
nomem:
	if (rv.res != NULL)
		json_object_put(rv.res);
	if (rv.nonres != NULL)
		json_object_put(rv.nonres);
	if (out != NULL)
		json_object_put(out);
	return -ENOMEM;
}

/*
 * Aggregation (pkg/controller/clusterroleaggregation)
 */

struct rlist {
	const struct rule	**v;
	size_t			  n;
	size_t			  cap;
};

static bool
strlist_equal(const struct strlist *a, const struct strlist *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]) != 0)
			return false;
	return true;
}

static bool
rule_equal(const struct rule *a, const struct rule *b)
{
	return a == b || (strlist_equal(&a->verbs, &b->verbs) &&
	    strlist_equal(&a->groups, &b->groups) &&
	    strlist_equal(&a->resources, &b->resources) &&
	    strlist_equal(&a->names, &b->names) && strlist_equal(&a->urls, &b->urls));
}

static bool
rlist_has(const struct rlist *l, const struct rule *ru)
{
	for (size_t i = 0; i < l->n; i++)
		if (rule_equal(l->v[i], ru))
			return true;
	return false;
}

static int
rlist_push(struct rlist *l, const struct rule *ru)
{
	if (l->n == l->cap) {
		size_t cap = l->cap == 0 ? 16 : l->cap * 2;
		const struct rule **nv = kc_reallocarray(l->v, cap, sizeof(*nv));

		if (nv == NULL)
			return -ENOMEM;
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n++] = ru;
	return 0;
}

static bool
rlist_equal(const struct rlist *a, const struct rlist *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (!rule_equal(a->v[i], b->v[i]))
			return false;
	return true;
}

static void
rlist_free(struct rlist *l)
{
	l->v = kc_free(l->v);
	l->n = l->cap = 0;
}

/*
 * syncClusterRole for role 'i' over the working sets 'cur': the new
 * union in '*ret'. 0, -ENOMEM, or -E2BIG past RBAC_RULES_MAX.
 */
static int
aggregate_one(const struct vec *crs, const struct rlist *cur, size_t i,
    struct rlist *ret)
{
	const struct role *role = crs->v[i];
	struct rlist next = { NULL, 0, 0 };
	int r;

	for (size_t s = 0; s < role->nselectors; s++)
		for (size_t c = 0; c < crs->n; c++) {
			const struct role *other = crs->v[c];

			if (c == i ||
			    !kc_label_selector_matches(role->selectors[s], other->labels))
				continue;
			for (size_t j = 0; j < cur[c].n; j++) {
				if (rlist_has(&next, cur[c].v[j]))
					continue;
				if (next.n >= RBAC_RULES_MAX) {
					rlist_free(&next);
					return -E2BIG;
				}
				if ((r = rlist_push(&next, cur[c].v[j])) < 0) {
					rlist_free(&next);
					return r;
				}
			}
		}
	*ret = next;
	return 0;
}

static int
aggregate_result(const struct role *role, const struct rlist *l, struct json_object *out)
{
	struct json_object *o, *rules;
	bool same = l->n == role->nrules;

	for (size_t j = 0; same && j < l->n; j++)
		same = rule_equal(l->v[j], &role->rules[j]);
	if (same)
		return 0;
	if ((o = json_object_new_object()) == NULL)
		return -ENOMEM;
	if (kc_json_set_str(o, "name", role->key.name) < 0 ||
	    kc_json_put(o, "rules", rules = json_object_new_array_ext((int)l->n)) < 0)
		goto nomem;
	for (size_t j = 0; j < l->n; j++)
		if (kc_json_append(rules, rule_json(l->v[j])) < 0)
			goto nomem;
	return kc_json_append(out, o);
nomem:
	json_object_put(o);
	return -ENOMEM;
}

int
rbac_aggregate(const struct rbac_index *idx, struct json_object **ret)
{
	const struct vec *crs = &idx->vecs[K_CLUSTER_ROLE];
	struct json_object *out = NULL;
	struct rlist *cur;
	bool changed = true;
	int r = -ENOMEM;

	if ((cur = kc_calloc(crs->n, sizeof(*cur))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < crs->n; i++) {
		const struct role *role = crs->v[i];

		for (size_t j = 0; j < role->nrules; j++)
			if ((r = rlist_push(&cur[i], &role->rules[j])) < 0)
				goto out;
	}
	for (size_t round = 0; changed && round < RBAC_AGGREGATE_ROUNDS_MAX; round++) {
		changed = false;
		for (size_t i = 0; i < crs->n; i++) {
			const struct role *role = crs->v[i];
			struct rlist next;

			if (!role->aggregated || role->agg_invalid)
				continue;
			if ((r = aggregate_one(crs, cur, i, &next)) == -E2BIG)
				continue;
			if (r < 0)
				goto out;
			if (rlist_equal(&next, &cur[i])) {
				rlist_free(&next);
				continue;
			}
			rlist_free(&cur[i]);
			cur[i] = next;
			changed = true;
		}
	}
	r = -ENOMEM;
	if ((out = json_object_new_array()) == NULL)
		goto out;
	for (size_t i = 0; i < crs->n; i++) {
		const struct role *role = crs->v[i];

		if (role->aggregated && !role->agg_invalid &&
		    (r = aggregate_result(role, &cur[i], out)) < 0)
			goto out;
	}
	*ret = out;
	out = NULL;
	r = 0;
out:
	for (size_t i = 0; i < crs->n; i++)
		rlist_free(&cur[i]);
	kc_free(cur);
	if (out != NULL)
		json_object_put(out);
	return r;
}

/*
 * Escalation prevention: ConfirmNoEscalation (pkg/registry/rbac/validation/
 * rule.go) over Covers and BreakdownRule (k8s.io/component-helpers
 * auth/rbac/validation), CompactRules (policy_compact.go) and
 * CompactString (pkg/apis/rbac/v1).
 *
 * The rules to grant are broken down into tuples of one verb and one
 * (group, resource[, name]) or one URL; a tuple is covered when a single
 * rule the user holds covers it. The uncovered tuples are compacted (those
 * of one group, resource and name share a line, their verbs in order) and
 * listed sorted, one a line, as upstream's set of strings prints.
 */

/* One rule of BreakdownRule. */
struct tuple {
	const char	*verb;
	const char	*group;		/* NULL for a URL */
	const char	*resource;
	const char	*name;		/* NULL: no resourceNames */
	const char	*url;		/* NULL for a resource */
	size_t		 seq;		/* breakdown order */
};

struct tuples {
	struct tuple	*v;
	size_t		 n;
	size_t		 cap;
	size_t		 checked;	/* tuples compared so far */
};

/* resourceCoversAll for one resource: "*", itself, or "*\/<sub>". */
static bool
resource_covers(const struct strlist *set, const char *res)
{
	const char *slash;

	if (list_has(set, res, "*"))
		return true;
	if ((slash = strchr(res, '/')) == NULL)
		return false;
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i][0] == '*' && set->v[i][1] == '/' &&
		    strcmp(set->v[i] + 2, slash + 1) == 0)
			return true;
	return false;
}

/* nonResourceURLCovers. */
static bool
url_covers(const char *owner, const char *path)
{
	size_t n = strlen(owner);

	if (strcmp(owner, path) == 0)
		return true;
	if (n == 0 || owner[n - 1] != '*')
		return false;
	while (n > 0 && owner[n - 1] == '*')
		n--;
	return strncmp(path, owner, n) == 0;
}

/* ruleCovers: whether 'o' covers the tuple 't'. */
static bool
rule_covers(const struct rule *o, const struct tuple *t)
{
	bool url = false;

	if (!list_has(&o->verbs, t->verb, "*"))
		return false;
	if (t->url == NULL) {
		if (!list_has(&o->groups, t->group, "*") ||
		    !resource_covers(&o->resources, t->resource))
			return false;
	} else {
		for (size_t i = 0; i < o->urls.n && !url; i++)
			url = url_covers(o->urls.v[i], t->url);
		if (!url)
			return false;
	}
	if (t->name == NULL)
		return o->names.n == 0;
	return o->names.n == 0 || list_has(&o->names, t->name, NULL);
}

/* Compares one tuple with the owner's rules; keeps it when none covers it. */
static int
check_tuple(struct tuples *m, const struct rule *const *owner, size_t nowner,
    const struct tuple *t)
{
	if (++m->checked > RBAC_BREAKDOWN_MAX)
		return -E2BIG;
	for (size_t i = 0; i < nowner; i++)
		if (rule_covers(owner[i], t))
			return 0;
	if (m->n == m->cap) {
		size_t cap = m->cap == 0 ? 16 : m->cap * 2;
		struct tuple *nv = kc_reallocarray(m->v, cap, sizeof(*nv));

		if (nv == NULL)
			return -ENOMEM;
		m->v = nv;
		m->cap = cap;
	}
	m->v[m->n] = *t;
	m->v[m->n].seq = m->n;
	m->n++;
	return 0;
}

/* Covers: the tuples of 'rules' that no rule of 'owner' covers, into 'm'. */
static int
covers(const struct rule *const *owner, size_t nowner, const struct rule *rules,
    size_t nrules, struct tuples *m)
{
	int r;

	for (size_t i = 0; i < nrules; i++) {
		const struct rule *ru = &rules[i];
		struct tuple t = { 0 };

		for (size_t g = 0; g < ru->groups.n; g++)
			for (size_t res = 0; res < ru->resources.n; res++)
				for (size_t v = 0; v < ru->verbs.n; v++) {
					t = (struct tuple){ .verb = ru->verbs.v[v],
					    .group = ru->groups.v[g],
					    .resource = ru->resources.v[res] };
					if (ru->names.n == 0) {
						if ((r = check_tuple(m, owner, nowner, &t)) < 0)
							return r;
						continue;
					}
					for (size_t nm = 0; nm < ru->names.n; nm++) {
						t.name = ru->names.v[nm];
						if ((r = check_tuple(m, owner, nowner, &t)) < 0)
							return r;
					}
				}
		for (size_t u = 0; u < ru->urls.n; u++)
			for (size_t v = 0; v < ru->verbs.n; v++) {
				t = (struct tuple){ .verb = ru->verbs.v[v], .url = ru->urls.v[u] };
				if ((r = check_tuple(m, owner, nowner, &t)) < 0)
					return r;
			}
	}
	return 0;
}

static int
strcmp_null(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

/* CompactRules' key (group, resource, name), then breakdown order. */
static int
tuple_cmp(const void *pa, const void *pb)
{
	const struct tuple *a = pa, *b = pb;
	int c;

	if ((c = strcmp_null(a->url, b->url)) != 0 ||
	    (c = strcmp_null(a->group, b->group)) != 0 ||
	    (c = strcmp_null(a->resource, b->resource)) != 0 ||
	    (c = strcmp_null(a->name, b->name)) != 0)
		return c;
	return (a->seq > b->seq) - (a->seq < b->seq);
}

static bool
same_key(const struct tuple *a, const struct tuple *b)
{
	return a->url == NULL && b->url == NULL && strcmp(a->group, b->group) == 0 &&
	    strcmp(a->resource, b->resource) == 0 && strcmp_null(a->name, b->name) == 0;
}

/* Go's %q of a one-string []string: ["s"]. */
static void
sb_qlist1(struct kc_sbuf *sb, const char *s)
{
	kc_sbuf_putc(sb, '[');
	sb_quote(sb, s);
	kc_sbuf_putc(sb, ']');
}

/*
 * CompactString of the compacted rule of v[0..n) (one key): APIGroups,
 * Resources, NonResourceURLs, ResourceNames, Verbs, the verbs without
 * repeats in the order met.
 */
static void
sb_compact(struct kc_sbuf *sb, const struct tuple *v, size_t n)
{
	kc_sbuf_putc(sb, '{');
	if (v[0].url == NULL) {
		kc_sbuf_puts(sb, "APIGroups:");
		sb_qlist1(sb, v[0].group);
		kc_sbuf_puts(sb, ", Resources:");
		sb_qlist1(sb, v[0].resource);
	} else {
		kc_sbuf_puts(sb, "NonResourceURLs:");
		sb_qlist1(sb, v[0].url);
	}
	if (v[0].name != NULL) {
		kc_sbuf_puts(sb, ", ResourceNames:");
		sb_qlist1(sb, v[0].name);
	}
	kc_sbuf_puts(sb, ", Verbs:[");
	for (size_t i = 0; i < n; i++) {
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(v[j].verb, v[i].verb) == 0;
		if (seen)
			continue;
		if (i > 0)
			kc_sbuf_putc(sb, ' ');
		sb_quote(sb, v[i].verb);
	}
	kc_sbuf_puts(sb, "]}");
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct lines {
	char	**v;
	size_t	  n;
	size_t	  bytes;
};

static void
lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		kc_free(l->v[i]);
	l->v = kc_free(l->v);
	l->n = 0;
}

/*
 * The sorted, distinct CompactStrings of the missing tuples (sorted in
 * place). Past RBAC_MESSAGE_MAX bytes the rest are left out.
 */
static int
missing_lines(struct tuples *m, struct lines *ret)
{
	struct lines l = { NULL, 0, 0 };
	size_t o = 0;

	qsort(m->v, m->n, sizeof(*m->v), tuple_cmp);
	if ((l.v = kc_calloc(m->n + 1, sizeof(*l.v))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < m->n && l.bytes <= RBAC_MESSAGE_MAX; i = o) {
		struct kc_sbuf sb;
		size_t len;

		for (o = i + 1; o < m->n && same_key(&m->v[i], &m->v[o]); o++)
			;
		kc_sbuf_init(&sb, NULL, 0);
		sb_compact(&sb, &m->v[i], o - i);
		len = kc_sbuf_end(&sb);
		if ((l.v[l.n] = kc_malloc(len + 1)) == NULL) {
			lines_free(&l);
			return -ENOMEM;
		}
		kc_sbuf_init(&sb, l.v[l.n], len + 1);
		sb_compact(&sb, &m->v[i], o - i);
		l.n++;
		l.bytes += len + 1;
	}
	qsort(l.v, l.n, sizeof(*l.v), str_cmp);
	o = 0;
	for (size_t i = 0; i < l.n; i++) {
		if (o > 0 && strcmp(l.v[o - 1], l.v[i]) == 0) {
			kc_free(l.v[i]);
			continue;
		}
		l.v[o++] = l.v[i];
	}
	l.n = o;
	*ret = l;
	return 0;
}

/* The owner's rules (RulesFor) and the errors met resolving them. */
struct owner {
	struct rlist	rules;
	struct errset	errs;
	int		r;
};

static bool
owner_visit(void *arg, const struct binding *b, const struct subject *s,
    const struct rule *ru)
{
	struct owner *ow = arg;

	(void)s;
	if (ru == NULL) {
		errset_add(&ow->errs, b);
		return true;
	}
	if (ow->rules.n >= RBAC_BREAKDOWN_MAX) {
		ow->r = -E2BIG;
		return false;
	}
	if ((ow->r = rlist_push(&ow->rules, ru)) < 0)
		return false;
	return true;
}

static void
sb_user_groups(struct kc_sbuf *sb, const struct rbac_user *u)
{
	kc_sbuf_puts(sb, "user ");
	sb_quote(sb, u->name);
	kc_sbuf_puts(sb, " (groups=[");
	for (size_t i = 0; i < u->ngroups; i++) {
		if (i > 0)
			kc_sbuf_putc(sb, ' ');
		sb_quote(sb, u->groups[i]);
	}
	kc_sbuf_puts(sb, "]) is attempting to grant RBAC permissions not currently held:\n");
}

static void
sb_escalation(struct kc_sbuf *sb, const struct rbac_user *u, const struct lines *l,
    const struct errset *errs, bool too_many)
{
	sb_user_groups(sb, u);
	if (too_many)
		kc_sbuf_printf(sb, "more than %d permissions to compare", RBAC_BREAKDOWN_MAX);
	for (size_t i = 0; i < l->n; i++) {
		if (i > 0)
			kc_sbuf_putc(sb, '\n');
		kc_sbuf_puts(sb, l->v[i]);
	}
	if (errs->n > 0) {
		kc_sbuf_puts(sb, "; resolution errors: [");
		sb_errset(sb, errs, true);
		kc_sbuf_putc(sb, ']');
	}
}

/* A new string of what sb_escalation() writes, cut at RBAC_MESSAGE_MAX. */
static char *
escalation_message(const struct rbac_user *u, const struct lines *l,
    const struct errset *errs, bool too_many)
{
	struct kc_sbuf sb;
	size_t len;
	char *msg;

	kc_sbuf_init(&sb, NULL, 0);
	sb_escalation(&sb, u, l, errs, too_many);
	len = kc_sbuf_end(&sb);
	if (len > RBAC_MESSAGE_MAX)
		len = RBAC_MESSAGE_MAX;
	if ((msg = kc_malloc(len + 1)) == NULL)
		return NULL;
	kc_sbuf_init(&sb, msg, len + 1);
	sb_escalation(&sb, u, l, errs, too_many);
	return msg;
}

/* ConfirmNoEscalation of 'rules' for 'u' in 'ns'. */
static int
confirm(const struct rbac_index *idx, const struct rbac_user *u, const char *ns,
    const struct rule *rules, size_t nrules, char **ret_msg)
{
	struct owner ow;
	struct tuples m = { NULL, 0, 0, 0 };
	struct lines l = { NULL, 0, 0 };
	bool too_many = false;
	int r;

	*ret_msg = NULL;
	memset(&ow, 0, sizeof(ow));
	u = u != NULL ? u : &nobody;
	visit_rules_for(idx, u, S(ns), owner_visit, &ow);
	if (ow.r == -ENOMEM) {
		r = -ENOMEM;
		goto out;
	}
	too_many = ow.r == -E2BIG;
	if (!too_many) {
		r = covers((const struct rule *const *)ow.rules.v, ow.rules.n, rules, nrules,
		    &m);
		if (r == -ENOMEM)
			goto out;
		too_many = r == -E2BIG;
	}
	if (!too_many && m.n == 0) {
		r = 0;
		goto out;
	}
	if (too_many)
		m.n = 0;
	if ((r = missing_lines(&m, &l)) < 0)
		goto out;
	r = (*ret_msg = escalation_message(u, &l, &ow.errs, too_many)) != NULL ?
	    KC_EFORBIDDEN : -ENOMEM;
out:
	lines_free(&l);
	kc_free(m.v);
	rlist_free(&ow.rules);
	return r;
}

/* The full authority an aggregationRule needs: * on *.*, and * on every URL. */
static const char *const star[] = { "*" };
static const struct rule full_authority[] = {
	{ .verbs = { star, 1 }, .groups = { star, 1 }, .resources = { star, 1 } },
	{ .verbs = { star, 1 }, .urls = { star, 1 } },
};

/* Whether 'o' has an aggregationRule with at least one selector. */
static bool
has_aggregation_rule(const struct json_object *o)
{
	const struct json_object *sels = kc_json_get(o, "aggregationRule",
	    "clusterRoleSelectors");

	return json_object_is_type(sels, json_type_array) &&
	    json_object_array_length(sels) > 0;
}

int
rbac_confirm_role(const struct rbac_index *idx, const struct rbac_user *user,
    const char *ns, const struct json_object *obj, const struct json_object *old,
    char **ret_msg, struct kc_status *st)
{
	struct arena a = { NULL, 0 };
	const struct rule *rules;
	struct rule *block;
	size_t n;
	int r;

	*ret_msg = NULL;
	if ((r = parse_rules(&a, kc_json_get(obj, "rules"), &rules, &n, st)) < 0)
		return r;
	if ((block = kc_calloc(1, a.off > 0 ? a.off : 1)) == NULL)
		return -ENOMEM;
	a.base = (char *)block;
	a.off = 0;
	(void)parse_rules(&a, kc_json_get(obj, "rules"), &rules, &n, st);
	r = confirm(idx, user, ns, rules, n, ret_msg);
	kc_free(block);
	if (r != 0 || (!has_aggregation_rule(obj) && !has_aggregation_rule(old)))
		return r;
	if ((r = confirm(idx, user, ns, full_authority, KC_ARRAY_SIZE(full_authority),
	    ret_msg)) != KC_EFORBIDDEN)
		return r;
	kc_free(*ret_msg);
	*ret_msg = kc_strdup("must have cluster-admin privileges to use the aggregationRule");
	return *ret_msg != NULL ? KC_EFORBIDDEN : -ENOMEM;
}

int
rbac_confirm_binding(const struct rbac_index *idx, const struct rbac_user *user,
    const char *ns, const char *role_kind, const char *role_name, char **ret_msg)
{
	struct binding b = { .key = { S(ns), "" }, .role_kind = S(role_kind),
	    .role_name = S(role_name) };
	const struct role *role;
	struct kc_sbuf sb;
	size_t len;

	*ret_msg = NULL;
	if ((role = ref_role(idx, &b)) != NULL)
		return confirm(idx, user, ns, role->rules, role->nrules, ret_msg);
	kc_sbuf_init(&sb, NULL, 0);
	sb_binding_error(&sb, &b, true);
	len = kc_sbuf_end(&sb);
	if ((*ret_msg = kc_malloc(len + 1)) == NULL)
		return -ENOMEM;
	kc_sbuf_init(&sb, *ret_msg, len + 1);
	sb_binding_error(&sb, &b, true);
	return known_ref_kind(b.role_kind) ? KC_ENOTFOUND : KC_EINTERNAL;
}

/*
 * Bootstrap policy, as plugin/pkg/auth/authorizer/rbac/bootstrappolicy
 * stores it (PolicyRuleBuilder sorts every list).
 */

#define L(...)		((const char *const []){ __VA_ARGS__, NULL })
#define READ		L("get", "list", "watch")
#define WRITE		L("create", "delete", "deletecollection", "patch", "update")
#define READ_WRITE	L("create", "delete", "deletecollection", "get", "list", "patch", \
			    "update", "watch")

struct brule {
	const char *const	*verbs;
	const char *const	*groups;
	const char *const	*resources;
	const char *const	*urls;
};

static const struct brule rules_cluster_admin[] = {
	{ L("*"), L("*"), L("*"), NULL },
	{ L("*"), NULL, NULL, L("*") },
};

static const struct brule rules_discovery[] = {
	{ L("get"), NULL, NULL, L("/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez",
	    "/openapi", "/openapi/*", "/readyz", "/version", "/version/") },
};

static const struct brule rules_basic_user[] = {
	{ L("create"), L("authorization.k8s.io"),
	    L("selfsubjectaccessreviews", "selfsubjectrulesreviews"), NULL },
	{ L("create"), L("authentication.k8s.io"), L("selfsubjectreviews"), NULL },
};

static const struct brule rules_public_info_viewer[] = {
	{ L("get"), NULL, NULL, L("/healthz", "/livez", "/readyz", "/version", "/version/") },
};

static const struct brule rules_aggregate_to_admin[] = {
	{ L("create"), L("authorization.k8s.io"), L("localsubjectaccessreviews"), NULL },
	{ READ_WRITE, L(RBAC_GROUP), L("rolebindings", "roles"), NULL },
};

static const struct brule rules_aggregate_to_edit[] = {
	{ READ, L(""), L("pods/attach", "pods/exec", "pods/portforward", "pods/proxy",
	    "secrets", "services/proxy"), NULL },
	{ L("impersonate"), L(""), L("serviceaccounts"), NULL },
	{ WRITE, L(""), L("pods", "pods/attach", "pods/exec", "pods/portforward",
	    "pods/proxy"), NULL },
	{ L("create"), L(""), L("pods/eviction"), NULL },
	{ WRITE, L(""), L("configmaps", "events", "persistentvolumeclaims",
	    "replicationcontrollers", "replicationcontrollers/scale", "secrets",
	    "serviceaccounts", "services", "services/proxy"), NULL },
	{ L("create"), L(""), L("serviceaccounts/token"), NULL },
	{ WRITE, L("apps"), L("daemonsets", "deployments", "deployments/rollback",
	    "deployments/scale", "replicasets", "replicasets/scale", "statefulsets",
	    "statefulsets/scale"), NULL },
	{ WRITE, L("autoscaling"), L("horizontalpodautoscalers"), NULL },
	{ WRITE, L("batch"), L("cronjobs", "jobs"), NULL },
	{ WRITE, L("extensions"), L("daemonsets", "deployments", "deployments/rollback",
	    "deployments/scale", "ingresses", "networkpolicies", "replicasets",
	    "replicasets/scale", "replicationcontrollers/scale"), NULL },
	{ WRITE, L("policy"), L("poddisruptionbudgets"), NULL },
	{ WRITE, L("networking.k8s.io"), L("ingresses", "networkpolicies"), NULL },
	{ READ_WRITE, L("coordination.k8s.io"), L("leases"), NULL },
};

static const struct brule rules_aggregate_to_view[] = {
	{ READ, L(""), L("configmaps", "endpoints", "persistentvolumeclaims",
	    "persistentvolumeclaims/status", "pods", "replicationcontrollers",
	    "replicationcontrollers/scale", "serviceaccounts", "services",
	    "services/status"), NULL },
	{ READ, L(""), L("bindings", "events", "limitranges", "namespaces/status",
	    "pods/log", "pods/status", "replicationcontrollers/status", "resourcequotas",
	    "resourcequotas/status"), NULL },
	{ READ, L(""), L("namespaces"), NULL },
	{ READ, L("discovery.k8s.io"), L("endpointslices"), NULL },
	{ READ, L("apps"), L("controllerrevisions", "daemonsets", "daemonsets/status",
	    "deployments", "deployments/scale", "deployments/status", "replicasets",
	    "replicasets/scale", "replicasets/status", "statefulsets",
	    "statefulsets/scale", "statefulsets/status"), NULL },
	{ READ, L("autoscaling"), L("horizontalpodautoscalers",
	    "horizontalpodautoscalers/status"), NULL },
	{ READ, L("batch"), L("cronjobs", "cronjobs/status", "jobs", "jobs/status"), NULL },
	{ READ, L("extensions"), L("daemonsets", "daemonsets/status", "deployments",
	    "deployments/scale", "deployments/status", "ingresses", "ingresses/status",
	    "networkpolicies", "replicasets", "replicasets/scale", "replicasets/status",
	    "replicationcontrollers/scale"), NULL },
	{ READ, L("policy"), L("poddisruptionbudgets", "poddisruptionbudgets/status"), NULL },
	{ READ, L("networking.k8s.io"), L("ingresses", "ingresses/status",
	    "networkpolicies"), NULL },
};

#define AGG(role)	RBAC_GROUP "/aggregate-to-" role

struct brole {
	const char		*name;
	const char		*label;		/* set to "true", or NULL */
	const char		*aggregate;	/* aggregationRule label, or NULL */
	const struct brule	*rules;
	size_t			 nrules;
};

#define RULES(r)	(r), KC_ARRAY_SIZE(r)

static const struct brole bootstrap_roles[] = {
	{ "cluster-admin", NULL, NULL, RULES(rules_cluster_admin) },
	{ "system:discovery", NULL, NULL, RULES(rules_discovery) },
	{ "system:basic-user", NULL, NULL, RULES(rules_basic_user) },
	{ "system:public-info-viewer", NULL, NULL, RULES(rules_public_info_viewer) },
	{ "admin", NULL, AGG("admin"), NULL, 0 },
	{ "edit", AGG("admin"), AGG("edit"), NULL, 0 },
	{ "view", AGG("edit"), AGG("view"), NULL, 0 },
	{ "system:aggregate-to-admin", AGG("admin"), NULL, RULES(rules_aggregate_to_admin) },
	{ "system:aggregate-to-edit", AGG("edit"), NULL, RULES(rules_aggregate_to_edit) },
	{ "system:aggregate-to-view", AGG("view"), NULL, RULES(rules_aggregate_to_view) },
};

struct bbinding {
	const char		*name;		/* also the ClusterRole's */
	const char *const	*groups;
};

static const struct bbinding bootstrap_bindings[] = {
	{ "cluster-admin", L("system:masters") },
	{ "system:basic-user", L("system:authenticated") },
	{ "system:discovery", L("system:authenticated") },
	{ "system:public-info-viewer", L("system:authenticated", "system:unauthenticated") },
};

static int
put_strv(struct json_object *o, const char *key, const char *const *v)
{
	struct json_object *arr;

	if (v == NULL)
		return 0;
	if ((arr = json_object_new_array()) == NULL)
		return -ENOMEM;
	for (; *v != NULL; v++)
		if (kc_json_append(arr, json_object_new_string(*v)) < 0) {
			json_object_put(arr);
			return -ENOMEM;
		}
	return kc_json_put(o, key, arr);
}

/* A new object with kind, apiVersion and bootstrap metadata. */
static struct json_object *
bootstrap_object(const char *kind, const char *name, const char *label)
{
	struct json_object *o = json_object_new_object(), *md, *labels, *annotations;

	if (o == NULL)
		return NULL;
	if (kc_json_set_str(o, "kind", kind) < 0 ||
	    kc_json_set_str(o, "apiVersion", RBAC_API) < 0 ||
	    (md = kc_json_ensure_obj(o, "metadata")) == NULL ||
	    kc_json_set_str(md, "name", name) < 0 ||
	    (labels = kc_json_ensure_obj(md, "labels")) == NULL ||
	    kc_json_set_str(labels, "kubernetes.io/bootstrapping", "rbac-defaults") < 0 ||
	    (label != NULL && kc_json_set_str(labels, label, "true") < 0) ||
	    (annotations = kc_json_ensure_obj(md, "annotations")) == NULL ||
	    kc_json_set_str(annotations, "rbac.authorization.kubernetes.io/autoupdate",
	    "true") < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static struct json_object *
bootstrap_role(const struct brole *br)
{
	struct json_object *o = bootstrap_object("ClusterRole", br->name, br->label);
	struct json_object *rules, *ml, *sel, *sels, *ar;

	if (o == NULL)
		return NULL;
	if (br->rules != NULL) {
		if ((rules = json_object_new_array()) == NULL ||
		    kc_json_put(o, "rules", rules) < 0)
			goto nomem;
		for (size_t i = 0; i < br->nrules; i++) {
			const struct brule *ru = &br->rules[i];
			struct json_object *r = json_object_new_object();

			if (r == NULL || kc_json_append(rules, r) < 0 ||
			    put_strv(r, "verbs", ru->verbs) < 0 ||
			    put_strv(r, "apiGroups", ru->groups) < 0 ||
			    put_strv(r, "resources", ru->resources) < 0 ||
			    put_strv(r, "nonResourceURLs", ru->urls) < 0)
				goto nomem;
		}
	}
	if (br->aggregate != NULL) {
		if ((ar = kc_json_ensure_obj(o, "aggregationRule")) == NULL ||
		    (sels = json_object_new_array()) == NULL ||
		    kc_json_put(ar, "clusterRoleSelectors", sels) < 0 ||
		    (sel = json_object_new_object()) == NULL ||
		    kc_json_append(sels, sel) < 0 ||
		    (ml = kc_json_ensure_obj(sel, "matchLabels")) == NULL ||
		    kc_json_set_str(ml, br->aggregate, "true") < 0)
			goto nomem;
	}
	return o;
nomem:
	json_object_put(o);
	return NULL;
}

static struct json_object *
bootstrap_binding(const struct bbinding *bb)
{
	struct json_object *o = bootstrap_object("ClusterRoleBinding", bb->name, NULL);
	struct json_object *subjects, *s, *ref;

	if (o == NULL)
		return NULL;
	if ((subjects = json_object_new_array()) == NULL ||
	    kc_json_put(o, "subjects", subjects) < 0)
		goto nomem;
	for (const char *const *g = bb->groups; *g != NULL; g++)
		if ((s = json_object_new_object()) == NULL ||
		    kc_json_append(subjects, s) < 0 ||
		    kc_json_set_str(s, "kind", "Group") < 0 ||
		    kc_json_set_str(s, "apiGroup", RBAC_GROUP) < 0 ||
		    kc_json_set_str(s, "name", *g) < 0)
			goto nomem;
	if ((ref = kc_json_ensure_obj(o, "roleRef")) == NULL ||
	    kc_json_set_str(ref, "apiGroup", RBAC_GROUP) < 0 ||
	    kc_json_set_str(ref, "kind", "ClusterRole") < 0 ||
	    kc_json_set_str(ref, "name", bb->name) < 0)
		goto nomem;
	return o;
nomem:
	json_object_put(o);
	return NULL;
}

int
rbac_bootstrap_cluster_roles(struct json_object **ret)
{
	struct json_object *arr = json_object_new_array();

	if (arr == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < KC_ARRAY_SIZE(bootstrap_roles); i++)
		if (kc_json_append(arr, bootstrap_role(&bootstrap_roles[i])) < 0) {
			json_object_put(arr);
			return -ENOMEM;
		}
	*ret = arr;
	return 0;
}

int
rbac_bootstrap_cluster_role_bindings(struct json_object **ret)
{
	struct json_object *arr = json_object_new_array();

	if (arr == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < KC_ARRAY_SIZE(bootstrap_bindings); i++)
		if (kc_json_append(arr, bootstrap_binding(&bootstrap_bindings[i])) < 0) {
			json_object_put(arr);
			return -ENOMEM;
		}
	*ret = arr;
	return 0;
}

/*
 * Impersonation
 */

/* serviceaccount.SplitUsername into the plan's buffers. */
static bool
split_sa(const char *user, struct rbac_imp_plan *p)
{
	const char *rest, *colon;
	struct kc_str ns, name;

	if (strncmp(user, SA_PREFIX, strlen(SA_PREFIX)) != 0)
		return false;
	rest = user + strlen(SA_PREFIX);
	if ((colon = strchr(rest, ':')) == NULL || strchr(colon + 1, ':') != NULL)
		return false;
	ns = (struct kc_str){ rest, (size_t)(colon - rest) };
	name = kc_str_from(colon + 1);
	if (ns.len > 63 || !kc_valid_is_dns1123_label(ns) || name.len > 253 ||
	    !kc_valid_is_dns1123_subdomain(name))
		return false;
	memcpy(p->sa_ns, ns.p, ns.len);
	p->sa_ns[ns.len] = '\0';
	memcpy(p->sa_name, name.p, name.len + 1);
	return true;
}

/* %v of one v1.ObjectReference: {Kind Namespace Name UID APIVersion RV FieldPath}. */
static void
sb_objref(struct kc_sbuf *sb, const char *kind, const char *name, const char *api,
    const char *field)
{
	kc_sbuf_putc(sb, '{');
	kc_sbuf_puts(sb, kind);
	kc_sbuf_puts(sb, "  ");
	kc_sbuf_puts(sb, name);
	kc_sbuf_puts(sb, "  ");
	kc_sbuf_puts(sb, api);
	kc_sbuf_puts(sb, "  ");
	kc_sbuf_puts(sb, field);
	kc_sbuf_putc(sb, '}');
}

static int
without_user(const struct rbac_impersonation *imp, struct kc_status *st)
{
	char msg[KC_STATUS_MESSAGE_MAX];
	struct kc_sbuf sb;
	bool first = true;

	kc_sbuf_init(&sb, msg, sizeof(msg));
	kc_sbuf_puts(&sb, "requested [");
	for (size_t i = 0; i < imp->ngroups; i++, first = false) {
		if (!first)
			kc_sbuf_putc(&sb, ' ');
		sb_objref(&sb, "Group", imp->groups[i], "", "");
	}
	for (size_t i = 0; i < imp->nextras; i++, first = false) {
		if (!first)
			kc_sbuf_putc(&sb, ' ');
		sb_objref(&sb, "UserExtra", imp->extras[i].value, AUTHN_GROUP "/v1",
		    imp->extras[i].key);
	}
	if (imp->uid != NULL && imp->uid[0] != '\0') {
		if (!first)
			kc_sbuf_putc(&sb, ' ');
		sb_objref(&sb, "UID", imp->uid, AUTHN_GROUP "/v1", "");
	}
	kc_sbuf_puts(&sb, "] without impersonating a user");
	return kc_status_set(st, KC_EINTERNAL, "%s", msg);
}

static struct rbac_attrs *
add_check(struct rbac_imp_plan *p, const char *group, const char *version,
    const char *resource, const char *name)
{
	struct rbac_attrs *a = &p->checks[p->nchecks++];

	*a = (struct rbac_attrs){
		.verb = "impersonate", .group = group, .version = version,
		.resource = resource, .subresource = "", .name = S(name), .ns = "",
		.path = "", .resource_request = true,
	};
	return a;
}

static bool
plan_has_group(const struct rbac_imp_plan *p, const char *g)
{
	for (size_t i = 0; i < p->user.ngroups; i++)
		if (strcmp(p->groups[i], g) == 0)
			return true;
	return false;
}

int
rbac_impersonation_plan(const struct rbac_impersonation *imp, struct rbac_imp_plan **ret,
    struct kc_status *st)
{
	struct rbac_imp_plan *p;
	bool has_user = imp->user != NULL && imp->user[0] != '\0';
	bool has_uid = imp->uid != NULL && imp->uid[0] != '\0';
	bool is_sa;
	size_t ng = 0;

	if (!has_user && !has_uid && imp->ngroups == 0 && imp->nextras == 0) {
		*ret = NULL;
		return 0;
	}
	if (imp->ngroups > RBAC_IMP_GROUPS_MAX || imp->nextras > RBAC_IMP_EXTRAS_MAX)
		return kc_status_set(st, KC_EBADREQUEST, "more than %d Impersonate-Group or "
		    "%d Impersonate-Extra values", RBAC_IMP_GROUPS_MAX, RBAC_IMP_EXTRAS_MAX);
	if (!has_user)
		return without_user(imp, st);
	if ((p = kc_calloc(1, sizeof(*p))) == NULL)
		return -ENOMEM;
	if ((is_sa = split_sa(imp->user, p))) {
		add_check(p, "", "", "serviceaccounts", p->sa_name)->ns = p->sa_ns;
		if (imp->ngroups == 0) {
			(void)snprintf(p->sa_group, sizeof(p->sa_group),
			    "system:serviceaccounts:%s", p->sa_ns);
			p->groups[ng++] = "system:serviceaccounts";
			p->groups[ng++] = p->sa_group;
		}
	} else
		add_check(p, "", "", "users", imp->user);
	for (size_t i = 0; i < imp->ngroups; i++) {
		add_check(p, "", "", "groups", imp->groups[i]);
		p->groups[ng++] = S(imp->groups[i]);
	}
	for (size_t i = 0; i < imp->nextras; i++)
		add_check(p, AUTHN_GROUP, "v1", "userextras",
		    imp->extras[i].value)->subresource = S(imp->extras[i].key);
	if (has_uid)
		add_check(p, AUTHN_GROUP, "v1", "uids", imp->uid);
	p->user.name = imp->user;
	p->user.uid = has_uid ? imp->uid : "";
	p->user.groups = p->groups;
	p->user.ngroups = ng;
	if (strcmp(imp->user, "system:anonymous") != 0) {
		if (!plan_has_group(p, "system:authenticated") &&
		    !plan_has_group(p, "system:unauthenticated"))
			p->groups[p->user.ngroups++] = "system:authenticated";
	} else if (!plan_has_group(p, "system:unauthenticated"))
		p->groups[p->user.ngroups++] = "system:unauthenticated";
	p->extras = imp->extras;
	p->nextras = imp->nextras;
	*ret = p;
	return 0;
}

struct rbac_imp_plan *
rbac_imp_plan_free(struct rbac_imp_plan *p)
{
	kc_free(p);
	return NULL;
}

static int
unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int
rbac_extra_key(const char *suffix, char *buf, size_t size)
{
	const char *s = S(suffix);
	size_t n = strlen(s), o = 0;
	bool escaped = true;

	if (n >= size)
		return -E2BIG;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		buf[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
	}
	buf[n] = '\0';
	/* url.PathUnescape, in place (it only shrinks). */
	for (size_t i = 0; i < n && escaped; i++)
		if (buf[i] == '%' && (i + 2 >= n || unhex(buf[i + 1]) < 0 ||
		    unhex(buf[i + 2]) < 0))
			escaped = false;
	if (!escaped)
		return (int)n;
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '%') {
			buf[o++] = (char)(unhex(buf[i + 1]) << 4 | unhex(buf[i + 2]));
			i += 2;
		} else
			buf[o++] = buf[i];
	}
	buf[o] = '\0';
	return (int)o;
}

/*
 * Messages
 */

size_t
rbac_forbidden_message(const char *user, const struct rbac_attrs *a, const char *reason,
    char *buf, size_t size)
{
	struct kc_sbuf sb;
	const char *group = a->resource_request ? S(a->group) : "";
	const char *resource = a->resource_request ? S(a->resource) : "";

	kc_sbuf_init(&sb, buf, size);
	if (group[0] == '\0' && resource[0] == '\0')
		kc_sbuf_puts(&sb, "forbidden: ");
	else {
		kc_sbuf_puts(&sb, resource);
		if (group[0] != '\0') {
			kc_sbuf_putc(&sb, '.');
			kc_sbuf_puts(&sb, group);
		}
		if (S(a->name)[0] != '\0') {
			kc_sbuf_putc(&sb, ' ');
			sb_quote(&sb, a->name);
		}
		kc_sbuf_puts(&sb, " is forbidden: ");
	}
	sb.flags |= KC_SBUF_HTML;
	kc_sbuf_puts(&sb, "User ");
	sb_quote(&sb, user);
	kc_sbuf_puts(&sb, " cannot ");
	kc_sbuf_puts(&sb, a->verb);
	if (!a->resource_request) {
		kc_sbuf_puts(&sb, " path ");
		sb_quote(&sb, a->path);
	} else {
		kc_sbuf_puts(&sb, " resource ");
		if (S(a->subresource)[0] != '\0')
			sb_quote_pair(&sb, a->resource, a->subresource);
		else
			sb_quote(&sb, a->resource);
		kc_sbuf_puts(&sb, " in API group ");
		sb_quote(&sb, a->group);
		if (S(a->ns)[0] != '\0') {
			kc_sbuf_puts(&sb, " in the namespace ");
			sb_quote(&sb, a->ns);
		} else
			kc_sbuf_puts(&sb, " at the cluster scope");
	}
	sb.flags &= ~(unsigned)KC_SBUF_HTML;
	if (S(reason)[0] != '\0') {
		kc_sbuf_puts(&sb, ": ");
		kc_sbuf_puts(&sb, reason);
	}
	return kc_sbuf_end(&sb);
}

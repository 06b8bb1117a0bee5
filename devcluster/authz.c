/*
 * authz.c: RBAC authorization in the devcluster, around the pure module
 * rbac.c.
 *
 * The index of Roles, ClusterRoles, RoleBindings and ClusterRoleBindings
 * is fed by a scan of storage at start (restored objects come without
 * events) and by a storage subscriber afterwards. At start the bootstrap
 * policy (cluster-admin, admin, edit, view, system:discovery...) is
 * created through api_create_object() for every object not stored yet.
 * After each ClusterRole change the clusterrole-aggregation controller
 * runs (rbac_aggregate()) and writes the roles whose rules changed back
 * through storage, so watches see them; those writes feed the index
 * again, and the next pass finds nothing to do, which ends the chain.
 *
 * hooks.authorize answers with rbac_authorize() (auth_authorize() lets
 * system:masters through before it); dispatch.c builds the 403 Status, and
 * auth_impersonate() asks the same hook for every impersonate check.
 *
 * The review types are registered as create-only resource types whose
 * ops->request hook answers the POST itself (201, nothing stored):
 * authorization.k8s.io/v1 selfsubjectaccessreviews, subjectaccessreviews,
 * localsubjectaccessreviews (namespaced) and selfsubjectrulesreviews, and
 * authentication.k8s.io/v1 selfsubjectreviews (kubectl auth whoami).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/sbuf.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "devcluster.h"
#include "authz.h"
#include "rbac.h"

#define RBAC_GROUP	"rbac.authorization.k8s.io"
#define AGG_PASSES	8

struct authz {
	struct dc		*dc;
	struct rbac_index	*idx;
	bool			 aggregating;
	bool			 again;
};

static const struct {
	const char	*plural;
	const char	*kind;
} rbac_kinds[] = {
	{ "clusterroles", "ClusterRole" },
	{ "clusterrolebindings", "ClusterRoleBinding" },
	{ "roles", "Role" },
	{ "rolebindings", "RoleBinding" },
};

static int review_request(struct dc *, const struct dc_rtype *, const struct dc_req *,
    const struct dc_route *, struct dc_resp *);

static const struct dc_type_ops ops_review = {
	.request = review_request,
};

static const struct dc_rtype_def review_types[] = {
	{ .group = "authentication.k8s.io", .version = "v1",
	  .plural = "selfsubjectreviews", .singular = "selfsubjectreview",
	  .kind = "SelfSubjectReview", .verbs = DC_VERB_CREATE, .ops = &ops_review,
	  .group_priority = 17700 },
	{ .group = "authorization.k8s.io", .version = "v1",
	  .plural = "localsubjectaccessreviews", .singular = "localsubjectaccessreview",
	  .kind = "LocalSubjectAccessReview", .namespaced = true,
	  .verbs = DC_VERB_CREATE, .ops = &ops_review, .group_priority = 17600 },
	{ .group = "authorization.k8s.io", .version = "v1",
	  .plural = "selfsubjectaccessreviews", .singular = "selfsubjectaccessreview",
	  .kind = "SelfSubjectAccessReview", .verbs = DC_VERB_CREATE, .ops = &ops_review,
	  .group_priority = 17600 },
	{ .group = "authorization.k8s.io", .version = "v1",
	  .plural = "selfsubjectrulesreviews", .singular = "selfsubjectrulesreview",
	  .kind = "SelfSubjectRulesReview", .verbs = DC_VERB_CREATE, .ops = &ops_review,
	  .group_priority = 17600 },
	{ .group = "authorization.k8s.io", .version = "v1",
	  .plural = "subjectaccessreviews", .singular = "subjectaccessreview",
	  .kind = "SubjectAccessReview", .verbs = DC_VERB_CREATE, .ops = &ops_review,
	  .group_priority = 17600 },
};

static const char *
kind_of(const char *plural)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(rbac_kinds); i++)
		if (strcmp(rbac_kinds[i].plural, plural) == 0)
			return rbac_kinds[i].kind;
	return NULL;
}

static void
index_put(struct authz *a, const char *kind, const struct json_object *obj)
{
	struct kc_status st = { 0 };
	int r;

	if ((r = rbac_index_put(a->idx, kind, obj, &st)) < 0)
		kc_log_warn(NULL, "rbac: %s not indexed: %s", kind,
		    st.message[0] != '\0' ? st.message : kc_strerror(r));
}

/* One pass of the aggregation controller: writes back what changed. */
static int
aggregate_once(struct authz *a)
{
	struct dc_coll *coll = storage_find_coll(a->dc->store, RBAC_GROUP, "clusterroles");
	struct json_object *arr = NULL;
	int r;

	if (coll == NULL)
		return 0;
	if ((r = rbac_aggregate(a->idx, &arr)) < 0)
		return r;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		const struct json_object *it = json_object_array_get_idx(arr, i);
		const char *name = kc_json_str(it, "name");
		struct json_object *rules = json_object_object_get(it, "rules");
		const struct json_object *old;
		struct json_object *next;

		if (name == NULL || (old = coll_get(coll, NULL, name)) == NULL)
			continue;
		if ((next = kc_json_copy(old)) == NULL ||
		    kc_json_put(next, "rules", json_object_get(rules)) < 0) {
			if (next != NULL)
				json_object_put(next);
			r = -ENOMEM;
			break;
		}
		r = storage_update(a->dc->store, coll, next, obj_rv(old), NULL);
		if (r < 0 && r != KC_ECONFLICT) {
			kc_log_warn(NULL, "rbac: aggregating clusterrole %s: %s", name,
			    kc_strerror(r));
			break;
		}
		r = 0;
	}
	json_object_put(arr);
	return r;
}

static void
aggregate(struct authz *a)
{
	int r = 0;

	if (a->aggregating) {
		a->again = true;
		return;
	}
	a->aggregating = true;
	for (int pass = 0; pass < AGG_PASSES; pass++) {
		a->again = false;
		if ((r = aggregate_once(a)) < 0 || !a->again)
			break;
	}
	a->aggregating = false;
	if (r < 0)
		kc_log_warn(NULL, "rbac: aggregation: %s", kc_strerror(r));
}

static void
on_event(void *arg, const struct dc_event *ev)
{
	struct authz *a = arg;
	const char *kind;

	if (strcmp(coll_group(ev->coll), RBAC_GROUP) != 0 ||
	    (kind = kind_of(coll_resource(ev->coll))) == NULL)
		return;
	if (ev->type == DC_EV_DELETED) {
		const char *ns = kc_json_str(ev->obj, "metadata", "namespace");
		const char *name = kc_json_str(ev->obj, "metadata", "name");

		if (name != NULL)
			(void)rbac_index_remove(a->idx, kind, ns != NULL ? ns : "", name);
	} else
		index_put(a, kind, ev->obj);
	if (strcmp(kind, "ClusterRole") == 0)
		aggregate(a);
}

static int
scan(struct authz *a)
{
	for (size_t k = 0; k < KC_ARRAY_SIZE(rbac_kinds); k++) {
		struct dc_coll *coll = storage_find_coll(a->dc->store, RBAC_GROUP,
		    rbac_kinds[k].plural);
		struct json_object **objs = NULL;
		size_t n = 0;
		int r;

		if (coll == NULL)
			continue;
		if ((r = coll_list(coll, NULL, NULL, &objs, &n)) < 0)
			return r;
		for (size_t i = 0; i < n; i++)
			index_put(a, rbac_kinds[k].kind, objs[i]);
		objs_free(objs, n);
	}
	return 0;
}

/* Creates each object of 'arr' (ClusterRoles or bindings) not stored yet. */
static int
bootstrap_objects(struct dc *dc, const char *plural, struct json_object *arr)
{
	const struct dc_rtype *rt = registry_find(dc, RBAC_GROUP, "v1", plural);
	int r;

	if (rt == NULL)
		return 0;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *o = json_object_array_get_idx(arr, i);
		const char *name = kc_json_str(o, "metadata", "name");

		if (name == NULL || coll_get(rt->coll, NULL, name) != NULL)
			continue;
		r = api_create_object(dc, rt, json_object_get(o), NULL);
		if (r < 0 && r != KC_EEXISTS)
			return r;
	}
	return 0;
}

static int
bootstrap(struct dc *dc)
{
	struct json_object *roles = NULL, *bindings = NULL;
	int r;

	if ((r = rbac_bootstrap_cluster_roles(&roles)) < 0)
		return r;
	if ((r = rbac_bootstrap_cluster_role_bindings(&bindings)) < 0) {
		json_object_put(roles);
		return r;
	}
	if ((r = bootstrap_objects(dc, "clusterroles", roles)) == 0)
		r = bootstrap_objects(dc, "clusterrolebindings", bindings);
	json_object_put(roles);
	json_object_put(bindings);
	return r;
}

static void
to_rbac_user(const struct dc_user *u, struct rbac_user *ret)
{
	*ret = (struct rbac_user){
		.name = u->name, .uid = u->uid,
		.groups = (const char *const *)u->groups, .ngroups = u->ngroups,
	};
}

static bool
authorize(struct dc *dc, const struct dc_attrs *at, char *reason, size_t size)
{
	struct authz *a = plugin_state(dc, &authz_plugin);
	struct rbac_user u;
	struct rbac_attrs ra = {
		.verb = at->verb, .group = at->group, .version = at->version,
		.resource = at->resource, .subresource = at->subresource,
		.name = at->name, .ns = at->ns, .path = at->path,
		.resource_request = at->resource_request,
	};

	if (size > 0)
		reason[0] = '\0';
	if (a == NULL || at->user == NULL)
		return false;
	to_rbac_user(at->user, &u);
	if (rbac_user_is_privileged(&u))
		return true;
	return rbac_authorize(a->idx, &u, &ra, reason, size);
}

/*
 * Reviews
 */

/* The request body as a JSON object, or a reply already written. */
static int
review_body(struct dc *dc, const struct dc_rtype *rt, const struct dc_req *req,
    struct dc_resp *resp, struct json_object **ret)
{
	struct kc_status st = { 0 };
	struct json_object *o = NULL;
	const char *ct = req->content_type != NULL ? req->content_type : "application/json";
	const char *text = req->body != NULL ? req->body : "";
	int r;

	if (strncmp(ct, "application/vnd.kubernetes.protobuf", 35) == 0) {
		/*
		 * A SelfSubjectReview has nothing to read (protobuf.c does not
		 * know its message): the reply does not depend on the body.
		 */
		if (strcmp(rt->plural, "selfsubjectreviews") == 0) {
			if ((*ret = json_object_new_object()) == NULL) {
				errors_internal(resp, -ENOMEM);
				return -ENOMEM;
			}
			return 0;
		}
		if (dc->hooks.decode_protobuf == NULL) {
			errors_reply(resp, KC_EMEDIATYPE, "the body of the request was in an "
			    "unknown format - accepted media types include: application/json, "
			    "application/yaml");
			return KC_EMEDIATYPE;
		}
		r = dc->hooks.decode_protobuf(dc, rt, text, req->body_len, &o, &st);
	} else if (strncmp(ct, "application/yaml", 16) == 0)
		r = kc_yaml_parse_one(text, req->body_len, NULL, &o, &st);
	else if (strncmp(ct, "application/json", 16) == 0) {
		if (req->body_len == 0) {
			errors_reply(resp, KC_EBADREQUEST, "Object 'Kind' is missing in ''");
			return KC_EBADREQUEST;
		}
		r = kc_json_parse(text, req->body_len, &o, &st);
	} else {
		errors_reply(resp, KC_EMEDIATYPE, "the body of the request was in an unknown "
		    "format - accepted media types include: application/json, "
		    "application/yaml, application/vnd.kubernetes.protobuf");
		return KC_EMEDIATYPE;
	}
	if (r == -ENOMEM) {
		errors_internal(resp, r);
		return r;
	}
	if (r < 0 || !json_object_is_type(o, json_type_object)) {
		if (o != NULL)
			json_object_put(o);
		errors_reply(resp, KC_EBADREQUEST, "couldn't get version/kind; json parse "
		    "error: %s", r < 0 && st.message[0] != '\0' ? st.message :
		    "the body is not a JSON object");
		return KC_EBADREQUEST;
	}
	*ret = o;
	return 0;
}

/* {kind, apiVersion, metadata: {creationTimestamp: null}} of a reply. */
static struct json_object *
reply_new(const struct dc_rtype *rt)
{
	struct json_object *o = json_object_new_object(), *md;

	if (o == NULL)
		return NULL;
	if (kc_json_set_str(o, "kind", rt->kind) < 0 ||
	    kc_json_set_str(o, "apiVersion", rt->api_version) < 0 ||
	    (md = kc_json_ensure_obj(o, "metadata")) == NULL ||
	    kc_json_put_null(md, "creationTimestamp") < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static const char *
str_or_empty(const struct json_object *o, const char *key)
{
	const char *s = kc_json_str(o, key);

	return s != NULL ? s : "";
}

/* The access review decision for 'u' on the attributes of 'spec'. */
static int
access_status(struct authz *a, const struct rbac_user *u, const struct json_object *spec,
    const char *force_ns, struct json_object *status)
{
	const struct json_object *ra = kc_json_obj_of(spec, "resourceAttributes");
	const struct json_object *na = kc_json_obj_of(spec, "nonResourceAttributes");
	struct rbac_attrs at = { 0 };
	char reason[RBAC_REASON_MAX] = "";
	bool allowed;
	int r;

	if (ra != NULL) {
		at = (struct rbac_attrs){
			.verb = str_or_empty(ra, "verb"), .group = str_or_empty(ra, "group"),
			.version = str_or_empty(ra, "version"),
			.resource = str_or_empty(ra, "resource"),
			.subresource = str_or_empty(ra, "subresource"),
			.name = str_or_empty(ra, "name"),
			.ns = force_ns != NULL ? force_ns : str_or_empty(ra, "namespace"),
			.resource_request = true,
		};
	} else
		at = (struct rbac_attrs){ .verb = str_or_empty(na, "verb"),
		    .path = str_or_empty(na, "path") };
	allowed = rbac_user_is_privileged(u) ||
	    rbac_authorize(a->idx, u, &at, reason, sizeof(reason));
	if ((r = kc_json_put(status, "allowed", json_object_new_boolean(allowed))) < 0)
		return r;
	if (reason[0] != '\0' && (r = kc_json_set_str(status, "reason", reason)) < 0)
		return r;
	return 0;
}

/* 422 unless exactly one of resourceAttributes and nonResourceAttributes. */
static bool
spec_valid(const struct dc_rtype *rt, const struct json_object *spec, bool local,
    struct dc_resp *resp)
{
	bool has_r = kc_json_obj_of(spec, "resourceAttributes") != NULL;
	bool has_n = kc_json_obj_of(spec, "nonResourceAttributes") != NULL;
	struct dc_errs errs = { 0 };

	if (local && has_n)
		errs_invalid(&errs, "spec.nonResourceAttributes", "{...}",
		    "disallowed on this kind of request");
	else if (has_r && has_n)
		errs_invalid(&errs, "spec.nonResourceAttributes", "{...}",
		    "cannot be specified in combination with resourceAttributes");
	else if (!has_r && !has_n)
		errs_required(&errs, "spec.resourceAttributes", "exactly one of "
		    "nonResourceAttributes or resourceAttributes must be specified");
	if (errs.n == 0)
		return true;
	errors_invalid(resp, rt->qualified_kind, rt->group, "", &errs);
	return false;
}

/* A new array: 'first' (owned), then the items of 'rest'. NULL: -ENOMEM. */
static struct json_object *
prepend(struct json_object *first, const struct json_object *rest)
{
	struct json_object *arr = json_object_new_array();

	if (arr == NULL || kc_json_append(arr, first) < 0) {
		if (arr != NULL)
			json_object_put(arr);
		else
			json_object_put(first);
		return NULL;
	}
	for (size_t i = 0; rest != NULL && i < json_object_array_length(rest); i++)
		if (kc_json_append(arr, json_object_get(
		    json_object_array_get_idx(rest, i))) < 0) {
			json_object_put(arr);
			return NULL;
		}
	return arr;
}

static struct json_object *
star_list(void)
{
	struct json_object *a = json_object_new_array();

	if (a != NULL && kc_json_append(a, json_object_new_string("*")) < 0) {
		json_object_put(a);
		return NULL;
	}
	return a;
}

/* The privileged authorizer's rules, which upstream lists first. */
static int
masters_rules(struct json_object *status)
{
	struct json_object *r1, *n1, *rr, *nr;

	if (status == NULL || (r1 = json_object_new_object()) == NULL)
		return -ENOMEM;
	if ((n1 = json_object_new_object()) == NULL) {
		json_object_put(r1);
		return -ENOMEM;
	}
	if (kc_json_put(r1, "verbs", star_list()) < 0 ||
	    kc_json_put(r1, "apiGroups", star_list()) < 0 ||
	    kc_json_put(r1, "resources", star_list()) < 0 ||
	    kc_json_put(n1, "verbs", star_list()) < 0 ||
	    kc_json_put(n1, "nonResourceURLs", star_list()) < 0) {
		json_object_put(r1);
		json_object_put(n1);
		return -ENOMEM;
	}
	if ((rr = prepend(r1, kc_json_arr_of(status, "resourceRules"))) == NULL) {
		json_object_put(n1);
		return -ENOMEM;
	}
	if (kc_json_put(status, "resourceRules", rr) < 0) {
		json_object_put(n1);
		return -ENOMEM;
	}
	if ((nr = prepend(n1, kc_json_arr_of(status, "nonResourceRules"))) == NULL ||
	    kc_json_put(status, "nonResourceRules", nr) < 0)
		return -ENOMEM;
	return 0;
}

/* spec.user, spec.groups and spec.uid of a (Local)SubjectAccessReview. */
static bool
spec_user(const struct dc_rtype *rt, const struct json_object *spec,
    const char **groups, struct rbac_user *ret, struct dc_resp *resp)
{
	const struct json_object *ga = kc_json_arr_of(spec, "groups");
	size_t n = 0;

	for (size_t i = 0; ga != NULL && i < json_object_array_length(ga); i++) {
		const struct json_object *g = json_object_array_get_idx(ga, i);

		if (!json_object_is_type(g, json_type_string))
			continue;
		if (n == DC_GROUPS_MAX) {
			errors_reply(resp, KC_EBADREQUEST, "spec.groups: more than %d groups",
			    DC_GROUPS_MAX);
			return false;
		}
		groups[n++] = json_object_get_string((struct json_object *)(uintptr_t)g);
	}
	*ret = (struct rbac_user){ .name = str_or_empty(spec, "user"),
	    .uid = str_or_empty(spec, "uid"), .groups = groups, .ngroups = n };
	if (ret->name[0] == '\0' && n == 0) {
		struct dc_errs errs = { 0 };

		errs_invalid(&errs, "spec.user", "\"\"",
		    "at least one of user or group must be specified");
		errors_invalid(resp, rt->qualified_kind, rt->group, "", &errs);
		return false;
	}
	return true;
}

static int
review_request(struct dc *dc, const struct dc_rtype *rt, const struct dc_req *req,
    const struct dc_route *route, struct dc_resp *resp)
{
	struct authz *a = plugin_state(dc, &authz_plugin);
	struct json_object *body = NULL, *out = NULL, *status = NULL, *spec;
	struct kc_status st = { 0 };
	struct rbac_user u;
	const char *groups[DC_GROUPS_MAX];
	int r;

	if (a == NULL) {
		errors_reply(resp, KC_EUNAVAILABLE, "the authorizer is not running");
		return 1;
	}
	if (strcmp(route->verb, "create") != 0)
		return 0;
	if (review_body(dc, rt, req, resp, &body) < 0)
		return 1;
	if ((spec = kc_json_obj_of(body, "spec")) == NULL)
		spec = kc_json_ensure_obj(body, "spec");
	if (spec == NULL || (out = reply_new(rt)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	to_rbac_user(&req->user, &u);
	if (strcmp(rt->plural, "selfsubjectreviews") == 0) {
		struct json_object *ui = NULL;

		if ((status = kc_json_ensure_obj(out, "status")) == NULL ||
		    (r = user_info_json(&req->user, &ui)) < 0 ||
		    (r = kc_json_put(status, "userInfo", ui)) < 0) {
			r = -ENOMEM;
			goto out;
		}
	} else if (strcmp(rt->plural, "selfsubjectrulesreviews") == 0) {
		const char *ns = str_or_empty(spec, "namespace");

		json_object_put(out);
		out = NULL;
		if ((r = rbac_rules_review(a->idx, &u, ns, &out, &st)) < 0) {
			if (r == -ENOMEM)
				goto out;
			errors_kc(resp, r, &st);
			r = 0;
			goto out;
		}
		if (kc_json_put(out, "spec", json_object_get(spec)) < 0 ||
		    (rbac_user_is_privileged(&u) &&
		    masters_rules(kc_json_obj_of(out, "status")) < 0)) {
			r = -ENOMEM;
			goto out;
		}
	} else {
		bool local = strcmp(rt->plural, "localsubjectaccessreviews") == 0;
		bool self = strcmp(rt->plural, "selfsubjectaccessreviews") == 0;
		const char *sns;

		if (!spec_valid(rt, spec, local, resp) ||
		    (!self && !spec_user(rt, spec, groups, &u, resp))) {
			r = 0;
			goto out;
		}
		sns = kc_json_str(spec, "resourceAttributes", "namespace");
		if (local && sns != NULL && sns[0] != '\0' && strcmp(sns, route->ns) != 0) {
			errors_reply(resp, KC_EBADREQUEST, "spec.resourceAttributes.namespace "
			    "must match namespace: %s", route->ns);
			r = 0;
			goto out;
		}
		if (local && kc_json_set_str(kc_json_obj_of(out, "metadata"), "namespace",
		    route->ns) < 0) {
			r = -ENOMEM;
			goto out;
		}
		if (kc_json_put(out, "spec", json_object_get(spec)) < 0 ||
		    (status = kc_json_ensure_obj(out, "status")) == NULL ||
		    (r = access_status(a, &u, spec, local ? route->ns : NULL, status)) < 0) {
			r = -ENOMEM;
			goto out;
		}
	}
	if ((r = resp_json(resp, 201, out)) < 0)
		goto out;
	r = 0;
out:
	if (r < 0)
		errors_internal(resp, r);
	if (out != NULL)
		json_object_put(out);
	json_object_put(body);
	return 1;
}

/*
 * Escalation prevention: the policy-based storage of the four RBAC kinds
 * (pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/
 * policybased, escalation_check.go) as an admission step.
 */

/* Whether the hook allows 'verb' on resource 'plural' of 'group' named 'name'. */
static bool
may(struct dc *dc, const struct dc_user *u, const char *verb, const char *group,
    const char *plural, const char *ns, const char *name)
{
	struct dc_attrs at = {
		.user = u, .verb = verb, .resource_request = true, .group = group,
		.version = "*", .resource = plural, .subresource = "", .ns = ns,
		.name = name, .path = "",
	};
	char reason[RBAC_REASON_MAX];

	return auth_authorize(dc, &at, reason, sizeof(reason));
}

/*
 * IsOnlyMutatingGCFields: 'obj' equals 'old' but for ownerReferences and
 * finalizers (and selfLink, managedFields and resourceVersion, which the
 * write pipeline keeps or sets).
 */
static int
only_gc_fields(const struct json_object *obj, const struct json_object *old, bool *ret)
{
	static const char *const skip[] = { "ownerReferences", "finalizers", "selfLink",
	    "managedFields", "resourceVersion" };
	struct json_object *a = kc_json_copy(obj), *b = kc_json_copy(old), *ma, *mb;

	if (a == NULL || b == NULL) {
		json_object_put(a);	/* json-c takes NULL */
		json_object_put(b);
		return -ENOMEM;
	}
	ma = kc_json_obj_of(a, "metadata");
	mb = kc_json_obj_of(b, "metadata");
	for (size_t i = 0; i < KC_ARRAY_SIZE(skip); i++) {
		if (ma != NULL)
			json_object_object_del(ma, skip[i]);
		if (mb != NULL)
			json_object_object_del(mb, skip[i]);
	}
	*ret = kc_json_equal(a, b);
	json_object_put(a);
	json_object_put(b);
	return 0;
}

/* Answers 'code' with 'msg' and details {name, group, kind}. */
static int
answer(struct dc_write_ctx *wc, int code, const char *msg, const char *name,
    const char *kind)
{
	errors_details(wc->resp, code, RBAC_GROUP, kind, name, msg);
	wc->answered = true;
	return code;
}

/* "<plural>.rbac.authorization.k8s.io "<name>" is forbidden: <msg>" (NewForbidden). */
static void
sb_forbidden(struct kc_sbuf *sb, const char *qualified, const char *name, const char *msg)
{
	kc_sbuf_puts(sb, qualified);
	if (name[0] != '\0') {
		kc_sbuf_putc(sb, ' ');
		kc_sbuf_quote(sb, name, strlen(name));
	}
	kc_sbuf_puts(sb, " is forbidden: ");
	kc_sbuf_puts(sb, msg);
}

static int
forbidden(struct dc_write_ctx *wc, const char *name, const char *msg)
{
	struct kc_sbuf sb;
	size_t len;
	char *text;
	int r;

	kc_sbuf_init(&sb, NULL, 0);
	sb_forbidden(&sb, wc->rt->qualified, name, msg);
	len = kc_sbuf_end(&sb);
	if ((text = kc_malloc(len + 1)) == NULL)
		return -ENOMEM;
	kc_sbuf_init(&sb, text, len + 1);
	sb_forbidden(&sb, wc->rt->qualified, name, msg);
	r = answer(wc, KC_EFORBIDDEN, text, name, wc->rt->plural);
	kc_free(text);
	return r;
}

static int
admit(struct dc_write_ctx *wc, struct json_object *obj, struct kc_status *st)
{
	struct authz *a = plugin_state(wc->dc, &authz_plugin);
	const struct dc_user *du;
	const char *kind, *name, *ns, *rkind = "", *rname = "", *rgroup;
	struct rbac_user u;
	char *msg = NULL;
	bool role, gc_only = false;
	int r;

	if (a == NULL || wc->req == NULL || wc->subresource != NULL ||
	    (wc->op != DC_OP_CREATE && wc->op != DC_OP_UPDATE) ||
	    strcmp(wc->rt->group, RBAC_GROUP) != 0 ||
	    (kind = kind_of(wc->rt->plural)) == NULL)
		return 0;
	du = &wc->req->user;
	to_rbac_user(du, &u);
	if (rbac_user_is_privileged(&u))		/* EscalationAllowed */
		return 0;
	name = str_or_empty(kc_json_obj_of(obj, "metadata"), "name");
	ns = str_or_empty(kc_json_obj_of(obj, "metadata"), "namespace");
	role = strcmp(kind, "Role") == 0 || strcmp(kind, "ClusterRole") == 0;
	/* RoleEscalationAuthorized: the request's name, none on a POST. */
	if (role && may(wc->dc, du, "escalate", RBAC_GROUP, wc->rt->plural, ns,
	    wc->req->method == DC_POST ? "" : name))
		return 0;
	if (wc->op == DC_OP_UPDATE && wc->old != NULL &&
	    (r = only_gc_fields(obj, wc->old, &gc_only)) < 0)
		return r;
	if (gc_only)
		return 0;
	if (role)
		r = rbac_confirm_role(a->idx, &u, ns, obj, wc->old, &msg, st);
	else {
		const struct json_object *ref = kc_json_obj_of(obj, "roleRef");

		rkind = str_or_empty(ref, "kind");
		rname = str_or_empty(ref, "name");
		rgroup = str_or_empty(ref, "apiGroup");
		/* BindingAuthorized: "bind" on the role, in the binding's namespace. */
		if ((strcmp(rkind, "ClusterRole") == 0 || strcmp(rkind, "Role") == 0) &&
		    may(wc->dc, du, "bind", rgroup, strcmp(rkind, "Role") == 0 ? "roles" :
		    "clusterroles", ns, rname))
			return 0;
		r = rbac_confirm_binding(a->idx, &u, ns, rkind, rname, &msg);
	}
	if (r == KC_EFORBIDDEN)
		r = forbidden(wc, name, msg);
	else if (r == KC_ENOTFOUND)
		r = answer(wc, r, msg, rname, strcmp(rkind, "Role") == 0 ? "roles" :
		    "clusterroles");
	else if (r == KC_EINTERNAL)
		r = kc_status_set(st, r, "Internal error occurred: %s", msg);
	kc_free(msg);
	return r;
}

/*
 * Setup
 */

int
authz_init(struct dc *dc)
{
	struct authz *a;
	int r;

	if (plugin_state(dc, &authz_plugin) != NULL)
		return 0;
	if ((a = kc_calloc(1, sizeof(*a))) == NULL)
		return -ENOMEM;
	a->dc = dc;
	if ((r = rbac_index_new(&a->idx)) < 0) {
		kc_free(a);
		return r;
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(review_types); i++) {
		const struct dc_rtype_def *d = &review_types[i];

		if (registry_find(dc, d->group, d->version, d->plural) == NULL &&
		    (r = registry_add(dc, d, NULL)) < 0)
			goto fail;
	}
	if ((r = scan(a)) < 0 || (r = storage_subscribe(dc->store, on_event, a)) < 0)
		goto fail;
	plugin_set_state(dc, &authz_plugin, a);
	dc->hooks.authorize = authorize;
	if (!dc->opts.no_bootstrap && (r = bootstrap(dc)) < 0)
		goto fail_sub;
	aggregate(a);
	return 0;
fail_sub:
	dc->hooks.authorize = NULL;
	plugin_set_state(dc, &authz_plugin, NULL);
	storage_unsubscribe(dc->store, on_event, a);
fail:
	rbac_index_free(a->idx);
	kc_free(a);
	return r;
}

void
authz_fini(struct dc *dc)
{
	struct authz *a = plugin_state(dc, &authz_plugin);

	if (a == NULL)
		return;
	storage_unsubscribe(dc->store, on_event, a);
	if (dc->hooks.authorize == authorize)
		dc->hooks.authorize = NULL;
	plugin_set_state(dc, &authz_plugin, NULL);
	rbac_index_free(a->idx);
	kc_free(a);
}

size_t
authz_count(const struct dc *dc, const char *kind)
{
	const struct authz *a = plugin_state(dc, &authz_plugin);

	return a != NULL ? rbac_index_count(a->idx, kind) : 0;
}

static int
authz_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	(void)cfg;
	(void)st;
	return authz_init(dc);
}

const struct dc_plugin authz_plugin = {
	.name = "authz",
	.init = authz_start,
	.fini = authz_fini,
	.admit = admit,
};

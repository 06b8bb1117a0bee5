/*
 * authn.c: authentication.k8s.io/v1 TokenReview, as kube-apiserver answers
 * it (pkg/registry/authentication/tokenreview/storage.go), so that a
 * component guarding its own endpoints (the controller's secure /metrics)
 * can ask the devcluster who a bearer token belongs to.
 *
 * POST /apis/authentication.k8s.io/v1/tokenreviews, after RBAC allowed
 * "create" on tokenreviews (dispatch.c): the body (JSON or YAML) must not
 * name a namespace and must carry spec.token (400 otherwise, upstream's
 * messages). The token goes through the same authenticators as a request's
 * Authorization header (auth_authenticate(): the static tokens of
 * --token-auth-file, then tokens.c's service-account JWTs and legacy
 * Secret tokens). The reply (201) is the review with status
 *
 *	authenticated	true or false
 *	user		username, uid, groups (system:authenticated
 *			included), as the request would have had them, and
 *			for service-account tokens extra: pod-name and
 *			pod-uid of a pod-bound token, and from 1.30
 *			credential-id ("JTI=<jti>") and the node's node-name
 *			and node-uid (authentication.kubernetes.io/...)
 *	audiences	the audiences the token is valid for among those
 *			asked (spec.audiences, or the API audience)
 *	error		why not, when not authenticated: upstream's
 *			"token audiences [\"a\"] is invalid for the target
 *			audiences [\"b\"]", else "invalid bearer token"
 *
 * The API audience is TOKENS_ISSUER. Static tokens are audience-agnostic,
 * so, as upstream's wrapper does, they authenticate only a review whose
 * audiences include the API audience; a service-account token is valid
 * for the audiences of its "aud" claim (legacy tokens: the API audience),
 * and status.audiences is their intersection with those asked.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "devcluster.h"
#include "authn.h"
#include "tokens.h"

#define INVALID_TOKEN	"invalid bearer token"

static int review_request(struct dc *, const struct dc_rtype *, const struct dc_req *,
    const struct dc_route *, struct dc_resp *);

static const struct dc_type_ops ops_tokenreview = {
	.request = review_request,
};

static const struct dc_rtype_def tokenreview_type = {
	.group = "authentication.k8s.io", .version = "v1", .plural = "tokenreviews",
	.singular = "tokenreview", .kind = "TokenReview", .verbs = DC_VERB_CREATE,
	.ops = &ops_tokenreview, .group_priority = 17700,
};

/* The body as a JSON object, or a 400/415 reply in 'resp'. */
static int
body_of(const struct dc_req *req, struct dc_resp *resp, struct json_object **ret)
{
	struct kc_status st = { 0 };
	struct json_object *o = NULL;
	const char *ct = req->content_type != NULL ? req->content_type : "application/json";
	const char *text = req->body != NULL ? req->body : "";
	int r;

	if (strncmp(ct, "application/yaml", 16) == 0)
		r = kc_yaml_parse_one(text, req->body_len, NULL, &o, &st);
	else if (strncmp(ct, "application/json", 16) == 0)
		r = kc_json_parse(text, req->body_len, &o, &st);
	else {
		errors_reply(resp, KC_EMEDIATYPE, "the body of the request was in an unknown "
		    "format - accepted media types include: application/json, "
		    "application/yaml");
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

/* Whether the audiences asked for (none: the API audience) include ours. */
static bool
audience_asked(const struct json_object *auds)
{
	size_t n = json_object_is_type(auds, json_type_array) ?
	    json_object_array_length(auds) : 0;

	if (n == 0)
		return true;
	for (size_t i = 0; i < n; i++) {
		const char *a = json_object_get_string(json_object_array_get_idx(auds, i));

		if (a != NULL && strcmp(a, TOKENS_ISSUER) == 0)
			return true;
	}
	return false;
}

int
authn_review_status(struct dc *dc, const char *token, const struct json_object *audiences,
    struct json_object **ret)
{
	struct json_object *st = json_object_new_object(), *ui = NULL, *auds;
	struct dc_user user = { 0 };
	const char *asked[DC_AUDIENCES_MAX + 1];
	char header[TOKENS_JWT_MAX + 16], err[512] = "";
	size_t nasked = 0;
	int r = KC_EUNAUTHORIZED, n;

	if (st == NULL)
		return -ENOMEM;
	for (size_t i = 0; json_object_is_type(audiences, json_type_array) &&
	    i < json_object_array_length(audiences) && nasked < DC_AUDIENCES_MAX; i++) {
		struct json_object *a = json_object_array_get_idx(audiences, i);

		if (json_object_is_type(a, json_type_string))
			asked[nasked++] = json_object_get_string(a);
	}
	asked[nasked] = NULL;
	n = snprintf(header, sizeof(header), "Bearer %s", token);
	if (n > 0 && (size_t)n < sizeof(header) && strchr(token, ' ') == NULL)
		r = auth_authenticate_for(dc->auth, header, nasked > 0 ? asked : NULL, &user,
		    err, sizeof(err));
	explicit_bzero(header, sizeof(header));
	if (r == -ENOMEM)
		goto oom;
	/* Static tokens know no audiences: only the API audience, as upstream's wrapper. */
	if (r == 0 && user.naudiences == 0 && !audience_asked(audiences))
		r = KC_EUNAUTHORIZED;
	if (r < 0) {
		if (kc_json_set_bool(st, "authenticated", false) < 0 ||
		    kc_json_set_str(st, "error", err[0] != '\0' ? err : INVALID_TOKEN) < 0)
			goto oom;
		user_clear(&user);
		*ret = st;
		return 0;
	}
	if (kc_json_set_bool(st, "authenticated", true) < 0 ||
	    user_info_json(&user, &ui) < 0 || kc_json_put(st, "user", ui) < 0)
		goto oom;
	if ((auds = json_object_new_array()) == NULL || kc_json_put(st, "audiences", auds) < 0)
		goto oom;
	for (size_t i = 0; i < user.naudiences; i++)
		if (kc_json_append(auds, json_object_new_string(user.audiences[i])) < 0)
			goto oom;
	if (user.naudiences == 0 &&
	    kc_json_append(auds, json_object_new_string(TOKENS_ISSUER)) < 0)
		goto oom;
	user_clear(&user);
	*ret = st;
	return 0;
oom:
	user_clear(&user);
	json_object_put(st);
	return -ENOMEM;
}

static int
review_request(struct dc *dc, const struct dc_rtype *rt, const struct dc_req *req,
    const struct dc_route *route, struct dc_resp *resp)
{
	struct json_object *body = NULL, *status = NULL, *md;
	const char *ns, *token;
	int r = 0;

	if (strcmp(route->verb, "create") != 0)
		return 0;
	if (body_of(req, resp, &body) < 0)
		return 1;
	ns = kc_json_str(body, "metadata", "namespace");
	token = kc_json_str(body, "spec", "token");
	if (ns != NULL && ns[0] != '\0') {
		errors_reply(resp, KC_EBADREQUEST, "namespace is not allowed on this type: %.*s",
		    DC_NAME_MAX, ns);
		goto out;
	}
	if (token == NULL || token[0] == '\0') {
		errors_reply(resp, KC_EBADREQUEST, "token is required for TokenReview in "
		    "authentication");
		goto out;
	}
	if ((r = authn_review_status(dc, token, kc_json_get(body, "spec", "audiences"),
	    &status)) < 0)
		goto out;
	if ((md = kc_json_ensure_obj(body, "metadata")) == NULL ||
	    kc_json_set_str(body, "kind", rt->kind) < 0 ||
	    kc_json_set_str(body, "apiVersion", rt->api_version) < 0 ||
	    kc_json_put_null(md, "creationTimestamp") < 0 ||
	    kc_json_put(body, "status", status) < 0) {
		status = NULL;
		r = -ENOMEM;
		goto out;
	}
	status = NULL;
	r = resp_json(resp, 201, body);
out:
	if (r < 0)
		errors_internal(resp, r);
	if (status != NULL)
		json_object_put(status);
	json_object_put(body);
	return 1;
}

int
authn_init(struct dc *dc)
{
	int r;

	if (plugin_state(dc, &authn_plugin) != NULL)
		return 0;
	if (registry_find(dc, tokenreview_type.group, tokenreview_type.version,
	    tokenreview_type.plural) == NULL &&
	    (r = registry_add(dc, &tokenreview_type, NULL)) < 0)
		return r;
	plugin_set_state(dc, &authn_plugin, dc);
	return 0;
}

void
authn_fini(struct dc *dc)
{
	plugin_set_state(dc, &authn_plugin, NULL);
}

static int
authn_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	(void)cfg;
	(void)st;
	return authn_init(dc);
}

const struct dc_plugin authn_plugin = {
	.name = "authn",
	.init = authn_start,
	.fini = authn_fini,
};

/*
 * write.c: the write pipeline, and the same pipeline for the writes the
 * simulated controllers make (the internal object API).
 *
 * Every create, update and patch goes through one pipeline whatever the
 * verb:
 *
 *	decode (JSON, YAML; protobuf through a hook) or apply the patch to
 *	the current object -> check apiVersion, kind, namespace and name
 *	-> convert to the storage version -> keep server-owned fields
 *	(uid, creationTimestamp, status on the main resource, everything
 *	but status on /status) -> type defaults -> managedFields hook ->
 *	validation (422 with causes) -> namespace lifecycle (create) ->
 *	admission, the plug-ins' in table order (plugins.c) -> generation
 *	(bumped only when something outside metadata and status changed)
 *	-> storage, unless dryRun=All.
 *
 * Deletion follows the registry store of kube-apiserver: preconditions,
 * finalizers (deletionTimestamp, MODIFIED) or grace periods (pods on a
 * node), else removal (DELETED). Namespaces go Terminating and a loop
 * timer empties them, then removes them.
 *
 * api_create_object() and api_delete_object*() run the same steps for a
 * plug-in (the garbage collector, the kubelets, the scheduler...) with
 * the field manager "devcluster" and no request: their failures come
 * back as KC_E* codes instead of replies.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/patch.h>
#include <kc/selector.h>
#include <kc/sbuf.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "devcluster.h"
#include "request.h"
#include "schema.h"

/* A graceful deletion waiting for its grace period (no kubelet hook). */
struct pending {
	char	*group;
	char	*resource;
	char	*ns;
	char	*name;
	char	*uid;
	uint64_t due_ms;
};

struct dc_api {
	struct pending	*pending;
	size_t		 npending;
	struct dc_timer	 grace_timer;
	struct dc_timer	 ns_timer;
	struct dc_timer	 bookmark_timer;
};

static int	write_create(struct rctx *, struct json_object *, struct json_object **);

static int	write_update(struct rctx *, struct json_object *, const struct json_object *,
		    bool, struct json_object **);

static int	delete_one(struct rctx *, const struct json_object *, int64_t,
		    const char *, const struct json_object *, struct json_object **,
		    bool *);

static void
now_stamp(char buf[KC_TIME_MAX], time_t t)
{
	if (kc_time_format(t, buf, KC_TIME_MAX) < 0)
		(void)kc_strlcpy(buf, "1970-01-01T00:00:00Z", KC_TIME_MAX);
}

/*
 * The write pipeline
 */

static struct dc_write_ctx
write_ctx(const struct rctx *c, enum dc_op op, const struct json_object *old)
{
	return (struct dc_write_ctx){
		.dc = c->dc,
		.rt = c->rt,
		.req = c->req,
		.op = op,
		.subresource = c->sub[0] != '\0' ? c->sub : NULL,
		.field_manager = c->manager,
		.dry_run = c->dry_run,
		.old = old,
		.resp = c->resp,
		.delete_grace = -1,
	};
}

static void
bad_request(struct rctx *c, const char *fmt, const char *a, const char *b)
{
	errors_reply(c->resp, KC_EBADREQUEST, fmt, a, b);
}

/* Decodes a request body; on failure the reply is written. */
static int
decode_body(struct rctx *c, struct json_object **ret)
{
	struct kc_status st = { 0 };
	struct json_object *o = NULL;
	char mt[128];
	int r;

	dispatch_media_type(c->req->content_type, mt, sizeof(mt));
	/* No Content-Type is the first type the server accepts, as upstream. */
	if (mt[0] == '\0' || strcmp(mt, "application/json") == 0) {
		if (c->req->body_len == 0) {
			errors_reply(c->resp, KC_EBADREQUEST, "Object 'Kind' is missing in ''");
			return KC_EBADREQUEST;
		}
		if ((r = kc_json_parse(c->req->body, c->req->body_len, &o, &st)) < 0) {
			if (r == -ENOMEM)
				errors_internal(c->resp, r);
			else
				errors_reply(c->resp, KC_EBADREQUEST,
				    "couldn't get version/kind; json parse error: %s", st.message);
			return r;
		}
	} else if (strcmp(mt, "application/yaml") == 0) {
		if ((r = kc_yaml_parse_one(c->req->body != NULL ? c->req->body : "",
		    c->req->body_len, NULL, &o, &st)) < 0) {
			if (r == -ENOMEM)
				errors_internal(c->resp, r);
			else
				errors_reply(c->resp, KC_EBADREQUEST,
				    "error converting YAML to JSON: %s", st.message);
			return r;
		}
	} else if (strcmp(mt, "application/vnd.kubernetes.protobuf") == 0 &&
	    c->dc->hooks.decode_protobuf != NULL) {
		if ((r = c->dc->hooks.decode_protobuf(c->dc, c->rt, c->req->body,
		    c->req->body_len, &o, &st)) < 0) {
			if (r == -ENOMEM)
				errors_internal(c->resp, r);
			else
				errors_kc(c->resp, r, &st);
			return r;
		}
	} else {
		errors_reply(c->resp, KC_EMEDIATYPE, "the body of the request was in an "
		    "unknown format - accepted media types include: application/json, "
		    "application/yaml%s%s",
		    c->dc->hooks.decode_protobuf != NULL ?
		    ", application/vnd.kubernetes.protobuf" : "",
		    strcmp(mt, "application/vnd.kubernetes.protobuf") == 0 ?
		    " (protobuf request bodies are not supported by this devcluster)" : "");
		return KC_EMEDIATYPE;
	}
	if (!json_object_is_type(o, json_type_object)) {
		if (o != NULL)
			json_object_put(o);
		errors_reply(c->resp, KC_EBADREQUEST,
		    "couldn't get version/kind; json parse error: the body is not a JSON "
		    "object");
		return KC_EBADREQUEST;
	}
	*ret = o;
	return 0;
}

/* apiVersion and kind of a body: filled from the URL when absent. */
static int
check_typemeta(struct rctx *c, struct json_object *obj)
{
	const char *kind = kc_json_str(obj, "kind");
	const char *av = kc_json_str(obj, "apiVersion");

	if (kind == NULL || kind[0] == '\0') {
		if (kc_json_set_str(obj, "kind", c->rt->kind) < 0)
			goto oom;
	} else if (strcmp(kind, c->rt->kind) != 0) {
		char msg[512];

		(void)snprintf(msg, sizeof(msg), "%s in version \"%s\" cannot be handled "
		    "as a %s: the kind of the object does not match the resource",
		    kind, c->rt->version, c->rt->kind);
		errors_reply(c->resp, KC_EBADREQUEST, "%s", msg);
		return KC_EBADREQUEST;
	}
	if (av == NULL || av[0] == '\0') {
		if (kc_json_set_str(obj, "apiVersion", c->rt->api_version) < 0)
			goto oom;
	} else if (strcmp(av, c->rt->api_version) != 0) {
		bad_request(c, "the API version in the data (%s) does not match the "
		    "expected API version (%s)", av, c->rt->api_version);
		return KC_EBADREQUEST;
	}
	return 0;
oom:
	errors_internal(c->resp, -ENOMEM);
	return -ENOMEM;
}

/* metadata.namespace of a body against the URL's. */
static int
check_namespace(struct rctx *c, struct json_object *obj)
{
	struct json_object *meta = kc_json_ensure_obj(obj, "metadata");
	const char *ns;

	if (meta == NULL) {
		errors_internal(c->resp, -ENOMEM);
		return -ENOMEM;
	}
	ns = kc_json_str(meta, "namespace");
	if (!c->rt->namespaced) {
		json_object_object_del(meta, "namespace");
		return 0;
	}
	if (ns != NULL && ns[0] != '\0' && strcmp(ns, c->ns) != 0) {
		errors_reply(c->resp, KC_EBADREQUEST, "the namespace of the provided object "
		    "does not match the namespace sent on the request");
		return KC_EBADREQUEST;
	}
	if (kc_json_set_str(meta, "namespace", c->ns) < 0) {
		errors_internal(c->resp, -ENOMEM);
		return -ENOMEM;
	}
	return 0;
}

/* To the storage version (the object is consumed, *ret is new). */
static int
to_storage(struct rctx *c, struct json_object *obj, struct json_object **ret)
{
	int r;

	if (c->rt->ops->decoded != NULL) {
		struct dc_write_ctx wc = write_ctx(c, c->name[0] != '\0' ? DC_OP_UPDATE :
		    DC_OP_CREATE, NULL);

		if ((r = c->rt->ops->decoded(&wc, obj, c->resp)) < 0) {
			json_object_put(obj);
			return r;
		}
	}
	if (c->rt->ops->convert_in == NULL) {
		*ret = obj;
		return 0;
	}
	r = c->rt->ops->convert_in(c->rt, obj, ret);
	json_object_put(obj);
	if (r < 0)
		errors_internal(c->resp, r);
	return r;
}

static void
generate_name(const char *prefix, char *buf, size_t size)
{
	static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
	char suffix[6];
	size_t plen = strlen(prefix);

	if (plen > 58)
		plen = 58;
	for (size_t i = 0; i < 5; i++)
		suffix[i] = alphabet[kc_random_u64() % (sizeof(alphabet) - 1)];
	suffix[5] = '\0';
	(void)snprintf(buf, size, "%.*s%s", (int)plen, prefix, suffix);
}

/* Everything outside metadata (and status when it is a subresource). */
static bool
same_spec(const struct dc_rtype *rt, const struct json_object *a,
    const struct json_object *b)
{
	size_t na = 0, nb = 0;

	json_object_object_foreach((struct json_object *)(uintptr_t)a, k, av) {
		struct json_object *bv;

		if (strcmp(k, "metadata") == 0 || strcmp(k, "apiVersion") == 0 ||
		    strcmp(k, "kind") == 0 ||
		    (strcmp(k, "status") == 0 && (rt->flags & DC_RT_STATUS)))
			continue;
		na++;
		if (!json_object_object_get_ex(b, k, &bv) || !kc_json_equal(av, bv))
			return false;
	}
	json_object_object_foreach((struct json_object *)(uintptr_t)b, k2, bv2) {
		(void)bv2;
		if (strcmp(k2, "metadata") == 0 || strcmp(k2, "apiVersion") == 0 ||
		    strcmp(k2, "kind") == 0 ||
		    (strcmp(k2, "status") == 0 && (rt->flags & DC_RT_STATUS)))
			continue;
		nb++;
	}
	return na == nb;
}

/* Sets (or removes, when 'v' is NULL) key 'k' of 'o' to a copy of 'v'. */
static int
copy_key(struct json_object *o, const char *k, const struct json_object *v)
{
	struct json_object *cp;

	if (v == NULL) {
		json_object_object_del(o, k);
		return 0;
	}
	if ((cp = kc_json_copy(v)) == NULL)
		return -ENOMEM;
	return kc_json_put(o, k, cp);
}

static bool
strv_has(const struct json_object *arr, const char *s)
{
	size_t n = json_object_is_type(arr, json_type_array) ?
	    json_object_array_length(arr) : 0;

	for (size_t i = 0; i < n; i++) {
		const char *v = json_object_get_string(json_object_array_get_idx(arr, i));

		if (v != NULL && strcmp(v, s) == 0)
			return true;
	}
	return false;
}

static size_t
arr_len(const struct json_object *arr)
{
	return json_object_is_type(arr, json_type_array) ?
	    json_object_array_length(arr) : 0;
}

static bool
ns_exists(struct rctx *c, bool *terminating)
{
	struct dc_rtype *nst = registry_find(c->dc, "", "v1", "namespaces");
	const struct json_object *ns;

	*terminating = false;
	if (nst == NULL)
		return true;
	if ((ns = coll_get(nst->coll, "", c->ns)) == NULL)
		return false;
	*terminating = kc_json_get(ns, "metadata", "deletionTimestamp") != NULL;
	return true;
}

static void
ns_terminating(struct rctx *c, const char *name)
{
	struct json_object *d = json_object_new_object(), *causes, *cause, *o = NULL;
	char msg[1024], cmsg[512];

	(void)snprintf(msg, sizeof(msg), "%s \"%s\" is forbidden: unable to create new "
	    "content in namespace %s because it is being terminated", c->rt->qualified,
	    name, c->ns);
	(void)snprintf(cmsg, sizeof(cmsg), "namespace %s is being terminated", c->ns);
	causes = json_object_new_array();
	cause = json_object_new_object();
	if (d == NULL || kc_json_set_str(d, "name", name) < 0 ||
	    (c->rt->group[0] != '\0' && kc_json_set_str(d, "group", c->rt->group) < 0) ||
	    kc_json_set_str(d, "kind", c->rt->plural) < 0 ||
	    kc_json_put(d, "causes", causes) < 0 || kc_json_append(causes, cause) < 0 ||
	    kc_json_set_str(cause, "reason", "NamespaceTerminating") < 0 ||
	    kc_json_set_str(cause, "message", cmsg) < 0 ||
	    kc_json_set_str(cause, "field", "metadata.namespace") < 0 ||
	    errors_status_body(KC_EFORBIDDEN, msg, d, &o) < 0) {
		if (d != NULL)
			json_object_put(d);
		errors_internal(c->resp, -ENOMEM);
		return;
	}
	json_object_put(d);
	reply_json(c->resp, 403, o);
}

static int
run_validation(struct rctx *c, enum dc_op op, struct json_object *obj,
    const struct json_object *old)
{
	struct dc_write_ctx wc = write_ctx(c, op, old);
	struct dc_errs errs = { 0 };
	const char *name = kc_json_str(obj, "metadata", "name");
	int r;

	if (name == NULL || name[0] == '\0')
		errs_required(&errs, "metadata.name", "name or generateName is required");
	else
		builtin_validate_name(c->rt->name_rule, "metadata.name", name, &errs);
	builtin_validate_meta(obj, &errs);
	if (old != NULL && kc_json_get(old, "metadata", "deletionTimestamp") != NULL) {
		struct json_object *nf = kc_json_get(obj, "metadata", "finalizers");
		struct json_object *of = kc_json_get(old, "metadata", "finalizers");
		char list[512] = "";
		size_t off = 0;

		for (size_t i = 0; i < arr_len(nf); i++) {
			const char *f = json_object_get_string(json_object_array_get_idx(nf, i));
			char q[256];
			int n;

			if (f == NULL || strv_has(of, f))
				continue;
			n = snprintf(list + off, sizeof(list) - off, "%s%s", off > 0 ? ", " : "",
			    kc_sbuf_quoted(q, sizeof(q), f));
			if (n > 0 && (size_t)n < sizeof(list) - off)
				off += (size_t)n;
		}
		if (off > 0) {
			char detail[700];

			(void)snprintf(detail, sizeof(detail), "no new finalizers can be added "
			    "if the object is being deleted, found new finalizers []string{%s}",
			    list);
			errs_forbidden(&errs, "metadata.finalizers", detail);
		}
	}
	if (c->rt->ops->validate != NULL &&
	    (r = c->rt->ops->validate(&wc, obj, old, &errs)) < 0) {
		errors_internal(c->resp, r);
		return r;
	}
	if (errs.n > 0) {
		errors_invalid(c->resp, c->rt->qualified_kind, c->rt->group,
		    name != NULL ? name : "", &errs);
		return KC_EINVALID;
	}
	return 0;
}

/*
 * Admission, the last step before storage: the plug-ins' in table order,
 * with 'wc' (a delete's options set).
 */
static int
admit_all(struct rctx *c, struct dc_write_ctx *wc, struct json_object *obj)
{
	struct kc_status st = { 0 };
	int r;

	for (size_t i = 0; i < dc_nplugins; i++) {
		const struct dc_plugin *p = dc_plugins[i];

		if (p->admit == NULL || plugin_state(c->dc, p) == NULL)
			continue;
		if ((r = p->admit(wc, obj, &st)) < 0) {
			if (r == -ENOMEM)
				errors_internal(c->resp, r);
			else if (!wc->answered)
				errors_kc(c->resp, r, &st);
			return r;
		}
	}
	return 0;
}

static int
run_hooks(struct rctx *c, enum dc_op op, struct json_object *obj,
    const struct json_object *old)
{
	struct dc_write_ctx wc = write_ctx(c, op, old);

	return admit_all(c, &wc, obj);
}

/*
 * Admission of a delete ('obj' NULL, the stored object as 'old'), with
 * the request's options, before anything changes.
 */
static int
run_delete_hooks(struct rctx *c, const struct json_object *old, int64_t grace,
    const char *policy)
{
	struct dc_write_ctx wc = write_ctx(c, DC_OP_DELETE, old);

	wc.delete_grace = grace;
	wc.delete_policy = policy;
	return admit_all(c, &wc, NULL);
}

int
api_admission_revalidate(struct dc_write_ctx *wc, struct json_object *obj,
    const struct json_object *before)
{
	static const char *const kept[] = {
		"uid", "creationTimestamp", "resourceVersion", "generation",
		"deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", NULL
	};
	struct rctx c = {
		.dc = wc->dc, .req = (struct dc_req *)(uintptr_t)wc->req, .resp = wc->resp,
		.rt = wc->rt, .sub = wc->subresource != NULL ? wc->subresource : "",
		.dry_run = wc->dry_run, .manager = wc->field_manager,
	};
	struct json_object *meta = kc_json_ensure_obj(obj, "metadata");
	const struct json_object *bmeta = kc_json_get(before, "metadata");
	int r;

	if (meta == NULL)
		return -ENOMEM;
	c.ns = or_empty(kc_json_str(meta, "namespace"));
	c.name = or_empty(kc_json_str(meta, "name"));
	for (size_t i = 0; before != NULL && kept[i] != NULL; i++)
		if (copy_key(meta, kept[i], kc_json_get(bmeta, kept[i])) < 0)
			return -ENOMEM;
	if (wc->rt->ops->defaults != NULL && (r = wc->rt->ops->defaults(wc, obj)) < 0)
		return r;
	if ((r = run_validation(&c, wc->op, obj, wc->old)) < 0) {
		wc->answered = true;
		return r;
	}
	if (wc->op == DC_OP_UPDATE && wc->old != NULL && (wc->rt->flags & DC_RT_GENERATION)) {
		int64_t gen = kc_json_int(wc->old, 1, "metadata", "generation");

		if (!same_spec(wc->rt, obj, wc->old))
			gen++;
		if (kc_json_set_int(meta, "generation", gen) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * managedFields, recorded where kube-apiserver records them: on the
 * decoded and defaulted object, before admission and the strategy's
 * preparation (so server-set fields are nobody's).
 */
static int
run_managed_fields(struct rctx *c, enum dc_op op, struct json_object *obj,
    const struct json_object *old)
{
	struct dc_write_ctx wc = write_ctx(c, op, old);
	int r;

	if (c->dc->hooks.managed_fields != NULL &&
	    (r = c->dc->hooks.managed_fields(&wc, obj)) < 0) {
		errors_internal(c->resp, r);
		return r;
	}
	return 0;
}

static int
write_create(struct rctx *c, struct json_object *obj, struct json_object **ret)
{
	struct dc_write_ctx wc = write_ctx(c, DC_OP_CREATE, NULL);
	struct json_object *meta;
	const char *name, *gen, *rv;
	char stamp[KC_TIME_MAX], uid[37], gname[DC_NAME_MAX + 1];
	bool generated = false, term;
	int r;

	if ((meta = kc_json_ensure_obj(obj, "metadata")) == NULL)
		goto oom;
	rv = kc_json_str(meta, "resourceVersion");
	if (rv != NULL && rv[0] != '\0') {
		reply_unknown(c->resp, 500,
		    "resourceVersion should not be set on objects to be created");
		r = KC_EINTERNAL;
		goto fail;
	}
	name = kc_json_str(meta, "name");
	gen = kc_json_str(meta, "generateName");
	if ((name == NULL || name[0] == '\0') && gen != NULL && gen[0] != '\0') {
		/* A request answered in passes keeps what its first pass made. */
		if (c->req != NULL && c->req->keep_name[0] != '\0')
			(void)kc_strlcpy(gname, c->req->keep_name, sizeof(gname));
		else
			generate_name(gen, gname, sizeof(gname));
		generated = true;
		if (kc_json_set_str(meta, "name", gname) < 0)
			goto oom;
	}
	if (c->req != NULL && c->req->keep_uid[0] != '\0') {
		(void)kc_strlcpy(uid, c->req->keep_uid, sizeof(uid));
		(void)kc_strlcpy(stamp, c->req->keep_stamp, sizeof(stamp));
	} else {
		api_uuid(uid);
		now_stamp(stamp, c->now);
		if (c->req != NULL) {
			(void)kc_strlcpy(c->req->keep_uid, uid, sizeof(c->req->keep_uid));
			(void)kc_strlcpy(c->req->keep_stamp, stamp, sizeof(c->req->keep_stamp));
		}
	}
	json_object_object_del(meta, "resourceVersion");
	json_object_object_del(meta, "deletionTimestamp");
	json_object_object_del(meta, "deletionGracePeriodSeconds");
	json_object_object_del(meta, "selfLink");
	if (kc_json_set_str(meta, "uid", uid) < 0 ||
	    kc_json_set_str(meta, "creationTimestamp", stamp) < 0)
		goto oom;
	if (c->rt->flags & DC_RT_GENERATION) {
		if (kc_json_set_int(meta, "generation", 1) < 0)
			goto oom;
	} else
		json_object_object_del(meta, "generation");
	if ((c->rt->flags & DC_RT_STATUS) && !(c->rt->flags & DC_RT_CUSTOM) &&
	    c->rt->ops->prepare_create == NULL)
		json_object_object_del(obj, "status");
	if ((c->rt->flags & DC_RT_STATUS) && (c->rt->flags & DC_RT_CUSTOM))
		json_object_object_del(obj, "status");
	if (c->rt->ops->defaults != NULL && (r = c->rt->ops->defaults(&wc, obj)) < 0)
		goto internal;
	if ((r = run_managed_fields(c, DC_OP_CREATE, obj, NULL)) < 0)
		goto fail;
	if (c->rt->ops->prepare_create != NULL &&
	    (r = c->rt->ops->prepare_create(&wc, obj)) < 0)
		goto internal;
	if ((r = run_validation(c, DC_OP_CREATE, obj, NULL)) < 0)
		goto fail;
	name = kc_json_str(obj, "metadata", "name");
	if (c->rt->namespaced) {
		if (!ns_exists(c, &term)) {
			struct dc_rtype *nst = registry_find(c->dc, "", "v1", "namespaces");

			errors_notfound(c->resp, nst, c->ns);
			r = KC_ENOTFOUND;
			goto fail;
		}
		if (term) {
			ns_terminating(c, name);
			r = KC_EFORBIDDEN;
			goto fail;
		}
	}
	for (int tries = 0; generated && tries < 8 &&
	    coll_get(c->rt->coll, c->ns, name) != NULL; tries++) {
		generate_name(gen, gname, sizeof(gname));
		if (kc_json_set_str(kc_json_obj_of(obj, "metadata"), "name", gname) < 0)
			goto oom;
		name = kc_json_str(obj, "metadata", "name");
	}
	if (generated && c->req != NULL)
		(void)kc_strlcpy(c->req->keep_name, name, sizeof(c->req->keep_name));
	if ((r = run_hooks(c, DC_OP_CREATE, obj, NULL)) < 0)
		goto fail;
	/* Admission may have replaced the object's members (a webhook's patch). */
	name = or_empty(kc_json_str(obj, "metadata", "name"));
	if (c->dry_run) {
		if (coll_get(c->rt->coll, c->ns, name) != NULL) {
			errors_obj(c->resp, KC_EEXISTS, c->rt, name,
			    "%s \"%s\" already exists", c->rt->qualified, name);
			r = KC_EEXISTS;
			goto fail;
		}
		*ret = obj;
		return 0;
	}
	{
		char nbuf[DC_SEGMENT_MAX];

		(void)kc_strlcpy(nbuf, name, sizeof(nbuf));
		r = storage_create(c->dc->store, c->rt->coll, obj, ret);
		if (r == KC_EEXISTS) {
			errors_obj(c->resp, KC_EEXISTS, c->rt, nbuf,
			    "%s \"%s\" already exists", c->rt->qualified, nbuf);
			return r;
		}
		if (r < 0) {
			errors_internal(c->resp, r);
			return r;
		}
	}
	return 0;
oom:
	r = -ENOMEM;
internal:
	errors_internal(c->resp, r);
fail:
	json_object_put(obj);
	return r;
}

static void
conflict(struct rctx *c, const char *name)
{
	errors_obj(c->resp, KC_ECONFLICT, c->rt, name, "Operation cannot be fulfilled on "
	    "%s \"%s\": the object has been modified; please apply your changes to the "
	    "latest version and try again", c->rt->qualified, name);
}

/* An update of a deleting object that leaves no finalizers removes it. */
static bool
finalized(const struct dc_rtype *rt, const struct json_object *obj)
{
	if (kc_json_get(obj, "metadata", "deletionTimestamp") == NULL)
		return false;
	if (arr_len(kc_json_get(obj, "metadata", "finalizers")) > 0)
		return false;
	if (strcmp(rt->plural, "namespaces") == 0 && rt->group[0] == '\0' &&
	    arr_len(kc_json_get(obj, "spec", "finalizers")) > 0)
		return false;
	return true;
}

static int
write_update(struct rctx *c, struct json_object *obj, const struct json_object *old,
    bool require_rv, struct json_object **ret)
{
	struct dc_write_ctx wc = write_ctx(c, DC_OP_UPDATE, old);
	struct json_object *meta, *next = NULL, *oldmeta = kc_json_obj_of(old, "metadata");
	const char *brv, *buid, *ouid, *orv;
	char name[DC_SEGMENT_MAX];
	int64_t gen;
	int r;

	(void)kc_strlcpy(name, c->name, sizeof(name));
	if ((meta = kc_json_ensure_obj(obj, "metadata")) == NULL)
		goto oom;
	brv = kc_json_str(meta, "resourceVersion");
	orv = kc_json_str(oldmeta, "resourceVersion");
	if (brv == NULL || brv[0] == '\0') {
		if (require_rv && (c->rt->flags & DC_RT_CUSTOM)) {
			struct dc_errs errs = { 0 };

			errs_invalid(&errs, "metadata.resourceVersion", "0x0",
			    "must be specified for an update");
			errors_invalid(c->resp, c->rt->qualified_kind, c->rt->group, name,
			    &errs);
			r = KC_EINVALID;
			goto fail;
		}
	} else if (orv == NULL || strcmp(brv, orv) != 0) {
		conflict(c, name);
		r = KC_ECONFLICT;
		goto fail;
	}
	buid = kc_json_str(meta, "uid");
	ouid = kc_json_str(oldmeta, "uid");
	if (buid != NULL && buid[0] != '\0' && ouid != NULL && strcmp(buid, ouid) != 0) {
		errors_obj(c->resp, KC_ECONFLICT, c->rt, name, "Precondition failed: UID in "
		    "precondition: %s, UID in object meta: %s", buid, ouid);
		r = KC_ECONFLICT;
		goto fail;
	}
	if (strcmp(c->sub, "status") == 0 || strcmp(c->sub, "finalize") == 0) {
		/* Only status (or spec.finalizers) comes from the body. */
		if ((next = kc_json_copy(old)) == NULL)
			goto oom;
		if (strcmp(c->sub, "status") == 0)
			r = copy_key(next, "status", kc_json_get(obj, "status"));
		else {
			struct json_object *spec = kc_json_ensure_obj(next, "spec");

			r = spec == NULL ? -ENOMEM :
			    copy_key(spec, "finalizers", kc_json_get(obj, "spec", "finalizers"));
		}
		/*
		 * managedFields are the field manager's: an apply's result
		 * keeps its own, other writes get theirs recomputed.
		 */
		if (r == 0 && c->dc->hooks.managed_fields != NULL)
			r = copy_key(kc_json_obj_of(next, "metadata"), "managedFields",
			    kc_json_get(obj, "metadata", "managedFields"));
		if (r < 0)
			goto oom;
		json_object_put(obj);
		obj = next;
		next = NULL;
		meta = kc_json_obj_of(obj, "metadata");
	} else {
		static const char *const kept[] = {
			"uid", "creationTimestamp", "deletionTimestamp",
			"deletionGracePeriodSeconds", "generation", NULL
		};

		for (size_t i = 0; kept[i] != NULL; i++)
			if (copy_key(meta, kept[i], kc_json_get(oldmeta, kept[i])) < 0)
				goto oom;
		json_object_object_del(meta, "selfLink");
		if ((c->rt->flags & DC_RT_STATUS) &&
		    copy_key(obj, "status", kc_json_get(old, "status")) < 0)
			goto oom;
		if (c->rt->ops->prepare_update != NULL &&
		    (r = c->rt->ops->prepare_update(&wc, obj, old)) < 0)
			goto internal;
		if (c->rt->ops->defaults != NULL && (r = c->rt->ops->defaults(&wc, obj)) < 0)
			goto internal;
	}
	if ((r = run_managed_fields(c, DC_OP_UPDATE, obj, old)) < 0)
		goto fail;
	if ((r = run_validation(c, DC_OP_UPDATE, obj, old)) < 0)
		goto fail;
	if (c->rt->flags & DC_RT_GENERATION) {
		gen = kc_json_int(old, 1, "metadata", "generation");
		if (!same_spec(c->rt, obj, old))
			gen++;
		if (kc_json_set_int(meta, "generation", gen) < 0)
			goto oom;
	}
	if (orv != NULL && kc_json_set_str(meta, "resourceVersion", orv) < 0)
		goto oom;
	if ((r = run_hooks(c, DC_OP_UPDATE, obj, old)) < 0)
		goto fail;
	if (c->dry_run) {
		*ret = obj;
		return 0;
	}
	if (finalized(c->rt, obj))
		r = storage_delete(c->dc->store, c->rt->coll, obj, 0, ret);
	else
		r = storage_update(c->dc->store, c->rt->coll, obj, 0, ret);
	if (r == KC_ECONFLICT) {
		conflict(c, name);
		return r;
	}
	if (r < 0) {
		errors_internal(c->resp, r);
		return r;
	}
	return 0;
oom:
	r = -ENOMEM;
internal:
	errors_internal(c->resp, r);
fail:
	if (next != NULL)
		json_object_put(next);
	json_object_put(obj);
	return r;
}

/*
 * create, update, patch
 */

/* hooks.binding: POST pods/<name>/binding and the bindings collection. */
static bool
binding_request(struct rctx *c)
{
	struct json_object *obj = NULL;
	int r;

	if (c->dc->hooks.binding == NULL || !(strcmp(c->sub, "binding") == 0 ||
	    (c->sub[0] == '\0' && c->rt->group[0] == '\0' &&
	    strcmp(c->rt->plural, "bindings") == 0)))
		return false;
	if (decode_body(c, &obj) < 0)
		return true;
	if (check_namespace(c, obj) == 0 && (r = c->dc->hooks.binding(c->dc, c->req, c->ns,
	    c->sub[0] != '\0' ? c->name : NULL, obj, c->dry_run, c->resp)) < 0)
		errors_internal(c->resp, r);
	json_object_put(obj);
	return true;
}

void
write_verb_create(struct rctx *c)
{
	struct json_object *obj = NULL, *st = NULL, *stored = NULL;

	if (binding_request(c) || dispatch_upgrade(c))
		return;
	if (c->name[0] != '\0') {
		reply_method_not_allowed(c->resp);
		return;
	}
	if (decode_body(c, &obj) < 0)
		return;
	if (check_typemeta(c, obj) < 0 || check_namespace(c, obj) < 0) {
		json_object_put(obj);
		return;
	}
	if (to_storage(c, obj, &st) < 0)
		return;
	if (write_create(c, st, &stored) < 0)
		return;
	reply_object(c, 201, stored);
	json_object_put(stored);
}

/* The body's name against the URL's. */
static int
check_name(struct rctx *c, const struct json_object *obj)
{
	const char *name = kc_json_str(obj, "metadata", "name");

	if (name == NULL || strcmp(name, c->name) != 0) {
		bad_request(c, "the name of the object (%s) does not match the name on "
		    "the URL (%s)", name != NULL ? name : "", c->name);
		return KC_EBADREQUEST;
	}
	return 0;
}

void
write_verb_update(struct rctx *c)
{
	struct json_object *obj = NULL, *st = NULL, *stored = NULL;
	const struct json_object *old;
	bool created = false;

	if (decode_body(c, &obj) < 0)
		return;
	if (check_typemeta(c, obj) < 0 || check_namespace(c, obj) < 0 ||
	    check_name(c, obj) < 0) {
		json_object_put(obj);
		return;
	}
	if (to_storage(c, obj, &st) < 0)
		return;
	old = coll_get(c->rt->coll, c->ns, c->name);
	if (old == NULL) {
		if (!(c->rt->flags & DC_RT_CREATE_ON_UPDATE) || c->sub[0] != '\0') {
			json_object_put(st);
			errors_notfound(c->resp, c->rt, c->name);
			return;
		}
		json_object_object_del(kc_json_obj_of(st, "metadata"), "resourceVersion");
		if (write_create(c, st, &stored) < 0)
			return;
		created = true;
	} else {
		struct json_object *hold = json_object_get((struct json_object *)(uintptr_t)old);
		int r = write_update(c, st, hold, true, &stored);

		json_object_put(hold);
		if (r < 0)
			return;
	}
	reply_object(c, created ? 201 : 200, stored);
	json_object_put(stored);
}

enum patch_kind
write_patch_kind(const char *ct)
{
	char mt[128];

	dispatch_media_type(ct, mt, sizeof(mt));
	if (strcmp(mt, "application/json-patch+json") == 0)
		return PATCH_JSON;
	if (strcmp(mt, "application/merge-patch+json") == 0)
		return PATCH_MERGE;
	if (strcmp(mt, "application/strategic-merge-patch+json") == 0)
		return PATCH_SMP;
	if (strcmp(mt, "application/apply-patch+yaml") == 0 ||
	    strcmp(mt, "application/apply-patch+cbor") == 0)
		return strcmp(mt, "application/apply-patch+yaml") == 0 ? PATCH_APPLY :
		    PATCH_NONE;
	return PATCH_NONE;
}

static void
patch_unsupported(struct rctx *c)
{
	errors_reply(c->resp, KC_EMEDIATYPE, "the body of the request was in an unknown "
	    "format - accepted media types include: application/json-patch+json, "
	    "application/merge-patch+json, application/apply-patch+yaml%s",
	    c->rt->smp != NULL ? ", application/strategic-merge-patch+json" : "");
}

/* Server-side apply: the hook, or create-or-merge. */
static int
do_apply(struct rctx *c, const struct json_object *old, struct json_object **ret)
{
	struct kc_status st = { 0 };
	struct dc_errs errs = { 0 };
	struct json_object *applied = NULL, *view = NULL, *result = NULL, *details = NULL;
	int r;

	if (c->manager == NULL || c->manager[0] == '\0') {
		errs_required(&errs, "fieldManager", "is required for apply patch");
		errors_invalid(c->resp, "PatchOptions.meta.k8s.io", "meta.k8s.io", "", &errs);
		return KC_EINVALID;
	}
	if ((r = kc_yaml_parse_one(c->req->body != NULL ? c->req->body : "",
	    c->req->body_len, NULL, &applied, &st)) < 0) {
		if (r == -ENOMEM)
			errors_internal(c->resp, r);
		else
			errors_reply(c->resp, KC_EBADREQUEST,
			    "error decoding YAML: %s", st.message);
		return r;
	}
	if (!json_object_is_type(applied, json_type_object)) {
		if (applied != NULL)
			json_object_put(applied);
		errors_reply(c->resp, KC_EBADREQUEST, "the apply patch is not an object");
		return KC_EBADREQUEST;
	}
	if (kc_json_get(applied, "metadata", "managedFields") != NULL) {
		json_object_put(applied);
		errors_reply(c->resp, KC_EBADREQUEST, "metadata.managedFields must be nil");
		return KC_EBADREQUEST;
	}
	if (check_typemeta(c, applied) < 0 || check_namespace(c, applied) < 0 ||
	    check_name(c, applied) < 0) {
		json_object_put(applied);
		return KC_EBADREQUEST;
	}
	if (old != NULL && (r = api_view(c->rt, old, &view)) < 0) {
		json_object_put(applied);
		errors_internal(c->resp, r);
		return r;
	}
	if (c->dc->hooks.apply != NULL) {
		r = c->dc->hooks.apply(c->dc, c->rt, c->req, view, applied, &result, &errs,
		    &st, &details);
		if (r == KC_EINVALID && errs.n > 0)
			errors_invalid(c->resp, c->rt->qualified_kind, c->rt->group, c->name,
			    &errs);
		else if (r < 0) {
			reply_details(c->resp, r, &st, details);
			details = NULL;
		}
		if (details != NULL)
			json_object_put(details);
	} else if (view == NULL) {
		result = json_object_get(applied);
		r = 0;
	} else {
		if (c->rt->flags & DC_RT_STATUS)
			json_object_object_del(applied, "status");
		r = kc_merge_patch_apply(view, applied, &result, &st);
		if (r < 0)
			errors_kc(c->resp, r, &st);
	}
	json_object_put(applied);
	if (view != NULL)
		json_object_put(view);
	if (r < 0)
		return r;
	*ret = result;
	return 0;
}

void
write_verb_patch(struct rctx *c)
{
	struct kc_status st = { 0 };
	struct json_object *patch = NULL, *view = NULL, *result = NULL;
	struct json_object *stored = NULL, *hold = NULL, *sto = NULL;
	const struct json_object *old = coll_get(c->rt->coll, c->ns, c->name);
	enum patch_kind pk = write_patch_kind(c->req->content_type);
	int r;

	if (pk == PATCH_NONE || (pk == PATCH_SMP && c->rt->smp == NULL)) {
		patch_unsupported(c);
		return;
	}
	if (pk == PATCH_APPLY) {
		if (do_apply(c, old, &result) < 0)
			return;
		if (check_namespace(c, result) < 0) {
			json_object_put(result);
			return;
		}
		if (to_storage(c, result, &sto) < 0)
			return;
		if (old == NULL) {
			if (c->sub[0] != '\0') {
				json_object_put(sto);
				errors_notfound(c->resp, c->rt, c->name);
				return;
			}
			if (write_create(c, sto, &stored) < 0)
				return;
			reply_object(c, 201, stored);
			json_object_put(stored);
			return;
		}
		hold = json_object_get((struct json_object *)(uintptr_t)old);
		r = write_update(c, sto, hold, false, &stored);
		json_object_put(hold);
		if (r < 0)
			return;
		reply_object(c, 200, stored);
		json_object_put(stored);
		return;
	}
	if (old == NULL) {
		errors_notfound(c->resp, c->rt, c->name);
		return;
	}
	if ((r = kc_patch_parse(c->req->body != NULL ? c->req->body : "", c->req->body_len,
	    &patch, &st)) < 0) {
		errors_kc(c->resp, r, &st);
		return;
	}
	if ((r = api_view(c->rt, old, &view)) < 0) {
		if (patch != NULL)
			json_object_put(patch);
		errors_internal(c->resp, r);
		return;
	}
	switch (pk) {
	case PATCH_JSON:
		r = kc_json_patch_apply(view, patch, &result, &st);
		break;
	case PATCH_MERGE:
		r = kc_merge_patch_apply(view, patch, &result, &st);
		break;
	default:
		r = kc_smp_apply(view, patch, c->rt->smp, &result, &st);
		break;
	}
	json_object_put(view);
	if (patch != NULL)
		json_object_put(patch);
	if (r < 0) {
		errors_kc(c->resp, r, &st);
		return;
	}
	if (!json_object_is_type(result, json_type_object)) {
		if (result != NULL)
			json_object_put(result);
		errors_reply(c->resp, KC_EBADREQUEST, "the patched object is not an object");
		return;
	}
	if (check_typemeta(c, result) < 0 || check_namespace(c, result) < 0 ||
	    check_name(c, result) < 0) {
		json_object_put(result);
		return;
	}
	if (to_storage(c, result, &sto) < 0)
		return;
	hold = json_object_get((struct json_object *)(uintptr_t)old);
	r = write_update(c, sto, hold, false, &stored);
	json_object_put(hold);
	if (r < 0)
		return;
	reply_object(c, 200, stored);
	json_object_put(stored);
}

/*
 * delete, deletecollection
 */

struct delopts {
	int64_t	 grace;		/* -1: unset */
	char	 policy[32];	/* "": unset, unless policy_set */
	bool	 policy_set;	/* given, "" included (Unsupported) */
	char	 pre_uid[64];
	char	 pre_rv[32];
	bool	 orphan;
};

static int
parse_delete_opts(struct rctx *c, struct delopts *o)
{
	struct json_object *body = NULL, *v;
	struct dc_errs errs = { 0 };
	const char *q;
	int r;

	memset(o, 0, sizeof(*o));
	o->grace = -1;
	if (c->req->body_len > 0) {
		char mt[128];

		dispatch_media_type(c->req->content_type, mt, sizeof(mt));
		if (mt[0] == '\0') {
			kc_free(c->req->content_type);
			if ((c->req->content_type = kc_strdup("application/json")) == NULL) {
				errors_internal(c->resp, -ENOMEM);
				return -ENOMEM;
			}
		}
		if ((r = decode_body(c, &body)) < 0)
			return r;
		if (json_object_object_get_ex(body, "gracePeriodSeconds", &v) &&
		    json_object_is_type(v, json_type_int))
			o->grace = json_object_get_int64(v);
		if ((q = kc_json_str(body, "propagationPolicy")) != NULL) {
			(void)kc_strlcpy(o->policy, q, sizeof(o->policy));
			o->policy_set = true;
		}
		if ((q = kc_json_str(body, "preconditions", "uid")) != NULL)
			(void)kc_strlcpy(o->pre_uid, q, sizeof(o->pre_uid));
		if ((q = kc_json_str(body, "preconditions", "resourceVersion")) != NULL)
			(void)kc_strlcpy(o->pre_rv, q, sizeof(o->pre_rv));
		o->orphan = kc_json_bool(body, false, "orphanDependents");
		v = kc_json_arr_of(body, "dryRun");
		for (size_t i = 0; i < arr_len(v); i++) {
			const char *d = json_object_get_string(json_object_array_get_idx(v, i));

			if (d != NULL && strcmp(d, "All") == 0)
				c->dry_run = true;
			else {
				char val[512];

				schema_crd_strings_repr(val, sizeof(val), v);
				errs_add(&errs, "NotSupported", "dryRun",
				    "Unsupported value: %s: supported values: \"All\"", val);
				break;
			}
		}
		json_object_put(body);
	}
	/*
	 * The query's DeleteOptions only without a body, as upstream's
	 * handler decodes one or the other (the official Python client
	 * sends both: its body wins).
	 */
	if (c->req->body_len == 0) {
		char err[256];

		if (req_param_i64(c->req, "gracePeriodSeconds", &o->grace, err,
		    sizeof(err)) < 0) {
			errors_reply(c->resp, KC_EBADREQUEST, "%s", err);
			return KC_EBADREQUEST;
		}
		if ((q = req_param(c->req, "propagationPolicy")) != NULL) {
			(void)kc_strlcpy(o->policy, q, sizeof(o->policy));
			o->policy_set = true;
		}
		if (req_has_param(c->req, "orphanDependents"))
			o->orphan = req_param_bool(c->req, "orphanDependents");
	}
	if (o->policy_set && strcmp(o->policy, "Foreground") != 0 &&
	    strcmp(o->policy, "Background") != 0 && strcmp(o->policy, "Orphan") != 0)
		errs_unsupported(&errs, "propagationPolicy", o->policy,
		    (const char *const []){ "Foreground", "Background", "Orphan", "nil",
		    NULL });
	if (o->grace < -1)
		o->grace = 0;
	if (errs.n > 0) {
		errors_invalid(c->resp, "DeleteOptions.meta.k8s.io", "meta.k8s.io", "", &errs);
		return KC_EINVALID;
	}
	return 0;
}

static int
pending_add(struct dc *dc, const struct dc_rtype *rt, const struct json_object *obj)
{
	struct dc_api *api = dc->api;
	struct pending *p, *arr;
	const char *ns = kc_json_str(obj, "metadata", "namespace");
	const char *uid = kc_json_str(obj, "metadata", "uid");

	arr = kc_reallocarray(api->pending, api->npending + 1, sizeof(*arr));
	if (arr == NULL)
		return -ENOMEM;
	api->pending = arr;
	p = &arr[api->npending];
	memset(p, 0, sizeof(*p));
	p->group = kc_strdup(rt->group);
	p->resource = kc_strdup(rt->plural);
	p->ns = kc_strdup(ns != NULL ? ns : "");
	p->name = kc_strdup(kc_json_str(obj, "metadata", "name"));
	p->uid = kc_strdup(uid != NULL ? uid : "");
	p->due_ms = kc_clock_now_ms();
	if (p->group == NULL || p->resource == NULL || p->ns == NULL || p->name == NULL ||
	    p->uid == NULL) {
		kc_free(p->group);
		kc_free(p->resource);
		kc_free(p->ns);
		kc_free(p->name);
		kc_free(p->uid);
		return -ENOMEM;
	}
	api->npending++;
	timer_arm(&api->grace_timer, 0);
	return 0;
}

static void
pending_free(struct pending *p)
{
	kc_free(p->group);
	kc_free(p->resource);
	kc_free(p->ns);
	kc_free(p->name);
	kc_free(p->uid);
}

/* Graceful deletions whose time has come are finished (no kubelet). */
static int64_t
grace_tick(void *arg)
{
	struct dc *dc = arg;
	struct dc_api *api = dc->api;
	uint64_t now = kc_clock_now_ms();
	int64_t next = DC_TIMER_STOP;
	size_t i = 0;

	while (i < api->npending) {
		struct pending p = api->pending[i];
		const struct dc_rtype *rt;
		const struct json_object *obj;

		if (p.due_ms > now) {
			int64_t d = (int64_t)(p.due_ms - now);

			if (next == DC_TIMER_STOP || d < next)
				next = d;
			i++;
			continue;
		}
		api->pending[i] = api->pending[--api->npending];
		rt = registry_find_any(dc, p.group, p.resource);
		obj = rt != NULL ? coll_get(rt->coll, p.ns, p.name) : NULL;
		if (obj != NULL && kc_json_get(obj, "metadata", "deletionTimestamp") != NULL &&
		    strcmp(p.uid, kc_json_str(obj, "metadata", "uid") != NULL ?
		    kc_json_str(obj, "metadata", "uid") : "") == 0) {
			struct kc_log_ctx lc = { .action = "delete", .kind = rt->kind,
			    .ns = p.ns, .name = p.name };
			int r = api_delete_object(dc, rt, p.ns, p.name, 0);

			if (r < 0 && r != KC_ENOTFOUND)
				kc_log_warn(&lc, "finishing a graceful deletion failed: %s",
				    kc_strerror(r));
		}
		pending_free(&p);
	}
	return next;
}

static bool
protected_namespace(const char *name)
{
	return strcmp(name, "default") == 0 || strcmp(name, "kube-system") == 0 ||
	    strcmp(name, "kube-public") == 0;
}

static int
delete_namespace(struct rctx *c, const struct json_object *old, struct json_object **ret,
    bool *ret_deleted)
{
	struct json_object *next, *meta, *status;
	char stamp[KC_TIME_MAX];
	int r;

	*ret_deleted = false;
	if (protected_namespace(c->name)) {
		errors_obj(c->resp, KC_EFORBIDDEN, c->rt, c->name,
		    "namespaces \"%s\" is forbidden: this namespace may not be deleted",
		    c->name);
		return KC_EFORBIDDEN;
	}
	if (kc_json_get(old, "metadata", "deletionTimestamp") != NULL) {
		*ret = json_object_get((struct json_object *)(uintptr_t)old);
		return 0;
	}
	if ((next = kc_json_copy(old)) == NULL)
		goto oom;
	now_stamp(stamp, c->now);
	meta = kc_json_obj_of(next, "metadata");
	status = kc_json_ensure_obj(next, "status");
	if (meta == NULL || status == NULL ||
	    kc_json_set_str(meta, "deletionTimestamp", stamp) < 0 ||
	    kc_json_set_str(status, "phase", "Terminating") < 0) {
		json_object_put(next);
		goto oom;
	}
	if (c->dry_run) {
		*ret = next;
		return 0;
	}
	if ((r = storage_update(c->dc->store, c->rt->coll, next, 0, ret)) < 0) {
		errors_internal(c->resp, r);
		return r;
	}
	timer_arm(&c->dc->api->ns_timer, 0);
	return 0;
oom:
	errors_internal(c->resp, -ENOMEM);
	return -ENOMEM;
}

static int
delete_one(struct rctx *c, const struct json_object *old, int64_t grace_req,
    const char *policy, const struct json_object *pre, struct json_object **ret,
    bool *ret_deleted)
{
	struct dc_write_ctx wc = write_ctx(c, DC_OP_DELETE, old);
	struct json_object *next = NULL, *meta, *fins;
	const char *uid = kc_json_str(old, "metadata", "uid");
	const char *rv = kc_json_str(old, "metadata", "resourceVersion");
	const char *pu = kc_json_str(pre, "uid"), *prv = kc_json_str(pre, "resourceVersion");
	const char *add = NULL;
	char stamp[KC_TIME_MAX], name[DC_SEGMENT_MAX];
	bool deleting = kc_json_get(old, "metadata", "deletionTimestamp") != NULL;
	int64_t grace = 0, cur_grace;
	size_t nfin;
	int r;

	*ret_deleted = false;
	(void)kc_strlcpy(name, kc_json_str(old, "metadata", "name"), sizeof(name));
	if (pu != NULL && pu[0] != '\0' && (uid == NULL || strcmp(pu, uid) != 0)) {
		errors_obj(c->resp, KC_ECONFLICT, c->rt, name, "Precondition failed: UID in "
		    "precondition: %s, UID in object meta: %s", pu, uid != NULL ? uid : "");
		return KC_ECONFLICT;
	}
	if (prv != NULL && prv[0] != '\0' && (rv == NULL || strcmp(prv, rv) != 0)) {
		errors_obj(c->resp, KC_ECONFLICT, c->rt, name, "Precondition failed: "
		    "ResourceVersion in precondition: %s, ResourceVersion in object meta: %s",
		    prv, rv != NULL ? rv : "");
		return KC_ECONFLICT;
	}
	if ((r = run_delete_hooks(c, old, grace_req, policy)) < 0)
		return r;
	if (c->rt->group[0] == '\0' && strcmp(c->rt->plural, "namespaces") == 0)
		return delete_namespace(c, old, ret, ret_deleted);
	if (c->rt->ops->delete_grace != NULL)
		grace = c->rt->ops->delete_grace(&wc, old, grace_req);
	if (grace < 0)
		grace = 0;
	if (c->dc->hooks.finalizer_added != NULL && policy != NULL) {
		if (strcmp(policy, "Foreground") == 0)
			add = "foregroundDeletion";
		else if (strcmp(policy, "Orphan") == 0)
			add = "orphan";
	}
	if (!deleting && c->rt->ops->prepare_delete != NULL) {
		if ((next = kc_json_copy(old)) == NULL)
			goto oom;
		if ((r = c->rt->ops->prepare_delete(&wc, next)) < 0) {
			json_object_put(next);
			errors_internal(c->resp, r);
			return r;
		}
	}
	fins = kc_json_get(next != NULL ? next : old, "metadata", "finalizers");
	if (add != NULL && strv_has(fins, add))
		add = NULL;
	nfin = arr_len(fins);
	if (deleting) {
		cur_grace = kc_json_int(old, 0, "metadata", "deletionGracePeriodSeconds");
		if (!(nfin == 0 && add == NULL && cur_grace > 0 && grace < cur_grace)) {
			*ret = json_object_get((struct json_object *)(uintptr_t)old);
			return 0;
		}
	}
	if (nfin > 0 || add != NULL || grace > 0) {
		time_t at = c->now + (time_t)grace;

		/* Only metadata changes: the rest is shared (obj_cow()). */
		if (next == NULL && (next = obj_cow(old)) == NULL)
			goto oom;
		meta = kc_json_obj_of(next, "metadata");
		now_stamp(stamp, at);
		if (kc_json_set_str(meta, "deletionTimestamp", stamp) < 0 ||
		    kc_json_set_int(meta, "deletionGracePeriodSeconds", grace) < 0)
			goto oom;
		if (add != NULL) {
			struct json_object *nf = kc_json_arr_of(meta, "finalizers");

			/* The list may be the stored one's: a private copy. */
			if (nf != NULL && ((nf = kc_json_copy(nf)) == NULL ||
			    kc_json_put(meta, "finalizers", nf) < 0))
				goto oom;
			if (nf == NULL && ((nf = json_object_new_array()) == NULL ||
			    kc_json_put(meta, "finalizers", nf) < 0))
				goto oom;
			if (kc_json_append(nf, json_object_new_string(add)) < 0)
				goto oom;
		}
		if ((c->rt->flags & DC_RT_GENERATION) && !deleting &&
		    kc_json_set_int(meta, "generation",
		    kc_json_int(old, 1, "metadata", "generation") + 1) < 0)
			goto oom;
		if (c->dry_run) {
			*ret = next;
			return 0;
		}
		if ((r = storage_update(c->dc->store, c->rt->coll, next, 0, ret)) < 0) {
			errors_internal(c->resp, r);
			return r;
		}
		if (add != NULL && (r = c->dc->hooks.finalizer_added(c->dc, c->rt, *ret)) < 0)
			kc_log_warn(NULL, "garbage collection hook: %s", kc_strerror(r));
		if (grace > 0 && nfin == 0) {
			r = c->dc->hooks.graceful_delete != NULL ?
			    c->dc->hooks.graceful_delete(c->dc, c->rt, *ret) : DC_DECLINED;
			if (r == DC_DECLINED)
				r = pending_add(c->dc, c->rt, *ret);
			if (r < 0)
				kc_log_warn(NULL, "graceful deletion: %s", kc_strerror(r));
		}
		return 0;
	}
	kc_json_putp(&next);
	*ret_deleted = true;
	if (c->dry_run) {
		*ret = json_object_get((struct json_object *)(uintptr_t)old);
		return 0;
	}
	r = storage_delete(c->dc->store, c->rt->coll,
	    json_object_get((struct json_object *)(uintptr_t)old), 0, ret);
	if (r < 0) {
		*ret_deleted = false;
		errors_internal(c->resp, r);
	}
	return r;
oom:
	if (next != NULL)
		json_object_put(next);
	errors_internal(c->resp, -ENOMEM);
	return -ENOMEM;
}

static void
reply_deleted(struct rctx *c, const struct json_object *obj, bool deleted)
{
	struct json_object *o, *d;
	const char *uid = kc_json_str(obj, "metadata", "uid");

	if (!deleted || (c->rt->flags & DC_RT_RETURN_DELETED)) {
		reply_object(c, 200, obj);
		return;
	}
	o = json_object_new_object();
	d = json_object_new_object();
	if (o == NULL || d == NULL || kc_json_set_str(o, "kind", "Status") < 0 ||
	    kc_json_set_str(o, "apiVersion", "v1") < 0 ||
	    kc_json_put(o, "metadata", json_object_new_object()) < 0 ||
	    kc_json_set_str(o, "status", "Success") < 0 ||
	    kc_json_put(o, "details", json_object_get(d)) < 0 ||
	    kc_json_set_str(d, "name", kc_json_str(obj, "metadata", "name")) < 0 ||
	    (c->rt->group[0] != '\0' && kc_json_set_str(d, "group", c->rt->group) < 0) ||
	    kc_json_set_str(d, "kind", c->rt->plural) < 0 ||
	    (uid != NULL && kc_json_set_str(d, "uid", uid) < 0)) {
		if (o != NULL)
			json_object_put(o);
		if (d != NULL)
			json_object_put(d);
		errors_internal(c->resp, -ENOMEM);
		return;
	}
	json_object_put(d);
	reply_json(c->resp, 200, o);
}

static struct json_object *
preconditions(const struct delopts *o)
{
	struct json_object *p = json_object_new_object();

	if (p == NULL)
		return NULL;
	if ((o->pre_uid[0] != '\0' && kc_json_set_str(p, "uid", o->pre_uid) < 0) ||
	    (o->pre_rv[0] != '\0' && kc_json_set_str(p, "resourceVersion", o->pre_rv) < 0)) {
		json_object_put(p);
		return NULL;
	}
	return p;
}

static const char *
policy_of(const struct delopts *o)
{
	if (o->policy[0] != '\0')
		return o->policy;
	return o->orphan ? "Orphan" : NULL;
}

void
write_verb_delete(struct rctx *c)
{
	const struct json_object *old = coll_get(c->rt->coll, c->ns, c->name);
	struct json_object *hold, *out = NULL, *pre;
	struct delopts o;
	bool deleted;
	int r;

	if (c->sub[0] != '\0') {
		reply_method_not_allowed(c->resp);
		return;
	}
	if (parse_delete_opts(c, &o) < 0)
		return;
	if (old == NULL) {
		errors_notfound(c->resp, c->rt, c->name);
		return;
	}
	if ((pre = preconditions(&o)) == NULL) {
		errors_internal(c->resp, -ENOMEM);
		return;
	}
	hold = json_object_get((struct json_object *)(uintptr_t)old);
	r = delete_one(c, hold, o.grace, policy_of(&o), pre, &out, &deleted);
	json_object_put(pre);
	if (r == 0)
		reply_deleted(c, out, deleted);
	if (out != NULL)
		json_object_put(out);
	json_object_put(hold);
}

void
write_verb_deletecollection(struct rctx *c)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *ls = NULL;
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *fs = NULL;
	struct kc_status st = { 0 };
	struct json_object **objs = NULL, *list = NULL, *items, *pre = NULL;
	struct delopts o;
	int64_t timeout = 0, limit = 0;
	size_t n = 0;
	char rv[24];
	int r;

	/* ListOptions first, then DeleteOptions, as upstream's handler. */
	if (dispatch_list_ints(c->req, &timeout, &limit, c->resp) < 0)
		return;
	if ((r = api_selectors(c->rt, req_param(c->req, "labelSelector"),
	    req_param(c->req, "fieldSelector"), &ls, &fs, &st)) < 0) {
		errors_kc(c->resp, r, &st);
		return;
	}
	if (parse_delete_opts(c, &o) < 0)
		return;
	if ((r = coll_list(c->rt->coll, c->rt->namespaced && c->ns[0] != '\0' ? c->ns : NULL,
	    NULL, &objs, &n)) < 0) {
		errors_internal(c->resp, r);
		return;
	}
	r = -ENOMEM;
	if ((pre = preconditions(&o)) == NULL || (list = json_object_new_object()) == NULL ||
	    kc_json_set_str(list, "kind", c->rt->list_kind) < 0 ||
	    kc_json_set_str(list, "apiVersion", c->rt->api_version) < 0 ||
	    kc_json_put(list, "metadata", json_object_new_object()) < 0 ||
	    kc_json_put(list, "items", json_object_new_array()) < 0)
		goto fail;
	items = kc_json_arr_of(list, "items");
	for (size_t i = 0; i < n; i++) {
		struct json_object *out = NULL, *view = NULL;
		bool deleted;

		if (!api_matches(c->rt, ls, fs, objs[i]))
			continue;
		c->name = kc_json_str(objs[i], "metadata", "name");
		if ((r = delete_one(c, objs[i], o.grace, policy_of(&o), pre, &out,
		    &deleted)) < 0) {
			if (out != NULL)
				json_object_put(out);
			objs_free(objs, n);
			json_object_put(list);
			json_object_put(pre);
			return;
		}
		r = api_view(c->rt, out, &view);
		json_object_put(out);
		if (r < 0 || (r = kc_json_append(items, reply_list_item(c->rt, view))) < 0) {
			if (view != NULL)
				json_object_put(view);
			goto fail;
		}
		json_object_put(view);
	}
	(void)snprintf(rv, sizeof(rv), "%" PRIu64, storage_rv(c->dc->store));
	if (kc_json_set_str(kc_json_obj_of(list, "metadata"), "resourceVersion", rv) < 0)
		goto fail;
	objs_free(objs, n);
	json_object_put(pre);
	reply_json(c->resp, 200, list);
	return;
fail:
	objs_free(objs, n);
	if (list != NULL)
		json_object_put(list);
	if (pre != NULL)
		json_object_put(pre);
	errors_internal(c->resp, r);
}

/*
 * Internal writes and namespace termination
 */

static void
internal_ctx(struct rctx *c, struct dc *dc, const struct dc_rtype *rt, const char *ns,
    const char *name, struct dc_resp *resp)
{
	memset(c, 0, sizeof(*c));
	c->dc = dc;
	c->rt = rt;
	c->ns = rt->namespaced && ns != NULL ? ns : "";
	c->name = name != NULL ? name : "";
	c->sub = "";
	c->resp = resp;
	c->manager = "devcluster";
	c->now = kc_clock_wall();
	resp_init(resp);
}

/* The code of an internal write that failed with a Status reply. */
static int
internal_code(const struct dc_resp *resp, int r)
{
	if (r >= 0 || r == -ENOMEM)
		return r;
	switch (resp->status) {
	case 404: return KC_ENOTFOUND;
	case 409: return strstr(kc_buf_str(&resp->body), "AlreadyExists") != NULL ?
	    KC_EEXISTS : KC_ECONFLICT;
	case 422: return KC_EINVALID;
	case 403: return KC_EFORBIDDEN;
	default: return r;
	}
}

/* The message of a Status reply into msg[0..size), "" without one. */
static void
resp_message(const struct dc_resp *resp, char *msg, size_t size)
{
	struct json_object *st = NULL;
	const struct kc_buf *body = &resp->body;

	if (msg == NULL || size == 0)
		return;
	msg[0] = '\0';
	if (kc_json_parse(kc_buf_str(body), body->len, &st, NULL) < 0)
		return;
	(void)kc_strlcpy(msg, or_empty(kc_json_str(st, "message")), size);
	json_object_put(st);
}

int
api_create_object(struct dc *dc, const struct dc_rtype *rt, struct json_object *obj,
    struct json_object **ret)
{
	return api_create_object_msg(dc, rt, obj, ret, NULL, 0);
}

int
api_create_object_msg(struct dc *dc, const struct dc_rtype *rt, struct json_object *obj,
    struct json_object **ret, char *msg, size_t size)
{
	struct dc_resp resp;
	struct json_object *stored = NULL;
	const char *ons = kc_json_str(obj, "metadata", "namespace");
	char ns[DC_SEGMENT_MAX];
	struct rctx c;
	int r;

	(void)kc_strlcpy(ns, ons != NULL ? ons : "", sizeof(ns));
	internal_ctx(&c, dc, rt, ns, NULL, &resp);
	if (msg != NULL && size > 0)
		msg[0] = '\0';
	if (check_typemeta(&c, obj) < 0 || check_namespace(&c, obj) < 0) {
		json_object_put(obj);
		r = internal_code(&resp, KC_EBADREQUEST);
		resp_message(&resp, msg, size);
		resp_clear(&resp);
		return r;
	}
	r = write_create(&c, obj, &stored);
	if (r < 0) {
		kc_log_debug(NULL, "internal create of %s failed: %s", rt->kind,
		    kc_buf_str(&resp.body));
		r = internal_code(&resp, r);
		resp_message(&resp, msg, size);
	} else if (ret != NULL)
		*ret = stored;
	else
		json_object_put(stored);
	resp_clear(&resp);
	return r;
}

int
api_delete_object(struct dc *dc, const struct dc_rtype *rt, const char *ns,
    const char *name, int64_t grace)
{
	return api_delete_object_opts(dc, rt, ns, name, grace, "Background", NULL);
}

int
api_delete_object_opts(struct dc *dc, const struct dc_rtype *rt, const char *ns,
    const char *name, int64_t grace, const char *policy, const char *uid)
{
	const struct json_object *old;
	struct json_object *out = NULL, *hold, *pre = NULL;
	struct dc_resp resp;
	struct rctx c;
	bool deleted;
	int r;

	if ((old = coll_get(rt->coll, rt->namespaced ? ns : "", name)) == NULL)
		return KC_ENOTFOUND;
	if (uid != NULL && ((pre = json_object_new_object()) == NULL ||
	    kc_json_set_str(pre, "uid", uid) < 0)) {
		if (pre != NULL)
			json_object_put(pre);
		return -ENOMEM;
	}
	internal_ctx(&c, dc, rt, ns, name, &resp);
	hold = json_object_get((struct json_object *)(uintptr_t)old);
	r = delete_one(&c, hold, grace, policy, pre, &out, &deleted);
	json_object_put(hold);
	if (pre != NULL)
		json_object_put(pre);
	if (out != NULL)
		json_object_put(out);
	r = internal_code(&resp, r);
	resp_clear(&resp);
	return r;
}

/* The resource type serving a collection (its preferred version). */
static const struct dc_rtype *
coll_rtype(const struct dc *dc, const struct dc_coll *coll)
{
	const struct dc_rtype *t;

	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link))
		if (t->coll == coll && (t->flags & DC_RT_STORAGE || t->ops->convert_in == NULL))
			return t;
	for (t = TAILQ_FIRST(&dc->reg.types); t != NULL; t = TAILQ_NEXT(t, link))
		if (t->coll == coll)
			return t;
	return NULL;
}

struct nsterm {
	struct dc	*dc;
	const char	*ns;
	size_t		 remaining;
	int		 err;
};

static int
nsterm_coll(void *arg, struct dc_coll *coll)
{
	struct nsterm *t = arg;
	const struct dc_rtype *rt;
	struct json_object **objs = NULL;
	size_t n = 0;
	int r;

	if (!coll_namespaced(coll) || coll_count(coll, t->ns) == 0)
		return 0;
	if ((rt = coll_rtype(t->dc, coll)) == NULL)
		return 0;
	if ((r = coll_list(coll, t->ns, NULL, &objs, &n)) < 0) {
		t->err = r;
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (kc_json_get(objs[i], "metadata", "deletionTimestamp") != NULL)
			continue;
		r = api_delete_object(t->dc, rt, t->ns, kc_json_str(objs[i], "metadata", "name"),
		    -1);
		if (r < 0 && r != KC_ENOTFOUND)
			t->err = r;
	}
	objs_free(objs, n);
	t->remaining += coll_count(coll, t->ns);
	return 0;
}

int
api_namespace_terminate(struct dc *dc, const char *ns)
{
	struct nsterm t = { .dc = dc, .ns = ns };
	struct dc_rtype *nst = registry_find(dc, "", "v1", "namespaces");
	const struct json_object *obj;
	struct json_object *next, *fins, *keep;
	int r;

	if (nst == NULL || (obj = coll_get(nst->coll, "", ns)) == NULL)
		return 0;
	(void)storage_foreach_coll(dc->store, nsterm_coll, &t);
	if (t.err < 0) {
		struct kc_log_ctx lc = { .action = "namespace", .name = ns };

		kc_log_warn(&lc, "emptying the namespace: %s", kc_strerror(t.err));
	}
	if (t.remaining > 0)
		return 1;
	/* Empty: the namespace controller's finalize, then removal. */
	if ((next = kc_json_copy(obj)) == NULL)
		return -ENOMEM;
	fins = kc_json_get(next, "spec", "finalizers");
	if ((keep = json_object_new_array()) == NULL) {
		json_object_put(next);
		return -ENOMEM;
	}
	for (size_t i = 0; i < arr_len(fins); i++) {
		struct json_object *f = json_object_array_get_idx(fins, i);
		const char *s = json_object_get_string(f);

		if (s != NULL && strcmp(s, "kubernetes") == 0)
			continue;
		if (kc_json_append(keep, json_object_get(f)) < 0) {
			json_object_put(keep);
			json_object_put(next);
			return -ENOMEM;
		}
	}
	if (json_object_array_length(keep) > 0) {
		if ((r = kc_json_put(kc_json_ensure_obj(next, "spec"), "finalizers", keep)) < 0) {
			json_object_put(next);
			return r;
		}
	} else {
		json_object_put(keep);
		json_object_object_del(kc_json_obj_of(next, "spec"), "finalizers");
	}
	if (finalized(nst, next))
		r = storage_delete(dc->store, nst->coll, next, 0, NULL);
	else
		r = storage_update(dc->store, nst->coll, next, 0, NULL);
	return r < 0 ? r : 0;
}

static int64_t
ns_tick(void *arg)
{
	struct dc *dc = arg;
	struct dc_rtype *nst = registry_find(dc, "", "v1", "namespaces");
	struct json_object **objs = NULL;
	size_t n = 0;
	bool again = false;

	if (nst == NULL || coll_list(nst->coll, NULL, NULL, &objs, &n) < 0)
		return 100;
	for (size_t i = 0; i < n; i++) {
		const char *name = kc_json_str(objs[i], "metadata", "name");
		int r;

		if (kc_json_get(objs[i], "metadata", "deletionTimestamp") == NULL)
			continue;
		r = dc->hooks.ns_terminate != NULL ?
		    dc->hooks.ns_terminate(dc, name) : api_namespace_terminate(dc, name);
		if (r != 0)
			again = true;
	}
	objs_free(objs, n);
	return again ? 100 : DC_TIMER_STOP;
}

/*
 * The pipeline's own state
 */

int
write_init(struct dc *dc)
{
	if ((dc->api = kc_calloc(1, sizeof(*dc->api))) == NULL)
		return -ENOMEM;
	timer_init(&dc->api->grace_timer, dc, grace_tick, dc);
	timer_init(&dc->api->ns_timer, dc, ns_tick, dc);
	return 0;
}

void
write_fini(struct dc *dc)
{
	if (dc->api == NULL)
		return;
	timer_cancel(&dc->api->grace_timer);
	timer_cancel(&dc->api->ns_timer);
	for (size_t i = 0; i < dc->api->npending; i++)
		pending_free(&dc->api->pending[i]);
	kc_free(dc->api->pending);
	kc_free(dc->api);
	dc->api = NULL;
}

int
api_update_object(struct dc *dc, const struct dc_rtype *rt, const struct json_object *old,
    struct json_object *next, const char *sub, const char *manager)
{
	int r;

	if (json_object_equal(next, (struct json_object *)(uintptr_t)old)) {
		json_object_put(next);
		return 0;
	}
	if (dc->hooks.managed_fields != NULL) {
		struct dc_write_ctx wc = { .dc = dc, .rt = rt, .op = DC_OP_UPDATE,
		    .subresource = sub, .field_manager = manager, .old = old };

		if ((r = dc->hooks.managed_fields(&wc, next)) < 0) {
			json_object_put(next);
			return r;
		}
	}
	r = storage_update(dc->store, rt->coll, next, obj_rv(old), NULL);
	return r == DC_UNCHANGED ? 0 : r;
}

void
api_now(char buf[KC_TIME_MAX])
{
	if (kc_time_format(kc_clock_wall(), buf, KC_TIME_MAX) < 0)
		(void)kc_strlcpy(buf, "1970-01-01T00:00:00Z", KC_TIME_MAX);
}

int
api_record_event(struct dc *dc, const struct api_event *e)
{
	const struct dc_rtype *et = registry_find(dc, "", "v1", "events");
	const char *ons = kc_json_str(e->about, "metadata", "namespace");
	const char *name = kc_json_str(e->about, "metadata", "name");
	const char *uid = kc_json_str(e->about, "metadata", "uid");
	const char *rv = kc_json_str(e->about, "metadata", "resourceVersion");
	const char *instance = e->host != NULL ? e->host : e->component;
	struct json_object *ev, *meta, *inv, *src;
	char ename[300], nowbuf[KC_TIME_MAX];
	const char *now = e->now;
	int r;

	if (et == NULL || name == NULL)
		return 0;
	if (now == NULL) {
		api_now(nowbuf);
		now = nowbuf;
	}
	(void)snprintf(ename, sizeof(ename), "%.200s.%016" PRIx64, name, e->stamp);
	if ((ev = json_object_new_object()) == NULL)
		return -ENOMEM;
	if (kc_json_set_str(ev, "apiVersion", "v1") < 0 ||
	    kc_json_set_str(ev, "kind", "Event") < 0 ||
	    (meta = kc_json_ensure_obj(ev, "metadata")) == NULL ||
	    kc_json_set_str(meta, "name", ename) < 0 ||
	    kc_json_set_str(meta, "namespace", ons != NULL ? ons : "default") < 0 ||
	    (inv = kc_json_ensure_obj(ev, "involvedObject")) == NULL ||
	    kc_json_set_str(inv, "apiVersion", "v1") < 0 ||
	    kc_json_set_str(inv, "kind", e->kind) < 0 ||
	    (ons != NULL && kc_json_set_str(inv, "namespace", ons) < 0) ||
	    kc_json_set_str(inv, "name", name) < 0 ||
	    kc_json_set_str(inv, "uid", uid) < 0 ||
	    (e->with_rv && kc_json_set_str(inv, "resourceVersion", rv) < 0) ||
	    (e->field_path != NULL && kc_json_set_str(inv, "fieldPath", e->field_path) < 0) ||
	    kc_json_set_str(ev, "reason", e->reason) < 0 ||
	    kc_json_set_str(ev, "message", e->message) < 0 ||
	    kc_json_set_str(ev, "type", e->type) < 0 ||
	    (src = kc_json_ensure_obj(ev, "source")) == NULL ||
	    kc_json_set_str(src, "component", e->component) < 0 ||
	    (e->host != NULL && kc_json_set_str(src, "host", e->host) < 0) ||
	    kc_json_set_str(ev, "reportingComponent", e->component) < 0 ||
	    kc_json_set_str(ev, "reportingInstance", instance) < 0 ||
	    kc_json_set_str(ev, "firstTimestamp", now) < 0 ||
	    kc_json_set_str(ev, "lastTimestamp", now) < 0 ||
	    kc_json_set_int(ev, "count", 1) < 0) {
		json_object_put(ev);
		return -ENOMEM;
	}
	r = api_create_object(dc, et, ev, NULL);
	return r == KC_EEXISTS || r == KC_ENOTFOUND || r == KC_EFORBIDDEN ? 0 : r;
}

/* The Scale a scale PUT or PATCH asks for (a new tree), or a reply in 'resp'. */
static int
scale_body(const struct dc_req *req, const char *verb, const struct json_object *current,
    struct json_object **ret, struct dc_resp *resp)
{
	struct kc_status st = { 0 };
	struct json_object *body = NULL;
	const char *ct = req->content_type != NULL ? req->content_type : "";
	const char *text = req->body != NULL ? req->body : "";
	int r;

	if (strcmp(verb, "update") == 0) {
		if (strncmp(ct, "application/yaml", 16) == 0)
			r = kc_yaml_parse_one(text, req->body_len, NULL, &body, &st);
		else
			r = kc_json_parse(text, req->body_len, &body, &st);
		if (r < 0 || !json_object_is_type(body, json_type_object)) {
			if (body != NULL)
				json_object_put(body);
			errors_reply(resp, KC_EBADREQUEST, "couldn't get version/kind; json parse "
			    "error: %s", st.message[0] != '\0' ? st.message : "not an object");
			return KC_EBADREQUEST;
		}
		*ret = body;
		return 0;
	}
	if (strncmp(ct, "application/json-patch+json", 27) != 0 &&
	    strncmp(ct, "application/merge-patch+json", 28) != 0 &&
	    strncmp(ct, "application/strategic-merge-patch+json", 38) != 0) {
		errors_reply(resp, KC_EMEDIATYPE, "the body of the request was in an unknown "
		    "format - accepted media types include: application/json-patch+json, "
		    "application/merge-patch+json, application/strategic-merge-patch+json");
		return KC_EMEDIATYPE;
	}
	if ((r = kc_patch_parse(text, req->body_len, &body, &st)) < 0) {
		errors_kc(resp, r, &st);
		return r;
	}
	if (strncmp(ct, "application/json-patch+json", 27) == 0)
		r = kc_json_patch_apply(current, body, ret, &st);
	else
		r = kc_merge_patch_apply(current, body, ret, &st);
	if (body != NULL)
		json_object_put(body);
	if (r < 0)
		errors_kc(resp, r, &st);
	return r;
}

int
api_scale_request(const struct dc_req *req, const struct dc_rtype *rt, const char *verb,
    const char *name, const struct json_object *current, const char *stored_rv,
    int64_t *ret_replicas, struct dc_resp *resp)
{
	struct json_object *scale = NULL;
	struct dc_errs errs = { 0 };
	const char *brv;
	int64_t replicas;
	char val[32];
	int r;

	if ((r = scale_body(req, verb, current, &scale, resp)) < 0)
		return r;
	brv = kc_json_str(scale, "metadata", "resourceVersion");
	replicas = kc_json_int(scale, 0, "spec", "replicas");
	if (brv != NULL && brv[0] != '\0' && (stored_rv == NULL || strcmp(brv, stored_rv) != 0)) {
		errors_obj(resp, KC_ECONFLICT, rt, name, "Operation cannot be fulfilled "
		    "on %s \"%s\": the object has been modified; please apply your changes to "
		    "the latest version and try again", rt->qualified, name);
		r = KC_ECONFLICT;
	} else if (replicas < 0 || replicas > INT32_MAX) {
		(void)snprintf(val, sizeof(val), "%" PRId64, replicas);
		errs_invalid(&errs, "spec.replicas", val, replicas < 0 ?
		    "must be greater than or equal to 0" : "must be less than 2147483648");
		errors_invalid(resp, "Scale.autoscaling", "autoscaling", name, &errs);
		r = KC_EINVALID;
	} else
		*ret_replicas = replicas;
	json_object_put(scale);
	return r;
}

/*
 * ssa.c: server-side apply and metadata.managedFields, the glue between
 * the core's write pipeline and fieldmanager.c.
 *
 * Two hooks:
 *
 *	hooks.apply		an application/apply-patch+yaml PATCH:
 *				fieldmanager_apply() merges the applied
 *				configuration into the live object, removes
 *				what the manager no longer applies, reports
 *				ownership conflicts (409, unless force=true)
 *				and records the manager's Apply entry; the
 *				result then takes the ordinary create or update
 *				path (defaults, validation, storage)
 *	hooks.managed_fields	every other write (create, update, patch, the
 *				status and finalize subresources, internal
 *				writes): fieldmanager_update() moves the fields
 *				the write changed to the writer's Update entry;
 *				entries of custom resources recorded at another
 *				version are compared there (through the
 *				conversion webhook, inside a request), and a
 *				failure leaves the object without managedFields,
 *				as kube-apiserver's UpdateNoErrors does
 *
 * What the field manager needs beyond the objects, per type:
 *
 *	manager		fieldManager, else the User-Agent's product
 *			("kubectl-create", "kubectl"); internal writes use the
 *			core's "devcluster"
 *	schema		the shapes of lists and maps: built-ins from their
 *			strategic merge schema (merge keys), custom resources
 *			from crd_fm_schema(), their version's openAPIV3Schema
 *			(x-kubernetes-list-type, -list-map-keys, -map-type)
 *	reset fields	with a status subresource, status on the main
 *			resource and spec on /status, as the registry
 *			strategies declare
 *	empty object	what the kind decodes to from "{}": built-ins with
 *			struct-typed spec and status start with both, so a
 *			create does not record them as added
 *
 * The apply hook's writes are left alone by the managed_fields hook: the
 * Apply entry fieldmanager_apply() made is the record of that write, as
 * kube-apiserver's apply path does not also record an Update.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/str.h>

#include "devcluster.h"
#include "ssa.h"
#include "crd.h"
#include "fieldmanager.h"

/*
 * Built-in kinds whose Go types hold spec and status as structs (not
 * pointers), so "{}" decodes with both present.
 */
static const struct {
	const char	*group;
	const char	*kind;
	bool		 spec;
	bool		 status;
} empty_shapes[] = {
	{ "", "Namespace", true, true },
	{ "", "Node", true, true },
	{ "", "PersistentVolumeClaim", true, true },
	{ "", "Pod", true, true },
	{ "", "ResourceQuota", true, true },
	{ "", "Service", true, true },
	{ "", "LimitRange", true, false },
	{ "apiextensions.k8s.io", "CustomResourceDefinition", true, true },
	{ "coordination.k8s.io", "Lease", true, false },
	{ "networking.k8s.io", "NetworkPolicy", true, false },
};

/* The object a create starts from; NULL on -ENOMEM. */
static struct json_object *
empty_object(const struct dc_rtype *rt)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL || (rt->flags & DC_RT_CUSTOM))
		return o;
	for (size_t i = 0; i < KC_ARRAY_SIZE(empty_shapes); i++) {
		if (strcmp(empty_shapes[i].group, rt->group) != 0 ||
		    strcmp(empty_shapes[i].kind, rt->kind) != 0)
			continue;
		if ((empty_shapes[i].spec &&
		    kc_json_put(o, "spec", json_object_new_object()) < 0) ||
		    (empty_shapes[i].status &&
		    kc_json_put(o, "status", json_object_new_object()) < 0)) {
			json_object_put(o);
			return NULL;
		}
		break;
	}
	return o;
}

/* The paths a write of 'rt' (to 'sub', or the main resource) ignores. */
static const char *const *
reset_for(const struct dc_rtype *rt, const char *sub)
{
	if (!(rt->flags & DC_RT_STATUS))
		return NULL;
	if (sub == NULL || sub[0] == '\0')
		return fieldmanager_reset_status;
	if (strcmp(sub, "status") == 0)
		return fieldmanager_reset_spec;
	return NULL;
}

/* The field manager's schema for 'rt', in '*buf'; NULL when there is none. */
static const struct fm_schema *
type_schema(const struct dc_rtype *rt, struct fm_schema *buf)
{
	if (rt->smp != NULL) {
		*buf = (struct fm_schema){ .lookup = fieldmanager_smp_lookup, .arg = rt->smp };
		return buf;
	}
	if ((rt->flags & DC_RT_CUSTOM) && crd_owns(rt) && crd_fm_schema(rt, buf) == 0)
		return buf;
	return NULL;
}

/*
 * Hooks
 */

/* An application/apply-patch+yaml PATCH. */
static bool
is_apply(const struct dc_req *req)
{
	const char *ct = req != NULL ? req->content_type : NULL;
	static const char apply_ct[] = "application/apply-patch+yaml";

	if (req == NULL || req->method != DC_PATCH || ct == NULL)
		return false;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return strncasecmp(ct, apply_ct, sizeof(apply_ct) - 1) == 0 &&
	    (ct[sizeof(apply_ct) - 1] == '\0' || ct[sizeof(apply_ct) - 1] == ';' ||
	    ct[sizeof(apply_ct) - 1] == ' ');
}

/* fm_apply.convert: through the custom resource's CRD ('arg' the type). */
static int
ssa_convert(void *arg, const struct json_object *obj, const char *to, struct json_object **ret,
    struct fm_schema *ret_schema, struct kc_status *st)
{
	return crd_convert_to(arg, obj, to, ret, ret_schema, st);
}

/* hooks.apply */
static int
ssa_apply(struct dc *dc, const struct dc_rtype *rt, const struct dc_req *req,
    const struct json_object *cur, const struct json_object *applied,
    struct json_object **ret, struct dc_errs *errs, struct kc_status *st,
    struct json_object **ret_details)
{
	struct dc_route route;
	struct fm_schema sbuf;
	struct json_object *empty;
	const char *sub;
	int r;

	(void)errs;
	(void)router_parse(req->method, req->path, false, &route);
	sub = route.subresource[0] != '\0' ? route.subresource : NULL;
	if ((empty = empty_object(rt)) == NULL)
		return -ENOMEM;
	r = fieldmanager_apply(&(struct fm_apply){
		.live = cur,
		.config = applied,
		.manager = req_param(req, "fieldManager"),
		.force = req_param_bool(req, "force"),
		.api_version = rt->api_version,
		.kind = rt->kind,
		.subresource = sub,
		.schema = type_schema(rt, &sbuf),
		.reset = reset_for(rt, sub),
		.empty = empty,
		.now = kc_clock_wall(),
		.cache = plugin_state(dc, &ssa_plugin),
		.convert = (rt->flags & DC_RT_CUSTOM) && crd_owns(rt) ? ssa_convert : NULL,
		.convert_arg = (void *)(uintptr_t)rt,
	}, ret, ret_details, st);
	json_object_put(empty);
	return r;
}

/*
 * 'obj' without the metadata a write makes anew on each pass of a
 * request that waits for a conversion (uid, creationTimestamp, a
 * generated name...), none of which any entry holds, so that its
 * conversion is the same on every pass: a new tree, or NULL.
 */
static struct json_object *
without_volatile_meta(const struct json_object *obj)
{
	static const char *const volatile_keys[] = {
		"uid", "creationTimestamp", "resourceVersion", "generation", "selfLink",
	};
	struct json_object *o = json_object_new_object(), *meta;

	if (o == NULL)
		return NULL;
	json_object_object_foreach((struct json_object *)(uintptr_t)obj, k, v)
		if (strcmp(k, "metadata") != 0 &&
		    json_object_object_add(o, k, json_object_get(v)) < 0)
			goto fail;
	if ((meta = kc_json_obj_of(obj, "metadata")) == NULL)
		return o;
	if ((meta = kc_json_copy(meta)) == NULL || kc_json_put(o, "metadata", meta) < 0)
		goto fail;
	for (size_t i = 0; i < KC_ARRAY_SIZE(volatile_keys); i++)
		json_object_object_del(meta, volatile_keys[i]);
	if (kc_json_get(meta, "generateName") != NULL)
		json_object_object_del(meta, "name");
	return o;
fail:
	json_object_put(o);
	return NULL;
}

/*
 * The write's objects come in the storage version; kube-apiserver's
 * field manager sees them at the request's: 'obj' (and 'old') at
 * rt->api_version, through the CRD's conversion, in '*ret_obj' (and
 * '*ret_old', NULL for NULL). 0, -EINPROGRESS, the conversion's failure,
 * -ENOMEM.
 */
static int
at_request_version(const struct dc_write_ctx *wc, struct json_object *obj,
    struct json_object **ret_obj, struct json_object **ret_old)
{
	struct kc_status st = { 0 };
	struct fm_schema unused;
	struct json_object *o = NULL, *old = NULL, *stable;
	int r, r2 = 0;

	if ((stable = without_volatile_meta(obj)) == NULL)
		return -ENOMEM;
	r = crd_convert_to(wc->rt, stable, wc->rt->api_version, &o, &unused, &st);
	json_object_put(stable);
	if (wc->old != NULL && r != -ENOMEM)
		r2 = crd_convert_to(wc->rt, wc->old, wc->rt->api_version, &old, &unused, &st);
	if (r == 0 && r2 == 0) {
		*ret_obj = o;
		*ret_old = old;
		return 0;
	}
	if (o != NULL)
		json_object_put(o);
	if (old != NULL)
		json_object_put(old);
	return r < 0 ? r : r2;
}

/* hooks.managed_fields */
static int
ssa_managed_fields(struct dc_write_ctx *wc, struct json_object *obj)
{
	struct kc_status st = { 0 };
	struct fm_schema sbuf;
	struct json_object *empty, *out = NULL, *mf, *meta, *vobj = NULL, *vold = NULL;
	char manager[FM_MANAGER_MAX + 1];
	const char *av = kc_json_str(obj, "apiVersion");
	/* Only a client's request can wait for a conversion webhook. */
	bool conv = wc->req != NULL && wc->dc->conv_allowed && (wc->rt->flags & DC_RT_CUSTOM) &&
	    crd_owns(wc->rt);
	int r;

	if (is_apply(wc->req))
		return 0;
	if (fieldmanager_manager_name(wc->field_manager, wc->req != NULL ?
	    wc->req->user_agent : NULL, manager, sizeof(manager)) < 0)
		manager[0] = '\0';
	if (conv && av != NULL && strcmp(av, wc->rt->api_version) != 0) {
		r = at_request_version(wc, obj, &vobj, &vold);
		if (r == -ENOMEM || r == -EINPROGRESS)
			return r;
		if (r < 0)
			goto drop;
	}
	if ((empty = empty_object(wc->rt)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	r = fieldmanager_update(&(struct fm_update){
		.convert = conv ? ssa_convert : NULL,
		.convert_arg = (void *)(uintptr_t)wc->rt,
		.old = vobj != NULL ? vold : wc->old,
		.obj = vobj != NULL ? vobj : obj,
		.manager = manager,
		.api_version = wc->rt->api_version,
		.subresource = wc->subresource,
		.schema = type_schema(wc->rt, &sbuf),
		.reset = reset_for(wc->rt, wc->subresource),
		.empty = empty,
		.now = kc_clock_wall(),
		.cache = plugin_state(wc->dc, &ssa_plugin),
	}, &out, &st);
	json_object_put(empty);
	if (r == -ENOMEM || r == -EINPROGRESS)
		goto out;
	if (r < 0)
		goto drop;
	if ((meta = kc_json_ensure_obj(obj, "metadata")) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	mf = kc_json_get(out, "metadata", "managedFields");
	if (mf == NULL)
		json_object_object_del(meta, "managedFields");
	else if (kc_json_put(meta, "managedFields", json_object_get(mf)) < 0) {
		r = -ENOMEM;
		goto out;
	}
	r = 0;
	goto out;
drop:
	/* UpdateNoErrors: no managedFields rather than wrong ones. */
	if ((meta = kc_json_obj_of(obj, "metadata")) != NULL)
		json_object_object_del(meta, "managedFields");
	r = 0;
out:
	if (out != NULL)
		json_object_put(out);
	if (vobj != NULL)
		json_object_put(vobj);
	if (vold != NULL)
		json_object_put(vold);
	return r;
}

int
ssa_init(struct dc *dc)
{
	struct fm_cache *cache;

	if (plugin_state(dc, &ssa_plugin) == NULL) {
		if (fm_cache_new(&cache) < 0)
			return -ENOMEM;
		plugin_set_state(dc, &ssa_plugin, cache);
	}
	dc->hooks.apply = ssa_apply;
	dc->hooks.managed_fields = ssa_managed_fields;
	return 0;
}

void
ssa_fini(struct dc *dc)
{
	fm_cache_free(plugin_state(dc, &ssa_plugin));
	plugin_set_state(dc, &ssa_plugin, NULL);
	dc->hooks.apply = NULL;
	dc->hooks.managed_fields = NULL;
}

static int
ssa_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	(void)cfg;
	(void)st;
	return ssa_init(dc);
}

const struct dc_plugin ssa_plugin = {
	.name = "ssa",
	.init = ssa_start,
	.fini = ssa_fini,
};

/*
 * limitranger.c: kube-apiserver's LimitRanger admission plug-in
 * (plugin/pkg/admission/limitranger) and the defaults of the LimitRange
 * type (SetDefaults_LimitRangeItem, pkg/apis/core/v1/defaults.go).
 *
 * On the create of a pod, by anyone (the simulated controllers' writes go
 * through the same admission), each LimitRange of its namespace, in name
 * order:
 *
 *	mutate	the "Container" limits' default and defaultRequest fill
 *		every container's and init container's missing limits and
 *		requests; the pod records what was set in the annotation
 *		kubernetes.io/limit-ranger ("LimitRanger plugin set: cpu
 *		request for container app; cpu limit for container app")
 *	validate min, max and maxLimitRequestRatio of the "Container" limits
 *		against each container and init container, of the "Pod"
 *		limits against the pod's sums (containers and sidecars
 *		added, other init containers as a maximum, as kubelet sizes
 *		a pod)
 *
 * PersistentVolumeClaims, on create and update, are checked against the
 * "PersistentVolumeClaim" limits' min and max of spec.resources.requests.
 * The first LimitRange that refuses answers 403 with upstream's text:
 *
 *	pods "p" is forbidden: [minimum cpu usage per Container is 100m, but
 *	    request is 50m, maximum memory usage per Pod is 1Gi, but limit is 2Gi]
 *
 * (one error without the brackets, repeated errors once). As upstream's
 * mutating phase comes before its validating one, every LimitRange's
 * defaults are applied before any is checked. Pod updates are not checked
 * (containers' resources
 * are immutable), nor the resize subresource. The defaults of a LimitRange
 * item of type Container: default from max, defaultRequest from default,
 * then from min, each only where missing; its validation compares each
 * resource's min, max, default, defaultRequest and ratio as
 * ValidateLimitRange does ("min value 2 is greater than max value 1"; the
 * value shown as its quoted text, where upstream prints the Go struct).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/quantity.h>
#include <kc/sbuf.h>
#include <kc/str.h>

#include "devcluster.h"
#include "limitranger.h"

#define ANNOTATION	"kubernetes.io/limit-ranger"
#define MAX_MILLI	(INT64_MAX / 1000)	/* resource.MaxMilliValue */
#define LR_ERRS_MAX	64		/* distinct errors one LimitRange reports */
#define LR_ERR_MAX	640		/* bytes of one error */
#define LR_RES_MAX	64		/* resources of one list read (the rest unseen) */
#define LR_SETS_MAX	32		/* "set" notes of one pod */

struct lr_state {
	struct dc	*dc;
};

/* utilerrors.Aggregate: distinct messages in order. */
struct errs {
	char	v[LR_ERRS_MAX][LR_ERR_MAX];
	size_t	n;
};

static void errs_addf(struct errs *, const char *fmt, ...) _printf_(2, 3);

static void
errs_addf(struct errs *e, const char *fmt, ...)
{
	char msg[LR_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < e->n; i++)
		if (strcmp(e->v[i], msg) == 0)
			return;
	if (e->n < LR_ERRS_MAX)
		memcpy(e->v[e->n++], msg, sizeof(msg));
}

/*
 * Quantities
 */

/* A quantity from JSON: a string, or a number as YAML gives it. */
static bool
qty_of(const struct json_object *v, struct kc_quantity *ret)
{
	char buf[64];
	const char *s;

	switch (json_object_get_type(v)) {
	case json_type_string:
		s = json_object_get_string((struct json_object *)(uintptr_t)v);
		break;
	case json_type_int:
		(void)snprintf(buf, sizeof(buf), "%" PRId64, json_object_get_int64(v));
		s = buf;
		break;
	case json_type_double:
		(void)snprintf(buf, sizeof(buf), "%.15g", json_object_get_double(v));
		s = buf;
		break;
	default:
		return false;
	}
	return kc_quantity_parse(s, ret, NULL) == 0;
}

/* Quantity.String(). */
static const char *
qstr(const struct kc_quantity *q, char buf[KC_QUANTITY_STR_MAX])
{
	if (kc_quantity_format(q, buf, KC_QUANTITY_STR_MAX) < 0)
		(void)kc_strlcpy(buf, "?", KC_QUANTITY_STR_MAX);
	return buf;
}

/* A resource list: names borrowed from the pod, values parsed. */
struct rlist {
	const char		*name[LR_RES_MAX];
	struct kc_quantity	 q[LR_RES_MAX];
	size_t			 n;
};

static struct kc_quantity *
rl_find(struct rlist *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->name[i], name) == 0)
			return &l->q[i];
	return NULL;
}

/* Adds (or raises to the larger, 'max') 'q' under 'name'. */
static void
rl_merge(struct rlist *l, const char *name, const struct kc_quantity *q, bool max)
{
	struct kc_quantity *have = rl_find(l, name);

	if (have == NULL) {
		if (l->n < LR_RES_MAX) {
			l->name[l->n] = name;
			l->q[l->n++] = *q;
		}
		return;
	}
	if (max) {
		if (kc_quantity_cmp(q, have) > 0)
			*have = *q;
	} else if (kc_quantity_add(have, q) < 0)
		*have = *q;		/* past 10^29: unreachable by real pods */
}

/* The parsed entries of a ResourceList object. */
static void
rl_from_json(struct rlist *l, const struct json_object *o)
{
	l->n = 0;
	if (!json_object_is_type(o, json_type_object))
		return;
	json_object_object_foreach((struct json_object *)(uintptr_t)o, k, v) {
		struct kc_quantity q;

		if (l->n < LR_RES_MAX && qty_of(v, &q)) {
			l->name[l->n] = k;
			l->q[l->n++] = q;
		}
	}
}

static void
rl_add_all(struct rlist *dst, const struct rlist *src, bool max)
{
	for (size_t i = 0; i < src->n; i++)
		rl_merge(dst, src->name[i], &src->q[i], max);
}

/*
 * PodRequests and PodLimits (k8s.io/component-helpers resource): the
 * containers summed, restartable init containers (sidecars) added, and
 * the largest of what each other init container needs beside the
 * sidecars started before it.
 */
static void
pod_sum(const struct json_object *pod, const char *which, struct rlist *ret)
{
	const struct json_object *cs = kc_json_get(pod, "spec", "containers");
	const struct json_object *ics = kc_json_get(pod, "spec", "initContainers");
	struct rlist side = { .n = 0 }, init = { .n = 0 }, c;

	ret->n = 0;
	for (size_t i = 0; json_object_is_type(cs, json_type_array) &&
	    i < json_object_array_length(cs); i++) {
		rl_from_json(&c, kc_json_get(json_object_array_get_idx(cs, i), "resources",
		    which));
		rl_add_all(ret, &c, false);
	}
	for (size_t i = 0; json_object_is_type(ics, json_type_array) &&
	    i < json_object_array_length(ics); i++) {
		const struct json_object *ic = json_object_array_get_idx(ics, i);
		const char *rp = kc_json_str(ic, "restartPolicy");

		rl_from_json(&c, kc_json_get(ic, "resources", which));
		if (rp != NULL && strcmp(rp, "Always") == 0) {
			rl_add_all(ret, &c, false);
			rl_add_all(&side, &c, false);
			rl_add_all(&init, &side, true);
		} else {
			struct rlist tmp = c;

			rl_add_all(&tmp, &side, false);
			rl_add_all(&init, &tmp, true);
		}
	}
	rl_add_all(ret, &init, true);
}

/*
 * The constraints (minConstraint, maxConstraint, maxRequestConstraint,
 * limitRequestRatioConstraint)
 */

/* requestLimitEnforcedValues: milli-units when all three fit, else units. */
static void
common(const struct kc_quantity *req, const struct kc_quantity *lim,
    const struct kc_quantity *enf, int64_t *r, int64_t *l, int64_t *e)
{
	struct kc_quantity zero = kc_quantity_from_int(0);

	req = req != NULL ? req : &zero;
	lim = lim != NULL ? lim : &zero;
	*r = kc_quantity_value_sat(req);
	*l = kc_quantity_value_sat(lim);
	*e = kc_quantity_value_sat(enf);
	if (*r <= MAX_MILLI && *l <= MAX_MILLI && *e <= MAX_MILLI) {
		*r = kc_quantity_milli_sat(req);
		*l = kc_quantity_milli_sat(lim);
		*e = kc_quantity_milli_sat(enf);
	}
}

enum check { C_MIN, C_MAX, C_MAX_REQUEST, C_RATIO };

static void
constraint(struct errs *errs, enum check kind, const char *type, const char *res,
    const struct kc_quantity *enf, struct rlist *reqs, struct rlist *lims)
{
	struct kc_quantity *req = rl_find(reqs, res);
	struct kc_quantity *lim = lims != NULL ? rl_find(lims, res) : NULL;
	char e[KC_QUANTITY_STR_MAX], q[KC_QUANTITY_STR_MAX];
	int64_t r, l, v;
	double ratio, observed, allowed;

	common(req, lim, enf, &r, &l, &v);
	qstr(enf, e);
	switch (kind) {
	case C_MIN:
		if (req == NULL)
			errs_addf(errs, "minimum %s usage per %s is %s.  No request is "
			    "specified", res, type, e);
		else if (r < v)
			errs_addf(errs, "minimum %s usage per %s is %s, but request is %s",
			    res, type, e, qstr(req, q));
		else if (lim != NULL && l < v)
			errs_addf(errs, "minimum %s usage per %s is %s, but limit is %s",
			    res, type, e, qstr(lim, q));
		break;
	case C_MAX:
		if (lim == NULL)
			errs_addf(errs, "maximum %s usage per %s is %s.  No limit is "
			    "specified", res, type, e);
		else if (l > v)
			errs_addf(errs, "maximum %s usage per %s is %s, but limit is %s",
			    res, type, e, qstr(lim, q));
		else if (req != NULL && r > v)
			errs_addf(errs, "maximum %s usage per %s is %s, but request is %s",
			    res, type, e, qstr(req, q));
		break;
	case C_MAX_REQUEST:
		if (req == NULL)
			errs_addf(errs, "maximum %s usage per %s is %s.  No request is "
			    "specified", res, type, e);
		else if (r > v)
			errs_addf(errs, "maximum %s usage per %s is %s, but request is %s",
			    res, type, e, qstr(req, q));
		break;
	case C_RATIO:
		if (req == NULL || r == 0) {
			errs_addf(errs, "%s max limit to request ratio per %s is %s, but no "
			    "request is specified or request is 0", res, type, e);
			break;
		}
		if (lim == NULL || l == 0) {
			errs_addf(errs, "%s max limit to request ratio per %s is %s, but no "
			    "limit is specified or limit is 0", res, type, e);
			break;
		}
		observed = ratio = (double)l / (double)r;
		allowed = (double)kc_quantity_value_sat(enf);
		if (kc_quantity_value_sat(enf) <= MAX_MILLI) {
			observed = ratio * 1000;
			allowed = (double)kc_quantity_milli_sat(enf);
		}
		if (observed > allowed)
			errs_addf(errs, "%s max limit to request ratio per %s is %s, but "
			    "provided ratio is %f", res, type, e, ratio);
		break;
	}
}

/* Each entry of item[field] checked as 'kind' against the lists. */
static void
check_field(struct errs *errs, const struct json_object *item, const char *field,
    enum check kind, const char *type, struct rlist *reqs, struct rlist *lims)
{
	const struct json_object *o = kc_json_get(item, field);

	if (!json_object_is_type(o, json_type_object))
		return;
	json_object_object_foreach((struct json_object *)(uintptr_t)o, k, v) {
		struct kc_quantity enf;

		if (qty_of(v, &enf))
			constraint(errs, kind, type, k, &enf, reqs, lims);
	}
}

static void
check_lists(struct errs *errs, const struct json_object *item, const char *type,
    struct rlist *reqs, struct rlist *lims)
{
	check_field(errs, item, "min", C_MIN, type, reqs, lims);
	check_field(errs, item, "max", C_MAX, type, reqs, lims);
	check_field(errs, item, "maxLimitRequestRatio", C_RATIO, type, reqs, lims);
}

static void
check_containers(struct errs *errs, const struct json_object *item,
    const struct json_object *arr)
{
	for (size_t i = 0; json_object_is_type(arr, json_type_array) &&
	    i < json_object_array_length(arr); i++) {
		const struct json_object *res = kc_json_get(json_object_array_get_idx(arr, i),
		    "resources");
		struct rlist reqs, lims;

		rl_from_json(&reqs, kc_json_get(res, "requests"));
		rl_from_json(&lims, kc_json_get(res, "limits"));
		check_lists(errs, item, "Container", &reqs, &lims);
	}
}

/* PodValidateLimitFunc. */
static void
validate_pod(struct errs *errs, const struct json_object *lr, const struct json_object *pod)
{
	const struct json_object *items = kc_json_get(lr, "spec", "limits");

	for (size_t i = 0; json_object_is_type(items, json_type_array) &&
	    i < json_object_array_length(items); i++) {
		const struct json_object *item = json_object_array_get_idx(items, i);
		const char *type = kc_json_str(item, "type");

		if (type == NULL)
			continue;
		if (strcmp(type, "Container") == 0) {
			check_containers(errs, item, kc_json_get(pod, "spec", "containers"));
			check_containers(errs, item, kc_json_get(pod, "spec",
			    "initContainers"));
		} else if (strcmp(type, "Pod") == 0) {
			struct rlist reqs, lims;

			pod_sum(pod, "requests", &reqs);
			pod_sum(pod, "limits", &lims);
			check_lists(errs, item, "Pod", &reqs, &lims);
		}
	}
}

/* PersistentVolumeClaimValidateLimitFunc: requests only. */
static void
validate_pvc(struct errs *errs, const struct json_object *lr, const struct json_object *pvc)
{
	const struct json_object *items = kc_json_get(lr, "spec", "limits");
	struct rlist reqs, none = { .n = 0 };

	rl_from_json(&reqs, kc_json_get(pvc, "spec", "resources", "requests"));
	for (size_t i = 0; json_object_is_type(items, json_type_array) &&
	    i < json_object_array_length(items); i++) {
		const struct json_object *item = json_object_array_get_idx(items, i);
		const char *type = kc_json_str(item, "type");

		if (type == NULL || strcmp(type, "PersistentVolumeClaim") != 0)
			continue;
		check_field(errs, item, "min", C_MIN, type, &reqs, &none);
		check_field(errs, item, "max", C_MAX_REQUEST, type, &reqs, NULL);
	}
}

/*
 * Defaults (PodMutateLimitFunc)
 */

/* The "Container" items' default (field "default") or defaultRequest, merged. */
static int
container_defaults(const struct json_object *lr, const char *field, struct json_object **ret)
{
	const struct json_object *items = kc_json_get(lr, "spec", "limits");
	struct json_object *out = json_object_new_object();

	if (out == NULL)
		return -ENOMEM;
	for (size_t i = 0; json_object_is_type(items, json_type_array) &&
	    i < json_object_array_length(items); i++) {
		const struct json_object *item = json_object_array_get_idx(items, i);
		const char *type = kc_json_str(item, "type");
		struct json_object *d = kc_json_get(item, field);

		if (type == NULL || strcmp(type, "Container") != 0 ||
		    !json_object_is_type(d, json_type_object))
			continue;
		json_object_object_foreach(d, k, v) {
			if (kc_json_put(out, k, json_object_get(v)) < 0) {
				json_object_put(out);
				return -ENOMEM;
			}
		}
	}
	*ret = out;
	return 0;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "cpu, memory <what> for <prefix> <name>" of the sorted names. */
static void
sb_set_note(struct kc_sbuf *sb, const char **names, size_t n, const char *what,
    const char *prefix, const char *cname)
{
	qsort(names, n, sizeof(*names), name_cmp);
	if (kc_sbuf_end(sb) > 0)
		kc_sbuf_puts(sb, "; ");
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			kc_sbuf_puts(sb, ", ");
		kc_sbuf_puts(sb, names[i]);
	}
	kc_sbuf_printf(sb, " %s for %s %s", what, prefix, cname);
}

/* Sets the missing entries of container resources[field] from 'defs'. */
static int
fill(struct json_object *c, const char *field, struct json_object *defs,
    const char **names, size_t *n)
{
	struct json_object *res, *list;

	*n = 0;
	json_object_object_foreach(defs, k, v) {
		if (kc_json_get(c, "resources", field, k) != NULL)
			continue;
		if ((res = kc_json_ensure_obj(c, "resources")) == NULL ||
		    (list = kc_json_ensure_obj(res, field)) == NULL ||
		    kc_json_put(list, k, json_object_get(v)) < 0)
			return -ENOMEM;
		if (*n < LR_SETS_MAX)		/* the note names the first ones */
			names[(*n)++] = k;
	}
	return 0;
}

static int
merge_containers(struct json_object *arr, const char *prefix, struct json_object *lims,
    struct json_object *reqs, struct kc_sbuf *sb)
{
	for (size_t i = 0; json_object_is_type(arr, json_type_array) &&
	    i < json_object_array_length(arr); i++) {
		struct json_object *c = json_object_array_get_idx(arr, i);
		const char *cname = kc_json_str(c, "name");
		const char *ln[LR_SETS_MAX], *rn[LR_SETS_MAX];
		size_t nl, nr;
		int r;

		if (!json_object_is_type(c, json_type_object))
			continue;
		if ((r = fill(c, "limits", lims, ln, &nl)) < 0 ||
		    (r = fill(c, "requests", reqs, rn, &nr)) < 0)
			return r;
		if (nr > 0)
			sb_set_note(sb, rn, nr, "request", prefix, cname != NULL ? cname : "");
		if (nl > 0)
			sb_set_note(sb, ln, nl, "limit", prefix, cname != NULL ? cname : "");
	}
	return 0;
}

/* mergePodResourceRequirements with the defaults of 'lr'. */
static int
mutate_pod(const struct json_object *lr, struct json_object *pod)
{
	struct json_object *lims = NULL, *reqs = NULL, *md, *an;
	char note[4096];
	struct kc_sbuf sb;
	int r;

	kc_sbuf_init(&sb, note, sizeof(note));
	if ((r = container_defaults(lr, "default", &lims)) < 0 ||
	    (r = container_defaults(lr, "defaultRequest", &reqs)) < 0)
		goto out;
	if ((r = merge_containers(kc_json_get(pod, "spec", "containers"), "container", lims,
	    reqs, &sb)) < 0 ||
	    (r = merge_containers(kc_json_get(pod, "spec", "initContainers"),
	    "init container", lims, reqs, &sb)) < 0)
		goto out;
	if (kc_sbuf_end(&sb) > 0) {
		char val[sizeof(note) + 32];

		(void)snprintf(val, sizeof(val), "LimitRanger plugin set: %s", note);
		r = -ENOMEM;
		if ((md = kc_json_ensure_obj(pod, "metadata")) == NULL ||
		    (an = kc_json_ensure_obj(md, "annotations")) == NULL ||
		    kc_json_set_str(an, ANNOTATION, val) < 0)
			goto out;
	}
	r = 0;
out:
	if (lims != NULL)
		json_object_put(lims);
	if (reqs != NULL)
		json_object_put(reqs);
	return r;
}

/*
 * Admission
 */

/* "<resource> "<name>" is forbidden: <errors>" (admission.NewForbidden). */
static void
sb_forbidden(struct kc_sbuf *sb, const char *qualified, const char *name,
    const struct errs *e)
{
	kc_sbuf_puts(sb, qualified);
	kc_sbuf_putc(sb, ' ');
	kc_sbuf_quote(sb, name, strlen(name));
	kc_sbuf_puts(sb, " is forbidden: ");
	if (e->n > 1)
		kc_sbuf_putc(sb, '[');
	for (size_t i = 0; i < e->n; i++) {
		if (i > 0)
			kc_sbuf_puts(sb, ", ");
		kc_sbuf_puts(sb, e->v[i]);
	}
	if (e->n > 1)
		kc_sbuf_putc(sb, ']');
}

/* Answers 403 with the errors of one LimitRange. */
static int
forbid(struct dc_write_ctx *wc, const struct json_object *obj, const struct errs *e)
{
	const char *name = kc_json_str(obj, "metadata", "name");
	struct kc_sbuf sb;
	size_t len;
	char *msg;

	if (name == NULL || name[0] == '\0')
		name = kc_json_str(obj, "metadata", "generateName");
	if (name == NULL || name[0] == '\0')
		name = "Unknown";
	kc_sbuf_init(&sb, NULL, 0);
	sb_forbidden(&sb, wc->rt->qualified, name, e);
	len = kc_sbuf_end(&sb);
	if ((msg = kc_malloc(len + 1)) == NULL)
		return -ENOMEM;
	kc_sbuf_init(&sb, msg, len + 1);
	sb_forbidden(&sb, wc->rt->qualified, name, e);
	errors_details(wc->resp, KC_EFORBIDDEN, "", wc->rt->plural, name, msg);
	kc_free(msg);
	wc->answered = true;
	return KC_EFORBIDDEN;
}

static int
admit(struct dc_write_ctx *wc, struct json_object *obj, struct kc_status *st)
{
	struct lr_state *ls = plugin_state(wc->dc, &limitranger_plugin);
	struct dc_coll *coll;
	struct json_object **lrs = NULL;
	struct errs *errs = NULL;
	const char *ns;
	bool pod, pvc;
	size_t n = 0;
	int r;

	(void)st;
	if (ls == NULL || wc->subresource != NULL || wc->rt->group[0] != '\0')
		return 0;
	pod = strcmp(wc->rt->plural, "pods") == 0 && wc->op == DC_OP_CREATE;
	pvc = strcmp(wc->rt->plural, "persistentvolumeclaims") == 0 &&
	    (wc->op == DC_OP_CREATE || wc->op == DC_OP_UPDATE);
	if ((!pod && !pvc) || (wc->old != NULL &&
	    kc_json_get(wc->old, "metadata", "deletionTimestamp") != NULL))
		return 0;
	ns = kc_json_str(obj, "metadata", "namespace");
	if (ns == NULL || (coll = storage_find_coll(wc->dc->store, "", "limitranges")) == NULL ||
	    coll_count(coll, ns) == 0)
		return 0;
	if ((r = coll_list(coll, ns, NULL, &lrs, &n)) < 0)
		return r;
	if ((errs = kc_calloc(1, sizeof(*errs))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; pod && i < n; i++)
		if ((r = mutate_pod(lrs[i], obj)) < 0)
			goto out;
	for (size_t i = 0; i < n; i++) {
		errs->n = 0;
		if (pod)
			validate_pod(errs, lrs[i], obj);
		else
			validate_pvc(errs, lrs[i], obj);
		if (errs->n > 0) {
			r = forbid(wc, obj, errs);
			goto out;
		}
	}
	r = 0;
out:
	kc_free(errs);
	objs_free(lrs, n);
	return r;
}

/*
 * The LimitRange type: SetDefaults_LimitRangeItem
 */

/* Copies each entry of item[from] missing from item[to] (created if absent). */
static int
default_from(struct json_object *item, const char *from, const char *to)
{
	struct json_object *src = kc_json_get(item, from), *dst;

	if (!json_object_is_type(src, json_type_object))
		return 0;
	if ((dst = kc_json_ensure_obj(item, to)) == NULL)
		return -ENOMEM;
	json_object_object_foreach(src, k, v) {
		if (kc_json_get(dst, k) == NULL && kc_json_put(dst, k, json_object_get(v)) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int
limitrange_defaults(struct dc_write_ctx *wc, struct json_object *obj)
{
	struct json_object *items = kc_json_get(obj, "spec", "limits");
	int r;

	(void)wc;
	for (size_t i = 0; json_object_is_type(items, json_type_array) &&
	    i < json_object_array_length(items); i++) {
		struct json_object *item = json_object_array_get_idx(items, i);
		const char *type = kc_json_str(item, "type");

		if (!json_object_is_type(item, json_type_object) || type == NULL ||
		    strcmp(type, "Container") != 0)
			continue;
		if ((r = default_from(item, "max", "default")) < 0 ||
		    (r = default_from(item, "default", "defaultRequest")) < 0 ||
		    (r = default_from(item, "min", "defaultRequest")) < 0)
			return r;
	}
	return 0;
}

/* The quantity item[field][key], if it is there and parses. */
static bool
item_qty(const struct json_object *item, const char *field, const char *key,
    struct kc_quantity *ret)
{
	return qty_of(kc_json_get(item, field, key), ret);
}

/* field.Invalid(spec.limits[i].<field>[key], "<value>", detail). */
static void
invalid(struct dc_errs *errs, size_t i, const char *field, const char *key,
    const struct kc_quantity *value, const char *fmt, const struct kc_quantity *a,
    const struct kc_quantity *b)
{
	char path[320], repr[KC_QUANTITY_STR_MAX + 2], qa[KC_QUANTITY_STR_MAX];
	char qb[KC_QUANTITY_STR_MAX], qv[KC_QUANTITY_STR_MAX], detail[256];

	(void)snprintf(path, sizeof(path), "spec.limits[%zu].%s[%s]", i, field, key);
	(void)snprintf(repr, sizeof(repr), "\"%s\"", qstr(value, qv));
	(void)snprintf(detail, sizeof(detail), fmt, qstr(a, qa), qstr(b, qb));
	errs_invalid(errs, path, repr, detail);
}

/* The checks of one resource of item 'i' (ValidateLimitRange). */
static void
validate_key(struct dc_errs *errs, size_t i, const struct json_object *item, const char *k)
{
	struct kc_quantity mn, mx, def, req, ratio, one = kc_quantity_from_int(1);
	bool has_min = item_qty(item, "min", k, &mn), has_max = item_qty(item, "max", k, &mx);
	bool has_def = item_qty(item, "default", k, &def);
	bool has_req = item_qty(item, "defaultRequest", k, &req);
	bool has_ratio = item_qty(item, "maxLimitRequestRatio", k, &ratio);

	if (has_min && has_max && kc_quantity_cmp(&mn, &mx) > 0)
		invalid(errs, i, "min", k, &mn, "min value %s is greater than max value %s",
		    &mn, &mx);
	if (has_req && has_min && kc_quantity_cmp(&mn, &req) > 0)
		invalid(errs, i, "defaultRequest", k, &req, "min value %s is greater than "
		    "default request value %s", &mn, &req);
	if (has_req && has_max && kc_quantity_cmp(&req, &mx) > 0)
		invalid(errs, i, "defaultRequest", k, &req, "default request value %s is "
		    "greater than max value %s", &req, &mx);
	if (has_req && has_def && kc_quantity_cmp(&req, &def) > 0)
		invalid(errs, i, "defaultRequest", k, &req, "default request value %s is "
		    "greater than default limit value %s", &req, &def);
	if (has_def && has_min && kc_quantity_cmp(&mn, &def) > 0)
		invalid(errs, i, "default", k, &mn, "min value %s is greater than default "
		    "value %s", &mn, &def);
	if (has_def && has_max && kc_quantity_cmp(&def, &mx) > 0)
		invalid(errs, i, "default", k, &mx, "default value %s is greater than max "
		    "value %s", &def, &mx);
	if (has_ratio && kc_quantity_cmp(&ratio, &one) < 0) {
		char path[320], repr[KC_QUANTITY_STR_MAX + 2], q[KC_QUANTITY_STR_MAX];
		char detail[128];

		(void)snprintf(path, sizeof(path), "spec.limits[%zu].maxLimitRequestRatio[%s]",
		    i, k);
		(void)snprintf(repr, sizeof(repr), "\"%s\"", qstr(&ratio, q));
		(void)snprintf(detail, sizeof(detail), "ratio %s is less than 1", q);
		errs_invalid(errs, path, repr, detail);
	}
}

/* Each resource named in any list of 'item', once. */
static void
validate_item(struct dc_errs *errs, size_t i, const struct json_object *item)
{
	static const char *const fields[] = { "max", "min", "default", "defaultRequest",
	    "maxLimitRequestRatio" };
	const char *type = kc_json_str(item, "type");
	char path[64];

	if (type != NULL && strcmp(type, "Pod") == 0)
		for (size_t f = 2; f < 4; f++) {
			const struct json_object *l = kc_json_get(item, fields[f]);

			if (json_object_is_type(l, json_type_object) &&
			    json_object_object_length(l) > 0) {
				(void)snprintf(path, sizeof(path), "spec.limits[%zu].%s", i,
				    fields[f]);
				errs_forbidden(errs, path, "may not be specified when `type` is "
				    "'Pod'");
			}
		}
	if (type != NULL && strcmp(type, "PersistentVolumeClaim") == 0 &&
	    kc_json_get(item, "min", "storage") == NULL &&
	    kc_json_get(item, "max", "storage") == NULL) {
		(void)snprintf(path, sizeof(path), "spec.limits[%zu].limits", i);
		errs_required(errs, path, "either minimum or maximum storage value is "
		    "required, but neither was provided");
	}
	for (size_t f = 0; f < KC_ARRAY_SIZE(fields); f++) {
		const struct json_object *l = kc_json_get(item, fields[f]);

		if (!json_object_is_type(l, json_type_object))
			continue;
		json_object_object_foreach((struct json_object *)(uintptr_t)l, k, v) {
			bool seen = false;

			(void)v;
			for (size_t g = 0; g < f && !seen; g++)
				seen = kc_json_get(item, fields[g], k) != NULL;
			if (!seen)
				validate_key(errs, i, item, k);
		}
	}
}

/* ValidateLimitRange's comparisons of each item's lists. */
static int
limitrange_validate(struct dc_write_ctx *wc, const struct json_object *obj,
    const struct json_object *old, struct dc_errs *errs)
{
	const struct json_object *items = kc_json_get(obj, "spec", "limits");

	(void)wc;
	(void)old;
	for (size_t i = 0; json_object_is_type(items, json_type_array) &&
	    i < json_object_array_length(items); i++)
		validate_item(errs, i, json_object_array_get_idx(items, i));
	return 0;
}

static const struct dc_type_ops ops_limitrange = {
	.defaults = limitrange_defaults,
	.validate = limitrange_validate,
};

static const struct dc_plugin_type limitranger_types[] = {
	{ "", "limitranges", &ops_limitrange },
};

static int
limitranger_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	struct lr_state *ls;

	(void)cfg;
	(void)st;
	if (plugin_state(dc, &limitranger_plugin) != NULL)
		return 0;
	if ((ls = kc_calloc(1, sizeof(*ls))) == NULL)
		return -ENOMEM;
	ls->dc = dc;
	plugin_set_state(dc, &limitranger_plugin, ls);
	return 0;
}

static void
limitranger_stop(struct dc *dc)
{
	struct lr_state *ls = plugin_state(dc, &limitranger_plugin);

	plugin_set_state(dc, &limitranger_plugin, NULL);
	kc_free(ls);
}

/* Admission: LimitRanger, before Priority (plugins.c). */
const struct dc_plugin limitranger_plugin = {
	.name = "limitranger",
	.init = limitranger_start,
	.fini = limitranger_stop,
	.admit = admit,
	.types = limitranger_types,
	.ntypes = KC_ARRAY_SIZE(limitranger_types),
};

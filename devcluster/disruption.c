/*
 * disruption.c: PodDisruptionBudgets, the disruption controller and the
 * pods/eviction subresource, so that "kubectl drain" behaves as against
 * a real cluster.
 *
 * Three parts, as upstream splits them between kube-apiserver and
 * kube-controller-manager:
 *
 *	ops_pdb		the policy/v1 PodDisruptionBudget registry strategy:
 *			status reset on create, upstream's validation of the
 *			spec (minAvailable and maxUnavailable not both,
 *			non-negative integers or percentages up to 100%, the
 *			label selector, unhealthyPodEvictionPolicy) and of
 *			status updates (non-negative counters)
 *	the controller	pkg/controller/disruption: a storage subscription
 *			marks the namespaces whose pods or budgets changed and
 *			arms a short loop timer (bursts coalesce); the timer
 *			recomputes the status of every budget there
 *			(disruption_status(): currentHealthy, desiredHealthy,
 *			expectedPods, disruptionsAllowed, observedGeneration,
 *			disruptedPods, condition DisruptionAllowed) and writes
 *			it only when it changed, so an idle cluster stays
 *			idle. A second deadline re-syncs when an entry of
 *			disruptedPods expires (2 minutes, DeletionTimeout)
 *	pods/eviction	pkg/registry/core/pod/storage/eviction.go, a
 *			subresource of disruption_plugin: decode the Eviction
 *			(JSON, YAML or protobuf; policy/v1 or v1beta1),
 *			delete pods that are Pending, terminal or already
 *			terminating without looking at budgets, refuse pods
 *			under two budgets, let unready pods go when the
 *			budget's unhealthyPodEvictionPolicy allows it, else
 *			check and decrement disruptionsAllowed (recording the
 *			pod in disruptedPods) or answer 429; before the delete
 *			the pod gets condition DisruptionTarget (reason
 *			EvictionByEvictionAPI)
 *
 * Workload controllers do not exist in the devcluster, so the scale a
 * percentage or maxUnavailable is taken of (upstream: the sum of the
 * owning controllers' spec.replicas) is the number of matching pods,
 * bare or owned alike.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/sbuf.h>
#include <kc/selector.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "devcluster.h"
#include "disruption.h"
#include "protobuf.h"
#include "schema.h"
#include "table.h"

#define DISRUPTION_DELAY_MS	20	/* coalescing delay after a change */
#define DISRUPTION_DIRTY_MAX	256	/* namespaces queued before a full pass */
#define PDB_GROUP		"policy"
#define PDB_RESOURCE		"poddisruptionbudgets"
#define CONTROLLER_MANAGER	"kube-controller-manager"
#define APISERVER_MANAGER	"kube-apiserver"
#define EVICT_MSG		"Cannot evict pod as it would violate the pod's " \
	"disruption budget."
#define MULTI_PDB_MSG		"This pod has more than one PodDisruptionBudget, which " \
	"the eviction subresource does not support."
#define PERCENT_MSG		"a valid percent string must be a numeric string " \
	"followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation " \
	"is '[0-9]+%')"

struct disruption {
	struct dc		*dc;
	struct dc_timer		 timer;
	bool			 ticking;
	bool			 all;		/* sync every namespace next */
	char			*dirty[DISRUPTION_DIRTY_MAX];
	size_t			 ndirty;
	time_t			 recheck;	/* earliest disruptedPods expiry; 0 none */
};

/*
 * Small helpers
 */

static size_t
arr_len(const struct json_object *a)
{
	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static void
stamp(time_t t, char buf[KC_TIME_MAX])
{
	if (kc_time_format(t, buf, KC_TIME_MAX) < 0)
		(void)kc_strlcpy(buf, "1970-01-01T00:00:00Z", KC_TIME_MAX);
}

static const struct dc_rtype *
pdb_type(const struct dc *dc)
{
	return registry_find(dc, PDB_GROUP, "v1", PDB_RESOURCE);
}

static const struct dc_rtype *
pod_type(const struct dc *dc)
{
	return registry_find(dc, "", "v1", "pods");
}

/* IsPodReady: condition Ready with status True. */
static bool
pod_ready(const struct json_object *pod)
{
	struct json_object *conds = kc_json_get(pod, "status", "conditions");

	for (size_t i = 0; i < arr_len(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);
		const char *t = kc_json_str(c, "type"), *s = kc_json_str(c, "status");

		if (t != NULL && strcmp(t, "Ready") == 0)
			return s != NULL && strcmp(s, "True") == 0;
	}
	return false;
}

static bool
deleting(const struct json_object *obj)
{
	return kc_json_get(obj, "metadata", "deletionTimestamp") != NULL;
}

/*
 * intstr.IntOrString: a JSON integer, or a string. '*ret_pct' tells a
 * string; '*ret_val' is the integer, or for "N%" N. -EINVAL for a
 * string that is not a percentage (or too large), -EDOM for another
 * JSON type.
 */
static int
intstr(const struct json_object *v, bool *ret_pct, int64_t *ret_val)
{
	const char *s;
	size_t n;
	int64_t x = 0;

	if (json_object_is_type(v, json_type_int)) {
		*ret_pct = false;
		*ret_val = json_object_get_int64(v);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return -EDOM;
	*ret_pct = true;
	s = json_object_get_string((struct json_object *)(uintptr_t)v);
	n = strlen(s);
	if (n < 2 || s[n - 1] != '%')
		return -EINVAL;
	for (size_t i = 0; i + 1 < n; i++) {
		if (s[i] < '0' || s[i] > '9' || x > INT32_MAX)
			return -EINVAL;
		x = x * 10 + (s[i] - '0');
	}
	*ret_val = x;
	return 0;
}

/* GetScaledValueFromIntOrPercent(v, total, roundUp true). */
static int
scaled(const struct json_object *v, int64_t total, int64_t *ret, char *err, size_t size)
{
	bool pct;
	int64_t x;
	int r;

	if ((r = intstr(v, &pct, &x)) < 0) {
		const char *s = json_object_get_string((struct json_object *)(uintptr_t)v);

		if (r == -EDOM || s == NULL || strchr(s, '%') == NULL)
			(void)snprintf(err, size, "invalid type: string is not a percentage");
		else
			(void)snprintf(err, size, "invalid value for IntOrString: invalid "
			    "value \"%.100s\": strconv.Atoi: parsing \"%.100s\": invalid syntax",
			    s, s);
		return -EINVAL;
	}
	*ret = pct ? (x * total + 99) / 100 : x;
	return 0;
}

/*
 * PodDisruptionBudget: the registry strategy
 */

static int
pdb_prepare_create(struct dc_write_ctx *wc, struct json_object *obj)
{
	struct json_object *st;

	(void)wc;
	json_object_object_del(obj, "status");
	if ((st = kc_json_ensure_obj(obj, "status")) == NULL ||
	    kc_json_set_int(st, "disruptionsAllowed", 0) < 0 ||
	    kc_json_set_int(st, "currentHealthy", 0) < 0 ||
	    kc_json_set_int(st, "desiredHealthy", 0) < 0 ||
	    kc_json_set_int(st, "expectedPods", 0) < 0)
		return -ENOMEM;
	return 0;
}

/* Go's %#v of an intstr.IntOrString, as field errors print it. */
static void
intstr_repr(const struct json_object *v, char *buf, size_t size)
{
	char q[300];

	if (json_object_is_type(v, json_type_string))
		(void)snprintf(buf, size, "intstr.IntOrString{Type:1, IntVal:0, StrVal:%s}",
		    kc_sbuf_quoted(q, sizeof(q),
		    json_object_get_string((struct json_object *)(uintptr_t)v)));
	else
		(void)snprintf(buf, size, "intstr.IntOrString{Type:0, IntVal:%" PRId64
		    ", StrVal:\"\"}", json_object_get_int64(v));
}

/* ValidatePositiveIntOrPercent and IsNotMoreThan100Percent. */
static void
validate_intstr(const struct json_object *v, const char *field, struct dc_errs *errs)
{
	char repr[400], num[32];
	bool pct;
	int64_t x;
	int r;

	r = intstr(v, &pct, &x);
	intstr_repr(v, repr, sizeof(repr));
	if (r == -EDOM) {
		errs_invalid(errs, field, repr, "must be an integer or percentage (e.g '5%')");
		return;
	}
	if (r < 0) {
		errs_invalid(errs, field, repr, PERCENT_MSG);
		return;
	}
	if (!pct && x < 0) {
		(void)snprintf(num, sizeof(num), "%" PRId64, x);
		errs_invalid(errs, field, num, "must be greater than or equal to 0");
	}
	if (pct && x > 100)
		errs_invalid(errs, field, repr, "must not be greater than 100%");
}

/*
 * Label keys and values through builtin_validate_meta() (upstream's
 * messages), re-filed under 'field'.
 */
static int
validate_labels_at(const struct json_object *labels, const char *field, struct dc_errs *errs)
{
	struct json_object *o = json_object_new_object(), *meta, *copy;
	struct dc_errs tmp = { 0 };

	if (o == NULL || (meta = kc_json_ensure_obj(o, "metadata")) == NULL ||
	    (copy = kc_json_copy(labels)) == NULL || kc_json_put(meta, "labels", copy) < 0) {
		if (o != NULL)
			json_object_put(o);
		return -ENOMEM;
	}
	builtin_validate_meta(o, &tmp);
	json_object_put(o);
	for (size_t i = 0; i < tmp.n; i++)
		errs_add(errs, tmp.items[i].type, field, "%s", tmp.items[i].body);
	return 0;
}

/* unversionedvalidation.ValidateLabelSelector. */
static int
validate_selector(const struct json_object *sel, const char *field, struct dc_errs *errs)
{
	struct json_object *ml = kc_json_get(sel, "matchLabels");
	struct json_object *me = kc_json_get(sel, "matchExpressions");
	char f[300];
	int r;

	if (sel == NULL || json_object_is_type(sel, json_type_null))
		return 0;
	if (!json_object_is_type(sel, json_type_object)) {
		errs_invalid(errs, field, "null", "must be a label selector object");
		return 0;
	}
	for (size_t i = 0; i < arr_len(me); i++) {
		struct json_object *e = json_object_array_get_idx(me, i);
		const char *op = kc_json_str(e, "operator");
		const char *key = kc_json_str(e, "key");
		struct json_object *vals = kc_json_get(e, "values");
		size_t nv = arr_len(vals);

		if (op != NULL && (strcmp(op, "In") == 0 || strcmp(op, "NotIn") == 0)) {
			if (nv == 0) {
				(void)snprintf(f, sizeof(f), "%s.matchExpressions[%zu].values",
				    field, i);
				errs_required(errs, f, "must be specified when `operator` is "
				    "'In' or 'NotIn'");
			}
		} else if (op != NULL && (strcmp(op, "Exists") == 0 ||
		    strcmp(op, "DoesNotExist") == 0)) {
			if (nv > 0) {
				(void)snprintf(f, sizeof(f), "%s.matchExpressions[%zu].values",
				    field, i);
				errs_forbidden(errs, f, "may not be specified when `operator` is "
				    "'Exists' or 'DoesNotExist'");
			}
		} else {
			char q[300];

			(void)snprintf(f, sizeof(f), "%s.matchExpressions[%zu].operator", field, i);
			errs_invalid(errs, f, kc_sbuf_quoted(q, sizeof(q), op != NULL ? op : ""),
			    "not a valid selector operator");
		}
		(void)snprintf(f, sizeof(f), "%s.matchExpressions[%zu].key", field, i);
		if (key == NULL || key[0] == '\0')
			errs_invalid(errs, f, "\"\"", "name part must be non-empty");
		else {
			struct json_object *one = json_object_new_object();

			if (one == NULL || kc_json_set_str(one, key, "") < 0) {
				if (one != NULL)
					json_object_put(one);
				return -ENOMEM;
			}
			r = validate_labels_at(one, f, errs);
			json_object_put(one);
			if (r < 0)
				return r;
		}
		for (size_t j = 0; j < nv; j++) {
			struct json_object *one = json_object_new_object();
			const char *val = json_object_get_string(json_object_array_get_idx(vals, j));

			if (one == NULL || kc_json_set_str(one, "k", val != NULL ? val : "") < 0) {
				if (one != NULL)
					json_object_put(one);
				return -ENOMEM;
			}
			(void)snprintf(f, sizeof(f), "%s.matchExpressions[%zu].values[%zu]",
			    field, i, j);
			r = validate_labels_at(one, f, errs);
			json_object_put(one);
			if (r < 0)
				return r;
		}
	}
	if (ml != NULL && !json_object_is_type(ml, json_type_null)) {
		(void)snprintf(f, sizeof(f), "%s.matchLabels", field);
		return validate_labels_at(ml, f, errs);
	}
	return 0;
}

/* The spec as Go's %#v prints the internal PodDisruptionBudgetSpec. */
static void
spec_repr(const struct json_object *spec, char *buf, size_t size)
{
	(void)snprintf(buf, size, "policy.PodDisruptionBudgetSpec{MinAvailable:"
	    "(*intstr.IntOrString)(%s), Selector:(*v1.LabelSelector)(%s), "
	    "MaxUnavailable:(*intstr.IntOrString)(%s), UnhealthyPodEvictionPolicy:"
	    "(*policy.UnhealthyPodEvictionPolicyType)(%s)}",
	    kc_json_get(spec, "minAvailable") != NULL ? "0xc000a10000" : "nil",
	    kc_json_get(spec, "selector") != NULL ? "0xc000a10020" : "nil",
	    kc_json_get(spec, "maxUnavailable") != NULL ? "0xc000a10040" : "nil",
	    kc_json_get(spec, "unhealthyPodEvictionPolicy") != NULL ? "0xc000a10060" : "nil");
}

static void
validate_nonneg(const struct json_object *st, const char *key, struct dc_errs *errs)
{
	int64_t v = kc_json_int(st, 0, key);
	char f[64], num[32];

	if (v >= 0)
		return;
	(void)snprintf(f, sizeof(f), "status.%s", key);
	(void)snprintf(num, sizeof(num), "%" PRId64, v);
	errs_invalid(errs, f, num, "must be greater than or equal to 0");
}

static int
pdb_validate(struct dc_write_ctx *wc, const struct json_object *obj,
    const struct json_object *old, struct dc_errs *errs)
{
	static const char *const policies[] = { "AlwaysAllow", "IfHealthyBudget", NULL };
	struct json_object *spec = kc_json_obj_of(obj, "spec"), *min, *max;
	const char *pol;

	(void)old;
	if (wc->subresource != NULL) {
		struct json_object *st = kc_json_obj_of(obj, "status");

		if (strcmp(wc->subresource, "status") != 0)
			return 0;
		validate_nonneg(st, "disruptionsAllowed", errs);
		validate_nonneg(st, "currentHealthy", errs);
		validate_nonneg(st, "desiredHealthy", errs);
		validate_nonneg(st, "expectedPods", errs);
		return 0;
	}
	min = kc_json_get(spec, "minAvailable");
	max = kc_json_get(spec, "maxUnavailable");
	if (min != NULL && json_object_is_type(min, json_type_null))
		min = NULL;
	if (max != NULL && json_object_is_type(max, json_type_null))
		max = NULL;
	if (min != NULL && max != NULL) {
		char repr[512];

		spec_repr(spec, repr, sizeof(repr));
		errs_invalid(errs, "spec", repr, "minAvailable and maxUnavailable cannot be "
		    "both set");
	}
	if (min != NULL)
		validate_intstr(min, "spec.minAvailable", errs);
	if (max != NULL)
		validate_intstr(max, "spec.maxUnavailable", errs);
	if (validate_selector(kc_json_get(spec, "selector"), "spec.selector", errs) < 0)
		return -ENOMEM;
	pol = kc_json_str(spec, "unhealthyPodEvictionPolicy");
	if (pol != NULL && strcmp(pol, "AlwaysAllow") != 0 &&
	    strcmp(pol, "IfHealthyBudget") != 0)
		errs_unsupported(errs, "spec.unhealthyPodEvictionPolicy", pol, policies);
	return 0;
}

const struct dc_type_ops ops_pdb = {
	.prepare_create = pdb_prepare_create,
	.validate = pdb_validate,
};

/*
 * The controller's arithmetic
 */

/*
 * apimeta.SetStatusCondition for DisruptionAllowed: the transition time
 * moves only when the status does.
 */
static int
set_allowed_condition(struct json_object *status, const struct json_object *old_conds,
    const char *cstatus, const char *reason, const char *message, int64_t gen, time_t now)
{
	struct json_object *conds = json_object_new_array(), *c;
	char ts[KC_TIME_MAX];
	bool found = false;

	if (conds == NULL || kc_json_put(status, "conditions", conds) < 0)
		return -ENOMEM;
	stamp(now, ts);
	for (size_t i = 0; i < arr_len(old_conds); i++) {
		struct json_object *oc = json_object_array_get_idx(old_conds, i);
		const char *t = kc_json_str(oc, "type");
		const char *os = kc_json_str(oc, "status");
		const char *olt = kc_json_str(oc, "lastTransitionTime");

		if (t == NULL || strcmp(t, "DisruptionAllowed") != 0) {
			if (kc_json_append(conds, kc_json_copy(oc)) < 0)
				return -ENOMEM;
			continue;
		}
		if (found)
			continue;
		found = true;
		if (os != NULL && strcmp(os, cstatus) == 0 && olt != NULL)
			(void)kc_strlcpy(ts, olt, sizeof(ts));
		if ((c = json_object_new_object()) == NULL || kc_json_append(conds, c) < 0 ||
		    kc_json_set_str(c, "type", "DisruptionAllowed") < 0 ||
		    kc_json_set_str(c, "status", cstatus) < 0 ||
		    kc_json_set_int(c, "observedGeneration", gen) < 0 ||
		    kc_json_set_str(c, "lastTransitionTime", ts) < 0 ||
		    kc_json_set_str(c, "reason", reason) < 0 ||
		    kc_json_set_str(c, "message", message) < 0)
			return -ENOMEM;
	}
	if (found)
		return 0;
	if ((c = json_object_new_object()) == NULL || kc_json_append(conds, c) < 0 ||
	    kc_json_set_str(c, "type", "DisruptionAllowed") < 0 ||
	    kc_json_set_str(c, "status", cstatus) < 0 ||
	    kc_json_set_int(c, "observedGeneration", gen) < 0 ||
	    kc_json_set_str(c, "lastTransitionTime", ts) < 0 ||
	    kc_json_set_str(c, "reason", reason) < 0 ||
	    kc_json_set_str(c, "message", message) < 0)
		return -ENOMEM;
	return 0;
}

/* failSafe: disruptionsAllowed 0 and DisruptionAllowed False, SyncFailed. */
static int
failsafe_status(const struct json_object *pdb, const char *message, time_t now,
    struct json_object **ret)
{
	struct json_object *old = kc_json_obj_of(pdb, "status");
	struct json_object *st = old != NULL ? kc_json_copy(old) : json_object_new_object();
	int r;

	if (st == NULL)
		return -ENOMEM;
	if (kc_json_set_int(st, "disruptionsAllowed", 0) < 0 ||
	    (r = set_allowed_condition(st, kc_json_get(old, "conditions"), "False",
	    "SyncFailed", message, kc_json_int(old, 0, "observedGeneration"), now)) < 0) {
		json_object_put(st);
		return -ENOMEM;
	}
	*ret = st;
	return 0;
}

int
disruption_status(const struct json_object *pdb, struct json_object *const *pods,
    size_t npods, time_t now, struct json_object **ret, time_t *ret_recheck)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *sel = NULL;
	struct json_object *spec = kc_json_obj_of(pdb, "spec");
	struct json_object *old = kc_json_obj_of(pdb, "status");
	struct json_object *old_dp = kc_json_obj_of(old, "disruptedPods");
	struct json_object *min = kc_json_get(spec, "minAvailable");
	struct json_object *max = kc_json_get(spec, "maxUnavailable");
	struct json_object *st = NULL, *dp = NULL;
	struct kc_status kst = { 0 };
	int64_t expected = 0, desired = 0, healthy = 0, allowed, gen;
	time_t recheck = 0;
	char err[512];
	int r;

	*ret_recheck = 0;
	gen = kc_json_int(pdb, 0, "metadata", "generation");
	if ((r = kc_label_selector_from_json(kc_json_get(spec, "selector"), &sel, &kst)) < 0) {
		if (r == -ENOMEM)
			return r;
		return failsafe_status(pdb, kst.message, now, ret);
	}
	if (min != NULL && json_object_is_type(min, json_type_null))
		min = NULL;
	if (max != NULL && json_object_is_type(max, json_type_null))
		max = NULL;
	if ((dp = json_object_new_object()) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < npods; i++) {
		const struct json_object *p = pods[i];
		const char *name = kc_json_str(p, "metadata", "name");
		struct json_object *when;

		if (name == NULL || !kc_label_selector_matches_obj(sel, p))
			continue;
		expected++;
		if (deleting(p))
			continue;
		/* buildDisruptedPodMap: entries younger than DeletionTimeout stay. */
		if (json_object_object_get_ex(old_dp, name, &when)) {
			int64_t sec = 0;
			int32_t nsec = 0;

			if (table_time_parse(json_object_get_string(when), &sec, &nsec) == 0 &&
			    sec + DISRUPTION_TIMEOUT_S > (int64_t)now) {
				if (kc_json_put(dp, name, json_object_get(when)) < 0) {
					json_object_put(dp);
					return -ENOMEM;
				}
				if (recheck == 0 || (time_t)(sec + DISRUPTION_TIMEOUT_S) < recheck)
					recheck = (time_t)(sec + DISRUPTION_TIMEOUT_S);
				continue;
			}
		}
		if (pod_ready(p))
			healthy++;
	}
	/* getExpectedPodCount; the scale is the matching pods (see the top). */
	err[0] = '\0';
	if (max != NULL) {
		int64_t mu;

		if (scaled(max, expected, &mu, err, sizeof(err)) == 0)
			desired = expected - mu < 0 ? 0 : expected - mu;
	} else if (min != NULL) {
		if (scaled(min, expected, &desired, err, sizeof(err)) < 0)
			desired = 0;
	} else
		expected = 0;
	if (err[0] != '\0') {
		json_object_put(dp);
		return failsafe_status(pdb, err, now, ret);
	}
	allowed = healthy - desired;
	if (expected <= 0 || allowed <= 0)
		allowed = 0;
	if ((st = json_object_new_object()) == NULL)
		goto oom;
	if ((gen != 0 && kc_json_set_int(st, "observedGeneration", gen) < 0))
		goto oom;
	if (json_object_object_length(dp) > 0) {
		if (kc_json_put(st, "disruptedPods", dp) < 0) {
			dp = NULL;
			goto oom;
		}
	} else
		json_object_put(dp);
	dp = NULL;
	if (kc_json_set_int(st, "disruptionsAllowed", allowed) < 0 ||
	    kc_json_set_int(st, "currentHealthy", healthy) < 0 ||
	    kc_json_set_int(st, "desiredHealthy", desired) < 0 ||
	    kc_json_set_int(st, "expectedPods", expected) < 0)
		goto oom;
	if ((r = set_allowed_condition(st, kc_json_get(old, "conditions"),
	    allowed > 0 ? "True" : "False", allowed > 0 ? "SufficientPods" : "InsufficientPods",
	    "", gen, now)) < 0)
		goto oom;
	*ret = st;
	*ret_recheck = recheck;
	return 0;
oom:
	if (dp != NULL)
		json_object_put(dp);
	if (st != NULL)
		json_object_put(st);
	return -ENOMEM;
}

/*
 * The controller
 */

static void
kick(struct disruption *d)
{
	if (!d->ticking && (!d->timer.armed ||
	    d->timer.due_ms > kc_clock_now_ms() + DISRUPTION_DELAY_MS))
		timer_arm(&d->timer, DISRUPTION_DELAY_MS);
}

static void
mark(struct disruption *d, const char *ns)
{
	if (d->all || ns == NULL)
		return;
	for (size_t i = 0; i < d->ndirty; i++)
		if (strcmp(d->dirty[i], ns) == 0)
			return;
	if (d->ndirty == DISRUPTION_DIRTY_MAX ||
	    (d->dirty[d->ndirty] = kc_strdup(ns)) == NULL) {
		/* Too many (or no memory): a full pass instead. */
		d->all = true;
		return;
	}
	d->ndirty++;
}

static bool
is_coll(const struct dc_coll *coll, const char *group, const char *resource)
{
	return strcmp(coll_group(coll), group) == 0 &&
	    strcmp(coll_resource(coll), resource) == 0;
}

static void
on_event(void *arg, const struct dc_event *ev)
{
	struct disruption *d = arg;
	const char *ns = kc_json_str(ev->obj, "metadata", "namespace");

	if (is_coll(ev->coll, PDB_GROUP, PDB_RESOURCE)) {
		/* Our own status writes come back here: they change nothing. */
		if (ev->type == DC_EV_DELETED)
			return;
	} else if (is_coll(ev->coll, "", "pods")) {
		const struct dc_rtype *pt = pdb_type(d->dc);

		if (pt == NULL || ns == NULL || coll_count(pt->coll, ns) == 0)
			return;
	} else
		return;
	mark(d, ns);
	kick(d);
}

/* Writes the status of a budget through the status subresource's path. */
static int
write_status(struct dc *dc, const struct dc_rtype *rt, const struct json_object *old,
    struct json_object *status, const char *manager)
{
	struct json_object *next;
	int r;

	if ((next = kc_json_copy(old)) == NULL) {
		json_object_put(status);
		return -ENOMEM;
	}
	if (json_object_object_add(next, "status", status) < 0) {
		json_object_put(status);
		json_object_put(next);
		return -ENOMEM;
	}
	if (dc->hooks.managed_fields != NULL) {
		struct dc_write_ctx wc = { .dc = dc, .rt = rt, .op = DC_OP_UPDATE,
		    .subresource = "status", .field_manager = manager, .old = old };

		if ((r = dc->hooks.managed_fields(&wc, next)) < 0) {
			json_object_put(next);
			return r;
		}
	}
	r = storage_update(dc->store, rt->coll, next, obj_rv(old), NULL);
	return r == DC_UNCHANGED ? 0 : r;
}

/* Status equality, the transition times of unchanged conditions aside. */
static bool
same_status(const struct json_object *a, const struct json_object *b)
{
	return kc_json_equal(a, b);
}

static int
sync_ns(struct disruption *d, const char *ns, time_t now, time_t *recheck)
{
	const struct dc_rtype *pt = pdb_type(d->dc), *podt = pod_type(d->dc);
	struct json_object **pdbs = NULL, **pods = NULL;
	size_t npdbs = 0, npods = 0;
	int r;

	if (pt == NULL || podt == NULL)
		return 0;
	if ((r = coll_list(pt->coll, ns, NULL, &pdbs, &npdbs)) < 0)
		return r;
	if (npdbs > 0 && (r = coll_list(podt->coll, ns, NULL, &pods, &npods)) < 0) {
		objs_free(pdbs, npdbs);
		return r;
	}
	for (size_t i = 0; i < npdbs && r >= 0; i++) {
		struct json_object *st = NULL;
		time_t rc = 0;

		if (deleting(pdbs[i]))
			continue;
		if ((r = disruption_status(pdbs[i], pods, npods, now, &st, &rc)) < 0)
			break;
		if (rc != 0 && (*recheck == 0 || rc < *recheck))
			*recheck = rc;
		if (same_status(st, kc_json_obj_of(pdbs[i], "status"))) {
			json_object_put(st);
			continue;
		}
		r = write_status(d->dc, pt, pdbs[i], st, CONTROLLER_MANAGER);
		if (r == KC_ECONFLICT || r == KC_ENOTFOUND)
			r = 0;
	}
	objs_free(pods, npods);
	objs_free(pdbs, npdbs);
	return r;
}

static int
sync_all(struct disruption *d, time_t now, time_t *recheck)
{
	const struct dc_rtype *pt = pdb_type(d->dc);
	struct json_object **pdbs = NULL;
	size_t n = 0;
	char last[DC_SEGMENT_MAX] = "";
	int r = 0;

	if (pt == NULL)
		return 0;
	if ((r = coll_list(pt->coll, NULL, NULL, &pdbs, &n)) < 0)
		return r;
	/* The list is in (namespace, name) order: one pass per namespace. */
	for (size_t i = 0; i < n && r >= 0; i++) {
		const char *ns = kc_json_str(pdbs[i], "metadata", "namespace");

		if (ns == NULL || strcmp(ns, last) == 0)
			continue;
		(void)kc_strlcpy(last, ns, sizeof(last));
		r = sync_ns(d, last, now, recheck);
	}
	objs_free(pdbs, n);
	return r;
}

static int64_t
tick(void *arg)
{
	struct disruption *d = arg;
	char *dirty[DISRUPTION_DIRTY_MAX];
	size_t n = d->ndirty;
	time_t now = kc_clock_wall(), recheck = 0;
	bool all = d->all;
	int r = 0;

	if (d->dc->stopping)
		return DC_TIMER_STOP;
	/* A disruptedPods entry expired: every budget is looked at again. */
	if (d->recheck != 0 && d->recheck <= now)
		all = true;
	memcpy(dirty, d->dirty, n * sizeof(dirty[0]));
	d->ndirty = 0;
	d->all = false;
	d->ticking = true;
	if (all)
		r = sync_all(d, now, &recheck);
	for (size_t i = 0; i < n; i++) {
		if (!all && r >= 0)
			r = sync_ns(d, dirty[i], now, &recheck);
		kc_free(dirty[i]);
	}
	d->ticking = false;
	if (r < 0)
		kc_log_debug(&(struct kc_log_ctx){ .action = "disruption" },
		    "syncing budgets: %s", kc_strerror(r));
	if (all || d->recheck <= now || (recheck != 0 && recheck < d->recheck))
		d->recheck = recheck;
	if (d->ndirty > 0 || d->all || r < 0)
		return DISRUPTION_DELAY_MS;
	if (d->recheck == 0)
		return DC_TIMER_STOP;
	return d->recheck > now ? (int64_t)(d->recheck - now) * 1000 + 50 : 50;
}

/*
 * pods/eviction
 */

struct evict {
	struct dc		*dc;
	const struct dc_rtype	*pods;
	const struct dc_req	*req;
	struct dc_resp		*resp;
	const char		*ns;
	const char		*name;
	bool			 dry_run;
	int64_t			 grace;		/* -1: the pod's */
	char			 policy[32];	/* propagationPolicy */
	char			 pre_uid[64];
	char			 pre_rv[32];
	bool			 has_pre_rv;
};

/*
 * A Status reply for 'code' (KC_E*), with a DisruptionBudget cause and
 * retryAfterSeconds (and the Retry-After header) when given.
 */
static void
status_reply(struct dc_resp *resp, int code, const char *message, const char *cause,
    int retry_after)
{
	struct json_object *details = NULL, *body = NULL, *causes, *c;
	char ra[16];

	if (cause != NULL || retry_after > 0) {
		if ((details = json_object_new_object()) == NULL)
			goto oom;
		if (cause != NULL && ((causes = json_object_new_array()) == NULL ||
		    kc_json_put(details, "causes", causes) < 0 ||
		    (c = json_object_new_object()) == NULL || kc_json_append(causes, c) < 0 ||
		    kc_json_set_str(c, "reason", "DisruptionBudget") < 0 ||
		    kc_json_set_str(c, "message", cause) < 0))
			goto oom;
		if (retry_after > 0 && kc_json_set_int(details, "retryAfterSeconds",
		    retry_after) < 0)
			goto oom;
	}
	if (errors_status_body(code, message, details, &body) < 0)
		goto oom;
	(void)snprintf(ra, sizeof(ra), "%d", retry_after);
	if (resp_json(resp, (int)kc_json_int(body, 500, "code"), body) < 0 ||
	    (retry_after > 0 && resp_header(resp, "Retry-After", ra) < 0))
		goto oom;
	json_object_put(body);
	if (details != NULL)
		json_object_put(details);
	return;
oom:
	if (body != NULL)
		json_object_put(body);
	if (details != NULL)
		json_object_put(details);
	errors_internal(resp, -ENOMEM);
}

/* The 201 reply: a Status with 'status' and 'code' (Success, 201). */
static void
created_status(struct dc_resp *resp, bool success, const char *message, int code)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL || kc_json_set_str(o, "kind", "Status") < 0 ||
	    kc_json_set_str(o, "apiVersion", "v1") < 0 ||
	    kc_json_put(o, "metadata", json_object_new_object()) < 0 ||
	    kc_json_set_str(o, "status", success ? "Success" : "Failure") < 0 ||
	    (message != NULL && kc_json_set_str(o, "message", message) < 0) ||
	    kc_json_set_int(o, "code", code) < 0 || resp_json(resp, 201, o) < 0) {
		if (o != NULL)
			json_object_put(o);
		errors_internal(resp, -ENOMEM);
		return;
	}
	json_object_put(o);
}

static void
pod_conflict(struct evict *e, const char *fmt, const char *a, const char *b)
{
	char why[600];

	(void)snprintf(why, sizeof(why), fmt, a, b);
	errors_reply(e->resp, KC_ECONFLICT, "Operation cannot be fulfilled on Pod \"%s\": %s",
	    e->name, why);
}

/* Media type of a Content-Type, lowercased, parameters dropped. */
static void
media_type(const char *ct, char *buf, size_t size)
{
	size_t n = 0;

	for (; ct != NULL && *ct != '\0' && *ct != ';' && n + 1 < size; ct++) {
		if (*ct == ' ' || *ct == '\t')
			continue;
		buf[n++] = (char)(*ct >= 'A' && *ct <= 'Z' ? *ct - 'A' + 'a' : *ct);
	}
	buf[n] = '\0';
}

/* Decodes the Eviction body; on failure the reply is written. */
static int
decode_eviction(struct evict *e, struct json_object **ret)
{
	struct kc_status st = { 0 };
	struct json_object *o = NULL;
	const char *body = e->req->body != NULL ? e->req->body : "";
	const char *kind, *av;
	char mt[128];
	int r;

	media_type(e->req->content_type, mt, sizeof(mt));
	if (mt[0] == '\0' || strcmp(mt, "application/json") == 0) {
		if (e->req->body_len == 0) {
			errors_reply(e->resp, KC_EBADREQUEST, "Object 'Kind' is missing in ''");
			return KC_EBADREQUEST;
		}
		r = kc_json_parse(body, e->req->body_len, &o, &st);
	} else if (strcmp(mt, "application/yaml") == 0)
		r = kc_yaml_parse_one(body, e->req->body_len, NULL, &o, &st);
	else if (strcmp(mt, "application/vnd.kubernetes.protobuf") == 0) {
		r = protobuf_decode(body, e->req->body_len, "policy/v1", "Eviction", &o, &st);
		if (r < 0 && r != -ENOMEM) {
			if (r == KC_EBADREQUEST)
				errors_reply(e->resp, r, "Eviction in version \"v1\" cannot be "
				    "handled as a Eviction: %s", st.message);
			else
				errors_kc(e->resp, r, &st);
			return r;
		}
	} else {
		errors_reply(e->resp, KC_EMEDIATYPE, "the body of the request was in an "
		    "unknown format - accepted media types include: application/json, "
		    "application/yaml, application/vnd.kubernetes.protobuf");
		return KC_EMEDIATYPE;
	}
	if (r == -ENOMEM) {
		errors_internal(e->resp, r);
		return r;
	}
	if (r < 0 || !json_object_is_type(o, json_type_object)) {
		if (o != NULL)
			json_object_put(o);
		errors_reply(e->resp, KC_EBADREQUEST, "couldn't get version/kind; json parse "
		    "error: %s", r < 0 ? st.message : "the body is not a JSON object");
		return KC_EBADREQUEST;
	}
	kind = kc_json_str(o, "kind");
	av = kc_json_str(o, "apiVersion");
	if (kind != NULL && kind[0] != '\0' && strcmp(kind, "Eviction") != 0) {
		errors_reply(e->resp, KC_EBADREQUEST, "%s in version \"v1\" cannot be handled "
		    "as a Eviction: no kind \"%s\" is registered for version \"%s\"", kind,
		    kind, av != NULL ? av : "policy/v1");
		json_object_put(o);
		return KC_EBADREQUEST;
	}
	if (av != NULL && av[0] != '\0' && strcmp(av, "policy/v1") != 0 &&
	    strcmp(av, "policy/v1beta1") != 0) {
		errors_reply(e->resp, KC_EBADREQUEST, "the API version in the data (%s) does "
		    "not match the expected API version (policy/v1)", av);
		json_object_put(o);
		return KC_EBADREQUEST;
	}
	*ret = o;
	return 0;
}

/* deleteOptions of the body and dryRun of the URL (propagateDryRun). */
static int
eviction_options(struct evict *e, const struct json_object *ev)
{
	struct json_object *opts = kc_json_obj_of(ev, "deleteOptions"), *v, *dr;
	const char *s;
	char val[512];
	bool body_dry = false, query_dry;

	e->grace = -1;
	if (!req_param_dry_run(e->req, &query_dry, val, sizeof(val))) {
		struct dc_errs errs = { 0 };

		errs_add(&errs, "NotSupported", "dryRun",
		    "Unsupported value: %s: supported values: \"All\"", val);
		errors_invalid(e->resp, "CreateOptions.meta.k8s.io", "meta.k8s.io", "", &errs);
		return KC_EINVALID;
	}
	dr = kc_json_arr_of(opts, "dryRun");
	for (size_t i = 0; i < arr_len(dr); i++) {
		s = json_object_get_string(json_object_array_get_idx(dr, i));
		if (s == NULL || strcmp(s, "All") != 0) {
			struct dc_errs errs = { 0 };

			/* Upstream prints every value of the []string. */
			schema_crd_strings_repr(val, sizeof(val), dr);
			errs_add(&errs, "NotSupported", "dryRun",
			    "Unsupported value: %s: supported values: \"All\"", val);
			errors_invalid(e->resp, "DeleteOptions.meta.k8s.io", "meta.k8s.io", "",
			    &errs);
			return KC_EINVALID;
		}
		body_dry = true;
	}
	e->dry_run = body_dry || query_dry;
	if (json_object_object_get_ex(opts, "gracePeriodSeconds", &v) &&
	    json_object_is_type(v, json_type_int))
		e->grace = json_object_get_int64(v);
	if ((s = kc_json_str(opts, "propagationPolicy")) != NULL) {
		if (strcmp(s, "Foreground") != 0 && strcmp(s, "Background") != 0 &&
		    strcmp(s, "Orphan") != 0) {
			struct dc_errs errs = { 0 };

			errs_unsupported(&errs, "propagationPolicy", s, (const char *const []){
			    "Foreground", "Background", "Orphan", "nil", NULL });
			errors_invalid(e->resp, "DeleteOptions.meta.k8s.io", "meta.k8s.io", "",
			    &errs);
			return KC_EINVALID;
		}
		(void)kc_strlcpy(e->policy, s, sizeof(e->policy));
	}
	if ((s = kc_json_str(opts, "preconditions", "uid")) != NULL)
		(void)kc_strlcpy(e->pre_uid, s, sizeof(e->pre_uid));
	if ((s = kc_json_str(opts, "preconditions", "resourceVersion")) != NULL) {
		(void)kc_strlcpy(e->pre_rv, s, sizeof(e->pre_rv));
		e->has_pre_rv = true;
	}
	return 0;
}

/* The budgets of the pod's namespace whose selector matches it. */
static int
matching_pdbs(struct dc *dc, const struct json_object *pod, struct json_object ***ret,
    size_t *ret_n)
{
	const struct dc_rtype *pt = pdb_type(dc);
	const char *ns = kc_json_str(pod, "metadata", "namespace");
	struct json_object **all = NULL;
	size_t n = 0, m = 0;
	int r;

	*ret = NULL;
	*ret_n = 0;
	if (pt == NULL || ns == NULL)
		return 0;
	if ((r = coll_list(pt->coll, ns, NULL, &all, &n)) < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct kc_label_selector *sel = NULL;
		bool match;

		if (kc_label_selector_from_json(kc_json_get(all[i], "spec", "selector"), &sel,
		    NULL) < 0) {
			json_object_put(all[i]);
			continue;
		}
		match = kc_label_selector_matches_obj(sel, pod);
		kc_label_selector_free(sel);
		if (match)
			all[m++] = all[i];
		else
			json_object_put(all[i]);
	}
	*ret = all;
	*ret_n = m;
	return 0;
}

/*
 * checkAndDecrement: 0 when the budget allowed one more disruption (and,
 * unless a dry run, now records the pod in disruptedPods), or a code
 * with the reply written.
 */
static int
check_and_decrement(struct evict *e, const struct json_object *pdb)
{
	const struct dc_rtype *pt = pdb_type(e->dc);
	const char *pname = kc_json_str(pdb, "metadata", "name");
	struct json_object *old = kc_json_obj_of(pdb, "status"), *st, *dp;
	int64_t allowed = kc_json_int(old, 0, "disruptionsAllowed");
	char msg[600], ts[KC_TIME_MAX];
	time_t now = kc_clock_wall();
	int r;

	if (kc_json_int(old, 0, "observedGeneration") <
	    kc_json_int(pdb, 0, "metadata", "generation")) {
		(void)snprintf(msg, sizeof(msg), "The disruption budget %s is still being "
		    "processed by the server.", pname);
		status_reply(e->resp, KC_ETHROTTLED, EVICT_MSG, msg, 10);
		return KC_ETHROTTLED;
	}
	if (allowed < 0) {
		errors_reply(e->resp, KC_EFORBIDDEN, "poddisruptionbudgets.policy \"%s\" is "
		    "forbidden: pdb disruptions allowed is negative", pname);
		return KC_EFORBIDDEN;
	}
	if (kc_json_obj_of(old, "disruptedPods") != NULL &&
	    json_object_object_length(kc_json_obj_of(old, "disruptedPods")) >
	    DISRUPTED_PODS_MAX) {
		errors_reply(e->resp, KC_EFORBIDDEN, "poddisruptionbudgets.policy \"%s\" is "
		    "forbidden: DisruptedPods map too big - too many evictions not confirmed "
		    "by PDB controller", pname);
		return KC_EFORBIDDEN;
	}
	if (allowed == 0) {
		(void)snprintf(msg, sizeof(msg), "The disruption budget %s needs %" PRId64
		    " healthy pods and has %" PRId64 " currently", pname,
		    kc_json_int(old, 0, "desiredHealthy"), kc_json_int(old, 0, "currentHealthy"));
		status_reply(e->resp, KC_ETHROTTLED, EVICT_MSG, msg, 0);
		return KC_ETHROTTLED;
	}
	if (e->dry_run)
		return 0;
	if ((st = kc_json_copy(old)) == NULL)
		goto oom;
	if (kc_json_set_int(st, "disruptionsAllowed", allowed - 1) < 0 ||
	    (allowed - 1 == 0 && set_allowed_condition(st, kc_json_get(old, "conditions"),
	    "False", "InsufficientPods", "", kc_json_int(old, 0, "observedGeneration"),
	    now) < 0) ||
	    (dp = kc_json_ensure_obj(st, "disruptedPods")) == NULL) {
		json_object_put(st);
		goto oom;
	}
	stamp(now, ts);
	if (kc_json_set_str(dp, e->name, ts) < 0) {
		json_object_put(st);
		goto oom;
	}
	r = write_status(e->dc, pt, pdb, st, APISERVER_MANAGER);
	if (r == KC_ECONFLICT || r == KC_ENOTFOUND) {
		/* Single-threaded: cannot race, but answer as the retry would. */
		(void)snprintf(msg, sizeof(msg), "The disruption budget %s is still being "
		    "processed by the server.", pname);
		status_reply(e->resp, KC_ETHROTTLED, EVICT_MSG, msg, 10);
		return KC_ETHROTTLED;
	}
	if (r < 0) {
		errors_internal(e->resp, r);
		return r;
	}
	return 0;
oom:
	errors_internal(e->resp, -ENOMEM);
	return -ENOMEM;
}

/*
 * addConditionAndDeletePod: the preconditions, then condition
 * DisruptionTarget (not in a dry run), then the delete. 'enforce_rv'
 * holds the pod to the resourceVersion the decision was made on. 0 with
 * the pod deleted (or terminating), or a code with the reply written.
 */
static int
condition_and_delete(struct evict *e, const char *decided_rv)
{
	const struct json_object *pod = coll_get(e->pods->coll, e->ns, e->name);
	const char *uid, *rv, *want_rv = e->has_pre_rv ? e->pre_rv : decided_rv;
	struct json_object *next, *stat, *conds, *c = NULL;
	char ts[KC_TIME_MAX];
	int r;

	if (pod == NULL) {
		errors_notfound(e->resp, e->pods, e->name);
		return KC_ENOTFOUND;
	}
	uid = kc_json_str(pod, "metadata", "uid");
	rv = kc_json_str(pod, "metadata", "resourceVersion");
	if (e->pre_uid[0] != '\0' && (uid == NULL || strcmp(e->pre_uid, uid) != 0)) {
		pod_conflict(e, "the UID in the precondition (%s) does not match the UID in "
		    "record (%s). The object might have been deleted and then recreated",
		    e->pre_uid, uid != NULL ? uid : "");
		return KC_ECONFLICT;
	}
	if (want_rv != NULL && want_rv[0] != '\0' && (rv == NULL || strcmp(want_rv, rv) != 0)) {
		pod_conflict(e, "the ResourceVersion in the precondition (%s) does not match "
		    "the ResourceVersion in record (%s). The object might have been modified",
		    want_rv, rv != NULL ? rv : "");
		return KC_ECONFLICT;
	}
	if (e->dry_run) {
		created_status(e->resp, true, NULL, 201);
		return 0;
	}
	if ((next = kc_json_copy(pod)) == NULL || (stat = kc_json_ensure_obj(next,
	    "status")) == NULL)
		goto oom;
	if ((conds = kc_json_arr_of(stat, "conditions")) == NULL) {
		if ((conds = json_object_new_array()) == NULL ||
		    kc_json_put(stat, "conditions", conds) < 0)
			goto oom;
	}
	for (size_t i = 0; i < arr_len(conds) && c == NULL; i++) {
		const char *t = kc_json_str(json_object_array_get_idx(conds, i), "type");

		if (t != NULL && strcmp(t, "DisruptionTarget") == 0)
			c = json_object_array_get_idx(conds, i);
	}
	stamp(kc_clock_wall(), ts);
	if (c == NULL) {
		if ((c = json_object_new_object()) == NULL || kc_json_append(conds, c) < 0)
			goto oom;
	} else {
		const char *os = kc_json_str(c, "status");
		const char *olt = kc_json_str(c, "lastTransitionTime");

		if (os != NULL && strcmp(os, "True") == 0 && olt != NULL)
			(void)kc_strlcpy(ts, olt, sizeof(ts));
	}
	if (kc_json_set_str(c, "type", "DisruptionTarget") < 0 ||
	    kc_json_set_str(c, "status", "True") < 0 ||
	    (!json_object_object_get_ex(c, "lastProbeTime", NULL) &&
	    kc_json_put_null(c, "lastProbeTime") < 0) ||
	    kc_json_set_str(c, "lastTransitionTime", ts) < 0 ||
	    kc_json_set_str(c, "reason", "EvictionByEvictionAPI") < 0 ||
	    kc_json_set_str(c, "message", "Eviction API: evicting") < 0)
		goto oom;
	r = storage_update(e->dc->store, e->pods->coll, next, obj_rv(pod), NULL);
	next = NULL;
	if (r < 0 && r != DC_UNCHANGED) {
		errors_internal(e->resp, r);
		return r;
	}
	r = api_delete_object_opts(e->dc, e->pods, e->ns, e->name, e->grace,
	    e->policy[0] != '\0' ? e->policy : NULL, e->pre_uid[0] != '\0' ? e->pre_uid : NULL);
	if (r == KC_ENOTFOUND) {
		errors_notfound(e->resp, e->pods, e->name);
		return r;
	}
	if (r == KC_ECONFLICT) {
		pod_conflict(e, "%s%s", "the object has been modified; please apply your "
		    "changes to the latest version and try again", "");
		return r;
	}
	if (r < 0) {
		errors_reply(e->resp, r == -ENOMEM ? KC_EINTERNAL : r, "%s",
		    r == -ENOMEM ? "Internal error occurred: out of memory" : kc_strerror(r));
		return r;
	}
	created_status(e->resp, true, NULL, 201);
	return 0;
oom:
	if (next != NULL)
		json_object_put(next);
	errors_internal(e->resp, -ENOMEM);
	return -ENOMEM;
}

/* EvictionREST.Create. */
static void
evict(struct dc *dc, const struct dc_rtype *pods, const struct dc_req *req,
    const struct dc_route *route, struct dc_resp *resp)
{
	struct evict e = { .dc = dc, .pods = pods, .req = req, .resp = resp,
	    .ns = route->ns, .name = route->name, .grace = -1 };
	struct json_object *ev = NULL, **pdbs = NULL;
	const struct json_object *pod, *pdb;
	const char *phase, *ename, *pol;
	char rv[32] = "";
	size_t npdbs = 0;
	int r;

	if (decode_eviction(&e, &ev) < 0)
		return;
	ename = kc_json_str(ev, "metadata", "name");
	if (ename == NULL || strcmp(ename, route->name) != 0) {
		errors_reply(resp, KC_EBADREQUEST, "name in URL does not match name in "
		    "Eviction object");
		goto out;
	}
	if (eviction_options(&e, ev) < 0)
		goto out;
	if ((pod = coll_get(pods->coll, e.ns, e.name)) == NULL) {
		errors_notfound(resp, pods, e.name);
		goto out;
	}
	(void)kc_strlcpy(rv, kc_json_str(pod, "metadata", "resourceVersion") != NULL ?
	    kc_json_str(pod, "metadata", "resourceVersion") : "", sizeof(rv));
	/* canIgnorePDB: Pending, terminal or terminating pods just go. */
	phase = kc_json_str(pod, "status", "phase");
	if (deleting(pod) || (phase != NULL && (strcmp(phase, "Succeeded") == 0 ||
	    strcmp(phase, "Failed") == 0 || strcmp(phase, "Pending") == 0))) {
		bool enforce = !deleting(pod) && strcmp(phase, "Pending") == 0;

		(void)condition_and_delete(&e, enforce ? rv : NULL);
		goto out;
	}
	if ((r = matching_pdbs(dc, pod, &pdbs, &npdbs)) < 0) {
		errors_internal(resp, r);
		goto out;
	}
	if (npdbs > 1) {
		/* Upstream returns this Status as the result: HTTP 201, code 500. */
		created_status(resp, false, MULTI_PDB_MSG, 500);
		goto out;
	}
	if (npdbs == 0) {
		(void)condition_and_delete(&e, NULL);
		goto out;
	}
	pdb = pdbs[0];
	pol = kc_json_str(pdb, "spec", "unhealthyPodEvictionPolicy");
	if (!pod_ready(pod)) {
		int64_t cur = kc_json_int(pdb, 0, "status", "currentHealthy");
		int64_t want = kc_json_int(pdb, 0, "status", "desiredHealthy");

		if ((pol != NULL && strcmp(pol, "AlwaysAllow") == 0) ||
		    (cur >= want && want > 0)) {
			/* Unhealthy: not counted, nothing to decrement. */
			(void)condition_and_delete(&e, rv);
			goto out;
		}
	}
	if (check_and_decrement(&e, pdb) < 0)
		goto out;
	(void)condition_and_delete(&e, NULL);
out:
	objs_free(pdbs, npdbs);
	if (ev != NULL)
		json_object_put(ev);
}

/* pods/eviction, a subresource of disruption_plugin. */
static int
pod_eviction(struct dc *dc, const struct dc_rtype *rt, const struct dc_req *req,
    const struct dc_route *route, struct dc_resp *resp)
{
	if (route->name[0] == '\0')
		return DC_DECLINED;
	evict(dc, rt, req, route, resp);
	return 0;
}

/*
 * Setup
 */

int
disruption_init(struct dc *dc)
{
	struct disruption *d;
	int r;

	if (plugin_state(dc, &disruption_plugin) != NULL)
		return 0;
	if ((d = kc_calloc(1, sizeof(*d))) == NULL)
		return -ENOMEM;
	d->dc = dc;
	timer_init(&d->timer, dc, tick, d);
	if ((r = storage_subscribe(dc->store, on_event, d)) < 0) {
		kc_free(d);
		return r;
	}
	plugin_set_state(dc, &disruption_plugin, d);
	/* Budgets restored from disk get a first look. */
	d->all = true;
	kick(d);
	return 0;
}

void
disruption_fini(struct dc *dc)
{
	struct disruption *d = plugin_state(dc, &disruption_plugin);

	if (d == NULL)
		return;
	timer_cancel(&d->timer);
	storage_unsubscribe(dc->store, on_event, d);
	for (size_t i = 0; i < d->ndirty; i++)
		kc_free(d->dirty[i]);
	kc_free(d);
	plugin_set_state(dc, &disruption_plugin, NULL);
}

int
disruption_sync(struct dc *dc)
{
	struct disruption *d = plugin_state(dc, &disruption_plugin);
	time_t recheck = 0;

	if (d == NULL)
		return -EINVAL;
	return sync_all(d, kc_clock_wall(), &recheck);
}

static int
disruption_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	(void)cfg;
	(void)st;
	return disruption_init(dc);
}

const struct dc_plugin disruption_plugin = {
	.name = "disruption",
	.init = disruption_start,
	.fini = disruption_fini,
	.subres = (const struct dc_plugin_subres []){
		{ "", "pods", "eviction", pod_eviction },
	},
	.nsubres = 1,
	.types = (const struct dc_plugin_type []){
		{ "policy", "poddisruptionbudgets", &ops_pdb },
	},
	.ntypes = 1,
};

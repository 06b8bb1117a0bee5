/*
 * apps.c: apps/v1 Deployments and ReplicaSets, and the deployment and
 * replicaset controllers of kube-controller-manager, so that "kubectl
 * rollout" and "kubectl scale" behave as against a real cluster.
 *
 * Three parts, as upstream splits them:
 *
 *	the strategies	pkg/registry/apps/{deployment,replicaset}: defaults
 *			(replicas 1; strategy RollingUpdate 25%/25%,
 *			revisionHistoryLimit 10, progressDeadlineSeconds 600;
 *			the pod template gets the defaults pods get), the
 *			status reset on create, validation with upstream's
 *			messages (selector required, non-empty, matching the
 *			template's labels and immutable; restartPolicy Always;
 *			the template as a pod; strategy, counts, deadlines)
 *	scale		<resource>/scale (autoscaling/v1 Scale): GET, PUT,
 *			and PATCH (JSON, merge, strategic merge), a
 *			subresource of apps_plugin
 *	the controllers	pkg/controller/replicaset and pkg/controller/
 *			deployment. A storage subscription marks the
 *			namespaces whose Deployments, ReplicaSets or
 *			ReplicaSet-owned pods changed and arms a short loop
 *			timer (bursts coalesce); a pass syncs every
 *			ReplicaSet there (pods "<rs>-<5 chars>" created or
 *			deleted to match spec.replicas, least valuable pods
 *			first; status replicas, fullyLabeledReplicas,
 *			readyReplicas, availableReplicas after
 *			minReadySeconds, observedGeneration), then every
 *			Deployment (the new ReplicaSet
 *			"<deploy>-<pod-template-hash>" found by template or
 *			created, revisions and their history, RollingUpdate
 *			honouring maxSurge and maxUnavailable, Recreate,
 *			paused, revisionHistoryLimit cleanup, status with the
 *			Available and Progressing conditions and their
 *			upstream reasons). Every write goes through storage
 *			with the controller's field manager and only when
 *			something changed, so an idle cluster stays idle. A
 *			deadline (minReadySeconds, progressDeadlineSeconds)
 *			re-arms the timer for a full pass.
 *
 * Pods and ReplicaSets belong to the owner their controller
 * ownerReference names; orphans matching an owner's selector are adopted
 * (not released when their labels stop matching), and deleting an owner
 * leaves its dependents to the garbage collector. A change of replicas
 * while several ReplicaSets are active is spread over them in proportion
 * (apps_scale_plan()), as upstream's scale() does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/hash.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/patch.h>
#include <kc/sbuf.h>
#include <kc/selector.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "devcluster.h"
#include "apps.h"
#include "table.h"

#define APPS_GROUP		"apps"
#define APPS_DELAY_MS		20	/* coalescing delay after a change */
#define APPS_DIRTY_MAX		256	/* namespaces queued before a full pass */
#define APPS_BURST		500	/* pods created or deleted per pass (burstReplicas) */
#define APPS_RETRY_S		5	/* seconds to a refused pod create's retry */
#define APPS_OWNED_MAX		1024	/* ReplicaSets of one Deployment considered */
#define APPS_HASH_DEPTH		64	/* nesting levels hashed */
#define APPS_REV_HISTORY_MAX	2000	/* revision-history length (upstream's default) */
#define MANAGER			"kube-controller-manager"
#define RS_CONTROLLER		"replicaset-controller"
#define DEPLOY_CONTROLLER	"deployment-controller"
#define ANN_CHANGE_CAUSE	"kubernetes.io/change-cause"
#define ANN_LAST_APPLIED	"kubectl.kubernetes.io/last-applied-configuration"
#define ANN_ROLLBACK		"deprecated.deployment.rollback.to"
#define SELECTOR_MISMATCH	"`selector` does not match template `labels`"

struct apps {
	struct dc		*dc;
	struct dc_timer		 timer;
	bool			 ticking;
	bool			 all;		/* sync every namespace next */
	char			*dirty[APPS_DIRTY_MAX];
	size_t			 ndirty;
	time_t			 recheck;	/* earliest deadline; 0: none */
	uint64_t		 event_seq;	/* Event names */
};

/*
 * Small helpers
 */

static size_t
arr_len(const struct json_object *a)
{
	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static bool
str_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static bool
deleting(const struct json_object *obj)
{
	return kc_json_get(obj, "metadata", "deletionTimestamp") != NULL;
}

static time_t
time_of(const char *s)
{
	int64_t sec = 0;
	int32_t nsec = 0;

	if (s == NULL || table_time_parse(s, &sec, &nsec) < 0)
		return 0;
	return (time_t)sec;
}

static int64_t
replicas_of(const struct json_object *o)
{
	return kc_json_int(o, 1, "spec", "replicas");
}

/* The uid of the controller ownerReference of 'obj' of 'kind', or NULL. */
static const char *
controller_uid(const struct json_object *obj, const char *kind)
{
	struct json_object *refs = kc_json_get(obj, "metadata", "ownerReferences");

	for (size_t i = 0; i < arr_len(refs); i++) {
		struct json_object *r = json_object_array_get_idx(refs, i);

		if (kc_json_bool(r, false, "controller") && str_eq(kc_json_str(r, "kind"), kind))
			return kc_json_str(r, "uid");
	}
	return NULL;
}

static bool
owned_by(const struct json_object *obj, const char *kind, const struct json_object *owner)
{
	return str_eq(controller_uid(obj, kind), kc_json_str(owner, "metadata", "uid"));
}

/* IsPodReady; '*ret_since' the Ready condition's lastTransitionTime. */
static bool
pod_ready(const struct json_object *pod, time_t *ret_since)
{
	struct json_object *conds = kc_json_get(pod, "status", "conditions");

	for (size_t i = 0; i < arr_len(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);

		if (str_eq(kc_json_str(c, "type"), "Ready")) {
			if (ret_since != NULL)
				*ret_since = time_of(kc_json_str(c, "lastTransitionTime"));
			return str_eq(kc_json_str(c, "status"), "True");
		}
	}
	return false;
}

/* controller.IsPodActive: not terminal, not being deleted. */
static bool
pod_active(const struct json_object *pod)
{
	const char *phase = kc_json_str(pod, "status", "phase");

	return !deleting(pod) && !str_eq(phase, "Succeeded") && !str_eq(phase, "Failed");
}

static void
note_deadline(time_t *recheck, time_t t)
{
	if (t > 0 && (*recheck == 0 || t < *recheck))
		*recheck = t;
}

/* IsPodAvailable: Ready for at least minReadySeconds. */
static bool
pod_available(const struct json_object *pod, int64_t min_ready, time_t now, time_t *recheck)
{
	time_t since = 0;

	if (!pod_ready(pod, &since))
		return false;
	if (min_ready <= 0 || since + min_ready <= now)
		return true;
	note_deadline(recheck, since + min_ready);
	return false;
}

/*
 * The pod-template-hash
 */

static int
key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int
hash_json(uint32_t *h, const struct json_object *o, unsigned depth)
{
	char num[64];
	int r = 0;

	if (depth > APPS_HASH_DEPTH)
		return -E2BIG;
	switch (json_object_get_type(o)) {
	case json_type_null:
		*h = kc_fnv1a32(*h, "n", 1);
		break;
	case json_type_boolean:
		*h = kc_fnv1a32(*h, json_object_get_boolean(o) ? "t" : "f", 1);
		break;
	case json_type_int:
		(void)snprintf(num, sizeof(num), "i%" PRId64 ";", json_object_get_int64(o));
		*h = kc_fnv1a32_str(*h, num);
		break;
	case json_type_double:
		(void)snprintf(num, sizeof(num), "d%.17g;", json_object_get_double(o));
		*h = kc_fnv1a32_str(*h, num);
		break;
	case json_type_string: {
		size_t n = (size_t)json_object_get_string_len(o);

		(void)snprintf(num, sizeof(num), "s%zu:", n);
		*h = kc_fnv1a32_str(*h, num);
		*h = kc_fnv1a32(*h, json_object_get_string((struct json_object *)(uintptr_t)o), n);
		break;
	}
	case json_type_array:
		*h = kc_fnv1a32(*h, "[", 1);
		for (size_t i = 0; i < arr_len(o) && r == 0; i++)
			r = hash_json(h, json_object_array_get_idx(o, i), depth + 1);
		*h = kc_fnv1a32(*h, "]", 1);
		break;
	case json_type_object: {
		size_t n = (size_t)json_object_object_length(o), k = 0;
		const char **keys;

		if (n == 0) {
			*h = kc_fnv1a32(*h, "{}", 2);
			break;
		}
		if ((keys = kc_calloc(n, sizeof(*keys))) == NULL)
			return -ENOMEM;
		json_object_object_foreach((struct json_object *)(uintptr_t)o, key, v) {
			(void)v;
			if (k < n)
				keys[k++] = key;
		}
		qsort(keys, k, sizeof(*keys), key_cmp);
		*h = kc_fnv1a32(*h, "{", 1);
		for (size_t i = 0; i < k && r == 0; i++) {
			*h = kc_fnv1a32(*h, keys[i], strlen(keys[i]) + 1);
			r = hash_json(h, kc_json_get(o, keys[i]), depth + 1);
		}
		*h = kc_fnv1a32(*h, "}", 1);
		kc_free(keys);
		break;
	}
	}
	return r;
}

int
apps_template_hash(const struct json_object *template, int64_t collision,
    char buf[APPS_HASH_MAX])
{
	static const char alphanums[] = "bcdfghjklmnpqrstvwxz2456789";
	uint32_t h = KC_FNV1A32_INIT;
	char dec[16];
	size_t i;
	int r;

	if ((r = hash_json(&h, template, 0)) < 0)
		return r == -E2BIG ? 0 : r;	/* a template that deep was refused before */
	if (collision >= 0) {
		uint8_t b[8] = { 0 };
		uint32_t c = (uint32_t)collision;

		for (i = 0; i < 4; i++)
			b[i] = (uint8_t)(c >> (8 * i));
		h = kc_fnv1a32(h, b, sizeof(b));
	}
	(void)snprintf(dec, sizeof(dec), "%" PRIu32, h);
	for (i = 0; dec[i] != '\0' && i + 1 < APPS_HASH_MAX; i++)
		buf[i] = alphanums[(unsigned char)dec[i] % (sizeof(alphanums) - 1)];
	buf[i] = '\0';
	return 0;
}

/*
 * Rolling-update arithmetic
 */

int
apps_scaled(const struct json_object *v, int64_t total, bool round_up, int64_t *ret)
{
	const char *s;
	size_t n;
	int64_t x = 0;

	if (json_object_is_type(v, json_type_int)) {
		*ret = json_object_get_int64(v);
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	s = json_object_get_string((struct json_object *)(uintptr_t)v);
	n = strlen(s);
	if (n < 2 || s[n - 1] != '%')
		return -EINVAL;
	for (size_t i = 0; i + 1 < n; i++) {
		if (s[i] < '0' || s[i] > '9' || x > INT32_MAX)
			return -EINVAL;
		x = x * 10 + (s[i] - '0');
	}
	*ret = round_up ? (x * total + 99) / 100 : x * total / 100;
	return 0;
}

int
apps_fenceposts(const struct json_object *max_surge, const struct json_object *max_unavailable,
    int64_t replicas, int64_t *ret_surge, int64_t *ret_unavailable)
{
	struct json_object *quarter = NULL;
	int64_t s, u;
	int r;

	if ((max_surge == NULL || max_unavailable == NULL) &&
	    (quarter = json_object_new_string("25%")) == NULL)
		return -ENOMEM;
	r = apps_scaled(max_surge != NULL ? max_surge : quarter, replicas, true, &s);
	if (r == 0)
		r = apps_scaled(max_unavailable != NULL ? max_unavailable : quarter, replicas,
		    false, &u);
	if (quarter != NULL)
		json_object_put(quarter);
	if (r < 0)
		return r;
	if (s == 0 && u == 0)
		u = 1;
	*ret_surge = s;
	*ret_unavailable = u;
	return 0;
}

static int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

void
apps_rolling_plan(struct apps_rs *rs, size_t n, int64_t replicas, int64_t surge,
    int64_t unavailable)
{
	int64_t all = 0, old = 0, min_available, max_down, avail = 0, cleaned = 0;
	int64_t cur = rs[0].spec, base = cur < 0 ? 0 : cur, next;

	/* reconcileNewReplicaSet, with NewRSNewReplicas */
	for (size_t i = 1; i < n; i++)
		all += rs[i].spec;
	all += base;
	if (cur == replicas)
		next = cur;
	else if (cur > replicas)
		next = replicas;
	else if (all >= replicas + surge)
		next = base;
	else
		next = base + min64(replicas + surge - all, replicas - base);
	rs[0].spec = next;
	if (cur >= 0 && next != cur)
		return;		/* scaled: look again after this write */
	/* reconcileOldReplicaSets */
	for (size_t i = 1; i < n; i++)
		old += rs[i].spec;
	if (old == 0)
		return;
	all = old + rs[0].spec;
	if (unavailable > replicas)
		unavailable = replicas;
	min_available = replicas - unavailable;
	max_down = all - min_available - (rs[0].spec - rs[0].available);
	if (max_down <= 0)
		return;
	/* cleanupUnhealthyReplicas */
	for (size_t i = 1; i < n && cleaned < max_down; i++) {
		int64_t unhealthy = rs[i].spec - rs[i].available, down;

		if (rs[i].spec == 0 || unhealthy <= 0)
			continue;
		down = min64(max_down - cleaned, unhealthy);
		rs[i].spec -= down;
		cleaned += down;
	}
	/* scaleDownOldReplicaSetsForRollingUpdate */
	for (size_t i = 0; i < n; i++)
		avail += rs[i].available;
	if (avail <= min_available)
		return;
	max_down = avail - min_available;
	cleaned = 0;
	for (size_t i = 1; i < n && cleaned < max_down; i++) {
		int64_t down;

		if (rs[i].spec == 0)
			continue;
		down = min64(rs[i].spec, max_down - cleaned);
		rs[i].spec -= down;
		cleaned += down;
	}
}

/* ReplicaSetsBySizeNewer (up) or BySizeOlder (down): larger first, then by age. */
static int
size_cmp(const struct apps_scale_rs *a, const struct apps_scale_rs *b, bool newer)
{
	if (a->spec != b->spec)
		return a->spec > b->spec ? -1 : 1;
	if (a->order != b->order)
		return (a->order > b->order) == newer ? -1 : 1;
	return 0;
}

/* getReplicaSetFraction */
static int64_t
fraction(const struct apps_scale_rs *rs, int64_t replicas, int64_t surge,
    int64_t status_replicas)
{
	int64_t before = rs->max_before > 0 ? rs->max_before : status_replicas, max;

	if (replicas == 0)
		return -rs->spec;
	if (before <= 0)
		return 0;
	max = replicas + surge;
	/* math.Round of spec * max / before, all of them positive */
	return (2 * rs->spec * max + before) / (2 * before) - rs->spec;
}

void
apps_scale_plan(struct apps_scale_rs *rs, size_t n, int64_t replicas, int64_t surge,
    int64_t status_replicas, bool rolling)
{
	size_t nactive = 0, one = SIZE_MAX, newest = SIZE_MAX, inew = SIZE_MAX;
	size_t idx[APPS_OWNED_MAX + 1], k = 0;
	int64_t all = 0, to_add, added = 0;

	for (size_t i = 0; i < n; i++) {
		if (rs[i].spec > 0) {
			nactive++;
			one = i;
			all += rs[i].spec;
		}
		if (rs[i].is_new)
			inew = i;
		if (!rs[i].is_new && (newest == SIZE_MAX || rs[i].order > rs[newest].order))
			newest = i;
	}
	/* FindActiveOrLatest */
	if (nactive <= 1) {
		size_t t = nactive == 1 ? one : inew != SIZE_MAX ? inew : newest;

		if (t != SIZE_MAX)
			rs[t].spec = replicas;
		return;
	}
	/* IsSaturated */
	if (inew != SIZE_MAX && rs[inew].desired == replicas && rs[inew].spec == replicas &&
	    rs[inew].available == replicas) {
		for (size_t i = 0; i < n; i++)
			if (i != inew)
				rs[i].spec = 0;
		return;
	}
	if (!rolling)
		return;
	to_add = (replicas > 0 ? replicas + surge : 0) - all;
	if (to_add == 0)
		return;
	for (size_t i = 0; i < n && k < KC_ARRAY_SIZE(idx); i++)
		if (rs[i].spec > 0)
			idx[k++] = i;
	if (k == 0)
		return;
	/* A short insertion sort: a Deployment has few active ReplicaSets. */
	for (size_t i = 1; i < k; i++)
		for (size_t j = i; j > 0 && size_cmp(&rs[idx[j]], &rs[idx[j - 1]], to_add > 0) < 0;
		    j--) {
			size_t t = idx[j];

			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
	{
		int64_t next[APPS_OWNED_MAX + 1];

		for (size_t i = 0; i < k; i++) {
			struct apps_scale_rs *r = &rs[idx[i]];
			int64_t p = 0;

			if (to_add != added) {
				int64_t f = fraction(r, replicas, surge, status_replicas);
				int64_t allowed = to_add - added;

				p = to_add > 0 ? min64(f, allowed) : (f > allowed ? f : allowed);
			}
			next[i] = r->spec + p;
			added += p;
		}
		next[0] += to_add - added;
		if (next[0] < 0)
			next[0] = 0;
		for (size_t i = 0; i < k; i++)
			rs[idx[i]].spec = next[i];
	}
}

/*
 * Validation
 */

/* Go's %#v of a map[string]string: map[string]string{"a":"b", "c":"d"}. */
static void
go_map(struct kc_sbuf *b, const struct json_object *m)
{
	size_t n = json_object_is_type(m, json_type_object) ?
	    (size_t)json_object_object_length(m) : 0, k = 0;
	const char *keys[64];

	if (m == NULL) {
		kc_sbuf_puts(b, "map[string]string(nil)");
		return;
	}
	kc_sbuf_puts(b, "map[string]string{");
	if (n > 0) {
		json_object_object_foreach((struct json_object *)(uintptr_t)m, key, v) {
			(void)v;
			if (k < KC_ARRAY_SIZE(keys))
				keys[k++] = key;
		}
		qsort(keys, k, sizeof(*keys), key_cmp);
		for (size_t i = 0; i < k; i++) {
			const char *val = kc_json_str(m, keys[i]);

			if (i > 0)
				kc_sbuf_puts(b, ", ");
			kc_sbuf_quote(b, keys[i], strlen(keys[i]));
			kc_sbuf_putc(b, ':');
			kc_sbuf_quote(b, val != NULL ? val : "", val != NULL ? strlen(val) : 0);
		}
	}
	kc_sbuf_putc(b, '}');
}

/* Go's %#v of a *metav1.LabelSelector, as field.Invalid prints it. */
static void
go_selector(struct kc_sbuf *b, const struct json_object *sel)
{
	struct json_object *ml = kc_json_get(sel, "matchLabels");
	struct json_object *me = kc_json_get(sel, "matchExpressions");

	kc_sbuf_puts(b, "v1.LabelSelector{MatchLabels:");
	go_map(b, ml);
	kc_sbuf_puts(b, ", MatchExpressions:[]v1.LabelSelectorRequirement");
	if (arr_len(me) == 0) {
		kc_sbuf_puts(b, me == NULL ? "(nil)}" : "{}}");
		return;
	}
	kc_sbuf_putc(b, '{');
	for (size_t i = 0; i < arr_len(me); i++) {
		struct json_object *e = json_object_array_get_idx(me, i), *vals;
		const char *key = kc_json_str(e, "key"), *op = kc_json_str(e, "operator");

		if (i > 0)
			kc_sbuf_puts(b, ", ");
		kc_sbuf_puts(b, "v1.LabelSelectorRequirement{Key:");
		kc_sbuf_quote(b, key != NULL ? key : "", key != NULL ? strlen(key) : 0);
		kc_sbuf_puts(b, ", Operator:");
		kc_sbuf_quote(b, op != NULL ? op : "", op != NULL ? strlen(op) : 0);
		kc_sbuf_puts(b, ", Values:[]string");
		vals = kc_json_get(e, "values");
		if (vals == NULL) {
			kc_sbuf_puts(b, "(nil)}");
			continue;
		}
		kc_sbuf_putc(b, '{');
		for (size_t j = 0; j < arr_len(vals); j++) {
			const char *v = json_object_get_string(json_object_array_get_idx(vals, j));

			if (j > 0)
				kc_sbuf_puts(b, ", ");
			kc_sbuf_quote(b, v != NULL ? v : "", v != NULL ? strlen(v) : 0);
		}
		kc_sbuf_puts(b, "}}");
	}
	kc_sbuf_puts(b, "}}");
}

static void
invalid_int(struct dc_errs *errs, const char *field, int64_t v, const char *detail)
{
	char val[32];

	(void)snprintf(val, sizeof(val), "%" PRId64, v);
	errs_invalid(errs, field, val, detail);
}

static void
nonneg(const struct json_object *obj, struct dc_errs *errs, const char *field,
    const char *a, const char *b)
{
	struct json_object *v = b != NULL ? kc_json_get(obj, a, b) : kc_json_get(obj, a);

	if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) < 0)
		invalid_int(errs, field, json_object_get_int64(v),
		    "must be greater than or equal to 0");
}

/* The template validated as a pod, its field paths under spec.template. */
static int
validate_template(struct dc_write_ctx *wc, const struct json_object *obj,
    struct dc_errs *errs, bool rolling_only_always)
{
	struct json_object *tpl = kc_json_get(obj, "spec", "template");
	struct dc_write_ctx pwc = *wc;
	size_t first = errs->n;
	const char *rp;
	int r;

	if (tpl == NULL) {
		errs_required(errs, "spec.template", NULL);
		return 0;
	}
	pwc.subresource = NULL;
	pwc.old = NULL;
	if (ops_pod.validate != NULL && (r = ops_pod.validate(&pwc, tpl, NULL, errs)) < 0)
		return r;
	for (size_t i = first; i < errs->n; i++) {
		char f[sizeof(errs->items[i].field)];

		(void)snprintf(f, sizeof(f), "spec.template.%s", errs->items[i].field);
		(void)kc_strlcpy(errs->items[i].field, f, sizeof(errs->items[i].field));
	}
	rp = kc_json_str(tpl, "spec", "restartPolicy");
	if (rolling_only_always && rp != NULL && !str_eq(rp, "Always"))
		errs_unsupported(errs, "spec.template.spec.restartPolicy", rp,
		    (const char *const []){ "Always", NULL });
	return 0;
}

/* The selector (required, non-empty, valid, matching the template's labels). */
static void
validate_selector(const struct json_object *obj, const struct json_object *old,
    struct dc_errs *errs)
{
	struct json_object *sel = kc_json_get(obj, "spec", "selector");
	struct json_object *labels = kc_json_get(obj, "spec", "template", "metadata", "labels");
	struct kc_label_selector *ls = NULL;
	struct kc_status st = { 0 };
	char val[1024];
	struct kc_sbuf b;

	if (old != NULL && !kc_json_equal(sel, kc_json_get(old, "spec", "selector"))) {
		kc_sbuf_init(&b, val, sizeof(val));
		go_selector(&b, sel);
		errs_invalid(errs, "spec.selector", val, "field is immutable");
	}
	if (sel == NULL) {
		errs_required(errs, "spec.selector", NULL);
		return;
	}
	if (arr_len(kc_json_get(sel, "matchExpressions")) == 0 &&
	    json_object_object_length(kc_json_obj_of(sel, "matchLabels") != NULL ?
	    kc_json_obj_of(sel, "matchLabels") : sel) == 0) {
		kc_sbuf_init(&b, val, sizeof(val));
		go_selector(&b, sel);
		errs_invalid(errs, "spec.selector", val,
		    "empty selector is invalid for deployment");
		return;
	}
	if (kc_label_selector_from_json(sel, &ls, &st) < 0) {
		kc_sbuf_init(&b, val, sizeof(val));
		go_selector(&b, sel);
		errs_invalid(errs, "spec.selector", val, st.message);
		return;
	}
	if (!kc_label_selector_matches(ls, labels)) {
		kc_sbuf_init(&b, val, sizeof(val));
		go_map(&b, labels);
		errs_invalid(errs, "spec.template.metadata.labels", val, SELECTOR_MISMATCH);
	}
	kc_label_selector_free(ls);
}

static void
validate_status(const struct json_object *obj, struct dc_errs *errs)
{
	static const char *const counts[] = {
		"replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
		"unavailableReplicas", "fullyLabeledReplicas", "observedGeneration",
		"collisionCount", NULL
	};
	char f[64];

	for (size_t i = 0; counts[i] != NULL; i++) {
		(void)snprintf(f, sizeof(f), "status.%s", counts[i]);
		nonneg(obj, errs, f, "status", counts[i]);
	}
}

static int
deploy_validate(struct dc_write_ctx *wc, const struct json_object *obj,
    const struct json_object *old, struct dc_errs *errs)
{
	struct json_object *strat = kc_json_get(obj, "spec", "strategy");
	struct json_object *ru = kc_json_get(strat, "rollingUpdate");
	const char *type = kc_json_str(strat, "type");
	int64_t min_ready = kc_json_int(obj, 0, "spec", "minReadySeconds");
	struct json_object *pds = kc_json_get(obj, "spec", "progressDeadlineSeconds");
	int r;

	if (wc->subresource != NULL) {
		validate_status(obj, errs);
		return 0;
	}
	nonneg(obj, errs, "spec.replicas", "spec", "replicas");
	nonneg(obj, errs, "spec.minReadySeconds", "spec", "minReadySeconds");
	nonneg(obj, errs, "spec.revisionHistoryLimit", "spec", "revisionHistoryLimit");
	nonneg(obj, errs, "spec.progressDeadlineSeconds", "spec", "progressDeadlineSeconds");
	validate_selector(obj, old, errs);
	if ((r = validate_template(wc, obj, errs, true)) < 0)
		return r;
	if (type != NULL && !str_eq(type, "RollingUpdate") && !str_eq(type, "Recreate"))
		errs_unsupported(errs, "spec.strategy.type", type,
		    (const char *const []){ "Recreate", "RollingUpdate", NULL });
	if (str_eq(type, "Recreate") && ru != NULL)
		errs_forbidden(errs, "spec.strategy.rollingUpdate",
		    "may not be specified when strategy `type` is 'Recreate'");
	if (str_eq(type, "RollingUpdate") && ru != NULL) {
		int64_t s = -1, u = -1;
		struct json_object *ms = kc_json_get(ru, "maxSurge");
		struct json_object *mu = kc_json_get(ru, "maxUnavailable");

		if (ms != NULL && apps_scaled(ms, 100, true, &s) < 0)
			errs_invalid(errs, "spec.strategy.rollingUpdate.maxSurge",
			    json_object_get_string(ms), "a valid percent string must be a "
			    "numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
			    "regex used for validation is '[0-9]+%')");
		if (mu != NULL && apps_scaled(mu, 100, false, &u) < 0)
			errs_invalid(errs, "spec.strategy.rollingUpdate.maxUnavailable",
			    json_object_get_string(mu), "a valid percent string must be a "
			    "numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
			    "regex used for validation is '[0-9]+%')");
		if (s < -1 || u < -1 || (json_object_is_type(ms, json_type_int) && s < 0) ||
		    (json_object_is_type(mu, json_type_int) && u < 0))
			errs_invalid(errs, "spec.strategy.rollingUpdate", s < 0 ?
			    json_object_get_string(ms) : json_object_get_string(mu),
			    "must be greater than or equal to 0");
		if (u > 100 && json_object_is_type(mu, json_type_string))
			errs_invalid(errs, "spec.strategy.rollingUpdate.maxUnavailable",
			    json_object_get_string(mu), "must not be greater than 100%");
		if (s == 0 && u == 0)
			errs_invalid(errs, "spec.strategy.rollingUpdate.maxUnavailable",
			    json_object_get_string(mu), "may not be 0 when `maxSurge` is 0");
	}
	if (json_object_is_type(pds, json_type_int) && json_object_get_int64(pds) <= min_ready)
		invalid_int(errs, "spec.progressDeadlineSeconds", json_object_get_int64(pds),
		    "must be greater than minReadySeconds");
	return 0;
}

static int
rs_validate(struct dc_write_ctx *wc, const struct json_object *obj,
    const struct json_object *old, struct dc_errs *errs)
{
	int r;

	if (wc->subresource != NULL) {
		validate_status(obj, errs);
		return 0;
	}
	nonneg(obj, errs, "spec.replicas", "spec", "replicas");
	nonneg(obj, errs, "spec.minReadySeconds", "spec", "minReadySeconds");
	validate_selector(obj, old, errs);
	if ((r = validate_template(wc, obj, errs, true)) < 0)
		return r;
	return 0;
}

/*
 * Defaults and status reset
 */

static int
set_default(struct json_object *o, const char *key, struct json_object *v)
{
	if (v == NULL)
		return -ENOMEM;
	if (kc_json_get(o, key) != NULL) {
		json_object_put(v);
		return 0;
	}
	return kc_json_put(o, key, v);
}

static int
template_defaults(struct dc_write_ctx *wc, struct json_object *spec)
{
	struct json_object *tpl = kc_json_obj_of(spec, "template");

	if (tpl == NULL || ops_pod.defaults == NULL)
		return 0;
	return ops_pod.defaults(wc, tpl);
}

static int
deploy_defaults(struct dc_write_ctx *wc, struct json_object *obj)
{
	struct json_object *spec = kc_json_ensure_obj(obj, "spec"), *strat, *ru;
	int r;

	if (spec == NULL || (strat = kc_json_ensure_obj(spec, "strategy")) == NULL)
		return -ENOMEM;
	if ((r = set_default(spec, "replicas", json_object_new_int(1))) < 0 ||
	    (r = set_default(strat, "type", json_object_new_string("RollingUpdate"))) < 0 ||
	    (r = set_default(spec, "revisionHistoryLimit", json_object_new_int(10))) < 0 ||
	    (r = set_default(spec, "progressDeadlineSeconds", json_object_new_int(600))) < 0)
		return r;
	if (str_eq(kc_json_str(strat, "type"), "RollingUpdate")) {
		if ((ru = kc_json_ensure_obj(strat, "rollingUpdate")) == NULL)
			return -ENOMEM;
		if ((r = set_default(ru, "maxUnavailable", json_object_new_string("25%"))) < 0 ||
		    (r = set_default(ru, "maxSurge", json_object_new_string("25%"))) < 0)
			return r;
	}
	return template_defaults(wc, spec);
}

static int
rs_defaults(struct dc_write_ctx *wc, struct json_object *obj)
{
	struct json_object *spec = kc_json_ensure_obj(obj, "spec");
	int r;

	if (spec == NULL)
		return -ENOMEM;
	if ((r = set_default(spec, "replicas", json_object_new_int(1))) < 0)
		return r;
	return template_defaults(wc, spec);
}

static int
deploy_prepare_create(struct dc_write_ctx *wc, struct json_object *obj)
{
	(void)wc;
	return kc_json_put(obj, "status", json_object_new_object());
}

static int
rs_prepare_create(struct dc_write_ctx *wc, struct json_object *obj)
{
	struct json_object *st = json_object_new_object();

	(void)wc;
	if (st == NULL || kc_json_set_int(st, "replicas", 0) < 0) {
		if (st != NULL)
			json_object_put(st);
		return -ENOMEM;
	}
	return kc_json_put(obj, "status", st);
}

const struct dc_type_ops ops_deployment = {
	.defaults = deploy_defaults,
	.prepare_create = deploy_prepare_create,
	.validate = deploy_validate,
};

const struct dc_type_ops ops_replicaset = {
	.defaults = rs_defaults,
	.prepare_create = rs_prepare_create,
	.validate = rs_validate,
};

/*
 * The scale subresource
 */

static struct json_object *
scale_of(const struct json_object *obj)
{
	static const char *const keep[] = {
		"name", "namespace", "uid", "resourceVersion", "creationTimestamp", NULL
	};
	struct json_object *s = json_object_new_object(), *meta, *spec, *status;
	struct json_object *sel = kc_json_get(obj, "spec", "selector");
	struct kc_label_selector *ls = NULL;
	struct kc_status st = { 0 };
	char *text = NULL;

	if (s == NULL || kc_json_set_str(s, "kind", "Scale") < 0 ||
	    kc_json_set_str(s, "apiVersion", "autoscaling/v1") < 0 ||
	    (meta = kc_json_ensure_obj(s, "metadata")) == NULL ||
	    (spec = kc_json_ensure_obj(s, "spec")) == NULL ||
	    (status = kc_json_ensure_obj(s, "status")) == NULL)
		goto oom;
	for (size_t i = 0; keep[i] != NULL; i++) {
		const char *v = kc_json_str(obj, "metadata", keep[i]);

		if (v != NULL && v[0] != '\0' && kc_json_set_str(meta, keep[i], v) < 0)
			goto oom;
	}
	if (kc_json_set_int(spec, "replicas", replicas_of(obj)) < 0 ||
	    kc_json_set_int(status, "replicas", kc_json_int(obj, 0, "status", "replicas")) < 0)
		goto oom;
	if (sel != NULL && kc_label_selector_from_json(sel, &ls, &st) == 0) {
		if (kc_label_selector_string(ls, &text) < 0)
			goto oom;
		if (text[0] != '\0' && kc_json_set_str(status, "selector", text) < 0)
			goto oom;
	}
	kc_free(text);
	kc_label_selector_free(ls);
	return s;
oom:
	kc_free(text);
	kc_label_selector_free(ls);
	if (s != NULL)
		json_object_put(s);
	return NULL;
}

static void
scale_reply(struct dc_resp *resp, const struct json_object *obj)
{
	struct json_object *s = scale_of(obj);

	if (s == NULL || resp_json(resp, 200, s) < 0)
		errors_internal(resp, -ENOMEM);
	if (s != NULL)
		json_object_put(s);
}

/* metadata.generation of 'next' (a new version of 'old') follows its spec. */
static int
bump_generation(const struct json_object *old, struct json_object *next)
{
	if (kc_json_equal(kc_json_get(old, "spec"), kc_json_get(next, "spec")))
		return 0;
	return kc_json_set_int(kc_json_obj_of(next, "metadata"), "generation",
	    kc_json_int(old, 1, "metadata", "generation") + 1);
}

/*
 * A controller's write of 'next' (consumed) over 'old': generation,
 * then api_update_object() as 'manager'. Conflicts and objects gone
 * since the pass listed them are left to the next pass.
 */
static int
store(struct dc *dc, const struct dc_rtype *rt, const struct json_object *old,
    struct json_object *next, const char *subresource, const char *manager)
{
	int r;

	if (bump_generation(old, next) < 0) {
		json_object_put(next);
		return -ENOMEM;
	}
	r = api_update_object(dc, rt, old, next, subresource, manager);
	return r == KC_ECONFLICT || r == KC_ENOTFOUND ? 0 : r;
}

static int
scale_write(struct dc *dc, const struct dc_rtype *rt, const struct dc_req *req,
    const struct dc_route *route, const struct json_object *cur, struct dc_resp *resp)
{
	struct json_object *next = NULL, *stored = NULL, *view;
	const char *dry = req_param(req, "dryRun");
	const char *mgr = req_param(req, "fieldManager");
	int64_t replicas = 0;
	int r = 0;

	if ((view = scale_of(cur)) == NULL) {
		errors_internal(resp, -ENOMEM);
		return 0;
	}
	r = api_scale_request(req, rt, route->verb, route->name, view,
	    kc_json_str(cur, "metadata", "resourceVersion"), &replicas, resp);
	json_object_put(view);
	if (r < 0)
		return 0;
	if ((next = kc_json_copy(cur)) == NULL ||
	    kc_json_set_int(kc_json_ensure_obj(next, "spec"), "replicas", replicas) < 0) {
		r = -ENOMEM;
		goto out;
	}
	if (dry != NULL && strcmp(dry, "All") == 0) {
		scale_reply(resp, next);
		goto out;
	}
	if ((r = bump_generation(cur, next)) < 0)
		goto out;
	if (dc->hooks.managed_fields != NULL) {
		struct dc_write_ctx wc = { .dc = dc, .rt = rt, .req = req, .op = DC_OP_UPDATE,
		    .subresource = "scale", .field_manager = mgr, .old = cur };

		if ((r = dc->hooks.managed_fields(&wc, next)) < 0)
			goto out;
	}
	r = storage_update(dc->store, rt->coll, next, obj_rv(cur), &stored);
	next = NULL;
	if (r == DC_UNCHANGED)
		r = 0;
	if (r == KC_ECONFLICT) {
		errors_obj(resp, KC_ECONFLICT, rt, route->name, "Operation cannot be fulfilled "
		    "on %s \"%s\": the object has been modified; please apply your changes to "
		    "the latest version and try again", rt->qualified, route->name);
		r = 0;
		goto out;
	}
	if (r < 0)
		goto out;
	scale_reply(resp, stored != NULL ? stored : cur);
out:
	if (next != NULL)
		json_object_put(next);
	if (stored != NULL)
		json_object_put(stored);
	return r < 0 ? r : 0;
}

/* <deployments|replicasets>/<name>/scale, after authorization. */
static int
serve_scale(struct dc *dc, const struct dc_rtype *rt, const struct dc_req *req,
    const struct dc_route *route, struct dc_resp *resp)
{
	const struct json_object *cur;

	if (route->name[0] == '\0')
		return DC_DECLINED;
	if ((cur = coll_get(rt->coll, route->ns, route->name)) == NULL) {
		errors_notfound(resp, rt, route->name);
		return 0;
	}
	if (strcmp(route->verb, "get") == 0) {
		scale_reply(resp, cur);
		return 0;
	}
	if (strcmp(route->verb, "update") != 0 && strcmp(route->verb, "patch") != 0)
		return DC_DECLINED;
	return scale_write(dc, rt, req, route, cur, resp);
}

/*
 * The replicaset controller
 */

static const struct dc_rtype *
type_of(const struct dc *dc, const char *group, const char *plural)
{
	return registry_find(dc, group, "v1", plural);
}

/* Sets the controller ownerReference of 'meta' to 'owner', an apps/v1 'kind'. */
static int
set_controller(struct json_object *meta, const char *kind, const struct json_object *owner)
{
	struct json_object *refs, *ref;

	if ((refs = json_object_new_array()) == NULL ||
	    kc_json_put(meta, "ownerReferences", refs) < 0 ||
	    (ref = json_object_new_object()) == NULL || kc_json_append(refs, ref) < 0 ||
	    kc_json_set_str(ref, "apiVersion", "apps/v1") < 0 ||
	    kc_json_set_str(ref, "kind", kind) < 0 ||
	    kc_json_set_str(ref, "name", kc_json_str(owner, "metadata", "name")) < 0 ||
	    kc_json_set_str(ref, "uid", kc_json_str(owner, "metadata", "uid")) < 0 ||
	    kc_json_set_bool(ref, "controller", true) < 0 ||
	    kc_json_set_bool(ref, "blockOwnerDeletion", true) < 0)
		return -ENOMEM;
	return 0;
}

/*
 * A Normal Event about 'about' (a Deployment or ReplicaSet) from
 * 'component', as the upstream controllers record them.
 */
static int record(struct apps *, const struct json_object *about, const char *kind,
    const char *component, const char *reason, const char *fmt, ...) _printf_(6, 7);

static int
record(struct apps *a, const struct json_object *about, const char *kind,
    const char *component, const char *reason, const char *fmt, ...)
{
	char msg[512];
	struct api_event e = { .about = about, .kind = kind, .type = "Normal",
	    .reason = reason, .message = msg, .component = component };
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	e.stamp = (uint64_t)kc_clock_wall_us() * UINT64_C(1000) + ++a->event_seq;
	return api_record_event(a->dc, &e);
}

/*
 * A create the write pipeline refused. A terminating or missing namespace
 * (403, 404) is expected and retried on the next change; anything else
 * (quota, an invalid template) is logged.
 */
static void
refused(int r, const char *what, const struct json_object *owner, const char *action)
{
	if (r == KC_EFORBIDDEN || r == KC_ENOTFOUND)
		return;
	kc_log_warn(NULL, "%s %s/%s: %s: %s", what, kc_json_str(owner, "metadata", "namespace"),
	    kc_json_str(owner, "metadata", "name"), action, kc_strerror(r));
}

/* Whether some ownerReference of 'obj' is a controller. */
static bool
has_controller(const struct json_object *obj)
{
	struct json_object *refs = kc_json_get(obj, "metadata", "ownerReferences");

	for (size_t i = 0; i < arr_len(refs); i++)
		if (kc_json_bool(json_object_array_get_idx(refs, i), false, "controller"))
			return true;
	return false;
}

/*
 * ClaimPods / ClaimReplicaSets, the adoption half: every object of
 * 'objs' without a controller, not being deleted, whose labels match the
 * owner's spec.selector gets a controller ownerReference to 'owner'. The
 * adopted ones are counted on the next pass (the write marks the
 * namespace again). Returns how many it adopted, or -ENOMEM.
 */
static int
adopt(struct apps *a, const struct dc_rtype *rt, const struct json_object *owner,
    const char *kind, struct json_object *const *objs, size_t n)
{
	struct kc_label_selector *ls = NULL;
	struct kc_status st = { 0 };
	int r = 0, adopted = 0;

	if (rt == NULL || kc_label_selector_from_json(kc_json_get(owner, "spec", "selector"),
	    &ls, &st) < 0)
		return 0;
	if (kc_label_selector_is_empty(ls)) {
		kc_label_selector_free(ls);
		return 0;
	}
	for (size_t i = 0; i < n && r == 0; i++) {
		struct json_object *next, *refs, *ref;

		if (has_controller(objs[i]) || deleting(objs[i]) ||
		    !kc_label_selector_matches(ls, kc_json_get(objs[i], "metadata", "labels")))
			continue;
		if ((next = kc_json_copy(objs[i])) == NULL) {
			r = -ENOMEM;
			break;
		}
		refs = kc_json_get(next, "metadata", "ownerReferences");
		if (refs == NULL) {
			if ((r = set_controller(kc_json_ensure_obj(next, "metadata"), kind,
			    owner)) < 0) {
				json_object_put(next);
				break;
			}
		} else {
			struct json_object *tmp = json_object_new_object();

			if (tmp == NULL || set_controller(tmp, kind, owner) < 0 ||
			    (ref = json_object_array_get_idx(kc_json_get(tmp, "ownerReferences"), 0))
			    == NULL || kc_json_append(refs, json_object_get(ref)) < 0) {
				if (tmp != NULL)
					json_object_put(tmp);
				json_object_put(next);
				r = -ENOMEM;
				break;
			}
			json_object_put(tmp);
		}
		if ((r = store(a->dc, rt, objs[i], next, NULL, MANAGER)) == 0)
			adopted++;
	}
	kc_label_selector_free(ls);
	return r < 0 ? r : adopted;
}

/* A pod from the ReplicaSet's template (controller.GetPodFromTemplate). */
static int
pod_from_template(const struct json_object *rs, struct json_object **ret)
{
	struct json_object *tpl = kc_json_get(rs, "spec", "template");
	struct json_object *pod = json_object_new_object(), *meta;
	const char *name = kc_json_str(rs, "metadata", "name");
	char prefix[DC_NAME_MAX + 2];
	static const char *const copied[] = { "labels", "annotations", "finalizers", NULL };

	(void)snprintf(prefix, sizeof(prefix), "%.*s-", 57, name != NULL ? name : "");
	if (pod == NULL || kc_json_set_str(pod, "apiVersion", "v1") < 0 ||
	    kc_json_set_str(pod, "kind", "Pod") < 0 ||
	    (meta = kc_json_ensure_obj(pod, "metadata")) == NULL ||
	    kc_json_set_str(meta, "generateName", prefix) < 0 ||
	    kc_json_set_str(meta, "namespace", kc_json_str(rs, "metadata", "namespace")) < 0)
		goto oom;
	for (size_t i = 0; copied[i] != NULL; i++) {
		struct json_object *v = kc_json_get(tpl, "metadata", copied[i]);

		if (v != NULL && kc_json_put(meta, copied[i], kc_json_copy(v)) < 0)
			goto oom;
	}
	if (set_controller(meta, "ReplicaSet", rs) < 0)
		goto oom;
	if (kc_json_put(pod, "spec", kc_json_copy(kc_json_get(tpl, "spec"))) < 0)
		goto oom;
	*ret = pod;
	return 0;
oom:
	if (pod != NULL)
		json_object_put(pod);
	return -ENOMEM;
}

/* The rank of a pod for deletion (controller.ActivePods): lower goes first. */
static int
pod_rank_cmp(const void *pa, const void *pb)
{
	const struct json_object *a = *(const struct json_object *const *)pa;
	const struct json_object *b = *(const struct json_object *const *)pb;
	static const char *const phases[] = { "Pending", "Unknown", "Running" };
	const char *na = kc_json_str(a, "spec", "nodeName");
	const char *nb = kc_json_str(b, "spec", "nodeName");
	int ua = na == NULL || na[0] == '\0', ub = nb == NULL || nb[0] == '\0';
	int pa_rank = 3, pb_rank = 3, ra, rb;
	time_t ta, tb;

	if (ua != ub)
		return ua ? -1 : 1;
	for (int i = 0; i < 3; i++) {
		if (str_eq(kc_json_str(a, "status", "phase"), phases[i]))
			pa_rank = i;
		if (str_eq(kc_json_str(b, "status", "phase"), phases[i]))
			pb_rank = i;
	}
	if (pa_rank != pb_rank)
		return pa_rank - pb_rank;
	ra = pod_ready(a, NULL);
	rb = pod_ready(b, NULL);
	if (ra != rb)
		return ra - rb;
	ta = time_of(kc_json_str(a, "metadata", "creationTimestamp"));
	tb = time_of(kc_json_str(b, "metadata", "creationTimestamp"));
	if (ta != tb)
		return ta > tb ? -1 : 1;
	return strcmp(kc_json_str(b, "metadata", "name"), kc_json_str(a, "metadata", "name"));
}

/* Writes the status subresource of 'obj' when 'status' (consumed) differs. */
static int
write_status(struct dc *dc, const struct dc_rtype *rt, const struct json_object *obj,
    struct json_object *status)
{
	struct json_object *next;

	if (kc_json_equal(status, kc_json_get(obj, "status"))) {
		json_object_put(status);
		return 0;
	}
	if ((next = obj_cow(obj)) == NULL) {
		json_object_put(status);
		return -ENOMEM;
	}
	if (kc_json_put(next, "status", status) < 0) {
		json_object_put(next);
		return -ENOMEM;
	}
	return store(dc, rt, obj, next, "status", MANAGER);
}

/*
 * A pod create the API refused (admission: PodSecurity, quota...): the
 * Warning Event FailedCreate, "Error creating: <the API's message>", as
 * upstream's pod control records it; 'msg' is cleared when the refusal is
 * the namespace's own end (missing, terminating), which upstream does not
 * record. 0 or -ENOMEM.
 */
static int
failed_create(struct apps *a, const struct json_object *rs, int code, char *msg)
{
	char text[1100];
	struct api_event e = { .about = rs, .kind = "ReplicaSet", .type = "Warning",
	    .reason = "FailedCreate", .message = text, .component = RS_CONTROLLER };

	if (code == KC_ENOTFOUND || msg[0] == '\0' ||
	    strstr(msg, "because it is being terminated") != NULL) {
		msg[0] = '\0';
		return 0;
	}
	(void)snprintf(text, sizeof(text), "Error creating: %s", msg);
	e.stamp = (uint64_t)kc_clock_wall_us() * UINT64_C(1000) + ++a->event_seq;
	return api_record_event(a->dc, &e);
}

/*
 * The ReplicaFailure condition of a ReplicaSet whose pods could not be
 * created (calculateStatus): kept as it was while it stands, else new.
 */
static int
replica_failure(const struct json_object *rs, struct json_object *st, const char *msg)
{
	struct json_object *conds = kc_json_get(rs, "status", "conditions");
	struct json_object *arr, *c;
	char now[KC_TIME_MAX];

	if ((arr = json_object_new_array()) == NULL || kc_json_put(st, "conditions", arr) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < arr_len(conds); i++) {
		c = json_object_array_get_idx(conds, i);
		if (strcmp(or_empty(kc_json_str(c, "type")), "ReplicaFailure") == 0)
			return kc_json_append(arr, kc_json_copy(c));
	}
	api_now(now);
	if ((c = json_object_new_object()) == NULL || kc_json_append(arr, c) < 0 ||
	    kc_json_set_str(c, "type", "ReplicaFailure") < 0 ||
	    kc_json_set_str(c, "status", "True") < 0 ||
	    kc_json_set_str(c, "lastTransitionTime", now) < 0 ||
	    kc_json_set_str(c, "reason", "FailedCreate") < 0 ||
	    kc_json_set_str(c, "message", msg) < 0)
		return -ENOMEM;
	return 0;
}

static int
rs_sync(struct apps *a, const struct dc_rtype *rst, const struct json_object *rs,
    struct json_object *const *pods, size_t npods, time_t now)
{
	const struct dc_rtype *pt = type_of(a->dc, "", "pods");
	struct json_object *labels = kc_json_get(rs, "spec", "template", "metadata", "labels");
	struct json_object *st, **active = NULL;
	int64_t want = replicas_of(rs);
	int64_t min_ready = kc_json_int(rs, 0, "spec", "minReadySeconds");
	int64_t nactive = 0, labeled = 0, ready = 0, available = 0;
	const char *ns = kc_json_str(rs, "metadata", "namespace");
	char fail[1024] = "";
	int r = 0;

	if (pt == NULL || deleting(rs))
		return 0;
	if ((r = adopt(a, pt, rs, "ReplicaSet", pods, npods)) != 0)
		return r < 0 ? r : 0;	/* counted on the next pass */
	if (npods > 0 && (active = kc_calloc(npods, sizeof(*active))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < npods; i++) {
		const struct json_object *p = pods[i];
		struct json_object *pl = kc_json_get(p, "metadata", "labels");
		bool match = true;

		if (!owned_by(p, "ReplicaSet", rs) || !pod_active(p))
			continue;
		active[nactive++] = pods[i];
		if (json_object_is_type(labels, json_type_object)) {
			json_object_object_foreach(labels, k, v) {
				if (!kc_json_equal(v, kc_json_get(pl, k)))
					match = false;
			}
		}
		labeled += match;
		ready += pod_ready(p, NULL);
		available += pod_available(p, min_ready, now, &a->recheck);
	}
	if (nactive < want) {
		for (int64_t i = 0; i < min64(want - nactive, APPS_BURST) && r == 0; i++) {
			struct json_object *pod, *made = NULL;

			if ((r = pod_from_template(rs, &pod)) < 0)
				break;
			if ((r = api_create_object_msg(a->dc, pt, pod, &made, fail,
			    sizeof(fail))) < 0) {
				if (r != -ENOMEM) {
					refused(r, "replicaset", rs, "create pod");
					r = failed_create(a, rs, r, fail);
				}
				break;
			}
			r = record(a, rs, "ReplicaSet", RS_CONTROLLER, "SuccessfulCreate",
			    "Created pod: %s", kc_json_str(made, "metadata", "name"));
			json_object_put(made);
		}
	} else if (nactive > want) {
		qsort(active, (size_t)nactive, sizeof(*active), pod_rank_cmp);
		for (int64_t i = 0; i < min64(nactive - want, APPS_BURST) && r == 0; i++) {
			const char *pname = kc_json_str(active[i], "metadata", "name");

			r = api_delete_object(a->dc, pt, ns, pname, -1);
			if (r == 0)
				r = record(a, rs, "ReplicaSet", RS_CONTROLLER, "SuccessfulDelete",
				    "Deleted pod: %s", pname);
			else if (r != -ENOMEM) {
				refused(r, "replicaset", rs, "delete pod");
				r = 0;
			}
		}
	}
	kc_free(active);
	if (r < 0)
		return r;
	if (fail[0] != '\0')		/* upstream requeues it, rate-limited */
		note_deadline(&a->recheck, now + APPS_RETRY_S);
	if ((st = json_object_new_object()) == NULL ||
	    kc_json_set_int(st, "replicas", nactive) < 0 ||
	    (labeled > 0 && kc_json_set_int(st, "fullyLabeledReplicas", labeled) < 0) ||
	    (ready > 0 && kc_json_set_int(st, "readyReplicas", ready) < 0) ||
	    (available > 0 && kc_json_set_int(st, "availableReplicas", available) < 0) ||
	    kc_json_set_int(st, "observedGeneration", kc_json_int(rs, 1, "metadata",
	    "generation")) < 0 ||
	    (fail[0] != '\0' && replica_failure(rs, st, fail) < 0)) {
		if (st != NULL)
			json_object_put(st);
		return -ENOMEM;
	}
	return write_status(a->dc, rst, rs, st);
}

/*
 * The deployment controller
 */

/* One owned ReplicaSet while a Deployment is synced. */
struct owned {
	const struct json_object *rs;
	int64_t		 revision;
	time_t		 created;
	uint64_t	 order;		/* rank by creation: larger is newer */
};

static int
owned_cmp(const void *pa, const void *pb)
{
	const struct owned *a = pa, *b = pb;

	if (a->created != b->created)
		return a->created < b->created ? -1 : 1;
	return strcmp(kc_json_str(a->rs, "metadata", "name"),
	    kc_json_str(b->rs, "metadata", "name"));
}

static int
rev_cmp(const void *pa, const void *pb)
{
	const struct owned *a = pa, *b = pb;

	if (a->revision != b->revision)
		return a->revision < b->revision ? -1 : 1;
	return owned_cmp(pa, pb);
}

/* An integer annotation of 'rs', or 'def' when absent or malformed. */
static int64_t
ann_int(const struct json_object *rs, const char *key, int64_t def)
{
	const char *s = kc_json_str(rs, "metadata", "annotations", key);
	uint64_t v = 0;

	if (s == NULL || kc_parse_u64(s, &v) < 0 || v > INT32_MAX)
		return def;
	return (int64_t)v;
}

static int64_t
revision_of(const struct json_object *rs)
{
	return ann_int(rs, APPS_ANN_REVISION, 0);
}

/* EqualIgnoreHash: the templates equal once pod-template-hash is dropped. */
static int
template_equal(const struct json_object *a, const struct json_object *b, bool *ret)
{
	struct json_object *ca = kc_json_copy(a), *cb = kc_json_copy(b);

	if ((a != NULL && ca == NULL) || (b != NULL && cb == NULL)) {
		if (ca != NULL)
			json_object_put(ca);
		if (cb != NULL)
			json_object_put(cb);
		return -ENOMEM;
	}
	json_object_object_del(kc_json_get(ca, "metadata", "labels"), APPS_LABEL_HASH);
	json_object_object_del(kc_json_get(cb, "metadata", "labels"), APPS_LABEL_HASH);
	if (json_object_object_length(kc_json_get(ca, "metadata", "labels")) == 0)
		json_object_object_del(kc_json_get(ca, "metadata"), "labels");
	if (json_object_object_length(kc_json_get(cb, "metadata", "labels")) == 0)
		json_object_object_del(kc_json_get(cb, "metadata"), "labels");
	*ret = kc_json_equal(ca, cb);
	if (ca != NULL)
		json_object_put(ca);
	if (cb != NULL)
		json_object_put(cb);
	return 0;
}

/* Whether annotation 'key' of a Deployment is copied to its ReplicaSets. */
static bool
copied_annotation(const char *key)
{
	return strcmp(key, ANN_LAST_APPLIED) != 0 && strcmp(key, APPS_ANN_REVISION) != 0 &&
	    strcmp(key, APPS_ANN_REV_HISTORY) != 0 && strcmp(key, APPS_ANN_DESIRED) != 0 &&
	    strcmp(key, APPS_ANN_MAX) != 0 && strcmp(key, ANN_ROLLBACK) != 0;
}

/* Copies the Deployment's own annotations to a ReplicaSet's 'ann'. */
static int
copy_annotations(struct json_object *ann, const struct json_object *d)
{
	struct json_object *dann = kc_json_get(d, "metadata", "annotations");

	if (!json_object_is_type(dann, json_type_object))
		return 0;
	json_object_object_foreach(dann, k, v) {
		if (copied_annotation(k) && kc_json_put(ann, k, json_object_get(v)) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int
set_ann_int(struct json_object *ann, const char *key, int64_t v)
{
	char buf[24];

	(void)snprintf(buf, sizeof(buf), "%" PRId64, v);
	return kc_json_set_str(ann, key, buf);
}

/*
 * Rewrites an owned ReplicaSet: spec.replicas 'replicas' (-1: kept), the
 * desired and max annotations, and with 'revision' > 0 the revision (the
 * old one into revision-history) and the Deployment's annotations.
 */
static int
rs_update(struct apps *a, const struct json_object *d, const struct json_object *rs,
    int64_t replicas, int64_t max_replicas, int64_t revision)
{
	const struct dc_rtype *rst = type_of(a->dc, APPS_GROUP, "replicasets");
	struct json_object *next, *meta, *ann;
	int64_t old_rev = revision_of(rs), from = kc_json_int(rs, 0, "spec", "replicas");
	int r;

	if (rst == NULL)
		return 0;
	if ((next = kc_json_copy(rs)) == NULL)
		return -ENOMEM;
	meta = kc_json_ensure_obj(next, "metadata");
	if (meta == NULL || (ann = kc_json_ensure_obj(meta, "annotations")) == NULL)
		goto oom;
	if (replicas >= 0 && (kc_json_set_int(kc_json_ensure_obj(next, "spec"), "replicas",
	    replicas) < 0 || set_ann_int(ann, APPS_ANN_DESIRED, replicas_of(d)) < 0 ||
	    set_ann_int(ann, APPS_ANN_MAX, max_replicas) < 0))
		goto oom;
	if (revision > 0) {
		if (old_rev > 0 && old_rev != revision) {
			const char *hist = kc_json_str(ann, APPS_ANN_REV_HISTORY);
			char buf[APPS_REV_HISTORY_MAX + 32];
			const char *kept = buf;
			int len;

			len = snprintf(buf, sizeof(buf), "%s%s%" PRId64, hist != NULL ? hist : "",
			    hist != NULL && hist[0] != '\0' ? "," : "", old_rev);
			/* Past the cap, the oldest revisions go (maxRevHistoryLengthInChars). */
			if (len < 0 || (size_t)len >= sizeof(buf))
				len = snprintf(buf, sizeof(buf), "%" PRId64, old_rev);
			while (len > APPS_REV_HISTORY_MAX && strchr(kept, ',') != NULL) {
				len -= (int)(strchr(kept, ',') + 1 - kept);
				kept = strchr(kept, ',') + 1;
			}
			if (kc_json_set_str(ann, APPS_ANN_REV_HISTORY, kept) < 0)
				goto oom;
		}
		if (set_ann_int(ann, APPS_ANN_REVISION, revision) < 0)
			goto oom;
		if (copy_annotations(ann, d) < 0)
			goto oom;
		if (kc_json_set_int(kc_json_ensure_obj(next, "spec"), "minReadySeconds",
		    kc_json_int(d, 0, "spec", "minReadySeconds")) < 0)
			goto oom;
		if (kc_json_int(d, 0, "spec", "minReadySeconds") == 0)
			json_object_object_del(kc_json_get(next, "spec"), "minReadySeconds");
	}
	if (kc_json_equal(next, rs)) {
		json_object_put(next);
		return 0;
	}
	if (bump_generation(rs, next) < 0)
		goto oom;
	if ((r = api_update_object(a->dc, rst, rs, next, NULL, MANAGER)) < 0)
		return r == KC_ECONFLICT || r == KC_ENOTFOUND ? 0 : r;
	if (replicas >= 0 && replicas != from)
		return record(a, d, "Deployment", DEPLOY_CONTROLLER, "ScalingReplicaSet",
		    "Scaled %s replica set %s from %" PRId64 " to %" PRId64,
		    replicas > from ? "up" : "down", kc_json_str(rs, "metadata", "name"), from,
		    replicas);
	return 0;
oom:
	json_object_put(next);
	return -ENOMEM;
}

/* Creates the new ReplicaSet; *ret_collision is set when the name is taken. */
static int
rs_create(struct apps *a, const struct json_object *d, int64_t replicas, int64_t max_replicas,
    int64_t revision, bool *ret_collision, struct json_object **ret)
{
	const struct dc_rtype *rst = type_of(a->dc, APPS_GROUP, "replicasets");
	struct json_object *tpl = kc_json_get(d, "spec", "template");
	struct json_object *rs = NULL, *meta, *spec, *t, *sel, *ann;
	const char *dname = kc_json_str(d, "metadata", "name");
	const char *ns = kc_json_str(d, "metadata", "namespace");
	char hash[APPS_HASH_MAX], name[DC_NAME_MAX + 1];
	int r;

	*ret_collision = false;
	if (rst == NULL)
		return 0;
	if ((r = apps_template_hash(tpl, kc_json_int(d, -1, "status", "collisionCount"),
	    hash)) < 0)
		return r;
	(void)snprintf(name, sizeof(name), "%s-%s", dname, hash);
	if ((rs = json_object_new_object()) == NULL ||
	    kc_json_set_str(rs, "apiVersion", "apps/v1") < 0 ||
	    kc_json_set_str(rs, "kind", "ReplicaSet") < 0 ||
	    (meta = kc_json_ensure_obj(rs, "metadata")) == NULL ||
	    kc_json_set_str(meta, "name", name) < 0 || kc_json_set_str(meta, "namespace", ns) < 0 ||
	    (spec = kc_json_ensure_obj(rs, "spec")) == NULL ||
	    kc_json_put(spec, "template", (t = kc_json_copy(tpl))) < 0 || t == NULL ||
	    kc_json_set_str(kc_json_ensure_obj(kc_json_ensure_obj(t, "metadata"), "labels"),
	    APPS_LABEL_HASH, hash) < 0 ||
	    kc_json_put(meta, "labels", kc_json_copy(kc_json_get(t, "metadata", "labels"))) < 0 ||
	    kc_json_put(spec, "selector", (sel = kc_json_copy(kc_json_get(d, "spec",
	    "selector")))) < 0 || sel == NULL ||
	    kc_json_set_str(kc_json_ensure_obj(sel, "matchLabels"), APPS_LABEL_HASH, hash) < 0 ||
	    kc_json_set_int(spec, "replicas", replicas) < 0 ||
	    (ann = kc_json_ensure_obj(meta, "annotations")) == NULL ||
	    set_ann_int(ann, APPS_ANN_DESIRED, replicas_of(d)) < 0 ||
	    set_ann_int(ann, APPS_ANN_MAX, max_replicas) < 0 ||
	    set_ann_int(ann, APPS_ANN_REVISION, revision) < 0 ||
	    set_controller(meta, "Deployment", d) < 0)
		goto oom;
	if (kc_json_int(d, 0, "spec", "minReadySeconds") > 0 &&
	    kc_json_set_int(spec, "minReadySeconds", kc_json_int(d, 0, "spec",
	    "minReadySeconds")) < 0)
		goto oom;
	if (copy_annotations(ann, d) < 0)
		goto oom;
	r = api_create_object(a->dc, rst, rs, ret);
	rs = NULL;
	if (r == KC_EEXISTS) {
		*ret_collision = true;
		return 0;
	}
	if (r == 0)
		return record(a, d, "Deployment", DEPLOY_CONTROLLER, "ScalingReplicaSet",
		    "Scaled up replica set %s from 0 to %" PRId64, name, replicas);
	if (r < 0 && r != -ENOMEM) {
		refused(r, "deployment", d, "create replica set");
		r = 0;
	}
	return r;
oom:
	if (rs != NULL)
		json_object_put(rs);
	return -ENOMEM;
}

static int
rs_delete(struct apps *a, const struct json_object *rs)
{
	const struct dc_rtype *rst = type_of(a->dc, APPS_GROUP, "replicasets");
	int r;

	if (rst == NULL)
		return 0;
	r = api_delete_object(a->dc, rst, kc_json_str(rs, "metadata", "namespace"),
	    kc_json_str(rs, "metadata", "name"), -1);
	return r == KC_ENOTFOUND || r == KC_ECONFLICT ? 0 : r;
}

static struct json_object *
find_condition(const struct json_object *conds, const char *type)
{
	for (size_t i = 0; i < arr_len(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);

		if (str_eq(kc_json_str(c, "type"), type))
			return c;
	}
	return NULL;
}

/*
 * SetDeploymentCondition: nothing when the status and reason are the
 * same (with 'touch', Progressing's lastUpdateTime moves anyway);
 * lastTransitionTime kept when only the reason changes.
 */
static int
set_condition(struct json_object *conds, const char *type, const char *status,
    const char *reason, const char *msg, bool touch)
{
	struct json_object *cur = find_condition(conds, type), *c;
	char ts[KC_TIME_MAX];
	const char *ltt = NULL;

	if (cur != NULL && str_eq(kc_json_str(cur, "status"), status) &&
	    str_eq(kc_json_str(cur, "reason"), reason) && !touch)
		return 0;
	api_now(ts);
	if (cur != NULL && str_eq(kc_json_str(cur, "status"), status))
		ltt = kc_json_str(cur, "lastTransitionTime");
	if ((c = json_object_new_object()) == NULL)
		return -ENOMEM;
	if (kc_json_set_str(c, "type", type) < 0 || kc_json_set_str(c, "status", status) < 0 ||
	    kc_json_set_str(c, "lastUpdateTime", ts) < 0 ||
	    kc_json_set_str(c, "lastTransitionTime", ltt != NULL ? ltt : ts) < 0 ||
	    kc_json_set_str(c, "reason", reason) < 0 || kc_json_set_str(c, "message", msg) < 0) {
		json_object_put(c);
		return -ENOMEM;
	}
	for (size_t i = 0; i < arr_len(conds); i++) {
		if (json_object_array_get_idx(conds, i) == cur) {
			if (json_object_array_put_idx(conds, i, c) < 0) {
				json_object_put(c);
				return -ENOMEM;
			}
			return 0;
		}
	}
	return kc_json_append(conds, c);
}

/* What a sync of one Deployment found and did, for its status. */
struct dsync {
	const struct json_object *d;
	const struct json_object *new_rs;	/* may be NULL */
	const char	*new_name;		/* the new ReplicaSet's name, or NULL */
	struct owned	*rs;
	size_t		 nrs;
	int64_t		 unavailable;		/* MaxUnavailable(d) */
	bool		 created;		/* the new ReplicaSet was created now */
	bool		 collision;
};

static int
deploy_status(struct apps *a, const struct dc_rtype *dt, struct dsync *s, time_t now)
{
	const struct json_object *d = s->d, *old = kc_json_get(d, "status");
	struct json_object *st = json_object_new_object(), *conds = NULL, *cur;
	int64_t want = replicas_of(d), total = 0, actual = 0, updated = 0, ready = 0;
	int64_t available = 0, coll = kc_json_int(d, -1, "status", "collisionCount");
	int64_t gen = kc_json_int(d, 1, "metadata", "generation");
	int64_t pds = kc_json_int(d, -1, "spec", "progressDeadlineSeconds");
	bool paused = kc_json_bool(d, false, "spec", "paused");
	char msg[DC_NAME_MAX + 64];
	const char *what = s->new_name != NULL ? "ReplicaSet" : "Deployment";
	const char *who = s->new_name != NULL ? s->new_name : kc_json_str(d, "metadata", "name");
	int r = -ENOMEM;

	if (st == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < s->nrs; i++) {
		const struct json_object *rs = s->rs[i].rs;

		total += kc_json_int(rs, 0, "spec", "replicas");
		actual += kc_json_int(rs, 0, "status", "replicas");
		ready += kc_json_int(rs, 0, "status", "readyReplicas");
		available += kc_json_int(rs, 0, "status", "availableReplicas");
	}
	if (s->new_rs != NULL)
		updated = kc_json_int(s->new_rs, 0, "status", "replicas");
	if (s->collision)
		coll = coll < 0 ? 1 : coll + 1;
	if (kc_json_set_int(st, "observedGeneration", gen) < 0 ||
	    (actual > 0 && kc_json_set_int(st, "replicas", actual) < 0) ||
	    (updated > 0 && kc_json_set_int(st, "updatedReplicas", updated) < 0) ||
	    (ready > 0 && kc_json_set_int(st, "readyReplicas", ready) < 0) ||
	    (available > 0 && kc_json_set_int(st, "availableReplicas", available) < 0) ||
	    (total - available > 0 && kc_json_set_int(st, "unavailableReplicas",
	    total - available) < 0) ||
	    (coll >= 0 && kc_json_set_int(st, "collisionCount", coll) < 0))
		goto out;
	conds = kc_json_copy(kc_json_get(old, "conditions"));
	if (conds == NULL && (conds = json_object_new_array()) == NULL)
		goto out;
	/* Available */
	if (available >= want - s->unavailable) {
		if (set_condition(conds, "Available", "True", "MinimumReplicasAvailable",
		    "Deployment has minimum availability.", false) < 0)
			goto out;
	} else if (set_condition(conds, "Available", "False", "MinimumReplicasUnavailable",
	    "Deployment does not have minimum availability.", false) < 0)
		goto out;
	/* Progressing */
	cur = find_condition(conds, "Progressing");
	if (paused) {
		if (pds >= 0 && (cur == NULL || !str_eq(kc_json_str(cur, "reason"),
		    "DeploymentPaused")) && set_condition(conds, "Progressing", "Unknown",
		    "DeploymentPaused", "Deployment is paused", false) < 0)
			goto out;
	} else if (pds >= 0 && str_eq(kc_json_str(cur, "reason"), "DeploymentPaused")) {
		if (set_condition(conds, "Progressing", "Unknown", "DeploymentResumed",
		    "Deployment is resumed", false) < 0)
			goto out;
	} else if (pds >= 0 && s->created) {
		(void)snprintf(msg, sizeof(msg), "Created new replica set \"%s\"", who);
		if (set_condition(conds, "Progressing", "True", "NewReplicaSetCreated", msg,
		    false) < 0)
			goto out;
	} else if (pds >= 0 && s->new_rs != NULL && cur == NULL) {
		(void)snprintf(msg, sizeof(msg), "Found new replica set \"%s\"", who);
		if (set_condition(conds, "Progressing", "True", "FoundNewReplicaSet", msg,
		    false) < 0)
			goto out;
	} else if (pds >= 0 && !(actual == updated && str_eq(kc_json_str(cur, "reason"),
	    "NewReplicaSetAvailable"))) {
		int64_t o_upd = kc_json_int(old, 0, "updatedReplicas");
		int64_t o_old = kc_json_int(old, 0, "replicas") - o_upd;

		if (updated == want && actual == want && available == want) {
			(void)snprintf(msg, sizeof(msg), "%s \"%s\" has successfully progressed.",
			    what, who);
			if (set_condition(conds, "Progressing", "True", "NewReplicaSetAvailable",
			    msg, false) < 0)
				goto out;
		} else if (updated > o_upd || actual - updated < o_old ||
		    ready > kc_json_int(old, 0, "readyReplicas") ||
		    available > kc_json_int(old, 0, "availableReplicas")) {
			(void)snprintf(msg, sizeof(msg), "%s \"%s\" is progressing.", what, who);
			if (set_condition(conds, "Progressing", "True", "ReplicaSetUpdated", msg, true) < 0)
				goto out;
		} else if (cur != NULL && !str_eq(kc_json_str(cur, "reason"),
		    "ProgressDeadlineExceeded")) {
			time_t from = time_of(kc_json_str(cur, "lastUpdateTime"));

			if (from + pds < now) {
				(void)snprintf(msg, sizeof(msg), "%s \"%s\" has timed out "
				    "progressing.", what, who);
				if (set_condition(conds, "Progressing", "False",
				    "ProgressDeadlineExceeded", msg, false) < 0)
					goto out;
			} else
				note_deadline(&a->recheck, from + pds + 1);
		}
	}
	if (arr_len(conds) > 0) {
		if (kc_json_put(st, "conditions", conds) < 0) {
			conds = NULL;
			goto out;
		}
	} else
		json_object_put(conds);
	conds = NULL;
	r = write_status(a->dc, dt, d, st);
	st = NULL;
out:
	if (conds != NULL)
		json_object_put(conds);
	if (st != NULL)
		json_object_put(st);
	return r;
}

/* Sets the Deployment's revision annotation. */
static int
deploy_revision(struct apps *a, const struct dc_rtype *dt, const struct json_object *d,
    int64_t revision)
{
	struct json_object *next, *ann;
	char buf[24];

	(void)snprintf(buf, sizeof(buf), "%" PRId64, revision);
	if (str_eq(kc_json_str(d, "metadata", "annotations", APPS_ANN_REVISION), buf))
		return 0;
	if ((next = kc_json_copy(d)) == NULL)
		return -ENOMEM;
	if ((ann = kc_json_ensure_obj(kc_json_ensure_obj(next, "metadata"), "annotations")) ==
	    NULL || kc_json_set_str(ann, APPS_ANN_REVISION, buf) < 0) {
		json_object_put(next);
		return -ENOMEM;
	}
	return store(a->dc, dt, d, next, NULL, MANAGER);
}

/* Pods of 'rs' that still exist and are not terminal (oldPodsRunning). */
static bool
rs_pods_running(const struct json_object *rs, struct json_object *const *pods, size_t npods)
{
	for (size_t i = 0; i < npods; i++) {
		const char *phase = kc_json_str(pods[i], "status", "phase");

		if (owned_by(pods[i], "ReplicaSet", rs) && !str_eq(phase, "Succeeded") &&
		    !str_eq(phase, "Failed"))
			return true;
	}
	return false;
}

static int
deploy_cleanup(struct apps *a, struct dsync *s, size_t first_old)
{
	int64_t limit = kc_json_int(s->d, -1, "spec", "revisionHistoryLimit");
	struct owned *old = s->rs + first_old;
	size_t nold = s->nrs - first_old, alive = 0;
	int r = 0;

	if (limit < 0)
		return 0;
	for (size_t i = 0; i < nold; i++)
		alive += !deleting(old[i].rs);
	if ((int64_t)alive <= limit)
		return 0;
	qsort(old, nold, sizeof(*old), rev_cmp);
	for (size_t i = 0, n = 0; i < nold && (int64_t)n < (int64_t)alive - limit && r == 0;
	    i++) {
		const struct json_object *rs = old[i].rs;

		if (deleting(rs))
			continue;
		n++;
		if (kc_json_int(rs, 0, "status", "replicas") != 0 ||
		    kc_json_int(rs, 0, "spec", "replicas") != 0 ||
		    kc_json_int(rs, 1, "metadata", "generation") >
		    kc_json_int(rs, 0, "status", "observedGeneration"))
			continue;
		r = rs_delete(a, rs);
	}
	return r;
}

static int
deploy_sync(struct apps *a, const struct dc_rtype *dt, const struct json_object *d,
    struct json_object *const *rss, size_t nrss, struct json_object *const *pods,
    size_t npods, time_t now)
{
	struct dsync s = { .d = d };
	struct json_object *created = NULL;
	struct owned *rs = NULL;
	struct apps_rs *plan = NULL;
	const char *type = kc_json_str(d, "spec", "strategy", "type");
	bool recreate = str_eq(type, "Recreate"), paused = kc_json_bool(d, false, "spec",
	    "paused"), scaling = false;
	int64_t want = replicas_of(d), surge = 0, unavailable = 0, max_rev = 0, new_rev;
	size_t n = 0, inew = SIZE_MAX;
	int r = 0;

	if (deleting(d))
		return 0;
	if (!recreate && apps_fenceposts(kc_json_get(d, "spec", "strategy", "rollingUpdate",
	    "maxSurge"), kc_json_get(d, "spec", "strategy", "rollingUpdate", "maxUnavailable"),
	    want, &surge, &unavailable) < 0)
		return 0;
	s.unavailable = recreate ? 0 : min64(unavailable, want);
	if ((r = adopt(a, type_of(a->dc, APPS_GROUP, "replicasets"), d, "Deployment", rss,
	    nrss)) != 0)
		return r < 0 ? r : 0;	/* synced on the next pass */
	if (nrss > 0 && (rs = kc_calloc(min64((int64_t)nrss, APPS_OWNED_MAX) + 1,
	    sizeof(*rs))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < nrss && n < APPS_OWNED_MAX; i++) {
		if (!owned_by(rss[i], "Deployment", d))
			continue;
		rs[n].rs = rss[i];
		rs[n].revision = revision_of(rss[i]);
		rs[n].created = time_of(kc_json_str(rss[i], "metadata", "creationTimestamp"));
		n++;
	}
	if (n > 0)
		qsort(rs, n, sizeof(*rs), owned_cmp);
	for (size_t i = 0; i < n; i++)
		rs[i].order = i;
	for (size_t i = 0; i < n && inew == SIZE_MAX; i++) {
		bool eq;

		if ((r = template_equal(kc_json_get(rs[i].rs, "spec", "template"),
		    kc_json_get(d, "spec", "template"), &eq)) < 0)
			goto out;
		if (eq)
			inew = i;
	}
	/* The new ReplicaSet first, then the old ones, oldest first. */
	if (inew != SIZE_MAX && inew != 0) {
		struct owned t = rs[inew];

		memmove(rs + 1, rs, inew * sizeof(*rs));
		rs[0] = t;
	}
	for (size_t i = inew != SIZE_MAX ? 1 : 0; i < n; i++)
		if (rs[i].revision > max_rev)
			max_rev = rs[i].revision;
	new_rev = max_rev + 1;
	s.rs = rs;
	s.nrs = n;
	if (inew != SIZE_MAX) {
		s.new_rs = rs[0].rs;
		s.new_name = kc_json_str(rs[0].rs, "metadata", "name");
		if (paused || rs[0].revision >= new_rev)
			new_rev = rs[0].revision;
		if (!paused && (r = rs_update(a, d, rs[0].rs, -1, 0, new_rev)) < 0)
			goto out;
		if ((r = deploy_revision(a, dt, d, new_rev)) < 0)
			goto out;
	}
	for (size_t i = 0; i < n && !scaling; i++) {
		int64_t desired = ann_int(rs[i].rs, APPS_ANN_DESIRED, -1);

		scaling = kc_json_int(rs[i].rs, 0, "spec", "replicas") > 0 && desired >= 0 &&
		    desired != want;
	}
	if (paused || scaling) {
		/* sync(): scale only, no rollout (paused, or a scaling event). */
		struct apps_scale_rs *sp;

		if (n > 0 && (sp = kc_calloc(n, sizeof(*sp))) != NULL) {
			for (size_t i = 0; i < n; i++)
				sp[i] = (struct apps_scale_rs){
					.spec = kc_json_int(rs[i].rs, 0, "spec", "replicas"),
					.available = kc_json_int(rs[i].rs, 0, "status",
					    "availableReplicas"),
					.desired = ann_int(rs[i].rs, APPS_ANN_DESIRED, -1),
					.max_before = ann_int(rs[i].rs, APPS_ANN_MAX, 0),
					.order = rs[i].order,
					.is_new = inew != SIZE_MAX && i == 0,
				};
			apps_scale_plan(sp, n, want, surge, kc_json_int(d, 0, "status", "replicas"),
			    !recreate);
			for (size_t i = 0; i < n && r == 0; i++)
				if (sp[i].spec != kc_json_int(rs[i].rs, 0, "spec", "replicas") ||
				    ann_int(rs[i].rs, APPS_ANN_DESIRED, -1) != want)
					r = rs_update(a, d, rs[i].rs, sp[i].spec, want + surge, 0);
			kc_free(sp);
		} else if (n > 0)
			r = -ENOMEM;
	} else if (recreate) {
		bool scaled = false, running = false;

		for (size_t i = inew != SIZE_MAX ? 1 : 0; i < n && r == 0; i++) {
			if (kc_json_int(rs[i].rs, 0, "spec", "replicas") > 0) {
				r = rs_update(a, d, rs[i].rs, 0, want, 0);
				scaled = true;
			}
			running |= rs_pods_running(rs[i].rs, pods, npods);
		}
		if (r < 0 || scaled || running)
			goto status;
		if (inew == SIZE_MAX) {
			r = rs_create(a, d, want, want, new_rev, &s.collision, &created);
			s.created = created != NULL;
		} else if (kc_json_int(rs[0].rs, 0, "spec", "replicas") != want)
			r = rs_update(a, d, rs[0].rs, want, want, 0);
	} else {
		if ((plan = kc_calloc(n + 1, sizeof(*plan))) == NULL) {
			r = -ENOMEM;
			goto out;
		}
		plan[0].spec = -1;
		for (size_t i = 0; i < n; i++) {
			size_t k = inew != SIZE_MAX ? i : i + 1;

			plan[k].spec = kc_json_int(rs[i].rs, 0, "spec", "replicas");
			plan[k].available = kc_json_int(rs[i].rs, 0, "status", "availableReplicas");
		}
		apps_rolling_plan(plan, n + (inew == SIZE_MAX), want, surge, unavailable);
		if (inew == SIZE_MAX) {
			r = rs_create(a, d, plan[0].spec, want + surge, new_rev, &s.collision,
			    &created);
			s.created = created != NULL;
		} else if (plan[0].spec != kc_json_int(rs[0].rs, 0, "spec", "replicas"))
			r = rs_update(a, d, rs[0].rs, plan[0].spec, want + surge, 0);
		for (size_t i = inew != SIZE_MAX ? 1 : 0; i < n && r == 0; i++) {
			size_t k = inew != SIZE_MAX ? i : i + 1;

			if (plan[k].spec != kc_json_int(rs[i].rs, 0, "spec", "replicas"))
				r = rs_update(a, d, rs[i].rs, plan[k].spec, want + surge, 0);
		}
	}
status:
	if (r < 0)
		goto out;
	if (created != NULL) {
		/* NewReplicaSetCreated now; the revision annotation on the next pass. */
		s.new_rs = created;
		s.new_name = kc_json_str(created, "metadata", "name");
		r = deploy_status(a, dt, &s, now);
		goto out;
	}
	if ((r = deploy_status(a, dt, &s, now)) < 0)
		goto out;
	if (inew != SIZE_MAX && !paused && kc_json_int(s.new_rs, 0, "status",
	    "availableReplicas") == want && kc_json_int(s.new_rs, 0, "status", "replicas") ==
	    want && kc_json_int(s.new_rs, 0, "spec", "replicas") == want)
		r = deploy_cleanup(a, &s, 1);
out:
	if (created != NULL)
		json_object_put(created);
	kc_free(plan);
	kc_free(rs);
	return r;
}

/*
 * The controller loop
 */

static void
kick(struct apps *a)
{
	if (!a->ticking && (!a->timer.armed ||
	    a->timer.due_ms > kc_clock_now_ms() + APPS_DELAY_MS))
		timer_arm(&a->timer, APPS_DELAY_MS);
}

static void
mark(struct apps *a, const char *ns)
{
	if (a->all || ns == NULL)
		return;
	for (size_t i = 0; i < a->ndirty; i++)
		if (strcmp(a->dirty[i], ns) == 0)
			return;
	if (a->ndirty == APPS_DIRTY_MAX || (a->dirty[a->ndirty] = kc_strdup(ns)) == NULL) {
		a->all = true;
		return;
	}
	a->ndirty++;
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
	struct apps *a = arg;

	if (is_coll(ev->coll, "", "pods")) {
		if (controller_uid(ev->obj, "ReplicaSet") == NULL)
			return;
	} else if (!is_coll(ev->coll, APPS_GROUP, "replicasets") &&
	    !is_coll(ev->coll, APPS_GROUP, "deployments"))
		return;
	mark(a, kc_json_str(ev->obj, "metadata", "namespace"));
	kick(a);
}

static int
sync_ns(struct apps *a, const char *ns, time_t now)
{
	const struct dc_rtype *dt = type_of(a->dc, APPS_GROUP, "deployments");
	const struct dc_rtype *rst = type_of(a->dc, APPS_GROUP, "replicasets");
	const struct dc_rtype *pt = type_of(a->dc, "", "pods");
	struct json_object **ds = NULL, **rss = NULL, **pods = NULL;
	size_t nds = 0, nrss = 0, npods = 0;
	int r;

	if (dt == NULL || rst == NULL || pt == NULL)
		return 0;
	if ((r = coll_list(rst->coll, ns, NULL, &rss, &nrss)) < 0)
		return r;
	if (nrss > 0 && (r = coll_list(pt->coll, ns, NULL, &pods, &npods)) < 0)
		goto out;
	for (size_t i = 0; i < nrss && r >= 0; i++)
		r = rs_sync(a, rst, rss[i], pods, npods, now);
	if (r < 0 || (r = coll_list(dt->coll, ns, NULL, &ds, &nds)) < 0)
		goto out;
	for (size_t i = 0; i < nds && r >= 0; i++)
		r = deploy_sync(a, dt, ds[i], rss, nrss, pods, npods, now);
out:
	objs_free(ds, nds);
	objs_free(pods, npods);
	objs_free(rss, nrss);
	return r;
}

/* Every namespace with a Deployment or a ReplicaSet. */
static int
sync_all(struct apps *a, time_t now)
{
	static const char *const plurals[] = { "replicasets", "deployments" };
	struct json_object **objs = NULL;
	size_t n = 0;
	int r = 0;

	for (size_t p = 0; p < KC_ARRAY_SIZE(plurals) && r >= 0; p++) {
		const struct dc_rtype *rt = type_of(a->dc, APPS_GROUP, plurals[p]);

		if (rt == NULL || (r = coll_list(rt->coll, NULL, NULL, &objs, &n)) < 0)
			continue;
		for (size_t i = 0; i < n; i++)
			mark(a, kc_json_str(objs[i], "metadata", "namespace"));
		objs_free(objs, n);
		objs = NULL;
		n = 0;
	}
	if (a->all)	/* too many namespaces to list: one pass over everything */
		return sync_ns(a, NULL, now);
	return r;
}

static int64_t
tick(void *arg)
{
	struct apps *a = arg;
	time_t now = kc_clock_wall();
	char *dirty[APPS_DIRTY_MAX];
	size_t ndirty;
	bool all = a->all || (a->recheck != 0 && a->recheck <= now);
	int r = 0;

	a->ticking = true;
	a->all = false;
	if (all) {
		a->recheck = 0;
		for (size_t i = 0; i < a->ndirty; i++)
			kc_free(a->dirty[i]);
		a->ndirty = 0;
		r = sync_all(a, now);
	}
	ndirty = a->ndirty;
	memcpy(dirty, a->dirty, ndirty * sizeof(*dirty));
	a->ndirty = 0;
	for (size_t i = 0; i < ndirty; i++) {
		if (r >= 0)
			r = sync_ns(a, dirty[i], now);
		kc_free(dirty[i]);
	}
	if (r < 0)
		kc_log_warn(NULL, "apps: controller pass: %s", kc_strerror(r));
	a->ticking = false;
	if (a->all || a->ndirty > 0)
		return APPS_DELAY_MS;
	if (a->recheck != 0)
		return a->recheck > now ? (int64_t)(a->recheck - now) * 1000 : APPS_DELAY_MS;
	return DC_TIMER_STOP;
}

/*
 * Setup
 */

int
apps_init(struct dc *dc)
{
	struct apps *a;
	int r;

	if (plugin_state(dc, &apps_plugin) != NULL)
		return 0;
	if ((a = kc_calloc(1, sizeof(*a))) == NULL)
		return -ENOMEM;
	a->dc = dc;
	timer_init(&a->timer, dc, tick, a);
	if ((r = storage_subscribe(dc->store, on_event, a)) < 0) {
		kc_free(a);
		return r;
	}
	plugin_set_state(dc, &apps_plugin, a);
	a->all = true;		/* objects restored from disk get a first look */
	kick(a);
	return 0;
}

void
apps_fini(struct dc *dc)
{
	struct apps *a = plugin_state(dc, &apps_plugin);

	if (a == NULL)
		return;
	timer_cancel(&a->timer);
	storage_unsubscribe(dc->store, on_event, a);
	for (size_t i = 0; i < a->ndirty; i++)
		kc_free(a->dirty[i]);
	kc_free(a);
	plugin_set_state(dc, &apps_plugin, NULL);
}

int
apps_sync(struct dc *dc)
{
	struct apps *a = plugin_state(dc, &apps_plugin);

	if (a == NULL)
		return -EINVAL;
	a->all = true;
	(void)tick(a);
	return 0;
}

static int
apps_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	(void)cfg;
	(void)st;
	return apps_init(dc);
}

const struct dc_plugin apps_plugin = {
	.name = "apps",
	.init = apps_start,
	.fini = apps_fini,
	.subres = (const struct dc_plugin_subres []){
		{ APPS_GROUP, "deployments", "scale", serve_scale },
		{ APPS_GROUP, "replicasets", "scale", serve_scale },
	},
	.nsubres = 2,
	.types = (const struct dc_plugin_type []){
		{ APPS_GROUP, "deployments", &ops_deployment },
		{ APPS_GROUP, "replicasets", &ops_replicaset },
	},
	.ntypes = 2,
};

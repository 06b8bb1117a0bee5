/*
 * sched_res.c: resources as the scheduler counts them. Quantities are
 * read by lib/quantity.c (kc_quantity_parse_sat()) into integers: cpu in
 * milli-units, everything else in units, rounded up and saturating at
 * INT64_MAX. Resource names get dense slots (cpu, memory,
 * ephemeral-storage, then each scalar resource as first seen), and a
 * pod's requests become a sparse vector over them, as
 * resourcehelper.PodRequests() computes them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/quantity.h>
#include <kc/selector.h>
#include <kc/str.h>

#include "sched.h"
#include "sched_int.h"

/*
 * Quantities
 *
 * Parsed by lib/quantity.c as ParseQuantity() parses them, then read as
 * the scheduler counts them: MilliValue() for cpu and Value() for the
 * rest, rounded up away from zero and saturated at INT64_MAX (-INT64_MAX
 * below zero), also for a text past kc_quantity's range.
 */

/*
 * Parses 'len' bytes of 's'. On failure returns KC_EINVALID with the
 * upstream message in 'st' (may be NULL).
 */
static int
qty_parse(const char *s, size_t len, int64_t *ret_milli, int64_t *ret_value,
    struct kc_status *st)
{
	struct kc_quantity q;

	if (len > SCHED_QUANTITY_MAX)
		return kc_status_set(st, KC_EINVALID, "quantity longer than 64 bytes");
	if (memchr(s, '\0', len) != NULL)
		return kc_status_set(st, KC_EINVALID, "%s", KC_QUANTITY_ERR_FORMAT);
	if (kc_quantity_parse_sat(s, &q, st) < 0)
		return KC_EINVALID;
	if (ret_milli != NULL)
		*ret_milli = kc_quantity_milli_sat(&q);
	if (ret_value != NULL)
		*ret_value = kc_quantity_value_sat(&q);
	return 0;
}

int
sched_quantity_parse(const char *text, int64_t *ret_milli, int64_t *ret_value,
    struct kc_status *st)
{
	if (text == NULL)
		return kc_status_set(st, KC_EINVALID, "%s", KC_QUANTITY_ERR_FORMAT);
	return qty_parse(text, strlen(text), ret_milli, ret_value, st);
}

/*
 * Reads a quantity from JSON: a string as written, an integer exactly, a
 * double by its shortest %.15g form (JSON numbers are what YAML gives for
 * "nvidia.com/gpu: 8").
 */
static int
qty_json(const struct json_object *v, int64_t *ret_milli, int64_t *ret_value,
    struct kc_status *st)
{
	char buf[64];
	const char *s;
	int64_t x;

	switch (json_object_get_type(v)) {
	case json_type_string:
		s = json_object_get_string(mut(v));
		return qty_parse(s, (size_t)json_object_get_string_len(v), ret_milli,
		    ret_value, st);
	case json_type_int:
		x = json_object_get_int64(v);
		*ret_value = x;
		if (x > INT64_MAX / 1000)
			*ret_milli = INT64_MAX;
		else if (x < -(INT64_MAX / 1000))
			*ret_milli = -INT64_MAX;
		else
			*ret_milli = x * 1000;
		return 0;
	case json_type_double:
		(void)snprintf(buf, sizeof(buf), "%.15g", json_object_get_double(v));
		return qty_parse(buf, strlen(buf), ret_milli, ret_value, st);
	default:
		return kc_status_set(st, KC_EINVALID, "%s", KC_QUANTITY_ERR_FORMAT);
	}
}

/*
 * Resource names. Only those the scheduler counts get a slot: cpu,
 * memory, ephemeral-storage and the scalar resources (extended resources,
 * hugepages-*, attachable-volumes-*); "pods" is read apart.
 */

enum { RK_IGNORE, RK_CPU, RK_MEM, RK_EPH, RK_PODS, RK_SCALAR };

bool
sched_has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int
res_kind(const char *name)
{
	if (strcmp(name, "cpu") == 0)
		return RK_CPU;
	if (strcmp(name, "memory") == 0)
		return RK_MEM;
	if (strcmp(name, "ephemeral-storage") == 0)
		return RK_EPH;
	if (strcmp(name, "pods") == 0)
		return RK_PODS;
	if (sched_has_prefix(name, "hugepages-") || sched_has_prefix(name, "attachable-volumes-"))
		return RK_SCALAR;
	/* v1helper.IsExtendedResourceName() */
	if (strchr(name, '/') != NULL && strstr(name, "kubernetes.io/") == NULL &&
	    !sched_has_prefix(name, "requests."))
		return RK_SCALAR;
	return RK_IGNORE;
}

int
sched_res_add_name(struct sched *s, const char *name, const char *reason)
{
	char *n, *r;
	int ret;

	if (s->nres >= SCHED_RESOURCES_MAX + RES_FIXED)
		return KC_EINVALID;
	n = kc_strdup(name);
	r = reason != NULL ? kc_strdup(reason) : kc_asprintf("Insufficient %s", name);
	if (n == NULL || r == NULL ||
	    (ret = sched_smap_put(&s->resmap, name, (void *)(uintptr_t)(s->nres + 1))) < 0) {
		kc_free(n);
		kc_free(r);
		return -ENOMEM;
	}
	s->resname[s->nres] = n;
	s->resreason[s->nres] = r;
	s->nres++;
	return 0;
}

/* The slot of a scalar resource, added if new. */
static int
res_slot(struct sched *s, const char *name, uint32_t *ret, struct kc_status *st)
{
	uintptr_t v = (uintptr_t)sched_smap_get(&s->resmap, name);
	int r;

	if (v == 0) {
		if ((r = sched_res_add_name(s, name, NULL)) == KC_EINVALID)
			return kc_status_set(st, -E2BIG, "more than %d distinct resource names",
			    SCHED_RESOURCES_MAX);
		if (r < 0)
			return r;
		v = s->nres;
	}
	*ret = (uint32_t)(v - 1);
	return 0;
}

static int
rv_cmp(const void *a, const void *b)
{
	const struct rv *x = a, *y = b;

	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The nonzero slots of 'dense' as a sorted sparse vector. */
int
sched_rv_from_dense(const int64_t *dense, size_t n, struct rv **ret, size_t *ret_n)
{
	struct rv *v = NULL;
	size_t cnt = 0, j = 0;

	for (size_t i = 0; i < n; i++)
		if (dense[i] != 0)
			cnt++;
	if (cnt != 0 && (v = kc_calloc(cnt, sizeof(*v))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (dense[i] != 0)
			v[j++] = (struct rv){ (uint32_t)i, dense[i] };
	*ret = v;
	*ret_n = cnt;
	return 0;
}

int64_t
sched_rv_get(const struct rv *v, size_t n, uint32_t idx)
{
	struct rv key = { idx, 0 }, *e;

	if (n == 0)
		return 0;
	e = bsearch(&key, v, n, sizeof(*v), rv_cmp);
	return e != NULL ? e->val : 0;
}

/*
 * Reads a ResourceList: every counted resource into 'dense' (added, or
 * only where 'skip' has no such key), "pods" into '*pods'. KC_EINVALID
 * with the API server's wording for a bad quantity.
 */
int
sched_rl_read(struct sched *s, const struct json_object *rl, const struct json_object *skip,
    const char *path, int64_t *dense, int64_t *pods, struct kc_status *st)
{
	struct kc_status qst;
	int64_t milli, value;
	uint32_t slot = 0;
	int r, kind;

	if (rl == NULL || !json_object_is_type(rl, json_type_object))
		return 0;
	json_object_object_foreach(mut(rl), name, q) {
		if (skip != NULL && jget(skip, name) != NULL)
			continue;
		if ((kind = res_kind(name)) == RK_IGNORE)
			continue;
		if ((r = qty_json(q, &milli, &value, &qst)) < 0) {
			const char *text = json_object_is_type(q, json_type_string) ?
			    json_object_get_string(q) : json_type_to_name(json_object_get_type(q));

			return kc_status_set(st, r, "%s[%s]: Invalid value: \"%s\": %s",
			    path, name, text, qst.message);
		}
		switch (kind) {
		case RK_CPU:
			dense[RES_CPU] = sat_add(dense[RES_CPU], milli);
			break;
		case RK_MEM:
			dense[RES_MEM] = sat_add(dense[RES_MEM], value);
			break;
		case RK_EPH:
			dense[RES_EPH] = sat_add(dense[RES_EPH], value);
			break;
		case RK_PODS:
			if (pods != NULL)
				*pods = sat_add(*pods, value);
			break;
		default:
			if ((r = res_slot(s, name, &slot, st)) < 0)
				return r;
			dense[slot] = sat_add(dense[slot], value);
			break;
		}
	}
	return 0;
}

/* One container's requests, defaulted from its limits. */
static int
container_req(struct sched *s, const struct json_object *c, const char *path,
    int64_t *dense, struct kc_status *st)
{
	struct json_object *res = jobj(c, "resources");
	struct json_object *req = jobj(res, "requests");
	char p[128];
	int r;

	(void)snprintf(p, sizeof(p), "%s.resources.requests", path);
	if ((r = sched_rl_read(s, req, NULL, p, dense, NULL, st)) < 0)
		return r;
	(void)snprintf(p, sizeof(p), "%s.resources.limits", path);
	return sched_rl_read(s, jobj(res, "limits"), req, p, dense, NULL, st);
}

/*
 * The pod's request vector (resourcehelper.PodRequests() without
 * pod-level resources): containers summed, restartable init containers
 * added and accumulated, each init container (plus the restartable ones
 * before it) as a floor, then the overhead.
 */
int
sched_pod_requests_rv(struct sched *s, const struct json_object *pod, struct rv **ret,
    size_t *ret_n, struct kc_status *st)
{
	const size_t n = SCHED_RESOURCES_MAX + RES_FIXED;
	struct json_object *spec = jobj(pod, "spec"), *cs, *c;
	int64_t *sum, *init, *side, *tmp;
	char path[64];
	int r = 0;

	if ((sum = kc_calloc(4 * n, sizeof(*sum))) == NULL)
		return -ENOMEM;
	init = sum + n;
	side = init + n;
	tmp = side + n;
	cs = jarr(spec, "containers");
	for (size_t i = 0; i < jlen(cs); i++) {
		memset(tmp, 0, n * sizeof(*tmp));
		(void)snprintf(path, sizeof(path), "spec.containers[%zu]", i);
		if ((r = container_req(s, jidx(cs, i), path, tmp, st)) < 0)
			goto out;
		for (size_t k = 0; k < n; k++)
			sum[k] = sat_add(sum[k], tmp[k]);
	}
	cs = jarr(spec, "initContainers");
	for (size_t i = 0; i < jlen(cs); i++) {
		const char *policy;

		c = jidx(cs, i);
		memset(tmp, 0, n * sizeof(*tmp));
		(void)snprintf(path, sizeof(path), "spec.initContainers[%zu]", i);
		if ((r = container_req(s, c, path, tmp, st)) < 0)
			goto out;
		policy = jstr(c, "restartPolicy");
		for (size_t k = 0; k < n; k++) {
			if (policy != NULL && strcmp(policy, "Always") == 0) {
				sum[k] = sat_add(sum[k], tmp[k]);
				side[k] = sat_add(side[k], tmp[k]);
				tmp[k] = side[k];
			} else
				tmp[k] = sat_add(tmp[k], side[k]);
			init[k] = KC_MAX(init[k], tmp[k]);
		}
	}
	for (size_t k = 0; k < n; k++)
		if (init[k] != 0)
			sum[k] = KC_MAX(sum[k], init[k]);
	if ((r = sched_rl_read(s, jobj(spec, "overhead"), NULL, "spec.overhead", sum, NULL,
	    st)) < 0)
		goto out;
	r = sched_rv_from_dense(sum, s->nres, ret, ret_n);
out:
	kc_free(sum);
	return r;
}

/*
 * Pure helpers
 */

int
sched_pod_requests(const struct json_object *pod, struct json_object **ret,
    struct kc_status *st)
{
	_cleanup_(sched_freep) struct sched *s = NULL;
	struct json_object *o = NULL;
	struct rv *req = NULL;
	size_t n = 0;
	int r;

	if ((r = sched_new(NULL, &s)) < 0)
		return r;
	if ((r = sched_pod_requests_rv(s, pod, &req, &n, st)) < 0)
		return r == -E2BIG ? KC_EINVALID : r;
	if ((o = json_object_new_object()) == NULL) {
		kc_free(req);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if ((r = kc_json_put(o, s->resname[req[i].idx],
		    json_object_new_int64(req[i].val))) < 0) {
			kc_free(req);
			json_object_put(o);
			return r;
		}
	kc_free(req);
	*ret = o;
	return 0;
}


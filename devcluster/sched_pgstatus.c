/*
 * sched_pgstatus.c: the status of PodGroups (scheduler-plugins'
 * PodGroup controller): phase, scheduled, running, succeeded and failed
 * counts and scheduleStartTime, from the member pods, for one PodGroup
 * or many against the cache. Pure: JSON in, new JSON out.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/selector.h>
#include <kc/str.h>

#include "sched.h"
#include "sched_int.h"

/* What the PodGroup status needs of a member pod. */
struct mstat {
	const char		*name;
	bool			 bound;
	enum phase		 phase;
	const char *const	*owners;
	size_t			 nowners;
};

struct pgst {
	char		 phase[32];
	int64_t		 scheduled, running, succeeded, failed;
	char		 start[64];
	char		*occupied;
};

static int
mstat_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mstat *)a)->name, ((const struct mstat *)b)->name);
}

static int
pgst_read(const struct json_object *status, struct pgst *g)
{
	const char *s;

	memset(g, 0, sizeof(*g));
	(void)kc_strlcpy(g->phase, (s = jstr(status, "phase")) != NULL ? s : "",
	    sizeof(g->phase));
	g->scheduled = kc_json_int(status, 0, "scheduled");
	g->running = kc_json_int(status, 0, "running");
	g->succeeded = kc_json_int(status, 0, "succeeded");
	g->failed = kc_json_int(status, 0, "failed");
	(void)kc_strlcpy(g->start, (s = jstr(status, "scheduleStartTime")) != NULL ? s : "",
	    sizeof(g->start));
	if ((s = jstr(status, "occupiedBy")) != NULL && (g->occupied = kc_strdup(s)) == NULL)
		return -ENOMEM;
	return 0;
}

static int
pgst_json(const struct pgst *g, struct json_object **ret)
{
	struct json_object *o = json_object_new_object();
	int r = 0;

	if (o == NULL)
		return -ENOMEM;
	if (*g->phase != '\0')
		r = kc_json_set_str(o, "phase", g->phase);
	if (r == 0 && g->occupied != NULL && *g->occupied != '\0')
		r = kc_json_set_str(o, "occupiedBy", g->occupied);
	if (r == 0 && g->scheduled != 0)
		r = kc_json_set_int(o, "scheduled", g->scheduled);
	if (r == 0 && g->running != 0)
		r = kc_json_set_int(o, "running", g->running);
	if (r == 0 && g->succeeded != 0)
		r = kc_json_set_int(o, "succeeded", g->succeeded);
	if (r == 0 && g->failed != 0)
		r = kc_json_set_int(o, "failed", g->failed);
	if (r == 0 && *g->start != '\0')
		r = kc_json_set_str(o, "scheduleStartTime", g->start);
	if (r < 0) {
		json_object_put(o);
		return r;
	}
	*ret = o;
	return 0;
}

static bool
phase_is(const struct pgst *g, const char *phase)
{
	return strcmp(g->phase, phase) == 0;
}

/* fillOccupiedObj(): "<ns>/<owner>" of the first pod, sorted, joined. */
static int
occupied_by(struct pgst *g, const char *ns, const struct mstat *m)
{
	struct sb b = { 0 };
	char **refs;
	char *s = NULL;
	int r;

	if (m->nowners == 0)
		return 0;
	if ((refs = kc_calloc(m->nowners, sizeof(*refs))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < m->nowners; i++)
		if ((refs[i] = kc_asprintf("%s/%s", ns, m->owners[i])) == NULL) {
			sched_strv_free(refs, m->nowners);
			return -ENOMEM;
		}
	sched_sort(refs, m->nowners, sizeof(*refs), sched_strp_cmp);
	for (size_t i = 0; i < m->nowners; i++)
		sched_sb_printf(&b, "%s%s", i != 0 ? "," : "", refs[i]);
	sched_strv_free(refs, m->nowners);
	if ((r = sched_sb_take(&b, &s)) < 0)
		return r;
	kc_free(g->occupied);
	g->occupied = s;
	return 0;
}

/*
 * One reconcile of today's PodGroup controller (scheduling.x-k8s.io, no
 * PostBind, no status.scheduled): "" -> Pending; Pending -> Scheduling
 * once minMember pods exist (occupiedBy, and scheduleStartTime, which the
 * devcluster sets there as the start of the gang's wait); then Pending
 * below minMember pods, Scheduling below minMember running + succeeded,
 * else Running; Failed and Finished as before, and final.
 */
static int
pg_step_now(struct pgst *g, int64_t min, const char *ns, const struct mstat *m, size_t n,
    int64_t running, int64_t succeeded, int64_t failed, time_t now)
{
	int r;

	if (*g->phase == '\0') {
		(void)kc_strlcpy(g->phase, "Pending", sizeof(g->phase));
		return 0;
	}
	if (phase_is(g, "Pending")) {
		if ((int64_t)n >= min) {
			(void)kc_strlcpy(g->phase, "Scheduling", sizeof(g->phase));
			(void)kc_time_format(now, g->start, sizeof(g->start));
			if (n != 0 && (r = occupied_by(g, ns, &m[0])) < 0)
				return r;
		}
		return 0;
	}
	g->running = running;
	g->succeeded = succeeded;
	g->failed = failed;
	if ((int64_t)n < min) {
		(void)kc_strlcpy(g->phase, "Pending", sizeof(g->phase));
		return 0;
	}
	(void)kc_strlcpy(g->phase, succeeded + running < min ? "Scheduling" : "Running",
	    sizeof(g->phase));
	if (failed != 0 && failed + running + succeeded >= min)
		(void)kc_strlcpy(g->phase, "Failed", sizeof(g->phase));
	if (succeeded >= min)
		(void)kc_strlcpy(g->phase, "Finished", sizeof(g->phase));
	return 0;
}

/*
 * One reconcile of the PodGroup controller, after Coscheduling's PostBind:
 * the older releases (scheduling.sigs.k8s.io), or today's ('now_model').
 */
static int
pg_step(struct pgst *g, int64_t min, const char *ns, const struct mstat *m, size_t n,
    time_t now, bool now_model)
{
	int64_t bound = 0, running = 0, succeeded = 0, failed = 0;
	int r;

	if (phase_is(g, "Finished") || phase_is(g, "Failed"))
		return 0;
	for (size_t i = 0; i < n; i++) {
		bound += m[i].bound;
		running += m[i].phase == PH_RUNNING;
		succeeded += m[i].phase == PH_SUCCEEDED;
		failed += m[i].phase == PH_FAILED;
	}
	if (now_model)
		return pg_step_now(g, min, ns, m, n, running, succeeded, failed, now);
	if (bound > g->scheduled) {
		/* PostBind, once per new binding: Scheduling, then Scheduled. */
		g->scheduled = bound;
		if (*g->start == '\0')
			(void)kc_time_format(now, g->start, sizeof(g->start));
		(void)kc_strlcpy(g->phase, g->scheduled >= min ? "Scheduled" : "Scheduling",
		    sizeof(g->phase));
	}
	if (*g->phase == '\0') {
		(void)kc_strlcpy(g->phase, "Pending", sizeof(g->phase));
		return 0;
	}
	if (phase_is(g, "Pending")) {
		if (n != 0 && (int64_t)n >= min) {
			(void)kc_strlcpy(g->phase, "PreScheduling", sizeof(g->phase));
			if ((r = occupied_by(g, ns, &m[0])) < 0)
				return r;
		}
		return 0;
	}
	g->running = running;
	g->succeeded = succeeded;
	g->failed = failed;
	if (n == 0) {
		(void)kc_strlcpy(g->phase, "Pending", sizeof(g->phase));
		return 0;
	}
	if (g->scheduled >= min && phase_is(g, "Scheduling"))
		(void)kc_strlcpy(g->phase, "Scheduled", sizeof(g->phase));
	if (succeeded + running >= min && phase_is(g, "Scheduled"))
		(void)kc_strlcpy(g->phase, "Running", sizeof(g->phase));
	if (failed != 0 && failed + running + succeeded >= min)
		(void)kc_strlcpy(g->phase, "Failed", sizeof(g->phase));
	if (succeeded >= min)
		(void)kc_strlcpy(g->phase, "Finished", sizeof(g->phase));
	return 0;
}

static int
pg_status(const struct json_object *pg, struct mstat *m, size_t n, time_t now,
    struct json_object **ret, bool *ret_changed, struct kc_status *st)
{
	struct json_object *meta = jobj(pg, "metadata"), *status = jobj(pg, "status");
	struct json_object *before = NULL, *after = NULL;
	struct pgst g, old;
	const char *ns = jstr(meta, "namespace");
	int64_t min = kc_json_int(pg, 0, "spec", "minMember");
	const char *api = jstr(pg, "apiVersion");
	bool now_model = api == NULL || !sched_has_prefix(api, SCHED_PG_GROUP_OLD "/");
	int r;

	if (meta == NULL)
		return kc_status_set(st, KC_EINVALID, "PodGroup has no metadata");
	if (n != 0)
		sched_sort(m, n, sizeof(*m), mstat_cmp);
	if ((r = pgst_read(status, &g)) < 0)
		return r;
	if ((r = pgst_read(status, &old)) < 0)
		goto out;
	for (int i = 0; i < 16; i++) {
		struct pgst prev = g;
		char *occ = g.occupied;

		if ((r = pg_step(&g, min, ns != NULL ? ns : "", m, n, now, now_model)) < 0)
			goto out;
		if (strcmp(prev.phase, g.phase) == 0 && prev.scheduled == g.scheduled &&
		    prev.running == g.running && prev.succeeded == g.succeeded &&
		    prev.failed == g.failed && strcmp(prev.start, g.start) == 0 &&
		    occ == g.occupied)
			break;
	}
	if ((r = pgst_json(&g, &after)) < 0 || (r = pgst_json(&old, &before)) < 0)
		goto out;
	if (ret_changed != NULL)
		*ret_changed = !kc_json_equal(before, after);
	*ret = after;
	after = NULL;
out:
	if (before != NULL)
		json_object_put(before);
	if (after != NULL)
		json_object_put(after);
	kc_free(g.occupied);
	kc_free(old.occupied);
	return r;
}

int
sched_podgroup_status(const struct json_object *pg, struct json_object *const *pods,
    size_t npods, time_t now, struct json_object **ret, bool *ret_changed,
    struct kc_status *st)
{
	struct mstat *m = NULL;
	const char **owners = NULL;
	size_t nown = 0, k = 0;
	int r;

	for (size_t i = 0; i < npods; i++)
		nown += jlen(jarr(jobj(pods[i], "metadata"), "ownerReferences"));
	if ((npods != 0 && (m = kc_calloc(npods, sizeof(*m))) == NULL) ||
	    (nown != 0 && (owners = kc_calloc(nown, sizeof(*owners))) == NULL)) {
		kc_free(m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < npods; i++) {
		struct json_object *meta = jobj(pods[i], "metadata");
		struct json_object *refs = jarr(meta, "ownerReferences");
		const char *name = jstr(meta, "name"), *node;

		node = jstr(jobj(pods[i], "spec"), "nodeName");
		m[i].name = name != NULL ? name : "";
		m[i].bound = node != NULL && *node != '\0';
		m[i].phase = sched_phase_of(jstr(jobj(pods[i], "status"), "phase"));
		m[i].owners = owners + k;
		for (size_t j = 0; j < jlen(refs); j++) {
			const char *o = jstr(jidx(refs, j), "name");

			owners[k++] = o != NULL ? o : "";
			m[i].nowners++;
		}
	}
	r = pg_status(pg, m, npods, now, ret, ret_changed, st);
	kc_free(m);
	kc_free(owners);
	return r;
}

int
sched_podgroup_status_of(const struct sched *s, const struct json_object *pg,
    time_t now, struct json_object **ret, bool *ret_changed, struct kc_status *st)
{
	struct json_object *meta = jobj(pg, "metadata");
	const char *api = jstr(pg, "apiVersion"), *ns = jstr(meta, "namespace");
	const char *name = jstr(meta, "name");
	struct spod **pv = NULL;
	struct mstat *m = NULL;
	char *key = NULL;
	size_t n = 0, k = 0;
	int r;

	if (ns == NULL || name == NULL)
		return kc_status_set(st, KC_EINVALID,
		    "PodGroup has no metadata.namespace or metadata.name");
	if ((key = sched_pg_key(api != NULL && sched_has_prefix(api, SCHED_PG_GROUP_OLD "/") ?
	    SCHED_PG_GROUP_OLD : SCHED_PG_GROUP, ns, name)) == NULL)
		return -ENOMEM;
	if ((r = sched_smap_values(&s->pods, (void ***)&pv, &n)) < 0)
		goto out;
	if (n != 0 && (m = kc_calloc(n, sizeof(*m))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct spod *p = pv[i];

		if (p->pgkey == NULL || strcmp(p->pgkey, key) != 0)
			continue;
		m[k].name = p->name;
		m[k].bound = p->node != NULL;
		m[k].phase = p->phase;
		m[k].owners = (const char *const *)p->owners;
		m[k].nowners = p->nowners;
		k++;
	}
	r = pg_status(pg, m, k, now, ret, ret_changed, st);
out:
	kc_free(key);
	kc_free(pv);
	kc_free(m);
	return r;
}

/* Maps each valid PodGroup of 'pgs' to its index + 1, by its key. */
static int
pg_index(struct json_object *const *pgs, size_t npg, struct smap *idx)
{
	for (size_t i = 0; i < npg; i++) {
		struct json_object *meta = jobj(pgs[i], "metadata");
		const char *api = jstr(pgs[i], "apiVersion"), *ns = jstr(meta, "namespace");
		const char *name = jstr(meta, "name");
		bool old = api != NULL && sched_has_prefix(api, SCHED_PG_GROUP_OLD "/");
		char *key;
		int r;

		if (ns == NULL || name == NULL)
			continue;
		if ((key = sched_pg_key(old ? SCHED_PG_GROUP_OLD : SCHED_PG_GROUP, ns,
		    name)) == NULL)
			return -ENOMEM;
		r = sched_smap_put(idx, key, (void *)(uintptr_t)(i + 1));
		kc_free(key);
		if (r < 0)
			return r;
	}
	return 0;
}

int
sched_podgroups_bound(const struct sched *s, struct json_object *const *pgs, size_t npg,
    int64_t *ret_bound)
{
	struct smap idx = { KC_HMAP_INIT };
	struct kc_hmap_node *n = NULL;
	size_t b = 0;
	int r;

	for (size_t i = 0; i < npg; i++)
		ret_bound[i] = 0;
	if (npg == 0)
		return 0;
	if ((r = pg_index(pgs, npg, &idx)) < 0)
		goto out;
	while ((n = kc_hmap_next(&s->pods.m, &b, n)) != NULL) {
		const struct spod *p = ((struct smap_ent *)n)->val;
		uintptr_t k;

		if (p->pgkey == NULL || p->node == NULL ||
		    (k = (uintptr_t)sched_smap_get(&idx, p->pgkey)) == 0)
			continue;
		ret_bound[k - 1]++;
	}
out:
	sched_smap_clear(&idx);
	return r;
}

/*
 * Every PodGroup's status in one pass over the pods: the members are
 * grouped through a map of the groups' keys, so a sync of G groups over
 * P pods costs O(G + P), not O(G * P) (sched_podgroup_status_of() per
 * group rescans every pod).
 */
int
sched_podgroup_statuses_of(const struct sched *s, struct json_object *const *pgs,
    size_t npg, time_t now, struct json_object **ret, bool *ret_changed)
{
	struct smap idx = { KC_HMAP_INIT };
	struct spod **pv = NULL;
	struct mstat *m = NULL;
	size_t n = 0, *cnt = NULL, *pos = NULL;
	int r = -ENOMEM;

	for (size_t i = 0; i < npg; i++) {
		ret[i] = NULL;
		ret_changed[i] = false;
	}
	if (npg == 0)
		return 0;
	if ((cnt = kc_calloc(npg, sizeof(*cnt))) == NULL ||
	    (pos = kc_calloc(npg, sizeof(*pos))) == NULL)
		goto out;
	if ((r = pg_index(pgs, npg, &idx)) < 0)
		goto out;
	if ((r = sched_smap_values(&s->pods, (void ***)&pv, &n)) < 0)
		goto out;
	r = -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uintptr_t k = pv[i]->pgkey != NULL ?
		    (uintptr_t)sched_smap_get(&idx, pv[i]->pgkey) : 0;

		if (k != 0)
			cnt[k - 1]++;
	}
	if (n != 0 && (m = kc_calloc(n, sizeof(*m))) == NULL)
		goto out;
	for (size_t i = 1; i < npg; i++)
		pos[i] = pos[i - 1] + cnt[i - 1];
	/* Members in the pods' order, as sched_podgroup_status_of() has them. */
	for (size_t i = 0; i < n; i++) {
		const struct spod *p = pv[i];
		uintptr_t k = p->pgkey != NULL ? (uintptr_t)sched_smap_get(&idx, p->pgkey) : 0;
		struct mstat *e;

		if (k == 0)
			continue;
		e = &m[pos[k - 1]++];
		e->name = p->name;
		e->bound = p->node != NULL;
		e->phase = p->phase;
		e->owners = (const char *const *)p->owners;
		e->nowners = p->nowners;
	}
	for (size_t i = 0; i < npg; i++) {
		struct kc_status st = { 0 };
		/* pos[i] now ends group i's members. */
		struct mstat *first = m != NULL ? m + (pos[i] - cnt[i]) : NULL;

		if (jstr(jobj(pgs[i], "metadata"), "namespace") == NULL ||
		    jstr(jobj(pgs[i], "metadata"), "name") == NULL)
			continue;
		r = pg_status(pgs[i], first, cnt[i], now, &ret[i], &ret_changed[i], &st);
		if (r == -ENOMEM)
			goto out;
		if (r < 0) {
			ret[i] = NULL;
			ret_changed[i] = false;
		}
	}
	r = 0;
out:
	if (r < 0)
		for (size_t i = 0; i < npg; i++)
			if (ret[i] != NULL) {
				json_object_put(ret[i]);
				ret[i] = NULL;
				ret_changed[i] = false;
			}
	sched_smap_clear(&idx);
	kc_free(pv);
	kc_free(m);
	kc_free(cnt);
	kc_free(pos);
	return r;
}

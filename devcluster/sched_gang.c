/*
 * sched_gang.c: gangs, the pending pods of one PodGroup under a profile
 * that runs Coscheduling, placed as a whole: PreFilter, then every
 * member greedily on the scratch state, kept only if the quorum is
 * reached; members with required pod affinity to each other follow one
 * topology domain, trying the others when the first fails; on failure,
 * preemption for the whole gang (the lowest priority level that lets
 * every member fit, then only the nodes the gang uses, then reprieves).
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

/*
 * Gangs
 */

struct sim {
	struct pnode	**where;	/* per member: where it is placed */
	size_t		  placed;
	bool		 *first;	/* placed in the first pass */
	char		**fitmsg;	/* first pass: FitError of a member that failed */
	int64_t		 *assigned;	/* first pass: group pods assigned when it failed */
	size_t		  opener;	/* first member opening a domain, or SIZE_MAX */
	struct pnode	**dom;		/* one node per domain it could open, best first */
	size_t		  ndom;
	bool		  costs;	/* placement prefers the cheapest evictions */
};

static int
sim_init(struct sim *sm, size_t nm)
{
	memset(sm, 0, sizeof(*sm));
	sm->opener = SIZE_MAX;
	if ((sm->where = kc_calloc(nm + 1, sizeof(*sm->where))) == NULL ||
	    (sm->first = kc_calloc(nm + 1, sizeof(*sm->first))) == NULL ||
	    (sm->fitmsg = kc_calloc(nm + 1, sizeof(*sm->fitmsg))) == NULL ||
	    (sm->assigned = kc_calloc(nm + 1, sizeof(*sm->assigned))) == NULL)
		return -ENOMEM;
	return 0;
}

static void
sim_free(struct sim *sm, size_t nm)
{
	kc_free(sm->where);
	kc_free(sm->first);
	if (sm->fitmsg != NULL)
		sched_strv_free(sm->fitmsg, nm);
	kc_free(sm->assigned);
	kc_free(sm->dom);
	memset(sm, 0, sizeof(*sm));
}

static void
sim_undo(const struct unit *u, struct sim *sm)
{
	for (size_t i = u->nm; i-- > 0;)
		if (sm->where[i] != NULL) {
			sched_unplace(u->m[i]);
			sm->where[i] = NULL;
		}
	sm->placed = 0;
}

static int
better_cmp(const void *a, const void *b, void *arg)
{
	const struct eval *ev = arg;
	const struct pnode *x = *(struct pnode *const *)a, *y = *(struct pnode *const *)b;

	if (sched_better(ev, x, y))
		return -1;
	return sched_better(ev, y, x) ? 1 : 0;
}

/* The opener's domains, in the order of its best node in each. */
static int
sim_domains(struct sim *sm, const struct eval *ev, struct pnode **feas, size_t nf)
{
	sched_sort_r(feas, nf, sizeof(*feas), better_cmp, (void *)(uintptr_t)ev);
	kc_free(sm->dom);
	sm->ndom = 0;
	if ((sm->dom = kc_calloc(nf, sizeof(*sm->dom))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < nf; i++) {
		bool seen = false;

		for (size_t k = 0; !seen && k < sm->ndom; k++)
			seen = sched_same_domain(ev->p, sm->dom[k], feas[i]);
		if (!seen)
			sm->dom[sm->ndom++] = feas[i];
	}
	return 0;
}

/*
 * Places the members greedily, in order. 'pin' restricts the opener to
 * one domain; 'detect' looks for the opener (a member whose affinity to
 * its own kind finds no matching pod yet); 'msgs' keeps FitErrors.
 */
static int
sim_pass(struct plan *pl, const struct unit *u, struct sim *sm, const struct pnode *pin,
    bool only_marked, bool detect, bool msgs)
{
	int r = 0;

	sm->placed = 0;
	for (size_t i = 0; r == 0 && i < u->nm; i++) {
		struct ppod *pp = u->m[i];
		struct eval ev;
		struct hist h = { 0 };
		struct pnode *best = NULL, **feas = NULL;
		size_t nf = 0;
		bool opens;

		sm->where[i] = NULL;
		if (pp->p->broken != NULL)
			continue;
		if ((r = sched_eval_init(&ev, pl, pp, u->pgkey)) < 0)
			return r;
		ev.only_marked = only_marked;
		ev.costs = sm->costs;
		if (pin != NULL && i == sm->opener) {
			ev.pin = pin;
			ev.pinp = pp->p;
		}
		opens = detect && sm->opener == SIZE_MAX && pp->p->naff != 0 && ev.aff_on &&
		    ev.aff.nonzero == 0 && ev.self && !ev.conflict;
		if (opens && (feas = kc_calloc(pl->nnodes + 1, sizeof(*feas))) == NULL)
			r = -ENOMEM;
		if (r == 0 && !ev.conflict)
			r = sched_eval_all(&ev, msgs ? &h : NULL, NULL, feas, &nf, &best);
		if (r == 0 && opens && nf != 0) {
			sm->opener = i;
			r = sim_domains(sm, &ev, feas, nf);
		}
		if (r == 0 && best != NULL) {
			if ((r = sched_place(pp, best)) == 0) {
				sm->where[i] = best;
				sm->placed++;
				if (msgs)
					sm->first[i] = true;
			}
		} else if (r == 0 && msgs) {
			sm->fitmsg[i] = sched_fit_message(pl->nnodes, &h,
			    ev.conflict ? M_CONFLICT : NULL);
			sm->assigned[i] = u->bound + (int64_t)sm->placed;
			if (sm->fitmsg[i] == NULL)
				r = -ENOMEM;
		}
		kc_free(feas);
		sched_hist_free(&h);
		sched_eval_free(&ev);
	}
	return r;
}

/*
 * Places at least 'target' members, trying each domain the opener could
 * open. On success the placement stays in the scratch state; otherwise
 * nothing does (the first pass's messages stay in 'sm').
 */
static int
sim_run(struct plan *pl, const struct unit *u, size_t target, bool only_marked, bool msgs,
    struct sim *sm, bool *ret_ok)
{
	struct pnode *first_dom;
	int r;

	*ret_ok = false;
	sm->opener = SIZE_MAX;
	if ((r = sim_pass(pl, u, sm, NULL, only_marked, true, msgs)) < 0)
		return r;
	if (sm->placed >= target) {
		*ret_ok = true;
		return 0;
	}
	first_dom = sm->opener != SIZE_MAX ? sm->where[sm->opener] : NULL;
	sim_undo(u, sm);
	if (sm->opener == SIZE_MAX)
		return 0;
	for (size_t d = 0; d < sm->ndom; d++) {
		if (first_dom != NULL &&
		    sched_same_domain(u->m[sm->opener]->p, sm->dom[d], first_dom))
			continue;
		if ((r = sim_pass(pl, u, sm, sm->dom[d], only_marked, false, false)) < 0)
			return r;
		if (sm->placed >= target) {
			*ret_ok = true;
			return 0;
		}
		sim_undo(u, sm);
	}
	return 0;
}

/* Coscheduling's PostFilter rejection message, or none (*ret NULL). */
static int
cos_reject(const struct spg *g, const struct spod *p, int64_t assigned, char **ret)
{
	*ret = NULL;
	if (assigned >= g->min)
		return 0;	/* enough pods already: the group is not rejected */
	if ((float)(g->min - assigned) / (float)g->min <= 0.1f)
		return 0;	/* a small gap: later pods may still make it */
	*ret = kc_asprintf("PodGroup %s/%s gets rejected due to Pod %s is unschedulable "
	    "even after PostFilter", g->ns, g->name, p->name);
	return *ret != NULL ? 0 : -ENOMEM;
}

/* The pod group has fewer than minMember pods: Coscheduling's PreFilter. */
static int
gang_wait(struct plan *pl, const struct unit *u)
{
	const struct spg *g = u->pg;
	struct hist diag = { 0 };
	int r;

	if ((r = sched_hist_add(&diag, R_NOT_HELPFUL, (int64_t)pl->nnodes)) < 0)
		return r;
	for (size_t i = 0; r == 0 && i < u->nm; i++) {
		struct ppod *pp = u->m[i];
		const struct spod *p = pp->p;
		char *why = NULL, *fitmsg = NULL, *pre = NULL, *cos = NULL;
		const char *inel;

		if (p->broken != NULL) {
			r = sched_out_unsched(pl, p, "SchedulerError", kc_strdup(p->broken));
			continue;
		}
		inel = p->never ? M_NEVER : NULL;
		if ((why = kc_asprintf("pre-filter pod %s cannot find enough sibling pods, "
		    "current pods number: %" PRId64 ", minMember of group: %" PRId32, p->name,
		    u->total, g->min)) == NULL ||
		    (fitmsg = sched_fit_message(pl->nnodes, NULL, why)) == NULL ||
		    (pre = sched_preempt_message(pl->nnodes, &diag, inel)) == NULL ||
		    (r = cos_reject(g, p, u->bound, &cos)) < 0)
			r = r < 0 ? r : -ENOMEM;
		else
			r = sched_fail_pod(pl, pp, sched_join_message(fitmsg, pre, cos),
			    inel != NULL);
		kc_free(why);
		kc_free(fitmsg);
		kc_free(pre);
		kc_free(cos);
	}
	sched_hist_free(&diag);
	return r;
}

static int64_t
ext_sum(const struct spod *p)
{
	int64_t sum = 0;

	for (size_t i = 0; i < p->nreq; i++)
		if (p->req[i].idx >= RES_FIXED)
			sum = sat_add(sum, p->req[i].val);
	return sum;
}

/*
 * Reprieve order for a gang's victims: the most important first, and
 * among equals the smaller first, so the larger pods go and fewer do.
 */
static int
reprieve_cmp(const void *a, const void *b)
{
	const struct spod *x = (*(struct ppod *const *)a)->p;
	const struct spod *y = (*(struct ppod *const *)b)->p;
	int64_t ex = ext_sum(x), ey = ext_sum(y), cx, cy;

	if (x->prio != y->prio)
		return x->prio > y->prio ? -1 : 1;
	if (ex != ey)
		return ex < ey ? -1 : 1;
	cx = sched_rv_get(x->req, x->nreq, RES_CPU);
	cy = sched_rv_get(y->req, y->nreq, RES_CPU);
	if (cx != cy)
		return cx < cy ? -1 : 1;
	cx = sched_rv_get(x->req, x->nreq, RES_MEM);
	cy = sched_rv_get(y->req, y->nreq, RES_MEM);
	if (cx != cy)
		return cx < cy ? -1 : 1;
	if (x->started != y->started)
		return x->started < y->started ? -1 : 1;
	return strcmp(x->key, y->key);
}

static int
prio_asc_cmp(const void *a, const void *b)
{
	const struct spod *x = (*(struct ppod *const *)a)->p;
	const struct spod *y = (*(struct ppod *const *)b)->p;

	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* Per node: the highest priority evicted there, and how many. */
static void
set_costs(struct plan *pl, struct ppod *const *rem, size_t nrem)
{
	for (size_t i = 0; i < pl->nnodes; i++) {
		pl->nodes[i].cost = INT64_MIN;
		pl->nodes[i].cost2 = 0;
	}
	for (size_t i = 0; i < nrem; i++) {
		struct pnode *pn = rem[i]->home;

		if (!rem[i]->removed)
			continue;
		pn->cost = KC_MAX(pn->cost, (int64_t)rem[i]->p->prio);
		pn->cost2++;
	}
}

static void
unmark_all(struct plan *pl)
{
	for (size_t i = 0; i < pl->nnodes; i++)
		pl->nodes[i].mark = false;
}

/* Puts a known-good placement back (the state is as when it was found). */
static int
replace_all(const struct unit *u, struct sim *sm, struct pnode *const *good)
{
	int r;

	sm->placed = 0;
	for (size_t i = 0; i < u->nm; i++)
		if ((sm->where[i] = good[i]) != NULL) {
			if ((r = sched_place(u->m[i], good[i])) < 0)
				return r;
			sm->placed++;
		}
	return 0;
}

/* Emits a gang preemption: nominations, victims and messages. */
static int
gang_preempt_out(struct plan *pl, const struct unit *u, struct sim *first,
    struct pnode *const *good, struct ppod *const *rem, size_t nrem, int32_t prio)
{
	const struct spod *by = NULL;
	int r;

	for (size_t i = 0; i < u->nm; i++)
		if (good[i] != NULL) {
			if (by == NULL)
				by = u->m[i]->p;
			if ((r = sched_out_nom(pl, u->m[i]->p, good[i])) < 0 ||
			    (r = sched_clear_lower_noms(pl, good[i], prio, u->pgkey)) < 0)
				return r;
		}
	for (size_t i = 0; i < nrem; i++)
		if (rem[i]->removed && (r = sched_out_victim(pl, rem[i]->p, rem[i]->home, by)) < 0)
			return r;
	for (size_t i = 0; i < u->nm; i++) {
		const struct spod *p = u->m[i]->p;

		if (p->broken != NULL)
			r = sched_out_unsched(pl, p, "SchedulerError", kc_strdup(p->broken));
		else if (!first->first[i] && first->fitmsg[i] != NULL) {
			r = sched_out_unsched(pl, p, "Unschedulable", first->fitmsg[i]);
			first->fitmsg[i] = NULL;
		} else
			r = 0;
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * Preemption for a whole gang (see the file header). Sets '*ret_done'
 * when it nominated the gang, or '*ret_inel' when a member may not
 * preempt. Otherwise the scratch state is left as it was.
 */
static int
gang_preempt(struct plan *pl, const struct unit *u, size_t need, struct sim *first,
    bool *ret_done, const char **ret_inel)
{
	struct ppod **low = NULL, **rem = NULL, **back = NULL;
	struct pnode **good = NULL;
	struct sim sm;
	size_t target = 0, nl = 0, nrem = 0, nback = 0, kept;
	int32_t prio = INT32_MAX;
	bool ok = false;
	int r;

	*ret_done = false;
	*ret_inel = NULL;
	for (size_t i = 0; i < u->nm; i++) {
		const struct spod *p = u->m[i]->p;

		if (p->broken != NULL)
			continue;
		target++;
		prio = KC_MIN(prio, p->prio);
		if ((*ret_inel = sched_ineligible(pl, p, NULL)) != NULL)
			return 0;
	}
	if (target == 0 || target < need)
		return 0;
	for (size_t i = 0; i < pl->npods; i++) {
		const struct ppod *q = &pl->pods[i];

		if (q->node != NULL && !q->placed && q->p->prio < prio &&
		    !sched_same_gang(u->pgkey, q->p))
			nl++;
	}
	if (nl == 0)
		return 0;
	if ((r = sim_init(&sm, u->nm)) < 0)
		goto out;
	sm.costs = true;
	if ((low = kc_calloc(nl, sizeof(*low))) == NULL ||
	    (rem = kc_calloc(nl, sizeof(*rem))) == NULL ||
	    (back = kc_calloc(nl, sizeof(*back))) == NULL ||
	    (good = kc_calloc(u->nm + 1, sizeof(*good))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	nl = 0;
	for (size_t i = 0; i < pl->npods; i++) {
		struct ppod *q = &pl->pods[i];

		if (q->node != NULL && !q->placed && q->p->prio < prio &&
		    !sched_same_gang(u->pgkey, q->p))
			low[nl++] = q;
	}
	sched_sort(low, nl, sizeof(*low), prio_asc_cmp);
	/* The lowest priority level whose pods, all gone, let the gang fit. */
	for (size_t i = 0; !ok && i < nl;) {
		int32_t level = low[i]->p->prio;

		for (; i < nl && low[i]->p->prio == level; i++) {
			low[i]->home = low[i]->node;
			low[i]->removed = true;
			(void)sched_evict(NULL, low[i]);
			rem[nrem++] = low[i];
		}
		set_costs(pl, rem, nrem);
		if ((r = sim_run(pl, u, target, false, false, &sm, &ok)) < 0)
			goto out;
	}
	if (!ok) {
		for (size_t i = nrem; r == 0 && i-- > 0;) {
			rem[i]->removed = false;
			r = sched_restore(NULL, rem[i], rem[i]->home);
		}
		goto out;
	}
	/* Only the pods on the nodes the gang takes. */
	for (size_t i = 0; i < u->nm; i++)
		if (sm.where[i] != NULL)
			sm.where[i]->mark = true;
	sim_undo(u, &sm);
	kept = 0;
	for (size_t i = 0; i < nrem; i++) {
		struct ppod *q = rem[i];

		if (q->home->mark) {
			rem[kept++] = q;
			continue;
		}
		q->removed = false;
		back[nback++] = q;
		if ((r = sched_restore(NULL, q, q->home)) < 0)
			goto out;
	}
	nrem = kept;
	set_costs(pl, rem, nrem);
	if ((r = sim_run(pl, u, target, true, false, &sm, &ok)) < 0)
		goto out;
	if (!ok) {
		/* The pods elsewhere mattered after all (anti-affinity): keep them out. */
		for (size_t i = 0; i < nback; i++) {
			back[i]->removed = true;
			(void)sched_evict(NULL, back[i]);
			rem[nrem++] = back[i];
		}
		set_costs(pl, rem, nrem);
		if ((r = sim_run(pl, u, target, true, false, &sm, &ok)) < 0)
			goto out;
		if (!ok) {
			/* Cannot happen (the state is the one that fitted); give up. */
			for (size_t i = nrem; r == 0 && i-- > 0;) {
				rem[i]->removed = false;
				r = sched_restore(NULL, rem[i], rem[i]->home);
			}
			goto out;
		}
	}
	memcpy(good, sm.where, u->nm * sizeof(*good));
	/* Reprieve whatever the gang can do without. */
	sched_sort(rem, nrem, sizeof(*rem), reprieve_cmp);
	for (size_t i = 0; i < nrem; i++) {
		struct ppod *q = rem[i];

		sim_undo(u, &sm);
		q->removed = false;
		if ((r = sched_restore(NULL, q, q->home)) < 0 ||
		    (r = sim_run(pl, u, target, true, false, &sm, &ok)) < 0)
			goto out;
		if (ok) {
			memcpy(good, sm.where, u->nm * sizeof(*good));
			continue;
		}
		q->removed = true;
		(void)sched_evict(NULL, q);
		if ((r = replace_all(u, &sm, good)) < 0)
			goto out;
	}
	unmark_all(pl);
	r = gang_preempt_out(pl, u, first, good, rem, nrem, prio);
	*ret_done = r == 0;
out:
	unmark_all(pl);
	if (sm.where != NULL)
		sim_free(&sm, u->nm);
	kc_free(low);
	kc_free(rem);
	kc_free(back);
	kc_free(good);
	return r;
}

/* The "preemption: ..." part for a gang member the gang could not place. */
static int
member_diag(struct plan *pl, const struct unit *u, struct ppod *pp, char **ret)
{
	struct eval ev;
	struct hist diag = { 0 };
	struct cand c = { 0 };
	struct pnode *best;
	uint8_t *codes;
	int r;

	*ret = NULL;
	if ((r = sched_eval_init(&ev, pl, pp, u->pgkey)) < 0)
		return r;
	if ((codes = kc_calloc(pl->nnodes, 1)) == NULL)
		r = -ENOMEM;
	else if (ev.conflict)
		memset(codes, F_UNRESOLV, pl->nnodes);
	else
		r = sched_eval_all(&ev, NULL, codes, NULL, NULL, &best);
	if (r == 0)
		r = sched_preempt_one(&ev, codes, true, &diag, &c);
	if (r == 0 && (*ret = sched_preempt_message(pl->nnodes, &diag, NULL)) == NULL)
		r = -ENOMEM;
	kc_free(c.v);
	kc_free(codes);
	sched_hist_free(&diag);
	sched_eval_free(&ev);
	return r;
}

static int
gang_fail(struct plan *pl, const struct unit *u, struct sim *sm, const char *inel)
{
	bool rejected = false;
	int r = 0;

	for (size_t i = 0; r == 0 && i < u->nm; i++) {
		struct ppod *pp = u->m[i];
		const struct spod *p = pp->p;
		char *pre = NULL, *cos = NULL;

		if (p->broken != NULL) {
			r = sched_out_unsched(pl, p, "SchedulerError", kc_strdup(p->broken));
			continue;
		}
		if (sm->first[i] || sm->fitmsg[i] == NULL)
			continue;
		if (inel != NULL) {
			if ((pre = sched_preempt_message(pl->nnodes, NULL, inel)) == NULL)
				r = -ENOMEM;
		} else
			r = member_diag(pl, u, pp, &pre);
		if (r == 0)
			r = cos_reject(u->pg, p, sm->assigned[i], &cos);
		if (r == 0) {
			rejected = rejected || cos != NULL;
			r = sched_fail_pod(pl, pp, sched_join_message(sm->fitmsg[i], pre, cos),
			    inel != NULL);
		}
		kc_free(pre);
		kc_free(cos);
	}
	for (size_t i = 0; r == 0 && rejected && i < u->nm; i++)
		if (sm->first[i])
			r = sched_fail_pod(pl, u->m[i], kc_strdup(M_OPTIMISTIC), inel != NULL);
	return r;
}

int
sched_place_gang(struct plan *pl, const struct unit *u)
{
	const struct spg *g = u->pg;
	struct sim sm;
	const char *inel = NULL;
	size_t need;
	bool ok = false, done = false;
	int r;

	if (g == NULL) {
		for (size_t i = 0; i < u->nm; i++)
			if ((r = sched_place_one(pl, u->m[i], MODE_MISSING_PG, u->pgkey)) < 0)
				return r;
		return 0;
	}
	if (u->total < g->min)
		return gang_wait(pl, u);
	need = g->min > u->bound ? (size_t)(g->min - u->bound) : 0;
	if ((r = sim_init(&sm, u->nm)) < 0)
		goto out;
	if ((r = sim_run(pl, u, need, false, true, &sm, &ok)) < 0)
		goto out;
	if (ok) {
		for (size_t i = 0; i < u->nm; i++)
			if (sm.where[i] != NULL &&
			    (r = sched_out_bind(pl, u->m[i]->p, sm.where[i])) < 0)
				goto out;
		/* Past the quorum the rest go one by one (Permit lets them through). */
		for (size_t i = 0; i < u->nm; i++)
			if (sm.where[i] == NULL &&
			    (r = sched_place_one(pl, u->m[i], MODE_DEFAULT, u->pgkey)) < 0)
				goto out;
		goto out;
	}
	if ((r = gang_preempt(pl, u, need, &sm, &done, &inel)) < 0 || done)
		goto out;
	r = gang_fail(pl, u, &sm, inel);
out:
	sim_free(&sm, u->nm);
	return r;
}


/*
 * sched_fit.c: scheduling one pod against a plan's scratch state.
 * Upstream's filters in upstream's order (NodeUnschedulable,
 * TaintToleration, NodeAffinity, NodeResourcesFit, InterPodAffinity,
 * with the InterPodAffinity counters kept incrementally), the score
 * (plain bin packing), and DefaultPreemption: per node, evict every
 * lower-priority pod, check, reprieve the most important back one by
 * one, then pick a node by upstream's criteria. Gangs (sched_gang.c)
 * reuse the filters, placement and eviction.
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
 * Evaluating one pod: filters and score
 */

static bool
tolerated(const struct spod *p, const char *key, const char *value, const char *effect)
{
	for (size_t i = 0; i < p->ntols; i++) {
		const struct tol *t = &p->tols[i];

		if (*t->effect != '\0' && strcmp(t->effect, effect) != 0)
			continue;
		if (*t->key != '\0' && strcmp(t->key, key) != 0)
			continue;
		if (t->op == TOL_EXISTS || (t->op == TOL_EQUAL && strcmp(t->value, value) == 0))
			return true;
	}
	return false;
}

static bool
strv_has(char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

static bool
nsreq_label(const struct nsreq *q, const struct json_object *labels)
{
	const char *v = sched_label(labels, q->key);
	int64_t x;

	switch (q->op) {
	case NS_IN:
		return v != NULL && strv_has(q->vals, q->nvals, v);
	case NS_NOTIN:
		return v == NULL || !strv_has(q->vals, q->nvals, v);
	case NS_EXISTS:
		return v != NULL;
	case NS_DNE:
		return v == NULL;
	case NS_GT:
		return v != NULL && kc_parse_i64(v, &x) == 0 && x > q->num;
	case NS_LT:
		return v != NULL && kc_parse_i64(v, &x) == 0 && x < q->num;
	default:
		return false;
	}
}

static bool
nsreq_field(const struct nsreq *q, const char *nodename)
{
	const char *v = strcmp(q->key, "metadata.name") == 0 ? nodename : "";

	if (q->op == NS_IN)
		return strcmp(v, q->vals[0]) == 0;
	return strcmp(v, q->vals[0]) != 0;
}

/* nodeSelector and the required node affinity terms (ORed). */
static bool
node_affinity_ok(const struct spod *p, const struct snode *n)
{
	if (p->nodesel != NULL) {
		json_object_object_foreach(p->nodesel, k, v) {
			const char *l = sched_label(n->labels, k);

			if (l == NULL || strcmp(l, json_object_get_string(v)) != 0)
				return false;
		}
	}
	if (!p->has_naff)
		return true;
	for (size_t i = 0; i < p->nterms; i++) {
		const struct nsterm *t = &p->terms[i];
		bool ok = t->valid;

		for (size_t k = 0; ok && k < t->nex; k++)
			ok = nsreq_label(&t->ex[k], n->labels);
		for (size_t k = 0; ok && k < t->nfl; k++)
			ok = nsreq_field(&t->fl[k], n->name);
		if (ok)
			return true;
	}
	return false;
}

static int
reject(struct hist *h, const char *reason, int code)
{
	int r;

	if ((r = sched_hist_add(h, reason, 1)) < 0)
		return r;
	return code;
}

/* What nominated pods of at least this priority hold on the node. */
static int64_t
nom_extra(const struct eval *ev, const struct pnode *pn, int64_t idx)
{
	int64_t sum = 0;

	for (size_t i = 0; i < pn->nn; i++) {
		const struct ppod *q = pn->noms[i];

		if (q->nom != pn || q == ev->pp || q->p->prio < ev->p->prio ||
		    sched_same_gang(ev->gang, q->p))
			continue;
		sum = sat_add(sum, idx < 0 ? 1 :
		    sched_rv_get(q->p->req, q->p->nreq, (uint32_t)idx));
	}
	return sum;
}

/* NodeResourcesFit: every insufficient resource is a reason. */
static int
fit(const struct eval *ev, const struct pnode *pn, struct hist *h)
{
	const struct spod *p = ev->p;
	const struct sched *s = ev->pl->s;
	int code = F_OK, r;

	if (sat_add(pn->npods, sat_add(pn->nn != 0 ? nom_extra(ev, pn, -1) : 0, 1)) >
	    pn->n->maxpods) {
		if ((r = sched_hist_add(h, R_TOO_MANY_PODS, 1)) < 0)
			return r;
		code = F_UNSCHED;
	}
	for (size_t i = 0; i < p->nreq; i++) {
		uint32_t idx = p->req[i].idx;
		int64_t val = p->req[i].val, avail;

		if (idx < RES_FIXED ? val <= 0 : val == 0)
			continue;
		avail = sat_add(pn->alloc[idx], -pn->req[idx]);
		if (pn->nn != 0)
			avail = sat_add(avail, -nom_extra(ev, pn, idx));
		if (val <= avail)
			continue;
		if ((r = sched_hist_add(h, s->resreason[idx], 1)) < 0)
			return r;
		if (val > pn->alloc[idx])
			code = F_UNRESOLV;
		else if (code == F_OK)
			code = F_UNSCHED;
	}
	return code;
}

static const struct json_object *
ns_labels(const struct plan *pl, const char *ns)
{
	const struct sns *n = sched_smap_get(&pl->s->nss, ns);

	if (n != NULL)
		return n->labels;
	return sched_smap_get(&pl->nslabels, ns);
}

static bool
term_match(const struct plan *pl, const struct aterm *t, const struct spod *q)
{
	bool nsok = strv_has(t->nss, t->nnss, q->ns);

	if (!nsok && t->nssel != NULL)
		nsok = kc_label_selector_matches(t->nssel, ns_labels(pl, q->ns));
	return nsok && kc_label_selector_matches(t->sel, q->labels);
}

static bool
match_all(const struct plan *pl, const struct aterm *terms, size_t n, const struct spod *q)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!term_match(pl, &terms[i], q))
			return false;
	return true;
}

/* The incoming pod's own terms against an active pod 'q' on 'pn'. */
static int
aff_in(struct eval *ev, const struct ppod *q, const struct pnode *pn, int64_t d)
{
	const struct spod *p = ev->p;
	const char *v;
	int r;

	if (q == ev->pp)
		return 0;
	if (p->naff != 0 && match_all(ev->pl, p->aff, p->naff, q->p))
		for (size_t i = 0; i < p->naff; i++)
			if ((v = sched_label(pn->n->labels, p->aff[i].key)) != NULL &&
			    (r = sched_tp_add(&ev->aff, p->aff[i].key, v, d)) < 0)
				return r;
	for (size_t i = 0; i < p->nanti; i++)
		if (term_match(ev->pl, &p->anti[i], q->p) &&
		    (v = sched_label(pn->n->labels, p->anti[i].key)) != NULL &&
		    (r = sched_tp_add(&ev->anti, p->anti[i].key, v, d)) < 0)
			return r;
	return 0;
}

/* An active pod's anti-affinity terms against the incoming pod. */
static int
aff_ex(struct eval *ev, const struct ppod *q, const struct pnode *pn, int64_t d)
{
	const struct spod *e = q->p;
	const char *v;
	int r;

	if (q == ev->pp)
		return 0;
	for (size_t i = 0; i < e->nanti; i++)
		if (term_match(ev->pl, &e->anti[i], ev->p) &&
		    (v = sched_label(pn->n->labels, e->anti[i].key)) != NULL &&
		    (r = sched_tp_add(&ev->exist, e->anti[i].key, v, d)) < 0)
			return r;
	return 0;
}

static int
aff_pod(struct eval *ev, const struct ppod *q, const struct pnode *pn, int64_t d)
{
	int r;

	if (!ev->aff_on)
		return 0;
	if ((ev->p->naff != 0 || ev->p->nanti != 0) && (r = aff_in(ev, q, pn, d)) < 0)
		return r;
	return q->p->nanti != 0 ? aff_ex(ev, q, pn, d) : 0;
}

static int
aff_build(struct eval *ev)
{
	struct plan *pl = ev->pl;
	const struct spod *p = ev->p;
	int r;

	sched_tp_reset(&ev->aff);
	sched_tp_reset(&ev->anti);
	sched_tp_reset(&ev->exist);
	ev->aff_on = p->naff != 0 || p->nanti != 0 || pl->nanti != 0;
	if (!ev->aff_on)
		return 0;
	ev->self = match_all(pl, p->aff, p->naff, p);
	if (p->naff != 0 || p->nanti != 0)
		for (size_t i = 0; i < pl->npods; i++) {
			struct ppod *q = &pl->pods[i];

			if (q->node != NULL && (r = aff_in(ev, q, q->node, 1)) < 0)
				return r;
		}
	for (size_t i = 0; i < pl->nanti; i++) {
		struct ppod *q = pl->anti[i];

		if (q->node != NULL && (r = aff_ex(ev, q, q->node, 1)) < 0)
			return r;
	}
	return 0;
}

/* InterPodAffinity's Filter. */
static int
affinity(const struct eval *ev, const struct pnode *pn, struct hist *h)
{
	const struct spod *p = ev->p;
	const struct json_object *labels = pn->n->labels;
	const char *v;

	if (!ev->aff_on)
		return F_OK;
	if (p->naff != 0) {
		bool exist = true;

		for (size_t i = 0; i < p->naff; i++) {
			if ((v = sched_label(labels, p->aff[i].key)) == NULL)
				return reject(h, R_AFFINITY, F_UNRESOLV);
			if (sched_tp_get(&ev->aff, p->aff[i].key, v) <= 0)
				exist = false;
		}
		/* The first pod of a series with affinity to itself goes anywhere. */
		if (!exist && !(ev->aff.nonzero == 0 && ev->self))
			return reject(h, R_AFFINITY, F_UNRESOLV);
	}
	if (ev->anti.nonzero != 0)
		for (size_t i = 0; i < p->nanti; i++)
			if ((v = sched_label(labels, p->anti[i].key)) != NULL &&
			    sched_tp_get(&ev->anti, p->anti[i].key, v) > 0)
				return reject(h, R_ANTI, F_UNSCHED);
	if (ev->exist.nonzero != 0) {
		json_object_object_foreach(mut(labels), k, lv) {
			if (sched_tp_get(&ev->exist, k, json_object_get_string(lv)) > 0)
				return reject(h, R_EXISTING_ANTI, F_UNSCHED);
		}
	}
	return F_OK;
}

static int
cstr_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first failing plugin's verdict for 'pn', its reasons added to 'h'. */
static int
filter(const struct eval *ev, const struct pnode *pn, struct hist *h)
{
	const struct spod *p = ev->p;
	const struct snode *n = pn->n;
	int r;

	if (ev->names != NULL && bsearch(&n->name, ev->names, ev->nnames,
	    sizeof(*ev->names), cstr_cmp) == NULL)
		return reject(h, R_PREFILTER_NA, F_UNRESOLV);
	if (n->unschedulable && !tolerated(p, TAINT_UNSCHED, "", "NoSchedule"))
		return reject(h, R_UNSCHEDULABLE, F_UNRESOLV);
	for (size_t i = 0; i < n->ntaints; i++) {
		const struct taint *t = &n->taints[i];

		if (strcmp(t->effect, "NoSchedule") != 0 && strcmp(t->effect, "NoExecute") != 0)
			continue;
		if (!tolerated(p, t->key, t->value, t->effect))
			return reject(h, t->reason, F_UNRESOLV);
	}
	if (!node_affinity_ok(p, n))
		return reject(h, R_NODE_AFFINITY, F_UNRESOLV);
	if ((r = fit(ev, pn, h)) != F_OK)
		return r;
	return affinity(ev, pn, h);
}

static int64_t
free_after(const struct eval *ev, const struct pnode *pn, uint32_t idx)
{
	return sat_add(sat_add(pn->alloc[idx], -pn->req[idx]),
	    -sched_rv_get(ev->p->req, ev->p->nreq, idx));
}

/*
 * Most allocated first: least left of each requested resource, then name.
 * When placing a gang over evicted pods, first the nodes whose evicted
 * pods have the lowest priority, then the fewest of them.
 */
bool
sched_better(const struct eval *ev, const struct pnode *a, const struct pnode *b)
{
	int64_t fa, fb;

	if (ev->costs) {
		if (a->cost != b->cost)
			return a->cost < b->cost;
		if (a->cost2 != b->cost2)
			return a->cost2 < b->cost2;
	}

	for (size_t i = 0; i < ev->nsidx; i++) {
		fa = free_after(ev, a, ev->sidx[i]);
		fb = free_after(ev, b, ev->sidx[i]);
		if (fa != fb)
			return fa < fb;
	}
	for (uint32_t idx = RES_CPU; idx <= RES_MEM; idx++) {
		fa = free_after(ev, a, idx);
		fb = free_after(ev, b, idx);
		if (fa != fb)
			return fa < fb;
	}
	return strcmp(a->n->name, b->n->name) < 0;
}

/* Both nodes carry the same values for p's affinity topology keys. */
bool
sched_same_domain(const struct spod *p, const struct pnode *a, const struct pnode *b)
{
	for (size_t i = 0; i < p->naff; i++) {
		const char *x = sched_label(a->n->labels, p->aff[i].key);
		const char *y = sched_label(b->n->labels, p->aff[i].key);

		if (x == NULL || y == NULL || strcmp(x, y) != 0)
			return false;
	}
	return true;
}

void
sched_eval_free(struct eval *ev)
{
	kc_free(ev->aff.e);
	kc_free(ev->anti.e);
	kc_free(ev->exist.e);
	kc_free(ev->names);
	kc_free(ev->sidx);
	memset(ev, 0, sizeof(*ev));
}

/* NodeAffinity's PreFilter: node names when every term pins metadata.name. */
static int
prefilter_names(struct eval *ev)
{
	const struct spod *p = ev->p;
	const char **all = NULL, **term = NULL;
	size_t nall = 0, nterm, total = 0;

	if (!p->has_naff || p->nterms == 0)
		return 0;
	for (size_t i = 0; i < p->nterms; i++) {
		const struct nsterm *t = &p->terms[i];
		bool any = false;

		for (size_t k = 0; k < t->nfl; k++)
			if (strcmp(t->fl[k].key, "metadata.name") == 0 && t->fl[k].op == NS_IN) {
				any = true;
				total += t->fl[k].nvals;
			}
		if (!any)
			return 0;	/* this term allows every node */
	}
	if ((all = kc_calloc(total + 1, sizeof(*all))) == NULL ||
	    (term = kc_calloc(total + 1, sizeof(*term))) == NULL) {
		kc_free(all);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->nterms; i++) {
		const struct nsterm *t = &p->terms[i];
		bool first = true;

		nterm = 0;
		for (size_t k = 0; k < t->nfl; k++) {
			const struct nsreq *q = &t->fl[k];
			size_t keep = 0;

			if (strcmp(q->key, "metadata.name") != 0 || q->op != NS_IN)
				continue;
			if (first) {
				for (size_t j = 0; j < q->nvals; j++)
					term[nterm++] = q->vals[j];
				first = false;
				continue;
			}
			for (size_t j = 0; j < nterm; j++)
				if (strv_has(q->vals, q->nvals, term[j]))
					term[keep++] = term[j];
			nterm = keep;
		}
		for (size_t j = 0; j < nterm; j++)
			all[nall++] = term[j];
	}
	kc_free(term);
	sched_sort(all, nall, sizeof(*all), cstr_cmp);
	total = 0;
	for (size_t i = 0; i < nall; i++)
		if (total == 0 || strcmp(all[total - 1], all[i]) != 0)
			all[total++] = all[i];
	ev->names = all;
	ev->nnames = total;
	ev->conflict = total == 0;
	return 0;
}

static int
sidx_cmp(const void *a, const void *b, void *arg)
{
	const struct sched *s = arg;

	return strcmp(s->resname[*(const uint32_t *)a], s->resname[*(const uint32_t *)b]);
}

int
sched_eval_init(struct eval *ev, struct plan *pl, struct ppod *pp, const char *gang)
{
	const struct spod *p = pp->p;
	int r;

	memset(ev, 0, sizeof(*ev));
	ev->pl = pl;
	ev->pp = pp;
	ev->p = p;
	ev->gang = gang;
	if (p->nreq != 0 && (ev->sidx = kc_calloc(p->nreq, sizeof(*ev->sidx))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < p->nreq; i++)
		if (p->req[i].idx >= RES_FIXED)
			ev->sidx[ev->nsidx++] = p->req[i].idx;
	sched_sort_r(ev->sidx, ev->nsidx, sizeof(*ev->sidx), sidx_cmp, (void *)(uintptr_t)pl->s);
	if ((r = prefilter_names(ev)) < 0 || (r = aff_build(ev)) < 0) {
		sched_eval_free(ev);
		return r;
	}
	return 0;
}

/*
 * Filters every node (skipping those outside the pin or the marks). The
 * best feasible node goes to '*ret_best' (the pod's nominated node when
 * it passes); per-node verdicts to 'codes' and feasible nodes to 'feas'
 * when given.
 */
int
sched_eval_all(const struct eval *ev, struct hist *h, uint8_t *codes, struct pnode **feas,
    size_t *ret_nfeas, struct pnode **ret_best)
{
	struct plan *pl = ev->pl;
	struct pnode *best = NULL, *nom = NULL;
	size_t nf = 0;
	int r;

	for (size_t i = 0; i < pl->nnodes; i++) {
		struct pnode *pn = &pl->nodes[i];

		if ((ev->only_marked && !pn->mark) ||
		    (ev->pin != NULL && !sched_same_domain(ev->pinp, pn, ev->pin))) {
			if (codes != NULL)
				codes[i] = F_UNRESOLV;
			continue;
		}
		if ((r = filter(ev, pn, h)) < 0)
			return r;
		if (codes != NULL)
			codes[i] = (uint8_t)r;
		if (r != F_OK)
			continue;
		if (feas != NULL)
			feas[nf] = pn;
		nf++;
		if (ev->p->nominated != NULL && strcmp(ev->p->nominated, pn->n->name) == 0)
			nom = pn;
		if (best == NULL || sched_better(ev, pn, best))
			best = pn;
	}
	if (ret_nfeas != NULL)
		*ret_nfeas = nf;
	*ret_best = nom != NULL ? nom : best;
	return 0;
}

/* Puts a pending pod on a node of the scratch state; its nomination is spent. */
int
sched_place(struct ppod *pp, struct pnode *pn)
{
	int r;

	if ((r = sched_pn_add(pn, pp)) < 0)
		return r;
	pp->placed = true;
	pp->nom = NULL;
	return 0;
}

void
sched_unplace(struct ppod *pp)
{
	sched_pn_del(pp);
	pp->placed = false;
}

/* Upstream's MoreImportantPod(): priority, then earlier start, then name. */
static int
importance_cmp(const void *a, const void *b)
{
	const struct spod *x = (*(struct ppod *const *)a)->p;
	const struct spod *y = (*(struct ppod *const *)b)->p;

	if (x->prio != y->prio)
		return x->prio > y->prio ? -1 : 1;
	if (x->started != y->started)
		return x->started < y->started ? -1 : 1;
	return strcmp(x->key, y->key);
}

int
sched_restore(struct eval *ev, struct ppod *q, struct pnode *pn)
{
	int r;

	if ((r = sched_pn_add(pn, q)) < 0)
		return r;
	return ev != NULL ? aff_pod(ev, q, pn, 1) : 0;
}

int
sched_evict(struct eval *ev, struct ppod *q)
{
	struct pnode *pn = q->node;

	sched_pn_del(q);
	return ev != NULL ? aff_pod(ev, q, pn, -1) : 0;
}

/*
 * DefaultPreemption's SelectVictimsOnNode(): every lower-priority pod out,
 * check, then reprieve the most important first. Sets '*ret_victims' (most
 * important first) when the node is a candidate; otherwise adds the
 * node's reason to 'diag'. The scratch state is left as it was.
 */
static int
dry_run(struct eval *ev, struct pnode *pn, struct hist *diag, struct ppod ***ret_victims,
    size_t *ret_n)
{
	struct ppod **low = NULL, **vic = NULL;
	size_t nl = 0, nv = 0;
	int r = 0, code;

	*ret_victims = NULL;
	*ret_n = 0;
	for (size_t i = 0; i < pn->np; i++) {
		const struct ppod *q = pn->pods[i];

		if (q->p->prio < ev->p->prio && !q->placed && !sched_same_gang(ev->gang, q->p))
			nl++;
	}
	if (nl == 0)
		return sched_hist_add(diag, R_NO_VICTIMS, 1);
	if ((low = kc_calloc(nl, sizeof(*low))) == NULL ||
	    (vic = kc_calloc(nl, sizeof(*vic))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	nl = 0;
	for (size_t i = 0; i < pn->np; i++) {
		struct ppod *q = pn->pods[i];

		if (q->p->prio < ev->p->prio && !q->placed && !sched_same_gang(ev->gang, q->p))
			low[nl++] = q;
	}
	for (size_t i = 0; i < nl; i++)
		if ((r = sched_evict(ev, low[i])) < 0)
			goto out;
	if ((code = filter(ev, pn, diag)) != F_OK) {
		r = code < 0 ? code : 0;
		for (size_t i = 0; r == 0 && i < nl; i++)
			r = sched_restore(ev, low[i], pn);
		goto out;
	}
	sched_sort(low, nl, sizeof(*low), importance_cmp);
	for (size_t i = 0; i < nl; i++) {
		if ((r = sched_restore(ev, low[i], pn)) < 0 || (code = filter(ev, pn, NULL)) < 0) {
			r = r < 0 ? r : code;
			goto out;
		}
		if (code != F_OK) {
			if ((r = sched_evict(ev, low[i])) < 0)
				goto out;
			vic[nv++] = low[i];
		}
	}
	for (size_t i = 0; i < nv; i++)
		if ((r = sched_restore(ev, vic[i], pn)) < 0)
			goto out;
	*ret_victims = vic;
	*ret_n = nv;
	vic = NULL;
out:
	kc_free(low);
	kc_free(vic);
	return r;
}

static void
cand_fill(struct cand *c)
{
	c->top = c->v[0]->p->prio;
	c->sum = 0;
	c->start = c->v[0]->p->started;
	for (size_t i = 0; i < c->nv; i++) {
		const struct spod *q = c->v[i]->p;

		c->sum += (int64_t)q->prio + INT64_C(2147483648);
		if (q->prio == c->top && q->started < c->start)
			c->start = q->started;
	}
}

/* pickOneNodeForPreemption(): the lower the better, nodes in name order. */
static bool
cand_better(const struct cand *a, const struct cand *b)
{
	if (a->top != b->top)
		return a->top < b->top;
	if (a->sum != b->sum)
		return a->sum < b->sum;
	if (a->nv != b->nv)
		return a->nv < b->nv;
	return a->start > b->start;
}

/*
 * DefaultPreemption for one pod over every node, given the nodes' filter
 * verdicts. Nodes rejected as unresolvable are "not helpful"; the others
 * are dry-run. With 'dry' a candidate counts as not helpful either (the
 * pod will not be allowed to preempt). The best candidate goes to 'best'.
 */
int
sched_preempt_one(struct eval *ev, const uint8_t *codes, bool dry, struct hist *diag,
    struct cand *best)
{
	struct plan *pl = ev->pl;
	struct cand c;
	int r;

	memset(best, 0, sizeof(*best));
	for (size_t i = 0; i < pl->nnodes; i++) {
		/*
		 * A node the pod passes alone (only for a gang member, which
		 * failed with its gang) is no better for preemption either.
		 */
		if (codes[i] == F_UNRESOLV || codes[i] == F_OK) {
			if ((r = sched_hist_add(diag, R_NOT_HELPFUL, 1)) < 0)
				return r;
			continue;
		}
		memset(&c, 0, sizeof(c));
		c.pn = &pl->nodes[i];
		if ((r = dry_run(ev, c.pn, diag, &c.v, &c.nv)) < 0)
			return r;
		if (c.nv == 0) {
			kc_free(c.v);
			continue;
		}
		if (dry) {
			kc_free(c.v);
			if ((r = sched_hist_add(diag, R_NOT_HELPFUL, 1)) < 0)
				return r;
			continue;
		}
		cand_fill(&c);
		if (best->pn == NULL || cand_better(&c, best)) {
			kc_free(best->v);
			*best = c;
		} else
			kc_free(c.v);
	}
	return 0;
}

/* PodEligibleToPreemptOthers(): NULL when eligible, else the reason. */
const char *
sched_ineligible(const struct plan *pl, const struct spod *p, const uint8_t *codes)
{
	const struct pnode *pn;

	if (p->never)
		return M_NEVER;
	if ((pn = sched_node_find(pl, p->nominated)) == NULL)
		return NULL;
	if (codes != NULL && codes[pn - pl->nodes] == F_UNRESOLV)
		return NULL;
	for (size_t i = 0; i < pn->np; i++) {
		const struct spod *q = pn->pods[i]->p;

		if (q->prio < p->prio && q->terminating && q->preempted)
			return M_TERMINATING;
	}
	return NULL;
}

/* Lower-priority pods nominated to 'pn' lose their nomination. */
int
sched_clear_lower_noms(struct plan *pl, struct pnode *pn, int32_t prio, const char *gang)
{
	int r;

	for (size_t i = 0; i < pn->nn; i++) {
		struct ppod *q = pn->noms[i];

		if (q->nom != pn || q->p->prio >= prio || sched_same_gang(gang, q->p))
			continue;
		q->nom = NULL;
		q->cleared = true;
		if ((r = sched_out_nom(pl, q->p, NULL)) < 0)
			return r;
	}
	return 0;
}

/* "preemption: ..." for the nodes' verdicts, or the ineligibility. */
char *
sched_preempt_message(size_t nnodes, const struct hist *diag, const char *inel)
{
	struct sb b = { 0 };
	char *msg = NULL;

	sched_sb_printf(&b, "preemption: ");
	if (inel != NULL)
		sched_sb_printf(&b, "%s", inel);
	else
		sched_fit_format(&b, nnodes, diag, NULL);
	if (sched_sb_take(&b, &msg) < 0)
		return NULL;
	return msg;
}

/* Joins the FitError with PostFilter's reasons: "<fit> <a>, <b>". */
char *
sched_join_message(const char *fit, const char *a, const char *b)
{
	if (a == NULL)
		return kc_strdup(fit);
	if (b == NULL)
		return kc_asprintf("%s %s", fit, a);
	return kc_asprintf("%s %s, %s", fit, a, b);
}

/*
 * One pod: bind it, preempt for it, or say why not.
 */
int
sched_place_one(struct plan *pl, struct ppod *pp, int mode, const char *gang)
{
	const struct spod *p = pp->p;
	struct eval ev;
	struct hist h = { 0 }, diag = { 0 };
	struct cand c = { 0 };
	struct pnode *best = NULL;
	uint8_t *codes = NULL;
	char *fitmsg = NULL, *pre = NULL;
	const char *inel;
	int r;

	if (p->broken != NULL)
		return sched_out_unsched(pl, p, "SchedulerError", kc_strdup(p->broken));
	if ((r = sched_eval_init(&ev, pl, pp, gang)) < 0)
		return r;
	if ((codes = kc_calloc(pl->nnodes, 1)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if (ev.conflict)
		memset(codes, F_UNRESOLV, pl->nnodes);
	else if ((r = sched_eval_all(&ev, &h, codes, NULL, NULL, &best)) < 0)
		goto out;
	if (best != NULL) {
		if (mode == MODE_MISSING_PG) {
			/* Permit: Coscheduling rejects a pod whose PodGroup is missing. */
			r = sched_fail_pod(pl, pp, kc_strdup(M_PG_NOT_FOUND), false);
			goto out;
		}
		if ((r = sched_place(pp, best)) < 0)
			goto out;
		r = sched_out_bind(pl, p, best);
		goto out;
	}
	if ((fitmsg = sched_fit_message(pl->nnodes, &h, ev.conflict ? M_CONFLICT : NULL)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if ((inel = sched_ineligible(pl, p, codes)) != NULL) {
		if ((pre = sched_preempt_message(pl->nnodes, NULL, inel)) == NULL) {
			r = -ENOMEM;
			goto out;
		}
		r = sched_fail_pod(pl, pp, sched_join_message(fitmsg, pre, mode != MODE_DEFAULT ?
		    M_NO_GROUP : NULL), true);
		goto out;
	}
	if ((r = sched_preempt_one(&ev, codes, mode == MODE_MISSING_PG, &diag, &c)) < 0)
		goto out;
	if (c.pn != NULL) {
		for (size_t i = 0; i < c.nv; i++) {
			struct ppod *v = c.v[i];

			sched_pn_del(v);
			v->removed = true;
			v->home = c.pn;
			if ((r = sched_out_victim(pl, v->p, c.pn, p)) < 0)
				goto out;
		}
		if ((r = sched_place(pp, c.pn)) < 0 || (r = sched_out_nom(pl, p, c.pn)) < 0 ||
		    (r = sched_clear_lower_noms(pl, c.pn, p->prio, gang)) < 0)
			goto out;
		r = sched_out_unsched(pl, p, "Unschedulable", fitmsg);
		fitmsg = NULL;
		goto out;
	}
	if ((pre = sched_preempt_message(pl->nnodes, &diag, NULL)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	r = sched_fail_pod(pl, pp, sched_join_message(fitmsg, pre,
	    mode != MODE_DEFAULT ? M_NO_GROUP : NULL), false);
out:
	kc_free(c.v);
	kc_free(pre);
	kc_free(fitmsg);
	kc_free(codes);
	sched_hist_free(&h);
	sched_hist_free(&diag);
	sched_eval_free(&ev);
	return r;
}


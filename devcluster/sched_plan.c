/*
 * sched_plan.c: a plan (sched_plan()). The scratch state built from the
 * cache (per node the allocatable and requested vectors, the pod count
 * and the active pods), the queue of units in upstream's order, the
 * output (bindings, nominations, victims, pods left pending), and the
 * reason histograms behind kube-scheduler's FitError messages. Each
 * unit is scheduled by sched_fit.c (a single pod) or sched_gang.c (a
 * gang) against the scratch state, in queue order.
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
 * Plans: the scratch state
 */

/*
 * Output
 */

static void
bind_clear(struct sched_bind *b)
{
	kc_free(b->ns);
	kc_free(b->name);
	kc_free(b->uid);
	kc_free(b->node);
}

struct sched_plan *
sched_plan_free(struct sched_plan *pl)
{
	if (pl == NULL)
		return NULL;
	for (size_t i = 0; i < pl->nbinds; i++)
		bind_clear(&pl->binds[i]);
	for (size_t i = 0; i < pl->nnoms; i++) {
		kc_free(pl->noms[i].ns);
		kc_free(pl->noms[i].name);
		kc_free(pl->noms[i].node);
	}
	for (size_t i = 0; i < pl->nvictims; i++) {
		struct sched_victim *v = &pl->victims[i];

		kc_free(v->ns);
		kc_free(v->name);
		kc_free(v->uid);
		kc_free(v->node);
		kc_free(v->by_ns);
		kc_free(v->by_name);
		kc_free(v->by_uid);
		kc_free(v->scheduler);
	}
	for (size_t i = 0; i < pl->nunsched; i++) {
		kc_free(pl->unsched[i].ns);
		kc_free(pl->unsched[i].name);
		kc_free(pl->unsched[i].message);
	}
	kc_free(pl->binds);
	kc_free(pl->noms);
	kc_free(pl->victims);
	kc_free(pl->unsched);
	return kc_free(pl);
}

/* Makes room for one more element in '*v' (count 'n', capacity '*cap'). */
static int
grow(void **v, size_t n, size_t *cap, size_t size)
{
	void *p;
	size_t c;

	if (n < *cap)
		return 0;
	c = *cap != 0 ? *cap * 2 : 16;
	if ((p = kc_reallocarray(*v, c, size)) == NULL)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

int
sched_out_bind(struct plan *pl, const struct spod *p, const struct pnode *pn)
{
	struct sched_plan *o = pl->out;
	struct sched_bind *b;

	if (grow((void **)&o->binds, o->nbinds, &pl->capb, sizeof(*o->binds)) < 0)
		return -ENOMEM;
	b = &o->binds[o->nbinds];
	memset(b, 0, sizeof(*b));
	b->ns = kc_strdup(p->ns);
	b->name = kc_strdup(p->name);
	b->uid = kc_strdup(p->uid);
	b->node = kc_strdup(pn->n->name);
	o->nbinds++;
	if (b->ns == NULL || b->name == NULL || b->uid == NULL || b->node == NULL)
		return -ENOMEM;
	return 0;
}

/* A nomination; NULL 'pn' clears it. */
int
sched_out_nom(struct plan *pl, const struct spod *p, const struct pnode *pn)
{
	struct sched_plan *o = pl->out;
	struct sched_nominate *m;

	if (grow((void **)&o->noms, o->nnoms, &pl->capn, sizeof(*o->noms)) < 0)
		return -ENOMEM;
	m = &o->noms[o->nnoms];
	memset(m, 0, sizeof(*m));
	m->ns = kc_strdup(p->ns);
	m->name = kc_strdup(p->name);
	m->node = pn != NULL ? kc_strdup(pn->n->name) : NULL;
	o->nnoms++;
	if (m->ns == NULL || m->name == NULL || (pn != NULL && m->node == NULL))
		return -ENOMEM;
	return 0;
}

int
sched_out_victim(struct plan *pl, const struct spod *v, const struct pnode *pn,
    const struct spod *by)
{
	struct sched_plan *o = pl->out;
	struct sched_victim *x;

	if (grow((void **)&o->victims, o->nvictims, &pl->capv, sizeof(*o->victims)) < 0)
		return -ENOMEM;
	x = &o->victims[o->nvictims];
	memset(x, 0, sizeof(*x));
	x->ns = kc_strdup(v->ns);
	x->name = kc_strdup(v->name);
	x->uid = kc_strdup(v->uid);
	x->node = kc_strdup(pn->n->name);
	x->by_ns = kc_strdup(by->ns);
	x->by_name = kc_strdup(by->name);
	x->by_uid = kc_strdup(by->uid);
	x->scheduler = kc_strdup(by->schedname);
	o->nvictims++;
	if (x->ns == NULL || x->name == NULL || x->uid == NULL || x->node == NULL ||
	    x->by_ns == NULL || x->by_name == NULL || x->by_uid == NULL ||
	    x->scheduler == NULL)
		return -ENOMEM;
	return 0;
}

/* Takes 'msg' (freed on failure too). */
int
sched_out_unsched(struct plan *pl, const struct spod *p, const char *reason, char *msg)
{
	struct sched_plan *o = pl->out;
	struct sched_unsched *u;

	if (msg == NULL)
		return -ENOMEM;
	if (grow((void **)&o->unsched, o->nunsched, &pl->capu, sizeof(*o->unsched)) < 0) {
		kc_free(msg);
		return -ENOMEM;
	}
	u = &o->unsched[o->nunsched];
	memset(u, 0, sizeof(*u));
	u->reason = reason;
	u->message = msg;
	u->ns = kc_strdup(p->ns);
	u->name = kc_strdup(p->name);
	o->nunsched++;
	if (u->ns == NULL || u->name == NULL)
		return -ENOMEM;
	return 0;
}

/*
 * Unschedulable, and the nomination cleared as upstream's failure path
 * does (unless 'keep'): its space is no longer held for it.
 */
int
sched_fail_pod(struct plan *pl, struct ppod *pp, char *msg, bool keep)
{
	int r;

	if ((r = sched_out_unsched(pl, pp->p, "Unschedulable", msg)) < 0)
		return r;
	if (!keep && pp->p->nominated != NULL && !pp->cleared) {
		pp->nom = NULL;
		pp->cleared = true;
		return sched_out_nom(pl, pp->p, NULL);
	}
	return 0;
}

/*
 * The scratch state
 */

int
sched_pn_add(struct pnode *pn, struct ppod *q)
{
	const struct spod *p = q->p;

	if (grow((void **)&pn->pods, pn->np, &pn->cp, sizeof(*pn->pods)) < 0)
		return -ENOMEM;
	q->slot = pn->np;
	pn->pods[pn->np++] = q;
	for (size_t i = 0; i < p->nreq; i++)
		pn->req[p->req[i].idx] = sat_add(pn->req[p->req[i].idx], p->req[i].val);
	pn->npods++;
	q->node = pn;
	return 0;
}

void
sched_pn_del(struct ppod *q)
{
	struct pnode *pn = q->node;
	const struct spod *p = q->p;

	pn->pods[q->slot] = pn->pods[--pn->np];
	pn->pods[q->slot]->slot = q->slot;
	for (size_t i = 0; i < p->nreq; i++)
		pn->req[p->req[i].idx] = sat_add(pn->req[p->req[i].idx], -p->req[i].val);
	pn->npods--;
	q->node = NULL;
}

static int
pnode_cmp_name(const void *key, const void *elem)
{
	const struct pnode *pn = elem;

	return strcmp(key, pn->n->name);
}

struct pnode *
sched_node_find(const struct plan *pl, const char *name)
{
	if (name == NULL || pl->nnodes == 0)
		return NULL;
	return bsearch(name, pl->nodes, pl->nnodes, sizeof(*pl->nodes), pnode_cmp_name);
}

bool
sched_same_gang(const char *gang, const struct spod *q)
{
	return gang != NULL && q->pgkey != NULL && strcmp(gang, q->pgkey) == 0;
}

/*
 * Topology-pair counters (InterPodAffinity's preFilterState maps), open
 * addressing over borrowed key and value strings.
 */

struct tpent {
	const char	*k, *v;
	int64_t		 n;
};

static uint64_t
tp_hash(const char *k, const char *v)
{
	return kc_fnv1a64_str(kc_fnv1a64_str(KC_FNV1A64_INIT, k) * UINT64_C(31), v);
}

static struct tpent *
tp_slot(const struct tpmap *m, const char *k, const char *v)
{
	size_t i;

	if (m->cap == 0)
		return NULL;
	for (i = tp_hash(k, v) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		struct tpent *e = &m->e[i];

		if (e->k == NULL || (strcmp(e->k, k) == 0 && strcmp(e->v, v) == 0))
			return e;
	}
}

int64_t
sched_tp_get(const struct tpmap *m, const char *k, const char *v)
{
	struct tpent *e = tp_slot(m, k, v);

	return e != NULL && e->k != NULL ? e->n : 0;
}

int
sched_tp_add(struct tpmap *m, const char *k, const char *v, int64_t d)
{
	struct tpent *e;
	int64_t before;

	if ((m->used + 1) * 2 > m->cap) {
		struct tpmap bigger = { NULL, m->cap != 0 ? m->cap * 2 : 32, 0, 0 };

		if ((bigger.e = kc_calloc(bigger.cap, sizeof(*bigger.e))) == NULL)
			return -ENOMEM;
		for (size_t i = 0; i < m->cap; i++)
			if (m->e[i].k != NULL) {
				e = tp_slot(&bigger, m->e[i].k, m->e[i].v);
				*e = m->e[i];
				bigger.used++;
			}
		bigger.nonzero = m->nonzero;
		kc_free(m->e);
		*m = bigger;
	}
	e = tp_slot(m, k, v);
	if (e->k == NULL) {
		e->k = k;
		e->v = v;
		e->n = 0;
		m->used++;
	}
	before = e->n;
	e->n += d;
	if (before == 0 && e->n != 0)
		m->nonzero++;
	else if (before != 0 && e->n == 0)
		m->nonzero--;
	return 0;
}

void
sched_tp_reset(struct tpmap *m)
{
	if (m->cap != 0)
		memset(m->e, 0, m->cap * sizeof(*m->e));
	m->used = 0;
	m->nonzero = 0;
}

/*
 * Reason histograms and FitError messages
 */

int
sched_hist_add(struct hist *h, const char *r, int64_t c)
{
	size_t cap;

	if (h == NULL)
		return 0;
	for (size_t i = 0; i < h->n; i++)
		if (h->r[i] == r || strcmp(h->r[i], r) == 0) {
			h->c[i] += c;
			return 0;
		}
	if (h->n == h->cap) {
		const char **nr;
		int64_t *nc;

		cap = h->cap != 0 ? h->cap * 2 : 8;
		if ((nr = kc_reallocarray(h->r, cap, sizeof(*nr))) == NULL)
			return -ENOMEM;
		h->r = nr;
		if ((nc = kc_reallocarray(h->c, cap, sizeof(*nc))) == NULL)
			return -ENOMEM;
		h->c = nc;
		h->cap = cap;
	}
	h->r[h->n] = r;
	h->c[h->n] = c;
	h->n++;
	return 0;
}

void
sched_hist_free(struct hist *h)
{
	h->r = kc_free(h->r);
	h->c = kc_free(h->c);
	h->n = h->cap = 0;
}

int
sched_strp_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "<count> <reason>" items sorted as Go's sort.Strings, joined by ", ". */
static void
hist_format(const struct hist *h, struct sb *b)
{
	char **items;
	size_t n = 0;

	if (h->n == 0)
		return;
	if ((items = kc_calloc(h->n, sizeof(*items))) == NULL) {
		b->err = -ENOMEM;
		return;
	}
	for (; n < h->n; n++)
		if ((items[n] = kc_asprintf("%" PRId64 " %s", h->c[n], h->r[n])) == NULL) {
			b->err = -ENOMEM;
			goto out;
		}
	sched_sort(items, n, sizeof(*items), sched_strp_cmp);
	for (size_t i = 0; i < n; i++)
		sched_sb_printf(b, "%s%s", i != 0 ? ", " : "", items[i]);
out:
	sched_strv_free(items, n);
}

/* FitError.Error() without its PostFilter part. */
void
sched_fit_format(struct sb *b, size_t nnodes, const struct hist *h, const char *prefilter)
{
	sched_sb_printf(b, "0/%zu nodes are available:", nnodes);
	if (prefilter != NULL)
		sched_sb_printf(b, " %s.", prefilter);
	else if (h != NULL && h->n != 0) {
		sched_sb_printf(b, " ");
		hist_format(h, b);
		sched_sb_printf(b, ".");
	}
}

char *
sched_fit_message(size_t nnodes, const struct hist *h, const char *prefilter)
{
	struct sb b = { 0 };
	char *msg = NULL;

	sched_fit_format(&b, nnodes, h, prefilter);
	if (sched_sb_take(&b, &msg) < 0)
		return NULL;
	return msg;
}

/*
 * Building the scratch state and the queue
 */

static int
node_sort_cmp(const void *a, const void *b)
{
	return strcmp((*(struct snode *const *)a)->name, (*(struct snode *const *)b)->name);
}

static int
pod_sort_cmp(const void *a, const void *b)
{
	return strcmp((*(struct spod *const *)a)->key, (*(struct spod *const *)b)->key);
}

static bool
served(const struct sched *s, const struct spod *p)
{
	return strcmp(p->schedname, s->default_name) == 0 ||
	    strcmp(p->schedname, s->cosched_name) == 0;
}

static bool
runs_cos(const struct sched *s, const struct spod *p)
{
	return strcmp(p->schedname, s->cosched_name) == 0 ||
	    (s->cosched_default && strcmp(p->schedname, s->default_name) == 0);
}

static bool
terminated(const struct spod *p)
{
	return p->phase == PH_SUCCEEDED || p->phase == PH_FAILED;
}

static int
build_nodes(struct plan *pl)
{
	struct snode **nv = NULL;
	size_t n = 0, nres = pl->nres;
	int r;

	if ((r = sched_smap_values(&pl->s->nodes, (void ***)&nv, &n)) < 0)
		return r;
	if (n == 0)
		return 0;
	sched_sort(nv, n, sizeof(*nv), node_sort_cmp);
	if ((pl->nodes = kc_calloc(n, sizeof(*pl->nodes))) == NULL ||
	    (pl->vecs = kc_calloc(n * 2, nres * sizeof(*pl->vecs))) == NULL) {
		kc_free(nv);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct pnode *pn = &pl->nodes[i];

		pn->n = nv[i];
		pn->alloc = pl->vecs + i * 2 * nres;
		pn->req = pn->alloc + nres;
		for (size_t k = 0; k < nv[i]->nalloc; k++)
			pn->alloc[nv[i]->alloc[k].idx] = nv[i]->alloc[k].val;
	}
	pl->nnodes = n;
	kc_free(nv);
	return 0;
}

static bool
has_nssel(const struct spod *p)
{
	for (size_t i = 0; i < p->naff; i++)
		if (p->aff[i].nssel != NULL)
			return true;
	for (size_t i = 0; i < p->nanti; i++)
		if (p->anti[i].nssel != NULL)
			return true;
	return false;
}

/* Namespaces never put get kubernetes.io/metadata.name, as the API sets it. */
static int
build_nslabels(struct plan *pl)
{
	bool need = false;
	struct json_object *o;
	int r;

	for (size_t i = 0; !need && i < pl->npods; i++)
		need = has_nssel(pl->pods[i].p);
	if (!need)
		return 0;
	for (size_t i = 0; i < pl->npods; i++) {
		const char *ns = pl->pods[i].p->ns;

		if (sched_smap_get(&pl->s->nss, ns) != NULL ||
		    sched_smap_get(&pl->nslabels, ns) != NULL)
			continue;
		if ((o = json_object_new_object()) == NULL)
			return -ENOMEM;
		if ((r = kc_json_set_str(o, "kubernetes.io/metadata.name", ns)) < 0 ||
		    (r = sched_smap_put(&pl->nslabels, ns, o)) < 0) {
			json_object_put(o);
			return r;
		}
	}
	return 0;
}

static int
build_pods(struct plan *pl)
{
	const struct sched *s = pl->s;
	struct spod **pv = NULL;
	size_t n = 0, nanti = 0;
	int r;

	if ((r = sched_smap_values(&s->pods, (void ***)&pv, &n)) < 0)
		return r;
	if (n == 0)
		return 0;
	sched_sort(pv, n, sizeof(*pv), pod_sort_cmp);
	if ((pl->pods = kc_calloc(n, sizeof(*pl->pods))) == NULL) {
		kc_free(pv);
		return -ENOMEM;
	}
	pl->npods = n;
	for (size_t i = 0; i < n; i++) {
		struct ppod *q = &pl->pods[i];
		const struct spod *p = pv[i];

		q->p = p;
		if (p->node != NULL && !terminated(p) &&
		    (q->home = sched_node_find(pl, p->node)) != NULL)
			q->home->cp++;
		q->pending = p->node == NULL && p->phase == PH_PENDING && !p->terminating &&
		    !p->gated && served(s, p);
		if (q->pending && (q->nom = sched_node_find(pl, p->nominated)) != NULL)
			q->nom->cn++;
		if (p->nanti != 0)
			nanti++;
	}
	kc_free(pv);
	for (size_t i = 0; i < pl->nnodes; i++) {
		struct pnode *pn = &pl->nodes[i];

		pn->cp += 4;
		if ((pn->pods = kc_calloc(pn->cp, sizeof(*pn->pods))) == NULL ||
		    (pn->cn != 0 && (pn->noms = kc_calloc(pn->cn, sizeof(*pn->noms))) == NULL))
			return -ENOMEM;
	}
	if (nanti != 0 && (pl->anti = kc_calloc(nanti, sizeof(*pl->anti))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct ppod *q = &pl->pods[i];

		if (q->home != NULL) {
			if ((r = sched_pn_add(q->home, q)) < 0)
				return r;
			q->home = NULL;
		}
		if (q->nom != NULL)
			q->nom->noms[q->nom->nn++] = q;
		if (q->p->nanti != 0)
			pl->anti[pl->nanti++] = q;
	}
	return build_nslabels(pl);
}

static int
member_cmp(const void *a, const void *b)
{
	const struct spod *x = (*(struct ppod *const *)a)->p;
	const struct spod *y = (*(struct ppod *const *)b)->p;

	if (x->prio != y->prio)
		return x->prio > y->prio ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* PrioritySort and Coscheduling's Less(): priority, time, name. */
static int
unit_cmp(const void *a, const void *b)
{
	const struct unit *x = a, *y = b;

	if (x->prio != y->prio)
		return x->prio > y->prio ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return strcmp(x->key, y->key);
}

static int
build_units(struct plan *pl)
{
	const struct sched *s = pl->s;
	struct smap gm = { 0 };
	size_t *uidx = NULL, npend = 0, nu = 0, off = 0;
	int r = 0;

	for (size_t i = 0; i < pl->npods; i++)
		if (pl->pods[i].pending)
			npend++;
	if (npend == 0)
		return 0;
	if ((pl->units = kc_calloc(npend, sizeof(*pl->units))) == NULL ||
	    (pl->members = kc_calloc(npend, sizeof(*pl->members))) == NULL ||
	    (uidx = kc_calloc(pl->npods, sizeof(*uidx))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < pl->npods; i++) {
		struct ppod *q = &pl->pods[i];
		const struct spod *p = q->p;
		bool cos = runs_cos(s, p);
		struct unit *u;
		uintptr_t k;

		if (!q->pending)
			continue;
		if (cos && p->pgkey != NULL &&
		    (k = (uintptr_t)sched_smap_get(&gm, p->pgkey)) != 0) {
			u = &pl->units[k - 1];
		} else {
			u = &pl->units[nu++];
			u->cos = cos;
			u->key = p->key;
			u->ts = p->created;
			u->prio = p->prio;
			if (cos && p->pgkey != NULL) {
				u->gang = true;
				u->pgkey = p->pgkey;
				u->pg = sched_smap_get(&s->pgs, p->pgkey);
				if ((r = sched_smap_put(&gm, p->pgkey, (void *)(uintptr_t)nu)) < 0)
					goto out;
			}
		}
		uidx[i] = (size_t)(u - pl->units);
		u->nm++;
		u->prio = KC_MAX(u->prio, p->prio);
		if (p->created < u->ts)
			u->ts = p->created;
	}
	for (size_t i = 0; i < nu; i++) {
		pl->units[i].m = pl->members + off;
		off += pl->units[i].nm;
		pl->units[i].nm = 0;
		if (pl->units[i].pg != NULL)
			pl->units[i].ts = pl->units[i].pg->created;
	}
	for (size_t i = 0; i < pl->npods; i++) {
		struct ppod *q = &pl->pods[i];
		uintptr_t k;

		if (q->pending) {
			struct unit *u = &pl->units[uidx[i]];

			u->m[u->nm++] = q;
		}
		/* Every live pod with the label counts toward minMember. */
		if (q->p->pgkey != NULL && !terminated(q->p) &&
		    (k = (uintptr_t)sched_smap_get(&gm, q->p->pgkey)) != 0) {
			pl->units[k - 1].total++;
			if (q->node != NULL)
				pl->units[k - 1].bound++;
		}
	}
	for (size_t i = 0; i < nu; i++)
		sched_sort(pl->units[i].m, pl->units[i].nm, sizeof(*pl->units[i].m), member_cmp);
	pl->nunits = nu;
	sched_sort(pl->units, nu, sizeof(*pl->units), unit_cmp);
out:
	kc_free(uidx);
	sched_smap_clear(&gm);
	return r;
}

static void
put_json_cb(void *v, void *arg)
{
	(void)arg;
	json_object_put(v);
}

static void
plan_clear(struct plan *pl)
{
	for (size_t i = 0; i < pl->nnodes; i++) {
		kc_free(pl->nodes[i].pods);
		kc_free(pl->nodes[i].noms);
	}
	kc_free(pl->nodes);
	kc_free(pl->vecs);
	kc_free(pl->pods);
	kc_free(pl->anti);
	kc_free(pl->units);
	kc_free(pl->members);
	sched_smap_each(&pl->nslabels, put_json_cb, NULL);
	sched_smap_clear(&pl->nslabels);
	sched_plan_free(pl->out);
}

int
sched_plan(const struct sched *s, struct sched_plan **ret)
{
	struct plan pl;
	int r;

	memset(&pl, 0, sizeof(pl));
	pl.s = s;
	pl.nres = s->nres;
	if ((pl.out = kc_calloc(1, sizeof(*pl.out))) == NULL)
		return -ENOMEM;
	if ((r = build_nodes(&pl)) < 0 || (r = build_pods(&pl)) < 0 ||
	    (r = build_units(&pl)) < 0)
		goto out;
	for (size_t i = 0; r == 0 && i < pl.nunits; i++) {
		struct unit *u = &pl.units[i];

		if (pl.nnodes == 0) {
			for (size_t k = 0; r == 0 && k < u->nm; k++)
				r = u->m[k]->p->broken != NULL ?
				    sched_out_unsched(&pl, u->m[k]->p, "SchedulerError",
				    kc_strdup(u->m[k]->p->broken)) :
				    sched_fail_pod(&pl, u->m[k], kc_strdup(M_NO_NODES), false);
		} else if (u->gang)
			r = sched_place_gang(&pl, u);
		else
			r = sched_place_one(&pl, u->m[0], u->cos ? MODE_COS : MODE_DEFAULT, NULL);
	}
	if (r == 0) {
		*ret = pl.out;
		pl.out = NULL;
	}
out:
	plan_clear(&pl);
	return r;
}


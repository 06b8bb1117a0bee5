/*
 * sched.c: the decisions of kube-scheduler with the scheduler-plugins
 * Coscheduling plugin, for the devcluster's simulated GPU cluster; this
 * file holds the scheduler's cache (nodes, pods, PodGroups, namespaces,
 * each parsed once when put) and the hash maps and strings the other
 * files use. The rest, sharing sched_int.h:
 *
 *	sched_res.c		resources: quantities (lib/quantity.c),
 *				resource slots, pod request vectors
 *	sched_plan.c		a plan: scratch state, queue, output, messages
 *	sched_fit.c		one pod: filters, score, preemption
 *	sched_gang.c		a gang: Coscheduling placement and preemption
 *	sched_pgstatus.c	PodGroup status
 *
 * The model of the whole scheduler follows.
 *
 * The model. A struct sched is the scheduler's cache: nodes, pods,
 * PodGroups and namespaces, each parsed once when put (quantities into
 * integers, selectors compiled, tolerations and taints into structs) and
 * kept in hash maps by name. Nothing is kept of the caller's JSON. A plan
 * (sched_plan()) never changes the cache: it builds a scratch state from
 * it -- per node, the allocatable and requested vectors (dense, one slot
 * per resource name ever seen), the pod count and the active pods -- and
 * schedules every pending pod against that scratch state in queue order,
 * so each decision sees the earlier ones. The plan is the list of what
 * the scratch state gained (bindings, nominations) and lost (victims),
 * and of the pods left pending with kube-scheduler's message.
 *
 * Units. The queue holds units: a single pod, or a gang (the pending pods
 * of one PodGroup under a profile that runs Coscheduling). A unit is
 * scheduled as a whole:
 *
 *	single	filter every node (first failing plugin per node), take
 *		the nominated node or the best by score; if none passes,
 *		try DefaultPreemption (per node: evict every lower-priority
 *		pod, check, reprieve the most important back one by one,
 *		then pick a node by upstream's criteria); else report the
 *		FitError with its "preemption:" part.
 *	gang	PreFilter (PodGroup exists, minMember pods exist), then
 *		place every pending member greedily on the scratch state;
 *		keep the placement if it reaches the quorum (minMember minus
 *		the members already bound), else undo it, so a gang that
 *		does not fit holds nothing. Members with required pod
 *		affinity to each other follow the first member's topology
 *		domain; when the first domain fails, the others are tried.
 *		On failure, preemption for the whole gang: the lowest
 *		priority level whose pods, all evicted, let every member
 *		fit; then only those on the nodes the gang uses; then each
 *		is reprieved (most important first, smaller before larger)
 *		if the gang still fits without evicting it.
 *
 * Filters are upstream's, in upstream's order, and each node's reasons
 * are the first failing plugin's: NodeUnschedulable, TaintToleration,
 * NodeAffinity, NodeResourcesFit, InterPodAffinity. Reasons are strings
 * owned by the cache ("Insufficient <name>" per resource name, "node(s)
 * had untolerated taint {k: v}" per taint) or literals, so a histogram
 * of reasons compares pointers only when counting and strings only when
 * sorting. Each reason is resolvable (preemption might help) or not,
 * as upstream's Unschedulable and UnschedulableAndUnresolvable codes.
 *
 * Inter-pod affinity keeps upstream's three topology-pair counters per
 * incoming pod (pods matching all its affinity terms, pods matching its
 * anti-affinity terms, existing pods whose anti-affinity terms it
 * matches), updated incrementally when a dry run removes and restores
 * pods, exactly as the InterPodAffinity PreFilterExtensions do.
 *
 * Determinism: every walk is over arrays sorted by name; hash maps are
 * only looked up, never iterated for a decision.
 *
 * Not modelled: PodTopologySpread, NodePorts, volumes, DRA, pod-level
 * resources, matchLabelKeys, preferred (soft) terms and upstream's
 * scoring plugins (the score here is plain bin packing); PDBs in
 * preemption; Coscheduling's minResources, backoff and Permit timeout
 * (a gang is placed whole within one plan, so nothing ever waits). Gang
 * preemption and the domain retry are this file's own: upstream
 * preempts pod by pod and may split a gang across domains.
 *
 *	sched_node_put(s, node)		"gpu-a1": 8 nvidia.com/gpu
 *	sched_pod_put(s, pod)		"train/w0": 8 GPUs, pod-group r1
 *	sched_plan(s, &plan)		binds w0..w3 to gpu-a1..gpu-a4, or
 *					"0/8 nodes are available: ..."
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

#define LABEL_MAX	256	/* longest label key read for topology */

#define R_CPU		"Insufficient cpu"
#define R_MEMORY	"Insufficient memory"
#define R_EPHEMERAL	"Insufficient ephemeral-storage"

#define TAINT_NOT_READY	"node.kubernetes.io/not-ready"
#define TAINT_UNREACH	"node.kubernetes.io/unreachable"

/* qsort() that accepts an empty (NULL) array. */
void
sched_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

void
sched_sort_r(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *),
    void *arg)
{
	if (n > 1)
		qsort_r(base, n, size, cmp, arg);
}

/*
 * String-keyed map of values on kc_hmap. It owns copies of the keys, not
 * the values.
 */

static struct smap_ent *
smap_find(const struct smap *m, const char *key)
{
	return (struct smap_ent *)kc_hmap_get(&m->m, key);
}

void *
sched_smap_get(const struct smap *m, const char *key)
{
	struct smap_ent *e = smap_find(m, key);

	return e != NULL ? e->val : NULL;
}

/* Sets 'key' to 'val' (replacing). 0 or -ENOMEM, the map unchanged. */
int
sched_smap_put(struct smap *m, const char *key, void *val)
{
	struct smap_ent *e;
	size_t len;

	if ((e = smap_find(m, key)) != NULL) {
		e->val = val;
		return 0;
	}
	len = strlen(key);
	if ((e = kc_malloc(sizeof(*e) + len + 1)) == NULL)
		return -ENOMEM;
	memcpy(e->key, key, len + 1);
	e->h.key = e->key;
	e->val = val;
	if (kc_hmap_put(&m->m, &e->h) < 0) {
		kc_free(e);
		return -ENOMEM;
	}
	return 0;
}

/* Removes 'key' and returns its value (NULL when absent). */
static void *
smap_del(struct smap *m, const char *key)
{
	struct smap_ent *e = smap_find(m, key);
	void *val;

	if (e == NULL)
		return NULL;
	kc_hmap_del(&m->m, &e->h);
	val = e->val;
	kc_free(e);
	return val;
}

/* Calls 'fn' on every value (in no particular order). */
void
sched_smap_each(const struct smap *m, void (*fn)(void *, void *), void *arg)
{
	struct kc_hmap_node *n = NULL;
	size_t i = 0;

	while ((n = kc_hmap_next(&m->m, &i, n)) != NULL)
		fn(((struct smap_ent *)n)->val, arg);
}

void
sched_smap_clear(struct smap *m)
{
	struct kc_hmap_node *n, *tmp;
	size_t i;

	KC_HMAP_FOREACH_SAFE(n, tmp, i, &m->m)
		kc_free(n);
	kc_hmap_free(&m->m);
}

struct collect {
	void	**v;
	size_t	  n;
};

static void
collect_one(void *val, void *arg)
{
	struct collect *c = arg;

	c->v[c->n++] = val;
}

/* The values as a new array (NULL when empty). 0 or -ENOMEM. */
int
sched_smap_values(const struct smap *m, void ***ret, size_t *ret_n)
{
	struct collect c = { NULL, 0 };

	if (m->m.n != 0 && (c.v = kc_calloc(m->m.n, sizeof(*c.v))) == NULL)
		return -ENOMEM;
	sched_smap_each(m, collect_one, &c);
	*ret = c.v;
	*ret_n = c.n;
	return 0;
}

/*
 * A string builder that truncates at SCHED_MESSAGE_MAX instead of failing
 * and remembers an allocation failure. Not a kc_sbuf: it grows on the heap
 * to what the message needs (usually ~100 bytes), where a kc_sbuf would
 * want a 64 KiB buffer for every unschedulable pod.
 */

static void
sb_vprintf(struct sb *b, const char *fmt, va_list ap)
{
	va_list aq;
	int n;
	size_t need, cap;
	char *p;

	if (b->err != 0)
		return;
	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return;
	need = b->len + (size_t)n + 1;
	if (need > SCHED_MESSAGE_MAX)
		need = SCHED_MESSAGE_MAX;
	if (need > b->cap) {
		cap = b->cap != 0 ? b->cap : 128;
		while (cap < need)
			cap *= 2;
		if (cap > SCHED_MESSAGE_MAX)
			cap = SCHED_MESSAGE_MAX;
		if ((p = kc_realloc(b->p, cap)) == NULL) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	if (b->len + 1 >= b->cap)
		return;
	(void)vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	b->len += (size_t)n;
	if (b->len >= b->cap)
		b->len = b->cap - 1;
}

void _printf_(2, 3)
sched_sb_printf(struct sb *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(b, fmt, ap);
	va_end(ap);
}

/* Hands the text over (never NULL on success) or returns the error. */
int
sched_sb_take(struct sb *b, char **ret)
{
	if (b->err != 0) {
		b->p = kc_free(b->p);
		return b->err;
	}
	if (b->p == NULL && (b->p = kc_strdup("")) == NULL)
		return -ENOMEM;
	*ret = b->p;
	b->p = NULL;
	return 0;
}

/*
 * The cache
 */

char **
sched_strv_free(char **v, size_t n)
{
	if (v != NULL)
		for (size_t i = 0; i < n; i++)
			kc_free(v[i]);
	return kc_free(v);
}

static void
nsreq_clear(struct nsreq *q)
{
	kc_free(q->key);
	sched_strv_free(q->vals, q->nvals);
}

static void
nsterm_clear(struct nsterm *t)
{
	for (size_t i = 0; i < t->nex; i++)
		nsreq_clear(&t->ex[i]);
	for (size_t i = 0; i < t->nfl; i++)
		nsreq_clear(&t->fl[i]);
	kc_free(t->ex);
	kc_free(t->fl);
}

static void
aterm_clear(struct aterm *t)
{
	kc_label_selector_free(t->sel);
	kc_label_selector_free(t->nssel);
	sched_strv_free(t->nss, t->nnss);
	kc_free(t->key);
}

static struct snode *
snode_free(struct snode *n)
{
	if (n == NULL)
		return NULL;
	kc_free(n->name);
	if (n->labels != NULL)
		json_object_put(n->labels);
	for (size_t i = 0; i < n->ntaints; i++) {
		kc_free(n->taints[i].key);
		kc_free(n->taints[i].value);
		kc_free(n->taints[i].effect);
		kc_free(n->taints[i].reason);
	}
	kc_free(n->taints);
	kc_free(n->alloc);
	return kc_free(n);
}

KC_DEFINE_CLEANUP(struct snode, snode_free)

static struct spod *
spod_free(struct spod *p)
{
	if (p == NULL)
		return NULL;
	kc_free(p->key);
	kc_free(p->ns);
	kc_free(p->name);
	kc_free(p->uid);
	kc_free(p->node);
	kc_free(p->schedname);
	kc_free(p->nominated);
	kc_free(p->pgkey);
	if (p->labels != NULL)
		json_object_put(p->labels);
	kc_free(p->req);
	for (size_t i = 0; i < p->ntols; i++) {
		kc_free(p->tols[i].key);
		kc_free(p->tols[i].value);
		kc_free(p->tols[i].effect);
	}
	kc_free(p->tols);
	if (p->nodesel != NULL)
		json_object_put(p->nodesel);
	for (size_t i = 0; i < p->nterms; i++)
		nsterm_clear(&p->terms[i]);
	kc_free(p->terms);
	for (size_t i = 0; i < p->naff; i++)
		aterm_clear(&p->aff[i]);
	kc_free(p->aff);
	for (size_t i = 0; i < p->nanti; i++)
		aterm_clear(&p->anti[i]);
	kc_free(p->anti);
	sched_strv_free(p->owners, p->nowners);
	kc_free(p->broken);
	return kc_free(p);
}

KC_DEFINE_CLEANUP(struct spod, spod_free)

static struct spg *
spg_free(struct spg *g)
{
	if (g == NULL)
		return NULL;
	kc_free(g->key);
	kc_free(g->ns);
	kc_free(g->name);
	return kc_free(g);
}

static struct sns *
sns_free(struct sns *n)
{
	if (n == NULL)
		return NULL;
	kc_free(n->name);
	if (n->labels != NULL)
		json_object_put(n->labels);
	return kc_free(n);
}

static void
free_node_cb(void *v, void *arg)
{
	(void)arg;
	snode_free(v);
}

static void
free_pod_cb(void *v, void *arg)
{
	(void)arg;
	spod_free(v);
}

static void
free_pg_cb(void *v, void *arg)
{
	(void)arg;
	spg_free(v);
}

static void
free_ns_cb(void *v, void *arg)
{
	(void)arg;
	sns_free(v);
}

struct sched *
sched_free(struct sched *s)
{
	if (s == NULL)
		return NULL;
	sched_smap_each(&s->nodes, free_node_cb, NULL);
	sched_smap_each(&s->pods, free_pod_cb, NULL);
	sched_smap_each(&s->pgs, free_pg_cb, NULL);
	sched_smap_each(&s->nss, free_ns_cb, NULL);
	sched_smap_clear(&s->nodes);
	sched_smap_clear(&s->pods);
	sched_smap_clear(&s->pgs);
	sched_smap_clear(&s->nss);
	sched_smap_clear(&s->resmap);
	for (size_t i = 0; i < s->nres; i++) {
		kc_free(s->resname[i]);
		kc_free(s->resreason[i]);
	}
	kc_free(s->default_name);
	kc_free(s->cosched_name);
	return kc_free(s);
}

int
sched_new(const struct sched_opts *opts, struct sched **ret)
{
	_cleanup_(sched_freep) struct sched *s = NULL;
	const char *dn = opts != NULL && opts->default_name != NULL ?
	    opts->default_name : SCHED_DEFAULT_NAME;
	const char *cn = opts != NULL && opts->cosched_name != NULL ?
	    opts->cosched_name : SCHED_COSCHED_NAME;
	int r;

	if ((s = kc_calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	if ((s->default_name = kc_strdup(dn)) == NULL ||
	    (s->cosched_name = kc_strdup(cn)) == NULL)
		return -ENOMEM;
	s->cosched_default = opts != NULL && opts->cosched_default;
	if ((r = sched_res_add_name(s, "cpu", R_CPU)) < 0 ||
	    (r = sched_res_add_name(s, "memory", R_MEMORY)) < 0 ||
	    (r = sched_res_add_name(s, "ephemeral-storage", R_EPHEMERAL)) < 0)
		return r;
	*ret = s;
	s = NULL;
	return 0;
}

size_t
sched_node_count(const struct sched *s)
{
	return s->nodes.m.n;
}

size_t
sched_pod_count(const struct sched *s)
{
	return s->pods.m.n;
}

/*
 * Small JSON readers
 */

/* A copy of a string value; "" for absent. NULL only on -ENOMEM. */
static char *
jdup(const struct json_object *o, const char *key)
{
	const char *s = jstr(o, key);

	return kc_strdup(s != NULL ? s : "");
}

/* NULL for absent or empty, else a copy; *err on -ENOMEM. */
static char *
jdup_opt(const struct json_object *o, const char *key, int *err)
{
	const char *s = jstr(o, key);
	char *d;

	if (s == NULL || *s == '\0')
		return NULL;
	if ((d = kc_strdup(s)) == NULL)
		*err = -ENOMEM;
	return d;
}

static time_t
jtime(const struct json_object *o, const char *key)
{
	const char *s = jstr(o, key);
	time_t t;

	if (s == NULL || kc_time_parse(s, &t) < 0)
		return 0;
	return t;
}

/* A copy of an object of labels: only the string values. */
static struct json_object *
labels_copy(const struct json_object *labels)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL)
		return NULL;
	if (labels == NULL || !json_object_is_type(labels, json_type_object))
		return o;
	json_object_object_foreach(mut(labels), k, v) {
		if (!json_object_is_type(v, json_type_string))
			continue;
		if (kc_json_set_str(o, k, json_object_get_string(v)) < 0) {
			json_object_put(o);
			return NULL;
		}
	}
	return o;
}

const char *
sched_label(const struct json_object *labels, const char *key)
{
	return jstr(labels, key);
}


/*
 * Nodes
 */

static int
taint_add(struct snode *n, const char *key, const char *value, const char *effect)
{
	struct taint *t = &n->taints[n->ntaints];

	t->key = kc_strdup(key);
	t->value = kc_strdup(value);
	t->effect = kc_strdup(effect);
	t->reason = kc_asprintf("node(s) had untolerated taint {%s: %s}", key, value);
	n->ntaints++;
	if (t->key == NULL || t->value == NULL || t->effect == NULL || t->reason == NULL)
		return -ENOMEM;
	return 0;
}

static bool
has_taint(const struct snode *n, const char *key, const char *effect)
{
	for (size_t i = 0; i < n->ntaints; i++)
		if (strcmp(n->taints[i].key, key) == 0 &&
		    strcmp(n->taints[i].effect, effect) == 0)
			return true;
	return false;
}

/* The Ready condition's status: "True", "False", "Unknown" (also absent). */
static const char *
node_ready(const struct json_object *node)
{
	struct json_object *conds = jarr(jobj(node, "status"), "conditions");

	for (size_t i = 0; i < jlen(conds); i++) {
		struct json_object *c = jidx(conds, i);
		const char *type = jstr(c, "type"), *status = jstr(c, "status");

		if (type != NULL && strcmp(type, "Ready") == 0)
			return status != NULL ? status : "Unknown";
	}
	return "Unknown";
}

int
sched_node_put(struct sched *s, const struct json_object *node, struct kc_status *st)
{
	_cleanup_(snode_freep) struct snode *n = NULL;
	struct json_object *spec = jobj(node, "spec"), *taints;
	const char *name = jstr(jobj(node, "metadata"), "name"), *ready;
	struct snode *old;
	int64_t *dense;
	int r;

	if (name == NULL || *name == '\0')
		return kc_status_set(st, KC_EINVALID, "node has no metadata.name");
	if ((n = kc_calloc(1, sizeof(*n))) == NULL ||
	    (n->name = kc_strdup(name)) == NULL ||
	    (n->labels = labels_copy(jobj(jobj(node, "metadata"), "labels"))) == NULL)
		return -ENOMEM;
	n->unschedulable = kc_json_bool(node, false, "spec", "unschedulable");
	taints = jarr(spec, "taints");
	if ((n->taints = kc_calloc(jlen(taints) + 1, sizeof(*n->taints))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < jlen(taints); i++) {
		struct json_object *t = jidx(taints, i);
		const char *k = jstr(t, "key"), *v = jstr(t, "value"), *e = jstr(t, "effect");

		if ((r = taint_add(n, k != NULL ? k : "", v != NULL ? v : "",
		    e != NULL ? e : "")) < 0)
			return r;
	}
	ready = node_ready(node);
	if (strcmp(ready, "True") != 0) {
		const char *key = strcmp(ready, "False") == 0 ? TAINT_NOT_READY : TAINT_UNREACH;

		if (!has_taint(n, key, "NoSchedule") &&
		    (r = taint_add(n, key, "", "NoSchedule")) < 0)
			return r;
	}
	if ((dense = kc_calloc(SCHED_RESOURCES_MAX + RES_FIXED, sizeof(*dense))) == NULL)
		return -ENOMEM;
	r = sched_rl_read(s, jobj(jobj(node, "status"), "allocatable"), NULL,
	    "status.allocatable", dense, &n->maxpods, st);
	if (r == 0)
		r = sched_rv_from_dense(dense, s->nres, &n->alloc, &n->nalloc);
	kc_free(dense);
	if (r == -E2BIG)
		return KC_EINVALID;
	if (r < 0)
		return r;
	old = sched_smap_get(&s->nodes, name);
	if ((r = sched_smap_put(&s->nodes, name, n)) < 0)
		return r;
	snode_free(old);
	n = NULL;
	return 0;
}

bool
sched_node_remove(struct sched *s, const char *name)
{
	struct snode *n = smap_del(&s->nodes, name);

	snode_free(n);
	return n != NULL;
}

/*
 * Pods
 */

static int
strv_read(const struct json_object *arr, char ***ret, size_t *ret_n, bool *ret_bad)
{
	char **v = NULL;
	size_t n = jlen(arr);

	*ret = NULL;
	*ret_n = 0;
	if (n == 0)
		return 0;
	if ((v = kc_calloc(n, sizeof(*v))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = jidx(arr, i);

		if (!json_object_is_type(e, json_type_string)) {
			if (ret_bad != NULL)
				*ret_bad = true;
			v[i] = kc_strdup("");
		} else
			v[i] = kc_strdup(json_object_get_string(e));
		if (v[i] == NULL) {
			sched_strv_free(v, n);
			return -ENOMEM;
		}
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static int
tols_read(struct spod *p, const struct json_object *tols)
{
	if (jlen(tols) == 0)
		return 0;
	if ((p->tols = kc_calloc(jlen(tols), sizeof(*p->tols))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < jlen(tols); i++) {
		struct json_object *t = jidx(tols, i);
		struct tol *o = &p->tols[p->ntols++];
		const char *op = jstr(t, "operator");

		if ((o->key = jdup(t, "key")) == NULL || (o->value = jdup(t, "value")) == NULL ||
		    (o->effect = jdup(t, "effect")) == NULL)
			return -ENOMEM;
		if (op == NULL || *op == '\0' || strcmp(op, "Equal") == 0)
			o->op = TOL_EQUAL;
		else if (strcmp(op, "Exists") == 0)
			o->op = TOL_EXISTS;
		else
			o->op = TOL_BAD;
	}
	return 0;
}

static const char *const ns_ops[] = {
	[NS_IN] = "In", [NS_NOTIN] = "NotIn", [NS_EXISTS] = "Exists",
	[NS_DNE] = "DoesNotExist", [NS_GT] = "Gt", [NS_LT] = "Lt",
};

/* Reads requirements; clears t->valid where upstream's parser would fail. */
static int
nsreqs_read(struct nsterm *t, const struct json_object *arr, bool fields,
    struct nsreq **ret, size_t *ret_n)
{
	size_t n = jlen(arr);

	if (n == 0)
		return 0;
	if ((*ret = kc_calloc(n, sizeof(**ret))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = jidx(arr, i);
		struct nsreq *q = &(*ret)[(*ret_n)++];
		const char *op = jstr(e, "operator");
		bool bad = false;
		int r;

		if ((q->key = jdup(e, "key")) == NULL)
			return -ENOMEM;
		if ((r = strv_read(jarr(e, "values"), &q->vals, &q->nvals, &bad)) < 0)
			return r;
		q->op = -1;
		for (size_t k = 0; op != NULL && k < KC_ARRAY_SIZE(ns_ops); k++)
			if (strcmp(op, ns_ops[k]) == 0)
				q->op = (int)k;
		switch (q->op) {
		case NS_IN:
		case NS_NOTIN:
			if (q->nvals == 0 || (fields && q->nvals != 1))
				bad = true;
			break;
		case NS_EXISTS:
		case NS_DNE:
			if (q->nvals != 0 || fields)
				bad = true;
			break;
		case NS_GT:
		case NS_LT:
			if (q->nvals != 1 || fields || kc_parse_i64(q->vals[0], &q->num) < 0)
				bad = true;
			break;
		default:
			bad = true;
			break;
		}
		if (bad)
			t->valid = false;
	}
	return 0;
}

static int
nsterms_read(struct spod *p, const struct json_object *terms)
{
	int r;

	if (jlen(terms) == 0)
		return 0;
	if ((p->terms = kc_calloc(jlen(terms), sizeof(*p->terms))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < jlen(terms); i++) {
		struct json_object *e = jidx(terms, i);
		struct nsterm *t = &p->terms[p->nterms++];

		t->valid = true;
		if ((r = nsreqs_read(t, jarr(e, "matchExpressions"), false, &t->ex,
		    &t->nex)) < 0 ||
		    (r = nsreqs_read(t, jarr(e, "matchFields"), true, &t->fl, &t->nfl)) < 0)
			return r;
		if (t->nex == 0 && t->nfl == 0)
			t->valid = false;
	}
	return 0;
}

static int
aterms_read(const char *ns, const struct json_object *arr, const char *path,
    struct aterm **ret, size_t *ret_n, struct kc_status *st)
{
	size_t n = jlen(arr);
	int r;

	if (n == 0)
		return 0;
	if ((*ret = kc_calloc(n, sizeof(**ret))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = jidx(arr, i), *nssel;
		struct aterm *t = &(*ret)[(*ret_n)++];

		if ((t->key = jdup(e, "topologyKey")) == NULL)
			return -ENOMEM;
		if ((r = kc_label_selector_from_json(jget(e, "labelSelector"), &t->sel, st)) < 0) {
			if (r == KC_EINVALID)
				(void)kc_status_set(st, r, "%s[%zu].labelSelector: %s", path, i,
				    st != NULL ? st->message : "invalid");
			return r;
		}
		if ((nssel = jget(e, "namespaceSelector")) != NULL &&
		    (r = kc_label_selector_from_json(nssel, &t->nssel, st)) < 0) {
			if (r == KC_EINVALID)
				(void)kc_status_set(st, r, "%s[%zu].namespaceSelector: %s", path,
				    i, st != NULL ? st->message : "invalid");
			return r;
		}
		if ((r = strv_read(jarr(e, "namespaces"), &t->nss, &t->nnss, NULL)) < 0)
			return r;
		if (t->nnss == 0 && t->nssel == NULL) {
			if ((t->nss = kc_calloc(1, sizeof(*t->nss))) == NULL ||
			    (t->nss[0] = kc_strdup(ns)) == NULL)
				return -ENOMEM;
			t->nnss = 1;
		}
	}
	return 0;
}

static bool
disrupted_by_scheduler(const struct json_object *pod)
{
	struct json_object *conds = jarr(jobj(pod, "status"), "conditions");

	for (size_t i = 0; i < jlen(conds); i++) {
		struct json_object *c = jidx(conds, i);
		const char *type = jstr(c, "type"), *status = jstr(c, "status");
		const char *reason = jstr(c, "reason");

		if (type != NULL && strcmp(type, "DisruptionTarget") == 0)
			return status != NULL && strcmp(status, "True") == 0 &&
			    reason != NULL && strcmp(reason, "PreemptionByScheduler") == 0;
	}
	return false;
}

enum phase
sched_phase_of(const char *s)
{
	if (s == NULL || *s == '\0' || strcmp(s, "Pending") == 0)
		return PH_PENDING;
	if (strcmp(s, "Running") == 0)
		return PH_RUNNING;
	if (strcmp(s, "Succeeded") == 0)
		return PH_SUCCEEDED;
	if (strcmp(s, "Failed") == 0)
		return PH_FAILED;
	return PH_UNKNOWN;
}

/* The spec parts that may be invalid: KC_EINVALID makes the pod broken. */
static int
pod_spec_read(struct sched *s, struct spod *p, const struct json_object *pod,
    struct kc_status *st)
{
	struct json_object *aff = jobj(jobj(pod, "spec"), "affinity");
	struct json_object *req;
	int r;

	if ((r = sched_pod_requests_rv(s, pod, &p->req, &p->nreq, st)) < 0)
		return r;
	req = jobj(jobj(aff, "nodeAffinity"), "requiredDuringSchedulingIgnoredDuringExecution");
	if (req != NULL) {
		p->has_naff = true;
		if ((r = nsterms_read(p, jarr(req, "nodeSelectorTerms"))) < 0)
			return r;
	}
	if ((r = aterms_read(p->ns, jarr(jobj(aff, "podAffinity"),
	    "requiredDuringSchedulingIgnoredDuringExecution"),
	    "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution",
	    &p->aff, &p->naff, st)) < 0)
		return r;
	return aterms_read(p->ns, jarr(jobj(aff, "podAntiAffinity"),
	    "requiredDuringSchedulingIgnoredDuringExecution"),
	    "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
	    &p->anti, &p->nanti, st);
}

int
sched_pod_put(struct sched *s, const struct json_object *pod, struct kc_status *st)
{
	_cleanup_(spod_freep) struct spod *p = NULL;
	struct json_object *meta = jobj(pod, "metadata"), *spec = jobj(pod, "spec");
	struct json_object *status = jobj(pod, "status"), *owners, *nodesel;
	const char *ns = jstr(meta, "namespace"), *name = jstr(meta, "name");
	const char *schedname, *pgname, *policy;
	struct kc_status local = { 0 };
	struct spod *old;
	int64_t prio;
	int r = 0;

	if (ns == NULL || *ns == '\0' || name == NULL || *name == '\0')
		return kc_status_set(st, KC_EINVALID,
		    "pod has no metadata.namespace or metadata.name");
	if ((p = kc_calloc(1, sizeof(*p))) == NULL ||
	    (p->key = kc_asprintf("%s/%s", ns, name)) == NULL ||
	    (p->ns = kc_strdup(ns)) == NULL || (p->name = kc_strdup(name)) == NULL ||
	    (p->uid = jdup(meta, "uid")) == NULL ||
	    (p->labels = labels_copy(jobj(meta, "labels"))) == NULL)
		return -ENOMEM;
	p->node = jdup_opt(spec, "nodeName", &r);
	p->nominated = jdup_opt(status, "nominatedNodeName", &r);
	schedname = jstr(spec, "schedulerName");
	p->schedname = kc_strdup(schedname != NULL && *schedname != '\0' ?
	    schedname : SCHED_DEFAULT_NAME);
	if (r < 0 || p->schedname == NULL)
		return -ENOMEM;
	prio = kc_json_int(pod, 0, "spec", "priority");
	p->prio = prio > INT32_MAX ? INT32_MAX : prio < INT32_MIN ? INT32_MIN : (int32_t)prio;
	p->phase = sched_phase_of(jstr(status, "phase"));
	policy = jstr(spec, "preemptionPolicy");
	p->never = policy != NULL && strcmp(policy, "Never") == 0;
	p->terminating = jget(meta, "deletionTimestamp") != NULL;
	p->preempted = disrupted_by_scheduler(pod);
	p->gated = jlen(jarr(spec, "schedulingGates")) != 0;
	p->created = jtime(meta, "creationTimestamp");
	p->started = jstr(status, "startTime") != NULL ? jtime(status, "startTime") : p->created;
	owners = jarr(meta, "ownerReferences");
	if (jlen(owners) != 0) {
		if ((p->owners = kc_calloc(jlen(owners), sizeof(*p->owners))) == NULL)
			return -ENOMEM;
		for (size_t i = 0; i < jlen(owners); i++)
			if ((p->owners[p->nowners++] = jdup(jidx(owners, i), "name")) == NULL)
				return -ENOMEM;
	}
	if ((pgname = sched_label(p->labels, SCHED_PG_LABEL)) != NULL && *pgname != '\0')
		p->pgkey = kc_asprintf("x|%s/%s", ns, pgname);
	else if ((pgname = sched_label(p->labels, SCHED_PG_LABEL_OLD)) != NULL && *pgname != '\0')
		p->pgkey = kc_asprintf("s|%s/%s", ns, pgname);
	if (pgname != NULL && *pgname != '\0') {
		if (p->pgkey == NULL)
			return -ENOMEM;
		p->pgname = p->pgkey + 2 + strlen(ns) + 1;
	}
	if ((r = tols_read(p, jarr(spec, "tolerations"))) < 0)
		return r;
	if ((nodesel = jobj(spec, "nodeSelector")) != NULL &&
	    (p->nodesel = labels_copy(nodesel)) == NULL)
		return -ENOMEM;
	r = pod_spec_read(s, p, pod, &local);
	if (r == -E2BIG)
		return kc_status_set(st, KC_EINVALID, "%s", local.message);
	if (r == KC_EINVALID) {
		if ((p->broken = kc_strdup(local.message)) == NULL)
			return -ENOMEM;
	} else if (r < 0)
		return r;
	old = sched_smap_get(&s->pods, p->key);
	if ((r = sched_smap_put(&s->pods, p->key, p)) < 0)
		return r;
	spod_free(old);
	p = NULL;
	return 0;
}

int
sched_pod_put_status(struct sched *s, const struct json_object *pod)
{
	struct json_object *meta = jobj(pod, "metadata"), *status = jobj(pod, "status");
	const char *ns = jstr(meta, "namespace"), *name = jstr(meta, "name");
	char *key, *nominated;
	struct spod *p;
	int r = 0;

	if (ns == NULL || name == NULL || (key = kc_asprintf("%s/%s", ns, name)) == NULL)
		return ns == NULL || name == NULL ? KC_ENOTFOUND : -ENOMEM;
	p = sched_smap_get(&s->pods, key);
	kc_free(key);
	if (p == NULL)
		return KC_ENOTFOUND;
	nominated = jdup_opt(status, "nominatedNodeName", &r);
	if (r < 0)
		return r;
	kc_free(p->nominated);
	p->nominated = nominated;
	p->phase = sched_phase_of(jstr(status, "phase"));
	p->preempted = disrupted_by_scheduler(pod);
	p->started = jstr(status, "startTime") != NULL ? jtime(status, "startTime") : p->created;
	return 0;
}

bool
sched_pod_remove(struct sched *s, const char *ns, const char *name)
{
	char *key = kc_asprintf("%s/%s", ns, name);
	struct spod *p;

	if (key == NULL)
		return false;
	p = smap_del(&s->pods, key);
	kc_free(key);
	spod_free(p);
	return p != NULL;
}

/*
 * PodGroups and namespaces
 */

char *
sched_pg_key(const char *group, const char *ns, const char *name)
{
	if (strcmp(group, SCHED_PG_GROUP) == 0)
		return kc_asprintf("x|%s/%s", ns, name);
	return kc_asprintf("s|%s/%s", ns, name);
}

int
sched_podgroup_put(struct sched *s, const struct json_object *pg, struct kc_status *st)
{
	struct json_object *meta = jobj(pg, "metadata");
	const char *api = jstr(pg, "apiVersion"), *ns = jstr(meta, "namespace");
	const char *name = jstr(meta, "name"), *group;
	struct spg *g, *old;
	int64_t min;
	int r;

	if (api != NULL && sched_has_prefix(api, SCHED_PG_GROUP "/"))
		group = SCHED_PG_GROUP;
	else if (api != NULL && sched_has_prefix(api, SCHED_PG_GROUP_OLD "/"))
		group = SCHED_PG_GROUP_OLD;
	else
		return kc_status_set(st, KC_EINVALID, "not a PodGroup apiVersion: %s",
		    api != NULL ? api : "(none)");
	if (ns == NULL || *ns == '\0' || name == NULL || *name == '\0')
		return kc_status_set(st, KC_EINVALID,
		    "PodGroup has no metadata.namespace or metadata.name");
	if ((g = kc_calloc(1, sizeof(*g))) == NULL)
		return -ENOMEM;
	if ((g->key = sched_pg_key(group, ns, name)) == NULL || (g->ns = kc_strdup(ns)) == NULL ||
	    (g->name = kc_strdup(name)) == NULL) {
		spg_free(g);
		return -ENOMEM;
	}
	min = kc_json_int(pg, 0, "spec", "minMember");
	g->min = min > INT32_MAX ? INT32_MAX : min < 0 ? 0 : (int32_t)min;
	g->created = jtime(meta, "creationTimestamp");
	old = sched_smap_get(&s->pgs, g->key);
	if ((r = sched_smap_put(&s->pgs, g->key, g)) < 0) {
		spg_free(g);
		return r;
	}
	spg_free(old);
	return 0;
}

bool
sched_podgroup_remove(struct sched *s, const char *group, const char *ns, const char *name)
{
	char *key = sched_pg_key(group, ns, name);
	struct spg *g;

	if (key == NULL)
		return false;
	g = smap_del(&s->pgs, key);
	kc_free(key);
	spg_free(g);
	return g != NULL;
}

int
sched_namespace_put(struct sched *s, const struct json_object *ns, struct kc_status *st)
{
	struct json_object *meta = jobj(ns, "metadata");
	const char *name = jstr(meta, "name");
	struct sns *n, *old;
	int r;

	if (name == NULL || *name == '\0')
		return kc_status_set(st, KC_EINVALID, "namespace has no metadata.name");
	if ((n = kc_calloc(1, sizeof(*n))) == NULL)
		return -ENOMEM;
	if ((n->name = kc_strdup(name)) == NULL ||
	    (n->labels = labels_copy(jobj(meta, "labels"))) == NULL) {
		sns_free(n);
		return -ENOMEM;
	}
	old = sched_smap_get(&s->nss, name);
	if ((r = sched_smap_put(&s->nss, name, n)) < 0) {
		sns_free(n);
		return r;
	}
	sns_free(old);
	return 0;
}

bool
sched_namespace_remove(struct sched *s, const char *name)
{
	struct sns *n = smap_del(&s->nss, name);

	sns_free(n);
	return n != NULL;
}


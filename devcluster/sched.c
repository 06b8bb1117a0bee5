/*
 * sched.c: the decisions of kube-scheduler with the scheduler-plugins
 * Coscheduling plugin, for the devcluster's simulated GPU cluster.
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

/* Resource slots 0..2; every other resource name gets the next slot. */
#define RES_CPU		0
#define RES_MEM		1
#define RES_EPH		2
#define RES_FIXED	3

#define LABEL_MAX	256	/* longest label key read for topology */

/* Filter verdicts, as upstream's status codes. */
#define F_OK		0
#define F_UNSCHED	1	/* Unschedulable: preemption might help */
#define F_UNRESOLV	2	/* UnschedulableAndUnresolvable */

/* Upstream's reason strings. */
#define R_UNSCHEDULABLE	"node(s) were unschedulable"
#define R_NODE_AFFINITY	"node(s) didn't match Pod's node affinity/selector"
#define R_PREFILTER_NA	"node(s) didn't satisfy plugin(s) [NodeAffinity]"
#define R_TOO_MANY_PODS	"Too many pods"
#define R_CPU		"Insufficient cpu"
#define R_MEMORY	"Insufficient memory"
#define R_EPHEMERAL	"Insufficient ephemeral-storage"
#define R_AFFINITY	"node(s) didn't match pod affinity rules"
#define R_ANTI		"node(s) didn't match pod anti-affinity rules"
#define R_EXISTING_ANTI	"node(s) didn't satisfy existing pods anti-affinity rules"
#define R_NOT_HELPFUL	"Preemption is not helpful for scheduling"
#define R_NO_VICTIMS	"No preemption victims found for incoming pod"
#define M_CONFLICT	"pod affinity terms conflict"
#define M_NO_NODES	"no nodes available to schedule pods"
#define M_NEVER		"not eligible due to preemptionPolicy=Never."
#define M_TERMINATING	"not eligible due to a terminating pod on the nominated node."
#define M_NO_GROUP	"can not find pod group"
#define M_PG_NOT_FOUND	"0/1 nodes are available: 1 PodGroup not found."
#define M_OPTIMISTIC	"optimistic rejection in PostFilter"

#define Q_RE		"quantities must match the regular expression " \
			"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
#define Q_SUFFIX	"unable to parse quantity's suffix"

#define TAINT_UNSCHED	"node.kubernetes.io/unschedulable"
#define TAINT_NOT_READY	"node.kubernetes.io/not-ready"
#define TAINT_UNREACH	"node.kubernetes.io/unreachable"

enum phase { PH_PENDING, PH_RUNNING, PH_SUCCEEDED, PH_FAILED, PH_UNKNOWN };

/* json-c's iteration and string getters take non-const objects they only read. */
static struct json_object *
mut(const struct json_object *o)
{
	return (struct json_object *)(uintptr_t)o;
}

/* sort() that accepts an empty (NULL) array. */
static void
sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

static void
sort_r(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *),
    void *arg)
{
	if (n > 1)
		qsort_r(base, n, size, cmp, arg);
}

/*
 * String-keyed hash map (chained, power-of-two buckets). It owns copies
 * of the keys, not the values.
 */

struct smap_ent {
	struct smap_ent	*next;
	uint64_t	 hash;
	void		*val;
	char		 key[];
};

struct smap {
	struct smap_ent	**b;
	size_t		  nb;
	size_t		  n;
};

#define HASH_SEED	UINT64_C(0xcbf29ce484222325)

static uint64_t
hash_str(uint64_t h, const char *s)
{
	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

static struct smap_ent *
smap_find(const struct smap *m, const char *key, uint64_t h)
{
	struct smap_ent *e;

	if (m->nb == 0)
		return NULL;
	for (e = m->b[h & (m->nb - 1)]; e != NULL; e = e->next)
		if (e->hash == h && strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

static void *
smap_get(const struct smap *m, const char *key)
{
	struct smap_ent *e = smap_find(m, key, hash_str(HASH_SEED, key));

	return e != NULL ? e->val : NULL;
}

static int
smap_grow(struct smap *m)
{
	size_t nb = m->nb != 0 ? m->nb * 2 : 64;
	struct smap_ent **b, *e, *next;

	if ((b = kc_calloc(nb, sizeof(*b))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < m->nb; i++)
		for (e = m->b[i]; e != NULL; e = next) {
			next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	kc_free(m->b);
	m->b = b;
	m->nb = nb;
	return 0;
}

/* Sets 'key' to 'val' (replacing). 0 or -ENOMEM, the map unchanged. */
static int
smap_put(struct smap *m, const char *key, void *val)
{
	uint64_t h = hash_str(HASH_SEED, key);
	struct smap_ent *e;
	size_t len;

	if ((e = smap_find(m, key, h)) != NULL) {
		e->val = val;
		return 0;
	}
	if ((m->nb == 0 || m->n >= m->nb) && smap_grow(m) < 0 && m->nb == 0)
		return -ENOMEM;
	len = strlen(key);
	if ((e = kc_malloc(sizeof(*e) + len + 1)) == NULL)
		return -ENOMEM;
	memcpy(e->key, key, len + 1);
	e->hash = h;
	e->val = val;
	e->next = m->b[h & (m->nb - 1)];
	m->b[h & (m->nb - 1)] = e;
	m->n++;
	return 0;
}

/* Removes 'key' and returns its value (NULL when absent). */
static void *
smap_del(struct smap *m, const char *key)
{
	uint64_t h = hash_str(HASH_SEED, key);
	struct smap_ent **pp, *e;
	void *val;

	if (m->nb == 0)
		return NULL;
	for (pp = &m->b[h & (m->nb - 1)]; (e = *pp) != NULL; pp = &e->next)
		if (e->hash == h && strcmp(e->key, key) == 0) {
			*pp = e->next;
			val = e->val;
			kc_free(e);
			m->n--;
			return val;
		}
	return NULL;
}

/* Calls 'fn' on every value (in no particular order). */
static void
smap_each(const struct smap *m, void (*fn)(void *, void *), void *arg)
{
	struct smap_ent *e;

	for (size_t i = 0; i < m->nb; i++)
		for (e = m->b[i]; e != NULL; e = e->next)
			fn(e->val, arg);
}

static void
smap_clear(struct smap *m)
{
	struct smap_ent *e, *next;

	for (size_t i = 0; i < m->nb; i++)
		for (e = m->b[i]; e != NULL; e = next) {
			next = e->next;
			kc_free(e);
		}
	m->b = kc_free(m->b);
	m->nb = 0;
	m->n = 0;
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
static int
smap_values(const struct smap *m, void ***ret, size_t *ret_n)
{
	struct collect c = { NULL, 0 };

	if (m->n != 0 && (c.v = kc_calloc(m->n, sizeof(*c.v))) == NULL)
		return -ENOMEM;
	smap_each(m, collect_one, &c);
	*ret = c.v;
	*ret_n = c.n;
	return 0;
}

/*
 * A string builder that truncates at SCHED_MESSAGE_MAX instead of failing
 * and remembers an allocation failure.
 */

struct sb {
	char	*p;
	size_t	 len, cap;
	int	 err;
};

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

static void _printf_(2, 3)
sb_printf(struct sb *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(b, fmt, ap);
	va_end(ap);
}

/* Hands the text over (never NULL on success) or returns the error. */
static int
sb_take(struct sb *b, char **ret)
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
 * Quantities
 *
 * Parsed as ParseQuantity() scans them; the value D * 10^e * 2^b is then
 * scaled exactly with a small fixed-size big integer, rounded up away
 * from zero and saturated at INT64_MAX.
 */

#define BN_LIMBS	16	/* 512 bits: 64 digits times 2^60 fit */

struct bn {
	uint32_t	l[BN_LIMBS];
};

/* a = a * m + add; false on overflow past BN_LIMBS. */
static bool
bn_mul_add(struct bn *a, uint32_t m, uint32_t add)
{
	uint64_t carry = add;

	for (size_t i = 0; i < BN_LIMBS; i++) {
		uint64_t v = (uint64_t)a->l[i] * m + carry;

		a->l[i] = (uint32_t)v;
		carry = v >> 32;
	}
	return carry == 0;
}

/* a = a / d; returns the remainder. */
static uint32_t
bn_div(struct bn *a, uint32_t d)
{
	uint64_t rem = 0;

	for (size_t i = BN_LIMBS; i-- > 0;) {
		uint64_t v = (rem << 32) | a->l[i];

		a->l[i] = (uint32_t)(v / d);
		rem = v % d;
	}
	return (uint32_t)rem;
}

/* The value, or INT64_MAX when it is larger. */
static int64_t
bn_i64(const struct bn *a)
{
	uint64_t v;

	for (size_t i = 2; i < BN_LIMBS; i++)
		if (a->l[i] != 0)
			return INT64_MAX;
	v = ((uint64_t)a->l[1] << 32) | a->l[0];
	return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* ceil(D * 10^(e10 + k) * 2^bin) for the digit string D, saturated. */
static int64_t
qty_scale(const char *d, size_t nd, int64_t e10, unsigned bin, int k)
{
	struct bn a;
	int64_t t = e10 + k, v;
	bool rem = false;

	if (nd == 0)
		return 0;
	memset(&a, 0, sizeof(a));
	for (size_t i = 0; i < nd; i++)
		if (!bn_mul_add(&a, 10, (uint32_t)(d[i] - '0')))
			return INT64_MAX;
	for (; bin >= 30; bin -= 30)
		if (!bn_mul_add(&a, UINT32_C(1) << 30, 0))
			return INT64_MAX;
	if (bin > 0 && !bn_mul_add(&a, UINT32_C(1) << bin, 0))
		return INT64_MAX;
	if (t >= 0) {
		if (t > 40)
			return INT64_MAX;
		for (; t > 0; t--)
			if (!bn_mul_add(&a, 10, 0))
				return INT64_MAX;
		return bn_i64(&a);
	}
	if (t < -200)
		return 1;	/* a nonzero value below one unit rounds up to 1 */
	for (; t < 0; t++)
		if (bn_div(&a, 10) != 0)
			rem = true;
	v = bn_i64(&a);
	if (rem && v < INT64_MAX)
		v++;
	return v;
}

static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static const struct {
	const char	*s;
	int		 e10;
	unsigned	 bin;
} qty_suffixes[] = {
	{ "", 0, 0 }, { "n", -9, 0 }, { "u", -6, 0 }, { "m", -3, 0 },
	{ "k", 3, 0 }, { "M", 6, 0 }, { "G", 9, 0 }, { "T", 12, 0 },
	{ "P", 15, 0 }, { "E", 18, 0 },
	{ "Ki", 0, 10 }, { "Mi", 0, 20 }, { "Gi", 0, 30 }, { "Ti", 0, 40 },
	{ "Pi", 0, 50 }, { "Ei", 0, 60 },
};

/*
 * Parses 'len' bytes of 's'. On failure returns KC_EINVALID with the
 * upstream message in '*ret_err' (static).
 */
static int
qty_parse(const char *s, size_t len, int64_t *ret_milli, int64_t *ret_value,
    const char **ret_err)
{
	char digits[SCHED_QUANTITY_MAX + 1];
	size_t pos = 0, ib, ie, fb = 0, fe = 0, sb, nd = 0, lead;
	int64_t e10 = 0, milli, value;
	unsigned bin = 0;
	bool neg = false, found = false;

	if (len == 0) {
		*ret_err = Q_RE;
		return KC_EINVALID;
	}
	if (len > SCHED_QUANTITY_MAX) {
		*ret_err = "quantity longer than 64 bytes";
		return KC_EINVALID;
	}
	if (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-';
		pos++;
	}
	while (pos < len && s[pos] == '0')
		pos++;
	if (pos == len) {
		milli = value = 0;
		goto out;
	}
	for (ib = pos; pos < len && is_digit(s[pos]); pos++)
		;
	ie = pos;
	if (pos < len && s[pos] == '.') {
		for (fb = ++pos; pos < len && is_digit(s[pos]); pos++)
			;
		fe = pos;
	}
	for (sb = pos; pos < len && s[pos] != '\0' &&
	    strchr("eEinumkKMGTP", s[pos]) != NULL; pos++)
		;
	if (pos < len && (s[pos] == '-' || s[pos] == '+'))
		pos++;
	while (pos < len && is_digit(s[pos]))
		pos++;
	if (pos != len) {
		*ret_err = Q_RE;
		return KC_EINVALID;
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(qty_suffixes); i++)
		if (strlen(qty_suffixes[i].s) == len - sb &&
		    memcmp(qty_suffixes[i].s, s + sb, len - sb) == 0) {
			e10 = qty_suffixes[i].e10;
			bin = qty_suffixes[i].bin;
			found = true;
			break;
		}
	if (!found) {
		int64_t x;

		if (len - sb < 2 || (s[sb] != 'e' && s[sb] != 'E') ||
		    kc_str_to_i64((struct kc_str){ s + sb + 1, len - sb - 1 }, &x) < 0) {
			*ret_err = Q_SUFFIX;
			return KC_EINVALID;
		}
		e10 = x > 100000 ? 100000 : x < -100000 ? -100000 : x;
	}
	memcpy(digits, s + ib, ie - ib);
	nd = ie - ib;
	memcpy(digits + nd, s + fb, fe - fb);
	nd += fe - fb;
	e10 -= (int64_t)(fe - fb);
	for (lead = 0; lead < nd && digits[lead] == '0'; lead++)
		;
	while (nd > lead && digits[nd - 1] == '0') {
		nd--;
		e10++;
	}
	milli = qty_scale(digits + lead, nd - lead, e10, bin, 3);
	value = qty_scale(digits + lead, nd - lead, e10, bin, 0);
	if (neg) {
		milli = -milli;
		value = -value;
	}
out:
	if (ret_milli != NULL)
		*ret_milli = milli;
	if (ret_value != NULL)
		*ret_value = value;
	return 0;
}

int
sched_quantity_parse(const char *text, int64_t *ret_milli, int64_t *ret_value,
    struct kc_status *st)
{
	const char *err = NULL;
	int r;

	if (text == NULL)
		return kc_status_set(st, KC_EINVALID, "%s", Q_RE);
	if ((r = qty_parse(text, strlen(text), ret_milli, ret_value, &err)) < 0)
		return kc_status_set(st, r, "%s", err);
	return 0;
}

static int64_t
sat_add(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	return a + b;
}

/*
 * Reads a quantity from JSON: a string as written, an integer exactly, a
 * double by its shortest %.15g form (JSON numbers are what YAML gives for
 * "nvidia.com/gpu: 8").
 */
static int
qty_json(const struct json_object *v, int64_t *ret_milli, int64_t *ret_value,
    const char **ret_err)
{
	char buf[64];
	const char *s;
	int64_t x;

	switch (json_object_get_type(v)) {
	case json_type_string:
		s = json_object_get_string(mut(v));
		return qty_parse(s, (size_t)json_object_get_string_len(v), ret_milli,
		    ret_value, ret_err);
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
		return qty_parse(buf, strlen(buf), ret_milli, ret_value, ret_err);
	default:
		*ret_err = Q_RE;
		return KC_EINVALID;
	}
}

/*
 * The cache
 */

struct rv {
	uint32_t	idx;
	int64_t		val;
};

struct taint {
	char	*key, *value, *effect;
	char	*reason;		/* "node(s) had untolerated taint {k: v}" */
};

enum { TOL_EQUAL, TOL_EXISTS, TOL_BAD };

struct tol {
	char	*key, *value, *effect;
	int	 op;
};

enum { NS_IN, NS_NOTIN, NS_EXISTS, NS_DNE, NS_GT, NS_LT };

struct nsreq {
	char	 *key;
	int	  op;
	char	**vals;
	size_t	  nvals;
	int64_t	  num;			/* Gt, Lt */
};

/* A nodeSelectorTerm; an invalid or empty one matches nothing. */
struct nsterm {
	struct nsreq	*ex;
	size_t		 nex;
	struct nsreq	*fl;
	size_t		 nfl;
	bool		 valid;
};

/* A required PodAffinityTerm. */
struct aterm {
	struct kc_label_selector *sel;
	struct kc_label_selector *nssel;	/* NULL: nil namespaceSelector */
	char		**nss;
	size_t		  nnss;
	char		 *key;			/* topologyKey */
};

struct snode {
	char		*name;
	struct json_object *labels;		/* never NULL */
	bool		 unschedulable;
	struct taint	*taints;
	size_t		 ntaints;
	struct rv	*alloc;
	size_t		 nalloc;
	int64_t		 maxpods;
};

struct spod {
	char		*key;			/* "ns/name" */
	char		*ns, *name, *uid;
	char		*node;			/* spec.nodeName or NULL */
	char		*schedname;
	char		*nominated;
	char		*pgkey;			/* "x|ns/name", "s|ns/name" or NULL */
	const char	*pgname;		/* inside pgkey */
	int32_t		 prio;
	enum phase	 phase;
	bool		 never, terminating, preempted, gated;
	time_t		 created, started;
	struct json_object *labels;		/* never NULL */
	struct rv	*req;
	size_t		 nreq;
	struct tol	*tols;
	size_t		 ntols;
	struct json_object *nodesel;		/* NULL when absent */
	bool		 has_naff;		/* required node affinity set */
	struct nsterm	*terms;
	size_t		 nterms;
	struct aterm	*aff;
	size_t		 naff;
	struct aterm	*anti;
	size_t		 nanti;
	char		**owners;
	size_t		 nowners;
	char		*broken;		/* why the spec could not be read */
};

struct spg {
	char		*key;
	char		*ns, *name;
	int32_t		 min;
	time_t		 created;
};

struct sns {
	char		*name;
	struct json_object *labels;
};

struct sched {
	char		*default_name, *cosched_name;
	bool		 cosched_default;
	struct smap	 nodes, pods, pgs, nss;
	struct smap	 resmap;		/* name -> slot + 1 */
	char		*resname[SCHED_RESOURCES_MAX + RES_FIXED];
	char		*resreason[SCHED_RESOURCES_MAX + RES_FIXED];
	size_t		 nres;
};

static char **
strv_free(char **v, size_t n)
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
	strv_free(q->vals, q->nvals);
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
	strv_free(t->nss, t->nnss);
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
	strv_free(p->owners, p->nowners);
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
	smap_each(&s->nodes, free_node_cb, NULL);
	smap_each(&s->pods, free_pod_cb, NULL);
	smap_each(&s->pgs, free_pg_cb, NULL);
	smap_each(&s->nss, free_ns_cb, NULL);
	smap_clear(&s->nodes);
	smap_clear(&s->pods);
	smap_clear(&s->pgs);
	smap_clear(&s->nss);
	smap_clear(&s->resmap);
	for (size_t i = 0; i < s->nres; i++) {
		kc_free(s->resname[i]);
		kc_free(s->resreason[i]);
	}
	kc_free(s->default_name);
	kc_free(s->cosched_name);
	return kc_free(s);
}

/*
 * Resource names. Only those the scheduler counts get a slot: cpu,
 * memory, ephemeral-storage and the scalar resources (extended resources,
 * hugepages-*, attachable-volumes-*); "pods" is read apart.
 */

enum { RK_IGNORE, RK_CPU, RK_MEM, RK_EPH, RK_PODS, RK_SCALAR };

static bool
has_prefix(const char *s, const char *prefix)
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
	if (has_prefix(name, "hugepages-") || has_prefix(name, "attachable-volumes-"))
		return RK_SCALAR;
	/* v1helper.IsExtendedResourceName() */
	if (strchr(name, '/') != NULL && strstr(name, "kubernetes.io/") == NULL &&
	    !has_prefix(name, "requests."))
		return RK_SCALAR;
	return RK_IGNORE;
}

static int
res_add_name(struct sched *s, const char *name, const char *reason)
{
	char *n, *r;
	int ret;

	if (s->nres >= SCHED_RESOURCES_MAX + RES_FIXED)
		return KC_EINVALID;
	n = kc_strdup(name);
	r = reason != NULL ? kc_strdup(reason) : kc_asprintf("Insufficient %s", name);
	if (n == NULL || r == NULL ||
	    (ret = smap_put(&s->resmap, name, (void *)(uintptr_t)(s->nres + 1))) < 0) {
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
	uintptr_t v = (uintptr_t)smap_get(&s->resmap, name);
	int r;

	if (v == 0) {
		if ((r = res_add_name(s, name, NULL)) == KC_EINVALID)
			return kc_status_set(st, -E2BIG, "more than %d distinct resource names",
			    SCHED_RESOURCES_MAX);
		if (r < 0)
			return r;
		v = s->nres;
	}
	*ret = (uint32_t)(v - 1);
	return 0;
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
	if ((r = res_add_name(s, "cpu", R_CPU)) < 0 ||
	    (r = res_add_name(s, "memory", R_MEMORY)) < 0 ||
	    (r = res_add_name(s, "ephemeral-storage", R_EPHEMERAL)) < 0)
		return r;
	*ret = s;
	s = NULL;
	return 0;
}

size_t
sched_node_count(const struct sched *s)
{
	return s->nodes.n;
}

size_t
sched_pod_count(const struct sched *s)
{
	return s->pods.n;
}

/*
 * Small JSON readers
 */

static const char *
jstr(const struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o == NULL || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static struct json_object *
jget(const struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o == NULL || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

static struct json_object *
jarr(const struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);

	return v != NULL && json_object_is_type(v, json_type_array) ? v : NULL;
}

static struct json_object *
jobj(const struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);

	return v != NULL && json_object_is_type(v, json_type_object) ? v : NULL;
}

static size_t
jlen(const struct json_object *a)
{
	return a != NULL ? json_object_array_length(a) : 0;
}

static struct json_object *
jidx(const struct json_object *a, size_t i)
{
	return json_object_array_get_idx(a, i);
}

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

static const char *
label(const struct json_object *labels, const char *key)
{
	return jstr(labels, key);
}


static int
rv_cmp(const void *a, const void *b)
{
	const struct rv *x = a, *y = b;

	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The nonzero slots of 'dense' as a sorted sparse vector. */
static int
rv_from_dense(const int64_t *dense, size_t n, struct rv **ret, size_t *ret_n)
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

static int64_t
rv_get(const struct rv *v, size_t n, uint32_t idx)
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
static int
rl_read(struct sched *s, const struct json_object *rl, const struct json_object *skip,
    const char *path, int64_t *dense, int64_t *pods, struct kc_status *st)
{
	const char *err;
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
		if ((r = qty_json(q, &milli, &value, &err)) < 0) {
			const char *text = json_object_is_type(q, json_type_string) ?
			    json_object_get_string(q) : json_type_to_name(json_object_get_type(q));

			return kc_status_set(st, r, "%s[%s]: Invalid value: \"%s\": %s",
			    path, name, text, err);
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
	if ((r = rl_read(s, req, NULL, p, dense, NULL, st)) < 0)
		return r;
	(void)snprintf(p, sizeof(p), "%s.resources.limits", path);
	return rl_read(s, jobj(res, "limits"), req, p, dense, NULL, st);
}

/*
 * The pod's request vector (resourcehelper.PodRequests() without
 * pod-level resources): containers summed, restartable init containers
 * added and accumulated, each init container (plus the restartable ones
 * before it) as a floor, then the overhead.
 */
static int
pod_requests(struct sched *s, const struct json_object *pod, struct rv **ret,
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
	if ((r = rl_read(s, jobj(spec, "overhead"), NULL, "spec.overhead", sum, NULL,
	    st)) < 0)
		goto out;
	r = rv_from_dense(sum, s->nres, ret, ret_n);
out:
	kc_free(sum);
	return r;
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
	r = rl_read(s, jobj(jobj(node, "status"), "allocatable"), NULL,
	    "status.allocatable", dense, &n->maxpods, st);
	if (r == 0)
		r = rv_from_dense(dense, s->nres, &n->alloc, &n->nalloc);
	kc_free(dense);
	if (r == -E2BIG)
		return KC_EINVALID;
	if (r < 0)
		return r;
	old = smap_get(&s->nodes, name);
	if ((r = smap_put(&s->nodes, name, n)) < 0)
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
			strv_free(v, n);
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

static enum phase
phase_of(const char *s)
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

	if ((r = pod_requests(s, pod, &p->req, &p->nreq, st)) < 0)
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
	p->phase = phase_of(jstr(status, "phase"));
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
	if ((pgname = label(p->labels, SCHED_PG_LABEL)) != NULL && *pgname != '\0')
		p->pgkey = kc_asprintf("x|%s/%s", ns, pgname);
	else if ((pgname = label(p->labels, SCHED_PG_LABEL_OLD)) != NULL && *pgname != '\0')
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
	old = smap_get(&s->pods, p->key);
	if ((r = smap_put(&s->pods, p->key, p)) < 0)
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
	p = smap_get(&s->pods, key);
	kc_free(key);
	if (p == NULL)
		return KC_ENOTFOUND;
	nominated = jdup_opt(status, "nominatedNodeName", &r);
	if (r < 0)
		return r;
	kc_free(p->nominated);
	p->nominated = nominated;
	p->phase = phase_of(jstr(status, "phase"));
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

static char *
pg_key(const char *group, const char *ns, const char *name)
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

	if (api != NULL && has_prefix(api, SCHED_PG_GROUP "/"))
		group = SCHED_PG_GROUP;
	else if (api != NULL && has_prefix(api, SCHED_PG_GROUP_OLD "/"))
		group = SCHED_PG_GROUP_OLD;
	else
		return kc_status_set(st, KC_EINVALID, "not a PodGroup apiVersion: %s",
		    api != NULL ? api : "(none)");
	if (ns == NULL || *ns == '\0' || name == NULL || *name == '\0')
		return kc_status_set(st, KC_EINVALID,
		    "PodGroup has no metadata.namespace or metadata.name");
	if ((g = kc_calloc(1, sizeof(*g))) == NULL)
		return -ENOMEM;
	if ((g->key = pg_key(group, ns, name)) == NULL || (g->ns = kc_strdup(ns)) == NULL ||
	    (g->name = kc_strdup(name)) == NULL) {
		spg_free(g);
		return -ENOMEM;
	}
	min = kc_json_int(pg, 0, "spec", "minMember");
	g->min = min > INT32_MAX ? INT32_MAX : min < 0 ? 0 : (int32_t)min;
	g->created = jtime(meta, "creationTimestamp");
	old = smap_get(&s->pgs, g->key);
	if ((r = smap_put(&s->pgs, g->key, g)) < 0) {
		spg_free(g);
		return r;
	}
	spg_free(old);
	return 0;
}

bool
sched_podgroup_remove(struct sched *s, const char *group, const char *ns, const char *name)
{
	char *key = pg_key(group, ns, name);
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
	old = smap_get(&s->nss, name);
	if ((r = smap_put(&s->nss, name, n)) < 0) {
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

/*
 * Plans: the scratch state
 */

struct ppod;

struct pnode {
	const struct snode	*n;
	int64_t			*alloc, *req;	/* [nres] */
	int64_t			 npods;
	struct ppod		**pods;		/* active here: bound or placed */
	size_t			 np, cp;
	struct ppod		**noms;		/* pending pods nominated here */
	size_t			 nn, cn;
	bool			 mark;
	int64_t			 cost, cost2;	/* gang preemption: evicted here */
};

struct ppod {
	const struct spod	*p;
	struct pnode		*node;	/* active on it */
	size_t			 slot;
	struct pnode		*home;	/* where a removed victim was */
	struct pnode		*nom;	/* its nomination holds space here */
	bool			 pending, placed, removed, cleared;
};

struct unit {
	struct ppod		**m;	/* pending pods, priority then name */
	size_t			  nm;
	const struct spg	 *pg;
	const char		 *pgkey;
	bool			  gang;	/* Coscheduling and a PodGroup label */
	bool			  cos;	/* the profile runs Coscheduling */
	int32_t			  prio;
	time_t			  ts;
	const char		 *key;
	int64_t			  total, bound;
};

struct plan {
	const struct sched	*s;
	size_t			 nres;
	struct pnode		*nodes;		/* by name */
	size_t			 nnodes;
	int64_t			*vecs;
	struct ppod		*pods;		/* by namespace/name */
	size_t			 npods;
	struct ppod		**anti;		/* pods with required anti-affinity */
	size_t			 nanti;
	struct unit		*units;
	size_t			 nunits;
	struct ppod		**members;	/* the units' member arrays */
	struct smap		 nslabels;	/* namespaces never put */
	struct sched_plan	*out;
	size_t			 capb, capn, capv, capu;
};

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

static int
out_bind(struct plan *pl, const struct spod *p, const struct pnode *pn)
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
static int
out_nom(struct plan *pl, const struct spod *p, const struct pnode *pn)
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

static int
out_victim(struct plan *pl, const struct spod *v, const struct pnode *pn,
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
static int
out_unsched(struct plan *pl, const struct spod *p, const char *reason, char *msg)
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
static int
fail_pod(struct plan *pl, struct ppod *pp, char *msg, bool keep)
{
	int r;

	if ((r = out_unsched(pl, pp->p, "Unschedulable", msg)) < 0)
		return r;
	if (!keep && pp->p->nominated != NULL && !pp->cleared) {
		pp->nom = NULL;
		pp->cleared = true;
		return out_nom(pl, pp->p, NULL);
	}
	return 0;
}

/*
 * The scratch state
 */

static int
pn_add(struct pnode *pn, struct ppod *q)
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

static void
pn_del(struct ppod *q)
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

static struct pnode *
node_find(const struct plan *pl, const char *name)
{
	if (name == NULL || pl->nnodes == 0)
		return NULL;
	return bsearch(name, pl->nodes, pl->nnodes, sizeof(*pl->nodes), pnode_cmp_name);
}

static bool
same_gang(const char *gang, const struct spod *q)
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

struct tpmap {
	struct tpent	*e;
	size_t		 cap, used, nonzero;
};

static uint64_t
tp_hash(const char *k, const char *v)
{
	return hash_str(hash_str(HASH_SEED, k) * UINT64_C(31), v);
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

static int64_t
tp_get(const struct tpmap *m, const char *k, const char *v)
{
	struct tpent *e = tp_slot(m, k, v);

	return e != NULL && e->k != NULL ? e->n : 0;
}

static int
tp_add(struct tpmap *m, const char *k, const char *v, int64_t d)
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

static void
tp_reset(struct tpmap *m)
{
	if (m->cap != 0)
		memset(m->e, 0, m->cap * sizeof(*m->e));
	m->used = 0;
	m->nonzero = 0;
}

/*
 * Reason histograms and FitError messages
 */

struct hist {
	const char	**r;
	int64_t		 *c;
	size_t		  n, cap;
};

static int
hist_add(struct hist *h, const char *r, int64_t c)
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

static void
hist_free(struct hist *h)
{
	h->r = kc_free(h->r);
	h->c = kc_free(h->c);
	h->n = h->cap = 0;
}

static int
strp_cmp(const void *a, const void *b)
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
	sort(items, n, sizeof(*items), strp_cmp);
	for (size_t i = 0; i < n; i++)
		sb_printf(b, "%s%s", i != 0 ? ", " : "", items[i]);
out:
	strv_free(items, n);
}

/* FitError.Error() without its PostFilter part. */
static void
fit_format(struct sb *b, size_t nnodes, const struct hist *h, const char *prefilter)
{
	sb_printf(b, "0/%zu nodes are available:", nnodes);
	if (prefilter != NULL)
		sb_printf(b, " %s.", prefilter);
	else if (h != NULL && h->n != 0) {
		sb_printf(b, " ");
		hist_format(h, b);
		sb_printf(b, ".");
	}
}

static char *
fit_message(size_t nnodes, const struct hist *h, const char *prefilter)
{
	struct sb b = { 0 };
	char *msg = NULL;

	fit_format(&b, nnodes, h, prefilter);
	if (sb_take(&b, &msg) < 0)
		return NULL;
	return msg;
}

/*
 * Evaluating one pod: filters and score
 */

struct eval {
	struct plan		*pl;
	struct ppod		*pp;
	const struct spod	*p;
	const char		*gang;		/* its gang: their nominations do not count */
	bool			 conflict;	/* NodeAffinity PreFilter failed */
	const char		**names;	/* NodeAffinity PreFilterResult; NULL: all */
	size_t			 nnames;
	bool			 aff_on, self;
	struct tpmap		 aff, anti, exist;
	uint32_t		*sidx;		/* scalar requests, by resource name */
	size_t			 nsidx;
	const struct pnode	*pin;		/* only nodes of this node's domain */
	const struct spod	*pinp;		/* whose affinity keys make the domain */
	bool			 only_marked;
	bool			 costs;		/* prefer nodes that evict less */
};

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
	const char *v = label(labels, q->key);
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
			const char *l = label(n->labels, k);

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

	if ((r = hist_add(h, reason, 1)) < 0)
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
		    same_gang(ev->gang, q->p))
			continue;
		sum = sat_add(sum, idx < 0 ? 1 : rv_get(q->p->req, q->p->nreq, (uint32_t)idx));
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
		if ((r = hist_add(h, R_TOO_MANY_PODS, 1)) < 0)
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
		if ((r = hist_add(h, s->resreason[idx], 1)) < 0)
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
	const struct sns *n = smap_get(&pl->s->nss, ns);

	if (n != NULL)
		return n->labels;
	return smap_get(&pl->nslabels, ns);
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
			if ((v = label(pn->n->labels, p->aff[i].key)) != NULL &&
			    (r = tp_add(&ev->aff, p->aff[i].key, v, d)) < 0)
				return r;
	for (size_t i = 0; i < p->nanti; i++)
		if (term_match(ev->pl, &p->anti[i], q->p) &&
		    (v = label(pn->n->labels, p->anti[i].key)) != NULL &&
		    (r = tp_add(&ev->anti, p->anti[i].key, v, d)) < 0)
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
		    (v = label(pn->n->labels, e->anti[i].key)) != NULL &&
		    (r = tp_add(&ev->exist, e->anti[i].key, v, d)) < 0)
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

	tp_reset(&ev->aff);
	tp_reset(&ev->anti);
	tp_reset(&ev->exist);
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
			if ((v = label(labels, p->aff[i].key)) == NULL)
				return reject(h, R_AFFINITY, F_UNRESOLV);
			if (tp_get(&ev->aff, p->aff[i].key, v) <= 0)
				exist = false;
		}
		/* The first pod of a series with affinity to itself goes anywhere. */
		if (!exist && !(ev->aff.nonzero == 0 && ev->self))
			return reject(h, R_AFFINITY, F_UNRESOLV);
	}
	if (ev->anti.nonzero != 0)
		for (size_t i = 0; i < p->nanti; i++)
			if ((v = label(labels, p->anti[i].key)) != NULL &&
			    tp_get(&ev->anti, p->anti[i].key, v) > 0)
				return reject(h, R_ANTI, F_UNSCHED);
	if (ev->exist.nonzero != 0) {
		json_object_object_foreach(mut(labels), k, lv) {
			if (tp_get(&ev->exist, k, json_object_get_string(lv)) > 0)
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
	    -rv_get(ev->p->req, ev->p->nreq, idx));
}

/*
 * Most allocated first: least left of each requested resource, then name.
 * When placing a gang over evicted pods, first the nodes whose evicted
 * pods have the lowest priority, then the fewest of them.
 */
static bool
better(const struct eval *ev, const struct pnode *a, const struct pnode *b)
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
static bool
same_domain(const struct spod *p, const struct pnode *a, const struct pnode *b)
{
	for (size_t i = 0; i < p->naff; i++) {
		const char *x = label(a->n->labels, p->aff[i].key);
		const char *y = label(b->n->labels, p->aff[i].key);

		if (x == NULL || y == NULL || strcmp(x, y) != 0)
			return false;
	}
	return true;
}

static void
eval_free(struct eval *ev)
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
	sort(all, nall, sizeof(*all), cstr_cmp);
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

static int
eval_init(struct eval *ev, struct plan *pl, struct ppod *pp, const char *gang)
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
	sort_r(ev->sidx, ev->nsidx, sizeof(*ev->sidx), sidx_cmp, (void *)(uintptr_t)pl->s);
	if ((r = prefilter_names(ev)) < 0 || (r = aff_build(ev)) < 0) {
		eval_free(ev);
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
static int
eval_all(const struct eval *ev, struct hist *h, uint8_t *codes, struct pnode **feas,
    size_t *ret_nfeas, struct pnode **ret_best)
{
	struct plan *pl = ev->pl;
	struct pnode *best = NULL, *nom = NULL;
	size_t nf = 0;
	int r;

	for (size_t i = 0; i < pl->nnodes; i++) {
		struct pnode *pn = &pl->nodes[i];

		if ((ev->only_marked && !pn->mark) ||
		    (ev->pin != NULL && !same_domain(ev->pinp, pn, ev->pin))) {
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
		if (best == NULL || better(ev, pn, best))
			best = pn;
	}
	if (ret_nfeas != NULL)
		*ret_nfeas = nf;
	*ret_best = nom != NULL ? nom : best;
	return 0;
}

/* Puts a pending pod on a node of the scratch state; its nomination is spent. */
static int
place(struct ppod *pp, struct pnode *pn)
{
	int r;

	if ((r = pn_add(pn, pp)) < 0)
		return r;
	pp->placed = true;
	pp->nom = NULL;
	return 0;
}

static void
unplace(struct ppod *pp)
{
	pn_del(pp);
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

static int
restore(struct eval *ev, struct ppod *q, struct pnode *pn)
{
	int r;

	if ((r = pn_add(pn, q)) < 0)
		return r;
	return ev != NULL ? aff_pod(ev, q, pn, 1) : 0;
}

static int
evict(struct eval *ev, struct ppod *q)
{
	struct pnode *pn = q->node;

	pn_del(q);
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

		if (q->p->prio < ev->p->prio && !q->placed && !same_gang(ev->gang, q->p))
			nl++;
	}
	if (nl == 0)
		return hist_add(diag, R_NO_VICTIMS, 1);
	if ((low = kc_calloc(nl, sizeof(*low))) == NULL ||
	    (vic = kc_calloc(nl, sizeof(*vic))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	nl = 0;
	for (size_t i = 0; i < pn->np; i++) {
		struct ppod *q = pn->pods[i];

		if (q->p->prio < ev->p->prio && !q->placed && !same_gang(ev->gang, q->p))
			low[nl++] = q;
	}
	for (size_t i = 0; i < nl; i++)
		if ((r = evict(ev, low[i])) < 0)
			goto out;
	if ((code = filter(ev, pn, diag)) != F_OK) {
		r = code < 0 ? code : 0;
		for (size_t i = 0; r == 0 && i < nl; i++)
			r = restore(ev, low[i], pn);
		goto out;
	}
	sort(low, nl, sizeof(*low), importance_cmp);
	for (size_t i = 0; i < nl; i++) {
		if ((r = restore(ev, low[i], pn)) < 0 || (code = filter(ev, pn, NULL)) < 0) {
			r = r < 0 ? r : code;
			goto out;
		}
		if (code != F_OK) {
			if ((r = evict(ev, low[i])) < 0)
				goto out;
			vic[nv++] = low[i];
		}
	}
	for (size_t i = 0; i < nv; i++)
		if ((r = restore(ev, vic[i], pn)) < 0)
			goto out;
	*ret_victims = vic;
	*ret_n = nv;
	vic = NULL;
out:
	kc_free(low);
	kc_free(vic);
	return r;
}

struct cand {
	struct pnode	*pn;
	struct ppod	**v;
	size_t		  nv;
	int32_t		  top;		/* highest victim priority */
	int64_t		  sum;		/* sum of priority + 2^31 */
	time_t		  start;	/* earliest start among the top-priority ones */
};

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
static int
preempt_one(struct eval *ev, const uint8_t *codes, bool dry, struct hist *diag,
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
			if ((r = hist_add(diag, R_NOT_HELPFUL, 1)) < 0)
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
			if ((r = hist_add(diag, R_NOT_HELPFUL, 1)) < 0)
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
static const char *
ineligible(const struct plan *pl, const struct spod *p, const uint8_t *codes)
{
	const struct pnode *pn;

	if (p->never)
		return M_NEVER;
	if ((pn = node_find(pl, p->nominated)) == NULL)
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
static int
clear_lower_noms(struct plan *pl, struct pnode *pn, int32_t prio, const char *gang)
{
	int r;

	for (size_t i = 0; i < pn->nn; i++) {
		struct ppod *q = pn->noms[i];

		if (q->nom != pn || q->p->prio >= prio || same_gang(gang, q->p))
			continue;
		q->nom = NULL;
		q->cleared = true;
		if ((r = out_nom(pl, q->p, NULL)) < 0)
			return r;
	}
	return 0;
}

/* "preemption: ..." for the nodes' verdicts, or the ineligibility. */
static char *
preempt_message(size_t nnodes, const struct hist *diag, const char *inel)
{
	struct sb b = { 0 };
	char *msg = NULL;

	sb_printf(&b, "preemption: ");
	if (inel != NULL)
		sb_printf(&b, "%s", inel);
	else
		fit_format(&b, nnodes, diag, NULL);
	if (sb_take(&b, &msg) < 0)
		return NULL;
	return msg;
}

/* Joins the FitError with PostFilter's reasons: "<fit> <a>, <b>". */
static char *
join_message(const char *fit, const char *a, const char *b)
{
	if (a == NULL)
		return kc_strdup(fit);
	if (b == NULL)
		return kc_asprintf("%s %s", fit, a);
	return kc_asprintf("%s %s, %s", fit, a, b);
}

enum {
	MODE_DEFAULT,		/* the default profile, or a gang member past quorum */
	MODE_COS,		/* Coscheduling profile, no PodGroup label */
	MODE_MISSING_PG,	/* Coscheduling, the PodGroup does not exist */
};

/*
 * One pod: bind it, preempt for it, or say why not.
 */
static int
do_single(struct plan *pl, struct ppod *pp, int mode, const char *gang)
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
		return out_unsched(pl, p, "SchedulerError", kc_strdup(p->broken));
	if ((r = eval_init(&ev, pl, pp, gang)) < 0)
		return r;
	if ((codes = kc_calloc(pl->nnodes, 1)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if (ev.conflict)
		memset(codes, F_UNRESOLV, pl->nnodes);
	else if ((r = eval_all(&ev, &h, codes, NULL, NULL, &best)) < 0)
		goto out;
	if (best != NULL) {
		if (mode == MODE_MISSING_PG) {
			/* Permit: Coscheduling rejects a pod whose PodGroup is missing. */
			r = fail_pod(pl, pp, kc_strdup(M_PG_NOT_FOUND), false);
			goto out;
		}
		if ((r = place(pp, best)) < 0)
			goto out;
		r = out_bind(pl, p, best);
		goto out;
	}
	if ((fitmsg = fit_message(pl->nnodes, &h, ev.conflict ? M_CONFLICT : NULL)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if ((inel = ineligible(pl, p, codes)) != NULL) {
		if ((pre = preempt_message(pl->nnodes, NULL, inel)) == NULL) {
			r = -ENOMEM;
			goto out;
		}
		r = fail_pod(pl, pp, join_message(fitmsg, pre, mode != MODE_DEFAULT ?
		    M_NO_GROUP : NULL), true);
		goto out;
	}
	if ((r = preempt_one(&ev, codes, mode == MODE_MISSING_PG, &diag, &c)) < 0)
		goto out;
	if (c.pn != NULL) {
		for (size_t i = 0; i < c.nv; i++) {
			struct ppod *v = c.v[i];

			pn_del(v);
			v->removed = true;
			v->home = c.pn;
			if ((r = out_victim(pl, v->p, c.pn, p)) < 0)
				goto out;
		}
		if ((r = place(pp, c.pn)) < 0 || (r = out_nom(pl, p, c.pn)) < 0 ||
		    (r = clear_lower_noms(pl, c.pn, p->prio, gang)) < 0)
			goto out;
		r = out_unsched(pl, p, "Unschedulable", fitmsg);
		fitmsg = NULL;
		goto out;
	}
	if ((pre = preempt_message(pl->nnodes, &diag, NULL)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	r = fail_pod(pl, pp, join_message(fitmsg, pre, mode != MODE_DEFAULT ? M_NO_GROUP :
	    NULL), false);
out:
	kc_free(c.v);
	kc_free(pre);
	kc_free(fitmsg);
	kc_free(codes);
	hist_free(&h);
	hist_free(&diag);
	eval_free(&ev);
	return r;
}

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
		strv_free(sm->fitmsg, nm);
	kc_free(sm->assigned);
	kc_free(sm->dom);
	memset(sm, 0, sizeof(*sm));
}

static void
sim_undo(const struct unit *u, struct sim *sm)
{
	for (size_t i = u->nm; i-- > 0;)
		if (sm->where[i] != NULL) {
			unplace(u->m[i]);
			sm->where[i] = NULL;
		}
	sm->placed = 0;
}

static int
better_cmp(const void *a, const void *b, void *arg)
{
	const struct eval *ev = arg;
	const struct pnode *x = *(struct pnode *const *)a, *y = *(struct pnode *const *)b;

	if (better(ev, x, y))
		return -1;
	return better(ev, y, x) ? 1 : 0;
}

/* The opener's domains, in the order of its best node in each. */
static int
sim_domains(struct sim *sm, const struct eval *ev, struct pnode **feas, size_t nf)
{
	sort_r(feas, nf, sizeof(*feas), better_cmp, (void *)(uintptr_t)ev);
	kc_free(sm->dom);
	sm->ndom = 0;
	if ((sm->dom = kc_calloc(nf, sizeof(*sm->dom))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < nf; i++) {
		bool seen = false;

		for (size_t k = 0; !seen && k < sm->ndom; k++)
			seen = same_domain(ev->p, sm->dom[k], feas[i]);
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
		if ((r = eval_init(&ev, pl, pp, u->pgkey)) < 0)
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
			r = eval_all(&ev, msgs ? &h : NULL, NULL, feas, &nf, &best);
		if (r == 0 && opens && nf != 0) {
			sm->opener = i;
			r = sim_domains(sm, &ev, feas, nf);
		}
		if (r == 0 && best != NULL) {
			if ((r = place(pp, best)) == 0) {
				sm->where[i] = best;
				sm->placed++;
				if (msgs)
					sm->first[i] = true;
			}
		} else if (r == 0 && msgs) {
			sm->fitmsg[i] = fit_message(pl->nnodes, &h, ev.conflict ? M_CONFLICT : NULL);
			sm->assigned[i] = u->bound + (int64_t)sm->placed;
			if (sm->fitmsg[i] == NULL)
				r = -ENOMEM;
		}
		kc_free(feas);
		hist_free(&h);
		eval_free(&ev);
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
		if (first_dom != NULL && same_domain(u->m[sm->opener]->p, sm->dom[d], first_dom))
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

	if ((r = hist_add(&diag, R_NOT_HELPFUL, (int64_t)pl->nnodes)) < 0)
		return r;
	for (size_t i = 0; r == 0 && i < u->nm; i++) {
		struct ppod *pp = u->m[i];
		const struct spod *p = pp->p;
		char *why = NULL, *fitmsg = NULL, *pre = NULL, *cos = NULL;
		const char *inel;

		if (p->broken != NULL) {
			r = out_unsched(pl, p, "SchedulerError", kc_strdup(p->broken));
			continue;
		}
		inel = p->never ? M_NEVER : NULL;
		if ((why = kc_asprintf("pre-filter pod %s cannot find enough sibling pods, "
		    "current pods number: %" PRId64 ", minMember of group: %" PRId32, p->name,
		    u->total, g->min)) == NULL ||
		    (fitmsg = fit_message(pl->nnodes, NULL, why)) == NULL ||
		    (pre = preempt_message(pl->nnodes, &diag, inel)) == NULL ||
		    (r = cos_reject(g, p, u->bound, &cos)) < 0)
			r = r < 0 ? r : -ENOMEM;
		else
			r = fail_pod(pl, pp, join_message(fitmsg, pre, cos), inel != NULL);
		kc_free(why);
		kc_free(fitmsg);
		kc_free(pre);
		kc_free(cos);
	}
	hist_free(&diag);
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
	cx = rv_get(x->req, x->nreq, RES_CPU);
	cy = rv_get(y->req, y->nreq, RES_CPU);
	if (cx != cy)
		return cx < cy ? -1 : 1;
	cx = rv_get(x->req, x->nreq, RES_MEM);
	cy = rv_get(y->req, y->nreq, RES_MEM);
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
			if ((r = place(u->m[i], good[i])) < 0)
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
			if ((r = out_nom(pl, u->m[i]->p, good[i])) < 0 ||
			    (r = clear_lower_noms(pl, good[i], prio, u->pgkey)) < 0)
				return r;
		}
	for (size_t i = 0; i < nrem; i++)
		if (rem[i]->removed && (r = out_victim(pl, rem[i]->p, rem[i]->home, by)) < 0)
			return r;
	for (size_t i = 0; i < u->nm; i++) {
		const struct spod *p = u->m[i]->p;

		if (p->broken != NULL)
			r = out_unsched(pl, p, "SchedulerError", kc_strdup(p->broken));
		else if (!first->first[i] && first->fitmsg[i] != NULL) {
			r = out_unsched(pl, p, "Unschedulable", first->fitmsg[i]);
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
		if ((*ret_inel = ineligible(pl, p, NULL)) != NULL)
			return 0;
	}
	if (target == 0 || target < need)
		return 0;
	for (size_t i = 0; i < pl->npods; i++) {
		const struct ppod *q = &pl->pods[i];

		if (q->node != NULL && !q->placed && q->p->prio < prio && !same_gang(u->pgkey, q->p))
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

		if (q->node != NULL && !q->placed && q->p->prio < prio && !same_gang(u->pgkey, q->p))
			low[nl++] = q;
	}
	sort(low, nl, sizeof(*low), prio_asc_cmp);
	/* The lowest priority level whose pods, all gone, let the gang fit. */
	for (size_t i = 0; !ok && i < nl;) {
		int32_t level = low[i]->p->prio;

		for (; i < nl && low[i]->p->prio == level; i++) {
			low[i]->home = low[i]->node;
			low[i]->removed = true;
			(void)evict(NULL, low[i]);
			rem[nrem++] = low[i];
		}
		set_costs(pl, rem, nrem);
		if ((r = sim_run(pl, u, target, false, false, &sm, &ok)) < 0)
			goto out;
	}
	if (!ok) {
		for (size_t i = nrem; r == 0 && i-- > 0;) {
			rem[i]->removed = false;
			r = restore(NULL, rem[i], rem[i]->home);
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
		if ((r = restore(NULL, q, q->home)) < 0)
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
			(void)evict(NULL, back[i]);
			rem[nrem++] = back[i];
		}
		set_costs(pl, rem, nrem);
		if ((r = sim_run(pl, u, target, true, false, &sm, &ok)) < 0)
			goto out;
		if (!ok) {
			/* Cannot happen (the state is the one that fitted); give up. */
			for (size_t i = nrem; r == 0 && i-- > 0;) {
				rem[i]->removed = false;
				r = restore(NULL, rem[i], rem[i]->home);
			}
			goto out;
		}
	}
	memcpy(good, sm.where, u->nm * sizeof(*good));
	/* Reprieve whatever the gang can do without. */
	sort(rem, nrem, sizeof(*rem), reprieve_cmp);
	for (size_t i = 0; i < nrem; i++) {
		struct ppod *q = rem[i];

		sim_undo(u, &sm);
		q->removed = false;
		if ((r = restore(NULL, q, q->home)) < 0 ||
		    (r = sim_run(pl, u, target, true, false, &sm, &ok)) < 0)
			goto out;
		if (ok) {
			memcpy(good, sm.where, u->nm * sizeof(*good));
			continue;
		}
		q->removed = true;
		(void)evict(NULL, q);
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
	if ((r = eval_init(&ev, pl, pp, u->pgkey)) < 0)
		return r;
	if ((codes = kc_calloc(pl->nnodes, 1)) == NULL)
		r = -ENOMEM;
	else if (ev.conflict)
		memset(codes, F_UNRESOLV, pl->nnodes);
	else
		r = eval_all(&ev, NULL, codes, NULL, NULL, &best);
	if (r == 0)
		r = preempt_one(&ev, codes, true, &diag, &c);
	if (r == 0 && (*ret = preempt_message(pl->nnodes, &diag, NULL)) == NULL)
		r = -ENOMEM;
	kc_free(c.v);
	kc_free(codes);
	hist_free(&diag);
	eval_free(&ev);
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
			r = out_unsched(pl, p, "SchedulerError", kc_strdup(p->broken));
			continue;
		}
		if (sm->first[i] || sm->fitmsg[i] == NULL)
			continue;
		if (inel != NULL) {
			if ((pre = preempt_message(pl->nnodes, NULL, inel)) == NULL)
				r = -ENOMEM;
		} else
			r = member_diag(pl, u, pp, &pre);
		if (r == 0)
			r = cos_reject(u->pg, p, sm->assigned[i], &cos);
		if (r == 0) {
			rejected = rejected || cos != NULL;
			r = fail_pod(pl, pp, join_message(sm->fitmsg[i], pre, cos), inel != NULL);
		}
		kc_free(pre);
		kc_free(cos);
	}
	for (size_t i = 0; r == 0 && rejected && i < u->nm; i++)
		if (sm->first[i])
			r = fail_pod(pl, u->m[i], kc_strdup(M_OPTIMISTIC), inel != NULL);
	return r;
}

static int
do_gang(struct plan *pl, const struct unit *u)
{
	const struct spg *g = u->pg;
	struct sim sm;
	const char *inel = NULL;
	size_t need;
	bool ok = false, done = false;
	int r;

	if (g == NULL) {
		for (size_t i = 0; i < u->nm; i++)
			if ((r = do_single(pl, u->m[i], MODE_MISSING_PG, u->pgkey)) < 0)
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
			if (sm.where[i] != NULL && (r = out_bind(pl, u->m[i]->p, sm.where[i])) < 0)
				goto out;
		/* Past the quorum the rest go one by one (Permit lets them through). */
		for (size_t i = 0; i < u->nm; i++)
			if (sm.where[i] == NULL &&
			    (r = do_single(pl, u->m[i], MODE_DEFAULT, u->pgkey)) < 0)
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

	if ((r = smap_values(&pl->s->nodes, (void ***)&nv, &n)) < 0)
		return r;
	if (n == 0)
		return 0;
	sort(nv, n, sizeof(*nv), node_sort_cmp);
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

		if (smap_get(&pl->s->nss, ns) != NULL || smap_get(&pl->nslabels, ns) != NULL)
			continue;
		if ((o = json_object_new_object()) == NULL)
			return -ENOMEM;
		if ((r = kc_json_set_str(o, "kubernetes.io/metadata.name", ns)) < 0 ||
		    (r = smap_put(&pl->nslabels, ns, o)) < 0) {
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

	if ((r = smap_values(&s->pods, (void ***)&pv, &n)) < 0)
		return r;
	if (n == 0)
		return 0;
	sort(pv, n, sizeof(*pv), pod_sort_cmp);
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
		    (q->home = node_find(pl, p->node)) != NULL)
			q->home->cp++;
		q->pending = p->node == NULL && p->phase == PH_PENDING && !p->terminating &&
		    !p->gated && served(s, p);
		if (q->pending && (q->nom = node_find(pl, p->nominated)) != NULL)
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
			if ((r = pn_add(q->home, q)) < 0)
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
		    (k = (uintptr_t)smap_get(&gm, p->pgkey)) != 0) {
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
				u->pg = smap_get(&s->pgs, p->pgkey);
				if ((r = smap_put(&gm, p->pgkey, (void *)(uintptr_t)nu)) < 0)
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
		    (k = (uintptr_t)smap_get(&gm, q->p->pgkey)) != 0) {
			pl->units[k - 1].total++;
			if (q->node != NULL)
				pl->units[k - 1].bound++;
		}
	}
	for (size_t i = 0; i < nu; i++)
		sort(pl->units[i].m, pl->units[i].nm, sizeof(*pl->units[i].m), member_cmp);
	pl->nunits = nu;
	sort(pl->units, nu, sizeof(*pl->units), unit_cmp);
out:
	kc_free(uidx);
	smap_clear(&gm);
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
	smap_each(&pl->nslabels, put_json_cb, NULL);
	smap_clear(&pl->nslabels);
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
				    out_unsched(&pl, u->m[k]->p, "SchedulerError",
				    kc_strdup(u->m[k]->p->broken)) :
				    fail_pod(&pl, u->m[k], kc_strdup(M_NO_NODES), false);
		} else if (u->gang)
			r = do_gang(&pl, u);
		else
			r = do_single(&pl, u->m[0], u->cos ? MODE_COS : MODE_DEFAULT, NULL);
	}
	if (r == 0) {
		*ret = pl.out;
		pl.out = NULL;
	}
out:
	plan_clear(&pl);
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
	if ((r = pod_requests(s, pod, &req, &n, st)) < 0)
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
			strv_free(refs, m->nowners);
			return -ENOMEM;
		}
	sort(refs, m->nowners, sizeof(*refs), strp_cmp);
	for (size_t i = 0; i < m->nowners; i++)
		sb_printf(&b, "%s%s", i != 0 ? "," : "", refs[i]);
	strv_free(refs, m->nowners);
	if ((r = sb_take(&b, &s)) < 0)
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
	bool now_model = api == NULL || !has_prefix(api, SCHED_PG_GROUP_OLD "/");
	int r;

	if (meta == NULL)
		return kc_status_set(st, KC_EINVALID, "PodGroup has no metadata");
	if (n != 0)
		sort(m, n, sizeof(*m), mstat_cmp);
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
		m[i].phase = phase_of(jstr(jobj(pods[i], "status"), "phase"));
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
	if ((key = pg_key(api != NULL && has_prefix(api, SCHED_PG_GROUP_OLD "/") ?
	    SCHED_PG_GROUP_OLD : SCHED_PG_GROUP, ns, name)) == NULL)
		return -ENOMEM;
	if ((r = smap_values(&s->pods, (void ***)&pv, &n)) < 0)
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
		char *key;
		int r;

		if (ns == NULL || name == NULL)
			continue;
		if ((key = pg_key(api != NULL && has_prefix(api, SCHED_PG_GROUP_OLD "/") ?
		    SCHED_PG_GROUP_OLD : SCHED_PG_GROUP, ns, name)) == NULL)
			return -ENOMEM;
		r = smap_put(idx, key, (void *)(uintptr_t)(i + 1));
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
	struct smap idx = { NULL, 0, 0 };
	struct smap_ent *e;
	int r;

	for (size_t i = 0; i < npg; i++)
		ret_bound[i] = 0;
	if (npg == 0)
		return 0;
	if ((r = pg_index(pgs, npg, &idx)) < 0)
		goto out;
	for (size_t b = 0; b < s->pods.nb; b++)
		for (e = s->pods.b[b]; e != NULL; e = e->next) {
			const struct spod *p = e->val;
			uintptr_t k;

			if (p->pgkey == NULL || p->node == NULL ||
			    (k = (uintptr_t)smap_get(&idx, p->pgkey)) == 0)
				continue;
			ret_bound[k - 1]++;
		}
out:
	smap_clear(&idx);
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
	struct smap idx = { NULL, 0, 0 };
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
	if ((r = smap_values(&s->pods, (void ***)&pv, &n)) < 0)
		goto out;
	r = -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uintptr_t k = pv[i]->pgkey != NULL ?
		    (uintptr_t)smap_get(&idx, pv[i]->pgkey) : 0;

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
		uintptr_t k = p->pgkey != NULL ? (uintptr_t)smap_get(&idx, p->pgkey) : 0;
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
	smap_clear(&idx);
	kc_free(pv);
	kc_free(m);
	kc_free(cnt);
	kc_free(pos);
	return r;
}

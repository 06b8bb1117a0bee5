/*
 * sched_int.h: what the scheduler's files share, and no other file may
 * use: the cache's types (struct sched and the parsed nodes, pods,
 * PodGroups and namespaces), a plan's scratch state (struct plan, its
 * nodes, pods and units, struct eval for one pod), the reason strings,
 * and the helpers each file lends the others. sched.h is the public
 * header; these names carry no prefix because they never leave the
 * scheduler.
 *
 *	sched.c			the cache: nodes, pods, PodGroups, namespaces
 *	sched_res.c		resources: quantities, request vectors
 *	sched_plan.c		a plan: scratch state, queue, output, messages
 *	sched_fit.c		one pod: filters, score, preemption
 *	sched_gang.c		a gang: Coscheduling placement and preemption
 *	sched_pgstatus.c	PodGroup status
 */
#ifndef DC_SCHED_INT_H
#define DC_SCHED_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/hash.h>
#include <kc/selector.h>

#include "sched.h"

/* Resource slots 0..2; every other resource name gets the next slot. */
#define RES_CPU		0
#define RES_MEM		1
#define RES_EPH		2
#define RES_FIXED	3

/* Filter verdicts, as upstream's status codes. */
#define F_OK		0
#define F_UNSCHED	1	/* Unschedulable: preemption might help */
#define F_UNRESOLV	2	/* UnschedulableAndUnresolvable */

/* Upstream's reason strings. */
#define R_UNSCHEDULABLE	"node(s) were unschedulable"
#define R_NODE_AFFINITY	"node(s) didn't match Pod's node affinity/selector"
#define R_PREFILTER_NA	"node(s) didn't satisfy plugin(s) [NodeAffinity]"
#define R_TOO_MANY_PODS	"Too many pods"
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


#define TAINT_UNSCHED	"node.kubernetes.io/unschedulable"

enum phase { PH_PENDING, PH_RUNNING, PH_SUCCEEDED, PH_FAILED, PH_UNKNOWN };

struct smap_ent {
	struct kc_hmap_node	 h;		/* first: the node is the entry */
	void			*val;
	char			 key[];
};

struct smap {
	struct kc_hmap	m;
};

struct sb {
	char	*p;
	size_t	 len, cap;
	int	 err;
};

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

struct tpmap {
	struct tpent	*e;
	size_t		 cap, used, nonzero;
};

struct hist {
	const char	**r;
	int64_t		 *c;
	size_t		  n, cap;
};

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

struct cand {
	struct pnode	*pn;
	struct ppod	**v;
	size_t		  nv;
	int32_t		  top;		/* highest victim priority */
	int64_t		  sum;		/* sum of priority + 2^31 */
	time_t		  start;	/* earliest start among the top-priority ones */
};

enum {
	MODE_DEFAULT,		/* the default profile, or a gang member past quorum */
	MODE_COS,		/* Coscheduling profile, no PodGroup label */
	MODE_MISSING_PG,	/* Coscheduling, the PodGroup does not exist */
};

/* json-c's iteration and string getters take non-const objects they only read. */
static inline struct json_object *
mut(const struct json_object *o)
{
	return (struct json_object *)(uintptr_t)o;
}

static inline const char *
jstr(const struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o == NULL || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static inline struct json_object *
jget(const struct json_object *o, const char *key)
{
	struct json_object *v;

	if (o == NULL || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

static inline struct json_object *
jarr(const struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);

	return v != NULL && json_object_is_type(v, json_type_array) ? v : NULL;
}

static inline struct json_object *
jobj(const struct json_object *o, const char *key)
{
	struct json_object *v = jget(o, key);

	return v != NULL && json_object_is_type(v, json_type_object) ? v : NULL;
}

static inline size_t
jlen(const struct json_object *a)
{
	return a != NULL ? json_object_array_length(a) : 0;
}

static inline struct json_object *
jidx(const struct json_object *a, size_t i)
{
	return json_object_array_get_idx(a, i);
}

/* Saturating addition of requests and capacities. */
static inline int64_t
sat_add(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	return a + b;
}

/* sched.c */
void sched_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
void sched_sort_r(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *),
    void *arg);
void *sched_smap_get(const struct smap *m, const char *key);
int sched_smap_put(struct smap *m, const char *key, void *val);
void sched_smap_each(const struct smap *m, void (*fn)(void *, void *), void *arg);
void sched_smap_clear(struct smap *m);
int sched_smap_values(const struct smap *m, void ***ret, size_t *ret_n);
void sched_sb_printf(struct sb *b, const char *fmt, ...) _printf_(2, 3);
int sched_sb_take(struct sb *b, char **ret);
char **sched_strv_free(char **v, size_t n);
const char *sched_label(const struct json_object *labels, const char *key);
enum phase sched_phase_of(const char *s);
char *sched_pg_key(const char *group, const char *ns, const char *name);

/* sched_res.c */
bool sched_has_prefix(const char *s, const char *prefix);
int sched_res_add_name(struct sched *s, const char *name, const char *reason);
int sched_rv_from_dense(const int64_t *dense, size_t n, struct rv **ret, size_t *ret_n);
int64_t sched_rv_get(const struct rv *v, size_t n, uint32_t idx);
int sched_rl_read(struct sched *s, const struct json_object *rl, const struct json_object *skip,
    const char *path, int64_t *dense, int64_t *pods, struct kc_status *st);
int sched_pod_requests_rv(struct sched *s, const struct json_object *pod, struct rv **ret,
    size_t *ret_n, struct kc_status *st);

/* sched_plan.c */
int sched_out_bind(struct plan *pl, const struct spod *p, const struct pnode *pn);
int sched_out_nom(struct plan *pl, const struct spod *p, const struct pnode *pn);
int sched_out_victim(struct plan *pl, const struct spod *v, const struct pnode *pn,
    const struct spod *by);
int sched_out_unsched(struct plan *pl, const struct spod *p, const char *reason, char *msg);
int sched_fail_pod(struct plan *pl, struct ppod *pp, char *msg, bool keep);
int sched_pn_add(struct pnode *pn, struct ppod *q);
void sched_pn_del(struct ppod *q);
struct pnode *sched_node_find(const struct plan *pl, const char *name);
bool sched_same_gang(const char *gang, const struct spod *q);
int64_t sched_tp_get(const struct tpmap *m, const char *k, const char *v);
int sched_tp_add(struct tpmap *m, const char *k, const char *v, int64_t d);
void sched_tp_reset(struct tpmap *m);
int sched_hist_add(struct hist *h, const char *r, int64_t c);
void sched_hist_free(struct hist *h);
int sched_strp_cmp(const void *a, const void *b);
void sched_fit_format(struct sb *b, size_t nnodes, const struct hist *h, const char *prefilter);
char *sched_fit_message(size_t nnodes, const struct hist *h, const char *prefilter);

/* sched_fit.c */
bool sched_better(const struct eval *ev, const struct pnode *a, const struct pnode *b);
bool sched_same_domain(const struct spod *p, const struct pnode *a, const struct pnode *b);
void sched_eval_free(struct eval *ev);
int sched_eval_init(struct eval *ev, struct plan *pl, struct ppod *pp, const char *gang);
int sched_eval_all(const struct eval *ev, struct hist *h, uint8_t *codes, struct pnode **feas,
    size_t *ret_nfeas, struct pnode **ret_best);
int sched_place(struct ppod *pp, struct pnode *pn);
void sched_unplace(struct ppod *pp);
int sched_restore(struct eval *ev, struct ppod *q, struct pnode *pn);
int sched_evict(struct eval *ev, struct ppod *q);
int sched_preempt_one(struct eval *ev, const uint8_t *codes, bool dry, struct hist *diag,
    struct cand *best);
const char *sched_ineligible(const struct plan *pl, const struct spod *p, const uint8_t *codes);
int sched_clear_lower_noms(struct plan *pl, struct pnode *pn, int32_t prio, const char *gang);
char *sched_preempt_message(size_t nnodes, const struct hist *diag, const char *inel);
char *sched_join_message(const char *fit, const char *a, const char *b);
int sched_place_one(struct plan *pl, struct ppod *pp, int mode, const char *gang);

/* sched_gang.c */
int sched_place_gang(struct plan *pl, const struct unit *u);

#endif

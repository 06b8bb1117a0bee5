/*
 * quota.c: a project's quota as the Run admission counts it (quota.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <kc/alloc.h>
#include <kc/hash.h>
#include <kc/json.h>
#include <kc/quantity.h>
#include <kc/str.h>

#include "quota.h"

/* ---- demand and fit ------------------------------------------------------- */

static bool
has_prefix(const char *s, const char *prefix, const char **rest)
{
	size_t n = strlen(prefix);

	if (strncmp(s, prefix, n) != 0)
		return false;
	*rest = s + n;
	return true;
}

/* The quantity of 'list'[key], or zero. */
static struct kc_quantity
qty_of(const struct json_object *list, const char *key)
{
	struct kc_quantity q = kc_quantity_from_int(0);
	const char *s = kc_json_str(list, key);

	if (s != NULL && kc_quantity_parse_sat(s, &q, NULL) < 0)
		q = kc_quantity_from_int(0);
	return q;
}

static int
put_qty(struct json_object *list, const char *key, const struct kc_quantity *q)
{
	char buf[KC_QUANTITY_STR_MAX];

	kc_quantity_format(q, buf, sizeof(buf));
	return kc_json_set_str(list, key, buf);
}

int
quota_demand(const struct ty_spec *s, struct json_object *hard, const struct ty_project *p,
    struct json_object **ret)
{
	struct json_object *d;
	int r = 0;

	if ((d = json_object_new_object()) == NULL)
		return -ENOMEM;
	json_object_object_foreach(hard, key, val) {
		struct kc_quantity q = kc_quantity_from_int(0);
		const struct json_object *from = NULL;
		const char *res = key;

		(void)val;
		if (strcmp(key, "pods") == 0 || strcmp(key, "count/pods") == 0)
			q = kc_quantity_from_int(s->nodes);
		else if (strcmp(key, "services") == 0 || strcmp(key, "count/services") == 0)
			q = kc_quantity_from_int(1);
		else if (has_prefix(key, "limits.", &res))
			from = s->limits;
		else if (has_prefix(key, "requests.", &res) || strncmp(key, "count/", 6) != 0)
			from = s->requests;	/* a bare name is a request */
		if (from != NULL) {
			const char *def;

			q = qty_of(from, res);
			if (from == s->requests && kc_json_get(from, res) == NULL && p != NULL &&
			    (def = project_default_request(p, res)) != NULL &&
			    kc_quantity_parse_sat(def, &q, NULL) < 0)
				q = kc_quantity_from_int(0);
			if ((r = kc_quantity_mul(&q, s->nodes)) < 0)
				break;
		}
		if (kc_quantity_sign(&q) != 0 && (r = put_qty(d, key, &q)) < 0)
			break;
	}
	if (r < 0) {
		json_object_put(d);
		return r;
	}
	*ret = d;
	return 0;
}

int
quota_add(struct json_object *sum, struct json_object *add)
{
	int r;

	if (add == NULL || !json_object_is_type(add, json_type_object))
		return 0;
	json_object_object_foreach(add, key, val) {
		struct kc_quantity q = qty_of(sum, key), y;

		if (!json_object_is_type(val, json_type_string) ||
		    kc_quantity_parse_sat(json_object_get_string(val), &y, NULL) < 0)
			return -EINVAL;
		if ((r = kc_quantity_add(&q, &y)) < 0 || (r = put_qty(sum, key, &q)) < 0)
			return r;
	}
	return 0;
}

static void
fmt_qty(const struct kc_quantity *q, char *buf)
{
	kc_quantity_format(q, buf, KC_QUANTITY_STR_MAX);
}

bool
quota_fits(const struct json_object *hard, const struct json_object *used,
    struct json_object *demand, char *why, size_t size)
{
	why[0] = '\0';
	json_object_object_foreach(demand, key, val) {
		struct kc_quantity want = qty_of(demand, key), limit, held, total;
		char a[KC_QUANTITY_STR_MAX], b[KC_QUANTITY_STR_MAX], c[KC_QUANTITY_STR_MAX];

		(void)val;
		if (kc_json_get(hard, key) == NULL)
			continue;
		limit = qty_of(hard, key);
		held = qty_of(used, key);
		total = held;
		if (kc_quantity_add(&total, &want) < 0 || kc_quantity_cmp(&total, &limit) > 0) {
			struct kc_quantity free = limit;
			struct kc_quantity neg = held;

			fmt_qty(&want, a);
			fmt_qty(&limit, c);
			if (used == NULL) {
				(void)snprintf(why, size, "needs %s %s, more than the quota of %s",
				    a, key, c);
				return false;
			}
			if (kc_quantity_mul(&neg, -1) < 0 || kc_quantity_add(&free, &neg) < 0 ||
			    kc_quantity_sign(&free) < 0)
				free = kc_quantity_from_int(0);
			fmt_qty(&free, b);
			(void)snprintf(why, size, "needs %s %s; %s of %s are free", a, key, b, c);
			return false;
		}
	}
	return true;
}

void
quota_text(struct json_object *list, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	if (list == NULL || !json_object_is_type(list, json_type_object))
		return;
	json_object_object_foreach(list, key, val) {
		int n;

		if (!json_object_is_type(val, json_type_string) || len >= size)
			continue;
		n = snprintf(buf + len, size - len, "%s%s %s", len > 0 ? ", " : "",
		    json_object_get_string(val), key);
		if (n < 0)
			break;
		len += (size_t)n;
	}
	if (len == 0)
		(void)snprintf(buf, size, "nothing");
}

/* ---- what a Run says -------------------------------------------------- */

static const struct json_object *
quota_condition(const struct json_object *run)
{
	struct json_object *conds = kc_json_get(run, "status", "conditions");
	size_t n = conds != NULL && json_object_is_type(conds, json_type_array) ?
	    json_object_array_length(conds) : 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *cd = json_object_array_get_idx(conds, i);
		const char *t = kc_json_str(cd, "type");

		if (t != NULL && strcmp(t, TY_COND_QUOTA) == 0)
			return cd;
	}
	return NULL;
}

static bool
eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

void
quota_run_read(const struct json_object *run, const char *key, const char *ns_project,
    struct quota_run *ret)
{
	const struct json_object *q = kc_json_get(run, "status", "quota");
	const struct json_object *cd = quota_condition(run);
	const char *p = kc_json_str(q, "project"), *ts, *user;
	const char *reason = kc_json_str(cd, "reason");
	struct json_object *reserved = kc_json_get(q, "reserved");
	time_t t = 0;

	user = kc_json_str(run, "metadata", "annotations", "trainyard.dev/submitted-by");
	ts = kc_json_str(run, "metadata", "creationTimestamp");
	if (ts == NULL || kc_time_parse(ts, &t) < 0)
		t = 0;
	*ret = (struct quota_run){
		.key = key,
		.uid = kc_json_str(run, "metadata", "uid") != NULL ?
		    kc_json_str(run, "metadata", "uid") : "",
		.project = p != NULL ? p : ns_project != NULL ? ns_project : "",
		.user = user != NULL ? user : "",
		.created = (int64_t)t,
		.session = kc_json_int(run, 0, "status", "session"),
		.gpus = kc_json_int(run, 0, "status", "gpus"),
	};
	if (reserved != NULL && json_object_is_type(reserved, json_type_object)) {
		ret->state = QUOTA_RESERVED;
		ret->reserved = reserved;
	} else if (eq(kc_json_str(cd, "status"), "False") && (eq(reason, TY_QUOTA_EXCEEDED) ||
	    eq(reason, TY_QUOTA_SUSPENDED)))
		ret->state = QUOTA_WAITING;
	else if (eq(kc_json_str(cd, "status"), "False") && eq(reason, TY_QUOTA_MEMBER))
		ret->state = QUOTA_WAITING_MEMBER;
	else if (kc_json_get(run, "status", "observedGeneration") == NULL &&
	    kc_json_get(run, "metadata", "deletionTimestamp") == NULL &&
	    !kc_json_bool(run, false, "spec", "suspend"))
		ret->state = QUOTA_WAITING;	/* new: about to be looked at */
}

/* ---- the ledger ------------------------------------------------------- */

struct entry {
	struct kc_hmap_node	 node;		/* key: "ns/name" */
	char			 uid[128];
	char			 project[64];
	char			 user[256];
	int64_t			 created;
	int64_t			 session;
	int64_t			 gpus;
	enum quota_state	 state;
	struct json_object	*reserved;	/* while it holds */
	int64_t			 inflight;	/* admitted here, not seen yet: session */
};

struct quota_ledger {
	pthread_mutex_t		 lock;
	struct kc_hmap		 runs;
	size_t			 ndirty;
	char			 dirty[QUOTA_DIRTY_MAX][64];
};

/* Remembers that 'project' changed (under the lock). */
static void
mark_dirty(struct quota_ledger *l, const char *project)
{
	if (project[0] == '\0')
		return;
	for (size_t i = 0; i < l->ndirty; i++)
		if (strcmp(l->dirty[i], project) == 0)
			return;
	if (l->ndirty == QUOTA_DIRTY_MAX)
		return;		/* not drained: the next change writes it */
	kc_strlcpy(l->dirty[l->ndirty++], project, sizeof(l->dirty[0]));
}

void
quota_take_dirty(struct quota_ledger *l, void (*fn)(void *arg, const char *project),
    void *arg)
{
	char dirty[QUOTA_DIRTY_MAX][64];
	size_t n;

	pthread_mutex_lock(&l->lock);
	n = l->ndirty;
	memcpy(dirty, l->dirty, sizeof(dirty[0]) * n);
	l->ndirty = 0;
	pthread_mutex_unlock(&l->lock);
	for (size_t i = 0; i < n; i++)
		fn(arg, dirty[i]);
}

int
quota_ledger_new(struct quota_ledger **ret)
{
	struct quota_ledger *l = kc_calloc(1, sizeof(*l));

	if (l == NULL)
		return -ENOMEM;
	if (pthread_mutex_init(&l->lock, NULL) != 0) {
		kc_free(l);
		return -ENOMEM;
	}
	*ret = l;
	return 0;
}

static void
entry_free(struct entry *e)
{
	if (e == NULL)
		return;
	json_object_put(e->reserved);
	kc_free(e->node.key);
	kc_free(e);
}

void
quota_ledger_free(struct quota_ledger *l)
{
	struct kc_hmap_node *n, *tmp;
	size_t i;

	if (l == NULL)
		return;
	KC_HMAP_FOREACH_SAFE(n, tmp, i, &l->runs) {
		kc_hmap_del(&l->runs, n);
		entry_free((struct entry *)n);
	}
	kc_hmap_free(&l->runs);
	pthread_mutex_destroy(&l->lock);
	kc_free(l);
}

static struct entry *
entry_get(struct quota_ledger *l, const char *key)
{
	return (struct entry *)kc_hmap_get(&l->runs, key);
}

/* A new, empty entry for 'key' in the map: 0 or -ENOMEM. */
static int
entry_add(struct quota_ledger *l, const char *key, struct entry **ret)
{
	struct entry *e;
	int r;

	if ((e = kc_calloc(1, sizeof(*e))) == NULL ||
	    (e->node.key = kc_strdup(key)) == NULL) {
		kc_free(e);
		return -ENOMEM;
	}
	if ((r = kc_hmap_put(&l->runs, &e->node)) < 0) {
		entry_free(e);
		return r;
	}
	*ret = e;
	return 0;
}

/* Whether what the project's sums and queue see of 'e' differs from 'v'. */
static bool
visible_change(const struct entry *e, const struct quota_run *v)
{
	return e->state != v->state || strcmp(e->project, v->project) != 0 ||
	    e->gpus != v->gpus || !kc_json_equal(e->reserved, v->reserved) ||
	    e->created != v->created;
}

int
quota_observe(struct quota_ledger *l, const struct quota_run *v, char project[64],
    char old_project[64])
{
	struct entry *e;
	bool fresh = false, changed;
	int r = 0;

	project[0] = old_project[0] = '\0';
	pthread_mutex_lock(&l->lock);
	if ((e = entry_get(l, v->key)) == NULL) {
		if (v->project[0] == '\0' && v->state == QUOTA_NONE)
			goto out;	/* no project's business */
		if ((r = entry_add(l, v->key, &e)) < 0)
			goto out;
		fresh = true;
	}
	/* The cache is behind a reservation made here: keep it until it shows. */
	if (e->inflight > 0 && strcmp(e->uid, v->uid) == 0 && v->session < e->inflight) {
		kc_strlcpy(e->user, v->user, sizeof(e->user));
		goto out;
	}
	/* A reservation made here shows: the project's status may say so now. */
	changed = fresh || visible_change(e, v) || e->inflight > 0;
	if (changed && e->project[0] != '\0' && strcmp(e->project, v->project) != 0)
		kc_strlcpy(old_project, e->project, 64);
	kc_strlcpy(e->uid, v->uid, sizeof(e->uid));
	kc_strlcpy(e->project, v->project, sizeof(e->project));
	kc_strlcpy(e->user, v->user, sizeof(e->user));
	e->created = v->created;
	e->session = v->session;
	e->gpus = v->gpus;
	e->state = v->state;
	e->inflight = 0;
	if (!kc_json_equal(e->reserved, v->reserved)) {
		json_object_put(e->reserved);
		e->reserved = v->reserved != NULL ?
		    kc_json_copy(v->reserved) : NULL;
		if (v->reserved != NULL && e->reserved == NULL)
			r = -ENOMEM;
	}
	if (r == 0 && changed) {
		kc_strlcpy(project, e->project, 64);
		mark_dirty(l, project);
		mark_dirty(l, old_project);
		r = project[0] != '\0' || old_project[0] != '\0';
	}
out:
	pthread_mutex_unlock(&l->lock);
	return r;
}

bool
quota_known(struct quota_ledger *l, const char *key)
{
	bool found;

	pthread_mutex_lock(&l->lock);
	found = entry_get(l, key) != NULL;
	pthread_mutex_unlock(&l->lock);
	return found;
}

int
quota_forget(struct quota_ledger *l, const char *key, char project[64])
{
	struct entry *e;
	int r = 0;

	project[0] = '\0';
	pthread_mutex_lock(&l->lock);
	if ((e = entry_get(l, key)) != NULL) {
		kc_strlcpy(project, e->project, 64);
		mark_dirty(l, project);
		r = project[0] != '\0';
		kc_hmap_del(&l->runs, &e->node);
		entry_free(e);
	}
	pthread_mutex_unlock(&l->lock);
	return r;
}

/* Whether a Run created at 'ca' with key 'ka' came before one at 'cb', 'kb'. */
static bool
earlier(int64_t ca, const char *ka, int64_t cb, const char *kb)
{
	if (ca != cb)
		return ca < cb;
	return strcmp(ka, kb) < 0;
}

struct tally {
	struct json_object	*reserved;
	int64_t			 user_gpus;
	size_t			 active, ahead;
	const struct entry	*first;		/* the earliest Run ahead */
};

static int
tally(struct quota_ledger *l, const struct quota_ask *ask, struct tally *t)
{
	struct kc_hmap_node *n, *tmp;
	size_t i;
	int r;

	if ((t->reserved = json_object_new_object()) == NULL)
		return -ENOMEM;
	KC_HMAP_FOREACH_SAFE(n, tmp, i, &l->runs) {
		const struct entry *e = (const struct entry *)n;

		if (strcmp(e->project, ask->project) != 0 || strcmp(n->key, ask->key) == 0)
			continue;
		if (e->state == QUOTA_RESERVED) {
			if ((r = quota_add(t->reserved, e->reserved)) < 0 && r != -EINVAL)
				return r;
			t->active++;
			if (ask->user[0] != '\0' && strcmp(e->user, ask->user) == 0)
				t->user_gpus += e->gpus;
		} else if (e->state == QUOTA_WAITING &&
		    earlier(e->created, n->key, ask->created, ask->key)) {
			t->ahead++;
			if (t->first == NULL || earlier(e->created, n->key, t->first->created,
			    t->first->node.key))
				t->first = e;
		}
	}
	return 0;
}

static void
set_verdict(struct quota_verdict *v, const char *reason, const char *fmt, ...)
    _printf_(3, 4);

static void
set_verdict(struct quota_verdict *v, const char *reason, const char *fmt, ...)
{
	va_list ap;

	v->admit = false;
	kc_strlcpy(v->reason, reason, sizeof(v->reason));
	va_start(ap, fmt);
	(void)vsnprintf(v->message, sizeof(v->message), fmt, ap);
	va_end(ap);
}

int
quota_admit(struct quota_ledger *l, const struct quota_ask *ask, struct quota_verdict *ret)
{
	struct tally t = { 0 };
	struct entry *e;
	char why[256], held[256];
	int r;

	*ret = (struct quota_verdict){ .admit = true };
	pthread_mutex_lock(&l->lock);
	if ((r = tally(l, ask, &t)) < 0)
		goto out;
	if (ask->user_max_gpus >= 0 && t.user_gpus + ask->gpus > ask->user_max_gpus) {
		set_verdict(ret, TY_QUOTA_MEMBER, "waiting for %s's GPUs in project %s: this "
		    "Run needs %" PRId64 ", their Runs hold %" PRId64 " of %" PRId64,
		    ask->user, ask->project, ask->gpus, t.user_gpus, ask->user_max_gpus);
		goto out;
	}
	if (t.ahead > 0) {
		set_verdict(ret, TY_QUOTA_EXCEEDED, "waiting for quota in project %s behind "
		    "%zu earlier Run%s (first: %s)", ask->project, t.ahead,
		    t.ahead == 1 ? "" : "s", t.first->node.key);
		goto out;
	}
	if (!quota_fits(ask->hard, t.reserved, ask->demand, why, sizeof(why))) {
		quota_text(t.reserved, held, sizeof(held));
		set_verdict(ret, TY_QUOTA_EXCEEDED, "waiting for quota in project %s: %s "
		    "(%zu Run%s hold %s)", ask->project, why, t.active,
		    t.active == 1 ? "" : "s", held);
		goto out;
	}
	/* Admitted: held from now on, whatever the cache says until it shows it. */
	if ((e = entry_get(l, ask->key)) == NULL && (r = entry_add(l, ask->key, &e)) < 0)
		goto out;
	json_object_put(e->reserved);
	if ((e->reserved = kc_json_copy(ask->demand)) == NULL) {
		e->state = QUOTA_NONE;
		r = -ENOMEM;
		goto out;
	}
	kc_strlcpy(e->uid, ask->uid, sizeof(e->uid));
	kc_strlcpy(e->project, ask->project, sizeof(e->project));
	kc_strlcpy(e->user, ask->user, sizeof(e->user));
	e->created = ask->created;
	e->gpus = ask->gpus;
	e->state = QUOTA_RESERVED;
	e->inflight = ask->session;
out:
	pthread_mutex_unlock(&l->lock);
	json_object_put(t.reserved);
	return r;
}

void
quota_cancel(struct quota_ledger *l, const char *key, int64_t session)
{
	struct entry *e;

	pthread_mutex_lock(&l->lock);
	if ((e = entry_get(l, key)) != NULL && e->inflight == session) {
		e->inflight = 0;
		e->state = QUOTA_WAITING;
		kc_json_putp(&e->reserved);
	}
	pthread_mutex_unlock(&l->lock);
}

int
quota_usage(struct quota_ledger *l, const char *project, struct quota_usage *ret)
{
	struct kc_hmap_node *n, *tmp;
	size_t i;
	int r = 0;

	*ret = (struct quota_usage){ 0 };
	if ((ret->reserved = json_object_new_object()) == NULL)
		return -ENOMEM;
	pthread_mutex_lock(&l->lock);
	KC_HMAP_FOREACH_SAFE(n, tmp, i, &l->runs) {
		const struct entry *e = (const struct entry *)n;

		if (strcmp(e->project, project) != 0)
			continue;
		if (e->state == QUOTA_RESERVED) {
			if ((r = quota_add(ret->reserved, e->reserved)) < 0 && r != -EINVAL)
				break;
			r = 0;
			ret->active++;
			ret->gpus += e->gpus;
		} else if (e->state == QUOTA_WAITING || e->state == QUOTA_WAITING_MEMBER)
			ret->waiting++;
	}
	pthread_mutex_unlock(&l->lock);
	if (r < 0)
		kc_json_putp(&ret->reserved);
	return r;
}

void
quota_foreach(struct quota_ledger *l, const char *project, bool all,
    void (*fn)(void *arg, const char *key), void *arg)
{
	struct kc_hmap_node *n, *tmp;
	size_t i;

	pthread_mutex_lock(&l->lock);
	KC_HMAP_FOREACH_SAFE(n, tmp, i, &l->runs) {
		const struct entry *e = (const struct entry *)n;

		if (strcmp(e->project, project) == 0 && (all ||
		    e->state == QUOTA_WAITING || e->state == QUOTA_WAITING_MEMBER))
			fn(arg, n->key);
	}
	pthread_mutex_unlock(&l->lock);
}

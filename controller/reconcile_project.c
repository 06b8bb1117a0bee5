/*
 * reconcile_project.c: the Project reconciler (project_reconciler, a row
 * of manager.c's table), and what it shares with the ProjectMember
 * reconciler (reconcile_member.c): the objects a Project owns, the
 * member verdicts, finalizers, conditions and status writes.
 *
 * A Project's key is its name. Its reconcile, from the caches:
 *
 *	gather    a private copy of the Project, project_parse(); an invalid
 *	          spec changes nothing but the status (Ready False,
 *	          InvalidSpec, the problems);
 *	deletion  with the finalizer trainyard.dev/project: deletes every
 *	          object labelled with the project (member bindings, owners'
 *	          bindings, policies, quotas, the reader role and binding),
 *	          the namespaces only under deletionPolicy.namespaces Delete,
 *	          then removes the finalizer;
 *	execute   the finalizer; each namespace created, or adopted when it
 *	          has no project label (a namespace of another project is
 *	          left alone and named in NamespacesReady); in each, the
 *	          ResourceQuota, the NetworkPolicies and the owners'
 *	          RoleBinding made to match (project_ensure(): drift is a
 *	          hash of the owned fields that differs from the desired
 *	          object's); the reader ClusterRole and its binding (owners
 *	          and bound members); objects left in namespaces the project
 *	          no longer lists, and bindings of members that no longer
 *	          exist, deleted; the status.
 *
 * What a change maps to: a Project's own key; the project label of a
 * namespace or owned object; the project of a ProjectMember's namespace
 * (the reader binding and the member counts follow the members).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>
#include <kc/watch.h>

#include "controller.h"

#define PROJECT_RETRY_MS	10000	/* a refused write is tried again */
#define PROJECT_CLEANUP_MS	2000	/* deletes wait for the caches */

static const char *
msg_of(const struct kc_status *st, int r)
{
	return st->message[0] != '\0' ? st->message : kc_strerror(r);
}

/* ---- shared with reconcile_member.c ------------------------------------ */

int
project_cached(struct ctl *c, const char *name, struct json_object **obj,
    struct ty_project **p, struct ty_problems *probs)
{
	struct kc_item *it;
	struct json_object *o = NULL;
	int r;

	*obj = NULL;
	*p = NULL;
	if (c->caches[TY_CACHE_PROJECTS] == NULL ||
	    (it = kc_informer_get(c->caches[TY_CACHE_PROJECTS], NULL, name)) == NULL)
		return KC_ENOTFOUND;
	r = cache_obj_json(kc_item_data(it), &o);
	kc_item_unref(it);
	if (r < 0)
		return r;
	if ((r = project_parse(o, p, probs)) < 0 && r != KC_EINVALID) {
		json_object_put(o);
		return r;
	}
	*obj = o;
	return 0;
}

bool
project_of_namespace(struct ctl *c, const char *ns, char *buf, size_t size)
{
	struct kc_item *it;
	const char *project;
	bool found;

	if (c->caches[TY_CACHE_NAMESPACES] == NULL || ns == NULL ||
	    (it = kc_informer_get(c->caches[TY_CACHE_NAMESPACES], NULL, ns)) == NULL)
		return false;
	project = ty_owned_project(kc_item_data(it));
	found = project != NULL && project[0] != '\0' && kc_strlcpy(buf, project, size) < size;
	kc_item_unref(it);
	return found;
}

struct item_list {
	struct kc_item	**items;
	size_t		  n, cap;
};

static int
collect_item(void *arg, struct kc_item *it)
{
	struct item_list *l = arg;

	if (l->n == l->cap) {
		size_t cap = l->cap != 0 ? l->cap * 2 : 16;
		struct kc_item **a = kc_reallocarray(l->items, cap, sizeof(*a));

		if (a == NULL)
			return -ENOMEM;
		l->items = a;
		l->cap = cap;
	}
	l->items[l->n++] = kc_item_ref(it);
	return 0;
}

void
project_owned_release(struct kc_item **items, size_t n)
{
	for (size_t i = 0; i < n; i++)
		kc_item_unref(items[i]);
	kc_free(items);
}

int
project_owned(struct ctl *c, enum ty_cache_id id, const char *name, struct kc_item ***ret,
    size_t *ret_n)
{
	struct item_list l = { 0 };
	int r;

	*ret = NULL;
	*ret_n = 0;
	if (c->caches[id] == NULL)
		return 0;
	if ((r = kc_informer_by_index(c->caches[id], name, collect_item, &l)) < 0) {
		project_owned_release(l.items, l.n);
		return r;
	}
	*ret = l.items;
	*ret_n = l.n;
	return 0;
}

/* A member as ranked: its tree, its subject's identity, its place. */
struct ranked {
	struct json_object	*obj;
	const char		*name, *created;
	char			 skey[TY_SUBJECT_KEY_MAX];
	size_t			 rank, first;
};

static int
by_age(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	int d = strcmp(x->created, y->created);

	return d != 0 ? d : strcmp(x->name, y->name);
}

static int
by_subject(const void *a, const void *b)
{
	const struct ranked *x = *(const struct ranked *const *)a;
	const struct ranked *y = *(const struct ranked *const *)b;
	int d = strcmp(x->skey, y->skey);

	return d != 0 ? d : (x->rank > y->rank) - (x->rank < y->rank);
}

int
project_members(struct ctl *c, const struct ty_project *p, time_t now,
    struct ty_member_entry **ret, size_t *ret_n, size_t *ret_total)
{
	struct item_list l = { 0 };
	struct ranked *rk = NULL, **bys = NULL;
	struct ty_member_entry *out = NULL;
	size_t n = 0;
	int r = 0;

	*ret = NULL;
	*ret_n = *ret_total = 0;
	if (c->caches[TY_CACHE_MEMBERS] == NULL || p->nns == 0)
		return 0;
	if ((r = kc_informer_by_index(c->caches[TY_CACHE_MEMBERS], p->ns[0], collect_item,
	    &l)) < 0)
		goto out;
	*ret_total = l.n;
	if (l.n == 0)
		goto out;
	if ((rk = kc_calloc(l.n, sizeof(*rk))) == NULL ||
	    (bys = kc_calloc(l.n, sizeof(*bys))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < l.n; i++) {
		struct json_object *o = NULL, *subj;

		if ((r = cache_obj_json(kc_item_data(l.items[i]), &o)) < 0)
			goto out;
		if (kc_json_get(o, "metadata", "deletionTimestamp") != NULL) {
			json_object_put(o);
			continue;
		}
		subj = kc_json_get(o, "spec", "subject");
		rk[n].obj = o;
		rk[n].name = kc_json_str(o, "metadata", "name");
		rk[n].created = kc_json_str(o, "metadata", "creationTimestamp");
		if (rk[n].name == NULL)
			rk[n].name = "";
		if (rk[n].created == NULL)
			rk[n].created = "";
		(void)snprintf(rk[n].skey, sizeof(rk[n].skey), "%s:%s:%s",
		    kc_json_str(subj, "kind") != NULL ? kc_json_str(subj, "kind") : "",
		    kc_json_str(subj, "namespace") != NULL ? kc_json_str(subj, "namespace") : "",
		    kc_json_str(subj, "name") != NULL ? kc_json_str(subj, "name") : "");
		n++;
	}
	qsort(rk, n, sizeof(*rk), by_age);
	for (size_t i = 0; i < n; i++) {
		rk[i].rank = i;
		bys[i] = &rk[i];
	}
	/* The oldest of each subject wins: sorted by subject, then rank. */
	qsort(bys, n, sizeof(*bys), by_subject);
	for (size_t i = 0; i < n; i++)
		bys[i]->first = i > 0 && strcmp(bys[i]->skey, bys[i - 1]->skey) == 0 ?
		    bys[i - 1]->first : bys[i]->rank;
	if (n > 0 && (out = kc_calloc(n, sizeof(*out))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		kc_strlcpy(out[i].name, rk[i].name, sizeof(out[i].name));
		project_member_check(p, rk[i].obj, rk[i].rank, rk[i].first, now, &out[i].v);
	}
	*ret = out;
	*ret_n = n;
	out = NULL;
out:
	for (size_t i = 0; rk != NULL && i < l.n; i++)
		json_object_put(rk[i].obj);
	kc_free(rk);
	kc_free(bys);
	kc_free(out);
	project_owned_release(l.items, l.n);
	return r;
}

/* PUT 'want' (borrowed) over the object at resourceVersion 'rv'. */
static int
replace(struct ctl *c, struct kc_client *cl, const struct kc_log_ctx *log,
    const struct kc_resource *res, struct json_object *want, const char *ns,
    const char *name, const char *rv, struct kc_status *st)
{
	struct json_object *meta = kc_json_get(want, "metadata");
	int r;

	if ((r = kc_json_set_str(meta, "resourceVersion", rv)) < 0)
		return r;
	r = kc_client_update(cl, &(struct kc_update_opts){
		.res = res, .ns = ns, .name = name, .field_manager = TY_FIELD_MANAGER,
	}, want, NULL, st);
	kc_log_debug(log, "update %s %s%s%s: %s", res->kind, ns != NULL ? ns : "",
	    ns != NULL ? "/" : "", name, r < 0 ? kc_err_name(r) : "ok");
	if (r == 0)
		atomic_fetch_add(&c->n.objects_created, 1);
	return r < 0 ? r : 1;
}

int
project_ensure(struct ctl *c, struct kc_client *cl, const struct kc_log_ctx *log,
    enum ty_cache_id id, struct json_object *want, struct kc_status *st)
{
	_cleanup_(kc_json_putp) struct json_object *w = want, *live = NULL;
	const struct kc_resource *res = cache_kinds[id].res;
	const char *nsp = kc_json_str(w, "metadata", "namespace");
	char ns[KC_NAMESPACE_MAX + 1], name[KC_NAME_MAX + 1], rv[KC_RV_MAX];
	uint64_t h = cache_owned_hash(w);
	struct kc_item *it;
	int r;

	kc_strlcpy(ns, nsp != NULL ? nsp : "", sizeof(ns));
	kc_strlcpy(name, kc_json_str(w, "metadata", "name") != NULL ?
	    kc_json_str(w, "metadata", "name") : "", sizeof(name));
	if ((it = kc_informer_get(c->caches[id], ns, name)) != NULL) {
		const struct ty_owned_item *o = kc_item_data(it);
		bool same = o->hash == h, deleting = o->deleting;

		kc_strlcpy(rv, kc_item_rv(it), sizeof(rv));
		kc_item_unref(it);
		/* Being deleted: its delete event brings us back to create it. */
		if (same || deleting)
			return 0;
		return replace(c, cl, log, res, w, ns[0] != '\0' ? ns : NULL, name, rv, st);
	}
	r = kc_client_create(cl, &(struct kc_create_opts){
		.res = res, .ns = ns[0] != '\0' ? ns : NULL, .field_manager = TY_FIELD_MANAGER,
	}, w, NULL, st);
	kc_log_debug(log, "create %s %s%s%s: %s", res->kind, ns, ns[0] != '\0' ? "/" : "",
	    name, r < 0 ? kc_err_name(r) : "ok");
	if (r == 0) {
		atomic_fetch_add(&c->n.objects_created, 1);
		return 1;
	}
	if (r != KC_EEXISTS)
		return r;
	/* There without our labels (someone took them off), or the cache lags. */
	*st = (struct kc_status){ 0 };
	if ((r = kc_client_get(cl, &(struct kc_get_opts){
		.res = res, .ns = ns[0] != '\0' ? ns : NULL, .name = name,
	    }, &live, st)) < 0)
		return r == KC_ENOTFOUND ? KC_ECONFLICT : r;
	if (cache_owned_hash(live) == h)
		return 0;
	kc_strlcpy(rv, kc_json_str(live, "metadata", "resourceVersion") != NULL ?
	    kc_json_str(live, "metadata", "resourceVersion") : "", sizeof(rv));
	return replace(c, cl, log, res, w, ns[0] != '\0' ? ns : NULL, name, rv, st);
}

int
project_delete(struct ctl *c, struct kc_client *cl, const struct kc_log_ctx *log,
    enum ty_cache_id id, const char *ns, const char *name)
{
	const struct kc_resource *res = cache_kinds[id].res;
	struct kc_status st = { 0 };
	int r;

	r = kc_client_delete(cl, &(struct kc_delete_opts){
		.res = res, .ns = ns != NULL && ns[0] != '\0' ? ns : NULL, .name = name,
		.propagation = KC_PROPAGATION_BACKGROUND,
	}, NULL, &st);
	kc_log_debug(log, "delete %s %s%s%s: %s", res->kind, ns != NULL ? ns : "",
	    ns != NULL && ns[0] != '\0' ? "/" : "", name, r < 0 ? kc_err_name(r) : "ok");
	if (r == KC_ENOTFOUND)
		return 0;
	if (r < 0)
		return kc_log_error_r(log, r, "delete %s %s: %s", res->kind, name, msg_of(&st, r));
	atomic_fetch_add(&c->n.objects_deleted, 1);
	return 0;
}

bool
finalizer_has(const struct json_object *obj, const char *fin)
{
	struct json_object *list = kc_json_arr_of(kc_json_get(obj, "metadata"), "finalizers");

	for (size_t i = 0; list != NULL && i < json_object_array_length(list); i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(list, i));

		if (s != NULL && strcmp(s, fin) == 0)
			return true;
	}
	return false;
}

int
finalizer_set(struct kc_client *cl, const struct kc_resource *res,
    const struct json_object *obj, const char *fin, bool add, struct kc_status *st)
{
	_cleanup_(kc_json_putp) struct json_object *patch = json_object_new_object();
	struct json_object *list = kc_json_arr_of(kc_json_get(obj, "metadata"), "finalizers");
	struct json_object *meta, *out;
	const char *rv = kc_json_str(obj, "metadata", "resourceVersion");
	int r;

	if (patch == NULL || (meta = kc_json_ensure_obj(patch, "metadata")) == NULL)
		return -ENOMEM;
	if ((r = kc_json_put(meta, "finalizers", out = json_object_new_array())) < 0 ||
	    (rv != NULL && (r = kc_json_set_str(meta, "resourceVersion", rv)) < 0))
		return r;
	for (size_t i = 0; list != NULL && i < json_object_array_length(list); i++) {
		struct json_object *f = json_object_array_get_idx(list, i);
		const char *s = json_object_get_string(f);

		if (s != NULL && strcmp(s, fin) == 0)
			continue;
		if ((r = kc_json_append(out, json_object_get(f))) < 0)
			return r;
	}
	if (add && (r = kc_json_append(out, json_object_new_string(fin))) < 0)
		return r;
	return kc_client_patch(cl, &(struct kc_patch_opts){
		.res = res, .ns = kc_json_str(obj, "metadata", "namespace"),
		.name = kc_json_str(obj, "metadata", "name"), .type = KC_PATCH_MERGE,
		.field_manager = TY_FIELD_MANAGER,
	}, patch, NULL, st);
}

int
condition_add(struct json_object *conds, const struct json_object *old_status,
    const char *type, bool ok, const char *reason, const char *message, int64_t gen,
    time_t now)
{
	struct json_object *old = kc_json_arr_of(old_status, "conditions"), *cd;
	const char *status = ok ? "True" : "False", *since = NULL;
	char when[32];
	int r;

	for (size_t i = 0; old != NULL && i < json_object_array_length(old); i++) {
		struct json_object *o = json_object_array_get_idx(old, i);
		const char *t = kc_json_str(o, "type"), *s = kc_json_str(o, "status");

		if (t != NULL && strcmp(t, type) == 0 && s != NULL && strcmp(s, status) == 0)
			since = kc_json_str(o, "lastTransitionTime");
	}
	if (since == NULL) {
		if ((r = kc_time_format(now, when, sizeof(when))) < 0)
			return r;
		since = when;
	}
	if ((r = kc_json_append(conds, cd = json_object_new_object())) < 0)
		return r;
	if ((r = kc_json_set_str(cd, "type", type)) < 0 ||
	    (r = kc_json_set_str(cd, "status", status)) < 0 ||
	    (r = kc_json_set_int(cd, "observedGeneration", gen)) < 0 ||
	    (r = kc_json_set_str(cd, "lastTransitionTime", since)) < 0 ||
	    (r = kc_json_set_str(cd, "reason", reason)) < 0)
		return r;
	return kc_json_set_str(cd, "message", message);
}

int
status_put(struct ctl *c, struct kc_client *cl, const struct kc_resource *res,
    struct json_object *obj, struct json_object *status, const char *xkey,
    struct kc_status *st)
{
	_cleanup_(kc_json_putp) struct json_object *written = NULL;
	const char *rv;
	int r;

	if (kc_json_equal(kc_json_get(obj, "status"), status)) {
		json_object_put(status);
		return 0;
	}
	if ((r = kc_json_put(obj, "status", status)) < 0)
		return r;
	r = kc_client_update(cl, &(struct kc_update_opts){
		.res = res, .ns = kc_json_str(obj, "metadata", "namespace"),
		.name = kc_json_str(obj, "metadata", "name"), .subresource = "status",
		.field_manager = TY_FIELD_MANAGER,
	}, obj, &written, st);
	if (r == KC_ECONFLICT)
		atomic_fetch_add(&c->n.conflicts, 1);
	if (r < 0)
		return r;
	if ((rv = kc_json_str(written, "metadata", "resourceVersion")) != NULL)
		expect_status_written(c->expect, xkey, rv);
	atomic_fetch_add(&c->n.status_updates, 1);
	return 1;
}

/* ---- the Project reconciler --------------------------------------------- */

struct prc {
	struct ctl		*c;
	struct kc_client	*cl;
	struct kc_log_ctx	 log;
	const char		*name;
	char			 xkey[80];
	struct json_object	*obj;		/* a private copy */
	struct ty_project	*p;
	struct ty_problems	 probs;
	time_t			 now;
	bool			 ns_ready[TY_PROJECT_NS_MAX];
	char			 ns_msg[TY_PROJECT_NS_MAX][256];
	char			 ns_conflict[512];	/* NamespacesReady False */
	char			 refused[512];		/* a write refused */
	struct ty_member_entry	*members;
	size_t			 nmembers, total_members;
};

static void
prc_release(struct prc *rc)
{
	kc_free(rc->members);
	project_free(rc->p);
	json_object_put(rc->obj);
}

/* A write the server refused (RBAC, admission, validation): said in the status. */
static bool
refusal(int r)
{
	return r == KC_EFORBIDDEN || r == KC_EINVALID;
}

static void
note_refused(struct prc *rc, size_t i, const char *what, const struct kc_status *st, int r)
{
	if (i < TY_PROJECT_NS_MAX) {
		rc->ns_ready[i] = false;
		(void)snprintf(rc->ns_msg[i], sizeof(rc->ns_msg[i]), "%.80s: %.170s", what,
		    msg_of(st, r));
	}
	if (rc->refused[0] == '\0')
		(void)snprintf(rc->refused, sizeof(rc->refused), "%.160s: %.340s", what,
		    msg_of(st, r));
}

/*
 * Puts the project's labels on namespace 'ns' ('set'), or takes them off,
 * with a merge patch on resourceVersion 'rv': the client's result.
 */
static int
ns_label(struct prc *rc, const char *ns, const char *rv, bool set, struct kc_status *st)
{
	_cleanup_(kc_json_putp) struct json_object *patch = json_object_new_object();
	struct json_object *meta, *labels;
	int r;

	if (patch == NULL || (meta = kc_json_ensure_obj(patch, "metadata")) == NULL ||
	    (labels = kc_json_ensure_obj(meta, "labels")) == NULL)
		return -ENOMEM;
	/* Released, a namespace keeps its Pod Security labels: nothing loosens. */
	if ((r = set ? kc_json_set_str(labels, TY_LABEL_MANAGED_BY, TY_MANAGER) :
	    kc_json_put_null(labels, TY_LABEL_MANAGED_BY)) < 0 ||
	    (r = set ? kc_json_set_str(labels, TY_LABEL_PROJECT, rc->name) :
	    kc_json_put_null(labels, TY_LABEL_PROJECT)) < 0 ||
	    (set && (r = project_psa_labels(rc->p, labels)) < 0) ||
	    (rv != NULL && (r = kc_json_set_str(meta, "resourceVersion", rv)) < 0))
		return r;
	return kc_client_patch(rc->cl, &(struct kc_patch_opts){
		.res = &kc_res_namespaces, .name = ns, .type = KC_PATCH_MERGE,
		.field_manager = TY_FIELD_MANAGER,
	}, patch, NULL, st);
}

/*
 * The Pod Security labels of our namespace i, whose cached labels hash to
 * 'cached' at resourceVersion 'rv': put back as spec.podSecurity says when
 * they differ (edited by someone, or the spec changed).
 */
static int
ensure_psa_labels(struct prc *rc, size_t i, uint64_t cached, const char *rv)
{
	_cleanup_(kc_json_putp) struct json_object *want = NULL;
	struct kc_status st = { 0 };
	int r;

	if ((r = project_namespace(rc->p, i, &want)) < 0)
		return r;
	if (cache_psa_hash(want) == cached)
		return 0;
	r = ns_label(rc, rc->p->ns[i], rv, true, &st);
	kc_log_debug(&rc->log, "label namespace %s: %s", rc->p->ns[i],
	    r < 0 ? kc_err_name(r) : "ok");
	if (refusal(r)) {
		note_refused(rc, i, "label namespace", &st, r);
		return 0;
	}
	if (r == KC_ECONFLICT)
		return r;		/* the newer namespace is on its way */
	if (r < 0)
		return kc_log_error_r(&rc->log, r, "label namespace %s: %s", rc->p->ns[i],
		    msg_of(&st, r));
	kc_log_info(&rc->log, "namespace %s: Pod Security labels set (enforce %s)",
	    rc->p->ns[i], kc_psa_level_name(rc->p->psa[TY_PSA_ENFORCE]));
	return 0;
}

/*
 * Namespace i: ours (labelled with the project), created, or adopted when
 * it has no project label. Sets ns_ready[i] or says why not.
 */
static int
ensure_namespace(struct prc *rc, size_t i)
{
	_cleanup_(kc_json_putp) struct json_object *live = NULL;
	const char *ns = rc->p->ns[i], *owner;
	struct kc_status st = { 0 };
	struct json_object *want = NULL;
	struct kc_item *it;
	uint64_t psa;
	char rv[KC_RV_MAX];
	int r;

	rc->ns_ready[i] = false;
	if ((it = kc_informer_get(rc->c->caches[TY_CACHE_NAMESPACES], NULL, ns)) != NULL) {
		const struct ty_owned_item *o = kc_item_data(it);
		char other[64];

		kc_strlcpy(other, ty_owned_project(o), sizeof(other));
		if (strcmp(other, rc->name) != 0) {
			(void)snprintf(rc->ns_msg[i], sizeof(rc->ns_msg[i]),
			    "namespace %s belongs to project %s", ns, other);
			(void)snprintf(rc->ns_conflict, sizeof(rc->ns_conflict), "%s", rc->ns_msg[i]);
		} else if (o->deleting)
			(void)snprintf(rc->ns_msg[i], sizeof(rc->ns_msg[i]),
			    "namespace %s is being deleted", ns);
		else
			rc->ns_ready[i] = true;
		psa = rc->ns_ready[i] ? o->hash : 0;
		kc_strlcpy(rv, kc_item_rv(it), sizeof(rv));
		kc_item_unref(it);
		return psa != 0 ? ensure_psa_labels(rc, i, psa, rv) : 0;
	}
	if ((r = project_namespace(rc->p, i, &want)) < 0)
		return r;
	r = kc_client_create(rc->cl, &(struct kc_create_opts){
		.res = &kc_res_namespaces, .field_manager = TY_FIELD_MANAGER,
	}, want, NULL, &st);
	json_object_put(want);
	kc_log_debug(&rc->log, "create Namespace %s: %s", ns, r < 0 ? kc_err_name(r) : "ok");
	if (r == 0) {
		atomic_fetch_add(&rc->c->n.objects_created, 1);
		rc->ns_ready[i] = true;
		return 0;
	}
	if (refusal(r)) {
		note_refused(rc, i, "create namespace", &st, r);
		return 0;
	}
	if (r != KC_EEXISTS)
		return kc_log_error_r(&rc->log, r, "create namespace %s: %s", ns, msg_of(&st, r));
	st = (struct kc_status){ 0 };
	if ((r = kc_client_get(rc->cl, &(struct kc_get_opts){
		.res = &kc_res_namespaces, .name = ns,
	    }, &live, &st)) < 0)
		return r == KC_ENOTFOUND ? KC_ECONFLICT : r;
	owner = kc_json_str(live, "metadata", "labels", TY_LABEL_PROJECT);
	if (owner != NULL && strcmp(owner, rc->name) != 0) {
		(void)snprintf(rc->ns_msg[i], sizeof(rc->ns_msg[i]),
		    "namespace %s belongs to project %.63s", ns, owner);
		(void)snprintf(rc->ns_conflict, sizeof(rc->ns_conflict), "%s", rc->ns_msg[i]);
		return 0;
	}
	if (owner != NULL) {		/* ours; the cache lags */
		rc->ns_ready[i] = true;
		return 0;
	}
	/* Adopt it: the labels only, at the version read. */
	st = (struct kc_status){ 0 };
	r = ns_label(rc, ns, kc_json_str(live, "metadata", "resourceVersion"), true, &st);
	if (refusal(r)) {
		note_refused(rc, i, "adopt namespace", &st, r);
		return 0;
	}
	if (r < 0)
		return r;
	kc_log_info(&rc->log, "adopted namespace %s", ns);
	rc->ns_ready[i] = true;
	return 0;
}

/*
 * Ensures one object of namespace i (or of the cluster, i ==
 * TY_PROJECT_NS_MAX) made by 'made' (the result of its project_*()
 * function: -ENOENT means it must not exist, and the cached one named
 * 'name' is deleted).
 */
static int
ensure_one(struct prc *rc, size_t i, enum ty_cache_id id, int made,
    struct json_object *want, const char *ns, const char *name)
{
	struct kc_status st = { 0 };
	struct kc_item *it;
	char what[320];
	int r;

	if (made == -ENOENT) {
		if ((it = kc_informer_get(rc->c->caches[id], ns, name)) == NULL)
			return 0;
		kc_item_unref(it);
		return project_delete(rc->c, rc->cl, &rc->log, id, ns, name);
	}
	if (made < 0)
		return made;
	(void)snprintf(what, sizeof(what), "%s %s", cache_kinds[id].res->kind, name);
	r = project_ensure(rc->c, rc->cl, &rc->log, id, want, &st);
	if (refusal(r)) {
		note_refused(rc, i, what, &st, r);
		return 0;
	}
	if (r < 0 && r != KC_ECONFLICT)
		return kc_log_error_r(&rc->log, r, "%s: %s", what, msg_of(&st, r));
	return r < 0 ? r : 0;
}

static int
ensure_namespace_objects(struct prc *rc, size_t i)
{
	const char *ns = rc->p->ns[i];
	struct json_object *o = NULL;
	int made, r;

	/* Each object is made before ensure_one() reads it. */
	made = project_quota(rc->p, i, &o);
	if ((r = ensure_one(rc, i, TY_CACHE_QUOTAS, made, o, ns, TY_PROJECT_QUOTA)) < 0)
		return r;
	o = NULL;
	made = project_limit_range(rc->p, i, &o);
	if ((r = ensure_one(rc, i, TY_CACHE_LIMITRANGES, made, o, ns, TY_PROJECT_LIMITS)) < 0)
		return r;
	o = NULL;
	made = project_policy(rc->p, i, &o);
	if ((r = ensure_one(rc, i, TY_CACHE_PROJECT_NETPOLS, made, o, ns,
	    TY_PROJECT_POLICY)) < 0)
		return r;
	o = NULL;
	made = project_policy_allow(rc->p, i, &o);
	if ((r = ensure_one(rc, i, TY_CACHE_PROJECT_NETPOLS, made, o, ns,
	    TY_PROJECT_POLICY_ALLOW)) < 0)
		return r;
	o = NULL;
	made = project_owner_binding(rc->p, i, &o);
	return ensure_one(rc, i, TY_CACHE_ROLEBINDINGS, made, o, ns, TY_PROJECT_OWNERS_RB);
}

/* The reader ClusterRole and its binding: owners and bound members. */
static int
ensure_reader(struct prc *rc)
{
	struct ty_subject *subjects = NULL;
	struct json_object *o = NULL;
	char name[128];
	size_t n = 0;
	int r;

	(void)snprintf(name, sizeof(name), "trainyard-project-reader:%s", rc->name);
	r = project_reader_role(rc->p, &o);
	if ((r = ensure_one(rc, TY_PROJECT_NS_MAX, TY_CACHE_CLUSTERROLES, r, o, NULL,
	    name)) < 0)
		return r;
	if (rc->nmembers > 0 &&
	    (subjects = kc_calloc(rc->nmembers, sizeof(*subjects))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < rc->nmembers; i++)
		if (rc->members[i].v.ready)
			subjects[n++] = rc->members[i].v.subject;
	o = NULL;
	r = project_reader_binding(rc->p, subjects, n, &o);
	kc_free(subjects);
	return ensure_one(rc, TY_PROJECT_NS_MAX, TY_CACHE_CLUSTERROLEBINDINGS, r, o, NULL, name);
}

static bool
member_exists(const struct prc *rc, const char *label)
{
	char buf[64];

	for (size_t i = 0; i < rc->nmembers; i++) {
		project_member_label(rc->members[i].name, buf, sizeof(buf));
		if (strcmp(buf, label) == 0)
			return true;
	}
	return false;
}

/* Namespaces the project no longer lists lose its labels (they stay). */
static int
release_namespaces(struct prc *rc)
{
	struct kc_item **items;
	size_t n;
	int r;

	if ((r = project_owned(rc->c, TY_CACHE_NAMESPACES, rc->name, &items, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++) {
		struct kc_status st = { 0 };

		if (project_has_namespace(rc->p, kc_item_name(items[i])) ||
		    ((const struct ty_owned_item *)kc_item_data(items[i]))->deleting)
			continue;
		r = ns_label(rc, kc_item_name(items[i]), kc_item_rv(items[i]), false, &st);
		if (r == 0)
			kc_log_info(&rc->log, "released namespace %s", kc_item_name(items[i]));
		else if (r == KC_ENOTFOUND || r == KC_ECONFLICT)
			r = 0;		/* gone, or changed: its event comes */
		else
			kc_log_error_r(&rc->log, r, "release namespace %s: %s",
			    kc_item_name(items[i]), msg_of(&st, r));
	}
	project_owned_release(items, n);
	return r;
}

/*
 * Deletes what the project labelled in namespaces it no longer lists
 * (which it releases), and the bindings of members that no longer exist
 * (a member's own bindings are its reconciler's).
 */
static int
prune(struct prc *rc)
{
	static const enum ty_cache_id ids[] = {
		TY_CACHE_ROLEBINDINGS, TY_CACHE_PROJECT_NETPOLS, TY_CACHE_QUOTAS,
		TY_CACHE_LIMITRANGES,
	};
	int r = 0;

	for (size_t k = 0; k < KC_ARRAY_SIZE(ids) && r == 0; k++) {
		struct kc_item **items;
		size_t n;

		if ((r = project_owned(rc->c, ids[k], rc->name, &items, &n)) < 0)
			return r;
		for (size_t i = 0; i < n && r == 0; i++) {
			const struct ty_owned_item *o = kc_item_data(items[i]);
			const char *member = ty_owned_member(o);
			char ns[KC_NAMESPACE_MAX + 1];

			kc_item_ns(items[i], ns, sizeof(ns));
			if (o->deleting)
				continue;
			if (project_has_namespace(rc->p, ns) &&
			    (member == NULL || member[0] == '\0' || member_exists(rc, member)))
				continue;
			r = project_delete(rc->c, rc->cl, &rc->log, ids[k], ns,
			    kc_item_name(items[i]));
		}
		project_owned_release(items, n);
	}
	return r < 0 ? r : release_namespaces(rc);
}

/* Runs of the project that hold quota: a session running or being cleaned up. */
static size_t
active_runs(struct prc *rc)
{
	struct quota_usage u;

	if (rc->c->ledger == NULL || quota_usage(rc->c->ledger, rc->name, &u) < 0)
		return 1;	/* out of memory: assume so, look again */
	json_object_put(u.reserved);
	return u.active;
}

/*
 * The Project is being deleted: no Run of it starts a session; under
 * deletionPolicy.runs Cancel its running sessions end (reason
 * ProjectDeleted, the Run reconciler's doing), under WaitForCompletion
 * they run to their end. Nothing else happens while a Run holds quota
 * (looked at again every PROJECT_CLEANUP_MS, and when one lets go); then
 * every object labelled with it goes (the namespaces only under
 * deletionPolicy.namespaces Delete), then the finalizer. RECONCILE_AFTER
 * while deletes are on their way.
 */
static int64_t
finalize(struct prc *rc)
{
	static const enum ty_cache_id ids[] = {
		TY_CACHE_ROLEBINDINGS, TY_CACHE_PROJECT_NETPOLS, TY_CACHE_QUOTAS,
		TY_CACHE_LIMITRANGES, TY_CACHE_CLUSTERROLEBINDINGS, TY_CACHE_CLUSTERROLES,
		TY_CACHE_NAMESPACES,
	};
	struct kc_status st = { 0 };
	size_t left = 0, n_active;
	int r = 0;

	if (!finalizer_has(rc->obj, TY_PROJECT_FINALIZER))
		return RECONCILE_DONE;
	/* Everything stays until the Runs' sessions are over and cleaned up. */
	if (rc->p != NULL && (n_active = active_runs(rc)) > 0) {
		kc_log_debug(&rc->log, "deletion waits for %zu active Runs", n_active);
		return RECONCILE_AFTER(PROJECT_CLEANUP_MS);
	}
	for (size_t k = 0; k < KC_ARRAY_SIZE(ids) && r == 0; k++) {
		struct kc_item **items;
		size_t n;

		if (ids[k] == TY_CACHE_NAMESPACES && (rc->p == NULL || !rc->p->delete_namespaces))
			continue;
		/* Namespaces go only once no Run in them is active. */
		if (ids[k] == TY_CACHE_NAMESPACES && active_runs(rc) > 0) {
			kc_log_debug(&rc->log, "namespaces kept while Runs are active");
			left++;
			continue;
		}
		if ((r = project_owned(rc->c, ids[k], rc->name, &items, &n)) < 0)
			return r;
		for (size_t i = 0; i < n && r == 0; i++) {
			char ns[KC_NAMESPACE_MAX + 1];

			/* A terminating namespace does not hold the Project. */
			if (((const struct ty_owned_item *)kc_item_data(items[i]))->deleting)
				continue;
			kc_item_ns(items[i], ns, sizeof(ns));
			r = project_delete(rc->c, rc->cl, &rc->log, ids[k], ns,
			    kc_item_name(items[i]));
			left += ids[k] != TY_CACHE_NAMESPACES;
		}
		project_owned_release(items, n);
	}
	if (r < 0)
		return r;
	if (left > 0)
		return RECONCILE_AFTER(PROJECT_CLEANUP_MS);
	if ((r = finalizer_set(rc->cl, &ty_res_projects, rc->obj, TY_PROJECT_FINALIZER, false,
	    &st)) < 0 && r != KC_ENOTFOUND) {
		if (r != KC_ECONFLICT)
			kc_log_error_r(&rc->log, r, "remove finalizer: %s", msg_of(&st, r));
		return r;
	}
	kc_log_info(&rc->log, "cleaned up");
	return RECONCILE_DONE;
}

static int
status_namespaces(struct prc *rc, struct json_object *status)
{
	struct json_object *list, *e;
	int r;

	if ((r = kc_json_put(status, "namespaces", list = json_object_new_array())) < 0)
		return r;
	for (size_t i = 0; rc->p != NULL && i < rc->p->nns; i++) {
		if ((r = kc_json_append(list, e = json_object_new_object())) < 0 ||
		    (r = kc_json_set_str(e, "name", rc->p->ns[i])) < 0 ||
		    (r = kc_json_set_bool(e, "ready", rc->ns_ready[i])) < 0)
			return r;
		if (!rc->ns_ready[i] && rc->ns_msg[i][0] != '\0' &&
		    (r = kc_json_set_str(e, "message", rc->ns_msg[i])) < 0)
			return r;
	}
	return 0;
}

static int
status_members(struct prc *rc, struct json_object *status)
{
	int64_t by_role[TY_ROLE_N] = { 0 }, expired = 0, invalid = 0;
	struct json_object *m = kc_json_ensure_obj(status, "members");
	int r;

	if (m == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < rc->nmembers; i++) {
		const struct ty_member_verdict *v = &rc->members[i].v;

		if (v->ready)
			by_role[v->role]++;
		else if (strcmp(v->reason, "Expired") == 0)
			expired++;
		else
			invalid++;
	}
	if ((r = kc_json_set_int(m, "total", (int64_t)rc->total_members)) < 0 ||
	    (r = kc_json_set_int(m, "admins", by_role[TY_ROLE_ADMIN])) < 0 ||
	    (r = kc_json_set_int(m, "researchers", by_role[TY_ROLE_RESEARCHER])) < 0 ||
	    (r = kc_json_set_int(m, "viewers", by_role[TY_ROLE_VIEWER])) < 0 ||
	    (r = kc_json_set_int(m, "expired", expired)) < 0)
		return r;
	return kc_json_set_int(m, "invalid", invalid);
}

/* "24/128": GPUs held of the quota's GPUs (its first requests.<...>/gpu), or "24". */
static void
gpus_text(const struct ty_project *p, int64_t held, char *buf, size_t size)
{
	size_t len = (size_t)snprintf(buf, size, "%" PRId64, held);

	if (p == NULL || len >= size)
		return;
	json_object_object_foreach(p->hard, key, val) {
		const char *slash = strrchr(key, '/');

		if (slash != NULL && strcmp(slash, "/gpu") == 0 &&
		    strncmp(key, "requests.", 9) == 0 && json_object_is_type(val, json_type_string)) {
			(void)snprintf(buf + len, size - len, "/%s", json_object_get_string(val));
			return;
		}
	}
}

/*
 * The quota's use, from the ledger (quota.h): usage.reserved and
 * usage.gpus, what the project's Runs hold; runs.active and runs.waiting.
 * Conditions other than Ready and NamespacesReady are kept as they are.
 */
static int
status_quota(struct prc *rc, const struct json_object *old, struct json_object *status,
    struct json_object *usage, struct json_object *conds)
{
	struct json_object *list = kc_json_arr_of(old, "conditions"), *runs;
	struct quota_usage u;
	char gpus[96];
	int r;

	if (rc->c->ledger != NULL) {
		if ((r = quota_usage(rc->c->ledger, rc->name, &u)) < 0)
			return r;
		gpus_text(rc->p, u.gpus, gpus, sizeof(gpus));
		if ((r = kc_json_put(usage, "reserved", u.reserved)) < 0 ||
		    (r = kc_json_set_str(usage, "gpus", gpus)) < 0 ||
		    (r = kc_json_put(status, "runs", runs = json_object_new_object())) < 0 ||
		    (r = kc_json_set_int(runs, "active", (int64_t)u.active)) < 0 ||
		    (r = kc_json_set_int(runs, "waiting", (int64_t)u.waiting)) < 0)
			return r;
	}
	for (size_t i = 0; list != NULL && i < json_object_array_length(list); i++) {
		struct json_object *cd = json_object_array_get_idx(list, i);
		const char *type = kc_json_str(cd, "type");

		if (type == NULL || strcmp(type, "Ready") == 0 ||
		    strcmp(type, "NamespacesReady") == 0)
			continue;
		if ((r = kc_json_append(conds, kc_json_copy(cd))) < 0)
			return r;
	}
	return 0;
}

/* The status this reconcile saw and did; written unless unchanged. */
static int
write_project_status(struct prc *rc)
{
	struct json_object *old = kc_json_get(rc->obj, "status"), *status, *conds, *usage;
	int64_t gen = kc_json_int(rc->obj, 0, "metadata", "generation");
	bool ns_ok = rc->p != NULL, ready;
	const char *phase, *reason;
	char msg[1024], nsmsg[600];
	struct kc_status st = { 0 };
	int r;

	if ((status = json_object_new_object()) == NULL)
		return -ENOMEM;
	if ((usage = kc_json_ensure_obj(status, "usage")) == NULL) {
		json_object_put(status);
		return -ENOMEM;
	}
	for (size_t i = 0; rc->p != NULL && i < rc->p->nns; i++)
		ns_ok = ns_ok && rc->ns_ready[i];
	ready = ns_ok && rc->refused[0] == '\0';
	if (rc->p == NULL) {
		phase = "Pending";
		reason = "InvalidSpec";
		model_problems_text(&rc->probs, msg, sizeof(msg));
	} else if (!ns_ok) {
		phase = "Pending";
		reason = "NamespacesNotReady";
		(void)snprintf(msg, sizeof(msg), "%s", rc->ns_conflict[0] != '\0' ?
		    rc->ns_conflict : "namespaces are not ready");
		for (size_t i = 0; rc->ns_conflict[0] == '\0' && i < rc->p->nns; i++)
			if (!rc->ns_ready[i] && rc->ns_msg[i][0] != '\0') {
				(void)snprintf(msg, sizeof(msg), "%s", rc->ns_msg[i]);
				break;
			}
	} else if (!ready) {
		phase = "Pending";
		reason = "WriteRefused";
		(void)snprintf(msg, sizeof(msg), "%s", rc->refused);
	} else {
		phase = rc->p->suspend != TY_SUSPEND_NONE ? "Suspended" : "Active";
		reason = "Ready";
		(void)snprintf(msg, sizeof(msg), "%zu namespace%s with quota, policies and "
		    "bindings", rc->p->nns, rc->p->nns == 1 ? "" : "s");
	}
	if (rc->p == NULL)
		(void)snprintf(nsmsg, sizeof(nsmsg), "the spec is invalid: nothing was changed");
	else if (ns_ok)
		(void)snprintf(nsmsg, sizeof(nsmsg), "every namespace exists and is the "
		    "project's");
	else
		(void)snprintf(nsmsg, sizeof(nsmsg), "%.590s", rc->ns_conflict[0] != '\0' ?
		    rc->ns_conflict : msg);
	if ((r = kc_json_set_int(status, "observedGeneration", gen)) < 0 ||
	    (r = kc_json_set_str(status, "phase", phase)) < 0 ||
	    (r = status_namespaces(rc, status)) < 0 ||
	    (r = status_members(rc, status)) < 0 ||
	    (rc->p != NULL && (r = kc_json_put(usage, "hard", kc_json_copy(rc->p->hard))) < 0) ||
	    (r = kc_json_put(status, "conditions", conds = json_object_new_array())) < 0 ||
	    (r = condition_add(conds, old, "Ready", ready, reason, msg, gen, rc->now)) < 0 ||
	    (r = condition_add(conds, old, "NamespacesReady", ns_ok, rc->p == NULL ?
	    "InvalidSpec" : ns_ok ? "NamespacesReady" : rc->ns_conflict[0] != '\0' ?
	    "NamespaceOwnedElsewhere" : "NamespacesNotReady", nsmsg, gen, rc->now)) < 0) {
		json_object_put(status);
		return r;
	}
	if ((r = status_quota(rc, old, status, usage, conds)) < 0) {
		json_object_put(status);
		return r;
	}
	r = status_put(rc->c, rc->cl, &ty_res_projects, rc->obj, status, rc->xkey, &st);
	if (r < 0 && r != KC_ECONFLICT && r != KC_ENOTFOUND)
		return kc_log_error_r(&rc->log, r, "update status: %s", msg_of(&st, r));
	return r < 0 ? r : 0;
}

static int64_t
reconcile_project(struct ctl *c, struct kc_client *cl, const char *key)
{
	struct prc rc = { .c = c, .cl = cl, .name = key };
	struct kc_status st = { 0 };
	int64_t ret = RECONCILE_DONE;
	int r;

	rc.log = (struct kc_log_ctx){ .action = "reconcile", .kind = "Project", .name = key };
	rc.log.rid = atomic_fetch_add(&c->n.reconciles, 1) + 1;
	rc.now = kc_clock_wall();
	(void)snprintf(rc.xkey, sizeof(rc.xkey), "P%.70s", key);
	if ((r = project_cached(c, key, &rc.obj, &rc.p, &rc.probs)) == KC_ENOTFOUND) {
		expect_forget(c->expect, rc.xkey);
		return RECONCILE_DONE;
	}
	if (r < 0)
		goto out;
	if (kc_json_get(rc.obj, "metadata", "deletionTimestamp") != NULL) {
		ret = finalize(&rc);
		goto out;
	}
	if (expect_status_stale(c->expect, rc.xkey,
	    kc_json_str(rc.obj, "metadata", "resourceVersion")))
		goto out;
	if (rc.p == NULL) {		/* invalid: nothing changes but the status */
		r = write_project_status(&rc);
		goto out;
	}
	if (!finalizer_has(rc.obj, TY_PROJECT_FINALIZER)) {
		/* Its update event brings the Project back. */
		if ((r = finalizer_set(cl, &ty_res_projects, rc.obj, TY_PROJECT_FINALIZER, true,
		    &st)) < 0 && r != KC_ECONFLICT)
			kc_log_error_r(&rc.log, r, "add finalizer: %s", msg_of(&st, r));
		goto out;
	}
	if ((r = project_members(c, rc.p, rc.now, &rc.members, &rc.nmembers,
	    &rc.total_members)) < 0)
		goto out;
	for (size_t i = 0; i < rc.p->nns; i++)
		if ((r = ensure_namespace(&rc, i)) < 0 ||
		    (rc.ns_ready[i] && (r = ensure_namespace_objects(&rc, i)) < 0))
			goto out;
	if ((r = ensure_reader(&rc)) < 0 || (r = prune(&rc)) < 0)
		goto out;
	if ((r = write_project_status(&rc)) < 0)
		goto out;
	if (rc.refused[0] != '\0')
		ret = RECONCILE_AFTER(PROJECT_RETRY_MS);
out:
	if (r < 0) {
		ret = r;
		atomic_fetch_add(&c->n.reconcile_errors, 1);
	}
	prc_release(&rc);
	return ret;
}

/* ---- what a change maps to ------------------------------------------------ */

static void
project_changed(struct ctl *c, enum ty_cache_id id, enum ty_change change,
    struct kc_item *it, ty_enqueue_fn *enqueue, void *arg)
{
	char ns[KC_NAMESPACE_MAX + 1], project[64];
	const char *label;

	(void)change;
	switch (id) {
	case TY_CACHE_PROJECTS:
		enqueue(arg, kc_item_key(it));
		return;
	case TY_CACHE_RUNS:
		/* The ledger saw the change first (the Run reconciler's row). */
		if (c->ledger != NULL)
			quota_take_dirty(c->ledger, enqueue, arg);
		return;
	case TY_CACHE_MEMBERS:
		kc_item_ns(it, ns, sizeof(ns));
		if (project_of_namespace(c, ns, project, sizeof(project)))
			enqueue(arg, project);
		return;
	case TY_CACHE_NAMESPACES:
	case TY_CACHE_QUOTAS:
	case TY_CACHE_LIMITRANGES:
	case TY_CACHE_PROJECT_NETPOLS:
	case TY_CACHE_ROLEBINDINGS:
	case TY_CACHE_CLUSTERROLES:
	case TY_CACHE_CLUSTERROLEBINDINGS:
		label = ty_owned_project(kc_item_data(it));
		if (label != NULL && label[0] != '\0')
			enqueue(arg, label);
		return;
	default:
		return;
	}
}

const struct reconciler project_reconciler = {
	.kind = "Project",
	.tag = 'P',
	.watches = 1u << TY_CACHE_PROJECTS | 1u << TY_CACHE_MEMBERS | 1u << TY_CACHE_RUNS |
	    1u << TY_CACHE_NAMESPACES | 1u << TY_CACHE_QUOTAS | 1u << TY_CACHE_LIMITRANGES |
	    1u << TY_CACHE_PROJECT_NETPOLS | 1u << TY_CACHE_ROLEBINDINGS |
	    1u << TY_CACHE_CLUSTERROLES | 1u << TY_CACHE_CLUSTERROLEBINDINGS,
	.changed = project_changed,
	.reconcile = reconcile_project,
};

/* ---- the admission webhooks' view of the caches --------------------------- */

static struct json_object *
cached_json(struct ctl *c, enum ty_cache_id id, const char *ns, const char *name)
{
	struct json_object *o = NULL;
	struct kc_item *it;

	if (!atomic_load(&c->caches_ready) || c->caches[id] == NULL ||
	    (it = kc_informer_get(c->caches[id], ns, name)) == NULL)
		return NULL;
	if (cache_obj_json(kc_item_data(it), &o) < 0)
		o = NULL;
	kc_item_unref(it);
	return o;
}

static struct json_object *
adm_project_of(void *arg, const char *ns)
{
	struct ctl *c = arg;
	char name[64];

	if (!atomic_load(&c->caches_ready) || !project_of_namespace(c, ns, name, sizeof(name)))
		return NULL;
	return cached_json(c, TY_CACHE_PROJECTS, NULL, name);
}

static struct json_object *
adm_profile(void *arg, const char *name)
{
	return cached_json(arg, TY_CACHE_PROFILES, NULL, name);
}

static struct json_object *
adm_members(void *arg, const char *ns)
{
	struct ctl *c = arg;
	struct item_list l = { 0 };
	struct json_object *list;

	if (!atomic_load(&c->caches_ready) || c->caches[TY_CACHE_MEMBERS] == NULL)
		return NULL;
	if (kc_informer_by_index(c->caches[TY_CACHE_MEMBERS], ns, collect_item, &l) < 0 ||
	    (list = json_object_new_array()) == NULL) {
		project_owned_release(l.items, l.n);
		return NULL;
	}
	for (size_t i = 0; i < l.n; i++) {
		struct json_object *o = NULL;

		if (cache_obj_json(kc_item_data(l.items[i]), &o) < 0 ||
		    kc_json_append(list, o) < 0) {
			json_object_put(list);
			list = NULL;
			break;
		}
	}
	project_owned_release(l.items, l.n);
	return list;
}

/* The cached Service or NetworkPolicy 'name' is someone else's (names.h). */
static bool
adm_name_taken(void *arg, const char *kind, const char *ns, const char *name)
{
	struct ctl *c = arg;
	struct kc_informer *inf = c->caches[strcmp(kind, "service") == 0 ?
	    TY_CACHE_SERVICES : TY_CACHE_NETPOLS];
	const struct ty_child_item *ci;
	struct kc_item *it;
	bool taken;

	if (!atomic_load(&c->caches_ready) || inf == NULL ||
	    (it = kc_informer_get(inf, ns, name)) == NULL)
		return false;
	ci = kc_item_data(it);
	taken = names_cached_foreign(ty_cache_str(ci->strs, ci->run), ci->owner_uid != 0,
	    name);
	kc_item_unref(it);
	return taken;
}

void
project_admission_ops(struct ctl *c, struct admission_ops *ret)
{
	*ret = (struct admission_ops){
		.arg = c, .project_of = adm_project_of, .profile = adm_profile,
		.members = adm_members, .name_taken = adm_name_taken, .cfg = &c->cfg,
	};
}

/*
 * reconcile_member.c: the ProjectMember reconciler (member_reconciler, a
 * row of manager.c's table). A member's key is "namespace/name".
 *
 *	gather    a private copy of the member; its project (the project
 *	          label of its namespace) from the cache; the verdict of
 *	          project_member_check(), ranked among the project's members
 *	          (project_members(): the oldest of a subject wins, members
 *	          past maxMembers are refused). The controller decides every
 *	          rule itself: a system: subject, a kind the policy refuses,
 *	          a member outside the home namespace is never bound, webhooks
 *	          or not.
 *	execute   the finalizer trainyard.dev/project-member; when Bound, one
 *	          RoleBinding "trainyard-<role>-<member>" per namespace of the
 *	          project to the role's ClusterRole (a new role's bindings are
 *	          made before the old ones go); every other binding of the
 *	          member deleted (expired, refused, another role, a namespace
 *	          the project no longer lists); the status (invitedBy from the
 *	          annotation the mutating webhook records, the namespaces bound,
 *	          Ready with its reason, observedGeneration); a look again when
 *	          the membership expires (the work queue's timer).
 *	deletion  the finalizer removes the member's bindings everywhere, then
 *	          itself.
 *
 * What a change maps to: a member's own key; every member of a Project's
 * namespaces when the Project or one of its namespaces changes; the
 * member named by a changed binding's trainyard.dev/member label.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>

#include "admission.h"
#include "controller.h"

#define MEMBER_RETRY_MS		10000	/* a refused binding is tried again */
/*
 * An expiry is a date, on the wall clock: the timer set for it is looked
 * at again at least this often, so a step of the wall clock (forward: it
 * expired already) is followed within that much.
 */
#define MEMBER_EXPIRY_RECHECK_MS	(10 * 60 * 1000)

struct mrc {
	struct ctl		*c;
	struct kc_client	*cl;
	struct kc_log_ctx	 log;
	char			 ns[KC_NAMESPACE_MAX + 1];
	char			 name[KC_NAME_MAX + 1];
	char			 label[64];	/* trainyard.dev/member */
	char			 project[64];
	char			 xkey[KC_INFORMER_KEY_MAX + 2];
	struct json_object	*obj;		/* a private copy */
	struct json_object	*pobj;
	struct ty_project	*p;
	struct ty_problems	 probs;
	struct ty_member_verdict v;
	time_t			 now;
	bool			 bound[TY_PROJECT_NS_MAX];
	char			 refused[512];
};

static const char *
msg_of(const struct kc_status *st, int r)
{
	return st->message[0] != '\0' ? st->message : kc_strerror(r);
}

static void
mrc_release(struct mrc *rc)
{
	project_free(rc->p);
	json_object_put(rc->pobj);
	json_object_put(rc->obj);
}


/* The verdict on this member, ranked among its project's members. */
static int
judge(struct mrc *rc)
{
	struct ty_member_entry *all = NULL;
	size_t n = 0, total = 0;
	bool found = false;
	int r;

	if ((r = project_members(rc->c, rc->p, rc->now, &all, &n, &total)) < 0)
		return r;
	for (size_t i = 0; i < n && !found; i++)
		if (strcmp(all[i].name, rc->name) == 0 && rc->p->nns > 0 &&
		    strcmp(rc->ns, rc->p->ns[0]) == 0) {
			rc->v = all[i].v;
			found = true;
		}
	kc_free(all);
	/* Outside the home namespace: refused whatever its rank. */
	if (!found)
		project_member_check(rc->p, rc->obj, 0, 0, rc->now, &rc->v);
	return 0;
}

/*
 * Deletes every binding of this member but the ones 'keep' names (the
 * desired binding's name in the namespaces marked in rc->bound).
 */
static int
prune_bindings(struct mrc *rc, const char *keep)
{
	struct kc_item **items;
	size_t n;
	int r = 0;

	if ((r = project_owned(rc->c, TY_CACHE_ROLEBINDINGS, rc->project, &items, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++) {
		const struct ty_owned_item *o = kc_item_data(items[i]);
		const char *member = ty_owned_member(o);
		char ns[KC_NAMESPACE_MAX + 1];
		bool wanted = false;

		if (member == NULL || strcmp(member, rc->label) != 0 || o->deleting)
			continue;
		kc_item_ns(items[i], ns, sizeof(ns));
		for (size_t k = 0; keep != NULL && rc->p != NULL && k < rc->p->nns; k++)
			wanted = wanted || (rc->bound[k] && strcmp(rc->p->ns[k], ns) == 0 &&
			    strcmp(kc_item_name(items[i]), keep) == 0);
		if (!wanted)
			r = project_delete(rc->c, rc->cl, &rc->log, TY_CACHE_ROLEBINDINGS, ns,
			    kc_item_name(items[i]));
	}
	project_owned_release(items, n);
	return r;
}

/* The bindings of a Bound member, new ones first; rc->bound says where. */
static int
bind_member(struct mrc *rc, char *keep, size_t keep_size)
{
	struct kc_status st = { 0 };
	int r;

	project_member_binding_name(rc->v.role, rc->name, keep, keep_size);
	for (size_t i = 0; i < rc->p->nns; i++) {
		struct json_object *want = NULL;

		if ((r = project_member_binding(rc->p, i, rc->name, &rc->v, &want)) < 0)
			return r;
		st = (struct kc_status){ 0 };
		r = project_ensure(rc->c, rc->cl, &rc->log, TY_CACHE_ROLEBINDINGS, want, &st);
		if (r == KC_EFORBIDDEN || r == KC_EINVALID || r == KC_ENOTFOUND) {
			/* Refused, or its namespace is not there yet. */
			if (rc->refused[0] == '\0')
				(void)snprintf(rc->refused, sizeof(rc->refused), "RoleBinding %.160s "
				    "in %.63s: %.250s", keep, rc->p->ns[i], msg_of(&st, r));
			continue;
		}
		if (r < 0)
			return r == KC_ECONFLICT ? r : kc_log_error_r(&rc->log, r,
			    "RoleBinding %s in %s: %s", keep, rc->p->ns[i], msg_of(&st, r));
		rc->bound[i] = true;
	}
	return 0;
}

static int
write_member_status(struct mrc *rc, bool ready, const char *reason, const char *message)
{
	struct json_object *old = kc_json_get(rc->obj, "status"), *status, *list, *conds;
	const char *by = kc_json_str(rc->obj, "metadata", "annotations", TY_ANN_INVITED_BY);
	int64_t gen = kc_json_int(rc->obj, 0, "metadata", "generation");
	struct kc_status st = { 0 };
	int r;

	if ((status = json_object_new_object()) == NULL)
		return -ENOMEM;
	if ((r = kc_json_set_int(status, "observedGeneration", gen)) < 0 ||
	    (by != NULL && (r = kc_json_set_str(status, "invitedBy", by)) < 0) ||
	    (r = kc_json_put(status, "namespaces", list = json_object_new_array())) < 0)
		goto fail;
	for (size_t i = 0; rc->p != NULL && i < rc->p->nns; i++)
		if (rc->bound[i] &&
		    (r = kc_json_append(list, json_object_new_string(rc->p->ns[i]))) < 0)
			goto fail;
	if ((r = kc_json_put(status, "conditions", conds = json_object_new_array())) < 0 ||
	    (r = condition_add(conds, old, "Ready", ready, reason, message, gen, rc->now)) < 0)
		goto fail;
	r = status_put(rc->c, rc->cl, &ty_res_projectmembers, rc->obj, status, rc->xkey, &st);
	if (r < 0 && r != KC_ECONFLICT && r != KC_ENOTFOUND)
		return kc_log_error_r(&rc->log, r, "update status: %s", msg_of(&st, r));
	return r < 0 ? r : 0;
fail:
	json_object_put(status);
	return r;
}

/* Being deleted: its bindings go everywhere, then the finalizer. */
static int
finalize(struct mrc *rc)
{
	struct kc_status st = { 0 };
	int r;

	if (!finalizer_has(rc->obj, TY_MEMBER_FINALIZER))
		return 0;
	memset(rc->bound, 0, sizeof(rc->bound));
	if (rc->project[0] != '\0' && (r = prune_bindings(rc, NULL)) < 0)
		return r;
	if ((r = finalizer_set(rc->cl, &ty_res_projectmembers, rc->obj, TY_MEMBER_FINALIZER,
	    false, &st)) < 0 && r != KC_ENOTFOUND) {
		if (r != KC_ECONFLICT)
			kc_log_error_r(&rc->log, r, "remove finalizer: %s", msg_of(&st, r));
		return r;
	}
	return 0;
}

static int64_t
member_next(const struct mrc *rc)
{
	if (rc->refused[0] != '\0')
		return RECONCILE_AFTER(MEMBER_RETRY_MS);
	/* Expiry is a timer: the queue brings the member back on time. */
	if (rc->v.ready && rc->v.expires_at > 0)
		return RECONCILE_AFTER(rc->v.expires_at > rc->now ?
		    KC_MIN((uint64_t)(rc->v.expires_at - rc->now) * 1000,
		    (uint64_t)MEMBER_EXPIRY_RECHECK_MS) : 1000);
	return RECONCILE_DONE;
}

static int64_t
reconcile_member(struct ctl *c, struct kc_client *cl, const char *key)
{
	struct mrc rc = { .c = c, .cl = cl };
	struct kc_status st = { 0 };
	struct kc_item *it;
	char keep[KC_NAME_MAX + 1], msg[600];
	int64_t ret = RECONCILE_DONE;
	int r = 0;

	if (cache_key_split(key, rc.ns, rc.name) < 0)
		return RECONCILE_DONE;
	rc.log = (struct kc_log_ctx){ .action = "reconcile", .kind = "ProjectMember",
	    .ns = rc.ns, .name = rc.name };
	rc.log.rid = atomic_fetch_add(&c->n.reconciles, 1) + 1;
	rc.now = kc_clock_wall();
	(void)snprintf(rc.xkey, sizeof(rc.xkey), "M%s", key);
	project_member_label(rc.name, rc.label, sizeof(rc.label));
	if ((it = kc_informer_get(c->caches[TY_CACHE_MEMBERS], rc.ns, rc.name)) == NULL) {
		expect_forget(c->expect, rc.xkey);
		return RECONCILE_DONE;
	}
	r = cache_obj_json(kc_item_data(it), &rc.obj);
	kc_item_unref(it);
	if (r < 0)
		goto out;
	if (project_of_namespace(c, rc.ns, rc.project, sizeof(rc.project)) &&
	    (r = project_cached(c, rc.project, &rc.pobj, &rc.p, &rc.probs)) < 0 &&
	    r != KC_ENOTFOUND)
		goto out;
	r = 0;
	if (kc_json_get(rc.obj, "metadata", "deletionTimestamp") != NULL) {
		r = finalize(&rc);
		goto out;
	}
	if (expect_status_stale(c->expect, rc.xkey,
	    kc_json_str(rc.obj, "metadata", "resourceVersion")))
		goto out;
	if (rc.pobj == NULL) {
		(void)snprintf(msg, sizeof(msg), "no Project lists namespace %s", rc.ns);
		r = write_member_status(&rc, false, "ProjectNotFound", msg);
		goto out;
	}
	if (kc_json_get(rc.pobj, "metadata", "deletionTimestamp") != NULL) {
		/* Its finalizer removes every binding: none is made again. */
		(void)snprintf(msg, sizeof(msg), "project %s is being deleted", rc.project);
		memset(rc.bound, 0, sizeof(rc.bound));
		if ((r = prune_bindings(&rc, NULL)) == 0)
			r = write_member_status(&rc, false, "ProjectNotFound", msg);
		goto out;
	}
	if (rc.p == NULL) {
		/* The Project's status says what is wrong; bindings stay as they are. */
		(void)snprintf(msg, sizeof(msg), "project %s has an invalid spec", rc.project);
		r = write_member_status(&rc, false, "ProjectInvalid", msg);
		goto out;
	}
	if (!finalizer_has(rc.obj, TY_MEMBER_FINALIZER)) {
		if ((r = finalizer_set(cl, &ty_res_projectmembers, rc.obj, TY_MEMBER_FINALIZER,
		    true, &st)) < 0 && r != KC_ECONFLICT)
			kc_log_error_r(&rc.log, r, "add finalizer: %s", msg_of(&st, r));
		goto out;
	}
	if ((r = judge(&rc)) < 0)
		goto out;
	keep[0] = '\0';
	if (rc.v.ready && (r = bind_member(&rc, keep, sizeof(keep))) < 0)
		goto out;
	if ((r = prune_bindings(&rc, rc.v.ready ? keep : NULL)) < 0)
		goto out;
	if (rc.v.ready && rc.refused[0] != '\0')
		r = write_member_status(&rc, false, "BindingRefused", rc.refused);
	else
		r = write_member_status(&rc, rc.v.ready, rc.v.reason, rc.v.message);
	if (r < 0)
		goto out;
	if (!rc.v.ready)
		kc_log_debug(&rc.log, "%s: %s", rc.v.reason, rc.v.message);
	ret = member_next(&rc);
out:
	if (r < 0) {
		ret = r;
		atomic_fetch_add(&c->n.reconcile_errors, 1);
	}
	mrc_release(&rc);
	return ret;
}

/* ---- what a change maps to ------------------------------------------------ */

struct member_walk {
	const char	*label;		/* only members of this label; NULL: all */
	ty_enqueue_fn	*enqueue;
	void		*arg;
};

static int
enqueue_member(void *arg, struct kc_item *it)
{
	struct member_walk *w = arg;
	char label[64];

	if (w->label != NULL) {
		project_member_label(kc_item_name(it), label, sizeof(label));
		if (strcmp(label, w->label) != 0)
			return 0;
	}
	w->enqueue(w->arg, kc_item_key(it));
	return 0;
}

struct ns_names {
	size_t	 n;
	char	 ns[TY_PROJECT_NS_MAX * 2][KC_NAMESPACE_MAX + 1];
};

static int
collect_ns(void *arg, struct kc_item *it)
{
	struct ns_names *l = arg;

	if (l->n == KC_ARRAY_SIZE(l->ns))
		return 1;
	kc_strlcpy(l->ns[l->n++], kc_item_name(it), sizeof(l->ns[0]));
	return 0;
}

/* Every member (of 'label' only, unless NULL) in the namespaces of 'project'. */
static void
enqueue_project_members(struct ctl *c, const char *project, const char *label,
    ty_enqueue_fn *enqueue, void *arg)
{
	struct ns_names l = { 0 };
	struct member_walk w = { label, enqueue, arg };

	/* Collected first: no walk of one cache inside another's. */
	(void)kc_informer_by_index(c->caches[TY_CACHE_NAMESPACES], project, collect_ns, &l);
	for (size_t i = 0; i < l.n; i++)
		(void)kc_informer_by_index(c->caches[TY_CACHE_MEMBERS], l.ns[i], enqueue_member,
		    &w);
}

static void
member_changed(struct ctl *c, enum ty_cache_id id, enum ty_change change,
    struct kc_item *it, ty_enqueue_fn *enqueue, void *arg)
{
	const struct ty_owned_item *o;
	const char *project, *member;

	(void)change;
	switch (id) {
	case TY_CACHE_MEMBERS:
		enqueue(arg, kc_item_key(it));
		return;
	case TY_CACHE_PROJECTS:
		enqueue_project_members(c, kc_item_name(it), NULL, enqueue, arg);
		return;
	case TY_CACHE_NAMESPACES:
		(void)kc_informer_by_index(c->caches[TY_CACHE_MEMBERS], kc_item_name(it),
		    enqueue_member, &(struct member_walk){ NULL, enqueue, arg });
		return;
	case TY_CACHE_ROLEBINDINGS:
		o = kc_item_data(it);
		project = ty_owned_project(o);
		member = ty_owned_member(o);
		if (project != NULL && project[0] != '\0' && member != NULL && member[0] != '\0')
			enqueue_project_members(c, project, member, enqueue, arg);
		return;
	default:
		return;
	}
}

const struct reconciler member_reconciler = {
	.kind = "ProjectMember",
	.tag = 'M',
	.watches = 1u << TY_CACHE_MEMBERS | 1u << TY_CACHE_PROJECTS |
	    1u << TY_CACHE_NAMESPACES | 1u << TY_CACHE_ROLEBINDINGS,
	.changed = member_changed,
	.reconcile = reconcile_member,
};

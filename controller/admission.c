/*
 * admission.c: the AdmissionReview handler behind POST /mutate and
 * POST /validate (see admission.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/json.h>
#include <kc/str.h>

#include "admission.h"
#include "model.h"
#include "project.h"

#define GROUP		"admission.k8s.io/"
#define UID_MAX		256

static const char *const versions[] = { "v1", "v1beta1", NULL };

struct areq {
	enum admission_hook	 hook;
	const struct admission_ops *ops;
	time_t			 now;
	const char		*op;		/* CREATE, UPDATE, ... */
	const char		*ns;
	const char		*user;		/* userInfo.username */
	struct json_object	*obj, *old;
	struct admission_info	*info;
	/* The answer. */
	bool			 denied;
	char			 msg[1024];
	struct json_object	*patch;		/* JSONPatch ops, or NULL */
};

static void
deny(struct areq *a, const char *fmt, ...) _printf_(2, 3);

static void
deny(struct areq *a, const char *fmt, ...)
{
	va_list ap;

	a->denied = true;
	va_start(ap, fmt);
	vsnprintf(a->msg, sizeof(a->msg), fmt, ap);
	va_end(ap);
}

/* A 400: the reason as plain text in 'out'. */
static int
bad_request(struct kc_buf *out, struct admission_info *info, const char *what)
{
	int r;

	info->result = "invalid";
	snprintf(info->message, sizeof(info->message), "not an AdmissionReview: %.400s", what);
	kc_buf_reset(out);
	if ((r = kc_buf_printf(out, "%s\n", info->message)) < 0)
		return r;
	return 400;
}

/* ------------------------------------------------------------------ */
/* /mutate: attribution */

/*
 * The annotation 'key' (its JSON-pointer form 'ptr') must say who created
 * the object: the requester on CREATE, the old object's value on UPDATE.
 */
static int
attribute(struct areq *a, const char *key, const char *ptr)
{
	struct json_object *anns = kc_json_get(a->obj, "metadata", "annotations");
	const char *cur = kc_json_str(anns, key), *want;
	struct json_object *op, *v;
	int r;

	if (strcmp(a->op, "CREATE") == 0)
		want = a->user != NULL && a->user[0] != '\0' ? a->user : NULL;
	else
		want = kc_json_str(a->old, "metadata", "annotations", key);
	if ((cur == NULL && want == NULL) ||
	    (cur != NULL && want != NULL && strcmp(cur, want) == 0))
		return 0;
	if ((a->patch = json_object_new_array()) == NULL)
		return -ENOMEM;
	if ((r = kc_json_append(a->patch, op = json_object_new_object())) < 0)
		return r;
	if (want == NULL)
		return kc_json_set_str(op, "op", "remove") < 0 ||
		    kc_json_set_str(op, "path", ptr) < 0 ? -ENOMEM : 0;
	if ((r = kc_json_set_str(op, "op", "add")) < 0)
		return r;
	if (anns != NULL && json_object_is_type(anns, json_type_object)) {
		if ((r = kc_json_set_str(op, "path", ptr)) < 0)
			return r;
		return kc_json_put(op, "value", json_object_new_string(want));
	}
	if (kc_json_get(a->obj, "metadata") == NULL)
		return -EINVAL;		/* refused by the caller before */
	if ((r = kc_json_set_str(op, "path", "/metadata/annotations")) < 0 ||
	    (r = kc_json_put(op, "value", v = json_object_new_object())) < 0)
		return r;
	return kc_json_set_str(v, key, want);
}

/* ------------------------------------------------------------------ */
/* /validate */

/* The project of the request's namespace, checked; NULL when it has none. */
static struct ty_project *
project_of(struct areq *a, char *why, size_t size)
{
	_cleanup_(kc_json_putp) struct json_object *proj = NULL;
	struct ty_problems probs = { 0 };
	struct ty_project *p = NULL;

	why[0] = '\0';
	if (a->ns == NULL || a->ops->project_of == NULL ||
	    (proj = a->ops->project_of(a->ops->arg, a->ns)) == NULL)
		return NULL;
	if (project_parse(proj, &p, &probs) < 0) {
		char text[384];

		model_problems_text(&probs, text, sizeof(text));
		snprintf(why, size, "project %s is invalid: %s",
		    kc_json_str(proj, "metadata", "name"), text);
		return NULL;
	}
	return p;
}

/* The Run rule 'probs' holds first, as the denial. */
static void
deny_problem(struct areq *a, const struct ty_problems *probs)
{
	deny(a, "%s: %s", probs->p[0].field, probs->p[0].message);
}

/*
 * A new Run whose Service or NetworkPolicy name someone else's object
 * holds, as far as the caches tell (the controller's check at create
 * time stays the authority): true when denied.
 */
static bool
name_taken(struct areq *a)
{
	static const char *const kinds[] = { "service", "networkpolicy" };
	const char *name = kc_json_str(a->obj, "metadata", "name");

	if (a->ops->name_taken == NULL || a->op == NULL || strcmp(a->op, "CREATE") != 0 ||
	    name == NULL || a->ns == NULL)
		return false;
	for (size_t i = 0; i < KC_ARRAY_SIZE(kinds); i++)
		if (a->ops->name_taken(a->ops->arg, kinds[i], a->ns, name)) {
			deny(a, "metadata.name: %s %s/%s exists and is not owned by a Run named "
			    "%s (a Run takes its name for its Service and NetworkPolicy)",
			    kinds[i], a->ns, name, name);
			return true;
		}
	return false;
}

static int
validate_run(struct areq *a)
{
	_cleanup_(project_freep) struct ty_project *p = NULL;
	_cleanup_(kc_json_putp) struct json_object *run = NULL, *profile = NULL;
	_cleanup_(model_spec_freep) struct ty_spec *spec = NULL;
	struct ty_problems probs = { 0 };
	const char *name;
	char why[512];
	int r;

	if (name_taken(a))
		return 0;
	if ((p = project_of(a, why, sizeof(why))) == NULL)
		return 0;	/* not a project's, or the controller says why */
	name = project_run_profile(p, kc_json_str(a->obj, "spec", "profile"));
	if (project_run_check(p, name, NULL, &probs) > 0) {
		deny_problem(a, &probs);
		return 0;
	}
	if (a->ops->cfg == NULL)
		return 0;
	/* The Run as the controller will see it: with the default profile. */
	if ((run = kc_json_copy(a->obj)) == NULL)
		return -ENOMEM;
	/* A mutating webhook sees a new Run before the server gives it a uid. */
	if (kc_json_str(run, "metadata", "uid") == NULL &&
	    kc_json_set_str(kc_json_get(run, "metadata"), "uid", "admission") < 0)
		return -ENOMEM;
	if (name[0] != '\0') {
		struct json_object *s = kc_json_ensure_obj(run, "spec");

		if (s == NULL || (r = kc_json_set_str(s, "profile", name)) < 0)
			return -ENOMEM;
		if (a->ops->profile != NULL)
			profile = a->ops->profile(a->ops->arg, name);
	}
	if ((r = model_validate(run, profile, a->ops->cfg, &spec, &probs)) < 0) {
		if (r == -ENOMEM)
			return r;
		/* Outside the security envelope: refused; else the controller says why. */
		if (probs.envelope > 0 && probs.envelope <= probs.n)
			deny(a, "%s: %s", probs.p[probs.envelope - 1].field,
			    probs.p[probs.envelope - 1].message);
		return 0;
	}
	if (p->max_gpus_per_run >= 0 && project_run_check(p, name, spec, &probs) > 0) {
		deny_problem(a, &probs);
		return 0;
	}
	/* Its pods as the namespace's Pod Security level will judge them. */
	if ((r = project_run_pod_security(p, a->ns, name, spec, a->ops->cfg, &probs)) < 0)
		return r;
	if (r > 0)
		deny(a, "%s", probs.p[probs.n - 1].message);
	return 0;
}

/* "2160h", "90m", "45s" or "1500ms": a Go duration for messages. */
static void
fmt_duration(uint64_t ms, char *buf, size_t size)
{
	if (ms % 3600000 == 0)
		snprintf(buf, size, "%" PRIu64 "h", ms / 3600000);
	else if (ms % 60000 == 0)
		snprintf(buf, size, "%" PRIu64 "m", ms / 60000);
	else if (ms % 1000 == 0)
		snprintf(buf, size, "%" PRIu64 "s", ms / 1000);
	else
		snprintf(buf, size, "%" PRIu64 "ms", ms);
}

/* Whether member 'x' was created before 'y' (creationTimestamp, then name). */
static bool
older(const struct json_object *x, const struct json_object *y)
{
	const char *tx = kc_json_str(x, "metadata", "creationTimestamp");
	const char *ty = kc_json_str(y, "metadata", "creationTimestamp");
	const char *nx = kc_json_str(x, "metadata", "name");
	const char *ny = kc_json_str(y, "metadata", "name");
	int c = strcmp(tx != NULL ? tx : "", ty != NULL ? ty : "");

	/* RFC 3339 in UTC with seconds: the strings sort as the times. */
	if (c != 0)
		return c < 0;
	return strcmp(nx != NULL ? nx : "", ny != NULL ? ny : "") < 0;
}

static void
subject_key_of(const struct json_object *m, char *buf, size_t size)
{
	struct json_object *s = kc_json_get(m, "spec", "subject");
	const char *kind = kc_json_str(s, "kind"), *name = kc_json_str(s, "name");
	const char *ns = kc_json_str(s, "namespace");

	snprintf(buf, size, "%s:%s:%s", kind != NULL ? kind : "", ns != NULL ? ns : "",
	    name != NULL ? name : "");
}

/*
 * The member's rank (members there before it) and the rank of the oldest
 * with its subject, as project_member_check() wants them, from the
 * project's members; 'dup' names that older member.
 */
static void
member_rank(struct areq *a, size_t *rank, size_t *first, char *dup, size_t size)
{
	_cleanup_(kc_json_putp) struct json_object *list = NULL;
	const char *self = kc_json_str(a->obj, "metadata", "name");
	bool create = strcmp(a->op, "CREATE") == 0;
	char key[TY_SUBJECT_KEY_MAX], other[TY_SUBJECT_KEY_MAX];

	*rank = *first = 0;
	dup[0] = '\0';
	if (a->ops->members == NULL || (list = a->ops->members(a->ops->arg, a->ns)) == NULL ||
	    !json_object_is_type(list, json_type_array))
		return;
	subject_key_of(a->obj, key, sizeof(key));
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		struct json_object *m = json_object_array_get_idx(list, i);
		const char *name = kc_json_str(m, "metadata", "name");

		if (self != NULL && name != NULL && strcmp(name, self) == 0)
			continue;
		if (!create && !older(m, a->old != NULL ? a->old : a->obj))
			continue;
		(*rank)++;
		subject_key_of(m, other, sizeof(other));
		if (dup[0] == '\0' && strcmp(key, other) == 0)
			snprintf(dup, size, "%s", name != NULL ? name : "");
	}
	/*
	 * Only "before it" matters: the oldest with the subject ranks first.
	 * An update neither adds a member nor counts against maxMembers.
	 */
	if (!create)
		*rank = dup[0] != '\0' ? 1 : 0;
	*first = dup[0] != '\0' ? 0 : *rank;
}

/* The field a refusal of project_member_check() is about, as a prefix. */
static const char *
member_field(const struct ty_member_verdict *v)
{
	if (strncmp(v->message, "spec.", 5) == 0)
		return "";	/* it names its field */
	if (strcmp(v->reason, "NotHomeNamespace") == 0)
		return "metadata.namespace: ";
	if (strcmp(v->reason, "SubjectNotAllowed") == 0)
		return "spec.subject: ";
	return "";
}

static int
validate_member(struct areq *a)
{
	_cleanup_(project_freep) struct ty_project *p = NULL;
	struct ty_member_verdict v;
	const char *expires = kc_json_str(a->obj, "spec", "expiresAt");
	int64_t gpus = kc_json_int(a->obj, -1, "spec", "maxGPUs");
	size_t rank, first;
	char why[512], dup[254], ttl[32], when[32];
	time_t from = a->now, t;

	if ((p = project_of(a, why, sizeof(why))) == NULL) {
		if (why[0] != '\0')
			deny(a, "%s", why);
		else
			deny(a, "metadata.namespace: namespace %s belongs to no Project; "
			    "ProjectMembers live in a project's home namespace",
			    a->ns != NULL ? a->ns : "");
		return 0;
	}
	if (a->old != NULL && strcmp(a->op, "UPDATE") == 0 &&
	    !json_object_equal(kc_json_get(a->obj, "spec", "subject"),
	    kc_json_get(a->old, "spec", "subject"))) {
		deny(a, "spec.subject: field is immutable; to invite someone else, create "
		    "another ProjectMember");
		return 0;
	}
	member_rank(a, &rank, &first, dup, sizeof(dup));
	project_member_check(p, a->obj, rank, first, a->now, &v);
	if (!v.ready && strcmp(v.reason, "DuplicateSubject") == 0) {
		deny(a, "spec.subject: %s %s is already a member of project %s (ProjectMember "
		    "%s)", project_subject_kind_name(v.subject.kind), v.subject.name, p->name,
		    dup);
		return 0;
	}
	if (!v.ready && strcmp(v.reason, "Expired") != 0) {
		deny(a, "%s%s", member_field(&v), v.message);
		return 0;
	}
	if (expires != NULL && kc_time_parse(expires, &t) == 0 && t <= a->now) {
		deny(a, "spec.expiresAt: %s is in the past", expires);
		return 0;
	}
	if (p->max_ttl_ms > 0) {
		const char *created = kc_json_str(a->obj, "metadata", "creationTimestamp");

		fmt_duration(p->max_ttl_ms, ttl, sizeof(ttl));
		if (strcmp(a->op, "UPDATE") == 0 && created != NULL &&
		    kc_time_parse(created, &t) == 0)
			from = t;
		if (kc_time_format(from + (time_t)(p->max_ttl_ms / 1000), when,
		    sizeof(when)) < 0)
			when[0] = '\0';
		if (expires == NULL) {
			deny(a, "spec.expiresAt: required: project %s limits memberships to %s "
			    "(set it to %s or earlier)", p->name, ttl, when);
			return 0;
		}
		if (kc_time_parse(expires, &t) == 0 &&
		    t > from + (time_t)(p->max_ttl_ms / 1000)) {
			deny(a, "spec.expiresAt: must be at most %s after the invitation "
			    "(%s or earlier): project %s's maxInvitationTTL", ttl, when, p->name);
			return 0;
		}
	}
	if (p->max_gpus_per_member >= 0 && gpus > p->max_gpus_per_member)
		deny(a, "spec.maxGPUs: must be at most %" PRId64 " (project %s's "
		    "maxGPUsPerMember)", p->max_gpus_per_member, p->name);
	return 0;
}

/* ------------------------------------------------------------------ */

static int
decide(struct areq *a, const char *kind)
{
	bool run = strcmp(kind, "Run") == 0, member = strcmp(kind, "ProjectMember") == 0;

	a->info->kind = run ? "Run" : member ? "ProjectMember" : "";
	if ((!run && !member) ||
	    (strcmp(a->op, "CREATE") != 0 && strcmp(a->op, "UPDATE") != 0))
		return 0;
	if (!json_object_is_type(a->obj, json_type_object) ||
	    !json_object_is_type(kc_json_get(a->obj, "metadata"), json_type_object)) {
		deny(a, "request.object: a %s with metadata is required", kind);
		return 0;
	}
	if (a->hook == ADMISSION_MUTATE)
		return run ? attribute(a, TY_ANN_SUBMITTED_BY,
		    "/metadata/annotations/trainyard.dev~1submitted-by") :
		    attribute(a, TY_ANN_INVITED_BY,
		    "/metadata/annotations/trainyard.dev~1invited-by");
	return run ? validate_run(a) : validate_member(a);
}

static int
answer(struct areq *a, const char *av, const char *uid, struct kc_buf *out)
{
	_cleanup_(kc_json_putp) struct json_object *ans = NULL;
	_cleanup_(kc_freep) char *text = NULL, *b64 = NULL;
	struct json_object *resp, *st;
	size_t len;
	int r;

	if ((ans = json_object_new_object()) == NULL ||
	    kc_json_set_str(ans, "apiVersion", av) < 0 ||
	    kc_json_set_str(ans, "kind", "AdmissionReview") < 0 ||
	    kc_json_put(ans, "response", resp = json_object_new_object()) < 0 ||
	    kc_json_set_str(resp, "uid", uid) < 0 ||
	    kc_json_set_bool(resp, "allowed", !a->denied) < 0)
		return -ENOMEM;
	if (a->denied) {
		if (kc_json_put(resp, "status", st = json_object_new_object()) < 0 ||
		    kc_json_set_int(st, "code", 403) < 0 ||
		    kc_json_set_str(st, "reason", "Forbidden") < 0 ||
		    kc_json_set_str(st, "message", a->msg) < 0)
			return -ENOMEM;
	} else if (a->patch != NULL) {
		if ((text = kc_json_dump(a->patch, &len)) == NULL)
			return -ENOMEM;
		if ((r = kc_base64_encode(text, len, 0, &b64, NULL)) < 0)
			return r;
		if (kc_json_set_str(resp, "patchType", "JSONPatch") < 0 ||
		    kc_json_set_str(resp, "patch", b64) < 0)
			return -ENOMEM;
		kc_free(text);
		text = NULL;
	}
	if ((text = kc_json_dump(ans, &len)) == NULL)
		return -ENOMEM;
	kc_buf_reset(out);
	if ((r = kc_buf_append(out, text, len)) < 0)
		return r;
	a->info->result = a->denied ? "denied" : a->patch != NULL ? "patched" : "allowed";
	kc_strlcpy(a->info->message, a->denied ? a->msg : "", sizeof(a->info->message));
	return 200;
}

int
admission_handle(enum admission_hook hook, const char *body, size_t len,
    const struct admission_ops *ops, time_t now, struct kc_buf *out,
    struct admission_info *info)
{
	_cleanup_(kc_json_putp) struct json_object *in = NULL;
	struct admission_info scratch;
	struct kc_status st = { 0 };
	struct json_object *req;
	struct areq a = { .hook = hook, .ops = ops, .now = now };
	const char *av, *kind, *uid, *ver = NULL;
	int r;

	if (info == NULL)
		info = &scratch;
	*info = (struct admission_info){ .version = "unknown", .kind = "", .result = "invalid" };
	a.info = info;
	if (len > ADMISSION_BODY_MAX) {
		kc_buf_reset(out);
		snprintf(info->message, sizeof(info->message),
		    "request body larger than %u bytes", ADMISSION_BODY_MAX);
		if ((r = kc_buf_printf(out, "%s\n", info->message)) < 0)
			return r;
		return 413;
	}
	if ((r = kc_json_parse(body, len, &in, &st)) < 0)
		return r == -ENOMEM ? r : bad_request(out, info, st.message);
	if (!json_object_is_type(in, json_type_object))
		return bad_request(out, info, "the body is not a JSON object");
	kind = kc_json_str(in, "kind");
	av = kc_json_str(in, "apiVersion");
	if (kind == NULL || strcmp(kind, "AdmissionReview") != 0)
		return bad_request(out, info, "kind must be AdmissionReview");
	for (size_t i = 0; av != NULL && versions[i] != NULL; i++)
		if (strncmp(av, GROUP, strlen(GROUP)) == 0 &&
		    strcmp(av + strlen(GROUP), versions[i]) == 0)
			ver = versions[i];
	if (ver == NULL)
		return bad_request(out, info, "apiVersion must be admission.k8s.io/v1 or v1beta1");
	info->version = ver;
	if ((req = kc_json_obj_of(in, "request")) == NULL)
		return bad_request(out, info, "request: required, an object");
	uid = kc_json_str(req, "uid");
	if (uid == NULL || uid[0] == '\0' || strlen(uid) >= UID_MAX)
		return bad_request(out, info, "request.uid: required, a string of 1 to 255 bytes");
	a.op = kc_json_str(req, "operation");
	if (a.op == NULL)
		return bad_request(out, info, "request.operation: required");
	a.ns = kc_json_str(req, "namespace");
	a.user = kc_json_str(req, "userInfo", "username");
	a.obj = kc_json_get(req, "object");
	a.old = kc_json_get(req, "oldObject");
	kind = kc_json_str(req, "kind", "kind");
	r = decide(&a, kind != NULL ? kind : "");
	if (r == 0)
		r = answer(&a, av, uid, out);
	json_object_put(a.patch);
	return r;
}

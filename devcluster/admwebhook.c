/*
 * admwebhook.c: admission webhooks, as kube-apiserver's
 * MutatingAdmissionWebhook and ValidatingAdmissionWebhook plug-ins call
 * them (staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook), and
 * the defaults and validation of the admissionregistration.k8s.io/v1
 * MutatingWebhookConfiguration and ValidatingWebhookConfiguration kinds.
 *
 * Its admission step comes after the built-in mutating plug-ins and
 * before ResourceQuota (plugins.c), and runs two phases:
 *
 *	mutating	the webhooks of every MutatingWebhookConfiguration,
 *			configurations by name and webhooks in order, one
 *			after the other: each sees the object the ones
 *			before it patched (JSONPatch); the result gets the
 *			type's defaults and validation again
 *	validating	the webhooks of every ValidatingWebhookConfiguration,
 *			all called at once; once every call ended, the first
 *			failure in that order answers the request
 *
 * A webhook is called when its namespaceSelector matches the labels of
 * the object's namespace (always for cluster-scoped objects; for a
 * Namespace, its own labels), its objectSelector the new or the old
 * object, and a rule the request (operation, group, version, resource
 * and subresource, scope); with matchPolicy Equivalent, a rule may match
 * another version of the same resource (same storage), which the
 * webhook then gets the object in. reinvocationPolicy IfNeeded is
 * treated as Never: no webhook is called twice.
 *
 * The loop never waits for a webhook. A step that needs a webhook's
 * answer starts the call (whcall.c) and returns -EINPROGRESS; the
 * request is answered again once the call ended (dispatch.c: req->redo,
 * held by http.c while hold_ms() says the calls run). The answers are
 * kept per request (a session keyed by the request's first id) and per
 * webhook and object, so each webhook is called once per object of a
 * request, and the later passes replay what it answered. Sessions end
 * with the request's answer (after()), or ADMWEBHOOK_KEEP_MS after they
 * began.
 *
 * Only requests go through webhooks: the writes of the devcluster's own
 * simulated controllers (api_create_object() and friends: kubelet
 * status, the scheduler's bindings, the garbage collector, the
 * namespace, apps, disruption, token and quota controllers, Events) do
 * not, nor do the subresources plug-ins answer themselves
 * (pods/binding, pods/eviction, scale, serviceaccounts/token), nor
 * TokenReviews and access reviews.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/queue.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/patch.h>
#include <kc/sbuf.h>
#include <kc/selector.h>
#include <kc/str.h>
#include <kc/validation.h>

#include "devcluster.h"
#include "admwebhook.h"
#include "whcall.h"

#define AR_GROUP	"admissionregistration.k8s.io"
#define REVIEW_GROUP	"admission.k8s.io"
#define MUTATING	"mutatingwebhookconfigurations"
#define VALIDATING	"validatingwebhookconfigurations"
#define MSG_MAX		2048
#define KEY_MAX		(4 * DC_SEGMENT_MAX + 16)

enum outcome {
	O_PENDING,	/* the call runs */
	O_ALLOWED,
	O_DENIED,
	O_CALL_ERROR,	/* ErrCallingWebhook: failurePolicy decides */
};

/* One webhook's answer for one object of one request. */
struct answer {
	TAILQ_ENTRY(answer)	 link;
	enum outcome		 out;
	struct whcall		 call;
	char			 uid[37];
	char			 review_version[8];
	char			 webhook[DC_SEGMENT_MAX];
	bool			 mutating;
	struct admwebhook_answer a;
	struct dc_conv_fault	 fault;		/* injected (faults.c) */
	char			*error;		/* O_CALL_ERROR: its message */
	char			 key[];
};

TAILQ_HEAD(answer_list, answer);

/* The answers of one request, kept across its passes. */
struct session {
	TAILQ_ENTRY(session)	 link;
	uint64_t		 rid;		/* req->first_id */
	uint64_t		 born_ms;
	struct answer_list	 answers;
};

TAILQ_HEAD(session_list, session);

struct adm_state {
	struct dc		*dc;
	struct whrun		 run;
	struct session_list	 sessions;
};

static bool
str_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static size_t
arr_len(const struct json_object *a)
{
	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static const char *
arr_str(const struct json_object *a, size_t i)
{
	const struct json_object *v = json_object_array_get_idx(a, i);

	return json_object_is_type(v, json_type_string) ? json_object_get_string(
	    (struct json_object *)(uintptr_t)v) : NULL;
}

static struct adm_state *
state(const struct dc *dc)
{
	return plugin_state(dc, &admwebhook_plugin);
}

/*
 * Matching
 */

/* Whether the list holds "*" or 'v'. */
static bool
list_has(const struct json_object *list, const char *v)
{
	for (size_t i = 0; i < arr_len(list); i++) {
		const char *s = arr_str(list, i);

		if (s != NULL && (strcmp(s, "*") == 0 || strcmp(s, v) == 0))
			return true;
	}
	return false;
}

bool
admwebhook_rule_matches(const struct json_object *rule, const struct admwebhook_attrs *a)
{
	const struct json_object *res = kc_json_get(rule, "resources");
	const char *scope = kc_json_str(rule, "scope");
	bool found = false;

	if (!list_has(kc_json_get(rule, "operations"), a->op) ||
	    !list_has(kc_json_get(rule, "apiGroups"), a->group) ||
	    !list_has(kc_json_get(rule, "apiVersions"), a->version))
		return false;
	for (size_t i = 0; i < arr_len(res) && !found; i++) {
		const char *s = arr_str(res, i), *slash;
		size_t rl;
		const char *sub;

		if (s == NULL)
			continue;
		slash = strchr(s, '/');
		rl = slash != NULL ? (size_t)(slash - s) : strlen(s);
		sub = slash != NULL ? slash + 1 : "";
		found = ((rl == 1 && s[0] == '*') ||
		    (strlen(a->resource) == rl && strncmp(s, a->resource, rl) == 0)) &&
		    (strcmp(sub, "*") == 0 || strcmp(sub, a->subresource) == 0);
	}
	if (!found)
		return false;
	if (scope == NULL || strcmp(scope, "*") == 0)
		return true;
	if (strcmp(scope, "Namespaced") == 0)
		return !a->ns_object && a->ns[0] != '\0';
	if (strcmp(scope, "Cluster") == 0)
		return a->ns_object || a->ns[0] == '\0';
	return false;
}

/*
 * A selector of a webhook (absent, before defaulting: everything): 0, or
 * KC_EINTERNAL with "Internal error occurred: <why>" in 'st' for one that
 * does not parse, -ENOMEM.
 */
static int
selector_of(const struct json_object *wh, const char *key, struct kc_label_selector **ret,
    struct kc_status *st)
{
	const struct json_object *sel = kc_json_get(wh, key);
	struct json_object *empty = NULL;
	struct kc_status pst = { 0 };
	int r;

	if (sel == NULL && (sel = empty = json_object_new_object()) == NULL)
		return -ENOMEM;
	r = kc_label_selector_from_json(sel, ret, &pst);
	if (empty != NULL)
		json_object_put(empty);
	if (r < 0 && r != -ENOMEM)
		return kc_status_set(st, KC_EINTERNAL, "Internal error occurred: %s",
		    pst.message);
	return r;
}

/*
 * namespaceSelector (namespace.Matcher): 1 when it matches, 0 when not,
 * KC_ENOTFOUND when the namespace is missing (the reply's text in 'st'),
 * KC_EINTERNAL for a selector that does not parse, -ENOMEM.
 */
static int
ns_matches(struct dc *dc, const struct json_object *wh, const struct admwebhook_attrs *a,
    const struct json_object *obj, struct kc_status *st)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *ls = NULL;
	const struct json_object *labels;
	int r;

	if (a->ns[0] == '\0' && !a->ns_object)
		return 1;	/* cluster-scoped: never exempted */
	if ((r = selector_of(wh, "namespaceSelector", &ls, st)) < 0)
		return r;
	if (kc_label_selector_is_empty(ls))
		return 1;
	if (a->ns_object && a->subresource[0] == '\0' &&
	    (strcmp(a->op, "CREATE") == 0 || strcmp(a->op, "UPDATE") == 0))
		labels = kc_json_get(obj, "metadata", "labels");
	else {
		const struct dc_rtype *nst = registry_find(dc, "", "v1", "namespaces");
		const struct json_object *ns = nst != NULL ? coll_get(nst->coll, "", a->ns) :
		    NULL;

		if (ns == NULL)
			return kc_status_set(st, KC_ENOTFOUND, "namespaces \"%s\" not found",
			    a->ns);
		labels = kc_json_get(ns, "metadata", "labels");
	}
	return kc_label_selector_matches(ls, labels) ? 1 : 0;
}

/* objectSelector (object.Matcher): the new or the old object's labels. */
static int
object_matches(const struct json_object *wh, const struct json_object *obj,
    const struct json_object *old, struct kc_status *st)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *ls = NULL;
	int r;

	if ((r = selector_of(wh, "objectSelector", &ls, st)) < 0)
		return r;
	if (kc_label_selector_is_empty(ls))
		return 1;
	return (obj != NULL && kc_label_selector_matches_obj(ls, obj)) ||
	    (old != NULL && kc_label_selector_matches_obj(ls, old)) ? 1 : 0;
}

/*
 * ShouldCallHook: 1 with the resource type the webhook sees in *ret (the
 * request's, or with matchPolicy Equivalent another version of it), 0
 * when it is not called, or a failure with 'st' (a missing namespace).
 */
static int
should_call(struct dc *dc, const struct dc_rtype *rt, const struct json_object *wh,
    const struct admwebhook_attrs *a, const struct json_object *obj,
    const struct json_object *old, const struct dc_rtype **ret, struct kc_status *st)
{
	const struct json_object *rules = kc_json_get(wh, "rules");
	const char *policy = kc_json_str(wh, "matchPolicy");
	struct kc_status nst = { 0 };
	int nsm, om;

	*ret = NULL;
	if ((nsm = ns_matches(dc, wh, a, obj, &nst)) == -ENOMEM)
		return nsm;
	if (nsm == 0)
		return 0;
	if ((om = object_matches(wh, obj, old, st)) <= 0)
		return om;
	for (size_t i = 0; i < arr_len(rules) && *ret == NULL; i++)
		if (admwebhook_rule_matches(json_object_array_get_idx(rules, i), a))
			*ret = rt;
	if (*ret == NULL && (policy == NULL || strcmp(policy, "Equivalent") == 0)) {
		for (size_t i = 0; i < arr_len(rules) && *ret == NULL; i++) {
			const struct dc_rtype *t;

			for (t = TAILQ_FIRST(&dc->reg.types); t != NULL && *ret == NULL;
			    t = TAILQ_NEXT(t, link)) {
				struct admwebhook_attrs ea = *a;

				if (t == rt || t->coll != rt->coll ||
				    (a->subresource[0] != '\0' && !rtype_has_subres(t,
				    a->subresource)))
					continue;
				ea.group = t->group;
				ea.version = t->version;
				ea.resource = t->plural;
				if (admwebhook_rule_matches(json_object_array_get_idx(rules, i),
				    &ea))
					*ret = t;
			}
		}
	}
	if (*ret == NULL)
		return 0;
	if (nsm < 0) {
		*ret = NULL;
		*st = nst;
		return nsm;
	}
	return 1;
}

/*
 * Answers
 */

void
admwebhook_answer_clear(struct admwebhook_answer *a)
{
	if (a->result != NULL)
		json_object_put(a->result);
	if (a->patch != NULL)
		json_object_put(a->patch);
	for (size_t i = 0; i < a->nwarnings; i++)
		kc_free(a->warnings[i]);
	memset(a, 0, sizeof(*a));
}

/* Go's GroupVersionKind.String() of an object's apiVersion and kind. */
static void
gvk_string(const struct json_object *o, char *buf, size_t size)
{
	const char *av = or_empty(kc_json_str(o, "apiVersion"));

	errors_textf(buf, size, "%s%s, Kind=%s", strchr(av, '/') != NULL ? "" : "/", av,
	    or_empty(kc_json_str(o, "kind")));
}

int
admwebhook_check(const char *review_version, const char *uid, bool mutating,
    const char *body, size_t len, struct admwebhook_answer *ret, char *err, size_t err_size)
{
	struct json_object *review = NULL, *resp, *pt, *patch, *w;
	struct admwebhook_answer a = { 0 };
	struct kc_status st = { 0 };
	bool v1 = strcmp(review_version, "v1") == 0;
	const char *ptype = NULL, *ptext;
	char want[64], got[2 * DC_SEGMENT_MAX + 16];
	int r;

	if ((r = kc_json_parse(body, len, &review, &st)) < 0 ||
	    !json_object_is_type(review, json_type_object)) {
		if (r == -ENOMEM)
			return r;
		errors_textf(err, err_size, "%s", r < 0 ? st.message :
		    "the response is not a JSON object");
		r = KC_EPARSE;
		goto out;
	}
	r = KC_EINTERNAL;
	resp = kc_json_get(review, "response");
	if (!json_object_is_type(resp, json_type_object)) {
		errors_textf(err, err_size, "webhook response was absent");
		goto out;
	}
	if (v1 && !str_eq(or_empty(kc_json_str(resp, "uid")), uid)) {
		errors_textf(err, err_size, "expected response.uid=\"%s\", got \"%s\"", uid,
		    or_empty(kc_json_str(resp, "uid")));
		goto out;
	}
	errors_textf(want, sizeof(want), REVIEW_GROUP "/v1, Kind=AdmissionReview");
	gvk_string(review, got, sizeof(got));
	if (v1 && strcmp(want, got) != 0) {
		errors_textf(err, err_size, "expected webhook response of %s, got %s", want, got);
		goto out;
	}
	patch = kc_json_get(resp, "patch");
	pt = kc_json_get(resp, "patchType");
	ptext = json_object_is_type(patch, json_type_string) ?
	    json_object_get_string(patch) : NULL;
	if (ptext != NULL && ptext[0] == '\0')
		ptext = NULL;
	if (json_object_is_type(pt, json_type_string))
		ptype = json_object_get_string(pt);
	if (mutating) {
		if (ptext != NULL && ptype == NULL && v1) {
			errors_textf(err, err_size, "webhook returned response.patch but not "
			    "response.patchType");
			goto out;
		}
		if (ptype != NULL && ptext == NULL && v1) {
			errors_textf(err, err_size, "webhook returned response.patchType but not "
			    "response.patch");
			goto out;
		}
		if (ptype != NULL && ptype[0] == '\0') {
			errors_textf(err, err_size, "webhook returned invalid "
			    "response.patchType of \"\"");
			goto out;
		}
	} else {
		if (ptext != NULL) {
			errors_textf(err, err_size, "validating webhook may not return "
			    "response.patch");
			goto out;
		}
		if (ptype != NULL) {
			errors_textf(err, err_size, "validating webhook may not return "
			    "response.patchType");
			goto out;
		}
	}
	a.allowed = kc_json_bool(resp, false, "allowed");
	if (kc_json_get(resp, "status") != NULL &&
	    (a.result = kc_json_copy(kc_json_get(resp, "status"))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	w = kc_json_get(resp, "warnings");
	for (size_t i = 0; i < arr_len(w) && a.nwarnings < ADMWEBHOOK_WARNINGS_MAX; i++) {
		const char *t = arr_str(w, i);

		if (t == NULL || t[0] == '\0')
			continue;
		if ((a.warnings[a.nwarnings] = kc_strdup(t)) == NULL) {
			r = -ENOMEM;
			goto out;
		}
		a.nwarnings++;
	}
	if (ptext != NULL) {
		char *raw = NULL, why[256] = "";
		size_t rlen = 0;

		if (ptype != NULL && strcmp(ptype, "JSONPatch") != 0) {
			errors_textf(err, err_size, "unsupported patch type \"%s\"", ptype);
			r = KC_EINVALID;
			goto out;
		}
		/* A Go []byte: standard base64; a bad one fails the decoding. */
		if ((r = kc_base64_decode(ptext, strlen(ptext), 0, &raw, &rlen, why,
		    sizeof(why))) < 0) {
			if (r == -ENOMEM)
				goto out;
			errors_textf(err, err_size, "%s", why[0] != '\0' ? why :
			    "illegal base64 data");
			r = KC_EPARSE;
			goto out;
		}
		r = kc_json_parse(raw, rlen, &a.patch, &st);
		kc_free(raw);
		if (r == -ENOMEM)
			goto out;
		if (r < 0 || !json_object_is_type(a.patch, json_type_array)) {
			errors_textf(err, err_size, "%s", r < 0 ? st.message :
			    "json: cannot unmarshal into Go value of type jsonpatch.Patch");
			r = KC_EINVALID;
			goto out;
		}
	}
	*ret = a;
	memset(&a, 0, sizeof(a));
	r = 0;
out:
	admwebhook_answer_clear(&a);
	if (review != NULL)
		json_object_put(review);
	return r;
}

struct json_object *
admwebhook_denial(const char *webhook, const struct json_object *result)
{
	struct json_object *o = json_object_is_type(result, json_type_object) ?
	    kc_json_copy(result) : json_object_new_object();
	const char *status, *msg, *reason;
	char q[DC_SEGMENT_MAX + 8], text[MSG_MAX];
	int64_t code;

	if (o == NULL)
		return NULL;
	code = kc_json_int(o, 0, "code");
	status = kc_json_str(o, "status");
	msg = kc_json_str(o, "message");
	reason = kc_json_str(o, "reason");
	(void)kc_sbuf_quoted(q, sizeof(q), webhook);
	if (msg != NULL && msg[0] != '\0')
		errors_textf(text, sizeof(text), "admission webhook %s denied the request: %s", q,
		    msg);
	else if (reason != NULL && reason[0] != '\0')
		errors_textf(text, sizeof(text), "admission webhook %s denied the request: %s", q,
		    reason);
	else
		errors_textf(text, sizeof(text), "admission webhook %s denied the request without "
		    "explanation", q);
	if (kc_json_set_str(o, "message", text) < 0 ||
	    (code < 400 && kc_json_set_int(o, "code", 400) < 0) ||
	    ((status == NULL || status[0] == '\0' || strcmp(status, "Success") == 0) &&
	    kc_json_set_str(o, "status", "Failure") < 0) ||
	    kc_json_set_str(o, "kind", "Status") < 0 ||
	    kc_json_set_str(o, "apiVersion", "v1") < 0 ||
	    (!json_object_is_type(kc_json_get(o, "metadata"), json_type_object) &&
	    kc_json_put(o, "metadata", json_object_new_object()) < 0)) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/*
 * Sessions
 */

static void
answer_free(struct answer *an)
{
	whcall_clear(&an->call);
	admwebhook_answer_clear(&an->a);
	kc_free(an->error);
	kc_free(an);
}

static void
session_free(struct adm_state *s, struct session *se)
{
	struct answer *an;

	TAILQ_REMOVE(&s->sessions, se, link);
	while ((an = TAILQ_FIRST(&se->answers)) != NULL) {
		TAILQ_REMOVE(&se->answers, an, link);
		answer_free(an);
	}
	kc_free(se);
}

/* The session of request 'rid', made when 'create'; NULL when none (or -ENOMEM). */
static struct session *
session_of(struct adm_state *s, uint64_t rid, bool create)
{
	struct session *se, *next;
	uint64_t now = kc_clock_now_ms();

	for (se = TAILQ_FIRST(&s->sessions); se != NULL; se = next) {
		next = TAILQ_NEXT(se, link);
		if (se->rid == rid)
			return se;
		if (now - se->born_ms > ADMWEBHOOK_KEEP_MS)
			session_free(s, se);	/* its request went away */
	}
	if (!create || (se = kc_calloc(1, sizeof(*se))) == NULL)
		return NULL;
	se->rid = rid;
	se->born_ms = now;
	TAILQ_INIT(&se->answers);
	TAILQ_INSERT_TAIL(&s->sessions, se, link);
	return se;
}

static struct answer *
answer_find(const struct session *se, const char *key)
{
	struct answer *an;

	TAILQ_FOREACH(an, &se->answers, link)
		if (strcmp(an->key, key) == 0)
			return an;
	return NULL;
}

/* The answer fails as ErrCallingWebhook: `failed calling webhook "x": <reason>`. */
static _printf_(2, 3) int
answer_fail(struct answer *an, const char *fmt, ...)
{
	char reason[MSG_MAX], q[DC_SEGMENT_MAX + 8], text[MSG_MAX + DC_SEGMENT_MAX + 32];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	errors_textf(text, sizeof(text), "failed calling webhook %s: %s",
	    kc_sbuf_quoted(q, sizeof(q), an->webhook), reason);
	kc_free(an->error);
	an->out = O_CALL_ERROR;
	if ((an->error = kc_strdup(text)) == NULL)
		return -ENOMEM;
	return 0;
}

/* The transport's reason, without its "POST <url>: " prefix. */
static const char *
transport_reason(int r, const struct kc_status *st)
{
	const char *m = st->message, *p;

	if (r == KC_ETIMEOUT)
		return "context deadline exceeded";
	if (m[0] == '\0')
		return kc_strerror(r);
	if (strncmp(m, "POST ", 5) == 0 && (p = strstr(m, ": ")) != NULL)
		return p + 2;
	return m;
}

/* An injected bad answer: response.uid replaced; 0 or -ENOMEM. */
static int
break_uid(struct kc_buf *body)
{
	struct json_object *review = NULL, *resp;
	char *text;
	size_t len;

	if (body->data == NULL || kc_json_parse(body->data, body->len, &review, NULL) < 0)
		return 0;
	resp = kc_json_get(review, "response");
	if (resp != NULL && kc_json_set_str(resp, "uid", "injected-bad-uid") < 0) {
		json_object_put(review);
		return -ENOMEM;
	}
	text = kc_json_dump(review, &len);
	json_object_put(review);
	if (text == NULL)
		return -ENOMEM;
	kc_buf_reset(body);
	if (kc_buf_append(body, text, len) < 0) {
		kc_free(text);
		return -ENOMEM;
	}
	kc_free(text);
	return 0;
}

static void
answer_done(void *arg, struct whcall *c, int r, const struct kc_status *st)
{
	struct answer *an = arg;
	char why[MSG_MAX] = "";

	if (r < 0) {
		(void)answer_fail(an, "failed to call webhook: Post \"%s\": %s", c->url,
		    transport_reason(r, st));
		goto out;
	}
	if (c->resp.status < 200 || c->resp.status > 299) {
		(void)answer_fail(an, "failed to call webhook: the server responded with the "
		    "status code %d but did not return more information", c->resp.status);
		goto out;
	}
	if (an->fault.wrong == DC_CONV_BAD_UID && (r = break_uid(&c->resp.body)) < 0) {
		(void)answer_fail(an, "failed to call webhook: %s", kc_strerror(r));
		goto out;
	}
	r = admwebhook_check(an->review_version, an->uid, an->mutating,
	    c->resp.body.data != NULL ? c->resp.body.data : "", c->resp.body.len, &an->a, why,
	    sizeof(why));
	if (r == -ENOMEM)
		(void)answer_fail(an, "failed to call webhook: %s", kc_strerror(r));
	else if (r == KC_EPARSE)
		(void)answer_fail(an, "failed to call webhook: %s", why);
	else if (r == KC_EINVALID)
		(void)answer_fail(an, "%s", why);
	else if (r < 0)
		(void)answer_fail(an, "received invalid webhook response: %s", why);
	else
		an->out = an->a.allowed ? O_ALLOWED : O_DENIED;
out:
	/* The connection goes now; the answer stays for the request. */
	whcall_clear(c);
}

/*
 * The request
 */

/* {group, version, kind} or {group, version, resource}. */
static struct json_object *
gvx(const char *group, const char *version, const char *key, const char *value)
{
	struct json_object *o = json_object_new_object();

	if (o == NULL || kc_json_set_str(o, "group", group) < 0 ||
	    kc_json_set_str(o, "version", version) < 0 ||
	    kc_json_set_str(o, key, value) < 0) {
		if (o != NULL)
			json_object_put(o);
		return NULL;
	}
	return o;
}

/* The kind a request on 'rt' (and 'sub') is about: {group, version, kind}. */
static struct json_object *
kind_of(const struct dc_rtype *rt, const char *sub)
{
	for (size_t i = 0; sub[0] != '\0' && i < rt->nsubres; i++)
		if (strcmp(rt->subres[i].name, sub) == 0 && rt->subres[i].kind != NULL)
			return gvx(rt->subres[i].group != NULL ? rt->subres[i].group : rt->group,
			    rt->subres[i].version != NULL ? rt->subres[i].version :
			    rt->version, "kind", rt->subres[i].kind);
	return gvx(rt->group, rt->version, "kind", rt->kind);
}

/* CreateOptions, UpdateOptions or DeleteOptions of the request. */
static struct json_object *
options_of(const struct dc_write_ctx *wc)
{
	static const char *const kinds[] = {
		[DC_OP_CREATE] = "CreateOptions", [DC_OP_UPDATE] = "UpdateOptions",
		[DC_OP_DELETE] = "DeleteOptions",
	};
	struct json_object *o = json_object_new_object(), *dr;
	const char *fm = req_param(wc->req, "fieldManager");

	if (o == NULL || kc_json_set_str(o, "kind", kinds[wc->op]) < 0 ||
	    kc_json_set_str(o, "apiVersion", "meta.k8s.io/v1") < 0)
		goto oom;
	if (wc->dry_run && ((dr = json_object_new_array()) == NULL ||
	    kc_json_put(o, "dryRun", dr) < 0 ||
	    kc_json_append(dr, json_object_new_string("All")) < 0))
		goto oom;
	if (wc->op == DC_OP_DELETE) {
		if (wc->delete_grace >= 0 &&
		    kc_json_set_int(o, "gracePeriodSeconds", wc->delete_grace) < 0)
			goto oom;
		if (wc->delete_policy != NULL &&
		    kc_json_set_str(o, "propagationPolicy", wc->delete_policy) < 0)
			goto oom;
	} else if (fm != NULL && fm[0] != '\0' && kc_json_set_str(o, "fieldManager", fm) < 0)
		goto oom;
	return o;
oom:
	if (o != NULL)
		json_object_put(o);
	return NULL;
}

/* A view of 'obj' in inv's version, or JSON null (NULL) for none. */
static int
view_or_null(const struct dc_rtype *inv, const struct json_object *obj,
    struct json_object **ret)
{
	*ret = NULL;
	if (obj == NULL)
		return 0;
	return api_view(inv, obj, ret);
}

static const char *const op_names[] = {
	[DC_OP_CREATE] = "CREATE", [DC_OP_UPDATE] = "UPDATE", [DC_OP_DELETE] = "DELETE",
};

/*
 * The AdmissionReview for webhook call 'an' on 'inv' (CreateV1AdmissionReview):
 * a new tree in *ret; -EINPROGRESS while a view needs a conversion
 * webhook, -ENOMEM.
 */
static int
review_new(const struct dc_write_ctx *wc, const struct dc_rtype *inv,
    const struct admwebhook_attrs *a, const char *name, const struct json_object *obj,
    const struct answer *an, struct json_object **ret)
{
	struct json_object *o = NULL, *req, *ui = NULL, *vo = NULL, *vold = NULL;
	char av[32];
	int r;

	if ((r = view_or_null(inv, obj, &vo)) < 0 || (r = view_or_null(inv, wc->old, &vold)) < 0)
		goto out;
	r = -ENOMEM;
	errors_textf(av, sizeof(av), REVIEW_GROUP "/%s", an->review_version);
	if ((o = json_object_new_object()) == NULL ||
	    kc_json_set_str(o, "kind", "AdmissionReview") < 0 ||
	    kc_json_set_str(o, "apiVersion", av) < 0 ||
	    (req = kc_json_ensure_obj(o, "request")) == NULL ||
	    kc_json_set_str(req, "uid", an->uid) < 0 ||
	    kc_json_put(req, "kind", kind_of(inv, a->subresource)) < 0 ||
	    kc_json_put(req, "resource", gvx(inv->group, inv->version, "resource",
	    inv->plural)) < 0 ||
	    (a->subresource[0] != '\0' &&
	    kc_json_set_str(req, "subResource", a->subresource) < 0) ||
	    kc_json_put(req, "requestKind", kind_of(wc->rt, a->subresource)) < 0 ||
	    kc_json_put(req, "requestResource", gvx(wc->rt->group, wc->rt->version,
	    "resource", wc->rt->plural)) < 0 ||
	    (a->subresource[0] != '\0' &&
	    kc_json_set_str(req, "requestSubResource", a->subresource) < 0) ||
	    (name[0] != '\0' && kc_json_set_str(req, "name", name) < 0) ||
	    (a->ns[0] != '\0' && kc_json_set_str(req, "namespace", a->ns) < 0) ||
	    kc_json_set_str(req, "operation", a->op) < 0 ||
	    user_info_json(&wc->req->user, &ui) < 0 ||
	    kc_json_put(req, "userInfo", ui) < 0)
		goto out;
	if ((vo != NULL ? kc_json_put(req, "object", vo) : kc_json_put_null(req, "object")) < 0)
		goto out;
	vo = NULL;
	if ((vold != NULL ? kc_json_put(req, "oldObject", vold) :
	    kc_json_put_null(req, "oldObject")) < 0)
		goto out;
	vold = NULL;
	if (kc_json_set_bool(req, "dryRun", wc->dry_run) < 0 ||
	    kc_json_put(req, "options", options_of(wc)) < 0)
		goto out;
	*ret = o;
	o = NULL;
	r = 0;
out:
	if (o != NULL)
		json_object_put(o);
	if (vo != NULL)
		json_object_put(vo);
	if (vold != NULL)
		json_object_put(vold);
	return r;
}

/* The first of the webhook's admissionReviewVersions the devcluster speaks. */
static const char *
review_version(const struct json_object *wh)
{
	const struct json_object *vs = kc_json_get(wh, "admissionReviewVersions");

	for (size_t i = 0; i < arr_len(vs); i++) {
		const char *v = arr_str(vs, i);

		if (str_eq(v, "v1") || str_eq(v, "v1beta1"))
			return v;
	}
	return NULL;
}

/*
 * Starts the call of webhook 'wh' for the request, its answer kept in
 * 'se' under 'key': 0 with *ret (pending, or already failed), -EINPROGRESS
 * when the object's view waits for a conversion, -ENOMEM.
 */
static int
answer_start(struct adm_state *s, struct session *se, const struct dc_write_ctx *wc,
    const struct json_object *wh, const struct dc_rtype *inv,
    const struct admwebhook_attrs *a, const char *name, const struct json_object *obj,
    const char *key, bool mutating, struct answer **ret)
{
	struct json_object *review = NULL;
	struct kc_status st = { 0 };
	struct answer *an;
	const char *rv = review_version(wh);
	int64_t timeout = kc_json_int(wh, ADMWEBHOOK_TIMEOUT_S, "timeoutSeconds");
	char why[MSG_MAX] = "", *body;
	size_t klen = strlen(key), len;
	int r;

	if ((an = kc_calloc(1, sizeof(*an) + klen + 1)) == NULL)
		return -ENOMEM;
	memcpy(an->key, key, klen + 1);
	an->mutating = mutating;
	(void)kc_strlcpy(an->webhook, or_empty(kc_json_str(wh, "name")),
	    sizeof(an->webhook));
	api_uuid(an->uid);
	if (timeout < 1 || timeout > ADMWEBHOOK_TIMEOUT_MAX_S)
		timeout = ADMWEBHOOK_TIMEOUT_S;
	if (rv == NULL) {
		struct kc_buf b;
		const struct json_object *vs = kc_json_get(wh, "admissionReviewVersions");
		char *list;

		kc_buf_init(&b, 1024);
		for (size_t i = 0; i < arr_len(vs); i++)
			if (kc_buf_printf(&b, "%s%s", i > 0 ? " " : "",
			    or_empty(arr_str(vs, i))) < 0)
				break;
		list = kc_buf_take(&b, NULL);
		r = answer_fail(an, "could not create admission objects: unsupported admission "
		    "review versions: [%s]", list != NULL ? list : "");
		kc_free(list);
		goto done;
	}
	(void)kc_strlcpy(an->review_version, rv, sizeof(an->review_version));
	if ((r = review_new(wc, inv, a, name, obj, an, &review)) < 0) {
		answer_free(an);
		return r;
	}
	body = kc_json_dump(review, &len);
	json_object_put(review);
	if (body == NULL) {
		answer_free(an);
		return -ENOMEM;
	}
	r = whcall_resolve(s->dc, &an->call, kc_json_get(wh, "clientConfig"), (unsigned)timeout,
	    why, sizeof(why));
	if (s->dc->hooks.adm_fault != NULL)
		s->dc->hooks.adm_fault(s->dc, an->webhook, &an->fault);
	an->call.hold_until_ms = kc_clock_now_ms() + an->fault.delay_ms;
	if (r == 0 && an->fault.wrong == DC_CONV_UNREACHABLE) {
		errors_textf(why, sizeof(why), "dial tcp %s: connect: connection refused "
		    "(injected)", an->call.connect[0] != '\0' ? an->call.connect :
		    an->call.rc.server + strlen("https://"));
		r = KC_EINTERNAL;
	}
	if (r == 0) {
		an->call.seq = whcall_seq(s->dc);
		r = whcall_start(&s->run, &an->call, body, len, (uint32_t)timeout * 1000,
		    ADMWEBHOOK_RESP_MAX, answer_done, an, &st);
		body = NULL;
		if (r < 0 && r != -ENOMEM)
			errors_textf(why, sizeof(why), "%s", transport_reason(r, &st));
	}
	kc_free(body);
	if (r == -ENOMEM) {
		answer_free(an);
		return r;
	}
	if (r < 0) {
		r = answer_fail(an, "failed to call webhook: Post \"%s\": %s", an->call.url, why);
		whcall_clear(&an->call);
	} else {
		an->out = O_PENDING;
		whcall_wait_for(s->dc, an->call.seq);
	}
done:
	TAILQ_INSERT_TAIL(&se->answers, an, link);
	*ret = an;
	return r;
}

/* Replaces every member of 'dst' with those of 'src' (consumed). */
static int
replace_members(struct json_object *dst, struct json_object *src)
{
	const char *keys[256];
	size_t n = 0;
	int r = 0;

	json_object_object_foreach(dst, k, v) {
		(void)v;
		if (n < KC_ARRAY_SIZE(keys))
			keys[n++] = k;
	}
	for (size_t i = n; i > 0; i--)
		json_object_object_del(dst, keys[i - 1]);
	json_object_object_foreach(src, k2, v2)
		if (r == 0)
			r = kc_json_put(dst, k2, json_object_get(v2));
	json_object_put(src);
	return r;
}

/*
 * A mutating webhook's JSON patch, applied to the object in inv's version
 * and converted back to storage. 0 (*ret_changed when it changed
 * something), KC_EINTERNAL with the reply written, -EINPROGRESS, -ENOMEM.
 */
static int
apply_patch(struct dc_write_ctx *wc, const struct dc_rtype *inv, const struct answer *an,
    struct json_object *obj, bool *ret_changed)
{
	struct json_object *view = NULL, *patched = NULL, *sto = NULL;
	struct kc_status st = { 0 };
	char q[DC_SEGMENT_MAX + 8];
	int r;

	if (an->a.patch == NULL || json_object_array_length(an->a.patch) == 0)
		return 0;
	if (obj == NULL) {
		errors_reply(wc->resp, KC_EINTERNAL, "Internal error occurred: admission webhook "
		    "%s attempted to modify the object, which is not supported for this "
		    "operation", kc_sbuf_quoted(q, sizeof(q), an->webhook));
		wc->answered = true;
		return KC_EINTERNAL;
	}
	if ((r = api_view(inv, obj, &view)) < 0)
		return r;
	r = kc_json_patch_apply(view, an->a.patch, &patched, &st);
	if (r < 0) {
		json_object_put(view);
		if (r == -ENOMEM)
			return r;
		errors_reply(wc->resp, KC_EINTERNAL, "Internal error occurred: %s", st.message);
		wc->answered = true;
		return KC_EINTERNAL;
	}
	if (kc_json_equal(view, patched)) {
		json_object_put(view);
		json_object_put(patched);
		return 0;
	}
	json_object_put(view);
	if (inv->ops != NULL && inv->ops->convert_in != NULL) {
		r = inv->ops->convert_in(inv, patched, &sto);
		json_object_put(patched);
		if (r < 0)
			return r;
	} else
		sto = patched;
	if ((r = replace_members(obj, sto)) < 0)
		return r;
	*ret_changed = true;
	return 0;
}

/*
 * One outcome, in order: 0 to go on, or a failure with the reply
 * written (wc->answered).
 */
static int
outcome(struct dc_write_ctx *wc, const struct json_object *wh, const struct dc_rtype *inv,
    const struct answer *an, struct json_object *obj, bool *changed)
{
	struct json_object *denial;
	const char *fp = kc_json_str(wh, "failurePolicy");

	if (an->out == O_CALL_ERROR) {
		if (str_eq(fp, "Ignore"))
			return 0;	/* failing open */
		errors_reply(wc->resp, KC_EINTERNAL, "Internal error occurred: %s",
		    an->error != NULL ? an->error : "failed calling webhook");
		wc->answered = true;
		return KC_EINTERNAL;
	}
	for (size_t i = 0; i < an->a.nwarnings; i++)
		if (resp_warning(wc->resp, an->a.warnings[i]) == -ENOMEM)
			return -ENOMEM;
	if (an->out == O_DENIED) {
		if ((denial = admwebhook_denial(an->webhook, an->a.result)) == NULL)
			return -ENOMEM;
		if (resp_json(wc->resp, (int)kc_json_int(denial, 400, "code"), denial) < 0) {
			json_object_put(denial);
			return -ENOMEM;
		}
		json_object_put(denial);
		wc->answered = true;
		return KC_EFORBIDDEN;
	}
	if (an->mutating)
		return apply_patch(wc, inv, an, obj, changed);
	return 0;
}

/* The key of a webhook's answer for the object of this write. */
static void
answer_key(bool mutating, const struct json_object *cfg, const struct json_object *wh,
    const struct admwebhook_attrs *a, const char *name, char *key, size_t size)
{
	errors_textf(key, size, "%c/%s/%s/%s/%s", mutating ? 'm' : 'v',
	    or_empty(kc_json_str(cfg, "metadata", "name")),
	    or_empty(kc_json_str(wh, "name")), a->ns,
	    strcmp(a->op, "CREATE") == 0 ? "" : name);
}

/* Webhooks called in one phase, in order. */
struct called {
	const struct json_object *wh;
	const struct dc_rtype	*inv;
	struct answer		*an;
};

/*
 * One phase: every webhook of every configuration of the kind, in
 * order. 0, -EINPROGRESS while calls run, or a failure (the reply is
 * written, wc->answered, or it is in 'st').
 */
static int
phase(struct adm_state *s, struct session *se, struct dc_write_ctx *wc,
    const struct admwebhook_attrs *a, const char *name, struct json_object *obj,
    bool mutating, struct kc_status *st)
{
	const struct dc_rtype *cfg_rt = registry_find(s->dc, AR_GROUP, "v1",
	    mutating ? MUTATING : VALIDATING);
	struct json_object **cfgs = NULL, *before = NULL;
	struct called *called = NULL;
	size_t n = 0, ncalled = 0, cap = 0;
	bool waiting = false, changed = false;
	int r;

	if (cfg_rt == NULL || coll_count(cfg_rt->coll, NULL) == 0)
		return 0;
	if ((r = coll_list(cfg_rt->coll, NULL, NULL, &cfgs, &n)) < 0)
		return r;
	if (mutating && obj != NULL && (before = kc_json_copy(obj)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct json_object *whs = kc_json_get(cfgs[i], "webhooks");

		for (size_t j = 0; j < arr_len(whs); j++) {
			const struct json_object *wh = json_object_array_get_idx(whs, j);
			const struct dc_rtype *inv;
			const char *se_class = kc_json_str(wh, "sideEffects");
			struct answer *an;
			char key[KEY_MAX], q[DC_SEGMENT_MAX + 8];

			if ((r = should_call(s->dc, wc->rt, wh, a, obj, wc->old, &inv, st)) < 0)
				goto out;
			if (r == 0)
				continue;
			if (wc->dry_run && !str_eq(se_class, "None") &&
			    !str_eq(se_class, "NoneOnDryRun")) {
				r = kc_status_set(st, KC_EBADREQUEST, "admission webhook %s "
				    "does not support dry run", kc_sbuf_quoted(q, sizeof(q),
				    or_empty(kc_json_str(wh, "name"))));
				goto out;
			}
			answer_key(mutating, cfgs[i], wh, a, name, key, sizeof(key));
			if ((an = answer_find(se, key)) == NULL) {
				if ((r = answer_start(s, se, wc, wh, inv, a, name, obj, key,
				    mutating, &an)) < 0)
					goto out;
				if (an->out == O_PENDING)
					s->dc->conv_progress = true;
			}
			if (an->out == O_PENDING) {
				whcall_wait_for(s->dc, an->call.seq);
				waiting = true;
				if (mutating)
					goto out;
				continue;
			}
			if (mutating) {
				if ((r = outcome(wc, wh, inv, an, obj, &changed)) < 0)
					goto out;
				continue;
			}
			if (ncalled == cap) {
				size_t nc = cap == 0 ? 8 : cap * 2;
				struct called *p = kc_realloc(called, nc * sizeof(*p));

				if (p == NULL) {
					r = -ENOMEM;
					goto out;
				}
				called = p;
				cap = nc;
			}
			called[ncalled++] = (struct called){ .wh = wh, .inv = inv, .an = an };
		}
	}
	for (size_t i = 0; !waiting && i < ncalled; i++)
		if ((r = outcome(wc, called[i].wh, called[i].inv, called[i].an, obj,
		    &changed)) < 0)
			goto out;
	r = 0;
	if (!waiting && changed)
		r = api_admission_revalidate(wc, obj, before);
out:
	if (waiting && r >= 0) {
		s->dc->conv_pending = true;
		r = -EINPROGRESS;
	}
	kc_free(called);
	if (before != NULL)
		json_object_put(before);
	objs_free(cfgs, n);
	return r;
}

/* Webhooks are never called for the admission configuration kinds. */
static bool
exempt(const struct dc_rtype *rt)
{
	return strcmp(rt->group, AR_GROUP) == 0 && (strcmp(rt->plural, MUTATING) == 0 ||
	    strcmp(rt->plural, VALIDATING) == 0 ||
	    strcmp(rt->plural, "validatingadmissionpolicies") == 0 ||
	    strcmp(rt->plural, "validatingadmissionpolicybindings") == 0 ||
	    strcmp(rt->plural, "mutatingadmissionpolicies") == 0 ||
	    strcmp(rt->plural, "mutatingadmissionpolicybindings") == 0);
}

static bool
configured(const struct dc *dc, const char *plural)
{
	const struct dc_rtype *rt = registry_find(dc, AR_GROUP, "v1", plural);

	return rt != NULL && rt->coll != NULL && coll_count(rt->coll, NULL) > 0;
}

static int
adm_admit(struct dc_write_ctx *wc, struct json_object *obj, struct kc_status *st)
{
	struct adm_state *s = state(wc->dc);
	const struct json_object *which = obj != NULL ? obj : wc->old;
	struct admwebhook_attrs a;
	struct session *se;
	char name[DC_SEGMENT_MAX], ns[DC_SEGMENT_MAX];
	int r;

	if (s == NULL || wc->req == NULL || wc->resp == NULL || exempt(wc->rt))
		return 0;
	if (!configured(s->dc, MUTATING) && !configured(s->dc, VALIDATING))
		return 0;
	/* Copies: a mutating webhook's patch replaces the object's members. */
	(void)kc_strlcpy(name, or_empty(kc_json_str(which, "metadata", "name")),
	    sizeof(name));
	(void)kc_strlcpy(ns, wc->rt->namespaced ? or_empty(kc_json_str(which, "metadata",
	    "namespace")) : "", sizeof(ns));
	a = (struct admwebhook_attrs){
		.op = op_names[wc->op], .group = wc->rt->group, .version = wc->rt->version,
		.resource = wc->rt->plural, .subresource = or_empty(wc->subresource),
		.ns = ns,
		.ns_object = wc->rt->group[0] == '\0' && strcmp(wc->rt->plural, "namespaces") == 0,
	};
	/* The namespace of a request on a Namespace is its name (RequestInfo). */
	if (a.ns_object && wc->op != DC_OP_CREATE)
		a.ns = name;
	if ((se = session_of(s, wc->req->first_id, true)) == NULL)
		return -ENOMEM;
	if ((r = phase(s, se, wc, &a, name, obj, true, st)) < 0)
		return r;
	return phase(s, se, wc, &a, name, obj, false, st);
}

/*
 * WebhookConfigurations: defaults and validation (v1)
 */

static int
set_default_str(struct json_object *o, const char *key, const char *value)
{
	return kc_json_get(o, key) != NULL ? 0 : kc_json_set_str(o, key, value);
}

static int
config_defaults(struct dc_write_ctx *wc, struct json_object *obj)
{
	bool mutating = strcmp(wc->rt->plural, MUTATING) == 0;
	struct json_object *whs = kc_json_get(obj, "webhooks");

	for (size_t i = 0; i < arr_len(whs); i++) {
		struct json_object *wh = json_object_array_get_idx(whs, i), *svc, *rules;

		if (!json_object_is_type(wh, json_type_object))
			continue;
		if (set_default_str(wh, "failurePolicy", "Fail") < 0 ||
		    set_default_str(wh, "matchPolicy", "Equivalent") < 0 ||
		    (kc_json_get(wh, "namespaceSelector") == NULL &&
		    kc_json_put(wh, "namespaceSelector", json_object_new_object()) < 0) ||
		    (kc_json_get(wh, "objectSelector") == NULL &&
		    kc_json_put(wh, "objectSelector", json_object_new_object()) < 0) ||
		    (kc_json_get(wh, "timeoutSeconds") == NULL &&
		    kc_json_set_int(wh, "timeoutSeconds", ADMWEBHOOK_TIMEOUT_S) < 0) ||
		    (mutating && set_default_str(wh, "reinvocationPolicy", "Never") < 0))
			return -ENOMEM;
		svc = kc_json_get(wh, "clientConfig", "service");
		if (json_object_is_type(svc, json_type_object) &&
		    kc_json_get(svc, "port") == NULL && kc_json_set_int(svc, "port", 443) < 0)
			return -ENOMEM;
		rules = kc_json_get(wh, "rules");
		for (size_t j = 0; j < arr_len(rules); j++) {
			struct json_object *rule = json_object_array_get_idx(rules, j);

			if (json_object_is_type(rule, json_type_object) &&
			    set_default_str(rule, "scope", "*") < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

/* One value of an enumerated field: Unsupported value, or Required when 'required'. */
static void
check_enum(struct dc_errs *errs, const struct json_object *wh, const char *key,
    const char *at, const char *const *supported, const char *required)
{
	const char *v = kc_json_str(wh, key);
	char field[320];

	errors_textf(field, sizeof(field), "%s.%s", at, key);
	if (v == NULL) {
		if (required != NULL)
			errs_required(errs, field, required);
		return;
	}
	for (size_t i = 0; supported[i] != NULL; i++)
		if (strcmp(supported[i], v) == 0)
			return;
	errs_unsupported(errs, field, v, supported);
}

static void
check_list(struct dc_errs *errs, const struct json_object *rule, const char *key,
    const char *at)
{
	char field[320];

	errors_textf(field, sizeof(field), "%s.%s", at, key);
	if (arr_len(kc_json_get(rule, key)) == 0)
		errs_required(errs, field, "");
}

static void
check_rule(struct dc_errs *errs, const struct json_object *rule, const char *at)
{
	static const char *const ops[] = { "*", "CONNECT", "CREATE", "DELETE", "UPDATE", NULL };
	static const char *const scopes[] = { "*", "Cluster", "Namespaced", NULL };
	const struct json_object *o = kc_json_get(rule, "operations");
	char field[320];

	check_list(errs, rule, "operations", at);
	if (arr_len(o) > 1 && list_has(o, "*")) {
		char list[512] = "", q[DC_SEGMENT_MAX + 8];

		for (size_t i = 0; i < arr_len(o); i++) {
			(void)kc_strlcat(list, i > 0 ? ", " : "", sizeof(list));
			(void)kc_strlcat(list, kc_sbuf_quoted(q, sizeof(q),
			    or_empty(arr_str(o, i))), sizeof(list));
		}
		errors_textf(field, sizeof(field), "%s.operations", at);
		errs_add(errs, "Invalid", field, "Invalid value: []admissionregistration."
		    "OperationType{%s}: if '*' is present, must not specify other operations",
		    list);
	}
	for (size_t i = 0; i < arr_len(o); i++) {
		const char *v = or_empty(arr_str(o, i));
		bool ok = false;

		for (size_t k = 0; ops[k] != NULL; k++)
			ok = ok || strcmp(ops[k], v) == 0;
		if (!ok) {
			errors_textf(field, sizeof(field), "%s.operations[%zu]", at, i);
			errs_unsupported(errs, field, v, ops);
		}
	}
	check_list(errs, rule, "apiGroups", at);
	check_list(errs, rule, "apiVersions", at);
	check_list(errs, rule, "resources", at);
	check_enum(errs, rule, "scope", at, scopes, NULL);
}

static void
check_selector(struct dc_errs *errs, const struct json_object *wh, const char *key,
    const char *at)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *ls = NULL;
	struct kc_status st = { 0 };
	const struct json_object *sel = kc_json_get(wh, key);
	char field[320];

	if (sel == NULL || kc_label_selector_from_json(sel, &ls, &st) == 0 ||
	    st.message[0] == '\0')
		return;
	errors_textf(field, sizeof(field), "%s.%s", at, key);
	errs_add(errs, "Invalid", field, "Invalid value: %s", st.message);
}

static void
check_client(struct dc_errs *errs, const struct json_object *wh, const char *at)
{
	const struct json_object *cc = kc_json_get(wh, "clientConfig");
	const char *url = kc_json_str(cc, "url");
	const struct json_object *svc = kc_json_get(cc, "service");
	char field[320];

	errors_textf(field, sizeof(field), "%s.clientConfig", at);
	if ((url != NULL) == (svc != NULL)) {
		errs_required(errs, field, "exactly one of url or service is required");
		return;
	}
	if (url != NULL) {
		errors_textf(field, sizeof(field), "%s.clientConfig.url", at);
		if (strncmp(url, "https://", 8) != 0) {
			char q[WHCALL_URL_MAX + 8];

			errs_invalid(errs, field, kc_sbuf_quoted(q, sizeof(q), url),
			    "'https' is the only allowed URL scheme");
		}
		return;
	}
	{
		const char *path = kc_json_str(svc, "path");
		int64_t port = kc_json_int(svc, 443, "port");

		if (or_empty(kc_json_str(svc, "name"))[0] == '\0') {
			errors_textf(field, sizeof(field), "%s.clientConfig.service.name", at);
			errs_required(errs, field, "service name is required");
		}
		if (or_empty(kc_json_str(svc, "namespace"))[0] == '\0') {
			errors_textf(field, sizeof(field), "%s.clientConfig.service.namespace", at);
			errs_required(errs, field, "service namespace is required");
		}
		if (path != NULL && path[0] != '/') {
			char q[WHCALL_URL_MAX + 8];

			errors_textf(field, sizeof(field), "%s.clientConfig.service.path", at);
			errs_invalid(errs, field, kc_sbuf_quoted(q, sizeof(q), path),
			    "must start with a '/'");
		}
		if (port < 1 || port > 65535) {
			char v[32];

			errors_textf(field, sizeof(field), "%s.clientConfig.service.port", at);
			errors_textf(v, sizeof(v), "%" PRId64, port);
			errs_invalid(errs, field, v, "port is not valid: must be between 1 and "
			    "65535, inclusive");
		}
	}
}

static void
check_name(struct dc_errs *errs, const char *name, const char *field)
{
	struct kc_valid v;
	char q[DC_SEGMENT_MAX + 8], joined[KC_VALID_MSGS_MAX * KC_VALID_MSG_MAX];
	size_t len = strlen(name), dots = 0;
	char trimmed[DC_SEGMENT_MAX];

	if (len == 0) {
		errs_required(errs, field, "");
		return;
	}
	(void)kc_strlcpy(trimmed, name, sizeof(trimmed));
	if (len < sizeof(trimmed) && trimmed[len - 1] == '.')
		trimmed[len - 1] = '\0';
	if (kc_valid_dns1123_subdomain(kc_str_from(trimmed), &v) > 0) {
		joined[0] = '\0';
		for (size_t i = 0; i < v.n; i++) {
			(void)kc_strlcat(joined, i > 0 ? "," : "", sizeof(joined));
			(void)kc_strlcat(joined, v.msg[i], sizeof(joined));
		}
		errs_invalid(errs, field, kc_sbuf_quoted(q, sizeof(q), trimmed), joined);
		return;
	}
	for (const char *p = trimmed; *p != '\0'; p++)
		dots += *p == '.';
	if (dots < 2)
		errs_invalid(errs, field, kc_sbuf_quoted(q, sizeof(q), trimmed),
		    "should be a domain with at least three segments separated by dots");
}

static int
config_validate(struct dc_write_ctx *wc, const struct json_object *obj,
    const struct json_object *old, struct dc_errs *errs)
{
	static const char *const fps[] = { "Fail", "Ignore", NULL };
	static const char *const mps[] = { "Equivalent", "Exact", NULL };
	static const char *const ses[] = { "None", "NoneOnDryRun", NULL };
	static const char *const rps[] = { "IfNeeded", "Never", NULL };
	bool mutating = strcmp(wc->rt->plural, MUTATING) == 0;
	const struct json_object *whs = kc_json_get(obj, "webhooks");

	(void)old;
	for (size_t i = 0; i < arr_len(whs); i++) {
		const struct json_object *wh = json_object_array_get_idx(whs, i);
		const struct json_object *rules = kc_json_get(wh, "rules");
		const struct json_object *vs = kc_json_get(wh, "admissionReviewVersions");
		const char *name = or_empty(kc_json_str(wh, "name"));
		char at[64], field[256], q[DC_SEGMENT_MAX + 8];
		int64_t t;

		errors_textf(at, sizeof(at), "webhooks[%zu]", i);
		errors_textf(field, sizeof(field), "%s.name", at);
		check_name(errs, name, field);
		for (size_t k = 0; k < i; k++)
			if (str_eq(kc_json_str(json_object_array_get_idx(whs, k), "name"), name)) {
				errs_duplicate(errs, field, kc_sbuf_quoted(q, sizeof(q), name));
				break;
			}
		for (size_t j = 0; j < arr_len(rules); j++) {
			errors_textf(field, sizeof(field), "%s.rules[%zu]", at, j);
			check_rule(errs, json_object_array_get_idx(rules, j), field);
		}
		check_enum(errs, wh, "failurePolicy", at, fps, NULL);
		check_enum(errs, wh, "matchPolicy", at, mps, NULL);
		check_enum(errs, wh, "sideEffects", at, ses, "must specify one of None, "
		    "NoneOnDryRun");
		if (mutating)
			check_enum(errs, wh, "reinvocationPolicy", at, rps, NULL);
		t = kc_json_int(wh, ADMWEBHOOK_TIMEOUT_S, "timeoutSeconds");
		if (t < 1 || t > ADMWEBHOOK_TIMEOUT_MAX_S) {
			char v[32];

			errors_textf(field, sizeof(field), "%s.timeoutSeconds", at);
			errors_textf(v, sizeof(v), "%" PRId64, t);
			errs_invalid(errs, field, v, "the timeout value must be between 1 and 30 "
			    "seconds");
		}
		errors_textf(field, sizeof(field), "%s.admissionReviewVersions", at);
		if (arr_len(vs) == 0)
			errs_required(errs, field, "must specify one of v1, v1beta1");
		else if (review_version(wh) == NULL) {
			char list[512] = "";

			for (size_t k = 0; k < arr_len(vs); k++) {
				(void)kc_strlcat(list, k > 0 ? ", " : "", sizeof(list));
				(void)kc_strlcat(list, kc_sbuf_quoted(q, sizeof(q),
				    or_empty(arr_str(vs, k))), sizeof(list));
			}
			errs_add(errs, "Invalid", field, "Invalid value: []string{%s}: "
			    "must include at least one of v1, v1beta1", list);
		}
		check_selector(errs, wh, "namespaceSelector", at);
		check_selector(errs, wh, "objectSelector", at);
		check_client(errs, wh, at);
	}
	return 0;
}

static const struct dc_type_ops config_ops = {
	.defaults = config_defaults,
	.validate = config_validate,
};

static const struct dc_plugin_type adm_types[] = {
	{ AR_GROUP, MUTATING, &config_ops },
	{ AR_GROUP, VALIDATING, &config_ops },
};

/*
 * The plug-in
 */

/* A request answered again is held while the calls it waits for run. */
static uint64_t
adm_hold_ms(struct dc *dc, const struct dc_req *req)
{
	struct adm_state *s = state(dc);

	if (!req->redo || s == NULL)
		return 0;
	return whrun_waited(&s->run, req->conv_lo, req->conv_hi) ? WHCALL_POLL_MS : 0;
}

/* A request was answered: its answers go. */
static uint64_t
adm_after(struct dc *dc, const struct dc_req *req, const struct dc_resp *resp)
{
	struct adm_state *s = state(dc);
	struct session *se;

	(void)resp;
	if (s == NULL)
		return 0;
	TAILQ_FOREACH(se, &s->sessions, link)
		if (se->rid == req->first_id) {
			session_free(s, se);
			break;
		}
	return 0;
}

static void
adm_fini(struct dc *dc)
{
	struct adm_state *s = state(dc);
	struct session *se;

	if (s == NULL)
		return;
	whrun_fini(&s->run);
	while ((se = TAILQ_FIRST(&s->sessions)) != NULL)
		session_free(s, se);
	kc_free(s);
	plugin_set_state(dc, &admwebhook_plugin, NULL);
}

static int
adm_init(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	struct adm_state *s;

	(void)cfg;
	(void)st;
	if ((s = kc_calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	s->dc = dc;
	whrun_init(&s->run, dc);
	TAILQ_INIT(&s->sessions);
	plugin_set_state(dc, &admwebhook_plugin, s);
	return 0;
}

const struct dc_plugin admwebhook_plugin = {
	.name = "admwebhook",
	.init = adm_init,
	.fini = adm_fini,
	.admit = adm_admit,
	.types = adm_types,
	.ntypes = KC_ARRAY_SIZE(adm_types),
	.hold_ms = adm_hold_ms,
	.after = adm_after,
};

/*
 * convwebhook.c: calls the conversion webhooks of custom resources, as
 * kube-apiserver's apiextensions-apiserver does (conversion/
 * webhook_converter.go), and gives the core hooks.convert.
 *
 * The loop never waits for a webhook. A request that needs an object
 * in another version than the one it is stored in (or a body in the
 * storage version) asks hooks.convert; when no fresh answer is kept for
 * that object and version, the object joins a batch (one per CRD and
 * desired version, so a list's objects go in one ConversionReview, as
 * upstream sends a list) and the hook returns -EINPROGRESS. The request
 * is then answered again (dispatch.c, api_handle(): req->redo), and
 * http.c holds it while hold_ms() below says calls are under way. A
 * zero-delay loop timer sends the batches once the current request is
 * done; whcall.c's 1 ms timer moves every call on through libkc's
 * transport (kc_transport_curl_step(), which never blocks). Other
 * clients are served meanwhile: only the requests that wait for a
 * conversion are held.
 *
 * Answers are kept CONVWEBHOOK_FRESH_MS, keyed by the FNV-1a 64 of the
 * object's JSON text and the desired apiVersion, for the later passes
 * of the request that asked (dc->conv_again); a request's first pass
 * never uses them and asks the webhook, as kube-apiserver, which keeps
 * no answers, does. A failure is kept until the request that waited for
 * it has been answered with it.
 *
 * The call (whcall.c, shared with admission webhooks): POST to
 * clientConfig.url, or to the Service through its Endpoints, with
 * ?timeout=30s,
 * a 30 s deadline, HTTP/1.1 and the first review version of
 * conversionReviewVersions the devcluster speaks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/queue.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/hash.h>
#include <kc/json.h>
#include <kc/str.h>

#include "devcluster.h"
#include "convwebhook.h"
#include "schema.h"
#include "whcall.h"

#define REVIEW_GROUP	"apiextensions.k8s.io"
#define KEY_MAX		(2 * DC_SEGMENT_MAX + 32)
#define INJECTED_LABEL	"injected bad label"	/* fault bad-labels: not a qualified name */

struct entry {
	struct kc_hmap_node	 h;
	TAILQ_ENTRY(entry)	 link;
	uint64_t		 born_ms;
	struct json_object	*obj;		/* the converted object, or NULL */
	char			*error;		/* kube-apiserver's message, or NULL */
	bool			 used;		/* an error a request was given */
	char			 key[];
};

TAILQ_HEAD(entry_list, entry);

/* Objects waiting to be sent, or sent, in one ConversionReview. */
struct batch {
	TAILQ_ENTRY(batch)	 link;
	uint64_t		 seq;		/* requests wait for theirs */
	struct json_object	*crd;		/* a reference */
	char			*desired;	/* "trainyard.dev/v1beta1" */
	bool			 raw;		/* not pruned nor defaulted */
	struct json_object	**objs;		/* references */
	char			**keys;
	size_t			 n, cap;
	/* Once sent: */
	char			 uid[37];
	char			 review_version[8];
	struct whcall		 call;		/* whcall.c */
	struct dc_conv_fault	 fault;		/* injected (faults.c) */
};

TAILQ_HEAD(batch_list, batch);

struct cw_state {
	struct dc		*dc;
	struct kc_hmap		 map;
	struct entry_list	 entries;	/* oldest first */
	size_t			 nentries;
	size_t			 nused;		/* failures given to a request */
	struct batch_list	 waiting;	/* not sent yet */
	struct batch_list	 running;
	struct dc_timer		 send_timer;
	struct whrun		 run;		/* the calls under way */
};

static bool
str_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static struct cw_state *
state(struct dc *dc)
{
	return plugin_state(dc, &convwebhook_plugin);
}

/*
 * The review
 */

const char *
convwebhook_review_version(const struct json_object *crd)
{
	const struct json_object *vs = kc_json_get(crd, "spec", "conversion", "webhook",
	    "conversionReviewVersions");
	size_t n = json_object_is_type(vs, json_type_array) ? json_object_array_length(vs) : 0;

	for (size_t i = 0; i < n; i++) {
		const char *v = json_object_get_string(json_object_array_get_idx(vs, i));

		if (v != NULL && strcmp(v, "v1") == 0)
			return "v1";
		if (v != NULL && strcmp(v, "v1beta1") == 0)
			return "v1beta1";
	}
	return NULL;
}

int
convwebhook_review(const char *review_version, const char *uid, const char *desired,
    const struct json_object *const *objs, size_t n, struct json_object **ret)
{
	struct json_object *o = json_object_new_object(), *req, *resp, *arr;
	char av[32];

	errors_textf(av, sizeof(av), REVIEW_GROUP "/%s", review_version);
	if (o == NULL || kc_json_set_str(o, "kind", "ConversionReview") < 0 ||
	    kc_json_set_str(o, "apiVersion", av) < 0 ||
	    (req = kc_json_ensure_obj(o, "request")) == NULL ||
	    kc_json_set_str(req, "uid", uid) < 0 ||
	    kc_json_set_str(req, "desiredAPIVersion", desired) < 0 ||
	    kc_json_put(req, "objects", json_object_new_array()) < 0 ||
	    (resp = kc_json_ensure_obj(o, "response")) == NULL ||
	    kc_json_set_str(resp, "uid", "") < 0 ||
	    kc_json_put_null(resp, "convertedObjects") < 0 ||
	    kc_json_put(resp, "result", json_object_new_object()) < 0 ||
	    kc_json_put(kc_json_obj_of(resp, "result"), "metadata",
	    json_object_new_object()) < 0)
		goto oom;
	arr = kc_json_arr_of(req, "objects");
	for (size_t i = 0; i < n; i++)
		if (kc_json_append(arr, json_object_get((struct json_object *)(uintptr_t)
		    objs[i])) < 0)
			goto oom;
	*ret = o;
	return 0;
oom:
	if (o != NULL)
		json_object_put(o);
	return -ENOMEM;
}

/* Go's %T of a decoded JSON value. */
static const char *
go_type(const struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_string:	return "string";
	case json_type_int:	return "int64";
	case json_type_double:	return "float64";
	case json_type_boolean:	return "bool";
	case json_type_array:	return "[]interface {}";
	case json_type_object:	return "map[string]interface {}";
	default:		return "<nil>";
	}
}

/* "trainyard.dev/v1alpha1, Kind=Run" of an object, as Go prints a GVK. */
static void
gvk_of(const struct json_object *o, char *buf, size_t size)
{
	errors_textf(buf, size, "%s, Kind=%s", or_empty(kc_json_str(o, "apiVersion")),
	    or_empty(kc_json_str(o, "kind")));
}

/* "trainyard.dev/v1beta1" as Go prints a GroupVersion ("v1" for the core). */
static const char *
gv_of(const struct json_object *o)
{
	return or_empty(kc_json_str(o, "apiVersion"));
}

/* validateConvertedObject: "" when 'out' may stand for 'in'. */
static int
validate_converted(const struct json_object *in, const struct json_object *out, char *err,
    size_t size)
{
	static const char *const fields[][2] = {
		{ "kind", "kind" }, { "name", "name" }, { "namespace", "namespace" },
		{ "uid", "UID" },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(fields); i++) {
		const char *a, *b;

		if (i == 0) {
			a = kc_json_str(in, "kind");
			b = kc_json_str(out, "kind");
		} else {
			a = kc_json_str(in, "metadata", fields[i][0]);
			b = kc_json_str(out, "metadata", fields[i][0]);
		}
		if (strcmp(or_empty(a), or_empty(b)) != 0) {
			errors_textf(err, size, "must have the same %s: %s != %s", fields[i][1],
			    or_empty(a), or_empty(b));
			return -1;
		}
	}
	return 0;
}

/*
 * One of labels and annotations of a converted object, as
 * restoreObjectMeta takes it: 'got' (the webhook's, present) must be a
 * map of strings and, when it differs from 'orig' (the original's, or
 * NULL), pass ValidateLabels or ValidateAnnotations. 0, or -1 with
 * 'err'.
 */
static int
restore_field(const char *fld, const struct json_object *orig, const struct json_object *got,
    char *err, size_t size)
{
	struct dc_errs *errs;
	bool changed;

	if (!json_object_is_type(got, json_type_object)) {
		errors_textf(err, size, "invalid metadata.%s of type %s in converted object", fld,
		    go_type(got));
		return -1;
	}
	if (orig != NULL && !json_object_is_type(orig, json_type_object)) {
		errors_textf(err, size, "invalid metadata.%s of type %s in original object", fld,
		    go_type(orig));
		return -1;
	}
	changed = (orig != NULL ? json_object_object_length(orig) : 0) !=
	    json_object_object_length(got);
	json_object_object_foreach((struct json_object *)(uintptr_t)got, k, v) {
		struct json_object *was = orig != NULL ? kc_json_get(orig, k) : NULL;

		if (!json_object_is_type(v, json_type_string)) {
			errors_textf(err, size, "metadata.%s[%s] must be a string, but is %s in "
			    "converted object", fld, k, go_type(v));
			return -1;
		}
		if (!json_object_is_type(was, json_type_string) ||
		    strcmp(json_object_get_string(was), json_object_get_string(v)) != 0)
			changed = true;
	}
	if (!changed)
		return 0;
	if ((errs = kc_calloc(1, sizeof(*errs))) == NULL)
		return -ENOMEM;
	/* upstream validates annotations at "metadata.annotation" */
	if (strcmp(fld, "labels") == 0)
		builtin_validate_labels(got, "metadata.labels", errs);
	else
		builtin_validate_annotations(got, "metadata.annotation", errs);
	if (errs->n > 0) {
		errs_string(errs, err, size);
		kc_free(errs);
		return -1;
	}
	kc_free(errs);
	return 0;
}

/*
 * restoreObjectMeta: 'out''s metadata becomes a copy of 'in''s, except
 * labels and annotations, which keep 'out''s (checked by
 * restore_field()). 0, -1 with 'err', -ENOMEM.
 */
static int
restore_meta(const struct json_object *in, struct json_object *out, char *err, size_t size)
{
	static const char *const fields[] = { "labels", "annotations" };
	struct json_object *rmeta = kc_json_get(out, "metadata"), *meta;
	int r = 0;

	if (rmeta == NULL && !json_object_object_get_ex(out, "metadata", NULL)) {
		errors_textf(err, size, "missing metadata in converted object");
		return -1;
	}
	if (!json_object_is_type(rmeta, json_type_object)) {
		errors_textf(err, size, "invalid metadata of type %s in converted object",
		    go_type(rmeta));
		return -1;
	}
	json_object_get(rmeta);
	meta = kc_json_get(in, "metadata") != NULL ? kc_json_copy(kc_json_get(in, "metadata")) :
	    json_object_new_object();
	if (meta == NULL || kc_json_put(out, "metadata", meta) < 0) {
		json_object_put(rmeta);
		return -ENOMEM;
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(fields) && r == 0; i++) {
		struct json_object *v = kc_json_get(rmeta, fields[i]);

		if (v == NULL) {
			json_object_object_del(meta, fields[i]);
			continue;
		}
		if ((r = restore_field(fields[i], kc_json_get(meta, fields[i]), v, err,
		    size)) == 0 && kc_json_put(meta, fields[i], kc_json_copy(v)) < 0)
			r = -ENOMEM;
	}
	json_object_put(rmeta);
	return r;
}

int
convwebhook_check(const char *review_version, const char *uid, const char *desired,
    const char *body, size_t len, const struct json_object *const *objs, size_t n,
    struct json_object ***ret, char *err, size_t err_size)
{
	struct json_object *review = NULL, *resp, **out = NULL;
	const struct json_object *conv;
	struct kc_status st = { 0 };
	char gvk[2 * DC_SEGMENT_MAX + 16], want[64], got[2 * DC_SEGMENT_MAX + 16], why[512];
	const char *status, *msg;
	size_t nconv;
	int r = KC_EINTERNAL;

	gvk_of(objs[0], gvk, sizeof(gvk));
	if (kc_json_parse(body, len, &review, &st) < 0 ||
	    !json_object_is_type(review, json_type_object)) {
		errors_textf(err, err_size, "conversion webhook for %s failed: %s", gvk,
		    st.message[0] != '\0' ? st.message : "the response is not a JSON object");
		goto out;
	}
	errors_textf(want, sizeof(want), REVIEW_GROUP "/%s, Kind=ConversionReview",
	    review_version);
	gvk_of(review, got, sizeof(got));
	if (strcmp(want, got) != 0) {
		errors_textf(err, err_size, "conversion webhook for %s failed: expected webhook "
		    "response of %s, got %s", gvk, want, got);
		goto out;
	}
	if (!json_object_is_type((resp = kc_json_get(review, "response")), json_type_object)) {
		errors_textf(err, err_size, "conversion webhook for %s failed: no response "
		    "provided", gvk);
		goto out;
	}
	if (strcmp(or_empty(kc_json_str(resp, "uid")), uid) != 0) {
		errors_textf(err, err_size, "conversion webhook for %s failed: expected "
		    "response.uid=\"%s\", got \"%s\"", gvk, uid,
		    or_empty(kc_json_str(resp, "uid")));
		goto out;
	}
	status = or_empty(kc_json_str(resp, "result", "status"));
	if (strcmp(status, "Success") != 0) {
		msg = kc_json_str(resp, "result", "message");
		if (msg != NULL && msg[0] != '\0')
			errors_textf(err, err_size, "conversion webhook for %s failed: %s", gvk,
			    msg);
		else
			errors_textf(err, err_size, "conversion webhook for %s failed: "
			    "response.result.status was '%s', not 'Success'", gvk, status);
		goto out;
	}
	conv = kc_json_get(resp, "convertedObjects");
	nconv = json_object_is_type(conv, json_type_array) ? json_object_array_length(conv) : 0;
	if (nconv != n) {
		errors_textf(err, err_size, "conversion webhook for %s returned %zu objects, "
		    "expected %zu", gvk, nconv, n);
		goto out;
	}
	if ((out = kc_calloc(n, sizeof(*out))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct json_object *c = json_object_array_get_idx(conv, i);
		const char *what = n == 1 ? "invalid object" : "invalid converted object";
		char at[48];

		if (n == 1)
			errors_textf(at, sizeof(at), " at index 0");
		else
			errors_textf(at, sizeof(at), " at index %zu", i + 1);
		if (!json_object_is_type(c, json_type_object)) {
			errors_textf(err, err_size, "conversion webhook for %s returned %s at "
			    "index %zu: Object 'Kind' is missing in value of type %s", gvk, what, i,
			    go_type(c));
			goto out;
		}
		if (strcmp(gv_of(c), desired) != 0) {
			errors_textf(err, err_size, "conversion webhook for %s returned %s%s: "
			    "invalid groupVersion (expected %s, received %s)", gvk, what, at,
			    desired, gv_of(c));
			goto out;
		}
		if (strcmp(or_empty(kc_json_str(c, "kind")),
		    or_empty(kc_json_str(objs[i], "kind"))) != 0) {
			errors_textf(err, err_size, "conversion webhook for %s returned %s%s: "
			    "invalid kind (expected %s, received %s)", gvk, what, at,
			    or_empty(kc_json_str(objs[i], "kind")),
			    or_empty(kc_json_str(c, "kind")));
			goto out;
		}
		if (validate_converted(objs[i], c, why, sizeof(why)) < 0) {
			if (n == 1)
				errors_textf(err, err_size, "conversion webhook for %s returned "
				    "invalid object: %s", gvk, why);
			else
				errors_textf(err, err_size, "conversion webhook for %s returned "
				    "invalid converted object at index %zu: %s", gvk, i + 1, why);
			goto out;
		}
		if ((out[i] = kc_json_copy(c)) == NULL) {
			r = -ENOMEM;
			goto out;
		}
		if ((r = restore_meta(objs[i], out[i], why, sizeof(why))) != 0) {
			if (r == -ENOMEM)
				goto out;
			r = KC_EINTERNAL;
			if (n == 1)
				errors_textf(err, err_size, "conversion webhook for %s returned "
				    "invalid metadata: %s", gvk, why);
			else
				errors_textf(err, err_size, "conversion webhook for %s returned "
				    "invalid metadata in object at index %zu: %s", gvk, i + 1, why);
			goto out;
		}
	}
	*ret = out;
	out = NULL;
	r = 0;
out:
	objs_free(out, n);
	if (review != NULL)
		json_object_put(review);
	return r;
}

/*
 * The cache of answers
 */

static void
entry_free(struct cw_state *s, struct entry *e)
{
	kc_hmap_del(&s->map, &e->h);
	TAILQ_REMOVE(&s->entries, e, link);
	s->nentries--;
	if (e->used)
		s->nused--;
	if (e->obj != NULL)
		json_object_put(e->obj);
	kc_free(e->error);
	kc_free(e);
}

/* Drops answers past their time and past the cap, oldest first. */
static void
entries_expire(struct cw_state *s, uint64_t now)
{
	struct entry *e;

	while ((e = TAILQ_FIRST(&s->entries)) != NULL) {
		if (s->nentries < CONVWEBHOOK_CACHE_MAX && e->error == NULL &&
		    now - e->born_ms < CONVWEBHOOK_FRESH_MS)
			break;
		if (e->error != NULL && !e->used && s->nentries < CONVWEBHOOK_CACHE_MAX)
			break;
		entry_free(s, e);
	}
}

/* Keeps an answer ('obj' consumed, or 'error'); 0 or -ENOMEM. */
static int
entry_put(struct cw_state *s, const char *key, struct json_object *obj, const char *error)
{
	struct entry *e = (struct entry *)kc_hmap_get(&s->map, key);
	size_t klen = strlen(key);

	if (e != NULL)
		entry_free(s, e);
	if ((e = kc_calloc(1, sizeof(*e) + klen + 1)) == NULL ||
	    (error != NULL && (e->error = kc_strdup(error)) == NULL)) {
		kc_free(e);
		if (obj != NULL)
			json_object_put(obj);
		return -ENOMEM;
	}
	memcpy(e->key, key, klen + 1);
	e->h.key = e->key;
	e->obj = obj;
	e->born_ms = kc_clock_now_ms();
	if (kc_hmap_put(&s->map, &e->h) < 0) {
		if (obj != NULL)
			json_object_put(obj);
		kc_free(e->error);
		kc_free(e);
		return -ENOMEM;
	}
	TAILQ_INSERT_TAIL(&s->entries, e, link);
	s->nentries++;
	return 0;
}

/* The key of 'obj' in 'desired' (raw or not): 0, or -ENOMEM. */
static int
key_of(const struct json_object *obj, const char *desired, bool raw, char *key, size_t size)
{
	size_t len;
	char *text = kc_json_dump(obj, &len);
	uint64_t h;

	if (text == NULL)
		return -ENOMEM;
	h = kc_fnv1a64(KC_FNV1A64_INIT, text, len);
	kc_free(text);
	errors_textf(key, size, "%016" PRIx64 ":%zu:%s%s", h, len, raw ? "raw:" : "", desired);
	return 0;
}

/*
 * Batches and calls
 */

static void
batch_free(struct batch *b)
{
	if (b == NULL)
		return;
	whcall_clear(&b->call);
	for (size_t i = 0; i < b->n; i++) {
		json_object_put(b->objs[i]);
		kc_free(b->keys[i]);
	}
	kc_free(b->objs);
	kc_free(b->keys);
	if (b->crd != NULL)
		json_object_put(b->crd);
	kc_free(b->desired);
	kc_free(b);
}

/* Every object of 'b' fails with 'msg'. */
static void
batch_fail(struct cw_state *s, struct batch *b, const char *msg)
{
	for (size_t i = 0; i < b->n; i++)
		(void)entry_put(s, b->keys[i], NULL, msg);
}

static int
batch_add(struct cw_state *s, const struct json_object *crd, const char *desired, bool raw,
    const struct json_object *obj, const char *key)
{
	struct batch *b;
	const char *name = kc_json_str(crd, "metadata", "name");

	for (b = TAILQ_FIRST(&s->waiting); b != NULL; b = TAILQ_NEXT(b, link))
		if (str_eq(b->desired, desired) && b->raw == raw &&
		    str_eq(kc_json_str(b->crd, "metadata", "name"), name))
			break;
	if (b == NULL) {
		if ((b = kc_calloc(1, sizeof(*b))) == NULL)
			return -ENOMEM;
		b->seq = whcall_seq(s->dc);
		b->crd = json_object_get((struct json_object *)(uintptr_t)crd);
		b->raw = raw;
		if ((b->desired = kc_strdup(desired)) == NULL) {
			batch_free(b);
			return -ENOMEM;
		}
		TAILQ_INSERT_TAIL(&s->waiting, b, link);
	}
	whcall_wait_for(s->dc, b->seq);
	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->keys[i], key) == 0)
			return 0;
	if (b->n == b->cap) {
		size_t cap = b->cap == 0 ? 8 : b->cap * 2;
		struct json_object **o = kc_realloc(b->objs, cap * sizeof(*o));
		char **k;

		if (o == NULL)
			return -ENOMEM;
		b->objs = o;
		if ((k = kc_realloc(b->keys, cap * sizeof(*k))) == NULL)
			return -ENOMEM;
		b->keys = k;
		b->cap = cap;
	}
	if ((b->keys[b->n] = kc_strdup(key)) == NULL)
		return -ENOMEM;
	b->objs[b->n++] = json_object_get((struct json_object *)(uintptr_t)obj);
	timer_arm(&s->send_timer, 0);
	return 0;
}

static whcall_done_fn call_done;

/* Sends 'b': 0 when under way, or it failed at once (its objects failed). */
static int
batch_send(struct cw_state *s, struct batch *b)
{
	struct json_object *review = NULL;
	struct kc_status st = { 0 };
	char why[512] = "", msg[1024], gvk[2 * DC_SEGMENT_MAX + 16];
	const char *rv = convwebhook_review_version(b->crd);
	char *body;
	size_t len;
	int r;

	gvk_of(b->objs[0], gvk, sizeof(gvk));
	if (rv == NULL) {
		errors_textf(msg, sizeof(msg), "conversion webhook for %s failed: webhook does "
		    "not accept v1 or v1beta1 ConversionReview", gvk);
		batch_fail(s, b, msg);
		return 0;
	}
	(void)kc_strlcpy(b->review_version, rv, sizeof(b->review_version));
	api_uuid(b->uid);
	if (s->dc->hooks.conv_fault != NULL)
		s->dc->hooks.conv_fault(s->dc, or_empty(kc_json_str(b->crd, "metadata", "name")),
		    &b->fault);
	b->call.hold_until_ms = kc_clock_now_ms() + b->fault.delay_ms;
	if ((r = whcall_resolve(s->dc, &b->call, kc_json_get(b->crd, "spec", "conversion",
	    "webhook", "clientConfig"), CONVWEBHOOK_TIMEOUT_MS / 1000, why,
	    sizeof(why))) == -ENOMEM)
		return r;
	if (r == 0 && b->fault.wrong == DC_CONV_UNREACHABLE) {
		errors_textf(why, sizeof(why), "dial tcp %s: connect: connection refused "
		    "(injected)", b->call.connect[0] != '\0' ? b->call.connect :
		    b->call.rc.server + strlen("https://"));
		r = KC_EINTERNAL;
	}
	if (r < 0) {
		errors_textf(msg, sizeof(msg), "conversion webhook for %s failed: Post \"%s\": %s",
		    gvk, b->call.url, why);
		batch_fail(s, b, msg);
		return 0;
	}
	if ((r = convwebhook_review(rv, b->uid, b->desired,
	    (const struct json_object *const *)b->objs, b->n, &review)) < 0)
		return r;
	body = kc_json_dump(review, &len);
	json_object_put(review);
	if (body == NULL)
		return -ENOMEM;
	b->call.seq = b->seq;
	if ((r = whcall_start(&s->run, &b->call, body, len, CONVWEBHOOK_TIMEOUT_MS,
	    CONVWEBHOOK_RESP_MAX, call_done, s, &st)) < 0) {
		if (r == -ENOMEM)
			return r;
		errors_textf(msg, sizeof(msg), "conversion webhook for %s failed: Post \"%s\": %s",
		    gvk, b->call.url, st.message);
		batch_fail(s, b, msg);
		return 0;
	}
	TAILQ_REMOVE(&s->waiting, b, link);
	TAILQ_INSERT_TAIL(&s->running, b, link);
	return 1;
}

/*
 * An injected wrong answer: the webhook's answer in b->resp with a bad
 * uid, one object fewer, or its first object renamed. 0 or -ENOMEM; an
 * answer that is not a review is left for the checks.
 */
static int
answer_break(struct batch *b)
{
	struct json_object *review = NULL, *objs, *first, *labels;
	char *text;
	size_t len;

	if (b->call.resp.body.data == NULL ||
	    kc_json_parse(b->call.resp.body.data, b->call.resp.body.len, &review, NULL) < 0)
		return 0;
	objs = kc_json_get(review, "response", "convertedObjects");
	first = json_object_is_type(objs, json_type_array) ?
	    json_object_array_get_idx(objs, 0) : NULL;
	if (b->fault.wrong == DC_CONV_BAD_UID && kc_json_get(review, "response") != NULL &&
	    kc_json_set_str(kc_json_get(review, "response"), "uid", "injected-bad-uid") < 0)
		goto oom;
	if (b->fault.wrong == DC_CONV_WRONG_COUNT && first != NULL)
		(void)json_object_array_del_idx(objs, json_object_array_length(objs) - 1, 1);
	if (b->fault.wrong == DC_CONV_RENAME && kc_json_get(first, "metadata") != NULL &&
	    kc_json_set_str(kc_json_get(first, "metadata"), "name", "injected-rename") < 0)
		goto oom;
	if (b->fault.wrong == DC_CONV_BAD_LABELS && kc_json_get(first, "metadata") != NULL &&
	    ((labels = kc_json_ensure_obj(kc_json_get(first, "metadata"), "labels")) == NULL ||
	    kc_json_set_str(labels, INJECTED_LABEL, "x") < 0))
		goto oom;
	if ((text = kc_json_dump(review, &len)) == NULL)
		goto oom;
	json_object_put(review);
	kc_buf_reset(&b->call.resp.body);
	if (kc_buf_append(&b->call.resp.body, text, len) < 0) {
		kc_free(text);
		return -ENOMEM;
	}
	kc_free(text);
	return 0;
oom:
	json_object_put(review);
	return -ENOMEM;
}

/* The answer to 'b' arrived (r 0, in b->call.resp) or the call failed. */
static void
batch_done(struct cw_state *s, struct batch *b, int r, const struct kc_status *st)
{
	const struct json_object *tschema;
	struct json_object **out = NULL;
	char msg[1024], gvk[2 * DC_SEGMENT_MAX + 16];
	const char *slash = strchr(b->desired, '/');

	gvk_of(b->objs[0], gvk, sizeof(gvk));
	if (r < 0) {
		errors_textf(msg, sizeof(msg), "conversion webhook for %s failed: Post \"%s\": %s",
		    gvk, b->call.url, st->message[0] != '\0' ? st->message : kc_strerror(r));
		batch_fail(s, b, msg);
		return;
	}
	if (b->call.resp.status < 200 || b->call.resp.status > 299) {
		errors_textf(msg, sizeof(msg), "conversion webhook for %s failed: the server "
		    "responded with the status code %d but did not return more information", gvk,
		    b->call.resp.status);
		batch_fail(s, b, msg);
		return;
	}
	if (b->fault.wrong != DC_CONV_RIGHT && (r = answer_break(b)) < 0) {
		errors_textf(msg, sizeof(msg), "conversion webhook for %s failed: %s", gvk,
		    kc_strerror(r));
		batch_fail(s, b, msg);
		return;
	}
	r = convwebhook_check(b->review_version, b->uid, b->desired,
	    b->call.resp.body.data != NULL ? b->call.resp.body.data : "", b->call.resp.body.len,
	    (const struct json_object *const *)b->objs, b->n, &out, msg, sizeof(msg));
	if (r == -ENOMEM) {
		errors_textf(msg, sizeof(msg), "conversion webhook for %s failed: %s", gvk,
		    kc_strerror(r));
		batch_fail(s, b, msg);
		return;
	}
	if (r < 0) {
		batch_fail(s, b, msg);
		return;
	}
	tschema = slash != NULL && !b->raw ? schema_crd_version_schema(b->crd, slash + 1) :
	    NULL;
	for (size_t i = 0; i < b->n; i++) {
		if (tschema != NULL && (schema_prune(tschema, out[i], NULL) < 0 ||
		    schema_default(tschema, out[i]) < 0)) {
			errors_textf(msg, sizeof(msg), "conversion webhook for %s failed: %s",
			    gvk, kc_strerror(-ENOMEM));
			(void)entry_put(s, b->keys[i], NULL, msg);
			continue;
		}
		(void)entry_put(s, b->keys[i], out[i], NULL);
		out[i] = NULL;
	}
	objs_free(out, b->n);
}

static int64_t
send_due(void *arg)
{
	struct cw_state *s = arg;
	struct batch *b;
	bool failed = false;

	while ((b = TAILQ_FIRST(&s->waiting)) != NULL) {
		int r = batch_send(s, b);

		if (r == 1)
			continue;
		if (r < 0)
			batch_fail(s, b, "conversion webhook failed: out of memory");
		TAILQ_REMOVE(&s->waiting, b, link);
		batch_free(b);
		failed = true;
	}
	if (failed && s->dc->hub != NULL)
		watchhub_conversions_done(s->dc->hub);
	return DC_TIMER_STOP;
}

/* A call ended: its objects' answers are kept, and the watchers waiting try again. */
static void
call_done(void *arg, struct whcall *c, int r, const struct kc_status *st)
{
	struct cw_state *s = arg;
	struct batch *b = (struct batch *)(void *)((char *)c - offsetof(struct batch, call));

	batch_done(s, b, r, st);
	TAILQ_REMOVE(&s->running, b, link);
	batch_free(b);
	if (s->dc->hub != NULL)
		watchhub_conversions_done(s->dc->hub);
}

/*
 * The hook
 */

static int
cw_convert(struct dc *dc, const struct json_object *crd, const struct json_object *obj,
    const char *api_version, bool raw, struct json_object **ret)
{
	struct cw_state *s = state(dc);
	struct entry *e;
	char key[KEY_MAX];
	int r;

	if (s == NULL)
		return KC_EINTERNAL;
	entries_expire(s, kc_clock_now_ms());
	if ((r = key_of(obj, api_version, raw, key, sizeof(key))) < 0)
		return r;
	/* A request's first pass always asks the webhook, as kube-apiserver does. */
	if (dc->conv_again && (e = (struct entry *)kc_hmap_get(&s->map, key)) != NULL) {
		if (e->error != NULL) {
			if (!e->used)
				s->nused++;
			e->used = true;
			(void)kc_strlcpy(dc->conv_error, e->error, sizeof(dc->conv_error));
			return KC_EINTERNAL;
		}
		if ((*ret = kc_json_copy(e->obj)) == NULL)
			return -ENOMEM;
		return 0;
	}
	if ((r = batch_add(s, crd, api_version, raw, obj, key)) < 0)
		return r;
	dc->conv_pending = true;
	return -EINPROGRESS;
}

/*
 * The plug-in
 */

/* Whether a call of 'list' is one 'req' waits for. */
static bool
batch_waited(const struct batch_list *list, const struct dc_req *req)
{
	const struct batch *b;

	TAILQ_FOREACH(b, list, link)
		if (b->seq >= req->conv_lo && b->seq <= req->conv_hi)
			return true;
	return false;
}

/* A request answered again is held while the calls it asked for run. */
static uint64_t
cw_hold_ms(struct dc *dc, const struct dc_req *req)
{
	struct cw_state *s = state(dc);

	if (!req->redo || s == NULL)
		return 0;
	if (batch_waited(&s->waiting, req) ||
	    whrun_waited(&s->run, req->conv_lo, req->conv_hi))
		return WHCALL_POLL_MS;
	return 0;
}

/* A request was answered: the failures it was given are forgotten. */
static uint64_t
cw_after(struct dc *dc, const struct dc_req *req, const struct dc_resp *resp)
{
	struct cw_state *s = state(dc);
	struct entry *e, *next;

	(void)req;
	(void)resp;
	if (s == NULL || s->nused == 0)
		return 0;
	for (e = TAILQ_FIRST(&s->entries); e != NULL && s->nused > 0; e = next) {
		next = TAILQ_NEXT(e, link);
		if (e->error != NULL && e->used)
			entry_free(s, e);
	}
	return 0;
}

static void
cw_fini(struct dc *dc)
{
	struct cw_state *s = state(dc);
	struct batch *b;
	struct entry *e;

	if (s == NULL)
		return;
	timer_cancel(&s->send_timer);
	whrun_fini(&s->run);
	while ((b = TAILQ_FIRST(&s->waiting)) != NULL) {
		TAILQ_REMOVE(&s->waiting, b, link);
		batch_free(b);
	}
	while ((b = TAILQ_FIRST(&s->running)) != NULL) {
		TAILQ_REMOVE(&s->running, b, link);
		batch_free(b);
	}
	while ((e = TAILQ_FIRST(&s->entries)) != NULL)
		entry_free(s, e);
	kc_hmap_free(&s->map);
	if (dc->hooks.convert == cw_convert)
		dc->hooks.convert = NULL;
	kc_free(s);
	plugin_set_state(dc, &convwebhook_plugin, NULL);
}

static int
cw_init(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	struct cw_state *s;

	(void)cfg;
	(void)st;
	if ((s = kc_calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	s->dc = dc;
	s->map = (struct kc_hmap)KC_HMAP_INIT;
	TAILQ_INIT(&s->entries);
	TAILQ_INIT(&s->waiting);
	TAILQ_INIT(&s->running);
	timer_init(&s->send_timer, dc, send_due, s);
	whrun_init(&s->run, dc);
	dc->hooks.convert = cw_convert;
	plugin_set_state(dc, &convwebhook_plugin, s);
	return 0;
}

const struct dc_plugin convwebhook_plugin = {
	.name = "convwebhook",
	.init = cw_init,
	.fini = cw_fini,
	.hold_ms = cw_hold_ms,
	.after = cw_after,
};

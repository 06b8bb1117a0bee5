/*
 * review.c: the ConversionReview handler behind POST /convert.
 *
 * kube-apiserver sends a ConversionReview whose request carries a uid,
 * the desiredAPIVersion and the objects to convert (any mix of stored
 * versions), in the first review version of the CRD's
 * conversionReviewVersions this webhook supports: apiextensions.k8s.io/v1
 * or v1beta1, which have the same shape. It checks the answer's kind,
 * apiVersion, uid, result and object count, so the answer keeps the
 * request's apiVersion and uid and the objects their order.
 *
 * Two kinds of failure, as kube-apiserver and controller-runtime draw the
 * line: a body that is not a ConversionReview at all gets HTTP 400 and a
 * plain-text reason; a review whose objects cannot be converted gets 200
 * with response.result {status: Failure, message}, the message naming
 * the object (its index, namespace/name, apiVersion and kind) and the
 * field the converter rejected. kube-apiserver then fails the client's
 * request with "conversion webhook for ... failed: MESSAGE". A review
 * converts all its objects or none.
 *
 * Bounds: REVIEW_BODY_MAX bytes in (413 past it), KC_JSON_DEPTH_MAX
 * levels of nesting (kc_json_parse()), REVIEW_OBJECTS_MAX objects, and
 * REVIEW_FIELD_MAX bytes of uid and desiredAPIVersion.
 *
 * Pure: no I/O, no clock, no globals; thread-safe.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/json.h>
#include <kc/sbuf.h>
#include <kc/str.h>

#include "webhook.h"

#define GROUP		"apiextensions.k8s.io/"
#define RUN_ALPHA	"trainyard.dev/v1alpha1"
#define RUN_BETA	"trainyard.dev/v1beta1"

static const char *const review_versions[] = { "v1", "v1beta1", NULL };

/* A 400: the reason as plain text in 'out'. */
static int
bad_request(struct kc_buf *out, struct review_info *info, const char *fmt,
    const char *arg)
{
	char msg[512];
	int r;

	(void)snprintf(msg, sizeof(msg), fmt, arg != NULL ? arg : "");
	if (info != NULL) {
		info->result = "invalid";
		(void)kc_strlcpy(info->message, msg, sizeof(info->message));
	}
	kc_buf_reset(out);
	if ((r = kc_buf_printf(out, "%s\n", msg)) < 0)
		return r;
	return 400;
}

/* A string field of at most REVIEW_FIELD_MAX - 1 bytes, non-empty; or NULL. */
static const char *
short_str(const struct json_object *o, const char *key)
{
	struct json_object *v;
	size_t n;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	n = (size_t)json_object_get_string_len(v);
	if (n == 0 || n >= REVIEW_FIELD_MAX)
		return NULL;
	return json_object_get_string(v);
}

/* "ns/name" or "name" of an object, for messages; "(unnamed)" without one. */
static void
object_ref(const struct json_object *obj, char *buf, size_t size)
{
	const char *ns = kc_json_str(obj, "metadata", "namespace");
	const char *name = kc_json_str(obj, "metadata", "name");
	struct kc_sbuf sb;

	kc_sbuf_init(&sb, buf, size);
	if (ns != NULL && *ns != '\0') {
		kc_sbuf_puts(&sb, ns);
		kc_sbuf_putc(&sb, '/');
	}
	kc_sbuf_puts(&sb, name != NULL && *name != '\0' ? name : "(unnamed)");
}

/*
 * Converts every object of 'objects' into a new array '*ret', or fills
 * 'msg' with the first failure and returns KC_EINVALID.
 */
static int
convert_all(struct json_object *objects, const char *to, review_convert_fn *convert,
    struct json_object **ret, char *msg, size_t size)
{
	_cleanup_(kc_json_putp) struct json_object *arr = NULL;
	size_t n = json_object_array_length(objects);
	int r;

	if ((arr = json_object_new_array_ext((int)n)) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct json_object *obj = json_object_array_get_idx(objects, i);
		struct json_object *conv = NULL;
		struct kc_status st = { 0 };
		const char *av, *kind;
		char ref[300];

		if (!json_object_is_type(obj, json_type_object)) {
			(void)snprintf(msg, size, "objects[%zu]: not an object", i);
			return KC_EINVALID;
		}
		object_ref(obj, ref, sizeof(ref));
		av = kc_json_str(obj, "apiVersion");
		kind = kc_json_str(obj, "kind");
		if ((r = convert(obj, to, &conv, &st)) < 0) {
			if (r == -ENOMEM)
				return r;
			(void)snprintf(msg, size, "converting objects[%zu] (%s %s %s) to %s: %s",
			    i, kind != NULL ? kind : "(no kind)", ref,
			    av != NULL ? av : "(no apiVersion)", to,
			    st.message[0] != '\0' ? st.message : kc_strerror(r));
			return KC_EINVALID;
		}
		if (conv == NULL) {
			(void)snprintf(msg, size, "converting objects[%zu] (%s): no result", i,
			    ref);
			return KC_EINVALID;
		}
		if (json_object_array_add(arr, conv) != 0) {
			json_object_put(conv);
			return -ENOMEM;
		}
	}
	*ret = arr;
	arr = NULL;
	return 0;
}

int
review_handle(const char *body, size_t len, review_convert_fn *convert,
    struct kc_buf *out, struct review_info *info)
{
	_cleanup_(kc_json_putp) struct json_object *in = NULL, *ans = NULL, *conv = NULL;
	struct json_object *req, *objects, *resp, *result;
	struct kc_status st = { 0 };
	const char *av, *kind, *uid, *to, *ver = NULL;
	char msg[1024];
	_cleanup_(kc_freep) char *text = NULL;
	size_t tlen;
	int r;

	if (info != NULL)
		*info = (struct review_info){ .version = "unknown", .result = "invalid" };
	if (len > REVIEW_BODY_MAX) {
		kc_buf_reset(out);
		if (info != NULL)
			(void)snprintf(info->message, sizeof(info->message),
			    "request body larger than %u bytes", REVIEW_BODY_MAX);
		if ((r = kc_buf_printf(out, "request body larger than %u bytes\n",
		    REVIEW_BODY_MAX)) < 0)
			return r;
		return 413;
	}
	if ((r = kc_json_parse(body, len, &in, &st)) < 0) {
		if (r == -ENOMEM)
			return r;
		return bad_request(out, info, "not a ConversionReview: %s", st.message);
	}
	if (!json_object_is_type(in, json_type_object))
		return bad_request(out, info, "not a ConversionReview: %s",
		    "the body is not a JSON object");
	kind = kc_json_str(in, "kind");
	av = kc_json_str(in, "apiVersion");
	if (kind == NULL || strcmp(kind, "ConversionReview") != 0)
		return bad_request(out, info, "not a ConversionReview: kind %s",
		    kind != NULL ? kind : "missing");
	if (av != NULL && strncmp(av, GROUP, strlen(GROUP)) == 0)
		for (size_t i = 0; review_versions[i] != NULL; i++)
			if (strcmp(av + strlen(GROUP), review_versions[i]) == 0)
				ver = review_versions[i];
	if (ver == NULL)
		return bad_request(out, info, "unsupported ConversionReview apiVersion %s "
		    "(want apiextensions.k8s.io/v1 or v1beta1)", av != NULL ? av : "(missing)");
	if (info != NULL)
		info->version = ver;
	if ((req = kc_json_obj_of(in, "request")) == NULL)
		return bad_request(out, info, "ConversionReview: %s",
		    "request: required, an object");
	if ((uid = short_str(req, "uid")) == NULL)
		return bad_request(out, info, "ConversionReview: %s",
		    "request.uid: required, a string of 1 to 255 bytes");
	if ((to = short_str(req, "desiredAPIVersion")) == NULL)
		return bad_request(out, info, "ConversionReview: %s",
		    "request.desiredAPIVersion: required, a string of 1 to 255 bytes");
	if ((objects = kc_json_arr_of(req, "objects")) == NULL)
		return bad_request(out, info, "ConversionReview: %s",
		    "request.objects: required, a list");
	if (info != NULL) {
		info->objects = json_object_array_length(objects);
		(void)kc_strlcpy(info->to, to, sizeof(info->to));
	}

	msg[0] = '\0';
	if (json_object_array_length(objects) > REVIEW_OBJECTS_MAX) {
		(void)snprintf(msg, sizeof(msg), "%zu objects in one review (at most %d)",
		    json_object_array_length(objects), REVIEW_OBJECTS_MAX);
		r = KC_EINVALID;
	} else {
		r = convert_all(objects, to, convert, &conv, msg, sizeof(msg));
	}
	if (r < 0 && r != KC_EINVALID)
		return r;

	if ((ans = json_object_new_object()) == NULL ||
	    kc_json_set_str(ans, "apiVersion", av) < 0 ||
	    kc_json_set_str(ans, "kind", "ConversionReview") < 0 ||
	    (resp = json_object_new_object()) == NULL)
		return -ENOMEM;
	if (kc_json_put(ans, "response", resp) < 0 || kc_json_set_str(resp, "uid", uid) < 0)
		return -ENOMEM;
	if ((result = json_object_new_object()) == NULL ||
	    kc_json_put(resp, "result", result) < 0)
		return -ENOMEM;
	if (r == KC_EINVALID) {
		if (kc_json_set_str(result, "status", "Failure") < 0 ||
		    kc_json_set_str(result, "message", msg) < 0)
			return -ENOMEM;
	} else {
		struct json_object *objs = conv;

		conv = NULL;		/* kc_json_put() takes it, even on failure */
		if (kc_json_put(resp, "convertedObjects", objs) < 0 ||
		    kc_json_set_str(result, "status", "Success") < 0)
			return -ENOMEM;
	}
	if ((text = kc_json_dump(ans, &tlen)) == NULL)
		return -ENOMEM;
	kc_buf_reset(out);
	if ((r = kc_buf_append(out, text, tlen)) < 0)
		return r;
	if (info != NULL) {
		info->result = msg[0] != '\0' ? "failure" : "success";
		(void)kc_strlcpy(info->message, msg, sizeof(info->message));
	}
	return 200;
}

/* The built-in Run of the self-test: every field conversion moves. */
static const char selftest_run[] =
    "{\"apiVersion\":\"" RUN_ALPHA "\",\"kind\":\"Run\","
    "\"metadata\":{\"name\":\"selftest\",\"namespace\":\"trainyard-system\","
    "\"uid\":\"00000000-0000-0000-0000-000000000001\",\"resourceVersion\":\"1\","
    "\"labels\":{\"app\":\"selftest\"},\"annotations\":{\"note\":\"x\"}},"
    "\"spec\":{\"nodes\":2,\"image\":\"busybox:1.36\",\"command\":[\"sh\",\"-c\"],"
    "\"args\":[\"true\"],\"env\":[{\"name\":\"A\",\"value\":\"1\"}],"
    "\"workingDir\":\"/w\",\"restartPolicy\":\"OnFailure\",\"maxRestarts\":3,"
    "\"activeDeadlineSeconds\":3600,\"scheduleTimeoutSeconds\":600,"
    "\"resources\":{\"limits\":{\"cpu\":\"1\"}}},"
    "\"status\":{\"phase\":\"Running\"}}";

/* One trip of 'obj' to 'to' through review_handle(); the object back. */
static int
selftest_trip(review_convert_fn *convert, struct json_object *obj, const char *to,
    struct json_object **ret, struct kc_status *st)
{
	_cleanup_(kc_json_putp) struct json_object *req = NULL, *ans = NULL;
	_cleanup_(kc_freep) char *text = NULL;
	struct json_object *objs, *r0, *rq;
	struct kc_buf out;
	const char *status;
	size_t len;
	int r;

	if ((req = json_object_new_object()) == NULL || (rq = json_object_new_object()) == NULL)
		return -ENOMEM;
	if (kc_json_put(req, "request", rq) < 0 ||
	    (objs = json_object_new_array()) == NULL || kc_json_put(rq, "objects", objs) < 0 ||
	    kc_json_append(objs, json_object_get(obj)) < 0 ||
	    kc_json_set_str(req, "apiVersion", GROUP "v1") < 0 ||
	    kc_json_set_str(req, "kind", "ConversionReview") < 0 ||
	    kc_json_set_str(rq, "uid", "selftest") < 0 ||
	    kc_json_set_str(rq, "desiredAPIVersion", to) < 0 ||
	    (text = kc_json_dump(req, &len)) == NULL)
		return -ENOMEM;
	kc_buf_init(&out, REVIEW_ANSWER_MAX);
	r = review_handle(text, len, convert, &out, NULL);
	if (r == 200)
		r = kc_json_parse(out.data, out.len, &ans, st);
	else if (r > 0)
		r = kc_status_set(st, KC_EINVALID, "self-test: HTTP %d: %s", r, kc_buf_str(&out));
	kc_buf_free(&out);
	if (r < 0)
		return r;
	status = kc_json_str(ans, "response", "result", "status");
	if (status == NULL || strcmp(status, "Success") != 0)
		return kc_status_set(st, KC_EINVALID, "self-test: converting to %s: %s", to,
		    kc_json_str(ans, "response", "result", "message") != NULL ?
		    kc_json_str(ans, "response", "result", "message") : "no result");
	objs = kc_json_arr_of(kc_json_obj_of(ans, "response"), "convertedObjects");
	if (objs == NULL || json_object_array_length(objs) != 1 ||
	    (r0 = json_object_array_get_idx(objs, 0)) == NULL)
		return kc_status_set(st, KC_EINVALID, "self-test: converting to %s: "
		    "not one object back", to);
	if (kc_json_str(r0, "apiVersion") == NULL ||
	    strcmp(kc_json_str(r0, "apiVersion"), to) != 0)
		return kc_status_set(st, KC_EINVALID, "self-test: converting to %s gave "
		    "apiVersion %s", to, kc_json_str(r0, "apiVersion") != NULL ?
		    kc_json_str(r0, "apiVersion") : "(none)");
	*ret = json_object_get(r0);
	return 0;
}

int
review_selftest(review_convert_fn *convert, struct kc_status *st)
{
	_cleanup_(kc_json_putp) struct json_object *run = NULL, *beta = NULL, *back = NULL;
	int r;

	if ((r = kc_json_parse(selftest_run, sizeof(selftest_run) - 1, &run, st)) < 0)
		return r;
	if ((r = selftest_trip(convert, run, RUN_BETA, &beta, st)) < 0 ||
	    (r = selftest_trip(convert, beta, RUN_ALPHA, &back, st)) < 0)
		return r;
	if (!kc_json_equal(run, back))
		return kc_status_set(st, KC_EINVALID, "self-test: a Run converted to %s and "
		    "back differs from the original", RUN_BETA);
	return 0;
}

/*
 * watch.c: incremental watch-stream decoder, bookmarks, resume.
 *
 * A watch answer is a sequence of JSON objects, each an event
 * {"type": T, "object": O}, usually one per line but with no framing the
 * client may rely on: the transport hands over pieces of the body as they
 * arrive, and an event may be split anywhere, even inside a string or a
 * number, or several may arrive in one piece.
 *
 * The decoder hands the pieces to a kc_json_stream (jsonstream.c: yajl's
 * parser building json-c trees), which keeps its state between calls,
 * calls back once per complete event, refuses anything but objects
 * separated by white space, bounds the bytes of one event (-E2BIG) so a
 * hostile server cannot grow memory without limit, and bounds nesting.
 * With a filter (kc_watch_opts.filter) only the event's type and the
 * object's kept members are built; the rest is checked and dropped as it
 * streams by.
 *
 * kc_watch_run() builds the request, streams it through the client's
 * transport into a decoder, and turns events into callbacks, counters
 * and the resume resourceVersion. An ERROR event ends the watch with the
 * code of its Status (410 becomes KC_EEXPIRED). Errors found while
 * decoding are kept beside the stream (the transport only sees that its
 * callback refused), then reported with their own detail.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/client.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/jsonstream.h>
#include <kc/str.h>
#include <kc/watch.h>

#include "internal.h"

struct kc__watch_decoder {
	struct kc_json_filter	*filter;	/* the event's, wrapping the object's */
	struct kc_json_stream	*js;
	kc__watch_event_fn	*fn;
	void			*arg;
};

static const char *const type_names[] = {
	[KC_WATCH_ADDED] = "ADDED",
	[KC_WATCH_MODIFIED] = "MODIFIED",
	[KC_WATCH_DELETED] = "DELETED",
	[KC_WATCH_BOOKMARK] = "BOOKMARK",
	[KC_WATCH_ERROR] = "ERROR",
};

const char *
kc_watch_type_name(enum kc_watch_type t)
{
	if ((int)t < KC_WATCH_ADDED || (int)t > KC_WATCH_ERROR)
		return "UNKNOWN";
	return type_names[t];
}

static int deliver(void *arg, struct json_object *ev, struct kc_status *st);

int
kc__watch_decoder_new(size_t max_event, const struct kc_json_filter *filter,
    kc__watch_event_fn *fn, void *arg, struct kc__watch_decoder **ret)
{
	static const char *const whole[] = { "type" };
	struct kc__watch_decoder *d;
	int r;

	if ((d = kc_calloc(1, sizeof(*d))) == NULL)
		return -ENOMEM;
	d->fn = fn;
	d->arg = arg;
	if ((filter != NULL && (r = kc_json_filter_wrap(filter, "object", whole,
	    KC_ARRAY_SIZE(whole), &d->filter)) < 0) ||
	    (r = kc_json_stream_new(&(struct kc_json_stream_opts){
		.filter = d->filter,
		.max_value = max_event != 0 ? max_event : KC_WATCH_EVENT_MAX,
		.what = "watch stream",
		.unit = "event",
		.fn = deliver,
		.arg = d,
	}, &d->js)) < 0) {
		kc__watch_decoder_free(d);
		return r;
	}
	*ret = d;
	return 0;
}

struct kc__watch_decoder *
kc__watch_decoder_free(struct kc__watch_decoder *d)
{
	if (d == NULL)
		return NULL;
	kc_json_stream_free(d->js);
	kc_json_filter_free(d->filter);
	return kc_free(d);
}

static int
event_type(const char *s)
{
	for (int t = KC_WATCH_ADDED; t <= KC_WATCH_ERROR; t++)
		if (strcmp(s, type_names[t]) == 0)
			return t;
	return 0;
}

/* Checks one decoded event and hands it to the callback. */
static int
deliver(void *arg, struct json_object *ev, struct kc_status *st)
{
	struct kc__watch_decoder *d = arg;
	const char *type_s = kc_json_str(ev, "type");
	struct json_object *obj = kc_json_obj_of(ev, "object");
	int type;

	if (type_s == NULL)
		return kc_status_set(st, KC_EPARSE, "watch event without a type");
	if ((type = event_type(type_s)) == 0)
		return kc_status_set(st, KC_EPARSE, "unknown watch event type \"%.64s\"", type_s);
	if (obj == NULL)
		return kc_status_set(st, KC_EPARSE, "%s watch event without an object", type_s);
	return d->fn(d->arg, type, obj, st);
}

int
kc__watch_decoder_feed(struct kc__watch_decoder *d, const char *data, size_t len,
    struct kc_status *st)
{
	return kc_json_stream_feed(d->js, data, len, st);
}

int
kc__watch_decoder_finish(struct kc__watch_decoder *d, struct kc_status *st)
{
	return kc_json_stream_finish(d->js, st);
}

/* ---- kc_watch_run ----------------------------------------------------- */

struct watch_ctx {
	kc_watch_fn		*fn;
	void			*arg;
	struct kc__watch_decoder *dec;
	struct kc_watch_result	 res;
	int			 err;	/* why decoding stopped; 0: it did not */
	bool			 stopped;	/* the callback said KC_WATCH_STOP */
	struct kc_status	 est;	/* detail of 'err' */
};

/* An ERROR event: its Status decides the code; 410 means relist. */
static int
error_event(struct json_object *obj, struct kc_status *st)
{
	int r = kc__status_decode(obj, 0, 0, st);

	if (r == KC_EGONE || r == KC_EEXPIRED || kc_json_int(obj, 0, "code") == 410)
		return KC_EEXPIRED;
	return r;
}

static int
on_event(void *arg, int type, struct json_object *obj, struct kc_status *st)
{
	struct watch_ctx *ctx = arg;
	const char *rv = kc_json_str(obj, "metadata", "resourceVersion");
	int r;

	if (type == KC_WATCH_ERROR)
		return error_event(obj, st);
	if (rv != NULL && strlen(rv) >= KC_RV_MAX)
		return kc_status_set(st, KC_EPARSE, "%s event: resourceVersion longer than %d "
		    "bytes", kc_watch_type_name(type), KC_RV_MAX - 1);
	if ((r = ctx->fn(ctx->arg, type, obj)) < 0)
		return kc_status_set(st, r, "watch callback on %s: %s",
		    kc_watch_type_name(type), kc_strerror(r));
	ctx->res.events++;
	switch (type) {
	case KC_WATCH_ADDED:	ctx->res.added++; break;
	case KC_WATCH_MODIFIED:	ctx->res.modified++; break;
	case KC_WATCH_DELETED:	ctx->res.deleted++; break;
	case KC_WATCH_BOOKMARK:	ctx->res.bookmarks++; break;
	}
	if (rv != NULL && rv[0] != '\0')
		(void)kc_strlcpy(ctx->res.resource_version, rv,
		    sizeof(ctx->res.resource_version));
	return r > 0 ? KC_WATCH_STOP : 0;
}

static int
on_chunk(void *arg, const char *data, size_t len)
{
	struct watch_ctx *ctx = arg;
	int r;

	if ((r = kc__watch_decoder_feed(ctx->dec, data, len, &ctx->est)) == 0)
		return 0;
	if (r > 0) {
		ctx->stopped = true;
		return -ECANCELED;	/* ends the stream; 'stopped' tells why */
	}
	ctx->err = r;
	return r;
}

static int
watch_path(struct kc_buf *url, const struct kc_watch_opts *opts, struct kc_status *st)
{
	char num[16];
	int r;

	if ((r = kc__client_path(url, opts->res, opts->ns, NULL, NULL, st)) < 0)
		return r;
	(void)snprintf(num, sizeof(num), "%" PRIu32, opts->timeout_s);
	if ((r = kc__query_add(url, "allowWatchBookmarks",
	    opts->allow_bookmarks ? "true" : NULL)) < 0 ||
	    (r = kc__query_add(url, "fieldSelector", opts->field_selector)) < 0 ||
	    (r = kc__query_add(url, "labelSelector", opts->label_selector)) < 0 ||
	    (r = kc__query_add(url, "resourceVersion", opts->resource_version)) < 0 ||
	    (r = kc__query_add(url, "timeoutSeconds",
	    opts->timeout_s != 0 ? num : NULL)) < 0 ||
	    (r = kc__query_add(url, "watch", "true")) < 0) {
		if (r == -E2BIG)
			return kc_status_set(st, r, "watch path longer than %zu bytes", url->max);
		return r;
	}
	return 0;
}

int
kc_watch_run(struct kc_client *cl, const struct kc_watch_opts *opts,
    kc_watch_fn *fn, void *arg, struct kc_watch_result *ret, struct kc_status *st)
{
	_cleanup_(kc_buf_free) struct kc_buf url;
	struct watch_ctx ctx;
	struct kc_status sst;
	int r;

	kc_buf_init(&url, KC_URL_MAX);
	memset(&ctx, 0, sizeof(ctx));
	if (opts == NULL || fn == NULL)
		return kc_status_set(st, -EINVAL, "watch: options and a callback are required");
	if (opts->resource_version != NULL &&
	    strlen(opts->resource_version) >= KC_RV_MAX)
		return kc_status_set(st, -EINVAL, "watch: resourceVersion longer than %d bytes",
		    KC_RV_MAX - 1);
	if ((r = watch_path(&url, opts, st)) < 0)
		return r;
	ctx.fn = fn;
	ctx.arg = arg;
	if (opts->resource_version != NULL)
		(void)kc_strlcpy(ctx.res.resource_version, opts->resource_version,
		    sizeof(ctx.res.resource_version));
	if ((r = kc__watch_decoder_new(opts->max_event, opts->filter, on_event, &ctx, &ctx.dec)) < 0)
		goto out;
	kc_status_clear(&sst);
	r = kc__client_stream(cl, "watch", opts->res, kc_buf_str(&url), on_chunk, &ctx,
	    &sst);
	if (ctx.stopped)
		r = KC_WATCH_STOP;
	else if (ctx.err != 0) {
		r = ctx.err;
		sst = ctx.est;
	} else if (r == 0)
		r = kc__watch_decoder_finish(ctx.dec, &sst);
	else if (r == KC_EGONE || (r < 0 && sst.http_code == 410))
		r = KC_EEXPIRED;
	if (r < 0 && st != NULL)
		*st = sst;
out:
	ctx.dec = kc__watch_decoder_free(ctx.dec);
	if (ret != NULL)
		*ret = ctx.res;
	return r;
}

void
kc_watch_cancel(struct kc_client *cl)
{
	kc_client_cancel(cl);
}

/*
 * Watches: one streamed GET ...?watch=true, decoded event by event.
 *
 * The server answers a watch with a chunked stream of JSON objects,
 * {"type":"ADDED","object":{...}}, one after another. kc_watch_run()
 * decodes it incrementally, whatever the chunk boundaries, and calls the
 * caller's function once per event, in order, on the calling thread:
 *
 *	static int
 *	on_event(void *arg, enum kc_watch_type type, struct json_object *obj)
 *	{
 *		...		obj is borrowed: copy or take a reference to keep it
 *		return 0;
 *	}
 *
 *	struct kc_watch_result wr;
 *	r = kc_watch_run(cl, &(struct kc_watch_opts){
 *		.res = &kc_res_pods,
 *		.ns = "team-a",
 *		.resource_version = list_rv,
 *		.allow_bookmarks = true,
 *		.timeout_s = 300,
 *	}, on_event, ctx, &wr, &st);
 *	if (r == KC_EEXPIRED)
 *		relist();			(history is gone: list again)
 *	else
 *		rewatch from wr.resource_version;
 *
 * Resuming. The result tracks the resourceVersion of the last event
 * handled (bookmarks included), so a watch that ends for any reason can be
 * restarted from there without missing or repeating events. An event
 * whose callback failed is not counted as handled.
 *
 * Expiry. A resourceVersion older than the server's history gets an
 * ERROR event with a 410 Status (reason Expired or Gone), or, from some
 * servers and proxies, an HTTP 410 answer. Both end the watch with
 * KC_EEXPIRED: only a new list can continue. Other ERROR events end it
 * with the code their Status maps to (KC_EINTERNAL, ...) and its message
 * in 'st'.
 *
 * Cancellation. kc_watch_cancel() from any other thread makes the
 * running kc_watch_run() return -ECANCELED promptly; the callback is not
 * called again. The client stays cancelled (every later request fails the
 * same way) until kc_client_reset_cancel().
 */
#ifndef KC_WATCH_H
#define KC_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <kc/client.h>
#include <kc/err.h>
#include <kc/macro.h>

/* Ceiling on one event's bytes; past it the watch ends with -E2BIG. */
#define KC_WATCH_EVENT_MAX	(16u << 20)

/* Longest resourceVersion kept; a longer one is KC_EPARSE. */
#define KC_RV_MAX		64

enum kc_watch_type {
	KC_WATCH_ADDED = 1,
	KC_WATCH_MODIFIED,
	KC_WATCH_DELETED,
	KC_WATCH_BOOKMARK,	/* only metadata.resourceVersion is meaningful */
	KC_WATCH_ERROR,		/* never passed to a kc_watch_fn */
};

/* "ADDED", ..., or "UNKNOWN". */
const char	*kc_watch_type_name(enum kc_watch_type);

/*
 * Called once per event with the event's object, borrowed for the call
 * (json_object_get() it, or copy it, to keep it). Return 0 to go on,
 * KC_WATCH_STOP to end the watch successfully, or a negative code to end
 * it with that code.
 */
#define KC_WATCH_STOP	1
typedef int	kc_watch_fn(void *arg, enum kc_watch_type type, struct json_object *obj);

struct kc_json_filter;

struct kc_watch_opts {
	const struct kc_resource *res;	/* required */
	const char	*ns;		/* NULL: all namespaces (or cluster-scoped) */
	const char	*label_selector;
	const char	*field_selector;
	const char	*resource_version;	/* start after this; NULL: now, with
					   an ADDED event per existing object */
	bool		 allow_bookmarks;	/* allowWatchBookmarks=true */
	uint32_t	 timeout_s;	/* timeoutSeconds: the server ends it then */
	size_t		 max_event;	/* 0: KC_WATCH_EVENT_MAX */
	const struct kc_json_filter *filter;	/* members of each object to
					   build (kc/jsonstream.h); NULL: all */
};

struct kc_watch_result {
	char		 resource_version[KC_RV_MAX];	/* resume point; "" if none */
	uint64_t	 events;	/* events handled, bookmarks included */
	uint64_t	 added, modified, deleted, bookmarks;
};

/*
 * Runs one watch until the server ends it (0), the callback returns
 * KC_WATCH_STOP (KC_WATCH_STOP) or a negative code (that code), an ERROR
 * event or an HTTP error arrives (KC_EEXPIRED for 410, else the mapped
 * code), the stream breaks (KC_EPARSE for garbage or a stream that ends
 * inside an event, -E2BIG for an event over max_event, a transport
 * error), or kc_watch_cancel() is called (-ECANCELED).
 *
 * '*ret' (which may be NULL) is written on every return once the options
 * were accepted, failures included: it is progress, not a result, and its
 * resource_version is where to resume. It starts as opts->resource_version.
 * -EINVAL for bad options, before anything is sent, leaves it untouched.
 *
 * Runs on the calling thread, which owns 'cl'.
 */
int	kc_watch_run(struct kc_client *cl, const struct kc_watch_opts *opts,
	    kc_watch_fn *fn, void *arg, struct kc_watch_result *ret,
	    struct kc_status *st);

/*
 * Cancels the watch (or request) running on 'cl': kc_client_cancel().
 * Any thread, while 'cl' is alive.
 */
void	kc_watch_cancel(struct kc_client *cl);

#endif

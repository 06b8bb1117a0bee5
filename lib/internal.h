/*
 * lib/internal.h: kc__ prototypes shared between libkc's files, grouped by
 * the file that defines them. Not installed; only lib/ and the unit tests
 * include it.
 */
#ifndef KC_INTERNAL_H
#define KC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/macro.h>

/* watch.c */

/*
 * The incremental decoder of a watch stream: bytes in, one callback per
 * complete event out. 'type' is an enum kc_watch_type; 'obj' is the
 * event's object, borrowed for the call. A non-zero return from the
 * callback stops decoding and is returned by kc__watch_decoder_feed();
 * the decoder is then spent and should only be freed.
 */
struct kc__watch_decoder;
typedef int	kc__watch_event_fn(void *arg, int type, struct json_object *obj,
		    struct kc_status *st);

/*
 * A decoder with a bound of 'max_event' bytes per event (0: the default),
 * building only what 'filter' keeps of each event's object (NULL: all of
 * it); the filter must outlive the decoder.
 */
struct kc_json_filter;
int	kc__watch_decoder_new(size_t max_event, const struct kc_json_filter *filter,
	    kc__watch_event_fn *fn, void *arg, struct kc__watch_decoder **ret)
	    _must_check_;

/*
 * Feeds the next 'len' bytes, in any split. 0, the callback's non-zero
 * code, KC_EPARSE for bytes that are not a stream of event objects,
 * -E2BIG for an event over the bound, -ENOMEM.
 */
int	kc__watch_decoder_feed(struct kc__watch_decoder *, const char *data,
	    size_t len, struct kc_status *st) _must_check_;

/* The stream ended: 0, or KC_EPARSE when it ended inside an event. */
int	kc__watch_decoder_finish(struct kc__watch_decoder *, struct kc_status *st)
	    _must_check_;

struct kc__watch_decoder *kc__watch_decoder_free(struct kc__watch_decoder *);

/* client.c */

struct kc_buf;
struct kc_client;
struct kc_resource;

/*
 * Appends /api[s]/.../<resource>[/<name>[/<subresource>]] to 'b' after
 * checking every segment: -EINVAL (with 'st') for a bad or misplaced one,
 * -E2BIG or -ENOMEM from the buffer.
 */
int	kc__client_path(struct kc_buf *b, const struct kc_resource *res,
	    const char *ns, const char *name, const char *subresource,
	    struct kc_status *st) _must_check_;

/*
 * Appends "?key=value" (or "&key=value" once 'b' holds a '?'), with the
 * value percent-encoded per RFC 3986. A NULL value appends nothing.
 */
int	kc__query_add(struct kc_buf *b, const char *key, const char *value)
	    _must_check_;

/*
 * A streamed GET of 'path' on the client's transport: 2xx bodies go to
 * 'fn' piece by piece; any other answer is decoded as for every verb.
 * 'verb' ("watch", "list") and 'res' label the request for the observer.
 */
int	kc__client_stream(struct kc_client *cl, const char *verb,
	    const struct kc_resource *res, const char *path,
	    int (*fn)(void *arg, const char *data, size_t len), void *arg,
	    struct kc_status *st) _must_check_;

/*
 * Decodes a metav1.Status object into 'st' and returns its libkc code;
 * 'http_code' 0 takes the Status's own code.
 */
int	kc__status_decode(const struct json_object *status, int http_code,
	    uint32_t retry_after_ms, struct kc_status *st);

/* transport.c */

/* yaml.c */

/* kubeconfig.c */

#endif

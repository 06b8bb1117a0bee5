/*
 * Streaming JSON decoding into json-c trees, keeping only named paths.
 *
 * json-c's tokener builds every member of a value. A controller that
 * watches thousands of pods reads a dozen fields of each and would build
 * (and free) the rest on every event, managedFields first. This module
 * drives yajl's callback parser instead and creates json-c objects only
 * for the paths a filter keeps; everything else is checked for syntax
 * and dropped as it streams by. The result is an ordinary json-c tree, so
 * every reader of a kept field is unchanged.
 *
 *	static const char *const keep[] = {
 *		"metadata.name", "metadata.labels", "spec.nodeName", "status",
 *	};
 *	r = kc_json_filter_new(keep, KC_ARRAY_SIZE(keep), &f, &st);
 *	r = kc_json_parse_filtered(text, len, f, &pod, &st);
 *
 * A path names object members from the value down, joined by '.': a
 * member on the path keeps only its own named members, and the path's
 * last member is kept whole. Arrays are transparent: the elements of an
 * array on a path are filtered as the array itself is ("items.metadata"
 * keeps the metadata of each element of items). A key that itself holds a
 * '.' cannot be named; keep its parent. A scalar met where the filter
 * expects an object is kept. A NULL filter keeps everything.
 */
#ifndef KC_JSONSTREAM_H
#define KC_JSONSTREAM_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/macro.h>

#define KC_JSON_FILTER_PATHS_MAX	256	/* paths of one filter */
#define KC_JSON_FILTER_PATH_MAX		256	/* bytes of one path */

struct kc_json_filter;

/*
 * A filter keeping 'paths' (n of them). KC_EINVALID with the path in 'st'
 * for an empty path or member, or one over the bounds above; -ENOMEM.
 */
int	kc_json_filter_new(const char *const *paths, size_t n,
	    struct kc_json_filter **ret, struct kc_status *st) _must_check_;

/*
 * A filter for an envelope around values that 'inner' filters: it keeps
 * the members 'whole' (n of them) entirely and filters the member 'key'
 * with 'inner' (NULL: keeps it whole). For a watch event: key "object",
 * whole {"type"}; for a List: key "items", whole {"kind", "apiVersion",
 * "metadata"}. 'inner' must outlive the result. -ENOMEM.
 */
int	kc_json_filter_wrap(const struct kc_json_filter *inner, const char *key,
	    const char *const *whole, size_t n, struct kc_json_filter **ret)
	    _must_check_;

struct kc_json_filter *kc_json_filter_free(struct kc_json_filter *);
KC_DEFINE_CLEANUP(struct kc_json_filter, kc_json_filter_free)

/*
 * Parses exactly one JSON value from 'len' bytes (trailing white space
 * allowed) keeping what 'filter' keeps, as kc_json_parse() does: KC_EPARSE
 * with yajl's message and the byte offset in 'st' on malformed input or
 * nesting deeper than KC_JSON_DEPTH_MAX; '*ret' is a new reference, NULL
 * for the document "null".
 */
int	kc_json_parse_filtered(const char *text, size_t len,
	    const struct kc_json_filter *filter, struct json_object **ret,
	    struct kc_status *st) _must_check_;

/*
 * A stream of JSON objects (a watch answer): bytes in, in any split, one
 * callback per complete object, borrowed for the call. A non-zero return
 * stops the stream and is returned by kc_json_stream_feed(); the stream
 * is then spent and should only be freed.
 */
typedef int	kc_json_value_fn(void *arg, struct json_object *obj,
		    struct kc_status *st);

struct kc_json_stream_opts {
	const struct kc_json_filter *filter;	/* NULL: keep everything */
	size_t		 max_value;	/* bytes of one object; required */
	const char	*what;		/* names the stream in messages */
	const char	*unit;		/* names one object in them ("event") */
	kc_json_value_fn *fn;		/* required */
	void		*arg;
};

struct kc_json_stream;

/* 'opts' is copied; its filter must outlive the stream. -ENOMEM. */
int	kc_json_stream_new(const struct kc_json_stream_opts *opts,
	    struct kc_json_stream **ret) _must_check_;

/*
 * Feeds the next 'len' bytes. 0, the callback's non-zero code, KC_EPARSE
 * for bytes that are not a sequence of JSON objects separated by white
 * space (or nesting deeper than KC_JSON_DEPTH_MAX), -E2BIG for an object
 * over max_value bytes, -ENOMEM, -EINVAL once spent.
 */
int	kc_json_stream_feed(struct kc_json_stream *, const char *data, size_t len,
	    struct kc_status *st) _must_check_;

/* The input ended: 0, or KC_EPARSE when it ended inside an object. */
int	kc_json_stream_finish(struct kc_json_stream *, struct kc_status *st)
	    _must_check_;

struct kc_json_stream *kc_json_stream_free(struct kc_json_stream *);
KC_DEFINE_CLEANUP(struct kc_json_stream, kc_json_stream_free)

#endif

/*
 * jsonstream.c: yajl's callback parser building json-c trees of the
 * members a filter keeps.
 *
 * yajl (yajl_parse.h) tokenizes, checks the grammar and UTF-8, and calls
 * back once per token; it keeps its own state between pieces of input, so
 * a value may be split anywhere. The callbacks keep a stack of the open
 * containers that are kept (frames, each with the filter node of its
 * members) and a count of the open containers being dropped ('skip'); a
 * member the filter does not name sets 'skip_next', which drops the next
 * value whole. A kept container is added to its parent as soon as it
 * opens, so no key has to outlive its own callback. Nesting is bounded by
 * KC_JSON_DEPTH_MAX, dropped containers included, as json-c's tokener
 * bounds it.
 *
 * A stream (kc_json_stream_feed()) is a sequence of objects. Between
 * objects the feeder skips white space itself and insists on '{', so a
 * stray byte is an error at once; it hands yajl at most the bytes the
 * object in progress may still take, and learns from yajl's byte count
 * in the callbacks where an object started and ended inside a piece.
 * Invariant: 'cur' (bytes of the object in progress) is 0 exactly when
 * yajl holds no partial object.
 *
 * yajl allocates with malloc() and assumes it never fails; json-c's
 * objects come from json-c's own allocation. Neither goes through
 * kc_malloc(), so the tests' failure injection does not reach them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <yajl/yajl_parse.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/jsonstream.h>

struct kc_json_filter {
	char			*key;		/* NULL at the root */
	size_t			 keylen;
	bool			 whole;		/* keep the value entirely */
	bool			 borrowed;	/* kids[] belongs to another filter */
	size_t			 n, cap;
	struct kc_json_filter	**kids;
};

struct frame {
	struct json_object		*o;	/* an object or array, borrowed */
	const struct kc_json_filter	*f;	/* its members'; NULL: all */
};

struct kc_json_stream {
	yajl_handle		 h;
	struct kc_json_stream_opts o;
	bool			 stream;	/* objects separated by white space */
	struct frame		 stack[KC_JSON_DEPTH_MAX];
	size_t			 depth;		/* frames in use */
	size_t			 skip;		/* open containers being dropped */
	bool			 skip_next;	/* drop the value after this key */
	const struct kc_json_filter *next_f;	/* filter of that value */
	char			*key;		/* the member being read */
	size_t			 keycap;
	struct json_object	*doc;		/* one document: the value */
	bool			 have_doc;
	size_t			 cur;		/* bytes of the object in progress */
	bool			 started;	/* an object opened in this piece */
	size_t			 start_off;
	bool			 ended;		/* one closed in this piece */
	size_t			 end_off;
	int			 err;		/* why a callback stopped yajl */
	struct kc_status	 est;
	bool			 spent;
};

/* ---- filters ----------------------------------------------------------------- */

static struct kc_json_filter *
node_new(const char *key, size_t keylen, bool whole)
{
	struct kc_json_filter *f;

	if ((f = kc_calloc(1, sizeof(*f))) == NULL)
		return NULL;
	if (key != NULL && (f->key = kc_strndup(key, keylen)) == NULL)
		return kc_free(f);
	f->keylen = keylen;
	f->whole = whole;
	return f;
}

/* The member 'key' of 'f' (len bytes), or NULL. */
static struct kc_json_filter *
node_kid(const struct kc_json_filter *f, const char *key, size_t len)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->kids[i]->keylen == len && memcmp(f->kids[i]->key, key, len) == 0)
			return f->kids[i];
	return NULL;
}

static int
node_add(struct kc_json_filter *f, struct kc_json_filter *kid)
{
	if (f->n == f->cap) {
		size_t cap = f->cap != 0 ? f->cap * 2 : 4;
		struct kc_json_filter **k = kc_reallocarray(f->kids, cap, sizeof(*k));

		if (k == NULL)
			return -ENOMEM;
		f->kids = k;
		f->cap = cap;
	}
	f->kids[f->n++] = kid;
	return 0;
}

struct kc_json_filter *
kc_json_filter_free(struct kc_json_filter *f)
{
	if (f == NULL)
		return NULL;
	if (!f->borrowed) {
		for (size_t i = 0; i < f->n; i++)
			kc_json_filter_free(f->kids[i]);
		kc_free(f->kids);
	}
	kc_free(f->key);
	return kc_free(f);
}

/* Adds one path below 'root'. */
static int
filter_add(struct kc_json_filter *root, const char *path, struct kc_status *st)
{
	struct kc_json_filter *f = root;
	const char *p = path;
	size_t len = strnlen(path, KC_JSON_FILTER_PATH_MAX + 1);

	if (len == 0 || len > KC_JSON_FILTER_PATH_MAX)
		return kc_status_set(st, KC_EINVALID, "JSON filter: path \"%.64s\": "
		    "empty or longer than %d bytes", path, KC_JSON_FILTER_PATH_MAX);
	while (!f->whole) {
		const char *dot = memchr(p, '.', len - (size_t)(p - path));
		size_t n = dot != NULL ? (size_t)(dot - p) : len - (size_t)(p - path);
		struct kc_json_filter *kid;

		if (n == 0)
			return kc_status_set(st, KC_EINVALID, "JSON filter: path \"%s\" "
			    "has an empty member", path);
		if ((kid = node_kid(f, p, n)) == NULL) {
			if ((kid = node_new(p, n, false)) == NULL)
				return -ENOMEM;
			if (node_add(f, kid) < 0) {
				kc_json_filter_free(kid);
				return -ENOMEM;
			}
		}
		if (dot == NULL) {
			/* The end of a path keeps the member whole. */
			kid->whole = true;
			break;
		}
		f = kid;
		p = dot + 1;
	}
	return 0;
}

int
kc_json_filter_new(const char *const *paths, size_t n, struct kc_json_filter **ret,
    struct kc_status *st)
{
	_cleanup_(kc_json_filter_freep) struct kc_json_filter *root = NULL;
	int r;

	if (n > KC_JSON_FILTER_PATHS_MAX)
		return kc_status_set(st, KC_EINVALID, "JSON filter: more than %d paths",
		    KC_JSON_FILTER_PATHS_MAX);
	if ((root = node_new(NULL, 0, false)) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if ((r = filter_add(root, paths[i], st)) < 0)
			return r;
	*ret = root;
	root = NULL;
	return 0;
}

int
kc_json_filter_wrap(const struct kc_json_filter *inner, const char *key,
    const char *const *whole, size_t n, struct kc_json_filter **ret)
{
	_cleanup_(kc_json_filter_freep) struct kc_json_filter *root = NULL;
	struct kc_json_filter *kid;

	if ((root = node_new(NULL, 0, false)) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i <= n; i++) {
		const char *k = i < n ? whole[i] : key;

		if ((kid = node_new(k, strlen(k), i < n || inner == NULL)) == NULL)
			return -ENOMEM;
		if (i == n && inner != NULL) {
			kid->borrowed = true;
			kid->kids = inner->kids;
			kid->n = kid->cap = inner->n;
			kid->whole = inner->whole;
		}
		if (node_add(root, kid) < 0) {
			kc_json_filter_free(kid);
			return -ENOMEM;
		}
	}
	*ret = root;
	root = NULL;
	return 0;
}

/* ---- the callbacks ------------------------------------------------------------- */

static int
fail(struct kc_json_stream *s, int code, const char *msg)
{
	s->err = code;
	(void)kc_status_set(&s->est, code, "%s: %s", s->o.what, msg);
	return 0;
}

/* A complete top-level value: the callback for a stream, kept otherwise. */
static int
top_value(struct kc_json_stream *s, struct json_object *v)
{
	int r;

	if (!s->stream) {
		s->doc = v;
		s->have_doc = true;
		return 1;
	}
	s->ended = true;
	s->end_off = yajl_get_bytes_consumed(s->h);
	kc_status_clear(&s->est);
	r = s->o.fn(s->o.arg, v, &s->est);
	json_object_put(v);
	if (r != 0) {
		s->err = r;
		return 0;
	}
	return 1;
}

/* Adds a new value (a reference, NULL for null) where the parser stands. */
static int
put(struct kc_json_stream *s, struct json_object *v, bool made)
{
	struct json_object *parent;

	if (!made)
		return fail(s, -ENOMEM, "out of memory");
	if (s->depth == 0) {
		if (s->stream && !json_object_is_type(v, json_type_object)) {
			json_object_put(v);
			return fail(s, KC_EPARSE, "expected an object");
		}
		return top_value(s, v);
	}
	parent = s->stack[s->depth - 1].o;
	if (json_object_is_type(parent, json_type_array)) {
		if (json_object_array_add(parent, v) != 0) {
			json_object_put(v);
			return fail(s, -ENOMEM, "out of memory");
		}
	} else if (json_object_object_add(parent, s->key, v) != 0) {
		json_object_put(v);
		return fail(s, -ENOMEM, "out of memory");
	}
	return 1;
}

/* True when the scalar the parser stands on is dropped. */
static bool
dropped(struct kc_json_stream *s)
{
	if (s->skip > 0)
		return true;
	if (s->skip_next) {
		s->skip_next = false;
		return true;
	}
	return false;
}

static int
cb_null(void *ctx)
{
	struct kc_json_stream *s = ctx;

	return dropped(s) ? 1 : put(s, NULL, true);
}

static int
cb_boolean(void *ctx, int b)
{
	struct kc_json_stream *s = ctx;
	struct json_object *v;

	if (dropped(s))
		return 1;
	v = json_object_new_boolean(b);
	return put(s, v, v != NULL);
}

/*
 * A number as json-c's tokener makes it: an integer when it has neither
 * fraction nor exponent and fits int64 (uint64 above), else a double that
 * keeps its text for serialization.
 */
static int
cb_number(void *ctx, const char *text, size_t len)
{
	struct kc_json_stream *s = ctx;
	struct json_object *v = NULL;
	char buf[128], *end;

	if (dropped(s))
		return 1;
	if (len >= sizeof(buf))
		return fail(s, KC_EPARSE, "number longer than 127 bytes");
	memcpy(buf, text, len);
	buf[len] = '\0';
	if (strpbrk(buf, ".eE") == NULL) {
		long long ll;

		errno = 0;
		ll = strtoll(buf, &end, 10);
		if (errno == 0 && *end == '\0')
			v = json_object_new_int64(ll);
		else if (errno == ERANGE && buf[0] != '-') {
			unsigned long long ull;

			errno = 0;
			ull = strtoull(buf, &end, 10);
			if (errno == 0 && *end == '\0')
				v = json_object_new_uint64(ull);
		}
		if (v != NULL)
			return put(s, v, true);
	}
	errno = 0;
	v = json_object_new_double_s(strtod(buf, &end), buf);
	return put(s, v, v != NULL);
}

static int
cb_string(void *ctx, const unsigned char *str, size_t len)
{
	struct kc_json_stream *s = ctx;
	struct json_object *v;

	if (dropped(s))
		return 1;
	v = json_object_new_string_len((const char *)str, (int)len);
	return put(s, v, v != NULL);
}

/* Opens an object or array: kept (a frame) or dropped (counted). */
static int
open_container(struct kc_json_stream *s, bool array)
{
	const struct kc_json_filter *f;
	struct json_object *o;

	if (s->depth + s->skip >= KC_JSON_DEPTH_MAX)
		return fail(s, KC_EPARSE, "nesting too deep");
	if (s->skip > 0 || s->skip_next) {
		s->skip_next = false;
		s->skip++;
		return 1;
	}
	if (s->depth == 0) {
		if (s->stream) {
			if (array)
				return fail(s, KC_EPARSE, "expected an object");
			s->started = true;
			s->start_off = yajl_get_bytes_consumed(s->h) - 1;
		}
		f = s->o.filter != NULL && !s->o.filter->whole ? s->o.filter : NULL;
	} else if (json_object_is_type(s->stack[s->depth - 1].o, json_type_array))
		f = s->stack[s->depth - 1].f;	/* arrays are transparent */
	else
		f = s->next_f;
	if ((o = array ? json_object_new_array() : json_object_new_object()) == NULL)
		return fail(s, -ENOMEM, "out of memory");
	if (s->depth > 0 && put(s, o, true) == 0)
		return 0;
	s->stack[s->depth].o = o;
	s->stack[s->depth].f = f;
	s->depth++;
	return 1;
}

static int
close_container(struct kc_json_stream *s)
{
	if (s->skip > 0) {
		s->skip--;
		return 1;
	}
	if (--s->depth > 0)
		return 1;
	return top_value(s, s->stack[0].o);
}

static int
cb_start_map(void *ctx)
{
	return open_container(ctx, false);
}

static int
cb_start_array(void *ctx)
{
	return open_container(ctx, true);
}

static int
cb_end(void *ctx)
{
	return close_container(ctx);
}

static int
cb_map_key(void *ctx, const unsigned char *key, size_t len)
{
	struct kc_json_stream *s = ctx;
	const struct kc_json_filter *f = s->stack[s->depth - 1].f, *kid = NULL;

	if (s->skip > 0)
		return 1;
	if (f != NULL && (kid = node_kid(f, (const char *)key, len)) == NULL) {
		s->skip_next = true;
		return 1;
	}
	s->next_f = kid != NULL && !kid->whole ? kid : NULL;
	if (len >= s->keycap) {
		size_t cap = KC_MAX(len + 1, s->keycap * 2);
		char *k = kc_realloc(s->key, cap);

		if (k == NULL)
			return fail(s, -ENOMEM, "out of memory");
		s->key = k;
		s->keycap = cap;
	}
	memcpy(s->key, key, len);
	s->key[len] = '\0';
	return 1;
}

static const yajl_callbacks callbacks = {
	.yajl_null = cb_null,
	.yajl_boolean = cb_boolean,
	.yajl_number = cb_number,
	.yajl_string = cb_string,
	.yajl_start_map = cb_start_map,
	.yajl_map_key = cb_map_key,
	.yajl_end_map = cb_end,
	.yajl_start_array = cb_start_array,
	.yajl_end_array = cb_end,
};

/* ---- streams and documents ----------------------------------------------------- */

static int
stream_new(const struct kc_json_stream_opts *opts, bool stream,
    struct kc_json_stream **ret)
{
	struct kc_json_stream *s;

	if ((s = kc_calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	s->o = *opts;
	if (s->o.what == NULL)
		s->o.what = "JSON";
	if (s->o.unit == NULL)
		s->o.unit = "object";
	s->stream = stream;
	if ((s->h = yajl_alloc(&callbacks, NULL, s)) == NULL) {
		kc_free(s);
		return -ENOMEM;
	}
	if (stream)
		(void)yajl_config(s->h, yajl_allow_multiple_values, 1);
	*ret = s;
	return 0;
}

int
kc_json_stream_new(const struct kc_json_stream_opts *opts, struct kc_json_stream **ret)
{
	if (opts == NULL || opts->fn == NULL || opts->max_value == 0)
		return -EINVAL;
	return stream_new(opts, true, ret);
}

struct kc_json_stream *
kc_json_stream_free(struct kc_json_stream *s)
{
	if (s == NULL)
		return NULL;
	if (s->depth > 0)
		json_object_put(s->stack[0].o);
	json_object_put(s->doc);
	if (s->h != NULL)
		yajl_free(s->h);
	kc_free(s->key);
	return kc_free(s);
}

/* yajl's own message for a syntax error, without its line break. */
static int
syntax_error(struct kc_json_stream *s, size_t at, struct kc_status *st)
{
	unsigned char *msg = yajl_get_error(s->h, 0, NULL, 0);
	size_t len = msg != NULL ? strcspn((const char *)msg, "\n") : 0;
	int r;

	r = kc_status_set(st, KC_EPARSE, "%s: %.*s at byte %zu", s->o.what, (int)len,
	    msg != NULL ? (const char *)msg : "", at);
	if (msg != NULL)
		yajl_free_error(s->h, msg);
	return r;
}

/*
 * Parses one piece; 'at' is its offset for messages. yajl skips a form
 * feed or vertical tab as white space, which JSON's grammar has not (RFC
 * 8259, section 2) and encoding/json refuses; no JSON text holds either
 * byte raw (in a string it must be escaped), so any is an error, wherever
 * the pieces were split.
 */
static int
parse(struct kc_json_stream *s, const char *data, size_t len, size_t at,
    struct kc_status *st)
{
	const char *bad = memchr(data, '\f', len);
	const char *vt = memchr(data, '\v', bad != NULL ? (size_t)(bad - data) : len);
	yajl_status ys;

	if (vt != NULL)
		bad = vt;
	if (bad != NULL) {
		s->spent = true;
		return kc_status_set(st, KC_EPARSE, "%s: invalid byte 0x%02x at byte %zu",
		    s->o.what, (unsigned char)*bad, at + (size_t)(bad - data));
	}
	ys = yajl_parse(s->h, (const unsigned char *)data, len);
	if (ys == yajl_status_ok)
		return 0;
	s->spent = true;
	if (ys == yajl_status_client_canceled) {
		if (st != NULL)
			*st = s->est;
		return s->err;
	}
	return syntax_error(s, at + yajl_get_bytes_consumed(s->h), st);
}

static bool
is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static int
unexpected(struct kc_json_stream *s, char c, struct kc_status *st)
{
	bool plain = strcmp(s->o.unit, "object") == 0;

	return kc_status_set(st, KC_EPARSE, "%s: expected an %s%s, got byte 0x%02x",
	    s->o.what, plain ? "" : s->o.unit, plain ? "object" : " object",
	    (unsigned char)c);
}

int
kc_json_stream_feed(struct kc_json_stream *s, const char *data, size_t len,
    struct kc_status *st)
{
	size_t n, rest;
	int r;

	if (s->spent)
		return kc_status_set(st, -EINVAL, "%s: used after it stopped", s->o.what);
	while (len > 0) {
		if (s->cur == 0) {
			while (len > 0 && is_ws(*data)) {
				data++;
				len--;
			}
			if (len == 0)
				break;
			if (*data != '{') {
				s->spent = true;
				return unexpected(s, *data, st);
			}
		}
		if (s->cur == s->o.max_value) {
			s->spent = true;
			return kc_status_set(st, -E2BIG, "%s: %s larger than %zu bytes",
			    s->o.what, s->o.unit, s->o.max_value);
		}
		n = KC_MIN(len, s->o.max_value - s->cur);
		s->started = s->ended = false;
		if ((r = parse(s, data, n, s->cur, st)) != 0)
			return r;
		if (s->depth > 0)
			s->cur = s->started ? n - s->start_off : s->cur + n;
		else {
			/* Only white space may follow the objects that closed. */
			rest = s->ended ? s->end_off : 0;
			while (rest < n && is_ws(data[rest]))
				rest++;
			if (rest < n) {
				s->spent = true;
				return unexpected(s, data[rest], st);
			}
			s->cur = 0;
		}
		data += n;
		len -= n;
	}
	return 0;
}

int
kc_json_stream_finish(struct kc_json_stream *s, struct kc_status *st)
{
	if (s->cur != 0)
		return kc_status_set(st, KC_EPARSE, "%s ended inside an %s (%zu bytes)",
		    s->o.what, s->o.unit, s->cur);
	return 0;
}

int
kc_json_parse_filtered(const char *text, size_t len, const struct kc_json_filter *filter,
    struct json_object **ret, struct kc_status *st)
{
	_cleanup_(kc_json_stream_freep) struct kc_json_stream *s = NULL;
	int r;

	if ((r = stream_new(&(struct kc_json_stream_opts){
		.filter = filter,
		.what = "JSON",
	}, false, &s)) < 0)
		return r;
	if ((r = parse(s, text, len, 0, st)) != 0)
		return r;
	if (yajl_complete_parse(s->h) != yajl_status_ok) {
		if (s->err != 0) {
			if (st != NULL)
				*st = s->est;
			return s->err;
		}
		return syntax_error(s, len, st);
	}
	if (!s->have_doc)
		return kc_status_set(st, KC_EPARSE, "JSON: no value");
	*ret = s->doc;
	s->doc = NULL;
	return 0;
}

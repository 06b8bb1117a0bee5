/*
 * fake_transport.c: the scripted transport of the unit suites.
 *
 * The fake's own bookkeeping (expectations, recorded requests) uses libc
 * malloc, so allocation-failure loops only hit what a real transport
 * would allocate through libkc: the per-open handle and answer bodies.
 * Everything runs on the test's thread except ->cancel(), which may come
 * from another; the cancelled flag and the "blocked in a stream" flag are
 * under a mutex, with a condition variable to wake either side.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/err.h>
#include <kc/str.h>
#include <kc/transport.h>

#include "../unit/testutil.h"
#include "fake_transport.h"

const char ft_echo[] = "<echo>";

struct ft_ex {
	char		*method, *path, *ctype, *body;
	int		 error;
	int		 status;
	char		*rtype;
	char		*rbody;		/* NULL: empty */
	size_t		 rbody_len;
	bool		 echo;
	bool		 unbounded;
	uint32_t	 retry_after_ms;
	char		**chunks;
	size_t		*chunk_lens;
	size_t		 nchunks;
	bool		 block;
	int		 line;		/* script line, 0 for tables */
};

struct fake_transport {
	struct ft_ex	*ex;
	size_t		 nex, next;
	struct ft_request *reqs;
	size_t		 nreqs;
	struct kc_transport_opts opts;
	unsigned	 opens, closes;
	int		 open_error;

	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	bool		 cancelled;
	bool		 blocked;
};

/* The handle open() returns. */
struct ft_handle {
	struct fake_transport *ft;
};

static struct fake_transport *current;

static void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n == 0 ? 1 : n, size == 0 ? 1 : size);

	ck_assert_ptr_nonnull(p);
	return p;
}

static void *
xrealloc(void *p, size_t size)
{
	p = realloc(p, size == 0 ? 1 : size);
	ck_assert_ptr_nonnull(p);
	return p;
}

static char *
xstrndup(const char *s, size_t n)
{
	char *p = xcalloc(1, n + 1);

	memcpy(p, s, n);
	return p;
}

static char *
xstrdup(const char *s)
{
	return s != NULL ? xstrndup(s, strlen(s)) : NULL;
}

struct fake_transport *
ft_new(void)
{
	struct fake_transport *ft = xcalloc(1, sizeof(*ft));

	pthread_mutex_init(&ft->mu, NULL);
	pthread_cond_init(&ft->cv, NULL);
	current = ft;
	return ft;
}

static void
ex_free(struct ft_ex *e)
{
	free(e->method);
	free(e->path);
	free(e->ctype);
	free(e->body);
	free(e->rtype);
	free(e->rbody);
	for (size_t i = 0; i < e->nchunks; i++)
		free(e->chunks[i]);
	free(e->chunks);
	free(e->chunk_lens);
}

struct fake_transport *
ft_free(struct fake_transport *ft)
{
	if (ft == NULL)
		return NULL;
	for (size_t i = 0; i < ft->nex; i++)
		ex_free(&ft->ex[i]);
	free(ft->ex);
	for (size_t i = 0; i < ft->nreqs; i++) {
		struct ft_request *q = &ft->reqs[i];

		free(q->method);
		free(q->path);
		free(q->content_type);
		free(q->accept);
		free(q->body);
	}
	free(ft->reqs);
	pthread_mutex_destroy(&ft->mu);
	pthread_cond_destroy(&ft->cv);
	if (current == ft)
		current = NULL;
	free(ft);
	return NULL;
}

void
ft_done(struct fake_transport *ft)
{
	ck_assert_msg(ft->next == ft->nex, "fake transport: %zu expected request(s) "
	    "never came, the first: %s %s", ft->nex - ft->next,
	    ft->next < ft->nex ? ft->ex[ft->next].method : "",
	    ft->next < ft->nex ? ft->ex[ft->next].path : "");
}

static struct ft_ex *
ex_add(struct fake_transport *ft)
{
	struct ft_ex *e;

	ft->ex = xrealloc(ft->ex, (ft->nex + 1) * sizeof(*ft->ex));
	e = &ft->ex[ft->nex++];
	memset(e, 0, sizeof(*e));
	return e;
}

static void
ex_chunk(struct ft_ex *e, const char *data, size_t len)
{
	e->chunks = xrealloc(e->chunks, (e->nchunks + 1) * sizeof(*e->chunks));
	e->chunk_lens = xrealloc(e->chunk_lens, (e->nchunks + 1) * sizeof(size_t));
	e->chunks[e->nchunks] = xstrndup(data, len);
	e->chunk_lens[e->nchunks] = len;
	e->nchunks++;
}

void
ft_expect(struct fake_transport *ft, const struct ft_exchange *x)
{
	struct ft_ex *e = ex_add(ft);

	ck_assert_ptr_nonnull(x->method);
	ck_assert_ptr_nonnull(x->path);
	e->method = xstrdup(x->method);
	e->path = xstrdup(x->path);
	e->ctype = xstrdup(x->content_type);
	e->body = xstrdup(x->body);
	e->error = x->error;
	e->status = x->status;
	e->rtype = xstrdup(x->resp_content_type);
	if (x->resp_body == FT_ECHO)
		e->echo = true;
	else if (x->resp_body != NULL) {
		e->rbody_len = x->resp_body_len != 0 ? x->resp_body_len :
		    strlen(x->resp_body);
		e->rbody = xstrndup(x->resp_body, e->rbody_len);
	}
	e->retry_after_ms = x->retry_after_ms;
	e->unbounded = x->unbounded;
	for (size_t i = 0; x->chunks != NULL && x->chunks[i] != NULL; i++)
		ex_chunk(e, x->chunks[i], strlen(x->chunks[i]));
	e->block = x->block;
}

/* ---- scripts ------------------------------------------------------------- */

/* Unescapes \n \t \r \\ in place; returns the new length. */
static size_t
unescape(char *s)
{
	size_t o = 0;

	for (size_t i = 0; s[i] != '\0'; i++) {
		if (s[i] == '\\' && s[i + 1] != '\0') {
			i++;
			s[o++] = s[i] == 'n' ? '\n' : s[i] == 't' ? '\t' :
			    s[i] == 'r' ? '\r' : s[i];
		} else
			s[o++] = s[i];
	}
	s[o] = '\0';
	return o;
}

static char *
script_file(const char *dir, const char *file, size_t *ret_len)
{
	char *name = kc_asprintf("%s%s", dir, file);
	char *text, *copy;
	size_t len;

	ck_assert_ptr_nonnull(name);
	text = tu_fixture(name, &len);
	kc_free(name);
	copy = xstrndup(text, len);
	kc_free(text);
	*ret_len = len;
	return copy;
}

static int
script_int(const char *script, int line, const char *s)
{
	int v;

	ck_assert_msg(kc_parse_int(s, &v) == 0, "%s:%d: not a number: %s", script,
	    line, s);
	return v;
}

void
ft_load_script(struct fake_transport *ft, const char *name)
{
	char *text = tu_fixture(name, NULL);
	char dir[256];
	const char *slash = strrchr(name, '/');
	struct ft_ex *e = NULL;
	char *next = text;
	int line = 0;

	ck_assert_uint_lt((size_t)(slash != NULL ? slash - name + 1 : 0), sizeof(dir));
	memcpy(dir, name, slash != NULL ? (size_t)(slash - name + 1) : 0);
	dir[slash != NULL ? slash - name + 1 : 0] = '\0';
	while (next != NULL) {
		char *l = next, *cmd, *arg;
		size_t n;

		if ((next = strchr(l, '\n')) != NULL)
			*next++ = '\0';
		line++;
		while (*l == ' ' || *l == '\t')
			l++;
		if (*l == '\0' || *l == '#')
			continue;
		cmd = l;
		arg = l + strcspn(l, " \t");
		if (*arg != '\0')
			*arg++ = '\0';
		arg += strspn(arg, " \t");
		n = strlen(arg);
		while (n > 0 && (arg[n - 1] == ' ' || arg[n - 1] == '\t' ||
		    arg[n - 1] == '\r'))
			arg[--n] = '\0';
		if (strcmp(cmd, "expect") == 0) {
			char *path = arg + strcspn(arg, " \t");

			ck_assert_msg(*path != '\0', "%s:%d: expect METHOD PATH", name, line);
			*path++ = '\0';
			path += strspn(path, " \t");
			e = ex_add(ft);
			e->method = xstrdup(arg);
			e->path = xstrdup(path);
			e->line = line;
			continue;
		}
		ck_assert_msg(e != NULL, "%s:%d: %s before any expect", name, line, cmd);
		if (strcmp(cmd, "ctype") == 0)
			e->ctype = xstrdup(arg);
		else if (strcmp(cmd, "body") == 0) {
			size_t len;

			e->body = script_file(dir, arg, &len);
		} else if (strcmp(cmd, "body-text") == 0) {
			e->body = xstrdup(arg);
			(void)unescape(e->body);
		} else if (strcmp(cmd, "reply") == 0) {
			char *file = arg + strcspn(arg, " \t");

			if (*file != '\0')
				*file++ = '\0';
			file += strspn(file, " \t");
			e->status = script_int(name, line, arg);
			if (strcmp(file, "echo") == 0)
				e->echo = true;
			else if (file[0] != '\0' && strcmp(file, "-") != 0)
				e->rbody = script_file(dir, file, &e->rbody_len);
		} else if (strcmp(cmd, "reply-text") == 0) {
			e->rbody = xstrdup(arg);
			e->rbody_len = unescape(e->rbody);
		} else if (strcmp(cmd, "reply-type") == 0)
			e->rtype = xstrdup(arg);
		else if (strcmp(cmd, "retry-after") == 0)
			e->retry_after_ms = (uint32_t)script_int(name, line, arg);
		else if (strcmp(cmd, "unbounded") == 0)
			e->unbounded = true;
		else if (strcmp(cmd, "chunk") == 0) {
			size_t len;
			char *data = script_file(dir, arg, &len);

			ex_chunk(e, data, len);
			free(data);
		} else if (strcmp(cmd, "chunk-text") == 0) {
			char *t = xstrdup(arg);

			ex_chunk(e, t, unescape(t));
			free(t);
		} else if (strcmp(cmd, "chunks") == 0) {
			char *sz = arg + strcspn(arg, " \t");
			size_t len, piece;
			char *data;
			int v;

			ck_assert_msg(*sz != '\0', "%s:%d: chunks FILE N", name, line);
			*sz++ = '\0';
			v = script_int(name, line, sz + strspn(sz, " \t"));
			ck_assert_int_gt(v, 0);
			piece = (size_t)v;
			data = script_file(dir, arg, &len);
			for (size_t off = 0; off < len; off += piece)
				ex_chunk(e, data + off, KC_MIN(piece, len - off));
			free(data);
		} else if (strcmp(cmd, "block") == 0)
			e->block = true;
		else if (strcmp(cmd, "error") == 0)
			e->error = script_int(name, line, arg);
		else
			ck_abort_msg("%s:%d: unknown directive %s", name, line, cmd);
	}
	kc_free(text);
}

/* ---- the ops ------------------------------------------------------------- */

void
ft_fail_open(struct fake_transport *ft, int code)
{
	ft->open_error = code;
}

const struct kc_transport_opts *
ft_opts(const struct fake_transport *ft)
{
	return &ft->opts;
}

unsigned
ft_opens(const struct fake_transport *ft)
{
	return ft->opens;
}

unsigned
ft_closes(const struct fake_transport *ft)
{
	return ft->closes;
}

size_t
ft_nrequests(const struct fake_transport *ft)
{
	return ft->nreqs;
}

const struct ft_request *
ft_request(const struct fake_transport *ft, size_t i)
{
	ck_assert_uint_lt(i, ft->nreqs);
	return &ft->reqs[i];
}

size_t
ft_pending(const struct fake_transport *ft)
{
	return ft->nex - ft->next;
}

static int
fake_open(const struct kc_transport_opts *opts, void **ret, struct kc_status *st)
{
	struct fake_transport *ft = current;
	struct ft_handle *h;

	ck_assert_msg(ft != NULL, "fake transport: open() without ft_new()");
	if (ft->open_error != 0)
		return kc_status_set(st, ft->open_error, "fake: open refused");
	if ((h = kc_malloc(sizeof(*h))) == NULL)
		return -ENOMEM;
	h->ft = ft;
	ft->opts = *opts;
	ft->opens++;
	*ret = h;
	return 0;
}

static void *
fake_close(void *arg)
{
	struct ft_handle *h = arg;

	if (h == NULL)
		return NULL;
	h->ft->closes++;
	return kc_free(h);
}

static bool
bodies_equal(const char *want, const char *got, size_t got_len)
{
	struct json_object *a = json_tokener_parse(want);
	struct json_object *b = json_tokener_parse(got);
	bool eq;

	if (a != NULL && b != NULL)
		eq = json_object_equal(a, b) != 0;
	else
		eq = strlen(want) == got_len && memcmp(want, got, got_len) == 0;
	json_object_put(a);
	json_object_put(b);
	return eq;
}

/* Records the request and returns the expectation it matches. */
static struct ft_ex *
take(struct fake_transport *ft, const struct kc_http_req *req, bool stream)
{
	struct ft_request *q;
	struct ft_ex *e;

	ft->reqs = xrealloc(ft->reqs, (ft->nreqs + 1) * sizeof(*ft->reqs));
	q = &ft->reqs[ft->nreqs++];
	q->method = xstrdup(req->method);
	q->path = xstrdup(req->path);
	q->content_type = xstrdup(req->content_type);
	q->accept = xstrdup(req->accept);
	q->body = req->body != NULL ? xstrndup(req->body, req->body_len) : xstrdup("");
	q->body_len = req->body != NULL ? req->body_len : 0;
	q->idempotent = req->idempotent;
	q->stream = stream;
	q->timeout_ms = req->timeout_ms;

	ck_assert_msg(ft->next < ft->nex, "fake transport: unexpected request %s %s",
	    req->method, req->path);
	e = &ft->ex[ft->next++];
	ck_assert_msg(strcmp(e->method, req->method) == 0 && strcmp(e->path, req->path) == 0,
	    "fake transport: expected %s %s (line %d), got %s %s", e->method, e->path,
	    e->line, req->method, req->path);
	if (e->ctype != NULL)
		ck_assert_msg(req->content_type != NULL &&
		    strcmp(e->ctype, req->content_type) == 0,
		    "fake transport: %s %s: content type %s, expected %s", req->method,
		    req->path, req->content_type != NULL ? req->content_type : "(none)",
		    e->ctype);
	if (e->body != NULL)
		ck_assert_msg(bodies_equal(e->body, q->body, q->body_len),
		    "fake transport: %s %s: body\n  %s\nexpected\n  %s", req->method,
		    req->path, q->body, e->body);
	return e;
}

static bool
is_cancelled(struct fake_transport *ft)
{
	bool c;

	pthread_mutex_lock(&ft->mu);
	c = ft->cancelled;
	pthread_mutex_unlock(&ft->mu);
	return c;
}

/* Fills the answer's status line and headers. */
static void
answer(const struct ft_ex *e, struct kc_http_resp *resp)
{
	resp->status = e->status;
	(void)kc_strlcpy(resp->content_type, e->rtype != NULL ? e->rtype :
	    "application/json", sizeof(resp->content_type));
	resp->retry_after_ms = e->retry_after_ms;
}

static int
answer_body(struct fake_transport *ft, const struct ft_ex *e,
    const struct kc_http_req *req, struct kc_http_resp *resp, struct kc_status *st)
{
	size_t max = ft->opts.max_response != 0 ? ft->opts.max_response :
	    KC_RESPONSE_MAX_DEFAULT;
	int r = 0;

	kc_buf_init(&resp->body, e->unbounded ? SIZE_MAX - 1 : max);
	if (e->echo && req->body != NULL)
		r = kc_buf_append(&resp->body, req->body, req->body_len);
	else if (e->rbody != NULL)
		r = kc_buf_append(&resp->body, e->rbody, e->rbody_len);
	if (r == -E2BIG)
		return kc_status_set(st, r, "fake: response larger than %zu bytes", max);
	return r;
}

static int
fake_request(void *arg, const struct kc_http_req *req, struct kc_http_resp *resp,
    struct kc_status *st)
{
	struct ft_handle *h = arg;
	struct ft_ex *e;

	if (is_cancelled(h->ft))
		return kc_status_set(st, -ECANCELED, "fake: cancelled");
	e = take(h->ft, req, false);
	if (e->error != 0)
		return kc_status_set(st, e->error, "fake: scripted failure");
	answer(e, resp);
	return answer_body(h->ft, e, req, resp, st);
}

static int
fake_stream(void *arg, const struct kc_http_req *req, struct kc_http_resp *resp,
    kc_chunk_fn *fn, void *fn_arg, struct kc_status *st)
{
	struct ft_handle *h = arg;
	struct fake_transport *ft = h->ft;
	struct ft_ex *e;
	int r;

	if (is_cancelled(ft))
		return kc_status_set(st, -ECANCELED, "fake: cancelled");
	e = take(ft, req, true);
	if (e->error != 0)
		return kc_status_set(st, e->error, "fake: scripted failure");
	answer(e, resp);
	if (e->status < 200 || e->status > 299)
		return answer_body(ft, e, req, resp, st);
	kc_buf_init(&resp->body, 0);
	for (size_t i = 0; i < e->nchunks; i++) {
		if (is_cancelled(ft))
			return kc_status_set(st, -ECANCELED, "fake: cancelled");
		if ((r = fn(fn_arg, e->chunks[i], e->chunk_lens[i])) != 0)
			return kc_status_set(st, r, "fake: the stream callback refused");
	}
	if (!e->block)
		return 0;
	pthread_mutex_lock(&ft->mu);
	ft->blocked = true;
	pthread_cond_broadcast(&ft->cv);
	while (!ft->cancelled)
		pthread_cond_wait(&ft->cv, &ft->mu);
	ft->blocked = false;
	pthread_mutex_unlock(&ft->mu);
	return kc_status_set(st, -ECANCELED, "fake: cancelled");
}

static void
fake_cancel(void *arg)
{
	struct ft_handle *h = arg;

	pthread_mutex_lock(&h->ft->mu);
	h->ft->cancelled = true;
	pthread_cond_broadcast(&h->ft->cv);
	pthread_mutex_unlock(&h->ft->mu);
}

static void
fake_reset_cancel(void *arg)
{
	struct ft_handle *h = arg;

	pthread_mutex_lock(&h->ft->mu);
	h->ft->cancelled = false;
	pthread_mutex_unlock(&h->ft->mu);
}

void
ft_wait_blocked(struct fake_transport *ft)
{
	pthread_mutex_lock(&ft->mu);
	while (!ft->blocked)
		pthread_cond_wait(&ft->cv, &ft->mu);
	pthread_mutex_unlock(&ft->mu);
}

bool
ft_cancelled(struct fake_transport *ft)
{
	return is_cancelled(ft);
}

const struct kc_transport_ops fake_transport_ops = {
	.name = "fake",
	.open = fake_open,
	.request = fake_request,
	.stream = fake_stream,
	.cancel = fake_cancel,
	.reset_cancel = fake_reset_cancel,
	.close = fake_close,
};

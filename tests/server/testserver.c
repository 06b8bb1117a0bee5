/*
 * testserver.c: a scripted loopback HTTPS server on libwebsockets.
 *
 * ts_start() generates a CA, a server certificate for localhost,
 * 127.0.0.1 and ::1, a client certificate the server trusts and an
 * unrelated CA (lib/cert.c), parses the script (format in
 * tests/fixtures/server/README), creates an lws context listening on
 * 127.0.0.1 with a port the kernel picks, and runs lws_service() in its
 * own thread until ts_stop().
 *
 * Threads: the lws thread owns the context, the connections and the
 * script cursor; the test thread only reads the request log, which a
 * mutex guards (records are immutable once appended, so the pointers
 * ts_request() returns stay valid until ts_stop()). ts_stop() sets a
 * flag, wakes the loop with lws_cancel_service(), joins the thread and
 * only then destroys the context, so every lws callback runs on one
 * thread at a time.
 *
 * Each request is answered by the next exchange of the script. An
 * answer is a little program run from LWS_CALLBACK_HTTP_WRITEABLE, one
 * lws_write() per callback as lws requires: delays are lws_sul timers
 * that ask for the next writable callback when they fire; "hang" simply
 * never asks; "close" returns -1 so lws drops the connection. Streamed
 * answers carry no Content-Length: on HTTP/1.1 each chunk is framed with
 * chunked transfer coding here, because lws 4.1 only chunks its own
 * compressed output and would otherwise end the body by closing the
 * connection, which a client cannot tell from a complete stream; on h2
 * lws sends DATA frames and END_STREAM.
 *
 * The server allocates with libc, not kc_malloc(): a test's
 * fail_alloc_after() in the client thread must never reach this thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <libwebsockets.h>

#include <kc/alloc.h>
#include <kc/cert.h>
#include <kc/str.h>

#include "testserver.h"

#ifndef KC_FIXTURES
#define KC_FIXTURES	"tests/fixtures"	/* the Makefile passes the full path */
#endif

#define TS_LINE_MAX	(1u << 20)	/* longest script line */
#define TS_FILE_MAX	(64u << 20)	/* largest script or body-file */
#define TS_BODY_MAX	(64u << 20)	/* request bodies are cut here */
#define TS_PIECE	16384		/* body bytes per lws_write() */
#define TS_HEAD_MAX	8192		/* response head buffer */

enum step_kind {
	STEP_DELAY,
	STEP_HANG,
	STEP_CLOSE,
	STEP_HEAD,
	STEP_CHUNK,
};

struct step {
	enum step_kind	 kind;
	unsigned	 ms;
	char		*data;
	size_t		 len;
};

struct header {
	char	*name;		/* lower case, with the ':' */
	char	*value;
};

struct exchange {
	int		 line;		/* of its "request" */
	char		*method;	/* NULL: any */
	char		*prefix;	/* NULL: any path */
	unsigned	 repeat;	/* 0: forever */
	unsigned	 used;
	int		 status;
	struct header	*headers;
	size_t		 nheaders;
	char		*body;
	size_t		 body_len;
	bool		 echo;
	bool		 handler;	/* the body comes from ts_opts.handler */
	bool		 streamed;	/* has a chunk or head step */
	struct step	*steps;
	size_t		 nsteps;
};

struct ts_server {
	struct lws_context	*ctx;
	pthread_t		 thread;
	bool			 thread_started;
	atomic_bool		 stop;
	int			 port;
	char			 url[64];
	struct kc_cert_pair	*ca, *srv, *client, *other;
	struct lws_protocols	 protocols[2];
	ts_handler_fn		*handler;
	void			*handler_arg;

	/* The script: read by the lws thread only, after ts_start(). */
	struct exchange		*ex;
	size_t			 nex;
	size_t			 next;

	/* The request log, under 'mu'. */
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	struct ts_request	**reqs;
	size_t			 nreqs;
	size_t			 capreqs;
	size_t			 nconns;
};

/* Per HTTP transaction (lws reuses it across keep-alive requests). */
struct conn {
	struct ts_server	*s;
	struct lws		*wsi;
	lws_sorted_usec_list_t	 sul;
	bool			 sul_armed;
	struct ts_request	*req;		/* being received */
	struct exchange		*ex;		/* the answer */
	struct exchange		 own;		/* an error answer */
	const char		*body;		/* what the answer sends */
	char			*made;		/* a handler's body */
	size_t			 body_len;
	size_t			 step;
	size_t			 off;
	bool			 h2;
	bool			 waiting;	/* on a timer, or hung */
	bool			 head_sent;
	bool			 ended;		/* h2 END_STREAM sent */
	bool			 answering;
};

/* ------------------------------------------------------------------ */
/* Small helpers. */

static char *
xstrndup(const char *s, size_t n)
{
	char *p = malloc(n + 1);

	if (p != NULL) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

static char *
xstrdup(const char *s)
{
	return s != NULL ? xstrndup(s, strlen(s)) : NULL;
}

static void
request_free(struct ts_request *r)
{
	if (r == NULL)
		return;
	free(r->method);
	free(r->path);
	free(r->authorization);
	free(r->content_type);
	free(r->accept);
	free(r->user_agent);
	free(r->accept_encoding);
	free(r->host);
	free(r->impersonate_user);
	free(r->impersonate_group);
	free(r->body);
	free(r);
}

static void
exchange_clear(struct exchange *e)
{
	free(e->method);
	free(e->prefix);
	for (size_t i = 0; i < e->nheaders; i++) {
		free(e->headers[i].name);
		free(e->headers[i].value);
	}
	free(e->headers);
	free(e->body);
	for (size_t i = 0; i < e->nsteps; i++)
		free(e->steps[i].data);
	free(e->steps);
	memset(e, 0, sizeof(*e));
}

/* ------------------------------------------------------------------ */
/* The script. */

static int
script_error(int line, const char *msg, const char *arg)
{
	fprintf(stderr, "testserver: script line %d: %s%s%s\n", line, msg,
	    arg != NULL ? ": " : "", arg != NULL ? arg : "");
	return -EINVAL;
}

/* Decodes \n \r \t \\ and \xHH; other backslashes stay as they are. */
static int
unescape(const char *s, char **ret, size_t *ret_len)
{
	size_t n = strlen(s), o = 0;
	char *out = malloc(n + 1);

	if (out == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\' && i + 1 < n) {
			char e = s[i + 1];

			if (e == 'n' || e == 'r' || e == 't' || e == '\\') {
				out[o++] = e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ?
				    '\t' : '\\';
				i++;
				continue;
			}
			if (e == 'x' && i + 3 < n) {
				char hex[3] = { s[i + 2], s[i + 3], '\0' };
				char *end;
				long v = strtol(hex, &end, 16);

				if (*end == '\0') {
					out[o++] = (char)v;
					i += 3;
					continue;
				}
			}
		}
		out[o++] = c;
	}
	out[o] = '\0';
	*ret = out;
	*ret_len = o;
	return 0;
}

static int
append_bytes(char **buf, size_t *len, const char *data, size_t n)
{
	char *p = realloc(*buf, *len + n + 1);

	if (p == NULL)
		return -ENOMEM;
	memcpy(p + *len, data, n);
	*len += n;
	p[*len] = '\0';
	*buf = p;
	return 0;
}

static int
add_step(struct exchange *e, enum step_kind kind, unsigned ms, char *data, size_t len)
{
	struct step *st = realloc(e->steps, (e->nsteps + 1) * sizeof(*st));

	if (st == NULL) {
		free(data);
		return -ENOMEM;
	}
	e->steps = st;
	e->steps[e->nsteps++] = (struct step){ kind, ms, data, len };
	if (kind == STEP_CHUNK || kind == STEP_HEAD)
		e->streamed = true;
	return 0;
}

static int
parse_uint(const char *s, unsigned max, unsigned *ret)
{
	uint64_t v;

	if (kc_parse_u64(s, &v) < 0 || v > max)
		return -EINVAL;
	*ret = (unsigned)v;
	return 0;
}

static int
read_body_file(const char *name, char **ret, size_t *ret_len)
{
	char path[4096];
	char *text = NULL;
	size_t len;
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", KC_FIXTURES, name) >= sizeof(path))
		return -ENAMETOOLONG;
	if ((r = kc_read_file(path, TS_FILE_MAX, &text, &len)) < 0)
		return r;
	*ret = xstrndup(text, len);
	kc_free(text);
	if (*ret == NULL)
		return -ENOMEM;
	*ret_len = len;
	return 0;
}

/* One directive of the exchange 'e'. */
static int
parse_directive(struct exchange *e, int line, const char *word, const char *arg)
{
	unsigned v;
	char *data;
	size_t len;
	int r;

	if (strcmp(word, "status") == 0) {
		if (parse_uint(arg, 999, &v) < 0 || v < 100)
			return script_error(line, "bad status", arg);
		e->status = (int)v;
	} else if (strcmp(word, "header") == 0) {
		const char *colon = strchr(arg, ':');
		struct header *h;

		if (colon == NULL || colon == arg)
			return script_error(line, "header needs \"Name: value\"", arg);
		if ((h = realloc(e->headers, (e->nheaders + 1) * sizeof(*h))) == NULL)
			return -ENOMEM;
		e->headers = h;
		h = &e->headers[e->nheaders];
		h->name = xstrndup(arg, (size_t)(colon - arg) + 1);
		colon++;
		while (*colon == ' ' || *colon == '\t')
			colon++;
		h->value = xstrdup(colon);
		if (h->name == NULL || h->value == NULL) {
			free(h->name);
			free(h->value);
			return -ENOMEM;
		}
		for (char *p = h->name; *p != '\0'; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p = (char)(*p - 'A' + 'a');
		e->nheaders++;
	} else if (strcmp(word, "body") == 0) {
		if ((r = unescape(arg, &data, &len)) < 0)
			return r;
		r = append_bytes(&e->body, &e->body_len, data, len);
		free(data);
		if (r < 0)
			return r;
	} else if (strcmp(word, "body-file") == 0) {
		if ((r = read_body_file(arg, &data, &len)) < 0)
			return script_error(line, "cannot read body-file", arg);
		r = append_bytes(&e->body, &e->body_len, data, len);
		free(data);
		if (r < 0)
			return r;
	} else if (strcmp(word, "handler") == 0) {
		e->handler = true;
	} else if (strcmp(word, "echo") == 0) {
		e->echo = true;
	} else if (strcmp(word, "repeat") == 0) {
		if (strcmp(arg, "forever") == 0)
			e->repeat = 0;
		else if (parse_uint(arg, 1000000, &v) < 0 || v == 0)
			return script_error(line, "bad repeat count", arg);
		else
			e->repeat = v;
	} else if (strcmp(word, "delay") == 0) {
		if (parse_uint(arg, 600000, &v) < 0)
			return script_error(line, "bad delay", arg);
		return add_step(e, STEP_DELAY, v, NULL, 0);
	} else if (strcmp(word, "chunk") == 0) {
		if ((r = unescape(arg, &data, &len)) < 0)
			return r;
		if (len == 0) {
			free(data);
			return script_error(line, "empty chunk", NULL);
		}
		return add_step(e, STEP_CHUNK, 0, data, len);
	} else if (strcmp(word, "head") == 0) {
		return add_step(e, STEP_HEAD, 0, NULL, 0);
	} else if (strcmp(word, "close") == 0) {
		return add_step(e, STEP_CLOSE, 0, NULL, 0);
	} else if (strcmp(word, "hang") == 0) {
		return add_step(e, STEP_HANG, 0, NULL, 0);
	} else {
		return script_error(line, "unknown directive", word);
	}
	return 0;
}

static int
parse_request_line(struct exchange *e, int line, const char *arg)
{
	const char *sp = strchr(arg, ' ');

	*e = (struct exchange){ .line = line, .repeat = 1, .status = 200 };
	if (*arg == '\0')
		return 0;
	if (sp == NULL)
		sp = arg + strlen(arg);
	if (!(sp - arg == 1 && arg[0] == '*') &&
	    (e->method = xstrndup(arg, (size_t)(sp - arg))) == NULL)
		return -ENOMEM;
	while (*sp == ' ')
		sp++;
	if (*sp != '\0') {
		if (*sp != '/' || strchr(sp, ' ') != NULL)
			return script_error(line, "bad path prefix", sp);
		if ((e->prefix = xstrdup(sp)) == NULL)
			return -ENOMEM;
	}
	return 0;
}

static int
check_exchange(const struct exchange *e)
{
	if (e->streamed && (e->body != NULL || e->echo))
		return script_error(e->line, "an exchange with chunks cannot have a body",
		    NULL);
	if (e->echo && e->body != NULL)
		return script_error(e->line, "echo and body do not mix", NULL);
	return 0;
}

static int
parse_script(struct ts_server *s, const char *text)
{
	const char *p = text;
	int line = 0, r;

	while (*p != '\0') {
		const char *nl = strchr(p, '\n'), *end;
		char *buf, *word, *arg;
		size_t n;

		end = nl != NULL ? nl : p + strlen(p);
		line++;
		n = (size_t)(end - p);
		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (n > TS_LINE_MAX)
			return script_error(line, "line too long", NULL);
		if ((buf = xstrndup(p, n)) == NULL)
			return -ENOMEM;
		p = nl != NULL ? nl + 1 : end;

		word = buf;
		while (*word == ' ' || *word == '\t')
			word++;
		if (*word == '\0' || *word == '#') {
			free(buf);
			continue;
		}
		arg = word;
		while (*arg != '\0' && *arg != ' ' && *arg != '\t')
			arg++;
		if (*arg != '\0') {
			*arg++ = '\0';
			while (*arg == ' ' || *arg == '\t')
				arg++;
		}
		if (strcmp(word, "request") == 0) {
			struct exchange *ex;

			if (s->nex > 0 && (r = check_exchange(&s->ex[s->nex - 1])) < 0) {
				free(buf);
				return r;
			}
			if ((ex = realloc(s->ex, (s->nex + 1) * sizeof(*ex))) == NULL) {
				free(buf);
				return -ENOMEM;
			}
			s->ex = ex;
			r = parse_request_line(&s->ex[s->nex], line, arg);
			s->nex++;
		} else if (s->nex == 0) {
			r = script_error(line, "directive before the first \"request\"", word);
		} else {
			r = parse_directive(&s->ex[s->nex - 1], line, word, arg);
		}
		free(buf);
		if (r < 0)
			return r;
	}
	if (s->nex > 0)
		return check_exchange(&s->ex[s->nex - 1]);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Requests. */

static char *
copy_token(struct lws *wsi, enum lws_token_indexes tok)
{
	int n = lws_hdr_total_length(wsi, tok);
	char *p;

	if (n <= 0)
		return NULL;
	if ((p = malloc((size_t)n + 1)) == NULL)
		return NULL;
	if (lws_hdr_copy(wsi, p, n + 1, tok) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

static char *
copy_custom(struct lws *wsi, const char *name)
{
	int n = lws_hdr_custom_length(wsi, name, (int)strlen(name));
	char *p;

	if (n < 0)
		return NULL;
	if ((p = malloc((size_t)n + 1)) == NULL)
		return NULL;
	if (lws_hdr_custom_copy(wsi, p, n + 1, name, (int)strlen(name)) < 0) {
		free(p);
		return NULL;
	}
	return p;
}

/* Percent-encodes like Go's url.QueryEscape: unreserved bytes stay. */
static int
query_escape(char **buf, size_t *len, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	char enc[3];
	int r;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~') {
			r = append_bytes(buf, len, s + i, 1);
		} else if (c == ' ') {
			r = append_bytes(buf, len, "+", 1);
		} else {
			enc[0] = '%';
			enc[1] = hex[c >> 4];
			enc[2] = hex[c & 15];
			r = append_bytes(buf, len, enc, 3);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * "?a=1&b=2" from lws's decoded URI arguments, each name and value
 * encoded again, so the query reads as a client that encodes like Go's
 * url.QueryEscape sent it. NULL when there are none.
 */
static int
copy_query(struct lws *wsi, char **ret)
{
	char *q = NULL, *frag;
	size_t len = 0;
	int n, r = 0;

	*ret = NULL;
	for (int i = 0; (n = lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, i)) > 0;
	    i++) {
		const char *eq;

		if ((frag = malloc((size_t)n + 1)) == NULL) {
			r = -ENOMEM;
			break;
		}
		if (lws_hdr_copy_fragment(wsi, frag, n + 1, WSI_TOKEN_HTTP_URI_ARGS, i) < 0) {
			free(frag);
			break;
		}
		eq = strchr(frag, '=');
		if ((r = append_bytes(&q, &len, i == 0 ? "?" : "&", 1)) < 0 ||
		    (r = query_escape(&q, &len, frag, eq != NULL ? (size_t)(eq - frag) :
		    strlen(frag))) < 0 ||
		    (eq != NULL && ((r = append_bytes(&q, &len, "=", 1)) < 0 ||
		    (r = query_escape(&q, &len, eq + 1, strlen(eq + 1))) < 0))) {
			free(frag);
			break;
		}
		free(frag);
	}
	if (r < 0) {
		free(q);
		return r;
	}
	*ret = q;
	return 0;
}

static const char *const method_names[] = {
	[LWSHUMETH_GET] = "GET",
	[LWSHUMETH_POST] = "POST",
	[LWSHUMETH_OPTIONS] = "OPTIONS",
	[LWSHUMETH_PUT] = "PUT",
	[LWSHUMETH_PATCH] = "PATCH",
	[LWSHUMETH_DELETE] = "DELETE",
	[LWSHUMETH_CONNECT] = "CONNECT",
	[LWSHUMETH_HEAD] = "HEAD",
};

static int
begin_request(struct conn *c, struct lws *wsi)
{
	struct ts_request *r;
	char *uri = NULL, *args;
	int m, len = 0;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return -ENOMEM;
	c->req = r;
	m = lws_http_get_uri_and_method(wsi, &uri, &len);
	if (m == LWSHUMETH_COLON_PATH)
		r->method = copy_token(wsi, WSI_TOKEN_HTTP_COLON_METHOD);
	else if (m >= 0 && (size_t)m < sizeof(method_names) / sizeof(method_names[0]) &&
	    method_names[m] != NULL)
		r->method = xstrdup(method_names[m]);
	if (r->method == NULL && (r->method = xstrdup("?")) == NULL)
		return -ENOMEM;
	if (uri == NULL || len < 0)
		len = 0;
	if (copy_query(wsi, &args) < 0)
		return -ENOMEM;
	if (args != NULL) {
		size_t n = (size_t)len + strlen(args) + 1;

		if ((r->path = malloc(n)) != NULL)
			snprintf(r->path, n, "%.*s%s", len, uri != NULL ? uri : "", args);
		free(args);
	} else {
		r->path = xstrndup(uri != NULL ? uri : "", (size_t)len);
	}
	if (r->path == NULL)
		return -ENOMEM;
	r->authorization = copy_token(wsi, WSI_TOKEN_HTTP_AUTHORIZATION);
	r->content_type = copy_token(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE);
	r->accept = copy_token(wsi, WSI_TOKEN_HTTP_ACCEPT);
	r->user_agent = copy_token(wsi, WSI_TOKEN_HTTP_USER_AGENT);
	r->accept_encoding = copy_token(wsi, WSI_TOKEN_HTTP_ACCEPT_ENCODING);
	r->host = copy_token(wsi, WSI_TOKEN_HOST);
	if (r->host == NULL)
		r->host = copy_token(wsi, WSI_TOKEN_HTTP_COLON_AUTHORITY);
	r->impersonate_user = copy_custom(wsi, "impersonate-user:");
	r->impersonate_group = copy_custom(wsi, "impersonate-group:");
	r->http2 = c->h2;
	if ((r->body = xstrdup("")) == NULL)
		return -ENOMEM;
	return 0;
}

static int
record_request(struct ts_server *s, struct ts_request *r)
{
	int ret = 0;

	pthread_mutex_lock(&s->mu);
	if (s->nreqs == s->capreqs) {
		size_t cap = s->capreqs != 0 ? s->capreqs * 2 : 16;
		struct ts_request **p = realloc(s->reqs, cap * sizeof(*p));

		if (p == NULL) {
			ret = -ENOMEM;
			goto out;
		}
		s->reqs = p;
		s->capreqs = cap;
	}
	s->reqs[s->nreqs++] = r;
	pthread_cond_broadcast(&s->cv);
out:
	pthread_mutex_unlock(&s->mu);
	return ret;
}

/* ------------------------------------------------------------------ */
/* Answers. */

static void
error_answer(struct conn *c, const char *fmt, ...) _printf_(2, 3);

static void
error_answer(struct conn *c, const char *fmt, ...)
{
	va_list ap;
	char msg[1024];

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	exchange_clear(&c->own);
	c->own.status = 500;
	c->own.body = xstrdup(msg);
	c->own.body_len = c->own.body != NULL ? strlen(c->own.body) : 0;
	c->ex = &c->own;
}

/* Picks the exchange that answers c->req, or an error answer. */
static void
choose_answer(struct conn *c)
{
	struct ts_server *s = c->s;
	const struct ts_request *r = c->req;
	struct exchange *e;

	if (s->next >= s->nex) {
		error_answer(c, "script exhausted: no exchange left for %s %s", r->method,
		    r->path);
		return;
	}
	e = &s->ex[s->next];
	if ((e->method != NULL && strcmp(e->method, r->method) != 0) ||
	    (e->prefix != NULL && strncmp(e->prefix, r->path, strlen(e->prefix)) != 0)) {
		error_answer(c, "script mismatch: exchange at line %d expects %s %s, got %s %s",
		    e->line, e->method != NULL ? e->method : "*",
		    e->prefix != NULL ? e->prefix : "/", r->method, r->path);
		s->next = s->nex;	/* every later request fails too */
		return;
	}
	if (e->repeat != 0 && ++e->used >= e->repeat)
		s->next++;
	c->ex = e;
}

static void
conn_timer(lws_sorted_usec_list_t *sul)
{
	struct conn *c = lws_container_of(sul, struct conn, sul);

	c->sul_armed = false;
	c->waiting = false;
	lws_callback_on_writable(c->wsi);
}

static void
conn_reset(struct conn *c)
{
	if (c->sul_armed) {
		lws_sul_cancel(&c->sul);
		c->sul_armed = false;
	}
	request_free(c->req);
	c->req = NULL;
	free(c->made);
	c->made = NULL;
	exchange_clear(&c->own);
	c->ex = NULL;
	c->body = NULL;
	c->body_len = 0;
	c->step = 0;
	c->off = 0;
	c->waiting = false;
	c->head_sent = false;
	c->ended = false;
	c->answering = false;
}

/* The request is complete: log it and start answering. */
static int
finish_request(struct conn *c)
{
	struct ts_request *r = c->req;

	choose_answer(c);
	if (c->ex->handler && c->s->handler != NULL) {
		c->made = c->s->handler(c->s->handler_arg, r, &c->body_len);
		c->body = c->made != NULL ? c->made : "";
		if (c->made == NULL)
			c->body_len = 0;
	} else if (c->ex->echo) {
		c->body = r->body;
		c->body_len = r->body_len;
	} else {
		c->body = c->ex->body != NULL ? c->ex->body : "";
		c->body_len = c->ex->body_len;
	}
	c->answering = true;
	if (record_request(c->s, r) < 0)
		return -1;
	c->req = NULL;		/* the log owns it; c->body may point into it */
	lws_callback_on_writable(c->wsi);
	return 0;
}

static bool
has_header(const struct exchange *e, const char *name)
{
	for (size_t i = 0; i < e->nheaders; i++)
		if (strcmp(e->headers[i].name, name) == 0)
			return true;
	return false;
}

static int
write_head(struct conn *c)
{
	unsigned char buf[LWS_PRE + TS_HEAD_MAX];
	unsigned char *start = buf + LWS_PRE, *p = start, *end = buf + sizeof(buf) - 1;
	const struct exchange *e = c->ex;
	bool empty = !e->streamed && c->body_len == 0;
	int flags = LWS_WRITE_HTTP_HEADERS, n;

	if (lws_add_http_header_status(c->wsi, (unsigned)e->status, &p, end))
		return -1;
	for (size_t i = 0; i < e->nheaders; i++)
		if (lws_add_http_header_by_name(c->wsi, (const unsigned char *)e->headers[i].name,
		    (const unsigned char *)e->headers[i].value,
		    (int)strlen(e->headers[i].value), &p, end))
			return -1;
	if (!has_header(e, "content-type:") &&
	    lws_add_http_header_by_token(c->wsi, WSI_TOKEN_HTTP_CONTENT_TYPE,
	    (const unsigned char *)"application/json", 16, &p, end))
		return -1;
	if (!e->streamed) {
		if (lws_add_http_header_content_length(c->wsi, c->body_len, &p, end))
			return -1;
	} else if (!c->h2) {
		if (lws_add_http_header_by_token(c->wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING,
		    (const unsigned char *)"chunked", 7, &p, end))
			return -1;
	}
	if (lws_finalize_http_header(c->wsi, &p, end))
		return -1;
	if (empty && c->h2) {
		flags |= LWS_WRITE_H2_STREAM_END;
		c->ended = true;
	}
	n = lws_ptr_diff(p, start);
	if (lws_write(c->wsi, start, (size_t)n, (enum lws_write_protocol)flags) != n)
		return -1;
	c->head_sent = true;
	return 0;
}

/* Writes 'len' bytes of data, framed as one chunk on HTTP/1.1 streams. */
static int
write_data(struct conn *c, const char *data, size_t len, bool final)
{
	unsigned char *buf, *start;
	size_t n = 0;
	int flags = final ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP, r;
	bool framed = c->ex->streamed && !c->h2;

	if ((buf = malloc(LWS_PRE + len + 32)) == NULL)
		return -1;
	start = buf + LWS_PRE;
	if (framed && len > 0)
		n = (size_t)snprintf((char *)start, 24, "%zx\r\n", len);
	if (len > 0)
		memcpy(start + n, data, len);
	n += len;
	if (framed) {
		if (len > 0) {
			memcpy(start + n, "\r\n", 2);
			n += 2;
		}
		if (final) {
			memcpy(start + n, "0\r\n\r\n", 5);
			n += 5;
		}
	}
	r = lws_write(c->wsi, start, n, (enum lws_write_protocol)flags);
	free(buf);
	if (r < 0 || (size_t)r != n)
		return -1;
	if (final)
		c->ended = true;
	return 0;
}

/* Ends the transaction; lws keeps the connection for the next one. */
static int
end_answer(struct conn *c)
{
	if (!c->ended && (c->ex->streamed || c->h2) && write_data(c, NULL, 0, true) < 0)
		return -1;
	c->answering = false;
	if (lws_http_transaction_completed(c->wsi))
		return -1;
	return 0;
}

/* One step of the answer program per writable callback. */
static int
answer_writable(struct conn *c)
{
	const struct exchange *e = c->ex;
	const struct step *st;
	size_t n;

	if (!c->answering || c->waiting)
		return 0;
	while (c->step < e->nsteps) {
		st = &e->steps[c->step];
		switch (st->kind) {
		case STEP_DELAY:
			c->step++;
			c->waiting = true;
			c->sul_armed = true;
			lws_sul_schedule(lws_get_context(c->wsi), 0, &c->sul, conn_timer,
			    (lws_usec_t)st->ms * LWS_US_PER_MS);
			return 0;
		case STEP_HANG:
			c->waiting = true;
			return 0;
		case STEP_CLOSE:
			return -1;
		case STEP_HEAD:
			c->step++;
			if (c->head_sent)
				continue;
			if (write_head(c) < 0)
				return -1;
			lws_callback_on_writable(c->wsi);
			return 0;
		case STEP_CHUNK:
			if (!c->head_sent) {
				if (write_head(c) < 0)
					return -1;
			} else {
				c->step++;
				if (write_data(c, st->data, st->len, false) < 0)
					return -1;
			}
			lws_callback_on_writable(c->wsi);
			return 0;
		}
	}
	if (!c->head_sent) {
		if (write_head(c) < 0)
			return -1;
		lws_callback_on_writable(c->wsi);
		return 0;
	}
	if (!e->streamed && c->off < c->body_len) {
		n = KC_MIN(c->body_len - c->off, (size_t)TS_PIECE);
		if (write_data(c, c->body + c->off, n, c->off + n == c->body_len) < 0)
			return -1;
		c->off += n;
		lws_callback_on_writable(c->wsi);
		return 0;
	}
	return end_answer(c);
}

static bool
has_request_body(struct lws *wsi)
{
	char buf[32];
	uint64_t v;

	if (lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH) <= 0 ||
	    lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH) >= (int)sizeof(buf))
		return false;
	if (lws_hdr_copy(wsi, buf, sizeof(buf), WSI_TOKEN_HTTP_CONTENT_LENGTH) < 0)
		return false;
	return kc_parse_u64(buf, &v) == 0 && v > 0;
}

static int
ts_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
    size_t len)
{
	struct ts_server *s;
	struct conn *c = user;

	switch (reason) {
	case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED:
		s = lws_context_user(lws_get_context(wsi));
		pthread_mutex_lock(&s->mu);
		s->nconns++;
		pthread_mutex_unlock(&s->mu);
		return 0;
	case LWS_CALLBACK_OPENSSL_PERFORM_CLIENT_CERT_VERIFICATION:
		/* 'len' is OpenSSL's verdict; non-zero from here rejects. */
		return len != 0 ? 0 : 1;
	case LWS_CALLBACK_HTTP:
		conn_reset(c);
		c->s = lws_context_user(lws_get_context(wsi));
		c->wsi = wsi;
		c->h2 = lws_get_network_wsi(wsi) != wsi;
		if (begin_request(c, wsi) < 0)
			return -1;
		if (has_request_body(wsi))
			return 0;	/* LWS_CALLBACK_HTTP_BODY_COMPLETION goes on */
		return finish_request(c);
	case LWS_CALLBACK_HTTP_BODY:
		/* lws 4.1 calls this with 0 bytes for "Content-Length: 0". */
		if (c->req == NULL || c->answering)
			return len == 0 ? 0 : -1;
		if (c->req->body_len + len <= TS_BODY_MAX &&
		    append_bytes(&c->req->body, &c->req->body_len, in, len) < 0)
			return -1;
		return 0;
	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
		/* lws also completes bodies we did not wait for (Content-Length: 0). */
		if (c->req == NULL || c->answering)
			return 0;
		return finish_request(c);
	case LWS_CALLBACK_HTTP_WRITEABLE:
		if (c == NULL || c->ex == NULL)
			return 0;
		return answer_writable(c);
	case LWS_CALLBACK_CLOSED_HTTP:
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
		if (c != NULL)
			conn_reset(c);
		return 0;
	default:
		break;
	}
	return lws_callback_http_dummy(wsi, reason, user, in, len);
}

/* ------------------------------------------------------------------ */
/* The server. */

static void *
ts_thread(void *arg)
{
	struct ts_server *s = arg;

	while (!atomic_load(&s->stop))
		if (lws_service(s->ctx, 0) < 0)
			break;
	return NULL;
}

static int
make_certs(struct ts_server *s, const char *dns_name)
{
	const char *const dns[] = { "localhost", dns_name, NULL };
	static const char *const ips[] = { "127.0.0.1", "::1", NULL };
	static const char *const orgs[] = { "system:masters", NULL };
	struct kc_status st = { 0 };
	int r;

	if ((r = kc_cert_create(&(struct kc_cert_opts){
		.cn = "trainyard-test-ca", .is_ca = true,
	}, NULL, &s->ca, &st)) < 0 ||
	    (r = kc_cert_create(&(struct kc_cert_opts){
		.cn = "localhost", .dns = dns, .ips = ips, .server = true,
	}, s->ca, &s->srv, &st)) < 0 ||
	    (r = kc_cert_create(&(struct kc_cert_opts){
		.cn = "test-user", .orgs = orgs, .client = true,
	}, s->ca, &s->client, &st)) < 0 ||
	    (r = kc_cert_create(&(struct kc_cert_opts){
		.cn = "unrelated-ca", .is_ca = true,
	}, NULL, &s->other, &st)) < 0)
		fprintf(stderr, "testserver: certificates: %s\n", st.message);
	return r;
}

/* The CA in a temporary file, for lws to read at context creation. */
static int
write_ca_file(const struct ts_server *s, char *path, size_t size)
{
	const char *tmp = getenv("TMPDIR");
	size_t off = 0;
	int fd;

	if ((size_t)snprintf(path, size, "%s/ts-ca-XXXXXX", tmp != NULL ? tmp : "/tmp") >=
	    size)
		return -ENAMETOOLONG;
	if ((fd = mkstemp(path)) < 0) {
		path[0] = '\0';
		return -errno;
	}
	while (off < s->ca->cert_pem_len) {
		ssize_t n = write(fd, s->ca->cert_pem + off, s->ca->cert_pem_len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return -EIO;
		}
		off += (size_t)n;
	}
	return close(fd) < 0 ? -errno : 0;
}

static void
log_to_stderr(int level, const char *line)
{
	(void)level;
	fprintf(stderr, "lws: %s", line);
}

int
ts_start(const struct ts_opts *opts, struct ts_server **ret)
{
	struct lws_context_creation_info info;
	struct ts_server *s;
	char *text = NULL, ca_path[4096] = "";
	int r;

	if (opts == NULL || (opts->script == NULL && opts->script_text == NULL))
		return -EINVAL;
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	atomic_init(&s->stop, false);

	s->handler = opts->handler;
	s->handler_arg = opts->handler_arg;
	if (opts->script_text != NULL) {
		r = parse_script(s, opts->script_text);
	} else if ((r = kc_read_file(opts->script, TS_FILE_MAX, &text, NULL)) < 0) {
		fprintf(stderr, "testserver: %s: %s\n", opts->script, strerrordesc_np(-r));
	} else {
		r = parse_script(s, text);
		kc_free(text);
	}
	if (r < 0 || (r = make_certs(s, opts->dns_name)) < 0)
		goto fail;

	if (getenv("TS_LWS_DEBUG") != NULL)
		lws_set_log_level(LLL_ERR | LLL_WARN | LLL_NOTICE | LLL_INFO, log_to_stderr);
	else
		lws_set_log_level(0, NULL);

	s->protocols[0] = (struct lws_protocols){
		.name = "http",
		.callback = ts_callback,
		.per_session_data_size = sizeof(struct conn),
	};
	memset(&info, 0, sizeof(info));
	info.port = 0;
	info.iface = "127.0.0.1";
	info.protocols = s->protocols;
	info.user = s;
	info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT |
	    LWS_SERVER_OPTION_DISABLE_IPV6;
	if (opts->require_client_cert) {
		/* lws 4.1 ignores server_ssl_ca_mem; it reads a file. */
		if ((r = write_ca_file(s, ca_path, sizeof(ca_path))) < 0)
			goto fail;
		info.options |= LWS_SERVER_OPTION_REQUIRE_VALID_OPENSSL_CLIENT_CERT;
		info.ssl_ca_filepath = ca_path;
	}
	info.server_ssl_cert_mem = s->srv->cert_pem;
	info.server_ssl_cert_mem_len = (unsigned)s->srv->cert_pem_len;
	info.server_ssl_private_key_mem = s->srv->key_pem;
	info.server_ssl_private_key_mem_len = (unsigned)s->srv->key_pem_len;
	info.alpn = opts->http2 ? "h2,http/1.1" : "http/1.1";
	info.max_http_header_data = 16384;
	info.vhost_name = "localhost";
	s->ctx = lws_create_context(&info);
	if (ca_path[0] != '\0')
		(void)unlink(ca_path);
	if (s->ctx == NULL) {
		fprintf(stderr, "testserver: lws_create_context failed\n");
		r = -EIO;
		goto fail;
	}
	s->port = lws_get_vhost_listen_port(lws_get_vhost_by_name(s->ctx, "localhost"));
	if (s->port <= 0) {
		fprintf(stderr, "testserver: no listening port\n");
		r = -EIO;
		goto fail;
	}
	snprintf(s->url, sizeof(s->url), "https://127.0.0.1:%d", s->port);
	if ((r = pthread_create(&s->thread, NULL, ts_thread, s)) != 0) {
		r = -r;
		goto fail;
	}
	s->thread_started = true;
	*ret = s;
	return 0;
fail:
	ts_stop(s);
	return r;
}

struct ts_server *
ts_stop(struct ts_server *s)
{
	if (s == NULL)
		return NULL;
	atomic_store(&s->stop, true);
	if (s->ctx != NULL)
		lws_cancel_service(s->ctx);
	if (s->thread_started)
		pthread_join(s->thread, NULL);
	if (s->ctx != NULL)
		lws_context_destroy(s->ctx);
	for (size_t i = 0; i < s->nex; i++)
		exchange_clear(&s->ex[i]);
	free(s->ex);
	for (size_t i = 0; i < s->nreqs; i++)
		request_free(s->reqs[i]);
	free(s->reqs);
	kc_cert_pair_free(s->ca);
	kc_cert_pair_free(s->srv);
	kc_cert_pair_free(s->client);
	kc_cert_pair_free(s->other);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
	return NULL;
}

const char *
ts_url(const struct ts_server *s)
{
	return s->url;
}

int
ts_port(const struct ts_server *s)
{
	return s->port;
}

const char *
ts_ca_pem(const struct ts_server *s)
{
	return s->ca->cert_pem;
}

const char *
ts_client_cert_pem(const struct ts_server *s)
{
	return s->client->cert_pem;
}

const char *
ts_client_key_pem(const struct ts_server *s)
{
	return s->client->key_pem;
}

const char *
ts_ca_pem_other(const struct ts_server *s)
{
	return s->other->cert_pem;
}

size_t
ts_nrequests(struct ts_server *s)
{
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = s->nreqs;
	pthread_mutex_unlock(&s->mu);
	return n;
}

const struct ts_request *
ts_request(struct ts_server *s, size_t i)
{
	const struct ts_request *r = NULL;

	pthread_mutex_lock(&s->mu);
	if (i < s->nreqs)
		r = s->reqs[i];
	pthread_mutex_unlock(&s->mu);
	return r;
}

size_t
ts_nconnections(struct ts_server *s)
{
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = s->nconns;
	pthread_mutex_unlock(&s->mu);
	return n;
}

bool
ts_wait_requests(struct ts_server *s, size_t n, unsigned ms)
{
	struct timespec deadline;
	bool ok;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += ms / 1000;
	deadline.tv_nsec += (long)(ms % 1000) * 1000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&s->mu);
	while (s->nreqs < n)
		if (pthread_cond_timedwait(&s->cv, &s->mu, &deadline) == ETIMEDOUT)
			break;
	ok = s->nreqs >= n;
	pthread_mutex_unlock(&s->mu);
	return ok;
}

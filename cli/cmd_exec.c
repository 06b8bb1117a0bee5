/*
 * cmd_exec.c: "kubectl trainyard exec RUN [--node I] [-it] [-c C] -- CMD":
 * a command in node I's pod of the Run's current session, over
 * WebSocket as kubectl 1.30+ does (v5.channel.k8s.io, else v4).
 *
 * The pod is found by its labels (trainyard.dev/run, session = the Run's
 * status.session, node-index), and waited for while it does not run yet
 * (--pod-running-timeout). libwebsockets is the client: TLS from the rest
 * config (CA, client certificate and key as memory blobs, or no checks
 * with insecure-skip-tls-verify), the bearer token (or basic auth) and
 * the impersonation headers added to the handshake.
 *
 * The stream: every message is a channel byte and data. 0 stdin (ours),
 * 1 stdout, 2 stderr, 3 the error channel (a metav1.Status: the exit
 * code), 4 resize (ours, {"Width","Height"}); v5 adds 255 + channel, the
 * half-close, which we send for stdin at its end. stdin and a self-pipe
 * for SIGWINCH are descriptors adopted into the same lws loop, so nothing
 * but lws's one poll() waits: stdin is read only while no frame of it
 * waits to be written (flow control), so a fast producer cannot grow
 * memory. With -t on a terminal, stdin is put in raw mode (restored on
 * every way out) and the terminal's size is sent at start and on SIGWINCH.
 *
 * The exit status is the remote command's; our own failures are 5 (and 4
 * for a Run or pod that does not exist), with the reason in words.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <libwebsockets.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/buf.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/str.h>

#include "admin.h"
#include "cli.h"

#define EXEC_PATH_MAX		(64u * 1024)	/* the request path with the command */
#define EXEC_IN_CHUNK		(16u * 1024)	/* stdin bytes per frame */
#define EXEC_STATUS_MAX		(64u * 1024)	/* the error channel's Status */
#define EXEC_POLL_MS		500		/* between looks at a pod that waits */
#define EXEC_CONNECT_S		30		/* the handshake */

enum {
	CH_STDIN = 0, CH_STDOUT = 1, CH_STDERR = 2, CH_ERROR = 3, CH_RESIZE = 4, CH_CLOSE = 255,
};

struct exec_sess {
	struct cli		*c;
	struct lws_context	*ctx;
	struct lws		*ws, *in_wsi, *sig_wsi;
	const char		*token;
	char			*basic;		/* "Basic ..." (a secret) */
	bool			 tty, in;
	bool			 v5, established, done;
	int			 http_status;
	char			 conn_err[320];
	/* One stdin frame waiting to be written: [LWS_PRE][channel][data]. */
	unsigned char		 frame[LWS_PRE + 1 + EXEC_IN_CHUNK];
	size_t			 frame_len;		/* channel byte + data; 0: none */
	bool			 in_eof, in_close_sent, resize_pending;
	/* The current incoming message's channel, kept over its fragments. */
	int			 rx_channel;
	struct kc_buf		 status;
	bool			 have_status;
	struct exec_result	 res;
};

/* SIGWINCH writes a byte here; the loop reads it (async-signal-safe). */
static int sig_pipe[2] = { -1, -1 };
static struct termios saved_tio;
static bool tio_saved;

static void
on_winch(int sig)
{
	int saved = errno;

	(void)sig;
	if (sig_pipe[1] >= 0)
		(void)!write(sig_pipe[1], "w", 1);
	errno = saved;
}

static void
tty_restore(void)
{
	if (tio_saved) {
		(void)tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_tio);
		tio_saved = false;
	}
}

static int
tty_raw(void)
{
	struct termios t;

	if (tcgetattr(STDIN_FILENO, &saved_tio) < 0)
		return -errno;
	tio_saved = true;
	t = saved_tio;
	cfmakeraw(&t);
	if (tcsetattr(STDIN_FILENO, TCSADRAIN, &t) < 0)
		return -errno;
	return 0;
}

static void
ask_write(struct exec_sess *s)
{
	if (s->ws != NULL && s->established)
		(void)lws_callback_on_writable(s->ws);
}

static int
write_all(int fd, const void *p, size_t n)
{
	const char *b = p;

	while (n > 0) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* A fragment of an incoming message. */
static void
on_rx(struct exec_sess *s, struct lws *wsi, const unsigned char *p, size_t n)
{
	if (lws_is_first_fragment(wsi)) {
		if (n == 0)
			return;
		s->rx_channel = p[0];
		p++;
		n--;
	}
	switch (s->rx_channel) {
	case CH_STDOUT:
		(void)write_all(STDOUT_FILENO, p, n);
		break;
	case CH_STDERR:
		(void)write_all(STDERR_FILENO, p, n);
		break;
	case CH_ERROR:
		/* Bounded: a Status is small; more is not one. */
		if (kc_buf_append(&s->status, p, n) < 0)
			kc_buf_reset(&s->status);
		if (lws_is_final_fragment(wsi) && s->status.len > 0) {
			if (exec_parse_status((const char *)s->status.data, s->status.len,
			    &s->res) == 0)
				s->have_status = true;
			kc_buf_reset(&s->status);
		}
		break;
	default:
		/* v5's close of a stream, and channels we do not know: nothing to do. */
		break;
	}
}

/* Reads stdin into the frame; stops reading until it is written. */
static int
on_stdin(struct exec_sess *s, struct lws *wsi)
{
	ssize_t n;

	if (s->frame_len > 0) {
		(void)lws_rx_flow_control(wsi, 0);
		return 0;
	}
	n = read(STDIN_FILENO, s->frame + LWS_PRE + 1, EXEC_IN_CHUNK);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0) {
		s->in_eof = true;
		s->in_wsi = NULL;
		ask_write(s);
		return -1;		/* closes the adopted descriptor */
	}
	s->frame[LWS_PRE] = CH_STDIN;
	s->frame_len = 1 + (size_t)n;
	(void)lws_rx_flow_control(wsi, 0);
	ask_write(s);
	return 0;
}

static void
send_resize(struct exec_sess *s)
{
	unsigned char buf[LWS_PRE + 64];
	struct winsize ws;
	size_t n;

	if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_col == 0)
		return;
	buf[LWS_PRE] = CH_RESIZE;
	n = exec_resize_msg(ws.ws_col, ws.ws_row, (char *)buf + LWS_PRE + 1,
	    sizeof(buf) - LWS_PRE - 1);
	(void)lws_write(s->ws, buf + LWS_PRE, 1 + n, LWS_WRITE_BINARY);
}

static int
on_writable(struct exec_sess *s)
{
	if (s->resize_pending) {
		s->resize_pending = false;
		send_resize(s);
		ask_write(s);
		return 0;
	}
	if (s->frame_len > 0) {
		if (lws_write(s->ws, s->frame + LWS_PRE, s->frame_len, LWS_WRITE_BINARY) <
		    (int)s->frame_len)
			return -1;
		s->frame_len = 0;
		if (s->in_wsi != NULL)
			(void)lws_rx_flow_control(s->in_wsi, 1);
		return 0;
	}
	if (s->in_eof && s->v5 && !s->in_close_sent) {
		unsigned char buf[LWS_PRE + 2];

		buf[LWS_PRE] = CH_CLOSE;
		buf[LWS_PRE + 1] = CH_STDIN;
		s->in_close_sent = true;
		if (lws_write(s->ws, buf + LWS_PRE, 2, LWS_WRITE_BINARY) < 2)
			return -1;
	}
	return 0;
}

static int
add_header(struct lws *wsi, const char *name, const char *value, unsigned char **p,
    unsigned char *end)
{
	return lws_add_http_header_by_name(wsi, (const unsigned char *)name,
	    (const unsigned char *)value, (int)strlen(value), p, end);
}

static int
on_headers(struct exec_sess *s, struct lws *wsi, unsigned char **p, size_t len)
{
	const struct kc_rest_config *rc = s->c->rc;
	unsigned char *end = *p + len - 1;
	char *bearer;
	int r = 0;

	if (s->token != NULL) {
		if ((bearer = kc_asprintf("Bearer %s", s->token)) == NULL)
			return -1;
		r = add_header(wsi, "authorization:", bearer, p, end);
		kc_free_secret(bearer);
	} else if (s->basic != NULL) {
		r = add_header(wsi, "authorization:", s->basic, p, end);
	}
	if (r == 0 && rc->impersonate_user != NULL)
		r = add_header(wsi, "impersonate-user:", rc->impersonate_user, p, end);
	for (char **g = rc->impersonate_groups; r == 0 && g != NULL && *g != NULL; g++)
		r = add_header(wsi, "impersonate-group:", *g, p, end);
	if (r == 0)
		r = add_header(wsi, "user-agent:", "kubectl-trainyard/" KC_VERSION, p, end);
	return r != 0 ? -1 : 0;
}

static int
callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
	struct exec_sess *s = lws_context_user(lws_get_context(wsi));
	char proto[64];

	(void)user;
	if (s == NULL)
		return 0;
	switch (reason) {
	case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
		return on_headers(s, wsi, in, len);
	case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
		s->http_status = (int)lws_http_client_http_response(wsi);
		(void)snprintf(s->conn_err, sizeof(s->conn_err), "%s",
		    in != NULL ? (const char *)in : "connection failed");
		s->ws = NULL;
		s->done = true;
		break;
	case LWS_CALLBACK_CLIENT_FILTER_PRE_ESTABLISH:
		/* The subprotocol the server chose, while its headers are still here. */
		if (lws_hdr_copy(wsi, proto, sizeof(proto), WSI_TOKEN_PROTOCOL) > 0)
			s->v5 = strcmp(proto, "v5.channel.k8s.io") == 0;
		break;
	case LWS_CALLBACK_CLIENT_ESTABLISHED:
		s->established = true;
		if (s->in) {
			lws_sock_file_fd_type fd = { .filefd = STDIN_FILENO };

			s->in_wsi = lws_adopt_descriptor_vhost(lws_get_vhost(wsi),
			    LWS_ADOPT_RAW_FILE_DESC, fd, "ty-exec", NULL);
			if (s->in_wsi == NULL)
				s->in_eof = true;
		}
		if (s->tty)
			s->resize_pending = true;
		ask_write(s);
		break;
	case LWS_CALLBACK_CLIENT_RECEIVE:
		on_rx(s, wsi, in, len);
		break;
	case LWS_CALLBACK_CLIENT_WRITEABLE:
		return on_writable(s);
	case LWS_CALLBACK_CLIENT_CLOSED:
		s->ws = NULL;
		s->done = true;
		break;
	case LWS_CALLBACK_RAW_RX_FILE:
		if (wsi == s->sig_wsi) {
			char b[16];

			(void)!read(sig_pipe[0], b, sizeof(b));
			if (s->tty) {
				s->resize_pending = true;
				ask_write(s);
			}
			return 0;
		}
		return on_stdin(s, wsi);
	case LWS_CALLBACK_RAW_CLOSE_FILE:
		/* lws closes stdin itself on a hang-up, without a read of 0. */
		if (wsi == s->in_wsi) {
			s->in_wsi = NULL;
			s->in_eof = true;
			ask_write(s);
		}
		if (wsi == s->sig_wsi)
			s->sig_wsi = NULL;
		break;
	default:
		break;
	}
	return 0;
}

static const struct lws_protocols protocols[] = {
	{ "ty-exec", callback, 0, EXEC_IN_CHUNK + 64, 0, NULL, 0 },
	{ NULL, NULL, 0, 0, 0, NULL, 0 }
};

/* "https://host:port/prefix" into its parts ('host' without brackets). */
static int
parse_server(const char *server, bool *tls, char *host, size_t hsize, int *port,
    const char **prefix)
{
	const char *p, *h, *e;
	size_t n;

	if (strncmp(server, "https://", 8) == 0) {
		*tls = true;
		p = server + 8;
	} else if (strncmp(server, "http://", 7) == 0) {
		*tls = false;
		p = server + 7;
	} else {
		return -EINVAL;
	}
	*port = *tls ? 443 : 80;
	if (*p == '[') {
		h = p + 1;
		if ((e = strchr(h, ']')) == NULL)
			return -EINVAL;
		n = (size_t)(e - h);
		p = e + 1;
	} else {
		h = p;
		n = strcspn(p, ":/");
		p += n;
	}
	if (n == 0 || n >= hsize)
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	if (*p == ':') {
		char num[8];
		size_t d = strcspn(p + 1, "/");

		if (d == 0 || d >= sizeof(num))
			return -EINVAL;
		memcpy(num, p + 1, d);
		num[d] = '\0';
		if (kc_parse_int(num, port) < 0 || *port <= 0 || *port > 65535)
			return -EINVAL;
		p += 1 + d;
	}
	*prefix = p;
	return 0;
}

/* The upgrade was refused: why, in words. */
static int
refused(struct exec_sess *s, const char *pod)
{
	struct cli *c = s->c;

	switch (s->http_status) {
	case 401:
		return cli_error(c, "exec into pod %s: the server does not accept your credentials "
		    "(HTTP 401): log in again or check the kubeconfig's user", pod);
	case 403:
		(void)fprintf(stderr, "error: exec into pod %s: not allowed: you cannot create "
		    "pods/exec in namespace %s (HTTP 403)\n  (ask your project admin; \"kubectl "
		    "auth can-i create pods --subresource=exec -n %s\" checks it)\n", pod, c->ns,
		    c->ns);
		return CLI_ERROR;
	case 404:
		return cli_error(c, "exec into pod %s: the pod is gone (HTTP 404); run the "
		    "command again", pod);
	case 0:
		/* lws's "HS: ..." messages: an answer came, and it was no upgrade. */
		if (strncmp(s->conn_err, "HS:", 3) != 0)
			return cli_error(c, "exec into pod %s: cannot reach the API server %s: %s",
			    pod, c->rc->server, s->conn_err);
		/* FALLTHROUGH */
	default:
		return cli_error(c, "exec into pod %s: the API server refused the WebSocket "
		    "upgrade (HTTP %d, %s). It speaks neither v5.channel.k8s.io nor "
		    "v4.channel.k8s.io for exec: it may only speak SPDY (Kubernetes before "
		    "1.30 without WebSockets, or a proxy that drops the upgrade), which "
		    "kubectl-trainyard does not; use \"kubectl exec\" there", pod, s->http_status,
		    s->conn_err);
	}
}

static int
stream(struct cli *c, const char *pod, const char *container, char *const *cmd, size_t ncmd,
    bool in, bool tty)
{
	struct lws_context_creation_info info;
	struct lws_client_connect_info ci;
	struct exec_sess s = { .c = c, .in = in, .tty = tty };
	struct kc_status st = { 0 };
	_cleanup_(kc_freep) char *path = NULL, *full = NULL;
	char host[256];
	const char *prefix;
	bool tls, sig_adopted;
	int port, r, rc = CLI_ERROR;
	uint64_t deadline;

	if (parse_server(c->rc->server, &tls, host, sizeof(host), &port, &prefix) < 0)
		return cli_error(c, "the kubeconfig's server \"%s\" is not an http(s) URL",
		    c->rc->server);
	if ((path = exec_path(c->ns, pod, container, cmd, ncmd, in, tty, EXEC_PATH_MAX)) ==
	    NULL || (full = kc_asprintf("%s%s", prefix, path)) == NULL)
		return cli_error(c, "the command is longer than %u bytes", EXEC_PATH_MAX);
	if (c->rc->token != NULL || c->rc->token_file != NULL) {
		if ((r = kc_rest_config_token(c->rc, &s.token, &st)) < 0)
			return cli_error(c, "the kubeconfig's token: %s", st.message);
	} else if (c->rc->username != NULL && c->rc->password != NULL) {
		_cleanup_(kc_freep) char *up = NULL;
		char *b64 = NULL;

		if ((up = kc_asprintf("%s:%s", c->rc->username, c->rc->password)) == NULL ||
		    kc_base64_encode(up, strlen(up), 0, &b64, NULL) < 0)
			return cli_error(c, "out of memory");
		s.basic = kc_asprintf("Basic %s", b64);
		kc_free_secret(b64);
		kc_free_secret(up);
		up = NULL;
		if (s.basic == NULL)
			return cli_error(c, "out of memory");
	}
	kc_buf_init(&s.status, EXEC_STATUS_MAX);
	lws_set_log_level(0, NULL);
	memset(&info, 0, sizeof(info));
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = protocols;
	info.gid = -1;
	info.uid = -1;
	info.user = &s;
	info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
	if (c->rc->ca_pem != NULL && !c->rc->insecure_skip_tls_verify) {
		info.client_ssl_ca_mem = c->rc->ca_pem;
		info.client_ssl_ca_mem_len = (unsigned)c->rc->ca_pem_len;
	}
	if (c->rc->cert_pem != NULL && c->rc->key_pem != NULL) {
		info.client_ssl_cert_mem = c->rc->cert_pem;
		info.client_ssl_cert_mem_len = (unsigned)c->rc->cert_pem_len;
		info.client_ssl_key_mem = c->rc->key_pem;
		info.client_ssl_key_mem_len = (unsigned)c->rc->key_pem_len;
	}
	if ((s.ctx = lws_create_context(&info)) == NULL) {
		kc_free_secret(s.basic);
		kc_buf_free(&s.status);
		return cli_error(c, "cannot set up the WebSocket client (TLS: check the "
		    "kubeconfig's certificate-authority and client certificate)");
	}
	memset(&ci, 0, sizeof(ci));
	ci.context = s.ctx;
	ci.address = host;
	ci.port = port;
	ci.path = full;
	ci.host = c->rc->tls_server_name != NULL ? c->rc->tls_server_name : host;
	ci.origin = NULL;
	ci.protocol = "v5.channel.k8s.io,v4.channel.k8s.io";
	ci.local_protocol_name = "ty-exec";
	ci.alpn = "http/1.1";
	ci.ietf_version_or_minus_one = -1;
	ci.pwsi = &s.ws;
	if (tls) {
		ci.ssl_connection = LCCSCF_USE_SSL;
		if (c->rc->insecure_skip_tls_verify)
			ci.ssl_connection |= LCCSCF_ALLOW_SELFSIGNED |
			    LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK | LCCSCF_ALLOW_EXPIRED |
			    LCCSCF_ALLOW_INSECURE;
	}
	if (tty && (r = tty_raw()) < 0) {
		tty_restore();
		lws_context_destroy(s.ctx);
		kc_free_secret(s.basic);
		kc_buf_free(&s.status);
		return cli_error(c, "-t: cannot put the terminal in raw mode: %s", kc_strerror(r));
	}
	if (tty && pipe(sig_pipe) == 0) {
		lws_sock_file_fd_type fd = { .filefd = sig_pipe[0] };

		(void)fcntl(sig_pipe[1], F_SETFL, O_NONBLOCK);
		(void)fcntl(sig_pipe[0], F_SETFL, O_NONBLOCK);
		s.sig_wsi = lws_adopt_descriptor_vhost(lws_get_vhost_by_name(s.ctx, "default"),
		    LWS_ADOPT_RAW_FILE_DESC, fd, "ty-exec", NULL);
		(void)signal(SIGWINCH, on_winch);
	}
	deadline = kc_clock_now_ms() + EXEC_CONNECT_S * 1000ULL;
	if (lws_client_connect_via_info(&ci) == NULL && !s.done) {
		s.done = true;
		(void)snprintf(s.conn_err, sizeof(s.conn_err), "cannot connect to %s:%d", host,
		    port);
	}
	while (!s.done) {
		if (lws_service(s.ctx, 0) < 0)
			break;
		if (!s.established && kc_clock_now_ms() > deadline) {
			(void)snprintf(s.conn_err, sizeof(s.conn_err), "no answer in %d s",
			    EXEC_CONNECT_S);
			break;
		}
	}
	(void)signal(SIGWINCH, SIG_DFL);
	tty_restore();
	if (tty && s.tty)
		(void)fputs("\r\n", stderr);
	sig_adopted = s.sig_wsi != NULL;
	lws_context_destroy(s.ctx);
	if (sig_pipe[1] >= 0) {
		(void)close(sig_pipe[1]);
		if (!sig_adopted)
			(void)close(sig_pipe[0]);
		/* else lws closed the adopted end with the context */
		sig_pipe[0] = sig_pipe[1] = -1;
	}
	kc_free_secret(s.basic);
	kc_buf_free(&s.status);
	if (!s.established)
		return refused(&s, pod);
	if (!s.have_status)
		return cli_error(c, "exec into pod %s: the connection ended before the command's "
		    "exit status came", pod);
	if (s.res.exit_code >= 0) {
		if (s.res.exit_code != 0 && !tty)
			(void)fprintf(stderr, "command terminated with exit code %d\n",
			    s.res.exit_code);
		rc = s.res.exit_code;
	} else if (s.res.forbidden) {
		(void)fprintf(stderr, "error: exec into pod %s: not allowed: %s\n  (ask your "
		    "project admin; \"kubectl auth can-i create pods --subresource=exec -n %s\" "
		    "checks it)\n", pod, s.res.message, c->ns);
		rc = CLI_ERROR;
	} else {
		rc = cli_error(c, "exec into pod %s: %s", pod, s.res.message);
	}
	return rc;
}

/* ---- the pod ------------------------------------------------------------ */

static bool
container_running(const struct json_object *pod, const char *container)
{
	struct json_object *cs = kc_json_get(pod, "status");

	cs = cs != NULL ? kc_json_arr_of(cs, "containerStatuses") : NULL;
	for (size_t i = 0; cs != NULL && i < json_object_array_length(cs); i++) {
		struct json_object *e = json_object_array_get_idx(cs, i);
		const char *n = kc_json_str(e, "name");

		if (n != NULL && strcmp(n, container) == 0)
			return kc_json_get(e, "state", "running") != NULL;
	}
	return false;
}

/*
 * Finds node 'node's pod of the Run's current session and waits, at most
 * 'timeout_ms', until its container runs. The pod's name into 'pod'.
 */
static int
find_pod(struct cli *c, const char *run, int64_t node, const char *container,
    uint64_t timeout_ms, char *pod, size_t size)
{
	uint64_t deadline = kc_clock_now_ms() + timeout_ms;
	char waiting[256] = "", why[256];
	bool said = false;
	int r;

	for (;;) {
		_cleanup_(kc_json_putp) struct json_object *rn = NULL, *list = NULL;
		struct json_object *items;
		struct kc_status st = { 0 };
		const char *phase, *name = NULL;
		char sel[512];
		int64_t session, nodes;

		if ((r = cli_get_run(c, run, &rn)) != CLI_OK)
			return r;
		nodes = kc_json_int(rn, 0, "spec", "nodes");
		if (nodes > 0 && node >= nodes)
			return cli_error(c, "--node %lld: run %s has %lld nodes (0 to %lld)",
			    (long long)node, run, (long long)nodes, (long long)nodes - 1);
		session = kc_json_int(rn, 0, "status", "session");
		phase = kc_json_str(rn, "status", "phase");
		if (session > 0) {
			(void)snprintf(sel, sizeof(sel), "trainyard.dev/run=%s,trainyard.dev/"
			    "session=%lld,trainyard.dev/node-index=%lld", run, (long long)session,
			    (long long)node);
			r = kc_client_list(c->cl, &(struct kc_list_opts){ .res = &kc_res_pods,
			    .ns = c->ns, .label_selector = sel }, &list, &st);
			if (r < 0)
				return cli_api_error(c, "list pods", r, &st);
			items = kc_json_arr_of(list, "items");
			if (items != NULL && json_object_array_length(items) > 0) {
				struct json_object *p = json_object_array_get_idx(items, 0);
				const char *pp = kc_json_str(p, "status", "phase");

				name = kc_json_str(p, "metadata", "name");
				if (name != NULL && pp != NULL && strcmp(pp, "Running") == 0 &&
				    container_running(p, container)) {
					(void)kc_strlcpy(pod, name, size);
					return CLI_OK;
				}
				if (pp != NULL && (strcmp(pp, "Succeeded") == 0 ||
				    strcmp(pp, "Failed") == 0))
					return cli_error(c, "pod %s (node %lld of run %s, session "
					    "%lld) has ended (%s): nothing runs there to exec into",
					    name != NULL ? name : "?", (long long)node, run,
					    (long long)session, pp);
				(void)snprintf(why, sizeof(why), "pod %s is %s", name != NULL ? name :
				    "?", pp != NULL ? pp : "not scheduled yet");
			} else {
				(void)snprintf(why, sizeof(why), "session %lld has no pod for node "
				    "%lld yet", (long long)session, (long long)node);
			}
		} else {
			(void)snprintf(why, sizeof(why), "its session has not started");
		}
		if (phase != NULL && (strcmp(phase, "Succeeded") == 0 ||
		    strcmp(phase, "Failed") == 0 || strcmp(phase, "Stopped") == 0))
			return cli_error(c, "run %s has ended (phase %s): its pods no longer run; "
			    "\"%s restart %s\" starts a new session", run, phase, c->prog, run);
		if (kc_clock_now_ms() >= deadline) {
			(void)fprintf(stderr, "error: run %s: %s after %llu s; try again later or "
			    "with a longer --pod-running-timeout (\"%s describe %s\" says why)\n",
			    run, why, (unsigned long long)(timeout_ms / 1000), c->prog, run);
			return CLI_TIMEOUT;
		}
		if (!said || strcmp(why, waiting) != 0) {
			(void)fprintf(stderr, "waiting for run %s: %s\n", run, why);
			(void)kc_strlcpy(waiting, why, sizeof(waiting));
			said = true;
		}
		(void)kc_clock_sleep_ms(EXEC_POLL_MS);
	}
}

static const char help[] =
    "Run a command in a node's pod of a Run's current session (pods/exec over\n"
    "WebSocket v5.channel.k8s.io, as kubectl 1.30+; v4 where the server has no v5).\n"
    "\n"
    "Usage: kubectl trainyard exec RUN [--node I] [-i] [-t] [-c CONTAINER]\n"
    "           [--pod-running-timeout 1m] -- COMMAND [ARGS...]\n"
    "\n"
    "  --node I                 the node (pod index), default 0\n"
    "  -i, --stdin              pass stdin to the command\n"
    "  -t, --tty                a terminal: stdin raw, the window size follows yours\n"
    "  -c, --container NAME     the container, default main\n"
    "  --pod-running-timeout D  how long to wait for the pod to run (default 1m)\n"
    "\n"
    "The exit status is the command's. Otherwise: 3 the pod did not run in time,\n"
    "4 no such Run, 5 any other error (not allowed, server unreachable, a server\n"
    "that only speaks SPDY), with the reason on stderr.\n"
    "\n"
    "Examples:\n"
    "  kubectl trainyard exec llama --node 2 -- nvidia-smi\n"
    "  kubectl trainyard exec llama -it -- bash\n"
    "  echo hello | kubectl trainyard exec llama -i -- cat\n";

static int
run(struct cli *c, int argc, char **argv)
{
	int64_t node = 0;
	bool in = false, tty = false, done, combo_it = false;
	const char *container = "main";
	uint64_t timeout_ms = 60000;
	const struct cli_flag flags[] = {
		{ "node", 0, CLI_FLAG_INT, &node, NULL },
		{ "stdin", 'i', CLI_FLAG_BOOL, &in, NULL },
		{ "tty", 't', CLI_FLAG_BOOL, &tty, NULL },
		{ "container", 'c', CLI_FLAG_STR, &container, NULL },
		{ "pod-running-timeout", 0, CLI_FLAG_DURATION, &timeout_ms, NULL },
		{ NULL, 0, 0, NULL, NULL },
	};
	char pod[256];
	int nargs, dd, r;

	/* "-it" and "-ti": two switches in one word, as kubectl takes them. */
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "-it") == 0 || strcmp(argv[i], "-ti") == 0) {
			argv[i] = "-i";
			combo_it = true;
		}
	}
	if ((r = cli_parse(c, &cli_cmd_exec, flags, argc, argv, &nargs, &dd, &done)) !=
	    CLI_OK || done)
		return r;
	if (combo_it)
		tty = true;
	if (dd != 1 || nargs < 2)
		return cli_error(c, "usage: %s exec RUN [--node I] [-it] -- COMMAND [ARGS...] (the "
		    "command after \"--\"); see %s exec --help", c->prog, c->prog);
	if (tty && !isatty(STDIN_FILENO)) {
		(void)fprintf(stderr, "Unable to use a TTY - input is not a terminal or the right "
		    "kind of file\n");
		tty = false;
	}
	if ((r = cli_connect(c)) != CLI_OK)
		return r;
	if ((r = find_pod(c, argv[1], node, container, timeout_ms, pod, sizeof(pod))) != CLI_OK)
		return r;
	(void)fflush(stdout);
	return stream(c, pod, container, argv + 2, (size_t)(nargs - 1), in, tty);
}

const struct cli_cmd cli_cmd_exec = {
	.name = "exec",
	.summary = "run a command in a node's pod of a Run",
	.help = help,
	.run = run,
};

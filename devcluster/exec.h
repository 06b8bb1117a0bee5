/*
 * exec.h: the exec plug-in, pods/exec over WebSocket.
 * What other files need from exec.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_EXEC_H
#define DEVCLUSTER_EXEC_H

#include "devcluster.h"

extern const struct dc_plugin exec_plugin;

#define EXEC_RX_BUFFER		(64 * 1024)	/* libwebsockets rx buffer of the protocols */
#define EXEC_OUT_MAX		(4u << 20)	/* one command's stdout or stderr */
#define EXEC_VARS_MAX		4096		/* environment variables */
#define EXEC_RESIZE_MAX		256		/* one resize message */

/* Channels of the v4/v5 stream protocols (the first byte of a message). */
enum {
	EXEC_CH_STDIN	= 0,
	EXEC_CH_STDOUT	= 1,
	EXEC_CH_STDERR	= 2,
	EXEC_CH_ERROR	= 3,
	EXEC_CH_RESIZE	= 4,
	EXEC_CH_CLOSE	= 255,		/* v5: 255, channel: that stream is closed */
};

struct exec_session;

struct exec_var {
	char	*name;
	char	*value;
};

/* An ordered environment (names unique). */
struct exec_vars {
	struct exec_var	*v;
	size_t		 n;
	size_t		 cap;
};

/* Where the kubelet's environment comes from (storage, or a test's fake). */
struct exec_lookup {
	/* A stored core/v1 object ("configmaps", "secrets", "services"), borrowed. */
	const struct json_object *(*get)(void *arg, const char *resource, const char *ns,
		    const char *name);
	/* The objects of a namespace (new references; free_list releases them). */
	int	(*list)(void *arg, const char *resource, const char *ns,
		    struct json_object ***ret, size_t *ret_n);
	void	(*free_list)(void *arg, struct json_object **objs, size_t n);
	void	*arg;
};

/* What a command sees. */
struct exec_ctx {
	const struct json_object *pod;
	const struct exec_vars	*env;
	bool			 stdin_open;	/* cat without files echoes stdin */
};

struct exec_result {
	struct kc_buf	 out;
	struct kc_buf	 err;
	int		 exit_code;
	bool		 not_found;	/* no such program: the runtime's error */
	bool		 reads_stdin;	/* cat: stdin goes to stdout until closed */
};

/* Incoming messages, fed piece by piece (exec_rx_feed()). */
struct exec_rx {
	int		 channel;	/* of the message being read; -1: none */
	bool		 v5;
	bool		 stdin_closed;
	size_t		 resize_len;
	char		 resize[EXEC_RESIZE_MAX];
};

enum exec_rx_kind {
	EXEC_RX_NONE,
	EXEC_RX_STDIN,		/* data, len */
	EXEC_RX_STDIN_CLOSE,	/* v5: the client closed stdin */
	EXEC_RX_RESIZE,		/* width, height */
};

struct exec_rx_ev {
	enum exec_rx_kind	 kind;
	const unsigned char	*data;
	size_t			 len;
	uint16_t		 width;
	uint16_t		 height;
};

/*
 * Serves pods/exec over WebSocket (v5.channel.k8s.io, v4.channel.k8s.io):
 * installs hooks.pod_exec; state in plugin_state(dc, &exec_plugin). exec_init: 0 or
 * -ENOMEM. exec_fini (after http_free()) frees every session; harmless
 * when not initialised.
 */
int	 exec_init(struct dc *) _must_check_;
void	 exec_fini(struct dc *);
/* Open sessions (tests, diagnostics). */
size_t	 exec_sessions(const struct dc *);
/*
 * http.c, for a WebSocket upgrade request ('protocols' the
 * Sec-WebSocket-Protocol header, may be NULL): answers it through
 * api_handle(). 0 with '*ret' when the upgrade is accepted (http.c puts
 * the session on the connection's opaque pointer and lets libwebsockets
 * finish the handshake), 1 when 'resp' holds the refusal, -ENOMEM.
 */
int	 exec_upgrade(struct dc *, struct dc_req *, const char *protocols,
	    struct dc_resp *resp, struct exec_session **ret) _must_check_;
/* The protocol libwebsockets will pick from an offer that we serve, or NULL. */
const char *exec_protocol_pick(const char *offer);
#ifdef LWS_PRE		/* only where libwebsockets is included (http.c, exec.c) */
/* The protocols' callback (http.c's table names v5 and v4). */
int	 exec_ws_callback(struct lws *, enum lws_callback_reasons, void *user, void *in,
	    size_t len);
#endif
/*
 * The pure parts, for tests. Variables: set replaces in place or appends
 * (-E2BIG past EXEC_VARS_MAX, -ENOMEM); get returns the value or NULL.
 */
int	 exec_vars_set(struct exec_vars *, const char *name, const char *value)
	    _must_check_;
const char *exec_vars_get(const struct exec_vars *, const char *name);
void	 exec_vars_free(struct exec_vars *);
/* $(VAR) expansion through the contexts in order (upstream's expansion.Expand). */
int	 exec_expand(const char *in, const struct exec_vars *const *ctx, size_t nctx,
	    struct kc_buf *out) _must_check_;
/* The pod's hostname (spec.hostname or the name, 63 chars), or its FQDN. */
void	 exec_hostname(const struct json_object *pod, bool fqdn, char *buf, size_t size);
/* /etc/hosts and /etc/resolv.conf as the kubelet and containerd write them. */
int	 exec_hosts_file(const struct json_object *pod, struct kc_buf *out) _must_check_;
int	 exec_resolv_conf(const struct json_object *pod, struct kc_buf *out) _must_check_;
/* A Service's link variables (envvars.FromServices) into 'v'. */
int	 exec_service_vars(const struct json_object *svc, struct exec_vars *v) _must_check_;
/* The environment of container 'ctr' of 'pod', as the process sees it. */
int	 exec_env(const struct exec_lookup *, const struct json_object *pod,
	    const struct json_object *ctr, struct exec_vars *ret) _must_check_;
/* Runs a built-in command: 0 (the outcome in 'res'), or -ENOMEM, -E2BIG. */
void	 exec_result_init(struct exec_result *);
void	 exec_result_free(struct exec_result *);
int	 exec_run(const struct exec_ctx *, char *const *argv, size_t argc,
	    struct exec_result *res) _must_check_;
/* containerd's error text for a program that is not there (random exec id). */
void	 exec_not_found_message(const char *argv0, char *buf, size_t size);
/* The error channel's Status: Success, NonZeroExitCode, or InternalError. */
int	 exec_status_json(int exit_code, const char *internal, struct kc_buf *out)
	    _must_check_;
/* "\n" to "\r\n", as a tty does. */
int	 exec_tty_translate(const char *in, size_t len, struct kc_buf *out) _must_check_;
/* One piece of an incoming message: at most one event in 'ev'. Always 0. */
int	 exec_rx_feed(struct exec_rx *, const unsigned char *data, size_t len, bool first,
	    bool final, struct exec_rx_ev *ev);

#endif

/*
 * exec.c: pods/exec over WebSocket (v5.channel.k8s.io and v4), answered by
 * a tiny built-in command set instead of a container runtime.
 *
 * The upgrade. http.c hands every WebSocket upgrade request to
 * exec_upgrade() (exec_plugin's upgrade) while libwebsockets still
 * holds the headers. It runs the
 * request through api_handle() like any other (authentication,
 * impersonation, faults, routing, RBAC with verb "get" for the GET that
 * client-go's WebSocket executor sends), and dispatch.c calls our hook
 * (hooks.pod_exec) for pods/<name>/exec. The hook does what
 * kube-apiserver's ExecLocation and the kubelet do before any byte is
 * streamed: pick the container (upstream's 400 messages), require a node,
 * check the streams, then either refuse the upgrade with a Status or
 * accept it with a session whose output is already computed. http.c then
 * lets libwebsockets finish the handshake and binds the connection to
 * our protocol; the session travels on the connection's opaque pointer.
 *
 * Why v5 errors come after the upgrade. kubectl 1.30+ (client-go's
 * FallbackExecutor) retries over SPDY whenever the WebSocket handshake is
 * refused, and kube-apiserver answers that POST with verb "create" (so
 * users with only "create pods/exec" still get in, and the message a user
 * sees is the SPDY attempt's). libwebsockets 4.1 answers every SPDY/3.1
 * upgrade itself, with a bare HTML 403, before any callback runs, so the
 * devcluster cannot serve that retry. For a v5 client we therefore run
 * the retry ourselves (the same request as a POST) and, when it fails
 * too, accept the WebSocket and send its Status on the error channel; v4
 * clients (which do not fall back) get the refusal before the upgrade,
 * as upstream.
 *
 * The container side follows kubelet and containerd: a container must be
 * running in status.containerStatuses (else "container not found"), the
 * environment is built as the kubelet does (envFrom, env with $(VAR)
 * expansion and valueFrom, service links), /etc/hosts, /etc/hostname and
 * /etc/resolv.conf are rendered as the kubelet and containerd write them,
 * and an unknown program fails as runc reports a missing executable.
 *
 * The stream. Every message is one channel byte and data: 0 stdin,
 * 1 stdout, 2 stderr, 3 the error channel (a metav1.Status as JSON),
 * 4 resize; v5 adds 255 + channel, the half-close of a stream. Output is
 * queued in frames of at most EXEC_FRAME_MAX bytes and written one frame
 * per writable callback; the Status goes last, then a normal close.
 * Reading stops (libwebsockets rx flow control) while more than
 * EXEC_QUEUE_MAX bytes wait, so a client that floods stdin and reads
 * nothing cannot grow the queue; text frames count as binary ones;
 * garbage (unknown channels, bad resize JSON) is ignored; a client that
 * vanishes frees its session in the close callback; sessions never
 * attached, or idle for EXEC_IDLE_MS, are swept by one loop timer that
 * runs only while sessions exist.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <libwebsockets.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/buf.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>

#include "devcluster.h"
#include "exec.h"

#define EXEC_SESSIONS_MAX	256		/* open sessions */
#define EXEC_QUEUE_MAX		(1u << 20)	/* queued output bytes per session */
#define EXEC_FRAME_MAX		(32u * 1024)	/* data bytes per frame (client buffer) */
#define EXEC_ARGS_MAX		256		/* command words */
#define EXEC_ATTACH_MS		10000		/* accepted, not yet established */
#define EXEC_IDLE_MS		(4u * 3600 * 1000) /* kubelet's streaming idle timeout */
#define EXEC_SWEEP_MS		1000
#define EXEC_PATH		"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define EXEC_CLUSTER_DNS	"10.96.0.10"
#define EXEC_CLUSTER_DOMAIN	"cluster.local"
#define EXEC_NODE_NAMESERVER	"10.0.0.2"	/* the simulated node's resolver */
#define EXEC_SEARCH_MAX		32		/* kubelet: MaxDNSSearchPaths */
#define EXEC_SEARCH_CHARS	2048		/* kubelet: MaxDNSSearchListChars */
#define EXEC_NAMESERVERS_MAX	3
#define EXEC_HOSTNAME_MAX	63

#define PROTO_V5		"v5.channel.k8s.io"
#define PROTO_V4		"v4.channel.k8s.io"

struct exec_frame {
	STAILQ_ENTRY(exec_frame) link;
	size_t			 len;		/* after LWS_PRE */
	unsigned char		 data[];
};

STAILQ_HEAD(exec_frames, exec_frame);

struct exec_session {
	TAILQ_ENTRY(exec_session) link;
	struct exec_state	*x;
	struct lws		*wsi;		/* NULL until established */
	uint64_t		 deadline_ms;	/* attach deadline, then idle */
	bool			 v5;
	bool			 tty;
	bool			 want_stdout;
	bool			 want_stderr;
	bool			 echo;		/* cat reading stdin */
	bool			 done;		/* the Status is queued */
	bool			 closing;
	bool			 rx_paused;
	struct exec_frames	 q;
	size_t			 qbytes;
	struct exec_rx		 rx;
	struct kc_buf		 out;		/* computed output */
	struct kc_buf		 err;
	char			*status;	/* the error channel's Status */
};

TAILQ_HEAD(exec_sessions, exec_session);

/* The upgrade api_handle() is answering (exec_upgrade() to the hook). */
struct exec_pending {
	bool			 v5;
	struct exec_session	*session;	/* set by the hook on success */
};

struct exec_state {
	struct dc		*dc;
	struct exec_sessions	 sessions;
	size_t			 n;
	struct exec_pending	*pending;
	struct dc_timer		 sweep;
};

static int	exec_hook(struct dc *, const struct dc_req *, const struct json_object *,
		    struct dc_resp *);

/*
 * Variables
 */

void
exec_vars_free(struct exec_vars *v)
{
	for (size_t i = 0; i < v->n; i++) {
		kc_free(v->v[i].name);
		kc_free(v->v[i].value);
	}
	kc_free(v->v);
	memset(v, 0, sizeof(*v));
}

const char *
exec_vars_get(const struct exec_vars *v, const char *name)
{
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->v[i].name, name) == 0)
			return v->v[i].value;
	return NULL;
}

/* Sets 'name' (in place when present, else appended). 0, -E2BIG, -ENOMEM. */
int
exec_vars_set(struct exec_vars *v, const char *name, const char *value)
{
	char *nv;

	if ((nv = kc_strdup(value != NULL ? value : "")) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->v[i].name, name) == 0) {
			kc_free(v->v[i].value);
			v->v[i].value = nv;
			return 0;
		}
	if (v->n == EXEC_VARS_MAX) {
		kc_free(nv);
		return -E2BIG;
	}
	if (v->n == v->cap) {
		size_t cap = v->cap == 0 ? 16 : v->cap * 2;
		struct exec_var *a = kc_realloc(v->v, cap * sizeof(*a));

		if (a == NULL) {
			kc_free(nv);
			return -ENOMEM;
		}
		v->v = a;
		v->cap = cap;
	}
	if ((v->v[v->n].name = kc_strdup(name)) == NULL) {
		kc_free(nv);
		return -ENOMEM;
	}
	v->v[v->n++].value = nv;
	return 0;
}

/*
 * Kubernetes' $(VAR) expansion (third_party/forked/golang/expansion): a
 * reference resolves through 'ctx' in order and stays as written when no
 * context has it, "$$" is one "$", any other "$x" and an unclosed "$("
 * stay as they are.
 */
int
exec_expand(const char *in, const struct exec_vars *const *ctx, size_t nctx,
    struct kc_buf *out)
{
	size_t n = strlen(in), check = 0;
	int r;

	for (size_t i = 0; i < n; i++) {
		if (in[i] != '$' || i + 1 >= n)
			continue;
		if ((r = kc_buf_append(out, in + check, i - check)) < 0)
			return r;
		if (in[i + 1] == '$') {
			r = kc_buf_putc(out, '$');
			i += 1;
		} else if (in[i + 1] == '(') {
			const char *close = memchr(in + i + 2, ')', n - i - 2);

			if (close == NULL) {
				r = kc_buf_puts(out, "$(");
				i += 1;
			} else {
				size_t len = (size_t)(close - (in + i + 2));
				const char *val = NULL;
				char *name;

				if ((name = kc_strndup(in + i + 2, len)) == NULL)
					return -ENOMEM;
				for (size_t c = 0; c < nctx && val == NULL; c++)
					val = exec_vars_get(ctx[c], name);
				kc_free(name);
				if (val != NULL)
					r = kc_buf_puts(out, val);
				else
					r = kc_buf_append(out, in + i, len + 3);
				i += len + 2;
			}
		} else {
			r = kc_buf_append(out, in + i, 2);
			i += 1;
		}
		if (r < 0)
			return r;
		check = i + 1;
	}
	return kc_buf_append(out, in + check, n - check);
}

/*
 * Names, hosts and DNS
 */

static bool
host_network(const struct json_object *pod)
{
	return kc_json_bool(pod, false, "spec", "hostNetwork");
}

/* The pod's hostname as the kubelet sets it (GeneratePodHostNameAndDomain). */
void
exec_hostname(const struct json_object *pod, bool fqdn, char *buf, size_t size)
{
	const char *name = kc_json_str(pod, "metadata", "name");
	const char *h = kc_json_str(pod, "spec", "hostname");
	const char *sub = kc_json_str(pod, "spec", "subdomain");
	const char *ns = kc_json_str(pod, "metadata", "namespace");
	char host[EXEC_HOSTNAME_MAX + 1];
	size_t n;

	if (host_network(pod)) {
		const char *node = kc_json_str(pod, "spec", "nodeName");

		(void)kc_strlcpy(buf, node != NULL ? node : "", size);
		return;
	}
	if (h == NULL || h[0] == '\0')
		h = name != NULL ? name : "";
	/* truncatePodHostnameIfNeeded: 63 characters, no trailing '-' or '.' */
	n = kc_strlcpy(host, h, sizeof(host));
	if (n >= sizeof(host)) {
		n = sizeof(host) - 1;
		while (n > 0 && (host[n - 1] == '-' || host[n - 1] == '.'))
			host[--n] = '\0';
	}
	if ((fqdn || kc_json_bool(pod, false, "spec", "setHostnameAsFQDN")) && sub != NULL &&
	    sub[0] != '\0')
		(void)snprintf(buf, size, "%s.%s.%s.svc.%s", host, sub, ns != NULL ? ns : "",
		    EXEC_CLUSTER_DOMAIN);
	else
		(void)kc_strlcpy(buf, host, size);
}

/* The kubelet-managed /etc/hosts (managedHostsFileContent). */
int
exec_hosts_file(const struct json_object *pod, struct kc_buf *out)
{
	const char *sub = kc_json_str(pod, "spec", "subdomain");
	const struct json_object *ips = kc_json_get(pod, "status", "podIPs");
	const struct json_object *aliases = kc_json_get(pod, "spec", "hostAliases");
	const char *ip1 = kc_json_str(pod, "status", "podIP");
	char host[EXEC_HOSTNAME_MAX + 1], fqdn[512];
	int r;

	if (host_network(pod))
		return kc_buf_puts(out, "# Kubernetes-managed hosts file (host network).\n"
		    "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n");
	exec_hostname(pod, false, host, sizeof(host));
	/* The FQDN line names the hostname as the kubelet keeps it, not setHostnameAsFQDN's. */
	{
		const char *ns = kc_json_str(pod, "metadata", "namespace");

		(void)snprintf(fqdn, sizeof(fqdn), "%s.%s.%s.svc.%s", host, sub != NULL ? sub : "",
		    ns != NULL ? ns : "", EXEC_CLUSTER_DOMAIN);
	}
	if ((r = kc_buf_puts(out, "# Kubernetes-managed hosts file.\n"
	    "127.0.0.1\tlocalhost\n"
	    "::1\tlocalhost ip6-localhost ip6-loopback\n"
	    "fe00::0\tip6-localnet\n"
	    "fe00::0\tip6-mcastprefix\n"
	    "fe00::1\tip6-allnodes\n"
	    "fe00::2\tip6-allrouters\n")) < 0)
		return r;
	for (size_t i = 0;; i++) {
		const char *ip;

		if (json_object_is_type(ips, json_type_array) && json_object_array_length(ips) > 0) {
			if (i >= json_object_array_length(ips))
				break;
			ip = kc_json_str(json_object_array_get_idx(ips, i), "ip");
		} else {
			if (i > 0)
				break;
			ip = ip1;
		}
		if (ip == NULL || ip[0] == '\0')
			continue;
		if (sub != NULL && sub[0] != '\0')
			r = kc_buf_printf(out, "%s\t%s\t%s\n", ip, fqdn, host);
		else
			r = kc_buf_printf(out, "%s\t%s\n", ip, host);
		if (r < 0)
			return r;
	}
	if (json_object_is_type(aliases, json_type_array) &&
	    json_object_array_length(aliases) > 0) {
		if ((r = kc_buf_puts(out, "\n# Entries added by HostAliases.\n")) < 0)
			return r;
		for (size_t i = 0; i < json_object_array_length(aliases); i++) {
			const struct json_object *a = json_object_array_get_idx(aliases, i);
			const struct json_object *hn = kc_json_get(a, "hostnames");
			const char *ip = kc_json_str(a, "ip");

			if ((r = kc_buf_puts(out, ip != NULL ? ip : "")) < 0)
				return r;
			for (size_t j = 0; json_object_is_type(hn, json_type_array) &&
			    j < json_object_array_length(hn); j++) {
				const char *s = json_object_get_string(
				    json_object_array_get_idx(hn, j));

				if ((r = kc_buf_printf(out, "\t%s", s != NULL ? s : "")) < 0)
					return r;
			}
			if ((r = kc_buf_putc(out, '\n')) < 0)
				return r;
		}
	}
	return 0;
}

/* A list of unique words (omitDuplicates), bounded. */
struct words {
	size_t		 n;
	const char	*w[64];
	char		 own[8][300];	/* rendered words */
	size_t		 nown;
};

static void
words_add(struct words *ws, const char *w)
{
	if (w == NULL || w[0] == '\0')
		return;
	for (size_t i = 0; i < ws->n; i++)
		if (strcmp(ws->w[i], w) == 0)
			return;
	if (ws->n < KC_ARRAY_SIZE(ws->w))
		ws->w[ws->n++] = w;
}

static const char *
words_own(struct words *ws, const char *fmt, ...)
{
	va_list ap;

	if (ws->nown == KC_ARRAY_SIZE(ws->own))
		return NULL;
	va_start(ap, fmt);
	(void)vsnprintf(ws->own[ws->nown], sizeof(ws->own[0]), fmt, ap);
	va_end(ap);
	return ws->own[ws->nown++];
}

static void
words_add_array(struct words *ws, const struct json_object *a)
{
	for (size_t i = 0; json_object_is_type(a, json_type_array) &&
	    i < json_object_array_length(a); i++) {
		struct json_object *e = json_object_array_get_idx(a, i);

		if (json_object_is_type(e, json_type_string))
			words_add(ws, json_object_get_string(e));
	}
}

/*
 * /etc/resolv.conf as the kubelet computes it (GetPodDNS: dnsPolicy,
 * dnsConfig appended, options merged, limits) and containerd writes it
 * (search, nameserver lines, options).
 */
int
exec_resolv_conf(const struct json_object *pod, struct kc_buf *out)
{
	const char *policy = kc_json_str(pod, "spec", "dnsPolicy");
	const char *ns = kc_json_str(pod, "metadata", "namespace");
	const struct json_object *cfg = kc_json_get(pod, "spec", "dnsConfig");
	const struct json_object *opts = kc_json_get(cfg, "options");
	struct words servers = { 0 }, search = { 0 }, onames = { 0 };
	const char *ovals[64];
	size_t chars = 0, nsearch = 0;
	enum { CLUSTER, HOST, NONE } type;
	int r;

	if (policy == NULL || policy[0] == '\0')
		policy = "ClusterFirst";
	if (strcmp(policy, "None") == 0)
		type = NONE;
	else if (strcmp(policy, "ClusterFirstWithHostNet") == 0)
		type = CLUSTER;
	else if (strcmp(policy, "ClusterFirst") == 0 && !host_network(pod))
		type = CLUSTER;
	else
		type = HOST;
	if (type == CLUSTER) {
		words_add(&servers, EXEC_CLUSTER_DNS);
		words_add(&search, words_own(&search, "%s.svc.%s", ns != NULL ? ns : "",
		    EXEC_CLUSTER_DOMAIN));
		words_add(&search, "svc." EXEC_CLUSTER_DOMAIN);
		words_add(&search, EXEC_CLUSTER_DOMAIN);
		words_add(&onames, "ndots");
		ovals[0] = "5";
	} else if (type == HOST)
		words_add(&servers, EXEC_NODE_NAMESERVER);
	words_add_array(&servers, kc_json_get(cfg, "nameservers"));
	words_add_array(&search, kc_json_get(cfg, "searches"));
	for (size_t i = 0; json_object_is_type(opts, json_type_array) &&
	    i < json_object_array_length(opts); i++) {
		const struct json_object *o = json_object_array_get_idx(opts, i);
		const char *name = kc_json_str(o, "name"), *val = kc_json_str(o, "value");
		size_t j;

		if (name == NULL || name[0] == '\0')
			continue;
		for (j = 0; j < onames.n; j++)
			if (strcmp(onames.w[j], name) == 0)
				break;
		if (j == onames.n) {
			if (onames.n == KC_ARRAY_SIZE(onames.w))
				continue;
			onames.w[onames.n++] = name;
		}
		ovals[j] = val != NULL ? val : "";
	}
	/* formDNSConfigFitsLimits: searches first, then nameservers. */
	for (size_t i = 0; i < search.n && i < EXEC_SEARCH_MAX; i++) {
		size_t l = strlen(search.w[i]) + (i > 0);

		if (chars + l > EXEC_SEARCH_CHARS)
			break;
		chars += l;
		nsearch++;
	}
	if (nsearch > 0) {
		if ((r = kc_buf_puts(out, "search")) < 0)
			return r;
		for (size_t i = 0; i < nsearch; i++)
			if ((r = kc_buf_printf(out, " %s", search.w[i])) < 0)
				return r;
		if ((r = kc_buf_putc(out, '\n')) < 0)
			return r;
	}
	for (size_t i = 0; i < servers.n && i < EXEC_NAMESERVERS_MAX; i++)
		if ((r = kc_buf_printf(out, "nameserver %s\n", servers.w[i])) < 0)
			return r;
	if (onames.n > 0) {
		if ((r = kc_buf_puts(out, "options")) < 0)
			return r;
		for (size_t i = 0; i < onames.n; i++)
			if ((r = kc_buf_printf(out, " %s%s%s", onames.w[i],
			    ovals[i][0] != '\0' ? ":" : "", ovals[i])) < 0)
				return r;
		if ((r = kc_buf_putc(out, '\n')) < 0)
			return r;
	}
	return 0;
}

/*
 * Environment
 */

/* makeEnvVariableName: upper case, '-' to '_'. */
static void
env_name(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	for (; *s != '\0' && n + 1 < size; s++)
		buf[n++] = *s == '-' ? '_' : (char)(*s >= 'a' && *s <= 'z' ? *s - 32 : *s);
	buf[n] = '\0';
}

static bool
service_ip_set(const struct json_object *svc)
{
	const char *ip = kc_json_str(svc, "spec", "clusterIP");

	return ip != NULL && ip[0] != '\0' && strcmp(ip, "None") != 0;
}

/* envvars.FromServices for one Service, into 'v'. */
int
exec_service_vars(const struct json_object *svc, struct exec_vars *v)
{
	const struct json_object *ports = kc_json_get(svc, "spec", "ports");
	const char *ip = kc_json_str(svc, "spec", "clusterIP");
	const char *name = kc_json_str(svc, "metadata", "name");
	char pre[DC_SEGMENT_MAX], n[2 * DC_SEGMENT_MAX + 96], val[DC_SEGMENT_MAX + 96];
	char hostport[128];
	int r;

	if (!service_ip_set(svc) || name == NULL || !json_object_is_type(ports, json_type_array) ||
	    json_object_array_length(ports) == 0)
		return 0;
	env_name(name, pre, sizeof(pre));
	(void)snprintf(n, sizeof(n), "%s_SERVICE_HOST", pre);
	if ((r = exec_vars_set(v, n, ip)) < 0)
		return r;
	(void)snprintf(n, sizeof(n), "%s_SERVICE_PORT", pre);
	(void)snprintf(val, sizeof(val), "%" PRId64, kc_json_int(json_object_array_get_idx(ports,
	    0), 0, "port"));
	if ((r = exec_vars_set(v, n, val)) < 0)
		return r;
	for (size_t i = 0; i < json_object_array_length(ports); i++) {
		const struct json_object *p = json_object_array_get_idx(ports, i);
		const char *pn = kc_json_str(p, "name");
		char pname[DC_SEGMENT_MAX];

		if (pn == NULL || pn[0] == '\0')
			continue;
		env_name(pn, pname, sizeof(pname));
		(void)snprintf(n, sizeof(n), "%s_SERVICE_PORT_%s", pre, pname);
		(void)snprintf(val, sizeof(val), "%" PRId64, kc_json_int(p, 0, "port"));
		if ((r = exec_vars_set(v, n, val)) < 0)
			return r;
	}
	for (size_t i = 0; i < json_object_array_length(ports); i++) {
		const struct json_object *p = json_object_array_get_idx(ports, i);
		const char *proto = kc_json_str(p, "protocol");
		char up[16], low[16];
		int64_t port = kc_json_int(p, 0, "port");

		if (proto == NULL || proto[0] == '\0')
			proto = "TCP";
		env_name(proto, up, sizeof(up));
		for (size_t j = 0; j < sizeof(low); j++)
			low[j] = (char)(up[j] >= 'A' && up[j] <= 'Z' ? up[j] + 32 : up[j]);
		if (strchr(ip, ':') != NULL)
			(void)snprintf(hostport, sizeof(hostport), "[%s]:%" PRId64, ip, port);
		else
			(void)snprintf(hostport, sizeof(hostport), "%s:%" PRId64, ip, port);
		(void)snprintf(val, sizeof(val), "%s://%s", low, hostport);
		if (i == 0) {
			(void)snprintf(n, sizeof(n), "%s_PORT", pre);
			if ((r = exec_vars_set(v, n, val)) < 0)
				return r;
		}
		(void)snprintf(n, sizeof(n), "%s_PORT_%" PRId64 "_%s", pre, port, up);
		if ((r = exec_vars_set(v, n, val)) < 0)
			return r;
		(void)snprintf(n, sizeof(n), "%s_PORT_%" PRId64 "_%s_PROTO", pre, port, up);
		if ((r = exec_vars_set(v, n, low)) < 0)
			return r;
		(void)snprintf(n, sizeof(n), "%s_PORT_%" PRId64 "_%s_PORT", pre, port, up);
		(void)snprintf(val, sizeof(val), "%" PRId64, port);
		if ((r = exec_vars_set(v, n, val)) < 0)
			return r;
		(void)snprintf(n, sizeof(n), "%s_PORT_%" PRId64 "_%s_ADDR", pre, port, up);
		if ((r = exec_vars_set(v, n, ip)) < 0)
			return r;
	}
	return 0;
}

static int
var_cmp(const void *a, const void *b)
{
	return strcmp(((const struct exec_var *)a)->name, ((const struct exec_var *)b)->name);
}

/*
 * getServiceEnvVarMap: the "kubernetes" Service of "default" always, the
 * Services of the pod's namespace unless enableServiceLinks is false.
 */
static int
service_env(const struct exec_lookup *lk, const struct json_object *pod, struct exec_vars *ret)
{
	const char *ns = kc_json_str(pod, "metadata", "namespace");
	bool links = kc_json_bool(pod, true, "spec", "enableServiceLinks");
	struct json_object **svcs = NULL;
	bool own_master = false;
	size_t n = 0;
	int r = 0;

	if (links && ns != NULL && lk->list != NULL &&
	    (r = lk->list(lk->arg, "services", ns, &svcs, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++) {
		const char *name = kc_json_str(svcs[i], "metadata", "name");

		/* The master service of "default" is added below. */
		if (name != NULL && strcmp(name, "kubernetes") == 0) {
			if (strcmp(ns, "default") == 0)
				continue;
			own_master = service_ip_set(svcs[i]);
		}
		r = exec_service_vars(svcs[i], ret);
	}
	if (lk->free_list != NULL)
		lk->free_list(lk->arg, svcs, n);
	if (r == 0 && lk->get != NULL && !own_master) {
		const struct json_object *k = lk->get(lk->arg, "services", "default",
		    "kubernetes");

		if (k != NULL)
			r = exec_service_vars(k, ret);
	}
	if (r == 0 && ret->n > 1)
		qsort(ret->v, ret->n, sizeof(ret->v[0]), var_cmp);
	return r;
}

/* podFieldSelectorRuntimeValue. */
static int
field_value(const struct json_object *pod, const char *path, struct kc_buf *out)
{
	static const struct { const char *path; const char *a, *b; } simple[] = {
		{ "metadata.name", "metadata", "name" },
		{ "metadata.namespace", "metadata", "namespace" },
		{ "metadata.uid", "metadata", "uid" },
		{ "spec.nodeName", "spec", "nodeName" },
		{ "spec.serviceAccountName", "spec", "serviceAccountName" },
		{ "status.podIP", "status", "podIP" },
		{ "status.hostIP", "status", "hostIP" },
	};
	const char *v;
	int r;

	for (size_t i = 0; i < KC_ARRAY_SIZE(simple); i++)
		if (strcmp(path, simple[i].path) == 0) {
			v = kc_json_str(pod, simple[i].a, simple[i].b);
			return kc_buf_puts(out, v != NULL ? v : "");
		}
	if (strcmp(path, "status.podIPs") == 0 || strcmp(path, "status.hostIPs") == 0) {
		const struct json_object *a = kc_json_get(pod, "status", path + 7);

		for (size_t i = 0; json_object_is_type(a, json_type_array) &&
		    i < json_object_array_length(a); i++) {
			v = kc_json_str(json_object_array_get_idx(a, i), "ip");
			if ((i > 0 && (r = kc_buf_putc(out, ',')) < 0) ||
			    (r = kc_buf_puts(out, v != NULL ? v : "")) < 0)
				return r;
		}
		return 0;
	}
	{
		const char *which = NULL;
		size_t pl;

		if (strncmp(path, "metadata.labels['", 17) == 0)
			which = "labels", pl = 17;
		else if (strncmp(path, "metadata.annotations['", 22) == 0)
			which = "annotations", pl = 22;
		if (which != NULL) {
			size_t len = strlen(path);
			char key[DC_SEGMENT_MAX + 64];

			if (len < pl + 2 || strcmp(path + len - 2, "']") != 0 ||
			    len - pl - 2 >= sizeof(key))
				return 0;
			memcpy(key, path + pl, len - pl - 2);
			key[len - pl - 2] = '\0';
			v = kc_json_str(pod, "metadata", which, key);
			return kc_buf_puts(out, v != NULL ? v : "");
		}
	}
	return 0;
}

/* A key of a ConfigMap's data or a Secret's (decoded) data; 1 when missing. */
static int
ref_value(const struct exec_lookup *lk, const char *resource, const char *ns,
    const struct json_object *ref, struct kc_buf *out)
{
	const char *name = kc_json_str(ref, "name"), *key = kc_json_str(ref, "key");
	const struct json_object *obj;
	const char *v;

	if (name == NULL || key == NULL || lk->get == NULL ||
	    (obj = lk->get(lk->arg, resource, ns, name)) == NULL ||
	    (v = kc_json_str(obj, "data", key)) == NULL)
		return 1;
	if (strcmp(resource, "secrets") == 0) {
		char *dec = NULL;
		size_t dlen;
		int r;

		if (kc_base64_decode(v, strlen(v), 0, &dec, &dlen, NULL, 0) < 0)
			return 1;
		r = kc_buf_append(out, dec, dlen);
		kc_free(dec);
		return r;
	}
	return kc_buf_puts(out, v);
}

static bool
env_name_ok(const char *s)
{
	/* validation.IsEnvVarName: [-._a-zA-Z][-._a-zA-Z0-9]* */
	if (s == NULL || s[0] == '\0' || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || *s == '-' || *s == '.' || *s == '_'))
			return false;
	return true;
}

/* envFrom: every valid key of a ConfigMap or Secret, with the prefix. */
static int
env_from(const struct exec_lookup *lk, const char *ns, const struct json_object *src,
    struct exec_vars *env)
{
	const char *prefix = kc_json_str(src, "prefix");
	const struct json_object *ref = NULL, *obj;
	struct json_object *data;
	const char *resource = NULL;
	int r;

	if ((ref = kc_json_get(src, "configMapRef")) != NULL)
		resource = "configmaps";
	else if ((ref = kc_json_get(src, "secretRef")) != NULL)
		resource = "secrets";
	if (resource == NULL || lk->get == NULL || kc_json_str(ref, "name") == NULL ||
	    (obj = lk->get(lk->arg, resource, ns, kc_json_str(ref, "name"))) == NULL ||
	    (data = kc_json_obj_of(obj, "data")) == NULL)
		return 0;
	json_object_object_foreach(data, k, val) {
		char name[DC_SEGMENT_MAX * 2];
		struct kc_buf b;

		(void)snprintf(name, sizeof(name), "%s%s", prefix != NULL ? prefix : "", k);
		if (!env_name_ok(name) || !json_object_is_type(val, json_type_string))
			continue;
		kc_buf_init(&b, DC_BODY_MAX);
		if (strcmp(resource, "secrets") == 0) {
			char *dec = NULL;
			size_t dlen;

			if (kc_base64_decode(json_object_get_string(val),
			    (size_t)json_object_get_string_len(val), 0, &dec, &dlen, NULL,
			    0) < 0)
				continue;
			r = kc_buf_append(&b, dec, dlen);
			kc_free(dec);
		} else
			r = kc_buf_puts(&b, json_object_get_string(val));
		if (r == 0)
			r = exec_vars_set(env, name, kc_buf_str(&b));
		kc_buf_free(&b);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The container's environment as the kubelet makes it
 * (makeEnvironmentVariables), the runtime's PATH and HOSTNAME first and
 * runc's HOME last. The kubelet's order of the service variables is a Go
 * map's; here they are sorted.
 */
int
exec_env(const struct exec_lookup *lk, const struct json_object *pod,
    const struct json_object *ctr, struct exec_vars *ret)
{
	const char *ns = kc_json_str(pod, "metadata", "namespace");
	const struct json_object *from = kc_json_get(ctr, "envFrom");
	const struct json_object *env = kc_json_get(ctr, "env");
	struct exec_vars tmp = { 0 }, svc = { 0 }, out = { 0 };
	char host[512];
	int r;

	if (ns == NULL)
		ns = "";
	exec_hostname(pod, false, host, sizeof(host));
	if (kc_json_bool(pod, false, "spec", "setHostnameAsFQDN"))
		exec_hostname(pod, true, host, sizeof(host));
	if ((r = service_env(lk, pod, &svc)) < 0)
		goto out;
	for (size_t i = 0; json_object_is_type(from, json_type_array) &&
	    i < json_object_array_length(from); i++)
		if ((r = env_from(lk, ns, json_object_array_get_idx(from, i), &tmp)) < 0)
			goto out;
	for (size_t i = 0; json_object_is_type(env, json_type_array) &&
	    i < json_object_array_length(env); i++) {
		const struct json_object *e = json_object_array_get_idx(env, i);
		const struct json_object *vf = kc_json_get(e, "valueFrom");
		const char *name = kc_json_str(e, "name"), *value = kc_json_str(e, "value");
		struct kc_buf b;

		if (name == NULL)
			continue;
		kc_buf_init(&b, DC_BODY_MAX);
		r = 0;
		if (value != NULL && value[0] != '\0') {
			const struct exec_vars *ctx[] = { &tmp, &svc };

			r = exec_expand(value, ctx, 2, &b);
		} else if (vf != NULL) {
			if (kc_json_get(vf, "fieldRef") != NULL)
				r = field_value(pod, kc_json_str(vf, "fieldRef", "fieldPath") != NULL ?
				    kc_json_str(vf, "fieldRef", "fieldPath") : "", &b);
			else if (kc_json_get(vf, "configMapKeyRef") != NULL)
				r = ref_value(lk, "configmaps", ns, kc_json_get(vf,
				    "configMapKeyRef"), &b);
			else if (kc_json_get(vf, "secretKeyRef") != NULL)
				r = ref_value(lk, "secrets", ns, kc_json_get(vf, "secretKeyRef"),
				    &b);
			if (r == 1) {		/* an optional key that is missing */
				kc_buf_free(&b);
				continue;
			}
		}
		if (r == 0)
			r = exec_vars_set(&tmp, name, kc_buf_str(&b));
		kc_buf_free(&b);
		if (r < 0)
			goto out;
	}
	if ((r = exec_vars_set(&out, "PATH", EXEC_PATH)) < 0 ||
	    (r = exec_vars_set(&out, "HOSTNAME", host)) < 0)
		goto out;
	for (size_t i = 0; i < tmp.n; i++)
		if ((r = exec_vars_set(&out, tmp.v[i].name, tmp.v[i].value)) < 0)
			goto out;
	for (size_t i = 0; i < svc.n; i++)
		if (exec_vars_get(&tmp, svc.v[i].name) == NULL &&
		    (r = exec_vars_set(&out, svc.v[i].name, svc.v[i].value)) < 0)
			goto out;
	if (exec_vars_get(&out, "HOME") == NULL && (r = exec_vars_set(&out, "HOME", "/root")) < 0)
		goto out;
	*ret = out;
	memset(&out, 0, sizeof(out));
out:
	exec_vars_free(&tmp);
	exec_vars_free(&svc);
	exec_vars_free(&out);
	return r;
}

/*
 * Commands
 */

static int
put_env(const struct exec_vars *env, struct kc_buf *out)
{
	int r;

	for (size_t i = 0; i < env->n; i++)
		if ((r = kc_buf_printf(out, "%s=%s\n", env->v[i].name, env->v[i].value)) < 0)
			return r;
	return 0;
}

/* The program part of a path the runtime would find on $PATH; NULL otherwise. */
static const char *
program_name(const char *argv0)
{
	static const char *const dirs[] = {
		"/usr/local/sbin/", "/usr/local/bin/", "/usr/sbin/", "/usr/bin/", "/sbin/", "/bin/",
	};

	if (strchr(argv0, '/') == NULL)
		return argv0;
	for (size_t i = 0; i < KC_ARRAY_SIZE(dirs); i++)
		if (strncmp(argv0, dirs[i], strlen(dirs[i])) == 0 &&
		    strchr(argv0 + strlen(dirs[i]), '/') == NULL)
			return argv0 + strlen(dirs[i]);
	return NULL;
}

static int	run_one(const struct exec_ctx *, char *const *argv, size_t argc,
		    struct exec_result *, bool in_sh);

/* Splits a sh -c script into words: blanks, '...' and "..." quoting, \ escapes. */
static int
sh_split(const char *s, char **words, size_t max, size_t *ret_n, struct kc_buf *store)
{
	size_t offs[EXEC_ARGS_MAX], n = 0;	/* words live in 'store', found at the end */
	int r;

	kc_buf_reset(store);

	while (*s != '\0') {
		bool any = false;

		while (*s == ' ' || *s == '\t' || *s == '\n')
			s++;
		if (*s == '\0')
			break;
		if (n == max || n == EXEC_ARGS_MAX)
			return -E2BIG;
		offs[n] = store->len;
		while (*s != '\0' && *s != ' ' && *s != '\t' && *s != '\n') {
			any = true;
			if (*s == '\'') {
				const char *e = strchr(s + 1, '\'');

				if (e == NULL)
					return -EINVAL;
				if ((r = kc_buf_append(store, s + 1, (size_t)(e - s - 1))) < 0)
					return r;
				s = e + 1;
			} else if (*s == '"') {
				s++;
				while (*s != '"') {
					if (*s == '\0')
						return -EINVAL;
					if (*s == '\\' && (s[1] == '"' || s[1] == '\\' || s[1] == '$'))
						s++;
					if ((r = kc_buf_putc(store, *s++)) < 0)
						return r;
				}
				s++;
			} else {
				if (*s == '\\' && s[1] != '\0')
					s++;
				if ((r = kc_buf_putc(store, *s++)) < 0)
					return r;
			}
		}
		if (any && (r = kc_buf_putc(store, '\0')) < 0)
			return r;
		n++;
	}
	for (size_t i = 0; i < n; i++)
		words[i] = store->data + offs[i];
	*ret_n = n;
	return 0;
}

static int
run_sh(const struct exec_ctx *ctx, char *const *argv, size_t argc, struct exec_result *res)
{
	char *words[EXEC_ARGS_MAX];
	struct kc_buf store;
	size_t n = 0;
	int r;

	if (argc < 3 || strcmp(argv[1], "-c") != 0) {
		res->exit_code = 2;
		return kc_buf_puts(&res->err, argc < 2 ? "sh: interactive shells are not "
		    "simulated\n" : "sh: only sh -c 'COMMAND' is simulated\n");
	}
	kc_buf_init(&store, 64 * 1024);
	r = sh_split(argv[2], words, KC_ARRAY_SIZE(words), &n, &store);
	if (r == -E2BIG) {
		res->exit_code = 2;
		r = kc_buf_puts(&res->err, "sh: 1: too many words\n");
	} else if (r == -EINVAL) {
		res->exit_code = 2;
		r = kc_buf_puts(&res->err, "sh: 1: Syntax error: Unterminated quoted string\n");
	} else if (r == 0 && n > 0 && strcmp(words[0], "exit") == 0) {
		int64_t code = 0;

		if (n > 1 && kc_parse_i64(words[1], &code) < 0) {
			res->exit_code = 2;
			r = kc_buf_printf(&res->err, "sh: 1: exit: Illegal number: %s\n", words[1]);
		} else
			res->exit_code = (int)(((code % 256) + 256) % 256);
	} else if (r == 0 && n > 0)
		r = run_one(ctx, words, n, res, true);
	kc_buf_free(&store);
	return r;
}

static int
run_cat(const struct exec_ctx *ctx, char *const *argv, size_t argc, struct exec_result *res)
{
	int r;

	if (argc == 1 || (argc == 2 && strcmp(argv[1], "-") == 0)) {
		res->reads_stdin = ctx->stdin_open;
		return 0;
	}
	for (size_t i = 1; i < argc; i++) {
		if (strcmp(argv[i], "/etc/resolv.conf") == 0)
			r = exec_resolv_conf(ctx->pod, &res->out);
		else if (strcmp(argv[i], "/etc/hosts") == 0)
			r = exec_hosts_file(ctx->pod, &res->out);
		else if (strcmp(argv[i], "/etc/hostname") == 0) {
			char host[512];

			exec_hostname(ctx->pod, kc_json_bool(ctx->pod, false, "spec",
			    "setHostnameAsFQDN"), host, sizeof(host));
			r = kc_buf_printf(&res->out, "%s\n", host);
		} else {
			res->exit_code = 1;
			r = kc_buf_printf(&res->err, "cat: %s: No such file or directory\n",
			    argv[i]);
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static int
run_one(const struct exec_ctx *ctx, char *const *argv, size_t argc, struct exec_result *res,
    bool in_sh)
{
	const char *prog = program_name(argv[0]);
	int r = 0;

	if (prog == NULL || (strcmp(prog, "hostname") != 0 && strcmp(prog, "env") != 0 &&
	    strcmp(prog, "printenv") != 0 && strcmp(prog, "echo") != 0 &&
	    strcmp(prog, "true") != 0 && strcmp(prog, "false") != 0 &&
	    strcmp(prog, "cat") != 0 && strcmp(prog, "sh") != 0)) {
		if (in_sh) {
			res->exit_code = 127;
			return kc_buf_printf(&res->err, "sh: 1: %s: not found\n", argv[0]);
		}
		res->not_found = true;
		res->exit_code = -1;
		return 0;
	}
	if (strcmp(prog, "true") == 0)
		return 0;
	if (strcmp(prog, "false") == 0) {
		res->exit_code = 1;
		return 0;
	}
	if (strcmp(prog, "echo") == 0) {
		size_t i = 1;
		bool nl = true;

		if (argc > 1 && strcmp(argv[1], "-n") == 0) {
			nl = false;
			i = 2;
		}
		for (size_t j = i; j < argc && r == 0; j++)
			r = kc_buf_printf(&res->out, "%s%s", j > i ? " " : "", argv[j]);
		if (r == 0 && nl)
			r = kc_buf_putc(&res->out, '\n');
		return r;
	}
	if (strcmp(prog, "hostname") == 0) {
		char host[512];
		bool fqdn = argc > 1 && (strcmp(argv[1], "-f") == 0 ||
		    strcmp(argv[1], "--fqdn") == 0 || strcmp(argv[1], "--long") == 0);

		if (argc > 1 && strcmp(argv[1], "-i") == 0) {
			const char *ip = kc_json_str(ctx->pod, "status", "podIP");

			return kc_buf_printf(&res->out, "%s\n", ip != NULL ? ip : "");
		}
		if (argc > 1 && !fqdn && strcmp(argv[1], "-s") != 0 &&
		    strcmp(argv[1], "--short") != 0) {
			res->exit_code = 1;
			return kc_buf_puts(&res->err, "hostname: you must be root to change the "
			    "host name\n");
		}
		exec_hostname(ctx->pod, fqdn || kc_json_bool(ctx->pod, false, "spec",
		    "setHostnameAsFQDN"), host, sizeof(host));
		if (argc > 1 && !fqdn) {
			char *dot = strchr(host, '.');

			if (dot != NULL)
				*dot = '\0';
		}
		return kc_buf_printf(&res->out, "%s\n", host);
	}
	if (strcmp(prog, "env") == 0) {
		if (argc > 1) {
			res->exit_code = 125;
			return kc_buf_puts(&res->err, "env: only env without arguments is "
			    "simulated\n");
		}
		return put_env(ctx->env, &res->out);
	}
	if (strcmp(prog, "printenv") == 0) {
		if (argc == 1)
			return put_env(ctx->env, &res->out);
		for (size_t i = 1; i < argc && r == 0; i++) {
			const char *v = exec_vars_get(ctx->env, argv[i]);

			if (v == NULL)
				res->exit_code = 1;
			else
				r = kc_buf_printf(&res->out, "%s\n", v);
		}
		return r;
	}
	if (strcmp(prog, "cat") == 0)
		return run_cat(ctx, argv, argc, res);
	return run_sh(ctx, argv, argc, res);
}

void
exec_result_init(struct exec_result *res)
{
	memset(res, 0, sizeof(*res));
	kc_buf_init(&res->out, EXEC_OUT_MAX);
	kc_buf_init(&res->err, EXEC_OUT_MAX);
}

void
exec_result_free(struct exec_result *res)
{
	kc_buf_free(&res->out);
	kc_buf_free(&res->err);
}

int
exec_run(const struct exec_ctx *ctx, char *const *argv, size_t argc, struct exec_result *res)
{
	if (argc == 0 || argv[0][0] == '\0') {
		res->not_found = true;
		res->exit_code = -1;
		return 0;
	}
	return run_one(ctx, argv, argc, res, false);
}

/* containerd's and runc's words for a program that cannot be started. */
void
exec_not_found_message(const char *argv0, char *buf, size_t size)
{
	char id[65], u[37];

	for (size_t i = 0, k = 0; i < 2; i++) {
		api_uuid(u);
		for (const char *p = u; *p != '\0' && k < 64; p++)
			if (*p != '-')
				id[k++] = *p;
		id[k < 64 ? k : 64] = '\0';
	}
	if (strchr(argv0, '/') != NULL)
		(void)snprintf(buf, size, "error executing command in container: failed to exec "
		    "in container: failed to start exec \"%s\": OCI runtime exec failed: exec "
		    "failed: unable to start container process: exec: \"%s\": stat %s: no such "
		    "file or directory: unknown", id, argv0, argv0);
	else
		(void)snprintf(buf, size, "error executing command in container: failed to exec "
		    "in container: failed to start exec \"%s\": OCI runtime exec failed: exec "
		    "failed: unable to start container process: exec: \"%s\": executable file "
		    "not found in $PATH: unknown", id, argv0);
}

/*
 * The error channel's metav1.Status, as json.Marshal writes it (no kind
 * or apiVersion): Success for exit code 0, NonZeroExitCode with an
 * ExitCode cause otherwise, or InternalError when 'internal' is set.
 */
int
exec_status_json(int exit_code, const char *internal, struct kc_buf *out)
{
	struct json_object *o = json_object_new_object(), *det = NULL, *causes, *cause;
	int r = -ENOMEM;

	if (o == NULL || kc_json_put(o, "metadata", json_object_new_object()) < 0)
		goto out;
	if (internal == NULL && exit_code == 0) {
		if (kc_json_set_str(o, "status", "Success") < 0)
			goto out;
	} else {
		char msg[4096], code[16];

		if (internal != NULL)
			(void)snprintf(msg, sizeof(msg), "Internal error occurred: %s", internal);
		else
			(void)snprintf(msg, sizeof(msg), "command terminated with non-zero exit "
			    "code: command terminated with exit code %d", exit_code);
		(void)snprintf(code, sizeof(code), "%d", exit_code);
		if (kc_json_set_str(o, "status", "Failure") < 0 ||
		    kc_json_set_str(o, "message", msg) < 0 ||
		    kc_json_set_str(o, "reason", internal != NULL ? "InternalError" :
		    "NonZeroExitCode") < 0 ||
		    (det = json_object_new_object()) == NULL ||
		    (causes = json_object_new_array()) == NULL ||
		    kc_json_put(det, "causes", causes) < 0 ||
		    (cause = json_object_new_object()) == NULL ||
		    kc_json_append(causes, cause) < 0)
			goto out;
		if (internal == NULL && kc_json_set_str(cause, "reason", "ExitCode") < 0)
			goto out;
		if (kc_json_set_str(cause, "message", internal != NULL ? internal : code) < 0)
			goto out;
		if (kc_json_put(o, "details", det) < 0) {
			det = NULL;
			goto out;
		}
		det = NULL;
		if (internal != NULL && kc_json_set_int(o, "code", 500) < 0)
			goto out;
	}
	r = api_serialize(o, out);
out:
	if (det != NULL)
		json_object_put(det);
	if (o != NULL)
		json_object_put(o);
	return r;
}

/* A tty's output: "\n" becomes "\r\n" (ONLCR). */
int
exec_tty_translate(const char *in, size_t len, struct kc_buf *out)
{
	int r = 0;

	for (size_t i = 0; i < len && r == 0; i++)
		r = in[i] == '\n' ? kc_buf_append(out, "\r\n", 2) : kc_buf_putc(out, in[i]);
	return r;
}

/*
 * Incoming frames. 'first' and 'final' say where this piece sits in its
 * WebSocket message; the channel byte starts a message.
 */
int
exec_rx_feed(struct exec_rx *rx, const unsigned char *data, size_t len, bool first,
    bool final, struct exec_rx_ev *ev)
{
	memset(ev, 0, sizeof(*ev));
	if (first) {
		rx->resize_len = 0;
		rx->channel = -1;
		if (len == 0)
			return 0;
		rx->channel = data[0];
		data++;
		len--;
	}
	switch (rx->channel) {
	case EXEC_CH_STDIN:
		if (len > 0 && !rx->stdin_closed) {
			ev->kind = EXEC_RX_STDIN;
			ev->data = data;
			ev->len = len;
		}
		break;
	case EXEC_CH_RESIZE:
		if (rx->resize_len + len >= sizeof(rx->resize)) {
			rx->channel = -1;	/* oversized: dropped */
			break;
		}
		memcpy(rx->resize + rx->resize_len, data, len);
		rx->resize_len += len;
		if (final) {
			struct json_object *o = NULL;
			int64_t w, h;

			rx->resize[rx->resize_len] = '\0';
			if (kc_json_parse(rx->resize, rx->resize_len, &o, NULL) == 0 && o != NULL) {
				w = kc_json_int(o, -1, "Width");
				h = kc_json_int(o, -1, "Height");
				if (w >= 0 && w <= UINT16_MAX && h >= 0 && h <= UINT16_MAX) {
					ev->kind = EXEC_RX_RESIZE;
					ev->width = (uint16_t)w;
					ev->height = (uint16_t)h;
				}
			}
			if (o != NULL)
				json_object_put(o);
		}
		break;
	case EXEC_CH_CLOSE:
		if (rx->v5 && first && len >= 1 && data[0] == EXEC_CH_STDIN && !rx->stdin_closed) {
			rx->stdin_closed = true;
			ev->kind = EXEC_RX_STDIN_CLOSE;
		}
		break;
	default:
		break;
	}
	return 0;
}

/*
 * Sessions
 */

static void
session_free(struct exec_session *s)
{
	struct exec_frame *f;

	if (s == NULL)
		return;
	while ((f = STAILQ_FIRST(&s->q)) != NULL) {
		STAILQ_REMOVE_HEAD(&s->q, link);
		kc_free(f);
	}
	kc_buf_free(&s->out);
	kc_buf_free(&s->err);
	kc_free(s->status);
	if (s->x != NULL) {
		TAILQ_REMOVE(&s->x->sessions, s, link);
		s->x->n--;
		if (s->x->n == 0)
			timer_cancel(&s->x->sweep);
	}
	if (s->wsi != NULL)
		lws_set_opaque_user_data(s->wsi, NULL);
	kc_free(s);
}

static int
queue_frame(struct exec_session *s, int channel, const void *data, size_t len)
{
	struct exec_frame *f;

	if ((f = kc_malloc(sizeof(*f) + LWS_PRE + 1 + len)) == NULL)
		return -ENOMEM;
	f->len = 1 + len;
	f->data[LWS_PRE] = (unsigned char)channel;
	if (len > 0)
		memcpy(f->data + LWS_PRE + 1, data, len);
	STAILQ_INSERT_TAIL(&s->q, f, link);
	s->qbytes += f->len;
	return 0;
}

static int
queue_data(struct exec_session *s, int channel, const char *data, size_t len)
{
	int r;

	for (size_t off = 0; off < len; off += EXEC_FRAME_MAX)
		if ((r = queue_frame(s, channel, data + off,
		    KC_MIN((size_t)EXEC_FRAME_MAX, len - off))) < 0)
			return r;
	return 0;
}

static int
queue_output(struct exec_session *s, int channel, const char *data, size_t len)
{
	struct kc_buf t;
	int r;

	if (len == 0)
		return 0;
	if (!s->tty)
		return queue_data(s, channel, data, len);
	kc_buf_init(&t, 2 * EXEC_OUT_MAX + 2);
	if ((r = exec_tty_translate(data, len, &t)) == 0)
		r = queue_data(s, channel, t.data, t.len);
	kc_buf_free(&t);
	return r;
}

static int
queue_status(struct exec_session *s)
{
	int r;

	if (s->done)
		return 0;
	s->done = true;
	if ((r = queue_frame(s, EXEC_CH_ERROR, s->status, strlen(s->status))) < 0)
		return r;
	return 0;
}

static void
sweep_arm(struct exec_state *x)
{
	if (!x->sweep.armed)
		timer_arm(&x->sweep, EXEC_SWEEP_MS);
}

static int64_t
sweep_tick(void *arg)
{
	struct exec_state *x = arg;
	struct exec_session *s, *next;
	uint64_t now = kc_clock_now_ms();

	for (s = TAILQ_FIRST(&x->sessions); s != NULL; s = next) {
		next = TAILQ_NEXT(s, link);
		if (now < s->deadline_ms)
			continue;
		if (s->wsi == NULL) {
			session_free(s);	/* accepted, never established */
			continue;
		}
		s->closing = true;
		lws_callback_on_writable(s->wsi);
	}
	return x->n > 0 ? EXEC_SWEEP_MS : DC_TIMER_STOP;
}

/* The session's output and Status, queued at establishment. */
static int
session_start(struct exec_session *s)
{
	int r = 0;

	if (s->want_stdout || s->tty)
		r = queue_output(s, EXEC_CH_STDOUT, s->out.data, s->out.len);
	if (r == 0 && s->tty && s->err.len > 0)
		r = queue_output(s, EXEC_CH_STDOUT, s->err.data, s->err.len);
	else if (r == 0 && s->want_stderr)
		r = queue_output(s, EXEC_CH_STDERR, s->err.data, s->err.len);
	kc_buf_free(&s->out);
	kc_buf_free(&s->err);
	if (r == 0 && !s->echo)
		r = queue_status(s);
	return r;
}

static int
on_receive(struct exec_session *s, struct lws *wsi, const unsigned char *in, size_t len)
{
	struct exec_rx_ev ev;
	int r;

	s->deadline_ms = kc_clock_now_ms() + EXEC_IDLE_MS;
	/*
	 * Text frames carry channel data as binary ones do: upstream's
	 * wsstream reads either into bytes, and the official Python client
	 * sends a str written to stdin (and its resize messages) as text.
	 */
	if ((r = exec_rx_feed(&s->rx, in, len, lws_is_first_fragment(wsi) != 0,
	    lws_is_final_fragment(wsi) != 0, &ev)) < 0)
		return r;
	switch (ev.kind) {
	case EXEC_RX_STDIN:
		if (!s->echo || s->done)
			return 0;
		if (s->want_stdout && (r = queue_output(s, EXEC_CH_STDOUT, (const char *)ev.data,
		    ev.len)) < 0)
			return r;
		if (s->qbytes > EXEC_QUEUE_MAX && !s->rx_paused) {
			s->rx_paused = true;
			lws_rx_flow_control(wsi, 0);
		}
		break;
	case EXEC_RX_STDIN_CLOSE:
		if (s->echo && (r = queue_status(s)) < 0)
			return r;
		break;
	default:
		break;
	}
	if (!STAILQ_EMPTY(&s->q))
		lws_callback_on_writable(wsi);
	return 0;
}

static int
on_writable(struct exec_session *s, struct lws *wsi)
{
	struct exec_frame *f = STAILQ_FIRST(&s->q);

	if (s->closing) {
		lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
		return -1;
	}
	if (f == NULL) {
		if (s->done) {
			lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, NULL, 0);
			return -1;
		}
		return 0;
	}
	if (lws_write(wsi, f->data + LWS_PRE, f->len, LWS_WRITE_BINARY) != (int)f->len)
		return -1;
	STAILQ_REMOVE_HEAD(&s->q, link);
	s->qbytes -= f->len;
	kc_free(f);
	if (s->rx_paused && s->qbytes < EXEC_QUEUE_MAX / 2) {
		s->rx_paused = false;
		lws_rx_flow_control(wsi, 1);
	}
	lws_callback_on_writable(wsi);
	return 0;
}

int
exec_ws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
    size_t len)
{
	struct exec_session *s = lws_get_opaque_user_data(wsi);

	(void)user;
	switch (reason) {
	case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
		/* Only an upgrade exec_upgrade() accepted, for this very protocol. */
		if (s == NULL || s->wsi != NULL || strcmp(lws_get_protocol(wsi)->name,
		    s->v5 ? PROTO_V5 : PROTO_V4) != 0)
			return -1;
		return 0;
	case LWS_CALLBACK_ESTABLISHED:
		if (s == NULL || s->wsi != NULL)
			return -1;
		s->wsi = wsi;
		s->deadline_ms = kc_clock_now_ms() + EXEC_IDLE_MS;
		if (session_start(s) < 0)
			return -1;
		lws_callback_on_writable(wsi);
		return 0;
	case LWS_CALLBACK_RECEIVE:
		if (s == NULL || s->wsi != wsi)
			return -1;
		return on_receive(s, wsi, in, len) < 0 ? -1 : 0;
	case LWS_CALLBACK_SERVER_WRITEABLE:
		if (s == NULL || s->wsi != wsi)
			return -1;
		return on_writable(s, wsi);
	case LWS_CALLBACK_CLOSED:
	case LWS_CALLBACK_WSI_DESTROY:
		if (s != NULL && s->wsi == wsi)
			session_free(s);
		return 0;
	default:
		return 0;
	}
}

/*
 * The request: dispatch.c's hook, then the upgrade
 */

static const struct json_object *
find_container(const struct json_object *pod, const char *name, const char **ret_list)
{
	static const char *const lists[] = { "containers", "initContainers",
	    "ephemeralContainers" };

	for (size_t l = 0; l < KC_ARRAY_SIZE(lists); l++) {
		const struct json_object *a = kc_json_get(pod, "spec", lists[l]);

		for (size_t i = 0; json_object_is_type(a, json_type_array) &&
		    i < json_object_array_length(a); i++) {
			const struct json_object *c = json_object_array_get_idx(a, i);
			const char *n = kc_json_str(c, "name");

			if (n != NULL && strcmp(n, name) == 0) {
				*ret_list = lists[l];
				return c;
			}
		}
	}
	return NULL;
}

static int
names_of(const struct json_object *a, char *buf, size_t size)
{
	int n = 0;

	buf[0] = '\0';
	for (size_t i = 0; json_object_is_type(a, json_type_array) &&
	    i < json_object_array_length(a); i++) {
		const char *s = kc_json_str(json_object_array_get_idx(a, i), "name");

		if (i > 0)
			(void)kc_strlcat(buf, " ", size);
		(void)kc_strlcat(buf, s != NULL ? s : "", size);
		n++;
	}
	return n;
}

/* Whether status.<list>Statuses says the container is running. */
static bool
container_running(const struct json_object *pod, const char *list, const char *name)
{
	char key[64];
	const struct json_object *a;

	(void)snprintf(key, sizeof(key), "%.*sStatuses", (int)(strlen(list) - 1), list);
	a = kc_json_get(pod, "status", key);
	for (size_t i = 0; json_object_is_type(a, json_type_array) &&
	    i < json_object_array_length(a); i++) {
		const struct json_object *cs = json_object_array_get_idx(a, i);
		const char *n = kc_json_str(cs, "name");

		if (n != NULL && strcmp(n, name) == 0)
			return kc_json_get(cs, "state", "running") != NULL;
	}
	return false;
}

/* What the kubelet reads from storage: ConfigMaps, Secrets, Services. */
static const struct json_object *
lookup_get(void *arg, const char *resource, const char *ns, const char *name)
{
	struct dc *dc = arg;
	const struct dc_rtype *rt = registry_find(dc, "", "v1", resource);

	return rt != NULL ? coll_get(rt->coll, ns, name) : NULL;
}

static int
lookup_list(void *arg, const char *resource, const char *ns, struct json_object ***ret,
    size_t *ret_n)
{
	struct dc *dc = arg;
	const struct dc_rtype *rt = registry_find(dc, "", "v1", resource);

	*ret = NULL;
	*ret_n = 0;
	return rt != NULL ? coll_list(rt->coll, ns, NULL, ret, ret_n) : 0;
}

static void
lookup_free(void *arg, struct json_object **objs, size_t n)
{
	(void)arg;
	objs_free(objs, n);
}

/* Fills 's' with the command's output and Status. 0 or a negative code. */
static int
session_run(struct dc *dc, struct exec_session *s, const struct json_object *pod,
    const struct json_object *ctr, char *const *argv, size_t argc, bool stdin_open)
{
	struct exec_lookup lk = { .get = lookup_get, .list = lookup_list,
	    .free_list = lookup_free, .arg = dc };
	struct exec_vars env = { 0 };
	struct exec_result res;
	struct exec_ctx ctx;
	struct kc_buf st;
	char msg[1024];
	int r;

	exec_result_init(&res);
	kc_buf_init(&st, 64 * 1024);
	if ((r = exec_env(&lk, pod, ctr, &env)) < 0)
		goto out;
	ctx = (struct exec_ctx){ .pod = pod, .env = &env, .stdin_open = stdin_open };
	if ((r = exec_run(&ctx, argv, argc, &res)) < 0 && r != -E2BIG)
		goto out;
	if (r == -E2BIG)
		res.exit_code = 1;	/* output past EXEC_OUT_MAX: cut */
	if (res.not_found) {
		exec_not_found_message(argc > 0 ? argv[0] : "", msg, sizeof(msg));
		if (s->v5) {
			/* kube-apiserver's stream translator wraps the kubelet's Status once more. */
			char outer[1200];

			(void)snprintf(outer, sizeof(outer), "Internal error occurred: %s", msg);
			r = exec_status_json(0, outer, &st);
		} else
			r = exec_status_json(0, msg, &st);
	} else
		r = exec_status_json(res.exit_code, NULL, &st);
	if (r < 0 || (s->status = kc_buf_take(&st, NULL)) == NULL) {
		r = r < 0 ? r : -ENOMEM;
		goto out;
	}
	s->echo = res.reads_stdin;
	s->out = res.out;
	s->err = res.err;
	kc_buf_init(&res.out, 1);
	kc_buf_init(&res.err, 1);
	r = 0;
out:
	exec_vars_free(&env);
	exec_result_free(&res);
	kc_buf_free(&st);
	return r;
}

static struct exec_session *
session_new(bool v5)
{
	struct exec_session *s = kc_calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	STAILQ_INIT(&s->q);
	s->rx.channel = -1;
	s->rx.v5 = v5;
	s->v5 = v5;
	kc_buf_init(&s->out, 1);
	kc_buf_init(&s->err, 1);
	return s;
}

static void
session_add(struct exec_state *x, struct exec_session *s)
{
	s->x = x;
	s->deadline_ms = kc_clock_now_ms() + EXEC_ATTACH_MS;
	TAILQ_INSERT_TAIL(&x->sessions, s, link);
	x->n++;
	sweep_arm(x);
}

/*
 * hooks.pod_exec: pods/<name>/exec of an existing pod, by GET or POST,
 * after authorization. Refusals follow ExecLocation (container choice,
 * node) and the kubelet; a plain request (no upgrade) gets upstream's
 * "Upgrade request required".
 */
static int
exec_hook(struct dc *dc, const struct dc_req *req, const struct json_object *pod,
    struct dc_resp *resp)
{
	struct exec_state *x = plugin_state(dc, &exec_plugin);
	const char *name = kc_json_str(pod, "metadata", "name");
	const char *cname = req_param(req, "container"), *list = "containers";
	const struct json_object *ctr = NULL;
	const char *node = kc_json_str(pod, "spec", "nodeName");
	char *argv[EXEC_ARGS_MAX];
	size_t argc = 0;
	bool in, out, err, tty;
	struct exec_session *s;
	int r;

	if (name == NULL)
		name = "";
	if (cname == NULL || cname[0] == '\0') {
		const struct json_object *cs = kc_json_get(pod, "spec", "containers");
		char names[1024], inames[1024];
		int n = names_of(cs, names, sizeof(names));

		if (n == 1) {
			ctr = json_object_array_get_idx(cs, 0);
			cname = kc_json_str(ctr, "name");
		} else if (n == 0) {
			errors_reply(resp, KC_EBADREQUEST, "a container name must be specified for "
			    "pod %s", name);
			return 0;
		} else {
			int ni = names_of(kc_json_get(pod, "spec", "initContainers"), inames,
			    sizeof(inames));

			errors_reply(resp, KC_EBADREQUEST, "a container name must be specified for "
			    "pod %s, choose one of: [%s]%s%s%s", name, names,
			    ni > 0 ? " or one of the init containers: [" : "",
			    ni > 0 ? inames : "", ni > 0 ? "]" : "");
			return 0;
		}
	} else if ((ctr = find_container(pod, cname, &list)) == NULL) {
		errors_reply(resp, KC_EBADREQUEST, "container %s is not valid for pod %s", cname,
		    name);
		return 0;
	}
	if (node == NULL || node[0] == '\0') {
		errors_reply(resp, KC_EBADREQUEST, "pod %s does not have a host assigned", name);
		return 0;
	}
	if (x == NULL || x->pending == NULL) {
		errors_reply(resp, KC_EBADREQUEST, "Upgrade request required");
		return 0;
	}
	in = req_param_bool(req, "stdin");
	out = req_param_bool(req, "stdout");
	err = req_param_bool(req, "stderr");
	tty = req_param_bool(req, "tty");
	if (!in && !out && !err) {
		errors_reply(resp, KC_EBADREQUEST, "you must specify at least 1 of stdin, stdout, "
		    "stderr");
		return 0;
	}
	for (size_t i = 0; i < req->nparams; i++)
		if (strcmp(req->params[i].key, "command") == 0) {
			if (argc == EXEC_ARGS_MAX) {
				errors_reply(resp, KC_EBADREQUEST, "too many command words (at most "
				    "%d)", EXEC_ARGS_MAX);
				return 0;
			}
			argv[argc++] = req->params[i].value != NULL ? req->params[i].value : "";
		}
	if (x->n >= EXEC_SESSIONS_MAX) {
		errors_reply(resp, KC_ETHROTTLED, "too many exec sessions at once (at most %d)",
		    EXEC_SESSIONS_MAX);
		return 0;
	}
	if ((s = session_new(x->pending->v5)) == NULL)
		return -ENOMEM;
	s->tty = tty;
	s->want_stdout = out;
	s->want_stderr = err && !tty;	/* the kubelet drops stderr with a tty */
	if (!container_running(pod, list, cname)) {
		/*
		 * The kubelet's "container not found": over SPDY to the kubelet
		 * a 500 before the upgrade; through kube-apiserver's stream
		 * translator (v5) an InternalError on the error channel.
		 */
		if (!s->v5) {
			char text[DC_SEGMENT_MAX + 32];

			session_free(s);
			(void)snprintf(text, sizeof(text), "container not found (\"%s\")", cname);
			return resp_text(resp, 500, "text/plain; charset=utf-8", text);
		}
		{
			char msg[DC_SEGMENT_MAX + 80];
			struct kc_buf st;

			kc_buf_init(&st, 4096);
			(void)snprintf(msg, sizeof(msg), "unable to upgrade connection: container "
			    "not found (\"%s\")", cname);
			r = exec_status_json(0, msg, &st);
			if (r < 0 || (s->status = kc_buf_take(&st, NULL)) == NULL) {
				kc_buf_free(&st);
				session_free(s);
				return r < 0 ? r : -ENOMEM;
			}
		}
	} else if ((r = session_run(dc, s, pod, ctr, argv, argc, in)) < 0) {
		session_free(s);
		return r;
	}
	x->pending->session = s;
	resp->status = 101;
	return 0;
}

/* The first protocol the client offers that we serve; NULL when none. */
const char *
exec_protocol_pick(const char *offer)
{
	struct kc_str s = kc_str_from(offer), tok;

	while (s.len > 0) {
		(void)kc_str_cut(&s, ',', &tok);
		tok = kc_str_trim(tok);
		if (kc_str_eq_cstr(tok, PROTO_V5))
			return PROTO_V5;
		if (kc_str_eq_cstr(tok, PROTO_V4))
			return PROTO_V4;
		if (kc_str_eq_cstr(tok, "http") || kc_str_eq_cstr(tok, "dc-fd"))
			return NULL;	/* libwebsockets would bind it to that protocol */
	}
	return NULL;
}

/* Makes an accepted session that sends the Status in 'resp' and closes. */
static int
status_session(bool v5, const struct dc_resp *resp, struct exec_session **ret)
{
	struct exec_session *s = session_new(v5);
	struct kc_buf b;

	if (s == NULL)
		return -ENOMEM;
	kc_buf_init(&b, DC_RESP_MAX);
	if (kc_buf_append(&b, resp->body.data, resp->body.len) < 0 ||
	    (s->status = kc_buf_take(&b, NULL)) == NULL) {
		kc_buf_free(&b);
		session_free(s);
		return -ENOMEM;
	}
	/* Without trailing white space, as the error channel carries it. */
	for (size_t n = strlen(s->status); n > 0 && (s->status[n - 1] == '\n'); n--)
		s->status[n - 1] = '\0';
	*ret = s;
	return 0;
}

int
exec_upgrade(struct dc *dc, struct dc_req *req, const char *protocols, struct dc_resp *resp,
    struct exec_session **ret)
{
	struct exec_state *x = plugin_state(dc, &exec_plugin);
	struct dc_route route;
	struct exec_pending p = { 0 };
	const char *proto;
	enum dc_method method = req->method;
	int r;

	*ret = NULL;
	(void)router_parse(req->method, req->path, false, &route);
	if (x == NULL || route.kind != DC_ROUTE_RESOURCE || strcmp(route.resource, "pods") != 0 ||
	    strcmp(route.subresource, "exec") != 0 || route.group[0] != '\0') {
		api_handle(dc, req, resp);
		if (resp->status < 400) {
			resp_clear(resp);
			resp_init(resp);
			errors_reply(resp, KC_EBADREQUEST, "the devcluster serves WebSocket "
			    "upgrades only for pods/exec");
		}
		return 1;
	}
	proto = exec_protocol_pick(protocols);
	p.v5 = proto != NULL && strcmp(proto, PROTO_V5) == 0;
	x->pending = &p;
	api_handle(dc, req, resp);
	if (p.session == NULL && p.v5) {
		/*
		 * client-go would now retry over SPDY, a POST that
		 * kube-apiserver authorizes as "create": run that retry here.
		 */
		resp_clear(resp);
		resp_init(resp);
		req->method = DC_POST;
		api_handle(dc, req, resp);
		req->method = method;
	}
	x->pending = NULL;
	if (p.session != NULL && proto == NULL) {
		session_free(p.session);
		p.session = NULL;
		resp_clear(resp);
		resp_init(resp);
		errors_reply(resp, KC_EBADREQUEST, "requested protocol(s) are not supported: "
		    "[%s]; supports [%s %s]", protocols != NULL ? protocols : "", PROTO_V5,
		    PROTO_V4);
		return 1;
	}
	if (p.session == NULL && p.v5 && resp->status >= 400) {
		if ((r = status_session(true, resp, &p.session)) < 0)
			return r;
		resp->status = 101;
	}
	if (p.session == NULL)
		return 1;
	session_add(x, p.session);
	*ret = p.session;
	return 0;
}

int
exec_init(struct dc *dc)
{
	struct exec_state *x;

	if ((x = kc_calloc(1, sizeof(*x))) == NULL)
		return -ENOMEM;
	x->dc = dc;
	TAILQ_INIT(&x->sessions);
	timer_init(&x->sweep, dc, sweep_tick, x);
	plugin_set_state(dc, &exec_plugin, x);
	dc->hooks.pod_exec = exec_hook;
	return 0;
}

void
exec_fini(struct dc *dc)
{
	struct exec_state *x = plugin_state(dc, &exec_plugin);

	if (x == NULL)
		return;
	/* After http_free(): the connections are gone. */
	while (!TAILQ_EMPTY(&x->sessions)) {
		TAILQ_FIRST(&x->sessions)->wsi = NULL;
		session_free(TAILQ_FIRST(&x->sessions));
	}
	timer_cancel(&x->sweep);
	if (dc->hooks.pod_exec == exec_hook)
		dc->hooks.pod_exec = NULL;
	plugin_set_state(dc, &exec_plugin, NULL);
	kc_free(x);
}

size_t
exec_sessions(const struct dc *dc)
{
	const struct exec_state *x = plugin_state(dc, &exec_plugin);

	return x != NULL ? x->n : 0;
}

static int
exec_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	(void)cfg;
	(void)st;
	return exec_init(dc);
}

static int
exec_plugin_upgrade(struct dc *dc, struct dc_req *req, const char *protocols,
    struct dc_resp *resp, void **ret_session)
{
	struct exec_session *s = NULL;
	int r;

	if ((r = exec_upgrade(dc, req, protocols, resp, &s)) == 0)
		*ret_session = s;
	return r;
}

/* The pods/exec streams; http.c adds them to its context. */
static const struct lws_protocols exec_protocols[] = {
	{ .name = PROTO_V5, .callback = exec_ws_callback, .rx_buffer_size = EXEC_RX_BUFFER },
	{ .name = PROTO_V4, .callback = exec_ws_callback, .rx_buffer_size = EXEC_RX_BUFFER },
	{ NULL, NULL, 0, 0, 0, NULL, 0 }
};

const struct dc_plugin exec_plugin = {
	.name = "exec",
	.init = exec_start,
	.fini = exec_fini,
	.upgrade = exec_plugin_upgrade,
	.ws_protocols = exec_protocols,
};

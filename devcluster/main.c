/*
 * main.c: trainyard-devcluster's flags, certificates, kubeconfig, signals
 * and the event loop.
 *
 *	trainyard-devcluster [--listen HOST:PORT] [--kubeconfig PATH]
 *	    [--data-dir DIR] [--token-auth-file FILE]
 *	    [--kubernetes-version 1.32] [--log-level LEVEL]
 *	    [--log-format text|json]
 *
 * Startup order: flags; the CA (loaded from the data dir, or created and
 * saved there) and a fresh serving certificate it signs for localhost,
 * 127.0.0.1, ::1 and the --listen host; the admin token (kept in the data
 * dir too); the objects of DIR/state.db (persist.c), restored inside
 * api_new() before the bootstrap objects; every other plug-in, in the
 * order of the table in plugins.c; the listener (port 0 picks a free one);
 * SIGTERM and SIGINT through a signalfd that
 * the loop watches; and last the kubeconfig, written atomically, so its
 * appearance means the server is ready.
 *
 * On SIGTERM or SIGINT: every watch is ended and drained for up to two
 * seconds, the shutdown hook flushes (persistence), and the process
 * exits 0. fatal() exists only for startup.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/cert.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>

#include "plugins.h"

#define OPT_NODES	0x4e00		/* nodes.c's long options */
#define OPT_KUBELET	0x4b00		/* kubelet.c's long options */

struct config {
	char		 host[256];
	int		 port;
	const char	*kubeconfig;
	const char	*data_dir;
	const char	*token_file;
	const char	*kube_version;
	struct dc_config plugins;	/* what the plug-ins take (plugins.h) */
};

struct state {
	struct dc	*dc;
	int		 sigfd;
	int		 signo;
};

static const char usage_text[] =
    "usage: trainyard-devcluster [--listen HOST:PORT] [--kubeconfig PATH]\n"
    "                            [--data-dir DIR] [--token-auth-file FILE]\n"
    "                            [--kubernetes-version 1.32] [--log-level LEVEL]\n"
    "                            [--log-format text|json]\n"
    "                            [--nodes FILE] [--coscheduling-scheduler-name NAME]\n"
    "                            [--cluster-cidr CIDR] [--node-monitor-grace-period D]\n"
    "                            [--node-startup-grace-period D] [--node-monitor-period D]\n"
    "                            [--node-lease-renew-interval D]\n"
    "                            [--node-status-report-frequency D]\n"
    "                            [--default-not-ready-toleration-seconds N]\n"
    "                            [--default-unreachable-toleration-seconds N]\n"
    "                            [--pod-start-delay D] [--no-kubelet-events]\n";

static void fatal(const char *fmt, ...) _printf_(1, 2);

static void
fatal(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	kc_log(KC_LOG_ERROR, &(struct kc_log_ctx){ .action = "startup" }, "%s", msg);
	exit(1);
}

static int
parse_listen(const char *s, struct config *cfg)
{
	const char *colon;
	uint32_t port;

	if (s[0] == '[') {
		const char *rb = strchr(s, ']');

		if (rb == NULL || rb[1] != ':' || (size_t)(rb - s - 1) >= sizeof(cfg->host))
			return -EINVAL;
		memcpy(cfg->host, s + 1, (size_t)(rb - s - 1));
		cfg->host[rb - s - 1] = '\0';
		colon = rb + 1;
	} else {
		if ((colon = strrchr(s, ':')) == NULL ||
		    (size_t)(colon - s) >= sizeof(cfg->host))
			return -EINVAL;
		memcpy(cfg->host, s, (size_t)(colon - s));
		cfg->host[colon - s] = '\0';
	}
	if (kc_parse_u32(colon + 1, &port) < 0 || port > 65535)
		return -EINVAL;
	if (cfg->host[0] == '\0')
		(void)kc_strlcpy(cfg->host, "0.0.0.0", sizeof(cfg->host));
	cfg->port = (int)port;
	return 0;
}

/* nodes.c's flags: --cluster-cidr, durations, toleration seconds. */
static void
parse_nodes_flag(int which, const char *arg, struct nodes_opts *o)
{
	static const char *const names[] = {
		"--cluster-cidr", "--node-monitor-grace-period", "--node-startup-grace-period",
		"--node-monitor-period", "--node-lease-renew-interval",
		"--node-status-report-frequency", "--default-not-ready-toleration-seconds",
		"--default-unreachable-toleration-seconds",
	};
	uint64_t *const durs[] = {
		NULL, &o->grace_ms, &o->startup_grace_ms, &o->monitor_ms, &o->lease_renew_ms,
		&o->status_report_ms,
	};
	uint32_t base, blocks;
	uint64_t ms;
	int64_t secs;

	if (which == 0) {
		if (nodes_parse_cidr(arg, &base, &blocks) < 0)
			fatal("--cluster-cidr: expected an IPv4 CIDR of /8 to /24, got \"%s\"",
			    arg);
		o->cluster_cidr = arg;
	} else if (which <= 5) {
		if (kc_parse_duration_ms(arg, &ms) < 0 || ms == 0)
			fatal("%s: expected a positive duration (\"40s\"), got \"%s\"",
			    names[which], arg);
		*durs[which] = ms;
	} else {
		if (kc_parse_i64(arg, &secs) < 0 || secs < 0)
			fatal("%s: expected seconds, got \"%s\"", names[which], arg);
		if (which == 6)
			o->not_ready_toleration_s = secs;
		else
			o->unreachable_toleration_s = secs;
	}
}

static void
parse_flags(int argc, char **argv, struct config *cfg)
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "kubeconfig", required_argument, NULL, 'k' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "token-auth-file", required_argument, NULL, 't' },
		{ "kubernetes-version", required_argument, NULL, 'v' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "log-format", required_argument, NULL, 'F' },
		{ "nodes", required_argument, NULL, 'N' },
		{ "coscheduling-scheduler-name", required_argument, NULL, 'C' },
		/* nodes.c */
		{ "cluster-cidr", required_argument, NULL, OPT_NODES + 0 },
		{ "node-monitor-grace-period", required_argument, NULL, OPT_NODES + 1 },
		{ "node-startup-grace-period", required_argument, NULL, OPT_NODES + 2 },
		{ "node-monitor-period", required_argument, NULL, OPT_NODES + 3 },
		{ "node-lease-renew-interval", required_argument, NULL, OPT_NODES + 4 },
		{ "node-status-report-frequency", required_argument, NULL, OPT_NODES + 5 },
		{ "default-not-ready-toleration-seconds", required_argument, NULL,
		  OPT_NODES + 6 },
		{ "default-unreachable-toleration-seconds", required_argument, NULL,
		  OPT_NODES + 7 },
		{ "pod-start-delay", required_argument, NULL, OPT_KUBELET + 0 },
		{ "no-kubelet-events", no_argument, NULL, OPT_KUBELET + 1 },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum kc_log_level level;
	enum kc_log_format format;
	int c;

	(void)kc_strlcpy(cfg->host, "127.0.0.1", sizeof(cfg->host));
	cfg->port = 6443;
	cfg->kube_version = "1.32";
	cfg->plugins.kubelet.start_delay_ms = KUBELET_START_DELAY_MS;
	cfg->plugins.nodes.not_ready_toleration_s = -1;
	cfg->plugins.nodes.unreachable_toleration_s = -1;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'l':
			if (parse_listen(optarg, cfg) < 0)
				fatal("--listen: expected HOST:PORT, got \"%s\"", optarg);
			break;
		case 'k':
			cfg->kubeconfig = optarg;
			break;
		case 'd':
			cfg->data_dir = optarg;
			break;
		case 't':
			cfg->token_file = optarg;
			break;
		case 'v':
			cfg->kube_version = optarg;
			break;
		case 'L':
			if (kc_log_parse_level(optarg, &level) < 0)
				fatal("--log-level: unknown level \"%s\"", optarg);
			kc_log_set_level(level);
			break;
		case 'F':
			if (kc_log_parse_format(optarg, &format) < 0)
				fatal("--log-format: expected text or json, got \"%s\"", optarg);
			kc_log_set_format(format);
			break;
		case 'N':
			cfg->plugins.nodes_file = optarg;
			break;
		case 'C':
			cfg->plugins.cosched_name = optarg;
			break;
		case OPT_NODES + 0: case OPT_NODES + 1: case OPT_NODES + 2:
		case OPT_NODES + 3: case OPT_NODES + 4: case OPT_NODES + 5:
		case OPT_NODES + 6: case OPT_NODES + 7:
			parse_nodes_flag(c - OPT_NODES, optarg, &cfg->plugins.nodes);
			break;
		case OPT_KUBELET + 0:
			if (kc_parse_duration_ms(optarg, &cfg->plugins.kubelet.start_delay_ms) < 0)
				fatal("--pod-start-delay: expected a duration such as 1s, got "
				    "\"%s\"", optarg);
			break;
		case OPT_KUBELET + 1:
			cfg->plugins.kubelet.no_events = true;
			break;
		case 'h':
			(void)fputs(usage_text, stdout);
			exit(0);
		default:
			(void)fputs(usage_text, stderr);
			exit(2);
		}
	}
	if (optind != argc) {
		(void)fputs(usage_text, stderr);
		exit(2);
	}
}

static char *
path_in(const char *dir, const char *name)
{
	char *p = kc_asprintf("%s/%s", dir, name);

	if (p == NULL)
		fatal("out of memory");
	return p;
}

static bool
is_ip(const char *host)
{
	size_t dots = 0;

	if (strchr(host, ':') != NULL)
		return true;
	for (const char *p = host; *p != '\0'; p++) {
		if (*p == '.')
			dots++;
		else if (*p < '0' || *p > '9')
			return false;
	}
	return dots == 3;
}

/* The CA from the data dir, or a new one (saved there when there is one). */
static struct kc_cert_pair *
load_ca(const struct config *cfg)
{
	struct kc_cert_pair *ca = NULL;
	struct kc_status st = { 0 };
	_cleanup_(kc_freep) char *crt = NULL;
	_cleanup_(kc_freep) char *key = NULL;
	int r;

	if (cfg->data_dir != NULL) {
		crt = path_in(cfg->data_dir, "ca.crt");
		key = path_in(cfg->data_dir, "ca.key");
		if (access(crt, F_OK) == 0) {
			if ((r = kc_cert_pair_read(crt, key, &ca, &st)) < 0)
				fatal("reading the CA from %s: %s", cfg->data_dir,
				    st.message[0] != '\0' ? st.message : kc_strerror(r));
			return ca;
		}
	}
	if ((r = kc_cert_create(&(struct kc_cert_opts){
	    .cn = "trainyard-devcluster-ca", .is_ca = true, .days = 3650,
	    }, NULL, &ca, &st)) < 0)
		fatal("creating the CA: %s", st.message[0] != '\0' ? st.message : kc_strerror(r));
	if (cfg->data_dir != NULL && (r = kc_cert_pair_write(ca, crt, key, &st)) < 0)
		fatal("saving the CA: %s", st.message[0] != '\0' ? st.message : kc_strerror(r));
	return ca;
}

static struct kc_cert_pair *
serving_cert(const struct config *cfg, const struct kc_cert_pair *ca)
{
	const char *dns[4] = { "localhost", "devcluster", NULL, NULL };
	const char *ips[4] = { "127.0.0.1", "::1", NULL, NULL };
	struct kc_cert_pair *srv = NULL;
	struct kc_status st = { 0 };
	int r;

	if (strcmp(cfg->host, "0.0.0.0") != 0 && strcmp(cfg->host, "127.0.0.1") != 0 &&
	    strcmp(cfg->host, "::1") != 0 && strcmp(cfg->host, "localhost") != 0 &&
	    strcmp(cfg->host, "::") != 0) {
		if (is_ip(cfg->host))
			ips[2] = cfg->host;
		else
			dns[2] = cfg->host;
	}
	if ((r = kc_cert_create(&(struct kc_cert_opts){
	    .cn = "trainyard-devcluster", .server = true, .dns = dns, .ips = ips,
	    .days = 365 }, ca, &srv, &st)) < 0)
		fatal("creating the serving certificate: %s",
		    st.message[0] != '\0' ? st.message : kc_strerror(r));
	return srv;
}

static char *
admin_token(const struct config *cfg)
{
	static const char hex[] = "0123456789abcdef";
	_cleanup_(kc_freep) char *path = NULL;
	unsigned char raw[24];
	char *tok = NULL;
	size_t len;
	int r;

	if (cfg->data_dir != NULL) {
		path = path_in(cfg->data_dir, "admin-token");
		if (kc_read_file(path, 4096, &tok, &len) == 0) {
			while (len > 0 && (tok[len - 1] == '\n' || tok[len - 1] == '\r'))
				tok[--len] = '\0';
			if (len > 0)
				return tok;
			kc_free(tok);
		}
	}
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		fatal("getrandom: %s", kc_strerror(-errno));
	if ((tok = kc_malloc(2 * sizeof(raw) + 1)) == NULL)
		fatal("out of memory");
	for (size_t i = 0; i < sizeof(raw); i++) {
		tok[2 * i] = hex[raw[i] >> 4];
		tok[2 * i + 1] = hex[raw[i] & 15];
	}
	tok[2 * sizeof(raw)] = '\0';
	explicit_bzero(raw, sizeof(raw));
	if (path != NULL && (r = kc_write_file_atomic(path, tok, strlen(tok), 0600)) < 0)
		fatal("saving the admin token: %s", kc_strerror(r));
	return tok;
}

static void
write_kubeconfig(const struct config *cfg, const struct kc_cert_pair *ca,
    const char *token, int port)
{
	struct json_object *kc = NULL, *clusters, *cl, *c, *users, *u, *ui, *ctxs, *cx, *ci;
	char server[300], *json = NULL, *ca_b64;
	const char *host = cfg->host;
	size_t len;
	int r;

	if (strcmp(host, "0.0.0.0") == 0)
		host = "127.0.0.1";
	else if (strcmp(host, "::") == 0)
		host = "::1";
	if (strchr(host, ':') != NULL)
		(void)snprintf(server, sizeof(server), "https://[%s]:%d", host, port);
	else
		(void)snprintf(server, sizeof(server), "https://%s:%d", host, port);
	if (kc_base64_encode(ca->cert_pem, ca->cert_pem_len, 0, &ca_b64, NULL) < 0)
		fatal("out of memory");
	kc = json_object_new_object();
	clusters = json_object_new_array();
	cl = json_object_new_object();
	c = json_object_new_object();
	users = json_object_new_array();
	u = json_object_new_object();
	ui = json_object_new_object();
	ctxs = json_object_new_array();
	cx = json_object_new_object();
	ci = json_object_new_object();
	if (kc == NULL || kc_json_set_str(kc, "apiVersion", "v1") < 0 ||
	    kc_json_set_str(kc, "kind", "Config") < 0 ||
	    kc_json_put(kc, "clusters", clusters) < 0 || kc_json_append(clusters, cl) < 0 ||
	    kc_json_set_str(cl, "name", "devcluster") < 0 || kc_json_put(cl, "cluster", c) < 0 ||
	    kc_json_set_str(c, "server", server) < 0 ||
	    kc_json_set_str(c, "certificate-authority-data", ca_b64) < 0 ||
	    kc_json_put(kc, "users", users) < 0 || kc_json_append(users, u) < 0 ||
	    kc_json_set_str(u, "name", "admin") < 0 || kc_json_put(u, "user", ui) < 0 ||
	    kc_json_set_str(ui, "token", token) < 0 ||
	    kc_json_put(kc, "contexts", ctxs) < 0 || kc_json_append(ctxs, cx) < 0 ||
	    kc_json_set_str(cx, "name", "devcluster") < 0 || kc_json_put(cx, "context", ci) < 0 ||
	    kc_json_set_str(ci, "cluster", "devcluster") < 0 ||
	    kc_json_set_str(ci, "user", "admin") < 0 ||
	    kc_json_set_str(ci, "namespace", "default") < 0 ||
	    kc_json_set_str(kc, "current-context", "devcluster") < 0 ||
	    kc_json_put(kc, "preferences", json_object_new_object()) < 0 ||
	    (json = kc_json_dump(kc, &len)) == NULL)
		fatal("out of memory");
	json_object_put(kc);
	kc_free(ca_b64);
	if ((r = kc_write_file_atomic(cfg->kubeconfig, json, len, 0600)) < 0)
		fatal("writing %s: %s", cfg->kubeconfig, kc_strerror(r));
	kc_free_secret(json);
}

static void
on_signal(void *arg)
{
	struct state *s = arg;
	struct signalfd_siginfo si;

	while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		s->signo = (int)si.ssi_signo;
	if (s->signo != 0)
		http_stop(s->dc->http);
}

int
main(int argc, char **argv)
{
	struct config cfg = { 0 };
	struct state s = { .sigfd = -1 };
	struct kc_status st = { 0 };
	struct kc_cert_pair *ca, *srv;
	struct dc_http *http = NULL;
	struct dc_persist *pst = NULL;
	sigset_t mask;
	char *token;
	int r;

	parse_flags(argc, argv, &cfg);
	if (cfg.data_dir != NULL && mkdir(cfg.data_dir, 0700) < 0 && errno != EEXIST)
		fatal("creating %s: %s", cfg.data_dir, kc_strerror(-errno));
	ca = load_ca(&cfg);
	srv = serving_cert(&cfg, ca);
	token = admin_token(&cfg);
	if (cfg.data_dir != NULL && (r = persist_open(cfg.data_dir, &pst, &st)) < 0)
		fatal("%s", st.message[0] != '\0' ? st.message : kc_strerror(r));
	if ((r = api_new(&(struct dc_opts){ .kube_version = cfg.kube_version,
	    .restore = pst != NULL ? persist_restore : NULL, .restore_arg = pst }, &s.dc)) < 0)
		fatal("%s", r == -EINVAL ? "--kubernetes-version: expected MAJOR.MINOR" :
		    kc_strerror(r));
	/* Every plug-in, in the table's order (plugins.c). */
	cfg.plugins.tokens.data_dir = cfg.data_dir;
	cfg.plugins.tokens.ca_pem = ca->cert_pem;
	if ((r = api_plugins_start(s.dc, &cfg.plugins, &st)) < 0)
		fatal("%s", st.message);
	if ((r = auth_add(s.dc->auth, token, "admin", "admin",
	    (const char *const []){ "system:masters", NULL })) < 0)
		fatal("%s", kc_strerror(r));
	if (cfg.token_file != NULL && (r = auth_load_file(s.dc->auth, cfg.token_file,
	    &st)) < 0)
		fatal("--token-auth-file: %s", st.message[0] != '\0' ? st.message :
		    kc_strerror(r));

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 ||
	    (s.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
		fatal("signalfd: %s", kc_strerror(-errno));
	(void)signal(SIGPIPE, SIG_IGN);

	if ((r = http_start(s.dc, &(struct dc_http_opts){
	    .host = cfg.host, .port = cfg.port, .cert_pem = srv->cert_pem,
	    .key_pem = srv->key_pem }, &http, &st)) < 0)
		fatal("%s", st.message[0] != '\0' ? st.message : kc_strerror(r));
	if ((r = http_watch_fd(http, s.sigfd, on_signal, &s)) < 0)
		fatal("watching signals: %s", kc_strerror(r));
	if (strchr(cfg.host, ':') != NULL)
		(void)snprintf(s.dc->server_address, sizeof(s.dc->server_address),
		    "[%s]:%d", cfg.host, http_port(http));
	else
		(void)snprintf(s.dc->server_address, sizeof(s.dc->server_address), "%s:%d",
		    cfg.host, http_port(http));
	discovery_invalidate(s.dc);
	if (cfg.kubeconfig != NULL)
		write_kubeconfig(&cfg, ca, token, http_port(http));
	kc_log_kv(KC_LOG_INFO, &(struct kc_log_ctx){ .action = "startup" },
	    (const struct kc_log_field []){
		{ "address", s.dc->server_address },
		{ "version", s.dc->git_version },
		{ "kubeconfig", cfg.kubeconfig != NULL ? cfg.kubeconfig : "" },
	    }, 3, "devcluster ready");
	kc_free_secret(token);
	srv = kc_cert_pair_free(srv);

	r = http_run(http);
	kc_log_info(&(struct kc_log_ctx){ .action = "shutdown" }, "stopping (signal %d)",
	    s.signo);
	s.dc->stopping = true;
	watchhub_close_all(s.dc->hub);
	http_drain(http, 2000);
	if (s.dc->hooks.shutdown != NULL)
		s.dc->hooks.shutdown(s.dc);
	http = http_free(http);
	s.dc = api_free(s.dc);		/* the plug-ins stop in reverse table order */
	ca = kc_cert_pair_free(ca);
	(void)close(s.sigfd);
	return r < 0 ? 1 : 0;
}

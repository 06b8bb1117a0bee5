/*
 * main.c: trainyard-controller's flags, configuration, signals, startup
 * and shutdown order.
 *
 *	trainyard-controller [--kubeconfig PATH] [--config FILE]
 *	    [--namespace NS] [--workers N] [--kube-api-qps Q]
 *	    [--kube-api-burst B] [--log-level L] [--log-format F]
 *	    [--metrics-bind-address ADDR] [--health-probe-bind-address ADDR]
 *	    [--leader-elect] [--leader-election-namespace NS]
 *	    [--leader-election-id NAME] [--metrics-secure]
 *	    [--webhook-bind-address ADDR] [--webhook-cert-dir DIR]
 *	    [--webhook-cert-mode files|self]
 *
 * Configuration: the defaults, then the --config file, then the flags
 * (config.c checks each and the rules between them; a bad value stops the
 * start with the file, key and reason). The API server: --kubeconfig, else
 * $KUBECONFIG, else the in-cluster service account, else ~/.kube/config.
 *
 * Startup: the allocator is set up before anything else (tune_malloc()),
 * then /healthz and /metrics answer (liveness holds while the caches
 * sync), then the conversion webhook serves (every replica, before leader
 * election and before the caches, which may need it to read Runs stored
 * at another version), with its certificate from --webhook-cert-dir or,
 * with --webhook-cert-mode=self, from certs.c, then the informers sync, then /readyz turns ready (leader and
 * standby alike), then the workers start: at once, or with leader
 * election once this process holds the Lease.
 *
 * Every signal is blocked before the first thread starts; the main thread
 * then waits in sigwaitinfo(). SIGTERM or SIGINT stops intake, lets the
 * reconciles in flight finish (up to 20 s), releases the Lease, stops the
 * informers and exits 0. Losing the Lease (SIGUSR1 from the leader thread)
 * takes the same path and exits 1, so the Deployment restarts the pod as
 * a standby (client-go's advice: never keep working without the Lease).
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/kubeconfig.h>
#include <kc/log.h>
#include <kc/str.h>
#include <kc/transport.h>

#include "certs.h"
#include "controller.h"
#include "convert.h"
#include "migrate.h"
#include "webhook.h"

#define DRAIN_MS	(20 * 1000)

static const struct kc_log_ctx mainlog = { .action = "main" };

static void fatal(const char *, ...) _printf_(1, 2) __attribute__((noreturn));

static void
fatal(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	(void)fprintf(stderr, "trainyard-controller: %s\n", msg);
	exit(2);
}

static void
usage(FILE *f)
{
	(void)fprintf(f,
	    "usage: trainyard-controller [--kubeconfig PATH] [--config FILE]\n"
	    "           [--namespace NS] [--workers N] [--kube-api-qps Q]\n"
	    "           [--kube-api-burst B] [--log-level debug|info|warn|error]\n"
	    "           [--log-format text|json] [--metrics-bind-address ADDR]\n"
	    "           [--health-probe-bind-address ADDR] [--leader-elect]\n"
	    "           [--leader-election-namespace NS] [--leader-election-id NAME]\n"
	    "           [--metrics-secure] [--webhook-bind-address ADDR]\n"
	    "           [--webhook-cert-dir DIR] [--webhook-cert-mode files|self]\n"
	    "           [--webhook-cert-lifetime-for-testing DURATION] [--version]\n"
	    "       trainyard-controller migrate [--kubeconfig PATH] [--dry-run]\n"
	    "\n"
	    "Reconciles trainyard.dev Runs into pods, a PodGroup, a headless Service\n"
	    "and a NetworkPolicy per session. The API server is found from\n"
	    "--kubeconfig, then $KUBECONFIG, then the in-cluster service account.\n"
	    "See docs/api.md for the configuration file.\n");
}

struct flags {
	const char	*kubeconfig;
	const char	*config;
	/* Flags applied over the file, in order: config key and value. */
	struct {
		const char	*key;
		const char	*value;
	}		 set[16];
	size_t		 nset;
	const char	*exit_after_writes;	/* hidden, tests only */
	const char	*wall_offset_file;	/* hidden, tests only */
};

static void
flag_set(struct flags *f, const char *key, const char *value)
{
	if (f->nset == sizeof(f->set) / sizeof(f->set[0]))
		fatal("too many flags");
	f->set[f->nset].key = key;
	f->set[f->nset++].value = value;
}

static void
parse_flags(int argc, char **argv, struct flags *f)
{
	static const struct option opts[] = {
		{ "kubeconfig", required_argument, NULL, 'k' },
		{ "config", required_argument, NULL, 'c' },
		{ "namespace", required_argument, NULL, 'n' },
		{ "workers", required_argument, NULL, 'w' },
		{ "kube-api-qps", required_argument, NULL, 'q' },
		{ "kube-api-burst", required_argument, NULL, 'b' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "log-format", required_argument, NULL, 'F' },
		{ "metrics-bind-address", required_argument, NULL, 'M' },
		{ "health-probe-bind-address", required_argument, NULL, 'H' },
		{ "leader-elect", no_argument, NULL, 'E' },
		{ "leader-election-namespace", required_argument, NULL, 'N' },
		{ "leader-election-id", required_argument, NULL, 'I' },
		{ "metrics-secure", no_argument, NULL, 'S' },
		{ "webhook-bind-address", required_argument, NULL, 'W' },
		{ "webhook-cert-dir", required_argument, NULL, 'D' },
		{ "webhook-cert-mode", required_argument, NULL, 'C' },
		{ "webhook-cert-lifetime-for-testing", required_argument, NULL, 'T' },
		/* Hidden, for the chaos suite (docs/reliability.md): not in usage. */
		{ "exit-after-writes-for-testing", required_argument, NULL, 'X' },
		{ "wall-clock-offset-file-for-testing", required_argument, NULL, 'O' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'k':
			f->kubeconfig = optarg;
			break;
		case 'c':
			f->config = optarg;
			break;
		case 'n':
			flag_set(f, "watchNamespace", optarg);
			break;
		case 'w':
			flag_set(f, "workers", optarg);
			break;
		case 'q':
			flag_set(f, "kubeAPIQPS", optarg);
			break;
		case 'b':
			flag_set(f, "kubeAPIBurst", optarg);
			break;
		case 'L':
			flag_set(f, "logLevel", optarg);
			break;
		case 'F':
			flag_set(f, "logFormat", optarg);
			break;
		case 'M':
			flag_set(f, "metricsBindAddress", optarg);
			break;
		case 'H':
			flag_set(f, "healthProbeBindAddress", optarg);
			break;
		case 'E':
			flag_set(f, "leaderElection.enabled", "true");
			break;
		case 'N':
			flag_set(f, "leaderElection.namespace", optarg);
			break;
		case 'I':
			flag_set(f, "leaderElection.id", optarg);
			break;
		case 'S':
			flag_set(f, "metricsSecure", "true");
			break;
		case 'W':
			flag_set(f, "webhook.bindAddress", optarg);
			break;
		case 'D':
			flag_set(f, "webhook.certDir", optarg);
			break;
		case 'C':
			flag_set(f, "webhook.certMode", optarg);
			break;
		case 'T':
			flag_set(f, "webhook.certLifetimeForTesting", optarg);
			break;
		case 'X':
			f->exit_after_writes = optarg;
			break;
		case 'O':
			f->wall_offset_file = optarg;
			break;
		case 'V':
			(void)printf("trainyard-controller %s\n", KC_VERSION);
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		fatal("unexpected argument \"%s\" (see --help)", argv[optind]);
}

/* The flag name of a config key, for messages. */
static const char *
flag_name(const char *key)
{
	static const char *const map[][2] = {
		{ "watchNamespace", "--namespace" }, { "workers", "--workers" },
		{ "kubeAPIQPS", "--kube-api-qps" }, { "kubeAPIBurst", "--kube-api-burst" },
		{ "logLevel", "--log-level" }, { "logFormat", "--log-format" },
		{ "metricsBindAddress", "--metrics-bind-address" },
		{ "healthProbeBindAddress", "--health-probe-bind-address" },
		{ "leaderElection.enabled", "--leader-elect" },
		{ "leaderElection.namespace", "--leader-election-namespace" },
		{ "leaderElection.id", "--leader-election-id" },
		{ "metricsSecure", "--metrics-secure" },
		{ "webhook.bindAddress", "--webhook-bind-address" },
		{ "webhook.certDir", "--webhook-cert-dir" },
		{ "webhook.certMode", "--webhook-cert-mode" },
		{ "webhook.certLifetimeForTesting", "--webhook-cert-lifetime-for-testing" },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(map[i][0], key) == 0)
			return map[i][1];
	return key;
}

static void
load_config(struct ctl *c, const struct flags *f)
{
	struct kc_status st = { 0 };
	int r;

	config_defaults(&c->cfg);
	if (f->config != NULL && (r = config_load(&c->cfg, f->config, &st)) < 0)
		fatal("%s", st.message[0] != '\0' ? st.message : kc_strerror(r));
	for (size_t i = 0; i < f->nset; i++)
		if ((r = config_set_flag(&c->cfg, f->set[i].key, f->set[i].value, &st)) < 0)
			fatal("%s: %s", flag_name(f->set[i].key),
			    st.message[0] != '\0' ? st.message : kc_strerror(r));
	if ((r = config_validate(&c->cfg, &st)) < 0)
		fatal("%s", st.message[0] != '\0' ? st.message : kc_strerror(r));
	kc_log_set_level(c->cfg.log_level);
	kc_log_set_format(c->cfg.log_format);
	if (f->exit_after_writes != NULL &&
	    (kc_parse_u64(f->exit_after_writes, &c->exit_after_writes) < 0 ||
	    c->exit_after_writes == 0))
		fatal("--exit-after-writes-for-testing: \"%s\" is not a positive count",
		    f->exit_after_writes);
	if (c->exit_after_writes != 0)
		kc_log_warn(&mainlog, "--exit-after-writes-for-testing: SIGKILL after API "
		    "write %llu; for tests only", (unsigned long long)c->exit_after_writes);
}

/* The offset clock's news: one line per change of its file. */
static void
wall_offset_report(void *arg, const char *path, int err, int64_t offset_s)
{
	(void)arg;
	if (err < 0)
		kc_log_warn(&mainlog, "--wall-clock-offset-file-for-testing: %s: %s; the "
		    "wall clock stays %+lld s off", path, err == -EINVAL ?
		    "not a number of seconds" : kc_strerror(err), (long long)offset_s);
	else
		kc_log_warn(&mainlog, "--wall-clock-offset-file-for-testing: the wall clock "
		    "is now %+lld s off (the monotonic clock is not)", (long long)offset_s);
}

/*
 * Tests only: the wall clock steps as the file says while the process
 * runs (kc/clock.h, kc_clock_offset_new()). Installed before any thread.
 */
static struct kc_clock_offset *
install_wall_offset(const struct flags *f)
{
	struct kc_clock_offset *o = NULL;
	int r;

	if (f->wall_offset_file == NULL)
		return NULL;
	kc_log_warn(&mainlog, "--wall-clock-offset-file-for-testing: the wall clock follows "
	    "%s; for tests only", f->wall_offset_file);
	if ((r = kc_clock_offset_new(&(struct kc_clock_offset_opts){
		.path = f->wall_offset_file,
		.report = wall_offset_report,
	}, &o)) < 0)
		fatal("--wall-clock-offset-file-for-testing: %s", kc_strerror(r));
	kc_clock_set(kc_clock_offset_clock(o));
	return o;
}

static void
started_leading(void *arg)
{
	struct ctl *c = arg;
	int r;

	kc_log_info(&mainlog, "leading: starting the workers");
	metrics_set_leader(c->metrics, true);
	if ((r = manager_start_workers(c)) < 0) {
		kc_log_error_r(&mainlog, r, "cannot start the workers");
		atomic_store(&c->lost, true);
		(void)kill(getpid(), SIGUSR1);
	}
}

static void
stopped_leading(void *arg)
{
	struct ctl *c = arg;

	metrics_set_leader(c->metrics, false);
}

static void
new_leader(void *arg, const char *identity)
{
	(void)arg;
	kc_log_info(&mainlog, "the leader is %s", identity[0] != '\0' ? identity : "(none)");
}

static void *
leader_main(void *arg)
{
	struct ctl *c = arg;
	struct kc_status st = { 0 };
	struct kc_client *cl = NULL;
	int r;

	/* Its own client, outside the shared bucket: busy workers never
	 * starve the renewals. */
	if ((r = kc_client_new(&(struct kc_client_opts){
		.rc = c->rc,
		.timeout_ms = (uint32_t)(c->cfg.leader.renew_deadline_ms / 2),
		.observe = metrics_client_observe,
		.observe_arg = c->metrics,
		.user_agent = TY_COMPONENT "/" KC_VERSION " leader-election",
	}, &cl, &st)) < 0) {
		kc_log_error_r(&mainlog, r, "leader election client: %s", st.message);
		atomic_store(&c->lost, true);
		(void)kill(getpid(), SIGUSR1);
		return NULL;
	}
	r = kc_leader_run(c->leader, cl, &st);
	kc_client_free(cl);
	if (r == KC_LEADER_LOST) {
		kc_log_error_r(&mainlog, KC_ECONFLICT, "lost the Lease %s/%s: stopping",
		    c->cfg.leader.ns, c->cfg.leader.id);
		atomic_store(&c->lost, true);
		(void)kill(getpid(), SIGUSR1);
	} else if (r < 0)
		kc_log_error_r(&mainlog, r, "leader election: %s", st.message);
	return NULL;
}

static void
start_leader(struct ctl *c, pthread_t *tid)
{
	struct kc_status st = { 0 };
	char identity[KC_LEADER_IDENTITY_MAX];
	int r;

	(void)snprintf(identity, sizeof(identity), "%.64s_%016llx", c->instance,
	    (unsigned long long)kc_random_u64());
	if ((r = kc_leader_new(&(struct kc_leader_opts){
		.ns = c->cfg.leader.ns,
		.name = c->cfg.leader.id,
		.identity = identity,
		.lease_duration_ms = c->cfg.leader.lease_duration_ms,
		.renew_deadline_ms = c->cfg.leader.renew_deadline_ms,
		.retry_period_ms = c->cfg.leader.retry_period_ms,
		.on_started_leading = started_leading,
		.on_stopped_leading = stopped_leading,
		.on_new_leader = new_leader,
		.arg = c,
	}, &c->leader, &st)) < 0)
		fatal("leader election: %s", st.message[0] != '\0' ? st.message :
		    kc_strerror(r));
	kc_log_info(&mainlog, "leader election on Lease %s/%s as %s", c->cfg.leader.ns,
	    c->cfg.leader.id, identity);
	if ((r = pthread_create(tid, NULL, leader_main, c)) != 0)
		fatal("thread: %s", kc_strerror(-r));
}

/*
 * The signal thread: the only one that receives signals (every thread
 * blocks them). A stop signal (SIGTERM, SIGINT, or SIGUSR1 from the leader
 * thread) cancels a start still syncing the caches and wakes main.
 */
struct sigthread {
	struct ctl	*c;
	sigset_t	 set;
	sem_t		 stop;
	atomic_bool	 started;	/* manager_start() returned */
};

static void *
signal_main(void *arg)
{
	struct sigthread *t = arg;
	siginfo_t si;
	int sig;

	for (;;) {
		if ((sig = sigwaitinfo(&t->set, &si)) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (sig == SIGTERM || sig == SIGINT || sig == SIGUSR1)
			break;
		/* SIGHUP, SIGPIPE: nothing to do. */
	}
	atomic_store(&t->c->stop_requested, true);
	if (!atomic_load(&t->started))
		manager_cancel_start(t->c);
	(void)sem_post(&t->stop);
	return NULL;
}

/* The admission webhook configurations whose caBundle they keep (manifests/webhooks.yaml). */
static const char *const webhook_configs[] = { "trainyard-projects", NULL };

/* The CRDs whose caBundle the self-managed certificates keep. */
static const char *const webhook_crds[] = {
	"runs.trainyard.dev", "resourceprofiles.trainyard.dev", NULL,
};

/*
 * The conversion webhook: serves from its own thread on every replica.
 * With --webhook-cert-mode=self, certs.c keeps its certificate from a
 * thread of its own (failures are logged and retried; until one is
 * loaded, the webhook's /readyz says so).
 */
static void
start_webhook(struct ctl *c, struct webhook **ret_w, struct certs_runner **ret_cr)
{
	const struct ty_webhook_config *wc = &c->cfg.webhook;
	const char *ns = getenv("POD_NAMESPACE");
	bool self = wc->cert_mode == TY_CERT_SELF;
	struct kc_status st = { 0 };
	int r;

	*ret_cr = NULL;
	project_admission_ops(c, &c->admission);
	if ((r = webhook_start(&(struct webhook_opts){
		.addr = wc->bind_address,
		.cert_dir = self || wc->cert_dir[0] == '\0' ? NULL : wc->cert_dir,
		.convert = ty_convert,
		.admission = &c->admission,
		.metrics = c->metrics,
	}, ret_w, &st)) < 0)
		fatal("webhook: %s", st.message[0] != '\0' ? st.message : kc_strerror(r));
	if (*ret_w == NULL) {
		kc_log_info(&mainlog, "conversion webhook off");
		return;
	}
	kc_log_info(&mainlog, "conversion webhook on port %d, certificates: %s",
	    webhook_port(*ret_w), config_cert_mode_name(wc->cert_mode));
	if (self && wc->cert_lifetime_for_testing_ms != 0)
		kc_log_warn(&mainlog, "--webhook-cert-lifetime-for-testing: the CA lives %llus "
		    "and the serving certificate %llus; for tests only",
		    (unsigned long long)(wc->cert_lifetime_for_testing_ms / 1000),
		    (unsigned long long)(wc->cert_lifetime_for_testing_ms / 2000));
	if (!self)
		return;
	if (ns == NULL || *ns == '\0')
		ns = c->cfg.leader.ns;
	if ((r = certs_start(&(struct certs_runner_opts){
		.certs = {
			.ns = ns,
			.secret = wc->secret,
			.service = wc->service,
			.crds = webhook_crds,
			.webhook_configs = webhook_configs,
			.ca_seconds = (unsigned)(wc->cert_lifetime_for_testing_ms / 1000),
			.leaf_seconds = (unsigned)(wc->cert_lifetime_for_testing_ms / 2000),
		},
		.rc = c->rc,
		.webhook = *ret_w,
	}, ret_cr, &st)) < 0)
		fatal("webhook certificates: %s", st.message[0] != '\0' ? st.message :
		    kc_strerror(r));
}

/*
 * The allocator, before the first thread. glibc gives a thread that meets
 * contention an arena of its own, up to eight per core, and an arena
 * keeps the high-water mark of whatever burst last ran on it: with 16
 * workers and a thread per cache that is a dozen heaps, each holding a
 * few MB nobody uses (a reconcile of a 4000-node Run copies its pods
 * once per worker that ever ran it). TY_MALLOC_ARENAS arenas keep what a
 * burst frees where the next burst reuses it, at little contention: most
 * small blocks come from each thread's tcache without the arena lock. A
 * fixed mmap threshold keeps big blocks (list pages, large requests)
 * out of the heaps, so freeing one returns it at once instead of raising
 * glibc's threshold and fragmenting a heap. workers.c's trimmer gives the
 * rest back after each burst. MALLOC_ARENA_MAX in the environment wins.
 */
#define TY_MALLOC_ARENAS	2
#define TY_MMAP_THRESHOLD	(128 * 1024)

static void
tune_malloc(void)
{
	if (getenv("MALLOC_ARENA_MAX") == NULL)
		(void)mallopt(M_ARENA_MAX, TY_MALLOC_ARENAS);
	if (getenv("MALLOC_MMAP_THRESHOLD_") == NULL)
		(void)mallopt(M_MMAP_THRESHOLD, TY_MMAP_THRESHOLD);
}

/* The health listener's /readyz/webhook asks the webhook (a metrics_ready_fn). */
static bool
webhook_probe_ready(void *arg, char *why, size_t size)
{
	return webhook_ready(arg, why, size);
}

int
main(int argc, char **argv)
{
	struct ctl c = { 0 };
	struct flags f = { 0 };
	struct kc_status st = { 0 };
	struct sigthread sigt = { .c = &c };
	struct webhook *wh = NULL;
	struct certs_runner *certs = NULL;
	struct metrics_auth *mauth = NULL;
	struct kc_clock_offset *wall_offset;
	pthread_t leader_tid, sig_tid;
	int r;

	if (argc > 1 && strcmp(argv[1], "migrate") == 0)
		return migrate_main(argc - 1, argv + 1);
	tune_malloc();
	parse_flags(argc, argv, &f);
	load_config(&c, &f);
	wall_offset = install_wall_offset(&f);
	if (gethostname(c.instance, sizeof(c.instance)) < 0)
		kc_strlcpy(c.instance, "trainyard-controller", sizeof(c.instance));
	c.instance[sizeof(c.instance) - 1] = '\0';
	if ((r = kc_rest_config_load_default(f.kubeconfig, NULL, &c.rc, &st)) < 0)
		fatal("%s", st.message[0] != '\0' ? st.message : kc_strerror(r));
	if ((r = kc_transport_global_init()) < 0)
		fatal("libcurl: %s", kc_strerror(r));

	/* Every thread inherits this mask: signals reach signal_main() only. */
	sigemptyset(&sigt.set);
	sigaddset(&sigt.set, SIGTERM);
	sigaddset(&sigt.set, SIGINT);
	sigaddset(&sigt.set, SIGHUP);
	sigaddset(&sigt.set, SIGPIPE);
	sigaddset(&sigt.set, SIGUSR1);
	if ((r = pthread_sigmask(SIG_BLOCK, &sigt.set, NULL)) != 0)
		fatal("sigmask: %s", kc_strerror(-r));
	if (sem_init(&sigt.stop, 0, 0) < 0 || manager_init(&c) < 0)
		fatal("out of memory");
	if ((r = pthread_create(&sig_tid, NULL, signal_main, &sigt)) != 0)
		fatal("thread: %s", kc_strerror(-r));

	if ((r = metrics_new(KC_VERSION, &c.metrics)) < 0)
		fatal("metrics: %s", kc_strerror(r));
	metrics_set_ready(c.metrics, false, "caches syncing");
	/* The webhook first: secure metrics serve its certificate. */
	start_webhook(&c, &wh, &certs);
	if (c.cfg.metrics_secure) {
		if (wh == NULL)
			fatal("--metrics-secure: serves the webhook's certificate, and the "
			    "webhook is off (--webhook-bind-address)");
		if ((r = metrics_auth_new(&(struct metrics_auth_opts){ .rc = c.rc },
		    &mauth, &st)) < 0)
			fatal("metrics: %s", st.message[0] != '\0' ? st.message :
			    kc_strerror(r));
	}
	if ((r = metrics_start(c.metrics, &(struct metrics_opts){
		.metrics_addr = c.cfg.metrics_bind_address,
		.health_addr = c.cfg.health_probe_bind_address,
		.tls_setup = mauth != NULL ? webhook_tls_setup : NULL,
		.tls_arg = wh,
		.auth = mauth,
	}, &st)) < 0)
		fatal("%s", st.message[0] != '\0' ? st.message : kc_strerror(r));
	if (wh != NULL)
		metrics_set_webhook_ready(c.metrics, webhook_probe_ready, wh);
	kc_log_info(&mainlog, "metrics on port %d, health probes on port %d",
	    metrics_port(c.metrics, false), metrics_port(c.metrics, true));
	if (mauth != NULL)
		kc_log_info(&mainlog, "secure metrics on port %d: HTTPS, TokenReview and "
		    "SubjectAccessReview", metrics_port(c.metrics, false));

	kc_log_info(&mainlog, "trainyard-controller %s starting: %s, %u workers, "
	    "%.0f qps (burst %u)", KC_VERSION, c.rc->server, c.cfg.workers,
	    c.cfg.kube_api_qps, c.cfg.kube_api_burst);
	r = manager_start(&c);
	atomic_store(&sigt.started, true);
	if (r < 0 && !atomic_load(&c.stop_requested)) {
		manager_stop(&c, 0);
		manager_free(&c);
		metrics_free(c.metrics);
		fatal("could not start: %s", kc_strerror(r));
	}
	if (r == 0 && !atomic_load(&c.stop_requested)) {
		metrics_set_ready(c.metrics, true, NULL);
		if (c.cfg.leader.enabled)
			start_leader(&c, &leader_tid);
		else {
			metrics_set_leader(c.metrics, true);
			if ((r = manager_start_workers(&c)) < 0)
				fatal("could not start the workers: %s", kc_strerror(r));
		}
		kc_log_info(&mainlog, "started");
	}

	while (sem_wait(&sigt.stop) < 0 && errno == EINTR)
		;
	pthread_join(sig_tid, NULL);
	(void)sem_destroy(&sigt.stop);
	kc_log_info(&mainlog, "shutting down");
	metrics_set_ready(c.metrics, false, "shutting down");
	/* Workers first: the Lease is released only once they are done. */
	manager_stop(&c, DRAIN_MS);
	if (c.leader != NULL) {
		kc_leader_stop(c.leader);
		pthread_join(leader_tid, NULL);
		c.leader = kc_leader_free(c.leader);
	}
	manager_free(&c);
	/* The webhook last: other replicas may still read through it. */
	certs = certs_stop(certs);
	metrics_stop(c.metrics);	/* its TLS serves the webhook's pair */
	metrics_set_webhook_ready(c.metrics, NULL, NULL);
	mauth = metrics_auth_free(mauth);
	wh = webhook_free(wh);		/* it records into the registry until here */
	c.metrics = metrics_free(c.metrics);
	kc_rest_config_free(c.rc);
	config_release(&c.cfg);
	kc_transport_global_cleanup();
	kc_clock_set(NULL);
	wall_offset = kc_clock_offset_free(wall_offset);
	kc_log_info(&mainlog, "stopped");
	return atomic_load(&c.lost) ? 1 : 0;
}

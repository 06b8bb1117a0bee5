/*
 * metrics.c: the metrics registry, the Prometheus text exposition and the
 * HTTP server for /metrics, /healthz and /readyz.
 *
 * Registry. The families are a static table (fams[] below): name, help,
 * type, label names, histogram buckets and the most label combinations
 * ("series") the family may hold. A family is an array of series under
 * its own mutex, found by a linear search over the label values (a few
 * dozen at most; an observation is a string compare or three). The last
 * slot of a full family is kept for the series whose values are all
 * "_other", which takes every new combination after that: a label fed
 * from the outside (an API error code, a session end reason) can never
 * grow the registry without bound. An allocation failure drops the
 * observation; the registry never fails its caller.
 *
 * Counters and gauges are doubles. A histogram keeps a count per bucket
 * (not cumulative: an observation lands in the first bucket whose bound
 * holds it, or in none past the last bound), the sum and the count; the
 * text format's cumulative _bucket lines and the le="+Inf" line (equal to
 * _count) are made when rendering.
 *
 * Exposition (text format 0.0.4): for each family "# HELP", "# TYPE",
 * then its samples, label values escaped (backslash, double quote, line
 * feed); numbers as the shortest of %.15g and %.17g that reads back
 * exactly; +Inf, -Inf and NaN spelled as Prometheus does.
 *
 * Server. One libwebsockets context in a thread of its own, no TLS, one
 * vhost per distinct listen address. A request is answered in full from
 * LWS_CALLBACK_HTTP: the body is rendered into the connection's kc_buf,
 * then written over as many writable callbacks as it takes (WRITE_MAX
 * bytes each). Anything but GET and HEAD gets 405 and the connection is
 * closed after the answer (its body, if any, is never read); HEAD gets
 * the headers, then the connection closes too, so lws never waits for a
 * body that will not come. Headers are bounded (HEADER_MAX) and idle
 * connections time out. metrics_stop() sets a flag, wakes the loop with
 * lws_cancel_service(), joins the thread, then destroys the context, so
 * every callback runs on the server thread.
 *
 * Secure /metrics (--metrics-secure). The metrics listener then speaks
 * TLS: its vhost's SSL_CTX is handed to opts->tls_setup (webhook.c's, so
 * the webhook's certificate machinery serves it, renewals included). Each
 * /metrics request needs "Authorization: Bearer TOKEN": no token is 401 at
 * once; a token the cache knows is answered at once; any other goes to
 * the auth thread, which asks the API server (a TokenReview, then a
 * SubjectAccessReview for GET on the non-resource URL /metrics, as
 * kube-rbac-proxy and controller-runtime's filters do) while the
 * connection waits with its input paused. The thread queues the decision
 * and wakes the loop (lws_cancel_service()); LWS_CALLBACK_EVENT_WAIT_-
 * CANCELLED, on the server thread, answers every connection still there
 * (one that closed meanwhile has its request marked gone). Decisions
 * (200, 401, 403) are cached by the token's SHA-256 for ttl_ms, at most
 * AUTH_CACHE of them; an API failure is a 500 and is not cached. The
 * health listener stays plain HTTP for the kubelet.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <unistd.h>

#include <libwebsockets.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>

#include "metrics.h"

#define LABELS_MAX	3
#define WRITE_MAX	16384
#define HEADER_MAX	4096
#define HEADER_MAX_SECURE	(METRICS_TOKEN_MAX + 4096)	/* a bearer token fits */
#define OTHER		"_other"
#define AUTH_CACHE	256		/* cached scrape decisions */
#define AUTH_QUEUE	64		/* scrapes waiting for the API server */
#define AUTH_WAIT_S	30		/* longest a scrape waits for a decision */

enum mtype {
	COUNTER,
	GAUGE,
	HISTOGRAM,
};

enum fam_id {
	F_RECONCILE_TOTAL,
	F_RECONCILE_DURATION,
	F_WQ_DEPTH,
	F_WQ_ADDS,
	F_WQ_RETRIES,
	F_WQ_QUEUE_DURATION,
	F_WQ_WORK_DURATION,
	F_WQ_UNFINISHED,
	F_WQ_LONGEST,
	F_API_TOTAL,
	F_API_DURATION,
	F_WATCH_RESTARTS,
	F_RELISTS,
	F_CACHE_OBJECTS,
	F_RUNS,
	F_SESSIONS_ENDED,
	F_SESSION_DURATION,
	F_ALL_RUNNING,
	F_PODS_CREATED,
	F_PODS_DELETED,
	F_LEADER,
	F_BUILD_INFO,
	F_WH_REVIEWS,
	F_WH_OBJECTS,
	F_WH_DURATION,
	F_WH_ADMISSION,
	F_WH_ADMISSION_DURATION,
	F_WH_CERT_EXPIRY,
	F_API_VERSION,
	F_HTTP_CONNS,
	F_HTTP_ACCEPTED,
	F_HTTP_DROPPED,
	F_COUNT,
};

struct fam_desc {
	const char	*name;
	const char	*help;
	enum mtype	 type;
	const char	*labels[LABELS_MAX + 1];	/* NULL-terminated */
	const double	*buckets;
	size_t		 nbuckets;
	size_t		 max_series;
};

static const double b_fast[] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
};
static const double b_queue[] = {
	0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60, 300, 1000,
};
static const double b_session[] = {
	60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400, 172800, 604800,
};
static const double b_running[] = {
	1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600,
};

#define BUCKETS(b)	(b), KC_ARRAY_SIZE(b)

static const struct fam_desc fams[F_COUNT] = {
	[F_RECONCILE_TOTAL] = { "trainyard_reconcile_total",
	    "Reconciles of Runs, by result.", COUNTER, { "result" }, NULL, 0, 16 },
	[F_RECONCILE_DURATION] = { "trainyard_reconcile_duration_seconds",
	    "How long reconciles of Runs took, by result.", HISTOGRAM, { "result" },
	    BUCKETS(b_fast), 16 },
	[F_WQ_DEPTH] = { "trainyard_workqueue_depth",
	    "Keys queued and waiting for a worker.", GAUGE, { NULL }, NULL, 0, 1 },
	[F_WQ_ADDS] = { "trainyard_workqueue_adds_total",
	    "Keys added to the work queue.", COUNTER, { NULL }, NULL, 0, 1 },
	[F_WQ_RETRIES] = { "trainyard_workqueue_retries_total",
	    "Keys requeued with backoff after a failed reconcile.", COUNTER, { NULL },
	    NULL, 0, 1 },
	[F_WQ_QUEUE_DURATION] = { "trainyard_workqueue_queue_duration_seconds",
	    "How long keys waited in the work queue before a worker took them.",
	    HISTOGRAM, { NULL }, BUCKETS(b_queue), 1 },
	[F_WQ_WORK_DURATION] = { "trainyard_workqueue_work_duration_seconds",
	    "How long workers held keys.", HISTOGRAM, { NULL }, BUCKETS(b_queue), 1 },
	[F_WQ_UNFINISHED] = { "trainyard_workqueue_unfinished_work_seconds",
	    "Time the keys being processed have been held so far, summed.", GAUGE,
	    { NULL }, NULL, 0, 1 },
	[F_WQ_LONGEST] = { "trainyard_workqueue_longest_running_processor_seconds",
	    "How long the oldest key being processed has been held.", GAUGE, { NULL },
	    NULL, 0, 1 },
	[F_API_TOTAL] = { "trainyard_api_requests_total",
	    "Requests to the Kubernetes API, by verb, resource and HTTP code.", COUNTER,
	    { "verb", "resource", "code" }, NULL, 0, 512 },
	[F_API_DURATION] = { "trainyard_api_request_duration_seconds",
	    "Latency of requests to the Kubernetes API (watches excluded), by verb "
	    "and resource.", HISTOGRAM, { "verb", "resource" }, BUCKETS(b_fast), 128 },
	[F_WATCH_RESTARTS] = { "trainyard_watch_restarts_total",
	    "Watches that ended and were resumed, by resource.", COUNTER, { "resource" },
	    NULL, 0, 16 },
	[F_RELISTS] = { "trainyard_relists_total",
	    "Lists made because a watch's history expired (410), by resource.", COUNTER,
	    { "resource" }, NULL, 0, 16 },
	[F_CACHE_OBJECTS] = { "trainyard_cache_objects",
	    "Objects in the informer caches, by resource.", GAUGE, { "resource" }, NULL,
	    0, 16 },
	[F_RUNS] = { "trainyard_runs", "Runs in the cache, by phase.", GAUGE,
	    { "phase" }, NULL, 0, 16 },
	[F_SESSIONS_ENDED] = { "trainyard_sessions_ended_total",
	    "Sessions that ended, by reason.", COUNTER, { "reason" }, NULL, 0, 32 },
	[F_SESSION_DURATION] = { "trainyard_session_duration_seconds",
	    "How long sessions lasted, from start to end.", HISTOGRAM, { NULL },
	    BUCKETS(b_session), 1 },
	[F_ALL_RUNNING] = { "trainyard_time_to_all_running_seconds",
	    "Time from a session's start until all its pods ran.", HISTOGRAM, { NULL },
	    BUCKETS(b_running), 1 },
	[F_PODS_CREATED] = { "trainyard_pods_created_total",
	    "Pods created by this process.", COUNTER, { NULL }, NULL, 0, 1 },
	[F_PODS_DELETED] = { "trainyard_pods_deleted_total",
	    "Pods deleted by this process.", COUNTER, { NULL }, NULL, 0, 1 },
	[F_LEADER] = { "trainyard_leader",
	    "1 while this process holds the leader Lease, else 0.", GAUGE, { NULL },
	    NULL, 0, 1 },
	[F_BUILD_INFO] = { "trainyard_build_info",
	    "Always 1; the version of trainyard-controller as a label.", GAUGE,
	    { "version" }, NULL, 0, 1 },
	[F_WH_REVIEWS] = { "trainyard_webhook_conversion_reviews_total",
	    "ConversionReviews answered, by review version (v1, v1beta1) and result "
	    "(success, failure, invalid, error).", COUNTER, { "version", "result" }, NULL,
	    0, 16 },
	[F_WH_OBJECTS] = { "trainyard_webhook_conversion_objects_total",
	    "Objects in the ConversionReviews answered, by desired apiVersion and "
	    "result.", COUNTER, { "desired_version", "result" }, NULL, 0, 16 },
	[F_WH_DURATION] = { "trainyard_webhook_conversion_duration_seconds",
	    "Time from a ConversionReview's headers to its answer, by result.", HISTOGRAM,
	    { "result" }, BUCKETS(b_fast), 8 },
	[F_WH_ADMISSION] = { "trainyard_webhook_admission_reviews_total",
	    "AdmissionReviews answered, by webhook (mutate, validate), kind and result "
	    "(allowed, patched, denied, invalid, error).", COUNTER,
	    { "webhook", "kind", "result" }, NULL, 0, 32 },
	[F_WH_ADMISSION_DURATION] = { "trainyard_webhook_admission_duration_seconds",
	    "Time from an AdmissionReview's headers to its answer, by webhook.", HISTOGRAM,
	    { "webhook" }, BUCKETS(b_fast), 4 },
	[F_WH_CERT_EXPIRY] = { "trainyard_webhook_certificate_expiry_timestamp_seconds",
	    "When the serving certificate of the webhook expires (unix seconds); 0 "
	    "until one is loaded.", GAUGE, { NULL }, NULL, 0, 1 },
	[F_API_VERSION] = { "trainyard_api_version_info",
	    "Always 1; the API group and the version of it the controller reads and "
	    "writes Runs and ResourceProfiles at (the newest the server serves).", GAUGE,
	    { "group", "version" }, NULL, 0, 1 },
	[F_HTTP_CONNS] = { "trainyard_http_connections",
	    "Connections open now, by listener (health, metrics, webhook).", GAUGE,
	    { "listener" }, NULL, 0, METRICS_GUARDS_MAX },
	[F_HTTP_ACCEPTED] = { "trainyard_http_connections_accepted_total",
	    "Connections accepted, by listener.", COUNTER, { "listener" }, NULL, 0,
	    METRICS_GUARDS_MAX },
	[F_HTTP_DROPPED] = { "trainyard_http_connections_dropped_total",
	    "Connections closed by the server before their request was answered, by "
	    "listener and reason: timeout_headers (no complete request in time), "
	    "timeout_idle (keep-alive), timeout_body, timeout_answer (a peer that does "
	    "not read), evicted (to make room under the connection cap), refused (the "
	    "cap was full of requests being answered), malformed (not HTTP or not TLS, "
	    "or hung up before a request).", COUNTER, { "listener", "reason" }, NULL, 0,
	    METRICS_GUARDS_MAX * KC_GUARD_DROP_COUNT + 1 },
};

struct series {
	char		 values[LABELS_MAX][METRICS_LABEL_MAX];
	double		 value;		/* counter, gauge */
	double		 sum;		/* histogram */
	uint64_t	 count;
	uint64_t	*buckets;	/* nbuckets, not cumulative */
};

struct family {
	const struct fam_desc	*d;
	size_t			 nlabels;
	pthread_mutex_t		 mu;
	struct series		*series;
	size_t			 n, cap;
};

/*
 * A listener: a libwebsockets context of its own (one vhost) served by a
 * thread of its own, so that no traffic of one listener can hold up
 * another's (the kubelet's probes above all).
 */
struct listener {
	struct metrics	*m;
	char		 addr[256];	/* as given, for messages */
	char		 host[256];
	int		 port;		/* asked for, then bound */
	const char	*name;		/* "metrics", "health": the metrics' label */
	bool		 serves_metrics, serves_health;
	bool		 secure;	/* TLS and scrape authentication */
	struct lws_context *ctx;
	struct lws_vhost *vh;
	struct lws_protocols protocols[2];
	struct kc_guard_lws *guard;
	pthread_t	 thread;
	bool		 started;
	atomic_bool	 stop;
};

struct guard_ref {
	char		 name[16];
	const struct kc_guard_lws *g;
};

struct auth_entry {
	unsigned char	 md[32];	/* SHA-256 of the token */
	int		 code;		/* 200, 401, 403 */
	uint64_t	 expires_ms;
	char		 why[128];
};

struct metrics_auth {
	struct kc_client	*cl;		/* the auth thread's */
	uint32_t		 ttl_ms;
	pthread_mutex_t		 mu;		/* the cache */
	struct auth_entry	 cache[AUTH_CACHE];
	size_t			 n, next;
};

/* A scrape waiting for the auth thread. */
struct auth_req {
	TAILQ_ENTRY(auth_req)	 link;
	struct lws		*wsi;		/* NULL once the connection closed */
	uint64_t		 id;
	char			*token;		/* wiped when freed */
	int			 code;
	char			 why[128];
};
TAILQ_HEAD(auth_list, auth_req);

struct metrics {
	struct family	 fam[F_COUNT];

	pthread_mutex_t	 mu;		/* ready, reason */
	bool		 ready;
	char		 reason[METRICS_REASON_MAX];
	metrics_collect_fn *collect;
	void		*collect_arg;
	pthread_mutex_t	 render_mu;	/* one collect-and-render at a time */

	struct listener	 lis[2];	/* metrics, health */
	size_t		 nlis;
	int		 health_idx;	/* lis[] index serving health, or -1 */
	int		 metrics_idx;
	metrics_ready_fn *webhook_ready;	/* under mu: /readyz/webhook */
	void		*webhook_arg;
	struct guard_ref guards[METRICS_GUARDS_MAX];	/* under mu */

	/* Secure /metrics: see the file's comment. */
	metrics_tls_fn	*tls_setup;
	void		*tls_arg;
	struct metrics_auth *auth;
	pthread_mutex_t	 aq_mu;
	pthread_cond_t	 aq_cond;
	struct auth_list todo, done;	/* under aq_mu */
	size_t		 ntodo;
	uint64_t	 next_id;	/* server thread */
	pthread_t	 auth_thread;
	bool		 auth_started;
	bool		 aq_stop;
};

/* Per connection, zeroed by lws; reused across keep-alive requests. */
struct conn {
	struct metrics_http_out out;	/* the answer */
	bool		 active;
	bool		 auth_wait;	/* waiting for the auth thread */
	uint64_t	 auth_id;
	struct auth_req	*req;		/* while auth_wait */
};

static const struct kc_log_ctx mlog = { .action = "metrics" };

/* ---- the registry ---------------------------------------------------------- */

/*
 * Copies a label value: at most METRICS_LABEL_MAX - 1 bytes of whole
 * UTF-8 sequences; invalid bytes and control characters other than line
 * feed become '?'. NULL and "" read as "".
 */
static void
label_copy(char dst[METRICS_LABEL_MAX], const char *src)
{
	size_t n = src != NULL ? strlen(src) : 0, i = 0, o = 0;

	while (i < n) {
		uint32_t cp;
		size_t len = kc_utf8_decode(src + i, n - i, &cp);

		if (len == 0 || (len == 1 && ((unsigned char)src[i] < 0x20 ||
		    src[i] == 0x7f) && src[i] != '\n')) {
			if (o + 1 >= METRICS_LABEL_MAX)
				break;
			dst[o++] = '?';
			i++;
			continue;
		}
		if (o + len >= METRICS_LABEL_MAX)
			break;
		memcpy(dst + o, src + i, len);
		o += len;
		i += len;
	}
	dst[o] = '\0';
}

/* Appends a new series with 'values' (already copied). Under f->mu. */
static struct series *
series_add(struct family *f, char values[LABELS_MAX][METRICS_LABEL_MAX])
{
	struct series *s;

	if (f->n == f->cap) {
		size_t cap = f->cap != 0 ? f->cap * 2 : 4;

		if (cap > f->d->max_series)
			cap = f->d->max_series;
		if ((s = kc_reallocarray(f->series, cap, sizeof(*s))) == NULL)
			return NULL;
		f->series = s;
		f->cap = cap;
	}
	s = &f->series[f->n];
	memset(s, 0, sizeof(*s));
	memcpy(s->values, values, sizeof(s->values));
	if (f->d->type == HISTOGRAM &&
	    (s->buckets = kc_calloc(f->d->nbuckets, sizeof(*s->buckets))) == NULL)
		return NULL;
	f->n++;
	return s;
}

/*
 * The series of 'labels' (f->nlabels of them), made if needed; past the
 * family's bound, the "_other" one. NULL on allocation failure. Under
 * f->mu.
 */
static struct series *
series_get(struct family *f, const char *const *labels)
{
	char values[LABELS_MAX][METRICS_LABEL_MAX];
	size_t i, j;

	memset(values, 0, sizeof(values));
	for (j = 0; j < f->nlabels; j++)
		label_copy(values[j], labels[j]);
	for (i = 0; i < f->n; i++) {
		for (j = 0; j < f->nlabels; j++)
			if (strcmp(f->series[i].values[j], values[j]) != 0)
				break;
		if (j == f->nlabels)
			return &f->series[i];
	}
	if (f->n + 1 < f->d->max_series || f->d->max_series == 1)
		return f->n < f->d->max_series ? series_add(f, values) : NULL;
	for (j = 0; j < f->nlabels; j++)
		(void)kc_strlcpy(values[j], OTHER, METRICS_LABEL_MAX);
	for (i = 0; i < f->n; i++) {
		for (j = 0; j < f->nlabels; j++)
			if (strcmp(f->series[i].values[j], OTHER) != 0)
				break;
		if (j == f->nlabels)
			return &f->series[i];
	}
	return f->n < f->d->max_series ? series_add(f, values) : NULL;
}

enum op {
	OP_ADD,
	OP_SET,
	OP_OBSERVE,
};

static void
record(struct metrics *m, enum fam_id id, const char *const *labels, enum op op,
    double v)
{
	struct family *f = &m->fam[id];
	struct series *s;

	pthread_mutex_lock(&f->mu);
	if ((s = series_get(f, labels)) != NULL) {
		switch (op) {
		case OP_ADD:
			s->value += v;
			break;
		case OP_SET:
			s->value = v;
			break;
		case OP_OBSERVE:
			for (size_t i = 0; i < f->d->nbuckets; i++)
				if (v <= f->d->buckets[i]) {
					s->buckets[i]++;
					break;
				}
			s->count++;
			s->sum += v;
			break;
		}
	}
	pthread_mutex_unlock(&f->mu);
}

#define L(...)	((const char *const []){ __VA_ARGS__ })
#define NOL	L(NULL)

int
metrics_new(const char *version, struct metrics **ret)
{
	struct metrics *m;
	size_t i, inited = 0;

	if ((m = kc_calloc(1, sizeof(*m))) == NULL)
		return -ENOMEM;
	for (i = 0; i < F_COUNT; i++) {
		struct family *f = &m->fam[i];

		f->d = &fams[i];
		while (f->nlabels < LABELS_MAX && f->d->labels[f->nlabels] != NULL)
			f->nlabels++;
		if (pthread_mutex_init(&f->mu, NULL) != 0)
			goto fail;
		inited++;
	}
	if (pthread_mutex_init(&m->mu, NULL) != 0)
		goto fail;
	if (pthread_mutex_init(&m->render_mu, NULL) != 0) {
		(void)pthread_mutex_destroy(&m->mu);
		goto fail;
	}
	if (pthread_mutex_init(&m->aq_mu, NULL) != 0) {
		(void)pthread_mutex_destroy(&m->mu);
		(void)pthread_mutex_destroy(&m->render_mu);
		goto fail;
	}
	if (pthread_cond_init(&m->aq_cond, NULL) != 0) {
		(void)pthread_mutex_destroy(&m->mu);
		(void)pthread_mutex_destroy(&m->render_mu);
		(void)pthread_mutex_destroy(&m->aq_mu);
		goto fail;
	}
	TAILQ_INIT(&m->todo);
	TAILQ_INIT(&m->done);
	(void)kc_strlcpy(m->reason, "starting", sizeof(m->reason));
	m->health_idx = m->metrics_idx = -1;

	/* The unlabelled series exist from the start, so they read 0. */
	for (i = 0; i < F_COUNT; i++) {
		struct family *f = &m->fam[i];

		if (f->nlabels == 0 && series_get(f, NOL) == NULL)
			goto fail_all;
	}
	if (series_get(&m->fam[F_BUILD_INFO], L(version != NULL ? version : "unknown"))
	    == NULL)
		goto fail_all;
	/* The webhook's usual series read 0 before the first review. */
	if (series_get(&m->fam[F_WH_REVIEWS], L("v1", "success")) == NULL ||
	    series_get(&m->fam[F_WH_OBJECTS], L("trainyard.dev/v1beta1", "success")) == NULL ||
	    series_get(&m->fam[F_WH_DURATION], L("success")) == NULL ||
	    series_get(&m->fam[F_WH_ADMISSION], L("mutate", "Run", "allowed")) == NULL ||
	    series_get(&m->fam[F_WH_ADMISSION_DURATION], L("mutate")) == NULL)
		goto fail_all;
	m->fam[F_BUILD_INFO].series[0].value = 1;
	*ret = m;
	return 0;

fail_all:
	metrics_free(m);
	return -ENOMEM;
fail:
	for (i = 0; i < inited; i++)
		(void)pthread_mutex_destroy(&m->fam[i].mu);
	kc_free(m);
	return -ENOMEM;
}

struct metrics *
metrics_free(struct metrics *m)
{
	if (m == NULL)
		return NULL;
	metrics_stop(m);
	for (size_t i = 0; i < F_COUNT; i++) {
		struct family *f = &m->fam[i];

		for (size_t j = 0; j < f->n; j++)
			kc_free(f->series[j].buckets);
		kc_free(f->series);
		(void)pthread_mutex_destroy(&f->mu);
	}
	(void)pthread_mutex_destroy(&m->mu);
	(void)pthread_mutex_destroy(&m->render_mu);
	(void)pthread_mutex_destroy(&m->aq_mu);
	(void)pthread_cond_destroy(&m->aq_cond);
	return kc_free(m);
}

void
metrics_set_collect(struct metrics *m, metrics_collect_fn *fn, void *arg)
{
	/* render_mu first: no collect is running once this returns. */
	pthread_mutex_lock(&m->render_mu);
	pthread_mutex_lock(&m->mu);
	m->collect = fn;
	m->collect_arg = arg;
	pthread_mutex_unlock(&m->mu);
	pthread_mutex_unlock(&m->render_mu);
}

void
metrics_set_ready(struct metrics *m, bool ready, const char *reason)
{
	pthread_mutex_lock(&m->mu);
	m->ready = ready;
	(void)kc_strlcpy(m->reason, reason != NULL ? reason : "starting",
	    sizeof(m->reason));
	pthread_mutex_unlock(&m->mu);
}

void
metrics_set_api_version(struct metrics *m, const char *group, const char *version)
{
	struct family *f = &m->fam[F_API_VERSION];
	struct series *s;

	pthread_mutex_lock(&f->mu);
	f->n = 0;		/* one series: the version followed now */
	if ((s = series_get(f, L(group, version))) != NULL)
		s->value = 1;
	pthread_mutex_unlock(&f->mu);
}

void
metrics_set_leader(struct metrics *m, bool leader)
{
	record(m, F_LEADER, NOL, OP_SET, leader ? 1 : 0);
}

void
metrics_client_observe(void *arg, const struct kc_request_info *info)
{
	struct metrics *m = arg;
	const char *res = info->res != NULL && info->res->resource != NULL ?
	    info->res->resource : "none";
	const char *verb = info->verb != NULL ? info->verb : "unknown";
	char code[16];

	if (info->http_code > 0 && info->http_code < 1000)
		(void)snprintf(code, sizeof(code), "%d", info->http_code);
	else
		(void)kc_strlcpy(code, "<error>", sizeof(code));
	record(m, F_API_TOTAL, L(verb, res, code), OP_ADD, 1);
	if (strcmp(verb, "watch") != 0)
		record(m, F_API_DURATION, L(verb, res), OP_OBSERVE,
		    (double)info->latency_ms / 1000.0);
}

void
metrics_webhook_review(struct metrics *m, const char *version, const char *result,
    const char *desired, size_t objects, double seconds)
{
	record(m, F_WH_REVIEWS, L(version, result), OP_ADD, 1);
	if (objects > 0)
		record(m, F_WH_OBJECTS, L(desired, result), OP_ADD, (double)objects);
	record(m, F_WH_DURATION, L(result), OP_OBSERVE, seconds);
}

void
metrics_webhook_admission(struct metrics *m, const char *webhook, const char *kind,
    const char *result, double seconds)
{
	record(m, F_WH_ADMISSION, L(webhook, kind, result), OP_ADD, 1);
	record(m, F_WH_ADMISSION_DURATION, L(webhook), OP_OBSERVE, seconds);
}

void
metrics_webhook_cert_expiry(struct metrics *m, double unix_s)
{
	record(m, F_WH_CERT_EXPIRY, NOL, OP_SET, unix_s);
}

void
metrics_workqueue_observe(void *arg, enum kc_workqueue_metric metric, uint64_t ms)
{
	struct metrics *m = arg;

	if (metric == KC_WORKQUEUE_LATENCY)
		record(m, F_WQ_QUEUE_DURATION, NOL, OP_OBSERVE, (double)ms / 1000.0);
	else if (metric == KC_WORKQUEUE_WORK)
		record(m, F_WQ_WORK_DURATION, NOL, OP_OBSERVE, (double)ms / 1000.0);
}

void
metrics_reconcile(struct metrics *m, const char *result, double seconds)
{
	record(m, F_RECONCILE_TOTAL, L(result), OP_ADD, 1);
	record(m, F_RECONCILE_DURATION, L(result), OP_OBSERVE, seconds);
}

void
metrics_session_ended(struct metrics *m, const char *reason, double duration_s)
{
	record(m, F_SESSIONS_ENDED, L(reason), OP_ADD, 1);
	record(m, F_SESSION_DURATION, NOL, OP_OBSERVE, duration_s);
}

void
metrics_all_running(struct metrics *m, double seconds)
{
	record(m, F_ALL_RUNNING, NOL, OP_OBSERVE, seconds);
}

void
metrics_pods_created(struct metrics *m, unsigned n)
{
	record(m, F_PODS_CREATED, NOL, OP_ADD, n);
}

void
metrics_pods_deleted(struct metrics *m, unsigned n)
{
	record(m, F_PODS_DELETED, NOL, OP_ADD, n);
}

void
metrics_collect_workqueue(struct metrics *m, const struct kc_workqueue_stats *s)
{
	record(m, F_WQ_DEPTH, NOL, OP_SET, (double)s->depth);
	record(m, F_WQ_ADDS, NOL, OP_SET, (double)s->adds);
	record(m, F_WQ_RETRIES, NOL, OP_SET, (double)s->retries);
	record(m, F_WQ_UNFINISHED, NOL, OP_SET, (double)s->unfinished_work_ms / 1000.0);
	record(m, F_WQ_LONGEST, NOL, OP_SET, (double)s->longest_running_ms / 1000.0);
}

void
metrics_collect_informer(struct metrics *m, const char *resource,
    const struct kc_informer_stats *s)
{
	record(m, F_WATCH_RESTARTS, L(resource), OP_SET, (double)s->watch_restarts);
	record(m, F_RELISTS, L(resource), OP_SET, (double)s->relists);
	record(m, F_CACHE_OBJECTS, L(resource), OP_SET, (double)s->items);
}

void
metrics_set_runs(struct metrics *m, const char *const *phases, const uint64_t *counts,
    size_t n)
{
	struct family *f = &m->fam[F_RUNS];

	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < f->n; i++)
		f->series[i].value = 0;
	for (size_t i = 0; i < n; i++) {
		struct series *s = series_get(f, L(phases[i]));

		if (s != NULL)
			s->value += (double)counts[i];
	}
	pthread_mutex_unlock(&f->mu);
}

/* ---- the exposition ---------------------------------------------------------- */

static void
fmt_number(double v, char buf[40])
{
	if (isnan(v)) {
		(void)kc_strlcpy(buf, "NaN", 40);
		return;
	}
	if (isinf(v)) {
		(void)kc_strlcpy(buf, v > 0 ? "+Inf" : "-Inf", 40);
		return;
	}
	(void)snprintf(buf, 40, "%.15g", v);
	if (strtod(buf, NULL) != v)
		(void)snprintf(buf, 40, "%.17g", v);
}

static int
put_escaped(struct kc_buf *b, const char *s)
{
	int r = 0;

	for (; *s != '\0' && r == 0; s++) {
		if (*s == '\\')
			r = kc_buf_puts(b, "\\\\");
		else if (*s == '"')
			r = kc_buf_puts(b, "\\\"");
		else if (*s == '\n')
			r = kc_buf_puts(b, "\\n");
		else
			r = kc_buf_putc(b, *s);
	}
	return r;
}

/*
 * name[suffix]{l1="v1",...[,le="LE"]} VALUE\n. 'le' NULL for none.
 */
static int
put_sample(struct kc_buf *b, const struct family *f, const struct series *s,
    const char *suffix, const char *le, double v)
{
	char num[40];
	bool any = f->nlabels > 0 || le != NULL;
	int r;

	if ((r = kc_buf_printf(b, "%s%s", f->d->name, suffix)) < 0)
		return r;
	if (any && (r = kc_buf_putc(b, '{')) < 0)
		return r;
	for (size_t j = 0; j < f->nlabels; j++)
		if ((r = kc_buf_printf(b, "%s%s=\"", j > 0 ? "," : "", f->d->labels[j])) < 0 ||
		    (r = put_escaped(b, s->values[j])) < 0 || (r = kc_buf_putc(b, '"')) < 0)
			return r;
	if (le != NULL && (r = kc_buf_printf(b, "%sle=\"%s\"", f->nlabels > 0 ? "," : "",
	    le)) < 0)
		return r;
	if (any && (r = kc_buf_putc(b, '}')) < 0)
		return r;
	fmt_number(v, num);
	return kc_buf_printf(b, " %s\n", num);
}

static int
render_family(struct kc_buf *b, struct family *f)
{
	static const char *const types[] = { "counter", "gauge", "histogram" };
	char le[40];
	int r;

	if ((r = kc_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", f->d->name, f->d->help,
	    f->d->name, types[f->d->type])) < 0)
		return r;
	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < f->n && r == 0; i++) {
		const struct series *s = &f->series[i];
		uint64_t cum = 0;

		if (f->d->type != HISTOGRAM) {
			r = put_sample(b, f, s, "", NULL, s->value);
			continue;
		}
		for (size_t k = 0; k < f->d->nbuckets && r == 0; k++) {
			cum += s->buckets[k];
			fmt_number(f->d->buckets[k], le);
			r = put_sample(b, f, s, "_bucket", le, (double)cum);
		}
		if (r == 0)
			r = put_sample(b, f, s, "_bucket", "+Inf", (double)s->count);
		if (r == 0)
			r = put_sample(b, f, s, "_sum", NULL, s->sum);
		if (r == 0)
			r = put_sample(b, f, s, "_count", NULL, (double)s->count);
	}
	pthread_mutex_unlock(&f->mu);
	return r;
}

/* Resident set size from /proc/self/statm (pages), in bytes; -1 if unknown. */
static double
resident_bytes(void)
{
	char *text = NULL;
	struct kc_str s, field;
	uint64_t pages;
	long psz = sysconf(_SC_PAGESIZE);
	double v = -1;

	if (kc_read_file("/proc/self/statm", 4096, &text, NULL) < 0)
		return -1;
	s = kc_str_trim(kc_str_from(text));
	if (kc_str_cut(&s, ' ', &field) && kc_str_cut(&s, ' ', &field) &&
	    kc_str_to_u64(field, &pages) == 0 && psz > 0)
		v = (double)pages * (double)psz;
	kc_free(text);
	return v;
}

static int
render_process(struct kc_buf *b)
{
	struct rusage ru;
	char num[40];
	double rss = resident_bytes();
	int r;

	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		fmt_number((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
		    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6, num);
		if ((r = kc_buf_printf(b, "# HELP process_cpu_seconds_total Total user and "
		    "system CPU time spent in seconds.\n# TYPE process_cpu_seconds_total "
		    "counter\nprocess_cpu_seconds_total %s\n", num)) < 0)
			return r;
	}
	if (rss >= 0) {
		fmt_number(rss, num);
		if ((r = kc_buf_printf(b, "# HELP process_resident_memory_bytes Resident "
		    "memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\n"
		    "process_resident_memory_bytes %s\n", num)) < 0)
			return r;
	}
	return 0;
}

static void	collect_guards(struct metrics *);

int
metrics_render(struct metrics *m, struct kc_buf *out)
{
	metrics_collect_fn *fn;
	void *arg;
	int r = 0;

	pthread_mutex_lock(&m->render_mu);
	pthread_mutex_lock(&m->mu);
	fn = m->collect;
	arg = m->collect_arg;
	pthread_mutex_unlock(&m->mu);
	if (fn != NULL)
		fn(arg, m);
	collect_guards(m);
	for (size_t i = 0; i < F_COUNT && r == 0; i++)
		r = render_family(out, &m->fam[i]);
	if (r == 0)
		r = render_process(out);
	pthread_mutex_unlock(&m->render_mu);
	return r;
}

/* ---- scrape authentication and authorization ------------------------------ */

static const struct kc_resource res_tokenreviews = {
	.group = "authentication.k8s.io", .version = "v1", .resource = "tokenreviews",
	.kind = "TokenReview",
};
static const struct kc_resource res_sars = {
	.group = "authorization.k8s.io", .version = "v1",
	.resource = "subjectaccessreviews", .kind = "SubjectAccessReview",
};

int
metrics_auth_new(const struct metrics_auth_opts *o, struct metrics_auth **ret,
    struct kc_status *st)
{
	struct metrics_auth *a;
	int r;

	if ((a = kc_calloc(1, sizeof(*a))) == NULL)
		return -ENOMEM;
	a->ttl_ms = o->ttl_ms != 0 ? o->ttl_ms : 10000;
	if (pthread_mutex_init(&a->mu, NULL) != 0) {
		kc_free(a);
		return -ENOMEM;
	}
	if ((r = kc_client_new(&(struct kc_client_opts){ .rc = o->rc, .ops = o->ops,
	    .timeout_ms = 5000, .max_retries = 1,
	    .user_agent = "trainyard-controller/" KC_VERSION " metrics-auth" },
	    &a->cl, st)) < 0) {
		(void)pthread_mutex_destroy(&a->mu);
		kc_free(a);
		return r;
	}
	*ret = a;
	return 0;
}

struct metrics_auth *
metrics_auth_free(struct metrics_auth *a)
{
	if (a == NULL)
		return NULL;
	kc_client_free(a->cl);
	OPENSSL_cleanse(a->cache, sizeof(a->cache));
	(void)pthread_mutex_destroy(&a->mu);
	return kc_free(a);
}

static int
token_digest(const char *token, unsigned char md[32])
{
	unsigned int n = 0;

	return EVP_Digest(token, strlen(token), md, &n, EVP_sha256(), NULL) == 1 &&
	    n == 32 ? 0 : -ENOMEM;
}

int
metrics_auth_cached(struct metrics_auth *a, const char *token, char *why, size_t size)
{
	unsigned char md[32];
	uint64_t now = kc_clock_now_ms();
	int code = 0;

	if (token_digest(token, md) < 0)
		return 0;
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->n; i++)
		if (a->cache[i].expires_ms > now && memcmp(a->cache[i].md, md, 32) == 0) {
			code = a->cache[i].code;
			(void)kc_strlcpy(why, a->cache[i].why, size);
			break;
		}
	pthread_mutex_unlock(&a->mu);
	return code;
}

static void
auth_remember(struct metrics_auth *a, const unsigned char md[32], int code,
    const char *why)
{
	uint64_t now = kc_clock_now_ms();
	struct auth_entry *e = NULL;

	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->n && e == NULL; i++)
		if (memcmp(a->cache[i].md, md, 32) == 0 || a->cache[i].expires_ms <= now)
			e = &a->cache[i];
	if (e == NULL && a->n < AUTH_CACHE)
		e = &a->cache[a->n++];
	if (e == NULL) {
		e = &a->cache[a->next];
		a->next = (a->next + 1) % AUTH_CACHE;
	}
	memcpy(e->md, md, 32);
	e->code = code;
	e->expires_ms = now + a->ttl_ms;
	(void)kc_strlcpy(e->why, why, sizeof(e->why));
	pthread_mutex_unlock(&a->mu);
}

/* The TokenReview and SubjectAccessReview for one token. */
static int
auth_ask(struct metrics_auth *a, const char *token, char *why, size_t size)
{
	_cleanup_(kc_json_putp) struct json_object *tr = NULL, *trr = NULL;
	_cleanup_(kc_json_putp) struct json_object *sar = NULL, *sarr = NULL;
	struct json_object *spec, *user, *v, *nra;
	struct kc_status st = { 0 };
	const char *name;
	int r;

	if ((tr = json_object_new_object()) == NULL ||
	    kc_json_set_str(tr, "apiVersion", "authentication.k8s.io/v1") < 0 ||
	    kc_json_set_str(tr, "kind", "TokenReview") < 0 ||
	    (spec = kc_json_ensure_obj(tr, "spec")) == NULL ||
	    kc_json_set_str(spec, "token", token) < 0)
		return -ENOMEM;
	r = kc_client_create(a->cl, &(struct kc_create_opts){ .res = &res_tokenreviews }, tr,
	    &trr, &st);
	/* The token is in the request tree: wipe it there too. */
	if ((v = kc_json_get(tr, "spec", "token")) != NULL)
		OPENSSL_cleanse((char *)(uintptr_t)json_object_get_string(v),
		    (size_t)json_object_get_string_len(v));
	if (r < 0) {
		(void)snprintf(why, size, "TokenReview: %s", st.message);
		return 500;
	}
	if (!kc_json_bool(trr, false, "status", "authenticated") ||
	    (user = kc_json_get(trr, "status", "user")) == NULL ||
	    (name = kc_json_str(user, "username")) == NULL) {
		(void)kc_strlcpy(why, "Unauthorized", size);
		return 401;
	}
	if ((sar = json_object_new_object()) == NULL ||
	    kc_json_set_str(sar, "apiVersion", "authorization.k8s.io/v1") < 0 ||
	    kc_json_set_str(sar, "kind", "SubjectAccessReview") < 0 ||
	    (spec = kc_json_ensure_obj(sar, "spec")) == NULL ||
	    kc_json_set_str(spec, "user", name) < 0)
		return -ENOMEM;
	if ((kc_json_str(user, "uid") != NULL &&
	    kc_json_set_str(spec, "uid", kc_json_str(user, "uid")) < 0) ||
	    ((v = kc_json_get(user, "groups")) != NULL &&
	    kc_json_put(spec, "groups", kc_json_copy(v)) < 0) ||
	    ((v = kc_json_get(user, "extra")) != NULL &&
	    kc_json_put(spec, "extra", kc_json_copy(v)) < 0) ||
	    (nra = kc_json_ensure_obj(spec, "nonResourceAttributes")) == NULL ||
	    kc_json_set_str(nra, "path", "/metrics") < 0 ||
	    kc_json_set_str(nra, "verb", "get") < 0)
		return -ENOMEM;
	if ((r = kc_client_create(a->cl, &(struct kc_create_opts){ .res = &res_sars }, sar,
	    &sarr, &st)) < 0) {
		(void)snprintf(why, size, "SubjectAccessReview: %s", st.message);
		return 500;
	}
	if (!kc_json_bool(sarr, false, "status", "allowed")) {
		(void)snprintf(why, size, "Forbidden (user=%s, verb=get, path=/metrics)", name);
		return 403;
	}
	why[0] = '\0';
	return 200;
}

int
metrics_auth_check(struct metrics_auth *a, const char *token, char *why, size_t size)
{
	unsigned char md[32];
	int code;

	if ((code = metrics_auth_cached(a, token, why, size)) != 0)
		return code;
	if (token_digest(token, md) < 0)
		return -ENOMEM;
	if ((code = auth_ask(a, token, why, size)) < 0)
		return code;
	if (code != 500)
		auth_remember(a, md, code, why);
	return code;
}

static void
auth_req_free(struct auth_req *q)
{
	if (q == NULL)
		return;
	if (q->token != NULL)
		kc_free_secret(q->token);
	kc_free(q);
}

/* The auth thread: decides queued scrapes, one at a time. */
static void *
auth_main(void *arg)
{
	struct metrics *m = arg;
	struct auth_req *q;

	pthread_mutex_lock(&m->aq_mu);
	for (;;) {
		while (!m->aq_stop && TAILQ_EMPTY(&m->todo))
			pthread_cond_wait(&m->aq_cond, &m->aq_mu);
		if (m->aq_stop)
			break;
		bool alive;

		q = TAILQ_FIRST(&m->todo);
		TAILQ_REMOVE(&m->todo, q, link);
		m->ntodo--;
		alive = q->wsi != NULL;
		pthread_mutex_unlock(&m->aq_mu);
		q->code = alive ? metrics_auth_check(m->auth, q->token, q->why,
		    sizeof(q->why)) : 0;
		if (q->code < 0) {
			(void)kc_strlcpy(q->why, kc_strerror(q->code), sizeof(q->why));
			q->code = 500;
		}
		kc_free_secret(q->token);
		q->token = NULL;
		pthread_mutex_lock(&m->aq_mu);
		TAILQ_INSERT_TAIL(&m->done, q, link);
		pthread_mutex_unlock(&m->aq_mu);
		lws_cancel_service(m->lis[m->metrics_idx].ctx);
		pthread_mutex_lock(&m->aq_mu);
	}
	pthread_mutex_unlock(&m->aq_mu);
	return NULL;
}

/* ---- the server ------------------------------------------------------------ */

int
metrics_parse_addr(const char *addr, char *host, size_t size, int *ret_port)
{
	const char *colon, *h;
	size_t hlen;
	uint32_t port;

	if (addr == NULL || *addr == '\0' || strcmp(addr, "0") == 0) {
		if (size > 0)
			host[0] = '\0';
		*ret_port = -1;
		return 0;
	}
	if (addr[0] == '[') {
		const char *end = strchr(addr, ']');

		if (end == NULL || end[1] != ':')
			return -EINVAL;
		h = addr + 1;
		hlen = (size_t)(end - h);
		colon = end + 1;
		if (hlen == 0)
			return -EINVAL;
	} else {
		if ((colon = strrchr(addr, ':')) == NULL)
			return -EINVAL;
		h = addr;
		hlen = (size_t)(colon - addr);
		if (memchr(h, ':', hlen) != NULL)
			return -EINVAL;		/* IPv6 needs brackets */
	}
	if (kc_parse_u32(colon + 1, &port) < 0 || port > 65535 || hlen >= size)
		return -EINVAL;
	for (size_t i = 0; i < hlen; i++)
		if ((unsigned char)h[i] <= 0x20 || h[i] == '/' || (unsigned char)h[i] >= 0x7f)
			return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	*ret_port = (int)port;
	return 0;
}

static void
reply(struct conn *c, int status, const char *ctype, const char *text)
{
	c->out.status = status;
	c->out.ctype = ctype;
	if (kc_buf_puts(&c->out.body, text) < 0)
		c->out.close_after = true;	/* an empty answer, then close */
}

static void
handle(struct listener *l, struct conn *c, int method, const char *path)
{
	struct metrics *m = l->m;
	char msg[METRICS_REASON_MAX + 32], why[METRICS_REASON_MAX];
	metrics_ready_fn *fn;
	void *arg;
	int r;

	if (method != LWSHUMETH_GET && method != LWSHUMETH_HEAD) {
		c->out.allow = "GET, HEAD";
		c->out.close_after = true;
		reply(c, 405, "text/plain; charset=utf-8", "method not allowed\n");
		return;
	}
	if (l->serves_metrics && strcmp(path, "/metrics") == 0) {
		if ((r = metrics_render(m, &c->out.body)) < 0) {
			kc_log_debug(&mlog, "render: %s", kc_strerror(r));
			reply(c, 500, "text/plain; charset=utf-8", "metrics unavailable\n");
			return;
		}
		c->out.status = 200;
		c->out.ctype = "text/plain; version=0.0.4; charset=utf-8";
	} else if (l->serves_health && strcmp(path, "/healthz") == 0) {
		reply(c, 200, "text/plain; charset=utf-8", "ok\n");
	} else if (l->serves_health && strcmp(path, "/readyz/webhook") == 0) {
		pthread_mutex_lock(&m->mu);
		fn = m->webhook_ready;
		arg = m->webhook_arg;
		pthread_mutex_unlock(&m->mu);
		if (fn == NULL) {
			reply(c, 404, "text/plain; charset=utf-8", "404 page not found\n");
		} else if (fn(arg, why, sizeof(why))) {
			reply(c, 200, "text/plain; charset=utf-8", "ok\n");
		} else {
			(void)snprintf(msg, sizeof(msg), "not ready: %s\n", why);
			reply(c, 500, "text/plain; charset=utf-8", msg);
		}
	} else if (l->serves_health && strcmp(path, "/readyz") == 0) {
		pthread_mutex_lock(&m->mu);
		if (m->ready)
			(void)kc_strlcpy(msg, "ok\n", sizeof(msg));
		else
			(void)snprintf(msg, sizeof(msg), "not ready: %s\n", m->reason);
		r = m->ready ? 200 : 500;
		pthread_mutex_unlock(&m->mu);
		reply(c, r, "text/plain; charset=utf-8", msg);
	} else {
		reply(c, 404, "text/plain; charset=utf-8", "404 page not found\n");
	}
}

/*
 * A /metrics request on the secure listener: 1 when answered or queued
 * (the caller then does nothing more), 0 when allowed at once.
 */
static int
auth_begin(struct metrics *m, struct conn *c, struct lws *wsi)
{
	char hdr[METRICS_TOKEN_MAX + 16], why[128];
	const char *token;
	struct auth_req *q = NULL;
	int code, n;

	n = lws_hdr_copy(wsi, hdr, sizeof(hdr), WSI_TOKEN_HTTP_AUTHORIZATION);
	if (n <= 7 || strncasecmp(hdr, "Bearer ", 7) != 0) {
		OPENSSL_cleanse(hdr, sizeof(hdr));
		reply(c, 401, "text/plain; charset=utf-8", "Unauthorized\n");
		return 1;
	}
	token = hdr + 7;
	while (*token == ' ')
		token++;
	if (*token == '\0') {
		reply(c, 401, "text/plain; charset=utf-8", "Unauthorized\n");
		return 1;
	}
	if ((code = metrics_auth_cached(m->auth, token, why, sizeof(why))) != 0) {
		OPENSSL_cleanse(hdr, sizeof(hdr));
		if (code == 200)
			return 0;
		(void)kc_strlcat(why, "\n", sizeof(why));
		reply(c, code, "text/plain; charset=utf-8", why);
		return 1;
	}
	pthread_mutex_lock(&m->aq_mu);
	if (m->ntodo >= AUTH_QUEUE || (q = kc_calloc(1, sizeof(*q))) == NULL ||
	    (q->token = kc_strdup(token)) == NULL) {
		pthread_mutex_unlock(&m->aq_mu);
		OPENSSL_cleanse(hdr, sizeof(hdr));
		auth_req_free(q);
		reply(c, 503, "text/plain; charset=utf-8", "too many scrapes waiting\n");
		return 1;
	}
	OPENSSL_cleanse(hdr, sizeof(hdr));
	q->wsi = wsi;
	q->id = ++m->next_id;
	TAILQ_INSERT_TAIL(&m->todo, q, link);
	m->ntodo++;
	pthread_cond_signal(&m->aq_cond);
	pthread_mutex_unlock(&m->aq_mu);
	c->auth_wait = true;
	c->auth_id = q->id;
	c->req = q;
	(void)lws_rx_flow_control(wsi, 0);
	lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, AUTH_WAIT_S);
	return 1;
}

/* On the server thread: answers the scrapes the auth thread decided. */
static void
auth_finish(struct metrics *m)
{
	struct auth_list done = TAILQ_HEAD_INITIALIZER(done);
	struct auth_req *q;

	pthread_mutex_lock(&m->aq_mu);
	TAILQ_CONCAT(&done, &m->done, link);
	pthread_mutex_unlock(&m->aq_mu);
	while ((q = TAILQ_FIRST(&done)) != NULL) {
		struct conn *c = q->wsi != NULL ? lws_wsi_user(q->wsi) : NULL;
		char msg[160];

		TAILQ_REMOVE(&done, q, link);
		if (c != NULL && c->auth_wait && c->req == q && c->auth_id == q->id) {
			c->auth_wait = false;
			c->req = NULL;
			if (q->code == 200) {
				handle(&m->lis[m->metrics_idx], c,
				    c->out.head ? LWSHUMETH_HEAD : LWSHUMETH_GET, "/metrics");
			} else {
				if (q->code == 500)
					kc_log_warn(&mlog, "scrape refused: %s", q->why);
				(void)snprintf(msg, sizeof(msg), "%s\n", q->code == 500 ?
				    "cannot check the token now" : q->why);
				reply(c, q->code, "text/plain; charset=utf-8", msg);
			}
			(void)lws_rx_flow_control(q->wsi, 1);
			lws_set_timeout(q->wsi, NO_PENDING_TIMEOUT, 0);
			lws_callback_on_writable(q->wsi);
		}
		auth_req_free(q);
	}
}

/* The connection of a waiting scrape closes: its request is orphaned. */
static void
auth_abandon(struct metrics *m, struct conn *c)
{
	if (!c->auth_wait || c->req == NULL)
		return;
	pthread_mutex_lock(&m->aq_mu);
	c->req->wsi = NULL;
	pthread_mutex_unlock(&m->aq_mu);
	c->req = NULL;
	c->auth_wait = false;
}

static int
write_headers(struct lws *wsi, struct metrics_http_out *o)
{
	unsigned char buf[LWS_PRE + 1024];
	unsigned char *start = buf + LWS_PRE, *p = start, *end = buf + sizeof(buf) - 1;
	int n;

	if (lws_add_http_header_status(wsi, (unsigned)o->status, &p, end) ||
	    lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE,
	    (const unsigned char *)o->ctype, (int)strlen(o->ctype), &p, end) ||
	    lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CACHE_CONTROL,
	    (const unsigned char *)"no-store", 8, &p, end) ||
	    (o->allow != NULL && lws_add_http_header_by_name(wsi,
	    (const unsigned char *)"allow:", (const unsigned char *)o->allow,
	    (int)strlen(o->allow), &p, end)) ||
	    (o->close_after && lws_add_http_header_by_token(wsi, WSI_TOKEN_CONNECTION,
	    (const unsigned char *)"close", 5, &p, end)) ||
	    lws_add_http_header_content_length(wsi, o->body.len, &p, end) ||
	    lws_finalize_http_header(wsi, &p, end))
		return -1;
	n = lws_ptr_diff(p, start);
	if (lws_write(wsi, start, (size_t)n, LWS_WRITE_HTTP_HEADERS) != n)
		return -1;
	o->headers_sent = true;
	return 0;
}

int
metrics_http_write(struct lws *wsi, struct metrics_http_out *o)
{
	unsigned char buf[LWS_PRE + WRITE_MAX];
	size_t n;
	bool last;

	if (!o->headers_sent) {
		if (write_headers(wsi, o) < 0)
			return -1;
		if (!o->head && o->body.len > 0) {
			lws_callback_on_writable(wsi);
			return 1;
		}
		return 0;
	}
	n = KC_MIN(o->body.len - o->off, (size_t)WRITE_MAX);
	last = o->off + n == o->body.len;
	memcpy(buf + LWS_PRE, o->body.data + o->off, n);
	if (lws_write(wsi, buf + LWS_PRE, n, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) !=
	    (int)n)
		return -1;
	o->off += n;
	if (!last) {
		lws_callback_on_writable(wsi);
		return 1;
	}
	return 0;
}

static void
conn_end(struct conn *c)
{
	kc_buf_free(&c->out.body);
	c->active = false;
}

static int
writable(struct listener *l, struct lws *wsi, struct conn *c)
{
	int r;

	if (!c->active || c->auth_wait)
		return 0;
	if ((r = metrics_http_write(wsi, &c->out)) != 0)
		return r < 0 ? -1 : 0;
	conn_end(c);
	if (c->out.close_after || c->out.head)
		return -1;
	kc_guard_lws_phase(l->guard, wsi, KC_GUARD_REQUEST);
	return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static int
callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
    size_t len)
{
	struct listener *l = lws_context_user(lws_get_context(wsi));
	struct metrics *m = l->m;
	struct conn *c = user;
	char *uri = NULL, path[256];
	int method, ulen = 0;

	if (kc_guard_lws_event(l->guard, wsi, (int)reason) < 0)
		return -1;
	switch (reason) {
	case LWS_CALLBACK_OPENSSL_LOAD_EXTRA_SERVER_VERIFY_CERTS:
		/* Only the secure metrics listener has TLS; 'user' is its SSL_CTX. */
		return m->tls_setup == NULL || m->tls_setup(m->tls_arg, user) < 0 ? 1 : 0;
	case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
		if (l->secure)
			auth_finish(m);
		return 0;
	case LWS_CALLBACK_HTTP:
		auth_abandon(m, c);
		conn_end(c);
		*c = (struct conn){ .active = true };
		kc_buf_init(&c->out.body, METRICS_TEXT_MAX);
		method = lws_http_get_uri_and_method(wsi, &uri, &ulen);
		if (uri == NULL || ulen < 0 || (size_t)ulen >= sizeof(path))
			ulen = 0;
		memcpy(path, uri != NULL ? uri : "", (size_t)ulen);
		path[ulen] = '\0';
		c->out.head = method == LWSHUMETH_HEAD;
		if (l->secure && strcmp(path, "/metrics") == 0 &&
		    (method == LWSHUMETH_GET || method == LWSHUMETH_HEAD) &&
		    auth_begin(m, c, wsi)) {
			if (!c->auth_wait)
				lws_callback_on_writable(wsi);
			return 0;
		}
		handle(l, c, method, path);
		lws_callback_on_writable(wsi);
		return 0;
	case LWS_CALLBACK_HTTP_BODY:
	case LWS_CALLBACK_HTTP_BODY_COMPLETION:
		return 0;		/* bodies are never read; 405 closes */
	case LWS_CALLBACK_HTTP_WRITEABLE:
		return c != NULL ? writable(l, wsi, c) : 0;
	case LWS_CALLBACK_CLOSED_HTTP:
	case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
		if (c != NULL) {
			auth_abandon(m, c);
			conn_end(c);
		}
		return 0;
	default:
		break;
	}
	return lws_callback_http_dummy(wsi, reason, user, in, len);
}

void
metrics_lws_logger(int level, const char *line)
{
	char buf[512];
	size_t n = kc_strlcpy(buf, line, sizeof(buf));

	if (n >= sizeof(buf))
		n = sizeof(buf) - 1;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		buf[--n] = '\0';
	(void)level;
	kc_log_debug(&(struct kc_log_ctx){ .action = "libwebsockets" }, "%s", buf);
}

void
metrics_lws_run(struct lws_context *ctx, atomic_bool *stop)
{
	while (!atomic_load(stop))
		if (lws_service(ctx, 0) < 0)
			break;
}

const char *
metrics_lws_iface(const char *host)
{
	if (strcmp(host, "localhost") == 0)
		return "127.0.0.1";
	if (*host == '\0' || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0)
		return NULL;
	return host;
}

void
metrics_add_guard(struct metrics *m, const char *listener, const struct kc_guard_lws *g)
{
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < METRICS_GUARDS_MAX; i++)
		if (m->guards[i].g == NULL) {
			(void)kc_strlcpy(m->guards[i].name, listener, sizeof(m->guards[i].name));
			m->guards[i].g = g;
			break;
		}
	pthread_mutex_unlock(&m->mu);
}

void
metrics_remove_guard(struct metrics *m, const struct kc_guard_lws *g)
{
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < METRICS_GUARDS_MAX; i++)
		if (m->guards[i].g == g)
			m->guards[i].g = NULL;
	pthread_mutex_unlock(&m->mu);
}

/* The guards' counters into their families, at a scrape. */
static void
collect_guards(struct metrics *m)
{
	struct kc_guard_stats st;

	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < METRICS_GUARDS_MAX; i++) {
		const char *name = m->guards[i].name;

		if (m->guards[i].g == NULL)
			continue;
		kc_guard_lws_stats(m->guards[i].g, &st);
		record(m, F_HTTP_CONNS, L(name), OP_SET, (double)st.open);
		record(m, F_HTTP_ACCEPTED, L(name), OP_SET, (double)st.accepted);
		for (size_t d = 0; d < KC_GUARD_DROP_COUNT; d++)
			record(m, F_HTTP_DROPPED, L(name, kc_guard_drop_name(d)), OP_SET,
			    (double)st.dropped[d]);
	}
	pthread_mutex_unlock(&m->mu);
}

void
metrics_set_webhook_ready(struct metrics *m, metrics_ready_fn *fn, void *arg)
{
	pthread_mutex_lock(&m->mu);
	m->webhook_ready = fn;
	m->webhook_arg = arg;
	pthread_mutex_unlock(&m->mu);
}

static void *
serve(void *arg)
{
	struct listener *l = arg;

	metrics_lws_run(l->ctx, &l->stop);
	return NULL;
}

/* Adds the listener for 'addr' unless an equal one exists; its index or -1. */
static int
add_listener(struct metrics *m, const char *addr, bool health, struct kc_status *st)
{
	struct listener *l;
	char host[256];
	int port;

	if (metrics_parse_addr(addr, host, sizeof(host), &port) < 0)
		return kc_status_set(st, KC_ECONFIG, "%s: not a HOST:PORT bind address",
		    addr);
	if (port < 0)
		return -1;
	for (size_t i = 0; i < m->nlis; i++)
		if (strcmp(m->lis[i].host, host) == 0 && m->lis[i].port == port &&
		    port != 0) {
			m->lis[i].serves_health = true;	/* one address for both */
			return (int)i;
		}
	l = &m->lis[m->nlis];
	memset(l, 0, sizeof(*l));
	l->m = m;
	(void)kc_strlcpy(l->addr, addr, sizeof(l->addr));
	(void)kc_strlcpy(l->host, host, sizeof(l->host));
	l->port = port;
	l->name = health ? "health" : "metrics";
	l->serves_health = health;
	l->serves_metrics = !health;
	atomic_init(&l->stop, false);
	return (int)m->nlis++;
}

/*
 * The listener's context, vhost and guard. Deadlines: 5 s for a request's
 * line and headers (and the TLS handshake), then 5 s idle between
 * requests for the probes (the kubelet does not keep connections) and
 * 60 s for scrapers; an answer has AUTH_WAIT_S and 5 s more (a secure
 * scrape waits for the API server). libwebsockets' own timeouts are set
 * above the guard's, so the guard is the one that acts and counts.
 */
static int
open_listener(struct metrics *m, struct listener *l, struct kc_status *st)
{
	struct lws_context_creation_info info;
	const char *iface = metrics_lws_iface(l->host);
	uint32_t idle_s = l->serves_metrics ? 60 : 5;
	int r;

	l->protocols[0] = (struct lws_protocols){
		.name = "http",
		.callback = callback,
		.per_session_data_size = sizeof(struct conn),
	};
	memset(&info, 0, sizeof(info));
	info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
	info.port = CONTEXT_PORT_NO_LISTEN;
	info.protocols = l->protocols;
	info.user = l;
	info.max_http_header_data = l->secure ? HEADER_MAX_SECURE : HEADER_MAX;
	/* A header table for every connection the guard lets in: none waits for one. */
	info.max_http_header_pool = METRICS_CONNS_MAX;
	info.server_string = "trainyard-controller";
	/*
	 * No LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT here, even when secure: the
	 * webhook's context, which exists first (it provides tls_setup), did
	 * it. libwebsockets 4.1 re-creates its OpenSSL ex_data indexes at each
	 * global init, and the SSL_CTXs tagged with the old ones are then
	 * never freed. The secure vhost still asks for TLS (below).
	 */
	if ((l->ctx = lws_create_context(&info)) == NULL)
		return kc_status_set(st, -ENOMEM, "metrics: cannot create the server");
	if ((r = kc_guard_lws_new(l->ctx, &(struct kc_guard_opts){
		.max_conns = METRICS_CONNS_MAX,
		.request_ms = METRICS_REQUEST_S * 1000,
		.idle_ms = idle_s * 1000,
		.answer_ms = (AUTH_WAIT_S + 5) * 1000,
	}, &l->guard)) < 0)
		return kc_status_set(st, r, "metrics: %s", kc_strerror(r));
	memset(&info, 0, sizeof(info));
	info.port = l->port;
	info.iface = iface;
	info.protocols = l->protocols;
	info.vhost_name = l->name;
	info.options = LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND;
	if (iface != NULL && strchr(iface, ':') == NULL)
		info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
	info.keepalive_timeout = (int)idle_s + 5;
	info.timeout_secs = AUTH_WAIT_S + 10;
	info.timeout_secs_ah_idle = METRICS_REQUEST_S + 5;
	if (l->secure) {
		info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT |
		    LWS_SERVER_OPTION_CREATE_VHOST_SSL_CTX;
		info.alpn = "http/1.1";
	}
	if ((l->vh = lws_create_vhost(l->ctx, &info)) == NULL)
		return kc_status_set(st, KC_ECONFIG, "%s: cannot listen (address in use or "
		    "not local)", l->addr);
	if ((l->port = lws_get_vhost_listen_port(l->vh)) <= 0)
		return kc_status_set(st, KC_ECONFIG, "%s: the listening port is unknown",
		    l->addr);
	metrics_add_guard(m, l->serves_health ? "health" : "metrics", l->guard);
	return 0;
}

/*
 * Stops the listeners' threads and the auth thread, then frees the
 * contexts (their close callbacks mark waiting scrapes orphaned, so
 * those are freed last) and the guards.
 */
static void
stop_all(struct metrics *m)
{
	struct auth_req *q;

	for (size_t i = 0; i < m->nlis; i++) {
		struct listener *l = &m->lis[i];

		if (l->started) {
			atomic_store(&l->stop, true);
			lws_cancel_service(l->ctx);
			(void)pthread_join(l->thread, NULL);
			l->started = false;
		}
	}
	if (m->auth_started) {
		pthread_mutex_lock(&m->aq_mu);
		m->aq_stop = true;
		pthread_cond_signal(&m->aq_cond);
		pthread_mutex_unlock(&m->aq_mu);
		(void)pthread_join(m->auth_thread, NULL);
		m->auth_started = false;
	}
	for (size_t i = 0; i < m->nlis; i++) {
		struct listener *l = &m->lis[i];

		if (l->guard != NULL)
			metrics_remove_guard(m, l->guard);
		if (l->ctx != NULL) {
			lws_context_destroy(l->ctx);
			l->ctx = NULL;
		}
		l->guard = kc_guard_lws_free(l->guard);
	}
	while ((q = TAILQ_FIRST(&m->todo)) != NULL) {
		TAILQ_REMOVE(&m->todo, q, link);
		auth_req_free(q);
	}
	while ((q = TAILQ_FIRST(&m->done)) != NULL) {
		TAILQ_REMOVE(&m->done, q, link);
		auth_req_free(q);
	}
	m->ntodo = 0;
}

int
metrics_start(struct metrics *m, const struct metrics_opts *opts,
    struct kc_status *st)
{
	int r;

	if (m->nlis != 0)
		return kc_status_set(st, -EBUSY, "metrics: already started");
	if ((r = add_listener(m, opts->metrics_addr, false, st)) < -1)
		return r;
	m->metrics_idx = r;
	if ((r = add_listener(m, opts->health_addr, true, st)) < -1)
		goto fail_config;
	m->health_idx = r;
	if (m->nlis == 0)
		return 0;
	if ((opts->tls_setup != NULL) != (opts->auth != NULL)) {
		r = kc_status_set(st, -EINVAL, "metrics: secure needs both TLS and auth");
		goto fail_config;
	}
	if (opts->tls_setup != NULL && m->metrics_idx >= 0 &&
	    m->metrics_idx == m->health_idx) {
		r = kc_status_set(st, KC_ECONFIG, "%s: with secure metrics the health "
		    "probes need an address of their own (plain HTTP for the kubelet)",
		    opts->metrics_addr);
		goto fail_config;
	}
	m->tls_setup = opts->tls_setup;
	m->tls_arg = opts->tls_arg;
	m->auth = opts->auth;
	if (m->auth != NULL && m->metrics_idx >= 0)
		m->lis[m->metrics_idx].secure = true;

	lws_set_log_level(LLL_ERR, metrics_lws_logger);
	for (size_t i = 0; i < m->nlis; i++)
		if ((r = open_listener(m, &m->lis[i], st)) < 0)
			goto fail;
	if (m->auth != NULL) {
		m->aq_stop = false;
		if ((r = pthread_create(&m->auth_thread, NULL, auth_main, m)) != 0) {
			r = kc_status_set(st, -r, "metrics: thread: %s", kc_strerror(-r));
			goto fail;
		}
		m->auth_started = true;
	}
	for (size_t i = 0; i < m->nlis; i++) {
		if ((r = pthread_create(&m->lis[i].thread, NULL, serve, &m->lis[i])) != 0) {
			r = kc_status_set(st, -r, "metrics: thread: %s", kc_strerror(-r));
			goto fail;
		}
		m->lis[i].started = true;
	}
	return 0;
fail:
	stop_all(m);
fail_config:
	m->nlis = 0;
	m->metrics_idx = m->health_idx = -1;
	return r;
}

void
metrics_stop(struct metrics *m)
{
	stop_all(m);
}

int
metrics_port(struct metrics *m, bool health)
{
	int idx = health ? m->health_idx : m->metrics_idx;

	return idx >= 0 && m->lis[idx].ctx != NULL ? m->lis[idx].port : -1;
}

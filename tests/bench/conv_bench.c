/*
 * conv_bench.c: conv-bench, the conversion webhook's benchmark client.
 *
 *	conv-bench NAME --url https://HOST:PORT --ca FILE [--server-name NAME]
 *	    [--per-review N] [--objects N] [--clients N] [--direction up|down|mixed]
 *	    [--fixtures DIR] [--pid PID]
 *
 * POSTs ConversionReviews (apiextensions.k8s.io/v1) to trainyard-controller's
 * POST /convert as kube-apiserver does: --clients threads, each with its own
 * libkc curl transport (one keep-alive HTTPS connection, HTTP/1.1), take
 * reviews of --per-review Runs from a shared counter until --objects Runs
 * were converted. The Runs are the full-spec fixtures of the converter
 * (alpha-full.json and beta-full.json under --fixtures, their "in"), each
 * with a name and uid of its own. --direction up sends v1alpha1 Runs to be
 * converted to v1beta1, down the reverse, mixed alternates the two review
 * by review. The bodies are built before the clock starts; each thread
 * makes one untimed review first so that its connection is open.
 *
 * A review counts as an error unless the answer is 200 with
 * response.result.status "Success", the request's uid, and as many
 * convertedObjects as were sent, all of the desired apiVersion (the client
 * parses every answer, as the API server does). One line:
 *
 *	bench: scenario=conv-NAME clients=4 objects=20000 ops=20000
 *	    per_review=1 reviews=20000 seconds=... per_s=... p50_ms=...
 *	    p99_ms=... max_ms=... review_p50_ms=... review_p99_ms=...
 *	    errors=0 client_cpu_s=... server_cpu_s=...
 *
 * (on one line): ops are the objects converted, per_s objects per second,
 * p50/p99/max_ms the latency per object (a review's round trip divided by
 * its objects), review_*_ms the review's round trip itself. server_cpu_s
 * is the CPU time of --pid (the controller) during the timed part, from
 * /proc/PID/stat. Exit status: 0 when the scenario ran, even with errors
 * (counted in errors=), 1 when it could not run, 2 for bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/kubeconfig.h>
#include <kc/str.h>
#include <kc/transport.h>

#include "bench.h"

#define CLIENTS_MAX	256
#define OBJECTS_MAX	10000000u
#define PER_REVIEW_MAX	4096		/* REVIEW_OBJECTS_MAX of the webhook */
#define POOL_MAX	64		/* distinct bodies per direction */
#define FIXTURE_MAX	(1u << 20)
#define CA_MAX		(256u << 10)
#define REVIEW_V1	"apiextensions.k8s.io/v1"

enum direction { DIR_UP, DIR_DOWN, DIR_MIXED };

struct opts {
	const char	*name;
	const char	*url;
	const char	*ca;
	const char	*server_name;
	const char	*fixtures;
	unsigned	 clients;
	unsigned	 objects;
	unsigned	 per_review;
	enum direction	 direction;
	pid_t		 pid;
};

/* One prepared review: its body and what the answer must hold. */
struct body {
	char		*text;
	size_t		 len;
	char		 uid[64];
	const char	*to;
};

/* The bodies: [0] up (to v1beta1), [1] down (to v1alpha1). */
struct pool {
	struct body	 b[2][POOL_MAX];
	size_t		 n;
};

struct shared {
	const struct opts *o;
	const struct kc_rest_config *rc;
	const struct pool *pool;
	unsigned	 reviews;
	atomic_uint	 next;
	pthread_barrier_t bar;
	uint64_t	*lat_ns;	/* [reviews], by review number */
	atomic_uint_fast64_t errors;
	atomic_bool	 abort;		/* a client could not set up */
};

struct worker {
	pthread_t	 tid;
	unsigned	 idx;
	struct shared	*sh;
	int		 setup_r;
	bool		 reported;
};

/* The "in" object of fixture FILE under the fixtures directory. */
static int
fixture_load(const struct opts *o, const char *file, struct json_object **ret)
{
	_cleanup_(kc_freep) char *path = NULL, *text = NULL;
	_cleanup_(kc_json_putp) struct json_object *doc = NULL;
	struct kc_status st = { 0 };
	struct json_object *in;
	size_t len;
	int r;

	if ((path = kc_asprintf("%s/%s", o->fixtures, file)) == NULL)
		return -ENOMEM;
	if ((r = kc_read_file(path, FIXTURE_MAX, &text, &len)) < 0) {
		fprintf(stderr, "conv-bench: %s: %s\n", path, kc_strerror(r));
		return r;
	}
	if ((r = kc_json_parse(text, len, &doc, &st)) < 0) {
		fprintf(stderr, "conv-bench: %s: %s\n", path, st.message);
		return r;
	}
	if ((in = kc_json_obj_of(doc, "in")) == NULL ||
	    kc_json_obj_of(in, "metadata") == NULL) {
		fprintf(stderr, "conv-bench: %s: no \"in\" object with metadata\n", path);
		return -EINVAL;
	}
	*ret = json_object_get(in);
	return 0;
}

/*
 * One review body: 'n' copies of 'run' named "bench-<k>-<j>", each with a
 * uid of its own, to be converted to 'to'.
 */
static int
body_build(struct json_object *run, const char *to, unsigned k, unsigned n,
    struct body *b)
{
	_cleanup_(kc_json_putp) struct json_object *rev = json_object_new_object();
	struct json_object *req, *objs, *obj = NULL, *md;
	char name[64], uid[64];
	unsigned j;

	if (rev == NULL || kc_json_set_str(rev, "apiVersion", REVIEW_V1) < 0 ||
	    kc_json_set_str(rev, "kind", "ConversionReview") < 0 ||
	    (req = kc_json_ensure_obj(rev, "request")) == NULL)
		return -ENOMEM;
	(void)snprintf(b->uid, sizeof(b->uid), "c0b7e4a0-0000-4000-8000-%012x", k);
	b->to = to;
	if (kc_json_set_str(req, "uid", b->uid) < 0 ||
	    kc_json_set_str(req, "desiredAPIVersion", to) < 0 ||
	    (objs = json_object_new_array_ext((int)n)) == NULL ||
	    json_object_object_add(req, "objects", objs) < 0)
		return -ENOMEM;
	for (j = 0; j < n; j++) {
		obj = NULL;
		if (json_object_deep_copy(run, &obj, NULL) < 0 ||
		    (md = kc_json_obj_of(obj, "metadata")) == NULL)
			goto fail;
		(void)snprintf(name, sizeof(name), "bench-%u-%u", k, j);
		(void)snprintf(uid, sizeof(uid), "4f1a6c2e-%04x-4000-8000-%012x", k & 0xffff, j);
		if (kc_json_set_str(md, "name", name) < 0 ||
		    kc_json_set_str(md, "uid", uid) < 0 ||
		    json_object_array_add(objs, obj) < 0)
			goto fail;
	}
	if ((b->text = kc_json_dump(rev, &b->len)) == NULL)
		return -ENOMEM;
	return 0;
fail:
	if (obj != NULL)
		json_object_put(obj);
	return -ENOMEM;
}

static void
pool_free(struct pool *p)
{
	size_t d, i;

	for (d = 0; d < 2; d++)
		for (i = 0; i < POOL_MAX; i++)
			p->b[d][i].text = kc_free(p->b[d][i].text);
}

static int
pool_build(const struct opts *o, unsigned reviews, struct pool *p)
{
	_cleanup_(kc_json_putp) struct json_object *alpha = NULL, *beta = NULL;
	size_t i;
	int r;

	if ((r = fixture_load(o, "alpha-full.json", &alpha)) < 0 ||
	    (r = fixture_load(o, "beta-full.json", &beta)) < 0)
		return r;
	p->n = reviews < POOL_MAX ? reviews : POOL_MAX;
	for (i = 0; i < p->n; i++)
		if ((r = body_build(alpha, "trainyard.dev/v1beta1", (unsigned)(2 * i),
		    o->per_review, &p->b[0][i])) < 0 ||
		    (r = body_build(beta, "trainyard.dev/v1alpha1", (unsigned)(2 * i + 1),
		    o->per_review, &p->b[1][i])) < 0)
			return r;
	return 0;
}

/* Review number i's body. */
static const struct body *
body_of(const struct shared *sh, unsigned i)
{
	unsigned d;

	switch (sh->o->direction) {
	case DIR_UP:	d = 0; break;
	case DIR_DOWN:	d = 1; break;
	default:	d = i % 2; break;
	}
	return &sh->pool->b[d][(i / (sh->o->direction == DIR_MIXED ? 2 : 1)) % sh->pool->n];
}

/* Whether the answer converted every object of 'b'; the reason in 'why'. */
static bool
answer_ok(const struct shared *sh, const struct body *b, const struct kc_http_resp *resp,
    char *why, size_t size)
{
	_cleanup_(kc_json_putp) struct json_object *doc = NULL;
	struct kc_status st = { 0 };
	struct json_object *objs;
	const char *s;
	size_t i, n;

	if (resp->status != 200) {
		(void)snprintf(why, size, "HTTP %d: %.200s", resp->status,
		    resp->body.data != NULL ? resp->body.data : "");
		return false;
	}
	if (kc_json_parse(resp->body.data, resp->body.len, &doc, &st) < 0) {
		(void)snprintf(why, size, "the answer is not JSON: %.300s", st.message);
		return false;
	}
	if ((s = kc_json_str(doc, "response", "result", "status")) == NULL ||
	    strcmp(s, "Success") != 0) {
		(void)snprintf(why, size, "result %s: %.200s", s != NULL ? s : "(none)",
		    kc_json_str(doc, "response", "result", "message") != NULL ?
		    kc_json_str(doc, "response", "result", "message") : "");
		return false;
	}
	if ((s = kc_json_str(doc, "response", "uid")) == NULL || strcmp(s, b->uid) != 0) {
		(void)snprintf(why, size, "response.uid %s, sent %s", s != NULL ? s : "(none)",
		    b->uid);
		return false;
	}
	objs = kc_json_arr_of(kc_json_get(doc, "response"), "convertedObjects");
	n = objs != NULL ? json_object_array_length(objs) : 0;
	if (n != sh->o->per_review) {
		(void)snprintf(why, size, "%zu convertedObjects for %u objects", n,
		    sh->o->per_review);
		return false;
	}
	for (i = 0; i < n; i++) {
		s = kc_json_str(json_object_array_get_idx(objs, i), "apiVersion");
		if (s == NULL || strcmp(s, b->to) != 0) {
			(void)snprintf(why, size, "convertedObjects[%zu] is %s, not %s", i,
			    s != NULL ? s : "(no apiVersion)", b->to);
			return false;
		}
	}
	return true;
}

/* One review; 0 when it converted, else -1 (the first failure to stderr). */
static int
review_post(struct worker *w, void *tr, const struct body *b)
{
	struct kc_http_req req = {
		.method = "POST",
		.path = "/convert?timeout=30s",
		.content_type = "application/json",
		.body = b->text,
		.body_len = b->len,
	};
	struct kc_http_resp resp = { 0 };
	struct kc_status st = { 0 };
	char why[512];
	bool ok;
	int r;

	r = kc_transport_curl.request(tr, &req, &resp, &st);
	if (r < 0)
		(void)snprintf(why, sizeof(why), "%s", st.message[0] != '\0' ? st.message :
		    kc_strerror(r));
	ok = r == 0 && answer_ok(w->sh, b, &resp, why, sizeof(why));
	kc_http_resp_free(&resp);
	if (ok)
		return 0;
	if (!w->reported) {
		fprintf(stderr, "conv-bench: client %u: review %s: %s\n", w->idx, b->uid, why);
		w->reported = true;
	}
	return -1;
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	struct kc_status st = { 0 };
	void *tr = NULL;
	unsigned i;
	uint64_t t0;

	w->setup_r = kc_transport_curl.open(&(struct kc_transport_opts){
		.rc = sh->rc,
		.timeout_ms = 30000,
		.user_agent = "conv-bench/" KC_VERSION,
		.http1 = true,
	}, &tr, &st);
	if (w->setup_r < 0)
		fprintf(stderr, "conv-bench: client %u: %s\n", w->idx, st.message);
	else if (review_post(w, tr, body_of(sh, w->idx)) < 0)
		w->setup_r = -EIO;	/* the warm-up review: the connection */
	(void)pthread_barrier_wait(&sh->bar);
	(void)pthread_barrier_wait(&sh->bar);	/* the main thread checked setup_r */
	while (!atomic_load(&sh->abort) && (i = atomic_fetch_add(&sh->next, 1)) < sh->reviews) {
		t0 = bench_now_ns();
		if (review_post(w, tr, body_of(sh, i)) < 0)
			atomic_fetch_add(&sh->errors, 1);
		sh->lat_ns[i] = bench_now_ns() - t0;
	}
	tr = kc_transport_curl.close(tr);
	return NULL;
}

static void
print_line(const struct opts *o, const struct shared *sh, double seconds, double cpu,
    double srv)
{
	static const char *const dirs[] = { "up", "down", "mixed" };
	const uint64_t *v = sh->lat_ns;
	size_t n = sh->reviews;
	uint64_t objects = (uint64_t)n * o->per_review;
	double per = o->per_review;
	char server[64] = "";

	if (srv >= 0)
		(void)snprintf(server, sizeof(server), " server_cpu_s=%.2f", srv);
	printf("bench: scenario=conv-%s direction=%s clients=%u objects=%" PRIu64
	    " ops=%" PRIu64 " per_review=%u reviews=%zu seconds=%.3f per_s=%.0f"
	    " p50_ms=%.3f p99_ms=%.3f max_ms=%.3f review_p50_ms=%.3f review_p99_ms=%.3f"
	    " review_max_ms=%.3f errors=%" PRIu64 " client_cpu_s=%.2f%s\n",
	    o->name, dirs[o->direction], o->clients, objects, objects, o->per_review, n,
	    seconds, seconds > 0 ? (double)objects / seconds : 0.0,
	    bench_pct_ms(v, n, 0.50) / per, bench_pct_ms(v, n, 0.99) / per,
	    bench_pct_ms(v, n, 1.0) / per, bench_pct_ms(v, n, 0.50),
	    bench_pct_ms(v, n, 0.99), bench_pct_ms(v, n, 1.0),
	    (uint64_t)atomic_load(&sh->errors), cpu, server);
	(void)fflush(stdout);
}

static int
scenario(const struct opts *o, const struct kc_rest_config *rc)
{
	struct pool pool = { 0 };
	struct shared sh = { .o = o, .rc = rc, .pool = &pool };
	struct worker *ws = NULL;
	double cpu0, srv0, srv1;
	uint64_t t0, t1;
	unsigned i, started = 0;
	int r;

	sh.reviews = (o->objects + o->per_review - 1) / o->per_review;
	if ((r = pool_build(o, sh.reviews, &pool)) < 0)
		goto out;
	if ((sh.lat_ns = kc_calloc(sh.reviews, sizeof(uint64_t))) == NULL ||
	    (ws = kc_calloc(o->clients, sizeof(*ws))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = -pthread_barrier_init(&sh.bar, NULL, o->clients + 1)) < 0)
		goto out;
	for (i = 0; i < o->clients; i++) {
		ws[i] = (struct worker){ .idx = i, .sh = &sh };
		if ((r = -pthread_create(&ws[i].tid, NULL, worker_main, &ws[i])) < 0) {
			fprintf(stderr, "conv-bench: thread: %s\n", kc_strerror(r));
			/* The started ones wait at the barrier: no way back; exit. */
			exit(1);
		}
		started++;
	}
	(void)pthread_barrier_wait(&sh.bar);
	for (i = 0; i < o->clients; i++)
		if (ws[i].setup_r < 0)
			r = ws[i].setup_r;
	atomic_store(&sh.abort, r < 0);
	cpu0 = bench_cpu_self_s();
	srv0 = bench_proc_cpu_s(o->pid);
	t0 = bench_now_ns();
	(void)pthread_barrier_wait(&sh.bar);
	for (i = 0; i < started; i++)
		(void)pthread_join(ws[i].tid, NULL);
	t1 = bench_now_ns();
	srv1 = bench_proc_cpu_s(o->pid);
	(void)pthread_barrier_destroy(&sh.bar);
	if (r < 0) {
		fprintf(stderr, "conv-bench: a client could not convert its first review\n");
		goto out;
	}
	bench_sort_u64(sh.lat_ns, sh.reviews);
	print_line(o, &sh, (double)(t1 - t0) / 1e9, bench_cpu_self_s() - cpu0,
	    srv0 >= 0 && srv1 >= 0 ? srv1 - srv0 : -1);
out:
	ws = kc_free(ws);
	sh.lat_ns = kc_free(sh.lat_ns);
	pool_free(&pool);
	return r;
}

static void
usage(FILE *fp)
{
	fprintf(fp,
	    "usage: conv-bench NAME --url https://HOST:PORT --ca FILE [--server-name NAME]\n"
	    "                  [--per-review N] [--objects N] [--clients N]\n"
	    "                  [--direction up|down|mixed] [--fixtures DIR] [--pid PID]\n");
}

/* 0, 1 for --help, or -EINVAL (the reason is on stderr). */
static int
parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "url",	 required_argument, NULL, 'u' },
		{ "ca",		 required_argument, NULL, 'a' },
		{ "server-name", required_argument, NULL, 's' },
		{ "fixtures",	 required_argument, NULL, 'f' },
		{ "clients",	 required_argument, NULL, 'c' },
		{ "objects",	 required_argument, NULL, 'o' },
		{ "per-review",	 required_argument, NULL, 'n' },
		{ "direction",	 required_argument, NULL, 'd' },
		{ "pid",	 required_argument, NULL, 'p' },
		{ "help",	 no_argument,	    NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned pid;
	int c, r = 0;

	*o = (struct opts){
		.fixtures = "tests/fixtures/convert", .clients = 4, .objects = 20000,
		.per_review = 1, .direction = DIR_UP,
	};
	while (r == 0 && (c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'u':
			o->url = optarg;
			break;
		case 'a':
			o->ca = optarg;
			break;
		case 's':
			o->server_name = optarg;
			break;
		case 'f':
			o->fixtures = optarg;
			break;
		case 'c':
			r = bench_parse_count("conv-bench", "--clients", optarg, 1, CLIENTS_MAX, &o->clients);
			break;
		case 'o':
			r = bench_parse_count("conv-bench", "--objects", optarg, 1, OBJECTS_MAX, &o->objects);
			break;
		case 'n':
			r = bench_parse_count("conv-bench", "--per-review", optarg, 1, PER_REVIEW_MAX,
			    &o->per_review);
			break;
		case 'd':
			if (strcmp(optarg, "up") == 0)
				o->direction = DIR_UP;
			else if (strcmp(optarg, "down") == 0)
				o->direction = DIR_DOWN;
			else if (strcmp(optarg, "mixed") == 0)
				o->direction = DIR_MIXED;
			else {
				fprintf(stderr, "conv-bench: --direction: up, down or mixed, "
				    "not \"%s\"\n", optarg);
				r = -EINVAL;
			}
			break;
		case 'p':
			if ((r = bench_parse_count("conv-bench", "--pid", optarg, 1, INT32_MAX,
			    &pid)) == 0)
				o->pid = (pid_t)pid;
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			r = -EINVAL;
			break;
		}
	}
	if (r == 0 && optind + 1 != argc) {
		fprintf(stderr, "conv-bench: one scenario name expected\n");
		r = -EINVAL;
	}
	if (r == 0 && (o->url == NULL || strncmp(o->url, "https://", 8) != 0 ||
	    o->ca == NULL)) {
		fprintf(stderr, "conv-bench: --url https://HOST:PORT and --ca FILE are needed\n");
		r = -EINVAL;
	}
	if (r == 0 && strpbrk(argv[optind], " \t\n=") != NULL) {
		fprintf(stderr, "conv-bench: the scenario name has no spaces nor '='\n");
		r = -EINVAL;
	}
	if (r < 0) {
		usage(stderr);
		return r;
	}
	o->name = argv[optind];
	return 0;
}

int
main(int argc, char **argv)
{
	_cleanup_(kc_rest_config_freep) struct kc_rest_config *rc = NULL;
	struct opts o;
	int r;

	if ((r = parse_opts(argc, argv, &o)) != 0)
		return r < 0 ? 2 : 0;
	if ((r = kc_transport_global_init()) < 0) {
		fprintf(stderr, "conv-bench: curl: %s\n", kc_strerror(r));
		return 1;
	}
	if ((rc = kc_calloc(1, sizeof(*rc))) == NULL ||
	    (rc->server = kc_strdup(o.url)) == NULL ||
	    (o.server_name != NULL && (rc->tls_server_name = kc_strdup(o.server_name)) == NULL)) {
		r = -ENOMEM;
		fprintf(stderr, "conv-bench: out of memory\n");
		goto out;
	}
	if ((r = kc_read_file(o.ca, CA_MAX, &rc->ca_pem, &rc->ca_pem_len)) < 0) {
		fprintf(stderr, "conv-bench: %s: %s\n", o.ca, kc_strerror(r));
		goto out;
	}
	r = scenario(&o, rc);
out:
	kc_transport_global_cleanup();
	return r < 0 ? 1 : 0;
}

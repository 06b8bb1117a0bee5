/*
 * bench.c: helpers of the benchmark programs (bench.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/str.h>
#include <kc/transport.h>

#include "bench.h"

uint64_t
bench_now_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double
bench_cpu_self_s(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

int
bench_proc_cpu(pid_t pid, double *ret_user, double *ret_sys)
{
	_cleanup_(kc_freep) char *text = NULL;
	char path[64];
	const char *p;
	size_t len;
	uint64_t v[2];
	long tck;
	int field, r;

	(void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((r = kc_read_file(path, 4096, &text, &len)) < 0)
		return r;
	if ((p = strrchr(text, ')')) == NULL)
		return -EINVAL;
	/* After ") " comes field 3 (state). */
	for (field = 3, p++; *p != '\0' && field <= 15; field++) {
		char tok[32];
		size_t n = 0;

		while (*p == ' ')
			p++;
		while (*p != ' ' && *p != '\0' && n + 1 < sizeof(tok))
			tok[n++] = *p++;
		tok[n] = '\0';
		if (field >= 14 && kc_parse_u64(tok, &v[field - 14]) < 0)
			return -EINVAL;
	}
	if (field <= 15 || (tck = sysconf(_SC_CLK_TCK)) <= 0)
		return -EINVAL;
	*ret_user = (double)v[0] / (double)tck;
	*ret_sys = (double)v[1] / (double)tck;
	return 0;
}

double
bench_proc_cpu_s(pid_t pid)
{
	double u, s;

	if (pid <= 0 || bench_proc_cpu(pid, &u, &s) < 0)
		return -1;
	return u + s;
}

int
bench_proc_status_kb(pid_t pid, const char *key, uint64_t *ret)
{
	_cleanup_(kc_freep) char *text = NULL;
	char path[64];
	struct kc_str s, line;
	size_t len;
	int r;

	(void)snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((r = kc_read_file(path, 1 << 16, &text, &len)) < 0)
		return r;
	s = (struct kc_str){ text, len };
	while (s.len > 0) {
		struct kc_str name, val, num;

		if (!kc_str_cut(&s, '\n', &line)) {
			line = s;
			s.len = 0;
		}
		val = line;
		if (!kc_str_cut(&val, ':', &name) || !kc_str_eq_cstr(name, key))
			continue;
		val = kc_str_trim(val);
		if (!kc_str_cut(&val, ' ', &num))
			num = val;
		return kc_str_to_u64(num, ret);
	}
	return -ENOENT;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void
bench_sort_u64(uint64_t *v, size_t n)
{
	if (n > 0)
		qsort(v, n, sizeof(*v), cmp_u64);
}

double
bench_pct_ms(const uint64_t *v, size_t n, double q)
{
	size_t i;

	if (n == 0)
		return 0;
	i = (size_t)(q * (double)n);
	if (i >= n)
		i = n - 1;
	return (double)v[i] / 1e6;
}

int
bench_parse_count(const char *prog, const char *flag, const char *arg, unsigned lo,
    unsigned hi, unsigned *ret)
{
	uint32_t v;

	if (kc_parse_u32(arg, &v) < 0 || v < lo || v > hi) {
		fprintf(stderr, "%s: %s: want a number from %u to %u, not \"%s\"\n",
		    prog, flag, lo, hi, arg);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

void
bench_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int
bench_client_open(const struct kc_rest_config *rc, const char *agent, struct kc_client **ret,
    struct kc_status *st)
{
	char ua[64];

	(void)snprintf(ua, sizeof(ua), "%s/%s", agent, KC_VERSION);
	return kc_client_new(&(struct kc_client_opts){
		.rc = rc,
		.timeout_ms = 60000,
		.user_agent = ua,
	}, ret, st);
}

bool
bench_is_write(const char *verb)
{
	static const char *const w[] = { "create", "update", "patch", "delete",
	    "deletecollection" };

	for (size_t i = 0; i < KC_ARRAY_SIZE(w); i++)
		if (strcmp(verb, w[i]) == 0)
			return true;
	return false;
}

static void
stats_add(struct bench_stats *s, const struct bench_counter *c, const char *verb,
    const char *res, int64_t code, uint64_t n)
{
	int k;

	s->calls += n;
	if (code >= 400)
		s->errors += n;
	if (code == 409)
		s->conflicts += n;
	if (!bench_is_write(verb))
		return;
	s->writes += n;
	if ((k = c->kind(verb, res)) == BENCH_OWN)
		s->own += n;
	else if (k >= 0 && k < BENCH_KINDS)
		s->w[k] += n;
}

int
bench_stats_get(struct kc_client *cl, const struct bench_counter *c, struct bench_stats *ret)
{
	_cleanup_(kc_json_putp) struct json_object *doc = NULL;
	struct kc_status st = { 0 };
	struct json_object *rows;
	size_t n;
	int r;

	*ret = (struct bench_stats){ 0 };
	if ((r = kc_client_get_path(cl, "/devcluster/stats", &doc, &st)) < 0) {
		fprintf(stderr, "%s: /devcluster/stats: %s: %s\n", c->prog, kc_strerror(r),
		    st.message);
		return r;
	}
	if ((rows = kc_json_arr_of(doc, "requests")) == NULL)
		return -EINVAL;
	n = json_object_array_length(rows);
	for (size_t i = 0; i < n; i++) {
		struct json_object *row = json_object_array_get_idx(rows, i);
		const char *verb = kc_json_str(row, "verb"), *res = kc_json_str(row, "resource");
		int64_t code = kc_json_int(row, 0, "code"), count = kc_json_int(row, 0, "count");

		if (verb != NULL && res != NULL && count > 0)
			stats_add(ret, c, verb, res, code, (uint64_t)count);
	}
	return 0;
}

struct bench_stats
bench_stats_sub(const struct bench_stats *b, const struct bench_stats *a)
{
	struct bench_stats d = {
		.calls = b->calls - a->calls, .writes = b->writes - a->writes,
		.own = b->own - a->own, .conflicts = b->conflicts - a->conflicts,
		.errors = b->errors - a->errors,
	};

	for (size_t i = 0; i < BENCH_KINDS; i++)
		d.w[i] = b->w[i] - a->w[i];
	return d;
}

uint64_t
bench_ctl_writes(const struct bench_stats *s)
{
	return s->writes - s->own;
}

int
bench_wait_quiet(struct kc_client *cl, const struct bench_counter *c, unsigned settle_ms,
    uint64_t deadline, struct bench_stats *ret)
{
	uint64_t quiet_since = bench_now_ns(), last = UINT64_MAX;
	struct bench_stats s;

	for (;;) {
		if (bench_stats_get(cl, c, &s) == 0) {
			if (bench_ctl_writes(&s) != last) {
				last = bench_ctl_writes(&s);
				quiet_since = bench_now_ns();
				*ret = s;
			} else if (bench_now_ns() - quiet_since >= (uint64_t)settle_ms * 1000000u)
				return 0;
		}
		if (bench_now_ns() > deadline) {
			fprintf(stderr, "%s: the controller kept writing: timed out\n", c->prog);
			return -ETIMEDOUT;
		}
		bench_sleep_ms(250);
	}
}

int
bench_count(struct kc_client *cl, const struct kc_resource *res, const char *ns,
    const char *prog, uint64_t *ret)
{
	_cleanup_(kc_json_putp) struct json_object *list = NULL;
	struct kc_status st = { 0 };
	struct json_object *items;
	int r;

	if ((r = kc_client_list(cl, &(struct kc_list_opts){ .res = res, .ns = ns, .limit = 1 },
	    &list, &st)) < 0) {
		fprintf(stderr, "%s: list %s: %s: %s\n", prog, res->resource, kc_strerror(r),
		    st.message);
		return r;
	}
	items = kc_json_arr_of(list, "items");
	*ret = (items != NULL ? json_object_array_length(items) : 0) +
	    (uint64_t)kc_json_int(list, 0, "metadata", "remainingItemCount");
	return 0;
}

int
bench_list_each(struct kc_client *cl, const struct kc_list_opts *opts, const char *prog,
    bench_item_fn *fn, void *arg, uint64_t *lists)
{
	struct kc_list_opts lo = *opts;
	struct kc_status st = { 0 };
	char token[1024];
	int r;

	lo.limit = 500;
	lo.cont = NULL;
	do {
		_cleanup_(kc_json_putp) struct json_object *list = NULL;
		struct json_object *items;
		const char *cont;
		size_t len;

		if (lists != NULL)
			(*lists)++;
		if ((r = kc_client_list(cl, &lo, &list, &st)) < 0) {
			fprintf(stderr, "%s: list %s: %s: %s\n", prog, lo.res->resource,
			    kc_strerror(r), st.message);
			return r;
		}
		items = kc_json_arr_of(list, "items");
		len = items != NULL ? json_object_array_length(items) : 0;
		for (size_t i = 0; i < len; i++)
			fn(arg, json_object_array_get_idx(items, i));
		cont = kc_json_str(list, "metadata", "continue");
		if (cont != NULL && *cont != '\0') {
			(void)kc_strlcpy(token, cont, sizeof(token));
			lo.cont = token;
		} else
			lo.cont = NULL;
	} while (lo.cont != NULL);
	return 0;
}

const char *
bench_condition(const struct json_object *obj, const char *type, const char **ret_reason)
{
	struct json_object *conds = kc_json_arr_of(kc_json_obj_of(obj, "status"), "conditions");
	size_t n = conds != NULL ? json_object_array_length(conds) : 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *cd = json_object_array_get_idx(conds, i);
		const char *t = kc_json_str(cd, "type");

		if (t == NULL || strcmp(t, type) != 0)
			continue;
		if (ret_reason != NULL)
			*ret_reason = kc_json_str(cd, "reason");
		return kc_json_str(cd, "status");
	}
	return NULL;
}

void
bench_fail(struct bench_fails *f, int r, const char *what, const struct kc_status *st)
{
	f->n++;
	if (f->first[0] == '\0')
		(void)snprintf(f->first, sizeof(f->first), "%.64s: %s: %s", what, kc_strerror(r),
		    st->message);
}

static struct bench_worker *
worker_at(const struct bench_workers *g, unsigned i)
{
	return (struct bench_worker *)(void *)((char *)g->ws + (size_t)i * g->size);
}

int
bench_workers_start(struct bench_workers *g, void *(*fn)(void *), uint64_t *ret_t0)
{
	int r;

	if ((r = -pthread_barrier_init(&g->bar, NULL, g->n + 1)) < 0)
		return r;
	for (unsigned i = 0; i < g->n; i++) {
		struct bench_worker *w = worker_at(g, i);

		w->idx = i;
		w->start = &g->bar;
		if ((r = -pthread_create(&w->tid, NULL, fn, w)) < 0) {
			/* Cannot release the barrier short: give up the process. */
			fprintf(stderr, "pthread_create: %s\n", strerrordesc_np(-r));
			exit(1);
		}
	}
	(void)pthread_barrier_wait(&g->bar);
	*ret_t0 = bench_now_ns();
	return 0;
}

uint64_t
bench_workers_join(struct bench_workers *g, const char *prog, uint64_t *ret_errors)
{
	uint64_t t = 0;

	for (unsigned i = 0; i < g->n; i++) {
		struct bench_worker *w = worker_at(g, i);

		(void)pthread_join(w->tid, NULL);
		if (w->t_end > t)
			t = w->t_end;
		*ret_errors += w->fails.n;
		if (w->fails.first[0] != '\0')
			fprintf(stderr, "%s: client %u: %" PRIu64 " errors, first: %s\n", prog, i,
			    w->fails.n, w->fails.first);
	}
	(void)pthread_barrier_destroy(&g->bar);
	return t;
}

int
bench_rest_config(const char *prog, const char *kubeconfig, struct kc_rest_config **ret)
{
	struct kc_status st = { 0 };
	int r;

	if ((r = kc_transport_global_init()) < 0) {
		fprintf(stderr, "%s: curl: %s\n", prog, kc_strerror(r));
		return r;
	}
	if ((r = kc_kubeconfig_load(&(struct kc_kubeconfig_opts){
		.paths = (const char *const[]){ kubeconfig },
		.npaths = 1,
	}, ret, &st)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, st.message);
		kc_transport_global_cleanup();
	}
	return r;
}

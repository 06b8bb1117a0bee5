/*
 * test_ctl_metrics.c: controller/metrics.c, the registry, the exposition
 * and the HTTP server.
 *
 * Every /metrics text goes through expo_parse() below, a parser of the
 * Prometheus text format 0.0.4 that rejects what a scraper would: a
 * sample before its TYPE, a family declared twice, a bad metric or label
 * name, an unknown escape in a label value, a value that is not a float,
 * and, per histogram series, _bucket lines that are not cumulative, not
 * in increasing le order, without le="+Inf" or disagreeing with _count.
 * The tests then look samples up by name and labels and assert values.
 *
 * The HTTP tests run the server on 127.0.0.1 with kernel-picked ports and
 * fetch through libkc's libcurl transport (kc_transport_curl), plus a raw
 * socket for HEAD and for garbage the transport would never send.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/client.h>
#include <kc/err.h>
#include <kc/informer.h>
#include <kc/kubeconfig.h>
#include <kc/str.h>
#include <kc/transport.h>
#include <kc/workqueue.h>

#include "../../controller/metrics.h"
#include "testutil.h"

/* ---- a parser of the text exposition format ---------------------------------- */

#define EXPO_FAMILIES	64
#define EXPO_SAMPLES	4096
#define EXPO_LABELS	4

struct label {
	char	 name[64];
	char	 value[256];
};

struct sample {
	char		 name[128];
	struct label	 labels[EXPO_LABELS];
	size_t		 nlabels;
	double		 value;
	int		 family;
};

struct family {
	char	 name[128];
	char	 help[256];
	char	 type[16];
};

struct expo {
	struct family	 fam[EXPO_FAMILIES];
	size_t		 nfam;
	struct sample	*s;
	size_t		 ns;
	char		 err[256];
};

static bool
name_ok(const char *s, size_t n, bool colon)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
		    (colon && c == ':');

		if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
			return false;
	}
	return true;
}

static bool
parse_value(const char *s, double *ret)
{
	char *end;

	if (strcmp(s, "+Inf") == 0) {
		*ret = INFINITY;
		return true;
	}
	if (strcmp(s, "-Inf") == 0) {
		*ret = -INFINITY;
		return true;
	}
	if (strcmp(s, "NaN") == 0) {
		*ret = NAN;
		return true;
	}
	if (*s == '\0' || strchr("0123456789+-.", *s) == NULL)
		return false;
	*ret = strtod(s, &end);
	return *end == '\0';
}

static bool
expo_fail(struct expo *e, int line, const char *why)
{
	(void)snprintf(e->err, sizeof(e->err), "line %d: %s", line, why);
	return false;
}

/* Whether sample 'name' belongs to family 'f' (histograms: the suffixes). */
static bool
belongs(const struct family *f, const char *name)
{
	size_t n = strlen(f->name);

	if (strcmp(name, f->name) == 0)
		return strcmp(f->type, "histogram") != 0;
	if (strcmp(f->type, "histogram") != 0 || strncmp(name, f->name, n) != 0)
		return false;
	return strcmp(name + n, "_bucket") == 0 || strcmp(name + n, "_sum") == 0 ||
	    strcmp(name + n, "_count") == 0;
}

static bool
parse_sample(struct expo *e, int line, char *p)
{
	struct sample *s;
	char *sp;
	size_t n = strcspn(p, "{ ");

	if (e->ns == EXPO_SAMPLES)
		return expo_fail(e, line, "too many samples");
	s = &e->s[e->ns];
	memset(s, 0, sizeof(*s));
	if (!name_ok(p, n, true) || n >= sizeof(s->name))
		return expo_fail(e, line, "bad metric name");
	memcpy(s->name, p, n);
	p += n;
	if (*p == '{') {
		p++;
		while (*p != '}') {
			struct label *l;
			size_t o = 0;

			if (s->nlabels == EXPO_LABELS)
				return expo_fail(e, line, "too many labels");
			l = &s->labels[s->nlabels++];
			n = strcspn(p, "=");
			if (!name_ok(p, n, false) || n >= sizeof(l->name) || p[n] != '=' ||
			    p[n + 1] != '"')
				return expo_fail(e, line, "bad label name");
			memcpy(l->name, p, n);
			p += n + 2;
			while (*p != '"') {
				char c = *p++;

				if (c == '\0' || c == '\n')
					return expo_fail(e, line, "unterminated label value");
				if (c == '\\') {
					c = *p++;
					if (c == 'n')
						c = '\n';
					else if (c != '\\' && c != '"')
						return expo_fail(e, line, "bad escape");
				}
				if (o + 1 >= sizeof(l->value))
					return expo_fail(e, line, "label value too long");
				l->value[o++] = c;
			}
			p++;
			if (*p == ',')
				p++;
			else if (*p != '}')
				return expo_fail(e, line, "expected , or }");
		}
		p++;
	}
	if (*p != ' ')
		return expo_fail(e, line, "expected a space before the value");
	p++;
	if ((sp = strchr(p, ' ')) != NULL)
		*sp = '\0';		/* a timestamp may follow; we never send one */
	if (sp != NULL)
		return expo_fail(e, line, "unexpected timestamp");
	if (!parse_value(p, &s->value))
		return expo_fail(e, line, "bad value");
	if (e->nfam == 0 || !belongs(&e->fam[e->nfam - 1], s->name))
		return expo_fail(e, line, "sample outside its family's TYPE");
	s->family = (int)e->nfam - 1;
	e->ns++;
	return true;
}

static bool
parse_comment(struct expo *e, int line, char *p)
{
	char *name, *rest;
	struct family *f;

	if (strncmp(p, "# HELP ", 7) != 0 && strncmp(p, "# TYPE ", 7) != 0)
		return true;		/* other comments are allowed */
	name = p + 7;
	if ((rest = strchr(name, ' ')) == NULL)
		return expo_fail(e, line, "HELP or TYPE without text");
	*rest++ = '\0';
	if (!name_ok(name, strlen(name), true))
		return expo_fail(e, line, "bad family name");
	if (p[2] == 'H') {
		for (size_t i = 0; i < e->nfam; i++)
			if (strcmp(e->fam[i].name, name) == 0)
				return expo_fail(e, line, "family declared twice");
		if (e->nfam == EXPO_FAMILIES)
			return expo_fail(e, line, "too many families");
		f = &e->fam[e->nfam++];
		memset(f, 0, sizeof(*f));
		(void)kc_strlcpy(f->name, name, sizeof(f->name));
		(void)kc_strlcpy(f->help, rest, sizeof(f->help));
		return true;
	}
	if (e->nfam == 0 || strcmp(e->fam[e->nfam - 1].name, name) != 0 ||
	    e->fam[e->nfam - 1].type[0] != '\0')
		return expo_fail(e, line, "TYPE not right after its HELP");
	if (strcmp(rest, "counter") != 0 && strcmp(rest, "gauge") != 0 &&
	    strcmp(rest, "histogram") != 0 && strcmp(rest, "summary") != 0 &&
	    strcmp(rest, "untyped") != 0)
		return expo_fail(e, line, "unknown type");
	(void)kc_strlcpy(e->fam[e->nfam - 1].type, rest, sizeof(e->fam[0].type));
	return true;
}

static bool
same_labels_but_le(const struct sample *a, const struct sample *b)
{
	size_t na = 0, nb = 0;

	for (size_t i = 0; i < a->nlabels; i++) {
		if (strcmp(a->labels[i].name, "le") == 0)
			continue;
		na++;
		for (size_t j = 0; j < b->nlabels; j++)
			if (strcmp(a->labels[i].name, b->labels[j].name) == 0 &&
			    strcmp(a->labels[i].value, b->labels[j].value) != 0)
				return false;
	}
	for (size_t j = 0; j < b->nlabels; j++)
		nb += strcmp(b->labels[j].name, "le") != 0;
	return na == nb;
}

static const char *
label_of(const struct sample *s, const char *name)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (strcmp(s->labels[i].name, name) == 0)
			return s->labels[i].value;
	return NULL;
}

/* Histogram rules, per series (samples with the same labels but le). */
static bool
check_histograms(struct expo *e)
{
	for (size_t i = 0; i < e->ns; i++) {
		const struct sample *c = &e->s[i];
		const struct family *f = &e->fam[c->family];
		double prev_le = -INFINITY, prev = 0, inf = -1;
		size_t n = strlen(f->name);

		if (strcmp(f->type, "histogram") != 0 || strcmp(c->name + n, "_count") != 0)
			continue;
		for (size_t j = 0; j < e->ns; j++) {
			const struct sample *b = &e->s[j];
			const char *le;
			double v;

			if (b->family != c->family || strcmp(b->name + n, "_bucket") != 0 ||
			    !same_labels_but_le(b, c))
				continue;
			if ((le = label_of(b, "le")) == NULL || !parse_value(le, &v))
				return expo_fail(e, 0, "bucket without a good le");
			if (!(v > prev_le))
				return expo_fail(e, 0, "buckets not in increasing le order");
			if (b->value < prev)
				return expo_fail(e, 0, "buckets not cumulative");
			prev_le = v;
			prev = b->value;
			if (isinf(v))
				inf = b->value;
		}
		if (inf < 0)
			return expo_fail(e, 0, "histogram without le=\"+Inf\"");
		if (inf != c->value)
			return expo_fail(e, 0, "le=\"+Inf\" differs from _count");
	}
	return true;
}

/* Parses 'text' into 'e' (e->s allocated; expo_free()). */
static bool
expo_parse(struct expo *e, const char *text)
{
	char *copy = strdup(text), *p = copy, *nl;
	int line = 0;
	bool ok = true;

	memset(e, 0, sizeof(*e));
	ck_assert_ptr_nonnull(copy);
	e->s = calloc(EXPO_SAMPLES, sizeof(*e->s));
	ck_assert_ptr_nonnull(e->s);
	if (*text == '\0' || text[strlen(text) - 1] != '\n')
		ok = expo_fail(e, 0, "the text must end with a line feed");
	while (ok && *p != '\0') {
		line++;
		nl = strchr(p, '\n');
		*nl = '\0';
		if (*p == '\0')
			ok = expo_fail(e, line, "empty line");
		else if (*p == '#')
			ok = parse_comment(e, line, p);
		else
			ok = parse_sample(e, line, p);
		p = nl + 1;
	}
	free(copy);
	for (size_t i = 0; ok && i < e->nfam; i++)
		if (e->fam[i].type[0] == '\0')
			ok = expo_fail(e, 0, "a family without TYPE");
	return ok && check_histograms(e);
}

static void
expo_free(struct expo *e)
{
	free(e->s);
	e->s = NULL;
}

/*
 * The sample 'name' whose labels include every "k=v" pair given (NULL
 * ends them), or NULL.
 */
static const struct sample *
find(const struct expo *e, const char *name, ...)
{
	for (size_t i = 0; i < e->ns; i++) {
		const struct sample *s = &e->s[i];
		va_list ap;
		const char *kv;
		bool match = strcmp(s->name, name) == 0;

		va_start(ap, name);
		while (match && (kv = va_arg(ap, const char *)) != NULL) {
			const char *eq = strchr(kv, '=');
			bool found = false;

			for (size_t j = 0; j < s->nlabels; j++)
				found = found || (strncmp(s->labels[j].name, kv,
				    (size_t)(eq - kv)) == 0 &&
				    s->labels[j].name[eq - kv] == '\0' &&
				    strcmp(s->labels[j].value, eq + 1) == 0);
			match = found;
		}
		va_end(ap);
		if (match)
			return s;
	}
	return NULL;
}

#define VALUE(e, ...)	value_of(find((e), __VA_ARGS__, (const char *)NULL), #__VA_ARGS__)

static double
value_of(const struct sample *s, const char *what)
{
	ck_assert_msg(s != NULL, "no sample %s", what);
	return s->value;
}

static size_t
count_samples(const struct expo *e, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < e->ns; i++)
		n += strcmp(e->s[i].name, name) == 0;
	return n;
}

static const struct family *
family_of(const struct expo *e, const char *name)
{
	for (size_t i = 0; i < e->nfam; i++)
		if (strcmp(e->fam[i].name, name) == 0)
			return &e->fam[i];
	return NULL;
}

/* Renders 'm' and parses it; fails the test on a format error. */
static void
scrape(struct metrics *m, struct expo *e)
{
	struct kc_buf b;

	kc_buf_init(&b, METRICS_TEXT_MAX);
	ck_assert_int_eq(metrics_render(m, &b), 0);
	ck_assert_msg(expo_parse(e, kc_buf_str(&b)), "%s\n%s", e->err, kc_buf_str(&b));
	kc_buf_free(&b);
}

static void
teardown(void)
{
	fail_alloc_after(SIZE_MAX);
}

/* ---- the parser itself ------------------------------------------------------- */

START_TEST(test_parser_rejects)
{
	static const char *const bad[] = {
		"x 1\n",						/* no TYPE */
		"# HELP x h\n# TYPE x counter\nx 1",			/* no final LF */
		"# HELP x h\n# TYPE x counter\nx{a=\"\\t\"} 1\n",	/* bad escape */
		"# HELP x h\n# TYPE x counter\nx{a=\"v} 1\n",		/* unterminated */
		"# HELP x h\n# TYPE x counter\nx one\n",		/* bad value */
		"# HELP x h\n# TYPE x counter\ny 1\n",			/* wrong family */
		"# HELP x h\n# TYPE x counter\n# HELP x h\n# TYPE x counter\n",
		"# HELP 1x h\n# TYPE 1x counter\n",			/* bad name */
		"# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\n"
		    "h_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",	/* not cumulative */
		"# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\n"
		    "h_count 1\n",					/* no +Inf */
		"# HELP h h\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\n"
		    "h_count 1\n",					/* +Inf != count */
	};
	struct expo e;

	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
		ck_assert_msg(!expo_parse(&e, bad[i]), "accepted: %s", bad[i]);
		expo_free(&e);
	}
	ck_assert(expo_parse(&e, "# HELP x h\n# TYPE x counter\nx{a=\"q\\\"\\\\\\n\"} 1.5\n"));
	ck_assert_str_eq(e.s[0].labels[0].value, "q\"\\\n");
	ck_assert(e.s[0].value == 1.5);
	expo_free(&e);
}
END_TEST

/* ---- the registry and the format --------------------------------------------- */

START_TEST(test_families_and_values)
{
	struct metrics *m = NULL;
	struct expo e;
	static const char *const counters[] = {
		"trainyard_reconcile_total", "trainyard_workqueue_adds_total",
		"trainyard_workqueue_retries_total", "trainyard_api_requests_total",
		"trainyard_watch_restarts_total", "trainyard_relists_total",
		"trainyard_sessions_ended_total", "trainyard_pods_created_total",
		"trainyard_pods_deleted_total", "process_cpu_seconds_total",
	};
	static const char *const histograms[] = {
		"trainyard_reconcile_duration_seconds",
		"trainyard_workqueue_queue_duration_seconds",
		"trainyard_workqueue_work_duration_seconds",
		"trainyard_api_request_duration_seconds",
		"trainyard_session_duration_seconds",
		"trainyard_time_to_all_running_seconds",
	};
	static const char *const gauges[] = {
		"trainyard_workqueue_depth", "trainyard_runs", "trainyard_leader",
		"trainyard_build_info", "process_resident_memory_bytes",
	};

	ck_assert_int_eq(metrics_new("1.2.3", &m), 0);
	metrics_reconcile(m, "success", 0.003);
	metrics_reconcile(m, "success", 0.2);
	metrics_reconcile(m, "error", 7);
	metrics_reconcile(m, "success", 1000);		/* past the last bucket */
	metrics_pods_created(m, 4);
	metrics_pods_created(m, 1);
	metrics_pods_deleted(m, 2);
	metrics_session_ended(m, "Succeeded", 3600);
	metrics_session_ended(m, "Failed", 10);
	metrics_all_running(m, 12.5);
	metrics_set_leader(m, true);
	scrape(m, &e);

	for (size_t i = 0; i < KC_ARRAY_SIZE(counters); i++) {
		const struct family *f = family_of(&e, counters[i]);

		ck_assert_msg(f != NULL, "no family %s", counters[i]);
		ck_assert_str_eq(f->type, "counter");
		ck_assert_str_ne(f->help, "");
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(histograms); i++) {
		const struct family *f = family_of(&e, histograms[i]);

		ck_assert_msg(f != NULL, "no family %s", histograms[i]);
		ck_assert_str_eq(f->type, "histogram");
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(gauges); i++) {
		const struct family *f = family_of(&e, gauges[i]);

		ck_assert_msg(f != NULL, "no family %s", gauges[i]);
		ck_assert_str_eq(f->type, "gauge");
	}
	/* Conventions: every trainyard_ counter ends in _total; gauges do not. */
	for (size_t i = 0; i < e.nfam; i++) {
		size_t n = strlen(e.fam[i].name);
		bool total = n > 6 && strcmp(e.fam[i].name + n - 6, "_total") == 0;

		ck_assert_msg(strncmp(e.fam[i].name, "trainyard_", 10) == 0 ||
		    strncmp(e.fam[i].name, "process_", 8) == 0, "%s", e.fam[i].name);
		ck_assert_msg(total == (strcmp(e.fam[i].type, "counter") == 0), "%s",
		    e.fam[i].name);
	}

	ck_assert(VALUE(&e, "trainyard_reconcile_total", "result=success") == 3);
	ck_assert(VALUE(&e, "trainyard_reconcile_total", "result=error") == 1);
	ck_assert(VALUE(&e, "trainyard_reconcile_duration_seconds_bucket", "result=success",
	    "le=0.005") == 1);
	ck_assert(VALUE(&e, "trainyard_reconcile_duration_seconds_bucket", "result=success",
	    "le=0.25") == 2);
	ck_assert(VALUE(&e, "trainyard_reconcile_duration_seconds_bucket", "result=success",
	    "le=60") == 2);
	ck_assert(VALUE(&e, "trainyard_reconcile_duration_seconds_bucket", "result=success",
	    "le=+Inf") == 3);
	ck_assert(VALUE(&e, "trainyard_reconcile_duration_seconds_count",
	    "result=success") == 3);
	ck_assert(fabs(VALUE(&e, "trainyard_reconcile_duration_seconds_sum",
	    "result=success") - 1000.203) < 1e-9);
	ck_assert(VALUE(&e, "trainyard_reconcile_duration_seconds_bucket", "result=error",
	    "le=5") == 0);
	ck_assert(VALUE(&e, "trainyard_reconcile_duration_seconds_bucket", "result=error",
	    "le=10") == 1);
	ck_assert(VALUE(&e, "trainyard_pods_created_total") == 5);
	ck_assert(VALUE(&e, "trainyard_pods_deleted_total") == 2);
	ck_assert(VALUE(&e, "trainyard_sessions_ended_total", "reason=Succeeded") == 1);
	ck_assert(VALUE(&e, "trainyard_sessions_ended_total", "reason=Failed") == 1);
	ck_assert(VALUE(&e, "trainyard_session_duration_seconds_count") == 2);
	ck_assert(VALUE(&e, "trainyard_session_duration_seconds_bucket", "le=60") == 1);
	ck_assert(VALUE(&e, "trainyard_time_to_all_running_seconds_bucket", "le=10") == 0);
	ck_assert(VALUE(&e, "trainyard_time_to_all_running_seconds_bucket", "le=20") == 1);
	ck_assert(VALUE(&e, "trainyard_leader") == 1);
	ck_assert(VALUE(&e, "trainyard_build_info", "version=1.2.3") == 1);
	/* Unlabelled families show 0 before anything happened. */
	ck_assert(VALUE(&e, "trainyard_workqueue_depth") == 0);
	ck_assert(VALUE(&e, "trainyard_workqueue_queue_duration_seconds_count") == 0);
	ck_assert(VALUE(&e, "process_resident_memory_bytes") > 0);
	ck_assert(VALUE(&e, "process_cpu_seconds_total") >= 0);
	expo_free(&e);

	metrics_set_leader(m, false);
	scrape(m, &e);
	ck_assert(VALUE(&e, "trainyard_leader") == 0);
	/* No version before discovery. */
	ck_assert_ptr_null(find(&e, "trainyard_api_version_info", (const char *)NULL));
	expo_free(&e);

	/* One series: the version followed now. */
	metrics_set_api_version(m, "trainyard.dev", "v1alpha1");
	metrics_set_api_version(m, "trainyard.dev", "v1beta1");
	scrape(m, &e);
	ck_assert_str_eq(family_of(&e, "trainyard_api_version_info")->type, "gauge");
	ck_assert(VALUE(&e, "trainyard_api_version_info", "group=trainyard.dev",
	    "version=v1beta1") == 1);
	ck_assert_ptr_null(find(&e, "trainyard_api_version_info", "version=v1alpha1",
	    (const char *)NULL));
	expo_free(&e);
	metrics_free(m);
}
END_TEST

START_TEST(test_label_values_escaped_and_bounded)
{
	struct metrics *m = NULL;
	struct expo e;
	char longv[200];
	const struct sample *s;

	ck_assert_int_eq(metrics_new(NULL, &m), 0);
	metrics_session_ended(m, "quote\" back\\ line\nend", 1);
	metrics_session_ended(m, "bad\xff utf8 \x01 ctl", 1);
	metrics_session_ended(m, "", 1);
	memset(longv, 'r', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = '\0';
	metrics_session_ended(m, longv, 1);
	metrics_session_ended(m, NULL, 1);
	scrape(m, &e);
	ck_assert(VALUE(&e, "trainyard_sessions_ended_total",
	    "reason=quote\" back\\ line\nend") == 1);
	ck_assert(VALUE(&e, "trainyard_sessions_ended_total", "reason=bad? utf8 ? ctl") == 1);
	/* "" and NULL are one series */
	ck_assert(VALUE(&e, "trainyard_sessions_ended_total", "reason=") == 2);
	ck_assert(VALUE(&e, "trainyard_build_info", "version=unknown") == 1);
	s = NULL;
	for (size_t i = 0; i < e.ns; i++)
		if (strcmp(e.s[i].name, "trainyard_sessions_ended_total") == 0 &&
		    e.s[i].labels[0].value[0] == 'r')
			s = &e.s[i];
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(strlen(s->labels[0].value), METRICS_LABEL_MAX - 1);
	expo_free(&e);
	metrics_free(m);
}
END_TEST

START_TEST(test_cardinality_is_bounded)
{
	struct metrics *m = NULL;
	struct expo e;
	char reason[32];
	size_t n;

	ck_assert_int_eq(metrics_new("v", &m), 0);
	for (int i = 0; i < 1000; i++) {
		(void)snprintf(reason, sizeof(reason), "reason-%d", i);
		metrics_session_ended(m, reason, 1);
	}
	metrics_session_ended(m, "reason-0", 1);	/* an existing series still counts */
	scrape(m, &e);
	n = count_samples(&e, "trainyard_sessions_ended_total");
	ck_assert_uint_le(n, 32);
	ck_assert_uint_ge(n, 2);
	ck_assert(VALUE(&e, "trainyard_sessions_ended_total", "reason=reason-0") == 2);
	ck_assert(VALUE(&e, "trainyard_sessions_ended_total", "reason=_other") ==
	    1000 - (double)(n - 1));
	expo_free(&e);

	/* The API family, three labels: every label of the overflow is _other. */
	for (int i = 0; i < 2000; i++) {
		char code[8];

		(void)snprintf(code, sizeof(code), "%d", 100 + i % 900);
		metrics_client_observe(m, &(struct kc_request_info){
			.verb = i % 2 ? "get" : "list", .res = &kc_res_pods,
			.http_code = 100 + i % 900, .latency_ms = 5,
		});
	}
	scrape(m, &e);
	ck_assert_uint_le(count_samples(&e, "trainyard_api_requests_total"), 512);
	ck_assert(VALUE(&e, "trainyard_api_requests_total", "verb=_other",
	    "resource=_other", "code=_other") > 0);
	expo_free(&e);
	metrics_free(m);
}
END_TEST

START_TEST(test_client_and_queue_observers)
{
	struct metrics *m = NULL;
	struct expo e;

	ck_assert_int_eq(metrics_new("v", &m), 0);
	metrics_client_observe(m, &(struct kc_request_info){ .verb = "create",
	    .res = &kc_res_pods, .method = "POST", .http_code = 201, .latency_ms = 30 });
	metrics_client_observe(m, &(struct kc_request_info){ .verb = "create",
	    .res = &kc_res_pods, .method = "POST", .http_code = 201, .latency_ms = 3000 });
	metrics_client_observe(m, &(struct kc_request_info){ .verb = "get",
	    .res = NULL, .method = "GET", .http_code = 0, .result = KC_ETRANSPORT,
	    .latency_ms = 10000 });
	metrics_client_observe(m, &(struct kc_request_info){ .verb = "watch",
	    .res = &kc_res_pods, .method = "GET", .http_code = 200,
	    .latency_ms = 300000 });
	metrics_workqueue_observe(m, KC_WORKQUEUE_LATENCY, 3);
	metrics_workqueue_observe(m, KC_WORKQUEUE_LATENCY, 4000);
	metrics_workqueue_observe(m, KC_WORKQUEUE_WORK, 20);
	scrape(m, &e);
	ck_assert(VALUE(&e, "trainyard_api_requests_total", "verb=create",
	    "resource=pods", "code=201") == 2);
	ck_assert(VALUE(&e, "trainyard_api_requests_total", "verb=get", "resource=none",
	    "code=<error>") == 1);
	ck_assert(VALUE(&e, "trainyard_api_requests_total", "verb=watch",
	    "resource=pods", "code=200") == 1);
	ck_assert(VALUE(&e, "trainyard_api_request_duration_seconds_count", "verb=create",
	    "resource=pods") == 2);
	ck_assert(VALUE(&e, "trainyard_api_request_duration_seconds_bucket", "verb=create",
	    "resource=pods", "le=0.05") == 1);
	ck_assert(fabs(VALUE(&e, "trainyard_api_request_duration_seconds_sum",
	    "verb=create", "resource=pods") - 3.03) < 1e-9);
	/* watches are counted, not timed */
	ck_assert_ptr_null(find(&e, "trainyard_api_request_duration_seconds_count",
	    "verb=watch", (const char *)NULL));
	ck_assert(VALUE(&e, "trainyard_workqueue_queue_duration_seconds_count") == 2);
	ck_assert(VALUE(&e, "trainyard_workqueue_queue_duration_seconds_bucket",
	    "le=0.005") == 1);
	ck_assert(VALUE(&e, "trainyard_workqueue_work_duration_seconds_sum") == 0.02);
	expo_free(&e);
	metrics_free(m);
}
END_TEST

struct collected {
	unsigned	 calls;
	bool		 second;
};

static void
collect(void *arg, struct metrics *m)
{
	struct collected *c = arg;
	static const char *const phases1[] = { "Running", "Pending", "Succeeded" };
	static const uint64_t counts1[] = { 3, 2, 7 };
	static const char *const phases2[] = { "Running" };
	static const uint64_t counts2[] = { 5 };

	c->calls++;
	metrics_collect_workqueue(m, &(struct kc_workqueue_stats){ .depth = 4,
	    .adds = 100, .retries = 9, .unfinished_work_ms = 1500,
	    .longest_running_ms = 1000 });
	metrics_collect_informer(m, "pods", &(struct kc_informer_stats){
	    .watch_restarts = 6, .relists = 1, .items = 40 });
	metrics_collect_informer(m, "runs", &(struct kc_informer_stats){
	    .watch_restarts = 2, .relists = 0, .items = 12 });
	if (!c->second)
		metrics_set_runs(m, phases1, counts1, 3);
	else
		metrics_set_runs(m, phases2, counts2, 1);
}

START_TEST(test_collect_callback)
{
	struct metrics *m = NULL;
	struct collected c = { 0 };
	struct expo e;

	ck_assert_int_eq(metrics_new("v", &m), 0);
	metrics_set_collect(m, collect, &c);
	scrape(m, &e);
	ck_assert_uint_eq(c.calls, 1);
	ck_assert(VALUE(&e, "trainyard_workqueue_depth") == 4);
	ck_assert(VALUE(&e, "trainyard_workqueue_adds_total") == 100);
	ck_assert(VALUE(&e, "trainyard_workqueue_retries_total") == 9);
	ck_assert(VALUE(&e, "trainyard_workqueue_unfinished_work_seconds") == 1.5);
	ck_assert(VALUE(&e, "trainyard_workqueue_longest_running_processor_seconds") == 1);
	ck_assert(VALUE(&e, "trainyard_watch_restarts_total", "resource=pods") == 6);
	ck_assert(VALUE(&e, "trainyard_relists_total", "resource=pods") == 1);
	ck_assert(VALUE(&e, "trainyard_watch_restarts_total", "resource=runs") == 2);
	ck_assert(VALUE(&e, "trainyard_cache_objects", "resource=runs") == 12);
	ck_assert(VALUE(&e, "trainyard_runs", "phase=Running") == 3);
	ck_assert(VALUE(&e, "trainyard_runs", "phase=Succeeded") == 7);
	expo_free(&e);
	c.second = true;
	scrape(m, &e);
	ck_assert_uint_eq(c.calls, 2);
	ck_assert(VALUE(&e, "trainyard_runs", "phase=Running") == 5);
	ck_assert(VALUE(&e, "trainyard_runs", "phase=Pending") == 0);
	ck_assert(VALUE(&e, "trainyard_runs", "phase=Succeeded") == 0);
	/* mirrored counters are set, not added */
	ck_assert(VALUE(&e, "trainyard_workqueue_adds_total") == 100);
	expo_free(&e);
	/* unset: no more calls; the values stay as last collected */
	metrics_set_collect(m, NULL, NULL);
	scrape(m, &e);
	ck_assert_uint_eq(c.calls, 2);
	ck_assert(VALUE(&e, "trainyard_runs", "phase=Running") == 5);
	expo_free(&e);
	metrics_free(m);
}
END_TEST

START_TEST(test_enomem)
{
	struct kc_buf b;
	int r;

	for (size_t budget = 0;; budget++) {
		struct metrics *m = NULL;

		fail_alloc_after(budget);
		r = metrics_new("v", &m);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert_ptr_nonnull(m);
			metrics_free(m);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(m);
	}
	/* Observations that cannot allocate are dropped, never fatal. */
	{
		struct metrics *m = NULL;
		struct expo e;

		ck_assert_int_eq(metrics_new("v", &m), 0);
		fail_alloc_after(0);
		metrics_reconcile(m, "success", 1);
		metrics_session_ended(m, "x", 1);
		metrics_pods_created(m, 1);	/* preallocated: still counts */
		kc_buf_init(&b, METRICS_TEXT_MAX);
		r = metrics_render(m, &b);
		fail_alloc_after(SIZE_MAX);
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_uint_eq(b.len, 0);
		kc_buf_free(&b);
		scrape(m, &e);
		ck_assert_ptr_null(find(&e, "trainyard_reconcile_total", (const char *)NULL));
		ck_assert(VALUE(&e, "trainyard_pods_created_total") == 1);
		expo_free(&e);
		/* a small ceiling is -E2BIG */
		kc_buf_init(&b, 100);
		ck_assert_int_eq(metrics_render(m, &b), -E2BIG);
		kc_buf_free(&b);
		metrics_free(m);
	}
}
END_TEST

START_TEST(test_parse_addr)
{
	static const char *const bad[] = {
		"8080", "host:99999", "a:b:1", "[::1]8080", "host:", "[]:80", " x:80",
		"h/x:80", "[::1:80", "host:-1", "host:80x",
	};
	char host[64];
	int port;

	ck_assert_int_eq(metrics_parse_addr(":8080", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "");
	ck_assert_int_eq(port, 8080);
	ck_assert_int_eq(metrics_parse_addr("127.0.0.1:0", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "127.0.0.1");
	ck_assert_int_eq(port, 0);
	ck_assert_int_eq(metrics_parse_addr("[::1]:9", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "::1");
	ck_assert_int_eq(port, 9);
	ck_assert_int_eq(metrics_parse_addr("0", host, sizeof(host), &port), 0);
	ck_assert_int_eq(port, -1);
	ck_assert_int_eq(metrics_parse_addr(NULL, host, sizeof(host), &port), 0);
	ck_assert_int_eq(port, -1);
	ck_assert_int_eq(metrics_parse_addr("", host, sizeof(host), &port), 0);
	ck_assert_int_eq(port, -1);
	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++)
		ck_assert_msg(metrics_parse_addr(bad[i], host, sizeof(host), &port) == -EINVAL,
		    "accepted %s", bad[i]);
	ck_assert_int_eq(metrics_parse_addr("averyveryverylonghostname:80", host, 8, &port),
	    -EINVAL);
}
END_TEST

/* ---- HTTP -------------------------------------------------------------------- */

struct fetched {
	int		 status;
	char		 ctype[128];
	char		*body;
};

static void
fetch(int port, const char *method, const char *path, struct fetched *f)
{
	char server[64];
	struct kc_rest_config rc = { .server = server };
	struct kc_status st = { 0 };
	struct kc_http_resp resp = { 0 };
	void *h = NULL;
	int r;

	(void)snprintf(server, sizeof(server), "http://127.0.0.1:%d", port);
	r = kc_transport_curl.open(&(struct kc_transport_opts){ .rc = &rc,
	    .timeout_ms = 5000 }, &h, &st);
	ck_assert_msg(r == 0, "open: %s", st.message);
	r = kc_transport_curl.request(h, &(struct kc_http_req){ .method = method,
	    .path = path, .accept = "text/plain",
	    .body = strcmp(method, "POST") == 0 ? "{}" : NULL,
	    .body_len = strcmp(method, "POST") == 0 ? 2 : 0,
	    .content_type = strcmp(method, "POST") == 0 ? "application/json" : NULL,
	}, &resp, &st);
	ck_assert_msg(r == 0, "%s %s: %s", method, path, st.message);
	f->status = resp.status;
	(void)kc_strlcpy(f->ctype, resp.content_type, sizeof(f->ctype));
	f->body = strdup(kc_buf_str(&resp.body));
	ck_assert_ptr_nonnull(f->body);
	kc_http_resp_free(&resp);
	kc_transport_curl.close(h);
}

/* Sends 'req' raw and returns what came back until the server closed. */
static char *
raw(int port, const char *req)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { 5, 0 };
	char *out = calloc(1, 65536);
	size_t len = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	ck_assert_ptr_nonnull(out);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while (len < 65535 && (n = read(fd, out + len, 65535 - len)) > 0)
		len += (size_t)n;
	close(fd);
	return out;
}

static void
http_setup(void)
{
	ck_assert_int_eq(kc_transport_global_init(), 0);
}

static void
http_teardown(void)
{
	fail_alloc_after(SIZE_MAX);
	kc_transport_global_cleanup();
}

static bool hook_is_ready;

/* A metrics_ready_fn for /readyz/webhook. */
static bool
hook_ready(void *arg, char *why, size_t size)
{
	bool ok = *(bool *)arg;

	(void)snprintf(why, size, "%s", ok ? "" : "no certificate");
	return ok;
}

START_TEST(test_http_endpoints)
{
	struct metrics *m = NULL;
	struct kc_status st = { 0 };
	struct fetched f;
	struct expo e;
	int mp, hp;
	char *text;

	ck_assert_int_eq(metrics_new("9.9.9", &m), 0);
	ck_assert_int_eq(metrics_start(m, &(struct metrics_opts){
		.metrics_addr = "127.0.0.1:0", .health_addr = "localhost:0",
	}, &st), 0);
	mp = metrics_port(m, false);
	hp = metrics_port(m, true);
	ck_assert_int_gt(mp, 0);
	ck_assert_int_gt(hp, 0);
	ck_assert_int_ne(mp, hp);
	metrics_reconcile(m, "success", 0.01);

	fetch(mp, "GET", "/metrics", &f);
	ck_assert_int_eq(f.status, 200);
	ck_assert_str_eq(f.ctype, "text/plain; version=0.0.4; charset=utf-8");
	ck_assert_msg(expo_parse(&e, f.body), "%s", e.err);
	ck_assert(VALUE(&e, "trainyard_reconcile_total", "result=success") == 1);
	ck_assert(VALUE(&e, "trainyard_build_info", "version=9.9.9") == 1);
	expo_free(&e);
	free(f.body);

	fetch(hp, "GET", "/healthz", &f);
	ck_assert_int_eq(f.status, 200);
	ck_assert_str_eq(f.body, "ok\n");
	free(f.body);

	fetch(hp, "GET", "/readyz", &f);
	ck_assert_int_eq(f.status, 500);
	ck_assert_str_eq(f.body, "not ready: starting\n");
	free(f.body);
	metrics_set_ready(m, false, "caches not synced");
	fetch(hp, "GET", "/readyz?verbose", &f);
	ck_assert_int_eq(f.status, 500);
	ck_assert_str_eq(f.body, "not ready: caches not synced\n");
	free(f.body);
	metrics_set_ready(m, true, NULL);
	fetch(hp, "GET", "/readyz", &f);
	ck_assert_int_eq(f.status, 200);
	ck_assert_str_eq(f.body, "ok\n");
	free(f.body);

	/* each listener serves its own paths only */
	fetch(hp, "GET", "/metrics", &f);
	ck_assert_int_eq(f.status, 404);
	free(f.body);
	fetch(mp, "GET", "/healthz", &f);
	ck_assert_int_eq(f.status, 404);
	free(f.body);
	fetch(mp, "GET", "/readyz", &f);
	ck_assert_int_eq(f.status, 404);
	free(f.body);

	/* /readyz/webhook: 404 without a webhook, then what it says */
	fetch(hp, "GET", "/readyz/webhook", &f);
	ck_assert_int_eq(f.status, 404);
	free(f.body);
	metrics_set_webhook_ready(m, hook_ready, &hook_is_ready);
	fetch(hp, "GET", "/readyz/webhook", &f);
	ck_assert_int_eq(f.status, 500);
	ck_assert_str_eq(f.body, "not ready: no certificate\n");
	free(f.body);
	hook_is_ready = true;
	fetch(hp, "GET", "/readyz/webhook", &f);
	ck_assert_int_eq(f.status, 200);
	ck_assert_str_eq(f.body, "ok\n");
	free(f.body);
	metrics_set_webhook_ready(m, NULL, NULL);

	fetch(mp, "GET", "/nope", &f);
	ck_assert_int_eq(f.status, 404);
	free(f.body);
	fetch(mp, "GET", "/metrics/", &f);
	ck_assert_int_eq(f.status, 404);
	free(f.body);
	fetch(mp, "POST", "/metrics", &f);
	ck_assert_int_eq(f.status, 405);
	free(f.body);
	fetch(hp, "DELETE", "/healthz", &f);
	ck_assert_int_eq(f.status, 405);
	free(f.body);

	/* HEAD: the headers, no body */
	text = raw(hp, "HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
	ck_assert_msg(strncmp(text, "HTTP/1.1 200", 12) == 0, "%s", text);
	ck_assert_ptr_nonnull(strstr(text, "\r\n\r\n"));
	ck_assert_str_eq(strstr(text, "\r\n\r\n"), "\r\n\r\n");
	free(text);
	text = raw(mp, "PUT /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
	ck_assert_msg(strncmp(text, "HTTP/1.1 405", 12) == 0, "%s", text);
	ck_assert_ptr_nonnull(strcasestr(text, "allow: GET, HEAD"));
	free(text);
	/* garbage and oversized headers do not take the server down */
	free(raw(mp, "\x01\x02garbage\r\n\r\n"));
	{
		static char big[16384];

		memset(big, 'a', sizeof(big) - 1);
		memcpy(big, "GET /metrics HTTP/1.1\r\nX-Big: ", 30);
		free(raw(mp, big));
	}
	fetch(mp, "GET", "/metrics", &f);
	ck_assert_int_eq(f.status, 200);
	free(f.body);
	/* the guards' counters, per listener: the garbage is one malformed */
	fetch(mp, "GET", "/metrics", &f);
	ck_assert_msg(expo_parse(&e, f.body), "%s", e.err);
	ck_assert(VALUE(&e, "trainyard_http_connections_dropped_total",
	    "listener=metrics", "reason=malformed") >= 1);
	ck_assert(VALUE(&e, "trainyard_http_connections_dropped_total",
	    "listener=health", "reason=timeout_headers") == 0);
	ck_assert(VALUE(&e, "trainyard_http_connections_accepted_total", "listener=health") >= 9);
	ck_assert(VALUE(&e, "trainyard_http_connections", "listener=metrics") >= 1);
	expo_free(&e);
	free(f.body);

	metrics_stop(m);
	metrics_stop(m);
	ck_assert_int_eq(metrics_port(m, false), -1);
	metrics_free(m);
}
END_TEST

START_TEST(test_http_start_errors)
{
	struct metrics *a = NULL, *b = NULL;
	struct kc_status st = { 0 };
	int port;

	ck_assert_int_eq(metrics_new("v", &a), 0);
	ck_assert_int_eq(metrics_new("v", &b), 0);
	ck_assert_int_eq(metrics_start(a, &(struct metrics_opts){
		.metrics_addr = "nonsense", .health_addr = "0" }, &st), KC_ECONFIG);
	ck_assert_ptr_nonnull(strstr(st.message, "nonsense"));
	/* both off: nothing to start */
	ck_assert_int_eq(metrics_start(a, &(struct metrics_opts){
		.metrics_addr = "0", .health_addr = NULL }, &st), 0);
	ck_assert_int_eq(metrics_port(a, false), -1);
	ck_assert_int_eq(metrics_port(a, true), -1);

	ck_assert_int_eq(metrics_start(a, &(struct metrics_opts){
		.metrics_addr = "127.0.0.1:0", .health_addr = "0" }, &st), 0);
	port = metrics_port(a, false);
	ck_assert_int_gt(port, 0);
	ck_assert_int_eq(metrics_port(a, true), -1);
	ck_assert_int_eq(metrics_start(a, &(struct metrics_opts){
		.metrics_addr = "127.0.0.1:0" }, &st), -EBUSY);
	{
		char addr[64];

		/* the port is taken */
		(void)snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
		ck_assert_int_eq(metrics_start(b, &(struct metrics_opts){
			.metrics_addr = addr }, &st), KC_ECONFIG);
		ck_assert_ptr_nonnull(strstr(st.message, addr));
		ck_assert_int_eq(metrics_port(b, false), -1);
		/* the same address twice is one listener */
		metrics_stop(a);
		ck_assert_int_eq(metrics_start(b, &(struct metrics_opts){
			.metrics_addr = addr, .health_addr = addr }, &st), 0);
		ck_assert_int_eq(metrics_port(b, false), port);
		ck_assert_int_eq(metrics_port(b, true), port);
	}
	metrics_free(a);
	metrics_free(b);
}
END_TEST

Suite *
ctl_metrics_suite(void)
{
	Suite *s = suite_create("ctl_metrics");
	TCase *tc = tcase_create("registry");
	TCase *th = tcase_create("http");

	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_parser_rejects);
	tcase_add_test(tc, test_families_and_values);
	tcase_add_test(tc, test_label_values_escaped_and_bounded);
	tcase_add_test(tc, test_cardinality_is_bounded);
	tcase_add_test(tc, test_client_and_queue_observers);
	tcase_add_test(tc, test_collect_callback);
	tcase_add_test(tc, test_enomem);
	tcase_add_test(tc, test_parse_addr);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(th, http_setup, http_teardown);
	tcase_set_timeout(th, 60);
	tcase_add_test(th, test_http_endpoints);
	tcase_add_test(th, test_http_start_errors);
	suite_add_tcase(s, th);
	return s;
}

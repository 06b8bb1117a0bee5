/*
 * bench.c: helpers of the benchmark programs (bench.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <kc/alloc.h>
#include <kc/str.h>

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

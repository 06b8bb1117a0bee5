/*
 * bench.h: what the benchmark programs of tests/bench/ share (bench.c):
 * the monotonic clock, CPU time of this process and of another one from
 * /proc, /proc/PID/status sizes, latency percentiles and count flags.
 */
#ifndef TY_BENCH_H
#define TY_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <kc/macro.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t	bench_now_ns(void);

/* User + system CPU seconds of this process so far. */
double		bench_cpu_self_s(void);

/*
 * User and system CPU seconds of 'pid' (/proc/PID/stat fields 14 and 15,
 * counted after the parenthesized command name, which may hold spaces).
 * 0, -errno or -EINVAL.
 */
int		bench_proc_cpu(pid_t pid, double *ret_user, double *ret_sys) _must_check_;

/* Their sum; -1 when 'pid' <= 0 or unreadable. */
double		bench_proc_cpu_s(pid_t pid);

/* A "Key:   123 kB" line of /proc/PID/status, in kB. 0, -ENOENT or -errno. */
int		bench_proc_status_kb(pid_t pid, const char *key, uint64_t *ret) _must_check_;

/* Sorts latencies in place, ascending. */
void		bench_sort_u64(uint64_t *v, size_t n);

/* Nearest-rank percentile 'q' (0..1) in ms of a sorted array; 0 when empty. */
double		bench_pct_ms(const uint64_t *v, size_t n, double q);

/*
 * A count flag's value from lo to hi into '*ret': 0, or -EINVAL with
 * "PROG: FLAG: want a number from LO to HI, not "ARG"" on stderr.
 */
int		bench_parse_count(const char *prog, const char *flag, const char *arg,
		    unsigned lo, unsigned hi, unsigned *ret) _must_check_;

#endif

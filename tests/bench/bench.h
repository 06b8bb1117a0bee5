/*
 * bench.h: what the benchmark programs of tests/bench/ share (bench.c):
 * the monotonic clock, CPU time of this process and of another one from
 * /proc, /proc/PID/status sizes, latency percentiles and count flags; for
 * the controller's programs, a libkc client, the devcluster's request
 * counters and paged lists.
 */
#ifndef TY_BENCH_H
#define TY_BENCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>

#include <kc/client.h>
#include <kc/kubeconfig.h>
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

/* Sleeps 'ms' milliseconds (signals do not cut it short). */
void		bench_sleep_ms(unsigned ms);

/* A libkc client of 'rc' with a 60 s timeout and User-Agent AGENT/version. */
int		bench_client_open(const struct kc_rest_config *rc, const char *agent,
		    struct kc_client **ret, struct kc_status *st) _must_check_;

/* Whether a request verb writes: create, update, patch, delete(collection). */
bool		bench_is_write(const char *verb);

/*
 * The devcluster's request counters (GET /devcluster/stats), summed by
 * the program's own kinds of write: a bench_kind_fn gives the kind of a
 * write (verb, resource as "pods" or "runs.trainyard.dev/status"), an
 * index into w[], or BENCH_OWN for the writes the program makes itself.
 */
#define BENCH_KINDS	16
#define BENCH_OWN	(-1)

struct bench_stats {
	uint64_t	 calls;		/* every resource request */
	uint64_t	 writes;	/* create, update, patch, delete(collection) */
	uint64_t	 own;		/* of those, the program's own */
	uint64_t	 conflicts;	/* 409s */
	uint64_t	 errors;	/* every 4xx and 5xx */
	uint64_t	 w[BENCH_KINDS];	/* the others, by kind */
};

typedef int	bench_kind_fn(const char *verb, const char *resource);

/* How a program counts: its name (for messages) and its kinds. */
struct bench_counter {
	const char	*prog;
	bench_kind_fn	*kind;
};

/* The counters now. 0 or < 0 (on stderr). */
int		bench_stats_get(struct kc_client *cl, const struct bench_counter *c,
		    struct bench_stats *ret) _must_check_;

/* b - a, field by field. */
struct bench_stats bench_stats_sub(const struct bench_stats *b, const struct bench_stats *a);

/* The controller's writes: all but the program's own. */
uint64_t	bench_ctl_writes(const struct bench_stats *s);

/*
 * Polls the counters every 250 ms until the controller made no write for
 * settle_ms; the counters at its last write in *ret. 0, or -ETIMEDOUT
 * past 'deadline' (bench_now_ns()).
 */
int		bench_wait_quiet(struct kc_client *cl, const struct bench_counter *c,
		    unsigned settle_ms, uint64_t deadline, struct bench_stats *ret) _must_check_;

/*
 * How many objects of 'res' there are in 'ns' (NULL: all namespaces):
 * items + remainingItemCount of a list with limit=1, one request. 0 or
 * < 0 (on stderr, after PROG).
 */
int		bench_count(struct kc_client *cl, const struct kc_resource *res, const char *ns,
		    const char *prog, uint64_t *ret) _must_check_;

/* One item of a list. */
typedef void	bench_item_fn(void *arg, const struct json_object *item);

/*
 * Lists opts (opts->cont unset) in pages of 500, calling 'fn' for each
 * item, counting each request in '*lists' when not NULL. 0 or < 0 (on
 * stderr, after PROG).
 */
int		bench_list_each(struct kc_client *cl, const struct kc_list_opts *opts,
		    const char *prog, bench_item_fn *fn, void *arg, uint64_t *lists)
		    _must_check_;

/*
 * The status of condition 'type' in obj's status.conditions ("True",
 * "False", "Unknown"), or NULL; its reason in *ret_reason when not NULL.
 */
const char	*bench_condition(const struct json_object *obj, const char *type,
		    const char **ret_reason);

/* A thread's failed requests: how many, and the first one's text. */
struct bench_fails {
	uint64_t	 n;
	char		 first[KC_STATUS_MESSAGE_MAX + 192];
};

/* Counts a failure of WHAT (a name) with error r and status st. */
void		bench_fail(struct bench_fails *f, int r, const char *what,
		    const struct kc_status *st);

/*
 * The head of a load thread's own struct (its first member): the threads
 * of bench_workers_start() wait on *start, then run.
 */
struct bench_worker {
	pthread_t	 tid;
	unsigned	 idx;		/* 0 .. n - 1 */
	pthread_barrier_t *start;	/* wait on it once connected */
	uint64_t	 t_end;		/* bench_now_ns() when done */
	struct bench_fails fails;
};

/*
 * A group of load threads: ws is an array of n structs of 'size' bytes,
 * each beginning with a struct bench_worker (idx and start are set by
 * bench_workers_start(), the rest by the caller).
 */
struct bench_workers {
	void		*ws;
	size_t		 size;
	unsigned	 n;
	pthread_barrier_t bar;
};

/*
 * Starts fn(&ws[i]) in each thread; they connect, wait on the barrier and
 * all start together at *ret_t0. Does not wait for them.
 */
int		bench_workers_start(struct bench_workers *g, void *(*fn)(void *),
		    uint64_t *ret_t0) _must_check_;

/*
 * Joins them: the time the last one finished; their failures added to
 * *ret_errors, each thread's first on stderr after PROG.
 */
uint64_t	bench_workers_join(struct bench_workers *g, const char *prog,
		    uint64_t *ret_errors);

/*
 * The REST config of a kubeconfig, after curl's global init. 0 (the
 * caller calls kc_transport_global_cleanup() when done) or < 0 (on
 * stderr, after PROG; nothing to undo).
 */
int		bench_rest_config(const char *prog, const char *kubeconfig,
		    struct kc_rest_config **ret) _must_check_;

#endif

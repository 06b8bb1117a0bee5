/*
 * logs.h: following a Run's logs (cmd_logs.c) and the line interleaver
 * under it (logmux.c), shared by "logs", "submit --follow" and
 * "run --follow".
 */
#ifndef TY_CLI_LOGS_H
#define TY_CLI_LOGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "cli.h"

/* ---- logmux.c: one node's byte stream into whole, prefixed lines ---------- */

/* Longest line kept; the rest of a longer one is cut and marked. */
#define LOGMUX_LINE_MAX		(16u << 10)
#define LOGMUX_PREFIX_MAX	48
#define LOGMUX_TS_MAX		40

/* Called with each finished output line, '\n' included. */
typedef void	logmux_out_fn(void *arg, const char *line, size_t len);

/*
 * One node's log. The stream is read with timestamps=true, so each line
 * starts with its RFC 3339 time and a space: the source remembers the
 * time of the last line it passed on and how many lines it passed with
 * exactly that time. After logmux_resume() (the connection was lost and
 * is opened again with sinceTime, which has whole seconds) the lines at
 * or before that point are dropped, so nothing is repeated or lost even
 * when several lines share a timestamp. A server must serve the same
 * line with the same timestamp again, as a kubelet does from its log
 * files (and the devcluster from its containers' recorded starts).
 */
struct logmux_src {
	char		 prefix[LOGMUX_PREFIX_MAX];	/* "[node-3] ", maybe coloured */
	bool		 show_ts;	/* keep each line's timestamp */
	/* The line being read. */
	char		 line[LOGMUX_LINE_MAX];
	size_t		 len;
	uint64_t	 cut;		/* bytes of it dropped past LOGMUX_LINE_MAX */
	/* The last line passed on. */
	bool		 have_last;
	int64_t		 last_s;
	int32_t		 last_ns;
	uint64_t	 nlast;		/* lines passed on with exactly that time */
	/* After a resume: drop up to and including (skip_s, skip_ns, skip_n). */
	bool		 skipping;
	int64_t		 skip_s;
	int32_t		 skip_ns;
	uint64_t	 skip_n;
	uint64_t	 lines;		/* lines passed on */
	uint64_t	 dropped;	/* lines dropped as repeats */
	char		 out[LOGMUX_PREFIX_MAX + LOGMUX_TS_MAX + LOGMUX_LINE_MAX + 64];
};

/*
 * 'label' is "node-3"; 'color' an index into the palette, or -1 for
 * none. 'show_ts' keeps the timestamps in the output (--timestamps).
 */
void	logmux_src_init(struct logmux_src *, const char *label, int color, bool show_ts);

/* Splits 'data' into lines (CRLF or LF) and passes on each finished one. */
void	logmux_feed(struct logmux_src *, const char *data, size_t len, logmux_out_fn *fn,
	    void *arg);

/* The stream ended for good: passes on a last line that had no newline. */
void	logmux_finish(struct logmux_src *, logmux_out_fn *fn, void *arg);

/* The stream broke: forgets the unfinished line and skips what was passed on. */
void	logmux_resume(struct logmux_src *);

/*
 * The sinceTime to reopen the stream with ("2026-11-29T08:39:22Z", the
 * last line's second): 0, or -ENOENT when no line was passed on yet.
 */
int	logmux_since_time(const struct logmux_src *, char *buf, size_t size);

/* Parses "2026-11-29T08:39:22.123456789Z" into seconds and nanoseconds. */
int	logmux_parse_ts(const char *s, size_t len, int64_t *ret_s, int32_t *ret_ns);

/* ---- cmd_logs.c: following every node ------------------------------------ */

struct logs_opts {
	const char	*run;
	int64_t		 node;		/* -1: every node */
	int64_t		 session;	/* 0: the current one (and, following, later ones) */
	bool		 follow;
	uint64_t	 since_ms;	/* --since; 0: none */
	int64_t		 tail;		/* --tail; -1: all */
	bool		 timestamps;
	/* Following: do not end before the Run's session reaches this. */
	int64_t		 min_session;
};

/*
 * Prints the Run's logs as "logs" does, after cli_connect(). '*ret_run'
 * (may be NULL) gets the Run as last seen, or NULL when it was deleted.
 * CLI_OK, CLI_NOT_FOUND (no such Run, or it was deleted while followed),
 * CLI_INTERRUPTED on Ctrl-C, or CLI_ERROR with the message printed.
 */
int	logs_follow(struct cli *, const struct logs_opts *, struct json_object **ret_run);

/* "run x: session 1 Failed (PodFailed): node 1 exited ..." on stderr. */
void	logs_print_end(const struct json_object *run, const char *name);

/* Exit status after Ctrl-C (128 + SIGINT, as a shell reports it). */
#define CLI_INTERRUPTED	130

#endif

/*
 * ops.h: what wait, stop, resume, restart, describe and list share, pure
 * (ops.c, unit suite cli_ops): a Run's result and whether a session is
 * still to come, the patches, aligned tables, list rows, and Ctrl-C.
 */
#ifndef TY_CLI_OPS_H
#define TY_CLI_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <json-c/json.h>

#include <kc/client.h>
#include <kc/macro.h>
#include <kc/str.h>

/* ---- a Run's state ------------------------------------------------------ */

/* The exit code of a final phase (0 Succeeded, 1 Failed, 2 Stopped), else -1. */
int	ops_phase_result(const char *phase);

/*
 * Whether another session is asked for or due, so that the phase shown is
 * not the last word: spec.session above status.session, spec.suspend back
 * to false after a Suspended stop, or an automatic restart the Run's
 * restart policy and limit allow after its Failed session.
 */
bool	ops_session_pending(const struct json_object *run);

/* What "wait --for" waits for. */
enum ops_for {
	OPS_FOR_END,	/* the session ended */
	OPS_FOR_START,	/* every node runs (phase Running), or it ended first */
};

/*
 * The exit code "wait" gives for 'run' as it is now, or -1 to go on
 * waiting. An invalid spec (Valid False at the current generation) is 1: it
 * never starts; a Run suspended before its first session is 2.
 */
int	ops_wait_check(const struct json_object *run, enum ops_for what);

/* The status condition 'type' of the Run (borrowed), or NULL. */
const struct json_object *ops_condition(const struct json_object *run, const char *type);

/* The session "restart" asks for: above both spec.session and status.session. */
int64_t	ops_next_session(const struct json_object *run);

/* ---- patches (JSON merge patches) ------------------------------------------ */

/* {"spec":{"suspend":true|false}} */
struct json_object *ops_patch_suspend(bool suspend);

/*
 * {"metadata":{"resourceVersion":RV},"spec":{"session":N}} plus
 * "suspend":false when the Run is suspended: a new session, resumed. The
 * resourceVersion makes two restarts at once ask for two sessions, not one.
 */
struct json_object *ops_patch_restart(const struct json_object *run);

/* ---- tables ------------------------------------------------------------- */

#define OPS_TABLE_COLS_MAX	10
#define OPS_CELL_MAX		512	/* bytes of a cell kept (cut at a character) */

/*
 * Rows of text cells printed as kubectl does: each column as wide as its
 * widest cell, three spaces between columns, the last one not padded.
 * Cells are copied with control characters (newlines, tabs, escapes)
 * written as spaces, so a message cannot break the table.
 */
struct ops_table {
	size_t		 ncols;
	size_t		 nrows, cap;
	char		**cells;	/* nrows * ncols */
	size_t		 width[OPS_TABLE_COLS_MAX];
	const char	*indent;	/* before each row; "" by default */
};

void	ops_table_init(struct ops_table *, size_t ncols, const char *indent);
/* Adds a row of 'ncols' cells (NULL is ""). 0 or -ENOMEM. */
int	ops_table_add(struct ops_table *, const char *const *cells) _must_check_;
void	ops_table_print(const struct ops_table *, FILE *);
/* Prints one row at the table's widths (a watch's later lines). */
void	ops_table_print_row(const struct ops_table *, const char *const *cells, FILE *);
void	ops_table_free(struct ops_table *);

/* Characters (not bytes) of UTF-8 text: a column's width. */
size_t	ops_text_width(const char *s);

/* ---- list ----------------------------------------------------------------- */

/* The columns of "list": NAME [NAMESPACE] PHASE SESSION NODES GPUS AGE REASON. */
#define OPS_LIST_COLS	8

struct ops_row {
	const char	*cell[OPS_LIST_COLS];
	size_t		 ncells;
	char		 session[24], nodes[48], gpus[24], age[KC_DURATION_HUMAN_MAX];
};

/* The header of list, with or without NAMESPACE. */
void	ops_list_header(bool with_ns, struct ops_row *ret);

/*
 * The row of 'run' at wall time 'now'; cells borrow from 'run' and 'ret'.
 * 'phase' overrides the phase shown (a watch's "Deleted"), or NULL.
 */
void	ops_list_row(const struct json_object *run, time_t now, bool with_ns,
	    const char *phase, struct ops_row *ret);

/* The age of an RFC 3339 time at 'now' ("<unknown>" when it is missing or bad). */
void	ops_age(const char *rfc3339, time_t now, char *buf, size_t size);

/* ---- Ctrl-C ---------------------------------------------------------------- */

/*
 * SIGINT and SIGTERM cancel the requests of 'cl' (kc_client_cancel() from a
 * thread woken through a pipe: the handler only writes a byte), and so does
 * 'deadline_ms' (kc_clock time; 0: none) passing. 0 or -errno.
 */
int	ops_interrupt_start(struct kc_client *cl, uint64_t deadline_ms) _must_check_;
/* Stops the thread and restores the handlers. */
void	ops_interrupt_stop(void);
bool	ops_interrupted(void);
bool	ops_deadline_passed(void);

#endif

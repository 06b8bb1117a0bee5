/*
 * ops.c: the pure parts of wait, stop, resume, restart, describe and list
 * (ops.h), and Ctrl-C for the commands that wait.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/str.h>

#include "cli.h"
#include "ops.h"

/* ---- a Run's state ------------------------------------------------------ */

int
ops_phase_result(const char *phase)
{
	if (phase == NULL)
		return -1;
	if (strcmp(phase, "Succeeded") == 0)
		return CLI_OK;
	if (strcmp(phase, "Failed") == 0)
		return CLI_FAILED;
	if (strcmp(phase, "Stopped") == 0)
		return CLI_STOPPED;
	return -1;
}

static bool
str_in(const char *s, const char *const *set)
{
	for (; s != NULL && *set != NULL; set++)
		if (strcmp(s, *set) == 0)
			return true;
	return false;
}

/* Whether the controller restarts a Failed session by itself (docs/api.md). */
static bool
auto_restart_due(const struct json_object *run)
{
	static const char *const on_preemption[] = { "Preempted", "Evicted", "NodeLost", NULL };
	static const char *const on_failure[] = { "Preempted", "Evicted", "NodeLost",
	    "PodFailed", "PodDeleted", NULL };
	const char *policy = kc_json_str(run, "spec", "restart", "policy");
	const char *reason = kc_json_str(run, "status", "reason");
	int64_t limit = kc_json_int(run, 3, "spec", "restart", "limit");
	int64_t restarts = kc_json_int(run, 0, "status", "restarts");

	if (policy == NULL || restarts >= limit)
		return false;
	if (strcmp(policy, "OnPreemption") == 0)
		return str_in(reason, on_preemption);
	if (strcmp(policy, "OnFailure") == 0)
		return str_in(reason, on_failure);
	return false;
}

bool
ops_session_pending(const struct json_object *run)
{
	const char *phase = kc_json_str(run, "status", "phase");
	const char *reason = kc_json_str(run, "status", "reason");
	bool suspend = kc_json_bool(run, false, "spec", "suspend");
	int64_t want = kc_json_int(run, 1, "spec", "session");
	int64_t have = kc_json_int(run, 0, "status", "session");

	if (suspend)
		return false;
	if (want > have)
		return true;
	if (phase != NULL && strcmp(phase, "Stopped") == 0 && reason != NULL &&
	    strcmp(reason, "Suspended") == 0)
		return true;
	return phase != NULL && strcmp(phase, "Failed") == 0 && auto_restart_due(run);
}

const struct json_object *
ops_condition(const struct json_object *run, const char *type)
{
	struct json_object *conds = kc_json_get(run, "status");

	conds = conds != NULL ? kc_json_arr_of(conds, "conditions") : NULL;
	for (size_t i = 0; conds != NULL && i < json_object_array_length(conds); i++) {
		const struct json_object *c = json_object_array_get_idx(conds, i);
		const char *t = kc_json_str(c, "type");

		if (t != NULL && strcmp(t, type) == 0)
			return c;
	}
	return NULL;
}

int
ops_wait_check(const struct json_object *run, enum ops_for what)
{
	const char *phase = kc_json_str(run, "status", "phase");
	const struct json_object *valid = ops_condition(run, "Valid");
	int64_t gen = kc_json_int(run, 0, "metadata", "generation");
	int r;

	if (valid != NULL && kc_json_int(valid, -1, "observedGeneration") == gen &&
	    kc_json_str(valid, "status") != NULL &&
	    strcmp(kc_json_str(valid, "status"), "False") == 0)
		return CLI_FAILED;
	if (kc_json_bool(run, false, "spec", "suspend") &&
	    kc_json_int(run, 0, "status", "session") == 0)
		return CLI_STOPPED;
	if (ops_session_pending(run))
		return -1;
	if ((r = ops_phase_result(phase)) >= 0)
		return r;
	if (what == OPS_FOR_START && phase != NULL && strcmp(phase, "Running") == 0)
		return CLI_OK;
	return -1;
}

int64_t
ops_next_session(const struct json_object *run)
{
	int64_t want = kc_json_int(run, 1, "spec", "session");
	int64_t have = kc_json_int(run, 0, "status", "session");

	return KC_MAX(want, have) + 1;
}

/* ---- patches ------------------------------------------------------------ */

struct json_object *
ops_patch_suspend(bool suspend)
{
	struct json_object *p = json_object_new_object(), *spec;

	if (p == NULL || (spec = kc_json_ensure_obj(p, "spec")) == NULL ||
	    kc_json_set_bool(spec, "suspend", suspend) < 0) {
		json_object_put(p);
		return NULL;
	}
	return p;
}

struct json_object *
ops_patch_restart(const struct json_object *run)
{
	struct json_object *p = json_object_new_object(), *spec, *meta;
	const char *rv = kc_json_str(run, "metadata", "resourceVersion");

	if (p == NULL || (spec = kc_json_ensure_obj(p, "spec")) == NULL ||
	    kc_json_set_int(spec, "session", ops_next_session(run)) < 0)
		goto fail;
	if (kc_json_bool(run, false, "spec", "suspend") &&
	    kc_json_set_bool(spec, "suspend", false) < 0)
		goto fail;
	if (rv != NULL && ((meta = kc_json_ensure_obj(p, "metadata")) == NULL ||
	    kc_json_set_str(meta, "resourceVersion", rv) < 0))
		goto fail;
	return p;
fail:
	json_object_put(p);
	return NULL;
}

/* ---- tables ------------------------------------------------------------- */

size_t
ops_text_width(const char *s)
{
	size_t n = 0;

	for (; s != NULL && *s != '\0'; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

void
ops_table_init(struct ops_table *t, size_t ncols, const char *indent)
{
	memset(t, 0, sizeof(*t));
	t->ncols = KC_MIN(ncols, (size_t)OPS_TABLE_COLS_MAX);
	t->indent = indent != NULL ? indent : "";
}

/* A copy of 's' with control characters as spaces, cut to OPS_CELL_MAX bytes. */
static char *
cell_copy(const char *s)
{
	size_t n = strlen(s != NULL ? s : "");
	char *c;

	if (n >= OPS_CELL_MAX) {
		n = OPS_CELL_MAX - 1;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;	/* not inside a UTF-8 sequence */
	}
	if ((c = kc_malloc(n + 1)) == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		c[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i];
	c[n] = '\0';
	return c;
}

int
ops_table_add(struct ops_table *t, const char *const *cells)
{
	if (t->nrows == t->cap) {
		size_t cap = t->cap == 0 ? 16 : t->cap * 2;
		char **nc = kc_realloc(t->cells, cap * t->ncols * sizeof(*nc));

		if (nc == NULL)
			return -ENOMEM;
		t->cells = nc;
		t->cap = cap;
	}
	for (size_t i = 0; i < t->ncols; i++) {
		char *c = cell_copy(cells[i]);

		if (c == NULL) {
			for (size_t j = 0; j < i; j++)
				kc_free(t->cells[t->nrows * t->ncols + j]);
			return -ENOMEM;
		}
		t->cells[t->nrows * t->ncols + i] = c;
		t->width[i] = KC_MAX(t->width[i], ops_text_width(c));
	}
	t->nrows++;
	return 0;
}

void
ops_table_print_row(const struct ops_table *t, const char *const *cells, FILE *f)
{
	size_t last = t->ncols;

	/* Trailing empty cells are not padded for. */
	while (last > 1 && (cells[last - 1] == NULL || cells[last - 1][0] == '\0'))
		last--;
	(void)fputs(t->indent, f);
	for (size_t i = 0; i < last; i++) {
		const char *c = cells[i] != NULL ? cells[i] : "";

		(void)fputs(c, f);
		if (i + 1 < last)
			(void)fprintf(f, "%*s", (int)(t->width[i] - KC_MIN(t->width[i],
			    ops_text_width(c)) + 3), "");
	}
	(void)fputc('\n', f);
}

void
ops_table_print(const struct ops_table *t, FILE *f)
{
	for (size_t r = 0; r < t->nrows; r++)
		ops_table_print_row(t, (const char *const *)&t->cells[r * t->ncols], f);
}

void
ops_table_free(struct ops_table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		kc_free(t->cells[i]);
	kc_free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}

/* ---- list --------------------------------------------------------------- */

void
ops_age(const char *rfc3339, time_t now, char *buf, size_t size)
{
	time_t t;

	if (rfc3339 == NULL || kc_time_parse(rfc3339, &t) < 0) {
		(void)kc_strlcpy(buf, "<unknown>", size);
		return;
	}
	kc_duration_human((int64_t)now - (int64_t)t, buf, size);
}

void
ops_list_header(bool with_ns, struct ops_row *ret)
{
	size_t n = 0;

	memset(ret, 0, sizeof(*ret));
	if (with_ns)
		ret->cell[n++] = "NAMESPACE";
	ret->cell[n++] = "NAME";
	ret->cell[n++] = "PHASE";
	ret->cell[n++] = "SESSION";
	ret->cell[n++] = "NODES";
	ret->cell[n++] = "GPUS";
	ret->cell[n++] = "AGE";
	ret->cell[n++] = "REASON";
	ret->ncells = n;
}

void
ops_list_row(const struct json_object *run, time_t now, bool with_ns, const char *phase,
    struct ops_row *ret)
{
	const char *ready = kc_json_str(run, "status", "readyNodes");
	size_t n = 0;

	memset(ret, 0, sizeof(*ret));
	if (phase == NULL)
		phase = kc_json_str(run, "status", "phase");
	(void)snprintf(ret->session, sizeof(ret->session), "%lld",
	    (long long)kc_json_int(run, 0, "status", "session"));
	if (ready != NULL)
		(void)kc_strlcpy(ret->nodes, ready, sizeof(ret->nodes));
	else
		(void)snprintf(ret->nodes, sizeof(ret->nodes), "0/%lld",
		    (long long)kc_json_int(run, 0, "spec", "nodes"));
	(void)snprintf(ret->gpus, sizeof(ret->gpus), "%lld",
	    (long long)kc_json_int(run, 0, "status", "gpus"));
	ops_age(kc_json_str(run, "metadata", "creationTimestamp"), now, ret->age,
	    sizeof(ret->age));
	if (with_ns)
		ret->cell[n++] = kc_json_str(run, "metadata", "namespace");
	ret->cell[n++] = kc_json_str(run, "metadata", "name");
	ret->cell[n++] = phase != NULL ? phase : "Pending";
	ret->cell[n++] = ret->session;
	ret->cell[n++] = ret->nodes;
	ret->cell[n++] = ret->gpus;
	ret->cell[n++] = ret->age;
	ret->cell[n++] = kc_json_str(run, "status", "reason");
	ret->ncells = n;
}

/* ---- Ctrl-C --------------------------------------------------------------- */

static struct {
	int			 pipe[2];
	pthread_t		 thread;
	bool			 running;
	struct kc_client	*cl;
	uint64_t		 deadline_ms;
	volatile sig_atomic_t	 interrupted, timed_out;
	struct sigaction	 old_int, old_term;
} intr = { .pipe = { -1, -1 } };

static void
on_signal(int sig)
{
	int saved = errno;
	char c = 'i';

	(void)sig;
	intr.interrupted = 1;
	if (write(intr.pipe[1], &c, 1) < 0) {
		/* The pipe is full: a byte is already waiting. */
	}
	errno = saved;
}

static void *
intr_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd p = { .fd = intr.pipe[0], .events = POLLIN };
		int timeout = -1, n;
		char c = 0;

		if (intr.deadline_ms != 0) {
			uint64_t now = kc_clock_now_ms();

			timeout = now >= intr.deadline_ms ? 0 :
			    (int)KC_MIN(intr.deadline_ms - now, (uint64_t)INT32_MAX);
		}
		n = poll(&p, 1, timeout);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0) {
			intr.timed_out = 1;
			kc_client_cancel(intr.cl);
			return NULL;
		}
		if (n < 0 || read(intr.pipe[0], &c, 1) <= 0 || c == 'q')
			return NULL;
		kc_client_cancel(intr.cl);
		return NULL;
	}
}

int
ops_interrupt_start(struct kc_client *cl, uint64_t deadline_ms)
{
	struct sigaction sa = { .sa_handler = on_signal };
	int r;

	if (pipe2(intr.pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	intr.cl = cl;
	intr.deadline_ms = deadline_ms;
	intr.interrupted = intr.timed_out = 0;
	if ((r = pthread_create(&intr.thread, NULL, intr_main, NULL)) != 0) {
		(void)close(intr.pipe[0]);
		(void)close(intr.pipe[1]);
		intr.pipe[0] = intr.pipe[1] = -1;
		return -r;
	}
	intr.running = true;
	(void)sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGINT, &sa, &intr.old_int);
	(void)sigaction(SIGTERM, &sa, &intr.old_term);
	return 0;
}

void
ops_interrupt_stop(void)
{
	char c = 'q';

	if (!intr.running)
		return;
	(void)sigaction(SIGINT, &intr.old_int, NULL);
	(void)sigaction(SIGTERM, &intr.old_term, NULL);
	if (write(intr.pipe[1], &c, 1) < 0) {
		/* Full: the thread is already on its way out. */
	}
	(void)pthread_join(intr.thread, NULL);
	(void)close(intr.pipe[0]);
	(void)close(intr.pipe[1]);
	intr.pipe[0] = intr.pipe[1] = -1;
	intr.running = false;
}

bool
ops_interrupted(void)
{
	return intr.interrupted != 0;
}

bool
ops_deadline_passed(void)
{
	return intr.timed_out != 0;
}

/*
 * cmd_wait.c: "kubectl trainyard wait RUN [--for start|end] [--timeout D]":
 * waits until the Run's session ended (or every node runs) and exits with
 * its result: 0 Succeeded (or started), 1 Failed, 2 Stopped, 3 timed out,
 * 4 no such Run or deleted meanwhile, 5 anything else (Ctrl-C included).
 *
 * One GET, then a watch of that one Run from the GET's resourceVersion,
 * resumed where it stopped and started again from a new GET on 410
 * Expired. A state already reached returns at once. A session still to
 * come (a restart asked for or due, a resume) is waited for, not taken
 * for the previous session's result.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/sbuf.h>
#include <kc/str.h>
#include <kc/watch.h>

#include "cli.h"
#include "ops.h"

#define WAIT_DEFAULT_MS		(3600ULL * 1000)
#define WAIT_MAX_MS		(30ULL * 86400 * 1000)
#define WAIT_RETRY_MAX_MS	5000

static const char help[] =
    "Wait until a Run's session ended (or started), and exit with its result.\n"
    "\n"
    "Usage: kubectl trainyard wait RUN [--for end|start] [--timeout 1h] [-o json|yaml|name]\n"
    "\n"
    "  --for end     until the session ended (the default)\n"
    "  --for start   until every node runs (phase Running), or the session ended first\n"
    "  --timeout D   give up after D (90s, 10m, 2h; 0 checks once; default 1h, at most 30d)\n"
    "  -o FORMAT     print the Run as it was at the end (json, yaml, name)\n"
    "\n"
    "Returns at once when the state was already reached. A restart or resume asked for\n"
    "but not started yet, or an automatic restart the Run's policy allows, is waited\n"
    "for. The reason and message go to stderr. Ctrl-C stops waiting and leaves the Run\n"
    "as it is.\n"
    "\n"
    "Exit codes: 0 Succeeded (--for start: started), 1 Failed (or its spec is invalid),\n"
    "2 Stopped, 3 timed out, 4 no such Run (or it was deleted while waiting), 5 any\n"
    "other error or Ctrl-C.\n"
    "\n"
    "Examples:\n"
    "  kubectl trainyard wait llama\n"
    "  kubectl trainyard wait llama --for start --timeout 10m\n"
    "  kubectl trainyard wait llama -n team-a --timeout 2h && echo trained\n";

struct waiter {
	struct cli		*c;
	const char		*name;
	enum ops_for		 what;
	struct json_object	*run;		/* the last seen */
	int			 result;	/* an exit code, or -1 */
	bool			 deleted;
};

static void
waiter_take(struct waiter *w, struct json_object *run)
{
	json_object_put(w->run);
	w->run = run;
	w->result = ops_wait_check(run, w->what);
}

static int
on_event(void *arg, enum kc_watch_type type, struct json_object *obj)
{
	struct waiter *w = arg;

	if (type == KC_WATCH_BOOKMARK)
		return 0;
	if (type == KC_WATCH_DELETED) {
		w->deleted = true;
		w->result = CLI_NOT_FOUND;
		return KC_WATCH_STOP;
	}
	waiter_take(w, json_object_get(obj));
	return w->result >= 0 ? KC_WATCH_STOP : 0;
}

/*
 * The last Run seen in words: "session 2 Running (3/4 nodes ready)",
 * "session 1 Failed (PodFailed)", "no session yet (Pending: QuotaExceeded)".
 */
static void
state_text(const struct waiter *w, char *buf, size_t size)
{
	const char *phase = kc_json_str(w->run, "status", "phase");
	const char *ready = kc_json_str(w->run, "status", "readyNodes");
	const char *reason = kc_json_str(w->run, "status", "reason");
	int64_t session = kc_json_int(w->run, 0, "status", "session");
	struct kc_sbuf b;

	kc_sbuf_init(&b, buf, size);
	if (w->run == NULL) {
		kc_sbuf_puts(&b, "its state unknown");
		return;
	}
	if (phase == NULL)
		phase = "Pending";
	if (session == 0)
		kc_sbuf_printf(&b, "no session yet (%s", phase);
	else
		kc_sbuf_printf(&b, "session %lld %s", (long long)session, phase);
	if (ops_phase_result(phase) >= 0 || session == 0) {
		/* An ended session's nodes say nothing; its reason does. */
		if (reason != NULL && reason[0] != '\0' && strcmp(reason, phase) != 0)
			kc_sbuf_printf(&b, session == 0 ? ": %s" : " (%s)", reason);
		if (session == 0)
			kc_sbuf_putc(&b, ')');
	} else if (ready != NULL)
		kc_sbuf_printf(&b, " (%s nodes ready)", ready);
}

/* The result on stderr: what happened, the reason and the message. */
static void
report(const struct waiter *w, uint64_t timeout_ms)
{
	const char *ns = w->c->ns;
	const char *message = kc_json_str(w->run, "status", "message");
	const char *phase = kc_json_str(w->run, "status", "phase");
	char state[160], d[KC_DURATION_HUMAN_MAX];

	state_text(w, state, sizeof(state));
	switch (w->result) {
	case CLI_TIMEOUT:
		kc_duration_human((int64_t)(timeout_ms / 1000), d, sizeof(d));
		(void)fprintf(stderr, "error: timed out after %s waiting for run %s in namespace "
		    "%s to %s: %s\n", timeout_ms < 1000 ? "0s" : d, w->name, ns,
		    w->what == OPS_FOR_START ? "start" : "end", state);
		return;
	case CLI_NOT_FOUND:
		if (w->deleted)
			(void)fprintf(stderr, "error: run %s in namespace %s was deleted while "
			    "waiting (%s)\n", w->name, ns, state);
		return;
	case CLI_ERROR:
		if (ops_interrupted())
			(void)fprintf(stderr, "interrupted: run %s in namespace %s was left as it "
			    "is (%s)\n", w->name, ns, state);
		return;
	default:
		break;
	}
	if (w->result == CLI_FAILED && ops_phase_result(phase) < 0) {
		const char *msg = kc_json_str(ops_condition(w->run, "Valid"), "message");

		(void)fprintf(stderr, "run %s in namespace %s is invalid and never starts "
		    "(InvalidSpec): %s\n", w->name, ns, msg != NULL ? msg : "");
		return;
	}
	if (w->result == CLI_STOPPED && ops_phase_result(phase) < 0) {
		(void)fprintf(stderr, "run %s in namespace %s is suspended (spec.suspend is "
		    "true) and has no session; \"%s resume %s\" starts one\n", w->name, ns,
		    w->c->prog, w->name);
		return;
	}
	(void)fprintf(stderr, "run %s in namespace %s: %s", w->name, ns, state);
	if (message != NULL && message[0] != '\0' && ops_phase_result(phase) >= 0)
		(void)fprintf(stderr, ": %s", message);
	(void)fputc('\n', stderr);
}

/* GETs the Run into the waiter: CLI_OK, or the exit code with nothing printed. */
static int
get_run(struct waiter *w, struct kc_status *st, int *ret_err)
{
	struct json_object *run = NULL;
	int r;

	r = kc_client_get(w->c->cl, &(struct kc_get_opts){ .res = &cli_res_runs,
	    .ns = w->c->ns, .name = w->name }, &run, st);
	*ret_err = r;
	if (r < 0)
		return r == KC_ENOTFOUND ? CLI_NOT_FOUND : CLI_ERROR;
	waiter_take(w, run);
	return CLI_OK;
}

static bool
retryable(int r)
{
	return r == KC_ETRANSPORT || r == KC_ETIMEOUT || r == KC_ETHROTTLED ||
	    r == KC_EPARSE || r == KC_EINTERNAL || r == KC_EUNAVAILABLE ||
	    r == KC_ESERVERTIMEOUT;
}

/* Waits until a result, the deadline or Ctrl-C: the exit code, errors printed. */
static int
wait_loop(struct waiter *w, uint64_t deadline)
{
	char field[KC_NAME_MAX + 32], rv[KC_RV_MAX], what[KC_NAME_MAX + 32];
	uint64_t backoff = 250;
	bool need_get = true;
	int r, err;

	(void)snprintf(field, sizeof(field), "metadata.name=%s", w->name);
	(void)snprintf(what, sizeof(what), "get run %s", w->name);
	for (;;) {
		struct kc_status st = { 0 };
		struct kc_watch_result wr = { 0 };
		uint64_t now = kc_clock_now_ms();

		if (need_get) {
			r = get_run(w, &st, &err);
			if (r == CLI_NOT_FOUND && !ops_interrupted() && !ops_deadline_passed()) {
				if (w->run != NULL) {
					w->deleted = true;
					return CLI_NOT_FOUND;
				}
				(void)fprintf(stderr, "error: run \"%s\" not found in namespace %s "
				    "(\"%s list -A\" lists every namespace's)\n", w->name,
				    w->c->ns, w->c->prog);
				return CLI_NOT_FOUND;
			}
			if (r == CLI_OK) {
				need_get = false;
				backoff = 250;
				(void)kc_strlcpy(rv, kc_json_str(w->run, "metadata",
				    "resourceVersion") != NULL ? kc_json_str(w->run, "metadata",
				    "resourceVersion") : "", sizeof(rv));
				if (w->result >= 0)
					return w->result;
			} else if (err == -ECANCELED || ops_interrupted() || ops_deadline_passed()) {
				return ops_interrupted() ? CLI_ERROR : CLI_TIMEOUT;
			} else if (!retryable(err)) {
				return cli_api_error(w->c, what, err, &st);
			}
		}
		now = kc_clock_now_ms();
		if (ops_interrupted())
			return CLI_ERROR;
		if (now >= deadline || ops_deadline_passed())
			return CLI_TIMEOUT;
		if (need_get) {
			(void)kc_clock_sleep_ms(KC_MIN(backoff, deadline - now));
			backoff = KC_MIN(backoff * 2, (uint64_t)WAIT_RETRY_MAX_MS);
			continue;
		}
		(void)kc_strlcpy(wr.resource_version, rv, sizeof(wr.resource_version));
		r = kc_watch_run(w->c->cl, &(struct kc_watch_opts){
			.res = &cli_res_runs,
			.ns = w->c->ns,
			.field_selector = field,
			.resource_version = rv,
			.allow_bookmarks = true,
			.timeout_s = (uint32_t)KC_MIN((deadline - now + 999) / 1000, 1800),
		}, on_event, w, &wr, &st);
		if (wr.resource_version[0] != '\0')
			(void)kc_strlcpy(rv, wr.resource_version, sizeof(rv));
		if (r == KC_WATCH_STOP)
			return w->result;
		if (ops_interrupted())
			return CLI_ERROR;
		if (ops_deadline_passed() || (r == -ECANCELED && kc_clock_now_ms() >= deadline))
			return CLI_TIMEOUT;
		if (r == KC_EEXPIRED) {
			need_get = true;	/* the history is gone: look again */
			continue;
		}
		if (r < 0 && !retryable(r)) {
			(void)snprintf(what, sizeof(what), "watch run %s", w->name);
			return cli_api_error(w->c, what, r, &st);
		}
		if (r < 0) {
			/* A dropped connection: resume from rv after a pause. */
			now = kc_clock_now_ms();
			if (now < deadline)
				(void)kc_clock_sleep_ms(KC_MIN(backoff, deadline - now));
			backoff = KC_MIN(backoff * 2, (uint64_t)WAIT_RETRY_MAX_MS);
		}
	}
}

static int
run(struct cli *c, int argc, char **argv)
{
	const char *for_flag = "end";
	uint64_t timeout_ms = WAIT_DEFAULT_MS;
	const struct cli_flag flags[] = {
		{ "for", 0, CLI_FLAG_STR, &for_flag, NULL },
		{ "timeout", 0, CLI_FLAG_DURATION, &timeout_ms, NULL },
		{ NULL, 0, 0, NULL, NULL },
	};
	struct waiter w = { .c = c, .result = -1 };
	int nargs, dd, r;
	bool done;

	if ((r = cli_parse(c, &cli_cmd_wait, flags, argc, argv, &nargs, &dd, &done)) !=
	    CLI_OK || done)
		return r;
	if (nargs != 1)
		return cli_error(c, "wait takes one Run's name; see %s wait --help", c->prog);
	if (strcmp(for_flag, "end") == 0)
		w.what = OPS_FOR_END;
	else if (strcmp(for_flag, "start") == 0)
		w.what = OPS_FOR_START;
	else
		return cli_error(c, "--for: \"%s\" is not end or start; see %s wait --help",
		    for_flag, c->prog);
	if (timeout_ms > WAIT_MAX_MS)
		return cli_error(c, "--timeout: at most 30d");
	w.name = argv[1];
	{
		struct kc_status st = { 0 };

		if (kc_client_check_name(w.name, &st) < 0)
			return cli_error(c, "run name \"%s\": %s", w.name, st.message);
	}
	if ((r = cli_connect(c)) != CLI_OK)
		return r;
	{
		uint64_t deadline = kc_clock_now_ms() + timeout_ms;

		/* --timeout 0 checks once: no timer may cancel that one GET. */
		if ((r = ops_interrupt_start(c->cl, timeout_ms > 0 ? deadline : 0)) < 0)
			return cli_error(c, "cannot watch for Ctrl-C: %s", kc_strerror(r));
		w.result = wait_loop(&w, deadline);
		ops_interrupt_stop();
	}
	report(&w, timeout_ms);
	if (w.run != NULL && c->output != NULL && strcmp(c->output, "wide") != 0 &&
	    cli_print_object(c, w.run, "run.trainyard.dev") != CLI_OK && w.result == CLI_OK)
		w.result = CLI_ERROR;
	json_object_put(w.run);
	return w.result;
}

const struct cli_cmd cli_cmd_wait = {
	.name = "wait",
	.summary = "wait until a Run's session ends (or starts); exit with its result",
	.help = help,
	.run = run,
};

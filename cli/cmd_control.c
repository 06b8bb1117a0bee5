/*
 * cmd_control.c: "kubectl trainyard stop|resume|restart RUN": the merge
 * patches of docs/api.md (spec.suspend true or false; spec.session raised
 * above status.session, resuming a suspended Run too), and what they do
 * printed for people, or the Run with -o json|yaml|name.
 *
 * Asking for what already holds is not an error: stop on a stopped or
 * ended Run, resume on a Run that is not suspended, patch nothing, say so
 * and exit 0, so scripts can call them unconditionally.
 */
#include <stdio.h>
#include <string.h>

#include <kc/json.h>

#include "cli.h"
#include "ops.h"

#define RESTART_TRIES	5

static const char help_stop[] =
    "Stop a Run: end its session (phase Stopped, reason Suspended) and start none until\n"
    "it is resumed. Sets spec.suspend to true; the session's pods are deleted.\n"
    "\n"
    "Usage: kubectl trainyard stop RUN [-o json|yaml|name]\n"
    "\n"
    "A Run already stopped, or whose session has ended with no new one to come, is left\n"
    "as it is: the command says so and exits 0.\n"
    "\n"
    "Examples:\n"
    "  kubectl trainyard stop llama\n"
    "  kubectl trainyard stop llama -n team-a -o name\n";

static const char help_resume[] =
    "Resume a stopped Run: set spec.suspend back to false, which starts its next session.\n"
    "\n"
    "Usage: kubectl trainyard resume RUN [-o json|yaml|name]\n"
    "\n"
    "A Run that is not suspended is left as it is (exit 0); \"restart\" starts a new\n"
    "session of a Run that ended. A Run stopped by its Project (suspend: Drain) resumes\n"
    "when the Project does; resume then changes nothing and exits 5.\n"
    "\n"
    "Examples:\n"
    "  kubectl trainyard resume llama\n"
    "  kubectl trainyard resume llama && kubectl trainyard wait llama --for start\n";

static const char help_restart[] =
    "Start a new session of a Run: raise spec.session above status.session. A running\n"
    "session ends first (reason NewSession) and its pods are deleted; a stopped Run is\n"
    "also resumed (spec.suspend false). The automatic restart count starts again.\n"
    "\n"
    "Usage: kubectl trainyard restart RUN [-o json|yaml|name]\n"
    "\n"
    "Examples:\n"
    "  kubectl trainyard restart llama\n"
    "  kubectl trainyard restart llama && kubectl trainyard wait llama\n";

enum op {
	OP_STOP,
	OP_RESUME,
	OP_RESTART,
};

/* Prints the Run as -o asks, or 'line' for people. */
static int
result(struct cli *c, const struct json_object *run, const char *line)
{
	if (c->output != NULL && strcmp(c->output, "wide") != 0)
		return cli_print_object(c, run, "run.trainyard.dev");
	(void)printf("%s\n", line);
	return CLI_OK;
}

static int
patch(struct cli *c, const char *name, const struct json_object *body,
    struct json_object **ret, struct kc_status *st)
{
	return kc_client_patch(c->cl, &(struct kc_patch_opts){ .res = &cli_res_runs,
	    .ns = c->ns, .name = name, .type = KC_PATCH_MERGE,
	    .field_manager = "kubectl-trainyard" }, body, ret, st);
}

static int
patch_error(struct cli *c, const char *name, int r, const struct kc_status *st)
{
	char what[KC_NAME_MAX + 32];

	if (r == KC_ENOTFOUND) {
		(void)fprintf(stderr, "error: run \"%s\" not found in namespace %s (deleted "
		    "meanwhile?)\n", name, c->ns);
		return CLI_NOT_FOUND;
	}
	(void)snprintf(what, sizeof(what), "patch run %s", name);
	return cli_api_error(c, what, r, st);
}

static int
do_stop(struct cli *c, const char *name, struct json_object *run)
{
	const char *phase = kc_json_str(run, "status", "phase");
	int64_t session = kc_json_int(run, 0, "status", "session");
	struct json_object *body, *out = NULL;
	struct kc_status st = { 0 };
	char line[KC_NAME_MAX + 256];
	int r;

	if (kc_json_bool(run, false, "spec", "suspend")) {
		(void)snprintf(line, sizeof(line), "run.trainyard.dev/%s is already stopped "
		    "(spec.suspend is true)", name);
		return result(c, run, line);
	}
	if (session > 0 && ops_phase_result(phase) >= 0 && !ops_session_pending(run)) {
		(void)snprintf(line, sizeof(line), "run.trainyard.dev/%s has already ended "
		    "(session %lld %s); nothing to stop", name, (long long)session, phase);
		return result(c, run, line);
	}
	if ((body = ops_patch_suspend(true)) == NULL)
		return cli_error(c, "out of memory");
	r = patch(c, name, body, &out, &st);
	json_object_put(body);
	if (r < 0)
		return patch_error(c, name, r, &st);
	if (session > 0 && ops_phase_result(phase) < 0)
		(void)snprintf(line, sizeof(line), "run.trainyard.dev/%s stopped (session %lld "
		    "ends, its pods are deleted)", name, (long long)session);
	else if (session > 0)
		(void)snprintf(line, sizeof(line), "run.trainyard.dev/%s stopped (session %lld "
		    "had ended %s; no new session starts)", name, (long long)session, phase);
	else
		(void)snprintf(line, sizeof(line), "run.trainyard.dev/%s stopped (no session "
		    "had started; none starts until it is resumed)", name);
	r = result(c, out, line);
	json_object_put(out);
	return r;
}

static int
do_resume(struct cli *c, const char *name, struct json_object *run)
{
	const char *phase = kc_json_str(run, "status", "phase");
	const char *reason = kc_json_str(run, "status", "reason");
	int64_t session = kc_json_int(run, 0, "status", "session");
	struct json_object *body, *out = NULL;
	struct kc_status st = { 0 };
	char line[KC_NAME_MAX + 256];
	int r;

	if (!kc_json_bool(run, false, "spec", "suspend")) {
		if (phase != NULL && strcmp(phase, "Stopped") == 0 && reason != NULL &&
		    strcmp(reason, "ProjectSuspended") == 0) {
			(void)fprintf(stderr, "error: run %s in namespace %s was stopped by its "
			    "Project (suspend: Drain); it resumes when a project admin sets the "
			    "Project's spec.suspend back to None\n", name, c->ns);
			return CLI_ERROR;
		}
		(void)snprintf(line, sizeof(line), "run.trainyard.dev/%s is not stopped "
		    "(spec.suspend is false); nothing to resume (\"%s restart %s\" starts a "
		    "new session)", name, c->prog, name);
		return result(c, run, line);
	}
	if ((body = ops_patch_suspend(false)) == NULL)
		return cli_error(c, "out of memory");
	r = patch(c, name, body, &out, &st);
	json_object_put(body);
	if (r < 0)
		return patch_error(c, name, r, &st);
	(void)snprintf(line, sizeof(line), "run.trainyard.dev/%s resumed (session %lld "
	    "starts)", name, (long long)KC_MAX(session + 1, kc_json_int(run, 1, "spec",
	    "session")));
	r = result(c, out, line);
	json_object_put(out);
	return r;
}

static int
do_restart(struct cli *c, const char *name, struct json_object *run)
{
	struct json_object *out = NULL, *cur = json_object_get(run);
	char line[KC_NAME_MAX + 256], tail[160] = "";
	int r = KC_ECONFLICT;

	for (int i = 0; i < RESTART_TRIES && r == KC_ECONFLICT; i++) {
		struct json_object *body;
		struct kc_status st = { 0 };

		if (i > 0) {
			json_object_put(cur);
			cur = NULL;
			if ((r = cli_get_run(c, name, &cur)) != CLI_OK)
				return r;
		}
		if ((body = ops_patch_restart(cur)) == NULL) {
			json_object_put(cur);
			return cli_error(c, "out of memory");
		}
		r = patch(c, name, body, &out, &st);
		json_object_put(body);
		if (r < 0 && r != KC_ECONFLICT) {
			json_object_put(cur);
			return patch_error(c, name, r, &st);
		}
	}
	if (r < 0) {
		json_object_put(cur);
		return cli_error(c, "run %s in namespace %s changed %d times while restarting it; "
		    "try again", name, c->ns, RESTART_TRIES);
	}
	{
		const char *phase = kc_json_str(cur, "status", "phase");
		int64_t session = kc_json_int(cur, 0, "status", "session");
		bool suspended = kc_json_bool(cur, false, "spec", "suspend");

		if (session > 0 && ops_phase_result(phase) < 0)
			(void)snprintf(tail, sizeof(tail), " (session %lld ends, its pods are "
			    "deleted)", (long long)session);
		else if (session > 0)
			(void)snprintf(tail, sizeof(tail), " (session %lld had ended %s)",
			    (long long)session, phase);
		(void)snprintf(line, sizeof(line), "run.trainyard.dev/%s restarted: session "
		    "%lld starts%s%s", name, (long long)kc_json_int(out, 0, "spec", "session"),
		    tail, suspended ? "; resumed (spec.suspend was true)" : "");
	}
	json_object_put(cur);
	r = result(c, out, line);
	json_object_put(out);
	return r;
}

static int
control(struct cli *c, const struct cli_cmd *cmd, enum op op, int argc, char **argv)
{
	struct json_object *run = NULL;
	int nargs, dd, r;
	bool done;

	if ((r = cli_parse(c, cmd, NULL, argc, argv, &nargs, &dd, &done)) != CLI_OK || done)
		return r;
	if (nargs != 1)
		return cli_error(c, "%s takes one Run's name; see %s %s --help", cmd->name,
		    c->prog, cmd->name);
	if ((r = cli_connect(c)) != CLI_OK || (r = cli_get_run(c, argv[1], &run)) != CLI_OK)
		return r;
	switch (op) {
	case OP_STOP:
		r = do_stop(c, argv[1], run);
		break;
	case OP_RESUME:
		r = do_resume(c, argv[1], run);
		break;
	case OP_RESTART:
	default:
		r = do_restart(c, argv[1], run);
		break;
	}
	json_object_put(run);
	return r;
}

static int
run_stop(struct cli *c, int argc, char **argv)
{
	return control(c, &cli_cmd_stop, OP_STOP, argc, argv);
}

static int
run_resume(struct cli *c, int argc, char **argv)
{
	return control(c, &cli_cmd_resume, OP_RESUME, argc, argv);
}

static int
run_restart(struct cli *c, int argc, char **argv)
{
	return control(c, &cli_cmd_restart, OP_RESTART, argc, argv);
}

const struct cli_cmd cli_cmd_stop = {
	.name = "stop",
	.summary = "stop a Run's session (spec.suspend: true)",
	.help = help_stop,
	.run = run_stop,
};

const struct cli_cmd cli_cmd_resume = {
	.name = "resume",
	.summary = "resume a stopped Run (spec.suspend: false)",
	.help = help_resume,
	.run = run_resume,
};

const struct cli_cmd cli_cmd_restart = {
	.name = "restart",
	.summary = "start a new session of a Run (raises spec.session)",
	.help = help_restart,
	.run = run_restart,
};

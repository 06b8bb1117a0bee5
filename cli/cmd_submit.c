/*
 * cmd_submit.c: "kubectl trainyard submit -f run.yaml" (create, or
 * server-side apply when the Run exists) and "kubectl trainyard run NAME
 * --image ... -- CMD" (a Run without a file); with --follow both stream
 * every node's log (logs_follow(), cmd_logs.c) until the session ends and
 * exit with the Run's result.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/json.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "cli.h"
#include "logs.h"

/* The largest Run file read. */
#define SUBMIT_FILE_MAX		(4u << 20)
#define FIELD_MANAGER		"kubectl-trainyard"

/*
 * Follows every node's log until the session ends (from session
 * 'min_session' on), then says how it ended: the Run's exit code.
 */
static int
follow_to_end(struct cli *c, const char *name, int64_t min_session)
{
	struct logs_opts o = {
		.run = name, .node = -1, .tail = -1, .follow = true, .min_session = min_session,
	};
	struct json_object *last = NULL;
	int r;

	r = logs_follow(c, &o, &last);
	if (r == CLI_OK) {
		if ((r = cli_run_result(last)) < 0)
			r = cli_error(c, "run %s: following ended before the session did", name);
		else
			logs_print_end(last, name);
	}
	json_object_put(last);
	return r;
}

/* The session a follow waits for: the one the Run asks for, at least 1. */
static int64_t
wanted_session(const struct json_object *run)
{
	return KC_MAX(KC_MAX(kc_json_int(run, 0, "status", "session"),
	    kc_json_int(run, 1, "spec", "session")), 1);
}

/* ---- submit ---------------------------------------------------------------- */

static int
read_input(struct cli *c, const char *path, char **ret, size_t *ret_len)
{
	struct kc_buf b;
	char chunk[8192];
	size_t n;
	int r;

	if (strcmp(path, "-") != 0) {
		if ((r = kc_read_file(path, SUBMIT_FILE_MAX, ret, ret_len)) < 0)
			return cli_error(c, "reading %s: %s", path, r == -E2BIG ?
			    "larger than 4 MiB" : kc_strerror(r));
		return CLI_OK;
	}
	kc_buf_init(&b, SUBMIT_FILE_MAX);
	while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
		if ((r = kc_buf_append(&b, chunk, n)) < 0)
			return cli_error(c, "reading the standard input: %s", r == -E2BIG ?
			    "larger than 4 MiB" : kc_strerror(r));
	if (ferror(stdin)) {
		kc_buf_free(&b);
		return cli_error(c, "reading the standard input: %s", kc_strerror(-errno));
	}
	if ((r = kc_buf_putc(&b, '\0')) < 0)
		return cli_error(c, "reading the standard input: %s", kc_strerror(r));
	*ret = kc_buf_take(&b, ret_len);
	(*ret_len)--;
	return CLI_OK;
}

static const char submit_help[] =
    "Create a Run from a file, or apply it when it exists; --follow streams every\n"
    "node's log until the session ends and exits with the Run's result.\n"
    "\n"
    "Usage: kubectl trainyard submit -f FILE [--follow] [-o json|yaml|name]\n"
    "\n"
    "  -f, --filename FILE  the Run, YAML or JSON; \"-\" reads the standard input\n"
    "  --follow             stream the logs, then exit with the result\n"
    "\n"
    "A Run that exists is updated by server-side apply (field manager\n"
    "kubectl-trainyard): \"configured\", or \"unchanged\" when nothing changed.\n"
    "\n"
    "Exit codes with --follow: 0 Succeeded, 1 Failed, 2 Stopped, 4 the Run was\n"
    "deleted, 5 any other error, 130 after Ctrl-C (the Run goes on).\n"
    "\n"
    "Examples:\n"
    "  kubectl trainyard submit -f llama.yaml\n"
    "  kubectl trainyard submit -f llama.yaml --follow\n"
    "  generate-run | kubectl trainyard submit -f - -n team-a\n";

static int
submit(struct cli *c, int argc, char **argv)
{
	const char *file = NULL, *shown, *obj_ns, *name, *api, *kind, *old_rv = NULL, *new_rv;
	bool follow = false, done;
	const struct cli_flag flags[] = {
		{ "filename", 'f', CLI_FLAG_STR, &file, NULL },
		{ "follow", 0, CLI_FLAG_BOOL, &follow, NULL },
		{ NULL, 0, 0, NULL, NULL },
	};
	struct json_object *obj = NULL, *cur = NULL, *out = NULL;
	struct kc_resource res = cli_res_runs;
	struct kc_status st = { 0 };
	char *text = NULL, what[320];
	const char *verb;
	size_t len;
	int nargs, dd, r;

	if ((r = cli_parse(c, &cli_cmd_submit, flags, argc, argv, &nargs, &dd, &done)) !=
	    CLI_OK || done)
		return r;
	if (file == NULL)
		return cli_error(c, "submit needs -f FILE (or -f - for the standard input)");
	if (nargs > 0)
		return cli_error(c, "submit takes no arguments besides -f FILE; see %s submit "
		    "--help", c->prog);
	if ((r = read_input(c, file, &text, &len)) != CLI_OK)
		return r;
	r = kc_yaml_parse_one(text, len, NULL, &obj, &st);
	kc_free(text);
	shown = strcmp(file, "-") == 0 ? "the standard input" : file;
	if (r < 0)
		return cli_error(c, "%s: %s", shown,
		    st.message[0] != '\0' ? st.message : kc_strerror(r));
	api = kc_json_str(obj, "apiVersion");
	kind = kc_json_str(obj, "kind");
	name = kc_json_str(obj, "metadata", "name");
	if (!json_object_is_type(obj, json_type_object) || api == NULL || kind == NULL ||
	    strncmp(api, "trainyard.dev/", 14) != 0 || strcmp(kind, "Run") != 0) {
		r = cli_error(c, "%s: not a Run (apiVersion trainyard.dev/v1beta1, kind Run); "
		    "found %s %s", shown, api != NULL ? api : "no apiVersion",
		    kind != NULL ? kind : "no kind");
		goto out;
	}
	if (name == NULL || name[0] == '\0') {
		r = cli_error(c, "%s: the Run has no metadata.name", shown);
		goto out;
	}
	res.version = api + 14;
	if ((r = cli_connect(c)) != CLI_OK)
		goto out;
	obj_ns = kc_json_str(obj, "metadata", "namespace");
	if (obj_ns != NULL && obj_ns[0] != '\0') {
		if (c->ns_flag != NULL && strcmp(c->ns_flag, obj_ns) != 0) {
			r = cli_error(c, "the namespace from the provided object \"%s\" does not "
			    "match the namespace \"%s\". You must pass '--namespace=%s' to perform "
			    "this operation.", obj_ns, c->ns_flag, obj_ns);
			goto out;
		}
		c->ns = obj_ns;
	}
	(void)snprintf(what, sizeof(what), "apply run %s", name);
	r = kc_client_get(c->cl, &(struct kc_get_opts){ .res = &res, .ns = c->ns,
	    .name = name }, &cur, &st);
	if (r < 0 && r != KC_ENOTFOUND) {
		r = cli_api_error(c, what, r, &st);
		goto out;
	}
	if (r == 0)
		old_rv = kc_json_str(cur, "metadata", "resourceVersion");
	r = kc_client_apply(c->cl, &(struct kc_apply_opts){ .res = &res, .obj = obj,
	    .ns = c->ns, .field_manager = FIELD_MANAGER }, &out, &st);
	if (r == KC_ECONFLICT) {
		(void)fprintf(stderr, "error: %s: %s\n  (another tool owns these fields: change "
		    "them with it, or take them over with \"kubectl apply --server-side "
		    "--force-conflicts --field-manager=%s -f %s\")\n", what, st.message,
		    FIELD_MANAGER, file);
		r = CLI_ERROR;
		goto out;
	}
	if (r < 0) {
		r = cli_api_error(c, what, r, &st);
		goto out;
	}
	new_rv = kc_json_str(out, "metadata", "resourceVersion");
	verb = old_rv == NULL ? "created" : new_rv != NULL && strcmp(old_rv, new_rv) == 0 ?
	    "unchanged" : "configured";
	if (c->output != NULL && strcmp(c->output, "name") != 0) {
		if ((r = cli_print_object(c, out, "run.trainyard.dev")) != CLI_OK)
			goto out;
	} else if (c->output != NULL)
		(void)printf("run.trainyard.dev/%s\n", name);
	else
		(void)printf("run.trainyard.dev/%s %s\n", name, verb);
	(void)fflush(stdout);
	r = follow ? follow_to_end(c, name, wanted_session(out)) : CLI_OK;
out:
	json_object_put(cur);
	json_object_put(out);
	json_object_put(obj);
	return r;
}

const struct cli_cmd cli_cmd_submit = {
	.name = "submit",
	.summary = "create or apply a Run from a file; --follow streams its logs",
	.help = submit_help,
	.run = submit,
};

/* ---- run ------------------------------------------------------------------ */

static const char run_help[] =
    "Create a Run without a file, as \"kubectl run\" does for a pod.\n"
    "\n"
    "Usage: kubectl trainyard run NAME --image IMG --nodes N [--profile P]\n"
    "           [--env K=V ...] [--env-from-local K ...] [--deadline D] [--follow]\n"
    "           [--dry-run=client|server] [-o json|yaml|name] -- COMMAND ARGS...\n"
    "\n"
    "  --image IMG            the image every node runs (required)\n"
    "  --nodes N              how many nodes, one pod each (required)\n"
    "  --profile P            a ResourceProfile\n"
    "  -e, --env K=V          an environment variable (repeatable)\n"
    "  --env-from-local K     copy K from this shell's environment (repeatable)\n"
    "  --deadline D           fail a session running longer (2h, 30m)\n"
    "  --follow               stream the logs, then exit with the Run's result\n"
    "  --dry-run=client       print the Run (with -o yaml|json) without sending it;\n"
    "                         =server asks the server to validate it\n"
    "\n"
    "Exit codes with --follow: 0 Succeeded, 1 Failed, 2 Stopped, 4 the Run was\n"
    "deleted, 5 any other error, 130 after Ctrl-C (the Run goes on).\n"
    "\n"
    "Examples:\n"
    "  kubectl trainyard run llama --image registry.example/llama:1.2 --nodes 4 \\\n"
    "      --profile h100x8 --env-from-local WANDB_API_KEY --follow -- torchrun train.py\n"
    "  kubectl trainyard run smoke --image busybox --nodes 2 --dry-run=client -o yaml \\\n"
    "      -- sh -c 'echo hello from $TRAINYARD_NODE_INDEX'\n";

static int
add_env(struct cli *c, struct json_object *env, const char *name, size_t nlen,
    const char *value)
{
	struct json_object *e = json_object_new_object();
	char *n = kc_str_dup((struct kc_str){ .p = name, .len = nlen });

	if (e == NULL || n == NULL || kc_json_set_str(e, "name", n) < 0 ||
	    kc_json_set_str(e, "value", value) < 0 || kc_json_append(env, e) < 0) {
		json_object_put(e);
		kc_free(n);
		return cli_error(c, "out of memory");
	}
	kc_free(n);
	return CLI_OK;
}

static bool
env_name_ok(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '=' || (unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

/* The Run the flags describe, into *ret. */
static int
build_run(struct cli *c, const char *name, const char *image, int64_t nodes,
    const char *profile, const struct cli_list *envs, const struct cli_list *locals,
    uint64_t deadline_ms, char **cmd, int ncmd, struct json_object **ret)
{
	struct json_object *run = json_object_new_object(), *spec, *cont, *meta, *env, *a;
	int r = CLI_ERROR;

	if (run == NULL || kc_json_set_str(run, "apiVersion", "trainyard.dev/v1beta1") < 0 ||
	    kc_json_set_str(run, "kind", "Run") < 0 ||
	    (meta = kc_json_ensure_obj(run, "metadata")) == NULL ||
	    kc_json_set_str(meta, "name", name) < 0 ||
	    (c->ns_flag != NULL && kc_json_set_str(meta, "namespace", c->ns_flag) < 0) ||
	    (spec = kc_json_ensure_obj(run, "spec")) == NULL ||
	    kc_json_set_int(spec, "nodes", nodes) < 0 ||
	    (profile != NULL && kc_json_set_str(spec, "profile", profile) < 0) ||
	    (cont = kc_json_ensure_obj(spec, "container")) == NULL ||
	    kc_json_set_str(cont, "image", image) < 0)
		goto oom;
	if (ncmd > 0) {
		if ((a = json_object_new_array()) == NULL || kc_json_put(cont, "command", a) < 0 ||
		    kc_json_append(a, json_object_new_string(cmd[0])) < 0)
			goto oom;
		if (ncmd > 1) {
			if ((a = json_object_new_array()) == NULL ||
			    kc_json_put(cont, "args", a) < 0)
				goto oom;
			for (int i = 1; i < ncmd; i++)
				if (kc_json_append(a, json_object_new_string(cmd[i])) < 0)
					goto oom;
		}
	}
	if (envs->n + locals->n > 0) {
		if ((env = json_object_new_array()) == NULL || kc_json_put(cont, "env", env) < 0)
			goto oom;
		for (size_t i = 0; i < envs->n; i++) {
			const char *eq = strchr(envs->v[i], '=');

			if (eq == NULL || !env_name_ok(envs->v[i], (size_t)(eq - envs->v[i]))) {
				r = cli_error(c, "--env \"%s\": expected NAME=VALUE", envs->v[i]);
				goto out;
			}
			if ((r = add_env(c, env, envs->v[i], (size_t)(eq - envs->v[i]), eq + 1)) !=
			    CLI_OK)
				goto out;
		}
		for (size_t i = 0; i < locals->n; i++) {
			const char *v = getenv(locals->v[i]);

			if (!env_name_ok(locals->v[i], strlen(locals->v[i]))) {
				r = cli_error(c, "--env-from-local \"%s\": not a variable name",
				    locals->v[i]);
				goto out;
			}
			if (v == NULL) {
				r = cli_error(c, "--env-from-local %s: %s is not set in your "
				    "environment (export it, or pass --env %s=VALUE)", locals->v[i],
				    locals->v[i], locals->v[i]);
				goto out;
			}
			if ((r = add_env(c, env, locals->v[i], strlen(locals->v[i]), v)) != CLI_OK)
				goto out;
		}
	}
	if (deadline_ms > 0) {
		struct json_object *d = kc_json_ensure_obj(spec, "deadlines");

		if (d == NULL || kc_json_set_int(d, "activeSeconds",
		    (int64_t)((deadline_ms + 999) / 1000)) < 0)
			goto oom;
	}
	*ret = run;
	return CLI_OK;
oom:
	r = cli_error(c, "out of memory");
out:
	json_object_put(run);
	return r;
}

static int
run_cmd(struct cli *c, int argc, char **argv)
{
	const char *image = NULL, *profile = NULL, *dry = NULL, *name;
	struct cli_list envs = { 0 }, locals = { 0 };
	int64_t nodes = 0;
	uint64_t deadline_ms = 0;
	bool follow = false, nodes_seen = false, done;
	const struct cli_flag flags[] = {
		{ "image", 0, CLI_FLAG_STR, &image, NULL },
		{ "nodes", 0, CLI_FLAG_INT, &nodes, &nodes_seen },
		{ "profile", 0, CLI_FLAG_STR, &profile, NULL },
		{ "env", 'e', CLI_FLAG_LIST, &envs, NULL },
		{ "env-from-local", 0, CLI_FLAG_LIST, &locals, NULL },
		{ "deadline", 0, CLI_FLAG_DURATION, &deadline_ms, NULL },
		{ "follow", 0, CLI_FLAG_BOOL, &follow, NULL },
		{ "dry-run", 0, CLI_FLAG_STR, &dry, NULL },
		{ NULL, 0, 0, NULL, NULL },
	};
	struct json_object *obj = NULL, *out = NULL;
	struct kc_status st = { 0 };
	char what[320];
	int nargs, dd, r;

	if ((r = cli_parse(c, &cli_cmd_run, flags, argc, argv, &nargs, &dd, &done)) !=
	    CLI_OK || done)
		return r;
	if (dd != 1)
		return cli_error(c, "run takes one name before \"--\" (then the command); see %s "
		    "run --help", c->prog);
	name = argv[1];
	if (image == NULL || image[0] == '\0')
		return cli_error(c, "--image is required; see %s run --help", c->prog);
	if (!nodes_seen || nodes < 1 || nodes > 10000)
		return cli_error(c, "--nodes N is required, 1 to 10000; see %s run --help",
		    c->prog);
	if (dry != NULL && strcmp(dry, "client") != 0 && strcmp(dry, "server") != 0 &&
	    strcmp(dry, "none") != 0)
		return cli_error(c, "--dry-run: \"%s\" is not one of client, server, none", dry);
	if (dry != NULL && strcmp(dry, "none") == 0)
		dry = NULL;
	if (dry != NULL && follow)
		return cli_error(c, "--follow needs a Run that exists: drop --dry-run");
	if ((r = kc_client_check_name(name, &st)) < 0)
		return cli_error(c, "run name \"%s\": %s", name, st.message);
	if ((r = build_run(c, name, image, nodes, profile, &envs, &locals, deadline_ms,
	    argv + 1 + dd, nargs - dd, &obj)) != CLI_OK)
		return r;
	if (dry != NULL && strcmp(dry, "client") == 0) {
		if (c->output != NULL)
			r = cli_print_object(c, obj, "run.trainyard.dev");
		else
			(void)printf("run.trainyard.dev/%s created (dry run)\n", name);
		goto out;
	}
	if ((r = cli_connect(c)) != CLI_OK)
		goto out;
	(void)snprintf(what, sizeof(what), "create run %s", name);
	r = kc_client_create(c->cl, &(struct kc_create_opts){ .res = &cli_res_runs,
	    .ns = c->ns, .dry_run = dry != NULL, .field_manager = FIELD_MANAGER }, obj, &out,
	    &st);
	if (r == KC_EEXISTS) {
		r = cli_error(c, "run \"%s\" already exists in namespace %s: change it with "
		    "\"%s submit -f\", or pick another name", name, c->ns, c->prog);
		goto out;
	}
	if (r < 0) {
		r = cli_api_error(c, what, r, &st);
		goto out;
	}
	if (c->output != NULL && strcmp(c->output, "name") != 0)
		r = cli_print_object(c, out, "run.trainyard.dev");
	else if (c->output != NULL)
		(void)printf("run.trainyard.dev/%s\n", name);
	else
		(void)printf("run.trainyard.dev/%s created%s\n", name,
		    dry != NULL ? " (server dry run)" : "");
	(void)fflush(stdout);
	if (r == CLI_OK && follow)
		r = follow_to_end(c, name, wanted_session(out));
out:
	json_object_put(obj);
	json_object_put(out);
	return r;
}

const struct cli_cmd cli_cmd_run = {
	.name = "run",
	.summary = "create a Run from flags (no file); --follow streams its logs",
	.help = run_help,
	.run = run_cmd,
};

/*
 * cmd_version.c: "kubectl trainyard version": this plugin's version and
 * the API server's.
 */
#include <stdio.h>

#include <kc/alloc.h>
#include <kc/json.h>

#include "cli.h"

static const char help[] =
    "Print the version of kubectl-trainyard and of the API server.\n"
    "\n"
    "Usage: kubectl trainyard version [--client] [-o json|yaml]\n"
    "\n"
    "  --client   only the plugin's version (no cluster needed)\n"
    "\n"
    "Examples:\n"
    "  kubectl trainyard version\n"
    "  kubectl trainyard version --client\n";

static int
run(struct cli *c, int argc, char **argv)
{
	bool client = false, done;
	const struct cli_flag flags[] = {
		{ "client", 0, CLI_FLAG_BOOL, &client, NULL },
		{ NULL, 0, 0, NULL, NULL },
	};
	struct json_object *v = NULL, *out;
	struct kc_status st = { 0 };
	int nargs, dd, r;

	if ((r = cli_parse(c, &cli_cmd_version, flags, argc, argv, &nargs, &dd, &done)) !=
	    CLI_OK || done)
		return r;
	if (nargs > 0)
		return cli_error(c, "version takes no arguments");
	if ((out = json_object_new_object()) == NULL ||
	    kc_json_set_str(out, "clientVersion", KC_VERSION) < 0) {
		json_object_put(out);
		return cli_error(c, "out of memory");
	}
	if (!client) {
		if ((r = cli_connect(c)) != CLI_OK) {
			json_object_put(out);
			return r;
		}
		if ((r = kc_client_get_path(c->cl, "/version", &v, &st)) < 0) {
			json_object_put(out);
			return cli_api_error(c, "get /version", r, &st);
		}
		if (kc_json_put(out, "serverVersion", v) < 0) {
			json_object_put(out);
			return cli_error(c, "out of memory");
		}
	}
	if (c->output != NULL && c->output[0] != 'n' && c->output[0] != 'w') {
		r = cli_print_object(c, out, "version");
		json_object_put(out);
		return r;
	}
	(void)printf("Client Version: kubectl-trainyard %s\n", KC_VERSION);
	if (!client)
		(void)printf("Server Version: %s\n",
		    kc_json_str(out, "serverVersion", "gitVersion") != NULL ?
		    kc_json_str(out, "serverVersion", "gitVersion") : "unknown");
	json_object_put(out);
	return CLI_OK;
}

const struct cli_cmd cli_cmd_version = {
	.name = "version",
	.summary = "the plugin's and the API server's versions",
	.help = help,
	.run = run,
};

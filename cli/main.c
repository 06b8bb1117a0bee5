/*
 * main.c: kubectl-trainyard's entry: the command table, the command line
 * (global flags may come before the command's name), help.
 */
#include <stdio.h>
#include <string.h>

#include <kc/macro.h>
#include <kc/transport.h>

#include "cli.h"

/* The commands, in the order "kubectl trainyard --help" lists them. */
static const struct cli_cmd *const commands[] = {
	&cli_cmd_version,
	/* logs, submit, run */
	&cli_cmd_submit,
	&cli_cmd_run,
	&cli_cmd_logs,
	/* wait, stop, resume, restart, describe, list */
	&cli_cmd_list,
	&cli_cmd_describe,
	&cli_cmd_wait,
	&cli_cmd_stop,
	&cli_cmd_resume,
	&cli_cmd_restart,
	/* cli-admin */
	&cli_cmd_exec,
	&cli_cmd_invite,
	&cli_cmd_members,
	&cli_cmd_remove,
	&cli_cmd_upgrade,
	&cli_cmd_completion,
	NULL
};

/* The table for "completion" (admin.h). */
const struct cli_cmd *const *const cli_commands = commands;

static void
usage(FILE *f)
{
	(void)fputs("kubectl trainyard: submit, follow and manage Trainyard Runs "
	    "(docs/cli.md)\n\nCommands:\n", f);
	for (size_t i = 0; commands[i] != NULL; i++)
		(void)fprintf(f, "  %-11s %s\n", commands[i]->name, commands[i]->summary);
	(void)fputs("\nFlags of every command:\n"
	    "  --kubeconfig PATH    the kubeconfig (else $KUBECONFIG, ~/.kube/config)\n"
	    "  --context NAME       a context of the kubeconfig\n"
	    "  -n, --namespace NS   the namespace (else the context's)\n"
	    "  -A, --all-namespaces every namespace (list)\n"
	    "  --as USER, --as-group GROUP   act as another user (impersonation)\n"
	    "  -o, --output FORMAT  json, yaml, name or wide, where a command prints objects\n"
	    "  --request-timeout D  of each API request (30s, 2m)\n"
	    "  -h, --help           the command's help, with examples\n"
	    "\nExit codes: 0 success, 1 the Run failed, 2 it was stopped, 3 timeout, 4 no such "
	    "Run, 5 any other error.\n", f);
}

/* Whether global flag 'arg' ("--context" without "=") takes the next argument. */
static bool
takes_next(const char *arg)
{
	static const char *const with_value[] = {
		"--kubeconfig", "--context", "--namespace", "-n", "--as", "--as-group",
		"--output", "-o", "--request-timeout",
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(with_value); i++)
		if (strcmp(arg, with_value[i]) == 0)
			return true;
	return false;
}

int
main(int argc, char **argv)
{
	struct cli c = { .prog = "kubectl trainyard" };
	const struct cli_cmd *cmd = NULL;
	int at = 1, r;

	/* The command is the first argument that is neither a flag nor a flag's value. */
	while (at < argc && argv[at][0] == '-' && strcmp(argv[at], "--") != 0) {
		if (strcmp(argv[at], "-h") == 0 || strcmp(argv[at], "--help") == 0) {
			usage(stdout);
			return CLI_OK;
		}
		at += takes_next(argv[at]) ? 2 : 1;
	}
	if (at >= argc) {
		usage(stderr);
		return CLI_ERROR;
	}
	if (strcmp(argv[at], "help") == 0) {
		usage(stdout);
		return CLI_OK;
	}
	for (size_t i = 0; commands[i] != NULL && cmd == NULL; i++)
		if (strcmp(commands[i]->name, argv[at]) == 0)
			cmd = commands[i];
	if (cmd == NULL) {
		(void)fprintf(stderr, "error: unknown command \"%s\"; \"kubectl trainyard "
		    "--help\" lists them\n", argv[at]);
		return CLI_ERROR;
	}
	/* The command's argv: its name first, then every other argument in order. */
	{
		char *name = argv[at];

		memmove(&argv[2], &argv[1], sizeof(*argv) * (size_t)(at - 1));
		argv[1] = name;
	}
	if (kc_transport_global_init() < 0)
		return cli_error(&c, "cannot initialize libcurl");
	r = cmd->run(&c, argc - 1, argv + 1);
	cli_release(&c);
	kc_transport_global_cleanup();
	return r;
}

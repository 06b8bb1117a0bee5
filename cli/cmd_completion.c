/*
 * cmd_completion.c: "kubectl trainyard completion bash|zsh": the shell
 * completion script (admin.c writes it from the command table).
 */
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "cli.h"

static const char help[] =
    "Print a shell completion script for kubectl trainyard: the commands, each\n"
    "command's flags, and Run names (from \"kubectl trainyard list -o name\").\n"
    "\n"
    "Usage: kubectl trainyard completion bash|zsh\n"
    "\n"
    "Examples:\n"
    "  source <(kubectl trainyard completion bash)       # in ~/.bashrc\n"
    "  source <(kubectl trainyard completion zsh)        # in ~/.zshrc, after compinit\n"
    "  kubectl trainyard completion bash > /etc/bash_completion.d/kubectl-trainyard\n";

static int
run(struct cli *c, int argc, char **argv)
{
	int nargs, dd, r;
	bool done;

	if ((r = cli_parse(c, &cli_cmd_completion, NULL, argc, argv, &nargs, &dd, &done)) !=
	    CLI_OK || done)
		return r;
	if (nargs != 1)
		return cli_error(c, "completion takes the shell: bash or zsh");
	if (completion_script(stdout, argv[1], cli_commands) < 0)
		return cli_error(c, "completion: \"%s\" is not a shell it knows: bash or zsh",
		    argv[1]);
	return fflush(stdout) == 0 ? CLI_OK : cli_error(c, "writing the script failed");
}

const struct cli_cmd cli_cmd_completion = {
	.name = "completion",
	.summary = "a shell completion script (bash, zsh)",
	.help = help,
	.run = run,
};

/*
 * fuzz_cli_args.c: kubectl-trainyard's argument parser (cli/common.c's
 * cli_parse()): the input is an argument vector, one argument per line,
 * parsed with the global flags and one flag of each type. Whatever it
 * answers, the positional arguments it keeps are among those given.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/cli.h"

#include "fuzz.h"

#define ARGS_MAX	64

static const struct cli_cmd cmd = { .name = "logs", .summary = "", .help = "HELP\n" };

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool follow = false, done = false;
	const char *node = NULL;
	int64_t tail = 0;
	uint64_t since = 0;
	struct cli_list env = { 0 };
	const struct cli_flag flags[] = {
		{ "follow", 'f', CLI_FLAG_BOOL, &follow, NULL },
		{ "node", 0, CLI_FLAG_STR, &node, NULL },
		{ "tail", 0, CLI_FLAG_INT, &tail, NULL },
		{ "since", 0, CLI_FLAG_DURATION, &since, NULL },
		{ "env", 'e', CLI_FLAG_LIST, &env, NULL },
		{ NULL, 0, 0, NULL, NULL },
	};
	char *text, *argv[ARGS_MAX + 2], *p, *nl;
	int argc = 0, nargs = -1, dd = -1, r;
	struct cli c;

	if (size > 16 << 10 || (text = fuzz_str(data, size)) == NULL)
		return 0;
	argv[argc++] = (char *)(uintptr_t)"logs";
	for (p = text; p != NULL && argc < ARGS_MAX + 1; p = nl) {
		if ((nl = strchr(p, '\n')) != NULL)
			*nl++ = '\0';
		argv[argc++] = p;
	}
	argv[argc] = NULL;
	memset(&c, 0, sizeof(c));
	c.prog = "kubectl trainyard";
	r = cli_parse(&c, &cmd, flags, argc, argv, &nargs, &dd, &done);
	FUZZ_CHECK(r == CLI_OK || r == CLI_ERROR);
	if (r == CLI_OK && !done) {
		FUZZ_CHECK(nargs >= 0 && nargs < argc && dd >= 0 && dd <= nargs);
		for (int i = 1; i <= nargs; i++)
			FUZZ_CHECK(argv[i] >= text && argv[i] <= text + size);
		FUZZ_CHECK(env.n <= CLI_LIST_MAX && c.nas_groups <= CLI_AS_GROUPS_MAX);
	}
	free(text);
	return 0;
}

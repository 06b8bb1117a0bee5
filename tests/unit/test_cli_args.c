/*
 * test_cli_args.c: kubectl-trainyard's command line (cli/common.c's
 * cli_parse()): global and command flags anywhere, values inline or next,
 * "--", and errors that name the flag and the command's help.
 */
#include <stdio.h>
#include <string.h>

#include <check.h>

#include "testutil.h"
#include "../../cli/cli.h"

static const struct cli_cmd cmd = { .name = "logs", .summary = "", .help = "HELP\n" };

struct flags {
	bool		 follow;
	const char	*node;
	int64_t		 tail;
	uint64_t	 since;
	struct cli_list	 env;
};

static int
parse(struct cli *c, struct flags *f, char **argv, int argc, int *nargs, int *dd,
    bool *done)
{
	const struct cli_flag flags[] = {
		{ "follow", 'f', CLI_FLAG_BOOL, &f->follow, NULL },
		{ "node", 0, CLI_FLAG_STR, &f->node, NULL },
		{ "tail", 0, CLI_FLAG_INT, &f->tail, NULL },
		{ "since", 0, CLI_FLAG_DURATION, &f->since, NULL },
		{ "env", 'e', CLI_FLAG_LIST, &f->env, NULL },
		{ NULL, 0, 0, NULL, NULL },
	};

	memset(c, 0, sizeof(*c));
	c->prog = "kubectl trainyard";
	memset(f, 0, sizeof(*f));
	return cli_parse(c, &cmd, flags, argc, argv, nargs, dd, done);
}

START_TEST(test_flags_anywhere)
{
	char *argv[] = { "logs", "-n", "team", "llama", "-f", "--node=3", "--tail", "20",
	    "--since", "10m", "-e", "A=1", "--env", "B=2", "--as", "alice", "--as-group",
	    "g1", "--as-group=g2", "-A", "-oyaml", "--", "python", "-u", NULL };
	struct cli c;
	struct flags f;
	int nargs, dd;
	bool done;

	ck_assert_int_eq(parse(&c, &f, argv, 24, &nargs, &dd, &done), CLI_OK);
	ck_assert(!done);
	ck_assert_int_eq(nargs, 3);
	ck_assert_int_eq(dd, 1);
	ck_assert_str_eq(argv[1], "llama");
	ck_assert_str_eq(argv[2], "python");
	ck_assert_str_eq(argv[3], "-u");
	ck_assert_str_eq(c.ns_flag, "team");
	ck_assert(f.follow);
	ck_assert_str_eq(f.node, "3");
	ck_assert_int_eq(f.tail, 20);
	ck_assert_uint_eq(f.since, 600000);
	ck_assert_uint_eq(f.env.n, 2);
	ck_assert_str_eq(f.env.v[1], "B=2");
	ck_assert_str_eq(c.as, "alice");
	ck_assert_uint_eq(c.nas_groups, 2);
	ck_assert_str_eq(c.as_groups[1], "g2");
	ck_assert(c.all_ns);
	ck_assert_str_eq(c.output, "yaml");
}
END_TEST

START_TEST(test_errors)
{
	static const struct {
		char		*args[4];
		int		 argc;
	} bad[] = {
		{ { "logs", "--nodes", "3" }, 3 },	/* unknown */
		{ { "logs", "--tail" }, 2 },		/* needs a value */
		{ { "logs", "--tail", "-1" }, 3 },	/* not a non-negative integer */
		{ { "logs", "--since", "ten" }, 3 },	/* not a duration */
		{ { "logs", "-fx" }, 2 },		/* a switch with a value */
		{ { "logs", "-o", "xml" }, 3 },		/* not an output */
	};
	struct cli c;
	struct flags f;
	int nargs, dd;
	bool done;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[5] = { 0 };

		for (int k = 0; k < bad[i].argc; k++)
			argv[k] = bad[i].args[k];
		ck_assert_msg(parse(&c, &f, argv, bad[i].argc, &nargs, &dd, &done) ==
		    CLI_ERROR, "case %zu", i);
	}
}
END_TEST

START_TEST(test_durations_and_help)
{
	char *argv[] = { "logs", "--since", "30d", NULL };
	char *help[] = { "logs", "x", "--help", NULL };
	struct cli c;
	struct flags f;
	int nargs, dd;
	bool done;

	ck_assert_int_eq(parse(&c, &f, argv, 3, &nargs, &dd, &done), CLI_OK);
	ck_assert_uint_eq(f.since, 30ULL * 86400000ULL);
	ck_assert_int_eq(nargs, 0);
	ck_assert_int_eq(dd, 0);
	ck_assert_int_eq(parse(&c, &f, help, 3, &nargs, &dd, &done), CLI_OK);
	ck_assert(done);
}
END_TEST

Suite *
cli_args_suite(void)
{
	Suite *s = suite_create("cli_args");
	TCase *tc = tcase_create("args");

	tcase_add_test(tc, test_flags_anywhere);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_durations_and_help);
	suite_add_tcase(s, tc);
	return s;
}

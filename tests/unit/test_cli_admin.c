/*
 * test_cli_admin.c: the pure parts of kubectl-trainyard's exec, invite,
 * upgrade and completion commands (cli/admin.c): member names, --expires,
 * ages, the exec error channel's Status, the exec path, a CRD's versions
 * and the runbook's next step, and the completion scripts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/str.h>
#include <kc/validation.h>

#include "testutil.h"
#include "../../cli/admin.h"

static const struct {
	const char	*subject;
	bool		 group;
	const char	*want;		/* exact, or a prefix ending in '-' then a hash */
	bool		 hashed;
} name_cases[] = {
	{ "alice", false, "alice", false },
	{ "bob-2", false, "bob-2", false },
	{ "Alice", false, "alice-", true },
	{ "alice@example.com", false, "alice-example-com-", true },
	{ "alice.example.com", false, "alice-example-com-", true },
	{ "-x-", false, "x-", true },
	{ "llm-leads", true, "group-llm-leads", false },
	{ "system:authenticated", true, "group-system-authenticated-", true },
	{ "@@@", false, "", true },
};

START_TEST(test_member_name)
{
	char a[MEMBER_NAME_MAX + 1], b[MEMBER_NAME_MAX + 1];
	char longname[300];

	for (size_t i = 0; i < KC_ARRAY_SIZE(name_cases); i++) {
		ck_assert_int_eq(member_name(name_cases[i].subject, name_cases[i].group, a), 0);
		ck_assert_msg(kc_valid_is_dns1123_label(kc_str_from(a)), "%s -> %s",
		    name_cases[i].subject, a);
		if (!name_cases[i].hashed) {
			ck_assert_str_eq(a, name_cases[i].want);
			continue;
		}
		ck_assert_msg(strncmp(a, name_cases[i].want, strlen(name_cases[i].want)) == 0,
		    "%s -> %s", name_cases[i].subject, a);
		ck_assert_uint_eq(strlen(a), strlen(name_cases[i].want) + 8);
	}
	/* Different subjects that read the same get different names; the same, the same. */
	ck_assert_int_eq(member_name("alice@example.com", false, a), 0);
	ck_assert_int_eq(member_name("alice.example.com", false, b), 0);
	ck_assert_str_ne(a, b);
	ck_assert_int_eq(member_name("alice@example.com", false, b), 0);
	ck_assert_str_eq(a, b);
	/* A user and a group of one name differ. */
	ck_assert_int_eq(member_name("leads", false, a), 0);
	ck_assert_int_eq(member_name("leads", true, b), 0);
	ck_assert_str_ne(a, b);
	/* Long names are cut to a label, hash included. */
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ck_assert_int_eq(member_name(longname, false, a), 0);
	ck_assert_uint_eq(strlen(a), MEMBER_NAME_MAX);
	ck_assert(kc_valid_is_dns1123_label(kc_str_from(a)));
	ck_assert_int_eq(member_name("", false, a), -EINVAL);
	ck_assert_int_eq(member_name(NULL, false, a), -EINVAL);
}
END_TEST

START_TEST(test_member_expiry)
{
	const time_t now = 1800000000;	/* 2027-01-15T08:00:00Z */
	time_t t;

	ck_assert_int_eq(member_parse_expiry("30d", now, &t), 0);
	ck_assert_int_eq(t, now + 30 * 86400);
	ck_assert_int_eq(member_parse_expiry("720h", now, &t), 0);
	ck_assert_int_eq(t, now + 720 * 3600);
	ck_assert_int_eq(member_parse_expiry("90m", now, &t), 0);
	ck_assert_int_eq(t, now + 90 * 60);
	ck_assert_int_eq(member_parse_expiry("2027-03-01", now, &t), 0);
	ck_assert_int_eq(t, 1803859200);
	ck_assert_int_eq(member_parse_expiry("2027-03-01T12:00:00Z", now, &t), 0);
	ck_assert_int_eq(t, 1803859200 + 12 * 3600);
	ck_assert_int_eq(member_parse_expiry("2027-03-01T12:00:00+02:00", now, &t), 0);
	ck_assert_int_eq(t, 1803859200 + 10 * 3600);
	/* Not in the future. */
	ck_assert_int_eq(member_parse_expiry("2020-01-01", now, &t), -ERANGE);
	ck_assert_int_eq(member_parse_expiry("0d", now, &t), -ERANGE);
	ck_assert_int_eq(member_parse_expiry("0s", now, &t), -ERANGE);
	/* Not a time. */
	ck_assert_int_eq(member_parse_expiry("soon", now, &t), -EINVAL);
	ck_assert_int_eq(member_parse_expiry("d", now, &t), -EINVAL);
	ck_assert_int_eq(member_parse_expiry("-3d", now, &t), -EINVAL);
	ck_assert_int_eq(member_parse_expiry("2027-13-01", now, &t), -EINVAL);
	ck_assert_int_eq(member_parse_expiry("99999999999999999999999d", now, &t), -EINVAL);
	ck_assert_int_eq(member_parse_expiry("36501d", now, &t), -EINVAL);
	ck_assert_int_eq(member_parse_expiry("", now, &t), -EINVAL);
}
END_TEST

START_TEST(test_exec_status)
{
	struct exec_result res;
	const char *ok = "{\"metadata\":{},\"status\":\"Success\"}";
	const char *code3 = "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command "
	    "terminated with non-zero exit code: error executing command [sh -c exit 3], exit "
	    "code 3\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":"
	    "\"ExitCode\",\"message\":\"3\"}]}}";
	const char *internal = "{\"status\":\"Failure\",\"message\":\"container not found "
	    "(\\\"main\\\")\",\"reason\":\"InternalError\",\"code\":500}";
	const char *bad_code = "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\","
	    "\"details\":{\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"999\"}]}}";

	ck_assert_int_eq(exec_parse_status(ok, strlen(ok), &res), 0);
	ck_assert_int_eq(res.exit_code, 0);
	ck_assert_int_eq(exec_parse_status(code3, strlen(code3), &res), 0);
	ck_assert_int_eq(res.exit_code, 3);
	ck_assert_int_eq(exec_parse_status(internal, strlen(internal), &res), 0);
	ck_assert_int_eq(res.exit_code, -1);
	ck_assert_str_eq(res.message, "container not found (\"main\")");
	ck_assert(!res.forbidden);
	{
		const char *denied = "{\"status\":\"Failure\",\"message\":\"pods \\\"x-0\\\" "
		    "is forbidden\",\"reason\":\"Forbidden\",\"code\":403}";

		ck_assert_int_eq(exec_parse_status(denied, strlen(denied), &res), 0);
		ck_assert_int_eq(res.exit_code, -1);
		ck_assert(res.forbidden);
		ck_assert_str_eq(res.message, "pods \"x-0\" is forbidden");
	}
	/* An exit code out of range is no exit code: the message (a default) stands. */
	ck_assert_int_eq(exec_parse_status(bad_code, strlen(bad_code), &res), 0);
	ck_assert_int_eq(res.exit_code, -1);
	ck_assert_str_eq(res.message, "the command failed, and the server said nothing more");
	ck_assert_int_eq(exec_parse_status("nope", 4, &res), -EINVAL);
	ck_assert_int_eq(exec_parse_status("[1]", 3, &res), -EINVAL);
	ck_assert_int_eq(exec_parse_status("{}", 2, &res), -EINVAL);
	/* Not NUL-terminated: only 'len' bytes count. */
	ck_assert_int_eq(exec_parse_status("{\"status\":\"Success\"}garbage", 20, &res), 0);
	ck_assert_int_eq(res.exit_code, 0);
}
END_TEST

START_TEST(test_exec_path_resize)
{
	char *argv[] = { "sh", "-c", "echo a&b; exit 3" };
	char buf[64], *p;

	p = exec_path("t1", "job-2", "main", argv, 3, false, false, 4096);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p, "/api/v1/namespaces/t1/pods/job-2/exec?command=sh&command=-c&"
	    "command=echo%20a%26b%3B%20exit%203&container=main&stdout=true&stderr=true");
	kc_free(p);
	p = exec_path("t1", "job-0", "main", argv, 1, true, true, 4096);
	ck_assert_str_eq(p, "/api/v1/namespaces/t1/pods/job-0/exec?command=sh&container=main&"
	    "stdin=true&stdout=true&tty=true");
	kc_free(p);
	ck_assert_ptr_null(exec_path("t1", "job-0", "main", argv, 3, false, false, 40));
	ck_assert_uint_eq(exec_resize_msg(120, 40, buf, sizeof(buf)), 25);
	ck_assert_str_eq(buf, "{\"Width\":120,\"Height\":40}");
}
END_TEST

static struct json_object *
crd(const char *versions, const char *stored)
{
	char text[1024];
	struct json_object *o = NULL;
	struct kc_status st = { 0 };

	(void)snprintf(text, sizeof(text), "{\"spec\":{\"versions\":%s},\"status\":"
	    "{\"storedVersions\":%s}}", versions, stored);
	ck_assert_int_eq(kc_json_parse(text, strlen(text), &o, &st), 0);
	return o;
}

#define V1A(served, storage) \
	"{\"name\":\"v1alpha1\",\"served\":" #served ",\"storage\":" #storage "}"
#define V1B(served, storage) \
	"{\"name\":\"v1beta1\",\"served\":" #served ",\"storage\":" #storage "}"

START_TEST(test_upgrade_steps)
{
	static const struct {
		const char	*versions, *stored, *want;
	} cases[] = {
		{ "[" V1A(true, true) "]", "[\"v1alpha1\"]", "steps 1 and 2" },
		{ "[" V1A(true, true) "," V1B(false, false) "]", "[\"v1alpha1\"]", "step 3" },
		{ "[" V1A(true, true) "," V1B(true, false) "]", "[\"v1alpha1\"]", "step 4" },
		{ "[" V1A(true, false) "," V1B(true, true) "]", "[\"v1alpha1\",\"v1beta1\"]",
		    "step 5" },
		{ "[" V1A(true, false) "," V1B(true, true) "]", "[\"v1beta1\"]", "step 6" },
		{ "[" V1A(false, false) "," V1B(true, true) "]", "[\"v1beta1\"]", "step 7" },
		{ "[" V1A(false, false) "," V1B(true, true) "]", "[\"v1alpha1\",\"v1beta1\"]",
		    "step 5" },
		{ "[" V1B(true, true) "]", "[\"v1beta1\"]", "nothing to do: v1beta1 alone" },
		{ "[" V1B(true, true) "]", "[\"v1alpha1\",\"v1beta1\"]", "step 5" },
		{ "[" V1A(true, true) "," V1B(true, true) "]", "[]", "the CRD has no single storage" },
	};
	struct crd_versions v;
	char buf[512];

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct json_object *o = crd(cases[i].versions, cases[i].stored);

		ck_assert_int_eq(crd_versions_read(o, &v), 0);
		upgrade_next_step(&v, buf, sizeof(buf));
		ck_assert_msg(strncmp(buf, cases[i].want, strlen(cases[i].want)) == 0,
		    "case %zu: %s", i, buf);
		json_object_put(o);
	}
	{
		struct json_object *o = crd("[" V1A(true, false) "," V1B(true, true) "]",
		    "[\"v1alpha1\",\"v1beta1\"]");

		ck_assert_int_eq(crd_versions_read(o, &v), 0);
		ck_assert_uint_eq(v.n, 2);
		ck_assert_str_eq(v.storage, "v1beta1");
		ck_assert(v.served[0] && v.served[1]);
		ck_assert_uint_eq(v.nstored, 2);
		ck_assert_str_eq(v.stored[0], "v1alpha1");
		json_object_put(o);
		o = crd("[]", "[]");
		ck_assert_int_eq(crd_versions_read(o, &v), -EINVAL);
		json_object_put(o);
		o = crd("[{\"served\":true}]", "[]");
		ck_assert_int_eq(crd_versions_read(o, &v), -EINVAL);
		json_object_put(o);
	}
}
END_TEST

static const struct cli_cmd cmd_a = {
	.name = "logs", .summary = "logs: of a Run's nodes",
	.help = "Usage: kubectl trainyard logs RUN [--node I|--all] [-f]\n"
	    "  --follow   follow\n  --since D  since; not a--flag\n",
};
static const struct cli_cmd cmd_b = {
	.name = "invite", .summary = "invite someone's friend",
	.help = "  --role ROLE\n  --expires WHEN\n  --role again\n",
};
static const struct cli_cmd cmd_c = { .name = "completion", .summary = "s", .help = "" };
static const struct cli_cmd *const cmds[] = { &cmd_a, &cmd_b, &cmd_c, NULL };

static char *
script(const char *shell)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(completion_script(f, shell, cmds), 0);
	ck_assert_int_eq(fclose(f), 0);
	return text;
}

START_TEST(test_completion)
{
	char *b = script("bash"), *z = script("zsh");

	ck_assert_ptr_nonnull(strstr(b, "local commands=\"logs invite completion help\""));
	ck_assert_ptr_nonnull(strstr(b, "    logs)\n"));
	/* The flags each help names, once, and none from inside words. */
	ck_assert_ptr_nonnull(strstr(b, "compgen -W \"--node --all --follow --since $globals\""));
	ck_assert_ptr_nonnull(strstr(b, "compgen -W \"--role --expires $globals\""));
	ck_assert_ptr_null(strstr(b, "--flag"));
	/* Run names for a command on a Run, through the plugin itself. */
	ck_assert_ptr_nonnull(strstr(b, "kubectl trainyard list \"${ns[@]}\" -o name"));
	ck_assert_ptr_nonnull(strstr(b, "compgen -W \"bash zsh\""));
	ck_assert_ptr_nonnull(strstr(b, "complete -o default -F _kubectl_trainyard_wrap kubectl\n"));
	ck_assert_ptr_nonnull(strstr(z, "#compdef kubectl-trainyard\n"));
	/* zsh descriptions: no ':' (a separator there), quotes escaped. */
	ck_assert_ptr_nonnull(strstr(z, "'logs:logs of a Run'\\''s nodes'"));
	ck_assert_ptr_nonnull(strstr(z, "'invite:invite someone'\\''s friend'"));
	ck_assert_ptr_nonnull(strstr(z, "compadd -- --role --expires $globals"));
	free(b);
	free(z);
	{
		FILE *f = fopen("/dev/null", "w");

		ck_assert_int_eq(completion_script(f, "fish", cmds), -EINVAL);
		(void)fclose(f);
	}
}
END_TEST

Suite *
cli_admin_suite(void)
{
	Suite *s = suite_create("cli_admin");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_member_name);
	tcase_add_test(tc, test_member_expiry);
	tcase_add_test(tc, test_exec_status);
	tcase_add_test(tc, test_exec_path_resize);
	tcase_add_test(tc, test_upgrade_steps);
	tcase_add_test(tc, test_completion);
	suite_add_tcase(s, tc);
	return s;
}

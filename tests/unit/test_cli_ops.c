/*
 * test_cli_ops.c: the pure parts of kubectl-trainyard's wait, stop,
 * resume, restart, describe and list (cli/ops.c): a Run's result and
 * whether a session is still to come, the merge patches, aligned tables,
 * list rows with kubectl's AGE.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/watch.h>

#include "testutil.h"
#include "../fakes/fake_transport.h"
#include "../../cli/cli.h"
#include "../../cli/ops.h"

static struct json_object *
parse(const char *text)
{
	struct json_object *o = NULL;

	ck_assert_int_eq(kc_json_parse(text, strlen(text), &o, NULL), 0);
	return o;
}

static int
check(const char *text, enum ops_for what)
{
	struct json_object *run = parse(text);
	int r = ops_wait_check(run, what);

	json_object_put(run);
	return r;
}

START_TEST(test_phase_result)
{
	ck_assert_int_eq(ops_phase_result("Succeeded"), 0);
	ck_assert_int_eq(ops_phase_result("Failed"), 1);
	ck_assert_int_eq(ops_phase_result("Stopped"), 2);
	ck_assert_int_eq(ops_phase_result("Running"), -1);
	ck_assert_int_eq(ops_phase_result("Pending"), -1);
	ck_assert_int_eq(ops_phase_result(NULL), -1);
	ck_assert_int_eq(ops_phase_result("succeeded"), -1);
}
END_TEST

START_TEST(test_wait_check)
{
	/* Ended sessions give their result; a running one waits, or starts. */
	ck_assert_int_eq(check("{\"spec\":{\"session\":1},\"status\":{\"session\":1,"
	    "\"phase\":\"Succeeded\"}}", OPS_FOR_END), 0);
	ck_assert_int_eq(check("{\"status\":{\"session\":1,\"phase\":\"Failed\","
	    "\"reason\":\"PodFailed\"}}", OPS_FOR_END), 1);
	ck_assert_int_eq(check("{\"spec\":{\"suspend\":true},\"status\":{\"session\":1,"
	    "\"phase\":\"Stopped\",\"reason\":\"Suspended\"}}", OPS_FOR_END), 2);
	ck_assert_int_eq(check("{\"status\":{\"session\":1,\"phase\":\"Running\"}}",
	    OPS_FOR_END), -1);
	ck_assert_int_eq(check("{\"status\":{\"session\":1,\"phase\":\"Running\"}}",
	    OPS_FOR_START), 0);
	ck_assert_int_eq(check("{\"status\":{\"session\":1,\"phase\":\"Pending\"}}",
	    OPS_FOR_START), -1);
	ck_assert_int_eq(check("{\"spec\":{\"nodes\":2}}", OPS_FOR_START), -1);
	/* Ended before it ran: --for start gives the result too. */
	ck_assert_int_eq(check("{\"status\":{\"session\":1,\"phase\":\"Failed\","
	    "\"reason\":\"Unschedulable\"}}", OPS_FOR_START), 1);
	/* A restart asked for: the old result is not the answer. */
	ck_assert_int_eq(check("{\"spec\":{\"session\":2},\"status\":{\"session\":1,"
	    "\"phase\":\"Succeeded\"}}", OPS_FOR_END), -1);
	/* Resumed, not started yet. */
	ck_assert_int_eq(check("{\"spec\":{\"suspend\":false},\"status\":{\"session\":1,"
	    "\"phase\":\"Stopped\",\"reason\":\"Suspended\"}}", OPS_FOR_END), -1);
	/* Stopped for a new session, which has not started. */
	ck_assert_int_eq(check("{\"spec\":{\"session\":3},\"status\":{\"session\":2,"
	    "\"phase\":\"Stopped\",\"reason\":\"NewSession\"}}", OPS_FOR_END), -1);
	/* Stopped by its Project: a result. */
	ck_assert_int_eq(check("{\"status\":{\"session\":1,\"phase\":\"Stopped\","
	    "\"reason\":\"ProjectSuspended\"}}", OPS_FOR_END), 2);
	/* An invalid spec at the current generation never starts; a stale one waits. */
	ck_assert_int_eq(check("{\"metadata\":{\"generation\":2},\"status\":{\"conditions\":"
	    "[{\"type\":\"Valid\",\"status\":\"False\",\"observedGeneration\":2}]}}",
	    OPS_FOR_END), 1);
	ck_assert_int_eq(check("{\"metadata\":{\"generation\":3},\"status\":{\"conditions\":"
	    "[{\"type\":\"Valid\",\"status\":\"False\",\"observedGeneration\":2}]}}",
	    OPS_FOR_END), -1);
	/* Suspended before its first session: stopped at once. */
	ck_assert_int_eq(check("{\"spec\":{\"suspend\":true}}", OPS_FOR_END), 2);
	ck_assert_int_eq(check("{\"spec\":{\"suspend\":true},\"status\":{\"session\":1,"
	    "\"phase\":\"Running\"}}", OPS_FOR_END), -1);
}
END_TEST

START_TEST(test_auto_restart)
{
	/* OnFailure restarts a PodFailed session while the limit allows. */
	ck_assert_int_eq(check("{\"spec\":{\"restart\":{\"policy\":\"OnFailure\"}},"
	    "\"status\":{\"session\":1,\"phase\":\"Failed\",\"reason\":\"PodFailed\"}}",
	    OPS_FOR_END), -1);
	ck_assert_int_eq(check("{\"spec\":{\"restart\":{\"policy\":\"OnFailure\","
	    "\"limit\":2}},\"status\":{\"session\":3,\"restarts\":2,\"phase\":\"Failed\","
	    "\"reason\":\"PodFailed\"}}", OPS_FOR_END), 1);
	/* OnPreemption: a preemption restarts, an exit code does not. */
	ck_assert_int_eq(check("{\"spec\":{\"restart\":{\"policy\":\"OnPreemption\"}},"
	    "\"status\":{\"session\":1,\"phase\":\"Failed\",\"reason\":\"Preempted\"}}",
	    OPS_FOR_END), -1);
	ck_assert_int_eq(check("{\"spec\":{\"restart\":{\"policy\":\"OnPreemption\"}},"
	    "\"status\":{\"session\":1,\"phase\":\"Failed\",\"reason\":\"PodFailed\"}}",
	    OPS_FOR_END), 1);
	/* Never after a deadline, nor with policy Never, nor when suspended. */
	ck_assert_int_eq(check("{\"spec\":{\"restart\":{\"policy\":\"OnFailure\"}},"
	    "\"status\":{\"session\":1,\"phase\":\"Failed\",\"reason\":\"DeadlineExceeded\"}}",
	    OPS_FOR_END), 1);
	ck_assert_int_eq(check("{\"spec\":{\"restart\":{\"policy\":\"Never\"}},"
	    "\"status\":{\"session\":1,\"phase\":\"Failed\",\"reason\":\"Preempted\"}}",
	    OPS_FOR_END), 1);
	ck_assert_int_eq(check("{\"spec\":{\"suspend\":true,\"restart\":{\"policy\":"
	    "\"OnFailure\"}},\"status\":{\"session\":1,\"phase\":\"Failed\",\"reason\":"
	    "\"PodFailed\"}}", OPS_FOR_END), 1);
}
END_TEST

static const char *
dump(struct json_object *o)
{
	return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
}

START_TEST(test_patches)
{
	struct json_object *p, *run;

	p = ops_patch_suspend(true);
	ck_assert_str_eq(dump(p), "{\"spec\":{\"suspend\":true}}");
	json_object_put(p);
	p = ops_patch_suspend(false);
	ck_assert_str_eq(dump(p), "{\"spec\":{\"suspend\":false}}");
	json_object_put(p);

	/* Above status.session, with the resourceVersion as precondition. */
	run = parse("{\"metadata\":{\"resourceVersion\":\"42\"},\"spec\":{\"session\":1},"
	    "\"status\":{\"session\":1,\"phase\":\"Succeeded\"}}");
	ck_assert_int_eq(ops_next_session(run), 2);
	p = ops_patch_restart(run);
	ck_assert_str_eq(dump(p), "{\"spec\":{\"session\":2},\"metadata\":"
	    "{\"resourceVersion\":\"42\"}}");
	json_object_put(p);
	json_object_put(run);

	/* Above spec.session when a restart is already asked for; resumes a stopped Run. */
	run = parse("{\"spec\":{\"session\":5,\"suspend\":true},\"status\":{\"session\":3}}");
	ck_assert_int_eq(ops_next_session(run), 6);
	p = ops_patch_restart(run);
	ck_assert_str_eq(dump(p), "{\"spec\":{\"session\":6,\"suspend\":false}}");
	json_object_put(p);
	json_object_put(run);

	/* No status yet: session 2 (spec.session defaults to 1). */
	run = parse("{\"spec\":{}}");
	ck_assert_int_eq(ops_next_session(run), 2);
	json_object_put(run);
}
END_TEST

static char *
render(const struct ops_table *t)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	ops_table_print(t, f);
	ck_assert_int_eq(fclose(f), 0);
	return text;
}

START_TEST(test_table)
{
	struct ops_table t;
	char *text;

	ops_table_init(&t, 3, "  ");
	ck_assert_int_eq(ops_table_add(&t, (const char *const[]){ "NAME", "PHASE", "REASON" }),
	    0);
	ck_assert_int_eq(ops_table_add(&t, (const char *const[]){ "llama", "Succeeded",
	    "Succeeded" }), 0);
	ck_assert_int_eq(ops_table_add(&t, (const char *const[]){ "a", "Running", NULL }), 0);
	/* Control characters cannot break a line; UTF-8 counts as one column. */
	ck_assert_int_eq(ops_table_add(&t, (const char *const[]){ "b\nc", "Ré", "x\ty" }), 0);
	text = render(&t);
	ck_assert_str_eq(text,
	    "  NAME    PHASE       REASON\n"
	    "  llama   Succeeded   Succeeded\n"
	    "  a       Running\n"
	    "  b c     Ré          x y\n");
	free(text);
	ck_assert_uint_eq(ops_text_width("Ré"), 2);
	ops_table_free(&t);

	/* Many rows grow the table; a long cell is cut at OPS_CELL_MAX. */
	ops_table_init(&t, 1, NULL);
	{
		char big[OPS_CELL_MAX * 2];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		for (int i = 0; i < 100; i++)
			ck_assert_int_eq(ops_table_add(&t, (const char *const[]){ big }), 0);
	}
	ck_assert_uint_eq(t.nrows, 100);
	ck_assert_uint_eq(t.width[0], OPS_CELL_MAX - 1);
	ops_table_free(&t);
}
END_TEST

START_TEST(test_list_rows)
{
	struct json_object *run = parse("{\"metadata\":{\"name\":\"llama\",\"namespace\":"
	    "\"team-a\",\"creationTimestamp\":\"2026-11-21T19:00:00Z\"},\"spec\":{\"nodes\":4},"
	    "\"status\":{\"phase\":\"Running\",\"session\":2,\"readyNodes\":\"3/4\","
	    "\"gpus\":32}}");
	struct json_object *fresh = parse("{\"metadata\":{\"name\":\"x\",\"creationTimestamp\":"
	    "\"2026-11-21T19:00:00Z\"},\"spec\":{\"nodes\":2}}");
	time_t base;
	struct ops_row row, h;

	ck_assert_int_eq(kc_time_parse("2026-11-21T19:00:00Z", &base), 0);
	ops_list_header(false, &h);
	ck_assert_uint_eq(h.ncells, 7);
	ck_assert_str_eq(h.cell[0], "NAME");
	ck_assert_str_eq(h.cell[6], "REASON");
	ops_list_header(true, &h);
	ck_assert_uint_eq(h.ncells, 8);
	ck_assert_str_eq(h.cell[0], "NAMESPACE");

	ops_list_row(run, base + 200, false, NULL, &row);
	ck_assert_uint_eq(row.ncells, 7);
	ck_assert_str_eq(row.cell[0], "llama");
	ck_assert_str_eq(row.cell[1], "Running");
	ck_assert_str_eq(row.cell[2], "2");
	ck_assert_str_eq(row.cell[3], "3/4");
	ck_assert_str_eq(row.cell[4], "32");
	ck_assert_str_eq(row.cell[5], "3m20s");
	ck_assert_ptr_null(row.cell[6]);

	ops_list_row(run, base + 4 * 86400, true, "Deleted", &row);
	ck_assert_str_eq(row.cell[0], "team-a");
	ck_assert_str_eq(row.cell[2], "Deleted");
	ck_assert_str_eq(row.cell[6], "4d");

	/* No status yet: Pending, session 0, 0/nodes. */
	ops_list_row(fresh, base + 5, false, NULL, &row);
	ck_assert_str_eq(row.cell[1], "Pending");
	ck_assert_str_eq(row.cell[2], "0");
	ck_assert_str_eq(row.cell[3], "0/2");
	ck_assert_str_eq(row.cell[5], "5s");
	json_object_put(run);
	json_object_put(fresh);
}
END_TEST

START_TEST(test_age)
{
	time_t base;
	char buf[KC_DURATION_HUMAN_MAX];

	ck_assert_int_eq(kc_time_parse("2026-11-21T19:00:00Z", &base), 0);
	ops_age("2026-11-21T19:00:00Z", base + 7200, buf, sizeof(buf));
	ck_assert_str_eq(buf, "120m");
	ops_age("2026-11-21T19:00:00Z", base + 4 * 3600, buf, sizeof(buf));
	ck_assert_str_eq(buf, "4h");
	ops_age("2026-11-21T19:00:00Z", base + 3 * 3600 + 300, buf, sizeof(buf));
	ck_assert_str_eq(buf, "3h5m");
	ops_age(NULL, base, buf, sizeof(buf));
	ck_assert_str_eq(buf, "<unknown>");
	ops_age("yesterday", base, buf, sizeof(buf));
	ck_assert_str_eq(buf, "<unknown>");
	ops_age("2026-11-21T19:00:10Z", base, buf, sizeof(buf));
	ck_assert_str_eq(buf, "<invalid>");
}
END_TEST

static struct kc_rest_config test_rc = {
	.server = "https://fake.invalid",
	.namespace = "team-a",
};

static int
no_event(void *arg, enum kc_watch_type type, struct json_object *obj)
{
	(void)arg;
	(void)type;
	(void)obj;
	return 0;
}

/* A watch that never ends, on a client with a fake transport. */
static int
blocked_watch(struct kc_client *cl, struct fake_transport *ft)
{
	ft_expect(ft, &(struct ft_exchange){
		.method = "GET", .path = "/apis/trainyard.dev/v1beta1/namespaces/team-a/"
		    "runs?watch=true", .status = 200, .block = true,
	});
	return kc_watch_run(cl, &(struct kc_watch_opts){ .res = &cli_res_runs,
	    .ns = "team-a" }, no_event, NULL, NULL, NULL);
}

static void *
raise_sigint(void *arg)
{
	(void)arg;
	(void)kc_clock_sleep_ms(100);
	(void)kill(getpid(), SIGINT);
	return NULL;
}

/* SIGINT and the deadline cancel the client's watch; the handlers go back after. */
START_TEST(test_interrupt)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl = NULL;
	struct kc_status st;
	struct sigaction before, old;
	pthread_t th;
	uint64_t t0;

	ck_assert_int_eq(kc_client_new(&(struct kc_client_opts){ .rc = &test_rc,
	    .ops = &fake_transport_ops }, &cl, &st), 0);
	ck_assert_int_eq(sigaction(SIGINT, NULL, &before), 0);
	ck_assert_int_eq(ops_interrupt_start(cl, 0), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, raise_sigint, NULL), 0);
	ck_assert_int_eq(blocked_watch(cl, ft), -ECANCELED);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert(ops_interrupted());
	ck_assert(!ops_deadline_passed());
	ops_interrupt_stop();
	ck_assert_int_eq(sigaction(SIGINT, NULL, &old), 0);
	ck_assert(old.sa_handler == before.sa_handler);

	kc_client_reset_cancel(cl);
	t0 = kc_clock_now_ms();
	ck_assert_int_eq(ops_interrupt_start(cl, t0 + 150), 0);
	ck_assert_int_eq(blocked_watch(cl, ft), -ECANCELED);
	ck_assert_uint_ge(kc_clock_now_ms() - t0, 150);
	ck_assert(ops_deadline_passed());
	ck_assert(!ops_interrupted());
	ops_interrupt_stop();

	/* Stopped before anything happened: nothing is cancelled. */
	kc_client_reset_cancel(cl);
	ck_assert_int_eq(ops_interrupt_start(cl, 0), 0);
	ops_interrupt_stop();
	ck_assert(!ops_interrupted() && !ops_deadline_passed());
	ft_done(ft);
	cl = kc_client_free(cl);
	ft = ft_free(ft);
}
END_TEST

Suite *
cli_ops_suite(void)
{
	Suite *s = suite_create("cli_ops");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_phase_result);
	tcase_add_test(tc, test_wait_check);
	tcase_add_test(tc, test_auto_restart);
	tcase_add_test(tc, test_patches);
	tcase_add_test(tc, test_table);
	tcase_add_test(tc, test_list_rows);
	tcase_add_test(tc, test_age);
	tcase_add_test(tc, test_interrupt);
	suite_add_tcase(s, tc);
	return s;
}

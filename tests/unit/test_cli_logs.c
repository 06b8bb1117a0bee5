/*
 * test_cli_logs.c: the line interleaver of "kubectl trainyard logs"
 * (cli/logmux.c): whole lines with their node's prefix whatever the chunk
 * boundaries, CRLF, long lines cut and bounded, timestamps kept or
 * dropped, and the resume after a lost connection that repeats and loses
 * nothing, even for lines sharing a timestamp. Also cli_run_result().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/json.h>

#include "testutil.h"
#include "../../cli/cli.h"
#include "../../cli/logs.h"

static struct kc_buf out;

#define FEED(s, str)	logmux_feed((s), (str), strlen(str), collect, NULL)

static void
collect(void *arg, const char *line, size_t len)
{
	(void)arg;
	ck_assert(len > 0 && line[len - 1] == '\n');
	ck_assert_int_eq(kc_buf_append(&out, line, len), 0);
}

static struct logmux_src *
src_new(const char *label, int color, bool ts)
{
	struct logmux_src *s = kc_malloc(sizeof(*s));

	ck_assert_ptr_nonnull(s);
	logmux_src_init(s, label, color, ts);
	kc_buf_init(&out, 1u << 22);
	return s;
}

static const char *
got(void)
{
	const char *s = kc_buf_str(&out);

	return s != NULL ? s : "";
}

/* Feeds 'text' one byte at a time. */
static void
feed_bytes(struct logmux_src *s, const char *text)
{
	for (size_t i = 0; text[i] != '\0'; i++)
		logmux_feed(s, text + i, 1, collect, NULL);
}

START_TEST(test_prefix_and_chunks)
{
	struct logmux_src *a = src_new("node-0", -1, false);
	struct logmux_src *b = kc_malloc(sizeof(*b));

	logmux_src_init(b, "node-3", -1, false);
	FEED(a, "2026-11-29T08:00:00.100000000Z al");
	FEED(b, "2026-11-29T08:00:00.200000000Z b1\n2026-11-29T08:00:00.3");
	FEED(a, "pha\n");
	FEED(b, "00000000Z b2\n");
	ck_assert_str_eq(got(), "[node-3] b1\n[node-0] alpha\n[node-3] b2\n");
	ck_assert_uint_eq(a->lines, 1);
	ck_assert_uint_eq(b->lines, 2);
	kc_free(a);
	kc_free(b);
	kc_buf_free(&out);
}
END_TEST

START_TEST(test_byte_by_byte_crlf_and_finish)
{
	struct logmux_src *s = src_new("node-1", -1, true);

	feed_bytes(s, "2026-11-29T08:00:01.5Z one\r\n2026-11-29T08:00:02Z two\n\nplain\r\n"
	    "2026-11-29T08:00:03.000000001Z last");
	ck_assert_str_eq(got(), "[node-1] 2026-11-29T08:00:01.5Z one\n"
	    "[node-1] 2026-11-29T08:00:02Z two\n[node-1] \n[node-1] plain\n");
	logmux_finish(s, collect, NULL);
	ck_assert(strstr(got(), "[node-1] 2026-11-29T08:00:03.000000001Z last\n") != NULL);
	/* Nothing is left to finish twice. */
	logmux_finish(s, collect, NULL);
	ck_assert_uint_eq(s->lines, 5);
	kc_free(s);
	kc_buf_free(&out);
}
END_TEST

START_TEST(test_colour)
{
	struct logmux_src *s = src_new("node-2", 2, false);

	FEED(s, "x\n");
	ck_assert(strncmp(got(), "\033[", 2) == 0);
	ck_assert(strstr(got(), "[node-2]\033[0m x\n") != NULL);
	kc_free(s);
	kc_buf_free(&out);
}
END_TEST

START_TEST(test_long_line_bounded)
{
	struct logmux_src *s = src_new("node-0", -1, false);
	size_t big = LOGMUX_LINE_MAX * 3 + 17;
	char *line = kc_malloc(big);

	ck_assert_ptr_nonnull(line);
	memset(line, 'x', big);
	/* In pieces, so the cut happens across chunks. */
	for (size_t at = 0; at < big; at += 1000)
		logmux_feed(s, line + at, big - at < 1000 ? big - at : 1000, collect, NULL);
	FEED(s, "\nnext\n");
	ck_assert_uint_eq(s->lines, 2);
	ck_assert(out.len < LOGMUX_LINE_MAX + 200);
	{
		char want[64];

		(void)snprintf(want, sizeof(want), " [%zu more bytes cut]\n[node-0] next\n",
		    big - LOGMUX_LINE_MAX);
		ck_assert_msg(strstr(got(), want) != NULL, "missing %s", want);
	}
	kc_free(line);
	kc_free(s);
	kc_buf_free(&out);
}
END_TEST

START_TEST(test_resume_no_repeat_no_loss)
{
	struct logmux_src *s = src_new("node-0", -1, false);
	char since[64];

	ck_assert_int_eq(logmux_since_time(s, since, sizeof(since)), -ENOENT);
	/* Three lines share one timestamp; the connection breaks mid-line. */
	FEED(s, "2026-11-29T08:00:05.000000000Z a\n"
	    "2026-11-29T08:00:06.250000000Z b\n"
	    "2026-11-29T08:00:06.250000000Z c\n"
	    "2026-11-29T08:00:06.250000000Z d-par");
	ck_assert_str_eq(got(), "[node-0] a\n[node-0] b\n[node-0] c\n");
	logmux_resume(s);
	ck_assert_int_eq(logmux_since_time(s, since, sizeof(since)), 0);
	ck_assert_str_eq(since, "2026-11-29T08:00:06Z");
	/* The server sends again from the whole second (a is before it). */
	FEED(s, "2026-11-29T08:00:06.000000000Z early\n"
	    "2026-11-29T08:00:06.25Z b\n"
	    "2026-11-29T08:00:06.250000000Z c\n"
	    "2026-11-29T08:00:06.250000000Z d-partial\n"
	    "2026-11-29T08:00:07Z e\n");
	ck_assert_str_eq(got(), "[node-0] a\n[node-0] b\n[node-0] c\n[node-0] d-partial\n"
	    "[node-0] e\n");
	ck_assert_uint_eq(s->dropped, 3);
	/* Twice in a row, with nothing new in between. */
	logmux_resume(s);
	logmux_resume(s);
	FEED(s, "2026-11-29T08:00:07Z e\n2026-11-29T08:00:07Z f\n");
	ck_assert_str_eq(got(), "[node-0] a\n[node-0] b\n[node-0] c\n[node-0] d-partial\n"
	    "[node-0] e\n[node-0] f\n");
	kc_free(s);
	kc_buf_free(&out);
}
END_TEST

START_TEST(test_resume_same_text)
{
	struct logmux_src *s = src_new("node-0", -1, false);

	FEED(s, "2026-11-29T08:00:05.100Z tick\n");
	logmux_resume(s);
	/* The same line served again is a repeat; the same text printed again is not. */
	FEED(s, "2026-11-29T08:00:05.100Z tick\n2026-11-29T08:00:05.300Z tick\n");
	ck_assert_str_eq(got(), "[node-0] tick\n[node-0] tick\n");
	kc_free(s);
	kc_buf_free(&out);
}
END_TEST

START_TEST(test_resume_before_any_line)
{
	struct logmux_src *s = src_new("node-4", -1, false);

	FEED(s, "2026-11-29T08:00:05Z half");
	logmux_resume(s);
	FEED(s, "2026-11-29T08:00:05Z half line\n");
	ck_assert_str_eq(got(), "[node-4] half line\n");
	kc_free(s);
	kc_buf_free(&out);
}
END_TEST

START_TEST(test_parse_ts)
{
	int64_t s;
	int32_t ns;

	ck_assert_int_eq(logmux_parse_ts("2026-11-29T08:00:05.123Z", 24, &s, &ns), 0);
	ck_assert_int_eq(ns, 123000000);
	ck_assert_int_eq(logmux_parse_ts("2026-11-29T08:00:05Z", 20, &s, &ns), 0);
	ck_assert_int_eq(ns, 0);
	ck_assert_int_eq(logmux_parse_ts("2026-11-29T08:00:05.1234567891Z", 31, &s, &ns), 0);
	ck_assert_int_eq(ns, 123456789);
	ck_assert_int_lt(logmux_parse_ts("hello world of logs!", 20, &s, &ns), 0);
	ck_assert_int_lt(logmux_parse_ts("2026-11-29", 10, &s, &ns), 0);
}
END_TEST

START_TEST(test_run_result)
{
	struct json_object *run = NULL;

	ck_assert_int_eq(cli_run_result(NULL), -1);
	ck_assert_int_eq(kc_json_parse("{\"status\":{\"phase\":\"Running\"}}", 30, &run, NULL),
	    0);
	ck_assert_int_eq(cli_run_result(run), -1);
	json_object_put(run);
	ck_assert_int_eq(kc_json_parse("{\"status\":{\"phase\":\"Succeeded\"}}", 32, &run, NULL),
	    0);
	ck_assert_int_eq(cli_run_result(run), CLI_OK);
	json_object_put(run);
	ck_assert_int_eq(kc_json_parse("{\"status\":{\"phase\":\"Failed\"}}", 29, &run, NULL), 0);
	ck_assert_int_eq(cli_run_result(run), CLI_FAILED);
	json_object_put(run);
	ck_assert_int_eq(kc_json_parse("{\"status\":{\"phase\":\"Stopped\"}}", 30, &run, NULL),
	    0);
	ck_assert_int_eq(cli_run_result(run), CLI_STOPPED);
	json_object_put(run);
}
END_TEST

Suite *
cli_logs_suite(void)
{
	Suite *s = suite_create("cli_logs");
	TCase *tc = tcase_create("logmux");

	tcase_add_test(tc, test_prefix_and_chunks);
	tcase_add_test(tc, test_byte_by_byte_crlf_and_finish);
	tcase_add_test(tc, test_colour);
	tcase_add_test(tc, test_long_line_bounded);
	tcase_add_test(tc, test_resume_no_repeat_no_loss);
	tcase_add_test(tc, test_resume_same_text);
	tcase_add_test(tc, test_resume_before_any_line);
	tcase_add_test(tc, test_parse_ts);
	tcase_add_test(tc, test_run_result);
	suite_add_tcase(s, tc);
	return s;
}

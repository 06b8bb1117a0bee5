/*
 * test_log.c: line format, levels, escaping, one write per line.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>

#include "testutil.h"

static int	pipefd[2];

static void
setup(void)
{
	ck_assert_int_eq(pipe(pipefd), 0);
	kc_log_set_fd(pipefd[1]);
	kc_log_set_level(KC_LOG_DEBUG);
	kc_log_set_format(KC_LOG_TEXT);
}

static void
teardown(void)
{
	kc_log_set_fd(2);
	kc_log_set_level(KC_LOG_INFO);
	kc_log_set_format(KC_LOG_TEXT);
	close(pipefd[0]);
	close(pipefd[1]);
}

/* Reads what was logged so far (the pipe never fills in these tests). */
static char *
drain(void)
{
	static char buf[65536];
	ssize_t n;

	close(pipefd[1]);
	n = read(pipefd[0], buf, sizeof(buf) - 1);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	ck_assert_int_eq(pipe(pipefd) < 0 ? -1 : 0, 0);	/* fresh pipe for more */
	kc_log_set_fd(pipefd[1]);
	return buf;
}

START_TEST(text_format)
{
	struct kc_log_ctx ctx = { .action = "reconcile", .kind = "Run",
	    .ns = "team-a", .name = "r1", .rid = 7 };
	struct kc_log_field f[] = { { "pods", "4" }, { "why", "a \"b\"=c" } };
	char *out;

	kc_log_kv(KC_LOG_INFO, &ctx, f, 2, "pods %s", "created");
	out = drain();
	ck_assert_ptr_nonnull(strstr(out, " info reconcile kind=Run ns=team-a name=r1 rid=7 "
	    "msg=\"pods created\" pods=4 why=\"a \\\"b\\\"=c\"\n"));
	ck_assert_int_eq(out[4], '-');	/* starts with the timestamp */
	ck_assert_ptr_nonnull(strchr(out, 'Z'));
	ck_assert_ptr_eq(strchr(out, '\n'), out + strlen(out) - 1);	/* one line */
}
END_TEST

START_TEST(levels)
{
	char *out;

	kc_log_set_level(KC_LOG_WARN);
	kc_log_info(NULL, "hidden");
	kc_log_debug(NULL, "hidden too");
	kc_log_warn(NULL, "shown");
	out = drain();
	ck_assert_ptr_null(strstr(out, "hidden"));
	ck_assert_ptr_nonnull(strstr(out, "warn msg=shown"));
	ck_assert(!kc_log_enabled(KC_LOG_INFO));
	ck_assert(kc_log_enabled(KC_LOG_ERROR));
	kc_log_set_level(KC_LOG_OFF);
	kc_log(KC_LOG_ERROR, NULL, "nothing");
	ck_assert_str_eq(drain(), "");
}
END_TEST

START_TEST(parse_settings)
{
	enum kc_log_level l;
	enum kc_log_format f;

	ck_assert_int_eq(kc_log_parse_level("debug", &l), 0);
	ck_assert_int_eq(l, KC_LOG_DEBUG);
	ck_assert_int_eq(kc_log_parse_level("WARNING", &l), 0);
	ck_assert_int_eq(l, KC_LOG_WARN);
	ck_assert_int_eq(kc_log_parse_level("loud", &l), -EINVAL);
	ck_assert_int_eq(kc_log_parse_format("json", &f), 0);
	ck_assert_int_eq(f, KC_LOG_JSON);
	ck_assert_int_eq(kc_log_parse_format("xml", &f), -EINVAL);
}
END_TEST

START_TEST(json_format)
{
	struct kc_log_ctx ctx = { .action = "watch", .ns = "a", .rid = 9 };
	struct json_object *o = NULL;
	char *out;

	kc_log_set_format(KC_LOG_JSON);
	ck_assert_int_eq(kc_log_error_r(&ctx, KC_ECONFLICT, "update %s\n\"x\"", "r1"),
	    KC_ECONFLICT);
	out = drain();
	ck_assert_int_eq(kc_json_parse(out, strlen(out), &o, NULL), 0);
	ck_assert_str_eq(kc_json_str(o, "level"), "error");
	ck_assert_str_eq(kc_json_str(o, "action"), "watch");
	ck_assert_str_eq(kc_json_str(o, "ns"), "a");
	ck_assert_int_eq(kc_json_int(o, 0, "rid"), 9);
	ck_assert_str_eq(kc_json_str(o, "msg"), "update r1\n\"x\"");
	ck_assert_str_eq(kc_json_str(o, "err"), "KC_ECONFLICT");
	ck_assert_ptr_nonnull(kc_json_str(o, "ts"));
	json_object_put(o);
}
END_TEST

START_TEST(long_lines_are_cut)
{
	static char big[20000];
	char *out;

	memset(big, 'x', sizeof(big) - 1);
	kc_log(KC_LOG_INFO, NULL, "%s", big);
	out = drain();
	ck_assert_uint_le(strlen(out), KC_LOG_LINE_MAX);
	ck_assert_ptr_nonnull(strstr(out, "..."));
	ck_assert_int_eq(out[strlen(out) - 1], '\n');
	/* Control characters are escaped in text, so a line stays a line. */
	kc_log(KC_LOG_INFO, NULL, "a\nb\x01");
	out = drain();
	ck_assert_ptr_nonnull(strstr(out, "msg=\"a\\nb\\x01\"\n"));
}
END_TEST

struct writer {
	int	id;
};

static void *
log_thread(void *arg)
{
	struct writer *w = arg;

	for (int i = 0; i < 200; i++)
		kc_log(KC_LOG_INFO, NULL, "thread %d line %d %s", w->id, i,
		    "padding-padding-padding-padding-padding-padding");
	return NULL;
}

START_TEST(threads_do_not_interleave)
{
	pthread_t t[4];
	struct writer w[4];
	char *out, *line, *save = NULL;
	int lines = 0;

	/* A pipe holds 64 KiB; 800 lines of ~130 bytes would block: use a file. */
	char *dir = tu_tmpdir(), *path = kc_asprintf("%s/log", dir), *text = NULL;
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);

	ck_assert_int_ge(fd, 0);
	kc_log_set_fd(fd);
	for (int i = 0; i < 4; i++) {
		w[i].id = i;
		ck_assert_int_eq(pthread_create(&t[i], NULL, log_thread, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	close(fd);
	kc_log_set_fd(pipefd[1]);
	ck_assert_int_eq(kc_read_file(path, 1 << 20, &text, NULL), 0);
	out = text;
	for (line = strtok_r(out, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		ck_assert_ptr_nonnull(strstr(line, " info msg=\"thread "));
		ck_assert_ptr_nonnull(strstr(line, "padding-padding\""));
		lines++;
	}
	ck_assert_int_eq(lines, 800);
	kc_free(text);
	kc_free(path);
	tu_tmpdir_remove(dir);
}
END_TEST

Suite *
log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, text_format);
	tcase_add_test(tc, levels);
	tcase_add_test(tc, parse_settings);
	tcase_add_test(tc, json_format);
	tcase_add_test(tc, long_lines_are_cut);
	tcase_add_test(tc, threads_do_not_interleave);
	suite_add_tcase(s, tc);
	return s;
}

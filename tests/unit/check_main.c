/*
 * The unit test runner: every suite of tests/unit/suites.h, or, built with
 * -DKC_ONE_SUITE=<name>_suite ("make unit SUITE=<name>"), just one.
 *
 * CK_RUN_SUITE and CK_RUN_CASE pick suites and cases at run time, and
 * CK_FORK=no runs everything in one process (make does, so that
 * LeakSanitizer sees every test). KC_UNIT_QUEUE=FILE lets several processes
 * run the suites side by side ("make unit" does, one per CPU): each takes
 * the next suite no process sharing FILE has taken, until none is left, so
 * a process that drew short suites takes more of them. Such a process
 * prints Check's report of each suite that failed, then one line for all
 * it ran: "unit: S suites, N checks, F failures, E errors". The exit status
 * is non-zero when any test failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <check.h>

#include <kc/err.h>
#include <kc/macro.h>

#include "testutil.h"

#ifdef KC_ONE_SUITE
static Suite *(*const suites[])(void) = { KC_ONE_SUITE };
#else
static Suite *(*const suites[])(void) = {
#define SUITE(n)	n##_suite,
#include "suites.h"
#undef SUITE
};
#endif

/*
 * The number of the next suite nobody sharing the queue 'fd' has taken (the
 * number of suites or more once all are). Each taking appends a byte: with
 * O_APPEND, a write and the offset it lands at are one atomic step, so the
 * offset after the write numbers the taking among all the processes'.
 */
static int
queue_next(int fd, size_t *ret)
{
	off_t off;

	if (write(fd, "x", 1) != 1 || (off = lseek(fd, 0, SEEK_CUR)) < 1)
		return -1;
	*ret = (size_t)off - 1;
	return 0;
}

/* Runs the suites the queue at 'path' hands out; see the comment on top. */
static int
run_queue(const char *path)
{
	const size_t n = KC_ARRAY_SIZE(suites);
	int fd, checks = 0, failures = 0, errors = 0;
	unsigned suites_run = 0;
	size_t i;

	if ((fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		fprintf(stderr, "KC_UNIT_QUEUE: %s: %s\n", path, kc_strerror(-errno));
		return EXIT_FAILURE;
	}
	for (;;) {
		SRunner *sr;
		TestResult **tr;
		int nfailed;

		if (queue_next(fd, &i) < 0) {
			fprintf(stderr, "KC_UNIT_QUEUE: %s: %s\n", path, kc_strerror(-errno));
			close(fd);
			return EXIT_FAILURE;
		}
		if (i >= n)
			break;
		sr = srunner_create(suites[i]());
		srunner_run_all(sr, CK_SILENT);
		checks += srunner_ntests_run(sr);
		suites_run++;
		if ((nfailed = srunner_ntests_failed(sr)) > 0) {
			srunner_print(sr, CK_NORMAL);
			fflush(stdout);
			tr = srunner_failures(sr);
			for (int k = 0; k < nfailed; k++)
				if (tr_rtype(tr[k]) == CK_ERROR)
					errors++;
				else
					failures++;
			free(tr);
		}
		srunner_free(sr);
	}
	close(fd);
	/* Flushed: LeakSanitizer ends a leaking process without flushing stdio. */
	printf("unit: %u suites, %d checks, %d failures, %d errors\n", suites_run, checks,
	    failures, errors);
	fflush(stdout);
	return failures + errors == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int
main(void)
{
	const char *queue = getenv("KC_UNIT_QUEUE");
	SRunner *sr;
	int failed;

	if (queue != NULL && *queue != '\0')
		return run_queue(queue);
	sr = srunner_create(NULL);
	for (size_t i = 0; i < KC_ARRAY_SIZE(suites); i++)
		srunner_add_suite(sr, suites[i]());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/*
 * The unit test runner: every suite of tests/unit/suites.h, or, built with
 * -DKC_ONE_SUITE=<name>_suite ("make unit SUITE=<name>"), just one.
 *
 * CK_RUN_SUITE and CK_RUN_CASE pick suites and cases at run time, and
 * CK_FORK=no runs everything in one process (make does, so that
 * LeakSanitizer sees every test). KC_UNIT_SHARD=I/N runs every Nth suite
 * from the Ith (0 <= I < N), so that N processes run them all side by side
 * ("make unit" does, one per CPU). The exit status is non-zero when any
 * test failed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include <kc/str.h>

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

/* KC_UNIT_SHARD "I/N" into 'i' and 'n'; 0 and 1 without it. */
static int
shard(uint32_t *i, uint32_t *n)
{
	const char *v = getenv("KC_UNIT_SHARD"), *slash;
	char num[16];

	*i = 0;
	*n = 1;
	if (v == NULL || *v == '\0')
		return 0;
	if ((slash = strchr(v, '/')) == NULL || (size_t)(slash - v) >= sizeof(num))
		return -1;
	memcpy(num, v, (size_t)(slash - v));
	num[slash - v] = '\0';
	if (kc_parse_u32(num, i) < 0 || kc_parse_u32(slash + 1, n) < 0 || *n == 0 || *i >= *n)
		return -1;
	return 0;
}

int
main(void)
{
	SRunner *sr;
	uint32_t si, sn;
	int failed;

	if (shard(&si, &sn) < 0) {
		fprintf(stderr, "KC_UNIT_SHARD: want I/N with 0 <= I < N, not \"%s\"\n",
		    getenv("KC_UNIT_SHARD"));
		return EXIT_FAILURE;
	}
	sr = srunner_create(NULL);
	for (size_t i = 0; i < sizeof(suites) / sizeof(suites[0]); i++)
		if (i % sn == si)
			srunner_add_suite(sr, suites[i]());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

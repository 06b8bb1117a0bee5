/*
 * fuzz_duration.c: Go durations (kc_parse_duration_ms(), the flags and
 * fields that take "1m30s"); the CLI's duration flags go through
 * fuzz_cli_args.
 */
#include <stdlib.h>

#include <kc/str.h>

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t ms;
	char *s;

	if (size > 1024 || (s = fuzz_str(data, size)) == NULL)
		return 0;
	if (kc_parse_duration_ms(s, &ms) == 0)
		FUZZ_CHECK(ms <= UINT64_C(1000000000000000));
	free(s);
	return 0;
}

/*
 * fuzz_rfc3339.c: RFC 3339 timestamps (kc_time_parse(), every
 * creationTimestamp, lastTransitionTime and "since" a server or user
 * gives). A time that parses formats as RFC 3339 that parses to the same
 * second.
 */
#include <stdlib.h>

#include <kc/str.h>

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, buf[KC_TIME_MAX];
	time_t t, t2;

	if (size > 1024 || (s = fuzz_str(data, size)) == NULL)
		return 0;
	if (kc_time_parse(s, &t) == 0 && kc_time_format(t, buf, sizeof(buf)) >= 0) {
		FUZZ_CHECK(kc_time_parse(buf, &t2) == 0);
		FUZZ_CHECK(t == t2);
	}
	free(s);
	return 0;
}

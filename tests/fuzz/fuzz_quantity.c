/*
 * fuzz_quantity.c: resource.Quantity (lib/quantity.c). What parses must
 * print in canonical form, and that form must parse to an equal quantity.
 * Printing is not idempotent in one step, upstream's neither ("6437.5Ki"
 * prints "6592000", which prints "6592k"): a second round must be.
 */
#include <stdlib.h>
#include <string.h>

#include <kc/err.h>
#include <kc/quantity.h>

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kc_quantity q, q2, sum;
	char *s, buf[128], buf2[128], buf3[128];
	int64_t v;

	if (size > 4096 || (s = fuzz_str(data, size)) == NULL)
		return 0;
	if (kc_quantity_parse(s, &q, NULL) == 0) {
		/*
		 * What fits gives the same figure whether it may saturate or
		 * not, but INT64_MIN: the _sat forms stop at -INT64_MAX.
		 */
		if (kc_quantity_value(&q, &v) == 0)
			FUZZ_CHECK(KC_MAX(v, -INT64_MAX) == kc_quantity_value_sat(&q));
		if (kc_quantity_milli_value(&q, &v) == 0)
			FUZZ_CHECK(KC_MAX(v, -INT64_MAX) == kc_quantity_milli_sat(&q));
		sum = q;
		if (kc_quantity_add(&sum, &q) == 0 && kc_quantity_mul(&sum, 3) == 0)
			FUZZ_CHECK(kc_quantity_sign(&sum) == kc_quantity_sign(&q));
		if (kc_quantity_format(&q, buf, sizeof(buf)) >= 0) {
			FUZZ_CHECK(kc_quantity_parse(buf, &q2, NULL) == 0);
			FUZZ_CHECK(kc_quantity_cmp(&q, &q2) == 0);
			FUZZ_CHECK(kc_quantity_format(&q2, buf2, sizeof(buf2)) >= 0);
			FUZZ_CHECK(kc_quantity_parse(buf2, &q2, NULL) == 0);
			FUZZ_CHECK(kc_quantity_cmp(&q, &q2) == 0);
			FUZZ_CHECK(kc_quantity_format(&q2, buf3, sizeof(buf3)) >= 0);
			FUZZ_CHECK(strcmp(buf2, buf3) == 0);
		}
	}
	if (kc_quantity_parse_sat(s, &q, NULL) == 0)
		(void)kc_quantity_milli_sat(&q);
	free(s);
	return 0;
}

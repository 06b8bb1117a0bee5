/*
 * fuzz_selector.c: label and field selectors (lib/selector.c), as a
 * labelSelector or fieldSelector query parameter gives them. A label
 * selector that parses must print as text that parses to the same
 * selector (the same text again, and the same verdict on a fixed object),
 * and so must a field selector.
 */
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/selector.h>

#include "fuzz.h"

static const char pod_json[] =
    "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"default\","
    "\"labels\":{\"app\":\"web\",\"tier\":\"db\",\"a.b/c\":\"\",\"x\":\"1\"}},"
    "\"spec\":{\"nodeName\":\"n1\"},\"status\":{\"phase\":\"Running\"}}";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kc_label_selector *ls = NULL, *ls2 = NULL;
	struct kc_field_selector *fs = NULL;
	struct json_object *pod;
	const char *v;
	char *text, *s1 = NULL, *s2 = NULL;

	if (size > 64 << 10 || (text = fuzz_str(data, size)) == NULL)
		return 0;
	if ((pod = fuzz_json(pod_json)) == NULL) {
		free(text);
		return 0;
	}
	if (kc_label_selector_parse(text, &ls, NULL) == 0) {
		bool m = kc_label_selector_matches_obj(ls, pod);

		if (kc_label_selector_string(ls, &s1) == 0) {
			FUZZ_CHECK(kc_label_selector_parse(s1, &ls2, NULL) == 0);
			FUZZ_CHECK(kc_label_selector_matches_obj(ls2, pod) == m);
			FUZZ_CHECK(kc_label_selector_string(ls2, &s2) == 0);
			FUZZ_CHECK(strcmp(s1, s2) == 0);
			kc_free(s1);
			kc_free(s2);
			kc_label_selector_free(ls2);
		}
		(void)kc_label_selector_requires_exact_match(ls, "app", &v);
		kc_label_selector_free(ls);
	}
	if (kc_field_selector_parse(text, &fs, NULL) == 0) {
		struct kc_field_selector *fs2 = NULL;
		bool m = kc_field_selector_matches_json(fs, pod);

		/*
		 * Upstream sorts the terms as written ("a==x" before "a=b"),
		 * then prints them in that order as "f=v": the text printed is
		 * canonical only from the second round on.
		 */
		if (kc_field_selector_string(fs, &s1) == 0) {
			FUZZ_CHECK(kc_field_selector_parse(s1, &fs2, NULL) == 0);
			FUZZ_CHECK(kc_field_selector_matches_json(fs2, pod) == m);
			kc_free(s1);
			FUZZ_CHECK(kc_field_selector_string(fs2, &s1) == 0);
			kc_field_selector_free(fs2);
			FUZZ_CHECK(kc_field_selector_parse(s1, &fs2, NULL) == 0);
			FUZZ_CHECK(kc_field_selector_string(fs2, &s2) == 0);
			FUZZ_CHECK(strcmp(s1, s2) == 0);
			kc_free(s1);
			kc_free(s2);
			kc_field_selector_free(fs2);
		}
		(void)kc_field_selector_requires_exact_match(fs, "metadata.name", &v);
		kc_field_selector_free(fs);
	}
	json_object_put(pod);
	free(text);
	return 0;
}

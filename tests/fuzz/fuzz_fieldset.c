/*
 * fuzz_fieldset.c: field sets (devcluster/fieldset.c), the FieldsV1
 * trees of managedFields: two trees separated by FUZZ_SEP, decoded and
 * combined (union, intersection, difference, emptiness); and the
 * field set of an object as server-side apply records it. The algebra
 * must hold: a - a is empty, a | a is a.
 */
#include <string.h>

#include <kc/err.h>
#include <kc/json.h>

#include "../../devcluster/fieldmanager.h"

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_object *a = NULL, *b = NULL, *r = NULL, *aa = NULL;
	struct kc_status st = { 0 };
	char *parts[2];

	if (size > FUZZ_INPUT_MAX || fuzz_split(data, size, parts, 2) < 0)
		return 0;
	if (kc_json_parse(parts[0], strlen(parts[0]), &a, NULL) < 0)
		goto out;
	if (kc_json_parse(parts[1], strlen(parts[1]), &b, NULL) < 0)
		b = NULL;
	if (fieldmanager_fieldset_empty(a, &st) >= 0) {
		if (fieldmanager_fieldset_difference(a, a, &r, &st) == 0) {
			FUZZ_CHECK(fieldmanager_fieldset_empty(r, &st) == 1);
			json_object_put(r);
		}
		if (fieldmanager_fieldset_union(a, a, &aa, &st) == 0) {
			FUZZ_CHECK(fieldmanager_fieldset_union(aa, aa, &r, &st) == 0);
			FUZZ_CHECK(json_object_equal(aa, r));
			json_object_put(r);
			json_object_put(aa);
		}
	}
	if (b != NULL) {
		if (fieldmanager_fieldset_union(a, b, &r, &st) == 0)
			json_object_put(r);
		if (fieldmanager_fieldset_intersection(a, b, &r, &st) == 0)
			json_object_put(r);
		if (fieldmanager_fieldset_difference(a, b, &r, &st) == 0)
			json_object_put(r);
	}
	if (json_object_is_type(a, json_type_object) &&
	    fieldmanager_fieldset(a, NULL, NULL, &r, &st) == 0)
		json_object_put(r);
out:
	if (a != NULL)
		json_object_put(a);
	if (b != NULL)
		json_object_put(b);
	fuzz_parts_free(parts, 2);
	return 0;
}

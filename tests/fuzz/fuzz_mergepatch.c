/*
 * fuzz_mergepatch.c: JSON merge patch (RFC 7386, lib/patch.c). A patch
 * created from a document to the result of applying a patch to it must,
 * applied to the document, give that result again, but for members
 * whose value is null (a merge patch cannot set one: kc/patch.h).
 */
#include "fuzz_patch_common.h"

/* Drops every null member of the objects in 'o', in place. */
static void
drop_nulls(struct json_object *o)
{
	if (json_object_is_type(o, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(o); i++)
			drop_nulls(json_object_array_get_idx(o, i));
		return;
	}
	if (!json_object_is_type(o, json_type_object))
		return;
	for (bool again = true; again;) {
		again = false;
		json_object_object_foreach(o, key, v) {
			if (v == NULL) {
				json_object_object_del(o, key);
				again = true;
				break;
			}
			drop_nulls(v);
		}
	}
}

static void
apply(const struct json_object *doc, const struct json_object *patch, unsigned choice)
{
	struct json_object *out = NULL, *diff = NULL, *again = NULL;
	struct kc_status st = { 0 };

	(void)choice;
	if (kc_merge_patch_apply(doc, patch, &out, &st) < 0)
		return;
	if (json_object_is_type(doc, json_type_object) &&
	    json_object_is_type(out, json_type_object) &&
	    kc_merge_patch_create(doc, out, &diff, &st) == 0) {
		if (kc_merge_patch_apply(doc, diff, &again, &st) == 0) {
			drop_nulls(out);
			drop_nulls(again);
			FUZZ_CHECK(json_object_equal(out, again));
			json_object_put(again);
		}
		json_object_put(diff);
	}
	json_object_put(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return patch_fuzz(data, size, apply);
}

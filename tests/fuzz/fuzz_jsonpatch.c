/*
 * fuzz_jsonpatch.c: JSON patch (RFC 6902, lib/patch.c) on a document.
 * Applying never changes the document it was given.
 */
#include "fuzz_patch_common.h"

static void
apply(const struct json_object *doc, const struct json_object *patch, unsigned choice)
{
	struct json_object *before = NULL, *out = NULL;
	struct kc_status st = { 0 };

	(void)choice;
	if (json_object_deep_copy((struct json_object *)(uintptr_t)doc, &before, NULL) < 0)
		return;
	if (kc_json_patch_apply(doc, patch, &out, &st) == 0)
		json_object_put(out);
	FUZZ_CHECK(json_object_equal(before, (struct json_object *)(uintptr_t)doc));
	json_object_put(before);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return patch_fuzz(data, size, apply);
}

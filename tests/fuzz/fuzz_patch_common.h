/*
 * fuzz_patch_common.h: the shape the three patch targets share. The
 * input is a document and a patch separated by FUZZ_SEP; the document
 * is JSON, the patch goes through kc_patch_parse() as a PATCH body does.
 */
#ifndef TY_FUZZ_PATCH_COMMON_H
#define TY_FUZZ_PATCH_COMMON_H

#include <string.h>

#include <kc/err.h>
#include <kc/json.h>
#include <kc/patch.h>

#include "fuzz.h"

typedef void	patch_fn(const struct json_object *doc, const struct json_object *patch,
		    unsigned choice);

static inline int
patch_fuzz(const uint8_t *data, size_t size, patch_fn *fn)
{
	struct json_object *doc = NULL, *patch = NULL;
	char *parts[2];

	if (size < 1 || size > FUZZ_INPUT_MAX || fuzz_split(data + 1, size - 1, parts, 2) < 0)
		return 0;
	if (kc_json_parse(parts[0], strlen(parts[0]), &doc, NULL) == 0 &&
	    kc_patch_parse(parts[1], strlen(parts[1]), &patch, NULL) == 0)
		fn(doc, patch, data[0]);
	if (doc != NULL)
		json_object_put(doc);
	if (patch != NULL)
		json_object_put(patch);
	fuzz_parts_free(parts, 2);
	return 0;
}

#endif

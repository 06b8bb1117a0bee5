/*
 * fuzz_json.c: JSON through json-c (kc_json_parse(), with libkc's depth
 * and size bounds); what parses must dump and parse again to an equal
 * tree.
 */
#include <stdlib.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/json.h>

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_object *o = NULL, *again = NULL;
	struct kc_status st = { 0 };
	char *text;
	size_t len;

	if (size > FUZZ_INPUT_MAX)
		return 0;
	if (kc_json_parse((const char *)data, size, &o, &st) < 0)
		return 0;
	if ((text = kc_json_dump(o, &len)) != NULL) {
		FUZZ_CHECK(kc_json_parse(text, len, &again, &st) == 0);
		FUZZ_CHECK(json_object_equal(o, again));
		json_object_put(again);
		kc_free(text);
	}
	json_object_put(o);
	return 0;
}

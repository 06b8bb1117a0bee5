/*
 * fuzz_yaml.c: YAML to json-c (lib/yaml.c), every document of a stream
 * and the stream as one document; each document that parses must dump as
 * YAML that parses again, as one document, to an equal tree.
 */
#include <stdlib.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/yaml.h>

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kc_yaml_opts opts = { .max_depth = 40, .max_nodes = 20000 };
	struct json_object *o = NULL, *again = NULL;
	struct kc_status st = { 0 };
	char *text;
	size_t len;

	if (size > FUZZ_INPUT_MAX)
		return 0;
	if (kc_yaml_parse((const char *)data, size, &opts, &o, &st) == 0) {
		for (size_t i = 0; i < json_object_array_length(o); i++) {
			struct json_object *doc = json_object_array_get_idx(o, i);

			if ((text = kc_yaml_dump(doc, &len)) == NULL)
				continue;
			again = NULL;
			FUZZ_CHECK(kc_yaml_parse_one(text, len, NULL, &again, &st) == 0);
			FUZZ_CHECK(json_object_equal(doc, again));
			if (again != NULL)
				json_object_put(again);
			kc_free(text);
		}
		json_object_put(o);
	}
	o = NULL;
	if (kc_yaml_parse_one((const char *)data, size, &opts, &o, &st) == 0)
		json_object_put(o);
	return 0;
}

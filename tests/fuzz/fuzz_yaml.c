/*
 * fuzz_yaml.c: YAML to json-c (lib/yaml.c), every document of a stream
 * and the first alone; what parses must dump as YAML that parses again
 * to an equal tree.
 */
#include <stdlib.h>

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
		if ((text = kc_yaml_dump(o, &len)) != NULL) {
			FUZZ_CHECK(kc_yaml_parse(text, len, NULL, &again, &st) == 0);
			FUZZ_CHECK(json_object_equal(o, again));
			json_object_put(again);
			free(text);
		}
		json_object_put(o);
	}
	o = NULL;
	if (kc_yaml_parse_one((const char *)data, size, &opts, &o, &st) == 0)
		json_object_put(o);
	return 0;
}

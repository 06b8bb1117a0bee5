/*
 * fuzz_schema.c: structural schema validation (devcluster/schema.c,
 * schema_crd.c): a CustomResourceDefinition (YAML or JSON) is defaulted
 * and validated as a CRD create; when it is valid, the object after
 * FUZZ_SEP is pruned, defaulted and validated as a custom resource of
 * each version, as a write to it would be.
 */
#include <string.h>

#include <kc/err.h>
#include <kc/json.h>
#include <kc/yaml.h>

#include "../../devcluster/schema.h"

#include "fuzz.h"

static void
custom_resource(const struct json_object *schema, const char *text)
{
	struct json_object *obj = NULL, *unknown = NULL;
	struct schema_errs errs = { 0 };

	if (kc_json_parse(text, strlen(text), &obj, NULL) < 0)
		return;
	if (schema_validate(schema, obj, &errs) == KC_EINVALID)
		FUZZ_CHECK(errs.n > 0 || errs.dropped > 0);
	if (schema_prune(schema, obj, &unknown) == 0)
		json_object_put(unknown);
	if (schema_default(schema, obj) == 0) {
		memset(&errs, 0, sizeof(errs));
		if (schema_validate(schema, obj, &errs) == KC_EINVALID)
			FUZZ_CHECK(errs.n > 0 || errs.dropped > 0);
	}
	json_object_put(obj);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kc_yaml_opts opts = { .max_depth = 40, .max_nodes = 20000 };
	struct json_object *crd = NULL, *versions;
	struct schema_errs errs = { 0 };
	struct kc_status st = { 0 };
	char *parts[2];

	if (size > FUZZ_INPUT_MAX || fuzz_split(data, size, parts, 2) < 0)
		return 0;
	if (kc_yaml_parse_one(parts[0], strlen(parts[0]), &opts, &crd, &st) < 0 ||
	    !json_object_is_type(crd, json_type_object))
		goto out;
	if (schema_crd_default(crd) < 0 || schema_crd_validate(crd, NULL, &errs, &st) != 0)
		goto out;
	(void)schema_crd_storage_version(crd);
	versions = kc_json_get(crd, "spec", "versions");
	for (size_t i = 0; json_object_is_type(versions, json_type_array) &&
	    i < json_object_array_length(versions); i++) {
		const char *v = kc_json_str(json_object_array_get_idx(versions, i), "name");

		if (v != NULL)
			custom_resource(schema_crd_version_schema(crd, v), parts[1]);
	}
out:
	if (crd != NULL)
		json_object_put(crd);
	fuzz_parts_free(parts, 2);
	return 0;
}

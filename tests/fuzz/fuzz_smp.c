/*
 * fuzz_smp.c: strategic merge patch (lib/patch.c) with the schema of a
 * kind the input's first byte picks, as the devcluster applies
 * application/strategic-merge-patch+json.
 */
#include "fuzz_patch_common.h"

static void
apply(const struct json_object *doc, const struct json_object *patch, unsigned choice)
{
	static const struct kc_smp_schema *const schemas[] = {
		&kc_smp_schema_object, &kc_smp_schema_pod, &kc_smp_schema_service,
		&kc_smp_schema_workload, &kc_smp_schema_node, &kc_smp_schema_namespace,
		&kc_smp_schema_serviceaccount, &kc_smp_schema_webhookconfiguration,
	};
	struct json_object *out = NULL;
	struct kc_status st = { 0 };

	if (kc_smp_apply(doc, patch, schemas[choice % KC_ARRAY_SIZE(schemas)], &out, &st) == 0)
		json_object_put(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return patch_fuzz(data, size, apply);
}

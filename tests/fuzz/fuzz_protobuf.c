/*
 * fuzz_protobuf.c: the devcluster's decoder of Kubernetes protobuf
 * request bodies (devcluster/protobuf.c): the "k8s\0" envelope, the
 * Unknown wrapper and each kind's messages. The input's first byte picks
 * the kind a request's URL would name.
 */
#include <kc/err.h>

#include "../../devcluster/protobuf.h"

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const kinds[][2] = {
		{ "v1", "Pod" }, { "v1", "ConfigMap" }, { "v1", "Secret" },
		{ "v1", "Service" }, { "v1", "Namespace" }, { "v1", "Node" },
		{ "apps/v1", "Deployment" }, { "v1", "Event" },
		{ "coordination.k8s.io/v1", "Lease" }, { "batch/v1", "Job" },
	};
	struct json_object *o = NULL;
	struct kc_status st = { 0 };
	unsigned k;

	if (size < 1 || size > FUZZ_INPUT_MAX)
		return 0;
	k = data[0] % KC_ARRAY_SIZE(kinds);
	(void)protobuf_supports(kinds[k][0], kinds[k][1]);
	if (protobuf_decode((const char *)data + 1, size - 1, kinds[k][0], kinds[k][1],
	    &o, &st) == 0)
		json_object_put(o);
	return 0;
}

/*
 * fuzz_jsonpath.c: JSONPath templates (devcluster/jsonpath.c, as kubectl
 * -o jsonpath and additionalPrinterColumns give them): the template,
 * then FUZZ_SEP, then a JSON document it runs against (a fixed Pod when
 * that is not JSON). Also parsed as a printer column's path.
 */
#include <string.h>

#include <kc/buf.h>
#include <kc/err.h>
#include <kc/json.h>

#include "../../devcluster/jsonpath.h"

#include "fuzz.h"

static const char pod_json[] =
    "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"labels\":{\"a\":\"b\"}},"
    "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"},{\"name\":\"d\"}]},"
    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
    "\"n\":1.5,\"b\":true,\"z\":null}}";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jsonpath *jp = NULL;
	struct json_object *doc = NULL;
	struct kc_status st = { 0 };
	struct kc_buf out;
	char *parts[2];

	if (size > 64 << 10 || fuzz_split(data, size, parts, 2) < 0)
		return 0;
	if (parts[1][0] == '\0' || kc_json_parse(parts[1], strlen(parts[1]), &doc, NULL) < 0)
		doc = fuzz_json(pod_json);
	if (doc != NULL && jsonpath_parse(parts[0], &jp, &st) == 0) {
		kc_buf_init(&out, 1 << 20);
		if (jsonpath_execute(jp, doc, 0, &out, &st) == 0)
			FUZZ_CHECK(out.len <= JSONPATH_PRINT_MAX);
		kc_buf_free(&out);
		kc_buf_init(&out, 1 << 20);
		if (jsonpath_execute(jp, doc, JSONPATH_ALLOW_MISSING, &out, &st) == 0)
			FUZZ_CHECK(out.len <= JSONPATH_PRINT_MAX);
		kc_buf_free(&out);
		jsonpath_free(jp);
	}
	jp = NULL;
	if (doc != NULL && jsonpath_parse_column(parts[0], &jp, &st) == 0)
		jsonpath_free(jp);
	if (doc != NULL)
		json_object_put(doc);
	fuzz_parts_free(parts, 2);
	return 0;
}

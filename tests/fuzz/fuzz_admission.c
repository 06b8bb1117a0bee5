/*
 * fuzz_admission.c: the controller's AdmissionReview handler
 * (controller/admission.c), mutating and validating, against a fixed
 * cluster: a Project over namespaces "llm" and "llm-eval", a profile
 * "gpu-8", two members. The input's first byte picks the hook. Every
 * answer is an HTTP status; a 200 is an AdmissionReview that parses.
 */
#include <errno.h>
#include <string.h>

#include <kc/buf.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/yaml.h>

#include "../../controller/admission.h"
#include "../../controller/config.h"

#include "fuzz.h"

#define NOW	((time_t)1767225600)

static const char PROJECT[] =
    "{\"apiVersion\":\"trainyard.dev/v1beta1\",\"kind\":\"Project\","
    "\"metadata\":{\"name\":\"llm\",\"uid\":\"u-1\"},\"spec\":{"
    "\"namespaces\":[{\"name\":\"llm\"},{\"name\":\"llm-eval\"}],"
    "\"quota\":{\"maxGPUsPerRun\":16},"
    "\"resourceProfiles\":{\"allowed\":[\"gpu-2\",\"gpu-8\"],\"default\":\"gpu-8\"},"
    "\"memberPolicy\":{\"maxMembers\":2,\"maxInvitationTTL\":\"720h\","
    "\"maxGPUsPerMember\":32}}}";

static const char PROFILE[] =
    "{\"apiVersion\":\"trainyard.dev/v1beta1\",\"kind\":\"ResourceProfile\","
    "\"metadata\":{\"name\":\"gpu-8\"},"
    "\"spec\":{\"resources\":{\"cpu\":\"8\",\"nvidia.com/gpu\":8}}}";

static const char MEMBERS[] =
    "[{\"kind\":\"ProjectMember\",\"metadata\":{\"name\":\"alice\",\"namespace\":\"llm\","
    "\"creationTimestamp\":\"2025-12-01T00:00:00Z\"},\"spec\":{\"subject\":{\"kind\":"
    "\"User\",\"name\":\"alice\"},\"role\":\"researcher\","
    "\"expiresAt\":\"2026-01-20T00:00:00Z\"}},"
    "{\"kind\":\"ProjectMember\",\"metadata\":{\"name\":\"leads\",\"namespace\":\"llm\","
    "\"creationTimestamp\":\"2025-12-02T00:00:00Z\"},\"spec\":{\"subject\":{\"kind\":"
    "\"Group\",\"name\":\"leads\"},\"role\":\"admin\","
    "\"expiresAt\":\"2026-01-20T00:00:00Z\"}}]";

static struct json_object *
f_project(void *arg, const char *ns)
{
	(void)arg;
	if (strcmp(ns, "llm") == 0 || strcmp(ns, "llm-eval") == 0)
		return fuzz_json(PROJECT);
	return NULL;
}

static struct json_object *
f_profile(void *arg, const char *name)
{
	(void)arg;
	return strcmp(name, "gpu-8") == 0 ? fuzz_json(PROFILE) : NULL;
}

static struct json_object *
f_members(void *arg, const char *ns)
{
	(void)arg;
	return strcmp(ns, "llm") == 0 ? fuzz_json(MEMBERS) : json_object_new_array();
}

static bool
f_name_taken(void *arg, const char *kind, const char *ns, const char *name)
{
	(void)arg;
	return strcmp(ns, "llm") == 0 && strcmp(kind, "service") == 0 &&
	    strcmp(name, "web") == 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ty_config cfg;
	struct admission_ops ops = {
		.project_of = f_project, .profile = f_profile, .members = f_members,
		.name_taken = f_name_taken, .cfg = &cfg,
	};
	struct admission_info info;
	struct json_object *ans = NULL;
	struct kc_buf out;
	int code;

	if (size < 1 || size > FUZZ_INPUT_MAX)
		return 0;
	config_defaults(&cfg);
	kc_buf_init(&out, ADMISSION_ANSWER_MAX);
	code = admission_handle((data[0] & 1) ? ADMISSION_VALIDATE : ADMISSION_MUTATE,
	    (const char *)data + 1, size - 1, &ops, NOW, &out, &info);
	FUZZ_CHECK(code == 200 || code == 400 || code == 413 || code == -ENOMEM ||
	    code == -E2BIG);
	if (code == 200) {
		FUZZ_CHECK(kc_json_parse(out.data, out.len, &ans, NULL) == 0);
		FUZZ_CHECK(kc_json_get(ans, "response") != NULL);
		json_object_put(ans);
	}
	kc_buf_free(&out);
	config_release(&cfg);
	return 0;
}

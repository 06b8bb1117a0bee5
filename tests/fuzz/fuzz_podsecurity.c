/*
 * fuzz_podsecurity.c: the Pod Security Standards engine
 * (lib/podsecurity.c): a Pod (JSON or YAML) checked against every level
 * at a version the input picks, and its labels read as a namespace's
 * pod-security.kubernetes.io/ labels. A pod that fails a check names
 * at least one reason.
 */
#include <errno.h>
#include <string.h>

#include <kc/err.h>
#include <kc/json.h>
#include <kc/podsecurity.h>
#include <kc/sbuf.h>
#include <kc/yaml.h>

#include "fuzz.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum kc_psa_level levels[] = {
		KC_PSA_PRIVILEGED, KC_PSA_BASELINE, KC_PSA_RESTRICTED,
	};
	static const char *const modes[] = { "enforce", "audit", "warn" };
	struct kc_yaml_opts opts = { .max_depth = 40, .max_nodes = 20000 };
	struct json_object *pod = NULL, *meta, *spec;
	struct kc_psa_policy p, ns;
	char msg[4096], name[KC_PSA_POLICY_NAME_MAX];
	struct kc_sbuf b;
	int n;

	if (size < 1 || size > FUZZ_INPUT_MAX)
		return 0;
	if (kc_yaml_parse_one((const char *)data + 1, size - 1, &opts, &pod, NULL) < 0)
		return 0;
	meta = kc_json_get(pod, "metadata");
	spec = kc_json_get(pod, "spec");
	for (size_t i = 0; i < KC_ARRAY_SIZE(levels); i++) {
		p = (struct kc_psa_policy){ .level = levels[i], .minor = data[0] % 40 };
		p = kc_psa_emulate(&p, 32);
		(void)kc_psa_policy_name(&p, name, sizeof(name));
		kc_sbuf_init(&b, msg, sizeof(msg));
		n = kc_psa_check(meta, spec, &p, &b);
		FUZZ_CHECK(n >= 0 || n == -ENOMEM);
		if (n > 0)
			FUZZ_CHECK(msg[0] != '\0');
		kc_sbuf_init(&b, msg, sizeof(msg));
		(void)kc_psa_check_reasons(meta, spec, &p, &b);
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(modes); i++) {
		kc_sbuf_init(&b, msg, sizeof(msg));
		(void)kc_psa_namespace_policy(kc_json_get(meta, "labels"), modes[i], &ns, &b);
	}
	json_object_put(pod);
	return 0;
}

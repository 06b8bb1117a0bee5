/*
 * fuzz_model.c: the controller's Run and Project model
 * (controller/model.c, project.c, session.c). The input is a Run (YAML or
 * JSON), then FUZZ_SEP and a ResourceProfile (optional). A fuzzed spec
 * must give either a clear InvalidSpec (KC_EINVALID with at least one
 * problem, each with a field and a message) or a valid spec whose plan
 * (PodGroup, Service, NetworkPolicy, every pod) builds; the session
 * decision over it must not fail either way. The Run is also read as a
 * Project, with the same contract.
 */
#include <errno.h>
#include <string.h>

#include <kc/err.h>
#include <kc/json.h>
#include <kc/yaml.h>

#include "../../controller/config.h"
#include "../../controller/model.h"
#include "../../controller/project.h"
#include "../../controller/session.h"

#include "fuzz.h"

#define PODS_MAX	32	/* pods built of one plan (then the last) */

static void
problems_ok(const struct ty_problems *probs)
{
	char text[1024];

	FUZZ_CHECK(probs->n >= 1 && probs->n <= TY_PROBLEMS_MAX && probs->total >= probs->n);
	for (unsigned i = 0; i < probs->n; i++)
		FUZZ_CHECK(probs->p[i].message[0] != '\0');
	model_problems_text(probs, text, sizeof(text));
	FUZZ_CHECK(text[0] != '\0');
}

static void
plan(const struct ty_spec *s, const struct ty_config *cfg)
{
	static const enum ty_podgroup_api apis[] = {
		TY_PODGROUP_X_K8S, TY_PODGROUP_SIGS_K8S, TY_PODGROUP_NONE,
	};
	struct json_object *o = NULL;
	int r;

	FUZZ_CHECK(s->nodes >= 1);
	for (size_t a = 0; a < KC_ARRAY_SIZE(apis); a++) {
		if (apis[a] != TY_PODGROUP_NONE) {
			r = model_podgroup(s, 1, apis[a], &o);
			FUZZ_CHECK(r == 0 || r == -ENOMEM);
			if (r == 0)
				json_object_put(o);
		}
		for (int32_t i = 0; i < s->nodes; i++) {
			if (i == PODS_MAX)
				i = s->nodes - 1;
			r = model_pod(s, cfg, 1, apis[a], i, &o);
			FUZZ_CHECK(r == 0 || r == -ENOMEM);
			if (r == 0)
				json_object_put(o);
		}
		FUZZ_CHECK(model_pod(s, cfg, 1, apis[a], s->nodes, &o) == -EINVAL);
	}
	r = model_service(s, 1, &o);
	FUZZ_CHECK(r == 0 || r == -ENOMEM);
	if (r == 0)
		json_object_put(o);
	r = model_network_policy(s, cfg, 1, &o);
	FUZZ_CHECK(r == 0 || r == -ENOMEM);
	if (r == 0)
		json_object_put(o);
}

static void
decide(const struct json_object *run, const struct ty_spec *s,
    const struct ty_problems *probs, const struct ty_config *cfg)
{
	struct ty_control ctl;
	struct ty_decision d;
	int r;

	model_control(run, &ctl);
	memset(&d, 0, sizeof(d));
	r = session_decide(&(struct ty_session_in){
		.run = run, .ctl = &ctl, .spec = s, .problems = s == NULL ? probs : NULL,
		.cfg = cfg, .api = TY_PODGROUP_X_K8S, .now_ms = UINT64_C(1767225600000),
		.podgroup = { .session = -1 }, .service = { .session = -1 },
		.netpol = { .session = -1 },
	}, &d);
	FUZZ_CHECK(r == 0 || r == -ENOMEM);
	if (r == 0)
		session_decision_release(&d);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kc_yaml_opts opts = { .max_depth = 40, .max_nodes = 20000 };
	struct json_object *run = NULL, *profile = NULL;
	struct ty_problems probs;
	struct ty_project *proj = NULL;
	struct ty_spec *s = NULL;
	struct ty_config cfg;
	char *parts[2];
	int r;

	if (size > FUZZ_INPUT_MAX || fuzz_split(data, size, parts, 2) < 0)
		return 0;
	if (kc_yaml_parse_one(parts[0], strlen(parts[0]), &opts, &run, NULL) < 0 ||
	    !json_object_is_type(run, json_type_object))
		goto out;
	if (kc_yaml_parse_one(parts[1], strlen(parts[1]), &opts, &profile, NULL) < 0 ||
	    !json_object_is_type(profile, json_type_object)) {
		if (profile != NULL)
			json_object_put(profile);
		profile = NULL;
	}
	config_defaults(&cfg);
	memset(&probs, 0, sizeof(probs));
	r = model_validate(run, profile, &cfg, &s, &probs);
	FUZZ_CHECK(r == 0 || r == KC_EINVALID || r == -ENOMEM);
	if (r == 0)
		plan(s, &cfg);
	else if (r == KC_EINVALID)
		problems_ok(&probs);
	if (r != -ENOMEM)
		decide(run, s, &probs, &cfg);
	model_spec_free(s);
	memset(&probs, 0, sizeof(probs));
	r = project_parse(run, &proj, &probs);
	FUZZ_CHECK(r == 0 || r == KC_EINVALID || r == -ENOMEM);
	if (r == KC_EINVALID)
		problems_ok(&probs);
	project_free(proj);
	config_release(&cfg);
out:
	if (run != NULL)
		json_object_put(run);
	if (profile != NULL)
		json_object_put(profile);
	fuzz_parts_free(parts, 2);
	return 0;
}

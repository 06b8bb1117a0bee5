/*
 * test_ctl_model.c: Run validation and the desired objects.
 *
 * Golden files: tests/fixtures/controller/<case>.yaml holds a Run and its
 * ResourceProfile; <case>-<api>.json the objects the model builds (the
 * PodGroup when gang scheduling is on, the Service, the NetworkPolicy and
 * the first and last pods). TY_UPDATE_GOLDEN=1 rewrites the golden files
 * (review the diff before committing it).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/buf.h>
#include <kc/json.h>
#include <kc/podsecurity.h>
#include <kc/quantity.h>
#include <kc/sbuf.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "testutil.h"
#include "../../controller/config.h"
#include "../../controller/model.h"

static struct json_object *
yaml(const char *text)
{
	struct json_object *o = NULL;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_yaml_parse_one(text, strlen(text), NULL, &o, &st) == 0,
	    "bad test YAML: %s", st.message);
	return o;
}

/* The Run and (when there is one) the profile of a fixture file. */
static void
load_case(const char *name, struct json_object **run, struct json_object **profile)
{
	char file[128];
	char *text;
	size_t len;
	struct json_object *docs = NULL;
	struct kc_status st = { 0 };

	snprintf(file, sizeof(file), "controller/%s.yaml", name);
	text = tu_fixture(file, &len);
	ck_assert_msg(kc_yaml_parse(text, len, NULL, &docs, &st) == 0, "%s", st.message);
	kc_free(text);
	*run = json_object_get(json_object_array_get_idx(docs, 0));
	*profile = json_object_array_length(docs) > 1 ?
	    json_object_get(json_object_array_get_idx(docs, 1)) : NULL;
	json_object_put(docs);
}

static void
config_with_peers(struct ty_config *cfg)
{
	config_defaults(cfg);
	cfg->ingress_peers = yaml("- namespaceSelector: {matchLabels: "
	    "{kubernetes.io/metadata.name: monitoring}}\n");
}

static struct ty_spec *
valid_spec(const struct json_object *run, const struct json_object *profile,
    const struct ty_config *cfg)
{
	struct ty_spec *s = NULL;
	struct ty_problems probs;
	char text[2048];
	int r = model_validate(run, profile, cfg, &s, &probs);

	model_problems_text(&probs, text, sizeof(text));
	ck_assert_msg(r == 0, "invalid: %s", text);
	return s;
}

static struct json_object *
objects(const struct ty_spec *s, const struct ty_config *cfg, enum ty_podgroup_api api,
    int64_t session)
{
	struct json_object *all = json_object_new_object(), *o, *pods;

	ck_assert_ptr_nonnull(all);
	if (api != TY_PODGROUP_NONE) {
		ck_assert_int_eq(model_podgroup(s, session, api, &o), 0);
		ck_assert_int_eq(kc_json_put(all, "podGroup", o), 0);
	} else
		ck_assert_int_eq(model_podgroup(s, session, api, &o), -EINVAL);
	ck_assert_int_eq(model_service(s, session, &o), 0);
	ck_assert_int_eq(kc_json_put(all, "service", o), 0);
	ck_assert_int_eq(model_network_policy(s, cfg, session, &o), 0);
	ck_assert_int_eq(kc_json_put(all, "networkPolicy", o), 0);
	ck_assert_int_eq(kc_json_put(all, "pods", pods = json_object_new_array()), 0);
	ck_assert_int_eq(model_pod(s, cfg, session, api, 0, &o), 0);
	ck_assert_int_eq(kc_json_append(pods, o), 0);
	ck_assert_int_eq(model_pod(s, cfg, session, api, s->nodes - 1, &o), 0);
	ck_assert_int_eq(kc_json_append(pods, o), 0);
	ck_assert_int_eq(model_pod(s, cfg, session, api, s->nodes, &o), -EINVAL);
	ck_assert_int_eq(model_pod(s, cfg, session, api, -1, &o), -EINVAL);
	return all;
}

struct golden_case {
	const char		*fixture;
	enum ty_podgroup_api	 api;
	const char		*golden;
	bool			 peers;
};

static const struct golden_case golden_cases[] = {
	{ "gpu4", TY_PODGROUP_X_K8S, "gpu4-x-k8s.json", true },
	{ "preemptible", TY_PODGROUP_X_K8S, "preemptible-x-k8s.json", false },
	{ "zone", TY_PODGROUP_X_K8S, "zone-x-k8s.json", false },
	{ "plain", TY_PODGROUP_NONE, "plain-none.json", false },
	{ "plain", TY_PODGROUP_SIGS_K8S, "plain-sigs-k8s.json", false },
};

START_TEST(test_golden)
{
	const struct golden_case *gc = &golden_cases[_i];
	struct json_object *run, *profile, *got, *want = NULL;
	struct ty_config cfg;
	struct ty_spec *s;
	char file[128], *text;
	const char *out;
	size_t len;
	struct kc_status st = { 0 };

	load_case(gc->fixture, &run, &profile);
	if (gc->peers)
		config_with_peers(&cfg);
	else
		config_defaults(&cfg);
	s = valid_spec(run, profile, &cfg);
	got = objects(s, &cfg, gc->api, 2);
	snprintf(file, sizeof(file), "controller/%s", gc->golden);
	if (getenv("TY_UPDATE_GOLDEN") != NULL) {
		out = json_object_to_json_string_ext(got, JSON_C_TO_STRING_PRETTY |
		    JSON_C_TO_STRING_NOSLASHESCAPE);
		ck_assert_int_eq(kc_write_file_atomic(tu_fixture_path(file), out,
		    strlen(out), 0644), 0);
	}
	text = tu_fixture(file, &len);
	ck_assert_int_eq(kc_json_parse(text, len, &want, &st), 0);
	kc_free(text);
	ck_assert_msg(kc_json_equal(got, want), "%s differs:\n%s", file,
	    json_object_to_json_string_ext(got, JSON_C_TO_STRING_PRETTY));
	json_object_put(want);
	json_object_put(got);
	model_spec_free(s);
	config_release(&cfg);
	json_object_put(run);
	json_object_put(profile);
}
END_TEST

/* Details the golden files show, asserted one by one. */
START_TEST(test_merge_rules)
{
	struct json_object *run, *profile, *pod, *env, *ctr;
	struct ty_config cfg;
	struct ty_spec *s;

	load_case("gpu4", &run, &profile);
	config_defaults(&cfg);
	s = valid_spec(run, profile, &cfg);
	ck_assert_int_eq(s->nodes, 4);
	ck_assert_int_eq(s->gpus_per_node, 8);
	ck_assert_int_eq(s->master_port, 23456);
	ck_assert_str_eq(s->priority_class, "research");
	/* The Run's memory limit wins and becomes the request too. */
	ck_assert_str_eq(kc_json_str(s->limits, "memory"), "1536Gi");
	ck_assert_str_eq(kc_json_str(s->requests, "memory"), "1536Gi");
	ck_assert_str_eq(kc_json_str(s->requests, "cpu"), "96");
	ck_assert_str_eq(kc_json_str(s->requests, "nvidia.com/gpu"), "8");
	ck_assert_int_eq(model_pod(s, &cfg, 1, TY_PODGROUP_X_K8S, 2, &pod), 0);
	ctr = json_object_array_get_idx(kc_json_get(pod, "spec", "containers"), 0);
	env = kc_json_get(ctr, "env");
	/* Trainyard's variables, then the profile's (NCCL_DEBUG replaced in place). */
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(env, 0), "name"),
	    "TRAINYARD_RUN");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(env, 4), "value"),
	    "llama-0,llama-1,llama-2,llama-3");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(env, 8), "name"), "RANK");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(env, 8), "value"), "2");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(env, 12), "name"),
	    "NCCL_DEBUG");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(env, 12), "value"), "WARN");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(env, 13), "name"),
	    "NCCL_IB_HCA");
	ck_assert_str_eq(kc_json_str(pod, "spec", "hostname"), "llama-2");
	ck_assert_str_eq(kc_json_str(pod, "metadata", "labels", TY_LABEL_SESSION), "1");
	json_object_put(pod);
	model_spec_free(s);
	config_release(&cfg);
	json_object_put(run);
	json_object_put(profile);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Validation messages */

#define RUN_HDR	"apiVersion: trainyard.dev/v1alpha1\nkind: Run\nmetadata: {name: r1, " \
		"namespace: ns, uid: u1}\n"
#define PROFILE	"apiVersion: trainyard.dev/v1alpha1\nkind: ResourceProfile\n" \
		"metadata: {name: p}\nspec:\n  resources: {cpu: 4, nvidia.com/gpu: 8}\n" \
		"  maxNodes: 8\n"

struct invalid_case {
	const char	*run;		/* the whole Run, or RUN_HDR + spec */
	const char	*profile;	/* NULL: none */
	const char	*field;		/* of the first problem */
	const char	*message;	/* of the first problem */
};

static const struct invalid_case invalid_cases[] = {
	{ RUN_HDR "spec: {nodes: 1, image: x}\n", NULL, "spec",
	    "neither spec.profile nor spec.resources is set: say what each node gets, "
	    "with a ResourceProfile (spec.profile) or spec.resources.limits such as "
	    "{nvidia.com/gpu: 8}" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: h100}\n", NULL, "spec.profile",
	    "ResourceProfile \"h100\" not found (\"kubectl get resourceprofiles\" lists "
	    "them)" },
	{ RUN_HDR "spec: {nodes: 16, image: x, profile: p}\n", PROFILE, "spec.nodes",
	    "16 nodes is more than ResourceProfile \"p\" allows (maxNodes 8)" },
	{ RUN_HDR "spec: {nodes: 0, image: x, profile: p}\n", PROFILE, "spec.nodes",
	    "0 is out of range: a run has 1 to 10000 nodes" },
	{ RUN_HDR "spec: {image: x, profile: p}\n", PROFILE, "spec.nodes",
	    "required: the number of nodes (pods), 1 to 10000" },
	{ RUN_HDR "spec: {nodes: 1, profile: p}\n", PROFILE, "spec.image",
	    "required: the container image every node runs" },
	{ "metadata: {name: 1run, namespace: ns, uid: u}\nspec: {nodes: 1, image: x, "
	    "profile: p}\n", PROFILE, "metadata.name",
	    "\"1run\" cannot name the run's Service: use at most 63 lowercase letters, "
	    "digits and '-', starting with a letter and ending with a letter or digit" },
	{ "metadata: {name: Run, namespace: ns, uid: u}\nspec: {nodes: 1, image: x, "
	    "profile: p}\n", PROFILE, "metadata.name",
	    "\"Run\" cannot name the run's Service: use at most 63 lowercase letters, "
	    "digits and '-', starting with a letter and ending with a letter or digit" },
	{ "metadata: {name: a23456789012345678901234567890123456789012345678901234567890, "
	    "namespace: ns, uid: u}\nspec: {nodes: 1000, image: x, resources: {limits: "
	    "{cpu: 1}}}\n", NULL, "metadata.name",
	    "\"a23456789012345678901234567890123456789012345678901234567890\" is too long "
	    "for 1000 nodes: the pod hostname \"a2345678901234567890123456789012345678901"
	    "2345678901234567890-999\" would have 64 characters, and hostnames allow 63; "
	    "use a name of at most 59 characters" },
	{ "metadata: {name: r, namespace: ns}\nspec: {nodes: 1, image: x, profile: p}\n",
	    PROFILE, "metadata.uid", "missing: the Run must come from the API server" },
	{ RUN_HDR "spec: {nodes: 1, image: x, resources: {limits: {cpu: two}}}\n", NULL,
	    "spec.resources.limits[cpu]", "\"two\" is not a quantity (examples: 4, 500m, "
	    "64Gi): quantities must match the regular expression "
	    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'" },
	{ RUN_HDR "spec: {nodes: 1, image: x, resources: {limits: {memory: -1Gi}}}\n",
	    NULL, "spec.resources.limits[memory]", "\"-1Gi\" is negative" },
	{ RUN_HDR "spec: {nodes: 1, image: x, resources: {limits: {nvidia.com/gpu: "
	    "\"0.5\"}}}\n", NULL, "spec.resources.limits[nvidia.com/gpu]", "\"0.5\" is not "
	    "a whole number: nvidia.com/gpu is counted in whole devices" },
	{ RUN_HDR "spec: {nodes: 1, image: x, resources: {requests: {nvidia.com/gpu: 2}, "
	    "limits: {nvidia.com/gpu: 4}}}\n", NULL,
	    "spec.resources.requests[nvidia.com/gpu]", "2 must equal its limit (4, from "
	    "spec.resources.limits): devices such as nvidia.com/gpu cannot be "
	    "overcommitted" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, resources: {requests: {cpu: "
	    "8}}}\n", PROFILE, "spec.resources.requests[cpu]", "8 is more than the limit "
	    "of 4 (from the profile); raise spec.resources.limits[cpu] too" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, env: [{name: MASTER_ADDR, "
	    "value: x}]}\n", PROFILE, "spec.env[0].name", "MASTER_ADDR is set by Trainyard "
	    "for every node and cannot be overridden" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, env: [{name: TRAINYARD_X, "
	    "value: x}]}\n", PROFILE, "spec.env[0].name", "TRAINYARD_X is set by Trainyard "
	    "for every node and cannot be overridden" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, env: [{name: A, value: x}, "
	    "{name: A, value: y}]}\n", PROFILE, "spec.env[1]",
	    "A is set twice in spec.env" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, env: [{name: 1A, value: x}]}\n",
	    PROFILE, "spec.env[0].name", "\"1A\" is not a valid variable name (letters, "
	    "digits, '_', '-' and '.', not starting with a digit)" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, env: [{name: A, value: x, "
	    "valueFrom: {fieldRef: {fieldPath: metadata.name}}}]}\n", PROFILE, "spec.env[0]",
	    "A sets both value and valueFrom" },
	{ RUN_HDR "spec: {nodes: 2, image: x, profile: z}\n",
	    "metadata: {name: z}\nspec: {resources: {cpu: 1}, zoneSelectors: [{minNodes: 4, "
	    "maxNodes: 8, nodeSelector: {a: b}}, {minNodes: 16, nodeSelector: {a: c}}]}\n",
	    "spec.nodes", "no zone of ResourceProfile \"z\" takes runs of 2 nodes (its "
	    "zoneSelectors take 4-8, 16-10000 nodes)" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, ports: [{name: master, "
	    "containerPort: 70000}]}\n", PROFILE, "spec.ports[0]",
	    "containerPort must be 1 to 65535" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, ports: [{name: Master_Port, "
	    "containerPort: 80}]}\n", PROFILE, "spec.ports[0]", "name \"Master_Port\" must "
	    "be at most 15 lowercase letters, digits and '-', with at least one letter" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, ports: [{name: a, containerPort: "
	    "80}, {name: a, containerPort: 81, protocol: QUIC}]}\n", PROFILE, "spec.ports[1]",
	    "protocol must be TCP, UDP or SCTP" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, restartPolicy: Always}\n",
	    PROFILE, "spec.restartPolicy", "must be Never, OnPreemption or OnFailure" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, activeDeadlineSeconds: 0}\n",
	    PROFILE, "spec.activeDeadlineSeconds", "must be a whole number of seconds, at "
	    "least 1" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, session: 0}\n", PROFILE,
	    "spec.session", "must be a whole number, at least 1" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, maxRestarts: -1}\n", PROFILE,
	    "spec.maxRestarts", "must be a whole number, at least 0" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, suspend: \"yes\"}\n", PROFILE,
	    "spec.suspend", "must be true or false" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, template: {metadata: {labels: "
	    "{trainyard.dev/run: other}}}}\n", PROFILE, "spec.template.metadata.labels",
	    "trainyard.dev/run is set by Trainyard" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, template: {metadata: {labels: "
	    "{\"bad key!\": x}}}}\n", PROFILE, "spec.template.metadata.labels", NULL },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, template: {spec: "
	    "{serviceAccountName: Bad_SA}}}\n", PROFILE,
	    "spec.template.spec.serviceAccountName", "\"Bad_SA\" is not a ServiceAccount "
	    "name" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p, command: run.sh}\n", PROFILE,
	    "spec.command", "must be a list of strings" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p}\n",
	    "metadata: {name: p}\nspec: {resources: {cpu: 1}, env: [{name: RANK, value: "
	    "\"0\"}]}\n", "ResourceProfile \"p\" spec.env[0].name", "RANK is set by Trainyard "
	    "for every node and cannot be overridden" },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p}\n",
	    "metadata: {name: p}\nspec: {resources: {cpu: lots}}\n",
	    "ResourceProfile \"p\" spec.resources[cpu]", NULL },
	{ RUN_HDR "spec: {nodes: 1, image: x, profile: p}\n",
	    "metadata: {name: p}\nspec: {resources: {cpu: 1}, priorityClassName: "
	    "High_Priority}\n", "ResourceProfile \"p\" spec.priorityClassName",
	    "\"High_Priority\" is not a PriorityClass name" },
	{ RUN_HDR "spec: 5\n", NULL, "spec", "missing: a Run needs at least nodes and image" },
};

START_TEST(test_invalid)
{
	const struct invalid_case *ic = &invalid_cases[_i];
	struct json_object *run = yaml(ic->run);
	struct json_object *profile = ic->profile != NULL ? yaml(ic->profile) : NULL;
	struct ty_config cfg;
	struct ty_spec *s = (struct ty_spec *)0x1;
	struct ty_problems probs;

	config_defaults(&cfg);
	ck_assert_int_eq(model_validate(run, profile, &cfg, &s, &probs), KC_EINVALID);
	ck_assert_ptr_eq(s, (struct ty_spec *)0x1);
	ck_assert_uint_ge(probs.n, 1);
	ck_assert_str_eq(probs.p[0].field, ic->field);
	if (ic->message != NULL)
		ck_assert_str_eq(probs.p[0].message, ic->message);
	json_object_put(run);
	json_object_put(profile);
}
END_TEST

START_TEST(test_every_problem)
{
	struct json_object *run = yaml(RUN_HDR "spec: {nodes: 0, profile: gone, session: -1, "
	    "env: [{name: RANK}], restartPolicy: Sometimes}\n");
	struct ty_config cfg;
	struct ty_spec *s = NULL;
	struct ty_problems probs;
	char text[4096];

	config_defaults(&cfg);
	ck_assert_int_eq(model_validate(run, NULL, &cfg, &s, &probs), KC_EINVALID);
	ck_assert_uint_eq(probs.total, 6);
	model_problems_text(&probs, text, sizeof(text));
	ck_assert_str_eq(text, "spec.profile: ResourceProfile \"gone\" not found (\"kubectl "
	    "get resourceprofiles\" lists them); spec.nodes: 0 is out of range: a run has "
	    "1 to 10000 nodes; spec.session: must be a whole number, at least 1; "
	    "spec.restartPolicy: must be Never, OnPreemption or OnFailure; "
	    "spec.env[0].name: RANK is set by Trainyard for every node and cannot be "
	    "overridden; spec.image: required: the container image every node runs");
	model_problems_text(&probs, text, 40);
	ck_assert_uint_eq(strlen(text), 39);
	json_object_put(run);
}
END_TEST

START_TEST(test_problems_bounded)
{
	struct kc_buf b;
	struct json_object *run;
	struct ty_config cfg;
	struct ty_spec *s = NULL;
	struct ty_problems probs;
	char text[256];

	kc_buf_init(&b, 1 << 16);
	ck_assert_int_eq(kc_buf_puts(&b, RUN_HDR "spec: {nodes: 1, image: x, resources: "
	    "{limits: {cpu: 1}}, env: ["), 0);
	for (int i = 0; i < 40; i++)
		ck_assert_int_eq(kc_buf_printf(&b, "%s{name: RANK}", i ? "," : ""), 0);
	ck_assert_int_eq(kc_buf_puts(&b, "]}\n"), 0);
	run = yaml(kc_buf_str(&b));
	kc_buf_free(&b);
	config_defaults(&cfg);
	ck_assert_int_eq(model_validate(run, NULL, &cfg, &s, &probs), KC_EINVALID);
	ck_assert_uint_eq(probs.n, TY_PROBLEMS_MAX);
	ck_assert_uint_eq(probs.total, 40);
	model_problems_text(&probs, text, sizeof(text));
	ck_assert_uint_lt(strlen(text), sizeof(text));
	json_object_put(run);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The security envelope */

#define ENV_RUN	RUN_HDR "spec:\n  nodes: 2\n  image: x\n  profile: p\n"
#define ENV_PFX	"outside the security envelope of ResourceProfile \"p\": "

struct envelope_case {
	const char	*run;		/* after ENV_RUN */
	const char	*security;	/* the profile's spec.security, or NULL */
	const char	*message;	/* the envelope problem; NULL: valid */
};

static const struct envelope_case envelope_cases[] = {
	/* The tightest envelope: nothing asked, nothing refused. */
	{ "  template: {spec: {volumes: [{name: c, configMap: {name: c}}, {name: s, "
	    "secret: {secretName: s}}, {name: e, emptyDir: {}}, {name: p, projected: "
	    "{sources: []}}, {name: d, downwardAPI: {items: []}}, {name: v, "
	    "persistentVolumeClaim: {claimName: v}}, {name: t, ephemeral: {}}, {name: i, "
	    "csi: {driver: x}}]}}\n", NULL, NULL },
	{ "  securityContext: {privileged: true}\n", NULL,
	    ENV_PFX "privileged (container \"main\" must not set "
	    "securityContext.privileged=true)" },
	{ "  securityContext: {privileged: true}\n", "{allowPrivileged: true}", NULL },
	{ "  securityContext: {capabilities: {add: [IPC_LOCK, NET_ADMIN]}}\n", NULL,
	    ENV_PFX "non-default capabilities (container \"main\" must not include "
	    "\"IPC_LOCK\", \"NET_ADMIN\" in securityContext.capabilities.add)" },
	{ "  securityContext: {capabilities: {add: [IPC_LOCK, cap_ipc_lock]}}\n",
	    "{allowedCapabilities: [IPC_LOCK]}", NULL },
	{ "  securityContext: {capabilities: {add: [IPC_LOCK, CAP_SYS_ADMIN]}}\n",
	    "{allowedCapabilities: [IPC_LOCK]}",
	    ENV_PFX "non-default capabilities (container \"main\" must not include "
	    "\"CAP_SYS_ADMIN\" in securityContext.capabilities.add)" },
	{ "  securityContext: {capabilities: {add: [ALL]}}\n",
	    "{allowedCapabilities: [IPC_LOCK]}",
	    ENV_PFX "non-default capabilities (container \"main\" must not include "
	    "\"ALL\" in securityContext.capabilities.add)" },
	{ "  template: {spec: {hostNetwork: true, hostPID: true, hostIPC: true}}\n", NULL,
	    ENV_PFX "host namespaces (hostIPC, hostNetwork, hostPID)" },
	{ "  template: {spec: {hostNetwork: true, hostPID: true, hostIPC: true}}\n",
	    "{allowHostNetwork: true, allowHostIPC: true}",
	    ENV_PFX "host namespaces (hostPID)" },
	{ "  template: {spec: {hostNetwork: true, hostPID: true, hostIPC: true}}\n",
	    "{allowHostNetwork: true, allowHostPID: true, allowHostIPC: true}", NULL },
	{ "  ports: [{containerPort: 80, hostPort: 80}]\n", "{allowHostNetwork: true}",
	    ENV_PFX "hostPort (container \"main\" uses hostPort 80)" },
	{ "  template: {spec: {volumes: [{name: root, hostPath: {path: /}}]}}\n", NULL,
	    ENV_PFX "hostPath volumes (volume \"root\")" },
	{ "  template: {spec: {volumes: [{name: root, hostPath: {path: /}}]}}\n",
	    "{allowedHostPaths: [{pathPrefix: /dev/infiniband}]}",
	    ENV_PFX "hostPath volumes (volume \"root\")" },
	{ "  template: {spec: {volumes: [{name: ib, hostPath: {path: /dev/infiniband2}}]}}\n",
	    "{allowedHostPaths: [{pathPrefix: /dev/infiniband/}]}",
	    ENV_PFX "hostPath volumes (volume \"ib\")" },
	{ "  template: {spec: {volumes: [{name: ib, hostPath: {path: "
	    "/dev/infiniband/../../etc}}]}}\n",
	    "{allowedHostPaths: [{pathPrefix: /dev/infiniband}]}",
	    ENV_PFX "hostPath volumes (volume \"ib\")" },
	{ "  template: {spec: {volumes: [{name: a, hostPath: {path: /}}, {name: b, nfs: "
	    "{server: s, path: /}}, {name: c, iscsi: {}}, {name: d, hostPath: {path: /etc}}, "
	    "{name: e, nfs: {server: t, path: /}}]}}\n", NULL,
	    ENV_PFX "hostPath volumes (volumes \"a\", \"d\"), restricted volume types "
	    "(volumes \"b\", \"c\", \"e\" use restricted volume types \"iscsi\", \"nfs\")" },
	{ "  volumeMounts: [{name: ib, mountPath: /dev/infiniband, readOnly: true}]\n"
	    "  template: {spec: {volumes: [{name: ib, hostPath: {path: "
	    "/dev/infiniband/uverbs0}}]}}\n",
	    "{allowedHostPaths: [{pathPrefix: /dev/infiniband, readOnly: true}]}", NULL },
	{ "  volumeMounts: [{name: ib, mountPath: /dev/infiniband}]\n"
	    "  template: {spec: {volumes: [{name: ib, hostPath: {path: /dev/infiniband}}]}}\n",
	    "{allowedHostPaths: [{pathPrefix: /dev/infiniband, readOnly: true}]}",
	    ENV_PFX "hostPath volumes (volume \"ib\" must be mounted readOnly: "
	    "/dev/infiniband is allowed read-only)" },
	{ "  volumeMounts: [{name: ib, mountPath: /dev/infiniband}]\n"
	    "  template: {spec: {volumes: [{name: ib, hostPath: {path: /dev/infiniband}}]}}\n",
	    "{allowedHostPaths: [{pathPrefix: /dev, readOnly: true}, {pathPrefix: "
	    "/dev/infiniband}]}", NULL },
	{ "  template: {spec: {volumes: [{name: n, nfs: {server: s, path: /}}]}}\n", NULL,
	    ENV_PFX "restricted volume types (volume \"n\" uses restricted volume type "
	    "\"nfs\")" },
	{ "  template: {spec: {volumes: [{name: n, nfs: {server: s, path: /}}]}}\n",
	    "{allowedVolumeTypes: [nfs]}", NULL },
	{ "  template: {spec: {volumes: [{name: c, configMap: {name: c}}]}}\n",
	    "{allowedVolumeTypes: [nfs]}",
	    ENV_PFX "restricted volume types (volume \"c\" uses restricted volume type "
	    "\"configMap\")" },
	{ "  template: {spec: {volumes: [{name: root, hostPath: {path: /}}]}}\n",
	    "{allowedVolumeTypes: [\"*\"]}", ENV_PFX "hostPath volumes (volume \"root\")" },
	{ "  securityContext: {seccompProfile: {type: Unconfined}, procMount: Unmasked, "
	    "appArmorProfile: {type: Unconfined}, windowsOptions: {hostProcess: true}}\n"
	    "  template: {spec: {securityContext: {seLinuxOptions: {type: spc_t}, "
	    "sysctls: [{name: kernel.msgmax, value: \"1\"}, {name: net.ipv4.tcp_syncookies, "
	    "value: \"1\"}]}}}\n",
	    "{allowPrivileged: true, allowedCapabilities: [\"*\"], allowedVolumeTypes: [\"*\"]}",
	    ENV_PFX "forbidden AppArmor profile (container \"main\" must not set AppArmor "
	    "profile type to \"Unconfined\"), procMount (container \"main\" must not set "
	    "securityContext.procMount to \"Unmasked\"), seLinuxOptions (pod set forbidden "
	    "securityContext.seLinuxOptions: type \"spc_t\"), seccompProfile (container "
	    "\"main\" must not set securityContext.seccompProfile.type to \"Unconfined\"), "
	    "forbidden sysctls (kernel.msgmax), hostProcess (container \"main\" must not set "
	    "securityContext.windowsOptions.hostProcess=true)" },
	/* AppArmor through the template's annotations. */
	{ "  template: {metadata: {annotations: "
	    "{container.apparmor.security.beta.kubernetes.io/main: unconfined}}}\n",
	    "{allowPrivileged: true}",
	    ENV_PFX "forbidden AppArmor profile (annotation must not set AppArmor profile type "
	    "to \"container.apparmor.security.beta.kubernetes.io/main=\"unconfined\"\")" },
	/* Every violation in one problem. */
	{ "  securityContext: {privileged: true, capabilities: {add: [SYS_ADMIN]}}\n"
	    "  template: {spec: {hostNetwork: true, volumes: [{name: root, hostPath: "
	    "{path: /}}]}}\n", NULL,
	    ENV_PFX "privileged (container \"main\" must not set "
	    "securityContext.privileged=true), non-default capabilities (container \"main\" "
	    "must not include \"SYS_ADMIN\" in securityContext.capabilities.add), host "
	    "namespaces (hostNetwork), hostPath volumes (volume \"root\")" },
};

START_TEST(test_envelope)
{
	const struct envelope_case *ec = &envelope_cases[_i];
	struct json_object *run, *profile;
	struct ty_config cfg;
	struct ty_spec *s = NULL;
	struct ty_problems probs;
	char text[4096];
	int r;

	snprintf(text, sizeof(text), ENV_RUN "%s", ec->run);
	run = yaml(text);
	snprintf(text, sizeof(text), PROFILE "%s%s\n", ec->security != NULL ?
	    "  security: " : "", ec->security != NULL ? ec->security : "");
	profile = yaml(text);
	config_defaults(&cfg);
	r = model_validate(run, profile, &cfg, &s, &probs);
	model_problems_text(&probs, text, sizeof(text));
	if (ec->message == NULL) {
		ck_assert_msg(r == 0, "refused: %s", text);
		ck_assert_uint_eq(probs.envelope, 0);
	} else {
		ck_assert_int_eq(r, KC_EINVALID);
		ck_assert_uint_eq(probs.total, 1);
		ck_assert_uint_eq(probs.envelope, 1);
		ck_assert_str_eq(probs.p[0].field, "spec");
		ck_assert_str_eq(probs.p[0].message, ec->message);
	}
	model_spec_free(s);
	json_object_put(run);
	json_object_put(profile);
}
END_TEST

/* Without a profile, the tightest envelope; the host namespaces reach the pods. */
START_TEST(test_envelope_pods)
{
	struct json_object *run, *profile, *pod = NULL;
	struct ty_config cfg;
	struct ty_spec *s = NULL;
	struct ty_problems probs;

	config_defaults(&cfg);
	run = yaml(RUN_HDR "spec: {nodes: 1, image: x, resources: {limits: {cpu: 1}}, "
	    "securityContext: {privileged: true}}\n");
	ck_assert_int_eq(model_validate(run, NULL, &cfg, &s, &probs), KC_EINVALID);
	ck_assert_uint_eq(probs.envelope, 1);
	ck_assert_str_eq(probs.p[0].message, "outside the default security envelope (no "
	    "ResourceProfile): privileged (container \"main\" must not set "
	    "securityContext.privileged=true)");
	json_object_put(run);

	run = yaml(ENV_RUN "  template: {spec: {hostNetwork: true, hostIPC: false}}\n");
	profile = yaml(PROFILE "  security: {allowHostNetwork: true}\n");
	s = valid_spec(run, profile, &cfg);
	ck_assert_int_eq(model_pod(s, &cfg, 1, TY_PODGROUP_NONE, 0, &pod), 0);
	ck_assert(kc_json_bool(pod, false, "spec", "hostNetwork"));
	ck_assert_ptr_null(kc_json_get(pod, "spec", "hostIPC"));
	json_object_put(pod);
	model_spec_free(s);
	json_object_put(run);
	json_object_put(profile);

	/* A v1beta1 Run: its container fields are checked too. */
	run = yaml("apiVersion: trainyard.dev/v1beta1\nkind: Run\nmetadata: {name: r1, "
	    "namespace: ns, uid: u1}\nspec: {nodes: 1, profile: p, container: {image: x, "
	    "securityContext: {capabilities: {add: [NET_RAW]}}}}\n");
	profile = yaml(PROFILE);
	ck_assert_int_eq(model_validate(run, profile, &cfg, &s, &probs), KC_EINVALID);
	ck_assert_uint_eq(probs.envelope, 1);
	ck_assert_str_eq(probs.p[0].message, ENV_PFX "non-default capabilities (container "
	    "\"main\" must not include \"NET_RAW\" in securityContext.capabilities.add)");
	json_object_put(run);
	json_object_put(profile);
}
END_TEST

/*
 * Fuzzed Runs never produce a pod outside the envelope: a Run valid with
 * no profile gives pods Pod Security's baseline admits (the tightest
 * envelope is inside baseline), and one valid with an RDMA profile adds
 * nothing but IPC_LOCK and /dev/infiniband read-only to that.
 */
static const char *
pick(const char *const *list, size_t n)
{
	return list[tu_rand((unsigned)n)];
}

static void
fuzz_run(struct kc_sbuf *b)
{
	static const char *const caps[] = {
		"IPC_LOCK", "ipc_lock", "CAP_IPC_LOCK", "SYS_ADMIN", "NET_ADMIN", "ALL", "CHOWN",
		"NET_BIND_SERVICE", "cap_sys_ptrace", "",
	};
	static const char *const seccomp[] = { "RuntimeDefault", "Unconfined", "Localhost" };
	static const char *const proc[] = { "Default", "Unmasked" };
	static const char *const setype[] = { "container_t", "spc_t", "", "container_kvm_t" };
	static const char *const vols[] = {
		"{name: v%u, emptyDir: {}}", "{name: v%u, hostPath: {path: /}}",
		"{name: v%u, hostPath: {path: /dev/infiniband}}",
		"{name: v%u, hostPath: {path: /dev/infiniband/../../etc}}",
		"{name: v%u, hostPath: {path: /dev/infiniband2}}",
		"{name: v%u, hostPath: {path: /dev/infiniband/uverbs0}}",
		"{name: v%u, nfs: {server: s, path: /}}", "{name: v%u, secret: {secretName: s}}",
		"{name: v%u, iscsi: {}}", "{name: v%u, configMap: {name: c}}",
	};
	static const char *const sysctls[] = { "kernel.msgmax", "net.ipv4.tcp_syncookies" };
	unsigned nv = tu_rand(3), nc = tu_rand(3);

	kc_sbuf_printf(b, ENV_RUN "  securityContext: {privileged: %s, capabilities: {add: [",
	    tu_rand(4) == 0 ? "true" : "false");
	for (unsigned i = 0; i < nc; i++)
		kc_sbuf_printf(b, "%s\"%s\"", i > 0 ? ", " : "", pick(caps, KC_ARRAY_SIZE(caps)));
	kc_sbuf_printf(b, "]}");
	if (tu_rand(4) == 0)
		kc_sbuf_printf(b, ", seccompProfile: {type: %s}", pick(seccomp,
		    KC_ARRAY_SIZE(seccomp)));
	if (tu_rand(4) == 0)
		kc_sbuf_printf(b, ", procMount: %s", pick(proc, KC_ARRAY_SIZE(proc)));
	if (tu_rand(6) == 0)
		kc_sbuf_printf(b, ", windowsOptions: {hostProcess: true}");
	if (tu_rand(6) == 0)
		kc_sbuf_printf(b, ", appArmorProfile: {type: Unconfined}");
	kc_sbuf_printf(b, "}\n  ports: [{containerPort: 80%s}]\n", tu_rand(5) == 0 ?
	    ", hostPort: 80" : "");
	kc_sbuf_printf(b, "  volumeMounts: [");
	for (unsigned i = 0; i < nv; i++)
		kc_sbuf_printf(b, "%s{name: v%u, mountPath: /m%u, readOnly: %s}", i > 0 ? ", " : "",
		    i, i, tu_rand(2) ? "true" : "false");
	kc_sbuf_printf(b, "]\n  template: {spec: {hostNetwork: %s, hostPID: %s, hostIPC: %s, "
	    "securityContext: {seLinuxOptions: {type: \"%s\"}, sysctls: [{name: %s, value: "
	    "\"1\"}]}, volumes: [", tu_rand(5) == 0 ? "true" : "false",
	    tu_rand(5) == 0 ? "true" : "false", tu_rand(5) == 0 ? "true" : "false",
	    pick(setype, KC_ARRAY_SIZE(setype)), pick(sysctls, KC_ARRAY_SIZE(sysctls)));
	for (unsigned i = 0; i < nv; i++) {
		kc_sbuf_printf(b, "%s", i > 0 ? ", " : "");
		kc_sbuf_printf(b, pick(vols, KC_ARRAY_SIZE(vols)), i);
	}
	kc_sbuf_printf(b, "]}}\n");
}

/* The pod of a valid spec, checked against the RDMA envelope by hand. */
static void
assert_rdma_pod(const struct json_object *pod)
{
	const struct json_object *ctr = json_object_array_get_idx(kc_json_get(pod, "spec",
	    "containers"), 0);
	const struct json_object *add = kc_json_get(ctr, "securityContext", "capabilities",
	    "add");
	const struct json_object *vols = kc_json_get(pod, "spec", "volumes");
	const struct json_object *mounts = kc_json_get(ctr, "volumeMounts");

	ck_assert(!kc_json_bool(ctr, false, "securityContext", "privileged"));
	ck_assert(!kc_json_bool(pod, false, "spec", "hostNetwork"));
	ck_assert(!kc_json_bool(pod, false, "spec", "hostPID"));
	ck_assert(!kc_json_bool(pod, false, "spec", "hostIPC"));
	for (size_t i = 0; add != NULL && i < json_object_array_length(add); i++) {
		const char *c = json_object_get_string(json_object_array_get_idx(add, i));

		ck_assert_msg(strcasecmp(c, "IPC_LOCK") == 0 || strcasecmp(c, "CAP_IPC_LOCK") == 0,
		    "capability %s", c);
	}
	for (size_t i = 0; vols != NULL && i < json_object_array_length(vols); i++) {
		const struct json_object *v = json_object_array_get_idx(vols, i);
		const char *path = kc_json_str(v, "hostPath", "path");

		if (path == NULL)
			continue;
		ck_assert_msg(strcmp(path, "/dev/infiniband") == 0 ||
		    (strncmp(path, "/dev/infiniband/", 16) == 0 && strstr(path, "..") == NULL),
		    "hostPath %s", path);
		for (size_t j = 0; mounts != NULL && j < json_object_array_length(mounts); j++) {
			const struct json_object *m = json_object_array_get_idx(mounts, j);

			if (strcmp(kc_json_str(m, "name"), kc_json_str(v, "name")) == 0)
				ck_assert(kc_json_bool(m, false, "readOnly"));
		}
	}
}

START_TEST(test_envelope_fuzz)
{
	struct json_object *plain = yaml(PROFILE);
	struct json_object *rdma = yaml(PROFILE "  security: {allowedCapabilities: [IPC_LOCK], "
	    "allowedHostPaths: [{pathPrefix: /dev/infiniband, readOnly: true}]}\n");
	const struct kc_psa_policy baseline = { .level = KC_PSA_BASELINE };
	unsigned valid[2] = { 0, 0 };
	struct ty_config cfg;

	config_defaults(&cfg);
	for (int i = 0; i < 3000; i++) {
		char text[4096], why[2048];
		struct kc_sbuf b, w;
		struct json_object *run, *pod = NULL;
		struct ty_spec *s = NULL;
		struct ty_problems probs;

		kc_sbuf_init(&b, text, sizeof(text));
		fuzz_run(&b);
		ck_assert(!kc_sbuf_truncated(&b));
		run = yaml(text);
		for (int k = 0; k < 2; k++) {
			if (model_validate(run, k == 0 ? plain : rdma, &cfg, &s, &probs) != 0)
				continue;
			valid[k]++;
			ck_assert_int_eq(model_pod(s, &cfg, 1, TY_PODGROUP_NONE, 0, &pod), 0);
			if (k == 0) {
				kc_sbuf_init(&w, why, sizeof(why));
				ck_assert_msg(kc_psa_check(kc_json_get(pod, "metadata"),
				    kc_json_get(pod, "spec"), &baseline, &w) == 0,
				    "%s\nbaseline refuses: %s", text, why);
			}
			assert_rdma_pod(pod);
			json_object_put(pod);
			s = model_spec_free(s);
		}
		json_object_put(run);
	}
	/* The fuzzer reaches both sides. */
	ck_assert_uint_gt(valid[0], 10);
	ck_assert_uint_gt(valid[1], valid[0]);
	config_release(&cfg);
	json_object_put(plain);
	json_object_put(rdma);
}
END_TEST

START_TEST(test_control)
{
	struct json_object *run = yaml(RUN_HDR "spec: {nodes: 1, session: 4, suspend: true, "
	    "activeDeadlineSeconds: 60, scheduleTimeoutSeconds: 30, restartPolicy: "
	    "OnFailure, maxRestarts: 0}\n");
	struct json_object *bad = yaml("metadata: {generation: 7}\nspec: {session: -3, "
	    "suspend: maybe, activeDeadlineSeconds: x, restartPolicy: Sometimes, "
	    "maxRestarts: -1}\n");
	struct ty_control c;

	model_control(run, &c);
	ck_assert_int_eq(c.session, 4);
	ck_assert(c.suspend);
	ck_assert_int_eq(c.active_deadline_s, 60);
	ck_assert_int_eq(c.schedule_timeout_s, 30);
	ck_assert_int_eq(c.restart_policy, TY_RESTART_ON_FAILURE);
	ck_assert_int_eq(c.max_restarts, 0);
	model_control(bad, &c);
	ck_assert_int_eq(c.generation, 7);
	ck_assert_int_eq(c.session, 1);
	ck_assert(!c.suspend);
	ck_assert_int_eq(c.active_deadline_s, 0);
	ck_assert_int_eq(c.restart_policy, TY_RESTART_NEVER);
	ck_assert_int_eq(c.max_restarts, 3);
	model_control(NULL, &c);
	ck_assert_int_eq(c.session, 1);
	json_object_put(run);
	json_object_put(bad);
}
END_TEST

static const char *
env_value(const struct json_object *pod, const char *name)
{
	struct json_object *env = kc_json_get(json_object_array_get_idx(kc_json_get(pod,
	    "spec", "containers"), 0), "env");

	for (size_t i = 0; i < json_object_array_length(env); i++)
		if (strcmp(kc_json_str(json_object_array_get_idx(env, i), "name"), name) == 0)
			return kc_json_str(json_object_array_get_idx(env, i), "value");
	return NULL;
}

/* 8 GPUs times 'n' nodes, formatted as a quantity. */
static const char *
gpus_total(int n)
{
	static char buf[KC_QUANTITY_STR_MAX];
	struct kc_quantity q = kc_quantity_from_int(8);

	ck_assert_int_eq(kc_quantity_mul(&q, n), 0);
	ck_assert_int_gt(kc_quantity_format(&q, buf, sizeof(buf)), 0);
	return buf;
}

START_TEST(test_hosts_bound)
{
	static const int sizes[] = { 1, 256, 257, 10000 };
	struct ty_config cfg;

	config_defaults(&cfg);
	for (size_t i = 0; i < KC_ARRAY_SIZE(sizes); i++) {
		char text[256];
		struct json_object *run, *pod;
		struct ty_spec *s;
		const char *hosts;

		snprintf(text, sizeof(text), RUN_HDR "spec: {nodes: %d, image: x, resources: "
		    "{limits: {nvidia.com/gpu: 8}}}\n", sizes[i]);
		run = yaml(text);
		s = valid_spec(run, NULL, &cfg);
		ck_assert_int_eq(model_pod(s, &cfg, 1, TY_PODGROUP_X_K8S, sizes[i] - 1, &pod), 0);
		hosts = env_value(pod, "TRAINYARD_HOSTS");
		if (sizes[i] <= TY_HOSTS_ENV_MAX_NODES) {
			ck_assert_ptr_nonnull(hosts);
			ck_assert(strncmp(hosts, "r1-0,", 5) == 0 || sizes[i] == 1);
			snprintf(text, sizeof(text), "r1-%d", sizes[i] - 1);
			ck_assert_str_eq(strrchr(hosts, ',') != NULL ?
			    strrchr(hosts, ',') + 1 : hosts, text);
		} else
			ck_assert_ptr_null(hosts);
		snprintf(text, sizeof(text), "%d", sizes[i]);
		ck_assert_str_eq(env_value(pod, "WORLD_SIZE"), text);
		ck_assert_str_eq(env_value(pod, "MASTER_ADDR"), "r1-0");
		ck_assert_str_eq(env_value(pod, "MASTER_PORT"), "29500");
		ck_assert_str_eq(env_value(pod, "GPUS_PER_NODE"), "8");
		json_object_put(pod);
		/* minResources sums over every node, exactly. */
		ck_assert_int_eq(model_podgroup(s, 1, TY_PODGROUP_X_K8S, &pod), 0);
		ck_assert_str_eq(kc_json_str(pod, "spec", "minResources", "nvidia.com/gpu"),
		    gpus_total(sizes[i]));
		ck_assert_int_eq(kc_json_int(pod, 0, "spec", "minMember"), sizes[i]);
		json_object_put(pod);
		model_spec_free(s);
		json_object_put(run);
	}
}
END_TEST

START_TEST(test_oom)
{
	struct json_object *run, *profile, *o = NULL;
	struct ty_config cfg;
	struct ty_spec *s = NULL;
	struct ty_problems probs;
	int r;

	load_case("gpu4", &run, &profile);
	config_with_peers(&cfg);
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = model_validate(run, profile, &cfg, &s, &probs);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(s);
	}
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = model_pod(s, &cfg, 1, TY_PODGROUP_X_K8S, 3, &o);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(o);
	}
	json_object_put(o);
	model_spec_free(s);
	config_release(&cfg);
	json_object_put(run);
	json_object_put(profile);
}
END_TEST

Suite *
ctl_model_suite(void)
{
	Suite *s = suite_create("ctl_model");
	TCase *tc = tcase_create("model");

	tcase_add_loop_test(tc, test_golden, 0, KC_ARRAY_SIZE(golden_cases));
	tcase_add_test(tc, test_merge_rules);
	tcase_add_loop_test(tc, test_invalid, 0, KC_ARRAY_SIZE(invalid_cases));
	tcase_add_test(tc, test_every_problem);
	tcase_add_test(tc, test_problems_bounded);
	tcase_add_test(tc, test_control);
	tcase_add_loop_test(tc, test_envelope, 0, KC_ARRAY_SIZE(envelope_cases));
	tcase_add_test(tc, test_envelope_pods);
	tcase_add_test(tc, test_envelope_fuzz);
	tcase_add_test(tc, test_hosts_bound);
	tcase_add_test(tc, test_oom);
	suite_add_tcase(s, tc);
	return s;
}

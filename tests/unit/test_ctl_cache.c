/*
 * test_ctl_cache.c: the controller's cached forms (controller/cache.c):
 * one packing for pods, children, Runs and profiles (16-bit offsets), a
 * Run's text back from its deflated form, and whether the deflate
 * dictionary still fits a Run as the controller writes it today (a
 * status wording change that the dictionary misses fails here), and the
 * trainyard.dev version the controller follows as the served ones change.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/deflate.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "testutil.h"
#include "../../controller/cache.h"
#include "../../controller/config.h"
#include "../../controller/model.h"
#include "../../controller/session.h"

#define T0		1800000000LL

static struct json_object *
yaml(const char *text)
{
	struct json_object *o = NULL;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_yaml_parse_one(text, strlen(text), NULL, &o, &st) == 0,
	    "bad test YAML: %s\n%s", st.message, text);
	return o;
}

static struct ty_pod *
pod(int64_t session, int idx, const char *status)
{
	char text[1024];
	struct json_object *o;
	struct ty_pod *p = NULL;

	snprintf(text, sizeof(text), "metadata: {name: llama-%d, uid: "
	    "0f4c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a%02d, labels: {trainyard.dev/session: "
	    "\"%lld\", trainyard.dev/node-index: \"%d\", trainyard.dev/run: llama}, "
	    "ownerReferences: [{kind: Run, name: llama, controller: true, uid: "
	    "6a1f0c2e-9b8d-4e7f-a1b2-c3d4e5f60718}]}\nspec: {nodeName: gpu-node-%d}\n"
	    "status: %s\n", idx, idx, (long long)session, idx, idx, status);
	o = yaml(text);
	ck_assert_int_eq(cache_pod_from_json(o, &p), 0);
	json_object_put(o);
	return p;
}

#define RUNNING		"{phase: Running, startTime: \"2027-01-15T08:00:05Z\", conditions: " \
			"[{type: Ready, status: \"True\"}, {type: PodScheduled, status: \"True\"}]}"
#define OOM		"{phase: Failed, containerStatuses: [{name: main, state: " \
			"{terminated: {exitCode: 137, reason: OOMKilled, message: " \
			"\"CUDA out of memory. Tried to allocate 2.00 GiB\"}}}]}"

/* One reconcile of the rules: the decided status becomes the Run's. */
static void
step(struct json_object *run, struct ty_session_in *in, const struct ty_pod **pods,
    size_t npods, int64_t s)
{
	struct ty_decision d = { 0 };

	in->pods = pods;
	in->npods = npods;
	in->now_ms = (uint64_t)(T0 + s) * 1000;
	ck_assert_int_eq(session_decide(in, &d), 0);
	ck_assert_int_eq(kc_json_put(run, "status", kc_json_copy(d.status)), 0);
	session_decision_release(&d);
}

/*
 * A Run as the controller leaves it today: session 1 failed (a node ran
 * out of memory), restarted automatically, session 2 running, every
 * condition, the history and failedNodes in the controller's own words.
 */
static struct json_object *
current_run(void)
{
	struct json_object *run = yaml("apiVersion: trainyard.dev/v1alpha1\nkind: Run\n"
	    "metadata: {name: llama, namespace: team-a, uid: "
	    "6a1f0c2e-9b8d-4e7f-a1b2-c3d4e5f60718, generation: 1, resourceVersion: "
	    "\"4711\", creationTimestamp: \"2027-01-15T08:00:00Z\", labels: {app: llama}}\n"
	    "spec: {nodes: 8, image: \"registry.example/llama-train:1.2\", command: "
	    "[torchrun], args: [\"--nnodes=$(NNODES)\", \"--node-rank=$(NODE_RANK)\", "
	    "train.py], restartPolicy: OnFailure, maxRestarts: 3, "
	    "resources: {limits: {nvidia.com/gpu: 8}}, "
	    "ports: [{name: master, containerPort: 29500}]}\n");
	struct ty_config cfg;
	struct ty_control ctl;
	struct ty_spec *spec = NULL;
	struct ty_problems probs = { 0 };
	struct ty_session_in in;
	const struct ty_pod *pods[8];
	struct ty_pod *made[16] = { NULL };
	size_t nmade = 0;

	config_defaults(&cfg);
	model_control(run, &ctl);
	ck_assert_int_eq(model_validate(run, NULL, &cfg, &spec, &probs), 0);
	in = (struct ty_session_in){
		.run = run, .ctl = &ctl, .spec = spec, .cfg = &cfg,
		.api = TY_PODGROUP_X_K8S,
		.podgroup = { .session = -1 }, .service = { .session = -1 },
		.netpol = { .session = -1 },
	};
	step(run, &in, NULL, 0, 0);			/* session 1 starts */
	in.podgroup = in.service = in.netpol = (struct ty_child){ .exists = true,
	    .session = 1 };
	for (int i = 0; i < 8; i++)
		pods[i] = made[nmade++] = pod(1, i, i == 3 ? OOM : RUNNING);
	step(run, &in, pods, 8, 600);			/* node 3 fails */
	in.podgroup = in.service = in.netpol = (struct ty_child){ .session = -1 };
	step(run, &in, NULL, 0, 610);			/* cleaned up, restarted */
	ck_assert_int_eq(kc_json_int(run, -1, "status", "session"), 2);
	in.podgroup = in.service = in.netpol = (struct ty_child){ .exists = true,
	    .session = 2 };
	for (int i = 0; i < 8; i++)
		pods[i] = made[nmade++] = pod(2, i, RUNNING);
	step(run, &in, pods, 8, 700);			/* all running */
	ck_assert_str_eq(kc_json_str(run, "status", "phase"), "Running");
	ck_assert_int_eq(kc_json_int(run, -1, "status", "session"), 2);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(run, "status",
	    "history"), 0), "reason"), "PodFailed");
	for (size_t i = 0; i < nmade; i++)
		cache_pod_free(made[i]);
	model_spec_free(spec);
	config_release(&cfg);
	return run;
}

/* A copy with every object's keys sorted, as Go encodes unstructured objects. */
static struct json_object *
sorted(const struct json_object *o)
{
	struct json_object *v = (struct json_object *)(uintptr_t)o, *copy;
	const char *keys[64];
	size_t n = 0;

	switch (json_object_get_type(v)) {
	case json_type_object:
		json_object_object_foreach(v, key, val) {
			(void)val;
			ck_assert_uint_lt(n, KC_ARRAY_SIZE(keys));
			keys[n++] = key;
		}
		for (size_t i = 1; i < n; i++)
			for (size_t k = i; k > 0 && strcmp(keys[k - 1], keys[k]) > 0; k--) {
				const char *t = keys[k];

				keys[k] = keys[k - 1];
				keys[k - 1] = t;
			}
		copy = json_object_new_object();
		for (size_t i = 0; i < n; i++)
			ck_assert_int_eq(json_object_object_add(copy, keys[i],
			    sorted(kc_json_get(v, keys[i]))), 0);
		return copy;
	case json_type_array:
		copy = json_object_new_array();
		for (size_t i = 0; i < json_object_array_length(v); i++)
			ck_assert_int_eq(json_object_array_add(copy,
			    sorted(json_object_array_get_idx(v, i))), 0);
		return copy;
	case json_type_null:
	case json_type_boolean:
	case json_type_double:
	case json_type_int:
	case json_type_string:
	default:
		return json_object_get(v);
	}
}

START_TEST(test_dictionary_fits_a_current_run)
{
	struct json_object *built = current_run();
	/* As a real API server sends it: keys sorted. */
	struct json_object *run = sorted(built);
	struct ty_obj_item *it = NULL;
	struct json_object *back = NULL;
	struct kc_status st = { 0 };
	void *plain = NULL;
	size_t plen = 0;
	char *text;
	size_t len;

	ck_assert_int_eq(cache_obj_from_json(run, &it, &st), 0);
	text = kc_json_dump(run, &len);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(kc_deflate(text, len, NULL, 0, &plain, &plen), 0);
	fprintf(stderr, "# a current Run: %u bytes of text, %u deflated with the dictionary "
	    "(%u%%), %zu without\n", it->len, it->zlen, it->zlen * 100 / it->len, plen);
	/*
	 * Measured: 1982 bytes of text, 310 deflated with the dictionary
	 * (15.6%), 742 without (37%). The same Run with its keys in another
	 * order than the dictionary's, which is what a dictionary whose
	 * wording went stale looks like to deflate, takes 396 (20%, 53% of
	 * the plain deflate) and fails both bounds.
	 */
	ck_assert_uint_le((uint64_t)it->zlen * 100, (uint64_t)it->len * 17);
	ck_assert_uint_le((uint64_t)it->zlen * 100, (uint64_t)plen * 45);
	/* And back. */
	ck_assert_int_eq(cache_obj_json(it, &back), 0);
	ck_assert(kc_json_equal(back, run));
	ck_assert_str_eq(ty_obj_phase(it), "Running");
	ck_assert_str_eq(ty_obj_profile(it), "");
	json_object_put(back);
	kc_free(plain);
	kc_free(text);
	kc_free(it);
	json_object_put(run);
	json_object_put(built);
}
END_TEST

START_TEST(test_obj_item_trimmed)
{
	struct json_object *p = yaml("apiVersion: trainyard.dev/v1alpha1\nkind: Run\n"
	    "metadata: {name: r, namespace: ns, managedFields: [{manager: kubectl}], "
	    "annotations: {kubectl.kubernetes.io/last-applied-configuration: \"{...}\", "
	    "keep: me}}\nspec: {profile: h100x8}\nstatus: {phase: Pending}\n");
	struct ty_obj_item *it = NULL;
	struct json_object *back = NULL;
	struct kc_status st = { 0 };

	ck_assert_int_eq(cache_obj_from_json(p, &it, &st), 0);
	ck_assert_str_eq(ty_obj_profile(it), "h100x8");
	ck_assert_str_eq(ty_obj_phase(it), "Pending");
	/* The deflated bytes come after the strings, at a small offset. */
	ck_assert_uint_gt(it->z, it->phase);
	ck_assert_int_eq(cache_obj_json(it, &back), 0);
	ck_assert_ptr_null(kc_json_get(back, "metadata", "managedFields"));
	ck_assert_str_eq(kc_json_str(back, "metadata", "annotations", "keep"), "me");
	ck_assert_ptr_null(kc_json_str(back, "metadata", "annotations",
	    "kubectl.kubernetes.io/last-applied-configuration"));
	json_object_put(back);
	kc_free(it);
	json_object_put(p);
}
END_TEST

START_TEST(test_child_item)
{
	struct json_object *o = yaml("metadata: {name: r, uid: "
	    "0f4c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b, labels: {trainyard.dev/run: r, "
	    "trainyard.dev/session: \"3\"}, deletionTimestamp: \"2027-01-15T08:00:00Z\", "
	    "ownerReferences: [{kind: Run, name: r, controller: true, uid: not-a-uuid}]}\n");
	struct ty_child_item *ci = NULL;
	char buf[TY_UID_TEXT_MAX];

	ck_assert_int_eq(cache_child_from_json(o, &ci), 0);
	ck_assert_int_eq(ci->session, 3);
	ck_assert(ci->deleting);
	ck_assert_str_eq(ty_cache_str(ci->strs, ci->run), "r");
	ck_assert_str_eq(cache_uid_text(ty_cache_str(ci->strs, ci->uid), buf, sizeof(buf)),
	    "0f4c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b");
	ck_assert(cache_uid_eq(ty_cache_str(ci->strs, ci->owner_uid), "not-a-uuid"));
	ck_assert(!cache_uid_eq(ty_cache_str(ci->strs, ci->owner_uid), "other"));
	/* A UUID in 17 bytes, the other uid as text, the label: nothing more. */
	ck_assert_uint_le(sizeof(*ci), 12);
	kc_free(ci);
	json_object_put(o);

	o = yaml("metadata: {name: x}\n");
	ck_assert_int_eq(cache_child_from_json(o, &ci), 0);
	ck_assert_int_eq(ci->session, -1);
	ck_assert_uint_eq(ci->uid, 0);
	ck_assert_uint_eq(ci->owner_uid, 0);
	ck_assert_str_eq(ty_cache_str(ci->strs, ci->run), "");
	kc_free(ci);
	json_object_put(o);
}
END_TEST

START_TEST(test_owned_item)
{
	/* The same RoleBinding as written and as a server prints it back. */
	struct json_object *want = yaml("apiVersion: rbac.authorization.k8s.io/v1\n"
	    "kind: RoleBinding\n"
	    "metadata: {name: trainyard-viewer-bob, namespace: llm, labels: "
	    "{app.kubernetes.io/managed-by: trainyard, trainyard.dev/project: llm, "
	    "trainyard.dev/member: bob}}\n"
	    "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, "
	    "name: trainyard-project-viewer}\n"
	    "subjects: [{kind: User, name: bob, apiGroup: rbac.authorization.k8s.io}]\n");
	struct json_object *seen = yaml("kind: RoleBinding\n"
	    "subjects: [{apiGroup: rbac.authorization.k8s.io, name: bob, kind: User}]\n"
	    "roleRef: {name: trainyard-project-viewer, kind: ClusterRole, "
	    "apiGroup: rbac.authorization.k8s.io}\n"
	    "metadata: {resourceVersion: \"42\", uid: u, name: trainyard-viewer-bob, "
	    "namespace: llm, labels: {trainyard.dev/member: bob, "
	    "trainyard.dev/project: llm, app.kubernetes.io/managed-by: trainyard, "
	    "other: x}, annotations: {a: b}}\n");
	struct json_object *edited = yaml("kind: RoleBinding\n"
	    "subjects: [{apiGroup: rbac.authorization.k8s.io, name: bob, kind: User}, "
	    "{apiGroup: rbac.authorization.k8s.io, name: mallory, kind: User}]\n"
	    "roleRef: {name: trainyard-project-viewer, kind: ClusterRole, "
	    "apiGroup: rbac.authorization.k8s.io}\n"
	    "metadata: {name: trainyard-viewer-bob, namespace: llm, labels: "
	    "{trainyard.dev/member: bob, trainyard.dev/project: llm, "
	    "app.kubernetes.io/managed-by: trainyard}}\n");
	struct json_object *unlabelled = yaml("kind: RoleBinding\n"
	    "subjects: [{apiGroup: rbac.authorization.k8s.io, name: bob, kind: User}]\n"
	    "roleRef: {name: trainyard-project-viewer, kind: ClusterRole, "
	    "apiGroup: rbac.authorization.k8s.io}\n"
	    "metadata: {name: trainyard-viewer-bob, deletionTimestamp: "
	    "\"2027-01-15T08:00:00Z\"}\n");
	struct ty_owned_item *it = NULL;

	/* Key order, other labels and metadata do not count; subjects and labels do. */
	ck_assert_uint_eq(cache_owned_hash(want), cache_owned_hash(seen));
	ck_assert_uint_ne(cache_owned_hash(want), cache_owned_hash(edited));
	ck_assert_uint_ne(cache_owned_hash(want), cache_owned_hash(unlabelled));
	ck_assert_int_eq(cache_owned_from_json(seen, &it), 0);
	ck_assert_uint_eq(it->hash, cache_owned_hash(want));
	ck_assert(!it->deleting);
	ck_assert_str_eq(ty_owned_project(it), "llm");
	ck_assert_str_eq(ty_owned_member(it), "bob");
	/* A hash, a flag and two labels: nothing of the object is kept. */
	ck_assert_uint_le(sizeof(*it), 16);
	kc_free(it);
	/* A namespace: only its Pod Security labels count. */
	{
		struct json_object *ns = yaml("metadata: {name: llm, labels: {a: b, "
		    "pod-security.kubernetes.io/enforce: baseline, "
		    "pod-security.kubernetes.io/enforce-version: latest}}\n"
		    "spec: {finalizers: [kubernetes]}\n");
		struct json_object *ns2 = yaml("metadata: {name: llm, labels: {"
		    "pod-security.kubernetes.io/enforce-version: latest, "
		    "pod-security.kubernetes.io/enforce: baseline}}\n");
		struct json_object *ns3 = yaml("metadata: {name: llm, labels: {"
		    "pod-security.kubernetes.io/enforce: privileged, "
		    "pod-security.kubernetes.io/enforce-version: latest}}\n");
		struct json_object *ns4 = yaml("metadata: {name: llm, labels: {"
		    "pod-security.kubernetes.io/enforce: baseline}}\n");

		ck_assert_uint_eq(cache_psa_hash(ns), cache_psa_hash(ns2));
		ck_assert_uint_ne(cache_psa_hash(ns), cache_psa_hash(ns3));
		ck_assert_uint_ne(cache_psa_hash(ns), cache_psa_hash(ns4));
		json_object_put(ns);
		json_object_put(ns2);
		json_object_put(ns3);
		json_object_put(ns4);
	}
	ck_assert_int_eq(cache_owned_from_json(unlabelled, &it), 0);
	ck_assert(it->deleting);
	ck_assert_str_eq(ty_owned_project(it), "");
	kc_free(it);
	json_object_put(want);
	json_object_put(seen);
	json_object_put(edited);
	json_object_put(unlabelled);
}
END_TEST

START_TEST(test_pod_packing)
{
	struct ty_pod *p = pod(2, 5, RUNNING);
	char buf[TY_UID_TEXT_MAX];

	ck_assert_str_eq(ty_pod_str(p, TY_POD_NAME), "llama-5");
	ck_assert_str_eq(ty_pod_str(p, TY_POD_NODE), "gpu-node-5");
	ck_assert_str_eq(ty_pod_str(p, TY_POD_RUN), "llama");
	ck_assert_ptr_null(ty_pod_str(p, TY_POD_MESSAGE));
	ck_assert_str_eq(ty_pod_uid(p, TY_POD_UID, buf, sizeof(buf)),
	    "0f4c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a05");
	ck_assert(ty_pod_uid_is(p, TY_POD_OWNER_UID, "6a1f0c2e-9b8d-4e7f-a1b2-c3d4e5f60718"));
	ck_assert_int_eq(p->session, 2);
	ck_assert_int_eq(p->index, 5);
	cache_pod_free(p);
}
END_TEST

/*
 * The version followed as the CRDs go through an upgrade and back: up
 * when v1beta1 is served, down when only v1alpha1 is again, unchanged
 * while the group is not served (NULL: discovery answered 404) or lists
 * only versions this controller does not know.
 */
START_TEST(test_version_follow)
{
	static const char *const alpha = "{name: trainyard.dev, versions: "
	    "[{groupVersion: trainyard.dev/v1alpha1, version: v1alpha1}]}";
	static const char *const both = "{name: trainyard.dev, versions: "
	    "[{version: v1beta1}, {version: v1alpha1}], preferredVersion: "
	    "{version: v1beta1}}";
	static const char *const both_alpha_first = "{name: trainyard.dev, versions: "
	    "[{version: v1alpha1}, {version: v1beta1}]}";
	static const char *const beta = "{name: trainyard.dev, versions: [{version: v1beta1}]}";
	static const char *const v2 = "{name: trainyard.dev, versions: [{version: v2}]}";
	static const char *const none = "{name: trainyard.dev, versions: []}";
	static const char *const other = "{name: apps, versions: [{version: v1beta1}]}";
	static const struct {
		const char	*current, *group, *want;
	} cases[] = {
		{ NULL, alpha, "v1alpha1" },
		{ NULL, both, "v1beta1" },
		{ NULL, NULL, NULL },
		{ NULL, v2, NULL },
		{ "v1alpha1", alpha, "v1alpha1" },
		{ "v1alpha1", both, "v1beta1" },		/* served: move up */
		{ "v1alpha1", both_alpha_first, "v1beta1" },	/* order does not matter */
		{ "v1alpha1", beta, "v1beta1" },
		{ "v1beta1", both, "v1beta1" },
		{ "v1beta1", beta, "v1beta1" },			/* v1alpha1 unserved */
		{ "v1beta1", alpha, "v1alpha1" },		/* CRDs rolled back */
		{ "v1beta1", NULL, "v1beta1" },			/* group gone: keep */
		{ "v1alpha1", NULL, "v1alpha1" },
		{ "v1beta1", none, "v1beta1" },
		{ "v1beta1", v2, "v1beta1" },
		{ "v1alpha1", other, "v1alpha1" },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct json_object *g = cases[i].group != NULL ? yaml(cases[i].group) : NULL;
		const char *v = cache_version_follow(cases[i].current, g);

		if (cases[i].want == NULL)
			ck_assert_msg(v == NULL, "case %zu: %s", i, v);
		else
			ck_assert_msg(v != NULL && strcmp(v, cases[i].want) == 0,
			    "case %zu: %s, expected %s", i, v != NULL ? v : "NULL",
			    cases[i].want);
		json_object_put(g);
	}
}
END_TEST

Suite *
ctl_cache_suite(void)
{
	Suite *s = suite_create("ctl_cache");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_dictionary_fits_a_current_run);
	tcase_add_test(tc, test_obj_item_trimmed);
	tcase_add_test(tc, test_child_item);
	tcase_add_test(tc, test_owned_item);
	tcase_add_test(tc, test_pod_packing);
	tcase_add_test(tc, test_version_follow);
	suite_add_tcase(s, tc);
	return s;
}

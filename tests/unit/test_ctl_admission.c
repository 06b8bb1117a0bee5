/*
 * test_ctl_admission.c: the AdmissionReview handler of the Projects'
 * webhooks: attribution patches, Run and ProjectMember refusals, and
 * malformed reviews.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/buf.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/patch.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "testutil.h"
#include "ctl_testutil.h"
#include "../../controller/admission.h"
#include "../../controller/config.h"

/* 2026-01-01T00:00:00Z */
#define NOW	((time_t)1767225600)

static const char PROJECT[] =
    "apiVersion: trainyard.dev/v1beta1\nkind: Project\n"
    "metadata: {name: llm, uid: u-1}\n"
    "spec:\n"
    "  namespaces: [{name: llm}, {name: llm-eval}]\n"
    "  quota: {maxGPUsPerRun: 16}\n"
    "  resourceProfiles: {allowed: [gpu-2, gpu-8], default: gpu-8}\n"
    "  memberPolicy: {maxMembers: 2, maxInvitationTTL: 720h, maxGPUsPerMember: 32}\n";

static const char PROFILE[] =
    "apiVersion: trainyard.dev/v1beta1\nkind: ResourceProfile\n"
    "metadata: {name: gpu-8}\n"
    "spec: {resources: {cpu: '8', nvidia.com/gpu: 8}}\n";

/* Two members already: alice (2025-12-01) and a group (2025-12-02). */
static const char MEMBERS[] =
    "- kind: ProjectMember\n"
    "  metadata: {name: alice, namespace: llm, creationTimestamp: '2025-12-01T00:00:00Z'}\n"
    "  spec: {subject: {kind: User, name: alice}, role: researcher,\n"
    "    expiresAt: '2026-01-20T00:00:00Z'}\n"
    "- kind: ProjectMember\n"
    "  metadata: {name: leads, namespace: llm, creationTimestamp: '2025-12-02T00:00:00Z'}\n"
    "  spec: {subject: {kind: Group, name: leads}, role: admin,\n"
    "    expiresAt: '2026-01-20T00:00:00Z'}\n";

static struct json_object *
t_project(void *arg, const char *ns)
{
	(void)arg;
	if (strcmp(ns, "llm") == 0 || strcmp(ns, "llm-eval") == 0)
		return ctu_yaml(PROJECT);
	return NULL;
}

/* gpu-2's envelope allows what RDMA and host networking need. */
static const char PROFILE_RDMA[] =
    "apiVersion: trainyard.dev/v1beta1\nkind: ResourceProfile\n"
    "metadata: {name: gpu-2}\n"
    "spec: {resources: {cpu: '2', nvidia.com/gpu: 2}, security: {allowedCapabilities: "
    "[IPC_LOCK], allowHostNetwork: true}}\n";

static struct json_object *
t_profile(void *arg, const char *name)
{
	(void)arg;
	if (strcmp(name, "gpu-2") == 0)
		return ctu_yaml(PROFILE_RDMA);
	return strcmp(name, "gpu-8") == 0 ? ctu_yaml(PROFILE) : NULL;
}

static const char *members_text = MEMBERS;

static struct json_object *
t_members(void *arg, const char *ns)
{
	(void)arg;
	return strcmp(ns, "llm") == 0 ? ctu_yaml(members_text) : json_object_new_array();
}

static struct ty_config cfg;

static void
setup(void)
{
	config_defaults(&cfg);
	members_text = MEMBERS;
}

static void
teardown(void)
{
	config_release(&cfg);
}

/* The caches hold someone else's Service "web" and NetworkPolicy "api" in llm. */
static bool
t_name_taken(void *arg, const char *kind, const char *ns, const char *name)
{
	(void)arg;
	return strcmp(ns, "llm") == 0 && ((strcmp(kind, "service") == 0 &&
	    strcmp(name, "web") == 0) || (strcmp(kind, "networkpolicy") == 0 &&
	    strcmp(name, "api") == 0));
}

static const struct admission_ops ops = {
	.project_of = t_project, .profile = t_profile, .members = t_members,
	.name_taken = t_name_taken, .cfg = &cfg,
};

/*
 * A review (v1) of 'op' on the object in YAML 'obj' (and 'old'), in
 * namespace 'ns', by user 'user', through 'hook'; the answer's response.
 */
static struct json_object *
review(enum admission_hook hook, const char *kind, const char *op, const char *ns,
    const char *user, const char *obj, const char *old, struct admission_info *info)
{
	struct json_object *rv = json_object_new_object(), *req = json_object_new_object();
	struct json_object *k = json_object_new_object(), *ui = json_object_new_object();
	struct json_object *ans = NULL, *resp;
	struct kc_status st = { 0 };
	struct kc_buf out;
	char *text;
	size_t len;
	int code;

	ck_assert(kc_json_set_str(rv, "apiVersion", "admission.k8s.io/v1") == 0);
	ck_assert(kc_json_set_str(rv, "kind", "AdmissionReview") == 0);
	ck_assert(kc_json_put(rv, "request", req) == 0);
	ck_assert(kc_json_set_str(req, "uid", "uid-7") == 0);
	ck_assert(kc_json_set_str(req, "operation", op) == 0);
	ck_assert(kc_json_set_str(req, "namespace", ns) == 0);
	ck_assert(kc_json_put(req, "kind", k) == 0);
	ck_assert(kc_json_set_str(k, "kind", kind) == 0);
	ck_assert(kc_json_put(req, "userInfo", ui) == 0);
	ck_assert(kc_json_set_str(ui, "username", user) == 0);
	if (obj != NULL)
		ck_assert(kc_json_put(req, "object", ctu_yaml(obj)) == 0);
	if (old != NULL)
		ck_assert(kc_json_put(req, "oldObject", ctu_yaml(old)) == 0);
	text = kc_json_dump(rv, &len);
	ck_assert_ptr_nonnull(text);
	kc_buf_init(&out, ADMISSION_ANSWER_MAX);
	code = admission_handle(hook, text, len, &ops, NOW, &out, info);
	ck_assert_int_eq(code, 200);
	ck_assert_int_eq(kc_json_parse(out.data, out.len, &ans, &st), 0);
	ck_assert_str_eq(kc_json_str(ans, "apiVersion"), "admission.k8s.io/v1");
	ck_assert_str_eq(kc_json_str(ans, "kind"), "AdmissionReview");
	resp = json_object_get(kc_json_get(ans, "response"));
	ck_assert_str_eq(kc_json_str(resp, "uid"), "uid-7");
	json_object_put(ans);
	kc_buf_free(&out);
	kc_free(text);
	json_object_put(rv);
	return resp;
}

/* The object after the response's JSONPatch (a copy when there is none). */
static struct json_object *
patched(const struct json_object *resp, const char *obj)
{
	struct json_object *doc = ctu_yaml(obj), *patch = NULL, *ret = NULL;
	const char *b64 = kc_json_str(resp, "patch");
	struct kc_status st = { 0 };
	char *text;
	size_t len;

	if (b64 == NULL)
		return doc;
	ck_assert_str_eq(kc_json_str(resp, "patchType"), "JSONPatch");
	ck_assert_int_eq(kc_base64_decode(b64, strlen(b64), 0, &text, &len, NULL, 0), 0);
	ck_assert_int_eq(kc_json_parse(text, len, &patch, &st), 0);
	ck_assert_msg(kc_json_patch_apply(doc, patch, &ret, &st) == 0, "%s", st.message);
	kc_free(text);
	json_object_put(patch);
	json_object_put(doc);
	return ret;
}

static void
want_denied(struct json_object *resp, const char *msg)
{
	ck_assert(!kc_json_bool(resp, true, "allowed"));
	ck_assert_int_eq(kc_json_int(resp, 0, "status", "code"), 403);
	ck_assert_str_eq(kc_json_str(resp, "status", "reason"), "Forbidden");
	ck_assert_msg(strstr(kc_json_str(resp, "status", "message"), msg) != NULL,
	    "want \"%s\" in \"%s\"", msg, kc_json_str(resp, "status", "message"));
	json_object_put(resp);
}

static void
want_allowed(struct json_object *resp)
{
	ck_assert_msg(kc_json_bool(resp, false, "allowed"), "denied: %s",
	    kc_json_str(resp, "status", "message"));
	ck_assert_ptr_null(kc_json_get(resp, "patch"));
	json_object_put(resp);
}

#define RUN(meta, spec)	"apiVersion: trainyard.dev/v1beta1\nkind: Run\n"	\
	"metadata: {name: r, namespace: llm" meta "}\nspec: " spec "\n"

START_TEST(mutate_run_attribution)
{
	struct admission_info info;
	const char *plain = RUN("", "{nodes: 1, container: {image: x}}");
	const char *forged = RUN(", annotations: {trainyard.dev/submitted-by: mallory, a: b}",
	    "{nodes: 1}");
	const char *right = RUN(", annotations: {trainyard.dev/submitted-by: alice}", "{nodes: 1}");
	struct json_object *resp, *o;

	resp = review(ADMISSION_MUTATE, "Run", "CREATE", "llm", "alice", plain, NULL, &info);
	ck_assert(kc_json_bool(resp, false, "allowed"));
	ck_assert_str_eq(info.result, "patched");
	ck_assert_str_eq(info.kind, "Run");
	o = patched(resp, plain);
	ck_assert_str_eq(kc_json_str(o, "metadata", "annotations", TY_ANN_SUBMITTED_BY), "alice");
	json_object_put(o);
	json_object_put(resp);

	/* A value the client set is overwritten; other annotations stay. */
	resp = review(ADMISSION_MUTATE, "Run", "CREATE", "llm", "alice", forged, NULL, &info);
	o = patched(resp, forged);
	ck_assert_str_eq(kc_json_str(o, "metadata", "annotations", TY_ANN_SUBMITTED_BY), "alice");
	ck_assert_str_eq(kc_json_str(o, "metadata", "annotations", "a"), "b");
	json_object_put(o);
	json_object_put(resp);

	/* Already right: no patch at all. */
	resp = review(ADMISSION_MUTATE, "Run", "CREATE", "llm", "alice", right, NULL, &info);
	ck_assert_str_eq(info.result, "allowed");
	want_allowed(resp);

	/* An update keeps the creator, whoever updates and whatever they send. */
	resp = review(ADMISSION_MUTATE, "Run", "UPDATE", "llm", "bob", forged, right, &info);
	o = patched(resp, forged);
	ck_assert_str_eq(kc_json_str(o, "metadata", "annotations", TY_ANN_SUBMITTED_BY), "alice");
	json_object_put(o);
	json_object_put(resp);
	resp = review(ADMISSION_MUTATE, "Run", "UPDATE", "llm", "bob", plain, right, &info);
	o = patched(resp, plain);
	ck_assert_str_eq(kc_json_str(o, "metadata", "annotations", TY_ANN_SUBMITTED_BY), "alice");
	json_object_put(o);
	json_object_put(resp);
	/* A Run from before the webhook: nobody can claim it later. */
	resp = review(ADMISSION_MUTATE, "Run", "UPDATE", "llm", "bob", forged, plain, &info);
	o = patched(resp, forged);
	ck_assert_ptr_null(kc_json_get(o, "metadata", "annotations", TY_ANN_SUBMITTED_BY));
	ck_assert_str_eq(kc_json_str(o, "metadata", "annotations", "a"), "b");
	json_object_put(o);
	json_object_put(resp);
}
END_TEST

START_TEST(mutate_member_attribution)
{
	const char *m = "kind: ProjectMember\nmetadata: {name: x, namespace: llm}\n"
	    "spec: {subject: {kind: User, name: zed}, role: viewer}\n";
	struct json_object *resp, *o;

	resp = review(ADMISSION_MUTATE, "ProjectMember", "CREATE", "llm", "ann", m, NULL, NULL);
	o = patched(resp, m);
	ck_assert_str_eq(kc_json_str(o, "metadata", "annotations", TY_ANN_INVITED_BY), "ann");
	ck_assert_ptr_null(kc_json_get(o, "metadata", "annotations", TY_ANN_SUBMITTED_BY));
	json_object_put(o);
	json_object_put(resp);
}
END_TEST

START_TEST(validate_runs)
{
	struct admission_info info;

	/* The default profile (gpu-8, 8 GPUs a node): 2 nodes fit in 16. */
	want_allowed(review(ADMISSION_VALIDATE, "Run", "CREATE", "llm", "a",
	    RUN("", "{nodes: 2, container: {image: x}}"), NULL, &info));
	ck_assert_str_eq(info.result, "allowed");
	want_denied(review(ADMISSION_VALIDATE, "Run", "CREATE", "llm-eval", "a",
	    RUN("", "{nodes: 3, container: {image: x}}"), NULL, &info),
	    "spec.nodes: the Run asks for 24 GPUs (3 nodes of 8); project llm allows at most "
	    "16 per Run");
	ck_assert_str_eq(info.result, "denied");
	ck_assert_str_eq(info.message, "spec.nodes: the Run asks for 24 GPUs (3 nodes of 8); "
	    "project llm allows at most 16 per Run");
	want_denied(review(ADMISSION_VALIDATE, "Run", "UPDATE", "llm", "a",
	    RUN("", "{nodes: 1, profile: gpu-16, container: {image: x}}"), NULL, NULL),
	    "spec.profile: ResourceProfile \"gpu-16\" is not allowed in project llm (allowed: "
	    "gpu-2, gpu-8)");
	/* Outside any project: not ours to judge. */
	want_allowed(review(ADMISSION_VALIDATE, "Run", "CREATE", "elsewhere", "a",
	    RUN("", "{nodes: 99, profile: gpu-16, container: {image: x}}"), NULL, NULL));
	/* Deletes and other kinds pass untouched. */
	want_allowed(review(ADMISSION_VALIDATE, "Run", "DELETE", "llm", "a", NULL, NULL, NULL));
	want_allowed(review(ADMISSION_VALIDATE, "Pod", "CREATE", "llm", "a",
	    "kind: Pod\nmetadata: {name: p}\n", NULL, NULL));
	/* An invalid Run is the controller's to explain. */
	want_allowed(review(ADMISSION_VALIDATE, "Run", "CREATE", "llm", "a",
	    RUN("", "{nodes: -4}"), NULL, NULL));
}
END_TEST

#define NAMED(name)	"apiVersion: trainyard.dev/v1beta1\nkind: Run\n"		\
	"metadata: {name: " name ", namespace: llm}\nspec: {nodes: 1, container: {image: x}}\n"

/* A new Run whose Service or NetworkPolicy name is taken is refused at once. */
START_TEST(validate_run_names)
{
	struct admission_info info;

	want_denied(review(ADMISSION_VALIDATE, "Run", "CREATE", "llm", "a", NAMED("web"),
	    NULL, &info), "metadata.name: service llm/web exists and is not owned by a Run "
	    "named web (a Run takes its name for its Service and NetworkPolicy)");
	ck_assert_str_eq(info.result, "denied");
	want_denied(review(ADMISSION_VALIDATE, "Run", "CREATE", "llm", "a", NAMED("api"),
	    NULL, NULL), "metadata.name: networkpolicy llm/api exists");
	want_allowed(review(ADMISSION_VALIDATE, "Run", "CREATE", "llm", "a", NAMED("free"),
	    NULL, NULL));
	/* Only a create: a Run that exists already is the controller's to judge. */
	want_allowed(review(ADMISSION_VALIDATE, "Run", "UPDATE", "llm", "a", NAMED("web"),
	    NAMED("web"), NULL));
	/* Another namespace's objects take no name here. */
	want_allowed(review(ADMISSION_VALIDATE, "Run", "CREATE", "llm-eval", "a",
	    "kind: Run\nmetadata: {name: web, namespace: llm-eval}\n"
	    "spec: {nodes: 1, container: {image: x}}\n", NULL, NULL));
}
END_TEST

/* What the pods would ask outside the profile's envelope: every violation. */
START_TEST(validate_run_envelope)
{
	struct admission_info info;

	want_denied(review(ADMISSION_VALIDATE, "Run", "CREATE", "llm", "a",
	    RUN("", "{nodes: 1, container: {image: x, securityContext: {privileged: true}}, "
	    "template: {spec: {volumes: [{name: root, hostPath: {path: /}}]}}}"), NULL, &info),
	    "spec: outside the security envelope of ResourceProfile \"gpu-8\": privileged "
	    "(container \"main\" must not set securityContext.privileged=true), hostPath "
	    "volumes (volume \"root\")");
	ck_assert_str_eq(info.result, "denied");
	want_denied(review(ADMISSION_VALIDATE, "Run", "UPDATE", "llm", "a",
	    RUN("", "{nodes: 1, container: {image: x, securityContext: {capabilities: {add: "
	    "[IPC_LOCK]}}}, template: {spec: {hostNetwork: true}}}"), NULL, NULL),
	    "non-default capabilities (container \"main\" must not include \"IPC_LOCK\" in "
	    "securityContext.capabilities.add), host namespaces (hostNetwork)");
	/* Inside the envelope, outside the namespace's Pod Security level: what to change. */
	want_denied(review(ADMISSION_VALIDATE, "Run", "CREATE", "llm", "a",
	    RUN("", "{nodes: 1, profile: gpu-2, container: {image: x, securityContext: "
	    "{capabilities: {add: [IPC_LOCK]}}}, template: {spec: {hostNetwork: true}}}"), NULL,
	    &info), "violates PodSecurity \"baseline:latest\": non-default capabilities "
	    "(container \"main\" must not include \"IPC_LOCK\" in "
	    "securityContext.capabilities.add), host namespaces (hostNetwork); namespace llm "
	    "enforces Pod "
	    "Security level baseline (Project llm, spec.podSecurity.enforce): take these out "
	    "of the Run, or run it in a namespace of a project the platform team sets to "
	    "enforce privileged, listing ResourceProfile \"gpu-2\" in "
	    "spec.resourceProfiles.allowed");
	/* Inside the envelope. */
	want_allowed(review(ADMISSION_VALIDATE, "Run", "CREATE", "llm", "a",
	    RUN("", "{nodes: 1, container: {image: x, securityContext: {runAsNonRoot: "
	    "true}}, template: {spec: {volumes: [{name: d, emptyDir: {}}]}}}"), NULL, NULL));
}
END_TEST

#define MEMBER(name, created, spec)						\
	"kind: ProjectMember\nmetadata: {name: " name ", namespace: llm, "	\
	"creationTimestamp: '" created "'}\nspec: " spec "\n"

START_TEST(validate_members)
{
	const char *ok = MEMBER("zed", "2026-01-01T00:00:00Z",
	    "{subject: {kind: User, name: zed}, role: viewer, expiresAt: '2026-01-15T00:00:00Z'}");

	members_text = "[]";
	want_allowed(review(ADMISSION_VALIDATE, "ProjectMember", "CREATE", "llm", "ann", ok,
	    NULL, NULL));
	members_text = MEMBERS;
	want_denied(review(ADMISSION_VALIDATE, "ProjectMember", "CREATE", "llm", "ann", ok,
	    NULL, NULL), "project llm admits at most 2 members");
	want_denied(review(ADMISSION_VALIDATE, "ProjectMember", "CREATE", "llm", "ann",
	    MEMBER("again", "2026-01-01T00:00:00Z", "{subject: {kind: User, name: alice}, "
	    "role: admin, expiresAt: '2026-01-15T00:00:00Z'}"), NULL, NULL),
	    "spec.subject: User alice is already a member of project llm (ProjectMember alice)");
	members_text = "[]";
	want_denied(review(ADMISSION_VALIDATE, "ProjectMember", "CREATE", "llm-eval", "ann",
	    "kind: ProjectMember\nmetadata: {name: e, namespace: llm-eval}\nspec: {subject: "
	    "{kind: User, name: e}, role: viewer, expiresAt: '2026-01-15T00:00:00Z'}\n", NULL,
	    NULL), "metadata.namespace: project llm keeps its members in namespace llm");
	want_denied(review(ADMISSION_VALIDATE, "ProjectMember", "CREATE", "nowhere", "ann", ok,
	    NULL, NULL), "metadata.namespace: namespace nowhere belongs to no Project");
	want_denied(review(ADMISSION_VALIDATE, "ProjectMember", "CREATE", "llm", "ann",
	    MEMBER("g", "2026-01-01T00:00:00Z", "{subject: {kind: Group, name: "
	    "'system:masters'}, role: admin, expiresAt: '2026-01-15T00:00:00Z'}"), NULL, NULL),
	    "spec.subject.name: \"system:masters\": system: users and groups cannot be granted");
	want_denied(review(ADMISSION_VALIDATE, "ProjectMember", "CREATE", "llm", "ann",
	    MEMBER("s", "2026-01-01T00:00:00Z", "{subject: {kind: ServiceAccount, name: ci, "
	    "namespace: llm}, role: viewer, expiresAt: '2026-01-15T00:00:00Z'}"), NULL, NULL),
	    "spec.subject: project llm does not admit members of kind ServiceAccount");
	want_denied(review(ADMISSION_VALIDATE, "ProjectMember", "CREATE", "llm", "ann",
	    MEMBER("t", "2026-01-01T00:00:00Z", "{subject: {kind: User, name: t}, "
	    "role: viewer}"), NULL, NULL),
	    "spec.expiresAt: required: project llm limits memberships to 720h (set it to "
	    "2026-01-31T00:00:00Z or earlier)");
	want_denied(review(ADMISSION_VALIDATE, "ProjectMember", "CREATE", "llm", "ann",
	    MEMBER("t", "2026-01-01T00:00:00Z", "{subject: {kind: User, name: t}, "
	    "role: viewer, expiresAt: '2026-03-01T00:00:00Z'}"), NULL, NULL),
	    "spec.expiresAt: must be at most 720h after the invitation (2026-01-31T00:00:00Z "
	    "or earlier)");
	want_denied(review(ADMISSION_VALIDATE, "ProjectMember", "CREATE", "llm", "ann",
	    MEMBER("t", "2026-01-01T00:00:00Z", "{subject: {kind: User, name: t}, "
	    "role: viewer, expiresAt: '2025-03-01T00:00:00Z'}"), NULL, NULL),
	    "spec.expiresAt: 2025-03-01T00:00:00Z is in the past");
	want_denied(review(ADMISSION_VALIDATE, "ProjectMember", "CREATE", "llm", "ann",
	    MEMBER("t", "2026-01-01T00:00:00Z", "{subject: {kind: User, name: t}, "
	    "role: viewer, maxGPUs: 64, expiresAt: '2026-01-15T00:00:00Z'}"), NULL, NULL),
	    "spec.maxGPUs: must be at most 32 (project llm's maxGPUsPerMember)");
	want_denied(review(ADMISSION_VALIDATE, "ProjectMember", "CREATE", "llm", "ann",
	    MEMBER("t", "2026-01-01T00:00:00Z", "{subject: {kind: User, name: t}, "
	    "role: owner, expiresAt: '2026-01-15T00:00:00Z'}"), NULL, NULL),
	    "spec.role: must be admin, researcher or viewer");
}
END_TEST

START_TEST(validate_member_updates)
{
	const char *alice = MEMBER("alice", "2025-12-01T00:00:00Z",
	    "{subject: {kind: User, name: alice}, role: admin, "
	    "expiresAt: '2025-12-20T00:00:00Z'}");
	const char *alice_now = MEMBER("alice", "2025-12-15T00:00:00Z",
	    "{subject: {kind: User, name: alice}, role: admin, "
	    "expiresAt: '2026-01-10T00:00:00Z'}");
	const char *bob = MEMBER("alice", "2025-12-15T00:00:00Z",
	    "{subject: {kind: User, name: bob}, role: admin, "
	    "expiresAt: '2026-01-10T00:00:00Z'}");

	/* A role change of an existing member, with the project full: fine. */
	want_allowed(review(ADMISSION_VALIDATE, "ProjectMember", "UPDATE", "llm", "ann",
	    alice_now, alice_now, NULL));
	want_denied(review(ADMISSION_VALIDATE, "ProjectMember", "UPDATE", "llm", "ann",
	    bob, alice_now, NULL), "spec.subject: field is immutable");
	/* The TTL counts from creation on an update. */
	want_denied(review(ADMISSION_VALIDATE, "ProjectMember", "UPDATE", "llm", "ann",
	    MEMBER("alice", "2025-12-15T00:00:00Z", "{subject: {kind: User, name: alice}, "
	    "role: admin, expiresAt: '2026-01-20T00:00:00Z'}"), alice_now, NULL),
	    "must be at most 720h after the invitation (2026-01-14T00:00:00Z or earlier)");
	(void)alice;
}
END_TEST

static int
raw(const char *body, struct kc_buf *out, struct admission_info *info)
{
	kc_buf_reset(out);
	return admission_handle(ADMISSION_VALIDATE, body, strlen(body), &ops, NOW, out, info);
}

START_TEST(malformed)
{
	struct admission_info info;
	struct kc_buf out;
	char *big;

	kc_buf_init(&out, ADMISSION_ANSWER_MAX);
	ck_assert_int_eq(raw("{", &out, &info), 400);
	ck_assert_str_eq(info.result, "invalid");
	ck_assert_int_eq(raw("[]", &out, &info), 400);
	ck_assert_int_eq(raw("{\"kind\":\"ConversionReview\",\"apiVersion\":"
	    "\"admission.k8s.io/v1\"}", &out, &info), 400);
	ck_assert(strstr(out.data, "kind must be AdmissionReview") != NULL);
	ck_assert_int_eq(raw("{\"kind\":\"AdmissionReview\",\"apiVersion\":"
	    "\"admission.k8s.io/v2\",\"request\":{}}", &out, &info), 400);
	ck_assert_int_eq(raw("{\"kind\":\"AdmissionReview\",\"apiVersion\":"
	    "\"admission.k8s.io/v1\"}", &out, &info), 400);
	ck_assert_int_eq(raw("{\"kind\":\"AdmissionReview\",\"apiVersion\":"
	    "\"admission.k8s.io/v1\",\"request\":{\"operation\":\"CREATE\"}}", &out, &info), 400);
	ck_assert(strstr(out.data, "request.uid: required") != NULL);
	/* v1beta1 is answered in v1beta1; a Run without metadata is refused. */
	ck_assert_int_eq(raw("{\"kind\":\"AdmissionReview\",\"apiVersion\":"
	    "\"admission.k8s.io/v1beta1\",\"request\":{\"uid\":\"u\",\"operation\":\"CREATE\","
	    "\"namespace\":\"llm\",\"kind\":{\"kind\":\"Run\"},\"object\":7}}", &out, &info), 200);
	ck_assert(strstr(out.data, "\"apiVersion\":\"admission.k8s.io/v1beta1\"") != NULL);
	ck_assert(strstr(out.data, "\"allowed\":false") != NULL);
	ck_assert_str_eq(info.message, "request.object: a Run with metadata is required");
	/* Past the size limit: 413, without parsing. */
	big = calloc(1, ADMISSION_BODY_MAX + 2);
	ck_assert_ptr_nonnull(big);
	memset(big, ' ', ADMISSION_BODY_MAX + 1);
	ck_assert_int_eq(raw(big, &out, &info), 413);
	free(big);
	kc_buf_free(&out);
}
END_TEST

Suite *
ctl_admission_suite(void)
{
	Suite *s = suite_create("ctl_admission");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, mutate_run_attribution);
	tcase_add_test(tc, mutate_member_attribution);
	tcase_add_test(tc, validate_runs);
	tcase_add_test(tc, validate_run_names);
	tcase_add_test(tc, validate_run_envelope);
	tcase_add_test(tc, validate_members);
	tcase_add_test(tc, validate_member_updates);
	tcase_add_test(tc, malformed);
	suite_add_tcase(s, tc);
	return s;
}

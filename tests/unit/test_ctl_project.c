/*
 * test_ctl_project.c: a Project read and checked, a ProjectMember's rules,
 * and the objects a Project keeps in its namespaces.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/err.h>
#include <kc/json.h>
#include <kc/str.h>
#include <kc/validation.h>
#include <kc/yaml.h>

#include "testutil.h"
#include "ctl_testutil.h"
#include "../../controller/project.h"

static const char PROJECT[] =
    "apiVersion: trainyard.dev/v1beta1\n"
    "kind: Project\n"
    "metadata: {name: llm, uid: u-1, generation: 3}\n"
    "spec:\n"
    "  displayName: LLM pretraining\n"
    "  owners: [{kind: Group, name: llm-leads}, {kind: User, name: ann}]\n"
    "  namespaces: [{name: llm}, {name: llm-eval}]\n"
    "  quota:\n"
    "    hard: {requests.nvidia.com/gpu: '128', pods: 512, requests.memory: 2048Gi}\n"
    "    maxGPUsPerRun: 64\n"
    "  resourceProfiles: {allowed: [gpu-2, gpu-8], default: gpu-8}\n"
    "  memberPolicy: {subjectKinds: [User, Group, ServiceAccount], maxMembers: 3, "
    "maxInvitationTTL: 720h, maxGPUsPerMember: 32}\n"
    "  isolation: {allowIngressFromNamespaces: [monitoring]}\n"
    "  suspend: Hold\n"
    "  deletionPolicy: {runs: WaitForCompletion, namespaces: Delete}\n";

static struct ty_project *
parse_ok(const char *text)
{
	struct json_object *o = ctu_yaml(text);
	struct ty_problems probs = { 0 };
	struct ty_project *p = NULL;
	char msg[2048];
	int r = project_parse(o, &p, &probs);

	model_problems_text(&probs, msg, sizeof(msg));
	ck_assert_msg(r == 0, "project_parse: %d: %s", r, msg);
	json_object_put(o);
	return p;
}

/* The problems of an invalid Project, as one line. */
static void
parse_bad(const char *text, char *msg, size_t size)
{
	struct json_object *o = ctu_yaml(text);
	struct ty_problems probs = { 0 };
	struct ty_project *p = NULL;

	ck_assert_int_eq(project_parse(o, &p, &probs), KC_EINVALID);
	ck_assert_ptr_null(p);
	ck_assert_uint_gt(probs.total, 0);
	model_problems_text(&probs, msg, size);
	json_object_put(o);
}

/* PROJECT with its spec line starting with 'from' replaced by 'to'. */
static char *
variant(const char *from, const char *to)
{
	const char *at = strstr(PROJECT, from), *eol;
	char *s;

	ck_assert_ptr_nonnull(at);
	eol = strchr(at, '\n');
	s = kc_asprintf("%.*s%s%s", (int)(at - PROJECT), PROJECT, to, eol);
	ck_assert_ptr_nonnull(s);
	return s;
}

static void
bad_variant(const char *from, const char *to, const char *want)
{
	char *text = variant(from, to), msg[2048];

	parse_bad(text, msg, sizeof(msg));
	ck_assert_msg(strstr(msg, want) != NULL, "%s -> %s: want \"%s\" in \"%s\"", from, to,
	    want, msg);
	free(text);
}

START_TEST(parse_full)
{
	struct ty_project *p = parse_ok(PROJECT);

	ck_assert_str_eq(p->name, "llm");
	ck_assert_str_eq(p->uid, "u-1");
	ck_assert_int_eq(p->generation, 3);
	ck_assert_uint_eq(p->nns, 2);
	ck_assert_str_eq(p->ns[0], "llm");
	ck_assert_str_eq(p->ns[1], "llm-eval");
	ck_assert_uint_eq(p->nowners, 2);
	ck_assert_int_eq(p->owners[0].kind, TY_SUBJECT_GROUP);
	ck_assert_str_eq(p->owners[1].name, "ann");
	/* Quantities come out canonical, integers as strings. */
	ck_assert_str_eq(kc_json_str(p->hard, "pods"), "512");
	ck_assert_str_eq(kc_json_str(p->hard, "requests.memory"), "2Ti");
	ck_assert_str_eq(kc_json_str(p->hard, "requests.nvidia.com/gpu"), "128");
	ck_assert_int_eq(p->max_gpus_per_run, 64);
	ck_assert_uint_eq(p->nprofiles, 2);
	ck_assert_str_eq(p->default_profile, "gpu-8");
	ck_assert(project_profile_allowed(p, "gpu-2"));
	ck_assert(!project_profile_allowed(p, "gpu-16"));
	ck_assert_uint_eq(p->subject_kinds, 7);
	ck_assert_int_eq(p->max_members, 3);
	ck_assert_uint_eq(p->max_ttl_ms, 720ULL * 3600 * 1000);
	ck_assert_int_eq(p->max_gpus_per_member, 32);
	ck_assert_uint_eq(p->ningress, 1);
	ck_assert_int_eq(p->suspend, TY_SUSPEND_HOLD);
	ck_assert(p->wait_for_runs);
	ck_assert(p->delete_namespaces);
	ck_assert(project_has_namespace(p, "llm-eval"));
	ck_assert(!project_has_namespace(p, "llm-other"));
	project_free(p);
}
END_TEST

START_TEST(parse_defaults)
{
	struct ty_project *p = parse_ok("kind: Project\nmetadata: {name: tiny}\n"
	    "spec: {namespaces: [{name: tiny}]}\n");

	ck_assert_uint_eq(p->nowners, 0);
	ck_assert_int_eq(json_object_object_length(p->hard), 0);
	ck_assert_int_eq(p->max_gpus_per_run, -1);
	ck_assert(project_profile_allowed(p, "anything"));
	ck_assert_str_eq(p->default_profile, "");
	ck_assert_uint_eq(p->subject_kinds, 1u << TY_SUBJECT_USER | 1u << TY_SUBJECT_GROUP);
	ck_assert_int_eq(p->max_members, 200);
	ck_assert_uint_eq(p->max_ttl_ms, 0);
	ck_assert_int_eq(p->max_gpus_per_member, -1);
	ck_assert_int_eq(p->suspend, TY_SUSPEND_NONE);
	ck_assert(!p->wait_for_runs);
	ck_assert(!p->delete_namespaces);
	ck_assert_int_eq(p->psa[TY_PSA_ENFORCE], KC_PSA_BASELINE);
	ck_assert_int_eq(p->psa[TY_PSA_WARN], KC_PSA_RESTRICTED);
	ck_assert_int_eq(p->psa[TY_PSA_AUDIT], KC_PSA_RESTRICTED);
	project_free(p);
}
END_TEST

/* project_run_pod_security() of the Run with spec 'spec' in namespace llm. */
static void
run_psa(const struct ty_project *p, const char *spec, int want, const char *msg)
{
	char text[1024];
	struct json_object *run, *profile;
	struct ty_config cfg;
	struct ty_spec *s = NULL;
	struct ty_problems probs = { 0 };

	config_defaults(&cfg);
	snprintf(text, sizeof(text), "apiVersion: trainyard.dev/v1alpha1\nkind: Run\n"
	    "metadata: {name: r, namespace: llm, uid: u}\nspec: %s\n", spec);
	run = ctu_yaml(text);
	profile = ctu_yaml("kind: ResourceProfile\nmetadata: {name: gpu-8}\nspec: "
	    "{security: {allowedCapabilities: [IPC_LOCK]}}\n");
	ck_assert_int_eq(model_validate(run, profile, &cfg, &s, &probs), 0);
	ck_assert_int_eq(project_run_pod_security(p, "llm", "gpu-8", s, &cfg, &probs), want);
	ck_assert_uint_eq(probs.n, (unsigned)want);
	if (msg != NULL)
		ck_assert_msg(strncmp(probs.p[0].message, msg, strlen(msg)) == 0, "%s",
		    probs.p[0].message);
	model_spec_free(s);
	config_release(&cfg);
	json_object_put(run);
	json_object_put(profile);
}

/* spec.podSecurity: levels, privileged only with listed profiles, the labels. */
START_TEST(pod_security)
{
	struct ty_project *p;
	struct json_object *o = NULL;
	char *text;

	text = variant("  suspend:", "  podSecurity: {enforce: privileged, warn: baseline}");
	p = parse_ok(text);
	free(text);
	ck_assert_int_eq(p->psa[TY_PSA_ENFORCE], KC_PSA_PRIVILEGED);
	ck_assert_int_eq(p->psa[TY_PSA_WARN], KC_PSA_BASELINE);
	ck_assert_int_eq(p->psa[TY_PSA_AUDIT], KC_PSA_RESTRICTED);
	ck_assert_int_eq(project_namespace(p, 0, &o), 0);
	ck_assert_str_eq(kc_json_str(o, "metadata", "labels",
	    "pod-security.kubernetes.io/enforce"), "privileged");
	ck_assert_str_eq(kc_json_str(o, "metadata", "labels",
	    "pod-security.kubernetes.io/enforce-version"), "latest");
	ck_assert_str_eq(kc_json_str(o, "metadata", "labels",
	    "pod-security.kubernetes.io/warn"), "baseline");
	ck_assert_str_eq(kc_json_str(o, "metadata", "labels",
	    "pod-security.kubernetes.io/warn-version"), "latest");
	ck_assert_str_eq(kc_json_str(o, "metadata", "labels",
	    "pod-security.kubernetes.io/audit"), "restricted");
	ck_assert_str_eq(kc_json_str(o, "metadata", "labels",
	    "pod-security.kubernetes.io/audit-version"), "latest");
	ck_assert_str_eq(kc_psa_level_name(p->psa[TY_PSA_ENFORCE]), "privileged");
	json_object_put(o);
	project_free(p);

	bad_variant("  suspend:", "  podSecurity: {enforce: root}",
	    "spec.podSecurity.enforce: must be privileged, baseline or restricted, not "
	    "\"root\"");
	bad_variant("  suspend:", "  podSecurity: {audit: 3}",
	    "spec.podSecurity.audit: must be a string");
	/* A Run's pods against the enforced level, with what to change. */
	text = variant("  suspend:", "  podSecurity: {enforce: baseline}");
	p = parse_ok(text);
	free(text);
	run_psa(p, "{nodes: 1, image: x, profile: gpu-8, resources: {limits: {cpu: 1}}}", 0, NULL);
	run_psa(p, "{nodes: 1, image: x, profile: gpu-8, resources: {limits: {cpu: 1}}, "
	    "securityContext: {capabilities: {add: [IPC_LOCK]}}}", 1,
	    "violates PodSecurity \"baseline:latest\": non-default capabilities (container "
	    "\"main\" must not include \"IPC_LOCK\" in securityContext.capabilities.add); "
	    "namespace llm enforces Pod Security level baseline (Project llm, "
	    "spec.podSecurity.enforce): take these out of the Run, or run it in a namespace "
	    "of a project the platform team sets to enforce privileged, listing "
	    "ResourceProfile \"gpu-8\" in spec.resourceProfiles.allowed, whose security "
	    "envelope then bounds what Runs ask");
	project_free(p);
	text = variant("  suspend:", "  podSecurity: {enforce: restricted}");
	p = parse_ok(text);
	free(text);
	run_psa(p, "{nodes: 1, image: x, profile: gpu-8, resources: {limits: {cpu: 1}}}", 1,
	    "violates PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false "
	    "(container \"main\" must set securityContext.allowPrivilegeEscalation=false)");
	run_psa(p, "{nodes: 1, image: x, profile: gpu-8, resources: {limits: {cpu: 1}}, "
	    "securityContext: {runAsNonRoot: true, allowPrivilegeEscalation: false, "
	    "capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}}", 0, NULL);
	project_free(p);
	text = variant("  suspend:", "  podSecurity: {enforce: privileged}");
	p = parse_ok(text);
	free(text);
	run_psa(p, "{nodes: 1, image: x, profile: gpu-8, resources: {limits: {cpu: 1}}, "
	    "securityContext: {capabilities: {add: [IPC_LOCK]}}}", 0, NULL);
	project_free(p);

	bad_variant("  resourceProfiles:", "  podSecurity: {enforce: privileged}",
	    "spec.podSecurity.enforce: privileged needs spec.resourceProfiles.allowed: list "
	    "the ResourceProfiles whose security envelopes bound what the project's Runs "
	    "may ask");
}
END_TEST

START_TEST(parse_problems)
{
	char msg[2048];

	bad_variant("  namespaces:", "  namespaces: [{name: llm}, {name: other}]",
	    "spec.namespaces[1].name: \"other\" must be \"llm\" or start with \"llm-\"");
	bad_variant("  namespaces:", "  namespaces: [{name: llm-}]",
	    "spec.namespaces[0].name: \"llm-\": a lowercase RFC 1123 label");
	bad_variant("  namespaces:", "  namespaces: [{name: llmx}]",
	    "must be \"llm\" or start with \"llm-\"");
	bad_variant("  namespaces:", "  namespaces: [{name: llm}, {name: llm}]",
	    "spec.namespaces[1].name: \"llm\" is listed twice");
	bad_variant("  namespaces:", "  namespaces: []",
	    "spec.namespaces: must list at least the home namespace (\"llm\")");
	bad_variant("  owners:", "  owners: [{kind: Group, name: 'system:masters'}]",
	    "spec.owners[0].name: \"system:masters\": system: users and groups cannot be "
	    "granted through a Project");
	bad_variant("  owners:", "  owners: [{kind: Robot, name: r2}]",
	    "spec.owners[0].kind: must be User, Group or ServiceAccount");
	bad_variant("  owners:", "  owners: [{kind: ServiceAccount, name: ci}]",
	    "spec.owners[0].namespace: a ServiceAccount needs its namespace");
	bad_variant("  owners:", "  owners: [{kind: User, name: bob, namespace: llm}]",
	    "spec.owners[0].namespace: only a ServiceAccount has a namespace");
	bad_variant("  resourceProfiles:", "  resourceProfiles: {allowed: [gpu-2], default: gpu-8}",
	    "spec.resourceProfiles.default: \"gpu-8\" is not in spec.resourceProfiles.allowed");
	bad_variant("    hard:", "    hard: {requests.nvidia.com/gpu: lots}",
	    "spec.quota.hard[requests.nvidia.com/gpu]: must be a quantity");
	bad_variant("    hard:", "    hard: {pods: '-1'}",
	    "spec.quota.hard[pods]: must not be negative");
	bad_variant("    hard:", "    hard: {'bad key!': '1'}", "spec.quota.hard[bad key!]: ");
	bad_variant("    maxGPUsPerRun:", "    maxGPUsPerRun: 0",
	    "spec.quota.maxGPUsPerRun: must be between 1 and");
	bad_variant("  memberPolicy:", "  memberPolicy: {maxInvitationTTL: forever}",
	    "spec.memberPolicy.maxInvitationTTL: \"forever\" must be a positive duration");
	bad_variant("  memberPolicy:", "  memberPolicy: {subjectKinds: [Robot]}",
	    "spec.memberPolicy.subjectKinds: must list only User, Group and ServiceAccount");
	bad_variant("  suspend:", "  suspend: Pause",
	    "spec.suspend: must be None or Hold or Drain, not \"Pause\"");
	bad_variant("  deletionPolicy:", "  deletionPolicy: {runs: Abandon}",
	    "spec.deletionPolicy.runs: must be Cancel or WaitForCompletion, not \"Abandon\"");
	bad_variant("  isolation:", "  isolation: {allowIngressFromNamespaces: [Monitoring]}",
	    "spec.isolation.allowIngressFromNamespaces[0]: must be a namespace's name");
	parse_bad("kind: Project\nmetadata: {name: a}\nspec: {namespaces: [{name: a}], quota: 7}\n",
	    msg, sizeof(msg));
	ck_assert_str_eq(msg, "spec.quota: must be an object");

	parse_bad("kind: Project\nmetadata: {name: a.b}\nspec: {namespaces: [{name: a}]}\n",
	    msg, sizeof(msg));
	ck_assert_msg(strstr(msg, "metadata.name: \"a.b\" must be a DNS label") != NULL, "%s",
	    msg);
	parse_bad("kind: Project\nmetadata: {name: a}\n", msg, sizeof(msg));
	ck_assert_str_eq(msg, "spec: must be set");
}
END_TEST

/* Every problem is found, not only the first. */
START_TEST(parse_all_problems)
{
	char msg[4096];

	parse_bad("kind: Project\nmetadata: {name: p}\nspec:\n"
	    "  namespaces: [{name: q}]\n  suspend: Later\n"
	    "  owners: [{kind: User, name: 'system:admin'}]\n", msg, sizeof(msg));
	ck_assert_msg(strstr(msg, "spec.namespaces[0].name") != NULL, "%s", msg);
	ck_assert_msg(strstr(msg, "spec.suspend") != NULL, "%s", msg);
	ck_assert_msg(strstr(msg, "spec.owners[0].name") != NULL, "%s", msg);
}
END_TEST

static struct ty_project *
policy_project(void)
{
	return parse_ok(PROJECT);
}

/* 2026-01-01T00:00:00Z */
#define NOW	((time_t)1767225600)

static void
check_member(const char *text, size_t rank, size_t first, time_t now, bool ready,
    const char *reason, const char *msg_part, struct ty_member_verdict *v)
{
	struct ty_project *p = policy_project();
	struct json_object *m = ctu_yaml(text);

	project_member_check(p, m, rank, first, now, v);
	ck_assert_msg(v->ready == ready, "ready %d: %s: %s", v->ready, v->reason, v->message);
	ck_assert_str_eq(v->reason, reason);
	ck_assert_msg(strstr(v->message, msg_part) != NULL, "want \"%s\" in \"%s\"", msg_part,
	    v->message);
	json_object_put(m);
	project_free(p);
}

#define MEMBER(ns, subject, rest)						\
	"kind: ProjectMember\n"							\
	"metadata: {name: m, namespace: " ns ",\n"				\
	"  creationTimestamp: '2025-12-31T00:00:00Z'}\n"			\
	"spec: {subject: " subject ", " rest "}\n"

START_TEST(member_rules)
{
	struct ty_member_verdict v;

	check_member(MEMBER("llm", "{kind: User, name: alice}", "role: researcher"), 0, 0, NOW,
	    true, "Bound", "User alice is a researcher in 2 namespaces", &v);
	ck_assert_int_eq(v.role, TY_ROLE_RESEARCHER);
	ck_assert_str_eq(v.subject.name, "alice");
	/* maxInvitationTTL (720h = 30 days) from creation bounds the expiry. */
	ck_assert_int_eq(v.expires_at, NOW - 86400 + 30 * 86400);
	ck_assert_int_eq(v.max_gpus, 32);

	check_member(MEMBER("llm", "{kind: User, name: alice}",
	    "role: admin, maxGPUs: 8, expiresAt: '2026-01-10T00:00:00Z'"), 0, 0, NOW,
	    true, "Bound", "User alice is an admin", &v);
	ck_assert_int_eq(v.expires_at, NOW + 9 * 86400);
	ck_assert_int_eq(v.max_gpus, 8);

	/* maxGPUs above the policy is capped by it. */
	check_member(MEMBER("llm", "{kind: User, name: alice}", "role: viewer, maxGPUs: 99"),
	    0, 0, NOW, true, "Bound", "a viewer", &v);
	ck_assert_int_eq(v.max_gpus, 32);

	check_member(MEMBER("llm-eval", "{kind: User, name: alice}", "role: viewer"), 0, 0,
	    NOW, false, "NotHomeNamespace", "project llm keeps its members in namespace llm",
	    &v);
	check_member(MEMBER("llm", "{kind: Group, name: 'system:masters'}", "role: admin"), 0,
	    0, NOW, false, "SubjectNotAllowed", "system: users and groups cannot be granted",
	    &v);
	check_member(MEMBER("llm", "{kind: ServiceAccount, name: ci, namespace: kube-system}",
	    "role: researcher"), 0, 0, NOW, false, "SubjectNotAllowed",
	    "service account kube-system/ci is not in a namespace of project llm", &v);
	check_member(MEMBER("llm", "{kind: ServiceAccount, name: ci, namespace: llm-eval}",
	    "role: researcher"), 0, 0, NOW, true, "Bound", "ServiceAccount ci", &v);
	check_member(MEMBER("llm", "{kind: User, name: alice}", "role: researcher"), 2, 1, NOW,
	    false, "DuplicateSubject", "User alice is already a member of project llm", &v);
	check_member(MEMBER("llm", "{kind: User, name: zed}", "role: researcher"), 3, 3, NOW,
	    false, "TooManyMembers", "project llm admits at most 3 members", &v);
	check_member(MEMBER("llm", "{kind: User, name: alice}",
	    "role: researcher, expiresAt: '2025-12-31T12:00:00Z'"), 0, 0, NOW, false,
	    "Expired", "the membership ended at 2025-12-31T12:00:00Z", &v);
	/* The TTL ends it even with a later expiresAt. */
	check_member(MEMBER("llm", "{kind: User, name: alice}",
	    "role: researcher, expiresAt: '2027-01-01T00:00:00Z'"), 0, 0, NOW + 40 * 86400,
	    false, "Expired", "the membership ended at 2026-01-30T00:00:00Z", &v);
	check_member(MEMBER("llm", "{kind: User, name: alice}", "role: owner"), 0, 0, NOW,
	    false, "InvalidSpec", "spec.role: must be admin, researcher or viewer", &v);
	check_member(MEMBER("llm", "{kind: User}", "role: viewer"), 0, 0, NOW, false,
	    "InvalidSpec", "spec.subject.name: must be set", &v);
	check_member(MEMBER("llm", "{kind: User, name: alice}",
	    "role: viewer, expiresAt: tomorrow"), 0, 0, NOW, false, "InvalidSpec",
	    "spec.expiresAt: \"tomorrow\" must be a time", &v);
}
END_TEST

START_TEST(member_kinds_policy)
{
	struct ty_project *p = parse_ok("kind: Project\nmetadata: {name: x}\n"
	    "spec: {namespaces: [{name: x}], memberPolicy: {subjectKinds: [User]}}\n");
	struct json_object *m = ctu_yaml(MEMBER("x", "{kind: Group, name: g}", "role: viewer"));
	struct ty_member_verdict v;

	project_member_check(p, m, 0, 0, NOW, &v);
	ck_assert(!v.ready);
	ck_assert_str_eq(v.reason, "SubjectNotAllowed");
	ck_assert_str_eq(v.message, "project x does not admit members of kind Group");
	/* Without a TTL and expiresAt, a membership never ends. */
	json_object_put(m);
	m = ctu_yaml(MEMBER("x", "{kind: User, name: u}", "role: viewer"));
	project_member_check(p, m, 0, 0, NOW, &v);
	ck_assert(v.ready);
	ck_assert_int_eq(v.expires_at, 0);
	ck_assert_int_eq(v.max_gpus, -1);
	json_object_put(m);
	project_free(p);
}
END_TEST

START_TEST(subject_keys)
{
	struct ty_subject s = { .kind = TY_SUBJECT_SERVICE_ACCOUNT };
	char key[TY_SUBJECT_KEY_MAX];

	kc_strlcpy(s.name, "ci", sizeof(s.name));
	kc_strlcpy(s.ns, "llm", sizeof(s.ns));
	project_subject_key(&s, key, sizeof(key));
	ck_assert_str_eq(key, "ServiceAccount:llm:ci");
	s.kind = TY_SUBJECT_GROUP;
	project_subject_key(&s, key, sizeof(key));
	ck_assert_str_eq(key, "Group:ci");
}
END_TEST

START_TEST(binding_names)
{
	char name[256], long_member[254], label[64];
	struct kc_valid v;

	project_member_binding_name(TY_ROLE_RESEARCHER, "alice", name, sizeof(name));
	ck_assert_str_eq(name, "trainyard-researcher-alice");
	memset(long_member, 'a', 253);
	long_member[253] = '\0';
	project_member_binding_name(TY_ROLE_ADMIN, long_member, name, sizeof(name));
	ck_assert_uint_le(strlen(name), 253);
	ck_assert_uint_eq(kc_valid_dns1123_subdomain(kc_str_from(name), &v), 0);
	/* Deterministic, and differs by role and by name. */
	{
		char again[256], other[256];

		project_member_binding_name(TY_ROLE_ADMIN, long_member, again, sizeof(again));
		ck_assert_str_eq(name, again);
		long_member[252] = 'b';
		project_member_binding_name(TY_ROLE_ADMIN, long_member, other, sizeof(other));
		ck_assert_str_ne(name, other);
	}
	project_member_label("alice", label, sizeof(label));
	ck_assert_str_eq(label, "alice");
	project_member_label(long_member, label, sizeof(label));
	ck_assert_uint_eq(strlen(label), 63);
	ck_assert_uint_eq(kc_valid_label_value(kc_str_from(label), &v), 0);
}
END_TEST

START_TEST(objects)
{
	struct ty_project *p = parse_ok(PROJECT);
	struct json_object *o = NULL, *e;
	struct ty_member_verdict v = { .role = TY_ROLE_VIEWER };
	struct ty_subject extra = { .kind = TY_SUBJECT_USER, .name = "bob" };

	ck_assert_int_eq(project_namespace(p, 1, &o), 0);
	ck_assert_str_eq(kc_json_str(o, "kind"), "Namespace");
	ck_assert_str_eq(kc_json_str(o, "metadata", "name"), "llm-eval");
	ck_assert_str_eq(kc_json_str(o, "metadata", "labels", TY_LABEL_PROJECT), "llm");
	ck_assert_ptr_null(kc_json_get(o, "metadata", "ownerReferences"));
	ck_assert_ptr_null(kc_json_get(o, "metadata", "namespace"));
	json_object_put(o);
	ck_assert_int_eq(project_namespace(p, 2, &o), -EINVAL);

	ck_assert_int_eq(project_quota(p, 0, &o), 0);
	ck_assert_str_eq(kc_json_str(o, "metadata", "namespace"), "llm");
	ck_assert_str_eq(kc_json_str(o, "metadata", "name"), TY_PROJECT_QUOTA);
	ck_assert_str_eq(kc_json_str(o, "spec", "hard", "requests.nvidia.com/gpu"), "128");
	e = json_object_array_get_idx(kc_json_get(o, "metadata", "ownerReferences"), 0);
	ck_assert_str_eq(kc_json_str(e, "kind"), "Project");
	ck_assert_str_eq(kc_json_str(e, "uid"), "u-1");
	ck_assert(kc_json_bool(e, false, "controller"));
	json_object_put(o);

	/* The quota counts requests.memory: a default request for containers naming none. */
	ck_assert_int_eq(project_limit_range(p, 1, &o), 0);
	ck_assert_str_eq(kc_json_str(o, "metadata", "namespace"), "llm-eval");
	ck_assert_str_eq(kc_json_str(o, "metadata", "name"), TY_PROJECT_LIMITS);
	e = json_object_array_get_idx(kc_json_get(o, "spec", "limits"), 0);
	ck_assert_str_eq(kc_json_str(e, "type"), "Container");
	ck_assert_str_eq(kc_json_str(e, "defaultRequest", "memory"), "256Mi");
	ck_assert_ptr_null(kc_json_get(e, "defaultRequest", "cpu"));
	ck_assert_ptr_null(kc_json_get(e, "default"));
	json_object_put(o);
	ck_assert_str_eq(project_default_request(p, "memory"), "256Mi");
	ck_assert_ptr_null(project_default_request(p, "cpu"));
	ck_assert_ptr_null(project_default_request(p, "nvidia.com/gpu"));

	ck_assert_int_eq(project_policy(p, 0, &o), 0);
	e = json_object_array_get_idx(kc_json_get(o, "spec", "podSelector", "matchExpressions"),
	    0);
	ck_assert_str_eq(kc_json_str(e, "key"), TY_LABEL_RUN);
	ck_assert_str_eq(kc_json_str(e, "operator"), "DoesNotExist");
	e = kc_json_get(json_object_array_get_idx(kc_json_get(json_object_array_get_idx(
	    kc_json_get(o, "spec", "ingress"), 0), "from"), 0), "namespaceSelector",
	    "matchLabels");
	ck_assert_str_eq(kc_json_str(e, TY_LABEL_PROJECT), "llm");
	e = kc_json_get(json_object_array_get_idx(kc_json_get(json_object_array_get_idx(
	    kc_json_get(o, "spec", "ingress"), 0), "from"), 1), "namespaceSelector",
	    "matchLabels");
	ck_assert_str_eq(kc_json_str(e, "kubernetes.io/metadata.name"), "monitoring");
	json_object_put(o);

	ck_assert_int_eq(project_policy_allow(p, 1, &o), 0);
	ck_assert_int_eq(json_object_object_length(kc_json_get(o, "spec", "podSelector")), 0);
	json_object_put(o);

	ck_assert_int_eq(project_owner_binding(p, 1, &o), 0);
	ck_assert_str_eq(kc_json_str(o, "roleRef", "name"), "trainyard-project-admin");
	ck_assert_int_eq(json_object_array_length(kc_json_get(o, "subjects")), 2);
	e = json_object_array_get_idx(kc_json_get(o, "subjects"), 0);
	ck_assert_str_eq(kc_json_str(e, "kind"), "Group");
	ck_assert_str_eq(kc_json_str(e, "apiGroup"), "rbac.authorization.k8s.io");
	json_object_put(o);

	ck_assert_int_eq(project_reader_role(p, &o), 0);
	ck_assert_str_eq(kc_json_str(o, "metadata", "name"), "trainyard-project-reader:llm");
	e = json_object_array_get_idx(kc_json_get(o, "rules"), 0);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	    kc_json_get(e, "resourceNames"), 0)), "llm");
	json_object_put(o);
	ck_assert_int_eq(project_reader_binding(p, &extra, 1, &o), 0);
	ck_assert_int_eq(json_object_array_length(kc_json_get(o, "subjects")), 3);
	json_object_put(o);

	kc_strlcpy(v.subject.name, "carol", sizeof(v.subject.name));
	ck_assert_int_eq(project_member_binding(p, 1, "carol-m", &v, &o), 0);
	ck_assert_str_eq(kc_json_str(o, "metadata", "name"), "trainyard-viewer-carol-m");
	ck_assert_str_eq(kc_json_str(o, "metadata", "namespace"), "llm-eval");
	ck_assert_str_eq(kc_json_str(o, "metadata", "labels", TY_LABEL_MEMBER), "carol-m");
	ck_assert_str_eq(kc_json_str(o, "roleRef", "name"), "trainyard-project-viewer");
	json_object_put(o);
	project_free(p);

	/* No quota, no owners, no allowed namespaces: nothing to build. */
	p = parse_ok("kind: Project\nmetadata: {name: t}\nspec: {namespaces: [{name: t}]}\n");
	ck_assert_int_eq(project_quota(p, 0, &o), -ENOENT);
	ck_assert_int_eq(project_limit_range(p, 0, &o), -ENOENT);
	ck_assert_int_eq(project_owner_binding(p, 0, &o), -ENOENT);
	ck_assert_int_eq(project_policy_allow(p, 0, &o), -ENOENT);
	project_free(p);
}
END_TEST

/* Whatever the input, parsing never crashes and either fails or gives a project. */
START_TEST(parse_garbage)
{
	static const char *const docs[] = {
		"kind: Project\n",
		"metadata: {name: x}\nspec: []\n",
		"metadata: {name: x}\nspec: {namespaces: {name: x}}\n",
		"metadata: {name: x}\nspec: {namespaces: [7, null, {name: 9}]}\n",
		"metadata: {name: x}\nspec: {namespaces: [{name: x}], owners: [1, {}]}\n",
		"metadata: {name: x}\nspec: {namespaces: [{name: x}], quota: {hard: {a: {}}}}\n",
		"metadata: {name: x}\nspec: {namespaces: [{name: x}], resourceProfiles: "
		    "{allowed: [1, null], default: 3}}\n",
		"metadata: {name: x}\nspec: {namespaces: [{name: x}], memberPolicy: "
		    "{subjectKinds: [1], maxMembers: x, maxInvitationTTL: 5}}\n",
	};

	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		struct json_object *o = ctu_yaml(docs[i]);
		struct ty_problems probs = { 0 };
		struct ty_project *p = NULL;

		ck_assert_msg(project_parse(o, &p, &probs) == KC_EINVALID, "doc %zu", i);
		ck_assert_ptr_null(p);
		json_object_put(o);
	}
}
END_TEST

Suite *
ctl_project_suite(void)
{
	Suite *s = suite_create("ctl_project");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, parse_full);
	tcase_add_test(tc, parse_defaults);
	tcase_add_test(tc, pod_security);
	tcase_add_test(tc, parse_problems);
	tcase_add_test(tc, parse_all_problems);
	tcase_add_test(tc, member_rules);
	tcase_add_test(tc, member_kinds_policy);
	tcase_add_test(tc, subject_keys);
	tcase_add_test(tc, binding_names);
	tcase_add_test(tc, objects);
	tcase_add_test(tc, parse_garbage);
	suite_add_tcase(s, tc);
	return s;
}

/*
 * test_ctl_config.c: trainyard-controller's ControllerConfig: defaults,
 * a full file, every kind of rejected key and value with its "FILE: KEY:
 * reason" message, flags over the file, cross-field rules, and allocation
 * failures.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/log.h>

#include "testutil.h"
#include "../../controller/config.h"

#define HDR	"apiVersion: trainyard.dev/v1alpha1\nkind: ControllerConfig\n"

static const char full[] = HDR
	"schedulerName: my-coscheduler\n"
	"podGroupAPI: scheduling.sigs.k8s.io\n"
	"clusterDomain: corp.example\n"
	"networkPolicyPeers:\n"
	"- namespaceSelector:\n"
	"    matchLabels: {kubernetes.io/metadata.name: ssh-gateway}\n"
	"  podSelector:\n"
	"    matchExpressions: [{key: app, operator: In, values: [sshd]}]\n"
	"- ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.0/16]}\n"
	"defaultPriorityClassName: team-default\n"
	"preemptiblePriorityClassName: \"\"\n"
	"nodeFailureTolerationSeconds: 10\n"
	"restartBackoff: {base: 5s, max: 1m}\n"
	"workers: 16\n"
	"kubeAPIQPS: 50.5\n"
	"kubeAPIBurst: 100\n"
	"leaderElection:\n"
	"  enabled: true\n"
	"  namespace: ops\n"
	"  id: trainyard-leader\n"
	"  leaseDuration: 30s\n"
	"  renewDeadline: 20s\n"
	"  retryPeriod: 4s\n"
	"metricsBindAddress: 127.0.0.1:9090\n"
	"healthProbeBindAddress: \"0\"\n"
	"logLevel: debug\n"
	"logFormat: json\n"
	"watchNamespace: team-a\n";

START_TEST(test_defaults)
{
	struct ty_config c;
	struct kc_status st = { 0 };

	config_defaults(&c);
	ck_assert_str_eq(c.scheduler_name, "scheduler-plugins-scheduler");
	ck_assert_int_eq(c.podgroup_api, TY_PODGROUP_AUTO);
	ck_assert_str_eq(c.cluster_domain, "cluster.local");
	ck_assert_ptr_null(c.ingress_peers);
	ck_assert_str_eq(c.default_priority_class, "trainyard-default");
	ck_assert_str_eq(c.preemptible_priority_class, "trainyard-preemptible");
	ck_assert_uint_eq(c.node_failure_toleration_s, 30);
	ck_assert_uint_eq(c.restart_backoff_base_ms, 10000);
	ck_assert_uint_eq(c.restart_backoff_max_ms, 300000);
	ck_assert_uint_eq(c.workers, 4);
	ck_assert(c.kube_api_qps == 100);
	ck_assert_uint_eq(c.kube_api_burst, 200);
	ck_assert(!c.leader.enabled);
	ck_assert_str_eq(c.leader.ns, "trainyard-system");
	ck_assert_str_eq(c.leader.id, "trainyard-controller");
	ck_assert_uint_eq(c.leader.lease_duration_ms, 15000);
	ck_assert_uint_eq(c.leader.renew_deadline_ms, 10000);
	ck_assert_uint_eq(c.leader.retry_period_ms, 2000);
	ck_assert_str_eq(c.metrics_bind_address, ":8080");
	ck_assert_str_eq(c.health_probe_bind_address, ":8081");
	ck_assert_int_eq(c.log_level, KC_LOG_INFO);
	ck_assert_int_eq(c.log_format, KC_LOG_TEXT);
	ck_assert_str_eq(c.watch_namespace, "");
	ck_assert(!c.metrics_secure);
	ck_assert_str_eq(c.webhook.bind_address, ":9443");
	ck_assert_str_eq(c.webhook.cert_dir, "/tmp/k8s-webhook-server/serving-certs");
	ck_assert_int_eq(c.webhook.cert_mode, TY_CERT_FILES);
	ck_assert_str_eq(c.webhook.service, "trainyard-webhook");
	ck_assert_str_eq(c.webhook.secret, "trainyard-webhook-certs");
	ck_assert_uint_eq(c.webhook.cert_lifetime_for_testing_ms, 0);
	ck_assert_uint_eq(c.api_discovery_interval_ms, 30000);
	ck_assert_int_eq(config_validate(&c, &st), 0);
	ck_assert_str_eq(config_podgroup_api_name(TY_PODGROUP_NONE), "none");
	ck_assert_str_eq(config_cert_mode_name(TY_CERT_SELF), "self");
	config_release(&c);
}
END_TEST

START_TEST(test_full_file)
{
	struct ty_config c;
	struct kc_status st = { 0 };
	char *dir = tu_tmpdir(), *path = tu_write(dir, "config.yaml", full);

	config_defaults(&c);
	ck_assert_msg(config_load(&c, path, &st) == 0, "%s", st.message);
	ck_assert_str_eq(c.scheduler_name, "my-coscheduler");
	ck_assert_int_eq(c.podgroup_api, TY_PODGROUP_SIGS_K8S);
	ck_assert_str_eq(c.cluster_domain, "corp.example");
	ck_assert_int_eq(json_object_array_length(c.ingress_peers), 2);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(c.ingress_peers, 1),
	    "ipBlock", "cidr"), "10.0.0.0/8");
	ck_assert_str_eq(c.default_priority_class, "team-default");
	ck_assert_str_eq(c.preemptible_priority_class, "");
	ck_assert_uint_eq(c.node_failure_toleration_s, 10);
	ck_assert_uint_eq(c.restart_backoff_base_ms, 5000);
	ck_assert_uint_eq(c.restart_backoff_max_ms, 60000);
	ck_assert_uint_eq(c.workers, 16);
	ck_assert(c.kube_api_qps == 50.5);
	ck_assert_uint_eq(c.kube_api_burst, 100);
	ck_assert(c.leader.enabled);
	ck_assert_str_eq(c.leader.ns, "ops");
	ck_assert_str_eq(c.leader.id, "trainyard-leader");
	ck_assert_uint_eq(c.leader.lease_duration_ms, 30000);
	ck_assert_uint_eq(c.leader.renew_deadline_ms, 20000);
	ck_assert_uint_eq(c.leader.retry_period_ms, 4000);
	ck_assert_str_eq(c.metrics_bind_address, "127.0.0.1:9090");
	ck_assert_str_eq(c.health_probe_bind_address, "0");
	ck_assert_int_eq(c.log_level, KC_LOG_DEBUG);
	ck_assert_int_eq(c.log_format, KC_LOG_JSON);
	ck_assert_str_eq(c.watch_namespace, "team-a");
	/* Loading again over it replaces the peers without leaking them. */
	ck_assert_int_eq(config_load(&c, path, &st), 0);
	config_release(&c);
	kc_free(path);
	tu_tmpdir_remove(dir);
}
END_TEST

struct bad_case {
	const char	*body;		/* after the header */
	const char	*message;	/* after "f.yaml: " */
};

static const struct bad_case bad_cases[] = {
	{ "workerz: 4\n", "workerz: unknown key" },
	{ "leaderElection: {enable: true}\n", "leaderElection.enable: unknown key" },
	{ "leaderElection: true\n", "leaderElection: must be a mapping, not a boolean" },
	{ "workers: 0\n", "workers: 0 is out of range 1..1024" },
	{ "workers: many\n", "workers: must be an integer, not a string" },
	{ "workers: 2.5\n", "workers: must be an integer, not a number" },
	{ "kubeAPIQPS: -1\n", "kubeAPIQPS: -1 is out of range (0, 100000]" },
	{ "kubeAPIQPS: fast\n", "kubeAPIQPS: must be a number, not a string" },
	{ "kubeAPIBurst: 0\n", "kubeAPIBurst: 0 is out of range 1..100000" },
	{ "podGroupAPI: volcano\n", "podGroupAPI: \"volcano\" is not one of auto, "
	    "scheduling.x-k8s.io, scheduling.sigs.k8s.io, none" },
	{ "schedulerName: My_Scheduler\n", "schedulerName: \"My_Scheduler\": must be a "
	    "lowercase DNS-1123 subdomain (at most 253 characters: a-z, 0-9, '-' and '.')" },
	{ "schedulerName: \"\"\n", "schedulerName: \"\": must not be empty" },
	{ "clusterDomain: 5\n", "clusterDomain: must be a string, not a number" },
	{ "watchNamespace: Team\n", "watchNamespace: \"Team\": must be a lowercase "
	    "DNS-1123 label (at most 63 characters: a-z, 0-9 and '-')" },
	{ "metricsBindAddress: 8080\n", "metricsBindAddress: must be a string, not a number" },
	{ "metricsBindAddress: \"localhost\"\n", "metricsBindAddress: \"localhost\": must "
	    "be HOST:PORT (\":8080\", \"127.0.0.1:8080\", \"[::1]:8080\") or \"0\" to turn "
	    "it off" },
	{ "healthProbeBindAddress: \":70000\"\n", "healthProbeBindAddress: \":70000\": "
	    "must be HOST:PORT (\":8080\", \"127.0.0.1:8080\", \"[::1]:8080\") or \"0\" to "
	    "turn it off" },
	{ "logLevel: loud\n", "logLevel: \"loud\" is not one of debug, info, warn, error, off" },
	{ "logFormat: xml\n", "logFormat: \"xml\" is not one of text, json" },
	{ "nodeFailureTolerationSeconds: -5\n", "nodeFailureTolerationSeconds: -5 is out "
	    "of range 0..86400" },
	{ "restartBackoff: {base: 10}\n", "restartBackoff.base: must be a duration such "
	    "as \"15s\" or \"1m30s\", not a number" },
	{ "restartBackoff: {base: soon}\n", "restartBackoff.base: \"soon\" is not a "
	    "duration (examples: \"500ms\", \"15s\", \"1m30s\")" },
	{ "restartBackoff: {base: 0s}\n", "restartBackoff.base: \"0s\" is out of range "
	    "1ms..86400s" },
	{ "apiDiscoveryInterval: 500ms\n", "apiDiscoveryInterval: \"500ms\" is out of range "
	    "1s..600s" },
	{ "apiDiscoveryInterval: 1h\n", "apiDiscoveryInterval: \"1h\" is out of range "
	    "1s..600s" },
	{ "webhook: {certLifetimeForTesting: 10s}\n", "webhook.certLifetimeForTesting: "
	    "\"10s\" is out of range 30s..86400s" },
	{ "webhook: {certLifetimeForTesting: 365d}\n", "webhook.certLifetimeForTesting: "
	    "\"365d\" is not a duration (examples: \"500ms\", \"15s\", \"1m30s\")" },
	{ "webhook: {certLifetimeForTesting: 25h}\n", "webhook.certLifetimeForTesting: "
	    "\"25h\" is out of range 30s..86400s" },
	{ "restartBackoff: {base: 10m, max: 1m}\n", "restartBackoff.base: must not be "
	    "more than restartBackoff.max (60s)" },
	{ "leaderElection: {leaseDuration: 10s}\n", "leaderElection.renewDeadline: must "
	    "be less than leaderElection.leaseDuration (10s)" },
	{ "leaderElection: {retryPeriod: 9s}\n", "leaderElection.retryPeriod: 1.2 times "
	    "it must be less than leaderElection.renewDeadline (10s)" },
	{ "leaderElection: {enabled: yes}\n", "leaderElection.enabled: must be true or "
	    "false, not a string" },
	{ "networkPolicyPeers: {podSelector: {}}\n", "networkPolicyPeers: must be a list "
	    "of NetworkPolicyPeer, not a mapping" },
	{ "networkPolicyPeers: [{}]\n", "networkPolicyPeers[0]: must set podSelector, "
	    "namespaceSelector or ipBlock" },
	{ "networkPolicyPeers: [{podSelector: {}, ipBlock: {cidr: 10.0.0.0/8}}]\n",
	    "networkPolicyPeers[0]: ipBlock cannot be combined with a selector (use two "
	    "peers)" },
	{ "networkPolicyPeers: [{podSelektor: {}}]\n", "networkPolicyPeers[0].podSelektor: "
	    "unknown key" },
	{ "networkPolicyPeers: [{ipBlock: {cidr: 10.0.0.0/33}}]\n",
	    "networkPolicyPeers[0].ipBlock.cidr: must be a CIDR such as \"10.0.0.0/8\"" },
	{ "networkPolicyPeers: [{ipBlock: {cidr: fd00::/64, except: [nope]}}]\n",
	    "networkPolicyPeers[0].ipBlock.except[0]: must be a CIDR such as \"10.1.0.0/16\"" },
	{ "networkPolicyPeers: [{ipBlock: {cidr: 10.0.0.0/8, port: 22}}]\n",
	    "networkPolicyPeers[0].ipBlock.port: unknown key" },
	{ "networkPolicyPeers: [{podSelector: {matchExpressions: [{key: a, operator: "
	    "Near}]}}]\n", "networkPolicyPeers[0].podSelector: \"Near\" is not a valid "
	    "label selector operator" },
	{ "networkPolicyPeers: [5]\n", "networkPolicyPeers[0]: must be a NetworkPolicyPeer "
	    "(podSelector, namespaceSelector or ipBlock)" },
	{ "webhook: {certMode: auto}\n", "webhook.certMode: \"auto\" is not one of files, "
	    "self" },
	{ "webhook: {certDir: certs}\n", "webhook.certDir: \"certs\": must be an absolute "
	    "path" },
	{ "webhook: {bindAddress: \"9443\"}\n", "webhook.bindAddress: \"9443\": must be "
	    "HOST:PORT (\":8080\", \"127.0.0.1:8080\", \"[::1]:8080\") or \"0\" to turn it off" },
	{ "webhook: {serviceName: Hook}\n", "webhook.serviceName: \"Hook\": must be a "
	    "lowercase DNS-1123 label (at most 63 characters: a-z, 0-9 and '-')" },
	{ "webhook: {port: 1}\n", "webhook.port: unknown key" },
	{ "metricsSecure: yes\n", "metricsSecure: must be true or false, not a string" },
};

START_TEST(test_bad_values)
{
	const struct bad_case *bc = &bad_cases[_i];
	struct ty_config c;
	struct kc_status st = { 0 };
	char text[2048], want[1024];
	int r;

	config_defaults(&c);
	snprintf(text, sizeof(text), "%s%s", HDR, bc->body);
	snprintf(want, sizeof(want), "f.yaml: %s", bc->message);
	r = config_parse(&c, text, strlen(text), "f.yaml", &st);
	ck_assert_int_eq(r, KC_ECONFIG);
	ck_assert_str_eq(st.message, want);
	/* Nothing of the bad file was applied. */
	ck_assert_uint_eq(c.workers, 4);
	ck_assert_ptr_null(c.ingress_peers);
	ck_assert_uint_eq(c.leader.lease_duration_ms, 15000);
	config_release(&c);
}
END_TEST

START_TEST(test_bad_documents)
{
	struct ty_config c;
	struct kc_status st = { 0 };
	static const char *const texts[] = {
		"workers: 4\n",
		"apiVersion: v1\nkind: ControllerConfig\n",
		"apiVersion: trainyard.dev/v1alpha1\nkind: Config\n",
		"- a\n- b\n",
		"workers: [\n",
		"---\na: 1\n---\nb: 2\n",
	};
	static const char *const msgs[] = {
		"f: apiVersion: must be trainyard.dev/v1alpha1",
		"f: apiVersion: must be trainyard.dev/v1alpha1",
		"f: kind: must be ControllerConfig",
		"f: the file must hold a mapping (apiVersion: trainyard.dev/v1alpha1, kind: "
		    "ControllerConfig, ...)",
		NULL,
		"f: expected one YAML document, found 2",
	};

	config_defaults(&c);
	for (size_t i = 0; i < KC_ARRAY_SIZE(texts); i++) {
		ck_assert_int_eq(config_parse(&c, texts[i], strlen(texts[i]), "f", &st),
		    KC_ECONFIG);
		if (msgs[i] != NULL)
			ck_assert_str_eq(st.message, msgs[i]);
		else
			ck_assert_msg(strncmp(st.message, "f: line ", 8) == 0, "%s",
			    st.message);
	}
	ck_assert_int_eq(config_load(&c, "/nonexistent/trainyard.yaml", &st), -ENOENT);
	ck_assert_str_eq(st.message, "/nonexistent/trainyard.yaml: No such file or directory");
	config_release(&c);
}
END_TEST

START_TEST(test_flags)
{
	struct ty_config c;
	struct kc_status st = { 0 };

	config_defaults(&c);
	ck_assert_int_eq(config_set_flag(&c, "workers", "8", &st), 0);
	ck_assert_uint_eq(c.workers, 8);
	ck_assert_int_eq(config_set_flag(&c, "leaderElection.enabled", "true", &st), 0);
	ck_assert(c.leader.enabled);
	ck_assert_int_eq(config_set_flag(&c, "kubeAPIQPS", "7.5", &st), 0);
	ck_assert(c.kube_api_qps == 7.5);
	ck_assert_int_eq(config_set_flag(&c, "leaderElection.leaseDuration", "60s", &st), 0);
	ck_assert_uint_eq(c.leader.lease_duration_ms, 60000);
	/* String keys take the text as it is, even when it looks like a number. */
	ck_assert_int_eq(config_set_flag(&c, "metricsBindAddress", "0", &st), 0);
	ck_assert_str_eq(c.metrics_bind_address, "0");
	ck_assert_int_eq(config_set_flag(&c, "leaderElection.namespace", "true", &st), 0);
	ck_assert_str_eq(c.leader.ns, "true");
	ck_assert_int_eq(config_set_flag(&c, "logLevel", "warn", &st), 0);
	ck_assert_int_eq(c.log_level, KC_LOG_WARN);
	ck_assert_int_eq(config_set_flag(&c, "webhook.certMode", "self", &st), 0);
	ck_assert_int_eq(c.webhook.cert_mode, TY_CERT_SELF);
	ck_assert_int_eq(config_set_flag(&c, "webhook.bindAddress", "", &st), 0);
	ck_assert_str_eq(c.webhook.bind_address, "");
	ck_assert_int_eq(config_set_flag(&c, "webhook.certDir", "/certs", &st), 0);
	ck_assert_str_eq(c.webhook.cert_dir, "/certs");
	ck_assert_int_eq(config_set_flag(&c, "webhook.certLifetimeForTesting", "90s", &st), 0);
	ck_assert_uint_eq(c.webhook.cert_lifetime_for_testing_ms, 90000);
	ck_assert_int_eq(config_set_flag(&c, "apiDiscoveryInterval", "2s", &st), 0);
	ck_assert_uint_eq(c.api_discovery_interval_ms, 2000);
	ck_assert_int_eq(config_set_flag(&c, "metricsSecure", "true", &st), 0);
	ck_assert(c.metrics_secure);
	ck_assert_int_eq(config_set_flag(&c, "workers", "lots", &st), KC_ECONFIG);
	ck_assert_str_eq(st.message, "workers: must be an integer, not a string");
	ck_assert_uint_eq(c.workers, 8);
	ck_assert_int_eq(config_set_flag(&c, "workers", "[1", &st), KC_ECONFIG);
	ck_assert_str_eq(st.message, "workers: \"[1\" is not a valid value");
	ck_assert_int_eq(config_set_flag(&c, "nope", "1", &st), KC_ECONFIG);
	ck_assert_str_eq(st.message, "nope: unknown key");
	ck_assert_int_eq(config_set_flag(&c, "networkPolicyPeers", "[]", &st), KC_ECONFIG);
	ck_assert_str_eq(st.message, "networkPolicyPeers: takes a list; set it in the "
	    "config file");
	ck_assert_int_eq(config_validate(&c, &st), 0);
	ck_assert_int_eq(config_set_flag(&c, "leaderElection.renewDeadline", "60s", &st), 0);
	ck_assert_int_eq(config_validate(&c, &st), KC_ECONFIG);
	ck_assert_str_eq(st.message, "leaderElection.renewDeadline: must be less than "
	    "leaderElection.leaseDuration (60s)");
	config_release(&c);
}
END_TEST

START_TEST(test_oom)
{
	struct ty_config c;
	struct kc_status st = { 0 };
	int r;

	for (size_t budget = 0;; budget++) {
		config_defaults(&c);
		fail_alloc_after(budget);
		r = config_parse(&c, full, strlen(full), "f", &st);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		/* json-c and libyaml allocate on their own; ours fail cleanly. */
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(c.ingress_peers);
		ck_assert_uint_eq(c.workers, 4);
	}
	ck_assert_uint_eq(c.workers, 16);
	config_release(&c);
}
END_TEST

Suite *
ctl_config_suite(void)
{
	Suite *s = suite_create("ctl_config");
	TCase *tc = tcase_create("config");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_full_file);
	tcase_add_loop_test(tc, test_bad_values, 0, KC_ARRAY_SIZE(bad_cases));
	tcase_add_test(tc, test_bad_documents);
	tcase_add_test(tc, test_flags);
	tcase_add_test(tc, test_oom);
	suite_add_tcase(s, tc);
	return s;
}

/*
 * test_dc_exec.c: pods/exec (exec.c): $(VAR) expansion, hostnames,
 * /etc/hosts and /etc/resolv.conf as the kubelet renders them, service
 * link variables, the container environment (fieldRef, ConfigMap and
 * Secret keys, envFrom, enableServiceLinks), the built-in commands and
 * their exit codes, the error channel's Status, tty newlines, incoming
 * frame parsing (stdin, resize, v5 close, garbage), protocol choice, and
 * the request path through api_handle() and exec_upgrade(): upstream's
 * refusals, "Upgrade request required", accepted sessions.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/str.h>

#include "dc_testutil.h"
#include "testutil.h"

static struct json_object *
parse(const char *text)
{
	struct json_object *o = NULL;

	ck_assert_int_eq(kc_json_parse(text, strlen(text), &o, NULL), 0);
	ck_assert_ptr_nonnull(o);
	return o;
}

/* A pod's JSON, with 'spec' and 'status' members spliced in. */
static struct json_object *
pod(const char *spec, const char *status)
{
	char text[16384];

	(void)snprintf(text, sizeof(text), "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns1\","
	    "\"uid\":\"u-1\",\"labels\":{\"app\":\"web\"},\"annotations\":{\"a\":\"b\"}},"
	    "\"spec\":{%s},\"status\":{%s}}", spec, status);
	return parse(text);
}

static void
expect_expand(const char *in, const char *want)
{
	struct exec_vars a = { 0 }, b = { 0 };
	const struct exec_vars *ctx[] = { &a, &b };
	struct kc_buf out;

	kc_buf_init(&out, 4096);
	ck_assert_int_eq(exec_vars_set(&a, "A", "alpha"), 0);
	ck_assert_int_eq(exec_vars_set(&b, "A", "shadowed"), 0);
	ck_assert_int_eq(exec_vars_set(&b, "B", "beta"), 0);
	ck_assert_int_eq(exec_expand(in, ctx, 2, &out), 0);
	ck_assert_str_eq(kc_buf_str(&out), want);
	kc_buf_free(&out);
	exec_vars_free(&a);
	exec_vars_free(&b);
}

START_TEST(expansion)
{
	expect_expand("", "");
	expect_expand("plain", "plain");
	expect_expand("$(A)", "alpha");
	expect_expand("x$(A)-$(B)y", "xalpha-betay");
	expect_expand("$(C)", "$(C)");
	expect_expand("$$(A)", "$(A)");
	expect_expand("$$", "$");
	expect_expand("a$", "a$");
	expect_expand("$x$(A)", "$xalpha");
	expect_expand("$(A", "$(A");
	expect_expand("$()", "$()");
	expect_expand("$(A)$(A)", "alphaalpha");
}
END_TEST

START_TEST(vars_replace_in_place)
{
	struct exec_vars v = { 0 };

	ck_assert_int_eq(exec_vars_set(&v, "A", "1"), 0);
	ck_assert_int_eq(exec_vars_set(&v, "B", "2"), 0);
	ck_assert_int_eq(exec_vars_set(&v, "A", "3"), 0);
	ck_assert_uint_eq(v.n, 2);
	ck_assert_str_eq(v.v[0].name, "A");
	ck_assert_str_eq(v.v[0].value, "3");
	ck_assert_ptr_null(exec_vars_get(&v, "C"));
	exec_vars_free(&v);
}
END_TEST

START_TEST(hostnames)
{
	struct json_object *p = pod("\"nodeName\":\"n1\"", "");
	char buf[512];

	exec_hostname(p, false, buf, sizeof(buf));
	ck_assert_str_eq(buf, "p");
	exec_hostname(p, true, buf, sizeof(buf));
	ck_assert_str_eq(buf, "p");		/* no subdomain: no FQDN */
	json_object_put(p);
	p = pod("\"hostname\":\"h\",\"subdomain\":\"s\"", "");
	exec_hostname(p, false, buf, sizeof(buf));
	ck_assert_str_eq(buf, "h");
	exec_hostname(p, true, buf, sizeof(buf));
	ck_assert_str_eq(buf, "h.s.ns1.svc.cluster.local");
	json_object_put(p);
	/* 63 characters at most, without a trailing '-' */
	p = pod("\"hostname\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa--bbbb\"",
	    "");
	exec_hostname(p, false, buf, sizeof(buf));
	ck_assert_str_eq(buf, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	json_object_put(p);
	p = pod("\"hostNetwork\":true,\"nodeName\":\"node-7\"", "");
	exec_hostname(p, false, buf, sizeof(buf));
	ck_assert_str_eq(buf, "node-7");
	json_object_put(p);
}
END_TEST

static void
expect_resolv(const char *spec, const char *want)
{
	struct json_object *p = pod(spec, "");
	struct kc_buf out;

	kc_buf_init(&out, 1 << 16);
	ck_assert_int_eq(exec_resolv_conf(p, &out), 0);
	ck_assert_str_eq(kc_buf_str(&out), want);
	kc_buf_free(&out);
	json_object_put(p);
}

START_TEST(resolv_conf)
{
	expect_resolv("", "search ns1.svc.cluster.local svc.cluster.local cluster.local\n"
	    "nameserver 10.96.0.10\noptions ndots:5\n");
	expect_resolv("\"dnsPolicy\":\"ClusterFirst\",\"dnsConfig\":{\"nameservers\":[\"1.2.3.4\"],"
	    "\"searches\":[\"a.example\",\"cluster.local\"],\"options\":[{\"name\":\"ndots\","
	    "\"value\":\"2\"},{\"name\":\"edns0\"}]}",
	    "search ns1.svc.cluster.local svc.cluster.local cluster.local a.example\n"
	    "nameserver 10.96.0.10\nnameserver 1.2.3.4\noptions ndots:2 edns0\n");
	expect_resolv("\"dnsPolicy\":\"Default\"", "nameserver 10.0.0.2\n");
	expect_resolv("\"dnsPolicy\":\"ClusterFirst\",\"hostNetwork\":true",
	    "nameserver 10.0.0.2\n");
	expect_resolv("\"dnsPolicy\":\"ClusterFirstWithHostNet\",\"hostNetwork\":true",
	    "search ns1.svc.cluster.local svc.cluster.local cluster.local\n"
	    "nameserver 10.96.0.10\noptions ndots:5\n");
	expect_resolv("\"dnsPolicy\":\"None\",\"dnsConfig\":{\"nameservers\":[\"9.9.9.9\","
	    "\"8.8.8.8\",\"1.1.1.1\",\"4.4.4.4\"],\"searches\":[\"x\"]}",
	    "search x\nnameserver 9.9.9.9\nnameserver 8.8.8.8\nnameserver 1.1.1.1\n");
	expect_resolv("\"dnsPolicy\":\"None\"", "");
}
END_TEST

START_TEST(resolv_search_limit)
{
	char spec[4096];
	size_t n;
	struct json_object *p;
	struct kc_buf out;
	size_t words = 0;

	n = (size_t)snprintf(spec, sizeof(spec), "\"dnsConfig\":{\"searches\":[");
	for (int i = 0; i < 40; i++)
		n += (size_t)snprintf(spec + n, sizeof(spec) - n, "%s\"s%d.example\"",
		    i > 0 ? "," : "", i);
	(void)snprintf(spec + n, sizeof(spec) - n, "]}");
	p = pod(spec, "");
	kc_buf_init(&out, 1 << 16);
	ck_assert_int_eq(exec_resolv_conf(p, &out), 0);
	for (const char *s = kc_buf_str(&out); *s != '\n'; s++)
		words += *s == ' ';
	ck_assert_uint_eq(words, 32);
	kc_buf_free(&out);
	json_object_put(p);
}
END_TEST

START_TEST(hosts_file)
{
	static const char head[] = "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n"
	    "::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\n"
	    "fe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n";
	struct json_object *p = pod("\"hostname\":\"h\",\"subdomain\":\"s\",\"hostAliases\":["
	    "{\"ip\":\"10.1.1.1\",\"hostnames\":[\"foo\",\"bar\"]}]",
	    "\"podIP\":\"10.244.0.9\",\"podIPs\":[{\"ip\":\"10.244.0.9\"},{\"ip\":\"fd00::9\"}]");
	struct kc_buf out, want;

	kc_buf_init(&out, 1 << 16);
	kc_buf_init(&want, 1 << 16);
	ck_assert_int_eq(exec_hosts_file(p, &out), 0);
	ck_assert_int_eq(kc_buf_printf(&want, "%s10.244.0.9\th.s.ns1.svc.cluster.local\th\n"
	    "fd00::9\th.s.ns1.svc.cluster.local\th\n\n# Entries added by HostAliases.\n"
	    "10.1.1.1\tfoo\tbar\n", head), 0);
	ck_assert_str_eq(kc_buf_str(&out), kc_buf_str(&want));
	json_object_put(p);
	p = pod("", "\"podIP\":\"10.244.0.9\"");
	kc_buf_reset(&out);
	kc_buf_reset(&want);
	ck_assert_int_eq(exec_hosts_file(p, &out), 0);
	ck_assert_int_eq(kc_buf_printf(&want, "%s10.244.0.9\tp\n", head), 0);
	ck_assert_str_eq(kc_buf_str(&out), kc_buf_str(&want));
	kc_buf_free(&out);
	kc_buf_free(&want);
	json_object_put(p);
}
END_TEST

START_TEST(service_links)
{
	struct json_object *svc = parse("{\"metadata\":{\"name\":\"my-db\"},\"spec\":{"
	    "\"clusterIP\":\"10.96.3.4\",\"ports\":[{\"port\":5432},{\"name\":\"metrics-x\","
	    "\"port\":9187,\"protocol\":\"UDP\"}]}}");
	struct exec_vars v = { 0 };
	static const char *const want[][2] = {
		{ "MY_DB_SERVICE_HOST", "10.96.3.4" },
		{ "MY_DB_SERVICE_PORT", "5432" },
		{ "MY_DB_SERVICE_PORT_METRICS_X", "9187" },
		{ "MY_DB_PORT", "tcp://10.96.3.4:5432" },
		{ "MY_DB_PORT_5432_TCP", "tcp://10.96.3.4:5432" },
		{ "MY_DB_PORT_5432_TCP_PROTO", "tcp" },
		{ "MY_DB_PORT_5432_TCP_PORT", "5432" },
		{ "MY_DB_PORT_5432_TCP_ADDR", "10.96.3.4" },
		{ "MY_DB_PORT_9187_UDP", "udp://10.96.3.4:9187" },
		{ "MY_DB_PORT_9187_UDP_PROTO", "udp" },
		{ "MY_DB_PORT_9187_UDP_PORT", "9187" },
		{ "MY_DB_PORT_9187_UDP_ADDR", "10.96.3.4" },
	};

	ck_assert_int_eq(exec_service_vars(svc, &v), 0);
	ck_assert_uint_eq(v.n, KC_ARRAY_SIZE(want));
	for (size_t i = 0; i < KC_ARRAY_SIZE(want); i++) {
		ck_assert_str_eq(v.v[i].name, want[i][0]);
		ck_assert_str_eq(v.v[i].value, want[i][1]);
	}
	exec_vars_free(&v);
	json_object_put(svc);
	/* IPv6 in brackets; headless and port-less Services give nothing */
	svc = parse("{\"metadata\":{\"name\":\"v6\"},\"spec\":{\"clusterIP\":\"fd00::1\","
	    "\"ports\":[{\"port\":80}]}}");
	ck_assert_int_eq(exec_service_vars(svc, &v), 0);
	ck_assert_str_eq(exec_vars_get(&v, "V6_PORT"), "tcp://[fd00::1]:80");
	exec_vars_free(&v);
	json_object_put(svc);
	svc = parse("{\"metadata\":{\"name\":\"h\"},\"spec\":{\"clusterIP\":\"None\","
	    "\"ports\":[{\"port\":80}]}}");
	ck_assert_int_eq(exec_service_vars(svc, &v), 0);
	ck_assert_uint_eq(v.n, 0);
	json_object_put(svc);
	svc = parse("{\"metadata\":{\"name\":\"n\"},\"spec\":{\"clusterIP\":\"10.0.0.1\"}}");
	ck_assert_int_eq(exec_service_vars(svc, &v), 0);
	ck_assert_uint_eq(v.n, 0);
	json_object_put(svc);
}
END_TEST

/* A fake store for the environment: a ConfigMap, a Secret, Services. */
static struct json_object *fake_cm, *fake_secret, *fake_master, *fake_svcs[2];

static const struct json_object *
fake_get(void *arg, const char *resource, const char *ns, const char *name)
{
	(void)arg;
	if (strcmp(resource, "configmaps") == 0 && strcmp(ns, "ns1") == 0 &&
	    strcmp(name, "cm") == 0)
		return fake_cm;
	if (strcmp(resource, "secrets") == 0 && strcmp(ns, "ns1") == 0 &&
	    strcmp(name, "sec") == 0)
		return fake_secret;
	if (strcmp(resource, "services") == 0 && strcmp(ns, "default") == 0 &&
	    strcmp(name, "kubernetes") == 0)
		return fake_master;
	return NULL;
}

static int
fake_list(void *arg, const char *resource, const char *ns, struct json_object ***ret,
    size_t *ret_n)
{
	struct json_object **a;

	(void)arg;
	*ret = NULL;
	*ret_n = 0;
	if (strcmp(resource, "services") != 0 || strcmp(ns, "ns1") != 0)
		return 0;
	if ((a = kc_calloc(2, sizeof(*a))) == NULL)
		return -ENOMEM;
	a[0] = json_object_get(fake_svcs[0]);
	a[1] = json_object_get(fake_svcs[1]);
	*ret = a;
	*ret_n = 2;
	return 0;
}

static void
fake_free(void *arg, struct json_object **objs, size_t n)
{
	(void)arg;
	objs_free(objs, n);
}

static const struct exec_lookup fake_lookup = {
	.get = fake_get, .list = fake_list, .free_list = fake_free,
};

static void
fakes_setup(void)
{
	fake_cm = parse("{\"data\":{\"LEVEL\":\"debug\",\"1BAD\":\"x\",\"MODE\":\"fast\"}}");
	fake_secret = parse("{\"data\":{\"PASSWORD\":\"czNjcjN0\"}}");
	fake_master = parse("{\"metadata\":{\"name\":\"kubernetes\"},\"spec\":{"
	    "\"clusterIP\":\"10.96.0.1\",\"ports\":[{\"name\":\"https\",\"port\":443}]}}");
	fake_svcs[0] = parse("{\"metadata\":{\"name\":\"db\"},\"spec\":{\"clusterIP\":"
	    "\"10.96.0.20\",\"ports\":[{\"port\":5432}]}}");
	fake_svcs[1] = parse("{\"metadata\":{\"name\":\"headless\"},\"spec\":{\"clusterIP\":"
	    "\"None\",\"ports\":[{\"port\":1}]}}");
}

static void
fakes_teardown(void)
{
	json_object_put(fake_cm);
	json_object_put(fake_secret);
	json_object_put(fake_master);
	json_object_put(fake_svcs[0]);
	json_object_put(fake_svcs[1]);
	fail_alloc_after(SIZE_MAX);
}

static const char env_spec[] = "\"nodeName\":\"n1\",\"serviceAccountName\":\"sa\","
    "\"containers\":[{\"name\":\"c\",\"envFrom\":[{\"configMapRef\":{\"name\":\"cm\"},"
    "\"prefix\":\"CM_\"},{\"secretRef\":{\"name\":\"missing\"}}],\"env\":["
    "{\"name\":\"CM_MODE\",\"value\":\"slow\"},"
    "{\"name\":\"ADDR\",\"value\":\"$(POD).$(DB_SERVICE_HOST):$(LATER)\"},"
    "{\"name\":\"POD\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.name\"}}},"
    "{\"name\":\"NS\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.namespace\"}}},"
    "{\"name\":\"UID\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.uid\"}}},"
    "{\"name\":\"APP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
    "\"metadata.labels['app']\"}}},"
    "{\"name\":\"IP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.podIP\"}}},"
    "{\"name\":\"IPS\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.podIPs\"}}},"
    "{\"name\":\"HOSTIP\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"status.hostIP\"}}},"
    "{\"name\":\"NODE\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.nodeName\"}}},"
    "{\"name\":\"LVL\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cm\","
    "\"key\":\"LEVEL\"}}},"
    "{\"name\":\"PW\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"sec\","
    "\"key\":\"PASSWORD\"}}},"
    "{\"name\":\"OPT\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cm\","
    "\"key\":\"NOPE\",\"optional\":true}}},"
    "{\"name\":\"EMPTY\"},"
    "{\"name\":\"LATER\",\"value\":\"1\"}]}]";
static const char env_status[] = "\"podIP\":\"10.244.0.5\",\"podIPs\":[{\"ip\":"
    "\"10.244.0.5\"},{\"ip\":\"fd00::5\"}],\"hostIP\":\"192.168.0.3\"";

START_TEST(environment)
{
	struct json_object *p = pod(env_spec, env_status);
	const struct json_object *ctr = json_object_array_get_idx(kc_json_get(p, "spec",
	    "containers"), 0);
	struct exec_vars env = { 0 };
	static const char *const want[][2] = {
		{ "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" },
		{ "HOSTNAME", "p" },
		{ "CM_LEVEL", "debug" },
		{ "CM_1BAD", "x" },	/* valid with the prefix, as upstream checks it */
		{ "CM_MODE", "slow" },
		{ "ADDR", "$(POD).10.96.0.20:$(LATER)" },
		{ "POD", "p" },
		{ "NS", "ns1" },
		{ "UID", "u-1" },
		{ "APP", "web" },
		{ "IP", "10.244.0.5" },
		{ "IPS", "10.244.0.5,fd00::5" },
		{ "HOSTIP", "192.168.0.3" },
		{ "NODE", "n1" },
		{ "LVL", "debug" },
		{ "PW", "s3cr3t" },
		{ "EMPTY", "" },
		{ "LATER", "1" },
		{ "DB_PORT", "tcp://10.96.0.20:5432" },
	};
	size_t i;

	ck_assert_int_eq(exec_env(&fake_lookup, p, ctr, &env), 0);
	for (i = 0; i < KC_ARRAY_SIZE(want); i++) {
		ck_assert_str_eq(env.v[i].name, want[i][0]);
		ck_assert_str_eq(env.v[i].value, want[i][1]);
	}
	ck_assert_ptr_null(exec_vars_get(&env, "OPT"));
	ck_assert_ptr_null(exec_vars_get(&env, "HEADLESS_SERVICE_HOST"));
	ck_assert_str_eq(exec_vars_get(&env, "KUBERNETES_SERVICE_PORT_HTTPS"), "443");
	ck_assert_str_eq(env.v[env.n - 1].name, "HOME");
	exec_vars_free(&env);
	json_object_put(p);
}
END_TEST

START_TEST(environment_no_links)
{
	struct json_object *p = pod("\"enableServiceLinks\":false,\"containers\":[{\"name\":"
	    "\"c\"}]", "");
	const struct json_object *ctr = json_object_array_get_idx(kc_json_get(p, "spec",
	    "containers"), 0);
	struct exec_vars env = { 0 };

	ck_assert_int_eq(exec_env(&fake_lookup, p, ctr, &env), 0);
	ck_assert_ptr_null(exec_vars_get(&env, "DB_SERVICE_HOST"));
	/* the master service of "default" stays */
	ck_assert_str_eq(exec_vars_get(&env, "KUBERNETES_SERVICE_HOST"), "10.96.0.1");
	exec_vars_free(&env);
	json_object_put(p);
}
END_TEST

START_TEST(environment_alloc_failures)
{
	struct json_object *p = pod(env_spec, env_status);
	const struct json_object *ctr = json_object_array_get_idx(kc_json_get(p, "spec",
	    "containers"), 0);
	int r = -ENOMEM;

	for (size_t n = 0; r == -ENOMEM && n < 100000; n++) {
		struct exec_vars env = { 0 };

		fail_alloc_after(n);
		r = exec_env(&fake_lookup, p, ctr, &env);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			ck_assert_uint_gt(env.n, 20);
		exec_vars_free(&env);
	}
	ck_assert_int_eq(r, 0);
	json_object_put(p);
}
END_TEST

/* Runs a command line (words separated by '|') against a small pod. */
static void
run_cmd(const char *line, int want_code, const char *want_out, const char *want_err)
{
	struct json_object *p = pod("\"hostname\":\"h\",\"subdomain\":\"s\",\"nodeName\":\"n\"",
	    "\"podIP\":\"10.0.0.9\"");
	struct exec_vars env = { 0 };
	struct exec_ctx ctx = { .pod = p, .env = &env };
	struct exec_result res;
	char copy[512], *argv[16], *save = NULL;
	size_t argc = 0;

	ck_assert_int_eq(exec_vars_set(&env, "PATH", "/bin"), 0);
	ck_assert_int_eq(exec_vars_set(&env, "X", "1"), 0);
	(void)kc_strlcpy(copy, line, sizeof(copy));
	for (char *w = strtok_r(copy, "|", &save); w != NULL; w = strtok_r(NULL, "|", &save))
		argv[argc++] = w;
	exec_result_init(&res);
	ck_assert_int_eq(exec_run(&ctx, argv, argc, &res), 0);
	ck_assert_int_eq(res.exit_code, want_code);
	if (want_code == -1)
		ck_assert(res.not_found);
	ck_assert_str_eq(res.out.len > 0 ? kc_buf_str(&res.out) : "", want_out);
	ck_assert_str_eq(res.err.len > 0 ? kc_buf_str(&res.err) : "", want_err);
	exec_result_free(&res);
	exec_vars_free(&env);
	json_object_put(p);
}

START_TEST(commands)
{
	run_cmd("echo|hi|there", 0, "hi there\n", "");
	run_cmd("echo", 0, "\n", "");
	run_cmd("echo|-n|x", 0, "x", "");
	run_cmd("/bin/echo|a", 0, "a\n", "");
	run_cmd("true", 0, "", "");
	run_cmd("false", 1, "", "");
	run_cmd("hostname", 0, "h\n", "");
	run_cmd("hostname|-f", 0, "h.s.ns1.svc.cluster.local\n", "");
	run_cmd("hostname|-s", 0, "h\n", "");
	run_cmd("hostname|-i", 0, "10.0.0.9\n", "");
	run_cmd("env", 0, "PATH=/bin\nX=1\n", "");
	run_cmd("printenv", 0, "PATH=/bin\nX=1\n", "");
	run_cmd("printenv|X", 0, "1\n", "");
	run_cmd("printenv|X|NOPE", 1, "1\n", "");
	run_cmd("cat|/etc/hostname", 0, "h\n", "");
	run_cmd("cat|/nope", 1, "", "cat: /nope: No such file or directory\n");
	run_cmd("cat", 0, "", "");
	run_cmd("sh|-c|exit 3", 3, "", "");
	run_cmd("sh|-c|exit", 0, "", "");
	run_cmd("sh|-c|exit 257", 1, "", "");
	run_cmd("sh|-c|exit x", 2, "", "sh: 1: exit: Illegal number: x\n");
	run_cmd("sh|-c|echo 'a  b' \"c\\\"d\"", 0, "a  b c\"d\n", "");
	run_cmd("sh|-c|foo bar", 127, "", "sh: 1: foo: not found\n");
	run_cmd("sh|-c|echo 'open", 2, "", "sh: 1: Syntax error: Unterminated quoted string\n");
	run_cmd("sh", 2, "", "sh: interactive shells are not simulated\n");
	run_cmd("ls", -1, "", "");
	run_cmd("/opt/app/run", -1, "", "");
	run_cmd("/bin/sub/echo", -1, "", "");
}
END_TEST

START_TEST(not_found_message)
{
	char buf[1024];
	static const char pre[] = "error executing command in container: failed to exec in "
	    "container: failed to start exec \"";
	const char *q;

	exec_not_found_message("ls", buf, sizeof(buf));
	ck_assert(strncmp(buf, pre, strlen(pre)) == 0);
	q = strchr(buf + strlen(pre), '"');
	ck_assert_ptr_nonnull(q);
	ck_assert_int_eq((int)(q - (buf + strlen(pre))), 64);
	ck_assert_str_eq(q, "\": OCI runtime exec failed: exec failed: unable to start container "
	    "process: exec: \"ls\": executable file not found in $PATH: unknown");
	exec_not_found_message("/x/y", buf, sizeof(buf));
	ck_assert_ptr_nonnull(strstr(buf, "exec: \"/x/y\": stat /x/y: no such file or directory: "
	    "unknown"));
}
END_TEST

static void
expect_status(int code, const char *internal, const char *want)
{
	struct kc_buf out;

	kc_buf_init(&out, 4096);
	ck_assert_int_eq(exec_status_json(code, internal, &out), 0);
	ck_assert_str_eq(kc_buf_str(&out), want);
	kc_buf_free(&out);
}

START_TEST(status_json)
{
	expect_status(0, NULL, "{\"metadata\":{},\"status\":\"Success\"}");
	expect_status(3, NULL, "{\"metadata\":{},\"status\":\"Failure\",\"message\":"
	    "\"command terminated with non-zero exit code: command terminated with exit code 3\","
	    "\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":\"ExitCode\","
	    "\"message\":\"3\"}]}}");
	expect_status(0, "boom", "{\"metadata\":{},\"status\":\"Failure\",\"message\":"
	    "\"Internal error occurred: boom\",\"reason\":\"InternalError\",\"details\":{"
	    "\"causes\":[{\"message\":\"boom\"}]},\"code\":500}");
}
END_TEST

START_TEST(status_json_alloc_failures)
{
	int r = -ENOMEM;

	for (size_t n = 0; r == -ENOMEM && n < 1000; n++) {
		struct kc_buf out;

		kc_buf_init(&out, 4096);
		fail_alloc_after(n);
		r = exec_status_json(7, NULL, &out);
		fail_alloc_after(SIZE_MAX);
		kc_buf_free(&out);
	}
	ck_assert_int_eq(r, 0);
}
END_TEST

START_TEST(tty_newlines)
{
	struct kc_buf out;

	kc_buf_init(&out, 64);
	ck_assert_int_eq(exec_tty_translate("a\nb\n", 4, &out), 0);
	ck_assert_str_eq(kc_buf_str(&out), "a\r\nb\r\n");
	kc_buf_free(&out);
}
END_TEST

START_TEST(rx_frames)
{
	struct exec_rx rx = { .channel = -1, .v5 = true };
	struct exec_rx_ev ev;
	static const unsigned char in1[] = { 0, 'h', 'i' }, more[] = { '!', '!' };
	static const unsigned char resize_a[] = { 4, '{', '"', 'W', 'i', 'd', 't', 'h', '"', ':',
	    '8', '0', ',' };
	static const char resize_b[] = "\"Height\":24}";
	static const unsigned char out_ch[] = { 1, 'x' }, junk[] = { 9, 1, 2, 3 };
	static const unsigned char close_stdin[] = { 255, 0 }, bad_resize[] = { 4, '[' };
	unsigned char big[EXEC_RESIZE_MAX + 8];

	ck_assert_int_eq(exec_rx_feed(&rx, in1, sizeof(in1), true, false, &ev), 0);
	ck_assert_int_eq(ev.kind, EXEC_RX_STDIN);
	ck_assert_uint_eq(ev.len, 2);
	ck_assert_int_eq(memcmp(ev.data, "hi", 2), 0);
	/* a continuation carries no channel byte */
	(void)exec_rx_feed(&rx, more, sizeof(more), false, true, &ev);
	ck_assert_int_eq(ev.kind, EXEC_RX_STDIN);
	ck_assert_uint_eq(ev.len, 2);
	/* a resize split over two pieces */
	(void)exec_rx_feed(&rx, resize_a, sizeof(resize_a), true, false, &ev);
	ck_assert_int_eq(ev.kind, EXEC_RX_NONE);
	(void)exec_rx_feed(&rx, (const unsigned char *)resize_b, strlen(resize_b), false, true,
	    &ev);
	ck_assert_int_eq(ev.kind, EXEC_RX_RESIZE);
	ck_assert_uint_eq(ev.width, 80);
	ck_assert_uint_eq(ev.height, 24);
	/* garbage: bad JSON, an oversized resize, output channels, unknown ones, empty */
	(void)exec_rx_feed(&rx, bad_resize, sizeof(bad_resize), true, true, &ev);
	ck_assert_int_eq(ev.kind, EXEC_RX_NONE);
	memset(big, ' ', sizeof(big));
	big[0] = 4;
	(void)exec_rx_feed(&rx, big, sizeof(big), true, true, &ev);
	ck_assert_int_eq(ev.kind, EXEC_RX_NONE);
	(void)exec_rx_feed(&rx, out_ch, sizeof(out_ch), true, true, &ev);
	ck_assert_int_eq(ev.kind, EXEC_RX_NONE);
	(void)exec_rx_feed(&rx, junk, sizeof(junk), true, true, &ev);
	ck_assert_int_eq(ev.kind, EXEC_RX_NONE);
	(void)exec_rx_feed(&rx, junk, 0, true, true, &ev);
	ck_assert_int_eq(ev.kind, EXEC_RX_NONE);
	/* v5 close of stdin, once; stdin after it is dropped */
	(void)exec_rx_feed(&rx, close_stdin, sizeof(close_stdin), true, true, &ev);
	ck_assert_int_eq(ev.kind, EXEC_RX_STDIN_CLOSE);
	(void)exec_rx_feed(&rx, close_stdin, sizeof(close_stdin), true, true, &ev);
	ck_assert_int_eq(ev.kind, EXEC_RX_NONE);
	(void)exec_rx_feed(&rx, in1, sizeof(in1), true, true, &ev);
	ck_assert_int_eq(ev.kind, EXEC_RX_NONE);
	/* v4 has no close signal */
	memset(&rx, 0, sizeof(rx));
	rx.channel = -1;
	(void)exec_rx_feed(&rx, close_stdin, sizeof(close_stdin), true, true, &ev);
	ck_assert_int_eq(ev.kind, EXEC_RX_NONE);
}
END_TEST

START_TEST(protocol_pick)
{
	ck_assert_str_eq(exec_protocol_pick("v5.channel.k8s.io"), "v5.channel.k8s.io");
	ck_assert_str_eq(exec_protocol_pick("v4.channel.k8s.io, v5.channel.k8s.io"),
	    "v4.channel.k8s.io");
	ck_assert_str_eq(exec_protocol_pick("channel.k8s.io,v5.channel.k8s.io"),
	    "v5.channel.k8s.io");
	ck_assert_ptr_null(exec_protocol_pick("base64.channel.k8s.io"));
	ck_assert_ptr_null(exec_protocol_pick("http, v5.channel.k8s.io"));
	ck_assert_ptr_null(exec_protocol_pick(""));
	ck_assert_ptr_null(exec_protocol_pick(NULL));
}
END_TEST

/*
 * The request path, through api_handle() and exec_upgrade().
 */

static struct dc *dc;

static void
api_setup(void)
{
	dc = dct_new(NULL);
	ck_assert_int_eq(exec_init(dc), 0);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/pods",
	    .body = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"two\"},"
	    "\"spec\":{\"nodeName\":\"n1\",\"initContainers\":[{\"name\":\"init\",\"image\":\"x\"}],"
	    "\"containers\":[{\"name\":\"a\",\"image\":\"x\"},{\"name\":\"b\",\"image\":\"x\"}]}}" },
	    201, NULL));
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/pods",
	    .body = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"nohost\"},"
	    "\"spec\":{\"containers\":[{\"name\":\"a\",\"image\":\"x\"}]}}" }, 201, NULL));
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/pods/two/status",
	    .ctype = "application/merge-patch+json",
	    .body = "{\"status\":{\"containerStatuses\":[{\"name\":\"a\",\"state\":{\"running\":"
	    "{}}},{\"name\":\"b\",\"state\":{\"waiting\":{}}}]}}" }, 200, NULL));
}

static void
api_teardown(void)
{
	exec_fini(dc);
	dc = api_free(dc);
	fail_alloc_after(SIZE_MAX);
}

static void
expect_get(const char *target, int code, const char *msg)
{
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = target },
	    code, NULL), msg);
}

START_TEST(plain_requests)
{
	expect_get("/api/v1/namespaces/default/pods/two/exec?command=ls&container=a&stdout=1",
	    400, "Upgrade request required");
	expect_get("/api/v1/namespaces/default/pods/two/exec?command=ls", 400,
	    "a container name must be specified for pod two, choose one of: [a b] or one of "
	    "the init containers: [init]");
	expect_get("/api/v1/namespaces/default/pods/two/exec?command=ls&container=zz", 400,
	    "container zz is not valid for pod two");
	expect_get("/api/v1/namespaces/default/pods/nohost/exec?command=ls", 400,
	    "pod nohost does not have a host assigned");
	expect_get("/api/v1/namespaces/default/pods/none/exec?command=ls", 404,
	    "pods \"none\" not found");
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/api/v1/namespaces/default/pods/two/exec?command=ls&container=a" },
	    400, NULL), "Upgrade request required");
}
END_TEST

/* An upgrade request through exec_upgrade(): its result and reply. */
static int
upgrade(const char *target, const char *protocols, struct dc_resp *resp,
    struct exec_session **s)
{
	struct dc_req req;
	int r;

	memset(&req, 0, sizeof(req));
	ck_assert_int_eq(req_set_target(&req, target), 0);
	req.method = DC_GET;
	req.authorization = kc_strdup("Bearer admin-token");
	ck_assert_ptr_nonnull(req.authorization);
	resp_init(resp);
	r = exec_upgrade(dc, &req, protocols, resp, s);
	req_clear(&req);
	return r;
}

START_TEST(upgrades)
{
	struct exec_session *s = NULL;
	struct dc_resp resp;

	/* accepted: a session waits for the connection */
	ck_assert_int_eq(upgrade("/api/v1/namespaces/default/pods/two/exec?command=hostname&"
	    "container=a&stdout=true", "v5.channel.k8s.io", &resp, &s), 0);
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(resp.status, 101);
	ck_assert_uint_eq(exec_sessions(dc), 1);
	resp_clear(&resp);
	/* v4: the kubelet's 500 before the upgrade for a container not running */
	ck_assert_int_eq(upgrade("/api/v1/namespaces/default/pods/two/exec?command=ls&"
	    "container=b&stdout=true", "v4.channel.k8s.io", &resp, &s), 1);
	ck_assert_int_eq(resp.status, 500);
	ck_assert_str_eq(kc_buf_str(&resp.body), "container not found (\"b\")");
	resp_clear(&resp);
	/* v5: the same refusal arrives on the error channel */
	ck_assert_int_eq(upgrade("/api/v1/namespaces/default/pods/two/exec?command=ls&"
	    "container=b&stdout=true", "v5.channel.k8s.io", &resp, &s), 0);
	resp_clear(&resp);
	/* v4: ExecLocation's refusals before the upgrade */
	ck_assert_int_eq(upgrade("/api/v1/namespaces/default/pods/nohost/exec?command=ls&"
	    "stdout=true", "v4.channel.k8s.io", &resp, &s), 1);
	ck_assert_int_eq(resp.status, 400);
	resp_clear(&resp);
	/* v5: accepted, the Status of the (SPDY) retry on the error channel */
	ck_assert_int_eq(upgrade("/api/v1/namespaces/default/pods/nohost/exec?command=ls&"
	    "stdout=true", "v5.channel.k8s.io", &resp, &s), 0);
	ck_assert_uint_eq(exec_sessions(dc), 3);
	resp_clear(&resp);
	/* no streams, no protocol we serve, not pods/exec */
	ck_assert_int_eq(upgrade("/api/v1/namespaces/default/pods/two/exec?command=ls&"
	    "container=a", "v4.channel.k8s.io", &resp, &s), 1);
	ck_assert_int_eq(resp.status, 400);
	resp_clear(&resp);
	ck_assert_int_eq(upgrade("/api/v1/namespaces/default/pods/two/exec?command=ls&"
	    "container=a&stdout=1", "base64.channel.k8s.io", &resp, &s), 1);
	ck_assert_int_eq(resp.status, 400);
	ck_assert_ptr_nonnull(strstr(kc_buf_str(&resp.body), "requested protocol(s) are not "
	    "supported"));
	resp_clear(&resp);
	ck_assert_int_eq(upgrade("/api/v1/namespaces/default/pods", "v5.channel.k8s.io", &resp,
	    &s), 1);
	ck_assert_int_eq(resp.status, 400);
	resp_clear(&resp);
	ck_assert_uint_eq(exec_sessions(dc), 3);
	/* exec_fini() (teardown) frees the sessions never attached */
}
END_TEST

START_TEST(upgrade_alloc_failures)
{
	int r = -ENOMEM;

	for (size_t n = 0; n < 100000; n++) {
		struct exec_session *s = NULL;
		struct dc_resp resp;
		struct dc_req req;

		memset(&req, 0, sizeof(req));
		ck_assert_int_eq(req_set_target(&req, "/api/v1/namespaces/default/pods/two/exec?"
		    "command=env&container=a&stdout=true"), 0);
		req.authorization = kc_strdup("Bearer admin-token");
		resp_init(&resp);
		fail_alloc_after(n);
		r = exec_upgrade(dc, &req, "v5.channel.k8s.io", &resp, &s);
		fail_alloc_after(SIZE_MAX);
		req_clear(&req);
		resp_clear(&resp);
		/* A failure inside api_handle() is a 500 reply (1), never a leak. */
		ck_assert(r == 0 || r == 1 || r == -ENOMEM);
		if (r == 0) {
			ck_assert_ptr_nonnull(s);
			break;
		}
	}
	ck_assert_int_eq(r, 0);
}
END_TEST

Suite *dc_exec_suite(void);

Suite *
dc_exec_suite(void)
{
	Suite *s = suite_create("dc_exec");
	TCase *tc = tcase_create("pure");
	TCase *env = tcase_create("env");
	TCase *api = tcase_create("api");

	tcase_add_test(tc, expansion);
	tcase_add_test(tc, vars_replace_in_place);
	tcase_add_test(tc, hostnames);
	tcase_add_test(tc, resolv_conf);
	tcase_add_test(tc, resolv_search_limit);
	tcase_add_test(tc, hosts_file);
	tcase_add_test(tc, service_links);
	tcase_add_test(tc, commands);
	tcase_add_test(tc, not_found_message);
	tcase_add_test(tc, status_json);
	tcase_add_test(tc, status_json_alloc_failures);
	tcase_add_test(tc, tty_newlines);
	tcase_add_test(tc, rx_frames);
	tcase_add_test(tc, protocol_pick);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(env, fakes_setup, fakes_teardown);
	tcase_add_test(env, environment);
	tcase_add_test(env, environment_no_links);
	tcase_add_test(env, environment_alloc_failures);
	suite_add_tcase(s, env);
	tcase_add_checked_fixture(api, api_setup, api_teardown);
	tcase_add_test(api, plain_requests);
	tcase_add_test(api, upgrades);
	tcase_add_test(api, upgrade_alloc_failures);
	suite_add_tcase(s, api);
	return s;
}

/*
 * test_podsecurity.c: the Pod Security Standards engine, with cases and
 * messages from upstream's policy/check_*_test.go and the texts
 * kube-apiserver returns.
 *
 * Pods are written with single quotes for readability; pod() turns them
 * into JSON's double quotes (no test value contains a quote).
 */
#include <errno.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/podsecurity.h>
#include <kc/sbuf.h>

#include "testutil.h"

static struct json_object *
pod(const char *text)
{
	char buf[8192];
	struct json_object *o = NULL;
	size_t n = strlen(text);

	ck_assert_uint_lt(n, sizeof(buf));
	for (size_t i = 0; i <= n; i++)
		buf[i] = text[i] == '\'' ? '"' : text[i];
	ck_assert_int_eq(kc_json_parse(buf, n, &o, NULL), 0);
	return o;
}

/* Evaluates 'text' (a {metadata, spec} object) at level:minor. */
static int
eval(enum kc_psa_level level, unsigned minor, const char *text, char *out, size_t size,
    bool details)
{
	struct json_object *o = pod(text);
	struct kc_psa_policy p = { level, minor };
	struct kc_sbuf b;
	int r;

	kc_sbuf_init(&b, out, size);
	if (details)
		r = kc_psa_check(kc_json_get(o, "metadata"), kc_json_get(o, "spec"), &p, &b);
	else
		r = kc_psa_check_reasons(kc_json_get(o, "metadata"), kc_json_get(o, "spec"),
		    &p, &b);
	json_object_put(o);
	return r;
}

#define B	KC_PSA_BASELINE
#define R	KC_PSA_RESTRICTED

/* A restricted-clean container and pod-level context, to test one check at a time. */
#define OKSC	"'securityContext':{'allowPrivilegeEscalation':false," \
		"'capabilities':{'drop':['ALL']}}"
#define OKPOD	"'securityContext':{'runAsNonRoot':true," \
		"'seccompProfile':{'type':'RuntimeDefault'}}"

static void
expect(enum kc_psa_level level, unsigned minor, const char *text, int n, const char *want)
{
	char out[4096];
	int r = eval(level, minor, text, out, sizeof(out), true);

	ck_assert_msg(r == n, "%s: %d failed checks, wanted %d (%s)", text, r, n, out);
	ck_assert_str_eq(out, want);
}

struct tcase {
	enum kc_psa_level	 level;
	unsigned		 minor;
	const char		*pod;
	int			 n;
	const char		*want;
};

static void
run_cases(const struct tcase *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		expect(t[i].level, t[i].minor, t[i].pod, t[i].n, t[i].want);
}

START_TEST(privileged)
{
	static const struct tcase t[] = {
		{ B, 0, "{'spec':{'containers':[{'name':'a'}]}}", 0, "" },
		{ B, 0, "{'spec':{'containers':[{'name':'a',"
		    "'securityContext':{'privileged':false}}]}}", 0, "" },
		{ B, 0, "{'spec':{'containers':[{'name':'main',"
		    "'securityContext':{'privileged':true}}]}}", 1,
		    "privileged (container \"main\" must not set "
		    "securityContext.privileged=true)" },
		{ B, 0, "{'spec':{'initContainers':[{'name':'i',"
		    "'securityContext':{'privileged':true}}],'containers':[{'name':'a',"
		    "'securityContext':{'privileged':true}},{'name':'b'}]}}", 1,
		    "privileged (containers \"i\", \"a\" must not set "
		    "securityContext.privileged=true)" },
		/* privileged is not a level: nothing is checked */
		{ KC_PSA_PRIVILEGED, 0, "{'spec':{'hostNetwork':true,'containers':[{'name':'a',"
		    "'securityContext':{'privileged':true}}]}}", 0, "" },
	};

	run_cases(t, KC_ARRAY_SIZE(t));
}
END_TEST

START_TEST(host_namespaces)
{
	static const struct tcase t[] = {
		{ B, 0, "{'spec':{'hostNetwork':false,'containers':[{'name':'a'}]}}", 0, "" },
		{ B, 0, "{'spec':{'hostNetwork':true,'containers':[{'name':'a'}]}}", 1,
		    "host namespaces (hostNetwork)" },
		{ B, 0, "{'spec':{'hostPID':true,'hostIPC':true,'hostNetwork':true}}", 1,
		    "host namespaces (hostIPC, hostNetwork, hostPID)" },
	};

	run_cases(t, KC_ARRAY_SIZE(t));
}
END_TEST

START_TEST(host_path_and_volumes)
{
	static const struct tcase t[] = {
		{ B, 0, "{'spec':{'volumes':[{'name':'a','emptyDir':{}}]}}", 0, "" },
		{ B, 0, "{'spec':{'volumes':[{'name':'root','hostPath':{'path':'/'}}]}}", 1,
		    "hostPath volumes (volume \"root\")" },
		{ B, 0, "{'spec':{'volumes':[{'name':'a','hostPath':{'path':'/'}},"
		    "{'name':'b','nfs':{}},{'name':'c','hostPath':{'path':'/x'}}]}}", 1,
		    "hostPath volumes (volumes \"a\", \"c\")" },
		/* restricted: restrictedVolumes replaces hostPathVolumes */
		{ R, 0, "{'spec':{'volumes':[{'name':'a','hostPath':{'path':'/'}},"
		    "{'name':'b','nfs':{}},{'name':'c','configMap':{}},{'name':'d','secret':{}},"
		    "{'name':'e','persistentVolumeClaim':{}},{'name':'f','projected':{}},"
		    "{'name':'g','downwardAPI':{}},{'name':'h','csi':{}},{'name':'i',"
		    "'ephemeral':{}},{'name':'j','image':{}},{'name':'k'}]," OKPOD "}}", 1,
		    "restricted volume types (volumes \"a\", \"b\", \"k\" use restricted volume "
		    "types \"hostPath\", \"nfs\", \"unknown\")" },
		{ R, 0, "{'spec':{'volumes':[{'name':'g','gitRepo':{}}]," OKPOD "}}", 1,
		    "restricted volume types (volume \"g\" uses restricted volume type "
		    "\"gitRepo\")" },
	};

	run_cases(t, KC_ARRAY_SIZE(t));
}
END_TEST

START_TEST(host_ports)
{
	static const struct tcase t[] = {
		{ B, 0, "{'spec':{'containers':[{'name':'a','ports':[{'containerPort':80},"
		    "{'containerPort':81,'hostPort':0}]}]}}", 0, "" },
		{ B, 0, "{'spec':{'containers':[{'name':'a','ports':[{'hostPort':8080}]}]}}", 1,
		    "hostPort (container \"a\" uses hostPort 8080)" },
		{ B, 0, "{'spec':{'initContainers':[{'name':'i','ports':[{'hostPort':9090}]}],"
		    "'containers':[{'name':'a','ports':[{'hostPort':8080},{'hostPort':10000},"
		    "{'hostPort':8080}]}]}}", 1,
		    "hostPort (containers \"i\", \"a\" use hostPorts 10000, 8080, 9090)" },
	};

	run_cases(t, KC_ARRAY_SIZE(t));
}
END_TEST

START_TEST(capabilities)
{
	static const struct tcase t[] = {
		{ B, 0, "{'spec':{'containers':[{'name':'a','securityContext':{'capabilities':"
		    "{'add':['CHOWN','NET_BIND_SERVICE','SYS_CHROOT']}}}]}}", 0, "" },
		{ B, 0, "{'spec':{'containers':[{'name':'a','securityContext':{'capabilities':"
		    "{'add':['IPC_LOCK','CHOWN','NET_RAW']}}},{'name':'b','securityContext':"
		    "{'capabilities':{'add':['IPC_LOCK']}}}]}}", 1,
		    "non-default capabilities (containers \"a\", \"b\" must not include "
		    "\"IPC_LOCK\", \"NET_RAW\" in securityContext.capabilities.add)" },
		/* restricted: drop ALL, add only NET_BIND_SERVICE */
		{ R, 0, "{'spec':{'containers':[{'name':'a','securityContext':{"
		    "'allowPrivilegeEscalation':false,'capabilities':{'drop':['ALL'],"
		    "'add':['NET_BIND_SERVICE']}}}]," OKPOD "}}", 0, "" },
		{ R, 0, "{'spec':{'containers':[{'name':'a','securityContext':{"
		    "'allowPrivilegeEscalation':false}},{'name':'b','securityContext':{"
		    "'allowPrivilegeEscalation':false,'capabilities':{'drop':['NET_RAW'],"
		    "'add':['CHOWN','IPC_LOCK']}}}]," OKPOD "}}", 1,
		    "unrestricted capabilities (containers \"a\", \"b\" must set "
		    "securityContext.capabilities.drop=[\"ALL\"]; container \"b\" must not "
		    "include \"CHOWN\", \"IPC_LOCK\" in securityContext.capabilities.add)" },
		/* before v1.22, restricted checks the baseline capabilities */
		{ R, 21, "{'spec':{'containers':[{'name':'a','securityContext':{"
		    "'allowPrivilegeEscalation':false,'capabilities':{'add':['IPC_LOCK']}}}],"
		    OKPOD "}}", 1,
		    "non-default capabilities (container \"a\" must not include \"IPC_LOCK\" in "
		    "securityContext.capabilities.add)" },
		/* from v1.25 a Windows pod is exempt */
		{ R, 25, "{'spec':{'os':{'name':'windows'},'containers':[{'name':'a'}],"
		    "'securityContext':{'runAsNonRoot':true}}}", 0, "" },
		{ R, 24, "{'spec':{'os':{'name':'windows'},'containers':[{'name':'a',"
		    "'securityContext':{'allowPrivilegeEscalation':false,'capabilities':"
		    "{'drop':['ALL']}}}],'securityContext':{'runAsNonRoot':true,"
		    "'seccompProfile':{'type':'RuntimeDefault'}}}}", 0, "" },
	};

	run_cases(t, KC_ARRAY_SIZE(t));
}
END_TEST

START_TEST(apparmor)
{
	static const struct tcase t[] = {
		{ B, 0, "{'metadata':{'annotations':{"
		    "'container.apparmor.security.beta.kubernetes.io/a':'runtime/default',"
		    "'container.apparmor.security.beta.kubernetes.io/b':'localhost/x',"
		    "'container.apparmor.security.beta.kubernetes.io/c':''}},"
		    "'spec':{'securityContext':{'appArmorProfile':{'type':'RuntimeDefault'}},"
		    "'containers':[{'name':'a','securityContext':{'appArmorProfile':"
		    "{'type':'Localhost'}}}]}}", 0, "" },
		{ B, 0, "{'spec':{'securityContext':{'appArmorProfile':{'type':'Unconfined'}}}}",
		    1, "forbidden AppArmor profile (pod must not set AppArmor profile type to "
		    "\"Unconfined\")" },
		{ B, 0, "{'spec':{'securityContext':{'appArmorProfile':{'type':'RuntimeDefault'}},"
		    "'containers':[{'name':'foo','securityContext':{'appArmorProfile':"
		    "{'type':'Unconfined'}}}]}}", 1,
		    "forbidden AppArmor profile (container \"foo\" must not set AppArmor profile "
		    "type to \"Unconfined\")" },
		{ B, 0, "{'metadata':{'annotations':{"
		    "'container.apparmor.security.beta.kubernetes.io/a':'unconfined',"
		    "'container.apparmor.security.beta.kubernetes.io/b':'bogus'}}}", 1,
		    "forbidden AppArmor profiles (annotations must not set AppArmor profile type "
		    "to \"container.apparmor.security.beta.kubernetes.io/a=\"unconfined\"\", "
		    "\"container.apparmor.security.beta.kubernetes.io/b=\"bogus\"\")" },
		{ B, 0, "{'metadata':{'annotations':{"
		    "'container.apparmor.security.beta.kubernetes.io/a':'unconfined'}},"
		    "'spec':{'securityContext':{'appArmorProfile':{'type':'Unconfined'}}}}", 1,
		    "forbidden AppArmor profiles (pod and annotation must not set AppArmor "
		    "profile type to \"Unconfined\", "
		    "\"container.apparmor.security.beta.kubernetes.io/a=\"unconfined\"\")" },
	};

	run_cases(t, KC_ARRAY_SIZE(t));
}
END_TEST

START_TEST(selinux)
{
	static const struct tcase t[] = {
		{ B, 0, "{'spec':{'securityContext':{'seLinuxOptions':{'type':'container_t',"
		    "'level':'s0:c1'}},'containers':[{'name':'a','securityContext':"
		    "{'seLinuxOptions':{'type':'container_init_t'}}}]}}", 0, "" },
		{ B, 0, "{'spec':{'securityContext':{'seLinuxOptions':{'type':'foo'}},"
		    "'containers':[{'name':'a','securityContext':{'seLinuxOptions':"
		    "{'type':'bar','user':'u'}}},{'name':'b','securityContext':"
		    "{'seLinuxOptions':{'role':'r'}}}]}}", 1,
		    "seLinuxOptions (pod and containers \"a\", \"b\" set forbidden "
		    "securityContext.seLinuxOptions: types \"bar\", \"foo\"; user may not be "
		    "set; role may not be set)" },
		{ B, 0, "{'spec':{'containers':[{'name':'a','securityContext':"
		    "{'seLinuxOptions':{'user':'u'}}}]}}", 1,
		    "seLinuxOptions (container \"a\" set forbidden "
		    "securityContext.seLinuxOptions: user may not be set)" },
		/* container_engine_t from v1.31 */
		{ B, 31, "{'spec':{'securityContext':{'seLinuxOptions':"
		    "{'type':'container_engine_t'}}}}", 0, "" },
		{ B, 30, "{'spec':{'securityContext':{'seLinuxOptions':"
		    "{'type':'container_engine_t'}}}}", 1,
		    "seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: "
		    "type \"container_engine_t\")" },
	};

	run_cases(t, KC_ARRAY_SIZE(t));
}
END_TEST

START_TEST(proc_mount)
{
	static const struct tcase t[] = {
		{ B, 0, "{'spec':{'containers':[{'name':'a','securityContext':"
		    "{'procMount':'Default'}}]}}", 0, "" },
		{ B, 0, "{'spec':{'containers':[{'name':'a','securityContext':"
		    "{'procMount':'Unmasked'}},{'name':'b','securityContext':"
		    "{'procMount':'Unmasked'}}]}}", 1,
		    "procMount (containers \"a\", \"b\" must not set securityContext.procMount "
		    "to \"Unmasked\")" },
		/* v1.35: baseline relaxes it for user namespace pods, restricted does not */
		{ B, 35, "{'spec':{'hostUsers':false,'containers':[{'name':'a',"
		    "'securityContext':{'procMount':'Unmasked'}}]}}", 0, "" },
		{ B, 34, "{'spec':{'hostUsers':false,'containers':[{'name':'a',"
		    "'securityContext':{'procMount':'Unmasked'}}]}}", 1,
		    "procMount (container \"a\" must not set securityContext.procMount to "
		    "\"Unmasked\")" },
		{ R, 0, "{'spec':{'hostUsers':false,'containers':[{'name':'a',"
		    "'securityContext':{'procMount':'Unmasked','allowPrivilegeEscalation':false,"
		    "'capabilities':{'drop':['ALL']}}}]," OKPOD "}}", 1,
		    "procMount (container \"a\" must not set securityContext.procMount to "
		    "\"Unmasked\")" },
	};

	run_cases(t, KC_ARRAY_SIZE(t));
}
END_TEST

START_TEST(seccomp)
{
	static const struct tcase t[] = {
		{ B, 0, "{'spec':{'securityContext':{'seccompProfile':{'type':'Localhost'}},"
		    "'containers':[{'name':'a','securityContext':{'seccompProfile':"
		    "{'type':'RuntimeDefault'}}}]}}", 0, "" },
		{ B, 0, "{'spec':{'securityContext':{'seccompProfile':{'type':'Unconfined'}},"
		    "'containers':[{'name':'a','securityContext':{'seccompProfile':"
		    "{'type':'Unconfined'}}},{'name':'b'}]}}", 1,
		    "seccompProfile (pod and container \"a\" must not set "
		    "securityContext.seccompProfile.type to \"Unconfined\")" },
		/* before v1.19: the annotations */
		{ B, 18, "{'metadata':{'annotations':{"
		    "'seccomp.security.alpha.kubernetes.io/pod':'unconfined',"
		    "'container.seccomp.security.alpha.kubernetes.io/a':'docker/default',"
		    "'container.seccomp.security.alpha.kubernetes.io/b':'unconfined'}},"
		    "'spec':{'containers':[{'name':'a'},{'name':'b'}]}}", 1,
		    "seccompProfile (forbidden annotations "
		    "container.seccomp.security.alpha.kubernetes.io/b=\"unconfined\", "
		    "seccomp.security.alpha.kubernetes.io/pod=\"unconfined\")" },
		{ B, 19, "{'metadata':{'annotations':{"
		    "'seccomp.security.alpha.kubernetes.io/pod':'unconfined'}}}", 0, "" },
		/* restricted: required, at pod level or on every container */
		{ R, 0, "{'spec':{'securityContext':{'runAsNonRoot':true},'containers':["
		    "{'name':'a'," OKSC "},{'name':'b','securityContext':{"
		    "'allowPrivilegeEscalation':false,'capabilities':{'drop':['ALL']},"
		    "'seccompProfile':{'type':'Localhost'}}}]}}", 1,
		    "seccompProfile (pod or container \"a\" must set "
		    "securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")" },
		{ R, 0, "{'spec':{'securityContext':{'runAsNonRoot':true,'seccompProfile':"
		    "{'type':'Unconfined'}},'containers':[{'name':'a'," OKSC "}]}}", 1,
		    "seccompProfile (pod must not set securityContext.seccompProfile.type to "
		    "\"Unconfined\")" },
		/* restricted before v1.19 evaluates the baseline (annotation) check */
		{ R, 18, "{'spec':{'securityContext':{'runAsNonRoot':true},"
		    "'containers':[{'name':'a'," OKSC "}]}}", 0, "" },
	};

	run_cases(t, KC_ARRAY_SIZE(t));
}
END_TEST

START_TEST(sysctls)
{
	static const struct tcase t[] = {
		{ B, 0, "{'spec':{'securityContext':{'sysctls':[{'name':'kernel.shm_rmid_forced',"
		    "'value':'0'},{'name':'net.ipv4.tcp_rmem','value':'1'}]}}}", 0, "" },
		{ B, 0, "{'spec':{'securityContext':{'sysctls':[{'name':'a','value':'0'},"
		    "{'name':'kernel.shm_rmid_forced'},{'name':'b'}]}}}", 1,
		    "forbidden sysctls (a, b)" },
		{ B, 31, "{'spec':{'securityContext':{'sysctls':[{'name':'net.ipv4.tcp_rmem'}]}}}",
		    1, "forbidden sysctls (net.ipv4.tcp_rmem)" },
		{ B, 26, "{'spec':{'securityContext':{'sysctls':"
		    "[{'name':'net.ipv4.ip_local_reserved_ports'}]}}}", 1,
		    "forbidden sysctls (net.ipv4.ip_local_reserved_ports)" },
		{ B, 29, "{'spec':{'securityContext':{'sysctls':"
		    "[{'name':'net.ipv4.tcp_keepalive_time'}]}}}", 0, "" },
	};

	run_cases(t, KC_ARRAY_SIZE(t));
}
END_TEST

START_TEST(host_process_and_probes)
{
	static const struct tcase t[] = {
		{ B, 0, "{'spec':{'securityContext':{'windowsOptions':{'hostProcess':true}},"
		    "'containers':[{'name':'a','securityContext':{'windowsOptions':"
		    "{'hostProcess':true}}}]}}", 1,
		    "hostProcess (pod and container \"a\" must not set "
		    "securityContext.windowsOptions.hostProcess=true)" },
		{ B, 0, "{'spec':{'containers':[{'name':'b','livenessProbe':{'httpGet':"
		    "{'host':'10.0.0.1','port':80}}},{'name':'a','readinessProbe':{'tcpSocket':"
		    "{'host':'example.com'}},'lifecycle':{'preStop':{'httpGet':"
		    "{'host':'10.0.0.1'}}}}"
		    ",{'name':'c','startupProbe':{'httpGet':{'host':''}}}]}}", 1,
		    "probe or lifecycle host (containers \"a\", \"b\" use probe or lifecycle "
		    "hosts \"10.0.0.1\", \"example.com\")" },
		/* from v1.34 only */
		{ B, 33, "{'spec':{'containers':[{'name':'a','livenessProbe':{'httpGet':"
		    "{'host':'10.0.0.1'}}}]}}", 0, "" },
		{ B, 0, "{'spec':{'securityContext':{'windowsOptions':{'hostProcess':false}},"
		    "'containers':[{'name':'a','securityContext':{'windowsOptions':"
		    "{'hostProcess':false}},'readinessProbe':{'httpGet':{'port':80}},"
		    "'lifecycle':{'postStart':{'tcpSocket':{'port':80}}}}]}}", 0, "" },
		{ B, 0, "{'spec':{'initContainers':[{'name':'i','securityContext':"
		    "{'windowsOptions':{'hostProcess':true}}}],'containers':[{'name':'a',"
		    "'lifecycle':{'postStart':{'tcpSocket':{'host':'h'}}}}]}}", 2,
		    "probe or lifecycle host (container \"a\" uses probe or lifecycle host \"h\"), "
		    "hostProcess (container \"i\" must not set "
		    "securityContext.windowsOptions.hostProcess=true)" },
	};

	run_cases(t, KC_ARRAY_SIZE(t));
}
END_TEST

START_TEST(restricted_users)
{
	static const struct tcase t[] = {
		{ R, 0, "{'spec':{'securityContext':{'runAsNonRoot':false,'runAsUser':0,"
		    "'seccompProfile':{'type':'RuntimeDefault'}},'containers':[{'name':'a',"
		    "'securityContext':{'allowPrivilegeEscalation':false,'capabilities':"
		    "{'drop':['ALL']},'runAsNonRoot':false,'runAsUser':0}},"
		    "{'name':'b'," OKSC "}]}}",
		    2, "runAsNonRoot != true (pod and container \"a\" must not set "
		    "securityContext.runAsNonRoot=false), runAsUser=0 (pod and container \"a\" "
		    "must not set runAsUser=0)" },
		{ R, 0, "{'spec':{'securityContext':{'seccompProfile':{'type':'RuntimeDefault'}},"
		    "'containers':[{'name':'a'," OKSC "},{'name':'b','securityContext':{"
		    "'allowPrivilegeEscalation':false,'capabilities':{'drop':['ALL']},"
		    "'runAsNonRoot':true,'runAsUser':1000}}]}}", 1,
		    "runAsNonRoot != true (pod or container \"a\" must set "
		    "securityContext.runAsNonRoot=true)" },
		/* runAsUser=0 only from v1.23; user namespace pods exempt from v1.35 */
		{ R, 22, "{'spec':{" OKPOD ",'containers':[{'name':'a','securityContext':{"
		    "'allowPrivilegeEscalation':false,'capabilities':{'drop':['ALL']},"
		    "'runAsUser':0}}]}}", 0, "" },
		{ R, 35, "{'spec':{'hostUsers':false,'securityContext':{'seccompProfile':"
		    "{'type':'RuntimeDefault'},'runAsUser':0},"
		    "'containers':[{'name':'a'," OKSC "}]}}",
		    0, "" },
		{ R, 34, "{'spec':{'hostUsers':false,'securityContext':{'seccompProfile':"
		    "{'type':'RuntimeDefault'},'runAsUser':0},"
		    "'containers':[{'name':'a'," OKSC "}]}}",
		    2, "runAsNonRoot != true (pod or container \"a\" must set "
		    "securityContext.runAsNonRoot=true), runAsUser=0 (pod must not set "
		    "runAsUser=0)" },
	};

	run_cases(t, KC_ARRAY_SIZE(t));
}
END_TEST

START_TEST(restricted_pod)
{
	static const struct tcase t[] = {
		/* the usual restricted pod */
		{ R, 0, "{'spec':{" OKPOD ",'containers':[{'name':'a'," OKSC "}]}}", 0, "" },
		/* a bare pod: upstream's order, baseline checks first */
		{ R, 0, "{'spec':{'hostNetwork':true,'containers':[{'name':'main',"
		    "'securityContext':{'privileged':true}}]}}", 6,
		    "host namespaces (hostNetwork), privileged (container \"main\" must not set "
		    "securityContext.privileged=true), allowPrivilegeEscalation != false "
		    "(container \"main\" must set securityContext.allowPrivilegeEscalation=false), "
		    "unrestricted capabilities (container \"main\" must set "
		    "securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or "
		    "container \"main\" must set securityContext.runAsNonRoot=true), "
		    "seccompProfile "
		    "(pod or container \"main\" must set securityContext.seccompProfile.type to "
		    "\"RuntimeDefault\" or \"Localhost\")" },
		/* allowPrivilegeEscalation: false is the only passing value */
		{ R, 0, "{'spec':{" OKPOD ",'initContainers':[{'name':'i','securityContext':{"
		    "'allowPrivilegeEscalation':true,'capabilities':{'drop':['ALL']}}}],"
		    "'containers':[{'name':'a'," OKSC "}]}}", 1,
		    "allowPrivilegeEscalation != false (container \"i\" must set "
		    "securityContext.allowPrivilegeEscalation=false)" },
		/* v1.25 exempts Windows pods from it too */
		{ R, 25, "{'spec':{'os':{'name':'windows'}," OKPOD ",'containers':[{'name':'a',"
		    "'securityContext':{'allowPrivilegeEscalation':true}}]}}", 0, "" },
		/* allowPrivilegeEscalation only from v1.8 */
		{ R, 7, "{'spec':{" OKPOD ",'containers':[{'name':'a'}]}}", 0, "" },
		{ R, KC_PSA_MINOR_V1_0, "{'spec':{" OKPOD ",'containers':[{'name':'a'}]}}", 0, "" },
		/* ephemeral containers are checked too */
		{ B, 0, "{'spec':{'containers':[{'name':'a'}],'ephemeralContainers':[{'name':'dbg',"
		    "'securityContext':{'privileged':true}}]}}", 1,
		    "privileged (container \"dbg\" must not set securityContext.privileged=true)" },
	};

	run_cases(t, KC_ARRAY_SIZE(t));
}
END_TEST

START_TEST(reasons_only)
{
	char out[512];

	ck_assert_int_eq(eval(B, 0, "{'spec':{'hostPID':true,'volumes':[{'name':'r',"
	    "'hostPath':{'path':'/'}}],'containers':[{'name':'a','securityContext':"
	    "{'privileged':true}}]}}", out, sizeof(out), false), 3);
	ck_assert_str_eq(out, "host namespaces, hostPath volumes, privileged");
	/* a cut text stays terminated and counts what it wanted */
	ck_assert_int_eq(eval(B, 0, "{'spec':{'hostPID':true,'volumes':[{'name':'r',"
	    "'hostPath':{'path':'/'}}]}}", out, 10, true), 2);
	ck_assert_uint_lt(strlen(out), 10);
	ck_assert_int_eq(eval(B, 0, "{}", out, sizeof(out), true), 0);
	ck_assert_str_eq(out, "");
}
END_TEST

/* Unvalidated templates (a Run's): wrong types read as absent, nothing breaks. */
START_TEST(wrong_types)
{
	static const char *const pods[] = {
		"{'metadata':[],'spec':[]}",
		"{'metadata':{'annotations':[1]},'spec':{'containers':'x','volumes':{},"
		    "'securityContext':[]}}",
		"{'spec':{'containers':[1,null,'c',{'name':5,'securityContext':'y',"
		    "'ports':[{'hostPort':'80'},3],'livenessProbe':[],'lifecycle':{'preStop':5}}],"
		    "'volumes':[null,{'name':'v','hostPath':null},{'name':'w','hostPath':'/'}],"
		    "'securityContext':{'sysctls':[{'name':3},null],'seLinuxOptions':'x',"
		    "'runAsUser':'0','runAsNonRoot':'true','seccompProfile':null}}}",
		"{'metadata':{'annotations':{"
		    "'container.apparmor.security.beta.kubernetes.io/a':5}},'spec':{'containers':"
		    "[{'name':'a','securityContext':{'capabilities':{'add':[1,null,{}],"
		    "'drop':'ALL'},'privileged':'true','procMount':7,'seLinuxOptions':"
		    "{'type':1,'user':[]}}}]}}",
	};
	char out[2048];

	for (size_t i = 0; i < KC_ARRAY_SIZE(pods); i++) {
		ck_assert_int_ge(eval(R, 0, pods[i], out, sizeof(out), true), 0);
		ck_assert_int_ge(eval(B, 18, pods[i], out, sizeof(out), true), 0);
	}
	/* a field set to a value of the wrong type is a bad value: the safe side */
	expect(B, 0, pods[2], 2, "hostPath volumes (volume \"w\"), forbidden sysctls");
	expect(B, 0, pods[3], 3, "non-default capabilities (container \"a\" must not include "
	    "\"\", \"1\", \"{ }\" in securityContext.capabilities.add), privileged (container "
	    "\"a\" must not set securityContext.privileged=true), procMount (container \"a\" "
	    "must not set securityContext.procMount to \"\")");
}
END_TEST

START_TEST(no_spec)
{
	struct kc_psa_policy p = { R, 0 };
	char out[64];
	struct kc_sbuf b;

	kc_sbuf_init(&b, out, sizeof(out));
	ck_assert_int_eq(kc_psa_check(NULL, NULL, &p, &b), 0);
	ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(alloc_failure)
{
	struct json_object *o = pod("{'spec':{'containers':[{'name':'a','securityContext':"
	    "{'privileged':true,'capabilities':{'add':['NET_RAW']}}}]}}");
	struct kc_psa_policy p = { R, 0 };
	char out[1024];
	struct kc_sbuf b;
	int r;

	for (size_t budget = 0;; budget++) {
		kc_sbuf_init(&b, out, sizeof(out));
		fail_alloc_after(budget);
		r = kc_psa_check(NULL, kc_json_get(o, "spec"), &p, &b);
		fail_alloc_after(SIZE_MAX);
		if (r >= 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
	}
	ck_assert_int_eq(r, 5);
	json_object_put(o);
}
END_TEST

START_TEST(levels_and_versions)
{
	enum kc_psa_level l = KC_PSA_BASELINE;
	unsigned m = 7;
	struct kc_psa_policy p = { R, 25 };
	char buf[KC_PSA_POLICY_NAME_MAX];

	ck_assert_int_eq(kc_psa_parse_level("privileged", &l), 0);
	ck_assert_int_eq(l, KC_PSA_PRIVILEGED);
	ck_assert_int_eq(kc_psa_parse_level("restricted", &l), 0);
	ck_assert_int_eq(l, KC_PSA_RESTRICTED);
	ck_assert_int_eq(kc_psa_parse_level("Baseline", &l), -EINVAL);
	ck_assert_int_eq(kc_psa_parse_level("", &l), -EINVAL);
	ck_assert_int_eq(l, KC_PSA_RESTRICTED);
	ck_assert_str_eq(kc_psa_level_name(KC_PSA_BASELINE), "baseline");

	ck_assert_int_eq(kc_psa_parse_version("latest", &m), 0);
	ck_assert_uint_eq(m, 0);
	ck_assert_int_eq(kc_psa_parse_version("v1.25", &m), 0);
	ck_assert_uint_eq(m, 25);
	ck_assert_int_eq(kc_psa_parse_version("v1.0", &m), 0);
	ck_assert_uint_eq(m, KC_PSA_MINOR_V1_0);
	ck_assert_int_eq(kc_psa_parse_version("v1.999", &m), 0);
	ck_assert_uint_eq(m, 999);
	static const char *const bad[] = { "", "1.25", "v1", "v1.", "v1.01", "v2.0", "v1.2a",
	    "v1.-1", "v1.+1", "Latest", "v1.99999999999", " v1.1", "v1.1 " };
	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++)
		ck_assert_msg(kc_psa_parse_version(bad[i], &m) == -EINVAL, "%s", bad[i]);
	ck_assert_uint_eq(m, 999);

	ck_assert_str_eq(kc_psa_policy_name(&p, buf, sizeof(buf)), "restricted:v1.25");
	/* a v1.32 server evaluates latest and newer as v1.32, older as they are */
	ck_assert_uint_eq(kc_psa_emulate(&p, 32).minor, 25);
	ck_assert_uint_eq(kc_psa_emulate(&p, 24).minor, 24);
	ck_assert_uint_eq(kc_psa_emulate(&p, 0).minor, 25);
	ck_assert_int_eq(kc_psa_emulate(&p, 24).level, R);
	p.minor = 0;
	ck_assert_uint_eq(kc_psa_emulate(&p, 32).minor, 32);
	p.minor = KC_PSA_MINOR_V1_0;
	ck_assert_uint_eq(kc_psa_emulate(&p, 32).minor, KC_PSA_MINOR_V1_0);
	p.minor = 25;
	p = (struct kc_psa_policy){ B, 0 };
	ck_assert_str_eq(kc_psa_policy_name(&p, buf, sizeof(buf)), "baseline:latest");
	p = (struct kc_psa_policy){ KC_PSA_PRIVILEGED, KC_PSA_MINOR_V1_0 };
	ck_assert_str_eq(kc_psa_policy_name(&p, buf, sizeof(buf)), "privileged:v1.0");
}
END_TEST

START_TEST(namespace_labels)
{
	struct json_object *o = pod("{'pod-security.kubernetes.io/enforce':'baseline',"
	    "'pod-security.kubernetes.io/enforce-version':'v1.30',"
	    "'pod-security.kubernetes.io/warn':'restricted',"
	    "'pod-security.kubernetes.io/audit':'bogus',"
	    "'pod-security.kubernetes.io/audit-version':'v2'}");
	struct json_object *bad = pod("{'pod-security.kubernetes.io/enforce':'strict'}");
	struct kc_psa_policy p;
	char err[512];
	struct kc_sbuf b;

	kc_sbuf_init(&b, err, sizeof(err));
	ck_assert_int_eq(kc_psa_namespace_policy(o, "enforce", &p, &b), 0);
	ck_assert_int_eq(p.level, B);
	ck_assert_uint_eq(p.minor, 30);
	ck_assert_str_eq(err, "");
	ck_assert_int_eq(kc_psa_namespace_policy(o, "warn", &p, NULL), 0);
	ck_assert_int_eq(p.level, R);
	ck_assert_uint_eq(p.minor, 0);
	/* a bad audit (or warn) level fails open */
	ck_assert_int_eq(kc_psa_namespace_policy(o, "audit", &p, &b), 2);
	ck_assert_int_eq(p.level, KC_PSA_PRIVILEGED);
	ck_assert_uint_eq(p.minor, 0);
	ck_assert_str_eq(err, "[metadata.labels[pod-security.kubernetes.io/audit]: Invalid "
	    "value: \"bogus\": must be one of privileged, baseline, restricted, "
	    "metadata.labels[pod-security.kubernetes.io/audit-version]: Invalid value: \"v2\": "
	    "must be \"latest\" or \"v1.x\"]");
	/* a bad enforce level enforces restricted */
	kc_sbuf_init(&b, err, sizeof(err));
	ck_assert_int_eq(kc_psa_namespace_policy(bad, "enforce", &p, &b), 1);
	ck_assert_int_eq(p.level, R);
	ck_assert_str_eq(err, "metadata.labels[pod-security.kubernetes.io/enforce]: Invalid "
	    "value: \"strict\": must be one of privileged, baseline, restricted");
	/* no labels: privileged:latest */
	ck_assert_int_eq(kc_psa_namespace_policy(NULL, "enforce", &p, NULL), 0);
	ck_assert_int_eq(p.level, KC_PSA_PRIVILEGED);
	ck_assert_uint_eq(p.minor, 0);
	ck_assert_int_eq(kc_psa_namespace_policy(NULL, "deny", &p, NULL), -EINVAL);
	/* warn follows a stricter enforce when unset */
	ck_assert_int_eq(kc_psa_namespace_policy(bad, "warn", &p, NULL), 0);
	ck_assert_int_eq(p.level, R);
	json_object_put(bad);
	bad = pod("{'pod-security.kubernetes.io/enforce':'baseline',"
	    "'pod-security.kubernetes.io/enforce-version':'v1.20',"
	    "'pod-security.kubernetes.io/audit':'restricted'}");
	ck_assert_int_eq(kc_psa_namespace_policy(bad, "warn", &p, NULL), 0);
	ck_assert_int_eq(p.level, B);
	ck_assert_uint_eq(p.minor, 20);
	ck_assert_int_eq(kc_psa_namespace_policy(bad, "audit", &p, NULL), 0);
	ck_assert_int_eq(p.level, R);
	ck_assert_uint_eq(p.minor, 0);
	json_object_put(bad);
	bad = pod("{'pod-security.kubernetes.io/enforce':'baseline',"
	    "'pod-security.kubernetes.io/warn-version':'v1.20'}");
	ck_assert_int_eq(kc_psa_namespace_policy(bad, "warn", &p, NULL), 0);
	ck_assert_int_eq(p.level, B);
	ck_assert_uint_eq(p.minor, 20);
	json_object_put(o);
	json_object_put(bad);
}
END_TEST

Suite *
podsecurity_suite(void)
{
	Suite *s = suite_create("podsecurity");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, privileged);
	tcase_add_test(tc, host_namespaces);
	tcase_add_test(tc, host_path_and_volumes);
	tcase_add_test(tc, host_ports);
	tcase_add_test(tc, capabilities);
	tcase_add_test(tc, apparmor);
	tcase_add_test(tc, selinux);
	tcase_add_test(tc, proc_mount);
	tcase_add_test(tc, seccomp);
	tcase_add_test(tc, sysctls);
	tcase_add_test(tc, host_process_and_probes);
	tcase_add_test(tc, restricted_users);
	tcase_add_test(tc, restricted_pod);
	tcase_add_test(tc, reasons_only);
	tcase_add_test(tc, wrong_types);
	tcase_add_test(tc, no_spec);
	tcase_add_test(tc, alloc_failure);
	tcase_add_test(tc, levels_and_versions);
	tcase_add_test(tc, namespace_labels);
	suite_add_tcase(s, tc);
	return s;
}

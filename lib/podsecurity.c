/*
 * podsecurity.c: the Pod Security Standards as k8s.io/pod-security-admission
 * evaluates them.
 *
 * Model. Upstream registers one check per control, each at a level
 * (baseline or restricted) with one or more revisions by minimum policy
 * version. Evaluating "restricted:v1.N" runs every baseline check but
 * those a restricted check of v1.N overrides, then the restricted checks;
 * "baseline:v1.N" runs the baseline checks. Checks run in upstream's
 * order: baseline IDs sorted, then restricted IDs sorted (Go's byte order,
 * so "seLinuxOptions" sorts before "seccompProfile_baseline"). A version
 * newer than the newest revision anywhere (KC_PSA_MINOR_MAX), and
 * "latest", evaluate as that newest one.
 *
 * Every failed check gives a reason ("privileged") and a detail (which
 * containers, which values). The aggregate text is the reasons joined by
 * ", ", each followed by its detail in parentheses: what kube-apiserver
 * writes after 'violates PodSecurity "baseline:latest": '. Details use
 * upstream's helpers: joinQuote ("a", "b", no escaping), pluralize, and
 * sets that print sorted and unique.
 *
 * The table below is the only list of checks; each check function reads
 * the pod's JSON (metadata and spec, of a Pod or a pod template) and
 * writes through struct emit, which opens the parentheses only when a
 * detail is non-empty and drops details altogether for the reasons-only
 * form. Allocation happens only for the lists and sets of names a check
 * collects; a failure there ends the evaluation with -ENOMEM.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/podsecurity.h>
#include <kc/sbuf.h>
#include <kc/str.h>

/* Keys of the pod annotations upstream's checks read. */
#define APPARMOR_ANNOTATION_PREFIX	"container.apparmor.security.beta.kubernetes.io/"
#define SECCOMP_ANNOTATION_POD		"seccomp.security.alpha.kubernetes.io/pod"
#define SECCOMP_ANNOTATION_PREFIX	"container.seccomp.security.alpha.kubernetes.io/"

/*
 * Lists and sets of strings
 */

/* Owned copies; a set is a list that is sorted and made unique before use. */
struct strs {
	char	**v;
	size_t	  n, cap;
	int	  err;		/* -ENOMEM once an add failed */
};

static void
strs_add_len(struct strs *l, const char *s, size_t len)
{
	char *c;

	if (l->err < 0)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		char **v = kc_reallocarray(l->v, cap, sizeof(*v));

		if (v == NULL) {
			l->err = -ENOMEM;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	if ((c = kc_strndup(s, len)) == NULL) {
		l->err = -ENOMEM;
		return;
	}
	l->v[l->n++] = c;
}

static void
strs_add(struct strs *l, const char *s)
{
	s = s != NULL ? s : "";
	strs_add_len(l, s, strlen(s));
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts by bytes (Go's string order) and drops repeats: sets.List(). */
static void
strs_set(struct strs *l)
{
	size_t j = 0;

	if (l->n == 0)
		return;
	qsort(l->v, l->n, sizeof(*l->v), cmp_str);
	for (size_t i = 1; i < l->n; i++) {
		if (strcmp(l->v[i], l->v[j]) == 0)
			l->v[i] = kc_free(l->v[i]);
		else
			l->v[++j] = l->v[i];
	}
	l->n = j + 1;
}

static void
strs_free(struct strs *l)
{
	for (size_t i = 0; i < l->n; i++)
		kc_free(l->v[i]);
	l->v = kc_free(l->v);
	l->n = l->cap = 0;
}

/*
 * Output
 */

struct emit {
	struct kc_sbuf	*sb;
	bool		 details;	/* false: the reasons only */
	int		 nfail;
	bool		 open;		/* " (" written for this check */
};

static void
fail(struct emit *e, const char *reason)
{
	if (e->nfail++ > 0)
		kc_sbuf_puts(e->sb, ", ");
	kc_sbuf_puts(e->sb, reason);
	e->open = false;
}

static void
det(struct emit *e, const char *s)
{
	if (!e->details || s == NULL || *s == '\0')
		return;
	if (!e->open) {
		kc_sbuf_puts(e->sb, " (");
		e->open = true;
	}
	kc_sbuf_puts(e->sb, s);
}

static void
done(struct emit *e)
{
	if (e->open)
		kc_sbuf_putc(e->sb, ')');
	e->open = false;
}

static const char *
plural(size_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* joinQuote: "a", "b" (quotes added, nothing escaped). */
static void
det_joinquote(struct emit *e, const struct strs *l)
{
	for (size_t i = 0; i < l->n; i++) {
		det(e, i == 0 ? "\"" : "\", \"");
		det(e, l->v[i]);
	}
	if (l->n > 0)
		det(e, "\"");
}

/* strings.Join(l, sep) */
static void
det_join(struct emit *e, const struct strs *l, const char *sep)
{
	for (size_t i = 0; i < l->n; i++) {
		if (i > 0)
			det(e, sep);
		det(e, l->v[i]);
	}
}

/* 'container "a"' / 'containers "a", "b"' */
static void
det_containers(struct emit *e, const struct strs *names)
{
	det(e, plural(names->n, "container ", "containers "));
	det_joinquote(e, names);
}

/* "pod and containers "a", "b"": who set a bad value. */
static void
det_setters(struct emit *e, bool pod, const struct strs *containers)
{
	if (pod)
		det(e, "pod");
	if (containers->n > 0) {
		if (pod)
			det(e, " and ");
		det_containers(e, containers);
	}
}

/*
 * Reading the pod
 */

struct pod {
	const struct json_object *meta;
	const struct json_object *spec;
	unsigned		  minor;	/* the version evaluated, 0..KC_PSA_MINOR_MAX */
};

static const char *const container_lists[] = {
	"initContainers", "containers", "ephemeralContainers",
};

/* Loops (c) over every container: init, regular, ephemeral (upstream's order). */
#define FOREACH_CONTAINER(pod, c)						\
	for (size_t fe_l_ = 0; fe_l_ < KC_ARRAY_SIZE(container_lists); fe_l_++)	\
		for (size_t fe_i_ = 0, fe_n_ = arr_len((pod)->spec,		\
		    container_lists[fe_l_]); fe_i_ < fe_n_; fe_i_++)		\
			if (((c) = arr_item((pod)->spec, container_lists[fe_l_],	\
			    fe_i_)) != NULL)

static size_t
arr_len(const struct json_object *o, const char *key)
{
	struct json_object *a = kc_json_arr_of(o, key);

	return a != NULL ? json_object_array_length(a) : 0;
}

static const struct json_object *
arr_item(const struct json_object *o, const char *key, size_t i)
{
	struct json_object *it = json_object_array_get_idx(kc_json_arr_of(o, key), i);

	return json_object_is_type(it, json_type_object) ? it : NULL;
}

static const char *
name_of(const struct json_object *c)
{
	const char *n = kc_json_str(c, "name");

	return n != NULL ? n : "";
}

/*
 * Set and not false: a JSON true, or a value of the wrong type (an
 * unvalidated template's), which counts as the violation it may mean.
 */
#define is_true(o, ...)		set_not_false(kc_json_get((o), __VA_ARGS__))

static bool
set_not_false(const struct json_object *v)
{
	return v != NULL && (!json_object_is_type(v, json_type_boolean) ||
	    json_object_get_boolean(v));
}

static bool
is_windows(const struct pod *p)
{
	const char *os = kc_json_str(p->spec, "os", "name");

	return os != NULL && strcmp(os, "windows") == 0;
}

/* spec.hostUsers == false: a user namespace pod (relaxed from v1.35). */
static bool
user_namespace(const struct pod *p)
{
	struct json_object *h = kc_json_get(p->spec, "hostUsers");

	return json_object_is_type(h, json_type_boolean) && !json_object_get_boolean(h);
}

static const char *
annotation(const struct pod *p, const char *key)
{
	return kc_json_str(p->meta, "annotations", key);
}

/* Appends k="v" (Go's %q of v) to 'l'. */
static void
add_key_value(struct strs *l, const char *k, const char *v)
{
	char buf[1024];
	struct kc_sbuf b;

	kc_sbuf_init(&b, buf, sizeof(buf));
	kc_sbuf_puts(&b, k);
	kc_sbuf_putc(&b, '=');
	kc_sbuf_quote(&b, v, strlen(v));
	strs_add(l, buf);
}

static bool
in_list(const char *s, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strcmp(s, *list) == 0)
			return true;
	return false;
}

/*
 * The checks. Each returns 0 (allowed, or its failure written) or
 * -ENOMEM.
 */

typedef int check_fn(const struct pod *, struct emit *);

static bool
apparmor_ok(const char *type)
{
	return type != NULL && (strcmp(type, "RuntimeDefault") == 0 ||
	    strcmp(type, "Localhost") == 0);
}

/* The beta annotations' forbidden profiles, as k="v". */
static void
apparmor_annotations(const struct json_object *ao, struct strs *l)
{
	json_object_object_foreach(ao, k, v) {
		const char *s = json_object_is_type(v, json_type_string) ?
		    json_object_get_string(v) : "";

		if (strncmp(k, APPARMOR_ANNOTATION_PREFIX,
		    strlen(APPARMOR_ANNOTATION_PREFIX)) != 0)
			continue;
		if (*s == '\0' || strcmp(s, "runtime/default") == 0 ||
		    strncmp(s, "localhost/", 10) == 0)
			continue;
		add_key_value(l, k, s);
	}
}

/* appArmorProfile, v1.0: the fields and the beta annotations. */
static int
check_apparmor(const struct pod *p, struct emit *e)
{
	struct strs containers = { 0 }, values = { 0 }, annots = { 0 };
	const struct json_object *c, *ao;
	const char *t;
	bool pod = false;
	int r;

	t = kc_json_str(p->spec, "securityContext", "appArmorProfile", "type");
	if (kc_json_get(p->spec, "securityContext", "appArmorProfile") != NULL && !apparmor_ok(t)) {
		pod = true;
		strs_add(&values, t);
	}
	FOREACH_CONTAINER(p, c) {
		if (kc_json_get(c, "securityContext", "appArmorProfile") == NULL)
			continue;
		t = kc_json_str(c, "securityContext", "appArmorProfile", "type");
		if (!apparmor_ok(t)) {
			strs_add(&containers, name_of(c));
			strs_add(&values, t);
		}
	}
	if ((ao = kc_json_obj_of(p->meta, "annotations")) != NULL)
		apparmor_annotations(ao, &annots);
	if ((r = containers.err) < 0 || (r = values.err) < 0 || (r = annots.err) < 0)
		goto out;
	strs_set(&values);
	strs_set(&annots);
	for (size_t i = 0; i < annots.n; i++)
		strs_add(&values, annots.v[i]);
	if ((r = values.err) < 0)
		goto out;
	if (pod || containers.n > 0 || annots.n > 0) {
		fail(e, plural(values.n, "forbidden AppArmor profile",
		    "forbidden AppArmor profiles"));
		det_setters(e, pod, &containers);
		if (annots.n > 0) {
			if (pod || containers.n > 0)
				det(e, " and ");
			det(e, plural(annots.n, "annotation", "annotations"));
		}
		det(e, " must not set AppArmor profile type to ");
		det_joinquote(e, &values);
		done(e);
	}
out:
	strs_free(&containers);
	strs_free(&values);
	strs_free(&annots);
	return r;
}

static const char *const caps_baseline[] = {
	"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT", NULL,
};

/* capabilities_baseline, v1.0: only the runtime's default set may be added. */
static int
check_caps_baseline(const struct pod *p, struct emit *e)
{
	struct strs containers = { 0 }, caps = { 0 };
	const struct json_object *c;
	int r;

	FOREACH_CONTAINER(p, c) {
		struct json_object *add = kc_json_get(c, "securityContext", "capabilities");
		bool bad = false;

		add = kc_json_arr_of(add, "add");
		for (size_t i = 0; add != NULL && i < json_object_array_length(add); i++) {
			const char *cap = json_object_get_string(json_object_array_get_idx(add, i));

			cap = cap != NULL ? cap : "";
			if (!in_list(cap, caps_baseline)) {
				bad = true;
				strs_add(&caps, cap);
			}
		}
		if (bad)
			strs_add(&containers, name_of(c));
	}
	if ((r = containers.err) < 0 || (r = caps.err) < 0)
		goto out;
	if (containers.n > 0) {
		strs_set(&caps);
		fail(e, "non-default capabilities");
		det_containers(e, &containers);
		det(e, " must not include ");
		det_joinquote(e, &caps);
		det(e, " in securityContext.capabilities.add");
		done(e);
	}
out:
	strs_free(&containers);
	strs_free(&caps);
	return r;
}

/* hostNamespaces, v1.0 */
static int
check_host_namespaces(const struct pod *p, struct emit *e)
{
	/* A set's order: hostIPC, hostNetwork, hostPID. */
	static const char *const fields[] = { "hostIPC", "hostNetwork", "hostPID" };
	size_t n = 0;

	for (size_t i = 0; i < KC_ARRAY_SIZE(fields); i++) {
		if (!is_true(p->spec, fields[i]))
			continue;
		if (n++ == 0)
			fail(e, "host namespaces");
		else
			det(e, ", ");
		det(e, fields[i]);
	}
	done(e);
	return 0;
}

/* hostPathVolumes, v1.0 (restrictedVolumes overrides it) */
static int
check_host_path(const struct pod *p, struct emit *e)
{
	struct strs vols = { 0 };
	int r;

	for (size_t i = 0, n = arr_len(p->spec, "volumes"); i < n; i++) {
		const struct json_object *v = arr_item(p->spec, "volumes", i);

		if (kc_json_get(v, "hostPath") != NULL)
			strs_add(&vols, name_of(v));
	}
	if ((r = vols.err) == 0 && vols.n > 0) {
		fail(e, "hostPath volumes");
		det(e, plural(vols.n, "volume ", "volumes "));
		det_joinquote(e, &vols);
		done(e);
	}
	strs_free(&vols);
	return r;
}

/* hostPorts, v1.0 */
static int
check_host_ports(const struct pod *p, struct emit *e)
{
	struct strs containers = { 0 }, ports = { 0 };
	const struct json_object *c;
	int r;

	FOREACH_CONTAINER(p, c) {
		bool bad = false;

		for (size_t i = 0, n = arr_len(c, "ports"); i < n; i++) {
			int64_t hp = kc_json_int(arr_item(c, "ports", i), 0, "hostPort");
			char num[24];
			struct kc_sbuf b;

			if (hp == 0)
				continue;
			bad = true;
			kc_sbuf_init(&b, num, sizeof(num));
			kc_sbuf_printf(&b, "%lld", (long long)(int32_t)hp);
			strs_add(&ports, num);
		}
		if (bad)
			strs_add(&containers, name_of(c));
	}
	if ((r = containers.err) < 0 || (r = ports.err) < 0)
		goto out;
	if (containers.n > 0) {
		strs_set(&ports);
		fail(e, "hostPort");
		det_containers(e, &containers);
		det(e, plural(containers.n, " uses ", " use "));
		det(e, plural(ports.n, "hostPort ", "hostPorts "));
		det_join(e, &ports, ", ");
		done(e);
	}
out:
	strs_free(&containers);
	strs_free(&ports);
	return r;
}

/* The host of a probe's or handler's httpGet and tcpSocket, when set. */
static bool
bad_hosts(const struct json_object *h, struct strs *hosts)
{
	static const char *const kinds[] = { "httpGet", "tcpSocket" };
	bool bad = false;

	for (size_t i = 0; h != NULL && i < KC_ARRAY_SIZE(kinds); i++) {
		const char *host = kc_json_str(h, kinds[i], "host");

		if (host != NULL && *host != '\0') {
			strs_add(hosts, host);
			bad = true;
		}
	}
	return bad;
}

/* hostProbesAndHostLifecycle, v1.34 */
static int
check_probe_hosts(const struct pod *p, struct emit *e)
{
	static const char *const probes[] = { "livenessProbe", "readinessProbe", "startupProbe" };
	static const char *const hooks[] = { "postStart", "preStop" };
	struct strs containers = { 0 }, hosts = { 0 };
	const struct json_object *c;
	int r;

	FOREACH_CONTAINER(p, c) {
		bool bad = false;

		for (size_t i = 0; i < KC_ARRAY_SIZE(probes); i++)
			bad |= bad_hosts(kc_json_obj_of(c, probes[i]), &hosts);
		for (size_t i = 0; i < KC_ARRAY_SIZE(hooks); i++)
			bad |= bad_hosts(kc_json_get(c, "lifecycle", hooks[i]), &hosts);
		if (bad)
			strs_add(&containers, name_of(c));
	}
	if ((r = containers.err) < 0 || (r = hosts.err) < 0)
		goto out;
	if (containers.n > 0) {
		strs_set(&containers);
		strs_set(&hosts);
		fail(e, "probe or lifecycle host");
		det_containers(e, &containers);
		det(e, plural(containers.n, " uses ", " use "));
		det(e, plural(hosts.n, "probe or lifecycle host ", "probe or lifecycle hosts "));
		det_joinquote(e, &hosts);
		done(e);
	}
out:
	strs_free(&containers);
	strs_free(&hosts);
	return r;
}

/* privileged, v1.0 */
static int
check_privileged(const struct pod *p, struct emit *e)
{
	struct strs containers = { 0 };
	const struct json_object *c;
	int r;

	FOREACH_CONTAINER(p, c)
		if (is_true(c, "securityContext", "privileged"))
			strs_add(&containers, name_of(c));
	if ((r = containers.err) == 0 && containers.n > 0) {
		fail(e, "privileged");
		det_containers(e, &containers);
		det(e, " must not set securityContext.privileged=true");
		done(e);
	}
	strs_free(&containers);
	return r;
}

/* procMount_1_0: only "Default" (or unset). */
static int
proc_mount(const struct pod *p, struct emit *e)
{
	struct strs containers = { 0 }, types = { 0 };
	const struct json_object *c;
	int r;

	FOREACH_CONTAINER(p, c) {
		const char *pm;

		if (kc_json_get(c, "securityContext", "procMount") == NULL)
			continue;
		pm = kc_json_str(c, "securityContext", "procMount");
		if (pm == NULL || strcmp(pm, "Default") != 0) {
			strs_add(&containers, name_of(c));
			strs_add(&types, pm);
		}
	}
	if ((r = containers.err) < 0 || (r = types.err) < 0)
		goto out;
	if (containers.n > 0) {
		strs_set(&types);
		fail(e, "procMount");
		det_containers(e, &containers);
		det(e, " must not set securityContext.procMount to ");
		det_joinquote(e, &types);
		done(e);
	}
out:
	strs_free(&containers);
	strs_free(&types);
	return r;
}

/* procMount, v1.0; from v1.35 a user namespace pod may set any. */
static int
check_proc_mount(const struct pod *p, struct emit *e)
{
	if (p->minor >= 35 && user_namespace(p))
		return 0;
	return proc_mount(p, e);
}

/* seLinuxOptions, v1.0; v1.31 allows container_engine_t. */
struct selinux {
	struct strs	 types;
	bool		 user, role;
};

static bool
selinux_ok(const struct pod *p, const struct json_object *o, struct selinux *s)
{
	static const char *const types_1_0[] = {
		"", "container_t", "container_init_t", "container_kvm_t", NULL,
	};
	const char *t = kc_json_str(o, "type"), *u = kc_json_str(o, "user"),
	    *r = kc_json_str(o, "role");
	bool ok = true;

	t = t != NULL ? t : "";
	if (!in_list(t, types_1_0) &&
	    !(p->minor >= 31 && strcmp(t, "container_engine_t") == 0)) {
		ok = false;
		strs_add(&s->types, t);
	}
	if (u != NULL && *u != '\0') {
		s->user = true;
		ok = false;
	}
	if (r != NULL && *r != '\0') {
		s->role = true;
		ok = false;
	}
	return ok;
}

static int
check_selinux(const struct pod *p, struct emit *e)
{
	struct strs containers = { 0 };
	struct selinux s = { 0 };
	const struct json_object *c, *o;
	bool pod = false;
	int r;

	if ((o = kc_json_obj_of(kc_json_obj_of(p->spec, "securityContext"),
	    "seLinuxOptions")) != NULL && !selinux_ok(p, o, &s))
		pod = true;
	FOREACH_CONTAINER(p, c) {
		o = kc_json_get(c, "securityContext", "seLinuxOptions");
		if (json_object_is_type(o, json_type_object) && !selinux_ok(p, o, &s))
			strs_add(&containers, name_of(c));
	}
	if ((r = containers.err) < 0 || (r = s.types.err) < 0)
		goto out;
	if (pod || containers.n > 0) {
		const char *sep = "";

		strs_set(&s.types);
		fail(e, "seLinuxOptions");
		det_setters(e, pod, &containers);
		det(e, " set forbidden securityContext.seLinuxOptions: ");
		if (s.types.n > 0) {
			det(e, plural(s.types.n, "type ", "types "));
			det_joinquote(e, &s.types);
			sep = "; ";
		}
		if (s.user) {
			det(e, sep);
			det(e, "user may not be set");
			sep = "; ";
		}
		if (s.role) {
			det(e, sep);
			det(e, "role may not be set");
		}
		done(e);
	}
out:
	strs_free(&containers);
	strs_free(&s.types);
	return r;
}

static bool
seccomp_ok(const char *t)
{
	return t != NULL && (strcmp(t, "RuntimeDefault") == 0 || strcmp(t, "Localhost") == 0);
}

static bool
seccomp_annotation_ok(const char *v)
{
	return strcmp(v, "runtime/default") == 0 || strcmp(v, "docker/default") == 0 ||
	    strncmp(v, "localhost/", 10) == 0;
}

/* seccompProfile_baseline, v1.0: the alpha annotations. */
static int
seccomp_baseline_1_0(const struct pod *p, struct emit *e)
{
	struct strs bad = { 0 };
	const struct json_object *c;
	const char *v;
	int r;

	if ((v = annotation(p, SECCOMP_ANNOTATION_POD)) != NULL && !seccomp_annotation_ok(v))
		add_key_value(&bad, SECCOMP_ANNOTATION_POD, v);
	FOREACH_CONTAINER(p, c) {
		char key[512];

		if (kc_strlcpy(key, SECCOMP_ANNOTATION_PREFIX, sizeof(key)) >= sizeof(key) ||
		    kc_strlcat(key, name_of(c), sizeof(key)) >= sizeof(key))
			continue;		/* no such annotation key can exist */
		if ((v = annotation(p, key)) != NULL && !seccomp_annotation_ok(v))
			add_key_value(&bad, key, v);
	}
	if ((r = bad.err) == 0 && bad.n > 0) {
		strs_set(&bad);
		fail(e, "seccompProfile");
		det(e, plural(bad.n, "forbidden annotation ", "forbidden annotations "));
		det_join(e, &bad, ", ");
		done(e);
	}
	strs_free(&bad);
	return r;
}

/*
 * seccompProfile from v1.19, both levels: the fields. 'required' (the
 * restricted check) also fails containers that set none where the pod
 * sets no valid one.
 */
static int
seccomp_fields(const struct pod *p, struct emit *e, bool required)
{
	struct strs containers = { 0 }, implicit = { 0 }, values = { 0 };
	const struct json_object *c;
	bool pod = false, pod_set = false;
	int r;

	if (kc_json_get(p->spec, "securityContext", "seccompProfile") != NULL) {
		const char *t = kc_json_str(p->spec, "securityContext", "seccompProfile", "type");

		if (!seccomp_ok(t)) {
			pod = true;
			strs_add(&values, t);
		} else {
			pod_set = true;
		}
	}
	FOREACH_CONTAINER(p, c) {
		if (kc_json_get(c, "securityContext", "seccompProfile") != NULL) {
			const char *t = kc_json_str(c, "securityContext", "seccompProfile", "type");

			if (!seccomp_ok(t)) {
				strs_add(&containers, name_of(c));
				strs_add(&values, t);
			}
		} else if (required && !pod_set) {
			strs_add(&implicit, name_of(c));
		}
	}
	if ((r = containers.err) < 0 || (r = implicit.err) < 0 || (r = values.err) < 0)
		goto out;
	if (pod || containers.n > 0) {
		strs_set(&values);
		fail(e, "seccompProfile");
		det_setters(e, pod, &containers);
		det(e, " must not set securityContext.seccompProfile.type to ");
		det_joinquote(e, &values);
		done(e);
	} else if (implicit.n > 0) {
		fail(e, "seccompProfile");
		det(e, "pod or ");
		det_containers(e, &implicit);
		det(e, " must set securityContext.seccompProfile.type to "
		    "\"RuntimeDefault\" or \"Localhost\"");
		done(e);
	}
out:
	strs_free(&containers);
	strs_free(&implicit);
	strs_free(&values);
	return r;
}

static int
check_seccomp_baseline(const struct pod *p, struct emit *e)
{
	if (p->minor < 19)
		return seccomp_baseline_1_0(p, e);
	return seccomp_fields(p, e, false);
}

/* sysctls: the safe set grows at v1.27, v1.29 and v1.32. */
static bool
sysctl_safe(const char *s, unsigned minor)
{
	static const struct {
		unsigned	 since;
		const char	*name;
	} safe[] = {
		{ 0, "kernel.shm_rmid_forced" },
		{ 0, "net.ipv4.ip_local_port_range" },
		{ 0, "net.ipv4.tcp_syncookies" },
		{ 0, "net.ipv4.ping_group_range" },
		{ 0, "net.ipv4.ip_unprivileged_port_start" },
		{ 27, "net.ipv4.ip_local_reserved_ports" },
		{ 29, "net.ipv4.tcp_keepalive_time" },
		{ 29, "net.ipv4.tcp_fin_timeout" },
		{ 29, "net.ipv4.tcp_keepalive_intvl" },
		{ 29, "net.ipv4.tcp_keepalive_probes" },
		{ 32, "net.ipv4.tcp_rmem" },
		{ 32, "net.ipv4.tcp_wmem" },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(safe); i++)
		if (minor >= safe[i].since && strcmp(s, safe[i].name) == 0)
			return true;
	return false;
}

static int
check_sysctls(const struct pod *p, struct emit *e)
{
	struct json_object *sc = kc_json_obj_of(p->spec, "securityContext");
	struct strs bad = { 0 };
	int r;

	for (size_t i = 0, n = arr_len(sc, "sysctls"); i < n; i++) {
		const struct json_object *item = arr_item(sc, "sysctls", i);
		const char *name = kc_json_str(item, "name");

		if (item == NULL)
			continue;
		name = name != NULL ? name : "";
		if (!sysctl_safe(name, p->minor))
			strs_add(&bad, name);
	}
	if ((r = bad.err) == 0 && bad.n > 0) {
		fail(e, "forbidden sysctls");
		det_join(e, &bad, ", ");
		done(e);
	}
	strs_free(&bad);
	return r;
}

/* windowsHostProcess, v1.0 */
static int
check_host_process(const struct pod *p, struct emit *e)
{
	struct strs containers = { 0 };
	const struct json_object *c;
	bool pod;
	int r;

	FOREACH_CONTAINER(p, c)
		if (is_true(c, "securityContext", "windowsOptions", "hostProcess"))
			strs_add(&containers, name_of(c));
	pod = is_true(p->spec, "securityContext", "windowsOptions", "hostProcess");
	if ((r = containers.err) == 0 && (pod || containers.n > 0)) {
		fail(e, "hostProcess");
		det_setters(e, pod, &containers);
		det(e, " must not set securityContext.windowsOptions.hostProcess=true");
		done(e);
	}
	strs_free(&containers);
	return r;
}

/* allowPrivilegeEscalation, v1.8; v1.25 exempts Windows pods. */
static int
check_ape(const struct pod *p, struct emit *e)
{
	struct strs containers = { 0 };
	const struct json_object *c;
	int r;

	if (p->minor >= 25 && is_windows(p))
		return 0;
	FOREACH_CONTAINER(p, c)
		if (kc_json_bool(c, true, "securityContext", "allowPrivilegeEscalation"))
			strs_add(&containers, name_of(c));
	if ((r = containers.err) == 0 && containers.n > 0) {
		fail(e, "allowPrivilegeEscalation != false");
		det_containers(e, &containers);
		det(e, " must set securityContext.allowPrivilegeEscalation=false");
		done(e);
	}
	strs_free(&containers);
	return r;
}

/* capabilities_restricted, v1.22; v1.25 exempts Windows pods. */
static int
check_caps_restricted(const struct pod *p, struct emit *e)
{
	struct strs nodrop = { 0 }, adding = { 0 }, caps = { 0 };
	const struct json_object *c;
	int r;

	if (p->minor >= 25 && is_windows(p))
		return 0;
	FOREACH_CONTAINER(p, c) {
		struct json_object *cp = kc_json_get(c, "securityContext", "capabilities");
		struct json_object *l;
		bool all = false, bad = false;

		if (!json_object_is_type(cp, json_type_object)) {
			strs_add(&nodrop, name_of(c));
			continue;
		}
		l = kc_json_arr_of(cp, "drop");
		for (size_t i = 0; l != NULL && i < json_object_array_length(l); i++) {
			const char *s = json_object_get_string(json_object_array_get_idx(l, i));

			if (s != NULL && strcmp(s, "ALL") == 0)
				all = true;
		}
		if (!all)
			strs_add(&nodrop, name_of(c));
		l = kc_json_arr_of(cp, "add");
		for (size_t i = 0; l != NULL && i < json_object_array_length(l); i++) {
			const char *s = json_object_get_string(json_object_array_get_idx(l, i));

			s = s != NULL ? s : "";
			if (strcmp(s, "NET_BIND_SERVICE") != 0) {
				bad = true;
				strs_add(&caps, s);
			}
		}
		if (bad)
			strs_add(&adding, name_of(c));
	}
	if ((r = nodrop.err) < 0 || (r = adding.err) < 0 || (r = caps.err) < 0)
		goto out;
	if (nodrop.n > 0 || adding.n > 0) {
		fail(e, "unrestricted capabilities");
		if (nodrop.n > 0) {
			det_containers(e, &nodrop);
			det(e, " must set securityContext.capabilities.drop=[\"ALL\"]");
		}
		if (adding.n > 0) {
			strs_set(&caps);
			if (nodrop.n > 0)
				det(e, "; ");
			det_containers(e, &adding);
			det(e, " must not include ");
			det_joinquote(e, &caps);
			det(e, " in securityContext.capabilities.add");
		}
		done(e);
	}
out:
	strs_free(&nodrop);
	strs_free(&adding);
	strs_free(&caps);
	return r;
}

/* restrictedVolumes, v1.0: the volume sources a restricted pod may use. */
static int
check_volumes(const struct pod *p, struct emit *e)
{
	static const char *const allowed[] = {
		"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image",
		"persistentVolumeClaim", "projected", "secret", NULL,
	};
	static const char *const restricted[] = {
		"hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs",
		"iscsi", "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker",
		"fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
		"photonPersistentDisk", "portworxVolume", "scaleIO", "storageos", NULL,
	};
	struct strs vols = { 0 }, types = { 0 };
	int r;

	for (size_t i = 0, n = arr_len(p->spec, "volumes"); i < n; i++) {
		const struct json_object *v = arr_item(p->spec, "volumes", i);
		const char *type = NULL;
		bool ok = false;

		if (v == NULL)
			continue;
		for (size_t j = 0; allowed[j] != NULL && !ok; j++)
			ok = kc_json_get(v, allowed[j]) != NULL;
		if (ok)
			continue;
		for (size_t j = 0; restricted[j] != NULL && type == NULL; j++)
			if (kc_json_get(v, restricted[j]) != NULL)
				type = restricted[j];
		strs_add(&vols, name_of(v));
		strs_add(&types, type != NULL ? type : "unknown");
	}
	if ((r = vols.err) < 0 || (r = types.err) < 0)
		goto out;
	if (vols.n > 0) {
		strs_set(&types);
		fail(e, "restricted volume types");
		det(e, plural(vols.n, "volume ", "volumes "));
		det_joinquote(e, &vols);
		det(e, plural(vols.n, " uses ", " use "));
		det(e, plural(types.n, "restricted volume type ", "restricted volume types "));
		det_joinquote(e, &types);
		done(e);
	}
out:
	strs_free(&vols);
	strs_free(&types);
	return r;
}

/* runAsNonRoot, v1.0; from v1.35 a user namespace pod is exempt. */
static int
check_run_as_non_root(const struct pod *p, struct emit *e)
{
	struct strs explicit = { 0 }, implicit = { 0 };
	struct json_object *v;
	const struct json_object *c;
	bool pod_bad = false, pod_ok = false;
	int r;

	if (p->minor >= 35 && user_namespace(p))
		return 0;
	v = kc_json_get(p->spec, "securityContext", "runAsNonRoot");
	if (json_object_is_type(v, json_type_boolean)) {
		pod_ok = json_object_get_boolean(v);
		pod_bad = !pod_ok;
	}
	FOREACH_CONTAINER(p, c) {
		v = kc_json_get(c, "securityContext", "runAsNonRoot");
		if (json_object_is_type(v, json_type_boolean)) {
			if (!json_object_get_boolean(v))
				strs_add(&explicit, name_of(c));
		} else if (!pod_ok) {
			strs_add(&implicit, name_of(c));
		}
	}
	if ((r = explicit.err) < 0 || (r = implicit.err) < 0)
		goto out;
	if (pod_bad || explicit.n > 0) {
		fail(e, "runAsNonRoot != true");
		det_setters(e, pod_bad, &explicit);
		det(e, " must not set securityContext.runAsNonRoot=false");
		done(e);
	} else if (implicit.n > 0) {
		fail(e, "runAsNonRoot != true");
		det(e, "pod or ");
		det_containers(e, &implicit);
		det(e, " must set securityContext.runAsNonRoot=true");
		done(e);
	}
out:
	strs_free(&explicit);
	strs_free(&implicit);
	return r;
}

/* runAsUser 0 (or not a number: an unvalidated template's). */
static bool
is_root(const struct json_object *sc)
{
	struct json_object *u = kc_json_get(sc, "runAsUser");

	return u != NULL && (!json_object_is_type(u, json_type_int) ||
	    json_object_get_int64(u) == 0);
}

/* runAsUser, v1.23; from v1.35 a user namespace pod is exempt. */
static int
check_run_as_user(const struct pod *p, struct emit *e)
{
	struct strs containers = { 0 };
	const struct json_object *c;
	bool pod;
	int r;

	if (p->minor >= 35 && user_namespace(p))
		return 0;
	pod = is_root(kc_json_obj_of(p->spec, "securityContext"));
	FOREACH_CONTAINER(p, c)
		if (is_root(kc_json_obj_of(c, "securityContext")))
			strs_add(&containers, name_of(c));
	if ((r = containers.err) == 0 && (pod || containers.n > 0)) {
		fail(e, "runAsUser=0");
		det_setters(e, pod, &containers);
		det(e, " must not set runAsUser=0");
		done(e);
	}
	strs_free(&containers);
	return r;
}

/* seccompProfile_restricted, v1.19; v1.25 exempts Windows pods. */
static int
check_seccomp_restricted(const struct pod *p, struct emit *e)
{
	if (p->minor >= 25 && is_windows(p))
		return 0;
	return seccomp_fields(p, e, true);
}

/*
 * The registry, in upstream's evaluation order. 'overrides' names the
 * baseline check a restricted one replaces, from its 'since'.
 */
struct check {
	const char		*id;
	enum kc_psa_level	 level;
	unsigned		 since;		/* first minor it applies to */
	const char		*overrides;
	check_fn		*fn;
};

static const struct check checks[] = {
	{ "appArmorProfile", KC_PSA_BASELINE, 0, NULL, check_apparmor },
	{ "capabilities_baseline", KC_PSA_BASELINE, 0, NULL, check_caps_baseline },
	{ "hostNamespaces", KC_PSA_BASELINE, 0, NULL, check_host_namespaces },
	{ "hostPathVolumes", KC_PSA_BASELINE, 0, NULL, check_host_path },
	{ "hostPorts", KC_PSA_BASELINE, 0, NULL, check_host_ports },
	{ "hostProbesAndHostLifecycle", KC_PSA_BASELINE, 34, NULL, check_probe_hosts },
	{ "privileged", KC_PSA_BASELINE, 0, NULL, check_privileged },
	{ "procMount", KC_PSA_BASELINE, 0, NULL, check_proc_mount },
	{ "seLinuxOptions", KC_PSA_BASELINE, 0, NULL, check_selinux },
	{ "seccompProfile_baseline", KC_PSA_BASELINE, 0, NULL, check_seccomp_baseline },
	{ "sysctls", KC_PSA_BASELINE, 0, NULL, check_sysctls },
	{ "windowsHostProcess", KC_PSA_BASELINE, 0, NULL, check_host_process },
	{ "allowPrivilegeEscalation", KC_PSA_RESTRICTED, 8, NULL, check_ape },
	{ "capabilities_restricted", KC_PSA_RESTRICTED, 22, "capabilities_baseline",
	    check_caps_restricted },
	{ "procMount_restricted", KC_PSA_RESTRICTED, 35, "procMount", proc_mount },
	{ "restrictedVolumes", KC_PSA_RESTRICTED, 0, "hostPathVolumes", check_volumes },
	{ "runAsNonRoot", KC_PSA_RESTRICTED, 0, NULL, check_run_as_non_root },
	{ "runAsUser", KC_PSA_RESTRICTED, 23, NULL, check_run_as_user },
	{ "seccompProfile_restricted", KC_PSA_RESTRICTED, 19, "seccompProfile_baseline",
	    check_seccomp_restricted },
};

/* The minor the checks run as: latest and newer ones as KC_PSA_MINOR_MAX. */
static unsigned
effective_minor(unsigned minor)
{
	if (minor == KC_PSA_MINOR_V1_0)
		return 0;
	if (minor == 0 || minor > KC_PSA_MINOR_MAX)
		return KC_PSA_MINOR_MAX;
	return minor;
}

static bool
overridden(const char *id, unsigned minor)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(checks); i++)
		if (checks[i].overrides != NULL && minor >= checks[i].since &&
		    strcmp(checks[i].overrides, id) == 0)
			return true;
	return false;
}

static int
evaluate(const struct json_object *meta, const struct json_object *spec,
    const struct kc_psa_policy *pol, struct kc_sbuf *out, bool details)
{
	struct pod p = { .meta = meta, .spec = spec, .minor = effective_minor(pol->minor) };
	struct emit e = { .sb = out, .details = details };
	int r;

	if (pol->level == KC_PSA_PRIVILEGED)
		return 0;
	for (size_t i = 0; i < KC_ARRAY_SIZE(checks); i++) {
		const struct check *c = &checks[i];

		if (p.minor < c->since)
			continue;
		if (c->level == KC_PSA_RESTRICTED && pol->level != KC_PSA_RESTRICTED)
			continue;
		if (c->level == KC_PSA_BASELINE && pol->level == KC_PSA_RESTRICTED &&
		    overridden(c->id, p.minor))
			continue;
		if ((r = c->fn(&p, &e)) < 0)
			return r;
	}
	return e.nfail;
}

int
kc_psa_check(const struct json_object *meta, const struct json_object *spec,
    const struct kc_psa_policy *p, struct kc_sbuf *out)
{
	return evaluate(meta, spec, p, out, true);
}

int
kc_psa_check_reasons(const struct json_object *meta, const struct json_object *spec,
    const struct kc_psa_policy *p, struct kc_sbuf *out)
{
	return evaluate(meta, spec, p, out, false);
}

/*
 * Levels, versions and namespace labels
 */

static const char *const level_names[] = {
	[KC_PSA_PRIVILEGED] = "privileged",
	[KC_PSA_BASELINE] = "baseline",
	[KC_PSA_RESTRICTED] = "restricted",
};

int
kc_psa_parse_level(const char *s, enum kc_psa_level *out)
{
	for (size_t i = 0; s != NULL && i < KC_ARRAY_SIZE(level_names); i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum kc_psa_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *
kc_psa_level_name(enum kc_psa_level l)
{
	if ((size_t)l >= KC_ARRAY_SIZE(level_names))
		return level_names[KC_PSA_RESTRICTED];
	return level_names[l];
}

int
kc_psa_parse_version(const char *s, unsigned *minor)
{
	uint64_t v = 0;

	if (s == NULL)
		return -EINVAL;
	if (strcmp(s, "latest") == 0) {
		*minor = 0;
		return 0;
	}
	/* ^v1\.([0-9]|[1-9][0-9]*)$ */
	if (strncmp(s, "v1.", 3) != 0 || s[3] < '0' || s[3] > '9' ||
	    (s[3] == '0' && s[4] != '\0'))
		return -EINVAL;
	for (const char *q = s + 3; *q != '\0'; q++) {
		if (*q < '0' || *q > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(*q - '0');
		if (v > INT32_MAX)		/* Atoi's range on upstream's 32-bit builds */
			return -EINVAL;
	}
	*minor = v == 0 ? KC_PSA_MINOR_V1_0 : (unsigned)v;
	return 0;
}

struct kc_psa_policy
kc_psa_emulate(const struct kc_psa_policy *p, unsigned server_minor)
{
	struct kc_psa_policy e = *p;

	if (server_minor > 0 && server_minor != KC_PSA_MINOR_V1_0 &&
	    (e.minor == 0 || (e.minor != KC_PSA_MINOR_V1_0 && e.minor > server_minor)))
		e.minor = server_minor;
	return e;
}

const char *
kc_psa_policy_name(const struct kc_psa_policy *p, char *buf, size_t size)
{
	struct kc_sbuf b;

	kc_sbuf_init(&b, buf, size);
	kc_sbuf_puts(&b, kc_psa_level_name(p->level));
	if (p->minor == 0)
		kc_sbuf_puts(&b, ":latest");
	else
		kc_sbuf_printf(&b, ":v1.%u", p->minor == KC_PSA_MINOR_V1_0 ? 0 : p->minor);
	return buf;
}

/* metadata.labels[key]: Invalid value: "v": why */
static void
label_error(struct kc_sbuf *err, int n, const char *key, const char *value, const char *why)
{
	if (err == NULL)
		return;
	if (n > 0)
		kc_sbuf_puts(err, ", ");
	kc_sbuf_printf(err, "metadata.labels[%s]: Invalid value: ", key);
	kc_sbuf_quote(err, value, strlen(value));
	kc_sbuf_printf(err, ": %s", why);
}

int
kc_psa_namespace_policy(const struct json_object *ns_labels, const char *mode,
    struct kc_psa_policy *out, struct kc_sbuf *err)
{
	char lkey[64], vkey[64];
	const char *level, *version;
	struct kc_psa_policy p = { KC_PSA_PRIVILEGED, 0 };
	struct kc_sbuf tmp;
	char text[1024];
	int n = 0;

	if (mode == NULL || (strcmp(mode, "enforce") != 0 && strcmp(mode, "audit") != 0 &&
	    strcmp(mode, "warn") != 0))
		return -EINVAL;
	kc_sbuf_init(&tmp, text, sizeof(text));
	(void)kc_strlcpy(lkey, KC_PSA_LABEL_PREFIX, sizeof(lkey));
	(void)kc_strlcat(lkey, mode, sizeof(lkey));
	(void)kc_strlcpy(vkey, lkey, sizeof(vkey));
	(void)kc_strlcat(vkey, "-version", sizeof(vkey));
	level = kc_json_str(ns_labels, lkey);
	version = kc_json_str(ns_labels, vkey);
	if (level != NULL && kc_psa_parse_level(level, &p.level) < 0) {
		/* upstream: restricted for enforce, fail open for audit and warn */
		p.level = strcmp(mode, "enforce") == 0 ? KC_PSA_RESTRICTED : KC_PSA_PRIVILEGED;
		label_error(&tmp, n++, lkey, level,
		    "must be one of privileged, baseline, restricted");
	}
	if (version != NULL && kc_psa_parse_version(version, &p.minor) < 0) {
		p.minor = 0;
		label_error(&tmp, n++, vkey, version, "must be \"latest\" or \"v1.x\"");
	}
	/*
	 * An unset warn level follows an enforce level set stricter (the
	 * version too, when unset): controllers' templates are then warned
	 * about what their pods will be refused for.
	 */
	if (strcmp(mode, "warn") == 0 && level == NULL &&
	    kc_json_str(ns_labels, KC_PSA_LABEL_PREFIX "enforce") != NULL) {
		struct kc_psa_policy e;

		(void)kc_psa_namespace_policy(ns_labels, "enforce", &e, NULL);
		if (e.level > p.level) {
			p.level = e.level;
			if (version == NULL)
				p.minor = e.minor;
		}
	}
	if (err != NULL && n > 0) {
		if (n > 1)
			kc_sbuf_putc(err, '[');
		kc_sbuf_puts(err, text);
		if (n > 1)
			kc_sbuf_putc(err, ']');
	}
	*out = p;
	return n;
}

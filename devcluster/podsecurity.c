/*
 * podsecurity.c: kube-apiserver's PodSecurity admission plug-in
 * (plugin/pkg/admission/security/podsecurity and
 * k8s.io/pod-security-admission/admission), on libkc's Pod Security
 * Standards engine (<kc/podsecurity.h>).
 *
 * A namespace chooses its policy with labels, each a level and a version:
 *
 *	pod-security.kubernetes.io/enforce[-version]	refuse the pod (403)
 *	pod-security.kubernetes.io/audit[-version]	log the violation
 *	pod-security.kubernetes.io/warn[-version]	a Warning header
 *
 * Absent labels are privileged:latest (nothing checked); warn without a
 * label follows a stricter enforce (kc_psa_namespace_policy()). "latest",
 * and any version newer than the emulated minor, evaluate as the emulated
 * minor (upstream's registry holds no newer checks than its binary).
 *
 * What is evaluated, on create and update, whoever writes (the simulated
 * controllers' writes go through the same admission):
 *
 *	pods		enforce, audit and warn. An update that changes no
 *			container image, no container's seccomp annotation
 *			and adds no ephemeral container is not evaluated
 *			(isSignificantPodUpdate). Subresources are not,
 *			but for ephemeralcontainers.
 *	workloads	the pod template of Deployments, ReplicaSets,
 *			StatefulSets, DaemonSets, Jobs, CronJobs,
 *			ReplicationControllers and PodTemplates: audit and
 *			warn only; their pods are refused when created.
 *	namespaces	the labels must parse (403 with upstream's Invalid
 *			message); an update that makes enforce stricter
 *			evaluates the namespace's pods against it and warns:
 *
 *	Warning: existing pods in namespace "team-a" violate the new
 *	    PodSecurity enforce level "restricted:latest"
 *	Warning: web-0 (and 2 other pods): allowPrivilegeEscalation != false,
 *	    unrestricted capabilities, runAsNonRoot != true, seccompProfile
 *
 * A refused pod's answer is upstream's:
 *
 *	pods "x" is forbidden: violates PodSecurity "baseline:latest":
 *	    privileged (container "main" must not set securityContext.privileged=true)
 *
 * Audit: the devcluster keeps no audit log, so a violation of the audit
 * level is one info line, with the audit annotation's key and value.
 * No exemptions are configured (upstream's default).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/podsecurity.h>
#include <kc/sbuf.h>
#include <kc/str.h>

#include "devcluster.h"
#include "podsecurity.h"

#define PSA_NS_PODS_MAX		3000	/* namespaceMaxPodsToCheck */
#define PSA_ERR_MAX		2048	/* one namespace's label errors */
#define SECCOMP_ANNOTATION_PREFIX "container.seccomp.security.alpha.kubernetes.io/"

struct psa {
	struct dc	*dc;
};

/* A namespace's three policies. */
struct nspolicy {
	struct kc_psa_policy	 enforce, audit, warn;
	int			 nerr;		/* invalid labels */
};

static const char *const modes[] = { "enforce", "audit", "warn" };

static void
labels_policy(const struct json_object *labels, struct nspolicy *ret)
{
	struct kc_psa_policy *outs[] = { &ret->enforce, &ret->audit, &ret->warn };

	ret->nerr = 0;
	for (size_t i = 0; i < KC_ARRAY_SIZE(modes); i++)
		ret->nerr += KC_MAX(kc_psa_namespace_policy(labels, modes[i], outs[i], NULL), 0);
}

/* The policy of namespace 'ns'; a missing namespace checks nothing. */
static void
ns_policy(struct dc *dc, const char *ns, struct nspolicy *ret)
{
	struct dc_coll *coll = storage_find_coll(dc->store, "", "namespaces");
	const struct json_object *o = coll != NULL && ns != NULL ? coll_get(coll, "", ns) : NULL;

	labels_policy(kc_json_get(o, "metadata", "labels"), ret);
}

/*
 * Evaluates a pod (metadata and spec) against 'p': the number of failed
 * checks, with '*ret' the text (details, or reasons only) in a new
 * allocation when there are any; -ENOMEM.
 */
static int
evaluate(const struct dc *dc, const struct json_object *meta, const struct json_object *spec,
    const struct kc_psa_policy *p, bool details, char **ret)
{
	struct kc_psa_policy e = kc_psa_emulate(p, api_minor(dc));
	struct kc_sbuf b;
	size_t len;
	char *text;
	int n;

	*ret = NULL;
	kc_sbuf_init(&b, NULL, 0);
	n = details ? kc_psa_check(meta, spec, &e, &b) : kc_psa_check_reasons(meta, spec, &e, &b);
	if (n <= 0)
		return n;
	len = kc_sbuf_end(&b);
	if ((text = kc_malloc(len + 1)) == NULL)
		return -ENOMEM;
	kc_sbuf_init(&b, text, len + 1);
	n = details ? kc_psa_check(meta, spec, &e, &b) : kc_psa_check_reasons(meta, spec, &e, &b);
	if (n <= 0) {
		kc_free(text);
		return n;
	}
	*ret = text;
	return n;
}

/* 'prefix' "<policy>": <text>, in a new allocation (NULL: -ENOMEM). */
static char *
violation(const char *prefix, const struct kc_psa_policy *p, const char *text)
{
	char name[KC_PSA_POLICY_NAME_MAX];

	return kc_asprintf("%s PodSecurity \"%s\": %s", prefix,
	    kc_psa_policy_name(p, name, sizeof(name)), text);
}

static const char *
obj_name(const struct json_object *obj)
{
	const char *name = kc_json_str(obj, "metadata", "name");

	if (name == NULL || name[0] == '\0')
		name = kc_json_str(obj, "metadata", "generateName");
	return name != NULL && name[0] != '\0' ? name : "Unknown";
}

/* Answers 403: <resource> "<name>" is forbidden: <why>. */
static int
forbid(struct dc_write_ctx *wc, const char *name, const char *why)
{
	char quoted[DC_SEGMENT_MAX + 8];
	char *msg = kc_asprintf("%s %s is forbidden: %s", wc->rt->qualified,
	    kc_sbuf_quoted(quoted, sizeof(quoted), name), why);

	if (msg == NULL)
		return -ENOMEM;
	errors_details(wc->resp, KC_EFORBIDDEN, wc->rt->group, wc->rt->plural, name, msg);
	kc_free(msg);
	wc->answered = true;
	return KC_EFORBIDDEN;
}

/*
 * Pods and pod templates
 */

static bool
same_str(const char *a, const char *b)
{
	return strcmp(a != NULL ? a : "", b != NULL ? b : "") == 0;
}

/* A container's image or seccomp annotation changed. */
static bool
significant_container(const struct json_object *c, const struct json_object *oc,
    const struct json_object *pod, const struct json_object *old)
{
	const char *name = kc_json_str(c, "name");
	char key[DC_SEGMENT_MAX + 64];

	if (!same_str(kc_json_str(c, "image"), kc_json_str(oc, "image")))
		return true;
	if (kc_strlcpy(key, SECCOMP_ANNOTATION_PREFIX, sizeof(key)) >= sizeof(key) ||
	    kc_strlcat(key, name != NULL ? name : "", sizeof(key)) >= sizeof(key))
		return true;
	return !same_str(kc_json_str(pod, "metadata", "annotations", key),
	    kc_json_str(old, "metadata", "annotations", key));
}

static size_t
arr_len(const struct json_object *a)
{
	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

/* isSignificantPodUpdate: what may change a pod's evaluation. */
static bool
significant_update(const struct json_object *pod, const struct json_object *old)
{
	static const char *const lists[] = { "containers", "initContainers" };
	struct json_object *eph;

	for (size_t l = 0; l < KC_ARRAY_SIZE(lists); l++) {
		struct json_object *a = kc_json_get(pod, "spec", lists[l]);
		struct json_object *oa = kc_json_get(old, "spec", lists[l]);

		if (arr_len(a) != arr_len(oa))
			return true;
		for (size_t i = 0; i < arr_len(a); i++)
			if (significant_container(json_object_array_get_idx(a, i),
			    json_object_array_get_idx(oa, i), pod, old))
				return true;
	}
	eph = kc_json_get(pod, "spec", "ephemeralContainers");
	for (size_t i = 0; i < arr_len(eph); i++) {
		struct json_object *c = json_object_array_get_idx(eph, i);
		struct json_object *oeph = kc_json_get(old, "spec", "ephemeralContainers");
		struct json_object *oc = NULL;

		for (size_t j = 0; j < arr_len(oeph) && oc == NULL; j++)
			if (same_str(kc_json_str(json_object_array_get_idx(oeph, j), "name"),
			    kc_json_str(c, "name")))
				oc = json_object_array_get_idx(oeph, j);
		if (oc == NULL || significant_container(c, oc, pod, old))
			return true;
	}
	return false;
}

static void label_errs(const struct json_object *labels, struct dc_errs *errs);

/* The audit annotation "error" of a pod in a namespace with bad labels, as a log line. */
static int
log_label_errors(struct dc_write_ctx *wc, const struct json_object *obj, const char *ns)
{
	struct dc_coll *coll = storage_find_coll(wc->dc->store, "", "namespaces");
	const struct json_object *o = coll != NULL && ns != NULL ? coll_get(coll, "", ns) : NULL;
	struct dc_errs *errs;
	char text[PSA_ERR_MAX];

	if ((errs = kc_calloc(1, sizeof(*errs))) == NULL)
		return -ENOMEM;
	label_errs(kc_json_get(o, "metadata", "labels"), errs);
	errs_string(errs, text, sizeof(text));
	kc_log_info(NULL, "podsecurity: %s %s/%s: pod-security.kubernetes.io/error: "
	    "Failed to parse policy: %s", wc->rt->qualified, ns, obj_name(obj), text);
	kc_free(errs);
	return 0;
}

/*
 * 'would violate PodSecurity "<p>": <violations>' in '*ret' (NULL when the
 * pod passes); 0 or -ENOMEM.
 */
static int
would_violate(const struct dc *dc, const struct json_object *meta,
    const struct json_object *spec, const struct kc_psa_policy *p, char **ret)
{
	char *text;
	int n;

	*ret = NULL;
	if ((n = evaluate(dc, meta, spec, p, true, &text)) <= 0)
		return n;
	*ret = violation("would violate", p, text);
	kc_free(text);
	return *ret != NULL ? 0 : -ENOMEM;
}

/*
 * EvaluatePod: a pod's or template's metadata and spec against the
 * namespace's policy; 'enforce' false for workloads.
 */
static int
evaluate_pod(struct dc_write_ctx *wc, const struct json_object *obj,
    const struct json_object *meta, const struct json_object *spec, bool enforce)
{
	const char *ns = kc_json_str(obj, "metadata", "namespace");
	struct nspolicy *np;
	char *text = NULL, *msg = NULL;
	int n, r = 0;

	if ((np = kc_calloc(1, sizeof(*np))) == NULL)
		return -ENOMEM;
	ns_policy(wc->dc, ns, np);
	if (np->nerr == 0 && np->enforce.level == KC_PSA_PRIVILEGED &&
	    np->audit.level == KC_PSA_PRIVILEGED && np->warn.level == KC_PSA_PRIVILEGED)
		goto out;
	if (np->nerr > 0 && (r = log_label_errors(wc, obj, ns)) < 0)
		goto out;
	if (enforce && np->enforce.level != KC_PSA_PRIVILEGED) {
		if ((n = evaluate(wc->dc, meta, spec, &np->enforce, true, &text)) < 0) {
			r = n;
			goto out;
		}
		if (n > 0) {
			if ((msg = violation("violates", &np->enforce, text)) == NULL)
				r = -ENOMEM;
			else
				r = forbid(wc, obj_name(obj), msg);
			goto out;
		}
	}
	if (np->audit.level != KC_PSA_PRIVILEGED) {
		if ((r = would_violate(wc->dc, meta, spec, &np->audit, &msg)) < 0)
			goto out;
		if (msg != NULL)
			kc_log_info(NULL, "podsecurity: %s %s/%s: "
			    "pod-security.kubernetes.io/audit-violations: %s",
			    wc->rt->qualified, ns, obj_name(obj), msg);
		msg = kc_free(msg);
	}
	if (np->warn.level != KC_PSA_PRIVILEGED) {
		if ((r = would_violate(wc->dc, meta, spec, &np->warn, &msg)) < 0)
			goto out;
		if (msg != NULL && resp_warning(wc->resp, msg) == -ENOMEM)
			r = -ENOMEM;
	}
out:
	kc_free(text);
	kc_free(msg);
	kc_free(np);
	return r;
}

/* Where each workload kind keeps its pod template. */
static const struct {
	const char	*group, *plural;
	const char	*path[4];
} workloads[] = {
	{ "", "podtemplates", { "template" } },
	{ "", "replicationcontrollers", { "spec", "template" } },
	{ "apps", "daemonsets", { "spec", "template" } },
	{ "apps", "deployments", { "spec", "template" } },
	{ "apps", "replicasets", { "spec", "template" } },
	{ "apps", "statefulsets", { "spec", "template" } },
	{ "batch", "cronjobs", { "spec", "jobTemplate", "spec", "template" } },
	{ "batch", "jobs", { "spec", "template" } },
};

static int
admit_workload(struct dc_write_ctx *wc, const struct json_object *obj, size_t w)
{
	const char *const *p = workloads[w].path;
	struct json_object *tmpl = kc_json_getv(obj, p[0], p[1], p[2], p[3], (const char *)NULL);
	struct json_object *spec = kc_json_obj_of(tmpl, "spec");

	if (spec == NULL)
		return 0;
	return evaluate_pod(wc, obj, kc_json_obj_of(tmpl, "metadata"), spec, false);
}

/*
 * Namespaces
 */

/* The label errors as field errors, in upstream's order. */
static void
label_errs(const struct json_object *labels, struct dc_errs *errs)
{
	memset(errs, 0, sizeof(*errs));
	for (size_t i = 0; i < KC_ARRAY_SIZE(modes); i++) {
		char key[64], field[96], quoted[DC_SEGMENT_MAX + 16];
		enum kc_psa_level l;
		unsigned m;
		const char *v;

		(void)kc_strlcpy(key, KC_PSA_LABEL_PREFIX, sizeof(key));
		(void)kc_strlcat(key, modes[i], sizeof(key));
		errors_textf(field, sizeof(field), "metadata.labels[%s]", key);
		if ((v = kc_json_str(labels, key)) != NULL && kc_psa_parse_level(v, &l) < 0)
			errs_invalid(errs, field, kc_sbuf_quoted(quoted, sizeof(quoted), v),
			    "must be one of privileged, baseline, restricted");
		(void)kc_strlcat(key, "-version", sizeof(key));
		errors_textf(field, sizeof(field), "metadata.labels[%s]", key);
		if ((v = kc_json_str(labels, key)) != NULL && kc_psa_parse_version(v, &m) < 0)
			errs_invalid(errs, field, kc_sbuf_quoted(quoted, sizeof(quoted), v),
			    "must be \"latest\" or \"v1.x\"");
	}
}

/* 403 with the Invalid message: Namespace "x" is invalid: <errors>. */
static int
refuse_labels(struct dc_write_ctx *wc, const char *name, const struct dc_errs *errs)
{
	char text[PSA_ERR_MAX], quoted[DC_SEGMENT_MAX + 8];
	char *msg;

	errs_string(errs, text, sizeof(text));
	msg = kc_asprintf("Namespace %s is invalid: %s",
	    kc_sbuf_quoted(quoted, sizeof(quoted), name), text);
	if (msg == NULL)
		return -ENOMEM;
	errors_details(wc->resp, KC_EFORBIDDEN, "", "namespaces", name, msg);
	kc_free(msg);
	wc->answered = true;
	return KC_EFORBIDDEN;
}

/* One violation text of the namespace dry run and its pods. */
struct finding {
	char		*text;
	const char	*first;		/* the smallest pod name */
	size_t		 npods;
};

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The controller uid of a pod, or NULL. */
static const char *
controller_uid(const struct json_object *pod)
{
	struct json_object *refs = kc_json_get(pod, "metadata", "ownerReferences");

	for (size_t i = 0; i < arr_len(refs); i++) {
		struct json_object *ref = json_object_array_get_idx(refs, i);

		if (kc_json_bool(ref, false, "controller"))
			return kc_json_str(ref, "uid");
	}
	return NULL;
}

/*
 * prioritizePods: pods of distinct controllers (and pods without one)
 * first, the other replicas after, so a capped check sees every kind.
 */
static int
prioritize(struct json_object **pods, size_t n)
{
	struct json_object **out, **rest;
	const char **seen;
	size_t nout = 0, nrest = 0, nseen = 0;

	out = kc_calloc(n + 1, sizeof(*out));
	rest = kc_calloc(n + 1, sizeof(*rest));
	seen = kc_calloc(n + 1, sizeof(*seen));
	if (out == NULL || rest == NULL || seen == NULL) {
		kc_free(out);
		kc_free(rest);
		kc_free(seen);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const char *uid = controller_uid(pods[i]);
		bool dup = false;

		for (size_t j = 0; uid != NULL && j < nseen && !dup; j++)
			dup = strcmp(seen[j], uid) == 0;
		if (dup) {
			rest[nrest++] = pods[i];
			continue;
		}
		if (uid != NULL)
			seen[nseen++] = uid;
		out[nout++] = pods[i];
	}
	memcpy(pods, out, nout * sizeof(*pods));
	memcpy(pods + nout, rest, nrest * sizeof(*pods));
	kc_free(out);
	kc_free(rest);
	kc_free(seen);
	return 0;
}

/* Adds the warnings of the namespace dry run to the reply. */
static int
warn_findings(struct dc_write_ctx *wc, const char *ns, const struct kc_psa_policy *p,
    struct finding *f, size_t nf, size_t checked, size_t total)
{
	char name[KC_PSA_POLICY_NAME_MAX], qns[DC_SEGMENT_MAX + 8], qp[64];
	char **lines = NULL;
	char *w;
	int r = 0;

	if (checked < total) {
		if ((w = kc_asprintf("new PodSecurity enforce level only checked against the "
		    "first %zu of %zu existing pods", checked, total)) == NULL)
			return -ENOMEM;
		r = resp_warning(wc->resp, w);
		kc_free(w);
		if (r == -ENOMEM)
			return r;
	}
	if (nf == 0)
		return 0;
	(void)kc_psa_policy_name(p, name, sizeof(name));
	if ((w = kc_asprintf("existing pods in namespace %s violate the new PodSecurity "
	    "enforce level %s", kc_sbuf_quoted(qns, sizeof(qns), ns),
	    kc_sbuf_quoted(qp, sizeof(qp), name))) == NULL)
		return -ENOMEM;
	r = resp_warning(wc->resp, w);
	kc_free(w);
	if (r == -ENOMEM)
		return r;
	if ((lines = kc_calloc(nf, sizeof(*lines))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < nf; i++) {
		if (f[i].npods == 1)
			lines[i] = kc_asprintf("%s: %s", f[i].first, f[i].text);
		else if (f[i].npods == 2)
			lines[i] = kc_asprintf("%s (and 1 other pod): %s", f[i].first, f[i].text);
		else
			lines[i] = kc_asprintf("%s (and %zu other pods): %s", f[i].first,
			    f[i].npods - 1, f[i].text);
		if (lines[i] == NULL) {
			r = -ENOMEM;
			goto out;
		}
	}
	qsort(lines, nf, sizeof(*lines), cmp_str);
	for (size_t i = 0; i < nf && r != -ENOMEM; i++)
		r = resp_warning(wc->resp, lines[i]);
	r = r == -ENOMEM ? r : 0;
out:
	for (size_t i = 0; i < nf; i++)
		kc_free(lines[i]);
	kc_free(lines);
	return r;
}

/* EvaluatePodsInNamespace: the existing pods against a new enforce level. */
static int
dry_run_pods(struct dc_write_ctx *wc, const char *ns, const struct kc_psa_policy *p)
{
	struct dc_coll *coll = storage_find_coll(wc->dc->store, "", "pods");
	struct json_object **pods = NULL;
	struct finding *f = NULL;
	size_t n = 0, nf = 0, checked;
	int r;

	if (coll == NULL || coll_count(coll, ns) == 0)
		return 0;
	if ((r = coll_list(coll, ns, NULL, &pods, &n)) < 0)
		return r;
	if ((r = prioritize(pods, n)) < 0)
		goto out;
	checked = KC_MIN(n, (size_t)PSA_NS_PODS_MAX);
	if ((f = kc_calloc(checked + 1, sizeof(*f))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < checked; i++) {
		const char *pname = kc_json_str(pods[i], "metadata", "name");
		char *text;
		size_t j;

		if ((r = evaluate(wc->dc, kc_json_get(pods[i], "metadata"),
		    kc_json_get(pods[i], "spec"), p, false, &text)) < 0)
			goto out;
		if (r == 0)
			continue;
		pname = pname != NULL ? pname : "";
		for (j = 0; j < nf && strcmp(f[j].text, text) != 0; j++)
			;
		if (j == nf) {
			f[nf++] = (struct finding){ .text = text, .first = pname };
		} else {
			kc_free(text);
			if (strcmp(pname, f[j].first) < 0)
				f[j].first = pname;
		}
		f[j].npods++;
	}
	r = warn_findings(wc, ns, p, f, nf, checked, n);
out:
	for (size_t i = 0; f != NULL && i < nf; i++)
		kc_free(f[i].text);
	kc_free(f);
	objs_free(pods, n);
	return r;
}

static bool
same_policy(const struct kc_psa_policy *a, const struct kc_psa_policy *b)
{
	return a->level == b->level && a->minor == b->minor;
}

/* ValidateNamespace */
static int
admit_namespace(struct dc_write_ctx *wc, const struct json_object *obj)
{
	const char *name = kc_json_str(obj, "metadata", "name");
	struct json_object *labels = kc_json_get(obj, "metadata", "labels");
	struct json_object *olabels;
	struct dc_errs *errs, *oerrs = NULL;
	struct kc_psa_policy np, op;
	char *a = NULL, *b = NULL;
	int r = 0;

	name = name != NULL ? name : "";
	if ((errs = kc_calloc(1, sizeof(*errs))) == NULL)
		return -ENOMEM;
	label_errs(labels, errs);
	if (wc->op == DC_OP_CREATE) {
		if (errs->n > 0)
			r = refuse_labels(wc, name, errs);
		goto out;
	}
	olabels = kc_json_get(wc->old, "metadata", "labels");
	if ((oerrs = kc_calloc(1, sizeof(*oerrs))) == NULL ||
	    (a = kc_malloc(PSA_ERR_MAX)) == NULL || (b = kc_malloc(PSA_ERR_MAX)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	label_errs(olabels, oerrs);
	if (errs->n > 0) {
		errs_string(errs, a, PSA_ERR_MAX);
		errs_string(oerrs, b, PSA_ERR_MAX);
		if (oerrs->n == 0 || strcmp(a, b) != 0) {
			r = refuse_labels(wc, name, errs);
			goto out;
		}
	}
	(void)kc_psa_namespace_policy(labels, "enforce", &np, NULL);
	(void)kc_psa_namespace_policy(olabels, "enforce", &op, NULL);
	if (same_policy(&np, &op) || np.level == KC_PSA_PRIVILEGED ||
	    (np.minor == op.minor && np.level <= op.level))
		goto out;
	r = dry_run_pods(wc, name, &np);
out:
	kc_free(a);
	kc_free(b);
	kc_free(oerrs);
	kc_free(errs);
	return r;
}

static int
admit(struct dc_write_ctx *wc, struct json_object *obj, struct kc_status *st)
{
	const char *group = wc->rt->group, *plural = wc->rt->plural;

	(void)st;
	if (plugin_state(wc->dc, &podsecurity_plugin) == NULL || obj == NULL ||
	    (wc->op != DC_OP_CREATE && wc->op != DC_OP_UPDATE))
		return 0;
	if (group[0] == '\0' && strcmp(plural, "pods") == 0) {
		if (wc->subresource != NULL && strcmp(wc->subresource, "ephemeralcontainers") != 0)
			return 0;
		if (wc->op == DC_OP_UPDATE && wc->old != NULL && !significant_update(obj, wc->old))
			return 0;
		return evaluate_pod(wc, obj, kc_json_obj_of(obj, "metadata"),
		    kc_json_obj_of(obj, "spec"), true);
	}
	if (wc->subresource != NULL)
		return 0;
	if (group[0] == '\0' && strcmp(plural, "namespaces") == 0)
		return admit_namespace(wc, obj);
	for (size_t i = 0; i < KC_ARRAY_SIZE(workloads); i++)
		if (strcmp(group, workloads[i].group) == 0 &&
		    strcmp(plural, workloads[i].plural) == 0)
			return admit_workload(wc, obj, i);
	return 0;
}

static int
podsecurity_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	struct psa *ps;

	(void)cfg;
	(void)st;
	if (plugin_state(dc, &podsecurity_plugin) != NULL)
		return 0;
	if ((ps = kc_calloc(1, sizeof(*ps))) == NULL)
		return -ENOMEM;
	ps->dc = dc;
	plugin_set_state(dc, &podsecurity_plugin, ps);
	return 0;
}

static void
podsecurity_stop(struct dc *dc)
{
	struct psa *ps = plugin_state(dc, &podsecurity_plugin);

	plugin_set_state(dc, &podsecurity_plugin, NULL);
	kc_free(ps);
}

/* Admission: PodSecurity, after the webhooks' mutations, before quota (plugins.c). */
const struct dc_plugin podsecurity_plugin = {
	.name = "podsecurity",
	.init = podsecurity_start,
	.fini = podsecurity_stop,
	.admit = admit,
};

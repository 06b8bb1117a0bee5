/*
 * Pod Security Standards: the checks of k8s.io/pod-security-admission,
 * their version gating and upstream's messages, for the devcluster's
 * PodSecurity admission and for the controller, which refuses a Run whose
 * pods its namespace would refuse.
 *
 *	struct kc_psa_policy p;
 *	char msg[4096];
 *	struct kc_sbuf b;
 *
 *	kc_sbuf_init(&b, msg, sizeof(msg));
 *	(void)kc_psa_namespace_policy(ns_labels, "enforce", &p, NULL);
 *	if ((n = kc_psa_check(pod_meta, pod_spec, &p, &b)) > 0)
 *		... msg: privileged (container "main" must not set
 *		    securityContext.privileged=true), hostPath volumes (volume "root")
 *
 * Everything here is pure: json-c trees in, text out, no state; safe from
 * any thread on trees nobody modifies meanwhile.
 */
#ifndef KC_PODSECURITY_H
#define KC_PODSECURITY_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include <kc/sbuf.h>

enum kc_psa_level {
	KC_PSA_PRIVILEGED,
	KC_PSA_BASELINE,
	KC_PSA_RESTRICTED,
};

/*
 * The newest policy version this engine knows (upstream's registry
 * maxVersion): "latest" and every v1.N above it evaluate as v1.35.
 */
#define KC_PSA_MINOR_MAX	35u
/*
 * 'minor' of the version "v1.0" (0 stands for "latest"). v1.0 evaluates
 * as every v1.N below 1.8 does; only its name differs.
 */
#define KC_PSA_MINOR_V1_0	(~0u)

struct kc_psa_policy {
	enum kc_psa_level level;
	unsigned	  minor;	/* 0 = "latest"; else the v1.N evaluated */
};

/* "privileged:latest", "restricted:v1.25": the longest fits in this many bytes. */
#define KC_PSA_POLICY_NAME_MAX	32

/* The pod-security.kubernetes.io/ labels. */
#define KC_PSA_LABEL_PREFIX	"pod-security.kubernetes.io/"

/* "privileged" | "baseline" | "restricted"; -EINVAL otherwise ('*out' untouched). */
int	kc_psa_parse_level(const char *s, enum kc_psa_level *out);

/*
 * "latest" (0) | "v1.N" (N, KC_PSA_MINOR_V1_0 for v1.0), upstream's rule
 * for the -version labels: no sign, no leading zero, no other major.
 * -EINVAL otherwise ('*minor' untouched).
 */
int	kc_psa_parse_version(const char *s, unsigned *minor);

/* "privileged", "baseline", "restricted" (a bad value gives "restricted"). */
const char *kc_psa_level_name(enum kc_psa_level l);

/*
 * The policy a kube-apiserver of v1.'server_minor' evaluates for 'p':
 * "latest" and newer versions as its own minor, which holds no newer
 * checks (upstream's registry maxVersion, lowered by emulation). 0 for
 * 'server_minor' (unknown) leaves 'p' as it is. Name messages after 'p',
 * evaluate the result.
 */
struct kc_psa_policy kc_psa_emulate(const struct kc_psa_policy *p, unsigned server_minor);

/* "baseline:latest", "restricted:v1.25" into buf (KC_PSA_POLICY_NAME_MAX); returns buf. */
const char *kc_psa_policy_name(const struct kc_psa_policy *p, char *buf, size_t size);

/*
 * Evaluates a pod's metadata and spec (a Pod's, or a pod template's)
 * against 'p'. Appends to 'out' upstream's forbidden-reason list exactly
 * as kube-apiserver words it after 'violates PodSecurity "baseline:latest": ',
 * e.g.
 *	privileged (container "main" must not set securityContext.privileged=true),
 *	hostPath volumes (volume "root")
 * (each failed check's reason, its detail in parentheses, joined by ", ",
 * in upstream's check order). 'meta' and 'spec' may be NULL (empty).
 * Returns the number of failed checks (0 = allowed; nothing appended), or
 * -ENOMEM. What does not fit in 'out' is cut as kc_sbuf cuts.
 */
int	kc_psa_check(const struct json_object *meta, const struct json_object *spec,
	    const struct kc_psa_policy *p, struct kc_sbuf *out);

/*
 * As kc_psa_check(), the reasons only ("privileged, hostPath volumes"):
 * the form upstream's namespace dry run warns with.
 */
int	kc_psa_check_reasons(const struct json_object *meta, const struct json_object *spec,
	    const struct kc_psa_policy *p, struct kc_sbuf *out);

/*
 * The policy a namespace's labels ('ns_labels', its metadata.labels, may
 * be NULL) set for 'mode', "enforce" | "audit" | "warn". An absent label
 * gives privileged and latest. A bad value does what upstream does with
 * it: a bad enforce level enforces restricted, a bad audit or warn level
 * is privileged (fails open), a bad version is latest. Without a warn
 * label, warn takes the enforce level (and its version, when no
 * warn-version is set) if that is stricter, as upstream. '*out' is always
 * set. Returns the number of this mode's labels that are invalid (0, 1 or
 * 2), each described in 'err' (may be NULL) as upstream's field error,
 *	metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value:
 *	"foo": must be one of privileged, baseline, restricted
 * (two are joined as Go's error aggregate joins them: "[a, b]"); -EINVAL
 * for an unknown 'mode'.
 */
int	kc_psa_namespace_policy(const struct json_object *ns_labels, const char *mode,
	    struct kc_psa_policy *out, struct kc_sbuf *err);

#endif

/*
 * admwebhook.h: the admission webhook caller (admwebhook.c), a plug-in
 * that serves MutatingWebhookConfigurations and
 * ValidatingWebhookConfigurations (their defaults and validation) and
 * calls their webhooks as kube-apiserver's MutatingAdmissionWebhook and
 * ValidatingAdmissionWebhook do.
 */
#ifndef DEVCLUSTER_ADMWEBHOOK_H
#define DEVCLUSTER_ADMWEBHOOK_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "devcluster.h"

#define ADMWEBHOOK_TIMEOUT_S	10		/* timeoutSeconds' default */
#define ADMWEBHOOK_TIMEOUT_MAX_S 30		/* ... and its ceiling */
#define ADMWEBHOOK_RESP_MAX	(16u << 20)	/* an AdmissionReview answer */
#define ADMWEBHOOK_KEEP_MS	120000		/* a request's answers, at most */
#define ADMWEBHOOK_WARNINGS_MAX	16		/* warnings kept from one answer */

extern const struct dc_plugin admwebhook_plugin;

/* What a rule is matched against: one request, or an equivalent resource. */
struct admwebhook_attrs {
	const char	*op;		/* "CREATE", "UPDATE", "DELETE" */
	const char	*group;
	const char	*version;
	const char	*resource;	/* the plural */
	const char	*subresource;	/* "" when none */
	const char	*ns;		/* "" for cluster-scoped objects */
	bool		 ns_object;	/* the core namespaces resource itself */
};

/*
 * rules.Matcher of upstream's webhook predicates: operations, apiGroups,
 * apiVersions, resources ("*" is every resource without subresources;
 * "<resource>/<subresource>" with "*" on either side) and scope ("*",
 * "Cluster", "Namespaced"; a Namespace is cluster-scoped).
 */
bool	admwebhook_rule_matches(const struct json_object *rule,
	    const struct admwebhook_attrs *);

/* An answer of a webhook, checked (admwebhook_check()). */
struct admwebhook_answer {
	bool			 allowed;
	struct json_object	*result;	/* response.status, or NULL */
	struct json_object	*patch;		/* a JSON patch's operations, or NULL */
	char			*warnings[ADMWEBHOOK_WARNINGS_MAX];
	size_t			 nwarnings;
};

/*
 * Checks the answer 'body' to an AdmissionReview of 'review_version'
 * ("v1" or "v1beta1") with 'uid', as VerifyAdmissionResponse does, and
 * decodes response.patch (base64, a JSON patch). 0 and the answer in
 * 'ret' (cleared by admwebhook_answer_clear()); KC_EINTERNAL with
 * upstream's reason in 'err' ("expected response.uid=\"a\", got \"b\"",
 * "webhook response was absent", "validating webhook may not return
 * response.patch", ...); KC_EPARSE when the answer (or its patch's
 * base64) does not decode; KC_EINVALID for a patch that is not a JSON
 * patch or of another patchType; -ENOMEM.
 */
int	admwebhook_check(const char *review_version, const char *uid, bool mutating,
	    const char *body, size_t len, struct admwebhook_answer *ret, char *err,
	    size_t err_size) _must_check_;
void	admwebhook_answer_clear(struct admwebhook_answer *);

/*
 * The Status a denial answers with (webhookerrors.ToStatusErr): the
 * webhook's response.status with a code of at least 400, status
 * Failure, and the message `admission webhook "<name>" denied the
 * request: <message or reason>` (or "... denied the request without
 * explanation"). A new object, or NULL (-ENOMEM).
 */
struct json_object *admwebhook_denial(const char *webhook, const struct json_object *result);

#endif

/*
 * admission.h: trainyard-controller's admission webhooks for Projects: the
 * pure AdmissionReview handler behind POST /mutate and POST /validate.
 *
 * kube-apiserver sends an AdmissionReview (admission.k8s.io/v1 or
 * v1beta1, the first of the webhook's admissionReviewVersions it
 * supports) for each Run and ProjectMember created or updated in a
 * project namespace (the webhook configurations' namespaceSelector) and
 * applies the answer:
 *
 *	/mutate		records who asked: the annotation
 *			trainyard.dev/submitted-by on a Run and
 *			trainyard.dev/invited-by on a ProjectMember, from the
 *			review's userInfo on create and kept from the old
 *			object on update, whatever the client sent, so
 *			attribution cannot be forged (a JSONPatch, or none
 *			when the object already says the right thing);
 *	/validate	refuses, with the field and the reason, a new Run
 *			whose Service or NetworkPolicy name the caches show
 *			taken by someone else's object (names.h), a Run whose
 *			profile the project does not allow, that asks for
 *			more GPUs than maxGPUsPerRun, or whose pods would ask
 *			for more than its profile's security envelope allows
 *			(model.h: every violation, in Pod Security's words),
 *			and a ProjectMember that
 *			breaks the member policy (project.c's rules, plus the
 *			ones only admission can tell: expiresAt within
 *			maxInvitationTTL from now, maxGPUs within
 *			maxGPUsPerMember, an immutable subject, no second
 *			membership for a subject, at most maxMembers).
 *
 * The controller checks everything again: webhooks can be bypassed by
 * misconfiguration. What the handler needs of the cluster comes through
 * struct admission_ops (the controller's caches), so it stays pure: no
 * I/O, no clock (the caller passes 'now'), no globals; thread-safe if
 * the callbacks are.
 *
 * A body that is not an AdmissionReview gets HTTP 400 with a plain-text
 * reason; anything else gets 200 and response.allowed. A denial carries
 * status {code 403, reason Forbidden, message}: kube-apiserver answers
 * the client 'admission webhook "<name>" denied the request: <message>'.
 */
#ifndef TY_ADMISSION_H
#define TY_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <json-c/json.h>

#include <kc/buf.h>
#include <kc/macro.h>

#include "config.h"

#define TY_ANN_SUBMITTED_BY	"trainyard.dev/submitted-by"
#define TY_ANN_INVITED_BY	"trainyard.dev/invited-by"
#define ADMISSION_BODY_MAX	(3u << 20)	/* kube-apiserver's request limit */
#define ADMISSION_ANSWER_MAX	(1u << 20)

enum admission_hook {
	ADMISSION_MUTATE,
	ADMISSION_VALIDATE,
};

/*
 * The cluster as the handler sees it. Each lookup returns a new reference
 * (the caller puts it) or NULL when there is none.
 */
struct admission_ops {
	void	*arg;
	/* The Project whose spec.namespaces lists 'ns'. */
	struct json_object *(*project_of)(void *arg, const char *ns);
	/* The ResourceProfile 'name'. */
	struct json_object *(*profile)(void *arg, const char *name);
	/* The ProjectMembers of namespace 'ns', as a JSON array. */
	struct json_object *(*members)(void *arg, const char *ns);
	/*
	 * Whether the object of 'kind' ("service", "networkpolicy") named
	 * 'name' in 'ns', as the controller caches it, is someone else's
	 * (names.h: not a Run's of that name); NULL or false when not known.
	 */
	bool	(*name_taken)(void *arg, const char *kind, const char *ns, const char *name);
	const struct ty_config *cfg;
};

/* What one review was, for the metrics and the log. */
struct admission_info {
	const char	*version;	/* "v1", "v1beta1"; "unknown" for a 400 */
	const char	*kind;		/* "Run", "ProjectMember", "" */
	const char	*result;	/* "allowed", "patched", "denied", "invalid" (400) */
	char		 message[512];	/* the denial, "" otherwise */
};

/*
 * Handles one AdmissionReview of 'len' bytes for 'hook' at wall-clock time
 * 'now'; the answer (an AdmissionReview of the request's apiVersion, with
 * response.uid = request.uid) goes into 'out', a kc_buf the caller
 * initialized. Returns the HTTP status: 200, 400 (not an AdmissionReview:
 * not JSON, another kind or apiVersion, no request or uid) or 413 past
 * ADMISSION_BODY_MAX; -ENOMEM or -E2BIG when no answer could be made.
 * Objects of other kinds, and DELETE and CONNECT, are allowed unchanged.
 */
int	admission_handle(enum admission_hook hook, const char *body, size_t len,
	    const struct admission_ops *ops, time_t now, struct kc_buf *out,
	    struct admission_info *info) _must_check_;

#endif

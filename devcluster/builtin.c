/*
 * builtin.c: what the built-in kinds do on top of plain storage.
 *
 * Each struct dc_type_ops here plays the part of a kube-apiserver
 * registry strategy plus the defaulting and admission plugins that touch
 * the kind:
 *
 *	Namespace	spec.finalizers [kubernetes], status.phase Active,
 *			label kubernetes.io/metadata.name
 *	Pod		upstream defaults (restartPolicy, dnsPolicy, grace,
 *			scheduler, container termination message and pull
 *			policy, limits copied to requests), admission defaults
 *			(service account, priority, the two 300 s
 *			tolerations), status Pending with its QoS class, spec
 *			immutability, graceful deletion on a node
 *	Service		type ClusterIP, clusterIP from 10.96.0.0/12 (None
 *			stays None), node ports, TCP, targetPort = port,
 *			immutable clusterIP
 *	Secret		type Opaque, stringData folded into data
 *	ConfigMap	key names, immutable
 *	Event		field selectors; events.k8s.io/v1 as a view of the
 *			core/v1 store (regarding <-> involvedObject, ...)
 *
 * Validation appends field errors (errors.c) worded as upstream's
 * k8s.io/apimachinery/pkg/util/validation messages, so kubectl prints
 * what it would print against a real cluster.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/sbuf.h>
#include <kc/str.h>
#include <kc/validation.h>

#include "devcluster.h"

#define POD_UPDATE_MSG	"pod updates may not change fields other than " \
	"`spec.containers[*].image`,`spec.initContainers[*].image`," \
	"`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing " \
	"tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if " \
	"it was previously negative)"
#define ANNOTATIONS_MAX	(256 * 1024)
#define SVC_CIDR_BASE	0x0a600000u	/* 10.96.0.0/12 */
#define SVC_CIDR_SIZE	(1u << 20)
#define NODE_PORT_MIN	30000
#define NODE_PORT_MAX	32767

/*
 * Names, labels and metadata
 */

/* Each message of a pkg/util/validation check as an Invalid field error. */
static size_t
check(size_t (*valid)(struct kc_str, struct kc_valid *), const char *value,
    const char *field, const char *quoted, struct dc_errs *errs)
{
	struct kc_valid v;
	size_t n = valid(kc_str_from(value), &v);

	for (size_t i = 0; i < n; i++)
		errs_invalid(errs, field, quoted, v.msg[i]);
	return n;
}

/* IsQualifiedName(key) as Invalid errors on 'shown' (the value quoted). */
static void
qualified_name(const char *field, const char *key, const char *shown, struct dc_errs *errs)
{
	char q[512];

	(void)check(kc_valid_qualified_name, key, field, kc_sbuf_quoted(q, sizeof(q), shown),
	    errs);
}

void
builtin_validate_name(enum dc_name_rule rule, const char *field, const char *name,
    struct dc_errs *errs)
{
	char q[DC_NAME_MAX * 4 + 64];

	(void)kc_sbuf_quoted(q, sizeof(q), name);
	switch (rule) {
	case DC_NAME_SUBDOMAIN:
		(void)check(kc_valid_dns1123_subdomain, name, field, q, errs);
		break;
	case DC_NAME_LABEL:
		(void)check(kc_valid_dns1123_label, name, field, q, errs);
		break;
	case DC_NAME_DNS1035:
		(void)check(kc_valid_dns1035_label, name, field, q, errs);
		break;
	case DC_NAME_PATH:
		if (strcmp(name, ".") == 0)
			errs_invalid(errs, field, q, "may not be '.'");
		else if (strcmp(name, "..") == 0)
			errs_invalid(errs, field, q, "may not be '..'");
		else {
			if (strchr(name, '/') != NULL)
				errs_invalid(errs, field, q, "may not contain '/'");
			if (strchr(name, '%') != NULL)
				errs_invalid(errs, field, q, "may not contain '%'");
		}
		break;
	}
}

void
builtin_validate_labels(const struct json_object *labels, const char *field,
    struct dc_errs *errs)
{
	if (labels == NULL)
		return;
	if (!json_object_is_type(labels, json_type_object)) {
		errs_add(errs, "TypeInvalid", field,
		    "Invalid value: \"\": must be a map of strings");
		return;
	}
	json_object_object_foreach((struct json_object *)(uintptr_t)labels, k, v) {
		const char *s = json_object_get_string(v);
		char q[512];

		qualified_name(field, k, k, errs);
		if (!json_object_is_type(v, json_type_string)) {
			errs_invalid(errs, field, "null", "must be a string");
			continue;
		}
		(void)check(kc_valid_label_value, s, field,
		    kc_sbuf_quoted(q, sizeof(q), s), errs);
	}
}

void
builtin_validate_annotations(const struct json_object *ann, const char *field,
    struct dc_errs *errs)
{
	size_t total = 0;

	if (ann == NULL)
		return;
	if (!json_object_is_type(ann, json_type_object)) {
		errs_add(errs, "TypeInvalid", field,
		    "Invalid value: \"\": must be a map of strings");
		return;
	}
	json_object_object_foreach((struct json_object *)(uintptr_t)ann, k, v) {
		char lower[512];
		size_t i;

		for (i = 0; k[i] != '\0' && i + 1 < sizeof(lower); i++)
			lower[i] = (char)(k[i] >= 'A' && k[i] <= 'Z' ? k[i] + 32 : k[i]);
		lower[i] = '\0';
		qualified_name(field, lower, k, errs);
		total += strlen(k);
		if (json_object_is_type(v, json_type_string))
			total += (size_t)json_object_get_string_len(v);
		else
			errs_invalid(errs, field, "null", "must be a string");
	}
	if (total > ANNOTATIONS_MAX)
		errs_add(errs, "TooLong", field,
		    "Too long: must have at most %d bytes", ANNOTATIONS_MAX);
}

static void
validate_owner_refs(const struct json_object *refs, struct dc_errs *errs)
{
	size_t n = json_object_is_type(refs, json_type_array) ?
	    json_object_array_length(refs) : 0;
	char first[600] = "";

	for (size_t i = 0; i < n; i++) {
		struct json_object *r = json_object_array_get_idx(refs, i);
		static const char *const req[] = { "apiVersion", "kind", "name", "uid" };
		char f[96];

		for (size_t j = 0; j < KC_ARRAY_SIZE(req); j++) {
			const char *v = kc_json_str(r, req[j]);

			if (v == NULL || v[0] == '\0') {
				(void)snprintf(f, sizeof(f), "metadata.ownerReferences.%s", req[j]);
				errs_invalid(errs, f, "\"\"", strcmp(req[j], "uid") == 0 ?
				    "uid must not be empty" : strcmp(req[j], "name") == 0 ?
				    "name must not be empty" : strcmp(req[j], "kind") == 0 ?
				    "kind must not be empty" : "version must not be empty");
			}
		}
		if (kc_json_bool(r, false, "controller")) {
			const char *k = kc_json_str(r, "kind"), *nm = kc_json_str(r, "name");
			char cur[sizeof(first)], msg[sizeof(first) * 2 + 96];

			(void)snprintf(cur, sizeof(cur), "%s/%s", k != NULL ? k : "",
			    nm != NULL ? nm : "");
			if (first[0] == '\0') {
				(void)kc_strlcpy(first, cur, sizeof(first));
				continue;
			}
			/* upstream's ValidateOwnerReferences */
			(void)snprintf(msg, sizeof(msg), "Only one reference can have "
			    "Controller set to true. Found \"true\" in references for %s and %s",
			    first, cur);
			errs_invalid(errs, "metadata.ownerReferences",
			    "[]v1.OwnerReference{...}", msg);
		}
	}
}

void
builtin_validate_meta(const struct json_object *obj, struct dc_errs *errs)
{
	struct json_object *meta = kc_json_obj_of(obj, "metadata");
	struct json_object *fins = kc_json_arr_of(meta, "finalizers");

	builtin_validate_labels(kc_json_get(meta, "labels"), "metadata.labels", errs);
	builtin_validate_annotations(kc_json_get(meta, "annotations"), "metadata.annotations",
	    errs);
	validate_owner_refs(kc_json_get(meta, "ownerReferences"), errs);
	for (size_t i = 0; fins != NULL && i < json_object_array_length(fins); i++) {
		const char *f = json_object_get_string(json_object_array_get_idx(fins, i));

		if (f == NULL || !json_object_is_type(json_object_array_get_idx(fins, i),
		    json_type_string))
			errs_invalid(errs, "metadata.finalizers", "null", "must be a string");
		else
			qualified_name("metadata.finalizers", f, f, errs);
	}
}

/*
 * Small JSON helpers
 */

static int
set_default_str(struct json_object *o, const char *key, const char *value)
{
	if (kc_json_get(o, key) != NULL)
		return 0;
	return kc_json_set_str(o, key, value);
}

static int
set_default_int(struct json_object *o, const char *key, int64_t value)
{
	if (kc_json_get(o, key) != NULL)
		return 0;
	return kc_json_set_int(o, key, value);
}

static size_t
arr_len(const struct json_object *a)
{
	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static bool
str_empty(const char *s)
{
	return s == NULL || s[0] == '\0';
}

/*
 * Namespaces
 */

static int
ns_defaults(struct dc_write_ctx *wc, struct json_object *obj)
{
	struct json_object *meta = kc_json_ensure_obj(obj, "metadata"), *labels;
	const char *name = kc_json_str(obj, "metadata", "name");

	(void)wc;
	if (meta == NULL)
		return -ENOMEM;
	if (str_empty(name))
		return 0;
	if ((labels = kc_json_ensure_obj(meta, "labels")) == NULL)
		return -ENOMEM;
	return kc_json_set_str(labels, "kubernetes.io/metadata.name", name);
}

static int
ns_prepare_create(struct dc_write_ctx *wc, struct json_object *obj)
{
	struct json_object *spec, *fins, *status;
	bool has = false;

	(void)wc;
	if ((spec = kc_json_ensure_obj(obj, "spec")) == NULL)
		return -ENOMEM;
	/* Other finalizers stay; "kubernetes" is required (upstream's strategy). */
	if ((fins = kc_json_arr_of(spec, "finalizers")) == NULL &&
	    ((fins = json_object_new_array()) == NULL || kc_json_put(spec, "finalizers", fins) < 0))
		return -ENOMEM;
	for (size_t i = 0; i < json_object_array_length(fins); i++) {
		const char *f = json_object_get_string(json_object_array_get_idx(fins, i));

		has = has || (f != NULL && strcmp(f, "kubernetes") == 0);
	}
	if (!has && kc_json_append(fins, json_object_new_string("kubernetes")) < 0)
		return -ENOMEM;
	json_object_object_del(obj, "status");
	if ((status = kc_json_ensure_obj(obj, "status")) == NULL)
		return -ENOMEM;
	return kc_json_set_str(status, "phase", "Active");
}

static int
ns_prepare_update(struct dc_write_ctx *wc, struct json_object *obj,
    const struct json_object *old)
{
	struct json_object *spec = kc_json_ensure_obj(obj, "spec");
	struct json_object *of = kc_json_get(old, "spec", "finalizers");

	(void)wc;
	if (spec == NULL)
		return -ENOMEM;
	if (of == NULL) {
		json_object_object_del(spec, "finalizers");
		return 0;
	}
	return kc_json_put(spec, "finalizers", kc_json_copy(of));
}

static const char *const ns_fields[] = { "status.phase", NULL };

const struct dc_type_ops ops_namespace = {
	.defaults = ns_defaults,
	.prepare_create = ns_prepare_create,
	.prepare_update = ns_prepare_update,
	.field_selectors = ns_fields,
};

/*
 * Pods
 */

static const char *
pull_policy(const char *image)
{
	const char *slash, *colon;

	if (image == NULL)
		return "IfNotPresent";
	if (strchr(image, '@') != NULL)
		return "IfNotPresent";
	slash = strrchr(image, '/');
	colon = strrchr(slash != NULL ? slash : image, ':');
	if (colon == NULL || strcmp(colon + 1, "latest") == 0)
		return "Always";
	return "IfNotPresent";
}

static int
container_defaults(struct json_object *c)
{
	struct json_object *res, *lim, *reqs, *ports;
	int r;

	if ((r = set_default_str(c, "terminationMessagePath", "/dev/termination-log")) < 0 ||
	    (r = set_default_str(c, "terminationMessagePolicy", "File")) < 0 ||
	    (r = set_default_str(c, "imagePullPolicy",
	    pull_policy(kc_json_str(c, "image")))) < 0)
		return r;
	if ((res = kc_json_ensure_obj(c, "resources")) == NULL)
		return -ENOMEM;
	lim = kc_json_obj_of(res, "limits");
	if (lim != NULL && json_object_object_length(lim) > 0) {
		if ((reqs = kc_json_ensure_obj(res, "requests")) == NULL)
			return -ENOMEM;
		json_object_object_foreach(lim, k, v) {
			if (kc_json_get(reqs, k) == NULL &&
			    kc_json_put(reqs, k, json_object_get(v)) < 0)
				return -ENOMEM;
		}
	}
	ports = kc_json_arr_of(c, "ports");
	for (size_t i = 0; i < arr_len(ports); i++) {
		struct json_object *p = json_object_array_get_idx(ports, i);

		if (json_object_is_type(p, json_type_object) &&
		    (r = set_default_str(p, "protocol", "TCP")) < 0)
			return r;
	}
	return 0;
}

static int
pod_defaults(struct dc_write_ctx *wc, struct json_object *obj)
{
	struct json_object *spec = kc_json_ensure_obj(obj, "spec");
	static const char *const lists[] = { "containers", "initContainers" };
	int r;

	(void)wc;
	if (spec == NULL)
		return -ENOMEM;
	if ((r = set_default_str(spec, "restartPolicy", "Always")) < 0 ||
	    (r = set_default_str(spec, "dnsPolicy", "ClusterFirst")) < 0 ||
	    (r = set_default_int(spec, "terminationGracePeriodSeconds", 30)) < 0 ||
	    (r = set_default_str(spec, "schedulerName", "default-scheduler")) < 0 ||
	    (kc_json_get(spec, "securityContext") == NULL &&
	    (r = kc_json_put(spec, "securityContext", json_object_new_object())) < 0) ||
	    (kc_json_get(spec, "enableServiceLinks") == NULL &&
	    (r = kc_json_set_bool(spec, "enableServiceLinks", true)) < 0))
		return r;
	for (size_t l = 0; l < KC_ARRAY_SIZE(lists); l++) {
		struct json_object *cs = kc_json_arr_of(spec, lists[l]);

		for (size_t i = 0; i < arr_len(cs); i++) {
			struct json_object *c = json_object_array_get_idx(cs, i);

			if (json_object_is_type(c, json_type_object) &&
			    (r = container_defaults(c)) < 0)
				return r;
		}
	}
	return 0;
}

const char *
builtin_pod_qos(const struct json_object *pod)
{
	static const char *const lists[] = { "containers", "initContainers" };
	bool any = false, guaranteed = true;

	for (size_t l = 0; l < KC_ARRAY_SIZE(lists); l++) {
		struct json_object *cs = kc_json_get(pod, "spec", lists[l]);

		for (size_t i = 0; i < arr_len(cs); i++) {
			struct json_object *c = json_object_array_get_idx(cs, i);
			static const char *const rs[] = { "cpu", "memory" };

			for (size_t k = 0; k < KC_ARRAY_SIZE(rs); k++) {
				struct json_object *rq = kc_json_get(c, "resources", "requests",
				    rs[k]);
				struct json_object *lm = kc_json_get(c, "resources", "limits",
				    rs[k]);

				if (rq != NULL || lm != NULL)
					any = true;
				if (lm == NULL || (rq != NULL && !kc_json_equal(rq, lm)))
					guaranteed = false;
			}
		}
	}
	if (!any)
		return "BestEffort";
	return guaranteed ? "Guaranteed" : "Burstable";
}

static int
pod_prepare_create(struct dc_write_ctx *wc, struct json_object *obj)
{
	struct json_object *spec = kc_json_ensure_obj(obj, "spec"), *status;
	const char *sa;
	int r;

	(void)wc;
	if (spec == NULL)
		return -ENOMEM;
	sa = kc_json_str(spec, "serviceAccountName");
	if (str_empty(sa))
		sa = kc_json_str(spec, "serviceAccount");
	if (str_empty(sa))
		sa = "default";
	{
		char sabuf[DC_SEGMENT_MAX];

		(void)kc_strlcpy(sabuf, sa, sizeof(sabuf));
		if ((r = kc_json_set_str(spec, "serviceAccountName", sabuf)) < 0 ||
		    (r = kc_json_set_str(spec, "serviceAccount", sabuf)) < 0)
			return r;
	}
	if ((r = set_default_int(spec, "priority", 0)) < 0 ||
	    (r = set_default_str(spec, "preemptionPolicy", "PreemptLowerPriority")) < 0)
		return r;
	/* The default NoExecute tolerations: admission in nodes.c. */
	json_object_object_del(obj, "status");
	if ((status = kc_json_ensure_obj(obj, "status")) == NULL ||
	    kc_json_set_str(status, "phase", "Pending") < 0 ||
	    kc_json_set_str(status, "qosClass", builtin_pod_qos(obj)) < 0)
		return -ENOMEM;
	return 0;
}

/* The spec with the fields an update may change taken out. */
static struct json_object *
pod_spec_masked(const struct json_object *pod, const struct json_object *tols_ok)
{
	struct json_object *spec = kc_json_copy(kc_json_obj_of(pod, "spec"));
	static const char *const lists[] = { "containers", "initContainers" };

	if (spec == NULL)
		return NULL;
	for (size_t l = 0; l < KC_ARRAY_SIZE(lists); l++) {
		struct json_object *cs = kc_json_arr_of(spec, lists[l]);

		for (size_t i = 0; i < arr_len(cs); i++)
			json_object_object_del(json_object_array_get_idx(cs, i), "image");
	}
	json_object_object_del(spec, "activeDeadlineSeconds");
	if (tols_ok != NULL)
		json_object_object_del(spec, "tolerations");
	return spec;
}

/* Every toleration of 'old' is still in 'new' (additions only). */
static bool
tolerations_added(const struct json_object *old, const struct json_object *new)
{
	struct json_object *ot = kc_json_get(old, "spec", "tolerations");
	struct json_object *nt = kc_json_get(new, "spec", "tolerations");

	for (size_t i = 0; i < arr_len(ot); i++) {
		bool found = false;

		for (size_t j = 0; j < arr_len(nt) && !found; j++)
			found = kc_json_equal(json_object_array_get_idx(ot, i),
			    json_object_array_get_idx(nt, j));
		if (!found)
			return false;
	}
	return true;
}

static void
validate_containers(const struct json_object *spec, const char *list, bool required,
    struct dc_errs *errs)
{
	struct json_object *cs = kc_json_arr_of(spec, list);
	char f[128];

	if (arr_len(cs) == 0) {
		if (required) {
			(void)snprintf(f, sizeof(f), "spec.%s", list);
			errs_required(errs, f, NULL);
		}
		return;
	}
	for (size_t i = 0; i < arr_len(cs); i++) {
		struct json_object *c = json_object_array_get_idx(cs, i);
		const char *name = kc_json_str(c, "name");
		const char *image = kc_json_str(c, "image");
		char q[300];

		(void)snprintf(f, sizeof(f), "spec.%s[%zu].name", list, i);
		if (str_empty(name))
			errs_required(errs, f, NULL);
		else {
			builtin_validate_name(DC_NAME_LABEL, f, name, errs);
			for (size_t j = 0; j < i; j++) {
				const char *other = kc_json_str(json_object_array_get_idx(cs, j),
				    "name");

				if (other != NULL && strcmp(other, name) == 0) {
					errs_duplicate(errs, f, kc_sbuf_quoted(q, sizeof(q), name));
					break;
				}
			}
		}
		(void)snprintf(f, sizeof(f), "spec.%s[%zu].image", list, i);
		if (str_empty(image))
			errs_required(errs, f, NULL);
	}
}

static int
pod_validate(struct dc_write_ctx *wc, const struct json_object *obj,
    const struct json_object *old, struct dc_errs *errs)
{
	struct json_object *spec = kc_json_obj_of(obj, "spec");
	const char *rp = kc_json_str(spec, "restartPolicy");

	if (wc->subresource != NULL)
		return 0;
	validate_containers(spec, "containers", true, errs);
	validate_containers(spec, "initContainers", false, errs);
	if (rp != NULL && strcmp(rp, "Always") != 0 && strcmp(rp, "OnFailure") != 0 &&
	    strcmp(rp, "Never") != 0)
		errs_unsupported(errs, "spec.restartPolicy", rp,
		    (const char *const []){ "Always", "Never", "OnFailure", NULL });
	if (old != NULL) {
		bool tols_ok = tolerations_added(old, obj);
		struct json_object *a = pod_spec_masked(obj, tols_ok ? obj : NULL);
		struct json_object *b = pod_spec_masked(old, tols_ok ? old : NULL);
		bool same;

		if (a == NULL || b == NULL) {
			json_object_put(a);	/* json-c takes NULL */
			json_object_put(b);
			return -ENOMEM;
		}
		same = kc_json_equal(a, b);
		json_object_put(a);
		json_object_put(b);
		if (!same)
			errs_forbidden(errs, "spec", POD_UPDATE_MSG);
	}
	return 0;
}

static int64_t
pod_delete_grace(struct dc_write_ctx *wc, const struct json_object *obj,
    int64_t requested)
{
	const char *node = kc_json_str(obj, "spec", "nodeName");
	const char *phase = kc_json_str(obj, "status", "phase");

	(void)wc;
	if (str_empty(node))
		return 0;
	if (phase != NULL && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
		return 0;
	if (requested >= 0)
		return requested;
	return kc_json_int(obj, 30, "spec", "terminationGracePeriodSeconds");
}

static const char *const pod_fields[] = {
	"spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
	"spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
	"status.podIPs", "status.nominatedNodeName", NULL
};

const struct dc_type_ops ops_pod = {
	.defaults = pod_defaults,
	.prepare_create = pod_prepare_create,
	.validate = pod_validate,
	.field_selectors = pod_fields,
	.delete_grace = pod_delete_grace,
};

int
builtin_pod_log(struct dc *dc, const struct dc_req *req, const struct json_object *pod,
    struct dc_resp *resp)
{
	const char *want = req_param(req, "container");
	const char *pname = kc_json_str(pod, "metadata", "name");
	struct json_object *cs = kc_json_get(pod, "spec", "containers");
	struct json_object *ics = kc_json_get(pod, "spec", "initContainers");
	bool found = false;

	(void)dc;
	if (str_empty(want) && arr_len(cs) == 1 && arr_len(ics) == 0)
		want = kc_json_str(json_object_array_get_idx(cs, 0), "name");
	if (str_empty(want)) {
		char names[1024] = "", inames[1024] = "";
		size_t off = 0, ioff = 0;

		for (size_t i = 0; i < arr_len(cs); i++) {
			int n = snprintf(names + off, sizeof(names) - off, "%s%s", i > 0 ? " " : "",
			    kc_json_str(json_object_array_get_idx(cs, i), "name"));

			if (n > 0 && (size_t)n < sizeof(names) - off)
				off += (size_t)n;
		}
		for (size_t i = 0; i < arr_len(ics); i++) {
			int n = snprintf(inames + ioff, sizeof(inames) - ioff, "%s%s",
			    i > 0 ? " " : "",
			    kc_json_str(json_object_array_get_idx(ics, i), "name"));

			if (n > 0 && (size_t)n < sizeof(inames) - ioff)
				ioff += (size_t)n;
		}
		if (ioff > 0)
			errors_reply(resp, KC_EBADREQUEST, "a container name must be specified "
			    "for pod %s, choose one of: [%s] or one of the init containers: [%s]",
			    pname, names, inames);
		else
			errors_reply(resp, KC_EBADREQUEST, "a container name must be specified "
			    "for pod %s, choose one of: [%s]", pname, names);
		return 0;
	}
	for (size_t i = 0; i < arr_len(cs) && !found; i++)
		found = strcmp(want, kc_json_str(json_object_array_get_idx(cs, i), "name")) == 0;
	for (size_t i = 0; i < arr_len(ics) && !found; i++)
		found = strcmp(want, kc_json_str(json_object_array_get_idx(ics, i), "name")) == 0;
	if (!found) {
		errors_reply(resp, KC_EBADREQUEST, "container %s is not valid for pod %s", want,
		    pname);
		return 0;
	}
	return resp_text(resp, 200, "text/plain", "");
}

/*
 * Services
 */

static bool
svc_headless_or_external(const struct json_object *spec)
{
	const char *ip = kc_json_str(spec, "clusterIP");
	const char *type = kc_json_str(spec, "type");

	return (ip != NULL && strcmp(ip, "None") == 0) ||
	    (type != NULL && strcmp(type, "ExternalName") == 0);
}

/* NodePort and LoadBalancer Services have node ports. */
static bool
svc_needs_node_ports(const struct json_object *svc)
{
	const char *type = kc_json_str(svc, "spec", "type");

	return type != NULL && (strcmp(type, "NodePort") == 0 ||
	    strcmp(type, "LoadBalancer") == 0);
}

static int
svc_defaults(struct dc_write_ctx *wc, struct json_object *obj)
{
	struct json_object *spec = kc_json_ensure_obj(obj, "spec"), *ports;
	const char *type;
	int r;

	(void)wc;
	if (spec == NULL)
		return -ENOMEM;
	if ((r = set_default_str(spec, "type", "ClusterIP")) < 0 ||
	    (r = set_default_str(spec, "sessionAffinity", "None")) < 0)
		return r;
	type = kc_json_str(spec, "type");
	if (type != NULL && strcmp(type, "ExternalName") != 0 &&
	    (r = set_default_str(spec, "internalTrafficPolicy", "Cluster")) < 0)
		return r;
	if (svc_needs_node_ports(obj) &&
	    (r = set_default_str(spec, "externalTrafficPolicy", "Cluster")) < 0)
		return r;
	ports = kc_json_arr_of(spec, "ports");
	for (size_t i = 0; i < arr_len(ports); i++) {
		struct json_object *p = json_object_array_get_idx(ports, i);
		struct json_object *port;

		if (!json_object_is_type(p, json_type_object))
			continue;
		if ((r = set_default_str(p, "protocol", "TCP")) < 0)
			return r;
		port = kc_json_get(p, "port");
		if (kc_json_get(p, "targetPort") == NULL && port != NULL &&
		    kc_json_put(p, "targetPort", json_object_get(port)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * A cluster IP (ip set) or node port being checked against the services;
 * the Service 'self' (namespace/name, when set) does not count.
 */
struct used {
	char		 ip[20];
	int64_t		 port;
	bool		 taken;
	const char	*self_ns;
	const char	*self_name;
};

/* Whether a port of 'ports' already has node port 'np'. */
static bool
ports_have_node_port(const struct json_object *ports, int64_t np)
{
	for (size_t i = 0; i < arr_len(ports); i++)
		if (kc_json_int(json_object_array_get_idx(ports, i), -1, "nodePort") == np)
			return true;
	return false;
}

static void
svc_scan(const struct json_object *svc, struct used *u)
{
	if (u->self_name != NULL && u->self_ns != NULL) {
		const char *ns = kc_json_str(svc, "metadata", "namespace");
		const char *name = kc_json_str(svc, "metadata", "name");

		if (name != NULL && ns != NULL && strcmp(name, u->self_name) == 0 &&
		    strcmp(ns, u->self_ns) == 0)
			return;
	}
	if (u->ip[0] != '\0') {
		const char *ip = kc_json_str(svc, "spec", "clusterIP");

		if (ip != NULL && strcmp(ip, u->ip) == 0)
			u->taken = true;
	} else if (ports_have_node_port(kc_json_get(svc, "spec", "ports"), u->port))
		u->taken = true;
}

static bool
svc_taken(struct dc *dc, struct used *u)
{
	struct dc_rtype *rt = registry_find(dc, "", "v1", "services");
	struct json_object **objs = NULL;
	size_t n = 0;

	if (rt == NULL || coll_list(rt->coll, NULL, NULL, &objs, &n) < 0)
		return false;
	u->taken = false;
	for (size_t i = 0; i < n && !u->taken; i++)
		svc_scan(objs[i], u);
	objs_free(objs, n);
	return u->taken;
}

static int
alloc_ip(struct dc *dc, char *buf, size_t size)
{
	struct used u = { .port = -1 };

	for (int tries = 0; tries < 64; tries++) {
		uint32_t off = 2 + (uint32_t)(kc_random_u64() % (SVC_CIDR_SIZE - 3));
		uint32_t ip = SVC_CIDR_BASE + off;

		(void)snprintf(u.ip, sizeof(u.ip), "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255,
		    (ip >> 8) & 255, ip & 255);
		if (!svc_taken(dc, &u)) {
			(void)kc_strlcpy(buf, u.ip, size);
			return 0;
		}
	}
	return -ENOSPC;
}

/* A free node port, none of the other Services' nor of 'ports'. */
static int64_t
alloc_node_port(struct dc *dc, const struct json_object *ports)
{
	struct used u = { .port = 0 };

	for (int tries = 0; tries < 64; tries++) {
		u.port = NODE_PORT_MIN + (int64_t)(kc_random_u64() %
		    (NODE_PORT_MAX - NODE_PORT_MIN + 1));
		if (!ports_have_node_port(ports, u.port) && !svc_taken(dc, &u))
			return u.port;
	}
	return -ENOSPC;
}

static int
svc_fill(struct dc_write_ctx *wc, struct json_object *obj, const struct json_object *old)
{
	struct json_object *spec = kc_json_ensure_obj(obj, "spec"), *ips, *fams, *ports;
	const char *ip = kc_json_str(spec, "clusterIP");
	const char *type = kc_json_str(spec, "type");
	const char *oip = kc_json_str(old, "spec", "clusterIP");
	char buf[20];
	int r;

	if (spec == NULL)
		return -ENOMEM;
	if (type != NULL && strcmp(type, "ExternalName") == 0)
		return 0;
	if (str_empty(ip)) {
		if (!str_empty(oip))
			(void)kc_strlcpy(buf, oip, sizeof(buf));
		else if ((r = alloc_ip(wc->dc, buf, sizeof(buf))) < 0)
			return r;
		if ((r = kc_json_set_str(spec, "clusterIP", buf)) < 0)
			return r;
		ip = kc_json_str(spec, "clusterIP");
	}
	if (kc_json_get(spec, "clusterIPs") == NULL) {
		if ((ips = json_object_new_array()) == NULL ||
		    kc_json_put(spec, "clusterIPs", ips) < 0 ||
		    kc_json_append(ips, json_object_new_string(ip)) < 0)
			return -ENOMEM;
	}
	if (kc_json_get(spec, "ipFamilies") == NULL) {
		if ((fams = json_object_new_array()) == NULL ||
		    kc_json_put(spec, "ipFamilies", fams) < 0 ||
		    kc_json_append(fams, json_object_new_string("IPv4")) < 0)
			return -ENOMEM;
	}
	if ((r = set_default_str(spec, "ipFamilyPolicy", "SingleStack")) < 0)
		return r;
	if (!svc_needs_node_ports(obj))
		return 0;
	ports = kc_json_arr_of(spec, "ports");
	for (size_t i = 0; i < arr_len(ports); i++) {
		struct json_object *p = json_object_array_get_idx(ports, i);
		struct json_object *oports = kc_json_get(old, "spec", "ports");
		int64_t np = -1;

		if (kc_json_get(p, "nodePort") != NULL)
			continue;
		for (size_t j = 0; j < arr_len(oports); j++) {
			struct json_object *op = json_object_array_get_idx(oports, j);

			if (kc_json_int(op, -1, "port") == kc_json_int(p, -2, "port"))
				np = kc_json_int(op, -1, "nodePort");
		}
		if (np < 0 && (np = alloc_node_port(wc->dc, ports)) < 0)
			return (int)np;
		if ((r = kc_json_set_int(p, "nodePort", np)) < 0)
			return r;
	}
	return 0;
}

static int
svc_prepare_create(struct dc_write_ctx *wc, struct json_object *obj)
{
	struct json_object *status;
	int r;

	if ((r = svc_fill(wc, obj, NULL)) < 0)
		return r;
	json_object_object_del(obj, "status");
	if ((status = kc_json_ensure_obj(obj, "status")) == NULL)
		return -ENOMEM;
	return kc_json_put(status, "loadBalancer", json_object_new_object());
}

/* Whether every non-zero node port of 'a' is one of 'b' (as sets). */
static bool
node_ports_within(const struct json_object *a, const struct json_object *b)
{
	struct json_object *ap = kc_json_get(a, "spec", "ports");
	struct json_object *bp = kc_json_get(b, "spec", "ports");

	for (size_t i = 0; i < arr_len(ap); i++) {
		int64_t np = kc_json_int(json_object_array_get_idx(ap, i), 0, "nodePort");

		if (np != 0 && !ports_have_node_port(bp, np))
			return false;
	}
	return true;
}

/*
 * An update away from NodePort or LoadBalancer drops the node ports the
 * Service still holds unchanged (a kubectl apply merges them back from the
 * live object), as the registry's dropTypeDependentFields() does; new ones
 * stay, and validation refuses them.
 */
static void
svc_drop_node_ports(struct json_object *obj, const struct json_object *old)
{
	struct json_object *ports = kc_json_get(obj, "spec", "ports");

	if (old == NULL || !svc_needs_node_ports(old) || svc_needs_node_ports(obj) ||
	    !node_ports_within(obj, old) || !node_ports_within(old, obj))
		return;
	for (size_t i = 0; i < arr_len(ports); i++)
		json_object_object_del(json_object_array_get_idx(ports, i), "nodePort");
}

static int
svc_prepare_update(struct dc_write_ctx *wc, struct json_object *obj,
    const struct json_object *old)
{
	svc_drop_node_ports(obj, old);
	return svc_fill(wc, obj, old);
}

/*
 * Node ports as ValidateService() sees them (forbidden on a ClusterIP
 * Service, one per protocol within a Service), then, when the Service is
 * otherwise valid, as the node port allocator does: in the range, and not
 * held by another Service.
 */
static void
svc_validate_node_ports(struct dc_write_ctx *wc, const struct json_object *obj,
    struct dc_errs *errs)
{
	struct json_object *spec = kc_json_obj_of(obj, "spec");
	struct json_object *ports = kc_json_arr_of(spec, "ports");
	const char *type = kc_json_str(spec, "type");
	bool cluster_ip = type == NULL || strcmp(type, "ClusterIP") == 0;
	struct used u = {
		.self_ns = kc_json_str(obj, "metadata", "namespace"),
		.self_name = kc_json_str(obj, "metadata", "name"),
	};
	char f[96], v[32];

	for (size_t i = 0; i < arr_len(ports); i++) {
		struct json_object *p = json_object_array_get_idx(ports, i);
		int64_t np = kc_json_int(p, 0, "nodePort");
		const char *proto = kc_json_str(p, "protocol");

		if (np == 0)
			continue;
		(void)snprintf(f, sizeof(f), "spec.ports[%zu].nodePort", i);
		(void)snprintf(v, sizeof(v), "%" PRId64, np);
		if (cluster_ip) {
			errs_forbidden(errs, f, "may not be used when `type` is 'ClusterIP'");
			continue;
		}
		for (size_t j = 0; j < i; j++) {
			struct json_object *q = json_object_array_get_idx(ports, j);
			const char *qproto = kc_json_str(q, "protocol");

			if (kc_json_int(q, 0, "nodePort") == np &&
			    strcmp(proto != NULL ? proto : "", qproto != NULL ? qproto : "") == 0) {
				errs_duplicate(errs, f, v);
				break;
			}
		}
	}
	if (errs->n > 0 || cluster_ip)
		return;
	for (size_t i = 0; i < arr_len(ports); i++) {
		int64_t np = kc_json_int(json_object_array_get_idx(ports, i), 0, "nodePort");

		if (np == 0)
			continue;
		(void)snprintf(f, sizeof(f), "spec.ports[%zu].nodePort", i);
		(void)snprintf(v, sizeof(v), "%" PRId64, np);
		u.port = np;
		if (np < NODE_PORT_MIN || np > NODE_PORT_MAX) {
			char d[128];

			(void)snprintf(d, sizeof(d), "provided port is not in the valid range. "
			    "The range of valid ports is %d-%d", NODE_PORT_MIN, NODE_PORT_MAX);
			errs_invalid(errs, f, v, d);
		} else if (svc_taken(wc->dc, &u))
			errs_invalid(errs, f, v, "provided port is already allocated");
	}
}

static int
svc_validate(struct dc_write_ctx *wc, const struct json_object *obj,
    const struct json_object *old, struct dc_errs *errs)
{
	struct json_object *spec = kc_json_obj_of(obj, "spec");
	struct json_object *ports = kc_json_arr_of(spec, "ports");
	const char *type = kc_json_str(spec, "type");
	const char *ip = kc_json_str(spec, "clusterIP");
	const char *oip = kc_json_str(old, "spec", "clusterIP");
	char f[96], q[64];

	if (wc->subresource != NULL)
		return 0;
	if (type != NULL && strcmp(type, "ClusterIP") != 0 && strcmp(type, "NodePort") != 0 &&
	    strcmp(type, "LoadBalancer") != 0 && strcmp(type, "ExternalName") != 0)
		errs_unsupported(errs, "spec.type", type, (const char *const []){
		    "ClusterIP", "ExternalName", "LoadBalancer", "NodePort", NULL });
	if (arr_len(ports) == 0 && !svc_headless_or_external(spec))
		errs_required(errs, "spec.ports", NULL);
	for (size_t i = 0; i < arr_len(ports); i++) {
		struct json_object *p = json_object_array_get_idx(ports, i);
		int64_t port = kc_json_int(p, 0, "port");

		if (port < 1 || port > 65535) {
			char v[32];

			(void)snprintf(f, sizeof(f), "spec.ports[%zu].port", i);
			(void)snprintf(v, sizeof(v), "%" PRId64, port);
			errs_invalid(errs, f, v, "must be between 1 and 65535, inclusive");
		}
		if (arr_len(ports) > 1 && str_empty(kc_json_str(p, "name"))) {
			(void)snprintf(f, sizeof(f), "spec.ports[%zu].name", i);
			errs_required(errs, f, NULL);
		}
	}
	if (old != NULL && !str_empty(oip) && ip != NULL && strcmp(ip, oip) != 0)
		errs_invalid(errs, "spec.clusterIPs[0]", kc_sbuf_quoted(q, sizeof(q), ip),
		    "may not change once set");
	svc_validate_node_ports(wc, obj, errs);
	return 0;
}

const struct dc_type_ops ops_service = {
	.defaults = svc_defaults,
	.prepare_create = svc_prepare_create,
	.prepare_update = svc_prepare_update,
	.validate = svc_validate,
};

/*
 * Secrets and ConfigMaps
 */

static void
validate_keys(const struct json_object *map, const char *field, struct dc_errs *errs)
{
	if (map == NULL || !json_object_is_type(map, json_type_object))
		return;
	json_object_object_foreach((struct json_object *)(uintptr_t)map, k, v) {
		char f[300], q[300];
		struct kc_valid msgs;

		(void)v;
		if (kc_valid_config_map_key(kc_str_from(k), &msgs) == 0)
			continue;
		(void)snprintf(f, sizeof(f), "%s[%s]", field, k);
		(void)kc_sbuf_quoted(q, sizeof(q), k);
		for (size_t i = 0; i < msgs.n; i++)
			errs_invalid(errs, f, q, msgs.msg[i]);
	}
}

static void
validate_immutable(const struct json_object *obj, const struct json_object *old,
    struct dc_errs *errs)
{
	static const char *const fields[] = { "data", "binaryData", "stringData" };

	if (old == NULL || !kc_json_bool(old, false, "immutable"))
		return;
	if (!kc_json_bool(obj, false, "immutable"))
		errs_forbidden(errs, "immutable", "field is immutable when `immutable` is set");
	for (size_t i = 0; i < KC_ARRAY_SIZE(fields); i++)
		if (!kc_json_equal(kc_json_get(obj, fields[i]), kc_json_get(old, fields[i])))
			errs_forbidden(errs, fields[i],
			    "field is immutable when `immutable` is set");
}

static int
secret_defaults(struct dc_write_ctx *wc, struct json_object *obj)
{
	struct json_object *sd = kc_json_obj_of(obj, "stringData"), *data;
	int r;

	(void)wc;
	if ((r = set_default_str(obj, "type", "Opaque")) < 0)
		return r;
	if (sd == NULL)
		return 0;
	if ((data = kc_json_ensure_obj(obj, "data")) == NULL)
		return -ENOMEM;
	json_object_object_foreach(sd, k, v) {
		const char *s = json_object_get_string(v);
		char *b64;

		if (s == NULL)
			continue;
		if ((r = kc_base64_encode(s, strlen(s), 0, &b64, NULL)) < 0)
			return r;
		r = kc_json_set_str(data, k, b64);
		kc_free(b64);
		if (r < 0)
			return r;
	}
	json_object_object_del(obj, "stringData");
	return 0;
}

static int
secret_validate(struct dc_write_ctx *wc, const struct json_object *obj,
    const struct json_object *old, struct dc_errs *errs)
{
	struct json_object *data = kc_json_obj_of(obj, "data");
	const char *type = kc_json_str(obj, "type");
	const char *otype = kc_json_str(old, "type");
	char q[300];

	(void)wc;
	validate_keys(data, "data", errs);
	if (data != NULL) {
		json_object_object_foreach(data, k, v) {
			char *dec = NULL, f[300];

			if (json_object_is_type(v, json_type_string) &&
			    kc_base64_decode(json_object_get_string(v),
			    (size_t)json_object_get_string_len(v), 0, &dec, NULL, NULL, 0) == 0) {
				kc_free(dec);
				continue;
			}
			(void)snprintf(f, sizeof(f), "data[%s]", k);
			errs_invalid(errs, f, "\"<secret contents redacted>\"",
			    "illegal base64 data");
		}
	}
	if (old != NULL && otype != NULL && type != NULL && strcmp(type, otype) != 0)
		errs_invalid(errs, "type", kc_sbuf_quoted(q, sizeof(q), type),
		    "field is immutable");
	validate_immutable(obj, old, errs);
	return 0;
}

const struct dc_type_ops ops_secret = {
	.defaults = secret_defaults,
	.validate = secret_validate,
	.field_selectors = (const char *const []){ "type", NULL },
};

static int
configmap_validate(struct dc_write_ctx *wc, const struct json_object *obj,
    const struct json_object *old, struct dc_errs *errs)
{
	(void)wc;
	validate_keys(kc_json_obj_of(obj, "data"), "data", errs);
	validate_keys(kc_json_obj_of(obj, "binaryData"), "binaryData", errs);
	validate_immutable(obj, old, errs);
	return 0;
}

const struct dc_type_ops ops_configmap = {
	.validate = configmap_validate,
};

/*
 * Events: core/v1 is the storage form; events.k8s.io/v1 a renamed view.
 */

static const char *const event_fields[] = {
	"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
	"involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
	"involvedObject.fieldPath", "reason", "reportingComponent", "source", "type", NULL
};

static const char *
event_field(const struct json_object *obj, const char *field, char *buf, size_t size)
{
	(void)buf;
	(void)size;
	if (strcmp(field, "source") == 0) {
		const char *s = kc_json_str(obj, "source", "component");

		return s != NULL ? s : "";
	}
	return NULL;
}

const struct dc_type_ops ops_event = {
	.field_selectors = event_fields,
	.field_value = event_field,
};

static const char *const event_renames[][2] = {
	/* core/v1, events.k8s.io/v1 */
	{ "involvedObject", "regarding" },
	{ "message", "note" },
	{ "reportingComponent", "reportingController" },
	{ "source", "deprecatedSource" },
	{ "firstTimestamp", "deprecatedFirstTimestamp" },
	{ "lastTimestamp", "deprecatedLastTimestamp" },
	{ "count", "deprecatedCount" },
};

static int
event_rename(const struct json_object *in, int from, const char *api_version,
    struct json_object **ret)
{
	struct json_object *out = json_object_new_object();

	if (out == NULL)
		return -ENOMEM;
	if (kc_json_set_str(out, "apiVersion", api_version) < 0)
		goto oom;
	json_object_object_foreach((struct json_object *)(uintptr_t)in, k, v) {
		const char *name = k;

		if (strcmp(k, "apiVersion") == 0)
			continue;
		for (size_t i = 0; i < KC_ARRAY_SIZE(event_renames); i++)
			if (strcmp(k, event_renames[i][from]) == 0)
				name = event_renames[i][1 - from];
		if (json_object_object_add(out, name, json_object_get(v)) < 0) {
			json_object_put(v);
			goto oom;
		}
	}
	*ret = out;
	return 0;
oom:
	json_object_put(out);
	return -ENOMEM;
}

static int
event_out(const struct dc_rtype *rt, const struct json_object *stored,
    struct json_object **ret)
{
	return event_rename(stored, 0, rt->api_version, ret);
}

static int
event_in(const struct dc_rtype *rt, const struct json_object *obj,
    struct json_object **ret)
{
	(void)rt;
	return event_rename(obj, 1, "v1", ret);
}

const struct dc_type_ops ops_event_v1 = {
	.field_selectors = event_fields,
	.field_value = event_field,
	.convert_out = event_out,
	.convert_in = event_in,
};

/*
 * Nodes and everything else
 */

static int
node_prepare_create(struct dc_write_ctx *wc, struct json_object *obj)
{
	(void)wc;
	(void)obj;
	return 0;
}

const struct dc_type_ops ops_node = {
	.prepare_create = node_prepare_create,
	.field_selectors = (const char *const []){ "spec.unschedulable", NULL },
};

const struct dc_type_ops ops_default = { 0 };

/*
 * Bootstrap: what every cluster has.
 */

static int
bootstrap_one(struct dc *dc, const char *plural, const char *json)
{
	struct dc_rtype *rt = registry_find(dc, "", "v1", plural);
	struct json_object *obj = NULL;
	int r;

	if (rt == NULL)
		return -ENOENT;
	if ((r = kc_json_parse(json, strlen(json), &obj, NULL)) < 0)
		return r;
	r = api_create_object(dc, rt, obj, NULL);
	return r == KC_EEXISTS ? 0 : r;
}

int
builtin_bootstrap(struct dc *dc)
{
	static const char *const namespaces[] = {
		"default", "kube-system", "kube-public", "kube-node-lease",
	};
	char json[256];
	int r;

	for (size_t i = 0; i < KC_ARRAY_SIZE(namespaces); i++) {
		(void)snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"%s\"}}",
		    namespaces[i]);
		if ((r = bootstrap_one(dc, "namespaces", json)) < 0)
			return r;
	}
	return bootstrap_one(dc, "services", "{\"metadata\":{\"name\":\"kubernetes\","
	    "\"namespace\":\"default\",\"labels\":{\"component\":\"apiserver\","
	    "\"provider\":\"kubernetes\"}},\"spec\":{\"clusterIP\":\"10.96.0.1\","
	    "\"ports\":[{\"name\":\"https\",\"port\":443,\"protocol\":\"TCP\","
	    "\"targetPort\":6443}]}}");
}

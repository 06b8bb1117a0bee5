/*
 * cache.c: every cached form of the controller, and the caches' table.
 *
 * An informer keeps one item per object, made by a transform here: never
 * a json-c tree, but one
 * allocation from the pool of long-lived blocks (kc_keep_malloc()), so
 * items pack together instead of pinning the pages a burst used. An item
 * is a fixed head and, after it, its strings, packed uids and bytes,
 * placed by one helper (pack()) and found by 16-bit offsets (1 + the
 * offset, 0 when absent; ty_cache_str()):
 *
 *	pods      struct ty_pod: what the session rules read (uids in 16
 *	          bytes, messages only of pods that failed or wait)
 *	children  struct ty_child_item: uid, owner uid, session label, Run
 *	          name, deleting
 *	Runs and  struct ty_obj_item: the JSON text without managedFields
 *	profiles  and kubectl's last-applied-configuration, deflated with a
 *	          preset dictionary that looks like a Run (kc/deflate.h),
 *	          plus the profile name and phase that handlers and metrics
 *	          read
 *
 * What they measure is in docs/operations.md ("Sizing"), and only there.
 *
 * Decoding builds only the members a transform reads (cache_kinds[]'s
 * keep paths): a pod's managedFields, spec and annotations, most of its
 * JSON, are checked and dropped as they stream by.
 *
 * Everything here is pure: json-c in, an item out, no threads.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/deflate.h>
#include <kc/err.h>
#include <kc/hash.h>
#include <kc/json.h>
#include <kc/str.h>

#include "cache.h"
#include "model.h"
#include "project.h"

const struct kc_resource ty_res_runs = {
	.group = "trainyard.dev", .version = "v1alpha1", .resource = "runs",
	.kind = "Run", .namespaced = true,
};
const struct kc_resource ty_res_profiles = {
	.group = "trainyard.dev", .version = "v1alpha1",
	.resource = "resourceprofiles", .kind = "ResourceProfile", .namespaced = false,
};
const struct kc_resource ty_res_runs_v1beta1 = {
	.group = "trainyard.dev", .version = "v1beta1", .resource = "runs",
	.kind = "Run", .namespaced = true,
};
const struct kc_resource ty_res_profiles_v1beta1 = {
	.group = "trainyard.dev", .version = "v1beta1",
	.resource = "resourceprofiles", .kind = "ResourceProfile", .namespaced = false,
};
const struct kc_resource ty_res_projects = {
	.group = "trainyard.dev", .version = "v1beta1", .resource = "projects",
	.kind = "Project", .namespaced = false,
};
const struct kc_resource ty_res_projectmembers = {
	.group = "trainyard.dev", .version = "v1beta1", .resource = "projectmembers",
	.kind = "ProjectMember", .namespaced = true,
};
const struct kc_resource ty_res_podgroups_x = {
	.group = "scheduling.x-k8s.io", .version = "v1alpha1",
	.resource = "podgroups", .kind = "PodGroup", .namespaced = true,
};
const struct kc_resource ty_res_podgroups_sigs = {
	.group = "scheduling.sigs.k8s.io", .version = "v1alpha1",
	.resource = "podgroups", .kind = "PodGroup", .namespaced = true,
};

#define UID_MAX		(TY_UID_TEXT_MAX - 1)	/* Kubernetes uids are 36 bytes */
#define UUID_LEN	36
#define UUID_BYTES	16
#define REASON_MAX	64
#define LABEL_VALUE_MAX	63	/* Kubernetes label values */
#define NAME_FIELD_MAX	253
#define PHASE_MAX	15

#define LAST_APPLIED	"kubectl.kubernetes.io/last-applied-configuration"

/* ------------------------------------------------------------------ */
/* Packing: the one encoding of every cached form */

/*
 * Places strings, uids and bytes after an item's head. With 'strs' NULL
 * it only counts (the size to allocate); then the same calls again with
 * 'strs' set write them. Every form keeps well under 64 KB before its
 * last member (names, labels, messages are bounded; a Run's deflated text
 * comes last), so 16-bit offsets reach everything.
 */
struct packer {
	char	*strs;		/* NULL: count only */
	size_t	 at;
};

/* Packs 'n' bytes of 'p', and a NUL if 'nul'; the offset, 0 for p NULL. */
static uint16_t
pack(struct packer *pk, const void *p, size_t n, bool nul)
{
	uint16_t at;

	if (p == NULL || pk->at >= UINT16_MAX)
		return 0;
	at = (uint16_t)(pk->at + 1);
	if (pk->strs != NULL) {
		if (n > 0)
			memcpy(pk->strs + pk->at, p, n);
		if (nul)
			pk->strs[pk->at + n] = '\0';
	}
	pk->at += n + (nul ? 1 : 0);
	return at;
}

/* Whether 's' is a UUID in canonical form; its 16 bytes into 'out'. */
static bool
uuid_parse(const char *s, uint8_t *out)
{
	static const char hex[] = "0123456789abcdef";
	unsigned nibbles = 0;

	if (strnlen(s, UUID_LEN + 1) != UUID_LEN)
		return false;		/* so no NUL below */
	for (size_t i = 0; i < UUID_LEN; i++) {
		const char *h;

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return false;
			continue;
		}
		if ((h = strchr(hex, s[i])) == NULL)
			return false;
		if (nibbles % 2 == 0)
			out[nibbles / 2] = (uint8_t)((h - hex) << 4);
		else
			out[nibbles / 2] |= (uint8_t)(h - hex);
		nibbles++;
	}
	return true;
}

/* Packs a uid (NULL and "" are none): a UUID as NUL and 16 bytes. */
static uint16_t
pack_uid(struct packer *pk, const char *uid)
{
	uint8_t b[1 + UUID_BYTES] = { 0 };

	if (uid == NULL || uid[0] == '\0')
		return 0;
	if (uuid_parse(uid, b + 1))
		return pack(pk, b, sizeof(b), false);
	return pack(pk, uid, strnlen(uid, UID_MAX), true);
}

/* Packs at most 'max' bytes of 's' (NULL is none). */
static uint16_t
pack_str(struct packer *pk, const char *s, size_t max)
{
	return s != NULL ? pack(pk, s, strnlen(s, max), true) : 0;
}

const char *
cache_uid_text(const char *packed, char *buf, size_t size)
{
	const uint8_t *b = (const uint8_t *)packed + 1;

	if (packed[0] != '\0')
		return packed;
	(void)snprintf(buf, size, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	    "%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
	    b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
	return buf;
}

bool
cache_uid_eq(const char *packed, const char *uid)
{
	uint8_t b[UUID_BYTES];

	if (uid == NULL || uid[0] == '\0')
		return false;
	if (packed[0] != '\0')
		return strcmp(packed, uid) == 0;
	return uuid_parse(uid, b) && memcmp(packed + 1, b, UUID_BYTES) == 0;
}

const char *
cache_owner_uid(const struct json_object *obj)
{
	struct json_object *refs = kc_json_arr_of(kc_json_get(obj, "metadata"),
	    "ownerReferences");

	for (size_t i = 0; refs != NULL && i < json_object_array_length(refs); i++) {
		struct json_object *ref = json_object_array_get_idx(refs, i);
		const char *kind = kc_json_str(ref, "kind"), *uid = kc_json_str(ref, "uid");

		if (kc_json_bool(ref, false, "controller") && kind != NULL &&
		    strcmp(kind, "Run") == 0 && uid != NULL)
			return uid;
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Pods */

struct podstrs {
	const char	*s[TY_POD_NSTRS];
	size_t		 len[TY_POD_NSTRS];
	const char	*uid[TY_POD_NUIDS];
};

/* The length of 's' cut to at most 'max' bytes, not inside a UTF-8 sequence. */
static size_t
cut_utf8(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n <= max)
		return n;
	n = max;
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	return n;
}

static void
str_set(struct podstrs *ps, int i, const char *s, size_t max)
{
	if (s == NULL)
		return;
	ps->s[i] = s;
	ps->len[i] = cut_utf8(s, max);
}

static enum ty_pod_phase
phase_of(const char *s)
{
	static const char *const names[] = {
		[TY_POD_PENDING] = "Pending", [TY_POD_RUNNING] = "Running",
		[TY_POD_SUCCEEDED] = "Succeeded", [TY_POD_FAILED] = "Failed",
	};

	for (size_t i = 0; s != NULL && i < KC_ARRAY_SIZE(names); i++)
		if (strcmp(s, names[i]) == 0)
			return (enum ty_pod_phase)i;
	return TY_POD_UNKNOWN;
}

static int64_t
label_int(const struct json_object *pod, const char *label)
{
	const char *v = kc_json_str(pod, "metadata", "labels", label);
	int64_t n;

	if (v == NULL || kc_parse_i64(v, &n) < 0 || n < 0)
		return -1;
	return n;
}

static int64_t
time_of(const char *s)
{
	time_t t;

	if (s == NULL || kc_time_parse(s, &t) < 0)
		return 0;
	return (int64_t)t;
}
static void
pod_conditions(const struct json_object *pod, struct ty_pod *p, struct podstrs *ps)
{
	struct json_object *conds = kc_json_arr_of(kc_json_get(pod, "status"),
	    "conditions");

	for (size_t i = 0; conds != NULL && i < json_object_array_length(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);
		const char *type = kc_json_str(c, "type"), *status = kc_json_str(c, "status");
		bool yes = status != NULL && strcmp(status, "True") == 0;

		if (type == NULL)
			continue;
		if (strcmp(type, "Ready") == 0)
			p->ready = yes;
		else if (strcmp(type, "PodScheduled") == 0) {
			p->scheduled = yes;
			if (!yes) {
				str_set(ps, TY_POD_SCHED_REASON, kc_json_str(c, "reason"),
				    REASON_MAX);
				str_set(ps, TY_POD_SCHED_MESSAGE, kc_json_str(c, "message"),
				    TY_POD_MESSAGE_MAX);
			}
		} else if (strcmp(type, "DisruptionTarget") == 0 && yes)
			str_set(ps, TY_POD_DISRUPTION, kc_json_str(c, "reason"), REASON_MAX);
	}
}

static struct json_object *
main_container(const struct json_object *pod)
{
	struct json_object *cs = kc_json_arr_of(kc_json_get(pod, "status"),
	    "containerStatuses");

	for (size_t i = 0; cs != NULL && i < json_object_array_length(cs); i++) {
		const char *name = kc_json_str(json_object_array_get_idx(cs, i), "name");

		if (name != NULL && strcmp(name, "main") == 0)
			return json_object_array_get_idx(cs, i);
	}
	return cs != NULL && json_object_array_length(cs) > 0 ?
	    json_object_array_get_idx(cs, 0) : NULL;
}

static void
pod_container(const struct json_object *pod, struct ty_pod *p, struct podstrs *ps)
{
	struct json_object *term = kc_json_get(main_container(pod), "state", "terminated");

	if (term == NULL)
		return;
	p->exit_code = (int32_t)kc_json_int(term, -1, "exitCode");
	p->finish_time = time_of(kc_json_str(term, "finishedAt"));
	if (p->exit_code == 0)
		return;
	str_set(ps, TY_POD_TERM_REASON, kc_json_str(term, "reason"), REASON_MAX);
	str_set(ps, TY_POD_TERM_MESSAGE, kc_json_str(term, "message"), TY_TERM_MESSAGE_MAX);
}

/* Places the pod's strings and uids ('pk' counting or writing). */
static void
pod_pack(struct ty_pod *p, const struct podstrs *ps, struct packer *pk)
{
	for (int i = 0; i < TY_POD_NSTRS; i++)
		p->str[i] = ps->s[i] != NULL ? pack(pk, ps->s[i], ps->len[i], true) : 0;
	for (int i = 0; i < TY_POD_NUIDS; i++)
		p->uid[i] = pack_uid(pk, ps->uid[i]);
}

int
cache_pod_from_json(const struct json_object *pod, struct ty_pod **ret)
{
	struct ty_pod tmp = { .exit_code = -1 }, *p;
	struct podstrs ps = { .s = { NULL } };
	struct json_object *status = kc_json_get(pod, "status");
	struct packer pk = { 0 };

	str_set(&ps, TY_POD_NAME, kc_json_str(pod, "metadata", "name"), NAME_FIELD_MAX);
	if (ps.s[TY_POD_NAME] == NULL || ps.len[TY_POD_NAME] == 0)
		return KC_EINVALID;
	ps.uid[TY_POD_UID] = kc_json_str(pod, "metadata", "uid");
	ps.uid[TY_POD_OWNER_UID] = cache_owner_uid(pod);
	str_set(&ps, TY_POD_NODE, kc_json_str(pod, "spec", "nodeName"), NAME_FIELD_MAX);
	str_set(&ps, TY_POD_RUN, kc_json_str(pod, "metadata", "labels", TY_LABEL_RUN),
	    LABEL_VALUE_MAX);
	tmp.session = (int32_t)KC_MIN(label_int(pod, TY_LABEL_SESSION), INT32_MAX);
	tmp.index = (int32_t)KC_MIN(label_int(pod, TY_LABEL_INDEX), INT32_MAX);
	tmp.deleting = kc_json_get(pod, "metadata", "deletionTimestamp") != NULL;
	tmp.phase = (uint8_t)phase_of(kc_json_str(status, "phase"));
	tmp.start_time = time_of(kc_json_str(status, "startTime"));
	if (tmp.phase == TY_POD_FAILED || kc_json_str(status, "reason") != NULL) {
		str_set(&ps, TY_POD_REASON, kc_json_str(status, "reason"), REASON_MAX);
		str_set(&ps, TY_POD_MESSAGE, kc_json_str(status, "message"),
		    TY_POD_MESSAGE_MAX);
	}
	pod_conditions(pod, &tmp, &ps);
	pod_container(pod, &tmp, &ps);
	pod_pack(&tmp, &ps, &pk);		/* counts */
	if ((p = kc_keep_calloc(KC_MAX(offsetof(struct ty_pod, strs) + pk.at,
	    sizeof(*p)))) == NULL)
		return -ENOMEM;
	*p = tmp;
	pk = (struct packer){ .strs = p->strs };
	pod_pack(p, &ps, &pk);
	*ret = p;
	return 0;
}

struct ty_pod *
cache_pod_free(struct ty_pod *p)
{
	return kc_free(p);
}

static int
pod_transform(void *arg, const struct json_object *obj, void **ret, struct kc_status *st)
{
	struct ty_pod *p;
	int r;

	(void)arg;
	if ((r = cache_pod_from_json(obj, &p)) < 0)
		return r == -ENOMEM ? r : kc_status_set(st, r, "pod without a name");
	*ret = p;
	return 0;
}

static void
pod_free(void *arg, void *data)
{
	(void)arg;
	cache_pod_free(data);
}

/* Pods are indexed by their Run's key, "ns/run". */
static bool
pod_index(void *arg, const struct kc_item *item, char *buf, size_t size)
{
	const char *run = ty_pod_str(kc_item_data(item), TY_POD_RUN);
	char ns[KC_NAMESPACE_MAX + 1];

	(void)arg;
	if (run == NULL || run[0] == '\0')
		return false;
	kc_item_ns(item, ns, sizeof(ns));
	return (size_t)snprintf(buf, size, "%s/%s", ns, run) < size;
}

/* ------------------------------------------------------------------ */
/* Children */

static void
child_pack(struct ty_child_item *it, const struct json_object *obj, struct packer *pk)
{
	const char *run = kc_json_str(obj, "metadata", "labels", TY_LABEL_RUN);

	it->uid = pack_uid(pk, kc_json_str(obj, "metadata", "uid"));
	it->owner_uid = pack_uid(pk, cache_owner_uid(obj));
	it->run = pack_str(pk, run != NULL ? run : "", LABEL_VALUE_MAX);
}

int
cache_child_from_json(const struct json_object *obj, struct ty_child_item **ret)
{
	const char *session = kc_json_str(obj, "metadata", "labels", TY_LABEL_SESSION);
	struct ty_child_item tmp = { 0 }, *it;
	struct packer pk = { 0 };
	int64_t n;

	child_pack(&tmp, obj, &pk);
	if ((it = kc_keep_malloc(sizeof(*it) + pk.at)) == NULL)
		return -ENOMEM;
	it->session = session != NULL && kc_parse_i64(session, &n) == 0 && n >= 0 ?
	    (int32_t)KC_MIN(n, INT32_MAX) : -1;
	it->deleting = kc_json_get(obj, "metadata", "deletionTimestamp") != NULL;
	pk = (struct packer){ .strs = it->strs };
	child_pack(it, obj, &pk);
	*ret = it;
	return 0;
}

static int
child_transform(void *arg, const struct json_object *obj, void **ret,
    struct kc_status *st)
{
	(void)arg;
	(void)st;
	return cache_child_from_json(obj, (struct ty_child_item **)ret);
}

/* ------------------------------------------------------------------ */
/* Runs and ResourceProfiles */

/*
 * A shallow copy of 'obj' without what the controller never reads and a
 * Run may carry in bulk: metadata.managedFields and kubectl's
 * last-applied-configuration annotation, a second copy of the whole spec
 * when Runs are applied client-side.
 */
static struct json_object *
trimmed_copy(const struct json_object *obj)
{
	struct json_object *copy, *md, *ann = NULL;

	if ((copy = json_object_new_object()) == NULL)
		return NULL;
	if ((md = json_object_new_object()) == NULL) {
		json_object_put(copy);
		return NULL;
	}
	(void)json_object_object_add(copy, "metadata", md);
	json_object_object_foreach((struct json_object *)(uintptr_t)obj, key, val) {
		if (strcmp(key, "metadata") != 0)
			(void)json_object_object_add(copy, key, json_object_get(val));
	}
	json_object_object_foreach(kc_json_obj_of(obj, "metadata"), mkey, mval) {
		if (strcmp(mkey, "managedFields") == 0)
			continue;
		if (strcmp(mkey, "annotations") != 0 ||
		    !json_object_object_get_ex(mval, LAST_APPLIED, NULL)) {
			(void)json_object_object_add(md, mkey, json_object_get(mval));
			continue;
		}
		if ((ann = json_object_new_object()) == NULL) {
			json_object_put(copy);
			return NULL;
		}
		json_object_object_foreach(mval, akey, aval) {
			if (strcmp(akey, LAST_APPLIED) != 0)
				(void)json_object_object_add(ann, akey, json_object_get(aval));
		}
		if (json_object_object_length(ann) > 0)
			(void)json_object_object_add(md, mkey, ann);
		else
			json_object_put(ann);
	}
	return copy;
}

/*
 * The preset dictionary Runs (and ResourceProfiles) are deflated with:
 * a Run as this controller writes it, with the keys, conditions, reasons
 * and messages of its status, most frequent last (closest to the text).
 * Part of the cached format, but only inside this process: change it
 * freely, and when the status's wording changes, change it too
 * (test_ctl_cache.c fails when it no longer fits a current Run).
 */
static const char obj_dict[] =
	"{\"lastTransitionTime\":\"2025-01-01T00:00:00Z\",\"message\":\"every object of sessi"
	"on 1 is deleted\",\"observedGeneration\":1,\"reason\":\"AllDeleted\",\"status\":\"Tr"
	"ue\",\"type\":\"CleanedUp\"},{\"lastTransitionTime\":\"2025-01-01T00:00:00Z\",\"mess"
	"age\":\"session 1 ended\",\"observedGeneration\":1,\"reason\":\"SessionEnded\",\"sta"
	"tus\":\"False\",\"type\":\"Running\"}],\"failedNodes\":[{\"exitCode\":1,\"index\":0,"
	"\"message\":\"\",\"node\":\"node-0\",\"pod\":\"\",\"reason\":\"PodFailed\"}],\"histo"
	"ry\":[{\"endTime\":\"2025-01-01T00:00:00Z\",\"phase\":\"Succeeded\",\"reason\":\"Com"
	"pleted\",\"session\":1,\"startTime\":\"2025-01-01T00:00:00Z\"}],\"message\":\"\",\"r"
	"eason\":\"\",\"sessionEndTime\":\"2025-01-01T00:00:00Z\"{\"apiVersion\":\"trainyard."
	"dev/v1alpha1\",\"kind\":\"Run\",\"metadata\":{\"annotations\":{},\"creationTimestamp"
	"\":\"2025-01-01T00:00:00Z\",\"generation\":1,\"labels\":{\"app\":\"\"},\"name\":\"\""
	",\"namespace\":\"default\",\"resourceVersion\":\"1\",\"uid\":\"00000000-0000-0000-00"
	"00-000000000000\"},\"spec\":{\"activeDeadlineSeconds\":86400,\"args\":[],\"command\""
	":[\"sleep\",\"infinity\"],\"env\":[{\"name\":\"\",\"value\":\"\"}],\"image\":\"busyb"
	"ox:1.36\",\"maxRestarts\":3,\"nodes\":8,\"ports\":[{\"containerPort\":29500,\"name\""
	":\"master\"}],\"profile\":\"\",\"restartPolicy\":\"Never\",\"scheduleTimeoutSeconds\""
	":600,\"session\":1},\"status\":{\"allPodsCreated\":true,\"conditions\":[{\"lastTrans"
	"itionTime\":\"2025-01-01T00:00:00Z\",\"message\":\"the spec is valid\",\"observedGen"
	"eration\":1,\"reason\":\"Valid\",\"status\":\"True\",\"type\":\"Valid\"},{\"lastTran"
	"sitionTime\":\"2025-01-01T00:00:00Z\",\"message\":\"all nodes are scheduled together"
	" by scheduler-plugins-scheduler (PodGroup scheduling.x-k8s.io/v1alpha1)\",\"observed"
	"Generation\":1,\"reason\":\"PodGroup\",\"status\":\"True\",\"type\":\"GangScheduling"
	"\"},{\"lastTransitionTime\":\"2025-01-01T00:00:00Z\",\"message\":\"all 8 nodes are s"
	"cheduled\",\"observedGeneration\":1,\"reason\":\"AllNodesScheduled\",\"status\":\"Tr"
	"ue\",\"type\":\"Scheduled\"},{\"lastTransitionTime\":\"2025-01-01T00:00:00Z\",\"mess"
	"age\":\"all 8 nodes are running\",\"observedGeneration\":1,\"reason\":\"AllNodesRunn"
	"ing\",\"status\":\"True\",\"type\":\"Running\"},{\"lastTransitionTime\":\"2025-01-01"
	"T00:00:00Z\",\"message\":\"session 1 is active\",\"observedGeneration\":1,\"reason\""
	":\"SessionActive\",\"status\":\"False\",\"type\":\"Finished\"},{\"lastTransitionTime"
	"\":\"2025-01-01T00:00:00Z\",\"message\":\"session 1 is active\",\"observedGeneration"
	"\":1,\"reason\":\"SessionActive\",\"status\":\"False\",\"type\":\"CleanedUp\"}],\"gp"
	"us\":8,\"nodes\":{\"failed\":0,\"pending\":0,\"running\":8,\"succeeded\":0,\"total\""
	":8},\"observedGeneration\":1,\"phase\":\"Running\",\"readyNodes\":\"8/8\",\"restarts"
	"\":0,\"session\":1,\"sessionStartTime\":\"2025-01-01T00:00:00Z\"}}";

const char *
cache_obj_dict(size_t *ret_len)
{
	*ret_len = sizeof(obj_dict) - 1;
	return obj_dict;
}

static void
obj_pack(struct ty_obj_item *it, const char *profile, const char *phase, const void *z,
    size_t zlen, struct packer *pk)
{
	it->profile = pack_str(pk, profile != NULL ? profile : "", NAME_FIELD_MAX);
	it->phase = pack_str(pk, phase != NULL ? phase : "", PHASE_MAX);
	it->z = pack(pk, z, zlen, false);	/* last: its length is not bounded */
}

int
cache_obj_from_json(const struct json_object *obj, struct ty_obj_item **ret,
    struct kc_status *st)
{
	_cleanup_(kc_freep) char *text = NULL;
	_cleanup_(kc_freep) void *z = NULL;
	struct json_object *copy;
	struct ty_obj_item tmp = { 0 }, *it;
	const char *profile = kc_json_str(obj, "spec", "profile");
	const char *phase = kc_json_str(obj, "status", "phase");
	struct packer pk = { 0 };
	size_t len = 0, zlen = 0;
	int r;

	if ((copy = trimmed_copy(obj)) == NULL)
		return -ENOMEM;
	text = kc_json_dump(copy, &len);
	json_object_put(copy);
	if (text == NULL)
		return -ENOMEM;
	if (len > UINT32_MAX)
		return kc_status_set(st, -E2BIG, "object of %zu bytes", len);
	if ((r = kc_deflate(text, len, obj_dict, sizeof(obj_dict) - 1, &z, &zlen)) < 0)
		return r == -ENOMEM ? r : kc_status_set(st, r, "deflate: %s", kc_strerror(r));
	obj_pack(&tmp, profile, phase, z, zlen, &pk);
	if ((it = kc_keep_malloc(sizeof(*it) + pk.at)) == NULL)
		return -ENOMEM;
	it->zlen = (uint32_t)zlen;
	it->len = (uint32_t)len;
	pk = (struct packer){ .strs = it->strs };
	obj_pack(it, profile, phase, z, zlen, &pk);
	*ret = it;
	return 0;
}

static int
obj_transform(void *arg, const struct json_object *obj, void **ret,
    struct kc_status *st)
{
	(void)arg;
	return cache_obj_from_json(obj, (struct ty_obj_item **)ret, st);
}

int
cache_obj_json(const struct ty_obj_item *it, struct json_object **ret)
{
	_cleanup_(kc_freep) char *text = NULL;
	struct kc_status st = { 0 };
	int r;

	if ((r = kc_inflate(ty_cache_str(it->strs, it->z), it->zlen, obj_dict,
	    sizeof(obj_dict) - 1, it->len, &text)) < 0)
		return r;
	return kc_json_parse(text, it->len, ret, &st);
}

/* ------------------------------------------------------------------ */
/* Objects a Project owns */

/*
 * FNV-1a 64 of a JSON value where an object's members count whatever
 * their order: each member is hashed on its own (key, then value) and the
 * members' hashes are added, which commutes. Arrays keep their order.
 * Depth is bounded by the parser (KC_JSON_DEPTH_MAX).
 */
static uint64_t
owned_hash_of(uint64_t h, const struct json_object *o)
{
	char num[32];
	uint64_t sum = 0;

	switch (json_object_get_type(o)) {
	case json_type_object: {
		json_object_object_foreach((struct json_object *)(uintptr_t)o, key, val)
			sum += owned_hash_of(kc_fnv1a64(KC_FNV1A64_INIT, key, strlen(key) + 1),
			    val);
		return kc_fnv1a64(kc_fnv1a64(h, "{", 1), &sum, sizeof(sum));
	}
	case json_type_array:
		h = kc_fnv1a64(h, "[", 1);
		for (size_t i = 0; i < json_object_array_length(o); i++)
			h = owned_hash_of(h, json_object_array_get_idx(o, i));
		return kc_fnv1a64(h, "]", 1);
	case json_type_string:
		h = kc_fnv1a64(h, "s", 1);
		return kc_fnv1a64(h, json_object_get_string((struct json_object *)(uintptr_t)o),
		    (size_t)json_object_get_string_len(o) + 1);
	case json_type_int:
		(void)snprintf(num, sizeof(num), "i%" PRId64, json_object_get_int64(o));
		return kc_fnv1a64(h, num, strlen(num) + 1);
	case json_type_double:
		(void)snprintf(num, sizeof(num), "d%.17g", json_object_get_double(o));
		return kc_fnv1a64(h, num, strlen(num) + 1);
	case json_type_boolean:
		return kc_fnv1a64(h, json_object_get_boolean(o) ? "t" : "f", 1);
	case json_type_null:
	default:
		return kc_fnv1a64(h, "n", 1);
	}
}

uint64_t
cache_owned_hash(const struct json_object *obj)
{
	static const char *const labels[] = {
		TY_LABEL_MANAGED_BY, TY_LABEL_PROJECT, TY_LABEL_MEMBER,
	};
	static const char *const owned[] = { "spec", "rules", "roleRef", "subjects" };
	uint64_t h = KC_FNV1A64_INIT;
	struct json_object *v;

	for (size_t i = 0; i < KC_ARRAY_SIZE(labels); i++) {
		const char *s = kc_json_str(obj, "metadata", "labels", labels[i]);

		h = kc_fnv1a64_str(kc_fnv1a64(h, "l", 1), s != NULL ? s : "");
		h = kc_fnv1a64(h, "", 1);
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(owned); i++) {
		h = kc_fnv1a64_str(h, owned[i]);
		if (json_object_object_get_ex(obj, owned[i], &v) && v != NULL)
			h = owned_hash_of(h, v);
		else
			h = kc_fnv1a64(h, "-", 1);
	}
	return h;
}

uint64_t
cache_psa_hash(const struct json_object *obj)
{
	static const char *const labels[] = {
		"pod-security.kubernetes.io/enforce", "pod-security.kubernetes.io/enforce-version",
		"pod-security.kubernetes.io/warn", "pod-security.kubernetes.io/warn-version",
		"pod-security.kubernetes.io/audit", "pod-security.kubernetes.io/audit-version",
	};
	uint64_t h = KC_FNV1A64_INIT;

	for (size_t i = 0; i < KC_ARRAY_SIZE(labels); i++) {
		const char *s = kc_json_str(obj, "metadata", "labels", labels[i]);

		h = kc_fnv1a64_str(kc_fnv1a64(h, s != NULL ? "v" : "-", 1), s != NULL ? s : "");
		h = kc_fnv1a64(h, "", 1);
	}
	return h;
}

static void
owned_pack(struct ty_owned_item *it, const struct json_object *obj, struct packer *pk)
{
	const char *project = kc_json_str(obj, "metadata", "labels", TY_LABEL_PROJECT);
	const char *member = kc_json_str(obj, "metadata", "labels", TY_LABEL_MEMBER);

	it->project = pack_str(pk, project != NULL ? project : "", LABEL_VALUE_MAX);
	it->member = pack_str(pk, member != NULL ? member : "", LABEL_VALUE_MAX);
}

int
cache_owned_from_json(const struct json_object *obj, struct ty_owned_item **ret)
{
	struct ty_owned_item tmp = { 0 }, *it;
	struct packer pk = { 0 };

	owned_pack(&tmp, obj, &pk);
	if ((it = kc_keep_malloc(sizeof(*it) + pk.at)) == NULL)
		return -ENOMEM;
	it->hash = cache_owned_hash(obj);
	it->deleting = kc_json_get(obj, "metadata", "deletionTimestamp") != NULL;
	pk = (struct packer){ .strs = it->strs };
	owned_pack(it, obj, &pk);
	*ret = it;
	return 0;
}

static int
owned_transform(void *arg, const struct json_object *obj, void **ret,
    struct kc_status *st)
{
	(void)arg;
	(void)st;
	return cache_owned_from_json(obj, (struct ty_owned_item **)ret);
}

/* A namespace: its hash is of its Pod Security labels (the spec is the API server's). */
static int
ns_transform(void *arg, const struct json_object *obj, void **ret, struct kc_status *st)
{
	struct ty_owned_item *it = NULL;
	int r;

	(void)arg;
	(void)st;
	if ((r = cache_owned_from_json(obj, &it)) < 0)
		return r;
	it->hash = cache_psa_hash(obj);
	*ret = it;
	return 0;
}

/* What a Project owns is indexed by the project's name. */
static bool
owned_index(void *arg, const struct kc_item *item, char *buf, size_t size)
{
	const char *project = ty_owned_project(kc_item_data(item));

	(void)arg;
	if (project == NULL || project[0] == '\0')
		return false;
	return kc_strlcpy(buf, project, size) < size;
}

/* ProjectMembers are indexed by their namespace. */
static bool
ns_index(void *arg, const struct kc_item *item, char *buf, size_t size)
{
	(void)arg;
	kc_item_ns(item, buf, size);
	return buf[0] != '\0';
}

/* ------------------------------------------------------------------ */
/* The caches */

/*
 * What the transforms read: only these members are built when a list or
 * watch event is decoded (the informer adds name, namespace and
 * resourceVersion).
 */
static const char *const pod_keep[] = {
	"metadata.uid", "metadata.labels", "metadata.ownerReferences",
	"metadata.deletionTimestamp", "spec.nodeName", "status",
};
static const char *const child_keep[] = {
	"metadata.uid", "metadata.labels", "metadata.ownerReferences",
	"metadata.deletionTimestamp",
};
static const char *const owned_keep[] = {
	"metadata.labels", "metadata.deletionTimestamp", "spec", "rules", "roleRef",
	"subjects",
};

#define SEL_MANAGED	TY_LABEL_MANAGED_BY "=" TY_MANAGER
#define SEL_PROJECT	SEL_MANAGED "," TY_LABEL_PROJECT

const struct ty_cache_kind cache_kinds[TY_CACHE_N] = {
	[TY_CACHE_RUNS] = {
		.name = "runs", .res = &ty_res_runs, .transform = obj_transform,
	},
	[TY_CACHE_PROFILES] = {
		.name = "resourceprofiles", .res = &ty_res_profiles,
		.transform = obj_transform,
	},
	[TY_CACHE_PODS] = {
		.name = "pods", .res = &kc_res_pods, .selector = SEL_MANAGED,
		.keep = pod_keep, .nkeep = KC_ARRAY_SIZE(pod_keep),
		.transform = pod_transform, .free_item = pod_free, .index = pod_index,
	},
	[TY_CACHE_SERVICES] = {
		.name = "services", .res = &kc_res_services, .selector = SEL_MANAGED,
		.keep = child_keep, .nkeep = KC_ARRAY_SIZE(child_keep),
		.transform = child_transform,
	},
	[TY_CACHE_NETPOLS] = {
		.name = "networkpolicies", .res = &kc_res_networkpolicies, .selector = SEL_MANAGED,
		.keep = child_keep, .nkeep = KC_ARRAY_SIZE(child_keep),
		.transform = child_transform,
	},
	[TY_CACHE_PODGROUPS] = {
		.name = "podgroups", .res = NULL, .selector = SEL_MANAGED,
		.keep = child_keep, .nkeep = KC_ARRAY_SIZE(child_keep),
		.transform = child_transform,
	},
	[TY_CACHE_PROJECTS] = {
		.name = "projects", .res = &ty_res_projects, .projects = true,
		.transform = obj_transform,
	},
	[TY_CACHE_MEMBERS] = {
		.name = "projectmembers", .res = &ty_res_projectmembers, .projects = true,
		.transform = obj_transform, .index = ns_index,
	},
	/* Namespaces keep their labels when their Project goes: no managed-by. */
	[TY_CACHE_NAMESPACES] = {
		.name = "namespaces", .res = &kc_res_namespaces, .projects = true,
		.selector = TY_LABEL_PROJECT,
		.keep = owned_keep, .nkeep = KC_ARRAY_SIZE(owned_keep),
		.transform = ns_transform, .index = owned_index,
	},
	[TY_CACHE_QUOTAS] = {
		.name = "resourcequotas", .res = &kc_res_resourcequotas, .projects = true,
		.selector = SEL_PROJECT,
		.keep = owned_keep, .nkeep = KC_ARRAY_SIZE(owned_keep),
		.transform = owned_transform, .index = owned_index,
	},
	[TY_CACHE_LIMITRANGES] = {
		.name = "limitranges", .res = &kc_res_limitranges, .projects = true,
		.selector = SEL_PROJECT,
		.keep = owned_keep, .nkeep = KC_ARRAY_SIZE(owned_keep),
		.transform = owned_transform, .index = owned_index,
	},
	[TY_CACHE_PROJECT_NETPOLS] = {
		.name = "project-networkpolicies", .res = &kc_res_networkpolicies,
		.projects = true, .selector = SEL_PROJECT,
		.keep = owned_keep, .nkeep = KC_ARRAY_SIZE(owned_keep),
		.transform = owned_transform, .index = owned_index,
	},
	[TY_CACHE_ROLEBINDINGS] = {
		.name = "rolebindings", .res = &kc_res_rolebindings, .projects = true,
		.selector = SEL_PROJECT,
		.keep = owned_keep, .nkeep = KC_ARRAY_SIZE(owned_keep),
		.transform = owned_transform, .index = owned_index,
	},
	[TY_CACHE_CLUSTERROLES] = {
		.name = "clusterroles", .res = &kc_res_clusterroles, .projects = true,
		.selector = SEL_PROJECT,
		.keep = owned_keep, .nkeep = KC_ARRAY_SIZE(owned_keep),
		.transform = owned_transform, .index = owned_index,
	},
	[TY_CACHE_CLUSTERROLEBINDINGS] = {
		.name = "clusterrolebindings", .res = &kc_res_clusterrolebindings,
		.projects = true, .selector = SEL_PROJECT,
		.keep = owned_keep, .nkeep = KC_ARRAY_SIZE(owned_keep),
		.transform = owned_transform, .index = owned_index,
	},
};

const char *
cache_run_of(enum ty_cache_id id, const struct kc_item *it)
{
	const struct ty_child_item *ci;

	switch (id) {
	case TY_CACHE_PODS:
		return ty_pod_str(kc_item_data(it), TY_POD_RUN);
	case TY_CACHE_SERVICES:
	case TY_CACHE_NETPOLS:
	case TY_CACHE_PODGROUPS:
		ci = kc_item_data(it);
		return ty_cache_str(ci->strs, ci->run);
	case TY_CACHE_RUNS:
	case TY_CACHE_PROFILES:
	case TY_CACHE_N:
	default:
		return NULL;
	}
}

int
cache_key_split(const char *key, char *ns, char *name)
{
	const char *slash = strchr(key, '/');

	if (slash == NULL || (size_t)(slash - key) > KC_NAMESPACE_MAX ||
	    strlen(slash + 1) > KC_NAME_MAX)
		return -EINVAL;
	memcpy(ns, key, (size_t)(slash - key));
	ns[slash - key] = '\0';
	kc_strlcpy(name, slash + 1, KC_NAME_MAX + 1);
	return 0;
}

const char *
cache_trainyard_version(const struct json_object *group)
{
	static const char *const newest_first[] = { "v1beta1", "v1alpha1" };
	struct json_object *versions = kc_json_get(group, "versions");
	const char *name = kc_json_str(group, "name");

	if (name == NULL || strcmp(name, TY_GROUP) != 0 ||
	    !json_object_is_type(versions, json_type_array))
		return NULL;
	for (size_t i = 0; i < KC_ARRAY_SIZE(newest_first); i++)
		for (size_t j = 0; j < json_object_array_length(versions); j++) {
			const char *v = kc_json_str(json_object_array_get_idx(versions, j),
			    "version");

			if (v != NULL && strcmp(v, newest_first[i]) == 0)
				return newest_first[i];
		}
	return NULL;
}

const char *
cache_version_follow(const char *current, const struct json_object *group)
{
	const char *v = group != NULL ? cache_trainyard_version(group) : NULL;

	return v != NULL ? v : current;
}

const struct kc_resource *
cache_runs_res(const char *version)
{
	return version != NULL && strcmp(version, "v1beta1") == 0 ? &ty_res_runs_v1beta1 :
	    &ty_res_runs;
}

const struct kc_resource *
cache_profiles_res(const char *version)
{
	return version != NULL && strcmp(version, "v1beta1") == 0 ?
	    &ty_res_profiles_v1beta1 : &ty_res_profiles;
}

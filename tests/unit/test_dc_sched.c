/*
 * test_dc_sched.c: the simulated kube-scheduler and Coscheduling
 * decisions (devcluster/sched.c) against upstream's behaviour:
 * resource.Quantity parsing, the default filter plugins and their reason
 * strings, FitError messages, DefaultPreemption, the Coscheduling
 * plugin's PreFilter/PostFilter/Permit and the PodGroup controller.
 *
 * Clusters come from YAML fixtures (tests/fixtures/sched/) or inline
 * YAML/JSON; "struct world" plays the scheduler loop: it puts objects,
 * plans, and applies a plan's bindings, nominations and evictions back
 * into the snapshot as the API's watch events would.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "../../devcluster/sched.h"
#include "testutil.h"

/*
 * The world: a snapshot and the pods put into it (to re-put them after a
 * binding, as the watch would).
 */

struct world {
	struct sched		*s;
	struct json_object	*pods;		/* array */
	struct sched_plan	*plan;
};

static void
w_init(struct world *w, const struct sched_opts *opts)
{
	memset(w, 0, sizeof(*w));
	ck_assert_int_eq(sched_new(opts, &w->s), 0);
	w->pods = json_object_new_array();
	ck_assert_ptr_nonnull(w->pods);
}

static void
w_done(struct world *w)
{
	w->plan = sched_plan_free(w->plan);
	w->s = sched_free(w->s);
	json_object_put(w->pods);
}

static struct json_object *
w_find(struct world *w, const char *ns, const char *name, size_t *ret_i)
{
	for (size_t i = 0; i < json_object_array_length(w->pods); i++) {
		struct json_object *p = json_object_array_get_idx(w->pods, i);

		if (strcmp(kc_json_str(p, "metadata", "namespace"), ns) == 0 &&
		    strcmp(kc_json_str(p, "metadata", "name"), name) == 0) {
			if (ret_i != NULL)
				*ret_i = i;
			return p;
		}
	}
	return NULL;
}

static void
w_put_obj(struct world *w, struct json_object *o)
{
	struct kc_status st = { 0 };
	const char *kind = kc_json_str(o, "kind");
	int r;

	ck_assert_ptr_nonnull(kind);
	if (strcmp(kind, "Node") == 0)
		r = sched_node_put(w->s, o, &st);
	else if (strcmp(kind, "PodGroup") == 0)
		r = sched_podgroup_put(w->s, o, &st);
	else if (strcmp(kind, "Namespace") == 0)
		r = sched_namespace_put(w->s, o, &st);
	else {
		size_t i;

		ck_assert_str_eq(kind, "Pod");
		r = sched_pod_put(w->s, o, &st);
		if (r == 0) {
			if (w_find(w, kc_json_str(o, "metadata", "namespace"),
			    kc_json_str(o, "metadata", "name"), &i) != NULL)
				ck_assert_int_eq(json_object_array_put_idx(w->pods, i,
				    json_object_get(o)), 0);
			else
				ck_assert_int_eq(json_object_array_add(w->pods,
				    json_object_get(o)), 0);
		}
	}
	ck_assert_msg(r == 0, "put %s: %d %s", kind, r, st.message);
}

static void
w_yaml(struct world *w, const char *text)
{
	struct json_object *docs = NULL;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_yaml_parse(text, strlen(text), NULL, &docs, &st) == 0,
	    "bad test YAML: %s\n%s", st.message, text);
	for (size_t i = 0; i < json_object_array_length(docs); i++)
		w_put_obj(w, json_object_array_get_idx(docs, i));
	json_object_put(docs);
}

static void _printf_(2, 3)
w_yamlf(struct world *w, const char *fmt, ...)
{
	struct kc_buf b;
	va_list ap;
	char *text;
	int r;

	kc_buf_init(&b, 1 << 20);
	va_start(ap, fmt);
	r = kc_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	ck_assert_int_eq(r, 0);
	text = kc_buf_take(&b, NULL);
	ck_assert_ptr_nonnull(text);
	w_yaml(w, text);
	kc_free(text);
}

static void
w_fixture(struct world *w, const char *name)
{
	char path[128];
	char *text;

	(void)snprintf(path, sizeof(path), "sched/%s", name);
	text = tu_fixture(path, NULL);
	w_yaml(w, text);
	kc_free(text);
}

/* A pod, described by what the tests vary. */
struct podspec {
	const char	*ns, *name;
	const char	*sched;		/* schedulerName; NULL: default */
	const char	*pg;		/* PodGroup label */
	int		 prio;
	const char	*gpus;		/* nvidia.com/gpu request */
	const char	*cpu, *mem;
	const char	*labels;	/* more JSON members of metadata.labels */
	const char	*spec;		/* more JSON members of spec */
	const char	*node;		/* spec.nodeName */
	const char	*phase;
	const char	*created;
	const char	*status;	/* more JSON members of status */
	const char	*meta;		/* more JSON members of metadata */
	bool		 notol;		/* no toleration of the GPU taint */
};

static void
w_pod(struct world *w, const struct podspec *ps)
{
	char res[256] = "", labels[512], *json;

	if (ps->gpus != NULL || ps->cpu != NULL || ps->mem != NULL)
		(void)snprintf(res, sizeof(res), "\"requests\": {%s%s%s%s%s%s%s%s%s}",
		    ps->gpus != NULL ? "\"nvidia.com/gpu\": \"" : "",
		    ps->gpus != NULL ? ps->gpus : "", ps->gpus != NULL ? "\"" : "",
		    ps->cpu != NULL ? (ps->gpus != NULL ? ", \"cpu\": \"" : "\"cpu\": \"") : "",
		    ps->cpu != NULL ? ps->cpu : "", ps->cpu != NULL ? "\"" : "",
		    ps->mem != NULL ? (ps->gpus != NULL || ps->cpu != NULL ?
		    ", \"memory\": \"" : "\"memory\": \"") : "",
		    ps->mem != NULL ? ps->mem : "", ps->mem != NULL ? "\"" : "");
	(void)snprintf(labels, sizeof(labels), "{%s%s%s%s%s}",
	    ps->pg != NULL ? "\"scheduling.x-k8s.io/pod-group\": \"" : "",
	    ps->pg != NULL ? ps->pg : "", ps->pg != NULL ? "\"" : "",
	    ps->pg != NULL && ps->labels != NULL ? ", " : "",
	    ps->labels != NULL ? ps->labels : "");
	json = kc_asprintf("{\"apiVersion\": \"v1\", \"kind\": \"Pod\", "
	    "\"metadata\": {\"namespace\": \"%s\", \"name\": \"%s\", \"uid\": \"uid-%s\", "
	    "\"creationTimestamp\": \"%s\", \"labels\": %s%s%s}, "
	    "\"spec\": {\"schedulerName\": \"%s\", \"priority\": %d, %s%s%s"
	    "\"tolerations\": [%s], "
	    "\"containers\": [{\"name\": \"main\", \"image\": \"trainer\", "
	    "\"resources\": {%s}}]%s%s}, "
	    "\"status\": {\"phase\": \"%s\"%s%s}}",
	    ps->ns != NULL ? ps->ns : "train", ps->name, ps->name,
	    ps->created != NULL ? ps->created : "2026-01-01T00:00:00Z", labels,
	    ps->meta != NULL ? ", " : "", ps->meta != NULL ? ps->meta : "",
	    ps->sched != NULL ? ps->sched : "default-scheduler", ps->prio,
	    ps->node != NULL ? "\"nodeName\": \"" : "", ps->node != NULL ? ps->node : "",
	    ps->node != NULL ? "\", " : "",
	    ps->notol ? "" : "{\"key\": \"nvidia.com/gpu\", \"operator\": \"Exists\", "
	    "\"effect\": \"NoSchedule\"}",
	    res, ps->spec != NULL ? ", " : "", ps->spec != NULL ? ps->spec : "",
	    ps->phase != NULL ? ps->phase : (ps->node != NULL ? "Running" : "Pending"),
	    ps->status != NULL ? ", " : "", ps->status != NULL ? ps->status : "");
	ck_assert_ptr_nonnull(json);
	w_yaml(w, json);
	kc_free(json);
}

static void
w_podgroup(struct world *w, const char *ns, const char *name, int min, const char *created)
{
	w_yamlf(w, "apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
	    "metadata:\n  namespace: %s\n  name: %s\n  creationTimestamp: \"%s\"\n"
	    "spec:\n  minMember: %d\n", ns, name,
	    created != NULL ? created : "2026-01-01T00:00:00Z", min);
}

static struct sched_plan *
w_plan(struct world *w)
{
	w->plan = sched_plan_free(w->plan);
	ck_assert_int_eq(sched_plan(w->s, &w->plan), 0);
	return w->plan;
}

/* Applies a plan as the loop would: bindings, nominations, evictions. */
static void
w_apply(struct world *w)
{
	struct sched_plan *p = w->plan;
	struct json_object *pod;
	size_t i;

	for (size_t k = 0; k < p->nbinds; k++) {
		pod = w_find(w, p->binds[k].ns, p->binds[k].name, NULL);
		ck_assert_ptr_nonnull(pod);
		ck_assert_int_eq(kc_json_set_str(kc_json_get(pod, "spec"), "nodeName",
		    p->binds[k].node), 0);
		ck_assert_int_eq(kc_json_set_str(kc_json_get(pod, "status"), "phase",
		    "Running"), 0);
		w_put_obj(w, pod);
	}
	for (size_t k = 0; k < p->nnoms; k++) {
		pod = w_find(w, p->noms[k].ns, p->noms[k].name, NULL);
		ck_assert_ptr_nonnull(pod);
		ck_assert_int_eq(kc_json_set_str(kc_json_get(pod, "status"),
		    "nominatedNodeName", p->noms[k].node), 0);
		w_put_obj(w, pod);
	}
	for (size_t k = 0; k < p->nvictims; k++) {
		ck_assert_ptr_nonnull(w_find(w, p->victims[k].ns, p->victims[k].name, &i));
		ck_assert(sched_pod_remove(w->s, p->victims[k].ns, p->victims[k].name));
		ck_assert_int_eq(json_object_array_del_idx(w->pods, i, 1), 0);
	}
}

static const char *
bound(const struct sched_plan *p, const char *name)
{
	for (size_t i = 0; i < p->nbinds; i++)
		if (strcmp(p->binds[i].name, name) == 0)
			return p->binds[i].node;
	return NULL;
}

static const char *
why(const struct sched_plan *p, const char *name)
{
	for (size_t i = 0; i < p->nunsched; i++)
		if (strcmp(p->unsched[i].name, name) == 0)
			return p->unsched[i].message;
	return NULL;
}

static const char *
reason(const struct sched_plan *p, const char *name)
{
	for (size_t i = 0; i < p->nunsched; i++)
		if (strcmp(p->unsched[i].name, name) == 0)
			return p->unsched[i].reason;
	return NULL;
}

/* The nomination: a node, "" for a cleared one, NULL for none. */
static const char *
nominated(const struct sched_plan *p, const char *name)
{
	for (size_t i = 0; i < p->nnoms; i++)
		if (strcmp(p->noms[i].name, name) == 0)
			return p->noms[i].node != NULL ? p->noms[i].node : "";
	return NULL;
}

static bool
victim(const struct sched_plan *p, const char *name)
{
	for (size_t i = 0; i < p->nvictims; i++)
		if (strcmp(p->victims[i].name, name) == 0)
			return true;
	return false;
}

static void
assert_why(const struct sched_plan *p, const char *name, const char *want)
{
	const char *got = why(p, name);

	ck_assert_msg(got != NULL, "%s: no unschedulable message", name);
	ck_assert_msg(strcmp(got, want) == 0, "%s:\n got: %s\nwant: %s", name, got, want);
}

/* A small cluster: n plain nodes "n1".."n<n>" with the given allocatable. */
static void
w_nodes(struct world *w, int n, const char *alloc, const char *labels)
{
	for (int i = 1; i <= n; i++)
		w_yamlf(w, "{\"kind\": \"Node\", \"metadata\": {\"name\": \"n%d\", "
		    "\"labels\": {\"kubernetes.io/hostname\": \"n%d\"%s%s}}, "
		    "\"status\": {\"allocatable\": {%s}, "
		    "\"conditions\": [{\"type\": \"Ready\", \"status\": \"True\"}]}}",
		    i, i, labels != NULL ? ", " : "", labels != NULL ? labels : "", alloc);
}

#define SMALL	"\"cpu\": \"4\", \"memory\": \"8Gi\", \"pods\": \"10\", " \
		"\"ephemeral-storage\": \"100Gi\", \"nvidia.com/gpu\": \"2\""

/*
 * Quantities
 */

static const struct {
	const char	*in;
	int64_t		 milli, value;
} qty_ok[] = {
	{ "0", 0, 0 },
	{ "1", 1000, 1 },
	{ "+1", 1000, 1 },
	{ "-1", -1000, -1 },
	{ "100m", 100, 1 },
	{ "1m", 1, 1 },
	{ "1500m", 1500, 2 },
	{ "0.5", 500, 1 },
	{ ".5", 500, 1 },
	{ "5.", 5000, 5 },
	{ "1.G", INT64_C(1000000000000), INT64_C(1000000000) },
	{ "0.1", 100, 1 },
	{ "1.5", 1500, 2 },
	{ "0.0001", 1, 1 },
	{ "100n", 1, 1 },
	{ "1u", 1, 1 },
	{ "1n", 1, 1 },
	{ "0n", 0, 0 },
	{ "1k", 1000000, 1000 },
	{ "1M", INT64_C(1000000000), 1000000 },
	{ "1G", INT64_C(1000000000000), INT64_C(1000000000) },
	{ "1T", INT64_C(1000000000000000), INT64_C(1000000000000) },
	{ "1P", INT64_C(1000000000000000000), INT64_C(1000000000000000) },
	{ "1E", INT64_MAX, INT64_C(1000000000000000000) },
	{ "9E", INT64_MAX, INT64_C(9000000000000000000) },
	{ "10E", INT64_MAX, INT64_MAX },
	{ "1Ki", 1024000, 1024 },
	{ "1Mi", INT64_C(1048576000), 1048576 },
	{ "1Gi", INT64_C(1073741824000), INT64_C(1073741824) },
	{ "1Ti", INT64_C(1099511627776000), INT64_C(1099511627776) },
	{ "1Pi", INT64_C(1125899906842624000), INT64_C(1125899906842624) },
	{ "1Ei", INT64_MAX, INT64_C(1152921504606846976) },
	{ "7Ei", INT64_MAX, INT64_C(8070450532247928832) },
	{ "8Ei", INT64_MAX, INT64_MAX },
	{ "1.5Gi", INT64_C(1610612736000), INT64_C(1610612736) },
	{ "0.5Ki", 512000, 512 },
	{ "0.1Ki", 102400, 103 },
	{ "1e3", 1000000, 1000 },
	{ "1E3", 1000000, 1000 },
	{ "1e+3", 1000000, 1000 },
	{ "1e-3", 1, 1 },
	{ "1.5e3", 1500000, 1500 },
	{ "12e-1", 1200, 2 },
	{ "1e0", 1000, 1 },
	{ "1e18", INT64_MAX, INT64_C(1000000000000000000) },
	{ "1e100", INT64_MAX, INT64_MAX },
	{ "1e-100", 1, 1 },
	{ "-1e-100", -1, -1 },
	{ "e3", 0, 0 },
	{ "000", 0, 0 },
	{ "-0", 0, 0 },
	{ "007", 7000, 7 },
	{ "0.000", 0, 0 },
	{ "00.5", 500, 1 },
	{ "-", 0, 0 },
	{ "+", 0, 0 },
	{ ".", 0, 0 },
	{ "8", 8000, 8 },
	{ "128", 128000, 128 },
	{ "110", 110000, 110 },
	{ "3500Gi", INT64_C(3758096384000000), INT64_C(3758096384000) },
	{ "-1.5", -1500, -2 },
	{ "-100m", -100, -1 },
	{ "9223372036854775807", INT64_MAX, INT64_MAX },
	{ "9223372036854775808", INT64_MAX, INT64_MAX },
	{ "99999999999999999999999999999999", INT64_MAX, INT64_MAX },
	{ "9223372036854775.807", INT64_MAX, INT64_C(9223372036854776) },
	{ "9223372036854775.807m", INT64_C(9223372036854776), INT64_C(9223372036854776) / 1000 + 1 },
	{ "0.123456789012345678901234567890", 124, 1 },
	{ "123456789012345678901234567890e-29", 1235, 2 },
};

static const struct {
	const char	*in;
	const char	*err;
} qty_bad[] = {
	{ "", "quantities must match the regular expression" },
	{ " 1", "quantities must match the regular expression" },
	{ "1 ", "quantities must match the regular expression" },
	{ "1 Gi", "quantities must match the regular expression" },
	{ "1.5.5", "quantities must match the regular expression" },
	{ "1e3.5", "quantities must match the regular expression" },
	{ "abc", "quantities must match the regular expression" },
	{ "1Gib", "quantities must match the regular expression" },
	{ "1Zi", "quantities must match the regular expression" },
	{ "--1", "unable to parse quantity's suffix" },
	{ "1K", "unable to parse quantity's suffix" },
	{ "1ki", "unable to parse quantity's suffix" },
	{ "1i", "unable to parse quantity's suffix" },
	{ "1e", "unable to parse quantity's suffix" },
	{ "1e+", "unable to parse quantity's suffix" },
	{ "1m3", "unable to parse quantity's suffix" },
	{ "1Ki3", "unable to parse quantity's suffix" },
	{ "1GG", "unable to parse quantity's suffix" },
	{ "1mi", "unable to parse quantity's suffix" },
	{ "1e99999999999999999999", "unable to parse quantity's suffix" },
	{ "1234567890123456789012345678901234567890123456789012345678901234567890",
	  "quantity longer than 64 bytes" },
};

START_TEST(test_quantity_ok)
{
	int64_t milli = 42, value = 42;
	struct kc_status st = { 0 };

	ck_assert_msg(sched_quantity_parse(qty_ok[_i].in, &milli, &value, &st) == 0,
	    "%s: %s", qty_ok[_i].in, st.message);
	ck_assert_msg(milli == qty_ok[_i].milli, "%s: milli %" PRId64 " want %" PRId64,
	    qty_ok[_i].in, milli, qty_ok[_i].milli);
	ck_assert_msg(value == qty_ok[_i].value, "%s: value %" PRId64 " want %" PRId64,
	    qty_ok[_i].in, value, qty_ok[_i].value);
	/* Either output may be NULL. */
	ck_assert_int_eq(sched_quantity_parse(qty_ok[_i].in, NULL, NULL, NULL), 0);
}
END_TEST

START_TEST(test_quantity_bad)
{
	int64_t milli = 42, value = 43;
	struct kc_status st = { 0 };

	ck_assert_int_eq(sched_quantity_parse(qty_bad[_i].in, &milli, &value, &st),
	    KC_EINVALID);
	ck_assert_msg(strstr(st.message, qty_bad[_i].err) != NULL, "%s: %s",
	    qty_bad[_i].in, st.message);
	ck_assert_int_eq(milli, 42);
	ck_assert_int_eq(value, 43);
}
END_TEST

START_TEST(test_quantity_exact_message)
{
	struct kc_status st = { 0 };

	ck_assert_int_eq(sched_quantity_parse("1x", NULL, NULL, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "quantities must match the regular expression "
	    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
	ck_assert_int_eq(sched_quantity_parse("5K", NULL, NULL, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "unable to parse quantity's suffix");
	ck_assert_int_eq(sched_quantity_parse(NULL, NULL, NULL, &st), KC_EINVALID);
	ck_assert_int_eq(sched_quantity_parse("1", NULL, NULL, NULL), 0);
}
END_TEST

/* Every suffix against its definition, and milli = 1000 * value exactly. */
START_TEST(test_quantity_suffix_sweep)
{
	static const struct { const char *suf; int64_t mul; } dec[] = {
		{ "", 1 }, { "k", 1000 }, { "M", 1000000 }, { "G", 1000000000 },
		{ "T", INT64_C(1000000000000) }, { "Ki", 1024 }, { "Mi", 1048576 },
		{ "Gi", 1073741824 }, { "Ti", INT64_C(1099511627776) },
	};
	char buf[64];
	int64_t milli, value;

	for (size_t i = 0; i < sizeof(dec) / sizeof(dec[0]); i++)
		for (int64_t n = 0; n < 1000; n += 7) {
			(void)snprintf(buf, sizeof(buf), "%" PRId64 "%s", n, dec[i].suf);
			ck_assert_int_eq(sched_quantity_parse(buf, &milli, &value, NULL), 0);
			ck_assert_int_eq(value, n * dec[i].mul);
			ck_assert_int_eq(milli, n * dec[i].mul * 1000);
			(void)snprintf(buf, sizeof(buf), "%" PRId64 "m", n);
			ck_assert_int_eq(sched_quantity_parse(buf, &milli, &value, NULL), 0);
			ck_assert_int_eq(milli, n);
			ck_assert_int_eq(value, (n + 999) / 1000);
		}
}
END_TEST

/*
 * Pod requests
 */

static struct json_object *
json(const char *text)
{
	struct json_object *o = NULL;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_yaml_parse_one(text, strlen(text), NULL, &o, &st) == 0,
	    "bad test YAML %s: %s", text, st.message);
	return o;
}

static void
assert_requests(const char *pod, const char *want)
{
	struct json_object *p = json(pod), *got = NULL, *w = json(want);
	struct kc_status st = { 0 };
	char *a, *b;

	ck_assert_msg(sched_pod_requests(p, &got, &st) == 0, "%s", st.message);
	a = kc_json_dump(got, NULL);
	b = kc_json_dump(w, NULL);
	ck_assert_msg(kc_json_equal(got, w), "got %s want %s", a, b);
	kc_free(a);
	kc_free(b);
	json_object_put(p);
	json_object_put(got);
	json_object_put(w);
}

START_TEST(test_requests)
{
	/* Containers add up. */
	assert_requests("{spec: {containers: ["
	    "{resources: {requests: {cpu: 500m, memory: 1Gi}}},"
	    "{resources: {requests: {cpu: '1.5', memory: 512Mi, nvidia.com/gpu: 2}}}]}}",
	    "{cpu: 2000, memory: 1610612736, nvidia.com/gpu: 2}");
	/* Limits only: requests default to limits, for every resource. */
	assert_requests("{spec: {containers: [{resources: {limits: {cpu: 2, "
	    "nvidia.com/gpu: 8, rdma/hca_shared_devices_a: 1}}}]}}",
	    "{cpu: 2000, nvidia.com/gpu: 8, rdma/hca_shared_devices_a: 1}");
	/* A request wins over the limit of the same resource. */
	assert_requests("{spec: {containers: [{resources: {requests: {cpu: 1}, "
	    "limits: {cpu: 4, memory: 2Gi}}}]}}",
	    "{cpu: 1000, memory: 2147483648}");
	/* An init container larger than the sum is the floor. */
	assert_requests("{spec: {initContainers: [{resources: {requests: {cpu: 3, "
	    "nvidia.com/gpu: 1}}}], containers: [{resources: {requests: {cpu: 1}}},"
	    "{resources: {requests: {cpu: 1, memory: 1Gi}}}]}}",
	    "{cpu: 3000, memory: 1073741824, nvidia.com/gpu: 1}");
	/* Restartable init containers (sidecars) add to the sum and to later inits. */
	assert_requests("{spec: {initContainers: ["
	    "{restartPolicy: Always, resources: {requests: {cpu: 1}}},"
	    "{resources: {requests: {cpu: 4}}}],"
	    "containers: [{resources: {requests: {cpu: 2}}}]}}",
	    "{cpu: 5000}");
	assert_requests("{spec: {initContainers: ["
	    "{restartPolicy: Always, resources: {requests: {cpu: 1}}},"
	    "{resources: {requests: {cpu: 1}}}],"
	    "containers: [{resources: {requests: {cpu: 2}}}]}}",
	    "{cpu: 3000}");
	/* Overhead is added last; ignored resource names are left out. */
	assert_requests("{spec: {overhead: {cpu: 250m, memory: 120Mi}, containers: ["
	    "{resources: {requests: {cpu: 1, storage: 1Gi, kubernetes.io/foo: 1, "
	    "requests.nvidia.com/gpu: 1, hugepages-2Mi: 4Mi, ephemeral-storage: 10Gi}}}]}}",
	    "{cpu: 1250, memory: 125829120, hugepages-2Mi: 4194304, "
	    "ephemeral-storage: 10737418240}");
	/* JSON numbers: integers exactly, doubles by their short form. */
	assert_requests("{spec: {containers: [{resources: {requests: {cpu: 0.1, "
	    "memory: 1073741824, nvidia.com/gpu: 4}}}]}}",
	    "{cpu: 100, memory: 1073741824, nvidia.com/gpu: 4}");
	/* Zero requests are left out; no containers is nothing. */
	assert_requests("{spec: {containers: [{resources: {requests: {cpu: 0}}}]}}", "{}");
	assert_requests("{}", "{}");
}
END_TEST

START_TEST(test_requests_bad)
{
	struct json_object *p = json("{spec: {containers: [{name: a}, {resources: "
	    "{requests: {nvidia.com/gpu: banana}}}]}}"), *got = NULL;
	struct kc_status st = { 0 };

	ck_assert_int_eq(sched_pod_requests(p, &got, &st), KC_EINVALID);
	ck_assert_ptr_null(got);
	ck_assert_str_eq(st.message, "spec.containers[1].resources.requests"
	    "[nvidia.com/gpu]: Invalid value: \"banana\": quantities must match the "
	    "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
	json_object_put(p);
	p = json("{spec: {containers: [{resources: {limits: {cpu: [1]}}}]}}");
	ck_assert_int_eq(sched_pod_requests(p, &got, &st), KC_EINVALID);
	ck_assert_ptr_nonnull(strstr(st.message, "spec.containers[0].resources.limits[cpu]"));
	json_object_put(p);
}
END_TEST

/*
 * Fit, per resource
 */

START_TEST(test_fit_resources)
{
	static const struct {
		const char	*requests;
		const char	*msg;		/* NULL: fits */
	} cases[] = {
		{ "{\"cpu\": \"4\"}", NULL },
		{ "{\"cpu\": \"4001m\"}", "0/3 nodes are available: 3 Insufficient cpu. "
		  "preemption: 0/3 nodes are available: 3 Preemption is not helpful for "
		  "scheduling." },
		{ "{\"memory\": \"8Gi\"}", NULL },
		{ "{\"memory\": \"8193Mi\"}", "0/3 nodes are available: 3 Insufficient "
		  "memory. preemption: 0/3 nodes are available: 3 Preemption is not "
		  "helpful for scheduling." },
		{ "{\"ephemeral-storage\": \"101Gi\"}", "0/3 nodes are available: 3 "
		  "Insufficient ephemeral-storage. preemption: 0/3 nodes are available: "
		  "3 Preemption is not helpful for scheduling." },
		{ "{\"nvidia.com/gpu\": \"3\"}", "0/3 nodes are available: 3 Insufficient "
		  "nvidia.com/gpu. preemption: 0/3 nodes are available: 3 Preemption is "
		  "not helpful for scheduling." },
		{ "{\"mellanox.com/sriov_rdma\": \"1\"}", "0/3 nodes are available: 3 "
		  "Insufficient mellanox.com/sriov_rdma. preemption: 0/3 nodes are "
		  "available: 3 Preemption is not helpful for scheduling." },
		{ "{\"cpu\": \"5\", \"nvidia.com/gpu\": \"3\"}", "0/3 nodes are available: "
		  "3 Insufficient cpu, 3 Insufficient nvidia.com/gpu. preemption: 0/3 "
		  "nodes are available: 3 Preemption is not helpful for scheduling." },
		{ "{\"storage\": \"1Pi\", \"example.com/foo\": \"0\"}", NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct world w;
		char spec[512];

		w_init(&w, NULL);
		w_nodes(&w, 3, SMALL, NULL);
		(void)snprintf(spec, sizeof(spec), "\"overhead\": %s", cases[i].requests);
		w_pod(&w, &(struct podspec){ .name = "p", .spec = spec });
		w_plan(&w);
		if (cases[i].msg == NULL) {
			ck_assert_msg(bound(w.plan, "p") != NULL, "case %zu: %s", i,
			    why(w.plan, "p"));
			ck_assert_uint_eq(w.plan->nunsched, 0);
		} else {
			ck_assert_ptr_null(bound(w.plan, "p"));
			assert_why(w.plan, "p", cases[i].msg);
			ck_assert_str_eq(reason(w.plan, "p"), "Unschedulable");
		}
		w_done(&w);
	}
}
END_TEST

/* What bound pods use counts; "Too many pods"; limits-only extended resources. */
START_TEST(test_fit_used)
{
	struct world w;

	w_init(&w, NULL);
	w_nodes(&w, 2, SMALL, NULL);
	w_pod(&w, &(struct podspec){ .name = "a", .node = "n1", .gpus = "2" });
	w_pod(&w, &(struct podspec){ .name = "b", .node = "n2", .gpus = "1" });
	w_pod(&w, &(struct podspec){ .name = "done", .node = "n2", .gpus = "1",
	    .phase = "Succeeded" });
	/* Limits only: the 2 GPUs count as requests. */
	w_pod(&w, &(struct podspec){ .name = "x", .spec = "\"initContainers\": []",
	    .gpus = NULL, .status = "\"qosClass\": \"Burstable\"" });
	w_yaml(&w, "{kind: Pod, metadata: {namespace: train, name: lim}, spec: "
	    "{tolerations: [{operator: Exists}], containers: [{resources: "
	    "{limits: {nvidia.com/gpu: 2}}}]}, status: {phase: Pending}}");
	w_plan(&w);
	ck_assert_str_eq(bound(w.plan, "x"), "n1");
	assert_why(w.plan, "lim", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. "
	    "preemption: 0/2 nodes are available: 2 No preemption victims found for "
	    "incoming pod.");
	w_done(&w);

	/* The pod count. */
	w_init(&w, NULL);
	w_nodes(&w, 1, "\"cpu\": \"4\", \"pods\": \"2\"", NULL);
	w_pod(&w, &(struct podspec){ .name = "a", .node = "n1" });
	w_pod(&w, &(struct podspec){ .name = "b", .node = "n1", .phase = "Pending" });
	w_pod(&w, &(struct podspec){ .name = "c" });
	w_plan(&w);
	assert_why(w.plan, "c", "0/1 nodes are available: 1 Too many pods. "
	    "preemption: 0/1 nodes are available: 1 No preemption victims found for "
	    "incoming pod.");
	w_done(&w);

	/* Without allocatable (capacity only) a node takes nothing, as upstream. */
	w_init(&w, NULL);
	w_yaml(&w, "{kind: Node, metadata: {name: cap}, status: {capacity: {cpu: 4, "
	    "pods: 10}, conditions: [{type: Ready, status: 'True'}]}}");
	w_pod(&w, &(struct podspec){ .name = "c", .cpu = "1" });
	w_plan(&w);
	assert_why(w.plan, "c", "0/1 nodes are available: 1 Insufficient cpu, 1 Too many "
	    "pods. preemption: 0/1 nodes are available: 1 Preemption is not helpful for "
	    "scheduling.");
	w_done(&w);
}
END_TEST

/*
 * A status-only version (sched_pod_put_status()): a finished pod gives its
 * GPUs back and a pending one fits; an unknown pod is KC_ENOTFOUND.
 */
START_TEST(test_put_status)
{
	struct world w;
	struct json_object *a, *ghost;

	w_init(&w, NULL);
	w_nodes(&w, 1, SMALL, NULL);
	w_pod(&w, &(struct podspec){ .name = "a", .node = "n1", .gpus = "2" });
	w_pod(&w, &(struct podspec){ .name = "x", .gpus = "2" });
	w_plan(&w);
	ck_assert_ptr_null(bound(w.plan, "x"));
	ck_assert_ptr_nonnull(why(w.plan, "x"));
	a = w_find(&w, "train", "a", NULL);
	ck_assert_int_eq(kc_json_set_str(kc_json_get(a, "status"), "phase", "Succeeded"), 0);
	ck_assert_int_eq(kc_json_set_str(kc_json_get(a, "status"), "nominatedNodeName", "n1"),
	    0);
	ck_assert_int_eq(sched_pod_put_status(w.s, a), 0);
	w_plan(&w);
	ck_assert_str_eq(bound(w.plan, "x"), "n1");
	ghost = kc_json_copy(a);
	ck_assert_int_eq(kc_json_set_str(kc_json_get(ghost, "metadata"), "name", "ghost"), 0);
	ck_assert_int_eq(sched_pod_put_status(w.s, ghost), KC_ENOTFOUND);
	json_object_put(ghost);
	w_done(&w);
}
END_TEST

/*
 * nodeSelector and required node affinity
 */

#define ZONED(z, gpu)	"\"zone\": \"" z "\", \"gpu.mem\": \"" gpu "\""

static void
zoned_cluster(struct world *w)
{
	w_yamlf(w, "{\"kind\": \"Node\", \"metadata\": {\"name\": \"z1\", \"labels\": "
	    "{%s, \"disk\": \"ssd\"}}, \"status\": {\"allocatable\": {%s}, "
	    "\"conditions\": [{\"type\": \"Ready\", \"status\": \"True\"}]}}",
	    ZONED("a", "40"), SMALL);
	w_yamlf(w, "{\"kind\": \"Node\", \"metadata\": {\"name\": \"z2\", \"labels\": "
	    "{%s}}, \"status\": {\"allocatable\": {%s}, "
	    "\"conditions\": [{\"type\": \"Ready\", \"status\": \"True\"}]}}",
	    ZONED("b", "80"), SMALL);
	w_yamlf(w, "{\"kind\": \"Node\", \"metadata\": {\"name\": \"z3\", \"labels\": "
	    "{%s}}, \"status\": {\"allocatable\": {%s}, "
	    "\"conditions\": [{\"type\": \"Ready\", \"status\": \"True\"}]}}",
	    ZONED("c", "x80"), SMALL);
}

START_TEST(test_node_affinity)
{
	static const struct {
		const char	*spec;
		const char	*nodes;		/* the nodes that pass, as "z1,z3" */
	} cases[] = {
		{ "\"nodeSelector\": {\"zone\": \"b\"}", "z2" },
		{ "\"nodeSelector\": {\"zone\": \"b\", \"disk\": \"ssd\"}", "" },
		{ "\"nodeSelector\": {}", "z1,z2,z3" },
#define TERMS(x) "\"affinity\": {\"nodeAffinity\": " \
		"{\"requiredDuringSchedulingIgnoredDuringExecution\": " \
		"{\"nodeSelectorTerms\": [" x "]}}}"
		{ TERMS("{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"In\", "
		  "\"values\": [\"a\", \"c\"]}]}"), "z1,z3" },
		{ TERMS("{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"NotIn\", "
		  "\"values\": [\"a\"]}]}"), "z2,z3" },
		{ TERMS("{\"matchExpressions\": [{\"key\": \"disk\", \"operator\": "
		  "\"NotIn\", \"values\": [\"hdd\"]}]}"), "z1,z2,z3" },
		{ TERMS("{\"matchExpressions\": [{\"key\": \"disk\", \"operator\": "
		  "\"Exists\"}]}"), "z1" },
		{ TERMS("{\"matchExpressions\": [{\"key\": \"disk\", \"operator\": "
		  "\"DoesNotExist\"}]}"), "z2,z3" },
		{ TERMS("{\"matchExpressions\": [{\"key\": \"gpu.mem\", \"operator\": \"Gt\", "
		  "\"values\": [\"40\"]}]}"), "z2" },
		{ TERMS("{\"matchExpressions\": [{\"key\": \"gpu.mem\", \"operator\": \"Lt\", "
		  "\"values\": [\"80\"]}]}"), "z1" },
		{ TERMS("{\"matchExpressions\": [{\"key\": \"gpu.mem\", \"operator\": \"Gt\", "
		  "\"values\": [\"-1\"]}]}"), "z1,z2" },
		/* Expressions are ANDed, terms ORed. */
		{ TERMS("{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"In\", "
		  "\"values\": [\"a\", \"b\"]}, {\"key\": \"disk\", \"operator\": "
		  "\"DoesNotExist\"}]}"), "z2" },
		{ TERMS("{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"In\", "
		  "\"values\": [\"a\"]}]}, {\"matchExpressions\": [{\"key\": \"zone\", "
		  "\"operator\": \"In\", \"values\": [\"c\"]}]}"), "z1,z3" },
		/* Invalid or empty terms match nothing, other terms still count. */
		{ TERMS("{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": "
		  "\"Near\", \"values\": [\"a\"]}]}, {\"matchExpressions\": [{\"key\": "
		  "\"zone\", \"operator\": \"In\", \"values\": [\"b\"]}]}"), "z2" },
		{ TERMS("{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"In\", "
		  "\"values\": []}]}"), "" },
		{ TERMS("{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": "
		  "\"Exists\", \"values\": [\"a\"]}]}"), "" },
		{ TERMS("{\"matchExpressions\": [{\"key\": \"gpu.mem\", \"operator\": \"Gt\", "
		  "\"values\": [\"forty\"]}]}"), "" },
		{ TERMS("{}"), "" },
		{ TERMS(""), "" },
		/* matchFields metadata.name (In and NotIn). */
		{ TERMS("{\"matchFields\": [{\"key\": \"metadata.name\", \"operator\": "
		  "\"NotIn\", \"values\": [\"z2\"]}]}"), "z1,z3" },
		{ TERMS("{\"matchFields\": [{\"key\": \"metadata.name\", \"operator\": "
		  "\"In\", \"values\": [\"z2\", \"z9\"]}]}"), "" },
		{ "\"nodeSelector\": {\"zone\": \"c\"}, " TERMS("{\"matchExpressions\": "
		  "[{\"key\": \"gpu.mem\", \"operator\": \"DoesNotExist\"}]}, "
		  "{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"Exists\"}]}"),
		  "z3" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct world w;
		char got[64] = "";

		w_init(&w, NULL);
		zoned_cluster(&w);
		/* One pod per node, so each node's verdict shows. */
		for (int k = 0; k < 3; k++) {
			char name[24];

			(void)snprintf(name, sizeof(name), "p%d", k);
			w_pod(&w, &(struct podspec){ .name = name, .spec = cases[i].spec,
			    .cpu = "3" });
		}
		w_plan(&w);
		for (size_t k = 0; k < w.plan->nbinds; k++) {
			char *x = kc_asprintf("%s%s%s", got, *got != '\0' ? "," : "",
			    w.plan->binds[k].node);

			(void)kc_strlcpy(got, x, sizeof(got));
			kc_free(x);
		}
		/* Binding order follows bin packing: sort for the comparison. */
		{
			char *tok[4], *save = NULL, sorted[64] = "";
			int n = 0;

			for (char *t = strtok_r(got, ",", &save); t != NULL && n < 4;
			    t = strtok_r(NULL, ",", &save))
				tok[n++] = t;
			for (int a = 0; a < n; a++)
				for (int b = a + 1; b < n; b++)
					if (strcmp(tok[a], tok[b]) > 0) {
						char *tmp = tok[a];

						tok[a] = tok[b];
						tok[b] = tmp;
					}
			for (int a = 0; a < n; a++) {
				(void)kc_strlcat(sorted, a != 0 ? "," : "", sizeof(sorted));
				(void)kc_strlcat(sorted, tok[a], sizeof(sorted));
			}
			ck_assert_msg(strcmp(sorted, cases[i].nodes) == 0,
			    "case %zu: bound to %s, want %s", i, sorted, cases[i].nodes);
		}
		w_done(&w);
	}
}
END_TEST

START_TEST(test_node_affinity_messages)
{
	struct world w;

	w_init(&w, NULL);
	zoned_cluster(&w);
	w_pod(&w, &(struct podspec){ .name = "sel",
	    .spec = "\"nodeSelector\": {\"zone\": \"q\"}" });
	/* metadata.name In: the other nodes are PreFilter's, not Filter's. */
	w_pod(&w, &(struct podspec){ .name = "used", .node = "z1", .cpu = "2" });
	w_pod(&w, &(struct podspec){ .name = "pin", .cpu = "3", .spec = TERMS(
	    "{\"matchFields\": [{\"key\": \"metadata.name\", \"operator\": \"In\", "
	    "\"values\": [\"z1\"]}]}") });
	/* Each term pins other nodes: a conflict fails PreFilter. */
	w_pod(&w, &(struct podspec){ .name = "conflict", .spec = TERMS(
	    "{\"matchFields\": [{\"key\": \"metadata.name\", \"operator\": \"In\", "
	    "\"values\": [\"z1\"]}, {\"key\": \"metadata.name\", \"operator\": \"In\", "
	    "\"values\": [\"z2\"]}]}") });
	w_plan(&w);
	assert_why(w.plan, "sel", "0/3 nodes are available: 3 node(s) didn't match Pod's "
	    "node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption "
	    "is not helpful for scheduling.");
	assert_why(w.plan, "pin", "0/3 nodes are available: 1 Insufficient cpu, "
	    "2 node(s) didn't satisfy plugin(s) [NodeAffinity]. preemption: 0/3 nodes "
	    "are available: 1 No preemption victims found for incoming pod, 2 Preemption "
	    "is not helpful for scheduling.");
	assert_why(w.plan, "conflict", "0/3 nodes are available: pod affinity terms "
	    "conflict. preemption: 0/3 nodes are available: 3 Preemption is not helpful "
	    "for scheduling.");
	w_done(&w);
}
END_TEST

/*
 * Taints, tolerations, cordoned and NotReady nodes
 */

START_TEST(test_taints)
{
	static const struct {
		const char	*taint;		/* the node's spec.taints */
		const char	*tols;		/* the pod's tolerations */
		bool		 fits;
	} cases[] = {
		{ "{key: k, value: v, effect: NoSchedule}", "", false },
		{ "{key: k, value: v, effect: NoExecute}", "", false },
		{ "{key: k, value: v, effect: PreferNoSchedule}", "", true },
		{ "{key: k, value: v, effect: NoSchedule}", "{key: k, value: v}", true },
		{ "{key: k, value: v, effect: NoSchedule}",
		  "{key: k, operator: Equal, value: v, effect: NoSchedule}", true },
		{ "{key: k, value: v, effect: NoSchedule}", "{key: k, value: w}", false },
		{ "{key: k, value: v, effect: NoSchedule}", "{key: k, operator: Exists}", true },
		{ "{key: k, value: v, effect: NoSchedule}",
		  "{key: k, operator: Exists, effect: NoExecute}", false },
		{ "{key: k, value: v, effect: NoSchedule}", "{operator: Exists}", true },
		{ "{key: k, value: v, effect: NoSchedule}",
		  "{operator: Exists, effect: NoSchedule}", true },
		{ "{key: k, value: v, effect: NoSchedule}", "{key: j, operator: Exists}", false },
		{ "{key: k, value: v, effect: NoSchedule}", "{key: k, operator: Lt, value: v}",
		  false },
		{ "{key: k, effect: NoSchedule}", "{key: k, operator: Exists}", true },
		{ "{key: k, effect: NoSchedule}", "{key: k}", true },
		{ "{key: k, value: v, effect: NoSchedule}, {key: j, effect: NoExecute}",
		  "{key: k, operator: Exists}", false },
		{ "{key: k, value: v, effect: NoSchedule}, {key: j, effect: NoExecute}",
		  "{key: k, operator: Exists}, {key: j, operator: Exists}", true },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct world w;

		w_init(&w, NULL);
		w_yamlf(&w, "{kind: Node, metadata: {name: t1}, spec: {taints: [%s]}, "
		    "status: {allocatable: {cpu: 1, pods: 5}, conditions: "
		    "[{type: Ready, status: 'True'}]}}", cases[i].taint);
		w_yamlf(&w, "{kind: Pod, metadata: {namespace: ns, name: p}, spec: "
		    "{tolerations: [%s], containers: [{name: c}]}}", cases[i].tols);
		w_plan(&w);
		ck_assert_msg((bound(w.plan, "p") != NULL) == cases[i].fits,
		    "case %zu: %s", i, why(w.plan, "p"));
		w_done(&w);
	}
}
END_TEST

START_TEST(test_unschedulable_and_not_ready)
{
	struct world w;

	w_init(&w, NULL);
	w_yaml(&w, "{kind: Node, metadata: {name: a-cordoned}, spec: {unschedulable: true}, "
	    "status: {allocatable: {cpu: 4, pods: 5}, conditions: [{type: Ready, status: "
	    "'True'}]}}\n---\n"
	    "{kind: Node, metadata: {name: b-notready}, status: {allocatable: {cpu: 4, "
	    "pods: 5}, conditions: [{type: Ready, status: 'False'}]}}\n---\n"
	    "{kind: Node, metadata: {name: c-unknown}, status: {allocatable: {cpu: 4, "
	    "pods: 5}, conditions: [{type: Ready, status: Unknown}]}}\n---\n"
	    "{kind: Node, metadata: {name: d-nostatus}, status: {allocatable: {cpu: 4, "
	    "pods: 5}}}\n---\n"
	    "{kind: Node, metadata: {name: e-tainted-already}, spec: {taints: [{key: "
	    "node.kubernetes.io/not-ready, effect: NoSchedule}]}, status: {allocatable: "
	    "{cpu: 4, pods: 5}, conditions: [{type: Ready, status: 'False'}]}}\n---\n"
	    "{kind: Node, metadata: {name: f-ready}, status: {allocatable: {cpu: 4, "
	    "pods: 5}, conditions: [{type: Ready, status: 'True'}]}}\n");
	w_pod(&w, &(struct podspec){ .ns = "ns", .name = "hog", .node = "f-ready",
	    .cpu = "3" });
	/* The default tolerations (NoExecute, 300 s) do not tolerate NoSchedule. */
	w_yaml(&w, "{kind: Pod, metadata: {namespace: ns, name: p}, spec: {tolerations: "
	    "[{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, "
	    "tolerationSeconds: 300}, {key: node.kubernetes.io/unreachable, operator: "
	    "Exists, effect: NoExecute, tolerationSeconds: 300}], containers: [{resources: "
	    "{requests: {cpu: 2}}}]}}");
	w_plan(&w);
	assert_why(w.plan, "p", "0/6 nodes are available: 1 Insufficient cpu, "
	    "1 node(s) were unschedulable, 2 node(s) had untolerated taint "
	    "{node.kubernetes.io/not-ready: }, 2 node(s) had untolerated taint "
	    "{node.kubernetes.io/unreachable: }. preemption: 0/6 nodes are available: "
	    "1 No preemption victims found for incoming pod, 5 Preemption is not helpful "
	    "for scheduling.");
	/* Tolerating the unschedulable taint tolerates a cordon. */
	w_yaml(&w, "{kind: Pod, metadata: {namespace: ns, name: p}, spec: {tolerations: "
	    "[{key: node.kubernetes.io/unschedulable, operator: Exists, effect: "
	    "NoSchedule}], containers: [{resources: {requests: {cpu: 2}}}]}}");
	w_plan(&w);
	ck_assert_str_eq(bound(w.plan, "p"), "a-cordoned");
	/* A pod tolerating everything goes to a NotReady node too. */
	w_yaml(&w, "{kind: Pod, metadata: {namespace: ns, name: p}, spec: {tolerations: "
	    "[{operator: Exists}], containers: [{resources: {requests: {cpu: 2}}}]}}");
	w_plan(&w);
	ck_assert_ptr_nonnull(bound(w.plan, "p"));
	w_done(&w);
}
END_TEST

/* The GPU fixture: the taint keeps plain pods off, the label steers. */
START_TEST(test_gpu_cluster_basics)
{
	struct world w;

	w_init(&w, NULL);
	w_fixture(&w, "gpu-cluster.yaml");
	ck_assert_uint_eq(sched_node_count(w.s), 8);
	w_pod(&w, &(struct podspec){ .name = "plain", .notol = true, .cpu = "1" });
	w_pod(&w, &(struct podspec){ .name = "h100", .gpus = "8", .cpu = "100",
	    .mem = "900Gi", .spec = "\"nodeSelector\": {\"nvidia.com/gpu.product\": "
	    "\"NVIDIA-H100-80GB-HBM3\"}" });
	w_pod(&w, &(struct podspec){ .name = "a100", .gpus = "1",
	    .spec = "\"nodeSelector\": {\"nvidia.com/gpu.product\": \"A100\"}" });
	w_pod(&w, &(struct podspec){ .name = "rdma", .spec =
	    "\"overhead\": {\"rdma/hca_shared_devices_a\": \"1001\"}" });
	w_plan(&w);
	assert_why(w.plan, "plain", "0/8 nodes are available: 8 node(s) had untolerated "
	    "taint {nvidia.com/gpu: present}. preemption: 0/8 nodes are available: "
	    "8 Preemption is not helpful for scheduling.");
	ck_assert_str_eq(bound(w.plan, "h100"), "gpu-a1");
	assert_why(w.plan, "a100", "0/8 nodes are available: 8 node(s) didn't match Pod's "
	    "node affinity/selector. preemption: 0/8 nodes are available: 8 Preemption "
	    "is not helpful for scheduling.");
	assert_why(w.plan, "rdma", "0/8 nodes are available: 8 Insufficient "
	    "rdma/hca_shared_devices_a. preemption: 0/8 nodes are available: 8 "
	    "Preemption is not helpful for scheduling.");
	w_done(&w);
}
END_TEST

/* Bin packing: the fullest node that fits, then the name. */
START_TEST(test_score_bin_packing)
{
	struct world w;

	w_init(&w, NULL);
	w_fixture(&w, "gpu-cluster.yaml");
	w_pod(&w, &(struct podspec){ .name = "used-b3", .node = "gpu-b3", .gpus = "6" });
	w_pod(&w, &(struct podspec){ .name = "used-a2", .node = "gpu-a2", .gpus = "4" });
	w_pod(&w, &(struct podspec){ .name = "two", .gpus = "2" });
	w_pod(&w, &(struct podspec){ .name = "four", .gpus = "4" });
	w_pod(&w, &(struct podspec){ .name = "one", .gpus = "1" });
	w_plan(&w);
	/* Queue order is by name here (same priority and time). */
	ck_assert_str_eq(bound(w.plan, "four"), "gpu-a2");
	ck_assert_str_eq(bound(w.plan, "one"), "gpu-b3");
	ck_assert_str_eq(bound(w.plan, "two"), "gpu-a1");
	w_done(&w);
}
END_TEST

/*
 * Inter-pod affinity
 */

#define ZONE_KEY	"topology.trainyard.dev/ib-zone"
#define AFF(kind, sel, key) "\"affinity\": {\"" kind "\": " \
	"{\"requiredDuringSchedulingIgnoredDuringExecution\": [{\"labelSelector\": " \
	"{\"matchLabels\": {" sel "}}, \"topologyKey\": \"" key "\"}]}}"

START_TEST(test_pod_affinity_zone)
{
	struct world w;

	w_init(&w, NULL);
	w_fixture(&w, "gpu-cluster.yaml");
	w_pod(&w, &(struct podspec){ .name = "leader", .node = "gpu-b2", .gpus = "2",
	    .labels = "\"run\": \"r1\"" });
	/* Follows the leader into its zone, and bin packing within it. */
	w_pod(&w, &(struct podspec){ .name = "w1", .gpus = "8", .labels = "\"run\": \"r1\"",
	    .spec = AFF("podAffinity", "\"run\": \"r1\"", ZONE_KEY) });
	w_pod(&w, &(struct podspec){ .name = "w2", .gpus = "6",
	    .spec = AFF("podAffinity", "\"run\": \"r1\"", ZONE_KEY) });
	/* Affinity to pods that do not exist, not matching itself: nowhere. */
	w_pod(&w, &(struct podspec){ .name = "lost", .gpus = "1",
	    .spec = AFF("podAffinity", "\"run\": \"r2\"", ZONE_KEY) });
	/* The first pod of a series matching itself goes anywhere. */
	w_pod(&w, &(struct podspec){ .name = "self", .gpus = "1", .labels = "\"run\": \"r3\"",
	    .spec = AFF("podAffinity", "\"run\": \"r3\"", ZONE_KEY) });
	/* ... but only where the topology key exists. */
	w_pod(&w, &(struct podspec){ .name = "nokey", .gpus = "1", .labels = "\"run\": \"r4\"",
	    .spec = AFF("podAffinity", "\"run\": \"r4\"", "no/such-key") });
	/* Another namespace does not match unless named. */
	w_pod(&w, &(struct podspec){ .ns = "other", .name = "elsewhere", .gpus = "1",
	    .spec = AFF("podAffinity", "\"run\": \"r1\"", ZONE_KEY) });
	w_plan(&w);
	ck_assert_str_eq(bound(w.plan, "w1"), "gpu-b1");
	ck_assert_str_eq(bound(w.plan, "w2"), "gpu-b3");
	assert_why(w.plan, "lost", "0/8 nodes are available: 8 node(s) didn't match pod "
	    "affinity rules. preemption: 0/8 nodes are available: 8 Preemption is not "
	    "helpful for scheduling.");
	ck_assert_str_eq(bound(w.plan, "self"), "gpu-b2");
	assert_why(w.plan, "nokey", "0/8 nodes are available: 8 node(s) didn't match pod "
	    "affinity rules. preemption: 0/8 nodes are available: 8 Preemption is not "
	    "helpful for scheduling.");
	assert_why(w.plan, "elsewhere", "0/8 nodes are available: 8 node(s) didn't match "
	    "pod affinity rules. preemption: 0/8 nodes are available: 8 Preemption is not "
	    "helpful for scheduling.");
	w_done(&w);
}
END_TEST

START_TEST(test_pod_anti_affinity)
{
	struct world w;

	w_init(&w, NULL);
	w_nodes(&w, 2, SMALL, NULL);
	for (int i = 1; i <= 3; i++) {
		char name[24];

		(void)snprintf(name, sizeof(name), "web%d", i);
		w_pod(&w, &(struct podspec){ .name = name, .labels = "\"app\": \"web\"",
		    .spec = AFF("podAntiAffinity", "\"app\": \"web\"",
		    "kubernetes.io/hostname") });
	}
	w_plan(&w);
	ck_assert_str_eq(bound(w.plan, "web1"), "n1");
	ck_assert_str_eq(bound(w.plan, "web2"), "n2");
	assert_why(w.plan, "web3", "0/2 nodes are available: 2 node(s) didn't match pod "
	    "anti-affinity rules. preemption: 0/2 nodes are available: 2 No preemption "
	    "victims found for incoming pod.");
	w_done(&w);

	/* An existing pod's anti-affinity keeps the matching pods off its node. */
	w_init(&w, NULL);
	w_nodes(&w, 2, SMALL, NULL);
	w_pod(&w, &(struct podspec){ .name = "quiet", .node = "n1",
	    .spec = AFF("podAntiAffinity", "\"app\": \"noisy\"", "kubernetes.io/hostname") });
	w_pod(&w, &(struct podspec){ .name = "full", .node = "n2", .cpu = "4" });
	w_pod(&w, &(struct podspec){ .name = "noisy", .cpu = "1", .labels = "\"app\": \"noisy\"" });
	w_pod(&w, &(struct podspec){ .ns = "ns2", .name = "noisy2", .cpu = "1",
	    .labels = "\"app\": \"noisy\"" });
	w_plan(&w);
	assert_why(w.plan, "noisy", "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) "
	    "didn't satisfy existing pods anti-affinity rules. preemption: 0/2 nodes are "
	    "available: 2 No preemption victims found for incoming pod.");
	/* The term covers its own namespace only. */
	ck_assert_str_eq(bound(w.plan, "noisy2"), "n1");
	w_done(&w);
}
END_TEST

/* namespaces and namespaceSelector in affinity terms. */
START_TEST(test_pod_affinity_namespaces)
{
	struct world w;

	w_init(&w, NULL);
	w_nodes(&w, 2, SMALL, "\"zone\": \"z\"");
	w_yaml(&w, "{kind: Node, metadata: {name: n3, labels: {zone: y}}, status: "
	    "{allocatable: {cpu: 4, pods: 10}, conditions: [{type: Ready, status: 'True'}]}}");
	w_yaml(&w, "{kind: Namespace, metadata: {name: team-a, labels: {team: a}}}");
	w_pod(&w, &(struct podspec){ .ns = "team-a", .name = "db", .node = "n3",
	    .labels = "\"app\": \"db\"" });
	w_pod(&w, &(struct podspec){ .ns = "team-b", .name = "named",
	    .spec = "\"affinity\": {\"podAffinity\": {\"requiredDuringSchedulingIgnored"
	    "DuringExecution\": [{\"labelSelector\": {\"matchLabels\": {\"app\": \"db\"}}, "
	    "\"namespaces\": [\"team-a\"], \"topologyKey\": \"zone\"}]}}" });
	w_pod(&w, &(struct podspec){ .ns = "team-b", .name = "selected",
	    .spec = "\"affinity\": {\"podAffinity\": {\"requiredDuringSchedulingIgnored"
	    "DuringExecution\": [{\"labelSelector\": {\"matchLabels\": {\"app\": \"db\"}}, "
	    "\"namespaceSelector\": {\"matchLabels\": {\"team\": \"a\"}}, "
	    "\"topologyKey\": \"zone\"}]}}" });
	w_pod(&w, &(struct podspec){ .ns = "team-b", .name = "byname",
	    .spec = "\"affinity\": {\"podAffinity\": {\"requiredDuringSchedulingIgnored"
	    "DuringExecution\": [{\"labelSelector\": {\"matchLabels\": {\"app\": \"db\"}}, "
	    "\"namespaceSelector\": {\"matchLabels\": {\"kubernetes.io/metadata.name\": "
	    "\"team-c\"}}, \"topologyKey\": \"zone\"}]}}" });
	w_pod(&w, &(struct podspec){ .ns = "team-c", .name = "db2", .node = "n1",
	    .labels = "\"app\": \"db\"" });
	w_pod(&w, &(struct podspec){ .ns = "team-b", .name = "all",
	    .spec = "\"affinity\": {\"podAntiAffinity\": {\"requiredDuringSchedulingIgnored"
	    "DuringExecution\": [{\"labelSelector\": {\"matchLabels\": {\"app\": \"db\"}}, "
	    "\"namespaceSelector\": {}, \"topologyKey\": \"zone\"}]}}" });
	w_plan(&w);
	ck_assert_str_eq(bound(w.plan, "named"), "n3");
	ck_assert_str_eq(bound(w.plan, "selected"), "n3");
	ck_assert_str_eq(bound(w.plan, "byname"), "n1");
	assert_why(w.plan, "all", "0/3 nodes are available: 3 node(s) didn't match pod "
	    "anti-affinity rules. preemption: 0/3 nodes are available: 3 No preemption "
	    "victims found for incoming pod.");
	w_done(&w);
}
END_TEST

/*
 * Gangs
 */

#define COS	"scheduler-plugins-scheduler"

/* A node like the fixture's, with more spec (a cordon). */
static void
gpu_node(struct world *w, const char *name, const char *zone, const char *spec)
{
	w_yamlf(w, "{\"kind\": \"Node\", \"metadata\": {\"name\": \"%s\", \"labels\": "
	    "{\"kubernetes.io/hostname\": \"%s\", \"" ZONE_KEY "\": \"%s\"}}, "
	    "\"spec\": {%s%s\"taints\": [{\"key\": \"nvidia.com/gpu\", \"value\": "
	    "\"present\", \"effect\": \"NoSchedule\"}]}, \"status\": {\"allocatable\": "
	    "{\"cpu\": \"128\", \"memory\": \"1Ti\", \"pods\": \"110\", "
	    "\"nvidia.com/gpu\": \"8\"}, \"conditions\": [{\"type\": \"Ready\", "
	    "\"status\": \"True\"}]}}", name, name, zone, spec != NULL ? spec : "",
	    spec != NULL ? ", " : "");
}

/* n members "<prefix>-<i>" of PodGroup 'pg', each with 'gpus'. */
static void
gang(struct world *w, const char *pg, int min, int n, const char *gpus, int prio,
    const char *created, const char *spec)
{
	w_podgroup(w, "train", pg, min, created);
	for (int i = 0; i < n; i++) {
		char name[32], labels[64];

		(void)snprintf(name, sizeof(name), "%s-%d", pg, i);
		(void)snprintf(labels, sizeof(labels), "\"run\": \"%s\"", pg);
		w_pod(w, &(struct podspec){ .name = name, .sched = COS, .pg = pg,
		    .gpus = gpus, .prio = prio, .labels = labels, .spec = spec,
		    .created = created });
	}
}

/* The whole gang lands in one InfiniBand zone, the second if the first is short. */
START_TEST(test_gang_one_zone)
{
	struct world w;

	w_init(&w, NULL);
	w_fixture(&w, "gpu-cluster.yaml");
	w_pod(&w, &(struct podspec){ .name = "hog", .node = "gpu-a3", .gpus = "1" });
	gang(&w, "r1", 4, 4, "8", 0, NULL,
	    AFF("podAffinity", "\"run\": \"r1\"", ZONE_KEY));
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nbinds, 4);
	ck_assert_uint_eq(w.plan->nunsched, 0);
	ck_assert_str_eq(bound(w.plan, "r1-0"), "gpu-b1");
	ck_assert_str_eq(bound(w.plan, "r1-1"), "gpu-b2");
	ck_assert_str_eq(bound(w.plan, "r1-2"), "gpu-b3");
	ck_assert_str_eq(bound(w.plan, "r1-3"), "gpu-b4");
	w_done(&w);

	/* Both zones short: nothing binds, and upstream's messages. */
	w_init(&w, NULL);
	w_fixture(&w, "gpu-cluster.yaml");
	w_pod(&w, &(struct podspec){ .name = "hog-a", .node = "gpu-a3", .gpus = "1" });
	w_pod(&w, &(struct podspec){ .name = "hog-b", .node = "gpu-b3", .gpus = "1" });
	gang(&w, "r1", 4, 4, "8", 0, NULL,
	    AFF("podAffinity", "\"run\": \"r1\"", ZONE_KEY));
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nbinds, 0);
	ck_assert_uint_eq(w.plan->nvictims, 0);
	assert_why(w.plan, "r1-3", "0/8 nodes are available: 3 node(s) didn't match pod "
	    "affinity rules, 5 Insufficient nvidia.com/gpu. preemption: 0/8 nodes are "
	    "available: 2 No preemption victims found for incoming pod, 6 Preemption is "
	    "not helpful for scheduling., PodGroup train/r1 gets rejected due to Pod r1-3 "
	    "is unschedulable even after PostFilter");
	for (int i = 0; i < 3; i++) {
		char name[24];

		(void)snprintf(name, sizeof(name), "r1-%d", i);
		assert_why(w.plan, name, "optimistic rejection in PostFilter");
	}
	w_done(&w);

	/* A member already running decides the zone. */
	w_init(&w, NULL);
	w_fixture(&w, "gpu-cluster.yaml");
	gang(&w, "r1", 2, 1, "8", 0, NULL, AFF("podAffinity", "\"run\": \"r1\"", ZONE_KEY));
	w_pod(&w, &(struct podspec){ .name = "r1-9", .sched = COS, .pg = "r1",
	    .node = "gpu-b4", .gpus = "8", .labels = "\"run\": \"r1\"" });
	w_plan(&w);
	ck_assert_str_eq(bound(w.plan, "r1-0"), "gpu-b1");
	w_done(&w);
}
END_TEST

/*
 * The NSML cases: a 10-GPU group on 8 free GPUs must not block a 4-GPU
 * group, and a cordoned node's GPUs are not capacity.
 */
START_TEST(test_gang_does_not_block)
{
	struct world w;

	w_init(&w, NULL);
	w_fixture(&w, "gpu-cluster.yaml");
	gpu_node(&w, "gpu-a1", "ib-a", "\"unschedulable\": true");
	gpu_node(&w, "gpu-a2", "ib-a", "\"unschedulable\": true");
	/* Five nodes full, gpu-b4 free: 8 GPUs free, 16 more on cordoned nodes. */
	w_pod(&w, &(struct podspec){ .name = "hog-a3", .node = "gpu-a3", .gpus = "8" });
	w_pod(&w, &(struct podspec){ .name = "hog-a4", .node = "gpu-a4", .gpus = "8" });
	w_pod(&w, &(struct podspec){ .name = "hog-b1", .node = "gpu-b1", .gpus = "8" });
	w_pod(&w, &(struct podspec){ .name = "hog-b2", .node = "gpu-b2", .gpus = "8" });
	w_pod(&w, &(struct podspec){ .name = "hog-b3", .node = "gpu-b3", .gpus = "8" });
	gang(&w, "big", 10, 10, "1", 0, "2026-01-01T00:00:00Z", NULL);
	gang(&w, "small", 4, 4, "1", 0, "2026-01-01T00:05:00Z", NULL);
	w_plan(&w);
	for (int i = 0; i < 4; i++) {
		char name[24];

		(void)snprintf(name, sizeof(name), "small-%d", i);
		ck_assert_str_eq(bound(w.plan, name), "gpu-b4");
	}
	ck_assert_uint_eq(w.plan->nbinds, 4);
	ck_assert_uint_eq(w.plan->nvictims, 0);
	assert_why(w.plan, "big-8", "0/8 nodes are available: 2 node(s) were unschedulable, "
	    "6 Insufficient nvidia.com/gpu. preemption: 0/8 nodes are available: "
	    "3 Preemption is not helpful for scheduling, 5 No preemption victims found for "
	    "incoming pod., PodGroup train/big gets rejected due to Pod big-8 is "
	    "unschedulable even after PostFilter");
	assert_why(w.plan, "big-9", "0/8 nodes are available: 2 node(s) were unschedulable, "
	    "6 Insufficient nvidia.com/gpu. preemption: 0/8 nodes are available: "
	    "3 Preemption is not helpful for scheduling, 5 No preemption victims found for "
	    "incoming pod., PodGroup train/big gets rejected due to Pod big-9 is "
	    "unschedulable even after PostFilter");
	assert_why(w.plan, "big-0", "optimistic rejection in PostFilter");
	assert_why(w.plan, "big-7", "optimistic rejection in PostFilter");
	/* Uncordoning brings the capacity back; the big group starts once small is placed. */
	w_apply(&w);
	gpu_node(&w, "gpu-a1", "ib-a", NULL);
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nbinds, 10);
	ck_assert_str_eq(bound(w.plan, "big-0"), "gpu-b4");
	ck_assert_str_eq(bound(w.plan, "big-3"), "gpu-b4");
	ck_assert_str_eq(bound(w.plan, "big-4"), "gpu-a1");
	ck_assert_str_eq(bound(w.plan, "big-9"), "gpu-a1");
	w_done(&w);
}
END_TEST

/* The issue's single-pod example, with upstream's preemption verdicts. */
START_TEST(test_message_issue_example)
{
	struct world w;

	w_init(&w, NULL);
	w_fixture(&w, "gpu-cluster.yaml");
	gpu_node(&w, "gpu-a1", "ib-a", "\"unschedulable\": true");
	gpu_node(&w, "gpu-b1", "ib-b", "\"unschedulable\": true");
	w_pod(&w, &(struct podspec){ .name = "hog-a2", .node = "gpu-a2", .gpus = "8" });
	w_pod(&w, &(struct podspec){ .name = "hog-a3", .node = "gpu-a3", .gpus = "4" });
	w_pod(&w, &(struct podspec){ .name = "hog-a4", .node = "gpu-a4", .gpus = "2" });
	w_pod(&w, &(struct podspec){ .name = "hog-b2", .node = "gpu-b2", .gpus = "1" });
	w_pod(&w, &(struct podspec){ .name = "hog-b3", .node = "gpu-b3", .gpus = "8" });
	w_pod(&w, &(struct podspec){ .name = "hog-b4", .node = "gpu-b4", .gpus = "8" });
	w_pod(&w, &(struct podspec){ .name = "p", .gpus = "8" });
	w_plan(&w);
	assert_why(w.plan, "p", "0/8 nodes are available: 2 node(s) were unschedulable, "
	    "6 Insufficient nvidia.com/gpu. preemption: 0/8 nodes are available: "
	    "2 Preemption is not helpful for scheduling, 6 No preemption victims found for "
	    "incoming pod.");
	ck_assert_str_eq(reason(w.plan, "p"), "Unschedulable");
	w_done(&w);
}
END_TEST

/* A gang waits for its PodGroup and for minMember pods. */
START_TEST(test_gang_waits)
{
	struct world w;

	w_init(&w, NULL);
	w_fixture(&w, "gpu-cluster.yaml");
	w_pod(&w, &(struct podspec){ .name = "w0", .sched = COS, .pg = "r1", .gpus = "8" });
	w_pod(&w, &(struct podspec){ .name = "w1", .sched = COS, .pg = "r1", .gpus = "8" });
	w_pod(&w, &(struct podspec){ .name = "huge", .sched = COS, .pg = "r2", .gpus = "9" });
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nbinds, 0);
	assert_why(w.plan, "w0", "0/1 nodes are available: 1 PodGroup not found.");
	assert_why(w.plan, "w1", "0/1 nodes are available: 1 PodGroup not found.");
	assert_why(w.plan, "huge", "0/8 nodes are available: 8 Insufficient "
	    "nvidia.com/gpu. preemption: 0/8 nodes are available: 8 Preemption is not "
	    "helpful for scheduling., can not find pod group");
	/* The PodGroup exists; two of four pods do. */
	w_podgroup(&w, "train", "r1", 4, NULL);
	w_pod(&w, &(struct podspec){ .name = "w2", .sched = COS, .pg = "r1", .gpus = "8",
	    .phase = "Succeeded" });
	w_plan(&w);
	assert_why(w.plan, "w0", "0/8 nodes are available: pre-filter pod w0 cannot find "
	    "enough sibling pods, current pods number: 2, minMember of group: 4. "
	    "preemption: 0/8 nodes are available: 8 Preemption is not helpful for "
	    "scheduling., PodGroup train/r1 gets rejected due to Pod w0 is unschedulable "
	    "even after PostFilter");
	/* Four live pods: all bind at once. */
	w_pod(&w, &(struct podspec){ .name = "w2", .sched = COS, .pg = "r1", .gpus = "8" });
	w_pod(&w, &(struct podspec){ .name = "w3", .sched = COS, .pg = "r1", .gpus = "8",
	    .spec = "\"preemptionPolicy\": \"Never\"" });
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nbinds, 4);
	ck_assert_str_eq(bound(w.plan, "w3"), "gpu-a4");
	w_done(&w);

	/* The older API group and label; minMember counts bound pods too. */
	w_init(&w, NULL);
	w_nodes(&w, 2, SMALL, NULL);
	w_yaml(&w, "{apiVersion: scheduling.sigs.k8s.io/v1alpha1, kind: PodGroup, "
	    "metadata: {namespace: train, name: old}, spec: {minMember: 3}}");
	w_pod(&w, &(struct podspec){ .name = "o0", .sched = COS, .node = "n1",
	    .labels = "\"pod-group.scheduling.sigs.k8s.io\": \"old\"" });
	w_pod(&w, &(struct podspec){ .name = "o1", .sched = COS,
	    .labels = "\"pod-group.scheduling.sigs.k8s.io\": \"old\"" });
	w_pod(&w, &(struct podspec){ .name = "o2", .sched = COS, .gpus = "2",
	    .labels = "\"pod-group.scheduling.sigs.k8s.io\": \"old\"" });
	/* The new label names a PodGroup of the new group, which does not exist. */
	w_pod(&w, &(struct podspec){ .name = "n0", .sched = COS, .pg = "old" });
	/* The default profile has no Coscheduling: a labelled pod goes alone. */
	w_pod(&w, &(struct podspec){ .name = "d0", .pg = "missing", .cpu = "1" });
	w_plan(&w);
	ck_assert_str_eq(bound(w.plan, "o1"), "n1");
	ck_assert_str_eq(bound(w.plan, "o2"), "n1");
	assert_why(w.plan, "n0", "0/1 nodes are available: 1 PodGroup not found.");
	ck_assert_ptr_nonnull(bound(w.plan, "d0"));
	w_done(&w);

	/* ... unless the default profile runs it too. */
	w_init(&w, &(struct sched_opts){ .cosched_default = true });
	w_nodes(&w, 2, SMALL, NULL);
	w_pod(&w, &(struct podspec){ .name = "d0", .pg = "missing", .cpu = "1" });
	w_pod(&w, &(struct podspec){ .name = "d1", .cpu = "9" });
	w_plan(&w);
	assert_why(w.plan, "d0", "0/1 nodes are available: 1 PodGroup not found.");
	assert_why(w.plan, "d1", "0/2 nodes are available: 2 Insufficient cpu. "
	    "preemption: 0/2 nodes are available: 2 Preemption is not helpful for "
	    "scheduling., can not find pod group");
	w_done(&w);
}
END_TEST

/* All or nothing, quorum, and the small-gap rule. */
START_TEST(test_gang_all_or_nothing)
{
	struct world w;

	w_init(&w, NULL);
	w_nodes(&w, 2, SMALL, NULL);
	w_podgroup(&w, "train", "g", 3, NULL);
	for (int i = 0; i < 3; i++) {
		char name[24];

		(void)snprintf(name, sizeof(name), "g-%d", i);
		w_pod(&w, &(struct podspec){ .name = name, .sched = COS, .pg = "g",
		    .gpus = "2", .prio = 5 });
	}
	w_pod(&w, &(struct podspec){ .name = "later", .gpus = "2" });
	w_plan(&w);
	ck_assert_ptr_null(bound(w.plan, "g-0"));
	ck_assert_ptr_null(bound(w.plan, "g-1"));
	ck_assert_str_eq(bound(w.plan, "later"), "n1");
	assert_why(w.plan, "g-2", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. "
	    "preemption: 0/2 nodes are available: 2 Preemption is not helpful for "
	    "scheduling., PodGroup train/g gets rejected due to Pod g-2 is unschedulable "
	    "even after PostFilter");
	assert_why(w.plan, "g-0", "optimistic rejection in PostFilter");
	w_done(&w);

	/* minMember 2 of 3: the two that fit go, the third waits alone. */
	w_init(&w, NULL);
	w_nodes(&w, 2, SMALL, NULL);
	w_podgroup(&w, "train", "g", 2, NULL);
	for (int i = 0; i < 3; i++) {
		char name[24];

		(void)snprintf(name, sizeof(name), "g-%d", i);
		w_pod(&w, &(struct podspec){ .name = name, .sched = COS, .pg = "g",
		    .gpus = "2" });
	}
	w_plan(&w);
	ck_assert_str_eq(bound(w.plan, "g-0"), "n1");
	ck_assert_str_eq(bound(w.plan, "g-1"), "n2");
	assert_why(w.plan, "g-2", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. "
	    "preemption: 0/2 nodes are available: 2 No preemption victims found for "
	    "incoming pod.");
	w_done(&w);

	/* A gap of at most 10%: no rejection, the placed pods keep waiting. */
	w_init(&w, NULL);
	w_nodes(&w, 10, "\"cpu\": \"1\", \"pods\": \"10\"", NULL);
	w_podgroup(&w, "train", "g", 11, NULL);
	for (int i = 0; i < 11; i++) {
		char name[24];

		(void)snprintf(name, sizeof(name), "g-%02d", i);
		w_pod(&w, &(struct podspec){ .name = name, .sched = COS, .pg = "g",
		    .cpu = "1" });
	}
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nbinds, 0);
	ck_assert_uint_eq(w.plan->nunsched, 1);
	assert_why(w.plan, "g-10", "0/10 nodes are available: 10 Insufficient cpu. "
	    "preemption: 0/10 nodes are available: 10 Preemption is not helpful for "
	    "scheduling.");
	w_done(&w);
}
END_TEST

/*
 * Preemption
 */

/* Fills gpu-<z><i> with pods of 'per' GPUs each at 'prio'. */
static void
fill(struct world *w, const char *node, int per, int prio, const char *tag)
{
	for (int used = 0, k = 0; used < 8; used += per, k++) {
		char name[32], gpus[8];

		(void)snprintf(name, sizeof(name), "%s-%s-%d", tag, node, k);
		(void)snprintf(gpus, sizeof(gpus), "%d", per);
		w_pod(w, &(struct podspec){ .name = name, .node = node, .gpus = gpus,
		    .prio = prio });
	}
}

START_TEST(test_preempt_gang)
{
	static const char *const a[] = { "gpu-a1", "gpu-a2", "gpu-a3", "gpu-a4" };
	static const char *const b[] = { "gpu-b1", "gpu-b2", "gpu-b3", "gpu-b4" };
	struct world w;

	w_init(&w, NULL);
	w_fixture(&w, "gpu-cluster.yaml");
	for (int i = 0; i < 4; i++) {
		fill(&w, a[i], 8, 10, "mid");
		fill(&w, b[i], 4, 1, "low");
	}
	gang(&w, "hi", 4, 4, "8", 100, NULL, NULL);
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nbinds, 0);
	ck_assert_uint_eq(w.plan->nvictims, 8);
	for (size_t i = 0; i < w.plan->nvictims; i++) {
		ck_assert_ptr_nonnull(strstr(w.plan->victims[i].name, "low-gpu-b"));
		ck_assert_str_eq(w.plan->victims[i].by_name, "hi-0");
		ck_assert_str_eq(w.plan->victims[i].by_uid, "uid-hi-0");
		ck_assert_str_eq(w.plan->victims[i].scheduler, COS);
		ck_assert_ptr_nonnull(strstr(w.plan->victims[i].node, "gpu-b"));
	}
	for (int i = 0; i < 4; i++) {
		char name[24];

		(void)snprintf(name, sizeof(name), "hi-%d", i);
		ck_assert_str_eq(nominated(w.plan, name), b[i]);
		assert_why(w.plan, name, "0/8 nodes are available: 8 Insufficient "
		    "nvidia.com/gpu.");
	}
	/* The loop evicts; the next round binds where the gang was nominated. */
	w_apply(&w);
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nbinds, 4);
	ck_assert_uint_eq(w.plan->nvictims, 0);
	ck_assert_str_eq(bound(w.plan, "hi-2"), "gpu-b3");
	w_done(&w);

	/* Two members need two nodes: only those nodes' pods go. */
	w_init(&w, NULL);
	w_fixture(&w, "gpu-cluster.yaml");
	for (int i = 0; i < 4; i++) {
		fill(&w, a[i], 8, 10, "mid");
		fill(&w, b[i], 4, 1, "low");
	}
	gang(&w, "hi", 2, 2, "8", 100, NULL, NULL);
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nvictims, 4);
	ck_assert(victim(w.plan, "low-gpu-b1-0"));
	ck_assert(victim(w.plan, "low-gpu-b1-1"));
	ck_assert(victim(w.plan, "low-gpu-b2-0"));
	ck_assert(victim(w.plan, "low-gpu-b2-1"));
	w_done(&w);

	/* Among equals, the big pod goes rather than four small ones. */
	w_init(&w, NULL);
	w_fixture(&w, "gpu-cluster.yaml");
	for (int i = 0; i < 4; i++)
		fill(&w, a[i], 8, 10, "mid");
	for (int i = 1; i < 4; i++)
		fill(&w, b[i], 8, 10, "mid");
	w_pod(&w, &(struct podspec){ .name = "big", .node = "gpu-b1", .gpus = "4", .prio = 1 });
	for (int k = 0; k < 4; k++) {
		char name[24];

		(void)snprintf(name, sizeof(name), "s%d", k);
		w_pod(&w, &(struct podspec){ .name = name, .node = "gpu-b1", .gpus = "1",
		    .prio = 1, .created = "2025-01-01T00:00:00Z" });
	}
	gang(&w, "hi", 1, 1, "4", 100, NULL, NULL);
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nvictims, 1);
	ck_assert(victim(w.plan, "big"));
	ck_assert_str_eq(nominated(w.plan, "hi-0"), "gpu-b1");
	w_done(&w);
}
END_TEST

/* The lowest priority level first; never equal or higher priority. */
START_TEST(test_preempt_levels)
{
	static const char *const a[] = { "gpu-a1", "gpu-a2", "gpu-a3", "gpu-a4" };
	static const char *const b[] = { "gpu-b1", "gpu-b2", "gpu-b3", "gpu-b4" };
	struct world w;

	/* Levels 1 and 5 are both needed; 100 (higher) and 50 (equal) never. */
	w_init(&w, NULL);
	w_fixture(&w, "gpu-cluster.yaml");
	fill(&w, a[0], 8, 100, "top");
	fill(&w, a[1], 8, 50, "same");
	fill(&w, a[2], 8, 5, "five");
	fill(&w, a[3], 8, 5, "five");
	fill(&w, b[0], 8, 1, "one");
	fill(&w, b[1], 8, 5, "five");
	fill(&w, b[2], 8, 100, "top");
	fill(&w, b[3], 8, 50, "same");
	gang(&w, "hi", 2, 2, "8", 50, NULL, NULL);
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nvictims, 2);
	ck_assert(victim(w.plan, "one-gpu-b1-0"));
	ck_assert(victim(w.plan, "five-gpu-a3-0"));
	w_done(&w);

	/* Evicting every lower pod would not be enough: nothing goes. */
	w_init(&w, NULL);
	w_fixture(&w, "gpu-cluster.yaml");
	for (int i = 0; i < 4; i++) {
		fill(&w, a[i], 8, 100, "top");
		fill(&w, b[i], 8, 1, "low");
	}
	gang(&w, "hi", 5, 5, "8", 50, NULL, NULL);
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nvictims, 0);
	ck_assert_uint_eq(w.plan->nnoms, 0);
	assert_why(w.plan, "hi-0", "0/8 nodes are available: 8 Insufficient nvidia.com/gpu. "
	    "preemption: 0/8 nodes are available: 4 No preemption victims found for "
	    "incoming pod, 4 Preemption is not helpful for scheduling., PodGroup train/hi "
	    "gets rejected due to Pod hi-0 is unschedulable even after PostFilter");
	w_done(&w);

	/* Equal priority is never preempted, gang or single. */
	w_init(&w, NULL);
	w_fixture(&w, "gpu-cluster.yaml");
	for (int i = 0; i < 4; i++) {
		fill(&w, a[i], 8, 7, "eq");
		fill(&w, b[i], 8, 7, "eq");
	}
	gang(&w, "g", 2, 2, "8", 7, NULL, NULL);
	w_pod(&w, &(struct podspec){ .name = "single", .gpus = "1", .prio = 7 });
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nvictims, 0);
	assert_why(w.plan, "single", "0/8 nodes are available: 8 Insufficient "
	    "nvidia.com/gpu. preemption: 0/8 nodes are available: 8 No preemption "
	    "victims found for incoming pod.");
	/* One more priority point and it may. */
	w_pod(&w, &(struct podspec){ .name = "single", .gpus = "1", .prio = 8 });
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nvictims, 1);
	ck_assert(victim(w.plan, "eq-gpu-a1-0"));
	ck_assert_str_eq(nominated(w.plan, "single"), "gpu-a1");
	w_done(&w);
}
END_TEST

/* A single pod: DefaultPreemption's choice of node and victims. */
START_TEST(test_preempt_single)
{
	struct world w;

	w_init(&w, NULL);
	w_nodes(&w, 3, SMALL, NULL);
	w_pod(&w, &(struct podspec){ .name = "n1-five", .node = "n1", .gpus = "2", .prio = 5 });
	w_pod(&w, &(struct podspec){ .name = "n2-one-a", .node = "n2", .gpus = "1", .prio = 1 });
	w_pod(&w, &(struct podspec){ .name = "n2-one-b", .node = "n2", .gpus = "1", .prio = 1 });
	w_pod(&w, &(struct podspec){ .name = "n3-one", .node = "n3", .gpus = "1", .prio = 1 });
	w_pod(&w, &(struct podspec){ .name = "n3-two", .node = "n3", .gpus = "1", .prio = 2 });
	w_pod(&w, &(struct podspec){ .name = "p", .gpus = "2", .prio = 10 });
	w_plan(&w);
	/* n2: highest victim priority 1 (n1: 5, n3: 2). */
	ck_assert_str_eq(nominated(w.plan, "p"), "n2");
	ck_assert_uint_eq(w.plan->nvictims, 2);
	ck_assert(victim(w.plan, "n2-one-a"));
	ck_assert(victim(w.plan, "n2-one-b"));
	ck_assert_str_eq(w.plan->victims[0].by_name, "p");
	ck_assert_str_eq(w.plan->victims[0].scheduler, "default-scheduler");
	assert_why(w.plan, "p", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.");
	w_apply(&w);
	w_plan(&w);
	ck_assert_str_eq(bound(w.plan, "p"), "n2");
	w_done(&w);

	/* Reprieve: only as many as needed, the most important kept. */
	w_init(&w, NULL);
	w_nodes(&w, 1, SMALL, NULL);
	w_pod(&w, &(struct podspec){ .name = "old", .node = "n1", .gpus = "1", .prio = 1,
	    .status = "\"startTime\": \"2025-01-01T00:00:00Z\"" });
	w_pod(&w, &(struct podspec){ .name = "new", .node = "n1", .gpus = "1", .prio = 1,
	    .status = "\"startTime\": \"2025-06-01T00:00:00Z\"" });
	w_pod(&w, &(struct podspec){ .name = "p", .gpus = "1", .prio = 10 });
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nvictims, 1);
	ck_assert(victim(w.plan, "new"));
	w_done(&w);

	/* preemptionPolicy Never. */
	w_init(&w, NULL);
	w_nodes(&w, 1, SMALL, NULL);
	w_pod(&w, &(struct podspec){ .name = "low", .node = "n1", .gpus = "2", .prio = 1 });
	w_pod(&w, &(struct podspec){ .name = "p", .gpus = "1", .prio = 10,
	    .spec = "\"preemptionPolicy\": \"Never\"" });
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nvictims, 0);
	assert_why(w.plan, "p", "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. "
	    "preemption: not eligible due to preemptionPolicy=Never.");
	w_done(&w);
}
END_TEST

/* While victims terminate, no new preemption, and the space is held. */
START_TEST(test_preempt_nominated)
{
	struct world w;

	w_init(&w, NULL);
	w_nodes(&w, 1, SMALL, NULL);
	w_pod(&w, &(struct podspec){ .name = "victim", .node = "n1", .gpus = "1", .prio = 1,
	    .meta = "\"deletionTimestamp\": \"2026-01-01T00:01:00Z\"",
	    .status = "\"conditions\": [{\"type\": \"DisruptionTarget\", \"status\": "
	    "\"True\", \"reason\": \"PreemptionByScheduler\"}]" });
	w_pod(&w, &(struct podspec){ .name = "other", .node = "n1", .gpus = "0", .prio = 1 });
	w_pod(&w, &(struct podspec){ .name = "hi", .gpus = "2", .prio = 10,
	    .status = "\"nominatedNodeName\": \"n1\"" });
	w_pod(&w, &(struct podspec){ .name = "lo", .gpus = "1", .prio = 0 });
	w_pod(&w, &(struct podspec){ .name = "eq", .gpus = "1", .prio = 10,
	    .created = "2026-02-01T00:00:00Z" });
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nvictims, 0);
	ck_assert_ptr_null(nominated(w.plan, "hi"));
	assert_why(w.plan, "hi", "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. "
	    "preemption: not eligible due to a terminating pod on the nominated node.");
	/* The free GPU is held for the nominated pod. */
	ck_assert_ptr_null(bound(w.plan, "lo"));
	ck_assert_ptr_null(bound(w.plan, "eq"));
	assert_why(w.plan, "lo", "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. "
	    "preemption: 0/1 nodes are available: 1 No preemption victims found for "
	    "incoming pod.");
	/* The victim gone, the nominated pod binds. */
	ck_assert(sched_pod_remove(w.s, "train", "victim"));
	w_plan(&w);
	ck_assert_str_eq(bound(w.plan, "hi"), "n1");
	w_done(&w);

	/* A failed pod loses its nomination; a preemptor clears lower ones. */
	w_init(&w, NULL);
	w_nodes(&w, 1, SMALL, NULL);
	w_pod(&w, &(struct podspec){ .name = "low", .node = "n1", .gpus = "2", .prio = 1 });
	w_pod(&w, &(struct podspec){ .name = "nom-lo", .gpus = "2", .prio = 2,
	    .status = "\"nominatedNodeName\": \"n1\"" });
	w_pod(&w, &(struct podspec){ .name = "hi", .gpus = "2", .prio = 10 });
	w_plan(&w);
	ck_assert_str_eq(nominated(w.plan, "hi"), "n1");
	ck_assert_str_eq(nominated(w.plan, "nom-lo"), "");
	ck_assert(victim(w.plan, "low"));
	w_done(&w);
}
END_TEST

/*
 * PodGroup status
 */

#define NOW	1767225600	/* 2026-01-01T00:00:00Z */

static const struct {
	const char	*pg;		/* status and spec */
	const char	*pods;		/* YAML list of pods */
	const char	*want;		/* the status */
	bool		 changed;
} pgcases[] = {
	{ "{spec: {minMember: 2}}", "[]", "{phase: Pending}", true },
	{ "{spec: {minMember: 2}}",
	  "[{metadata: {name: b, ownerReferences: [{name: job-z}, {name: job-a}]}},"
	  " {metadata: {name: a, ownerReferences: [{name: j}]}}]",
	  "{phase: PreScheduling, occupiedBy: train/j}", true },
	{ "{spec: {minMember: 2}}",
	  "[{metadata: {name: a, ownerReferences: [{name: job-z}, {name: job-a}]}},"
	  " {metadata: {name: b}}]",
	  "{phase: PreScheduling, occupiedBy: 'train/job-a,train/job-z'}", true },
	{ "{spec: {minMember: 3}, status: {phase: Pending}}",
	  "[{metadata: {name: a}}, {metadata: {name: b}}]", "{phase: Pending}", false },
	{ "{spec: {minMember: 2}, status: {phase: PreScheduling}}",
	  "[{metadata: {name: a}, spec: {nodeName: n1}, status: {phase: Pending}},"
	  " {metadata: {name: b}}]",
	  "{phase: Scheduling, scheduled: 1, scheduleStartTime: '2026-01-01T00:00:00Z'}",
	  true },
	{ "{spec: {minMember: 2}, status: {phase: PreScheduling}}",
	  "[{metadata: {name: a}, spec: {nodeName: n1}}, {metadata: {name: b}, spec: "
	  "{nodeName: n2}}]",
	  "{phase: Scheduled, scheduled: 2, scheduleStartTime: '2026-01-01T00:00:00Z'}",
	  true },
	{ "{spec: {minMember: 2}, status: {phase: Scheduling, scheduled: 1, "
	  "scheduleStartTime: '2025-12-31T23:00:00Z'}}",
	  "[{metadata: {name: a}, spec: {nodeName: n1}, status: {phase: Running}},"
	  " {metadata: {name: b}, spec: {nodeName: n2}, status: {phase: Running}}]",
	  "{phase: Running, scheduled: 2, running: 2, scheduleStartTime: "
	  "'2025-12-31T23:00:00Z'}", true },
	{ "{spec: {minMember: 2}, status: {phase: Running, scheduled: 2, running: 2}}",
	  "[{metadata: {name: a}, spec: {nodeName: n1}, status: {phase: Succeeded}},"
	  " {metadata: {name: b}, spec: {nodeName: n2}, status: {phase: Succeeded}}]",
	  "{phase: Finished, scheduled: 2, succeeded: 2}", true },
	{ "{spec: {minMember: 2}, status: {phase: Running, scheduled: 2, running: 2}}",
	  "[{metadata: {name: a}, spec: {nodeName: n1}, status: {phase: Failed}},"
	  " {metadata: {name: b}, spec: {nodeName: n2}, status: {phase: Running}}]",
	  "{phase: Failed, scheduled: 2, running: 1, failed: 1}", true },
	{ "{spec: {minMember: 2}, status: {phase: Running, scheduled: 2, running: 2}}",
	  "[{metadata: {name: a}, spec: {nodeName: n1}, status: {phase: Running}},"
	  " {metadata: {name: b}, spec: {nodeName: n2}, status: {phase: Running}}]",
	  "{phase: Running, scheduled: 2, running: 2}", false },
	{ "{spec: {minMember: 2}, status: {phase: Finished, scheduled: 2, succeeded: 2}}",
	  "[]", "{phase: Finished, scheduled: 2, succeeded: 2}", false },
	{ "{spec: {minMember: 2}, status: {phase: Running, scheduled: 2, running: 2}}",
	  "[]", "{phase: Pending, scheduled: 2}", true },
	{ "{spec: {minMember: 0}}", "[]", "{phase: Pending}", true },
	{ "{spec: {minMember: 2}, status: {phase: Scheduling, scheduled: 2}}",
	  "[{metadata: {name: a}, spec: {nodeName: n1}}, {metadata: {name: b}, spec: "
	  "{nodeName: n2}}]", "{phase: Scheduled, scheduled: 2}", true },
	/* Bound pods before the controller ran at all. */
	{ "{spec: {minMember: 1}}",
	  "[{metadata: {name: a}, spec: {nodeName: n1}, status: {phase: Running}}]",
	  "{phase: Running, scheduled: 1, running: 1, scheduleStartTime: "
	  "'2026-01-01T00:00:00Z'}", true },
};

/* Today's controller (scheduling.x-k8s.io): no PostBind, no status.scheduled. */
static const struct {
	const char	*pg;
	const char	*pods;
	const char	*want;
	bool		 changed;
} pgnow[] = {
	{ "{spec: {minMember: 2}}", "[]", "{phase: Pending}", true },
	{ "{spec: {minMember: 2}}",
	  "[{metadata: {name: b, ownerReferences: [{name: job-z}]}},"
	  " {metadata: {name: a, ownerReferences: [{name: j}]}}]",
	  "{phase: Scheduling, occupiedBy: train/j, scheduleStartTime: "
	  "'2026-01-01T00:00:00Z'}", true },
	{ "{spec: {minMember: 3}, status: {phase: Pending}}",
	  "[{metadata: {name: a}}, {metadata: {name: b}}]", "{phase: Pending}", false },
	{ "{spec: {minMember: 2}, status: {phase: Scheduling, scheduleStartTime: "
	  "'2025-12-31T23:00:00Z'}}",
	  "[{metadata: {name: a}, spec: {nodeName: n1}, status: {phase: Pending}},"
	  " {metadata: {name: b}, spec: {nodeName: n2}, status: {phase: Pending}}]",
	  "{phase: Scheduling, scheduleStartTime: '2025-12-31T23:00:00Z'}", false },
	{ "{spec: {minMember: 2}, status: {phase: Scheduling, scheduleStartTime: "
	  "'2025-12-31T23:00:00Z'}}",
	  "[{metadata: {name: a}, spec: {nodeName: n1}, status: {phase: Running}},"
	  " {metadata: {name: b}, spec: {nodeName: n2}, status: {phase: Succeeded}}]",
	  "{phase: Running, running: 1, succeeded: 1, scheduleStartTime: "
	  "'2025-12-31T23:00:00Z'}", true },
	{ "{spec: {minMember: 2}, status: {phase: Running, running: 2}}",
	  "[{metadata: {name: a}, status: {phase: Failed}},"
	  " {metadata: {name: b}, status: {phase: Running}}]",
	  "{phase: Failed, running: 1, failed: 1}", true },
	{ "{spec: {minMember: 2}, status: {phase: Running, running: 2}}",
	  "[{metadata: {name: a}, status: {phase: Succeeded}},"
	  " {metadata: {name: b}, status: {phase: Succeeded}}]",
	  "{phase: Finished, succeeded: 2}", true },
	{ "{spec: {minMember: 2}, status: {phase: Running, running: 2}}",
	  "[{metadata: {name: a}, status: {phase: Running}}]",
	  "{phase: Pending, running: 1}", true },
	{ "{spec: {minMember: 2}, status: {phase: Finished, succeeded: 2}}", "[]",
	  "{phase: Finished, succeeded: 2}", false },
};

START_TEST(test_podgroup_status_now)
{
	struct json_object *pg = json(pgnow[_i].pg), *pods = json(pgnow[_i].pods);
	struct json_object *want = json(pgnow[_i].want), *got = NULL, **pv;
	struct kc_status st = { 0 };
	size_t n = json_object_array_length(pods);
	bool changed = !pgnow[_i].changed;
	char *a, *b;

	ck_assert_int_eq(kc_json_set_str(pg, "apiVersion", SCHED_PG_GROUP "/v1alpha1"), 0);
	ck_assert_int_eq(kc_json_put(pg, "metadata",
	    json("{namespace: train, name: g}")), 0);
	pv = kc_calloc(n + 1, sizeof(*pv));
	ck_assert_ptr_nonnull(pv);
	for (size_t i = 0; i < n; i++)
		pv[i] = json_object_array_get_idx(pods, i);
	ck_assert_msg(sched_podgroup_status(pg, pv, n, NOW, &got, &changed, &st) == 0,
	    "%s", st.message);
	a = kc_json_dump(got, NULL);
	b = kc_json_dump(want, NULL);
	ck_assert_msg(kc_json_equal(got, want), "case %d: got %s want %s", _i, a, b);
	ck_assert_int_eq(changed, pgnow[_i].changed);
	kc_free(a);
	kc_free(b);
	kc_free(pv);
	json_object_put(got);
	json_object_put(pg);
	json_object_put(pods);
	json_object_put(want);
}
END_TEST

START_TEST(test_podgroup_status)
{
	struct json_object *pg = json(pgcases[_i].pg), *pods = json(pgcases[_i].pods);
	struct json_object *want = json(pgcases[_i].want), *got = NULL, **pv;
	struct kc_status st = { 0 };
	size_t n = json_object_array_length(pods);
	bool changed = !pgcases[_i].changed;
	char *a, *b;

	/* The older releases' controller and PostBind (scheduling.sigs.k8s.io). */
	ck_assert_int_eq(kc_json_set_str(pg, "apiVersion", SCHED_PG_GROUP_OLD "/v1alpha1"),
	    0);
	ck_assert_int_eq(kc_json_put(pg, "metadata",
	    json("{namespace: train, name: g}")), 0);
	pv = kc_calloc(n + 1, sizeof(*pv));
	ck_assert_ptr_nonnull(pv);
	for (size_t i = 0; i < n; i++)
		pv[i] = json_object_array_get_idx(pods, i);
	ck_assert_msg(sched_podgroup_status(pg, pv, n, NOW, &got, &changed, &st) == 0,
	    "%s", st.message);
	a = kc_json_dump(got, NULL);
	b = kc_json_dump(want, NULL);
	ck_assert_msg(kc_json_equal(got, want), "case %d: got %s want %s", _i, a, b);
	ck_assert_int_eq(changed, pgcases[_i].changed);
	kc_free(a);
	kc_free(b);
	kc_free(pv);
	json_object_put(got);
	json_object_put(pg);
	json_object_put(pods);
	json_object_put(want);
}
END_TEST

START_TEST(test_podgroup_status_of)
{
	struct world w;
	struct json_object *pg, *got = NULL;
	struct kc_status st = { 0 };
	bool changed = false;

	w_init(&w, NULL);
	w_nodes(&w, 2, SMALL, NULL);
	w_pod(&w, &(struct podspec){ .name = "a", .pg = "g", .node = "n1" });
	w_pod(&w, &(struct podspec){ .name = "b", .pg = "g", .node = "n2" });
	w_pod(&w, &(struct podspec){ .name = "c", .pg = "other" });
	w_pod(&w, &(struct podspec){ .ns = "elsewhere", .name = "d", .pg = "g" });
	w_pod(&w, &(struct podspec){ .name = "e",
	    .labels = "\"pod-group.scheduling.sigs.k8s.io\": \"g\"" });
	pg = json("{apiVersion: scheduling.x-k8s.io/v1alpha1, kind: PodGroup, metadata: "
	    "{namespace: train, name: g}, spec: {minMember: 2}, status: {phase: "
	    "PreScheduling}}");
	ck_assert_int_eq(sched_podgroup_status_of(w.s, pg, NOW, &got, &changed, &st), 0);
	ck_assert_str_eq(kc_json_str(got, "phase"), "Running");
	ck_assert_ptr_null(kc_json_get(got, "scheduled"));
	ck_assert_int_eq(kc_json_int(got, 0, "running"), 2);
	ck_assert(changed);
	json_object_put(got);
	json_object_put(pg);
	/* The older group counts the older label. */
	pg = json("{apiVersion: scheduling.sigs.k8s.io/v1alpha1, kind: PodGroup, metadata: "
	    "{namespace: train, name: g}, spec: {minMember: 1}}");
	ck_assert_int_eq(sched_podgroup_status_of(w.s, pg, NOW, &got, NULL, &st), 0);
	ck_assert_str_eq(kc_json_str(got, "phase"), "PreScheduling");
	json_object_put(got);
	json_object_put(pg);
	pg = json("{spec: {minMember: 1}}");
	ck_assert_int_eq(sched_podgroup_status_of(w.s, pg, NOW, &got, NULL, &st),
	    KC_EINVALID);
	ck_assert_int_eq(sched_podgroup_status(pg, NULL, 0, NOW, &got, NULL, &st),
	    KC_EINVALID);
	json_object_put(pg);
	w_done(&w);
}
END_TEST

/* The batch forms agree with sched_podgroup_status_of(), one group at a time. */
START_TEST(test_podgroup_statuses_batch)
{
	struct world w;
	struct json_object *pgs[4], *got[4], *one = NULL;
	struct kc_status st = { 0 };
	bool changed[4], one_changed = false;
	int64_t bound[4];
	int r;

	w_init(&w, NULL);
	w_nodes(&w, 2, SMALL, NULL);
	w_pod(&w, &(struct podspec){ .name = "a", .pg = "g", .node = "n1" });
	w_pod(&w, &(struct podspec){ .name = "b", .pg = "g", .node = "n2" });
	w_pod(&w, &(struct podspec){ .name = "c", .pg = "other" });
	w_pod(&w, &(struct podspec){ .ns = "elsewhere", .name = "d", .pg = "g" });
	w_pod(&w, &(struct podspec){ .name = "e",
	    .labels = "\"pod-group.scheduling.sigs.k8s.io\": \"g\"" });
	pgs[0] = json("{apiVersion: scheduling.x-k8s.io/v1alpha1, kind: PodGroup, metadata: "
	    "{namespace: train, name: g}, spec: {minMember: 2}, status: {phase: "
	    "PreScheduling}}");
	pgs[1] = json("{apiVersion: scheduling.sigs.k8s.io/v1alpha1, kind: PodGroup, "
	    "metadata: {namespace: train, name: g}, spec: {minMember: 1}}");
	pgs[2] = json("{spec: {minMember: 1}}");
	pgs[3] = json("{apiVersion: scheduling.x-k8s.io/v1alpha1, kind: PodGroup, metadata: "
	    "{namespace: train, name: other}, spec: {minMember: 3}}");
	ck_assert_int_eq(sched_podgroup_statuses_of(w.s, pgs, 4, NOW, got, changed), 0);
	for (int i = 0; i < 4; i++) {
		if (i == 2) {
			ck_assert_ptr_null(got[i]);
			ck_assert(!changed[i]);
			continue;
		}
		ck_assert_int_eq(sched_podgroup_status_of(w.s, pgs[i], NOW, &one, &one_changed,
		    &st), 0);
		ck_assert_msg(kc_json_equal(got[i], one), "group %d differs", i);
		ck_assert_int_eq(changed[i], one_changed);
		json_object_put(one);
		json_object_put(got[i]);
	}
	ck_assert_int_eq(sched_podgroups_bound(w.s, pgs, 4, bound), 0);
	ck_assert_int_eq(bound[0], 2);
	ck_assert_int_eq(bound[1], 0);
	ck_assert_int_eq(bound[2], 0);
	ck_assert_int_eq(bound[3], 0);
	ck_assert_int_eq(sched_podgroup_statuses_of(w.s, pgs, 0, NOW, got, changed), 0);
	ck_assert_int_eq(sched_podgroups_bound(w.s, pgs, 0, bound), 0);
	/* Allocation failures: -ENOMEM and nothing left behind. */
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = sched_podgroup_statuses_of(w.s, pgs, 4, NOW, got, changed);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		for (int i = 0; i < 4; i++)
			ck_assert_ptr_null(got[i]);
	}
	for (int i = 0; i < 4; i++)
		if (got[i] != NULL)
			json_object_put(got[i]);
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = sched_podgroups_bound(w.s, pgs, 4, bound);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
	}
	ck_assert_int_eq(bound[0], 2);
	for (int i = 0; i < 4; i++)
		json_object_put(pgs[i]);
	w_done(&w);
}
END_TEST

/*
 * Robustness
 */

START_TEST(test_broken_pods)
{
	struct world w;

	w_init(&w, NULL);
	w_nodes(&w, 2, SMALL, NULL);
	w_pod(&w, &(struct podspec){ .name = "qty", .gpus = "banana" });
	w_pod(&w, &(struct podspec){ .name = "sel", .spec = "\"affinity\": {\"podAffinity\": "
	    "{\"requiredDuringSchedulingIgnoredDuringExecution\": [{\"labelSelector\": "
	    "{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Foo\"}]}, "
	    "\"topologyKey\": \"zone\"}]}}" });
	/* A bound pod that cannot be read uses nothing. */
	w_pod(&w, &(struct podspec){ .name = "bound", .node = "n1", .gpus = "lots" });
	w_pod(&w, &(struct podspec){ .name = "ok", .gpus = "2" });
	/* A gang with a broken member cannot reach its quorum. */
	w_podgroup(&w, "train", "g", 2, NULL);
	w_pod(&w, &(struct podspec){ .name = "g-0", .sched = COS, .pg = "g", .gpus = "1" });
	w_pod(&w, &(struct podspec){ .name = "g-1", .sched = COS, .pg = "g", .gpus = "1x" });
	w_plan(&w);
	ck_assert_str_eq(reason(w.plan, "qty"), "SchedulerError");
	assert_why(w.plan, "qty", "spec.containers[0].resources.requests[nvidia.com/gpu]: "
	    "Invalid value: \"banana\": quantities must match the regular expression "
	    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
	ck_assert_str_eq(reason(w.plan, "sel"), "SchedulerError");
	ck_assert_ptr_nonnull(strstr(why(w.plan, "sel"), "spec.affinity.podAffinity."
	    "requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector: "));
	ck_assert_ptr_nonnull(strstr(why(w.plan, "sel"), "Foo"));
	ck_assert_str_eq(bound(w.plan, "ok"), "n1");
	/* A scheduler error runs no PostFilter: its sibling just waits. */
	ck_assert_str_eq(reason(w.plan, "g-1"), "SchedulerError");
	ck_assert_ptr_null(why(w.plan, "g-0"));
	ck_assert_ptr_null(bound(w.plan, "g-0"));
	w_done(&w);
}
END_TEST

START_TEST(test_snapshot_edges)
{
	struct world w;
	struct kc_status st = { 0 };
	struct json_object *o;
	struct sched_plan *plan = NULL;
	char *big;
	size_t len = 0, cap = 64 * 1024;

	w_init(&w, NULL);
	/* No nodes. */
	w_pod(&w, &(struct podspec){ .name = "p", .status = "\"nominatedNodeName\": \"gone\"" });
	w_pod(&w, &(struct podspec){ .name = "q", .gpus = "x" });
	w_plan(&w);
	assert_why(w.plan, "p", "no nodes available to schedule pods");
	ck_assert_str_eq(nominated(w.plan, "p"), "");
	ck_assert_str_eq(reason(w.plan, "q"), "SchedulerError");
	/* Not ours: other schedulers, gated, being deleted, bound, done. */
	w_nodes(&w, 1, SMALL, NULL);
	ck_assert(sched_pod_remove(w.s, "train", "q"));
	w_pod(&w, &(struct podspec){ .name = "other", .sched = "volcano" });
	w_pod(&w, &(struct podspec){ .name = "gated", .spec = "\"schedulingGates\": "
	    "[{\"name\": \"wait\"}]" });
	w_pod(&w, &(struct podspec){ .name = "dying",
	    .meta = "\"deletionTimestamp\": \"2026-01-01T00:00:00Z\"" });
	w_pod(&w, &(struct podspec){ .name = "done", .phase = "Succeeded" });
	w_pod(&w, &(struct podspec){ .name = "lost", .node = "no-such-node", .cpu = "100" });
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nbinds, 1);
	ck_assert_str_eq(bound(w.plan, "p"), "n1");
	ck_assert_uint_eq(w.plan->nunsched, 0);
	ck_assert_uint_eq(sched_pod_count(w.s), 6);
	/* Removals. */
	ck_assert(sched_node_remove(w.s, "n1"));
	ck_assert(!sched_node_remove(w.s, "n1"));
	ck_assert(sched_pod_remove(w.s, "train", "other"));
	ck_assert(!sched_pod_remove(w.s, "train", "other"));
	w_podgroup(&w, "train", "g", 1, NULL);
	ck_assert(sched_podgroup_remove(w.s, SCHED_PG_GROUP, "train", "g"));
	ck_assert(!sched_podgroup_remove(w.s, SCHED_PG_GROUP_OLD, "train", "g"));
	w_yaml(&w, "{kind: Namespace, metadata: {name: ns1, labels: {a: b}}}");
	w_yaml(&w, "{kind: Namespace, metadata: {name: ns1}}");
	ck_assert(sched_namespace_remove(w.s, "ns1"));
	ck_assert(!sched_namespace_remove(w.s, "ns1"));
	/* Put errors leave the snapshot as it was. */
	o = json("{kind: Node, metadata: {}}");
	ck_assert_int_eq(sched_node_put(w.s, o, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "node has no metadata.name");
	json_object_put(o);
	o = json("{kind: Node, metadata: {name: bad}, status: {allocatable: {cpu: 1e}}}");
	ck_assert_int_eq(sched_node_put(w.s, o, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "status.allocatable[cpu]: Invalid value: \"1e\": "
	    "unable to parse quantity's suffix");
	json_object_put(o);
	ck_assert_uint_eq(sched_node_count(w.s), 0);
	o = json("{kind: Pod, metadata: {name: x}}");
	ck_assert_int_eq(sched_pod_put(w.s, o, &st), KC_EINVALID);
	json_object_put(o);
	o = json("{apiVersion: v1, kind: PodGroup, metadata: {namespace: a, name: x}}");
	ck_assert_int_eq(sched_podgroup_put(w.s, o, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "not a PodGroup apiVersion: v1");
	json_object_put(o);
	o = json("{apiVersion: scheduling.x-k8s.io/v1alpha1, kind: PodGroup, metadata: {}}");
	ck_assert_int_eq(sched_podgroup_put(w.s, o, &st), KC_EINVALID);
	json_object_put(o);
	o = json("{kind: Namespace}");
	ck_assert_int_eq(sched_namespace_put(w.s, o, &st), KC_EINVALID);
	json_object_put(o);
	/* Too many distinct resource names. */
	big = kc_malloc(cap);
	ck_assert_ptr_nonnull(big);
	len += (size_t)snprintf(big + len, cap - len,
	    "{\"kind\": \"Node\", \"metadata\": {\"name\": \"many\"}, \"status\": "
	    "{\"allocatable\": {\"cpu\": \"1\"");
	for (int i = 0; i < SCHED_RESOURCES_MAX + 10; i++)
		len += (size_t)snprintf(big + len, cap - len, ", \"x.io/r%d\": \"1\"", i);
	(void)snprintf(big + len, cap - len, "}}}");
	o = json(big);
	ck_assert_int_eq(sched_node_put(w.s, o, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "more than 256 distinct resource names");
	ck_assert_uint_eq(sched_node_count(w.s), 0);
	json_object_put(o);
	o = json("{kind: Pod, metadata: {namespace: a, name: b}, spec: {containers: "
	    "[{resources: {requests: {y.io/new: 1}}}]}}");
	ck_assert_int_eq(sched_pod_put(w.s, o, &st), KC_EINVALID);
	json_object_put(o);
	kc_free(big);
	/* A plan of nothing. */
	ck_assert_int_eq(sched_plan(w.s, &plan), 0);
	plan = sched_plan_free(plan);
	ck_assert_ptr_null(sched_plan_free(NULL));
	ck_assert_ptr_null(sched_free(NULL));
	w_done(&w);
}
END_TEST

/* A node put again replaces the old one. */
START_TEST(test_node_replace)
{
	struct world w;

	w_init(&w, NULL);
	w_nodes(&w, 1, "\"cpu\": \"1\", \"pods\": \"5\"", NULL);
	w_pod(&w, &(struct podspec){ .name = "p", .cpu = "2" });
	w_plan(&w);
	ck_assert_ptr_null(bound(w.plan, "p"));
	w_nodes(&w, 1, "\"cpu\": \"2\", \"pods\": \"5\"", NULL);
	ck_assert_uint_eq(sched_node_count(w.s), 1);
	w_plan(&w);
	ck_assert_str_eq(bound(w.plan, "p"), "n1");
	w_done(&w);
}
END_TEST

/*
 * Determinism, allocation failures, scale
 */

/* A busy scenario as a list of JSON/YAML documents. */
static struct json_object *
busy_docs(void)
{
	struct json_object *docs = json_object_new_array();
	struct world w;

	/* Build through a world, then take its pods and add the rest. */
	w_init(&w, NULL);
	fill(&w, "gpu-a1", 8, 1, "low");
	fill(&w, "gpu-a2", 4, 1, "low");
	fill(&w, "gpu-a3", 8, 1, "low");
	fill(&w, "gpu-a4", 1, 1, "low");
	fill(&w, "gpu-b1", 2, 3, "mid");
	w_pod(&w, &(struct podspec){ .name = "solo", .gpus = "3", .prio = 2 });
	w_pod(&w, &(struct podspec){ .name = "spread1", .labels = "\"app\": \"s\"",
	    .spec = AFF("podAntiAffinity", "\"app\": \"s\"", ZONE_KEY) });
	w_pod(&w, &(struct podspec){ .name = "spread2", .labels = "\"app\": \"s\"",
	    .spec = AFF("podAntiAffinity", "\"app\": \"s\"", ZONE_KEY) });
	w_pod(&w, &(struct podspec){ .name = "spread3", .labels = "\"app\": \"s\"",
	    .spec = AFF("podAntiAffinity", "\"app\": \"s\"", ZONE_KEY) });
	gang(&w, "zoned", 3, 3, "8", 20, NULL, AFF("podAffinity", "\"run\": \"zoned\"",
	    ZONE_KEY));
	gang(&w, "toobig", 9, 9, "8", 30, NULL, NULL);
	gang(&w, "waits", 5, 2, "1", 0, NULL, NULL);
	w_pod(&w, &(struct podspec){ .name = "nom", .gpus = "8", .prio = 10,
	    .status = "\"nominatedNodeName\": \"gpu-b4\"" });
	w_pod(&w, &(struct podspec){ .name = "sel", .gpus = "1",
	    .spec = "\"nodeSelector\": {\"" ZONE_KEY "\": \"ib-b\"}" });
	for (size_t i = 0; i < json_object_array_length(w.pods); i++)
		ck_assert_int_eq(json_object_array_add(docs,
		    json_object_get(json_object_array_get_idx(w.pods, i))), 0);
	w_done(&w);
	return docs;
}

static void
plans_equal(const struct sched_plan *a, const struct sched_plan *b)
{
	ck_assert_uint_eq(a->nbinds, b->nbinds);
	ck_assert_uint_eq(a->nnoms, b->nnoms);
	ck_assert_uint_eq(a->nvictims, b->nvictims);
	ck_assert_uint_eq(a->nunsched, b->nunsched);
	for (size_t i = 0; i < a->nbinds; i++) {
		ck_assert_str_eq(a->binds[i].name, b->binds[i].name);
		ck_assert_str_eq(a->binds[i].node, b->binds[i].node);
	}
	for (size_t i = 0; i < a->nnoms; i++) {
		ck_assert_str_eq(a->noms[i].name, b->noms[i].name);
		ck_assert_str_eq(a->noms[i].node != NULL ? a->noms[i].node : "",
		    b->noms[i].node != NULL ? b->noms[i].node : "");
	}
	for (size_t i = 0; i < a->nvictims; i++) {
		ck_assert_str_eq(a->victims[i].name, b->victims[i].name);
		ck_assert_str_eq(a->victims[i].node, b->victims[i].node);
	}
	for (size_t i = 0; i < a->nunsched; i++) {
		ck_assert_str_eq(a->unsched[i].name, b->unsched[i].name);
		ck_assert_str_eq(a->unsched[i].message, b->unsched[i].message);
	}
}

START_TEST(test_determinism)
{
	struct json_object *docs = busy_docs(), *nodes = NULL;
	struct world fw, rw;
	char *text = tu_fixture("sched/gpu-cluster.yaml", NULL);
	struct sched_plan *again = NULL;
	size_t n = json_object_array_length(docs), nn;

	ck_assert_int_eq(kc_yaml_parse(text, strlen(text), NULL, &nodes, NULL), 0);
	kc_free(text);
	nn = json_object_array_length(nodes);
	w_init(&fw, NULL);
	w_init(&rw, NULL);
	for (size_t i = 0; i < nn; i++) {
		w_put_obj(&fw, json_object_array_get_idx(nodes, i));
		w_put_obj(&rw, json_object_array_get_idx(nodes, nn - 1 - i));
	}
	for (size_t i = 0; i < n; i++) {
		w_put_obj(&fw, json_object_array_get_idx(docs, i));
		w_put_obj(&rw, json_object_array_get_idx(docs, n - 1 - i));
	}
	w_podgroup(&fw, "train", "zoned", 3, NULL);
	w_podgroup(&fw, "train", "toobig", 9, NULL);
	w_podgroup(&fw, "train", "waits", 5, NULL);
	w_podgroup(&rw, "train", "waits", 5, NULL);
	w_podgroup(&rw, "train", "toobig", 9, NULL);
	w_podgroup(&rw, "train", "zoned", 3, NULL);
	w_plan(&fw);
	w_plan(&rw);
	plans_equal(fw.plan, rw.plan);
	/* Something of everything happened. */
	ck_assert_uint_gt(fw.plan->nbinds, 0);
	ck_assert_uint_gt(fw.plan->nvictims, 0);
	ck_assert_uint_gt(fw.plan->nnoms, 0);
	ck_assert_uint_gt(fw.plan->nunsched, 0);
	/* A plan changes nothing: the same again. */
	ck_assert_int_eq(sched_plan(fw.s, &again), 0);
	plans_equal(fw.plan, again);
	sched_plan_free(again);
	w_done(&fw);
	w_done(&rw);
	json_object_put(docs);
	json_object_put(nodes);
}
END_TEST

START_TEST(test_alloc_failures)
{
	struct json_object *docs = busy_docs(), *nodes = NULL, *o, *pg, *st_obj = NULL;
	struct json_object *pods[2];
	char *text = tu_fixture("sched/gpu-cluster.yaml", NULL);
	struct sched *s = NULL;
	struct sched_plan *plan = NULL;
	int r;

	ck_assert_int_eq(kc_yaml_parse(text, strlen(text), NULL, &nodes, NULL), 0);
	kc_free(text);
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = sched_new(&(struct sched_opts){ .cosched_name = "gang" }, &s);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(s);
	}
	s = sched_free(s);
	ck_assert_int_eq(sched_new(NULL, &s), 0);
	/* Every put, under a growing budget; a failed put changes nothing. */
	for (size_t i = 0; i < json_object_array_length(nodes); i++)
		for (size_t budget = 0;; budget++) {
			size_t before = sched_node_count(s);

			o = json_object_array_get_idx(nodes, i);
			fail_alloc_after(budget);
			r = sched_node_put(s, o, NULL);
			fail_alloc_after(SIZE_MAX);
			if (r == 0)
				break;
			ck_assert_int_eq(r, -ENOMEM);
			ck_assert_uint_eq(sched_node_count(s), before);
		}
	for (size_t i = 0; i < json_object_array_length(docs); i++)
		for (size_t budget = 0;; budget++) {
			size_t before = sched_pod_count(s);

			o = json_object_array_get_idx(docs, i);
			fail_alloc_after(budget);
			r = sched_pod_put(s, o, NULL);
			fail_alloc_after(SIZE_MAX);
			if (r == 0)
				break;
			ck_assert_int_eq(r, -ENOMEM);
			ck_assert_uint_eq(sched_pod_count(s), before);
		}
	pg = json("{apiVersion: scheduling.x-k8s.io/v1alpha1, kind: PodGroup, metadata: "
	    "{namespace: train, name: zoned}, spec: {minMember: 3}}");
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = sched_podgroup_put(s, pg, NULL);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
	}
	o = json("{kind: Namespace, metadata: {name: train, labels: {a: b}}}");
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = sched_namespace_put(s, o, NULL);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
	}
	json_object_put(o);
	/* The plan. */
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = sched_plan(s, &plan);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(plan);
	}
	ck_assert_uint_gt(plan->nvictims, 0);
	plan = sched_plan_free(plan);
	/* The helpers. */
	pods[0] = json_object_array_get_idx(docs, 0);
	pods[1] = json_object_array_get_idx(docs, 1);
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = sched_podgroup_status(pg, pods, 2, NOW, &st_obj, NULL, NULL);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(st_obj);
	}
	json_object_put(st_obj);
	st_obj = NULL;
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = sched_podgroup_status_of(s, pg, NOW, &st_obj, NULL, NULL);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(st_obj);
	}
	json_object_put(st_obj);
	st_obj = NULL;
	for (size_t budget = 0;; budget++) {
		fail_alloc_after(budget);
		r = sched_pod_requests(pods[0], &st_obj, NULL);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(st_obj);
	}
	json_object_put(st_obj);
	json_object_put(pg);
	sched_free(s);
	json_object_put(docs);
	json_object_put(nodes);
}
END_TEST

/*
 * 1000 nodes in 10 zones, 8000 pods: 7200 single pods and 100 gangs of
 * eight with affinity to their zone. Every GPU gets used, every gang
 * lands in one zone, and nothing else is said. (Only correctness is
 * asserted: time depends on the machine.)
 */
START_TEST(test_scale)
{
	struct sched *s = NULL;
	struct sched_plan *plan = NULL;
	struct kc_status st = { 0 };
	struct json_object *o;
	int *per = kc_calloc(1000, sizeof(*per)), zone[100];
	char *text;

	ck_assert_ptr_nonnull(per);
	ck_assert_int_eq(sched_new(NULL, &s), 0);
	for (int i = 0; i < 1000; i++) {
		text = kc_asprintf("{\"kind\": \"Node\", \"metadata\": {\"name\": "
		    "\"node-%04d\", \"labels\": {\"zone\": \"z%d\", "
		    "\"kubernetes.io/hostname\": \"node-%04d\"}}, \"status\": "
		    "{\"allocatable\": {\"cpu\": \"128\", \"memory\": \"1Ti\", \"pods\": "
		    "\"110\", \"nvidia.com/gpu\": \"8\"}, \"conditions\": [{\"type\": "
		    "\"Ready\", \"status\": \"True\"}]}}", i, i / 100, i);
		ck_assert_int_eq(kc_json_parse(text, strlen(text), &o, NULL), 0);
		ck_assert_int_eq(sched_node_put(s, o, &st), 0);
		json_object_put(o);
		kc_free(text);
	}
	for (int i = 0; i < 100; i++) {
		text = kc_asprintf("{\"apiVersion\": \"scheduling.x-k8s.io/v1alpha1\", "
		    "\"kind\": \"PodGroup\", \"metadata\": {\"namespace\": \"train\", "
		    "\"name\": \"run-%03d\"}, \"spec\": {\"minMember\": 8}}", i);
		ck_assert_int_eq(kc_json_parse(text, strlen(text), &o, NULL), 0);
		ck_assert_int_eq(sched_podgroup_put(s, o, &st), 0);
		json_object_put(o);
		kc_free(text);
	}
	for (int i = 0; i < 8000; i++) {
		char extra[256] = "", aff[512] = "";

		if (i < 800) {
			(void)snprintf(extra, sizeof(extra), ", \"labels\": {"
			    "\"scheduling.x-k8s.io/pod-group\": \"run-%03d\", \"run\": "
			    "\"run-%03d\"}", i / 8, i / 8);
			(void)snprintf(aff, sizeof(aff), "\"affinity\": {\"podAffinity\": "
			    "{\"requiredDuringSchedulingIgnoredDuringExecution\": "
			    "[{\"labelSelector\": {\"matchLabels\": {\"run\": \"run-%03d\"}}, "
			    "\"topologyKey\": \"zone\"}]}}, ", i / 8);
		}
		text = kc_asprintf("{\"kind\": \"Pod\", \"metadata\": {\"namespace\": "
		    "\"train\", \"name\": \"pod-%05d\"%s}, \"spec\": {\"schedulerName\": "
		    "\"%s\", %s\"containers\": [{\"resources\": {\"requests\": {\"cpu\": "
		    "\"1\", \"nvidia.com/gpu\": \"1\"}}}]}}", i, extra,
		    i < 800 ? COS : "default-scheduler", aff);
		ck_assert_int_eq(kc_json_parse(text, strlen(text), &o, NULL), 0);
		ck_assert_int_eq(sched_pod_put(s, o, &st), 0);
		json_object_put(o);
		kc_free(text);
	}
	ck_assert_int_eq(sched_plan(s, &plan), 0);
	ck_assert_uint_eq(plan->nbinds, 8000);
	ck_assert_uint_eq(plan->nunsched, 0);
	ck_assert_uint_eq(plan->nvictims, 0);
	for (int i = 0; i < 100; i++)
		zone[i] = -1;
	for (size_t i = 0; i < plan->nbinds; i++) {
		int64_t node, pod;

		ck_assert_int_eq(kc_parse_i64(plan->binds[i].node + 5, &node), 0);
		ck_assert_int_eq(kc_parse_i64(plan->binds[i].name + 4, &pod), 0);
		per[node]++;
		/* Each gang in one zone. */
		if (pod < 800) {
			if (zone[pod / 8] < 0)
				zone[pod / 8] = (int)(node / 100);
			ck_assert_int_eq(zone[pod / 8], node / 100);
		}
	}
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(per[i], 8);
	sched_plan_free(plan);
	sched_free(s);
	kc_free(per);
}
END_TEST

/*
 * More corners
 */

/* Several extended resources: compared by name, fullest first. */
START_TEST(test_score_extended_order)
{
	struct world w;

	w_init(&w, NULL);
	w_yaml(&w, "{kind: Node, metadata: {name: x}, status: {allocatable: {pods: 9, "
	    "nvidia.com/gpu: 8, rdma/hca_shared_devices_a: 100, example.com/a: 5}, "
	    "conditions: [{type: Ready, status: 'True'}]}}\n---\n"
	    "{kind: Node, metadata: {name: y}, status: {allocatable: {pods: 9, "
	    "nvidia.com/gpu: 8, rdma/hca_shared_devices_a: 50, example.com/a: 6}, "
	    "conditions: [{type: Ready, status: 'True'}]}}");
	/* nvidia.com/gpu ties, then rdma: y has less left. */
	w_yaml(&w, "{kind: Pod, metadata: {namespace: t, name: a}, spec: {containers: "
	    "[{resources: {requests: {nvidia.com/gpu: 1, rdma/hca_shared_devices_a: 10}}}]}}");
	/* example.com/a sorts first: x has less left. */
	w_yaml(&w, "{kind: Pod, metadata: {namespace: t, name: b}, spec: {containers: "
	    "[{resources: {requests: {rdma/hca_shared_devices_a: 1, example.com/a: 1}}}]}}");
	w_plan(&w);
	ck_assert_str_eq(bound(w.plan, "a"), "y");
	ck_assert_str_eq(bound(w.plan, "b"), "x");
	w_done(&w);
}
END_TEST

/* Anti-affinity is resolvable: a lower-priority pod in the way is preempted. */
START_TEST(test_preempt_anti_affinity)
{
	struct world w;

	w_init(&w, NULL);
	w_nodes(&w, 1, SMALL, NULL);
	w_pod(&w, &(struct podspec){ .name = "lo", .node = "n1", .prio = 1,
	    .labels = "\"app\": \"x\"" });
	w_pod(&w, &(struct podspec){ .name = "keep", .node = "n1", .prio = 1 });
	w_pod(&w, &(struct podspec){ .name = "hi", .prio = 10,
	    .spec = AFF("podAntiAffinity", "\"app\": \"x\"", "kubernetes.io/hostname") });
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nvictims, 1);
	ck_assert(victim(w.plan, "lo"));
	assert_why(w.plan, "hi", "0/1 nodes are available: 1 node(s) didn't match pod "
	    "anti-affinity rules.");
	w_done(&w);

	/* The gang variant, where the pod in the way is on a node the gang cannot use. */
	w_init(&w, NULL);
	w_yaml(&w, "{kind: Node, metadata: {name: n1, labels: {zone: a}}, spec: {taints: "
	    "[{key: special, effect: NoSchedule}]}, status: {allocatable: {cpu: 4, "
	    "pods: 10, nvidia.com/gpu: 2}, conditions: [{type: Ready, status: 'True'}]}}\n"
	    "---\n{kind: Node, metadata: {name: n2, labels: {zone: a}}, status: "
	    "{allocatable: {cpu: 4, pods: 10, nvidia.com/gpu: 2}, conditions: [{type: "
	    "Ready, status: 'True'}]}}");
	w_pod(&w, &(struct podspec){ .name = "blocker", .node = "n1", .prio = 1,
	    .labels = "\"app\": \"blocker\"" });
	w_pod(&w, &(struct podspec){ .name = "filler", .node = "n2", .prio = 1,
	    .gpus = "2" });
	w_pod(&w, &(struct podspec){ .name = "bystander", .node = "n1", .prio = 1 });
	gang(&w, "g", 1, 1, "2", 10, NULL,
	    AFF("podAntiAffinity", "\"app\": \"blocker\"", "zone"));
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nvictims, 2);
	ck_assert(victim(w.plan, "blocker"));
	ck_assert(victim(w.plan, "filler"));
	ck_assert_str_eq(nominated(w.plan, "g-0"), "n2");
	w_done(&w);
}
END_TEST

/* Spreading over many nodes grows the topology counters. */
START_TEST(test_anti_affinity_many)
{
	struct world w;

	w_init(&w, NULL);
	w_nodes(&w, 40, SMALL, NULL);
	for (int i = 0; i < 41; i++) {
		char name[16];

		(void)snprintf(name, sizeof(name), "r%02d", i);
		w_pod(&w, &(struct podspec){ .name = name, .labels = "\"app\": \"r\"",
		    .spec = AFF("podAntiAffinity", "\"app\": \"r\"",
		    "kubernetes.io/hostname") });
	}
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nbinds, 40);
	assert_why(w.plan, "r40", "0/40 nodes are available: 40 node(s) didn't match pod "
	    "anti-affinity rules. preemption: 0/40 nodes are available: 40 No preemption "
	    "victims found for incoming pod.");
	w_done(&w);
}
END_TEST

START_TEST(test_more_edges)
{
	struct world w;
	struct json_object *p, *got = NULL, *pg;
	struct kc_status st = { 0 };

	/* Integers past what milli-units hold saturate. */
	p = json("{spec: {containers: [{resources: {requests: {cpu: 9223372036854775807, "
	    "memory: -9223372036854775807, nvidia.com/gpu: 9223372036854775807}}}]}}");
	ck_assert_int_eq(sched_pod_requests(p, &got, &st), 0);
	ck_assert_int_eq(kc_json_int(got, 0, "cpu"), INT64_MAX);
	ck_assert_int_eq(kc_json_int(got, 0, "memory"), -INT64_MAX);
	ck_assert_int_eq(kc_json_int(got, 0, "nvidia.com/gpu"), INT64_MAX);
	json_object_put(got);
	json_object_put(p);

	w_init(&w, NULL);
	w_nodes(&w, 1, SMALL, "\"zone\": \"a\"");
	/* Values that are not strings make the term invalid. */
	w_pod(&w, &(struct podspec){ .name = "numbers", .spec = TERMS(
	    "{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"In\", "
	    "\"values\": [1]}]}") });
	/* A bad namespaceSelector is a scheduler error. */
	w_pod(&w, &(struct podspec){ .name = "nssel", .spec = "\"affinity\": "
	    "{\"podAntiAffinity\": {\"requiredDuringSchedulingIgnoredDuringExecution\": "
	    "[{\"labelSelector\": {}, \"namespaceSelector\": {\"matchExpressions\": "
	    "[{\"key\": \"a\", \"operator\": \"In\"}]}, \"topologyKey\": \"zone\"}]}}" });
	/* A bound pod in phase Unknown still uses its node. */
	w_pod(&w, &(struct podspec){ .name = "unknown", .node = "n1", .cpu = "4",
	    .phase = "Unknown", .meta = "\"ownerReferences\": [{\"name\": \"job-1\"}]" });
	w_pod(&w, &(struct podspec){ .name = "late", .cpu = "1", .pg = "g",
	    .meta = "\"ownerReferences\": [{\"name\": \"job-1\"}]" });
	/* A waiting gang with a broken member. */
	w_podgroup(&w, "train", "w", 3, NULL);
	w_pod(&w, &(struct podspec){ .name = "w-0", .sched = COS, .pg = "w" });
	w_pod(&w, &(struct podspec){ .name = "w-1", .sched = COS, .pg = "w", .cpu = "?" });
	w_plan(&w);
	assert_why(w.plan, "numbers", "0/1 nodes are available: 1 node(s) didn't match "
	    "Pod's node affinity/selector. preemption: 0/1 nodes are available: 1 "
	    "Preemption is not helpful for scheduling.");
	ck_assert_str_eq(reason(w.plan, "nssel"), "SchedulerError");
	ck_assert_ptr_nonnull(strstr(why(w.plan, "nssel"), "namespaceSelector: "));
	assert_why(w.plan, "late", "0/1 nodes are available: 1 Insufficient cpu. "
	    "preemption: 0/1 nodes are available: 1 No preemption victims found for "
	    "incoming pod.");
	ck_assert_str_eq(reason(w.plan, "w-1"), "SchedulerError");
	ck_assert_str_eq(reason(w.plan, "w-0"), "Unschedulable");
	pg = json("{apiVersion: scheduling.x-k8s.io/v1alpha1, kind: PodGroup, metadata: "
	    "{namespace: train, name: g}, spec: {minMember: 2}}");
	ck_assert_int_eq(sched_podgroup_status_of(w.s, pg, NOW, &got, NULL, &st), 0);
	ck_assert_str_eq(kc_json_str(got, "phase"), "Pending");
	json_object_put(got);
	w_pod(&w, &(struct podspec){ .name = "early", .pg = "g",
	    .meta = "\"ownerReferences\": [{\"name\": \"job-0\"}]" });
	ck_assert_int_eq(sched_podgroup_status_of(w.s, pg, NOW, &got, NULL, &st), 0);
	ck_assert_str_eq(kc_json_str(got, "phase"), "Scheduling");
	ck_assert_str_eq(kc_json_str(got, "scheduleStartTime"), "2026-01-01T00:00:00Z");
	ck_assert_str_eq(kc_json_str(got, "occupiedBy"), "train/job-0");
	json_object_put(got);
	json_object_put(pg);
	w_done(&w);
}
END_TEST

/*
 * The loop marks victims (DisruptionTarget, deletionTimestamp) and they
 * take a while to go: meanwhile the gang keeps its nominations and takes
 * no more victims.
 */
START_TEST(test_preempt_gang_terminating)
{
	struct world w;
	struct json_object *pod;

	w_init(&w, NULL);
	w_nodes(&w, 2, SMALL, NULL);
	w_pod(&w, &(struct podspec){ .name = "low-1", .node = "n1", .gpus = "2", .prio = 1 });
	w_pod(&w, &(struct podspec){ .name = "low-2", .node = "n2", .gpus = "2", .prio = 1 });
	gang(&w, "g", 1, 1, "2", 10, NULL, NULL);
	/* A broken member does not stop the others (minMember 1). */
	w_pod(&w, &(struct podspec){ .name = "g-9", .sched = COS, .pg = "g", .gpus = "x" });
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nvictims, 1);
	ck_assert(victim(w.plan, "low-1"));
	ck_assert_str_eq(nominated(w.plan, "g-0"), "n1");
	ck_assert_str_eq(reason(w.plan, "g-9"), "SchedulerError");
	/* Nominate, and mark the victim terminating instead of deleting it. */
	pod = w_find(&w, "train", "g-0", NULL);
	ck_assert_int_eq(kc_json_set_str(kc_json_get(pod, "status"), "nominatedNodeName",
	    "n1"), 0);
	w_put_obj(&w, pod);
	pod = w_find(&w, "train", "low-1", NULL);
	ck_assert_int_eq(kc_json_set_str(kc_json_get(pod, "metadata"), "deletionTimestamp",
	    "2026-01-01T00:00:10Z"), 0);
	ck_assert_int_eq(kc_json_put(kc_json_get(pod, "status"), "conditions",
	    json("[{type: DisruptionTarget, status: 'True', reason: PreemptionByScheduler}]")),
	    0);
	w_put_obj(&w, pod);
	w_plan(&w);
	ck_assert_uint_eq(w.plan->nvictims, 0);
	ck_assert_ptr_null(nominated(w.plan, "g-0"));
	assert_why(w.plan, "g-0", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu. "
	    "preemption: not eligible due to a terminating pod on the nominated node., "
	    "PodGroup train/g gets rejected due to Pod g-0 is unschedulable even after "
	    "PostFilter");
	/* Gone: the gang binds on its nominated node. */
	ck_assert(sched_pod_remove(w.s, "train", "low-1"));
	w_plan(&w);
	ck_assert_str_eq(bound(w.plan, "g-0"), "n1");
	w_done(&w);
}
END_TEST

Suite *
dc_sched_suite(void)
{
	Suite *s = suite_create("dc_sched");
	TCase *tc = tcase_create("quantity");

	tcase_add_loop_test(tc, test_quantity_ok, 0, sizeof(qty_ok) / sizeof(qty_ok[0]));
	tcase_add_loop_test(tc, test_quantity_bad, 0, sizeof(qty_bad) / sizeof(qty_bad[0]));
	tcase_add_test(tc, test_quantity_exact_message);
	tcase_add_test(tc, test_quantity_suffix_sweep);
	suite_add_tcase(s, tc);
	tc = tcase_create("requests");
	tcase_add_test(tc, test_requests);
	tcase_add_test(tc, test_requests_bad);
	suite_add_tcase(s, tc);
	tc = tcase_create("filters");
	tcase_add_test(tc, test_fit_resources);
	tcase_add_test(tc, test_fit_used);
	tcase_add_test(tc, test_put_status);
	tcase_add_test(tc, test_node_affinity);
	tcase_add_test(tc, test_node_affinity_messages);
	tcase_add_test(tc, test_taints);
	tcase_add_test(tc, test_unschedulable_and_not_ready);
	tcase_add_test(tc, test_gpu_cluster_basics);
	tcase_add_test(tc, test_score_bin_packing);
	tcase_add_test(tc, test_pod_affinity_zone);
	tcase_add_test(tc, test_pod_anti_affinity);
	tcase_add_test(tc, test_pod_affinity_namespaces);
	suite_add_tcase(s, tc);
	tc = tcase_create("gangs");
	tcase_add_test(tc, test_gang_one_zone);
	tcase_add_test(tc, test_gang_does_not_block);
	tcase_add_test(tc, test_message_issue_example);
	tcase_add_test(tc, test_gang_waits);
	tcase_add_test(tc, test_gang_all_or_nothing);
	suite_add_tcase(s, tc);
	tc = tcase_create("preemption");
	tcase_add_test(tc, test_preempt_gang);
	tcase_add_test(tc, test_preempt_levels);
	tcase_add_test(tc, test_preempt_single);
	tcase_add_test(tc, test_preempt_nominated);
	tcase_add_test(tc, test_preempt_gang_terminating);
	suite_add_tcase(s, tc);
	tc = tcase_create("podgroup");
	tcase_add_loop_test(tc, test_podgroup_status, 0, sizeof(pgcases) / sizeof(pgcases[0]));
	tcase_add_test(tc, test_podgroup_status_of);
	tcase_add_test(tc, test_podgroup_statuses_batch);
	tcase_add_loop_test(tc, test_podgroup_status_now, 0, sizeof(pgnow) / sizeof(pgnow[0]));
	suite_add_tcase(s, tc);
	tc = tcase_create("robustness");
	tcase_add_test(tc, test_broken_pods);
	tcase_add_test(tc, test_snapshot_edges);
	tcase_add_test(tc, test_node_replace);
	tcase_add_test(tc, test_score_extended_order);
	tcase_add_test(tc, test_preempt_anti_affinity);
	tcase_add_test(tc, test_anti_affinity_many);
	tcase_add_test(tc, test_more_edges);
	tcase_add_test(tc, test_determinism);
	tcase_add_test(tc, test_alloc_failures);
	suite_add_tcase(s, tc);
	tc = tcase_create("scale");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_scale);
	suite_add_tcase(s, tc);
	return s;
}

/*
 * test_ctl_quota.c: a Run's demand on its project's quota, whether it
 * fits, and the ledger: admission first come first served, the
 * submitter's cap, reservations the cache does not show yet, and the
 * sums a Project's status shows.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/json.h>
#include <kc/str.h>

#include "testutil.h"
#include "ctl_testutil.h"
#include "../../controller/config.h"
#include "../../controller/model.h"
#include "../../controller/quota.h"

static struct ty_spec *
spec_of(const char *run_spec)
{
	char text[1024];
	struct json_object *run;
	struct ty_config cfg;
	struct ty_problems probs = { 0 };
	struct ty_spec *s = NULL;

	snprintf(text, sizeof(text), "apiVersion: trainyard.dev/v1beta1\nkind: Run\n"
	    "metadata: {name: r, namespace: p, uid: u}\nspec: %s\n", run_spec);
	run = ctu_yaml(text);
	config_defaults(&cfg);
	ck_assert_int_eq(model_validate(run, NULL, &cfg, &s, &probs), 0);
	config_release(&cfg);
	json_object_put(run);
	return s;
}

START_TEST(test_demand)
{
	struct ty_spec *s = spec_of("{nodes: 4, container: {image: x, resources: "
	    "{requests: {cpu: 1500m, memory: 2Gi}, limits: {nvidia.com/gpu: 8, memory: 4Gi}}}}");
	struct json_object *hard = ctu_yaml("{requests.nvidia.com/gpu: '128', pods: '512', "
	    "count/pods: '9', cpu: '100', limits.memory: 1Ti, services: '3', "
	    "configmaps: '10', requests.rdma/hca_shared_devices_a: '4'}");
	struct json_object *d = NULL;

	ck_assert_int_eq(quota_demand(s, hard, NULL, &d), 0);
	ck_assert_str_eq(kc_json_str(d, "requests.nvidia.com/gpu"), "32");
	ck_assert_str_eq(kc_json_str(d, "pods"), "4");
	ck_assert_str_eq(kc_json_str(d, "count/pods"), "4");
	ck_assert_str_eq(kc_json_str(d, "cpu"), "6");
	ck_assert_str_eq(kc_json_str(d, "limits.memory"), "16Gi");
	ck_assert_str_eq(kc_json_str(d, "services"), "1");
	/* Nothing of it: left out. */
	ck_assert_ptr_null(kc_json_get(d, "configmaps"));
	ck_assert_ptr_null(kc_json_get(d, "requests.rdma/hca_shared_devices_a"));
	json_object_put(d);
	json_object_put(hard);
	model_spec_free(s);
}
END_TEST

/* A request the pods do not name counts as the project's LimitRange gives it. */
START_TEST(test_demand_defaults)
{
	struct ty_spec *s = spec_of("{nodes: 3, container: {image: x, resources: "
	    "{limits: {nvidia.com/gpu: 1}}}}");
	struct json_object *proj = ctu_yaml("kind: Project\nmetadata: {name: p, uid: u}\n"
	    "spec: {namespaces: [{name: p}], quota: {hard: {requests.cpu: '8', memory: 1Ti, "
	    "requests.nvidia.com/gpu: '8'}}}\n");
	struct ty_problems probs = { 0 };
	struct ty_project *p = NULL;
	struct json_object *d = NULL;

	ck_assert_int_eq(project_parse(proj, &p, &probs), 0);
	ck_assert_int_eq(quota_demand(s, p->hard, p, &d), 0);
	ck_assert_str_eq(kc_json_str(d, "requests.cpu"), "300m");
	ck_assert_str_eq(kc_json_str(d, "memory"), "768Mi");
	ck_assert_str_eq(kc_json_str(d, "requests.nvidia.com/gpu"), "3");
	json_object_put(d);
	project_free(p);
	json_object_put(proj);
	model_spec_free(s);
}
END_TEST

START_TEST(test_fits)
{
	struct json_object *hard = ctu_yaml("{requests.nvidia.com/gpu: '16', pods: '8'}");
	struct json_object *used = ctu_yaml("{requests.nvidia.com/gpu: '10', pods: '2'}");
	struct json_object *small = ctu_yaml("{requests.nvidia.com/gpu: '6', pods: '1'}");
	struct json_object *big = ctu_yaml("{requests.nvidia.com/gpu: '8', pods: '1'}");
	struct json_object *huge = ctu_yaml("{requests.nvidia.com/gpu: '32', other: '1'}");
	char why[256];

	ck_assert(quota_fits(hard, used, small, why, sizeof(why)));
	ck_assert_str_eq(why, "");
	ck_assert(!quota_fits(hard, used, big, why, sizeof(why)));
	ck_assert_str_eq(why, "needs 8 requests.nvidia.com/gpu; 6 of 16 are free");
	/* Ever: against the quota alone; a resource the quota does not name is free. */
	ck_assert(quota_fits(hard, NULL, big, why, sizeof(why)));
	ck_assert(!quota_fits(hard, NULL, huge, why, sizeof(why)));
	ck_assert_str_eq(why, "needs 32 requests.nvidia.com/gpu, more than the quota of 16");
	ck_assert_int_eq(quota_add(used, small), 0);
	ck_assert_str_eq(kc_json_str(used, "requests.nvidia.com/gpu"), "16");
	ck_assert_str_eq(kc_json_str(used, "pods"), "3");
	quota_text(small, why, sizeof(why));
	ck_assert_str_eq(why, "6 requests.nvidia.com/gpu, 1 pods");
	json_object_put(hard);
	json_object_put(used);
	json_object_put(small);
	json_object_put(big);
	json_object_put(huge);
}
END_TEST

/* ---- the ledger ---- */

struct fixture {
	struct quota_ledger	*l;
	struct json_object	*hard;
	struct json_object	*objs[16];
	size_t			 nobjs;
};

static void
fx_init(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	ck_assert_int_eq(quota_ledger_new(&f->l), 0);
	f->hard = ctu_yaml("{requests.nvidia.com/gpu: '16'}");
}

static void
fx_free(struct fixture *f)
{
	for (size_t i = 0; i < f->nobjs; i++)
		json_object_put(f->objs[i]);
	json_object_put(f->hard);
	quota_ledger_free(f->l);
}

/* A cached Run of project p as quota_run_read() sees it. */
static int
observe(struct fixture *f, const char *key, const char *created, const char *status,
    const char *user)
{
	char text[1024], project[64], old[64];
	struct json_object *run;
	struct quota_run v;

	snprintf(text, sizeof(text), "metadata: {name: x, uid: uid-%s, creationTimestamp: "
	    "'%s'%s%s%s}\n%s%s\n", key, created, user != NULL ? ", annotations: "
	    "{trainyard.dev/submitted-by: " : "", user != NULL ? user : "",
	    user != NULL ? "}" : "", status != NULL ? "status: " : "",
	    status != NULL ? status : "");
	ck_assert_uint_lt(f->nobjs, 16);
	run = f->objs[f->nobjs++] = ctu_yaml(text);
	quota_run_read(run, key, "p", &v);
	return quota_observe(f->l, &v, project, old);
}

#define HOLDS(g)	"{observedGeneration: 1, session: 1, gpus: " #g ", quota: {project: p, " \
			"reserved: {requests.nvidia.com/gpu: '" #g "'}}}"
#define WAITS		"{observedGeneration: 1, conditions: [{type: QuotaReserved, " \
			"status: 'False', reason: QuotaExceeded}]}"

static struct quota_verdict
ask(struct fixture *f, const char *key, const char *created, int64_t gpus,
    const char *user, int64_t cap)
{
	char d[64], uid[64];
	struct json_object *demand;
	struct quota_verdict v;
	time_t t = 0;

	snprintf(d, sizeof(d), "{requests.nvidia.com/gpu: '%lld'}", (long long)gpus);
	snprintf(uid, sizeof(uid), "uid-%s", key);
	demand = ctu_yaml(d);
	ck_assert_int_eq(kc_time_parse(created, &t), 0);
	ck_assert_int_eq(quota_admit(f->l, &(struct quota_ask){
		.key = key, .uid = uid, .project = "p", .user = user != NULL ? user : "",
		.created = (int64_t)t, .session = 1, .gpus = gpus, .user_max_gpus = cap,
		.hard = f->hard, .demand = demand,
	}, &v), 0);
	json_object_put(demand);
	return v;
}

static void
usage(struct fixture *f, int64_t gpus, size_t active, size_t waiting)
{
	struct quota_usage u;

	ck_assert_int_eq(quota_usage(f->l, "p", &u), 0);
	ck_assert_int_eq(u.gpus, gpus);
	ck_assert_uint_eq(u.active, active);
	ck_assert_uint_eq(u.waiting, waiting);
	json_object_put(u.reserved);
}

START_TEST(test_ledger_rebuilt_from_status)
{
	struct fixture f;
	struct quota_verdict v;

	fx_init(&f);
	/* After a restart: what the Runs' status says they hold counts once. */
	ck_assert_int_eq(observe(&f, "p/a", "2027-01-01T00:00:00Z", HOLDS(8), NULL), 1);
	ck_assert_int_eq(observe(&f, "p/b", "2027-01-01T00:00:01Z", HOLDS(4), NULL), 1);
	ck_assert_int_eq(observe(&f, "p/b", "2027-01-01T00:00:01Z", HOLDS(4), NULL), 0);
	usage(&f, 12, 2, 0);
	v = ask(&f, "p/c", "2027-01-01T00:00:02Z", 8, NULL, -1);
	ck_assert(!v.admit);
	ck_assert_str_eq(v.reason, TY_QUOTA_EXCEEDED);
	ck_assert_str_eq(v.message, "waiting for quota in project p: needs 8 "
	    "requests.nvidia.com/gpu; 4 of 16 are free (2 Runs hold 12 requests.nvidia.com/gpu)");
	v = ask(&f, "p/d", "2027-01-01T00:00:03Z", 4, NULL, -1);
	ck_assert(v.admit);
	usage(&f, 16, 3, 0);
	fx_free(&f);
}
END_TEST

START_TEST(test_ledger_fifo)
{
	struct fixture f;
	struct quota_verdict v;

	fx_init(&f);
	ck_assert_int_eq(observe(&f, "p/a", "2027-01-01T00:00:00Z", HOLDS(12), NULL), 1);
	/* c waits; b, newer but small, may not pass it. */
	ck_assert_int_eq(observe(&f, "p/c", "2027-01-01T00:00:01Z", WAITS, NULL), 1);
	v = ask(&f, "p/b", "2027-01-01T00:00:05Z", 2, NULL, -1);
	ck_assert(!v.admit);
	ck_assert_str_eq(v.message, "waiting for quota in project p behind 1 earlier Run "
	    "(first: p/c)");
	/* A new Run not looked at yet is in line too, by creation time then name. */
	ck_assert_int_eq(observe(&f, "p/aa", "2027-01-01T00:00:01Z", NULL, NULL), 1);
	v = ask(&f, "p/c", "2027-01-01T00:00:01Z", 8, NULL, -1);
	ck_assert(!v.admit);
	ck_assert_str_eq(v.message, "waiting for quota in project p behind 1 earlier Run "
	    "(first: p/aa)");
	usage(&f, 12, 1, 2);
	/* a is released and aa is gone: c, first in line, is admitted. */
	ck_assert_int_eq(observe(&f, "p/a", "2027-01-01T00:00:00Z",
	    "{observedGeneration: 1, session: 1, phase: Succeeded}", NULL), 1);
	{
		char project[64];

		ck_assert_int_eq(quota_forget(f.l, "p/aa", project), 1);
		ck_assert_str_eq(project, "p");
	}
	v = ask(&f, "p/c", "2027-01-01T00:00:01Z", 8, NULL, -1);
	ck_assert(v.admit);
	fx_free(&f);
}
END_TEST

static void
note(void *arg, const char *s)
{
	char *buf = arg;

	kc_strlcpy(buf + strlen(buf), s, 256 - strlen(buf));
	kc_strlcpy(buf + strlen(buf), ";", 256 - strlen(buf));
}

START_TEST(test_ledger_inflight)
{
	struct fixture f;
	struct quota_verdict v;
	char seen[256] = "";

	fx_init(&f);
	v = ask(&f, "p/a", "2027-01-01T00:00:00Z", 16, NULL, -1);
	ck_assert(v.admit);
	/* The cache still shows a before its start: the reservation stands. */
	ck_assert_int_eq(observe(&f, "p/a", "2027-01-01T00:00:00Z", NULL, NULL), 0);
	usage(&f, 16, 1, 0);
	v = ask(&f, "p/b", "2027-01-01T00:00:01Z", 1, NULL, -1);
	ck_assert(!v.admit);
	/* The start's write failed: released, a waits again. */
	quota_cancel(f.l, "p/a", 1);
	usage(&f, 0, 0, 1);
	v = ask(&f, "p/a", "2027-01-01T00:00:00Z", 16, NULL, -1);
	ck_assert(v.admit);
	/* Now the cache shows it: the same reservation, counted once. */
	ck_assert_int_eq(observe(&f, "p/a", "2027-01-01T00:00:00Z", HOLDS(16), NULL), 1);
	usage(&f, 16, 1, 0);
	quota_take_dirty(f.l, note, seen);
	ck_assert_str_eq(seen, "p;");
	seen[0] = '\0';
	quota_take_dirty(f.l, note, seen);
	ck_assert_str_eq(seen, "");
	quota_foreach(f.l, "p", true, note, seen);
	ck_assert_str_eq(seen, "p/a;");
	fx_free(&f);
}
END_TEST

START_TEST(test_ledger_member_cap)
{
	struct fixture f;
	struct quota_verdict v;

	fx_init(&f);
	ck_assert_int_eq(observe(&f, "p/a", "2027-01-01T00:00:00Z", HOLDS(6), "carol"), 1);
	v = ask(&f, "p/b", "2027-01-01T00:00:01Z", 4, "carol", 8);
	ck_assert(!v.admit);
	ck_assert_str_eq(v.reason, TY_QUOTA_MEMBER);
	ck_assert_str_eq(v.message, "waiting for carol's GPUs in project p: this Run needs "
	    "4, their Runs hold 6 of 8");
	/* Waiting for one's own cap keeps no place in the project's line. */
	ck_assert_int_eq(observe(&f, "p/b", "2027-01-01T00:00:01Z", "{observedGeneration: 1, "
	    "conditions: [{type: QuotaReserved, status: 'False', reason: "
	    "MemberQuotaExceeded}]}", "carol"), 1);
	v = ask(&f, "p/c", "2027-01-01T00:00:02Z", 4, "dave", 8);
	ck_assert(v.admit);
	v = ask(&f, "p/d", "2027-01-01T00:00:03Z", 2, "carol", 8);
	ck_assert(v.admit);
	usage(&f, 12, 3, 1);
	fx_free(&f);
}
END_TEST

START_TEST(test_run_read)
{
	struct json_object *run = ctu_yaml("metadata: {uid: u1, creationTimestamp: "
	    "'2027-01-01T00:00:00Z', annotations: {trainyard.dev/submitted-by: bob}}\n"
	    "spec: {suspend: true}\n");
	struct quota_run v;

	/* Suspended and never looked at: not in line. */
	quota_run_read(run, "ns/r", "p", &v);
	ck_assert_int_eq(v.state, QUOTA_NONE);
	ck_assert_str_eq(v.project, "p");
	ck_assert_str_eq(v.user, "bob");
	ck_assert_int_eq(v.created, 1798761600);
	json_object_put(run);
	/* What the status recorded wins over the namespace's project. */
	run = ctu_yaml("metadata: {uid: u1}\nstatus: " HOLDS(2) "\n");
	quota_run_read(run, "ns/r", "other", &v);
	ck_assert_int_eq(v.state, QUOTA_RESERVED);
	ck_assert_str_eq(v.project, "p");
	ck_assert_int_eq(v.gpus, 2);
	json_object_put(run);
}
END_TEST

Suite *
ctl_quota_suite(void)
{
	Suite *s = suite_create("ctl_quota");
	TCase *tc = tcase_create("quota");

	tcase_add_test(tc, test_demand);
	tcase_add_test(tc, test_demand_defaults);
	tcase_add_test(tc, test_fits);
	tcase_add_test(tc, test_ledger_rebuilt_from_status);
	tcase_add_test(tc, test_ledger_fifo);
	tcase_add_test(tc, test_ledger_inflight);
	tcase_add_test(tc, test_ledger_member_cap);
	tcase_add_test(tc, test_run_read);
	suite_add_tcase(s, tc);
	return s;
}

/*
 * test_dc_gc.c: object lifecycle in the devcluster: the garbage
 * collector (devcluster/gc.c) for each propagation policy, from a table
 * of owner/dependent graphs, and the namespace controller
 * (devcluster/namespace.c): content deletion, finalizers, conditions
 * and their messages, protected namespaces. Requests go through
 * api_handle() as kubectl's would; loop timers run on a fake clock.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/str.h>

#include "dc_testutil.h"
#include "testutil.h"

#define CM_PATH		"/api/v1/namespaces/default/configmaps"
#define GHOST_UID	"00000000-0000-4000-8000-00000000dead"

static struct dc *dc;

static void
setup(void)
{
	fake_clock_install(5000000);
	dc = dct_new(NULL);
	ck_assert_int_eq(gc_init(dc), 0);
	ck_assert_int_eq(namespace_init(dc), 0);
}

static void
teardown(void)
{
	gc_fini(dc);
	namespace_fini(dc);
	dc = api_free(dc);
	fake_clock_uninstall();
}

/*
 * Runs a request; returns the parsed reply (NULL when not JSON). A body
 * defaults to JSON, or to a merge patch for PATCH.
 */
static struct json_object *
call(enum dc_method m, const char *target, const char *body, const char *ctype, int want)
{
	if (body != NULL && ctype == NULL && m == DC_PATCH)
		ctype = "application/merge-patch+json";
	return dct_run(dc, &(struct dct_call){ .method = m, .target = target, .body = body,
	    .ctype = body != NULL ? ctype : NULL }, want, NULL);
}

static void
expect(enum dc_method m, const char *target, const char *body, int want)
{
	dct_put(call(m, target, body, NULL, want));
}

/*
 * Runs the loop timers until nothing is due within 'horizon_ms',
 * advancing the fake clock to each.
 */
static void
settle(uint64_t horizon_ms)
{
	for (int i = 0; i < 10000; i++) {
		int64_t next;

		(void)timers_run(dc);
		next = timers_next(dc);
		if (next < 0 || (uint64_t)next > horizon_ms)
			return;
		if (next > 0)
			fake_clock_advance((uint64_t)next);
	}
	ck_abort_msg("the timers never settled");
}

static const struct json_object *
stored(const char *plural, const char *ns, const char *name)
{
	return coll_get(dct_type(dc, plural)->coll, ns, name);
}

/*
 * The graph table. An object is "name[<owner[!][,owner...]][+finalizer]":
 * a ConfigMap in "default" owned by the named ConfigMaps created before
 * it ("~" is an owner uid that never existed; "!" sets
 * blockOwnerDeletion). 'want' lists what is left, by name, as
 * "name[<owners][*]" ('*': being deleted), space-separated.
 */
struct gc_case {
	const char	*name;
	const char	*objs[6];
	const char	*del;		/* NULL: nothing deleted */
	const char	*policy;	/* "" for none */
	const char	*want;
};

static const struct gc_case gc_cases[] = {
	{ "background chain", { "a", "b<a", "c<b" }, "a", "Background", "" },
	{ "no policy is background", { "a", "b<a" }, "a", "", "" },
	{ "background keeps a dependent with another owner",
	  { "a", "x", "b<a,x" }, "a", "Background", "b<x x" },
	{ "orphan strips the owner", { "a", "x", "b<a", "c<a,x" }, "a", "Orphan",
	  "b c<x x" },
	{ "orphan keeps grandchildren", { "a", "b<a", "c<b" }, "a", "Orphan", "b c<b" },
	{ "foreground chain", { "a", "b<a!", "c<b!" }, "a", "Foreground", "" },
	{ "foreground waits for a blocking dependent's finalizer",
	  { "a", "b<a!+example.com/hold" }, "a", "Foreground", "a* b<a*" },
	{ "foreground does not wait for a non-blocking one",
	  { "a", "b<a+example.com/hold" }, "a", "Foreground", "b<a*" },
	{ "foreground spares a dependent with another owner",
	  { "a", "x", "b<a!,x" }, "a", "Foreground", "b<x x" },
	{ "an owner uid that never existed", { "x", "b<~", "c<~,x" }, NULL, NULL, "c<x x" },
	{ "nothing deleted, nothing collected", { "a", "b<a", "c<a,b" }, NULL, NULL,
	  "a b<a c<a,b" },
	{ "a finalizer holds the owner, not the collection",
	  { "a+example.com/hold", "b<a" }, "a", "Background", "a* b<a" },
};

struct graph {
	char	 names[6][16];
	char	 uids[6][40];
	size_t	 n;
};

static const char *
uid_of_name(const struct graph *g, const char *name)
{
	for (size_t i = 0; i < g->n; i++)
		if (strcmp(g->names[i], name) == 0)
			return g->uids[i];
	return strcmp(name, "~") == 0 ? GHOST_UID : NULL;
}

static const char *
name_of_uid(const struct graph *g, const char *uid)
{
	for (size_t i = 0; i < g->n; i++)
		if (strcmp(g->uids[i], uid) == 0)
			return g->names[i];
	return "~";
}

static void
create_spec(struct graph *g, const char *spec)
{
	char name[16] = "", owners[64] = "", fin[64] = "", body[1024];
	const char *lt = strchr(spec, '<'), *plus = strchr(spec, '+');
	size_t off = 0;
	struct json_object *o;

	(void)kc_strlcpy(name, spec, (size_t)((lt != NULL ? lt : plus != NULL ? plus :
	    spec + strlen(spec)) - spec) + 1);
	if (lt != NULL)
		(void)kc_strlcpy(owners, lt + 1, (size_t)((plus != NULL ? plus :
		    lt + strlen(lt)) - lt));
	if (plus != NULL)
		(void)kc_strlcpy(fin, plus + 1, sizeof(fin));
	off += (size_t)snprintf(body + off, sizeof(body) - off,
	    "{\"metadata\":{\"name\":\"%s\"", name);
	if (fin[0] != '\0')
		off += (size_t)snprintf(body + off, sizeof(body) - off,
		    ",\"finalizers\":[\"%s\"]", fin);
	if (owners[0] != '\0') {
		char *save = owners, *tok;
		bool first = true;

		off += (size_t)snprintf(body + off, sizeof(body) - off, ",\"ownerReferences\":[");
		while ((tok = strsep(&save, ",")) != NULL) {
			bool block = tok[0] != '\0' && tok[strlen(tok) - 1] == '!';
			const char *uid;

			if (block)
				tok[strlen(tok) - 1] = '\0';
			uid = uid_of_name(g, tok);
			ck_assert_msg(uid != NULL, "owner %s not created yet", tok);
			off += (size_t)snprintf(body + off, sizeof(body) - off,
			    "%s{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"%s\","
			    "\"uid\":\"%s\"%s}", first ? "" : ",",
			    strcmp(tok, "~") == 0 ? "ghost" : tok, uid,
			    block ? ",\"blockOwnerDeletion\":true" : "");
			first = false;
		}
		off += (size_t)snprintf(body + off, sizeof(body) - off, "]");
	}
	(void)snprintf(body + off, sizeof(body) - off, "}}");
	o = call(DC_POST, CM_PATH, body, NULL, 201);
	(void)kc_strlcpy(g->names[g->n], name, sizeof(g->names[0]));
	(void)kc_strlcpy(g->uids[g->n], kc_json_str(o, "metadata", "uid"),
	    sizeof(g->uids[0]));
	g->n++;
	json_object_put(o);
}

/* What is left in "default", in the table's notation. */
static void
describe(const struct graph *g, char *buf, size_t size)
{
	const struct dc_rtype *rt = registry_find_any(dc, "", "configmaps");
	struct json_object **objs = NULL;
	size_t n = 0, off = 0;

	buf[0] = '\0';
	ck_assert_int_eq(coll_list(rt->coll, "default", NULL, &objs, &n), 0);
	for (size_t i = 0; i < n; i++) {
		struct json_object *refs = kc_json_get(objs[i], "metadata", "ownerReferences");

		off += (size_t)snprintf(buf + off, size - off, "%s%s", off > 0 ? " " : "",
		    kc_json_str(objs[i], "metadata", "name"));
		for (size_t j = 0; refs != NULL && j < json_object_array_length(refs); j++)
			off += (size_t)snprintf(buf + off, size - off, "%s%s", j == 0 ? "<" : ",",
			    name_of_uid(g, kc_json_str(json_object_array_get_idx(refs, j),
			    "uid")));
		if (kc_json_get(objs[i], "metadata", "deletionTimestamp") != NULL)
			off += (size_t)snprintf(buf + off, size - off, "*");
	}
	objs_free(objs, n);
}

START_TEST(gc_table)
{
	const struct gc_case *c = &gc_cases[_i];
	struct graph g = { 0 };
	char got[512], target[256];

	for (size_t i = 0; i < KC_ARRAY_SIZE(c->objs) && c->objs[i] != NULL; i++)
		create_spec(&g, c->objs[i]);
	settle(100);
	if (c->del != NULL) {
		(void)snprintf(target, sizeof(target), "%s/%s%s%s", CM_PATH, c->del,
		    c->policy[0] != '\0' ? "?propagationPolicy=" : "", c->policy);
		expect(DC_DELETE, target, NULL, 200);
	}
	settle(5000);
	describe(&g, got, sizeof(got));
	ck_assert_msg(strcmp(got, c->want) == 0, "%s: left \"%s\", want \"%s\"", c->name, got,
	    c->want);
}
END_TEST

/* The finalizers the collector adds, and the wait kubectl sees. */
START_TEST(foreground_finalizer_and_release)
{
	struct graph g = { 0 };
	struct json_object *o;
	char got[256];

	create_spec(&g, "a");
	create_spec(&g, "b<a!+example.com/hold");
	o = call(DC_DELETE, CM_PATH "/a", "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\","
	    "\"propagationPolicy\":\"Foreground\"}", NULL, 200);
	/* The reply is the owner, still there, with the collector's finalizer. */
	ck_assert_ptr_nonnull(kc_json_get(o, "metadata", "deletionTimestamp"));
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	    kc_json_get(o, "metadata", "finalizers"), 0)), "foregroundDeletion");
	json_object_put(o);
	settle(5000);
	describe(&g, got, sizeof(got));
	ck_assert_str_eq(got, "a* b<a*");
	ck_assert_uint_eq(gc_dependents(dc, g.uids[0]), 1);
	/* Once the dependent's own finalizer goes, both go. */
	expect(DC_PATCH, CM_PATH "/b", "{\"metadata\":{\"finalizers\":null}}", 200);
	settle(5000);
	describe(&g, got, sizeof(got));
	ck_assert_str_eq(got, "");
	ck_assert_uint_eq(gc_dependents(dc, g.uids[0]), 0);
}
END_TEST

START_TEST(orphan_finalizer)
{
	struct graph g = { 0 };
	struct json_object *o;
	char got[256];

	create_spec(&g, "a");
	create_spec(&g, "b<a");
	/* The deprecated orphanDependents=true means Orphan. */
	o = call(DC_DELETE, CM_PATH "/a?orphanDependents=true", NULL, NULL, 200);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	    kc_json_get(o, "metadata", "finalizers"), 0)), "orphan");
	json_object_put(o);
	settle(100);
	describe(&g, got, sizeof(got));
	ck_assert_str_eq(got, "b");
}
END_TEST

/* A dangling owner is trusted for GC_DANGLING_MS (a create race). */
START_TEST(dangling_owner_waits)
{
	struct graph g = { 0 };
	char got[256];

	create_spec(&g, "b<~");
	settle(500);
	describe(&g, got, sizeof(got));
	ck_assert_str_eq(got, "b<~");
	settle(5000);
	describe(&g, got, sizeof(got));
	ck_assert_str_eq(got, "");
}
END_TEST

/* Kinds that are not served are not guessed at; invalid scopes are left alone. */
START_TEST(unknown_and_invalid_owners)
{
	struct json_object *o;
	char body[512];

	expect(DC_POST, CM_PATH, "{\"metadata\":{\"name\":\"w\",\"ownerReferences\":[{"
	    "\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"name\":\"w1\","
	    "\"uid\":\"" GHOST_UID "\"}]}}", 201);
	o = call(DC_POST, CM_PATH, "{\"metadata\":{\"name\":\"owner\"}}", NULL, 201);
	/* A cluster-scoped object naming a namespaced owner. */
	(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"bad-scope\","
	    "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":"
	    "\"owner\",\"uid\":\"%s\"}]}}", kc_json_str(o, "metadata", "uid"));
	json_object_put(o);
	expect(DC_POST, "/api/v1/namespaces", body, 201);
	expect(DC_DELETE, CM_PATH "/owner", NULL, 200);
	settle(10000);
	ck_assert_ptr_nonnull(stored("configmaps", "default", "w"));
	ck_assert_ptr_nonnull(stored("namespaces", "", "bad-scope"));
	ck_assert_uint_ge(gc_pending(dc), 1);
}
END_TEST

/* A cluster-scoped owner (a Namespace) of objects in another namespace. */
START_TEST(cluster_scoped_owner)
{
	struct json_object *o;
	char body[512];

	o = call(DC_POST, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"team\"}}", NULL,
	    201);
	(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"owned\","
	    "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"name\":"
	    "\"team\",\"uid\":\"%s\",\"controller\":true}]}}", kc_json_str(o, "metadata",
	    "uid"));
	json_object_put(o);
	expect(DC_POST, CM_PATH, body, 201);
	settle(5000);
	ck_assert_ptr_nonnull(stored("configmaps", "default", "owned"));
	expect(DC_DELETE, "/api/v1/namespaces/team", NULL, 200);
	settle(5000);
	ck_assert_ptr_null(stored("namespaces", "", "team"));
	ck_assert_ptr_null(stored("configmaps", "default", "owned"));
}
END_TEST

/* At most one controller reference (422), with upstream's message. */
START_TEST(one_controller)
{
	struct json_object *o;

	o = call(DC_POST, CM_PATH, "{\"metadata\":{\"name\":\"two\",\"ownerReferences\":["
	    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"a\",\"uid\":\"1\","
	    "\"controller\":true},{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"name\":\"b\","
	    "\"uid\":\"2\",\"controller\":true}]}}", NULL, 422);
	ck_assert_msg(strstr(kc_json_str(o, "message"), "Only one reference can have "
	    "Controller set to true. Found \"true\" in references for ConfigMap/a and "
	    "Secret/b") != NULL, "%s", kc_json_str(o, "message"));
	json_object_put(o);
}
END_TEST

/* Objects restored before the collector starts are indexed at start. */
START_TEST(restart_indexes_existing)
{
	struct graph g = { 0 };
	char got[256];

	gc_fini(dc);
	create_spec(&g, "a");
	create_spec(&g, "b<a");
	create_spec(&g, "c<~");
	ck_assert_int_eq(gc_init(dc), 0);
	ck_assert_uint_eq(gc_dependents(dc, g.uids[0]), 1);
	expect(DC_DELETE, CM_PATH "/a", NULL, 200);
	settle(5000);
	describe(&g, got, sizeof(got));
	ck_assert_str_eq(got, "");
}
END_TEST

/*
 * Namespaces
 */

static int
kubelet_keeps(struct dc *d, const struct dc_rtype *rt, const struct json_object *obj)
{
	(void)d;
	(void)rt;
	(void)obj;
	return 0;	/* "the kubelet will finish it" */
}

static const struct json_object *
condition(const struct json_object *ns, const char *type)
{
	const struct json_object *conds = kc_json_get(ns, "status", "conditions");

	for (size_t i = 0; conds != NULL && i < json_object_array_length(conds); i++) {
		const struct json_object *c = json_object_array_get_idx(conds, i);

		if (strcmp(kc_json_str(c, "type"), type) == 0)
			return c;
	}
	return NULL;
}

static void
expect_condition(const struct json_object *ns, const char *type, const char *status,
    const char *reason, const char *message)
{
	const struct json_object *c = condition(ns, type);

	ck_assert_msg(c != NULL, "no condition %s", type);
	ck_assert_str_eq(kc_json_str(c, "status"), status);
	ck_assert_str_eq(kc_json_str(c, "reason"), reason);
	ck_assert_str_eq(kc_json_str(c, "message"), message);
	ck_assert_ptr_nonnull(kc_json_str(c, "lastTransitionTime"));
}

START_TEST(namespace_content_and_conditions)
{
	const struct json_object *ns;
	struct json_object *o;

	dc->hooks.graceful_delete = kubelet_keeps;
	expect(DC_POST, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"t1\"}}", 201);
	expect(DC_POST, "/api/v1/namespaces/t1/configmaps", "{\"metadata\":{\"name\":\"held\","
	    "\"finalizers\":[\"example.com/hold\"]}}", 201);
	expect(DC_POST, "/api/v1/namespaces/t1/configmaps", "{\"metadata\":{\"name\":\"free\"}}",
	    201);
	expect(DC_POST, "/api/v1/namespaces/t1/secrets", "{\"metadata\":{\"name\":\"s\"}}", 201);
	expect(DC_POST, "/api/v1/namespaces/t1/pods", "{\"metadata\":{\"name\":\"p\"},"
	    "\"spec\":{\"nodeName\":\"n1\",\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
	    201);
	o = call(DC_DELETE, "/api/v1/namespaces/t1", NULL, NULL, 200);
	ck_assert_str_eq(kc_json_str(o, "status", "phase"), "Terminating");
	json_object_put(o);
	settle(100);
	ns = stored("namespaces", "", "t1");
	ck_assert_ptr_nonnull(ns);
	ck_assert_ptr_null(stored("configmaps", "t1", "free"));
	ck_assert_ptr_null(stored("secrets", "t1", "s"));
	ck_assert_ptr_null(stored("serviceaccounts", "t1", "default"));
	ck_assert_ptr_nonnull(kc_json_get(stored("configmaps", "t1", "held"), "metadata",
	    "deletionTimestamp"));
	ck_assert_ptr_nonnull(kc_json_get(stored("pods", "t1", "p"), "metadata",
	    "deletionTimestamp"));
	expect_condition(ns, "NamespaceDeletionDiscoveryFailure", "False",
	    "ResourcesDiscovered", "All resources successfully discovered");
	expect_condition(ns, "NamespaceDeletionGroupVersionParsingFailure", "False",
	    "ParsedGroupVersions", "All legacy kube types successfully parsed");
	expect_condition(ns, "NamespaceDeletionContentFailure", "False", "ContentDeleted",
	    "All content successfully deleted, may be waiting on finalization");
	expect_condition(ns, "NamespaceContentRemaining", "True", "SomeResourcesRemain",
	    "Some resources are remaining: configmaps. has 1 resource instances, "
	    "pods. has 1 resource instances");
	expect_condition(ns, "NamespaceFinalizersRemaining", "True", "SomeFinalizerRemain",
	    "Some finalizers are remaining: example.com/hold in 1 resource instances");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	    kc_json_get(ns, "spec", "finalizers"), 0)), "kubernetes");
	/* Nothing new comes in. */
	o = call(DC_POST, "/api/v1/namespaces/t1/configmaps", "{\"metadata\":{\"name\":"
	    "\"late\"}}", NULL, 403);
	ck_assert_str_eq(kc_json_str(o, "message"), "configmaps \"late\" is forbidden: "
	    "unable to create new content in namespace t1 because it is being terminated");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(kc_json_get(o, "details",
	    "causes"), 0), "reason"), "NamespaceTerminating");
	json_object_put(o);
	/* The finalizer goes: the configmap goes, the pod is still held. */
	expect(DC_PATCH, "/api/v1/namespaces/t1/configmaps/held",
	    "{\"metadata\":{\"finalizers\":null}}", 200);
	settle(100);
	ns = stored("namespaces", "", "t1");
	ck_assert_ptr_nonnull(ns);
	expect_condition(ns, "NamespaceContentRemaining", "True", "SomeResourcesRemain",
	    "Some resources are remaining: pods. has 1 resource instances");
	expect_condition(ns, "NamespaceFinalizersRemaining", "False", "ContentRemoved",
	    "All content successfully removed");
	/* The "kubelet" finishes the pod: the namespace is finalized and removed. */
	ck_assert_int_eq(api_delete_object(dc, registry_find_any(dc, "", "pods"), "t1", "p",
	    0), 0);
	settle(100);
	ck_assert_ptr_null(stored("namespaces", "", "t1"));
	expect(DC_GET, "/api/v1/namespaces/t1", NULL, 404);
}
END_TEST

START_TEST(namespace_extra_finalizers)
{
	const struct json_object *ns;

	expect(DC_POST, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"t2\","
	    "\"finalizers\":[\"example.com/meta\"]},\"spec\":{\"finalizers\":[\"kubernetes\","
	    "\"example.com/spec\"]}}", 201);
	expect(DC_DELETE, "/api/v1/namespaces/t2", NULL, 200);
	settle(100);
	/* The controller removes only its own finalizer. */
	ns = stored("namespaces", "", "t2");
	ck_assert_ptr_nonnull(ns);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(ns, "spec", "finalizers")), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	    kc_json_get(ns, "spec", "finalizers"), 0)), "example.com/spec");
	expect_condition(ns, "NamespaceContentRemaining", "False", "ContentRemoved",
	    "All content successfully removed");
	/* Whoever owns the other finalizers releases them. */
	expect(DC_PUT, "/api/v1/namespaces/t2/finalize", "{\"metadata\":{\"name\":\"t2\"},"
	    "\"spec\":{\"finalizers\":[]}}", 200);
	settle(100);
	ck_assert_ptr_nonnull(stored("namespaces", "", "t2"));
	expect(DC_PATCH, "/api/v1/namespaces/t2", "{\"metadata\":{\"finalizers\":null}}", 200);
	settle(100);
	ck_assert_ptr_null(stored("namespaces", "", "t2"));
}
END_TEST

START_TEST(namespace_custom_resources)
{
	ck_assert_int_eq(registry_add(dc, &(struct dc_rtype_def){
	    .group = "trainyard.dev", .version = "v1beta1", .plural = "runs",
	    .singular = "run", .kind = "Run", .namespaced = true, .verbs = DC_VERBS_ALL,
	    .flags = DC_RT_CUSTOM | DC_RT_GENERATION }, NULL), 0);
	expect(DC_POST, "/api/v1/namespaces", "{\"metadata\":{\"name\":\"t3\"}}", 201);
	expect(DC_POST, "/apis/trainyard.dev/v1beta1/namespaces/t3/runs",
	    "{\"apiVersion\":\"trainyard.dev/v1beta1\",\"kind\":\"Run\","
	    "\"metadata\":{\"name\":\"r1\",\"finalizers\":[\"trainyard.dev/cleanup\"]}}", 201);
	expect(DC_DELETE, "/api/v1/namespaces/t3", NULL, 200);
	settle(100);
	expect_condition(stored("namespaces", "", "t3"), "NamespaceContentRemaining", "True",
	    "SomeResourcesRemain", "Some resources are remaining: runs.trainyard.dev has 1 "
	    "resource instances");
	expect(DC_PATCH, "/apis/trainyard.dev/v1beta1/namespaces/t3/runs/r1",
	    "{\"metadata\":{\"finalizers\":null}}", 200);
	settle(100);
	ck_assert_ptr_null(stored("namespaces", "", "t3"));
	expect(DC_GET, "/apis/trainyard.dev/v1beta1/namespaces/t3/runs/r1", NULL, 404);
}
END_TEST

START_TEST(namespace_protected)
{
	struct json_object *o;
	static const char *const names[] = { "default", "kube-system", "kube-public" };
	char target[64], msg[128];

	for (size_t i = 0; i < KC_ARRAY_SIZE(names); i++) {
		(void)snprintf(target, sizeof(target), "/api/v1/namespaces/%s", names[i]);
		o = call(DC_DELETE, target, NULL, NULL, 403);
		(void)snprintf(msg, sizeof(msg), "namespaces \"%s\" is forbidden: this namespace "
		    "may not be deleted", names[i]);
		ck_assert_str_eq(kc_json_str(o, "message"), msg);
		json_object_put(o);
	}
	/* kube-node-lease is not immortal. */
	expect(DC_DELETE, "/api/v1/namespaces/kube-node-lease", NULL, 200);
	settle(100);
	ck_assert_ptr_null(stored("namespaces", "", "kube-node-lease"));
}
END_TEST

START_TEST(namespace_condition_messages)
{
	struct json_object *arr = NULL;
	const struct json_object *c;

	ck_assert_int_eq(namespace_conditions(
	    (const char *const []){ "runs.trainyard.dev", "pods." }, (const size_t []){ 3, 2 },
	    2, (const char *const []){ "z.io/f", "a.io/f" }, (const size_t []){ 1, 2 }, 2,
	    (const char *const []){ "b failed", "a failed" }, 2, &arr), 0);
	ck_assert_uint_eq(json_object_array_length(arr), 5);
	/* Upstream's order of the condition types. */
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(arr, 0), "type"),
	    "NamespaceDeletionDiscoveryFailure");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(arr, 4), "type"),
	    "NamespaceFinalizersRemaining");
	c = json_object_array_get_idx(arr, 2);
	ck_assert_str_eq(kc_json_str(c, "reason"), "ContentDeletionFailed");
	ck_assert_str_eq(kc_json_str(c, "message"),
	    "Failed to delete all resource types, 2 remaining: a failed, b failed");
	c = json_object_array_get_idx(arr, 3);
	ck_assert_str_eq(kc_json_str(c, "message"), "Some resources are remaining: "
	    "pods. has 2 resource instances, runs.trainyard.dev has 3 resource instances");
	c = json_object_array_get_idx(arr, 4);
	ck_assert_str_eq(kc_json_str(c, "status"), "True");
	ck_assert_str_eq(kc_json_str(c, "message"), "Some finalizers are remaining: "
	    "a.io/f in 2 resource instances, z.io/f in 1 resource instances");
	ck_assert_str_eq(kc_json_str(c, "lastTransitionTime"), "1970-01-01T00:00:00Z");
	json_object_put(arr);
	/* Nothing left: every condition False, with the "ok" texts. */
	ck_assert_int_eq(namespace_conditions(NULL, NULL, 0, NULL, NULL, 0, NULL, 0, &arr), 0);
	for (size_t i = 0; i < 5; i++)
		ck_assert_str_eq(kc_json_str(json_object_array_get_idx(arr, i), "status"),
		    "False");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(arr, 3), "message"),
	    "All content successfully removed");
	json_object_put(arr);
}
END_TEST

START_TEST(init_alloc_failures)
{
	struct graph g = { 0 };

	gc_fini(dc);
	namespace_fini(dc);
	create_spec(&g, "a");
	create_spec(&g, "b<a");
	for (size_t i = 0;; i++) {
		int r;

		fail_alloc_after(i);
		r = gc_init(dc);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(plugin_state(dc, &gc_plugin));
		ck_assert_msg(i < 1000, "gc_init never succeeded");
	}
	for (size_t i = 0;; i++) {
		int r;

		fail_alloc_after(i);
		r = namespace_init(dc);
		fail_alloc_after(SIZE_MAX);
		if (r == 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_msg(i < 1000, "namespace_init never succeeded");
	}
	ck_assert_uint_eq(gc_dependents(dc, g.uids[0]), 1);
}
END_TEST

Suite *
dc_gc_suite(void)
{
	Suite *s = suite_create("dc_gc");
	TCase *tc = tcase_create("gc");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, gc_table, 0, (int)KC_ARRAY_SIZE(gc_cases));
	tcase_add_test(tc, foreground_finalizer_and_release);
	tcase_add_test(tc, orphan_finalizer);
	tcase_add_test(tc, dangling_owner_waits);
	tcase_add_test(tc, unknown_and_invalid_owners);
	tcase_add_test(tc, cluster_scoped_owner);
	tcase_add_test(tc, one_controller);
	tcase_add_test(tc, restart_indexes_existing);
	tcase_add_test(tc, init_alloc_failures);
	suite_add_tcase(s, tc);
	tc = tcase_create("namespace");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, namespace_content_and_conditions);
	tcase_add_test(tc, namespace_extra_finalizers);
	tcase_add_test(tc, namespace_custom_resources);
	tcase_add_test(tc, namespace_protected);
	tcase_add_test(tc, namespace_condition_messages);
	suite_add_tcase(s, tc);
	return s;
}

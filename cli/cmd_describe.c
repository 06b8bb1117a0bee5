/*
 * cmd_describe.c: "kubectl trainyard describe RUN": a Run for people: its
 * state, the session history (status.history), the failed nodes with exit
 * codes and termination messages (status.failedNodes), the conditions,
 * while it waits to start the PodGroup's state and the scheduler's or the
 * quota's message, and its Events. -o json|yaml|name prints the Run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/str.h>

#include "cli.h"
#include "ops.h"

#define DESCRIBE_EVENTS_MAX	1000

static const char help[] =
    "Show a Run for people: state, session history, failed nodes with their exit codes\n"
    "and messages, conditions, what a waiting session waits for (the PodGroup, the\n"
    "scheduler's message, the project's quota) and the Run's Events.\n"
    "\n"
    "Usage: kubectl trainyard describe RUN [-o json|yaml|name]\n"
    "\n"
    "  -o FORMAT   print the Run itself instead\n"
    "\n"
    "Examples:\n"
    "  kubectl trainyard describe llama\n"
    "  kubectl trainyard describe llama -n team-a -o yaml\n";

static const struct kc_resource res_podgroups[] = {
	{ .group = "scheduling.x-k8s.io", .version = "v1alpha1", .resource = "podgroups",
	  .kind = "PodGroup", .namespaced = true },
	{ .group = "scheduling.sigs.k8s.io", .version = "v1alpha1", .resource = "podgroups",
	  .kind = "PodGroup", .namespaced = true },
};

static const char *
or_dash(const char *s)
{
	return s != NULL && s[0] != '\0' ? s : "-";
}

/* "2026-11-29T08:50:00Z (2m ago)", or "-". */
static void
when(const char *t, time_t now, char *buf, size_t size)
{
	char age[KC_DURATION_HUMAN_MAX];

	if (t == NULL) {
		(void)kc_strlcpy(buf, "-", size);
		return;
	}
	ops_age(t, now, age, sizeof(age));
	(void)snprintf(buf, size, "%s (%s ago)", t, age);
}

/* The duration from 'a' to 'b' (or now), or "-". */
static void
span(const char *a, const char *b, time_t now, char *buf, size_t size)
{
	time_t ta, tb = now;

	if (a == NULL || kc_time_parse(a, &ta) < 0 || (b != NULL && kc_time_parse(b, &tb) < 0)) {
		(void)kc_strlcpy(buf, "-", size);
		return;
	}
	kc_duration_human((int64_t)tb - (int64_t)ta, buf, size);
}

static void
field(const char *name, const char *value)
{
	(void)printf("%-14s%s\n", name, or_dash(value));
}

/* Text with each line indented, control characters other than newlines as spaces. */
static void
print_indented(const char *text, const char *indent)
{
	(void)fputs(indent, stdout);
	for (const char *p = text; *p != '\0'; p++) {
		if (*p == '\n') {
			if (p[1] != '\0') {
				(void)fputc('\n', stdout);
				(void)fputs(indent, stdout);
			}
		} else
			(void)fputc((unsigned char)*p < 0x20 || *p == 0x7f ? ' ' : *p, stdout);
	}
	(void)fputc('\n', stdout);
}

static int
print_state(const struct json_object *run, time_t now)
{
	const struct json_object *st = kc_json_get(run, "status");
	char buf[256], t[96];

	field("Name:", kc_json_str(run, "metadata", "name"));
	field("Namespace:", kc_json_str(run, "metadata", "namespace"));
	field("Phase:", kc_json_str(st, "phase") != NULL ? kc_json_str(st, "phase") :
	    "Pending");
	field("Reason:", kc_json_str(st, "reason"));
	field("Message:", kc_json_str(st, "message"));
	(void)snprintf(buf, sizeof(buf), "%lld (spec.session %lld)%s",
	    (long long)kc_json_int(st, 0, "session"),
	    (long long)kc_json_int(run, 1, "spec", "session"),
	    kc_json_bool(run, false, "spec", "suspend") ? "; suspended (spec.suspend)" : "");
	field("Session:", buf);
	(void)snprintf(buf, sizeof(buf), "%lld (policy %s, limit %lld)",
	    (long long)kc_json_int(st, 0, "restarts"),
	    or_dash(kc_json_str(run, "spec", "restart", "policy")),
	    (long long)kc_json_int(run, 3, "spec", "restart", "limit"));
	field("Restarts:", buf);
	if (kc_json_str(st, "readyNodes") != NULL)
		(void)kc_strlcpy(t, kc_json_str(st, "readyNodes"), sizeof(t));
	else
		(void)snprintf(t, sizeof(t), "0/%lld", (long long)kc_json_int(run, 0, "spec",
		    "nodes"));
	(void)snprintf(buf, sizeof(buf), "%s ready (pending %lld, running %lld, succeeded "
	    "%lld, failed %lld)", t,
	    (long long)kc_json_int(st, 0, "nodes", "pending"),
	    (long long)kc_json_int(st, 0, "nodes", "running"),
	    (long long)kc_json_int(st, 0, "nodes", "succeeded"),
	    (long long)kc_json_int(st, 0, "nodes", "failed"));
	field("Nodes:", buf);
	(void)snprintf(buf, sizeof(buf), "%lld", (long long)kc_json_int(st, 0, "gpus"));
	field("GPUs:", buf);
	field("Profile:", kc_json_str(run, "spec", "profile"));
	field("Image:", kc_json_str(run, "spec", "container", "image"));
	when(kc_json_str(st, "sessionStartTime"), now, t, sizeof(t));
	field("Started:", t);
	when(kc_json_str(st, "sessionEndTime"), now, t, sizeof(t));
	field("Ended:", t);
	when(kc_json_str(run, "metadata", "creationTimestamp"), now, t, sizeof(t));
	field("Created:", t);
	return CLI_OK;
}

/* A row of the session table: 'e' has session, phase, reason, startTime, endTime. */
static int
history_row(struct ops_table *t, const struct json_object *e, const char *start,
    const char *end, time_t now)
{
	char sess[24], sa[KC_DURATION_HUMAN_MAX + 8], ea[KC_DURATION_HUMAN_MAX + 8];
	char d[KC_DURATION_HUMAN_MAX];

	(void)snprintf(sess, sizeof(sess), "%lld", (long long)kc_json_int(e, 0, "session"));
	ops_age(start, now, d, sizeof(d));
	(void)snprintf(sa, sizeof(sa), "%s ago", d);
	ops_age(end, now, d, sizeof(d));
	(void)snprintf(ea, sizeof(ea), "%s ago", d);
	span(start, end, now, d, sizeof(d));
	return ops_table_add(t, (const char *const[]){ sess,
	    kc_json_str(e, "phase") != NULL ? kc_json_str(e, "phase") : "Pending",
	    or_dash(kc_json_str(e, "reason")), start != NULL ? sa : "-", end != NULL ? ea : "-",
	    d });
}

/* status.history, and the current session when it is not in it yet. */
static int
print_history(const struct json_object *run, time_t now)
{
	const struct json_object *st = kc_json_get(run, "status");
	struct json_object *h = st != NULL ? kc_json_arr_of(st, "history") : NULL;
	int64_t cur = kc_json_int(st, 0, "session"), last = 0;
	size_t n = h != NULL ? json_object_array_length(h) : 0;
	struct ops_table t;
	int r;

	(void)printf("\nSessions:\n");
	for (size_t i = 0; i < n; i++)
		last = KC_MAX(last, kc_json_int(json_object_array_get_idx(h, i), 0, "session"));
	if (n == 0 && cur == 0) {
		(void)printf("  (none yet)\n");
		return CLI_OK;
	}
	ops_table_init(&t, 6, "  ");
	r = ops_table_add(&t, (const char *const[]){ "SESSION", "PHASE", "REASON", "STARTED",
	    "ENDED", "DURATION" });
	for (size_t i = 0; r == 0 && i < n; i++) {
		const struct json_object *e = json_object_array_get_idx(h, i);

		r = history_row(&t, e, kc_json_str(e, "startTime"), kc_json_str(e, "endTime"),
		    now);
	}
	if (r == 0 && cur > last)
		r = history_row(&t, st, kc_json_str(st, "sessionStartTime"),
		    kc_json_str(st, "sessionEndTime"), now);
	if (r == 0)
		ops_table_print(&t, stdout);
	ops_table_free(&t);
	return r < 0 ? CLI_ERROR : CLI_OK;
}

static int
print_failed(const struct json_object *run)
{
	struct json_object *f = kc_json_get(run, "status");
	struct ops_table t;
	int r;

	f = f != NULL ? kc_json_arr_of(f, "failedNodes") : NULL;
	if (f == NULL || json_object_array_length(f) == 0)
		return CLI_OK;
	(void)printf("\nFailed nodes (session %lld):\n",
	    (long long)kc_json_int(run, 0, "status", "session"));
	ops_table_init(&t, 5, "  ");
	r = ops_table_add(&t, (const char *const[]){ "NODE", "POD", "MACHINE", "EXIT CODE",
	    "REASON" });
	for (size_t i = 0; r == 0 && i < json_object_array_length(f); i++) {
		const struct json_object *e = json_object_array_get_idx(f, i);
		char idx[24], code[24];

		(void)snprintf(idx, sizeof(idx), "%lld", (long long)kc_json_int(e, -1, "index"));
		if (kc_json_int(e, -1, "exitCode") >= 0)
			(void)snprintf(code, sizeof(code), "%lld",
			    (long long)kc_json_int(e, -1, "exitCode"));
		else
			(void)kc_strlcpy(code, "-", sizeof(code));
		r = ops_table_add(&t, (const char *const[]){ idx, or_dash(kc_json_str(e, "pod")),
		    or_dash(kc_json_str(e, "node")), code, or_dash(kc_json_str(e, "reason")) });
	}
	if (r == 0)
		ops_table_print(&t, stdout);
	ops_table_free(&t);
	for (size_t i = 0; r == 0 && i < json_object_array_length(f); i++) {
		const struct json_object *e = json_object_array_get_idx(f, i);
		const char *msg = kc_json_str(e, "message");

		if (msg == NULL || msg[0] == '\0')
			continue;
		(void)printf("  node %lld (%s) said:\n", (long long)kc_json_int(e, -1, "index"),
		    or_dash(kc_json_str(e, "pod")));
		print_indented(msg, "    ");
	}
	return r < 0 ? CLI_ERROR : CLI_OK;
}

static int
print_conditions(const struct json_object *run, time_t now)
{
	struct json_object *c = kc_json_get(run, "status");
	struct ops_table t;
	int r;

	c = c != NULL ? kc_json_arr_of(c, "conditions") : NULL;
	(void)printf("\nConditions:\n");
	if (c == NULL || json_object_array_length(c) == 0) {
		(void)printf("  (none yet)\n");
		return CLI_OK;
	}
	ops_table_init(&t, 5, "  ");
	r = ops_table_add(&t, (const char *const[]){ "TYPE", "STATUS", "REASON", "AGE",
	    "MESSAGE" });
	for (size_t i = 0; r == 0 && i < json_object_array_length(c); i++) {
		const struct json_object *e = json_object_array_get_idx(c, i);
		char age[KC_DURATION_HUMAN_MAX];

		ops_age(kc_json_str(e, "lastTransitionTime"), now, age, sizeof(age));
		r = ops_table_add(&t, (const char *const[]){ or_dash(kc_json_str(e, "type")),
		    or_dash(kc_json_str(e, "status")), or_dash(kc_json_str(e, "reason")), age,
		    kc_json_str(e, "message") });
	}
	if (r == 0)
		ops_table_print(&t, stdout);
	ops_table_free(&t);
	return r < 0 ? CLI_ERROR : CLI_OK;
}

/* While a session waits to start: the PodGroup, the scheduler, the quota. */
static void
print_waiting(struct cli *c, const struct json_object *run, time_t now)
{
	const char *phase = kc_json_str(run, "status", "phase");
	const char *name = kc_json_str(run, "metadata", "name");
	const struct json_object *sched = ops_condition(run, "Scheduled");
	const struct json_object *quota = ops_condition(run, "QuotaReserved");
	bool any = false;

	if (phase != NULL && strcmp(phase, "Pending") != 0)
		return;
	if (quota != NULL && kc_json_str(quota, "status") != NULL &&
	    strcmp(kc_json_str(quota, "status"), "False") == 0 &&
	    kc_json_str(quota, "reason") != NULL &&
	    strcmp(kc_json_str(quota, "reason"), "Released") != 0) {
		(void)printf("\nWaiting:\n  quota (%s): %s\n", kc_json_str(quota, "reason"),
		    or_dash(kc_json_str(quota, "message")));
		any = true;
	}
	for (size_t i = 0; name != NULL && i < KC_ARRAY_SIZE(res_podgroups); i++) {
		struct json_object *pg = NULL;
		struct kc_status st = { 0 };
		char since[KC_DURATION_HUMAN_MAX + 16] = "";

		if (kc_client_get(c->cl, &(struct kc_get_opts){ .res = &res_podgroups[i],
		    .ns = c->ns, .name = name }, &pg, &st) < 0)
			continue;
		if (kc_json_str(pg, "status", "scheduleStartTime") != NULL) {
			char d[KC_DURATION_HUMAN_MAX];

			ops_age(kc_json_str(pg, "status", "scheduleStartTime"), now, d, sizeof(d));
			(void)snprintf(since, sizeof(since), ", waiting for %s", d);
		}
		(void)printf("%s  PodGroup %s (%s): %s, %lld of %lld members running%s\n",
		    any ? "" : "\nWaiting:\n", name, res_podgroups[i].group,
		    or_dash(kc_json_str(pg, "status", "phase")),
		    (long long)kc_json_int(pg, 0, "status", "running"),
		    (long long)kc_json_int(pg, 0, "spec", "minMember"), since);
		any = true;
		json_object_put(pg);
		break;
	}
	if (sched != NULL && kc_json_str(sched, "status") != NULL &&
	    strcmp(kc_json_str(sched, "status"), "True") != 0 &&
	    kc_json_str(sched, "message") != NULL) {
		(void)printf("%s  scheduler (%s): %s\n", any ? "" : "\nWaiting:\n",
		    or_dash(kc_json_str(sched, "reason")), kc_json_str(sched, "message"));
	}
}

static const char *
event_time(const struct json_object *e)
{
	const char *t = kc_json_str(e, "lastTimestamp");

	if (t == NULL)
		t = kc_json_str(e, "eventTime");
	if (t == NULL)
		t = kc_json_str(e, "metadata", "creationTimestamp");
	return t;
}

static int
event_cmp(const void *a, const void *b)
{
	const char *ta = event_time(*(struct json_object *const *)a);
	const char *tb = event_time(*(struct json_object *const *)b);
	time_t x = 0, y = 0;

	if (ta == NULL || kc_time_parse(ta, &x) < 0)
		x = 0;
	if (tb == NULL || kc_time_parse(tb, &y) < 0)
		y = 0;
	return x < y ? -1 : x > y;
}

static int
print_events(struct cli *c, const struct json_object *run, time_t now)
{
	const char *name = kc_json_str(run, "metadata", "name");
	const char *uid = kc_json_str(run, "metadata", "uid");
	struct json_object *list = NULL, *items, **ev = NULL;
	struct kc_status st = { 0 };
	struct ops_table t;
	char sel[KC_NAME_MAX + 64];
	size_t n = 0;
	int r;

	(void)printf("\nEvents:\n");
	(void)snprintf(sel, sizeof(sel), "involvedObject.name=%s,involvedObject.kind=Run",
	    name != NULL ? name : "");
	r = kc_client_list_all(c->cl, &(struct kc_list_opts){ .res = &kc_res_events,
	    .ns = c->ns, .field_selector = sel, .max_items = DESCRIBE_EVENTS_MAX }, &list, &st);
	if (r < 0) {
		(void)printf("  (cannot list them: %s)\n", st.message[0] != '\0' ? st.message :
		    kc_strerror(r));
		return CLI_OK;
	}
	items = kc_json_arr_of(list, "items");
	if (items != NULL && json_object_array_length(items) > 0 &&
	    (ev = kc_calloc(json_object_array_length(items), sizeof(*ev))) == NULL) {
		json_object_put(list);
		return cli_error(c, "out of memory");
	}
	for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++) {
		struct json_object *e = json_object_array_get_idx(items, i);
		const char *euid = kc_json_str(e, "involvedObject", "uid");

		/* An earlier Run of the same name is another object. */
		if (uid != NULL && euid != NULL && euid[0] != '\0' && strcmp(uid, euid) != 0)
			continue;
		ev[n++] = e;
	}
	if (n == 0) {
		(void)printf("  (none)\n");
		kc_free(ev);
		json_object_put(list);
		return CLI_OK;
	}
	qsort(ev, n, sizeof(*ev), event_cmp);
	ops_table_init(&t, 5, "  ");
	r = ops_table_add(&t, (const char *const[]){ "TYPE", "REASON", "AGE", "FROM",
	    "MESSAGE" });
	for (size_t i = 0; r == 0 && i < n; i++) {
		const struct json_object *e = ev[i];
		int64_t count = kc_json_int(e, 1, "count");
		const char *from = kc_json_str(e, "source", "component");
		char age[KC_DURATION_HUMAN_MAX], first[KC_DURATION_HUMAN_MAX], a[96];

		ops_age(event_time(e), now, age, sizeof(age));
		if (count > 1) {
			ops_age(kc_json_str(e, "firstTimestamp") != NULL ?
			    kc_json_str(e, "firstTimestamp") : event_time(e), now, first,
			    sizeof(first));
			(void)snprintf(a, sizeof(a), "%s (x%lld over %s)", age, (long long)count,
			    first);
		} else
			(void)kc_strlcpy(a, age, sizeof(a));
		if (from == NULL)
			from = kc_json_str(e, "reportingComponent");
		r = ops_table_add(&t, (const char *const[]){ or_dash(kc_json_str(e, "type")),
		    or_dash(kc_json_str(e, "reason")), a, or_dash(from),
		    kc_json_str(e, "message") });
	}
	if (r == 0)
		ops_table_print(&t, stdout);
	ops_table_free(&t);
	kc_free(ev);
	json_object_put(list);
	return r < 0 ? CLI_ERROR : CLI_OK;
}

static int
run(struct cli *c, int argc, char **argv)
{
	struct json_object *obj = NULL;
	time_t now;
	int nargs, dd, r;
	bool done;

	if ((r = cli_parse(c, &cli_cmd_describe, NULL, argc, argv, &nargs, &dd, &done)) !=
	    CLI_OK || done)
		return r;
	if (nargs != 1)
		return cli_error(c, "describe takes one Run's name; see %s describe --help",
		    c->prog);
	if ((r = cli_connect(c)) != CLI_OK || (r = cli_get_run(c, argv[1], &obj)) != CLI_OK)
		return r;
	if (c->output != NULL && strcmp(c->output, "wide") != 0) {
		r = cli_print_object(c, obj, "run.trainyard.dev");
		json_object_put(obj);
		return r;
	}
	now = kc_clock_wall();
	if ((r = print_state(obj, now)) == CLI_OK && (r = print_history(obj, now)) == CLI_OK &&
	    (r = print_failed(obj)) == CLI_OK && (r = print_conditions(obj, now)) == CLI_OK) {
		print_waiting(c, obj, now);
		r = print_events(c, obj, now);
	}
	json_object_put(obj);
	return r;
}

const struct cli_cmd cli_cmd_describe = {
	.name = "describe",
	.summary = "a Run for people: sessions, failed nodes, conditions, events",
	.help = help,
	.run = run,
};

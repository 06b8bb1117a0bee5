/*
 * cmd_list.c: "kubectl trainyard list [-A] [--project P] [-w]": the Runs
 * of a namespace, of every namespace, or of a Project's namespaces, as a
 * table (NAME, PHASE, SESSION, NODES, GPUS, AGE, REASON; NAMESPACE first
 * when more than one namespace is listed), or -o json|yaml|name.
 *
 * Lists are paged (limit/continue), so a big cluster never arrives in one
 * answer; a continue token that expired mid-way starts the list again.
 * -w then watches from the list's resourceVersion and prints a line per
 * change, resuming where it stopped and listing again on 410 Expired;
 * Ctrl-C ends it (exit 0).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/sbuf.h>
#include <kc/str.h>
#include <kc/watch.h>

#include "cli.h"
#include "ops.h"

#define LIST_PAGE		500
#define LIST_NAMESPACES_MAX	64	/* a Project has at most 16 */
#define LIST_TRIES		3
#define LIST_RETRY_MAX_MS	5000

static const char help[] =
    "List Runs: phase, session, nodes ready, GPUs, age and why the last session ended.\n"
    "\n"
    "Usage: kubectl trainyard list [-n NS | -A | --project P] [-w] [-o json|yaml|name]\n"
    "\n"
    "  -A, --all-namespaces  the Runs of every namespace\n"
    "  --project P           the Runs of Project P's namespaces (its spec.namespaces, or\n"
    "                        the namespaces labelled trainyard.dev/project=P when the\n"
    "                        Project cannot be read)\n"
    "  -w, --watch           after the list, print a line per change until Ctrl-C\n"
    "  -o FORMAT             json or yaml (a List), name (run.trainyard.dev/NAME)\n"
    "\n"
    "AGE is kubectl's (5s, 3m20s, 2h, 4d). NODES is ready/total of the session.\n"
    "\n"
    "Examples:\n"
    "  kubectl trainyard list\n"
    "  kubectl trainyard list -A\n"
    "  kubectl trainyard list --project llm -w\n"
    "  kubectl trainyard list -o name | xargs -n1 kubectl trainyard wait\n";

static const struct kc_resource res_projects = {
	.group = "trainyard.dev",
	.version = "v1beta1",
	.resource = "projects",
	.kind = "Project",
	.namespaced = false,
};

struct lister {
	struct cli		*c;
	const char		*ns[LIST_NAMESPACES_MAX];	/* NULL entry: all */
	size_t			 nns;
	bool			 with_ns;
	bool			 objects;	/* -o json|yaml: keep the items */
	bool			 names;		/* -o name */
	struct ops_table	 table;
	struct json_object	*items;		/* -o json|yaml */
	size_t			 count;
	char			 rv[KC_RV_MAX];	/* to watch from (one namespace, or all) */
	char			*owned[LIST_NAMESPACES_MAX];	/* namespace names we copied */
	char			 last[1024];	/* -w: the cells of the last line printed */
};

static int
add_run(struct lister *l, struct json_object *run, time_t now)
{
	struct ops_row row;

	l->count++;
	if (l->objects)
		return kc_json_append(l->items, json_object_get(run));
	if (l->names) {
		(void)printf("run.trainyard.dev/%s\n", kc_json_str(run, "metadata", "name") != NULL ?
		    kc_json_str(run, "metadata", "name") : "");
		return 0;
	}
	ops_list_row(run, now, l->with_ns, NULL, &row);
	return ops_table_add(&l->table, row.cell);
}

static void
lister_reset(struct lister *l)
{
	struct ops_row header;

	ops_table_free(&l->table);
	ops_table_init(&l->table, l->with_ns ? OPS_LIST_COLS : OPS_LIST_COLS - 1, "");
	ops_list_header(l->with_ns, &header);
	if (!l->objects && !l->names && ops_table_add(&l->table, header.cell) < 0)
		l->table.nrows = 0;
	json_object_put(l->items);
	l->items = l->objects ? json_object_new_array() : NULL;
	l->count = 0;
}

/* Lists the Runs of one namespace (NULL: all), page by page. */
static int
list_ns(struct lister *l, const char *ns, struct kc_status *st)
{
	char cont[4096] = "";
	time_t now = kc_clock_wall();
	bool first = true;
	int r;

	do {
		struct json_object *page = NULL, *items;
		const char *next;

		r = kc_client_list(l->c->cl, &(struct kc_list_opts){ .res = &cli_res_runs,
		    .ns = ns, .limit = LIST_PAGE, .cont = cont[0] != '\0' ? cont : NULL },
		    &page, st);
		if (r < 0)
			return r;
		/* The first namespace's: a later one's could skip changes of the earlier. */
		if (first && l->rv[0] == '\0' &&
		    kc_json_str(page, "metadata", "resourceVersion") != NULL)
			(void)kc_strlcpy(l->rv, kc_json_str(page, "metadata", "resourceVersion"),
			    sizeof(l->rv));
		first = false;
		items = kc_json_arr_of(page, "items");
		for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++)
			if ((r = add_run(l, json_object_array_get_idx(items, i), now)) < 0) {
				json_object_put(page);
				return r;
			}
		next = kc_json_str(page, "metadata", "continue");
		if (next != NULL && strlen(next) >= sizeof(cont)) {
			json_object_put(page);
			return -E2BIG;
		}
		(void)kc_strlcpy(cont, next != NULL ? next : "", sizeof(cont));
		json_object_put(page);
	} while (cont[0] != '\0');
	return 0;
}

/* Lists every namespace of the lister, starting again when a continue token expired. */
static int
list_all(struct lister *l)
{
	char what[160];
	int r = KC_EEXPIRED;

	for (int t = 0; t < LIST_TRIES && r == KC_EEXPIRED; t++) {
		struct kc_status st = { 0 };

		lister_reset(l);
		l->rv[0] = '\0';
		if (l->objects && l->items == NULL)
			return cli_error(l->c, "out of memory");
		for (size_t i = 0; i < l->nns; i++) {
			r = list_ns(l, l->ns[i], &st);
			if (r == KC_ENOTFOUND && l->ns[i] != NULL)
				r = 0;	/* a Project's namespace not made yet */
			if (r < 0)
				break;
		}
		if (r < 0 && r != KC_EEXPIRED) {
			if (r == -ENOMEM || r == -E2BIG)
				return cli_error(l->c, "listing runs: %s", kc_strerror(r));
			(void)snprintf(what, sizeof(what), "list runs%s%s",
			    l->nns == 1 && l->ns[0] == NULL ? " in all namespaces" : "",
			    l->nns > 1 ? " of the project's namespaces" : "");
			if (r == KC_EFORBIDDEN && l->nns == 1 && l->ns[0] == NULL) {
				(void)fprintf(stderr, "error: list runs in all namespaces: not "
				    "allowed: %s\n  (\"kubectl auth can-i list runs.trainyard.dev "
				    "-A\" says no; list one namespace with -n NS)\n", st.message);
				return CLI_ERROR;
			}
			return cli_api_error(l->c, what, r, &st);
		}
	}
	if (r < 0)
		return cli_error(l->c, "the list kept changing; try again");
	return CLI_OK;
}

static int
print_list(struct lister *l)
{
	struct json_object *list;
	int r;

	if (l->names)
		return CLI_OK;
	if (!l->objects) {
		if (l->count == 0) {
			if (l->nns == 1 && l->ns[0] == NULL)
				(void)fprintf(stderr, "No runs found.\n");
			else if (l->nns == 1)
				(void)fprintf(stderr, "No runs found in namespace %s.\n", l->ns[0]);
			else
				(void)fprintf(stderr, "No runs found in the project's %zu "
				    "namespaces.\n", l->nns);
			return CLI_OK;
		}
		ops_table_print(&l->table, stdout);
		return CLI_OK;
	}
	if ((list = json_object_new_object()) == NULL ||
	    kc_json_set_str(list, "apiVersion", "v1") < 0 ||
	    kc_json_set_str(list, "kind", "List") < 0 ||
	    kc_json_put(list, "metadata", json_object_new_object()) < 0 ||
	    kc_json_set_str(kc_json_get(list, "metadata"), "resourceVersion", "") < 0 ||
	    kc_json_put(list, "items", json_object_get(l->items)) < 0) {
		json_object_put(list);
		return cli_error(l->c, "out of memory");
	}
	r = cli_print_object(l->c, list, "list");
	json_object_put(list);
	return r;
}

/* The namespaces of Project 'name' into the lister. */
static int
project_namespaces(struct lister *l, const char *name)
{
	struct json_object *p = NULL, *nss = NULL;
	struct kc_status st = { 0 }, st2 = { 0 };
	char what[KC_NAME_MAX + 32], sel[KC_NAME_MAX + 32];
	int r, r2;

	if ((r = kc_client_check_name(name, &st)) < 0)
		return cli_error(l->c, "--project \"%s\": %s", name, st.message);
	r = kc_client_get(l->c->cl, &(struct kc_get_opts){ .res = &res_projects,
	    .name = name }, &p, &st);
	if (r == 0) {
		struct json_object *list = kc_json_get(p, "spec");

		list = list != NULL ? kc_json_arr_of(list, "namespaces") : NULL;
		for (size_t i = 0; list != NULL && i < json_object_array_length(list) &&
		    l->nns < LIST_NAMESPACES_MAX; i++) {
			const char *ns = kc_json_str(json_object_array_get_idx(list, i), "name");

			if (ns == NULL || kc_client_check_namespace(ns, NULL) < 0)
				continue;
			if ((l->owned[l->nns] = kc_strdup(ns)) == NULL) {
				json_object_put(p);
				return cli_error(l->c, "out of memory");
			}
			l->ns[l->nns] = l->owned[l->nns];
			l->nns++;
		}
		json_object_put(p);
		if (l->nns == 0)
			return cli_error(l->c, "project %s has no namespaces", name);
		return CLI_OK;
	}
	if (r == KC_ENOTFOUND) {
		(void)fprintf(stderr, "error: project \"%s\" not found (\"kubectl get projects\" "
		    "lists them)\n", name);
		return CLI_ERROR;
	}
	/* Researchers may not read Projects: the namespaces' label says the same. */
	(void)snprintf(sel, sizeof(sel), "trainyard.dev/project=%s", name);
	r2 = kc_client_list_all(l->c->cl, &(struct kc_list_opts){ .res = &kc_res_namespaces,
	    .label_selector = sel, .max_items = LIST_NAMESPACES_MAX }, &nss, &st2);
	if (r2 < 0) {
		(void)snprintf(what, sizeof(what), "get project %s", name);
		return cli_api_error(l->c, what, r, &st);
	}
	{
		struct json_object *items = kc_json_arr_of(nss, "items");

		for (size_t i = 0; items != NULL && i < json_object_array_length(items) &&
		    l->nns < LIST_NAMESPACES_MAX; i++) {
			const char *ns = kc_json_str(json_object_array_get_idx(items, i),
			    "metadata", "name");

			if (ns == NULL || (l->owned[l->nns] = kc_strdup(ns)) == NULL)
				continue;
			l->ns[l->nns] = l->owned[l->nns];
			l->nns++;
		}
	}
	json_object_put(nss);
	if (l->nns == 0)
		return cli_error(l->c, "project %s: no namespace is labelled %s", name, sel);
	return CLI_OK;
}

/* ---- -w ------------------------------------------------------------------ */

static bool
watched_ns(const struct lister *l, const char *ns)
{
	if (l->nns == 1)
		return true;
	for (size_t i = 0; i < l->nns; i++)
		if (ns != NULL && strcmp(l->ns[i], ns) == 0)
			return true;
	return false;
}

static int
on_event(void *arg, enum kc_watch_type type, struct json_object *obj)
{
	struct lister *l = arg;
	struct ops_row row;

	if (type == KC_WATCH_BOOKMARK ||
	    !watched_ns(l, kc_json_str(obj, "metadata", "namespace")))
		return 0;
	if (l->names)
		(void)printf("run.trainyard.dev/%s\n", kc_json_str(obj, "metadata", "name") !=
		    NULL ? kc_json_str(obj, "metadata", "name") : "");
	else if (l->objects)
		(void)cli_print_object(l->c, obj, "run.trainyard.dev");
	else {
		char key[sizeof(l->last)];
		struct kc_sbuf b;

		ops_list_row(obj, kc_clock_wall(), l->with_ns,
		    type == KC_WATCH_DELETED ? "Deleted" : NULL, &row);
		/* A change the columns do not show (a spec edit) repeats the last line: skip it. */
		kc_sbuf_init(&b, key, sizeof(key));
		for (size_t i = 0; i < row.ncells; i++) {
			if (i + 2 == row.ncells)
				continue;	/* AGE moves on its own */
			kc_sbuf_puts(&b, row.cell[i]);
			kc_sbuf_putc(&b, '\x1f');
		}
		if (!kc_sbuf_truncated(&b) && strcmp(key, l->last) == 0)
			return 0;
		(void)kc_strlcpy(l->last, key, sizeof(l->last));
		ops_table_print_row(&l->table, row.cell, stdout);
	}
	(void)fflush(stdout);
	return 0;
}

static int
watch(struct lister *l)
{
	const char *ns = l->nns == 1 ? l->ns[0] : NULL;
	uint64_t backoff = 250;
	int r;

	if ((r = ops_interrupt_start(l->c->cl, 0)) < 0)
		return cli_error(l->c, "cannot watch for Ctrl-C: %s", kc_strerror(r));
	for (;;) {
		struct kc_watch_result wr = { 0 };
		struct kc_status st = { 0 };

		r = kc_watch_run(l->c->cl, &(struct kc_watch_opts){ .res = &cli_res_runs,
		    .ns = ns, .resource_version = l->rv[0] != '\0' ? l->rv : NULL,
		    .allow_bookmarks = true, .timeout_s = 1800 }, on_event, l, &wr, &st);
		if (wr.resource_version[0] != '\0')
			(void)kc_strlcpy(l->rv, wr.resource_version, sizeof(l->rv));
		if (ops_interrupted()) {
			r = CLI_OK;
			break;
		}
		if (r == KC_EEXPIRED) {
			/* The history is gone: list again (printing every Run), then watch. */
			if ((r = list_all(l)) != CLI_OK)
				break;
			for (size_t i = 1; !l->objects && !l->names && i < l->table.nrows; i++)
				ops_table_print_row(&l->table, (const char *const *)
				    &l->table.cells[i * l->table.ncols], stdout);
			for (size_t i = 0; l->objects && i < json_object_array_length(l->items);
			    i++)
				(void)cli_print_object(l->c, json_object_array_get_idx(l->items, i),
				    "run.trainyard.dev");
			(void)fflush(stdout);
			continue;
		}
		if (r == KC_EFORBIDDEN || r == KC_EUNAUTHORIZED || r == KC_ENOTFOUND ||
		    r == -EINVAL) {
			r = cli_api_error(l->c, ns != NULL ? "watch runs" :
			    "watch runs in all namespaces", r, &st);
			break;
		}
		if (r < 0 && wr.events == 0) {
			(void)kc_clock_sleep_ms(backoff);
			backoff = KC_MIN(backoff * 2, (uint64_t)LIST_RETRY_MAX_MS);
		} else
			backoff = 250;
	}
	ops_interrupt_stop();
	return r;
}

static int
run(struct cli *c, int argc, char **argv)
{
	const char *project = NULL;
	bool watch_flag = false, done;
	const struct cli_flag flags[] = {
		{ "project", 0, CLI_FLAG_STR, &project, NULL },
		{ "watch", 'w', CLI_FLAG_BOOL, &watch_flag, NULL },
		{ NULL, 0, 0, NULL, NULL },
	};
	struct lister l = { .c = c };
	int nargs, dd, r;

	if ((r = cli_parse(c, &cli_cmd_list, flags, argc, argv, &nargs, &dd, &done)) !=
	    CLI_OK || done)
		return r;
	if (nargs != 0)
		return cli_error(c, "list takes no arguments; see %s list --help", c->prog);
	if (project != NULL && (c->all_ns || c->ns_flag != NULL))
		return cli_error(c, "--project chooses the namespaces: not with -A or -n");
	if ((r = cli_connect(c)) != CLI_OK)
		return r;
	l.objects = c->output != NULL && (strcmp(c->output, "json") == 0 ||
	    strcmp(c->output, "yaml") == 0);
	l.names = c->output != NULL && strcmp(c->output, "name") == 0;
	if (project != NULL) {
		if ((r = project_namespaces(&l, project)) != CLI_OK)
			goto out;
	} else {
		l.ns[0] = c->all_ns ? NULL : c->ns;
		l.nns = 1;
	}
	l.with_ns = l.nns > 1 || l.ns[0] == NULL;
	if ((r = list_all(&l)) != CLI_OK || (r = print_list(&l)) != CLI_OK)
		goto out;
	(void)fflush(stdout);
	if (watch_flag)
		r = watch(&l);
out:
	ops_table_free(&l.table);
	json_object_put(l.items);
	for (size_t i = 0; i < l.nns; i++)
		kc_free(l.owned[i]);
	return r;
}

const struct cli_cmd cli_cmd_list = {
	.name = "list",
	.summary = "list Runs: phase, session, nodes, GPUs, age, reason",
	.help = help,
	.run = run,
};

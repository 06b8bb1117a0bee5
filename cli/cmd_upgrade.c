/*
 * cmd_upgrade.c: the platform team's view of the API upgrade
 * (docs/upgrade.md).
 *
 * "upgrade check", for each trainyard.dev CRD: the versions it serves and
 * which one stores, status.storedVersions, how many objects there are, and
 * whether every object reads at each served version. The API cannot tell
 * at which version each object is stored; a read at a version other than
 * the storage version converts every object stored otherwise, so it is
 * what shows the conversion webhook answers. Then the runbook's next step.
 *
 * "upgrade migrate" does what "trainyard-controller migrate" does
 * (controller/migrate.c), on the plugin's connection (context, --as): each
 * object written back unchanged at the storage version, its
 * resourceVersion the precondition (a conflict reads it again and
 * retries; a 404 is skipped), managedFields entries of other versions
 * dropped, and only when every object was rewritten the CRD's
 * status.storedVersions set to the storage version alone.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/str.h>

#include "admin.h"
#include "cli.h"

#define UPGRADE_GROUP		"trainyard.dev"
#define UPGRADE_PAGE		100	/* objects per list page */
#define UPGRADE_TRIES		5	/* writes of one object, conflicts included */
#define UPGRADE_RELISTS		3	/* fresh lists after an expired continue token */
#define UPGRADE_MANAGER		"kubectl-trainyard-migrate"

static const char help[] =
    "The API upgrade of Trainyard's custom resources, for the platform team\n"
    "(docs/upgrade.md).\n"
    "\n"
    "Usage: kubectl trainyard upgrade check [-o json|yaml]\n"
    "       kubectl trainyard upgrade migrate [--dry-run]\n"
    "\n"
    "check    for each trainyard.dev CRD: the versions served and the storage version,\n"
    "         status.storedVersions, the number of objects, whether every object reads\n"
    "         at each served version (a read at another version than the storage one\n"
    "         goes through the conversion webhook), and the runbook's next step. Exit\n"
    "         status 0 when every read succeeded, else 5.\n"
    "migrate  rewrites every object at its CRD's storage version (a no-op update;\n"
    "         conflicts retried), then sets status.storedVersions to that version\n"
    "         alone, only when every object was rewritten: the runbook's step 5, as\n"
    "         \"trainyard-controller migrate\". Safe to interrupt and run again. Exit\n"
    "         status 0, or 5 when anything failed.\n"
    "\n"
    "  --dry-run   migrate: show what would be written (dryRun=All)\n"
    "\n"
    "Both need cluster-wide reads of the CRDs and objects; migrate also updates\n"
    "them and the CRDs' status (cluster-admin).\n"
    "\n"
    "Examples:\n"
    "  kubectl trainyard upgrade check\n"
    "  kubectl trainyard upgrade migrate --dry-run\n"
    "  kubectl trainyard upgrade migrate\n";

/* A CRD's resource at one version. */
static void
res_at(const struct json_object *crd, const char *version, struct kc_resource *res)
{
	const char *scope = kc_json_str(crd, "spec", "scope");

	*res = (struct kc_resource){
		.group = kc_json_str(crd, "spec", "group"),
		.version = version,
		.resource = kc_json_str(crd, "spec", "names", "plural"),
		.kind = kc_json_str(crd, "spec", "names", "kind"),
		.namespaced = scope != NULL && strcmp(scope, "Namespaced") == 0,
	};
}

/* The trainyard.dev CRDs, sorted by name as the API server lists them. */
static int
list_crds(struct cli *c, struct json_object **ret, struct json_object **items)
{
	struct kc_status st = { 0 };
	struct json_object *all, *mine;
	int r;

	r = kc_client_list_all(c->cl, &(struct kc_list_opts){
	    .res = &kc_res_customresourcedefinitions }, &all, &st);
	if (r < 0)
		return cli_api_error(c, "list customresourcedefinitions", r, &st);
	if ((mine = json_object_new_array()) == NULL) {
		json_object_put(all);
		return cli_error(c, "out of memory");
	}
	for (size_t i = 0; kc_json_arr_of(all, "items") != NULL &&
	    i < json_object_array_length(kc_json_arr_of(all, "items")); i++) {
		struct json_object *crd = json_object_array_get_idx(kc_json_arr_of(all, "items"),
		    i);
		const char *g = kc_json_str(crd, "spec", "group");

		if (g != NULL && strcmp(g, UPGRADE_GROUP) == 0 &&
		    kc_json_append(mine, json_object_get(crd)) < 0) {
			json_object_put(mine);
			json_object_put(all);
			return cli_error(c, "out of memory");
		}
	}
	*ret = all;
	*items = mine;
	if (json_object_array_length(mine) == 0) {
		json_object_put(mine);
		json_object_put(all);
		return cli_error(c, "no trainyard.dev CustomResourceDefinitions are installed "
		    "(docs/install.md)");
	}
	return CLI_OK;
}

/* Counts the objects readable at 'version' (every page); the error in 'st'. */
static int
count_at(struct cli *c, const struct json_object *crd, const char *version, uint64_t *n,
    struct kc_status *st)
{
	_cleanup_(kc_freep) char *cont = NULL;
	struct kc_resource res;
	int r;

	res_at(crd, version, &res);
	*n = 0;
	do {
		_cleanup_(kc_json_putp) struct json_object *list = NULL;
		struct json_object *items;
		const char *next;

		if ((r = kc_client_list(c->cl, &(struct kc_list_opts){ .res = &res,
		    .limit = 500, .cont = cont }, &list, st)) < 0)
			return r;
		items = kc_json_arr_of(list, "items");
		*n += items != NULL ? json_object_array_length(items) : 0;
		cont = kc_free(cont);
		next = kc_json_str(list, "metadata", "continue");
		if (next != NULL && next[0] != '\0' && (cont = kc_strdup(next)) == NULL)
			return -ENOMEM;
	} while (cont != NULL);
	return 0;
}

static int
check(struct cli *c)
{
	_cleanup_(kc_json_putp) struct json_object *all = NULL, *crds = NULL, *report = NULL;
	bool failed = false, people = c->output == NULL || strcmp(c->output, "wide") == 0;
	int r;

	if ((r = list_crds(c, &all, &crds)) != CLI_OK)
		return r;
	if ((report = json_object_new_array()) == NULL)
		return cli_error(c, "out of memory");
	for (size_t i = 0; i < json_object_array_length(crds); i++) {
		struct json_object *crd = json_object_array_get_idx(crds, i), *e, *reads, *arr;
		const char *name = kc_json_str(crd, "metadata", "name");
		const char *strategy = kc_json_str(crd, "spec", "conversion", "strategy");
		struct crd_versions v;
		char next[512], line[640];
		uint64_t nstore = 0;
		bool store_ok = false, other_read = false, other_failed = false;

		if (name == NULL || crd_versions_read(crd, &v) < 0) {
			(void)fprintf(stderr, "error: CRD %s: no spec.versions\n", name != NULL ?
			    name : "?");
			failed = true;
			continue;
		}
		if (strategy == NULL)
			strategy = "None";
		if ((e = json_object_new_object()) == NULL || kc_json_append(report, e) < 0 ||
		    kc_json_set_str(e, "name", name) < 0 ||
		    kc_json_set_str(e, "storageVersion", v.storage) < 0 ||
		    kc_json_set_str(e, "conversion", strategy) < 0 ||
		    kc_json_put(e, "served", arr = json_object_new_array()) < 0)
			return cli_error(c, "out of memory");
		for (size_t k = 0; k < v.n; k++)
			if (v.served[k] && kc_json_append(arr, json_object_new_string(v.name[k])) < 0)
				return cli_error(c, "out of memory");
		if (kc_json_put(e, "storedVersions", arr = json_object_new_array()) < 0)
			return cli_error(c, "out of memory");
		for (size_t k = 0; k < v.nstored; k++)
			if (kc_json_append(arr, json_object_new_string(v.stored[k])) < 0)
				return cli_error(c, "out of memory");
		if (people) {
			(void)printf("%s\n  versions:       ", name);
			for (size_t k = 0; k < v.n; k++)
				(void)printf("%s%s (%s%s)", k > 0 ? ", " : "", v.name[k],
				    v.served[k] ? "served" : "not served",
				    v.storage != NULL && strcmp(v.name[k], v.storage) == 0 ?
				    ", storage" : "");
			(void)printf("\n  storedVersions: [");
			for (size_t k = 0; k < v.nstored; k++)
				(void)printf("%s%s", k > 0 ? "," : "", v.stored[k]);
			(void)printf("]\n  conversion:     %s\n", strategy);
		}
		if ((reads = json_object_new_object()) == NULL || kc_json_put(e, "reads", reads) < 0)
			return cli_error(c, "out of memory");
		for (size_t k = 0; k < v.n; k++) {
			struct kc_status st = { 0 };
			struct json_object *rd;
			uint64_t n = 0;
			bool is_storage = v.storage != NULL && strcmp(v.name[k], v.storage) == 0;

			if (!v.served[k])
				continue;
			r = count_at(c, crd, v.name[k], &n, &st);
			if ((rd = json_object_new_object()) == NULL ||
			    kc_json_put(reads, v.name[k], rd) < 0 ||
			    kc_json_set_bool(rd, "ok", r == 0) < 0 ||
			    (r == 0 && kc_json_set_int(rd, "objects", (int64_t)n) < 0) ||
			    (r < 0 && kc_json_set_str(rd, "error", st.message[0] != '\0' ?
			    st.message : kc_strerror(r)) < 0))
				return cli_error(c, "out of memory");
			if (r < 0) {
				failed = true;
				if (!is_storage)
					other_failed = true;
				(void)snprintf(line, sizeof(line), "FAILED: %s", st.message[0] != '\0' ?
				    st.message : kc_strerror(r));
			} else {
				if (is_storage) {
					store_ok = true;
					nstore = n;
				} else if (n > 0) {
					other_read = true;
				}
				(void)snprintf(line, sizeof(line), "ok, %" PRIu64 " object%s", n,
				    n == 1 ? "" : "s");
			}
			if (people)
				(void)printf("  read at %s:%*s%s\n", v.name[k],
				    (int)(strlen(v.name[k]) < 7 ? 7 - strlen(v.name[k]) : 1), "", line);
		}
		if (store_ok && kc_json_set_int(e, "objects", (int64_t)nstore) < 0)
			return cli_error(c, "out of memory");
		/* The webhook answers when a read at another version converted objects. */
		{
			const char *wh;

			if (strcmp(strategy, "Webhook") != 0)
				wh = "not used (conversion None)";
			else if (other_failed)
				wh = "NOT ANSWERING: reads at another version than the storage one "
				    "fail (docs/upgrade.md, \"When the webhook is down\")";
			else if (other_read)
				wh = "answers (objects read at every served version)";
			else
				wh = "not exercised (one served version, or no objects)";
			if (kc_json_set_str(e, "webhook", wh) < 0)
				return cli_error(c, "out of memory");
			upgrade_next_step(&v, next, sizeof(next));
			if (kc_json_set_str(e, "nextStep", next) < 0)
				return cli_error(c, "out of memory");
			if (people && store_ok)
				(void)printf("  objects:        %" PRIu64 "\n", nstore);
			else if (people)
				(void)printf("  objects:        unknown (the read at the storage "
				    "version failed)\n");
			if (people)
				(void)printf("  webhook:        %s\n  next step:      %s\n", wh, next);
		}
	}
	if (!people) {
		_cleanup_(kc_json_putp) struct json_object *out = json_object_new_object();

		if (out == NULL || kc_json_put(out, "crds", json_object_get(report)) < 0)
			return cli_error(c, "out of memory");
		r = cli_print_object(c, out, "upgradecheck");
		if (r != CLI_OK)
			return r;
	}
	return failed ? CLI_ERROR : CLI_OK;
}

/* ---- migrate -------------------------------------------------------------- */

struct tally {
	uint64_t	rewritten, skipped, failed;
};

/* Drops managedFields entries of other versions than 'api_version'; [{}] clears them. */
static int
keep_managed_fields(struct json_object *obj, const char *api_version)
{
	struct json_object *md = kc_json_get(obj, "metadata"), *mf, *keep;
	bool other = false;

	if ((mf = kc_json_arr_of(md, "managedFields")) == NULL)
		return 0;
	for (size_t i = 0; i < json_object_array_length(mf) && !other; i++) {
		const char *v = kc_json_str(json_object_array_get_idx(mf, i), "apiVersion");

		other = v == NULL || strcmp(v, api_version) != 0;
	}
	if (!other)
		return 0;
	if ((keep = json_object_new_array()) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < json_object_array_length(mf); i++) {
		struct json_object *e = json_object_array_get_idx(mf, i);
		const char *v = kc_json_str(e, "apiVersion");

		if (v != NULL && strcmp(v, api_version) == 0 &&
		    kc_json_append(keep, json_object_get(e)) < 0) {
			json_object_put(keep);
			return -ENOMEM;
		}
	}
	if (json_object_array_length(keep) == 0 &&
	    kc_json_append(keep, json_object_new_object()) < 0) {
		json_object_put(keep);
		return -ENOMEM;
	}
	return kc_json_put(md, "managedFields", keep);
}

/*
 * Writes 'item' (a list's, changed in place) back as it is: 1 rewritten,
 * 0 gone meanwhile, or the error in 'st'. A conflict means someone wrote
 * it since the list: the fresh object is written instead.
 */
static int
rewrite(struct cli *c, const struct kc_resource *res, const char *api_version, bool dry_run,
    struct json_object *item, struct kc_status *st)
{
	const char *ns = kc_json_str(item, "metadata", "namespace");
	const char *name = kc_json_str(item, "metadata", "name");
	_cleanup_(kc_json_putp) struct json_object *fresh = NULL;
	struct json_object *obj = item;
	int tries = 0, r;

	if (name == NULL)
		return kc_status_set(st, -EINVAL, "an object without a name");
	while ((r = keep_managed_fields(obj, api_version)) == 0 &&
	    (r = kc_client_update(c->cl, &(struct kc_update_opts){ .res = res,
	    .dry_run = dry_run, .field_manager = UPGRADE_MANAGER }, obj, NULL, st)) ==
	    KC_ECONFLICT && ++tries < UPGRADE_TRIES) {
		json_object_put(fresh);
		fresh = NULL;
		if ((r = kc_client_get(c->cl, &(struct kc_get_opts){ .res = res, .ns = ns,
		    .name = name }, &fresh, st)) < 0)
			break;
		obj = fresh;
	}
	if (r == KC_ENOTFOUND)
		return 0;
	return r < 0 ? r : 1;
}

/* One pass over the list, with a progress line per page; KC_EEXPIRED to list again. */
static int
migrate_pass(struct cli *c, const char *crd_name, const struct kc_resource *res,
    const char *api_version, bool dry_run, struct tally *n)
{
	_cleanup_(kc_freep) char *cont = NULL;
	struct kc_status st = { 0 };
	bool tty = isatty(STDOUT_FILENO);
	int r;

	do {
		_cleanup_(kc_json_putp) struct json_object *list = NULL;
		struct json_object *items;
		const char *next;
		int64_t left;

		r = kc_client_list(c->cl, &(struct kc_list_opts){ .res = res,
		    .limit = UPGRADE_PAGE, .cont = cont }, &list, &st);
		if (r == KC_EEXPIRED)
			return r;
		if (r < 0) {
			char what[320];

			(void)snprintf(what, sizeof(what), "list %s", crd_name);
			(void)cli_api_error(c, what, r, &st);
			n->failed++;
			return r;
		}
		items = kc_json_arr_of(list, "items");
		for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++) {
			struct json_object *it = json_object_array_get_idx(items, i);
			const char *ins = kc_json_str(it, "metadata", "namespace");
			const char *iname = kc_json_str(it, "metadata", "name");

			st = (struct kc_status){ 0 };
			r = rewrite(c, res, api_version, dry_run, it, &st);
			if (r < 0) {
				(void)fprintf(stderr, "%s%s %s%s%s: %s\n", tty ? "\n" : "", crd_name,
				    ins != NULL ? ins : "", ins != NULL ? "/" : "",
				    iname != NULL ? iname : "?",
				    st.message[0] != '\0' ? st.message : kc_strerror(r));
				n->failed++;
			} else {
				*(r > 0 ? &n->rewritten : &n->skipped) += 1;
			}
		}
		left = kc_json_int(list, -1, "metadata", "remainingItemCount");
		cont = kc_free(cont);
		next = kc_json_str(list, "metadata", "continue");
		if (next != NULL && next[0] != '\0' && (cont = kc_strdup(next)) == NULL)
			return -ENOMEM;
		(void)printf("%s%s: %" PRIu64 " %s, %" PRIu64 " skipped (gone), %" PRIu64
		    " failed", tty ? "\r" : "", crd_name, n->rewritten,
		    dry_run ? "would be rewritten" : "rewritten", n->skipped, n->failed);
		if (left > 0)
			(void)printf(", about %" PRId64 " to go", left);
		(void)printf("%s", tty && cont != NULL ? "\033[K" : "\n");
		(void)fflush(stdout);
	} while (cont != NULL);
	return 0;
}

/* status.storedVersions = [version], unless it is already. */
static int
trim_stored(struct cli *c, const char *crd_name, const char *version, bool dry_run)
{
	struct kc_status st = { 0 };
	int r = 0;

	for (int try = 0; try < UPGRADE_TRIES; try++) {
		_cleanup_(kc_json_putp) struct json_object *crd = NULL;
		struct json_object *sv, *status;
		struct crd_versions v;

		if ((r = kc_client_get(c->cl, &(struct kc_get_opts){
		    .res = &kc_res_customresourcedefinitions, .name = crd_name }, &crd, &st)) < 0)
			break;
		if (crd_versions_read(crd, &v) == 0 && v.nstored == 1 &&
		    strcmp(v.stored[0], version) == 0) {
			(void)printf("%s: status.storedVersions is already [%s]\n", crd_name, version);
			return 0;
		}
		if ((status = kc_json_ensure_obj(crd, "status")) == NULL ||
		    (r = kc_json_put(status, "storedVersions", sv = json_object_new_array())) < 0 ||
		    (r = kc_json_append(sv, json_object_new_string(version))) < 0) {
			r = r < 0 ? r : -ENOMEM;
			break;
		}
		r = kc_client_update(c->cl, &(struct kc_update_opts){
		    .res = &kc_res_customresourcedefinitions, .subresource = "status",
		    .dry_run = dry_run, .field_manager = UPGRADE_MANAGER }, crd, NULL, &st);
		if (r != KC_ECONFLICT)
			break;
	}
	if (r < 0) {
		char what[320];

		(void)snprintf(what, sizeof(what), "update customresourcedefinitions/status %s",
		    crd_name);
		(void)cli_api_error(c, what, r, &st);
		return r;
	}
	(void)printf("%s: status.storedVersions %s [%s]\n", crd_name,
	    dry_run ? "would be" : "set to", version);
	return 0;
}

static int
migrate_one(struct cli *c, const struct json_object *crd, bool dry_run)
{
	const char *name = kc_json_str(crd, "metadata", "name");
	struct kc_resource res;
	struct crd_versions v;
	struct tally n = { 0 };
	char api_version[192];
	int r;

	if (name == NULL || crd_versions_read(crd, &v) < 0 || v.storage == NULL) {
		(void)fprintf(stderr, "error: CRD %s has no single storage version\n",
		    name != NULL ? name : "?");
		return -EINVAL;
	}
	res_at(crd, v.storage, &res);
	if (res.group == NULL || res.resource == NULL || res.kind == NULL)
		return -EINVAL;
	(void)snprintf(api_version, sizeof(api_version), "%s/%s", res.group, v.storage);
	(void)printf("%s: rewriting every object at %s%s\n", name, api_version,
	    dry_run ? " (dry run)" : "");
	/* An expired continue token: list again from the start (every write is idempotent). */
	r = KC_EEXPIRED;
	for (int pass = 0; r == KC_EEXPIRED && pass < UPGRADE_RELISTS; pass++) {
		if (pass > 0)
			(void)printf("%s: the list expired: listing again\n", name);
		r = migrate_pass(c, name, &res, api_version, dry_run, &n);
	}
	if (r == KC_EEXPIRED) {
		(void)fprintf(stderr, "%s: the list expired %d times\n", name, UPGRADE_RELISTS);
		n.failed++;
	}
	if (n.failed > 0 || r < 0) {
		(void)fprintf(stderr, "%s: %" PRIu64 " failed: status.storedVersions left as it "
		    "is; fix what is named above and run \"kubectl trainyard upgrade migrate\" "
		    "again\n", name, n.failed);
		return r < 0 ? r : -EIO;
	}
	return trim_stored(c, name, v.storage, dry_run);
}

static int
migrate(struct cli *c, bool dry_run)
{
	_cleanup_(kc_json_putp) struct json_object *all = NULL, *crds = NULL;
	bool failed = false;
	int r;

	if ((r = list_crds(c, &all, &crds)) != CLI_OK)
		return r;
	for (size_t i = 0; i < json_object_array_length(crds); i++)
		if (migrate_one(c, json_object_array_get_idx(crds, i), dry_run) < 0)
			failed = true;
	(void)printf("%s\n", failed ? "migration incomplete: see the errors above" :
	    dry_run ? "dry run done: nothing was written" :
	    "every object is stored at its storage version");
	return failed ? CLI_ERROR : CLI_OK;
}

static int
run(struct cli *c, int argc, char **argv)
{
	bool dry_run = false, done;
	const struct cli_flag flags[] = {
		{ "dry-run", 0, CLI_FLAG_BOOL, &dry_run, NULL },
		{ NULL, 0, 0, NULL, NULL },
	};
	int nargs, dd, r;

	if ((r = cli_parse(c, &cli_cmd_upgrade, flags, argc, argv, &nargs, &dd, &done)) !=
	    CLI_OK || done)
		return r;
	if (nargs != 1 || (strcmp(argv[1], "check") != 0 && strcmp(argv[1], "migrate") != 0))
		return cli_error(c, "upgrade takes check or migrate; see %s upgrade --help",
		    c->prog);
	if (dry_run && strcmp(argv[1], "migrate") != 0)
		return cli_error(c, "--dry-run goes with migrate");
	if ((r = cli_connect(c)) != CLI_OK)
		return r;
	return strcmp(argv[1], "check") == 0 ? check(c) : migrate(c, dry_run);
}

const struct cli_cmd cli_cmd_upgrade = {
	.name = "upgrade",
	.summary = "check the API versions and migrate stored objects (platform team)",
	.help = help,
	.run = run,
};

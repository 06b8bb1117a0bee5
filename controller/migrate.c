/*
 * migrate.c: trainyard-controller migrate [--kubeconfig PATH] [--dry-run]
 *
 * The storage migration of the trainyard.dev custom resources, for the
 * platform team once a new storage version is set (docs/api.md,
 * "Versions"). For runs and then resourceprofiles.trainyard.dev:
 *
 *  1. Read the CRD: its storage version.
 *  2. List the objects at that version, one page of MIGRATE_PAGE at a
 *     time (limit/continue; an expired continue token starts the list
 *     again, which is harmless: every step is idempotent).
 *  3. PUT each object back as it was read, its resourceVersion the
 *     precondition: the API server stores it at the storage version. The
 *     same write drops managedFields entries of other versions
 *     (server-side apply fails on them once their version is gone). A
 *     conflict (someone wrote it meanwhile) reads it again and retries, at
 *     most MIGRATE_TRIES times; a 404 means it is gone: skipped.
 *  4. Only when every object was rewritten: set the CRD's
 *     status.storedVersions to [storage version], through its status
 *     subresource, so the old version can later be removed.
 *
 * Progress goes to stdout, a line per page and a summary per resource;
 * failures to stderr. The exit status is 1 when anything failed. Running
 * it again after an interruption or a failure does the remaining work
 * (and rewrites the rest once more, which changes nothing).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/client.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/kubeconfig.h>
#include <kc/macro.h>
#include <kc/str.h>
#include <kc/transport.h>

#include "migrate.h"

#define MIGRATE_PAGE		100	/* objects per list page */
#define MIGRATE_TRIES		5	/* writes of one object, conflicts included */
#define MIGRATE_RELISTS		3	/* fresh lists after an expired continue token */
#define MIGRATE_FIELD_MANAGER	"trainyard-migrate"

/* The resources migrated, in order. */
static const char *const crd_names[] = {
	"runs.trainyard.dev",
	"resourceprofiles.trainyard.dev",
};

struct tally {
	uint64_t	rewritten, skipped, failed;
};

struct target {
	struct kc_resource	 res;
	char			 api_version[128];	/* group/version */
	char			 version[64], group[64], plural[64], kind[64];
	bool			 dry_run;
};

int
migrate_storage_version(const struct json_object *crd, char *buf, size_t size)
{
	struct json_object *versions = kc_json_get(crd, "spec", "versions");
	const char *found = NULL;

	if (!json_object_is_type(versions, json_type_array))
		return -ENOENT;
	for (size_t i = 0; i < json_object_array_length(versions); i++) {
		struct json_object *v = json_object_array_get_idx(versions, i);

		if (!kc_json_bool(v, false, "storage"))
			continue;
		if (found != NULL)
			return -ENOENT;
		found = kc_json_str(v, "name");
	}
	if (found == NULL || found[0] == '\0' || strlen(found) >= size)
		return -ENOENT;
	(void)kc_strlcpy(buf, found, size);
	return 0;
}

int
migrate_filter_managed_fields(struct json_object *obj, const char *api_version)
{
	struct json_object *md = kc_json_get(obj, "metadata"), *mf, *keep, *e;
	size_t n;
	int removed = 0, r;

	if ((mf = kc_json_arr_of(md, "managedFields")) == NULL)
		return 0;
	n = json_object_array_length(mf);
	for (size_t i = 0; i < n; i++) {
		const char *v = kc_json_str(json_object_array_get_idx(mf, i), "apiVersion");

		if (v == NULL || strcmp(v, api_version) != 0)
			removed++;
	}
	if (removed == 0)
		return 0;
	if ((keep = json_object_new_array()) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *v;

		e = json_object_array_get_idx(mf, i);
		v = kc_json_str(e, "apiVersion");
		if (v != NULL && strcmp(v, api_version) == 0 &&
		    (r = kc_json_append(keep, json_object_get(e))) < 0) {
			json_object_put(keep);
			return r;
		}
	}
	if (json_object_array_length(keep) == 0 &&
	    (r = kc_json_append(keep, json_object_new_object())) < 0) {
		json_object_put(keep);
		return r;
	}
	if ((r = kc_json_put(md, "managedFields", keep)) < 0)
		return r;
	return removed;
}

/* "ns/name" or "name", for messages. */
static const char *
obj_ref(const struct json_object *obj, char *buf, size_t size)
{
	const char *ns = kc_json_str(obj, "metadata", "namespace");
	const char *name = kc_json_str(obj, "metadata", "name");

	(void)snprintf(buf, size, "%s%s%s", ns != NULL ? ns : "", ns != NULL ? "/" : "",
	    name != NULL ? name : "?");
	return buf;
}

/*
 * Rewrites one object (a new reference, consumed): 1 rewritten, 0 gone,
 * or the error with its message in 'st'.
 */
static int
rewrite(struct kc_client *cl, const struct target *t, struct json_object *obj,
    struct kc_status *st)
{
	char ns[254], name[254];
	int r = 0;

	(void)kc_strlcpy(ns, kc_json_str(obj, "metadata", "namespace") != NULL ?
	    kc_json_str(obj, "metadata", "namespace") : "", sizeof(ns));
	(void)kc_strlcpy(name, kc_json_str(obj, "metadata", "name") != NULL ?
	    kc_json_str(obj, "metadata", "name") : "", sizeof(name));
	for (int try = 0; try < MIGRATE_TRIES; try++) {
		if (try > 0) {
			json_object_put(obj);
			obj = NULL;
			r = kc_client_get(cl, &(struct kc_get_opts){
				.res = &t->res, .ns = ns[0] != '\0' ? ns : NULL, .name = name,
			}, &obj, st);
			if (r == KC_ENOTFOUND)
				return 0;
			if (r < 0)
				return r;
		}
		if ((r = migrate_filter_managed_fields(obj, t->api_version)) < 0)
			break;
		r = kc_client_update(cl, &(struct kc_update_opts){
			.res = &t->res, .dry_run = t->dry_run,
			.field_manager = MIGRATE_FIELD_MANAGER,
		}, obj, NULL, st);
		if (r == KC_ECONFLICT)
			continue;
		if (r == KC_ENOTFOUND)
			r = 0;
		else if (r == 0)
			r = 1;
		break;
	}
	json_object_put(obj);
	return r;
}

/* One pass over the list; KC_EEXPIRED when a continue token expired. */
static int
migrate_items(struct kc_client *cl, const struct target *t, struct tally *n)
{
	_cleanup_(kc_freep) char *cont = NULL;
	struct kc_status st = { 0 };
	char ref[512];
	unsigned page = 0;
	int r;

	do {
		_cleanup_(kc_json_putp) struct json_object *list = NULL;
		struct json_object *items;
		const char *next;

		r = kc_client_list(cl, &(struct kc_list_opts){
			.res = &t->res, .limit = MIGRATE_PAGE, .cont = cont,
		}, &list, &st);
		if (r == KC_EEXPIRED)
			return r;
		if (r < 0) {
			(void)fprintf(stderr, "%s.%s: list: %s\n", t->plural, t->group,
			    st.message[0] != '\0' ? st.message : kc_strerror(r));
			n->failed++;
			return r;
		}
		items = kc_json_arr_of(list, "items");
		for (size_t i = 0; items != NULL && i < json_object_array_length(items); i++) {
			struct json_object *it = json_object_array_get_idx(items, i);

			st = (struct kc_status){ 0 };
			(void)obj_ref(it, ref, sizeof(ref));
			r = rewrite(cl, t, json_object_get(it), &st);
			if (r == 1) {
				n->rewritten++;
			} else if (r == 0) {
				n->skipped++;
			} else {
				n->failed++;
				(void)fprintf(stderr, "%s.%s %s: %s\n", t->plural, t->group, ref,
				    st.message[0] != '\0' ? st.message : kc_strerror(r));
			}
		}
		cont = kc_free(cont);
		next = kc_json_str(list, "metadata", "continue");
		if (next != NULL && next[0] != '\0' && (cont = kc_strdup(next)) == NULL)
			return -ENOMEM;
		(void)printf("%s.%s: page %u: %" PRIu64 " %s, %" PRIu64 " skipped, %" PRIu64
		    " failed\n", t->plural, t->group, ++page, n->rewritten,
		    t->dry_run ? "would be rewritten" : "rewritten", n->skipped, n->failed);
		(void)fflush(stdout);
	} while (cont != NULL);
	return 0;
}

/* status.storedVersions = [version], unless it is already. */
static int
trim_stored_versions(struct kc_client *cl, const char *crd_name, const struct target *t)
{
	struct kc_status st = { 0 };
	int r = 0;

	for (int try = 0; try < MIGRATE_TRIES; try++) {
		_cleanup_(kc_json_putp) struct json_object *crd = NULL;
		struct json_object *sv, *status;

		if ((r = kc_client_get(cl, &(struct kc_get_opts){
			.res = &kc_res_customresourcedefinitions, .name = crd_name,
		    }, &crd, &st)) < 0)
			break;
		sv = kc_json_get(crd, "status", "storedVersions");
		if (json_object_is_type(sv, json_type_array) && json_object_array_length(sv) == 1 &&
		    strcmp(json_object_get_string(json_object_array_get_idx(sv, 0)) != NULL ?
		    json_object_get_string(json_object_array_get_idx(sv, 0)) : "",
		    t->version) == 0) {
			(void)printf("%s: status.storedVersions is already [%s]\n", crd_name,
			    t->version);
			return 0;
		}
		if ((status = kc_json_ensure_obj(crd, "status")) == NULL ||
		    (r = kc_json_put(status, "storedVersions", sv = json_object_new_array())) < 0 ||
		    (r = kc_json_append(sv, json_object_new_string(t->version))) < 0) {
			r = r < 0 ? r : -ENOMEM;
			break;
		}
		r = kc_client_update(cl, &(struct kc_update_opts){
			.res = &kc_res_customresourcedefinitions, .subresource = "status",
			.dry_run = t->dry_run, .field_manager = MIGRATE_FIELD_MANAGER,
		}, crd, NULL, &st);
		if (r != KC_ECONFLICT)
			break;
	}
	if (r < 0) {
		(void)fprintf(stderr, "%s: set status.storedVersions: %s\n", crd_name,
		    st.message[0] != '\0' ? st.message : kc_strerror(r));
		return r;
	}
	(void)printf("%s: status.storedVersions %s [%s]\n", crd_name,
	    t->dry_run ? "would be" : "set to", t->version);
	return 0;
}

/* Migrates the objects of one CRD: 0, or < 0 when anything failed. */
static int
migrate_crd(struct kc_client *cl, const char *crd_name, bool dry_run)
{
	_cleanup_(kc_json_putp) struct json_object *crd = NULL;
	struct kc_status st = { 0 };
	struct target t = { .dry_run = dry_run };
	struct tally n = { 0 };
	const char *group, *plural, *kind;
	int r;

	if ((r = kc_client_get(cl, &(struct kc_get_opts){
		.res = &kc_res_customresourcedefinitions, .name = crd_name,
	    }, &crd, &st)) < 0) {
		(void)fprintf(stderr, "%s: %s\n", crd_name,
		    st.message[0] != '\0' ? st.message : kc_strerror(r));
		return r;
	}
	group = kc_json_str(crd, "spec", "group");
	plural = kc_json_str(crd, "spec", "names", "plural");
	kind = kc_json_str(crd, "spec", "names", "kind");
	if (group == NULL || plural == NULL || kind == NULL ||
	    migrate_storage_version(crd, t.version, sizeof(t.version)) < 0 ||
	    kc_strlcpy(t.group, group, sizeof(t.group)) >= sizeof(t.group) ||
	    kc_strlcpy(t.plural, plural, sizeof(t.plural)) >= sizeof(t.plural) ||
	    kc_strlcpy(t.kind, kind, sizeof(t.kind)) >= sizeof(t.kind)) {
		(void)fprintf(stderr, "%s: not a CustomResourceDefinition with one storage "
		    "version\n", crd_name);
		return -EINVAL;
	}
	(void)snprintf(t.api_version, sizeof(t.api_version), "%s/%s", t.group, t.version);
	t.res = (struct kc_resource){
		.group = t.group, .version = t.version, .resource = t.plural, .kind = t.kind,
		.namespaced = kc_json_str(crd, "spec", "scope") != NULL &&
		    strcmp(kc_json_str(crd, "spec", "scope"), "Namespaced") == 0,
	};
	(void)printf("%s: rewriting every object at %s%s\n", crd_name, t.api_version,
	    dry_run ? " (dry run)" : "");
	for (int pass = 0; (r = migrate_items(cl, &t, &n)) == KC_EEXPIRED; pass++) {
		if (pass + 1 == MIGRATE_RELISTS) {
			(void)fprintf(stderr, "%s: the list expired %d times\n", crd_name,
			    MIGRATE_RELISTS);
			n.failed++;
			break;
		}
		(void)printf("%s: the list expired: listing again\n", crd_name);
	}
	(void)printf("%s: %" PRIu64 " %s, %" PRIu64 " skipped (gone), %" PRIu64 " failed\n",
	    crd_name, n.rewritten, dry_run ? "would be rewritten" : "rewritten", n.skipped,
	    n.failed);
	if (n.failed > 0 || r < 0) {
		(void)fprintf(stderr, "%s: status.storedVersions left as it is: not every "
		    "object was rewritten; run migrate again\n", crd_name);
		return r < 0 ? r : -EIO;
	}
	return trim_stored_versions(cl, crd_name, &t);
}

static void
usage(FILE *f)
{
	(void)fprintf(f,
	    "usage: trainyard-controller migrate [--kubeconfig PATH] [--dry-run]\n"
	    "\n"
	    "Rewrites every Run and ResourceProfile at its CRD's storage version,\n"
	    "drops managedFields entries of other versions, then sets the CRD's\n"
	    "status.storedVersions to the storage version alone (only when every\n"
	    "object was rewritten). Safe to interrupt and run again. Exit status 1\n"
	    "when anything failed.\n");
}

int
migrate_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "kubeconfig", required_argument, NULL, 'k' },
		{ "dry-run", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct kc_rest_config *rc = NULL;
	struct kc_client *cl = NULL;
	struct kc_status st = { 0 };
	const char *kubeconfig = NULL;
	bool dry_run = false, failed = false;
	int ch, r;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'k':
			kubeconfig = optarg;
			break;
		case 'd':
			dry_run = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if ((r = kc_rest_config_load_default(kubeconfig, NULL, &rc, &st)) < 0) {
		(void)fprintf(stderr, "trainyard-controller migrate: %s\n",
		    st.message[0] != '\0' ? st.message : kc_strerror(r));
		return 2;
	}
	if ((r = kc_transport_global_init()) < 0 ||
	    (r = kc_client_new(&(struct kc_client_opts){
		.rc = rc, .max_retries = 3, .user_agent = "trainyard-migrate/" KC_VERSION,
	    }, &cl, &st)) < 0) {
		(void)fprintf(stderr, "trainyard-controller migrate: %s\n",
		    st.message[0] != '\0' ? st.message : kc_strerror(r));
		kc_rest_config_free(rc);
		return 2;
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(crd_names); i++)
		if (migrate_crd(cl, crd_names[i], dry_run) < 0)
			failed = true;
	kc_client_free(cl);
	kc_rest_config_free(rc);
	kc_transport_global_cleanup();
	return failed ? 1 : 0;
}

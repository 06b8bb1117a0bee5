/*
 * names.c: whose an object of a name a Run takes is (names.h).
 *
 * The answer reads only the object's ownerReferences: the controller
 * reference says who manages it, as the garbage collector and client-go's
 * ControllerRefManager read it. A Run's children carry one to the Run
 * (kind Run, group trainyard.dev, the Run's uid); a Run deleted and
 * created again under the same name has a new uid, so the old one's
 * children, still waiting for the garbage collector, are told apart from
 * the new one's and from anyone else's.
 */
#include <stdbool.h>
#include <string.h>

#include <kc/json.h>
#include <kc/sbuf.h>

#include "names.h"

#define TRAINYARD_GROUP		"trainyard.dev/"

static const struct json_object *
controller_ref(const struct json_object *obj)
{
	struct json_object *refs = kc_json_arr_of(kc_json_get(obj, "metadata"),
	    "ownerReferences");

	for (size_t i = 0; refs != NULL && i < json_object_array_length(refs); i++) {
		struct json_object *ref = json_object_array_get_idx(refs, i);

		if (kc_json_bool(ref, false, "controller"))
			return ref;
	}
	return NULL;
}

static bool
is_run_ref(const struct json_object *ref)
{
	const char *kind = kc_json_str(ref, "kind"), *av = kc_json_str(ref, "apiVersion");

	return kind != NULL && strcmp(kind, "Run") == 0 && av != NULL &&
	    strncmp(av, TRAINYARD_GROUP, strlen(TRAINYARD_GROUP)) == 0;
}

enum ty_name_owner
names_owner(const struct json_object *obj, const char *run, const char *uid)
{
	const struct json_object *ref = controller_ref(obj);
	const char *ruid, *rname;

	if (ref == NULL || !is_run_ref(ref) || (ruid = kc_json_str(ref, "uid")) == NULL ||
	    (rname = kc_json_str(ref, "name")) == NULL || strcmp(rname, run) != 0)
		return TY_NAME_FOREIGN;
	if (uid != NULL && strcmp(ruid, uid) == 0)
		return TY_NAME_OURS;
	return TY_NAME_EARLIER_RUN;
}

void
names_conflict(struct kc_sbuf *b, const char *kind, const struct json_object *obj)
{
	const struct json_object *ref = controller_ref(obj);
	struct json_object *refs = kc_json_arr_of(kc_json_get(obj, "metadata"),
	    "ownerReferences");
	const char *ns = kc_json_str(obj, "metadata", "namespace");
	const char *name = kc_json_str(obj, "metadata", "name");

	if (ref == NULL && refs != NULL && json_object_array_length(refs) > 0)
		ref = json_object_array_get_idx(refs, 0);
	if (kc_sbuf_end(b) > 0)
		kc_sbuf_puts(b, "; ");
	kc_sbuf_printf(b, "%s %s/%s exists and is not owned by this Run", kind,
	    ns != NULL ? ns : "", name != NULL ? name : "");
	if (ref != NULL && kc_json_str(ref, "kind") != NULL && kc_json_str(ref, "name") != NULL)
		kc_sbuf_printf(b, " (owner: %s %s)", kc_json_str(ref, "kind"),
		    kc_json_str(ref, "name"));
}

bool
names_cached_foreign(const char *label, bool has_owner, const char *run)
{
	return !has_owner || label == NULL || strcmp(label, run) != 0;
}

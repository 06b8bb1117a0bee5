/*
 * convert_standin.c: see convert_standin.h.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <json-c/json.h>

#include <kc/json.h>

#include "convert_standin.h"

#define ALPHA	"trainyard.dev/v1alpha1"
#define BETA	"trainyard.dev/v1beta1"

unsigned standin_calls;

struct move {
	const char	*alpha;		/* key under spec */
	const char	*parent;	/* v1beta1: spec.PARENT.KEY */
	const char	*beta;
};

static const struct move moves[] = {
	{ "image", "container", "image" },
	{ "command", "container", "command" },
	{ "args", "container", "args" },
	{ "env", "container", "env" },
	{ "workingDir", "container", "workingDir" },
	{ "ports", "container", "ports" },
	{ "volumeMounts", "container", "volumeMounts" },
	{ "securityContext", "container", "securityContext" },
	{ "resources", "container", "resources" },
	{ "restartPolicy", "restart", "policy" },
	{ "maxRestarts", "restart", "limit" },
	{ "activeDeadlineSeconds", "deadlines", "activeSeconds" },
	{ "scheduleTimeoutSeconds", "deadlines", "schedulingSeconds" },
};

static bool
known(const char *av)
{
	return av != NULL && (strcmp(av, ALPHA) == 0 || strcmp(av, BETA) == 0);
}

static int
move_fields(struct json_object *spec, bool up)
{
	for (size_t i = 0; i < sizeof(moves) / sizeof(moves[0]); i++) {
		const struct move *m = &moves[i];
		struct json_object *v, *parent;

		if (up) {
			if (!json_object_object_get_ex(spec, m->alpha, &v))
				continue;
			if ((parent = kc_json_ensure_obj(spec, m->parent)) == NULL)
				return -ENOMEM;
			if (json_object_object_add(parent, m->beta, json_object_get(v)) != 0)
				return -ENOMEM;
			json_object_object_del(spec, m->alpha);
		} else {
			if ((parent = kc_json_obj_of(spec, m->parent)) == NULL ||
			    !json_object_object_get_ex(parent, m->beta, &v))
				continue;
			if (json_object_object_add(spec, m->alpha, json_object_get(v)) != 0)
				return -ENOMEM;
			json_object_object_del(parent, m->beta);
		}
	}
	if (!up)
		for (size_t i = 0; i < 3; i++) {
			static const char *const parents[] = { "container", "restart", "deadlines" };
			struct json_object *p = kc_json_obj_of(spec, parents[i]);

			if (p != NULL && json_object_object_length(p) == 0)
				json_object_object_del(spec, parents[i]);
		}
	return 0;
}

int
standin_convert(const struct json_object *obj, const char *to, struct json_object **ret,
    struct kc_status *st)
{
	const char *av = kc_json_str(obj, "apiVersion"), *kind = kc_json_str(obj, "kind");
	struct json_object *out, *spec;
	int r;

	standin_calls++;
	if (!known(av))
		return kc_status_set(st, KC_EINVALID, "apiVersion: unsupported value \"%s\"",
		    av != NULL ? av : "");
	if (!known(to))
		return kc_status_set(st, KC_EINVALID, "desired apiVersion: unsupported "
		    "value \"%s\"", to);
	if (kind == NULL || (strcmp(kind, "Run") != 0 && strcmp(kind, "ResourceProfile") != 0))
		return kc_status_set(st, KC_EINVALID, "kind: unsupported value \"%s\"",
		    kind != NULL ? kind : "");
	if (json_object_object_get_ex(obj, "spec", &spec) &&
	    !json_object_is_type(spec, json_type_object))
		return kc_status_set(st, KC_EINVALID, "spec: must be an object");
	if ((out = kc_json_copy(obj)) == NULL)
		return -ENOMEM;
	if (strcmp(kind, "Run") == 0 && strcmp(av, to) != 0 &&
	    (spec = kc_json_obj_of(out, "spec")) != NULL &&
	    (r = move_fields(spec, strcmp(to, BETA) == 0)) < 0) {
		json_object_put(out);
		return r;
	}
	if (kc_json_set_str(out, "apiVersion", to) < 0) {
		json_object_put(out);
		return -ENOMEM;
	}
	*ret = out;
	return 0;
}

/*
 * convert.c: Runs and ResourceProfiles between trainyard.dev/v1alpha1 and
 * trainyard.dev/v1beta1.
 *
 * A ResourceProfile has the same schema in both versions: only apiVersion
 * changes. A Run's v1beta1 spec groups fields that v1alpha1 keeps flat:
 *
 *	v1alpha1 spec.			v1beta1 spec.
 *	image command args env		container.{same names}
 *	workingDir ports volumeMounts
 *	securityContext resources
 *	restartPolicy maxRestarts	restart.{policy, limit}
 *	activeDeadlineSeconds		deadlines.activeSeconds
 *	scheduleTimeoutSeconds		deadlines.schedulingSeconds
 *	(none)				network (ingressFrom[])
 *
 * Everything else (the rest of spec, status, metadata) is copied as it is;
 * values move without being looked at, so null stays null and unknown
 * fields inside preserved blocks travel verbatim. Nothing is validated or
 * defaulted.
 *
 * Down-conversion cannot express some v1beta1 data in v1alpha1: spec.network,
 * a wrapper that is null or empty ("container: {}" would come back up as
 * no container at all), members of a wrapper that have no v1alpha1 name,
 * and a metadata or annotations map that the annotation itself creates.
 * Exactly those go into the annotation TY_CONVERT_ANNOTATION, as compact
 * JSON in the object's shape:
 *
 *	{"metadata":{"annotations":null},"spec":{"network":{"ingressFrom":[...]}}}
 *
 * where null means "was absent". Up-conversion rebuilds the wrappers from
 * the flat fields, then fills in from the annotation only what is absent
 * (live fields win over a stale annotation), and removes the annotation.
 * So alpha -> beta -> alpha and beta -> alpha -> beta give equal trees.
 *
 * Keys of the other version's shape found in a spec (a v1beta1 spec with
 * "image", a v1alpha1 spec with "container") are unknown to its schema,
 * which the API server prunes; conversion drops them too.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/macro.h>

#include "convert.h"

/* A flat v1alpha1 field and its home in v1beta1: spec.<wrap>.<beta>. */
struct move {
	const char	*alpha;
	const char	*wrap;
	const char	*beta;
};

static const struct move moves[] = {
	{ "image",			"container",	"image" },
	{ "command",			"container",	"command" },
	{ "args",			"container",	"args" },
	{ "env",			"container",	"env" },
	{ "workingDir",			"container",	"workingDir" },
	{ "ports",			"container",	"ports" },
	{ "volumeMounts",		"container",	"volumeMounts" },
	{ "securityContext",		"container",	"securityContext" },
	{ "resources",			"container",	"resources" },
	{ "restartPolicy",		"restart",	"policy" },
	{ "maxRestarts",		"restart",	"limit" },
	{ "activeDeadlineSeconds",	"deadlines",	"activeSeconds" },
	{ "scheduleTimeoutSeconds",	"deadlines",	"schedulingSeconds" },
};

/*
 * The v1beta1-only spec members, in sorted order (the annotation's keys
 * come out sorted). "network" has no v1alpha1 fields: it travels whole.
 */
static const char *const beta_keys[] = { "container", "deadlines", "network", "restart" };

static const struct move *
move_of(const char *wrap, const char *beta)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(moves); i++)
		if (strcmp(moves[i].wrap, wrap) == 0 && strcmp(moves[i].beta, beta) == 0)
			return &moves[i];
	return NULL;
}

static bool
is_moved_alpha(const char *key)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(moves); i++)
		if (strcmp(moves[i].alpha, key) == 0)
			return true;
	return false;
}

static bool
is_beta_key(const char *key)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(beta_keys); i++)
		if (strcmp(beta_keys[i], key) == 0)
			return true;
	return false;
}

/* Whether 'key' is present in 'o' (an object), with *ret its value (NULL: null). */
static bool
member(struct json_object *o, const char *key, struct json_object **ret)
{
	return json_object_object_get_ex(o, key, ret);
}

/* Moves the value of 'from'[fkey] (present) to 'to'[tkey]. 0 or -ENOMEM. */
static int
move_member(struct json_object *from, const char *fkey, struct json_object *to,
    const char *tkey)
{
	struct json_object *v = NULL;
	int r;

	(void)member(from, fkey, &v);
	if ((r = kc_json_put_nullable(to, tkey, json_object_get(v))) < 0)
		return r;
	json_object_object_del(from, fkey);
	return 0;
}

/* Deletes every key of 'o' that 'drop' says to. */
static void
drop_keys(struct json_object *o, bool (*drop)(const char *))
{
	bool again = true;

	while (again) {
		again = false;
		json_object_object_foreach(o, k, v) {
			(void)v;
			if (drop(k)) {
				json_object_object_del(o, k);
				again = true;
				break;
			}
		}
	}
}

/*
 * Down: spec.<wrap> (present, an object or null) back to flat fields;
 * what does not fit goes into 'rspec' (see the file comment).
 */
static int
flatten(struct json_object *spec, const char *wrap, struct json_object *rspec)
{
	_cleanup_(kc_json_putp) struct json_object *rest = NULL;
	struct json_object *w = NULL;
	size_t known = 0;
	int r;

	(void)member(spec, wrap, &w);
	if (w == NULL) {
		if ((r = kc_json_put_null(rspec, wrap)) < 0)
			return r;
		json_object_object_del(spec, wrap);
		return 0;
	}
	json_object_get(w);	/* spec's reference goes at the end */
	json_object_object_foreach(w, k, v) {
		const struct move *m = move_of(wrap, k);

		if (m != NULL) {
			if ((r = kc_json_put_nullable(spec, m->alpha, json_object_get(v))) < 0)
				goto out;
			known++;
			continue;
		}
		if (rest == NULL && (rest = json_object_new_object()) == NULL) {
			r = -ENOMEM;
			goto out;
		}
		if ((r = kc_json_put_nullable(rest, k, json_object_get(v))) < 0)
			goto out;
	}
	if (rest != NULL || known == 0) {
		if (rest == NULL && (rest = json_object_new_object()) == NULL) {
			r = -ENOMEM;
			goto out;
		}
		if ((r = kc_json_put(rspec, wrap, rest)) < 0) {
			rest = NULL;
			goto out;
		}
		rest = NULL;
	}
	json_object_object_del(spec, wrap);
	r = 0;
out:
	json_object_put(w);
	return r;
}

static int
down(struct json_object *o, struct json_object *spec, struct json_object *md,
    struct json_object *ann)
{
	_cleanup_(kc_json_putp) struct json_object *record = NULL, *rspec = NULL;
	_cleanup_(kc_freep) char *text = NULL;
	struct json_object *rmd;
	int r;

	if ((rspec = json_object_new_object()) == NULL)
		return -ENOMEM;
	if (spec != NULL) {
		drop_keys(spec, is_moved_alpha);
		for (size_t i = 0; i < KC_ARRAY_SIZE(beta_keys); i++) {
			if (!member(spec, beta_keys[i], NULL))
				continue;
			if (strcmp(beta_keys[i], "network") == 0)
				r = move_member(spec, "network", rspec, "network");
			else
				r = flatten(spec, beta_keys[i], rspec);
			if (r < 0)
				return r;
		}
	}
	if (json_object_object_length(rspec) == 0) {
		if (ann != NULL)
			json_object_object_del(ann, TY_CONVERT_ANNOTATION);
		return 0;
	}

	if ((record = json_object_new_object()) == NULL)
		return -ENOMEM;
	if (md == NULL || ann == NULL) {
		/* The annotation creates what was absent: say so, for the way up. */
		if (md == NULL)
			r = kc_json_put_null(record, "metadata");
		else if ((rmd = json_object_new_object()) == NULL)
			r = -ENOMEM;
		else if ((r = kc_json_put(record, "metadata", rmd)) == 0)
			r = kc_json_put_null(rmd, "annotations");
		if (r < 0)
			return r;
		if (md == NULL && (md = kc_json_ensure_obj(o, "metadata")) == NULL)
			return -ENOMEM;
		if ((ann = kc_json_ensure_obj(md, "annotations")) == NULL)
			return -ENOMEM;
	}
	r = kc_json_put(record, "spec", rspec);
	rspec = NULL;
	if (r < 0)
		return r;
	if ((text = kc_json_dump(record, NULL)) == NULL)
		return -ENOMEM;
	return kc_json_set_str(ann, TY_CONVERT_ANNOTATION, text);
}

/*
 * The record the annotation holds, removed from 'ann' (NULL: none, or one
 * ignored as oversized or not a JSON object).
 */
static int
take_record(struct json_object *ann, struct json_object **ret)
{
	struct json_object *v = NULL, *rec = NULL;
	struct kc_status st = { 0 };
	const char *text;
	size_t len;
	int r;

	*ret = NULL;
	if (ann == NULL || !member(ann, TY_CONVERT_ANNOTATION, &v))
		return 0;
	if (json_object_is_type(v, json_type_string) &&
	    (len = (size_t)json_object_get_string_len(v)) <= TY_CONVERT_ANNOTATION_MAX) {
		text = json_object_get_string(v);
		r = kc_json_parse(text, len, &rec, &st);
		if (r == -ENOMEM)
			return r;
		if (r < 0 || !json_object_is_type(rec, json_type_object))
			rec = (json_object_put(rec), NULL);
	}
	json_object_object_del(ann, TY_CONVERT_ANNOTATION);
	*ret = rec;
	return 0;
}

/* Up: fills spec.<key> from the record's, where the live object has none. */
static int
fill_from(struct json_object *spec, const char *key, struct json_object *rv)
{
	struct json_object *live = NULL, *c;
	int r;

	if (!member(spec, key, &live)) {
		if (rv != NULL && (c = kc_json_copy(rv)) == NULL)
			return -ENOMEM;
		return kc_json_put_nullable(spec, key, rv != NULL ? c : NULL);
	}
	if (!json_object_is_type(live, json_type_object) ||
	    !json_object_is_type(rv, json_type_object))
		return 0;
	json_object_object_foreach(rv, k, v) {
		if (member(live, k, NULL))
			continue;
		if (v != NULL && (c = kc_json_copy(v)) == NULL)
			return -ENOMEM;
		if ((r = kc_json_put_nullable(live, k, v != NULL ? c : NULL)) < 0)
			return r;
	}
	return 0;
}

static int
up(struct json_object *o, struct json_object *spec, struct json_object *md,
    struct json_object *ann)
{
	_cleanup_(kc_json_putp) struct json_object *record = NULL;
	struct json_object *rspec, *rmd = NULL, *w;
	int r;

	if ((r = take_record(ann, &record)) < 0)
		return r;
	if (spec != NULL) {
		drop_keys(spec, is_beta_key);
		for (size_t i = 0; i < KC_ARRAY_SIZE(moves); i++) {
			if (!member(spec, moves[i].alpha, NULL))
				continue;
			if ((w = kc_json_ensure_obj(spec, moves[i].wrap)) == NULL)
				return -ENOMEM;
			if ((r = move_member(spec, moves[i].alpha, w, moves[i].beta)) < 0)
				return r;
		}
		rspec = kc_json_obj_of(record, "spec");
		for (size_t i = 0; rspec != NULL && i < KC_ARRAY_SIZE(beta_keys); i++) {
			struct json_object *rv = NULL;

			if (member(rspec, beta_keys[i], &rv) &&
			    (r = fill_from(spec, beta_keys[i], rv)) < 0)
				return r;
		}
	}
	/* Remove the maps the annotation made, unless they hold more now. */
	if (record != NULL && member(record, "metadata", &rmd) && ann != NULL &&
	    json_object_object_length(ann) == 0 &&
	    (rmd == NULL || (member(rmd, "annotations", &w) && w == NULL))) {
		json_object_object_del(md, "annotations");
		if (rmd == NULL && json_object_object_length(md) == 0)
			json_object_object_del(o, "metadata");
	}
	return 0;
}

/* 0 when 'o'[key] is absent or an object (*ret: it, or NULL). */
static int
object_or_absent(struct json_object *o, const char *key, const char *field,
    bool null_ok, struct json_object **ret, struct kc_status *st)
{
	struct json_object *v = NULL;

	*ret = NULL;
	if (o == NULL || !member(o, key, &v))
		return 0;
	if (v == NULL && null_ok)
		return 0;
	if (!json_object_is_type(v, json_type_object))
		return kc_status_set(st, KC_EINVALID, "%s: must be an object", field);
	*ret = v;
	return 0;
}

static bool
is_version(const char *v)
{
	return v != NULL && (strcmp(v, TY_V1ALPHA1) == 0 || strcmp(v, TY_V1BETA1) == 0);
}

int
ty_convert(const struct json_object *obj, const char *to, struct json_object **ret,
    struct kc_status *st)
{
	_cleanup_(kc_json_putp) struct json_object *o = NULL;
	struct json_object *spec, *md, *ann, *w;
	const char *from, *kind;
	int r;

	if (!is_version(to))
		return kc_status_set(st, KC_EINVALID, "desired apiVersion \"%.100s\" is not "
		    TY_V1ALPHA1 " or " TY_V1BETA1, to != NULL ? to : "");
	if (!json_object_is_type(obj, json_type_object))
		return kc_status_set(st, KC_EINVALID, "the object must be a JSON object");
	from = kc_json_str(obj, "apiVersion");
	kind = kc_json_str(obj, "kind");
	if (!is_version(from))
		return kc_status_set(st, KC_EINVALID, "apiVersion: \"%.100s\" is not "
		    TY_V1ALPHA1 " or " TY_V1BETA1, from != NULL ? from : "");
	if (kind == NULL || (strcmp(kind, "Run") != 0 && strcmp(kind, "ResourceProfile") != 0))
		return kc_status_set(st, KC_EINVALID, "kind: \"%.100s\" is not Run or "
		    "ResourceProfile", kind != NULL ? kind : "");
	if ((o = kc_json_copy(obj)) == NULL)
		return -ENOMEM;

	if (strcmp(kind, "Run") == 0 && strcmp(from, to) != 0) {
		if ((r = object_or_absent(o, "metadata", "metadata", false, &md, st)) < 0 ||
		    (r = object_or_absent(md, "annotations", "metadata.annotations", false,
		    &ann, st)) < 0 ||
		    (r = object_or_absent(o, "spec", "spec", true, &spec, st)) < 0)
			return r;
		if (strcmp(to, TY_V1ALPHA1) == 0) {
			for (size_t i = 0; spec != NULL && i < KC_ARRAY_SIZE(beta_keys); i++) {
				char field[32];

				(void)snprintf(field, sizeof(field), "spec.%s", beta_keys[i]);
				if ((r = object_or_absent(spec, beta_keys[i], field, true, &w,
				    st)) < 0)
					return r;
			}
			r = down(o, spec, md, ann);
		} else {
			r = up(o, spec, md, ann);
		}
		if (r < 0)
			return r;
	}
	if ((r = kc_json_set_str(o, "apiVersion", to)) < 0)
		return r;
	*ret = o;
	o = NULL;
	return 0;
}

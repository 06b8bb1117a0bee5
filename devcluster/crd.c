/*
 * crd.c: CustomResourceDefinitions, and the custom resources they define.
 *
 * kube-apiserver's apiextensions-apiserver does three jobs here, and so
 * does this file:
 *
 *	the CRD type	apiextensions.k8s.io/v1 customresourcedefinitions
 *			gets hooks (crd_ops): schema_crd_default() and
 *			schema_crd_validate() on every write (422 with
 *			causes; 400 for a field of the wrong JSON type),
 *			and the naming and establishing controllers, run
 *			synchronously in prepare_create/prepare_update:
 *			status.acceptedNames, NamesAccepted (names that
 *			another CRD of the group already uses are refused,
 *			"\"x\" is already in use"), Established, and
 *			storedVersions, which gains the storage version and
 *			is never trimmed. The first DELETE adds the
 *			customresourcecleanup finalizer and Terminating.
 *
 *	the types	a storage subscriber follows every CRD change and
 *			keeps one registry type per served version of an
 *			established CRD (names from status.acceptedNames),
 *			so discovery changes at once. A type whose names,
 *			scope or subresources did not change is kept (its
 *			watches live on); otherwise it is replaced, and a
 *			version that is no longer served, or a CRD that is
 *			gone, takes its types and their watches away.
 *
 *	the resources	each version's type carries its own copy of
 *			cr_ops, whose ops_arg is the version (struct
 *			crd_ver): fieldValidation and pruning on the
 *			decoded body, defaults, schema validation (422
 *			"Run.trainyard.dev \"r1\" is invalid: ..."),
 *			selectable fields, deprecation warnings, the
 *			scale subresource, and conversion; its Table
 *			converter (additionalPrinterColumns) is what
 *			crd_plugin's table_conv gives the core.
 *
 * Conversion: objects are stored in the storage version of the moment
 * and keep the apiVersion they were stored at. With strategy None only
 * apiVersion changes between versions, and reads apply the defaults of
 * the version read. With strategy Webhook every object whose stored
 * version is not the one asked for goes through hooks.convert (the
 * conversion webhook caller, convwebhook.c), reads and writes alike;
 * such a CRD's writes are defaulted and validated with the schema of
 * the version they are stored in. A CRD update or create appends the
 * storage version to status.storedVersions, which only its status
 * subresource trims, and a stored version must stay in spec.versions.
 *
 * Deleting a CRD follows the finalizer controller: once the first
 * DELETE set deletionTimestamp, creates of its resources get 405, a
 * loop timer deletes every resource (finalizers are honoured: it
 * retries until they are gone), then marks Terminating False
 * (InstanceDeletionCompleted), removes the finalizer, and the CRD is
 * deleted; its types leave the registry and their watches end.
 *
 * CRDs reloaded from storage without events (persistence) are picked up
 * by crd_sync_all(), which crd_init() runs at once and again from a loop
 * timer when the loop starts.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/patch.h>
#include <kc/sbuf.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "devcluster.h"
#include "crd.h"
#include "fieldmanager.h"
#include "schema.h"
#include "table.h"

#define CRD_GROUP		"apiextensions.k8s.io"
#define CRD_RESOURCE		"customresourcedefinitions"
#define CRD_FINALIZER		"customresourcecleanup.apiextensions.k8s.io"
#define CRD_NAMES_MAX		64	/* short names, categories, fields kept */
#define CRD_NAME_ERRS_MAX	16	/* naming conflicts reported */
#define CRD_CLEANUP_MS		100	/* retry period while resources remain */
#define CRD_RETRY_MS		1000	/* sync again after a failure (-ENOMEM) */
#define CRD_KEYDEFS_MAX		64	/* list-map key defaults kept per version */
#define GO_POINTER		"0xc000123456"	/* an address as Go prints a pointer */

struct crd;

/* One version of a CRD: its type (when served) and what its hooks read. */
struct crd_ver {
	TAILQ_ENTRY(crd_ver)	 link;
	struct crd		*crd;
	char			*name;		/* "v1beta1" */
	struct dc_rtype		*rt;		/* NULL when not served */
	struct dc_type_ops	 ops;		/* cr_ops, field_selectors set */
	const struct json_object *schema;	/* borrowed from crd->obj */
	struct table_conv	*tc;
	char			*warning;	/* Warning header value, or NULL */
	char			**selectable;	/* selectableFields, NULL-terminated */
	char			*spec_replicas;	/* scale paths ("spec.replicas") */
	char			*status_replicas;
	char			*label_selector;
	bool			 has_defaults;	/* reads need schema_default() */
	bool			 seen;		/* during a sync */
	char			*keydefs[CRD_KEYDEFS_MAX];	/* fm key defaults */
	size_t			 nkeydefs;
};

TAILQ_HEAD(crd_ver_list, crd_ver);

struct crd {
	TAILQ_ENTRY(crd)	 link;
	char			*name;		/* "runs.trainyard.dev" */
	struct json_object	*obj;		/* the stored CRD (a reference) */
	char			*group;
	char			*plural;	/* spec.names.plural (the storage) */
	char			*storage;	/* the storage version */
	struct dc		*dc;
	bool			 terminating;
	bool			 webhook;	/* conversion strategy Webhook */
	bool			 seen;
	struct crd_ver_list	 vers;
};

TAILQ_HEAD(crd_list, crd);

struct crd_state {
	struct dc		*dc;
	struct crd_list		 crds;
	struct dc_timer		 sync_timer;
	struct dc_timer		 cleanup_timer;
	bool			 subscribed;
};

static const struct dc_type_ops cr_ops;
static const struct dc_type_ops crd_ops;

/*
 * Small helpers
 */

static size_t
arr_len(const struct json_object *a)
{
	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static struct json_object *
arr_at(const struct json_object *a, size_t i)
{
	return json_object_array_get_idx(a, i);
}

static const char *
str_or(const char *s, const char *def)
{
	return s != NULL ? s : def;
}

static bool
str_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* Whether the JSON array 'arr' holds the string 's'. */
static bool
jstrv_has(const struct json_object *arr, const char *s)
{
	for (size_t i = 0; i < arr_len(arr); i++)
		if (str_eq(json_object_get_string(arr_at(arr, i)), s) &&
		    json_object_is_type(arr_at(arr, i), json_type_string))
			return true;
	return false;
}

static void
stamp_now(char buf[KC_TIME_MAX])
{
	if (kc_time_format(kc_clock_wall(), buf, KC_TIME_MAX) < 0)
		(void)kc_strlcpy(buf, "1970-01-01T00:00:00Z", KC_TIME_MAX);
}

static void
strv_free(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		kc_free(v[i]);
	kc_free(v);
}

/* A "spec.replicas" path from a JSONPath ".spec.replicas"; NULL: -ENOMEM. */
static char *
dotted(const char *jsonpath)
{
	return kc_strdup(jsonpath[0] == '.' ? jsonpath + 1 : jsonpath);
}

/* Copies schema.c's field errors into the core's list, skipping duplicates. */
static void
errs_merge(struct dc_errs *errs, const struct schema_errs *se)
{
	for (size_t i = 0; i < se->n; i++) {
		const struct schema_err *e = &se->items[i];
		bool dup = false;

		for (size_t j = 0; j < errs->n && !dup; j++)
			dup = strcmp(errs->items[j].field, e->field) == 0 &&
			    strcmp(errs->items[j].body, e->body) == 0;
		if (!dup)
			errs_add(errs, e->type, e->field, "%s", e->body);
	}
	if (se->truncated)
		errs->truncated = true;
}

/* Logs a warning about CRD 'name' (may be NULL). */
static void _printf_(2, 3)
crd_warn(const char *name, const char *fmt, ...)
{
	struct kc_log_ctx lc = { .action = "crd", .name = name };
	va_list ap;

	va_start(ap, fmt);
	kc_logv(KC_LOG_WARN, &lc, NULL, 0, fmt, ap);
	va_end(ap);
}

static struct dc_rtype *
crd_type(const struct dc *dc)
{
	return registry_find(dc, CRD_GROUP, "v1", CRD_RESOURCE);
}

static const struct crd_ver *
ver_of(const struct dc_rtype *rt)
{
	return crd_owns(rt) ? rt->ops_arg : NULL;
}

/*
 * Conditions (apihelpers.SetCRDCondition)
 */

static struct json_object *
cond_find(const struct json_object *status, const char *type)
{
	struct json_object *conds = kc_json_arr_of(status, "conditions");

	for (size_t i = 0; i < arr_len(conds); i++)
		if (str_eq(kc_json_str(arr_at(conds, i), "type"), type))
			return arr_at(conds, i);
	return NULL;
}

static bool
cond_is(const struct json_object *crd, const char *type, const char *status)
{
	return str_eq(kc_json_str(cond_find(kc_json_obj_of(crd, "status"), type), "status"),
	    status);
}

/*
 * Sets a condition of 'status' (which must hold a "conditions" array):
 * a new one is appended; an existing one keeps its lastTransitionTime
 * unless its status changes.
 */
static int
cond_set(struct json_object *status, const char *type, const char *st, const char *reason,
    const char *message)
{
	struct json_object *conds = kc_json_arr_of(status, "conditions");
	struct json_object *c = cond_find(status, type);
	char stamp[KC_TIME_MAX];

	stamp_now(stamp);
	if (c == NULL) {
		if ((c = json_object_new_object()) == NULL || kc_json_append(conds, c) < 0)
			return -ENOMEM;
		if (kc_json_set_str(c, "type", type) < 0 || kc_json_set_str(c, "status", st) < 0 ||
		    kc_json_set_str(c, "lastTransitionTime", stamp) < 0 ||
		    kc_json_set_str(c, "reason", reason) < 0 ||
		    kc_json_set_str(c, "message", message) < 0)
			return -ENOMEM;
		return 0;
	}
	if ((!str_eq(kc_json_str(c, "status"), st) ||
	    kc_json_str(c, "lastTransitionTime") == NULL) &&
	    kc_json_set_str(c, "lastTransitionTime", stamp) < 0)
		return -ENOMEM;
	if (kc_json_set_str(c, "status", st) < 0 || kc_json_set_str(c, "reason", reason) < 0 ||
	    kc_json_set_str(c, "message", message) < 0)
		return -ENOMEM;
	return 0;
}

/*
 * The naming and establishing controllers
 */

/* Names other CRDs of a group hold (their status.acceptedNames). */
struct names_used {
	struct json_object	**objs;
	size_t			  n;
	const char		 *self;
	const char		 *group;
};

static bool
name_used(const struct names_used *u, const char *name, bool kinds)
{
	for (size_t i = 0; i < u->n; i++) {
		const struct json_object *o = u->objs[i];
		const struct json_object *an = kc_json_get(o, "status", "acceptedNames");

		if (str_eq(kc_json_str(o, "metadata", "name"), u->self) ||
		    !str_eq(kc_json_str(o, "spec", "group"), u->group))
			continue;
		if (kinds) {
			if (str_eq(kc_json_str(an, "kind"), name) ||
			    str_eq(kc_json_str(an, "listKind"), name))
				return true;
		} else if (str_eq(kc_json_str(an, "plural"), name) ||
		    str_eq(kc_json_str(an, "singular"), name) ||
		    jstrv_has(kc_json_get(an, "shortNames"), name))
			return true;
	}
	return false;
}

struct name_errs {
	char	 msg[CRD_NAME_ERRS_MAX][DC_SEGMENT_MAX + 32];
	size_t	 n;
};

static void
name_err(struct name_errs *e, const char *name)
{
	char q[DC_SEGMENT_MAX + 8], m[sizeof(e->msg[0])];

	(void)snprintf(m, sizeof(m), "%s is already in use", kc_sbuf_quoted(q, sizeof(q), name));
	for (size_t i = 0; i < e->n; i++)
		if (strcmp(e->msg[i], m) == 0)
			return;
	if (e->n < CRD_NAME_ERRS_MAX)
		(void)kc_strlcpy(e->msg[e->n++], m, sizeof(e->msg[0]));
}

/* equalToAcceptedOrFresh: true when 'req' may be accepted. */
static bool
fresh(const struct names_used *u, const char *req, const char *acc, bool kinds,
    struct name_errs *e)
{
	if (str_eq(req, acc) || (req == NULL && acc == NULL))
		return true;
	if (req == NULL || !name_used(u, req, kinds))
		return true;
	name_err(e, req);
	return false;
}

static int
put_str_nonempty(struct json_object *o, const char *key, const char *v)
{
	if (v == NULL || v[0] == '\0')
		return 0;
	return kc_json_set_str(o, key, v);
}

static int
put_copy(struct json_object *o, const char *key, const struct json_object *v)
{
	struct json_object *cp;

	if (v == NULL || arr_len(v) == 0)
		return 0;
	if ((cp = kc_json_copy(v)) == NULL)
		return -ENOMEM;
	return kc_json_put(o, key, cp);
}

/*
 * The accepted names of 'crd' (requested in spec.names, previously
 * accepted in 'accepted') against the other CRDs of its group, as the
 * naming controller's calculateNamesAndConditions() does. A new object
 * in Go's field order.
 */
static int
accepted_names(const struct names_used *u, const struct json_object *req,
    const struct json_object *acc, struct name_errs *e, struct json_object **ret)
{
	struct json_object *out = json_object_new_object();
	struct json_object *rsn = kc_json_get(req, "shortNames");
	struct json_object *asn = kc_json_get(acc, "shortNames");
	const char *plural, *singular, *kind, *list_kind;
	bool sn_ok = true;

	if (out == NULL)
		return -ENOMEM;
	plural = kc_json_str(req, "plural");
	if (!fresh(u, plural, kc_json_str(acc, "plural"), false, e))
		plural = kc_json_str(acc, "plural");
	singular = kc_json_str(req, "singular");
	if (!fresh(u, singular, kc_json_str(acc, "singular"), false, e))
		singular = kc_json_str(acc, "singular");
	if (!kc_json_equal(rsn, asn))
		for (size_t i = 0; i < arr_len(rsn); i++) {
			const char *sn = json_object_get_string(arr_at(rsn, i));

			if (!jstrv_has(asn, sn) && !fresh(u, sn, NULL, false, e))
				sn_ok = false;
		}
	kind = kc_json_str(req, "kind");
	if (!fresh(u, kind, kc_json_str(acc, "kind"), true, e))
		kind = kc_json_str(acc, "kind");
	list_kind = kc_json_str(req, "listKind");
	if (!fresh(u, list_kind, kc_json_str(acc, "listKind"), true, e))
		list_kind = kc_json_str(acc, "listKind");
	if (kc_json_set_str(out, "plural", str_or(plural, "")) < 0 ||
	    put_str_nonempty(out, "singular", singular) < 0 ||
	    put_copy(out, "shortNames", sn_ok ? rsn : asn) < 0 ||
	    kc_json_set_str(out, "kind", str_or(kind, "")) < 0 ||
	    put_str_nonempty(out, "listKind", list_kind) < 0 ||
	    put_copy(out, "categories", kc_json_get(req, "categories")) < 0) {
		json_object_put(out);
		return -ENOMEM;
	}
	*ret = out;
	return 0;
}

/*
 * Rebuilds status (conditions, acceptedNames, storedVersions) of 'crd',
 * a private tree: on create from nothing, on update from the stored
 * status the core copied into it.
 */
static int
crd_set_status(struct dc *dc, struct json_object *crd, bool create)
{
	struct dc_rtype *rt = crd_type(dc);
	struct names_used u = { 0 };
	struct name_errs e = { .n = 0 };
	struct json_object *old = create ? NULL : kc_json_obj_of(crd, "status");
	struct json_object *st = NULL, *names = NULL, *stored, *conds;
	const char *sv = schema_crd_storage_version(crd);
	char msg[sizeof(e.msg) + 8];
	int r = -ENOMEM;

	u.self = kc_json_str(crd, "metadata", "name");
	u.group = kc_json_str(crd, "spec", "group");
	if (rt != NULL && (r = coll_list(rt->coll, NULL, NULL, &u.objs, &u.n)) < 0)
		return r;
	if ((r = accepted_names(&u, kc_json_get(crd, "spec", "names"),
	    kc_json_get(old, "acceptedNames"), &e, &names)) < 0)
		goto out;
	r = -ENOMEM;
	if ((st = json_object_new_object()) == NULL)
		goto out;
	conds = kc_json_get(old, "conditions");
	if (kc_json_put(st, "conditions", arr_len(conds) > 0 ? kc_json_copy(conds) :
	    json_object_new_array()) < 0)
		goto out;
	if (e.n == 0)
		r = cond_set(st, "NamesAccepted", "True", "NoConflicts", "no conflicts found");
	else {
		size_t off = 0;

		msg[0] = '\0';
		for (size_t i = 0; i < e.n; i++) {
			int n = snprintf(msg + off, sizeof(msg) - off, "%s%s%s",
			    i == 0 && e.n > 1 ? "[" : "", i > 0 ? ", " : "", e.msg[i]);

			if (n > 0 && (size_t)n < sizeof(msg) - off)
				off += (size_t)n;
		}
		if (e.n > 1 && off + 1 < sizeof(msg))
			(void)kc_strlcpy(msg + off, "]", sizeof(msg) - off);
		r = cond_set(st, "NamesAccepted", "False", "NameConflict", msg);
	}
	if (r < 0)
		goto out;
	if (e.n == 0) {
		if (!cond_is(crd, "Established", "True") || create)
			r = cond_set(st, "Established", "True", "InitialNamesAccepted",
			    "the initial names have been accepted");
	} else if (cond_find(st, "Established") == NULL)
		r = cond_set(st, "Established", "False", "NotAccepted",
		    "not all names are accepted");
	if (r < 0)
		goto out;
	r = -ENOMEM;
	if (kc_json_put(st, "acceptedNames", names) < 0) {
		names = NULL;
		goto out;
	}
	names = NULL;
	stored = kc_json_get(old, "storedVersions");
	if (kc_json_put(st, "storedVersions", arr_len(stored) > 0 ? kc_json_copy(stored) :
	    json_object_new_array()) < 0)
		goto out;
	stored = kc_json_arr_of(st, "storedVersions");
	if (sv != NULL && !jstrv_has(stored, sv) &&
	    kc_json_append(stored, json_object_new_string(sv)) < 0)
		goto out;
	if (kc_json_put(crd, "status", st) < 0) {
		st = NULL;
		goto out;
	}
	st = NULL;
	r = 0;
out:
	if (names != NULL)
		json_object_put(names);
	if (st != NULL)
		json_object_put(st);
	objs_free(u.objs, u.n);
	return r;
}

/*
 * The CRD type's hooks
 */

/* SetDefaults_CustomResourceDefinitionSpec, then schema_crd_default(). */
static int
crd_defaults(struct dc_write_ctx *wc, struct json_object *obj)
{
	struct json_object *names = kc_json_get(obj, "spec", "names");
	const char *kind = kc_json_str(names, "kind");
	int r;

	(void)wc;
	if (json_object_is_type(names, json_type_object) && kind != NULL && kind[0] != '\0') {
		const char *singular = kc_json_str(names, "singular");
		const char *lk = kc_json_str(names, "listKind");

		if (singular == NULL || singular[0] == '\0') {
			char low[DC_SEGMENT_MAX];
			size_t i;

			for (i = 0; kind[i] != '\0' && i + 1 < sizeof(low); i++)
				low[i] = (char)(kind[i] >= 'A' && kind[i] <= 'Z' ? kind[i] + 32 :
				    kind[i]);
			low[i] = '\0';
			if ((r = kc_json_set_str(names, "singular", low)) < 0)
				return r;
		}
		if (lk == NULL || lk[0] == '\0') {
			char *l = kc_asprintf("%sList", kind);

			if (l == NULL)
				return -ENOMEM;
			r = kc_json_set_str(names, "listKind", l);
			kc_free(l);
			if (r < 0)
				return r;
		}
	}
	return schema_crd_default(obj);
}

/* Undecodable CRDs: 400 before anything else looks at them. */
static int
crd_decoded(struct dc_write_ctx *wc, struct json_object *obj, struct dc_resp *resp)
{
	struct kc_status st = { 0 };
	int r;

	if ((r = crd_defaults(wc, obj)) < 0) {
		errors_internal(resp, r);
		return r;
	}
	r = schema_crd_validate(obj, NULL, NULL, &st);
	if (r == -ENOMEM) {
		errors_internal(resp, r);
		return r;
	}
	if (r == KC_EBADREQUEST || r == -E2BIG) {
		errors_reply(resp, KC_EBADREQUEST, "%s", st.message[0] != '\0' ? st.message :
		    "the CustomResourceDefinition cannot be decoded");
		return KC_EBADREQUEST;
	}
	return 0;
}

static int
crd_prepare_create(struct dc_write_ctx *wc, struct json_object *obj)
{
	return crd_set_status(wc->dc, obj, true);
}

static int
crd_prepare_update(struct dc_write_ctx *wc, struct json_object *obj,
    const struct json_object *old)
{
	(void)old;
	return crd_set_status(wc->dc, obj, false);
}

/*
 * The value 1.27 printed for "must have the storage version": the
 * version, as Go's %#v prints an apiextensions.CustomResourceDefinitionVersion
 * (pointers print as addresses, which cannot be known: a fixed one).
 */
static void
version_struct_repr(char *buf, size_t size, const struct json_object *v)
{
	struct kc_sbuf b;
	const char *name = kc_json_str(v, "name"), *warn = kc_json_str(v, "deprecationWarning");

	kc_sbuf_init(&b, buf, size);
	kc_sbuf_puts(&b, "apiextensions.CustomResourceDefinitionVersion{Name:");
	kc_sbuf_quote(&b, name != NULL ? name : "", name != NULL ? strlen(name) : 0);
	kc_sbuf_printf(&b, ", Served:%s, Storage:%s, Deprecated:%s, DeprecationWarning:"
	    "(*string)(%s), Schema:(*apiextensions.CustomResourceValidation)(%s), "
	    "Subresources:(*apiextensions.CustomResourceSubresources)(%s), "
	    "AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition%s}",
	    kc_json_bool(v, false, "served") ? "true" : "false",
	    kc_json_bool(v, false, "storage") ? "true" : "false",
	    kc_json_bool(v, false, "deprecated") ? "true" : "false",
	    warn != NULL ? GO_POINTER : "nil",
	    kc_json_get(v, "schema") != NULL ? GO_POINTER : "nil",
	    kc_json_get(v, "subresources") != NULL ? GO_POINTER : "nil",
	    arr_len(kc_json_get(v, "additionalPrinterColumns")) > 0 ? "{...}" : "(nil)");
	(void)kc_sbuf_end(&b);
}

/*
 * ValidateCustomResourceDefinitionStoredVersions: every stored version
 * stays in spec.versions (so a version is removed only after the
 * storage migration trimmed it from status.storedVersions), and the
 * storage version is among them. Checked on updates: a create's status
 * is the server's. The texts follow the emulated minor: from 1.28 the
 * storage version error shows the stored versions (1.27: the version),
 * from 1.33 a missing one explains the storage migration (before: "must
 * appear in spec.versions").
 */
static void
stored_versions_validate(unsigned minor, const struct json_object *crd, struct dc_errs *errs)
{
	const struct json_object *stored = kc_json_get(crd, "status", "storedVersions");
	const char *sv = schema_crd_storage_version(crd);
	char field[64], repr[1024], detail[3 * DC_SEGMENT_MAX + 256];

	if (arr_len(stored) == 0) {
		errs_invalid(errs, "status.storedVersions",
		    json_object_is_type(stored, json_type_array) ? "[]string{}" : "[]string(nil)",
		    "must have at least one stored version");
		return;
	}
	if (sv != NULL && !jstrv_has(stored, sv)) {
		if (minor >= 28)
			schema_crd_strings_repr(repr, sizeof(repr), stored);
		else
			version_struct_repr(repr, sizeof(repr), schema_crd_version(crd, sv));
		(void)snprintf(detail, sizeof(detail), "must have the storage version %.*s",
		    DC_SEGMENT_MAX - 1, sv);
		errs_invalid(errs, "status.storedVersions", repr, detail);
	}
	for (size_t i = 0; i < arr_len(stored); i++) {
		const char *name = json_object_get_string(arr_at(stored, i));
		int n = DC_SEGMENT_MAX - 1;

		if (name != NULL && schema_crd_version(crd, name) != NULL)
			continue;
		if (name == NULL)
			name = "";
		(void)snprintf(field, sizeof(field), "status.storedVersions[%zu]", i);
		(void)kc_sbuf_quoted(repr, sizeof(repr), name);
		if (minor >= 33)
			(void)snprintf(detail, sizeof(detail), "missing from spec.versions; %.*s was "
			    "previously a storage version, and must remain in spec.versions until "
			    "a storage migration ensures no data remains persisted in %.*s and "
			    "removes %.*s from status.storedVersions", n, name, n, name, n, name);
		else
			(void)snprintf(detail, sizeof(detail), "must appear in spec.versions");
		errs_invalid(errs, field, repr, detail);
	}
}

static int
crd_validate(struct dc_write_ctx *wc, const struct json_object *obj,
    const struct json_object *old, struct dc_errs *errs)
{
	struct schema_errs *se;
	struct kc_status st = { 0 };
	int r;

	if ((se = kc_calloc(1, sizeof(*se))) == NULL)
		return -ENOMEM;
	r = schema_crd_validate(obj, old, se, &st);
	if (r == KC_EBADREQUEST || r == -E2BIG)
		errs_add(errs, "Invalid", "", "%s", st.message);
	else if (r == KC_EINVALID)
		errs_merge(errs, se);
	kc_free(se);
	if (r != -ENOMEM && old != NULL)
		stored_versions_validate(api_minor(wc->dc), obj, errs);
	return r == -ENOMEM ? r : 0;
}

/* The first DELETE: the cleanup finalizer and Terminating (REST.Delete). */
static int
crd_prepare_delete(struct dc_write_ctx *wc, struct json_object *obj)
{
	struct json_object *meta = kc_json_obj_of(obj, "metadata");
	struct json_object *fins = kc_json_arr_of(meta, "finalizers");
	struct json_object *st;
	int r;

	(void)wc;
	if (meta == NULL)
		return -EINVAL;
	if (fins == NULL) {
		if ((fins = json_object_new_array()) == NULL ||
		    (r = kc_json_put(meta, "finalizers", fins)) < 0)
			return -ENOMEM;
	}
	if (!jstrv_has(fins, CRD_FINALIZER) &&
	    kc_json_append(fins, json_object_new_string(CRD_FINALIZER)) < 0)
		return -ENOMEM;
	if ((st = kc_json_ensure_obj(obj, "status")) == NULL)
		return -ENOMEM;
	if (kc_json_arr_of(st, "conditions") == NULL &&
	    kc_json_put(st, "conditions", json_object_new_array()) < 0)
		return -ENOMEM;
	return cond_set(st, "Terminating", "True", "InstanceDeletionInProgress",
	    "CustomResource deletion is in progress");
}

static const struct dc_type_ops crd_ops = {
	.defaults = crd_defaults,
	.prepare_create = crd_prepare_create,
	.prepare_update = crd_prepare_update,
	.validate = crd_validate,
	.decoded = crd_decoded,
	.prepare_delete = crd_prepare_delete,
};

/*
 * Custom resources: the hooks of each served version
 */

enum fv_mode { FV_IGNORE, FV_WARN, FV_STRICT };

static enum fv_mode
fv_mode(const struct dc_req *req)
{
	const char *v = req != NULL ? req_param(req, "fieldValidation") : "Ignore";

	if (v == NULL || v[0] == '\0' || strcmp(v, "Warn") == 0)
		return FV_WARN;
	return strcmp(v, "Strict") == 0 ? FV_STRICT : FV_IGNORE;
}

/* ObjectMeta's JSON fields; anything else in metadata is unknown. */
static bool
meta_field(const char *k)
{
	static const char *const known[] = {
		"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
		"generation", "creationTimestamp", "deletionTimestamp",
		"deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
		"finalizers", "managedFields", NULL
	};

	for (size_t i = 0; known[i] != NULL; i++)
		if (strcmp(known[i], k) == 0)
			return true;
	return false;
}

/* Drops unknown root metadata fields, appending "metadata.<f>" to 'unknown'. */
static int
prune_meta(struct json_object *obj, struct json_object *unknown)
{
	struct json_object *meta = kc_json_obj_of(obj, "metadata");
	char *drop[32];
	size_t n;
	int r = 0;

	if (meta == NULL)
		return 0;
	do {
		n = 0;
		json_object_object_foreach(meta, k, v) {
			(void)v;
			if (!meta_field(k) && n < KC_ARRAY_SIZE(drop))
				drop[n++] = k;
		}
		for (size_t i = 0; i < n; i++) {
			if (unknown != NULL && r == 0) {
				char *p = kc_asprintf("metadata.%s", drop[i]);

				if (p == NULL ||
				    kc_json_append(unknown, json_object_new_string(p)) < 0)
					r = -ENOMEM;
				kc_free(p);
			}
			json_object_object_del(meta, drop[i]);
		}
	} while (n == KC_ARRAY_SIZE(drop));
	return r;
}

/*
 * fieldValidation, pruning and defaulting of a request body in the
 * URL's version: Strict answers 400 listing the unknown fields, Warn
 * drops them with a warning each, Ignore drops them silently.
 */
static int
cr_decoded(struct dc_write_ctx *wc, struct json_object *obj, struct dc_resp *resp)
{
	const struct crd_ver *v = ver_of(wc->rt);
	enum fv_mode mode = fv_mode(wc->req);
	struct json_object *unknown = NULL;
	int r;

	if (v == NULL)
		return 0;
	if ((unknown = json_object_new_array()) == NULL) {
		errors_internal(resp, -ENOMEM);
		return -ENOMEM;
	}
	if ((r = prune_meta(obj, unknown)) < 0)
		goto fail;
	if (v->schema != NULL) {
		struct json_object *u = NULL;

		if ((r = schema_prune(v->schema, obj, &u)) < 0)
			goto fail;
		for (size_t i = 0; i < arr_len(u) && r == 0; i++)
			r = kc_json_append(unknown, json_object_get(arr_at(u, i)));
		json_object_put(u);
		if (r < 0)
			goto fail;
	}
	if (arr_len(unknown) > 0 && mode == FV_STRICT) {
		struct kc_buf b;

		kc_buf_init(&b, 64 * 1024);
		for (size_t i = 0; i < arr_len(unknown); i++)
			if (kc_buf_printf(&b, "%sunknown field \"%s\"", i > 0 ? ", " : "",
			    json_object_get_string(arr_at(unknown, i))) < 0)
				break;
		errors_reply(resp, KC_EBADREQUEST, "%s in version \"%s\" cannot be handled as "
		    "a %s: strict decoding error: %s", wc->rt->kind, wc->rt->version,
		    wc->rt->kind, kc_buf_str(&b));
		kc_buf_free(&b);
		json_object_put(unknown);
		return KC_EBADREQUEST;
	}
	if (mode == FV_WARN)
		for (size_t i = 0; i < arr_len(unknown); i++) {
			char text[600];

			(void)snprintf(text, sizeof(text), "unknown field \"%s\"",
			    json_object_get_string(arr_at(unknown, i)));
			if ((r = resp_warning(resp, text)) == -E2BIG)
				break;
			if (r < 0)
				goto fail;
		}
	json_object_put(unknown);
	unknown = NULL;
	if (v->schema != NULL && (r = schema_default(v->schema, obj)) < 0)
		goto fail;
	return 0;
fail:
	if (unknown != NULL)
		json_object_put(unknown);
	if (r == -E2BIG) {
		errors_reply(resp, KC_EBADREQUEST, "%s in version \"%s\" cannot be handled as "
		    "a %s: the object nests too deeply", wc->rt->kind, wc->rt->version,
		    wc->rt->kind);
		return KC_EBADREQUEST;
	}
	errors_internal(resp, r);
	return r;
}

/* Pruning and defaults again (idempotent), for internal writes too. */
/*
 * The version whose schema applies to 'obj': for a CRD with a conversion
 * webhook, the one its apiVersion names (a write the webhook converted
 * to the storage version: another structure); else 'v', whose defaults
 * a write gets, as upstream defaults in the version it decodes.
 */
static const struct crd_ver *
ver_for(const struct crd_ver *v, const struct json_object *obj)
{
	const char *av = kc_json_str(obj, "apiVersion"), *slash;
	const struct crd_ver *o;

	if (v == NULL || !v->crd->webhook || av == NULL || (slash = strchr(av, '/')) == NULL ||
	    strcmp(slash + 1, v->name) == 0)
		return v;
	TAILQ_FOREACH(o, &v->crd->vers, link)
		if (strcmp(o->name, slash + 1) == 0)
			return o;
	return v;
}

static int
cr_defaults(struct dc_write_ctx *wc, struct json_object *obj)
{
	const struct crd_ver *v = ver_for(ver_of(wc->rt), obj);
	int r;

	if (v == NULL || v->schema == NULL)
		return 0;
	if ((r = prune_meta(obj, NULL)) < 0 || (r = schema_prune(v->schema, obj, NULL)) < 0)
		return r;
	return schema_default(v->schema, obj);
}

static int
cr_validate(struct dc_write_ctx *wc, const struct json_object *obj,
    const struct json_object *old, struct dc_errs *errs)
{
	const struct crd_ver *v = ver_for(ver_of(wc->rt), obj);
	struct schema_errs *se;
	int r;

	(void)old;
	if (v == NULL || v->schema == NULL)
		return 0;
	if ((se = kc_calloc(1, sizeof(*se))) == NULL)
		return -ENOMEM;
	r = schema_validate(v->schema, obj, se);
	if (r == KC_EINVALID)
		errs_merge(errs, se);
	else if (r == -E2BIG)
		errs_add(errs, "Invalid", "", "the object nests deeper than %d levels",
		    SCHEMA_DEPTH_MAX);
	kc_free(se);
	return r == -ENOMEM ? r : 0;
}

/* A shallow copy of 'o' whose apiVersion is 'av'; NULL: -ENOMEM. */
static struct json_object *
with_api_version(const struct json_object *o, const char *av)
{
	struct json_object *out = json_object_new_object();

	if (out == NULL)
		return NULL;
	json_object_object_foreach((struct json_object *)(uintptr_t)o, k, val) {
		if (strcmp(k, "apiVersion") == 0)
			continue;
		if (json_object_object_add(out, k, json_object_get(val)) < 0) {
			json_object_put(val);
			json_object_put(out);
			return NULL;
		}
	}
	if (kc_json_set_str(out, "apiVersion", av) < 0) {
		json_object_put(out);
		return NULL;
	}
	return out;
}

/*
 * 'obj' (in its apiVersion) in 'av' through the CRD's conversion webhook:
 * only inside a request (hooks.convert asks the webhook and the request
 * waits for it), never for a watch event.
 */
static int
webhook_convert(const struct crd *c, const struct json_object *obj, const char *av, bool raw,
    struct json_object **ret)
{
	struct dc *dc = c->dc;

	if (dc == NULL || !dc->conv_allowed || dc->hooks.convert == NULL)
		return KC_EINTERNAL;
	return dc->hooks.convert(dc, c->obj, obj, av, raw, ret);
}

/*
 * Storage to this version: through the webhook when the object is
 * stored at another version of a CRD with strategy Webhook (the hook
 * prunes and defaults with this version's schema); otherwise apiVersion,
 * then the version's defaults.
 */
static int
cr_convert_out(const struct dc_rtype *rt, const struct json_object *stored,
    struct json_object **ret)
{
	const struct crd_ver *v = ver_of(rt);
	struct json_object *out;
	int r;

	if (v != NULL && v->crd->webhook &&
	    !str_eq(kc_json_str(stored, "apiVersion"), rt->api_version))
		return webhook_convert(v->crd, stored, rt->api_version, false, ret);
	if (v != NULL && v->has_defaults) {
		if ((out = kc_json_copy(stored)) == NULL ||
		    kc_json_set_str(out, "apiVersion", rt->api_version) < 0) {
			if (out != NULL)
				json_object_put(out);
			return -ENOMEM;
		}
		if ((r = schema_default(v->schema, out)) < 0) {
			json_object_put(out);
			return r;
		}
		*ret = out;
		return 0;
	}
	if (str_eq(kc_json_str(stored, "apiVersion"), rt->api_version)) {
		*ret = json_object_get((struct json_object *)(uintptr_t)stored);
		return 0;
	}
	if ((out = with_api_version(stored, rt->api_version)) == NULL)
		return -ENOMEM;
	*ret = out;
	return 0;
}

/* This version to storage: the webhook, or (strategy None) apiVersion only. */
static int
cr_convert_in(const struct dc_rtype *rt, const struct json_object *obj,
    struct json_object **ret)
{
	const struct crd_ver *v = ver_of(rt);
	struct json_object *out;
	char av[2 * DC_SEGMENT_MAX + 2];

	if (v == NULL || v->crd->storage == NULL) {
		*ret = json_object_get((struct json_object *)(uintptr_t)obj);
		return 0;
	}
	(void)snprintf(av, sizeof(av), "%s/%s", rt->group, v->crd->storage);
	if (str_eq(kc_json_str(obj, "apiVersion"), av)) {
		*ret = json_object_get((struct json_object *)(uintptr_t)obj);
		return 0;
	}
	if (v->crd->webhook)
		return webhook_convert(v->crd, obj, av, false, ret);
	if ((out = with_api_version(obj, av)) == NULL)
		return -ENOMEM;
	*ret = out;
	return 0;
}

/*
 * The scale subresource (autoscaling/v1 Scale)
 */

/* The value at a dotted path, or NULL. */
static struct json_object *
path_get(const struct json_object *o, const char *path)
{
	char seg[DC_SEGMENT_MAX];
	const char *p = path;

	while (o != NULL && *p != '\0') {
		const char *dot = strchr(p, '.');
		size_t n = dot != NULL ? (size_t)(dot - p) : strlen(p);

		if (n == 0 || n >= sizeof(seg))
			return NULL;
		memcpy(seg, p, n);
		seg[n] = '\0';
		if (!json_object_is_type(o, json_type_object))
			return NULL;
		o = kc_json_get(o, seg);
		p += n + (dot != NULL);
	}
	return (struct json_object *)(uintptr_t)o;
}

/* Sets a dotted path to 'v' (consumed), creating objects on the way. */
static int
path_set(struct json_object *o, const char *path, struct json_object *v)
{
	char seg[DC_SEGMENT_MAX];
	const char *p = path;

	for (;;) {
		const char *dot = strchr(p, '.');
		size_t n = dot != NULL ? (size_t)(dot - p) : strlen(p);

		if (n == 0 || n >= sizeof(seg) || !json_object_is_type(o, json_type_object)) {
			json_object_put(v);
			return -EINVAL;
		}
		memcpy(seg, p, n);
		seg[n] = '\0';
		if (dot == NULL)
			return kc_json_put(o, seg, v);
		if ((o = kc_json_ensure_obj(o, seg)) == NULL) {
			json_object_put(v);
			return -ENOMEM;
		}
		p = dot + 1;
	}
}

static int64_t
path_int(const struct json_object *o, const char *path)
{
	struct json_object *v = path != NULL ? path_get(o, path) : NULL;

	return json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : 0;
}

/* The Scale of a stored custom resource; NULL: -ENOMEM. */
static struct json_object *
scale_of(const struct crd_ver *v, const struct json_object *obj)
{
	static const char *const keep[] = {
		"name", "namespace", "uid", "resourceVersion", "creationTimestamp", NULL
	};
	struct json_object *s = json_object_new_object(), *meta, *spec, *status;
	const char *sel = v->label_selector != NULL ?
	    json_object_get_string(path_get(obj, v->label_selector)) : NULL;
	int64_t want = path_int(obj, v->spec_replicas);

	if (s == NULL || kc_json_set_str(s, "kind", "Scale") < 0 ||
	    kc_json_set_str(s, "apiVersion", "autoscaling/v1") < 0 ||
	    (meta = kc_json_ensure_obj(s, "metadata")) == NULL ||
	    (spec = kc_json_ensure_obj(s, "spec")) == NULL ||
	    (status = kc_json_ensure_obj(s, "status")) == NULL)
		goto oom;
	for (size_t i = 0; keep[i] != NULL; i++) {
		const char *val = kc_json_str(obj, "metadata", keep[i]);

		if (val != NULL && val[0] != '\0' && kc_json_set_str(meta, keep[i], val) < 0)
			goto oom;
	}
	if ((want != 0 && kc_json_set_int(spec, "replicas", want) < 0) ||
	    kc_json_set_int(status, "replicas", path_int(obj, v->status_replicas)) < 0 ||
	    (sel != NULL && sel[0] != '\0' && kc_json_set_str(status, "selector", sel) < 0))
		goto oom;
	return s;
oom:
	if (s != NULL)
		json_object_put(s);
	return NULL;
}

static void
scale_reply(struct dc_resp *resp, const struct crd_ver *v, const struct json_object *obj)
{
	struct json_object *s = scale_of(v, obj);

	if (s == NULL || resp_json(resp, 200, s) < 0)
		errors_internal(resp, -ENOMEM);
	if (s != NULL)
		json_object_put(s);
}

/* A scale update or patch; 0 once a reply is written, or a code (500). */
static int
scale_write(struct dc *dc, const struct dc_rtype *rt, const struct crd_ver *v,
    const struct dc_req *req, const struct dc_route *route, const struct json_object *cur,
    const struct json_object *view, struct dc_resp *resp)
{
	struct json_object *next = NULL, *stored = NULL, *out = NULL;
	struct json_object *cur_scale;
	struct dc_write_ctx wc = { .dc = dc, .rt = rt, .req = req, .op = DC_OP_UPDATE,
	    .subresource = "scale", .old = cur };
	struct dc_errs errs = { 0 };
	const char *dry = req_param(req, "dryRun");
	int64_t replicas = 0, gen;
	int r = 0;

	if ((cur_scale = scale_of(v, view)) == NULL) {
		errors_internal(resp, -ENOMEM);
		return 0;
	}
	r = api_scale_request(req, rt, route->verb, route->name, cur_scale,
	    kc_json_str(cur, "metadata", "resourceVersion"), &replicas, resp);
	json_object_put(cur_scale);
	if (r < 0)
		return 0;
	if ((next = kc_json_copy(cur)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = path_set(next, v->spec_replicas, json_object_new_int64(replicas))) < 0 ||
	    (r = cr_validate(&wc, next, cur, &errs)) < 0)
		goto out;
	if (errs.n > 0) {
		errors_invalid(resp, rt->qualified_kind, rt->group, route->name, &errs);
		goto out;
	}
	gen = kc_json_int(cur, 1, "metadata", "generation");
	if (!kc_json_equal(path_get(cur, v->spec_replicas), path_get(next, v->spec_replicas)))
		gen++;
	if ((r = kc_json_set_int(kc_json_obj_of(next, "metadata"), "generation", gen)) < 0)
		goto out;
	if (dry != NULL && strcmp(dry, "All") == 0) {
		if ((r = api_view(rt, next, &out)) == 0)
			scale_reply(resp, v, out);
		goto out;
	}
	r = storage_update(dc->store, rt->coll, next, 0, &stored);
	next = NULL;
	if (r < 0 || (r = api_view(rt, stored, &out)) < 0)
		goto out;
	scale_reply(resp, v, out);
out:
	if (next != NULL)
		json_object_put(next);
	if (stored != NULL)
		json_object_put(stored);
	if (out != NULL)
		json_object_put(out);
	return r < 0 ? r : 0;
}

/*
 * GET, PUT and PATCH of <resource>/scale: the Scale is built from the
 * resource at specReplicasPath, statusReplicasPath and
 * labelSelectorPath; a write sets specReplicasPath and stores the
 * resource (validated against its schema, generation bumped).
 */
static int
cr_scale(struct dc *dc, const struct dc_rtype *rt, const struct crd_ver *v,
    const struct dc_req *req, const struct dc_route *route, struct dc_resp *resp)
{
	const struct json_object *cur = coll_get(rt->coll, rt->namespaced ? route->ns : "",
	    route->name);
	struct json_object *view = NULL;
	int r;

	if (cur == NULL) {
		errors_notfound(resp, rt, route->name);
		return 1;
	}
	if ((r = api_view(rt, cur, &view)) < 0)
		return r;
	if (strcmp(route->verb, "get") == 0)
		scale_reply(resp, v, view);
	else
		r = scale_write(dc, rt, v, req, route, cur, view, resp);
	json_object_put(view);
	return r < 0 ? r : 1;
}

/*
 * Every request on a custom resource type: the deprecation warning,
 * fieldValidation, 405 for creates while the CRD terminates, and the
 * scale subresource.
 */
static int
cr_request(struct dc *dc, const struct dc_rtype *rt, const struct dc_req *req,
    const struct dc_route *route, struct dc_resp *resp)
{
	const struct crd_ver *v = ver_of(rt);
	const char *verb = route->verb, *fv = req_param(req, "fieldValidation");
	int r;

	if (v == NULL)
		return 0;
	if (v->warning != NULL && (r = resp_header(resp, "Warning", v->warning)) < 0 &&
	    r != -E2BIG)
		return r;
	if (strcmp(verb, "create") == 0 && v->crd->terminating) {
		errors_obj(resp, KC_EMETHOD, rt, "", "create not allowed while custom resource "
		    "definition is terminating");
		return 1;
	}
	if (fv != NULL && fv[0] != '\0' && strcmp(fv, "Ignore") != 0 &&
	    strcmp(fv, "Warn") != 0 && strcmp(fv, "Strict") != 0 &&
	    (strcmp(verb, "create") == 0 || strcmp(verb, "update") == 0 ||
	    strcmp(verb, "patch") == 0)) {
		struct dc_errs errs = { 0 };
		char kind[64];

		errs_unsupported(&errs, "fieldValidation", fv,
		    (const char *const []){ "", "Ignore", "Strict", "Warn", NULL });
		(void)snprintf(kind, sizeof(kind), "%s.meta.k8s.io",
		    strcmp(verb, "create") == 0 ? "CreateOptions" :
		    strcmp(verb, "update") == 0 ? "UpdateOptions" : "PatchOptions");
		errors_invalid(resp, kind, "meta.k8s.io", "", &errs);
		return 1;
	}
	if (strcmp(route->subresource, "scale") == 0 && v->spec_replicas != NULL)
		return cr_scale(dc, rt, v, req, route, resp);
	return 0;
}

static const struct dc_type_ops cr_ops = {
	.defaults = cr_defaults,
	.validate = cr_validate,
	.convert_out = cr_convert_out,
	.convert_in = cr_convert_in,
	.request = cr_request,
	.decoded = cr_decoded,
};

/*
 * Server-side apply shapes
 */

/* A key default's JSON text, kept by the version until its CRD changes. */
static const char *
keydef_text(struct crd_ver *v, const struct json_object *def)
{
	size_t len;
	char *t = kc_json_dump(def, &len);

	if (t == NULL)
		return NULL;
	for (size_t i = 0; i < v->nkeydefs; i++)
		if (strcmp(v->keydefs[i], t) == 0) {
			kc_free(t);
			return v->keydefs[i];
		}
	if (v->nkeydefs == CRD_KEYDEFS_MAX) {
		kc_free(t);
		return NULL;
	}
	v->keydefs[v->nkeydefs++] = t;
	return t;
}

static bool
is_array_schema(const struct json_object *s)
{
	return str_eq(kc_json_str(s, "type"), "array");
}

static bool
cr_fm_lookup(const void *arg, const char *path, struct fm_type *ret)
{
	struct crd_ver *v = (struct crd_ver *)(uintptr_t)arg;
	const struct json_object *s = v->schema, *keys = NULL;
	char seg[DC_SEGMENT_MAX];
	const char *p = path, *lt;
	bool first = true;

	if (s == NULL || path == NULL || path[0] == '\0')
		return false;
	while (*p != '\0') {
		const char *dot = strchr(p, '.');
		size_t n = dot != NULL ? (size_t)(dot - p) : strlen(p);

		if (n == 0 || n >= sizeof(seg))
			return false;
		memcpy(seg, p, n);
		seg[n] = '\0';
		if (first && (strcmp(seg, "metadata") == 0 || strcmp(seg, "apiVersion") == 0 ||
		    strcmp(seg, "kind") == 0))
			return false;
		first = false;
		while (s != NULL && is_array_schema(s))
			s = schema_items(s);
		if (s == NULL || (s = schema_child(s, seg)) == NULL)
			return false;
		p += n + (dot != NULL);
	}
	memset(ret, 0, sizeof(*ret));
	if (is_array_schema(s)) {
		lt = schema_list_type(s, &keys);
		if (str_eq(lt, "set"))
			ret->kind = FM_SET;
		else if (str_eq(lt, "map") && arr_len(keys) > 0 && arr_len(keys) <= FM_KEYS_MAX) {
			const struct json_object *items = schema_items(s);

			ret->kind = FM_MAP_LIST;
			ret->nkeys = arr_len(keys);
			for (size_t i = 0; i < ret->nkeys; i++) {
				const struct json_object *def;

				ret->keys[i] = json_object_get_string(arr_at(keys, i));
				def = kc_json_get(schema_child(items, ret->keys[i]), "default");
				ret->key_defaults[i] = def != NULL ? keydef_text(v, def) : NULL;
			}
		} else
			ret->kind = FM_ATOMIC;
		return true;
	}
	if (str_eq(schema_map_type(s), "atomic")) {
		ret->kind = FM_ATOMIC;
		return true;
	}
	if (kc_json_get(s, "properties") != NULL) {
		ret->kind = FM_STRUCT;
		return true;
	}
	if (kc_json_get(s, "additionalProperties") != NULL ||
	    kc_json_bool(s, false, "x-kubernetes-preserve-unknown-fields")) {
		ret->kind = FM_MAP;
		return true;
	}
	if (str_eq(kc_json_str(s, "type"), "object")) {
		ret->kind = FM_STRUCT;
		return true;
	}
	return false;
}

/*
 * The registry: one type per served version
 */

bool
crd_owns(const struct dc_rtype *rt)
{
	return rt != NULL && rt->ops != NULL && rt->ops->convert_out == cr_convert_out &&
	    rt->ops_arg != NULL;
}

const struct json_object *
crd_schema(const struct dc_rtype *rt)
{
	const struct crd_ver *v = ver_of(rt);

	return v != NULL ? v->schema : NULL;
}

const struct json_object *
crd_object(const struct dc_rtype *rt)
{
	const struct crd_ver *v = ver_of(rt);

	return v != NULL ? v->crd->obj : NULL;
}

const struct table_conv *
crd_table_conv(const struct dc_rtype *rt)
{
	const struct crd_ver *v = ver_of(rt);

	return v != NULL ? v->tc : NULL;
}

int
crd_fm_schema(const struct dc_rtype *rt, struct fm_schema *ret)
{
	const struct crd_ver *v = ver_of(rt);

	if (v == NULL)
		return -ENOENT;
	ret->lookup = cr_fm_lookup;
	ret->arg = v;
	return 0;
}

int
crd_convert_to(const struct dc_rtype *rt, const struct json_object *obj, const char *av,
    struct json_object **ret, struct fm_schema *ret_schema, struct kc_status *st)
{
	const struct crd_ver *v = ver_of(rt), *to = NULL, *w;
	const char *slash = strchr(av, '/');
	struct json_object *out;
	int r;

	if (v == NULL)
		return kc_status_set(st, KC_EINTERNAL, "%s is not a custom resource", rt->kind);
	if (slash != NULL && (size_t)(slash - av) == strlen(rt->group) &&
	    strncmp(av, rt->group, strlen(rt->group)) == 0)
		TAILQ_FOREACH(w, &v->crd->vers, link)
			if (str_eq(w->name, slash + 1))
				to = w;
	/* crConverter.ConvertToVersion: only versions in spec.versions */
	if (to == NULL)
		return kc_status_set(st, KC_EINTERNAL, "request to convert CR to an invalid "
		    "group/version: %s", av);
	ret_schema->lookup = cr_fm_lookup;
	ret_schema->arg = to;
	if (str_eq(kc_json_str(obj, "apiVersion"), av)) {
		*ret = json_object_get((struct json_object *)(uintptr_t)obj);
		return 0;
	}
	if (!v->crd->webhook) {
		if ((out = with_api_version(obj, av)) == NULL)
			return -ENOMEM;
		*ret = out;
		return 0;
	}
	r = webhook_convert(v->crd, obj, av, true, ret);
	if (r == KC_EINTERNAL && v->crd->dc != NULL) {
		/* The caller words the failure: it is not the request's to answer. */
		(void)kc_status_set(st, r, "%s", v->crd->dc->conv_error);
		v->crd->dc->conv_error[0] = '\0';
	}
	return r;
}

/* What a served version registers as. */
struct regdef {
	struct dc_rtype_def	 def;
	const char		*sn[CRD_NAMES_MAX + 1];
	const char		*cat[CRD_NAMES_MAX + 1];
	struct dc_subres	 sub[2];
};

static void
strv_from_json(const char **out, const struct json_object *arr)
{
	size_t n = 0;

	for (size_t i = 0; i < arr_len(arr) && n < CRD_NAMES_MAX; i++) {
		const char *s = json_object_get_string(arr_at(arr, i));

		if (s != NULL && json_object_is_type(arr_at(arr, i), json_type_string))
			out[n++] = s;
	}
	out[n] = NULL;
}

/* false when the version cannot be served (names not accepted). */
static bool
ver_def(const struct crd *c, const struct json_object *vj, struct crd_ver *v,
    struct regdef *d)
{
	const struct json_object *an = kc_json_get(c->obj, "status", "acceptedNames");
	const struct json_object *subs = kc_json_get(vj, "subresources");
	const char *plural = kc_json_str(an, "plural"), *kind = kc_json_str(an, "kind");
	const char *lk = kc_json_str(an, "listKind");

	if (plural == NULL || plural[0] == '\0' || kind == NULL || kind[0] == '\0')
		return false;
	memset(d, 0, sizeof(*d));
	strv_from_json(d->sn, kc_json_get(an, "shortNames"));
	strv_from_json(d->cat, kc_json_get(an, "categories"));
	d->def.group = c->group;
	d->def.version = v->name;
	d->def.plural = plural;
	d->def.singular = str_or(kc_json_str(an, "singular"), "");
	d->def.kind = kind;
	d->def.list_kind = lk != NULL && lk[0] != '\0' ? lk : NULL;
	d->def.namespaced = !str_eq(kc_json_str(c->obj, "spec", "scope"), "Cluster");
	d->def.verbs = DC_VERBS_ALL;
	d->def.flags = DC_RT_CUSTOM | DC_RT_GENERATION;
	if (kc_json_bool(vj, false, "storage"))
		d->def.flags |= DC_RT_STORAGE;
	d->def.name_rule = DC_NAME_SUBDOMAIN;
	d->def.short_names = d->sn;
	d->def.categories = d->cat;
	if (kc_json_get(subs, "scale") != NULL)
		d->sub[d->def.nsubres++] = (struct dc_subres){ "scale", "Scale", DC_VERBS_RW,
		    NULL, NULL };
	if (kc_json_get(subs, "status") != NULL) {
		d->def.flags |= DC_RT_STATUS;
		d->sub[d->def.nsubres++] = (struct dc_subres){ "status", NULL, DC_VERBS_RW,
		    NULL, NULL };
	}
	d->def.subres = d->def.nsubres > 0 ? d->sub : NULL;
	d->def.ops = &v->ops;
	d->def.ops_arg = v;
	return true;
}

static bool
strv_same(char *const *a, const char *const *b)
{
	size_t i;

	for (i = 0; a != NULL && a[i] != NULL; i++)
		if (b[i] == NULL || strcmp(a[i], b[i]) != 0)
			return false;
	return b[i] == NULL;
}

static bool
rtype_matches(const struct dc_rtype *rt, const struct regdef *d)
{
	char lk[DC_SEGMENT_MAX + 8];

	(void)snprintf(lk, sizeof(lk), "%s%s", d->def.list_kind != NULL ? d->def.list_kind :
	    d->def.kind, d->def.list_kind != NULL ? "" : "List");
	if (strcmp(rt->plural, d->def.plural) != 0 || strcmp(rt->singular, d->def.singular) != 0 ||
	    strcmp(rt->kind, d->def.kind) != 0 || strcmp(rt->list_kind, lk) != 0 ||
	    rt->namespaced != d->def.namespaced || rt->flags != d->def.flags ||
	    rt->verbs != d->def.verbs || rt->ops != d->def.ops ||
	    rt->ops_arg != d->def.ops_arg || rt->nsubres != d->def.nsubres ||
	    !strv_same(rt->short_names, d->sn) || !strv_same(rt->categories, d->cat))
		return false;
	for (size_t i = 0; i < rt->nsubres; i++)
		if (strcmp(rt->subres[i].name, d->sub[i].name) != 0 ||
		    rt->subres[i].verbs != d->sub[i].verbs)
			return false;
	return true;
}

static void
ver_unregister(struct crd_state *s, struct crd_ver *v)
{
	if (v->rt == NULL)
		return;
	watchhub_drop_rtype(s->dc->hub, v->rt);
	registry_remove(s->dc, v->rt);
	v->rt = NULL;
}

static void
ver_clear(struct crd_ver *v)
{
	v->tc = table_conv_free(v->tc);
	kc_free(v->warning);
	strv_free(v->selectable);
	kc_free(v->spec_replicas);
	kc_free(v->status_replicas);
	kc_free(v->label_selector);
	for (size_t i = 0; i < v->nkeydefs; i++)
		kc_free(v->keydefs[i]);
	v->warning = NULL;
	v->selectable = NULL;
	v->spec_replicas = v->status_replicas = v->label_selector = NULL;
	v->nkeydefs = 0;
	v->schema = NULL;
	v->has_defaults = false;
	v->ops.field_selectors = NULL;
}

static void
ver_free(struct crd_state *s, struct crd *c, struct crd_ver *v)
{
	ver_unregister(s, v);
	TAILQ_REMOVE(&c->vers, v, link);
	ver_clear(v);
	kc_free(v->name);
	kc_free(v);
}

/* Whether a schema declares any default (reads then need schema_default()). */
static bool
schema_has_default(const struct json_object *s, int depth)
{
	if (depth > SCHEMA_DEPTH_MAX * 4)
		return true;
	if (json_object_is_type(s, json_type_array)) {
		for (size_t i = 0; i < arr_len(s); i++)
			if (schema_has_default(arr_at(s, i), depth + 1))
				return true;
		return false;
	}
	if (!json_object_is_type(s, json_type_object))
		return false;
	json_object_object_foreach((struct json_object *)(uintptr_t)s, k, val) {
		if (strcmp(k, "default") == 0)
			return true;
		if (strcmp(k, "enum") == 0 || strcmp(k, "example") == 0)
			continue;
		if (schema_has_default(val, depth + 1))
			return true;
	}
	return false;
}

/*
 * The default deprecation warning: "<group>/<version> <Kind> is
 * deprecated", plus "; use <group>/<newest> <Kind>" naming the newest
 * served, non-deprecated version newer than this one.
 */
static char *
deprecation_text(const struct crd *c, const char *version, const char *kind)
{
	const struct json_object *vs = kc_json_get(c->obj, "spec", "versions");
	const char *best = NULL;

	for (size_t i = 0; i < arr_len(vs); i++) {
		const struct json_object *o = arr_at(vs, i);
		const char *n = kc_json_str(o, "name");

		if (n == NULL || !kc_json_bool(o, false, "served") ||
		    kc_json_bool(o, false, "deprecated") || version_compare(n, version) >= 0)
			continue;
		if (best == NULL || version_compare(n, best) < 0)
			best = n;
	}
	if (best == NULL)
		return kc_asprintf("%s/%s %s is deprecated", c->group, version, kind);
	return kc_asprintf("%s/%s %s is deprecated; use %s/%s %s", c->group, version, kind,
	    c->group, best, kind);
}

/* Reads what the hooks of a version need from the CRD. */
static int
ver_refresh(struct crd *c, struct crd_ver *v, const struct json_object *vj)
{
	struct kc_status st = { 0 };
	const struct json_object *sel = kc_json_get(vj, "selectableFields");
	const struct json_object *scale = kc_json_get(vj, "subresources", "scale");
	const char *kind = str_or(kc_json_str(c->obj, "spec", "names", "kind"), "");
	size_t n = 0;
	int r;

	ver_clear(v);
	v->schema = schema_crd_version_schema(c->obj, v->name);
	v->has_defaults = v->schema != NULL && schema_has_default(v->schema, 0);
	if ((r = table_conv_crd(c->obj, v->name, &v->tc, &st)) < 0) {
		if (r == -ENOMEM)
			return r;
		crd_warn(c->name, "printer columns of %s: %s; falling back to Name and Age",
		    v->name, st.message);
		if ((r = table_conv_columns(NULL, &v->tc, &st)) < 0)
			return r;
	}
	if (kc_json_bool(vj, false, "deprecated")) {
		const char *w = kc_json_str(vj, "deprecationWarning");
		char *text = w != NULL ? kc_strdup(w) : deprecation_text(c, v->name, kind);

		if (text == NULL)
			return -ENOMEM;
		v->warning = resp_warning_value(text);
		kc_free(text);
		if (v->warning == NULL)
			return -ENOMEM;
	}
	if ((v->selectable = kc_calloc(CRD_NAMES_MAX + 1, sizeof(char *))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < arr_len(sel) && n < CRD_NAMES_MAX; i++) {
		const char *jp = kc_json_str(arr_at(sel, i), "jsonPath");

		if (jp != NULL && (v->selectable[n++] = dotted(jp)) == NULL)
			return -ENOMEM;
	}
	v->ops.field_selectors = (const char *const *)v->selectable;
	if (scale != NULL) {
		const char *sp = kc_json_str(scale, "specReplicasPath");
		const char *tp = kc_json_str(scale, "statusReplicasPath");
		const char *lp = kc_json_str(scale, "labelSelectorPath");

		if ((sp != NULL && (v->spec_replicas = dotted(sp)) == NULL) ||
		    (tp != NULL && (v->status_replicas = dotted(tp)) == NULL) ||
		    (lp != NULL && (v->label_selector = dotted(lp)) == NULL))
			return -ENOMEM;
	}
	return 0;
}

static struct crd_ver *
ver_find(struct crd *c, const char *name)
{
	struct crd_ver *v;

	for (v = TAILQ_FIRST(&c->vers); v != NULL; v = TAILQ_NEXT(v, link))
		if (strcmp(v->name, name) == 0)
			return v;
	return NULL;
}

static struct crd *
crd_find(struct crd_state *s, const char *name)
{
	struct crd *c;

	for (c = TAILQ_FIRST(&s->crds); c != NULL; c = TAILQ_NEXT(c, link))
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

/* Removes every type of a CRD and frees it; 'clear' drops its objects too. */
static void
crd_remove(struct crd_state *s, struct crd *c, bool clear)
{
	struct crd_ver *v;

	while ((v = TAILQ_FIRST(&c->vers)) != NULL)
		ver_free(s, c, v);
	if (clear && c->group != NULL && c->plural != NULL) {
		struct dc_coll *coll = storage_find_coll(s->dc->store, c->group, c->plural);

		if (coll != NULL)
			coll_clear(coll);
	}
	TAILQ_REMOVE(&s->crds, c, link);
	if (c->obj != NULL)
		json_object_put(c->obj);
	kc_free(c->name);
	kc_free(c->group);
	kc_free(c->plural);
	kc_free(c->storage);
	kc_free(c);
	s->dc->reg.generation++;
	discovery_invalidate(s->dc);
}

static bool
has_finalizer(const struct json_object *crd)
{
	return jstrv_has(kc_json_get(crd, "metadata", "finalizers"), CRD_FINALIZER);
}

static int
replace_str(char **p, const char *v)
{
	char *n = NULL;

	if (v != NULL && (n = kc_strdup(v)) == NULL)
		return -ENOMEM;
	kc_free(*p);
	*p = n;
	return 0;
}

/*
 * Brings the types of one CRD in line with its stored state ('obj'
 * NULL: it is gone).
 */
static int
crd_sync(struct crd_state *s, const char *name, const struct json_object *obj)
{
	struct crd *c = crd_find(s, name);
	const struct json_object *vs;
	struct crd_ver *v, *tmp;
	bool serve;
	int r = 0;

	if (obj == NULL) {
		if (c != NULL)
			crd_remove(s, c, true);
		return 0;
	}
	if (c == NULL) {
		if ((c = kc_calloc(1, sizeof(*c))) == NULL)
			return -ENOMEM;
		if ((c->name = kc_strdup(name)) == NULL) {
			kc_free(c);
			return -ENOMEM;
		}
		TAILQ_INIT(&c->vers);
		TAILQ_INSERT_TAIL(&s->crds, c, link);
	}
	c->seen = true;
	c->dc = s->dc;
	if (c->obj != NULL)
		json_object_put(c->obj);
	c->obj = json_object_get((struct json_object *)(uintptr_t)obj);
	if (replace_str(&c->group, kc_json_str(obj, "spec", "group")) < 0 ||
	    replace_str(&c->plural, kc_json_str(obj, "spec", "names", "plural")) < 0 ||
	    replace_str(&c->storage, schema_crd_storage_version(obj)) < 0) {
		r = -ENOMEM;
		goto fail;
	}
	c->terminating = kc_json_get(obj, "metadata", "deletionTimestamp") != NULL;
	c->webhook = str_eq(kc_json_str(obj, "spec", "conversion", "strategy"), "Webhook");
	serve = c->group != NULL && (cond_is(obj, "Established", "True") ||
	    cond_is(obj, "NamesAccepted", "True"));
	for (v = TAILQ_FIRST(&c->vers); v != NULL; v = TAILQ_NEXT(v, link))
		v->seen = false;
	vs = kc_json_get(obj, "spec", "versions");
	for (size_t i = 0; i < arr_len(vs); i++) {
		const struct json_object *vj = arr_at(vs, i);
		const char *vname = kc_json_str(vj, "name");
		struct regdef d;

		if (vname == NULL || vname[0] == '\0')
			continue;
		if ((v = ver_find(c, vname)) == NULL) {
			if ((v = kc_calloc(1, sizeof(*v))) == NULL ||
			    (v->name = kc_strdup(vname)) == NULL) {
				kc_free(v);
				r = -ENOMEM;
				goto fail;
			}
			v->crd = c;
			v->ops = cr_ops;
			TAILQ_INSERT_TAIL(&c->vers, v, link);
		}
		v->seen = true;
		if ((r = ver_refresh(c, v, vj)) < 0)
			goto fail;
		if (!serve || !kc_json_bool(vj, false, "served") || !ver_def(c, vj, v, &d)) {
			ver_unregister(s, v);
			continue;
		}
		if (v->rt != NULL && rtype_matches(v->rt, &d))
			continue;
		ver_unregister(s, v);
		if ((r = registry_add(s->dc, &d.def, &v->rt)) == -EEXIST) {
			crd_warn(c->name, "%s/%s %s is already served; not serving it for this CRD",
			    c->group, vname, d.def.plural);
			v->rt = NULL;
			r = 0;
		}
		if (r < 0)
			goto fail;
	}
	for (v = TAILQ_FIRST(&c->vers); v != NULL; v = tmp) {
		tmp = TAILQ_NEXT(v, link);
		if (!v->seen)
			ver_free(s, c, v);
	}
	s->dc->reg.generation++;
	discovery_invalidate(s->dc);
	if (c->terminating && has_finalizer(obj))
		timer_arm(&s->cleanup_timer, 0);
	return 0;
fail:
	/* Half-updated versions could point into the old CRD: drop them all. */
	crd_remove(s, c, false);
	return r;
}

/*
 * The naming controller again for the CRDs of 'group' whose names were
 * refused, after one of the group went away.
 */
static void
names_recheck(struct crd_state *s, const char *group)
{
	struct dc_rtype *rt = crd_type(s->dc);
	struct json_object **objs = NULL;
	size_t n = 0;

	if (rt == NULL || group == NULL || coll_list(rt->coll, NULL, NULL, &objs, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct json_object *next;

		if (!str_eq(kc_json_str(objs[i], "spec", "group"), group) ||
		    cond_is(objs[i], "NamesAccepted", "True") ||
		    kc_json_get(objs[i], "metadata", "deletionTimestamp") != NULL)
			continue;
		if ((next = kc_json_copy(objs[i])) == NULL)
			break;
		if (crd_set_status(s->dc, next, false) < 0 || kc_json_equal(next, objs[i])) {
			json_object_put(next);
			continue;
		}
		if (storage_update(s->dc->store, rt->coll, next, 0, NULL) < 0)
			crd_warn(kc_json_str(objs[i], "metadata", "name"),
			    "accepting names after a conflict went away failed");
	}
	objs_free(objs, n);
}

static void
crd_event(void *arg, const struct dc_event *ev)
{
	struct crd_state *s = arg;
	struct dc_rtype *rt = crd_type(s->dc);
	const char *name = kc_json_str(ev->obj, "metadata", "name");
	char group[DC_SEGMENT_MAX];
	int r;

	if (rt == NULL || ev->coll != rt->coll || name == NULL)
		return;
	(void)kc_strlcpy(group, str_or(kc_json_str(ev->obj, "spec", "group"), ""),
	    sizeof(group));
	r = crd_sync(s, name, ev->type == DC_EV_DELETED ? NULL : ev->obj);
	if (r < 0) {
		crd_warn(name, "serving the custom resources failed: %s; retrying",
		    kc_strerror(r));
		timer_arm(&s->sync_timer, CRD_RETRY_MS);
	}
	if (ev->type == DC_EV_DELETED)
		names_recheck(s, group);
}

int
crd_sync_all(struct dc *dc)
{
	struct crd_state *s = plugin_state(dc, &crd_plugin);
	struct dc_rtype *rt = crd_type(dc);
	struct json_object **objs = NULL;
	struct crd *c, *tmp;
	size_t n = 0;
	int r, first = 0;

	if (s == NULL || rt == NULL)
		return 0;
	if ((r = coll_list(rt->coll, NULL, NULL, &objs, &n)) < 0)
		return r;
	for (c = TAILQ_FIRST(&s->crds); c != NULL; c = TAILQ_NEXT(c, link))
		c->seen = false;
	for (size_t i = 0; i < n; i++) {
		const char *name = kc_json_str(objs[i], "metadata", "name");

		if (name != NULL && (r = crd_sync(s, name, objs[i])) < 0 && first == 0)
			first = r;
	}
	objs_free(objs, n);
	for (c = TAILQ_FIRST(&s->crds); c != NULL; c = tmp) {
		tmp = TAILQ_NEXT(c, link);
		if (!c->seen)
			crd_remove(s, c, false);
	}
	return first;
}

/*
 * Deleting a CRD: the finalizer controller
 */

/* 1 while resources remain, 0 once the CRD's finalizer is gone. */
static int
cleanup_one(struct crd_state *s, struct crd *c)
{
	struct dc *dc = s->dc;
	struct dc_rtype *crt = crd_type(dc), *rt = NULL;
	const struct json_object *obj;
	struct json_object *next, **objs = NULL, *meta, *fins, *keep, *st;
	struct crd_ver *v;
	size_t n = 0;
	int r;

	if (crt == NULL || (obj = coll_get(crt->coll, "", c->name)) == NULL ||
	    kc_json_get(obj, "metadata", "deletionTimestamp") == NULL || !has_finalizer(obj))
		return 0;
	for (v = TAILQ_FIRST(&c->vers); v != NULL; v = TAILQ_NEXT(v, link))
		if (v->rt != NULL && (rt == NULL || (v->rt->flags & DC_RT_STORAGE)))
			rt = v->rt;
	/*
	 * Resources still there: delete them, and finish on a later tick,
	 * so that their watchers get the DELETED events before the type
	 * and its watches go.
	 */
	if (rt != NULL && coll_count(rt->coll, NULL) > 0) {
		if ((r = coll_list(rt->coll, NULL, NULL, &objs, &n)) < 0)
			return r;
		for (size_t i = 0; i < n; i++) {
			if (kc_json_get(objs[i], "metadata", "deletionTimestamp") != NULL)
				continue;
			r = api_delete_object(dc, rt, str_or(kc_json_str(objs[i], "metadata",
			    "namespace"), ""), kc_json_str(objs[i], "metadata", "name"), -1);
			if (r < 0 && r != KC_ENOTFOUND)
				crd_warn(c->name, "deleting %s: %s",
				    kc_json_str(objs[i], "metadata", "name"), kc_strerror(r));
		}
		objs_free(objs, n);
		return 1;
	}
	if ((next = kc_json_copy(obj)) == NULL)
		return -ENOMEM;
	meta = kc_json_obj_of(next, "metadata");
	fins = kc_json_arr_of(meta, "finalizers");
	if ((keep = json_object_new_array()) == NULL)
		goto oom;
	for (size_t i = 0; i < arr_len(fins); i++)
		if (!str_eq(json_object_get_string(arr_at(fins, i)), CRD_FINALIZER) &&
		    kc_json_append(keep, json_object_get(arr_at(fins, i))) < 0) {
			json_object_put(keep);
			goto oom;
		}
	if (json_object_array_length(keep) == 0) {
		json_object_put(keep);
		json_object_object_del(meta, "finalizers");
	} else if (kc_json_put(meta, "finalizers", keep) < 0)
		goto oom;
	if ((st = kc_json_ensure_obj(next, "status")) == NULL ||
	    (kc_json_arr_of(st, "conditions") == NULL &&
	    kc_json_put(st, "conditions", json_object_new_array()) < 0))
		goto oom;
	r = rt != NULL ? cond_set(st, "Terminating", "False", "InstanceDeletionCompleted",
	    "removed all instances") : cond_set(st, "Terminating", "False",
	    "NeverEstablished", "resource was never established");
	if (r < 0)
		goto oom;
	if (kc_json_arr_of(meta, "finalizers") == NULL)
		r = storage_delete(dc->store, crt->coll, next, 0, NULL);
	else
		r = storage_update(dc->store, crt->coll, next, 0, NULL);
	return r < 0 ? r : 0;
oom:
	json_object_put(next);
	return -ENOMEM;
}

static int64_t
cleanup_tick(void *arg)
{
	struct crd_state *s = arg;
	char names[64][DC_SEGMENT_MAX];
	size_t n = 0;
	bool again = false;
	struct crd *c;

	/* Names first: a cleanup may free its own entry. */
	for (c = TAILQ_FIRST(&s->crds); c != NULL; c = TAILQ_NEXT(c, link))
		if (c->terminating && n < KC_ARRAY_SIZE(names))
			(void)kc_strlcpy(names[n++], c->name, sizeof(names[0]));
	for (size_t i = 0; i < n; i++) {
		int r;

		if ((c = crd_find(s, names[i])) == NULL)
			continue;
		if ((r = cleanup_one(s, c)) != 0)
			again = true;
		if (r < 0)
			crd_warn(names[i], "custom resource cleanup: %s", kc_strerror(r));
	}
	for (c = TAILQ_FIRST(&s->crds); c != NULL; c = TAILQ_NEXT(c, link))
		if (c->terminating && has_finalizer(c->obj))
			again = true;
	return again ? CRD_CLEANUP_MS : DC_TIMER_STOP;
}

static int64_t
sync_tick(void *arg)
{
	struct crd_state *s = arg;
	int r;

	if ((r = crd_sync_all(s->dc)) < 0) {
		crd_warn(NULL, "serving the stored CRDs failed: %s; retrying", kc_strerror(r));
		return CRD_RETRY_MS;
	}
	return DC_TIMER_STOP;
}

/*
 * The instance
 */

int
crd_init(struct dc *dc)
{
	struct dc_rtype *rt = crd_type(dc);
	struct crd_state *s;
	int r;

	if (rt == NULL)
		return -ENOENT;
	if ((s = kc_calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	s->dc = dc;
	TAILQ_INIT(&s->crds);
	timer_init(&s->sync_timer, dc, sync_tick, s);
	timer_init(&s->cleanup_timer, dc, cleanup_tick, s);
	if ((r = storage_subscribe(dc->store, crd_event, s)) < 0) {
		kc_free(s);
		return r;
	}
	s->subscribed = true;
	plugin_set_state(dc, &crd_plugin, s);
	rt->ops = &crd_ops;
	if ((r = crd_sync_all(dc)) < 0) {
		crd_fini(dc);
		return r;
	}
	timer_arm(&s->sync_timer, 0);
	return 0;
}

void
crd_fini(struct dc *dc)
{
	struct crd_state *s = plugin_state(dc, &crd_plugin);
	struct dc_rtype *rt = crd_type(dc);
	struct crd *c;

	if (s == NULL)
		return;
	timer_cancel(&s->sync_timer);
	timer_cancel(&s->cleanup_timer);
	if (s->subscribed)
		storage_unsubscribe(dc->store, crd_event, s);
	while ((c = TAILQ_FIRST(&s->crds)) != NULL)
		crd_remove(s, c, false);
	if (rt != NULL && rt->ops == &crd_ops)
		rt->ops = &ops_default;
	kc_free(s);
	plugin_set_state(dc, &crd_plugin, NULL);
}

/* The Table converter of a custom resource type served for a CRD, or NULL. */
static const struct table_conv *
crd_plugin_table_conv(const struct dc_rtype *rt)
{
	return crd_owns(rt) ? crd_table_conv(rt) : NULL;
}

static int
crd_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	(void)cfg;
	(void)st;
	return crd_init(dc);
}

const struct dc_plugin crd_plugin = {
	.name = "crd",
	.init = crd_start,
	.fini = crd_fini,
	.table_conv = crd_plugin_table_conv,
};

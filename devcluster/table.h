/*
 * table.h: server-side printing, the meta.k8s.io Table that kubectl asks
 * for with "Accept: application/json;as=Table;v=v1;g=meta.k8s.io".
 *
 * A converter (struct table_conv) says how one resource becomes rows:
 *
 *	table_conv_crd()	a CRD's served version: Name, then its
 *				additionalPrinterColumns (JSONPath cells
 *				typed integer, number, boolean, string or
 *				date); none declared gives Name and Age
 *	table_conv_builtin()	a built-in printer of kube-apiserver
 *				(pods, services, nodes, events, ...), or
 *				Name and "Created At" for a resource
 *				without one, as the default convertor
 *
 * The core calls it at these points:
 *
 *	resource registered	table_conv_builtin(group, resource) for a
 *				built-in; table_conv_crd(crd, version) for
 *				each served version of a CRD, again whenever
 *				the CRD changes (free the old converter)
 *	Accept as=Table		table_include_parse(?includeObject) (400 on
 *				KC_EBADREQUEST), then
 *	  list			table_list() on the List object the request
 *				would have returned, in the asked version
 *	  get			table_object() on the object
 *	  watch			table_object() per event object, no_headers
 *				false for the first event and true after
 *				(upstream sends columnDefinitions once; an
 *				ERROR event's Status is sent as it is, but
 *				still counts as the first event)
 *
 * The returned Table shares the "metadata" (or, with includeObject=Object,
 * the whole object) of the input by reference: do not modify the inputs
 * while the table is alive; the inputs are never written. table_age() and
 * table_human_duration() replace any age formatting of the core.
 *
 * Ages are computed against opts->now, never the clock, so output is
 * deterministic. Converters are immutable once built and only read while
 * tables are built. This is a pure module: no globals, no logging.
 *
 *	struct table_conv *tc;
 *	if ((r = table_conv_builtin("", "pods", &tc)) < 0)
 *		return r;
 *	r = table_list(tc, podlist, &(struct table_opts){
 *		.version = TABLE_V1,
 *		.include = TABLE_INCLUDE_METADATA,
 *		.now = now,
 *	}, &table, &st);
 */
#ifndef DC_TABLE_H
#define DC_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/macro.h>

/* Room for any age or duration string, NUL included ("<invalid>", "292y"). */
#define TABLE_AGE_MAX		32

/* Most additionalPrinterColumns one converter takes. */
#define TABLE_COLUMNS_MAX	128

/* Most rows one table holds. */
#define TABLE_ROWS_MAX		(1024 * 1024)

enum table_version {
	TABLE_V1,		/* meta.k8s.io/v1 */
	TABLE_V1BETA1,		/* meta.k8s.io/v1beta1 */
};

/* includeObject: what each row's "object" holds. */
enum table_include {
	TABLE_INCLUDE_METADATA,	/* PartialObjectMetadata (the default) */
	TABLE_INCLUDE_NONE,	/* null */
	TABLE_INCLUDE_OBJECT,	/* the object itself */
};

struct table_opts {
	enum table_version	 version;
	enum table_include	 include;
	bool			 no_headers;	/* columnDefinitions: null */
	time_t			 now;		/* for ages */
};

struct table_conv;

/*
 * Ages
 */

/*
 * Parses a timestamp as metav1.Time does (Go's time.Parse with RFC 3339:
 * "2026-01-15T10:00:00Z", optional fraction, "Z" or "+hh:mm"; fields range
 * checked, so "2026-02-30..." fails). Sets seconds since the epoch and
 * nanoseconds. -EINVAL when it does not parse; outputs untouched then.
 */
int	table_time_parse(const char *s, int64_t *ret_sec, int32_t *ret_nsec)
	    _must_check_;

/*
 * duration.HumanDuration() of 'ns' nanoseconds: "<invalid>" below -1 s,
 * "0s" at -1 s, then "95s", "5m12s", "47m", "5h7m", "17h", "3d4h", "41d",
 * "3y12d", "9y" (years of 365 days).
 */
void	table_human_duration(int64_t ns, char buf[TABLE_AGE_MAX]);

/*
 * The age cell of a timestamp at 'now', as the printers'
 * translateTimestampSince() gives it: "<unknown>" for NULL, "", "null" and
 * the zero time (0001-01-01T00:00:00Z); "<invalid>" when it does not parse;
 * else HumanDuration(now - t).
 */
void	table_age(const char *timestamp, time_t now, char buf[TABLE_AGE_MAX]);

/*
 * Request options
 */

/*
 * The includeObject query parameter: NULL or "" is Metadata; "None",
 * "Metadata" and "Object" as named. Anything else is KC_EBADREQUEST with
 * upstream's message: "Unable to convert to Table as requested:
 * includeObject: Invalid value: \"x\": must be 'Metadata', 'Object',
 * 'None', or empty". '*ret' is set only on success.
 */
int	table_include_parse(const char *value, enum table_include *ret,
	    struct kc_status *st) _must_check_;

/*
 * Converters
 */

/*
 * The converter kube-apiserver uses for a built-in resource: group ("" for
 * core) and plural resource name. Printers exist for pods, namespaces,
 * configmaps, secrets, services, endpoints, nodes, events (core and
 * events.k8s.io), leases, serviceaccounts, networkpolicies,
 * priorityclasses, resourcequotas, persistentvolumeclaims, rolebindings,
 * clusterrolebindings and the two webhook configurations; any other
 * resource (roles, clusterroles, limitranges, CRDs themselves, ...) gets
 * the default convertor: Name and "Created At" (RFC 3339). -ENOMEM only.
 */
int	table_conv_builtin(const char *group, const char *resource,
	    struct table_conv **ret) _must_check_;

/* Whether (group, resource) has a printer of its own. */
bool	table_has_printer(const char *group, const char *resource);

/*
 * The converter of a custom resource, from its CustomResourceDefinition
 * (apiextensions.k8s.io/v1) and the name of the served version: Name, then
 * spec.versions[version].additionalPrinterColumns, or Name and Age
 * (.metadata.creationTimestamp, type date) when it declares none. As
 * upstream, a column whose jsonPath does not parse ends the list: it and
 * the columns after it are dropped, the ones before it stay (the
 * apiserver logs "falling back to default printing" and serves those).
 * KC_ENOTFOUND when the CRD has no such version; KC_EINVALID when the
 * columns are not an array of objects, past TABLE_COLUMNS_MAX, or a column
 * lacks a name, type or jsonPath (CRD validation rejects those anyway);
 * -ENOMEM.
 */
int	table_conv_crd(const struct json_object *crd, const char *version,
	    struct table_conv **ret, struct kc_status *st) _must_check_;

/*
 * The same from an additionalPrinterColumns array itself (NULL or empty:
 * Name and Age). Errors as table_conv_crd() but KC_ENOTFOUND.
 */
int	table_conv_columns(const struct json_object *columns,
	    struct table_conv **ret, struct kc_status *st) _must_check_;

/* Frees a converter; NULL is fine. Returns NULL. */
struct table_conv *table_conv_free(struct table_conv *);

KC_DEFINE_CLEANUP(struct table_conv, table_conv_free)

/* The columnDefinitions array of the converter (a new reference). */
int	table_conv_definitions(const struct table_conv *, struct json_object **ret)
	    _must_check_;

/*
 * Tables
 */

/*
 * The Table of a List object ({"metadata": {"resourceVersion",
 * "continue", "remainingItemCount"}, "items": [...]}): one row per item,
 * in order, and the list's metadata. Items are objects of the converter's
 * resource, in the version the client asked for. '*ret' is a new
 * reference. KC_EINVALID when "items" is not an array or an item is not
 * an object; -E2BIG past TABLE_ROWS_MAX; -ENOMEM.
 */
int	table_list(const struct table_conv *, const struct json_object *list,
	    const struct table_opts *, struct json_object **ret,
	    struct kc_status *st) _must_check_;

/*
 * The one-row Table of one object (a GET, or a watch event's object), its
 * metadata.resourceVersion as the table's. KC_EINVALID when 'obj' is not
 * an object; -ENOMEM.
 */
int	table_object(const struct table_conv *, const struct json_object *obj,
	    const struct table_opts *, struct json_object **ret,
	    struct kc_status *st) _must_check_;

#endif

/*
 * table.c: meta.k8s.io Tables, the server-side printing kubectl relies on
 * for "get", "get -o wide" and "get -w".
 *
 * kube-apiserver answers a Table request from one of three convertors,
 * and so does this file:
 *
 *	built-in printers	k8s.io/kubernetes pkg/printers/internalversion:
 *				per-kind columns, cells computed in Go
 *	CRD columns		apiextensions' tableconvertor: a JSONPath per
 *				additionalPrinterColumn, typed cells
 *	the default		apiserver's defaultTableConvertor: Name and
 *				"Created At" for everything else
 *
 * The printers are a const table from (group, resource) to a column list
 * and a row function that reads the object's JSON and appends cells. Each
 * row function follows its upstream counterpart line by line; their
 * comments only say where the rules are subtle (the pod printer's Status
 * column, chiefly). Cells are typed as upstream's Go values are: strings,
 * but int64 counts for ConfigMap data and the like, booleans for
 * PriorityClass globalDefault. Descriptions are upstream's column
 * descriptions (the API field docs for most).
 *
 * Every row gets an "object" according to includeObject (asTable() in the
 * apiserver's handlers): PartialObjectMetadata in the Table's own version
 * by default, the object, or null. The table's metadata comes from the
 * list (resourceVersion, continue, remainingItemCount), or from the one
 * object. Ages use the caller's "now" and duration.HumanDuration().
 *
 *	tc = table_conv_crd(crd, "v1beta1")  ->  Name, Phase, Nodes, Age
 *	table_list(tc, runlist, &opts, &t)   ->  {"kind":"Table", ... "rows":[
 *	    {"cells":["r1","Running",8,"5m12s"],"object":{PartialObjectMetadata}}]}
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/json.h>
#include <kc/sbuf.h>
#include <kc/selector.h>
#include <kc/str.h>

#include "jsonpath.h"
#include "table.h"

#define CELL_MAX	(1024 * 1024)	/* longest computed cell */
#define ZERO_TIME_SEC	INT64_C(-62135596800)	/* 0001-01-01T00:00:00Z */
#define NS_PER_SEC	INT64_C(1000000000)

/*
 * Time
 */

static int64_t
days_from_civil(int64_t y, int64_t m, int64_t d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int
days_in(int m, int64_t y)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	if (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
		return 29;
	return days[m - 1];
}

/* 'n' digits exactly at *s, advancing it. */
static bool
digits(const char **s, int n, int *ret)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if ((*s)[i] < '0' || (*s)[i] > '9')
			return false;
		v = v * 10 + ((*s)[i] - '0');
	}
	*s += n;
	*ret = v;
	return true;
}

int
table_time_parse(const char *s, int64_t *ret_sec, int32_t *ret_nsec)
{
	int y, mo, d, h, mi, sec, oh = 0, om = 0;
	int32_t nsec = 0;
	int64_t t;

	if (!digits(&s, 4, &y) || *s++ != '-' || !digits(&s, 2, &mo) ||
	    *s++ != '-' || !digits(&s, 2, &d) || *s++ != 'T')
		return -EINVAL;
	/* Go's layout "15" takes one or two digits. */
	if (!digits(&s, 1, &h))
		return -EINVAL;
	if (*s >= '0' && *s <= '9')
		h = h * 10 + (*s++ - '0');
	if (*s++ != ':' || !digits(&s, 2, &mi) || *s++ != ':' || !digits(&s, 2, &sec))
		return -EINVAL;
	if ((*s == '.' || *s == ',') && s[1] >= '0' && s[1] <= '9') {
		int n = 0;

		for (s++; *s >= '0' && *s <= '9'; s++, n++)
			if (n < 9)
				nsec = nsec * 10 + (*s - '0');
		for (; n < 9; n++)
			nsec *= 10;
	}
	if (*s == 'Z')
		s++;
	else if (*s == '+' || *s == '-') {
		int sign = *s++ == '-' ? -1 : 1;

		if (!digits(&s, 2, &oh) || *s++ != ':' || !digits(&s, 2, &om) ||
		    oh > 24 || om > 60)
			return -EINVAL;
		oh *= sign;
		om *= sign;
	} else
		return -EINVAL;
	if (*s != '\0' || mo < 1 || mo > 12 || d < 1 || d > days_in(mo, y) ||
	    h > 23 || mi > 59 || sec > 59)
		return -EINVAL;
	t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	*ret_sec = t - (int64_t)oh * 3600 - (int64_t)om * 60;
	*ret_nsec = nsec;
	return 0;
}

void
table_human_duration(int64_t d, char buf[TABLE_AGE_MAX])
{
	kc_duration_human(d / NS_PER_SEC, buf, TABLE_AGE_MAX);
}

/* A timestamp field: absent (or zero), parsed, or unparseable. */
enum ts_state { TS_ZERO, TS_SET, TS_INVALID };

struct ts {
	enum ts_state	state;
	int64_t		sec;
	int32_t		nsec;
};

static struct ts
ts_of(const char *s)
{
	struct ts t = { .state = TS_ZERO };

	if (s == NULL || s[0] == '\0' || strcmp(s, "null") == 0)
		return t;
	if (table_time_parse(s, &t.sec, &t.nsec) < 0) {
		t.state = TS_INVALID;
		return t;
	}
	if (t.sec != ZERO_TIME_SEC || t.nsec != 0)
		t.state = TS_SET;
	return t;
}

/* metav1.Time.Before(): false when either is not a time. */
static bool
ts_before(const struct ts *a, const struct ts *b)
{
	int64_t as = a->state == TS_SET ? a->sec : ZERO_TIME_SEC;
	int32_t an = a->state == TS_SET ? a->nsec : 0;

	if (b->state != TS_SET)
		return false;
	return as < b->sec || (as == b->sec && an < b->nsec);
}

/* time.Since(t) as Go computes it, saturating like Time.Sub(). */
static void
ts_age(const struct ts *t, time_t now, char buf[TABLE_AGE_MAX])
{
	const int64_t lim = INT64_MAX / NS_PER_SEC - 1;
	int64_t ds, d;

	if (t->state == TS_INVALID) {
		(void)kc_strlcpy(buf, "<invalid>", TABLE_AGE_MAX);
		return;
	}
	if (t->state == TS_ZERO) {
		(void)kc_strlcpy(buf, "<unknown>", TABLE_AGE_MAX);
		return;
	}
	ds = (int64_t)now - t->sec;
	if (ds > lim)
		d = INT64_MAX;
	else if (ds < -lim)
		d = INT64_MIN;
	else
		d = ds * NS_PER_SEC - t->nsec;
	table_human_duration(d, buf);
}

void
table_age(const char *timestamp, time_t now, char buf[TABLE_AGE_MAX])
{
	struct ts t = ts_of(timestamp);

	ts_age(&t, now, buf);
}

/*
 * Request options
 */

int
table_include_parse(const char *value, enum table_include *ret, struct kc_status *st)
{
	if (value == NULL || value[0] == '\0' || strcmp(value, "Metadata") == 0)
		*ret = TABLE_INCLUDE_METADATA;
	else if (strcmp(value, "None") == 0)
		*ret = TABLE_INCLUDE_NONE;
	else if (strcmp(value, "Object") == 0)
		*ret = TABLE_INCLUDE_OBJECT;
	else {
		char q[160];
		size_t n = 0;

		/* Go's %q of the value, shortened. */
		q[n++] = '"';
		for (const char *p = value; *p != '\0' && n + 8 < sizeof(q); p++) {
			static const char ctl[] = "abtnvfr";	/* \a (7) to \r (13) */
			unsigned char c = (unsigned char)*p;

			if (c == '"' || c == '\\') {
				q[n++] = '\\';
				q[n++] = (char)c;
			} else if (c >= '\a' && c <= '\r') {
				q[n++] = '\\';
				q[n++] = ctl[c - '\a'];
			} else if (c < 0x20 || c == 0x7f)
				n += (size_t)snprintf(q + n, sizeof(q) - n, "\\x%02x", c);
			else
				q[n++] = (char)c;
		}
		q[n++] = '"';
		q[n] = '\0';
		return kc_status_set(st, KC_EBADREQUEST, "Unable to convert to Table as "
		    "requested: includeObject: Invalid value: %s: must be 'Metadata', "
		    "'Object', 'None', or empty", q);
	}
	return 0;
}

/*
 * Column definitions
 */

struct coldef {
	const char	*name;
	const char	*type;
	const char	*format;
	const char	*desc;
	int		 priority;
};

#define D_NAME	"Name must be unique within a namespace. Is required when creating " \
	"resources, although some resources may allow a client to request the " \
	"generation of an appropriate name automatically. Name is primarily intended " \
	"for creation idempotence and configuration definition. Cannot be updated. " \
	"More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/" \
	"names#names"
#define D_AGE	"CreationTimestamp is a timestamp representing the server time when " \
	"this object was created. It is not guaranteed to be set in happens-before " \
	"order across separate operations. Clients may not set this value. It is " \
	"represented in RFC3339 form and is in UTC.\n\nPopulated by the system. " \
	"Read-only. Null for lists. More info: https://git.k8s.io/community/" \
	"contributors/devel/sig-architecture/api-conventions.md#metadata"

#define COL_NAME	{ "Name", "string", "name", D_NAME, 0 }
#define COL_AGE		{ "Age", "string", "", D_AGE, 0 }

static int
column_json(const struct coldef *d, struct json_object **ret)
{
	struct json_object *c = json_object_new_object();

	if (c == NULL)
		return -ENOMEM;
	if (kc_json_set_str(c, "name", d->name) < 0 ||
	    kc_json_set_str(c, "type", d->type) < 0 ||
	    kc_json_set_str(c, "format", d->format) < 0 ||
	    kc_json_set_str(c, "description", d->desc) < 0 ||
	    kc_json_set_int(c, "priority", d->priority) < 0) {
		json_object_put(c);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

/*
 * Rows and cells
 */

struct row {
	struct json_object	*cells;
	struct json_object	*conditions;	/* NULL, or set by the printer */
	time_t			 now;
	bool			 events_k8s_io;	/* an events.k8s.io/v1 Event */
};

/* metadata.deletionTimestamp is set (a non-nil pointer upstream). */
static bool
being_deleted(const struct json_object *o)
{
	return kc_json_str(o, "metadata", "deletionTimestamp") != NULL;
}

static const char *
nz(const char *s)
{
	return s != NULL ? s : "";
}

#define STR(o, ...)	nz(kc_json_str((o), __VA_ARGS__))

static struct json_object *
arr_at(const struct json_object *o, const char *k1, const char *k2)
{
	struct json_object *a = k2 == NULL ? kc_json_get(o, k1) : kc_json_get(o, k1, k2);

	return json_object_is_type(a, json_type_array) ? a : NULL;
}

static size_t
arr_len(const struct json_object *a)
{
	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static struct json_object *
arr_idx(const struct json_object *a, size_t i)
{
	return i < arr_len(a) ? json_object_array_get_idx(a, i) : NULL;
}

static size_t
obj_len(const struct json_object *o)
{
	return json_object_is_type(o, json_type_object) ?
	    (size_t)json_object_object_length(o) : 0;
}

static int
cell_put(struct row *rw, struct json_object *v)
{
	return kc_json_append(rw->cells, v);
}

static int
cell_str(struct row *rw, const char *s)
{
	return cell_put(rw, json_object_new_string(nz(s)));
}

static int
cell_strn(struct row *rw, const char *s, size_t n)
{
	return cell_put(rw, json_object_new_string_len(s, (int)n));
}

static int
cell_int(struct row *rw, int64_t v)
{
	return cell_put(rw, json_object_new_int64(v));
}

static int
cell_bool(struct row *rw, bool v)
{
	return cell_put(rw, json_object_new_boolean(v));
}

static int
cell_null(struct row *rw)
{
	return json_object_array_add(rw->cells, NULL) < 0 ? -ENOMEM : 0;
}

static int
cell_age(struct row *rw, const char *timestamp)
{
	char age[TABLE_AGE_MAX];

	table_age(timestamp, rw->now, age);
	return cell_str(rw, age);
}

/* Hands a built string over as a cell; frees the buffer either way. */
static int
cell_buf(struct row *rw, struct kc_buf *b, int r)
{
	if (r == 0)
		r = cell_strn(rw, kc_buf_str(b), b->len);
	kc_buf_free(b);
	return r;
}

/* Appends 's' to 'b' with 'sep' in front unless 'b' is empty. */
static int
join(struct kc_buf *b, const char *sep, const char *s)
{
	int r;

	if (b->len > 0 && (r = kc_buf_puts(b, sep)) < 0)
		return r;
	return kc_buf_puts(b, s);
}

static int
cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * labels.Set.String(): "k=v" pairs sorted and joined by commas; "<none>"
 * when empty (labels.FormatLabels()).
 */
static int
format_labels(const struct json_object *set, struct kc_buf *b)
{
	size_t n = obj_len(set), i = 0;
	char **pairs;
	int r = 0;

	if (n == 0)
		return kc_buf_puts(b, "<none>");
	if ((pairs = kc_calloc(n, sizeof(*pairs))) == NULL)
		return -ENOMEM;
	json_object_object_foreach((struct json_object *)(uintptr_t)set, k, v) {
		if ((pairs[i++] = kc_asprintf("%s=%s", k, json_object_is_type(v,
		    json_type_string) ? json_object_get_string(v) : "")) == NULL) {
			r = -ENOMEM;
			break;
		}
	}
	if (r == 0) {
		qsort(pairs, n, sizeof(*pairs), cmp_cstr);
		for (i = 0; i < n && r == 0; i++)
			r = join(b, ",", pairs[i]);
	}
	for (i = 0; i < n; i++)
		kc_free(pairs[i]);
	kc_free(pairs);
	return r;
}

/* [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])? within 'max' bytes. */
static bool
is_qname_part(const char *s, size_t n, size_t max)
{
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9');

		if (!alnum && ((i == 0 || i == n - 1) || (c != '-' && c != '_' && c != '.')))
			return false;
	}
	return true;
}

static bool
is_dns_subdomain(const char *s, size_t n)
{
	size_t start = 0;

	if (n == 0 || n > 253)
		return false;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && s[i] != '.') {
			char c = s[i];

			if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
				return false;
			continue;
		}
		if (i == start || s[start] == '-' || s[i - 1] == '-')
			return false;
		start = i + 1;
	}
	return true;
}

/* validation.IsQualifiedName() of a label key. */
static bool
is_label_key(const char *k)
{
	const char *slash = strchr(k, '/');

	if (slash == NULL)
		return is_qname_part(k, strlen(k), 63);
	if (strchr(slash + 1, '/') != NULL || !is_dns_subdomain(k, (size_t)(slash - k)))
		return false;
	return is_qname_part(slash + 1, strlen(slash + 1), 63);
}

static bool
is_label_value(const char *v)
{
	return v[0] == '\0' || is_qname_part(v, strlen(v), 63);
}

enum selop { OP_EQ, OP_IN, OP_NOTIN, OP_EXISTS, OP_NOTEXISTS };

struct req {
	const char	*key;
	enum selop	 op;
	const char	**vals;
	size_t		 nvals;
};

static int
add_req(struct req *reqs, size_t *n, const char *key, enum selop op,
    const struct json_object *vals, const char *one)
{
	struct req *r = &reqs[(*n)++];
	size_t nv = one != NULL ? 1 : arr_len(vals);

	*r = (struct req){ .key = key, .op = op, .nvals = nv };
	if ((r->vals = kc_calloc(nv == 0 ? 1 : nv, sizeof(*r->vals))) == NULL)
		return -ENOMEM;
	if (one != NULL)
		r->vals[0] = one;
	for (size_t i = 0; one == NULL && i < nv; i++) {
		struct json_object *v = arr_idx(vals, i);

		if (!json_object_is_type(v, json_type_string))
			return -EINVAL;
		r->vals[i] = json_object_get_string(v);
	}
	if (!is_label_key(key))
		return -EINVAL;
	if ((op == OP_IN || op == OP_NOTIN) && nv == 0)
		return -EINVAL;
	if ((op == OP_EXISTS || op == OP_NOTEXISTS) && nv != 0)
		return -EINVAL;
	for (size_t i = 0; i < nv; i++)
		if (!is_label_value(r->vals[i]))
			return -EINVAL;
	qsort(r->vals, nv, sizeof(*r->vals), cmp_cstr);
	return 0;
}

/* The requirement strings of a metav1.LabelSelector, as labels.Selector prints. */
static int
print_reqs(struct req *reqs, size_t n, struct kc_buf *b)
{
	static const char *const opstr[] = { "=", " in ", " notin ", "", "" };
	int r = 0;

	/* Stable sort by key: insertion sort keeps equal keys in order. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(reqs[j - 1].key, reqs[j].key) > 0; j--) {
			struct req t = reqs[j];

			reqs[j] = reqs[j - 1];
			reqs[j - 1] = t;
		}
	for (size_t i = 0; i < n && r == 0; i++) {
		const struct req *q = &reqs[i];

		if ((i > 0 && (r = kc_buf_putc(b, ',')) < 0) ||
		    (q->op == OP_NOTEXISTS && (r = kc_buf_putc(b, '!')) < 0) ||
		    (r = kc_buf_puts(b, q->key)) < 0 ||
		    (r = kc_buf_puts(b, opstr[q->op])) < 0)
			break;
		if (q->op == OP_EXISTS || q->op == OP_NOTEXISTS)
			continue;
		if (q->op != OP_EQ && (r = kc_buf_putc(b, '(')) < 0)
			break;
		for (size_t k = 0; k < q->nvals && r == 0; k++)
			if ((k == 0 || (r = kc_buf_putc(b, ',')) == 0))
				r = kc_buf_puts(b, q->vals[k]);
		if (r == 0 && q->op != OP_EQ)
			r = kc_buf_putc(b, ')');
	}
	return r;
}

/*
 * metav1.FormatLabelSelector(): LabelSelectorAsSelector() printed,
 * "<none>" when it selects everything, "<error>" when it is invalid.
 */
static int
format_label_selector(const struct json_object *ls, struct kc_buf *b)
{
	const struct json_object *ml = kc_json_obj_of(ls, "matchLabels");
	const struct json_object *me = kc_json_get(ls, "matchExpressions");
	size_t n = 0, cap = obj_len(ml) + arr_len(arr_at(ls, "matchExpressions", NULL));
	struct req *reqs;
	int r = 0;

	if ((me != NULL && !json_object_is_type(me, json_type_array)) ||
	    (kc_json_get(ls, "matchLabels") != NULL && ml == NULL))
		return kc_buf_puts(b, "<error>");
	if (cap == 0)
		return kc_buf_puts(b, "<none>");
	if ((reqs = kc_calloc(cap, sizeof(*reqs))) == NULL)
		return -ENOMEM;
	if (ml != NULL) {
		json_object_object_foreach((struct json_object *)(uintptr_t)ml, k, v) {
			if (r == 0)
				r = add_req(reqs, &n, k, OP_EQ, NULL,
				    json_object_is_type(v, json_type_string) ?
				    json_object_get_string(v) : "");
		}
	}
	for (size_t i = 0; i < arr_len(me) && r == 0; i++) {
		const struct json_object *e = arr_idx(me, i);
		const char *op = STR(e, "operator");
		enum selop o;

		if (strcmp(op, "In") == 0)
			o = OP_IN;
		else if (strcmp(op, "NotIn") == 0)
			o = OP_NOTIN;
		else if (strcmp(op, "Exists") == 0)
			o = OP_EXISTS;
		else if (strcmp(op, "DoesNotExist") == 0)
			o = OP_NOTEXISTS;
		else {
			r = -EINVAL;
			break;
		}
		r = add_req(reqs, &n, STR(e, "key"), o, arr_at(e, "values", NULL), NULL);
	}
	if (r == -EINVAL)
		r = kc_buf_puts(b, "<error>");
	else if (r == 0)
		r = print_reqs(reqs, n, b);
	for (size_t i = 0; i < n; i++)
		kc_free(reqs[i].vals);
	kc_free(reqs);
	return r;
}

/*
 * Printers, after pkg/printers/internalversion/printers.go
 */

struct printer {
	const struct coldef	*cols;
	size_t			 ncols;
	int			(*row)(const struct json_object *, struct row *);
};

#define PRINTER(name, fn)						\
	static const struct printer name##_printer = { name##_cols,	\
	    KC_ARRAY_SIZE(name##_cols), fn }

/* Pod */

static const struct coldef pod_cols[] = {
	COL_NAME,
	{ "Ready", "string", "", "The aggregate readiness state of this pod for "
	    "accepting traffic.", 0 },
	{ "Status", "string", "", "The aggregate status of the containers in this "
	    "pod.", 0 },
	{ "Restarts", "string", "", "The number of times the containers in this pod "
	    "have been restarted and when the last container in this pod has "
	    "restarted.", 0 },
	COL_AGE,
	{ "IP", "string", "", "podIP address allocated to the pod. Routable at least "
	    "within the cluster. Empty if not yet allocated.", 1 },
	{ "Node", "string", "", "NodeName indicates in which node this pod is "
	    "scheduled. If empty, this pod is a candidate for scheduling by the "
	    "scheduler defined in schedulerName. Once this field is set, the kubelet "
	    "for this node becomes responsible for the lifecycle of this pod. This "
	    "field should not be used to express a desire for the pod to be scheduled "
	    "on a specific node. https://kubernetes.io/docs/concepts/scheduling-"
	    "eviction/assign-pod-node/#nodename", 1 },
	{ "Nominated Node", "string", "", "nominatedNodeName is set only when this pod "
	    "preempts other pods on the node, but it cannot be scheduled right away as "
	    "preemption victims receive their graceful termination periods. This field "
	    "does not guarantee that the pod will be scheduled on this node. Scheduler "
	    "may decide to place the pod elsewhere if other nodes become available "
	    "sooner. Scheduler may also decide to give the resources on this node to a "
	    "higher priority pod that is created after preemption. As a result, this "
	    "field may be different than PodSpec.nodeName when the pod is scheduled.", 1 },
	{ "Readiness Gates", "string", "", "If specified, all readiness gates will be "
	    "evaluated for pod readiness. A pod is ready when all its containers are "
	    "ready AND all conditions specified in the readiness gates have status "
	    "equal to \"True\" More info: https://git.k8s.io/enhancements/keps/"
	    "sig-network/580-pod-readiness-gates", 1 },
};

/* The condition of 'type' in status.conditions, or NULL. */
static const struct json_object *
condition(const struct json_object *conds, const char *type)
{
	for (size_t i = 0; i < arr_len(conds); i++)
		if (strcmp(STR(arr_idx(conds, i), "type"), type) == 0)
			return arr_idx(conds, i);
	return NULL;
}

static bool
condition_true(const struct json_object *conds, const char *type)
{
	for (size_t i = 0; i < arr_len(conds); i++) {
		const struct json_object *c = arr_idx(conds, i);

		if (strcmp(STR(c, "type"), type) == 0 && strcmp(STR(c, "status"), "True") == 0)
			return true;
	}
	return false;
}

static bool
restartable_init(const struct json_object *spec, const char *name)
{
	const struct json_object *ics = arr_at(spec, "initContainers", NULL);

	for (size_t i = 0; i < arr_len(ics); i++) {
		const struct json_object *c = arr_idx(ics, i);

		if (strcmp(STR(c, "name"), name) == 0)
			return strcmp(STR(c, "restartPolicy"), "Always") == 0;
	}
	return false;
}

/* The newer of '*last' and the lastState.terminated.finishedAt of 'cs'. */
static void
note_restart(const struct json_object *cs, struct ts *last)
{
	const struct json_object *term = kc_json_get(cs, "lastState", "terminated");
	struct ts t;

	if (!json_object_is_type(term, json_type_object))
		return;
	t = ts_of(kc_json_str(term, "finishedAt"));
	if (ts_before(last, &t))
		*last = t;
}

/* "Init:" or "" in front of a terminated container's reason. */
static void
terminated_reason(const struct json_object *term, const char *prefix, char *buf,
    size_t size)
{
	const char *reason = STR(term, "reason");
	int64_t sig = kc_json_int(term, 0, "signal");

	if (reason[0] != '\0')
		(void)snprintf(buf, size, "%s%s", prefix, reason);
	else if (sig != 0)
		(void)snprintf(buf, size, "%sSignal:%" PRId64, prefix, sig);
	else
		(void)snprintf(buf, size, "%sExitCode:%" PRId64, prefix,
		    kc_json_int(term, 0, "exitCode"));
}

static int
pod_conditions(struct row *rw, const char *reason, const char *message)
{
	struct json_object *c = json_object_new_object(), *a;

	if (c == NULL)
		return -ENOMEM;
	if (kc_json_set_str(c, "type", "Completed") < 0 ||
	    kc_json_set_str(c, "status", "True") < 0 ||
	    kc_json_set_str(c, "reason", reason) < 0 ||
	    kc_json_set_str(c, "message", message) < 0 ||
	    (a = json_object_new_array()) == NULL) {
		json_object_put(c);
		return -ENOMEM;
	}
	rw->conditions = a;
	return kc_json_append(a, c);
}

static int
pod_row(const struct json_object *pod, struct row *rw)
{
	const struct json_object *spec = kc_json_obj_of(pod, "spec");
	const struct json_object *status = kc_json_obj_of(pod, "status");
	const struct json_object *conds = arr_at(status, "conditions", NULL);
	const struct json_object *ics = arr_at(status, "initContainerStatuses", NULL);
	const struct json_object *cs = arr_at(status, "containerStatuses", NULL);
	const struct json_object *gates = arr_at(spec, "readinessGates", NULL);
	const char *phase = STR(status, "phase");
	int64_t restarts = 0, rinit_restarts = 0, ready = 0;
	int64_t total = (int64_t)arr_len(arr_at(spec, "containers", NULL));
	struct ts last = { .state = TS_ZERO }, last_rinit = { .state = TS_ZERO };
	char reason[512], buf[TABLE_AGE_MAX + 64];
	bool initializing = false;
	const char *ip, *node, *nominated;
	int r;

	(void)kc_strlcpy(reason, STR(status, "reason")[0] != '\0' ?
	    STR(status, "reason") : phase, sizeof(reason));
	for (size_t i = 0; i < arr_len(conds); i++) {
		const struct json_object *c = arr_idx(conds, i);

		if (strcmp(STR(c, "type"), "PodScheduled") == 0 &&
		    strcmp(STR(c, "reason"), "SchedulingGated") == 0)
			(void)kc_strlcpy(reason, "SchedulingGated", sizeof(reason));
	}
	if (strcmp(phase, "Succeeded") == 0 &&
	    (r = pod_conditions(rw, "Succeeded", "The pod has completed successfully.")) < 0)
		return r;
	if (strcmp(phase, "Failed") == 0 &&
	    (r = pod_conditions(rw, "Failed", "The pod failed.")) < 0)
		return r;
	for (size_t i = 0; i < arr_len(arr_at(spec, "initContainers", NULL)); i++)
		if (strcmp(STR(arr_idx(arr_at(spec, "initContainers", NULL), i),
		    "restartPolicy"), "Always") == 0)
			total++;

	/*
	 * Init containers in order: completed ones and started sidecars are
	 * skipped; the first other one names the status and stops the walk.
	 */
	for (size_t i = 0; i < arr_len(ics); i++) {
		const struct json_object *c = arr_idx(ics, i);
		const struct json_object *term = kc_json_obj_of(kc_json_obj_of(c, "state"),
		    "terminated");
		const char *wait = kc_json_str(c, "state", "waiting", "reason");
		bool sidecar = restartable_init(spec, STR(c, "name"));
		int64_t rc = kc_json_int(c, 0, "restartCount");

		restarts += rc;
		note_restart(c, &last);
		if (sidecar) {
			rinit_restarts += rc;
			note_restart(c, &last_rinit);
		}
		if (term != NULL && kc_json_int(term, 0, "exitCode") == 0)
			continue;
		if (sidecar && kc_json_bool(c, false, "started")) {
			if (kc_json_bool(c, false, "ready"))
				ready++;
			continue;
		}
		if (term != NULL)
			terminated_reason(term, "Init:", reason, sizeof(reason));
		else if (wait != NULL && wait[0] != '\0' && strcmp(wait, "PodInitializing") != 0)
			(void)snprintf(reason, sizeof(reason), "Init:%s", wait);
		else
			(void)snprintf(reason, sizeof(reason), "Init:%zu/%zu", i,
			    arr_len(arr_at(spec, "initContainers", NULL)));
		initializing = true;
		break;
	}

	/*
	 * Then the containers, last to first: a waiting or terminated state
	 * replaces the status; "Completed" with one still running is Running
	 * (Ready condition true) or NotReady.
	 */
	if (!initializing || condition_true(conds, "Initialized")) {
		bool running = false;

		restarts = rinit_restarts;
		last = last_rinit;
		for (size_t i = arr_len(cs); i-- > 0;) {
			const struct json_object *c = arr_idx(cs, i);
			const struct json_object *state = kc_json_obj_of(c, "state");
			const struct json_object *term = kc_json_obj_of(state, "terminated");
			const char *wait = kc_json_str(state, "waiting", "reason");

			restarts += kc_json_int(c, 0, "restartCount");
			note_restart(c, &last);
			if (wait != NULL && wait[0] != '\0')
				(void)kc_strlcpy(reason, wait, sizeof(reason));
			else if (term != NULL)
				terminated_reason(term, "", reason, sizeof(reason));
			else if (kc_json_bool(c, false, "ready") &&
			    kc_json_obj_of(state, "running") != NULL) {
				running = true;
				ready++;
			}
		}
		if (strcmp(reason, "Completed") == 0 && running)
			(void)kc_strlcpy(reason, condition_true(conds, "Ready") ?
			    "Running" : "NotReady", sizeof(reason));
	}
	if (being_deleted(pod)) {
		if (strcmp(STR(status, "reason"), "NodeLost") == 0)
			(void)kc_strlcpy(reason, "Unknown", sizeof(reason));
		else if (strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0)
			(void)kc_strlcpy(reason, "Terminating", sizeof(reason));
	}

	if ((r = cell_str(rw, kc_json_str(pod, "metadata", "name"))) < 0)
		return r;
	(void)snprintf(buf, sizeof(buf), "%" PRId64 "/%" PRId64, ready, total);
	if ((r = cell_str(rw, buf)) < 0 || (r = cell_str(rw, reason)) < 0)
		return r;
	if (restarts != 0 && last.state == TS_SET) {
		char age[TABLE_AGE_MAX];

		ts_age(&last, rw->now, age);
		(void)snprintf(buf, sizeof(buf), "%" PRId64 " (%s ago)", restarts, age);
	} else
		(void)snprintf(buf, sizeof(buf), "%" PRId64, restarts);
	if ((r = cell_str(rw, buf)) < 0 ||
	    (r = cell_age(rw, kc_json_str(pod, "metadata", "creationTimestamp"))) < 0)
		return r;

	/* v1 podIP wins over podIPs when both are set (v1 -> internal conversion). */
	ip = STR(status, "podIP");
	if (ip[0] == '\0')
		ip = STR(arr_idx(arr_at(status, "podIPs", NULL), 0), "ip");
	node = STR(spec, "nodeName");
	nominated = STR(status, "nominatedNodeName");
	if ((r = cell_str(rw, ip[0] != '\0' ? ip : "<none>")) < 0 ||
	    (r = cell_str(rw, node[0] != '\0' ? node : "<none>")) < 0 ||
	    (r = cell_str(rw, nominated[0] != '\0' ? nominated : "<none>")) < 0)
		return r;
	if (arr_len(gates) == 0)
		return cell_str(rw, "<none>");
	{
		size_t trues = 0;

		for (size_t i = 0; i < arr_len(gates); i++) {
			const struct json_object *c = condition(conds,
			    STR(arr_idx(gates, i), "conditionType"));

			if (c != NULL && strcmp(STR(c, "status"), "True") == 0)
				trues++;
		}
		(void)snprintf(buf, sizeof(buf), "%zu/%zu", trues, arr_len(gates));
	}
	return cell_str(rw, buf);
}

PRINTER(pod, pod_row);

/* Namespace */

static const struct coldef namespace_cols[] = {
	COL_NAME,
	{ "Status", "string", "", "The status of the namespace", 0 },
	COL_AGE,
};

static int
namespace_row(const struct json_object *o, struct row *rw)
{
	int r;

	if ((r = cell_str(rw, kc_json_str(o, "metadata", "name"))) < 0 ||
	    (r = cell_str(rw, kc_json_str(o, "status", "phase"))) < 0)
		return r;
	return cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"));
}

PRINTER(namespace, namespace_row);

/* ConfigMap */

static const struct coldef configmap_cols[] = {
	COL_NAME,
	{ "Data", "string", "", "Data contains the configuration data. Each key must "
	    "consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 "
	    "byte sequences must use the BinaryData field. The keys stored in Data must "
	    "not overlap with the keys in the BinaryData field, this is enforced during "
	    "validation process.", 0 },
	COL_AGE,
};

static int
configmap_row(const struct json_object *o, struct row *rw)
{
	int r;

	if ((r = cell_str(rw, kc_json_str(o, "metadata", "name"))) < 0 ||
	    (r = cell_int(rw, (int64_t)(obj_len(kc_json_get(o, "data")) +
	    obj_len(kc_json_get(o, "binaryData"))))) < 0)
		return r;
	return cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"));
}

PRINTER(configmap, configmap_row);

/* Secret */

static const struct coldef secret_cols[] = {
	COL_NAME,
	{ "Type", "string", "", "Used to facilitate programmatic handling of secret "
	    "data. More info: https://kubernetes.io/docs/concepts/configuration/secret/"
	    "#secret-types", 0 },
	{ "Data", "string", "", "Data contains the secret data. Each key must consist "
	    "of alphanumeric characters, '-', '_' or '.'. The serialized form of the "
	    "secret data is a base64 encoded string, representing the arbitrary "
	    "(possibly non-string) data value here. Described in "
	    "https://tools.ietf.org/html/rfc4648#section-4", 0 },
	COL_AGE,
};

static int
secret_row(const struct json_object *o, struct row *rw)
{
	int r;

	if ((r = cell_str(rw, kc_json_str(o, "metadata", "name"))) < 0 ||
	    (r = cell_str(rw, kc_json_str(o, "type"))) < 0 ||
	    (r = cell_int(rw, (int64_t)obj_len(kc_json_get(o, "data")))) < 0)
		return r;
	return cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"));
}

PRINTER(secret, secret_row);

/* ServiceAccount */

static const struct coldef serviceaccount_cols[] = {
	COL_NAME,
	{ "Secrets", "string", "", "Secrets is a list of the secrets in the same "
	    "namespace that pods running using this ServiceAccount are allowed to use. "
	    "Pods are only limited to this list if this service account has a "
	    "\"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The "
	    "\"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since "
	    "v1.32. Prefer separate namespaces to isolate access to mounted secrets. "
	    "This field should not be used to find auto-generated service account token "
	    "secrets for use outside of pods. Instead, tokens can be requested directly "
	    "using the TokenRequest API, or service account token secrets can be "
	    "manually created. More info: https://kubernetes.io/docs/concepts/"
	    "configuration/secret", 0 },
	COL_AGE,
};

static int
serviceaccount_row(const struct json_object *o, struct row *rw)
{
	int r;

	if ((r = cell_str(rw, kc_json_str(o, "metadata", "name"))) < 0 ||
	    (r = cell_int(rw, (int64_t)arr_len(arr_at(o, "secrets", NULL)))) < 0)
		return r;
	return cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"));
}

PRINTER(serviceaccount, serviceaccount_row);

/* Service */

static const struct coldef service_cols[] = {
	COL_NAME,
	{ "Type", "string", "", "type determines how the Service is exposed. Defaults "
	    "to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and "
	    "LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for "
	    "load-balancing to endpoints. Endpoints are determined by the selector or if "
	    "that is not specified, by manual construction of an Endpoints object or "
	    "EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated "
	    "and the endpoints are published as a set of endpoints rather than a virtual "
	    "IP. \"NodePort\" builds on ClusterIP and allocates a port on every node "
	    "which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds "
	    "on NodePort and creates an external load-balancer (if supported in the "
	    "current cloud) which routes to the same endpoints as the clusterIP. "
	    "\"ExternalName\" aliases this service to the specified externalName. "
	    "Several other fields do not apply to ExternalName services. More info: "
	    "https://kubernetes.io/docs/concepts/services-networking/service/"
	    "#publishing-services-service-types", 0 },
	{ "Cluster-IP", "string", "", "clusterIP is the IP address of the service and "
	    "is usually assigned randomly. If an address is specified manually, is "
	    "in-range (as per system configuration), and is not in use, it will be "
	    "allocated to the service; otherwise creation of the service will fail. "
	    "This field may not be changed through updates unless the type field is "
	    "also being changed to ExternalName (which requires this field to be blank) "
	    "or the type field is being changed from ExternalName (in which case this "
	    "field may optionally be specified, as describe above).  Valid values are "
	    "\"None\", empty string (\"\"), or a valid IP address. Setting this to "
	    "\"None\" makes a \"headless service\" (no virtual IP), which is useful when "
	    "direct endpoint connections are preferred and proxying is not required.  "
	    "Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field "
	    "is specified when creating a Service of type ExternalName, creation will "
	    "fail. This field will be wiped when updating a Service to type "
	    "ExternalName. More info: https://kubernetes.io/docs/concepts/"
	    "services-networking/service/#virtual-ips-and-service-proxies", 0 },
	{ "External-IP", "string", "", "externalIPs is a list of IP addresses for which "
	    "nodes in the cluster will also accept traffic for this service.  These IPs "
	    "are not managed by Kubernetes.  The user is responsible for ensuring that "
	    "traffic arrives at a node with this IP.  A common example is external "
	    "load-balancers that are not part of the Kubernetes system.", 0 },
	{ "Port(s)", "string", "", "The list of ports that are exposed by this service. "
	    "More info: https://kubernetes.io/docs/concepts/services-networking/service/"
	    "#virtual-ips-and-service-proxies", 0 },
	COL_AGE,
	{ "Selector", "string", "", "Route service traffic to pods with label keys and "
	    "values matching this selector. If empty or not present, the service is "
	    "assumed to have an external process managing its endpoints, which "
	    "Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and "
	    "LoadBalancer. Ignored if type is ExternalName. More info: "
	    "https://kubernetes.io/docs/concepts/services-networking/service/", 1 },
};

/* Appends every string of the array 'a' to 'b', comma-separated. */
static int
join_array(struct kc_buf *b, const struct json_object *a)
{
	int r = 0;

	for (size_t i = 0; i < arr_len(a) && r == 0; i++) {
		const struct json_object *s = arr_idx(a, i);

		if ((i > 0 && (r = kc_buf_putc(b, ',')) < 0) ||
		    (r = kc_buf_puts(b, json_object_is_type(s, json_type_string) ?
		    json_object_get_string((struct json_object *)(uintptr_t)s) : "")) < 0)
			break;
	}
	return r;
}

/* loadBalancerStatusStringer(wide): ingress IPs or hostnames, sorted, unique. */
static int
lb_ingress(const struct json_object *svc, struct kc_buf *b)
{
	const struct json_object *ing = arr_at(kc_json_get(svc, "status", "loadBalancer"),
	    "ingress", NULL);
	size_t n = 0;
	const char **v;
	int r = 0;

	if (arr_len(ing) == 0)
		return 0;
	if ((v = kc_calloc(arr_len(ing), sizeof(*v))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < arr_len(ing); i++) {
		const char *ip = STR(arr_idx(ing, i), "ip");
		const char *host = STR(arr_idx(ing, i), "hostname");

		if (ip[0] != '\0')
			v[n++] = ip;
		else if (host[0] != '\0')
			v[n++] = host;
	}
	qsort(v, n, sizeof(*v), cmp_cstr);
	for (size_t i = 0; i < n && r == 0; i++)
		if (i == 0 || strcmp(v[i], v[i - 1]) != 0)
			r = join(b, ",", v[i]);
	kc_free(v);
	return r;
}

static int
service_external_ip(const struct json_object *svc, struct kc_buf *b)
{
	const char *type = STR(svc, "spec", "type");
	const struct json_object *ext = arr_at(svc, "spec", "externalIPs");
	int r;

	if (strcmp(type, "ClusterIP") == 0 || strcmp(type, "NodePort") == 0) {
		if (arr_len(ext) > 0)
			return join_array(b, ext);
		return kc_buf_puts(b, "<none>");
	}
	if (strcmp(type, "LoadBalancer") == 0) {
		if ((r = lb_ingress(svc, b)) < 0)
			return r;
		if (arr_len(ext) > 0) {
			if (b->len > 0 && (r = kc_buf_putc(b, ',')) < 0)
				return r;
			return join_array(b, ext);
		}
		return b->len > 0 ? 0 : kc_buf_puts(b, "<pending>");
	}
	if (strcmp(type, "ExternalName") == 0)
		return kc_buf_puts(b, STR(svc, "spec", "externalName"));
	return kc_buf_puts(b, "<unknown>");
}

static int
service_row(const struct json_object *o, struct row *rw)
{
	const struct json_object *spec = kc_json_obj_of(o, "spec");
	const struct json_object *ports = arr_at(spec, "ports", NULL);
	const char *ip = STR(spec, "clusterIP");
	struct kc_buf b;
	int r;

	if (ip[0] == '\0' && arr_len(arr_at(spec, "clusterIPs", NULL)) > 0) {
		const struct json_object *first = arr_idx(arr_at(spec, "clusterIPs", NULL), 0);

		ip = json_object_is_type(first, json_type_string) ?
		    json_object_get_string((struct json_object *)(uintptr_t)first) : "";
	} else if (ip[0] == '\0')
		ip = "<none>";
	if ((r = cell_str(rw, kc_json_str(o, "metadata", "name"))) < 0 ||
	    (r = cell_str(rw, STR(spec, "type"))) < 0 || (r = cell_str(rw, ip)) < 0)
		return r;
	kc_buf_init(&b, CELL_MAX);
	if ((r = cell_buf(rw, &b, service_external_ip(o, &b))) < 0)
		return r;
	kc_buf_init(&b, CELL_MAX);
	r = 0;
	for (size_t i = 0; i < arr_len(ports) && r == 0; i++) {
		const struct json_object *p = arr_idx(ports, i);
		const char *proto = kc_json_str(p, "protocol");
		int64_t np = kc_json_int(p, 0, "nodePort");

		if (i > 0)
			r = kc_buf_putc(&b, ',');
		if (r == 0 && np > 0)
			r = kc_buf_printf(&b, "%" PRId64 ":%" PRId64 "/%s",
			    kc_json_int(p, 0, "port"), np, proto != NULL ? proto : "TCP");
		else if (r == 0)
			r = kc_buf_printf(&b, "%" PRId64 "/%s", kc_json_int(p, 0, "port"),
			    proto != NULL ? proto : "TCP");
	}
	if (r == 0 && b.len == 0)
		r = kc_buf_puts(&b, "<none>");
	if ((r = cell_buf(rw, &b, r)) < 0 ||
	    (r = cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"))) < 0)
		return r;
	kc_buf_init(&b, CELL_MAX);
	return cell_buf(rw, &b, format_labels(kc_json_get(spec, "selector"), &b));
}

PRINTER(service, service_row);

/* Endpoints */

static const struct coldef endpoints_cols[] = {
	COL_NAME,
	{ "Endpoints", "string", "", "The set of all endpoints is the union of all "
	    "subsets. Addresses are placed into subsets according to the IPs they share. "
	    "A single address with multiple ports, some of which are ready and some of "
	    "which are not (because they come from different containers) will result in "
	    "the address being displayed in different subsets for the different ports. "
	    "No address will appear in both Addresses and NotReadyAddresses in the same "
	    "subset. Sets of addresses and ports that comprise a service.", 0 },
	COL_AGE,
};

/* formatEndpoints(ep, nil): up to three host:port entries, then "+ N more...". */
static int
format_endpoints(const struct json_object *ep, struct kc_buf *b)
{
	const struct json_object *subsets = arr_at(ep, "subsets", NULL);
	size_t listed = 0, count = 0;
	bool more = false;
	int r = 0;

	if (arr_len(subsets) == 0)
		return kc_buf_puts(b, "<none>");
	for (size_t i = 0; i < arr_len(subsets) && r == 0; i++) {
		const struct json_object *ss = arr_idx(subsets, i);
		const struct json_object *addrs = arr_at(ss, "addresses", NULL);
		const struct json_object *ports = arr_at(ss, "ports", NULL);
		size_t np = arr_len(ports) == 0 ? 1 : arr_len(ports);

		for (size_t p = 0; p < np && r == 0; p++) {
			count += arr_len(addrs);
			for (size_t a = 0; a < arr_len(addrs) && r == 0; a++) {
				const char *ip = STR(arr_idx(addrs, a), "ip");

				if (listed == 3) {
					more = true;
					break;
				}
				if (listed++ > 0)
					r = kc_buf_putc(b, ',');
				if (r == 0 && arr_len(ports) == 0)
					r = kc_buf_puts(b, ip);
				else if (r == 0)
					r = kc_buf_printf(b, strchr(ip, ':') != NULL ?
					    "[%s]:%" PRId64 : "%s:%" PRId64, ip,
					    kc_json_int(arr_idx(ports, p), 0, "port"));
			}
		}
	}
	if (r == 0 && more)
		r = kc_buf_printf(b, " + %zu more...", count - 3);
	return r;
}

static int
endpoints_row(const struct json_object *o, struct row *rw)
{
	struct kc_buf b;
	int r;

	if ((r = cell_str(rw, kc_json_str(o, "metadata", "name"))) < 0)
		return r;
	kc_buf_init(&b, CELL_MAX);
	if ((r = cell_buf(rw, &b, format_endpoints(o, &b))) < 0)
		return r;
	return cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"));
}

PRINTER(endpoints, endpoints_row);

/* Node */

#define D_NODE_ADDRESSES "List of addresses reachable to the node. Queried from " \
	"cloud provider, if available. More info: https://kubernetes.io/docs/" \
	"reference/node/node-status/#addresses Note: This field is declared as " \
	"mergeable, but the merge key is not sufficiently unique, which can cause data " \
	"corruption when it is merged. Callers should instead use a full-replacement " \
	"patch. See https://pr.k8s.io/79391 for an example. Consumers should assume " \
	"that addresses can change during the lifetime of a Node. However, there are " \
	"some exceptions where this may not be possible, such as Pods that inherit a " \
	"Node's address in its own status or consumers of the downward API " \
	"(status.hostIP)."

static const struct coldef node_cols[] = {
	COL_NAME,
	{ "Status", "string", "", "The status of the node", 0 },
	{ "Roles", "string", "", "The roles of the node", 0 },
	COL_AGE,
	{ "Version", "string", "", "Kubelet Version reported by the node.", 0 },
	{ "Internal-IP", "string", "", D_NODE_ADDRESSES, 1 },
	{ "External-IP", "string", "", D_NODE_ADDRESSES, 1 },
	{ "OS-Image", "string", "", "OS Image reported by the node from "
	    "/etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).", 1 },
	{ "Kernel-Version", "string", "", "Kernel Version reported by the node from "
	    "'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1 },
	{ "Container-Runtime", "string", "", "ContainerRuntime Version reported by the "
	    "node through runtime remote API (e.g. containerd://1.4.2).", 1 },
};

static int
node_roles(const struct json_object *labels, struct kc_buf *b)
{
	static const char prefix[] = "node-role.kubernetes.io/";
	size_t n = 0;
	const char **v;
	int r = 0;

	if (obj_len(labels) == 0)
		return kc_buf_puts(b, "<none>");
	if ((v = kc_calloc(obj_len(labels), sizeof(*v))) == NULL)
		return -ENOMEM;
	json_object_object_foreach((struct json_object *)(uintptr_t)labels, k, val) {
		const char *s = json_object_is_type(val, json_type_string) ?
		    json_object_get_string(val) : "";

		if (strncmp(k, prefix, sizeof(prefix) - 1) == 0) {
			if (k[sizeof(prefix) - 1] != '\0')
				v[n++] = k + sizeof(prefix) - 1;
		} else if (strcmp(k, "kubernetes.io/role") == 0 && s[0] != '\0')
			v[n++] = s;
	}
	qsort(v, n, sizeof(*v), cmp_cstr);
	for (size_t i = 0; i < n && r == 0; i++)
		if (i == 0 || strcmp(v[i], v[i - 1]) != 0)
			r = join(b, ",", v[i]);
	if (r == 0 && b->len == 0)
		r = kc_buf_puts(b, "<none>");
	kc_free(v);
	return r;
}

static const char *
node_address(const struct json_object *node, const char *type)
{
	const struct json_object *a = arr_at(kc_json_get(node, "status"), "addresses", NULL);

	for (size_t i = 0; i < arr_len(a); i++)
		if (strcmp(STR(arr_idx(a, i), "type"), type) == 0)
			return STR(arr_idx(a, i), "address");
	return "<none>";
}

static const char *
or_unknown(const char *s)
{
	return s != NULL && s[0] != '\0' ? s : "<unknown>";
}

static int
node_row(const struct json_object *o, struct row *rw)
{
	const struct json_object *conds = arr_at(kc_json_get(o, "status"), "conditions", NULL);
	const struct json_object *ready = NULL;
	const struct json_object *info = kc_json_get(o, "status", "nodeInfo");
	char status[64];
	struct kc_buf b;
	int r;

	for (size_t i = 0; i < arr_len(conds); i++)
		if (strcmp(STR(arr_idx(conds, i), "type"), "Ready") == 0)
			ready = arr_idx(conds, i);
	if (ready == NULL)
		(void)kc_strlcpy(status, "Unknown", sizeof(status));
	else
		(void)kc_strlcpy(status, strcmp(STR(ready, "status"), "True") == 0 ?
		    "Ready" : "NotReady", sizeof(status));
	if (kc_json_bool(o, false, "spec", "unschedulable"))
		(void)kc_strlcat(status, ",SchedulingDisabled", sizeof(status));
	if ((r = cell_str(rw, kc_json_str(o, "metadata", "name"))) < 0 ||
	    (r = cell_str(rw, status)) < 0)
		return r;
	kc_buf_init(&b, CELL_MAX);
	if ((r = cell_buf(rw, &b, node_roles(kc_json_get(o, "metadata", "labels"), &b))) < 0 ||
	    (r = cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"))) < 0 ||
	    (r = cell_str(rw, kc_json_str(info, "kubeletVersion"))) < 0 ||
	    (r = cell_str(rw, node_address(o, "InternalIP"))) < 0 ||
	    (r = cell_str(rw, node_address(o, "ExternalIP"))) < 0 ||
	    (r = cell_str(rw, or_unknown(kc_json_str(info, "osImage")))) < 0 ||
	    (r = cell_str(rw, or_unknown(kc_json_str(info, "kernelVersion")))) < 0)
		return r;
	return cell_str(rw, or_unknown(kc_json_str(info, "containerRuntimeVersion")));
}

PRINTER(node, node_row);

/* Event (core/v1, and events.k8s.io/v1 through its core field names) */

static const struct coldef event_cols[] = {
	{ "Last Seen", "string", "", "The time at which the most recent occurrence of "
	    "this event was recorded.", 0 },
	{ "Type", "string", "", "Type of this event (Normal, Warning), new types could "
	    "be added in the future", 0 },
	{ "Reason", "string", "", "This should be a short, machine understandable "
	    "string that gives the reason for the transition into the object's current "
	    "status.", 0 },
	{ "Object", "string", "", "The object that this event is about.", 0 },
	{ "Subobject", "string", "", "If referring to a piece of an object instead of "
	    "an entire object, this string should contain a valid JSON/Go field access "
	    "statement, such as desiredState.manifest.containers[2]. For example, if the "
	    "object reference is to a container within a pod, this would take on a value "
	    "like: \"spec.containers{name}\" (where \"name\" refers to the name of the "
	    "container that triggered the event) or if no container name is specified "
	    "\"spec.containers[2]\" (container with index 2 in this pod). This syntax is "
	    "chosen only to have some well-defined way of referencing a part of an "
	    "object.", 1 },
	{ "Source", "string", "", "The component reporting this event. Should be a "
	    "short machine understandable string.", 1 },
	{ "Message", "string", "", "A human-readable description of the status of this "
	    "operation.", 0 },
	{ "First Seen", "string", "", "The time at which the event was first recorded. "
	    "(Time of server receipt is in TypeMeta.)", 1 },
	{ "Count", "string", "", "The number of times this event has occurred.", 1 },
	{ "Name", "string", "name", D_NAME, 1 },
};

static void
lower_ascii(char *s)
{
	for (; *s != '\0'; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int
event_row(const struct json_object *o, struct row *rw)
{
	bool v1 = rw->events_k8s_io;
	const struct json_object *io = kc_json_get(o, v1 ? "regarding" : "involvedObject");
	const struct json_object *src = kc_json_get(o, v1 ? "deprecatedSource" : "source");
	const struct json_object *series = kc_json_obj_of(o, "series");
	const char *msg = STR(o, v1 ? "note" : "message");
	const char *comp = STR(src, "component"), *host = STR(src, "host");
	struct ts first = ts_of(kc_json_str(o, v1 ? "deprecatedFirstTimestamp" :
	    "firstTimestamp"));
	struct ts last = ts_of(kc_json_str(o, v1 ? "deprecatedLastTimestamp" :
	    "lastTimestamp"));
	int64_t count = kc_json_int(o, 0, v1 ? "deprecatedCount" : "count");
	char first_s[TABLE_AGE_MAX], last_s[TABLE_AGE_MAX], *target;
	struct kc_buf b;
	size_t ml;
	int r;

	if (first.state == TS_ZERO)
		first = ts_of(kc_json_str(o, "eventTime"));
	ts_age(&first, rw->now, first_s);
	if (last.state == TS_ZERO)
		(void)kc_strlcpy(last_s, first_s, sizeof(last_s));
	else
		ts_age(&last, rw->now, last_s);
	if (series != NULL) {
		struct ts seen = ts_of(kc_json_str(series, "lastObservedTime"));

		ts_age(&seen, rw->now, last_s);
		count = kc_json_int(series, 0, "count");
	} else if (count == 0)
		count = 1;
	if (STR(io, "name")[0] != '\0')
		target = kc_asprintf("%s/%s", STR(io, "kind"), STR(io, "name"));
	else
		target = kc_strdup(STR(io, "kind"));
	if (target == NULL)
		return -ENOMEM;
	lower_ascii(target);
	r = cell_str(rw, last_s);
	if (r == 0)
		r = cell_str(rw, kc_json_str(o, "type"));
	if (r == 0)
		r = cell_str(rw, kc_json_str(o, "reason"));
	if (r == 0)
		r = cell_str(rw, target);
	kc_free(target);
	if (r < 0 || (r = cell_str(rw, kc_json_str(io, "fieldPath"))) < 0)
		return r;
	if (comp[0] == '\0')
		comp = STR(o, "reportingController");
	if (host[0] == '\0')
		host = STR(o, "reportingInstance");
	kc_buf_init(&b, CELL_MAX);
	r = kc_buf_puts(&b, comp);
	if (r == 0 && host[0] != '\0')
		r = kc_buf_printf(&b, ", %s", host);
	if ((r = cell_buf(rw, &b, r)) < 0)
		return r;
	while (is_space(*msg))
		msg++;
	for (ml = strlen(msg); ml > 0 && is_space(msg[ml - 1]); ml--)
		;
	if ((r = cell_strn(rw, msg, ml)) < 0 || (r = cell_str(rw, first_s)) < 0 ||
	    (r = cell_int(rw, count)) < 0)
		return r;
	return cell_str(rw, kc_json_str(o, "metadata", "name"));
}

PRINTER(event, event_row);

/* Lease */

static const struct coldef lease_cols[] = {
	COL_NAME,
	{ "Holder", "string", "", "holderIdentity contains the identity of the holder "
	    "of a current lease. If Coordinated Leader Election is used, the holder "
	    "identity must be equal to the elected LeaseCandidate.metadata.name field.", 0 },
	COL_AGE,
};

static int
lease_row(const struct json_object *o, struct row *rw)
{
	int r;

	if ((r = cell_str(rw, kc_json_str(o, "metadata", "name"))) < 0 ||
	    (r = cell_str(rw, kc_json_str(o, "spec", "holderIdentity"))) < 0)
		return r;
	return cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"));
}

PRINTER(lease, lease_row);

/* NetworkPolicy */

static const struct coldef networkpolicy_cols[] = {
	COL_NAME,
	{ "Pod-Selector", "string", "", "Selects the pods to which this NetworkPolicy "
	    "object applies. The array of ingress rules is applied to any pods selected "
	    "by this field. Multiple network policies can select the same set of pods. "
	    "In this case, the ingress rules for each are combined additively. This "
	    "field is NOT optional and follows standard label selector semantics. An "
	    "empty podSelector matches all pods in this namespace.", 0 },
	COL_AGE,
};

static int
networkpolicy_row(const struct json_object *o, struct row *rw)
{
	struct kc_buf b;
	int r;

	if ((r = cell_str(rw, kc_json_str(o, "metadata", "name"))) < 0)
		return r;
	kc_buf_init(&b, CELL_MAX);
	if ((r = cell_buf(rw, &b, format_label_selector(kc_json_get(o, "spec",
	    "podSelector"), &b))) < 0)
		return r;
	return cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"));
}

PRINTER(networkpolicy, networkpolicy_row);

/* PriorityClass */

static const struct coldef priorityclass_cols[] = {
	COL_NAME,
	{ "Value", "integer", "", "value represents the integer value of this priority "
	    "class. This is the actual priority that pods receive when they have the "
	    "name of this class in their pod spec.", 0 },
	{ "Global-Default", "boolean", "", "globalDefault specifies whether this "
	    "PriorityClass should be considered as the default priority for pods that "
	    "do not have any priority class. Only one PriorityClass can be marked as "
	    "`globalDefault`. However, if more than one PriorityClasses exists with their "
	    "`globalDefault` field set to true, the smallest value of such global default "
	    "PriorityClasses will be used as the default priority.", 0 },
	COL_AGE,
	{ "PreemptionPolicy", "string", "", "preemptionPolicy is the Policy for "
	    "preempting pods with lower priority. One of Never, PreemptLowerPriority. "
	    "Defaults to PreemptLowerPriority if unset.", 0 },
};

static int
priorityclass_row(const struct json_object *o, struct row *rw)
{
	int r;

	if ((r = cell_str(rw, kc_json_str(o, "metadata", "name"))) < 0 ||
	    (r = cell_int(rw, kc_json_int(o, 0, "value"))) < 0 ||
	    (r = cell_bool(rw, kc_json_bool(o, false, "globalDefault"))) < 0 ||
	    (r = cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"))) < 0)
		return r;
	return cell_str(rw, kc_json_str(o, "preemptionPolicy"));
}

PRINTER(priorityclass, priorityclass_row);

/* PodDisruptionBudget (disruption.c) */

/* Deployment, ReplicaSet */

#define D_CONTAINERS	"Names of each container in the template."
#define D_IMAGES	"Images referenced by each container in the template."

static const struct coldef deployment_cols[] = {
	COL_NAME,
	{ "Ready", "string", "", "Number of the pod with ready state", 0 },
	{ "Up-to-date", "integer", "", "Total number of non-terminated pods targeted by this "
	    "deployment that have the desired template spec.", 0 },
	{ "Available", "integer", "", "Total number of available pods (ready for at least "
	    "minReadySeconds) targeted by this deployment.", 0 },
	COL_AGE,
	{ "Containers", "string", "", D_CONTAINERS, 1 },
	{ "Images", "string", "", D_IMAGES, 1 },
	{ "Selector", "string", "", "Label selector for pods. Existing ReplicaSets whose pods "
	    "are selected by this will be the ones affected by this deployment.", 1 },
};

static const struct coldef replicaset_cols[] = {
	COL_NAME,
	{ "Desired", "integer", "", "Number of desired pods.", 0 },
	{ "Current", "integer", "", "Number of actually running pods.", 0 },
	{ "Ready", "integer", "", "Number of pods ready.", 0 },
	COL_AGE,
	{ "Containers", "string", "", D_CONTAINERS, 1 },
	{ "Images", "string", "", D_IMAGES, 1 },
	{ "Selector", "string", "", "Label selector for pods. If empty, it defaults to the "
	    "labels on the pod template.", 1 },
};

/* The template's containers (names or images) and the selector: the wide cells. */
static int
workload_wide(const struct json_object *o, struct row *rw)
{
	const struct json_object *cs = arr_at(kc_json_get(o, "spec", "template", "spec"),
	    "containers", NULL);
	static const char *const keys[] = { "name", "image" };
	struct kc_label_selector *ls = NULL;
	struct kc_status st = { 0 };
	struct kc_buf b;
	char *sel = NULL;
	int r = 0;

	for (size_t k = 0; k < KC_ARRAY_SIZE(keys); k++) {
		kc_buf_init(&b, CELL_MAX);
		for (size_t i = 0; i < arr_len(cs) && r == 0; i++)
			r = join(&b, ",", STR(arr_idx(cs, i), keys[k]));
		if ((r = cell_buf(rw, &b, r)) < 0)
			return r;
	}
	if (kc_label_selector_from_json(kc_json_get(o, "spec", "selector"), &ls, &st) == 0) {
		r = kc_label_selector_string(ls, &sel);
		kc_label_selector_free(ls);
		if (r < 0)
			return r;
	}
	r = cell_str(rw, sel != NULL ? sel : "");
	kc_free(sel);
	return r;
}

static int
deployment_row(const struct json_object *o, struct row *rw)
{
	char ready[48];
	int r;

	(void)snprintf(ready, sizeof(ready), "%" PRId64 "/%" PRId64,
	    kc_json_int(o, 0, "status", "readyReplicas"), kc_json_int(o, 1, "spec", "replicas"));
	if ((r = cell_str(rw, STR(o, "metadata", "name"))) < 0 ||
	    (r = cell_str(rw, ready)) < 0 ||
	    (r = cell_int(rw, kc_json_int(o, 0, "status", "updatedReplicas"))) < 0 ||
	    (r = cell_int(rw, kc_json_int(o, 0, "status", "availableReplicas"))) < 0 ||
	    (r = cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"))) < 0)
		return r;
	return workload_wide(o, rw);
}

PRINTER(deployment, deployment_row);

static int
replicaset_row(const struct json_object *o, struct row *rw)
{
	int r;

	if ((r = cell_str(rw, STR(o, "metadata", "name"))) < 0 ||
	    (r = cell_int(rw, kc_json_int(o, 1, "spec", "replicas"))) < 0 ||
	    (r = cell_int(rw, kc_json_int(o, 0, "status", "replicas"))) < 0 ||
	    (r = cell_int(rw, kc_json_int(o, 0, "status", "readyReplicas"))) < 0 ||
	    (r = cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"))) < 0)
		return r;
	return workload_wide(o, rw);
}

PRINTER(replicaset, replicaset_row);

static const struct coldef pdb_cols[] = {
	COL_NAME,
	{ "Min Available", "string", "", "The minimum number of pods that must be "
	    "available.", 0 },
	{ "Max Unavailable", "string", "", "The maximum number of pods that may be "
	    "unavailable.", 0 },
	{ "Allowed Disruptions", "integer", "", "Calculated number of pods that may be "
	    "disrupted at this time.", 0 },
	COL_AGE,
};

/* An IntOrString cell: the integer or the string, "N/A" when unset. */
static int
cell_intstr(struct row *rw, const struct json_object *v)
{
	char buf[32];

	if (json_object_is_type(v, json_type_int)) {
		(void)snprintf(buf, sizeof(buf), "%" PRId64, json_object_get_int64(v));
		return cell_str(rw, buf);
	}
	if (json_object_is_type(v, json_type_string))
		return cell_str(rw, json_object_get_string((struct json_object *)(uintptr_t)v));
	return cell_str(rw, "N/A");
}

static int
pdb_row(const struct json_object *o, struct row *rw)
{
	int r;

	if ((r = cell_str(rw, kc_json_str(o, "metadata", "name"))) < 0 ||
	    (r = cell_intstr(rw, kc_json_get(o, "spec", "minAvailable"))) < 0 ||
	    (r = cell_intstr(rw, kc_json_get(o, "spec", "maxUnavailable"))) < 0 ||
	    (r = cell_int(rw, kc_json_int(o, 0, "status", "disruptionsAllowed"))) < 0)
		return r;
	return cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"));
}

PRINTER(pdb, pdb_row);

/* ResourceQuota */

static const struct coldef resourcequota_cols[] = {
	COL_NAME,
	{ "Request", "string", "", "Request represents a minimum amount of cpu/memory "
	    "that a container may consume.", 0 },
	{ "Limit", "string", "", "Limits control the maximum amount of cpu/memory that "
	    "a container may use independent of contention on the node.", 0 },
	COL_AGE,
};

/* A quantity as a string; a missing one is the zero Quantity, "0". */
static const char *
quantity(const struct json_object *m, const char *k, char buf[32])
{
	struct json_object *v = kc_json_get(m, k);

	if (json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	if (json_object_is_type(v, json_type_int)) {
		(void)snprintf(buf, 32, "%" PRId64, json_object_get_int64(v));
		return buf;
	}
	return "0";
}

static int
resourcequota_row(const struct json_object *o, struct row *rw)
{
	const struct json_object *hard = kc_json_obj_of(kc_json_obj_of(o, "status"), "hard");
	const struct json_object *used = kc_json_obj_of(kc_json_obj_of(o, "status"), "used");
	struct kc_buf req, lim;
	const char **names = NULL;
	size_t n = 0;
	int r;

	if ((r = cell_str(rw, kc_json_str(o, "metadata", "name"))) < 0)
		return r;
	if (obj_len(hard) > 0) {
		if ((names = kc_calloc(obj_len(hard), sizeof(*names))) == NULL)
			return -ENOMEM;
		json_object_object_foreach((struct json_object *)(uintptr_t)hard, k, v) {
			(void)v;
			names[n++] = k;
		}
		qsort(names, n, sizeof(*names), cmp_cstr);
	}
	kc_buf_init(&req, CELL_MAX);
	kc_buf_init(&lim, CELL_MAX);
	for (size_t i = 0; i < n && r == 0; i++) {
		struct kc_buf *w = strncmp(names[i], "limits.", 7) == 0 ? &lim : &req;
		char ub[32], hb[32];

		if (w->len > 0)
			r = kc_buf_puts(w, ", ");
		if (r == 0)
			r = kc_buf_printf(w, "%s: %s/%s", names[i], quantity(used, names[i], ub),
			    quantity(hard, names[i], hb));
	}
	kc_free(names);
	if ((r = cell_buf(rw, &req, r)) < 0) {
		kc_buf_free(&lim);
		return r;
	}
	if ((r = cell_buf(rw, &lim, 0)) < 0)
		return r;
	return cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"));
}

PRINTER(resourcequota, resourcequota_row);

/* PersistentVolumeClaim */

static const struct coldef pvc_cols[] = {
	COL_NAME,
	{ "Status", "string", "", "phase represents the current phase of "
	    "PersistentVolumeClaim.", 0 },
	{ "Volume", "string", "", "volumeName is the binding reference to the "
	    "PersistentVolume backing this claim.", 0 },
	{ "Capacity", "string", "", "capacity represents the actual resources of the "
	    "underlying volume.", 0 },
	{ "Access Modes", "string", "", "accessModes contains the actual access modes "
	    "the volume backing the PVC has. More info: https://kubernetes.io/docs/"
	    "concepts/storage/persistent-volumes#access-modes-1", 0 },
	{ "StorageClass", "string", "", "StorageClass of the pvc", 0 },
	{ "VolumeAttributesClass", "string", "", "VolumeAttributesClass of the pvc", 0 },
	COL_AGE,
	{ "VolumeMode", "string", "", "volumeMode defines what type of volume is "
	    "required by the claim. Value of Filesystem is implied when not included in "
	    "claim spec.", 1 },
};

static bool
has_string(const struct json_object *a, const char *s)
{
	for (size_t i = 0; i < arr_len(a); i++) {
		const struct json_object *v = arr_idx(a, i);

		if (json_object_is_type(v, json_type_string) &&
		    strcmp(json_object_get_string((struct json_object *)(uintptr_t)v), s) == 0)
			return true;
	}
	return false;
}

static int
pvc_row(const struct json_object *o, struct row *rw)
{
	static const struct {
		const char	*mode;
		const char	*abbrev;
	} modes[] = {
		{ "ReadWriteOnce", "RWO" }, { "ReadOnlyMany", "ROX" },
		{ "ReadWriteMany", "RWX" }, { "ReadWriteOncePod", "RWOP" },
	};
	const struct json_object *spec = kc_json_obj_of(o, "spec");
	const struct json_object *status = kc_json_obj_of(o, "status");
	const struct json_object *ann = kc_json_get(o, "metadata", "annotations");
	const char *volume = STR(spec, "volumeName");
	const char *phase = STR(status, "phase");
	const char *sclass = "", *capacity = "";
	char modes_s[32] = "", cap_buf[32];
	struct json_object *v;
	int r;

	if (being_deleted(o))
		phase = "Terminating";
	if (volume[0] != '\0') {
		const struct json_object *am = arr_at(status, "accessModes", NULL);

		for (size_t i = 0; i < KC_ARRAY_SIZE(modes); i++)
			if (has_string(am, modes[i].mode)) {
				if (modes_s[0] != '\0')
					(void)kc_strlcat(modes_s, ",", sizeof(modes_s));
				(void)kc_strlcat(modes_s, modes[i].abbrev, sizeof(modes_s));
			}
		capacity = quantity(kc_json_get(status, "capacity"), "storage", cap_buf);
	}
	if (json_object_is_type(ann, json_type_object) &&
	    json_object_object_get_ex(ann, "volume.beta.kubernetes.io/storage-class", &v))
		sclass = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
	else
		sclass = STR(spec, "storageClassName");
	if ((r = cell_str(rw, kc_json_str(o, "metadata", "name"))) < 0 ||
	    (r = cell_str(rw, phase)) < 0 || (r = cell_str(rw, volume)) < 0 ||
	    (r = cell_str(rw, capacity)) < 0 || (r = cell_str(rw, modes_s)) < 0 ||
	    (r = cell_str(rw, sclass)) < 0 ||
	    (r = cell_str(rw, kc_json_str(spec, "volumeAttributesClassName") != NULL ?
	    kc_json_str(spec, "volumeAttributesClassName") : "<unset>")) < 0 ||
	    (r = cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"))) < 0)
		return r;
	return cell_str(rw, kc_json_str(spec, "volumeMode") != NULL ?
	    kc_json_str(spec, "volumeMode") : "<unset>");
}

PRINTER(pvc, pvc_row);

/* RoleBinding and ClusterRoleBinding */

static const struct coldef rolebinding_cols[] = {
	COL_NAME,
	{ "Role", "string", "", "RoleRef can reference a Role in the current namespace "
	    "or a ClusterRole in the global namespace. If the RoleRef cannot be "
	    "resolved, the Authorizer must return an error.", 0 },
	COL_AGE,
	{ "Users", "string", "", "Users in the roleBinding", 1 },
	{ "Groups", "string", "", "Groups in the roleBinding", 1 },
	{ "ServiceAccounts", "string", "", "ServiceAccounts in the roleBinding", 1 },
};

static const struct coldef clusterrolebinding_cols[] = {
	COL_NAME,
	{ "Role", "string", "", "RoleRef can only reference a ClusterRole in the global "
	    "namespace. If the RoleRef cannot be resolved, the Authorizer must return "
	    "an error.", 0 },
	COL_AGE,
	{ "Users", "string", "", "Users in the clusterRoleBinding", 1 },
	{ "Groups", "string", "", "Groups in the clusterRoleBinding", 1 },
	{ "ServiceAccounts", "string", "", "ServiceAccounts in the clusterRoleBinding", 1 },
};

static int
binding_row(const struct json_object *o, struct row *rw)
{
	const struct json_object *subjects = arr_at(o, "subjects", NULL);
	struct kc_buf b[3];
	char *role;
	int r;

	if ((role = kc_asprintf("%s/%s", STR(o, "roleRef", "kind"),
	    STR(o, "roleRef", "name"))) == NULL)
		return -ENOMEM;
	if ((r = cell_str(rw, kc_json_str(o, "metadata", "name"))) < 0 ||
	    (r = cell_str(rw, role)) < 0 ||
	    (r = cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"))) < 0) {
		kc_free(role);
		return r;
	}
	kc_free(role);
	for (int i = 0; i < 3; i++)
		kc_buf_init(&b[i], CELL_MAX);
	/* rbac.SubjectsStrings(): users, groups, "namespace/name" of accounts. */
	for (size_t i = 0; i < arr_len(subjects) && r == 0; i++) {
		const struct json_object *s = arr_idx(subjects, i);
		const char *kind = STR(s, "kind");

		if (strcmp(kind, "User") == 0)
			r = b[0].len > 0 ? kc_buf_printf(&b[0], ", %s", STR(s, "name")) :
			    kc_buf_puts(&b[0], STR(s, "name"));
		else if (strcmp(kind, "Group") == 0)
			r = b[1].len > 0 ? kc_buf_printf(&b[1], ", %s", STR(s, "name")) :
			    kc_buf_puts(&b[1], STR(s, "name"));
		else if (strcmp(kind, "ServiceAccount") == 0)
			r = kc_buf_printf(&b[2], "%s%s/%s", b[2].len > 0 ? ", " : "",
			    STR(s, "namespace"), STR(s, "name"));
	}
	for (int i = 0; i < 3; i++)
		r = cell_buf(rw, &b[i], r);
	return r;
}

PRINTER(rolebinding, binding_row);
PRINTER(clusterrolebinding, binding_row);

/* Mutating and validating webhook configurations */

static const struct coldef webhook_cols[] = {
	COL_NAME,
	{ "Webhooks", "integer", "", "Webhooks indicates the number of webhooks "
	    "registered in this configuration", 0 },
	COL_AGE,
};

static int
webhook_row(const struct json_object *o, struct row *rw)
{
	int r;

	if ((r = cell_str(rw, kc_json_str(o, "metadata", "name"))) < 0 ||
	    (r = cell_int(rw, (int64_t)arr_len(arr_at(o, "webhooks", NULL)))) < 0)
		return r;
	return cell_age(rw, kc_json_str(o, "metadata", "creationTimestamp"));
}

PRINTER(webhook, webhook_row);

/* The default convertor: Name and "Created At" in RFC 3339, UTC. */

static const struct coldef dflt_cols[] = {
	COL_NAME,
	{ "Created At", "date", "", D_AGE, 0 },
};

static int
default_row(const struct json_object *o, struct row *rw)
{
	const char *ts = kc_json_str(o, "metadata", "creationTimestamp");
	struct ts t = ts_of(ts);
	int64_t sec = t.state == TS_SET ? t.sec : ZERO_TIME_SEC;
	char buf[KC_TIME_MAX];
	int r;

	if ((r = cell_str(rw, kc_json_str(o, "metadata", "name"))) < 0)
		return r;
	if (t.state == TS_INVALID || kc_time_format_us(sec * 1000000, KC_TIME_SEC, buf,
	    sizeof(buf)) < 0)
		return cell_str(rw, ts);
	return cell_str(rw, buf);
}

PRINTER(dflt, default_row);

static const struct {
	const char		*group;
	const char		*resource;
	const struct printer	*printer;
} printers[] = {
	{ "", "pods", &pod_printer },
	{ "", "namespaces", &namespace_printer },
	{ "", "configmaps", &configmap_printer },
	{ "", "secrets", &secret_printer },
	{ "", "serviceaccounts", &serviceaccount_printer },
	{ "", "services", &service_printer },
	{ "", "endpoints", &endpoints_printer },
	{ "", "nodes", &node_printer },
	{ "", "events", &event_printer },
	{ "events.k8s.io", "events", &event_printer },
	{ "", "resourcequotas", &resourcequota_printer },
	{ "", "persistentvolumeclaims", &pvc_printer },
	{ "coordination.k8s.io", "leases", &lease_printer },
	{ "networking.k8s.io", "networkpolicies", &networkpolicy_printer },
	{ "scheduling.k8s.io", "priorityclasses", &priorityclass_printer },
	{ "policy", "poddisruptionbudgets", &pdb_printer },
	{ "apps", "deployments", &deployment_printer },
	{ "apps", "replicasets", &replicaset_printer },
	{ "rbac.authorization.k8s.io", "rolebindings", &rolebinding_printer },
	{ "rbac.authorization.k8s.io", "clusterrolebindings", &clusterrolebinding_printer },
	{ "admissionregistration.k8s.io", "mutatingwebhookconfigurations", &webhook_printer },
	{ "admissionregistration.k8s.io", "validatingwebhookconfigurations", &webhook_printer },
};

/*
 * Converters
 */

struct crdcol {
	struct coldef	 def;		/* strings owned by the converter */
	struct jsonpath	*path;
};

struct table_conv {
	const struct printer	*printer;	/* NULL for CRD columns */
	bool			 events_k8s_io;
	struct crdcol		*cols;
	size_t			 ncols;
};

static const struct printer *
printer_for(const char *group, const char *resource)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(printers); i++)
		if (strcmp(printers[i].group, group) == 0 &&
		    strcmp(printers[i].resource, resource) == 0)
			return printers[i].printer;
	return NULL;
}

bool
table_has_printer(const char *group, const char *resource)
{
	return printer_for(group, resource) != NULL;
}

int
table_conv_builtin(const char *group, const char *resource, struct table_conv **ret)
{
	struct table_conv *tc = kc_calloc(1, sizeof(*tc));

	if (tc == NULL)
		return -ENOMEM;
	tc->printer = printer_for(group, resource);
	if (tc->printer == NULL)
		tc->printer = &dflt_printer;
	tc->events_k8s_io = strcmp(group, "events.k8s.io") == 0;
	*ret = tc;
	return 0;
}

struct table_conv *
table_conv_free(struct table_conv *tc)
{
	if (tc == NULL)
		return NULL;
	for (size_t i = 0; i < tc->ncols; i++) {
		kc_free((char *)(uintptr_t)tc->cols[i].def.name);
		kc_free((char *)(uintptr_t)tc->cols[i].def.type);
		kc_free((char *)(uintptr_t)tc->cols[i].def.format);
		kc_free((char *)(uintptr_t)tc->cols[i].def.desc);
		jsonpath_free(tc->cols[i].path);
	}
	kc_free(tc->cols);
	kc_free(tc);
	return NULL;
}

/* Adds a column; '*stop' is set when its jsonPath does not parse. */
static int
add_column(struct table_conv *tc, const char *name, const char *type,
    const char *format, const char *desc, int64_t priority, const char *path,
    bool *stop)
{
	struct crdcol *c = &tc->cols[tc->ncols];
	int r;

	*c = (struct crdcol){ .def.priority = (int)priority };
	if ((r = jsonpath_parse_column(path, &c->path, NULL)) < 0) {
		if (r == -ENOMEM)
			return r;
		*stop = true;
		return 0;
	}
	c->def.name = kc_strdup(name);
	c->def.type = kc_strdup(type);
	c->def.format = kc_strdup(format);
	c->def.desc = desc[0] != '\0' ? kc_strdup(desc) : kc_asprintf("Custom resource "
	    "definition column (in JSONPath format): %s", path);
	tc->ncols++;
	if (c->def.name == NULL || c->def.type == NULL || c->def.format == NULL ||
	    c->def.desc == NULL)
		return -ENOMEM;
	return 0;
}

int
table_conv_columns(const struct json_object *columns, struct table_conv **ret,
    struct kc_status *st)
{
	_cleanup_(table_conv_freep) struct table_conv *tc = NULL;
	size_t n = arr_len(columns);
	bool stop = false;
	int r;

	if (columns != NULL && !json_object_is_type(columns, json_type_array))
		return kc_status_set(st, KC_EINVALID,
		    "additionalPrinterColumns: must be an array");
	if (n > TABLE_COLUMNS_MAX)
		return kc_status_set(st, KC_EINVALID, "additionalPrinterColumns: "
		    "more than %d columns", TABLE_COLUMNS_MAX);
	for (size_t i = 0; i < n; i++) {
		const struct json_object *c = arr_idx(columns, i);

		if (!json_object_is_type(c, json_type_object))
			return kc_status_set(st, KC_EINVALID, "additionalPrinterColumns[%zu]: "
			    "must be an object", i);
		if (kc_json_str(c, "name") == NULL || kc_json_str(c, "type") == NULL ||
		    kc_json_str(c, "jsonPath") == NULL)
			return kc_status_set(st, KC_EINVALID, "additionalPrinterColumns[%zu]: "
			    "name, type and jsonPath are required", i);
	}
	if ((tc = kc_calloc(1, sizeof(*tc))) == NULL ||
	    (tc->cols = kc_calloc(n == 0 ? 1 : n, sizeof(*tc->cols))) == NULL)
		return -ENOMEM;
	if (n == 0) {
		/* serveDefaultColumnsIfEmpty(): Age from creationTimestamp. */
		if ((r = add_column(tc, "Age", "date", "", D_AGE, 0,
		    ".metadata.creationTimestamp", &stop)) < 0)
			return r;
	}
	for (size_t i = 0; i < n && !stop; i++) {
		const struct json_object *c = arr_idx(columns, i);

		if ((r = add_column(tc, kc_json_str(c, "name"), kc_json_str(c, "type"),
		    STR(c, "format"), STR(c, "description"), kc_json_int(c, 0, "priority"),
		    kc_json_str(c, "jsonPath"), &stop)) < 0)
			return r;
	}
	*ret = tc;
	tc = NULL;
	return 0;
}

int
table_conv_crd(const struct json_object *crd, const char *version,
    struct table_conv **ret, struct kc_status *st)
{
	const struct json_object *versions = arr_at(crd, "spec", "versions");

	for (size_t i = 0; i < arr_len(versions); i++) {
		const struct json_object *v = arr_idx(versions, i);

		if (strcmp(STR(v, "name"), version) == 0)
			return table_conv_columns(kc_json_get(v, "additionalPrinterColumns"),
			    ret, st);
	}
	return kc_status_set(st, KC_ENOTFOUND, "CustomResourceDefinition %s has no "
	    "version %s", STR(crd, "metadata", "name"), version);
}

int
table_conv_definitions(const struct table_conv *tc, struct json_object **ret)
{
	struct json_object *a = json_object_new_array(), *c;
	size_t n = tc->printer != NULL ? tc->printer->ncols : tc->ncols + 1;
	int r;

	if (a == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		static const struct coldef name = COL_NAME;
		const struct coldef *d = tc->printer != NULL ? &tc->printer->cols[i] :
		    i == 0 ? &name : &tc->cols[i - 1].def;

		if ((r = column_json(d, &c)) < 0 || (r = kc_json_append(a, c)) < 0) {
			json_object_put(a);
			return r;
		}
	}
	*ret = a;
	return 0;
}

/*
 * CRD cells
 */

/* Go's int64(float64): truncation; out of range is what amd64 gives. */
static int64_t
f2i(double f)
{
	if (f >= -9223372036854775808.0 && f < 9223372036854775808.0)
		return (int64_t)f;
	return INT64_MIN;
}

static int
cell_number(struct row *rw, double f)
{
	char text[40];

	(void)kc_sbuf_float_str(text, sizeof(text), f, KC_FLOAT_JSON);
	return cell_put(rw, json_object_new_double_s(f, text));
}

/* cellForJSONValue() for the non-string column types. */
static int
typed_cell(struct row *rw, const char *type, const struct jsonpath_value *v)
{
	const struct json_object *j = v->kind == JSONPATH_JSON ? v->v.json : NULL;
	bool is_int = j != NULL && json_object_is_type(j, json_type_int);
	bool is_float = j != NULL && json_object_is_type(j, json_type_double);
	int64_t i = 0;
	double f = 0;

	if (is_int) {
		i = json_object_get_int64(j);
		/* Beyond int64 the unstructured decoder holds a float64. */
		if (i == INT64_MAX && json_object_get_uint64(j) > INT64_MAX) {
			is_int = false;
			is_float = true;
			f = (double)json_object_get_uint64(j);
		}
	} else if (is_float)
		f = json_object_get_double(j);
	if (v->kind == JSONPATH_FLOAT) {
		is_float = true;
		f = v->v.f;
	}
	if (strcmp(type, "integer") == 0) {
		if (is_int)
			return cell_int(rw, i);
		if (is_float)
			return cell_int(rw, f2i(f));
	} else if (strcmp(type, "number") == 0) {
		if (is_int)
			return cell_number(rw, (double)i);
		if (is_float)
			return cell_number(rw, f);
	} else if (strcmp(type, "boolean") == 0) {
		if (v->kind == JSONPATH_BOOL)
			return cell_bool(rw, v->v.b);
		if (j != NULL && json_object_is_type(j, json_type_boolean))
			return cell_bool(rw, json_object_get_boolean(j));
	} else if (strcmp(type, "date") == 0) {
		char *s = NULL;
		int r;

		if (v->kind == JSONPATH_TEXT)
			s = kc_str_dup(v->v.text);
		else if (j != NULL && json_object_is_type(j, json_type_string))
			s = kc_strdup(json_object_get_string((struct json_object *)(uintptr_t)j));
		else
			return cell_null(rw);
		if (s == NULL)
			return -ENOMEM;
		r = cell_age(rw, s);
		kc_free(s);
		return r;
	}
	return cell_null(rw);
}

static int
crd_cell(const struct crdcol *col, const struct json_object *obj, struct row *rw)
{
	struct jsonpath_results res;
	const struct jsonpath_value *v;
	int r;

	if ((r = jsonpath_find(col->path, obj, JSONPATH_ALLOW_MISSING, &res, NULL)) < 0)
		return r == -ENOMEM ? r : cell_null(rw);
	if (res.n == 0 || res.lists[0].n == 0) {
		jsonpath_results_free(&res);
		return cell_null(rw);
	}
	v = &res.lists[0].vals[0];
	if (strcmp(col->def.type, "string") != 0)
		r = typed_cell(rw, col->def.type, v);
	else if (v->kind == JSONPATH_JSON && v->v.json == NULL)
		r = cell_str(rw, "<no value>");
	else {
		struct kc_buf b;

		kc_buf_init(&b, CELL_MAX);
		r = jsonpath_print(v, 1, &b);
		if (r == -ENOMEM)
			kc_buf_free(&b);
		else if (r < 0) {
			kc_buf_free(&b);
			r = cell_null(rw);
		} else
			r = cell_buf(rw, &b, 0);
	}
	jsonpath_results_free(&res);
	return r;
}

static int
crd_row(const struct table_conv *tc, const struct json_object *obj, struct row *rw)
{
	int r;

	if ((r = cell_str(rw, kc_json_str(obj, "metadata", "name"))) < 0)
		return r;
	for (size_t i = 0; i < tc->ncols; i++)
		if ((r = crd_cell(&tc->cols[i], obj, rw)) < 0)
			return r;
	return 0;
}

/*
 * Tables
 */

static const char *
api_version(const struct table_opts *o)
{
	return o->version == TABLE_V1BETA1 ? "meta.k8s.io/v1beta1" : "meta.k8s.io/v1";
}

static int
table_new(const struct table_conv *tc, const struct table_opts *o,
    struct json_object **ret)
{
	struct json_object *t = json_object_new_object(), *cols = NULL;
	int r = -ENOMEM;

	if (t == NULL)
		return -ENOMEM;
	if (kc_json_set_str(t, "kind", "Table") < 0 ||
	    kc_json_set_str(t, "apiVersion", api_version(o)) < 0 ||
	    kc_json_put(t, "metadata", json_object_new_object()) < 0)
		goto fail;
	if (!o->no_headers && (r = table_conv_definitions(tc, &cols)) < 0)
		goto fail;
	if (json_object_object_add(t, "columnDefinitions", cols) < 0) {
		if (cols != NULL)
			json_object_put(cols);
		r = -ENOMEM;
		goto fail;
	}
	*ret = t;
	return 0;
fail:
	json_object_put(t);
	return r;
}

static int
row_object(const struct json_object *obj, const struct table_opts *o,
    struct json_object **ret)
{
	struct json_object *p, *meta = kc_json_obj_of(obj, "metadata");

	switch (o->include) {
	case TABLE_INCLUDE_NONE:
		*ret = NULL;
		return 0;
	case TABLE_INCLUDE_OBJECT:
		*ret = json_object_get((struct json_object *)(uintptr_t)obj);
		return 0;
	case TABLE_INCLUDE_METADATA:
		break;
	}
	if ((p = json_object_new_object()) == NULL)
		return -ENOMEM;
	if (kc_json_set_str(p, "kind", "PartialObjectMetadata") < 0 ||
	    kc_json_set_str(p, "apiVersion", api_version(o)) < 0 ||
	    kc_json_put(p, "metadata", meta != NULL ? json_object_get(meta) :
	    json_object_new_object()) < 0) {
		json_object_put(p);
		return -ENOMEM;
	}
	*ret = p;
	return 0;
}

static int
add_row(const struct table_conv *tc, struct json_object *rows,
    const struct json_object *obj, const struct table_opts *o, struct kc_status *st)
{
	struct row rw = { .now = o->now, .events_k8s_io = tc->events_k8s_io };
	struct json_object *row = NULL, *object = NULL;
	int r;

	if (!json_object_is_type(obj, json_type_object))
		return kc_status_set(st, KC_EINVALID, "table row %zu: not an object",
		    json_object_array_length(rows));
	if (json_object_array_length(rows) >= TABLE_ROWS_MAX)
		return kc_status_set(st, -E2BIG, "more than %d table rows", TABLE_ROWS_MAX);
	if ((row = json_object_new_object()) == NULL ||
	    (rw.cells = json_object_new_array()) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = kc_json_put(row, "cells", rw.cells)) < 0) {
		rw.cells = NULL;
		goto out;
	}
	if (tc->printer != NULL)
		r = tc->printer->row(obj, &rw);
	else
		r = crd_row(tc, obj, &rw);
	if (r < 0)
		goto out;
	if (rw.conditions != NULL) {
		r = kc_json_put(row, "conditions", rw.conditions);
		rw.conditions = NULL;
		if (r < 0)
			goto out;
	}
	if ((r = row_object(obj, o, &object)) < 0)
		goto out;
	if (json_object_object_add(row, "object", object) < 0) {
		if (object != NULL)
			json_object_put(object);
		r = -ENOMEM;
		goto out;
	}
	if (json_object_array_add(rows, row) < 0) {
		r = -ENOMEM;
		goto out;
	}
	return 0;
out:
	if (rw.conditions != NULL)
		json_object_put(rw.conditions);
	if (row != NULL)
		json_object_put(row);
	return r;
}

/* Copies metadata.resourceVersion, continue and remainingItemCount. */
static int
table_meta(struct json_object *t, const struct json_object *meta, bool list)
{
	struct json_object *m = kc_json_obj_of(t, "metadata"), *v;
	const char *rv = kc_json_str(meta, "resourceVersion");
	const char *cont = kc_json_str(meta, "continue");

	if (rv != NULL && rv[0] != '\0' && kc_json_set_str(m, "resourceVersion", rv) < 0)
		return -ENOMEM;
	if (!list)
		return 0;
	if (cont != NULL && cont[0] != '\0' && kc_json_set_str(m, "continue", cont) < 0)
		return -ENOMEM;
	v = kc_json_get(meta, "remainingItemCount");
	if (json_object_is_type(v, json_type_int) &&
	    kc_json_set_int(m, "remainingItemCount", json_object_get_int64(v)) < 0)
		return -ENOMEM;
	return 0;
}

int
table_list(const struct table_conv *tc, const struct json_object *list,
    const struct table_opts *o, struct json_object **ret, struct kc_status *st)
{
	struct json_object *items = kc_json_get(list, "items"), *t = NULL, *rows;
	size_t n;
	int r;

	if (items != NULL && !json_object_is_type(items, json_type_array))
		return kc_status_set(st, KC_EINVALID, "list items: not an array");
	n = arr_len(items);
	if ((r = table_new(tc, o, &t)) < 0)
		return r;
	if ((r = table_meta(t, kc_json_get(list, "metadata"), true)) < 0)
		goto fail;
	/* The default convertor leaves rows nil for an empty list. */
	if (n == 0 && tc->printer == &dflt_printer) {
		if (json_object_object_add(t, "rows", NULL) < 0) {
			r = -ENOMEM;
			goto fail;
		}
		*ret = t;
		return 0;
	}
	if ((r = kc_json_put(t, "rows", json_object_new_array())) < 0)
		goto fail;
	rows = kc_json_arr_of(t, "rows");
	for (size_t i = 0; i < n; i++)
		if ((r = add_row(tc, rows, arr_idx(items, i), o, st)) < 0)
			goto fail;
	*ret = t;
	return 0;
fail:
	json_object_put(t);
	return r;
}

int
table_object(const struct table_conv *tc, const struct json_object *obj,
    const struct table_opts *o, struct json_object **ret, struct kc_status *st)
{
	struct json_object *t = NULL;
	int r;

	if (!json_object_is_type(obj, json_type_object))
		return kc_status_set(st, KC_EINVALID, "table object: not an object");
	if ((r = table_new(tc, o, &t)) < 0)
		return r;
	if ((r = table_meta(t, kc_json_get(obj, "metadata"), false)) < 0 ||
	    (r = kc_json_put(t, "rows", json_object_new_array())) < 0 ||
	    (r = add_row(tc, kc_json_arr_of(t, "rows"), obj, o, st)) < 0) {
		json_object_put(t);
		return r;
	}
	*ret = t;
	return 0;
}

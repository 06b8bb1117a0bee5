/*
 * fieldmanager.c: server-side apply and managedFields.
 *
 * One idea, so one large file: the walks over objects and the manager
 * chain around them.
 *
 * kube-apiserver records, for every object, which manager set which
 * field: metadata.managedFields holds one entry per (manager, operation,
 * subresource, and for Update also apiVersion), each with a field set in
 * the FieldsV1 format of sigs.k8s.io/structured-merge-diff:
 *
 *	{"f:spec": {"f:replicas": {}, "f:containers": {
 *	    "k:{\"name\":\"app\"}": {".": {}, "f:image": {}}}}}
 *
 * The sets, their FieldsV1 keys ("f:<field>", "k:<item keys>",
 * "v:<set item>", "i:<index>"), their algebra, encoding and cache are
 * fieldset.c's. This file builds sets from objects and keeps
 * managedFields with them, following structured-merge-diff closely,
 * because kubectl and controllers read these sets and because apply's
 * outcome depends on them:
 *
 *	to_set()	ToFieldSet: scalars, atomic leaves, list items, and
 *			keys of free-form maps; never named struct fields
 *	compare()	Compare: added, modified and removed paths; a
 *			container appearing or vanishing is itself added or
 *			removed, which is where Update entries get their "."
 *	merge()		Merge: maps by key, list-type maps and sets by item,
 *			the applied side winning, in structured-merge-diff's
 *			item order
 *	remove_items()	RemoveItems, ensure_named() EnsureNamedFieldsAreMembers
 *	prune()		what an applier applied before and omits now goes,
 *			unless some entry still owns it
 *
 * and kube-apiserver's manager chain around them, innermost first:
 * stripping metadata no entry may hold, the Update entry of the current
 * write merged into the manager's and stamped with the time, manager
 * identities, the cap of ten Update entries ("ancient-changes"), the
 * "before-first-apply" entry for objects that never had managedFields,
 * the last-applied-configuration upgrade for manager "kubectl", and the
 * apply-only checks (object type, no managedFields in the body).
 *
 * Values are json-c trees read in place and never written to; results
 * are new trees. JSON null is json-c's NULL pointer, so "absent" travels
 * beside values as a flag. Every walk is bounded by FM_DEPTH_MAX.
 *
 *	struct fm_apply a = { .live = stored, .config = body,
 *	    .manager = "kubectl", .api_version = "v1", .kind = "ConfigMap",
 *	    .now = now };
 *	r = fieldmanager_apply(&a, &obj, &details, &st);
 *	-> KC_ECONFLICT, st.message "Apply failed with 1 conflict: conflict
 *	   with \"kubectl-client-side-apply\" using v1: .data.x"
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/json.h>
#include <kc/patch.h>
#include <kc/str.h>

#include "fieldmanager.h"
#include "fieldset.h"

#define LAST_APPLIED		"kubectl.kubernetes.io/last-applied-configuration"
#define ANNOTATIONS_MAX		(256u << 10)	/* TotalAnnotationSizeLimitB */

/* ------------------------------------------------------------------------
 * Walks over values with the schema
 */

/* What a value is at its path. */
enum {
	VK_ABSENT = -1,
	VK_LEAF,	/* scalar, null of no container type, atomic list or map */
	VK_NULL,	/* null where the schema says list or object */
	VK_STRUCT,	/* object with named fields */
	VK_MAP,		/* object with free keys */
	VK_SET,		/* list-type set */
	VK_LMAP,	/* list-type map */
};

struct walk {
	const struct fm_schema	*schema;
	bool			 allow_dups;
	bool			 opaque;	/* below a key the schema cannot name */
	size_t			 plen;
	size_t			 depth;
	char			 path[FM_PATH_MAX];	/* dotted, for the schema */
	const struct pe		*stack[FM_DEPTH_MAX + 1];
	char			 err[ERR_MAX];
};

struct mark {
	size_t	plen;
	bool	opaque;
};

static void
walk_init(struct walk *w, const struct fm_schema *schema, bool allow_dups)
{
	w->schema = schema;
	w->allow_dups = allow_dups;
	w->opaque = false;
	w->plen = 0;
	w->depth = 0;
	w->path[0] = '\0';
	w->err[0] = '\0';
}

static int wf(struct walk *, int, const char *, ...) _printf_(3, 4);

/* Fails with "<path>: <message>", the path as structured-merge-diff prints it. */
static int
wf(struct walk *w, int code, const char *fmt, ...)
{
	char msg[ERR_MAX];
	struct kc_sbuf b;
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	kc_sbuf_init(&b, w->err, sizeof(w->err));
	if (w->depth > 0) {
		fieldset_put_path(&b, w->stack, w->depth);
		kc_sbuf_puts(&b, ": ");
	}
	kc_sbuf_puts(&b, msg);
	return code;
}

/* Descends into 'pe' (a child of a 'parent' kind value). */
static int
walk_push(struct walk *w, const struct pe *pe, int parent, struct mark *m)
{
	const char *seg;
	size_t sl;

	m->plen = w->plen;
	m->opaque = w->opaque;
	if (w->depth >= FM_DEPTH_MAX)
		return wf(w, KC_ETOOLARGE, "nested deeper than %d", FM_DEPTH_MAX);
	if (pe->type == FM_PE_FIELD && !w->opaque) {
		seg = parent == VK_MAP ? "*" : pe->s;
		sl = strlen(seg);
		if (strchr(seg, '.') != NULL || w->plen + 1 + sl >= sizeof(w->path))
			w->opaque = true;
		else {
			if (w->plen > 0)
				w->path[w->plen++] = '.';
			memcpy(w->path + w->plen, seg, sl + 1);
			w->plen += sl;
		}
	}
	w->stack[w->depth++] = pe;
	return 0;
}

static void
walk_pop(struct walk *w, const struct mark *m)
{
	w->depth--;
	w->plen = m->plen;
	w->path[w->plen] = '\0';
	w->opaque = m->opaque;
}

/* ObjectMeta's shapes, the same on every kind. */
static bool
meta_type(const char *path, struct fm_type *t)
{
	if (strncmp(path, "metadata.", 9) != 0)
		return false;
	path += 9;
	if (strcmp(path, "labels") == 0 || strcmp(path, "annotations") == 0)
		t->kind = FM_MAP;
	else if (strcmp(path, "finalizers") == 0)
		t->kind = FM_SET;
	else if (strcmp(path, "ownerReferences") == 0) {
		t->kind = FM_MAP_LIST;
		t->nkeys = 1;
		t->keys[0] = "uid";
	} else if (strcmp(path, "managedFields") == 0)
		t->kind = FM_ATOMIC;
	else
		return false;
	return true;
}

/* The schema's word on the current path. */
static void
walk_type(const struct walk *w, struct fm_type *t)
{
	memset(t, 0, sizeof(*t));
	if (w->depth == 0) {
		t->kind = FM_STRUCT;
		return;
	}
	if (w->opaque || meta_type(w->path, t))
		return;
	if (w->schema != NULL && w->schema->lookup != NULL &&
	    !w->schema->lookup(w->schema->arg, w->path, t))
		memset(t, 0, sizeof(*t));
	if (t->nkeys > FM_KEYS_MAX)
		t->nkeys = FM_KEYS_MAX;
}

static int
resolve_kind(const struct json_object *v, const struct fm_type *t)
{
	switch (json_object_get_type(v)) {
	case json_type_object:
		return t->kind == FM_ATOMIC ? VK_LEAF : t->kind == FM_MAP ? VK_MAP : VK_STRUCT;
	case json_type_array:
		if (t->kind == FM_SET)
			return VK_SET;
		return t->kind == FM_MAP_LIST && t->nkeys > 0 ? VK_LMAP : VK_LEAF;
	case json_type_null:
		switch (t->kind) {
		case FM_STRUCT:
		case FM_MAP:
		case FM_SET:
			return VK_NULL;
		case FM_MAP_LIST:
			return t->nkeys > 0 ? VK_NULL : VK_LEAF;
		default:
			return VK_LEAF;
		}
	default:
		return VK_LEAF;
	}
}

/* The type at the walk's position, and what 'v' is there. */
static int
resolve(const struct walk *w, const struct json_object *v, struct fm_type *t)
{
	walk_type(w, t);
	return resolve_kind(v, t);
}

/* How two present values at one path are walked together. */
static int
pair_kind(int kl, int kr)
{
	if (kl == VK_ABSENT)
		return kr;
	if (kr == VK_ABSENT || kl == kr)
		return kl;
	if (kl == VK_NULL && kr != VK_LEAF)
		return kr;
	if (kr == VK_NULL && kl != VK_LEAF)
		return kl;
	return VK_LEAF;
}

/* Absent, null, {} or []. */
static bool
is_empty(const struct json_object *v, bool has)
{
	return !has || v == NULL || (fieldset_vclass(v) >= VC_LIST &&
	    fieldset_vclass(v) <= VC_MAP && jlen(v) == 0);
}

static int
cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The path element of item 'idx' of a set or list-type map. */
static int
item_pe(struct walk *w, int kind, const struct fm_type *t, size_t idx,
    const struct json_object *item, struct pe *pe)
{
	struct kc_status st = { 0 };
	struct json_object *key, *v = NULL;
	const char *names[FM_KEYS_MAX];
	char q[256];
	struct kc_sbuf b;
	size_t n = t->nkeys;
	int r;

	memset(pe, 0, sizeof(*pe));
	if (kind == VK_SET) {
		switch (fieldset_vclass(item)) {
		case VC_MAP:
			return wf(w, KC_EINVALID, "element %zu: associative list without keys "
			    "has an element that's a map type", idx);
		case VC_LIST:
			return wf(w, KC_EINVALID, "element %zu: not supported: associative "
			    "list with lists as elements", idx);
		case VC_NULL:
			return wf(w, KC_EINVALID, "element %zu: associative list without keys "
			    "has an element that's an explicit null", idx);
		default:
			if ((r = jcopy(item, &v)) < 0)
				return r;
			return fieldset_pe_take_value(pe, FM_PE_VALUE, v);
		}
	}
	if (item == NULL)
		return wf(w, KC_EINVALID, "element %zu: associative list with keys may not "
		    "have a null element", idx);
	if (!json_object_is_type(item, json_type_object))
		return wf(w, KC_EINVALID, "element %zu: associative list with keys may not "
		    "have non-map elements", idx);
	memcpy(names, t->keys, n * sizeof(names[0]));
	qsort(names, n, sizeof(names[0]), cmp_names);
	if ((key = json_object_new_object()) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct json_object *x = NULL;
		const char *def = NULL;

		for (size_t j = 0; j < n; j++)
			if (strcmp(t->keys[j], names[i]) == 0)
				def = t->key_defaults[j];
		if (i > 0 && strcmp(names[i], names[i - 1]) == 0)
			continue;
		if (jget(item, names[i], &x))
			r = jcopy(x, &v);
		else if (def != NULL) {
			r = kc_json_parse(def, strlen(def), &v, &st);
			if (r < 0 && r != -ENOMEM)
				r = wf(w, KC_EINVALID, "element %zu: bad default for key "
				    "field %s: %s", idx, names[i], st.message);
		} else {
			kc_sbuf_init(&b, q, sizeof(q));
			kc_sbuf_quote(&b, names[i], strlen(names[i]));
			r = wf(w, KC_EINVALID, "element %zu: associative list with keys has "
			    "an element that omits key field %s (and doesn't have default "
			    "value)", idx, q);
		}
		if (r < 0 || (r = jput(key, names[i], v)) < 0) {
			json_object_put(key);
			return r;
		}
	}
	return fieldset_pe_take_value(pe, FM_PE_KEY, key);
}

/* The items of a list, each with its element. */
struct litem {
	struct pe	 pe;
	const struct json_object *v;
	size_t		 pos;
	bool		 first;		/* the first item with its element */
};

struct litems {
	struct litem	*v;		/* every item, in list order */
	size_t		 n;
	struct litem	**sorted;	/* the first items, by element */
	size_t		 nsorted;
};

static void
litems_free(struct litems *L)
{
	for (size_t i = 0; i < L->n; i++)
		fieldset_pe_free(&L->v[i].pe);
	kc_free(L->v);
	kc_free(L->sorted);
	memset(L, 0, sizeof(*L));
}

static int
cmp_litem(const void *a, const void *b)
{
	const struct litem *x = *(const struct litem *const *)a;
	const struct litem *y = *(const struct litem *const *)b;
	int c = fieldset_pe_cmp(&x->pe, &y->pe);

	if (c != 0)
		return c;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static struct litem *
lfind(const struct litems *L, const struct pe *pe)
{
	size_t lo = 0, hi = L->nsorted;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = fieldset_pe_cmp(&L->sorted[mid]->pe, pe);

		if (c == 0)
			return L->sorted[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * Indexes the items of 'list' (anything but an array has none). With
 * 'strict', a repeated element is an error.
 */
static int
index_items(struct walk *w, int kind, const struct fm_type *t,
    const struct json_object *list, bool strict, struct litems *L)
{
	char disp[DISPLAY_MAX];
	struct kc_sbuf b;
	size_t n = json_object_is_type(list, json_type_array) ? jlen(list) : 0, k;
	int r;

	memset(L, 0, sizeof(*L));
	if (n == 0)
		return 0;
	if ((L->v = kc_calloc(n, sizeof(*L->v))) == NULL ||
	    (L->sorted = kc_calloc(n, sizeof(*L->sorted))) == NULL) {
		litems_free(L);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		L->v[i].v = json_object_array_get_idx(list, i);
		L->v[i].pos = i;
		if ((r = item_pe(w, kind, t, i, L->v[i].v, &L->v[i].pe)) < 0) {
			litems_free(L);
			return r;
		}
		L->n = i + 1;
		L->sorted[i] = &L->v[i];
	}
	qsort(L->sorted, n, sizeof(*L->sorted), cmp_litem);
	for (size_t i = 0; i < n; i = k) {
		for (k = i + 1; k < n &&
		    fieldset_pe_cmp(&L->sorted[k]->pe, &L->sorted[i]->pe) == 0; k++)
			;
		if (k - i > 1 && strict) {
			kc_sbuf_init(&b, disp, sizeof(disp));
			fieldset_put_pe(&b, &L->sorted[i]->pe);
			r = wf(w, KC_EINVALID, "duplicate entries for key %s", disp);
			litems_free(L);
			return r;
		}
		L->sorted[i]->first = true;
		L->sorted[L->nsorted++] = L->sorted[i];
	}
	return 0;
}

/*
 * ToFieldSet: adds to 'out' every leaf, every list item, and every key of
 * a free-form map in 'v', the value at the walk's path.
 */
static int
to_set(struct walk *w, const struct json_object *v, struct fs *out)
{
	struct litems L;
	struct fm_type t;
	struct mark m;
	int kind = resolve(w, v, &t), r = 0;

	switch (kind) {
	case VK_NULL:
		return 0;
	case VK_LEAF:
		return fieldset_insert(out, w->stack, w->depth);
	case VK_STRUCT:
	case VK_MAP: {
		json_object_object_foreach(unconst(v), key, val) {
			struct pe pe;

			fieldset_pe_field(&pe, key);
			if ((r = walk_push(w, &pe, kind, &m)) < 0)
				return r;
			r = to_set(w, val, out);
			if (r == 0 && kind == VK_MAP)
				r = fieldset_insert(out, w->stack, w->depth);
			walk_pop(w, &m);
			if (r < 0)
				return r;
		}
		return 0;
	}
	default:
		if ((r = index_items(w, kind, &t, v, !w->allow_dups, &L)) < 0)
			return r;
		for (size_t i = 0; i < L.n && r == 0; i++) {
			if ((r = walk_push(w, &L.v[i].pe, kind, &m)) < 0)
				break;
			if ((r = to_set(w, L.v[i].v, out)) == 0)
				r = fieldset_insert(out, w->stack, w->depth);
			walk_pop(w, &m);
		}
		litems_free(&L);
		return r;
	}
}

/* What changed between two values: Compare's three sets. */
struct cmp {
	struct fs	add;
	struct fs	mod;
	struct fs	rem;
};

static void
cmp_free(struct cmp *c)
{
	fieldset_free(&c->add);
	fieldset_free(&c->mod);
	fieldset_free(&c->rem);
}

static int compare(struct walk *, const struct json_object *, bool,
    const struct json_object *, bool, struct cmp *);

static int
compare_child(struct walk *w, const struct pe *pe, int parent, const struct json_object *l,
    bool lh, const struct json_object *r, bool rh, struct cmp *c)
{
	struct mark m;
	int rv;

	if ((rv = walk_push(w, pe, parent, &m)) < 0)
		return rv;
	rv = compare(w, l, lh, r, rh, c);
	walk_pop(w, &m);
	return rv;
}

static int
compare_maps(struct walk *w, int kind, const struct json_object *l,
    const struct json_object *r, struct cmp *c)
{
	struct json_object *x;
	struct pe pe;
	int rv;

	if (json_object_is_type(l, json_type_object)) {
		json_object_object_foreach(unconst(l), k1, v1) {
			bool has = jget(r, k1, &x);

			fieldset_pe_field(&pe, k1);
			if ((rv = compare_child(w, &pe, kind, v1, true, has ? x : NULL, has,
			    c)) < 0)
				return rv;
		}
	}
	if (json_object_is_type(r, json_type_object)) {
		json_object_object_foreach(unconst(r), k2, v2) {
			if (jget(l, k2, &x))
				continue;
			fieldset_pe_field(&pe, k2);
			if ((rv = compare_child(w, &pe, kind, NULL, false, v2, true, c)) < 0)
				return rv;
		}
	}
	return 0;
}

static int
compare_lists(struct walk *w, int kind, const struct fm_type *t,
    const struct json_object *l, const struct json_object *r, struct cmp *c)
{
	struct litems L, R;
	struct litem *x;
	int rv;

	if ((rv = index_items(w, kind, t, l, false, &L)) < 0)
		return rv;
	if ((rv = index_items(w, kind, t, r, false, &R)) < 0) {
		litems_free(&L);
		return rv;
	}
	for (size_t i = 0; i < L.nsorted && rv == 0; i++) {
		x = lfind(&R, &L.sorted[i]->pe);
		rv = compare_child(w, &L.sorted[i]->pe, kind, L.sorted[i]->v, true,
		    x != NULL ? x->v : NULL, x != NULL, c);
	}
	for (size_t i = 0; i < R.nsorted && rv == 0; i++)
		if (lfind(&L, &R.sorted[i]->pe) == NULL)
			rv = compare_child(w, &R.sorted[i]->pe, kind, NULL, false,
			    R.sorted[i]->v, true, c);
	litems_free(&L);
	litems_free(&R);
	return rv;
}

/*
 * Compare: leaves added, removed or changed; a list or object present on
 * one side only is itself added or removed, besides its contents.
 */
static int
compare(struct walk *w, const struct json_object *l, bool lh, const struct json_object *r,
    bool rh, struct cmp *c)
{
	struct fm_type t;
	int kl = VK_ABSENT, kr = VK_ABSENT, kind, rv;

	/*
	 * Nothing to compare, or the same value: writers share unchanged
	 * members with the stored object (obj_cow()), so a status write
	 * does not walk the spec.
	 */
	if ((!lh && !rh) || (lh && rh && l == r))
		return 0;
	/* One type lookup for both sides: they sit at the same path. */
	walk_type(w, &t);
	if (lh)
		kl = resolve_kind(l, &t);
	if (rh)
		kr = resolve_kind(r, &t);
	kind = pair_kind(kl, kr);
	if (kind == VK_LEAF || kind == VK_NULL || (is_empty(l, lh) && is_empty(r, rh))) {
		if (!lh)
			return fieldset_insert(&c->add, w->stack, w->depth);
		if (!rh)
			return fieldset_insert(&c->rem, w->stack, w->depth);
		if (!fieldset_value_equal(l, r, 0))
			return fieldset_insert(&c->mod, w->stack, w->depth);
		return 0;
	}
	if (kind == VK_STRUCT || kind == VK_MAP)
		rv = compare_maps(w, kind, lh ? l : NULL, rh ? r : NULL, c);
	else
		rv = compare_lists(w, kind, &t, lh ? l : NULL, rh ? r : NULL, c);
	if (rv < 0)
		return rv;
	if (!lh)
		return fieldset_insert(&c->add, w->stack, w->depth);
	if (!rh)
		return fieldset_insert(&c->rem, w->stack, w->depth);
	return 0;
}

static int merge(struct walk *, const struct json_object *, bool,
    const struct json_object *, bool, struct json_object **);

static int
merge_child(struct walk *w, const struct pe *pe, int parent, const struct json_object *l,
    bool lh, const struct json_object *r, bool rh, struct json_object **out)
{
	struct mark m;
	int rv;

	if ((rv = walk_push(w, pe, parent, &m)) < 0)
		return rv;
	rv = merge(w, l, lh, r, rh, out);
	walk_pop(w, &m);
	return rv;
}

static int
merge_maps(struct walk *w, int kind, const struct json_object *l,
    const struct json_object *r, struct json_object **out)
{
	struct json_object *o, *x, *child;
	struct pe pe;
	int rv;

	if ((o = json_object_new_object()) == NULL)
		return -ENOMEM;
	json_object_object_foreach(unconst(l), k1, v1) {
		bool has = jget(r, k1, &x);

		fieldset_pe_field(&pe, k1);
		if ((rv = merge_child(w, &pe, kind, v1, true, has ? x : NULL, has,
		    &child)) < 0 || (rv = jput(o, k1, child)) < 0)
			goto fail;
	}
	json_object_object_foreach(unconst(r), k2, v2) {
		if (jget(l, k2, &x))
			continue;
		if ((rv = jcopy(v2, &child)) < 0 || (rv = jput(o, k2, child)) < 0)
			goto fail;
	}
	*out = o;
	return 0;
fail:
	json_object_put(o);
	return rv;
}

/*
 * Merges two sets or list-type maps item by item, ordered as
 * structured-merge-diff orders them: the applied order for the items both
 * have, the live items the applied list lacks kept where they were. A
 * live item repeated (which the live object may have) stays repeated
 * unless the applied list names it; then the first repeat merges and the
 * others go.
 */
static int
merge_lists(struct walk *w, int kind, const struct fm_type *t,
    const struct json_object *l, const struct json_object *r, struct json_object **out)
{
	struct litems L, R;
	struct litem **lo = NULL, **ro = NULL, **shared = NULL, *next = NULL, *x;
	struct json_object *a = NULL, *child;
	size_t nl = 0, nr = 0, ns = 0, si = 0, li = 0, ri = 0;
	int rv;

	if ((rv = index_items(w, kind, t, l, false, &L)) < 0)
		return rv;
	if ((rv = index_items(w, kind, t, r, false, &R)) < 0) {
		litems_free(&L);
		return rv;
	}
	if ((L.n > 0 && (lo = kc_calloc(L.n, sizeof(*lo))) == NULL) ||
	    (R.n > 0 && ((ro = kc_calloc(R.n, sizeof(*ro))) == NULL ||
	    (shared = kc_calloc(R.n, sizeof(*shared))) == NULL)) ||
	    (a = json_object_new_array()) == NULL) {
		rv = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < L.n; i++)
		if (L.v[i].first || lfind(&R, &L.v[i].pe) == NULL)
			lo[nl++] = &L.v[i];
	for (size_t i = 0; i < R.n; i++) {
		if (!R.v[i].first)
			continue;
		ro[nr++] = &R.v[i];
		if (lfind(&L, &R.v[i].pe) != NULL)
			shared[ns++] = &R.v[i];
	}
	next = ns > 0 ? shared[si++] : NULL;
	while (li < nl || ri < nr) {
		bool progress = false;

		if (li < nl && ri < nr) {
			if (fieldset_pe_cmp(&lo[li]->pe, &ro[ri]->pe) == 0) {
				if ((rv = merge_child(w, &ro[ri]->pe, kind, lo[li]->v, true,
				    ro[ri]->v, true, &child)) < 0 ||
				    (rv = jappend(a, child)) < 0)
					goto out;
				li++, ri++;
				next = si < ns ? shared[si++] : NULL;
				continue;
			}
			if (lfind(&R, &lo[li]->pe) != NULL && next != NULL &&
			    fieldset_pe_cmp(&next->pe, &lo[li]->pe) != 0) {
				li++;
				continue;
			}
		}
		if (li < nl && lfind(&R, &lo[li]->pe) == NULL) {
			if ((rv = jcopy(lo[li]->v, &child)) < 0 || (rv = jappend(a, child)) < 0)
				goto out;
			li++;
			continue;
		}
		if (ri < nr) {
			x = lfind(&L, &ro[ri]->pe);
			if ((rv = merge_child(w, &ro[ri]->pe, kind, x != NULL ? x->v : NULL,
			    x != NULL, ro[ri]->v, true, &child)) < 0 ||
			    (rv = jappend(a, child)) < 0)
				goto out;
			if (next != NULL && fieldset_pe_cmp(&next->pe, &ro[ri]->pe) == 0)
				next = si < ns ? shared[si++] : NULL;
			ri++;
			progress = true;
		}
		if (!progress)
			li++;
	}
	*out = a;
	a = NULL;
out:
	if (a != NULL)
		json_object_put(a);
	kc_free(lo);
	kc_free(ro);
	kc_free(shared);
	litems_free(&L);
	litems_free(&R);
	return rv;
}

/*
 * Merge: 'r' (the applied configuration) over 'l' (the live value). A
 * leaf, an atomic value, or anything of another shape is replaced; null
 * over a non-empty list or object leaves it.
 */
static int
merge(struct walk *w, const struct json_object *l, bool lh, const struct json_object *r,
    bool rh, struct json_object **out)
{
	struct fm_type t;
	int kl, kr, kind;

	if (!rh)
		return jcopy(l, out);
	if (!lh)
		return jcopy(r, out);
	walk_type(w, &t);
	kl = resolve_kind(l, &t);
	kr = resolve_kind(r, &t);
	kind = pair_kind(kl, kr);
	if (kind == VK_LEAF || kind == VK_NULL || (is_empty(l, true) && is_empty(r, true)) ||
	    kl == VK_NULL)
		return jcopy(r, out);
	if (kr == VK_NULL)
		return jcopy(l, out);
	if (kind == VK_STRUCT || kind == VK_MAP)
		return merge_maps(w, kind, l, r, out);
	return merge_lists(w, kind, &t, l, r, out);
}

static int remove_items(struct walk *, const struct json_object *, const struct fs *,
    struct json_object **);

/* The value of a child after removal: dropped, walked into, or copied. */
static int
remove_child(struct walk *w, const struct pe *pe, int parent, const struct json_object *v,
    const struct fs *set, bool *ret_keep, struct json_object **out)
{
	const struct fs_node *node = fieldset_get(set, pe);
	struct mark m;
	int r;

	*ret_keep = node == NULL || !node->member;
	*out = NULL;
	if (!*ret_keep)
		return 0;
	if (node == NULL || fieldset_empty(&node->kids))
		return jcopy(v, out);
	if ((r = walk_push(w, pe, parent, &m)) < 0)
		return r;
	r = remove_items(w, v, &node->kids, out);
	walk_pop(w, &m);
	return r;
}

/*
 * RemoveItems: 'v' without the members of 'set' (and what is below them).
 * As in structured-merge-diff, an object or list that is walked into and
 * comes out empty becomes null.
 */
static int
remove_items(struct walk *w, const struct json_object *v, const struct fs *set,
    struct json_object **out)
{
	struct json_object *o, *child;
	struct fm_type t;
	struct litems L;
	struct pe pe;
	bool keep;
	int kind = resolve(w, v, &t), r = 0;

	if (kind == VK_LEAF || kind == VK_NULL)
		return jcopy(v, out);
	if (jlen(v) == 0) {
		*out = NULL;
		return 0;
	}
	if (kind == VK_STRUCT || kind == VK_MAP) {
		if ((o = json_object_new_object()) == NULL)
			return -ENOMEM;
		json_object_object_foreach(unconst(v), key, val) {
			fieldset_pe_field(&pe, key);
			if ((r = remove_child(w, &pe, kind, val, set, &keep, &child)) < 0)
				break;
			if (keep && (r = jput(o, key, child)) < 0)
				break;
		}
	} else {
		if ((o = json_object_new_array()) == NULL)
			return -ENOMEM;
		if ((r = index_items(w, kind, &t, v, false, &L)) < 0) {
			/* Items without an element are kept, as upstream does. */
			json_object_put(o);
			return r == -ENOMEM ? r : jcopy(v, out);
		}
		for (size_t i = 0; i < L.n; i++) {
			if ((r = remove_child(w, &L.v[i].pe, kind, L.v[i].v, set, &keep,
			    &child)) < 0)
				break;
			if (keep && (r = jappend(o, child)) < 0)
				break;
		}
		litems_free(&L);
	}
	if (r < 0) {
		json_object_put(o);
		return r;
	}
	if (jlen(o) == 0) {
		json_object_put(o);
		o = NULL;
	}
	*out = o;
	return 0;
}

/*
 * EnsureNamedFieldsAreMembers: a named field (an object field that is
 * not a free-form map key) with members below it becomes a member too.
 */
static int
ensure_named(struct walk *w, const struct fs *in, int parent, struct fs *out)
{
	struct fm_type t;
	struct mark m;
	int r, kind;

	for (size_t i = 0; i < in->n; i++) {
		const struct fs_node *x = &in->v[i];
		struct fs_node node = { 0 };

		node.member = x->member;
		if (x->pe.type == FM_PE_FIELD && parent == VK_STRUCT && !fieldset_empty(&x->kids))
			node.member = true;
		if ((r = fieldset_pe_copy(&node.pe, &x->pe)) < 0)
			goto fail;
		if (x->kids.n > 0) {
			if ((r = walk_push(w, &x->pe, parent, &m)) < 0)
				goto fail;
			if (x->pe.type == FM_PE_FIELD) {
				walk_type(w, &t);
				if (t.kind == FM_MAP)
					kind = VK_MAP;
				else if (t.kind == FM_ATOMIC)
					kind = VK_LEAF;
				else
					kind = x->kids.v[0].pe.type == FM_PE_FIELD ? VK_STRUCT :
					    VK_LMAP;
			} else
				kind = x->pe.type == FM_PE_KEY ? VK_STRUCT : VK_LEAF;
			r = ensure_named(w, &x->kids, kind, &node.kids);
			walk_pop(w, &m);
			if (r < 0)
				goto fail;
		}
		if ((r = fieldset_push(out, &node)) < 0)
			goto fail;
		continue;
	fail:
		fieldset_node_free(&node);
		fieldset_free(out);
		return r;
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * managedFields entries
 */

enum { OP_APPLY, OP_UPDATE };

static const char *const op_names[] = { "Apply", "Update" };

/*
 * One entry. Its identity is (manager, operation, subresource, and for
 * Update the apiVersion): kube-apiserver's BuildManagerIdentifier, whose
 * JSON form 'id' orders entries in messages and in the cap.
 */
struct mentry {
	char		*manager;
	int		 op;
	char		*api_version;
	char		*subresource;		/* "" for none */
	bool		 has_time;
	time_t		 time;
	struct fs	 set;
	struct json_object *orig;		/* as decoded, reused while clean */
	bool		 dirty;
	char		*id;
};

struct managed {
	struct mentry	*v;
	size_t		 n;
	size_t		 cap;
};

static void
mentry_free(struct mentry *e)
{
	kc_free(e->manager);
	kc_free(e->api_version);
	kc_free(e->subresource);
	kc_free(e->id);
	fieldset_free(&e->set);
	if (e->orig != NULL)
		json_object_put(e->orig);
	memset(e, 0, sizeof(*e));
}

static void
managed_free(struct managed *m)
{
	for (size_t i = 0; i < m->n; i++)
		mentry_free(&m->v[i]);
	kc_free(m->v);
	memset(m, 0, sizeof(*m));
}

static int
id_field(struct kc_buf *b, bool *first, const char *name, const char *value)
{
	int r;

	if (value == NULL || *value == '\0')
		return 0;
	if ((!*first && (r = kc_buf_putc(b, ',')) < 0) ||
	    (r = kc_buf_printf(b, "\"%s\":", name)) < 0 ||
	    (r = fieldset_gj_string(b, value, strlen(value))) < 0)
		return r;
	*first = false;
	return 0;
}

/* BuildManagerIdentifier: the entry without fields, time and (Apply) apiVersion. */
static char *
manager_id(const char *manager, int op, const char *api_version, const char *sub)
{
	struct kc_buf b;
	bool first = true;
	char *s;

	kc_buf_init(&b, FM_TEXT_MAX);
	if (kc_buf_putc(&b, '{') < 0 ||
	    id_field(&b, &first, "manager", manager) < 0 ||
	    id_field(&b, &first, "operation", op_names[op]) < 0 ||
	    id_field(&b, &first, "apiVersion", op == OP_UPDATE ? api_version : NULL) < 0 ||
	    id_field(&b, &first, "subresource", sub) < 0 ||
	    kc_buf_putc(&b, '}') < 0)
		return NULL;
	s = kc_buf_take(&b, NULL);
	kc_buf_free(&b);
	return s;
}

/* Sets the identity of 'e' (its strings are replaced). */
static int
mentry_identity(struct mentry *e, const char *manager, int op, const char *api_version,
    const char *sub)
{
	char *mn, *av, *sr, *id;

	mn = kc_strdup(manager);
	av = kc_strdup(api_version != NULL ? api_version : "");
	sr = kc_strdup(sub != NULL ? sub : "");
	id = manager_id(manager, op, api_version, sub);
	if (mn == NULL || av == NULL || sr == NULL || id == NULL) {
		kc_free(mn);
		kc_free(av);
		kc_free(sr);
		kc_free(id);
		return -ENOMEM;
	}
	kc_free(e->manager);
	kc_free(e->api_version);
	kc_free(e->subresource);
	kc_free(e->id);
	e->manager = mn;
	e->op = op;
	e->api_version = av;
	e->subresource = sr;
	e->id = id;
	e->dirty = true;
	return 0;
}

static bool
managed_find(const struct managed *m, const char *manager, int op, const char *api_version,
    const char *sub, size_t *ret)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct mentry *e = &m->v[i];

		if (e->op == op && strcmp(e->manager, manager) == 0 &&
		    strcmp(e->subresource, sub != NULL ? sub : "") == 0 &&
		    (op == OP_APPLY || strcmp(e->api_version,
		    api_version != NULL ? api_version : "") == 0)) {
			*ret = i;
			return true;
		}
	}
	return false;
}

/* Moves 'e' into 'm'; on failure 'e' is still the caller's. */
static int
managed_add(struct managed *m, struct mentry *e)
{
	struct mentry *v;
	size_t cap;

	if (m->n == m->cap) {
		cap = m->cap == 0 ? 4 : m->cap * 2;
		if ((v = kc_reallocarray(m->v, cap, sizeof(*v))) == NULL)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	m->v[m->n++] = *e;
	memset(e, 0, sizeof(*e));
	return 0;
}

static void
managed_del(struct managed *m, size_t i)
{
	mentry_free(&m->v[i]);
	memmove(&m->v[i], &m->v[i + 1], (m->n - i - 1) * sizeof(m->v[0]));
	m->n--;
}

/* Drops the entries whose set is empty. */
static void
managed_drop_empty(struct managed *m)
{
	for (size_t i = m->n; i-- > 0; )
		if (fieldset_empty(&m->v[i].set))
			managed_del(m, i);
}

/* Adds an entry with an empty set; '*ret' is its index. */
static int
managed_new(struct managed *m, const char *manager, int op, const char *api_version,
    const char *sub, size_t *ret)
{
	struct mentry e = { 0 };
	int r;

	if ((r = mentry_identity(&e, manager, op, api_version, sub)) < 0 ||
	    (r = managed_add(m, &e)) < 0) {
		mentry_free(&e);
		return r;
	}
	*ret = m->n - 1;
	return 0;
}

static int
managed_copy(struct managed *dst, const struct managed *src)
{
	int r;

	memset(dst, 0, sizeof(*dst));
	for (size_t i = 0; i < src->n; i++) {
		const struct mentry *s = &src->v[i];
		struct mentry e = { 0 };

		/* orig is frozen (entry_copy()): shared. */
		e.orig = s->orig != NULL ? json_object_get(s->orig) : NULL;
		if ((r = mentry_identity(&e, s->manager, s->op, s->api_version,
		    s->subresource)) < 0 || (r = fieldset_copy(&e.set, &s->set)) < 0 ||
		    (r = managed_add(dst, &e)) < 0) {
			mentry_free(&e);
			managed_free(dst);
			return r;
		}
		dst->v[dst->n - 1].dirty = s->dirty;
		dst->v[dst->n - 1].has_time = s->has_time;
		dst->v[dst->n - 1].time = s->time;
	}
	return 0;
}

/* An optional string member: false when present but not a string. */
static bool
opt_str(const struct json_object *o, const char *key, const char **ret)
{
	struct json_object *v = NULL;

	*ret = "";
	if (!jget(o, key, &v) || v == NULL)
		return true;
	if (!json_object_is_type(v, json_type_string))
		return false;
	*ret = json_object_get_string(v);
	return true;
}

/*
 * A managedFields entry with its fieldsV1 raw: the entry itself when it
 * already is (stored trees are frozen, so it is shared), else a copy.
 */
static int
entry_copy(const struct json_object *item, struct json_object **ret)
{
	struct json_object *c, *fv, *raw;
	int r;

	if (!jget(item, "fieldsV1", &fv) || !json_object_is_type(fv, json_type_object)) {
		*ret = json_object_get(unconst(item));
		return 0;
	}
	if ((r = jcopy(item, &c)) < 0)
		return r;
	if (jget(c, "fieldsV1", &fv) && json_object_is_type(fv, json_type_object)) {
		if ((r = fieldset_tree_to_raw(fv, &raw)) < 0 ||
		    (r = jput(c, "fieldsV1", raw)) < 0) {
			json_object_put(c);
			return r;
		}
	}
	*ret = c;
	return 0;
}

/*
 * DecodeManagedFields: the entries of a metadata.managedFields list
 * (NULL or not a list: none), validated as kube-apiserver validates
 * them. KC_EINVALID with the reason in 'err'.
 */
static int
managed_decode(const struct json_object *mf, struct fm_cache *cache, struct managed *out,
    char *err, size_t errsize)
{
	char sub_err[ERR_MAX];
	size_t n = json_object_is_type(mf, json_type_array) ? jlen(mf) : 0, pos;
	int r = 0;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		const struct json_object *item = json_object_array_get_idx(mf, i);
		struct json_object *tv = NULL, *fv = NULL;
		const char *manager, *op, *api, *ft, *sub, *ts;
		struct mentry e = { 0 };
		int opn;

		if (!json_object_is_type(item, json_type_object)) {
			errf(err, errsize, "managed fields entry %zu is not an object", i);
			r = KC_EINVALID;
			goto fail;
		}
		if (!opt_str(item, "manager", &manager) || !opt_str(item, "operation", &op) ||
		    !opt_str(item, "apiVersion", &api) || !opt_str(item, "fieldsType", &ft) ||
		    !opt_str(item, "subresource", &sub) || !opt_str(item, "time", &ts)) {
			errf(err, errsize, "managed fields entry %zu: a string is expected", i);
			r = KC_EINVALID;
			goto fail;
		}
		if (strcmp(op, "Apply") == 0)
			opn = OP_APPLY;
		else if (strcmp(op, "Update") == 0)
			opn = OP_UPDATE;
		else {
			errf(err, errsize, "operation must be `Apply` or `Update`");
			r = KC_EINVALID;
			goto fail;
		}
		if (*api == '\0') {
			errf(err, errsize, "apiVersion must not be empty");
			r = KC_EINVALID;
			goto fail;
		}
		if (*ft == '\0' || strcmp(ft, "FieldsV1") != 0) {
			if (*ft == '\0')
				errf(err, errsize, "missing fieldsType in managed fields "
				    "entry %zu", i);
			else
				errf(err, errsize, "invalid fieldsType \"%s\" in managed "
				    "fields entry %zu", ft, i);
			r = KC_EINVALID;
			goto fail;
		}
		if (jget(item, "time", &tv) && tv != NULL && kc_time_parse(ts, &e.time) < 0) {
			errf(err, errsize, "managed fields entry %zu: invalid time %s", i, ts);
			r = KC_EINVALID;
			goto fail;
		}
		e.has_time = tv != NULL;
		if (jget(item, "fieldsV1", &fv) && fv != NULL &&
		    (r = fieldset_decode(fv, cache, &e.set, sub_err, sizeof(sub_err))) < 0) {
			if (r == KC_EINVALID || r == KC_ETOOLARGE)
				errf(err, errsize, "error decoding versioned set from entry "
				    "%zu: %s", i, sub_err);
			goto fail_entry;
		}
		if ((r = mentry_identity(&e, manager, opn, api, sub)) < 0 ||
		    (r = entry_copy(item, &e.orig)) < 0)
			goto fail_entry;
		e.dirty = false;
		if (managed_find(out, e.manager, opn, e.api_version, e.subresource, &pos)) {
			mentry_free(&out->v[pos]);
			out->v[pos] = e;
			continue;
		}
		if ((r = managed_add(out, &e)) < 0)
			goto fail_entry;
		continue;
	fail_entry:
		mentry_free(&e);
		goto fail;
	}
	return 0;
fail:
	managed_free(out);
	return r;
}

static int
cmp_entries(const void *a, const void *b)
{
	const struct mentry *x = a, *y = b;
	time_t tx = x->has_time ? x->time : 0, ty = y->has_time ? y->time : 0;
	int c;

	if (x->op != y->op)
		return x->op < y->op ? -1 : 1;
	if (tx != ty)
		return tx < ty ? -1 : 1;
	if ((c = strcmp(x->manager, y->manager)) != 0 ||
	    (c = strcmp(x->api_version, y->api_version)) != 0)
		return c;
	return strcmp(x->subresource, y->subresource);
}

/* ManagedFieldsEntry as JSON, in Go struct order. */
static int
mentry_json(const struct mentry *e, struct fm_cache *cache, struct json_object **ret)
{
	struct json_object *o, *fields = NULL;
	char ts[KC_TIME_MAX];
	int r;

	if ((o = json_object_new_object()) == NULL)
		return -ENOMEM;
	if ((*e->manager != '\0' && (r = kc_json_set_str(o, "manager", e->manager)) < 0) ||
	    (r = kc_json_set_str(o, "operation", op_names[e->op])) < 0 ||
	    (*e->api_version != '\0' &&
	    (r = kc_json_set_str(o, "apiVersion", e->api_version)) < 0))
		goto fail;
	if (e->has_time) {
		if ((r = kc_time_format(e->time, ts, sizeof(ts))) < 0 ||
		    (r = kc_json_set_str(o, "time", ts)) < 0)
			goto fail;
	}
	if ((r = kc_json_set_str(o, "fieldsType", "FieldsV1")) < 0 ||
	    (r = fieldset_to_raw_cached(cache, &e->set, &fields)) < 0 ||
	    (r = kc_json_put(o, "fieldsV1", fields)) < 0 ||
	    (*e->subresource != '\0' &&
	    (r = kc_json_set_str(o, "subresource", e->subresource)) < 0))
		goto fail;
	*ret = o;
	return 0;
fail:
	json_object_put(o);
	return r;
}

/*
 * Writes the entries into 'obj' (a private tree), sorted as
 * kube-apiserver sorts them: Apply before Update, then by time, manager,
 * apiVersion and subresource. No entries: no managedFields.
 */
static int
managed_encode(struct managed *m, struct fm_cache *cache, struct json_object *obj)
{
	struct json_object *md = kc_json_obj_of(obj, "metadata"), *arr, *e;
	int r;

	if (m->n > 1)
		qsort(m->v, m->n, sizeof(m->v[0]), cmp_entries);
	if (m->n == 0) {
		if (md != NULL)
			json_object_object_del(md, "managedFields");
		return 0;
	}
	if ((arr = json_object_new_array()) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++) {
		/* An unchanged entry is shared: stored trees are frozen. */
		if (!m->v[i].dirty && m->v[i].orig != NULL) {
			e = json_object_get(unconst(m->v[i].orig));
			r = 0;
		} else
			r = mentry_json(&m->v[i], cache, &e);
		if (r < 0 || (r = jappend(arr, e)) < 0) {
			json_object_put(arr);
			return r;
		}
	}
	if ((md = kc_json_ensure_obj(obj, "metadata")) == NULL) {
		json_object_put(arr);
		return -ENOMEM;
	}
	return jput(md, "managedFields", arr);
}

/* ------------------------------------------------------------------------
 * The field manager
 */

/* stripMetaManager: what no entry ever holds. */
static const char *const strip_paths[] = {
	"apiVersion", "kind", "metadata", "metadata.name", "metadata.namespace",
	"metadata.creationTimestamp", "metadata.selfLink", "metadata.uid",
	"metadata.clusterName", "metadata.generation", "metadata.managedFields",
	"metadata.resourceVersion", NULL,
};

const char *const fieldmanager_reset_status[] = { "status", NULL };
const char *const fieldmanager_reset_spec[] = { "spec", NULL };

/* The live and the new object at an apiVersion other entries were recorded at. */
struct vobj {
	const char		*api_version;	/* an entry's */
	struct json_object	*live;
	struct json_object	*obj;		/* NULL until converted */
	struct fm_schema	 schema;
};

struct ctx {
	const struct fm_schema	*schema;
	fm_convert_fn		*convert;	/* entries of other versions, or NULL */
	void			*convert_arg;
	struct vobj		*vers;
	size_t			 nvers;
	struct fs		 strip;
	struct fs		 reset;
	const char		*api_version;
	const char		*subresource;	/* "" for none */
	time_t			 now;
	char			 err[ERR_MAX];
};

static void
ctx_free(struct ctx *x)
{
	for (size_t i = 0; i < x->nvers; i++) {
		if (x->vers[i].live != NULL)
			json_object_put(x->vers[i].live);
		if (x->vers[i].obj != NULL)
			json_object_put(x->vers[i].obj);
	}
	kc_free(x->vers);
	fieldset_free(&x->strip);
	fieldset_free(&x->reset);
}

static int
ctx_init(struct ctx *x, const struct fm_schema *schema, const char *const *reset,
    const char *api_version, const char *subresource, time_t now)
{
	int r;

	memset(x, 0, sizeof(*x));
	x->schema = schema;
	x->api_version = api_version != NULL ? api_version : "";
	x->subresource = subresource != NULL ? subresource : "";
	x->now = now;
	if ((r = fieldset_from_paths(strip_paths, &x->strip)) < 0 ||
	    (r = fieldset_from_paths(reset, &x->reset)) < 0) {
		ctx_free(x);
		return r;
	}
	return 0;
}

/*
 * A private top level of 'o' without metadata.managedFields: a new object,
 * and a new metadata object, whose members are references to those of
 * 'o'. Only the two top levels may be written to; what lies below is
 * shared with 'o' (frozen, or the caller's, and only read here).
 */
static int
view_without_managed(const struct json_object *o, struct json_object **ret)
{
	struct json_object *v, *md;
	int r;

	if ((v = json_object_new_object()) == NULL)
		return -ENOMEM;
	json_object_object_foreach(unconst(o), k, val) {
		if (strcmp(k, "metadata") == 0 && json_object_is_type(val, json_type_object)) {
			if ((md = json_object_new_object()) == NULL) {
				r = -ENOMEM;
				goto fail;
			}
			json_object_object_foreach(val, mk, mv) {
				if (strcmp(mk, "managedFields") == 0)
					continue;
				if ((r = jput(md, mk, json_object_get(mv))) < 0) {
					json_object_put(md);
					goto fail;
				}
			}
			if ((r = jput(v, k, md)) < 0)
				goto fail;
		} else if ((r = jput(v, k, json_object_get(val))) < 0)
			goto fail;
	}
	*ret = v;
	return 0;
fail:
	json_object_put(v);
	return r;
}

/* A private copy of an object without metadata.managedFields. */
static int
copy_without_managed(const struct json_object *o, struct json_object **ret)
{
	struct json_object *c, *md;
	int r;

	if ((r = jcopy(o, &c)) < 0)
		return r;
	if ((md = kc_json_obj_of(c, "metadata")) != NULL)
		json_object_object_del(md, "managedFields");
	*ret = c;
	return 0;
}

/*
 * Whether some member of 'a' is a member of 'b', without building
 * anything: when it is not, the difference a - b is 'a' itself.
 */
static bool
fs_overlaps(const struct fs *a, const struct fs *b)
{
	size_t i = 0, j = 0;

	while (i < a->n && j < b->n) {
		const struct fs_node *x = &a->v[i], *y = &b->v[j];
		int c = fieldset_pe_cmp(&x->pe, &y->pe);

		if (c < 0)
			i++;
		else if (c > 0)
			j++;
		else {
			if ((x->member && y->member) || fs_overlaps(&x->kids, &y->kids))
				return true;
			i++, j++;
		}
	}
	return false;
}

/*
 * The entry loses what was taken from it and what was removed. Most
 * writes touch one manager's fields: the others are left as they are
 * (not copied, and encoded again from their original entry).
 */
static int
disown(struct mentry *e, const struct fs *taken, const struct fs *removed)
{
	size_t n;
	int r;

	if (!fs_overlaps(&e->set, taken) && !fs_overlaps(&e->set, removed))
		return 0;
	/* A difference only loses members: the count tells whether it did. */
	n = fieldset_count(&e->set);
	if ((r = fieldset_apply_op(OP_DIFF, &e->set, taken)) < 0 ||
	    (r = fieldset_apply_op(OP_DIFF, &e->set, removed)) < 0)
		return r;
	if (fieldset_count(&e->set) != n)
		e->dirty = true;
	return 0;
}

/* Compare, without the reset paths. */
static int
compare_objects(struct ctx *x, const struct json_object *l, const struct json_object *r,
    struct cmp *c)
{
	struct walk w;
	int rv;

	walk_init(&w, x->schema, true);
	memset(c, 0, sizeof(*c));
	if ((rv = compare(&w, l, true, r, true, c)) < 0)
		kc_strlcpy(x->err, w.err, sizeof(x->err));
	if (rv < 0 || (rv = fieldset_apply_op(OP_RDIFF, &c->add, &x->reset)) < 0 ||
	    (rv = fieldset_apply_op(OP_RDIFF, &c->mod, &x->reset)) < 0 ||
	    (rv = fieldset_apply_op(OP_RDIFF, &c->rem, &x->reset)) < 0) {
		cmp_free(c);
		return rv;
	}
	return 0;
}

/* The converted objects for entries at 'api_version', or NULL (this write's). */
static struct vobj *
vobj_of(const struct ctx *x, const char *api_version)
{
	for (size_t i = 0; i < x->nvers; i++)
		if (strcmp(x->vers[i].api_version, api_version) == 0)
			return &x->vers[i];
	return NULL;
}

/*
 * reconcileManagedFieldsWithSchemaChanges' conversions: the live object
 * (without managedFields) at every other apiVersion of an entry. 0,
 * -EINPROGRESS once every conversion has been asked for, or the
 * converter's failure with its message in 'st'.
 */
static int
versions_live(struct ctx *x, const struct json_object *live, const struct managed *m,
    struct kc_status *st)
{
	bool pending = false;
	int r;

	if (x->convert == NULL || m->n == 0)
		return 0;
	if ((x->vers = kc_calloc(m->n, sizeof(*x->vers))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++) {
		struct vobj *v;

		if (strcmp(m->v[i].api_version, x->api_version) == 0 ||
		    vobj_of(x, m->v[i].api_version) != NULL)
			continue;
		v = &x->vers[x->nvers++];
		v->api_version = m->v[i].api_version;
		r = x->convert(x->convert_arg, live, v->api_version, &v->live, &v->schema, st);
		if (r == -EINPROGRESS)
			pending = true;
		else if (r < 0)
			return r;
	}
	return pending ? -EINPROGRESS : 0;
}

/*
 * Updater.update's conversions: the new object at every other apiVersion.
 * 0, -EINPROGRESS once every conversion has been asked for, or the
 * converter's failure, "failed to convert new object: <its message>".
 */
static int
versions_new(struct ctx *x, const struct json_object *obj)
{
	struct kc_status st = { 0 };
	bool pending = false;
	int r;

	for (size_t i = 0; i < x->nvers; i++) {
		struct vobj *v = &x->vers[i];
		struct fm_schema unused;

		if (v->obj != NULL) {
			json_object_put(v->obj);
			v->obj = NULL;
		}
		r = x->convert(x->convert_arg, obj, v->api_version, &v->obj, &unused, &st);
		if (r == -EINPROGRESS)
			pending = true;
		else if (r == -ENOMEM)
			return r;
		else if (r < 0) {
			errf(x->err, sizeof(x->err), "failed to convert new object: %s", st.message);
			return r;
		}
	}
	return pending ? -EINPROGRESS : 0;
}

/*
 * One entry at the other apiVersion of 'v': what the apply changed or
 * added there and the entry holds ('set' given: into '*ret'), or ('e'
 * given) the entry loses that and what the apply removed there.
 */
static int
version_taken(struct ctx *x, const struct vobj *v, const struct fs *set, struct fs *ret,
    struct mentry *e)
{
	const struct fm_schema *saved = x->schema;
	struct fs taken = { 0 };
	struct cmp c = { 0 };
	int r;

	x->schema = v->schema.lookup != NULL ? &v->schema : NULL;
	r = compare_objects(x, v->live, v->obj, &c);
	x->schema = saved;
	if (r < 0)
		return r;
	if ((r = fieldset_op(OP_UNION, &c.mod, &c.add, &taken)) == 0) {
		if (set != NULL)
			r = fieldset_op(OP_INTERSECT, set, &taken, ret);
		else
			r = disown(e, &taken, &c.rem);
	}
	fieldset_free(&taken);
	cmp_free(&c);
	return r;
}

/*
 * Update: the fields 'obj' changed or added over 'live' move to the
 * manager's Update entry (stamped now), every entry loses them and the
 * removed ones. Nothing changed, no entry changes.
 */
static int
record_update(struct ctx *x, const struct json_object *live, const struct json_object *obj,
    struct managed *m, const char *manager)
{
	struct fs changed = { 0 }, self = { 0 };
	struct mentry *e;
	struct cmp c;
	size_t idx;
	int r;

	if ((r = compare_objects(x, live, obj, &c)) < 0)
		return r;
	/* The sets are moved from one step to the next, not copied. */
	changed = c.mod;
	memset(&c.mod, 0, sizeof(c.mod));
	if ((r = fieldset_union_take(&changed, &c.add)) < 0 || (r = versions_new(x, obj)) < 0)
		goto out;
	for (size_t i = 0; i < m->n; i++) {
		const struct vobj *v = vobj_of(x, m->v[i].api_version);

		if (v != NULL)
			r = version_taken(x, v, NULL, NULL, &m->v[i]);
		else
			r = disown(&m->v[i], &changed, &c.rem);
		if (r < 0)
			goto out;
	}
	managed_drop_empty(m);
	self = changed;
	memset(&changed, 0, sizeof(changed));
	if ((r = fieldset_apply_op(OP_DIFF, &self, &c.rem)) < 0 ||
	    (r = fieldset_apply_op(OP_DIFF, &self, &x->strip)) < 0)
		goto out;
	if (fieldset_empty(&self))
		goto out;
	if (!managed_find(m, manager, OP_UPDATE, x->api_version, x->subresource, &idx) &&
	    (r = managed_new(m, manager, OP_UPDATE, x->api_version, x->subresource, &idx)) < 0)
		goto out;
	e = &m->v[idx];
	if ((r = fieldset_union_take(&e->set, &self)) < 0)
		goto out;
	e->has_time = true;
	e->time = x->now;
	e->dirty = true;
out:
	cmp_free(&c);
	fieldset_free(&changed);
	fieldset_free(&self);
	return r;
}

/* The field set of 'v', with named fields as members. */
static int
named_set(struct walk *w, const struct json_object *v, struct fs *out)
{
	struct fs s = { 0 };
	int r;

	if ((r = to_set(w, v, &s)) == 0)
		r = ensure_named(w, &s, VK_STRUCT, out);
	fieldset_free(&s);
	return r;
}

/*
 * prune: removes from 'merged' what the applier's previous set 'last'
 * holds, unless an entry (the applier's new set included) still owns
 * it, and only what 'last' held.
 */
static int
prune(struct ctx *x, const struct json_object *merged, const struct managed *m,
    const struct fs *last, struct json_object **ret)
{
	struct fs last_e = { 0 }, all = { 0 }, all_e = { 0 }, ms = { 0 }, ps = { 0 };
	struct fs keep = { 0 }, rm = { 0 };
	struct json_object *p1 = NULL, *p2 = NULL;
	struct walk w;
	int r;

	if (fieldset_empty(last))
		return jcopy(merged, ret);
	walk_init(&w, x->schema, true);
	for (size_t i = 0; i < m->n; i++)
		if ((r = fieldset_apply_op(OP_UNION, &all, &m->v[i].set)) < 0)
			goto out;
	if ((r = ensure_named(&w, last, VK_STRUCT, &last_e)) < 0 ||
	    (r = ensure_named(&w, &all, VK_STRUCT, &all_e)) < 0 ||
	    (r = remove_items(&w, merged, &last_e, &p1)) < 0 ||
	    (r = named_set(&w, merged, &ms)) < 0 ||
	    (r = named_set(&w, p1, &ps)) < 0 ||
	    (r = fieldset_op(OP_UNION, &ps, &all_e, &keep)) < 0 ||
	    (r = fieldset_op(OP_DIFF, &ms, &keep, &rm)) < 0 ||
	    (r = remove_items(&w, merged, &rm, &p2)) < 0)
		goto out;
	fieldset_free(&ps);
	fieldset_free(&rm);
	if ((r = named_set(&w, p2, &ps)) < 0 ||
	    (r = fieldset_op(OP_DIFF, &ms, &ps, &rm)) < 0 ||
	    (r = fieldset_apply_op(OP_INTERSECT, &rm, &last_e)) < 0 ||
	    (r = remove_items(&w, merged, &rm, ret)) < 0)
		goto out;
out:
	if (r < 0 && w.err[0] != '\0')
		kc_strlcpy(x->err, w.err, sizeof(x->err));
	fieldset_free(&last_e);
	fieldset_free(&all);
	fieldset_free(&all_e);
	fieldset_free(&ms);
	fieldset_free(&ps);
	fieldset_free(&keep);
	fieldset_free(&rm);
	if (p1 != NULL)
		json_object_put(p1);
	if (p2 != NULL)
		json_object_put(p2);
	return r;
}

/* Fields other entries hold that an apply changes. */
struct conflict {
	size_t		 entry;
	struct fs	 set;
};

struct conflicts {
	struct conflict	*v;
	size_t		 n;
};

static void
conflicts_free(struct conflicts *cf)
{
	for (size_t i = 0; i < cf->n; i++)
		fieldset_free(&cf->v[i].set);
	kc_free(cf->v);
	memset(cf, 0, sizeof(*cf));
}

/*
 * 'obj' (at x->api_version, or at 'from') at 'to' through the apply's
 * converter, and the shapes there in '*sc' (NULL for none): a new
 * reference in '*ret'. On failure x->err says "<what>: <message>".
 */
static int
convert_at(struct ctx *x, const struct json_object *obj, const char *to,
    struct json_object **ret, const struct fm_schema **sc, struct fm_schema *buf,
    const char *what)
{
	const char *av = kc_json_str(obj, "apiVersion");
	struct kc_status st = { 0 };
	int r;

	if (strcmp(to, x->api_version) == 0 && av != NULL && strcmp(av, to) == 0) {
		*ret = json_object_get((struct json_object *)(uintptr_t)obj);
		*sc = x->schema;
		return 0;
	}
	r = x->convert(x->convert_arg, obj, to, ret, buf, &st);
	if (r == 0)
		*sc = buf->lookup != NULL ? buf : NULL;
	else if (r != -EINPROGRESS && r != -ENOMEM)
		errf(x->err, sizeof(x->err), "%s: %s", what, st.message);
	return r;
}

/* The named set of 'v' with the shapes 'sc'. */
static int
named_at(const struct fm_schema *sc, const struct json_object *v, struct fs *out)
{
	struct walk *w = kc_malloc(sizeof(*w));
	int r;

	if (w == NULL)
		return -ENOMEM;
	walk_init(w, sc, true);
	r = named_set(w, v, out);
	kc_free(w);
	return r;
}

/* EnsureNamedFieldsAreMembers of 'in' with the shapes 'sc'. */
static int
ensure_at(const struct fm_schema *sc, const struct fs *in, struct fs *out)
{
	struct walk *w = kc_malloc(sizeof(*w));
	int r;

	if (w == NULL)
		return -ENOMEM;
	walk_init(w, sc, true);
	r = ensure_named(w, in, VK_STRUCT, out);
	kc_free(w);
	return r;
}

/* RemoveItems of 'set' (named already) from 'v' with the shapes 'sc'. */
static int
remove_at(const struct fm_schema *sc, const struct json_object *v, const struct fs *set,
    struct json_object **out)
{
	struct walk *w = kc_malloc(sizeof(*w));
	int r;

	if (w == NULL)
		return -ENOMEM;
	walk_init(w, sc, true);
	r = remove_items(w, v, set, out);
	kc_free(w);
	return r;
}

/* Replaces '*slot' (a reference) with 'v'. */
static void
swap_ref(struct json_object **slot, struct json_object *v)
{
	if (*slot != NULL)
		json_object_put(*slot);
	*slot = v;
}

/*
 * addBackOwnedItemsForVersion: at 'av' (cm and cp converted there when
 * they are elsewhere, '*cur' their version), what cm has beyond cp and
 * beyond the fields 'owned' holds goes from cm, into cp.
 */
static int
add_back_at(struct ctx *x, const char *av, const struct fs *owned, const char **cur,
    struct json_object **cm, struct json_object **cp, const struct fm_schema **sc,
    struct fm_schema *buf)
{
	struct fs ms = { 0 }, ps = { 0 }, on = { 0 }, rm = { 0 };
	struct json_object *t = NULL;
	char what[256];
	int r;

	if (strcmp(*cur, av) != 0) {
		errf(what, sizeof(what), "failed to prune fields: failed add back owned items: "
		    "failed to convert merged object at version %s", av);
		if ((r = convert_at(x, *cm, av, &t, sc, buf, what)) < 0)
			return r;
		swap_ref(cm, t);
		errf(what, sizeof(what), "failed to prune fields: failed add back owned items: "
		    "failed to convert pruned object at version %s", av);
		if ((r = convert_at(x, *cp, av, &t, sc, buf, what)) < 0)
			return r;
		swap_ref(cp, t);
		*cur = av;
	}
	t = NULL;
	if ((r = named_at(*sc, *cm, &ms)) == 0 && (r = named_at(*sc, *cp, &ps)) == 0 &&
	    (r = ensure_at(*sc, owned, &on)) == 0 &&
	    (r = fieldset_apply_op(OP_UNION, &ps, &on)) == 0 &&
	    (r = fieldset_op(OP_DIFF, &ms, &ps, &rm)) == 0 &&
	    (r = remove_at(*sc, *cm, &rm, &t)) == 0)
		swap_ref(cp, t);
	fieldset_free(&ms);
	fieldset_free(&ps);
	fieldset_free(&on);
	fieldset_free(&rm);
	return r;
}

/*
 * Updater.prune when the applier's previous entry was recorded at
 * 'last_av', another version: the merged object goes there and loses
 * what 'last' held; then, at each version entries were recorded at
 * ('last_av' first), what they own there comes back; then what 'last'
 * never held (addBackDanglingItems); and the result comes back to this
 * apply's version. Conversions as convert_at(); failures read "failed
 * to prune fields: ...".
 */
static int
prune_versions(struct ctx *x, const struct json_object *merged, const struct managed *m,
    const struct fs *last, const char *last_av, struct json_object **ret)
{
	const struct fm_schema *sv, *su;
	struct fm_schema bv, bu;
	struct json_object *mv = NULL, *cm = NULL, *cp = NULL, *t = NULL;
	struct fs ms = { 0 }, ps = { 0 }, ln = { 0 }, owned = { 0 }, rm = { 0 };
	const char **order = NULL, *cur = last_av;
	size_t n = 0;
	int r;

	if (fieldset_empty(last))
		return jcopy(merged, ret);
	if ((r = convert_at(x, merged, last_av, &mv, &sv, &bv, "failed to prune fields: "
	    "failed to convert merged object to last applied version")) < 0)
		return r;
	if ((r = ensure_at(sv, last, &ln)) < 0 || (r = remove_at(sv, mv, &ln, &cp)) < 0)
		goto out;
	cm = json_object_get(mv);
	su = sv;
	if ((order = kc_calloc(m->n + 1, sizeof(*order))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	order[n++] = last_av;
	for (size_t i = 0; i < m->n; i++) {
		bool seen = false;

		for (size_t j = 0; j < n && !seen; j++)
			seen = strcmp(order[j], m->v[i].api_version) == 0;
		if (!seen)
			order[n++] = m->v[i].api_version;
	}
	for (size_t k = 0; k < n; k++) {
		bool any = false;

		fieldset_free(&owned);
		for (size_t i = 0; i < m->n; i++) {
			if (strcmp(m->v[i].api_version, order[k]) != 0)
				continue;
			any = true;
			if ((r = fieldset_apply_op(OP_UNION, &owned, &m->v[i].set)) < 0)
				goto out;
		}
		if (any && (r = add_back_at(x, order[k], &owned, &cur, &cm, &cp, &su,
		    &bu)) < 0)
			goto out;
	}
	/* addBackDanglingItems, at the last applied version */
	if ((r = convert_at(x, cp, last_av, &t, &su, &bu, "failed to prune fields: failed "
	    "add back dangling items: failed to convert pruned object to last applied "
	    "version")) < 0)
		goto out;
	swap_ref(&cp, t);
	t = NULL;
	if ((r = named_at(sv, mv, &ms)) < 0 || (r = named_at(sv, cp, &ps)) < 0 ||
	    (r = fieldset_op(OP_DIFF, &ms, &ps, &rm)) < 0 ||
	    (r = fieldset_apply_op(OP_INTERSECT, &rm, &ln)) < 0 ||
	    (r = remove_at(sv, mv, &rm, &t)) < 0)
		goto out;
	swap_ref(&cp, t);
	t = NULL;
	r = convert_at(x, cp, x->api_version, ret, &su, &bu, "failed to prune fields");
out:
	kc_free(order);
	fieldset_free(&ms);
	fieldset_free(&ps);
	fieldset_free(&ln);
	fieldset_free(&owned);
	fieldset_free(&rm);
	swap_ref(&mv, NULL);
	swap_ref(&cm, NULL);
	swap_ref(&cp, NULL);
	swap_ref(&t, NULL);
	return r;
}

/*
 * Updater.Apply: merges 'config' into 'live', makes the applier's Apply
 * entry the applied set, prunes what it dropped, and takes the changed
 * fields from the other entries, which is a conflict unless 'force'.
 */
static int
apply_core(struct ctx *x, const struct json_object *live, const struct json_object *config,
    struct managed *m, const char *manager, bool force, struct json_object **ret,
    bool *ret_changed, struct conflicts *cf)
{
	struct fs set = { 0 }, last = { 0 }, taken = { 0 };
	struct json_object *merged = NULL, *pruned = NULL;
	struct mentry *e;
	struct cmp c = { 0 };
	struct walk w;
	char *last_av = NULL;
	bool changed;
	size_t idx;
	int r;

	walk_init(&w, x->schema, true);
	if ((r = merge(&w, live, true, config, true, &merged)) < 0) {
		kc_strlcpy(x->err, w.err, sizeof(x->err));
		goto out;
	}
	walk_init(&w, x->schema, false);
	if ((r = to_set(&w, config, &set)) < 0) {
		kc_strlcpy(x->err, w.err, sizeof(x->err));
		goto out;
	}
	if ((r = fieldset_apply_op(OP_RDIFF, &set, &x->reset)) < 0)
		goto out;
	if (managed_find(m, manager, OP_APPLY, NULL, x->subresource, &idx)) {
		last = m->v[idx].set;
		memset(&m->v[idx].set, 0, sizeof(m->v[idx].set));
		if ((last_av = kc_strdup(m->v[idx].api_version)) == NULL) {
			r = -ENOMEM;
			goto out;
		}
	} else if ((r = managed_new(m, manager, OP_APPLY, x->api_version, x->subresource,
	    &idx)) < 0)
		goto out;
	e = &m->v[idx];
	e->set = set;
	memset(&set, 0, sizeof(set));
	if (strcmp(e->api_version, x->api_version) != 0) {
		char *av = kc_strdup(x->api_version);

		if (av == NULL) {
			r = -ENOMEM;
			goto out;
		}
		kc_free(e->api_version);
		e->api_version = av;
		e->dirty = true;
	}
	if (last_av != NULL && strcmp(last_av, x->api_version) != 0 &&
	    x->convert != NULL)
		r = prune_versions(x, merged, m, &last, last_av, &pruned);
	else
		r = prune(x, merged, m, &last, &pruned);
	if (r < 0 ||
	    (r = compare_objects(x, live, pruned, &c)) < 0 ||
	    (r = fieldset_op(OP_UNION, &c.mod, &c.add, &taken)) < 0)
		goto out;
	if (m->n > 0 && (cf->v = kc_calloc(m->n, sizeof(*cf->v))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = versions_new(x, pruned)) < 0)
		goto out;
	for (size_t i = 0; i < m->n; i++) {
		struct conflict *k = &cf->v[cf->n];
		const struct vobj *v = vobj_of(x, m->v[i].api_version);

		if (i == idx)
			continue;
		k->entry = i;
		if (v != NULL)
			r = version_taken(x, v, &m->v[i].set, &k->set, NULL);
		else
			r = fieldset_op(OP_INTERSECT, &m->v[i].set, &taken, &k->set);
		if (r < 0)
			goto out;
		if (!fieldset_empty(&k->set))
			cf->n++;
		else
			fieldset_free(&k->set);
	}
	if (cf->n > 0 && !force) {
		r = KC_ECONFLICT;
		goto out;
	}
	for (size_t i = 0; i < m->n; i++) {
		const struct vobj *v = vobj_of(x, m->v[i].api_version);

		if (i == idx)
			continue;
		if (v != NULL)
			r = version_taken(x, v, NULL, NULL, &m->v[i]);
		else
			r = disown(&m->v[i], &taken, &c.rem);
		if (r < 0)
			goto out;
	}
	e = &m->v[idx];
	if ((r = fieldset_apply_op(OP_DIFF, &e->set, &x->strip)) < 0)
		goto out;
	if (!fieldset_equal(&e->set, &last))
		e->dirty = true;
	changed = !fieldset_value_equal(live, pruned, 0);
	if (changed) {
		e->has_time = true;
		e->time = x->now;
		e->dirty = true;
	}
	managed_drop_empty(m);
	*ret = pruned;
	pruned = NULL;
	*ret_changed = changed;
out:
	kc_free(last_av);
	fieldset_free(&set);
	fieldset_free(&last);
	fieldset_free(&taken);
	cmp_free(&c);
	if (merged != NULL)
		json_object_put(merged);
	if (pruned != NULL)
		json_object_put(pruned);
	if (r < 0 && r != KC_ECONFLICT)
		conflicts_free(cf);
	return r;
}

/*
 * capManagersManager: past FM_UPDATE_MANAGERS_MAX Update entries, the
 * oldest merge, per apiVersion, into an "ancient-changes" entry.
 */
static int
cap_managers(struct managed *m)
{
	struct mentry **order = NULL;
	char **ids = NULL, **versions = NULL, **firsts = NULL;
	size_t nu = 0, nv = 0, length, i, ei, fi, bi;
	int r = 0;

	for (i = 0; i < m->n; i++)
		nu += m->v[i].op == OP_UPDATE;
	if (nu <= FM_UPDATE_MANAGERS_MAX)
		return 0;
	if ((order = kc_calloc(nu, sizeof(*order))) == NULL ||
	    (ids = kc_calloc(nu, sizeof(*ids))) == NULL ||
	    (versions = kc_calloc(nu, sizeof(*versions))) == NULL ||
	    (firsts = kc_calloc(nu, sizeof(*firsts))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0, nu = 0; i < m->n; i++)
		if (m->v[i].op == OP_UPDATE)
			order[nu++] = &m->v[i];
	for (i = 1; i < nu; i++) {
		/* Insertion sort by time, then identity: nu is small. */
		for (size_t j = i; j > 0; j--) {
			struct mentry *a = order[j - 1], *b = order[j];
			time_t ta = a->has_time ? a->time : 0, tb = b->has_time ? b->time : 0;

			if (ta < tb || (ta == tb && strcmp(a->id, b->id) <= 0))
				break;
			order[j - 1] = b;
			order[j] = a;
		}
	}
	for (i = 0; i < nu; i++)
		if ((ids[i] = kc_strdup(order[i]->id)) == NULL) {
			r = -ENOMEM;
			goto out;
		}
	for (i = 0, length = nu; i < nu && length > FM_UPDATE_MANAGERS_MAX; i++) {
		struct mentry *e = NULL, *b;
		bool has_time;
		time_t t;

		for (ei = 0; ei < m->n && strcmp(m->v[ei].id, ids[i]) != 0; ei++)
			;
		if (ei == m->n)
			continue;
		e = &m->v[ei];
		for (fi = 0; fi < nv && strcmp(versions[fi], e->api_version) != 0; fi++)
			;
		if (fi == nv) {
			if ((versions[nv] = kc_strdup(e->api_version)) == NULL ||
			    (firsts[nv] = kc_strdup(e->id)) == NULL) {
				r = -ENOMEM;
				goto out;
			}
			nv++;
			continue;
		}
		if (!managed_find(m, "ancient-changes", OP_UPDATE, e->api_version, "", &bi)) {
			for (bi = 0; bi < m->n && strcmp(m->v[bi].id, firsts[fi]) != 0; bi++)
				;
			if (bi == m->n)
				continue;
			if ((r = mentry_identity(&m->v[bi], "ancient-changes", OP_UPDATE,
			    versions[fi], "")) < 0)
				goto out;
		}
		e = &m->v[ei];
		b = &m->v[bi];
		has_time = e->has_time;
		t = e->time;
		if (b != e && (r = fieldset_apply_op(OP_UNION, &b->set, &e->set)) < 0)
			goto out;
		b->has_time = has_time;
		b->time = t;
		b->dirty = true;
		managed_del(m, ei);
		length--;
	}
out:
	for (i = 0; i < nu; i++) {
		if (ids != NULL)
			kc_free(ids[i]);
		if (versions != NULL)
			kc_free(versions[i]);
		if (firsts != NULL)
			kc_free(firsts[i]);
	}
	kc_free(order);
	kc_free(ids);
	kc_free(versions);
	kc_free(firsts);
	return r;
}

/*
 * lastAppliedManager: the fields of the live last-applied-configuration
 * annotation whose values the live object still has. kubectl's apply
 * may take those from their client-side apply owners. '*ret_ok' false:
 * no usable annotation.
 */
static int
last_applied_allowed(struct ctx *x, const struct json_object *live, struct fs *ret,
    bool *ret_ok)
{
	const char *text = kc_json_str(live, "metadata", "annotations", LAST_APPLIED);
	const char *api;
	struct json_object *la = NULL;
	struct kc_status st = { 0 };
	struct fs set = { 0 };
	struct cmp c = { 0 };
	struct walk w;
	int r;

	*ret_ok = false;
	if (text == NULL || *text == '\0')
		return 0;
	if ((r = kc_json_parse(text, strlen(text), &la, &st)) < 0)
		return r == -ENOMEM ? r : 0;
	api = kc_json_str(la, "apiVersion");
	if (!json_object_is_type(la, json_type_object) || api == NULL ||
	    strcmp(api, x->api_version) != 0) {
		r = 0;
		goto out;
	}
	walk_init(&w, x->schema, false);
	if ((r = to_set(&w, la, &set)) < 0) {
		r = r == -ENOMEM ? r : 0;
		goto out;
	}
	walk_init(&w, x->schema, true);
	if ((r = compare(&w, la, true, live, true, &c)) < 0) {
		r = r == -ENOMEM ? r : 0;
		goto out;
	}
	if ((r = fieldset_apply_op(OP_DIFF, &set, &c.mod)) < 0 ||
	    (r = fieldset_apply_op(OP_DIFF, &set, &c.add)) < 0 ||
	    (r = fieldset_apply_op(OP_DIFF, &set, &c.rem)) < 0)
		goto out;
	*ret = set;
	memset(&set, 0, sizeof(set));
	*ret_ok = true;
out:
	if (la != NULL)
		json_object_put(la);
	fieldset_free(&set);
	cmp_free(&c);
	return r;
}

/*
 * lastAppliedUpdater: kubectl's apply keeps a live last-applied
 * annotation in step with what it applies, so a later client-side apply
 * still works. The value is the applied body without the annotation, as
 * Go encodes it, with a newline; it is dropped when the annotations
 * would pass 256 KiB.
 */
static int
update_last_applied(struct json_object *obj, const struct json_object *config)
{
	struct json_object *ann, *c, *cann;
	const char *cur = kc_json_str(obj, "metadata", "annotations", LAST_APPLIED);
	size_t total = 0;
	char *text = NULL;
	int r;

	if (cur == NULL || *cur == '\0')
		return 0;
	if ((r = jcopy(config, &c)) < 0)
		return r;
	if ((cann = kc_json_get(c, "metadata", "annotations")) != NULL &&
	    json_object_is_type(cann, json_type_object))
		json_object_object_del(cann, LAST_APPLIED);
	r = fieldset_gj_dump(c, "\n", &text);
	json_object_put(c);
	if (r < 0)
		return r;
	ann = kc_json_get(obj, "metadata", "annotations");
	r = kc_json_set_str(ann, LAST_APPLIED, text);
	kc_free(text);
	if (r < 0)
		return r;
	json_object_object_foreach(ann, k, v)
		total += strlen(k) + (json_object_is_type(v, json_type_string) ?
		    (size_t)json_object_get_string_len(v) : 0);
	if (total > ANNOTATIONS_MAX)
		json_object_object_del(ann, LAST_APPLIED);
	return 0;
}

/* printManager: "\"m\"", with subresource, and "using <v>" for Update. */
static void
sb_manager(struct kc_sbuf *b, const struct mentry *e)
{
	kc_sbuf_quote(b, e->manager, strlen(e->manager));
	if (*e->subresource != '\0') {
		kc_sbuf_puts(b, " with subresource ");
		kc_sbuf_quote(b, e->subresource, strlen(e->subresource));
	}
	if (e->op == OP_UPDATE) {
		kc_sbuf_puts(b, " using ");
		kc_sbuf_puts(b, e->api_version);
	}
}

struct conflict_out {
	const struct mentry	*e;
	struct json_object	*causes;
	struct kc_buf		*msg;
	struct kc_status	*st;
	size_t			 total;
};

static int
conflict_path(void *arg, const struct pe *const *path, size_t n)
{
	struct conflict_out *o = arg;
	struct json_object *cause;
	char field[DISPLAY_MAX], who[DISPLAY_MAX], message[DISPLAY_MAX + 16];
	struct kc_sbuf b;
	int r;

	kc_sbuf_init(&b, field, sizeof(field));
	fieldset_put_path(&b, path, n);
	kc_sbuf_init(&b, who, sizeof(who));
	sb_manager(&b, o->e);
	snprintf(message, sizeof(message), "conflict with %s", who);
	if ((cause = json_object_new_object()) == NULL)
		return -ENOMEM;
	if ((r = kc_json_set_str(cause, "reason", "FieldManagerConflict")) < 0 ||
	    (r = kc_json_set_str(cause, "message", message)) < 0 ||
	    (r = kc_json_set_str(cause, "field", field)) < 0) {
		json_object_put(cause);
		return r;
	}
	if ((r = kc_json_append(o->causes, cause)) < 0)
		return r;
	if (o->st != NULL && o->st->ncauses < KC_STATUS_CAUSES_MAX) {
		struct kc_status_cause *sc = &o->st->causes[o->st->ncauses++];

		kc_strlcpy(sc->reason, "FieldManagerConflict", sizeof(sc->reason));
		kc_strlcpy(sc->field, field, sizeof(sc->field));
		kc_strlcpy(sc->message, message, sizeof(sc->message));
	}
	if (o->total == 1)
		return kc_buf_printf(o->msg, "conflict with %s: %s", who, field);
	return kc_buf_printf(o->msg, "\n- %s", field);
}

/* NewConflictError: the 409 message, its causes, and the details. */
static int
conflict_error(const struct managed *m, const struct conflicts *cf,
    struct json_object **ret_details, struct kc_status *st)
{
	const struct pe *stack[FM_DEPTH_MAX + 1];
	struct conflict_out o = { 0 };
	struct json_object *details = NULL;
	const struct conflict **order = NULL;
	char who[DISPLAY_MAX];
	struct kc_buf msg;
	struct kc_sbuf b;
	char *text = NULL;
	size_t i;
	int r;

	kc_buf_init(&msg, FM_TEXT_MAX);
	for (i = 0; i < cf->n; i++)
		o.total += fieldset_count(&cf->v[i].set);
	if ((order = kc_calloc(cf->n, sizeof(*order))) == NULL ||
	    (details = json_object_new_object()) == NULL ||
	    (o.causes = json_object_new_array()) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	for (i = 0; i < cf->n; i++) {
		size_t j = i;

		for (; j > 0 && strcmp(m->v[order[j - 1]->entry].id,
		    m->v[cf->v[i].entry].id) > 0; j--)
			order[j] = order[j - 1];
		order[j] = &cf->v[i];
	}
	if (st != NULL)
		kc_status_clear(st);
	o.msg = &msg;
	o.st = st;
	if (o.total == 1)
		r = kc_buf_puts(&msg, "Apply failed with 1 conflict: ");
	else
		r = kc_buf_printf(&msg, "Apply failed with %zu conflicts: ", o.total);
	for (i = 0; i < cf->n && r >= 0; i++) {
		o.e = &m->v[order[i]->entry];
		if (o.total > 1) {
			kc_sbuf_init(&b, who, sizeof(who));
			sb_manager(&b, o.e);
			if ((r = kc_buf_printf(&msg, "%sconflicts with %s:", i > 0 ? "\n" : "",
			    who)) < 0)
				break;
		}
		r = fieldset_iterate(&order[i]->set, stack, 0, conflict_path, &o);
	}
	if (r < 0)
		goto out;
	r = kc_json_put(details, "causes", o.causes);
	o.causes = NULL;
	if (r < 0)
		goto out;
	if ((text = kc_buf_take(&msg, NULL)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if (st != NULL) {
		unsigned nc = st->ncauses;
		struct kc_status_cause causes[KC_STATUS_CAUSES_MAX];

		memcpy(causes, st->causes, sizeof(causes));
		(void)kc_status_set(st, KC_ECONFLICT, "%s", text);
		memcpy(st->causes, causes, sizeof(causes));
		st->ncauses = nc;
		st->http_code = 409;
		kc_strlcpy(st->reason, "Conflict", sizeof(st->reason));
	}
	if (ret_details != NULL) {
		*ret_details = details;
		details = NULL;
	}
	r = KC_ECONFLICT;
out:
	kc_buf_free(&msg);
	kc_free(text);
	kc_free(order);
	if (o.causes != NULL)
		json_object_put(o.causes);
	if (details != NULL)
		json_object_put(details);
	if (r == -ENOMEM && st != NULL)
		kc_status_clear(st);
	return r;
}

/* ------------------------------------------------------------------------
 * Public entry points
 */

static int fail(struct kc_status *, int, int, const char *, const char *, ...)
    _printf_(5, 6);

/* Fills 'st' as the API server's error would: code, HTTP status, reason. */
static int
fail(struct kc_status *st, int code, int http, const char *reason, const char *fmt, ...)
{
	char msg[sizeof(st->message)];
	va_list ap;

	if (st == NULL)
		return code;
	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	(void)kc_status_set(st, code, "%s", msg);
	st->http_code = http;
	kc_strlcpy(st->reason, reason, sizeof(st->reason));
	return code;
}

/* GroupVersionKind.String(): "g/v, Kind=K", "/v1, Kind=Pod". */
static void
sb_gvk(struct kc_sbuf *b, const char *api, const char *kind)
{
	if (strchr(api, '/') == NULL)
		kc_sbuf_puts(b, "/");
	kc_sbuf_puts(b, api);
	kc_sbuf_puts(b, ", Kind=");
	kc_sbuf_puts(b, kind);
}

/* objectGVKNN: "ns/name; g/v, Kind=K". */
static void
sb_gvknn(struct kc_sbuf *b, const struct json_object *o)
{
	const char *ns = kc_json_str(o, "metadata", "namespace");
	const char *name = kc_json_str(o, "metadata", "name");
	const char *api = kc_json_str(o, "apiVersion"), *kind = kc_json_str(o, "kind");

	kc_sbuf_puts(b, ns != NULL ? ns : "");
	kc_sbuf_puts(b, "/");
	kc_sbuf_puts(b, name != NULL ? name : "");
	kc_sbuf_puts(b, "; ");
	sb_gvk(b, api != NULL ? api : "", kind != NULL ? kind : "");
}

int
fieldmanager_manager_name(const char *field_manager, const char *user_agent, char *buf,
    size_t size)
{
	size_t len = 0, end;

	if (size == 0)
		return -ENOBUFS;
	buf[0] = '\0';
	if (field_manager != NULL && *field_manager != '\0')
		return kc_strlcpy(buf, field_manager, size) >= size ? -ENOBUFS : 0;
	if (user_agent == NULL)
		return 0;
	end = strcspn(user_agent, "/");
	for (size_t i = 0; i < end; ) {
		const char *piece = user_agent + i;
		uint32_t cp;
		size_t n = kc_utf8_decode(user_agent + i, end - i, &cp), pl = n;

		if (n == 0) {
			piece = "\xef\xbf\xbd";
			pl = 3;
			n = 1;
		} else if (!kc_rune_is_print(cp)) {
			i += n;
			continue;
		}
		if (len + pl > FM_MANAGER_MAX)
			break;
		if (len + pl >= size)
			return -ENOBUFS;
		memcpy(buf + len, piece, pl);
		len += pl;
		buf[len] = '\0';
		i += n;
	}
	return 0;
}

struct ferr {
	const char	*reason;
	const char	*field;
	char		 body[384];
};

int
fieldmanager_validate_options(const char *kind, bool apply, const char *field_manager,
    bool force_set, struct json_object **ret_details, struct kc_status *st)
{
	return fieldmanager_validate_write_options(kind, apply, field_manager, force_set,
	    NULL, NULL, ret_details, st);
}

int
fieldmanager_validate_write_options(const char *kind, bool apply, const char *field_manager,
    bool force_set, const char *bad_dry_run, const char *field_validation,
    struct json_object **ret_details, struct kc_status *st)
{
	static const char *const validations[] = { "", "Ignore", "Strict", "Warn" };
	struct ferr errs[10];
	struct json_object *details = NULL, *causes, *c;
	char msg[sizeof(st->message)];
	const char *fm = field_manager != NULL ? field_manager : "";
	size_t n = 0, len = strlen(fm);
	struct kc_sbuf b;
	int r;

	if (!apply && force_set) {
		errs[n].reason = "FieldValueForbidden";
		errs[n].field = "force";
		snprintf(errs[n++].body, sizeof(errs[0].body),
		    "Forbidden: may not be specified for non-apply patch");
	}
	if (apply && len == 0) {
		errs[n].reason = "FieldValueRequired";
		errs[n].field = "fieldManager";
		snprintf(errs[n++].body, sizeof(errs[0].body),
		    "Required value: is required for apply patch");
	}
	if (len > FM_MANAGER_MAX) {
		errs[n].reason = "FieldValueTooLong";
		errs[n].field = "fieldManager";
		snprintf(errs[n++].body, sizeof(errs[0].body),
		    "Too long: may not be more than %d bytes", FM_MANAGER_MAX);
	}
	/* Room for dryRun and fieldValidation after the characters. */
	for (size_t i = 0; i < len && n < KC_ARRAY_SIZE(errs) - 2; ) {
		uint32_t cp;
		size_t k = kc_utf8_decode(fm + i, len - i, &cp);

		if (k == 0) {
			i++;
			continue;
		}
		if (!kc_rune_is_print(cp)) {
			errs[n].reason = "FieldValueInvalid";
			errs[n].field = "fieldManager";
			kc_sbuf_init(&b, errs[n].body, sizeof(errs[n].body));
			kc_sbuf_puts(&b, "Invalid value: ");
			kc_sbuf_quote(&b, fm, len);
			kc_sbuf_printf(&b, ": invalid character U+%04X (at position %zu)",
			    (unsigned)cp, i);
			n++;
		}
		i += k;
	}
	if (bad_dry_run != NULL) {
		errs[n].reason = "FieldValueNotSupported";
		errs[n].field = "dryRun";
		snprintf(errs[n++].body, sizeof(errs[0].body),
		    "Unsupported value: %s: supported values: \"All\"", bad_dry_run);
	}
	if (field_validation != NULL) {
		bool known = false;

		for (size_t i = 0; i < KC_ARRAY_SIZE(validations); i++)
			known |= strcmp(field_validation, validations[i]) == 0;
		if (!known) {
			errs[n].reason = "FieldValueNotSupported";
			errs[n].field = "fieldValidation";
			kc_sbuf_init(&b, errs[n].body, sizeof(errs[n].body));
			kc_sbuf_puts(&b, "Unsupported value: ");
			kc_sbuf_quote(&b, field_validation, strlen(field_validation));
			kc_sbuf_puts(&b, ": supported values: \"\", \"Ignore\", \"Strict\", "
			    "\"Warn\"");
			n++;
		}
	}
	if (n == 0)
		return 0;
	kc_sbuf_init(&b, msg, sizeof(msg));
	kc_sbuf_printf(&b, "%s.meta.k8s.io \"\" is invalid: %s", kind != NULL ? kind : "",
	    n > 1 ? "[" : "");
	for (size_t i = 0; i < n; i++) {
		kc_sbuf_puts(&b, i > 0 ? ", " : "");
		kc_sbuf_puts(&b, errs[i].field);
		kc_sbuf_puts(&b, ": ");
		kc_sbuf_puts(&b, errs[i].body);
	}
	kc_sbuf_puts(&b, n > 1 ? "]" : "");
	if (ret_details != NULL) {
		if ((details = json_object_new_object()) == NULL ||
		    (r = kc_json_set_str(details, "group", "meta.k8s.io")) < 0 ||
		    (r = kc_json_set_str(details, "kind", kind != NULL ? kind : "")) < 0 ||
		    (r = kc_json_put(details, "causes", json_object_new_array())) < 0)
			goto nomem;
		causes = kc_json_arr_of(details, "causes");
		for (size_t i = 0; i < n; i++) {
			if ((c = json_object_new_object()) == NULL)
				goto nomem;
			if ((r = kc_json_set_str(c, "reason", errs[i].reason)) < 0 ||
			    (r = kc_json_set_str(c, "message", errs[i].body)) < 0 ||
			    (r = kc_json_set_str(c, "field", errs[i].field)) < 0) {
				json_object_put(c);
				goto nomem;
			}
			if ((r = kc_json_append(causes, c)) < 0)
				goto nomem;
		}
	}
	(void)fail(st, KC_EINVALID, 422, "Invalid", "%s", msg);
	for (size_t i = 0; st != NULL && i < n && i < KC_STATUS_CAUSES_MAX; i++) {
		kc_strlcpy(st->causes[i].reason, errs[i].reason, sizeof(st->causes[i].reason));
		kc_strlcpy(st->causes[i].field, errs[i].field, sizeof(st->causes[i].field));
		kc_strlcpy(st->causes[i].message, errs[i].body, sizeof(st->causes[i].message));
		st->ncauses = (unsigned)i + 1;
	}
	if (ret_details != NULL)
		*ret_details = details;
	return KC_EINVALID;
nomem:
	if (details != NULL)
		json_object_put(details);
	return -ENOMEM;
}

int
fieldmanager_pe_parse(const char *text, enum fm_pe_type *ret_type,
    struct json_object **ret_value, struct kc_status *st)
{
	struct json_object *v = NULL;
	char err[ERR_MAX];
	enum fm_pe_type type;
	struct pe pe;
	int r;

	if (text == NULL)
		return kc_status_set(st, KC_EINVALID, "no path element");
	if ((r = fieldset_pe_parse(text, &pe, err, sizeof(err))) < 0)
		return r == -ENOMEM ? r : kc_status_set(st, r, "%s", err);
	if (r == 1) {
		*ret_type = FM_PE_UNKNOWN;
		*ret_value = NULL;
		return 0;
	}
	type = pe.type;
	switch (type) {
	case FM_PE_FIELD:
		v = json_object_new_string(pe.s);
		break;
	case FM_PE_INDEX:
		v = json_object_new_int64(pe.i);
		break;
	default:
		v = pe.v;
		pe.v = NULL;
		break;
	}
	fieldset_pe_free(&pe);
	if (v == NULL && (type == FM_PE_FIELD || type == FM_PE_INDEX))
		return -ENOMEM;
	*ret_type = type;
	*ret_value = v;
	return 0;
}

int
fieldmanager_pe_format(enum fm_pe_type type, const struct json_object *value, char **ret,
    struct kc_status *st)
{
	struct json_object *sorted = NULL;
	char *json = NULL, *out;
	int r;

	switch (type) {
	case FM_PE_FIELD:
		if (!json_object_is_type(value, json_type_string))
			return kc_status_set(st, KC_EINVALID, "a field name must be a string");
		out = kc_asprintf("f:%s", json_object_get_string(unconst(value)));
		break;
	case FM_PE_INDEX:
		if (!json_object_is_type(value, json_type_int))
			return kc_status_set(st, KC_EINVALID, "an index must be an integer");
		out = kc_asprintf("i:%" PRId64, json_object_get_int64(unconst(value)));
		break;
	case FM_PE_KEY:
		if (!json_object_is_type(value, json_type_object))
			return kc_status_set(st, KC_EINVALID, "a key must be an object");
		if ((r = fieldset_sorted_object(value, &sorted)) < 0)
			return r;
		r = fieldset_gj_dump(sorted, "", &json);
		json_object_put(sorted);
		if (r < 0)
			return r;
		out = kc_asprintf("k:%s", json);
		break;
	case FM_PE_VALUE:
		if ((r = fieldset_gj_dump(value, "", &json)) < 0)
			return r;
		out = kc_asprintf("v:%s", json);
		break;
	default:
		return kc_status_set(st, KC_EINVALID, "unknown path element type %d", (int)type);
	}
	kc_free(json);
	if (out == NULL)
		return -ENOMEM;
	*ret = out;
	return 0;
}

int
fieldmanager_fieldset(const struct json_object *obj, const struct fm_schema *schema,
    const char *const *reset, struct json_object **ret, struct kc_status *st)
{
	struct fs set = { 0 }, strip = { 0 }, rs = { 0 };
	struct walk *w;
	int r;

	if (!json_object_is_type(obj, json_type_object))
		return kc_status_set(st, KC_EINVALID, "the object is not a JSON object");
	if ((w = kc_malloc(sizeof(*w))) == NULL)
		return -ENOMEM;
	walk_init(w, schema, false);
	if ((r = to_set(w, obj, &set)) < 0) {
		if (r != -ENOMEM)
			(void)kc_status_set(st, r, "%s", w->err);
		goto out;
	}
	if ((r = fieldset_from_paths(strip_paths, &strip)) < 0 ||
	    (r = fieldset_from_paths(reset, &rs)) < 0 ||
	    (r = fieldset_apply_op(OP_DIFF, &set, &strip)) < 0 ||
	    (r = fieldset_apply_op(OP_RDIFF, &set, &rs)) < 0)
		goto out;
	r = fieldset_to_json(&set, false, ret);
out:
	kc_free(w);
	fieldset_free(&set);
	fieldset_free(&strip);
	fieldset_free(&rs);
	return r;
}

static int
decode_set(const struct json_object *o, struct fs *out, struct kc_status *st)
{
	char err[ERR_MAX];
	int r;

	memset(out, 0, sizeof(*out));
	if ((r = fieldset_decode(o, NULL, out, err, sizeof(err))) < 0 && r != -ENOMEM)
		return kc_status_set(st, r, "invalid FieldsV1: %s", err);
	return r;
}

static int
public_op(int op, const struct json_object *a, const struct json_object *b,
    struct json_object **ret, struct kc_status *st)
{
	struct fs x = { 0 }, y = { 0 }, out = { 0 };
	int r;

	if ((r = decode_set(a, &x, st)) < 0 || (r = decode_set(b, &y, st)) < 0 ||
	    (r = fieldset_op(op, &x, &y, &out)) < 0)
		goto out;
	r = fieldset_to_json(&out, false, ret);
out:
	fieldset_free(&x);
	fieldset_free(&y);
	fieldset_free(&out);
	return r;
}

int
fieldmanager_fieldset_union(const struct json_object *a, const struct json_object *b,
    struct json_object **ret, struct kc_status *st)
{
	return public_op(OP_UNION, a, b, ret, st);
}

int
fieldmanager_fieldset_intersection(const struct json_object *a,
    const struct json_object *b, struct json_object **ret, struct kc_status *st)
{
	return public_op(OP_INTERSECT, a, b, ret, st);
}

int
fieldmanager_fieldset_difference(const struct json_object *a,
    const struct json_object *b, struct json_object **ret, struct kc_status *st)
{
	return public_op(OP_DIFF, a, b, ret, st);
}

int
fieldmanager_fieldset_empty(const struct json_object *a, struct kc_status *st)
{
	struct fs x;
	int r;

	if ((r = decode_set(a, &x, st)) < 0)
		return r;
	r = fieldset_empty(&x) ? 1 : 0;
	fieldset_free(&x);
	return r;
}

bool
fieldmanager_smp_lookup(const void *arg, const char *path, struct fm_type *ret)
{
	struct kc_smp_field f;

	memset(ret, 0, sizeof(*ret));
	if (!kc_smp_lookup(arg, path, &f) || (f.strategy & KC_SMP_MERGE) == 0)
		return false;
	if (f.merge_key == NULL) {
		ret->kind = FM_SET;
		return true;
	}
	ret->kind = FM_MAP_LIST;
	ret->nkeys = 1;
	ret->keys[0] = f.merge_key;
	if (strcmp(f.merge_key, "containerPort") == 0 ||
	    (strcmp(f.merge_key, "port") == 0 && strcmp(path, "spec.ports") == 0)) {
		ret->nkeys = 2;
		ret->keys[1] = "protocol";
		ret->key_defaults[1] = "\"TCP\"";
	}
	return true;
}

/* Whether a client's managedFields ask for a reset: [] or [{}]. */
static bool
is_reset(const struct json_object *obj)
{
	static const char *const fields[] = {
		"manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1",
		"subresource",
	};
	struct json_object *mf = kc_json_get(obj, "metadata", "managedFields"), *item, *v;

	if (!json_object_is_type(mf, json_type_array) || jlen(mf) > 1)
		return false;
	if (jlen(mf) == 0)
		return true;
	item = json_object_array_get_idx(mf, 0);
	if (!json_object_is_type(item, json_type_object))
		return false;
	for (size_t i = 0; i < KC_ARRAY_SIZE(fields); i++) {
		if (!jget(item, fields[i], &v) || v == NULL)
			continue;
		if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) != 0)
			return false;
	}
	return true;
}

/* The entries an update starts from (decode errors: none). */
static int
update_base(const struct fm_update *u, struct managed *m)
{
	char err[ERR_MAX];
	int r;

	if ((u->subresource == NULL || *u->subresource == '\0')) {
		if (is_reset(u->obj))
			return 0;
		r = managed_decode(kc_json_get(u->obj, "metadata", "managedFields"), u->cache,
		    m, err, sizeof(err));
		if (r == -ENOMEM)
			return r;
		if (r == 0 && m->n > 0)
			return 0;
		managed_free(m);
	}
	r = managed_decode(kc_json_get(u->old, "metadata", "managedFields"), u->cache, m,
	    err, sizeof(err));
	return r == -ENOMEM ? r : 0;
}

/* The object a create starts from: 'empty', or {}. */
static int
empty_object(const struct json_object *empty, struct json_object **ret)
{
	if (json_object_is_type(empty, json_type_object))
		return jcopy(empty, ret);
	return (*ret = json_object_new_object()) == NULL ? -ENOMEM : 0;
}

int
fieldmanager_update(const struct fm_update *u, struct json_object **ret, struct kc_status *st)
{
	struct json_object *live = NULL, *obj = NULL;
	struct managed m = { 0 };
	const char *manager, *api;
	struct ctx x;
	int r;

	if (u == NULL || !json_object_is_type(u->obj, json_type_object) ||
	    (u->old != NULL && !json_object_is_type(u->old, json_type_object)))
		return kc_status_set(st, KC_EINVALID, "the object is not a JSON object");
	manager = u->manager != NULL && *u->manager != '\0' ? u->manager : "unknown";
	api = u->api_version;
	if (api == NULL && (api = kc_json_str(u->obj, "apiVersion")) == NULL)
		api = "";
	if ((r = ctx_init(&x, u->schema, u->reset, api, u->subresource, u->now)) < 0)
		return r;
	x.convert = u->convert;
	x.convert_arg = u->convert_arg;
	if ((r = update_base(u, &m)) < 0 ||
	    (r = (u->old != NULL ? view_without_managed(u->old, &live) :
	    empty_object(u->empty, &live))) < 0 ||
	    (r = view_without_managed(u->obj, &obj)) < 0)
		goto out;
	if ((r = versions_live(&x, live, &m, st)) < 0)
		goto out;
	if ((r = record_update(&x, live, obj, &m, manager)) == KC_EINVALID) {
		/* UpdateNoErrors: an object that cannot be typed loses its entries. */
		managed_free(&m);
	} else if (r < 0) {
		if (r != -ENOMEM)
			(void)kc_status_set(st, r, "%s", x.err);
		goto out;
	}
	if ((r = cap_managers(&m)) < 0 || (r = managed_encode(&m, u->cache, obj)) < 0)
		goto out;
	*ret = obj;
	obj = NULL;
out:
	if (live != NULL)
		json_object_put(live);
	if (obj != NULL)
		json_object_put(obj);
	managed_free(&m);
	ctx_free(&x);
	return r;
}

int
fieldmanager_compact(struct json_object *obj)
{
	struct json_object *mf = kc_json_get(obj, "metadata", "managedFields");
	struct json_object *item, *fv, *raw;
	size_t n = json_object_is_type(mf, json_type_array) ? jlen(mf) : 0;
	int r;

	for (size_t i = 0; i < n; i++) {
		item = json_object_array_get_idx(mf, i);
		if (!json_object_is_type(item, json_type_object) || !jget(item, "fieldsV1", &fv) ||
		    !json_object_is_type(fv, json_type_object))
			continue;
		if ((r = fieldset_tree_to_raw(fv, &raw)) < 0 ||
		    (r = jput(item, "fieldsV1", raw)) < 0)
			return r;
	}
	return 0;
}

/* The first checks of an apply: body, kind and version, managedFields. */
static int
apply_check(const struct fm_apply *a, const char *api, struct json_object **ret_details,
    struct kc_status *st)
{
	const char *cfg_api, *cfg_kind;
	struct json_object *mf = NULL;
	char gvk[DISPLAY_MAX];
	struct kc_sbuf b;
	int r;

	if (!json_object_is_type(a->config, json_type_object))
		return fail(st, KC_EBADREQUEST, 400, "BadRequest",
		    "the apply patch must be an object");
	if (a->live != NULL && !json_object_is_type(a->live, json_type_object))
		return kc_status_set(st, KC_EINVALID, "the live object is not a JSON object");
	if ((r = fieldmanager_validate_options("PatchOptions", true, a->manager, false,
	    ret_details, st)) < 0)
		return r;
	cfg_api = kc_json_str(a->config, "apiVersion");
	cfg_kind = kc_json_str(a->config, "kind");
	if (a->kind != NULL && (cfg_api == NULL || strcmp(cfg_api, api) != 0 ||
	    cfg_kind == NULL || strcmp(cfg_kind, a->kind) != 0)) {
		kc_sbuf_init(&b, gvk, sizeof(gvk));
		sb_gvk(&b, cfg_api != NULL ? cfg_api : "", cfg_kind != NULL ? cfg_kind : "");
		return fail(st, KC_EBADREQUEST, 400, "BadRequest", "invalid object type: %s",
		    gvk);
	}
	if (jget(kc_json_obj_of(a->config, "metadata"), "managedFields", &mf) && mf != NULL)
		return fail(st, KC_EBADREQUEST, 400, "BadRequest",
		    "metadata.managedFields must be nil");
	return 0;
}

/* Typing errors of the body and of the live object: 500, as upstream. */
static int
apply_types(struct ctx *x, const struct json_object *config, const struct json_object *live,
    struct kc_status *st)
{
	char who[DISPLAY_MAX];
	struct fs set = { 0 };
	struct kc_sbuf b;
	struct walk *w;
	int r;

	if ((w = kc_malloc(sizeof(*w))) == NULL)
		return -ENOMEM;
	walk_init(w, x->schema, false);
	if ((r = to_set(w, config, &set)) == KC_ETOOLARGE)
		(void)kc_status_set(st, r, "%s", w->err);
	else if (r < 0 && r != -ENOMEM) {
		kc_sbuf_init(&b, who, sizeof(who));
		sb_gvknn(&b, config);
		r = fail(st, KC_EINTERNAL, 500, "", "failed to create typed patch object "
		    "(%s): %s", who, w->err);
	}
	fieldset_free(&set);
	if (r == 0 && live != NULL) {
		walk_init(w, x->schema, true);
		if ((r = to_set(w, live, &set)) == KC_ETOOLARGE)
			(void)kc_status_set(st, r, "%s", w->err);
		else if (r < 0 && r != -ENOMEM) {
			kc_sbuf_init(&b, who, sizeof(who));
			sb_gvknn(&b, live);
			r = fail(st, KC_EINTERNAL, 500, "", "failed to create typed live object "
			    "(%s): %s", who, w->err);
		}
		fieldset_free(&set);
	}
	kc_free(w);
	return r;
}

int
fieldmanager_apply(const struct fm_apply *a, struct json_object **ret,
    struct json_object **ret_details, struct kc_status *st)
{
	struct json_object *live = NULL, *obj = NULL, *empty = NULL;
	struct managed m = { 0 }, m2 = { 0 };
	struct conflicts cf = { 0 };
	struct fs allowed = { 0 };
	char err[ERR_MAX];
	const char *api;
	bool changed = false, ok;
	struct ctx x;
	int r;

	if (a == NULL)
		return kc_status_set(st, KC_EINVALID, "no apply");
	api = a->api_version;
	if (api == NULL && (api = kc_json_str(a->config, "apiVersion")) == NULL)
		api = "";
	if ((r = apply_check(a, api, ret_details, st)) < 0)
		return r;
	if ((r = ctx_init(&x, a->schema, a->reset, api, a->subresource, a->now)) < 0)
		return r;
	x.convert = a->convert;
	x.convert_arg = a->convert_arg;
	if ((r = apply_types(&x, a->config, a->live, st)) < 0)
		goto out;
	if (a->live != NULL) {
		r = managed_decode(kc_json_get(a->live, "metadata", "managedFields"), a->cache,
		    &m, err, sizeof(err));
		if (r < 0) {
			if (r != -ENOMEM)
				r = fail(st, KC_EINTERNAL, 500, "",
				    "failed to decode managed fields: %s", err);
			goto out;
		}
		if ((r = copy_without_managed(a->live, &live)) < 0)
			goto out;
	} else if ((r = empty_object(a->empty, &live)) < 0)
		goto out;
	if (a->live != NULL && m.n == 0) {
		/* skipNonAppliedManager: what was there belongs to someone. */
		if ((r = empty_object(a->empty, &empty)) < 0)
			goto out;
		if ((r = record_update(&x, empty, live, &m, "before-first-apply")) < 0 ||
		    (r = cap_managers(&m)) < 0) {
			if (r != -ENOMEM)
				r = fail(st, KC_EINTERNAL, 500, "", "failed to create manager "
				    "for existing fields: %s", x.err);
			goto out;
		}
	}
	if ((r = versions_live(&x, live, &m, st)) < 0 || (r = managed_copy(&m2, &m)) < 0)
		goto out;
	r = apply_core(&x, live, a->config, &m2, a->manager, a->force, &obj, &changed, &cf);
	if (r == KC_ECONFLICT && strcmp(a->manager, "kubectl") == 0) {
		if ((r = last_applied_allowed(&x, live, &allowed, &ok)) < 0)
			goto out;
		r = KC_ECONFLICT;
		for (size_t i = 0; ok && i < cf.n; i++)
			if ((r = fieldset_apply_op(OP_DIFF, &cf.v[i].set, &allowed)) < 0)
				goto out;
		for (size_t i = 0; ok && i < cf.n; i++)
			ok = fieldset_empty(&cf.v[i].set);
		if (ok) {
			conflicts_free(&cf);
			managed_free(&m2);
			if ((r = managed_copy(&m2, &m)) < 0)
				goto out;
			r = apply_core(&x, live, a->config, &m2, a->manager, true, &obj,
			    &changed, &cf);
		} else {
			/* Only the conflicts the annotation does not explain. */
			size_t k = 0;

			for (size_t i = 0; i < cf.n; i++) {
				if (fieldset_empty(&cf.v[i].set))
					fieldset_free(&cf.v[i].set);
				else
					cf.v[k++] = cf.v[i];
			}
			cf.n = k;
			r = KC_ECONFLICT;
		}
	}
	if (r == KC_ECONFLICT) {
		r = conflict_error(&m2, &cf, ret_details, st);
		goto out;
	}
	if (r < 0) {
		if (r == KC_EINVALID)
			r = fail(st, KC_EINTERNAL, 500, "", "%s", x.err);
		else if (r != -ENOMEM && r != -EINPROGRESS)
			(void)kc_status_set(st, r, "%s", x.err);
		goto out;
	}
	if (!changed) {
		json_object_put(obj);
		obj = live;
		live = NULL;
	}
	if ((r = cap_managers(&m2)) < 0 ||
	    (strcmp(a->manager, "kubectl") == 0 && (r = update_last_applied(obj,
	    a->config)) < 0) ||
	    (r = managed_encode(&m2, a->cache, obj)) < 0)
		goto out;
	*ret = obj;
	obj = NULL;
out:
	if (live != NULL)
		json_object_put(live);
	if (obj != NULL)
		json_object_put(obj);
	if (empty != NULL)
		json_object_put(empty);
	fieldset_free(&allowed);
	conflicts_free(&cf);
	managed_free(&m);
	managed_free(&m2);
	ctx_free(&x);
	return r;
}


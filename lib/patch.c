/*
 * patch.c: JSON merge patch, JSON patch and strategic merge patch.
 *
 * The API server emulator serves PATCH with these, and the controller
 * builds its own patches with them, so both ends of every round trip run
 * this code. It is tested against the RFCs' own examples and against the
 * behaviour of k8s.io/apimachinery/pkg/util/strategicpatch.
 *
 * Model. Inputs are read-only, always: a document may be a frozen tree
 * shared between threads, and json-c writes to an object even to take a
 * reference or to print it. So nothing here calls json_object_get() or
 * json_object_to_json_string() on an input. The merge patch builds its
 * result fresh, copying untouched subtrees; the JSON patch and the
 * strategic merge patch deep-copy the document once and then edit that
 * private copy, where taking references is fine. A failure frees the copy,
 * which makes every operation atomic.
 *
 * Bounds. Documents and patches deeper than KC_PATCH_DEPTH_MAX are
 * refused up front, so every recursion below (ours and json-c's copy and
 * comparison) is bounded by that. A JSON patch has at most
 * KC_PATCH_OPS_MAX operations, pointers of at most KC_PATCH_POINTER_MAX
 * bytes, may not nest the document deeper than the limit, and may copy at
 * most PATCH_COPY_NODES_MAX values in all (copy doubles a document per
 * operation otherwise). Strategic merges match list elements pairwise, so
 * merged lists are capped at KC_PATCH_LIST_MAX elements.
 *
 * Strategic merge patch. kc_smp_apply() follows mergeMap()/mergeSlice()
 * of the upstream package with MergeParallelList and IgnoreUnmatchedNulls
 * set, as the API server calls it:
 *
 *	1. "$patch" in a map: replace (the map becomes the rest of the patch),
 *	   delete (it becomes {}), merge (go on);
 *	2. "$retainKeys": every patch member must be listed; unlisted members
 *	   of the document are dropped;
 *	3. "$setElementOrder/<list>": merge that list now, then order it: the
 *	   listed elements in the given order, the others where they were;
 *	4. every other member: null deletes, "$deleteFromPrimitiveList/<list>"
 *	   removes values, maps recurse, merge lists merge, the rest replaces.
 *
 * A merged list keeps the patch's order for the elements the patch names
 * and the document's order for the others, interleaving the two as
 * upstream's mergeSortedSlice() does. Values new to the document pass
 * through the same merge against nothing, so no directive and no null
 * member is ever stored (upstream stores some verbatim).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <kc/alloc.h>
#include <kc/json.h>
#include <kc/patch.h>
#include <kc/str.h>

#define PATCH_COPY_NODES_MAX	(1u << 20)	/* values copied by one JSON patch */
#define SMP_PATH_MAX		256		/* dotted field path */

#define SMP_DIRECTIVE		"$patch"
#define SMP_RETAIN_KEYS		"$retainKeys"
#define SMP_SET_ORDER		"$setElementOrder"
#define SMP_DELETE_FROM		"$deleteFromPrimitiveList"

/* ------------------------------------------------------------------------
 * Values
 */

enum vkind { VK_NULL, VK_BOOL, VK_NUM, VK_STR, VK_OBJ, VK_ARR };

/* For the json-c readers that lack a const qualifier but only read. */
static struct json_object *
mut(const struct json_object *o)
{
	return (struct json_object *)(uintptr_t)o;
}

static enum vkind
kind_of(const struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_boolean:
		return VK_BOOL;
	case json_type_int:
	case json_type_double:
		return VK_NUM;
	case json_type_string:
		return VK_STR;
	case json_type_object:
		return VK_OBJ;
	case json_type_array:
		return VK_ARR;
	case json_type_null:
	default:
		return VK_NULL;
	}
}

static bool
is_obj(const struct json_object *v)
{
	return json_object_is_type(v, json_type_object);
}

static bool
is_arr(const struct json_object *v)
{
	return json_object_is_type(v, json_type_array);
}

/* The string of a string value, NULL for anything else. */
static const char *
str_of(const struct json_object *v)
{
	return json_object_is_type(v, json_type_string) ?
	    json_object_get_string(mut(v)) : NULL;
}

static bool
has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* True when 'v' nests no deeper than KC_PATCH_DEPTH_MAX - depth levels. */
static bool
depth_ok(const struct json_object *v, unsigned depth)
{
	size_t n;

	if (depth > KC_PATCH_DEPTH_MAX)
		return false;
	if (is_obj(v)) {
		json_object_object_foreach(mut(v), k, child) {
			(void)k;
			if (!depth_ok(child, depth + 1))
				return false;
		}
	} else if (is_arr(v)) {
		n = json_object_array_length(v);
		for (size_t i = 0; i < n; i++)
			if (!depth_ok(json_object_array_get_idx(v, i), depth + 1))
				return false;
	}
	return true;
}

/* Levels of 'v': 0 for a scalar, 1 for a flat container; stops past 'max'. */
static unsigned
depth_of(const struct json_object *v, unsigned max)
{
	unsigned d = 0, c;
	size_t n;

	if (max == 0)
		return is_obj(v) || is_arr(v) ? 1 : 0;
	if (is_obj(v)) {
		d = 1;
		json_object_object_foreach(mut(v), k, child) {
			(void)k;
			if ((c = 1 + depth_of(child, max - 1)) > d)
				d = c;
			if (d > max)
				break;
		}
	} else if (is_arr(v)) {
		d = 1;
		n = json_object_array_length(v);
		for (size_t i = 0; i < n && d <= max; i++)
			if ((c = 1 + depth_of(json_object_array_get_idx(v, i), max - 1)) > d)
				d = c;
	}
	return d;
}

/* Values in 'v', counting stops once past 'max'. */
static size_t
count_values(const struct json_object *v, size_t max)
{
	size_t total = 1, n;

	if (is_obj(v)) {
		json_object_object_foreach(mut(v), k, child) {
			(void)k;
			if (total > max)
				break;
			total += count_values(child, max - total);
		}
	} else if (is_arr(v)) {
		n = json_object_array_length(v);
		for (size_t i = 0; i < n && total <= max; i++)
			total += count_values(json_object_array_get_idx(v, i), max - total);
	}
	return total;
}

/* A deep copy of 'v' (NULL, JSON null, copies to NULL). 0 or -ENOMEM. */
static int
copy_value(const struct json_object *v, struct json_object **ret)
{
	struct json_object *c = NULL;

	if (v != NULL && (c = kc_json_copy(v)) == NULL)
		return -ENOMEM;
	*ret = c;
	return 0;
}

static int
check_depth(const struct json_object *v, const char *what, struct kc_status *st)
{
	if (!depth_ok(v, 0))
		return kc_status_set(st, KC_ETOOLARGE, "%s is nested deeper than %d levels",
		    what, KC_PATCH_DEPTH_MAX);
	return 0;
}

int
kc_patch_parse(const char *text, size_t len, struct json_object **ret,
    struct kc_status *st)
{
	if (len > KC_PATCH_SIZE_MAX)
		return kc_status_set(st, KC_ETOOLARGE,
		    "patch of %zu bytes is larger than the limit of %u bytes",
		    len, KC_PATCH_SIZE_MAX);
	return kc_json_parse(text, len, ret, st);
}

/* ------------------------------------------------------------------------
 * JSON merge patch (RFC 7386)
 */

/* MergePatch(target, patch) of RFC 7386, section 2, built as a new tree. */
static int
merge_apply(const struct json_object *target, const struct json_object *patch,
    struct json_object **ret)
{
	struct json_object *res, *nv = NULL;
	int r;

	if (!is_obj(patch))
		return copy_value(patch, ret);
	if ((res = json_object_new_object()) == NULL)
		return -ENOMEM;
	if (is_obj(target)) {
		json_object_object_foreach(mut(target), tk, tv) {
			struct json_object *pv;

			if (!json_object_object_get_ex(patch, tk, &pv))
				r = copy_value(tv, &nv);
			else if (pv == NULL)
				continue;
			else
				r = merge_apply(tv, pv, &nv);
			if (r < 0 || (r = kc_json_put_nullable(res, tk, nv)) < 0)
				goto fail;
		}
	}
	{
		json_object_object_foreach(mut(patch), pk, pv) {
			if (pv == NULL || (is_obj(target) &&
			    json_object_object_get_ex(target, pk, NULL)))
				continue;
			if ((r = merge_apply(NULL, pv, &nv)) < 0 ||
			    (r = kc_json_put_nullable(res, pk, nv)) < 0)
				goto fail;
		}
	}
	*ret = res;
	return 0;
fail:
	json_object_put(res);
	return r;
}

int
kc_merge_patch_apply(const struct json_object *doc, const struct json_object *patch,
    struct json_object **ret, struct kc_status *st)
{
	struct json_object *res;
	int r;

	if ((r = check_depth(doc, "the document", st)) < 0 ||
	    (r = check_depth(patch, "the merge patch", st)) < 0)
		return r;
	if ((r = merge_apply(doc, patch, &res)) < 0)
		return kc_status_set(st, r, "merge patch: out of memory");
	*ret = res;
	return 0;
}

/*
 * The members that turn object 'o' (NULL or not an object: {}) into
 * object 'm', into 'res'. Values compare exactly (1 and 1.0 differ), so
 * applying the result gives 'm', though maybe without its null members.
 */
static int
merge_diff(const struct json_object *o, const struct json_object *m,
    struct json_object *res)
{
	struct json_object *sub, *nv;
	int r;

	if (is_obj(o)) {
		json_object_object_foreach(mut(o), ok, ov) {
			struct json_object *mv = NULL;

			(void)ov;
			if (json_object_object_get_ex(m, ok, &mv) && mv != NULL)
				continue;
			if ((r = kc_json_put_null(res, ok)) < 0)
				return r;
		}
	}
	{
		json_object_object_foreach(mut(m), mk, mv) {
			struct json_object *ov = NULL;
			bool have;

			if (mv == NULL)
				continue;
			have = is_obj(o) && json_object_object_get_ex(o, mk, &ov);
			if (is_obj(mv)) {
				if (have && kc_json_equal(ov, mv))
					continue;
				if ((sub = json_object_new_object()) == NULL)
					return -ENOMEM;
				if ((r = merge_diff(have ? ov : NULL, mv, sub)) < 0) {
					json_object_put(sub);
					return r;
				}
				/* An empty diff of two objects is no change. */
				if (have && is_obj(ov) && json_object_object_length(sub) == 0)
					json_object_put(sub);
				else if ((r = kc_json_put_nullable(res, mk, sub)) < 0)
					return r;
			} else if (!have || !kc_json_equal(ov, mv)) {
				if ((r = copy_value(mv, &nv)) < 0 ||
				    (r = kc_json_put_nullable(res, mk, nv)) < 0)
					return r;
			}
		}
	}
	return 0;
}

int
kc_merge_patch_create(const struct json_object *orig, const struct json_object *mod,
    struct json_object **ret, struct kc_status *st)
{
	struct json_object *res;
	int r;

	if ((r = check_depth(orig, "the original document", st)) < 0 ||
	    (r = check_depth(mod, "the modified document", st)) < 0)
		return r;
	if (!is_obj(mod)) {
		if ((r = copy_value(mod, &res)) < 0)
			return kc_status_set(st, r, "merge patch: out of memory");
		*ret = res;
		return 0;
	}
	if ((res = json_object_new_object()) == NULL)
		return kc_status_set(st, -ENOMEM, "merge patch: out of memory");
	if ((r = merge_diff(orig, mod, res)) < 0) {
		json_object_put(res);
		return kc_status_set(st, r, "merge patch: out of memory");
	}
	*ret = res;
	return 0;
}

/* ------------------------------------------------------------------------
 * JSON Pointer (RFC 6901)
 */

struct jptr {
	char	**tok;		/* unescaped reference tokens */
	size_t	  n;
};

static void
jptr_free(struct jptr *p)
{
	p->tok = kc_free(p->tok);
	p->n = 0;
}

/*
 * Splits and unescapes a pointer into one allocation: the token array,
 * then the tokens. KC_EPARSE or KC_ETOOLARGE with a reason in '*why'.
 */
static int
jptr_parse(const char *s, size_t len, struct jptr *ret, const char **why)
{
	size_t n = 0, i = 0, k = 0;
	char **tok, *w;

	if (len > KC_PATCH_POINTER_MAX) {
		*why = "the pointer is too long";
		return KC_ETOOLARGE;
	}
	if (len > 0 && s[0] != '/') {
		*why = "a pointer must be empty or start with \"/\"";
		return KC_EPARSE;
	}
	if (memchr(s, '\0', len) != NULL) {
		*why = "the pointer contains a NUL character";
		return KC_EPARSE;
	}
	for (i = 0; i < len; i++)
		if (s[i] == '/')
			n++;
	/* n pointers, then at most len - n characters plus n NULs. */
	if ((tok = kc_malloc(n * sizeof(*tok) + len + 1)) == NULL) {
		*why = "out of memory";
		return -ENOMEM;
	}
	w = (char *)(tok + n);
	for (i = 0; i < len;) {
		tok[k++] = w;
		for (i++; i < len && s[i] != '/'; i++) {
			if (s[i] != '~') {
				*w++ = s[i];
				continue;
			}
			if (i + 1 < len && (s[i + 1] == '0' || s[i + 1] == '1')) {
				*w++ = s[i + 1] == '0' ? '~' : '/';
				i++;
				continue;
			}
			kc_free(tok);
			*why = "\"~\" must be followed by \"0\" or \"1\"";
			return KC_EPARSE;
		}
		*w++ = '\0';
	}
	ret->tok = tok;
	ret->n = n;
	return 0;
}

/*
 * The index 'tok' names in array 'a': decimal digits without a leading
 * zero, less than the length, or equal to it (or "-") when 'end' allows
 * the append position.
 */
static int
array_index(const struct json_object *a, const char *tok, bool end, size_t *ret,
    char *why, size_t whylen)
{
	size_t len = json_object_array_length(a);
	uint64_t v;

	if (strcmp(tok, "-") == 0) {
		if (end) {
			*ret = len;
			return 0;
		}
		snprintf(why, whylen, "\"-\" names no element of the array");
		return KC_EINVALID;
	}
	if (tok[0] == '\0' || tok[strspn(tok, "0123456789")] != '\0' ||
	    (tok[0] == '0' && tok[1] != '\0')) {
		snprintf(why, whylen, "\"%.64s\" is not an array index", tok);
		return KC_EINVALID;
	}
	if (kc_parse_u64(tok, &v) < 0 || v > len || (v == len && !end)) {
		snprintf(why, whylen, "index %.32s is out of range (length %zu)", tok, len);
		return KC_EINVALID;
	}
	*ret = (size_t)v;
	return 0;
}

/* Follows the first 'n' tokens of 'p' from 'cur'. */
static int
jptr_walk(const struct json_object *cur, const struct jptr *p, size_t n,
    struct json_object **ret, char *why, size_t whylen)
{
	struct json_object *next;
	size_t idx;
	int r;

	for (size_t i = 0; i < n; i++) {
		if (is_obj(cur)) {
			if (!json_object_object_get_ex(cur, p->tok[i], &next)) {
				snprintf(why, whylen, "member \"%.64s\" does not exist",
				    p->tok[i]);
				return KC_EINVALID;
			}
		} else if (is_arr(cur)) {
			if ((r = array_index(cur, p->tok[i], false, &idx, why, whylen)) < 0)
				return r;
			next = json_object_array_get_idx(cur, idx);
		} else {
			snprintf(why, whylen, "\"%.64s\" is looked up in a value that is "
			    "not an object or array", p->tok[i]);
			return KC_EINVALID;
		}
		cur = next;
	}
	*ret = mut(cur);
	return 0;
}

int
kc_json_pointer_get(const struct json_object *doc, const char *ptr,
    struct json_object **ret, struct kc_status *st)
{
	struct jptr p = { 0 };
	struct json_object *v;
	const char *why = "";
	char msg[256];
	int r;

	if ((r = jptr_parse(ptr, strlen(ptr), &p, &why)) < 0)
		return kc_status_set(st, r, "pointer %.256s: %s", ptr, why);
	r = jptr_walk(doc, &p, p.n, &v, msg, sizeof(msg));
	jptr_free(&p);
	if (r < 0)
		return kc_status_set(st, KC_ENOTFOUND, "pointer %.256s: %s", ptr, msg);
	*ret = v;
	return 0;
}

/* ------------------------------------------------------------------------
 * JSON patch (RFC 6902)
 */

enum jp_code { JP_ADD, JP_REMOVE, JP_REPLACE, JP_MOVE, JP_COPY, JP_TEST };

static const char *const jp_names[] = {
	[JP_ADD] = "add",
	[JP_REMOVE] = "remove",
	[JP_REPLACE] = "replace",
	[JP_MOVE] = "move",
	[JP_COPY] = "copy",
	[JP_TEST] = "test",
};

struct jp_op {
	enum jp_code			 code;
	const char			*path;
	size_t				 pathlen;
	const char			*from;		/* move, copy */
	size_t				 fromlen;
	const struct json_object	*value;		/* add, replace, test */
};

/* A pointer for a message: the empty one (the whole document) shows as "". */
static const char *
ptr_disp(const char *p)
{
	return p[0] != '\0' ? p : "\"\"";
}

/* Reads one operation; KC_EPARSE when it is not a well-formed one. */
static int
jp_decode(const struct json_object *e, size_t i, struct jp_op *op, struct kc_status *st)
{
	struct json_object *v;
	const char *name, *why;
	struct jptr p;
	size_t c;
	int r;

	if (!is_obj(e))
		return kc_status_set(st, KC_EPARSE, "op %zu: not a JSON object", i);
	if (!json_object_object_get_ex(e, "op", &v))
		return kc_status_set(st, KC_EPARSE, "op %zu: missing \"op\"", i);
	if ((name = str_of(v)) == NULL)
		return kc_status_set(st, KC_EPARSE, "op %zu: \"op\" is not a string", i);
	for (c = 0; c < KC_ARRAY_SIZE(jp_names); c++)
		if (strcmp(name, jp_names[c]) == 0)
			break;
	if (c == KC_ARRAY_SIZE(jp_names))
		return kc_status_set(st, KC_EPARSE, "op %zu: unknown op \"%.64s\"", i, name);
	op->code = (enum jp_code)c;
	if (!json_object_object_get_ex(e, "path", &v))
		return kc_status_set(st, KC_EPARSE, "op %zu (%s): missing \"path\"", i, name);
	if ((op->path = str_of(v)) == NULL)
		return kc_status_set(st, KC_EPARSE, "op %zu (%s): \"path\" is not a string",
		    i, name);
	op->pathlen = (size_t)json_object_get_string_len(v);
	if ((r = jptr_parse(op->path, op->pathlen, &p, &why)) < 0)
		return kc_status_set(st, r, "op %zu (%s) at %.256s: %s", i, name,
		    ptr_disp(op->path), why);
	jptr_free(&p);
	op->from = NULL;
	op->fromlen = 0;
	if (op->code == JP_MOVE || op->code == JP_COPY) {
		if (!json_object_object_get_ex(e, "from", &v))
			return kc_status_set(st, KC_EPARSE, "op %zu (%s) at %.256s: missing "
			    "\"from\"", i, name, ptr_disp(op->path));
		if ((op->from = str_of(v)) == NULL)
			return kc_status_set(st, KC_EPARSE, "op %zu (%s) at %.256s: \"from\" "
			    "is not a string", i, name, ptr_disp(op->path));
		op->fromlen = (size_t)json_object_get_string_len(v);
		if ((r = jptr_parse(op->from, op->fromlen, &p, &why)) < 0)
			return kc_status_set(st, r, "op %zu (%s) at %.256s: from %.256s: %s",
			    i, name, ptr_disp(op->path), ptr_disp(op->from), why);
		jptr_free(&p);
	}
	op->value = NULL;
	if (op->code == JP_ADD || op->code == JP_REPLACE || op->code == JP_TEST) {
		if (!json_object_object_get_ex(e, "value", &v))
			return kc_status_set(st, KC_EPARSE, "op %zu (%s) at %.256s: missing "
			    "\"value\"", i, name, ptr_disp(op->path));
		op->value = v;
	}
	return 0;
}

/*
 * Inserts 'v' (owned) at 'idx' of array 'a' (json-c 0.16 has no insert):
 * the tail is taken out, 'v' appended, the tail put back.
 */
static int
array_insert(struct json_object *a, size_t idx, struct json_object *v)
{
	size_t n = json_object_array_length(a), tail = n - idx, i;
	struct json_object **hold;
	int r = 0;

	if (tail == 0)
		return kc_json_append_nullable(a, v);
	if ((hold = kc_reallocarray(NULL, tail, sizeof(*hold))) == NULL) {
		json_object_put(v);
		return -ENOMEM;
	}
	for (i = 0; i < tail; i++)
		hold[i] = json_object_get(json_object_array_get_idx(a, idx + i));
	(void)json_object_array_del_idx(a, idx, tail);
	r = kc_json_append_nullable(a, v);
	for (i = 0; i < tail; i++) {
		if (r < 0)
			json_object_put(hold[i]);
		else
			r = kc_json_append_nullable(a, hold[i]);
	}
	kc_free(hold);
	return r;
}

/* The value at 'p' in the document, borrowed. */
static int
jp_get(struct json_object *root, const struct jptr *p, struct json_object **ret,
    char *why, size_t whylen)
{
	struct json_object *parent, *v;
	size_t idx;
	int r;

	if (p->n == 0) {
		*ret = root;
		return 0;
	}
	if ((r = jptr_walk(root, p, p->n - 1, &parent, why, whylen)) < 0)
		return r;
	if (is_obj(parent)) {
		if (!json_object_object_get_ex(parent, p->tok[p->n - 1], &v)) {
			snprintf(why, whylen, "member \"%.64s\" does not exist",
			    p->tok[p->n - 1]);
			return KC_EINVALID;
		}
		*ret = v;
		return 0;
	}
	if (is_arr(parent)) {
		if ((r = array_index(parent, p->tok[p->n - 1], false, &idx, why, whylen)) < 0)
			return r;
		*ret = json_object_array_get_idx(parent, idx);
		return 0;
	}
	snprintf(why, whylen, "the parent is not an object or array");
	return KC_EINVALID;
}

/*
 * Puts 'v' (owned) at 'p': adds a member or inserts an element ('insert'),
 * or replaces an existing member or element (!'insert').
 */
static int
jp_put(struct json_object **rootp, const struct jptr *p, struct json_object *v,
    bool insert, char *why, size_t whylen)
{
	struct json_object *parent;
	const char *last;
	size_t idx;
	int r;

	if (p->n == 0) {
		json_object_put(*rootp);
		*rootp = v;
		return 0;
	}
	last = p->tok[p->n - 1];
	if ((r = jptr_walk(*rootp, p, p->n - 1, &parent, why, whylen)) < 0)
		goto fail;
	if (is_obj(parent)) {
		if (!insert && !json_object_object_get_ex(parent, last, NULL)) {
			snprintf(why, whylen, "member \"%.64s\" does not exist", last);
			r = KC_EINVALID;
			goto fail;
		}
		return kc_json_put_nullable(parent, last, v);
	}
	if (is_arr(parent)) {
		if ((r = array_index(parent, last, insert, &idx, why, whylen)) < 0)
			goto fail;
		if (insert)
			return array_insert(parent, idx, v);
		if (json_object_array_put_idx(parent, idx, v) < 0) {
			json_object_put(v);
			return -ENOMEM;
		}
		return 0;
	}
	snprintf(why, whylen, "the parent is not an object or array");
	r = KC_EINVALID;
fail:
	json_object_put(v);
	return r;
}

/* Removes the value at 'p'; a new reference to it goes to '*ret' if asked. */
static int
jp_remove(struct json_object *root, const struct jptr *p, struct json_object **ret,
    char *why, size_t whylen)
{
	struct json_object *parent, *v;
	const char *last;
	size_t idx;
	int r;

	if (p->n == 0) {
		snprintf(why, whylen, "the document root cannot be removed");
		return KC_EINVALID;
	}
	last = p->tok[p->n - 1];
	if ((r = jptr_walk(root, p, p->n - 1, &parent, why, whylen)) < 0)
		return r;
	if (is_obj(parent)) {
		if (!json_object_object_get_ex(parent, last, &v)) {
			snprintf(why, whylen, "member \"%.64s\" does not exist", last);
			return KC_EINVALID;
		}
		if (ret != NULL)
			*ret = json_object_get(v);
		json_object_object_del(parent, last);
		return 0;
	}
	if (is_arr(parent)) {
		if ((r = array_index(parent, last, false, &idx, why, whylen)) < 0)
			return r;
		if (ret != NULL)
			*ret = json_object_get(json_object_array_get_idx(parent, idx));
		(void)json_object_array_del_idx(parent, idx, 1);
		return 0;
	}
	snprintf(why, whylen, "the parent is not an object or array");
	return KC_EINVALID;
}

/* A value may be put at 'p' only if the document stays within the depth limit. */
static int
jp_depth_check(const struct jptr *p, const struct json_object *v, char *why, size_t whylen)
{
	if (p->n + depth_of(v, KC_PATCH_DEPTH_MAX) > KC_PATCH_DEPTH_MAX) {
		snprintf(why, whylen, "the document would nest deeper than %d levels",
		    KC_PATCH_DEPTH_MAX);
		return KC_ETOOLARGE;
	}
	return 0;
}

static int
jp_apply_one(struct json_object **rootp, const struct jp_op *op, size_t *copied,
    char *why, size_t whylen)
{
	struct jptr path = { 0 }, from = { 0 };
	struct json_object *v = NULL;
	const char *pwhy = "";
	size_t nv;
	int r;

	if ((r = jptr_parse(op->path, op->pathlen, &path, &pwhy)) < 0 ||
	    (op->from != NULL && (r = jptr_parse(op->from, op->fromlen, &from, &pwhy)) < 0)) {
		snprintf(why, whylen, "%s", pwhy);
		goto out;
	}
	switch (op->code) {
	case JP_ADD:
	case JP_REPLACE:
		if ((r = jp_depth_check(&path, op->value, why, whylen)) < 0)
			break;
		if ((r = copy_value(op->value, &v)) < 0) {
			snprintf(why, whylen, "out of memory");
			break;
		}
		r = jp_put(rootp, &path, v, op->code == JP_ADD, why, whylen);
		break;
	case JP_REMOVE:
		r = jp_remove(*rootp, &path, NULL, why, whylen);
		break;
	case JP_MOVE:
		if (op->pathlen == op->fromlen && memcmp(op->path, op->from, op->pathlen) == 0) {
			r = jp_get(*rootp, &from, &v, why, whylen);
			break;
		}
		if (op->pathlen > op->fromlen && memcmp(op->path, op->from, op->fromlen) == 0 &&
		    op->path[op->fromlen] == '/') {
			snprintf(why, whylen, "\"from\" %.256s is a parent of \"path\": a value "
			    "cannot be moved into its own child", op->from);
			r = KC_EINVALID;
			break;
		}
		if ((r = jp_get(*rootp, &from, &v, why, whylen)) < 0 ||
		    (r = jp_depth_check(&path, v, why, whylen)) < 0)
			break;
		if ((r = jp_remove(*rootp, &from, &v, why, whylen)) < 0)
			break;
		r = jp_put(rootp, &path, v, true, why, whylen);
		break;
	case JP_COPY:
		if ((r = jp_get(*rootp, &from, &v, why, whylen)) < 0 ||
		    (r = jp_depth_check(&path, v, why, whylen)) < 0)
			break;
		nv = count_values(v, PATCH_COPY_NODES_MAX);
		if (nv > PATCH_COPY_NODES_MAX - *copied) {
			snprintf(why, whylen, "the patch copies more than %u values",
			    PATCH_COPY_NODES_MAX);
			r = KC_ETOOLARGE;
			break;
		}
		*copied += nv;
		if ((r = copy_value(v, &v)) < 0) {
			snprintf(why, whylen, "out of memory");
			break;
		}
		r = jp_put(rootp, &path, v, true, why, whylen);
		break;
	case JP_TEST:
		if ((r = jp_get(*rootp, &path, &v, why, whylen)) < 0)
			break;
		if (!kc_json_equal_numeric(v, op->value)) {
			snprintf(why, whylen, "value differs");
			r = KC_EINVALID;
		}
		break;
	}
	if (r == -ENOMEM)
		snprintf(why, whylen, "out of memory");
out:
	jptr_free(&path);
	jptr_free(&from);
	return r;
}

int
kc_json_patch_apply(const struct json_object *doc, const struct json_object *patch,
    struct json_object **ret, struct kc_status *st)
{
	struct json_object *root = NULL;
	struct jp_op *ops = NULL;
	size_t n, copied = 0;
	char why[384];
	int r;

	if (!is_arr(patch))
		return kc_status_set(st, KC_EPARSE, "a JSON patch must be a JSON array");
	if ((n = json_object_array_length(patch)) > KC_PATCH_OPS_MAX)
		return kc_status_set(st, KC_ETOOLARGE, "the allowed maximum operations in a "
		    "JSON patch is %d, got %zu", KC_PATCH_OPS_MAX, n);
	if ((r = check_depth(doc, "the document", st)) < 0 ||
	    (r = check_depth(patch, "the JSON patch", st)) < 0)
		return r;
	if (n > 0 && (ops = kc_reallocarray(NULL, n, sizeof(*ops))) == NULL)
		return kc_status_set(st, -ENOMEM, "JSON patch: out of memory");
	for (size_t i = 0; i < n; i++)
		if ((r = jp_decode(json_object_array_get_idx(patch, i), i, &ops[i], st)) < 0)
			goto out;
	if ((r = copy_value(doc, &root)) < 0) {
		kc_status_set(st, r, "JSON patch: out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if ((r = jp_apply_one(&root, &ops[i], &copied, why, sizeof(why))) < 0) {
			kc_status_set(st, r, "op %zu (%s) at %.256s: %s", i, jp_names[ops[i].code],
			    ptr_disp(ops[i].path), why);
			goto out;
		}
	}
	*ret = root;
	root = NULL;
	r = 0;
out:
	json_object_put(root);
	kc_free(ops);
	return r;
}

/* ------------------------------------------------------------------------
 * Strategic merge patch: schemas
 */

#define META_FIELDS							\
	{ "metadata.ownerReferences", KC_SMP_MERGE, "uid" },		\
	{ "metadata.finalizers", KC_SMP_MERGE, NULL }

#define CONTAINER_FIELDS(c)						\
	{ c, KC_SMP_MERGE, "name" },					\
	{ c ".ports", KC_SMP_MERGE, "containerPort" },			\
	{ c ".env", KC_SMP_MERGE, "name" },				\
	{ c ".volumeMounts", KC_SMP_MERGE, "mountPath" },		\
	{ c ".volumeDevices", KC_SMP_MERGE, "devicePath" }

#define SCHEMA(var, kind, table)					\
	const struct kc_smp_schema var = {				\
		.name = kind,						\
		.fields = table,					\
		.nfields = KC_ARRAY_SIZE(table),			\
	}

static const struct kc_smp_field object_fields[] = {
	META_FIELDS,
};

/* k8s.io/api/core/v1 PodSpec, Container, EphemeralContainer, PodStatus. */
static const struct kc_smp_field pod_fields[] = {
	META_FIELDS,
	CONTAINER_FIELDS("spec.containers"),
	CONTAINER_FIELDS("spec.initContainers"),
	CONTAINER_FIELDS("spec.ephemeralContainers"),
	{ "spec.volumes", KC_SMP_MERGE | KC_SMP_RETAIN_KEYS, "name" },
	{ "spec.imagePullSecrets", KC_SMP_MERGE, "name" },
	{ "spec.hostAliases", KC_SMP_MERGE, "ip" },
	{ "spec.topologySpreadConstraints", KC_SMP_MERGE, "topologyKey" },
	{ "spec.schedulingGates", KC_SMP_MERGE, "name" },
	{ "spec.resourceClaims", KC_SMP_MERGE | KC_SMP_RETAIN_KEYS, "name" },
	{ "status.conditions", KC_SMP_MERGE, "type" },
	{ "status.podIPs", KC_SMP_MERGE, "ip" },
	{ "status.hostIPs", KC_SMP_MERGE, "ip" },
	{ "status.resourceClaimStatuses", KC_SMP_MERGE | KC_SMP_RETAIN_KEYS, "name" },
};

/* k8s.io/api/apps/v1 DeploymentSpec, ReplicaSetSpec: a PodTemplateSpec inside. */
static const struct kc_smp_field workload_fields[] = {
	META_FIELDS,
	CONTAINER_FIELDS("spec.template.spec.containers"),
	CONTAINER_FIELDS("spec.template.spec.initContainers"),
	CONTAINER_FIELDS("spec.template.spec.ephemeralContainers"),
	{ "spec.template.spec.volumes", KC_SMP_MERGE | KC_SMP_RETAIN_KEYS, "name" },
	{ "spec.template.spec.imagePullSecrets", KC_SMP_MERGE, "name" },
	{ "spec.template.spec.hostAliases", KC_SMP_MERGE, "ip" },
	{ "spec.template.spec.topologySpreadConstraints", KC_SMP_MERGE, "topologyKey" },
	{ "spec.template.spec.schedulingGates", KC_SMP_MERGE, "name" },
	{ "spec.template.spec.resourceClaims", KC_SMP_MERGE | KC_SMP_RETAIN_KEYS, "name" },
	{ "spec.template.metadata.ownerReferences", KC_SMP_MERGE, "uid" },
	{ "spec.template.metadata.finalizers", KC_SMP_MERGE, NULL },
	{ "spec.strategy", KC_SMP_RETAIN_KEYS, NULL },
	{ "status.conditions", KC_SMP_MERGE, "type" },
};

static const struct kc_smp_field service_fields[] = {
	META_FIELDS,
	{ "spec.ports", KC_SMP_MERGE, "port" },
	{ "status.conditions", KC_SMP_MERGE, "type" },
};

static const struct kc_smp_field node_fields[] = {
	META_FIELDS,
	{ "spec.podCIDRs", KC_SMP_MERGE, NULL },
	{ "status.conditions", KC_SMP_MERGE, "type" },
	{ "status.addresses", KC_SMP_MERGE, "type" },
};

static const struct kc_smp_field namespace_fields[] = {
	META_FIELDS,
	{ "status.conditions", KC_SMP_MERGE, "type" },
};

static const struct kc_smp_field serviceaccount_fields[] = {
	META_FIELDS,
	{ "secrets", KC_SMP_MERGE, "name" },
};

static const struct kc_smp_field webhookconfiguration_fields[] = {
	META_FIELDS,
	{ "webhooks", KC_SMP_MERGE, "name" },
};

SCHEMA(kc_smp_schema_object, "object", object_fields);
SCHEMA(kc_smp_schema_pod, "Pod", pod_fields);
SCHEMA(kc_smp_schema_service, "Service", service_fields);
SCHEMA(kc_smp_schema_workload, "Workload", workload_fields);
SCHEMA(kc_smp_schema_node, "Node", node_fields);
SCHEMA(kc_smp_schema_namespace, "Namespace", namespace_fields);
SCHEMA(kc_smp_schema_serviceaccount, "ServiceAccount", serviceaccount_fields);
SCHEMA(kc_smp_schema_webhookconfiguration, "WebhookConfiguration",
    webhookconfiguration_fields);

static const struct {
	const char			*group;
	const char			*kind;
	const struct kc_smp_schema	*schema;
} builtin_schemas[] = {
	{ "", "Pod", &kc_smp_schema_pod },
	{ "", "Service", &kc_smp_schema_service },
	{ "", "ConfigMap", &kc_smp_schema_object },
	{ "", "Secret", &kc_smp_schema_object },
	{ "", "Node", &kc_smp_schema_node },
	{ "", "Namespace", &kc_smp_schema_namespace },
	{ "", "ServiceAccount", &kc_smp_schema_serviceaccount },
	{ "", "Event", &kc_smp_schema_object },
	{ "", "Endpoints", &kc_smp_schema_object },
	{ "events.k8s.io", "Event", &kc_smp_schema_object },
	{ "apps", "Deployment", &kc_smp_schema_workload },
	{ "apps", "ReplicaSet", &kc_smp_schema_workload },
	{ "coordination.k8s.io", "Lease", &kc_smp_schema_object },
	{ "networking.k8s.io", "NetworkPolicy", &kc_smp_schema_object },
	{ "rbac.authorization.k8s.io", "Role", &kc_smp_schema_object },
	{ "rbac.authorization.k8s.io", "ClusterRole", &kc_smp_schema_object },
	{ "rbac.authorization.k8s.io", "RoleBinding", &kc_smp_schema_object },
	{ "rbac.authorization.k8s.io", "ClusterRoleBinding", &kc_smp_schema_object },
	{ "admissionregistration.k8s.io", "MutatingWebhookConfiguration",
	    &kc_smp_schema_webhookconfiguration },
	{ "admissionregistration.k8s.io", "ValidatingWebhookConfiguration",
	    &kc_smp_schema_webhookconfiguration },
	{ "apiextensions.k8s.io", "CustomResourceDefinition", &kc_smp_schema_object },
};

const struct kc_smp_schema *
kc_smp_schema_for(const char *group, const char *kind)
{
	if (group == NULL || kind == NULL)
		return NULL;
	for (size_t i = 0; i < KC_ARRAY_SIZE(builtin_schemas); i++)
		if (strcmp(builtin_schemas[i].group, group) == 0 &&
		    strcmp(builtin_schemas[i].kind, kind) == 0)
			return builtin_schemas[i].schema;
	return NULL;
}

bool
kc_smp_lookup(const struct kc_smp_schema *schema, const char *path,
    struct kc_smp_field *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (schema == NULL)
		return false;
	for (size_t i = 0; i < schema->nfields; i++) {
		if (strcmp(schema->fields[i].path, path) == 0) {
			*ret = schema->fields[i];
			return true;
		}
	}
	if (schema->lookup != NULL && schema->lookup(schema->arg, path, ret))
		return true;
	memset(ret, 0, sizeof(*ret));
	return false;
}

/* ------------------------------------------------------------------------
 * Strategic merge patch: state, lists of elements being merged
 */

struct smp {
	const struct kc_smp_schema	*schema;
	struct kc_status		*st;
	char				 path[SMP_PATH_MAX];	/* dotted */
	size_t				 len;
	bool				 opaque;	/* below a key with '.' */
};

struct smp_mark {
	size_t	len;
	bool	opaque;
};

/* Descends into member 'key'. */
static struct smp_mark
smp_push(struct smp *s, const char *key)
{
	struct smp_mark m = { s->len, s->opaque };
	size_t kl = strlen(key);

	if (s->opaque)
		return m;
	if (strchr(key, '.') != NULL || s->len + kl + 2 > sizeof(s->path)) {
		s->opaque = true;
		return m;
	}
	if (s->len > 0)
		s->path[s->len++] = '.';
	memcpy(s->path + s->len, key, kl + 1);
	s->len += kl;
	return m;
}

static void
smp_pop(struct smp *s, struct smp_mark m)
{
	s->len = m.len;
	s->path[s->len] = '\0';
	s->opaque = m.opaque;
}

static void
smp_field(const struct smp *s, struct kc_smp_field *f)
{
	if (s->opaque || !kc_smp_lookup(s->schema, s->path, f))
		memset(f, 0, sizeof(*f));
}

static int smp_fail(struct smp *, int, const char *, ...) _printf_(3, 4);

static int
smp_fail(struct smp *s, int code, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (s->len == 0)
		return kc_status_set(s->st, code, "strategic merge patch: %s", msg);
	return kc_status_set(s->st, code, "strategic merge patch at %s: %s", s->path, msg);
}

static int
smp_nomem(struct smp *s)
{
	return kc_status_set(s->st, -ENOMEM, "strategic merge patch: out of memory");
}

/* An element on its way into a merged list. */
struct item {
	struct json_object	*v;	/* owned; NULL is JSON null */
	ssize_t			 spos;	/* place in the server's order, -1: none */
	ssize_t			 ppos;	/* place in the patch's order, -1: none */
};

struct items {
	struct item	*a;
	size_t		 n, cap;
};

/* Appends 'v' (owned; released on failure). */
static int
items_push(struct items *it, struct json_object *v)
{
	struct item *a;
	size_t cap;

	if (it->n == it->cap) {
		cap = it->cap == 0 ? 8 : it->cap * 2;
		if ((a = kc_reallocarray(it->a, cap, sizeof(*a))) == NULL) {
			json_object_put(v);
			return -ENOMEM;
		}
		it->a = a;
		it->cap = cap;
	}
	it->a[it->n++] = (struct item){ .v = v, .spos = -1, .ppos = -1 };
	return 0;
}

static void
items_free(struct items *it)
{
	for (size_t i = 0; i < it->n; i++)
		json_object_put(it->a[i].v);
	it->a = kc_free(it->a);
	it->n = it->cap = 0;
}

/* Read-only view of a list: a json-c array, items, or borrowed pointers. */
struct lview {
	const struct json_object	*arr;
	const struct items		*it;
	const struct json_object *const	*ptrs;
	size_t				 n;
};

static const struct json_object *
lv_at(const struct lview *l, size_t i)
{
	if (l->arr != NULL)
		return json_object_array_get_idx(l->arr, i);
	if (l->it != NULL)
		return l->it->a[i].v;
	return l->ptrs[i];
}

static struct lview
lv_arr(const struct json_object *arr)
{
	return (struct lview){ .arr = arr, .n = arr != NULL ?
	    json_object_array_length(arr) : 0 };
}

/*
 * The identity of element 'e': its merge-key member ('mk') for a list of
 * maps, the element itself for primitives. False when it has none.
 */
static bool
key_of(const struct json_object *e, const char *mk, const struct json_object **ret)
{
	struct json_object *v;

	if (mk == NULL) {
		*ret = e;
		return true;
	}
	if (!is_obj(e) || !json_object_object_get_ex(e, mk, &v))
		return false;
	*ret = v;
	return true;
}

/* The first element of 'l' whose identity is 'key', or -1. */
static ssize_t
lv_find(const struct lview *l, const char *mk, const struct json_object *key)
{
	const struct json_object *k;

	for (size_t i = 0; i < l->n; i++)
		if (key_of(lv_at(l, i), mk, &k) && kc_json_equal_numeric(k, key))
			return (ssize_t)i;
	return -1;
}

/* Sets spos and ppos of every item from its identity in 'server' and 'order'. */
static void
items_place(struct items *it, const char *mk, const struct lview *server,
    const struct lview *order)
{
	const struct json_object *k;

	for (size_t i = 0; i < it->n; i++) {
		if (!key_of(it->a[i].v, mk, &k))
			continue;
		it->a[i].spos = server != NULL ? lv_find(server, mk, k) : -1;
		it->a[i].ppos = order != NULL ? lv_find(order, mk, k) : -1;
	}
}

struct sortkey {
	ssize_t	pos;
	size_t	idx;
};

static int
sortkey_cmp(const void *a, const void *b)
{
	const struct sortkey *x = a, *y = b;
	size_t px = x->pos < 0 ? SIZE_MAX : (size_t)x->pos;
	size_t py = y->pos < 0 ? SIZE_MAX : (size_t)y->pos;

	if (px != py)
		return px < py ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Builds the merged list in upstream's order (normalizeElementOrder): the
 * items the patch names ("right") sorted by the patch order, the others
 * ("left") by the server order, then interleaved, a left item going first
 * only when both have a server position and its is lower. The items move
 * into the new array.
 */
static int
items_order(struct items *it, struct json_object **ret)
{
	struct sortkey *left, *right;
	size_t nl = 0, nr = 0, i = 0, j = 0, pick;
	struct json_object *arr;
	int r = 0;

	if ((left = kc_reallocarray(NULL, it->n + 1, 2 * sizeof(*left))) == NULL)
		return -ENOMEM;
	right = left + it->n + 1;
	for (size_t k = 0; k < it->n; k++) {
		if (it->a[k].ppos >= 0)
			right[nr++] = (struct sortkey){ it->a[k].ppos, k };
		else
			left[nl++] = (struct sortkey){ it->a[k].spos, k };
	}
	qsort(left, nl, sizeof(*left), sortkey_cmp);
	qsort(right, nr, sizeof(*right), sortkey_cmp);
	if ((arr = json_object_new_array_ext((int)KC_MAX(it->n, 1))) == NULL) {
		kc_free(left);
		return -ENOMEM;
	}
	while (i < nl || j < nr) {
		if (i < nl && j < nr) {
			ssize_t ls = it->a[left[i].idx].spos, rs = it->a[right[j].idx].spos;

			pick = ls >= 0 && rs >= 0 && ls < rs ? left[i++].idx : right[j++].idx;
		} else if (i < nl) {
			pick = left[i++].idx;
		} else {
			pick = right[j++].idx;
		}
		r = kc_json_append_nullable(arr, it->a[pick].v);
		it->a[pick].v = NULL;
		if (r < 0)
			break;
	}
	kc_free(left);
	if (r < 0) {
		json_object_put(arr);
		return r;
	}
	*ret = arr;
	return 0;
}

/* The common kind of the elements of 'a' and 'b' (either may be NULL). */
static int
list_kind(struct smp *s, const struct json_object *a, const struct json_object *b,
    enum vkind *ret)
{
	const struct json_object *lists[2] = { a, b };
	bool have = false;
	enum vkind k = VK_NULL, ek;
	size_t n;

	for (size_t l = 0; l < 2; l++) {
		n = lists[l] != NULL ? json_object_array_length(lists[l]) : 0;
		for (size_t i = 0; i < n; i++) {
			ek = kind_of(json_object_array_get_idx(lists[l], i));
			if (ek == VK_ARR)
				return smp_fail(s, KC_EINVALID,
				    "lists of lists are not supported");
			if (have && ek != k)
				return smp_fail(s, KC_EINVALID,
				    "list element types are not identical");
			k = ek;
			have = true;
		}
	}
	*ret = k;
	return 0;
}

/* ------------------------------------------------------------------------
 * Strategic merge patch: the merge
 */

static int smp_map(struct smp *, struct json_object *, const struct json_object *,
    struct json_object **);
static int smp_merge_list(struct smp *, const struct json_object *,
    const struct json_object *, const struct kc_smp_field *, struct json_object **);

/*
 * A patch value new to the document, merged against nothing so that its
 * directives and null members are applied rather than stored. The path
 * names the value's field.
 */
static int
smp_fresh(struct smp *s, const struct json_object *pv, const struct kc_smp_field *f,
    struct json_object **ret)
{
	struct json_object *o;
	int r;

	if (is_obj(pv)) {
		if ((o = json_object_new_object()) == NULL)
			return smp_nomem(s);
		return smp_map(s, o, pv, ret);
	}
	if (is_arr(pv) && (f->strategy & KC_SMP_MERGE))
		return smp_merge_list(s, NULL, pv, f, ret);
	if ((r = copy_value(pv, ret)) < 0)
		return smp_nomem(s);
	return 0;
}

/* mergeSlice() for primitives: a set union, ordered as upstream orders it. */
static int
smp_merge_scalars(struct smp *s, const struct json_object *orig,
    const struct json_object *patch, struct json_object **ret)
{
	struct lview ov = lv_arr(orig), pv = lv_arr(patch), seen;
	struct items it = { 0 };
	struct json_object *c;
	int r;

	for (size_t i = 0; i < ov.n; i++) {
		seen = (struct lview){ .it = &it, .n = it.n };
		if (lv_find(&seen, NULL, lv_at(&ov, i)) >= 0)
			continue;
		if ((r = items_push(&it, json_object_get(mut(lv_at(&ov, i))))) < 0)
			goto out;
	}
	for (size_t i = 0; i < pv.n; i++) {
		seen = (struct lview){ .it = &it, .n = it.n };
		if (lv_find(&seen, NULL, lv_at(&pv, i)) >= 0)
			continue;
		if ((r = copy_value(lv_at(&pv, i), &c)) < 0 || (r = items_push(&it, c)) < 0)
			goto out;
	}
	items_place(&it, NULL, &ov, &pv);
	r = items_order(&it, ret);
out:
	items_free(&it);
	return r < 0 ? smp_nomem(s) : 0;
}

/* mergeSlice() for maps: deletions, replacement, merge by key, then order. */
static int
smp_merge_maps(struct smp *s, const struct json_object *orig,
    const struct json_object *patch, const char *mk, struct json_object **ret)
{
	size_t on = orig != NULL ? json_object_array_length(orig) : 0;
	size_t pn = json_object_array_length(patch), pc = 0, m;
	const struct json_object **plain;
	const struct json_object *e, *k, *ek;
	struct items it = { 0 };
	struct json_object *d, *c;
	struct lview pl, sv;
	bool replace = false;
	const char *ds;
	ssize_t at;
	int r = 0;

	if ((plain = kc_reallocarray(NULL, pn + 1, sizeof(*plain))) == NULL)
		return smp_nomem(s);
	for (size_t i = 0; i < on; i++) {
		e = json_object_array_get_idx(orig, i);
		if (!key_of(e, mk, &k)) {
			r = smp_fail(s, KC_EINVALID, "element %zu of the list has no merge key "
			    "\"%s\"", i, mk);
			goto out;
		}
		if ((r = items_push(&it, json_object_get(mut(e)))) < 0)
			goto out;
	}
	for (size_t i = 0; i < pn; i++) {
		e = json_object_array_get_idx(patch, i);
		if (!json_object_object_get_ex(e, SMP_DIRECTIVE, &d)) {
			if (!key_of(e, mk, &k)) {
				r = smp_fail(s, KC_EPARSE, "element %zu of the patch list "
				    "does not contain the merge key \"%s\"", i, mk);
				goto out;
			}
			plain[pc++] = e;
			continue;
		}
		if ((ds = str_of(d)) == NULL) {
			r = smp_fail(s, KC_EPARSE, "\"%s\" must be a string", SMP_DIRECTIVE);
			goto out;
		}
		if (strcmp(ds, "replace") == 0) {
			replace = true;
		} else if (strcmp(ds, "delete") == 0) {
			if (!key_of(e, mk, &k)) {
				r = smp_fail(s, KC_EPARSE, "a \"$patch\": \"delete\" element does "
				    "not contain the merge key \"%s\"", mk);
				goto out;
			}
			for (size_t j = 0; j < it.n;) {
				if (key_of(it.a[j].v, mk, &ek) && kc_json_equal_numeric(ek, k)) {
					json_object_put(it.a[j].v);
					memmove(&it.a[j], &it.a[j + 1],
					    (it.n - j - 1) * sizeof(*it.a));
					it.n--;
				} else {
					j++;
				}
			}
		} else if (strcmp(ds, "merge") != 0) {
			r = smp_fail(s, KC_EPARSE, "unknown patch type \"%.64s\"", ds);
			goto out;
		}
	}
	if (replace) {
		items_free(&it);
		for (size_t i = 0; i < pc; i++)
			if ((r = smp_fresh(s, plain[i], &(struct kc_smp_field){ 0 }, &c)) < 0 ||
			    (r = items_push(&it, c)) < 0)
				goto out;
		pc = 0;
	}
	/* The server order: the list after deletions (or the replacement). */
	m = it.n;
	sv = (struct lview){ .it = &it, .n = m };
	items_place(&it, mk, &sv, NULL);
	for (size_t i = 0; i < pc; i++) {
		struct lview cur = { .it = &it, .n = it.n };

		(void)key_of(plain[i], mk, &k);
		if ((at = lv_find(&cur, mk, k)) >= 0) {
			c = it.a[at].v;
			it.a[at].v = NULL;
			if ((r = smp_map(s, c, plain[i], &it.a[at].v)) < 0)
				goto out;
		} else {
			if ((r = smp_fresh(s, plain[i], &(struct kc_smp_field){ 0 }, &c)) < 0 ||
			    (r = items_push(&it, c)) < 0)
				goto out;
		}
	}
	pl = (struct lview){ .ptrs = plain, .n = pc };
	for (size_t i = 0; i < it.n; i++) {
		it.a[i].ppos = -1;
		if (key_of(it.a[i].v, mk, &k))
			it.a[i].ppos = lv_find(&pl, mk, k);
	}
	r = items_order(&it, ret);
out:
	if (r == -ENOMEM)
		r = smp_nomem(s);
	items_free(&it);
	kc_free(plain);
	return r;
}

/*
 * mergeSlice(): merges 'patch' into 'orig' (NULL: none) for a list field
 * with the merge strategy. '*ret' is a new array.
 */
static int
smp_merge_list(struct smp *s, const struct json_object *orig, const struct json_object *patch,
    const struct kc_smp_field *f, struct json_object **ret)
{
	size_t on = orig != NULL ? json_object_array_length(orig) : 0;
	size_t pn = json_object_array_length(patch);
	enum vkind k = VK_NULL;
	int r;

	if (on > KC_PATCH_LIST_MAX || pn > KC_PATCH_LIST_MAX)
		return smp_fail(s, KC_ETOOLARGE, "a merged list may have at most %d elements",
		    KC_PATCH_LIST_MAX);
	if (on == 0 && pn == 0) {
		if ((*ret = json_object_new_array()) == NULL)
			return smp_nomem(s);
		return 0;
	}
	if ((r = list_kind(s, orig, patch, &k)) < 0)
		return r;
	if (k != VK_OBJ)
		return smp_merge_scalars(s, orig, patch, ret);
	if (f->merge_key == NULL)
		return smp_fail(s, KC_EINVALID, "cannot merge a list of maps without a merge key");
	return smp_merge_maps(s, orig, patch, f->merge_key, ret);
}

/* '$deleteFromPrimitiveList': the elements of 'orig' equal to none in 'del'. */
static int
smp_delete_from(struct smp *s, const struct json_object *orig, const struct json_object *del,
    struct json_object **ret)
{
	struct lview dv = lv_arr(del);
	struct json_object *arr, *e;
	size_t n = json_object_array_length(orig);
	int r;

	if ((arr = json_object_new_array()) == NULL)
		return smp_nomem(s);
	for (size_t i = 0; i < n; i++) {
		e = json_object_array_get_idx(orig, i);
		if (lv_find(&dv, NULL, e) >= 0)
			continue;
		if ((r = kc_json_append_nullable(arr, json_object_get(e))) < 0) {
			json_object_put(arr);
			return smp_nomem(s);
		}
	}
	*ret = arr;
	return 0;
}

/* A patch list element that deletes: {"<mk>": .., "$patch": "delete"}. */
static bool
is_delete_elem(const struct json_object *e)
{
	struct json_object *d;
	const char *ds;

	return is_obj(e) && json_object_object_get_ex(e, SMP_DIRECTIVE, &d) &&
	    (ds = str_of(d)) != NULL && strcmp(ds, "delete") == 0;
}

/*
 * validatePatchWithSetOrderList(): the patch list's elements, deletions
 * aside, must appear in the $setElementOrder list in the same relative
 * order. Other directive elements are skipped while matching.
 */
static int
smp_check_order(struct smp *s, const struct json_object *pl, const struct json_object *order,
    const char *mk)
{
	size_t pn = pl != NULL ? json_object_array_length(pl) : 0;
	size_t on = json_object_array_length(order), p = 0, o = 0;
	const struct json_object *e, *k, *ok;

	if (pn == 0 || on == 0)
		return 0;
	while (p < pn && o < on) {
		e = json_object_array_get_idx(pl, p);
		if ((mk != NULL && is_delete_elem(e)) ||
		    (is_obj(e) && json_object_object_get_ex(e, SMP_DIRECTIVE, NULL))) {
			p++;
			continue;
		}
		if (!key_of(e, mk, &k) || !key_of(json_object_array_get_idx(order, o), mk, &ok))
			return smp_fail(s, KC_EPARSE, "invalid patch format of %s list: an "
			    "element does not contain the merge key \"%s\"", SMP_SET_ORDER, mk);
		if (kc_json_equal_numeric(k, ok))
			p++;
		o++;
	}
	for (; p < pn; p++)
		if (mk == NULL || !is_delete_elem(json_object_array_get_idx(pl, p)))
			return smp_fail(s, KC_EPARSE, "the order in the patch list doesn't "
			    "match the %s list", SMP_SET_ORDER);
	return 0;
}

/*
 * mergePatchIntoOriginal() for one "$setElementOrder/<name>": merges the
 * list now (the main loop then skips member 'name') and orders it.
 */
static int
smp_set_order(struct smp *s, struct json_object *orig, const struct json_object *patch,
    const char *dkey, const struct json_object *order)
{
	const size_t plen = strlen(SMP_SET_ORDER "/");
	struct json_object *ol = NULL, *pl = NULL, *merged = NULL, *arr = NULL;
	bool have_o, have_p;
	struct kc_smp_field f;
	struct smp_mark mark;
	struct lview olv, ordv;
	struct items it = { 0 };
	const struct json_object *k;
	const char *name, *mk;
	size_t n;
	int r;

	if (strncmp(dkey, SMP_SET_ORDER "/", plen) != 0)
		return smp_fail(s, KC_EPARSE, "invalid patch format of %s list: \"%.64s\"",
		    SMP_SET_ORDER, dkey);
	name = dkey + plen;
	if (!is_arr(order))
		return smp_fail(s, KC_EPARSE, "invalid patch format of %s list: \"%.64s\" is "
		    "not a list", SMP_SET_ORDER, dkey);
	have_o = json_object_object_get_ex(orig, name, &ol);
	have_p = json_object_object_get_ex(patch, name, &pl);
	if (!have_o && !have_p)
		return 0;
	mark = smp_push(s, name);
	smp_field(s, &f);
	mk = f.merge_key;
	if (have_o && !is_arr(ol)) {
		r = smp_fail(s, KC_EINVALID, "%s names a field that is not a list", dkey);
		goto out;
	}
	if (have_p && !is_arr(pl)) {
		r = smp_fail(s, KC_EPARSE, "%s needs a list in the patch", dkey);
		goto out;
	}
	if ((r = smp_check_order(s, pl, order, mk)) < 0)
		goto out;
	if (!have_p)
		merged = json_object_get(ol);
	else if (!have_o || !(f.strategy & KC_SMP_MERGE))
		r = smp_fresh(s, pl, &f, &merged);
	else
		r = smp_merge_list(s, ol, pl, &f, &merged);
	if (r < 0)
		goto out;
	n = json_object_array_length(merged);
	for (size_t i = 0; i < n; i++) {
		const struct json_object *e = json_object_array_get_idx(merged, i);

		if (is_obj(e) && mk == NULL) {
			r = smp_fail(s, KC_EINVALID, "cannot order a list of maps without a "
			    "merge key");
			goto out;
		}
		if (!key_of(e, mk, &k)) {
			r = smp_fail(s, KC_EINVALID, "element %zu of the list has no merge key "
			    "\"%s\"", i, mk);
			goto out;
		}
		if ((r = items_push(&it, json_object_get(mut(e)))) < 0) {
			r = smp_nomem(s);
			goto out;
		}
	}
	n = json_object_array_length(order);
	for (size_t i = 0; mk != NULL && i < n; i++)
		if (!key_of(json_object_array_get_idx(order, i), mk, &k)) {
			r = smp_fail(s, KC_EPARSE, "invalid patch format of %s list: element "
			    "%zu does not contain the merge key \"%s\"", SMP_SET_ORDER, i, mk);
			goto out;
		}
	olv = lv_arr(have_o ? ol : NULL);
	ordv = lv_arr(order);
	items_place(&it, mk, &olv, &ordv);
	if ((r = items_order(&it, &arr)) < 0) {
		r = smp_nomem(s);
		goto out;
	}
	if ((r = kc_json_put_nullable(orig, name, arr)) < 0)
		r = smp_nomem(s);
out:
	items_free(&it);
	json_object_put(merged);
	smp_pop(s, mark);
	return r;
}

/* True when 'patch' has "$setElementOrder/<name>", which handled 'name'. */
static int
smp_ordered(struct smp *s, const struct json_object *patch, const char *name, bool *ret)
{
	char *key;

	if ((key = kc_asprintf("%s/%s", SMP_SET_ORDER, name)) == NULL)
		return smp_nomem(s);
	*ret = json_object_object_get_ex(patch, key, NULL);
	kc_free(key);
	return 0;
}

/* One member of a patch map, merged into 'orig'. */
static int
smp_member(struct smp *s, struct json_object *orig, const char *name,
    const struct json_object *pv, bool delete_list)
{
	struct json_object *ov = NULL, *nv = NULL;
	struct kc_smp_field f;
	struct smp_mark mark;
	bool have;
	int r = 0;

	have = json_object_object_get_ex(orig, name, &ov);
	mark = smp_push(s, name);
	smp_field(s, &f);
	if (delete_list) {
		if (!is_arr(pv))
			r = smp_fail(s, KC_EPARSE, "invalid patch format of primitive list: "
			    "%s/%s is not a list", SMP_DELETE_FROM, name);
		else if (is_arr(ov) && (r = smp_delete_from(s, ov, pv, &nv)) == 0)
			r = kc_json_put_nullable(orig, name, nv);
	} else if (pv == NULL) {
		json_object_object_del(orig, name);
	} else if (have && is_obj(ov) && is_obj(pv) && !(f.strategy & KC_SMP_REPLACE)) {
		if ((r = smp_map(s, json_object_get(ov), pv, &nv)) == 0)
			r = kc_json_put_nullable(orig, name, nv);
	} else if (have && is_arr(ov) && is_arr(pv) && (f.strategy & KC_SMP_MERGE)) {
		if ((r = smp_merge_list(s, ov, pv, &f, &nv)) == 0)
			r = kc_json_put_nullable(orig, name, nv);
	} else {
		if ((r = smp_fresh(s, pv, &f, &nv)) == 0)
			r = kc_json_put_nullable(orig, name, nv);
	}
	if (r == -ENOMEM)
		r = smp_nomem(s);
	smp_pop(s, mark);
	return r;
}

/* True when the $retainKeys list 'keep' names member 'k'. */
static bool
retained(const struct json_object *keep, const char *k)
{
	size_t n = json_object_array_length(keep);
	const char *e;

	for (size_t i = 0; i < n; i++)
		if ((e = str_of(json_object_array_get_idx(keep, i))) != NULL && strcmp(e, k) == 0)
			return true;
	return false;
}

/* '$retainKeys': checks the patch against the list and prunes 'orig'. */
static int
smp_retain(struct smp *s, struct json_object *orig, const struct json_object *patch,
    const struct json_object *keep)
{
	if (!is_arr(keep))
		return smp_fail(s, KC_EPARSE, "invalid patch format of retainKeys: not a list");
	{
		json_object_object_foreach(mut(patch), pk, pv) {
			if (pv == NULL || has_prefix(pk, SMP_DELETE_FROM) ||
			    has_prefix(pk, SMP_SET_ORDER) || strcmp(pk, SMP_RETAIN_KEYS) == 0 ||
			    strcmp(pk, SMP_DIRECTIVE) == 0)
				continue;
			if (!retained(keep, pk))
				return smp_fail(s, KC_EINVALID, "patch content doesn't match "
				    "retainKeys list: \"%.64s\" is not retained", pk);
		}
	}
	{
		json_object_object_foreach(orig, ok, ov) {
			(void)ov;
			if (!retained(keep, ok))
				json_object_object_del(orig, ok);
		}
	}
	return 0;
}

/* mergeMap() without the "$patch" step: edits 'orig' in place. */
static int
smp_map_body(struct smp *s, struct json_object *orig, const struct json_object *patch)
{
	struct json_object *keep;
	bool ordered = false;
	int r;

	if (json_object_object_get_ex(patch, SMP_RETAIN_KEYS, &keep) &&
	    (r = smp_retain(s, orig, patch, keep)) < 0)
		return r;
	{
		json_object_object_foreach(mut(patch), dk, order) {
			if (has_prefix(dk, SMP_SET_ORDER) &&
			    (r = smp_set_order(s, orig, patch, dk, order)) < 0)
				return r;
		}
	}
	{
		json_object_object_foreach(mut(patch), pk, pv) {
			if (strcmp(pk, SMP_DIRECTIVE) == 0 || strcmp(pk, SMP_RETAIN_KEYS) == 0 ||
			    has_prefix(pk, SMP_SET_ORDER))
				continue;
			if (has_prefix(pk, SMP_DELETE_FROM)) {
				if (strncmp(pk, SMP_DELETE_FROM "/",
				    strlen(SMP_DELETE_FROM "/")) != 0)
					return smp_fail(s, KC_EPARSE, "invalid patch format of "
					    "primitive list: \"%.64s\"", pk);
				r = smp_member(s, orig, pk + strlen(SMP_DELETE_FROM "/"), pv,
				    true);
			} else {
				if ((r = smp_ordered(s, patch, pk, &ordered)) < 0)
					return r;
				if (ordered)
					continue;
				r = smp_member(s, orig, pk, pv, false);
			}
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/*
 * mergeMap(): merges patch map 'patch' into 'orig', a reference the call
 * consumes. '*ret' is a reference to the result, usually 'orig' itself.
 */
static int
smp_map(struct smp *s, struct json_object *orig, const struct json_object *patch,
    struct json_object **ret)
{
	struct json_object *d;
	const char *ds;
	int r;

	if (json_object_object_get_ex(patch, SMP_DIRECTIVE, &d)) {
		if ((ds = str_of(d)) == NULL) {
			json_object_put(orig);
			return smp_fail(s, KC_EPARSE, "\"%s\" must be a string", SMP_DIRECTIVE);
		}
		if (strcmp(ds, "replace") == 0 || strcmp(ds, "delete") == 0) {
			json_object_put(orig);
			if ((orig = json_object_new_object()) == NULL)
				return smp_nomem(s);
			if (strcmp(ds, "delete") == 0) {
				*ret = orig;
				return 0;
			}
		} else if (strcmp(ds, "merge") != 0) {
			json_object_put(orig);
			return smp_fail(s, KC_EPARSE, "unknown patch type \"%.64s\"", ds);
		}
	}
	if ((r = smp_map_body(s, orig, patch)) < 0) {
		json_object_put(orig);
		return r;
	}
	*ret = orig;
	return 0;
}

int
kc_smp_apply(const struct json_object *doc, const struct json_object *patch,
    const struct kc_smp_schema *schema, struct json_object **ret,
    struct kc_status *st)
{
	struct smp s = { .schema = schema, .st = st };
	struct json_object *copy, *res;
	int r;

	if (!is_obj(patch))
		return kc_status_set(st, KC_EPARSE,
		    "a strategic merge patch must be a JSON object");
	if (doc != NULL && !is_obj(doc))
		return kc_status_set(st, KC_EINVALID,
		    "a strategic merge patch applies to a JSON object only");
	if ((r = check_depth(doc, "the document", st)) < 0 ||
	    (r = check_depth(patch, "the strategic merge patch", st)) < 0)
		return r;
	copy = doc != NULL ? kc_json_copy(doc) : json_object_new_object();
	if (copy == NULL)
		return kc_status_set(st, -ENOMEM, "strategic merge patch: out of memory");
	if ((r = smp_map(&s, copy, patch, &res)) < 0)
		return r;
	*ret = res;
	return 0;
}

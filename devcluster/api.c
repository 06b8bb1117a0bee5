/*
 * api.c: the instance, and the object helpers every part shares.
 *
 * api_new() ties the core together (storage, the watch hub, auth, the
 * registry, the write pipeline's timers), restores persisted objects
 * and creates the bootstrap objects; api_plugins_start() starts the
 * plug-ins of plugins.c's table in order and api_free() stops them in
 * reverse order. plugin_state() is each plug-in's slot.
 *
 * The helpers: an object's view in a URL's version (api_view()), Tables
 * (api_table_new(), api_table_add_row()), label and field selectors,
 * serialization that never writes into a stored tree, UUIDs and base64.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/patch.h>
#include <kc/selector.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "devcluster.h"
#include "table.h"

/*
 * Small helpers
 */

void
api_uuid(char buf[37])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[16];
	size_t o = 0;

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		uint64_t x = kc_random_u64(), y = kc_random_u64();

		memcpy(b, &x, 8);
		memcpy(b + 8, &y, 8);
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	for (size_t i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			buf[o++] = '-';
		buf[o++] = hex[b[i] >> 4];
		buf[o++] = hex[b[i] & 15];
	}
	buf[o] = '\0';
}

int
api_serialize(const struct json_object *o, struct kc_buf *b)
{
	struct json_object *w;
	const char *s;
	size_t len;
	int r;

	if (!json_object_is_type(o, json_type_object))
		return kc_buf_puts(b, o == NULL ? "null" :
		    json_object_to_json_string_ext((struct json_object *)(uintptr_t)o,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	/*
	 * json-c keeps the printed text in the object it prints: print a
	 * shallow wrapper so stored trees are never written to.
	 */
	if ((w = json_object_new_object()) == NULL)
		return -ENOMEM;
	json_object_object_foreach((struct json_object *)(uintptr_t)o, k, v) {
		if (json_object_object_add(w, k, json_object_get(v)) < 0) {
			json_object_put(v);
			json_object_put(w);
			return -ENOMEM;
		}
	}
	s = json_object_to_json_string_length(w,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	r = s != NULL ? kc_buf_append(b, s, len) : -ENOMEM;
	json_object_put(w);
	return r;
}

/*
 * Views and tables
 */

int
api_view(const struct dc_rtype *rt, const struct json_object *stored,
    struct json_object **ret)
{
	struct json_object *out;
	const char *av;

	if (rt->ops->convert_out != NULL)
		return rt->ops->convert_out(rt, stored, ret);
	av = kc_json_str(stored, "apiVersion");
	if (av != NULL && strcmp(av, rt->api_version) == 0) {
		*ret = json_object_get((struct json_object *)(uintptr_t)stored);
		return 0;
	}
	if ((out = json_object_new_object()) == NULL)
		return -ENOMEM;
	json_object_object_foreach((struct json_object *)(uintptr_t)stored, k, v) {
		if (strcmp(k, "apiVersion") == 0)
			continue;
		if (json_object_object_add(out, k, json_object_get(v)) < 0) {
			json_object_put(v);
			json_object_put(out);
			return -ENOMEM;
		}
	}
	if (kc_json_set_str(out, "apiVersion", rt->api_version) < 0) {
		json_object_put(out);
		return -ENOMEM;
	}
	*ret = out;
	return 0;
}

void
api_age_format(int64_t s, char *buf, size_t size)
{
	char age[TABLE_AGE_MAX];

	if (s > INT64_MAX / 1000000000 || s < INT64_MIN / 1000000000)
		s = s > 0 ? INT64_MAX / 1000000000 : INT64_MIN / 1000000000;
	table_human_duration(s * 1000000000, age);
	(void)kc_strlcpy(buf, age, size);
}

void
api_age_of(const char *timestamp, time_t now, char *buf, size_t size)
{
	char age[TABLE_AGE_MAX];

	table_age(timestamp, now, age);
	(void)kc_strlcpy(buf, age, size);
}

/*
 * The converter of 'rt': a plug-in's for a custom resource (its CRD's
 * printer columns; Name and Age when none has one), else the built-in
 * printer. '*ret_own' is a new converter the
 * caller frees, or NULL when '*ret' is borrowed.
 */
static int
table_conv_of(const struct dc_rtype *rt, const struct table_conv **ret,
    struct table_conv **ret_own)
{
	struct kc_status st = { 0 };
	const struct table_conv *tc = NULL;
	struct table_conv *own = NULL;
	int r;

	for (size_t i = 0; (rt->flags & DC_RT_CUSTOM) && tc == NULL && i < dc_nplugins; i++)
		if (dc_plugins[i]->table_conv != NULL)
			tc = dc_plugins[i]->table_conv(rt);
	if (tc == NULL) {
		if (rt->flags & DC_RT_CUSTOM)
			r = table_conv_columns(NULL, &own, &st);
		else
			r = table_conv_builtin(rt->group, rt->plural, &own);
		if (r < 0)
			return r == -ENOMEM ? r : KC_EINTERNAL;
		tc = own;
	}
	*ret = tc;
	*ret_own = own;
	return 0;
}

int
api_table_new(const struct dc_rtype *rt, enum dc_format fmt, bool columns,
    struct json_object **ret)
{
	const struct table_conv *tc;
	struct table_conv *own = NULL;
	struct json_object *t, *cols = NULL;
	int r;

	if ((t = json_object_new_object()) == NULL)
		return -ENOMEM;
	r = -ENOMEM;
	if (kc_json_set_str(t, "kind", "Table") < 0 ||
	    kc_json_set_str(t, "apiVersion", fmt == DC_FMT_TABLE_V1BETA1 ?
	    "meta.k8s.io/v1beta1" : "meta.k8s.io/v1") < 0 ||
	    kc_json_put(t, "metadata", json_object_new_object()) < 0)
		goto fail;
	if (columns) {
		if ((r = table_conv_of(rt, &tc, &own)) < 0 ||
		    (r = table_conv_definitions(tc, &cols)) < 0 ||
		    (r = kc_json_put(t, "columnDefinitions", cols)) < 0)
			goto fail;
	} else if (json_object_object_add(t, "columnDefinitions", NULL) < 0)
		goto fail;
	if ((r = kc_json_put(t, "rows", json_object_new_array())) < 0)
		goto fail;
	table_conv_free(own);
	*ret = t;
	return 0;
fail:
	table_conv_free(own);
	json_object_put(t);
	return r;
}

int
api_table_add_row(const struct dc_rtype *rt, struct json_object *table,
    const struct json_object *obj, enum dc_include include, time_t now)
{
	static const enum table_include inc[] = {
		[DC_INCLUDE_METADATA] = TABLE_INCLUDE_METADATA,
		[DC_INCLUDE_NONE] = TABLE_INCLUDE_NONE,
		[DC_INCLUDE_OBJECT] = TABLE_INCLUDE_OBJECT,
	};
	struct json_object *rows = kc_json_arr_of(table, "rows"), *one = NULL, *row;
	const char *av = kc_json_str(table, "apiVersion");
	const struct table_conv *tc;
	struct table_conv *own = NULL;
	struct kc_status st = { 0 };
	int r;

	if (rows == NULL)
		return -EINVAL;
	if ((r = table_conv_of(rt, &tc, &own)) < 0)
		return r;
	r = table_object(tc, obj, &(struct table_opts){
		.version = av != NULL && strcmp(av, "meta.k8s.io/v1beta1") == 0 ?
		    TABLE_V1BETA1 : TABLE_V1,
		.include = inc[include],
		.no_headers = true,
		.now = now,
	}, &one, &st);
	table_conv_free(own);
	if (r < 0)
		return r == -ENOMEM ? r : KC_EINTERNAL;
	row = json_object_array_get_idx(kc_json_arr_of(one, "rows"), 0);
	r = row != NULL ? kc_json_append(rows, json_object_get(row)) : KC_EINTERNAL;
	json_object_put(one);
	return r;
}

/*
 * Selectors
 */

struct fieldget {
	const struct dc_rtype		*rt;
	const struct json_object	*obj;
	char				 buf[64];
};

static const char *
field_get(void *arg, const char *field)
{
	struct fieldget *fg = arg;
	const char *v;

	if (strcmp(field, "metadata.namespace") == 0) {
		v = kc_json_str(fg->obj, "metadata", "namespace");
		return v != NULL ? v : "";
	}
	if (fg->rt->ops->field_value != NULL &&
	    (v = fg->rt->ops->field_value(fg->obj, field, fg->buf, sizeof(fg->buf))) != NULL)
		return v;
	return kc_field_json_lookup(fg->obj, field, fg->buf, sizeof(fg->buf));
}

bool
api_matches(const struct dc_rtype *rt, const struct kc_label_selector *ls,
    const struct kc_field_selector *fs, const struct json_object *obj)
{
	struct fieldget fg = { .rt = rt, .obj = obj };

	if (ls != NULL && !kc_label_selector_matches_obj(ls, obj))
		return false;
	return fs == NULL || kc_field_selector_matches(fs, field_get, &fg);
}

int
api_selectors(const struct dc_rtype *rt, const char *label, const char *field,
    struct kc_label_selector **ret_ls, struct kc_field_selector **ret_fs,
    struct kc_status *st)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *ls = NULL;
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *fs = NULL;
	const char *supported[40];
	size_t n = 0;
	int r;

	if (label != NULL && label[0] != '\0' &&
	    (r = kc_label_selector_parse(label, &ls, st)) < 0)
		return r == -ENOMEM ? r : KC_EBADREQUEST;
	if (field != NULL && field[0] != '\0') {
		if ((r = kc_field_selector_parse(field, &fs, st)) < 0)
			return r == -ENOMEM ? r : KC_EBADREQUEST;
		supported[n++] = "metadata.name";
		if (rt->namespaced)
			supported[n++] = "metadata.namespace";
		for (size_t i = 0; rt->ops->field_selectors != NULL &&
		    rt->ops->field_selectors[i] != NULL && n + 1 < KC_ARRAY_SIZE(supported); i++)
			supported[n++] = rt->ops->field_selectors[i];
		supported[n] = NULL;
		if ((r = kc_field_selector_check(fs, supported, st)) < 0)
			return r == -ENOMEM ? r : KC_EBADREQUEST;
	}
	*ret_ls = ls;
	*ret_fs = fs;
	ls = NULL;
	fs = NULL;
	return 0;
}

/*
 * The instance
 */

/*
 * The service account controller's one job the devcluster does: every
 * new namespace gets a "default" ServiceAccount, which pods name.
 */
static void
sa_controller(void *arg, const struct dc_event *ev)
{
	struct dc *dc = arg;
	struct dc_rtype *nst, *sat;
	struct json_object *sa = NULL;
	const char *ns;
	char json[DC_SEGMENT_MAX + 96];
	int r;

	if (ev->type != DC_EV_ADDED || (nst = registry_find(dc, "", "v1",
	    "namespaces")) == NULL || ev->coll != nst->coll ||
	    (sat = registry_find(dc, "", "v1", "serviceaccounts")) == NULL)
		return;
	ns = kc_json_str(ev->obj, "metadata", "name");
	if (ns == NULL || coll_get(sat->coll, ns, "default") != NULL)
		return;
	(void)snprintf(json, sizeof(json), "{\"metadata\":{\"name\":\"default\","
	    "\"namespace\":\"%s\"}}", ns);
	if ((r = kc_json_parse(json, strlen(json), &sa, NULL)) == 0)
		r = api_create_object(dc, sat, sa, NULL);
	if (r < 0 && r != KC_EEXISTS) {
		struct kc_log_ctx lc = { .action = "serviceaccount", .ns = ns };

		kc_log_warn(&lc, "creating the default service account: %s", kc_strerror(r));
	}
}

static int
parse_kube_version(struct dc *dc, const char *v)
{
	uint32_t major, minor, patch = 0;
	char buf[32], *dot1, *dot2;

	if (v == NULL)
		v = "1.32";
	if (v[0] == 'v')
		v++;
	if (kc_strlcpy(buf, v, sizeof(buf)) >= sizeof(buf))
		return -EINVAL;
	if ((dot1 = strchr(buf, '.')) == NULL)
		return -EINVAL;
	*dot1++ = '\0';
	if ((dot2 = strchr(dot1, '.')) != NULL) {
		*dot2++ = '\0';
		if (kc_parse_u32(dot2, &patch) < 0)
			return -EINVAL;
	}
	if (kc_parse_u32(buf, &major) < 0 || kc_parse_u32(dot1, &minor) < 0 ||
	    major > 99 || minor > 999 || patch > 9999)
		return -EINVAL;
	(void)snprintf(dc->major, sizeof(dc->major), "%u", major);
	(void)snprintf(dc->minor, sizeof(dc->minor), "%u", minor);
	(void)snprintf(dc->git_version, sizeof(dc->git_version), "v%u.%u.%u", major, minor,
	    patch);
	return 0;
}

unsigned
api_minor(const struct dc *dc)
{
	uint32_t minor;

	return kc_parse_u32(dc->minor, &minor) == 0 ? minor : 0;
}

int
api_new(const struct dc_opts *opts, struct dc **ret)
{
	struct dc *dc;
	int r;

	if ((dc = kc_calloc(1, sizeof(*dc))) == NULL)
		return -ENOMEM;
	TAILQ_INIT(&dc->timers);
	TAILQ_INIT(&dc->reg.types);
	if (opts != NULL)
		dc->opts = *opts;
	if ((r = parse_kube_version(dc, dc->opts.kube_version)) < 0)
		goto fail;
	(void)kc_strlcpy(dc->server_address, "127.0.0.1:6443", sizeof(dc->server_address));
	if ((r = write_init(dc)) < 0)
		goto fail;
	if ((r = storage_new(&(struct dc_store_opts){
	    .history_max = dc->opts.history_max,
	    .history_fresh_ms = dc->opts.history_fresh_ms }, &dc->store)) < 0)
		goto fail;
	if ((r = watchhub_new(dc, &dc->hub)) < 0)
		goto fail;
	if ((r = auth_new(&dc->auth)) < 0)
		goto fail;
	if ((r = registry_init(dc)) < 0)
		goto fail;
	if (dc->opts.restore != NULL && (r = dc->opts.restore(dc, dc->opts.restore_arg)) < 0)
		goto fail;
	if (!dc->opts.no_bootstrap &&
	    ((r = storage_subscribe(dc->store, sa_controller, dc)) < 0 ||
	    (r = builtin_bootstrap(dc)) < 0))
		goto fail;
	*ret = dc;
	return 0;
fail:
	api_free(dc);
	return r;
}

void *
plugin_state(const struct dc *dc, const struct dc_plugin *p)
{
	for (size_t i = 0; i < dc_nplugins; i++)
		if (dc_plugins[i] == p)
			return dc->plugin_states[i];
	return NULL;
}

void
plugin_set_state(struct dc *dc, const struct dc_plugin *p, void *state)
{
	for (size_t i = 0; i < dc_nplugins; i++)
		if (dc_plugins[i] == p)
			dc->plugin_states[i] = state;
}

int
api_plugins_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	struct kc_status pst;
	int r;

	for (size_t i = 0; i < dc_nplugins; i++) {
		const struct dc_plugin *p = dc_plugins[i];

		if (p->init == NULL)
			continue;
		memset(&pst, 0, sizeof(pst));
		if ((r = p->init(dc, cfg, &pst)) < 0)
			return kc_status_set(st, r, "%s: %s", p->name,
			    pst.message[0] != '\0' ? pst.message : kc_strerror(r));
	}
	return 0;
}

void
api_plugins_stop(struct dc *dc)
{
	for (size_t i = dc_nplugins; i > 0; i--)
		if (dc_plugins[i - 1]->fini != NULL)
			dc_plugins[i - 1]->fini(dc);
}

struct dc *
api_free(struct dc *dc)
{
	if (dc == NULL)
		return NULL;
	api_plugins_stop(dc);
	write_fini(dc);
	dc->hub = watchhub_free(dc->hub);
	registry_fini(dc);
	discovery_fini(dc);
	dc->store = storage_free(dc->store);
	dc->auth = auth_free(dc->auth);
	kc_free(dc);
	return NULL;
}

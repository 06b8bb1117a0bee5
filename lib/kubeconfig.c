/*
 * kubeconfig.c: kubeconfig files and in-cluster service-account config.
 *
 * A kubeconfig names clusters (where), users (who) and contexts (a
 * cluster, a user and a namespace), each as a list of {name, body}
 * entries. kubectl merges several files (KUBECONFIG=a:b:c) into one map
 * per kind where the first file to name an entry wins, whole, and takes
 * current-context from the first file that sets one. We never build the
 * merged maps: the files are parsed once (YAML to json-c with
 * kc_yaml_parse()) and each lookup walks them in order, which gives
 * the same answer and remembers which file an entry came from. That file
 * matters: relative paths in an entry are resolved against its directory,
 * and error messages name it:
 *
 *	/home/a/.kube/config: users["alice"].client-key: /home/a/k.pem: No such file or directory
 *	contexts: context "dev" not found
 *
 * Only the entries the chosen context needs are validated, as kubectl
 * does; garbage elsewhere in a file is ignored unless it is in the way of
 * a lookup (a list that is not a list, an entry without a name).
 *
 * Everything a transport needs is read at load time (CA, client
 * certificate and key, the first token), so a bad path fails the load,
 * not the first request. A token file is also kept as a path: bound
 * service-account tokens rotate, so kc_rest_config_token() stats it on
 * every call and re-reads it when the mtime, size or inode moved, keeping
 * the last good token when a re-read fails.
 *
 * Secrets (tokens, keys, passwords, and the file text and parse trees
 * they passed through) are wiped before they are freed.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>
#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/kubeconfig.h>
#include <kc/str.h>
#include <kc/yaml.h>

#define SA_DIR		"/var/run/secrets/kubernetes.io/serviceaccount"
#define SA_TOKEN	SA_DIR "/token"
#define SA_CA		SA_DIR "/ca.crt"
#define SA_NAMESPACE	SA_DIR "/namespace"

/* Room for 'users["name"]' in messages; longer names are truncated. */
#define WHERE_MAX	160

/* One parsed kubeconfig file. */
struct kcfile {
	char			*path;	/* as given */
	char			*dir;	/* absolute; relative paths start here */
	struct json_object	*root;	/* NULL for an empty file */
};

struct kcset {
	struct kcfile	files[KC_KUBECONFIG_FILES_MAX];
	size_t		n;
};

/* An entry found by name: its body and the file that defined it. */
struct entry {
	const struct kcfile	*file;
	const char		*name;
	struct json_object	*body;	/* NULL: the entry has no body */
	char			 where[WHERE_MAX];	/* 'clusters["c1"]' */
};

/* Overwrites every string in a parse tree: it may hold tokens and keys. */
static void
json_wipe(struct json_object *o)
{
	switch (json_object_get_type(o)) {
	case json_type_string:
		explicit_bzero((char *)(uintptr_t)json_object_get_string(o),
		    (size_t)json_object_get_string_len(o));
		break;
	case json_type_object: {
		struct json_object_iterator it = json_object_iter_begin(o);
		struct json_object_iterator end = json_object_iter_end(o);

		for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
			json_wipe(json_object_iter_peek_value(&it));
		break;
	}
	case json_type_array:
		for (size_t i = 0; i < json_object_array_length(o); i++)
			json_wipe(json_object_array_get_idx(o, i));
		break;
	default:
		break;
	}
}

static void
kcset_free(struct kcset *set)
{
	for (size_t i = 0; i < set->n; i++) {
		struct kcfile *f = &set->files[i];

		if (f->root != NULL) {
			json_wipe(f->root);
			json_object_put(f->root);
		}
		kc_free(f->path);
		kc_free(f->dir);
	}
	set->n = 0;
}

static void
free_secret_len(char *p, size_t len)
{
	if (p != NULL) {
		explicit_bzero(p, len);
		kc_free(p);
	}
}

/* A read failure of 'file' as a message, after 'prefix' (may be ""). */
static int
file_error(struct kc_status *st, int r, const char *prefix, const char *file)
{
	if (r == -E2BIG)
		return kc_status_set(st, r, "%s%s: file larger than %u bytes", prefix, file,
		    KC_KUBECONFIG_MAX);
	return kc_status_set(st, r, "%s%s: %s", prefix, file, kc_strerror(r));
}

/* The absolute directory of 'path', for resolving relative paths. */
static int
abs_dir(const char *path, char **ret)
{
	const char *slash = strrchr(path, '/');
	char cwd[PATH_MAX];
	size_t dlen;

	if (slash == NULL) {
		if (getcwd(cwd, sizeof(cwd)) == NULL)
			return -errno;
		*ret = kc_strdup(cwd);
		return *ret != NULL ? 0 : -ENOMEM;
	}
	dlen = slash == path ? 1 : (size_t)(slash - path);
	if (path[0] == '/') {
		*ret = kc_strndup(path, dlen);
		return *ret != NULL ? 0 : -ENOMEM;
	}
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		return -errno;
	*ret = kc_asprintf("%s%s%.*s", cwd, strcmp(cwd, "/") == 0 ? "" : "/", (int)dlen,
	    path);
	return *ret != NULL ? 0 : -ENOMEM;
}

static bool
nonempty(const char *s)
{
	return s != NULL && s[0] != '\0';
}

/*
 * Parses one kubeconfig document. As for kubectl, a file with no document
 * (empty, or only comments) is an empty config: *ret is NULL, as for a
 * null document.
 */
static int
parse(const char *text, size_t len, struct json_object **ret, struct kc_status *st)
{
	struct json_object *docs = NULL;
	size_t n;
	int r;

	*ret = NULL;
	if (kc_str_trim((struct kc_str){ text, len }).len == 0)
		return 0;
	if ((r = kc_yaml_parse(text, len, NULL, &docs, st)) < 0)
		return r;
	if ((n = json_object_array_length(docs)) > 1) {
		json_wipe(docs);
		json_object_put(docs);
		return kc_status_set(st, KC_EPARSE, "expected one YAML document, found %zu",
		    n);
	}
	if (n == 1)
		*ret = json_object_get(json_object_array_get_idx(docs, 0));
	json_object_put(docs);
	return 0;
}

/*
 * Reads and parses one file into 'set'. Returns 1 when it does not exist
 * and 'skip_missing' allows that, 0 when added (or already there).
 */
static int
kcset_add(struct kcset *set, const char *path, bool skip_missing, struct kc_status *st)
{
	struct kc_status yst = { 0 };
	struct json_object *root = NULL;
	struct kcfile *f;
	char *text = NULL, *dir = NULL, *copy = NULL;
	const char *s;
	size_t len = 0;
	int r;

	for (size_t i = 0; i < set->n; i++)
		if (strcmp(set->files[i].path, path) == 0)
			return 0;
	if (set->n == KC_KUBECONFIG_FILES_MAX)
		return kc_status_set(st, KC_ECONFIG, "%s: more than %d kubeconfig files",
		    path, KC_KUBECONFIG_FILES_MAX);
	if ((r = kc_read_file(path, KC_KUBECONFIG_MAX, &text, &len)) < 0) {
		if (r == -ENOENT && skip_missing)
			return 1;
		return file_error(st, r, "", path);
	}
	if ((r = parse(text, len, &root, &yst)) < 0) {
		r = kc_status_set(st, r, "%s: %s", path, yst.message);
		goto out;
	}
	if (root != NULL && !json_object_is_type(root, json_type_object)) {
		r = kc_status_set(st, KC_ECONFIG, "%s: not a kubeconfig: the top level "
		    "is not a mapping", path);
		goto out;
	}
	if ((s = kc_json_str(root, "kind")) != NULL && strcmp(s, "Config") != 0) {
		r = kc_status_set(st, KC_ECONFIG, "%s: kind: \"%s\" is not Config", path, s);
		goto out;
	}
	if ((s = kc_json_str(root, "apiVersion")) != NULL && strcmp(s, "v1") != 0) {
		r = kc_status_set(st, KC_ECONFIG, "%s: apiVersion: \"%s\" is not v1", path, s);
		goto out;
	}
	if ((r = abs_dir(path, &dir)) < 0) {
		r = file_error(st, r, "", path);
		goto out;
	}
	if ((copy = kc_strdup(path)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	f = &set->files[set->n++];
	f->path = copy;
	f->dir = dir;
	f->root = root;
	copy = dir = NULL;
	root = NULL;
	r = 0;
out:
	if (root != NULL) {
		json_wipe(root);
		json_object_put(root);
	}
	free_secret_len(text, len);
	kc_free(dir);
	kc_free(copy);
	return r;
}

/* Adds the files of a colon-separated list, skipping missing ones. */
static int
kcset_add_list(struct kcset *set, const char *list, struct kc_status *st)
{
	struct kc_str rest = kc_str_from(list), head;
	int r;

	while (rest.len > 0) {
		char *path;

		(void)kc_str_cut(&rest, ':', &head);
		if (head.len == 0)
			continue;
		if ((path = kc_str_dup(head)) == NULL)
			return -ENOMEM;
		r = kcset_add(set, path, true, st);
		kc_free(path);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Reads the files 'opts' names, or $KUBECONFIG's, or ~/.kube/config. */
static int
kcset_load(struct kcset *set, const struct kc_kubeconfig_opts *opts, struct kc_status *st)
{
	const char *env, *home, *last = NULL;
	char *path;
	size_t n = 0;
	int r;

	if (opts->paths != NULL && opts->npaths > 0) {
		for (size_t i = 0; i < opts->npaths; i++) {
			if (!nonempty(opts->paths[i]))
				continue;
			n++;
			last = opts->paths[i];
			if ((r = kcset_add(set, last, true, st)) < 0)
				return r;
		}
		if (set->n > 0)
			return 0;
		if (n == 0)
			return kc_status_set(st, -ENOENT, "no kubeconfig file was given");
		if (n == 1)
			return kc_status_set(st, -ENOENT, "%s: %s", last, kc_strerror(-ENOENT));
		return kc_status_set(st, -ENOENT, "none of the %zu kubeconfig files exist",
		    n);
	}
	if ((env = getenv("KUBECONFIG")) != NULL && env[0] != '\0') {
		if ((r = kcset_add_list(set, env, st)) < 0)
			return r;
		if (set->n > 0)
			return 0;
		return kc_status_set(st, -ENOENT, "KUBECONFIG=%s: none of its files exist",
		    env);
	}
	if ((home = getenv("HOME")) == NULL || home[0] == '\0')
		return kc_status_set(st, -ENOENT, "no kubeconfig: neither KUBECONFIG nor "
		    "HOME is set");
	if ((path = kc_asprintf("%s/.kube/config", home)) == NULL)
		return -ENOMEM;
	r = kcset_add(set, path, false, st);
	kc_free(path);
	return r;
}

/*
 * A scalar as a string, as kubectl reads YAML into string fields ("port:
 * 8443" is "8443"). NULL for other types.
 */
static const char *
scalar_str(struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_string:
	case json_type_int:
	case json_type_double:
	case json_type_boolean:
		return json_object_get_string(v);
	default:
		return NULL;
	}
}

/*
 * Finds entry 'name' of list 'list' ("clusters") whose body is under key
 * 'inner' ("cluster"), first file first.
 */
static int
find_entry(const struct kcset *set, const char *list, const char *inner,
    const char *name, struct entry *ret, struct kc_status *st)
{
	for (size_t i = 0; i < set->n; i++) {
		const struct kcfile *f = &set->files[i];
		struct json_object *arr, *found = NULL;

		if ((arr = kc_json_get(f->root, list)) == NULL)
			continue;
		if (!json_object_is_type(arr, json_type_array))
			return kc_status_set(st, KC_ECONFIG, "%s: %s: not a list", f->path,
			    list);
		for (size_t j = 0; j < json_object_array_length(arr); j++) {
			struct json_object *el = json_object_array_get_idx(arr, j);
			struct json_object *nv;
			const char *n;

			if (!json_object_is_type(el, json_type_object))
				return kc_status_set(st, KC_ECONFIG, "%s: %s[%zu]: not a "
				    "mapping", f->path, list, j);
			if (!json_object_object_get_ex(el, "name", &nv) ||
			    (n = scalar_str(nv)) == NULL)
				return kc_status_set(st, KC_ECONFIG, "%s: %s[%zu].name: "
				    "missing", f->path, list, j);
			if (strcmp(n, name) != 0)
				continue;
			if (found != NULL)
				return kc_status_set(st, KC_ECONFIG, "%s: %s: %s \"%s\" is "
				    "defined twice", f->path, list, inner, name);
			found = el;
		}
		if (found == NULL)
			continue;
		ret->file = f;
		ret->name = name;
		(void)snprintf(ret->where, sizeof(ret->where), "%s[\"%s\"]", list, name);
		ret->body = NULL;
		if (json_object_object_get_ex(found, inner, &ret->body) &&
		    ret->body != NULL && !json_object_is_type(ret->body, json_type_object))
			return kc_status_set(st, KC_ECONFIG, "%s: %s.%s: not a mapping",
			    f->path, ret->where, inner);
		return 0;
	}
	return kc_status_set(st, KC_ECONFIG, "%s: %s \"%s\" not found", list, inner, name);
}

/* A string field of an entry; NULL when absent, null or empty. */
static int
entry_str(const struct entry *e, const char *key, const char **ret, struct kc_status *st)
{
	struct json_object *v;
	const char *s;

	*ret = NULL;
	if (e->body == NULL || !json_object_object_get_ex(e->body, key, &v) || v == NULL)
		return 0;
	switch (json_object_get_type(v)) {
	case json_type_string:
	case json_type_int:
	case json_type_double:
	case json_type_boolean:
		break;
	default:
		return kc_status_set(st, KC_ECONFIG, "%s: %s.%s: not a string",
		    e->file->path, e->where, key);
	}
	if ((s = json_object_get_string(v)) == NULL)
		return -ENOMEM;		/* json-c could not format a number */
	if (s[0] != '\0')
		*ret = s;
	return 0;
}

/* Copies 'src' into '*dst' when it is not NULL. 0 or -ENOMEM. */
static int
dup_field(char **dst, const char *src)
{
	if (src != NULL && (*dst = kc_strdup(src)) == NULL)
		return -ENOMEM;
	return 0;
}

static int
entry_dup(const struct entry *e, const char *key, char **ret, struct kc_status *st)
{
	const char *s;
	int r;

	if ((r = entry_str(e, key, &s, st)) < 0)
		return r;
	return dup_field(ret, s);
}

static int
entry_bool(const struct entry *e, const char *key, bool *ret, struct kc_status *st)
{
	struct json_object *v;

	*ret = false;
	if (e->body == NULL || !json_object_object_get_ex(e->body, key, &v) || v == NULL)
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return kc_status_set(st, KC_ECONFIG, "%s: %s.%s: not a boolean (true or "
		    "false)", e->file->path, e->where, key);
	*ret = json_object_get_boolean(v);
	return 0;
}

static bool
entry_has(const struct entry *e, const char *key)
{
	struct json_object *v;

	return e->body != NULL && json_object_object_get_ex(e->body, key, &v) && v != NULL;
}

/* 'rel' resolved against the entry's file's directory. */
static char *
entry_path(const struct entry *e, const char *rel)
{
	if (rel[0] == '/')
		return kc_strdup(rel);
	return kc_asprintf("%s%s%s", e->file->dir,
	    strcmp(e->file->dir, "/") == 0 ? "" : "/", rel);
}

/* Reads the file an entry's path field names. */
static int
entry_read(const struct entry *e, const char *key, const char *rel, char **ret,
    size_t *ret_len, struct kc_status *st)
{
	char prefix[WHERE_MAX + PATH_MAX];
	char *path;
	int r;

	if ((path = entry_path(e, rel)) == NULL)
		return -ENOMEM;
	if ((r = kc_read_file(path, KC_KUBECONFIG_MAX, ret, ret_len)) < 0) {
		(void)snprintf(prefix, sizeof(prefix), "%s: %s.%s: ", e->file->path,
		    e->where, key);
		r = file_error(st, r, prefix, path);
	}
	kc_free(path);
	return r;
}

/*
 * A PEM field in its two forms: 'key' (a file) or 'key'-data (base64).
 * *ret stays NULL when neither is set.
 */
static int
entry_pem(const struct entry *e, const char *key, char **ret, size_t *ret_len,
    struct kc_status *st)
{
	char data_key[64], why[128];
	const char *file, *data;
	int r;

	(void)snprintf(data_key, sizeof(data_key), "%s-data", key);
	if ((r = entry_str(e, key, &file, st)) < 0 ||
	    (r = entry_str(e, data_key, &data, st)) < 0)
		return r;
	if (file != NULL && data != NULL)
		return kc_status_set(st, KC_ECONFIG, "%s: %s: %s and %s are both set; "
		    "use one", e->file->path, e->where, key, data_key);
	if (file != NULL)
		return entry_read(e, key, file, ret, ret_len, st);
	if (data == NULL)
		return 0;
	if ((r = kc_base64_decode(data, strlen(data), KC_BASE64_SPACE, ret, ret_len, why,
	    sizeof(why))) == -EINVAL)
		return kc_status_set(st, KC_ECONFIG, "%s: %s.%s: %s", e->file->path,
		    e->where, data_key, why);
	if (r == -E2BIG)
		return kc_status_set(st, r, "%s: %s.%s: too large", e->file->path,
		    e->where, data_key);
	return r;
}

/* Host and port of an http(s) URL's authority, checked loosely. */
static const char *
authority_check(const char *a, size_t len)
{
	const char *host_end = a + len, *colon = NULL;
	uint64_t port;

	if (len == 0)
		return "no host";
	if (memchr(a, '@', len) != NULL)
		return "credentials in the URL are not supported";
	if (a[0] == '[') {
		const char *rb = memchr(a, ']', len);

		if (rb == NULL || rb == a + 1)
			return "bad IPv6 address (missing ']')";
		if (rb + 1 < a + len) {
			if (rb[1] != ':')
				return "junk after the IPv6 address";
			colon = rb + 1;
		}
	} else {
		colon = memchr(a, ':', len);
		if (colon != NULL && memchr(colon + 1, ':', (size_t)(a + len - colon - 1)))
			return "an IPv6 address must be in brackets";
		if (colon == a)
			return "no host";
	}
	if (colon != NULL) {
		struct kc_str p = { colon + 1, (size_t)(a + len - colon - 1) };

		if (kc_str_to_u64(p, &port) < 0 || port == 0 || port > 65535)
			return "bad port";
		host_end = colon;
	}
	return host_end > a ? NULL : "no host";
}

/* Checks a server URL and copies it without the trailing '/'. */
static int
server_parse(const char *s, char **ret, const char **why)
{
	size_t skip, len, alen;
	const char *a;
	char *p;

	if (strncasecmp(s, "https://", 8) == 0)
		skip = 8;
	else if (strncasecmp(s, "http://", 7) == 0)
		skip = 7;
	else {
		*why = "not an https:// or http:// URL";
		return KC_ECONFIG;
	}
	for (const char *c = s; *c != '\0'; c++) {
		if ((unsigned char)*c <= ' ' || *c == 0x7f) {
			*why = "white space or control characters in the URL";
			return KC_ECONFIG;
		}
		if (*c == '?' || *c == '#') {
			*why = "a query or fragment in the URL";
			return KC_ECONFIG;
		}
	}
	a = s + skip;
	alen = strcspn(a, "/");
	if ((*why = authority_check(a, alen)) != NULL)
		return KC_ECONFIG;
	len = strlen(s);
	while (len > skip + alen && s[len - 1] == '/')
		len--;
	if ((p = kc_strndup(s, len)) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < skip - 3; i++)
		if (p[i] >= 'A' && p[i] <= 'Z')
			p[i] = (char)(p[i] - 'A' + 'a');
	*ret = p;
	return 0;
}

static int
load_cluster(const struct entry *e, struct kc_rest_config *rc, struct kc_status *st)
{
	const char *server, *why;
	int r;

	if ((r = entry_str(e, "server", &server, st)) < 0)
		return r;
	if (server == NULL)
		return kc_status_set(st, KC_ECONFIG, "%s: %s.server: not set",
		    e->file->path, e->where);
	if ((r = server_parse(server, &rc->server, &why)) == KC_ECONFIG)
		return kc_status_set(st, r, "%s: %s.server: \"%s\": %s", e->file->path,
		    e->where, server, why);
	if (r < 0 ||
	    (r = entry_dup(e, "tls-server-name", &rc->tls_server_name, st)) < 0 ||
	    (r = entry_bool(e, "insecure-skip-tls-verify", &rc->insecure_skip_tls_verify,
	    st)) < 0 ||
	    (r = entry_pem(e, "certificate-authority", &rc->ca_pem, &rc->ca_pem_len, st)) < 0)
		return r;
	if (rc->insecure_skip_tls_verify && rc->ca_pem != NULL)
		return kc_status_set(st, KC_ECONFIG, "%s: %s: insecure-skip-tls-verify "
		    "and a certificate authority are both set; use one",
		    e->file->path, e->where);
	return 0;
}

/*
 * Reads a token file: its contents, trimmed, and the stat before the read
 * (so a change racing the read is seen next time). KC_ECONFIG when empty.
 */
static int
token_read(const char *path, struct stat *ret_sb, char **ret, struct kc_status *st)
{
	struct kc_str tok;
	struct stat sb;
	char *text = NULL;
	size_t len = 0;
	int r;

	if (stat(path, &sb) < 0)
		return file_error(st, -errno, "", path);
	if ((r = kc_read_file(path, KC_KUBECONFIG_MAX, &text, &len)) < 0)
		return file_error(st, r, "", path);
	tok = kc_str_trim((struct kc_str){ text, len });
	if (tok.len == 0) {
		free_secret_len(text, len);
		return kc_status_set(st, KC_ECONFIG, "%s: the token file is empty", path);
	}
	*ret = kc_str_dup(tok);
	free_secret_len(text, len);
	if (*ret == NULL)
		return -ENOMEM;
	*ret_sb = sb;
	return 0;
}

static void
token_cache_set(struct kc_rest_config *rc, char *tok, const struct stat *sb)
{
	kc_free_secret(rc->token_cache);
	rc->token_cache = tok;
	rc->token_mtime = sb->st_mtim.tv_sec;
	rc->token_mtime_nsec = sb->st_mtim.tv_nsec;
	rc->token_size = sb->st_size;
	rc->token_ino = sb->st_ino;
}

/* rc->token_file is set: reads it for the first time. */
static int
token_first_read(struct kc_rest_config *rc, const char *prefix, struct kc_status *st)
{
	struct kc_status tst = { 0 };
	struct stat sb;
	char *tok;
	int r;

	if ((r = token_read(rc->token_file, &sb, &tok, &tst)) < 0)
		return r == -ENOMEM ? r : kc_status_set(st, r, "%s%s", prefix, tst.message);
	token_cache_set(rc, tok, &sb);
	return 0;
}

static int
load_groups(const struct entry *e, struct kc_rest_config *rc, struct kc_status *st)
{
	struct json_object *arr;
	size_t n;

	if (e->body == NULL || !json_object_object_get_ex(e->body, "as-groups", &arr) ||
	    arr == NULL)
		return 0;
	if (!json_object_is_type(arr, json_type_array))
		return kc_status_set(st, KC_ECONFIG, "%s: %s.as-groups: not a list",
		    e->file->path, e->where);
	if ((n = json_object_array_length(arr)) == 0)
		return 0;
	if ((rc->impersonate_groups = kc_calloc(n + 1, sizeof(char *))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const char *g = scalar_str(json_object_array_get_idx(arr, i));

		if (g == NULL)
			return kc_status_set(st, KC_ECONFIG, "%s: %s.as-groups[%zu]: not a "
			    "string", e->file->path, e->where, i);
		if ((rc->impersonate_groups[i] = kc_strdup(g)) == NULL)
			return -ENOMEM;
	}
	return 0;
}

static int
load_user(const struct entry *e, struct kc_rest_config *rc, struct kc_status *st)
{
	char prefix[WHERE_MAX + PATH_MAX];
	const char *token_file;
	int r;

	if (entry_has(e, "exec"))
		return kc_status_set(st, KC_ECONFIG, "%s: %s.exec: user \"%s\" uses an exec "
		    "credential plugin, which is not supported; use a token, tokenFile or "
		    "client certificate", e->file->path, e->where, e->name);
	if (entry_has(e, "auth-provider"))
		return kc_status_set(st, KC_ECONFIG, "%s: %s.auth-provider: user \"%s\" "
		    "uses an auth-provider plugin, which is not supported; use a token, "
		    "tokenFile or client certificate", e->file->path, e->where, e->name);
	if ((r = entry_dup(e, "token", &rc->token, st)) < 0 ||
	    (r = entry_str(e, "tokenFile", &token_file, st)) < 0 ||
	    (r = entry_dup(e, "username", &rc->username, st)) < 0 ||
	    (r = entry_dup(e, "password", &rc->password, st)) < 0 ||
	    (r = entry_dup(e, "as", &rc->impersonate_user, st)) < 0 ||
	    (r = load_groups(e, rc, st)) < 0)
		return r;
	if ((rc->token != NULL || token_file != NULL) &&
	    (rc->username != NULL || rc->password != NULL))
		return kc_status_set(st, KC_ECONFIG, "%s: %s: both a token and basic auth "
		    "(username/password) are set; use one", e->file->path, e->where);
	if (rc->impersonate_groups != NULL && rc->impersonate_user == NULL)
		return kc_status_set(st, KC_ECONFIG, "%s: %s: as-groups is set without as",
		    e->file->path, e->where);
	if ((r = entry_pem(e, "client-certificate", &rc->cert_pem, &rc->cert_pem_len,
	    st)) < 0 ||
	    (r = entry_pem(e, "client-key", &rc->key_pem, &rc->key_pem_len, st)) < 0)
		return r;
	if ((rc->cert_pem == NULL) != (rc->key_pem == NULL))
		return kc_status_set(st, KC_ECONFIG, "%s: %s: %s is set without %s",
		    e->file->path, e->where,
		    rc->cert_pem != NULL ? "client-certificate" : "client-key",
		    rc->cert_pem != NULL ? "client-key" : "client-certificate");
	if (token_file == NULL)
		return 0;
	if ((rc->token_file = entry_path(e, token_file)) == NULL)
		return -ENOMEM;
	(void)snprintf(prefix, sizeof(prefix), "%s: %s.tokenFile: ", e->file->path,
	    e->where);
	if (rc->token == NULL)
		return token_first_read(rc, prefix, st);
	/*
	 * With a static token as well, client-go sends that one until the
	 * file can be read: kc_rest_config_token() falls back the same way.
	 */
	if ((r = token_first_read(rc, prefix, NULL)) == -ENOMEM)
		return r;
	return 0;
}

/* The first current-context the files set; NULL when none does. */
static int
current_context(const struct kcset *set, const char **ret, struct kc_status *st)
{
	*ret = NULL;
	for (size_t i = 0; i < set->n; i++) {
		struct json_object *v;
		const char *s;

		if (set->files[i].root == NULL ||
		    !json_object_object_get_ex(set->files[i].root, "current-context", &v) ||
		    v == NULL)
			continue;
		if ((s = scalar_str(v)) == NULL)
			return kc_status_set(st, KC_ECONFIG, "%s: current-context: not a "
			    "string", set->files[i].path);
		if (s[0] != '\0') {
			*ret = s;
			return 0;
		}
	}
	return 0;
}

/* Picks the context, cluster and user, and fills 'rc' from them. */
static int
kcset_build(const struct kcset *set, const struct kc_kubeconfig_opts *opts,
    struct kc_rest_config *rc, struct kc_status *st)
{
	struct entry ctx = { 0 }, cl = { 0 }, us = { 0 };
	const char *ctx_name = NULL, *cl_name = NULL, *us_name = NULL, *ns = NULL;
	int r;

	if (nonempty(opts->context))
		ctx_name = opts->context;
	else if ((r = current_context(set, &ctx_name, st)) < 0)
		return r;
	if (ctx_name != NULL) {
		if ((r = find_entry(set, "contexts", "context", ctx_name, &ctx, st)) < 0 ||
		    (r = entry_str(&ctx, "cluster", &cl_name, st)) < 0 ||
		    (r = entry_str(&ctx, "user", &us_name, st)) < 0 ||
		    (r = entry_str(&ctx, "namespace", &ns, st)) < 0)
			return r;
		if ((rc->context = kc_strdup(ctx_name)) == NULL)
			return -ENOMEM;
	}
	if (nonempty(opts->cluster))
		cl_name = opts->cluster;
	if (nonempty(opts->user))
		us_name = opts->user;
	if (nonempty(opts->namespace))
		ns = opts->namespace;
	if (cl_name == NULL) {
		if (ctx_name == NULL)
			return kc_status_set(st, KC_ECONFIG, "current-context is not set and "
			    "no context was given");
		return kc_status_set(st, KC_ECONFIG, "%s: %s.cluster: not set",
		    ctx.file->path, ctx.where);
	}
	if ((r = find_entry(set, "clusters", "cluster", cl_name, &cl, st)) < 0)
		return r;
	if ((rc->cluster = kc_strdup(cl_name)) == NULL ||
	    (rc->namespace = kc_strdup(ns != NULL ? ns : "default")) == NULL)
		return -ENOMEM;
	if ((r = load_cluster(&cl, rc, st)) < 0)
		return r;
	if (us_name == NULL)
		return 0;
	if ((r = find_entry(set, "users", "user", us_name, &us, st)) < 0)
		return r;
	if ((rc->user = kc_strdup(us_name)) == NULL)
		return -ENOMEM;
	return load_user(&us, rc, st);
}

int
kc_kubeconfig_load(const struct kc_kubeconfig_opts *opts, struct kc_rest_config **ret,
    struct kc_status *st)
{
	static const struct kc_kubeconfig_opts no_opts;
	_cleanup_(kc_rest_config_freep) struct kc_rest_config *rc = NULL;
	struct kcset set = { .n = 0 };
	int r;

	if (opts == NULL)
		opts = &no_opts;
	if ((r = kcset_load(&set, opts, st)) < 0)
		goto out;
	if ((rc = kc_calloc(1, sizeof(*rc))) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = kcset_build(&set, opts, rc, st)) < 0)
		goto out;
	*ret = rc;
	rc = NULL;
out:
	kcset_free(&set);
	if (r == -ENOMEM)
		(void)kc_status_set(st, r, "kubeconfig: out of memory");
	return r;
}

/* The server URL: the host checked, and bracketed when it is IPv6. */
static int
incluster_server(const char *host, const char *port, char **ret, struct kc_status *st)
{
	struct kc_str h = kc_str_from(host);
	uint32_t pn;
	bool ipv6, ok = true;

	if (kc_parse_u32(port, &pn) < 0 || pn == 0 || pn > 65535)
		return kc_status_set(st, KC_ECONFIG, "KUBERNETES_SERVICE_PORT: \"%s\" is "
		    "not a port number", port);
	if (h.len >= 2 && h.p[0] == '[' && h.p[h.len - 1] == ']') {
		h.p++;
		h.len -= 2;
		ipv6 = true;
	} else
		ipv6 = memchr(h.p, ':', h.len) != NULL;
	for (size_t i = 0; i < h.len; i++) {
		char c = h.p[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '-' ||
		    (ipv6 && (c == ':' || c == '%')))
			continue;
		ok = false;
		break;
	}
	if (!ok || h.len == 0)
		return kc_status_set(st, KC_ECONFIG, "KUBERNETES_SERVICE_HOST: \"%s\" is "
		    "not a host name or address", host);
	if (ipv6)
		*ret = kc_asprintf("https://[%.*s]:%u", (int)h.len, h.p, pn);
	else
		*ret = kc_asprintf("https://%.*s:%u", (int)h.len, h.p, pn);
	return *ret != NULL ? 0 : -ENOMEM;
}

int
kc_incluster_load(const struct kc_incluster_opts *opts, struct kc_rest_config **ret,
    struct kc_status *st)
{
	static const struct kc_incluster_opts no_opts;
	_cleanup_(kc_rest_config_freep) struct kc_rest_config *rc = NULL;
	const char *host, *port, *token_file, *ca_file, *ns_file;
	char *ns_text = NULL;
	struct kc_str ns;
	int r;

	if (opts == NULL)
		opts = &no_opts;
	host = opts->host != NULL ? opts->host : getenv("KUBERNETES_SERVICE_HOST");
	port = opts->port != NULL ? opts->port : getenv("KUBERNETES_SERVICE_PORT");
	token_file = opts->token_file != NULL ? opts->token_file : SA_TOKEN;
	ca_file = opts->ca_file != NULL ? opts->ca_file : SA_CA;
	ns_file = opts->namespace_file != NULL ? opts->namespace_file : SA_NAMESPACE;
	if (!nonempty(host) || !nonempty(port))
		return kc_status_set(st, KC_ECONFIG, "not running in a cluster: "
		    "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
	if ((rc = kc_calloc(1, sizeof(*rc))) == NULL)
		return -ENOMEM;
	if ((r = incluster_server(host, port, &rc->server, st)) < 0)
		return r;
	if ((rc->token_file = kc_strdup(token_file)) == NULL)
		return -ENOMEM;
	if ((r = token_first_read(rc, "", st)) < 0)
		return r;
	if ((r = kc_read_file(ca_file, KC_KUBECONFIG_MAX, &rc->ca_pem, &rc->ca_pem_len)) < 0)
		return file_error(st, r, "", ca_file);
	/* Like client-go, an unreadable namespace file means "default". */
	if ((r = kc_read_file(ns_file, KC_KUBECONFIG_MAX, &ns_text, NULL)) == -ENOMEM)
		return r;
	ns = kc_str_trim(kc_str_from(r == 0 ? ns_text : NULL));
	rc->namespace = ns.len > 0 ? kc_str_dup(ns) : kc_strdup("default");
	kc_free(ns_text);
	if (rc->namespace == NULL)
		return -ENOMEM;
	*ret = rc;
	rc = NULL;
	return 0;
}

int
kc_rest_config_load_default(const char *kubeconfig_path, const char *context,
    struct kc_rest_config **ret, struct kc_status *st)
{
	struct kc_kubeconfig_opts opts = { .context = context };

	if (nonempty(kubeconfig_path)) {
		opts.paths = &kubeconfig_path;
		opts.npaths = 1;
		return kc_kubeconfig_load(&opts, ret, st);
	}
	if (!nonempty(getenv("KUBECONFIG")) && nonempty(getenv("KUBERNETES_SERVICE_HOST")))
		return kc_incluster_load(NULL, ret, st);
	return kc_kubeconfig_load(&opts, ret, st);
}

/*
 * Re-reads rc->token_file into the cache when its identity changed since
 * the last read. 0 when the cache is current, else the read's error.
 */
static int
token_refresh(struct kc_rest_config *rc, struct kc_status *st)
{
	struct stat sb;
	char *tok;
	int r;

	if (stat(rc->token_file, &sb) < 0)
		return file_error(st, -errno, "", rc->token_file);
	if (rc->token_cache != NULL && sb.st_mtim.tv_sec == rc->token_mtime &&
	    sb.st_mtim.tv_nsec == rc->token_mtime_nsec && sb.st_size == rc->token_size &&
	    sb.st_ino == rc->token_ino)
		return 0;
	if ((r = token_read(rc->token_file, &sb, &tok, st)) < 0)
		return r;
	token_cache_set(rc, tok, &sb);
	return 0;
}

int
kc_rest_config_token(struct kc_rest_config *rc, const char **ret, struct kc_status *st)
{
	struct kc_status tst = { 0 };
	int r;

	if (rc->token_file == NULL) {
		*ret = rc->token;
		return 0;
	}
	/* A failed re-read keeps the last good token, else the static one. */
	if ((r = token_refresh(rc, &tst)) < 0 && rc->token_cache == NULL &&
	    rc->token == NULL)
		return kc_status_set(st, r, "%s", tst.message);
	*ret = rc->token_cache != NULL ? rc->token_cache : rc->token;
	return 0;
}

static int
dup_pem(char **dst, size_t *dst_len, const char *src, size_t len)
{
	if (src == NULL)
		return 0;
	if ((*dst = kc_malloc(len + 1)) == NULL)
		return -ENOMEM;
	if (len > 0)
		memcpy(*dst, src, len);
	(*dst)[len] = '\0';
	*dst_len = len;
	return 0;
}

int
kc_rest_config_copy(const struct kc_rest_config *rc, struct kc_rest_config **ret)
{
	_cleanup_(kc_rest_config_freep) struct kc_rest_config *c = NULL;

	if ((c = kc_calloc(1, sizeof(*c))) == NULL)
		return -ENOMEM;
	c->insecure_skip_tls_verify = rc->insecure_skip_tls_verify;
	c->token_mtime = rc->token_mtime;
	c->token_mtime_nsec = rc->token_mtime_nsec;
	c->token_size = rc->token_size;
	c->token_ino = rc->token_ino;
	if (dup_field(&c->server, rc->server) < 0 ||
	    dup_field(&c->tls_server_name, rc->tls_server_name) < 0 ||
	    dup_pem(&c->ca_pem, &c->ca_pem_len, rc->ca_pem, rc->ca_pem_len) < 0 ||
	    dup_pem(&c->cert_pem, &c->cert_pem_len, rc->cert_pem, rc->cert_pem_len) < 0 ||
	    dup_pem(&c->key_pem, &c->key_pem_len, rc->key_pem, rc->key_pem_len) < 0 ||
	    dup_field(&c->token, rc->token) < 0 ||
	    dup_field(&c->token_file, rc->token_file) < 0 ||
	    dup_field(&c->username, rc->username) < 0 ||
	    dup_field(&c->password, rc->password) < 0 ||
	    dup_field(&c->impersonate_user, rc->impersonate_user) < 0 ||
	    dup_field(&c->namespace, rc->namespace) < 0 ||
	    dup_field(&c->context, rc->context) < 0 ||
	    dup_field(&c->cluster, rc->cluster) < 0 ||
	    dup_field(&c->user, rc->user) < 0 ||
	    dup_field(&c->token_cache, rc->token_cache) < 0)
		return -ENOMEM;
	if (rc->impersonate_groups != NULL) {
		size_t n = 0;

		while (rc->impersonate_groups[n] != NULL)
			n++;
		if ((c->impersonate_groups = kc_calloc(n + 1, sizeof(char *))) == NULL)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++)
			if (dup_field(&c->impersonate_groups[i], rc->impersonate_groups[i]) < 0)
				return -ENOMEM;
	}
	*ret = c;
	c = NULL;
	return 0;
}

struct kc_rest_config *
kc_rest_config_free(struct kc_rest_config *rc)
{
	if (rc == NULL)
		return NULL;
	kc_free(rc->server);
	kc_free(rc->tls_server_name);
	kc_free(rc->ca_pem);
	kc_free(rc->cert_pem);
	free_secret_len(rc->key_pem, rc->key_pem_len);
	kc_free_secret(rc->token);
	kc_free(rc->token_file);
	kc_free(rc->username);
	kc_free_secret(rc->password);
	kc_free(rc->impersonate_user);
	if (rc->impersonate_groups != NULL) {
		for (size_t i = 0; rc->impersonate_groups[i] != NULL; i++)
			kc_free(rc->impersonate_groups[i]);
		kc_free(rc->impersonate_groups);
	}
	kc_free(rc->namespace);
	kc_free(rc->context);
	kc_free(rc->cluster);
	kc_free(rc->user);
	kc_free_secret(rc->token_cache);
	explicit_bzero(rc, sizeof(*rc));
	kc_free(rc);
	return NULL;
}

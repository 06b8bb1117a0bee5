/*
 * test_kubeconfig.c: kubeconfig files, merging, credentials, token
 * rotation and in-cluster config.
 *
 * Fixed configs live in tests/fixtures/kubeconfig/; cases that vary one
 * field write small configs into a temporary directory. Every case starts
 * with KUBECONFIG, HOME and KUBERNETES_SERVICE_HOST/PORT unset and gets
 * them back afterwards.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/kubeconfig.h>
#include <kc/str.h>

#include "testutil.h"

#define FX(name)	KC_FIXTURES "/kubeconfig/" name

static const char *const env_names[] = {
	"KUBECONFIG", "HOME", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT",
};
static char *env_saved[KC_ARRAY_SIZE(env_names)];

static void
env_setup(void)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(env_names); i++) {
		const char *v = getenv(env_names[i]);

		env_saved[i] = v != NULL ? strdup(v) : NULL;
		ck_assert_int_eq(unsetenv(env_names[i]), 0);
	}
}

static void
env_teardown(void)
{
	fail_alloc_after(SIZE_MAX);
	for (size_t i = 0; i < KC_ARRAY_SIZE(env_names); i++) {
		if (env_saved[i] != NULL)
			ck_assert_int_eq(setenv(env_names[i], env_saved[i], 1), 0);
		else
			ck_assert_int_eq(unsetenv(env_names[i]), 0);
		free(env_saved[i]);
		env_saved[i] = NULL;
	}
}

static int
load(const char *const *paths, size_t npaths, const char *context,
    struct kc_rest_config **ret, struct kc_status *st)
{
	struct kc_kubeconfig_opts o = {
		.paths = paths,
		.npaths = npaths,
		.context = context,
	};

	return kc_kubeconfig_load(&o, ret, st);
}

static struct kc_rest_config *
load_ok(const char *path, const char *context)
{
	struct kc_rest_config *rc = NULL;
	struct kc_status st = { 0 };
	int r;

	r = load(&path, 1, context, &rc, &st);
	ck_assert_msg(r == 0, "%s: %s: %s", path, kc_err_name(r), st.message);
	ck_assert_ptr_nonnull(rc);
	return rc;
}

/* Loads 'path' expecting failure 'code' with 'want' in the message. */
static void
load_fails(const char *path, const char *context, int code, const char *want)
{
	struct kc_rest_config *rc = NULL;
	struct kc_status st = { 0 };
	int r;

	r = load(&path, 1, context, &rc, &st);
	ck_assert_msg(r == code, "%s: got %s (%s), want %s", path, kc_err_name(r),
	    st.message, kc_err_name(code));
	ck_assert_ptr_null(rc);
	ck_assert_msg(strstr(st.message, want) != NULL, "message \"%s\" lacks \"%s\"",
	    st.message, want);
}

static void
assert_fixture(const char *pem, size_t len, const char *name)
{
	size_t flen;
	char *want = tu_fixture(name, &flen);

	ck_assert_ptr_nonnull(pem);
	ck_assert_uint_eq(len, flen);
	ck_assert_str_eq(pem, want);
	kc_free(want);
}

static const char *
token_of(struct kc_rest_config *rc)
{
	struct kc_status st = { 0 };
	const char *tok = NULL;
	int r;

	r = kc_rest_config_token(rc, &tok, &st);
	ck_assert_msg(r == 0, "token: %s: %s", kc_err_name(r), st.message);
	return tok;
}

START_TEST(single_file)
{
	struct kc_rest_config *rc = load_ok(FX("single.yaml"), NULL);

	ck_assert_str_eq(rc->server, "https://dev.example.com:6443");
	ck_assert_str_eq(rc->tls_server_name, "kubernetes.dev.internal");
	ck_assert_str_eq(rc->context, "dev");
	ck_assert_str_eq(rc->cluster, "dev");
	ck_assert_str_eq(rc->user, "alice");
	ck_assert_str_eq(rc->namespace, "team-a");
	ck_assert(!rc->insecure_skip_tls_verify);
	assert_fixture(rc->ca_pem, rc->ca_pem_len, "kubeconfig/ca.crt");
	assert_fixture(rc->cert_pem, rc->cert_pem_len, "kubeconfig/client.crt");
	assert_fixture(rc->key_pem, rc->key_pem_len, "kubeconfig/client.key");
	ck_assert_str_eq(rc->impersonate_user, "admin");
	ck_assert_ptr_nonnull(rc->impersonate_groups);
	ck_assert_str_eq(rc->impersonate_groups[0], "system:masters");
	ck_assert_str_eq(rc->impersonate_groups[1], "team-a");
	ck_assert_ptr_null(rc->impersonate_groups[2]);
	ck_assert_ptr_null(rc->token);
	ck_assert_ptr_null(rc->token_file);
	ck_assert_ptr_null(rc->username);
	ck_assert_ptr_null(token_of(rc));
	ck_assert_ptr_null(kc_rest_config_free(rc));
	ck_assert_ptr_null(kc_rest_config_free(NULL));
}
END_TEST

START_TEST(context_override)
{
	struct kc_rest_config *rc = load_ok(FX("single.yaml"), "prod");

	ck_assert_str_eq(rc->context, "prod");
	ck_assert_str_eq(rc->server, "https://prod.example.com:6443");
	ck_assert_ptr_null(rc->tls_server_name);
	ck_assert_str_eq(rc->user, "bob");
	ck_assert_str_eq(rc->namespace, "default");
	ck_assert_str_eq(rc->token, "bob-static-token");
	ck_assert_str_eq(token_of(rc), "bob-static-token");
	ck_assert_ptr_null(rc->cert_pem);
	ck_assert_ptr_null(rc->impersonate_groups);
	kc_rest_config_free(rc);

	/* A context without a user: no credentials at all. */
	rc = load_ok(FX("single.yaml"), "anonymous");
	ck_assert_ptr_null(rc->user);
	ck_assert_ptr_null(rc->token);
	ck_assert_ptr_null(rc->cert_pem);
	kc_rest_config_free(rc);
}
END_TEST

START_TEST(field_overrides)
{
	const char *path = FX("single.yaml");
	struct kc_kubeconfig_opts o = {
		.paths = &path,
		.npaths = 1,
		.cluster = "prod",
		.user = "bob",
		.namespace = "override-ns",
	};
	struct kc_rest_config *rc = NULL;
	struct kc_status st = { 0 };

	ck_assert_int_eq(kc_kubeconfig_load(&o, &rc, &st), 0);
	ck_assert_str_eq(rc->context, "dev");
	ck_assert_str_eq(rc->cluster, "prod");
	ck_assert_str_eq(rc->server, "https://prod.example.com:6443");
	ck_assert_str_eq(rc->user, "bob");
	ck_assert_str_eq(rc->token, "bob-static-token");
	ck_assert_ptr_null(rc->cert_pem);
	ck_assert_str_eq(rc->namespace, "override-ns");
	kc_rest_config_free(rc);

	/* Overrides name entries that must exist too. */
	o.user = "nobody";
	rc = NULL;
	ck_assert_int_eq(kc_kubeconfig_load(&o, &rc, &st), KC_ECONFIG);
	ck_assert_ptr_null(rc);
	ck_assert_str_eq(st.message, "users: user \"nobody\" not found");
}
END_TEST

START_TEST(missing_entries)
{
	load_fails(FX("single.yaml"), "nope", KC_ECONFIG,
	    "contexts: context \"nope\" not found");
	load_fails(FX("single.yaml"), "broken-cluster", KC_ECONFIG,
	    "clusters: cluster \"nowhere\" not found");
	load_fails(FX("single.yaml"), "broken-user", KC_ECONFIG,
	    "users: user \"nobody\" not found");
	load_fails(FX("single.yaml"), "no-cluster", KC_ECONFIG,
	    "single.yaml: contexts[\"no-cluster\"].cluster: not set");
}
END_TEST

START_TEST(missing_client_key)
{
	load_fails(FX("single.yaml"), "dave", -ENOENT,
	    "/kubeconfig/single.yaml: users[\"dave\"].client-key: ");
	load_fails(FX("single.yaml"), "dave", -ENOENT,
	    "/kubeconfig/missing.key: No such file or directory");
}
END_TEST

START_TEST(merged_files)
{
	const char *ab[] = { FX("merge-a.yaml"), FX("merge-b.yaml") };
	const char *ba[] = { FX("merge-b.yaml"), FX("merge-a.yaml") };
	const char *acb[] = { FX("merge-a.yaml"), FX("merge-c.yaml"), FX("merge-b.yaml") };
	struct kc_rest_config *rc = NULL;
	struct kc_status st = { 0 };

	/* current-context from b (a sets none); every entry a's, whole. */
	ck_assert_int_eq(load(ab, 2, NULL, &rc, &st), 0);
	ck_assert_str_eq(rc->context, "shared");
	ck_assert_str_eq(rc->namespace, "from-a");
	ck_assert_str_eq(rc->server, "https://a.example.com");
	ck_assert(!rc->insecure_skip_tls_verify);
	ck_assert_str_eq(rc->token, "token-a");
	rc = kc_rest_config_free(rc);

	ck_assert_int_eq(load(ba, 2, NULL, &rc, &st), 0);
	ck_assert_str_eq(rc->namespace, "from-b");
	ck_assert_str_eq(rc->server, "https://b.example.com");
	ck_assert(rc->insecure_skip_tls_verify);
	ck_assert_str_eq(rc->token, "token-b");
	rc = kc_rest_config_free(rc);

	/* The first current-context set wins; entries come from any file. */
	ck_assert_int_eq(load(acb, 3, NULL, &rc, &st), 0);
	ck_assert_str_eq(rc->context, "b-ctx");
	ck_assert_str_eq(rc->server, "https://only-a.example.com");
	ck_assert_str_eq(rc->user, "b-user");
	ck_assert_str_eq(rc->username, "admin");
	ck_assert_str_eq(rc->password, "b-password");
	ck_assert_ptr_null(rc->token);
	rc = kc_rest_config_free(rc);

	/* --context picks across files too. */
	ck_assert_int_eq(load(ab, 2, "b-ctx", &rc, &st), 0);
	ck_assert_str_eq(rc->cluster, "only-a");
	rc = kc_rest_config_free(rc);
}
END_TEST

START_TEST(kubeconfig_env)
{
	struct kc_rest_config *rc = NULL;
	struct kc_status st = { 0 };

	/* Missing files and empty elements are skipped. */
	ck_assert_int_eq(setenv("KUBECONFIG", FX("missing.yaml") "::" FX("merge-b.yaml")
	    ":" FX("merge-a.yaml") ":" FX("merge-b.yaml"), 1), 0);
	ck_assert_int_eq(kc_kubeconfig_load(NULL, &rc, &st), 0);
	ck_assert_str_eq(rc->server, "https://b.example.com");
	ck_assert_str_eq(rc->token, "token-b");
	rc = kc_rest_config_free(rc);

	ck_assert_int_eq(setenv("KUBECONFIG", FX("missing.yaml") ":" FX("gone.yaml"), 1), 0);
	ck_assert_int_eq(kc_kubeconfig_load(NULL, &rc, &st), -ENOENT);
	ck_assert_ptr_null(rc);
	ck_assert_ptr_nonnull(strstr(st.message, "none of its files exist"));
}
END_TEST

START_TEST(missing_files)
{
	const char *two[] = { FX("missing.yaml"), FX("gone.yaml") };
	const char *mixed[] = { FX("missing.yaml"), FX("single.yaml") };
	struct kc_rest_config *rc = NULL;
	struct kc_status st = { 0 };

	load_fails(FX("missing.yaml"), NULL, -ENOENT,
	    "missing.yaml: No such file or directory");
	ck_assert_int_eq(load(two, 2, NULL, &rc, &st), -ENOENT);
	ck_assert_str_eq(st.message, "none of the 2 kubeconfig files exist");
	ck_assert_int_eq(load(mixed, 2, NULL, &rc, &st), 0);
	ck_assert_str_eq(rc->context, "dev");
	rc = kc_rest_config_free(rc);
	load_fails(KC_FIXTURES "/kubeconfig", NULL, -EISDIR, "kubeconfig: Is a directory");
}
END_TEST

START_TEST(relative_paths)
{
	struct kc_rest_config *rc;
	char *want;
	int cwd;

	/* A relative kubeconfig path: its directory is made absolute. */
	ck_assert_int_ge(cwd = open(".", O_RDONLY | O_DIRECTORY), 0);
	ck_assert_int_eq(chdir(KC_FIXTURES), 0);
	rc = load_ok("kubeconfig/single.yaml", "carol");
	ck_assert_int_eq(fchdir(cwd), 0);
	(void)close(cwd);
	assert_fixture(rc->ca_pem, rc->ca_pem_len, "kubeconfig/ca.crt");
	want = kc_strdup(FX("token"));
	ck_assert_str_eq(rc->token_file, want);
	ck_assert_str_eq(rc->token_cache, "carol-file-token");
	ck_assert_str_eq(token_of(rc), "carol-file-token");
	kc_free(want);
	kc_rest_config_free(rc);
}
END_TEST

START_TEST(data_forms)
{
	struct kc_rest_config *rc = load_ok(FX("data.yaml"), NULL);

	assert_fixture(rc->ca_pem, rc->ca_pem_len, "kubeconfig/ca.crt");
	assert_fixture(rc->cert_pem, rc->cert_pem_len, "kubeconfig/client.crt");
	assert_fixture(rc->key_pem, rc->key_pem_len, "kubeconfig/client.key");
	kc_rest_config_free(rc);
}
END_TEST

/* A one-context config with the given cluster and user bodies. */
static char *
write_config(const char *dir, const char *cluster, const char *user)
{
	char *text, *path;

	text = kc_asprintf("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
	    "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
	    "clusters:\n- name: k\n  cluster: %s\n"
	    "users:\n- name: u\n  user: %s\n", cluster, user);
	ck_assert_ptr_nonnull(text);
	path = tu_write(dir, "config", text);
	kc_free(text);
	return path;
}

START_TEST(base64_padding)
{
	static const struct {
		const char	*b64;
		const char	*plain;
	} cases[] = {
		{ "YQ==", "a" },
		{ "YWI=", "ab" },
		{ "YWJj", "abc" },
		{ "YWJj\\nZA==", "abcd" },
		{ " YWJj ZGU= ", "abcde" },
	};
	char *dir = tu_tmpdir();

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct kc_rest_config *rc;
		char *cluster, *path;

		cluster = kc_asprintf("{server: 'https://k', certificate-authority-data: "
		    "\"%s\"}", cases[i].b64);
		ck_assert_ptr_nonnull(cluster);
		path = write_config(dir, cluster, "{}");
		rc = load_ok(path, NULL);
		ck_assert_str_eq(rc->ca_pem, cases[i].plain);
		ck_assert_uint_eq(rc->ca_pem_len, strlen(cases[i].plain));
		kc_rest_config_free(rc);
		kc_free(cluster);
		kc_free(path);
	}
	tu_tmpdir_remove(dir);
}
END_TEST

START_TEST(base64_invalid)
{
	static const struct {
		const char	*b64;
		const char	*want;
	} cases[] = {
		{ "YWJ", "not a whole number of 4-character groups" },
		{ "YQ", "not a whole number of 4-character groups" },
		{ "Y===", "more than two '=' of padding" },
		{ "YW*j", "invalid base64 at offset 2" },
		{ "YQ==YWJj", "invalid base64 at offset 4" },
		{ "YQ=a", "invalid base64 at offset 3" },
		{ "=YWJ", "invalid base64 at offset 1" },
		{ "YWJj-_==", "invalid base64 at offset 4" },
	};
	char *dir = tu_tmpdir();

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		char *user, *path;

		user = kc_asprintf("{client-certificate-data: \"%s\", "
		    "client-key-data: \"YQ==\"}", cases[i].b64);
		ck_assert_ptr_nonnull(user);
		path = write_config(dir, "{server: 'https://k'}", user);
		load_fails(path, NULL, KC_ECONFIG, "users[\"u\"].client-certificate-data: ");
		load_fails(path, NULL, KC_ECONFIG, cases[i].want);
		kc_free(user);
		kc_free(path);
	}
	tu_tmpdir_remove(dir);
}
END_TEST

START_TEST(server_urls)
{
	static const struct {
		const char	*in;
		const char	*out;	/* NULL: rejected with 'out_err' */
		const char	*err;
	} cases[] = {
		{ "https://k.example.com:6443/", "https://k.example.com:6443", NULL },
		{ "HTTPS://Host:6443///", "https://Host:6443", NULL },
		{ "http://[::1]:8080/", "http://[::1]:8080", NULL },
		{ "https://[fd00::1]", "https://[fd00::1]", NULL },
		{ "https://k/prefix/", "https://k/prefix", NULL },
		{ "https://10.0.0.1", "https://10.0.0.1", NULL },
		{ "k.example.com:6443", NULL, "not an https:// or http:// URL" },
		{ "ftp://k", NULL, "not an https:// or http:// URL" },
		{ "https://", NULL, "no host" },
		{ "https:///path", NULL, "no host" },
		{ "https://:443", NULL, "no host" },
		{ "https://k:0", NULL, "bad port" },
		{ "https://k:65536", NULL, "bad port" },
		{ "https://k:", NULL, "bad port" },
		{ "https://k:12ab", NULL, "bad port" },
		{ "https://a b", NULL, "white space" },
		{ "https://[::1", NULL, "bad IPv6 address" },
		{ "https://[::1]x", NULL, "junk after the IPv6 address" },
		{ "https://::1", NULL, "must be in brackets" },
		{ "https://u:p@k", NULL, "credentials in the URL" },
		{ "https://k/?watch=1", NULL, "a query or fragment" },
	};
	char *dir = tu_tmpdir();

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		char *cluster, *path;

		cluster = kc_asprintf("{server: '%s'}", cases[i].in);
		ck_assert_ptr_nonnull(cluster);
		path = write_config(dir, cluster, "{}");
		if (cases[i].out != NULL) {
			struct kc_rest_config *rc = load_ok(path, NULL);

			ck_assert_str_eq(rc->server, cases[i].out);
			kc_rest_config_free(rc);
		} else {
			load_fails(path, NULL, KC_ECONFIG, "clusters[\"k\"].server: \"");
			load_fails(path, NULL, KC_ECONFIG, cases[i].err);
		}
		kc_free(cluster);
		kc_free(path);
	}
	tu_tmpdir_remove(dir);
}
END_TEST

START_TEST(insecure_flag)
{
	struct kc_rest_config *rc;
	char *dir = tu_tmpdir(), *path;

	path = write_config(dir, "{server: 'https://k', insecure-skip-tls-verify: true}",
	    "{token: t}");
	rc = load_ok(path, NULL);
	ck_assert(rc->insecure_skip_tls_verify);
	ck_assert_ptr_null(rc->ca_pem);
	kc_rest_config_free(rc);
	kc_free(path);

	path = write_config(dir, "{server: 'https://k', insecure-skip-tls-verify: false}",
	    "{}");
	rc = load_ok(path, NULL);
	ck_assert(!rc->insecure_skip_tls_verify);
	kc_rest_config_free(rc);
	kc_free(path);

	path = write_config(dir, "{server: 'https://k', insecure-skip-tls-verify: 'true'}",
	    "{}");
	load_fails(path, NULL, KC_ECONFIG,
	    "clusters[\"k\"].insecure-skip-tls-verify: not a boolean");
	kc_free(path);

	path = write_config(dir, "{server: 'https://k', insecure-skip-tls-verify: true, "
	    "certificate-authority-data: YQ==}", "{}");
	load_fails(path, NULL, KC_ECONFIG, "insecure-skip-tls-verify and a certificate "
	    "authority are both set");
	kc_free(path);
	tu_tmpdir_remove(dir);
}
END_TEST

START_TEST(bad_fields)
{
	static const struct {
		const char	*cluster;
		const char	*user;
		const char	*want;
	} cases[] = {
		{ "{}", "{}", "clusters[\"k\"].server: not set" },
		{ "{server: {a: b}}", "{}", "clusters[\"k\"].server: not a string" },
		{ "{server: 'https://k', certificate-authority: ca.crt, "
		  "certificate-authority-data: YQ==}", "{}",
		  "clusters[\"k\"]: certificate-authority and certificate-authority-data "
		  "are both set" },
		{ "{server: 'https://k', certificate-authority: nope.crt}", "{}",
		  "clusters[\"k\"].certificate-authority: " },
		{ "{server: 'https://k'}", "{client-certificate-data: YQ==}",
		  "users[\"u\"]: client-certificate is set without client-key" },
		{ "{server: 'https://k'}", "{client-key-data: YQ==}",
		  "users[\"u\"]: client-key is set without client-certificate" },
		{ "{server: 'https://k'}", "{client-key: a, client-key-data: YQ==}",
		  "client-key and client-key-data are both set" },
		{ "{server: 'https://k'}", "{token: t, username: a, password: b}",
		  "both a token and basic auth" },
		{ "{server: 'https://k'}", "{as-groups: [a]}", "as-groups is set without as" },
		{ "{server: 'https://k'}", "{as: a, as-groups: a}",
		  "users[\"u\"].as-groups: not a list" },
		{ "{server: 'https://k'}", "{as: a, as-groups: [[a]]}",
		  "users[\"u\"].as-groups[0]: not a string" },
		{ "{server: 'https://k'}", "{token: [t]}", "users[\"u\"].token: not a string" },
		{ "{server: 'https://k'}", "[]", "users[\"u\"].user: not a mapping" },
	};
	char *dir = tu_tmpdir();

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		char *path = write_config(dir, cases[i].cluster, cases[i].user);
		struct kc_rest_config *rc = NULL;
		struct kc_status st = { 0 };
		int r;

		r = load((const char *const *)&path, 1, NULL, &rc, &st);
		ck_assert_msg(r < 0, "case %zu loaded", i);
		ck_assert_ptr_null(rc);
		ck_assert_msg(strstr(st.message, cases[i].want) != NULL,
		    "case %zu: \"%s\" lacks \"%s\"", i, st.message, cases[i].want);
		ck_assert_msg(strstr(st.message, path) != NULL, "case %zu: \"%s\" lacks "
		    "the file name", i, st.message);
		kc_free(path);
	}
	tu_tmpdir_remove(dir);
}
END_TEST

START_TEST(bad_documents)
{
	static const struct {
		const char	*text;
		const char	*want;
	} cases[] = {
		{ "- a\n- b\n", "not a kubeconfig" },
		{ "kind: Pod\n", "kind: \"Pod\" is not Config" },
		{ "apiVersion: v2\n", "apiVersion: \"v2\" is not v1" },
		{ "current-context: c\nclusters: {}\n", "contexts: context \"c\" not found" },
		{ "current-context: [c]\n", "current-context: not a string" },
		{ "current-context: c\ncontexts: c\n", "contexts: not a list" },
		{ "current-context: c\ncontexts: [c]\n", "contexts[0]: not a mapping" },
		{ "current-context: c\ncontexts: [{context: {}}]\n", "contexts[0].name: missing" },
		{ "current-context: c\ncontexts:\n- {name: c, context: {cluster: k}}\n"
		  "- {name: c, context: {cluster: k}}\n", "context \"c\" is defined twice" },
		{ "", "current-context is not set and no context was given" },
		{ "# only a comment\n", "current-context is not set and no context was given" },
		{ "~\n", "current-context is not set and no context was given" },
	};
	char *dir = tu_tmpdir();

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		char *path = tu_write(dir, "config", cases[i].text);
		struct kc_rest_config *rc = NULL;
		struct kc_status st = { 0 };
		int r;

		r = load((const char *const *)&path, 1, NULL, &rc, &st);
		ck_assert_msg(r == KC_ECONFIG, "case %zu: %s: %s", i, kc_err_name(r),
		    st.message);
		ck_assert_ptr_null(rc);
		ck_assert_msg(strstr(st.message, cases[i].want) != NULL,
		    "case %zu: \"%s\" lacks \"%s\"", i, st.message, cases[i].want);
		kc_free(path);
	}
	tu_tmpdir_remove(dir);
}
END_TEST

START_TEST(malformed_yaml)
{
	char *dir = tu_tmpdir(), *path;

	load_fails(FX("malformed.yaml"), NULL, KC_EPARSE,
	    FX("malformed.yaml") ": line 4, column 11: ");
	path = tu_write(dir, "config", "kind: Config\n---\nkind: Config\n");
	load_fails(path, NULL, KC_EPARSE, "config: expected one YAML document, found 2");
	kc_free(path);
	tu_tmpdir_remove(dir);
}
END_TEST

START_TEST(scalars_as_strings)
{
	struct kc_rest_config *rc;
	char *dir = tu_tmpdir(), *path;

	/* kubectl reads YAML numbers and booleans into string fields as text. */
	path = tu_write(dir, "config", "current-context: 7\n"
	    "contexts:\n- name: 7\n  context: {cluster: 1, user: true, namespace: 42}\n"
	    "clusters:\n- name: 1\n  cluster: {server: 'https://k'}\n"
	    "users:\n- name: true\n  user: {token: 12345}\n");
	rc = load_ok(path, NULL);
	ck_assert_str_eq(rc->context, "7");
	ck_assert_str_eq(rc->cluster, "1");
	ck_assert_str_eq(rc->user, "true");
	ck_assert_str_eq(rc->namespace, "42");
	ck_assert_str_eq(rc->token, "12345");
	kc_rest_config_free(rc);
	kc_free(path);
	tu_tmpdir_remove(dir);
}
END_TEST

START_TEST(too_many_files)
{
	const char *paths[KC_KUBECONFIG_FILES_MAX + 1];
	char *owned[KC_KUBECONFIG_FILES_MAX + 1];
	struct kc_rest_config *rc = NULL;
	struct kc_status st = { 0 };
	char *dir = tu_tmpdir();

	for (size_t i = 0; i < KC_ARRAY_SIZE(paths); i++) {
		char name[32];

		(void)snprintf(name, sizeof(name), "c%zu", i);
		paths[i] = owned[i] = tu_write(dir, name, "kind: Config\n");
	}
	ck_assert_int_eq(load(paths, KC_ARRAY_SIZE(paths), NULL, &rc, &st), KC_ECONFIG);
	ck_assert_ptr_null(rc);
	ck_assert_ptr_nonnull(strstr(st.message, "more than 64 kubeconfig files"));
	/* Duplicates count once. */
	for (size_t i = 1; i < KC_ARRAY_SIZE(paths); i++)
		paths[i] = paths[0];
	ck_assert_int_eq(load(paths, KC_ARRAY_SIZE(paths), NULL, &rc, &st), KC_ECONFIG);
	ck_assert_str_eq(st.message, "current-context is not set and no context was given");
	for (size_t i = 0; i < KC_ARRAY_SIZE(owned); i++)
		kc_free(owned[i]);
	tu_tmpdir_remove(dir);
}
END_TEST

START_TEST(file_too_large)
{
	char *dir = tu_tmpdir(), *path, *text;

	text = kc_malloc(KC_KUBECONFIG_MAX + 2);
	ck_assert_ptr_nonnull(text);
	memset(text, '#', KC_KUBECONFIG_MAX + 1);
	text[KC_KUBECONFIG_MAX + 1] = '\0';
	path = tu_write(dir, "config", text);
	kc_free(text);
	load_fails(path, NULL, -E2BIG, "file larger than");
	kc_free(path);
	tu_tmpdir_remove(dir);
}
END_TEST

START_TEST(plugins_rejected)
{
	load_fails(FX("exec.yaml"), NULL, KC_ECONFIG, "users[\"eve\"].exec: user \"eve\" "
	    "uses an exec credential plugin, which is not supported");
	load_fails(FX("exec.yaml"), "gke", KC_ECONFIG, "users[\"gke-user\"].auth-provider: "
	    "user \"gke-user\" uses an auth-provider plugin, which is not supported");
}
END_TEST

START_TEST(token_and_token_file)
{
	struct kc_rest_config *rc;
	char *dir = tu_tmpdir(), *path, *tok;

	tok = tu_write(dir, "tok", "  file-token \n\n");
	path = write_config(dir, "{server: 'https://k'}", "{tokenFile: tok}");
	rc = load_ok(path, NULL);
	ck_assert_ptr_null(rc->token);
	ck_assert_str_eq(rc->token_file, tok);
	ck_assert_str_eq(token_of(rc), "file-token");
	kc_rest_config_free(rc);
	kc_free(path);

	/* Both: the file's token is sent, the static one is the fallback. */
	path = write_config(dir, "{server: 'https://k'}",
	    "{token: static-token, tokenFile: tok}");
	rc = load_ok(path, NULL);
	ck_assert_str_eq(rc->token, "static-token");
	ck_assert_str_eq(token_of(rc), "file-token");
	kc_rest_config_free(rc);
	kc_free(path);

	/* Both, and the file unreadable yet: the static token, as client-go. */
	path = write_config(dir, "{server: 'https://k'}",
	    "{token: static-token, tokenFile: later}");
	rc = load_ok(path, NULL);
	ck_assert_ptr_nonnull(strstr(rc->token_file, "/later"));
	ck_assert_str_eq(token_of(rc), "static-token");
	kc_free(tu_write(dir, "later", "file-token\n"));
	ck_assert_str_eq(token_of(rc), "file-token");
	kc_rest_config_free(rc);
	kc_free(path);

	path = write_config(dir, "{server: 'https://k'}", "{tokenFile: missing}");
	load_fails(path, NULL, -ENOENT, "users[\"u\"].tokenFile: ");
	load_fails(path, NULL, -ENOENT, "/missing: No such file or directory");
	kc_free(path);

	kc_free(tu_write(dir, "empty", " \n"));
	path = write_config(dir, "{server: 'https://k'}", "{tokenFile: empty}");
	load_fails(path, NULL, KC_ECONFIG, "users[\"u\"].tokenFile: ");
	load_fails(path, NULL, KC_ECONFIG, "the token file is empty");
	kc_free(path);

	kc_free(tok);
	tu_tmpdir_remove(dir);
}
END_TEST

static void
set_mtime(const char *path, time_t mtime)
{
	struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };

	ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* Rewrites 'path' in place (same inode) and sets its mtime. */
static void
rewrite(const char *path, const char *text, time_t mtime)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	set_mtime(path, mtime);
}

START_TEST(token_rotation)
{
	struct kc_rest_config *rc;
	char *dir = tu_tmpdir(), *path, *tok;

	tok = tu_write(dir, "tok", "token-one\n");
	rewrite(tok, "token-one\n", 1000000000);
	path = write_config(dir, "{server: 'https://k'}", "{tokenFile: tok}");
	rc = load_ok(path, NULL);
	ck_assert_str_eq(token_of(rc), "token-one");

	/* Same size, same inode, same mtime: the cached token is kept. */
	rewrite(tok, "token-two\n", 1000000000);
	ck_assert_str_eq(token_of(rc), "token-one");

	/* A new mtime alone is enough to re-read. */
	rewrite(tok, "token-two\n", 1000000100);
	ck_assert_str_eq(token_of(rc), "token-two");
	ck_assert_int_eq(rc->token_mtime, 1000000100);
	ck_assert_int_eq(rc->token_size, 10);

	/* A new size alone too. */
	rewrite(tok, "token-three\n", 1000000100);
	ck_assert_str_eq(token_of(rc), "token-three");

	/* So does a replacement file (a new inode), as the kubelet rotates. */
	kc_free(tu_write(dir, "tok", "token-fours\n"));
	set_mtime(tok, 1000000100);
	ck_assert_str_eq(token_of(rc), "token-fours");

	kc_rest_config_free(rc);
	kc_free(path);
	kc_free(tok);
	tu_tmpdir_remove(dir);
}
END_TEST

START_TEST(token_reread_failure)
{
	struct kc_rest_config *rc, *bare;
	struct kc_status st = { 0 };
	const char *t = NULL;
	char *dir = tu_tmpdir(), *path, *tok;

	tok = tu_write(dir, "tok", "good-token\n");
	path = write_config(dir, "{server: 'https://k'}", "{tokenFile: tok}");
	rc = load_ok(path, NULL);
	ck_assert_str_eq(token_of(rc), "good-token");

	/* Emptied: keep the last good token. */
	rewrite(tok, "\n", 1000000000);
	ck_assert_str_eq(token_of(rc), "good-token");

	/* Gone: the same. */
	ck_assert_int_eq(unlink(tok), 0);
	ck_assert_str_eq(token_of(rc), "good-token");

	/* Back: read again. */
	kc_free(tu_write(dir, "tok", "new-token\n"));
	ck_assert_str_eq(token_of(rc), "new-token");

	/* With no good token yet and no static one, the error comes out. */
	ck_assert_int_eq(unlink(tok), 0);
	bare = kc_calloc(1, sizeof(*bare));
	ck_assert_ptr_nonnull(bare);
	bare->token_file = kc_strdup(tok);
	ck_assert_int_eq(kc_rest_config_token(bare, &t, &st), -ENOENT);
	ck_assert_ptr_nonnull(strstr(st.message, "/tok: No such file or directory"));

	/* ...unless there is a static token to fall back on. */
	bare->token = kc_strdup("static");
	ck_assert_str_eq(token_of(bare), "static");
	kc_rest_config_free(bare);

	kc_rest_config_free(rc);
	kc_free(path);
	kc_free(tok);
	tu_tmpdir_remove(dir);
}
END_TEST

struct incluster_files {
	char	*dir;
	char	*token;
	char	*ca;
	char	*ns;
};

static void
incluster_files(struct incluster_files *f)
{
	f->dir = tu_tmpdir();
	f->token = tu_write(f->dir, "token", "sa-token\n");
	f->ca = tu_write(f->dir, "ca.crt", "-----BEGIN CERTIFICATE-----\nCA\n"
	    "-----END CERTIFICATE-----\n");
	f->ns = tu_write(f->dir, "namespace", "team-b\n");
}

static void
incluster_files_free(struct incluster_files *f)
{
	kc_free(f->token);
	kc_free(f->ca);
	kc_free(f->ns);
	tu_tmpdir_remove(f->dir);
}

START_TEST(incluster)
{
	struct incluster_files f;
	struct kc_rest_config *rc = NULL;
	struct kc_status st = { 0 };
	struct kc_incluster_opts o;

	incluster_files(&f);
	o = (struct kc_incluster_opts){
		.token_file = f.token,
		.ca_file = f.ca,
		.namespace_file = f.ns,
	};
	ck_assert_int_eq(setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1), 0);
	ck_assert_int_eq(setenv("KUBERNETES_SERVICE_PORT", "443", 1), 0);
	ck_assert_int_eq(kc_incluster_load(&o, &rc, &st), 0);
	ck_assert_str_eq(rc->server, "https://10.96.0.1:443");
	ck_assert_str_eq(rc->namespace, "team-b");
	ck_assert_str_eq(rc->token_file, f.token);
	ck_assert_str_eq(token_of(rc), "sa-token");
	ck_assert_ptr_nonnull(strstr(rc->ca_pem, "BEGIN CERTIFICATE"));
	ck_assert_uint_eq(rc->ca_pem_len, strlen(rc->ca_pem));
	ck_assert_ptr_null(rc->context);
	ck_assert_ptr_null(rc->user);
	ck_assert_ptr_null(rc->token);
	rc = kc_rest_config_free(rc);

	/* Options beat the environment; a missing namespace is "default". */
	o.host = "api.internal";
	o.port = "6443";
	o.namespace_file = "/nonexistent/namespace";
	ck_assert_int_eq(kc_incluster_load(&o, &rc, &st), 0);
	ck_assert_str_eq(rc->server, "https://api.internal:6443");
	ck_assert_str_eq(rc->namespace, "default");
	rc = kc_rest_config_free(rc);

	o.ca_file = "/nonexistent/ca.crt";
	ck_assert_int_eq(kc_incluster_load(&o, &rc, &st), -ENOENT);
	ck_assert_str_eq(st.message, "/nonexistent/ca.crt: No such file or directory");
	o.ca_file = f.ca;
	o.token_file = "/nonexistent/token";
	ck_assert_int_eq(kc_incluster_load(&o, &rc, &st), -ENOENT);
	ck_assert_str_eq(st.message, "/nonexistent/token: No such file or directory");
	ck_assert_ptr_null(rc);
	incluster_files_free(&f);
}
END_TEST

START_TEST(incluster_not_in_cluster)
{
	struct kc_rest_config *rc = NULL;
	struct kc_status st = { 0 };

	ck_assert_int_eq(kc_incluster_load(NULL, &rc, &st), KC_ECONFIG);
	ck_assert_ptr_null(rc);
	ck_assert_ptr_nonnull(strstr(st.message, "KUBERNETES_SERVICE_HOST and "
	    "KUBERNETES_SERVICE_PORT must be set"));
	ck_assert_int_eq(setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1), 0);
	ck_assert_int_eq(kc_incluster_load(NULL, &rc, &st), KC_ECONFIG);
	ck_assert_int_eq(setenv("KUBERNETES_SERVICE_PORT", "", 1), 0);
	ck_assert_int_eq(kc_incluster_load(NULL, &rc, &st), KC_ECONFIG);
	ck_assert_ptr_null(rc);
}
END_TEST

START_TEST(incluster_hosts)
{
	static const struct {
		const char	*host, *port, *server;
	} cases[] = {
		{ "fd00:10:96::1", "443", "https://[fd00:10:96::1]:443" },
		{ "[fd00::1]", "443", "https://[fd00::1]:443" },
		{ "::1", "6443", "https://[::1]:6443" },
		{ "fe80::1%eth0", "443", "https://[fe80::1%eth0]:443" },
		{ "10.0.0.1", "1", "https://10.0.0.1:1" },
		{ "a b", "443", NULL },
		{ "host/x", "443", NULL },
		{ "[]", "443", NULL },
		{ "10.0.0.1%x", "443", NULL },
		{ "10.0.0.1", "0", NULL },
		{ "10.0.0.1", "65536", NULL },
		{ "10.0.0.1", "https", NULL },
	};
	struct incluster_files f;

	incluster_files(&f);
	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct kc_incluster_opts o = {
			.token_file = f.token,
			.ca_file = f.ca,
			.namespace_file = f.ns,
			.host = cases[i].host,
			.port = cases[i].port,
		};
		struct kc_rest_config *rc = NULL;
		struct kc_status st = { 0 };
		int r = kc_incluster_load(&o, &rc, &st);

		if (cases[i].server == NULL) {
			ck_assert_msg(r == KC_ECONFIG, "case %zu: %s", i, kc_err_name(r));
			ck_assert_ptr_null(rc);
			ck_assert_ptr_nonnull(strstr(st.message, "KUBERNETES_SERVICE_"));
			continue;
		}
		ck_assert_msg(r == 0, "case %zu: %s", i, st.message);
		ck_assert_str_eq(rc->server, cases[i].server);
		kc_rest_config_free(rc);
	}
	incluster_files_free(&f);
}
END_TEST

START_TEST(load_default)
{
	struct kc_rest_config *rc = NULL;
	struct kc_status st = { 0 };
	char *dir = tu_tmpdir(), *kube, *path;
	int r;

	/* The flag first, even with KUBECONFIG and in-cluster set. */
	ck_assert_int_eq(setenv("KUBECONFIG", FX("merge-b.yaml"), 1), 0);
	ck_assert_int_eq(setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1), 0);
	ck_assert_int_eq(setenv("KUBERNETES_SERVICE_PORT", "443", 1), 0);
	ck_assert_int_eq(kc_rest_config_load_default(FX("single.yaml"), "prod", &rc, &st), 0);
	ck_assert_str_eq(rc->context, "prod");
	rc = kc_rest_config_free(rc);

	/* Then KUBECONFIG. */
	ck_assert_int_eq(kc_rest_config_load_default("", NULL, &rc, &st), 0);
	ck_assert_str_eq(rc->server, "https://b.example.com");
	rc = kc_rest_config_free(rc);

	/* Then in-cluster, from the real service-account paths. */
	ck_assert_int_eq(unsetenv("KUBECONFIG"), 0);
	r = kc_rest_config_load_default(NULL, NULL, &rc, &st);
	if (r == 0) {
		ck_assert_str_eq(rc->server, "https://10.96.0.1:443");
		rc = kc_rest_config_free(rc);
	} else {
		ck_assert_ptr_nonnull(strstr(st.message, "/var/run/secrets/kubernetes.io/"
		    "serviceaccount/"));
	}

	/* Then ~/.kube/config. */
	ck_assert_int_eq(unsetenv("KUBERNETES_SERVICE_HOST"), 0);
	ck_assert_int_eq(setenv("HOME", dir, 1), 0);
	r = kc_rest_config_load_default(NULL, NULL, &rc, &st);
	ck_assert_int_eq(r, -ENOENT);
	ck_assert_ptr_nonnull(strstr(st.message, "/.kube/config: No such file"));
	kube = kc_asprintf("%s/.kube", dir);
	ck_assert_int_eq(mkdir(kube, 0700), 0);
	path = write_config(kube, "{server: 'https://home'}", "{}");
	ck_assert_int_eq(kc_rest_config_load_default(NULL, NULL, &rc, &st), 0);
	ck_assert_str_eq(rc->server, "https://home");
	rc = kc_rest_config_free(rc);

	ck_assert_int_eq(unsetenv("HOME"), 0);
	ck_assert_int_eq(kc_rest_config_load_default(NULL, NULL, &rc, &st), -ENOENT);
	ck_assert_ptr_null(rc);
	kc_free(path);
	kc_free(kube);
	tu_tmpdir_remove(dir);
}
END_TEST

static void
assert_str_copied(const char *a, const char *b)
{
	if (a == NULL) {
		ck_assert_ptr_null(b);
		return;
	}
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_ne(a, b);
	ck_assert_str_eq(a, b);
}

START_TEST(copy_is_deep)
{
	const char *paths[] = { FX("single.yaml") };
	struct kc_kubeconfig_opts o = { .paths = paths, .npaths = 1, .user = "carol" };
	struct kc_rest_config *rc = NULL, *c = NULL;
	struct kc_status st = { 0 };

	ck_assert_int_eq(kc_kubeconfig_load(&o, &rc, &st), 0);
	/* Fill every field, so the copy of each is checked. */
	rc->token = kc_strdup("static");
	rc->username = kc_strdup("user");
	rc->password = kc_strdup("pass");
	rc->cert_pem = kc_strdup("cert");
	rc->cert_pem_len = 4;
	rc->key_pem = kc_strdup("key");
	rc->key_pem_len = 3;
	rc->impersonate_user = kc_strdup("admin");
	rc->impersonate_groups = kc_calloc(3, sizeof(char *));
	rc->impersonate_groups[0] = kc_strdup("g1");
	rc->impersonate_groups[1] = kc_strdup("g2");
	rc->insecure_skip_tls_verify = true;
	ck_assert_int_eq(kc_rest_config_copy(rc, &c), 0);

	assert_str_copied(rc->server, c->server);
	assert_str_copied(rc->tls_server_name, c->tls_server_name);
	assert_str_copied(rc->ca_pem, c->ca_pem);
	ck_assert_uint_eq(rc->ca_pem_len, c->ca_pem_len);
	assert_str_copied(rc->cert_pem, c->cert_pem);
	ck_assert_uint_eq(c->cert_pem_len, 4);
	assert_str_copied(rc->key_pem, c->key_pem);
	ck_assert_uint_eq(c->key_pem_len, 3);
	assert_str_copied(rc->token, c->token);
	assert_str_copied(rc->token_file, c->token_file);
	assert_str_copied(rc->token_cache, c->token_cache);
	assert_str_copied(rc->username, c->username);
	assert_str_copied(rc->password, c->password);
	assert_str_copied(rc->impersonate_user, c->impersonate_user);
	ck_assert_ptr_ne(rc->impersonate_groups, c->impersonate_groups);
	assert_str_copied(rc->impersonate_groups[0], c->impersonate_groups[0]);
	assert_str_copied(rc->impersonate_groups[1], c->impersonate_groups[1]);
	ck_assert_ptr_null(c->impersonate_groups[2]);
	assert_str_copied(rc->namespace, c->namespace);
	assert_str_copied(rc->context, c->context);
	assert_str_copied(rc->cluster, c->cluster);
	assert_str_copied(rc->user, c->user);
	ck_assert(c->insecure_skip_tls_verify);
	ck_assert_int_eq(c->token_mtime, rc->token_mtime);
	ck_assert_int_eq(c->token_mtime_nsec, rc->token_mtime_nsec);
	ck_assert_int_eq(c->token_size, rc->token_size);
	ck_assert_uint_eq(c->token_ino, rc->token_ino);

	/* The copy outlives its source. */
	kc_rest_config_free(rc);
	ck_assert_str_eq(token_of(c), "carol-file-token");
	ck_assert_str_eq(c->impersonate_groups[1], "g2");
	kc_rest_config_free(c);
}
END_TEST

START_TEST(alloc_failure_load)
{
	const char *paths[] = { FX("merge-c.yaml"), FX("data.yaml"), FX("single.yaml") };
	struct kc_kubeconfig_opts opts[] = {
		{ .paths = paths, .npaths = 3, .context = "dev" },
		{ .paths = paths, .npaths = 3, .context = "data" },
		{ .paths = paths, .npaths = 3, .context = "carol", .namespace = "n" },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(opts); i++) {
		size_t budget;

		for (budget = 0;; budget++) {
			struct kc_rest_config *rc = NULL;
			struct kc_status st = { 0 };
			int r;

			fail_alloc_after(budget);
			r = kc_kubeconfig_load(&opts[i], &rc, &st);
			fail_alloc_after(SIZE_MAX);
			if (r == 0) {
				ck_assert_ptr_nonnull(rc);
				ck_assert_str_eq(rc->context, opts[i].context);
				kc_rest_config_free(rc);
				break;
			}
			ck_assert_msg(r == -ENOMEM, "opts %zu, budget %zu: %s: %s", i, budget,
			    kc_err_name(r), st.message);
			ck_assert_ptr_null(rc);
		}
		ck_assert_uint_gt(budget, 5);
	}
}
END_TEST

START_TEST(alloc_failure_incluster_copy)
{
	struct incluster_files f;
	struct kc_incluster_opts o;
	struct kc_rest_config *src = NULL;
	struct kc_status st = { 0 };
	size_t budget;

	incluster_files(&f);
	o = (struct kc_incluster_opts){
		.token_file = f.token,
		.ca_file = f.ca,
		.namespace_file = f.ns,
		.host = "fd00::1",
		.port = "443",
	};
	for (budget = 0;; budget++) {
		struct kc_rest_config *rc = NULL;
		int r;

		fail_alloc_after(budget);
		r = kc_incluster_load(&o, &rc, &st);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			src = rc;
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(rc);
	}
	ck_assert_uint_gt(budget, 3);

	src->impersonate_groups = kc_calloc(2, sizeof(char *));
	src->impersonate_groups[0] = kc_strdup("g");
	for (budget = 0;; budget++) {
		struct kc_rest_config *c = NULL;
		int r;

		fail_alloc_after(budget);
		r = kc_rest_config_copy(src, &c);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert_str_eq(c->server, "https://[fd00::1]:443");
			kc_rest_config_free(c);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(c);
	}
	ck_assert_uint_gt(budget, 5);
	kc_rest_config_free(src);
	incluster_files_free(&f);
}
END_TEST

START_TEST(alloc_failure_token)
{
	struct kc_rest_config *rc;
	char *dir = tu_tmpdir(), *path, *tok;
	const char *t;
	struct kc_status st = { 0 };

	tok = tu_write(dir, "tok", "old-token\n");
	path = write_config(dir, "{server: 'https://k'}", "{tokenFile: tok}");
	rc = load_ok(path, NULL);
	kc_free(tu_write(dir, "tok", "rotated-token\n"));

	/* Out of memory during a re-read: the last good token, then the new. */
	fail_alloc_after(0);
	t = NULL;
	ck_assert_int_eq(kc_rest_config_token(rc, &t, &st), 0);
	fail_alloc_after(SIZE_MAX);
	ck_assert_str_eq(t, "old-token");
	ck_assert_str_eq(token_of(rc), "rotated-token");
	kc_rest_config_free(rc);
	kc_free(path);
	kc_free(tok);
	tu_tmpdir_remove(dir);
}
END_TEST

Suite *
kubeconfig_suite(void)
{
	Suite *s = suite_create("kubeconfig");
	TCase *tc = tcase_create("files");
	TCase *tt = tcase_create("tokens");
	TCase *ti = tcase_create("incluster");

	tcase_add_checked_fixture(tc, env_setup, env_teardown);
	tcase_add_test(tc, single_file);
	tcase_add_test(tc, context_override);
	tcase_add_test(tc, field_overrides);
	tcase_add_test(tc, missing_entries);
	tcase_add_test(tc, missing_client_key);
	tcase_add_test(tc, merged_files);
	tcase_add_test(tc, kubeconfig_env);
	tcase_add_test(tc, missing_files);
	tcase_add_test(tc, relative_paths);
	tcase_add_test(tc, data_forms);
	tcase_add_test(tc, base64_padding);
	tcase_add_test(tc, base64_invalid);
	tcase_add_test(tc, server_urls);
	tcase_add_test(tc, insecure_flag);
	tcase_add_test(tc, bad_fields);
	tcase_add_test(tc, bad_documents);
	tcase_add_test(tc, malformed_yaml);
	tcase_add_test(tc, scalars_as_strings);
	tcase_add_test(tc, too_many_files);
	tcase_add_test(tc, file_too_large);
	tcase_add_test(tc, plugins_rejected);
	tcase_add_test(tc, copy_is_deep);
	tcase_add_test(tc, alloc_failure_load);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(tt, env_setup, env_teardown);
	tcase_add_test(tt, token_and_token_file);
	tcase_add_test(tt, token_rotation);
	tcase_add_test(tt, token_reread_failure);
	tcase_add_test(tt, alloc_failure_token);
	suite_add_tcase(s, tt);

	tcase_add_checked_fixture(ti, env_setup, env_teardown);
	tcase_add_test(ti, incluster);
	tcase_add_test(ti, incluster_not_in_cluster);
	tcase_add_test(ti, incluster_hosts);
	tcase_add_test(ti, alloc_failure_incluster_copy);
	tcase_add_test(ti, load_default);
	suite_add_tcase(s, ti);
	return s;
}

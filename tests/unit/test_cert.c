/*
 * test_cert.c: CA, serving and client certificates (lib/cert.c), checked
 * with OpenSSL's own verifier and name checks.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <kc/alloc.h>
#include <kc/cert.h>
#include <kc/str.h>

#include "testutil.h"

static const char *const server_dns[] = { "localhost", "devcluster.local", NULL };
static const char *const server_ips[] = { "127.0.0.1", "::1", NULL };
static const char *const groups[] = { "system:masters", "team-a", NULL };

static struct kc_cert_pair *
make_ca(const char *cn)
{
	struct kc_cert_pair *ca = NULL;
	struct kc_status st = { 0 };
	int r;

	r = kc_cert_create(&(struct kc_cert_opts){ .cn = cn, .is_ca = true }, NULL,
	    &ca, &st);
	ck_assert_msg(r == 0, "CA: %s", st.message);
	return ca;
}

static struct kc_cert_pair *
make_server(const struct kc_cert_pair *ca)
{
	struct kc_cert_pair *p = NULL;
	struct kc_status st = { 0 };
	int r;

	r = kc_cert_create(&(struct kc_cert_opts){
		.cn = "devcluster", .server = true,
		.dns = server_dns, .ips = server_ips,
	}, ca, &p, &st);
	ck_assert_msg(r == 0, "server: %s", st.message);
	return p;
}

static X509 *
pem_x509(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x;

	ck_assert_ptr_nonnull(b);
	x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	ck_assert_ptr_nonnull(x);
	return x;
}

/* OpenSSL's verifier, independent of kc_cert_verify(). */
static int
openssl_verify(const char *leaf_pem, const char *ca_pem, int purpose)
{
	X509 *leaf = pem_x509(leaf_pem), *ca = pem_x509(ca_pem);
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	int ok;

	ck_assert_int_eq(X509_STORE_add_cert(store, ca), 1);
	ck_assert_int_eq(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
	if (purpose != 0)
		ck_assert_int_eq(X509_STORE_CTX_set_purpose(ctx, purpose), 1);
	ok = X509_verify_cert(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	X509_free(leaf);
	X509_free(ca);
	return ok;
}

START_TEST(test_ca_self_signed)
{
	struct kc_cert_pair *ca = make_ca("trainyard-ca");
	struct kc_cert_info *info = NULL;
	struct kc_status st = { 0 };
	time_t now = time(NULL);
	X509 *x;

	ck_assert_ptr_nonnull(strstr(ca->cert_pem, "-----BEGIN CERTIFICATE-----"));
	ck_assert_ptr_nonnull(strstr(ca->key_pem, "-----BEGIN PRIVATE KEY-----"));
	ck_assert_uint_eq(strlen(ca->cert_pem), ca->cert_pem_len);
	ck_assert_uint_eq(strlen(ca->key_pem), ca->key_pem_len);

	ck_assert_int_eq(kc_cert_info_read(ca->cert_pem, ca->cert_pem_len, &info, &st), 0);
	ck_assert_str_eq(info->cn, "trainyard-ca");
	ck_assert(info->is_ca);
	ck_assert_ptr_null(info->orgs[0]);
	ck_assert_ptr_null(info->dns[0]);
	ck_assert_ptr_null(info->ips[0]);
	ck_assert_int_le(info->not_before, now - 3500);
	ck_assert_int_ge(info->not_before, now - 3700);
	ck_assert_int_ge(info->not_after, now + 364 * 86400);
	ck_assert_int_le(info->not_after, now + 366 * 86400);
	ck_assert_uint_eq(strlen(info->fingerprint), 32 * 3 - 1);
	ck_assert_int_eq(info->fingerprint[2], ':');
	info = kc_cert_info_free(info);

	/* Self-signed and a CA, by OpenSSL's own reading. */
	x = pem_x509(ca->cert_pem);
	ck_assert_int_eq(X509_check_ca(x), 1);
	ck_assert_int_eq(X509_check_issued(x, x), X509_V_OK);
	X509_free(x);
	ck_assert_int_eq(openssl_verify(ca->cert_pem, ca->cert_pem, 0), 1);
	kc_cert_pair_free(ca);
}
END_TEST

START_TEST(test_server_cert_chain_and_sans)
{
	struct kc_cert_pair *ca = make_ca("ca"), *srv = make_server(ca);
	struct kc_cert_info *info = NULL;
	struct kc_status st = { 0 };
	X509 *x;

	ck_assert_int_eq(openssl_verify(srv->cert_pem, ca->cert_pem,
	    X509_PURPOSE_SSL_SERVER), 1);
	ck_assert_int_eq(kc_cert_verify(srv->cert_pem, srv->cert_pem_len, ca->cert_pem,
	    ca->cert_pem_len, &st), 0);

	x = pem_x509(srv->cert_pem);
	ck_assert_int_eq(X509_check_host(x, "localhost", 0, 0, NULL), 1);
	ck_assert_int_eq(X509_check_host(x, "devcluster.local", 0, 0, NULL), 1);
	ck_assert_int_eq(X509_check_host(x, "example.com", 0, 0, NULL), 0);
	ck_assert_int_eq(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
	ck_assert_int_eq(X509_check_ip_asc(x, "::1", 0), 1);
	ck_assert_int_eq(X509_check_ip_asc(x, "10.0.0.1", 0), 0);
	ck_assert_int_eq(X509_check_ca(x), 0);
	ck_assert_int_eq(X509_check_purpose(x, X509_PURPOSE_SSL_SERVER, 0), 1);
	ck_assert_int_eq(X509_check_purpose(x, X509_PURPOSE_SSL_CLIENT, 0), 0);
	X509_free(x);

	ck_assert_int_eq(kc_cert_info_read(srv->cert_pem, srv->cert_pem_len, &info, &st), 0);
	ck_assert_str_eq(info->cn, "devcluster");
	ck_assert(!info->is_ca);
	ck_assert_str_eq(info->dns[0], "localhost");
	ck_assert_str_eq(info->dns[1], "devcluster.local");
	ck_assert_ptr_null(info->dns[2]);
	ck_assert_str_eq(info->ips[0], "127.0.0.1");
	ck_assert_str_eq(info->ips[1], "::1");
	ck_assert_ptr_null(info->ips[2]);
	kc_cert_info_free(info);
	kc_cert_pair_free(srv);
	kc_cert_pair_free(ca);
}
END_TEST

START_TEST(test_client_cert_user_and_groups)
{
	struct kc_cert_pair *ca = make_ca("ca"), *cl = NULL;
	struct kc_cert_info *info = NULL;
	struct kc_status st = { 0 };

	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){
		.cn = "alice", .orgs = groups, .client = true, .days = 2,
	}, ca, &cl, &st), 0);
	ck_assert_int_eq(openssl_verify(cl->cert_pem, ca->cert_pem,
	    X509_PURPOSE_SSL_CLIENT), 1);
	ck_assert_int_eq(openssl_verify(cl->cert_pem, ca->cert_pem,
	    X509_PURPOSE_SSL_SERVER), 0);

	ck_assert_int_eq(kc_cert_info_read(cl->cert_pem, cl->cert_pem_len, &info, &st), 0);
	ck_assert_str_eq(info->cn, "alice");
	ck_assert_str_eq(info->orgs[0], "system:masters");
	ck_assert_str_eq(info->orgs[1], "team-a");
	ck_assert_ptr_null(info->orgs[2]);
	ck_assert_ptr_null(info->dns[0]);
	ck_assert_int_le(info->not_after, time(NULL) + 2 * 86400);
	kc_cert_info_free(info);
	kc_cert_pair_free(cl);
	kc_cert_pair_free(ca);
}
END_TEST

START_TEST(test_rsa_keys)
{
	struct kc_cert_pair *ca = NULL, *srv = NULL;
	struct kc_status st = { 0 };

	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){
		.cn = "rsa-ca", .is_ca = true, .key_type = KC_KEY_RSA_2048,
	}, NULL, &ca, &st), 0);
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){
		.cn = "rsa-server", .server = true, .client = true,
		.dns = server_dns, .key_type = KC_KEY_RSA_2048,
	}, ca, &srv, &st), 0);
	ck_assert_int_eq(openssl_verify(srv->cert_pem, ca->cert_pem,
	    X509_PURPOSE_SSL_SERVER), 1);
	ck_assert_int_eq(openssl_verify(srv->cert_pem, ca->cert_pem,
	    X509_PURPOSE_SSL_CLIENT), 1);
	kc_cert_pair_free(srv);
	kc_cert_pair_free(ca);
}
END_TEST

START_TEST(test_verify_unrelated_ca)
{
	struct kc_cert_pair *ca = make_ca("ca"), *other = make_ca("other");
	struct kc_cert_pair *srv = make_server(ca);
	struct kc_status st = { 0 };

	ck_assert_int_eq(kc_cert_verify(srv->cert_pem, srv->cert_pem_len,
	    other->cert_pem, other->cert_pem_len, &st), KC_ETLS);
	ck_assert_ptr_nonnull(strstr(st.message, "does not verify"));
	ck_assert_int_eq(openssl_verify(srv->cert_pem, other->cert_pem, 0), 0);

	/* A bundle holding both CAs verifies. */
	{
		char *bundle = kc_asprintf("%s%s", other->cert_pem, ca->cert_pem);

		ck_assert_ptr_nonnull(bundle);
		ck_assert_int_eq(kc_cert_verify(srv->cert_pem, srv->cert_pem_len,
		    bundle, strlen(bundle), &st), 0);
		kc_free(bundle);
	}
	ck_assert_int_eq(kc_cert_verify(srv->cert_pem, srv->cert_pem_len, "junk", 4, &st),
	    KC_EPARSE);
	kc_cert_pair_free(srv);
	kc_cert_pair_free(other);
	kc_cert_pair_free(ca);
}
END_TEST

START_TEST(test_issue_from_loaded_ca)
{
	struct kc_cert_pair *ca = make_ca("ca"), *loaded = NULL, *srv;
	struct kc_status st = { 0 };
	char *dir = tu_tmpdir(), *cpath, *kpath;
	struct stat sb;

	cpath = kc_asprintf("%s/ca.crt", dir);
	kpath = kc_asprintf("%s/ca.key", dir);
	ck_assert_ptr_nonnull(cpath);
	ck_assert_ptr_nonnull(kpath);
	ck_assert_int_eq(kc_cert_pair_write(ca, cpath, kpath, &st), 0);
	ck_assert_int_eq(stat(kpath, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0600);
	ck_assert_int_eq(stat(cpath, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0644);

	ck_assert_int_eq(kc_cert_pair_read(cpath, kpath, &loaded, &st), 0);
	ck_assert_str_eq(loaded->cert_pem, ca->cert_pem);
	ck_assert_str_eq(loaded->key_pem, ca->key_pem);
	srv = make_server(loaded);
	ck_assert_int_eq(openssl_verify(srv->cert_pem, ca->cert_pem,
	    X509_PURPOSE_SSL_SERVER), 1);

	ck_assert_int_eq(kc_cert_pair_read("/nonexistent/ca.crt", kpath, &loaded, &st),
	    -ENOENT);
	ck_assert_ptr_nonnull(strstr(st.message, "/nonexistent/ca.crt"));
	ck_assert_int_eq(kc_cert_pair_write(ca, "/nonexistent/x.crt", kpath, &st), -ENOENT);

	kc_cert_pair_free(srv);
	kc_cert_pair_free(loaded);
	kc_cert_pair_free(ca);
	kc_free(cpath);
	kc_free(kpath);
	tu_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_der_and_chain_input)
{
	struct kc_cert_pair *ca = make_ca("ca"), *srv = make_server(ca);
	struct kc_cert_info *info = NULL;
	struct kc_status st = { 0 };
	unsigned char *der = NULL;
	char *chain;
	X509 *x;
	int n;

	x = pem_x509(srv->cert_pem);
	n = i2d_X509(x, &der);
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(kc_cert_info_read(der, (size_t)n, &info, &st), 0);
	ck_assert_str_eq(info->cn, "devcluster");
	ck_assert_str_eq(info->ips[1], "::1");
	info = kc_cert_info_free(info);
	/* A truncated DER certificate. */
	ck_assert_int_eq(kc_cert_info_read(der, (size_t)n / 2, &info, &st), KC_EPARSE);
	ck_assert_ptr_null(info);
	OPENSSL_free(der);
	X509_free(x);

	/* A chain: the first certificate is the one read. */
	chain = kc_asprintf("%s%s", srv->cert_pem, ca->cert_pem);
	ck_assert_ptr_nonnull(chain);
	ck_assert_int_eq(kc_cert_info_read(chain, strlen(chain), &info, &st), 0);
	ck_assert_str_eq(info->cn, "devcluster");
	kc_cert_info_free(info);
	ck_assert_int_eq(kc_cert_verify(chain, strlen(chain), ca->cert_pem,
	    ca->cert_pem_len, &st), 0);
	kc_free(chain);
	kc_cert_pair_free(srv);
	kc_cert_pair_free(ca);
}
END_TEST

START_TEST(test_bad_pem)
{
	struct kc_cert_pair *ca = make_ca("ca"), *other = make_ca("other");
	struct kc_cert_pair *p = NULL;
	struct kc_cert_info *info = NULL;
	struct kc_status st = { 0 };
	static const char garbage[] = "-----BEGIN CERTIFICATE-----\nnot base64!\n"
	    "-----END CERTIFICATE-----\n";
	char *big;

	ck_assert_int_eq(kc_cert_info_read(garbage, strlen(garbage), &info, &st),
	    KC_EPARSE);
	ck_assert_ptr_null(info);
	ck_assert_ptr_nonnull(strstr(st.message, "certificate"));
	ck_assert_int_eq(kc_cert_info_read("", 0, &info, &st), KC_EPARSE);
	ck_assert_int_eq(kc_cert_info_read("hello", 5, &info, &st), KC_EPARSE);
	ck_assert_int_eq(kc_cert_info_read(NULL, 0, &info, &st), KC_EPARSE);

	big = kc_calloc(1, KC_CERT_PEM_MAX + 2);
	ck_assert_ptr_nonnull(big);
	memset(big, 'A', KC_CERT_PEM_MAX + 1);
	ck_assert_int_eq(kc_cert_info_read(big, KC_CERT_PEM_MAX + 1, &info, &st), -E2BIG);
	kc_free(big);

	/* A pair whose key is garbage, or another certificate's. */
	ck_assert_int_eq(kc_cert_pair_load(ca->cert_pem, ca->cert_pem_len, "nope", 4, &p,
	    &st), KC_EPARSE);
	ck_assert_int_eq(kc_cert_pair_load(garbage, strlen(garbage), ca->key_pem,
	    ca->key_pem_len, &p, &st), KC_EPARSE);
	ck_assert_int_eq(kc_cert_pair_load(ca->cert_pem, ca->cert_pem_len, other->key_pem,
	    other->key_pem_len, &p, &st), -EINVAL);
	ck_assert_ptr_nonnull(strstr(st.message, "does not match"));
	ck_assert_ptr_null(p);

	/* An issuer with a bad key is refused before anything is made. */
	{
		struct kc_cert_pair bad = *ca;

		bad.key_pem = other->key_pem;
		bad.key_pem_len = other->key_pem_len;
		ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ .cn = "x" }, &bad,
		    &p, &st), -EINVAL);
		bad.cert_pem = (char *)(uintptr_t)garbage;
		bad.cert_pem_len = strlen(garbage);
		ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ .cn = "x" }, &bad,
		    &p, &st), KC_EPARSE);
		ck_assert_ptr_null(p);
	}
	ck_assert_int_eq(ERR_peek_error(), 0);
	kc_cert_pair_free(other);
	kc_cert_pair_free(ca);
}
END_TEST

START_TEST(test_bad_options)
{
	struct kc_cert_pair *ca = make_ca("ca"), *leaf = make_server(ca), *p = NULL;
	struct kc_status st = { 0 };
	static const char *const bad_dns[] = { "a..b", NULL };
	static const char *const bad_dns2[] = { "has space", NULL };
	static const char *const bad_ip[] = { "300.1.1.1", NULL };
	static const char *const empty_org[] = { "", NULL };
	const char *many[KC_CERT_NAMES_MAX + 2];
	char long_cn[80];

	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ 0 }, NULL, &p, &st),
	    -EINVAL);
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ .cn = "" }, NULL, &p, &st),
	    -EINVAL);
	memset(long_cn, 'x', sizeof(long_cn) - 1);
	long_cn[sizeof(long_cn) - 1] = '\0';
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ .cn = long_cn }, NULL, &p,
	    &st), -EINVAL);
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ .cn = "x", .dns = bad_dns },
	    NULL, &p, &st), -EINVAL);
	ck_assert_ptr_nonnull(strstr(st.message, "a..b"));
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ .cn = "x", .dns = bad_dns2 },
	    NULL, &p, &st), -EINVAL);
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ .cn = "x", .ips = bad_ip },
	    NULL, &p, &st), -EINVAL);
	ck_assert_ptr_nonnull(strstr(st.message, "300.1.1.1"));
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ .cn = "x", .orgs = empty_org },
	    NULL, &p, &st), -EINVAL);
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ .cn = "x", .days = 40000 },
	    NULL, &p, &st), -EINVAL);
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ .cn = "x", .key_type = 7 },
	    NULL, &p, &st), -EINVAL);
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ .cn = "x",
	    .seconds = KC_CERT_SECONDS_MAX + 1 }, NULL, &p, &st), -EINVAL);
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ .cn = "x", .seconds = 60,
	    .days = 1 }, NULL, &p, &st), -EINVAL);
	for (size_t i = 0; i <= KC_CERT_NAMES_MAX; i++)
		many[i] = "h.example";
	many[KC_CERT_NAMES_MAX + 1] = NULL;
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ .cn = "x", .dns = many },
	    NULL, &p, &st), -EINVAL);

	/* A leaf cannot issue. */
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ .cn = "x" }, leaf, &p, &st),
	    -EINVAL);
	ck_assert_ptr_nonnull(strstr(st.message, "not a CA"));
	ck_assert_ptr_null(p);
	kc_cert_pair_free(leaf);
	kc_cert_pair_free(ca);
}
END_TEST

/* Validity in seconds: a tenth of it before 'now' (an hour at most), then it. */
START_TEST(test_seconds)
{
	static const struct {
		unsigned	seconds;
		long		before;
	} cases[] = { { 90, 9 }, { 600, 60 }, { KC_CERT_SECONDS_MAX, 3600 } };
	time_t now = 1800000000;

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct kc_cert_pair *p = NULL;
		struct kc_cert_info *info = NULL;
		struct kc_status st = { 0 };

		ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ .cn = "short",
		    .is_ca = true, .now = now, .seconds = cases[i].seconds }, NULL, &p,
		    &st), 0);
		ck_assert_int_eq(kc_cert_info_read(p->cert_pem, p->cert_pem_len, &info,
		    &st), 0);
		ck_assert_int_eq(info->not_before, now - cases[i].before);
		ck_assert_int_eq(info->not_after, now + (time_t)cases[i].seconds);
		kc_cert_info_free(info);
		kc_cert_pair_free(p);
	}
}
END_TEST

START_TEST(test_wildcard_dns)
{
	struct kc_cert_pair *p = NULL;
	struct kc_status st = { 0 };
	static const char *const dns[] = { "*.svc.cluster.local", NULL };
	X509 *x;

	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){
		.cn = "w", .server = true, .dns = dns,
	}, NULL, &p, &st), 0);
	x = pem_x509(p->cert_pem);
	ck_assert_int_eq(X509_check_host(x, "api.svc.cluster.local", 0, 0, NULL), 1);
	X509_free(x);
	kc_cert_pair_free(p);
}
END_TEST

START_TEST(test_alloc_failures)
{
	struct kc_cert_pair *ca = make_ca("ca");
	struct kc_status st;
	int r;

	for (size_t budget = 0;; budget++) {
		struct kc_cert_pair *p = NULL;

		fail_alloc_after(budget);
		r = kc_cert_create(&(struct kc_cert_opts){
			.cn = "alice", .orgs = groups, .dns = server_dns, .ips = server_ips,
			.client = true,
		}, ca, &p, &st);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			kc_cert_pair_free(p);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(p);
	}
	for (size_t budget = 0;; budget++) {
		struct kc_cert_pair *p = NULL;

		fail_alloc_after(budget);
		r = kc_cert_pair_load(ca->cert_pem, ca->cert_pem_len, ca->key_pem,
		    ca->key_pem_len, &p, &st);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			kc_cert_pair_free(p);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(p);
	}
	{
		struct kc_cert_pair *cl = NULL;

		ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){
			.cn = "alice", .orgs = groups, .dns = server_dns,
			.ips = server_ips, .client = true,
		}, ca, &cl, &st), 0);
		for (size_t budget = 0;; budget++) {
			struct kc_cert_info *info = NULL;

			fail_alloc_after(budget);
			r = kc_cert_info_read(cl->cert_pem, cl->cert_pem_len, &info, &st);
			fail_alloc_after(SIZE_MAX);
			if (r == 0) {
				ck_assert_str_eq(info->orgs[1], "team-a");
				kc_cert_info_free(info);
				break;
			}
			ck_assert_int_eq(r, -ENOMEM);
			ck_assert_ptr_null(info);
		}
		kc_cert_pair_free(cl);
	}
	kc_cert_pair_free(ca);
}
END_TEST

Suite *
cert_suite(void)
{
	Suite *s = suite_create("cert");
	TCase *tc = tcase_create("cert");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_ca_self_signed);
	tcase_add_test(tc, test_server_cert_chain_and_sans);
	tcase_add_test(tc, test_client_cert_user_and_groups);
	tcase_add_test(tc, test_rsa_keys);
	tcase_add_test(tc, test_verify_unrelated_ca);
	tcase_add_test(tc, test_issue_from_loaded_ca);
	tcase_add_test(tc, test_der_and_chain_input);
	tcase_add_test(tc, test_bad_pem);
	tcase_add_test(tc, test_bad_options);
	tcase_add_test(tc, test_wildcard_dns);
	tcase_add_test(tc, test_seconds);
	tcase_add_test(tc, test_alloc_failures);
	suite_add_tcase(s, tc);
	return s;
}

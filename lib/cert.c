/*
 * cert.c: X.509 certificates with OpenSSL.
 *
 * Everything crosses this file's boundary as PEM text in kc_malloc()
 * memory; OpenSSL objects (X509, EVP_PKEY, BIO) live only inside one call
 * and are freed on every path by the _cleanup_ helpers below. The model
 * is the one kubeadm and the Kubernetes test harnesses use: a
 * self-signed CA, serving certificates whose subject alternative names
 * carry the DNS names and IP addresses clients dial, and client
 * certificates whose subject CN is the user and whose O values are the
 * groups.
 *
 * OpenSSL reports failures on a per-thread error queue. Every failure
 * here turns the newest entry into st->message and clears the queue, so
 * an old entry never surfaces in an unrelated later call (libcurl and
 * libwebsockets read the same queue).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <kc/alloc.h>
#include <kc/cert.h>
#include <kc/str.h>

#define CERT_DAYS_DEFAULT	365
#define CERT_DAYS_MAX		36500
#define CERT_NAME_MAX		64	/* ub-common-name, ub-organization-name */
#define CERT_DNS_MAX		253

static void
x509_freep(X509 **p)
{
	X509_free(*p);
	*p = NULL;
}

static void
pkey_freep(EVP_PKEY **p)
{
	EVP_PKEY_free(*p);
	*p = NULL;
}

static void
bio_freep(BIO **p)
{
	BIO_free(*p);
	*p = NULL;
}

static void
bn_freep(BIGNUM **p)
{
	BN_free(*p);
	*p = NULL;
}

static void
gens_freep(GENERAL_NAMES **p)
{
	GENERAL_NAMES_free(*p);
	*p = NULL;
}

static void
store_freep(X509_STORE **p)
{
	X509_STORE_free(*p);
	*p = NULL;
}

static void
store_ctx_freep(X509_STORE_CTX **p)
{
	X509_STORE_CTX_free(*p);
	*p = NULL;
}

static void
x509_stack_freep(STACK_OF(X509) **p)
{
	sk_X509_pop_free(*p, X509_free);
	*p = NULL;
}

/* Fills 'st' with "what: <OpenSSL's newest error>", clears the queue. */
static int
ssl_fail(struct kc_status *st, int code, const char *what)
{
	unsigned long e = ERR_peek_last_error();
	char buf[256];

	if (e != 0) {
		ERR_error_string_n(e, buf, sizeof(buf));
		ERR_clear_error();
		return kc_status_set(st, code, "%s: %s", what, buf);
	}
	return kc_status_set(st, code, "%s", what);
}

/* Never prompts for the passphrase of an encrypted key. */
static int
no_password(char *buf, int size, int rwflag, void *arg)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)arg;
	return -1;
}

static int
check_text(const void *data, size_t len, const char *what, struct kc_status *st)
{
	if (data == NULL || len == 0)
		return kc_status_set(st, KC_EPARSE, "%s: empty", what);
	if (len > KC_CERT_PEM_MAX)
		return kc_status_set(st, -E2BIG, "%s: larger than %u bytes", what,
		    KC_CERT_PEM_MAX);
	return 0;
}

static int
mem_bio(const void *data, size_t len, BIO **ret)
{
	/* len <= KC_CERT_PEM_MAX, so it fits an int. */
	if ((*ret = BIO_new_mem_buf(data, (int)len)) == NULL) {
		ERR_clear_error();
		return -ENOMEM;
	}
	return 0;
}

/* The first certificate of PEM text. */
static int
parse_cert_pem(const char *pem, size_t len, const char *what, X509 **ret,
    struct kc_status *st)
{
	_cleanup_(bio_freep) BIO *b = NULL;
	int r;

	if ((r = check_text(pem, len, what, st)) < 0)
		return r;
	if ((r = mem_bio(pem, len, &b)) < 0)
		return r;
	if ((*ret = PEM_read_bio_X509(b, NULL, no_password, NULL)) == NULL)
		return ssl_fail(st, KC_EPARSE, what);
	return 0;
}

static int
parse_key_pem(const char *pem, size_t len, const char *what, EVP_PKEY **ret,
    struct kc_status *st)
{
	_cleanup_(bio_freep) BIO *b = NULL;
	int r;

	if ((r = check_text(pem, len, what, st)) < 0)
		return r;
	if ((r = mem_bio(pem, len, &b)) < 0)
		return r;
	if ((*ret = PEM_read_bio_PrivateKey(b, NULL, no_password, NULL)) == NULL)
		return ssl_fail(st, KC_EPARSE, what);
	return 0;
}

/* Copies a memory BIO's bytes into a NUL-terminated kc_malloc() string. */
static int
bio_take(BIO *b, char **ret, size_t *ret_len)
{
	char *data, *s;
	long n;

	n = BIO_get_mem_data(b, &data);
	if (n <= 0)
		return -EIO;
	if ((s = kc_malloc((size_t)n + 1)) == NULL)
		return -ENOMEM;
	memcpy(s, data, (size_t)n);
	s[n] = '\0';
	*ret = s;
	*ret_len = (size_t)n;
	return 0;
}

static int
check_name(const char *s, const char *what, struct kc_status *st)
{
	size_t n = strlen(s);

	if (n == 0 || n > CERT_NAME_MAX)
		return kc_status_set(st, -EINVAL, "%s: must be 1 to %d bytes", what,
		    CERT_NAME_MAX);
	return 0;
}

/* A host name, or a wildcard "*.host": LDH labels of 1 to 63 bytes. */
static bool
dns_name_ok(const char *s)
{
	size_t n = strlen(s), label = 0;

	if (n == 0 || n > CERT_DNS_MAX)
		return false;
	if (s[0] == '*' && s[1] == '.')
		s += 2;
	for (; *s != '\0'; s++) {
		char c = *s;

		if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return false;
		if (++label > 63)
			return false;
	}
	return label > 0;
}

static size_t
strv_len(const char *const *v)
{
	size_t n = 0;

	if (v != NULL)
		while (v[n] != NULL)
			n++;
	return n;
}

static int
check_opts(const struct kc_cert_opts *o, struct kc_status *st)
{
	int r;

	if (o->cn == NULL)
		return kc_status_set(st, -EINVAL, "certificate: no CN");
	if ((r = check_name(o->cn, "certificate CN", st)) < 0)
		return r;
	if (o->days > CERT_DAYS_MAX)
		return kc_status_set(st, -EINVAL, "certificate: %u days is over %d",
		    o->days, CERT_DAYS_MAX);
	if (o->seconds > KC_CERT_SECONDS_MAX || (o->seconds != 0 && o->days != 0))
		return kc_status_set(st, -EINVAL, "certificate: seconds must be at most %d, "
		    "and days 0 with them", KC_CERT_SECONDS_MAX);
	if (o->key_type != KC_KEY_EC_P256 && o->key_type != KC_KEY_RSA_2048)
		return kc_status_set(st, -EINVAL, "certificate: unknown key type");
	if (strv_len(o->orgs) > KC_CERT_NAMES_MAX ||
	    strv_len(o->dns) + strv_len(o->ips) > KC_CERT_NAMES_MAX)
		return kc_status_set(st, -EINVAL, "certificate: more than %d names",
		    KC_CERT_NAMES_MAX);
	for (size_t i = 0; o->orgs != NULL && o->orgs[i] != NULL; i++)
		if ((r = check_name(o->orgs[i], "certificate O", st)) < 0)
			return r;
	for (size_t i = 0; o->dns != NULL && o->dns[i] != NULL; i++)
		if (!dns_name_ok(o->dns[i]))
			return kc_status_set(st, -EINVAL,
			    "certificate: \"%.64s\" is not a DNS name", o->dns[i]);
	return 0;
}

static int
gens_add(GENERAL_NAMES *gens, int type, const void *data, size_t len)
{
	ASN1_STRING *s;
	GENERAL_NAME *gn;

	s = type == GEN_DNS ? ASN1_IA5STRING_new() : ASN1_OCTET_STRING_new();
	if (s == NULL)
		return -ENOMEM;
	if (ASN1_STRING_set(s, data, (int)len) != 1 || (gn = GENERAL_NAME_new()) == NULL) {
		ASN1_STRING_free(s);
		return -ENOMEM;
	}
	GENERAL_NAME_set0_value(gn, type, s);
	if (sk_GENERAL_NAME_push(gens, gn) <= 0) {
		GENERAL_NAME_free(gn);
		return -ENOMEM;
	}
	return 0;
}

static int
add_sans(X509 *x, const struct kc_cert_opts *o, struct kc_status *st)
{
	_cleanup_(gens_freep) GENERAL_NAMES *gens = NULL;
	unsigned char ip[16];
	int r;

	if (strv_len(o->dns) + strv_len(o->ips) == 0)
		return 0;
	if ((gens = GENERAL_NAMES_new()) == NULL)
		return -ENOMEM;
	for (size_t i = 0; o->dns != NULL && o->dns[i] != NULL; i++)
		if ((r = gens_add(gens, GEN_DNS, o->dns[i], strlen(o->dns[i]))) < 0)
			return r;
	for (size_t i = 0; o->ips != NULL && o->ips[i] != NULL; i++) {
		if (inet_pton(AF_INET, o->ips[i], ip) == 1)
			r = gens_add(gens, GEN_IPADD, ip, 4);
		else if (inet_pton(AF_INET6, o->ips[i], ip) == 1)
			r = gens_add(gens, GEN_IPADD, ip, 16);
		else
			return kc_status_set(st, -EINVAL,
			    "certificate: \"%.64s\" is not an IP address", o->ips[i]);
		if (r < 0)
			return r;
	}
	if (X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT) != 1)
		return ssl_fail(st, KC_ETLS, "certificate: subjectAltName");
	return 0;
}

static int
add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value, struct kc_status *st)
{
	X509_EXTENSION *ext;
	int ok;

	if ((ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value)) == NULL)
		return ssl_fail(st, KC_ETLS, "certificate: extension");
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	if (ok != 1)
		return ssl_fail(st, KC_ETLS, "certificate: extension");
	return 0;
}

static int
add_extensions(X509 *x, X509 *issuer, const struct kc_cert_opts *o,
    struct kc_status *st)
{
	X509V3_CTX ctx;
	const char *eku;
	int r;

	X509V3_set_ctx(&ctx, issuer != NULL ? issuer : x, x, NULL, NULL, 0);
	if (o->is_ca) {
		if ((r = add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE", st)) < 0 ||
		    (r = add_ext(x, &ctx, NID_key_usage,
		    "critical,digitalSignature,keyCertSign,cRLSign", st)) < 0)
			return r;
	} else {
		if ((r = add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE", st)) < 0 ||
		    (r = add_ext(x, &ctx, NID_key_usage,
		    o->key_type == KC_KEY_RSA_2048 ?
		    "critical,digitalSignature,keyEncipherment" :
		    "critical,digitalSignature", st)) < 0)
			return r;
	}
	eku = o->server && o->client ? "serverAuth,clientAuth" :
	    o->server ? "serverAuth" : o->client ? "clientAuth" : NULL;
	if (eku != NULL && (r = add_ext(x, &ctx, NID_ext_key_usage, eku, st)) < 0)
		return r;
	if ((r = add_ext(x, &ctx, NID_subject_key_identifier, "hash", st)) < 0)
		return r;
	/* An issued certificate names its issuer's key, when it has an SKI. */
	if (issuer != NULL && X509_get0_subject_key_id(issuer) != NULL &&
	    (r = add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always", st)) < 0)
		return r;
	return add_sans(x, o, st);
}

static int
set_subject(X509 *x, const struct kc_cert_opts *o, struct kc_status *st)
{
	X509_NAME *name = X509_get_subject_name(x);

	for (size_t i = 0; o->orgs != NULL && o->orgs[i] != NULL; i++)
		if (X509_NAME_add_entry_by_NID(name, NID_organizationName, MBSTRING_UTF8,
		    (const unsigned char *)o->orgs[i], -1, -1, 0) != 1)
			return ssl_fail(st, -EINVAL, "certificate O");
	if (X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
	    (const unsigned char *)o->cn, -1, -1, 0) != 1)
		return ssl_fail(st, -EINVAL, "certificate CN");
	return 0;
}

static int
set_serial(X509 *x, struct kc_status *st)
{
	_cleanup_(bn_freep) BIGNUM *bn = NULL;

	if ((bn = BN_new()) == NULL)
		return -ENOMEM;
	/* 127 random bits: positive, and at most the 20 octets RFC 5280 allows. */
	if (BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
	    BN_is_zero(bn) || BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) == NULL)
		return ssl_fail(st, KC_ETLS, "certificate: serial number");
	return 0;
}

static int
new_key(enum kc_key_type type, EVP_PKEY **ret, struct kc_status *st)
{
	EVP_PKEY *key;

	key = type == KC_KEY_RSA_2048 ? EVP_RSA_gen(2048) : EVP_EC_gen("P-256");
	if (key == NULL)
		return ssl_fail(st, KC_ETLS, "certificate: key generation");
	*ret = key;
	return 0;
}

static int
load_issuer(const struct kc_cert_pair *issuer, X509 **ret_cert, EVP_PKEY **ret_key,
    struct kc_status *st)
{
	_cleanup_(x509_freep) X509 *x = NULL;
	_cleanup_(pkey_freep) EVP_PKEY *key = NULL;
	int r;

	if ((r = parse_cert_pem(issuer->cert_pem, issuer->cert_pem_len,
	    "issuer certificate", &x, st)) < 0)
		return r;
	if ((r = parse_key_pem(issuer->key_pem, issuer->key_pem_len, "issuer key",
	    &key, st)) < 0)
		return r;
	if (!(X509_get_extension_flags(x) & EXFLAG_CA))
		return kc_status_set(st, -EINVAL, "issuer certificate is not a CA");
	if (X509_check_private_key(x, key) != 1) {
		ERR_clear_error();
		return kc_status_set(st, -EINVAL,
		    "issuer key does not match the issuer certificate");
	}
	*ret_cert = x;
	*ret_key = key;
	x = NULL;
	key = NULL;
	return 0;
}

static int
pair_from(X509 *x, EVP_PKEY *key, struct kc_cert_pair **ret, struct kc_status *st)
{
	_cleanup_(kc_cert_pair_freep) struct kc_cert_pair *p = NULL;
	_cleanup_(bio_freep) BIO *cb = NULL;
	_cleanup_(bio_freep) BIO *kb = NULL;
	int r;

	if ((p = kc_calloc(1, sizeof(*p))) == NULL)
		return -ENOMEM;
	if ((cb = BIO_new(BIO_s_mem())) == NULL || (kb = BIO_new(BIO_s_secmem())) == NULL) {
		ERR_clear_error();
		return -ENOMEM;
	}
	if (PEM_write_bio_X509(cb, x) != 1 ||
	    PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL) != 1)
		return ssl_fail(st, KC_ETLS, "certificate: PEM encoding");
	if ((r = bio_take(cb, &p->cert_pem, &p->cert_pem_len)) < 0 ||
	    (r = bio_take(kb, &p->key_pem, &p->key_pem_len)) < 0)
		return r;
	*ret = p;
	p = NULL;
	return 0;
}

int
kc_cert_create(const struct kc_cert_opts *opts, const struct kc_cert_pair *issuer,
    struct kc_cert_pair **ret, struct kc_status *st)
{
	_cleanup_(x509_freep) X509 *x = NULL;
	_cleanup_(x509_freep) X509 *ix = NULL;
	_cleanup_(pkey_freep) EVP_PKEY *key = NULL;
	_cleanup_(pkey_freep) EVP_PKEY *ikey = NULL;
	time_t now = opts->now;
	unsigned days;
	int r;

	ERR_clear_error();
	if ((r = check_opts(opts, st)) < 0)
		return r;
	days = opts->days != 0 ? opts->days : CERT_DAYS_DEFAULT;
	if (issuer != NULL && (r = load_issuer(issuer, &ix, &ikey, st)) < 0)
		return r;
	if ((r = new_key(opts->key_type, &key, st)) < 0)
		return r;
	if ((x = X509_new()) == NULL) {
		ERR_clear_error();
		return -ENOMEM;
	}
	if (X509_set_version(x, X509_VERSION_3) != 1 || X509_set_pubkey(x, key) != 1 ||
	    X509_time_adj_ex(X509_getm_notBefore(x), 0,
	    opts->seconds != 0 ? -(long)KC_MIN(opts->seconds / 10, 3600u) : -3600,
	    opts->now != 0 ? &now : NULL) == NULL ||
	    X509_time_adj_ex(X509_getm_notAfter(x), opts->seconds != 0 ? 0 : (int)days,
	    (long)opts->seconds, opts->now != 0 ? &now : NULL) == NULL)
		return ssl_fail(st, KC_ETLS, "certificate");
	if ((r = set_serial(x, st)) < 0 || (r = set_subject(x, opts, st)) < 0)
		return r;
	if (X509_set_issuer_name(x, X509_get_subject_name(ix != NULL ? ix : x)) != 1)
		return ssl_fail(st, KC_ETLS, "certificate: issuer name");
	if ((r = add_extensions(x, ix, opts, st)) < 0)
		return r;
	if (X509_sign(x, ikey != NULL ? ikey : key, EVP_sha256()) <= 0)
		return ssl_fail(st, KC_ETLS, "certificate: signing");
	return pair_from(x, key, ret, st);
}

int
kc_cert_pair_load(const char *cert_pem, size_t cert_len, const char *key_pem,
    size_t key_len, struct kc_cert_pair **ret, struct kc_status *st)
{
	_cleanup_(kc_cert_pair_freep) struct kc_cert_pair *p = NULL;
	_cleanup_(x509_freep) X509 *x = NULL;
	_cleanup_(pkey_freep) EVP_PKEY *key = NULL;
	int r;

	ERR_clear_error();
	if ((r = parse_cert_pem(cert_pem, cert_len, "certificate", &x, st)) < 0)
		return r;
	if ((r = parse_key_pem(key_pem, key_len, "private key", &key, st)) < 0)
		return r;
	if (X509_check_private_key(x, key) != 1) {
		ERR_clear_error();
		return kc_status_set(st, -EINVAL,
		    "private key does not match the certificate");
	}
	if ((p = kc_calloc(1, sizeof(*p))) == NULL ||
	    (p->cert_pem = kc_strndup(cert_pem, cert_len)) == NULL ||
	    (p->key_pem = kc_strndup(key_pem, key_len)) == NULL)
		return -ENOMEM;
	p->cert_pem_len = strlen(p->cert_pem);
	p->key_pem_len = strlen(p->key_pem);
	*ret = p;
	p = NULL;
	return 0;
}

int
kc_cert_pair_read(const char *cert_path, const char *key_path,
    struct kc_cert_pair **ret, struct kc_status *st)
{
	_cleanup_(kc_freep) char *cert = NULL;
	char *key = NULL;
	size_t cert_len, key_len;
	int r;

	if ((r = kc_read_file(cert_path, KC_CERT_PEM_MAX, &cert, &cert_len)) < 0)
		return kc_status_set(st, r, "%s: %s", cert_path, kc_strerror(r));
	if ((r = kc_read_file(key_path, KC_CERT_PEM_MAX, &key, &key_len)) < 0)
		return kc_status_set(st, r, "%s: %s", key_path, kc_strerror(r));
	r = kc_cert_pair_load(cert, cert_len, key, key_len, ret, st);
	explicit_bzero(key, key_len);
	kc_free(key);
	return r;
}

int
kc_cert_pair_write(const struct kc_cert_pair *pair, const char *cert_path,
    const char *key_path, struct kc_status *st)
{
	int r;

	if ((r = kc_write_file_atomic(cert_path, pair->cert_pem, pair->cert_pem_len,
	    0644)) < 0)
		return kc_status_set(st, r, "%s: %s", cert_path, kc_strerror(r));
	if ((r = kc_write_file_atomic(key_path, pair->key_pem, pair->key_pem_len,
	    0600)) < 0)
		return kc_status_set(st, r, "%s: %s", key_path, kc_strerror(r));
	return 0;
}

struct kc_cert_pair *
kc_cert_pair_free(struct kc_cert_pair *p)
{
	if (p == NULL)
		return NULL;
	kc_free(p->cert_pem);
	if (p->key_pem != NULL)
		explicit_bzero(p->key_pem, p->key_pem_len);
	kc_free(p->key_pem);
	return kc_free(p);
}

/* A NULL-terminated list that grows by one. */
static int
strv_push(char ***v, size_t *n, char *s, const char *what, struct kc_status *st)
{
	char **nv;

	if (*n >= KC_CERT_NAMES_MAX) {
		kc_free(s);
		return kc_status_set(st, -E2BIG, "certificate: more than %d %s",
		    KC_CERT_NAMES_MAX, what);
	}
	if ((nv = kc_reallocarray(*v, *n + 2, sizeof(*nv))) == NULL) {
		kc_free(s);
		return -ENOMEM;
	}
	nv[(*n)++] = s;
	nv[*n] = NULL;
	*v = nv;
	return 0;
}

static char **
strv_free(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		kc_free(v[i]);
	return kc_free(v);
}

static int
strv_empty(char ***v)
{
	if ((*v = kc_calloc(1, sizeof(**v))) == NULL)
		return -ENOMEM;
	return 0;
}

/* An ASN.1 string as UTF-8 without NUL bytes. */
static int
asn1_utf8(const ASN1_STRING *s, const char *what, char **ret, struct kc_status *st)
{
	unsigned char *u = NULL;
	int n;

	if ((n = ASN1_STRING_to_UTF8(&u, s)) < 0)
		return ssl_fail(st, KC_EPARSE, what);
	if (memchr(u, '\0', (size_t)n) != NULL) {
		OPENSSL_free(u);
		return kc_status_set(st, KC_EPARSE, "%s: holds a NUL byte", what);
	}
	*ret = kc_strndup((const char *)u, (size_t)n);
	OPENSSL_free(u);
	return *ret != NULL ? 0 : -ENOMEM;
}

static int
read_subject(X509 *x, struct kc_cert_info *info, struct kc_status *st)
{
	X509_NAME *name = X509_get_subject_name(x);
	size_t norgs = 0;
	char *s;
	int i, r;

	/* The last CN wins, as in Go's crypto/x509, which the API server uses. */
	for (i = -1; (i = X509_NAME_get_index_by_NID(name, NID_commonName, i)) >= 0;) {
		if ((r = asn1_utf8(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i)),
		    "certificate CN", &s, st)) < 0)
			return r;
		kc_free(info->cn);
		info->cn = s;
	}
	for (i = -1; (i = X509_NAME_get_index_by_NID(name, NID_organizationName, i)) >= 0;) {
		if ((r = asn1_utf8(X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i)),
		    "certificate O", &s, st)) < 0)
			return r;
		if ((r = strv_push(&info->orgs, &norgs, s, "O values", st)) < 0)
			return r;
	}
	return 0;
}

static int
read_sans(X509 *x, struct kc_cert_info *info, struct kc_status *st)
{
	_cleanup_(gens_freep) GENERAL_NAMES *gens = NULL;
	size_t ndns = 0, nips = 0;
	char text[INET6_ADDRSTRLEN];
	char *s;
	int r, crit;

	gens = X509_get_ext_d2i(x, NID_subject_alt_name, &crit, NULL);
	if (gens == NULL) {
		if (crit != -1)
			return ssl_fail(st, KC_EPARSE, "certificate: subjectAltName");
		return 0;
	}
	for (int i = 0; i < sk_GENERAL_NAME_num(gens); i++) {
		const GENERAL_NAME *gn = sk_GENERAL_NAME_value(gens, i);
		int type;
		const ASN1_STRING *v = GENERAL_NAME_get0_value(gn, &type);
		const unsigned char *d = ASN1_STRING_get0_data(v);
		int len = ASN1_STRING_length(v);

		if (type == GEN_DNS) {
			if (memchr(d, '\0', (size_t)len) != NULL)
				return kc_status_set(st, KC_EPARSE,
				    "certificate: DNS name holds a NUL byte");
			if ((s = kc_strndup((const char *)d, (size_t)len)) == NULL)
				return -ENOMEM;
			if ((r = strv_push(&info->dns, &ndns, s, "DNS names", st)) < 0)
				return r;
		} else if (type == GEN_IPADD) {
			if ((len != 4 && len != 16) || inet_ntop(len == 4 ?
			    AF_INET : AF_INET6, d, text, sizeof(text)) == NULL)
				return kc_status_set(st, KC_EPARSE,
				    "certificate: IP address of %d bytes", len);
			if ((s = kc_strdup(text)) == NULL)
				return -ENOMEM;
			if ((r = strv_push(&info->ips, &nips, s, "IP addresses", st)) < 0)
				return r;
		}
	}
	return 0;
}

static int
asn1_time(const ASN1_TIME *t, time_t *ret, struct kc_status *st)
{
	struct tm tm;

	if (ASN1_TIME_to_tm(t, &tm) != 1)
		return ssl_fail(st, KC_EPARSE, "certificate: validity");
	*ret = timegm(&tm);
	return 0;
}

static void
fingerprint(X509 *x, char *out, size_t size)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned n = 0;
	size_t off = 0;

	out[0] = '\0';
	if (X509_digest(x, EVP_sha256(), md, &n) != 1) {
		ERR_clear_error();
		return;
	}
	for (unsigned i = 0; i < n && off + 3 < size; i++)
		off += (size_t)snprintf(out + off, size - off, i == 0 ? "%02X" : ":%02X",
		    md[i]);
}

static int
parse_any(const void *data, size_t len, X509 **ret, struct kc_status *st)
{
	const unsigned char *p = data;
	int r;

	if ((r = check_text(data, len, "certificate", st)) < 0)
		return r;
	if (memmem(data, len, "-----BEGIN", 10) != NULL)
		return parse_cert_pem(data, len, "certificate", ret, st);
	if ((*ret = d2i_X509(NULL, &p, (long)len)) == NULL)
		return ssl_fail(st, KC_EPARSE, "certificate (DER)");
	return 0;
}

int
kc_cert_info_read(const void *data, size_t len, struct kc_cert_info **ret,
    struct kc_status *st)
{
	_cleanup_(kc_cert_info_freep) struct kc_cert_info *info = NULL;
	_cleanup_(x509_freep) X509 *x = NULL;
	int r;

	ERR_clear_error();
	if ((r = parse_any(data, len, &x, st)) < 0)
		return r;
	if ((info = kc_calloc(1, sizeof(*info))) == NULL)
		return -ENOMEM;
	if ((r = strv_empty(&info->orgs)) < 0 || (r = strv_empty(&info->dns)) < 0 ||
	    (r = strv_empty(&info->ips)) < 0)
		return r;
	if ((r = read_subject(x, info, st)) < 0 || (r = read_sans(x, info, st)) < 0)
		return r;
	if ((r = asn1_time(X509_get0_notBefore(x), &info->not_before, st)) < 0 ||
	    (r = asn1_time(X509_get0_notAfter(x), &info->not_after, st)) < 0)
		return r;
	info->is_ca = (X509_get_extension_flags(x) & EXFLAG_CA) != 0;
	fingerprint(x, info->fingerprint, sizeof(info->fingerprint));
	*ret = info;
	info = NULL;
	return 0;
}

struct kc_cert_info *
kc_cert_info_free(struct kc_cert_info *info)
{
	if (info == NULL)
		return NULL;
	kc_free(info->cn);
	strv_free(info->orgs);
	strv_free(info->dns);
	strv_free(info->ips);
	return kc_free(info);
}

/* Every certificate of PEM text, in order; KC_EPARSE when there is none. */
static int
parse_cert_list(const char *pem, size_t len, const char *what, STACK_OF(X509) **ret,
    struct kc_status *st)
{
	_cleanup_(x509_stack_freep) STACK_OF(X509) *sk = NULL;
	_cleanup_(bio_freep) BIO *b = NULL;
	X509 *x;
	int r;

	if ((r = check_text(pem, len, what, st)) < 0)
		return r;
	if ((r = mem_bio(pem, len, &b)) < 0)
		return r;
	if ((sk = sk_X509_new_null()) == NULL)
		return -ENOMEM;
	while ((x = PEM_read_bio_X509(b, NULL, no_password, NULL)) != NULL) {
		if (sk_X509_push(sk, x) <= 0) {
			X509_free(x);
			return -ENOMEM;
		}
	}
	if (sk_X509_num(sk) == 0)
		return ssl_fail(st, KC_EPARSE, what);
	ERR_clear_error();	/* the end of the text */
	*ret = sk;
	sk = NULL;
	return 0;
}

int
kc_cert_verify(const char *cert_pem, size_t cert_len, const char *ca_pem,
    size_t ca_len, struct kc_status *st)
{
	_cleanup_(x509_stack_freep) STACK_OF(X509) *chain = NULL;
	_cleanup_(x509_stack_freep) STACK_OF(X509) *cas = NULL;
	_cleanup_(x509_freep) X509 *leaf = NULL;
	_cleanup_(store_freep) X509_STORE *store = NULL;
	_cleanup_(store_ctx_freep) X509_STORE_CTX *ctx = NULL;
	int r;

	ERR_clear_error();
	if ((r = parse_cert_list(cert_pem, cert_len, "certificate", &chain, st)) < 0)
		return r;
	if ((r = parse_cert_list(ca_pem, ca_len, "CA certificate", &cas, st)) < 0)
		return r;
	leaf = sk_X509_shift(chain);
	if ((store = X509_STORE_new()) == NULL || (ctx = X509_STORE_CTX_new()) == NULL) {
		ERR_clear_error();
		return -ENOMEM;
	}
	for (int i = 0; i < sk_X509_num(cas); i++)
		if (X509_STORE_add_cert(store, sk_X509_value(cas, i)) != 1)
			return ssl_fail(st, KC_ETLS, "CA certificate");
	if (X509_STORE_CTX_init(ctx, store, leaf, chain) != 1)
		return ssl_fail(st, KC_ETLS, "certificate verification");
	if (X509_verify_cert(ctx) != 1) {
		r = X509_STORE_CTX_get_error(ctx);
		ERR_clear_error();
		return kc_status_set(st, KC_ETLS, "certificate does not verify: %s",
		    X509_verify_cert_error_string(r));
	}
	return 0;
}

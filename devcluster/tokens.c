/*
 * tokens.c: service-account tokens, as kube-apiserver issues and checks
 * them.
 *
 * Three jobs:
 *
 *	issuing		POST .../serviceaccounts/<name>/token, a TokenRequest
 *			(authentication.k8s.io/v1; JSON, YAML or the protobuf
 *			kubectl 1.32+ sends), answered with the request plus
 *			status.token and status.expirationTimestamp, in the
 *			order pkg/registry/core/serviceaccount/storage/token.go
 *			checks things: body name and namespace against the URL
 *			(422), the service account (404), its uid (409), the
 *			expiration (default 3600 s; under 600 s or over 2^32 s
 *			is 422 with upstream's message), the bound object (Pod,
 *			Secret or Node: it must exist, its uid match (409) and
 *			a pod run as this service account (400)), then the cap
 *			of tokens_opts.max_expiration_s (a Warning header).
 *	verifying	auth.c asks tokens_verify() (through auth_set_verifier())
 *			for every bearer token it does not know itself. A JWT
 *			whose "iss" is ours is checked as pkg/serviceaccount
 *			does: RS256 signature with our key, exp, nbf and iat
 *			with a minute of leeway, an audience in common with the
 *			API audience, the service account (and the bound pod,
 *			secret or node) still there with the same uid and not
 *			deleted more than a minute ago. The user is
 *			system:serviceaccount:<ns>:<name> with groups
 *			system:serviceaccounts, system:serviceaccounts:<ns> and
 *			system:authenticated. Any failure is 401.
 *	discovery	GET /.well-known/openid-configuration and
 *			/openid/v1/jwks (tokens_serve(), routes of tokens_plugin), with
 *			the default ClusterRole and binding
 *			system:service-account-issuer-discovery (group
 *			system:serviceaccounts) created when missing.
 *
 * The signing key is RSA 2048, made at first start and kept in
 * DIR/sa.key (PKCS#1 PEM, mode 0600) with --data-dir, so tokens survive a
 * restart. Its key id is upstream's: base64url(SHA-256(PKIX DER of the
 * public key)). A token is
 *
 *	{"alg":"RS256","kid":"<kid>"} . {"aud":[...],"exp":..,"iat":..,
 *	"iss":"https://kubernetes.default.svc.cluster.local","jti":"<uuid>",
 *	"kubernetes.io":{"namespace":..,"node":{..},"pod":{"name":..,"uid":..},
 *	"serviceaccount":{"name":..,"uid":..}},"nbf":..,"sub":
 *	"system:serviceaccount:<ns>:<name>"}
 *
 * keys sorted, as go-jose writes them. Parsing never trusts the token:
 * the length is capped (TOKENS_JWT_MAX), base64url is checked character
 * by character, JSON goes through json-c with its depth limit, and every
 * claim is type-checked before use.
 *
 * The token controller completes Secrets of type
 * kubernetes.io/service-account-token whose annotation
 * kubernetes.io/service-account.name names a service account: a legacy
 * token (issuer "kubernetes/serviceaccount", no expiry), ca.crt,
 * namespace and the uid annotation; such a Secret is deleted when its
 * service account does not exist (or has another uid), and with it. A
 * legacy token authenticates while its Secret still holds it.
 *
 * The user's extra is upstream's (see user_extra()); the token's
 * audiences meet the ones asked (a TokenReview's spec.audiences) as
 * upstream's JWT authenticator makes them.
 *
 * Not simulated: the kubelet's extended 3607-second tokens (warnafter),
 * the legacy tokens' last-used label, and --service-account-issuer / --api-audiences other
 * than the defaults.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/buf.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/sbuf.h>
#include <kc/str.h>
#include <kc/yaml.h>

#include "devcluster.h"
#include "tokens.h"
#include "plugins.h"
#include "protobuf.h"

#define TOKENS_API_VERSION	"authentication.k8s.io/v1"
#define TOKENS_QKIND		"TokenRequest.authentication.k8s.io"
#define TOKENS_KEY_MAX		(64u << 10)	/* sa.key */
#define TOKENS_KEY_BITS		2048
#define TOKENS_LEEWAY_S		60		/* go-jose's DefaultLeeway */
#define TOKENS_EXP_MAX_S	(INT64_C(1) << 32)
#define TOKENS_DISCOVERY_ROLE	"system:service-account-issuer-discovery"
#define TOKENS_LEGACY_ISSUER	"kubernetes/serviceaccount"
#define LEGACY_CLAIM		"kubernetes.io/serviceaccount/"
#define SECRET_TYPE_SA_TOKEN	"kubernetes.io/service-account-token"
#define ANN_SA_NAME		"kubernetes.io/service-account.name"
#define ANN_SA_UID		"kubernetes.io/service-account.uid"

struct tokens {
	struct dc	*dc;
	EVP_PKEY	*key;
	char		 kid[64];
	uint64_t	 max_exp;		/* 0: none */
	char		*ca_b64;		/* ca.crt of token secrets, or NULL */
	bool		 subscribed;
};

static struct tokens *
state(const struct dc *dc)
{
	return plugin_state(dc, &tokens_plugin);
}

/*
 * base64url without padding (RFC 7515)
 */

static char *
b64url_encode(const void *data, size_t len)
{
	char *s;

	return kc_base64_encode(data, len, KC_BASE64_URL, &s, NULL) == 0 ? s : NULL;
}

/* Decodes 'len' bytes of unpadded base64url: -EINVAL for anything else. */
static int
b64url_decode(const char *text, size_t len, char **ret, size_t *ret_len)
{
	if (len == 0 || len > TOKENS_JWT_MAX)
		return -EINVAL;
	return kc_base64_decode(text, len, KC_BASE64_URL, ret, ret_len, NULL, 0);
}

/*
 * The key
 */

static int
no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return 0;
}

static int
key_from_pem(const char *pem, size_t len, const char *what, EVP_PKEY **ret,
    struct kc_status *st)
{
	BIO *bio;
	EVP_PKEY *k;

	if (len > TOKENS_KEY_MAX || (bio = BIO_new_mem_buf(pem, (int)len)) == NULL)
		return kc_status_set(st, KC_ECONFIG, "%s: too large or out of memory", what);
	k = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
	BIO_free(bio);
	if (k == NULL)
		return kc_status_set(st, KC_ECONFIG, "%s: not a PEM private key", what);
	if (!EVP_PKEY_is_a(k, "RSA") || EVP_PKEY_get_bits(k) < TOKENS_KEY_BITS) {
		EVP_PKEY_free(k);
		return kc_status_set(st, KC_ECONFIG, "%s: the service-account signing key "
		    "must be an RSA key of at least %d bits", what, TOKENS_KEY_BITS);
	}
	*ret = k;
	return 0;
}

static int
key_to_pem(EVP_PKEY *k, char **ret, size_t *ret_len)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *data, *out;
	long n;

	if (bio == NULL)
		return -ENOMEM;
	if (PEM_write_bio_PrivateKey_traditional(bio, k, NULL, NULL, 0, NULL, NULL) != 1 ||
	    (n = BIO_get_mem_data(bio, &data)) <= 0 ||
	    (out = kc_strndup(data, (size_t)n)) == NULL) {
		BIO_free(bio);
		return -ENOMEM;
	}
	BIO_free(bio);
	*ret = out;
	*ret_len = (size_t)n;
	return 0;
}

/* Loads DIR/sa.key, or makes a key and saves it there (mode 0600). */
static int
key_load(const struct tokens_opts *opts, EVP_PKEY **ret, struct kc_status *st)
{
	_cleanup_(kc_freep) char *path = NULL;
	char *pem = NULL;
	size_t len;
	EVP_PKEY *k;
	int r;

	if (opts->key_pem != NULL)
		return key_from_pem(opts->key_pem, strlen(opts->key_pem), "key_pem", ret, st);
	if (opts->data_dir != NULL) {
		if ((path = kc_asprintf("%s/%s", opts->data_dir, TOKENS_KEY_FILE)) == NULL)
			return -ENOMEM;
		r = kc_read_file(path, TOKENS_KEY_MAX, &pem, &len);
		if (r == 0) {
			r = key_from_pem(pem, len, path, ret, st);
			kc_free_secret(pem);
			return r;
		}
		if (r != -ENOENT)
			return kc_status_set(st, KC_ECONFIG, "reading %s: %s", path,
			    kc_strerror(r));
	}
	if ((k = EVP_RSA_gen(TOKENS_KEY_BITS)) == NULL)
		return kc_status_set(st, KC_ECONFIG, "generating the service-account key "
		    "failed");
	if (path != NULL) {
		if ((r = key_to_pem(k, &pem, &len)) == 0) {
			r = kc_write_file_atomic(path, pem, len, 0600);
			kc_free_secret(pem);
		}
		if (r < 0) {
			EVP_PKEY_free(k);
			return kc_status_set(st, KC_ECONFIG, "saving %s: %s", path,
			    kc_strerror(r));
		}
	}
	*ret = k;
	return 0;
}

/* base64url(SHA-256(DER of the public key)), as upstream's keyIDFromPublicKey. */
static int
key_id(EVP_PKEY *k, char *buf, size_t size)
{
	unsigned char *der = NULL, md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	char *s;
	int n;

	if ((n = i2d_PUBKEY(k, &der)) <= 0)
		return -ENOMEM;
	if (EVP_Digest(der, (size_t)n, md, &mdlen, EVP_sha256(), NULL) != 1) {
		OPENSSL_free(der);
		return -ENOMEM;
	}
	OPENSSL_free(der);
	if ((s = b64url_encode(md, mdlen)) == NULL)
		return -ENOMEM;
	(void)kc_strlcpy(buf, s, size);
	kc_free(s);
	return 0;
}

/* A big-endian RSA parameter, base64url, for the JWK. */
static char *
key_param(EVP_PKEY *k, const char *name)
{
	BIGNUM *bn = NULL;
	unsigned char *bin;
	char *s = NULL;
	int n;

	if (EVP_PKEY_get_bn_param(k, name, &bn) != 1)
		return NULL;
	n = BN_num_bytes(bn);
	if ((bin = kc_malloc((size_t)n + 1)) != NULL) {
		(void)BN_bn2bin(bn, bin);
		s = b64url_encode(bin, (size_t)n);
		kc_free(bin);
	}
	BN_free(bn);
	return s;
}

/*
 * Signing and checking
 */

static int
sign(EVP_PKEY *k, const char *data, size_t len, char **ret)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char *sig = NULL;
	size_t siglen = 0;
	int r = -ENOMEM;

	if (ctx == NULL)
		return -ENOMEM;
	if (EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, k) != 1 ||
	    EVP_DigestSign(ctx, NULL, &siglen, (const unsigned char *)data, len) != 1 ||
	    (sig = kc_malloc(siglen)) == NULL ||
	    EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)data, len) != 1)
		goto out;
	if ((*ret = b64url_encode(sig, siglen)) != NULL)
		r = 0;
out:
	kc_free(sig);
	EVP_MD_CTX_free(ctx);
	return r;
}

/* 0 when 'sig' signs 'data' with 'k', KC_EUNAUTHORIZED when not, -ENOMEM. */
static int
check_signature(EVP_PKEY *k, const char *data, size_t len, const char *sig, size_t siglen)
{
	_cleanup_(kc_freep) char *raw = NULL;
	EVP_MD_CTX *ctx;
	size_t rawlen;
	bool ok;
	int r;

	if ((r = b64url_decode(sig, siglen, &raw, &rawlen)) < 0)
		return r == -ENOMEM ? r : KC_EUNAUTHORIZED;
	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return -ENOMEM;
	ok = EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, k) == 1 &&
	    EVP_DigestVerify(ctx, (const unsigned char *)raw, rawlen,
	    (const unsigned char *)data, len) == 1;
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : KC_EUNAUTHORIZED;
}

/* Serializes 'o' as base64url into 'b'. */
static int
put_segment(struct kc_buf *b, const struct json_object *o)
{
	struct kc_buf json;
	char *seg;
	int r;

	kc_buf_init(&json, TOKENS_JWT_MAX);
	if ((r = api_serialize(o, &json)) < 0) {
		kc_buf_free(&json);
		return r;
	}
	seg = b64url_encode(kc_buf_str(&json), json.len);
	kc_buf_free(&json);
	if (seg == NULL)
		return -ENOMEM;
	r = kc_buf_puts(b, seg);
	kc_free(seg);
	return r;
}

/* A {name, uid} reference. */
static int
put_ref(struct json_object *o, const char *key, const struct json_object *obj)
{
	struct json_object *ref = kc_json_ensure_obj(o, key);
	const char *name = kc_json_str(obj, "metadata", "name");
	const char *uid = kc_json_str(obj, "metadata", "uid");

	if (ref == NULL ||
	    (name != NULL && name[0] != '\0' && kc_json_set_str(ref, "name", name) < 0) ||
	    (uid != NULL && uid[0] != '\0' && kc_json_set_str(ref, "uid", uid) < 0))
		return -ENOMEM;
	return 0;
}

struct claims {
	const struct json_object *sa;
	const struct json_object *pod;		/* at most one of pod and secret */
	const struct json_object *secret;
	const struct json_object *node;		/* the pod's node, or the bound node */
	const struct json_object *audiences;	/* array of strings */
	time_t			  now;
	int64_t			  exp_s;
};

/* header.claims.signature, the header {"alg":"RS256","kid":...}. */
static int
encode_jwt(struct tokens *t, const struct json_object *cl, char **ret)
{
	struct json_object *hdr = json_object_new_object();
	char *sig = NULL;
	struct kc_buf b;
	int r = -ENOMEM;

	kc_buf_init(&b, TOKENS_JWT_MAX);
	if (hdr == NULL || kc_json_set_str(hdr, "alg", "RS256") < 0 ||
	    kc_json_set_str(hdr, "kid", t->kid) < 0)
		goto out;
	if ((r = put_segment(&b, hdr)) < 0 || (r = kc_buf_putc(&b, '.')) < 0 ||
	    (r = put_segment(&b, cl)) < 0 ||
	    (r = sign(t->key, kc_buf_str(&b), b.len, &sig)) < 0 ||
	    (r = kc_buf_putc(&b, '.')) < 0 || (r = kc_buf_puts(&b, sig)) < 0)
		goto out;
	if ((*ret = kc_buf_take(&b, NULL)) == NULL)
		r = -ENOMEM;
out:
	if (hdr != NULL)
		json_object_put(hdr);
	kc_free(sig);
	kc_buf_free(&b);
	return r;
}

static int
make_token(struct tokens *t, const struct claims *c, char **ret)
{
	struct json_object *cl = json_object_new_object(), *k8s, *aud;
	const char *ns = kc_json_str(c->sa, "metadata", "namespace");
	const char *name = kc_json_str(c->sa, "metadata", "name");
	char jti[37], sub[2 * DC_SEGMENT_MAX + 32];
	int r = -ENOMEM;

	api_uuid(jti);
	(void)snprintf(sub, sizeof(sub), "system:serviceaccount:%s:%s", ns, name);
	if (cl == NULL ||
	    (aud = kc_json_copy(c->audiences)) == NULL || kc_json_put(cl, "aud", aud) < 0 ||
	    kc_json_set_int(cl, "exp", (int64_t)c->now + c->exp_s) < 0 ||
	    kc_json_set_int(cl, "iat", (int64_t)c->now) < 0 ||
	    kc_json_set_str(cl, "iss", TOKENS_ISSUER) < 0 ||
	    kc_json_set_str(cl, "jti", jti) < 0 ||
	    (k8s = kc_json_ensure_obj(cl, "kubernetes.io")) == NULL ||
	    kc_json_set_str(k8s, "namespace", ns) < 0 ||
	    (c->node != NULL && put_ref(k8s, "node", c->node) < 0) ||
	    (c->pod != NULL && put_ref(k8s, "pod", c->pod) < 0) ||
	    (c->secret != NULL && put_ref(k8s, "secret", c->secret) < 0) ||
	    put_ref(k8s, "serviceaccount", c->sa) < 0 ||
	    kc_json_set_int(cl, "nbf", (int64_t)c->now) < 0 ||
	    kc_json_set_str(cl, "sub", sub) < 0)
		goto out;
	r = encode_jwt(t, cl, ret);
out:
	if (cl != NULL)
		json_object_put(cl);
	return r;
}

/*
 * A legacy token (the token controller's, for a Secret of type
 * kubernetes.io/service-account-token): no expiry, no audience, issuer
 * "kubernetes/serviceaccount", the private claims of upstream's
 * LegacyClaims(), keys sorted.
 */
static int
make_legacy_token(struct tokens *t, const struct json_object *sa,
    const struct json_object *secret, char **ret)
{
	struct json_object *cl = json_object_new_object();
	const char *ns = kc_json_str(sa, "metadata", "namespace");
	const char *name = kc_json_str(sa, "metadata", "name");
	const char *uid = kc_json_str(sa, "metadata", "uid");
	char sub[2 * DC_SEGMENT_MAX + 32];
	int r = -ENOMEM;

	(void)snprintf(sub, sizeof(sub), "system:serviceaccount:%s:%s", ns, name);
	if (cl != NULL && kc_json_set_str(cl, "iss", TOKENS_LEGACY_ISSUER) == 0 &&
	    kc_json_set_str(cl, LEGACY_CLAIM "namespace", ns) == 0 &&
	    kc_json_set_str(cl, LEGACY_CLAIM "secret.name",
	    kc_json_str(secret, "metadata", "name")) == 0 &&
	    kc_json_set_str(cl, LEGACY_CLAIM "service-account.name", name) == 0 &&
	    kc_json_set_str(cl, LEGACY_CLAIM "service-account.uid", uid != NULL ? uid : "") == 0 &&
	    kc_json_set_str(cl, "sub", sub) == 0)
		r = encode_jwt(t, cl, ret);
	if (cl != NULL)
		json_object_put(cl);
	return r;
}

/*
 * Verification
 */

/* A NumericDate claim: 0 with the value, 1 when absent, -EINVAL when not a number. */
static int
numeric_date(const struct json_object *cl, const char *key, int64_t *ret)
{
	struct json_object *v = NULL;
	double d;

	if (!json_object_object_get_ex(cl, key, &v) || v == NULL)
		return 1;
	if (json_object_is_type(v, json_type_int)) {
		*ret = json_object_get_int64(v);
		return 0;
	}
	if (!json_object_is_type(v, json_type_double))
		return -EINVAL;
	d = json_object_get_double(v);
	if (!(d > -9.2e18 && d < 9.2e18))
		return -EINVAL;
	*ret = (int64_t)d;
	return 0;
}

/* Go's %q of a []string: ["a" "b"]. */
static void
audiences_quoted(struct kc_sbuf *b, const char *const *v, size_t n)
{
	kc_sbuf_putc(b, '[');
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			kc_sbuf_putc(b, ' ');
		kc_sbuf_quote(b, v[i], strlen(v[i]));
	}
	kc_sbuf_putc(b, ']');
}

/*
 * The JWT authenticator's audience check: the token's "aud" (a string or
 * an array of strings; absent or empty, as legacy tokens: the API
 * audience) intersected with 'requested' (NULL: the API audience), in
 * the token's order, into user->audiences. KC_EUNAUTHORIZED with
 * upstream's text in 'err' when nothing is left; -ENOMEM; -E2BIG.
 */
static int
check_audiences(const struct json_object *cl, const char *const *requested,
    struct dc_user *user, char *err, size_t errsize)
{
	static const char *const api[] = { TOKENS_ISSUER, NULL };
	const char *tok[DC_AUDIENCES_MAX];
	struct json_object *aud = NULL;
	struct kc_sbuf b;
	size_t ntok = 0, nreq = 0;
	int r;

	if (requested == NULL || requested[0] == NULL)
		requested = api;
	while (requested[nreq] != NULL)
		nreq++;
	if (json_object_object_get_ex(cl, "aud", &aud) &&
	    json_object_is_type(aud, json_type_string))
		tok[ntok++] = json_object_get_string(aud);
	else if (aud != NULL && !json_object_is_type(aud, json_type_array))
		return KC_EUNAUTHORIZED;	/* go-jose cannot read it */
	else if (json_object_is_type(aud, json_type_array))
		for (size_t i = 0; i < json_object_array_length(aud) &&
		    ntok < DC_AUDIENCES_MAX; i++) {
			struct json_object *a = json_object_array_get_idx(aud, i);

			if (!json_object_is_type(a, json_type_string))
				return KC_EUNAUTHORIZED;
			tok[ntok++] = json_object_get_string(a);
		}
	if (ntok == 0)
		tok[ntok++] = TOKENS_ISSUER;
	for (size_t i = 0; i < ntok; i++)
		for (size_t j = 0; j < nreq; j++)
			if (strcmp(tok[i], requested[j]) == 0) {
				if ((r = user_add_audience(user, tok[i])) < 0)
					return r;
				break;
			}
	if (user->naudiences > 0)
		return 0;
	if (err != NULL && errsize > 0) {
		kc_sbuf_init(&b, err, errsize);
		kc_sbuf_puts(&b, "token audiences ");
		audiences_quoted(&b, tok, ntok);
		kc_sbuf_puts(&b, " is invalid for the target audiences ");
		audiences_quoted(&b, (const char *const *)requested, nreq);
		(void)kc_sbuf_end(&b);
	}
	return KC_EUNAUTHORIZED;
}

/* A string claim in the kubernetes.io object ("" when absent or not a string). */
static const char *
claim_str(const struct json_object *k8s, const char *obj, const char *key)
{
	struct json_object *o = (struct json_object *)(uintptr_t)k8s, *v = NULL;

	if (obj != NULL && (!json_object_object_get_ex(o, obj, &o) ||
	    !json_object_is_type(o, json_type_object)))
		return "";
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return "";
	return json_object_get_string(v);
}

static bool
has_claim(const struct json_object *k8s, const char *obj)
{
	struct json_object *o = NULL;

	return json_object_object_get_ex(k8s, obj, &o) && o != NULL;
}

/*
 * Whether the object 'plural' ns/name exists with uid 'uid' and was not
 * deleted before 'before'. 'uid' NULL skips the uid check.
 */
static bool
object_live(struct dc *dc, const char *plural, const char *ns, const char *name,
    const char *uid, time_t before)
{
	const struct dc_rtype *rt = registry_find(dc, "", "v1", plural);
	const struct json_object *o;
	const char *ouid, *del;
	time_t t;

	if (rt == NULL || name[0] == '\0' ||
	    (o = coll_get(rt->coll, rt->namespaced ? ns : NULL, name)) == NULL)
		return false;
	ouid = kc_json_str(o, "metadata", "uid");
	if (uid != NULL && (ouid == NULL || strcmp(ouid, uid) != 0))
		return false;
	del = kc_json_str(o, "metadata", "deletionTimestamp");
	if (del != NULL && kc_time_parse(del, &t) == 0 && t < before)
		return false;
	return true;
}

/* Splits and checks a JWT: DC_DECLINED when it is not ours, else 0 with the claims. */
static int
parse_token(struct tokens *t, const char *token, struct json_object **ret)
{
	const char *dot1, *dot2;
	struct json_object *hdr = NULL, *cl = NULL;
	const char *alg, *kid, *iss;
	char *text = NULL;
	size_t len, tlen = strnlen(token, TOKENS_JWT_MAX + 1);
	int r = DC_DECLINED;

	if (tlen > TOKENS_JWT_MAX || (dot1 = strchr(token, '.')) == NULL ||
	    (dot2 = strchr(dot1 + 1, '.')) == NULL || strchr(dot2 + 1, '.') != NULL)
		return DC_DECLINED;
	if ((r = b64url_decode(token, (size_t)(dot1 - token), &text, &len)) < 0)
		goto out;
	r = kc_json_parse(text, len, &hdr, NULL);
	text = kc_free(text);
	if (r < 0 || !json_object_is_type(hdr, json_type_object))
		goto out;
	if ((r = b64url_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), &text, &len)) < 0)
		goto out;
	r = kc_json_parse(text, len, &cl, NULL);
	text = kc_free(text);
	if (r < 0 || !json_object_is_type(cl, json_type_object))
		goto out;
	r = DC_DECLINED;
	iss = kc_json_str(cl, "iss");
	if (iss == NULL || (strcmp(iss, TOKENS_ISSUER) != 0 &&
	    strcmp(iss, TOKENS_LEGACY_ISSUER) != 0))
		goto out;
	/* Ours from here on: every failure is a rejection. */
	r = KC_EUNAUTHORIZED;
	alg = kc_json_str(hdr, "alg");
	kid = kc_json_str(hdr, "kid");
	if (alg == NULL || strcmp(alg, "RS256") != 0 || (kid != NULL && strcmp(kid, t->kid) != 0))
		goto out;
	if ((r = check_signature(t->key, token, (size_t)(dot2 - token), dot2 + 1,
	    strlen(dot2 + 1))) < 0)
		goto out;
	*ret = cl;
	cl = NULL;
	r = 0;
out:
	/* Not a JWT (bad base64url or JSON) is not ours either. */
	if (r < 0 && r != -ENOMEM && r != KC_EUNAUTHORIZED)
		r = DC_DECLINED;
	if (hdr != NULL)
		json_object_put(hdr);
	if (cl != NULL)
		json_object_put(cl);
	return r;
}

/* The checks of pkg/serviceaccount's validator; 0 or KC_EUNAUTHORIZED. */
static int
check_claims(struct tokens *t, const struct json_object *cl, char *ns, size_t nssize,
    char *name, size_t namesize, char *uid, size_t uidsize)
{
	struct dc *dc = t->dc;
	struct json_object *k8s = NULL;
	time_t now = kc_clock_wall(), before = now - TOKENS_LEEWAY_S;
	int64_t v;
	int r;

	if ((r = numeric_date(cl, "exp", &v)) < 0 || (r == 0 && now - TOKENS_LEEWAY_S > v))
		return KC_EUNAUTHORIZED;	/* service account token has expired */
	if ((r = numeric_date(cl, "nbf", &v)) < 0 || (r == 0 && now + TOKENS_LEEWAY_S < v))
		return KC_EUNAUTHORIZED;	/* ... is not valid yet */
	if ((r = numeric_date(cl, "iat", &v)) < 0 || (r == 0 && now + TOKENS_LEEWAY_S < v))
		return KC_EUNAUTHORIZED;	/* ... is issued in the future */
	if (!json_object_object_get_ex(cl, "kubernetes.io", &k8s) ||
	    !json_object_is_type(k8s, json_type_object))
		return KC_EUNAUTHORIZED;
	if (kc_strlcpy(ns, claim_str(k8s, NULL, "namespace"), nssize) >= nssize ||
	    kc_strlcpy(name, claim_str(k8s, "serviceaccount", "name"), namesize) >= namesize ||
	    kc_strlcpy(uid, claim_str(k8s, "serviceaccount", "uid"), uidsize) >= uidsize ||
	    ns[0] == '\0' || name[0] == '\0')
		return KC_EUNAUTHORIZED;
	if (!object_live(dc, "serviceaccounts", ns, name, uid, before))
		return KC_EUNAUTHORIZED;
	if (has_claim(k8s, "secret") && !object_live(dc, "secrets", ns,
	    claim_str(k8s, "secret", "name"), claim_str(k8s, "secret", "uid"), before))
		return KC_EUNAUTHORIZED;	/* service account token has been invalidated */
	if (has_claim(k8s, "pod") && !object_live(dc, "pods", ns,
	    claim_str(k8s, "pod", "name"), claim_str(k8s, "pod", "uid"), before))
		return KC_EUNAUTHORIZED;
	if (has_claim(k8s, "node") && !has_claim(k8s, "pod") && !object_live(dc, "nodes", "",
	    claim_str(k8s, "node", "name"), claim_str(k8s, "node", "uid"), before))
		return KC_EUNAUTHORIZED;
	return 0;
}

/* A string claim of 'cl' ("" when absent or not a string). */
static const char *
top_str(const struct json_object *cl, const char *key)
{
	return claim_str(cl, NULL, key);
}

/*
 * The legacy validator: the secret still holds exactly this token, it and
 * the service account (same uid) are there and not deleted a minute ago.
 */
static int
check_legacy(struct tokens *t, const struct json_object *cl, const char *token,
    char *ns, size_t nssize, char *name, size_t namesize, char *uid, size_t uidsize)
{
	struct dc *dc = t->dc;
	time_t before = kc_clock_wall() - TOKENS_LEEWAY_S;
	const char *secret = top_str(cl, LEGACY_CLAIM "secret.name"), *data;
	const struct dc_rtype *rt = registry_find(dc, "", "v1", "secrets");
	const struct json_object *so;
	char *raw = NULL;
	size_t rawlen;
	bool same;
	int r;

	if (kc_strlcpy(ns, top_str(cl, LEGACY_CLAIM "namespace"), nssize) >= nssize ||
	    kc_strlcpy(name, top_str(cl, LEGACY_CLAIM "service-account.name"), namesize) >=
	    namesize || kc_strlcpy(uid, top_str(cl, LEGACY_CLAIM "service-account.uid"),
	    uidsize) >= uidsize || ns[0] == '\0' || name[0] == '\0' || secret[0] == '\0')
		return KC_EUNAUTHORIZED;
	if (rt == NULL || !object_live(dc, "secrets", ns, secret, NULL, before) ||
	    (so = coll_get(rt->coll, ns, secret)) == NULL ||
	    (data = kc_json_str(so, "data", "token")) == NULL)
		return KC_EUNAUTHORIZED;
	if ((r = kc_base64_decode(data, strlen(data), 0, &raw, &rawlen, NULL, 0)) < 0)
		return r == -ENOMEM ? r : KC_EUNAUTHORIZED;
	same = rawlen == strlen(token) && memcmp(raw, token, rawlen) == 0;
	kc_free_secret(raw);
	if (!same || !object_live(dc, "serviceaccounts", ns, name, uid, before))
		return KC_EUNAUTHORIZED;
	return 0;
}

/*
 * ServiceAccountInfo.UserInfo's extra, keys in the order Go's JSON
 * writes a map: the credential id ("JTI=<jti>", from 1.30), the node of
 * a node-bound token or of a pod-bound token's pod (from 1.30), the pod
 * of a pod-bound token.
 */
static int
user_extra(struct dc *dc, const struct json_object *cl, struct dc_user *u)
{
	struct json_object *k8s = NULL;
	const char *jti = top_str(cl, "jti");
	bool from130 = api_minor(dc) >= 30;
	int r = 0;

	if (!json_object_object_get_ex(cl, "kubernetes.io", &k8s) ||
	    !json_object_is_type(k8s, json_type_object))
		return 0;
	if (from130 && jti[0] != '\0') {
		char id[DC_SEGMENT_MAX + 8];

		(void)snprintf(id, sizeof(id), "JTI=%s", jti);
		r = user_add_extra(u, "authentication.kubernetes.io/credential-id", id);
	}
	if (r == 0 && from130 && claim_str(k8s, "node", "name")[0] != '\0' &&
	    claim_str(k8s, "node", "uid")[0] != '\0' &&
	    ((r = user_add_extra(u, "authentication.kubernetes.io/node-name",
	    claim_str(k8s, "node", "name"))) < 0 ||
	    (r = user_add_extra(u, "authentication.kubernetes.io/node-uid",
	    claim_str(k8s, "node", "uid"))) < 0))
		return r;
	if (r == 0 && claim_str(k8s, "pod", "name")[0] != '\0' &&
	    claim_str(k8s, "pod", "uid")[0] != '\0' &&
	    ((r = user_add_extra(u, "authentication.kubernetes.io/pod-name",
	    claim_str(k8s, "pod", "name"))) < 0 ||
	    (r = user_add_extra(u, "authentication.kubernetes.io/pod-uid",
	    claim_str(k8s, "pod", "uid"))) < 0))
		return r;
	return r;
}

int
tokens_verify(struct dc *dc, const char *token, const char *const *audiences,
    struct dc_user *user, char *err, size_t errsize)
{
	struct tokens *t = state(dc);
	struct json_object *cl = NULL;
	struct dc_user u = { 0 }, out = { 0 };
	char ns[DC_SEGMENT_MAX], name[DC_SEGMENT_MAX], uid[DC_SEGMENT_MAX];
	char uname[2 * DC_SEGMENT_MAX + 32], g[DC_SEGMENT_MAX + 32];
	bool legacy;
	int r;

	if (t == NULL || token == NULL)
		return DC_DECLINED;
	if ((r = parse_token(t, token, &cl)) != 0)
		return r;
	legacy = strcmp(top_str(cl, "iss"), TOKENS_LEGACY_ISSUER) == 0;
	/* The audiences first, as upstream's JWT authenticator checks them. */
	if ((r = check_audiences(cl, audiences, &u, err, errsize)) < 0)
		goto out;
	if (legacy)
		r = check_legacy(t, cl, token, ns, sizeof(ns), name, sizeof(name), uid,
		    sizeof(uid));
	else
		r = check_claims(t, cl, ns, sizeof(ns), name, sizeof(name), uid, sizeof(uid));
	if (r < 0)
		goto out;
	(void)snprintf(uname, sizeof(uname), "system:serviceaccount:%s:%s", ns, name);
	(void)snprintf(g, sizeof(g), "system:serviceaccounts:%s", ns);
	if ((r = user_set(&out, uname, uid, (const char *const []){ "system:serviceaccounts",
	    g, "system:authenticated", NULL })) < 0)
		goto out;
	for (size_t i = 0; r == 0 && i < u.naudiences; i++)
		r = user_add_audience(&out, u.audiences[i]);
	if (r == 0 && !legacy)
		r = user_extra(dc, cl, &out);
	if (r == 0) {
		user_clear(user);
		*user = out;
		memset(&out, 0, sizeof(out));
	}
out:
	user_clear(&out);
	user_clear(&u);
	json_object_put(cl);
	return r;
}

static int
verifier(void *arg, const char *token, const char *const *audiences, struct dc_user *user,
    char *err, size_t errsize)
{
	return tokens_verify(arg, token, audiences, user, err, errsize);
}

/*
 * The TokenRequest subresource
 */

/* The media type of a Content-Type, lowercased, parameters dropped. */
static void
media_type(const char *ct, char *buf, size_t size)
{
	size_t n = 0;

	if (ct == NULL)
		ct = "";
	while (*ct == ' ')
		ct++;
	for (; *ct != '\0' && *ct != ';' && *ct != ' ' && n + 1 < size; ct++)
		buf[n++] = (char)((*ct >= 'A' && *ct <= 'Z') ? *ct - 'A' + 'a' : *ct);
	buf[n] = '\0';
}

/* The body as a TokenRequest object; on failure the reply is written. */
static int
decode_request(const struct dc_req *req, struct dc_resp *resp, struct json_object **ret)
{
	struct kc_status st = { 0 };
	struct json_object *o = NULL;
	const char *kind, *av;
	char mt[128];
	int r;

	media_type(req->content_type, mt, sizeof(mt));
	if (req->body == NULL || req->body_len == 0) {
		errors_reply(resp, KC_EBADREQUEST, "Object 'Kind' is missing in ''");
		return KC_EBADREQUEST;
	}
	if (strcmp(mt, "application/json") == 0)
		r = kc_json_parse(req->body, req->body_len, &o, &st);
	else if (strcmp(mt, "application/yaml") == 0)
		r = kc_yaml_parse_one(req->body, req->body_len, NULL, &o, &st);
	else if (strcmp(mt, "application/vnd.kubernetes.protobuf") == 0) {
		r = protobuf_decode(req->body, req->body_len, TOKENS_API_VERSION,
		    "TokenRequest", &o, &st);
		if (r == KC_EBADREQUEST)
			(void)kc_status_set(&st, r, "TokenRequest in version \"v1\" cannot be "
			    "handled as a TokenRequest: %s", st.message);
	} else {
		errors_reply(resp, KC_EMEDIATYPE, "the body of the request was in an unknown "
		    "format - accepted media types include: application/json, "
		    "application/yaml, application/vnd.kubernetes.protobuf");
		return KC_EMEDIATYPE;
	}
	if (r < 0) {
		if (r == -ENOMEM)
			errors_internal(resp, r);
		else if (strcmp(mt, "application/vnd.kubernetes.protobuf") == 0)
			errors_kc(resp, r, &st);
		else
			errors_reply(resp, KC_EBADREQUEST, "couldn't get version/kind; json "
			    "parse error: %s", st.message);
		return r == -ENOMEM ? r : KC_EBADREQUEST;
	}
	if (!json_object_is_type(o, json_type_object)) {
		if (o != NULL)
			json_object_put(o);
		errors_reply(resp, KC_EBADREQUEST, "couldn't get version/kind; json parse "
		    "error: the body is not a JSON object");
		return KC_EBADREQUEST;
	}
	kind = kc_json_str(o, "kind");
	av = kc_json_str(o, "apiVersion");
	if ((kind != NULL && kind[0] != '\0' && strcmp(kind, "TokenRequest") != 0) ||
	    (av != NULL && av[0] != '\0' && strcmp(av, TOKENS_API_VERSION) != 0)) {
		errors_reply(resp, KC_EBADREQUEST, "%s in version \"%s\" cannot be handled as "
		    "a TokenRequest: no kind \"%s\" is registered for version \"%s\"",
		    kind != NULL ? kind : "", av != NULL ? av : "", kind != NULL ? kind : "",
		    av != NULL ? av : "");
		json_object_put(o);
		return KC_EBADREQUEST;
	}
	*ret = o;
	return 0;
}

/* The object a boundObjectRef names; on failure the reply is written. */
static int
bound_object(struct dc *dc, const char *sa_name, const char *ns,
    const struct json_object *ref, struct claims *c, struct dc_resp *resp)
{
	const char *kind = kc_json_str(ref, "kind"), *av = kc_json_str(ref, "apiVersion");
	const char *name = kc_json_str(ref, "name"), *uid = kc_json_str(ref, "uid");
	const char *slash, *group = "", *version = av != NULL ? av : "", *ouid;
	const struct dc_rtype *rt;
	const struct json_object *o;
	char gbuf[DC_SEGMENT_MAX];

	if (kind == NULL)
		kind = "";
	if (name == NULL)
		name = "";
	if ((slash = strchr(version, '/')) != NULL) {
		(void)snprintf(gbuf, sizeof(gbuf), "%.*s", (int)(slash - version), version);
		group = gbuf;
		version = slash + 1;
	}
	if (group[0] != '\0' || (strcmp(kind, "Pod") != 0 && strcmp(kind, "Secret") != 0 &&
	    strcmp(kind, "Node") != 0)) {
		errors_reply(resp, KC_EBADREQUEST, "cannot bind token to object of type "
		    "%s/%s, Kind=%s", group, version, kind);
		return KC_EBADREQUEST;
	}
	rt = registry_find(dc, "", "v1", strcmp(kind, "Pod") == 0 ? "pods" :
	    strcmp(kind, "Secret") == 0 ? "secrets" : "nodes");
	if (rt == NULL || (o = coll_get(rt->coll, rt->namespaced ? ns : NULL, name)) == NULL) {
		if (rt != NULL)
			errors_notfound(resp, rt, name);
		else
			errors_reply(resp, KC_ENOTFOUND, "%s \"%s\" not found", kind, name);
		return KC_ENOTFOUND;
	}
	if (strcmp(kind, "Pod") == 0) {
		const char *psa = kc_json_str(o, "spec", "serviceAccountName");
		const char *node = kc_json_str(o, "spec", "nodeName");
		const struct dc_rtype *nrt = registry_find(dc, "", "v1", "nodes");

		if (psa == NULL || psa[0] == '\0')
			psa = "default";
		if (strcmp(psa, sa_name) != 0) {
			errors_reply(resp, KC_EBADREQUEST, "cannot bind token for serviceaccount "
			    "\"%s\" to pod running with different serviceaccount name.", sa_name);
			return KC_EBADREQUEST;
		}
		c->pod = o;
		if (node != NULL && node[0] != '\0' && nrt != NULL)
			c->node = coll_get(nrt->coll, NULL, node);
	} else if (strcmp(kind, "Secret") == 0)
		c->secret = o;
	else
		c->node = o;
	ouid = kc_json_str(o, "metadata", "uid");
	if (uid != NULL && uid[0] != '\0' && (ouid == NULL || strcmp(uid, ouid) != 0)) {
		errors_reply(resp, KC_ECONFLICT, "Operation cannot be fulfilled on %s \"%s\": the "
		    "UID in the bound object reference (%s) does not match the UID in record. "
		    "The object might have been deleted and then recreated", kind, name, uid);
		return KC_ECONFLICT;
	}
	return 0;
}

/* metadata.name and .namespace of the body against the URL (422). */
static int
check_meta(const struct json_object *in, const char *ns, const char *name,
    struct dc_resp *resp)
{
	const char *bname = kc_json_str(in, "metadata", "name");
	const char *bns = kc_json_str(in, "metadata", "namespace");
	struct dc_errs errs = { 0 };
	char q[DC_SEGMENT_MAX + 8];

	if (bname != NULL && bname[0] != '\0' && strcmp(bname, name) != 0)
		errs_invalid(&errs, "metadata.name", kc_sbuf_quoted(q, sizeof(q), bname),
		    "must match the service account name if specified");
	else if (bns != NULL && bns[0] != '\0' && strcmp(bns, ns) != 0)
		errs_invalid(&errs, "metadata.namespace", kc_sbuf_quoted(q, sizeof(q), bns),
		    "must match the service account namespace if specified");
	if (errs.n == 0)
		return 0;
	errors_invalid(resp, TOKENS_QKIND, "authentication.k8s.io", name, &errs);
	return KC_EINVALID;
}

/* spec.expirationSeconds: defaulted, then validated (422). */
static int
check_expiration(struct json_object *spec, int64_t *ret, struct dc_resp *resp)
{
	struct json_object *v = NULL;
	struct dc_errs errs = { 0 };
	char repr[32];
	int64_t exp = 3600;

	if (json_object_object_get_ex(spec, "expirationSeconds", &v) && v != NULL) {
		if (!json_object_is_type(v, json_type_int)) {
			errors_reply(resp, KC_EBADREQUEST, "TokenRequest in version \"v1\" cannot "
			    "be handled as a TokenRequest: spec.expirationSeconds: expected an "
			    "integer");
			return KC_EBADREQUEST;
		}
		exp = json_object_get_int64(v);
	}
	(void)snprintf(repr, sizeof(repr), "%lld", (long long)exp);
	if (exp < 600)
		errs_invalid(&errs, "spec.expirationSeconds", repr,
		    "may not specify a duration less than 10 minutes");
	if (exp > TOKENS_EXP_MAX_S)
		errs_invalid(&errs, "spec.expirationSeconds", repr,
		    "may not specify a duration larger than 2^32 seconds");
	if (errs.n > 0) {
		errors_invalid(resp, TOKENS_QKIND, "authentication.k8s.io", "", &errs);
		return KC_EINVALID;
	}
	*ret = exp;
	return 0;
}

/* spec.audiences: a new array, the API audience when empty. */
static struct json_object *
audiences(const struct json_object *spec)
{
	struct json_object *a = kc_json_arr_of(spec, "audiences"), *out;

	if (a != NULL && json_object_array_length(a) > 0) {
		for (size_t i = 0; i < json_object_array_length(a); i++)
			if (!json_object_is_type(json_object_array_get_idx(a, i),
			    json_type_string))
				return NULL;
		return kc_json_copy(a);
	}
	if ((out = json_object_new_array()) == NULL)
		return NULL;
	if (kc_json_append(out, json_object_new_string(TOKENS_ISSUER)) < 0) {
		json_object_put(out);
		return NULL;
	}
	return out;
}

/* The reply: the request with metadata, defaults and status filled in. */
static int
reply(struct dc_resp *resp, const struct json_object *in, const struct json_object *sa,
    const struct json_object *auds, int64_t exp_s, time_t now, const char *token)
{
	struct json_object *o = json_object_new_object(), *md, *spec, *st, *ref, *labels;
	const struct json_object *bref = kc_json_get(in, "spec", "boundObjectRef");
	char created[KC_TIME_MAX], expires[KC_TIME_MAX];
	int r;

	(void)kc_time_format(now, created, sizeof(created));
	(void)kc_time_format(now + exp_s, expires, sizeof(expires));
	if (o == NULL || kc_json_set_str(o, "kind", "TokenRequest") < 0 ||
	    kc_json_set_str(o, "apiVersion", TOKENS_API_VERSION) < 0 ||
	    (md = kc_json_ensure_obj(o, "metadata")) == NULL ||
	    kc_json_set_str(md, "name", kc_json_str(sa, "metadata", "name")) < 0 ||
	    kc_json_set_str(md, "namespace", kc_json_str(sa, "metadata", "namespace")) < 0 ||
	    kc_json_set_str(md, "uid", kc_json_str(sa, "metadata", "uid")) < 0 ||
	    kc_json_set_str(md, "creationTimestamp", created) < 0 ||
	    ((labels = kc_json_obj_of(kc_json_obj_of(in, "metadata"), "labels")) != NULL &&
	    kc_json_put(md, "labels", kc_json_copy(labels)) < 0) ||
	    ((labels = kc_json_obj_of(kc_json_obj_of(in, "metadata"), "annotations")) != NULL &&
	    kc_json_put(md, "annotations", kc_json_copy(labels)) < 0) ||
	    (spec = kc_json_ensure_obj(o, "spec")) == NULL ||
	    kc_json_put(spec, "audiences", kc_json_copy(auds)) < 0 ||
	    kc_json_set_int(spec, "expirationSeconds", exp_s) < 0 ||
	    (bref != NULL ? ((ref = kc_json_copy(bref)) == NULL ||
	    kc_json_put(spec, "boundObjectRef", ref) < 0) :
	    kc_json_put_null(spec, "boundObjectRef") < 0) ||
	    (st = kc_json_ensure_obj(o, "status")) == NULL ||
	    kc_json_set_str(st, "token", token) < 0 ||
	    kc_json_set_str(st, "expirationTimestamp", expires) < 0) {
		if (o != NULL)
			json_object_put(o);
		return -ENOMEM;
	}
	r = resp_json(resp, 201, o);
	json_object_put(o);
	return r;
}

static int
token_request(struct dc *dc, const struct dc_rtype *rt, const struct dc_req *req,
    const struct dc_route *route, struct dc_resp *resp)
{
	struct tokens *t = state(dc);
	struct json_object *in = NULL, *spec, *auds = NULL, *ref;
	struct claims c = { 0 };
	const char *ns = route->ns, *name = route->name, *ruid, *sauid;
	char *token = NULL;
	char warn[160];
	int r;

	if (decode_request(req, resp, &in) < 0)
		return 1;
	if (check_meta(in, ns, name, resp) < 0)
		goto done;
	if ((c.sa = coll_get(rt->coll, ns, name)) == NULL) {
		errors_notfound(resp, rt, name);
		goto done;
	}
	ruid = kc_json_str(in, "metadata", "uid");
	sauid = kc_json_str(c.sa, "metadata", "uid");
	if (ruid != NULL && ruid[0] != '\0' && (sauid == NULL || strcmp(ruid, sauid) != 0)) {
		errors_reply(resp, KC_ECONFLICT, "Operation cannot be fulfilled on "
		    "TokenRequest.authentication.k8s.io \"%s\": the UID in the token request "
		    "(%s) does not match the UID of the service account (%s)", name, ruid,
		    sauid != NULL ? sauid : "");
		goto done;
	}
	if ((spec = kc_json_obj_of(in, "spec")) == NULL) {
		if ((spec = kc_json_ensure_obj(in, "spec")) == NULL) {
			errors_internal(resp, -ENOMEM);
			goto done;
		}
	}
	if ((auds = audiences(spec)) == NULL) {
		errors_reply(resp, KC_EBADREQUEST, "TokenRequest in version \"v1\" cannot be "
		    "handled as a TokenRequest: spec.audiences: expected a list of strings");
		goto done;
	}
	c.now = kc_clock_wall();
	if (check_expiration(spec, &c.exp_s, resp) < 0)
		goto done;
	if ((ref = kc_json_obj_of(spec, "boundObjectRef")) != NULL &&
	    bound_object(dc, name, ns, ref, &c, resp) < 0)
		goto done;
	if (t->max_exp > 0 && (uint64_t)c.exp_s > t->max_exp) {
		(void)snprintf(warn, sizeof(warn), "299 - \"requested expiration of %lld "
		    "seconds shortened to %llu seconds\"", (long long)c.exp_s,
		    (unsigned long long)t->max_exp);
		c.exp_s = (int64_t)t->max_exp;
		if ((r = resp_header(resp, "Warning", warn)) < 0) {
			errors_internal(resp, r);
			goto done;
		}
	}
	c.audiences = auds;
	if ((r = make_token(t, &c, &token)) < 0 ||
	    (r = reply(resp, in, c.sa, auds, c.exp_s, c.now, token)) < 0)
		errors_internal(resp, r);
done:
	kc_free_secret(token);
	if (auds != NULL)
		json_object_put(auds);
	json_object_put(in);
	return 1;
}

/* ServiceAccounts' type hook: answers serviceaccounts/token, lets the rest pass. */
static int
sa_request(struct dc *dc, const struct dc_rtype *rt, const struct dc_req *req,
    const struct dc_route *route, struct dc_resp *resp)
{
	if (strcmp(route->subresource, "token") != 0 || state(dc) == NULL)
		return 0;
	return token_request(dc, rt, req, route, resp);
}

const struct dc_type_ops ops_serviceaccount = {
	.request = sa_request,
};

/*
 * OIDC discovery
 */

static int
openid_configuration(struct dc *dc, struct dc_resp *resp)
{
	struct json_object *o = json_object_new_object(), *a;
	char uri[sizeof(dc->server_address) + 32];
	int r = -ENOMEM;

	(void)snprintf(uri, sizeof(uri), "https://%s/openid/v1/jwks", dc->server_address);
	if (o == NULL || kc_json_set_str(o, "issuer", TOKENS_ISSUER) < 0 ||
	    kc_json_set_str(o, "jwks_uri", uri) < 0 ||
	    (a = json_object_new_array()) == NULL || kc_json_put(o, "response_types_supported",
	    a) < 0 || kc_json_append(a, json_object_new_string("id_token")) < 0 ||
	    (a = json_object_new_array()) == NULL || kc_json_put(o, "subject_types_supported",
	    a) < 0 || kc_json_append(a, json_object_new_string("public")) < 0 ||
	    (a = json_object_new_array()) == NULL ||
	    kc_json_put(o, "id_token_signing_alg_values_supported", a) < 0 ||
	    kc_json_append(a, json_object_new_string("RS256")) < 0)
		goto out;
	r = resp_json(resp, 200, o);
out:
	if (o != NULL)
		json_object_put(o);
	return r;
}

static int
jwks(struct tokens *t, struct dc_resp *resp)
{
	struct json_object *o = json_object_new_object(), *keys, *k;
	char *n = key_param(t->key, OSSL_PKEY_PARAM_RSA_N);
	char *e = key_param(t->key, OSSL_PKEY_PARAM_RSA_E);
	int r = -ENOMEM;

	if (o == NULL || n == NULL || e == NULL ||
	    (keys = json_object_new_array()) == NULL || kc_json_put(o, "keys", keys) < 0 ||
	    (k = json_object_new_object()) == NULL || kc_json_append(keys, k) < 0 ||
	    kc_json_set_str(k, "use", "sig") < 0 || kc_json_set_str(k, "kty", "RSA") < 0 ||
	    kc_json_set_str(k, "kid", t->kid) < 0 || kc_json_set_str(k, "alg", "RS256") < 0 ||
	    kc_json_set_str(k, "n", n) < 0 || kc_json_set_str(k, "e", e) < 0)
		goto out;
	if ((r = resp_json(resp, 200, o)) == 0)
		resp->content_type = "application/jwk-set+json";
out:
	kc_free(n);
	kc_free(e);
	if (o != NULL)
		json_object_put(o);
	return r;
}

/*
 * The routes /.well-known/openid-configuration and /openid/v1/jwks (GET,
 * HEAD; RBAC-checked): 0 after answering, DC_DECLINED for other methods.
 */
static int
tokens_serve(struct dc *dc, const struct dc_req *req, struct dc_resp *resp)
{
	struct tokens *t = state(dc);
	bool config;
	struct dc_attrs attrs = {
		.user = &req->user, .verb = "get", .path = req->path,
	};
	char reason[512] = "";
	int r;

	if (t == NULL || req->path == NULL)
		return DC_DECLINED;
	config = strcmp(req->path, "/.well-known/openid-configuration") == 0;
	if (!config && strcmp(req->path, "/openid/v1/jwks") != 0)
		return DC_DECLINED;
	if (req->method != DC_GET && req->method != DC_HEAD)
		return DC_DECLINED;
	if (!auth_authorize(dc, &attrs, reason, sizeof(reason))) {
		errors_reply(resp, KC_EFORBIDDEN, "forbidden: User \"%s\" cannot get path "
		    "\"%s\"%s%s", req->user.name, req->path, reason[0] != '\0' ? ": " : "",
		    reason);
		return 0;
	}
	r = config ? openid_configuration(dc, resp) : jwks(t, resp);
	if (r == 0)
		r = resp_header(resp, "Cache-Control", "public, max-age=3600");
	if (r < 0)
		errors_internal(resp, r);
	return 0;
}

/*
 * The default RBAC of the discovery documents
 */

static int
create_if_missing(struct dc *dc, const char *plural, const char *name, const char *json)
{
	const struct dc_rtype *rt = registry_find(dc, "rbac.authorization.k8s.io", "v1", plural);
	struct json_object *o = NULL;
	int r;

	if (rt == NULL || coll_get(rt->coll, NULL, name) != NULL)
		return 0;
	if ((r = kc_json_parse(json, strlen(json), &o, NULL)) < 0)
		return r;
	r = api_create_object(dc, rt, o, NULL);
	return r == KC_EEXISTS ? 0 : r;
}

#define BOOTSTRAP_META(name)						\
	"\"metadata\":{\"name\":\"" name "\",\"labels\":{"		\
	"\"kubernetes.io/bootstrapping\":\"rbac-defaults\"},"		\
	"\"annotations\":{\"rbac.authorization.kubernetes.io/autoupdate\":\"true\"}}"

static int
bootstrap_rbac(struct dc *dc)
{
	int r;

	if ((r = create_if_missing(dc, "clusterroles", TOKENS_DISCOVERY_ROLE,
	    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRole\","
	    BOOTSTRAP_META(TOKENS_DISCOVERY_ROLE) ",\"rules\":[{\"verbs\":[\"get\"],"
	    "\"nonResourceURLs\":[\"/.well-known/openid-configuration\","
	    "\"/.well-known/openid-configuration/\",\"/openid/v1/jwks\","
	    "\"/openid/v1/jwks/\"]}]}")) < 0)
		return r;
	return create_if_missing(dc, "clusterrolebindings", TOKENS_DISCOVERY_ROLE,
	    "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"ClusterRoleBinding\","
	    BOOTSTRAP_META(TOKENS_DISCOVERY_ROLE) ",\"subjects\":[{\"kind\":\"Group\","
	    "\"apiGroup\":\"rbac.authorization.k8s.io\",\"name\":\"system:serviceaccounts\"}],"
	    "\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\","
	    "\"name\":\"" TOKENS_DISCOVERY_ROLE "\"}}");
}

/*
 * The token controller, for Secrets of type kubernetes.io/service-account-token
 */

/* Sets data[key] to base64('value') unless it holds something already. */
static int
put_data(struct json_object *data, const char *key, const char *value, bool replace)
{
	const char *cur = kc_json_str(data, key);
	char *b64;
	int r;

	if (!replace && cur != NULL && cur[0] != '\0')
		return 0;
	if ((r = kc_base64_encode(value, strlen(value), 0, &b64, NULL)) < 0)
		return r;
	r = kc_json_set_str(data, key, b64);
	kc_free(b64);
	return r;
}

/*
 * One secret, as upstream's tokens controller syncs it: deleted when its
 * service account is gone (or has another uid), else completed with a
 * legacy token, ca.crt, namespace and the uid annotation.
 */
static int
sync_secret(struct tokens *t, const struct json_object *secret)
{
	struct dc *dc = t->dc;
	const struct dc_rtype *srt = registry_find(dc, "", "v1", "secrets");
	const struct dc_rtype *art = registry_find(dc, "", "v1", "serviceaccounts");
	const char *type = kc_json_str(secret, "type");
	const char *ns = kc_json_str(secret, "metadata", "namespace");
	const char *name = kc_json_str(secret, "metadata", "name");
	const char *sa_name = kc_json_str(secret, "metadata", "annotations", ANN_SA_NAME);
	const char *want_uid = kc_json_str(secret, "metadata", "annotations", ANN_SA_UID);
	const struct json_object *sa;
	struct json_object *obj = NULL, *data, *ann;
	const char *uid, *tok;
	char *token = NULL;
	int r;

	if (srt == NULL || art == NULL || type == NULL || strcmp(type, SECRET_TYPE_SA_TOKEN) != 0 ||
	    ns == NULL || name == NULL || sa_name == NULL ||
	    kc_json_get(secret, "metadata", "deletionTimestamp") != NULL)
		return 0;
	sa = coll_get(art->coll, ns, sa_name);
	uid = sa != NULL ? kc_json_str(sa, "metadata", "uid") : NULL;
	if (sa == NULL || uid == NULL || (want_uid != NULL && want_uid[0] != '\0' &&
	    strcmp(want_uid, uid) != 0)) {
		r = api_delete_object(dc, srt, ns, name, -1);
		return r == KC_ENOTFOUND ? 0 : r;
	}
	tok = kc_json_str(secret, "data", "token");
	if (tok != NULL && tok[0] != '\0' && want_uid != NULL &&
	    kc_json_str(secret, "data", "namespace") != NULL &&
	    (t->ca_b64 == NULL || kc_json_str(secret, "data", "ca.crt") != NULL))
		return 0;
	if ((obj = kc_json_copy(secret)) == NULL)
		return -ENOMEM;
	r = -ENOMEM;
	if ((data = kc_json_ensure_obj(obj, "data")) == NULL ||
	    (ann = kc_json_ensure_obj(kc_json_obj_of(obj, "metadata"), "annotations")) == NULL ||
	    kc_json_set_str(ann, ANN_SA_UID, uid) < 0)
		goto out;
	if (tok == NULL || tok[0] == '\0') {
		if ((r = make_legacy_token(t, sa, secret, &token)) < 0 ||
		    (r = put_data(data, "token", token, true)) < 0)
			goto out;
	}
	if ((r = put_data(data, "namespace", ns, false)) < 0)
		goto out;
	if (t->ca_b64 != NULL && kc_json_str(data, "ca.crt") == NULL &&
	    (r = kc_json_set_str(data, "ca.crt", t->ca_b64)) < 0)
		goto out;
	r = storage_update(dc->store, srt->coll, obj, obj_rv(secret), NULL);
	obj = NULL;
	if (r == DC_UNCHANGED || r == KC_ECONFLICT || r == KC_ENOTFOUND)
		r = 0;	/* a newer state comes with its own event */
out:
	if (obj != NULL)
		json_object_put(obj);
	kc_free_secret(token);
	return r;
}

/* A deleted service account takes its token secrets with it. */
static int
sa_deleted(struct tokens *t, const struct json_object *sa)
{
	const struct dc_rtype *srt = registry_find(t->dc, "", "v1", "secrets");
	const char *ns = kc_json_str(sa, "metadata", "namespace");
	const char *name = kc_json_str(sa, "metadata", "name");
	struct json_object **objs = NULL;
	size_t n = 0;
	int r = 0;

	if (srt == NULL || ns == NULL || name == NULL ||
	    (r = coll_list(srt->coll, ns, NULL, &objs, &n)) < 0)
		return srt == NULL || ns == NULL || name == NULL ? 0 : r;
	for (size_t i = 0; i < n; i++) {
		const char *type = kc_json_str(objs[i], "type");
		const char *ref = kc_json_str(objs[i], "metadata", "annotations", ANN_SA_NAME);

		if (type != NULL && strcmp(type, SECRET_TYPE_SA_TOKEN) == 0 && ref != NULL &&
		    strcmp(ref, name) == 0 && (r = sync_secret(t, objs[i])) < 0)
			break;
	}
	objs_free(objs, n);
	return r < 0 ? r : 0;
}

static void
on_event(void *arg, const struct dc_event *ev)
{
	struct tokens *t = arg;
	const struct dc_rtype *srt = registry_find(t->dc, "", "v1", "secrets");
	const struct dc_rtype *art = registry_find(t->dc, "", "v1", "serviceaccounts");
	int r = 0;

	if (srt != NULL && ev->coll == srt->coll && ev->type != DC_EV_DELETED)
		r = sync_secret(t, ev->obj);
	else if (art != NULL && ev->coll == art->coll && ev->type == DC_EV_DELETED)
		r = sa_deleted(t, ev->obj);
	if (r < 0) {
		struct kc_log_ctx lc = { .action = "tokens",
		    .ns = kc_json_str(ev->obj, "metadata", "namespace"),
		    .name = kc_json_str(ev->obj, "metadata", "name") };

		kc_log_warn(&lc, "service-account token secret: %s", kc_strerror(r));
	}
}

/* Secrets restored from the data dir come without events. */
static int
scan_secrets(struct tokens *t)
{
	const struct dc_rtype *srt = registry_find(t->dc, "", "v1", "secrets");
	struct json_object **objs = NULL;
	size_t n = 0;
	int r;

	if (srt == NULL)
		return 0;
	if ((r = coll_list(srt->coll, NULL, NULL, &objs, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && r >= 0; i++)
		r = sync_secret(t, objs[i]);
	objs_free(objs, n);
	return r < 0 ? r : 0;
}

/*
 * Setup
 */

const char *
tokens_kid(const struct dc *dc)
{
	const struct tokens *t = state(dc);

	return t != NULL ? t->kid : NULL;
}

int
tokens_issue(struct dc *dc, const char *ns, const char *name, int64_t exp_s,
    const char *bound_kind, const char *bound_name, char **ret)
{
	struct tokens *t = state(dc);
	const struct dc_rtype *rt = registry_find(dc, "", "v1", "serviceaccounts");
	struct json_object *auds = NULL, *ref = NULL;
	struct claims c = { .now = kc_clock_wall(), .exp_s = exp_s };
	struct dc_resp resp;
	int r;

	if (t == NULL || rt == NULL)
		return -EINVAL;
	if ((c.sa = coll_get(rt->coll, ns, name)) == NULL)
		return KC_ENOTFOUND;
	resp_init(&resp);
	if (bound_kind != NULL) {
		if ((ref = json_object_new_object()) == NULL ||
		    kc_json_set_str(ref, "kind", bound_kind) < 0 ||
		    kc_json_set_str(ref, "apiVersion", "v1") < 0 ||
		    kc_json_set_str(ref, "name", bound_name) < 0) {
			r = -ENOMEM;
			goto out;
		}
		if ((r = bound_object(dc, name, ns, ref, &c, &resp)) < 0)
			goto out;
	}
	if ((auds = audiences(NULL)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	c.audiences = auds;
	r = make_token(t, &c, ret);
out:
	resp_clear(&resp);
	if (ref != NULL)
		json_object_put(ref);
	if (auds != NULL)
		json_object_put(auds);
	return r;
}

int
tokens_init(struct dc *dc, const struct tokens_opts *opts, struct kc_status *st)
{
	struct tokens *t;
	int r;

	if (plugin_state(dc, &tokens_plugin) != NULL)
		return 0;
	if ((t = kc_calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	t->dc = dc;
	t->max_exp = opts != NULL ? opts->max_expiration_s : 0;
	if ((r = key_load(opts != NULL ? opts : &(struct tokens_opts){ 0 }, &t->key, st)) < 0)
		goto fail;
	if ((r = key_id(t->key, t->kid, sizeof(t->kid))) < 0)
		goto fail;
	if (opts != NULL && opts->ca_pem != NULL &&
	    (r = kc_base64_encode(opts->ca_pem, strlen(opts->ca_pem), 0, &t->ca_b64,
	    NULL)) < 0)
		goto fail;
	if ((r = storage_subscribe(dc->store, on_event, t)) < 0)
		goto fail;
	t->subscribed = true;
	plugin_set_state(dc, &tokens_plugin, t);
	if ((!dc->opts.no_bootstrap && (r = bootstrap_rbac(dc)) < 0) ||
	    (r = scan_secrets(t)) < 0) {
		plugin_set_state(dc, &tokens_plugin, NULL);
		goto fail;
	}
	auth_set_verifier(dc->auth, verifier, dc);
	return 0;
fail:
	if (t->subscribed)
		storage_unsubscribe(dc->store, on_event, t);
	EVP_PKEY_free(t->key);
	kc_free(t->ca_b64);
	kc_free(t);
	return r;
}

void
tokens_fini(struct dc *dc)
{
	struct tokens *t = state(dc);

	if (t == NULL)
		return;
	auth_set_verifier(dc->auth, NULL, NULL);
	storage_unsubscribe(dc->store, on_event, t);
	EVP_PKEY_free(t->key);
	kc_free(t->ca_b64);
	kc_free(t);
	plugin_set_state(dc, &tokens_plugin, NULL);
}

static int
tokens_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	return tokens_init(dc, cfg != NULL ? &cfg->tokens : NULL, st);
}

const struct dc_plugin tokens_plugin = {
	.name = "tokens",
	.init = tokens_start,
	.fini = tokens_fini,
	.routes = (const struct dc_plugin_route []){
		{ "/.well-known/openid-configuration", tokens_serve },
		{ "/openid/v1/jwks", tokens_serve },
	},
	.nroutes = 2,
	.types = (const struct dc_plugin_type []){
		{ "", "serviceaccounts", &ops_serviceaccount },
	},
	.ntypes = 1,
};

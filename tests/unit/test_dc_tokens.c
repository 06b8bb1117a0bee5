/*
 * test_dc_tokens.c: devcluster/tokens.c, service-account tokens.
 *
 * The TokenRequest subresource (JSON, YAML and the protobuf bodies
 * kubectl 1.33 sent, captured byte for byte), its defaults and every
 * upstream error in order; the JWT itself (header, claims, signature
 * with the fixture key); authentication with it through api_handle()
 * (the SA user and groups, RBAC's 403 naming it, 401 once the service
 * account or the bound object is gone, expiry and not-before under the
 * fake clock with upstream's minute of leeway, foreign audiences, other
 * keys, tampering); a fuzz of the parser; the OIDC discovery documents
 * and their default RBAC; the signing key kept in the data dir; and an
 * allocation-failure loop over a token request.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <check.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/str.h>

#include "dc_testutil.h"
#include "testutil.h"

#define SA_TARGET	"/api/v1/namespaces/default/serviceaccounts/robot/token"
#define ISSUER		"https://kubernetes.default.svc.cluster.local"
#define START_MS	1000000u	/* fake wall clock: 1700001000 */

static struct dc *dc;
static char *key_pem;

static void
post(const char *target, const char *body, int want)
{
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = target,
	    .body = body }, want, NULL));
}

static void
setup_with(uint64_t max_exp)
{
	struct kc_status st = { 0 };
	size_t len;

	fake_clock_install(START_MS);
	key_pem = tu_fixture("tokens/sa.key", &len);
	dc = dct_new(NULL);
	ck_assert_int_eq(authz_init(dc), 0);
	ck_assert_int_eq(tokens_init(dc, &(struct tokens_opts){ .key_pem = key_pem,
	    .max_expiration_s = max_exp }, &st), 0);
	ck_assert_int_eq(auth_add(dc->auth, "bob-token", "bob", "bob-uid", NULL), 0);
	post("/api/v1/namespaces/default/serviceaccounts",
	    "{\"metadata\":{\"name\":\"robot\"}}", 201);
}

static void
setup(void)
{
	setup_with(0);
}

static void
teardown(void)
{
	tokens_fini(dc);
	authz_fini(dc);
	dc = api_free(dc);
	key_pem = kc_free(key_pem);
	fail_alloc_after(SIZE_MAX);
	fake_clock_uninstall();
}

/* Decodes one base64url segment of a JWT as JSON. */
static struct json_object *
segment(const char *token, int n)
{
	const char *p = token, *end;
	char std[TOKENS_JWT_MAX + 4], *raw = NULL;
	struct json_object *o = NULL;
	size_t len = 0, rawlen;

	for (int i = 0; i < n; i++) {
		p = strchr(p, '.');
		ck_assert_ptr_nonnull(p);
		p++;
	}
	end = strchr(p, '.');
	for (const char *q = p; q != (end != NULL ? end : p + strlen(p)); q++)
		std[len++] = *q == '-' ? '+' : *q == '_' ? '/' : *q;
	while (len % 4 != 0)
		std[len++] = '=';
	std[len] = '\0';
	ck_assert_int_eq(kc_base64_decode(std, strlen(std), 0, &raw, &rawlen, NULL, 0), 0);
	ck_assert_int_eq(kc_json_parse(raw, rawlen, &o, NULL), 0);
	kc_free(raw);
	return o;
}

/* POSTs a TokenRequest body; returns the reply (201) and its token in 'tok'. */
static struct json_object *
request_token(const char *target, const char *body, const char *ctype, size_t len,
    char *tok, size_t toksize)
{
	struct json_object *o = dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = target, .body = body, .body_len = len, .ctype = ctype }, 201, NULL);
	const char *t = kc_json_str(o, "status", "token");

	ck_assert_ptr_nonnull(t);
	ck_assert_uint_lt(kc_strlcpy(tok, t, toksize), toksize);
	return o;
}

static void
new_token(const char *body, char *tok, size_t toksize)
{
	dct_put(request_token(SA_TARGET, body, NULL, 0, tok, toksize));
}

/* The status of GET 'target' with bearer 'token'. */
static int
status_with(const char *token, const char *target)
{
	struct dc_resp resp;
	int status;

	dct_raw(dc, &(struct dct_call){ .method = DC_GET, .target = target, .token = token },
	    &resp, SIZE_MAX);
	status = resp.status;
	resp_clear(&resp);
	return status;
}

/* The user a token authenticates as, through tokens_verify(). */
static int
verify(const char *token, struct dc_user *u)
{
	memset(u, 0, sizeof(*u));
	return tokens_verify(dc, token, NULL, u, NULL, 0);
}

static void
expect_unauthorized(const char *token)
{
	struct dc_user u;

	ck_assert_int_eq(status_with(token, "/api/v1/namespaces/default/configmaps"), 401);
	ck_assert_int_ne(verify(token, &u), 0);
	ck_assert_ptr_null(u.name);
}

/* Hex to bytes (kc_free()). */
static char *
unhex(const char *hex, size_t *ret_len)
{
	size_t n = strlen(hex) / 2;
	char *out = kc_malloc(n + 1);

	ck_assert_ptr_nonnull(out);
	for (size_t i = 0; i < n; i++)
		out[i] = (char)(kc_hex_digit(hex[2 * i]) << 4 | kc_hex_digit(hex[2 * i + 1]));
	out[n] = '\0';
	*ret_len = n;
	return out;
}

/*
 * The TokenRequest subresource
 */

/* The keys of 'o', in order, comma-separated. */
static void
expect_keys(const struct json_object *o, const char *want)
{
	char got[256] = "";

	json_object_object_foreach((struct json_object *)(uintptr_t)o, k, v) {
		(void)v;
		if (got[0] != '\0')
			(void)kc_strlcat(got, ",", sizeof(got));
		(void)kc_strlcat(got, k, sizeof(got));
	}
	ck_assert_str_eq(got, want);
}

static char *
sa_uid(const char *ns, const char *name)
{
	const struct json_object *sa = coll_get(dct_type(dc, "serviceaccounts")->coll, ns, name);
	char *uid;

	ck_assert_ptr_nonnull(sa);
	uid = kc_strdup(kc_json_str(sa, "metadata", "uid"));
	ck_assert_ptr_nonnull(uid);
	return uid;
}

START_TEST(request_defaults)
{
	char tok[TOKENS_JWT_MAX], created[KC_TIME_MAX], expires[KC_TIME_MAX];
	struct json_object *o, *hdr, *cl;
	char *uid = sa_uid("default", "robot");

	o = request_token(SA_TARGET, "{}", NULL, 0, tok, sizeof(tok));
	(void)kc_time_format(kc_clock_wall(), created, sizeof(created));
	(void)kc_time_format(kc_clock_wall() + 3600, expires, sizeof(expires));
	expect_keys(o, "kind,apiVersion,metadata,spec,status");
	ck_assert_str_eq(kc_json_str(o, "kind"), "TokenRequest");
	ck_assert_str_eq(kc_json_str(o, "apiVersion"), "authentication.k8s.io/v1");
	ck_assert_str_eq(kc_json_str(o, "metadata", "name"), "robot");
	ck_assert_str_eq(kc_json_str(o, "metadata", "namespace"), "default");
	ck_assert_str_eq(kc_json_str(o, "metadata", "uid"), uid);
	ck_assert_str_eq(kc_json_str(o, "metadata", "creationTimestamp"), created);
	ck_assert_str_eq(json_object_to_json_string_ext(kc_json_get(o, "spec"),
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
	    "{\"audiences\":[\"" ISSUER "\"],\"expirationSeconds\":3600,"
	    "\"boundObjectRef\":null}");
	ck_assert_str_eq(kc_json_str(o, "status", "expirationTimestamp"), expires);

	hdr = segment(tok, 0);
	expect_keys(hdr, "alg,kid");
	ck_assert_str_eq(kc_json_str(hdr, "alg"), "RS256");
	ck_assert_str_eq(kc_json_str(hdr, "kid"), tokens_kid(dc));
	cl = segment(tok, 1);
	expect_keys(cl, "aud,exp,iat,iss,jti,kubernetes.io,nbf,sub");
	ck_assert_str_eq(kc_json_str(cl, "iss"), ISSUER);
	ck_assert_str_eq(kc_json_str(cl, "sub"), "system:serviceaccount:default:robot");
	ck_assert_int_eq(json_object_array_length(kc_json_get(cl, "aud")), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(
	    kc_json_get(cl, "aud"), 0)), ISSUER);
	ck_assert_int_eq(kc_json_int(cl, 0, "iat"), kc_clock_wall());
	ck_assert_int_eq(kc_json_int(cl, 0, "nbf"), kc_clock_wall());
	ck_assert_int_eq(kc_json_int(cl, 0, "exp"), kc_clock_wall() + 3600);
	ck_assert_uint_eq(strlen(kc_json_str(cl, "jti")), 36);
	expect_keys(kc_json_get(cl, "kubernetes.io"), "namespace,serviceaccount");
	ck_assert_str_eq(kc_json_str(cl, "kubernetes.io", "namespace"), "default");
	ck_assert_str_eq(kc_json_str(cl, "kubernetes.io", "serviceaccount", "name"), "robot");
	ck_assert_str_eq(kc_json_str(cl, "kubernetes.io", "serviceaccount", "uid"), uid);
	json_object_put(hdr);
	json_object_put(cl);
	dct_put(o);
	kc_free(uid);
}
END_TEST

START_TEST(request_fields)
{
	char tok[TOKENS_JWT_MAX], tok2[TOKENS_JWT_MAX];
	struct json_object *o, *cl, *cl2;

	/* YAML, audiences, expiration, labels kept */
	o = request_token(SA_TARGET, "apiVersion: authentication.k8s.io/v1\n"
	    "kind: TokenRequest\nmetadata:\n  name: robot\n  labels: {a: b}\n"
	    "spec:\n  audiences: [x, y]\n  expirationSeconds: 600\n",
	    "application/yaml", 0, tok, sizeof(tok));
	ck_assert_int_eq(kc_json_int(o, 0, "spec", "expirationSeconds"), 600);
	ck_assert_str_eq(kc_json_str(o, "metadata", "labels", "a"), "b");
	cl = segment(tok, 1);
	ck_assert_str_eq(json_object_to_json_string_ext(kc_json_get(cl, "aud"),
	    JSON_C_TO_STRING_PLAIN), "[\"x\",\"y\"]");
	ck_assert_int_eq(kc_json_int(cl, 0, "exp") - kc_json_int(cl, 0, "iat"), 600);
	dct_put(o);
	/* The largest allowed expiration; every token has its own jti. */
	new_token("{\"spec\":{\"expirationSeconds\":4294967296}}", tok2, sizeof(tok2));
	cl2 = segment(tok2, 1);
	ck_assert_int_eq(kc_json_int(cl2, 0, "exp") - kc_json_int(cl2, 0, "iat"),
	    INT64_C(4294967296));
	ck_assert_str_ne(kc_json_str(cl, "jti"), kc_json_str(cl2, "jti"));
	json_object_put(cl);
	json_object_put(cl2);
	/* The body's own name, namespace and uid when they match. */
	{
		char *uid = sa_uid("default", "robot"), body[256];

		(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"robot\","
		    "\"namespace\":\"default\",\"uid\":\"%s\"}}", uid);
		new_token(body, tok, sizeof(tok));
		kc_free(uid);
	}
}
END_TEST

START_TEST(request_errors)
{
	struct dct_call c = { .method = DC_POST, .target = SA_TARGET };
	char *uid = sa_uid("default", "robot"), msg[512];

#define EXPECT(b, code, text) do {						\
		c.body = (b);							\
		dct_expect_message(dct_run(dc, &c, (code), NULL), (text));	\
	} while (0)
	EXPECT("{\"spec\":{\"expirationSeconds\":599}}", 422,
	    "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: "
	    "Invalid value: 599: may not specify a duration less than 10 minutes");
	EXPECT("{\"spec\":{\"expirationSeconds\":4294967297}}", 422,
	    "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: "
	    "Invalid value: 4294967297: may not specify a duration larger than 2^32 "
	    "seconds");
	EXPECT("{\"spec\":{\"expirationSeconds\":-1}}", 422,
	    "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: "
	    "Invalid value: -1: may not specify a duration less than 10 minutes");
	EXPECT("{\"metadata\":{\"name\":\"other\"}}", 422,
	    "TokenRequest.authentication.k8s.io \"robot\" is invalid: metadata.name: "
	    "Invalid value: \"other\": must match the service account name if specified");
	EXPECT("{\"metadata\":{\"namespace\":\"kube-system\"}}", 422,
	    "TokenRequest.authentication.k8s.io \"robot\" is invalid: metadata.namespace: "
	    "Invalid value: \"kube-system\": must match the service account namespace if "
	    "specified");
	(void)snprintf(msg, sizeof(msg), "Operation cannot be fulfilled on "
	    "TokenRequest.authentication.k8s.io \"robot\": the UID in the token request "
	    "(nope) does not match the UID of the service account (%s)", uid);
	EXPECT("{\"metadata\":{\"uid\":\"nope\"}}", 409, msg);
	EXPECT("{\"spec\":{\"boundObjectRef\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
	    "\"name\":\"p\"}}}", 404, "pods \"p\" not found");
	EXPECT("{\"spec\":{\"boundObjectRef\":{\"kind\":\"Secret\",\"apiVersion\":\"v1\","
	    "\"name\":\"s\"}}}", 404, "secrets \"s\" not found");
	EXPECT("{\"spec\":{\"boundObjectRef\":{\"kind\":\"Node\",\"apiVersion\":\"v1\","
	    "\"name\":\"n\"}}}", 404, "nodes \"n\" not found");
	EXPECT("{\"spec\":{\"boundObjectRef\":{\"kind\":\"Deployment\",\"apiVersion\":"
	    "\"apps/v1\",\"name\":\"d\"}}}", 400,
	    "cannot bind token to object of type apps/v1, Kind=Deployment");
	EXPECT("{\"spec\":{\"boundObjectRef\":{\"kind\":\"ConfigMap\",\"apiVersion\":"
	    "\"v1\",\"name\":\"d\"}}}", 400,
	    "cannot bind token to object of type /v1, Kind=ConfigMap");
	EXPECT("{\"kind\":\"ServiceAccount\",\"apiVersion\":\"v1\"}", 400,
	    "ServiceAccount in version \"v1\" cannot be handled as a TokenRequest: no kind "
	    "\"ServiceAccount\" is registered for version \"v1\"");
	EXPECT("{\"spec\":{\"expirationSeconds\":\"1h\"}}", 400,
	    "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: "
	    "spec.expirationSeconds: expected an integer");
	EXPECT("{\"spec\":{\"audiences\":[1]}}", 400,
	    "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: "
	    "spec.audiences: expected a list of strings");
	EXPECT("[]", 400, "couldn't get version/kind; json parse error: the body is not a "
	    "JSON object");
	c.target = "/api/v1/namespaces/default/serviceaccounts/ghost/token";
	EXPECT("{}", 404, "serviceaccounts \"ghost\" not found");
	c.ctype = "text/plain";
	EXPECT("{}", 415, "the body of the request was in an unknown format - accepted "
	    "media types include: application/json, application/yaml, "
	    "application/vnd.kubernetes.protobuf");
#undef EXPECT
	/* Only create is served; an empty body is a 400. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = SA_TARGET },
	    405, NULL));
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = SA_TARGET,
	    .ctype = "application/json" }, 400, NULL));
	kc_free(uid);
}
END_TEST

/* A pod running as 'sa', on 'node' (NULL: unscheduled). */
static void
make_pod(const char *name, const char *sa, const char *node)
{
	char body[512];

	(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\"},\"spec\":{"
	    "%s%s%s\"serviceAccountName\":\"%s\",\"containers\":[{\"name\":\"c\","
	    "\"image\":\"x\"}]}}", name, node != NULL ? "\"nodeName\":\"" : "",
	    node != NULL ? node : "", node != NULL ? "\"," : "", sa);
	post("/api/v1/namespaces/default/pods", body, 201);
}

START_TEST(bound_objects)
{
	char tok[TOKENS_JWT_MAX], body[512];
	struct json_object *o, *cl, *node;
	const char *pod_uid, *node_uid;

	node = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = "/api/v1/nodes",
	    .body = "{\"metadata\":{\"name\":\"n1\"}}" }, 201, NULL);
	node_uid = kc_json_str(node, "metadata", "uid");
	make_pod("p", "robot", "n1");
	make_pod("q", "default", NULL);
	/* A pod running as another service account. */
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = SA_TARGET, .body = "{\"spec\":{\"boundObjectRef\":{\"kind\":\"Pod\","
	    "\"apiVersion\":\"v1\",\"name\":\"q\"}}}" }, 400, NULL),
	    "cannot bind token for serviceaccount \"robot\" to pod running with different "
	    "serviceaccount name.");
	/* The uid must match the one in record. */
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = SA_TARGET, .body = "{\"spec\":{\"boundObjectRef\":{\"kind\":\"Pod\","
	    "\"apiVersion\":\"v1\",\"name\":\"p\",\"uid\":\"old\"}}}" }, 409, NULL),
	    "Operation cannot be fulfilled on Pod \"p\": the UID in the bound object "
	    "reference (old) does not match the UID in record. The object might have been "
	    "deleted and then recreated");
	/* Bound to a pod on a node: pod and node claims. */
	pod_uid = kc_json_str(coll_get(dct_type(dc, "pods")->coll, "default", "p"),
	    "metadata", "uid");
	(void)snprintf(body, sizeof(body), "{\"spec\":{\"boundObjectRef\":{\"kind\":\"Pod\","
	    "\"apiVersion\":\"v1\",\"name\":\"p\",\"uid\":\"%s\"}}}", pod_uid);
	o = request_token(SA_TARGET, body, NULL, 0, tok, sizeof(tok));
	ck_assert_str_eq(kc_json_str(o, "spec", "boundObjectRef", "name"), "p");
	cl = segment(tok, 1);
	expect_keys(kc_json_get(cl, "kubernetes.io"), "namespace,node,pod,serviceaccount");
	ck_assert_str_eq(kc_json_str(cl, "kubernetes.io", "pod", "name"), "p");
	ck_assert_str_eq(kc_json_str(cl, "kubernetes.io", "pod", "uid"), pod_uid);
	ck_assert_str_eq(kc_json_str(cl, "kubernetes.io", "node", "name"), "n1");
	ck_assert_str_eq(kc_json_str(cl, "kubernetes.io", "node", "uid"), node_uid);
	json_object_put(cl);
	dct_put(o);
	ck_assert_int_eq(status_with(tok, "/api"), 200);
	/* Bound to a secret, and to a node. */
	post("/api/v1/namespaces/default/secrets", "{\"metadata\":{\"name\":\"s\"}}", 201);
	new_token("{\"spec\":{\"boundObjectRef\":{\"kind\":\"Secret\",\"apiVersion\":\"v1\","
	    "\"name\":\"s\"}}}", tok, sizeof(tok));
	cl = segment(tok, 1);
	expect_keys(kc_json_get(cl, "kubernetes.io"), "namespace,secret,serviceaccount");
	json_object_put(cl);
	ck_assert_int_eq(status_with(tok, "/api"), 200);
	new_token("{\"spec\":{\"boundObjectRef\":{\"kind\":\"Node\",\"apiVersion\":\"v1\","
	    "\"name\":\"n1\"}}}", tok, sizeof(tok));
	cl = segment(tok, 1);
	expect_keys(kc_json_get(cl, "kubernetes.io"), "namespace,node,serviceaccount");
	json_object_put(cl);
	ck_assert_int_eq(status_with(tok, "/api"), 200);
	dct_put(node);
}
END_TEST

/*
 * kubectl 1.33's protobuf bodies, captured with -v=9: "create token robot"
 * and "create token robot --duration 20m --audience foo
 * --bound-object-kind Pod --bound-object-name p".
 */
#define PB_PLAIN "6b3873000a280a1861757468656e7469636174696f6e2e6b38732e696f2f7631120c" \
	"546f6b656e52657175657374121a0a100a0012001a0022002a0032003800420012001a040a00" \
	"12001a002200"
#define PB_BOUND "6b3873000a280a1861757468656e7469636174696f6e2e6b38732e696f2f7631120c" \
	"546f6b656e5265717565737412320a100a0012001a0022002a0032003800420012180a03666f" \
	"6f1a0e0a03506f64120276311a0170220020b0091a040a0012001a002200"

START_TEST(protobuf_bodies)
{
	const char *pb = "application/vnd.kubernetes.protobuf";
	char tok[TOKENS_JWT_MAX], *body;
	struct json_object *o, *cl;
	size_t len;

	body = unhex(PB_PLAIN, &len);
	o = request_token(SA_TARGET, body, pb, len, tok, sizeof(tok));
	ck_assert_int_eq(kc_json_int(o, 0, "spec", "expirationSeconds"), 3600);
	dct_put(o);
	kc_free(body);
	ck_assert_int_eq(status_with(tok, "/api"), 200);

	make_pod("p", "robot", NULL);
	body = unhex(PB_BOUND, &len);
	o = request_token(SA_TARGET, body, pb, len, tok, sizeof(tok));
	ck_assert_int_eq(kc_json_int(o, 0, "spec", "expirationSeconds"), 1200);
	ck_assert_str_eq(kc_json_str(o, "spec", "boundObjectRef", "kind"), "Pod");
	cl = segment(tok, 1);
	ck_assert_str_eq(json_object_to_json_string_ext(kc_json_get(cl, "aud"),
	    JSON_C_TO_STRING_PLAIN), "[\"foo\"]");
	ck_assert_str_eq(kc_json_str(cl, "kubernetes.io", "pod", "name"), "p");
	json_object_put(cl);
	dct_put(o);
	/* A truncated body is a 400 with the decoder's message. */
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = SA_TARGET,
	    .body = body, .body_len = len - 3, .ctype = pb }, 400, NULL);
	ck_assert_ptr_nonnull(strstr(kc_json_str(o, "message"), "TokenRequest in version "
	    "\"v1\" cannot be handled as a TokenRequest: proto: "));
	dct_put(o);
	kc_free(body);
}
END_TEST

START_TEST(max_expiration)
{
	struct dc_resp resp;
	struct json_object *o = NULL;
	char tok[TOKENS_JWT_MAX];
	struct json_object *cl;

	teardown();
	setup_with(1800);
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = SA_TARGET,
	    .body = "{\"spec\":{\"expirationSeconds\":7200}}" }, 201, &resp);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(kc_json_int(o, 0, "spec", "expirationSeconds"), 1800);
	ck_assert_uint_eq(resp.nheaders, 1);
	ck_assert_str_eq(resp.headers[0].name, "Warning");
	ck_assert_str_eq(resp.headers[0].value, "299 - \"requested expiration of 7200 "
	    "seconds shortened to 1800 seconds\"");
	ck_assert_uint_lt(kc_strlcpy(tok, kc_json_str(o, "status", "token"), sizeof(tok)),
	    sizeof(tok));
	cl = segment(tok, 1);
	ck_assert_int_eq(kc_json_int(cl, 0, "exp") - kc_json_int(cl, 0, "iat"), 1800);
	json_object_put(cl);
	json_object_put(o);
	resp_clear(&resp);
	/* Shorter requests are left alone. */
	new_token("{\"spec\":{\"expirationSeconds\":900}}", tok, sizeof(tok));
}
END_TEST

START_TEST(discovery_lists_subresource)
{
	struct json_object *o = dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = "/api/v1" }, 200, NULL);
	struct json_object *res = kc_json_get(o, "resources");
	bool found = false;

	for (size_t i = 0; i < json_object_array_length(res); i++) {
		struct json_object *r = json_object_array_get_idx(res, i);

		if (strcmp(kc_json_str(r, "name"), "serviceaccounts/token") != 0)
			continue;
		found = true;
		ck_assert_str_eq(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN |
		    JSON_C_TO_STRING_NOSLASHESCAPE), "{\"name\":\"serviceaccounts/token\","
		    "\"singularName\":\"\",\"namespaced\":true,\"group\":"
		    "\"authentication.k8s.io\",\"version\":\"v1\",\"kind\":\"TokenRequest\","
		    "\"verbs\":[\"create\"]}");
	}
	ck_assert(found);
	dct_put(o);
}
END_TEST

/*
 * Authentication
 */

START_TEST(authenticates_as_sa)
{
	char tok[TOKENS_JWT_MAX], *uid = sa_uid("default", "robot");
	struct json_object *o;
	struct dc_user u;

	new_token("{}", tok, sizeof(tok));
	ck_assert_int_eq(verify(tok, &u), 0);
	ck_assert_str_eq(u.name, "system:serviceaccount:default:robot");
	ck_assert_str_eq(u.uid, uid);
	ck_assert_uint_eq(u.ngroups, 3);
	ck_assert_str_eq(u.groups[0], "system:serviceaccounts");
	ck_assert_str_eq(u.groups[1], "system:serviceaccounts:default");
	ck_assert_str_eq(u.groups[2], "system:authenticated");
	user_clear(&u);
	/* kubectl auth whoami */
	o = dct_run(dc, &(struct dct_call){ .method = DC_POST, .token = tok,
	    .target = "/apis/authentication.k8s.io/v1/selfsubjectreviews",
	    .body = "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":"
	    "\"SelfSubjectReview\"}" }, 201, NULL);
	ck_assert_str_eq(kc_json_str(o, "status", "userInfo", "username"),
	    "system:serviceaccount:default:robot");
	ck_assert_str_eq(kc_json_str(o, "status", "userInfo", "uid"), uid);
	ck_assert_str_eq(json_object_to_json_string_ext(kc_json_get(o, "status", "userInfo",
	    "groups"), JSON_C_TO_STRING_PLAIN), "[\"system:serviceaccounts\","
	    "\"system:serviceaccounts:default\",\"system:authenticated\"]");
	dct_put(o);
	/* RBAC: 403 naming the SA user, then allowed by a RoleBinding. */
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_GET, .token = tok,
	    .target = "/api/v1/namespaces/default/pods" }, 403, NULL),
	    "pods is forbidden: User \"system:serviceaccount:default:robot\" cannot list "
	    "resource \"pods\" in API group \"\" in the namespace \"default\"");
	post("/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
	    "{\"metadata\":{\"name\":\"robot-view\"},\"roleRef\":{\"apiGroup\":"
	    "\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\",\"name\":\"view\"},"
	    "\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"robot\",\"namespace\":"
	    "\"default\"}]}", 201);
	ck_assert_int_eq(status_with(tok, "/api/v1/namespaces/default/pods"), 200);
	ck_assert_int_eq(status_with(tok, "/api/v1/namespaces/kube-system/pods"), 403);
	/* Static tokens still work; unknown ones do not. */
	ck_assert_int_eq(status_with("admin-token", "/api/v1/namespaces/default/pods"), 200);
	ck_assert_int_eq(status_with("nope", "/api/v1/namespaces/default/pods"), 401);
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_GET, .token = "a.b.c",
	    .target = "/api" }, 401, NULL), "Unauthorized");
	kc_free(uid);
}
END_TEST

START_TEST(revoked_with_objects)
{
	char tok[TOKENS_JWT_MAX], ptok[TOKENS_JWT_MAX], stok[TOKENS_JWT_MAX];

	new_token("{}", tok, sizeof(tok));
	make_pod("p", "robot", NULL);
	new_token("{\"spec\":{\"boundObjectRef\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
	    "\"name\":\"p\"}}}", ptok, sizeof(ptok));
	post("/api/v1/namespaces/default/secrets", "{\"metadata\":{\"name\":\"s\"}}", 201);
	new_token("{\"spec\":{\"boundObjectRef\":{\"kind\":\"Secret\",\"apiVersion\":\"v1\","
	    "\"name\":\"s\"}}}", stok, sizeof(stok));
	ck_assert_int_eq(status_with(ptok, "/api"), 200);
	ck_assert_int_eq(status_with(stok, "/api"), 200);
	/* The bound objects go: their tokens die, the plain one lives. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_DELETE,
	    .target = "/api/v1/namespaces/default/pods/p?gracePeriodSeconds=0" }, 200, NULL));
	expect_unauthorized(ptok);
	make_pod("p", "robot", NULL);		/* the same name, a new uid */
	expect_unauthorized(ptok);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_DELETE,
	    .target = "/api/v1/namespaces/default/secrets/s" }, 200, NULL));
	expect_unauthorized(stok);
	ck_assert_int_eq(status_with(tok, "/api"), 200);
	/* The service account goes, and comes back with a new uid. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_DELETE,
	    .target = "/api/v1/namespaces/default/serviceaccounts/robot" }, 200, NULL));
	expect_unauthorized(tok);
	post("/api/v1/namespaces/default/serviceaccounts", "{\"metadata\":{\"name\":"
	    "\"robot\"}}", 201);
	expect_unauthorized(tok);
	new_token("{}", tok, sizeof(tok));
	ck_assert_int_eq(status_with(tok, "/api"), 200);
}
END_TEST

START_TEST(deleting_sa_leeway)
{
	char tok[TOKENS_JWT_MAX];

	post("/api/v1/namespaces/default/serviceaccounts", "{\"metadata\":{\"name\":"
	    "\"held\",\"finalizers\":[\"example.com/hold\"]}}", 201);
	dct_put(request_token("/api/v1/namespaces/default/serviceaccounts/held/token",
	    "{}", NULL, 0, tok, sizeof(tok)));
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_DELETE,
	    .target = "/api/v1/namespaces/default/serviceaccounts/held" }, 200, NULL));
	/* Deleting, but for less than a minute: still valid. */
	fake_clock_advance(60000);
	ck_assert_int_eq(status_with(tok, "/api"), 200);
	fake_clock_advance(1000);
	expect_unauthorized(tok);
}
END_TEST

START_TEST(expiry_and_not_before)
{
	char tok[TOKENS_JWT_MAX];

	new_token("{\"spec\":{\"expirationSeconds\":600}}", tok, sizeof(tok));
	/* exp plus a minute of leeway, to the second. */
	fake_clock_advance(660000);
	ck_assert_int_eq(status_with(tok, "/api"), 200);
	fake_clock_advance(1000);
	expect_unauthorized(tok);
	/* A clock a minute behind the issuer still accepts it; more does not. */
	fake_clock_install(START_MS);
	new_token("{}", tok, sizeof(tok));
	fake_clock_install(START_MS - 60000);
	ck_assert_int_eq(status_with(tok, "/api"), 200);
	fake_clock_install(START_MS - 61000);
	expect_unauthorized(tok);
}
END_TEST

START_TEST(audiences_checked)
{
	char tok[TOKENS_JWT_MAX];

	new_token("{\"spec\":{\"audiences\":[\"vault\"]}}", tok, sizeof(tok));
	expect_unauthorized(tok);
	new_token("{\"spec\":{\"audiences\":[\"vault\",\"" ISSUER "\"]}}", tok, sizeof(tok));
	ck_assert_int_eq(status_with(tok, "/api"), 200);
}
END_TEST

/* Standard base64 of data[0..len), which the callers turn into base64url. */
static char *
b64(const void *data, size_t len)
{
	char *s = NULL;

	ck_assert_int_eq(kc_base64_encode(data, len, 0, &s, NULL), 0);
	return s;
}

/* Signs header.claims with the fixture key, as a forger holding it could. */
static char *
forge(const char *header, const char *claims, const char *key_file)
{
	char *h = b64(header, strlen(header));
	char *c = b64(claims, strlen(claims));
	char *pem, *signing, *sig, *out;
	unsigned char raw[1024];
	size_t len, siglen = sizeof(raw);
	EVP_PKEY *k;
	EVP_MD_CTX *ctx;
	BIO *bio;

	ck_assert_ptr_nonnull(h);
	ck_assert_ptr_nonnull(c);
	for (char *p = h; *p != '\0'; p++)
		*p = *p == '+' ? '-' : *p == '/' ? '_' : *p == '=' ? '\0' : *p;
	for (char *p = c; *p != '\0'; p++)
		*p = *p == '+' ? '-' : *p == '/' ? '_' : *p == '=' ? '\0' : *p;
	signing = kc_asprintf("%s.%s", h, c);
	pem = tu_fixture(key_file, &len);
	bio = BIO_new_mem_buf(pem, (int)len);
	k = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	ck_assert_ptr_nonnull(k);
	ctx = EVP_MD_CTX_new();
	ck_assert_int_eq(EVP_DigestSignInit(ctx, NULL, EVP_sha256(), NULL, k), 1);
	ck_assert_int_eq(EVP_DigestSign(ctx, raw, &siglen, (unsigned char *)signing,
	    strlen(signing)), 1);
	sig = b64(raw, siglen);
	for (char *p = sig; *p != '\0'; p++)
		*p = *p == '+' ? '-' : *p == '/' ? '_' : *p == '=' ? '\0' : *p;
	out = kc_asprintf("%s.%s", signing, sig);
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(k);
	BIO_free(bio);
	kc_free(pem);
	kc_free(h);
	kc_free(c);
	kc_free(sig);
	kc_free(signing);
	return out;
}

/* Claims for robot with 'extra' spliced in and 'k8s' (NULL: the real one) as kubernetes.io. */
static char *
claims(const char *extra, const char *k8s)
{
	char *uid = sa_uid("default", "robot"), *out;

	if (k8s != NULL)
		out = kc_asprintf("{\"iss\":\"" ISSUER "\",\"kubernetes.io\":%s%s}", k8s,
		    extra);
	else
		out = kc_asprintf("{\"iss\":\"" ISSUER "\",\"kubernetes.io\":{\"namespace\":"
		    "\"default\",\"serviceaccount\":{\"name\":\"robot\",\"uid\":\"%s\"}}%s}",
		    uid, extra);
	ck_assert_ptr_nonnull(out);
	kc_free(uid);
	return out;
}

START_TEST(forged_and_odd_claims)
{
	static const struct {
		const char	*header;
		const char	*extra;
		const char	*k8s;
		bool		 ok;
	} cases[] = {
		/* The minimum upstream accepts: no exp, nbf, iat or aud. */
		{ "{\"alg\":\"RS256\"}", "", NULL, true },
		{ "{\"alg\":\"RS256\",\"kid\":\"other\"}", "", NULL, false },
		{ "{\"alg\":\"HS256\"}", "", NULL, false },
		{ "{\"alg\":\"none\"}", "", NULL, false },
		{ "{}", "", NULL, false },
		{ "{\"alg\":\"RS256\"}", ",\"exp\":\"soon\"", NULL, false },
		{ "{\"alg\":\"RS256\"}", ",\"exp\":1e300", NULL, false },
		{ "{\"alg\":\"RS256\"}", ",\"exp\":1700001000.5", NULL, true },
		{ "{\"alg\":\"RS256\"}", ",\"nbf\":[]", NULL, false },
		{ "{\"alg\":\"RS256\"}", ",\"iat\":1800000000", NULL, false },
		{ "{\"alg\":\"RS256\"}", ",\"aud\":\"" ISSUER "\"", NULL, true },
		{ "{\"alg\":\"RS256\"}", ",\"aud\":\"other\"", NULL, false },
		{ "{\"alg\":\"RS256\"}", ",\"aud\":[]", NULL, true },
		{ "{\"alg\":\"RS256\"}", ",\"aud\":[1,{}]", NULL, false },
		{ "{\"alg\":\"RS256\"}", ",\"aud\":7", NULL, false },
		{ "{\"alg\":\"RS256\"}", "", "\"x\"", false },
		{ "{\"alg\":\"RS256\"}", "", "{}", false },
		{ "{\"alg\":\"RS256\"}", "", "{\"namespace\":\"default\",\"serviceaccount\":"
		    "{\"name\":\"robot\",\"uid\":\"wrong\"}}", false },
		{ "{\"alg\":\"RS256\"}", "", "{\"namespace\":7,\"serviceaccount\":[]}", false },
		{ "{\"alg\":\"RS256\"}", "", "{\"namespace\":\"default\",\"serviceaccount\":"
		    "{\"name\":\"robot\"}}", false },
	};
	struct dc_user u;

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		char *cl = claims(cases[i].extra, cases[i].k8s);
		char *tok = forge(cases[i].header, cl, "tokens/sa.key");
		int r = verify(tok, &u);

		ck_assert_msg((r == 0) == cases[i].ok, "case %zu (%s %s): %d", i,
		    cases[i].header, cl, r);
		if (r == 0)
			ck_assert_str_eq(u.name, "system:serviceaccount:default:robot");
		user_clear(&u);
		ck_assert_int_eq(status_with(tok, "/api"), cases[i].ok ? 200 : 401);
		kc_free(tok);
		kc_free(cl);
	}
	/* Our claims signed with another key. */
	{
		char *cl = claims("", NULL);
		char *tok = forge("{\"alg\":\"RS256\"}", cl, "tokens/other.key");

		expect_unauthorized(tok);
		kc_free(tok);
		kc_free(cl);
	}
	/* Another issuer's token is not ours at all. */
	{
		char *tok = forge("{\"alg\":\"RS256\"}", "{\"iss\":\"https://example.com\"}",
		    "tokens/sa.key");

		ck_assert_int_eq(verify(tok, &u), DC_DECLINED);
		ck_assert_int_eq(status_with(tok, "/api"), 401);
		kc_free(tok);
	}
}
END_TEST

START_TEST(tampered)
{
	char tok[TOKENS_JWT_MAX], bad[TOKENS_JWT_MAX];
	char *dot1, *dot2;

	new_token("{}", tok, sizeof(tok));
	dot1 = strchr(tok, '.');
	dot2 = strchr(dot1 + 1, '.');
	/* Flip one character in each segment. */
	for (size_t at = 0; at < strlen(tok); at += 37) {
		if (tok[at] == '.')
			continue;
		(void)kc_strlcpy(bad, tok, sizeof(bad));
		bad[at] = bad[at] == 'A' ? 'B' : 'A';
		expect_unauthorized(bad);
	}
	/* Swap in another token's payload. */
	{
		char other[TOKENS_JWT_MAX];
		const char *o1, *o2;

		new_token("{\"spec\":{\"expirationSeconds\":4294967296}}", other,
		    sizeof(other));
		o1 = strchr(other, '.');
		o2 = strchr(o1 + 1, '.');
		(void)snprintf(bad, sizeof(bad), "%.*s%.*s%s", (int)(dot1 - tok + 1), tok,
		    (int)(o2 - o1 - 1), o1 + 1, dot2);
		expect_unauthorized(bad);
	}
}
END_TEST


START_TEST(fuzz_parser)
{
	static const char alphabet[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ {}\"";
	char tok[TOKENS_JWT_MAX], buf[TOKENS_JWT_MAX + 16], *big;
	static const char *const odd[] = {
		"", ".", "..", "...", "a.b", "a.b.c.d", "..sig", "eyJ.eyJ.",
		"e30.e30.e30", "bnVsbA.bnVsbA.AA", "W10.W10.AA", "IngI.IngI.AA",
		"eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOjF9.AA", "=====.=====.====",
		"eyJhbGciOiJSUzI1NiJ9.e.AA", "eyJhbGciOiJSUzI1NiJ9.eyJ.AA",
		"\xff\xfe.\x01.\x80", "a\nb.c.d",
	};
	struct dc_user u;

	new_token("{}", tok, sizeof(tok));
	/* Every prefix of a valid token, and every suffix. */
	for (size_t n = 0; n < strlen(tok); n++) {
		(void)snprintf(buf, sizeof(buf), "%.*s", (int)n, tok);
		ck_assert_int_ne(verify(buf, &u), 0);
		ck_assert_int_ne(verify(tok + n + 1, &u), 0);
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(odd); i++) {
		ck_assert_int_ne(verify(odd[i], &u), 0);
		if (odd[i][0] != '\0' && strchr(odd[i], '\n') == NULL)
			ck_assert_int_eq(status_with(odd[i], "/api"), 401);
	}
	/* Random tokens over the base64url alphabet and its neighbours. */
	for (int i = 0; i < 2000; i++) {
		size_t n = 1 + tu_rand(300);

		for (size_t j = 0; j < n; j++)
			buf[j] = alphabet[tu_rand(sizeof(alphabet) - 1)];
		buf[n] = '\0';
		ck_assert_int_ne(verify(buf, &u), 0);
	}
	/* Huge: past TOKENS_JWT_MAX, and a JSON nesting bomb that fits. */
	big = kc_malloc(200000);
	ck_assert_ptr_nonnull(big);
	memset(big, 'A', 199999);
	big[199999] = '\0';
	big[100] = '.';
	big[200] = '.';
	ck_assert_int_eq(verify(big, &u), DC_DECLINED);
	ck_assert_int_eq(status_with(big, "/api"), 401);
	{
		char nest[4000], *hdr;
		size_t n = 0;

		for (; n < 1500; n++)
			nest[n] = '[';
		nest[n] = '\0';
		hdr = b64(nest, n);
		(void)snprintf(big, 200000, "%s.%s.AA", hdr, hdr);
		for (char *p = big; *p != '\0'; p++)
			*p = *p == '+' ? '-' : *p == '/' ? '_' : *p == '=' ? 'A' : *p;
		ck_assert_int_ne(verify(big, &u), 0);
		kc_free(hdr);
	}
	kc_free(big);
}
END_TEST

/*
 * OIDC discovery
 */

START_TEST(oidc_documents)
{
	struct dc_resp resp;
	struct json_object *o = NULL, *k;
	char tok[TOKENS_JWT_MAX];

	o = dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = "/.well-known/openid-configuration" }, 200, &resp);
	ck_assert_str_eq(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE), "{\"issuer\":\"" ISSUER "\",\"jwks_uri\":"
	    "\"https://127.0.0.1:6443/openid/v1/jwks\",\"response_types_supported\":"
	    "[\"id_token\"],\"subject_types_supported\":[\"public\"],"
	    "\"id_token_signing_alg_values_supported\":[\"RS256\"]}");
	ck_assert_str_eq(resp.content_type, "application/json");
	ck_assert_uint_eq(resp.nheaders, 1);
	ck_assert_str_eq(resp.headers[0].name, "Cache-Control");
	ck_assert_str_eq(resp.headers[0].value, "public, max-age=3600");
	resp_clear(&resp);
	dct_put(o);
	o = NULL;

	dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = "/openid/v1/jwks" },
	    200, &resp);
	ck_assert_str_eq(resp.content_type, "application/jwk-set+json");
	ck_assert_int_eq(kc_json_parse(resp.body.data, resp.body.len, &o, NULL), 0);
	ck_assert_int_eq(json_object_array_length(kc_json_get(o, "keys")), 1);
	k = json_object_array_get_idx(kc_json_get(o, "keys"), 0);
	expect_keys(k, "use,kty,kid,alg,n,e");
	ck_assert_str_eq(kc_json_str(k, "use"), "sig");
	ck_assert_str_eq(kc_json_str(k, "kty"), "RSA");
	ck_assert_str_eq(kc_json_str(k, "alg"), "RS256");
	ck_assert_str_eq(kc_json_str(k, "kid"), tokens_kid(dc));
	ck_assert_str_eq(kc_json_str(k, "e"), "AQAB");
	ck_assert_uint_eq(strlen(kc_json_str(k, "n")), 342);	/* 256 bytes, unpadded */
	resp_clear(&resp);
	json_object_put(o);

	/* The default binding lets service accounts read them; others get 403. */
	new_token("{}", tok, sizeof(tok));
	ck_assert_int_eq(status_with(tok, "/.well-known/openid-configuration"), 200);
	ck_assert_int_eq(status_with(tok, "/openid/v1/jwks"), 200);
	dct_expect_message(dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = "/openid/v1/jwks", .token = "bob-token" }, 403, NULL),
	    "forbidden: User \"bob\" cannot get path \"/openid/v1/jwks\"");
	ck_assert_int_eq(status_with("admin-token", "/openid/v1/jwks/"), 404);
	ck_assert_int_eq(status_with("admin-token", "/openid/v1"), 404);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST,
	    .target = "/openid/v1/jwks", .body = "{}" }, 404, NULL));
	/* The bootstrap objects */
	ck_assert_ptr_nonnull(coll_get(registry_find(dc, "rbac.authorization.k8s.io", "v1",
	    "clusterroles")->coll, NULL, "system:service-account-issuer-discovery"));
	ck_assert_str_eq(kc_json_str(coll_get(registry_find(dc, "rbac.authorization.k8s.io",
	    "v1", "clusterrolebindings")->coll, NULL,
	    "system:service-account-issuer-discovery"), "metadata", "labels",
	    "kubernetes.io/bootstrapping"), "rbac-defaults");
}
END_TEST

/*
 * The signing key
 */

START_TEST(key_in_data_dir)
{
	struct kc_status st = { 0 };
	struct stat sb;
	char *dir = tu_tmpdir(), *path, *pem, kid[64], tok[TOKENS_JWT_MAX];
	size_t len;

	tokens_fini(dc);
	ck_assert_int_eq(tokens_init(dc, &(struct tokens_opts){ .data_dir = dir }, &st), 0);
	path = kc_asprintf("%s/sa.key", dir);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0600);
	ck_assert_int_eq(kc_read_file(path, 1 << 16, &pem, &len), 0);
	ck_assert_ptr_nonnull(strstr(pem, "-----BEGIN RSA PRIVATE KEY-----"));
	kc_free(pem);
	(void)kc_strlcpy(kid, tokens_kid(dc), sizeof(kid));
	ck_assert_str_ne(kid, "");
	new_token("{}", tok, sizeof(tok));
	/* A restart reads the same key: same kid, old tokens still good. */
	tokens_fini(dc);
	expect_unauthorized(tok);
	ck_assert_int_eq(tokens_init(dc, &(struct tokens_opts){ .data_dir = dir }, &st), 0);
	ck_assert_str_eq(tokens_kid(dc), kid);
	ck_assert_int_eq(status_with(tok, "/api"), 200);
	tokens_fini(dc);
	/* A different key makes them invalid. */
	ck_assert_int_eq(tokens_init(dc, &(struct tokens_opts){ .key_pem = key_pem }, &st), 0);
	ck_assert_str_ne(tokens_kid(dc), kid);
	expect_unauthorized(tok);
	tokens_fini(dc);
	/* Unusable keys are configuration errors. */
	kc_free(tu_write(dir, "sa.key", "not a key\n"));
	ck_assert_int_eq(tokens_init(dc, &(struct tokens_opts){ .data_dir = dir }, &st),
	    KC_ECONFIG);
	ck_assert_ptr_nonnull(strstr(st.message, "not a PEM private key"));
	{
		static const char *const bad[] = { "tokens/rsa1024.key", "tokens/ec.key" };

		for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
			char *k = tu_fixture(bad[i], &len);

			memset(&st, 0, sizeof(st));
			ck_assert_int_eq(tokens_init(dc, &(struct tokens_opts){ .key_pem = k },
			    &st), KC_ECONFIG);
			ck_assert_ptr_nonnull(strstr(st.message, "must be an RSA key of at "
			    "least 2048 bits"));
			ck_assert_ptr_null(plugin_state(dc, &tokens_plugin));
			kc_free(k);
		}
	}
	ck_assert_int_eq(tokens_init(dc, &(struct tokens_opts){ .key_pem = key_pem }, &st), 0);
	kc_free(path);
	tu_tmpdir_remove(dir);
}
END_TEST

START_TEST(issue_helper)
{
	struct dc_user u;
	char *tok = NULL;

	ck_assert_int_eq(tokens_issue(dc, "default", "ghost", 600, NULL, NULL, &tok),
	    KC_ENOTFOUND);
	ck_assert_int_eq(tokens_issue(dc, "default", "robot", 600, "Pod", "nope", &tok),
	    KC_ENOTFOUND);
	ck_assert_ptr_null(tok);
	ck_assert_int_eq(tokens_issue(dc, "default", "robot", 600, NULL, NULL, &tok), 0);
	ck_assert_int_eq(verify(tok, &u), 0);
	user_clear(&u);
	kc_free(tok);
	tokens_fini(dc);
	ck_assert_int_eq(tokens_issue(dc, "default", "robot", 600, NULL, NULL, &tok), -EINVAL);
	ck_assert_ptr_null(tokens_kid(dc));
	ck_assert_int_eq(tokens_verify(dc, "a.b.c", NULL, &u, NULL, 0), DC_DECLINED);
	/* Without tokens.c the subresource and the documents are not served. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_POST, .target = SA_TARGET,
	    .body = "{}" }, 405, NULL));
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_GET,
	    .target = "/openid/v1/jwks" }, 404, NULL));
	tokens_fini(dc);
}
END_TEST

static struct json_object *
get_secret(const char *name, int want)
{
	char target[256];

	(void)snprintf(target, sizeof(target), "/api/v1/namespaces/default/secrets/%s", name);
	return dct_run(dc, &(struct dct_call){ .method = DC_GET, .target = target }, want,
	    NULL);
}

static void
sa_token_secret(const char *name, const char *sa)
{
	char body[512];

	(void)snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\",\"annotations\":"
	    "{\"kubernetes.io/service-account.name\":\"%s\"}},\"type\":"
	    "\"kubernetes.io/service-account-token\"}", name, sa);
	post("/api/v1/namespaces/default/secrets", body, 201);
}

/* The token a secret holds (kc_free()). */
static char *
secret_token(const struct json_object *secret)
{
	char *raw = NULL;
	size_t len;

	ck_assert_int_eq(kc_base64_decode(kc_json_str(secret, "data", "token"),
	    strlen(kc_json_str(secret, "data", "token")), 0, &raw, &len, NULL, 0), 0);
	return raw;
}

START_TEST(legacy_secret_tokens)
{
	struct json_object *o, *cl;
	struct dc_user u;
	char *uid = sa_uid("default", "robot"), *tok, *tok2;
	struct kc_status st = { 0 };

	sa_token_secret("robot-token", "robot");
	o = get_secret("robot-token", 200);
	ck_assert_str_eq(kc_json_str(o, "metadata", "annotations",
	    "kubernetes.io/service-account.uid"), uid);
	ck_assert_str_eq(kc_json_str(o, "data", "namespace"), "ZGVmYXVsdA==");
	ck_assert_ptr_null(kc_json_get(o, "data", "ca.crt"));
	tok = secret_token(o);
	cl = segment(tok, 1);
	expect_keys(cl, "iss,kubernetes.io/serviceaccount/namespace,"
	    "kubernetes.io/serviceaccount/secret.name,"
	    "kubernetes.io/serviceaccount/service-account.name,"
	    "kubernetes.io/serviceaccount/service-account.uid,sub");
	ck_assert_str_eq(kc_json_str(cl, "iss"), "kubernetes/serviceaccount");
	ck_assert_str_eq(kc_json_str(cl, "kubernetes.io/serviceaccount/secret.name"),
	    "robot-token");
	json_object_put(cl);
	dct_put(o);
	ck_assert_int_eq(verify(tok, &u), 0);
	ck_assert_str_eq(u.name, "system:serviceaccount:default:robot");
	ck_assert_str_eq(u.uid, uid);
	user_clear(&u);
	/* Never expires. */
	fake_clock_advance(UINT64_C(400) * 24 * 3600 * 1000);
	ck_assert_int_eq(status_with(tok, "/api"), 200);
	/* A token the secret no longer holds is refused. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_PATCH,
	    .target = "/api/v1/namespaces/default/secrets/robot-token",
	    .ctype = "application/merge-patch+json",
	    .body = "{\"data\":{\"token\":\"b3RoZXI=\"}}" }, 200, NULL));
	expect_unauthorized(tok);
	/* A second secret; deleting it revokes its token. */
	sa_token_secret("robot-token-2", "robot");
	o = get_secret("robot-token-2", 200);
	tok2 = secret_token(o);
	dct_put(o);
	ck_assert_int_eq(status_with(tok2, "/api"), 200);
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_DELETE,
	    .target = "/api/v1/namespaces/default/secrets/robot-token-2" }, 200, NULL));
	expect_unauthorized(tok2);
	kc_free(tok2);
	/* A secret for a service account that does not exist is deleted. */
	sa_token_secret("ghost-token", "ghost");
	dct_put(get_secret("ghost-token", 404));
	/* Secrets written while the controller was away are completed at start, with ca.crt. */
	tokens_fini(dc);
	sa_token_secret("later-token", "robot");
	ck_assert_int_eq(tokens_init(dc, &(struct tokens_opts){ .key_pem = key_pem,
	    .ca_pem = "PEM" }, &st), 0);
	o = get_secret("later-token", 200);
	ck_assert_str_eq(kc_json_str(o, "data", "ca.crt"), "UEVN");
	tok2 = secret_token(o);
	dct_put(o);
	ck_assert_int_eq(status_with(tok2, "/api"), 200);
	/* The service account goes, and its token secrets with it. */
	dct_put(dct_run(dc, &(struct dct_call){ .method = DC_DELETE,
	    .target = "/api/v1/namespaces/default/serviceaccounts/robot" }, 200, NULL));
	dct_put(get_secret("later-token", 404));
	dct_put(get_secret("robot-token", 404));
	expect_unauthorized(tok2);
	kc_free(tok2);
	kc_free(tok);
	kc_free(uid);
}
END_TEST

START_TEST(alloc_failure)
{
	size_t budget;

	for (budget = 0;; budget++) {
		struct dc_resp resp;
		int status;

		dct_raw(dc, &(struct dct_call){ .method = DC_POST, .target = SA_TARGET,
		    .body = "{\"spec\":{\"audiences\":[\"a\",\"" ISSUER "\"],"
		    "\"expirationSeconds\":700}}" }, &resp, budget);
		status = resp.status;
		if (status == 201) {
			struct json_object *o = NULL;
			struct dc_user u;

			ck_assert_int_eq(kc_json_parse(resp.body.data, resp.body.len, &o, NULL), 0);
			for (size_t vb = 0;; vb++) {
				int r;

				memset(&u, 0, sizeof(u));
				fail_alloc_after(vb);
				r = tokens_verify(dc, kc_json_str(o, "status", "token"), NULL, &u, NULL, 0);
				fail_alloc_after(SIZE_MAX);
				if (r == 0) {
					user_clear(&u);
					break;
				}
				ck_assert_int_eq(r, -ENOMEM);
				ck_assert_ptr_null(u.name);
			}
			json_object_put(o);
			resp_clear(&resp);
			break;
		}
		ck_assert_msg(status == 500, "budget %zu: status %d", budget, status);
		resp_clear(&resp);
	}
	ck_assert_uint_gt(budget, 10);
}
END_TEST

Suite *
dc_tokens_suite(void)
{
	Suite *s = suite_create("dc_tokens");
	TCase *tr = tcase_create("request");
	TCase *ta = tcase_create("authenticate");
	TCase *to = tcase_create("oidc");
	TCase *tk = tcase_create("key");

	tcase_add_checked_fixture(tr, setup, teardown);
	tcase_add_test(tr, request_defaults);
	tcase_add_test(tr, request_fields);
	tcase_add_test(tr, request_errors);
	tcase_add_test(tr, bound_objects);
	tcase_add_test(tr, protobuf_bodies);
	tcase_add_test(tr, max_expiration);
	tcase_add_test(tr, discovery_lists_subresource);
	suite_add_tcase(s, tr);

	tcase_add_checked_fixture(ta, setup, teardown);
	tcase_set_timeout(ta, 60);
	tcase_add_test(ta, authenticates_as_sa);
	tcase_add_test(ta, revoked_with_objects);
	tcase_add_test(ta, deleting_sa_leeway);
	tcase_add_test(ta, expiry_and_not_before);
	tcase_add_test(ta, audiences_checked);
	tcase_add_test(ta, forged_and_odd_claims);
	tcase_add_test(ta, tampered);
	tcase_add_test(ta, fuzz_parser);
	tcase_add_test(ta, legacy_secret_tokens);
	suite_add_tcase(s, ta);

	tcase_add_checked_fixture(to, setup, teardown);
	tcase_add_test(to, oidc_documents);
	suite_add_tcase(s, to);

	tcase_add_checked_fixture(tk, setup, teardown);
	tcase_set_timeout(tk, 60);
	tcase_add_test(tk, key_in_data_dir);
	tcase_add_test(tk, issue_helper);
	tcase_add_test(tk, alloc_failure);
	suite_add_tcase(s, tk);
	return s;
}

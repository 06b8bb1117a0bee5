/*
 * test_ctl_certs.c: controller/certs.c, self-managed webhook certificates.
 *
 * certs_plan() is driven through simulated time (its 'now', which the
 * certificates it makes count from): first issue, stability, leaf renewal
 * at two thirds of its life, CA rotation with the old CA kept in the
 * bundle until it expires, a broken Secret started afresh. certs_sync()
 * runs against the fake transport: a create lost to another replica, an
 * update lost to another replica (the loser re-reads and writes nothing),
 * and the CRD caBundle patches.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <check.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/cert.h>
#include <kc/client.h>
#include <kc/json.h>
#include <kc/kubeconfig.h>
#include <kc/str.h>

#include "../../controller/certs.h"
#include "../fakes/fake_transport.h"
#include "testutil.h"

#define NS	"trainyard-system"
#define H	3600

static const char *const crds[] = {
	"runs.trainyard.dev", "resourceprofiles.trainyard.dev", NULL,
};

static size_t
count_certs(const char *pem)
{
	size_t n = 0;

	for (const char *p = pem; (p = strstr(p, "BEGIN CERTIFICATE")) != NULL; p++)
		n++;
	return n;
}

/* The first certificate of PEM text. */
static X509 *
x509_of(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x;

	ck_assert_ptr_nonnull(b);
	x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	ck_assert_ptr_nonnull(x);
	return x;
}

/* Whether the leaf of 'res' is signed by the bundle's first CA. */
static bool
signed_by_newest(const struct certs_result *res)
{
	X509 *leaf = x509_of(res->cert_pem), *ca = x509_of(res->ca_pem);
	bool ok = X509_verify(leaf, X509_get0_pubkey(ca)) == 1;

	X509_free(leaf);
	X509_free(ca);
	return ok;
}

/* One plan at 'now' over '*secret', which becomes what it wrote, if anything. */
static void
plan(const struct certs_opts *o, struct json_object **secret, time_t now,
    struct certs_result *res, bool *wrote)
{
	struct json_object *out = NULL;
	struct kc_status st = { 0 };
	int r;

	r = certs_plan(o, *secret, now, &out, res, &st);
	ck_assert_msg(r == 0, "plan: %s", st.message);
	*wrote = out != NULL;
	if (out != NULL) {
		if (*secret != NULL)
			json_object_put(*secret);
		*secret = out;
	}
}

START_TEST(test_first_issue_and_stable)
{
	const struct certs_opts o = { .ns = NS, .crds = crds };
	struct json_object *secret = NULL;
	struct certs_result a = { 0 }, b = { 0 };
	_cleanup_(kc_cert_info_freep) struct kc_cert_info *info = NULL;
	struct kc_status st = { 0 };
	time_t now = time(NULL);
	bool wrote;

	plan(&o, &secret, now, &a, &wrote);
	ck_assert(wrote);
	ck_assert(a.rotated_ca && a.issued_leaf);
	ck_assert_str_eq(kc_json_str(secret, "kind"), "Secret");
	ck_assert_str_eq(kc_json_str(secret, "metadata", "name"), CERTS_SECRET_DEFAULT);
	ck_assert_str_eq(kc_json_str(secret, "metadata", "namespace"), NS);
	ck_assert_ptr_nonnull(kc_json_str(secret, "data", "ca.key"));
	ck_assert_uint_eq(count_certs(a.ca_pem), 1);
	ck_assert_int_eq(kc_cert_verify(a.cert_pem, a.cert_len, a.ca_pem, a.ca_len, &st), 0);
	ck_assert_int_eq(kc_cert_info_read(a.cert_pem, a.cert_len, &info, &st), 0);
	ck_assert_str_eq(info->dns[0], "trainyard-webhook.trainyard-system.svc");
	ck_assert_str_eq(info->dns[1], "trainyard-webhook.trainyard-system.svc.cluster.local");
	ck_assert(!info->is_ca);
	/* Leaf: 7 days from an hour ago; renewed at two thirds. */
	ck_assert_int_eq(a.leaf_not_after, now + 7 * 86400);
	ck_assert_int_eq(a.renew_at, now - H + (7 * 86400 + H) / 3 * 2);

	/* Read back at once: nothing to write, the same certificate. */
	plan(&o, &secret, now + 60, &b, &wrote);
	ck_assert(!wrote);
	ck_assert(!b.rotated_ca && !b.issued_leaf);
	ck_assert_str_eq(a.cert_pem, b.cert_pem);
	ck_assert_str_eq(a.ca_pem, b.ca_pem);
	certs_result_release(&a);
	certs_result_release(&b);
	json_object_put(secret);
}
END_TEST

START_TEST(test_leaf_renewed_at_two_thirds)
{
	const struct certs_opts o = { .ns = NS, .leaf_days = 3, .ca_days = 30 };
	struct json_object *secret = NULL;
	struct certs_result r0 = { 0 }, r1 = { 0 }, r2 = { 0 };
	time_t t0 = time(NULL), mark;
	bool wrote;

	plan(&o, &secret, t0, &r0, &wrote);
	mark = t0 - H + (3 * 86400 + H) / 3 * 2;
	ck_assert_int_eq(r0.renew_at, mark);
	plan(&o, &secret, mark - 1, &r1, &wrote);
	ck_assert(!wrote);
	ck_assert_str_eq(r1.cert_pem, r0.cert_pem);
	plan(&o, &secret, mark, &r2, &wrote);
	ck_assert(wrote);
	ck_assert(r2.issued_leaf && !r2.rotated_ca);
	ck_assert_str_ne(r2.cert_pem, r0.cert_pem);
	ck_assert_str_eq(r2.ca_pem, r0.ca_pem);		/* same CA */
	ck_assert_int_eq(r2.leaf_not_after, mark + 3 * 86400);
	ck_assert(signed_by_newest(&r2));
	certs_result_release(&r0);
	certs_result_release(&r1);
	certs_result_release(&r2);
	json_object_put(secret);
}
END_TEST

/*
 * CA of 3 days, leaf of 2: the CA rotates at 2/3 (t0 + 47h40m) while the
 * leaf issued at t0 + 32h is still fresh: it stays, signed by the old CA,
 * and the bundle holds both CAs; the next leaf comes from the new CA; the
 * old CA leaves the bundle once it expired.
 */
START_TEST(test_ca_rotation_overlap)
{
	const struct certs_opts o = { .ns = NS, .leaf_days = 2, .ca_days = 3 };
	struct json_object *secret = NULL;
	struct certs_result r0 = { 0 }, r1 = { 0 }, r2 = { 0 }, r3 = { 0 }, r4 = { 0 };
	time_t t0 = time(NULL);
	char *ca1;
	bool wrote;

	plan(&o, &secret, t0, &r0, &wrote);
	ca1 = r0.ca_pem;
	plan(&o, &secret, t0 + 32 * H, &r1, &wrote);
	ck_assert(wrote && r1.issued_leaf && !r1.rotated_ca);

	plan(&o, &secret, t0 + 48 * H, &r2, &wrote);
	ck_assert(wrote && r2.rotated_ca && !r2.issued_leaf);
	ck_assert_str_eq(r2.cert_pem, r1.cert_pem);		/* the leaf stays */
	ck_assert_uint_eq(count_certs(r2.ca_pem), 2);
	ck_assert_ptr_nonnull(strstr(r2.ca_pem, ca1));		/* old CA second */
	ck_assert(strncmp(r2.ca_pem, ca1, strlen(ca1)) != 0);	/* new CA first */
	ck_assert(!signed_by_newest(&r2));
	ck_assert_ptr_nonnull(kc_json_str(secret, "data", "ca.key"));

	/* The leaf's two-thirds mark: t0 + 31h + 49h * 2/3. */
	plan(&o, &secret, t0 + 65 * H, &r3, &wrote);
	ck_assert(wrote && r3.issued_leaf && !r3.rotated_ca);
	ck_assert(signed_by_newest(&r3));
	ck_assert_uint_eq(count_certs(r3.ca_pem), 2);

	/* The old CA expired (t0 + 72h): out of the bundle. */
	plan(&o, &secret, t0 + 73 * H, &r4, &wrote);
	ck_assert(wrote);
	ck_assert_uint_eq(count_certs(r4.ca_pem), 1);
	ck_assert_ptr_null(strstr(r4.ca_pem, ca1));
	ck_assert_str_eq(r4.cert_pem, r3.cert_pem);
	certs_result_release(&r0);
	certs_result_release(&r1);
	certs_result_release(&r2);
	certs_result_release(&r3);
	certs_result_release(&r4);
	json_object_put(secret);
}
END_TEST

/*
 * Lifetimes in seconds (--webhook-cert-lifetime-for-testing=60s: CA 60 s,
 * leaf 30 s, each valid from a tenth of its life before it is made),
 * planned every second for 90 s: the leaf renews at two thirds of its
 * life (+19 s), the CA at two thirds of its own (+38 s, with a new leaf
 * from it), the old CA stays in the bundle until it expires (+60 s), and
 * the leaf served is always signed by a CA of the bundle.
 */
START_TEST(test_seconds_lifetimes)
{
	static const int want_leaf[] = { 0, 19, 38, 57, 76 }, want_ca[] = { 0, 38, 76 };
	const struct certs_opts o = { .ns = NS, .ca_seconds = 60, .leaf_seconds = 30 };
	struct json_object *secret = NULL;
	time_t t0 = time(NULL);
	int leaf_at[8], ca_at[8];
	size_t nleaf = 0, nca = 0;

	for (int t = 0; t <= 90; t++) {
		struct certs_result r = { 0 };
		bool wrote;

		plan(&o, &secret, t0 + t, &r, &wrote);
		if (r.issued_leaf) {
			ck_assert_uint_lt(nleaf, KC_ARRAY_SIZE(leaf_at));
			leaf_at[nleaf++] = t;
			ck_assert_int_eq(r.leaf_not_after, t0 + t + 30);
		}
		if (r.rotated_ca) {
			ck_assert_uint_lt(nca, KC_ARRAY_SIZE(ca_at));
			ca_at[nca++] = t;
		}
		ck_assert_uint_eq(count_certs(r.ca_pem), (t >= 38 && t < 60) || t >= 76 ? 2 : 1);
		if (count_certs(r.ca_pem) == 1)
			ck_assert(signed_by_newest(&r));
		certs_result_release(&r);
	}
	ck_assert_uint_eq(nleaf, KC_ARRAY_SIZE(want_leaf));
	for (size_t i = 0; i < nleaf; i++)
		ck_assert_int_eq(leaf_at[i], want_leaf[i]);
	ck_assert_uint_eq(nca, KC_ARRAY_SIZE(want_ca));
	for (size_t i = 0; i < nca; i++)
		ck_assert_int_eq(ca_at[i], want_ca[i]);
	json_object_put(secret);
}
END_TEST

START_TEST(test_broken_secret_afresh)
{
	const struct certs_opts o = { .ns = NS };
	struct json_object *secret = NULL, *data;
	struct certs_result r0 = { 0 }, r1 = { 0 };
	_cleanup_(kc_cert_pair_freep) struct kc_cert_pair *other = NULL;
	_cleanup_(kc_freep) char *b64 = NULL;
	struct kc_status st = { 0 };
	time_t t0 = time(NULL);
	bool wrote;

	plan(&o, &secret, t0, &r0, &wrote);
	/* A CA key that is not the CA's. */
	ck_assert_int_eq(kc_cert_create(&(struct kc_cert_opts){ .cn = "x", .is_ca = true },
	    NULL, &other, &st), 0);
	ck_assert_int_eq(kc_base64_encode(other->key_pem, other->key_pem_len, 0, &b64, NULL),
	    0);
	data = kc_json_get(secret, "data");
	ck_assert_int_eq(kc_json_set_str(data, "ca.key", b64), 0);
	ck_assert_int_eq(kc_json_set_str(secret, "metadata", "x"), 0);
	plan(&o, &secret, t0, &r1, &wrote);
	ck_assert(wrote && r1.rotated_ca && r1.issued_leaf);
	ck_assert_str_ne(r1.ca_pem, r0.ca_pem);
	/* Garbage data too. */
	data = kc_json_get(secret, "data");
	ck_assert_int_eq(kc_json_set_str(data, "ca.crt", "!!!"), 0);
	certs_result_release(&r1);
	plan(&o, &secret, t0, &r1, &wrote);
	ck_assert(wrote && r1.rotated_ca);
	certs_result_release(&r0);
	certs_result_release(&r1);
	json_object_put(secret);
}
END_TEST

/* ---- certs_sync() against the fake transport ----------------------------------- */

#define SECRET_PATH	"/api/v1/namespaces/" NS "/secrets/" CERTS_SECRET_DEFAULT
#define CRD_PATH	"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"

static struct kc_client *
fake_client(void)
{
	static struct kc_rest_config rc = { .server = (char *)(uintptr_t)"https://fake" };
	struct kc_client *cl = NULL;
	struct kc_status st = { 0 };

	ck_assert_int_eq(kc_client_new(&(struct kc_client_opts){ .rc = &rc,
	    .ops = &fake_transport_ops }, &cl, &st), 0);
	return cl;
}

/* Another replica's Secret, written at 'now', with a resourceVersion. */
static char *
other_secret(time_t now, const char *rv)
{
	const struct certs_opts o = { .ns = NS };
	struct json_object *s = NULL;
	struct certs_result r = { 0 };
	char *text;
	bool wrote;

	plan(&o, &s, now, &r, &wrote);
	ck_assert_int_eq(kc_json_set_str(kc_json_get(s, "metadata"), "resourceVersion", rv), 0);
	text = kc_json_dump(s, NULL);
	ck_assert_ptr_nonnull(text);
	json_object_put(s);
	certs_result_release(&r);
	return text;
}

static char *
crd_json(const char *name, const char *strategy, const char *bundle)
{
	char *out;

	out = kc_asprintf("{\"apiVersion\":\"apiextensions.k8s.io/v1\","
	    "\"kind\":\"CustomResourceDefinition\",\"metadata\":{\"name\":\"%s\"},"
	    "\"spec\":{\"conversion\":{\"strategy\":\"%s\"%s%s%s}}}", name, strategy,
	    bundle != NULL ? ",\"webhook\":{\"clientConfig\":{\"caBundle\":\"" : "",
	    bundle != NULL ? bundle : "", bundle != NULL ? "\"}}" : "");
	ck_assert_ptr_nonnull(out);
	return out;
}

START_TEST(test_sync_create_lost)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl;
	struct certs_result res = { 0 };
	struct kc_status st = { 0 };
	const struct certs_opts o = { .ns = NS, .crds = crds };
	time_t now = time(NULL);
	_cleanup_(kc_freep) char *theirs = other_secret(now, "42");
	_cleanup_(kc_freep) char *crd = crd_json(crds[0], "Webhook", "b2xk");
	_cleanup_(kc_json_putp) struct json_object *patch = NULL, *tj = NULL;
	_cleanup_(kc_freep) char *want = NULL;
	const struct ft_request *rq;
	size_t n;

	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = SECRET_PATH,
	    .status = 404, .resp_body = "{\"kind\":\"Status\",\"reason\":\"NotFound\","
	    "\"code\":404}" });
	ft_expect(ft, &(struct ft_exchange){ .method = "POST",
	    .path = "/api/v1/namespaces/" NS "/secrets?fieldManager=trainyard-controller",
	    .status = 409, .resp_body = "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\","
	    "\"code\":409}" });
	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = SECRET_PATH,
	    .status = 200, .resp_body = theirs });
	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = CRD_PATH
	    "runs.trainyard.dev", .status = 200, .resp_body = crd });
	ft_expect(ft, &(struct ft_exchange){ .method = "PATCH", .path = CRD_PATH
	    "runs.trainyard.dev?fieldManager=trainyard-controller",
	    .content_type = "application/merge-patch+json", .status = 200,
	    .resp_body = crd });
	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = CRD_PATH
	    "resourceprofiles.trainyard.dev", .status = 404,
	    .resp_body = "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"code\":404}" });
	cl = fake_client();
	ck_assert_msg(certs_sync(cl, &o, now, &res, &st) == 0, "%s", st.message);
	ft_done(ft);

	/* It serves the winner's certificate and publishes the winner's CA. */
	ck_assert_int_eq(kc_json_parse(theirs, strlen(theirs), &tj, &st), 0);
	ck_assert_int_eq(kc_base64_encode(res.ca_pem, res.ca_len, 0, &want, NULL), 0);
	ck_assert_str_eq(kc_json_str(tj, "data", "ca.crt"), want);
	n = ft_nrequests(ft);
	rq = ft_request(ft, n - 2);
	ck_assert_str_eq(rq->method, "PATCH");
	ck_assert_int_eq(kc_json_parse(rq->body, rq->body_len, &patch, &st), 0);
	ck_assert_str_eq(kc_json_str(patch, "spec", "conversion", "webhook", "clientConfig",
	    "caBundle"), want);
	/* Written: the runner checks again soon. */
	ck_assert(res.patched_crd);
	certs_result_release(&res);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

#define MWC_PATH	"/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
#define VWC_PATH	"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"

START_TEST(test_sync_webhook_configurations)
{
	static const char *const configs[] = { "trainyard-projects", NULL };
	struct fake_transport *ft = ft_new();
	struct kc_client *cl;
	struct certs_result res = { 0 };
	struct kc_status st = { 0 };
	const struct certs_opts o = { .ns = NS, .webhook_configs = configs };
	time_t now = time(NULL);
	_cleanup_(kc_freep) char *theirs = other_secret(now, "42");
	_cleanup_(kc_json_putp) struct json_object *ops = NULL, *tj = NULL;
	_cleanup_(kc_freep) char *want = NULL;
	/* Two webhooks: one calls the Service, one a URL (not ours to trust). */
	static const char mwc[] = "{\"apiVersion\":\"admissionregistration.k8s.io/v1\","
	    "\"kind\":\"MutatingWebhookConfiguration\",\"metadata\":{\"name\":"
	    "\"trainyard-projects\",\"resourceVersion\":\"7\"},\"webhooks\":["
	    "{\"name\":\"a\",\"clientConfig\":{\"url\":\"https://x\"}},"
	    "{\"name\":\"b\",\"clientConfig\":{\"service\":{\"name\":\"trainyard-webhook\","
	    "\"namespace\":\"trainyard-system\"},\"caBundle\":\"b2xk\"}}]}";
	const struct ft_request *rq;

	ck_assert_int_eq(kc_json_parse(theirs, strlen(theirs), &tj, &st), 0);
	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = SECRET_PATH,
	    .status = 200, .resp_body = theirs });
	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = MWC_PATH
	    "trainyard-projects", .status = 200, .resp_body = mwc });
	ft_expect(ft, &(struct ft_exchange){ .method = "PATCH", .path = MWC_PATH
	    "trainyard-projects?fieldManager=trainyard-controller",
	    .content_type = "application/json-patch+json", .status = 200, .resp_body = mwc });
	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = VWC_PATH
	    "trainyard-projects", .status = 404,
	    .resp_body = "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"code\":404}" });
	cl = fake_client();
	ck_assert_msg(certs_sync(cl, &o, now, &res, &st) == 0, "%s", st.message);
	ft_done(ft);
	ck_assert_int_eq(kc_base64_encode(res.ca_pem, res.ca_len, 0, &want, NULL), 0);
	rq = ft_request(ft, 2);
	ck_assert_str_eq(rq->method, "PATCH");
	ck_assert_int_eq(kc_json_parse(rq->body, rq->body_len, &ops, &st), 0);
	/* On the version read, only the Service's webhook. */
	ck_assert_uint_eq(json_object_array_length(ops), 2);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(ops, 0), "op"), "test");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(ops, 0), "value"), "7");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(ops, 1), "path"),
	    "/webhooks/1/clientConfig/caBundle");
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(ops, 1), "value"), want);
	certs_result_release(&res);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_sync_update_conflict)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl;
	struct certs_result res = { 0 };
	struct kc_status st = { 0 };
	const struct certs_opts o = { .ns = NS, .crds = crds };
	time_t now = time(NULL);
	/* Ours is 6 days old (past its leaf's two thirds); theirs is fresh. */
	_cleanup_(kc_freep) char *old = other_secret(now - 6 * 86400, "7");
	_cleanup_(kc_freep) char *theirs = other_secret(now, "8");
	_cleanup_(kc_freep) char *none = crd_json(crds[0], "None", NULL);
	_cleanup_(kc_freep) char *b64 = NULL;
	_cleanup_(kc_json_putp) struct json_object *tj = NULL;
	_cleanup_(kc_freep) char *same = NULL;
	const struct ft_request *put;

	ck_assert_int_eq(kc_json_parse(theirs, strlen(theirs), &tj, &st), 0);
	same = crd_json(crds[1], "Webhook", kc_json_str(tj, "data", "ca.crt"));
	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = SECRET_PATH,
	    .status = 200, .resp_body = old });
	ft_expect(ft, &(struct ft_exchange){ .method = "PUT", .path = SECRET_PATH
	    "?fieldManager=trainyard-controller", .status = 409,
	    .resp_body = "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"code\":409}" });
	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = SECRET_PATH,
	    .status = 200, .resp_body = theirs });
	/* Strategy None: no caBundle; the same bundle already: no patch. */
	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = CRD_PATH
	    "runs.trainyard.dev", .status = 200, .resp_body = none });
	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = CRD_PATH
	    "resourceprofiles.trainyard.dev", .status = 200, .resp_body = same });
	cl = fake_client();
	ck_assert_msg(certs_sync(cl, &o, now, &res, &st) == 0, "%s", st.message);
	ft_done(ft);
	/* The update carried the resourceVersion it read. */
	put = ft_request(ft, 1);
	ck_assert_ptr_nonnull(strstr(put->body, "\"resourceVersion\":\"7\""));
	ck_assert_int_eq(kc_base64_encode(res.cert_pem, res.cert_len, 0, &b64, NULL), 0);
	ck_assert_str_eq(kc_json_str(tj, "data", "tls.crt"), b64);
	ck_assert(!res.patched_crd);
	certs_result_release(&res);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

START_TEST(test_sync_always_losing)
{
	struct fake_transport *ft = ft_new();
	struct kc_client *cl;
	struct certs_result res = { 0 };
	struct kc_status st = { 0 };
	const struct certs_opts o = { .ns = NS };

	for (int i = 0; i < CERTS_TRIES; i++) {
		ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = SECRET_PATH,
		    .status = 404, .resp_body = "{\"kind\":\"Status\",\"code\":404,"
		    "\"reason\":\"NotFound\"}" });
		ft_expect(ft, &(struct ft_exchange){ .method = "POST", .path = "/api/v1/"
		    "namespaces/" NS "/secrets?fieldManager=trainyard-controller",
		    .status = 409, .resp_body = "{\"kind\":\"Status\",\"code\":409,"
		    "\"reason\":\"AlreadyExists\"}" });
	}
	cl = fake_client();
	ck_assert_int_eq(certs_sync(cl, &o, time(NULL), &res, &st), KC_ECONFLICT);
	ck_assert_ptr_nonnull(strstr(st.message, "lost"));
	ck_assert_ptr_null(res.cert_pem);
	ft_done(ft);
	kc_client_free(cl);
	ft_free(ft);
}
END_TEST

Suite *
ctl_certs_suite(void)
{
	Suite *s = suite_create("ctl_certs");
	TCase *tc = tcase_create("certs");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_first_issue_and_stable);
	tcase_add_test(tc, test_leaf_renewed_at_two_thirds);
	tcase_add_test(tc, test_ca_rotation_overlap);
	tcase_add_test(tc, test_seconds_lifetimes);
	tcase_add_test(tc, test_broken_secret_afresh);
	tcase_add_test(tc, test_sync_create_lost);
	tcase_add_test(tc, test_sync_update_conflict);
	tcase_add_test(tc, test_sync_webhook_configurations);
	tcase_add_test(tc, test_sync_always_losing);
	suite_add_tcase(s, tc);
	return s;
}

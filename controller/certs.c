/*
 * certs.c: self-managed certificates for the conversion webhook.
 *
 * The Secret (CERTS_SECRET_DEFAULT in the controller's namespace) holds
 * four keys, PEM, as any kubernetes.io/tls consumer would expect plus
 * the CA:
 *
 *	ca.crt   every CA still valid, newest first (the caBundle)
 *	ca.key   the newest CA's key
 *	tls.crt  the serving certificate, SAN <service>.<ns>.svc and
 *	         <service>.<ns>.svc.cluster.local
 *	tls.key  its key
 *
 * certs_plan() reads it at a given time and decides, with no I/O: start
 * afresh when it is missing or broken; rotate the CA past two thirds of
 * its life (the old one stays in ca.crt until it expires); drop expired
 * CAs; issue a new leaf from the newest CA when the leaf is missing, does
 * not match its key, lacks a name, is past two thirds of its life, or
 * was signed by no CA of the bundle. The Secret is rewritten only when
 * one of its four values changed, so replicas agree without writing.
 *
 * certs_sync() wraps it with optimistic concurrency: the create or the
 * update (with the resourceVersion read) that loses to another replica
 * gets KC_EEXISTS or KC_ECONFLICT, and the loser reads the winner's
 * Secret and plans again, which then usually has nothing to write. Then
 * the bundle goes into the CRDs with a JSON merge patch, only where the
 * CRD converts by Webhook and its caBundle differs.
 *
 * The runner thread calls certs_sync() when the next two-thirds mark is
 * due, and at least every CHECK_S seconds, so that a CRD applied or
 * re-applied without its caBundle (an upgrade's first step) gets it back
 * within that time; a check that changes nothing costs three GETs. Once
 * a sync wrote a caBundle, the next steps of an upgrade follow soon: the
 * thread checks every FAST_CHECK_S seconds for the next FAST_WINDOW_S.
 * It hands the leaf to the webhook server.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/buf.h>
#include <kc/cert.h>
#include <kc/client.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>

#include "certs.h"
#include "webhook.h"

#define DATA_MAX	(256u << 10)	/* a decoded Secret value */
#define SVC_MAX	300
#define CHECK_S	15		/* the longest wait between two syncs */
/*
 * After a sync had to write a CRD's caBundle (its CRDs were just applied:
 * an upgrade is under way, and its next step follows within minutes),
 * sync every FAST_CHECK_S seconds for FAST_WINDOW_S.
 */
#define FAST_CHECK_S	2
#define FAST_WINDOW_S	300

static const struct kc_log_ctx certs_log = { .action = "certs" };

struct ca {
	char		*pem;
	size_t		 len;
	time_t		 not_before, not_after;
	X509		*x;
};

struct state {
	struct ca	 cas[CERTS_CAS_MAX + 1];
	size_t		 ncas;
	char		*ca_key;
	char		*tls_crt, *tls_key;
};

static void
state_release(struct state *s)
{
	for (size_t i = 0; i < s->ncas; i++) {
		kc_free(s->cas[i].pem);
		X509_free(s->cas[i].x);
	}
	kc_free_secret(s->ca_key);
	kc_free(s->tls_crt);
	kc_free_secret(s->tls_key);
	memset(s, 0, sizeof(*s));
}

void
certs_result_release(struct certs_result *r)
{
	kc_free(r->ca_pem);
	kc_free(r->cert_pem);
	kc_free_secret(r->key_pem);
	memset(r, 0, sizeof(*r));
}

static time_t
two_thirds(time_t nb, time_t na)
{
	return nb + (na - nb) / 3 * 2;
}

/* data[key] base64-decoded into a new string; NULL when absent or bad. */
static char *
data_get(const struct json_object *secret, const char *key)
{
	const char *v = kc_json_str(secret, "data", key);
	char *out = NULL;

	if (v == NULL || strlen(v) > DATA_MAX * 4 / 3 + 4)
		return NULL;
	if (kc_base64_decode(v, strlen(v), 0, &out, NULL, NULL, 0) < 0)
		return NULL;
	return out;
}

/* Appends one CA (PEM and times) to the state; takes 'x'. */
static int
ca_add(struct state *s, X509 *x)
{
	_cleanup_(kc_cert_info_freep) struct kc_cert_info *info = NULL;
	struct ca *ca;
	BIO *b;
	char *data;
	long n;
	int r;

	if (s->ncas == KC_ARRAY_SIZE(s->cas)) {
		X509_free(x);
		return -E2BIG;
	}
	if ((b = BIO_new(BIO_s_mem())) == NULL) {
		X509_free(x);
		return -ENOMEM;
	}
	if (PEM_write_bio_X509(b, x) != 1 || (n = BIO_get_mem_data(b, &data)) <= 0) {
		BIO_free(b);
		X509_free(x);
		return -ENOMEM;
	}
	ca = &s->cas[s->ncas];
	memset(ca, 0, sizeof(*ca));
	if ((ca->pem = kc_strndup(data, (size_t)n)) == NULL) {
		BIO_free(b);
		X509_free(x);
		return -ENOMEM;
	}
	BIO_free(b);
	ca->len = (size_t)n;
	ca->x = x;
	if ((r = kc_cert_info_read(ca->pem, ca->len, &info, NULL)) < 0 || !info->is_ca) {
		kc_free(ca->pem);
		X509_free(x);
		return r < 0 ? r : KC_EPARSE;
	}
	ca->not_before = info->not_before;
	ca->not_after = info->not_after;
	s->ncas++;
	return 0;
}

/* Every certificate of a PEM bundle, in order. */
static int
cas_parse(struct state *s, const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x;
	int r = 0;

	if (b == NULL)
		return -ENOMEM;
	while (r == 0 && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL)
		r = ca_add(s, x);
	BIO_free(b);
	return r;
}

/* Reads the Secret into 's'; false when it cannot be used as it is. */
static bool
state_read(const struct json_object *secret, struct state *s)
{
	_cleanup_(kc_cert_pair_freep) struct kc_cert_pair *p = NULL;
	_cleanup_(kc_freep) char *bundle = NULL;

	if (secret == NULL || (bundle = data_get(secret, "ca.crt")) == NULL ||
	    (s->ca_key = data_get(secret, "ca.key")) == NULL)
		return false;
	s->tls_crt = data_get(secret, "tls.crt");
	s->tls_key = data_get(secret, "tls.key");
	if (cas_parse(s, bundle) < 0 || s->ncas == 0)
		return false;
	/* The key must be the newest CA's. */
	return kc_cert_pair_load(s->cas[0].pem, s->cas[0].len, s->ca_key,
	    strlen(s->ca_key), &p, NULL) == 0;
}

static bool
has_name(char **names, const char *want)
{
	for (size_t i = 0; names != NULL && names[i] != NULL; i++)
		if (strcmp(names[i], want) == 0)
			return true;
	return false;
}

/* Whether the leaf can be served until its two-thirds mark; sets '*renew_at'. */
static bool
leaf_ok(const struct state *s, const char *svc, const char *svc_local, time_t now,
    time_t *renew_at)
{
	_cleanup_(kc_cert_pair_freep) struct kc_cert_pair *p = NULL;
	_cleanup_(kc_cert_info_freep) struct kc_cert_info *info = NULL;
	BIO *b;
	X509 *x;
	bool signed_by_ours = false;

	if (s->tls_crt == NULL || s->tls_key == NULL ||
	    kc_cert_pair_load(s->tls_crt, strlen(s->tls_crt), s->tls_key, strlen(s->tls_key),
	    &p, NULL) < 0 ||
	    kc_cert_info_read(s->tls_crt, strlen(s->tls_crt), &info, NULL) < 0)
		return false;
	if (!has_name(info->dns, svc) || !has_name(info->dns, svc_local) ||
	    now >= two_thirds(info->not_before, info->not_after))
		return false;
	if ((b = BIO_new_mem_buf(s->tls_crt, -1)) == NULL)
		return false;
	x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	for (size_t i = 0; x != NULL && i < s->ncas && !signed_by_ours; i++)
		signed_by_ours = X509_verify(x, X509_get0_pubkey(s->cas[i].x)) == 1;
	X509_free(x);
	if (signed_by_ours)
		*renew_at = two_thirds(info->not_before, info->not_after);
	return signed_by_ours;
}

/* A new CA, first in the bundle; its key becomes ca.key. */
static int
rotate_ca(struct state *s, const struct certs_opts *o, time_t now, struct kc_status *st)
{
	_cleanup_(kc_cert_pair_freep) struct kc_cert_pair *ca = NULL;
	struct state fresh = { 0 };
	BIO *b;
	X509 *x;
	int r;

	if ((r = kc_cert_create(&(struct kc_cert_opts){
		.cn = "trainyard-webhook-ca", .is_ca = true, .now = now,
		.days = o->ca_seconds != 0 ? 0 : o->ca_days != 0 ? o->ca_days : CERTS_CA_DAYS,
		.seconds = o->ca_seconds,
	}, NULL, &ca, st)) < 0)
		return r;
	if ((b = BIO_new_mem_buf(ca->cert_pem, (int)ca->cert_pem_len)) == NULL)
		return -ENOMEM;
	x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	if (x == NULL)
		return kc_status_set(st, KC_ETLS, "certs: the new CA does not parse");
	if ((r = ca_add(&fresh, x)) < 0)
		goto fail;
	/* The old CAs that are still valid follow. */
	for (size_t i = 0; i < s->ncas && fresh.ncas < CERTS_CAS_MAX; i++)
		if (s->cas[i].not_after > now) {
			fresh.cas[fresh.ncas++] = s->cas[i];
			s->cas[i] = (struct ca){ 0 };
		}
	if ((fresh.ca_key = kc_strdup(ca->key_pem)) == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	fresh.tls_crt = s->tls_crt;
	fresh.tls_key = s->tls_key;
	s->tls_crt = s->tls_key = NULL;
	state_release(s);
	*s = fresh;
	return 0;
fail:
	state_release(&fresh);
	return r;
}

static int
issue_leaf(struct state *s, const struct certs_opts *o, const char *svc,
    const char *svc_local, time_t now, struct kc_status *st)
{
	_cleanup_(kc_cert_pair_freep) struct kc_cert_pair *issuer = NULL, *leaf = NULL;
	int r;

	if ((r = kc_cert_pair_load(s->cas[0].pem, s->cas[0].len, s->ca_key,
	    strlen(s->ca_key), &issuer, st)) < 0)
		return r;
	if ((r = kc_cert_create(&(struct kc_cert_opts){
		.cn = svc, .server = true, .now = now,
		.days = o->leaf_seconds != 0 ? 0 : o->leaf_days != 0 ? o->leaf_days :
		    CERTS_LEAF_DAYS,
		.seconds = o->leaf_seconds,
		.dns = (const char *const []){ svc, svc_local, NULL },
	}, issuer, &leaf, st)) < 0)
		return r;
	kc_free(s->tls_crt);
	kc_free_secret(s->tls_key);
	s->tls_crt = leaf->cert_pem;
	s->tls_key = leaf->key_pem;
	leaf->cert_pem = leaf->key_pem = NULL;
	return 0;
}

static int
bundle_text(const struct state *s, char **ret, size_t *ret_len)
{
	struct kc_buf b;
	int r = 0;

	kc_buf_init(&b, (size_t)CERTS_CAS_MAX * DATA_MAX);
	for (size_t i = 0; i < s->ncas && r == 0; i++)
		r = kc_buf_append(&b, s->cas[i].pem, s->cas[i].len);
	if (r == 0 && b.len == 0)
		r = -EINVAL;
	if (r < 0) {
		kc_buf_free(&b);
		return r;
	}
	*ret = kc_buf_take(&b, ret_len);
	return *ret != NULL ? 0 : -ENOMEM;
}

static int
data_put(struct json_object *data, const char *key, const char *value)
{
	_cleanup_(kc_freep) char *enc = NULL;
	int r;

	if ((r = kc_base64_encode(value, strlen(value), 0, &enc, NULL)) < 0)
		return r;
	return kc_json_set_str(data, key, enc);
}

/* Whether the Secret's data[key] decodes to 'value'. */
static bool
data_is(const struct json_object *secret, const char *key, const char *value)
{
	char *v = data_get(secret, key);
	bool same = v != NULL && strcmp(v, value) == 0;

	kc_free_secret(v);
	return same;
}

static int
secret_build(const struct certs_opts *o, const char *name, const struct json_object *old,
    const struct state *s, const char *bundle, struct json_object **ret)
{
	_cleanup_(kc_json_putp) struct json_object *sec = NULL;
	struct json_object *md, *data, *labels;
	int r;

	if (old != NULL) {
		if ((sec = kc_json_copy(old)) == NULL)
			return -ENOMEM;
	} else {
		if ((sec = json_object_new_object()) == NULL ||
		    kc_json_set_str(sec, "apiVersion", "v1") < 0 ||
		    kc_json_set_str(sec, "kind", "Secret") < 0 ||
		    kc_json_set_str(sec, "type", "Opaque") < 0)
			return -ENOMEM;
	}
	if ((md = kc_json_ensure_obj(sec, "metadata")) == NULL ||
	    kc_json_set_str(md, "name", name) < 0 || kc_json_set_str(md, "namespace", o->ns) < 0 ||
	    (labels = kc_json_ensure_obj(md, "labels")) == NULL ||
	    kc_json_set_str(labels, "app.kubernetes.io/name", "trainyard-controller") < 0 ||
	    kc_json_set_str(labels, "app.kubernetes.io/part-of", "trainyard") < 0)
		return -ENOMEM;
	json_object_object_del(sec, "data");
	if ((data = kc_json_ensure_obj(sec, "data")) == NULL)
		return -ENOMEM;
	if ((r = data_put(data, "ca.crt", bundle)) < 0 ||
	    (r = data_put(data, "ca.key", s->ca_key)) < 0 ||
	    (r = data_put(data, "tls.crt", s->tls_crt)) < 0 ||
	    (r = data_put(data, "tls.key", s->tls_key)) < 0)
		return r;
	*ret = sec;
	sec = NULL;
	return 0;
}

int
certs_plan(const struct certs_opts *o, const struct json_object *secret, time_t now,
    struct json_object **ret_secret, struct certs_result *ret, struct kc_status *st)
{
	const char *svc_name = o->service != NULL ? o->service : CERTS_SERVICE_DEFAULT;
	const char *name = o->secret != NULL ? o->secret : CERTS_SECRET_DEFAULT;
	char svc[SVC_MAX], svc_local[SVC_MAX + 16];
	struct certs_result res = { 0 };
	struct state s = { 0 };
	_cleanup_(kc_json_putp) struct json_object *out = NULL;
	_cleanup_(kc_cert_info_freep) struct kc_cert_info *info = NULL;
	time_t leaf_renew = 0, ca_renew;
	size_t keep;
	int r;

	if ((size_t)snprintf(svc, sizeof(svc), "%s.%s.svc", svc_name, o->ns) >= sizeof(svc))
		return kc_status_set(st, -EINVAL, "certs: service name too long");
	(void)snprintf(svc_local, sizeof(svc_local), "%s.cluster.local", svc);

	if (!state_read(secret, &s)) {
		if (secret != NULL)
			kc_log_warn(&certs_log, "Secret %s/%s holds no usable CA: starting afresh",
			    o->ns, name);
		state_release(&s);
		if ((r = rotate_ca(&s, o, now, st)) < 0)
			goto out;
		res.rotated_ca = true;
	} else if (now >= two_thirds(s.cas[0].not_before, s.cas[0].not_after)) {
		if ((r = rotate_ca(&s, o, now, st)) < 0)
			goto out;
		res.rotated_ca = true;
	}
	/* Expired CAs leave the bundle (never the newest). */
	keep = 1;
	for (size_t i = 1; i < s.ncas; i++) {
		if (s.cas[i].not_after > now && keep < CERTS_CAS_MAX) {
			s.cas[keep++] = s.cas[i];
		} else {
			kc_free(s.cas[i].pem);
			X509_free(s.cas[i].x);
		}
	}
	s.ncas = keep;
	if (!leaf_ok(&s, svc, svc_local, now, &leaf_renew)) {
		if ((r = issue_leaf(&s, o, svc, svc_local, now, st)) < 0)
			goto out;
		res.issued_leaf = true;
		leaf_renew = 0;
		if (!leaf_ok(&s, svc, svc_local, now, &leaf_renew)) {
			r = kc_status_set(st, KC_ETLS, "certs: the new serving certificate "
			    "does not verify");
			goto out;
		}
	}
	if ((r = bundle_text(&s, &res.ca_pem, &res.ca_len)) < 0)
		goto out;
	if ((res.cert_pem = kc_strdup(s.tls_crt)) == NULL ||
	    (res.key_pem = kc_strdup(s.tls_key)) == NULL) {
		r = -ENOMEM;
		goto out;
	}
	res.cert_len = strlen(res.cert_pem);
	res.key_len = strlen(res.key_pem);
	if ((r = kc_cert_info_read(res.cert_pem, res.cert_len, &info, st)) < 0)
		goto out;
	res.leaf_not_after = info->not_after;
	ca_renew = two_thirds(s.cas[0].not_before, s.cas[0].not_after);
	res.renew_at = leaf_renew < ca_renew ? leaf_renew : ca_renew;

	if (secret == NULL || !data_is(secret, "ca.crt", res.ca_pem) ||
	    !data_is(secret, "ca.key", s.ca_key) || !data_is(secret, "tls.crt", s.tls_crt) ||
	    !data_is(secret, "tls.key", s.tls_key))
		if ((r = secret_build(o, name, secret, &s, res.ca_pem, &out)) < 0)
			goto out;
	*ret_secret = out;
	out = NULL;
	*ret = res;
	res = (struct certs_result){ 0 };
	r = 0;
out:
	state_release(&s);
	certs_result_release(&res);
	return r;
}

/* caBundle into each CRD that converts by Webhook, where it differs. */
static int
patch_crds(struct kc_client *cl, const struct certs_opts *o, struct certs_result *res,
    struct kc_status *st)
{
	_cleanup_(kc_freep) char *b64 = NULL;
	int r;

	if ((r = kc_base64_encode(res->ca_pem, res->ca_len, 0, &b64, NULL)) < 0)
		return r;
	for (size_t i = 0; o->crds != NULL && o->crds[i] != NULL; i++) {
		_cleanup_(kc_json_putp) struct json_object *crd = NULL, *patch = NULL;
		const char *strategy, *cur;
		struct json_object *cc;

		r = kc_client_get(cl, &(struct kc_get_opts){
			.res = &kc_res_customresourcedefinitions, .name = o->crds[i],
		}, &crd, st);
		if (r == KC_ENOTFOUND)
			continue;
		if (r < 0)
			return kc_status_set(st, r, "get CRD %s: %s", o->crds[i], st->message);
		strategy = kc_json_str(crd, "spec", "conversion", "strategy");
		if (strategy == NULL || strcmp(strategy, "Webhook") != 0)
			continue;
		cur = kc_json_str(crd, "spec", "conversion", "webhook", "clientConfig",
		    "caBundle");
		if (cur != NULL && strcmp(cur, b64) == 0)
			continue;
		if ((patch = json_object_new_object()) == NULL)
			return -ENOMEM;
		cc = kc_json_ensure_obj(kc_json_ensure_obj(kc_json_ensure_obj(
		    kc_json_ensure_obj(patch, "spec"), "conversion"), "webhook"), "clientConfig");
		if (cc == NULL || kc_json_set_str(cc, "caBundle", b64) < 0)
			return -ENOMEM;
		if ((r = kc_client_patch(cl, &(struct kc_patch_opts){
			.res = &kc_res_customresourcedefinitions, .name = o->crds[i],
			.type = KC_PATCH_MERGE, .field_manager = "trainyard-controller",
		}, patch, NULL, st)) < 0)
			return kc_status_set(st, r, "patch CRD %s caBundle: %s", o->crds[i],
			    st->message);
		kc_log_info(&certs_log, "CRD %s: caBundle updated", o->crds[i]);
		res->patched_crd = true;
	}
	return 0;
}

static const struct kc_resource res_mutating = {
	.group = "admissionregistration.k8s.io", .version = "v1",
	.resource = "mutatingwebhookconfigurations", .kind = "MutatingWebhookConfiguration",
};
static const struct kc_resource res_validating = {
	.group = "admissionregistration.k8s.io", .version = "v1",
	.resource = "validatingwebhookconfigurations", .kind = "ValidatingWebhookConfiguration",
};

/*
 * caBundle into each webhook that calls a Service of the admission
 * webhook configurations named in opts->webhook_configs (mutating and
 * validating alike), where it differs: one JSON patch per configuration,
 * made conditional on the resourceVersion read. A configuration that does
 * not exist is skipped.
 */
static int
patch_webhook_configs(struct kc_client *cl, const struct certs_opts *o,
    const struct certs_result *res, struct kc_status *st)
{
	static const struct kc_resource *const kinds[] = { &res_mutating, &res_validating };
	_cleanup_(kc_freep) char *b64 = NULL;
	int r;

	if (o->webhook_configs == NULL)
		return 0;
	if ((r = kc_base64_encode(res->ca_pem, res->ca_len, 0, &b64, NULL)) < 0)
		return r;
	for (size_t k = 0; k < KC_ARRAY_SIZE(kinds); k++)
		for (size_t i = 0; o->webhook_configs[i] != NULL; i++) {
			_cleanup_(kc_json_putp) struct json_object *cfg = NULL, *ops = NULL;
			const char *name = o->webhook_configs[i];
			struct json_object *hooks, *op;
			char path[64];

			r = kc_client_get(cl, &(struct kc_get_opts){
				.res = kinds[k], .name = name,
			}, &cfg, st);
			if (r == KC_ENOTFOUND)
				continue;
			if (r < 0)
				return kc_status_set(st, r, "get %s %s: %s", kinds[k]->kind, name,
				    st->message);
			if ((ops = json_object_new_array()) == NULL ||
			    kc_json_append(ops, op = json_object_new_object()) < 0 ||
			    kc_json_set_str(op, "op", "test") < 0 ||
			    kc_json_set_str(op, "path", "/metadata/resourceVersion") < 0 ||
			    kc_json_set_str(op, "value", kc_json_str(cfg, "metadata",
			    "resourceVersion") != NULL ? kc_json_str(cfg, "metadata",
			    "resourceVersion") : "") < 0)
				return -ENOMEM;
			hooks = kc_json_arr_of(cfg, "webhooks");
			for (size_t h = 0; hooks != NULL && h < json_object_array_length(hooks);
			    h++) {
				struct json_object *cc = kc_json_get(json_object_array_get_idx(hooks,
				    h), "clientConfig");
				const char *cur = kc_json_str(cc, "caBundle");

				if (kc_json_get(cc, "service") == NULL ||
				    (cur != NULL && strcmp(cur, b64) == 0))
					continue;
				(void)snprintf(path, sizeof(path), "/webhooks/%zu/clientConfig/caBundle",
				    h);
				if (kc_json_append(ops, op = json_object_new_object()) < 0 ||
				    kc_json_set_str(op, "op", "add") < 0 ||
				    kc_json_set_str(op, "path", path) < 0 ||
				    kc_json_set_str(op, "value", b64) < 0)
					return -ENOMEM;
			}
			if (json_object_array_length(ops) == 1)
				continue;
			if ((r = kc_client_patch(cl, &(struct kc_patch_opts){
				.res = kinds[k], .name = name, .type = KC_PATCH_JSON,
				.field_manager = "trainyard-controller",
			}, ops, NULL, st)) < 0)
				return kc_status_set(st, r, "patch %s %s caBundle: %s", kinds[k]->kind,
				    name, st->message);
			kc_log_info(&certs_log, "%s %s: caBundle updated", kinds[k]->kind, name);
		}
	return 0;
}

int
certs_sync(struct kc_client *cl, const struct certs_opts *o, time_t now,
    struct certs_result *ret, struct kc_status *st)
{
	const char *name = o->secret != NULL ? o->secret : CERTS_SECRET_DEFAULT;
	struct certs_result res = { 0 };
	int r = KC_ECONFLICT;

	for (unsigned t = 0; t < CERTS_TRIES; t++) {
		_cleanup_(kc_json_putp) struct json_object *cur = NULL, *want = NULL;

		certs_result_release(&res);
		r = kc_client_get(cl, &(struct kc_get_opts){ .res = &kc_res_secrets,
		    .ns = o->ns, .name = name }, &cur, st);
		if (r < 0 && r != KC_ENOTFOUND)
			return kc_status_set(st, r, "get Secret %s/%s: %s", o->ns, name,
			    st->message);
		if ((r = certs_plan(o, cur, now, &want, &res, st)) < 0)
			return r;
		if (want == NULL)
			break;
		if (cur == NULL)
			r = kc_client_create(cl, &(struct kc_create_opts){ .res = &kc_res_secrets,
			    .ns = o->ns, .field_manager = "trainyard-controller" }, want, NULL, st);
		else
			r = kc_client_update(cl, &(struct kc_update_opts){ .res = &kc_res_secrets,
			    .ns = o->ns, .field_manager = "trainyard-controller" }, want, NULL, st);
		if (r == KC_EEXISTS || r == KC_ECONFLICT)
			continue;		/* another replica wrote first: read it */
		if (r < 0) {
			certs_result_release(&res);
			return kc_status_set(st, r, "%s Secret %s/%s: %s", cur == NULL ? "create" :
			    "update", o->ns, name, st->message);
		}
		if (res.rotated_ca)
			kc_log_info(&certs_log, "Secret %s/%s: new CA", o->ns, name);
		if (res.issued_leaf)
			kc_log_info(&certs_log, "Secret %s/%s: new serving certificate", o->ns, name);
		break;
	}
	if (r == KC_EEXISTS || r == KC_ECONFLICT) {
		certs_result_release(&res);
		return kc_status_set(st, KC_ECONFLICT, "Secret %s/%s: lost %d writes in a row",
		    o->ns, name, CERTS_TRIES);
	}
	if ((r = patch_crds(cl, o, &res, st)) < 0 ||
	    (r = patch_webhook_configs(cl, o, &res, st)) < 0) {
		certs_result_release(&res);
		return r;
	}
	*ret = res;
	return 0;
}

/* ---- the runner ------------------------------------------------------------ */

struct certs_runner {
	struct certs_runner_opts o;
	struct kc_client	*cl;
	pthread_t		 thread;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cond;
	uint64_t		 wait_s;	/* before the thread's first sync */
	time_t			 fast_until;	/* check often until then */
	bool			 stop;
	bool			 started;
};

/* Serves and writes out what a sync decided. */
static int
apply(struct certs_runner *cr, const struct certs_result *res, struct kc_status *st)
{
	const struct kc_cert_pair pair = {
		.cert_pem = res->cert_pem, .cert_pem_len = res->cert_len,
		.key_pem = res->key_pem, .key_pem_len = res->key_len,
	};
	char c[4096], k[4096];
	int r;

	if (cr->o.webhook != NULL && (r = webhook_set_cert(cr->o.webhook, res->cert_pem,
	    res->cert_len, res->key_pem, res->key_len, st)) < 0)
		return r;
	if (cr->o.cert_dir != NULL) {
		if ((size_t)snprintf(c, sizeof(c), "%s/tls.crt", cr->o.cert_dir) >= sizeof(c) ||
		    (size_t)snprintf(k, sizeof(k), "%s/tls.key", cr->o.cert_dir) >= sizeof(k))
			return kc_status_set(st, -ENAMETOOLONG, "%s: too long", cr->o.cert_dir);
		if ((r = kc_cert_pair_write(&pair, c, k, st)) < 0)
			return r;
	}
	if (cr->o.ca_file != NULL &&
	    (r = kc_write_file_atomic(cr->o.ca_file, res->ca_pem, res->ca_len, 0644)) < 0)
		return kc_status_set(st, r, "%s: %s", cr->o.ca_file, kc_strerror(r));
	return 0;
}

/* One sync; the seconds until the next. */
static int
step(struct certs_runner *cr, uint64_t *ret_wait_s, struct kc_status *st)
{
	struct certs_result res = { 0 };
	time_t now = kc_clock_wall();
	int r;

	if ((r = certs_sync(cr->cl, &cr->o.certs, now, &res, st)) < 0)
		return r;
	r = apply(cr, &res, st);
	*ret_wait_s = res.renew_at > now ? (uint64_t)(res.renew_at - now) : 1;
	if (*ret_wait_s > CHECK_S)
		*ret_wait_s = CHECK_S;
	if (res.patched_crd)
		cr->fast_until = now + FAST_WINDOW_S;
	if (now < cr->fast_until && *ret_wait_s > FAST_CHECK_S)
		*ret_wait_s = FAST_CHECK_S;
	certs_result_release(&res);
	return r;
}

static void *
run(void *arg)
{
	struct certs_runner *cr = arg;
	uint64_t wait_s = cr->wait_s, backoff_s = 10;

	for (;;) {
		struct kc_status st = { 0 };
		struct timespec ts;
		int r;

		pthread_mutex_lock(&cr->mu);
		(void)clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)wait_s;
		while (!cr->stop && wait_s > 0 &&
		    pthread_cond_timedwait(&cr->cond, &cr->mu, &ts) != ETIMEDOUT)
			;
		if (cr->stop) {
			pthread_mutex_unlock(&cr->mu);
			break;
		}
		pthread_mutex_unlock(&cr->mu);
		if ((r = step(cr, &wait_s, &st)) < 0) {
			kc_log_warn(&certs_log, "%s (retrying in %us)", st.message,
			    (unsigned)backoff_s);
			wait_s = backoff_s;
			backoff_s = backoff_s * 2 > 300 ? 300 : backoff_s * 2;
		} else {
			backoff_s = 10;
		}
	}
	return NULL;
}

int
certs_start(const struct certs_runner_opts *opts, struct certs_runner **ret,
    struct kc_status *st)
{
	struct certs_runner *cr;
	pthread_condattr_t ca;
	int r;

	*ret = NULL;
	if ((cr = kc_calloc(1, sizeof(*cr))) == NULL)
		return -ENOMEM;
	cr->o = *opts;
	if ((r = kc_client_new(&(struct kc_client_opts){ .rc = opts->rc, .max_retries = 3,
	    .timeout_ms = 30000 }, &cr->cl, st)) < 0) {
		kc_free(cr);
		return r;
	}
	cr->wait_s = 0;		/* the thread syncs at once */
	if (pthread_mutex_init(&cr->mu, NULL) != 0 || pthread_condattr_init(&ca) != 0) {
		kc_client_free(cr->cl);
		kc_free(cr);
		return -ENOMEM;
	}
	(void)pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	r = pthread_cond_init(&cr->cond, &ca);
	(void)pthread_condattr_destroy(&ca);
	if (r != 0) {
		(void)pthread_mutex_destroy(&cr->mu);
		kc_client_free(cr->cl);
		kc_free(cr);
		return -ENOMEM;
	}
	if ((r = pthread_create(&cr->thread, NULL, run, cr)) != 0) {
		(void)pthread_cond_destroy(&cr->cond);
		(void)pthread_mutex_destroy(&cr->mu);
		kc_client_free(cr->cl);
		kc_free(cr);
		return kc_status_set(st, -r, "certs: thread: %s", kc_strerror(-r));
	}
	cr->started = true;
	*ret = cr;
	return 0;
}

struct certs_runner *
certs_stop(struct certs_runner *cr)
{
	if (cr == NULL)
		return NULL;
	if (cr->started) {
		pthread_mutex_lock(&cr->mu);
		cr->stop = true;
		pthread_cond_signal(&cr->cond);
		pthread_mutex_unlock(&cr->mu);
		kc_client_cancel(cr->cl);
		(void)pthread_join(cr->thread, NULL);
		(void)pthread_cond_destroy(&cr->cond);
		(void)pthread_mutex_destroy(&cr->mu);
	}
	kc_client_free(cr->cl);
	return kc_free(cr);
}

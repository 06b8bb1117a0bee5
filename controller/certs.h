/*
 * certs.h: self-managed certificates for the conversion webhook
 * (--webhook-cert-mode=self).
 *
 * The controller keeps a CA and a short-lived serving certificate in one
 * Secret of its own namespace (CERTS_SECRET_DEFAULT, keys ca.crt, ca.key,
 * tls.crt, tls.key), serves the leaf (webhook_set_cert() and, when a
 * directory is given, tls.crt and tls.key there), and writes the CA
 * bundle into the Trainyard CRDs' spec.conversion.webhook.clientConfig.
 * caBundle. certs_plan() is the pure decision (what the Secret should
 * hold at a given time); certs_sync() does the reads and writes around it;
 * certs_start() runs certs_sync() on a thread of its own when due.
 *
 * Lifetimes: the leaf is renewed at two thirds of its life; the CA is
 * rotated at two thirds of its life: the new CA goes first in ca.crt and
 * the old one stays there (and so in caBundle) until it expires, so a
 * leaf the old CA signed, still served by a replica that has not re-read
 * the Secret, keeps verifying. The next leaf is signed by the new CA.
 */
#ifndef TY_CERTS_H
#define TY_CERTS_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <json-c/json.h>

#include <kc/client.h>
#include <kc/err.h>
#include <kc/kubeconfig.h>
#include <kc/macro.h>

#define CERTS_SECRET_DEFAULT	"trainyard-webhook-certs"
#define CERTS_SERVICE_DEFAULT	"trainyard-webhook"
#define CERTS_CA_DAYS		365
#define CERTS_LEAF_DAYS		7
#define CERTS_CAS_MAX		8	/* CAs kept in ca.crt */
#define CERTS_TRIES		5	/* writes lost to other replicas */

struct webhook;

struct certs_opts {
	const char		*ns;		/* the Secret's and Service's namespace */
	const char		*secret;	/* NULL: CERTS_SECRET_DEFAULT */
	const char		*service;	/* NULL: CERTS_SERVICE_DEFAULT */
	const char *const	*crds;		/* CRD names to patch, NULL-terminated */
	/* Mutating and Validating WebhookConfigurations to patch, NULL-terminated. */
	const char *const	*webhook_configs;
	unsigned		 ca_days;	/* 0: CERTS_CA_DAYS */
	unsigned		 leaf_days;	/* 0: CERTS_LEAF_DAYS */
	/*
	 * Tests: lifetimes in seconds instead (at most KC_CERT_SECONDS_MAX;
	 * 0: the days above), to watch renewals and rotations happen.
	 */
	unsigned		 ca_seconds;
	unsigned		 leaf_seconds;
};

/* What to serve and publish after a plan or a sync. */
struct certs_result {
	char	*ca_pem;		/* the bundle: every CA still valid, newest first */
	size_t	 ca_len;
	char	*cert_pem;		/* the serving certificate */
	size_t	 cert_len;
	char	*key_pem;		/* its key (a secret: wiped when released) */
	size_t	 key_len;
	time_t	 leaf_not_after;
	time_t	 renew_at;		/* the next two-thirds mark, leaf or CA */
	bool	 rotated_ca;		/* this plan made a new CA */
	bool	 issued_leaf;		/* ... or a new leaf */
	bool	 patched_crd;		/* certs_sync() wrote a CRD's caBundle */
};

/* Frees what 'r' holds (wiping the key) and zeroes it. */
void	certs_result_release(struct certs_result *r);

/*
 * Decides what the Secret must hold at 'now' (unix seconds): 'secret' is
 * the Secret as read, or NULL when there is none. A Secret whose data is
 * missing, does not parse, or whose ca.key does not match its first CA
 * is started afresh. '*ret_secret' is the Secret to write (a new tree,
 * keeping metadata.resourceVersion for an update), or NULL when 'secret'
 * is already right. 'ret' is filled in both cases. -ENOMEM, KC_ETLS.
 */
int	certs_plan(const struct certs_opts *opts, const struct json_object *secret,
	    time_t now, struct json_object **ret_secret, struct certs_result *ret,
	    struct kc_status *st) _must_check_;

/*
 * Reads the Secret, plans, creates or updates it (creating when absent;
 * when another replica won the race, KC_EEXISTS or KC_ECONFLICT, reads it
 * again and plans again, up to CERTS_TRIES times), then writes the bundle
 * into each CRD of opts->crds whose conversion strategy is Webhook and
 * whose caBundle differs (a JSON merge patch; a CRD that does not exist
 * yet is skipped), and into each webhook calling a Service of the
 * admission webhook configurations of opts->webhook_configs (a JSON
 * patch on the resourceVersion read; one that does not exist is skipped). 0 with 'ret' filled; a client error with the step in
 * 'st'.
 */
int	certs_sync(struct kc_client *cl, const struct certs_opts *opts, time_t now,
	    struct certs_result *ret, struct kc_status *st) _must_check_;

struct certs_runner;

struct certs_runner_opts {
	struct certs_opts	 certs;
	const struct kc_rest_config *rc;	/* the thread's own client */
	struct webhook		*webhook;	/* serves the leaf; may be NULL */
	const char		*cert_dir;	/* also writes tls.crt/tls.key; may be NULL */
	const char		*ca_file;	/* also writes the bundle there; may be NULL */
};

/*
 * Runs certs_sync() on a thread of its own: at once, then at each
 * renew_at and at least every 15 s (so a Secret changed by another
 * replica, or a CRD re-applied without its caBundle, is picked up), retrying failures after 10 s doubling to 5 min (each
 * logged as a warning). Returns at once, so a slow API server never holds
 * up the start. 0; -ENOMEM, errors of kc_client_new(), or -errno when the
 * thread cannot start (then '*ret' is NULL).
 */
int	certs_start(const struct certs_runner_opts *opts, struct certs_runner **ret,
	    struct kc_status *st) _must_check_;

/* Stops the thread and frees everything. NULL is fine; returns NULL. */
struct certs_runner *certs_stop(struct certs_runner *);

#endif

/*
 * X.509 certificates for the devcluster and the tests: a CA, serving
 * certificates with DNS and IP subject alternative names, and client
 * certificates that name a Kubernetes user (CN) and groups (O), all as
 * PEM text so they can be written to files, put in a kubeconfig, or
 * handed to libcurl and libwebsockets as memory blobs.
 *
 *	struct kc_cert_pair *ca = NULL, *srv = NULL;
 *
 *	r = kc_cert_create(&(struct kc_cert_opts){
 *		.cn = "trainyard-devcluster-ca", .is_ca = true,
 *	}, NULL, &ca, &st);
 *	r = kc_cert_create(&(struct kc_cert_opts){
 *		.cn = "devcluster", .server = true,
 *		.dns = (const char *const []){ "localhost", NULL },
 *		.ips = (const char *const []){ "127.0.0.1", "::1", NULL },
 *	}, ca, &srv, &st);
 *
 * Keys are EC P-256 unless RSA-2048 is asked for, written as PKCS#8 PEM
 * ("BEGIN PRIVATE KEY"); signatures are SHA-256. Every function is
 * thread-safe (OpenSSL 3 needs no locking set up).
 */
#ifndef KC_CERT_H
#define KC_CERT_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <kc/err.h>
#include <kc/macro.h>

/* Largest certificate or key text accepted. */
#define KC_CERT_PEM_MAX		(1u << 20)
/* Most names of each kind (O, DNS, IP) in a certificate made or read. */
#define KC_CERT_NAMES_MAX	64
/* "AB:CD:...": SHA-256 as 32 colon-separated hex pairs, and the NUL. */
#define KC_CERT_FINGERPRINT_MAX	96

enum kc_key_type {
	KC_KEY_EC_P256 = 0,
	KC_KEY_RSA_2048,
};

#define KC_CERT_SECONDS_MAX	86400	/* kc_cert_opts.seconds */

struct kc_cert_opts {
	const char		*cn;	/* subject CN: required (the user) */
	const char *const	*orgs;	/* subject O, NULL-terminated (groups) */
	const char *const	*dns;	/* SAN DNS names, NULL-terminated */
	const char *const	*ips;	/* SAN IPs, "127.0.0.1" or "::1" */
	unsigned		 days;	/* validity; 0: 365, at most 36500 */
	/*
	 * Validity in seconds instead of days when not 0, for tests that
	 * watch certificates expire: at most KC_CERT_SECONDS_MAX (a day),
	 * 'days' must then be 0.
	 */
	unsigned		 seconds;
	bool			 is_ca;	/* may sign certificates */
	bool			 server;	/* extKeyUsage serverAuth */
	bool			 client;	/* extKeyUsage clientAuth */
	enum kc_key_type	 key_type;
	time_t			 now;	/* validity counts from here; 0: the clock */
};

/* A certificate and its private key, both PEM and NUL-terminated. */
struct kc_cert_pair {
	char	*cert_pem;
	size_t	 cert_pem_len;
	char	*key_pem;		/* a secret: wiped when freed */
	size_t	 key_pem_len;
};

/*
 * Creates a key and a certificate for it, signed by 'issuer' (a pair
 * whose certificate is a CA and whose key matches it), or self-signed
 * when 'issuer' is NULL. The certificate is valid from an hour before
 * opts->now (the wall clock when 0), for clock skew, until opts->days
 * after it (with opts->seconds: from a tenth of them before, at most an
 * hour, until opts->seconds after), and has a random 128-bit serial number, a
 * subject key identifier and, when issued, an authority key identifier.
 * A CA gets basicConstraints CA:TRUE and keyUsage keyCertSign; a leaf
 * gets CA:FALSE and digitalSignature (plus keyEncipherment for RSA).
 *
 * Errors: -EINVAL for bad options (no CN, a CN or O over 64 bytes, a DNS
 * name that is not a host name, an IP that does not parse, too many
 * names, an issuer that is not a CA or whose key does not match),
 * KC_EPARSE for an issuer whose PEM does not parse, KC_ETLS when OpenSSL
 * fails, -ENOMEM. 'st' says which. *ret is the caller's, freed with
 * kc_cert_pair_free().
 */
int	kc_cert_create(const struct kc_cert_opts *opts,
	    const struct kc_cert_pair *issuer, struct kc_cert_pair **ret,
	    struct kc_status *st) _must_check_;

/*
 * A pair from PEM text (say a CA read back from the devcluster's data
 * dir): checks that the certificate and the key parse and belong
 * together, and copies both. 'cert_pem' may hold a chain; the first
 * certificate is the one the key must match. KC_EPARSE for text that
 * does not parse, -EINVAL for a key that does not match, -E2BIG past
 * KC_CERT_PEM_MAX.
 */
int	kc_cert_pair_load(const char *cert_pem, size_t cert_len,
	    const char *key_pem, size_t key_len, struct kc_cert_pair **ret,
	    struct kc_status *st) _must_check_;

/* kc_cert_pair_load() from two files; -errno when one cannot be read. */
int	kc_cert_pair_read(const char *cert_path, const char *key_path,
	    struct kc_cert_pair **ret, struct kc_status *st) _must_check_;

/*
 * Writes the certificate (mode 0644) and the key (mode 0600) atomically
 * (kc_write_file_atomic()). -errno on failure, with the path in 'st'.
 */
int	kc_cert_pair_write(const struct kc_cert_pair *pair, const char *cert_path,
	    const char *key_path, struct kc_status *st) _must_check_;

/* Frees a pair, wiping the key. NULL is fine; returns NULL. */
struct kc_cert_pair *kc_cert_pair_free(struct kc_cert_pair *);

KC_DEFINE_CLEANUP(struct kc_cert_pair, kc_cert_pair_free)

/* What a certificate says, as the devcluster's authenticator reads it. */
struct kc_cert_info {
	char	*cn;		/* subject CN (the user); NULL when absent */
	char	**orgs;		/* subject O values (groups), NULL-terminated */
	char	**dns;		/* SAN DNS names, NULL-terminated */
	char	**ips;		/* SAN IPs as text, NULL-terminated */
	time_t	 not_before;
	time_t	 not_after;
	bool	 is_ca;
	char	 fingerprint[KC_CERT_FINGERPRINT_MAX];	/* SHA-256 of the DER */
};

/*
 * Reads the first certificate of PEM text, or a DER certificate (as a
 * TLS library hands over a peer's), into a new info. The lists are never
 * NULL (empty lists hold just the NULL). KC_EPARSE for input that is not
 * a certificate, or whose CN or O holds a NUL byte or is not UTF-8;
 * -E2BIG past KC_CERT_PEM_MAX or KC_CERT_NAMES_MAX names of a kind.
 */
int	kc_cert_info_read(const void *data, size_t len, struct kc_cert_info **ret,
	    struct kc_status *st) _must_check_;

/* NULL is fine; returns NULL. */
struct kc_cert_info *kc_cert_info_free(struct kc_cert_info *);

KC_DEFINE_CLEANUP(struct kc_cert_info, kc_cert_info_free)

/*
 * Verifies that the first certificate of 'cert_pem' chains to one of the
 * CA certificates of 'ca_pem' and is valid now (purpose not checked).
 * 0, KC_ETLS with OpenSSL's reason ("certificate has expired") when it
 * does not verify, KC_EPARSE for text that does not parse.
 */
int	kc_cert_verify(const char *cert_pem, size_t cert_len, const char *ca_pem,
	    size_t ca_len, struct kc_status *st) _must_check_;

#endif

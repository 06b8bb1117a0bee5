/*
 * Client configuration: kubeconfig files and in-cluster service accounts.
 *
 * Both produce a struct kc_rest_config, everything a transport needs to
 * reach one API server as one identity. File-based material (CA,
 * client certificate and key) is read at load time, so a bad path is
 * reported by the load with the file and field that named it; a token
 * file is kept as a path, because bound service-account tokens rotate and
 * the transport re-reads it when it changes (kc_rest_config_token()).
 */
#ifndef KC_KUBECONFIG_H
#define KC_KUBECONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <kc/err.h>
#include <kc/macro.h>

/* Largest kubeconfig or credential file read. */
#define KC_KUBECONFIG_MAX	(4u << 20)

struct kc_rest_config {
	char	*server;		/* "https://host:port", no trailing '/' */
	char	*tls_server_name;	/* SNI and verification name; NULL: host */
	char	*ca_pem;		/* PEM bundle, NUL-terminated; NULL: system */
	size_t	 ca_pem_len;
	bool	 insecure_skip_tls_verify;
	char	*cert_pem;		/* client certificate, PEM */
	size_t	 cert_pem_len;
	char	*key_pem;		/* client key, PEM (a secret) */
	size_t	 key_pem_len;
	char	*token;			/* bearer token (a secret) */
	char	*token_file;		/* re-read when its mtime or size changes */
	char	*username;		/* basic auth, rarely used */
	char	*password;
	char	*impersonate_user;	/* "as" */
	char	**impersonate_groups;	/* "as-groups", NULL-terminated */
	char	*namespace;		/* the context's, or "default" */
	char	*context;		/* the context used; NULL in-cluster */
	char	*cluster;		/* its cluster and user names */
	char	*user;

	/* The token file's last read, for kc_rest_config_token(). */
	char	*token_cache;
	time_t	 token_mtime;
	off_t	 token_size;
};

struct kc_kubeconfig_opts {
	/*
	 * Files to merge, in order, as kubectl merges KUBECONFIG: for maps
	 * (clusters, users, contexts) the first file to name an entry wins;
	 * current-context comes from the first file that sets it. NULL: read
	 * $KUBECONFIG (colon-separated), else ~/.kube/config.
	 */
	const char	*const *paths;
	size_t		 npaths;
	const char	*context;	/* --context; NULL: current-context */
	const char	*cluster;	/* --cluster override; NULL: the context's */
	const char	*user;		/* --user override */
	const char	*namespace;	/* --namespace override */
};

/*
 * Loads kubeconfig files into a new rest config. Errors: -ENOENT when no
 * file exists at all, KC_EPARSE for YAML that does not parse, KC_ECONFIG
 * for a missing context/cluster/user or a bad field, -errno for a
 * credential file that cannot be read. 'st' names the file and field,
 * e.g. "/home/a/.kube/config: users[0].user.client-key: No such file".
 */
int	kc_kubeconfig_load(const struct kc_kubeconfig_opts *opts,
	    struct kc_rest_config **ret, struct kc_status *st) _must_check_;

/* Where the in-cluster files live; tests point these elsewhere. */
struct kc_incluster_opts {
	const char	*token_file;	/* default /var/run/secrets/kubernetes.io/serviceaccount/token */
	const char	*ca_file;	/* default .../serviceaccount/ca.crt */
	const char	*namespace_file;	/* default .../serviceaccount/namespace */
	const char	*host;		/* default $KUBERNETES_SERVICE_HOST */
	const char	*port;		/* default $KUBERNETES_SERVICE_PORT */
};

/*
 * The in-cluster config of a pod's service account. KC_ECONFIG when
 * KUBERNETES_SERVICE_HOST/PORT are unset (not in a cluster); -errno when
 * the token or CA cannot be read. An IPv6 host is bracketed in the URL.
 * 'opts' may be NULL.
 */
int	kc_incluster_load(const struct kc_incluster_opts *opts,
	    struct kc_rest_config **ret, struct kc_status *st) _must_check_;

/*
 * The config a program uses: 'kubeconfig_path' when given, else
 * $KUBECONFIG when set, else in-cluster when KUBERNETES_SERVICE_HOST is
 * set, else ~/.kube/config.
 */
int	kc_rest_config_load_default(const char *kubeconfig_path, const char *context,
	    struct kc_rest_config **ret, struct kc_status *st) _must_check_;

/*
 * The bearer token to send now: the static token, or the token file's
 * contents (trailing white space trimmed), re-read when the file's mtime
 * or size changed since the last read. On success *ret is NULL (no token)
 * or a string owned by 'rc', valid until the next call; not thread-safe
 * (each client owns its own config copy). If a re-read fails the last
 * good token is kept and returned.
 */
int	kc_rest_config_token(struct kc_rest_config *rc, const char **ret,
	    struct kc_status *st) _must_check_;

/* A deep copy, so each client (and thread) owns one. */
int	kc_rest_config_copy(const struct kc_rest_config *rc,
	    struct kc_rest_config **ret) _must_check_;

/* Frees everything, wiping secrets first. NULL is fine; returns NULL. */
struct kc_rest_config *kc_rest_config_free(struct kc_rest_config *);

KC_DEFINE_CLEANUP(struct kc_rest_config, kc_rest_config_free)

#endif

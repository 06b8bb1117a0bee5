/*
 * Client configuration: kubeconfig files and in-cluster service accounts.
 *
 * Both produce a struct kc_rest_config, everything a transport needs to
 * reach one API server as one identity. File-based material (CA,
 * client certificate and key) is read at load time, so a bad path is
 * reported by the load with the file and field that named it; a token
 * file is read at load time too (a missing one is an error there, unless
 * the user also has a static token to fall back on, as in client-go) and
 * kept as a path, because bound service-account tokens rotate and the
 * transport re-reads it when it changes (kc_rest_config_token()).
 *
 *	struct kc_rest_config *rc = NULL;
 *	struct kc_status st = { 0 };
 *	const char *token;
 *
 *	if ((r = kc_rest_config_load_default(flag_kubeconfig, flag_context,
 *	    &rc, &st)) < 0)
 *		fatal("kubeconfig: %s", st.message);
 *	...
 *	if ((r = kc_rest_config_token(rc, &token, &st)) < 0)	(per request)
 *		return r;
 */
#ifndef KC_KUBECONFIG_H
#define KC_KUBECONFIG_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <kc/err.h>
#include <kc/macro.h>

/* Largest kubeconfig or credential file read. */
#define KC_KUBECONFIG_MAX	(4u << 20)

/* Most files merged from one KUBECONFIG list (duplicates count once). */
#define KC_KUBECONFIG_FILES_MAX	64

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
	char	**impersonate_groups;	/* "as-groups", NULL-terminated; NULL: none */
	char	*namespace;		/* the context's, or "default" */
	char	*context;		/* the context used; NULL in-cluster */
	char	*cluster;		/* its cluster and user names */
	char	*user;			/* NULL in-cluster or for a context without one */

	/*
	 * The token file's last good read, for kc_rest_config_token(): the
	 * trimmed token (a secret) and the file's identity when it was read.
	 */
	char	*token_cache;
	time_t	 token_mtime;
	long	 token_mtime_nsec;
	off_t	 token_size;
	ino_t	 token_ino;
};

struct kc_kubeconfig_opts {
	/*
	 * Files to merge, in order, as kubectl merges KUBECONFIG: for maps
	 * (clusters, users, contexts) the first file to name an entry wins,
	 * whole; current-context comes from the first file that sets it.
	 * Files that do not exist are skipped, but at least one must. NULL
	 * (or npaths 0): $KUBECONFIG (colon-separated, same rules), else
	 * $HOME/.kube/config.
	 */
	const char	*const *paths;
	size_t		 npaths;
	const char	*context;	/* --context; NULL: current-context */
	const char	*cluster;	/* --cluster override; NULL: the context's */
	const char	*user;		/* --user override; NULL: the context's */
	const char	*namespace;	/* --namespace override */
};

/*
 * Loads kubeconfig files into a new rest config (free it with
 * kc_rest_config_free()). 'opts' may be NULL for the defaults.
 *
 * Relative paths in a cluster or user entry (certificate-authority,
 * client-certificate, client-key, tokenFile) are resolved against the
 * directory of the file that holds the entry, as kubectl does. The
 * "-data" forms hold base64 and take no file; giving both forms of one
 * field is an error, as are a client certificate without its key, a
 * token together with basic auth, a CA with insecure-skip-tls-verify, and
 * "as-groups" without "as". "exec" and "auth-provider" credential
 * plugins are not supported.
 *
 * Errors: -ENOENT when no file exists at all, KC_EPARSE for YAML that
 * does not parse (st names the file, line and column), KC_ECONFIG for a
 * missing context, cluster or user, a bad or unsupported field, -E2BIG
 * for a file over KC_KUBECONFIG_MAX, -errno for a file that cannot be
 * read, -ENOMEM. 'st' names the file and field, e.g.
 * "/home/a/.kube/config: users[\"alice\"].client-key: /home/a/k.pem: No
 * such file or directory" or "contexts: context \"dev\" not found".
 * '*ret' is untouched on failure. Reads the environment; otherwise
 * thread-safe.
 */
int	kc_kubeconfig_load(const struct kc_kubeconfig_opts *opts,
	    struct kc_rest_config **ret, struct kc_status *st) _must_check_;

/*
 * Where the in-cluster files live; tests point these elsewhere. The
 * defaults are in /var/run/secrets/kubernetes.io/serviceaccount/.
 */
struct kc_incluster_opts {
	const char	*token_file;	/* default .../serviceaccount/token */
	const char	*ca_file;	/* default .../serviceaccount/ca.crt */
	const char	*namespace_file;	/* default .../serviceaccount/namespace */
	const char	*host;		/* default $KUBERNETES_SERVICE_HOST */
	const char	*port;		/* default $KUBERNETES_SERVICE_PORT */
};

/*
 * The in-cluster config of a pod's service account: server
 * "https://host:port" (an IPv6 host bracketed), the token file (read now
 * and re-read as it rotates), the CA, and the namespace file's namespace
 * ("default" when it cannot be read). KC_ECONFIG when the host or port is
 * unset (not in a cluster) or malformed; -errno (or KC_ECONFIG for an
 * empty token) when the token or CA cannot be read. 'opts' may be NULL.
 * '*ret' is untouched on failure.
 */
int	kc_incluster_load(const struct kc_incluster_opts *opts,
	    struct kc_rest_config **ret, struct kc_status *st) _must_check_;

/*
 * The config a program uses: 'kubeconfig_path' when given (non-empty),
 * else $KUBECONFIG when set, else in-cluster when KUBERNETES_SERVICE_HOST
 * is set, else $HOME/.kube/config. 'context' (may be NULL) picks the
 * context of a kubeconfig; it is ignored in-cluster. Errors as for
 * kc_kubeconfig_load() and kc_incluster_load().
 */
int	kc_rest_config_load_default(const char *kubeconfig_path, const char *context,
	    struct kc_rest_config **ret, struct kc_status *st) _must_check_;

/*
 * The bearer token to send now. With a token file: its contents (white
 * space trimmed), re-read when the file's mtime, size or inode changed
 * since the last read; if a re-read fails (the file is gone, unreadable
 * or empty) the last good token is kept and returned, else the static
 * token, else the error. Without one: the static token. On success *ret
 * is NULL (no token) or a string owned by 'rc', valid until the next call
 * or kc_rest_config_free(). Not thread-safe: each client owns its own
 * config copy.
 */
int	kc_rest_config_token(struct kc_rest_config *rc, const char **ret,
	    struct kc_status *st) _must_check_;

/*
 * A deep copy, so each client (and thread) owns one. 0 or -ENOMEM ('*ret'
 * untouched). Safe to call concurrently on one 'rc' nobody modifies.
 */
int	kc_rest_config_copy(const struct kc_rest_config *rc,
	    struct kc_rest_config **ret) _must_check_;

/* Frees everything, wiping secrets first. NULL is fine; returns NULL. */
struct kc_rest_config *kc_rest_config_free(struct kc_rest_config *);

KC_DEFINE_CLEANUP(struct kc_rest_config, kc_rest_config_free)

#endif

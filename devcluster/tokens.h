/*
 * tokens.h: the tokens plug-in, service-account tokens.
 * What other files need from tokens.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_TOKENS_H
#define DEVCLUSTER_TOKENS_H

#include "devcluster.h"

extern const struct dc_plugin tokens_plugin;

#define TOKENS_ISSUER		"https://kubernetes.default.svc.cluster.local"
#define TOKENS_KEY_FILE		"sa.key"	/* in the data dir, mode 0600 */
#define TOKENS_JWT_MAX		8192		/* longest bearer token parsed */

struct tokens_opts {
	const char	*data_dir;		/* keeps sa.key; NULL: a key in memory */
	const char	*key_pem;		/* this RSA key instead (tests) */
	const char	*ca_pem;		/* ca.crt of token Secrets; NULL: none */
	uint64_t	 max_expiration_s;	/* upstream's cap flag; 0: none */
};

/*
 * Service-account tokens: loads (or makes and saves) the signing key,
 * answers serviceaccounts/token through ops_serviceaccount, installs the
 * JWT verifier in auth.c, and creates the default ClusterRole and
 * binding system:service-account-issuer-discovery when missing (unless
 * opts.no_bootstrap), and runs the token controller: Secrets of type
 * kubernetes.io/service-account-token naming a service account get a
 * legacy token, ca.crt and namespace (and are deleted with it). 0,
 * KC_ECONFIG with the reason in 'st' for an unreadable or unusable
 * sa.key, or -ENOMEM. State in plugin_state(dc, &tokens_plugin);
 * tokens_fini() stops it (harmless when not initialised).
 */
int	 tokens_init(struct dc *, const struct tokens_opts *, struct kc_status *st)
	    _must_check_;
void	 tokens_fini(struct dc *);
/* The type hooks of v1 ServiceAccount (the token subresource). */
extern const struct dc_type_ops ops_serviceaccount;
/*
 * Verifies a service-account JWT for 'audiences' (NULL: the API audience)
 * into 'user' (auth_verify_fn's contract): its audiences among those
 * asked, and the extra upstream gives (pod-name, pod-uid; from 1.30 also
 * credential-id and node-name, node-uid). 0, KC_EUNAUTHORIZED ("token
 * audiences [...] is invalid for the target audiences [...]" in 'err'
 * when the audiences do not meet), DC_DECLINED for a token that is not
 * ours, -ENOMEM.
 */
int	 tokens_verify(struct dc *, const char *token, const char *const *audiences,
	    struct dc_user *user, char *err, size_t errsize) _must_check_;
/*
 * Issues a token for ns/name valid 'exp_s' seconds from kc_clock_wall(),
 * optionally bound to a Pod, Secret or Node (tests, tools): 0 with a new
 * string in '*ret', KC_ENOTFOUND, another KC_E* code, -EINVAL without
 * tokens_init(), -ENOMEM.
 */
int	 tokens_issue(struct dc *, const char *ns, const char *name, int64_t exp_s,
	    const char *bound_kind, const char *bound_name, char **ret) _must_check_;
/* The signing key's id (the JWT "kid"), or NULL without tokens_init(). */
const char *tokens_kid(const struct dc *);

#endif

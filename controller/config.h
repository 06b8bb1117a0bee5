/*
 * config.h: trainyard-controller's configuration (struct ty_config).
 *
 * Everything that is not a secret: the coscheduling scheduler, the PodGroup
 * API, the cluster domain, extra NetworkPolicy ingress peers, the default
 * PriorityClasses, how long pods tolerate a dead node, restart backoff,
 * workers, API rate limits, leader election, listen addresses and logging.
 * Defaults come from config_defaults(); a YAML file (apiVersion
 * trainyard.dev/v1alpha1, kind ControllerConfig, docs/api.md) is applied
 * over them by config_load(); flags are applied last by config_set_flag(),
 * then config_validate() checks the fields that depend on each other.
 *
 * Every setter validates its value and reports "KEY: reason"; config_load()
 * prefixes the file name, so a bad file fails at start with
 * "/etc/trainyard/config.yaml: leaderElection.renewDeadline: must be less
 * than leaderElection.leaseDuration (15s)".
 *
 * A ty_config is plain data plus one json-c tree (the peers), owned by the
 * struct and released by config_release(). Once loaded it is read-only and
 * may be shared between threads.
 */
#ifndef TY_CONFIG_H
#define TY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <kc/err.h>
#include <kc/log.h>
#include <kc/macro.h>

#define TY_CONFIG_API_VERSION	"trainyard.dev/v1alpha1"
#define TY_CONFIG_KIND		"ControllerConfig"
#define TY_CONFIG_FILE_MAX	(1u << 20)	/* bytes of a config file */
#define TY_CONFIG_PEERS_MAX	32		/* extra NetworkPolicy peers */

#define TY_SUBDOMAIN_MAX	254	/* a DNS-1123 subdomain and its NUL */
#define TY_LABEL_MAX		64	/* a DNS-1123 label and its NUL */
#define TY_ADDR_MAX		256	/* "HOST:PORT" and its NUL */
#define TY_PATH_MAX		1024	/* a file or directory path and its NUL */

enum ty_podgroup_api {
	TY_PODGROUP_AUTO,	/* discovery decides: x-k8s.io, then sigs.k8s.io */
	TY_PODGROUP_X_K8S,	/* scheduling.x-k8s.io/v1alpha1 */
	TY_PODGROUP_SIGS_K8S,	/* scheduling.sigs.k8s.io/v1alpha1 (older) */
	TY_PODGROUP_NONE,	/* no gang scheduling */
};

/* Where the webhook's serving certificate comes from. */
enum ty_cert_mode {
	TY_CERT_FILES,		/* tls.crt, tls.key in webhook.certDir (cert-manager) */
	TY_CERT_SELF,		/* the controller's own CA, in webhook.secretName */
};

struct ty_webhook_config {
	char		 bind_address[TY_ADDR_MAX];	/* "", "0": off */
	char		 cert_dir[TY_PATH_MAX];
	enum ty_cert_mode cert_mode;
	char		 service[TY_LABEL_MAX];		/* its Service, for the SAN */
	char		 secret[TY_SUBDOMAIN_MAX];	/* self: the Secret */
	/*
	 * Tests only (self): the CA lives this long and the serving
	 * certificate half of it, instead of a year and seven days; 0 for
	 * those. TY_CERT_TEST_LIFETIME_MIN..TY_CERT_TEST_LIFETIME_MAX.
	 */
	uint64_t	 cert_lifetime_for_testing_ms;
};

#define TY_CERT_TEST_LIFETIME_MIN	(30 * 1000ull)		/* half a minute */
#define TY_CERT_TEST_LIFETIME_MAX	(24 * 3600 * 1000ull)	/* a day */

struct ty_leader_config {
	bool		 enabled;
	char		 ns[TY_LABEL_MAX];
	char		 id[TY_SUBDOMAIN_MAX];		/* the Lease's name */
	uint64_t	 lease_duration_ms;
	uint64_t	 renew_deadline_ms;
	uint64_t	 retry_period_ms;
};

struct ty_config {
	char			 scheduler_name[TY_SUBDOMAIN_MAX];
	enum ty_podgroup_api	 podgroup_api;
	char			 cluster_domain[TY_SUBDOMAIN_MAX];
	/* NetworkPolicyPeer objects (a json-c array, owned) or NULL for none. */
	struct json_object	*ingress_peers;
	char			 default_priority_class[TY_SUBDOMAIN_MAX];
	char			 preemptible_priority_class[TY_SUBDOMAIN_MAX];
	uint32_t		 node_failure_toleration_s;
	uint64_t		 restart_backoff_base_ms;
	uint64_t		 restart_backoff_max_ms;
	unsigned		 workers;
	double			 kube_api_qps;
	unsigned		 kube_api_burst;
	struct ty_leader_config	 leader;
	char			 metrics_bind_address[TY_ADDR_MAX];	/* "0": off */
	char			 health_probe_bind_address[TY_ADDR_MAX];
	bool			 metrics_secure;	/* HTTPS, TokenReview, SAR */
	struct ty_webhook_config webhook;
	enum kc_log_level	 log_level;
	enum kc_log_format	 log_format;
	char			 watch_namespace[TY_LABEL_MAX];	/* "": all */
	uint64_t		 api_discovery_interval_ms;	/* served versions */
};

/*
 * Fills 'cfg' with the defaults (docs/api.md lists them): scheduler
 * "scheduler-plugins-scheduler", podGroupAPI auto, "cluster.local", no
 * extra peers, "trainyard-default" and "trainyard-preemptible", 30 s node
 * failure toleration, restart backoff 10 s doubling to 5 min, 4 workers,
 * 100 QPS with a burst of 200, leader election off (trainyard-system,
 * trainyard-controller, 15 s / 10 s / 2 s), ":8080", ":8081", info, text,
 * all namespaces, metrics over plain HTTP, the webhook on ":9443" with
 * the files of /tmp/k8s-webhook-server/serving-certs, Service
 * trainyard-webhook, Secret trainyard-webhook-certs, the served versions
 * of trainyard.dev looked up every 30 s. Never fails; overwrites 'cfg'
 * without releasing it.
 */
void	config_defaults(struct ty_config *cfg);

/* Releases what 'cfg' owns (the peers); it may then be filled again. */
void	config_release(struct ty_config *cfg);

/*
 * Reads the YAML file 'path' and applies it over 'cfg' (usually the
 * defaults), then runs config_validate(). The file must hold one
 * ControllerConfig document; unknown keys, wrong types and bad values are
 * KC_ECONFIG with "PATH: KEY: reason" in st->message (a YAML syntax error
 * gives "PATH: line L, column C: ..."). A missing or unreadable file is
 * -errno (or -E2BIG past TY_CONFIG_FILE_MAX) with "PATH: reason". On
 * failure 'cfg' is unchanged. -ENOMEM on allocation failure.
 */
int	config_load(struct ty_config *cfg, const char *path, struct kc_status *st)
	    _must_check_;

/*
 * As config_load() for text already in memory; 'name' stands for the file
 * in messages.
 */
int	config_parse(struct ty_config *cfg, const char *text, size_t len,
	    const char *name, struct kc_status *st) _must_check_;

/*
 * Sets one key from a command-line flag value: 'key' is the file's key
 * ("workers", "leaderElection.enabled", "kubeAPIQPS"), 'value' its text
 * ("8", "true", "15s"). String keys take the text as it is; others read
 * it as a YAML scalar. KC_ECONFIG with "KEY: reason" for an unknown key, a
 * key that takes a list (networkPolicyPeers) or a bad value, and then
 * 'cfg' is unchanged. Call config_validate() after the last flag.
 */
int	config_set_flag(struct ty_config *cfg, const char *key, const char *value,
	    struct kc_status *st) _must_check_;

/*
 * Checks the rules between fields: renewDeadline < leaseDuration,
 * retryPeriod * 1.2 < renewDeadline (client-go's), restartBackoff.base <=
 * restartBackoff.max. KC_ECONFIG with "KEY: reason" when one fails.
 */
int	config_validate(const struct ty_config *cfg, struct kc_status *st) _must_check_;

/* "files" or "self". */
const char *config_cert_mode_name(enum ty_cert_mode mode);

/* "auto", "scheduling.x-k8s.io", "scheduling.sigs.k8s.io" or "none". */
const char *config_podgroup_api_name(enum ty_podgroup_api api);

#endif

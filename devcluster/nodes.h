/*
 * nodes.h: the nodes plug-in, simulated nodes and the node controllers.
 * What other files need from nodes.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_NODES_H
#define DEVCLUSTER_NODES_H

#include "devcluster.h"

extern const struct dc_plugin nodes_plugin;

#define NODES_ANN_KUBELET	"devcluster.trainyard.dev/kubelet"	/* "stopped" */
#define NODES_CLUSTER_CIDR	"10.244.0.0/16"	/* --cluster-cidr */
#define NODES_GRACE_MS		40000	/* --node-monitor-grace-period */
#define NODES_STARTUP_GRACE_MS	60000	/* --node-startup-grace-period */
#define NODES_MONITOR_MS	5000	/* --node-monitor-period */
#define NODES_LEASE_RENEW_MS	10000	/* the kubelet's lease renew interval */
#define NODES_STATUS_REPORT_MS	300000	/* nodeStatusReportFrequency */
#define NODES_PODGC_QUARANTINE_MS 1000	/* upstream's is 40 s */
#define NODES_TOLERATION_S	300	/* --default-*-toleration-seconds */
#define NODES_KERNEL_VERSION	"6.8.0-devcluster"
#define NODES_OS_IMAGE		"Ubuntu 22.04.5 LTS"
#define NODES_RUNTIME_VERSION	"containerd://1.7.24"
/* Capacity of a node registered without any. */
#define NODES_DEFAULT_CPU	"8"
#define NODES_DEFAULT_MEMORY	"32Gi"
#define NODES_DEFAULT_STORAGE	"100Gi"
#define NODES_DEFAULT_PODS	"110"

/* Zero members take the defaults above. */
struct nodes_opts {
	const char	*cluster_cidr;		/* IPv4, /8 to /24 */
	uint64_t	 grace_ms;
	uint64_t	 startup_grace_ms;
	uint64_t	 monitor_ms;
	uint64_t	 lease_renew_ms;	/* 0: min(10 s, grace / 4) */
	uint64_t	 status_report_ms;
	uint64_t	 podgc_quarantine_ms;
	int64_t		 not_ready_toleration_s;	/* negative: 300 */
	int64_t		 unreachable_toleration_s;	/* negative: 300 */
};

/*
 * Starts the simulated kubelets (status, labels, Lease renewals, status
 * reports; not for nodes annotated NODES_ANN_KUBELET: stopped), node
 * IPAM, the node lifecycle controller (Unknown after the grace period,
 * condition and unschedulable taints, pods marked not Ready), taint
 * eviction, pod GC of pods on missing nodes, and the DefaultToleration-
 * Seconds admission (nodes_plugin.admit). Scans the stored nodes,
 * leases and pods first. 'opts' NULL: every default. 0, -EINVAL for a
 * bad cluster CIDR, -EEXIST when started already, -ENOMEM. State in
 * plugin_state(dc, &nodes_plugin); nodes_fini() stops it (harmless when not started).
 */
int	 nodes_init(struct dc *, const struct nodes_opts *opts) _must_check_;
void	 nodes_fini(struct dc *);
/* An IPv4 CIDR of prefix /8 to /24: its base (host order) and /24 blocks. */
int	 nodes_parse_cidr(const char *cidr, uint32_t *ret_base, uint32_t *ret_blocks)
	    _must_check_;
/*
 * DefaultTolerationSeconds on 'pod' (a private tree): adds the NoExecute
 * tolerations of node.kubernetes.io/not-ready and unreachable (operator
 * Exists, the opts' seconds) unless it already tolerates them. 0 or
 * -ENOMEM.
 */
int	 nodes_default_tolerations(const struct nodes_opts *, struct json_object *pod)
	    _must_check_;
/* Nodes known, and pods indexed under a node name (tests, diagnostics). */
size_t	 nodes_count(const struct dc *);
size_t	 nodes_pods_on(const struct dc *, const char *node);

#endif

/*
 * nodes.c: everything about Node objects in the devcluster: a simulated
 * kubelet per node, and the parts of kube-controller-manager and
 * kube-apiserver that look after nodes.
 *
 * The simulated kubelet (every node, unless annotated
 * devcluster.trainyard.dev/kubelet: stopped) registers the node as a real
 * one would: it fills what is missing of the status (addresses InternalIP
 * from 10.0.0.0/16 and Hostname, nodeInfo, daemonEndpoints, capacity and
 * allocatable, the conditions MemoryPressure, DiskPressure, PIDPressure
 * and Ready with the kubelet's reasons and messages) and the well-known
 * labels, keeps a Lease kube-node-lease/<node> renewed (one timer renews
 * every lease in a batch) and reports the node status again after
 * nodeStatusReportFrequency (5 minutes) or when something changed.
 * Conditions a client wrote (Ready False) are left alone; the kubelet
 * only replaces those the lifecycle controller marked Unknown, as a
 * kubelet that comes back does.
 *
 * The controllers: node IPAM gives each node a /24 of --cluster-cidr
 * (spec.podCIDR, spec.podCIDRs) in order, round robin as upstream's
 * cidrset, and releases it with the node. The node lifecycle controller
 * marks a node whose kubelet went quiet (no lease renewal or status
 * heartbeat for --node-monitor-grace-period) Unknown with reason
 * NodeStatusUnknown, maintains the taints of the node conditions
 * (not-ready and unreachable with NoSchedule and NoExecute, the pressure
 * taints, node.kubernetes.io/unschedulable for cordoned nodes) and marks
 * the pods of a node that stopped being Ready not Ready. The taint
 * eviction controller deletes the pods of a node with a NoExecute taint
 * they do not tolerate (DisruptionTarget DeletionByTaintManager, then a
 * graceful delete), those tolerating it for tolerationSeconds after that
 * long counted from the taint's timeAdded. Pod GC fails and deletes the
 * pods bound to a node that does not exist, after a short quarantine.
 * And the DefaultTolerationSeconds admission plug-in gives every new pod
 * the not-ready and unreachable NoExecute tolerations.
 *
 * Everything runs from storage events and loop timers, and writes
 * through storage as the real components write through the API. Nothing
 * holds a pointer to its own state across a write (a write delivers
 * events, which may free entries): passes copy the names they work on
 * first. After a restart the stored nodes, leases and pods are scanned:
 * every node counts as just heard from, so a restart shorter than the
 * grace period marks nothing Unknown, and the leases are renewed at once.
 *
 * Not simulated: the zone-aware eviction rate limits and the "all nodes
 * not ready" disruption mode of the lifecycle controller, the
 * out-of-service taint, images and volumes in the node status, and
 * IPv6 pod CIDRs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/hash.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>

#include "devcluster.h"
#include "nodes.h"
#include "plugins.h"

#define NODES_SYNC_DELAY_MS	20		/* coalescing delay after a change */
#define NODES_PODGC_CHECK_MS	20000		/* pod GC's gcCheckPeriod */
#define NODES_LEASE_NS		"kube-node-lease"
#define NODES_LEASE_SECONDS	40		/* nodeLeaseDurationSeconds */
#define NODES_KUBELET_PORT	10250
#define NODES_IP_MAX		65535u		/* 10.0.0.0/16, index 1..65534 */
#define NODES_MGR_KUBELET	"kubelet"
#define NODES_MGR_KCM		"kube-controller-manager"

#define TAINT_NOT_READY		"node.kubernetes.io/not-ready"
#define TAINT_UNREACHABLE	"node.kubernetes.io/unreachable"
#define TAINT_UNSCHEDULABLE	"node.kubernetes.io/unschedulable"

struct nent;

/* A pod bound to a node (hent.key is "ns/name"). */
struct npod {
	struct kc_hmap_node	 h;
	TAILQ_ENTRY(npod) link;
	struct nent	*node;
};

TAILQ_HEAD(npod_list, npod);

/*
 * A node name: a Node that exists ('present'), or one that pods name
 * while it does not (a ghost, for pod GC). Freed when neither.
 */
struct nent {
	struct kc_hmap_node	 h;
	struct npod_list pods;
	size_t		 npods;
	TAILQ_ENTRY(nent) all;		/* present nodes */
	TAILQ_ENTRY(nent) dirty_link;
	TAILQ_ENTRY(nent) ghost_link;
	bool		 present;
	bool		 dirty;
	bool		 ghost;
	bool		 stopped;	/* the kubelet annotation */
	bool		 tainted;	/* NoExecute taints: evictions to look at */
	bool		 not_ready;	/* Ready left True: mark its pods */
	uint64_t	 probe_ms;	/* last heard from its kubelet */
	uint64_t	 seen_ms;	/* first seen */
	uint64_t	 report_due_ms;	/* next status report */
	uint64_t	 gc_due_ms;	/* ghosts: end of the quarantine */
	int64_t		 evict_due;	/* wall seconds of the next eviction; 0 */
	char		*renew;		/* lease renewTime last seen */
	char		*heartbeat;	/* Ready lastHeartbeatTime last seen */
};

TAILQ_HEAD(nent_list, nent);

struct nodes {
	struct dc	*dc;
	struct nodes_opts opts;
	struct kc_hmap	 names;		/* struct nent */
	struct kc_hmap	 pods;		/* struct npod */
	struct nent_list all;
	struct nent_list dirty;
	struct nent_list ghosts;
	struct dc_timer	 sync_timer;
	struct dc_timer	 hb_timer;
	struct dc_timer	 monitor_timer;
	bool		 ticking;
	uint32_t	 cidr_base;	/* host order */
	uint32_t	 cidr_blocks;	/* /24 blocks */
	uint32_t	 cidr_next;	/* round robin candidate */
	bool		 cidr_warned;	/* "no pod CIDR left" was logged */
	uint8_t		*cidr_used;
	uint8_t		 ip_used[NODES_IP_MAX / 8 + 1];
	uint64_t	 event_seq;
};

/* A condition the kubelet reports, in its healthy state. */
struct kcond {
	const char	*type;
	const char	*status;
	const char	*reason;
	const char	*message;
};

static const struct kcond kubelet_conds[] = {
	{ "MemoryPressure", "False", "KubeletHasSufficientMemory",
	  "kubelet has sufficient memory available" },
	{ "DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure" },
	{ "PIDPressure", "False", "KubeletHasSufficientPID",
	  "kubelet has sufficient PID available" },
	{ "Ready", "True", "KubeletReady", "kubelet is posting ready status" },
};

/* Condition type and status -> the NoSchedule taint the controller keeps. */
static const struct {
	const char	*type;
	const char	*status;
	const char	*key;
} cond_taints[] = {
	{ "Ready", "False", TAINT_NOT_READY },
	{ "Ready", "Unknown", TAINT_UNREACHABLE },
	{ "MemoryPressure", "True", "node.kubernetes.io/memory-pressure" },
	{ "DiskPressure", "True", "node.kubernetes.io/disk-pressure" },
	{ "PIDPressure", "True", "node.kubernetes.io/pid-pressure" },
	{ "NetworkUnavailable", "True", "node.kubernetes.io/network-unavailable" },
};

/*
 * Small helpers
 */

static size_t
arr_len(const struct json_object *a)
{
	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static bool
str_eq(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* "" and NULL alike. */
static bool
str_same(const char *a, const char *b)
{
	return strcmp(a != NULL ? a : "", b != NULL ? b : "") == 0;
}

static void
logd(const char *action, const char *name, const char *what, int r)
{
	struct kc_log_ctx ctx = { .action = action, .name = name };

	if (r < 0)
		kc_log_debug(&ctx, "%s: %s", what, kc_strerror(r));
	else
		kc_log_debug(&ctx, "%s", what);
}

/*
 * metav1.MicroTime, as a lease's renewTime: one wall-clock reading, so
 * successive renewals never go backwards.
 */
static void
micro_timestamp(char buf[KC_TIME_MAX])
{
	if (kc_time_format_us(kc_clock_wall_us(), KC_TIME_MICRO, buf, KC_TIME_MAX) < 0)
		(void)kc_strlcpy(buf, "1970-01-01T00:00:00.000000Z", KC_TIME_MAX);
}

static const struct dc_rtype *
core_type(struct dc *dc, const char *plural)
{
	return registry_find(dc, "", "v1", plural);
}

static struct json_object *
find_cond(const struct json_object *obj, const char *type)
{
	struct json_object *conds = kc_json_get(obj, "status", "conditions");

	for (size_t i = 0; i < arr_len(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);

		if (str_eq(kc_json_str(c, "type"), type))
			return c;
	}
	return NULL;
}

static const char *
cond_status(const struct json_object *obj, const char *type)
{
	return kc_json_str(find_cond(obj, type), "status");
}

static bool
kubelet_stopped(const struct json_object *node)
{
	return str_eq(kc_json_str(node, "metadata", "annotations", NODES_ANN_KUBELET),
	    "stopped");
}

static int
set_strs(struct json_object *o, const char *const *kv, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		if (kc_json_set_str(o, kv[i], kv[i + 1]) < 0)
			return -ENOMEM;
	return 0;
}

/*
 * Writes 'next' (consumed) over the stored 'old' as 'manager' would. A
 * conflict or a deleted object is no error: the next pass looks again.
 */
static int
write_obj(struct nodes *ns, const struct dc_rtype *rt, const struct json_object *old,
    struct json_object *next, const char *sub, const char *manager)
{
	int r = api_update_object(ns->dc, rt, old, next, sub, manager);

	return r == KC_ECONFLICT || r == KC_ENOTFOUND ? 0 : r;
}

/* A core/v1 Event about 'obj' (a Pod or a Node; nodes' go to default). */
static int
record_event(struct nodes *ns, const struct json_object *obj, const char *kind,
    const char *type, const char *reason, const char *message, const char *component)
{
	struct api_event e = { .about = obj, .kind = kind, .type = type,
	    .reason = reason, .message = message, .component = component };

	e.stamp = (uint64_t)kc_clock_wall() * UINT64_C(1000000000) + ++ns->event_seq;
	return api_record_event(ns->dc, &e);
}

/* Copies of the keys of a list (passes work on names, not pointers). */
static int
names_of(struct nent_list *l, bool dirty_link, bool ghost_link, char ***ret, size_t *ret_n)
{
	struct nent *n;
	size_t cnt = 0, i = 0;
	char **v;

	*ret = NULL;
	*ret_n = 0;
	if (dirty_link)
		TAILQ_FOREACH(n, l, dirty_link)
			cnt++;
	else if (ghost_link)
		TAILQ_FOREACH(n, l, ghost_link)
			cnt++;
	else
		TAILQ_FOREACH(n, l, all)
			cnt++;
	if (cnt == 0)
		return 0;
	if ((v = kc_calloc(cnt, sizeof(*v))) == NULL)
		return -ENOMEM;
	if (dirty_link) {
		TAILQ_FOREACH(n, l, dirty_link)
			if ((v[i++] = kc_strdup(n->h.key)) == NULL)
				goto oom;
	} else if (ghost_link) {
		TAILQ_FOREACH(n, l, ghost_link)
			if ((v[i++] = kc_strdup(n->h.key)) == NULL)
				goto oom;
	} else {
		TAILQ_FOREACH(n, l, all)
			if ((v[i++] = kc_strdup(n->h.key)) == NULL)
				goto oom;
	}
	*ret = v;
	*ret_n = cnt;
	return 0;
oom:
	for (size_t j = 0; j < cnt; j++)
		kc_free(v[j]);
	kc_free(v);
	return -ENOMEM;
}

static void
names_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		kc_free(v[i]);
	kc_free(v);
}

/*
 * Address and pod CIDR allocation
 */

static bool
bit_get(const uint8_t *b, uint32_t i)
{
	return (b[i / 8] >> (i % 8)) & 1u;
}

static void
bit_set(uint8_t *b, uint32_t i, bool on)
{
	if (on)
		b[i / 8] |= (uint8_t)(1u << (i % 8));
	else
		b[i / 8] &= (uint8_t)~(1u << (i % 8));
}

/* The index of an InternalIP in 10.0.0.0/16, or 0. */
static uint32_t
ip_index(const char *addr)
{
	struct in_addr a;
	uint32_t h;

	if (addr == NULL || inet_pton(AF_INET, addr, &a) != 1)
		return 0;
	h = ntohl(a.s_addr);
	if ((h >> 16) != ((10u << 8) | 0u) || (h & 0xffffu) == 0 ||
	    (h & 0xffffu) >= NODES_IP_MAX)
		return 0;
	return h & 0xffffu;
}

static const char *
internal_ip(const struct json_object *node)
{
	struct json_object *as = kc_json_get(node, "status", "addresses");

	for (size_t i = 0; i < arr_len(as); i++) {
		struct json_object *a = json_object_array_get_idx(as, i);

		if (str_eq(kc_json_str(a, "type"), "InternalIP"))
			return kc_json_str(a, "address");
	}
	return NULL;
}

/* The /24 block of a pod CIDR in the cluster CIDR, or -1. */
static int64_t
cidr_index(const struct nodes *ns, const char *cidr)
{
	char ip[INET_ADDRSTRLEN + 8];
	const char *slash;
	struct in_addr a;
	uint32_t h;

	if (cidr == NULL || (slash = strchr(cidr, '/')) == NULL ||
	    (size_t)(slash - cidr) >= sizeof(ip) || strcmp(slash, "/24") != 0)
		return -1;
	memcpy(ip, cidr, (size_t)(slash - cidr));
	ip[slash - cidr] = '\0';
	if (inet_pton(AF_INET, ip, &a) != 1)
		return -1;
	h = ntohl(a.s_addr);
	if ((h & 0xffu) != 0 || h < ns->cidr_base ||
	    (h - ns->cidr_base) / 256 >= ns->cidr_blocks)
		return -1;
	return (int64_t)((h - ns->cidr_base) / 256);
}

static void
cidr_format(const struct nodes *ns, uint32_t block, char *buf, size_t size)
{
	uint32_t h = ns->cidr_base + block * 256;

	(void)snprintf(buf, size, "%u.%u.%u.0/24", h >> 24, (h >> 16) & 255, (h >> 8) & 255);
}

/* Marks (or releases) what a node object holds. */
static void
hold(struct nodes *ns, const struct json_object *node, bool on)
{
	int64_t b = cidr_index(ns, kc_json_str(node, "spec", "podCIDR"));
	uint32_t ip = ip_index(internal_ip(node));

	if (b >= 0)
		bit_set(ns->cidr_used, (uint32_t)b, on);
	if (ip != 0)
		bit_set(ns->ip_used, ip, on);
}

int
nodes_parse_cidr(const char *cidr, uint32_t *ret_base, uint32_t *ret_blocks)
{
	char ip[INET_ADDRSTRLEN + 8];
	const char *slash;
	struct in_addr a;
	uint32_t prefix, h;

	if (cidr == NULL || (slash = strchr(cidr, '/')) == NULL ||
	    (size_t)(slash - cidr) >= sizeof(ip))
		return -EINVAL;
	memcpy(ip, cidr, (size_t)(slash - cidr));
	ip[slash - cidr] = '\0';
	if (inet_pton(AF_INET, ip, &a) != 1 || kc_parse_u32(slash + 1, &prefix) < 0 ||
	    prefix < 8 || prefix > 24)
		return -EINVAL;
	h = ntohl(a.s_addr);
	if ((h & ((1u << (32 - prefix)) - 1)) != 0)
		return -EINVAL;
	*ret_base = h;
	*ret_blocks = 1u << (24 - prefix);
	return 0;
}

/*
 * State
 */

static struct nent *
nent_find(const struct nodes *ns, const char *name)
{
	return (struct nent *)(void *)kc_hmap_get(&ns->names, name);
}

static struct nent *
nent_get(struct nodes *ns, const char *name)
{
	struct nent *n = nent_find(ns, name);

	if (n != NULL)
		return n;
	if ((n = kc_calloc(1, sizeof(*n))) == NULL)
		return NULL;
	if ((n->h.key = kc_strdup(name)) == NULL || kc_hmap_put(&ns->names, &n->h) < 0) {
		kc_free(n->h.key);
		kc_free(n);
		return NULL;
	}
	TAILQ_INIT(&n->pods);
	return n;
}

static void
nent_free(struct nodes *ns, struct nent *n)
{
	if (n->dirty)
		TAILQ_REMOVE(&ns->dirty, n, dirty_link);
	if (n->ghost)
		TAILQ_REMOVE(&ns->ghosts, n, ghost_link);
	if (n->present)
		TAILQ_REMOVE(&ns->all, n, all);
	kc_hmap_del(&ns->names, &n->h);
	kc_free(n->renew);
	kc_free(n->heartbeat);
	kc_free(n->h.key);
	kc_free(n);
}

/* Frees an entry nothing needs any more; ghosts lose their status. */
static void
nent_settle(struct nodes *ns, struct nent *n)
{
	if (n->ghost && (n->present || n->npods == 0)) {
		TAILQ_REMOVE(&ns->ghosts, n, ghost_link);
		n->ghost = false;
	}
	if (!n->present && n->npods == 0)
		nent_free(ns, n);
}

static void
kick(struct nodes *ns)
{
	if (!ns->ticking && (!ns->sync_timer.armed ||
	    ns->sync_timer.due_ms > kc_clock_now_ms() + NODES_SYNC_DELAY_MS))
		timer_arm(&ns->sync_timer, NODES_SYNC_DELAY_MS);
}

static void
mark_dirty(struct nodes *ns, struct nent *n)
{
	if (!n->dirty) {
		n->dirty = true;
		TAILQ_INSERT_TAIL(&ns->dirty, n, dirty_link);
	}
	kick(ns);
}

static void
make_ghost(struct nodes *ns, struct nent *n)
{
	if (n->ghost || n->present || n->npods == 0)
		return;
	n->ghost = true;
	n->gc_due_ms = kc_clock_now_ms() + ns->opts.podgc_quarantine_ms;
	TAILQ_INSERT_TAIL(&ns->ghosts, n, ghost_link);
	kick(ns);
}

static int
replace_str(char **slot, const char *v, bool *ret_changed)
{
	char *c;

	*ret_changed = !str_same(*slot, v);
	if (!*ret_changed)
		return 0;
	if (v == NULL) {
		kc_free(*slot);
		*slot = NULL;
		return 0;
	}
	if ((c = kc_strdup(v)) == NULL)
		return -ENOMEM;
	kc_free(*slot);
	*slot = c;
	return 0;
}

static bool
has_noexecute(const struct json_object *node)
{
	struct json_object *ts = kc_json_get(node, "spec", "taints");

	for (size_t i = 0; i < arr_len(ts); i++)
		if (str_eq(kc_json_str(json_object_array_get_idx(ts, i), "effect"),
		    "NoExecute"))
			return true;
	return false;
}

static int
feed_node(struct nodes *ns, const struct dc_event *ev, const struct json_object *node,
    bool gone, bool scan)
{
	const char *name = kc_json_str(node, "metadata", "name");
	const struct json_object *ready = find_cond(node, "Ready");
	uint64_t now = kc_clock_now_ms();
	struct nent *n;
	bool changed, was_stopped;
	int r;

	if (name == NULL)
		return 0;
	if (gone) {
		if ((n = nent_find(ns, name)) == NULL)
			return 0;
		hold(ns, node, false);
		if (n->present) {
			TAILQ_REMOVE(&ns->all, n, all);
			n->present = false;
		}
		if (n->dirty) {
			TAILQ_REMOVE(&ns->dirty, n, dirty_link);
			n->dirty = false;
		}
		make_ghost(ns, n);
		nent_settle(ns, n);
		return 0;
	}
	if ((n = nent_get(ns, name)) == NULL)
		return -ENOMEM;
	if (ev != NULL && ev->prev != NULL)
		hold(ns, ev->prev, false);
	hold(ns, node, true);
	was_stopped = n->stopped;
	n->stopped = kubelet_stopped(node);
	if (!n->present) {
		n->present = true;
		TAILQ_INSERT_TAIL(&ns->all, n, all);
		n->seen_ms = now;
		n->probe_ms = now;
		n->report_due_ms = now;
		was_stopped = !scan;
	}
	nent_settle(ns, n);
	if ((r = replace_str(&n->heartbeat, kc_json_str(ready, "lastHeartbeatTime"),
	    &changed)) < 0)
		return r;
	if (changed)
		n->probe_ms = now;
	if (ev != NULL && ev->prev != NULL && str_eq(cond_status(ev->prev, "Ready"), "True") &&
	    !str_eq(kc_json_str(ready, "status"), "True"))
		n->not_ready = true;
	if (was_stopped && !n->stopped) {
		/* A kubelet (re)starts: it renews its lease and reports now. */
		n->probe_ms = now;
		n->report_due_ms = now;
		timer_arm(&ns->hb_timer, 0);
	}
	if (!ns->monitor_timer.armed)
		timer_arm(&ns->monitor_timer, ns->opts.monitor_ms);
	if (!ns->hb_timer.armed)
		timer_arm(&ns->hb_timer, ns->opts.lease_renew_ms);
	mark_dirty(ns, n);
	return 0;
}

static bool
tolerations_changed(const struct json_object *a, const struct json_object *b)
{
	return !kc_json_equal(kc_json_get(a, "spec", "tolerations"),
	    kc_json_get(b, "spec", "tolerations"));
}

static int
feed_pod(struct nodes *ns, const struct dc_event *ev, const struct json_object *pod,
    bool gone)
{
	const char *pns = kc_json_str(pod, "metadata", "namespace");
	const char *name = kc_json_str(pod, "metadata", "name");
	const char *node = gone ? NULL : kc_json_str(pod, "spec", "nodeName");
	struct npod *p;
	struct nent *n, *old = NULL;
	char key[2 * DC_SEGMENT_MAX + 2];

	if (pns == NULL || name == NULL)
		return 0;
	(void)snprintf(key, sizeof(key), "%s/%s", pns, name);
	p = (struct npod *)(void *)kc_hmap_get(&ns->pods, key);
	if (p != NULL && (node == NULL || node[0] == '\0' ||
	    strcmp(p->node->h.key, node) != 0)) {
		old = p->node;
		TAILQ_REMOVE(&old->pods, p, link);
		old->npods--;
		kc_hmap_del(&ns->pods, &p->h);
		kc_free(p->h.key);
		kc_free(p);
		p = NULL;
		nent_settle(ns, old);
	}
	if (node == NULL || node[0] == '\0')
		return 0;
	if ((n = nent_get(ns, node)) == NULL)
		return -ENOMEM;
	if (p == NULL) {
		if ((p = kc_calloc(1, sizeof(*p))) == NULL ||
		    (p->h.key = kc_strdup(key)) == NULL || kc_hmap_put(&ns->pods, &p->h) < 0) {
			if (p != NULL)
				kc_free(p->h.key);
			kc_free(p);
			nent_settle(ns, n);
			return -ENOMEM;
		}
		p->node = n;
		TAILQ_INSERT_TAIL(&n->pods, p, link);
		n->npods++;
		if (n->tainted)
			mark_dirty(ns, n);
	} else if (n->tainted && ev != NULL && ev->prev != NULL &&
	    tolerations_changed(ev->prev, pod))
		mark_dirty(ns, n);
	if (!n->present)
		make_ghost(ns, n);
	return 0;
}

static int
feed_lease(struct nodes *ns, const struct json_object *lease)
{
	const char *lns = kc_json_str(lease, "metadata", "namespace");
	const char *name = kc_json_str(lease, "metadata", "name");
	struct nent *n;
	bool changed;
	int r;

	if (!str_eq(lns, NODES_LEASE_NS) || name == NULL ||
	    (n = nent_find(ns, name)) == NULL || !n->present)
		return 0;
	if ((r = replace_str(&n->renew, kc_json_str(lease, "spec", "renewTime"),
	    &changed)) < 0)
		return r;
	if (changed)
		n->probe_ms = kc_clock_now_ms();
	return 0;
}

static bool
is_coll(const struct dc_coll *coll, const char *group, const char *resource)
{
	return strcmp(coll_group(coll), group) == 0 &&
	    strcmp(coll_resource(coll), resource) == 0;
}

static int
feed(struct nodes *ns, const struct dc_event *ev, const struct dc_coll *coll,
    const struct json_object *obj, bool gone, bool scan)
{
	int r = 0;

	if (is_coll(coll, "", "nodes"))
		r = feed_node(ns, ev, obj, gone, scan);
	else if (is_coll(coll, "", "pods"))
		r = feed_pod(ns, ev, obj, gone);
	else if (is_coll(coll, "coordination.k8s.io", "leases") && !gone)
		r = feed_lease(ns, obj);
	if (r < 0)
		logd("nodes", coll_resource(coll), "feeding", r);
	return r;
}

static void
on_event(void *arg, const struct dc_event *ev)
{
	(void)feed(arg, ev, ev->coll, ev->obj, ev->type == DC_EV_DELETED, false);
}

static int
scan_coll(struct nodes *ns, const char *group, const char *resource)
{
	struct dc_coll *coll = storage_find_coll(ns->dc->store, group, resource);
	struct json_object **objs = NULL;
	size_t n = 0;
	int r;

	if (coll == NULL)
		return 0;
	if ((r = coll_list(coll, NULL, NULL, &objs, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && r >= 0; i++)
		r = feed(ns, NULL, coll, objs[i], false, true);
	objs_free(objs, n);
	return r;
}

/*
 * Conditions
 */

static struct json_object *
conds_of(struct json_object *obj)
{
	struct json_object *st = kc_json_ensure_obj(obj, "status"), *conds;

	if (st == NULL)
		return NULL;
	if ((conds = kc_json_arr_of(st, "conditions")) != NULL)
		return conds;
	if ((conds = json_object_new_array()) == NULL || kc_json_put(st, "conditions", conds) < 0)
		return NULL;
	return conds;
}

/*
 * Sets a pod condition (a private tree): the transition time moves only
 * with the status; lastProbeTime stays null, as upstream writes it.
 */
static int
set_pod_condition(struct json_object *pod, const char *type, const char *status,
    const char *reason, const char *message)
{
	struct json_object *conds = conds_of(pod), *c;
	char now[KC_TIME_MAX];

	if (conds == NULL)
		return -ENOMEM;
	api_now(now);
	if ((c = find_cond(pod, type)) == NULL) {
		if ((c = json_object_new_object()) == NULL || kc_json_append(conds, c) < 0)
			return -ENOMEM;
	} else if (str_eq(kc_json_str(c, "status"), status) &&
	    kc_json_str(c, "lastTransitionTime") != NULL)
		(void)kc_strlcpy(now, kc_json_str(c, "lastTransitionTime"), sizeof(now));
	if (kc_json_set_str(c, "type", type) < 0 || kc_json_set_str(c, "status", status) < 0 ||
	    kc_json_set_str(c, "reason", reason) < 0 ||
	    kc_json_set_str(c, "message", message) < 0 ||
	    kc_json_set_str(c, "lastTransitionTime", now) < 0)
		return -ENOMEM;
	if (!json_object_object_get_ex(c, "lastProbeTime", NULL) &&
	    kc_json_put_null(c, "lastProbeTime") < 0)
		return -ENOMEM;
	return 0;
}

/* Sets a node condition; 'hb' NULL keeps lastHeartbeatTime (or sets now). */
static int
set_node_condition(struct json_object *conds, const char *type, const char *status,
    const char *reason, const char *message, const char *hb)
{
	struct json_object *c = NULL;
	char now[KC_TIME_MAX];

	api_now(now);
	for (size_t i = 0; i < arr_len(conds) && c == NULL; i++)
		if (str_eq(kc_json_str(json_object_array_get_idx(conds, i), "type"), type))
			c = json_object_array_get_idx(conds, i);
	if (c == NULL) {
		if ((c = json_object_new_object()) == NULL || kc_json_append(conds, c) < 0)
			return -ENOMEM;
	}
	if (!str_eq(kc_json_str(c, "status"), status) ||
	    kc_json_str(c, "lastTransitionTime") == NULL)
		if (kc_json_set_str(c, "lastTransitionTime", now) < 0)
			return -ENOMEM;
	if (hb == NULL)
		hb = kc_json_str(c, "lastHeartbeatTime") != NULL ? NULL : now;
	if (kc_json_set_str(c, "type", type) < 0 || kc_json_set_str(c, "status", status) < 0 ||
	    kc_json_set_str(c, "reason", reason) < 0 ||
	    kc_json_set_str(c, "message", message) < 0 ||
	    (hb != NULL && kc_json_set_str(c, "lastHeartbeatTime", hb) < 0))
		return -ENOMEM;
	return 0;
}

/*
 * The simulated kubelet
 */

/* 32 hex digits from a name (machineID), stable across restarts. */
static void
name_hex(const char *name, const char *salt, char buf[33])
{
	static const char hex[] = "0123456789abcdef";
	uint32_t h = kc_fnv1a32_str(KC_FNV1A32_INIT, salt);

	for (size_t i = 0; i < 32; i++) {
		if (i % 8 == 0)
			h = kc_fnv1a32_str(KC_FNV1A32_INIT, name) ^ (h * 16777619u) ^ (uint32_t)i;
		buf[i] = hex[(h >> (4 * (i % 8))) & 15u];
	}
	buf[32] = '\0';
}

static int
fill_node_info(struct nodes *ns, struct json_object *status, const char *name)
{
	struct json_object *info = kc_json_ensure_obj(status, "nodeInfo");
	char machine[33], sys[33], uuid[37], boot[37];

	if (info == NULL)
		return -ENOMEM;
	name_hex(name, "machine-id", machine);
	name_hex(name, "system-uuid", sys);
	(void)snprintf(uuid, sizeof(uuid), "%.8s-%.4s-%.4s-%.4s-%.12s", sys, sys + 8,
	    sys + 12, sys + 16, sys + 20);
	api_uuid(boot);
	{
		const char *const defs[] = {
			"machineID", machine, "systemUUID", uuid, "bootID", boot,
			"kernelVersion", NODES_KERNEL_VERSION, "osImage", NODES_OS_IMAGE,
			"containerRuntimeVersion", NODES_RUNTIME_VERSION,
			"kubeletVersion", ns->dc->git_version,
			"operatingSystem", "linux", "architecture", "amd64",
		};

		for (size_t i = 0; i < KC_ARRAY_SIZE(defs); i += 2)
			if (kc_json_str(info, defs[i]) == NULL &&
			    kc_json_set_str(info, defs[i], defs[i + 1]) < 0)
				return -ENOMEM;
	}
	return 0;
}

static int
fill_resources(struct json_object *status)
{
	struct json_object *cap = kc_json_obj_of(status, "capacity"), *alloc;
	static const char *const defs[] = {
		"cpu", NODES_DEFAULT_CPU, "memory", NODES_DEFAULT_MEMORY,
		"ephemeral-storage", NODES_DEFAULT_STORAGE, "pods", NODES_DEFAULT_PODS,
	};

	if (cap == NULL || json_object_object_length(cap) == 0) {
		if ((cap = kc_json_ensure_obj(status, "capacity")) == NULL ||
		    set_strs(cap, defs, KC_ARRAY_SIZE(defs)) < 0)
			return -ENOMEM;
	} else if (kc_json_get(cap, "pods") == NULL &&
	    kc_json_set_str(cap, "pods", NODES_DEFAULT_PODS) < 0)
		return -ENOMEM;
	if ((alloc = kc_json_ensure_obj(status, "allocatable")) == NULL)
		return -ENOMEM;
	json_object_object_foreach(cap, k, v) {
		if (json_object_object_get_ex(alloc, k, NULL))
			continue;
		if ((v == NULL ? kc_json_put_null(alloc, k) :
		    kc_json_put(alloc, k, kc_json_copy(v))) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int
fill_addresses(struct nodes *ns, struct json_object *status, const char *name)
{
	struct json_object *as = kc_json_arr_of(status, "addresses"), *a;
	char ip[16];
	uint32_t i;

	if (arr_len(as) > 0)
		return 0;
	for (i = 1; i < NODES_IP_MAX && bit_get(ns->ip_used, i); i++)
		;
	if (i == NODES_IP_MAX)
		return 0;		/* every address taken: none reported */
	bit_set(ns->ip_used, i, true);
	(void)snprintf(ip, sizeof(ip), "10.0.%u.%u", i >> 8, i & 255u);
	if ((as = json_object_new_array()) == NULL || kc_json_put(status, "addresses", as) < 0)
		return -ENOMEM;
	if ((a = json_object_new_object()) == NULL || kc_json_append(as, a) < 0 ||
	    set_strs(a, (const char *const []){ "type", "InternalIP", "address", ip }, 4) < 0)
		return -ENOMEM;
	if ((a = json_object_new_object()) == NULL || kc_json_append(as, a) < 0 ||
	    set_strs(a, (const char *const []){ "type", "Hostname", "address", name }, 4) < 0)
		return -ENOMEM;
	return 0;
}

static int
fill_labels(struct json_object *obj, const char *name)
{
	struct json_object *meta = kc_json_ensure_obj(obj, "metadata"), *labels;
	const char *const defs[] = {
		"kubernetes.io/hostname", name, "kubernetes.io/os", "linux",
		"kubernetes.io/arch", "amd64", "beta.kubernetes.io/os", "linux",
		"beta.kubernetes.io/arch", "amd64",
	};

	if (meta == NULL || (labels = kc_json_ensure_obj(meta, "labels")) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < KC_ARRAY_SIZE(defs); i += 2)
		if (kc_json_get(labels, defs[i]) == NULL &&
		    kc_json_set_str(labels, defs[i], defs[i + 1]) < 0)
			return -ENOMEM;
	return 0;
}

/*
 * What the kubelet posts for 'node': its status with what is missing
 * filled in and conditions the lifecycle controller set Unknown made
 * healthy again. With 'report' every condition gets a fresh heartbeat;
 * without, only when something else changed. '*ret' is the new object,
 * or NULL when there is nothing to write.
 */
static int
kubelet_status(struct nodes *ns, const struct json_object *node, bool report,
    struct json_object **ret)
{
	const char *name = kc_json_str(node, "metadata", "name");
	struct json_object *next, *status, *conds, *de;
	char now[KC_TIME_MAX];
	int r = -ENOMEM;

	*ret = NULL;
	if ((next = kc_json_copy(node)) == NULL)
		return -ENOMEM;
	if ((status = kc_json_ensure_obj(next, "status")) == NULL ||
	    fill_labels(next, name) < 0 || (r = fill_resources(status)) < 0 ||
	    (r = fill_addresses(ns, status, name)) < 0 ||
	    (r = fill_node_info(ns, status, name)) < 0)
		goto fail;
	r = -ENOMEM;
	if (kc_json_get(status, "daemonEndpoints", "kubeletEndpoint") == NULL &&
	    ((de = kc_json_ensure_obj(status, "daemonEndpoints")) == NULL ||
	    (de = kc_json_ensure_obj(de, "kubeletEndpoint")) == NULL ||
	    kc_json_set_int(de, "Port", NODES_KUBELET_PORT) < 0))
		goto fail;
	if ((conds = conds_of(next)) == NULL)
		goto fail;
	for (size_t i = 0; i < KC_ARRAY_SIZE(kubelet_conds); i++) {
		const struct kcond *k = &kubelet_conds[i];
		const char *cur = cond_status(next, k->type);

		if (cur == NULL || strcmp(cur, "Unknown") == 0)
			if ((r = set_node_condition(conds, k->type, k->status, k->reason,
			    k->message, NULL)) < 0)
				goto fail;
	}
	r = -ENOMEM;
	/* bootID is new each time: compare without nodeInfo when it was there. */
	if (!report && kc_json_get(node, "status", "nodeInfo", "bootID") != NULL &&
	    obj_same(node, next)) {
		json_object_put(next);
		return 0;
	}
	api_now(now);
	for (size_t i = 0; i < KC_ARRAY_SIZE(kubelet_conds); i++) {
		struct json_object *c = find_cond(next, kubelet_conds[i].type);

		if (c != NULL && kc_json_set_str(c, "lastHeartbeatTime", now) < 0)
			goto fail;
	}
	*ret = next;
	return 0;
fail:
	json_object_put(next);
	return r;
}

/* Posts the status of node 'name' when it changed (or 'report'). */
static int
kubelet_sync(struct nodes *ns, const char *name, bool report)
{
	const struct dc_rtype *nt = core_type(ns->dc, "nodes");
	const struct json_object *node = nt != NULL ? coll_get(nt->coll, "", name) : NULL;
	struct json_object *next = NULL;
	struct nent *n;
	int r;

	if (node == NULL || kubelet_stopped(node))
		return 0;
	if ((r = kubelet_status(ns, node, report, &next)) < 0 || next == NULL)
		return r;
	if ((n = nent_find(ns, name)) != NULL)
		n->report_due_ms = kc_clock_now_ms() + ns->opts.status_report_ms;
	return write_obj(ns, nt, node, next, "status", NODES_MGR_KUBELET);
}

/* Creates or renews the Lease of node 'name'. */
static int
renew_lease(struct nodes *ns, const char *name)
{
	const struct dc_rtype *lt = registry_find(ns->dc, "coordination.k8s.io", "v1",
	    "leases");
	const struct dc_rtype *nt = core_type(ns->dc, "nodes");
	const struct json_object *node = nt != NULL ? coll_get(nt->coll, "", name) : NULL;
	const struct json_object *lease;
	struct json_object *next, *spec, *meta, *refs, *ref;
	char now[KC_TIME_MAX];
	int r;

	if (lt == NULL || node == NULL)
		return 0;
	micro_timestamp(now);
	if ((lease = coll_get(lt->coll, NODES_LEASE_NS, name)) != NULL) {
		if ((next = kc_json_copy(lease)) == NULL)
			return -ENOMEM;
		if ((spec = kc_json_ensure_obj(next, "spec")) == NULL ||
		    kc_json_set_str(spec, "renewTime", now) < 0 ||
		    (kc_json_get(spec, "holderIdentity") == NULL &&
		    kc_json_set_str(spec, "holderIdentity", name) < 0) ||
		    (kc_json_get(spec, "leaseDurationSeconds") == NULL &&
		    kc_json_set_int(spec, "leaseDurationSeconds", NODES_LEASE_SECONDS) < 0)) {
			json_object_put(next);
			return -ENOMEM;
		}
		return write_obj(ns, lt, lease, next, NULL, NODES_MGR_KUBELET);
	}
	if ((next = json_object_new_object()) == NULL)
		return -ENOMEM;
	r = -ENOMEM;
	if (set_strs(next, (const char *const []){ "apiVersion", "coordination.k8s.io/v1",
	    "kind", "Lease" }, 4) < 0 ||
	    (meta = kc_json_ensure_obj(next, "metadata")) == NULL ||
	    set_strs(meta, (const char *const []){ "name", name,
	    "namespace", NODES_LEASE_NS }, 4) < 0 ||
	    (refs = json_object_new_array()) == NULL ||
	    kc_json_put(meta, "ownerReferences", refs) < 0 ||
	    (ref = json_object_new_object()) == NULL || kc_json_append(refs, ref) < 0 ||
	    set_strs(ref, (const char *const []){ "apiVersion", "v1", "kind", "Node",
	    "name", name, "uid", kc_json_str(node, "metadata", "uid") }, 8) < 0 ||
	    (spec = kc_json_ensure_obj(next, "spec")) == NULL ||
	    kc_json_set_str(spec, "holderIdentity", name) < 0 ||
	    kc_json_set_int(spec, "leaseDurationSeconds", NODES_LEASE_SECONDS) < 0 ||
	    kc_json_set_str(spec, "renewTime", now) < 0) {
		json_object_put(next);
		return r;
	}
	r = api_create_object(ns->dc, lt, next, NULL);
	return r == KC_EEXISTS || r == KC_ENOTFOUND || r == KC_EFORBIDDEN ? 0 : r;
}

/* Every running kubelet renews its lease, and reports when due. */
static int64_t
hb_tick(void *arg)
{
	struct nodes *ns = arg;
	char **names = NULL;
	size_t cnt = 0;
	bool any = false;
	int r;

	if (ns->dc->stopping)
		return DC_TIMER_STOP;
	if ((r = names_of(&ns->all, false, false, &names, &cnt)) < 0)
		return ns->opts.lease_renew_ms;
	for (size_t i = 0; i < cnt; i++) {
		struct nent *n = nent_find(ns, names[i]);
		bool report;

		if (n == NULL || !n->present || n->stopped)
			continue;
		any = true;
		report = kc_clock_now_ms() >= n->report_due_ms;
		if ((r = renew_lease(ns, names[i])) >= 0 && report)
			r = kubelet_sync(ns, names[i], true);
		if (r < 0)
			logd("kubelet", names[i], "heartbeat", r);
	}
	names_free(names, cnt);
	return any ? (int64_t)ns->opts.lease_renew_ms : DC_TIMER_STOP;
}

/*
 * The node lifecycle controller
 */

/* Marks the conditions of a node its kubelet stopped posting Unknown. */
static int
mark_unknown(struct nodes *ns, const char *name)
{
	const struct dc_rtype *nt = core_type(ns->dc, "nodes");
	const struct json_object *node = nt != NULL ? coll_get(nt->coll, "", name) : NULL;
	static const char *const types[] = {
		"Ready", "MemoryPressure", "DiskPressure", "PIDPressure",
	};
	struct json_object *next, *conds;
	const char *created;
	int r;

	if (node == NULL)
		return 0;
	created = kc_json_str(node, "metadata", "creationTimestamp");
	if ((next = kc_json_copy(node)) == NULL)
		return -ENOMEM;
	if ((conds = conds_of(next)) == NULL) {
		json_object_put(next);
		return -ENOMEM;
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(types); i++) {
		const char *cur = cond_status(next, types[i]);

		if (cur == NULL)
			r = set_node_condition(conds, types[i], "Unknown",
			    "NodeStatusNeverUpdated", "Kubelet never posted node status.",
			    created);
		else if (strcmp(cur, "Unknown") != 0)
			r = set_node_condition(conds, types[i], "Unknown",
			    "NodeStatusUnknown", "Kubelet stopped posting node status.", NULL);
		else
			r = 0;
		if (r < 0) {
			json_object_put(next);
			return r;
		}
	}
	return write_obj(ns, nt, node, next, "status", NODES_MGR_KCM);
}

/* monitorNodeHealth: nodes not heard from within the grace period. */
static int64_t
monitor_tick(void *arg)
{
	struct nodes *ns = arg;
	const struct dc_rtype *nt = core_type(ns->dc, "nodes");
	uint64_t now = kc_clock_now_ms();
	char **late = NULL;
	size_t nlate = 0, cap = 0;
	struct nent *n;
	int r = 0;

	if (ns->dc->stopping || nt == NULL)
		return DC_TIMER_STOP;
	if (TAILQ_EMPTY(&ns->all))
		return DC_TIMER_STOP;
	TAILQ_FOREACH(n, &ns->all, all) {
		const struct json_object *node = coll_get(nt->coll, "", n->h.key);
		const char *ready = cond_status(node, "Ready");
		uint64_t grace = ready == NULL ? ns->opts.startup_grace_ms : ns->opts.grace_ms;
		uint64_t base = ready == NULL ? n->seen_ms : n->probe_ms;

		if (node == NULL || now - base <= grace || str_eq(ready, "Unknown"))
			continue;
		if (nlate == cap) {
			size_t nc = cap != 0 ? cap * 2 : 16;
			char **v = kc_realloc(late, nc * sizeof(*v));

			if (v == NULL) {
				r = -ENOMEM;
				break;
			}
			late = v;
			cap = nc;
		}
		if ((late[nlate] = kc_strdup(n->h.key)) == NULL) {
			r = -ENOMEM;
			break;
		}
		nlate++;
	}
	for (size_t i = 0; i < nlate && r >= 0; i++)
		r = mark_unknown(ns, late[i]);
	if (r < 0)
		logd("nodes", NULL, "monitor", r);
	names_free(late, nlate);
	return (int64_t)ns->opts.monitor_ms;
}

static bool
taint_is(const struct json_object *t, const char *key, const char *effect)
{
	return str_eq(kc_json_str(t, "key"), key) && str_eq(kc_json_str(t, "effect"), effect);
}

/* Whether (key, effect) is a taint the controller maintains, and wants. */
static bool
taint_managed(const char *key, const char *effect, const struct json_object *node,
    bool *ret_want)
{
	const char *ready = cond_status(node, "Ready");

	*ret_want = false;
	if (str_eq(effect, "NoExecute")) {
		if (str_eq(key, TAINT_NOT_READY)) {
			*ret_want = str_eq(ready, "False");
			return true;
		}
		if (str_eq(key, TAINT_UNREACHABLE)) {
			*ret_want = str_eq(ready, "Unknown");
			return true;
		}
		return false;
	}
	if (!str_eq(effect, "NoSchedule"))
		return false;
	if (str_eq(key, TAINT_UNSCHEDULABLE)) {
		*ret_want = kc_json_bool(node, false, "spec", "unschedulable");
		return true;
	}
	for (size_t i = 0; i < KC_ARRAY_SIZE(cond_taints); i++)
		if (str_eq(key, cond_taints[i].key)) {
			*ret_want = str_eq(cond_status(node, cond_taints[i].type),
			    cond_taints[i].status);
			return true;
		}
	return false;
}

static int
add_taint(struct json_object *taints, const char *key, const char *effect, const char *now)
{
	struct json_object *t;

	for (size_t i = 0; i < arr_len(taints); i++)
		if (taint_is(json_object_array_get_idx(taints, i), key, effect))
			return 0;
	if ((t = json_object_new_object()) == NULL || kc_json_append(taints, t) < 0 ||
	    set_strs(t, (const char *const []){ "key", key, "effect", effect,
	    "timeAdded", now }, 6) < 0)
		return -ENOMEM;
	return 0;
}

/*
 * The controllers' view of a node: a pod CIDR when it has none, and the
 * taints of its conditions and of spec.unschedulable.
 */
static int
controller_sync(struct nodes *ns, const char *name)
{
	const struct dc_rtype *nt = core_type(ns->dc, "nodes");
	const struct json_object *node = nt != NULL ? coll_get(nt->coll, "", name) : NULL;
	struct json_object *next, *spec, *taints, *kept, *cidrs;
	char now[KC_TIME_MAX], cidr[32];
	static const char *const effects[] = { "NoSchedule", "NoExecute" };
	static const char *const keys[] = {
		TAINT_NOT_READY, TAINT_UNREACHABLE, TAINT_UNSCHEDULABLE,
		"node.kubernetes.io/memory-pressure", "node.kubernetes.io/disk-pressure",
		"node.kubernetes.io/pid-pressure", "node.kubernetes.io/network-unavailable",
	};

	if (node == NULL)
		return 0;
	api_now(now);
	if ((next = kc_json_copy(node)) == NULL)
		return -ENOMEM;
	if ((spec = kc_json_ensure_obj(next, "spec")) == NULL)
		goto oom;
	if (kc_json_str(spec, "podCIDR") == NULL && ns->cidr_blocks > 0) {
		uint32_t b = ns->cidr_next, i;

		for (i = 0; i < ns->cidr_blocks && bit_get(ns->cidr_used, b); i++)
			b = (b + 1) % ns->cidr_blocks;
		if (i < ns->cidr_blocks) {
			cidr_format(ns, b, cidr, sizeof(cidr));
			ns->cidr_next = (b + 1) % ns->cidr_blocks;
			if (kc_json_set_str(spec, "podCIDR", cidr) < 0 ||
			    (cidrs = json_object_new_array()) == NULL ||
			    kc_json_put(spec, "podCIDRs", cidrs) < 0 ||
			    kc_json_append(cidrs, json_object_new_string(cidr)) < 0)
				goto oom;
		} else if (!ns->cidr_warned) {
			/* kube-controller-manager's CIDRNotAvailable, said once. */
			struct kc_log_ctx lc = { .action = "nodes", .name = name };

			ns->cidr_warned = true;
			kc_log_warn(&lc, "no pod CIDR left: --cluster-cidr has room for %" PRIu32 " nodes "
			    "(a /24 each); pods bound to this node and later ones cannot get "
			    "an IP and stay ContainerCreating. Start the devcluster with a "
			    "larger --cluster-cidr", ns->cidr_blocks);
		} else
			logd("nodes", name, "no pod CIDR left in the cluster CIDR", 0);
	}
	/* Drop the managed taints not wanted, then add those missing. */
	taints = kc_json_arr_of(spec, "taints");
	if ((kept = json_object_new_array()) == NULL)
		goto oom;
	for (size_t i = 0; i < arr_len(taints); i++) {
		struct json_object *t = json_object_array_get_idx(taints, i);
		bool want;

		if (taint_managed(kc_json_str(t, "key"), kc_json_str(t, "effect"), next, &want) &&
		    !want)
			continue;
		if (kc_json_append(kept, json_object_get(t)) < 0) {
			json_object_put(kept);
			goto oom;
		}
	}
	for (size_t k = 0; k < KC_ARRAY_SIZE(keys); k++)
		for (size_t e = 0; e < KC_ARRAY_SIZE(effects); e++) {
			bool want;

			if (taint_managed(keys[k], effects[e], next, &want) && want &&
			    add_taint(kept, keys[k], effects[e], now) < 0) {
				json_object_put(kept);
				goto oom;
			}
		}
	if (arr_len(kept) == 0) {
		/* omitempty: no taints, no key. */
		json_object_put(kept);
		json_object_object_del(spec, "taints");
	} else if (kc_json_put(spec, "taints", kept) < 0)
		goto oom;
	if (obj_same(node, next)) {
		json_object_put(next);
		return 0;
	}
	return write_obj(ns, nt, node, next, NULL, NODES_MGR_KCM);
oom:
	json_object_put(next);
	return -ENOMEM;
}

/* The keys of the pods bound to node 'name'. */
static int
pods_of(struct nodes *ns, const char *name, char ***ret, size_t *ret_n)
{
	struct nent *n = nent_find(ns, name);
	struct npod *p;
	size_t i = 0;
	char **v;

	*ret = NULL;
	*ret_n = 0;
	if (n == NULL || n->npods == 0)
		return 0;
	if ((v = kc_calloc(n->npods, sizeof(*v))) == NULL)
		return -ENOMEM;
	TAILQ_FOREACH(p, &n->pods, link)
		if ((v[i++] = kc_strdup(p->h.key)) == NULL) {
			names_free(v, n->npods);
			return -ENOMEM;
		}
	*ret = v;
	*ret_n = n->npods;
	return 0;
}

static const struct json_object *
pod_by_key(struct nodes *ns, const char *key, char *pns, size_t size, const char **ret_name)
{
	const struct dc_rtype *pt = core_type(ns->dc, "pods");
	const char *slash = strchr(key, '/');

	if (pt == NULL || slash == NULL || (size_t)(slash - key) >= size)
		return NULL;
	memcpy(pns, key, (size_t)(slash - key));
	pns[slash - key] = '\0';
	*ret_name = slash + 1;
	return coll_get(pt->coll, pns, slash + 1);
}

/* MarkPodsNotReady: the Ready condition of the node's pods turns False. */
static int
mark_pods_not_ready(struct nodes *ns, const char *name)
{
	const struct dc_rtype *pt = core_type(ns->dc, "pods");
	char **keys = NULL, pns[DC_SEGMENT_MAX];
	size_t n = 0;
	int r;

	if ((r = pods_of(ns, name, &keys, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && r >= 0; i++) {
		const char *pname;
		const struct json_object *pod = pod_by_key(ns, keys[i], pns, sizeof(pns),
		    &pname);
		struct json_object *next, *c;

		if (pod == NULL || !str_eq(kc_json_str(pod, "spec", "nodeName"), name) ||
		    (c = find_cond(pod, "Ready")) == NULL ||
		    str_eq(kc_json_str(c, "status"), "False"))
			continue;
		if ((next = kc_json_copy(pod)) == NULL) {
			r = -ENOMEM;
			break;
		}
		c = find_cond(next, "Ready");
		if ((r = set_pod_condition(next, "Ready", "False", kc_json_str(c, "reason"),
		    kc_json_str(c, "message"))) < 0) {
			json_object_put(next);
			break;
		}
		r = write_obj(ns, pt, pod, next, "status", NODES_MGR_KCM);
	}
	names_free(keys, n);
	return r;
}

/*
 * Taint eviction
 */

/* v1.Toleration.ToleratesTaint. */
static bool
tolerates(const struct json_object *tol, const struct json_object *taint)
{
	const char *te = kc_json_str(tol, "effect"), *tk = kc_json_str(tol, "key");
	const char *op = kc_json_str(tol, "operator");

	if (te != NULL && te[0] != '\0' && !str_eq(te, kc_json_str(taint, "effect")))
		return false;
	if (tk != NULL && tk[0] != '\0' && !str_eq(tk, kc_json_str(taint, "key")))
		return false;
	if (op == NULL || op[0] == '\0' || strcmp(op, "Equal") == 0)
		return str_same(kc_json_str(tol, "value"), kc_json_str(taint, "value"));
	return strcmp(op, "Exists") == 0;
}

/*
 * When pod 'pod' has to go for the NoExecute taints of 'node': 0 for now,
 * -1 never, else the wall-clock second. Each taint counts from its
 * timeAdded (or 'since' without one) plus the tolerationSeconds of the
 * first toleration that tolerates it; the earliest taint decides.
 */
static int64_t
eviction_time(const struct json_object *node, const struct json_object *pod, int64_t since)
{
	struct json_object *taints = kc_json_get(node, "spec", "taints");
	struct json_object *tols = kc_json_get(pod, "spec", "tolerations");
	int64_t when = -1;

	for (size_t i = 0; i < arr_len(taints); i++) {
		struct json_object *t = json_object_array_get_idx(taints, i), *tol = NULL;
		time_t added;
		int64_t secs, at;

		if (!str_eq(kc_json_str(t, "effect"), "NoExecute"))
			continue;
		for (size_t j = 0; j < arr_len(tols) && tol == NULL; j++)
			if (tolerates(json_object_array_get_idx(tols, j), t))
				tol = json_object_array_get_idx(tols, j);
		if (tol == NULL)
			return 0;
		if (kc_json_get(tol, "tolerationSeconds") == NULL)
			continue;
		if ((secs = kc_json_int(tol, 0, "tolerationSeconds")) <= 0)
			return 0;
		if (kc_json_str(t, "timeAdded") == NULL ||
		    kc_time_parse(kc_json_str(t, "timeAdded"), &added) < 0)
			added = (time_t)since;
		at = (int64_t)added + secs;
		if (when < 0 || at < when)
			when = at;
	}
	return when;
}

static int
evict_pod(struct nodes *ns, const struct json_object *pod, const char *pns,
    const char *pname)
{
	const struct dc_rtype *pt = core_type(ns->dc, "pods");
	char uid[64] = "", msg[DC_SEGMENT_MAX * 2 + 40];
	struct json_object *next;
	int r;

	(void)kc_strlcpy(uid, kc_json_str(pod, "metadata", "uid") != NULL ?
	    kc_json_str(pod, "metadata", "uid") : "", sizeof(uid));
	(void)snprintf(msg, sizeof(msg), "Marking for deletion Pod %s/%s", pns, pname);
	if ((r = record_event(ns, pod, "Pod", "Normal", "TaintManagerEviction", msg,
	    "taint-eviction-controller")) < 0)
		return r;
	if ((pod = coll_get(pt->coll, pns, pname)) == NULL)
		return 0;
	if ((next = kc_json_copy(pod)) == NULL)
		return -ENOMEM;
	if ((r = set_pod_condition(next, "DisruptionTarget", "True", "DeletionByTaintManager",
	    "Taint manager: deleting due to NoExecute taint")) < 0) {
		json_object_put(next);
		return r;
	}
	if ((r = write_obj(ns, pt, pod, next, "status", NODES_MGR_KCM)) < 0)
		return r;
	r = api_delete_object_opts(ns->dc, pt, pns, pname, -1, NULL,
	    uid[0] != '\0' ? uid : NULL);
	return r == KC_ENOTFOUND || r == KC_ECONFLICT ? 0 : r;
}

/*
 * Evicts what has to go from node 'name' now; sets the entry's
 * evict_due to the next eviction (0: none) and 'tainted'.
 */
static int
evict_pass(struct nodes *ns, const char *name)
{
	const struct dc_rtype *nt = core_type(ns->dc, "nodes");
	const struct json_object *node = nt != NULL ? coll_get(nt->coll, "", name) : NULL;
	int64_t now = (int64_t)kc_clock_wall(), next_due = 0;
	char **keys = NULL, pns[DC_SEGMENT_MAX];
	struct nent *n = nent_find(ns, name);
	size_t cnt = 0;
	int64_t since;
	int r = 0;

	if (n == NULL)
		return 0;
	n->tainted = node != NULL && has_noexecute(node);
	n->evict_due = 0;
	if (!n->tainted)
		return 0;
	since = (int64_t)kc_clock_wall() - (int64_t)((kc_clock_now_ms() - n->seen_ms) / 1000);
	if ((r = pods_of(ns, name, &keys, &cnt)) < 0)
		return r;
	for (size_t i = 0; i < cnt && r >= 0; i++) {
		const char *pname;
		const struct json_object *pod = pod_by_key(ns, keys[i], pns, sizeof(pns),
		    &pname);
		int64_t at;

		if (pod == NULL || kc_json_get(pod, "metadata", "deletionTimestamp") != NULL ||
		    !str_eq(kc_json_str(pod, "spec", "nodeName"), name))
			continue;
		/* The node may have changed under an earlier eviction's writes. */
		if ((node = coll_get(nt->coll, "", name)) == NULL)
			break;
		at = eviction_time(node, pod, since);
		if (at < 0)
			continue;
		if (at <= now)
			r = evict_pod(ns, pod, pns, pname);
		else if (next_due == 0 || at < next_due)
			next_due = at;
	}
	names_free(keys, cnt);
	if ((n = nent_find(ns, name)) != NULL)
		n->evict_due = next_due;
	return r;
}

/*
 * Pod GC
 */

/* markFailedAndDeletePodWithCondition for the pods of a missing node. */
static int
gc_node_pods(struct nodes *ns, const char *name)
{
	const struct dc_rtype *pt = core_type(ns->dc, "pods");
	char **keys = NULL, pns[DC_SEGMENT_MAX];
	size_t cnt = 0;
	int r;

	if ((r = pods_of(ns, name, &keys, &cnt)) < 0)
		return r;
	for (size_t i = 0; i < cnt && r >= 0; i++) {
		const char *pname, *phase;
		const struct json_object *pod = pod_by_key(ns, keys[i], pns, sizeof(pns),
		    &pname);
		struct json_object *next;
		char uid[64];

		if (pod == NULL || !str_eq(kc_json_str(pod, "spec", "nodeName"), name))
			continue;
		(void)kc_strlcpy(uid, kc_json_str(pod, "metadata", "uid") != NULL ?
		    kc_json_str(pod, "metadata", "uid") : "", sizeof(uid));
		phase = kc_json_str(pod, "status", "phase");
		if (!str_eq(phase, "Succeeded") && !str_eq(phase, "Failed")) {
			struct json_object *st;

			if ((next = kc_json_copy(pod)) == NULL) {
				r = -ENOMEM;
				break;
			}
			if ((st = kc_json_ensure_obj(next, "status")) == NULL ||
			    kc_json_set_str(st, "phase", "Failed") < 0 ||
			    (r = set_pod_condition(next, "DisruptionTarget", "True",
			    "DeletionByPodGC", "PodGC: node no longer exists")) < 0) {
				json_object_put(next);
				r = -ENOMEM;
				break;
			}
			if ((r = write_obj(ns, pt, pod, next, "status", NODES_MGR_KCM)) < 0)
				break;
		}
		r = api_delete_object_opts(ns->dc, pt, pns, pname, 0, NULL,
		    uid[0] != '\0' ? uid : NULL);
		if (r == KC_ENOTFOUND || r == KC_ECONFLICT)
			r = 0;
	}
	names_free(keys, cnt);
	return r;
}

/*
 * The sync pass
 */

static int
sync_node(struct nodes *ns, const char *name)
{
	struct nent *n = nent_find(ns, name);
	bool not_ready;
	int r;

	if (n == NULL || !n->present)
		return 0;
	not_ready = n->not_ready;
	n->not_ready = false;
	if (not_ready) {
		const struct dc_rtype *nt = core_type(ns->dc, "nodes");
		const struct json_object *node = coll_get(nt->coll, "", name);
		char msg[DC_SEGMENT_MAX + 64];

		(void)snprintf(msg, sizeof(msg), "Node %s status is now: NodeNotReady", name);
		if (node != NULL && (r = record_event(ns, node, "Node", "Normal",
		    "NodeNotReady", msg, "node-controller")) < 0)
			return r;
		if ((r = mark_pods_not_ready(ns, name)) < 0)
			return r;
	}
	if ((r = kubelet_sync(ns, name, false)) < 0 || (r = controller_sync(ns, name)) < 0)
		return r;
	return evict_pass(ns, name);
}

static int64_t
sync_tick(void *arg)
{
	struct nodes *ns = arg;
	uint64_t now = kc_clock_now_ms();
	int64_t wall = (int64_t)kc_clock_wall(), delay = DC_TIMER_STOP;
	char **names = NULL;
	size_t cnt = 0;
	struct nent *n;
	int r;

	if (ns->dc->stopping)
		return DC_TIMER_STOP;
	ns->ticking = true;
	/* Nodes whose evictions are due join the dirty ones. */
	TAILQ_FOREACH(n, &ns->all, all)
		if (n->tainted && n->evict_due > 0 && n->evict_due <= wall && !n->dirty) {
			n->dirty = true;
			TAILQ_INSERT_TAIL(&ns->dirty, n, dirty_link);
		}
	if ((r = names_of(&ns->dirty, true, false, &names, &cnt)) == 0) {
		while ((n = TAILQ_FIRST(&ns->dirty)) != NULL) {
			TAILQ_REMOVE(&ns->dirty, n, dirty_link);
			n->dirty = false;
		}
		for (size_t i = 0; i < cnt; i++)
			if ((r = sync_node(ns, names[i])) < 0)
				logd("nodes", names[i], "sync", r);
		names_free(names, cnt);
	}
	/* Pod GC of the ghosts whose quarantine ended. */
	if (names_of(&ns->ghosts, false, true, &names, &cnt) == 0) {
		for (size_t i = 0; i < cnt; i++) {
			n = nent_find(ns, names[i]);
			if (n == NULL || !n->ghost || n->gc_due_ms > now)
				continue;
			if ((r = gc_node_pods(ns, names[i])) < 0)
				logd("podgc", names[i], "deleting pods", r);
			/* Pods left (finalizers, errors): the next periodic check. */
			if ((n = nent_find(ns, names[i])) != NULL && n->ghost)
				n->gc_due_ms = now + NODES_PODGC_CHECK_MS;
		}
		names_free(names, cnt);
	}
	ns->ticking = false;
	if (!TAILQ_EMPTY(&ns->dirty))
		return NODES_SYNC_DELAY_MS;
	TAILQ_FOREACH(n, &ns->ghosts, ghost_link) {
		int64_t d = n->gc_due_ms > now ? (int64_t)(n->gc_due_ms - now) :
		    NODES_SYNC_DELAY_MS;

		if (delay == DC_TIMER_STOP || d < delay)
			delay = d;
	}
	TAILQ_FOREACH(n, &ns->all, all)
		if (n->tainted && n->evict_due > 0) {
			int64_t d = n->evict_due > wall ? (n->evict_due - wall) * 1000 :
			    NODES_SYNC_DELAY_MS;

			if (delay == DC_TIMER_STOP || d < delay)
				delay = d;
		}
	return delay;
}

/*
 * DefaultTolerationSeconds
 */

static int
add_default_toleration(struct json_object *tols, const char *key, int64_t secs)
{
	struct json_object *t;

	for (size_t i = 0; i < arr_len(tols); i++) {
		struct json_object *e = json_object_array_get_idx(tols, i);
		const char *k = kc_json_str(e, "key"), *eff = kc_json_str(e, "effect");

		if ((k == NULL || k[0] == '\0' || strcmp(k, key) == 0) &&
		    (eff == NULL || eff[0] == '\0' || strcmp(eff, "NoExecute") == 0))
			return 0;
	}
	if ((t = json_object_new_object()) == NULL || kc_json_append(tols, t) < 0 ||
	    set_strs(t, (const char *const []){ "key", key, "operator", "Exists",
	    "effect", "NoExecute" }, 6) < 0 ||
	    kc_json_set_int(t, "tolerationSeconds", secs) < 0)
		return -ENOMEM;
	return 0;
}

int
nodes_default_tolerations(const struct nodes_opts *opts, struct json_object *pod)
{
	struct json_object *spec = kc_json_ensure_obj(pod, "spec"), *tols;
	int64_t nr = opts->not_ready_toleration_s, ur = opts->unreachable_toleration_s;

	if (spec == NULL)
		return -ENOMEM;
	if ((tols = kc_json_arr_of(spec, "tolerations")) == NULL &&
	    ((tols = json_object_new_array()) == NULL ||
	    kc_json_put(spec, "tolerations", tols) < 0))
		return -ENOMEM;
	if (add_default_toleration(tols, TAINT_NOT_READY, nr < 0 ? NODES_TOLERATION_S : nr) < 0 ||
	    add_default_toleration(tols, TAINT_UNREACHABLE, ur < 0 ? NODES_TOLERATION_S : ur) < 0)
		return -ENOMEM;
	return 0;
}

static int
nodes_admit(struct dc_write_ctx *wc, struct json_object *obj, struct kc_status *st)
{
	struct nodes *ns = plugin_state(wc->dc, &nodes_plugin);

	(void)st;
	if (ns == NULL)
		return 0;
	if (wc->op != DC_OP_CREATE || wc->subresource != NULL ||
	    wc->rt->group[0] != '\0' || strcmp(wc->rt->plural, "pods") != 0)
		return 0;
	return nodes_default_tolerations(&ns->opts, obj);
}

/*
 * Setup
 */

int
nodes_init(struct dc *dc, const struct nodes_opts *opts)
{
	struct nodes *ns;
	int r;

	if (plugin_state(dc, &nodes_plugin) != NULL)
		return -EEXIST;
	if ((ns = kc_calloc(1, sizeof(*ns))) == NULL)
		return -ENOMEM;
	ns->dc = dc;
	if (opts != NULL)
		ns->opts = *opts;
	else {
		ns->opts.not_ready_toleration_s = -1;
		ns->opts.unreachable_toleration_s = -1;
	}
	if (ns->opts.cluster_cidr == NULL)
		ns->opts.cluster_cidr = NODES_CLUSTER_CIDR;
	if (ns->opts.grace_ms == 0)
		ns->opts.grace_ms = NODES_GRACE_MS;
	if (ns->opts.startup_grace_ms == 0)
		ns->opts.startup_grace_ms = NODES_STARTUP_GRACE_MS;
	if (ns->opts.monitor_ms == 0)
		ns->opts.monitor_ms = NODES_MONITOR_MS;
	if (ns->opts.lease_renew_ms == 0) {
		ns->opts.lease_renew_ms = ns->opts.grace_ms / 4;
		if (ns->opts.lease_renew_ms > NODES_LEASE_RENEW_MS)
			ns->opts.lease_renew_ms = NODES_LEASE_RENEW_MS;
		if (ns->opts.lease_renew_ms == 0)
			ns->opts.lease_renew_ms = 1;
	}
	if (ns->opts.status_report_ms == 0)
		ns->opts.status_report_ms = NODES_STATUS_REPORT_MS;
	if (ns->opts.podgc_quarantine_ms == 0)
		ns->opts.podgc_quarantine_ms = NODES_PODGC_QUARANTINE_MS;
	if ((r = nodes_parse_cidr(ns->opts.cluster_cidr, &ns->cidr_base,
	    &ns->cidr_blocks)) < 0) {
		kc_free(ns);
		return r;
	}
	ns->opts.cluster_cidr = NULL;		/* not kept: the caller's string */
	if ((ns->cidr_used = kc_calloc(ns->cidr_blocks / 8 + 1, 1)) == NULL) {
		kc_free(ns);
		return -ENOMEM;
	}
	TAILQ_INIT(&ns->all);
	TAILQ_INIT(&ns->dirty);
	TAILQ_INIT(&ns->ghosts);
	timer_init(&ns->sync_timer, dc, sync_tick, ns);
	timer_init(&ns->hb_timer, dc, hb_tick, ns);
	timer_init(&ns->monitor_timer, dc, monitor_tick, ns);
	if ((r = storage_subscribe(dc->store, on_event, ns)) < 0) {
		kc_free(ns->cidr_used);
		kc_free(ns);
		return r;
	}
	plugin_set_state(dc, &nodes_plugin, ns);
	if ((r = scan_coll(ns, "", "nodes")) < 0 ||
	    (r = scan_coll(ns, "coordination.k8s.io", "leases")) < 0 ||
	    (r = scan_coll(ns, "", "pods")) < 0) {
		nodes_fini(dc);
		return r;
	}
	/* Restored leases are renewed at once. */
	if (!TAILQ_EMPTY(&ns->all))
		timer_arm(&ns->hb_timer, 0);
	return 0;
}

void
nodes_fini(struct dc *dc)
{
	struct nodes *ns = plugin_state(dc, &nodes_plugin);
	struct kc_hmap_node *e, *ne;
	size_t i;

	if (ns == NULL)
		return;
	timer_cancel(&ns->sync_timer);
	timer_cancel(&ns->hb_timer);
	timer_cancel(&ns->monitor_timer);
	storage_unsubscribe(dc->store, on_event, ns);
	KC_HMAP_FOREACH_SAFE(e, ne, i, &ns->pods) {
		kc_free(e->key);
		kc_free(e);
	}
	kc_hmap_free(&ns->pods);
	KC_HMAP_FOREACH_SAFE(e, ne, i, &ns->names) {
		struct nent *n = (struct nent *)(void *)e;

		kc_free(n->renew);
		kc_free(n->heartbeat);
		kc_free(e->key);
		kc_free(n);
	}
	kc_hmap_free(&ns->names);
	kc_free(ns->cidr_used);
	kc_free(ns);
	plugin_set_state(dc, &nodes_plugin, NULL);
}

/*
 * Diagnostics
 */

size_t
nodes_count(const struct dc *dc)
{
	const struct nodes *ns = plugin_state(dc, &nodes_plugin);
	const struct nent *n;
	size_t cnt = 0;

	if (ns == NULL)
		return 0;
	TAILQ_FOREACH(n, &ns->all, all)
		cnt++;
	return cnt;
}

size_t
nodes_pods_on(const struct dc *dc, const char *node)
{
	const struct nodes *ns = plugin_state(dc, &nodes_plugin);
	const struct nent *n = ns != NULL ? nent_find(ns, node) : NULL;

	return n != NULL ? n->npods : 0;
}

static int
nodes_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	(void)st;
	return nodes_init(dc, cfg != NULL ? &cfg->nodes : NULL);
}

/* Admission: DefaultTolerationSeconds (plugins.c has the chain's order). */
const struct dc_plugin nodes_plugin = {
	.name = "nodes",
	.init = nodes_start,
	.fini = nodes_fini,
	.admit = nodes_admit,
};

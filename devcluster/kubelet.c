/*
 * kubelet.c: the devcluster's simulated kubelets, one per Node, all on
 * one loop timer.
 *
 * A storage subscription (plus a scan at start, for restored objects)
 * tracks every Node and every pod bound to one (spec.nodeName). Each pod
 * gets a small record: a due time on a min-heap, the moment the kubelet
 * first saw it, its pod IP index and, per container, the current and the
 * previous run (start and end in monotonic milliseconds, exit code,
 * restart count, CrashLoopBackOff state). Everything else - the status,
 * the log text, the termination message - is computed from that record,
 * the pod's spec and its devcluster.trainyard.dev/ annotations whenever
 * it is needed, so a pod costs a few hundred bytes and no timer of its
 * own. The one timer fires for the earliest due pod (or followed log).
 *
 * A pod's life, as kubelet, containerd and the status manager show it:
 *
 *	bound		Pending: hostIP, startTime, containers waiting
 *			ContainerCreating (PodInitializing with init
 *			containers), PodReadyToStartContainers False,
 *			Ready/ContainersReady False (ContainersNotReady)
 *	+start delay	a pod IP from the node's spec.podCIDR(s) (the pod
 *			waits while the node has none), init containers
 *			exit 0 one after the other at once, the containers
 *			run (Pulled, Created, Started Events); Running, all
 *			conditions True
 *	run-seconds	the container exits with exit-code; Never (and
 *			OnFailure after exit 0) leaves it terminated and,
 *			once every container has, the pod Succeeded or
 *			Failed; otherwise it restarts, at once the first
 *			time, then after CrashLoopBackOff 10 s doubling to
 *			5 min (reset after 10 min without a crash)
 *	deletion	hooks.graceful_delete: Killing Events, exit 143 at
 *			once (137 at the end of the grace period with
 *			ignore-sigterm), the terminal status, then the pod
 *			object is deleted with grace 0 and its uid
 *
 * A node annotated devcluster.trainyard.dev/kubelet: stopped has a dead
 * kubelet: its pods are left as they are and their graceful deletions
 * never finish. A client that writes a terminal phase, or marks a
 * running container terminated, owns the pod from then on: the kubelet
 * stops writing its status (and only finishes its deletion).
 *
 * pods/log (hooks.pod_log) prints the lines of the log annotation that
 * the run printed so far, with kube-apiserver's parameter validation and
 * the kubelet's container-state errors; follow=true answers a dc_stream
 * that the timer feeds until the run ends or the pod goes away.
 *
 * Restart: kubelet_init() scans the stored pods and resumes each from
 * its status (a running container keeps its startedAt, and its
 * run-seconds count from it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/hash.h>
#include <kc/heap.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>

#include "devcluster.h"
#include "kubelet.h"
#include "plugins.h"

#define KUBELET_NAME		"kubelet"
#define ANN			"devcluster.trainyard.dev/"
#define ANN_KUBELET		ANN "kubelet"
#define KUBELET_DELAY_MS	10	/* coalescing delay after a change */
#define KUBELET_BATCH		512	/* pods synced per timer pass */
#define KUBELET_CONTAINERS_MAX	128	/* init + regular containers tracked */
#define BACKOFF_INITIAL_S	10	/* kubelet's crash loop backoff */
#define BACKOFF_MAX_S		300
#define BACKOFF_RESET_MS	600000	/* 2 x the maximum: the entry expires */
#define TERM_MSG_MAX		4096	/* MaxContainerTerminationMessageLength */
#define FALLBACK_LINES		80	/* MaxContainerTerminationMessageLogLines */
#define FALLBACK_BYTES		2048	/* MaxContainerTerminationMessageLogLength */
#define RUN_SECONDS_MAX		1000000000u
#define IP_SLOTS_MAX		65536u	/* pod IPs tracked per node */
#define STATUS_MSG_MAX		1024

/* Container states. */
enum {
	CS_WAITING,		/* never started */
	CS_RUNNING,
	CS_DONE,		/* terminated, no restart */
	CS_BACKOFF,		/* terminated, restarts at due_ms */
	CS_CONFIGERR,		/* CreateContainerConfigError */
};

/* Container flags. */
enum {
	CF_KILLED	= 1 << 0,	/* the current run was killed (deletion) */
	CF_PREV_KILLED	= 1 << 1,
	CF_IGNORE_TERM	= 1 << 2,	/* ignore-sigterm, for the current run */
	CF_KILL_EVENT	= 1 << 3,	/* Killing sent */
	CF_WAITED	= 1 << 4,	/* in CrashLoopBackOff (not the instant restart) */
	CF_CONFIG_EVENT	= 1 << 5,	/* Failed sent for the config error */
};

/* Pod stages. */
enum {
	PS_NEW,			/* seen, containers not started yet */
	PS_STARTED,
	PS_FINISHED,		/* terminal, or a client's: hands off */
};

/* Pod flags. */
enum {
	PF_GONE		= 1 << 0,	/* deleted while being synced */
	PF_NOIP_EVENT	= 1 << 1,	/* FailedCreatePodSandBox sent */
	PF_HOSTNET	= 1 << 2,
};

/* One container of a pod: its current and previous run. */
struct kcont {
	uint64_t	 start_ms;	/* current run; 0: none */
	uint64_t	 end_ms;	/* 0: running (or none) */
	uint64_t	 prev_start_ms;	/* the run before; 0: none */
	uint64_t	 prev_end_ms;
	/*
	 * The wall-clock second each run started, as startedAt records it:
	 * its log's timestamps count from there, so a restarted devcluster,
	 * which resumes from startedAt, serves them unchanged.
	 */
	int64_t		 start_s, prev_start_s;
	uint64_t	 run_ms;	/* UINT64_MAX: until killed */
	uint64_t	 due_ms;	/* CS_BACKOFF: the restart */
	uint64_t	 backoff_at_ms;	/* the backoff entry's last update */
	uint32_t	 restarts;
	uint16_t	 backoff_s;	/* 0: no backoff entry */
	int16_t		 exit_code;	/* of the current run, once ended */
	int16_t		 prev_exit;
	int16_t		 want_exit;	/* exit-code at start */
	uint8_t		 state;
	uint8_t		 flags;
};

struct knode;

struct kpod {
	struct kc_hmap_node	 h;		/* key: "ns/name" */
	TAILQ_ENTRY(kpod) nlink;	/* on its node's list */
	struct knode	*node;
	struct kc_heap_node hn;		/* on the due-time heap */
	uint64_t	 due_ms;
	uint64_t	 seen_ms;	/* the start delay counts from here */
	uint64_t	 kill_ms;	/* graceful deadline; 0: not deleting */
	uint32_t	 ip_idx;	/* 0: none */
	uint8_t		 ninit;
	uint8_t		 ncont;		/* ninit + regular containers */
	uint8_t		 stage;
	uint8_t		 flags;
	char		 uid[40];
	struct kcont	*c;		/* ncont, init containers first */
	char		 key[];
};

TAILQ_HEAD(kpod_list, kpod);

struct cidr {
	int		 af;
	uint8_t		 base[16];
	uint32_t	 first;		/* first usable index */
	uint32_t	 last;		/* last usable index */
};

struct knode {
	struct kc_hmap_node	 h;
	struct kpod_list pods;
	size_t		 npods;
	bool		 exists;
	bool		 stopped;
	int		 ncidr;
	struct cidr	 cidr[2];
	int		 nhost;
	char		 host[2][INET6_ADDRSTRLEN];
	uint8_t		*bits;		/* IP index bitmap */
	uint32_t	 nbits;
	uint32_t	 cursor;
	char		 name[];
};

/* A followed log (pods/log?follow=true). */
struct kstream {
	struct dc_stream	 s;	/* first: the consumer's handle */
	TAILQ_ENTRY(kstream)	 link;
	struct kubelet		*k;	/* NULL once the kubelet is gone */
	struct dc_chunk		*first;	/* the output so far */
	char			 key[2 * DC_SEGMENT_MAX];
	char			 uid[40];
	uint8_t			 ci;
	uint32_t		 run;	/* the restart count of the followed run */
	size_t			 next_line;
	uint64_t		 left;	/* limitBytes left; UINT64_MAX: none */
	bool			 timestamps;
	bool			 ended;
};

TAILQ_HEAD(kstream_list, kstream);

struct kubelet {
	struct dc		*dc;
	struct kubelet_opts	 opts;
	struct dc_timer		 timer;
	struct kc_hmap		 pods;
	struct kc_hmap		 nodes;
	struct kc_heap		 due;		/* pods by due_ms */
	struct kstream_list	 streams;
	struct kpod		*syncing;
	int64_t			 wall_off;	/* wall ms - monotonic ms */
	uint64_t		 event_seq;
	bool			 in_tick;
	bool			 self_write;
};

/* A container's configuration, read from the annotations at start. */
struct cconf {
	uint64_t	 run_ms;
	uint64_t	 interval_ms;
	int		 exit_code;
	bool		 ignore_term;
};

/* A run of a container, for status and logs. */
struct run {
	uint64_t	 start_ms;
	int64_t		 start_s;	/* wall second of the start (startedAt) */
	uint64_t	 end_ms;	/* 0: still running */
	int		 exit_code;
	bool		 killed;
	uint32_t	 index;		/* the restart count it started with */
};

static void	kick_pod(struct kubelet *, struct kpod *, uint64_t delay_ms);
static void	streams_poll(struct kubelet *, uint64_t *ret_due);

/*
 * Small helpers
 */

static bool
str_empty(const char *s)
{
	return s == NULL || s[0] == '\0';
}

static size_t
arr_len(const struct json_object *a)
{
	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}





/* 64-bit mix (splitmix64's finalizer). */
static uint64_t
mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static uint64_t
hash64(uint64_t h, const char *s)
{
	return mix64(kc_fnv1a64_str(h, s));
}

/* 64 hex digits derived from 'seed' (simulated IDs and digests). */
static void
hex64(uint64_t seed, char out[65])
{
	for (int i = 0; i < 4; i++)
		(void)snprintf(out + 16 * i, 17, "%016" PRIx64, mix64(seed + (uint64_t)i *
		    UINT64_C(0x9e3779b97f4a7c15)));
}

/*
 * Time: monotonic milliseconds inside, wall-clock text outside. The
 * offset between the two only grows, as whole-second wall readings
 * reveal it, so derived timestamps never go backwards.
 */

static uint64_t
now_ms(void)
{
	return kc_clock_now_ms();
}

static uint64_t
wall_ms(struct kubelet *k, uint64_t mono)
{
	int64_t w = (int64_t)kc_clock_wall() * 1000, m = (int64_t)kc_clock_now_ms();

	if (m + k->wall_off < w)
		k->wall_off = w - m;
	return (uint64_t)((int64_t)mono + k->wall_off);
}

/* The monotonic time of a wall-clock second (restored timestamps); >= 1. */
static uint64_t
mono_of(struct kubelet *k, time_t wall)
{
	int64_t m;

	(void)wall_ms(k, 0);
	m = (int64_t)wall * 1000 - k->wall_off;
	return m >= 1 ? (uint64_t)m : 1;
}

static void
fmt_second(int64_t wall_s, char buf[KC_TIME_MAX])
{
	if (kc_time_format((time_t)wall_s, buf, KC_TIME_MAX) < 0)
		(void)kc_strlcpy(buf, "1970-01-01T00:00:00Z", KC_TIME_MAX);
}

static void
fmt_time(struct kubelet *k, uint64_t mono, char buf[KC_TIME_MAX])
{
	fmt_second((int64_t)(wall_ms(k, mono) / 1000), buf);
}


/* RFC3339NanoFixed of a wall-clock ms, as the kubelet prints log timestamps. */
static void
fmt_nano(uint64_t wall, char buf[40])
{
	if (kc_time_format_us((int64_t)wall * 1000, KC_TIME_NANO, buf, 40) < 0)
		(void)kc_strlcpy(buf, "1970-01-01T00:00:00.000000000Z", 40);
}

/* A Go duration as time.Duration.String() prints whole seconds: 10s, 1m20s, 5m0s. */
static void
fmt_duration(uint32_t s, char *buf, size_t size)
{
	if (s < 60)
		(void)snprintf(buf, size, "%us", s);
	else if (s < 3600)
		(void)snprintf(buf, size, "%um%us", s / 60, s % 60);
	else
		(void)snprintf(buf, size, "%uh%um%us", s / 3600, s / 60 % 60, s % 60);
}

/*
 * Pods and their specs
 */

static const struct dc_rtype *
pod_type(struct dc *dc)
{
	return registry_find(dc, "", "v1", "pods");
}

static const struct json_object *
stored_pod(struct kubelet *k, const struct kpod *kp)
{
	const struct dc_rtype *pt = pod_type(k->dc);
	char ns[DC_SEGMENT_MAX];
	const char *slash = strchr(kp->key, '/');

	if (pt == NULL || slash == NULL || (size_t)(slash - kp->key) >= sizeof(ns))
		return NULL;
	memcpy(ns, kp->key, (size_t)(slash - kp->key));
	ns[slash - kp->key] = '\0';
	return coll_get(pt->coll, ns, slash + 1);
}

/* Container 'i' of a pod: init containers first. */
static struct json_object *
cspec(const struct json_object *pod, const struct kpod *kp, size_t i)
{
	if (i < kp->ninit)
		return json_object_array_get_idx(kc_json_get(pod, "spec", "initContainers"), i);
	return json_object_array_get_idx(kc_json_get(pod, "spec", "containers"),
	    i - kp->ninit);
}

static const char *
cname(const struct json_object *pod, const struct kpod *kp, size_t i)
{
	const char *n = kc_json_str(cspec(pod, kp, i), "name");

	return n != NULL ? n : "";
}

static const char *
restart_policy(const struct json_object *pod)
{
	const char *p = kc_json_str(pod, "spec", "restartPolicy");

	return p != NULL ? p : "Always";
}

static bool
restartable(const struct json_object *pod, int exit_code)
{
	const char *p = restart_policy(pod);

	if (strcmp(p, "Never") == 0)
		return false;
	if (strcmp(p, "OnFailure") == 0)
		return exit_code != 0;
	return true;
}

static bool
deleting(const struct json_object *pod)
{
	return kc_json_get(pod, "metadata", "deletionTimestamp") != NULL;
}

static bool
phase_terminal(const struct json_object *pod)
{
	const char *p = kc_json_str(pod, "status", "phase");

	return p != NULL && (strcmp(p, "Succeeded") == 0 || strcmp(p, "Failed") == 0);
}

/* "name_namespace(uid)", as the kubelet's format.Pod(). */
static void
pod_desc(const struct json_object *pod, char *buf, size_t size)
{
	(void)snprintf(buf, size, "%s_%s(%s)", kc_json_str(pod, "metadata", "name"),
	    kc_json_str(pod, "metadata", "namespace"),
	    kc_json_str(pod, "metadata", "uid") != NULL ?
	    kc_json_str(pod, "metadata", "uid") : "");
}

/*
 * Annotations
 */

/* The annotation 'name' for container 'c': "<name>.<c>" first, then "<name>". */
static const char *
ann_get(const struct json_object *pod, const char *name, const char *c, bool pod_wide,
    char *key, size_t size)
{
	struct json_object *anns = kc_json_get(pod, "metadata", "annotations");
	const char *v;

	(void)snprintf(key, size, ANN "%s.%s", name, c);
	if ((v = kc_json_str(anns, key)) != NULL)
		return v;
	if (!pod_wide)
		return NULL;
	(void)snprintf(key, size, ANN "%s", name);
	return kc_json_str(anns, key);
}

/* A non-negative decimal number of seconds ("2", "0.25") in milliseconds. */
static int
parse_seconds(const char *s, uint64_t *ret)
{
	uint64_t whole = 0, frac = 0, scale = 100;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		whole = whole * 10 + (uint64_t)(*p - '0');
		if (whole >= RUN_SECONDS_MAX)
			return -ERANGE;
	}
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			frac += (uint64_t)(*p - '0') * scale;
			scale /= 10;
		}
	}
	if (*p != '\0')
		return -EINVAL;
	*ret = whole * 1000 + frac;
	return 0;
}

/*
 * Reads the configuration of container 'i' (a regular one). -EINVAL with
 * the message in 'err' for an invalid annotation value.
 */
static int
cconf_parse(const struct json_object *pod, const char *c, struct cconf *ret, char *err,
    size_t size)
{
	char key[DC_SEGMENT_MAX * 2];
	const char *v;
	int64_t code;

	memset(ret, 0, sizeof(*ret));
	ret->run_ms = UINT64_MAX;
	if ((v = ann_get(pod, "run-seconds", c, true, key, sizeof(key))) != NULL &&
	    parse_seconds(v, &ret->run_ms) < 0) {
		(void)snprintf(err, size, "invalid annotation %s: \"%.64s\": must be a "
		    "non-negative number of seconds", key, v);
		return -EINVAL;
	}
	if ((v = ann_get(pod, "exit-code", c, true, key, sizeof(key))) != NULL) {
		if (kc_parse_i64(v, &code) < 0 || code < 0 || code > 255) {
			(void)snprintf(err, size, "invalid annotation %s: \"%.64s\": must be an "
			    "integer from 0 to 255", key, v);
			return -EINVAL;
		}
		ret->exit_code = (int)code;
	}
	if ((v = ann_get(pod, "log-interval", c, true, key, sizeof(key))) != NULL &&
	    kc_parse_duration_ms(v, &ret->interval_ms) < 0) {
		(void)snprintf(err, size, "invalid annotation %s: \"%.64s\": must be a "
		    "duration such as 500ms or 2s", key, v);
		return -EINVAL;
	}
	if ((v = ann_get(pod, "ignore-sigterm", c, true, key, sizeof(key))) != NULL) {
		if (strcmp(v, "true") == 0)
			ret->ignore_term = true;
		else if (strcmp(v, "false") != 0) {
			(void)snprintf(err, size, "invalid annotation %s: \"%.64s\": must be "
			    "\"true\" or \"false\"", key, v);
			return -EINVAL;
		}
	}
	if ((v = ann_get(pod, "reason", c, true, key, sizeof(key))) != NULL &&
	    (v[0] == '\0' || strlen(v) > 128)) {
		(void)snprintf(err, size, "invalid annotation %s: must be 1 to 128 "
		    "characters", key);
		return -EINVAL;
	}
	return 0;
}

/*
 * Logs: the lines of the log annotation, printed at the start of a run,
 * or one every log-interval.
 */

struct lines {
	const char	*text;		/* NULL: no output */
	uint64_t	 interval_ms;
};

static void
lines_of(const struct json_object *pod, const struct kpod *kp, size_t i, struct lines *ret)
{
	char key[DC_SEGMENT_MAX * 2];
	const char *iv;
	bool init = i < kp->ninit;

	ret->text = ann_get(pod, "log", cname(pod, kp, i), !init, key, sizeof(key));
	ret->interval_ms = 0;
	if (!init && (iv = ann_get(pod, "log-interval", cname(pod, kp, i), true, key,
	    sizeof(key))) != NULL && kc_parse_duration_ms(iv, &ret->interval_ms) < 0)
		ret->interval_ms = 0;
}

/* Counts the lines of 'text' (a trailing newline ends the last one). */
static size_t
lines_count(const char *text)
{
	size_t n = 0;

	if (str_empty(text))
		return 0;
	for (const char *p = text; *p != '\0'; p++)
		if (*p == '\n')
			n++;
	if (text[strlen(text) - 1] != '\n')
		n++;
	return n;
}

/* Line 'i' of 'text': its start and length (without the newline). */
static const char *
line_at(const char *text, size_t i, size_t *ret_len)
{
	const char *p = text, *nl;

	for (; i > 0; i--) {
		if ((nl = strchr(p, '\n')) == NULL)
			return NULL;
		p = nl + 1;
	}
	nl = strchr(p, '\n');
	*ret_len = nl != NULL ? (size_t)(nl - p) : strlen(p);
	return p;
}

/* Lines a run printed by 'until' (its end, or now). */
static size_t
lines_printed(const struct lines *l, uint64_t start, uint64_t until)
{
	size_t n = lines_count(l->text);

	if (n == 0 || until < start)
		return 0;
	if (l->interval_ms == 0)
		return n;
	return KC_MIN(n, (size_t)((until - start) / l->interval_ms) + 1);
}

/* The run of a container that logs show (or the one 'previous' asks for). */
static int
log_run(const struct kcont *c, bool previous, struct run *ret)
{
	bool ended = c->start_ms != 0 && c->end_ms != 0;

	memset(ret, 0, sizeof(*ret));
	if (previous) {
		if (c->state == CS_BACKOFF || (c->state == CS_CONFIGERR && ended)) {
			ret->start_ms = c->start_ms;
			ret->start_s = c->start_s;
			ret->end_ms = c->end_ms;
			ret->index = c->restarts;
			return 0;
		}
		if (c->prev_start_ms == 0)
			return -ENOENT;
		ret->start_ms = c->prev_start_ms;
		ret->start_s = c->prev_start_s;
		ret->end_ms = c->prev_end_ms;
		ret->index = c->restarts - 1;
		return 0;
	}
	if (c->start_ms == 0)
		return -ENOENT;
	ret->start_ms = c->start_ms;
	ret->start_s = c->start_s;
	ret->end_ms = c->end_ms;
	ret->index = c->restarts;
	return 0;
}

/* The last 80 lines of a run's output, at most its last 2048 bytes. */
static void
fallback_message(const struct lines *l, const struct run *run, char *buf, size_t size)
{
	size_t n = lines_printed(l, run->start_ms, run->end_ms), len, total = 0, off = 0;
	size_t first = n > FALLBACK_LINES ? n - FALLBACK_LINES : 0, skip, out = 0;
	const char *p;

	buf[0] = '\0';
	for (size_t i = first; i < n; i++)
		if (line_at(l->text, i, &len) != NULL)
			total += len + 1;
	skip = total > FALLBACK_BYTES ? total - FALLBACK_BYTES : 0;
	for (size_t i = first; i < n && out + 1 < size; i++) {
		if ((p = line_at(l->text, i, &len)) == NULL)
			break;
		for (size_t j = 0; j <= len && out + 1 < size; j++, off++) {
			if (off < skip)
				continue;
			buf[out++] = j < len ? p[j] : '\n';
		}
	}
	buf[out] = '\0';
}

/*
 * Nodes: pod CIDRs, host IPs, the kubelet switch
 */

static int
cidr_parse(const char *s, struct cidr *ret)
{
	char addr[INET6_ADDRSTRLEN];
	const char *slash = strchr(s, '/');
	uint32_t prefix, host, size;
	size_t alen;

	if (slash == NULL || (alen = (size_t)(slash - s)) >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	memset(ret, 0, sizeof(*ret));
	if (inet_pton(AF_INET, addr, ret->base) == 1)
		ret->af = AF_INET;
	else if (inet_pton(AF_INET6, addr, ret->base) == 1)
		ret->af = AF_INET6;
	else
		return -EINVAL;
	if (kc_parse_u32(slash + 1, &prefix) < 0 ||
	    prefix > (ret->af == AF_INET ? 32u : 128u))
		return -EINVAL;
	host = (ret->af == AF_INET ? 32u : 128u) - prefix;
	if (host < 2)
		return -ERANGE;
	/* Zero the host bits of the base. */
	for (uint32_t b = prefix; b < (ret->af == AF_INET ? 32u : 128u); b++)
		ret->base[b / 8] &= (uint8_t)~(0x80u >> (b % 8));
	size = host >= 16 ? IP_SLOTS_MAX : 1u << host;
	ret->first = 2;		/* the network address and the bridge's gateway */
	ret->last = ret->af == AF_INET && host <= 16 ? size - 2 : size - 1;
	if (ret->last >= IP_SLOTS_MAX)
		ret->last = IP_SLOTS_MAX - 1;
	return ret->last >= ret->first ? 0 : -ERANGE;
}

static void
cidr_addr(const struct cidr *c, uint32_t idx, char *buf, size_t size)
{
	uint8_t a[16];
	size_t n = c->af == AF_INET ? 4 : 16;
	uint32_t carry = idx;

	memcpy(a, c->base, sizeof(a));
	for (size_t i = n; i > 0 && carry != 0; i--) {
		carry += a[i - 1];
		a[i - 1] = (uint8_t)(carry & 0xff);
		carry >>= 8;
	}
	if (inet_ntop(c->af, a, buf, (socklen_t)size) == NULL)
		kc_strlcpy(buf, "", size);
}

/* The index of 'ip' inside 'c', or 0 when it is outside (or unusable). */
static uint32_t
cidr_index(const struct cidr *c, const char *ip)
{
	uint8_t a[16] = { 0 };
	size_t n = c->af == AF_INET ? 4 : 16;
	uint32_t idx = 0, base = 0;

	if (ip == NULL || inet_pton(c->af, ip, a) != 1)
		return 0;
	for (size_t i = 0; i + 4 < n; i++)
		if (a[i] != c->base[i])
			return 0;
	for (size_t i = n - 4; i < n; i++) {
		idx = idx << 8 | a[i];
		base = base << 8 | c->base[i];
	}
	if (idx < base)
		return 0;
	idx -= base;
	return idx >= c->first && idx <= c->last ? idx : 0;
}

static struct knode *
node_find(const struct kubelet *k, const char *name)
{
	struct kc_hmap_node *e = kc_hmap_get(&k->nodes, name);

	return e != NULL ? (struct knode *)e : NULL;
}

static struct knode *
node_ensure(struct kubelet *k, const char *name)
{
	struct knode *n = node_find(k, name);
	size_t len = strlen(name);

	if (n != NULL)
		return n;
	if ((n = kc_calloc(1, sizeof(*n) + len + 1)) == NULL)
		return NULL;
	memcpy(n->name, name, len + 1);
	n->h.key = n->name;
	TAILQ_INIT(&n->pods);
	if (kc_hmap_put(&k->nodes, &n->h) < 0) {
		kc_free(n);
		return NULL;
	}
	return n;
}

static void
node_maybe_free(struct kubelet *k, struct knode *n)
{
	if (n == NULL || n->exists || n->npods > 0)
		return;
	kc_hmap_del(&k->nodes, &n->h);
	kc_free(n->bits);
	kc_free(n);
}

/* Sizes the IP bitmap to the node's CIDRs (keeping what is taken). */
static int
node_bits(struct knode *n)
{
	uint32_t want = 0;
	uint8_t *b;

	for (int i = 0; i < n->ncidr; i++)
		if (want == 0 || n->cidr[i].last + 1 < want)
			want = n->cidr[i].last + 1;
	if (want <= n->nbits)
		return 0;
	if ((b = kc_realloc(n->bits, (want + 7) / 8)) == NULL)
		return -ENOMEM;
	memset(b + (n->nbits + 7) / 8, 0, (want + 7) / 8 - (n->nbits + 7) / 8);
	n->bits = b;
	n->nbits = want;
	return 0;
}

static bool
bit_get(const struct knode *n, uint32_t i)
{
	return i < n->nbits && (n->bits[i / 8] & (1u << (i % 8))) != 0;
}

static void
bit_set(struct knode *n, uint32_t i, bool on)
{
	if (i >= n->nbits)
		return;
	if (on)
		n->bits[i / 8] |= (uint8_t)(1u << (i % 8));
	else
		n->bits[i / 8] &= (uint8_t)~(1u << (i % 8));
}

/* Takes the next free pod IP index of a node (next fit, as host-local). */
static uint32_t
ip_alloc(struct knode *n)
{
	uint32_t first = 2, last = 0;

	for (int i = 0; i < n->ncidr; i++) {
		if (i == 0 || n->cidr[i].last < last)
			last = n->cidr[i].last;
		if (n->cidr[i].first > first)
			first = n->cidr[i].first;
	}
	if (n->ncidr == 0 || node_bits(n) < 0 || last < first)
		return 0;
	for (uint32_t tries = 0; tries <= last - first; tries++) {
		uint32_t i = first + (n->cursor + tries) % (last - first + 1);

		if (!bit_get(n, i)) {
			bit_set(n, i, true);
			n->cursor = i - first + 1;
			return i;
		}
	}
	return 0;
}

/* Feeds a Node object; returns whether anything the pods see changed. */
static bool
node_update(struct kubelet *k, struct knode *n, const struct json_object *obj)
{
	struct json_object *cidrs = kc_json_get(obj, "spec", "podCIDRs");
	struct json_object *addrs = kc_json_get(obj, "status", "addresses");
	const char *stopped = kc_json_str(obj, "metadata", "annotations", ANN_KUBELET);
	struct cidr c[2];
	char host[2][INET6_ADDRSTRLEN];
	int nc = 0, nh = 0;
	bool changed;

	(void)k;
	for (size_t i = 0; i < arr_len(cidrs) && nc < 2; i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(cidrs, i));

		if (s != NULL && cidr_parse(s, &c[nc]) == 0)
			nc++;
	}
	if (nc == 0 && kc_json_str(obj, "spec", "podCIDR") != NULL &&
	    cidr_parse(kc_json_str(obj, "spec", "podCIDR"), &c[0]) == 0)
		nc = 1;
	for (size_t i = 0; i < arr_len(addrs) && nh < 2; i++) {
		struct json_object *a = json_object_array_get_idx(addrs, i);
		const char *t = kc_json_str(a, "type"), *ip = kc_json_str(a, "address");

		if (t != NULL && strcmp(t, "InternalIP") == 0 && ip != NULL &&
		    kc_strlcpy(host[nh], ip, sizeof(host[nh])) < sizeof(host[nh]))
			nh++;
	}
	changed = !n->exists || n->stopped != (stopped != NULL &&
	    strcmp(stopped, "stopped") == 0) || nc != n->ncidr || nh != n->nhost ||
	    memcmp(c, n->cidr, sizeof(c[0]) * (size_t)nc) != 0;
	for (int i = 0; i < nh && !changed; i++)
		changed = strcmp(host[i], n->host[i]) != 0;
	n->exists = true;
	n->stopped = stopped != NULL && strcmp(stopped, "stopped") == 0;
	n->ncidr = nc;
	memcpy(n->cidr, c, sizeof(c[0]) * (size_t)nc);
	n->nhost = nh;
	for (int i = 0; i < nh; i++)
		memcpy(n->host[i], host[i], sizeof(host[i]));
	return changed;
}

/*
 * The due-time heap
 */

static const struct kpod *
due_cpod(const struct kc_heap_node *n)
{
	return (const struct kpod *)(const void *)((const char *)n - offsetof(struct kpod, hn));
}

static bool
due_less(const struct kc_heap_node *a, const struct kc_heap_node *b)
{
	return due_cpod(a)->due_ms < due_cpod(b)->due_ms;
}

/* The pod of a heap node, or NULL for none. */
static struct kpod *
due_pod(struct kc_heap_node *n)
{
	return n != NULL ? (struct kpod *)(void *)((char *)n - offsetof(struct kpod, hn)) :
	    NULL;
}

/* Queues 'kp' at 'due' (an earlier due time wins). -ENOMEM. */
static int
heap_put(struct kubelet *k, struct kpod *kp, uint64_t due)
{
	if (kc_heap_node_queued(&kp->hn)) {
		if (due >= kp->due_ms)
			return 0;
		kp->due_ms = due;
		kc_heap_fix(&k->due, &kp->hn);
		return 0;
	}
	kp->due_ms = due;
	return kc_heap_push(&k->due, &kp->hn);
}

/* Arms the timer for the earliest work, unless a pass is running. */
static void
rearm(struct kubelet *k, uint64_t due)
{
	uint64_t now = now_ms();

	if (k->in_tick)
		return;
	if (k->timer.armed && k->timer.due_ms <= due)
		return;
	timer_arm(&k->timer, due > now ? due - now : 0);
}

static void
kick_pod(struct kubelet *k, struct kpod *kp, uint64_t delay_ms)
{
	uint64_t due = now_ms() + delay_ms;

	if (heap_put(k, kp, due) < 0) {
		kc_log_debug(&(struct kc_log_ctx){ .action = "kubelet" },
		    "queueing pod %s: out of memory", kp->key);
		return;
	}
	rearm(k, due);
}

/*
 * Pod records
 */

static struct kpod *
pod_find(const struct kubelet *k, const char *key)
{
	struct kc_hmap_node *e = kc_hmap_get(&k->pods, key);

	return e != NULL ? (struct kpod *)e : NULL;
}

static void
pod_release_ip(struct kpod *kp)
{
	if (kp->ip_idx != 0 && kp->node != NULL)
		bit_set(kp->node, kp->ip_idx, false);
	kp->ip_idx = 0;
}

static void
pod_free(struct kubelet *k, struct kpod *kp)
{
	struct knode *n = kp->node;
	bool had_ip = kp->ip_idx != 0;

	kc_heap_remove(&k->due, &kp->hn);
	kc_hmap_del(&k->pods, &kp->h);
	pod_release_ip(kp);
	if (n != NULL) {
		TAILQ_REMOVE(&n->pods, kp, nlink);
		n->npods--;
		/* A freed address may let a waiting pod of the node start. */
		if (had_ip) {
			struct kpod *o;

			for (o = TAILQ_FIRST(&n->pods); o != NULL; o = TAILQ_NEXT(o, nlink))
				if (o->stage == PS_NEW && o->flags & PF_NOIP_EVENT)
					kick_pod(k, o, KUBELET_DELAY_MS);
		}
		node_maybe_free(k, n);
	}
	kc_free(kp->c);
	kc_free(kp);
}

static int
pod_new(struct kubelet *k, const struct json_object *pod, struct kpod **ret)
{
	const char *ns = kc_json_str(pod, "metadata", "namespace");
	const char *name = kc_json_str(pod, "metadata", "name");
	const char *uid = kc_json_str(pod, "metadata", "uid");
	const char *node = kc_json_str(pod, "spec", "nodeName");
	size_t ni = arr_len(kc_json_get(pod, "spec", "initContainers"));
	size_t nc = arr_len(kc_json_get(pod, "spec", "containers"));
	struct kpod *kp;
	struct knode *n;
	int len;

	if (ns == NULL || name == NULL || str_empty(node) || nc == 0 ||
	    ni + nc > KUBELET_CONTAINERS_MAX)
		return -EINVAL;
	len = snprintf(NULL, 0, "%s/%s", ns, name);
	if ((kp = kc_calloc(1, sizeof(*kp) + (size_t)len + 1)) == NULL)
		return -ENOMEM;
	(void)snprintf(kp->key, (size_t)len + 1, "%s/%s", ns, name);
	kp->h.key = kp->key;
	kc_heap_node_init(&kp->hn);
	kp->ninit = (uint8_t)ni;
	kp->ncont = (uint8_t)(ni + nc);
	kc_strlcpy(kp->uid, uid != NULL ? uid : "", sizeof(kp->uid));
	if (kc_json_bool(pod, false, "spec", "hostNetwork"))
		kp->flags |= PF_HOSTNET;
	if ((kp->c = kc_calloc(kp->ncont, sizeof(*kp->c))) == NULL ||
	    (n = node_ensure(k, node)) == NULL) {
		kc_free(kp->c);
		kc_free(kp);
		return -ENOMEM;
	}
	if (kc_hmap_put(&k->pods, &kp->h) < 0) {
		node_maybe_free(k, n);
		kc_free(kp->c);
		kc_free(kp);
		return -ENOMEM;
	}
	kp->node = n;
	TAILQ_INSERT_TAIL(&n->pods, kp, nlink);
	n->npods++;
	kp->seen_ms = now_ms();
	*ret = kp;
	return 0;
}

/* The wall second of a stored timestamp, or of 'mono' when there is none. */
static int64_t
parse_wall_s(struct kubelet *k, const char *stamp, uint64_t mono)
{
	time_t t;

	if (stamp != NULL && kc_time_parse(stamp, &t) == 0)
		return (int64_t)t;
	return (int64_t)(wall_ms(k, mono) / 1000);
}

static uint64_t
parse_mono(struct kubelet *k, const char *stamp)
{
	time_t t;

	if (stamp == NULL || kc_time_parse(stamp, &t) < 0)
		return 0;
	return mono_of(k, t);
}

/* Resumes one container from its stored status (a restart). */
static void
resume_container(struct kubelet *k, const struct json_object *pod, struct kpod *kp,
    size_t i, const struct json_object *cst)
{
	struct kcont *c = &kp->c[i];
	struct json_object *st = kc_json_get(cst, "state");
	struct json_object *last = kc_json_get(cst, "lastState", "terminated");
	struct json_object *term = kc_json_get(st, "terminated");
	struct cconf cf;
	char err[STATUS_MSG_MAX];
	uint64_t now = now_ms();

	c->restarts = (uint32_t)kc_json_int(cst, 0, "restartCount");
	if (last != NULL) {
		c->prev_start_ms = parse_mono(k, kc_json_str(last, "startedAt"));
		c->prev_end_ms = parse_mono(k, kc_json_str(last, "finishedAt"));
		c->prev_exit = (int16_t)kc_json_int(last, 0, "exitCode");
		if (c->prev_start_ms == 0)
			c->prev_start_ms = c->prev_end_ms != 0 ? c->prev_end_ms : now;
		if (c->prev_end_ms == 0)
			c->prev_end_ms = c->prev_start_ms;
		c->prev_start_s = parse_wall_s(k, kc_json_str(last, "startedAt"),
		    c->prev_start_ms);
	}
	if (kc_json_get(st, "running") != NULL) {
		c->state = CS_RUNNING;
		c->start_ms = parse_mono(k, kc_json_str(st, "running", "startedAt"));
		if (c->start_ms == 0)
			c->start_ms = now;
		c->start_s = parse_wall_s(k, kc_json_str(st, "running", "startedAt"), c->start_ms);
		if (i >= kp->ninit && cconf_parse(pod, cname(pod, kp, i), &cf, err,
		    sizeof(err)) == 0) {
			c->run_ms = cf.run_ms;
			c->want_exit = (int16_t)cf.exit_code;
			if (cf.ignore_term)
				c->flags |= CF_IGNORE_TERM;
		} else
			c->run_ms = UINT64_MAX;
		return;
	}
	if (term != NULL) {
		c->start_ms = parse_mono(k, kc_json_str(term, "startedAt"));
		c->end_ms = parse_mono(k, kc_json_str(term, "finishedAt"));
		if (c->end_ms == 0)
			c->end_ms = now;
		if (c->start_ms == 0 || c->start_ms > c->end_ms)
			c->start_ms = c->end_ms;
		c->start_s = parse_wall_s(k, kc_json_str(term, "startedAt"), c->start_ms);
		c->exit_code = (int16_t)kc_json_int(term, 0, "exitCode");
		c->state = CS_DONE;
		if (i >= kp->ninit && restartable(pod, c->exit_code)) {
			c->state = CS_BACKOFF;
			c->backoff_s = BACKOFF_INITIAL_S;
			c->backoff_at_ms = now;
			c->due_ms = now;
		}
		return;
	}
	if (last != NULL && i >= kp->ninit) {
		/* CrashLoopBackOff: the ended run is the last state. */
		c->start_ms = c->prev_start_ms;
		c->start_s = c->prev_start_s;
		c->end_ms = c->prev_end_ms;
		c->exit_code = c->prev_exit;
		c->prev_start_ms = c->prev_end_ms = 0;
		c->prev_start_s = 0;
		c->state = CS_BACKOFF;
		c->flags |= CF_WAITED;
		c->backoff_s = BACKOFF_INITIAL_S;
		c->backoff_at_ms = now;
		c->due_ms = KC_MIN(now, c->end_ms) + BACKOFF_INITIAL_S * 1000;
		if (c->due_ms < now)
			c->due_ms = now;
		return;
	}
	c->state = CS_WAITING;
}

/* Resumes a pod's record from its stored status (kubelet_init()). */
static void
pod_resume(struct kubelet *k, struct kpod *kp, const struct json_object *pod)
{
	struct json_object *ics = kc_json_get(pod, "status", "initContainerStatuses");
	struct json_object *cs = kc_json_get(pod, "status", "containerStatuses");
	const char *ip = kc_json_str(pod, "status", "podIP");
	bool started = false;

	if (phase_terminal(pod)) {
		kp->stage = PS_FINISHED;
	}
	for (size_t i = 0; i < kp->ncont; i++) {
		struct json_object *list = i < kp->ninit ? ics : cs;
		const char *name = cname(pod, kp, i);

		for (size_t j = 0; j < arr_len(list); j++) {
			struct json_object *e = json_object_array_get_idx(list, j);
			const char *n = kc_json_str(e, "name");

			if (n != NULL && strcmp(n, name) == 0) {
				resume_container(k, pod, kp, i, e);
				break;
			}
		}
		if (kp->c[i].state != CS_WAITING)
			started = true;
	}
	if (started && kp->stage == PS_NEW)
		kp->stage = PS_STARTED;
	/* Keep its address taken. */
	if (ip != NULL && kp->node != NULL && !(kp->flags & PF_HOSTNET) &&
	    kp->node->ncidr > 0 && node_bits(kp->node) == 0) {
		uint32_t idx = cidr_index(&kp->node->cidr[0], ip);

		if (idx != 0 && !bit_get(kp->node, idx)) {
			bit_set(kp->node, idx, true);
			kp->ip_idx = idx;
		}
	}
}

/*
 * Events
 */

static int
emit(struct kubelet *k, const struct kpod *kp, const struct json_object *pod, int ci,
    const char *type, const char *reason, const char *fmt, ...) _printf_(7, 8);

static int
emit(struct kubelet *k, const struct kpod *kp, const struct json_object *pod, int ci,
    const char *type, const char *reason, const char *fmt, ...)
{
	char msg[1024], fp[DC_SEGMENT_MAX + 32];
	struct api_event e = { .about = pod, .kind = "Pod", .with_rv = true,
	    .type = type, .reason = reason, .message = msg, .component = KUBELET_NAME,
	    .host = kp->node != NULL ? kp->node->name : "" };
	va_list ap;

	if (k->opts.no_events || kc_json_str(pod, "metadata", "namespace") == NULL)
		return 0;
	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	e.stamp = wall_ms(k, now_ms()) * UINT64_C(1000000) + ++k->event_seq;
	if (ci >= 0) {
		(void)snprintf(fp, sizeof(fp), "spec.%s{%s}",
		    (size_t)ci < kp->ninit ? "initContainers" : "containers",
		    cname(pod, kp, (size_t)ci));
		e.field_path = fp;
	}
	return api_record_event(k->dc, &e);
}

/*
 * Container transitions
 */

static void
cont_end(struct kcont *c, uint64_t when, int exit_code, bool killed)
{
	c->end_ms = when;
	c->exit_code = (int16_t)exit_code;
	if (killed)
		c->flags |= CF_KILLED;
	else
		c->flags &= (uint8_t)~CF_KILLED;
	c->state = CS_DONE;
}

/* Starts (or restarts) regular container 'i' at 'now'; CS_CONFIGERR if it cannot. */
static int
cont_start(struct kubelet *k, struct kpod *kp, const struct json_object *pod, size_t i,
    uint64_t now)
{
	struct kcont *c = &kp->c[i];
	const char *name = cname(pod, kp, i);
	const char *image = kc_json_str(cspec(pod, kp, i), "image");
	char err[STATUS_MSG_MAX];
	struct cconf cf = { .run_ms = 0 };
	int r;

	if (i >= kp->ninit && cconf_parse(pod, name, &cf, err, sizeof(err)) < 0) {
		bool first = c->state != CS_CONFIGERR || !(c->flags & CF_CONFIG_EVENT);

		c->state = CS_CONFIGERR;
		c->flags |= CF_CONFIG_EVENT;
		if (first)
			return emit(k, kp, pod, (int)i, "Warning", "Failed", "Error: %s", err);
		return 0;
	}
	c->flags &= (uint8_t)~CF_CONFIG_EVENT;
	if (c->start_ms != 0) {
		/* The ended run becomes the previous one. */
		c->prev_start_ms = c->start_ms;
		c->prev_start_s = c->start_s;
		c->prev_end_ms = c->end_ms != 0 ? c->end_ms : now;
		c->prev_exit = c->exit_code;
		c->flags = (uint8_t)((c->flags & ~CF_PREV_KILLED) |
		    (c->flags & CF_KILLED ? CF_PREV_KILLED : 0));
		c->restarts++;
	}
	c->flags &= (uint8_t)~(CF_KILLED | CF_KILL_EVENT | CF_IGNORE_TERM | CF_WAITED);
	if (cf.ignore_term)
		c->flags |= CF_IGNORE_TERM;
	c->run_ms = i < kp->ninit ? 0 : cf.run_ms;
	c->want_exit = (int16_t)cf.exit_code;
	c->start_ms = now;
	c->start_s = (int64_t)(wall_ms(k, now) / 1000);
	c->end_ms = 0;
	c->exit_code = 0;
	c->state = CS_RUNNING;
	if ((r = emit(k, kp, pod, (int)i, "Normal", "Pulled",
	    "Container image \"%s\" already present on machine", image != NULL ? image : "")) < 0 ||
	    (r = emit(k, kp, pod, (int)i, "Normal", "Created", "Created container: %s",
	    name)) < 0 ||
	    (r = emit(k, kp, pod, (int)i, "Normal", "Started", "Started container %s",
	    name)) < 0)
		return r;
	return 0;
}

/* After a run ended: restart at once, wait in CrashLoopBackOff, or stay done. */
static int
cont_after_exit(struct kubelet *k, struct kpod *kp, const struct json_object *pod, size_t i,
    uint64_t now)
{
	struct kcont *c = &kp->c[i];
	char desc[DC_SEGMENT_MAX * 2 + 64];

	if (i < kp->ninit || !restartable(pod, c->exit_code))
		return 0;
	c->state = CS_BACKOFF;
	if (c->backoff_s == 0 || c->end_ms > c->backoff_at_ms + BACKOFF_RESET_MS) {
		/* No backoff entry yet (or it expired): restart now. */
		c->backoff_s = BACKOFF_INITIAL_S;
		c->backoff_at_ms = now;
		c->due_ms = now;
		c->flags &= (uint8_t)~CF_WAITED;
		return 0;
	}
	c->due_ms = c->end_ms + (uint64_t)c->backoff_s * 1000;
	if (c->due_ms <= now) {
		c->flags &= (uint8_t)~CF_WAITED;
		return 0;
	}
	c->flags |= CF_WAITED;
	pod_desc(pod, desc, sizeof(desc));
	return emit(k, kp, pod, (int)i, "Warning", "BackOff",
	    "Back-off restarting failed container %s in pod %s", cname(pod, kp, i), desc);
}

/* Moves regular container 'i' along until nothing more is due at 'now'. */
static int
cont_advance(struct kubelet *k, struct kpod *kp, const struct json_object *pod, size_t i,
    uint64_t now, bool dying)
{
	struct kcont *c = &kp->c[i];
	int r = 0;

	for (int iter = 0; iter < 8 && r >= 0; iter++) {
		if (c->state == CS_RUNNING && c->run_ms != UINT64_MAX &&
		    c->start_ms + c->run_ms <= now) {
			cont_end(c, c->start_ms + c->run_ms, c->want_exit, false);
			if (!dying)
				r = cont_after_exit(k, kp, pod, i, now);
		} else if (!dying && c->state == CS_BACKOFF && c->due_ms <= now) {
			if (c->flags & CF_WAITED) {
				uint32_t b = (uint32_t)c->backoff_s * 2;

				c->backoff_s = (uint16_t)KC_MIN(b, (uint32_t)BACKOFF_MAX_S);
				c->backoff_at_ms = now;
			}
			r = cont_start(k, kp, pod, i, now);
			if (c->state == CS_CONFIGERR)
				break;
		} else if (!dying && c->state == CS_CONFIGERR) {
			r = cont_start(k, kp, pod, i, now);
			if (c->state == CS_CONFIGERR)
				break;
		} else
			break;
	}
	return r;
}

/* The pod's next due time from its containers, or UINT64_MAX. */
static uint64_t
pod_next_due(const struct kpod *kp, bool dying)
{
	uint64_t due = UINT64_MAX;

	for (size_t i = kp->ninit; i < kp->ncont; i++) {
		const struct kcont *c = &kp->c[i];

		if (c->state == CS_RUNNING && c->run_ms != UINT64_MAX)
			due = KC_MIN(due, c->start_ms + c->run_ms);
		if (c->state == CS_RUNNING && dying && (c->flags & CF_IGNORE_TERM))
			due = KC_MIN(due, kp->kill_ms);
		if (!dying && c->state == CS_BACKOFF)
			due = KC_MIN(due, c->due_ms);
	}
	return due;
}

/*
 * Status
 */

static void
container_id(const struct kpod *kp, const char *name, uint32_t run, char out[80])
{
	char hex[65];

	hex64(hash64(hash64(KC_FNV1A64_INIT, kp->uid), name) + run, hex);
	(void)snprintf(out, 80, "containerd://%s", hex);
}

/* The image as containerd reports it ("busybox" -> docker.io/library/busybox:latest). */
static void
image_ref(const char *image, char *buf, size_t size)
{
	const char *slash = strchr(image, '/');
	const char *last = strrchr(image, '/');
	const char *tag;
	bool domain = slash != NULL && (memchr(image, '.', (size_t)(slash - image)) != NULL ||
	    memchr(image, ':', (size_t)(slash - image)) != NULL ||
	    strncmp(image, "localhost/", 10) == 0);

	last = last != NULL ? last + 1 : image;
	tag = strchr(last, '@') != NULL || strchr(last, ':') != NULL ? "" : ":latest";
	if (domain)
		(void)snprintf(buf, size, "%s%s", image, tag);
	else if (slash != NULL)
		(void)snprintf(buf, size, "docker.io/%s%s", image, tag);
	else
		(void)snprintf(buf, size, "docker.io/library/%s%s", image, tag);
}

static void
image_id(const char *image, char *buf, size_t size)
{
	char ref[600], hex[65];
	const char *at = strchr(image, '@');
	char *colon, *slash;

	image_ref(image, ref, sizeof(ref));
	if (at != NULL) {
		kc_strlcpy(buf, ref, size);
		return;
	}
	slash = strrchr(ref, '/');
	if ((colon = strrchr(slash != NULL ? slash : ref, ':')) != NULL)
		*colon = '\0';
	hex64(hash64(UINT64_C(1469598103934665603), image), hex);
	(void)snprintf(buf, size, "%s@sha256:%s", ref, hex);
}

/* The terminated.message of a run. */
static void
run_message(const struct json_object *pod, const struct kpod *kp, size_t i,
    const struct run *run, char *buf, size_t size)
{
	struct json_object *spec = cspec(pod, kp, i);
	const char *policy = kc_json_str(spec, "terminationMessagePolicy");
	char key[DC_SEGMENT_MAX * 2];
	const char *m = NULL;
	struct lines l;

	buf[0] = '\0';
	if (!run->killed && i >= kp->ninit)
		m = ann_get(pod, "termination-message", cname(pod, kp, i), true, key,
		    sizeof(key));
	if (!str_empty(m)) {
		size_t n = KC_MIN(strlen(m), (size_t)TERM_MSG_MAX);

		n = KC_MIN(n, size - 1);
		memcpy(buf, m, n);
		buf[n] = '\0';
		return;
	}
	if (run->exit_code != 0 && policy != NULL &&
	    strcmp(policy, "FallbackToLogsOnError") == 0) {
		lines_of(pod, kp, i, &l);
		fallback_message(&l, run, buf, size);
	}
}

static const char *
run_reason(const struct json_object *pod, const struct kpod *kp, size_t i,
    const struct run *run, char *key, size_t size)
{
	const char *r;

	if (!run->killed && i >= kp->ninit &&
	    (r = ann_get(pod, "reason", cname(pod, kp, i), true, key, size)) != NULL &&
	    r[0] != '\0')
		return r;
	return run->exit_code == 0 ? "Completed" : "Error";
}

/* {"terminated": {...}} of a run. */
static int
terminated_json(struct kubelet *k, const struct json_object *pod, const struct kpod *kp,
    size_t i, const struct run *run, struct json_object **ret)
{
	struct json_object *o = json_object_new_object(), *t;
	char id[80], started[KC_TIME_MAX], finished[KC_TIME_MAX], key[DC_SEGMENT_MAX * 2];
	char msg[TERM_MSG_MAX + 1];

	if (o == NULL)
		return -ENOMEM;
	container_id(kp, cname(pod, kp, i), run->index, id);
	fmt_second(run->start_s, started);
	fmt_time(k, run->end_ms, finished);
	run_message(pod, kp, i, run, msg, sizeof(msg));
	if ((t = kc_json_ensure_obj(o, "terminated")) == NULL ||
	    kc_json_set_str(t, "containerID", id) < 0 ||
	    kc_json_set_int(t, "exitCode", run->exit_code) < 0 ||
	    kc_json_set_str(t, "finishedAt", finished) < 0 ||
	    (msg[0] != '\0' && kc_json_set_str(t, "message", msg) < 0) ||
	    kc_json_set_str(t, "reason", run_reason(pod, kp, i, run, key, sizeof(key))) < 0 ||
	    kc_json_set_str(t, "startedAt", started) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	*ret = o;
	return 0;
}

static void
current_run(const struct kcont *c, struct run *ret)
{
	ret->start_ms = c->start_ms;
	ret->start_s = c->start_s;
	ret->end_ms = c->end_ms;
	ret->exit_code = c->exit_code;
	ret->killed = (c->flags & CF_KILLED) != 0;
	ret->index = c->restarts;
}

static void
prev_run(const struct kcont *c, struct run *ret)
{
	ret->start_ms = c->prev_start_ms;
	ret->start_s = c->prev_start_s;
	ret->end_ms = c->prev_end_ms;
	ret->exit_code = c->prev_exit;
	ret->killed = (c->flags & CF_PREV_KILLED) != 0;
	ret->index = c->restarts > 0 ? c->restarts - 1 : 0;
}

static int
set_waiting(struct json_object *o, const char *reason, const char *message)
{
	struct json_object *st = json_object_new_object(), *w;

	if (st == NULL || kc_json_put(o, "state", st) < 0 ||
	    (w = kc_json_ensure_obj(st, "waiting")) == NULL ||
	    (message != NULL && kc_json_set_str(w, "message", message) < 0) ||
	    kc_json_set_str(w, "reason", reason) < 0)
		return -ENOMEM;
	return 0;
}

/* One entry of containerStatuses / initContainerStatuses. */
static int
cstatus_json(struct kubelet *k, const struct json_object *pod, const struct kpod *kp,
    size_t i, bool terminal, struct json_object **ret)
{
	const struct kcont *c = &kp->c[i];
	const char *name = cname(pod, kp, i);
	const char *image = kc_json_str(cspec(pod, kp, i), "image");
	bool init = i < kp->ninit, ran = c->start_ms != 0;
	bool ended = ran && c->end_ms != 0;
	struct json_object *o = json_object_new_object(), *last = NULL, *st = NULL;
	char id[80], img[600], imgid[700], started[KC_TIME_MAX], msg[STATUS_MSG_MAX];
	char desc[DC_SEGMENT_MAX * 2 + 64], dur[32];
	struct run run;
	struct cconf cf;
	bool ready = false, is_started = false;
	int r = -ENOMEM;

	if (o == NULL)
		return -ENOMEM;
	if (image == NULL)
		image = "";
	/* lastState: the run before this one, or the ended run while waiting. */
	if ((c->state == CS_BACKOFF || c->state == CS_CONFIGERR) && ended) {
		current_run(c, &run);
		if ((r = terminated_json(k, pod, kp, i, &run, &last)) < 0)
			goto fail;
	} else if (c->prev_start_ms != 0) {
		prev_run(c, &run);
		if ((r = terminated_json(k, pod, kp, i, &run, &last)) < 0)
			goto fail;
	} else if ((last = json_object_new_object()) == NULL)
		goto fail;
	if (ran) {
		image_ref(image, img, sizeof(img));
		image_id(image, imgid, sizeof(imgid));
		container_id(kp, name, c->restarts, id);
	} else {
		kc_strlcpy(img, image, sizeof(img));
		imgid[0] = '\0';
	}
	r = -ENOMEM;
	if (ran && kc_json_set_str(o, "containerID", id) < 0)
		goto fail;
	if (kc_json_set_str(o, "image", img) < 0 || kc_json_set_str(o, "imageID", imgid) < 0 ||
	    kc_json_put(o, "lastState", last) < 0)
		goto fail_nolast;
	last = NULL;
	if (kc_json_set_str(o, "name", name) < 0)
		goto fail;
	switch (c->state) {
	case CS_RUNNING:
		fmt_second(c->start_s, started);
		if ((st = json_object_new_object()) == NULL || kc_json_put(o, "state", st) < 0 ||
		    (st = kc_json_ensure_obj(st, "running")) == NULL ||
		    kc_json_set_str(st, "startedAt", started) < 0)
			goto fail;
		ready = !init;
		is_started = true;
		break;
	case CS_DONE:
		current_run(c, &run);
		if ((r = terminated_json(k, pod, kp, i, &run, &st)) < 0 ||
		    (r = kc_json_put(o, "state", st)) < 0)
			goto fail;
		r = -ENOMEM;
		ready = init && c->exit_code == 0;
		break;
	case CS_BACKOFF:
		if (terminal) {
			current_run(c, &run);
			if ((r = terminated_json(k, pod, kp, i, &run, &st)) < 0 ||
			    (r = kc_json_put(o, "state", st)) < 0)
				goto fail;
			r = -ENOMEM;
			break;
		}
		pod_desc(pod, desc, sizeof(desc));
		fmt_duration(c->backoff_s, dur, sizeof(dur));
		(void)snprintf(msg, sizeof(msg), "back-off %s restarting failed container=%s "
		    "pod=%s", dur, name, desc);
		if (set_waiting(o, "CrashLoopBackOff", msg) < 0)
			goto fail;
		break;
	case CS_CONFIGERR:
	case CS_WAITING:
	default:
		if (terminal) {
			struct json_object *t;

			if ((st = json_object_new_object()) == NULL ||
			    kc_json_put(o, "state", st) < 0 ||
			    (t = kc_json_ensure_obj(st, "terminated")) == NULL ||
			    kc_json_set_int(t, "exitCode", 137) < 0 ||
			    kc_json_put_null(t, "finishedAt") < 0 ||
			    kc_json_set_str(t, "message", "The container could not be located "
			    "when the pod was terminated") < 0 ||
			    kc_json_set_str(t, "reason", "ContainerStatusUnknown") < 0 ||
			    kc_json_put_null(t, "startedAt") < 0)
				goto fail;
			break;
		}
		if (c->state == CS_CONFIGERR) {
			msg[0] = '\0';
			(void)cconf_parse(pod, name, &cf, msg, sizeof(msg));
			if (set_waiting(o, "CreateContainerConfigError", msg) < 0)
				goto fail;
		} else if (set_waiting(o, kp->ninit > 0 ? "PodInitializing" :
		    "ContainerCreating", NULL) < 0)
			goto fail;
		break;
	}
	if (kc_json_set_bool(o, "ready", ready) < 0 ||
	    kc_json_set_int(o, "restartCount", c->restarts) < 0 ||
	    kc_json_set_bool(o, "started", is_started) < 0)
		goto fail;
	*ret = o;
	return 0;
fail_nolast:
	last = NULL;
fail:
	if (last != NULL)
		json_object_put(last);
	json_object_put(o);
	return r < 0 ? r : -ENOMEM;
}

static bool
kubelet_condition(const char *type)
{
	return strcmp(type, "PodReadyToStartContainers") == 0 ||
	    strcmp(type, "Initialized") == 0 || strcmp(type, "Ready") == 0 ||
	    strcmp(type, "ContainersReady") == 0 || strcmp(type, "PodScheduled") == 0;
}

static struct json_object *
old_condition(const struct json_object *pod, const char *type)
{
	struct json_object *conds = kc_json_get(pod, "status", "conditions");

	for (size_t i = 0; i < arr_len(conds); i++) {
		struct json_object *c = json_object_array_get_idx(conds, i);
		const char *t = kc_json_str(c, "type");

		if (t != NULL && strcmp(t, type) == 0)
			return c;
	}
	return NULL;
}

static int
add_condition(struct json_object *conds, const struct json_object *pod, const char *type,
    bool status, const char *reason, const char *message)
{
	struct json_object *old = old_condition(pod, type), *c;
	const char *s = status ? "True" : "False", *os = kc_json_str(old, "status");
	const char *olt = kc_json_str(old, "lastTransitionTime");
	char now[KC_TIME_MAX];

	if (os != NULL && strcmp(os, s) == 0 && olt != NULL)
		kc_strlcpy(now, olt, sizeof(now));
	else
		api_now(now);
	if ((c = json_object_new_object()) == NULL || kc_json_append(conds, c) < 0 ||
	    kc_json_put_null(c, "lastProbeTime") < 0 ||
	    kc_json_set_str(c, "lastTransitionTime", now) < 0 ||
	    (message != NULL && kc_json_set_str(c, "message", message) < 0) ||
	    (reason != NULL && kc_json_set_str(c, "reason", reason) < 0) ||
	    kc_json_set_str(c, "status", s) < 0 ||
	    kc_json_set_str(c, "type", type) < 0)
		return -ENOMEM;
	return 0;
}

/* "[a b]" of the names for which 'pick' holds, as Go prints a []string. */
static bool
name_list(const struct json_object *pod, const struct kpod *kp, size_t from, size_t to,
    bool (*pick)(const struct kcont *), char *buf, size_t size)
{
	size_t off = 1;
	bool any = false;

	kc_strlcpy(buf, "[", size);
	for (size_t i = from; i < to; i++) {
		if (!pick(&kp->c[i]))
			continue;
		(void)snprintf(buf + off, size - off, "%s%s", any ? " " : "", cname(pod, kp, i));
		off = strlen(buf);
		any = true;
	}
	kc_strlcat(buf, "]", size);
	return any;
}

static bool
pick_unready(const struct kcont *c)
{
	return c->state != CS_RUNNING;
}

static bool
pick_incomplete(const struct kcont *c)
{
	return c->state != CS_DONE || c->exit_code != 0;
}

static const char *
compute_phase(const struct json_object *pod, const struct kpod *kp, bool terminal)
{
	size_t running = 0, waiting = 0, stopped = 0, succeeded = 0;

	for (size_t i = 0; i < kp->ninit; i++)
		if (kp->c[i].state != CS_DONE)
			return terminal ? "Failed" : "Pending";
	for (size_t i = kp->ninit; i < kp->ncont; i++) {
		const struct kcont *c = &kp->c[i];
		bool ended = c->start_ms != 0 && c->end_ms != 0;

		switch (c->state) {
		case CS_RUNNING:
			running++;
			break;
		case CS_DONE:
			stopped++;
			if (c->exit_code == 0)
				succeeded++;
			break;
		case CS_BACKOFF:
			stopped++;
			if (terminal && c->exit_code == 0)
				succeeded++;
			break;
		case CS_CONFIGERR:
			if (ended && !terminal)
				stopped++;
			else
				waiting++;
			break;
		default:
			waiting++;
			break;
		}
	}
	if (terminal)
		return running == 0 && waiting == 0 && stopped == succeeded ? "Succeeded" :
		    "Failed";
	if (waiting > 0)
		return "Pending";
	if (running > 0)
		return "Running";
	if (strcmp(restart_policy(pod), "Always") == 0)
		return "Running";
	if (stopped == succeeded)
		return "Succeeded";
	if (strcmp(restart_policy(pod), "Never") == 0)
		return "Failed";
	return "Running";
}

static int
ip_list(struct json_object *status, const char *one, const char *many, char ips[][64],
    int n)
{
	struct json_object *arr;

	if (n == 0) {
		json_object_object_del(status, one);
		json_object_object_del(status, many);
		return 0;
	}
	if (kc_json_set_str(status, one, ips[0]) < 0 ||
	    (arr = json_object_new_array()) == NULL || kc_json_put(status, many, arr) < 0)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		struct json_object *e = json_object_new_object();

		if (e == NULL || kc_json_append(arr, e) < 0 || kc_json_set_str(e, "ip", ips[i]) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The status the kubelet posts for the pod now (a new tree). */
static int
build_status(struct kubelet *k, const struct json_object *pod, const struct kpod *kp,
    bool terminal, struct json_object **ret)
{
	struct json_object *st = kc_json_copy(kc_json_get(pod, "status"));
	struct json_object *conds = NULL, *cs = NULL, *ics = NULL, *old, *e;
	const char *phase = kp->stage == PS_NEW ? (terminal ? "Failed" : "Pending") :
	    compute_phase(pod, kp, terminal);
	bool succeeded = strcmp(phase, "Succeeded") == 0, failed = strcmp(phase, "Failed") == 0;
	char ips[2][64], hosts[2][64], names[STATUS_MSG_MAX], msg[STATUS_MSG_MAX + 64];
	char now[KC_TIME_MAX];
	int nips = 0, nhosts = 0;
	bool init_done, all_ready, started_any = false;

	if (st == NULL && (st = json_object_new_object()) == NULL)
		return -ENOMEM;
	if (!json_object_is_type(st, json_type_object)) {
		json_object_put(st);
		if ((st = json_object_new_object()) == NULL)
			return -ENOMEM;
	}
	if (kc_json_set_str(st, "phase", phase) < 0)
		goto oom;
	/* Conditions: others first, in their order; then the kubelet's. */
	if ((conds = json_object_new_array()) == NULL)
		goto oom;
	old = kc_json_get(pod, "status", "conditions");
	for (size_t i = 0; i < arr_len(old); i++) {
		const char *t = kc_json_str(json_object_array_get_idx(old, i), "type");

		if (t != NULL && !kubelet_condition(t) &&
		    kc_json_append(conds, kc_json_copy(json_object_array_get_idx(old, i))) < 0)
			goto oom;
	}
	for (size_t i = kp->ninit; i < kp->ncont; i++)
		if (kp->c[i].start_ms != 0)
			started_any = true;
	if (add_condition(conds, pod, "PodReadyToStartContainers",
	    kp->stage != PS_NEW && !terminal && !succeeded && !failed, NULL, NULL) < 0)
		goto oom;
	init_done = !name_list(pod, kp, 0, kp->ninit, pick_incomplete, names, sizeof(names));
	if (kp->ninit == 0 || init_done || started_any) {
		if (add_condition(conds, pod, "Initialized", true,
		    kp->ninit > 0 && succeeded ? "PodCompleted" : NULL, NULL) < 0)
			goto oom;
	} else {
		(void)snprintf(msg, sizeof(msg), "containers with incomplete status: %s", names);
		if (add_condition(conds, pod, "Initialized", false, "ContainersNotInitialized",
		    msg) < 0)
			goto oom;
	}
	all_ready = !name_list(pod, kp, kp->ninit, kp->ncont, pick_unready, names,
	    sizeof(names));
	(void)snprintf(msg, sizeof(msg), "containers with unready status: %s", names);
	if (succeeded || failed) {
		const char *why = succeeded ? "PodCompleted" : "PodFailed";

		if (add_condition(conds, pod, "Ready", false, why, NULL) < 0 ||
		    add_condition(conds, pod, "ContainersReady", false, why, NULL) < 0)
			goto oom;
	} else if (all_ready) {
		if (add_condition(conds, pod, "Ready", true, NULL, NULL) < 0 ||
		    add_condition(conds, pod, "ContainersReady", true, NULL, NULL) < 0)
			goto oom;
	} else if (add_condition(conds, pod, "Ready", false, "ContainersNotReady", msg) < 0 ||
	    add_condition(conds, pod, "ContainersReady", false, "ContainersNotReady", msg) < 0)
		goto oom;
	if ((e = old_condition(pod, "PodScheduled")) != NULL) {
		if (kc_json_append(conds, kc_json_copy(e)) < 0)
			goto oom;
	} else if (add_condition(conds, pod, "PodScheduled", true, NULL, NULL) < 0)
		goto oom;
	if (kc_json_put(st, "conditions", conds) < 0) {
		conds = NULL;
		goto oom;
	}
	conds = NULL;
	/* Addresses. */
	for (int i = 0; kp->node != NULL && i < kp->node->nhost; i++)
		kc_strlcpy(hosts[nhosts++], kp->node->host[i], sizeof(hosts[0]));
	if (kp->stage != PS_NEW) {
		if (kp->flags & PF_HOSTNET)
			for (int i = 0; i < nhosts; i++)
				kc_strlcpy(ips[nips++], hosts[i], sizeof(ips[0]));
		else if (kp->ip_idx != 0)
			for (int i = 0; i < kp->node->ncidr; i++)
				cidr_addr(&kp->node->cidr[i], kp->ip_idx, ips[nips++],
				    sizeof(ips[0]));
	}
	if (nhosts > 0 && ip_list(st, "hostIP", "hostIPs", hosts, nhosts) < 0)
		goto oom;
	if (kp->stage != PS_NEW && nips > 0 && ip_list(st, "podIP", "podIPs", ips, nips) < 0)
		goto oom;
	if (kc_json_str(st, "startTime") == NULL) {
		api_now(now);
		if (kc_json_set_str(st, "startTime", now) < 0)
			goto oom;
	}
	/* Container statuses. */
	if (kp->ninit > 0) {
		if ((ics = json_object_new_array()) == NULL ||
		    kc_json_put(st, "initContainerStatuses", ics) < 0)
			goto oom;
		for (size_t i = 0; i < kp->ninit; i++) {
			struct json_object *c = NULL;

			if (cstatus_json(k, pod, kp, i, terminal, &c) < 0 ||
			    kc_json_append(ics, c) < 0)
				goto oom;
		}
	}
	if ((cs = json_object_new_array()) == NULL ||
	    kc_json_put(st, "containerStatuses", cs) < 0)
		goto oom;
	for (size_t i = kp->ninit; i < kp->ncont; i++) {
		struct json_object *c = NULL;

		if (cstatus_json(k, pod, kp, i, terminal, &c) < 0 || kc_json_append(cs, c) < 0)
			goto oom;
	}
	*ret = st;
	return 0;
oom:
	if (conds != NULL)
		json_object_put(conds);
	json_object_put(st);
	return -ENOMEM;
}

/*
 * Writes 'status' (consumed) into the pod through the status subresource:
 * 0 (also when nothing changed or the pod is gone), KC_ECONFLICT when it
 * changed meanwhile (sync again), or a negative code.
 */
static int
write_status(struct kubelet *k, const struct json_object *pod, struct json_object *status)
{
	const struct dc_rtype *pt = pod_type(k->dc);
	struct json_object *next;
	int r;

	/*
	 * The status is built anew: what did not change is shared with the
	 * stored one, so the field manager skips it and the history keeps
	 * it once. The same status again: no copy, no managedFields, no
	 * write.
	 */
	obj_share_equal(status, kc_json_get(pod, "status"));
	if (pt == NULL || json_object_equal(status,
	    (struct json_object *)(uintptr_t)kc_json_get(pod, "status"))) {
		json_object_put(status);
		return 0;
	}
	/* Only status and metadata change: the rest is shared (obj_cow()). */
	if ((next = obj_cow(pod)) == NULL || kc_json_put(next, "status", status) < 0) {
		if (next != NULL)
			json_object_put(next);
		else
			json_object_put(status);
		return -ENOMEM;
	}
	if (k->dc->hooks.managed_fields != NULL) {
		struct dc_write_ctx wc = { .dc = k->dc, .rt = pt, .op = DC_OP_UPDATE,
		    .subresource = "status", .field_manager = KUBELET_NAME, .old = pod };

		if ((r = k->dc->hooks.managed_fields(&wc, next)) < 0) {
			json_object_put(next);
			return r;
		}
	}
	k->self_write = true;
	r = storage_update(k->dc->store, pt->coll, next, obj_rv(pod), NULL);
	k->self_write = false;
	return r == DC_UNCHANGED || r == KC_ENOTFOUND ? 0 : r;
}

/* Deletes a finished pod object (grace 0, its uid as the precondition). */
static int
finish_delete(struct kubelet *k, const struct json_object *pod)
{
	const struct dc_rtype *pt = pod_type(k->dc);
	char ns[DC_SEGMENT_MAX], name[DC_SEGMENT_MAX], uid[64];
	int r;

	if (pt == NULL)
		return 0;
	kc_strlcpy(ns, kc_json_str(pod, "metadata", "namespace"), sizeof(ns));
	kc_strlcpy(name, kc_json_str(pod, "metadata", "name"), sizeof(name));
	kc_strlcpy(uid, kc_json_str(pod, "metadata", "uid") != NULL ?
	    kc_json_str(pod, "metadata", "uid") : "", sizeof(uid));
	r = api_delete_object_opts(k->dc, pt, ns, name, 0, NULL, uid[0] != '\0' ? uid : NULL);
	return r == KC_ENOTFOUND || r == KC_ECONFLICT ? 0 : r;
}

/*
 * Sync: one pod, from the stored object and its record
 */

/* A pod IP (or the host's, with hostNetwork); false while none can be had. */
static bool
ensure_ip(struct kubelet *k, struct kpod *kp, const struct json_object *pod)
{
	if (kp->flags & PF_HOSTNET || kp->ip_idx != 0)
		return true;
	if (kp->node->ncidr == 0)
		return false;	/* nodes.c (or the file) gives it a podCIDR later */
	if ((kp->ip_idx = ip_alloc(kp->node)) != 0)
		return true;
	if (!(kp->flags & PF_NOIP_EVENT)) {
		kp->flags |= PF_NOIP_EVENT;
		(void)emit(k, kp, pod, -1, "Warning", "FailedCreatePodSandBox",
		    "Failed to create pod sandbox: plugin type=\"host-local\" failed (add): "
		    "failed to allocate for range 0: no IP addresses available in range set");
	}
	return false;
}

static int
start_pod(struct kubelet *k, struct kpod *kp, const struct json_object *pod, uint64_t now)
{
	int r = 0;

	kp->stage = PS_STARTED;
	kp->flags &= (uint8_t)~PF_NOIP_EVENT;
	/* Init containers run one after the other, each exiting 0 at once. */
	for (size_t i = 0; i < kp->ninit && r >= 0; i++) {
		if ((r = cont_start(k, kp, pod, i, now)) >= 0)
			cont_end(&kp->c[i], now, 0, false);
	}
	for (size_t i = kp->ninit; i < kp->ncont && r >= 0; i++)
		r = cont_start(k, kp, pod, i, now);
	return r;
}

/* Whether a client marked a container terminated that the kubelet runs. */
static bool
client_terminated(const struct kpod *kp, const struct json_object *pod)
{
	struct json_object *cs = kc_json_get(pod, "status", "containerStatuses");
	struct json_object *ics = kc_json_get(pod, "status", "initContainerStatuses");

	for (size_t i = 0; i < kp->ncont; i++) {
		struct json_object *list = i < kp->ninit ? ics : cs;
		const char *name = cname(pod, kp, i);

		if (kp->c[i].state != CS_RUNNING)
			continue;
		for (size_t j = 0; j < arr_len(list); j++) {
			struct json_object *e = json_object_array_get_idx(list, j);
			const char *n = kc_json_str(e, "name");

			if (n != NULL && strcmp(n, name) == 0 &&
			    kc_json_get(e, "state", "terminated") != NULL)
				return true;
		}
	}
	return false;
}

static int
sync_pod_ref(struct kubelet *k, struct kpod *kp, const struct json_object *pod);

/* Syncs with a reference on the stored pod (Events are written meanwhile). */
static int
sync_pod(struct kubelet *k, struct kpod *kp)
{
	const struct json_object *pod = stored_pod(k, kp);
	struct json_object *ref;
	int r;

	if (pod == NULL)
		return 0;
	ref = json_object_get((struct json_object *)(uintptr_t)pod);
	r = sync_pod_ref(k, kp, ref);
	json_object_put(ref);
	return r;
}

static int
sync_pod_ref(struct kubelet *k, struct kpod *kp, const struct json_object *pod)
{
	const char *uid = kc_json_str(pod, "metadata", "uid");
	struct json_object *status = NULL;
	uint64_t now = now_ms(), due = UINT64_MAX;
	bool dying, terminal = false;
	int r = 0;

	if (pod == NULL || uid == NULL || strcmp(uid, kp->uid) != 0)
		return 0;
	if (kp->node == NULL || !kp->node->exists || kp->node->stopped)
		return 0;
	dying = deleting(pod);
	if (kp->stage == PS_FINISHED || phase_terminal(pod)) {
		kp->stage = PS_FINISHED;
		return dying ? finish_delete(k, pod) : 0;
	}
	if (dying && kp->kill_ms == 0) {
		kp->kill_ms = parse_mono(k, kc_json_str(pod, "metadata", "deletionTimestamp"));
		if (kp->kill_ms == 0 || kp->kill_ms < now)
			kp->kill_ms = now;
	}
	if (kp->stage == PS_NEW && !dying) {
		if (now < kp->seen_ms + k->opts.start_delay_ms)
			due = kp->seen_ms + k->opts.start_delay_ms;
		else if (ensure_ip(k, kp, pod) && (r = start_pod(k, kp, pod, now)) < 0)
			return r;
	}
	if (kp->stage == PS_STARTED) {
		for (size_t i = kp->ninit; i < kp->ncont && r >= 0; i++)
			r = cont_advance(k, kp, pod, i, now, dying);
		if (r < 0)
			return r;
	}
	if (dying) {
		bool running = false;

		for (size_t i = kp->ninit; i < kp->ncont && r >= 0; i++) {
			struct kcont *c = &kp->c[i];

			if (c->state != CS_RUNNING)
				continue;
			if (!(c->flags & CF_KILL_EVENT)) {
				c->flags |= CF_KILL_EVENT;
				r = emit(k, kp, pod, (int)i, "Normal", "Killing",
				    "Stopping container %s", cname(pod, kp, i));
			}
			if ((c->flags & CF_IGNORE_TERM) && now < kp->kill_ms)
				running = true;
			else
				cont_end(c, now, (c->flags & CF_IGNORE_TERM) ? 137 : 143, true);
		}
		if (r < 0)
			return r;
		terminal = !running;
	}
	if (!terminal && kp->stage == PS_STARTED &&
	    strcmp(compute_phase(pod, kp, false), "Succeeded") == 0)
		terminal = true;
	if (!terminal && kp->stage == PS_STARTED &&
	    strcmp(compute_phase(pod, kp, false), "Failed") == 0)
		terminal = true;
	if ((r = build_status(k, pod, kp, terminal, &status)) < 0)
		return r;
	if ((r = write_status(k, pod, status)) == KC_ECONFLICT)
		return heap_put(k, kp, now + KUBELET_DELAY_MS);
	if (r < 0)
		return r;
	if (terminal) {
		kp->stage = PS_FINISHED;
		if (dying && (pod = stored_pod(k, kp)) != NULL)
			return finish_delete(k, pod);
		return 0;
	}
	due = KC_MIN(due, pod_next_due(kp, dying));
	if (due != UINT64_MAX && (r = heap_put(k, kp, due)) < 0)
		return r;
	return 0;
}

/*
 * The loop timer, the subscription, the scan
 */

static int64_t
tick(void *arg)
{
	struct kubelet *k = arg;
	uint64_t now, due = UINT64_MAX;
	struct kpod *kp;
	size_t n = 0;

	if (k->dc->stopping)
		return DC_TIMER_STOP;
	k->in_tick = true;
	now = now_ms();
	while ((kp = due_pod(kc_heap_top(&k->due))) != NULL && kp->due_ms <= now &&
	    n < KUBELET_BATCH) {
		int r;

		kc_heap_remove(&k->due, &kp->hn);
		k->syncing = kp;
		r = sync_pod(k, kp);
		k->syncing = NULL;
		if (r < 0)
			kc_log_debug(&(struct kc_log_ctx){ .action = "kubelet" },
			    "pod %s: %s", kp->key, kc_strerror(r));
		if (kp->flags & PF_GONE)
			pod_free(k, kp);
		n++;
	}
	streams_poll(k, &due);
	k->in_tick = false;
	if ((kp = due_pod(kc_heap_top(&k->due))) != NULL)
		due = KC_MIN(due, kp->due_ms);
	if (due == UINT64_MAX)
		return DC_TIMER_STOP;
	now = now_ms();
	return due > now ? (int64_t)(due - now) : 0;
}

static int
feed_node(struct kubelet *k, const struct json_object *obj, bool gone)
{
	const char *name = kc_json_str(obj, "metadata", "name");
	struct knode *n;
	struct kpod *kp;

	if (name == NULL)
		return 0;
	if (gone) {
		if ((n = node_find(k, name)) != NULL) {
			n->exists = false;
			node_maybe_free(k, n);
		}
		return 0;
	}
	if ((n = node_ensure(k, name)) == NULL)
		return -ENOMEM;
	if (!node_update(k, n, obj))
		return 0;
	for (kp = TAILQ_FIRST(&n->pods); kp != NULL; kp = TAILQ_NEXT(kp, nlink))
		kick_pod(k, kp, KUBELET_DELAY_MS);
	return 0;
}

/*
 * The record of a pod, made when it is first seen bound: 0 with '*ret'
 * (NULL for a pod the kubelets do not run), or -ENOMEM.
 */
static int
track(struct kubelet *k, const struct json_object *pod, bool restored, struct kpod **ret)
{
	char key[2 * DC_SEGMENT_MAX];
	const char *uid = kc_json_str(pod, "metadata", "uid");
	struct kpod *kp;
	int r;

	*ret = NULL;
	if (obj_key(pod, key, sizeof(key)) < 0)
		return 0;
	if ((kp = pod_find(k, key)) != NULL) {
		if (uid != NULL && strcmp(uid, kp->uid) == 0) {
			*ret = kp;
			return 0;
		}
		/* Another pod under the same name. */
		if (kp == k->syncing) {
			kp->flags |= PF_GONE;
			return 0;
		}
		pod_free(k, kp);
	}
	if (str_empty(kc_json_str(pod, "spec", "nodeName")))
		return 0;
	if ((r = pod_new(k, pod, &kp)) < 0)
		return r == -EINVAL ? 0 : r;
	if (restored)
		pod_resume(k, kp, pod);
	*ret = kp;
	return 0;
}

static void
wake_streams(struct kubelet *k, const char *key)
{
	struct kstream *s;

	for (s = TAILQ_FIRST(&k->streams); s != NULL; s = TAILQ_NEXT(s, link))
		if (key == NULL || strcmp(s->key, key) == 0)
			if (s->s.wake != NULL)
				s->s.wake(s->s.wake_arg);
}

static void
feed_pod(struct kubelet *k, const struct dc_event *ev)
{
	char key[2 * DC_SEGMENT_MAX];
	struct kpod *kp;

	if (ev->type == DC_EV_DELETED) {
		if (obj_key(ev->obj, key, sizeof(key)) < 0 || (kp = pod_find(k, key)) == NULL)
			return;
		if (kp == k->syncing)
			kp->flags |= PF_GONE;
		else
			pod_free(k, kp);
		wake_streams(k, key);
		return;
	}
	if (k->self_write)
		return;
	if (track(k, ev->obj, false, &kp) < 0) {
		kc_log_debug(&(struct kc_log_ctx){ .action = "kubelet" },
		    "tracking a pod: out of memory");
		return;
	}
	if (kp == NULL)
		return;
	if (kp->stage != PS_FINISHED && kp != k->syncing &&
	    (phase_terminal(ev->obj) || client_terminated(kp, ev->obj))) {
		/* A client finished it: hands off. */
		kp->stage = PS_FINISHED;
		wake_streams(k, kp->key);
	}
	if (kp != k->syncing)
		kick_pod(k, kp, KUBELET_DELAY_MS);
}

static void
on_event(void *arg, const struct dc_event *ev)
{
	struct kubelet *k = arg;
	const char *res = coll_resource(ev->coll);

	if (coll_group(ev->coll)[0] != '\0')
		return;
	if (strcmp(res, "pods") == 0)
		feed_pod(k, ev);
	else if (strcmp(res, "nodes") == 0 &&
	    feed_node(k, ev->obj, ev->type == DC_EV_DELETED) < 0)
		kc_log_debug(&(struct kc_log_ctx){ .action = "kubelet" },
		    "tracking a node: out of memory");
}

static int
scan(struct kubelet *k, const char *resource)
{
	struct dc_coll *coll = storage_find_coll(k->dc->store, "", resource);
	struct json_object **objs = NULL;
	size_t n = 0;
	int r;

	if (coll == NULL)
		return 0;
	if ((r = coll_list(coll, NULL, NULL, &objs, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && r >= 0; i++) {
		struct kpod *kp = NULL;

		if (strcmp(resource, "nodes") == 0)
			r = feed_node(k, objs[i], false);
		else if ((r = track(k, objs[i], true, &kp)) == 0 && kp != NULL &&
		    (r = heap_put(k, kp, now_ms())) == 0)
			rearm(k, now_ms());
	}
	objs_free(objs, n);
	return r;
}

/*
 * Graceful deletion
 */

static int
graceful_delete(struct dc *dc, const struct dc_rtype *rt, const struct json_object *obj)
{
	struct kubelet *k = plugin_state(dc, &kubelet_plugin);
	char key[2 * DC_SEGMENT_MAX];
	const char *uid = kc_json_str(obj, "metadata", "uid");
	struct kpod *kp;

	if (k == NULL || rt->group[0] != '\0' || strcmp(rt->plural, "pods") != 0 ||
	    obj_key(obj, key, sizeof(key)) < 0)
		goto decline;
	if ((kp = pod_find(k, key)) == NULL || uid == NULL || strcmp(uid, kp->uid) != 0 ||
	    kp->node == NULL || !kp->node->exists)
		goto decline;	/* no kubelet for it: deleted at once */
	kp->kill_ms = now_ms() + (uint64_t)KC_MAX(0, kc_json_int(obj, 0, "metadata",
	    "deletionGracePeriodSeconds")) * 1000;
	if (!kp->node->stopped)
		kick_pod(k, kp, 0);
	return 0;
decline:
	return DC_DECLINED;
}

/*
 * pods/log
 */

struct logopts {
	const char	*container;
	bool		 follow;
	bool		 previous;
	bool		 timestamps;
	int64_t		 tail;		/* -1: all */
	int64_t		 limit;		/* -1: none */
	uint64_t	 since_ms;	/* wall ms; 0: none */
};

/* Parses and validates the PodLogOptions of a request; 0 or an answered error. */
static int
log_options(struct kubelet *k, const struct dc_req *req, const char *pname,
    struct logopts *o, struct dc_resp *resp)
{
	/* PodLogOptions' field order: the first bad value names the error. */
	static const char *const ints[] = { "sinceSeconds", "tailLines", "limitBytes" };
	enum { SINCE, TAIL, LIMIT };
	struct dc_errs errs = { 0 };
	const char *since_t = req_param(req, "sinceTime");
	int64_t v[KC_ARRAY_SIZE(ints)];
	int got[KC_ARRAY_SIZE(ints)];
	char err[256];
	time_t t = 0;

	memset(o, 0, sizeof(*o));
	o->tail = o->limit = -1;
	o->container = req_param(req, "container");
	o->follow = req_param_bool(req, "follow");
	o->previous = req_param_bool(req, "previous");
	o->timestamps = req_param_bool(req, "timestamps");
	for (size_t i = 0; i < KC_ARRAY_SIZE(ints); i++) {
		if ((got[i] = req_param_i64(req, ints[i], &v[i], err, sizeof(err))) < 0) {
			errors_reply(resp, KC_EBADREQUEST, "%s", err);
			return KC_EBADREQUEST;
		}
		/* sinceTime sits between sinceSeconds and tailLines. */
		if (i == SINCE && since_t != NULL && since_t[0] != '\0' &&
		    kc_time_parse(since_t, &t) < 0) {
			errors_reply(resp, KC_EBADREQUEST, "parsing time \"%s\" as "
			    "\"2006-01-02T15:04:05Z07:00\": cannot parse \"%s\" as \"2006\"",
			    since_t, since_t);
			return KC_EBADREQUEST;
		}
	}
	/* ValidatePodLogOptions(), in its order. */
	if (got[TAIL] > 0) {
		o->tail = v[TAIL];
		if (v[TAIL] < 0)
			errs_add(&errs, "Invalid", "tailLines", "Invalid value: %" PRId64
			    ": must be greater than or equal to 0", v[TAIL]);
	}
	if (got[LIMIT] > 0) {
		o->limit = v[LIMIT];
		if (v[LIMIT] < 1)
			errs_add(&errs, "Invalid", "limitBytes", "Invalid value: %" PRId64
			    ": must be greater than 0", v[LIMIT]);
	}
	if (since_t != NULL && since_t[0] != '\0') {
		o->since_ms = (uint64_t)KC_MAX((int64_t)t, 0) * 1000;
		if (got[SINCE] > 0)
			errs_add(&errs, "Forbidden", "", "Forbidden: at most one of `sinceTime` "
			    "or `sinceSeconds` may be specified");
	} else if (got[SINCE] > 0 && v[SINCE] < 1)
		errs_add(&errs, "Invalid", "sinceSeconds", "Invalid value: %" PRId64
		    ": must be greater than 0", v[SINCE]);
	else if (got[SINCE] > 0) {
		uint64_t wall = wall_ms(k, now_ms());

		/* Further back than the epoch: every line (ms 1). */
		o->since_ms = (uint64_t)v[SINCE] >= wall / 1000 ? 1 :
		    wall - (uint64_t)v[SINCE] * 1000;
	}
	if (errs.n > 0) {
		errors_invalid(resp, "PodLogOptions", "", pname, &errs);
		return KC_EINVALID;
	}
	return 0;
}

/* Upstream's container choice (kube-apiserver's validateContainer). */
static int
log_container(const struct json_object *pod, const struct kpod *kp, const char *want,
    struct dc_resp *resp, size_t *ret)
{
	const char *pname = kc_json_str(pod, "metadata", "name");
	struct json_object *cs = kc_json_get(pod, "spec", "containers");
	struct json_object *ics = kc_json_get(pod, "spec", "initContainers");
	char names[1024] = "", inames[1024] = "";

	if (str_empty(want)) {
		if (arr_len(cs) == 1) {
			*ret = kp->ninit;
			return 0;
		}
		for (size_t i = 0; i < arr_len(cs); i++) {
			if (i > 0)
				kc_strlcat(names, " ", sizeof(names));
			kc_strlcat(names, kc_json_str(json_object_array_get_idx(cs, i), "name"),
			    sizeof(names));
		}
		for (size_t i = 0; i < arr_len(ics); i++) {
			if (i > 0)
				kc_strlcat(inames, " ", sizeof(inames));
			kc_strlcat(inames, kc_json_str(json_object_array_get_idx(ics, i), "name"),
			    sizeof(inames));
		}
		if (arr_len(ics) > 0)
			errors_reply(resp, KC_EBADREQUEST, "a container name must be specified "
			    "for pod %s, choose one of: [%s] or one of the init containers: [%s]",
			    pname, names, inames);
		else
			errors_reply(resp, KC_EBADREQUEST, "a container name must be specified "
			    "for pod %s, choose one of: [%s]", pname, names);
		return KC_EBADREQUEST;
	}
	for (size_t i = 0; i < kp->ncont; i++)
		if (strcmp(cname(pod, kp, i), want) == 0) {
			*ret = i;
			return 0;
		}
	errors_reply(resp, KC_EBADREQUEST, "container %s is not valid for pod %s", want, pname);
	return KC_EBADREQUEST;
}

/* Appends at most '*left' bytes; 0 or -E2BIG, -ENOMEM. */
static int
put_limited(struct kc_buf *out, const char *p, size_t len, uint64_t *left)
{
	if ((uint64_t)len > *left)
		len = (size_t)*left;
	*left -= len;
	return len > 0 ? kc_buf_append(out, p, len) : 0;
}

/* Appends lines [from, to) of a run, as the log shows them. */
static int
log_append(struct kubelet *k, const struct lines *l, const struct run *run, size_t from,
    size_t to, bool timestamps, uint64_t since_ms, uint64_t *left, struct kc_buf *out)
{
	char ts[48];
	int r;

	/* Counted from the second the run started: the same after a restart. */
	uint64_t base = run->start_s > 0 ? (uint64_t)run->start_s * 1000 :
	    wall_ms(k, run->start_ms);

	for (size_t i = from; i < to && *left > 0; i++) {
		uint64_t at = base + (uint64_t)i * l->interval_ms;
		size_t len;
		const char *p = line_at(l->text, i, &len);

		if (p == NULL)
			break;
		if (since_ms != 0 && at < since_ms)
			continue;
		if (timestamps) {
			fmt_nano(at, ts);
			kc_strlcat(ts, " ", sizeof(ts));
			if ((r = put_limited(out, ts, strlen(ts), left)) < 0)
				return r;
		}
		if ((r = put_limited(out, p, len, left)) < 0 ||
		    (r = put_limited(out, "\n", 1, left)) < 0)
			return r;
	}
	return 0;
}

static void
stream_release(struct dc_stream *st)
{
	struct kstream *s = (struct kstream *)st;

	if (s->k != NULL)
		TAILQ_REMOVE(&s->k->streams, s, link);
	chunk_unref(s->first);
	kc_free(s);
}

/*
 * Where a followed run is: its record (and the run) or NULL when the pod
 * is gone; '*ret_until' is how far its output reaches, '*ret_over' whether
 * the run has ended.
 */
static struct kpod *
stream_state(struct kstream *s, const struct json_object **ret_pod, struct run *ret_run,
    uint64_t *ret_until, bool *ret_over)
{
	struct kubelet *k = s->k;
	struct kpod *kp;
	const struct kcont *c;

	*ret_over = true;
	if (k == NULL || (kp = pod_find(k, s->key)) == NULL || strcmp(kp->uid, s->uid) != 0 ||
	    kp->flags & PF_GONE || (*ret_pod = stored_pod(k, kp)) == NULL)
		return NULL;
	c = &kp->c[s->ci];
	memset(ret_run, 0, sizeof(*ret_run));
	if (c->restarts == s->run) {
		current_run(c, ret_run);
		*ret_until = c->end_ms != 0 ? c->end_ms : now_ms();
		*ret_over = c->end_ms != 0 || kp->stage == PS_FINISHED;
	} else if (c->restarts == s->run + 1) {
		prev_run(c, ret_run);
		*ret_until = c->prev_end_ms;
	} else
		return NULL;
	return kp;
}

static struct dc_chunk *
stream_pull(struct dc_stream *st, bool *ret_end)
{
	struct kstream *s = (struct kstream *)st;
	const struct json_object *pod = NULL;
	struct kc_buf b;
	struct lines l;
	struct run run;
	struct kpod *kp;
	struct dc_chunk *ch = NULL;
	uint64_t until = 0;
	size_t n;
	bool over;

	*ret_end = false;
	if (s->first != NULL) {
		ch = s->first;
		s->first = NULL;
		return ch;
	}
	if (s->ended) {
		*ret_end = true;
		return NULL;
	}
	if ((kp = stream_state(s, &pod, &run, &until, &over)) == NULL) {
		s->ended = true;
		*ret_end = true;
		return NULL;
	}
	lines_of(pod, kp, s->ci, &l);
	n = lines_printed(&l, run.start_ms, until);
	if (n > s->next_line) {
		kc_buf_init(&b, DC_RESP_MAX);
		if (log_append(s->k, &l, &run, s->next_line, n, s->timestamps, 0, &s->left,
		    &b) < 0 || b.len == 0) {
			kc_buf_free(&b);
		} else {
			ch = chunk_new(b.data, b.len);
			kc_buf_free(&b);
		}
		s->next_line = n;
	}
	if (s->left == 0 || (over && s->next_line >= lines_printed(&l, run.start_ms, until)))
		s->ended = true;
	if (ch == NULL && s->ended)
		*ret_end = true;
	return ch;
}

static const struct dc_stream_ops stream_ops = {
	.pull = stream_pull,
	.release = stream_release,
};

/* Wakes the streams that have output or ended; '*ret_due': the next line due. */
static void
streams_poll(struct kubelet *k, uint64_t *ret_due)
{
	struct kstream *s;

	for (s = TAILQ_FIRST(&k->streams); s != NULL; s = TAILQ_NEXT(s, link)) {
		const struct json_object *pod = NULL;
		struct kpod *kp;
		struct lines l;
		struct run run;
		uint64_t until = 0;
		size_t n;
		bool over, wake;

		if (s->ended)
			continue;
		kp = stream_state(s, &pod, &run, &until, &over);
		if (kp == NULL) {
			wake = true;
		} else {
			lines_of(pod, kp, s->ci, &l);
			n = lines_printed(&l, run.start_ms, until);
			wake = n > s->next_line || over;
			if (!over && l.interval_ms > 0 && n < lines_count(l.text)) {
				uint64_t next = run.start_ms + (uint64_t)n * l.interval_ms;

				*ret_due = KC_MIN(*ret_due, next);
			}
		}
		if (wake && s->s.wake != NULL)
			s->s.wake(s->s.wake_arg);
	}
}

static int
pod_log(struct dc *dc, const struct dc_req *req, const struct json_object *pod,
    struct dc_resp *resp)
{
	struct kubelet *k = plugin_state(dc, &kubelet_plugin);
	const char *pname = kc_json_str(pod, "metadata", "name");
	char key[2 * DC_SEGMENT_MAX];
	struct logopts o;
	struct kpod *kp;
	struct kcont *c;
	struct lines l;
	struct run run;
	struct kstream *s;
	size_t ci, n, first;
	uint64_t left, until;
	int r;

	if (k == NULL || obj_key(pod, key, sizeof(key)) < 0)
		return DC_DECLINED;
	if ((r = log_options(k, req, pname, &o, resp)) < 0)
		return 0;
	if (str_empty(kc_json_str(pod, "spec", "nodeName")) ||
	    (kp = pod_find(k, key)) == NULL ||
	    strcmp(kp->uid, kc_json_str(pod, "metadata", "uid") != NULL ?
	    kc_json_str(pod, "metadata", "uid") : "") != 0) {
		/* No node yet (or not ours): the core's container checks, no output. */
		return DC_DECLINED;
	}
	if (log_container(pod, kp, o.container, resp, &ci) < 0)
		return 0;
	if (kp->node == NULL || kp->node->stopped) {
		const char *host = kp->node != NULL && kp->node->nhost > 0 ? kp->node->host[0] :
		    (kp->node != NULL ? kp->node->name : "");

		errors_reply(resp, KC_EINTERNAL, "Get \"https://%s:10250/containerLogs/%s/%s/%s\": "
		    "dial tcp %s:10250: connect: connection refused", host,
		    kc_json_str(pod, "metadata", "namespace"), pname, cname(pod, kp, ci), host);
		return 0;
	}
	c = &kp->c[ci];
	if (o.previous) {
		if (log_run(c, true, &run) < 0) {
			errors_reply(resp, KC_EBADREQUEST, "previous terminated container "
			    "\"%s\" in pod \"%s\" not found", cname(pod, kp, ci), pname);
			return 0;
		}
		o.follow = false;
	} else if (c->state == CS_WAITING || (c->state == CS_CONFIGERR && c->start_ms == 0)) {
		errors_reply(resp, KC_EBADREQUEST, "container \"%s\" in pod \"%s\" is waiting to "
		    "start: %s", cname(pod, kp, ci), pname, c->state == CS_CONFIGERR ?
		    "CreateContainerConfigError" : kp->ninit > 0 && kp->stage == PS_NEW ?
		    "PodInitializing" : "ContainerCreating");
		return 0;
	} else
		(void)log_run(c, false, &run);
	lines_of(pod, kp, ci, &l);
	until = run.end_ms != 0 ? run.end_ms : now_ms();
	n = lines_printed(&l, run.start_ms, until);
	first = o.tail >= 0 && (uint64_t)o.tail < n ? n - (size_t)o.tail : 0;
	left = o.limit > 0 ? (uint64_t)o.limit : UINT64_MAX;
	kc_buf_reset(&resp->body);
	if ((r = log_append(k, &l, &run, first, n, o.timestamps, o.since_ms, &left,
	    &resp->body)) < 0)
		return r == -E2BIG ? (errors_reply(resp, KC_ETOOLARGE, "log too large"), 0) : r;
	resp->status = 200;
	resp->content_type = "text/plain";
	if (!o.follow || run.end_ms != 0 || kp->stage == PS_FINISHED || left == 0)
		return 0;
	/* follow: the output so far, then each line as it is printed. */
	if ((s = kc_calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	s->s.ops = &stream_ops;
	s->k = k;
	kc_strlcpy(s->key, key, sizeof(s->key));
	kc_strlcpy(s->uid, kp->uid, sizeof(s->uid));
	s->ci = (uint8_t)ci;
	s->run = run.index;
	s->next_line = n;
	s->left = left;
	s->timestamps = o.timestamps;
	if (resp->body.len > 0 && (s->first = chunk_new(resp->body.data,
	    resp->body.len)) == NULL) {
		kc_free(s);
		return -ENOMEM;
	}
	kc_buf_reset(&resp->body);
	TAILQ_INSERT_TAIL(&k->streams, s, link);
	resp->stream = &s->s;
	/* The next line is due at some point: make sure the timer knows. */
	if (l.interval_ms > 0 && n < lines_count(l.text))
		rearm(k, run.start_ms + (uint64_t)n * l.interval_ms);
	return 0;
}

/*
 * Setup
 */

int
kubelet_init(struct dc *dc, const struct kubelet_opts *opts)
{
	struct kubelet *k;
	int r;

	if ((k = kc_calloc(1, sizeof(*k))) == NULL)
		return -ENOMEM;
	k->dc = dc;
	if (opts != NULL)
		k->opts = *opts;
	else
		k->opts.start_delay_ms = KUBELET_START_DELAY_MS;
	TAILQ_INIT(&k->streams);
	kc_heap_init(&k->due, due_less);
	timer_init(&k->timer, dc, tick, k);
	(void)wall_ms(k, 0);
	if ((r = storage_subscribe(dc->store, on_event, k)) < 0) {
		kc_free(k);
		return r;
	}
	plugin_set_state(dc, &kubelet_plugin, k);
	dc->hooks.graceful_delete = graceful_delete;
	dc->hooks.pod_log = pod_log;
	if ((r = scan(k, "nodes")) < 0 || (r = scan(k, "pods")) < 0) {
		kubelet_fini(dc);
		return r;
	}
	return 0;
}

void
kubelet_fini(struct dc *dc)
{
	struct kubelet *k = plugin_state(dc, &kubelet_plugin);
	struct kc_hmap_node *e, *ne;
	struct kstream *s;
	size_t i;

	if (k == NULL)
		return;
	timer_cancel(&k->timer);
	storage_unsubscribe(dc->store, on_event, k);
	if (dc->hooks.graceful_delete == graceful_delete)
		dc->hooks.graceful_delete = NULL;
	if (dc->hooks.pod_log == pod_log)
		dc->hooks.pod_log = NULL;
	/* Streams still open end when pulled; they free themselves. */
	while ((s = TAILQ_FIRST(&k->streams)) != NULL) {
		TAILQ_REMOVE(&k->streams, s, link);
		s->k = NULL;
		s->ended = true;
		if (s->s.wake != NULL)
			s->s.wake(s->s.wake_arg);
	}
	KC_HMAP_FOREACH_SAFE(e, ne, i, &k->pods) {
		struct kpod *kp = (struct kpod *)e;

		kc_free(kp->c);
		kc_free(kp);
	}
	KC_HMAP_FOREACH_SAFE(e, ne, i, &k->nodes) {
		struct knode *n = (struct knode *)e;

		kc_free(n->bits);
		kc_free(n);
	}
	kc_hmap_free(&k->nodes);
	kc_hmap_free(&k->pods);
	kc_heap_free(&k->due);
	kc_free(k);
	plugin_set_state(dc, &kubelet_plugin, NULL);
}

size_t
kubelet_pods(const struct dc *dc)
{
	const struct kubelet *k = plugin_state(dc, &kubelet_plugin);

	return k != NULL ? k->pods.n : 0;
}

static int
kubelet_start(struct dc *dc, const struct dc_config *cfg, struct kc_status *st)
{
	(void)st;
	return kubelet_init(dc, cfg != NULL ? &cfg->kubelet : NULL);
}

const struct dc_plugin kubelet_plugin = {
	.name = "kubelet",
	.init = kubelet_start,
	.fini = kubelet_fini,
};

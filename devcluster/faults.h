/*
 * faults.h: the faults plug-in, fault injection and request counters.
 * What other files need from faults.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_FAULTS_H
#define DEVCLUSTER_FAULTS_H

#include "devcluster.h"

extern const struct dc_plugin faults_plugin;

#define FAULTS_MAX		64u		/* rules at once */
#define FAULTS_STAT_ROWS	1024u		/* verb, resource, code rows */
#define FAULTS_LATENCY_MAX_MS	60000u
#define FAULTS_PAUSE_MAX_S	300u

struct fault;

/* A rule, as faults_parse() reads it from a POST body. */
struct fault_spec {
	char		 verb[24];		/* "list", "*" */
	char		 resource[2 * DC_SEGMENT_MAX];	/* "pods", "pods/status", "*" */
	char		 group[DC_SEGMENT_MAX];	/* "*": any; "" the core group */
	char		 ns[DC_SEGMENT_MAX];	/* "" or "*": any */
	int		 code;			/* HTTP code; 0: latency only */
	uint32_t	 retry_after;		/* seconds; 0: no header */
	uint32_t	 share_ppm;		/* share of matches, parts per million */
	uint64_t	 count;			/* hits before it stops; 0: no end */
	uint32_t	 latency_ms;
	char		 message[512];		/* "" for the default */
	int		 webhook;		/* verb "convert": enum dc_conv_wrong */
};

struct faults_stats {
	uint64_t	 total;			/* every request but /devcluster/ */
	uint64_t	 resource;		/* resource requests */
	uint64_t	 untracked;		/* past FAULTS_STAT_ROWS */
	uint64_t	 by_code[500];		/* [code - 100] */
	uint64_t	 injected_errors;
	uint64_t	 injected_latency;
	uint64_t	 paused;		/* requests held by a pause */
	uint64_t	 dropped_watches;
	uint64_t	 compactions;
};

/*
 * Serves /devcluster/faults and /devcluster/stats (system:masters only)
 * and injects faults; state in plugin_state(dc, &faults_plugin). faults_init: 0 or -ENOMEM;
 * faults_fini frees (harmless when not initialised). Without init every
 * call below is a no-op and the endpoints are 404.
 */
int	 faults_init(struct dc *) _must_check_;
void	 faults_fini(struct dc *);
/* A rule from a JSON body: 0, or KC_EBADREQUEST with the reason in 'st'. */
int	 faults_parse(const struct json_object *, struct fault_spec *ret,
	    struct kc_status *st) _must_check_;
/* Adds a rule: 0 with its id, -E2BIG past FAULTS_MAX, -EINVAL without init. */
int	 faults_add(struct dc *, const struct fault_spec *, uint64_t *ret_id)
	    _must_check_;
/* Removes rule 'id' (0: all): 0 or KC_ENOTFOUND. */
int	 faults_remove(struct dc *, uint64_t id);
size_t	 faults_count(const struct dc *);
/*
 * The rule that hits a request on 'route' (counting the match), or NULL.
 * Only resource requests are ever hit.
 */
const struct fault *faults_decide(struct dc *, const struct dc_route *);
int	 fault_code(const struct fault *);
uint32_t fault_latency_ms(const struct fault *);
/* JSON documents of GET /devcluster/faults and /devcluster/stats. */
int	 faults_list_json(struct dc *, struct json_object **ret) _must_check_;
int	 faults_stats_json(struct dc *, struct json_object **ret) _must_check_;
void	 faults_stats(const struct dc *, struct faults_stats *ret);
/* Requests counted for verb, resource ("pods", "deployments.apps") and code; NULL, 0: any. */
uint64_t faults_stat_count(const struct dc *, const char *verb, const char *resource,
	    int code);
void	 faults_stats_reset(struct dc *);
/* Actions: compact every collection's history, end every watch, pause (0 ends it). */
void	 faults_compact(struct dc *);
size_t	 faults_drop_watches(struct dc *);
void	 faults_pause(struct dc *, uint32_t seconds);
/* Before api_handle() (http.c, through the table): ms to hold the request (a pause). */
uint64_t faults_hold_ms(struct dc *, const struct dc_req *);
/* After api_handle() (http.c, through the table): counts it; the reply's delay in ms. */
uint64_t faults_after(struct dc *, const struct dc_req *, const struct dc_resp *);

#endif

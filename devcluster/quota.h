/*
 * quota.h: the quota plug-in, ResourceQuota admission and the quota controller.
 * What other files need from quota.c; plugins.c installs it.
 */
#ifndef DEVCLUSTER_QUOTA_H
#define DEVCLUSTER_QUOTA_H

#include "devcluster.h"

extern const struct dc_plugin quota_plugin;

#define QUOTA_KEYS_MAX		64	/* resources in one list */
#define QUOTA_NAME_MAX		128	/* one resource name, with the NUL */

/* A quota resource list: names and quantities in milli-units. */
struct quota_ent {
	char		 name[QUOTA_NAME_MAX];
	int64_t		 milli;
	bool		 bin;		/* printed with a binary suffix (Mi) */
};

struct quota_list {
	size_t		 n;
	struct quota_ent e[QUOTA_KEYS_MAX];
};

/*
 * ResourceQuota admission (quota_plugin.admit, last in the table)
 * and the quota controller: a storage subscriber keeps status.hard and
 * status.used of every quota current. 0 or -ENOMEM. State in
 * plugin_state(dc, &quota_plugin); quota_fini() before api_free().
 */
int	 quota_init(struct dc *) _must_check_;
void	 quota_fini(struct dc *);
/*
 * The admission check of creating 'obj' of 'rt': 0, or KC_EFORBIDDEN
 * with upstream's message in 'st' ("exceeded quota: ...", "failed
 * quota: q: must specify ..."), or -ENOMEM.
 */
int	 quota_admit_object(struct dc *, const struct dc_rtype *,
	    const struct json_object *obj, struct kc_status *st) _must_check_;
/* Rewrites status.hard and status.used of the quotas of 'ns'. */
int	 quota_sync_ns(struct dc *, const char *ns);
/* The quota usage of one pod (upstream's pod evaluator). */
void	 quota_pod_usage(const struct json_object *pod, struct quota_list *ret);
/* The usage of namespace 'ns' for the names in 'hard'. 0 or -ENOMEM. */
int	 quota_ns_usage(struct dc *, const char *ns, const struct quota_list *hard,
	    struct quota_list *ret) _must_check_;
struct quota_ent *quota_list_find(struct quota_list *, const char *name);
/* A quantity in upstream's canonical form ("500m", "2", "1k", "1536Mi"). */
void	 quota_format(int64_t milli, bool bin, char *buf, size_t size);

#endif

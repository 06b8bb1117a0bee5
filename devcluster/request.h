/*
 * request.h: one resource request being answered, and what the three
 * files that answer it share: dispatch.c (routing, authorization, the
 * read verbs), write.c (the write pipeline) and reply.c (replies). The
 * core's other files and the plug-ins never include it.
 */
#ifndef DEVCLUSTER_REQUEST_H
#define DEVCLUSTER_REQUEST_H

#include "devcluster.h"

#define JSON_CT		"application/json"
#define TEXT_CT		"text/plain; charset=utf-8"

/* One resource request being answered. */
struct rctx {
	struct dc		*dc;
	struct dc_req		*req;		/* NULL for internal writes */
	struct dc_resp		*resp;
	const struct dc_rtype	*rt;
	const char		*ns;		/* "" when cluster-scoped */
	const char		*name;
	const char		*sub;		/* "" when none */
	bool			 dry_run;
	const char		*manager;
	time_t			 now;
};

/* The kind of a PATCH body, by its Content-Type. */
enum patch_kind { PATCH_JSON, PATCH_MERGE, PATCH_SMP, PATCH_APPLY, PATCH_NONE };

/* dispatch.c */
/* The media type of a Content-Type, lower-cased, without parameters. */
void	 dispatch_media_type(const char *ct, char *buf, size_t size);
/*
 * The int64 fields of ListOptions (timeoutSeconds, then limit, upstream's
 * field order), decoded for list, watch and deletecollection alike as
 * upstream decodes the whole of it: 0, or -1 with the 400 answered.
 */
int	 dispatch_list_ints(const struct dc_req *, int64_t *timeout, int64_t *limit,
	    struct dc_resp *);
/*
 * pods/<name>/exec by GET (WebSocket) or POST (SPDY): answers it through
 * hooks.pod_exec (400 "Upgrade request required" without one) and
 * returns true; false for any other request.
 */
bool	 dispatch_upgrade(struct rctx *);

/* write.c */
enum patch_kind write_patch_kind(const char *ct);
/*
 * The write verbs of an authorized request whose dryRun and fieldManager
 * were checked: each fills c->resp.
 */
void	 write_verb_create(struct rctx *);
void	 write_verb_update(struct rctx *);
void	 write_verb_patch(struct rctx *);
void	 write_verb_delete(struct rctx *);
void	 write_verb_deletecollection(struct rctx *);

/* reply.c */
/* 'o' (consumed) as JSON; 500 when 'o' is NULL or printing fails. */
void	 reply_json(struct dc_resp *, int status, struct json_object *o);
/* A Status whose reason upstream leaves empty (500 and the like). */
void	 reply_unknown(struct dc_resp *, int http, const char *msg);
/* 404 "404 page not found" (text), and the Status 404 inside /api, /apis. */
void	 reply_not_found_page(struct dc_resp *);
void	 reply_not_found(struct dc_resp *);
/* 405 MethodNotAllowed. */
void	 reply_method_not_allowed(struct dc_resp *);
/*
 * A Status reply for a failure 'code' with st's message and 'details' (a
 * metav1.StatusDetails, consumed; may be NULL).
 */
void	 reply_details(struct dc_resp *, int code, const struct kc_status *st,
	    struct json_object *details);
/*
 * The stored object's cached text (coll_text()) when no conversion
 * applies: 0 with *ret set, 1 when the tree must be printed, -ENOMEM.
 */
int	 reply_stored_text(const struct dc_rtype *, const struct json_object *stored,
	    bool item, const char **ret, size_t *ret_len);
/* 'stored' in the request's version, with 'status'. */
void	 reply_object(struct rctx *, int status, const struct json_object *stored);
/* An item of a built-in list carries no apiVersion or kind (a new reference). */
struct json_object *reply_list_item(const struct dc_rtype *, struct json_object *view);

#endif

/*
 * dc_testutil.h: shared support for the devcluster unit suites that drive
 * api_handle() as http.c does, without a socket: a fresh instance with an
 * admin token, one request in and its reply out.
 */
#ifndef DC_TESTUTIL_H
#define DC_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

#include "../../devcluster/devcluster.h"
#include "../../devcluster/plugins.h"

/* One request for dct_raw() and dct_run(). */
struct dct_call {
	enum dc_method	 method;
	const char	*target;
	const char	*body;
	size_t		 body_len;	/* 0: strlen(body) */
	const char	*ctype;		/* default application/json with a body */
	const char	*accept;
	const char	*token;		/* default admin-token; "" for none */
	const char	*imp_user;
	const char *const *imp_groups;	/* Impersonate-Group values, NULL-terminated */
	const char	*user_agent;
};

/*
 * Returns a new instance made with 'opts' (NULL: Kubernetes 1.32 and
 * nothing else), with the bearer token "admin-token" mapped to the user
 * "admin" in system:masters. Fails the test on error; free it with
 * api_free().
 */
struct dc		*dct_new(const struct dc_opts *opts);

/*
 * Runs request 'c' against 'dc' into 'resp', which this initialises and
 * the caller clears with resp_clear(). Allocations fail after 'fail' of
 * them (SIZE_MAX: never) while the server answers.
 */
void			 dct_raw(struct dc *dc, const struct dct_call *c,
			    struct dc_resp *resp, size_t fail);

/*
 * Runs request 'c' and fails the test unless the status is 'want'.
 * Returns the parsed body when it is non-empty JSON and not a stream
 * (NULL otherwise); the caller drops it with dct_put(). With 'out' the
 * whole reply is handed over too, to be cleared with resp_clear().
 */
struct json_object	*dct_run(struct dc *dc, const struct dct_call *c, int want,
			    struct dc_resp *out);

/* Drops a reference from dct_run(); NULL is fine. */
void			 dct_put(struct json_object *o);

/* Fails the test unless 'o' is a Status with message 'msg'; drops 'o'. */
void			 dct_expect_message(struct json_object *o, const char *msg);

/* The object's metadata.resourceVersion, or NULL. */
const char		*dct_rv(const struct json_object *o);

/* The resource type serving 'plural' in any group; fails the test if none. */
const struct dc_rtype	*dct_type(struct dc *dc, const char *plural);

/* POSTs the printf-formatted body to 'target'; fails the test unless 'want'. */
void			 dct_post(struct dc *dc, int want, const char *target,
			    const char *fmt, ...) _printf_(4, 5);

/*
 * A webhook's answer (tests/server/testserver.c handlers, on the server's
 * thread): 'review' (consumed) with its request replaced by 'resp'
 * (consumed), printed into a malloc()ed text, its length in *ret_len;
 * NULL when !ok (something failed while building 'resp').
 */
char			*dct_review_answer(struct json_object *review, struct json_object *resp,
			    bool ok, size_t *ret_len);

/* Adds the fault rule 'json' (faults.c, started); fails the test if refused. */
void			 dct_add_fault(struct dc *dc, const char *json);

#endif

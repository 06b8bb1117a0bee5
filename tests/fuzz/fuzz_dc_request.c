/*
 * fuzz_dc_request.c: the devcluster's whole request path (api_handle():
 * routing, query parameters, headers, content negotiation, decoding of
 * JSON, YAML and protobuf bodies, admission, storage) on a fresh
 * in-memory cluster. The input is up to REQS_MAX requests separated by
 * FUZZ_SEP, each
 *
 *	METHOD TARGET
 *	Header: value		(Accept, Content-Type, Authorization,
 *	...			 User-Agent, Impersonate-User, -Uid, -Group)
 *
 *	body
 *
 * Without an Authorization header the request carries the admin's
 * token. Every reply has a status from 100 to 599, and a body that says
 * it is application/json parses as JSON.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/err.h>
#include <kc/json.h>

#include "../../devcluster/devcluster.h"

#include "fuzz.h"

#define REQS_MAX	4

static char *
dup_value(char **slot, const char *v)
{
	kc_free(*slot);
	*slot = kc_strdup(v);
	return *slot;
}

static void
header(struct dc_req *req, const char *line)
{
	const char *colon = strchr(line, ':'), *v;
	size_t n;

	if (colon == NULL)
		return;
	n = (size_t)(colon - line);
	for (v = colon + 1; *v == ' '; v++)
		;
	if (n == 6 && strncasecmp(line, "Accept", n) == 0)
		(void)dup_value(&req->accept, v);
	else if (n == 12 && strncasecmp(line, "Content-Type", n) == 0)
		(void)dup_value(&req->content_type, v);
	else if (n == 13 && strncasecmp(line, "Authorization", n) == 0)
		(void)dup_value(&req->authorization, v);
	else if (n == 10 && strncasecmp(line, "User-Agent", n) == 0)
		(void)dup_value(&req->user_agent, v);
	else if (n == 16 && strncasecmp(line, "Impersonate-User", n) == 0)
		(void)dup_value(&req->imp_user, v);
	else if (n == 15 && strncasecmp(line, "Impersonate-Uid", n) == 0)
		(void)dup_value(&req->imp_uid, v);
	else if (n == 17 && strncasecmp(line, "Impersonate-Group", n) == 0 &&
	    req->imp_ngroups < DC_IMP_GROUPS_MAX &&
	    (req->imp_groups[req->imp_ngroups] = kc_strdup(v)) != NULL)
		req->imp_ngroups++;
}

static void
one(struct dc *dc, char *text)
{
	struct dc_req req = { 0 };
	struct dc_resp resp;
	char *line = text, *nl, *sp, *body = NULL;
	bool end = false;

	if ((nl = strchr(line, '\n')) != NULL)
		*nl++ = '\0';
	if ((sp = strchr(line, ' ')) == NULL)
		return;
	*sp++ = '\0';
	if (req_set_target(&req, sp) < 0) {
		req_clear(&req);
		return;
	}
	req.method = method_from(line);
	while (nl != NULL) {
		line = nl;
		if ((nl = strchr(line, '\n')) != NULL)
			*nl++ = '\0';
		if (line[0] == '\0') {
			body = nl;
			break;
		}
		header(&req, line);
	}
	if (req.authorization == NULL)
		req.authorization = kc_strdup("Bearer admin-token");
	if (body != NULL && body[0] != '\0') {
		req.body_len = strlen(body);
		req.body = kc_memdup(body, req.body_len + 1);
	}
	resp_init(&resp);
	api_handle(dc, &req, &resp);
	FUZZ_CHECK(resp.status >= 100 && resp.status <= 599);
	/* What says it is JSON is JSON. */
	if (resp.stream == NULL && resp.content_type != NULL && resp.body.len > 0 &&
	    strcmp(resp.content_type, "application/json") == 0) {
		struct json_object *o = NULL;

		FUZZ_CHECK(kc_json_parse(resp.body.data, resp.body.len, &o, NULL) == 0);
		if (o != NULL)
			json_object_put(o);
	}
	if (resp.stream != NULL) {
		struct dc_chunk *c;

		for (int i = 0; i < 4 && (c = resp.stream->ops->pull(resp.stream, &end)) != NULL;
		    i++)
			chunk_unref(c);
	}
	resp_clear(&resp);
	req_clear(&req);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dc *dc = NULL;
	char *parts[REQS_MAX];

	if (size > 64 << 10 || fuzz_split(data, size, parts, REQS_MAX) < 0)
		return 0;
	if (api_new(&(struct dc_opts){ .kube_version = "1.32" }, &dc) == 0) {
		if (auth_add(dc->auth, "admin-token", "admin", "admin",
		    (const char *const []){ "system:masters", NULL }) == 0) {
			for (size_t i = 0; i < REQS_MAX; i++)
				if (parts[i][0] != '\0')
					one(dc, parts[i]);
		}
		api_free(dc);
	}
	fuzz_parts_free(parts, REQS_MAX);
	return 0;
}

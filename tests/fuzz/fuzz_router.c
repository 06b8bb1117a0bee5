/*
 * fuzz_router.c: the devcluster's request routing (devcluster/router.c):
 * a request line "METHOD TARGET" split into path and query parameters
 * (percent-decoded as libwebsockets does), then routed. Every route's
 * segments stay within their bounds and NUL-terminated.
 */
#include <stdlib.h>
#include <string.h>

#include "../../devcluster/devcluster.h"

#include "fuzz.h"

static void
bounded(const char *seg)
{
	FUZZ_CHECK(memchr(seg, '\0', DC_SEGMENT_MAX) != NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dc_req req = { 0 };
	struct dc_route rt;
	char *line, *sp;
	enum dc_method m;

	if (size > 16 << 10 || (line = fuzz_str(data, size)) == NULL)
		return 0;
	if ((sp = strchr(line, ' ')) != NULL)
		*sp++ = '\0';
	m = method_from(line);
	(void)method_name(m);
	if (sp != NULL && req_set_target(&req, sp) == 0) {
		FUZZ_CHECK(req.path != NULL && req.nparams <= DC_PARAMS_MAX);
		(void)req_param(&req, "watch");
		(void)req_has_param(&req, "labelSelector");
		FUZZ_CHECK(router_parse(m, req.path, req_param_bool(&req, "watch"), &rt) == 0);
		bounded(rt.group);
		bounded(rt.version);
		bounded(rt.ns);
		bounded(rt.resource);
		bounded(rt.name);
		bounded(rt.subresource);
		if (rt.kind == DC_ROUTE_RESOURCE)
			FUZZ_CHECK(rt.verb != NULL && rt.resource[0] != '\0');
	}
	req_clear(&req);
	free(line);
	return 0;
}

/*
 * whcall.c: webhook calls that never block the loop, for every webhook
 * kube-apiserver calls (conversion: convwebhook.c; admission:
 * admwebhook.c).
 *
 * A caller embeds a struct whcall in what it keeps per call, resolves
 * the webhook's clientConfig into it (whcall_resolve()), and starts it
 * on its runner (whcall_start()) with the JSON body to POST. The runner's
 * 1 ms loop timer moves every running call on through libkc's transport
 * (kc_transport_curl_step(), which never blocks) and calls the caller's
 * done() when one ends; an injected delay (hold_until_ms) keeps a call
 * from moving until then. Requests that wait for calls are held by
 * http.c and answered again (dispatch.c, req->redo): the calls' numbers
 * (whcall_seq()) say which ones they wait for.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/base64.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/str.h>

#include "devcluster.h"
#include "whcall.h"

uint64_t
whcall_seq(struct dc *dc)
{
	return ++dc->webhook_seq;
}

void
whcall_wait_for(struct dc *dc, uint64_t seq)
{
	if (dc->conv_lo == 0 || seq < dc->conv_lo)
		dc->conv_lo = seq;
	if (seq > dc->conv_hi)
		dc->conv_hi = seq;
}

/* A Service's endpoint for 'port': "ip:port" in 'connect'; 0 or KC_EINTERNAL. */
static int
endpoint_of(struct dc *dc, const char *ns, const char *name, int64_t port, char *connect,
    size_t csize, char *why, size_t size)
{
	const struct dc_rtype *svc_rt = registry_find(dc, "", "v1", "services");
	const struct dc_rtype *ep_rt = registry_find(dc, "", "v1", "endpoints");
	const struct json_object *svc, *ep, *ports, *subsets, *sp = NULL;
	const char *pname, *ip = NULL;
	int64_t target = 0;

	svc = svc_rt != NULL ? coll_get(svc_rt->coll, ns, name) : NULL;
	if (svc == NULL) {
		errors_textf(why, size, "service \"%s\" not found", name);
		return KC_EINTERNAL;
	}
	ports = kc_json_get(svc, "spec", "ports");
	for (size_t i = 0; json_object_is_type(ports, json_type_array) &&
	    i < json_object_array_length(ports); i++) {
		const struct json_object *p = json_object_array_get_idx(ports, i);

		if (kc_json_int(p, 0, "port") == port) {
			sp = p;
			break;
		}
	}
	if (sp == NULL) {
		errors_textf(why, size, "no service port %" PRId64 " found for service \"%s\"",
		    port, name);
		return KC_EINTERNAL;
	}
	pname = or_empty(kc_json_str(sp, "name"));
	ep = ep_rt != NULL ? coll_get(ep_rt->coll, ns, name) : NULL;
	if (ep == NULL) {
		errors_textf(why, size, "endpoints \"%s\" not found", name);
		return KC_EINTERNAL;
	}
	subsets = kc_json_get(ep, "subsets");
	for (size_t i = 0; ip == NULL && json_object_is_type(subsets, json_type_array) &&
	    i < json_object_array_length(subsets); i++) {
		const struct json_object *ss = json_object_array_get_idx(subsets, i);
		const struct json_object *eps = kc_json_get(ss, "ports");
		const struct json_object *addrs = kc_json_get(ss, "addresses");

		target = 0;
		for (size_t j = 0; json_object_is_type(eps, json_type_array) &&
		    j < json_object_array_length(eps); j++) {
			const struct json_object *e = json_object_array_get_idx(eps, j);

			if (strcmp(or_empty(kc_json_str(e, "name")), pname) == 0) {
				target = kc_json_int(e, 0, "port");
				break;
			}
		}
		if (target > 0 && json_object_is_type(addrs, json_type_array) &&
		    json_object_array_length(addrs) > 0)
			ip = kc_json_str(json_object_array_get_idx(addrs, 0), "ip");
	}
	if (ip == NULL || target <= 0) {
		errors_textf(why, size, "no endpoints available for service \"%s\"", name);
		return KC_EINTERNAL;
	}
	errors_textf(connect, csize, strchr(ip, ':') != NULL ? "[%s]:%" PRId64 : "%s:%" PRId64, ip,
	    target);
	return 0;
}

int
whcall_resolve(struct dc *dc, struct whcall *c, const struct json_object *cc,
    unsigned timeout_s, char *why, size_t size)
{
	const char *url = kc_json_str(cc, "url"), *ca = kc_json_str(cc, "caBundle");
	char server[WHCALL_URL_MAX];
	int r;

	if (ca != NULL && ca[0] != '\0' &&
	    kc_base64_decode(ca, strlen(ca), 0, &c->ca, NULL, NULL, 0) < 0) {
		errors_textf(why, size, "invalid caBundle");
		return KC_EINTERNAL;
	}
	if (url != NULL) {
		const char *p = strstr(url, "://");
		const char *slash = p != NULL ? strchr(p + 3, '/') : NULL;
		size_t hl = slash != NULL ? (size_t)(slash - url) : strlen(url);
		const char *sep;

		if (p == NULL || hl >= sizeof(server)) {
			errors_textf(why, size, "invalid webhook URL");
			return KC_EINTERNAL;
		}
		memcpy(server, url, hl);
		server[hl] = '\0';
		sep = slash != NULL && strchr(slash, '?') != NULL ? "&" : "?";
		errors_textf(c->path, sizeof(c->path), "%s%stimeout=%us",
		    slash != NULL ? slash : "/", sep, timeout_s);
		errors_textf(c->url, sizeof(c->url), "%s%s", server, c->path);
		c->connect[0] = '\0';
	} else {
		const char *ns = or_empty(kc_json_str(cc, "service", "namespace"));
		const char *name = or_empty(kc_json_str(cc, "service", "name"));
		const char *path = kc_json_str(cc, "service", "path");
		int64_t port = kc_json_int(cc, 443, "service", "port");

		errors_textf(c->path, sizeof(c->path), "%s?timeout=%us",
		    path != NULL && path[0] != '\0' ? path : "/", timeout_s);
		errors_textf(c->url, sizeof(c->url), "https://%s.%s.svc:%" PRId64 "%s", name, ns,
		    port, c->path);
		if ((r = endpoint_of(dc, ns, name, port, c->connect, sizeof(c->connect), why,
		    size)) < 0)
			return r;
		errors_textf(server, sizeof(server), "https://%s.%s.svc:%" PRId64, name, ns, port);
	}
	if ((c->rc.server = kc_strdup(server)) == NULL)
		return -ENOMEM;
	if (c->ca != NULL) {
		c->rc.ca_pem = c->ca;
		c->rc.ca_pem_len = strlen(c->ca);
	}
	return 0;
}

static int64_t
run_step(void *arg)
{
	struct whrun *w = arg;
	struct whcall *c, *next;

	for (c = TAILQ_FIRST(&w->running); c != NULL; c = next) {
		struct kc_status st = { 0 };
		int r;

		next = TAILQ_NEXT(c, link);
		if (kc_clock_now_ms() < c->hold_until_ms)
			continue;	/* an injected slow webhook */
		if ((r = kc_transport_curl_step(c->t, &st)) == 1)
			continue;
		TAILQ_REMOVE(&w->running, c, link);
		c->run = NULL;
		c->done(c->arg, c, r, &st);
	}
	return TAILQ_EMPTY(&w->running) ? DC_TIMER_STOP : WHCALL_POLL_MS;
}

int
whcall_start(struct whrun *w, struct whcall *c, char *body, size_t len, uint32_t timeout_ms,
    size_t max_resp, whcall_done_fn *done, void *arg, struct kc_status *st)
{
	int r;

	c->body = body;
	c->req = (struct kc_http_req){
		.method = "POST", .path = c->path, .content_type = "application/json",
		.accept = "application/json, */*", .body = c->body, .body_len = len,
		.timeout_ms = timeout_ms,
	};
	if ((r = kc_transport_curl.open(&(struct kc_transport_opts){
		.rc = &c->rc, .http1 = true, .timeout_ms = timeout_ms,
		.max_response = max_resp,
		.connect_to = c->connect[0] != '\0' ? c->connect : NULL,
	}, &c->t, st)) < 0 ||
	    (r = kc_transport_curl_start(c->t, &c->req, &c->resp, st)) < 0)
		return r;
	c->done = done;
	c->arg = arg;
	c->run = w;
	TAILQ_INSERT_TAIL(&w->running, c, link);
	timer_arm(&w->timer, WHCALL_POLL_MS);
	return 0;
}

void
whcall_clear(struct whcall *c)
{
	if (c->run != NULL) {
		TAILQ_REMOVE(&c->run->running, c, link);
		c->run = NULL;
	}
	if (c->t != NULL)
		c->t = kc_transport_curl.close(c->t);
	kc_http_resp_free(&c->resp);
	kc_free(c->ca);
	c->ca = NULL;
	kc_free(c->body);
	c->body = NULL;
	kc_free((char *)(uintptr_t)c->rc.server);
	c->rc.server = NULL;
}

void
whrun_init(struct whrun *w, struct dc *dc)
{
	w->dc = dc;
	TAILQ_INIT(&w->running);
	timer_init(&w->timer, dc, run_step, w);
}

void
whrun_fini(struct whrun *w)
{
	struct whcall *c;

	timer_cancel(&w->timer);
	while ((c = TAILQ_FIRST(&w->running)) != NULL) {
		TAILQ_REMOVE(&w->running, c, link);
		c->run = NULL;
	}
}

bool
whrun_waited(const struct whrun *w, uint64_t lo, uint64_t hi)
{
	const struct whcall *c;

	TAILQ_FOREACH(c, &w->running, link)
		if (c->seq >= lo && c->seq <= hi)
			return true;
	return false;
}

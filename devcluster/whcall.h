/*
 * whcall.h: calls to webhooks that never block the loop (whcall.c),
 * shared by the conversion webhook caller (convwebhook.c) and the
 * admission webhook caller (admwebhook.c): where a clientConfig points
 * (a URL, or a Service through its Endpoints), the TLS client set up for
 * it, and the call moved on by a loop timer until it ends.
 */
#ifndef DEVCLUSTER_WHCALL_H
#define DEVCLUSTER_WHCALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <json-c/json.h>

#include <kc/kubeconfig.h>
#include <kc/transport.h>

#include "devcluster.h"

#define WHCALL_URL_MAX		1024
#define WHCALL_POLL_MS		1	/* running calls move on this often */

struct whcall;
struct whrun;

/*
 * A call ended: 'r' 0 with the answer in c->resp (any HTTP status), or
 * the transport's failure with 'st'. The callback may free 'c' (after
 * whcall_clear()) but no other call of the runner.
 */
typedef void	whcall_done_fn(void *arg, struct whcall *c, int r, const struct kc_status *st);

/*
 * One call, embedded in its owner and zeroed before use. whcall_resolve()
 * fills where it goes; whcall_start() sends it; whcall_clear() frees what
 * it holds and takes it off its runner.
 */
struct whcall {
	TAILQ_ENTRY(whcall)	 link;
	struct whrun		*run;		/* while it runs */
	uint64_t		 seq;		/* requests wait for it (dc->conv_lo..hi) */
	char			 url[WHCALL_URL_MAX];	/* as error messages show it */
	char			 path[WHCALL_URL_MAX];
	char			 connect[WHCALL_URL_MAX];	/* an endpoint, or "" */
	char			*ca;
	struct kc_rest_config	 rc;
	void			*t;		/* the transport */
	char			*body;
	struct kc_http_req	 req;
	struct kc_http_resp	 resp;
	uint64_t		 hold_until_ms;	/* an injected delay */
	whcall_done_fn		*done;
	void			*arg;
};

TAILQ_HEAD(whcall_list, whcall);

/* The running calls of one owner and the timer that moves them on. */
struct whrun {
	struct dc		*dc;
	struct whcall_list	 running;
	struct dc_timer		 timer;
};

void	 whrun_init(struct whrun *, struct dc *);
/* Cancels the timer; the owner clears its calls (whcall_clear()). */
void	 whrun_fini(struct whrun *);
/* Whether a running call's seq is within [lo, hi]. */
bool	 whrun_waited(const struct whrun *, uint64_t lo, uint64_t hi);

/*
 * The next call number, from one counter per instance, so that the
 * numbers of every caller's calls never meet; it widens
 * [dc->conv_lo, dc->conv_hi], the calls the request being answered
 * waits for.
 */
uint64_t whcall_seq(struct dc *);
void	 whcall_wait_for(struct dc *, uint64_t seq);

/*
 * Where 'c' goes, from a clientConfig ('cc': url, or service {namespace,
 * name, path, port (443)}, and caBundle): clientConfig.url, or an
 * endpoint of the Service (kube-apiserver with --enable-aggregator-
 * routing: the connection goes to the endpoint, while the URL, so the
 * Host header, SNI and the name TLS verifies, stay
 * https://<service>.<namespace>.svc:<port>), with ?timeout=<timeout_s>s.
 * 0; KC_EINTERNAL with upstream's reason in 'why' (`service "x" not
 * found`, `no endpoints available for service "x"`...), c->url set
 * when it could be built; -ENOMEM.
 */
int	 whcall_resolve(struct dc *, struct whcall *, const struct json_object *cc,
	    unsigned timeout_s, char *why, size_t size) _must_check_;

/*
 * POSTs 'body' (JSON, consumed) to where 'c' was resolved, HTTP/1.1,
 * with a 'timeout_ms' deadline and answers up to 'max_resp' bytes, and
 * puts it on 'run': 'done' gets its end. 0 when under way; a failure to
 * start with 'st' (done is not called); -ENOMEM.
 */
int	 whcall_start(struct whrun *, struct whcall *, char *body, size_t len,
	    uint32_t timeout_ms, size_t max_resp, whcall_done_fn *done, void *arg,
	    struct kc_status *st) _must_check_;

/* Frees what 'c' holds and takes it off its runner; harmless twice. */
void	 whcall_clear(struct whcall *);

#endif

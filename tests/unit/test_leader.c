/*
 * test_leader.c: Lease leader election (lib/leader.c).
 *
 * Most tests talk to a small in-memory Lease server written here as a
 * struct kc_transport_ops: it stores one Lease, bumps its resourceVersion
 * on every write, answers a PUT with a stale resourceVersion with 409
 * Conflict and a POST over an existing Lease with 409 AlreadyExists, as
 * the API server does (KUBE-API.md 5.4), and can be told to fail. Two
 * electors then compete through it on one thread, step by step with
 * kc_leader_try(), or one runs its loops with kc_leader_run() on the
 * fake clock, stopped from a server hook. The wire format (paths, verbs,
 * the record's fields) is checked once against the scripted fake
 * transport, and a stop from another thread with the real clock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/client.h>
#include <kc/clock.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/leader.h>
#include <kc/str.h>
#include <kc/transport.h>

#include "../fakes/fake_transport.h"
#include "testutil.h"

#define ck_ok(r, st)	ck_assert_msg((r) >= 0, "%s: %s", kc_err_name(r), (st).message)

#define LEASE_PATH	"/apis/coordination.k8s.io/v1/namespaces/sys/leases/ctl"
#define LEASES_PATH	"/apis/coordination.k8s.io/v1/namespaces/sys/leases"

static struct kc_rest_config test_rc = { .server = "https://fake.invalid" };

/* ---- the in-memory Lease server -------------------------------------------- */

struct srv {
	struct json_object	*lease;		/* NULL: none */
	uint64_t		 rv;
	unsigned		 gets, posts, puts, failed;
	bool			 down;		/* every request: 503 */
	bool			 hide_next_get;	/* answer the next GET 404 */
	/* Called before a PUT is answered (another writer, a stop). */
	void			(*before_put)(struct srv *);
	struct kc_leader	*stop_le;	/* stop after 'stop_after' PUTs */
	unsigned		 stop_after;
	uint64_t		 last_put_ok_ms;
	atomic_bool		 cancelled;
};

static struct srv srv;

static void
srv_reset(void)
{
	if (srv.lease != NULL)
		json_object_put(srv.lease);
	memset(&srv, 0, sizeof(srv));
}

static int
srv_open(const struct kc_transport_opts *opts, void **ret, struct kc_status *st)
{
	(void)opts;
	(void)st;
	*ret = &srv;
	return 0;
}

static void *
srv_close(void *arg)
{
	(void)arg;
	return NULL;
}

static void
srv_cancel(void *arg)
{
	atomic_store(&((struct srv *)arg)->cancelled, true);
}

static void
srv_reset_cancel(void *arg)
{
	atomic_store(&((struct srv *)arg)->cancelled, false);
}

static int
reply(struct kc_http_resp *resp, int status, const char *body)
{
	resp->status = status;
	(void)kc_strlcpy(resp->content_type, "application/json", sizeof(resp->content_type));
	kc_buf_init(&resp->body, 1u << 20);
	return kc_buf_puts(&resp->body, body);
}

static int
reply_status(struct kc_http_resp *resp, int code, const char *reason)
{
	char body[256];

	(void)snprintf(body, sizeof(body), "{\"kind\":\"Status\",\"apiVersion\":\"v1\","
	    "\"status\":\"Failure\",\"reason\":\"%s\",\"message\":\"%s\",\"code\":%d}",
	    reason, reason, code);
	return reply(resp, code, body);
}

static int
reply_lease(struct kc_http_resp *resp, int status)
{
	char *text = kc_json_dump(srv.lease, NULL);
	int r;

	ck_assert_ptr_nonnull(text);
	r = reply(resp, status, text);
	kc_free(text);
	return r;
}

/* Stores 'body' as the Lease with the next resourceVersion. */
static void
store(const char *body, size_t len)
{
	struct json_object *obj = NULL, *md;
	char rv[32];

	ck_assert_int_eq(kc_json_parse(body, len, &obj, NULL), 0);
	md = kc_json_ensure_obj(obj, "metadata");
	ck_assert_ptr_nonnull(md);
	(void)snprintf(rv, sizeof(rv), "%llu", (unsigned long long)++srv.rv);
	ck_assert_int_eq(kc_json_set_str(md, "resourceVersion", rv), 0);
	if (srv.lease != NULL)
		json_object_put(srv.lease);
	srv.lease = obj;
}

static int
srv_request(void *arg, const struct kc_http_req *req, struct kc_http_resp *resp,
    struct kc_status *st)
{
	(void)arg;
	if (atomic_load(&srv.cancelled))
		return kc_status_set(st, -ECANCELED, "cancelled");
	if (srv.down) {
		srv.failed++;
		return reply_status(resp, 503, "ServiceUnavailable");
	}
	if (strcmp(req->method, "GET") == 0) {
		ck_assert_str_eq(req->path, LEASE_PATH);
		srv.gets++;
		if (srv.hide_next_get) {
			srv.hide_next_get = false;
			return reply_status(resp, 404, "NotFound");
		}
		return srv.lease == NULL ? reply_status(resp, 404, "NotFound") :
		    reply_lease(resp, 200);
	}
	if (strcmp(req->method, "POST") == 0) {
		ck_assert_str_eq(req->path, LEASES_PATH);
		srv.posts++;
		if (srv.lease != NULL)
			return reply_status(resp, 409, "AlreadyExists");
		store(req->body, req->body_len);
		return reply_lease(resp, 201);
	}
	ck_assert_str_eq(req->method, "PUT");
	ck_assert_str_eq(req->path, LEASE_PATH);
	srv.puts++;
	if (srv.before_put != NULL)
		srv.before_put(&srv);
	if (srv.stop_le != NULL && srv.puts >= srv.stop_after)
		kc_leader_stop(srv.stop_le);
	if (srv.lease == NULL)
		return reply_status(resp, 404, "NotFound");
	{
		struct json_object *obj = NULL;
		const char *want = kc_json_str(srv.lease, "metadata", "resourceVersion");
		const char *got;
		bool match;

		ck_assert_int_eq(kc_json_parse(req->body, req->body_len, &obj, NULL), 0);
		got = kc_json_str(obj, "metadata", "resourceVersion");
		match = got != NULL && strcmp(got, want) == 0;
		json_object_put(obj);
		if (!match)
			return reply_status(resp, 409, "Conflict");
	}
	store(req->body, req->body_len);
	srv.last_put_ok_ms = kc_clock_now_ms();
	return reply_lease(resp, 200);
}

static int
srv_stream(void *arg, const struct kc_http_req *req, struct kc_http_resp *resp,
    kc_chunk_fn *fn, void *fn_arg, struct kc_status *st)
{
	(void)arg;
	(void)req;
	(void)resp;
	(void)fn;
	(void)fn_arg;
	return kc_status_set(st, KC_ETRANSPORT, "no streams here");
}

static const struct kc_transport_ops srv_ops = {
	.name = "lease-server",
	.open = srv_open,
	.request = srv_request,
	.stream = srv_stream,
	.cancel = srv_cancel,
	.reset_cancel = srv_reset_cancel,
	.close = srv_close,
};

/* Puts a Lease in the server as another process would have written it. */
static void
srv_seed(const char *holder, int duration_s, const char *renew, int transitions)
{
	char body[1024];

	(void)snprintf(body, sizeof(body), "{\"apiVersion\":\"coordination.k8s.io/v1\","
	    "\"kind\":\"Lease\",\"metadata\":{\"name\":\"ctl\",\"namespace\":\"sys\"},"
	    "\"spec\":{\"holderIdentity\":\"%s\",\"leaseDurationSeconds\":%d,"
	    "\"acquireTime\":\"%s\",\"renewTime\":\"%s\",\"leaseTransitions\":%d}}",
	    holder, duration_s, renew, renew, transitions);
	store(body, strlen(body));
}

static const char *
lease_str(const char *field)
{
	const char *s = kc_json_str(srv.lease, "spec", field);

	return s != NULL ? s : "(absent)";
}

static int64_t
lease_int(const char *field)
{
	return kc_json_int(srv.lease, -1, "spec", field);
}

/* ---- electors -------------------------------------------------------------- */

struct cand {
	struct kc_leader	*le;
	struct kc_client	*cl;
	char			 log[32][64];
	size_t			 n;
	uint64_t		 started_ms;
	bool			 stop_on_start;
	int			 nested_run;	/* run() from a callback */
};

static void
cand_log(struct cand *c, const char *what, const char *who)
{
	ck_assert_uint_lt(c->n, 32);
	(void)snprintf(c->log[c->n++], sizeof(c->log[0]), "%s%s%s", what,
	    who != NULL ? " " : "", who != NULL ? who : "");
}

static void
on_started(void *arg)
{
	struct cand *c = arg;

	ck_assert(kc_leader_is_leader(c->le));
	c->started_ms = kc_clock_now_ms();
	cand_log(c, "started", NULL);
	if (c->stop_on_start)
		kc_leader_stop(c->le);
}

static void
on_stopped(void *arg)
{
	struct cand *c = arg;

	ck_assert(!kc_leader_is_leader(c->le));
	cand_log(c, "stopped", NULL);
}

static void
on_new_leader(void *arg, const char *id)
{
	struct cand *c = arg;

	cand_log(c, "leader", id);
	if (c->nested_run == 1)
		c->nested_run = kc_leader_run(c->le, c->cl, NULL);
}

static void
cand_init(struct cand *c, const char *id, const struct kc_transport_ops *ops)
{
	struct kc_status st = { 0 };
	int r;

	memset(c, 0, sizeof(*c));
	r = kc_leader_new(&(struct kc_leader_opts){
		.ns = "sys", .name = "ctl", .identity = id,
		.on_started_leading = on_started,
		.on_stopped_leading = on_stopped,
		.on_new_leader = on_new_leader,
		.arg = c,
	}, &c->le, &st);
	ck_ok(r, st);
	r = kc_client_new(&(struct kc_client_opts){ .rc = &test_rc, .ops = ops },
	    &c->cl, &st);
	ck_ok(r, st);
}

static void
cand_free(struct cand *c)
{
	c->le = kc_leader_free(c->le);
	c->cl = kc_client_free(c->cl);
}

static int
cand_try(struct cand *c)
{
	struct kc_status st = { 0 };

	return kc_leader_try(c->le, c->cl, &st);
}

static void
setup(void)
{
	srv_reset();
	fake_clock_install(1000000);
}

static void
teardown(void)
{
	srv_reset();
	fake_clock_uninstall();
	fail_alloc_after(SIZE_MAX);
}

/* ---- construction ---------------------------------------------------------- */

static int
new_with(const char *ns, const char *name, const char *id, uint64_t lease,
    uint64_t renew, uint64_t retry, struct kc_status *st)
{
	struct kc_leader *le = NULL;
	int r = kc_leader_new(&(struct kc_leader_opts){
		.ns = ns, .name = name, .identity = id, .lease_duration_ms = lease,
		.renew_deadline_ms = renew, .retry_period_ms = retry,
	}, &le, st);

	if (r == 0)
		ck_assert_ptr_nonnull(le);
	else
		ck_assert_ptr_null(le);
	kc_leader_free(le);
	return r;
}

START_TEST(test_new_checks)
{
	struct kc_status st = { 0 };
	char longid[KC_LEADER_IDENTITY_MAX + 1];

	ck_assert_int_eq(new_with("sys", "ctl", "a", 0, 0, 0, &st), 0);
	ck_assert_int_eq(new_with("sys", "ctl", "a", 60000, 40000, 5000, &st), 0);
	ck_assert_int_eq(new_with(NULL, "ctl", "a", 0, 0, 0, &st), -EINVAL);
	ck_assert_int_eq(new_with("Sys!", "ctl", "a", 0, 0, 0, &st), -EINVAL);
	ck_assert_int_eq(new_with("sys", "a/b", "a", 0, 0, 0, &st), -EINVAL);
	ck_assert_int_eq(new_with("sys", "ctl", NULL, 0, 0, 0, &st), -EINVAL);
	ck_assert_ptr_nonnull(strstr(st.message, "identity"));
	ck_assert_int_eq(new_with("sys", "ctl", "", 0, 0, 0, &st), -EINVAL);
	ck_assert_int_eq(new_with("sys", "ctl", "a\nb", 0, 0, 0, &st), -EINVAL);
	memset(longid, 'x', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	ck_assert_int_eq(new_with("sys", "ctl", longid, 0, 0, 0, &st), -EINVAL);
	/* renew deadline >= lease duration */
	ck_assert_int_eq(new_with("sys", "ctl", "a", 10000, 10000, 2000, &st), -EINVAL);
	ck_assert_ptr_nonnull(strstr(st.message, "renew deadline"));
	/* renew deadline <= 1.2 * retry */
	ck_assert_int_eq(new_with("sys", "ctl", "a", 15000, 2400, 2000, &st), -EINVAL);
	ck_assert_ptr_nonnull(strstr(st.message, "1.2"));
	ck_assert_int_eq(new_with("sys", "ctl", "a", 500, 400, 100, &st), -EINVAL);
	{
		struct kc_leader *le = (struct kc_leader *)&st;

		ck_assert_int_eq(kc_leader_new(NULL, &le, &st), -EINVAL);
		ck_assert_ptr_eq(le, (struct kc_leader *)&st);
	}
	ck_assert_ptr_null(kc_leader_free(NULL));
}
END_TEST

START_TEST(test_new_enomem)
{
	for (size_t budget = 0;; budget++) {
		struct kc_leader *le = NULL;
		int r;

		fail_alloc_after(budget);
		r = kc_leader_new(&(struct kc_leader_opts){
			.ns = "sys", .name = "ctl", .identity = "a",
		}, &le, NULL);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert_ptr_nonnull(le);
			kc_leader_free(le);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(le);
	}
}
END_TEST

/* ---- the wire format, against the scripted fake transport ---------------- */

START_TEST(test_wire_create_then_renew)
{
	struct fake_transport *ft = ft_new();
	struct cand a;
	struct json_object *body = NULL;
	const struct ft_request *q;
	char holder[64];

	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = LEASE_PATH,
	    .status = 404, .resp_body = "{\"kind\":\"Status\",\"reason\":\"NotFound\","
	    "\"code\":404}" });
	ft_expect(ft, &(struct ft_exchange){ .method = "POST", .path = LEASES_PATH,
	    .content_type = "application/json", .status = 201, .resp_body = FT_ECHO });
	ft_expect(ft, &(struct ft_exchange){ .method = "GET", .path = LEASE_PATH,
	    .status = 200, .resp_body = "{\"apiVersion\":\"coordination.k8s.io/v1\","
	    "\"kind\":\"Lease\",\"metadata\":{\"name\":\"ctl\",\"namespace\":\"sys\","
	    "\"resourceVersion\":\"7\"},\"spec\":{\"holderIdentity\":\"a\","
	    "\"leaseDurationSeconds\":15,\"acquireTime\":\"2023-11-14T20:00:00.000000Z\","
	    "\"renewTime\":\"2023-11-14T22:30:00.000000Z\",\"leaseTransitions\":3}}" });
	ft_expect(ft, &(struct ft_exchange){ .method = "PUT", .path = LEASE_PATH,
	    .status = 200, .resp_body = FT_ECHO });

	cand_init(&a, "a", &fake_transport_ops);
	ck_assert_int_eq(cand_try(&a), 1);
	q = ft_request(ft, 1);
	ck_assert_int_eq(kc_json_parse(q->body, q->body_len, &body, NULL), 0);
	ck_assert_str_eq(kc_json_str(body, "apiVersion"), "coordination.k8s.io/v1");
	ck_assert_str_eq(kc_json_str(body, "kind"), "Lease");
	ck_assert_str_eq(kc_json_str(body, "metadata", "name"), "ctl");
	ck_assert_str_eq(kc_json_str(body, "metadata", "namespace"), "sys");
	ck_assert_str_eq(kc_json_str(body, "spec", "holderIdentity"), "a");
	ck_assert_int_eq(kc_json_int(body, -1, "spec", "leaseDurationSeconds"), 15);
	ck_assert_int_eq(kc_json_int(body, -1, "spec", "leaseTransitions"), 0);
	/* The fake wall clock: 1700000000 + 1000 s, MicroTime. */
	ck_assert_str_eq(kc_json_str(body, "spec", "renewTime"),
	    "2023-11-14T22:30:00.000000Z");
	ck_assert_str_eq(kc_json_str(body, "spec", "acquireTime"),
	    "2023-11-14T22:30:00.000000Z");
	json_object_put(body);

	fake_clock_advance(2000);
	ck_assert_int_eq(cand_try(&a), 1);
	q = ft_request(ft, 3);
	ck_assert_int_eq(kc_json_parse(q->body, q->body_len, &body, NULL), 0);
	/* The resourceVersion read is the precondition; the rest carries over. */
	ck_assert_str_eq(kc_json_str(body, "metadata", "resourceVersion"), "7");
	ck_assert_str_eq(kc_json_str(body, "spec", "holderIdentity"), "a");
	ck_assert_str_eq(kc_json_str(body, "spec", "acquireTime"),
	    "2023-11-14T20:00:00.000000Z");
	ck_assert_str_eq(kc_json_str(body, "spec", "renewTime"),
	    "2023-11-14T22:30:02.000000Z");
	ck_assert_int_eq(kc_json_int(body, -1, "spec", "leaseTransitions"), 3);
	json_object_put(body);
	kc_leader_holder(a.le, holder, sizeof(holder));
	ck_assert_str_eq(holder, "a");
	ft_done(ft);
	cand_free(&a);
	ft_free(ft);
}
END_TEST

/* ---- one attempt at a time ------------------------------------------------- */

START_TEST(test_acquire_creates)
{
	struct cand a;

	cand_init(&a, "a", &srv_ops);
	ck_assert(!kc_leader_is_leader(a.le));
	ck_assert_int_eq(cand_try(&a), 1);
	ck_assert(kc_leader_is_leader(a.le));
	ck_assert_uint_eq(srv.posts, 1);
	ck_assert_str_eq(lease_str("holderIdentity"), "a");
	ck_assert_int_eq(lease_int("leaseDurationSeconds"), 15);
	ck_assert_int_eq(lease_int("leaseTransitions"), 0);
	ck_assert_str_eq(lease_str("acquireTime"), lease_str("renewTime"));
	ck_assert_uint_eq(a.n, 2);
	ck_assert_str_eq(a.log[0], "leader a");
	ck_assert_str_eq(a.log[1], "started");
	cand_free(&a);
}
END_TEST

START_TEST(test_renew_keeps_acquire_time)
{
	struct cand a;
	char acquired[64];

	cand_init(&a, "a", &srv_ops);
	ck_assert_int_eq(cand_try(&a), 1);
	(void)kc_strlcpy(acquired, lease_str("acquireTime"), sizeof(acquired));
	for (int i = 0; i < 5; i++) {
		fake_clock_advance(2000);
		ck_assert_int_eq(cand_try(&a), 1);
	}
	ck_assert_str_eq(lease_str("acquireTime"), acquired);
	ck_assert_str_ne(lease_str("renewTime"), acquired);
	ck_assert_int_eq(lease_int("leaseTransitions"), 0);
	ck_assert_uint_eq(srv.puts, 5);
	/* started once, the new-leader report once */
	ck_assert_uint_eq(a.n, 2);
	cand_free(&a);
}
END_TEST

START_TEST(test_standby_waits_while_renewed)
{
	struct cand a, b;
	char holder[64];

	cand_init(&a, "a", &srv_ops);
	cand_init(&b, "b", &srv_ops);
	ck_assert_int_eq(cand_try(&a), 1);
	for (int i = 0; i < 30; i++) {
		ck_assert_int_eq(cand_try(&b), 0);
		fake_clock_advance(2000);
		ck_assert_int_eq(cand_try(&a), 1);
	}
	ck_assert(!kc_leader_is_leader(b.le));
	kc_leader_holder(b.le, holder, sizeof(holder));
	ck_assert_str_eq(holder, "a");
	ck_assert_uint_eq(b.n, 1);
	ck_assert_str_eq(b.log[0], "leader a");
	cand_free(&a);
	cand_free(&b);
}
END_TEST

START_TEST(test_takeover_after_expiry)
{
	struct cand a, b;

	cand_init(&a, "a", &srv_ops);
	cand_init(&b, "b", &srv_ops);
	ck_assert_int_eq(cand_try(&a), 1);
	ck_assert_int_eq(cand_try(&b), 0);	/* b first sees the record now */
	/* a dies; 14.999 s later by b's clock the lease still holds */
	fake_clock_advance(14999);
	ck_assert_int_eq(cand_try(&b), 0);
	fake_clock_advance(1);
	ck_assert_int_eq(cand_try(&b), 1);
	ck_assert(kc_leader_is_leader(b.le));
	ck_assert_str_eq(lease_str("holderIdentity"), "b");
	ck_assert_int_eq(lease_int("leaseTransitions"), 1);
	ck_assert_str_eq(lease_str("acquireTime"), lease_str("renewTime"));
	/* a comes back: it reads b's record and stands by (not yet lost: run decides) */
	fake_clock_advance(1000);
	ck_assert_int_eq(cand_try(&a), 0);
	ck_assert_str_eq(a.log[a.n - 1], "leader b");
	cand_free(&a);
	cand_free(&b);
}
END_TEST

/*
 * Timestamps in the record are not compared with our clock: one from long
 * ago (a holder whose clock is behind) is still honoured for a full lease
 * duration of local observation, and one from the future does not extend
 * it.
 */
START_TEST(test_expiry_by_observation_not_timestamps)
{
	struct cand b;

	cand_init(&b, "b", &srv_ops);
	srv_seed("old", 15, "1999-01-01T00:00:00.000000Z", 4);
	ck_assert_int_eq(cand_try(&b), 0);
	fake_clock_advance(10000);
	ck_assert_int_eq(cand_try(&b), 0);
	fake_clock_advance(5000);
	ck_assert_int_eq(cand_try(&b), 1);
	ck_assert_int_eq(lease_int("leaseTransitions"), 5);
	cand_free(&b);

	srv_reset();
	cand_init(&b, "b", &srv_ops);
	srv_seed("future", 15, "2999-01-01T00:00:00.000000Z", 0);
	ck_assert_int_eq(cand_try(&b), 0);
	fake_clock_advance(15000);
	ck_assert_int_eq(cand_try(&b), 1);
	cand_free(&b);

	/* A changed record restarts the observation. */
	srv_reset();
	cand_init(&b, "b", &srv_ops);
	srv_seed("c", 15, "2023-01-01T00:00:00.000000Z", 0);
	ck_assert_int_eq(cand_try(&b), 0);
	fake_clock_advance(10000);
	srv_seed("c", 15, "2023-01-01T00:00:10.000000Z", 0);
	ck_assert_int_eq(cand_try(&b), 0);
	fake_clock_advance(10000);
	ck_assert_int_eq(cand_try(&b), 0);
	fake_clock_advance(5000);
	ck_assert_int_eq(cand_try(&b), 1);
	cand_free(&b);
}
END_TEST

/*
 * Steps of the wall clock (an NTP step, a VM resumed), forward and back,
 * on the leader and the standby alike, change nothing: the standby judges
 * the lease by its own monotonic observation, and the leader's renewals
 * still change the record. No takeover while the leader renews; once it
 * stops, a takeover a whole lease duration later, not earlier.
 */
START_TEST(test_wall_clock_steps)
{
	struct cand a, b;

	cand_init(&a, "a", &srv_ops);
	cand_init(&b, "b", &srv_ops);
	ck_assert_int_eq(cand_try(&a), 1);
	ck_assert_int_eq(cand_try(&b), 0);
	for (int i = 0; i < 20; i++) {
		fake_clock_step_wall(i % 2 == 0 ? 3600 * 1000 : -3600 * 1000);
		fake_clock_advance(2000);
		ck_assert_int_eq(cand_try(&a), 1);
		ck_assert_int_eq(cand_try(&b), 0);
	}
	ck_assert(kc_leader_is_leader(a.le));
	ck_assert(!kc_leader_is_leader(b.le));
	ck_assert_int_eq(lease_int("leaseTransitions"), 0);
	ck_assert_str_eq(lease_str("holderIdentity"), "a");
	/* a stops renewing; b's clock jumps an hour ahead */
	fake_clock_step_wall(3600 * 1000);
	fake_clock_advance(14999);
	ck_assert_int_eq(cand_try(&b), 0);
	fake_clock_advance(1);
	ck_assert_int_eq(cand_try(&b), 1);
	ck_assert_int_eq(lease_int("leaseTransitions"), 1);
	cand_free(&a);
	cand_free(&b);
}
END_TEST

/* Another candidate writes between b's read and b's write: b loses the race. */
static void
rival_wins(struct srv *s)
{
	s->before_put = NULL;
	srv_seed("rival", 15, "2023-01-01T00:00:00.000000Z", 9);
}

START_TEST(test_conflict_loses_race)
{
	struct cand b;
	char holder[64];

	cand_init(&b, "b", &srv_ops);
	srv_seed("", 1, "2023-01-01T00:00:00.000000Z", 8);	/* released */
	srv.before_put = rival_wins;
	ck_assert_int_eq(cand_try(&b), 0);
	ck_assert(!kc_leader_is_leader(b.le));
	ck_assert_str_eq(lease_str("holderIdentity"), "rival");
	ck_assert_uint_eq(b.n, 0);
	/* the next attempt reads the rival's record and respects it */
	ck_assert_int_eq(cand_try(&b), 0);
	kc_leader_holder(b.le, holder, sizeof(holder));
	ck_assert_str_eq(holder, "rival");
	ck_assert_str_eq(b.log[0], "leader rival");
	ck_assert_uint_eq(srv.puts, 1);
	cand_free(&b);
}
END_TEST

/* Two creators: the second POST gets AlreadyExists, which is not an error. */
START_TEST(test_create_race)
{
	struct cand a, b;
	struct kc_status st = { 0 };

	cand_init(&a, "a", &srv_ops);
	cand_init(&b, "b", &srv_ops);
	ck_assert_int_eq(cand_try(&b), 1);
	srv.hide_next_get = true;	/* a read before b created it */
	ck_assert_int_eq(kc_leader_try(a.le, a.cl, &st), 0);
	ck_assert_uint_eq(srv.posts, 2);
	ck_assert(!kc_leader_is_leader(a.le));
	ck_assert_str_eq(lease_str("holderIdentity"), "b");
	ck_assert_uint_eq(a.n, 0);
	cand_free(&a);
	cand_free(&b);
}
END_TEST

START_TEST(test_api_errors_are_returned)
{
	struct cand a;
	struct kc_status st = { 0 };

	cand_init(&a, "a", &srv_ops);
	srv.down = true;
	ck_assert_int_eq(kc_leader_try(a.le, a.cl, &st), KC_EUNAVAILABLE);
	ck_assert_int_eq(st.http_code, 503);
	ck_assert(!kc_leader_is_leader(a.le));
	srv.down = false;
	ck_assert_int_eq(cand_try(&a), 1);
	ck_assert_int_eq(kc_leader_try(a.le, NULL, &st), -EINVAL);
	cand_free(&a);
}
END_TEST

START_TEST(test_release_hands_over_at_once)
{
	struct cand a, b;
	struct kc_status st = { 0 };

	cand_init(&a, "a", &srv_ops);
	cand_init(&b, "b", &srv_ops);
	ck_assert_int_eq(cand_try(&a), 1);
	ck_assert_int_eq(cand_try(&b), 0);
	ck_assert_int_eq(kc_leader_release(a.le, a.cl, &st), 0);
	ck_assert(!kc_leader_is_leader(a.le));
	ck_assert_str_eq(a.log[a.n - 1], "stopped");
	ck_assert_str_eq(lease_str("holderIdentity"), "");
	ck_assert_int_eq(lease_int("leaseDurationSeconds"), 1);
	ck_assert_int_eq(lease_int("leaseTransitions"), 0);
	/* no waiting for expiry */
	ck_assert_int_eq(cand_try(&b), 1);
	ck_assert_int_eq(lease_int("leaseTransitions"), 1);
	/* a release by a non-holder writes nothing */
	ck_assert_int_eq(kc_leader_release(a.le, a.cl, &st), 0);
	ck_assert_str_eq(lease_str("holderIdentity"), "b");
	ck_assert_uint_eq(srv.puts, 2);
	cand_free(&a);
	cand_free(&b);
}
END_TEST

/*
 * A renewal the server applied but whose answer the stop cut off leaves
 * a stale resourceVersion: the release reads the Lease again and, still
 * ours, releases it; taken by another meanwhile, leaves it alone.
 */
START_TEST(test_release_after_unseen_renewal)
{
	struct cand a;
	struct kc_status st = { 0 };

	cand_init(&a, "a", &srv_ops);
	ck_assert_int_eq(cand_try(&a), 1);
	srv_seed("a", 15, "2023-01-01T00:00:05.000000Z", 0);
	ck_assert_int_eq(kc_leader_release(a.le, a.cl, &st), 0);
	ck_assert(!kc_leader_is_leader(a.le));
	ck_assert_str_eq(lease_str("holderIdentity"), "");
	cand_free(&a);

	srv_reset();
	cand_init(&a, "a", &srv_ops);
	ck_assert_int_eq(cand_try(&a), 1);
	srv_seed("rival", 15, "2023-01-01T00:00:05.000000Z", 1);
	ck_assert_int_eq(kc_leader_release(a.le, a.cl, &st), 0);
	ck_assert(!kc_leader_is_leader(a.le));
	ck_assert_str_eq(lease_str("holderIdentity"), "rival");
	cand_free(&a);
}
END_TEST

/* ---- the loops --------------------------------------------------------------- */

START_TEST(test_run_renews_then_stops_and_releases)
{
	struct cand a;
	struct kc_status st = { 0 };
	uint64_t t0 = kc_clock_now_ms();

	cand_init(&a, "a", &srv_ops);
	srv.stop_le = a.le;
	srv.stop_after = 6;		/* the 6th PUT: a renewal; stop there */
	ck_assert_int_eq(kc_leader_run(a.le, a.cl, &st), KC_LEADER_STOPPED);
	ck_assert(!kc_leader_is_leader(a.le));
	ck_assert_uint_eq(srv.posts, 1);
	/* a renewal every 2 s; the 6th renewal's PUT stops it; then the release */
	ck_assert_uint_eq(srv.puts, 7);
	ck_assert_uint_eq(kc_clock_now_ms() - t0, 6 * 2000);
	ck_assert_str_eq(lease_str("holderIdentity"), "");
	ck_assert_uint_eq(a.n, 3);
	ck_assert_str_eq(a.log[0], "leader a");
	ck_assert_str_eq(a.log[1], "started");
	ck_assert_str_eq(a.log[2], "stopped");
	/* stopped for good */
	ck_assert_int_eq(kc_leader_run(a.le, a.cl, &st), KC_LEADER_STOPPED);
	ck_assert_uint_eq(srv.puts, 7);
	cand_free(&a);
}
END_TEST

static void
api_goes_down(struct srv *s)
{
	if (s->puts == 3) {
		s->down = true;
		s->before_put = NULL;
	}
}

START_TEST(test_run_loses_on_renew_deadline)
{
	struct cand a, b;
	struct kc_status st = { 0 };
	uint64_t last_ok;

	cand_init(&a, "a", &srv_ops);
	srv.before_put = api_goes_down;	/* the 3rd PUT and everything after: 503 */
	ck_assert_int_eq(kc_leader_run(a.le, a.cl, &st), KC_LEADER_LOST);
	ck_assert(!kc_leader_is_leader(a.le));
	ck_assert_str_eq(a.log[a.n - 1], "stopped");
	last_ok = srv.last_put_ok_ms;
	/*
	 * Renewal rounds start a retry period after the last success and give
	 * up after the renew deadline: 2 s + 10 s, with attempts every 2 s.
	 */
	ck_assert_uint_eq(kc_clock_now_ms() - last_ok, 2000 + 10000);
	ck_assert_uint_lt(kc_clock_now_ms() - last_ok, KC_LEADER_LEASE_DURATION_MS);
	/* the GETs of 5 attempts failed, then the release attempt */
	ck_assert_uint_eq(srv.failed, 6);
	ck_assert_str_eq(lease_str("holderIdentity"), "a");

	/* a standby that saw the last renewal takes over once it expires */
	srv.down = false;
	cand_init(&b, "b", &srv_ops);
	ck_assert_int_eq(cand_try(&b), 0);
	fake_clock_advance(KC_LEADER_LEASE_DURATION_MS);
	ck_assert_int_eq(cand_try(&b), 1);
	cand_free(&a);
	cand_free(&b);
}
END_TEST

START_TEST(test_run_takes_over_dead_leader)
{
	struct cand b;
	struct kc_status st = { 0 };
	uint64_t t0 = kc_clock_now_ms();

	srv_seed("dead", 15, "2023-01-01T00:00:00.000000Z", 2);
	cand_init(&b, "b", &srv_ops);
	b.stop_on_start = true;
	ck_assert_int_eq(kc_leader_run(b.le, b.cl, &st), KC_LEADER_STOPPED);
	/* acquired within the lease duration plus one jittered retry */
	ck_assert_uint_ge(b.started_ms - t0, 15000);
	ck_assert_uint_le(b.started_ms - t0, 15000 + 2000 + 2400);
	ck_assert_str_eq(b.log[0], "leader dead");
	ck_assert_str_eq(b.log[1], "leader b");
	ck_assert_str_eq(b.log[2], "started");
	ck_assert_str_eq(b.log[3], "stopped");
	/* released: holder empty, transitions counted the take-over */
	ck_assert_str_eq(lease_str("holderIdentity"), "");
	ck_assert_int_eq(lease_int("leaseTransitions"), 3);
	cand_free(&b);
}
END_TEST

START_TEST(test_run_busy_and_no_client)
{
	struct cand a;
	struct kc_status st = { 0 };

	cand_init(&a, "a", &srv_ops);
	ck_assert_int_eq(kc_leader_run(a.le, NULL, &st), -EINVAL);
	a.nested_run = 1;		/* on_new_leader calls run() again */
	a.stop_on_start = true;
	ck_assert_int_eq(kc_leader_run(a.le, a.cl, &st), KC_LEADER_STOPPED);
	ck_assert_int_eq(a.nested_run, -EBUSY);
	cand_free(&a);
}
END_TEST

/* ---- the real clock: a stop from another thread ---------------------------- */

struct runner {
	struct cand	*c;
	int		 r;
	atomic_bool	 done;
};

static void *
run_thread(void *arg)
{
	struct runner *rn = arg;

	rn->r = kc_leader_run(rn->c->le, rn->c->cl, NULL);
	atomic_store(&rn->done, true);
	return NULL;
}

START_TEST(test_stop_from_another_thread)
{
	struct cand b;
	struct runner rn = { .c = &b, .r = -1 };
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	pthread_t tid;
	uint64_t t0;

	fake_clock_uninstall();
	srv_seed("other", 15, "2023-01-01T00:00:00.000000Z", 0);
	cand_init(&b, "b", &srv_ops);
	atomic_init(&rn.done, false);
	ck_assert_int_eq(pthread_create(&tid, NULL, run_thread, &rn), 0);
	for (;;) {
		char holder[64];

		kc_leader_holder(b.le, holder, sizeof(holder));
		if (strcmp(holder, "other") == 0)
			break;
		(void)nanosleep(&ts, NULL);
	}
	t0 = kc_clock_now_ms();
	kc_leader_stop(b.le);
	ck_assert_int_eq(pthread_join(tid, NULL), 0);
	ck_assert(atomic_load(&rn.done));
	ck_assert_int_eq(rn.r, KC_LEADER_STOPPED);
	ck_assert_uint_lt(kc_clock_now_ms() - t0, 1000);
	ck_assert_str_eq(lease_str("holderIdentity"), "other");
	ck_assert_uint_eq(srv.puts, 0);
	cand_free(&b);
}
END_TEST

Suite *
leader_suite(void)
{
	Suite *s = suite_create("leader");
	TCase *tc = tcase_create("leader");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_new_checks);
	tcase_add_test(tc, test_new_enomem);
	tcase_add_test(tc, test_wire_create_then_renew);
	tcase_add_test(tc, test_acquire_creates);
	tcase_add_test(tc, test_renew_keeps_acquire_time);
	tcase_add_test(tc, test_standby_waits_while_renewed);
	tcase_add_test(tc, test_takeover_after_expiry);
	tcase_add_test(tc, test_expiry_by_observation_not_timestamps);
	tcase_add_test(tc, test_wall_clock_steps);
	tcase_add_test(tc, test_conflict_loses_race);
	tcase_add_test(tc, test_create_race);
	tcase_add_test(tc, test_api_errors_are_returned);
	tcase_add_test(tc, test_release_hands_over_at_once);
	tcase_add_test(tc, test_release_after_unseen_renewal);
	tcase_add_test(tc, test_run_renews_then_stops_and_releases);
	tcase_add_test(tc, test_run_loses_on_renew_deadline);
	tcase_add_test(tc, test_run_takes_over_dead_leader);
	tcase_add_test(tc, test_run_busy_and_no_client);
	tcase_add_test(tc, test_stop_from_another_thread);
	suite_add_tcase(s, tc);
	return s;
}

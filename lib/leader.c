/*
 * leader.c: Lease-based leader election (<kc/leader.h>), client-go's
 * tools/leaderelection in C.
 *
 * State. The elector remembers the last election record it read (the
 * Lease's spec: holder, duration, acquire and renew times, transitions),
 * the Lease object itself (for the resourceVersion of the next write),
 * and 'observed_ms': the local monotonic time at which that record was
 * first seen in its current form. A record that has not changed for its
 * leaseDurationSeconds past 'observed_ms' is expired. This is the whole
 * safety argument: every holder rewrites renewTime at least once per
 * renew deadline, so a record that stood still for a lease duration, by
 * the reader's own clock, belongs to a holder that has given up (or can
 * no longer reach the API, and then has given up within its renew
 * deadline, which is shorter).
 *
 * One attempt (try_acquire_or_renew): GET the Lease. None: POST one with
 * us as holder. Held by another and not expired: done, not leading.
 * Otherwise PUT the record with us as holder over the object read, so the
 * write fails with Conflict if anyone wrote since; acquireTime and
 * leaseTransitions carry over when we already held it, else acquireTime
 * is now and the transitions go up by one.
 *
 * The loops (run): attempt every retry period with jitter until leading;
 * then wait a retry period, and attempt again until one succeeds or the
 * renew deadline (counted from the first attempt of the round) passes,
 * which loses leadership. Waits sleep through kc_clock_sleep_ms() in
 * slices of SLICE_MS and look at the stop flag between slices; a stop
 * also cancels the request in flight through kc_client_cancel().
 *
 * Threads: 'mu' guards the client pointer (for stop's cancel) and the
 * observed holder (for kc_leader_holder()); 'leading' and 'stopped' are
 * atomics; everything else belongs to the thread in run() or try().
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/client.h>
#include <kc/clock.h>
#include <kc/json.h>
#include <kc/leader.h>
#include <kc/str.h>

#define SLICE_MS	100		/* longest single sleep of a wait */
#define JITTER_PCT	120		/* client-go's JitterFactor 1.2 */
#define MICROTIME_MAX	48		/* "2006-01-02T15:04:05.000000Z" and room */

struct record {
	char		 holder[KC_LEADER_IDENTITY_MAX];
	int64_t		 duration_s;
	char		 acquire[MICROTIME_MAX];
	char		 renew[MICROTIME_MAX];
	int64_t		 transitions;
};

struct kc_leader {
	char		*ns;
	char		*name;
	char		*identity;
	uint64_t	 lease_ms;
	uint64_t	 renew_ms;
	uint64_t	 retry_ms;
	void		(*on_started_leading)(void *);
	void		(*on_stopped_leading)(void *);
	void		(*on_new_leader)(void *, const char *);
	void		*arg;

	pthread_mutex_t	 mu;
	struct kc_client *client;		/* in run(), for stop's cancel */
	char		 holder[KC_LEADER_IDENTITY_MAX];	/* observed */
	atomic_bool	 leading;
	atomic_bool	 stopped;
	atomic_bool	 running;

	/* The thread in run() or try() only. */
	struct record	 observed;
	bool		 have_observed;
	uint64_t	 observed_ms;
	char		 reported[KC_LEADER_IDENTITY_MAX];	/* on_new_leader's */
	struct json_object *lease;		/* the last one read or written */
};

static int
check_identity(const char *id, struct kc_status *st)
{
	size_t n;

	if (id == NULL || *id == '\0')
		return kc_status_set(st, -EINVAL, "leader election: identity is required");
	if ((n = strlen(id)) >= KC_LEADER_IDENTITY_MAX)
		return kc_status_set(st, -EINVAL, "leader election: identity longer than %d "
		    "bytes", KC_LEADER_IDENTITY_MAX - 1);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)id[i] < 0x20 || id[i] == 0x7f)
			return kc_status_set(st, -EINVAL, "leader election: identity has a "
			    "control character");
	return 0;
}

int
kc_leader_new(const struct kc_leader_opts *opts, struct kc_leader **ret,
    struct kc_status *st)
{
	struct kc_leader *le;
	uint64_t lease, renew, retry;
	int r;

	if (opts == NULL || ret == NULL)
		return kc_status_set(st, -EINVAL, "leader election: no options");
	if (opts->ns == NULL || opts->name == NULL)
		return kc_status_set(st, -EINVAL, "leader election: the Lease's namespace "
		    "and name are required");
	if ((r = kc_client_check_namespace(opts->ns, st)) < 0 ||
	    (r = kc_client_check_name(opts->name, st)) < 0 ||
	    (r = check_identity(opts->identity, st)) < 0)
		return r;
	lease = opts->lease_duration_ms != 0 ? opts->lease_duration_ms :
	    KC_LEADER_LEASE_DURATION_MS;
	renew = opts->renew_deadline_ms != 0 ? opts->renew_deadline_ms :
	    KC_LEADER_RENEW_DEADLINE_MS;
	retry = opts->retry_period_ms != 0 ? opts->retry_period_ms :
	    KC_LEADER_RETRY_PERIOD_MS;
	if (lease > (uint64_t)INT32_MAX * 1000 || lease < 1000)
		return kc_status_set(st, -EINVAL, "leader election: lease duration must be "
		    "between 1s and %" PRId32 "s", INT32_MAX);
	if (renew >= lease)
		return kc_status_set(st, -EINVAL, "leader election: the renew deadline "
		    "(%" PRIu64 "ms) must be less than the lease duration (%" PRIu64 "ms)",
		    renew, lease);
	if (retry * JITTER_PCT / 100 >= renew)
		return kc_status_set(st, -EINVAL, "leader election: the renew deadline "
		    "(%" PRIu64 "ms) must be greater than 1.2 * the retry period "
		    "(%" PRIu64 "ms)", renew, retry);

	if ((le = kc_calloc(1, sizeof(*le))) == NULL)
		return -ENOMEM;
	if ((le->ns = kc_strdup(opts->ns)) == NULL ||
	    (le->name = kc_strdup(opts->name)) == NULL ||
	    (le->identity = kc_strdup(opts->identity)) == NULL ||
	    pthread_mutex_init(&le->mu, NULL) != 0) {
		kc_free(le->ns);
		kc_free(le->name);
		kc_free(le->identity);
		kc_free(le);
		return -ENOMEM;
	}
	le->lease_ms = lease;
	le->renew_ms = renew;
	le->retry_ms = retry;
	le->on_started_leading = opts->on_started_leading;
	le->on_stopped_leading = opts->on_stopped_leading;
	le->on_new_leader = opts->on_new_leader;
	le->arg = opts->arg;
	atomic_init(&le->leading, false);
	atomic_init(&le->stopped, false);
	atomic_init(&le->running, false);
	*ret = le;
	return 0;
}

struct kc_leader *
kc_leader_free(struct kc_leader *le)
{
	if (le == NULL)
		return NULL;
	if (le->lease != NULL)
		json_object_put(le->lease);
	(void)pthread_mutex_destroy(&le->mu);
	kc_free(le->ns);
	kc_free(le->name);
	kc_free(le->identity);
	return kc_free(le);
}

void
kc_leader_stop(struct kc_leader *le)
{
	atomic_store(&le->stopped, true);
	pthread_mutex_lock(&le->mu);
	if (le->client != NULL)
		kc_client_cancel(le->client);
	pthread_mutex_unlock(&le->mu);
}

bool
kc_leader_is_leader(struct kc_leader *le)
{
	return atomic_load(&le->leading);
}

void
kc_leader_holder(struct kc_leader *le, char *buf, size_t size)
{
	if (size == 0)
		return;
	pthread_mutex_lock(&le->mu);
	(void)kc_strlcpy(buf, le->holder, size);
	pthread_mutex_unlock(&le->mu);
}

/* ---- the record ------------------------------------------------------------ */

/* metav1.MicroTime of now: whole seconds from the kc wall clock. */
static void
microtime_now(char buf[MICROTIME_MAX])
{
	if (kc_time_format_us((int64_t)kc_clock_wall() * 1000000, KC_TIME_MICRO, buf,
	    MICROTIME_MAX) < 0)
		(void)kc_strlcpy(buf, "1970-01-01T00:00:00.000000Z", MICROTIME_MAX);
}

static void
record_from_lease(const struct json_object *lease, struct record *rec)
{
	const char *s;

	memset(rec, 0, sizeof(*rec));
	if ((s = kc_json_str(lease, "spec", "holderIdentity")) != NULL)
		(void)kc_strlcpy(rec->holder, s, sizeof(rec->holder));
	rec->duration_s = kc_json_int(lease, 0, "spec", "leaseDurationSeconds");
	if ((s = kc_json_str(lease, "spec", "acquireTime")) != NULL)
		(void)kc_strlcpy(rec->acquire, s, sizeof(rec->acquire));
	if ((s = kc_json_str(lease, "spec", "renewTime")) != NULL)
		(void)kc_strlcpy(rec->renew, s, sizeof(rec->renew));
	rec->transitions = kc_json_int(lease, 0, "spec", "leaseTransitions");
}

static bool
record_equal(const struct record *a, const struct record *b)
{
	return strcmp(a->holder, b->holder) == 0 && a->duration_s == b->duration_s &&
	    strcmp(a->acquire, b->acquire) == 0 && strcmp(a->renew, b->renew) == 0 &&
	    a->transitions == b->transitions;
}

/* The spec object of 'rec'; NULL on allocation failure. */
static struct json_object *
record_spec(const struct record *rec)
{
	struct json_object *spec = json_object_new_object();

	if (spec == NULL)
		return NULL;
	if (kc_json_set_str(spec, "holderIdentity", rec->holder) < 0 ||
	    kc_json_set_int(spec, "leaseDurationSeconds", rec->duration_s) < 0 ||
	    kc_json_set_str(spec, "acquireTime", rec->acquire) < 0 ||
	    kc_json_set_str(spec, "renewTime", rec->renew) < 0 ||
	    kc_json_set_int(spec, "leaseTransitions", rec->transitions) < 0) {
		json_object_put(spec);
		return NULL;
	}
	return spec;
}

/* Remembers 'rec' as observed now, and tells about a new holder. */
static void
observe(struct kc_leader *le, const struct record *rec, uint64_t now)
{
	if (!le->have_observed || !record_equal(&le->observed, rec)) {
		le->observed = *rec;
		le->observed_ms = now;
		le->have_observed = true;
	}
	pthread_mutex_lock(&le->mu);
	(void)kc_strlcpy(le->holder, rec->holder, sizeof(le->holder));
	pthread_mutex_unlock(&le->mu);
	if (rec->holder[0] != '\0' && strcmp(rec->holder, le->reported) != 0) {
		(void)kc_strlcpy(le->reported, rec->holder, sizeof(le->reported));
		if (le->on_new_leader != NULL)
			le->on_new_leader(le->arg, rec->holder);
	}
}

static void
keep_lease(struct kc_leader *le, struct json_object *lease)
{
	if (le->lease != NULL)
		json_object_put(le->lease);
	le->lease = lease;
}

/* The observed record expired: unchanged for its duration, by our clock. */
static bool
observed_expired(const struct kc_leader *le, uint64_t now)
{
	uint64_t dur = le->observed.duration_s > 0 ?
	    (uint64_t)le->observed.duration_s * 1000 : le->lease_ms;

	return now >= le->observed_ms + dur;
}

/* ---- one attempt ----------------------------------------------------------- */

static int
create_lease(struct kc_leader *le, struct kc_client *cl, const struct record *rec,
    uint64_t now, struct kc_status *st)
{
	_cleanup_(kc_json_putp) struct json_object *obj = NULL, *spec = NULL;
	struct json_object *md, *created = NULL;
	int r;

	if ((obj = json_object_new_object()) == NULL || (spec = record_spec(rec)) == NULL)
		return -ENOMEM;
	if (kc_json_set_str(obj, "apiVersion", "coordination.k8s.io/v1") < 0 ||
	    kc_json_set_str(obj, "kind", "Lease") < 0 ||
	    (md = kc_json_ensure_obj(obj, "metadata")) == NULL ||
	    kc_json_set_str(md, "name", le->name) < 0 ||
	    kc_json_set_str(md, "namespace", le->ns) < 0 ||
	    kc_json_put(obj, "spec", spec) < 0)
		return -ENOMEM;
	spec = NULL;
	r = kc_client_create(cl, &(struct kc_create_opts){
		.res = &kc_res_leases,
		.ns = le->ns,
	}, obj, &created, st);
	if (r == KC_EEXISTS)
		return 0;		/* another candidate was faster */
	if (r < 0)
		return r;
	keep_lease(le, created);
	observe(le, rec, now);
	return 1;
}

/* PUT 'rec' over the Lease last read, with its resourceVersion. */
static int
update_lease(struct kc_leader *le, struct kc_client *cl, const struct record *rec,
    struct kc_status *st)
{
	_cleanup_(kc_json_putp) struct json_object *obj = NULL, *spec = NULL;
	struct json_object *updated = NULL;
	int r;

	if (le->lease == NULL)
		return kc_status_set(st, -EINVAL, "leader election: no Lease read yet");
	if ((obj = kc_json_copy(le->lease)) == NULL || (spec = record_spec(rec)) == NULL)
		return -ENOMEM;
	if (kc_json_put(obj, "spec", spec) < 0)
		return -ENOMEM;
	spec = NULL;
	if ((r = kc_client_update(cl, &(struct kc_update_opts){
		.res = &kc_res_leases,
		.ns = le->ns,
		.name = le->name,
	}, obj, &updated, st)) < 0)
		return r;
	keep_lease(le, updated);
	return 0;
}

static void
set_leading(struct kc_leader *le, bool on)
{
	bool was = atomic_exchange(&le->leading, on);

	if (on && !was && le->on_started_leading != NULL)
		le->on_started_leading(le->arg);
	else if (!on && was && le->on_stopped_leading != NULL)
		le->on_stopped_leading(le->arg);
}

static int
try_acquire_or_renew(struct kc_leader *le, struct kc_client *cl, struct kc_status *st)
{
	struct json_object *lease = NULL;
	struct record rec, next;
	uint64_t now = kc_clock_now_ms();
	int r;

	memset(&next, 0, sizeof(next));
	(void)kc_strlcpy(next.holder, le->identity, sizeof(next.holder));
	next.duration_s = (int64_t)((le->lease_ms + 999) / 1000);
	microtime_now(next.renew);

	r = kc_client_get(cl, &(struct kc_get_opts){
		.res = &kc_res_leases,
		.ns = le->ns,
		.name = le->name,
	}, &lease, st);
	if (r == KC_ENOTFOUND) {
		(void)kc_strlcpy(next.acquire, next.renew, sizeof(next.acquire));
		return create_lease(le, cl, &next, now, st);
	}
	if (r < 0)
		return r;
	keep_lease(le, lease);
	record_from_lease(lease, &rec);
	observe(le, &rec, now);

	if (rec.holder[0] != '\0' && strcmp(rec.holder, le->identity) != 0 &&
	    !observed_expired(le, now))
		return 0;		/* held by another */
	if (strcmp(rec.holder, le->identity) == 0) {
		(void)kc_strlcpy(next.acquire, rec.acquire[0] != '\0' ? rec.acquire :
		    next.renew, sizeof(next.acquire));
		next.transitions = rec.transitions;
	} else {
		(void)kc_strlcpy(next.acquire, next.renew, sizeof(next.acquire));
		next.transitions = rec.transitions + 1;
	}
	if ((r = update_lease(le, cl, &next, st)) == KC_ECONFLICT)
		return 0;		/* someone wrote since our read */
	if (r < 0)
		return r;
	observe(le, &next, now);
	return 1;
}

int
kc_leader_try(struct kc_leader *le, struct kc_client *cl, struct kc_status *st)
{
	int r;

	if (cl == NULL)
		return kc_status_set(st, -EINVAL, "leader election: no client");
	if ((r = try_acquire_or_renew(le, cl, st)) == 1)
		set_leading(le, true);
	return r;
}

/* Reads the Lease again: 1 when we still hold it (kept for the update), 0 if not. */
static int
reread_ours(struct kc_leader *le, struct kc_client *cl, struct kc_status *st)
{
	struct json_object *lease = NULL;
	struct record rec;
	int r;

	if ((r = kc_client_get(cl, &(struct kc_get_opts){
		.res = &kc_res_leases,
		.ns = le->ns,
		.name = le->name,
	}, &lease, st)) < 0)
		return r == KC_ENOTFOUND ? 0 : r;
	record_from_lease(lease, &rec);
	if (strcmp(rec.holder, le->identity) != 0) {
		json_object_put(lease);
		return 0;
	}
	keep_lease(le, lease);
	return 1;
}

int
kc_leader_release(struct kc_leader *le, struct kc_client *cl, struct kc_status *st)
{
	struct record rec;
	int r = 0;

	if (cl == NULL)
		return kc_status_set(st, -EINVAL, "leader election: no client");
	if (le->have_observed && strcmp(le->observed.holder, le->identity) == 0 &&
	    le->lease != NULL) {
		memset(&rec, 0, sizeof(rec));
		rec.duration_s = 1;
		microtime_now(rec.renew);
		(void)kc_strlcpy(rec.acquire, rec.renew, sizeof(rec.acquire));
		rec.transitions = le->observed.transitions;
		/*
		 * A conflict may be our own renewal, cut short by the stop
		 * after the server applied it: read the Lease again and
		 * release it if it is still ours.
		 */
		r = update_lease(le, cl, &rec, st);
		if (r == KC_ECONFLICT) {
			r = reread_ours(le, cl, st);
			if (r == 1)
				r = update_lease(le, cl, &rec, st);
			else if (r == 0)
				r = KC_ECONFLICT;	/* another holds it now */
		}
		if (r == 0)
			observe(le, &rec, kc_clock_now_ms());
		else if (r == KC_ECONFLICT)
			r = 0;		/* changed since: not ours to release */
	}
	set_leading(le, false);
	return r;
}

/* ---- the loops ------------------------------------------------------------- */

/* Sleeps 'ms' in slices; false when stopped meanwhile. */
static bool
wait_ms(struct kc_leader *le, uint64_t ms)
{
	while (ms > 0) {
		uint64_t n = KC_MIN(ms, (uint64_t)SLICE_MS);

		if (atomic_load(&le->stopped))
			return false;
		(void)kc_clock_sleep_ms(n);
		ms -= n;
	}
	return !atomic_load(&le->stopped);
}

static uint64_t
jittered(uint64_t ms)
{
	return ms + kc_random_u64() % (ms * JITTER_PCT / 100 + 1);
}

/* Attempts until one succeeds (true) or the renew deadline passes. */
static bool
renew_round(struct kc_leader *le, struct kc_client *cl, struct kc_status *st)
{
	uint64_t deadline = kc_clock_now_ms() + le->renew_ms, now;

	for (;;) {
		if (try_acquire_or_renew(le, cl, st) == 1)
			return true;
		if (atomic_load(&le->stopped))
			return true;	/* the caller sees the stop; not a loss */
		if ((now = kc_clock_now_ms()) >= deadline)
			return false;
		if (!wait_ms(le, KC_MIN(le->retry_ms, deadline - now)))
			return true;
		if (kc_clock_now_ms() >= deadline)
			return false;
	}
}

int
kc_leader_run(struct kc_leader *le, struct kc_client *cl, struct kc_status *st)
{
	struct kc_status ignored;
	bool lost = false, expected = false;

	if (cl == NULL)
		return kc_status_set(st, -EINVAL, "leader election: no client");
	if (!atomic_compare_exchange_strong(&le->running, &expected, true))
		return kc_status_set(st, -EBUSY, "leader election: already running");
	pthread_mutex_lock(&le->mu);
	le->client = cl;
	pthread_mutex_unlock(&le->mu);

	while (!atomic_load(&le->stopped)) {
		if (kc_leader_try(le, cl, &ignored) == 1)
			break;
		(void)wait_ms(le, jittered(le->retry_ms));
	}
	while (kc_leader_is_leader(le) && !atomic_load(&le->stopped)) {
		if (!wait_ms(le, le->retry_ms))
			break;
		if (!renew_round(le, cl, &ignored)) {
			lost = true;
			break;
		}
	}

	pthread_mutex_lock(&le->mu);
	le->client = NULL;
	pthread_mutex_unlock(&le->mu);
	kc_client_reset_cancel(cl);
	if (lost)
		set_leading(le, false);		/* at once, before the release */
	if (lost || kc_leader_is_leader(le))
		(void)kc_leader_release(le, cl, &ignored);
	atomic_store(&le->running, false);
	return lost ? KC_LEADER_LOST : KC_LEADER_STOPPED;
}

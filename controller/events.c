/*
 * events.c: the Event recorder.
 *
 * Every lifecycle step and failure of a Run becomes a core/v1 Event about
 * the Run, so `kubectl describe run` tells its story. As client-go's
 * recorder does, an Event equal to one recorded in the last ten minutes
 * (same Run, type, reason and message) is not created again: the existing
 * one gets its count raised and lastTimestamp moved by a merge patch, so a
 * Run stuck in a loop produces one Event with a count, not thousands.
 *
 * Events are best effort: a failure is logged at debug level and dropped;
 * it never fails a reconcile. The recent-events table is bounded
 * (RECORDER_SLOTS, the oldest slot is reused) and guarded by a mutex that
 * is never held across a request.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/hash.h>
#include <kc/json.h>
#include <kc/log.h>
#include <kc/str.h>

#include "controller.h"

#define RECORDER_SLOTS		512
#define RECORDER_WINDOW_S	600

struct slot {
	uint64_t	 hash;		/* 0: free */
	char		 ns[KC_NAMESPACE_MAX + 1];
	char		 name[KC_NAME_MAX + 1];	/* the Event's */
	uint32_t	 count;
	time_t		 first;		/* wall clock: a date */
	uint64_t	 last_ms;	/* monotonic: the window is a duration */
};

struct recorder {
	pthread_mutex_t	 lock;
	char		 instance[64];
	uint64_t	 seq;
	struct slot	 slots[RECORDER_SLOTS];
};

int
recorder_new(const char *instance, struct recorder **ret)
{
	struct recorder *rec;

	if ((rec = kc_calloc(1, sizeof(*rec))) == NULL)
		return -ENOMEM;
	if (pthread_mutex_init(&rec->lock, NULL) != 0) {
		kc_free(rec);
		return -ENOMEM;
	}
	kc_strlcpy(rec->instance, instance, sizeof(rec->instance));
	*ret = rec;
	return 0;
}

struct recorder *
recorder_free(struct recorder *rec)
{
	if (rec == NULL)
		return NULL;
	pthread_mutex_destroy(&rec->lock);
	kc_free(rec);
	return NULL;
}

/* FNV-1a of 's' and a 0xff field separator. */
static uint64_t
fnv64(uint64_t h, const char *s)
{
	return kc_fnv1a64(kc_fnv1a64_str(h, s), "\xff", 1);
}

static struct json_object *
event_new(const struct recorder *rec, const struct json_object *run, const char *name,
    bool warning, const char *reason, const char *message, const char *ts)
{
	struct json_object *ev = json_object_new_object(), *md, *io, *src;
	const char *api = kc_json_str(run, "apiVersion");

	if (ev == NULL)
		return NULL;
	md = kc_json_ensure_obj(ev, "metadata");
	io = kc_json_ensure_obj(ev, "involvedObject");
	src = kc_json_ensure_obj(ev, "source");
	if (md == NULL || io == NULL || src == NULL ||
	    kc_json_set_str(ev, "apiVersion", "v1") < 0 ||
	    kc_json_set_str(ev, "kind", "Event") < 0 ||
	    kc_json_set_str(md, "name", name) < 0 ||
	    kc_json_set_str(md, "namespace", kc_json_str(run, "metadata", "namespace")) < 0 ||
	    kc_json_set_str(io, "apiVersion", api != NULL ? api : TY_API_VERSION) < 0 ||
	    kc_json_set_str(io, "kind", "Run") < 0 ||
	    kc_json_set_str(io, "name", kc_json_str(run, "metadata", "name")) < 0 ||
	    kc_json_set_str(io, "namespace", kc_json_str(run, "metadata", "namespace")) < 0 ||
	    kc_json_set_str(io, "uid", kc_json_str(run, "metadata", "uid")) < 0 ||
	    kc_json_set_str(io, "resourceVersion",
		kc_json_str(run, "metadata", "resourceVersion")) < 0 ||
	    kc_json_set_str(ev, "reason", reason) < 0 ||
	    kc_json_set_str(ev, "message", message) < 0 ||
	    kc_json_set_str(ev, "type", warning ? "Warning" : "Normal") < 0 ||
	    kc_json_set_str(src, "component", TY_COMPONENT) < 0 ||
	    kc_json_set_str(ev, "firstTimestamp", ts) < 0 ||
	    kc_json_set_str(ev, "lastTimestamp", ts) < 0 ||
	    kc_json_set_int(ev, "count", 1) < 0 ||
	    kc_json_set_str(ev, "reportingComponent", TY_COMPONENT) < 0 ||
	    kc_json_set_str(ev, "reportingInstance", rec->instance) < 0) {
		json_object_put(ev);
		return NULL;
	}
	return ev;
}

void
recorder_emit(struct recorder *rec, struct kc_client *cl, const struct json_object *run,
    bool warning, const char *reason, const char *message)
{
	struct kc_log_ctx lc = { .action = "event", .kind = "Run",
	    .ns = kc_json_str(run, "metadata", "namespace"),
	    .name = kc_json_str(run, "metadata", "name") };
	struct kc_status st = { 0 };
	struct json_object *obj = NULL;
	char name[KC_NAME_MAX + 1], ts[32], patch_ts[32];
	const char *run_name = lc.name, *ns = lc.ns;
	struct slot *s = NULL, *oldest = NULL;
	uint64_t h;
	uint32_t count = 1;
	time_t now = kc_clock_wall();
	uint64_t mono = kc_clock_now_ms();
	int r;

	if (run_name == NULL || ns == NULL || kc_time_format(now, ts, sizeof(ts)) < 0)
		return;
	h = fnv64(fnv64(fnv64(fnv64(KC_FNV1A64_INIT,
	    kc_json_str(run, "metadata", "uid")), warning ? "W" : "N"), reason), message);
	if (h == 0)
		h = 1;

	pthread_mutex_lock(&rec->lock);
	for (size_t i = 0; i < RECORDER_SLOTS; i++) {
		struct slot *c = &rec->slots[i];

		if (c->hash == h && mono - c->last_ms < RECORDER_WINDOW_S * 1000) {
			s = c;
			break;
		}
		if (oldest == NULL || c->last_ms < oldest->last_ms)
			oldest = c;
	}
	if (s != NULL) {
		count = ++s->count;
		s->last_ms = mono;
		kc_strlcpy(name, s->name, sizeof(name));
		(void)kc_time_format(s->first, patch_ts, sizeof(patch_ts));
	} else {
		/* client-go names events <object>.<unix nanoseconds in hex>. */
		(void)snprintf(name, sizeof(name), "%.*s.%" PRIx64, 200, run_name,
		    (uint64_t)now * 1000000000u + (rec->seq++ % 1000000000u));
		s = oldest;
		*s = (struct slot){ .hash = h, .count = 1, .first = now, .last_ms = mono };
		kc_strlcpy(s->ns, ns, sizeof(s->ns));
		kc_strlcpy(s->name, name, sizeof(s->name));
	}
	pthread_mutex_unlock(&rec->lock);

	if (count > 1) {
		if ((obj = json_object_new_object()) == NULL ||
		    kc_json_set_int(obj, "count", count) < 0 ||
		    kc_json_set_str(obj, "lastTimestamp", ts) < 0)
			goto out;
		r = kc_client_patch(cl, &(struct kc_patch_opts){
			.res = &kc_res_events, .ns = ns, .name = name,
			.type = KC_PATCH_MERGE,
		}, obj, NULL, &st);
		if (r != KC_ENOTFOUND)
			goto done;
		/* Expired on the server: create it again. */
		json_object_put(obj);
	}
	if ((obj = event_new(rec, run, name, warning, reason, message, ts)) == NULL)
		goto out;
	r = kc_client_create(cl, &(struct kc_create_opts){
		.res = &kc_res_events, .ns = ns,
	}, obj, NULL, &st);
done:
	/* Best effort, but a refused Event (RBAC, quota) is worth a warning. */
	if (r == KC_EFORBIDDEN)
		kc_log_warn(&lc, "event %s %s refused: %s", reason, name, st.message);
	else if (r < 0)
		kc_log_debug(&lc, "event %s %s: %s", reason, name,
		    st.message[0] != '\0' ? st.message : kc_strerror(r));
out:
	json_object_put(obj);
}

/*
 * run-wait: waits until a Run's session ends, and exits with its result.
 *
 *	run-wait [--kubeconfig PATH] [--context NAME] [-n NAMESPACE]
 *	    [--timeout SECONDS] RUN
 *
 * A small libkc program: a rest config as kubectl finds one, a GET, then a
 * watch of that one object that resumes where it stopped and lists again
 * when the server's history is gone (410 Expired). It prints a line each
 * time the phase or the session changes, and exits with
 *
 *	0  the session Succeeded
 *	1  it Failed
 *	2  it was Stopped
 *	3  --timeout passed first
 *	4  the Run does not exist, or was deleted
 *	5  anything else went wrong (the message says what)
 *
 * If the Run has already ended when run-wait starts, it says so at once.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/client.h>
#include <kc/clock.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/kubeconfig.h>
#include <kc/str.h>
#include <kc/watch.h>

enum {
	EXIT_SUCCEEDED = 0,
	EXIT_FAILED = 1,
	EXIT_STOPPED = 2,
	EXIT_TIMEOUT = 3,
	EXIT_GONE = 4,
	EXIT_ERROR = 5,
};

static const struct kc_resource res_runs = {
	.group = "trainyard.dev",
	.version = "v1beta1",
	.resource = "runs",
	.kind = "Run",
	.namespaced = true,
};

struct waiter {
	const char	*name;
	char		 phase[32];	/* last phase printed */
	int64_t		 session;	/* last session printed */
	int		 result;	/* an EXIT_* once the session ended, or -1 */
};

static const char usage_text[] =
    "usage: run-wait [--kubeconfig PATH] [--context NAME] [-n NAMESPACE]\n"
    "                [--timeout SECONDS] RUN\n";

/* Prints what changed, and records the result once the phase is final. */
static void
observe(struct waiter *w, const struct json_object *run)
{
	static const struct {
		const char	*phase;
		int		 result;
	} final[] = {
		{ "Succeeded", EXIT_SUCCEEDED },
		{ "Failed", EXIT_FAILED },
		{ "Stopped", EXIT_STOPPED },
	};
	const char *phase = kc_json_str(run, "status", "phase");
	const char *reason = kc_json_str(run, "status", "reason");
	const char *message = kc_json_str(run, "status", "message");
	int64_t session = kc_json_int(run, 0, "status", "session");

	if (phase == NULL)
		phase = "Pending";
	if (strcmp(phase, w->phase) == 0 && session == w->session)
		return;
	(void)kc_strlcpy(w->phase, phase, sizeof(w->phase));
	w->session = session;
	if (reason != NULL && reason[0] != '\0')
		(void)printf("run %s: session %lld %s (%s)\n", w->name, (long long)session,
		    phase, reason);
	else
		(void)printf("run %s: session %lld %s\n", w->name, (long long)session, phase);
	if (message != NULL && message[0] != '\0')
		(void)printf("  %s\n", message);
	(void)fflush(stdout);
	w->result = -1;
	for (size_t i = 0; i < sizeof(final) / sizeof(final[0]); i++)
		if (strcmp(phase, final[i].phase) == 0)
			w->result = final[i].result;
}

static int
on_event(void *arg, enum kc_watch_type type, struct json_object *obj)
{
	struct waiter *w = arg;

	if (type == KC_WATCH_DELETED) {
		w->result = EXIT_GONE;
		return KC_WATCH_STOP;
	}
	if (type == KC_WATCH_BOOKMARK)
		return 0;
	observe(w, obj);
	return w->result >= 0 ? KC_WATCH_STOP : 0;
}

/*
 * GETs the Run and returns its resourceVersion in 'rv': the point to watch
 * from. EXIT_GONE when it is not there, EXIT_ERROR on other failures, -1
 * to go on waiting, or the result when it has already ended.
 */
static int
get_run(struct kc_client *cl, const char *ns, struct waiter *w, char *rv, size_t rvsize)
{
	struct json_object *run = NULL;
	struct kc_status st = { 0 };
	const char *v;
	int r;

	r = kc_client_get(cl, &(struct kc_get_opts){ .res = &res_runs, .ns = ns,
	    .name = w->name }, &run, &st);
	if (r == KC_ENOTFOUND) {
		(void)fprintf(stderr, "run-wait: run \"%s\" not found in namespace %s\n",
		    w->name, ns);
		return EXIT_GONE;
	}
	if (r < 0) {
		(void)fprintf(stderr, "run-wait: get run %s/%s: %s\n", ns, w->name,
		    st.message[0] != '\0' ? st.message : kc_strerror(r));
		return EXIT_ERROR;
	}
	observe(w, run);
	v = kc_json_str(run, "metadata", "resourceVersion");
	(void)kc_strlcpy(rv, v != NULL ? v : "", rvsize);
	json_object_put(run);
	return w->result;
}

static int
wait_run(struct kc_client *cl, const char *ns, struct waiter *w, uint64_t timeout_ms)
{
	uint64_t deadline = kc_clock_now_ms() + timeout_ms;
	char field[300], rv[KC_RV_MAX];
	int r;

	(void)snprintf(field, sizeof(field), "metadata.name=%s", w->name);
	if ((r = get_run(cl, ns, w, rv, sizeof(rv))) >= 0)
		return r;
	for (;;) {
		struct kc_watch_result wr;
		struct kc_status st = { 0 };
		uint64_t now = kc_clock_now_ms();

		if (now >= deadline)
			return EXIT_TIMEOUT;
		r = kc_watch_run(cl, &(struct kc_watch_opts){
			.res = &res_runs,
			.ns = ns,
			.field_selector = field,
			.resource_version = rv,
			.allow_bookmarks = true,
			.timeout_s = (uint32_t)((deadline - now + 999) / 1000),
		}, on_event, w, &wr, &st);
		if (r == KC_WATCH_STOP)
			return w->result;
		if (r == KC_EEXPIRED) {
			/* The history is gone: look again, then watch from there. */
			if ((r = get_run(cl, ns, w, rv, sizeof(rv))) >= 0)
				return r;
			continue;
		}
		if (r < 0) {
			(void)fprintf(stderr, "run-wait: watch run %s/%s: %s\n", ns, w->name,
			    st.message[0] != '\0' ? st.message : kc_strerror(r));
			return EXIT_ERROR;
		}
		/* The server ended the watch (its timeout): resume. */
		if (wr.resource_version[0] != '\0')
			(void)kc_strlcpy(rv, wr.resource_version, sizeof(rv));
	}
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "kubeconfig", required_argument, NULL, 'k' },
		{ "context", required_argument, NULL, 'c' },
		{ "namespace", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	_cleanup_(kc_rest_config_freep) struct kc_rest_config *rc = NULL;
	_cleanup_(kc_client_freep) struct kc_client *cl = NULL;
	const char *kubeconfig = NULL, *context = NULL, *ns = NULL;
	struct waiter w = { .session = -1, .result = -1 };
	struct kc_status st = { 0 };
	uint32_t timeout_s = 3600;
	int c, r;

	while ((c = getopt_long(argc, argv, "n:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
			kubeconfig = optarg;
			break;
		case 'c':
			context = optarg;
			break;
		case 'n':
			ns = optarg;
			break;
		case 't':
			if (kc_parse_u32(optarg, &timeout_s) < 0 || timeout_s == 0) {
				(void)fprintf(stderr, "run-wait: --timeout: expected a positive "
				    "number of seconds, got \"%s\"\n", optarg);
				return EXIT_ERROR;
			}
			break;
		case 'h':
			(void)fputs(usage_text, stdout);
			return 0;
		default:
			(void)fputs(usage_text, stderr);
			return EXIT_ERROR;
		}
	}
	if (optind != argc - 1) {
		(void)fputs(usage_text, stderr);
		return EXIT_ERROR;
	}
	w.name = argv[optind];
	if ((r = kc_rest_config_load_default(kubeconfig, context, &rc, &st)) < 0) {
		(void)fprintf(stderr, "run-wait: %s\n",
		    st.message[0] != '\0' ? st.message : kc_strerror(r));
		return EXIT_ERROR;
	}
	if ((r = kc_client_new(&(struct kc_client_opts){ .rc = rc, .max_retries = 3 },
	    &cl, &st)) < 0) {
		(void)fprintf(stderr, "run-wait: %s\n",
		    st.message[0] != '\0' ? st.message : kc_strerror(r));
		return EXIT_ERROR;
	}
	if (ns == NULL)
		ns = kc_client_namespace(cl);
	r = wait_run(cl, ns, &w, (uint64_t)timeout_s * 1000);
	if (r == EXIT_TIMEOUT)
		(void)fprintf(stderr, "run-wait: run %s/%s: still %s after %u s\n", ns,
		    w.name, w.phase[0] != '\0' ? w.phase : "unknown", timeout_s);
	else if (r == EXIT_GONE && w.session >= 0)
		(void)fprintf(stderr, "run-wait: run %s/%s was deleted\n", ns, w.name);
	return r;
}

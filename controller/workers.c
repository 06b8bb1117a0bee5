/*
 * workers.c: the worker pool and the memory trimmer.
 *
 * The workers are a pool that grows with the work and shrinks after it.
 * One, the resident, always waits for keys (it also serves the queue's
 * timers). When a key is added, or a worker takes one and more are
 * ready, while no worker waits, another one starts (workers_kick()), up
 * to the maximum. A worker that waits WORKER_IDLE_MS (the trimmer's
 * "burst over") without a key retires: its thread, its client with its
 * TLS connection, and glibc's cache of the blocks it freed (tcache, up
 * to about 100 KB a busy thread, which only the thread's end gives back)
 * go, and the trimmer returns the pages. A burst pays the workers' TLS
 * handshakes again; an idle controller keeps one worker.
 *
 * The trimmer gives a burst's free memory back once it is over
 * (trim_main()).
 *
 * The pool knows nothing of reconcilers: each key goes to the 'work'
 * function of struct workers_opts with the worker's own client.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/log.h>

#include "controller.h"

#define TRIM_QUIET_MS		200	/* a burst is over after this without work */
#define TRIM_BUSY_MS		(30 * 1000)	/* ... or trimmed anyway after this */
#define TRIM_MIN_WORK		16	/* enqueues and reconciles worth a trim */
#define WORKER_IDLE_MS		TRIM_QUIET_MS	/* a surplus worker retires then */

struct worker {
	struct workers		*w;
	struct kc_client	*cl;		/* for cancelling (lock) */
	pthread_t		 tid;
	bool			 started;	/* a thread to join */
	bool			 retired;	/* ended (lock) */
	bool			 resident;	/* never retires */
};

/* Gives a burst's memory back once it is over (see trim_main()). */
struct trimmer {
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;		/* work started; stop */
	atomic_uint_fast64_t	 work;		/* enqueues and reconciles so far */
	atomic_bool		 asleep;	/* waiting for work: signal cv */
	bool			 stop;		/* under mu */
	bool			 started;
	pthread_t		 tid;
};

struct workers {
	struct workers_opts	 o;
	pthread_mutex_t		 lock;		/* slots vs. stop */
	struct trimmer		 trim;
	bool			 stopping;
	struct worker		*slots;		/* o.max of them, once started */
	atomic_bool		 pool;		/* 'slots' is set: workers may start */
	bool			 has_resident;	/* a resident runs (lock) */
	atomic_uint		 nrunning;	/* not retired (changed under lock) */
	atomic_uint		 nwaiting;	/* waiting for a key */
};

static const struct kc_log_ctx wlog = { .action = "workers" };

/* ---- the trimmer --------------------------------------------------------- */

static void
trim_note_n(struct workers *w, uint64_t n)
{
	atomic_fetch_add(&w->trim.work, n);
	if (atomic_load(&w->trim.asleep)) {
		pthread_mutex_lock(&w->trim.mu);
		pthread_cond_signal(&w->trim.cv);
		pthread_mutex_unlock(&w->trim.mu);
	}
}

/* Waits on the trimmer's cv until 'ms' passed or stop; under mu. */
static void
trim_wait_ms(struct trimmer *t, uint64_t ms)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	while (!t->stop && pthread_cond_timedwait(&t->cv, &t->mu, &ts) != ETIMEDOUT)
		;
}

/*
 * The trimmer. glibc keeps what a thread frees in that thread's arena for
 * reuse and gives back only the top of a heap, so the pages a burst used
 * (watch events being decoded, pods being built, the reconcile of a
 * 4000-node Run) stay resident below the items that outlive the burst.
 * This thread sleeps until work starts (a handler enqueues, a worker
 * finishes a reconcile), then waits until none has come for
 * TRIM_QUIET_MS, and then malloc_trim(0) gives every free page of every
 * arena back to the system. Idle, it waits on its condition variable
 * with no timer; a trickle of work trims at most once per TRIM_MIN_WORK
 * units of it, and work that never pauses is trimmed every TRIM_BUSY_MS.
 * The cost of a trim (a few ms) is the page faults of the next burst,
 * paid once per burst.
 */
static void *
trim_main(void *arg)
{
	struct trimmer *t = arg;
	uint64_t trimmed = 0, busy_since = 0, w, start;

	pthread_mutex_lock(&t->mu);
	while (!t->stop) {
		if ((w = atomic_load(&t->work)) - trimmed < TRIM_MIN_WORK) {
			atomic_store(&t->asleep, true);
			if (atomic_load(&t->work) - trimmed < TRIM_MIN_WORK && !t->stop)
				pthread_cond_wait(&t->cv, &t->mu);
			atomic_store(&t->asleep, false);
			busy_since = kc_clock_now_ms();
			continue;
		}
		trim_wait_ms(t, TRIM_QUIET_MS);
		if (t->stop)
			break;
		start = kc_clock_now_ms();
		if (atomic_load(&t->work) != w && start - busy_since < TRIM_BUSY_MS)
			continue;		/* still busy: wait for quiet again */
		pthread_mutex_unlock(&t->mu);
		(void)kc_keep_trim();
		(void)malloc_trim(0);
		kc_log_debug(&wlog, "%s: free memory given back in %llu ms",
		    atomic_load(&t->work) == w ? "burst over" : "busy",
		    (unsigned long long)(kc_clock_now_ms() - start));
		pthread_mutex_lock(&t->mu);
		trimmed = atomic_load(&t->work);
		busy_since = kc_clock_now_ms();
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

static int
trim_start(struct trimmer *t)
{
	pthread_condattr_t ca;
	int r;

	if (pthread_condattr_init(&ca) != 0)
		return -ENOMEM;
	(void)pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	r = pthread_cond_init(&t->cv, &ca);
	(void)pthread_condattr_destroy(&ca);
	if (r != 0)
		return -ENOMEM;
	if (pthread_mutex_init(&t->mu, NULL) != 0) {
		(void)pthread_cond_destroy(&t->cv);
		return -ENOMEM;
	}
	if ((r = pthread_create(&t->tid, NULL, trim_main, t)) != 0) {
		(void)pthread_mutex_destroy(&t->mu);
		(void)pthread_cond_destroy(&t->cv);
		return -r;
	}
	t->started = true;
	return 0;
}

static void
trim_stop(struct trimmer *t)
{
	if (!t->started)
		return;
	pthread_mutex_lock(&t->mu);
	t->stop = true;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->tid, NULL);
	(void)pthread_mutex_destroy(&t->mu);
	(void)pthread_cond_destroy(&t->cv);
	t->started = false;
}

/* ---- the pool ------------------------------------------------------------ */

static void	*worker_main(void *arg);

void
workers_note(struct workers *w)
{
	trim_note_n(w, 1);
}

/*
 * Starts a worker when a key is ready and none waits for one, up to
 * o.max; the first to start (or to start again after the resident
 * failed) is the resident. Cheap when nothing is to be done: two atomic
 * loads. Any thread.
 */
void
workers_kick(struct workers *w)
{
	struct worker *t = NULL;
	int r;

	if (!atomic_load(&w->pool) || atomic_load(&w->nwaiting) > 0 ||
	    atomic_load(&w->nrunning) >= w->o.max)
		return;
	pthread_mutex_lock(&w->lock);
	if (w->stopping || w->slots == NULL || atomic_load(&w->nrunning) >= w->o.max ||
	    (w->has_resident && (atomic_load(&w->nwaiting) > 0 ||
	    kc_workqueue_len(w->o.queue) == 0)))
		goto out;
	for (unsigned i = 0; i < w->o.max && t == NULL; i++)
		if (!w->slots[i].started || w->slots[i].retired)
			t = &w->slots[i];
	if (t == NULL)
		goto out;
	if (t->started)
		pthread_join(t->tid, NULL);	/* retired: returns at once */
	*t = (struct worker){ .w = w, .resident = !w->has_resident };
	if ((r = pthread_create(&t->tid, NULL, worker_main, t)) != 0) {
		kc_log_error_r(&wlog, -r, "worker thread: %s", kc_strerror(-r));
		goto out;
	}
	t->started = true;
	w->has_resident = w->has_resident || t->resident;
	atomic_fetch_add(&w->nrunning, 1);
out:
	pthread_mutex_unlock(&w->lock);
}

/* A worker's end, on its own or at shutdown; frees its client. */
static void
worker_end(struct worker *t, struct kc_client *cl)
{
	struct workers *w = t->w;

	pthread_mutex_lock(&w->lock);		/* workers_stop() may cancel it */
	t->cl = NULL;
	pthread_mutex_unlock(&w->lock);
	kc_client_free(cl);
	pthread_mutex_lock(&w->lock);
	t->retired = true;
	if (t->resident)
		w->has_resident = false;
	atomic_fetch_sub(&w->nrunning, 1);
	pthread_mutex_unlock(&w->lock);
	/* What the thread's cache held is free now: make sure a trim follows. */
	trim_note_n(w, TRIM_MIN_WORK);
}

static void *
worker_main(void *arg)
{
	struct worker *t = arg;
	struct workers *w = t->w;
	struct kc_status st = { 0 };
	struct kc_client *cl = NULL;
	char key[KC_WORKQUEUE_KEY_MAX];
	int r;

	if ((r = w->o.client(w->o.arg, &cl, &st)) < 0) {
		kc_log_error_r(&wlog, r, "client: %s", st.message);
		worker_end(t, NULL);
		return NULL;
	}
	pthread_mutex_lock(&w->lock);
	t->cl = cl;
	pthread_mutex_unlock(&w->lock);
	for (;;) {
		atomic_fetch_add(&w->nwaiting, 1);
		r = t->resident ? kc_workqueue_get(w->o.queue, key, sizeof(key)) :
		    kc_workqueue_get_timeout(w->o.queue, key, sizeof(key), WORKER_IDLE_MS);
		atomic_fetch_sub(&w->nwaiting, 1);
		if (r < 0)
			break;			/* idle (surplus), or shut down */
		workers_kick(w);		/* more keys wait: a helper */
		w->o.work(w->o.arg, cl, key);
		trim_note_n(w, 1);
		kc_workqueue_done(w->o.queue, key);
	}
	worker_end(t, cl);
	return NULL;
}

int
workers_new(const struct workers_opts *o, struct workers **ret)
{
	struct workers *w;
	int r;

	if ((w = kc_calloc(1, sizeof(*w))) == NULL)
		return -ENOMEM;
	w->o = *o;
	if (pthread_mutex_init(&w->lock, NULL) != 0) {
		kc_free(w);
		return -ENOMEM;
	}
	if ((r = trim_start(&w->trim)) < 0) {
		pthread_mutex_destroy(&w->lock);
		kc_free(w);
		return r;
	}
	*ret = w;
	return 0;
}

int
workers_start(struct workers *w)
{
	int r = 0;

	pthread_mutex_lock(&w->lock);
	if (w->slots != NULL || w->stopping) {
		pthread_mutex_unlock(&w->lock);
		return 0;
	}
	if ((w->slots = kc_calloc(w->o.max, sizeof(*w->slots))) == NULL)
		r = -ENOMEM;
	else
		atomic_store(&w->pool, true);
	pthread_mutex_unlock(&w->lock);
	if (r < 0)
		return r;
	workers_kick(w);			/* the resident */
	if (atomic_load(&w->nrunning) == 0)
		return kc_log_error_r(&wlog, -EAGAIN, "no worker thread");
	workers_kick(w);			/* and help for what is queued */
	kc_log_info(&wlog, "workers started: up to %u, one while idle", w->o.max);
	return 0;
}

void
workers_stop(struct workers *w, uint64_t drain_ms)
{
	bool pool;

	if (w == NULL)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pool = w->slots != NULL;
	pthread_mutex_unlock(&w->lock);
	/*
	 * A standby never started the pool (and cannot now): nothing would
	 * ever take what its informers queued, so there is nothing to wait for.
	 */
	if (!pool) {
		kc_workqueue_shut_down(w->o.queue);
		return;
	}
	/*
	 * Intake stops; what is queued or in flight may finish within
	 * 'drain_ms', then the workers' requests are cancelled, so their
	 * reconciles fail fast and the queue empties.
	 */
	if (kc_workqueue_shut_down_with_drain(w->o.queue, drain_ms) == -ETIMEDOUT) {
		kc_log_warn(&wlog, "reconciles still running after %llu ms: "
		    "cancelling them", (unsigned long long)drain_ms);
		pthread_mutex_lock(&w->lock);
		for (size_t i = 0; w->slots != NULL && i < w->o.max; i++)
			if (w->slots[i].cl != NULL)
				kc_client_cancel(w->slots[i].cl);
		pthread_mutex_unlock(&w->lock);
	}
	/* No worker starts once 'stopping' is set: the slots stay put. */
	for (size_t i = 0; w->slots != NULL && i < w->o.max; i++)
		if (w->slots[i].started)
			pthread_join(w->slots[i].tid, NULL);
}

struct workers *
workers_free(struct workers *w)
{
	if (w == NULL)
		return NULL;
	trim_stop(&w->trim);		/* after the informers: they note work */
	kc_free(w->slots);
	pthread_mutex_destroy(&w->lock);
	return kc_free(w);
}

/*
 * hostile.c: ty-hostile, hostile clients against one listener, and a
 * legitimate prober measuring what the listener still answers.
 *
 *	ty-hostile --target HOST:PORT [--tls] [--conns N] [--mode MODE]
 *	    [--seconds S] [--probe URL] [--probe-ms MS] [--probe-max-ms MS]
 *
 * Holds N connections to the target for S seconds, each in one of the
 * modes (MODE "mixed" cycles through all of them):
 *
 *	slowheaders	a request line, then one header byte a second, never ending
 *	idle		nothing at all (with --tls: not even a handshake)
 *	slowbody	a POST with Content-Length 1 MB, then one body byte a second
 *	garbage		random bytes, then wait
 *	keepalive	one complete GET, its answer read, then nothing
 *
 * A connection the server closes is opened again about a second later
 * (0.5 to 1.5 s), as an attacker would who keeps a thousand open; a
 * faster churn is a flood of connections, which no server survives on
 * two cores. Meanwhile a thread GETs the probe URL every probe-ms
 * on a new connection each time (as the kubelet probes) through libkc's
 * transport, TLS unverified. At the end it prints one line:
 *
 *	hostile: mode=mixed conns=1000 held=987 opened=1130 closed_by_server=143
 *	    probes=50 failed=0 slow=0 p50_ms=1.2 p99_ms=4.0 max_ms=4.4
 *
 * held is the most connections open at once after the first second;
 * slow counts probes over probe-max-ms (default 1000). Exit status 1 when
 * a probe failed or was slow, 2 on bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <kc/alloc.h>
#include <kc/clock.h>
#include <kc/err.h>
#include <kc/kubeconfig.h>
#include <kc/str.h>
#include <kc/transport.h>

#include "bench.h"

#define CONNS_MAX	20000
#define REOPEN_MS	1000	/* on average; 500 to 1500 */

enum mode { M_SLOWHEADERS, M_IDLE, M_SLOWBODY, M_GARBAGE, M_KEEPALIVE, M_COUNT, M_MIXED };

static const char *const mode_names[] = {
	"slowheaders", "idle", "slowbody", "garbage", "keepalive",
};

enum cstate { C_CLOSED, C_CONNECTING, C_HANDSHAKE, C_SENDING, C_READING, C_HOLDING };

struct hconn {
	int		 fd;
	SSL		*ssl;
	enum mode	 mode;
	enum cstate	 st;
	uint64_t	 next_ms;	/* next trickle byte or reopen */
	char		 out[512];
	size_t		 outlen, outoff;
	bool		 want_write;
};

static struct {
	struct sockaddr_storage	 addr;
	socklen_t		 addrlen;
	bool			 tls;
	SSL_CTX			*ctx;
	char			 host[256];
	uint64_t		 opened, closed;
} H;

static atomic_bool stop;
static char probe_url[512];
static unsigned probe_ms = 100, probe_max_ms = 1000;
static uint64_t *lat;		/* probe latencies, ns */
static size_t nlat, caplat, probes_failed, probes_slow;

static uint64_t
now_ms(void)
{
	return bench_now_ns() / 1000000;
}

static void
hclose(struct hconn *c, bool by_server)
{
	if (c->ssl != NULL)
		SSL_free(c->ssl);
	c->ssl = NULL;
	if (c->fd >= 0)
		(void)close(c->fd);
	c->fd = -1;
	c->st = C_CLOSED;
	c->next_ms = now_ms() + REOPEN_MS / 2 + kc_random_u64() % REOPEN_MS;
	if (by_server)
		H.closed++;
}

/* What 'c' sends first in its mode. */
static void
prepare(struct hconn *c)
{
	int n = 0;

	switch (c->mode) {
	case M_SLOWHEADERS:
		n = snprintf(c->out, sizeof(c->out), "GET /healthz HTTP/1.1\r\nHost: %s\r\n",
		    H.host);
		break;
	case M_SLOWBODY:
		n = snprintf(c->out, sizeof(c->out), "POST /convert HTTP/1.1\r\nHost: %s\r\n"
		    "Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{",
		    H.host);
		break;
	case M_GARBAGE:
		n = 200;
		for (int i = 0; i < n; i++)
			c->out[i] = (char)(kc_random_u64() & 0xff);
		break;
	case M_KEEPALIVE:
		n = snprintf(c->out, sizeof(c->out), "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n",
		    H.host);
		break;
	case M_IDLE:
	default:
		n = 0;
		break;
	}
	c->outlen = (size_t)n;
	c->outoff = 0;
}

static void
hopen(struct hconn *c)
{
	int fd;

	if ((fd = socket(H.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK, 0)) < 0) {
		c->next_ms = now_ms() + 1000;
		return;
	}
	c->fd = fd;
	H.opened++;
	if (connect(fd, (struct sockaddr *)&H.addr, H.addrlen) < 0 && errno != EINPROGRESS) {
		hclose(c, false);
		return;
	}
	c->st = C_CONNECTING;
	prepare(c);
}

/* The socket connected: start TLS or sending. */
static void
connected(struct hconn *c)
{
	if (H.tls && !(c->mode == M_IDLE || c->mode == M_GARBAGE)) {
		if ((c->ssl = SSL_new(H.ctx)) == NULL) {
			hclose(c, false);
			return;
		}
		SSL_set_fd(c->ssl, c->fd);
		SSL_set_tlsext_host_name(c->ssl, H.host);
		c->st = C_HANDSHAKE;
		return;
	}
	c->st = c->outlen > 0 ? C_SENDING : C_HOLDING;
}

static ssize_t
hwrite(struct hconn *c, const char *p, size_t n)
{
	int r;

	if (c->ssl == NULL)
		return send(c->fd, p, n, MSG_NOSIGNAL);
	if ((r = SSL_write(c->ssl, p, (int)n)) > 0)
		return r;
	r = SSL_get_error(c->ssl, r);
	errno = r == SSL_ERROR_WANT_READ || r == SSL_ERROR_WANT_WRITE ? EAGAIN : EPIPE;
	return -1;
}

static ssize_t
hread(struct hconn *c, char *p, size_t n)
{
	int r;

	if (c->ssl == NULL)
		return recv(c->fd, p, n, 0);
	if ((r = SSL_read(c->ssl, p, (int)n)) > 0)
		return r;
	r = SSL_get_error(c->ssl, r);
	if (r == SSL_ERROR_ZERO_RETURN)
		return 0;
	errno = r == SSL_ERROR_WANT_READ || r == SSL_ERROR_WANT_WRITE ? EAGAIN : EPIPE;
	return -1;
}

/* One step of 'c' after poll() said 'rev'. */
static void
step(struct hconn *c, short rev)
{
	char buf[4096];
	ssize_t n;
	int r, err = 0;
	socklen_t el = sizeof(err);

	switch (c->st) {
	case C_CONNECTING:
		if (!(rev & (POLLOUT | POLLERR | POLLHUP)))
			return;
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err != 0) {
			hclose(c, false);
			return;
		}
		connected(c);
		return;
	case C_HANDSHAKE:
		if ((r = SSL_connect(c->ssl)) == 1) {
			c->st = c->outlen > 0 ? C_SENDING : C_HOLDING;
			return;
		}
		r = SSL_get_error(c->ssl, r);
		if (r == SSL_ERROR_WANT_READ || r == SSL_ERROR_WANT_WRITE) {
			c->want_write = r == SSL_ERROR_WANT_WRITE;
			return;
		}
		hclose(c, true);
		return;
	case C_SENDING:
		n = hwrite(c, c->out + c->outoff, c->outlen - c->outoff);
		if (n < 0) {
			if (errno != EAGAIN)
				hclose(c, true);
			return;
		}
		c->outoff += (size_t)n;
		if (c->outoff == c->outlen) {
			c->st = c->mode == M_KEEPALIVE ? C_READING : C_HOLDING;
			c->next_ms = now_ms() + 1000;
		}
		return;
	case C_READING:
	case C_HOLDING:
		if (!(rev & (POLLIN | POLLERR | POLLHUP)))
			return;
		n = hread(c, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno != EAGAIN))
			hclose(c, true);
		else if (n > 0 && c->st == C_READING)
			c->st = C_HOLDING;	/* the answer came: stay idle */
		return;
	case C_CLOSED:
	default:
		return;
	}
}

/* Once a second, a slow connection sends its next byte. */
static void
trickle(struct hconn *c, uint64_t now)
{
	static const char hdr[] = "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	char b;
	ssize_t n;

	if (c->st != C_HOLDING || now < c->next_ms)
		return;
	c->next_ms = now + 1000;
	if (c->mode == M_SLOWHEADERS)
		b = hdr[(now / 1000) % (sizeof(hdr) - 1)];
	else if (c->mode == M_SLOWBODY)
		b = ' ';
	else
		return;
	n = hwrite(c, &b, 1);
	if (n < 0 && errno != EAGAIN)
		hclose(c, true);
}

static void *
prober(void *arg)
{
	struct kc_rest_config rc = { .insecure_skip_tls_verify = true };
	char server[512], *path;
	uint64_t t0;
	int r;

	(void)arg;
	(void)kc_strlcpy(server, probe_url, sizeof(server));
	if ((path = strstr(server + 8, "/")) == NULL)
		return NULL;
	rc.server = kc_strndup(server, (size_t)(path - server));
	path = kc_strdup(path);
	while (!atomic_load(&stop)) {
		struct kc_http_resp resp = { 0 };
		struct kc_status st = { 0 };
		void *t = NULL;
		uint64_t ns;
		double ms;

		t0 = bench_now_ns();
		r = kc_transport_curl.open(&(struct kc_transport_opts){
			.rc = &rc,
			.http1 = true,
			.timeout_ms = 5000,
			.connect_timeout_ms = 5000,
		}, &t, &st);
		if (r == 0)
			r = kc_transport_curl.request(t, &(struct kc_http_req){
				.method = "GET",
				.path = path,
				.accept = "*/*",
			}, &resp, &st);
		ns = bench_now_ns() - t0;
		ms = (double)ns / 1e6;
		if (r < 0 || resp.status != 200) {
			probes_failed++;
			fprintf(stderr, "hostile: probe failed after %.0f ms: %s (HTTP %d)\n", ms,
			    r < 0 ? st.message : "answered", resp.status);
		} else if (ms > probe_max_ms) {
			probes_slow++;
		}
		if (nlat == caplat) {
			uint64_t *nl = kc_reallocarray(lat, caplat != 0 ? caplat * 2 : 256,
			    sizeof(*lat));

			if (nl != NULL) {
				lat = nl;
				caplat = caplat != 0 ? caplat * 2 : 256;
			}
		}
		if (nlat < caplat)
			lat[nlat++] = ns;
		kc_http_resp_free(&resp);
		kc_transport_curl.close(t);
		for (unsigned i = 0; i < probe_ms / 10 && !atomic_load(&stop); i++)
			(void)kc_clock_sleep_ms(10);
	}
	kc_free(path);
	kc_free(rc.server);
	return NULL;
}

static int
resolve(const char *target)
{
	char host[256], *colon;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;

	(void)kc_strlcpy(host, target, sizeof(host));
	if ((colon = strrchr(host, ':')) == NULL)
		return -1;
	*colon = '\0';
	(void)kc_strlcpy(H.host, host, sizeof(H.host));
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
		return -1;
	memcpy(&H.addr, ai->ai_addr, ai->ai_addrlen);
	H.addrlen = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: ty-hostile --target HOST:PORT [--tls] [--conns N] "
	    "[--mode slowheaders|idle|slowbody|garbage|keepalive|mixed]\n"
	    "                  [--seconds S] [--probe URL] [--probe-ms MS] "
	    "[--probe-max-ms MS]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "target", required_argument, NULL, 't' },
		{ "tls", no_argument, NULL, 'T' },
		{ "conns", required_argument, NULL, 'n' },
		{ "mode", required_argument, NULL, 'm' },
		{ "seconds", required_argument, NULL, 's' },
		{ "probe", required_argument, NULL, 'p' },
		{ "probe-ms", required_argument, NULL, 'i' },
		{ "probe-max-ms", required_argument, NULL, 'x' },
		{ NULL, 0, NULL, 0 },
	};
	uint32_t nconns = 100, seconds = 10;
	enum mode mode = M_MIXED;
	struct hconn *cs;
	struct pollfd *pfd;
	struct rlimit rl;
	pthread_t th;
	uint64_t start, end, held = 0;
	int ch;

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (ch) {
		case 't':
			if (resolve(optarg) < 0)
				usage();
			break;
		case 'T':
			H.tls = true;
			break;
		case 'n':
			if (kc_parse_u32(optarg, &nconns) < 0 || nconns == 0 ||
			    nconns > CONNS_MAX)
				usage();
			break;
		case 'm':
			mode = M_COUNT;
			for (int i = 0; i < M_COUNT; i++)
				if (strcmp(optarg, mode_names[i]) == 0)
					mode = (enum mode)i;
			if (strcmp(optarg, "mixed") == 0)
				mode = M_MIXED;
			if (mode == M_COUNT)
				usage();
			break;
		case 's':
			if (kc_parse_u32(optarg, &seconds) < 0 || seconds == 0)
				usage();
			break;
		case 'p':
			if (strncmp(optarg, "http", 4) != 0)
				usage();
			(void)kc_strlcpy(probe_url, optarg, sizeof(probe_url));
			break;
		case 'i':
			if (kc_parse_u32(optarg, &probe_ms) < 0 || probe_ms < 10)
				usage();
			break;
		case 'x':
			if (kc_parse_u32(optarg, &probe_max_ms) < 0)
				usage();
			break;
		default:
			usage();
		}
	}
	if (H.addrlen == 0)
		usage();
	/* SSL_write() to a connection the server closed: an error, not a signal. */
	(void)signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < nconns + 64) {
		rl.rlim_cur = KC_MIN(rl.rlim_max, (rlim_t)nconns + 64);
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (H.tls && (H.ctx = SSL_CTX_new(TLS_client_method())) == NULL)
		return 1;
	if (H.tls)
		SSL_CTX_set_verify(H.ctx, SSL_VERIFY_NONE, NULL);
	(void)kc_transport_global_init();
	cs = kc_calloc(nconns, sizeof(*cs));
	pfd = kc_calloc(nconns, sizeof(*pfd));
	if (cs == NULL || pfd == NULL)
		return 1;
	for (uint32_t i = 0; i < nconns; i++) {
		cs[i].fd = -1;
		cs[i].mode = mode == M_MIXED ? (enum mode)(i % M_COUNT) : mode;
	}
	if (probe_url[0] != '\0' && pthread_create(&th, NULL, prober, NULL) != 0)
		return 1;
	start = now_ms();
	end = start + (uint64_t)seconds * 1000;
	for (uint64_t now = start; now < end; now = now_ms()) {
		uint64_t open = 0;

		for (uint32_t i = 0; i < nconns; i++) {
			struct hconn *c = &cs[i];

			if (c->st == C_CLOSED && now >= c->next_ms)
				hopen(c);
			trickle(c, now);
			pfd[i].fd = c->fd;
			pfd[i].revents = 0;
			pfd[i].events = 0;
			if (c->fd < 0)
				continue;
			open++;
			if (c->st == C_CONNECTING || c->st == C_SENDING || c->want_write)
				pfd[i].events |= POLLOUT;
			if (c->st != C_CONNECTING && c->st != C_SENDING)
				pfd[i].events |= POLLIN;
		}
		if (now - start >= 1000 && open > held)
			held = open;
		if (poll(pfd, nconns, 20) < 0 && errno != EINTR)
			break;
		for (uint32_t i = 0; i < nconns; i++) {
			if (cs[i].fd < 0)
				continue;
			cs[i].want_write = false;
			if (pfd[i].revents != 0 || cs[i].st == C_HANDSHAKE ||
			    cs[i].st == C_SENDING)
				step(&cs[i], pfd[i].revents);
		}
	}
	atomic_store(&stop, true);
	if (probe_url[0] != '\0')
		(void)pthread_join(th, NULL);
	for (uint32_t i = 0; i < nconns; i++)
		if (cs[i].fd >= 0)
			hclose(&cs[i], false);
	bench_sort_u64(lat, nlat);
	printf("hostile: mode=%s conns=%u held=%llu opened=%llu closed_by_server=%llu "
	    "probes=%zu failed=%zu slow=%zu p50_ms=%.1f p99_ms=%.1f max_ms=%.1f\n",
	    mode == M_MIXED ? "mixed" : mode_names[mode], nconns, (unsigned long long)held,
	    (unsigned long long)H.opened, (unsigned long long)H.closed, nlat, probes_failed,
	    probes_slow, bench_pct_ms(lat, nlat, 0.50), bench_pct_ms(lat, nlat, 0.99),
	    bench_pct_ms(lat, nlat, 1.0));
	kc_free(lat);
	kc_free(cs);
	kc_free(pfd);
	if (H.ctx != NULL)
		SSL_CTX_free(H.ctx);
	kc_transport_global_cleanup();
	return probes_failed > 0 || probes_slow > 0 ? 1 : 0;
}

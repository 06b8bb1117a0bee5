/*
 * testserver: a loopback HTTPS server for the transport, client and watch
 * suites, in the spirit of curl's test server (tests/server/sws.c). It
 * replays scripted answers from a file under tests/fixtures/server/ and
 * records every request it received, so a test can assert both what the
 * client sent and how it handled what came back.
 *
 * It runs a libwebsockets event loop in its own thread, listens on
 * 127.0.0.1 with a port the kernel picks, and serves TLS with a CA and
 * server certificate generated at start (lib/cert.c). The script format is
 * described in tests/fixtures/server/README.
 */
#ifndef TESTSERVER_H
#define TESTSERVER_H

#include <stdbool.h>
#include <stddef.h>

struct ts_server;
struct ts_request;

/*
 * Makes the body of an exchange with a "handler" line from the request
 * (a conversion webhook that really converts): a malloc()ed body and its
 * length, or NULL for an empty one. Runs on the server's thread.
 */
typedef char	*ts_handler_fn(void *arg, const struct ts_request *req, size_t *ret_len);

struct ts_opts {
	const char	*script;	/* path of the script file */
	const char	*script_text;	/* or the script itself (wins) */
	bool		 require_client_cert;	/* verify against ts_client_ca */
	bool		 http2;		/* offer h2 over ALPN (default http/1.1) */
	const char	*dns_name;	/* one more name the certificate has */
	ts_handler_fn	*handler;	/* for "handler" exchanges */
	void		*handler_arg;
};

/* A request as the server received it. */
struct ts_request {
	char	*method;
	char	*path;		/* path and query (the query re-encoded: README) */
	char	*authorization;	/* the header, or NULL */
	char	*content_type;
	char	*accept;
	char	*user_agent;
	char	*accept_encoding;
	char	*host;		/* Host, or :authority on h2 */
	char	*impersonate_user;
	char	*impersonate_group;	/* the first one: lws 4.1 shows no more */
	char	*body;		/* NUL-terminated; "" when none */
	size_t	 body_len;
	bool	 http2;		/* came over an h2 stream */
};

/* Starts a server; 0 or a negative code. */
int	ts_start(const struct ts_opts *opts, struct ts_server **ret);

/* Stops it, closes every connection, frees everything. NULL is fine. */
struct ts_server *ts_stop(struct ts_server *);

/* "https://127.0.0.1:<port>" */
const char	*ts_url(const struct ts_server *);
int		 ts_port(const struct ts_server *);

/* PEM of the CA that signed the server certificate. */
const char	*ts_ca_pem(const struct ts_server *);

/*
 * A client certificate and key signed by the CA the server trusts when
 * require_client_cert is set, and another CA's, for the negative case.
 */
const char	*ts_client_cert_pem(const struct ts_server *);
const char	*ts_client_key_pem(const struct ts_server *);
const char	*ts_ca_pem_other(const struct ts_server *);	/* an unrelated CA */

/*
 * The requests received so far (thread-safe snapshot count); the pointer
 * stays valid until ts_stop().
 */
size_t		 ts_nrequests(struct ts_server *);
const struct ts_request *ts_request(struct ts_server *, size_t i);

/* TCP connections accepted so far (keep-alive tests). */
size_t		 ts_nconnections(struct ts_server *);

/* Waits up to 'ms' for at least 'n' requests; true when they came. */
bool		 ts_wait_requests(struct ts_server *, size_t n, unsigned ms);

#endif

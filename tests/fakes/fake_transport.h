/*
 * fake_transport: a struct kc_transport_ops for unit tests that replays
 * scripted exchanges instead of talking HTTP.
 *
 * A test creates a fake (which becomes the one the next client's open()
 * binds to), lists the exchanges it expects, in order, from a table in
 * the test or from a script under tests/fixtures/, and points a client at
 * &fake_transport_ops. Each request must match the next expectation's
 * method and path exactly, and its content type and body when the
 * expectation names them (bodies compare as JSON when both parse); an
 * unexpected request fails the test on the spot. The fake records every
 * request, so the test can assert on it, and ft_done() fails the test if
 * an expected exchange never came.
 *
 *	struct fake_transport *ft = ft_new();
 *	ft_expect(ft, &(struct ft_exchange){
 *		.method = "GET", .path = "/api/v1/namespaces/a/pods/p1",
 *		.status = 200, .resp_body = "{\"kind\":\"Pod\"}",
 *	});
 *	... kc_client_new(&(struct kc_client_opts){ .rc = &rc,
 *		.ops = &fake_transport_ops }, &cl, &st) ...
 *	ft_done(ft);
 *	ft = ft_free(ft);
 *
 * Script format (one directive per line; '#' starts a comment line;
 * files are relative to the script's directory; "text" arguments run to
 * the end of the line and understand \n, \t, \r and \\):
 *
 *	expect METHOD PATH        a new exchange; PATH includes the query
 *	ctype TYPE                the request's Content-Type must be TYPE
 *	body FILE                 the request body must equal FILE's
 *	body-text TEXT            ... or TEXT
 *	reply STATUS [FILE|echo|-]  answer STATUS with FILE, the request
 *	                          body, or nothing (the default)
 *	reply-text TEXT           the answer's body inline
 *	reply-type TYPE           its Content-Type (default application/json)
 *	retry-after MS            its parsed Retry-After
 *	unbounded                 do not cap the answer at max_response
 *	chunk FILE                for a stream: one piece, FILE's bytes
 *	chunk-text TEXT           one piece, inline
 *	chunks FILE N             FILE in pieces of N bytes
 *	block                     after the pieces, wait for ->cancel()
 *	error CODE                no answer: fail with CODE (e.g. -1007)
 */
#ifndef FAKE_TRANSPORT_H
#define FAKE_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kc/transport.h>

extern const struct kc_transport_ops fake_transport_ops;

/* Answer with the request's own body (resp_body = FT_ECHO). */
extern const char ft_echo[];
#define FT_ECHO		ft_echo

struct ft_exchange {
	/* What the client must send. */
	const char	*method;
	const char	*path;		/* path and query, exactly */
	const char	*content_type;	/* NULL: not checked */
	const char	*body;		/* NULL: not checked */

	/* What it gets. */
	int		 error;		/* non-zero: fail with this, no answer */
	int		 status;
	const char	*resp_content_type;	/* NULL: application/json */
	const char	*resp_body;	/* NULL: empty; FT_ECHO: the request's */
	size_t		 resp_body_len;	/* 0: strlen(resp_body) */
	uint32_t	 retry_after_ms;
	bool		 unbounded;	/* ignore max_response */
	const char	*const *chunks;	/* stream pieces, NULL-terminated */
	bool		 block;		/* stream: then wait for cancel */
};

/* A request as the fake received it. */
struct ft_request {
	char		*method;
	char		*path;
	char		*content_type;	/* NULL when none */
	char		*accept;
	char		*body;		/* NUL-terminated; "" when none */
	size_t		 body_len;
	bool		 idempotent;
	bool		 stream;	/* came through ->stream() */
	uint32_t	 timeout_ms;
};

struct fake_transport;

/* A new fake, which the next open() binds to. */
struct fake_transport	*ft_new(void);

/* Fails the test unless every expectation was used. */
void			 ft_done(struct fake_transport *);

/* Frees the fake (its recorded requests too). NULL is fine. */
struct fake_transport	*ft_free(struct fake_transport *);

/* Appends an expectation (copied). */
void	ft_expect(struct fake_transport *, const struct ft_exchange *);

/* Appends the expectations of the script tests/fixtures/<name>. */
void	ft_load_script(struct fake_transport *, const char *name);

/* Makes the next open() fail with 'code' (0: succeed again). */
void	ft_fail_open(struct fake_transport *, int code);

/* The options the last open() got (strings not kept) and open/close counts. */
const struct kc_transport_opts *ft_opts(const struct fake_transport *);
unsigned	ft_opens(const struct fake_transport *);
unsigned	ft_closes(const struct fake_transport *);

size_t			 ft_nrequests(const struct fake_transport *);
const struct ft_request	*ft_request(const struct fake_transport *, size_t i);
size_t			 ft_pending(const struct fake_transport *);

/* Blocks until a stream waits in "block" (for cancellation tests). */
void	ft_wait_blocked(struct fake_transport *);

/* Whether ->cancel() is in effect. */
bool	ft_cancelled(struct fake_transport *);

#endif

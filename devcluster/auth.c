/*
 * auth.c: who is asking, and may they.
 *
 * Authentication is by bearer token only, from two sources: the admin
 * token main.c generates (user "admin" in group system:masters) and
 * kube-apiserver's --token-auth-file, a CSV file of
 *
 *	token,user,uid[,"group1,group2"]
 *
 * read exactly as upstream reads it (k8s.io/apiserver
 * pkg/authentication/token/tokenfile): Go's encoding/csv rules (quoted
 * fields with "" escapes and embedded newlines, CRLF folded, empty lines
 * skipped, no comments, a bare quote in an unquoted field is an error),
 * at least three columns per record, columns past the fourth ignored, an
 * empty token skips its line, a repeated token's last line wins, and the
 * groups column split on commas without trimming.
 *
 * A known token gives its user plus system:authenticated; a token the
 * list does not hold goes to the verifier installed with
 * auth_set_verifier() (tokens.c: service-account JWTs); anything else
 * is 401. Impersonation (Impersonate-User, -Group, -Uid) replaces the
 * identity after an authorization check of the "impersonate" verb on
 * users, groups, serviceaccounts and uids, planned by rbac.c as
 * kube-apiserver's impersonation filter does. Authorization itself is a
 * hook (struct dc_hooks.authorize, the RBAC file's); system:masters
 * always passes and, until a hook is installed, so does everyone.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/json.h>
#include <kc/str.h>

#include "devcluster.h"
#include "rbac.h"

struct token {
	char		*token;
	struct dc_user	 user;
};

struct dc_auth {
	struct token	*t;
	size_t		 n;
	auth_verify_fn	*verify;	/* tokens.c's JWTs, or NULL */
	void		*verify_arg;
};

/*
 * Users
 */

void
user_clear(struct dc_user *u)
{
	kc_free(u->name);
	kc_free(u->uid);
	for (size_t i = 0; i < u->ngroups; i++)
		kc_free(u->groups[i]);
	for (size_t i = 0; i < u->nextra; i++) {
		kc_free(u->extra[i][0]);
		kc_free(u->extra[i][1]);
	}
	for (size_t i = 0; i < u->naudiences; i++)
		kc_free(u->audiences[i]);
	memset(u, 0, sizeof(*u));
}

int
user_add_extra(struct dc_user *u, const char *key, const char *value)
{
	char *k, *v;

	if (u->nextra == DC_USER_EXTRA_MAX)
		return -E2BIG;
	if ((k = kc_strdup(key)) == NULL || (v = kc_strdup(value)) == NULL) {
		kc_free(k);
		return -ENOMEM;
	}
	u->extra[u->nextra][0] = k;
	u->extra[u->nextra][1] = v;
	u->nextra++;
	return 0;
}

int
user_add_audience(struct dc_user *u, const char *audience)
{
	if (u->naudiences == DC_AUDIENCES_MAX)
		return -E2BIG;
	if ((u->audiences[u->naudiences] = kc_strdup(audience)) == NULL)
		return -ENOMEM;
	u->naudiences++;
	u->audiences[u->naudiences] = NULL;
	return 0;
}

int
user_add_group(struct dc_user *u, const char *group)
{
	if (u->ngroups == DC_GROUPS_MAX)
		return -E2BIG;
	if ((u->groups[u->ngroups] = kc_strdup(group)) == NULL)
		return -ENOMEM;
	u->ngroups++;
	u->groups[u->ngroups] = NULL;
	return 0;
}

int
user_set(struct dc_user *u, const char *name, const char *uid,
    const char *const *groups)
{
	struct dc_user n;
	int r;

	memset(&n, 0, sizeof(n));
	if ((n.name = kc_strdup(name)) == NULL ||
	    (n.uid = kc_strdup(uid != NULL ? uid : "")) == NULL) {
		user_clear(&n);
		return -ENOMEM;
	}
	for (size_t i = 0; groups != NULL && groups[i] != NULL; i++)
		if ((r = user_add_group(&n, groups[i])) < 0) {
			user_clear(&n);
			return r;
		}
	user_clear(u);
	*u = n;
	return 0;
}

int
user_info_json(const struct dc_user *u, struct json_object **ret)
{
	struct json_object *ui = json_object_new_object(), *g, *ex = NULL, *one;

	if (ui == NULL)
		return -ENOMEM;
	if (kc_json_set_str(ui, "username", u->name != NULL ? u->name : "") < 0 ||
	    (u->uid != NULL && u->uid[0] != '\0' &&
	    kc_json_set_str(ui, "uid", u->uid) < 0) ||
	    (g = json_object_new_array()) == NULL || kc_json_put(ui, "groups", g) < 0)
		goto fail;
	for (size_t i = 0; i < u->ngroups; i++)
		if (kc_json_append(g, json_object_new_string(u->groups[i])) < 0)
			goto fail;
	if (u->nextra > 0 && ((ex = json_object_new_object()) == NULL ||
	    kc_json_put(ui, "extra", ex) < 0))
		goto fail;
	for (size_t i = 0; i < u->nextra; i++)
		if ((one = json_object_new_array()) == NULL ||
		    kc_json_put(ex, u->extra[i][0], one) < 0 ||
		    kc_json_append(one, json_object_new_string(u->extra[i][1])) < 0)
			goto fail;
	*ret = ui;
	return 0;
fail:
	json_object_put(ui);
	return -ENOMEM;
}

bool
user_in_group(const struct dc_user *u, const char *group)
{
	for (size_t i = 0; i < u->ngroups; i++)
		if (strcmp(u->groups[i], group) == 0)
			return true;
	return false;
}

/*
 * Tokens
 */

int
auth_new(struct dc_auth **ret)
{
	struct dc_auth *a;

	if ((a = kc_calloc(1, sizeof(*a))) == NULL)
		return -ENOMEM;
	*ret = a;
	return 0;
}

struct dc_auth *
auth_free(struct dc_auth *a)
{
	if (a == NULL)
		return NULL;
	for (size_t i = 0; i < a->n; i++) {
		kc_free_secret(a->t[i].token);
		user_clear(&a->t[i].user);
	}
	kc_free(a->t);
	kc_free(a);
	return NULL;
}

size_t
auth_count(const struct dc_auth *a)
{
	return a->n;
}

void
auth_set_verifier(struct dc_auth *a, auth_verify_fn *fn, void *arg)
{
	a->verify = fn;
	a->verify_arg = fn != NULL ? arg : NULL;
}

int
auth_add(struct dc_auth *a, const char *token, const char *name, const char *uid,
    const char *const *groups)
{
	struct dc_user u;
	struct token *t;
	char *tok;
	int r;

	memset(&u, 0, sizeof(u));
	if ((r = user_set(&u, name, uid, groups)) < 0)
		return r;
	for (size_t i = 0; i < a->n; i++) {
		if (strcmp(a->t[i].token, token) == 0) {
			user_clear(&a->t[i].user);
			a->t[i].user = u;
			return 0;
		}
	}
	if ((tok = kc_strdup(token)) == NULL ||
	    (t = kc_reallocarray(a->t, a->n + 1, sizeof(*t))) == NULL) {
		kc_free_secret(tok);
		user_clear(&u);
		return -ENOMEM;
	}
	a->t = t;
	a->t[a->n].token = tok;
	a->t[a->n].user = u;
	a->n++;
	return 0;
}

/* One CSV record: fields as allocated strings. */
struct record {
	char	*f[8];		/* the first columns; the rest are dropped */
	size_t	 n;		/* fields seen, dropped ones included */
};

static void
record_clear(struct record *rec)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(rec->f); i++)
		kc_free_secret(rec->f[i]);
	memset(rec, 0, sizeof(*rec));
}

static int
record_add(struct record *rec, struct kc_buf *field)
{
	if (rec->n < KC_ARRAY_SIZE(rec->f)) {
		if ((rec->f[rec->n] = kc_strdup(kc_buf_str(field))) == NULL)
			return -ENOMEM;
	}
	rec->n++;
	kc_buf_reset(field);
	return 0;
}

/*
 * Reads the next record from text[*pos..len), Go encoding/csv style.
 * Returns 1 with a record, 0 at the end, or KC_ECONFIG with 'st'.
 */
static int
csv_next(const char *text, size_t len, size_t *pos, unsigned *line, struct record *rec,
    const char *path, struct kc_status *st)
{
	struct kc_buf field;
	size_t p = *pos;
	unsigned start_line;
	int r;

	kc_buf_init(&field, DC_TOKEN_FILE_MAX);
	/* Empty lines (after CR folding) are skipped. */
	while (p < len && (text[p] == '\n' || (text[p] == '\r' && p + 1 < len &&
	    text[p + 1] == '\n'))) {
		p += text[p] == '\r' ? 2 : 1;
		(*line)++;
	}
	if (p >= len) {
		*pos = p;
		return 0;
	}
	start_line = *line;
	for (;;) {
		if (p < len && text[p] == '"') {
			size_t col = p;

			p++;
			for (;;) {
				if (p >= len) {
					r = kc_status_set(st, KC_ECONFIG, "%s: record on line %u: "
					    "parse error on line %u, column %zu: extraneous or "
					    "missing \" in quoted-field", path, start_line, *line,
					    col + 1);
					goto fail;
				}
				if (text[p] == '"') {
					if (p + 1 < len && text[p + 1] == '"') {
						if ((r = kc_buf_putc(&field, '"')) < 0)
							goto fail;
						p += 2;
						continue;
					}
					p++;
					break;
				}
				if (text[p] == '\r' && p + 1 < len && text[p + 1] == '\n') {
					p++;
					continue;
				}
				if (text[p] == '\n')
					(*line)++;
				if (text[p] == '\0') {
					r = kc_status_set(st, KC_ECONFIG, "%s: line %u: NUL byte",
					    path, *line);
					goto fail;
				}
				if ((r = kc_buf_putc(&field, text[p])) < 0)
					goto fail;
				p++;
			}
			if (p < len && text[p] != ',' && text[p] != '\n' &&
			    !(text[p] == '\r' && p + 1 < len && text[p + 1] == '\n') &&
			    !(text[p] == '\r' && p + 1 == len)) {
				r = kc_status_set(st, KC_ECONFIG, "%s: parse error on line %u: "
				    "extraneous or missing \" in quoted-field", path, *line);
				goto fail;
			}
		} else {
			while (p < len && text[p] != ',' && text[p] != '\n') {
				if (text[p] == '"') {
					r = kc_status_set(st, KC_ECONFIG, "%s: parse error on line "
					    "%u: bare \" in non-quoted-field", path, *line);
					goto fail;
				}
				if (text[p] == '\r' && (p + 1 == len || text[p + 1] == '\n')) {
					p++;
					continue;
				}
				if (text[p] == '\0') {
					r = kc_status_set(st, KC_ECONFIG, "%s: line %u: NUL byte",
					    path, *line);
					goto fail;
				}
				if ((r = kc_buf_putc(&field, text[p])) < 0)
					goto fail;
				p++;
			}
		}
		if ((r = record_add(rec, &field)) < 0)
			goto fail;
		if (p < len && text[p] == '\r')
			p++;
		if (p >= len)
			break;
		if (text[p] == '\n') {
			p++;
			(*line)++;
			break;
		}
		p++;	/* the comma */
		if (p >= len) {
			/* "a,b," at the very end: a last empty field. */
			if ((r = record_add(rec, &field)) < 0)
				goto fail;
			break;
		}
	}
	kc_buf_free(&field);
	*pos = p;
	return 1;
fail:
	kc_buf_free(&field);
	record_clear(rec);
	return r;
}

int
auth_load_csv(struct dc_auth *a, const char *text, size_t len, const char *path,
    struct kc_status *st)
{
	unsigned line = 1;
	size_t pos = 0;
	int r;

	if (len > DC_TOKEN_FILE_MAX)
		return kc_status_set(st, KC_ECONFIG, "%s: token file too large", path);
	for (;;) {
		struct record rec = { 0 };
		const char *groups[DC_GROUPS_MAX + 1];
		char *gcopy = NULL;
		size_t ng = 0;

		if ((r = csv_next(text, len, &pos, &line, &rec, path, st)) <= 0)
			return r;
		if (rec.n < 3) {
			r = kc_status_set(st, KC_ECONFIG, "token file '%s' must have at least "
			    "3 columns (token, user name, user uid), found %zu", path, rec.n);
			record_clear(&rec);
			return r;
		}
		if (rec.f[0][0] == '\0') {
			record_clear(&rec);
			continue;
		}
		if (rec.n >= 4) {
			char *p;

			if ((gcopy = kc_strdup(rec.f[3])) == NULL) {
				record_clear(&rec);
				return -ENOMEM;
			}
			for (p = gcopy;; ) {
				char *comma = strchr(p, ',');

				if (ng == DC_GROUPS_MAX) {
					kc_free(gcopy);
					record_clear(&rec);
					return kc_status_set(st, KC_ECONFIG, "%s: line %u: more "
					    "than %d groups", path, line - 1, DC_GROUPS_MAX);
				}
				groups[ng++] = p;
				if (comma == NULL)
					break;
				*comma = '\0';
				p = comma + 1;
			}
		}
		groups[ng] = NULL;
		r = auth_add(a, rec.f[0], rec.f[1], rec.f[2], groups);
		kc_free(gcopy);
		record_clear(&rec);
		if (r < 0)
			return r;
	}
}

int
auth_load_file(struct dc_auth *a, const char *path, struct kc_status *st)
{
	char *text = NULL;
	size_t len;
	int r;

	if ((r = kc_read_file(path, DC_TOKEN_FILE_MAX, &text, &len)) < 0)
		return kc_status_set(st, r == -E2BIG ? KC_ECONFIG : r,
		    "reading token file %s: %s", path, kc_strerror(r));
	r = auth_load_csv(a, text, len, path, st);
	kc_free_secret(text);
	return r;
}

/* Compares without stopping at the first difference. */
static bool
token_eq(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

int
auth_authenticate(const struct dc_auth *a, const char *authorization,
    struct dc_user *user)
{
	return auth_authenticate_for(a, authorization, NULL, user, NULL, 0);
}

int
auth_authenticate_for(const struct dc_auth *a, const char *authorization,
    const char *const *audiences, struct dc_user *user, char *err, size_t errsize)
{
	char buf[8192], *p, *tok, *sp;
	const struct token *found = NULL;
	size_t n;
	int r;

	if (err != NULL && errsize > 0)
		err[0] = '\0';
	if (authorization == NULL)
		return KC_EUNAUTHORIZED;
	while (*authorization == ' ' || *authorization == '\t')
		authorization++;
	if ((n = kc_strlcpy(buf, authorization, sizeof(buf))) >= sizeof(buf))
		return KC_EUNAUTHORIZED;
	while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\t' || buf[n - 1] == '\r' ||
	    buf[n - 1] == '\n'))
		buf[--n] = '\0';
	if ((sp = strchr(buf, ' ')) == NULL)
		return KC_EUNAUTHORIZED;
	*sp = '\0';
	if (strcasecmp(buf, "bearer") != 0)
		return KC_EUNAUTHORIZED;
	tok = sp + 1;
	if ((p = strchr(tok, ' ')) != NULL)
		*p = '\0';
	if (tok[0] == '\0')
		return KC_EUNAUTHORIZED;
	for (size_t i = 0; i < a->n; i++)
		if (token_eq(a->t[i].token, tok))
			found = &a->t[i];
	if (found == NULL && a->verify != NULL) {
		r = a->verify(a->verify_arg, tok, audiences, user, err, errsize);
		explicit_bzero(buf, sizeof(buf));
		return r == DC_DECLINED ? KC_EUNAUTHORIZED : r;
	}
	explicit_bzero(buf, sizeof(buf));
	if (found == NULL)
		return KC_EUNAUTHORIZED;
	if ((r = user_set(user, found->user.name, found->user.uid,
	    (const char *const *)found->user.groups)) < 0)
		return r;
	if (!user_in_group(user, "system:authenticated") &&
	    (r = user_add_group(user, "system:authenticated")) < 0)
		return r;
	return 0;
}

/*
 * Authorization and impersonation
 */

bool
auth_authorize(struct dc *dc, const struct dc_attrs *attrs, char *reason, size_t size)
{
	if (size > 0)
		reason[0] = '\0';
	if (attrs->user != NULL && user_in_group(attrs->user, "system:masters"))
		return true;
	if (dc->hooks.authorize == NULL)
		return true;
	return dc->hooks.authorize(dc, attrs, reason, size);
}

_Static_assert(DC_IMP_GROUPS_MAX <= RBAC_IMP_GROUPS_MAX,
    "a request carries more groups than an impersonation plan takes");

int
auth_impersonate(struct dc *dc, struct dc_req *req, struct kc_status *st)
{
	_cleanup_(rbac_imp_plan_freep) struct rbac_imp_plan *p = NULL;
	struct rbac_impersonation imp = {
		.user = req->imp_user, .uid = req->imp_uid,
		.groups = (const char *const *)req->imp_groups, .ngroups = req->imp_ngroups,
	};
	struct dc_user nu;
	int r;

	if ((r = rbac_impersonation_plan(&imp, &p, st)) == KC_EINTERNAL) {
		char msg[KC_STATUS_MESSAGE_MAX];

		(void)kc_strlcpy(msg, st->message, sizeof(msg));
		return kc_status_set(st, r, "Internal error occurred: %s", msg);
	}
	if (r < 0 || p == NULL)
		return r;
	for (size_t i = 0; i < p->nchecks; i++) {
		const struct rbac_attrs *c = &p->checks[i];
		struct dc_attrs at = {
			.user = &req->user, .verb = c->verb, .resource_request = true,
			.group = c->group, .version = c->version, .resource = c->resource,
			.subresource = c->subresource, .ns = c->ns, .name = c->name, .path = "",
		};
		char reason[RBAC_REASON_MAX], msg[KC_STATUS_MESSAGE_MAX];

		if (auth_authorize(dc, &at, reason, sizeof(reason)))
			continue;
		(void)rbac_forbidden_message(req->user.name, c, reason, msg, sizeof(msg));
		return kc_status_set(st, KC_EFORBIDDEN, "%s", msg);
	}
	memset(&nu, 0, sizeof(nu));
	if ((r = user_set(&nu, p->user.name, p->user.uid, NULL)) < 0)
		return r;
	for (size_t i = 0; i < p->user.ngroups; i++)
		if ((r = user_add_group(&nu, p->user.groups[i])) < 0) {
			user_clear(&nu);
			return r;
		}
	user_clear(&req->user);
	req->user = nu;
	return 0;
}

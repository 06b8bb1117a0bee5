/*
 * test_dc_auth.c: the --token-auth-file CSV reader, bearer tokens and
 * impersonation (devcluster/auth.c).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <check.h>

#include <kc/alloc.h>
#include <kc/str.h>

#include "../../devcluster/devcluster.h"
#include "testutil.h"

static struct dc_auth *
load(const char *text, int want, struct kc_status *st)
{
	struct dc_auth *a = NULL;

	ck_assert_int_eq(auth_new(&a), 0);
	ck_assert_int_eq(auth_load_csv(a, text, strlen(text), "tokens.csv", st), want);
	return a;
}

/* Authenticates "Bearer <token>" and checks the identity. */
static void
expect_user(struct dc_auth *a, const char *token, const char *name, const char *uid,
    const char *const *groups)
{
	struct dc_user u = { 0 };
	char hdr[256];
	size_t i;

	(void)snprintf(hdr, sizeof(hdr), "Bearer %s", token);
	ck_assert_msg(auth_authenticate(a, hdr, &u) == 0, "token %s", token);
	ck_assert_str_eq(u.name, name);
	ck_assert_str_eq(u.uid, uid);
	for (i = 0; groups[i] != NULL; i++) {
		ck_assert_uint_lt(i, u.ngroups);
		ck_assert_str_eq(u.groups[i], groups[i]);
	}
	/* Then system:authenticated. */
	ck_assert_uint_eq(u.ngroups, i + 1);
	ck_assert_str_eq(u.groups[i], "system:authenticated");
	user_clear(&u);
}

static void
expect_no_user(struct dc_auth *a, const char *header)
{
	struct dc_user u = { 0 };

	ck_assert_int_eq(auth_authenticate(a, header, &u), KC_EUNAUTHORIZED);
	ck_assert_ptr_null(u.name);
}

START_TEST(csv_basic)
{
	struct kc_status st = { 0 };
	struct dc_auth *a = load(
	    "tok1,alice,uid-1\n"
	    "tok2,bob,uid-2,\"dev,ops\"\n"
	    "tok3,carol,uid-3,single,extra,columns\n"
	    "\n"
	    ",empty-token,uid-x\n"
	    "tok4,\"dave, jr\",\"uid \"\"4\"\"\"\r\n"
	    "tok5,erin,uid-5,\"a, b,\"\n"
	    "tok6,frank,uid-6,\n", 0, &st);

	ck_assert_uint_eq(auth_count(a), 6);
	expect_user(a, "tok1", "alice", "uid-1", (const char *const []){ NULL });
	expect_user(a, "tok2", "bob", "uid-2", (const char *const []){ "dev", "ops", NULL });
	expect_user(a, "tok3", "carol", "uid-3", (const char *const []){ "single", NULL });
	expect_user(a, "tok4", "dave, jr", "uid \"4\"", (const char *const []){ NULL });
	/* Groups split on commas without trimming, empty ones kept. */
	expect_user(a, "tok5", "erin", "uid-5", (const char *const []){ "a", " b", "",
	    NULL });
	expect_user(a, "tok6", "frank", "uid-6", (const char *const []){ "", NULL });
	expect_no_user(a, "Bearer ");
	auth_free(a);
}
END_TEST

START_TEST(csv_last_wins_and_quotes)
{
	struct kc_status st = { 0 };
	struct dc_auth *a = load(
	    "t,first,1\n"
	    "t,second,2,\"g\"\n"
	    "\"multi\nline\",m,3\n"
	    "x,y,z", 0, &st);

	ck_assert_uint_eq(auth_count(a), 3);
	expect_user(a, "t", "second", "2", (const char *const []){ "g", NULL });
	expect_user(a, "x", "y", "z", (const char *const []){ NULL });
	auth_free(a);
}
END_TEST

START_TEST(csv_errors)
{
	static const struct { const char *text; const char *msg; } bad[] = {
		{ "tok,user\n", "token file 'tokens.csv' must have at least 3 columns "
		  "(token, user name, user uid), found 2" },
		{ "ok,u,1\nlonely\n", "token file 'tokens.csv' must have at least 3 columns "
		  "(token, user name, user uid), found 1" },
		{ "t,u\"x,1\n", "bare \" in non-quoted-field" },
		{ "t,\"u\"x,1\n", "extraneous or missing \" in quoted-field" },
		{ "t,\"unterminated,1\n", "extraneous or missing \" in quoted-field" },
		{ " ,u,1\n \"t\",u,1\n", "bare \" in non-quoted-field" },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
		struct kc_status st = { 0 };
		struct dc_auth *a = load(bad[i].text, KC_ECONFIG, &st);

		ck_assert_msg(strstr(st.message, bad[i].msg) != NULL, "%zu: %s", i, st.message);
		auth_free(a);
	}
}
END_TEST

START_TEST(csv_file)
{
	struct kc_status st = { 0 };
	struct dc_auth *a = NULL;
	char *dir = tu_tmpdir();
	char *path = tu_write(dir, "tokens.csv", "abc,alice,1,\"team-a\"\n");

	ck_assert_int_eq(auth_new(&a), 0);
	ck_assert_int_eq(auth_load_file(a, path, &st), 0);
	expect_user(a, "abc", "alice", "1", (const char *const []){ "team-a", NULL });
	ck_assert_int_eq(auth_load_file(a, "/nonexistent/tokens.csv", &st), -ENOENT);
	ck_assert(strstr(st.message, "/nonexistent/tokens.csv") != NULL);
	auth_free(a);
	kc_free(path);
	tu_tmpdir_remove(dir);
}
END_TEST

START_TEST(bearer)
{
	struct dc_auth *a = NULL;

	ck_assert_int_eq(auth_new(&a), 0);
	ck_assert_int_eq(auth_add(a, "s3cret", "admin", "admin",
	    (const char *const []){ "system:masters", NULL }), 0);
	expect_user(a, "s3cret", "admin", "admin",
	    (const char *const []){ "system:masters", NULL });
	{
		struct dc_user u = { 0 };

		/* The scheme is case-insensitive; surrounding space is trimmed. */
		ck_assert_int_eq(auth_authenticate(a, "  bEaReR s3cret  ", &u), 0);
		ck_assert(user_in_group(&u, "system:masters"));
		ck_assert(user_in_group(&u, "system:authenticated"));
		ck_assert(!user_in_group(&u, "system:anonymous"));
		user_clear(&u);
	}
	expect_no_user(a, NULL);
	expect_no_user(a, "");
	expect_no_user(a, "Bearer");
	expect_no_user(a, "Bearer wrong");
	expect_no_user(a, "Bearer s3cre");
	expect_no_user(a, "Bearer s3cretX");
	expect_no_user(a, "Basic s3cret");
	expect_no_user(a, "s3cret");
	/* A token with an address-book full of junk after it still counts. */
	{
		struct dc_user u = { 0 };

		ck_assert_int_eq(auth_authenticate(a, "Bearer s3cret trailing", &u), 0);
		user_clear(&u);
	}
	/* Re-adding a token replaces its user. */
	ck_assert_int_eq(auth_add(a, "s3cret", "other", "o", NULL), 0);
	ck_assert_uint_eq(auth_count(a), 1);
	expect_user(a, "s3cret", "other", "o", (const char *const []){ NULL });
	auth_free(a);
}
END_TEST

static bool
deny_impersonation(struct dc *dc, const struct dc_attrs *at, char *reason, size_t size)
{
	(void)dc;
	(void)reason;
	(void)size;
	return strcmp(at->verb, "impersonate") != 0 || strcmp(at->resource, "groups") == 0;
}

/* Allows impersonating the user bob and the group dev, nothing else. */
static bool
allow_some(struct dc *dc, const struct dc_attrs *at, char *reason, size_t size)
{
	(void)dc;
	if (strcmp(at->verb, "impersonate") != 0 ||
	    (strcmp(at->resource, "users") == 0 && strcmp(at->name, "bob") == 0) ||
	    (strcmp(at->resource, "groups") == 0 && strcmp(at->name, "dev") == 0))
		return true;
	(void)snprintf(reason, size, "RBAC: no ops");
	return false;
}

START_TEST(impersonation)
{
	struct dc *dc = NULL;
	struct dc_req req = { 0 };
	struct kc_status st = { 0 };

	ck_assert_int_eq(api_new(&(struct dc_opts){ .no_bootstrap = true }, &dc), 0);
	ck_assert_int_eq(user_set(&req.user, "admin", "a",
	    (const char *const []){ "system:masters", "system:authenticated", NULL }), 0);

	/* Nothing asked: nothing changes. */
	ck_assert_int_eq(auth_impersonate(dc, &req, &st), 0);
	ck_assert_str_eq(req.user.name, "admin");

	/* A group without a user is refused, with upstream's text. */
	req.imp_groups[0] = kc_strdup("dev");
	req.imp_groups[1] = kc_strdup("ops");
	req.imp_ngroups = 2;
	ck_assert_int_eq(auth_impersonate(dc, &req, &st), KC_EINTERNAL);
	ck_assert_str_eq(st.message, "Internal error occurred: requested [{Group  dev    } "
	    "{Group  ops    }] without "
	    "impersonating a user");

	/* system:masters may impersonate anyone; every group counts. */
	req.imp_user = kc_strdup("bob");
	ck_assert_int_eq(auth_impersonate(dc, &req, &st), 0);
	ck_assert_str_eq(req.user.name, "bob");
	ck_assert_uint_eq(req.user.ngroups, 3);
	ck_assert_str_eq(req.user.groups[0], "dev");
	ck_assert_str_eq(req.user.groups[1], "ops");
	ck_assert_str_eq(req.user.groups[2], "system:authenticated");

	/* Only the groups asked for, then the uid, each checked in turn. */
	dc->hooks.authorize = allow_some;
	ck_assert_int_eq(user_set(&req.user, "alice", "1",
	    (const char *const []){ "system:authenticated", NULL }), 0);
	ck_assert_int_eq(auth_impersonate(dc, &req, &st), KC_EFORBIDDEN);
	ck_assert_str_eq(st.message, "groups \"ops\" is forbidden: User \"alice\" cannot "
	    "impersonate resource \"groups\" in API group \"\" at the cluster scope: "
	    "RBAC: no ops");
	ck_assert_str_eq(req.user.name, "alice");
	kc_free(req.imp_groups[1]);
	req.imp_ngroups = 1;
	req.imp_uid = kc_strdup("u-1");
	ck_assert_int_eq(auth_impersonate(dc, &req, &st), KC_EFORBIDDEN);
	ck_assert_str_eq(st.message, "uids.authentication.k8s.io \"u-1\" is forbidden: User "
	    "\"alice\" cannot impersonate resource \"uids\" in API group "
	    "\"authentication.k8s.io\" at the cluster scope: RBAC: no ops");
	kc_free(req.imp_uid);
	req.imp_uid = NULL;
	ck_assert_int_eq(auth_impersonate(dc, &req, &st), 0);
	ck_assert_str_eq(req.user.name, "bob");
	ck_assert_str_eq(req.user.uid, "");
	ck_assert_uint_eq(req.user.ngroups, 2);
	dc->hooks.authorize = NULL;

	/* A service account gets its groups. */
	kc_free(req.imp_groups[0]);
	req.imp_ngroups = 0;
	kc_free(req.imp_user);
	req.imp_user = kc_strdup("system:serviceaccount:team-a:builder");
	ck_assert_int_eq(user_set(&req.user, "admin", "a",
	    (const char *const []){ "system:masters", NULL }), 0);
	ck_assert_int_eq(auth_impersonate(dc, &req, &st), 0);
	ck_assert(user_in_group(&req.user, "system:serviceaccounts"));
	ck_assert(user_in_group(&req.user, "system:serviceaccounts:team-a"));
	ck_assert(user_in_group(&req.user, "system:authenticated"));

	/* Others go through the authorizer. */
	dc->hooks.authorize = deny_impersonation;
	ck_assert_int_eq(user_set(&req.user, "alice", "1",
	    (const char *const []){ "system:authenticated", NULL }), 0);
	kc_free(req.imp_user);
	req.imp_user = kc_strdup("bob");
	ck_assert_int_eq(auth_impersonate(dc, &req, &st), KC_EFORBIDDEN);
	ck_assert_str_eq(st.message, "users \"bob\" is forbidden: User \"alice\" cannot "
	    "impersonate resource \"users\" in API group \"\" at the cluster scope");
	ck_assert_str_eq(req.user.name, "alice");
	kc_free(req.imp_user);
	req.imp_user = kc_strdup("system:serviceaccount:ns1:sa1");
	ck_assert_int_eq(auth_impersonate(dc, &req, &st), KC_EFORBIDDEN);
	ck_assert_str_eq(st.message, "serviceaccounts \"sa1\" is forbidden: User \"alice\" "
	    "cannot impersonate resource \"serviceaccounts\" in API group \"\" in the "
	    "namespace \"ns1\"");
	req_clear(&req);
	api_free(dc);
}
END_TEST

START_TEST(users)
{
	struct dc_user u = { 0 };
	char g[16];

	ck_assert_int_eq(user_set(&u, "n", NULL, NULL), 0);
	ck_assert_str_eq(u.uid, "");
	for (int i = 0; i < DC_GROUPS_MAX; i++) {
		(void)snprintf(g, sizeof(g), "g%d", i);
		ck_assert_int_eq(user_add_group(&u, g), 0);
	}
	ck_assert_int_eq(user_add_group(&u, "one-too-many"), -E2BIG);
	ck_assert_ptr_null(u.groups[DC_GROUPS_MAX]);
	user_clear(&u);
	ck_assert_ptr_null(u.name);
}
END_TEST

START_TEST(alloc_failures)
{
	const char *text = "t1,u1,1,\"a,b\"\nt2,u2,2\n";

	for (size_t budget = 0;; budget++) {
		struct dc_auth *a = NULL;
		struct kc_status st = { 0 };
		int r;

		fail_alloc_after(budget);
		r = auth_new(&a);
		if (r == 0)
			r = auth_load_csv(a, text, strlen(text), "f", &st);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert_uint_eq(auth_count(a), 2);
			auth_free(a);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		auth_free(a);
	}
}
END_TEST

Suite *
dc_auth_suite(void)
{
	Suite *s = suite_create("dc_auth");
	TCase *tc = tcase_create("auth");

	tcase_add_test(tc, csv_basic);
	tcase_add_test(tc, csv_last_wins_and_quotes);
	tcase_add_test(tc, csv_errors);
	tcase_add_test(tc, csv_file);
	tcase_add_test(tc, bearer);
	tcase_add_test(tc, impersonation);
	tcase_add_test(tc, users);
	tcase_add_test(tc, alloc_failures);
	suite_add_tcase(s, tc);
	return s;
}

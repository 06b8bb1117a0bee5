/*
 * test_err.c: the error table, HTTP mapping and struct kc_status.
 */
#include <errno.h>
#include <string.h>

#include <check.h>

#include <kc/err.h>

#include "testutil.h"

START_TEST(codes_are_below_errno_range)
{
	static const int codes[] = {
#define X(n, val, http, reason, text)	KC_E##n,
		KC_ERR_MAP(X)
#undef X
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(codes); i++) {
		ck_assert_int_le(codes[i], -1000);
		for (size_t j = i + 1; j < KC_ARRAY_SIZE(codes); j++)
			ck_assert_int_ne(codes[i], codes[j]);
	}
}
END_TEST

START_TEST(names_and_text)
{
	ck_assert_str_eq(kc_err_name(KC_ECONFLICT), "KC_ECONFLICT");
	ck_assert_str_eq(kc_err_name(KC_ENOTFOUND), "KC_ENOTFOUND");
	ck_assert_str_eq(kc_err_name(-ENOMEM), "ENOMEM");
	ck_assert_str_eq(kc_err_name(-E2BIG), "E2BIG");
	ck_assert_str_eq(kc_err_name(0), "OK");
	ck_assert_str_eq(kc_strerror(KC_EEXPIRED), "resource version expired, relist");
	ck_assert_str_eq(kc_strerror(-ENOENT), "No such file or directory");
	ck_assert_str_eq(kc_strerror(0), "success");
	/* An unknown code still gives text, never NULL. */
	ck_assert_ptr_nonnull(kc_strerror(-99999));
	ck_assert_ptr_nonnull(kc_err_name(-99999));
}
END_TEST

START_TEST(http_and_reason)
{
	ck_assert_int_eq(kc_err_http(KC_EINVALID), 422);
	ck_assert_str_eq(kc_err_reason(KC_EINVALID), "Invalid");
	ck_assert_int_eq(kc_err_http(-ENOMEM), 0);
	ck_assert_str_eq(kc_err_reason(-ENOMEM), "");
}
END_TEST

START_TEST(from_http)
{
	static const struct {
		int		 http;
		const char	*reason;
		int		 want;
	} cases[] = {
		{ 409, "AlreadyExists", KC_EEXISTS },
		{ 409, "Conflict", KC_ECONFLICT },
		{ 409, NULL, KC_ECONFLICT },
		{ 410, "Expired", KC_EEXPIRED },
		{ 410, "Gone", KC_EGONE },
		{ 404, "NotFound", KC_ENOTFOUND },
		{ 404, "", KC_ENOTFOUND },
		{ 422, "Invalid", KC_EINVALID },
		{ 429, "TooManyRequests", KC_ETHROTTLED },
		{ 401, "Unauthorized", KC_EUNAUTHORIZED },
		{ 403, "Forbidden", KC_EFORBIDDEN },
		{ 400, "BadRequest", KC_EBADREQUEST },
		{ 504, "Timeout", KC_ETIMEOUT },
		{ 500, "ServerTimeout", KC_ESERVERTIMEOUT },
		{ 500, "InternalError", KC_EINTERNAL },
		{ 502, NULL, KC_EINTERNAL },
		{ 503, NULL, KC_EUNAVAILABLE },
		{ 415, "UnsupportedMediaType", KC_EMEDIATYPE },
		{ 418, NULL, KC_EHTTP },
		{ 418, "SomethingNew", KC_EHTTP },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++)
		ck_assert_msg(kc_err_from_http(cases[i].http, cases[i].reason) == cases[i].want,
		    "case %zu: %d %s", i, cases[i].http,
		    cases[i].reason != NULL ? cases[i].reason : "(null)");
}
END_TEST

START_TEST(status_set)
{
	struct kc_status st;
	char longer[2000];

	kc_status_clear(&st);
	ck_assert_int_eq(kc_status_set(&st, KC_EPARSE, "line %d: %s", 3, "bad"), KC_EPARSE);
	ck_assert_str_eq(st.message, "line 3: bad");
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	ck_assert_int_eq(kc_status_set(&st, -E2BIG, "%s", longer), -E2BIG);
	ck_assert_uint_eq(strlen(st.message), sizeof(st.message) - 1);
	/* NULL status: just the code. */
	ck_assert_int_eq(kc_status_set(NULL, KC_EINVALID, "ignored"), KC_EINVALID);
	kc_status_clear(&st);
	ck_assert_str_eq(st.message, "");
	ck_assert_int_eq(st.http_code, 0);
	kc_status_clear(NULL);
}
END_TEST

/*
 * A status reused after an HTTP failure keeps nothing of it: a later
 * local failure must not still read as "HTTP 409 Conflict" with causes.
 */
START_TEST(status_set_resets)
{
	struct kc_status st;

	memset(&st, 0x55, sizeof(st));
	st.message[sizeof(st.message) - 1] = '\0';
	ck_assert_int_eq(kc_status_set(&st, -EINVAL, "bad %s", "name"), -EINVAL);
	ck_assert_str_eq(st.message, "bad name");
	ck_assert_int_eq(st.http_code, 0);
	ck_assert_uint_eq(st.retry_after_ms, 0);
	ck_assert_str_eq(st.reason, "");
	ck_assert_uint_eq(st.ncauses, 0);
	ck_assert_str_eq(st.causes[0].field, "");

	/* The message may be formatted from the status's own text. */
	ck_assert_int_eq(kc_status_set(&st, KC_EPARSE, "%s: %s", "file.yaml", st.message),
	    KC_EPARSE);
	ck_assert_str_eq(st.message, "file.yaml: bad name");
}
END_TEST

Suite *
err_suite(void)
{
	Suite *s = suite_create("err");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, codes_are_below_errno_range);
	tcase_add_test(tc, names_and_text);
	tcase_add_test(tc, http_and_reason);
	tcase_add_test(tc, from_http);
	tcase_add_test(tc, status_set);
	tcase_add_test(tc, status_set_resets);
	suite_add_tcase(s, tc);
	return s;
}

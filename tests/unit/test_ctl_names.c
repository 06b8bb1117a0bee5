/*
 * test_ctl_names.c: whose an object of a name a Run takes is (names.c):
 * this Run's, an earlier Run's of the same name, or someone else's; the
 * words of a conflict; and the cached view the admission webhook reads.
 */
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/err.h>
#include <kc/json.h>
#include <kc/macro.h>
#include <kc/sbuf.h>

#include "testutil.h"
#include "../../controller/names.h"

static struct json_object *
obj(const char *text)
{
	struct json_object *o = json_tokener_parse(text);

	ck_assert_msg(o != NULL, "bad test JSON: %s", text);
	return o;
}

#define META(refs)	"{\"metadata\": {\"name\": \"web\", \"namespace\": \"default\"" \
			refs "}}"
#define RUN_REF(av, name, uid, ctl) \
	"{\"apiVersion\": \"" av "\", \"kind\": \"Run\", \"name\": \"" name "\", " \
	"\"uid\": \"" uid "\", \"controller\": " ctl "}"

struct owner_case {
	const char		*text;
	enum ty_name_owner	 want;
};

static const struct owner_case owner_cases[] = {
	/* No owner at all: someone else's. */
	{ META(""), TY_NAME_FOREIGN },
	{ META(", \"ownerReferences\": []"), TY_NAME_FOREIGN },
	/* This Run's, at either served version. */
	{ META(", \"ownerReferences\": [" RUN_REF("trainyard.dev/v1beta1", "web", "u-1", "true")
	    "]"), TY_NAME_OURS },
	{ META(", \"ownerReferences\": [" RUN_REF("trainyard.dev/v1alpha1", "web", "u-1",
	    "true") "]"), TY_NAME_OURS },
	/* A Run of the same name and another uid: an earlier one, being collected. */
	{ META(", \"ownerReferences\": [" RUN_REF("trainyard.dev/v1beta1", "web", "u-0", "true")
	    "]"), TY_NAME_EARLIER_RUN },
	/* A Run of another name, or not as its controller: not ours to wait for. */
	{ META(", \"ownerReferences\": [" RUN_REF("trainyard.dev/v1beta1", "api", "u-9", "true")
	    "]"), TY_NAME_FOREIGN },
	{ META(", \"ownerReferences\": [" RUN_REF("trainyard.dev/v1beta1", "web", "u-1",
	    "false") "]"), TY_NAME_FOREIGN },
	/* Another group's kind Run is not a Trainyard Run. */
	{ META(", \"ownerReferences\": [" RUN_REF("example.com/v1", "web", "u-1", "true") "]"),
	    TY_NAME_FOREIGN },
	/* A Deployment's. */
	{ META(", \"ownerReferences\": [{\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", "
	    "\"name\": \"web\", \"uid\": \"d-1\", \"controller\": true}]"), TY_NAME_FOREIGN },
	/* The controller reference decides, not the first one. */
	{ META(", \"ownerReferences\": [{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", "
	    "\"name\": \"c\", \"uid\": \"c-1\"}, " RUN_REF("trainyard.dev/v1beta1", "web", "u-1",
	    "true") "]"), TY_NAME_OURS },
	/* Junk where references belong. */
	{ META(", \"ownerReferences\": {\"kind\": \"Run\"}"), TY_NAME_FOREIGN },
	{ META(", \"ownerReferences\": [7, null, {\"controller\": true}]"), TY_NAME_FOREIGN },
};

START_TEST(test_owner)
{
	const struct owner_case *c = &owner_cases[_i];
	struct json_object *o = obj(c->text);

	ck_assert_msg(names_owner(o, "web", "u-1") == c->want, "case %d: %s", _i, c->text);
	json_object_put(o);
}
END_TEST

/* A Run not created yet (no uid): a Run's object of the name is an earlier one's. */
START_TEST(test_owner_no_uid)
{
	struct json_object *o = obj(META(", \"ownerReferences\": ["
	    RUN_REF("trainyard.dev/v1beta1", "web", "u-1", "true") "]"));

	ck_assert_int_eq(names_owner(o, "web", NULL), TY_NAME_EARLIER_RUN);
	json_object_put(o);
}
END_TEST

START_TEST(test_conflict_words)
{
	struct json_object *deploy = obj(META(", \"ownerReferences\": [{\"apiVersion\": "
	    "\"apps/v1\", \"kind\": \"Deployment\", \"name\": \"web\", \"uid\": \"d-1\", "
	    "\"controller\": true}]"));
	struct json_object *plain = obj(META(""));
	struct json_object *first = obj("{\"metadata\": {\"name\": \"web-1\", \"namespace\": "
	    "\"team-a\", \"ownerReferences\": [{\"apiVersion\": \"v1\", \"kind\": "
	    "\"ConfigMap\", \"name\": \"cm\", \"uid\": \"c\"}, {\"kind\": \"Job\"}]}}");
	char buf[TY_NAMES_MSG_MAX], tiny[40];
	struct kc_sbuf b;

	kc_sbuf_init(&b, buf, sizeof(buf));
	names_conflict(&b, "service", deploy);
	ck_assert_str_eq(buf, "service default/web exists and is not owned by this Run "
	    "(owner: Deployment web)");
	names_conflict(&b, "networkpolicy", plain);
	names_conflict(&b, "pod", first);
	ck_assert_str_eq(buf, "service default/web exists and is not owned by this Run "
	    "(owner: Deployment web); networkpolicy default/web exists and is not owned by "
	    "this Run; pod team-a/web-1 exists and is not owned by this Run (owner: "
	    "ConfigMap cm)");
	/* Bounded: cut, never overrun, and the cut is known. */
	kc_sbuf_init(&b, tiny, sizeof(tiny));
	names_conflict(&b, "service", deploy);
	ck_assert(kc_sbuf_truncated(&b));
	ck_assert_uint_lt(strlen(tiny), sizeof(tiny));
	json_object_put(deploy);
	json_object_put(plain);
	json_object_put(first);
}
END_TEST

START_TEST(test_cached_foreign)
{
	/* Labelled for this name and owned by a Run: an earlier Run's. */
	ck_assert(!names_cached_foreign("web", true, "web"));
	/* No Run as controller, no label, another Run's label: someone else's. */
	ck_assert(names_cached_foreign("web", false, "web"));
	ck_assert(names_cached_foreign(NULL, true, "web"));
	ck_assert(names_cached_foreign("api", true, "web"));
}
END_TEST

Suite *
ctl_names_suite(void)
{
	Suite *s = suite_create("ctl_names");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, test_owner, 0, (int)KC_ARRAY_SIZE(owner_cases));
	tcase_add_test(tc, test_owner_no_uid);
	tcase_add_test(tc, test_conflict_words);
	tcase_add_test(tc, test_cached_foreign);
	suite_add_tcase(s, tc);
	return s;
}

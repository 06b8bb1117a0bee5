/*
 * test_ctl_migrate.c: the pure parts of "trainyard-controller migrate"
 * (controller/migrate.c): the storage version of a CRD and the
 * managedFields filter.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/err.h>
#include <kc/json.h>
#include <kc/macro.h>
#include <kc/str.h>

#include "testutil.h"
#include "../../controller/migrate.h"

static struct json_object *
parse(const char *text)
{
	struct json_object *o = NULL;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_json_parse(text, strlen(text), &o, &st) == 0, "bad test JSON: %s",
	    st.message);
	return o;
}

START_TEST(test_storage_version)
{
	static const struct {
		const char	*crd;
		int		 r;
		const char	*want;
	} cases[] = {
		{ "{\"spec\":{\"versions\":[{\"name\":\"v1beta1\",\"storage\":true},"
		  "{\"name\":\"v1alpha1\",\"storage\":false}]}}", 0, "v1beta1" },
		{ "{\"spec\":{\"versions\":[{\"name\":\"v1beta1\",\"served\":true},"
		  "{\"name\":\"v1alpha1\",\"storage\":true}]}}", 0, "v1alpha1" },
		{ "{\"spec\":{\"versions\":[{\"name\":\"v1beta1\",\"storage\":true},"
		  "{\"name\":\"v1alpha1\",\"storage\":true}]}}", -ENOENT, NULL },
		{ "{\"spec\":{\"versions\":[{\"name\":\"v1\"}]}}", -ENOENT, NULL },
		{ "{\"spec\":{\"versions\":[{\"storage\":true}]}}", -ENOENT, NULL },
		{ "{\"spec\":{}}", -ENOENT, NULL },
		{ "{\"spec\":{\"versions\":[{\"name\":\"a-version-name-longer-than-16\","
		  "\"storage\":true}]}}", -ENOENT, NULL },
	};
	char buf[16];

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct json_object *crd = parse(cases[i].crd);

		(void)kc_strlcpy(buf, "untouched", sizeof(buf));
		ck_assert_int_eq(migrate_storage_version(crd, buf, sizeof(buf)), cases[i].r);
		ck_assert_str_eq(buf, cases[i].want != NULL ? cases[i].want : "untouched");
		json_object_put(crd);
	}
}
END_TEST

START_TEST(test_managed_fields)
{
	static const struct {
		const char	*in;
		int		 removed;
		const char	*want;	/* metadata.managedFields after */
	} cases[] = {
		/* Entries of the old version go; the others stay, in order. */
		{ "[{\"manager\":\"kubectl\",\"apiVersion\":\"trainyard.dev/v1alpha1\"},"
		  "{\"manager\":\"ctl\",\"apiVersion\":\"trainyard.dev/v1beta1\",\"subresource\":"
		  "\"status\"},{\"manager\":\"x\"},{\"manager\":\"y\",\"apiVersion\":"
		  "\"trainyard.dev/v1beta1\"}]", 2,
		  "[{\"manager\":\"ctl\",\"apiVersion\":\"trainyard.dev/v1beta1\",\"subresource\":"
		  "\"status\"},{\"manager\":\"y\",\"apiVersion\":\"trainyard.dev/v1beta1\"}]" },
		/* None left: [{}] clears them ([] would keep them). */
		{ "[{\"manager\":\"kubectl\",\"apiVersion\":\"trainyard.dev/v1alpha1\"}]", 1,
		  "[{}]" },
		/* Nothing to do: untouched. */
		{ "[{\"manager\":\"a\",\"apiVersion\":\"trainyard.dev/v1beta1\"}]", 0,
		  "[{\"manager\":\"a\",\"apiVersion\":\"trainyard.dev/v1beta1\"}]" },
		{ "[]", 0, "[]" },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct json_object *obj = parse("{\"metadata\":{\"name\":\"r\"}}");
		struct json_object *want = parse(cases[i].want);

		ck_assert_int_eq(kc_json_put(kc_json_get(obj, "metadata"), "managedFields",
		    parse(cases[i].in)), 0);
		ck_assert_int_eq(migrate_filter_managed_fields(obj, "trainyard.dev/v1beta1"),
		    cases[i].removed);
		ck_assert_msg(kc_json_equal(kc_json_get(obj, "metadata", "managedFields"), want),
		    "case %zu: %s", i, json_object_to_json_string(obj));
		json_object_put(want);
		json_object_put(obj);
	}
}
END_TEST

START_TEST(test_managed_fields_absent)
{
	struct json_object *obj = parse("{\"metadata\":{\"name\":\"r\"}}");
	struct json_object *copy = kc_json_copy(obj);

	ck_assert_int_eq(migrate_filter_managed_fields(obj, "trainyard.dev/v1beta1"), 0);
	ck_assert(kc_json_equal(obj, copy));
	json_object_put(copy);
	json_object_put(obj);
	obj = parse("{}");
	ck_assert_int_eq(migrate_filter_managed_fields(obj, "trainyard.dev/v1beta1"), 0);
	json_object_put(obj);
}
END_TEST

Suite *
ctl_migrate_suite(void)
{
	Suite *s = suite_create("ctl_migrate");
	TCase *tc = tcase_create("migrate");

	tcase_add_test(tc, test_storage_version);
	tcase_add_test(tc, test_managed_fields);
	tcase_add_test(tc, test_managed_fields_absent);
	suite_add_tcase(s, tc);
	return s;
}

/*
 * ctl_testutil.c: shared support for the controller's unit suites.
 */
#include <string.h>

#include <check.h>

#include <kc/err.h>
#include <kc/yaml.h>

#include "ctl_testutil.h"

struct json_object *
ctu_yaml(const char *text)
{
	struct json_object *o = NULL;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_yaml_parse_one(text, strlen(text), NULL, &o, &st) == 0,
	    "bad test YAML: %s\n%s", st.message, text);
	return o;
}

/*
 * ctl_testutil.h: shared support for the controller's unit suites.
 */
#ifndef CTL_TESTUTIL_H
#define CTL_TESTUTIL_H

#include <json-c/json.h>

/*
 * One YAML document as a new json-c tree; a document that does not parse
 * fails the test, naming the error and showing the text.
 */
struct json_object *ctu_yaml(const char *text);

#endif

/*
 * test_selector.c: label and field selectors against upstream's behaviour
 * (k8s.io/apimachinery pkg/labels, pkg/fields, metav1 helpers) and the
 * examples of the Kubernetes "Labels and Selectors" page.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/selector.h>

#include "testutil.h"

#define QNAME_REGEX	"must consist of alphanumeric characters, '-', '_' or '.', " \
			"and must start and end with an alphanumeric character (e.g. " \
			"'MyName',  or 'my.name',  or '123-abc', regex used for " \
			"validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define VALUE_REGEX	"a valid label must be an empty string or consist of " \
			"alphanumeric characters, '-', '_' or '.', and must start " \
			"and end with an alphanumeric character (e.g. 'MyValue',  or " \
			"'my_value',  or '12345', regex used for validation is " \
			"'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
#define DNS_REGEX	"a lowercase RFC 1123 subdomain must consist of lower case " \
			"alphanumeric characters, '-' or '.', and must start and end " \
			"with an alphanumeric character (e.g. 'example.com', regex used " \
			"for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]" \
			"([-a-z0-9]*[a-z0-9])?)*')"
#define MSG_WANT	2048
#define A64		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define D64		"1111111111111111111111111111111111111111111111111111111111111111"

static struct json_object *
json(const char *text)
{
	struct json_object *o;
	struct kc_status st = { 0 };

	/* json-c represents JSON null as a NULL pointer. */
	if (text == NULL || strcmp(text, "null") == 0)
		return NULL;
	ck_assert_msg(kc_json_parse(text, strlen(text), &o, &st) == 0,
	    "bad test JSON %s: %s", text, st.message);
	return o;
}

/* Compares st->message with 'want', which may be longer than it holds. */
static void
assert_message(const struct kc_status *st, const char *want)
{
	size_t max = sizeof(st->message) - 1;

	if (strlen(want) <= max)
		ck_assert_str_eq(st->message, want);
	else
		ck_assert_msg(strlen(st->message) == max &&
		    strncmp(st->message, want, max) == 0,
		    "message '%s' is not a truncation of '%s'", st->message, want);
}

/*
 * Label selectors: matching
 */

static const struct {
	const char	*sel;
	const char	*labels;	/* JSON, or NULL for no labels at all */
	bool		 match;
} label_match[] = {
	/* Everything. */
	{ "", "{\"x\":\"y\"}", true },
	{ "", NULL, true },
	{ "   ", "{}", true },
	/* = and == */
	{ "x=y", "{\"x\":\"y\"}", true },
	{ "x=y", "{\"x\":\"z\"}", false },
	{ "x=y", "{}", false },
	{ "x=y", NULL, false },
	{ "x==y", "{\"x\":\"y\"}", true },
	{ "x==y", "{\"x\":\"Y\"}", false },
	{ "x=", "{\"x\":\"\"}", true },
	{ "x=", "{}", false },
	{ "x=y", "{\"x\":\"y\",\"z\":\"w\"}", true },
	/* != matches absent keys. */
	{ "x!=y", "{\"x\":\"z\"}", true },
	{ "x!=y", "{\"x\":\"y\"}", false },
	{ "x!=y", "{}", true },
	{ "x!=y", NULL, true },
	{ "x!=", "{\"x\":\"\"}", false },
	/* in, notin */
	{ "x in (y,z)", "{\"x\":\"z\"}", true },
	{ "x in (y,z)", "{\"x\":\"w\"}", false },
	{ "x in (y,z)", "{}", false },
	{ "x in (y)", "{\"x\":\"y\"}", true },
	{ "x notin (y,z)", "{\"x\":\"w\"}", true },
	{ "x notin (y,z)", "{\"x\":\"y\"}", false },
	{ "x notin (y,z)", "{}", true },
	{ "x notin (y,z)", NULL, true },
	{ "x in ()", "{\"x\":\"\"}", true },
	{ "x in ()", "{\"x\":\"a\"}", false },
	{ "x in (,a)", "{\"x\":\"\"}", true },
	{ "x in (a,)", "{\"x\":\"\"}", true },
	{ "x in (a,,b)", "{\"x\":\"\"}", true },
	{ "x in (a,,b)", "{\"x\":\"b\"}", true },
	{ "x notin ()", "{\"x\":\"a\"}", true },
	/* exists, does not exist */
	{ "x", "{\"x\":\"\"}", true },
	{ "x", "{\"y\":\"1\"}", false },
	{ "x", NULL, false },
	{ "!x", "{\"y\":\"1\"}", true },
	{ "!x", "{\"x\":\"1\"}", false },
	{ "!x", NULL, true },
	/* > and < compare integers; a non-integer label never matches. */
	{ "x>1", "{\"x\":\"2\"}", true },
	{ "x>1", "{\"x\":\"1\"}", false },
	{ "x>1", "{\"x\":\"0\"}", false },
	{ "x>1", "{\"x\":\"-5\"}", false },
	{ "x>1", "{\"x\":\"+7\"}", true },
	{ "x>1", "{\"x\":\"abc\"}", false },
	{ "x>1", "{\"x\":\"\"}", false },
	{ "x>1", "{}", false },
	{ "x<1", "{\"x\":\"0\"}", true },
	{ "x<1", "{\"x\":\"-2\"}", true },
	{ "x<1", "{\"x\":\"1\"}", false },
	{ "x<1", "{}", false },
	{ "x>0", "{\"x\":\"9223372036854775807\"}", true },
	{ "x>0", "{\"x\":\"9223372036854775808\"}", false },
	{ "x<10", "{\"x\":\"09\"}", true },
	/* A label that is not a string counts as absent. */
	{ "x", "{\"x\":1}", false },
	{ "!x", "{\"x\":1}", true },
	{ "x!=1", "{\"x\":1}", true },
	/* Several requirements are an AND, also on one key. */
	{ "x=a,y=b", "{\"x\":\"a\",\"y\":\"b\"}", true },
	{ "x=a,y=b", "{\"x\":\"a\",\"y\":\"c\"}", false },
	{ "x,x!=b", "{\"x\":\"a\"}", true },
	{ "x,x!=b", "{\"x\":\"b\"}", false },
	{ "x in (a,b),x notin (b)", "{\"x\":\"a\"}", true },
	{ "x in (a,b),x notin (b)", "{\"x\":\"b\"}", false },
	/* Prefixed keys. */
	{ "example.com/app=web", "{\"example.com/app\":\"web\"}", true },
	{ "example.com/app=web", "{\"app\":\"web\"}", false },
	{ "app.kubernetes.io/name in (trainyard)",
	  "{\"app.kubernetes.io/name\":\"trainyard\"}", true },
	/* Keywords are identifiers where a key or value is expected. */
	{ "in", "{\"in\":\"x\"}", true },
	{ "in in (in)", "{\"in\":\"in\"}", true },
	{ "notin notin (in,notin)", "{\"notin\":\"notin\"}", false },
	{ "notin notin (in,notin)", "{\"notin\":\"x\"}", true },
	{ "!in", "{\"in\":\"x\"}", false },
	{ "x=in", "{\"x\":\"in\"}", true },
	/* The Kubernetes docs, "Labels and Selectors". */
	{ "environment = production", "{\"environment\":\"production\"}", true },
	{ "environment = production", "{\"environment\":\"qa\"}", false },
	{ "tier != frontend", "{\"tier\":\"backend\"}", true },
	{ "tier != frontend", "{}", true },
	{ "tier != frontend", "{\"tier\":\"frontend\"}", false },
	{ "environment=production,tier!=frontend",
	  "{\"environment\":\"production\",\"tier\":\"backend\"}", true },
	{ "environment=production,tier!=frontend",
	  "{\"environment\":\"production\"}", true },
	{ "environment=production,tier!=frontend",
	  "{\"environment\":\"production\",\"tier\":\"frontend\"}", false },
	{ "environment=production,tier!=frontend",
	  "{\"environment\":\"qa\",\"tier\":\"backend\"}", false },
	{ "environment in (production, qa)", "{\"environment\":\"production\"}", true },
	{ "environment in (production, qa)", "{\"environment\":\"qa\"}", true },
	{ "environment in (production, qa)", "{\"environment\":\"dev\"}", false },
	{ "environment in (production, qa)", "{}", false },
	{ "tier notin (frontend, backend)", "{\"tier\":\"cache\"}", true },
	{ "tier notin (frontend, backend)", "{}", true },
	{ "tier notin (frontend, backend)", "{\"tier\":\"backend\"}", false },
	{ "partition", "{\"partition\":\"customerA\"}", true },
	{ "partition", "{\"environment\":\"qa\"}", false },
	{ "!partition", "{\"environment\":\"qa\"}", true },
	{ "!partition", "{\"partition\":\"customerA\"}", false },
	{ "partition,environment notin (qa)",
	  "{\"partition\":\"customerA\",\"environment\":\"production\"}", true },
	{ "partition,environment notin (qa)",
	  "{\"partition\":\"customerA\",\"environment\":\"qa\"}", false },
	{ "environment=production,tier=frontend",
	  "{\"environment\":\"production\",\"tier\":\"frontend\"}", true },
	{ "environment in (production),tier in (frontend)",
	  "{\"environment\":\"production\",\"tier\":\"frontend\"}", true },
	{ "environment,environment notin (frontend)",
	  "{\"environment\":\"production\"}", true },
	/* White space: spaces, tabs, CR and LF anywhere between tokens. */
	{ "  x  =  y  ", "{\"x\":\"y\"}", true },
	{ "x\t==\ty", "{\"x\":\"y\"}", true },
	{ "x in(y,z)", "{\"x\":\"y\"}", true },
	{ "x\tin\t(\ty\t,\tz\t)", "{\"x\":\"z\"}", true },
	{ "x=y ,\n z=w", "{\"x\":\"y\",\"z\":\"w\"}", true },
	{ "\r\nx\r\n", "{\"x\":\"1\"}", true },
	{ " ! x ", "{}", true },
	{ "x notin(a)", "{\"x\":\"a\"}", false },
};

START_TEST(test_label_match)
{
	struct kc_label_selector *sel = NULL;
	struct json_object *labels = json(label_match[_i].labels);
	struct kc_status st = { 0 };
	int r;

	r = kc_label_selector_parse(label_match[_i].sel, &sel, &st);
	ck_assert_msg(r == 0, "parse '%s': %d %s", label_match[_i].sel, r,
	    st.message);
	ck_assert_msg(kc_label_selector_matches(sel, labels) == label_match[_i].match,
	    "'%s' against %s: want %s", label_match[_i].sel,
	    label_match[_i].labels ? label_match[_i].labels : "NULL",
	    label_match[_i].match ? "match" : "no match");
	sel = kc_label_selector_free(sel);
	ck_assert_ptr_null(sel);
	if (labels != NULL)
		json_object_put(labels);
}
END_TEST

START_TEST(test_label_match_obj)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *sel = NULL;
	_cleanup_(kc_json_putp) struct json_object *pod =
	    json("{\"metadata\":{\"name\":\"p\",\"labels\":{\"app\":\"web\"}}}");
	_cleanup_(kc_json_putp) struct json_object *bare =
	    json("{\"metadata\":{\"name\":\"q\"}}");

	ck_assert_int_eq(kc_label_selector_parse("app=web", &sel, NULL), 0);
	ck_assert(kc_label_selector_matches_obj(sel, pod));
	ck_assert(!kc_label_selector_matches_obj(sel, bare));
	ck_assert(!kc_label_selector_matches_obj(sel, NULL));
	/* A NULL selector selects everything. */
	ck_assert(kc_label_selector_matches(NULL, NULL));
	ck_assert(kc_label_selector_matches_obj(NULL, bare));
	ck_assert(kc_label_selector_is_empty(NULL));
	ck_assert(!kc_label_selector_is_nothing(NULL));
}
END_TEST

/*
 * Label selectors: canonical strings
 */

static const struct {
	const char	*in;
	const char	*out;
} label_string[] = {
	{ "", "" },
	{ " \t ", "" },
	{ "x=a", "x=a" },
	{ "x==a", "x==a" },
	{ "x!=a", "x!=a" },
	{ "x=", "x=" },
	{ "x", "x" },
	{ "!x", "!x" },
	{ " ! x ", "!x" },
	{ "x>1", "x>1" },
	{ "x<10", "x<10" },
	{ "x > 1", "x>1" },
	{ "x in (a)", "x in (a)" },
	{ "x in (c,b,a,b)", "x in (a,b,c)" },
	{ "x notin ( b , a )", "x notin (a,b)" },
	{ "x in ()", "x in ()" },
	{ "x in (,)", "x in ()" },
	{ "x in (,a)", "x in (,a)" },
	{ "x in (a,,b)", "x in (,a,b)" },
	{ "x in (a,,,b)", "x in (,a,b)" },
	{ "x in (foo,,baz),y,z notin ()", "x in (,baz,foo),y,z notin ()" },
	/* Sorted by key, stable among equal keys. */
	{ "z=c,y=b,x=a", "x=a,y=b,z=c" },
	{ "b,a", "a,b" },
	{ "x=a,x!=b", "x=a,x!=b" },
	{ "x!=b,x=a", "x!=b,x=a" },
	{ "x notin (a),!x,x", "x notin (a),!x,x" },
	{ "b.example.com/k=v,a=1", "a=1,b.example.com/k=v" },
	{ "in in (notin, in)", "in in (in,notin)" },
	{ "environment in (production, qa)", "environment in (production,qa)" },
	{ "tier notin (frontend, backend)", "tier notin (backend,frontend)" },
	{ "environment=production,tier!=frontend",
	  "environment=production,tier!=frontend" },
	{ "partition,environment notin (qa)", "environment notin (qa),partition" },
};

START_TEST(test_label_string)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *sel = NULL;
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *again = NULL;
	_cleanup_(kc_freep) char *s = NULL, *s2 = NULL;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_label_selector_parse(label_string[_i].in, &sel, &st) == 0,
	    "parse '%s': %s", label_string[_i].in, st.message);
	ck_assert_int_eq(kc_label_selector_string(sel, &s), 0);
	ck_assert_str_eq(s, label_string[_i].out);
	/* The canonical string parses back to itself. */
	ck_assert_int_eq(kc_label_selector_parse(s, &again, &st), 0);
	ck_assert_int_eq(kc_label_selector_string(again, &s2), 0);
	ck_assert_str_eq(s2, s);
	ck_assert(kc_label_selector_is_empty(sel) == (s[0] == '\0'));
	ck_assert(!kc_label_selector_is_nothing(sel));
}
END_TEST

START_TEST(test_label_null_text)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *sel = NULL;
	_cleanup_(kc_freep) char *s = NULL;

	ck_assert_int_eq(kc_label_selector_parse(NULL, &sel, NULL), 0);
	ck_assert(kc_label_selector_is_empty(sel));
	ck_assert(kc_label_selector_matches(sel, NULL));
	ck_assert_int_eq(kc_label_selector_string(sel, &s), 0);
	ck_assert_str_eq(s, "");
	s = kc_free(s);
	ck_assert_int_eq(kc_label_selector_string(NULL, &s), 0);
	ck_assert_str_eq(s, "");
}
END_TEST

START_TEST(test_label_exact_match)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *sel = NULL;
	const char *v = NULL;

	ck_assert_int_eq(kc_label_selector_parse(
	    "a=1,b==2,c in (3),d in (4,5),e!=6,f,g notin (7),a=9", &sel, NULL), 0);
	ck_assert(kc_label_selector_requires_exact_match(sel, "a", &v));
	ck_assert_str_eq(v, "1");		/* the first on the key */
	ck_assert(kc_label_selector_requires_exact_match(sel, "b", &v));
	ck_assert_str_eq(v, "2");
	ck_assert(kc_label_selector_requires_exact_match(sel, "c", NULL));
	ck_assert(!kc_label_selector_requires_exact_match(sel, "d", &v));
	ck_assert(!kc_label_selector_requires_exact_match(sel, "e", &v));
	ck_assert(!kc_label_selector_requires_exact_match(sel, "f", &v));
	ck_assert(!kc_label_selector_requires_exact_match(sel, "g", &v));
	ck_assert(!kc_label_selector_requires_exact_match(sel, "zz", &v));
	ck_assert(!kc_label_selector_requires_exact_match(NULL, "a", &v));
}
END_TEST

/*
 * Label selectors: errors
 */

static const struct {
	const char	*in;
	const char	*msg;
} label_error[] = {
	{ "a in (b", "unable to parse requirement: found '', expected: ',' or ')'" },
	{ "x in", "unable to parse requirement: found '' expected: '('" },
	{ "x in a", "unable to parse requirement: found 'a' expected: '('" },
	{ "x in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'" },
	{ "x in (=)", "unable to parse requirement: found '=', expected: ',', ')' "
	  "or identifier" },
	{ "x in (a,=)", "unable to parse requirement: found '=', expected: ',', "
	  "or identifier" },
	{ "x in (a,(", "unable to parse requirement: found '(', expected: ',', "
	  "or identifier" },
	{ "a=b=c", "found '=', expected: ',' or 'end of string'" },
	{ "!a=b", "found '=', expected: ',' or 'end of string'" },
	{ "x=a)", "found ')', expected: ',' or 'end of string'" },
	{ "x=a b", "found 'b', expected: ',' or 'end of string'" },
	{ "x=a,", "found '', expected: identifier after ','" },
	{ "x=a,,y", "found ',', expected: identifier after ','" },
	{ "x=a,=b", "found '=', expected: identifier after ','" },
	{ ",x", "found ',', expected: !, identifier, or 'end of string'" },
	{ "=x", "found '=', expected: !, identifier, or 'end of string'" },
	{ "(x)", "found '(', expected: !, identifier, or 'end of string'" },
	{ "x y", "unable to parse requirement: found 'y', expected: in, notin, =, "
	  "==, !=, gt, lt" },
	{ "x(a)", "unable to parse requirement: found '(', expected: in, notin, =, "
	  "==, !=, gt, lt" },
	{ "x !a", "unable to parse requirement: found '!', expected: in, notin, =, "
	  "==, !=, gt, lt" },
	{ "x=(a)", "unable to parse requirement: found '(', expected: identifier" },
	{ "x>=1", "unable to parse requirement: found '=', expected: identifier" },
	{ "!", "unable to parse requirement: found '', expected: identifier" },
	{ "!!x", "unable to parse requirement: found '!', expected: identifier" },
	{ "!=x", "found '!=', expected: !, identifier, or 'end of string'" },
	/* Keys. */
	{ "-a", "unable to parse requirement: <nil>: Invalid value: \"-a\": "
	  "name part " QNAME_REGEX },
	{ "a-=b", "unable to parse requirement: <nil>: Invalid value: \"a-\": "
	  "name part " QNAME_REGEX },
	{ "a/b/c=d", "unable to parse requirement: <nil>: Invalid value: "
	  "\"a/b/c\": a qualified name " QNAME_REGEX " with an optional DNS "
	  "subdomain prefix and '/' (e.g. 'example.com/MyName')" },
	{ "/a", "unable to parse requirement: <nil>: Invalid value: \"/a\": "
	  "prefix part must be non-empty" },
	{ "a/", "unable to parse requirement: <nil>: Invalid value: \"a/\": "
	  "name part must be non-empty; name part " QNAME_REGEX },
	{ "Example.com/a", "unable to parse requirement: <nil>: Invalid value: "
	  "\"Example.com/a\": prefix part " DNS_REGEX },
	{ A64, "unable to parse requirement: <nil>: Invalid value: \"" A64 "\": "
	  "name part must be no more than 63 characters" },
	{ "a\"b", "unable to parse requirement: <nil>: Invalid value: \"a\\\"b\": "
	  "name part " QNAME_REGEX },
	/* Values. */
	{ "x=" A64, "unable to parse requirement: values[0][x]: Invalid value: \""
	  A64 "\": must be no more than 63 characters" },
	{ "x=-a", "unable to parse requirement: values[0][x]: Invalid value: "
	  "\"-a\": " VALUE_REGEX },
	{ "x in (a,b_)", "unable to parse requirement: values[1][x]: Invalid value: "
	  "\"b_\": " VALUE_REGEX },
	{ "x=a\x01", "unable to parse requirement: values[0][x]: Invalid value: "
	  "\"a\\x01\": " VALUE_REGEX },
	{ "x=a\xff", "unable to parse requirement: values[0][x]: Invalid value: "
	  "\"a\\xff\": " VALUE_REGEX },
	{ "x=\xc3\xa9", "unable to parse requirement: values[0][x]: Invalid value: "
	  "\"\xc3\xa9\": " VALUE_REGEX },
	/* > and < need an integer that is also a valid label value. */
	{ "a>b", "unable to parse requirement: values[0]: Invalid value: \"b\": "
	  "for 'Gt', 'Lt' operators, the value must be an integer" },
	{ "a>", "unable to parse requirement: values[0]: Invalid value: \"\": "
	  "for 'Gt', 'Lt' operators, the value must be an integer" },
	{ "a<1.5", "unable to parse requirement: values[0]: Invalid value: \"1.5\": "
	  "for 'Gt', 'Lt' operators, the value must be an integer" },
	{ "a>-1", "unable to parse requirement: values[0][a]: Invalid value: "
	  "\"-1\": " VALUE_REGEX },
	{ "a>" D64, "unable to parse requirement: [values[0]: Invalid value: \""
	  D64 "\": for 'Gt', 'Lt' operators, the value must be an integer, "
	  "values[0][a]: Invalid value: \"" D64 "\": must be no more than 63 "
	  "characters]" },
};

START_TEST(test_label_error)
{
	struct kc_label_selector *sel = (struct kc_label_selector *)&sel;
	struct kc_status st = { 0 };
	int r;

	r = kc_label_selector_parse(label_error[_i].in, &sel, &st);
	ck_assert_msg(r == KC_EINVALID, "'%s' parsed (%d)", label_error[_i].in, r);
	/* The out-parameter is untouched on failure. */
	ck_assert_ptr_eq(sel, (struct kc_label_selector *)&sel);
	assert_message(&st, label_error[_i].msg);
	/* A NULL status is fine. */
	ck_assert_int_eq(kc_label_selector_parse(label_error[_i].in, &sel, NULL),
	    KC_EINVALID);
}
END_TEST

/* Go's %q quoting of bad values, through matchLabels values. */
START_TEST(test_label_quoting)
{
	static const struct {
		const char	*value;		/* JSON string body */
		const char	*quoted;	/* as Go's %q prints it */
	} cases[] = {
		{ "x\\ty", "\"x\\ty\"" },
		{ "x\\n\\r\\u0007\\b\\f\\u000b", "\"x\\n\\r\\a\\b\\f\\v\"" },
		{ "\\u0000\\u001f\\u007f", "\"\\x00\\x1f\\x7f\"" },
		{ "q\\\"b\\\\", "\"q\\\"b\\\\\"" },
		{ "\\u0085", "\"\\u0085\"" },
		{ "\\u20ac \\ud83d\\ude00", "\"\xe2\x82\xac \xf0\x9f\x98\x80\"" },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct kc_label_selector *sel = NULL;
		struct json_object *set;
		struct kc_status st = { 0 };
		char text[128], want[MSG_WANT];

		(void)snprintf(text, sizeof(text), "{\"a\":\"%s\"}", cases[i].value);
		set = json(text);
		ck_assert_int_eq(kc_label_selector_from_set(set, &sel, &st), KC_EINVALID);
		(void)snprintf(want, sizeof(want), "values[0][a]: Invalid value: %s: "
		    VALUE_REGEX, cases[i].quoted);
		assert_message(&st, want);
		json_object_put(set);
	}
}
END_TEST

/* Bytes that are not UTF-8 print as \x escapes, through the parser. */
START_TEST(test_label_quoting_bytes)
{
	static const struct {
		const char	*value;
		const char	*quoted;
	} cases[] = {
		{ "\xc0\x80", "\"\\xc0\\x80\"" },		/* overlong */
		{ "\xed\xa0\x80", "\"\\xed\\xa0\\x80\"" },	/* surrogate */
		{ "a\xe2\x82", "\"a\\xe2\\x82\"" },		/* cut short */
		{ "\xe2\x41\xa1", "\"\\xe2A\\xa1\"" },	/* bad continuation */
		{ "\xf4\x90\x80\x80", "\"\\xf4\\x90\\x80\\x80\"" }, /* > U+10FFFF */
		{ "\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"" },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct kc_label_selector *sel = NULL;
		struct kc_status st = { 0 };
		char text[64], want[MSG_WANT];

		(void)snprintf(text, sizeof(text), "x=%s", cases[i].value);
		ck_assert_int_eq(kc_label_selector_parse(text, &sel, &st), KC_EINVALID);
		(void)snprintf(want, sizeof(want), "unable to parse requirement: "
		    "values[0][x]: Invalid value: %s: " VALUE_REGEX, cases[i].quoted);
		assert_message(&st, want);
	}
}
END_TEST

START_TEST(test_label_key_limits)
{
	struct kc_label_selector *sel = NULL;
	struct kc_status st = { 0 };
	char key[400], want[MSG_WANT];

	/* A 253-byte prefix is fine, 254 is not; the name part is 63 at most. */
	memset(key, 'a', 253);
	(void)snprintf(key + 253, sizeof(key) - 253, "/%s", A64 + 1);
	ck_assert_int_eq(kc_label_selector_parse(key, &sel, &st), 0);
	sel = kc_label_selector_free(sel);
	memset(key, 'a', 254);
	(void)snprintf(key + 254, sizeof(key) - 254, "/n");
	ck_assert_int_eq(kc_label_selector_parse(key, &sel, &st), KC_EINVALID);
	(void)snprintf(want, sizeof(want), "unable to parse requirement: <nil>: "
	    "Invalid value: \"%s\": prefix part must be no more than 253 "
	    "characters", key);
	assert_message(&st, want);

	ck_assert_int_eq(kc_label_selector_parse("a-.com/x", &sel, &st), KC_EINVALID);
	assert_message(&st, "unable to parse requirement: <nil>: Invalid value: "
	    "\"a-.com/x\": prefix part " DNS_REGEX);
	ck_assert_int_eq(kc_label_selector_parse("a..b/x", &sel, &st), KC_EINVALID);
	assert_message(&st, "unable to parse requirement: <nil>: Invalid value: "
	    "\"a..b/x\": prefix part " DNS_REGEX);
	ck_assert_int_eq(kc_label_selector_parse("x.y-z.example/Name_1.b=v", &sel,
	    &st), 0);
	sel = kc_label_selector_free(sel);
}
END_TEST

/* Messages longer than struct kc_status holds are cut, never overflowed. */
START_TEST(test_label_long_message)
{
	struct kc_label_selector *sel = NULL;
	struct kc_status st = { 0 };
	char *text, *want;
	size_t n = 60000;

	text = kc_malloc(n + 3);
	want = kc_malloc(n + 200);
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(want);
	memcpy(text, "x=", 2);
	memset(text + 2, 'v', n);
	text[n + 2] = '\0';
	ck_assert_int_eq(kc_label_selector_parse(text, &sel, &st), KC_EINVALID);
	(void)snprintf(want, n + 200, "unable to parse requirement: values[0][x]: "
	    "Invalid value: \"%s\": must be no more than 63 characters", text + 2);
	assert_message(&st, want);
	kc_free(text);
	kc_free(want);
}
END_TEST

START_TEST(test_label_limits)
{
	struct kc_label_selector *sel = NULL;
	struct kc_status st = { 0 };
	char *big;
	size_t n;

	/* Exactly KC_SELECTOR_MAX bytes is accepted; one more is not. */
	big = kc_malloc(KC_SELECTOR_MAX + 2);
	ck_assert_ptr_nonnull(big);
	memset(big, ' ', KC_SELECTOR_MAX + 1);
	big[0] = 'x';
	big[KC_SELECTOR_MAX] = '\0';
	ck_assert_int_eq(kc_label_selector_parse(big, &sel, &st), 0);
	sel = kc_label_selector_free(sel);
	big[KC_SELECTOR_MAX] = ' ';
	big[KC_SELECTOR_MAX + 1] = '\0';
	ck_assert_int_eq(kc_label_selector_parse(big, &sel, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "label selector longer than 65536 bytes");
	ck_assert_ptr_null(sel);

	/* KC_SELECTOR_REQS_MAX requirements, then one too many. */
	n = 0;
	for (int i = 0; i < KC_SELECTOR_REQS_MAX; i++)
		n += (size_t)snprintf(big + n, KC_SELECTOR_MAX - n, "%sa", i ? "," : "");
	ck_assert_int_eq(kc_label_selector_parse(big, &sel, &st), 0);
	sel = kc_label_selector_free(sel);
	(void)snprintf(big + n, KC_SELECTOR_MAX - n, ",b");
	ck_assert_int_eq(kc_label_selector_parse(big, &sel, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "label selector has more than 1024 requirements");
	ck_assert_ptr_null(sel);
	kc_free(big);
}
END_TEST

/*
 * metav1.LabelSelector
 */

static const struct {
	const char	*ls;		/* JSON, NULL for a NULL pointer */
	const char	*str;		/* canonical string, or NULL on error */
	const char	*labels;	/* JSON labels to match against */
	bool		 match;
	const char	*msg;		/* the error */
} ls_cases[] = {
	/* nil selects nothing; {} and empty parts select everything. */
	{ NULL, "", "{\"a\":\"1\"}", false, NULL },
	{ "null", "", "{}", false, NULL },
	{ "{}", "", "{\"a\":\"1\"}", true, NULL },
	{ "{\"matchLabels\":{},\"matchExpressions\":[]}", "", "{}", true, NULL },
	{ "{\"matchLabels\":null,\"matchExpressions\":null}", "", "{}", true, NULL },
	/* matchLabels only. */
	{ "{\"matchLabels\":{\"app\":\"web\"}}", "app=web",
	  "{\"app\":\"web\",\"x\":\"y\"}", true, NULL },
	{ "{\"matchLabels\":{\"app\":\"web\"}}", "app=web", "{\"app\":\"db\"}",
	  false, NULL },
	{ "{\"matchLabels\":{\"b\":\"2\",\"a\":\"1\"}}", "a=1,b=2",
	  "{\"a\":\"1\",\"b\":\"2\"}", true, NULL },
	{ "{\"matchLabels\":{\"a\":\"\"}}", "a=", "{\"a\":\"\"}", true, NULL },
	/* Expressions. */
	{ "{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\","
	  "\"values\":[\"b\",\"a\"]}]}", "tier in (a,b)", "{\"tier\":\"a\"}",
	  true, NULL },
	{ "{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\","
	  "\"values\":[\"a\",\"a\"]}]}", "tier in (a,a)", "{\"tier\":\"a\"}",
	  true, NULL },
	{ "{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"NotIn\","
	  "\"values\":[\"a\"]}]}", "tier notin (a)", "{}", true, NULL },
	{ "{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"NotIn\","
	  "\"values\":[\"a\"]}]}", "tier notin (a)", "{\"tier\":\"a\"}",
	  false, NULL },
	{ "{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"Exists\"}]}",
	  "tier", "{\"tier\":\"\"}", true, NULL },
	{ "{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"Exists\","
	  "\"values\":[]}]}", "tier", "{}", false, NULL },
	{ "{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"DoesNotExist\","
	  "\"values\":null}]}", "!tier", "{}", true, NULL },
	{ "{\"matchLabels\":{\"z\":\"1\"},\"matchExpressions\":[{\"key\":\"a\","
	  "\"operator\":\"Exists\"},{\"key\":\"z\",\"operator\":\"In\","
	  "\"values\":[\"1\",\"2\"]}]}", "a,z=1,z in (1,2)",
	  "{\"a\":\"x\",\"z\":\"1\"}", true, NULL },
	{ "{\"matchLabels\":{\"z\":\"1\"},\"matchExpressions\":[{\"key\":\"a\","
	  "\"operator\":\"Exists\"},{\"key\":\"z\",\"operator\":\"In\","
	  "\"values\":[\"1\",\"2\"]}]}", "a,z=1,z in (1,2)",
	  "{\"a\":\"x\",\"z\":\"2\"}", false, NULL },
	/* Upstream's validation errors. */
	{ "{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"Exists\","
	  "\"values\":[\"a\"]}]}", NULL, NULL, false,
	  "values: Invalid value: []string{\"a\"}: values set must be empty for "
	  "exists and does not exist" },
	{ "{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"DoesNotExist\","
	  "\"values\":[\"a\",\"b\"]}]}", NULL, NULL, false,
	  "values: Invalid value: []string{\"a\", \"b\"}: values set must be empty "
	  "for exists and does not exist" },
	{ "{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\","
	  "\"values\":[]}]}", NULL, NULL, false,
	  "values: Invalid value: []string(nil): for 'in', 'notin' operators, "
	  "values set can't be empty" },
	{ "{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"NotIn\"}]}",
	  NULL, NULL, false,
	  "values: Invalid value: []string(nil): for 'in', 'notin' operators, "
	  "values set can't be empty" },
	{ "{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"Gt\","
	  "\"values\":[\"1\"]}]}", NULL, NULL, false,
	  "\"Gt\" is not a valid label selector operator" },
	{ "{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"in\","
	  "\"values\":[\"1\"]}]}", NULL, NULL, false,
	  "\"in\" is not a valid label selector operator" },
	{ "{\"matchExpressions\":[{\"key\":\"tier\"}]}", NULL, NULL, false,
	  "\"\" is not a valid label selector operator" },
	{ "{\"matchLabels\":{\"-a\":\"b\"}}", NULL, NULL, false,
	  "key: Invalid value: \"-a\": name part " QNAME_REGEX },
	{ "{\"matchLabels\":{\"a\":\"-b\"}}", NULL, NULL, false,
	  "values[0][a]: Invalid value: \"-b\": " VALUE_REGEX },
	{ "{\"matchExpressions\":[{\"operator\":\"Exists\"}]}", NULL, NULL, false,
	  "key: Invalid value: \"\": name part must be non-empty; name part "
	  QNAME_REGEX },
	{ "{\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"In\","
	  "\"values\":[\"ok\",\"-x\"]}]}", NULL, NULL, false,
	  "values[1][k]: Invalid value: \"-x\": " VALUE_REGEX },
	{ "{\"matchExpressions\":[{\"key\":\"" A64 "\",\"operator\":\"Exists\","
	  "\"values\":[\"x\"]}]}", NULL, NULL, false,
	  "[key: Invalid value: \"" A64 "\": name part must be no more than 63 "
	  "characters, values: Invalid value: []string{\"x\"}: values set must "
	  "be empty for exists and does not exist]" },
	/* JSON of the wrong shape. */
	{ "\"app=web\"", NULL, NULL, false,
	  "label selector: expected an object, got string" },
	{ "{\"matchLabels\":[]}", NULL, NULL, false,
	  "matchLabels: expected an object, got array" },
	{ "{\"matchLabels\":{\"a\":1}}", NULL, NULL, false,
	  "matchLabels[a]: expected a string, got int" },
	{ "{\"matchExpressions\":{}}", NULL, NULL, false,
	  "matchExpressions: expected an array, got object" },
	{ "{\"matchExpressions\":[1]}", NULL, NULL, false,
	  "matchExpressions[0]: expected an object, got int" },
	{ "{\"matchExpressions\":[{\"key\":1,\"operator\":\"Exists\"}]}", NULL,
	  NULL, false, "matchExpressions[0].key: expected a string, got int" },
	{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":true}]}", NULL,
	  NULL, false, "matchExpressions[0].operator: expected a string, got "
	  "boolean" },
	{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\","
	  "\"values\":\"b\"}]}", NULL, NULL, false,
	  "matchExpressions[0].values: expected an array, got string" },
	{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\","
	  "\"values\":[\"b\",null]}]}", NULL, NULL, false,
	  "matchExpressions[0].values[1]: expected a string, got null" },
};

START_TEST(test_label_from_json)
{
	struct kc_label_selector *sel = (struct kc_label_selector *)&sel;
	struct json_object *ls = json(ls_cases[_i].ls);
	struct kc_status st = { 0 };
	char *s = NULL;
	int r;

	r = kc_label_selector_from_json(ls, &sel, &st);
	if (ls_cases[_i].str == NULL) {
		ck_assert_msg(r == KC_EINVALID, "%s converted", ls_cases[_i].ls);
		ck_assert_ptr_eq(sel, (struct kc_label_selector *)&sel);
		assert_message(&st, ls_cases[_i].msg);
		goto out;
	}
	ck_assert_msg(r == 0, "%s: %s", ls_cases[_i].ls ? ls_cases[_i].ls : "NULL",
	    st.message);
	ck_assert_int_eq(kc_label_selector_string(sel, &s), 0);
	ck_assert_str_eq(s, ls_cases[_i].str);
	{
		struct json_object *labels = json(ls_cases[_i].labels);

		ck_assert(kc_label_selector_matches(sel, labels) ==
		    ls_cases[_i].match);
		json_object_put(labels);
	}
	if (ls == NULL || json_object_is_type(ls, json_type_null)) {
		ck_assert(kc_label_selector_is_nothing(sel));
		ck_assert(!kc_label_selector_is_empty(sel));
		ck_assert(!kc_label_selector_matches(sel, NULL));
		ck_assert(!kc_label_selector_requires_exact_match(sel, "a", NULL));
	} else {
		ck_assert(!kc_label_selector_is_nothing(sel));
		ck_assert(kc_label_selector_is_empty(sel) == (s[0] == '\0'));
	}
	kc_free(s);
	sel = kc_label_selector_free(sel);
out:
	if (ls != NULL)
		json_object_put(ls);
}
END_TEST

START_TEST(test_label_from_json_limits)
{
	struct kc_label_selector *sel = NULL;
	struct json_object *ls, *vals, *expr, *exprs;
	struct kc_status st = { 0 };

	ls = json_object_new_object();
	exprs = json_object_new_array();
	ck_assert_int_eq(kc_json_put(ls, "matchExpressions", exprs), 0);
	expr = json_object_new_object();
	ck_assert_int_eq(kc_json_append(exprs, expr), 0);
	ck_assert_int_eq(kc_json_set_str(expr, "key", "k"), 0);
	ck_assert_int_eq(kc_json_set_str(expr, "operator", "In"), 0);
	vals = json_object_new_array();
	ck_assert_int_eq(kc_json_put(expr, "values", vals), 0);
	for (int i = 0; i < KC_SELECTOR_VALUES_MAX; i++) {
		char v[16];

		(void)snprintf(v, sizeof(v), "v%d", i);
		ck_assert_int_eq(kc_json_append(vals, json_object_new_string(v)), 0);
	}
	ck_assert_int_eq(kc_label_selector_from_json(ls, &sel, &st), 0);
	sel = kc_label_selector_free(sel);
	ck_assert_int_eq(kc_json_append(vals, json_object_new_string("x")), 0);
	ck_assert_int_eq(kc_label_selector_from_json(ls, &sel, &st), KC_EINVALID);
	ck_assert_str_eq(st.message,
	    "matchExpressions[0].values: more than 4096 values");

	json_object_array_del_idx(exprs, 0, 1);
	for (int i = 0; i <= KC_SELECTOR_REQS_MAX; i++) {
		expr = json_object_new_object();
		ck_assert_int_eq(kc_json_append(exprs, expr), 0);
		ck_assert_int_eq(kc_json_set_str(expr, "key", "k"), 0);
		ck_assert_int_eq(kc_json_set_str(expr, "operator", "Exists"), 0);
	}
	ck_assert_int_eq(kc_label_selector_from_json(ls, &sel, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "label selector has more than 1024 requirements");
	ck_assert_ptr_null(sel);
	json_object_put(ls);
}
END_TEST

START_TEST(test_label_set_limits)
{
	struct kc_label_selector *sel = NULL;
	struct json_object *set = json_object_new_object();
	struct kc_status st = { 0 };

	for (int i = 0; i < KC_SELECTOR_REQS_MAX; i++) {
		char k[16];

		(void)snprintf(k, sizeof(k), "k%d", i);
		ck_assert_int_eq(kc_json_set_str(set, k, "v"), 0);
	}
	ck_assert_int_eq(kc_label_selector_from_set(set, &sel, &st), 0);
	ck_assert(kc_label_selector_matches(sel, set));
	sel = kc_label_selector_free(sel);
	ck_assert_int_eq(kc_json_set_str(set, "one-more", "v"), 0);
	ck_assert_int_eq(kc_label_selector_from_set(set, &sel, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "label set has more than 1024 labels");
	ck_assert_ptr_null(sel);
	json_object_put(set);
}
END_TEST

/* A canonical string past KC_SELECTOR_STRING_MAX is -E2BIG. */
START_TEST(test_label_string_too_big)
{
	_cleanup_(kc_json_putp) struct json_object *ls = json_object_new_object();
	struct json_object *exprs = json_object_new_array();
	struct kc_label_selector *sel = NULL;
	struct kc_status st = { 0 };
	char *s = (char *)&st;

	ck_assert_int_eq(kc_json_put(ls, "matchExpressions", exprs), 0);
	for (int e = 0; e < 5; e++) {
		struct json_object *expr = json_object_new_object();
		struct json_object *vals = json_object_new_array();

		ck_assert_int_eq(kc_json_append(exprs, expr), 0);
		ck_assert_int_eq(kc_json_set_str(expr, "key", "k"), 0);
		ck_assert_int_eq(kc_json_set_str(expr, "operator", "In"), 0);
		ck_assert_int_eq(kc_json_put(expr, "values", vals), 0);
		for (int i = 0; i < KC_SELECTOR_VALUES_MAX; i++) {
			char v[64];

			(void)snprintf(v, sizeof(v), "v%060d", e * 10000 + i);
			ck_assert_int_eq(kc_json_append(vals,
			    json_object_new_string(v)), 0);
		}
	}
	ck_assert_int_eq(kc_label_selector_from_json(ls, &sel, &st), 0);
	ck_assert_int_eq(kc_label_selector_string(sel, &s), -E2BIG);
	ck_assert_ptr_eq(s, (char *)&st);
	kc_label_selector_free(sel);
}
END_TEST

START_TEST(test_label_from_set)
{
	static const struct {
		const char	*set;
		const char	*str;
		const char	*msg;
	} cases[] = {
		{ NULL, "", NULL },
		{ "null", "", NULL },
		{ "{}", "", NULL },
		{ "{\"run\":\"r1\",\"app\":\"trainyard\"}", "app=trainyard,run=r1",
		  NULL },
		{ "{\"a\":\"\"}", "a=", NULL },
		{ "[]", NULL, "label set: expected an object, got array" },
		{ "{\"a\":null}", NULL, "labels[a]: expected a string, got null" },
		{ "{\"a b\":\"c\"}", NULL,
		  "key: Invalid value: \"a b\": name part " QNAME_REGEX },
		{ "{\"a\":\"c d\"}", NULL,
		  "values[0][a]: Invalid value: \"c d\": " VALUE_REGEX },
	};

	for (size_t i = 0; i < KC_ARRAY_SIZE(cases); i++) {
		struct kc_label_selector *sel = NULL;
		struct json_object *set = json(cases[i].set);
		struct kc_status st = { 0 };
		char *s = NULL;
		int r;

		r = kc_label_selector_from_set(set, &sel, &st);
		if (cases[i].str == NULL) {
			ck_assert_int_eq(r, KC_EINVALID);
			ck_assert_ptr_null(sel);
			assert_message(&st, cases[i].msg);
		} else {
			ck_assert_msg(r == 0, "%s: %s", cases[i].set, st.message);
			ck_assert(!kc_label_selector_is_nothing(sel));
			ck_assert_int_eq(kc_label_selector_string(sel, &s), 0);
			ck_assert_str_eq(s, cases[i].str);
			if (set != NULL && !json_object_is_type(set, json_type_null))
				ck_assert(kc_label_selector_matches(sel, set));
			kc_free(s);
		}
		kc_label_selector_free(sel);
		if (set != NULL)
			json_object_put(set);
	}
}
END_TEST

/*
 * Label selectors: allocation failures
 */

START_TEST(test_label_parse_oom)
{
	static const char *const texts[] = {
		"",
		"environment in (production, qa),tier notin (frontend,backend),"
		    "partition,!canary,x>5,y<10,z=a,w!=b,v==c",
		"x in (a,,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t),a,b,c,d,e,f,g",
		"a in (b",
		"-bad",
	};

	for (size_t t = 0; t < KC_ARRAY_SIZE(texts); t++) {
		struct kc_label_selector *want = NULL;
		char *want_s = NULL;
		int want_r;

		want_r = kc_label_selector_parse(texts[t], &want, NULL);
		if (want_r == 0)
			ck_assert_int_eq(kc_label_selector_string(want, &want_s), 0);
		for (size_t budget = 0;; budget++) {
			struct kc_label_selector *sel = NULL;
			char *s = NULL;
			int r;

			fail_alloc_after(budget);
			r = kc_label_selector_parse(texts[t], &sel, NULL);
			fail_alloc_after(SIZE_MAX);
			if (r == -ENOMEM) {
				ck_assert_ptr_null(sel);
				continue;
			}
			ck_assert_int_eq(r, want_r);
			if (r < 0) {
				ck_assert_ptr_null(sel);
				break;
			}
			ck_assert_int_eq(kc_label_selector_string(sel, &s), 0);
			ck_assert_str_eq(s, want_s);
			kc_free(s);
			kc_label_selector_free(sel);
			break;
		}
		kc_free(want_s);
		kc_label_selector_free(want);
	}
}
END_TEST

START_TEST(test_label_from_json_oom)
{
	_cleanup_(kc_json_putp) struct json_object *ls = json(
	    "{\"matchLabels\":{\"app\":\"web\",\"tier\":\"db\"},"
	    "\"matchExpressions\":[{\"key\":\"env\",\"operator\":\"In\","
	    "\"values\":[\"qa\",\"prod\",\"dev\"]},{\"key\":\"canary\","
	    "\"operator\":\"DoesNotExist\"}]}");
	_cleanup_(kc_json_putp) struct json_object *set = json(
	    "{\"app\":\"web\",\"tier\":\"db\"}");

	for (size_t budget = 0;; budget++) {
		struct kc_label_selector *sel = NULL;
		int r;

		fail_alloc_after(budget);
		r = kc_label_selector_from_json(ls, &sel, NULL);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			char *s = NULL;

			ck_assert_int_eq(kc_label_selector_string(sel, &s), 0);
			ck_assert_str_eq(s, "app=web,!canary,env in (dev,prod,qa),tier=db");
			kc_free(s);
			kc_label_selector_free(sel);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(sel);
	}
	for (size_t budget = 0;; budget++) {
		struct kc_label_selector *sel = NULL;
		int r;

		fail_alloc_after(budget);
		r = kc_label_selector_from_json(NULL, &sel, NULL);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert(kc_label_selector_is_nothing(sel));
			kc_label_selector_free(sel);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(sel);
	}
	for (size_t budget = 0;; budget++) {
		struct kc_label_selector *sel = NULL;
		int r;

		fail_alloc_after(budget);
		r = kc_label_selector_from_set(set, &sel, NULL);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert(kc_label_selector_matches(sel, set));
			kc_label_selector_free(sel);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(sel);
	}
}
END_TEST

START_TEST(test_label_string_oom)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *sel = NULL;

	ck_assert_int_eq(kc_label_selector_parse("a in (x,y),b,!c,d>1", &sel,
	    NULL), 0);
	for (size_t budget = 0;; budget++) {
		char *s = (char *)&budget;
		int r;

		fail_alloc_after(budget);
		r = kc_label_selector_string(sel, &s);
		fail_alloc_after(SIZE_MAX);
		if (r == 0) {
			ck_assert_str_eq(s, "a in (x,y),b,!c,d>1");
			kc_free(s);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_eq(s, (char *)&budget);
	}
}
END_TEST

/* Many threads match one selector at once; ASan and the results check it. */
struct match_job {
	const struct kc_label_selector	*sel;
	const struct json_object	*yes, *no;
	int				 errors;
};

static void *
match_thread(void *arg)
{
	struct match_job *j = arg;

	for (int i = 0; i < 2000; i++)
		if (!kc_label_selector_matches(j->sel, j->yes) ||
		    kc_label_selector_matches(j->sel, j->no))
			j->errors++;
	return NULL;
}

START_TEST(test_label_threads)
{
	_cleanup_(kc_label_selector_freep) struct kc_label_selector *sel = NULL;
	_cleanup_(kc_json_putp) struct json_object *yes =
	    json("{\"env\":\"qa\",\"n\":\"7\"}");
	_cleanup_(kc_json_putp) struct json_object *no =
	    json("{\"env\":\"qa\",\"n\":\"3\"}");
	struct match_job jobs[4];
	pthread_t th[4];

	ck_assert_int_eq(kc_label_selector_parse("env in (qa,prod),n>5,!canary",
	    &sel, NULL), 0);
	for (int i = 0; i < 4; i++) {
		jobs[i] = (struct match_job){ sel, yes, no, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, match_thread,
		    &jobs[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_int_eq(jobs[i].errors, 0);
	}
}
END_TEST

/*
 * Field selectors
 */

static const struct {
	const char	*in;
	const char	*out;
} field_string[] = {
	{ "", "" },
	{ ",", "" },
	{ ",,,", "" },
	{ "=", "" },			/* empty field and value: dropped */
	{ "==", "" },
	{ "!=", "" },
	{ "a=b", "a=b" },
	{ "a==b", "a=b" },
	{ "a!=b", "a!=b" },
	{ "a=", "a=" },
	{ "a!=", "a!=" },
	{ "=b", "=b" },
	{ "a=b,,c=d", "a=b,c=d" },
	{ "b=1,a=2", "a=2,b=1" },	/* raw terms sorted */
	{ "status.phase!=Running,metadata.name=foo",
	  "metadata.name=foo,status.phase!=Running" },
	{ "x=a\\,b", "x=a\\,b" },
	{ "x=a\\=b", "x=a\\=b" },
	{ "x=a\\\\b", "x=a\\\\b" },
	{ "x=\\\\,y=1", "x=\\\\,y=1" },
	{ "a = b", "a = b" },		/* no white space trimming */
};

START_TEST(test_field_string)
{
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *sel = NULL;
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *again = NULL;
	_cleanup_(kc_freep) char *s = NULL, *s2 = NULL;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_field_selector_parse(field_string[_i].in, &sel, &st) == 0,
	    "parse '%s': %s", field_string[_i].in, st.message);
	ck_assert_int_eq(kc_field_selector_string(sel, &s), 0);
	ck_assert_str_eq(s, field_string[_i].out);
	ck_assert(kc_field_selector_is_empty(sel) == (s[0] == '\0'));
	ck_assert_int_eq(kc_field_selector_parse(s, &again, &st), 0);
	ck_assert_int_eq(kc_field_selector_string(again, &s2), 0);
	ck_assert_str_eq(s2, s);
}
END_TEST

START_TEST(test_field_terms)
{
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *sel = NULL;
	const char *f, *v;
	enum kc_field_op op;

	ck_assert_int_eq(kc_field_selector_parse(
	    "spec.nodeName=n\\,1,metadata.name!=a\\=b\\\\,status.phase==Running,"
	    "=x", &sel, NULL), 0);
	ck_assert_uint_eq(kc_field_selector_count(sel), 4);
	ck_assert(kc_field_selector_term(sel, 0, &f, &op, &v));
	ck_assert_str_eq(f, "");
	ck_assert_int_eq(op, KC_FIELD_EQ);
	ck_assert_str_eq(v, "x");
	ck_assert(kc_field_selector_term(sel, 1, &f, &op, &v));
	ck_assert_str_eq(f, "metadata.name");
	ck_assert_int_eq(op, KC_FIELD_NEQ);
	ck_assert_str_eq(v, "a=b\\");
	ck_assert(kc_field_selector_term(sel, 2, &f, NULL, &v));
	ck_assert_str_eq(f, "spec.nodeName");
	ck_assert_str_eq(v, "n,1");
	ck_assert(kc_field_selector_term(sel, 3, NULL, &op, NULL));
	ck_assert_int_eq(op, KC_FIELD_EQ);
	ck_assert(!kc_field_selector_term(sel, 4, &f, &op, &v));
	ck_assert(!kc_field_selector_term(NULL, 0, &f, &op, &v));
	ck_assert_uint_eq(kc_field_selector_count(NULL), 0);
	ck_assert(kc_field_selector_is_empty(NULL));

	ck_assert(kc_field_selector_requires_exact_match(sel, "spec.nodeName", &v));
	ck_assert_str_eq(v, "n,1");
	ck_assert(kc_field_selector_requires_exact_match(sel, "status.phase", NULL));
	ck_assert(!kc_field_selector_requires_exact_match(sel, "metadata.name", &v));
	ck_assert(!kc_field_selector_requires_exact_match(sel, "nope", &v));
	ck_assert(!kc_field_selector_requires_exact_match(NULL, "nope", &v));
}
END_TEST

static const struct {
	const char	*in;
	const char	*msg;
} field_error[] = {
	{ "a", "invalid selector: 'a'; can't understand 'a'" },
	{ "a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'" },
	{ "a!b", "invalid selector: 'a!b'; can't understand 'a!b'" },
	{ "a=b,\\,", "invalid selector: 'a=b,\\,'; can't understand '\\,'" },
	{ "x=a\\b", "invalid field selector: invalid escape sequence: \\b" },
	{ "x=a\\", "invalid field selector: invalid escape sequence: \\" },
	{ "x=\\\xc3\xa9", "invalid field selector: invalid escape sequence: \\\xc3\xa9" },
	{ "x=a=b", "invalid field selector: unescaped character in value: 61" },
	{ "x===b", "invalid field selector: unescaped character in value: 61" },
	{ "a=b!=c", "invalid field selector: unescaped character in value: 61" },
	{ "x!==b", "invalid field selector: unescaped character in value: 61" },
};

START_TEST(test_field_error)
{
	struct kc_field_selector *sel = (struct kc_field_selector *)&sel;
	struct kc_status st = { 0 };
	int r;

	r = kc_field_selector_parse(field_error[_i].in, &sel, &st);
	ck_assert_msg(r == KC_EINVALID, "'%s' parsed (%d)", field_error[_i].in, r);
	ck_assert_ptr_eq(sel, (struct kc_field_selector *)&sel);
	assert_message(&st, field_error[_i].msg);
	ck_assert_int_eq(kc_field_selector_parse(field_error[_i].in, &sel, NULL),
	    KC_EINVALID);
}
END_TEST

START_TEST(test_field_null_text)
{
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *sel = NULL;
	_cleanup_(kc_freep) char *s = NULL;

	ck_assert_int_eq(kc_field_selector_parse(NULL, &sel, NULL), 0);
	ck_assert(kc_field_selector_is_empty(sel));
	ck_assert(kc_field_selector_matches_json(sel, NULL));
	ck_assert_int_eq(kc_field_selector_string(sel, &s), 0);
	ck_assert_str_eq(s, "");
	s = kc_free(s);
	ck_assert_int_eq(kc_field_selector_string(NULL, &s), 0);
	ck_assert_str_eq(s, "");
}
END_TEST

START_TEST(test_field_unescape_utf8)
{
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *a = NULL;
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *b = NULL;
	const char *v;

	/* Without escapes the value is kept byte for byte... */
	ck_assert_int_eq(kc_field_selector_parse("x=\xff\xc3\xa9", &a, NULL), 0);
	ck_assert(kc_field_selector_term(a, 0, NULL, NULL, &v));
	ck_assert_str_eq(v, "\xff\xc3\xa9");
	/* ...with them, Go's rune loop turns invalid bytes into U+FFFD. */
	ck_assert_int_eq(kc_field_selector_parse("x=\xff\\,\xc3\xa9", &b, NULL), 0);
	ck_assert(kc_field_selector_term(b, 0, NULL, NULL, &v));
	ck_assert_str_eq(v, "\xef\xbf\xbd,\xc3\xa9");
}
END_TEST

START_TEST(test_field_limits)
{
	struct kc_field_selector *sel = NULL;
	struct kc_status st = { 0 };
	char *big;
	size_t n = 0;

	big = kc_malloc(KC_SELECTOR_MAX + 2);
	ck_assert_ptr_nonnull(big);
	memset(big, ',', KC_SELECTOR_MAX + 1);
	big[KC_SELECTOR_MAX] = '\0';
	ck_assert_int_eq(kc_field_selector_parse(big, &sel, &st), 0);
	ck_assert(kc_field_selector_is_empty(sel));
	sel = kc_field_selector_free(sel);
	big[KC_SELECTOR_MAX] = ',';
	big[KC_SELECTOR_MAX + 1] = '\0';
	ck_assert_int_eq(kc_field_selector_parse(big, &sel, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "field selector longer than 65536 bytes");
	ck_assert_ptr_null(sel);

	for (int i = 0; i < KC_SELECTOR_REQS_MAX; i++)
		n += (size_t)snprintf(big + n, KC_SELECTOR_MAX - n, "%sa=%d",
		    i ? "," : "", i);
	ck_assert_int_eq(kc_field_selector_parse(big, &sel, &st), 0);
	ck_assert_uint_eq(kc_field_selector_count(sel), KC_SELECTOR_REQS_MAX);
	sel = kc_field_selector_free(sel);
	(void)snprintf(big + n, KC_SELECTOR_MAX - n, ",b=1");
	ck_assert_int_eq(kc_field_selector_parse(big, &sel, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "field selector has more than 1024 terms");
	ck_assert_ptr_null(sel);
	kc_free(big);
}
END_TEST

static const char pod_json[] =
    "{\"metadata\":{\"name\":\"p1\",\"namespace\":\"team-a\","
    "\"labels\":{\"app\":\"web\"}},"
    "\"spec\":{\"hostNetwork\":true,\"priority\":5,\"restartPolicy\":\"Never\","
    "\"containers\":[]},"
    "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.0.0.7\"}}";

static const struct {
	const char	*sel;
	bool		 match;
} field_match[] = {
	{ "", true },
	{ "metadata.name=p1", true },
	{ "metadata.name==p1", true },
	{ "metadata.name=p2", false },
	{ "metadata.name!=p1", false },
	{ "metadata.name!=p2", true },
	{ "metadata.namespace=team-a,status.phase=Running", true },
	{ "metadata.namespace=team-a,status.phase=Pending", false },
	{ "status.phase!=Succeeded,status.phase!=Failed", true },
	{ "status.podIP=10.0.0.7", true },
	/* A missing field reads as "". */
	{ "spec.nodeName=", true },
	{ "spec.nodeName!=", false },
	{ "spec.nodeName=n1", false },
	{ "spec.nodeName!=n1", true },
	{ "nothing.at.all=", true },
	/* Booleans and integers print as strconv does. */
	{ "spec.hostNetwork=true", true },
	{ "spec.hostNetwork=false", false },
	{ "spec.priority=5", true },
	/* Objects, arrays and bad paths are absent. */
	{ "spec.containers=", true },
	{ "metadata.labels=", true },
	{ "metadata..name=", true },
	{ "metadata.name.x=", true },
	{ ".metadata.name=p1", false },
	{ "metadata.name.=p1", false },
};

START_TEST(test_field_match_json)
{
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *sel = NULL;
	_cleanup_(kc_json_putp) struct json_object *pod = json(pod_json);
	struct kc_status st = { 0 };

	ck_assert_msg(kc_field_selector_parse(field_match[_i].sel, &sel, &st) == 0,
	    "parse '%s': %s", field_match[_i].sel, st.message);
	ck_assert_msg(kc_field_selector_matches_json(sel, pod) == field_match[_i].match,
	    "'%s': want %s", field_match[_i].sel,
	    field_match[_i].match ? "match" : "no match");
}
END_TEST

static const char *
get_event_field(void *arg, const char *field)
{
	const struct json_object *ev = arg;

	if (strcmp(field, "source") == 0)
		return kc_json_str(ev, "source", "component");
	if (strcmp(field, "none") == 0)
		return NULL;
	return kc_json_str(ev, field);
}

START_TEST(test_field_match_callback)
{
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *a = NULL;
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *b = NULL;
	_cleanup_(kc_json_putp) struct json_object *ev = json(
	    "{\"reason\":\"Started\",\"source\":{\"component\":\"kubelet\"}}");

	ck_assert_int_eq(kc_field_selector_parse("source=kubelet,reason=Started",
	    &a, NULL), 0);
	ck_assert(kc_field_selector_matches(a, get_event_field, ev));
	ck_assert_int_eq(kc_field_selector_parse("none=,reason!=Killing", &b, NULL), 0);
	ck_assert(kc_field_selector_matches(b, get_event_field, ev));
	ck_assert(kc_field_selector_matches(NULL, get_event_field, ev));
}
END_TEST

START_TEST(test_field_json_lookup)
{
	_cleanup_(kc_json_putp) struct json_object *pod = json(pod_json);
	char buf[32], tiny[1];

	ck_assert_str_eq(kc_field_json_lookup(pod, "metadata.name", buf,
	    sizeof(buf)), "p1");
	ck_assert_str_eq(kc_field_json_lookup(pod, "spec.hostNetwork", buf,
	    sizeof(buf)), "true");
	ck_assert_str_eq(kc_field_json_lookup(pod, "spec.priority", buf,
	    sizeof(buf)), "5");
	ck_assert_ptr_null(kc_field_json_lookup(pod, "spec.priority", tiny,
	    sizeof(tiny)));
	ck_assert_ptr_null(kc_field_json_lookup(pod, "spec", buf, sizeof(buf)));
	ck_assert_ptr_null(kc_field_json_lookup(pod, "", buf, sizeof(buf)));
	ck_assert_ptr_null(kc_field_json_lookup(pod, "spec.nodeName", buf,
	    sizeof(buf)));
	ck_assert_ptr_null(kc_field_json_lookup(NULL, "spec", buf, sizeof(buf)));
}
END_TEST

START_TEST(test_field_check)
{
	static const char *const pod_fields[] = {
		"metadata.name", "metadata.namespace", "spec.nodeName",
		"status.phase", NULL,
	};
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *ok = NULL;
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *bad = NULL;
	_cleanup_(kc_field_selector_freep) struct kc_field_selector *spaced = NULL;
	struct kc_status st = { 0 };

	ck_assert_int_eq(kc_field_selector_parse(
	    "metadata.name=a,status.phase!=Failed", &ok, NULL), 0);
	ck_assert_int_eq(kc_field_selector_check(ok, pod_fields, &st), 0);
	ck_assert_int_eq(kc_field_selector_check(NULL, pod_fields, &st), 0);
	ck_assert_int_eq(kc_field_selector_parse("metadata.name=a,spec.foo=b",
	    &bad, NULL), 0);
	ck_assert_int_eq(kc_field_selector_check(bad, pod_fields, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "field label not supported: spec.foo");
	ck_assert_int_eq(kc_field_selector_check(ok, NULL, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "field label not supported: metadata.name");
	ck_assert_int_eq(kc_field_selector_parse("metadata.name = a", &spaced,
	    NULL), 0);
	ck_assert_int_eq(kc_field_selector_check(spaced, pod_fields, NULL),
	    KC_EINVALID);
}
END_TEST

START_TEST(test_field_oom)
{
	static const char *const texts[] = {
		"",
		"metadata.name=a\\,b,status.phase!=Running,spec.nodeName==n1,=",
		"x=\xff\\=y",
		"x=a\\b",
	};

	for (size_t t = 0; t < KC_ARRAY_SIZE(texts); t++) {
		struct kc_field_selector *want = NULL;
		char *want_s = NULL;
		int want_r;

		want_r = kc_field_selector_parse(texts[t], &want, NULL);
		if (want_r == 0)
			ck_assert_int_eq(kc_field_selector_string(want, &want_s), 0);
		for (size_t budget = 0;; budget++) {
			struct kc_field_selector *sel = NULL;
			char *s = NULL;
			int r;

			fail_alloc_after(budget);
			r = kc_field_selector_parse(texts[t], &sel, NULL);
			fail_alloc_after(SIZE_MAX);
			if (r == -ENOMEM) {
				ck_assert_ptr_null(sel);
				continue;
			}
			ck_assert_int_eq(r, want_r);
			if (r < 0)
				break;
			for (size_t b2 = 0;; b2++) {
				fail_alloc_after(b2);
				r = kc_field_selector_string(sel, &s);
				fail_alloc_after(SIZE_MAX);
				if (r == 0)
					break;
				ck_assert_int_eq(r, -ENOMEM);
			}
			ck_assert_str_eq(s, want_s);
			kc_free(s);
			kc_field_selector_free(sel);
			break;
		}
		kc_free(want_s);
		kc_field_selector_free(want);
	}
}
END_TEST

Suite *
selector_suite(void)
{
	Suite *s = suite_create("selector");
	TCase *tc;

	tc = tcase_create("label");
	tcase_add_loop_test(tc, test_label_match, 0, KC_ARRAY_SIZE(label_match));
	tcase_add_test(tc, test_label_match_obj);
	tcase_add_loop_test(tc, test_label_string, 0, KC_ARRAY_SIZE(label_string));
	tcase_add_test(tc, test_label_null_text);
	tcase_add_test(tc, test_label_exact_match);
	tcase_add_loop_test(tc, test_label_error, 0, KC_ARRAY_SIZE(label_error));
	tcase_add_test(tc, test_label_quoting);
	tcase_add_test(tc, test_label_quoting_bytes);
	tcase_add_test(tc, test_label_key_limits);
	tcase_add_test(tc, test_label_long_message);
	tcase_add_test(tc, test_label_limits);
	tcase_add_test(tc, test_label_threads);
	suite_add_tcase(s, tc);

	tc = tcase_create("label_selector_json");
	tcase_add_loop_test(tc, test_label_from_json, 0, KC_ARRAY_SIZE(ls_cases));
	tcase_add_test(tc, test_label_from_json_limits);
	tcase_add_test(tc, test_label_from_set);
	tcase_add_test(tc, test_label_set_limits);
	tcase_add_test(tc, test_label_string_too_big);
	suite_add_tcase(s, tc);

	tc = tcase_create("label_oom");
	tcase_add_test(tc, test_label_parse_oom);
	tcase_add_test(tc, test_label_from_json_oom);
	tcase_add_test(tc, test_label_string_oom);
	suite_add_tcase(s, tc);

	tc = tcase_create("field");
	tcase_add_loop_test(tc, test_field_string, 0, KC_ARRAY_SIZE(field_string));
	tcase_add_test(tc, test_field_terms);
	tcase_add_loop_test(tc, test_field_error, 0, KC_ARRAY_SIZE(field_error));
	tcase_add_test(tc, test_field_null_text);
	tcase_add_test(tc, test_field_unescape_utf8);
	tcase_add_test(tc, test_field_limits);
	tcase_add_loop_test(tc, test_field_match_json, 0, KC_ARRAY_SIZE(field_match));
	tcase_add_test(tc, test_field_match_callback);
	tcase_add_test(tc, test_field_json_lookup);
	tcase_add_test(tc, test_field_check);
	tcase_add_test(tc, test_field_oom);
	suite_add_tcase(s, tc);
	return s;
}

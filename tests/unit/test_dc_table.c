/*
 * test_dc_table.c: the devcluster's JSONPath engine and Table printing
 * against upstream's behaviour (client-go util/jsonpath, apiextensions'
 * tableconvertor, pkg/printers/internalversion, duration.HumanDuration)
 * and the samples of KUBE-API.md section 5.11.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include <kc/alloc.h>
#include <kc/buf.h>
#include <kc/err.h>
#include <kc/json.h>
#include <kc/str.h>

#include "../../devcluster/jsonpath.h"
#include "../../devcluster/table.h"
#include "testutil.h"

#define S	INT64_C(1000000000)	/* nanoseconds per second */
#define M	(60 * S)
#define H	(60 * M)
#define D	(24 * H)
#define Y	(365 * D)

static struct json_object *
json(const char *text)
{
	struct json_object *o = NULL;
	struct kc_status st = { 0 };

	ck_assert_msg(kc_json_parse(text, strlen(text), &o, &st) == 0,
	    "bad test JSON %s: %s", text, st.message);
	return o;
}

static struct json_object *
fixture(const char *name)
{
	char path[256];
	size_t len;
	char *text;
	struct json_object *o;

	(void)snprintf(path, sizeof(path), "table/%s", name);
	text = tu_fixture(path, &len);
	o = json(text);
	kc_free(text);
	return o;
}

static time_t
at(const char *ts)
{
	int64_t sec;
	int32_t nsec;

	ck_assert_int_eq(table_time_parse(ts, &sec, &nsec), 0);
	return (time_t)sec;
}

static void
assert_json_eq(const struct json_object *got, const struct json_object *want,
    const char *what)
{
	if (!kc_json_equal(got, want)) {
		char *g = kc_json_dump(got, NULL), *w = kc_json_dump(want, NULL);

		ck_abort_msg("%s:\n got  %s\n want %s", what, g, w);
		kc_free(g);
		kc_free(w);
	}
}

static void
assert_json_text(const struct json_object *got, const char *want, const char *what)
{
	struct json_object *w = json(want);

	assert_json_eq(got, w, what);
	json_object_put(w);
}

/*
 * Ages
 */

static const struct {
	int64_t		 ns;
	const char	*want;
} durations[] = {
	{ -3 * S, "<invalid>" },
	{ -2 * S, "<invalid>" },
	{ -2 * S + 1, "0s" },		/* int(-1.999999999) == -1 */
	{ -1 * S, "0s" },
	{ -1, "0s" },
	{ 0, "0s" },
	{ S - 1, "0s" },
	{ 1 * S, "1s" },
	{ 95 * S, "95s" },
	{ 119 * S + S - 1, "119s" },
	{ 120 * S, "2m" },
	{ 121 * S, "2m1s" },
	{ 5 * M, "5m" },
	{ 5 * M + 12 * S, "5m12s" },
	{ 10 * M - 1, "9m59s" },
	{ 10 * M, "10m" },
	{ 47 * M + 59 * S, "47m" },
	{ 3 * H - 1, "179m" },
	{ 3 * H, "3h" },
	{ 5 * H + 7 * M + 59 * S, "5h7m" },
	{ 5 * H, "5h" },
	{ 8 * H - 1, "7h59m" },
	{ 8 * H, "8h" },
	{ 17 * H + 59 * M, "17h" },
	{ 48 * H - 1, "47h" },
	{ 48 * H, "2d" },
	{ 3 * D + 4 * H + 30 * M, "3d4h" },
	{ 3 * D, "3d" },
	{ 8 * D - 1, "7d23h" },
	{ 8 * D, "8d" },
	{ 41 * D + 23 * H, "41d" },
	{ 2 * Y - 1, "729d" },
	{ 2 * Y, "2y" },
	{ 3 * Y + 12 * D, "3y12d" },
	{ 3 * Y, "3y" },
	{ 8 * Y - 1, "7y364d" },
	{ 8 * Y, "8y" },
	{ 9 * Y + 200 * D, "9y" },
	{ INT64_MAX, "292y" },
	{ INT64_MIN, "<invalid>" },
};

START_TEST(test_durations)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(durations); i++) {
		char buf[TABLE_AGE_MAX];

		table_human_duration(durations[i].ns, buf);
		ck_assert_msg(strcmp(buf, durations[i].want) == 0,
		    "duration %lld: got %s, want %s", (long long)durations[i].ns, buf,
		    durations[i].want);
	}
}
END_TEST

static const struct {
	const char	*ts;
	const char	*now;
	const char	*want;
} ages[] = {
	{ NULL, "2026-01-15T10:00:00Z", "<unknown>" },
	{ "", "2026-01-15T10:00:00Z", "<unknown>" },
	{ "null", "2026-01-15T10:00:00Z", "<unknown>" },
	{ "0001-01-01T00:00:00Z", "2026-01-15T10:00:00Z", "<unknown>" },
	{ "0001-01-01T01:00:00+01:00", "2026-01-15T10:00:00Z", "<unknown>" },
	{ "yesterday", "2026-01-15T10:00:00Z", "<invalid>" },
	{ "2026-02-30T00:00:00Z", "2026-03-15T10:00:00Z", "<invalid>" },
	{ "2026-01-15T10:00:00z", "2026-01-15T10:00:00Z", "<invalid>" },
	{ "2026-01-15t10:00:00Z", "2026-01-15T10:00:00Z", "<invalid>" },
	{ "2026-01-15T10:00:00", "2026-01-15T10:00:00Z", "<invalid>" },
	{ "2026-01-15T10:00:60Z", "2026-01-15T10:00:00Z", "<invalid>" },
	{ "2026-01-15T10:00:00Z ", "2026-01-15T10:00:00Z", "<invalid>" },
	{ "2026-01-15T10:00:00Z", "2026-01-15T10:05:12Z", "5m12s" },
	{ "2026-01-15T10:00:00Z", "2026-01-15T10:00:00Z", "0s" },
	{ "2026-01-15T10:00:01Z", "2026-01-15T10:00:00Z", "0s" },
	{ "2026-01-15T10:00:02Z", "2026-01-15T10:00:00Z", "<invalid>" },
	{ "2026-01-15T10:00:01.5Z", "2026-01-15T10:00:00Z", "0s" },
	{ "2026-01-15T10:00:02.5Z", "2026-01-15T10:00:00Z", "<invalid>" },
	{ "2026-01-15T09:59:59.5Z", "2026-01-15T10:00:00Z", "0s" },
	{ "2026-01-15T09:57:59.5Z", "2026-01-15T10:00:00Z", "2m" },
	{ "2026-01-15T09:58:00.000000001Z", "2026-01-15T10:00:00Z", "119s" },
	{ "2026-01-15T11:00:00+01:00", "2026-01-15T10:00:47Z", "47s" },
	{ "2026-01-15T05:00:00-05:00", "2026-01-15T10:47:00Z", "47m" },
	{ "2026-01-15T9:00:00Z", "2026-01-15T10:00:00Z", "60m" },
	{ "2024-02-29T00:00:00Z", "2026-03-15T00:00:00Z", "2y15d" },
	{ "1000-01-01T00:00:00Z", "2026-01-15T10:00:00Z", "292y" },
	{ "2026-01-15T10:00:00,25Z", "2026-01-15T10:03:00Z", "2m59s" },
};

START_TEST(test_ages)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(ages); i++) {
		char buf[TABLE_AGE_MAX];

		table_age(ages[i].ts, at(ages[i].now), buf);
		ck_assert_msg(strcmp(buf, ages[i].want) == 0, "age of %s at %s: got %s, "
		    "want %s", ages[i].ts != NULL ? ages[i].ts : "NULL", ages[i].now, buf,
		    ages[i].want);
	}
}
END_TEST

START_TEST(test_time_parse)
{
	int64_t sec = 7;
	int32_t nsec = 7;

	ck_assert_int_eq(table_time_parse("1970-01-01T00:00:00Z", &sec, &nsec), 0);
	ck_assert_int_eq(sec, 0);
	ck_assert_int_eq(nsec, 0);
	ck_assert_int_eq(table_time_parse("2026-01-15T10:00:00.123456789123Z", &sec,
	    &nsec), 0);
	ck_assert_int_eq(sec, 1768471200);
	ck_assert_int_eq(nsec, 123456789);
	ck_assert_int_eq(table_time_parse("2026-01-15T10:00:00.5+00:30", &sec, &nsec), 0);
	ck_assert_int_eq(sec, 1768471200 - 1800);
	ck_assert_int_eq(nsec, 500000000);
	ck_assert_int_eq(table_time_parse("0001-01-01T00:00:00Z", &sec, &nsec), 0);
	ck_assert_int_eq(sec, INT64_C(-62135596800));
	ck_assert_int_eq(table_time_parse("2000-02-29T23:59:59Z", &sec, &nsec), 0);
	sec = 7;
	nsec = 7;
	ck_assert_int_eq(table_time_parse("1900-02-29T00:00:00Z", &sec, &nsec), -EINVAL);
	ck_assert_int_eq(table_time_parse("2026-13-01T00:00:00Z", &sec, &nsec), -EINVAL);
	ck_assert_int_eq(table_time_parse("2026-01-15T24:00:00Z", &sec, &nsec), -EINVAL);
	ck_assert_int_eq(table_time_parse("2026-01-15T10:60:00Z", &sec, &nsec), -EINVAL);
	ck_assert_int_eq(table_time_parse("2026-01-15T10:00:00.Z", &sec, &nsec), -EINVAL);
	ck_assert_int_eq(table_time_parse("2026-01-15T10:00:00+0100", &sec, &nsec), -EINVAL);
	ck_assert_int_eq(table_time_parse("2026-01-15T10:00:00+25:00", &sec, &nsec), -EINVAL);
	ck_assert_int_eq(table_time_parse("26-01-15T10:00:00Z", &sec, &nsec), -EINVAL);
	ck_assert_int_eq(table_time_parse("", &sec, &nsec), -EINVAL);
	ck_assert_int_eq(sec, 7);
	ck_assert_int_eq(nsec, 7);
}
END_TEST

START_TEST(test_include_parse)
{
	enum table_include inc = TABLE_INCLUDE_OBJECT;
	struct kc_status st = { 0 };

	ck_assert_int_eq(table_include_parse(NULL, &inc, &st), 0);
	ck_assert_int_eq(inc, TABLE_INCLUDE_METADATA);
	ck_assert_int_eq(table_include_parse("None", &inc, &st), 0);
	ck_assert_int_eq(inc, TABLE_INCLUDE_NONE);
	ck_assert_int_eq(table_include_parse("", &inc, &st), 0);
	ck_assert_int_eq(inc, TABLE_INCLUDE_METADATA);
	ck_assert_int_eq(table_include_parse("Object", &inc, &st), 0);
	ck_assert_int_eq(inc, TABLE_INCLUDE_OBJECT);
	ck_assert_int_eq(table_include_parse("Metadata", &inc, &st), 0);
	ck_assert_int_eq(inc, TABLE_INCLUDE_METADATA);
	ck_assert_int_eq(table_include_parse("object", &inc, &st), KC_EBADREQUEST);
	ck_assert_int_eq(inc, TABLE_INCLUDE_METADATA);
	ck_assert_str_eq(st.message, "Unable to convert to Table as requested: "
	    "includeObject: Invalid value: \"object\": must be 'Metadata', 'Object', "
	    "'None', or empty");
	ck_assert_int_eq(table_include_parse("a\"b\t\x01\\", &inc, &st), KC_EBADREQUEST);
	ck_assert_str_eq(st.message, "Unable to convert to Table as requested: "
	    "includeObject: Invalid value: \"a\\\"b\\t\\x01\\\\\": must be 'Metadata', "
	    "'Object', 'None', or empty");
}
END_TEST

/*
 * JSONPath
 */

#define DOC	"{\"apiVersion\":\"trainyard.dev/v1beta1\",\"kind\":\"Run\"," \
	"\"metadata\":{\"name\":\"r1\",\"labels\":{\"app\":\"demo\"," \
	"\"trainyard.dev/run\":\"r1\"},\"annotations\":{\"a.b/c\":\"x\"}}," \
	"\"spec\":{\"nodes\":8,\"image\":\"busybox\",\"ratio\":1.5,\"bigf\":1000000.0," \
	"\"tiny\":0.00001,\"flag\":true,\"none\":null,\"tags\":[\"a\",\"b\",\"c\"]}," \
	"\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\"," \
	"\"status\":\"True\"},{\"type\":\"Scheduled\",\"status\":\"False\",\"count\":2}," \
	"{\"type\":\"Done\",\"status\":\"False\",\"count\":5,\"extra\":\"y\"}]}," \
	"\"items\":[{\"name\":\"a\",\"n\":1},{\"name\":\"b\",\"n\":2}," \
	"{\"name\":\"c\",\"n\":3,\"opt\":true}]}"

#define AM	JSONPATH_ALLOW_MISSING

static const struct {
	const char	*tmpl;
	unsigned	 flags;
	int		 want_r;	/* 0 or KC_EINVALID */
	const char	*want;		/* the output, or the error message */
} jp_cases[] = {
	/* Fields, escapes, quoted keys. */
	{ "{.spec.nodes}", 0, 0, "8" },
	{ "{.metadata.name}", 0, 0, "r1" },
	{ "{$.metadata.name}", 0, 0, "r1" },
	{ "{@.metadata.name}", 0, 0, "r1" },
	{ "{ .metadata.name }", 0, 0, "r1" },
	{ "{.metadata.}", 0, KC_EINVALID, " is not found" },
	{ "{.metadata.labels.app}", 0, 0, "demo" },
	{ "{.metadata.labels.trainyard\\.dev/run}", 0, 0, "r1" },
	{ "{.metadata.labels['trainyard\\.dev/run']}", 0, 0, "r1" },
	{ "{['metadata']['name']}", 0, 0, "r1" },
	{ "{.metadata.labels['trainyard.dev/run']}", 0, KC_EINVALID, "trainyard is not found" },
	{ "{.metadata.labels['trainyard.dev/run']}", AM, 0, "" },
	{ "{.metadata.annotations.a\\.b/c}", 0, 0, "x" },
	{ "{.metadata.missing}", 0, KC_EINVALID, "missing is not found" },
	{ "{.metadata.missing}", AM, 0, "" },
	{ "{.spec.nodes.x}", 0, KC_EINVALID, "x is not found" },
	{ "{.spec.none.x}", 0, KC_EINVALID, "x is not found" },
	{ "{.spec.none.x}", AM, 0, "" },
	{ "{.metadata.missing.deeper}", 0, KC_EINVALID, "missing is not found" },
	/* Indices and slices. */
	{ "{.spec.tags[0]}", 0, 0, "a" },
	{ "{.spec.tags[-1]}", 0, 0, "c" },
	{ "{.spec.tags[-3]}", 0, 0, "a" },
	{ "{.spec.tags[1:]}", 0, 0, "b c" },
	{ "{.spec.tags[:2]}", 0, 0, "a b" },
	{ "{.spec.tags[-1:]}", 0, 0, "c" },
	{ "{.spec.tags[0:3:2]}", 0, 0, "a c" },
	{ "{.spec.tags[::2]}", 0, 0, "a c" },
	{ "{.spec.tags[*]}", 0, 0, "a b c" },
	{ "{.spec.tags[]}", 0, 0, "a" },
	{ "{.spec.tags[1:1]}", 0, 0, "" },
	{ "{.spec.tags[3]}", 0, KC_EINVALID, "array index out of bounds: index 3, length 3" },
	{ "{.spec.tags[-4]}", 0, KC_EINVALID, "array index out of bounds: index -1, length 3" },
	{ "{.spec.tags[0:5]}", 0, KC_EINVALID, "array index out of bounds: index 4, length 3" },
	{ "{.spec.tags[2:1]}", 0, KC_EINVALID, "starting index 2 is greater than ending index 1" },
	{ "{.spec.tags[0:2:0]}", 0, KC_EINVALID, "step must be > 0" },
	{ "{.spec.nodes[0]}", 0, KC_EINVALID, "int64 is not array or slice" },
	{ "{.metadata[0]}", 0, KC_EINVALID, "map[string]interface {} is not array or slice" },
	{ "{.spec.none[0]}", 0, 0, "" },
	{ "{.items[*].name}", 0, 0, "a b c" },
	/* Filters. */
	{ "{.status.conditions[?(@.type==\"Ready\")].status}", 0, 0, "True" },
	{ "{.status.conditions[?(@.type=='Ready')].status}", 0, 0, "True" },
	{ "{.status.conditions[?(@.type != \"Ready\")].type}", 0, 0, "Scheduled Done" },
	{ "{.status.conditions[?(@.count>2)].type}", AM, 0, "Done" },
	{ "{.status.conditions[?(@.count>=2)].type}", AM, 0, "Scheduled Done" },
	{ "{.status.conditions[?(@.count<5)].type}", AM, 0, "Scheduled" },
	{ "{.status.conditions[?(@.count<=2)].type}", AM, 0, "Scheduled" },
	{ "{.status.conditions[?(@.type<\"S\")].type}", 0, 0, "Ready Done" },
	{ "{.status.conditions[?(@.extra)].type}", AM, 0, "Done" },
	{ "{.status.conditions[?(@.extra)].type}", 0, 0, "Done" },
	{ "{.items[?(@.opt==true)].name}", AM, 0, "c" },
	{ "{.items[?(@.n==@.n)].name}", 0, 0, "a b c" },
	{ "{.status.conditions[?(@.count==2.0)].type}", AM, KC_EINVALID,
	    "incompatible types for comparison" },
	{ "{.status.conditions[?(@.count>\"1\")].type}", AM, KC_EINVALID,
	    "incompatible types for comparison" },
	{ "{.items[?(@.opt<true)].name}", AM, KC_EINVALID, "invalid type for comparison" },
	{ "{.status.conditions[?(@.type<>\"R\")].type}", 0, KC_EINVALID,
	    "unrecognized filter operator <>" },
	{ "{.status.conditions[?(@.type=~\"R\")].type}", 0, KC_EINVALID,
	    "unrecognized character in action: U+007E '~'" },
	{ "{.status.conditions[?(@.count>1)].type}", 0, KC_EINVALID, "count is not found" },
	{ "{.spec.nodes[?(@.x)]}", 0, KC_EINVALID,
	    "8 is not array or slice and cannot be filtered" },
	{ "{.spec[?(@.x)]}", 0, KC_EINVALID, "map[bigf:1e+06 flag:true image:busybox "
	    "nodes:8 none:<nil> ratio:1.5 tags:[a b c] tiny:1e-05] is not array or slice "
	    "and cannot be filtered" },
	{ "{.items[?(@.name)]..n}", 0, 0, "1 2 3" },
	{ "{.items[?(@.name)].n}", 0, 0, "1 2 3" },
	/* Unions, wildcards, recursive descent. */
	{ "{.spec.tags[0,2]}", 0, 0, "a c" },
	{ "{.metadata['name','labels']}", 0, 0,
	    "r1 {\"app\":\"demo\",\"trainyard.dev/run\":\"r1\"}" },
	{ "{.metadata.labels.*}", 0, 0, "demo r1" },
	{ "{.spec.tags.*}", 0, 0, "a b c" },
	{ "{.metadata.name.*}", 0, 0, "114 49" },
	{ "{..name}", 0, 0, "r1 a b c" },
	{ "{.items..n}", 0, 0, "1 2 3" },
	/* Text, literals, printing. */
	{ "name: {.metadata.name}!", 0, 0, "name: r1!" },
	{ "plain text", 0, 0, "plain text" },
	{ "{.metadata.name}{\"\\t\"}{.kind}", 0, 0, "r1\tRun" },
	{ "{'it\\'s'}", 0, 0, "it's" },
	{ "{\"\\u00e9\\x41\\101\"}", 0, 0, "\xc3\xa9" "AA" },
	{ "{\"\\\\\\a\\b\\f\\n\\r\\t\\v\"}", 0, 0, "\\\a\b\f\n\r\t\v" },
	/* As upstream, a quote after an escaped backslash does not end the string. */
	{ "{\"a\\\\\"}", 0, KC_EINVALID, "unterminated quoted string" },
	{ "{\"\\U0001F600\\u00e9\"}", 0, 0, "\xf0\x9f\x98\x80\xc3\xa9" },
	{ "{'\xc3\xa9\\'x'}", 0, 0, "\xc3\xa9'x" },
	{ "{'\xff\\'x'}", 0, 0, "\xef\xbf\xbd'x" },
	{ "{'\xff'}", 0, 0, "\xff" },
	{ "{\"\\x4a\\x4A\"}", 0, 0, "JJ" },
	{ "{.spec.tags[ 0 , 2 ]}", 0, 0, "a c" },
	{ "{'ab'.*}", 0, 0, "97 98" },
	{ "{.items[?(@.n<'a'.*)].name}", 0, 0, "a b c" },
	{ "{.items[?(@.n=='\\x02'.*)].name}", 0, 0, "b" },
	{ "{.items[?(@.n>'\\x02'.*)].name}", 0, 0, "c" },
	{ "{.items[?('\\x02'.*<@.n)].name}", 0, 0, "c" },
	{ "{.items[?('\\x02'.*==@.n)].name}", 0, 0, "b" },
	{ "{.items[?(@.name>=\"b\")].name}", 0, 0, "b c" },
	{ "{.status.conditions[?(@.count==2)].type}", AM, 0, "Scheduled" },
	{ "{.items[?(@.opt==false)].name}", AM, 0, "" },
	{ "{.items[?(@.name==5.5)].name}", 0, KC_EINVALID, "incompatible types for comparison" },
	{ "{.items[?(@.n>=1.5)].name}", 0, KC_EINVALID, "incompatible types for comparison" },
	{ "{.items[?(@.n==@.n)].name}", 0, 0, "a b c" },
	{ "{.items[?(@.name==@.name)].name}", 0, 0, "a b c" },
	{ "{.items[?(@.name!=@.n)].name}", 0, KC_EINVALID, "incompatible types for comparison" },
	{ "{.items[?(@.x[0]==1)].name}", AM, 0, "" },
	{ "{.items[?(@.name[0]==1)].name}", AM, KC_EINVALID, "string is not array or slice" },
	{ "{.items[?(@.n==@.nope)].name}", AM, 0, "" },
	{ "{.items[?(@.n==@.nope)].name}", 0, KC_EINVALID, "nope is not found" },
	{ "{.items[?(@.n==@['n','n'])].name}", 0, KC_EINVALID,
	    "can only compare one element at a time" },
	{ "{.items[?(@['n','n']==1)].name}", 0, KC_EINVALID,
	    "can only compare one element at a time" },
	{ "{.items[?(@.name[5])].name}", 0, 0, "a b c" },
	{ "{.spec.tags[?(@)]}", 0, 0, "a b c" },
	{ "{.spec.none[?(@.x)]}", 0, KC_EINVALID,
	    "<nil> is not array or slice and cannot be filtered" },
	{ "{'ab'.x}", 0, KC_EINVALID, "x is not found" },
	{ "{'ab'[0]}", 0, KC_EINVALID, "string is not array or slice" },
	{ "{5[0]}", 0, KC_EINVALID, "int is not array or slice" },
	{ "{1.5[0]}", 0, KC_EINVALID, "float64 is not array or slice" },
	{ "{true[0]}", 0, KC_EINVALID, "bool is not array or slice" },
	{ "{.spec.flag[0]}", 0, KC_EINVALID, "bool is not array or slice" },
	{ "{.spec.ratio[0]}", 0, KC_EINVALID, "float64 is not array or slice" },
	{ "{.spec.tags[0][0]}", 0, KC_EINVALID, "string is not array or slice" },
	{ "{.items[0][0]}", 0, KC_EINVALID, "map[string]interface {} is not array or slice" },
	{ "{.spec.tags[0,5]}", 0, KC_EINVALID, "array index out of bounds: index 5, length 3" },
	{ "{5[?(@.x)]}", 0, KC_EINVALID, "5 is not array or slice and cannot be filtered" },
	{ "{'a b'[?(@.x)]}", 0, KC_EINVALID, "a b is not array or slice and cannot be filtered" },
	{ "{5}", 0, 0, "5" },
	{ "{-1.5}", 0, 0, "-1.5" },
	{ "{+7}", 0, 0, "7" },
	{ "{true}", 0, 0, "true" },
	{ "{.spec}", 0, 0, "{\"bigf\":1000000,\"flag\":true,\"image\":\"busybox\","
	    "\"nodes\":8,\"none\":null,\"ratio\":1.5,\"tags\":[\"a\",\"b\",\"c\"],"
	    "\"tiny\":0.00001}" },
	{ "{.spec.ratio}", 0, 0, "1.5" },
	{ "{.spec.bigf}", 0, 0, "1e+06" },
	{ "{.spec.tiny}", 0, 0, "1e-05" },
	{ "{.spec.flag}", 0, 0, "true" },
	{ "{.spec.none}", 0, 0, "<nil>" },
	{ "{.spec.tags}", 0, 0, "[\"a\",\"b\",\"c\"]" },
	/* Range blocks. */
	{ "{range .items[*]}{.name},{end}", 0, 0, "a,b,c," },
	{ "{range .items[*]}[{.name}]{end}done", 0, 0, "[a][b][c]done" },
	{ "{range .status.conditions[*]}{.type}:{range .items[*]}x{end};{end}", AM, 0,
	    "Ready:;Scheduled:;Done:;" },
	{ "{range .items[*]}{.name}{end}{range .spec.tags[*]}-{@}{end}", 0, 0,
	    "abc-a-b-c" },
	{ "{range .items[*]}{.name}", AM, 0, "abc" },
	{ "{range .status.conditions[*]}{.type}:{range .items[*]}x{end};{end}", 0,
	    KC_EINVALID, "items is not found" },
	{ "{end}", 0, KC_EINVALID, "not in range, nothing to end" },
	{ "{foo}", 0, KC_EINVALID, "unrecognized identifier foo" },
	/* Malformed templates. */
	{ "{.a", 0, KC_EINVALID, "unclosed action" },
	{ "{.a\n}", 0, KC_EINVALID, "unclosed action" },
	{ "{.a[0}", 0, KC_EINVALID, "unterminated array" },
	{ "{.a[x]}", 0, KC_EINVALID, "invalid array index x" },
	{ "{.a[1:x]}", 0, KC_EINVALID, "invalid array index 1:x" },
	{ "{.a[-]}", 0, KC_EINVALID, "array index - is not a number" },
	{ "{.a[99999999999999999999]}", 0, KC_EINVALID,
	    "array index 99999999999999999999 is not a number" },
	{ "{.a[\"b\"]}", 0, KC_EINVALID, "invalid array index \"b\"" },
	{ "{.a[?(@.x==1}", 0, KC_EINVALID, "unterminated filter" },
	{ "{.a[?(@.x==1)}", 0, KC_EINVALID, "unclosed array expect ]" },
	{ "{.a[?(@.x==)]}", 0, KC_EINVALID, "a is not found" },	/* field "x==" */
	{ "{.a[?(==1)]}", 0, KC_EINVALID, "unrecognized character in action: U+003D '='" },
	{ "{!}", 0, KC_EINVALID, "unrecognized character in action: U+0021 '!'" },
	{ "{.a\t}", 0, KC_EINVALID, "unrecognized character in action: U+0009" },
	{ "{....a}", 0, KC_EINVALID, "invalid multiple recursive descent" },
	{ "{1.2.3}", 0, KC_EINVALID, "cannot parse number 1.2.3" },
	{ "{-}", 0, KC_EINVALID, "cannot parse number -" },
	{ "{'abc}", 0, KC_EINVALID, "unterminated quoted string" },
	{ "{\"\\q\"}", 0, KC_EINVALID, "unquote string \"\\q\" error invalid syntax" },
	{ "{\"\\'\"}", 0, KC_EINVALID, "unquote string \"\\'\" error invalid syntax" },
	{ "{\"\\ud800\"}", 0, KC_EINVALID, "unquote string \"\\ud800\" error invalid syntax" },
	{ "{.a[0,x]}", 0, KC_EINVALID, "invalid array index x" },
	{ "{\"\\x4G\"}", 0, KC_EINVALID, "unquote string \"\\x4G\" error invalid syntax" },
	{ "{\"\\x4\"}", 0, KC_EINVALID, "unquote string \"\\x4\" error invalid syntax" },
	{ "{\"\\400\"}", 0, KC_EINVALID, "unquote string \"\\400\" error invalid syntax" },
	{ "{\"\\18\"}", 0, KC_EINVALID, "unquote string \"\\18\" error invalid syntax" },
	{ "{\"\\1\"}", 0, KC_EINVALID, "unquote string \"\\1\" error invalid syntax" },
	{ "{\"\\8\"}", 0, KC_EINVALID, "unquote string \"\\8\" error invalid syntax" },
	{ "{\"\\U00110000\"}", 0, KC_EINVALID,
	    "unquote string \"\\U00110000\" error invalid syntax" },
	{ "{'a\\\"b'}", 0, KC_EINVALID, "unquote string 'a\\\"b' error invalid syntax" },
};

START_TEST(test_jsonpath_cases)
{
	struct json_object *doc = json(DOC);

	for (size_t i = 0; i < KC_ARRAY_SIZE(jp_cases); i++) {
		struct kc_status st = { 0 };
		struct jsonpath *jp = NULL;
		struct kc_buf out;
		int r;

		kc_buf_init(&out, 1 << 20);
		r = jsonpath_parse(jp_cases[i].tmpl, &jp, &st);
		if (r == 0) {
			r = jsonpath_execute(jp, doc, jp_cases[i].flags, &out, &st);
			jsonpath_free(jp);
		} else
			ck_assert_ptr_null(jp);
		ck_assert_msg(r == jp_cases[i].want_r, "%s: r=%d (%s), want %d",
		    jp_cases[i].tmpl, r, st.message, jp_cases[i].want_r);
		if (r == 0)
			ck_assert_msg(strcmp(kc_buf_str(&out), jp_cases[i].want) == 0,
			    "%s: got '%s', want '%s'", jp_cases[i].tmpl, kc_buf_str(&out),
			    jp_cases[i].want);
		else
			ck_assert_msg(strcmp(st.message, jp_cases[i].want) == 0,
			    "%s: error '%s', want '%s'", jp_cases[i].tmpl, st.message,
			    jp_cases[i].want);
		kc_buf_free(&out);
	}
	json_object_put(doc);
}
END_TEST

/* Results are lists of borrowed values, one list per top-level node. */
START_TEST(test_jsonpath_results)
{
	struct json_object *doc = json(DOC);
	struct jsonpath_results res = { 0 };
	struct jsonpath *jp = NULL;

	ck_assert_int_eq(jsonpath_parse("x{.spec.tags[*]}{.spec.none}{.nope}", &jp,
	    NULL), 0);
	ck_assert_int_eq(jsonpath_find(jp, doc, AM, &res, NULL), 0);
	ck_assert_uint_eq(res.n, 4);
	ck_assert_uint_eq(res.lists[0].n, 1);
	ck_assert_int_eq(res.lists[0].vals[0].kind, JSONPATH_TEXT);
	ck_assert(kc_str_eq_cstr(res.lists[0].vals[0].v.text, "x"));
	ck_assert_uint_eq(res.lists[1].n, 3);
	ck_assert_int_eq(res.lists[1].vals[2].kind, JSONPATH_JSON);
	ck_assert_str_eq(json_object_get_string(res.lists[1].vals[2].v.json), "c");
	ck_assert_uint_eq(res.lists[2].n, 1);
	ck_assert_ptr_null(res.lists[2].vals[0].v.json);
	ck_assert_uint_eq(res.lists[3].n, 0);
	jsonpath_results_free(&res);
	ck_assert_uint_eq(res.n, 0);
	ck_assert_ptr_null(res.lists);
	jsonpath_free(jp);
	json_object_put(doc);
}
END_TEST

/* One program, many documents: evaluation never changes the program. */
START_TEST(test_jsonpath_reuse)
{
	static const char *const docs[] = {
		"{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
		"{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}",
		"{\"status\":{}}",
		"{\"status\":{\"conditions\":[{\"type\":\"Other\"},{\"type\":\"Ready\","
		    "\"status\":\"Unknown\"}]}}",
	};
	static const char *const want[] = { "True", "False", "", "Unknown" };
	_cleanup_(jsonpath_freep) struct jsonpath *jp = NULL;

	ck_assert_int_eq(jsonpath_parse_column(".status.conditions[?(@.type==\"Ready\")]"
	    ".status", &jp, NULL), 0);
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < KC_ARRAY_SIZE(docs); i++) {
			struct json_object *doc = json(docs[i]);
			struct kc_buf out;

			kc_buf_init(&out, 1024);
			ck_assert_int_eq(jsonpath_execute(jp, doc, AM, &out, NULL), 0);
			ck_assert_str_eq(kc_buf_str(&out), want[i]);
			kc_buf_free(&out);
			json_object_put(doc);
		}
	}
}
END_TEST

/* A document nested 'depth' objects deep under "x" keys. */
static struct json_object *
deep_doc(int depth)
{
	struct json_object *o = json_object_new_object();

	for (int i = 0; i < depth; i++) {
		struct json_object *p = json_object_new_object();

		json_object_object_add(p, "x", o);
		o = p;
	}
	return o;
}

START_TEST(test_jsonpath_eval_limits)
{
	struct json_object *doc = json_object_new_object(), *a = json_object_new_array();
	struct jsonpath *jp = NULL;
	struct kc_status st = { 0 };
	struct kc_buf out;

	for (int i = 0; i < JSONPATH_VALUES_MAX + 1; i++)
		json_object_array_add(a, json_object_new_int(i));
	json_object_object_add(doc, "a", a);
	kc_buf_init(&out, 64u << 20);
	ck_assert_int_eq(jsonpath_parse("{.a[*]}", &jp, &st), 0);
	ck_assert_int_eq(jsonpath_execute(jp, doc, 0, &out, &st), -E2BIG);
	ck_assert_str_eq(st.message, "more than 65536 values in one step");
	jp = jsonpath_free(jp);
	ck_assert_int_eq(jsonpath_parse("{range .a[0:40000]}{@}{@}{end}", &jp, &st), 0);
	ck_assert_int_eq(jsonpath_execute(jp, doc, 0, &out, &st), -E2BIG);
	ck_assert_str_eq(st.message, "more than 65536 result lists");
	jp = jsonpath_free(jp);
	ck_assert_int_eq(jsonpath_parse("{range .a[0:30000]}{@}{@}{end}", &jp, &st), 0);
	ck_assert_int_eq(jsonpath_execute(jp, doc, 0, &out, &st), 0);
	ck_assert_uint_gt(out.len, 60000);
	jp = jsonpath_free(jp);
	kc_buf_free(&out);
	json_object_put(doc);

	doc = deep_doc(200);
	kc_buf_init(&out, 64u << 20);
	ck_assert_int_eq(jsonpath_parse("{..x}", &jp, &st), 0);
	ck_assert_int_eq(jsonpath_execute(jp, doc, 0, &out, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "document nested too deeply for ..");
	jp = jsonpath_free(jp);
	json_object_put(doc);
	doc = deep_doc(50);
	ck_assert_int_eq(jsonpath_parse("{..x}", &jp, &st), 0);
	ck_assert_int_eq(jsonpath_execute(jp, doc, 0, &out, &st), 0);
	jp = jsonpath_free(jp);
	json_object_put(doc);
	kc_buf_free(&out);

	/* A print ceiling smaller than the output. */
	doc = json(DOC);
	kc_buf_init(&out, 16);
	ck_assert_int_eq(jsonpath_parse("{.spec}", &jp, &st), 0);
	ck_assert_int_eq(jsonpath_execute(jp, doc, 0, &out, &st), -E2BIG);
	ck_assert_ptr_null(out.data);
	jp = jsonpath_free(jp);
	json_object_put(doc);
}
END_TEST

START_TEST(test_jsonpath_limits)
{
	struct jsonpath *jp = NULL;
	struct kc_status st = { 0 };
	char *big = kc_malloc(JSONPATH_TEXT_MAX + 2);

	ck_assert_ptr_nonnull(big);
	memset(big, 'a', JSONPATH_TEXT_MAX + 1);
	big[JSONPATH_TEXT_MAX + 1] = '\0';
	ck_assert_int_eq(jsonpath_parse(big, &jp, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "template longer than 16384 bytes");
	ck_assert_int_eq(jsonpath_parse_column(big, &jp, &st), KC_EINVALID);
	ck_assert_ptr_null(jp);
	big[JSONPATH_TEXT_MAX] = '\0';
	ck_assert_int_eq(jsonpath_parse(big, &jp, &st), 0);
	jp = jsonpath_free(jp);
	kc_free(big);

	/* Re-parsed pieces: union members and quoted keys inside a filter. */
	ck_assert_int_eq(jsonpath_parse("{.a[?(@.b[0,1]==@['c','d'])]}", &jp, &st), 0);
	jp = jsonpath_free(jp);
	ck_assert_int_eq(jsonpath_parse("{.a[?(@.b[?(@.c)])]}", &jp, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "unterminated filter");
	ck_assert_ptr_null(jp);
}
END_TEST

START_TEST(test_jsonpath_marshal)
{
	struct json_object *o = json("{\"b\":\"<&>\",\"a\":\"\\u2028 \\u0001\\b\\f\\t\"," \
	    "\"c\":[1,2.5,1e21,1e20,1e-7,0.000001,-0.0,0.1,123456789.0]," \
	    "\"d\":{\"z\":1,\"y\":null,\"x\":false},\"e\":\"caf\\u00e9\"}");
	struct json_object *bad = json_object_new_string_len("a\xff" "b", 3);
	struct kc_buf b;

	kc_buf_init(&b, 4096);
	ck_assert_int_eq(jsonpath_json_marshal(o, &b), 0);
	ck_assert_str_eq(kc_buf_str(&b), "{\"a\":\"\\u2028 \\u0001\\b\\f\\t\","
	    "\"b\":\"\\u003c\\u0026\\u003e\","
	    "\"c\":[1,2.5,1e+21,100000000000000000000,1e-7,0.000001,-0,0.1,123456789],"
	    "\"d\":{\"x\":false,\"y\":null,\"z\":1},\"e\":\"caf\xc3\xa9\"}");
	kc_buf_reset(&b);
	ck_assert_int_eq(jsonpath_json_marshal(bad, &b), 0);
	ck_assert_str_eq(kc_buf_str(&b), "\"a\\ufffdb\"");
	kc_buf_free(&b);
	kc_buf_init(&b, 8);
	ck_assert_int_eq(jsonpath_json_marshal(o, &b), -E2BIG);
	ck_assert_ptr_null(b.data);
	json_object_put(o);
	json_object_put(bad);
}
END_TEST

/*
 * CRD columns
 */

static struct json_object *
cells_of(const struct json_object *table, size_t row)
{
	return kc_json_get(json_object_array_get_idx(kc_json_arr_of(table, "rows"), row),
	    "cells");
}

START_TEST(test_crd_runs)
{
	struct json_object *crd = fixture("crd-runs.json"), *f = fixture("runs.json");
	struct table_conv *tc = NULL;
	struct json_object *t = NULL;
	struct kc_status st = { 0 };

	ck_assert_int_eq(table_conv_crd(crd, "v1beta1", &tc, &st), 0);
	ck_assert_int_eq(table_list(tc, kc_json_get(f, "list"), &(struct table_opts){
		.version = TABLE_V1,
		.include = TABLE_INCLUDE_METADATA,
		.now = at(kc_json_str(f, "now")),
	}, &t, &st), 0);
	assert_json_eq(t, kc_json_get(f, "table"), "runs table");
	json_object_put(t);
	table_conv_free(tc);
	json_object_put(crd);
	json_object_put(f);
}
END_TEST

/* Column definitions as [name, type, format, priority] rows. */
static struct json_object *
project_columns(const struct json_object *cols)
{
	struct json_object *out = json_object_new_array();

	for (size_t i = 0; i < json_object_array_length(cols); i++) {
		struct json_object *c = json_object_array_get_idx(cols, i);
		struct json_object *row = json_object_new_array();

		ck_assert_ptr_nonnull(kc_json_str(c, "description"));
		json_object_array_add(row, json_object_new_string(kc_json_str(c, "name")));
		json_object_array_add(row, json_object_new_string(kc_json_str(c, "type")));
		json_object_array_add(row, json_object_new_string(kc_json_str(c, "format")));
		json_object_array_add(row, json_object_new_int64(kc_json_int(c, -1,
		    "priority")));
		json_object_array_add(out, row);
	}
	return out;
}

START_TEST(test_crd_versions)
{
	struct json_object *crd = fixture("crd-runs.json"), *cols = NULL, *p;
	struct table_conv *tc = NULL;
	struct kc_status st = { 0 };

	/* No columns: Name and Age, as serveDefaultColumnsIfEmpty(). */
	ck_assert_int_eq(table_conv_crd(crd, "v1alpha1", &tc, &st), 0);
	ck_assert_int_eq(table_conv_definitions(tc, &cols), 0);
	p = project_columns(cols);
	assert_json_text(p, "[[\"Name\",\"string\",\"name\",0],[\"Age\",\"date\",\"\",0]]",
	    "v1alpha1 columns");
	ck_assert(strncmp(kc_json_str(json_object_array_get_idx(cols, 1), "description"),
	    "CreationTimestamp is a timestamp", 32) == 0);
	json_object_put(p);
	json_object_put(cols);
	tc = table_conv_free(tc);

	/* A column whose jsonPath does not parse ends the list. */
	ck_assert_int_eq(table_conv_crd(crd, "v1", &tc, &st), 0);
	ck_assert_int_eq(table_conv_definitions(tc, &cols), 0);
	ck_assert_uint_eq(json_object_array_length(cols), 2);
	p = json_object_array_get_idx(cols, 1);
	ck_assert_str_eq(kc_json_str(p, "name"), "Image");
	ck_assert_str_eq(kc_json_str(p, "format"), "byte");
	ck_assert_str_eq(kc_json_str(p, "description"), "The training image.");
	json_object_put(cols);
	tc = table_conv_free(tc);

	ck_assert_int_eq(table_conv_crd(crd, "v2", &tc, &st), KC_ENOTFOUND);
	ck_assert_ptr_null(tc);
	ck_assert_str_eq(st.message, "CustomResourceDefinition runs.trainyard.dev has no "
	    "version v2");
	ck_assert_int_eq(table_conv_columns(NULL, &tc, &st), 0);
	ck_assert_int_eq(table_conv_definitions(tc, &cols), 0);
	ck_assert_uint_eq(json_object_array_length(cols), 2);
	json_object_put(cols);
	tc = table_conv_free(tc);
	json_object_put(crd);
}
END_TEST

START_TEST(test_crd_columns_invalid)
{
	static const char *const bad[] = {
		"{}",
		"[1]",
		"[{\"name\":\"a\",\"type\":\"string\"}]",
		"[{\"name\":\"a\",\"jsonPath\":\".a\"}]",
		"[{\"type\":\"string\",\"jsonPath\":\".a\"}]",
	};
	struct table_conv *tc = NULL;
	struct kc_status st = { 0 };
	struct json_object *many = json_object_new_array();

	for (size_t i = 0; i < KC_ARRAY_SIZE(bad); i++) {
		struct json_object *c = json(bad[i]);

		ck_assert_int_eq(table_conv_columns(c, &tc, &st), KC_EINVALID);
		ck_assert_ptr_null(tc);
		json_object_put(c);
	}
	for (int i = 0; i <= TABLE_COLUMNS_MAX; i++)
		json_object_array_add(many, json("{\"name\":\"a\",\"type\":\"string\","
		    "\"jsonPath\":\".a\"}"));
	ck_assert_int_eq(table_conv_columns(many, &tc, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "additionalPrinterColumns: more than 128 columns");
	json_object_put(many);
}
END_TEST

#define CELL_DOC "{\"metadata\":{\"name\":\"x\",\"creationTimestamp\":" \
	"\"2026-01-15T10:00:00Z\"},\"spec\":{\"i\":8,\"f\":8.7,\"neg\":-2.5,\"s\":\"text\"," \
	"\"b\":true,\"o\":{\"z\":1,\"a\":\"<b>\"},\"a\":[1,\"x\"],\"n\":null," \
	"\"d\":\"2026-01-15T10:06:00Z\",\"bad\":\"yesterday\",\"empty\":\"\"," \
	"\"nulltext\":\"null\",\"huge\":1e30,\"u\":18446744073709551615}}"

static const struct {
	const char	*type;
	const char	*path;
	const char	*want;	/* the cell as JSON */
} cell_cases[] = {
	{ "integer", ".spec.i", "8" },
	{ "integer", ".spec.f", "8" },
	{ "integer", ".spec.neg", "-2" },
	{ "integer", ".spec.huge", "-9223372036854775808" },
	{ "integer", ".spec.s", "null" },
	{ "integer", ".spec.b", "null" },
	{ "integer", ".spec.n", "null" },
	{ "integer", ".spec.missing", "null" },
	{ "integer", "5", "null" },		/* a Go int literal is not an int64 */
	{ "integer", "5.5", "5" },
	{ "number", ".spec.i", "8" },
	{ "number", ".spec.f", "8.7" },
	{ "number", ".spec.u", "18446744073709552000" },
	{ "number", ".spec.s", "null" },
	{ "number", ".spec.missing", "null" },
	{ "number", "1.5", "1.5" },
	{ "boolean", ".spec.b", "true" },
	{ "boolean", ".spec.s", "null" },
	{ "boolean", "false", "false" },
	{ "string", ".spec.s", "\"text\"" },
	{ "string", ".spec.i", "\"8\"" },
	{ "string", ".spec.f", "\"8.7\"" },
	{ "string", ".spec.huge", "\"1e+30\"" },
	{ "string", ".spec.b", "\"true\"" },
	{ "string", ".spec.o", "\"{\\\"a\\\":\\\"\\\\u003cb\\\\u003e\\\",\\\"z\\\":1}\"" },
	{ "string", ".spec.a", "\"[1,\\\"x\\\"]\"" },
	{ "string", ".spec.a[*]", "\"1\"" },
	{ "string", ".spec.a[5]", "null" },
	{ "string", ".spec.n", "\"<no value>\"" },
	{ "string", ".spec.missing", "null" },
	{ "string", ".metadata.name.*", "\"120\"" },
	{ "string", "'lit'", "\"lit\"" },
	{ "date", ".spec.d", "\"30s\"" },
	{ "date", ".metadata.creationTimestamp", "\"6m30s\"" },
	{ "date", ".spec.bad", "\"<invalid>\"" },
	{ "date", ".spec.empty", "\"<unknown>\"" },
	{ "date", ".spec.nulltext", "\"<unknown>\"" },
	{ "date", ".spec.i", "null" },
	{ "date", ".spec.n", "null" },
	{ "date", ".spec.missing", "null" },
	{ "date", "'2026-01-15T10:05:30Z'", "\"60s\"" },
	{ "float", ".spec.f", "null" },
};

START_TEST(test_crd_cells)
{
	struct json_object *doc = json(CELL_DOC);

	for (size_t i = 0; i < KC_ARRAY_SIZE(cell_cases); i++) {
		struct json_object *cols = json_object_new_array(), *col = json_object_new_object();
		struct json_object *t = NULL, *cell;
		struct table_conv *tc = NULL;
		struct kc_status st = { 0 };
		char *got;

		ck_assert_int_eq(kc_json_set_str(col, "name", "C"), 0);
		ck_assert_int_eq(kc_json_set_str(col, "type", cell_cases[i].type), 0);
		ck_assert_int_eq(kc_json_set_str(col, "jsonPath", cell_cases[i].path), 0);
		json_object_array_add(cols, col);
		ck_assert_int_eq(table_conv_columns(cols, &tc, &st), 0);
		ck_assert_int_eq(table_object(tc, doc, &(struct table_opts){
			.include = TABLE_INCLUDE_NONE,
			.now = at("2026-01-15T10:06:30Z"),
		}, &t, &st), 0);
		cell = json_object_array_get_idx(cells_of(t, 0), 1);
		got = kc_json_dump(cell, NULL);
		ck_assert_msg(strcmp(got, cell_cases[i].want) == 0, "%s %s: got %s, want %s",
		    cell_cases[i].type, cell_cases[i].path, got, cell_cases[i].want);
		if (strcmp(cell_cases[i].type, "number") == 0 && cell != NULL)
			ck_assert_msg(json_object_is_type(cell, json_type_double),
			    "number %s: %s is not a float", cell_cases[i].path, got);
		kc_free(got);
		json_object_put(t);
		table_conv_free(tc);
		json_object_put(cols);
	}
	json_object_put(doc);
}
END_TEST

/*
 * Pods: Ready, Status, Restarts
 */

static const struct {
	const char	*what;
	const char	*pod;		/* metadata, spec and status */
	const char	*ready;
	const char	*status;
	const char	*restarts;
} pod_cases[] = {
	{ "completed",
	  "\"spec\":{\"containers\":[{\"name\":\"main\"}]},\"status\":{\"phase\":\"Succeeded\","
	  "\"containerStatuses\":[{\"name\":\"main\",\"ready\":false,\"restartCount\":0,"
	  "\"state\":{\"terminated\":{\"exitCode\":0,\"reason\":\"Completed\"}}}]}",
	  "0/1", "Completed", "0" },
	{ "init running",
	  "\"spec\":{\"initContainers\":[{\"name\":\"i1\"},{\"name\":\"i2\"}],"
	  "\"containers\":[{\"name\":\"main\"}]},\"status\":{\"phase\":\"Pending\","
	  "\"initContainerStatuses\":[{\"name\":\"i1\",\"state\":{\"running\":{}}},"
	  "{\"name\":\"i2\",\"state\":{\"waiting\":{\"reason\":\"PodInitializing\"}}}],"
	  "\"containerStatuses\":[{\"name\":\"main\",\"state\":{\"waiting\":"
	  "{\"reason\":\"PodInitializing\"}}}]}",
	  "0/1", "Init:0/2", "0" },
	{ "init image pull",
	  "\"spec\":{\"initContainers\":[{\"name\":\"i1\"}],\"containers\":[{\"name\":\"m\"}]},"
	  "\"status\":{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":\"i1\","
	  "\"state\":{\"waiting\":{\"reason\":\"ImagePullBackOff\"}}}]}",
	  "0/1", "Init:ImagePullBackOff", "0" },
	{ "init pod initializing",
	  "\"spec\":{\"initContainers\":[{\"name\":\"i1\"}],\"containers\":[{\"name\":\"m\"}]},"
	  "\"status\":{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":\"i1\","
	  "\"state\":{\"waiting\":{\"reason\":\"PodInitializing\"}}}]}",
	  "0/1", "Init:0/1", "0" },
	{ "init exit code",
	  "\"spec\":{\"initContainers\":[{\"name\":\"i1\"}],\"containers\":[{\"name\":\"m\"}]},"
	  "\"status\":{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":\"i1\","
	  "\"restartCount\":2,\"state\":{\"terminated\":{\"exitCode\":1}},\"lastState\":"
	  "{\"terminated\":{\"exitCode\":1,\"finishedAt\":\"2026-01-15T10:05:30Z\"}}}]}",
	  "0/1", "Init:ExitCode:1", "2 (60s ago)" },
	{ "init signal",
	  "\"spec\":{\"initContainers\":[{\"name\":\"i1\"}],\"containers\":[{\"name\":\"m\"}]},"
	  "\"status\":{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":\"i1\","
	  "\"state\":{\"terminated\":{\"exitCode\":137,\"signal\":9}}}]}",
	  "0/1", "Init:Signal:9", "0" },
	{ "init error",
	  "\"spec\":{\"initContainers\":[{\"name\":\"i1\"}],\"containers\":[{\"name\":\"m\"}]},"
	  "\"status\":{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":\"i1\","
	  "\"state\":{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\"}}}]}",
	  "0/1", "Init:Error", "0" },
	{ "second init",
	  "\"spec\":{\"initContainers\":[{\"name\":\"i1\"},{\"name\":\"i2\"}],"
	  "\"containers\":[{\"name\":\"m\"}]},\"status\":{\"phase\":\"Pending\","
	  "\"initContainerStatuses\":[{\"name\":\"i1\",\"state\":{\"terminated\":"
	  "{\"exitCode\":0,\"reason\":\"Completed\"}}},{\"name\":\"i2\",\"state\":"
	  "{\"running\":{}}}]}",
	  "0/1", "Init:1/2", "0" },
	{ "sidecar",
	  "\"spec\":{\"initContainers\":[{\"name\":\"side\",\"restartPolicy\":\"Always\"}],"
	  "\"containers\":[{\"name\":\"main\"}]},\"status\":{\"phase\":\"Running\","
	  "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
	  "\"initContainerStatuses\":[{\"name\":\"side\",\"started\":true,\"ready\":true,"
	  "\"restartCount\":1,\"state\":{\"running\":{}},\"lastState\":{\"terminated\":"
	  "{\"exitCode\":1,\"finishedAt\":\"2026-01-15T10:05:30Z\"}}}],"
	  "\"containerStatuses\":[{\"name\":\"main\",\"ready\":true,\"restartCount\":0,"
	  "\"state\":{\"running\":{}}}]}",
	  "2/2", "Running", "1 (60s ago)" },
	{ "sidecar starting",
	  "\"spec\":{\"initContainers\":[{\"name\":\"side\",\"restartPolicy\":\"Always\"}],"
	  "\"containers\":[{\"name\":\"main\"}]},\"status\":{\"phase\":\"Pending\","
	  "\"initContainerStatuses\":[{\"name\":\"side\",\"started\":false,\"state\":"
	  "{\"waiting\":{\"reason\":\"ContainerCreating\"}}}]}",
	  "0/2", "Init:ContainerCreating", "0" },
	{ "crash loop",
	  "\"spec\":{\"containers\":[{\"name\":\"main\"}]},\"status\":{\"phase\":\"Running\","
	  "\"containerStatuses\":[{\"name\":\"main\",\"ready\":false,\"restartCount\":5,"
	  "\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\",\"message\":\"back-off\"}},"
	  "\"lastState\":{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\","
	  "\"finishedAt\":\"2026-01-15T10:05:00Z\"}}}]}",
	  "0/1", "CrashLoopBackOff", "5 (90s ago)" },
	{ "oom killed",
	  "\"spec\":{\"containers\":[{\"name\":\"main\"}]},\"status\":{\"phase\":\"Failed\","
	  "\"containerStatuses\":[{\"name\":\"main\",\"restartCount\":0,\"state\":"
	  "{\"terminated\":{\"exitCode\":137,\"reason\":\"OOMKilled\"}}}]}",
	  "0/1", "OOMKilled", "0" },
	{ "signal",
	  "\"spec\":{\"containers\":[{\"name\":\"main\"}]},\"status\":{\"phase\":\"Failed\","
	  "\"containerStatuses\":[{\"name\":\"main\",\"state\":{\"terminated\":"
	  "{\"exitCode\":0,\"signal\":15}}}]}",
	  "0/1", "Signal:15", "0" },
	{ "exit code",
	  "\"spec\":{\"containers\":[{\"name\":\"main\"}]},\"status\":{\"phase\":\"Failed\","
	  "\"containerStatuses\":[{\"name\":\"main\",\"state\":{\"terminated\":"
	  "{\"exitCode\":2}}}]}",
	  "0/1", "ExitCode:2", "0" },
	{ "terminating",
	  "\"metadata\":{\"name\":\"p\",\"deletionTimestamp\":\"2026-01-15T10:06:00Z\"},"
	  "\"spec\":{\"containers\":[{\"name\":\"main\"}]},\"status\":{\"phase\":\"Running\","
	  "\"containerStatuses\":[{\"name\":\"main\",\"ready\":true,\"state\":"
	  "{\"running\":{}}}]}",
	  "1/1", "Terminating", "0" },
	{ "node lost",
	  "\"metadata\":{\"name\":\"p\",\"deletionTimestamp\":\"2026-01-15T10:06:00Z\"},"
	  "\"spec\":{\"containers\":[{\"name\":\"main\"}]},\"status\":{\"phase\":\"Running\","
	  "\"reason\":\"NodeLost\",\"containerStatuses\":[{\"name\":\"main\",\"ready\":true,"
	  "\"state\":{\"running\":{}}}]}",
	  "1/1", "Unknown", "0" },
	{ "deleted after success",
	  "\"metadata\":{\"name\":\"p\",\"deletionTimestamp\":\"2026-01-15T10:06:00Z\"},"
	  "\"spec\":{\"containers\":[{\"name\":\"main\"}]},\"status\":{\"phase\":\"Succeeded\","
	  "\"containerStatuses\":[{\"name\":\"main\",\"state\":{\"terminated\":"
	  "{\"exitCode\":0,\"reason\":\"Completed\"}}}]}",
	  "0/1", "Completed", "0" },
	{ "completed beside running, ready",
	  "\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]},\"status\":{\"phase\":"
	  "\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
	  "\"containerStatuses\":[{\"name\":\"a\",\"ready\":true,\"state\":{\"running\":{}}},"
	  "{\"name\":\"b\",\"state\":{\"terminated\":{\"exitCode\":0,\"reason\":\"Completed\"}}}]}",
	  "1/2", "Running", "0" },
	{ "completed beside running, not ready",
	  "\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]},\"status\":{\"phase\":"
	  "\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}],"
	  "\"containerStatuses\":[{\"name\":\"a\",\"ready\":true,\"state\":{\"running\":{}}},"
	  "{\"name\":\"b\",\"state\":{\"terminated\":{\"exitCode\":0,\"reason\":\"Completed\"}}}]}",
	  "1/2", "NotReady", "0" },
	{ "restarts summed, newest finish",
	  "\"spec\":{\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}]},\"status\":{\"phase\":"
	  "\"Running\",\"containerStatuses\":[{\"name\":\"a\",\"ready\":true,\"restartCount\":2,"
	  "\"state\":{\"running\":{}},\"lastState\":{\"terminated\":{\"exitCode\":1,"
	  "\"finishedAt\":\"2026-01-15T10:01:00Z\"}}},{\"name\":\"b\",\"ready\":false,"
	  "\"restartCount\":3,\"state\":{\"running\":{}},\"lastState\":{\"terminated\":"
	  "{\"exitCode\":1,\"finishedAt\":\"2026-01-15T10:04:30Z\"}}}]}",
	  "1/2", "Running", "5 (2m ago)" },
	{ "restarts without a finish time",
	  "\"spec\":{\"containers\":[{\"name\":\"a\"}]},\"status\":{\"phase\":\"Running\","
	  "\"containerStatuses\":[{\"name\":\"a\",\"ready\":true,\"restartCount\":4,"
	  "\"state\":{\"running\":{}},\"lastState\":{\"terminated\":{\"exitCode\":1}}}]}",
	  "1/1", "Running", "4" },
	{ "init failed but initialized",
	  "\"spec\":{\"initContainers\":[{\"name\":\"i1\"}],\"containers\":[{\"name\":\"m\"}]},"
	  "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Initialized\","
	  "\"status\":\"True\"}],\"initContainerStatuses\":[{\"name\":\"i1\",\"restartCount\":4,"
	  "\"state\":{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\"}},\"lastState\":"
	  "{\"terminated\":{\"exitCode\":1,\"finishedAt\":\"2026-01-15T10:00:00Z\"}}}],"
	  "\"containerStatuses\":[{\"name\":\"m\",\"ready\":true,\"restartCount\":1,"
	  "\"state\":{\"running\":{}}}]}",
	  "1/1", "Init:Error", "1" },
	{ "pending",
	  "\"spec\":{\"containers\":[{\"name\":\"main\"}]},\"status\":{\"phase\":\"Pending\"}",
	  "0/1", "Pending", "0" },
	{ "no status",
	  "\"spec\":{\"containers\":[{\"name\":\"main\"}]}",
	  "0/1", "", "0" },
};

START_TEST(test_pod_rules)
{
	struct table_conv *tc = NULL;
	struct json_object *running = fixture("pod-status-running.json");
	struct json_object *pod, *t = NULL, *cells;
	struct table_opts opts = {
		.include = TABLE_INCLUDE_NONE,
		.now = at("2026-01-15T10:06:30Z"),
	};

	ck_assert_int_eq(table_conv_builtin("", "pods", &tc), 0);
	for (size_t i = 0; i < KC_ARRAY_SIZE(pod_cases); i++) {
		char text[4096];

		(void)snprintf(text, sizeof(text), "{%s%s}", strstr(pod_cases[i].pod,
		    "\"metadata\"") != NULL ? "" : "\"metadata\":{\"name\":\"p\"},",
		    pod_cases[i].pod);
		pod = json(text);
		ck_assert_int_eq(table_object(tc, pod, &opts, &t, NULL), 0);
		cells = cells_of(t, 0);
		ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(cells, 0)), "p");
		ck_assert_msg(strcmp(json_object_get_string(json_object_array_get_idx(cells, 1)),
		    pod_cases[i].ready) == 0, "%s: ready %s", pod_cases[i].what,
		    json_object_get_string(json_object_array_get_idx(cells, 1)));
		ck_assert_msg(strcmp(json_object_get_string(json_object_array_get_idx(cells, 2)),
		    pod_cases[i].status) == 0, "%s: status %s", pod_cases[i].what,
		    json_object_get_string(json_object_array_get_idx(cells, 2)));
		ck_assert_msg(strcmp(json_object_get_string(json_object_array_get_idx(cells, 3)),
		    pod_cases[i].restarts) == 0, "%s: restarts %s", pod_cases[i].what,
		    json_object_get_string(json_object_array_get_idx(cells, 3)));
		ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(cells, 4)),
		    "<unknown>");
		ck_assert_uint_eq(json_object_array_length(cells), 9);
		json_object_put(t);
		json_object_put(pod);
	}

	/* The running pod of pod-status-running.json, with a node and container. */
	pod = json("{\"metadata\":{\"name\":\"r1-0\",\"creationTimestamp\":"
	    "\"2026-01-15T10:00:00Z\"},\"spec\":{\"nodeName\":\"gpu-node-3\","
	    "\"containers\":[{\"name\":\"main\"}]}}");
	json_object_object_add(pod, "status", json_object_get(kc_json_get(running, "status")));
	ck_assert_int_eq(table_object(tc, pod, &opts, &t, NULL), 0);
	assert_json_text(cells_of(t, 0), "[\"r1-0\",\"1/1\",\"Running\",\"1 (6m30s ago)\","
	    "\"6m30s\",\"10.0.0.12\",\"gpu-node-3\",\"<none>\",\"<none>\"]", "running pod");
	ck_assert_ptr_null(kc_json_get(json_object_array_get_idx(kc_json_arr_of(t, "rows"),
	    0), "conditions"));
	json_object_put(t);
	json_object_put(pod);

	/* podIP wins over podIPs, as the v1 to internal conversion does. */
	pod = json("{\"metadata\":{\"name\":\"p\"},\"spec\":{},\"status\":{\"podIP\":"
	    "\"10.0.0.5\",\"podIPs\":[{\"ip\":\"10.0.0.6\"}]}}");
	ck_assert_int_eq(table_object(tc, pod, &opts, &t, NULL), 0);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(cells_of(t, 0), 5)),
	    "10.0.0.5");
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(cells_of(t, 0), 1)),
	    "0/0");
	json_object_put(t);
	json_object_put(pod);
	json_object_put(running);
	table_conv_free(tc);
}
END_TEST

/*
 * Built-in printers against fixtures
 */

static const char *const printer_fixtures[] = {
	"pods.json", "namespaces.json", "configmaps.json", "secrets.json",
	"services.json", "endpoints.json", "nodes.json", "events.json",
	"events-v1.json", "leases.json", "serviceaccounts.json",
	"networkpolicies.json", "priorityclasses.json", "resourcequotas.json",
	"persistentvolumeclaims.json", "rolebindings.json",
	"clusterrolebindings.json", "mutatingwebhookconfigurations.json",
	"validatingwebhookconfigurations.json", "roles.json",
	"customresourcedefinitions.json",
};

START_TEST(test_printers)
{
	for (size_t i = 0; i < KC_ARRAY_SIZE(printer_fixtures); i++) {
		const char *name = printer_fixtures[i];
		struct json_object *f = fixture(name), *t = NULL, *p, *rows, *cells;
		struct json_object *want_cond = kc_json_get(f, "conditions");
		struct table_conv *tc = NULL;
		struct kc_status st = { 0 };
		const char *rv;

		ck_assert_int_eq(table_conv_builtin(kc_json_str(f, "group"),
		    kc_json_str(f, "resource"), &tc), 0);
		ck_assert_msg(table_list(tc, kc_json_get(f, "list"), &(struct table_opts){
			.include = TABLE_INCLUDE_NONE,
			.now = at(kc_json_str(f, "now")),
		}, &t, &st) == 0, "%s: %s", name, st.message);
		ck_assert_str_eq(kc_json_str(t, "kind"), "Table");
		ck_assert_str_eq(kc_json_str(t, "apiVersion"), "meta.k8s.io/v1");
		rv = kc_json_str(f, "list", "metadata", "resourceVersion");
		ck_assert_str_eq(kc_json_str(t, "metadata", "resourceVersion"), rv);
		p = project_columns(kc_json_get(t, "columnDefinitions"));
		assert_json_eq(p, kc_json_get(f, "columns"), name);
		json_object_put(p);
		rows = kc_json_arr_of(t, "rows");
		cells = json_object_new_array();
		for (size_t k = 0; k < json_object_array_length(rows); k++) {
			struct json_object *row = json_object_array_get_idx(rows, k);

			json_object_array_add(cells, json_object_get(kc_json_get(row, "cells")));
			ck_assert(json_object_object_get_ex(row, "object", NULL));
			ck_assert_ptr_null(kc_json_get(row, "object"));
			if (want_cond != NULL)
				assert_json_eq(kc_json_get(row, "conditions"),
				    json_object_array_get_idx(want_cond, k), name);
			else
				ck_assert_ptr_null(kc_json_get(row, "conditions"));
			ck_assert_uint_eq(json_object_array_length(kc_json_get(row, "cells")),
			    json_object_array_length(kc_json_get(f, "columns")));
		}
		assert_json_eq(cells, kc_json_get(f, "rows"), name);
		json_object_put(cells);
		json_object_put(t);
		table_conv_free(tc);
		json_object_put(f);
	}
}
END_TEST

/* The sample of KUBE-API.md: cells, objects and metadata as kubectl gets them. */
START_TEST(test_pods_sample)
{
	struct json_object *want = fixture("table-pods.json"), *f = fixture("pods.json");
	struct json_object *list = json("{\"metadata\":{\"resourceVersion\":\"530\"},"
	    "\"items\":[]}"), *items = kc_json_get(list, "items");
	struct json_object *t = NULL, *wrows, *trows;
	struct table_conv *tc = NULL;

	/* The sample's two pods: fixture pods with the sample's metadata. */
	for (size_t i = 0; i < 2; i++) {
		struct json_object *pod = kc_json_copy(json_object_array_get_idx(
		    kc_json_get(f, "list", "items"), i));
		struct json_object *meta = kc_json_get(json_object_array_get_idx(
		    kc_json_get(want, "rows"), i), "object", "metadata");

		json_object_object_add(pod, "metadata", kc_json_copy(meta));
		json_object_array_add(items, pod);
	}
	ck_assert_int_eq(table_conv_builtin("", "pods", &tc), 0);
	ck_assert_int_eq(table_list(tc, list, &(struct table_opts){
		.now = at("2026-01-15T10:06:30Z"),
	}, &t, NULL), 0);
	ck_assert_str_eq(kc_json_str(t, "apiVersion"), "meta.k8s.io/v1");
	assert_json_eq(kc_json_get(t, "metadata"), kc_json_get(want, "metadata"), "metadata");
	wrows = kc_json_get(want, "rows");
	trows = kc_json_get(t, "rows");
	assert_json_eq(trows, wrows, "rows");
	for (size_t i = 0; i < json_object_array_length(kc_json_get(want,
	    "columnDefinitions")); i++) {
		struct json_object *w = json_object_array_get_idx(kc_json_get(want,
		    "columnDefinitions"), i);
		struct json_object *g = json_object_array_get_idx(kc_json_get(t,
		    "columnDefinitions"), i);

		ck_assert_str_eq(kc_json_str(g, "name"), kc_json_str(w, "name"));
		ck_assert_str_eq(kc_json_str(g, "type"), kc_json_str(w, "type"));
		ck_assert_str_eq(kc_json_str(g, "format"), kc_json_str(w, "format"));
		ck_assert_int_eq(kc_json_int(g, -1, "priority"), kc_json_int(w, -2, "priority"));
	}
	json_object_put(t);
	table_conv_free(tc);
	json_object_put(list);
	json_object_put(f);
	json_object_put(want);
}
END_TEST

START_TEST(test_namespace_full)
{
	struct json_object *f = fixture("namespaces.json"), *t = NULL;
	struct table_conv *tc = NULL;
	struct json_object *want = json("{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\","
	    "\"metadata\":{\"resourceVersion\":\"77\",\"continue\":\"tok-1\","
	    "\"remainingItemCount\":4},\"columnDefinitions\":["
	    "{\"name\":\"Name\",\"type\":\"string\",\"format\":\"name\",\"description\":"
	    "\"Name must be unique within a namespace. Is required when creating resources, "
	    "although some resources may allow a client to request the generation of an "
	    "appropriate name automatically. Name is primarily intended for creation "
	    "idempotence and configuration definition. Cannot be updated. More info: "
	    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names\","
	    "\"priority\":0},"
	    "{\"name\":\"Status\",\"type\":\"string\",\"format\":\"\",\"description\":"
	    "\"The status of the namespace\",\"priority\":0},"
	    "{\"name\":\"Age\",\"type\":\"string\",\"format\":\"\",\"description\":"
	    "\"CreationTimestamp is a timestamp representing the server time when this "
	    "object was created. It is not guaranteed to be set in happens-before order "
	    "across separate operations. Clients may not set this value. It is represented "
	    "in RFC3339 form and is in UTC.\\n\\nPopulated by the system. Read-only. Null "
	    "for lists. More info: https://git.k8s.io/community/contributors/devel/"
	    "sig-architecture/api-conventions.md#metadata\",\"priority\":0}],"
	    "\"rows\":[{\"cells\":[\"default\",\"Active\",\"5s\"],\"object\":{\"kind\":"
	    "\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1beta1\",\"metadata\":"
	    "{\"name\":\"default\",\"creationTimestamp\":\"2026-01-15T10:06:25Z\"}}}]}");
	struct json_object *list = kc_json_copy(kc_json_get(f, "list"));
	char *text;

	json_object_array_del_idx(kc_json_get(list, "items"), 1, 2);
	ck_assert_int_eq(table_conv_builtin("", "namespaces", &tc), 0);
	ck_assert_int_eq(table_list(tc, list, &(struct table_opts){
		.version = TABLE_V1BETA1,
		.now = at(kc_json_str(f, "now")),
	}, &t, NULL), 0);
	json_object_object_add(want, "apiVersion", json_object_new_string(
	    "meta.k8s.io/v1beta1"));
	assert_json_eq(t, want, "namespace table");
	/* Key order as kube-apiserver writes it. */
	text = kc_json_dump(t, NULL);
	ck_assert(strncmp(text, "{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1beta1\","
	    "\"metadata\":{", 60) == 0);
	ck_assert_ptr_nonnull(strstr(text, "\"rows\":[{\"cells\":[\"default\",\"Active\","
	    "\"5s\"],\"object\":{\"kind\":\"PartialObjectMetadata\""));
	kc_free(text);
	json_object_put(t);
	json_object_put(want);
	json_object_put(list);
	table_conv_free(tc);
	json_object_put(f);
}
END_TEST

START_TEST(test_include_modes)
{
	struct json_object *cm = json("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
	    "\"metadata\":{\"name\":\"c\",\"resourceVersion\":\"5\",\"labels\":{\"a\":\"b\"}},"
	    "\"data\":{\"k\":\"v\"}}");
	struct json_object *bare = json("{\"kind\":\"ConfigMap\"}");
	struct json_object *t = NULL, *obj;
	struct table_conv *tc = NULL;
	struct table_opts opts = { .now = 0 };

	ck_assert_int_eq(table_conv_builtin("", "configmaps", &tc), 0);

	opts.include = TABLE_INCLUDE_METADATA;
	ck_assert_int_eq(table_object(tc, cm, &opts, &t, NULL), 0);
	obj = kc_json_get(json_object_array_get_idx(kc_json_arr_of(t, "rows"), 0), "object");
	ck_assert_str_eq(kc_json_str(obj, "kind"), "PartialObjectMetadata");
	ck_assert_str_eq(kc_json_str(obj, "apiVersion"), "meta.k8s.io/v1");
	assert_json_eq(kc_json_get(obj, "metadata"), kc_json_get(cm, "metadata"), "partial");
	ck_assert_ptr_null(kc_json_get(obj, "data"));
	ck_assert_str_eq(kc_json_str(t, "metadata", "resourceVersion"), "5");
	json_object_put(t);

	opts.include = TABLE_INCLUDE_OBJECT;
	opts.version = TABLE_V1BETA1;
	ck_assert_int_eq(table_object(tc, cm, &opts, &t, NULL), 0);
	obj = kc_json_get(json_object_array_get_idx(kc_json_arr_of(t, "rows"), 0), "object");
	assert_json_eq(obj, cm, "whole object");
	ck_assert_str_eq(kc_json_str(t, "apiVersion"), "meta.k8s.io/v1beta1");
	json_object_put(t);

	opts.include = TABLE_INCLUDE_NONE;
	ck_assert_int_eq(table_object(tc, cm, &opts, &t, NULL), 0);
	ck_assert(json_object_object_get_ex(json_object_array_get_idx(
	    kc_json_arr_of(t, "rows"), 0), "object", &obj));
	ck_assert_ptr_null(obj);
	json_object_put(t);

	/* No metadata at all: an empty one; no resourceVersion on the table. */
	opts.include = TABLE_INCLUDE_METADATA;
	opts.version = TABLE_V1BETA1;
	ck_assert_int_eq(table_object(tc, bare, &opts, &t, NULL), 0);
	obj = kc_json_get(json_object_array_get_idx(kc_json_arr_of(t, "rows"), 0), "object");
	ck_assert_str_eq(kc_json_str(obj, "apiVersion"), "meta.k8s.io/v1beta1");
	ck_assert_uint_eq(json_object_object_length(kc_json_get(obj, "metadata")), 0);
	ck_assert_uint_eq(json_object_object_length(kc_json_get(t, "metadata")), 0);
	assert_json_text(cells_of(t, 0), "[\"\",0,\"<unknown>\"]", "bare cells");
	json_object_put(t);

	table_conv_free(tc);
	json_object_put(cm);
	json_object_put(bare);
}
END_TEST

/* Watch events: one row each, headers on the first only. */
START_TEST(test_watch_events)
{
	struct json_object *f = fixture("crd-runs.json"), *runs = fixture("runs.json");
	struct json_object *r1 = json_object_array_get_idx(kc_json_get(runs, "list", "items"), 0);
	struct json_object *t = NULL;
	struct table_conv *tc = NULL;
	struct table_opts opts = { .now = at("2026-01-15T10:05:12Z") };

	ck_assert_int_eq(table_conv_crd(f, "v1beta1", &tc, NULL), 0);
	ck_assert_int_eq(table_object(tc, r1, &opts, &t, NULL), 0);
	ck_assert_uint_eq(json_object_array_length(kc_json_get(t, "columnDefinitions")), 5);
	ck_assert_str_eq(kc_json_str(t, "metadata", "resourceVersion"), "401");
	ck_assert_uint_eq(json_object_array_length(kc_json_get(t, "rows")), 1);
	json_object_put(t);
	opts.no_headers = true;
	ck_assert_int_eq(table_object(tc, r1, &opts, &t, NULL), 0);
	ck_assert(json_object_object_get_ex(t, "columnDefinitions", NULL));
	ck_assert_ptr_null(kc_json_get(t, "columnDefinitions"));
	assert_json_text(cells_of(t, 0), "[\"r1\",\"Running\",8,\"True\",\"5m12s\"]",
	    "event cells");
	json_object_put(t);
	table_conv_free(tc);
	json_object_put(f);
	json_object_put(runs);
}
END_TEST

START_TEST(test_empty_and_errors)
{
	struct json_object *empty = json("{\"metadata\":{\"resourceVersion\":\"3\"},"
	    "\"items\":[]}"), *noitems = json("{\"metadata\":{}}");
	struct json_object *badlist = json("{\"items\":{}}"), *baditem = json("{\"items\":[1]}");
	struct json_object *t = NULL, *cols = NULL, *str = json_object_new_string("x");
	struct table_conv *tc = NULL, *dc = NULL;
	struct table_opts opts = { .now = 0 };
	struct kc_status st = { 0 };

	ck_assert_int_eq(table_conv_builtin("", "pods", &tc), 0);
	ck_assert_int_eq(table_conv_builtin("rbac.authorization.k8s.io", "roles", &dc), 0);
	ck_assert(table_has_printer("", "pods"));
	ck_assert(table_has_printer("events.k8s.io", "events"));
	ck_assert(!table_has_printer("rbac.authorization.k8s.io", "roles"));
	ck_assert(!table_has_printer("apps", "pods"));
	ck_assert_int_eq(table_conv_definitions(dc, &cols), 0);
	ck_assert_uint_eq(json_object_array_length(cols), 2);
	ck_assert_str_eq(kc_json_str(json_object_array_get_idx(cols, 1), "name"), "Created At");
	json_object_put(cols);

	/* Printers give [] for an empty list; the default convertor gives null. */
	ck_assert_int_eq(table_list(tc, empty, &opts, &t, NULL), 0);
	ck_assert(json_object_is_type(kc_json_get(t, "rows"), json_type_array));
	ck_assert_uint_eq(json_object_array_length(kc_json_get(t, "rows")), 0);
	ck_assert_str_eq(kc_json_str(t, "metadata", "resourceVersion"), "3");
	json_object_put(t);
	ck_assert_int_eq(table_list(dc, noitems, &opts, &t, NULL), 0);
	ck_assert(json_object_object_get_ex(t, "rows", NULL));
	ck_assert_ptr_null(kc_json_get(t, "rows"));
	json_object_put(t);

	t = NULL;
	ck_assert_int_eq(table_list(tc, badlist, &opts, &t, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "list items: not an array");
	ck_assert_int_eq(table_list(tc, baditem, &opts, &t, &st), KC_EINVALID);
	ck_assert_str_eq(st.message, "table row 0: not an object");
	ck_assert_int_eq(table_object(tc, str, &opts, &t, &st), KC_EINVALID);
	ck_assert_int_eq(table_object(tc, NULL, &opts, &t, &st), KC_EINVALID);
	ck_assert_ptr_null(t);

	table_conv_free(tc);
	table_conv_free(dc);
	json_object_put(empty);
	json_object_put(noitems);
	json_object_put(badlist);
	json_object_put(baditem);
	json_object_put(str);
}
END_TEST

/*
 * Allocation failures
 */

START_TEST(test_alloc_jsonpath)
{
	static const char *const tmpls[] = {
		"x{range .items[*]}[{.name}{.n}]{end}{.status.conditions[?(@.type==\"Ready\")]"
		    ".status}{.metadata['name','labels']}{..name}{.spec.tags[0:3:2]}"
		    "{\"q\\t\"}{.spec}{.spec.ratio}{.metadata.labels.*}",
		"{.status.conditions[?(@.extra)].type}{.spec.tags[-1]}{5}{true}{-1.5}",
	};
	struct json_object *doc = json(DOC);

	for (size_t t = 0; t < KC_ARRAY_SIZE(tmpls); t++) {
		char *want = NULL;

		for (size_t budget = 0;; budget++) {
			struct jsonpath *jp = NULL;
			struct kc_buf out;
			int r;

			kc_buf_init(&out, 1 << 20);
			fail_alloc_after(budget);
			r = jsonpath_parse(tmpls[t], &jp, NULL);
			if (r == 0)
				r = jsonpath_execute(jp, doc, AM, &out, NULL);
			fail_alloc_after(SIZE_MAX);
			jsonpath_free(jp);
			if (r == 0) {
				want = kc_strdup(kc_buf_str(&out));
				kc_buf_free(&out);
				break;
			}
			ck_assert_int_eq(r, -ENOMEM);
			kc_buf_free(&out);
		}
		ck_assert_ptr_nonnull(want);
		ck_assert_uint_gt(strlen(want), 10);
		kc_free(want);
	}
	json_object_put(doc);
}
END_TEST

static void
alloc_table(const char *group, const char *resource, const struct json_object *crd,
    const struct json_object *list, time_t now)
{
	struct json_object *want = NULL;

	for (size_t budget = 0;; budget++) {
		struct table_conv *tc = NULL;
		struct json_object *t = NULL;
		int r;

		fail_alloc_after(budget);
		if (crd != NULL)
			r = table_conv_crd(crd, "v1beta1", &tc, NULL);
		else
			r = table_conv_builtin(group, resource, &tc);
		if (r == 0)
			r = table_list(tc, list, &(struct table_opts){ .now = now }, &t, NULL);
		fail_alloc_after(SIZE_MAX);
		table_conv_free(tc);
		if (r == 0) {
			want = t;
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_ptr_null(t);
	}
	ck_assert_ptr_nonnull(want);
	ck_assert_uint_gt(json_object_array_length(kc_json_get(want, "rows")), 0);
	json_object_put(want);
}

START_TEST(test_alloc_table)
{
	struct json_object *crd = fixture("crd-runs.json"), *runs = fixture("runs.json");

	alloc_table(NULL, NULL, crd, kc_json_get(runs, "list"), at("2026-01-15T10:05:12Z"));
	for (size_t i = 0; i < KC_ARRAY_SIZE(printer_fixtures); i++) {
		struct json_object *f = fixture(printer_fixtures[i]);

		alloc_table(kc_json_str(f, "group"), kc_json_str(f, "resource"), NULL,
		    kc_json_get(f, "list"), at(kc_json_str(f, "now")));
		json_object_put(f);
	}
	json_object_put(crd);
	json_object_put(runs);
}
END_TEST

Suite *
dc_table_suite(void)
{
	Suite *s = suite_create("dc_table");
	TCase *tc;

	tc = tcase_create("ages");
	tcase_add_test(tc, test_durations);
	tcase_add_test(tc, test_ages);
	tcase_add_test(tc, test_time_parse);
	tcase_add_test(tc, test_include_parse);
	suite_add_tcase(s, tc);

	tc = tcase_create("jsonpath");
	tcase_add_test(tc, test_jsonpath_cases);
	tcase_add_test(tc, test_jsonpath_results);
	tcase_add_test(tc, test_jsonpath_reuse);
	tcase_add_test(tc, test_jsonpath_limits);
	tcase_add_test(tc, test_jsonpath_eval_limits);
	tcase_add_test(tc, test_jsonpath_marshal);
	suite_add_tcase(s, tc);

	tc = tcase_create("crd");
	tcase_add_test(tc, test_crd_runs);
	tcase_add_test(tc, test_crd_versions);
	tcase_add_test(tc, test_crd_columns_invalid);
	tcase_add_test(tc, test_crd_cells);
	suite_add_tcase(s, tc);

	tc = tcase_create("printers");
	tcase_add_test(tc, test_pod_rules);
	tcase_add_test(tc, test_printers);
	tcase_add_test(tc, test_pods_sample);
	tcase_add_test(tc, test_namespace_full);
	suite_add_tcase(s, tc);

	tc = tcase_create("tables");
	tcase_add_test(tc, test_include_modes);
	tcase_add_test(tc, test_watch_events);
	tcase_add_test(tc, test_empty_and_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("alloc");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_alloc_jsonpath);
	tcase_add_test(tc, test_alloc_table);
	suite_add_tcase(s, tc);
	return s;
}

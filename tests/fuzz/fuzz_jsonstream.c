/*
 * fuzz_jsonstream.c: the yajl stream of JSON values with a keep-path
 * filter (lib/jsonstream.c), fed in pieces whose sizes the input's first
 * byte picks; the same bytes in one piece must give the same values.
 */
#include <errno.h>
#include <string.h>

#include <kc/err.h>
#include <kc/jsonstream.h>

#include "fuzz.h"

struct count {
	size_t	n;
	size_t	bytes;
};

static int
on_value(void *arg, struct json_object *obj, struct kc_status *st)
{
	struct count *c = arg;
	(void)st;
	c->n++;
	c->bytes += fuzz_json_size(obj);
	return 0;
}

static int
run(const struct kc_json_filter *f, const char *data, size_t size, size_t step,
    struct count *c)
{
	struct kc_json_stream *s = NULL;
	struct kc_status st = { 0 };
	int r;

	r = kc_json_stream_new(&(struct kc_json_stream_opts){
		.filter = f,
		.max_value = 64 << 10,
		.what = "fuzz stream",
		.unit = "value",
		.fn = on_value,
		.arg = c,
	}, &s);
	if (r < 0)
		return r;
	for (size_t off = 0; off < size && r == 0; off += step)
		r = kc_json_stream_feed(s, data + off, KC_MIN(step, size - off), &st);
	if (r == 0)
		r = kc_json_stream_finish(s, &st);
	kc_json_stream_free(s);
	return r;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const paths[] = {
		"metadata.name", "metadata.labels", "spec.nodes", "items", "status",
	};
	struct kc_json_filter *f = NULL;
	struct count one = { 0 }, split = { 0 };
	size_t step;
	int r1, r2;

	if (size < 1 || size > FUZZ_INPUT_MAX)
		return 0;
	step = (data[0] & 0x1f) + 1;
	if ((data[0] & 0x80) && kc_json_filter_new(paths, KC_ARRAY_SIZE(paths), &f, NULL) < 0)
		return 0;
	r1 = run(f, (const char *)data + 1, size - 1, size, &one);
	r2 = run(f, (const char *)data + 1, size - 1, step, &split);
	if (r1 != -ENOMEM && r2 != -ENOMEM) {
		FUZZ_CHECK((r1 == 0) == (r2 == 0));
		if (r1 == 0)
			FUZZ_CHECK(one.n == split.n && one.bytes == split.bytes);
	}
	kc_json_filter_free(f);
	return 0;
}

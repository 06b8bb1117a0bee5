/*
 * fuzz_watch.c: the watch-stream decoder (lib/watch.c). The stream is
 * decoded whole, then split at every byte (one byte per feed), then at a
 * split point the input picks: every way must give the same events and
 * the same verdict.
 */
#include <errno.h>
#include <string.h>

#include <kc/err.h>
#include <kc/jsonstream.h>
#include <kc/watch.h>

#include "internal.h"

#include "fuzz.h"

#define EVENTS_MAX	64

struct seen {
	size_t	n;
	int	types[EVENTS_MAX];
	size_t	bytes;
};

static int
on_event(void *arg, int type, struct json_object *obj, struct kc_status *st)
{
	struct seen *s = arg;
	(void)st;
	if (s->n < EVENTS_MAX)
		s->types[s->n] = type;
	s->n++;
	s->bytes += fuzz_json_size(obj);
	return 0;
}

static int
decode(const char *data, size_t size, size_t step, struct seen *s)
{
	struct kc__watch_decoder *d = NULL;
	struct kc_status st = { 0 };
	int r;

	memset(s, 0, sizeof(*s));
	if ((r = kc__watch_decoder_new(64 << 10, NULL, on_event, s, &d)) < 0)
		return r;
	for (size_t off = 0; off < size && r == 0; off += step)
		r = kc__watch_decoder_feed(d, data + off, KC_MIN(step, size - off), &st);
	if (r == 0)
		r = kc__watch_decoder_finish(d, &st);
	kc__watch_decoder_free(d);
	return r;
}

static void
same(int r1, const struct seen *a, int r2, const struct seen *b)
{
	if (r1 == -ENOMEM || r2 == -ENOMEM)
		return;
	FUZZ_CHECK((r1 == 0) == (r2 == 0));
	if (r1 != 0)
		return;
	FUZZ_CHECK(a->n == b->n && a->bytes == b->bytes);
	FUZZ_CHECK(memcmp(a->types, b->types, sizeof(a->types)) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen whole, bytes, split;
	int r1, r2, r3;

	if (size < 1 || size > 16 << 10)
		return 0;
	r1 = decode((const char *)data + 1, size - 1, size, &whole);
	r2 = decode((const char *)data + 1, size - 1, 1, &bytes);
	r3 = decode((const char *)data + 1, size - 1, (size_t)data[0] + 1, &split);
	same(r1, &whole, r2, &bytes);
	same(r1, &whole, r3, &split);
	return 0;
}

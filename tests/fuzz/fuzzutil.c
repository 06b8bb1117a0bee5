/*
 * fuzzutil.c: helpers the fuzz targets share (fuzz.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kc/alloc.h>
#include <kc/json.h>

#include "fuzz.h"

void
fuzz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: fuzz check failed: %s\n", file, line, what);
	abort();
}

char *
fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s == NULL)
		return NULL;
	if (size > 0)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

int
fuzz_split(const uint8_t *data, size_t size, char **ret, size_t n)
{
	const char *p = (const char *)data, *end = p + size;
	size_t seplen = strlen(FUZZ_SEP), i;
	int found = 0;

	for (i = 0; i < n; i++)
		ret[i] = NULL;
	for (i = 0; i < n; i++) {
		const char *q = NULL;

		if (p != NULL && i + 1 < n)
			q = memmem(p, (size_t)(end - p), FUZZ_SEP, seplen);
		if (p == NULL)
			ret[i] = fuzz_str((const uint8_t *)"", 0);
		else if (q == NULL) {
			ret[i] = fuzz_str((const uint8_t *)p, (size_t)(end - p));
			found++;
			p = NULL;
		} else {
			ret[i] = fuzz_str((const uint8_t *)p, (size_t)(q - p));
			found++;
			p = q + seplen;
		}
		if (ret[i] == NULL) {
			fuzz_parts_free(ret, n);
			return -1;
		}
	}
	return found;
}

void
fuzz_parts_free(char **parts, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(parts[i]);
		parts[i] = NULL;
	}
}

struct json_object *
fuzz_json(const char *text)
{
	struct json_object *o = NULL;

	if (kc_json_parse(text, strlen(text), &o, NULL) < 0)
		return NULL;
	return o;
}

size_t
fuzz_json_size(struct json_object *o)
{
	size_t len = 0;

	if (o != NULL)
		(void)json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
	return len;
}

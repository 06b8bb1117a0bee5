/*
 * fuzz.h: what the libFuzzer targets (fuzz_<name>.c) share.
 *
 * Each target defines LLVMFuzzerTestOneInput(), the one entry point both
 * drivers call: libFuzzer's (clang, "make fuzz") and replay.c's (gcc, the
 * unit tests' sanitizers, "make fuzz-replay"). A target must not leak,
 * must not keep state that changes what a later input does, and must
 * treat every failure of the code under test as an answer, not a crash.
 * A property the code promises (a round trip, a bound) is checked with
 * FUZZ_CHECK(), which aborts, so the fuzzer reports it as a crash.
 */
#ifndef TY_FUZZ_H
#define TY_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include <kc/macro.h>

#define FUZZ_INPUT_MAX	(256u << 10)	/* bytes a target looks at */

int	LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with the file, line and condition when 'cond' is false. */
#define FUZZ_CHECK(cond)						\
	do {								\
		if (!(cond))						\
			fuzz_fail(__FILE__, __LINE__, #cond);		\
	} while (0)

_Noreturn void	fuzz_fail(const char *file, int line, const char *what);

/* A NUL-terminated copy of the input (NUL bytes kept); NULL on -ENOMEM. */
char	*fuzz_str(const uint8_t *data, size_t size);

/*
 * Splits the input at the first "\n\n---\n\n" (fuzz_split's separator)
 * into up to 'n' NUL-terminated parts, each a new string in ret[i]
 * (missing ones are ""). Returns the number of parts found, or -1 on
 * -ENOMEM (nothing to free then). Free with fuzz_parts_free().
 */
#define FUZZ_SEP	"\n\n---\n\n"
int	fuzz_split(const uint8_t *data, size_t size, char **ret, size_t n);
void	fuzz_parts_free(char **parts, size_t n);

/* Parses JSON leniently for a target's fixed inputs; NULL if not JSON. */
struct json_object *fuzz_json(const char *text);

/* The bytes of 'o' printed plainly (0 for NULL): a digest to compare runs by. */
size_t	fuzz_json_size(struct json_object *o);


#endif

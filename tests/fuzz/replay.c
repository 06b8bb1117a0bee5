/*
 * replay.c: feeds files to a fuzz target's LLVMFuzzerTestOneInput()
 * without libFuzzer, so "make test" replays the seed corpora and every
 * regression input with gcc and the unit tests' sanitizers.
 *
 *	replay_<target> [-n N] PATH... [-n N PATH...]
 *
 * A PATH that is a directory gives its files (sorted, not recursive); -n
 * takes at most N files from each directory named after it. Prints "replay: <n> inputs"
 * and exits 0, or stops at the first crash, which the sanitizer reports
 * with the file named on stderr just before.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int
run_file(const char *path, size_t *count)
{
	FILE *f;
	uint8_t *data = NULL;
	size_t len = 0, cap = 0, n;

	if ((f = fopen(path, "rb")) == NULL) {
		fprintf(stderr, "replay: %s: %m\n", path);
		return -1;
	}
	do {
		if (len == cap) {
			uint8_t *p;

			cap = cap == 0 ? 4096 : cap * 2;
			if ((p = realloc(data, cap)) == NULL) {
				free(data);
				fclose(f);
				return -1;
			}
			data = p;
		}
		n = fread(data + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	fclose(f);
	fprintf(stderr, "replay: %s\n", path);
	(void)LLVMFuzzerTestOneInput(data, len);
	free(data);
	(*count)++;
	return 0;
}

static int
name_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int
run_path(const char *path, long limit, size_t *count)
{
	struct dirent **ents = NULL;
	struct stat sb;
	int n, r = 0;
	long taken = 0;

	if (stat(path, &sb) < 0) {
		/* A target without regressions yet has no directory. */
		return errno == ENOENT ? 0 : -1;
	}
	if (!S_ISDIR(sb.st_mode))
		return run_file(path, count);
	if ((n = scandir(path, &ents, NULL, name_cmp)) < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		char sub[4096];

		if (r == 0 && ents[i]->d_name[0] != '.' &&
		    (limit < 0 || taken < limit) &&
		    (size_t)snprintf(sub, sizeof(sub), "%s/%s", path, ents[i]->d_name) <
		    sizeof(sub) && stat(sub, &sb) == 0 && S_ISREG(sb.st_mode)) {
			r = run_file(sub, count);
			taken++;
		}
		free(ents[i]);
	}
	free(ents);
	return r;
}

int
main(int argc, char **argv)
{
	size_t count = 0;
	long limit = -1;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
			limit = strtol(argv[++i], NULL, 10);
			continue;
		}
		if (run_path(argv[i], limit, &count) < 0) {
			fprintf(stderr, "replay: %s: cannot read\n", argv[i]);
			return 1;
		}
	}
	printf("replay: %zu inputs\n", count);
	return 0;
}

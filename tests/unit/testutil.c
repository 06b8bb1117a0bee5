/*
 * testutil.c: fixture files and temporary directories for the unit suites.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kc/alloc.h>
#include <kc/str.h>

#include "testutil.h"

#ifndef KC_FIXTURES
#error "KC_FIXTURES must name the fixtures directory"
#endif

const char *
tu_fixture_path(const char *name)
{
	static char path[PATH_MAX];

	ck_assert_uint_lt(kc_strlcpy(path, KC_FIXTURES "/", sizeof(path)), sizeof(path));
	ck_assert_uint_lt(kc_strlcat(path, name, sizeof(path)), sizeof(path));
	return path;
}

char *
tu_fixture(const char *name, size_t *ret_len)
{
	char *text = NULL;
	int r;

	r = kc_read_file(tu_fixture_path(name), 64u << 20, &text, ret_len);
	ck_assert_msg(r == 0, "fixture %s: %s", name, strerrordesc_np(-r));
	return text;
}

char *
tu_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *dir;

	dir = kc_asprintf("%s/kc-test-XXXXXX", base != NULL ? base : "/tmp");
	ck_assert_ptr_nonnull(dir);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	return dir;
}

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void
tu_tmpdir_remove(char *dir)
{
	if (dir == NULL)
		return;
	(void)nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	kc_free(dir);
}

char *
tu_write(const char *dir, const char *name, const char *text)
{
	char *path = kc_asprintf("%s/%s", dir, name);

	ck_assert_ptr_nonnull(path);
	ck_assert_int_eq(kc_write_file_atomic(path, text, strlen(text), 0600), 0);
	return path;
}

unsigned
tu_rand(unsigned n)
{
	static uint64_t x = 0x9e3779b97f4a7c15u;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return (unsigned)(x % n);
}

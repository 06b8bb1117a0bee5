/*
 * fuzz_kubeconfig.c: kubeconfig files (lib/kubeconfig.c): the input is
 * written to a file in a private directory and loaded as kubectl would,
 * with the current context and with a context, cluster and user named
 * "dev". Relative certificate paths resolve inside that directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kc/err.h>
#include <kc/kubeconfig.h>
#include <kc/str.h>

#include "fuzz.h"

static char dir[64];
static char file[96];

static void
cleanup(void)
{
	(void)unlink(file);
	(void)rmdir(dir);
}

static int
setup(void)
{
	if (file[0] != '\0')
		return 0;
	kc_strlcpy(dir, "/tmp/ty-fuzz-kubeconfig.XXXXXX", sizeof(dir));
	if (mkdtemp(dir) == NULL)
		return -errno;
	(void)snprintf(file, sizeof(file), "%s/config", dir);
	return atexit(cleanup) == 0 ? 0 : -ENOMEM;
}

static void
load(const struct kc_kubeconfig_opts *opts)
{
	struct kc_rest_config *rc = NULL, *copy = NULL;
	struct kc_status st = { 0 };

	if (kc_kubeconfig_load(opts, &rc, &st) < 0)
		return;
	FUZZ_CHECK(rc->server != NULL && rc->server[0] != '\0');
	if (kc_rest_config_copy(rc, &copy) == 0)
		kc_rest_config_free(copy);
	kc_rest_config_free(rc);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *paths[1];
	ssize_t n;
	int fd;

	if (size > 64 << 10 || setup() < 0)
		return 0;
	if ((fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
		return 0;
	n = size > 0 ? write(fd, data, size) : 0;
	close(fd);
	if (n != (ssize_t)size)
		return 0;
	paths[0] = file;
	load(&(struct kc_kubeconfig_opts){ .paths = paths, .npaths = 1 });
	load(&(struct kc_kubeconfig_opts){ .paths = paths, .npaths = 1, .context = "dev",
	    .cluster = "dev", .user = "dev", .namespace = "ns" });
	return 0;
}

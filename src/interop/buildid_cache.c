// SPDX-License-Identifier: MIT
/*
 * The layout follows perf's tools/perf/util/build-id.c (build_id_cache__add()
 * writes <cache>/<path>/<sbuild_id>/elf and the .build-id/<xx>/<rest> link
 * made by build_id_cache__linkname(); vdso entries are named "vdso").
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "base/common.h"
#include "base/util.h"
#include "interop/buildid_cache.h"

bool prec_bidcache_find(const char *cache, const uint8_t *id, size_t n, char *out, size_t size)
{
	static const char *const inner[] = { "elf", "vdso" };
	char h[2 * 64 + 1];
	struct stat st;
	size_t i;

	if (n < 2 || n > 64)
		return false;
	prec_hex(h, id, n);
	if (snprintf(out, size, "%s/.build-id/%.2s/%s", cache, h, h + 2) >= (int)size ||
	    stat(out, &st))
		return false;
	if (S_ISREG(st.st_mode))
		return true; /* older perf linked the file itself */
	if (!S_ISDIR(st.st_mode))
		return false;
	for (i = 0; i < PREC_ARRAY_SIZE(inner); i++) {
		if (snprintf(out, size, "%s/.build-id/%.2s/%s/%s", cache, h, h + 2, inner[i]) <
			    (int)size &&
		    !stat(out, &st) && S_ISREG(st.st_mode))
			return true;
	}
	return false;
}

int prec_bidcache_mkdir(char *path)
{
	char *s;

	for (s = path + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(path, 0755) && errno != EEXIST) {
			*s = '/';
			return -errno;
		}
		*s = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

static int path_fmt(char *buf, size_t size, const char *fmt, ...) prec_printf(3, 4);
static int path_fmt(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int prec_bidcache_add(const char *cache, const char *path, const uint8_t *id, size_t n,
		      char *file, size_t size)
{
	char hex[2 * 64 + 1], dir[2048], link[2048], target[2048];
	const char *rel = path[0] == '/' ? path + 1 : path;
	int err;

	if (n < 2 || n > 64)
		return -EINVAL;
	prec_hex(hex, id, n);
	err = path_fmt(dir, sizeof(dir), "%s/%s/%s", cache, rel, hex);
	if (!err)
		err = path_fmt(file, size, "%s/%s", dir, strcmp(path, "[vdso]") ? "elf" : "vdso");
	if (!err)
		err = prec_bidcache_mkdir(dir);
	if (!err)
		err = path_fmt(link, sizeof(link), "%s/.build-id/%.2s", cache, hex);
	if (!err)
		err = prec_bidcache_mkdir(link);
	if (!err)
		err = path_fmt(link, sizeof(link), "%s/.build-id/%.2s/%s", cache, hex, hex + 2);
	if (!err)
		err = path_fmt(target, sizeof(target), "../../%s/%s", rel, hex);
	if (err)
		return err;
	unlink(link);
	if (symlink(target, link))
		return -errno;
	return 0;
}

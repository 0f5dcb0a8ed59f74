// SPDX-License-Identifier: MIT
/*
 * Fuzz target: a CoreSight snapshot directory (ptdump --snapshot DIR), every
 * view. The input packs the directory's files (tests/fuzz/pack.sh makes the
 * corpus from real snapshot directories): repeated
 *	NAME '\0' LENGTH(4 bytes, little endian) BYTES
 * with NAME made of [A-Za-z0-9._-] (other names end the input). The files
 * are written to a directory of this process in /dev/shm (memory) that is
 * emptied for every input.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "interop/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void empty_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
}

static int name_ok(const char *n)
{
	if (!*n || !strcmp(n, ".") || !strcmp(n, ".."))
		return 0;
	for (; *n; n++)
		if (!((*n >= 'a' && *n <= 'z') || (*n >= 'A' && *n <= 'Z') ||
		      (*n >= '0' && *n <= '9') || *n == '.' || *n == '_' || *n == '-'))
			return 0;
	return 1;
}

/* Writes the packed files into @dir; returns how many. */
static int unpack(const uint8_t *p, size_t n, const char *dir)
{
	size_t i = 0;
	int files = 0;

	while (i < n && files < 64) {
		const uint8_t *z = memchr(p + i, 0, n - i < 65 ? n - i : 65);
		char path[512];
		uint32_t len;
		int fd;

		if (!z || i + (size_t)(z - (p + i)) + 5 > n || !name_ok((const char *)p + i))
			break;
		snprintf(path, sizeof(path), "%s/%s", dir, (const char *)p + i);
		i = (size_t)(z - p) + 1;
		len = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 |
		      (uint32_t)p[i + 3] << 24;
		i += 4;
		if (len > n - i)
			len = (uint32_t)(n - i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			break;
		if (write(fd, p + i, len) != (ssize_t)len) {
			close(fd);
			break;
		}
		close(fd);
		i += len;
		files++;
	}
	return files;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[64];
	struct prec_snapshot_report rep;
	struct prec_session *s;
	struct prec_diag d;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/dev/shm/ptrec-fuzz-%d", (int)getpid());
		mkdir(dir, 0700);
	}
	empty_dir(dir);
	if (!unpack(data, size, dir))
		return 0;
	s = prec_session_new();
	if (s && prec_snapshot_load(s, dir, &rep, &d) == 0)
		fuzz_views(s, size, size ? data[size - 1] : 0);
	prec_session_free(s);
	return 0;
}

// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/outfile.h"

static int open_stream(struct prec_outfile *of, int fd)
{
	struct stat sb;

	if (isatty(fd))
		return -ENOTTY;
	if (fstat(fd, &sb) < 0)
		return -errno;
	of->fd = fd;
	of->is_stream = !S_ISREG(sb.st_mode);
	return 0;
}

/* An existing non-regular file the user named (/dev/null, a fifo): written as it is. */
static int open_special(struct prec_outfile *of)
{
	int fd = open(of->path, O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	of->fd = fd;
	of->own_fd = true;
	of->is_stream = true;
	return 0;
}

static int open_temp(struct prec_outfile *of)
{
	const char *slash = strrchr(of->path, '/');
	int dirlen = slash ? (int)(slash - of->path + 1) : 0;
	int fd;

	/* Beside the target, so that the final rename stays in one file system. */
	if (asprintf(&of->tmp, "%.*s.%s.XXXXXX", dirlen, of->path,
		     slash ? slash + 1 : of->path) < 0) {
		of->tmp = NULL;
		return -ENOMEM;
	}
	fd = mkostemp(of->tmp, O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;

		free(of->tmp);
		of->tmp = NULL;
		return err;
	}
	/*
	 * mkostemp() creates 0600: traces hold the traced program's code and
	 * data. The exclusive lock says "being written" until the file is
	 * closed, also by the exit of a killed ptrec (ptdump --follow).
	 */
	(void)flock(fd, LOCK_EX | LOCK_NB);
	of->fd = fd;
	of->own_fd = true;
	return 0;
}

int prec_outfile_open(struct prec_outfile *of, const char *path, int stream_fd)
{
	struct stat sb;

	memset(of, 0, sizeof(*of));
	of->fd = -1;
	of->path = path;
	if (!path || !*path)
		return -EINVAL;
	if (!strcmp(path, "-"))
		return open_stream(of, stream_fd);
	if (stat(path, &sb) == 0) {
		if (S_ISDIR(sb.st_mode))
			return -EISDIR;
		if (!S_ISREG(sb.st_mode))
			return open_special(of);
	}
	if (path[strlen(path) - 1] == '/')
		return -EISDIR;
	return open_temp(of);
}

int prec_outfile_commit(struct prec_outfile *of)
{
	struct stat sb;

	if (!of->tmp)
		return 0;
	/*
	 * As perf's check_backup() (tools/perf/util/data.c): a previous
	 * non-empty file becomes FILE.old, replacing an older one.
	 */
	if (stat(of->path, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
		if (asprintf(&of->old, "%s.old", of->path) < 0) {
			of->old = NULL;
			return -ENOMEM;
		}
		if (rename(of->path, of->old) < 0) {
			int err = -errno;

			free(of->old);
			of->old = NULL;
			return err;
		}
	}
	if (rename(of->tmp, of->path) < 0) {
		int err = -errno;

		/* Put the previous file back where it was. */
		if (of->old && rename(of->old, of->path) == 0) {
			free(of->old);
			of->old = NULL;
		}
		return err;
	}
	free(of->tmp);
	of->tmp = NULL;
	return 0;
}

int prec_outfile_close(struct prec_outfile *of)
{
	int err = 0;

	if (of->own_fd && of->fd >= 0 && close(of->fd) < 0)
		err = -errno;
	of->fd = -1;
	of->own_fd = false;
	if (of->tmp) {
		unlink(of->tmp);
		free(of->tmp);
		of->tmp = NULL;
	}
	free(of->old);
	of->old = NULL;
	return err;
}

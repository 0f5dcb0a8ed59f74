/* SPDX-License-Identifier: MIT */
/*
 * The recording's output file, so that no recording loses a trace: the new
 * file is written under a temporary name next to FILE and takes FILE's name
 * only once the recording has started (prec_outfile_commit()), moving the
 * previous FILE to FILE.old. A recording that fails before it starts leaves
 * FILE as it was. "-" is standard output (or the descriptor the caller
 * names), never a file of that name.
 */
#ifndef PREC_OUTFILE_H
#define PREC_OUTFILE_H

#include <stdbool.h>

struct prec_outfile {
	const char *path;	/* the name asked for (borrowed) */
	char *tmp;		/* the temporary name while not committed, else NULL */
	char *old;		/* where the previous file went, once committed (or NULL) */
	int fd;			/* where the trace goes (-1: not open) */
	bool own_fd;		/* opened here: closed by prec_outfile_close() */
	bool is_stream;		/* not a regular file (stdout, a pipe, a device) */
};

/*
 * Opens @path for a new trace: "-" is @stream_fd (a pipe or file; a
 * terminal is refused with -ENOTTY); an existing device, fifo or socket is
 * opened as it is; a directory is refused (-EISDIR); otherwise a temporary
 * file is created beside @path, mode 0600. Returns 0 or a negative errno.
 */
int prec_outfile_open(struct prec_outfile *of, const char *path, int stream_fd);

/*
 * The recording has started: the temporary file becomes @path, and a
 * previous non-empty regular file at @path is renamed to "@path.old" first
 * (as perf's check_backup() does). Idempotent. Returns 0 or a negative errno.
 */
int prec_outfile_commit(struct prec_outfile *of);

/* Closes the file; a file never committed is removed. Returns 0 or the close error. */
int prec_outfile_close(struct prec_outfile *of);

#endif

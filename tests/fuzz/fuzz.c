// SPDX-License-Identifier: MIT
/* Shared pieces of the fuzz targets: see fuzz.h. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "output/output.h"
#include "output/packets.h"

struct sink {
	size_t n, limit;
};

static ssize_t sink_write(void *cookie, const char *buf, size_t size)
{
	struct sink *k = cookie;

	(void)buf;
	k->n += size;
	if (k->n > k->limit)
		__builtin_trap(); /* output not paid for by the input */
	return (ssize_t)size;
}

static int sink_close(void *cookie)
{
	free(cookie);
	return 0;
}

FILE *fuzz_sink(size_t limit)
{
	cookie_io_functions_t io = { .write = sink_write, .close = sink_close };
	struct sink *k = calloc(1, sizeof(*k));
	FILE *f;

	if (!k)
		return NULL;
	k->limit = limit;
	f = fopencookie(k, "w", io);
	if (!f)
		free(k);
	return f;
}

void fuzz_views(struct prec_session *s, size_t input_size, unsigned which)
{
	static const enum prec_fmt fmts[] = {
		PREC_FMT_CALL_TRACE, PREC_FMT_CALL_RET_TRACE, PREC_FMT_INSN_TRACE,
		PREC_FMT_BRANCHES, PREC_FMT_STATS, PREC_FMT_EVENTS,
	};
	size_t limit = input_size * FUZZ_OUT_PER_BYTE + FUZZ_OUT_FIXED;
	struct prec_output_opts o;
	FILE *f = fuzz_sink(limit);

	if (!f)
		return;
	prec_output_opts_init(&o);
	which %= sizeof(fmts) / sizeof(fmts[0]) + 1;
	if (which < sizeof(fmts) / sizeof(fmts[0])) {
		o.fmt = fmts[which];
		prec_output_run(s, &o, f);
	} else {
		prec_pt_dump_packets(s, &o, f);
	}
	fclose(f);
}

int fuzz_memfd(const uint8_t *data, size_t size, char *path, size_t path_size)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	size_t off = 0;

	if (fd < 0)
		return -1;
	while (off < size) {
		ssize_t n = write(fd, data + off, size - off);

		if (n <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)n;
	}
	lseek(fd, 0, SEEK_SET);
	snprintf(path, path_size, "/proc/self/fd/%d", fd);
	return fd;
}

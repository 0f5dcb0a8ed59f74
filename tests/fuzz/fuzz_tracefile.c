// SPDX-License-Identifier: MIT
/*
 * Fuzz target: a ptrec trace file, loaded as ptdump loads it, then every
 * view. Built with -DPREC_FUZZING, whose reader accepts any checksum, so
 * mutations reach the chunk parsers (the corpus files carry valid ones).
 */
#include <stdint.h>
#include <unistd.h>

#include "fuzz.h"
#include "session/load.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct prec_load_report rep = { 0 };
	struct prec_tfile_reader *r = NULL;
	struct prec_session *s;
	struct prec_diag d;
	char path[64];
	int fd = fuzz_memfd(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	if (prec_load_open(path, &rep, &r, &d) == 0) {
		s = prec_session_new();
		if (s && prec_load_session(s, r, &rep) == 0)
			fuzz_views(s, size, size ? data[size - 1] : 0);
		prec_session_free(s);
		prec_tfile_reader_free(r);
	}
	close(fd);
	return 0;
}

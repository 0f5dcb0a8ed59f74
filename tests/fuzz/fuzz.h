/* SPDX-License-Identifier: MIT */
/*
 * Shared pieces of the fuzz targets (libFuzzer entry points; afl++ builds
 * them too, with its libFuzzer driver). Each target feeds one kind of input
 * to the library the way ptdump or ptrec does, and every view over the
 * result, with the output bounded: a view that writes more than
 * FUZZ_OUT_PER_BYTE bytes per input byte (plus a fixed allowance) is a
 * finding, as is any crash, leak, undefined behaviour, time-out or
 * allocation past the limits make fuzz-smoke sets.
 */
#ifndef PREC_FUZZ_H
#define PREC_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "session/session.h"

/* Output bound: bytes per input byte, plus this allowance. */
#define FUZZ_OUT_PER_BYTE 4096
#define FUZZ_OUT_FIXED (1u << 20)

/* A FILE that counts what is written to it and traps past @limit bytes. */
FILE *fuzz_sink(size_t limit);

/*
 * Runs one view (chosen by @which: each of prec_output's formats, then
 * --packets) over finalized session @s into a bounded sink. Targets pass a
 * byte of the input, so the fuzzer covers every view without paying for all
 * of them on every input.
 */
void fuzz_views(struct prec_session *s, size_t input_size, unsigned which);

/* Writes @data to a new memory file; returns its fd (path /proc/self/fd/N) or -1. */
int fuzz_memfd(const uint8_t *data, size_t size, char *path, size_t path_size);

#endif

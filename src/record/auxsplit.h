/* SPDX-License-Identifier: MIT */
/*
 * One AUX area written by independent per-thread trace streams: the
 * software tracers encode each thread as its own packet stream (QEMU runs
 * the threads side by side, not as a CPU would one after another), and the
 * model puts the pieces of all of them into the AUX area of the CPU they run
 * on. The PERF_RECORD_AUX of each piece names its thread (the sample_id
 * trailer), so the recorder files each piece under that thread's stream, at
 * the thread's own running offset, and rewrites the record's aux_offset to
 * it: the file then holds one stream per thread, as a per-thread recording.
 * After an overrun (an AUX record flagged TRUNCATED) every stream continues
 * behind a gap, so a decoder restarts at the next synchronization point; how
 * much was lost is not known, the gap is one byte.
 */
#ifndef PREC_AUXSPLIT_H
#define PREC_AUXSPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "base/perf_abi.h"

struct prec_auxsplit;

struct prec_auxsplit *prec_auxsplit_new(void);
void prec_auxsplit_free(struct prec_auxsplit *s);

/*
 * A PERF_RECORD_AUX @h of the ring (sample_id trailer of PREC_SAMPLE_ID_TYPE):
 * queues its piece and writes to @out (h->size bytes) the record to keep,
 * with the thread's stream offset. 0, -PREC_E_FORMAT or -ENOMEM.
 */
int prec_auxsplit_record(struct prec_auxsplit *s, const struct perf_event_header *h, void *out);

typedef int (*prec_auxsplit_fn)(void *ctx, int32_t tid, uint64_t off, const void *p, size_t n);

/*
 * AUX bytes read from the ring at ring offset @off: each byte a queued piece
 * covers goes to @fn under its thread; bytes whose record has not been read
 * yet are kept for the next call. 0, -ENOMEM or @fn's error.
 */
int prec_auxsplit_bytes(struct prec_auxsplit *s, uint64_t off, const void *p, size_t n,
			prec_auxsplit_fn fn, void *ctx);

/*
 * Hands held bytes to @fn once records read since claim them: call it after
 * each record (the bytes of a piece can be read before its record). 0 or
 * @fn's error.
 */
int prec_auxsplit_flush(struct prec_auxsplit *s, prec_auxsplit_fn fn, void *ctx);

/*
 * Every stream continues behind a gap: bytes of its may have been lost
 * (the tracer was stopped for a snapshot). A piece whose record says
 * PERF_AUX_FLAG_OVERWRITE (an area in overwrite mode) ends at the record's
 * aux_offset, the driver's head after it.
 */
void prec_auxsplit_gap(struct prec_auxsplit *s);

/* The threads seen so far. */
size_t prec_auxsplit_nstreams(const struct prec_auxsplit *s);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Consumer side of a perf mmap: the data ring (struct perf_event_mmap_page
 * followed by the data pages) and the AUX ring, following the kernel's
 * protocol: read data_head / aux_head with acquire semantics, copy the bytes
 * out, then publish data_tail / aux_tail after a full barrier. struct
 * prec_ring only points at memory, so tests drive it with an in-memory ring
 * that a thread fills the way the kernel does.
 *
 * Plus small helpers for the records found in the data ring: AUX/LOST
 * accounting, the sample_id trailer, trigger samples.
 *
 * One consumer per ring; the functions are not thread-safe for one ring.
 */
#ifndef PREC_RING_H
#define PREC_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perf_abi.h"

struct prec_ring {
	struct perf_event_mmap_page *meta;
	uint8_t *data;		/* data area (meta->data_offset, or one page, after meta) */
	uint64_t data_size;	/* power of 2 */
	uint8_t *aux;		/* AUX area or NULL */
	uint64_t aux_size;	/* power of 2 (0 without AUX) */
	bool overwrite;		/* AUX mapped read-only: snapshot mode */
	uint64_t data_tail;	/* what we last published */
	uint64_t aux_tail;
	bool aux_wrapped;	/* snapshot mode: the buffer has wrapped at least once */
	bool snap_taken;	/* snapshot mode: aux_tail holds the head of the last snapshot */
	uint64_t snap_off;	/* snapshot mode: synthetic stream offset of the next snapshot */
	uint8_t *rec;		/* reassembly buffer for records that wrap (64 KiB) */
};

/*
 * Sets @r up over a mapping. @base is the perf_event_mmap_page; the data
 * area starts at meta->data_offset when the kernel set it (4.1+), else one
 * page after @base. @data_size must be a power of 2 (and match
 * meta->data_size when that is set). @aux_base/@aux_size describe the AUX
 * mapping (NULL/0 for none); @overwrite says it was mapped read-only
 * (snapshot mode), in which case the kernel ignores aux_tail.
 * The tails start from the values in the page. Returns 0 or -EINVAL.
 */
int prec_ring_init(struct prec_ring *r, void *base, size_t data_size, void *aux_base,
		   size_t aux_size, bool overwrite);
/* Frees the reassembly buffer (the mapping itself is the caller's). */
void prec_ring_fini(struct prec_ring *r);

/*
 * Called once per whole record. @h points into the ring or, for a record
 * that wraps, into a contiguous copy; valid only during the call. Return 0
 * to go on, > 0 to stop after this record, < 0 to stop before it (the
 * record stays in the ring).
 */
typedef int (*prec_ring_record_fn)(void *ctx, const struct perf_event_header *h);

/*
 * Delivers every record published so far, then moves data_tail past the
 * consumed ones. Returns the number of bytes consumed, the callback's
 * negative value (records before it consumed), or -PREC_E_FORMAT for a
 * record with an impossible size (nothing after it is consumed; see
 * prec_ring_skip_data()).
 */
long prec_ring_read_data(struct prec_ring *r, prec_ring_record_fn fn, void *ctx);
/* Discards everything published in the data ring. Returns the bytes dropped. */
long prec_ring_skip_data(struct prec_ring *r);

/*
 * AUX bytes as one or two spans (the second after a wrap, else NULL/0),
 * @stream_off being the stream offset of the first byte. Return 0 to
 * consume them, < 0 to leave them in the ring.
 */
typedef int (*prec_ring_aux_fn)(void *ctx, uint64_t stream_off, const void *p1, size_t n1,
				const void *p2, size_t n2);

/*
 * Normal mode: delivers the bytes between aux_tail and aux_head and moves
 * aux_tail to the head; the stream offset is the kernel's running AUX
 * position (as in PERF_RECORD_AUX aux_offset).
 *
 * Snapshot (overwrite) mode: delivers the latest buffer contents, older part
 * first: [head % size, size) then [0, head % size) once the buffer has
 * wrapped, else [0, head). The caller should have stopped the tracer (the
 * kernel writes on otherwise). Because drivers may report aux_head as a
 * position in the buffer rather than a running count, snapshots get
 * synthetic stream offsets: each starts aux_size bytes after the previous
 * one ends, so readers never join two snapshots. Wrapping is known from a
 * head beyond the buffer size or from non-zero bytes above the head (the
 * buffer starts zeroed). Nothing new since the last call: returns 0.
 *
 * Returns bytes delivered, or the callback's negative value.
 */
long prec_ring_read_aux(struct prec_ring *r, prec_ring_aux_fn fn, void *ctx);

/* Bytes published in the data / AUX ring and not consumed yet. */
uint64_t prec_ring_data_pending(const struct prec_ring *r);
uint64_t prec_ring_aux_pending(const struct prec_ring *r);

/* TSC conversion parameters of the mmap page, read under its seqlock. */
struct prec_time_conv {
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero, time_cycles, time_mask;
	bool cap_user_time, cap_user_time_zero, cap_user_time_short;
};
int prec_ring_time_conv(const struct prec_ring *r, struct prec_time_conv *tc);

/* ---- records ---- */

/*
 * Counters a recorder keeps per ring and reports in the STATS chunk. The
 * recorder passes every record to prec_ring_count_record() on its way to
 * the file.
 */
struct prec_ring_counts {
	uint64_t records;
	uint64_t aux_records;	/* PERF_RECORD_AUX */
	uint64_t aux_bytes;	/* sum of their aux_size */
	uint64_t truncated, overwrite, partial, collision; /* AUX records with each flag */
	uint64_t lost_events;	/* PERF_RECORD_LOST records */
	uint64_t lost;		/* sum of their 'lost' counts */
	uint64_t lost_samples;	/* sum of PERF_RECORD_LOST_SAMPLES counts */
	uint64_t itrace_starts;	/* PERF_RECORD_ITRACE_START */
};

/* Counts @h into @c. Returns 0, or -PREC_E_FORMAT if an AUX/LOST record is too short. */
int prec_ring_count_record(struct prec_ring_counts *c, const struct perf_event_header *h);

/*
 * Steps through a buffer of records (a SIDEBAND chunk payload): sets *@h to
 * the record at *@pos and advances *@pos. Returns 1, 0 at the end, or
 * -PREC_E_FORMAT if the record's size is < 8, not a multiple of 8, or runs
 * past @len.
 */
int prec_perf_next_record(const void *buf, size_t len, size_t *pos,
			  const struct perf_event_header **h);

/* The sample_type ptrec gives its tracking event (sample_id_all trailers). */
#define PREC_SAMPLE_ID_TYPE \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)
/* The sample_type of trigger events' samples. */
#define PREC_TRIGGER_SAMPLE_TYPE                                                                 \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |         \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)

struct prec_sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
	uint64_t id;
};

/*
 * The sample_id trailer (PREC_SAMPLE_ID_TYPE layout: pid, tid, time, cpu,
 * res, id = the last 32 bytes) of a non-SAMPLE record. Returns 0,
 * -EINVAL for a PERF_RECORD_SAMPLE, -PREC_E_FORMAT if the record is too
 * short to hold one.
 */
int prec_perf_sample_id(const struct perf_event_header *h, struct prec_sample_id *sid);

struct prec_trigger_sample {
	uint64_t id, ip;
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
	uint64_t period;
};

/*
 * Parses a PERF_RECORD_SAMPLE written with PREC_TRIGGER_SAMPLE_TYPE.
 * Returns 0, -EINVAL if it is not a sample, -PREC_E_FORMAT if too short.
 */
int prec_perf_parse_sample(const struct perf_event_header *h, struct prec_trigger_sample *s);

#endif

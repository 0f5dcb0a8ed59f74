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

#include "base/perf_abi.h"
#include "base/perf_records.h"

struct prec_ring {
	struct perf_event_mmap_page *meta;
	uint8_t *data;		/* data area (meta->data_offset, or one page, after meta) */
	uint64_t data_size;	/* power of 2 */
	uint8_t *aux;		/* AUX area or NULL */
	uint64_t aux_size;	/* power of 2 (0 without AUX) */
	bool overwrite;		/* AUX mapped read-only: snapshot mode */
	uint64_t data_tail;	/* what we last published */
	uint64_t aux_tail;	/* snapshot mode: aux_head at the last snapshot */
	bool aux_running;	/* snapshot mode: aux_head is a running count (seen >= size) */
	bool snap_taken;	/* snapshot mode: a snapshot was delivered */
	uint64_t snap_end;	/* snapshot mode, position head: stream offset of its end */
	uint8_t *snap_ref;	/* ...and the bytes before the head then (snap_ref_len) */
	size_t snap_ref_len;
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
 * position (as in PERF_RECORD_AUX aux_offset). In snapshot mode it is
 * prec_ring_read_snapshot() without a size limit.
 *
 * Returns bytes delivered, or the callback's negative value.
 */
long prec_ring_read_aux(struct prec_ring *r, prec_ring_aux_fn fn, void *ctx);

/*
 * Snapshot (overwrite) mode, as perf's __auxtrace_mmap__read() with
 * snapshot set: the bytes written since the last snapshot, the newest
 * @limit of them (0: no limit) and never more than the area, read backwards
 * from aux_head, older part first (one or two spans). The caller should
 * have stopped the tracer (the kernel writes on otherwise).
 *
 * In overwrite mode the driver says what aux_head is
 * (perf_aux_output_end() takes it from the handle): a running count
 * (CoreSight sinks, the model) or a position in the area (intel_pt). A head
 * at or beyond the size is a running count; a head that went back, or
 * non-zero bytes above it (the area starts zeroed), is a position that has
 * wrapped, as perf's intel_pt_find_snapshot() decides. While the head is a
 * running count (or a position before any wrap, which is the same thing),
 * the stream offset is the running count, so consecutive snapshots join
 * when nothing was overwritten between them and leave a hole where
 * something was. A position head says nothing of how often the area went
 * round since the last snapshot; as perf's intel_pt_find_snapshot() with
 * its reference buffer (intel_pt_compare_ref()), the bytes just before the
 * last snapshot's head are kept: if they are still there, only the bytes
 * from there to the head are new and the snapshot joins the last one;
 * otherwise it is the newest whole area (or @limit) behind a gap of an
 * area's size, so readers never join the two.
 *
 * Returns bytes delivered (0: nothing new), or the callback's value.
 */
long prec_ring_read_snapshot(struct prec_ring *r, uint64_t limit, prec_ring_aux_fn fn,
			     void *ctx);

/*
 * Whether the AUX events writing into @r must be re-enabled after a read
 * that returned @nread. The kernel disables an AUX event that finds no room
 * (perf_aux_output_begin() -> perf_event_disable_inatomic(), the AUX record
 * flagged TRUNCATED); perf re-enables after every read that moved aux_tail
 * (auxtrace_mmap__read() -> auxtrace_record__read_finish()). Not in snapshot
 * mode (the kernel ignores the tail there) and not once the recording is
 * @stopping (the events were disabled on purpose).
 */
bool prec_ring_aux_reenable(const struct prec_ring *r, long nread, bool stopping);

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

#endif

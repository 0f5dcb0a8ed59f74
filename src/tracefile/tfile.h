/* SPDX-License-Identifier: MIT */
/*
 * The ptrec trace file, format version 1: writer and reader.
 *
 * A file is a 32-byte file header followed by self-describing chunks, each
 * with its own header (type, flags, lengths, stream key, CRC-32C) and a
 * payload that is stored as is or as one zstd frame. Chunks are appended and
 * never rewritten, so a file cut short by a crash, SIGKILL or a full disk
 * reads up to its last whole chunk. man/ptrec-file.5 is the specification;
 * the constants below are the wire values it names.
 *
 * Writer: prec_tfile_writer_new() -> prec_tfile_write_*() ->
 * prec_tfile_writer_close() -> prec_tfile_writer_free(). AUX bytes and
 * sideband records are buffered per stream and cut into chunks of the target
 * size. In async mode compression, checksums and write(2) happen in a
 * background thread fed through a bounded queue (see struct
 * prec_tfile_wopts for the policy when the queue is full).
 *
 * Reader: prec_tfile_reader_new() -> prec_tfile_next() until it returns 0,
 * or the convenience loaders (prec_tfile_read_machine(), ...,
 * prec_tfile_gather_aux()). Damage is reported through a callback and the
 * reader carries on with the next good chunk.
 *
 * All functions return 0 (or a documented non-negative value) on success and
 * a negative errno or -PREC_E_* code on failure. Nothing here prints.
 */
#ifndef PREC_TFILE_H
#define PREC_TFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/common.h"
#include "base/perf_abi.h"

struct prec_diag;

/* ---- Wire constants (see ptrec-file(5)) ---- */

#define PREC_TFILE_MAGIC "\177PTREC\r\n"	/* 8 bytes at offset 0 */
#define PREC_TFILE_MAGIC_LEN 8
/* The major version this build reads and writes. */
#define PREC_TFILE_VERSION 1
#define PREC_TFILE_HDR_SIZE 32			/* file header bytes written by v1 */
#define PREC_TFILE_CHUNK_MAGIC 0x4b4843abu	/* bytes ab 43 48 4b: "\xabCHK" */
#define PREC_TFILE_CHUNK_HDR_SIZE 40
#define PREC_TFILE_ALIGN 8			/* chunks start at multiples of 8 */
#define PREC_TFILE_MAX_RAW (64u << 20)		/* largest payload (raw) a reader accepts */
#define PREC_TFILE_MAX_CHUNK_TARGET (16u << 20)	/* largest chunk size a writer may target */
#define PREC_TFILE_BUILD_ID_MAX 20

/* File header flags */
#define PREC_TFILE_F_EMULATED 0x1u	/* made by the software tracer, not hardware */

/* Chunk flags */
#define PREC_TFILE_CF_ZSTD 0x1u		/* the payload is one zstd frame */
#define PREC_TFILE_CF_KNOWN 0x1u	/* flags a v1 reader understands */

enum prec_tfile_type {
	PREC_TFILE_INFO = 1,	 /* struct prec_tfile_info */
	PREC_TFILE_MACHINE = 2,	 /* struct prec_tfile_machine */
	PREC_TFILE_EVENTS = 3,	 /* struct prec_tfile_events */
	PREC_TFILE_SIDEBAND = 4, /* perf records from the data ring of cpu (chunk cpu) */
	PREC_TFILE_AUX = 5,	 /* trace bytes of stream (cpu, tid) at stream offset arg */
	PREC_TFILE_IMAGE = 6,	 /* a piece of one code segment; arg = piece offset */
	PREC_TFILE_KSYMS = 7,	 /* kallsyms text; arg = offset of this piece in the text */
	PREC_TFILE_KCORE = 8,	 /* kernel text bytes; arg = address of the first byte */
	PREC_TFILE_MODULES = 9,	 /* /proc/modules text; arg = offset in the text */
	PREC_TFILE_STATS = 10,	 /* struct prec_tfile_stats */
	PREC_TFILE_END = 11,	 /* the clean-end marker */
	PREC_TFILE_TYPE_MAX = PREC_TFILE_END,
};

/*
 * ptrec's own sideband record (perf_event_header.type; perf's kernel and
 * user record types stay below it): a thread ended because its process was
 * killed by a signal. Payload after the header: u32 pid, u32 tid, u32 signo,
 * u32 flags (PREC_SIGREC_*), u64 ip (the last place the thread was known to
 * run: the instruction that began last, or with PREC_SIGREC_EXACT the one
 * that raised the signal; 0 if unknown), u64 caller (the return address of its innermost call,
 * 0 if unknown), then the sample_id_all trailer of the tracer's event.
 */
#define PREC_RECORD_SIGNAL 0x50520001u
#define PREC_RECORD_SIGNAL_SIZE (8 + 32)	/* header and body, without the trailer */
#define PREC_SIGREC_CORE 0x1u		/* a core was dumped */
#define PREC_SIGREC_LAST 0x2u		/* the thread of its process that ran last (the likely culprit) */
#define PREC_SIGREC_DESCENDANT 0x4u	/* the process is one the workload started, not its own */
#define PREC_SIGREC_EXACT 0x8u		/* ip is the instruction that raised the signal */

/*
 * ptrec's record of a snapshot (snapshot mode): the trace bytes it copied.
 * Payload after the header: u32 index (1, 2, ... in the file), u32
 * reason (PREC_SNAP_*), i32 event (the trigger's event index, -1 for none),
 * u32 nstreams, u64 bytes, then nstreams x { i32 cpu, i32 tid, u64 start,
 * u64 end } (the stream offsets [start, end) the snapshot wrote of each
 * stream), then the sample_id_all trailer (time: when tracing stopped for
 * it, the time of the last PERF_RECORD_AUX before it).
 */
#define PREC_RECORD_SNAPSHOT 0x50520002u
#define PREC_RECORD_SNAPSHOT_SIZE (8 + 24)	/* header and fixed body */
#define PREC_RECORD_SNAPSHOT_STREAM 24		/* bytes per stream */
#define PREC_SNAP_SIGNAL 1u			/* SIGUSR2 */
#define PREC_SNAP_END 2u			/* the end of the recording */
#define PREC_SNAP_TRIGGER 3u			/* an event with the snapshot term fired */
/* The word for a PREC_SNAP_* reason: "signal", "end", "trigger" ("unknown" otherwise). */
const char *prec_tfile_snap_reason(uint32_t reason);

/* Returns a static name for a chunk type ("AUX", ...; "unknown" otherwise). */
const char *prec_tfile_type_name(unsigned type);

/* ---- Payload structures (native forms; the wire forms are in ptrec-file(5)) ---- */

/*
 * INFO: who made the file. Strings may be NULL (stored as absent). Decoded
 * copies come from prec_tfile_info_decode() as one allocation: free() it.
 */
struct prec_tfile_info {
	uint32_t flags;			/* PREC_TFILE_F_* (a copy of the file header's) */
	uint64_t created_ns;		/* CLOCK_REALTIME, ns since the Unix epoch */
	const char *hostname;
	const char *kernel_release;	/* uname -r */
	const char *ptrec_version;
	uint32_t cmdline_argc;		/* the recording's own command line */
	const char *const *cmdline_argv;
	uint32_t workload_argc;		/* the traced program and its arguments */
	const char *const *workload_argv;
};

/* A block of per-CPU CoreSight ETM/ETE ID registers (layout by kind). */
struct prec_tfile_etm {
	int32_t cpu;
	uint32_t kind;		/* low 32 bits of perf's cs-etm block magic (ETMv4 0x40404040, ETE 0x50505050) */
	uint32_t nregs;
	const uint64_t *regs;	/* perf's cs_etm per-CPU block: magic, cpu, nr params, TRCCONFIGR, ... */
};

/* MACHINE flags */
#define PREC_TFILE_M_CAP_USER_TIME 0x01u
#define PREC_TFILE_M_CAP_USER_TIME_ZERO 0x02u
#define PREC_TFILE_M_CAP_USER_TIME_SHORT 0x04u
#define PREC_TFILE_M_PER_CPU 0x08u	 /* AUX streams are per CPU (else per thread) */
#define PREC_TFILE_M_SNAPSHOT 0x10u	 /* AUX recorded in snapshot (overwrite) mode */
#define PREC_TFILE_M_CONTEXT_SWITCH 0x20u /* sideband has PERF_RECORD_SWITCH* */

/*
 * MACHINE: what a decoder needs to know about the CPU and the clock.
 * prec_tfile_machine_decode() returns one allocation (etm blocks included):
 * free() it.
 */
struct prec_tfile_machine {
	char arch[32];			/* "x86_64", "aarch64" */
	char vendor[32];		/* "GenuineIntel" */
	uint32_t flags;			/* PREC_TFILE_M_* */
	uint32_t family, model, stepping;
	uint32_t cpuid_14_0[4];		/* CPUID.(EAX=14h,ECX=0): eax, ebx, ecx, edx */
	uint32_t cpuid_14_1[4];		/* CPUID.(EAX=14h,ECX=1) */
	uint32_t cpuid_15[3]; /* CPUID.15h: eax (denominator), ebx (numerator), ecx (Hz) */
	uint32_t max_nonturbo_ratio;
	uint64_t nominal_freq_hz;	/* TSC frequency */
	uint32_t nr_cpus;
	uint32_t page_size;
	/* TSC <-> perf time, from struct perf_event_mmap_page */
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero, time_cycles, time_mask;
	/* intel_pt PMU (0 when absent) and its config field masks */
	uint32_t pt_pmu_type;
	uint64_t pt_tsc_mask, pt_mtc_mask, pt_cyc_mask, pt_noretcomp_mask;
	uint64_t pt_mtc_period_mask, pt_cyc_thresh_mask, pt_psb_period_mask, pt_branch_mask;
	/* CoreSight: one block per CPU (n_etm 0 on x86) */
	uint32_t n_etm;
	const struct prec_tfile_etm *etm;
};

/* EVENTS flags */
#define PREC_TFILE_EV_AUX 0x1u		/* the AUX tracer (intel_pt, cs_etm, emulated) */
#define PREC_TFILE_EV_TRIGGER 0x2u	/* pauses or resumes the tracer */
#define PREC_TFILE_EV_TRACKING 0x4u	/* the sideband tracking event */
#define PREC_TFILE_EV_EMULATED 0x8u	/* carried out by the software tracer */

struct prec_tfile_event {
	const char *name;	/* resolved name */
	const char *spec;	/* the spec text the user gave */
	const char *pmu;	/* PMU name */
	struct prec_attr attr;	/* as passed to perf_event_open */
	uint32_t attr_size;	/* bytes of attr on the wire; writers may leave 0 (= sizeof) */
	int32_t leader;		/* index of its group leader (own index for a leader) */
	uint32_t flags;		/* PREC_TFILE_EV_* */
	uint32_t n_ids;		/* kernel sample ids, one per fd */
	const uint64_t *ids;
};

/* Decoded EVENTS (one allocation: free() it). */
struct prec_tfile_events {
	uint32_t n;
	struct prec_tfile_event *ev;
};

/* Returns the index of the event owning sample id @id, or -ENOENT. */
int prec_tfile_events_find_id(const struct prec_tfile_events *evs, uint64_t id);

/* Per-stream summary; (cpu, tid) is the stream key (cpu -1: per-thread). */
struct prec_tfile_stream_stats {
	int32_t cpu, tid;
	uint64_t raw_bytes;	/* AUX bytes accepted by the writer */
	uint64_t stored_bytes;	/* payload bytes written for them (after compression) */
	uint64_t dropped_bytes;	/* AUX bytes refused (-EAGAIN) or lost to a write error */
	uint64_t aux_records;	/* PERF_RECORD_AUX records of the stream, and their flags: */
	uint64_t truncated, overwrite, partial, collision;
};

/*
 * STATS: end-of-run summary. prec_tfile_stats_decode() and
 * prec_tfile_writer_get_stats() return one allocation: free() it.
 */
struct prec_tfile_stats {
	uint64_t duration_ns;	/* recording wall time */
	uint64_t lost_records;	/* sum of PERF_RECORD_LOST 'lost' counts */
	uint64_t lost_bytes;	/* AUX bytes known lost (all causes) */
	uint32_t n_streams;
	struct prec_tfile_stream_stats *streams;
};

/* IMAGE chunk header (one code segment; a big segment spans several chunks). */
struct prec_tfile_image {
	const char *path;
	uint8_t build_id[PREC_TFILE_BUILD_ID_MAX];
	uint32_t build_id_size;	/* 0: no build id */
	uint64_t file_offset;	/* offset of the segment in its file */
	uint64_t size;		/* size of the whole segment */
	uint64_t vaddr;		/* an address it was mapped at, 0 if unknown */
};

/*
 * Payload codecs, used by the writer and reader and usable on their own.
 * encode appends the wire form to @out. decode validates every length
 * against @len and returns -PREC_E_FORMAT for malformed input (never reads
 * out of bounds, never allocates more than a small multiple of @len).
 */
struct prec_buf;
int prec_tfile_info_encode(const struct prec_tfile_info *in, struct prec_buf *out);
int prec_tfile_info_decode(const void *p, size_t len, struct prec_tfile_info **out);
int prec_tfile_machine_encode(const struct prec_tfile_machine *in, struct prec_buf *out);
int prec_tfile_machine_decode(const void *p, size_t len, struct prec_tfile_machine **out);
int prec_tfile_events_encode(const struct prec_tfile_event *ev, uint32_t n, struct prec_buf *out);
int prec_tfile_events_decode(const void *p, size_t len, struct prec_tfile_events **out);
int prec_tfile_stats_encode(const struct prec_tfile_stats *in, struct prec_buf *out);
int prec_tfile_stats_decode(const void *p, size_t len, struct prec_tfile_stats **out);
/* One IMAGE payload: @img's header followed by the @n piece bytes at @bytes. */
int prec_tfile_image_encode(const struct prec_tfile_image *img, const void *bytes, size_t n,
			    struct prec_buf *out);
/*
 * Parses an IMAGE payload: fills @img (path points into @p) and the piece's
 * bytes (@bytes points into @p).
 */
int prec_tfile_image_decode(const void *p, size_t len, struct prec_tfile_image *img,
			    const void **bytes, size_t *nbytes);

/* ---- Writer ---- */

enum prec_tfile_full_policy {
	/*
	 * The call that would exceed the queue bound accepts nothing and returns
	 * -EAGAIN. The recorder counts the bytes as lost and moves on, so the
	 * kernel-side ring keeps draining; the next piece it writes carries its
	 * true stream offset and readers see the gap.
	 */
	PREC_TFILE_FULL_EAGAIN = 0,
	/* The call waits until the background thread has made room. */
	PREC_TFILE_FULL_BLOCK = 1,
};

struct prec_tfile_wopts {
	int level;		/* zstd level 0..19; 0 stores payloads uncompressed */
	size_t chunk_size;	/* target raw bytes per AUX/SIDEBAND/IMAGE chunk, 4 KiB..16 MiB */
	uint32_t file_flags;	/* PREC_TFILE_F_* for the file header */
	bool async;		/* compress and write in a background thread */
	size_t queue_bytes;	/* async: bound on chunk buffers queued or in flight */
	enum prec_tfile_full_policy full_policy;
	/*
	 * async: compression threads (chunks are compressed in parallel and
	 * written in order); 0 = half the online CPUs, 1..4.
	 */
	int threads;
	/*
	 * Test hook: when set, used instead of write(2) for chunk data (not for
	 * the file header). Same contract as write(2) but returns -errno.
	 */
	ssize_t (*write_fn)(void *ctx, int fd, const void *p, size_t n);
	void *write_ctx;
};

#define PREC_TFILE_DEFAULT_LEVEL 3
#define PREC_TFILE_DEFAULT_CHUNK (1u << 20)
#define PREC_TFILE_DEFAULT_QUEUE (64u << 20)

/*
 * Fills @o with the defaults: level 3, 1 MiB chunks, synchronous (async:
 * 64 MiB queue, EAGAIN policy, automatic thread count).
 */
void prec_tfile_wopts_init(struct prec_tfile_wopts *o);

struct prec_tfile_writer;

/*
 * Creates (or truncates, like perf -o) the file at @path with mode 0600
 * (also when it existed with another mode; umask does not apply), opened
 * O_CLOEXEC, and writes the file header. @o may be NULL for the defaults.
 * Returns 0 and sets *@out, or -errno (open, write), -EINVAL (bad options),
 * -ENOMEM.
 */
int prec_tfile_writer_new(const char *path, const struct prec_tfile_wopts *o,
			  struct prec_tfile_writer **out);
/* The same on an open fd (a pipe, a socket): the writer borrows @fd and never closes it. */
int prec_tfile_writer_new_fd(int fd, const struct prec_tfile_wopts *o,
			     struct prec_tfile_writer **out);

/*
 * Every write call returns 0, or the first write error (sticky: -ENOSPC,
 * -EIO, ...) once one has happened, or -EINVAL for bad arguments. Calls on
 * one writer may come from several threads (they are serialised).
 */
int prec_tfile_write_info(struct prec_tfile_writer *w, const struct prec_tfile_info *info);
int prec_tfile_write_machine(struct prec_tfile_writer *w, const struct prec_tfile_machine *m);
int prec_tfile_write_events(struct prec_tfile_writer *w, const struct prec_tfile_event *ev,
			    uint32_t n);
/*
 * AUX bytes of stream (@cpu, @tid) starting at stream offset @offset. Bytes
 * are buffered per stream; a piece that does not continue the buffered one
 * (offset gap) starts a new chunk. Async with PREC_TFILE_FULL_EAGAIN: returns
 * -EAGAIN when the queue is full, having accepted none of the @n bytes
 * (counted in the stream's dropped_bytes). A call is always accepted when
 * the queue is empty, so progress never depends on the bound.
 */
int prec_tfile_write_aux(struct prec_tfile_writer *w, int32_t cpu, int32_t tid, uint64_t offset,
			 const void *p, size_t n);
/*
 * Order for readers that meet a file cut anywhere: before a trace chunk
 * goes out, the sideband buffered so far goes out, and it waits while an
 * image is announced (@on true) and not yet written (@on false, after its
 * prec_tfile_write_image()). Returns 0 or -EINVAL.
 */
/*
 * A writer made from an fd (prec_tfile_writer_new_fd()) of a regular file
 * gets the full-disk reserve too, made beside @path (the file's directory).
 */
int prec_tfile_writer_reserve(struct prec_tfile_writer *w, const char *path);
int prec_tfile_writer_hold(struct prec_tfile_writer *w, bool on);
/*
 * A file created by path keeps a small reserve on its file system. When the
 * disk fills, the reserve is freed for the chunk that hit it and the
 * closing ones, and from then on AUX bytes are refused with -ENOSPC (other
 * writes go on until the disk is really full): true from then on.
 */
bool prec_tfile_writer_disk_full(struct prec_tfile_writer *w);
/*
 * One or more whole perf records (struct perf_event_header + payload, each
 * size a multiple of 8) read from the data ring of @cpu (-1: per-thread
 * ring). Batched per cpu. Never refused for a full queue: sideband and
 * metadata may take the queue to twice its bound before they wait.
 * Returns -EINVAL (nothing written) if the records do not tile @n exactly.
 */
int prec_tfile_write_sideband(struct prec_tfile_writer *w, int32_t cpu, const void *recs,
			      size_t n);
/*
 * One code segment (@img->size bytes at @bytes), split into chunk-size
 * pieces. With @bytes NULL, one chunk that only references the segment
 * (header fields, no bytes: readers look for the file by path and build
 * id). The writer deduplicates: a segment with the same build id (or,
 * without one, the same path), file offset and size as one written before
 * (embedded or referenced) is skipped. Returns 1 if written, 0 if it was a
 * duplicate, or a negative error.
 */
int prec_tfile_write_image(struct prec_tfile_writer *w, const struct prec_tfile_image *img,
			   const void *bytes);
/*
 * KSYMS, KCORE or MODULES content, split into pieces of the chunk size
 * (arg = @arg + offset of the piece, i.e. the text offset or address).
 */
int prec_tfile_write_blob(struct prec_tfile_writer *w, unsigned type, uint64_t arg,
			  const void *p, size_t n);
/*
 * A raw chunk of any type (1..65535) with @n <= PREC_TFILE_MAX_RAW payload
 * bytes, handed over at once (after the chunks already handed over; bytes
 * still buffered for AUX/SIDEBAND streams come later). For types without a
 * native call and for tests (unknown types).
 */
int prec_tfile_write_chunk(struct prec_tfile_writer *w, unsigned type, int32_t cpu, int32_t tid,
			   uint64_t arg, const void *p, size_t n);
/*
 * Cuts every partly filled buffer into a chunk and waits until all chunks
 * handed over so far are written (write(2) returned). Returns the sticky
 * error if any.
 */
int prec_tfile_writer_flush(struct prec_tfile_writer *w);
/* The bytes written to the file so far (any thread). */
uint64_t prec_tfile_writer_written(struct prec_tfile_writer *w);
/*
 * Ends the recording: flushes, writes a STATS chunk (when @st is not NULL:
 * its values, with the per-stream raw/stored/dropped byte counts replaced by
 * the writer's own and streams the caller did not list added), then the END
 * chunk, stops the background thread and closes the file (if the writer
 * opened it). Returns 0 or the first error. The writer must still be freed.
 */
int prec_tfile_writer_close(struct prec_tfile_writer *w, const struct prec_tfile_stats *st);
/*
 * Frees the writer. If it was not closed, what is buffered is written out
 * (no END chunk: readers report the file as cut short) first.
 */
void prec_tfile_writer_free(struct prec_tfile_writer *w);

/*
 * A snapshot of the per-stream byte counts (AUX streams only), for --stats.
 * Sets *@out to one allocation (free() it).
 */
int prec_tfile_writer_get_stats(struct prec_tfile_writer *w, struct prec_tfile_stats **out);
/* Bytes currently queued or in flight in the async writer (0 when synchronous). */
size_t prec_tfile_writer_queued(struct prec_tfile_writer *w);

/* ---- Reader ---- */

enum prec_tfile_damage_kind {
	PREC_TFILE_DMG_HEADER = 1, /* no valid chunk header here: bytes skipped */
	PREC_TFILE_DMG_CHECKSUM,   /* the payload does not match its CRC */
	PREC_TFILE_DMG_DECOMPRESS, /* the payload is not one valid zstd frame of raw_len bytes */
	PREC_TFILE_DMG_TRUNCATED,  /* the file ends inside this chunk */
	PREC_TFILE_DMG_FLAGS,	   /* chunk flags this reader does not know */
};

struct prec_tfile_damage {
	enum prec_tfile_damage_kind kind;
	uint64_t offset;	/* file offset where the damage starts (a chunk header's) */
	uint64_t length;	/* bytes skipped because of it */
	int type;		/* the chunk's type when its header was valid, else 0 */
	int32_t cpu, tid;	/* its stream key when known, else -1 */
	uint64_t arg;		/* its arg (AUX stream offset) when known */
	uint64_t raw_len;	/* its payload's raw length when its header was valid */
};

/* Formats a one-line description of @d ("chunk at offset N: ..."). */
void prec_tfile_damage_str(const struct prec_tfile_damage *d, char *buf, size_t size);

struct prec_tfile_ropts {
	/* Called once per damaged place (in file order within a pass). */
	void (*on_damage)(void *ctx, const struct prec_tfile_damage *d);
	void *ctx;
	bool want_unknown;	/* prec_tfile_next() also returns chunk types it does not know */
};

struct prec_tfile_fhdr {
	uint16_t version;
	uint16_t header_size;
	uint32_t flags;		/* PREC_TFILE_F_* */
	uint64_t created_ns;
};

struct prec_tfile_chunk {
	uint64_t file_off;	/* offset of the chunk header */
	unsigned type;
	unsigned flags;		/* chunk flags as stored (PREC_TFILE_CF_*) */
	int32_t cpu, tid;	/* stream key (-1 where it does not apply) */
	uint64_t arg;		/* AUX: stream offset; IMAGE: piece offset; KCORE: address */
	uint32_t stored_len;	/* payload bytes in the file */
	const void *data;	/* the raw payload, 8-byte aligned; valid until the next call */
	size_t len;		/* raw length */
};

struct prec_tfile_status {
	uint64_t file_size;
	uint64_t chunks;	/* chunks with a valid header */
	bool end_seen;		/* a valid END chunk was read */
	bool cut_short;		/* the file ends inside a chunk or lacks the END chunk */
	uint64_t cut_offset;	/* if cut_short: end of the last whole chunk */
	uint64_t end_nchunks;	/* chunks the writer wrote before END (if end_seen) */
	uint64_t damaged;	/* damage reports (all kinds, truncation included) */
	uint64_t damaged_bytes;
	uint64_t unknown;	/* chunks of unknown types (skipped) */
};

struct prec_tfile_reader;

/* Buffers to read payloads into (zero-initialised; prec_tfile_pbuf_fini() frees). */
struct prec_tfile_pbuf {
	uint8_t *sbuf, *rbuf;
	size_t scap, rcap;
	struct ZSTD_DCtx_s *dctx;
};
void prec_tfile_pbuf_fini(struct prec_tfile_pbuf *pb);

/*
 * Opens a trace file and checks its header. @o may be NULL. A pipe or other
 * unseekable input is read into memory first. Errors (with a message in
 * @diag if not NULL; diag->pos = file offset):
 *   -PREC_E_FORMAT     not a ptrec trace file (bad magic) or bad header
 *   -PREC_E_VERSION    written by a newer ptrec (major version > 1)
 *   -PREC_E_TRUNCATED  the file ends inside the file header
 *   -errno             open/read failures
 */
int prec_tfile_reader_new(const char *path, const struct prec_tfile_ropts *o,
			  struct prec_tfile_reader **out, struct prec_diag *diag);
/* The same over @len bytes at @p, which the reader borrows until freed. */
int prec_tfile_reader_new_mem(const void *p, size_t len, const struct prec_tfile_ropts *o,
			      struct prec_tfile_reader **out, struct prec_diag *diag);
void prec_tfile_reader_free(struct prec_tfile_reader *r);

const struct prec_tfile_fhdr *prec_tfile_file_header(const struct prec_tfile_reader *r);

/*
 * The next good chunk in file order, payload verified and decompressed.
 * Returns 1 (and fills @c), 0 at the end of the file, or a negative error
 * for failures that stop reading (-EIO, -ENOMEM). Damaged chunks are
 * reported to on_damage and skipped. Chunks of unknown types are skipped
 * unless want_unknown is set.
 */
int prec_tfile_next(struct prec_tfile_reader *r, struct prec_tfile_chunk *c);
/*
 * From now on prec_tfile_next() returns chunks of the types in the bit mask
 * @types (bit 1 << type) checked but not decompressed, with data NULL: the
 * stored bytes' checksum, flags and compressed frame (one zstd frame that
 * declares the raw length; one that does not is decompressed). For callers
 * that read those payloads later with prec_tfile_payload_at().
 */
void prec_tfile_check_only(struct prec_tfile_reader *r, unsigned types);
/* Makes the next prec_tfile_next() start again from the first chunk. */
void prec_tfile_rewind(struct prec_tfile_reader *r);

/*
 * The payload of the chunk whose header is at @file_off (a chunk's file_off
 * from prec_tfile_next(), which must have indexed the file first), read,
 * checked and decompressed into @pb: *@data is valid until @pb is used
 * again. Calls with distinct buffers may run in several threads at once.
 * Returns 0, -ENOENT (no chunk there), -EIO (damaged now: the file changed)
 * or another negative error. Damage is not reported to on_damage.
 */
int prec_tfile_payload_at(struct prec_tfile_reader *r, uint64_t file_off,
			  struct prec_tfile_pbuf *pb, const void **data, size_t *len);

/*
 * The structure of the whole file (this scans all chunk headers once) and
 * the damage counted so far. Returns 0 or a negative I/O error.
 */
int prec_tfile_status(struct prec_tfile_reader *r, struct prec_tfile_status *st);
/*
 * Describes @st in one line: "complete (N chunks)", or "cut short at offset
 * N: ..." with what that means. Returns @buf.
 */
const char *prec_tfile_status_str(const struct prec_tfile_status *st, char *buf, size_t size);

/*
 * The first INFO / MACHINE / EVENTS / STATS chunk, decoded. Each sets *@out
 * to one allocation (free() it). Returns 0, -ENOENT if the file has no such
 * (undamaged) chunk, -PREC_E_FORMAT if it is malformed, or an I/O error.
 */
int prec_tfile_read_info(struct prec_tfile_reader *r, struct prec_tfile_info **out);
int prec_tfile_read_machine(struct prec_tfile_reader *r, struct prec_tfile_machine **out);
int prec_tfile_read_events(struct prec_tfile_reader *r, struct prec_tfile_events **out);
int prec_tfile_read_stats(struct prec_tfile_reader *r, struct prec_tfile_stats **out);

struct prec_tfile_stream_key {
	int32_t cpu, tid;
	uint64_t bytes;		/* sum of the raw lengths of its AUX chunks */
	uint32_t chunks;
};

/* The AUX streams of the file, sorted by (cpu, tid). *@keys is malloc'd. */
int prec_tfile_streams(struct prec_tfile_reader *r, struct prec_tfile_stream_key **keys,
		       size_t *n);

/* One contiguous run of stream bytes inside a gathered buffer. */
struct prec_tfile_aux_run {
	uint64_t stream_off;	/* stream offset of its first byte */
	size_t buf_off;		/* where it starts in data */
	size_t len;
};

/*
 * All AUX bytes of one stream in stream order. Pieces missing from the file
 * (damaged, lost, or never written) leave no bytes: the runs say where the
 * stream jumps. Overlapping pieces keep the bytes seen first.
 */
struct prec_tfile_aux {
	int32_t cpu, tid;
	uint8_t *data;
	size_t len;
	size_t n_runs;
	struct prec_tfile_aux_run *runs;
	uint64_t missing_bytes;	/* bytes between runs (before the first not counted) */
	uint32_t damaged_pieces;/* AUX chunks of this stream whose payload was bad */
};

/*
 * Gathers stream (@cpu, @tid). Returns 0 and sets *@out (free with
 * prec_tfile_aux_free()), -ENOENT if the stream has no chunk, or an error.
 * Memory grows with the bytes actually decoded, never with claimed lengths.
 */
int prec_tfile_gather_aux(struct prec_tfile_reader *r, int32_t cpu, int32_t tid,
			  struct prec_tfile_aux **out);
void prec_tfile_aux_free(struct prec_tfile_aux *a);

#endif

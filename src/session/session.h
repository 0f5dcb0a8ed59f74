/* SPDX-License-Identifier: MIT */
/*
 * The session model: everything a trace decoder needs, independent of where
 * it came from. Any input (a ptrec trace file, perf.data, a raw PT dump) is
 * turned into a session by "add" calls:
 *
 *	s = prec_session_new();
 *	prec_session_set_machine(s, &machine);       CPU, timing, config bits
 *	prec_session_add_event(s, &desc, ids, n);    perf events and sample ids
 *	prec_session_add_sideband(s, rec, len, cpu); raw perf records
 *	prec_session_add_aux(s, cpu, tid, off, p, n);  trace bytes per stream
 *	prec_session_add_image(s, &img);             embedded code bytes
 *	prec_session_add_kernel_text(s, addr, p, n); prec_session_add_kallsyms(s, text, n)
 *	prec_session_finalize(s);                    sort, build the process model
 *
 * After finalize the session is read-only: decoders and formatters read the
 * sideband timeline, the streams and the image store (image.h) from it. All
 * "add" calls copy their input; nothing the caller passes is kept.
 *
 * Times are perf times (nanoseconds, the clock of the sideband records).
 */
#ifndef PREC_SESSION_H
#define PREC_SESSION_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>

#include "base/common.h"

struct prec_images;

/* Machine and trace configuration. Zero means "unknown / off". */
struct prec_machine {
	char vendor[16];          /* CPUID vendor string, e.g. "GenuineIntel" */
	uint16_t family;
	uint8_t model;
	uint8_t stepping;
	uint32_t cpuid_15_eax;    /* TSC:crystal ratio denominator */
	uint32_t cpuid_15_ebx;    /* TSC:crystal ratio numerator */
	uint32_t max_nonturbo_ratio; /* MSR_PLATFORM_INFO[15:8], libipt nom_freq */
	uint32_t nominal_mhz;     /* nominal frequency, for display only */
	uint8_t mtc_period;       /* IA32_RTIT_CTL.MTCFreq (the mtc_period term) */
	/* TSC to perf time: the perf mmap page's time_{shift,mult,zero}. */
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero;
	bool cap_user_time_zero;  /* the conversion above is valid */
	/* Trace configuration bits of the tracer event. */
	bool tsc, mtc, cyc, noretcomp;
	bool per_cpu;             /* streams are per CPU (else per thread) */
	/*
	 * The CPU identity (vendor, family, model) is the user's to give (a raw
	 * trace's --cpu); with it missing, decode errors that errata can cause
	 * say so.
	 */
	bool cpu_by_option;
};

/* What a perf event of the recording is for. */
enum prec_evkind {
	PREC_EVK_OTHER = 0,
	PREC_EVK_TRACER,          /* the AUX event (intel_pt, cs_etm, emulated) */
	PREC_EVK_PAUSE,           /* trigger with aux_pause */
	PREC_EVK_RESUME,          /* trigger with aux_resume */
	PREC_EVK_TRACKING,        /* the sideband (dummy) event */
};

/* One perf event of the recording. */
struct prec_evdesc {
	const char *name;         /* copied; NULL means "event<N>" */
	enum prec_evkind kind;
	/*
	 * sample_type of the event, for its PERF_RECORD_SAMPLE records and the
	 * sample_id_all trailer of its other records; 0 means the session
	 * default (prec_session_set_sample_type()).
	 */
	uint64_t sample_type;
};

/* The sideband record kinds the session understands. */
enum prec_sbtype {
	PREC_SB_MMAP = 1,         /* MMAP and MMAP2 */
	PREC_SB_COMM,
	PREC_SB_FORK,
	PREC_SB_EXIT,
	PREC_SB_SWITCH,           /* SWITCH and SWITCH_CPU_WIDE */
	PREC_SB_ITRACE_START,
	PREC_SB_AUX,
	PREC_SB_LOST,
	PREC_SB_SAMPLE,
	PREC_SB_SIGNAL,           /* ptrec's PREC_RECORD_SIGNAL: killed by a signal */
	PREC_SB_SNAPSHOT,         /* ptrec's PREC_RECORD_SNAPSHOT: a snapshot was taken */
	PREC_SB_THROTTLE,         /* THROTTLE and UNTHROTTLE: an event's samples stopped or
				     went on (its rate limit); u.throttle */
};

#define PREC_BUILD_ID_MAX 20

/*
 * One parsed sideband record. pid/tid/cpu/time come from the record body or
 * its sample_id trailer; -1 (or time 0) when the record carries none. Strings
 * are owned by the session.
 */
struct prec_sb {
	uint64_t time;
	int32_t pid, tid, cpu;
	enum prec_sbtype type;
	uint16_t misc;            /* perf_event_header.misc */
	int event;                /* index of the event (sample id), -1 if unknown */
	int ring_cpu;             /* the CPU of the ring it was read from, or -1 */
	union {
		struct {
			uint64_t start, len, pgoff;
			const char *path;
			uint32_t prot;    /* PROT_* (PROT_EXEC assumed for MMAP) */
			uint8_t build_id_size; /* 0: none */
			uint8_t build_id[PREC_BUILD_ID_MAX];
			bool kernel;      /* a kernel (not a process) mapping */
		} mmap;
		struct {
			const char *comm;
			bool exec;
		} comm;
		struct {
			int32_t ppid, ptid;
		} fork;                   /* FORK and EXIT */
		struct {
			bool out;         /* switch out (else in) */
			bool preempt;     /* switched out while runnable */
			bool cpu_wide;    /* next_prev_* are valid */
			int32_t next_prev_pid, next_prev_tid;
		} sw;
		struct {
			uint64_t offset, size, flags;
		} aux;
		struct {
			uint64_t id, lost;
		} lost;
		struct {
			uint64_t ip, period, id;
		} sample;
		struct {
			uint32_t signo, flags; /* PREC_SIGREC_* */
			uint64_t ip, caller;   /* 0 when unknown */
		} sig;
		struct {
			uint64_t id;            /* the throttled event's sample id */
			bool unthrottle;        /* UNTHROTTLE (else THROTTLE) */
		} throttle;
		struct {
			uint32_t index, reason; /* 1, 2, ...; PREC_SNAP_* */
			int32_t event;          /* the trigger's event index, or -1 */
			uint32_t nstreams;
			uint64_t bytes;
			const uint8_t *streams; /* nstreams x PREC_RECORD_SNAPSHOT_STREAM bytes */
		} snap;
	} u;
};

/*
 * Stream @i of a PREC_SB_SNAPSHOT record: its key and the stream offsets
 * [*@start, *@end) the snapshot holds of it. False if @i is out of range.
 */
bool prec_sb_snapshot_stream(const struct prec_sb *sb, uint32_t i, int32_t *cpu, int32_t *tid,
			     uint64_t *start, uint64_t *end);

/* A contiguous piece of stream bytes was lost before this position. */
struct prec_gap {
	uint64_t pos;             /* position in prec_stream.data */
	uint64_t lost;            /* bytes missing (0 if unknown) */
};

/*
 * A piece of a stream whose bytes stay in the source (a trace file read
 * chunk by chunk): data positions [pos, pos + len) are bytes [skip, skip +
 * len) of source piece @src (a chunk's file offset).
 */
struct prec_stream_ref {
	uint64_t pos, len;
	uint64_t src, skip;
};

/*
 * The trace bytes of one stream: per thread (cpu -1) or per CPU (tid -1).
 * Either the session holds them (data) or, for a stream added by
 * reference, data is NULL and refs say where they are (read them with a
 * prec_stream_reader, or prec_session_load_aux() to hold them all).
 */
struct prec_stream {
	int cpu;
	int tid;
	uint8_t *data;
	size_t len;
	struct prec_stream_ref *refs; /* sorted by pos, contiguous */
	size_t nr_refs;
	uint64_t base;            /* stream offset of data[0] */
	uint64_t lost;            /* bytes lost in all gaps */
	struct prec_gap *gaps;    /* sorted by pos */
	size_t nr_gaps;
	size_t cap;               /* internal */
};

/* The stream offset of data position @pos (counting the bytes lost before it). */
uint64_t prec_stream_offset(const struct prec_stream *st, uint64_t pos);


/* An embedded code image: bytes of a file region (or of a special mapping). */
struct prec_image_desc {
	const char *path;         /* file path as mapped, or "[vdso]" etc. */
	const uint8_t *build_id;  /* may be NULL */
	size_t build_id_size;
	uint64_t file_offset;     /* of bytes[0] in the file */
	const void *bytes;
	size_t size;
};

/* Creates an empty session. Returns NULL on allocation failure. */
struct prec_session *prec_session_new(void);
/* Frees @s and everything it owns (accepts NULL). */
void prec_session_free(struct prec_session *s);

/* Copies @m into the session. */
void prec_session_set_machine(struct prec_session *s, const struct prec_machine *m);
const struct prec_machine *prec_session_machine(const struct prec_session *s);

/*
 * Sets the root under which on-disk files named by mmap records are looked up
 * (like perf's --symfs). NULL or "" means the real root. Returns 0 or -ENOMEM.
 */
int prec_session_set_symfs(struct prec_session *s, const char *root);
const char *prec_session_symfs(const struct prec_session *s);

/*
 * Sets the default sample_type for parsing sample_id_all trailers and samples
 * of events that did not name their own. The initial default is
 * PERF_SAMPLE_IDENTIFIER|TID|TIME|CPU. Any bits are accepted: fields after
 * PERIOD are never read. Returns 0 (-EINVAL only for all bits set).
 */
int prec_session_set_sample_type(struct prec_session *s, uint64_t sample_type);

/*
 * Adds a perf event and the kernel sample ids of its fds. Returns the new
 * event's index (>= 0) or a negative error: -EEXIST if an id is already
 * taken, -EINVAL (NULL @d), -ENOMEM.
 */
int prec_session_add_event(struct prec_session *s, const struct prec_evdesc *d,
			   const uint64_t *ids, size_t nr_ids);
size_t prec_session_nr_events(const struct prec_session *s);
/* Returns the event @idx, or NULL. The name is never NULL. */
const struct prec_evdesc *prec_session_event(const struct prec_session *s, int idx);
/* Returns the event index of sample id @id, or -1. */
int prec_session_event_by_id(const struct prec_session *s, uint64_t id);

/*
 * Adds raw perf records as the kernel writes them (perf_event_header +
 * payload) from @buf: one or more whole records, @len bytes in all.
 * @ring_cpu is the CPU of the ring they came from, or -1. Record types the
 * session does not model are skipped. Returns the number of records kept, or
 * -PREC_E_FORMAT / -PREC_E_TRUNCATED for a malformed record (records before
 * it are kept), -ENOMEM, or -EBUSY after finalize.
 */
int prec_session_add_sideband(struct prec_session *s, const void *buf, size_t len,
			      int ring_cpu);

/*
 * True for the perf record types the session models (MMAP, MMAP2, COMM,
 * FORK, EXIT, SWITCH, SWITCH_CPU_WIDE, ITRACE_START, AUX, LOST, SAMPLE, and
 * ptrec's own PREC_RECORD_SIGNAL):
 * the one list of them; importers skip the others before they get here.
 */
bool prec_session_models_record(uint32_t type);

/*
 * Appends @len trace bytes at stream offset @offset to the stream (cpu, tid),
 * creating it. A piece that starts past the end of the bytes so far records a
 * gap; bytes the stream already has are dropped. Returns 0, -EINVAL, -ENOMEM,
 * -EFBIG (more than 4 GiB in one stream) or -EBUSY after finalize.
 */
int prec_session_add_aux(struct prec_session *s, int cpu, int tid, uint64_t offset,
			 const void *data, size_t len);
/*
 * Where the bytes of streams added by reference come from. fetch() sets
 * *@p, *@n to the whole source piece @src, read into the buffers at
 * *@scratch (NULL at first; it allocates them, release() frees them), valid
 * until the next call with the same @scratch. Calls with distinct scratches
 * may run in several threads at once. Returns 0 or a negative error.
 */
struct prec_aux_source {
	int (*fetch)(void *ctx, uint64_t src, void **scratch, const void **p, size_t *n);
	void (*release)(void *scratch);
	void *ctx;                /* must outlive the session's readers */
	void (*fini)(void *ctx);  /* if set, frees @ctx with the session (or a new source) */
};
void prec_session_set_aux_source(struct prec_session *s, const struct prec_aux_source *src);

/*
 * As prec_session_add_aux(), but the bytes stay in the source: @len bytes
 * at stream offset @offset are bytes [@skip, @skip + @len) of source piece
 * @src. A stream is added either by reference or with its bytes, not both
 * (-EINVAL). Returns as prec_session_add_aux().
 */
int prec_session_add_aux_ref(struct prec_session *s, int cpu, int tid, uint64_t offset,
			     uint64_t src, uint64_t skip, size_t len);
/*
 * Reads the bytes of every stream added by reference into the session (for
 * views that need whole streams). Returns 0 or a negative error.
 */
int prec_session_load_aux(struct prec_session *s);

/*
 * Reading a stream in windows: prec_stream_read() gives bytes [@lo, @hi) of
 * the stream, contiguous, valid until the next call with @r. A stream the
 * session holds is read in place; one added by reference is copied out of
 * its source into @r's buffer, so memory follows hi - lo, not the stream.
 * prec_stream_reader_trim() frees the source's buffers until the next read
 * (the window stays). Returns 0, -EINVAL (a range past the stream) or the
 * source's error.
 */
struct prec_stream_reader {
	const struct prec_session *s;
	const struct prec_stream *st;
	uint8_t *buf;             /* the window: positions [lo, hi) */
	size_t cap;
	uint64_t lo, hi;
	void *scratch;            /* the source's buffers */
	uint64_t c_src;           /* the source piece last fetched, if c_p */
	const uint8_t *c_p;
	size_t c_n;
};
void prec_stream_reader_init(struct prec_stream_reader *r, const struct prec_session *s,
			     const struct prec_stream *st);
int prec_stream_read(struct prec_stream_reader *r, uint64_t lo, uint64_t hi, const uint8_t **p);
void prec_stream_reader_trim(struct prec_stream_reader *r);
void prec_stream_reader_fini(struct prec_stream_reader *r);

/* Marks a gap of @lost bytes at the current end of stream (cpu, tid). */
int prec_session_add_aux_gap(struct prec_session *s, int cpu, int tid, uint64_t lost);
/*
 * Notes that stream bytes [@offset, @offset + @len) of stream (cpu, tid) are
 * known lost (a damaged chunk of the file). Applied at finalize: a range
 * before the stream's first byte or after its last becomes a gap there (one
 * between pieces is a gap already). Returns 0, -EINVAL, -ENOMEM or -EBUSY.
 */
int prec_session_add_aux_lost(struct prec_session *s, int cpu, int tid, uint64_t offset,
			      uint64_t len);

/* Adds an embedded code image (copied). Returns 0, -EINVAL, -ENOMEM, -EBUSY. */
int prec_session_add_image(struct prec_session *s, const struct prec_image_desc *d);
/* The same, but @d->bytes (from malloc) becomes the session's, also on failure: no copy. */
int prec_session_take_image(struct prec_session *s, const struct prec_image_desc *d);
/* Adds kernel text bytes at virtual address @addr. */
int prec_session_add_kernel_text(struct prec_session *s, uint64_t addr,
				 const void *bytes, size_t size);
/* Adds /proc/kallsyms text (appended to what was added before). */
int prec_session_add_kallsyms(struct prec_session *s, const char *text, size_t len);

/*
 * Sorts the sideband by time (stable: records with equal times keep their
 * order), builds the process model and the image store. Call once, after
 * all adds. Returns 0 or a negative error. Defined in image.c: it is
 * prec_session_build_model() followed by prec_images_new(), so that the
 * session model does not depend on the image store built on top of it.
 */
int prec_session_finalize(struct prec_session *s);

/* The session half of prec_session_finalize(): timeline and process model. */
int prec_session_build_model(struct prec_session *s);

/* Hands the image store to the session, which frees it with @free_fn. */
void prec_session_set_images(struct prec_session *s, struct prec_images *im,
			     void (*free_fn)(struct prec_images *));

/* The sorted sideband timeline (valid after finalize). */
size_t prec_session_nr_sb(const struct prec_session *s);
const struct prec_sb *prec_session_sb(const struct prec_session *s, size_t i);
/* Index of the first timeline record with time >= @t. */
size_t prec_session_sb_lower_bound(const struct prec_session *s, uint64_t t);
/*
 * A file that is a prefix of a recording still being written (ptdump
 * --follow): the time before which its timeline is whole (UINT64_MAX for
 * no records, 0 for none known).
 */
uint64_t prec_session_sb_settled(const struct prec_session *s);

size_t prec_session_nr_streams(const struct prec_session *s);
const struct prec_stream *prec_session_stream(const struct prec_session *s, size_t i);

/* The image store (valid after finalize; owned by the session). */
struct prec_images *prec_session_images(const struct prec_session *s);

/* Kernel text and symbols as added (for the image store). */
size_t prec_session_nr_kernel_text(const struct prec_session *s);
int prec_session_kernel_text(const struct prec_session *s, size_t i, uint64_t *addr,
			     const void **bytes, size_t *size);
const char *prec_session_kallsyms(const struct prec_session *s, size_t *len);
size_t prec_session_nr_images(const struct prec_session *s);
const struct prec_image_desc *prec_session_image(const struct prec_session *s, size_t i);

/*
 * Converts a TSC value to perf time with the machine's time_{shift,mult,zero}
 * (perf's tsc_to_perf_time). Without a valid conversion returns @tsc.
 */
uint64_t prec_session_tsc_to_time(const struct prec_session *s, uint64_t tsc);
/* The inverse (for tests and time-range filters). */
uint64_t prec_session_time_to_tsc(const struct prec_session *s, uint64_t time);

/* The process of thread @tid at time @t, or -1 when unknown. */
int prec_session_pid_of(const struct prec_session *s, int tid, uint64_t t);
/*
 * The command name of @tid at time @t: the last COMM before @t (or the first
 * one after it when none precedes). Returns "" when unknown, never NULL.
 */
const char *prec_session_comm(const struct prec_session *s, int tid, uint64_t t);
/*
 * The same as prec_session_comm() and prec_session_pid_of(), and the times
 * [*@from, *@until) over which they give that same answer for @tid (callers
 * cache it).
 */
const char *prec_session_comm_span(const struct prec_session *s, int tid, uint64_t t,
				   uint64_t *from, uint64_t *until);
/*
 * The time of the first exec by @tid (a COMM record with the exec flag) after
 * time @t, or UINT64_MAX when none follows.
 */
uint64_t prec_session_next_exec(const struct prec_session *s, int tid, uint64_t t);

/*
 * Snapshot mode: keeps of each stream only the bytes snapshot @index (1,
 * 2, ...; its PREC_SB_SNAPSHOT record) copied, and nothing of streams it
 * did not copy. Returns 0, or -ENOENT when the recording has no such
 * snapshot.
 */
int prec_session_keep_snapshot(struct prec_session *s, uint32_t index);
/* The snapshots the recording took (its PREC_SB_SNAPSHOT records). */
uint32_t prec_session_nr_snapshots(const struct prec_session *s);
int prec_session_pid_span(const struct prec_session *s, int tid, uint64_t t, uint64_t *from,
			  uint64_t *until);

/*
 * Decoder-specific metadata of the trace format (the CoreSight trace units'
 * configuration): the session owns @meta and frees it with @free_fn (which
 * may be NULL) when it is replaced or the session is freed.
 */
void prec_session_set_trace_meta(struct prec_session *s, void *meta, void (*free_fn)(void *));
void *prec_session_trace_meta(const struct prec_session *s);

/*
 * Warnings collected while building the model (build-id mismatches, missing
 * files, ...), one line each. They are meant for the user; the library never
 * prints them.
 */
size_t prec_session_nr_warnings(const struct prec_session *s);
const char *prec_session_warning(const struct prec_session *s, size_t i);
/* Adds a warning (deduplicated); used by the image store and decoders. */
void prec_session_warn(struct prec_session *s, const char *fmt, ...) prec_printf(2, 3);

#endif

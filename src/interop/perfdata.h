/* SPDX-License-Identifier: MIT */
/*
 * The perf.data importer: reads a file written by `perf record` (the seekable
 * "PERFILE2" form, or perf's pipe form from `perf record -o -`) into a decode
 * session, as load.h does for ptrec trace files.
 *
 * What it takes from the file:
 *   - the events: attrs with their sample ids (attr section, or HEADER_ATTR
 *     records in pipe form), names from HEADER_EVENT_DESC (or EVENT_UPDATE
 *     names), the kind of each: the tracer by its PMU type, pause/resume
 *     triggers by attr.aux_action, the dummy event as sideband tracking;
 *   - the machine: vendor/family/model/stepping from the CPUID feature, the
 *     intel_pt AUXTRACE_INFO (TSC conversion, config bit masks, MTC period,
 *     CPUID 0x15 ratio, max non-turbo ratio, per-CPU or per-thread streams;
 *     later fields only as far as the record's size holds them), else
 *     TIME_CONV. TSC packets carry 56 bits and perf takes bits 56-63 from
 *     the AUXTRACE records' reference: those go into time_zero;
 *   - the sideband: MMAP(2), COMM, FORK, EXIT, SWITCH(_CPU_WIDE),
 *     ITRACE_START, AUX, LOST and SAMPLE records, also those inside zstd
 *     COMPRESSED(2) records. perf lays out each record's sample_id trailer by
 *     its own event's sample_type; the importer re-encodes every record so
 *     that it ends in a PERF_SAMPLE_IDENTIFIER (samples start with one), and
 *     registers each event with its sample_type | IDENTIFIER, so the session
 *     finds each record's layout whatever mix of events the file has;
 *   - build ids (HEADER_BUILD_ID feature or records) put into the MMAP
 *     records of the files they name (rewritten as MMAP2 with a build id),
 *     so the session's build-id checks apply; a file whose recorded path
 *     (under the session's symfs) is missing or has another build id is
 *     taken from perf's build-id cache when the cached copy matches
 *     (<dir>/.build-id/xx/<rest>/elf, or ../vdso, or the file itself as
 *     older perf linked it), and added to the session as an image;
 *   - the trace: AUXTRACE records in file order into the session's streams,
 *     keyed (cpu, -1) for per-CPU recordings and (-1, tid) otherwise. perf
 *     pads each piece to 8 bytes: the padding is removed where the next
 *     piece's offset (or, after the last piece, the stream's AUX records)
 *     shows where the trace ended; before a hole it cannot be told from
 *     trace and stays (zero bytes, PAD packets to the decoder).
 *
 * cs_etm (CoreSight) perf.data loads like a ptrec file with etm blocks: the
 * machine's vendor is "ARM" (so prec_decoder_for_session() picks the
 * CoreSight decoder), the trace units of AUXTRACE_INFO's priv[] (header
 * versions 0 to 2, ETMv4 and ETE blocks) are attached to the session
 * (coresight.h), timestamps convert through TIME_CONV, and the streams are
 * per CPU when the AUXTRACE records name a CPU, else per thread (as perf
 * decides). A CPU whose tracer AUX records carry
 * PERF_AUX_FLAG_CORESIGHT_FORMAT_RAW holds unformatted (TRBE) data, all
 * others formatter frames; for per-thread streams one such record makes
 * all units raw. AUX_OUTPUT_HW_ID records give the trace ID of the CPU in
 * their sample_id (with one unit, that unit); a record that names no known
 * CPU or an invalid ID is skipped with a note, and the last ID of a CPU
 * holds for all its trace. ETMv3/PTM blocks fail with -EOPNOTSUPP.
 *
 * Every size and offset in the file is checked against the file size before
 * use, the sections must not overlap, allocations are capped by what the
 * file holds, and a damaged file gives a negative error with a one-line
 * message in the diag, never a crash. Limits: 4096 events, 32768 sample
 * ids, 1024 trace streams, zstd data expanding at most 1024 times.
 * An input that simply ends early (a pipe cut off, a recording whose header
 * was never finished) loads up to the last whole record and says so in the
 * report.
 *
 * A perf.data directory (perf record --threads) is read through its path:
 * the header file "data", then the raw records of every "data.N" file.
 */
#ifndef PREC_PERFDATA_H
#define PREC_PERFDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "base/notes.h"
#include "base/perf_abi.h"
#include "session/session.h"
#include "base/util.h"

/* prec_perfdata_probe() results */
#define PREC_PERFDATA_FILE 1      /* seekable perf.data ("PERFILE2", header size 104) */
#define PREC_PERFDATA_PIPE 2      /* perf's pipe format ("PERFILE2", header size 16) */
#define PREC_PERFDATA_DIR 3       /* a directory from perf record --threads ("data", "data.N") */

/*
 * Tells whether the first @n bytes of an input are perf.data. 16 bytes are
 * enough to tell the two forms apart; with 8 to 15 bytes a matching magic
 * counts as the file form. A byte-swapped or version-1 magic also counts as
 * perf.data (loading it then says why it cannot be read).
 * Returns PREC_PERFDATA_FILE, PREC_PERFDATA_PIPE or 0 (not perf.data).
 */
int prec_perfdata_probe(const void *head, size_t n);

/*
 * The same for a path (not "-"): a file is probed by its first 16 bytes, a
 * directory by its "data" file. Returns PREC_PERFDATA_FILE, _PIPE, _DIR, or 0
 * (not perf.data, or unreadable).
 */
int prec_perfdata_probe_path(const char *path);

struct prec_perfdata_opts {
	/*
	 * perf's build-id cache directory. NULL: $PERF_BUILDID_DIR, else
	 * $HOME/.debug. "": do not use a cache.
	 */
	const char *buildid_dir;
	/* Upper bound for a non-seekable input read into memory (0: 16 GiB). */
	uint64_t max_input;
	/*
	 * For path "-": bytes the caller already read from stdin (e.g. to probe
	 * it), taken as the start of the input. Borrowed for the call only.
	 */
	const void *stdin_head;
	size_t stdin_head_len;
};

#define PREC_PERFDATA_NR_TYPES 128   /* record types counted one by one */

struct prec_perfdata_report {
	int format;                   /* PREC_PERFDATA_FILE or _PIPE */
	uint64_t input_size;
	uint64_t data_offset, data_size;  /* file form: the data section */
	uint64_t feat_bits[4];        /* HEADER_* features present */
	unsigned nr_events;
	unsigned auxtrace_type;       /* PERF_AUXTRACE_* of AUXTRACE_INFO, 0 if none */
	/* records by type (inside COMPRESSED records included); types >= 128 in other */
	uint64_t nr_records[PREC_PERFDATA_NR_TYPES];
	uint64_t nr_other_type;
	uint64_t nr_compressed;       /* COMPRESSED and COMPRESSED2 records */
	uint64_t decompressed_bytes;
	uint64_t aux_bytes;           /* AUXTRACE payload bytes (perf's padding included) */
	uint64_t unknown_id;          /* records whose sample id names no event (skipped) */
	uint64_t bad_records;         /* sideband records the session found malformed (skipped) */
	uint64_t buildid_cache_used;  /* files taken from the build-id cache */
	bool cut_short;               /* the input ended early; loaded up to there */
	struct prec_notes notes;      /* for the user: things skipped or assumed */
};

/*
 * Loads perf.data at @path ("-" for stdin, or a perf.data directory) into the
 * empty session @s and finalizes it. @o may be NULL (defaults). @rep is
 * filled (zeroed first) even on failure as far as the file was read. @d (may
 * be NULL) gets a one-line message (what is wrong, where) on failure. On
 * failure @s may hold part of the file and is not finalized: free it.
 * Returns 0 or a negative error: -ENOENT/-EACCES/... (open, read), -EISDIR
 * (a directory without a perf.data "data" file),
 * -PREC_E_FORMAT (malformed or not perf.data), -PREC_E_TRUNCATED (ends inside
 * the header or its sections), -PREC_E_VERSION (byte-swapped or v1 file),
 * -EOPNOTSUPP (an AUX area type other than intel_pt and cs_etm, or
 * ETMv3/PTM CoreSight trace),
 * -EFBIG (input larger than the cap), -ENOMEM.
 */
int prec_perfdata_load(struct prec_session *s, const char *path,
		       const struct prec_perfdata_opts *o, struct prec_perfdata_report *rep,
		       struct prec_diag *d);

/*
 * The same from a buffer that holds the whole input (borrowed: the session
 * copies what it keeps). For tests and for callers that read the input
 * themselves.
 */
int prec_perfdata_load_buf(struct prec_session *s, const void *buf, size_t len,
			   const struct prec_perfdata_opts *o, struct prec_perfdata_report *rep,
			   struct prec_diag *d);

/* What describes a perf.data input, for ptdump --info (output/perfdata_info.h). */
struct prec_perfdata_event_info {
	const char *name;             /* "?" if the file names none */
	struct prec_attr attr;
	size_t nr_ids;
	bool tracer;                  /* the AUX area event (intel_pt, cs_etm) */
};

struct prec_perfdata_bid_info {
	const char *path;
	uint8_t id[PREC_BUILD_ID_MAX];
	uint8_t size;
};

struct prec_perfdata_etm_info {
	uint64_t magic;               /* CS_ETMV3_MAGIC, CS_ETMV4_MAGIC, CS_ETE_MAGIC */
	int32_t cpu;
	uint32_t nparams;
};

struct prec_perfdata_header {
	struct prec_perfdata_report rep;  /* form, sizes, features, records by type, notes */
	uint64_t attr_size;               /* file form: bytes per attr entry */
	size_t nr_parts;                  /* data.N files of a --threads directory */
	/* features (NULL or 0 when absent) */
	const char *hostname, *osrelease, *version, *arch, *cpudesc, *cpuid;
	uint32_t cpus_online, cpus_avail;
	uint64_t total_mem;               /* kB */
	const char *const *cmdline;
	uint32_t cmdline_n;
	bool have_comp;
	uint32_t comp_type, comp_level, comp_ratio, comp_mmap_len;
	bool have_stime;
	uint64_t stime_first, stime_last;
	const struct prec_perfdata_event_info *ev;
	size_t nr_ev;
	const struct prec_perfdata_bid_info *bids;
	size_t nr_bids;
	/* AUXTRACE_INFO */
	bool have_info;
	uint32_t aux_type;                /* PERF_AUXTRACE_* */
	const uint64_t *priv;             /* its values */
	size_t npriv;
	const char *pt_filter;            /* intel_pt address filter, or NULL */
	bool pt_have_evtrace;
	uint64_t pt_evtrace;
	const struct prec_perfdata_etm_info *etm;  /* cs_etm: the trace units */
	size_t nr_etm;
	/* TIME_CONV */
	bool have_tc;
	uint64_t tc_shift, tc_mult, tc_zero;
	uint64_t nr_aux_records;          /* AUXTRACE records */
	void *owner;                      /* holds what the pointers point to */
};

/*
 * Reads what describes perf.data at @path ("-" for stdin, or a directory)
 * without loading its trace: the header, features, events, AUXTRACE_INFO,
 * TIME_CONV and the records counted by type. *@out is to be freed with
 * prec_perfdata_header_free(). Returns 0 or a negative error as
 * prec_perfdata_load() (@d says what).
 */
int prec_perfdata_read_header(const char *path, const struct prec_perfdata_opts *o,
			      struct prec_perfdata_header **out, struct prec_diag *d);
/* The same from a buffer that holds the whole input (borrowed until the free). */
int prec_perfdata_read_header_buf(const void *buf, size_t len, const struct prec_perfdata_opts *o,
				  struct prec_perfdata_header **out, struct prec_diag *d);
void prec_perfdata_header_free(struct prec_perfdata_header *h);

/* perf's name of header feature @bit ("hostname", "build_id", ...), or NULL if unknown. */
const char *prec_perfdata_feature_name(unsigned bit);

/* perf's name of record type @type ("MMAP2", "AUXTRACE", ...), or NULL if unknown. */
const char *prec_perfdata_record_name(uint32_t type);

#endif

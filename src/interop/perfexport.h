/* SPDX-License-Identifier: MIT */
/*
 * Export of a ptrec trace file as a perf.data file that perf's own Intel PT
 * decoder reads (`perf script`, `perf report`, ...).
 *
 * What goes into the perf.data:
 *  - one attr per event of the recording (the tracer with the PMU type
 *    recorded, the trigger events, the tracking event) with the kernel sample
 *    ids the sideband uses, written at PERF_ATTR_SIZE_VER7 (128 bytes) so
 *    perf 5.x/6.x reads them (config3 is dropped; the tracer never uses it);
 *  - PERF_RECORD_AUXTRACE_INFO with the intel_pt priv[] (PMU type, TSC
 *    conversion, config bit masks, switch mode, CTC ratio, non-turbo ratio);
 *  - PERF_RECORD_TIME_CONV;
 *  - one PERF_RECORD_AUXTRACE per piece of every AUX stream (idx = stream
 *    number, cpu/tid = the stream key, offset = the stream offset);
 *  - the sideband records as recorded, sorted by time;
 *  - feature sections: BUILD_ID, HOSTNAME, OSRELEASE, ARCH, NRCPUS, CPUID,
 *    CMDLINE, EVENT_DESC and AUXTRACE (the index of the AUXTRACE records).
 *
 * perf finds code through the build ids: the exporter fills a directory DIR
 * (default "<out>.debug") whose ".debug" is a build-id cache laid out as
 * perf's ~/.debug (".build-id/xx/rest" symlinks to "<path>/<build id>/elf").
 * For each image it copies the whole file from disk when a file with the
 * recorded build id is found (perf then has symbols too), else writes the
 * embedded code bytes at their file offsets (perf can decode but has no
 * symbols for that binary). `perf script --symfs DIR` then needs nothing
 * else: with --symfs, perf (6.1) takes its build-id cache from DIR/.debug
 * and finds no other copy of the binaries (no /usr/lib/debug, no system
 * paths), so it decodes exactly the recorded code. Without --symfs,
 * `perf --buildid-dir DIR/.debug script` also works, but perf then prefers
 * separate debug info and system files where it finds them.
 *
 * Only Intel PT recordings (hardware or software tracer) are exported;
 * CoreSight files give -ENOTSUP.
 *
 * What perf cannot take as recorded, and what is written instead (each is
 * also a line in the report's notes when it applies):
 *  - attrs larger than 128 bytes (perf before 6.3 refuses them): config3 is
 *    dropped; the aux_action word (perf before 6.14 calls it reserved and
 *    refuses the attr) is cleared. Pauses and resumes are in the trace
 *    itself (trace ends and begins), so decoding loses nothing.
 *  - tracepoint attrs need the tracepoint formats (TRACING_DATA), which a
 *    ptrec file does not hold: tracepoint triggers are written as software
 *    events under their own names (their samples carry no raw fields).
 *  - the software tracer's clock starts at TSC 0, and perf 6.1 crashes on a
 *    trace whose first timestamps are 0 (it walks instructions before it
 *    has a decoder state): for emulated files the TSC's upper byte is set
 *    through the AUXTRACE reference and removed again by time_zero, so perf
 *    prints the recorded times and the trace bytes are untouched.
 *  - the software tracer can stamp a new thread's FORK after the thread's
 *    first records (its clock is shared by the process's threads); perf
 *    then loses the thread's trace, so such FORKs are moved before them.
 *  - per-thread streams get HAVE_SCHED_SWITCH 0 (with a switch mode perf
 *    takes the thread from switch events, which per-thread recordings lack).
 *  - snapshot recordings are written as gathered streams (SNAPSHOT_MODE 0).
 *  - missing stream bytes (lost AUX data) are not marked: perf meets the
 *    jump as a decode error and resynchronises, as ptdump does at its gaps.
 *  - kernel text and kallsyms in the file (--kcore, --emulate=system) go to
 *    SYMFS/kcore_dir as perf record --kcore lays it out (perfexport_kernel.h),
 *    with a kernel MMAP record: perf script --symfs SYMFS --kallsyms
 *    SYMFS/kcore_dir/kallsyms decodes the kernel trace from them.
 */
#ifndef PREC_PERFEXPORT_H
#define PREC_PERFEXPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/common.h"
#include "base/notes.h"

struct prec_perf_export_opts {
	/*
	 * The directory to fill for `perf script --symfs DIR` (the build-id
	 * cache goes into DIR/.debug); NULL: "<out_path>.debug".
	 */
	const char *symfs_dir;
	/* Root under which the recorded binaries are looked up; NULL: "/". */
	const char *binaries_root;
	/* Do not write a build-id cache at all. */
	bool no_buildid_cache;
	/*
	 * Called as the trace is written, with the trace bytes written and
	 * those of all streams (ptdump's progress line); NULL: none.
	 */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
};

struct prec_perf_export_report {
	uint32_t attrs;             /* attrs written */
	uint32_t streams;           /* AUX streams */
	uint64_t aux_records;       /* PERF_RECORD_AUXTRACE records */
	uint64_t aux_bytes;         /* trace bytes (without padding) */
	uint64_t aux_missing;       /* stream bytes missing from the file (gaps) */
	uint64_t sideband_records;  /* sideband records written */
	uint64_t sideband_dropped;  /* records perf could not attribute (unknown id, malformed) */
	uint32_t images_whole;      /* cache entries copied from the whole file on disk */
	uint32_t images_code_only;  /* cache entries with only the embedded code bytes */
	uint32_t images_missing;    /* images with a build id but neither file nor bytes */
	uint32_t images_no_build_id;/* images perf can only find by path */
	uint32_t damaged_chunks;    /* damaged places in the ptrec file (skipped) */
	int have_sched_switch;      /* the priv[] value chosen (0, 2 or 3) */
	char symfs_dir[1024];       /* the --symfs directory written ("" if none) */
	char kcore_dir[1200];       /* its kcore_dir for perf --kallsyms ("" if none) */
	/* Things perf will not see or cannot use, one line each. */
	struct prec_notes notes;    /* each text once */
};

/*
 * Converts the ptrec trace file @ptrec_path into the perf.data file
 * @out_path (created or truncated, mode 0600). @o may be NULL for the
 * defaults; @rep (may be NULL) receives what was written. Returns 0, or a
 * negative error with @d (may be NULL) saying what went wrong and what to do:
 *   -PREC_E_FORMAT   not a ptrec file, or no MACHINE/EVENTS/tracer event
 *   -ENOTSUP         not an Intel PT recording (CoreSight)
 *   -errno           reading the input, writing the output or the cache
 * On error the output file is removed.
 */
int prec_perf_export(const char *ptrec_path, const char *out_path,
		     const struct prec_perf_export_opts *o, struct prec_perf_export_report *rep,
		     struct prec_diag *d);

#endif

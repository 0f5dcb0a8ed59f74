/* SPDX-License-Identifier: MIT */
/*
 * The CoreSight software tracer, host side: runs an aarch64 workload under
 * qemu-aarch64 with the ptrec-emu-etm.so plugin, which writes ETMv4
 * instruction trace (EL0 only) and perf-format sideband, and streams both
 * back while the workload runs. man/ptrec-emulate-etm.7 describes what the
 * trace contains and its limits.
 *
 * What the recorder gets, through struct prec_etm_ops:
 *  - stream():   once per new ETM stream (one per thread), before its
 *                first aux() and its ITRACE_START: the stream's index (0,
 *                1, ... in the order the threads started) and CoreSight
 *                trace ID (csid_base + index). At most 0x70 - csid_base
 *                streams: one more stops the recording with -E2BIG.
 *  - aux():      raw ETMv4 bytes of one per-thread stream (cpu = -1), in
 *                order, unformatted as a TRBE writes them; offset is the
 *                position in that thread's stream. A thread that execs keeps
 *                its stream.
 *  - sideband(): one perf record, as the x86 software tracer sends them
 *                (emulate.h): COMM, MMAP2, FORK, EXIT, ITRACE_START, AUX,
 *                SAMPLE for trigger firings, and TEXT_POKE (old_len 0) with
 *                the bytes of code that ran outside every file mapping
 *                (QEMU's signal trampoline page). Same sample ids and types
 *                as emulate.h (PREC_EMU_ID_PT, PREC_EMU_SAMPLE_TYPE, ...).
 *
 * The trace unit the bytes claim to come from is described by struct
 * prec_etm_regs (prec_etm_regs_get()): what the lead stores in the MACHINE
 * chunk's etm blocks (prec_etm_regs_block(): perf's CS_ETMV4 layout) and
 * what a snapshot's device .ini holds (tests/support/snapshot_write.h).
 *
 * The emulated clock is the one of emulate.h: the process's retired user
 * instructions; timestamps (with @timestamp) are values of it.
 */
#ifndef PREC_ETM_EMULATE_H
#define PREC_ETM_EMULATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "record/emulate.h"

#define PREC_ETM_CSID_BASE 0x10

struct prec_etm_config {
	const char *qemu;   /* qemu-user binary; NULL: "qemu-aarch64" from PATH */
	const char *plugin; /* ptrec-emu-etm.so; required */
	bool timestamp;     /* TRCCONFIGR.TS: Timestamp packets at syncs and Trace On */
	bool contextid;     /* TRCCONFIGR.CID: contexts carry the tid (CONTEXTIDR_EL1) */
	unsigned sync_period; /* log2 bytes between periodic syncs, 8..20; 0: 12 */
	unsigned csid_base; /* trace ID of stream 0; 0: PREC_ETM_CSID_BASE */
	bool start_paused;  /* aux-action=start-paused */
	const struct prec_emu_trigger *triggers; /* borrowed; as in emulate.h */
	size_t ntriggers;
	/* Address filters (the kernel's, validated): ViewInst include ranges. Borrowed. */
	const struct prec_addr_filter *filters;
	int nfilters;
	const char *truth_path; /* ground truth output (emulate.h's format), NULL for none */
	char *const *argv;      /* the workload, argv[0] looked up in PATH */
	uint64_t *insns;        /* if not NULL: user instructions retired, all threads */
};

struct prec_etm_ops {
	void *ctx;
	/* Each returns 0, or a negative code that stops the recording. */
	int (*stream)(void *ctx, uint32_t pid, uint32_t tid, unsigned index, uint8_t csid);
	int (*aux)(void *ctx, uint32_t pid, uint32_t tid, uint64_t offset, const void *data,
		   size_t size);
	int (*sideband)(void *ctx, const void *rec, size_t size);
	void (*trig_off)(void *ctx, uint32_t *trig_off); /* may be NULL; as in emurun.h */
	/* may be NULL: a thread sleeps, wakes, starts or ran its slice, as in emurun.h */
	int (*sched)(void *ctx, uint32_t pid, uint32_t tid, uint64_t time, int what,
		     uint32_t slot);
};

/* The trace unit's registers, as the encoder's output implies them. */
struct prec_etm_regs {
	uint32_t trcconfigr;
	uint32_t trctraceidr;  /* the CoreSight trace ID */
	uint32_t trcidr0, trcidr1, trcidr2, trcidr8;
	uint32_t trcauthstatus;
	uint64_t ts_source;    /* perf's TS_SOURCE word */
};

/* The core name a snapshot gives OpenCSD: Armv8.3-A, PAC branches known. */
#define PREC_ETM_CORE_NAME "ARMv8.3-A"

/* Registers of the trace unit of trace ID @csid under @cfg (may be NULL: defaults). */
void prec_etm_regs_get(const struct prec_etm_config *cfg, uint8_t csid,
		       struct prec_etm_regs *regs);

/*
 * perf's cs_etm per-CPU block (src/perf_format.h: CS_ETMV4_PRIV_MAX words,
 * kind CS_ETMV4_MAGIC) for @regs, with @cpu in CS_ETM_CPU.
 */
#define PREC_ETM_BLOCK_WORDS 11
void prec_etm_regs_block(const struct prec_etm_regs *regs, int cpu,
			 uint64_t block[PREC_ETM_BLOCK_WORDS]);

/*
 * Finds @prog like execvp does and checks that the CoreSight software
 * tracer can run it (an aarch64 ELF executable). Writes the resolved path to
 * @path. Returns 0, or -ENOENT / -EACCES / -ENOEXEC with @diag (may be NULL).
 */
int prec_etm_check_program(const char *prog, char *path, size_t size, struct prec_diag *diag);

/*
 * Runs @cfg->argv under qemu-aarch64 with the tracer and delivers the data
 * to @ops as it arrives. Forwards SIGINT and SIGTERM to the workload. On
 * return *@wstatus holds the workload's wait status (prec_emu_exit_code()).
 * Returns 0, or a negative code with @diag filled: -ENOENT (no qemu, plugin
 * or program), -ENOEXEC (not an aarch64 program, or QEMU could not load the
 * plugin), -EPROTO (the plugin reported an error), -EINVAL (bad config),
 * -ENOMEM, other -errno, or a callback's code.
 */
int prec_etm_run(const struct prec_etm_config *cfg, const struct prec_etm_ops *ops,
		 int *wstatus, struct prec_diag *diag);

/*
 * A whole recording in memory, for tests and for writing snapshots:
 * prec_etm_record() runs the workload and keeps every stream and the code
 * the trace needs (executable segments of the mapped files, as read from
 * the files now, and TEXT_POKE bytes).
 */
struct prec_etm_stream {
	uint32_t pid, tid;
	uint8_t csid;
	uint8_t *data;
	size_t size;
};

struct prec_etm_mem {
	uint64_t addr;
	uint8_t *data;
	size_t size;
};

struct prec_etm_recording {
	size_t nstreams;
	struct prec_etm_stream *streams;
	size_t nmem;
	struct prec_etm_mem *mem;
	size_t nsamples;         /* SAMPLE records seen */
	int wstatus;
};

/*
 * Runs @cfg like prec_etm_run() and fills *@rec (free with
 * prec_etm_recording_free()). A stream larger than @max_stream bytes
 * (0: 256 MiB) stops the recording with -EFBIG. If @tee is not NULL, its
 * callbacks see everything too (first), so one run can feed a trace file
 * writer and a snapshot.
 */
int prec_etm_record(const struct prec_etm_config *cfg, size_t max_stream,
		    const struct prec_etm_ops *tee, struct prec_etm_recording *rec,
		    struct prec_diag *diag);
void prec_etm_recording_free(struct prec_etm_recording *rec);

#endif

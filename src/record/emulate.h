/* SPDX-License-Identifier: MIT */
/*
 * The software tracer, host side: runs a workload under qemu-x86_64 with the
 * ptrec-emu.so plugin, which writes genuine Intel PT (libipt's encoder) and
 * perf-format sideband, and streams both back while the workload runs.
 * man/ptrec-emulate.7 describes what the trace contains and its limits.
 *
 * What the recorder gets, through struct prec_emu_ops:
 *  - aux():      PT bytes of one per-thread stream (cpu = -1), in order; offset
 *                is the position in that thread's stream. A stream is keyed by
 *                tid; a thread that execs keeps its stream (offsets continue).
 *  - sideband(): one perf record (struct perf_event_header first, header.size
 *                bytes): COMM (misc COMM_EXEC on exec), MMAP2 (with
 *                PERF_RECORD_MISC_MMAP_BUILD_ID and the build id when the file
 *                has one, else dev/inode), FORK, EXIT, ITRACE_START (one per
 *                stream), AUX (offset, size, flags 0 for each piece passed to
 *                aux()), and SAMPLE for every trigger firing.
 *    Non-sample records carry a sample_id_all trailer for sample_type
 *    PERF_SAMPLE_TID | TIME | CPU | IDENTIFIER with id PREC_EMU_ID_PT and cpu 0.
 *    Samples have sample_type PERF_SAMPLE_IDENTIFIER | IP | TID | TIME | CPU |
 *    PERIOD (PREC_EMU_SAMPLE_TYPE) and id PREC_EMU_ID(event_index).
 *    Times are TSC values of the emulated clock (PREC_EMU_* below): perf's
 *    conversion is the identity (time_shift 0, time_mult 1, time_zero 0).
 *
 * The emulated clock: the process's retired user instructions, one TSC tick
 * each (1 GHz nominal: max non-turbo ratio = CBR = 10); the crystal clock
 * (CTC) ticks every 40 TSC ticks (CPUID.15H: eax 1, ebx 40, ecx 25 MHz);
 * CYC counts the thread's own instructions as cycles.
 */
#ifndef PREC_EMULATE_H
#define PREC_EMULATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/common.h"
#include "record/emurun.h"
#include "spec/filter.h"

/* Event ids: the intel_pt event (group index 0) is 1; group member i is i + 1. */
#define PREC_EMU_ID_PT 1
#define PREC_EMU_ID(event_index) ((uint64_t)(event_index) + 1)
#define PREC_EMU_SAMPLE_ID_TYPE 0x10086ull /* TID|TIME|CPU|IDENTIFIER */
#define PREC_EMU_SAMPLE_TYPE 0x10187ull    /* IDENTIFIER|IP|TID|TIME|CPU|PERIOD */

/* The machine the emulated trace claims to come from (a Skylake client). */
struct prec_emu_cpu {
	const char *vendor;        /* "GenuineIntel" */
	uint16_t family;
	uint8_t model;
	uint8_t stepping;
	uint32_t cpuid_14_0[4];    /* eax, ebx, ecx, edx of CPUID.(EAX=14H,ECX=0) */
	uint32_t cpuid_14_1[4];    /* CPUID.(EAX=14H,ECX=1) */
	uint32_t cpuid_15[3];      /* eax (denominator), ebx (numerator), ecx (crystal Hz) */
	uint8_t max_nonturbo_ratio; /* MSR_PLATFORM_INFO[15:8]; also every CBR payload */
	uint64_t tsc_hz;           /* nominal TSC frequency */
};

/* Data: the lead writes it into the trace file; decoders apply pt_cpu_errata. */
extern const struct prec_emu_cpu prec_emu_cpu;

struct prec_emu_config {
	const char *qemu;   /* qemu-user binary; NULL: "qemu-x86_64" from PATH */
	const char *plugin; /* ptrec-emu.so; required */
	/* intel_pt config terms (see prec_emu_set_pt_config) */
	bool tsc, mtc, cyc, noretcomp;
	bool no_branch;     /* branch=0: timing packets only */
	unsigned mtc_period, cyc_thresh, psb_period;
	bool start_paused;  /* aux-action=start-paused on the intel_pt event */
	const struct prec_emu_trigger *triggers; /* borrowed */
	size_t ntriggers;
	/* Address filters (the kernel's, validated): FilterEn ranges. Borrowed. */
	const struct prec_addr_filter *filters;
	int nfilters;
	const char *truth_path; /* ground truth output, NULL for none */
	char *const *argv;      /* the workload, argv[0] looked up in PATH */
	/* If not NULL, receives the user instructions the workload retired
	 * (all processes and threads, traced or paused). */
	uint64_t *insns;
};

/*
 * Sets the intel_pt terms of @cfg from an intel_pt perf_event_attr.config
 * value in the kernel's format (cyc bit 1, mtc 9, tsc 10, noretcomp 11,
 * branch 13, mtc_period 14-17, cyc_thresh 19-22, psb_period 24-27).
 */
void prec_emu_set_pt_config(struct prec_emu_config *cfg, uint64_t config);

/*
 * Finds @prog like execvp does and checks that the software tracer can run it
 * (an x86-64 ELF executable, or a "#!" script whose interpreter is one).
 * Writes the resolved path to @path. Returns 0, or -ENOENT / -EACCES /
 * -ENOEXEC with @diag (may be NULL) saying what to do.
 */
int prec_emu_check_program(const char *prog, char *path, size_t size, struct prec_diag *diag);

/*
 * Runs @cfg->argv under QEMU with the tracer and delivers the data to @ops
 * as it arrives. Forwards SIGINT and SIGTERM to the workload while running.
 * On return *@wstatus holds the workload's wait status (see
 * prec_emu_exit_code). Returns 0, or a negative code with @diag filled:
 * -ENOENT (no qemu, plugin or program), -ENOEXEC (not an x86-64 program, or
 * QEMU could not load the plugin), -EPROTO (the plugin reported an error),
 * -ENOMEM, other -errno, or a callback's code.
 */
int prec_emu_run(const struct prec_emu_config *cfg, const struct prec_emu_ops *ops,
		 int *wstatus, struct prec_diag *diag);

/* Shell-style exit code of a wait status: the exit code, or 128 + signal. */
int prec_emu_exit_code(int wstatus);

#endif

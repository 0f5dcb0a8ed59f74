/* SPDX-License-Identifier: MIT */
/*
 * The recorder: opens the event groups with perf_event_open (or runs the
 * software tracer), drains the data and AUX rings into the trace file, and
 * adds what a decoder needs (machine parameters, events, code images,
 * kernel symbols, statistics).
 *
 * Signals are the caller's: it passes @stop_fd, a descriptor that becomes
 * readable when the user asked to stop (a pipe written by its SIGINT/SIGTERM
 * handler). A workload gets @stop_signal then (0: none, as for a terminal's
 * Ctrl-C, which the workload receives itself) and the recorder waits for it.
 */
#ifndef PREC_RECORD_H
#define PREC_RECORD_H

#include <sys/types.h>

#include "common.h"
#include "embed.h"
#include "ring.h"

struct prec_evlist;

struct prec_record_opts {
	struct prec_evlist *el;      /* finished event list (borrowed) */
	const char *output;          /* trace file path */
	char *const *argv;           /* workload, or NULL to attach */
	const pid_t *pids;           /* -p: processes (all their threads) */
	size_t npids;
	const pid_t *tids;           /* -t: single threads */
	size_t ntids;
	bool system_wide;            /* -a */
	const int *cpus;             /* -C: CPU list, NULL for all online */
	size_t ncpus;
	bool per_thread;             /* per-thread mmaps (no inherit) */
	uint64_t data_bytes;         /* data ring size per mmap (0: default) */
	uint64_t aux_bytes;          /* AUX ring size per mmap (0: default) */
	double duration;             /* seconds; 0: until the workload ends / stop */
	bool kcore;                  /* copy kernel text from /proc/kcore */
	bool no_embed;               /* code images by reference only */
	int compress;                /* zstd level, 0 = off */
	int stop_fd;                 /* readable: stop now (-1: none) */
	int stop_signal;             /* signal for the workload on stop (0: none) */
	/* software tracer */
	bool emulate;
	const char *plugin;          /* ptrec-emu.so */
	const char *plugin_etm;      /* ptrec-emu-etm.so (aarch64 programs) */
	const char *qemu;            /* NULL: from PATH */
	const char *truth;           /* ground-truth output, or NULL */
	/* for the INFO chunk */
	int cmd_argc;
	char *const *cmd_argv;
};

struct prec_record_result {
	bool workload;               /* a workload was run */
	int exit_code;               /* its shell-style exit status */
	int nstreams;
	uint64_t aux_bytes;          /* trace bytes accepted */
	uint64_t dropped_bytes;      /* trace bytes the writer could not take */
	uint64_t sideband_bytes;
	uint64_t file_bytes;
	uint64_t duration_ns;
	struct prec_ring_counts counts; /* summed over all rings */
	struct prec_embed_result embed;
	bool kcore_missing;          /* --kcore, but no /proc/kcore */
	uint64_t kcore_bytes;        /* kernel text copied with --kcore */
	bool kallsyms_hidden;        /* kallsyms addresses hidden (kptr_restrict) */
	char notes[4][256];          /* things the user should know */
	int nnotes;
};

/*
 * Records. Returns 0 when the file is complete (the workload's own exit
 * status is in @res), or a negative code with @d saying what went wrong and
 * what to do. A file is left behind whenever it was created: what was
 * written before an error stays readable.
 */
int prec_record(const struct prec_record_opts *o, struct prec_record_result *res,
		struct prec_diag *d);

struct prec_event;
/*
 * Turns the kernel's refusal @err (negative errno) to open @ev (NULL: the
 * tracking event) into a cause and a fix in @d. Returns @err.
 */
int prec_explain_open_error(int err, const struct prec_event *ev, struct prec_diag *d);

/* Parses a CPU list ("0,2-3"). *@cpus is malloc'd. Returns 0 or -EINVAL. */
int prec_parse_cpu_list(const char *s, int **cpus, size_t *n);

#endif

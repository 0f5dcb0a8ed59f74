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

#include "base/common.h"
#include "record/embed.h"
#include "record/ring.h"

struct prec_evlist;
struct prec_kernel;

/*
 * --emulate's machine: two CPUs unless --emulate-cpus says otherwise. Not the
 * host's count: the model schedules the software tracer's threads itself, so
 * a recording is the same on every host, and two is the fewest that shows
 * what per-CPU recording does (an AUX area per CPU, switch records).
 */
#define PREC_EMULATE_CPUS 2
#define PREC_EMULATE_CPUS_MAX 64
/* --emulate-slice's range, in user instructions (the default is the model's). */
#define PREC_EMULATE_SLICE_MIN 1000ull
#define PREC_EMULATE_SLICE_MAX 1000000000000ull

struct prec_record_opts {
	struct prec_evlist *el;      /* finished event list (borrowed) */
	const char *output;          /* trace file path; "-": output_fd */
	int output_fd;               /* with output "-": where the trace goes (0: stdout) */
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
	const char *filter;          /* the tracer's address filters, as the kernel takes them
				      * (PERF_EVENT_IOC_SET_FILTER), or NULL */
	bool kcore;                  /* copy kernel text from /proc/kcore */
	bool no_embed;               /* code images by reference only */
	int compress;                /* zstd level, 0 = off */
	size_t chunk_size;           /* target bytes per trace chunk (0: the writer's default) */
	int stop_fd;                 /* readable: stop now (-1: none) */
	/*
	 * The progress line while the file is finished (the last chunks, the
	 * code images): 1 at once, 0 never, -1 when standard error is a
	 * terminal and it takes over a second.
	 */
	int progress;
	/*
	 * Snapshot mode (-S): the AUX area mapped read-only (overwrite mode),
	 * tracing continuously; a snapshot copies the newest snapshot_size
	 * bytes (0: the whole area) into the file when snapshot_fd becomes
	 * readable (a pipe the caller's SIGUSR2 handler writes; one byte read
	 * per snapshot), when an event with the snapshot term fires (it pauses
	 * the tracer in the kernel), and at the end. An event with the
	 * snapshot term turns snapshot mode on without -S.
	 */
	bool snapshot;
	uint64_t snapshot_size;
	uint64_t snapshot_limit;     /* end the recording after this many snapshots (0: no limit) */
	int snapshot_fd;             /* -1: none; also SIGUSR2 for switch_signal */
	/*
	 * --switch-output: a new file at each switch (the current one renamed
	 * FILE.YYYYmmddHHMMSSmmm, as perf names them, and so is the last one),
	 * each complete: INFO, MACHINE, EVENTS, the side-band that describes
	 * the tasks and their code so far, the code images, the trace from the
	 * switch on. Switches on SIGUSR2 (switch_signal), when the trace and
	 * side-band written into the current file reach switch_size bytes, or
	 * every switch_secs seconds.
	 */
	bool switch_signal;
	uint64_t switch_size;
	double switch_secs;
	int stop_signal;             /* signal for the workload on stop (0: none) */
	const struct prec_kernel *kernel; /* the perf interface (NULL: the real kernel) */
	/* software tracer */
	bool emulate;
	bool emulate_system;         /* --emulate=system: a whole guest under qemu-system */
	const char *plugin;          /* ptrec-emu.so (ptrec-emu-sys.so and ptrec-guest beside it) */
	const char *plugin_etm;      /* ptrec-emu-etm.so (aarch64 programs) */
	const char *qemu;            /* NULL: from PATH */
	const char *truth;           /* ground-truth output, or NULL */
	int emulate_cpus;            /* --emulate-cpus: the model's CPUs (0: PREC_EMULATE_CPUS) */
	uint64_t emulate_slice;      /* --emulate-slice: a thread's time slice in instructions
				      * (0: the model's PREC_KMODEL_SLICE) */
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
	struct prec_ring_counts counts; /* summed over all rings; lost includes lost_unwritten */
	uint64_t lost_unwritten;     /* records the kernel counted lost with no LOST record after */
	struct prec_embed_result embed;
	bool kcore_missing;          /* --kcore, but no /proc/kcore */
	uint64_t kcore_bytes;        /* kernel text copied with --kcore */
	bool kallsyms_hidden;        /* kallsyms addresses hidden (kptr_restrict) */
	uint64_t throttled;          /* PERF_RECORD_THROTTLE records, all events */
	uint64_t aux_overruns;       /* AUX areas found full (TRUNCATED) before a re-enable */
	uint64_t aux_reenables;      /* tracer events re-enabled after an AUX read */
	uint64_t snapshots;          /* snapshots taken (-S), the one at the end included */
	uint64_t snapshot_bytes;     /* trace bytes they copied */
	unsigned files;              /* --switch-output: files written */
	char last_file[4096];        /* --switch-output: the name of the last one */
	char notes[4][256];          /* things the user should know */
	int nnotes;
};

/*
 * Records. Returns 0 when the file is complete (the workload's own exit
 * status is in @res), or a negative code with @d saying what went wrong and
 * what to do. The file takes its name when the recording starts (the
 * previous one, if any, becomes FILE.old): a failure before that leaves the
 * previous file untouched, and what was written before a later error stays
 * readable.
 */
int prec_record(const struct prec_record_opts *o, struct prec_record_result *res,
		struct prec_diag *d);

struct prec_event;
/*
 * Turns the kernel's refusal @err (negative errno) to open @ev (NULL: the
 * tracking event) into a cause and a fix in @d. Returns @err.
 */
int prec_explain_open_error(int err, const struct prec_event *ev, struct prec_diag *d);

/*
 * The default ring sizes (-m not given), as perf chooses them: the data ring
 * is the largest power of two that fits perf_event_mlock_kb (@mlock_kb, < 0:
 * unknown) less one page (evlist.c perf_event_mlock_kb_in_pages()); with an
 * AUX tracer, an unprivileged user gets 256 KiB data + 128 KiB AUX and a
 * privileged one 4 MiB AUX (intel-pt.c intel_pt_recording_options()), so
 * both rings fit the per-CPU budget. A size given (non-zero) is kept.
 */
void prec_record_ring_defaults(bool privileged, bool has_aux, long mlock_kb, long page_size,
			       uint64_t *data_bytes, uint64_t *aux_bytes);

/*
 * The kernel's refusal @err to open an event on @cpu when the CPU is the
 * cause: beyond the possible CPUs (EINVAL from perf_event_alloc()) or
 * offline (ENODEV from perf_event_open()). @possible and @online are the
 * sysfs CPU lists. Returns @err with @d filled, or 0 if the CPU is fine
 * (then the event is the cause).
 */
int prec_explain_cpu_error(int err, int cpu, const char *possible, const char *online,
			   struct prec_diag *d);

/*
 * A failed mmap of a ring (@aux: the AUX area, else the data ring): EPERM is
 * the mlock budget (perf_mmap() over perf_event_mlock_kb and RLIMIT_MEMLOCK),
 * ENOMEM for the AUX area is the PMU driver refusing the size (its setup_aux,
 * in rb_alloc_aux()). Returns @err.
 */
int prec_explain_mmap_error(int err, bool aux, uint64_t bytes, const char *mlock_kb,
			    struct prec_diag *d);

/* Parses a CPU list ("0,2-3"). *@cpus is malloc'd. Returns 0 or -EINVAL. */
int prec_parse_cpu_list(const char *s, int **cpus, size_t *n);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The runner both software tracers share (emulate.h: qemu-x86_64 writing
 * Intel PT; etm_emulate.h: qemu-aarch64 writing ETMv4): finds QEMU, the
 * plugin and the program, writes the plugin's configuration (the text of
 * record/emu_proto.h), runs the workload under QEMU with the plugin and
 * hands the plugin's messages to the caller while the workload runs,
 * forwarding SIGINT and SIGTERM to it. A tracer supplies what is its own:
 * which qemu, which programs it can run, its configuration lines, and what
 * to do with the trace bytes and sideband records.
 */
#ifndef PREC_EMURUN_H
#define PREC_EMURUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/common.h"
#include "spec/filter.h"

struct prec_buf;

/* What both software tracers share: triggers and where the data goes. */
enum prec_emu_action {
	PREC_EMU_ACT_NONE,   /* only record a sample */
	PREC_EMU_ACT_PAUSE,  /* aux-action=pause */
	PREC_EMU_ACT_RESUME, /* aux-action=resume */
	/*
	 * The snapshot term: pause, and the trace written up to the pause goes
	 * to the AUX area before the sample (what a CoreSight sink's flush at a
	 * pause does), so the recorder that reacts to the sample finds it there.
	 */
	PREC_EMU_ACT_SNAPSHOT,
};

enum prec_emu_kind {
	PREC_EMU_UPROBE,    /* entry of the function at file offset @offset of @path */
	PREC_EMU_URETPROBE, /* return from that function */
	PREC_EMU_SYS_ENTER, /* syscall @nr entered (-1: any) */
	PREC_EMU_SYS_EXIT,  /* syscall @nr returns (-1: any) */
	PREC_EMU_INSNS,     /* every @period user instructions of a thread */
	PREC_EMU_KENTRY,    /* the kernel function @func entered (whole-system tracer) */
	PREC_EMU_KRET,      /* ...returns to its caller */
};

struct prec_emu_trigger {
	enum prec_emu_kind kind;
	enum prec_emu_action action;
	int event_index;  /* position in the event group; sample id = index + 1 */
	const char *path; /* uprobes: the file (borrowed) */
	uint64_t offset;  /* uprobes: file offset of the probed instruction */
	int64_t nr;       /* syscalls: number, -1 for any */
	uint64_t period;  /* instruction counters: > 0 */
	const char *func; /* kprobes: the kernel function (borrowed) */
};

/* What a thread tells the model's scheduler (emu_proto.h's messages). */
enum prec_emu_sched {
	PREC_EMU_SLEEP, /* enters a syscall that may sleep, its trace handed over (EMU_MSG_WAIT) */
	PREC_EMU_WOKEN, /* returns from it and waits for its CPU (EMU_MSG_WOKEN) */
	PREC_EMU_READY, /* a new thread waits for its first CPU (EMU_MSG_READY) */
	PREC_EMU_SLICE, /* ran its time slice, its trace handed over (EMU_MSG_SLICE) */
	PREC_EMU_TICK,  /* its time slice is over: may it run on? (EMU_MSG_TICK) */
};

struct prec_emu_ops {
	void *ctx;
	/* Each returns 0, or a negative code that stops the recording (the
	 * workload is killed and prec_emu_run returns that code). */
	int (*aux)(void *ctx, uint32_t pid, uint32_t tid, uint64_t offset, const void *data,
		   size_t size);
	int (*sideband)(void *ctx, const void *rec, size_t size);
	/*
	 * May be NULL. The run's shared area's trig_off (EMU_SHM_TRIGS of
	 * them) once the area exists, before the workload starts; NULL when
	 * the run ends and the area goes away.
	 */
	void (*trig_off)(void *ctx, uint32_t *trig_off);
	/*
	 * May be NULL. Thread @tid of process @pid, at @time of its process's
	 * clock: @what (enum prec_emu_sched). @slot: its slot in the shared
	 * area (emu_shm.run[@slot] lets it run), EMU_SLOT_PRIVATE if unknown.
	 */
	int (*sched)(void *ctx, uint32_t pid, uint32_t tid, uint64_t time, int what,
		     uint32_t slot);
};

/* What a tracer is: constant. */
struct prec_emurun_tracer {
	const char *qemu_default; /* looked up in PATH when the run names no qemu */
	const char *plugin_file;  /* the plugin's file name, for the hint when it is missing */
	const char *config_name;  /* name of the configuration memfd */
	/*
	 * Finds @prog (prec_emurun_find_program()) and checks that the tracer
	 * can run it: writes its path to @path and, for a program QEMU must
	 * load through an interpreter ("#!" scripts), the interpreter to
	 * @interp, else "". Returns 0 or a negative code with @diag filled.
	 */
	int (*check_program)(const char *prog, char *path, size_t size, char *interp,
			     size_t isize, struct prec_diag *diag);
	/*
	 * Checks the tracer's own options in @cfg (the run's cfg, never NULL
	 * here) and appends its configuration lines ("key value\n") to
	 * @lines; called before anything else is looked up. Returns 0 or a
	 * negative code with @diag filled.
	 */
	int (*prepare)(const void *cfg, struct prec_buf *lines, struct prec_diag *diag);
	/*
	 * May be NULL: QEMU runs "qemu -0 ARGV0 -plugin POPT [INTERP] PATH
	 * ARGS" (user mode). Else the command line QEMU runs, into @args
	 * (room for @max entries and the NULL): @qemu, the -plugin
	 * argument @popt and the program @path. Returns 0 or -E2BIG.
	 */
	int (*command)(const void *cfg, const char *qemu, const char *popt, const char *path,
		       char **args, size_t max);
	const char *qemu_hint; /* how to install QEMU; NULL: qemu-user's */
	/*
	 * The packets that end the stream of a thread whose process died
	 * without a word (a signal): the @nheld branch outcomes @held the
	 * encoder still held (the first one the most significant bit), then,
	 * when @user (it was running user code with packets flowing), that it
	 * stopped before @ip. Writes at most @cap bytes to @out and returns
	 * how many. NULL: the stream just ends.
	 */
	size_t (*close_stream)(uint64_t held, unsigned nheld, bool user, uint64_t ip,
			       uint8_t *out, size_t cap);
};

struct prec_emurun {
	const struct prec_emurun_tracer *tracer;
	const void *cfg; /* the tracer's own configuration, for prepare() */
	/*
	 * Where the plugin's trace bytes and sideband records go (emulate.h);
	 * NULL only when the caller gave no callbacks at all (an error).
	 * Sideband records reach @ops->sideband with their size checked.
	 */
	const struct prec_emu_ops *ops;
	/* As in emulate.h's struct prec_emu_config (PREC_EMURUN_SET copies them). */
	const char *qemu;   /* NULL: the tracer's qemu_default */
	const char *plugin; /* required */
	bool start_paused;
	const struct prec_emu_trigger *triggers; /* borrowed */
	size_t ntriggers;
	const struct prec_addr_filter *filters; /* address filter ranges (borrowed) */
	int nfilters;
	const char *truth_path; /* ground truth output, NULL for none */
	char *const *argv;      /* the workload, argv[0] looked up in PATH */
	uint64_t *insns;        /* if not NULL: user instructions retired, all threads */
};

/*
 * Sets the fields of struct prec_emurun *@run that a tracer's configuration
 * @cfg (struct prec_emu_config, struct prec_etm_config) has under the same
 * names.
 */
#define PREC_EMURUN_SET(run, cfg)                          \
	do {                                               \
		(run)->qemu = (cfg)->qemu;                 \
		(run)->plugin = (cfg)->plugin;             \
		(run)->start_paused = (cfg)->start_paused; \
		(run)->triggers = (cfg)->triggers;         \
		(run)->ntriggers = (cfg)->ntriggers;       \
		(run)->truth_path = (cfg)->truth_path;     \
		(run)->argv = (cfg)->argv;                 \
		(run)->insns = (cfg)->insns;               \
	} while (0)

/*
 * Finds @prog like execvp does and checks that it is an executable file;
 * writes its path to @path. Returns 0, or -EINVAL / -ENOENT / -EACCES (and
 * other -errno) with @diag (may be NULL) saying what to do.
 */
int prec_emurun_find_program(const char *prog, char *path, size_t size, struct prec_diag *diag);

/*
 * Runs @run->argv under QEMU with the plugin and delivers its data to
 * @run->ops as it arrives. What a process killed by a signal (or SIGKILL)
 * had not sent yet is delivered after it is gone, from the area the plugin
 * shares with this process: its threads' trace bytes (ended by the tracer's
 * close_stream()) with their AUX records, their ground truth, and for the
 * workload's own process a PREC_RECORD_SIGNAL record per thread
 * (tracefile/tfile.h). On return *@wstatus (may be NULL) holds the
 * workload's wait status. Returns 0, or a negative code with @diag filled:
 * -EINVAL (no program, plugin or callbacks; a bad trigger), -ENOENT (no
 * qemu, plugin, program or probed file), what the tracer's check_program()
 * or prepare() returned, -ENOEXEC (QEMU could not load the plugin), -EPROTO (the plugin
 * reported an error or broke the protocol), -ENOMEM, other -errno, or a
 * callback's code.
 */
int prec_emurun_run(const struct prec_emurun *run, int *wstatus, struct prec_diag *diag);

#endif

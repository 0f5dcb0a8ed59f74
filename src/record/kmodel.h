/* SPDX-License-Identifier: MIT */
/*
 * A user-space model of the parts of the kernel's perf interface
 * (kernel/events/core.c, kernel/events/ring_buffer.c) the recorder can
 * trip, behind the same seam as the real kernel (record/kernel.h).
 *
 * What it models now: perf_event_open()'s validation (flags, the attr
 * checks of perf_copy_attr(), CPU and task, the PMU, clocks, inherit rules,
 * aux_action, group rules, PERF_FLAG_FD_OUTPUT/NO_GROUP) with the errno the
 * kernel gives for each refusal; the ioctls ENABLE, DISABLE, ID,
 * SET_OUTPUT (with perf_event_set_output()'s rules) and PAUSE_OUTPUT; the
 * mmap layout (control page + 2^n data pages, the AUX area at aux_offset
 * after the data ring, 2^n pages, only once the data ring is mapped) and
 * the mlock budget (perf_event_mlock_kb per CPU, then RLIMIT_MEMLOCK);
 * enable_on_exec when told that a task execs (prec_kmodel_task_exec());
 * read() in the event's read_format, groups included, with zero counts and
 * the time each event spent enabled; close. Each rule in kmodel.c names the
 * kernel function it follows; tests/tools/kmodel_diff.c asks the real
 * kernel the same questions.
 *
 * The producer side (kmodel_ring.c): records behind data_head with LOST
 * when the ring is full, trace behind aux_head with PERF_RECORD_AUX,
 * TRUNCATED and the AUX event disabled when the AUX area is full, wakeups
 * at the watermarks, sample_id trailers. The emulated PMUs below feed it.
 *
 * The emulated PMUs (kmodel_emu.c): the software tracers behind the model's
 * AUX PMU, the user-mode ones (Intel PT, ETMv4) and the whole-system one
 * (a Linux guest under qemu-system-x86_64, whose kernel is then the
 * model's: kprobe:/kretprobe: and syscall tracepoints are placed in it).
 * They schedule the workload's threads over the model's CPUs with the
 * kernel's switch records. The whole-system model also answers for its
 * kernel's files (prec_kernel.proc_open: the guest's kallsyms, an empty
 * modules list, its text as an ELF kcore) and writes the MMAP2 records of
 * the workload's mappings, which the guest reports at the exit.
 *
 * Throttling (kmodel_emu.c): an instruction counter's max_samples_per_tick-th
 * overflow in a tick of the emulated clock throttles its group (THROTTLE
 * from the leader, the group's triggers stop), UNTHROTTLE at the next tick.
 *
 * Not modelled yet: migration between CPUs, the throttled tracer's stop
 * (its trace goes on), unthrottling at sched-in, inheritance, cgroups,
 * permissions (the caller may do everything but exceed the mlock budget),
 * counts in read() (zeros). See docs/DESIGN.md.
 *
 * One recorder per model; the emulated PMUs produce from a thread of their
 * own, under the model's lock.
 */
#ifndef PREC_KMODEL_H
#define PREC_KMODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "record/kernel.h"
#include "record/kmodel_limits.h"

/* What a PMU can do (the kernel's PERF_PMU_CAP_* and pmu callbacks). */
enum {
	PREC_KMODEL_CAP_AUX = 1u << 0,        /* has an AUX area (pmu->setup_aux) */
	PREC_KMODEL_CAP_AUX_PAUSE = 1u << 1,  /* PERF_PMU_CAP_AUX_PAUSE */
	PREC_KMODEL_CAP_AUX_OUTPUT = 1u << 2, /* PERF_PMU_CAP_AUX_OUTPUT */
	PREC_KMODEL_CAP_NO_NMI = 1u << 3,     /* PERF_PMU_CAP_NO_NMI: any clockid */
};


struct prec_kmodel;

/*
 * A model with @nr_cpus CPUs (0: the host's count) that knows the software
 * and tracepoint PMUs. NULL on no memory.
 */
struct prec_kmodel *prec_kmodel_new(int nr_cpus);
/* Frees the model, its events and any mapping still held. NULL is fine. */
void prec_kmodel_free(struct prec_kmodel *m);
/* Adds a PMU of attr.type @type with PREC_KMODEL_CAP_* @caps. 0 or -ENOMEM. */
int prec_kmodel_add_pmu(struct prec_kmodel *m, uint32_t type, unsigned caps);
/*
 * PMU @type takes @n address filters (pmu->nr_addr_filters), validated as
 * cs_etm's (@etm) or intel_pt's. 0 or -ENOENT.
 */
int prec_kmodel_set_addr_filters(struct prec_kmodel *m, uint32_t type, unsigned n, bool etm);
/*
 * The emulated tracer's trigger flags (emu_proto.h: emu_shm.trig_off): from
 * now on the model keeps @flags[i] nonzero while the events of trigger i of
 * its prec_kmodel_emulate() configuration count nowhere (their group is
 * disabled), so that the tracer neither samples nor pauses or resumes for
 * it, and EMU_TRIG_THROTTLED(k) while they are throttled in tick k of the
 * emulated clock. @flags is the trig_off of a struct emu_shm, whose
 * tick_ns and max_per_tick the model sets from its limits (the kernel's
 * HZ and perf_event_max_sample_rate). NULL stops that. The run does this
 * itself; for tests.
 */
void prec_kmodel_watch_triggers(struct prec_kmodel *m, uint32_t *flags);
/*
 * Hands the emulated PMUs a record as the tracer sends it (a trigger's
 * PERF_RECORD_SAMPLE with the tracer's sample id, or side-band): for tests
 * of the producer side without a run. 0 or a negative errno.
 */
int prec_kmodel_emu_record(struct prec_kmodel *m, const void *rec, size_t size);
/*
 * As the tracer's EMU_MSG_WAIT (@what PREC_EMU_SLEEP), EMU_MSG_WOKEN,
 * EMU_MSG_READY and EMU_MSG_SLICE (emurun.h's enum prec_emu_sched): thread
 * @tid of process @pid enters a syscall that may sleep, returns from it,
 * starts, or ran its time slice, at @time; @slot names its word in the
 * shared area's run[] (prec_kmodel_watch_triggers()). For tests of the
 * scheduler without a run. 0 or a negative errno.
 */
int prec_kmodel_emu_sched(struct prec_kmodel *m, uint32_t pid, uint32_t tid, uint64_t time,
			  int what, uint32_t slot);
/* The model as the recorder's kernel (valid until prec_kmodel_free()). */
const struct prec_kernel *prec_kmodel_kernel(struct prec_kmodel *m);

/* This machine's values (sysctls, rlimit, capability) into @l. */
void prec_kmodel_host_limits(struct prec_kmodel_limits *l);
/* The limits the model applies from now on (the host's until set). */
void prec_kmodel_set_limits(struct prec_kmodel *m, const struct prec_kmodel_limits *l);

/*
 * Task @tid execs (the producer side calls this where the kernel would run
 * perf_event_exec()): its own events with enable_on_exec are enabled, once.
 * Events of other tasks and CPU-wide events are untouched.
 */
void prec_kmodel_task_exec(struct prec_kmodel *m, pid_t tid);

/*
 * The software tracers as PMUs of the model (kmodel_emu.c). The tracer
 * (Intel PT or ETMv4) runs the workload under QEMU when the recorder starts
 * it (the table's tasks); its trace bytes, side-band records and trigger
 * samples reach the rings of the events that cover the thread, as the
 * kernel's would: the k-th thread runs on CPU k mod nr_cpus, switched with
 * the others of its CPU (PERF_RECORD_SWITCH, PERF_RECORD_SWITCH_CPU_WIDE).
 */
struct prec_emu_config;
struct prec_etm_config;
struct prec_emusys_config;

struct prec_kmodel_emu {
	uint32_t aux_type;                  /* attr.type of the emulated tracer */
	/* One of the three runs: */
	const struct prec_emu_config *pt;   /* the Intel PT tracer's (user mode), or NULL */
	const struct prec_etm_config *etm;  /* the ETMv4 tracer's, or NULL */
	/*
	 * The whole-system tracer's, or NULL: its guest kernel is the model's
	 * kernel. Its triggers are @sys->pt->triggers (kprobe:/kretprobe:,
	 * syscalls:sys_enter_X/sys_exit_X as __x64_sys_X's entry and return,
	 * instruction counters); the guest's kallsyms and kernel text are the
	 * model's /proc (prec_kernel.proc_open), the workload's mappings at
	 * its exit become its MMAP2 records.
	 */
	const struct prec_emusys_config *sys;
	/*
	 * Per trigger of the run (pt or etm ->triggers, same order): the attr
	 * the recorder opens it with (type, config, config1, config2 and the
	 * aux_action bits say which event it is). Borrowed until free.
	 */
	const struct prec_attr *trigger_attrs;
	/*
	 * The time slice of the user-mode tracers' threads, in user
	 * instructions (the emulated clock's nanoseconds); 0:
	 * PREC_KMODEL_SLICE.
	 */
	uint64_t slice;
};

/* The default time slice: 2 ms of the emulated clock (one instruction a nanosecond). */
#define PREC_KMODEL_SLICE 2000000ull

/*
 * Makes @cfg's tracer a PMU of @m (type @cfg->aux_type, AUX with pause), the
 * trigger PMUs known, and the model the runner of the workload
 * (prec_kmodel_kernel(m)->tasks). @cfg and what it points to are borrowed
 * until prec_kmodel_free(). 0 or -ENOMEM.
 */
int prec_kmodel_emulate(struct prec_kmodel *m, const struct prec_kmodel_emu *cfg);

/*
 * The model's tracepoint ids for the system-call tracepoints the tracers
 * trigger on (its own tracefs): @nr -1 is any system call.
 */
#define PREC_KMODEL_SYSCALL_TP(enter, nr) (0x7e000000ull + ((uint64_t)((nr) + 1) << 1) + !!(enter))

/*
 * The model's tracepoint ids for kernel function probes (kprobe:/kretprobe:
 * events of the whole-system tracer), one per event of the list by its
 * index @idx, as the recorder makes one tracefs kprobe event per event on
 * the real kernel (record/uprobe_events.h).
 */
#define PREC_KMODEL_KPROBE_TP(idx) (0x7d000000ull + (uint64_t)(idx))

/* The pid the model gives the workload before it runs (beyond any real pid). */
#define PREC_KMODEL_WORKLOAD_PID ((pid_t)(1 << 22) + 7)

/* The first fd the model hands out: far above any real descriptor. */
#define PREC_KMODEL_FD0 (1 << 24)

/*
 * Occurrences fed to the producer side directly (kmodel_occur.c), for tests
 * that drive the model as they drive the real kernel
 * (tests/tools/kmodel_diff.c): what task @tid of process @pid does on CPU
 * @cpu at @time reaches every event that counts and sees it there
 * (event_filter_match(): a CPU event of that CPU, or an event of that task
 * on any CPU or that one). The tasks are taken as they are, but for those
 * told as forked (prec_kmodel_fork(): they inherit); no scheduling (switches
 * are told: prec_kmodel_switch()).
 */
struct prec_kmodel_task {
	pid_t pid, tid;
	int cpu;
	uint64_t time;
};

/*
 * A tracepoint or uprobe fires in @t at user address @ip: a sample, period 1,
 * to each event of @key's type, config, config1 and config2 (perf_tp_event(),
 * uprobe_perf_func() -> perf_swevent_event()). Returns the samples written.
 */
int prec_kmodel_hit(struct prec_kmodel *m, const struct prec_kmodel_task *t,
		    const struct prec_attr *key, uint64_t ip);
/*
 * @t's name becomes @comm (prctl(PR_SET_NAME), or an exec with @exec after
 * prec_kmodel_task_exec()): PERF_RECORD_COMM (perf_event_comm()).
 */
void prec_kmodel_comm(struct prec_kmodel *m, const struct prec_kmodel_task *t, const char *comm,
		      bool exec);
/* @t exits, its parent @ppid/@ptid: PERF_RECORD_EXIT (perf_event_exit_task()). */
void prec_kmodel_exit(struct prec_kmodel *m, const struct prec_kmodel_task *t, pid_t ppid,
		      pid_t ptid);
/*
 * @t makes task @tid of process @pid (a thread of @t's process with
 * @thread): it inherits @t's inherit events (a copy each, from now on the
 * task sees what they see) and PERF_RECORD_FORK is written
 * (perf_event_init_task(), perf_event_fork()). 0 or -ENOMEM.
 */
int prec_kmodel_fork(struct prec_kmodel *m, const struct prec_kmodel_task *t, pid_t pid,
		     pid_t tid, bool thread);

/* A mapping as perf_event_mmap() finds its vma. */
#define PREC_KMODEL_PATH_MAX 256
struct prec_kmodel_vma {
	uint64_t start, len, pgoff; /* bytes */
	int prot, flags;            /* as mmap() was given them (PROT_*, MAP_*) */
	uint32_t maj, min;          /* the file's device */
	uint64_t ino, gen;          /* its inode and i_generation */
	const char *name;           /* its path (d_path()) */
};
/* @t maps @v: PERF_RECORD_MMAP or MMAP2 (perf_event_mmap()). */
void prec_kmodel_mmap(struct prec_kmodel *m, const struct prec_kmodel_task *t,
		      const struct prec_kmodel_vma *v);
/*
 * @t is switched out (@in false) to @np, or in from @np; @runnable: it can
 * still run (preempted or yielding, not asleep). PERF_RECORD_SWITCH or
 * SWITCH_CPU_WIDE (perf_event_switch()).
 */
void prec_kmodel_switch(struct prec_kmodel *m, const struct prec_kmodel_task *t,
			const struct prec_kmodel_task *np, bool in, bool runnable);

#endif

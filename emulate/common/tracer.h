/* SPDX-License-Identifier: MIT */
/*
 * The core both software tracers share, and the hooks through which it
 * drives a tracer's own encoder (emulate/plugin.c: Intel PT;
 * emulate/etm/plugin.c: ETMv4).
 *
 * Model. Every guest thread is a host thread and a QEMU vCPU; it gets its own
 * trace stream. The core sees the start of each executed translation block
 * (TB); a TB ends at the first branch, so the previous TB's last instruction
 * and the start of the next TB give the branch outcome, which the tracer's
 * resolve() hook turns into packets. The core keeps the rest: thread and
 * process lifecycle (fork, exec, exit), the user/kernel and paused/resumed
 * state, triggers (uprobes, uretprobes through a shadow call stack, syscall
 * entry and exit, instruction counters), the ground truth, the sideband and
 * the guest's executable mappings.
 *
 * Thread safety: a thread's state is only touched by that thread, except at
 * fork (one thread left) and at exit (QEMU stops all vCPUs first). Shared
 * tables (probes, translation-time data) take emu_lock.
 *
 * A tracer defines `emu_arch` and extends struct emu_thr and struct emu_tb
 * by embedding them as the first member of its own structs, which the core
 * allocates (thr_size, tb_size bytes, zeroed) and frees through that member.
 */
#ifndef EMU_COMMON_TRACER_H
#define EMU_COMMON_TRACER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/emu_proto.h"
#include "qemu_plugin_api.h"
#include "config.h"
#include "sideband.h"

#define EMU_MAX_VCPUS 4096
#define EMU_ENC_FLUSH (EMU_MSG_MAX - 1024) /* send the buffer once it holds more */

#define emu_container_of(p, type, member) ((type *)((char *)(p) - offsetof(type, member)))

/* A translated block, as the core and the tracer's classify() hook fill it. */
struct emu_tb {
	uint64_t start;  /* first instruction */
	uint64_t last;   /* last instruction */
	uint64_t next;   /* the address after the last instruction */
	uint64_t target; /* the last instruction's direct branch target, if any */
	uint32_t ninsn;
	uint8_t kind;    /* the tracer's class of the last instruction */
};

struct emu_thr {
	int tid;         /* 0 until the thread runs its first TB */
	int dead;
	/* execution state */
	int trace_en;    /* the trace unit is enabled: not paused */
	int user;        /* executing user code (not in a syscall/trap) */
	int pkt_en;      /* trace_en && user, and the tracer emits packets */
	int filt_out;    /* address filters hold packets back here (Intel PT FilterEn 0,
			  * ETM ViewInst inactive): emu_set_filtered() */
	const struct emu_tb *cur; /* the TB running, NULL after a syscall */
	uint64_t cur_start;       /* where the part of it not yet accounted begins */
	uint32_t cur_done;        /* its instructions accounted */
	uint64_t ret_ip; /* next user IP in program order while in a syscall */
	uint64_t insns;  /* user instructions retired by this thread */
	/*
	 * What must survive a crash: the unsent stream, truth and call stack,
	 * in a slot of the area shared with ptrec (emu_proto.h), or in
	 * private memory when every slot is taken. buf, tbuf and shadow point
	 * into it.
	 */
	struct emu_slot *sl;
	/* the stream */
	uint8_t *buf;    /* the encoder's output, EMU_ENC_CAP bytes; sl->len of them unsent */
	uint64_t aux_off; /* stream offset of buf[0] */
	/* uretprobes */
	struct emu_shadow *shadow;
	unsigned sh_n;
	/* instruction counters */
	uint64_t cnt_next[EMU_MAX_TRIG];
	/* syscall in flight */
	int64_t sc_num;
	int cloning;     /* inside clone(CLONE_THREAD): the creator of a new thread */
	int waiting;     /* inside a syscall that waits: EMU_MSG_WAIT sent */
	uint64_t slice_end; /* insns at which its time slice ends; 0: no slice */
	int want_cpu;       /* asked the model for its CPU, not given it yet */
	uint64_t want_since, want_nudge, want_moved; /* sched_wait()'s clocks */
	uint64_t sc_args[6];
	/* ground truth: sl->tlen bytes unsent */
	char *tbuf;
};

/* Why user execution stops and the kernel runs (enter_kernel hook). */
enum emu_entry {
	EMU_ENTRY_SYSCALL,    /* a system call: @ip is where user code resumes */
	EMU_ENTRY_BREAKPOINT, /* a uprobe or uretprobe trap before @ip */
	EMU_ENTRY_INTERRUPT,  /* a signal or counter overflow before @ip */
};

/* What resolve() found when execution arrived after a TB. */
enum emu_arrival {
	EMU_ARRIVED,  /* the TB's last instruction went there */
	EMU_EXPECTED, /* it goes to *expect: arriving elsewhere, user code was
		       * interrupted (a signal) before *expect */
	EMU_REPEATED, /* the same TB runs again, not a new instruction (x86 REP
		       * string instructions); t->cur stays */
};

/* The guest's system call numbers; -1 where the machine has no such call. */
struct emu_sysnr {
	int64_t exit, exit_group, execve, execveat, mmap, prctl;
	int64_t clone, clone3; /* CLONE_THREAD in their flags makes a thread */
	int64_t fork, vfork;
	int64_t wait4, waitid; /* a parent learns how its child ended */
	/*
	 * The calls that wait (EMU_MSG_WAIT), each list ended by -1: @waits
	 * always; @reads on a descriptor that is no regular file or
	 * directory (a pipe, socket, terminal); @futex for its waiting ops.
	 */
	const int64_t *waits, *reads;
	int64_t futex;
};

struct emu_arch {
	const char *target;   /* QEMU's target name: "x86_64" */
	const char *name;     /* for messages: "software tracer" */
	uint16_t elf_machine; /* e_machine of the programs it follows into exec */
	/* exec of a "#!" script: also check the interpreter's e_machine */
	bool exec_check_interp;
	struct emu_sysnr sys;
	size_t thr_size;      /* the tracer's thread struct (emu_thr first) */
	size_t tb_size;       /* the tracer's TB struct (emu_tb first) */

	/* The configuration lines that are the tracer's own (config.h). */
	void (*cfg_key)(const char *key, unsigned long long v);
	int (*cfg_check)(void); /* may be NULL */

	/* Threads: set up a new one (buf is allocated; returns 0 or -1), free it. */
	int (*thr_init)(struct emu_thr *t);
	void (*thr_fini)(struct emu_thr *t);
	/* A new, empty stream (after fork); the core reset aux_off. */
	void (*stream_init)(struct emu_thr *t);
	/* t->tid was set (thread start, fork); may be NULL. */
	void (*tid_set)(struct emu_thr *t);

	/* The encoder: the bytes it has in buf; buf was sent, start it afresh;
	 * write the packets it still holds back (TNT bits, atoms) to buf. */
	size_t (*buffered)(struct emu_thr *t);
	void (*drained)(struct emu_thr *t);
	void (*flush_held)(struct emu_thr *t);

	/* Tracing. A stream starts enabled (thread start, fork): PSB+, sync. */
	void (*stream_start)(struct emu_thr *t);
	/* TraceEn changed (pause, resume); called while "in the kernel". */
	void (*trace_toggled)(struct emu_thr *t, int on);
	/* User code resumes at @ip with tracing enabled: the packets that say
	 * so. Returns 1 if packets flow now (pkt_en), 0 if not, 2 if they
	 * would but the tracer's address filters hold them back. */
	int (*to_user)(struct emu_thr *t, uint64_t ip);
	/* User code stops (pkt_en was set): the packets that say so. */
	void (*to_kernel)(struct emu_thr *t, uint64_t ip, enum emu_entry why);
	/* Instructions retired (t->insns grew); may be NULL. */
	void (*retired)(struct emu_thr *t);
	/* Instructions [from, to) of t->cur ran (after retired()); may be NULL. */
	void (*ran)(struct emu_thr *t, uint32_t from, uint32_t to);

	/* Translation: classify the last instruction of @tb into @b->kind and
	 * @b->target (and the tracer's own fields); returns 0 or -1. */
	int (*classify)(struct qemu_plugin_tb *tb, size_t n, struct emu_tb *b);
	/* After the block is set up; may be NULL. */
	void (*translated)(struct qemu_plugin_tb *tb, size_t n, const struct emu_tb *b);
	/* A new executable file mapping was announced; may be NULL. */
	void (*exec_mapped)(uint64_t start, uint64_t len);

	/*
	 * Execution arrives at @next after t->cur (never NULL; t->user may
	 * be 0): account the TB (emu_finish_tb), emit the packets of its last
	 * instruction, handle a return's uretprobes (*@uret: the armed ones,
	 * from emu_shadow_ret) and leave t->cur NULL. Returns an enum
	 * emu_arrival; with EMU_EXPECTED, *@expect is the only place the
	 * instruction could go.
	 */
	int (*resolve)(struct emu_thr *t, uint64_t next, uint64_t *expect, uint64_t *uret);
	/* Before each TB at @ip runs: periodic synchronisation packets. */
	void (*periodic)(struct emu_thr *t, uint64_t ip);
};

/* Defined by each tracer. */
extern const struct emu_arch emu_arch;

extern pthread_mutex_t emu_lock;

/* ---- what the tracer's hooks call -------------------------------------- */

/* The tracer's address filters hold packets back (@out) or let them flow. */
void emu_set_filtered(struct emu_thr *t, int out);
/* The stream offset the encoder stands at. */
uint64_t emu_stream_pos(struct emu_thr *t);
/* Sends the encoder's bytes (with their AUX record) and the truth so far. */
void emu_stream_flush(struct emu_thr *t);
/* The encoder wrote @n more bytes to buf / holds back @n branch outcomes @bits. */
static inline void emu_stream_wrote(struct emu_thr *t, size_t n)
{
	t->sl->len += n;
}
static inline void emu_stream_held(struct emu_thr *t, uint64_t bits, unsigned n)
{
	t->sl->held = bits;
	t->sl->nheld = n;
}
/*
 * The thread stands at @ip (0: where it stood) with trace, truth and state
 * in agreement: what ptrec takes should the process die before the next
 * commit. Also where the truth goes out, so that it never runs ahead of a
 * commit.
 */
void emu_slot_commit(struct emu_thr *t, uint64_t ip);

/* Appends a line to the ground truth, if it is wanted. */
void emu_truth(struct emu_thr *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Instructions [@from, @to) of t->cur ran, from @start up to @end: truth,
 * clock, and the retired() and ran() hooks. Nothing if @to <= @from.
 */
void emu_account(struct emu_thr *t, uint32_t from, uint32_t to, uint64_t start, uint64_t end);
/* Accounts the instructions of the current TB not yet accounted. */
void emu_finish_tb(struct emu_thr *t);

/* User execution stops before @ip for @why (packets if pkt_en). */
void emu_enter_kernel(struct emu_thr *t, uint64_t ip, enum emu_entry why);
/* User execution resumes at @ip (packets if tracing is enabled). */
void emu_return_to_user(struct emu_thr *t, uint64_t ip);

/* A call whose return goes to @ret. */
void emu_shadow_push(struct emu_thr *t, uint64_t ret);
/*
 * A return to @target pops the frame it returns from; frames above it that
 * were skipped (longjmp) are popped too. Returns the armed uretprobes.
 */
uint64_t emu_shadow_ret(struct emu_thr *t, uint64_t target);

#endif

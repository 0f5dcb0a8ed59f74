/* SPDX-License-Identifier: MIT */
/*
 * The wire between a software-tracer plugin (ptrec-emu.so inside
 * qemu-x86_64, ptrec-emu-etm.so inside qemu-aarch64; both built on
 * emulate/common/) and the host library (src/emurun.c, for src/emulate.c and
 * src/etm_emulate.c). Shared by both sides; no code, only layout.
 *
 * Transport: one AF_UNIX SOCK_SEQPACKET socket. Every message is a single
 * send(), so messages from different threads and from forked processes never
 * interleave, and the socket keeps their boundaries. A message is a struct
 * emu_msg followed by its payload; payloads are at most EMU_MSG_MAX bytes.
 *
 * What survives a crash: every thread's unsent trace, ground truth and call
 * stack live in a slot of a shared area (a memfd the host maps too, given to
 * the plugin as "shmfd=N"; struct emu_shm below). A thread claims a slot when
 * it starts and frees it when it ends cleanly; the slots of a process that
 * dies by a signal (or SIGKILL) stay claimed, and the host delivers what they
 * hold after the process is gone. When every slot is taken, the claimer
 * adds a chunk: it raises the header's nchunks by compare-and-swap, and
 * whoever maps a chunk first extends the file to cover it (fallocate(2) of
 * its last page: the file never shrinks, the rest stays a hole until used).
 *
 * Configuration: the host writes a text file (a memfd) whose descriptor the
 * plugin receives as "cfgfd=N"; the socket comes as "fd=N". Lines:
 *
 *	emu 2                          format version, first line
 *	qemu PATH                      the qemu-user binary (for exec)
 *	plugin PATH                    this plugin (for exec)
 *	start_paused 0|1
 *	truth 0|1                      send EMU_MSG_TRUTH messages
 *	trigger IDX ACTION KIND ARG [PATH]
 *	    ACTION: pause | resume | none
 *	    KIND:   uprobe OFFSET PATH | uretprobe OFFSET PATH |
 *	            sys_enter NR | sys_exit NR (NR -1: any) | insns PERIOD
 *	    PATH runs to the end of the line.
 *	filter OFFSET SIZE PATH        an address filter (FilterEn range) of
 *	                               PATH's bytes [OFFSET, OFFSET+SIZE)
 *
 * and the tracer's own. Intel PT (ptrec-emu.so):
 *	tsc 0|1, mtc 0|1, cyc 0|1, noretcomp 0|1, branch 0|1
 *	mtc_period N, cyc_thresh N, psb_period N   (intel_pt config fields)
 * CoreSight ETMv4 (ptrec-emu-etm.so):
 *	etm 1                          required: the config is for this tracer
 *	timestamp 0|1                  TRCCONFIGR.TS
 *	contextid 0|1                  TRCCONFIGR.CID (contexts carry the tid)
 *	sync_period N                  log2 of the bytes between syncs (8..20)
 * Each plugin ignores keys it does not know.
 */
#ifndef EMU_PROTO_H
#define EMU_PROTO_H

#include <stdint.h>

#define EMU_PROTO_VERSION 2
#define EMU_MSG_MAX (60 * 1024)
/* Descriptor numbers the host gives the socket and the config in the child. */
#define EMU_FD_SOCK 1021
#define EMU_FD_CFG 1022
#define EMU_FD_SHM 1020

#define EMU_ENC_CAP (64 * 1024)   /* each thread's encoder buffer */
#define EMU_TRUTH_CAP (16 * 1024) /* each thread's unsent ground truth */
#define EMU_SHADOW_DEPTH 4096     /* call stack kept for uretprobes */
#define EMU_SHM_MAGIC 0x4d485350u /* "PSHM" */
/*
 * The shared area grows in chunks of slots, as threads and processes need
 * them: a header page, then chunk i at EMU_SHM_HDR + i * chunk_bytes.
 */
#define EMU_SHM_HDR 4096
#define EMU_SHM_TRIGS 64 /* triggers the header's trig_off covers */
#define EMU_SHM_RUN 768   /* slots whose threads the model's scheduler holds back */
#define EMU_SHM_CHUNK_SLOTS 32
#define EMU_SHM_MAX_CHUNKS 2048 /* 65536 slots */
/* EMU_MSG_TRUTH's arg: slot index + 1 in the high bits, the slot's t_off below. */
/* A slot's index when it is not in the shared area (private memory). */
#define EMU_SLOT_PRIVATE UINT32_MAX
#define EMU_TRUTH_SHIFT 40
#define EMU_TRUTH_ARG(idx, off) ((((uint64_t)(idx) + 1) << EMU_TRUTH_SHIFT) | (off))

/* emu_slot.at: an instruction's number in its block (< 512) and address (< 2^48) */
#define EMU_AT(idx, va) (((uint64_t)(idx) << 48) | ((va) & 0xffffffffffffull))
#define EMU_AT_IDX(at) ((uint32_t)((at) >> 48))
#define EMU_AT_VA(at) ((at) & 0xffffffffffffull)

/* emu_slot.state */
#define EMU_SLOT_USER 0x1u /* in user code with packets flowing (not in a syscall) */
#define EMU_SLOT_FILTERED 0x2u /* ... except that address filters hold them back (FilterEn 0) */

struct emu_shadow {
	uint64_t ret;
	uint64_t uret; /* bit i: trigger i armed on this frame's return */
};

/*
 * One thread's slot. The thread writes it, the host reads it only after the
 * thread's process is gone (or at the very end of the recording). A process
 * can die anywhere, also in the middle of the plugin's work on a block, so
 * the host reads only what the thread committed (c_*: at the end of each
 * callback, where trace, truth and state agree).
 */
struct emu_slot {
	uint32_t owner;   /* pid of the process using it; 0: free (claimed by compare-and-swap) */
	uint32_t tid;     /* 0 until the thread runs */
	uint32_t index;   /* its number in the area (chunk * chunk_slots + i); EMU_SLOT_PRIVATE */
	uint32_t c_done;  /* ip is instruction number c_done of the block the thread runs */
	uint32_t c_ninsn; /* the instructions of that block */
	uint32_t spare1;
	/* live */
	uint32_t state;   /* EMU_SLOT_* */
	uint32_t nheld;   /* branch outcomes the encoder holds back (Intel PT: TNT bits) */
	uint64_t held;    /* those outcomes, the first one the most significant bit */
	uint64_t aux_off; /* stream offset of buf[0] */
	uint64_t len;     /* trace bytes in buf not sent yet */
	uint64_t tlen;    /* ground-truth bytes in tbuf not sent yet */
	uint64_t sh_n;    /* frames in shadow */
	/* committed */
	uint64_t c_pos;   /* stream offset up to which the trace is committed */
	uint64_t c_tlen;  /* truth bytes committed */
	uint64_t c_held;
	uint32_t c_nheld, c_state;
	uint64_t c_sh_n;
	uint64_t ip;      /* where the thread stands: no instruction from here on is in the trace */
	uint64_t c_end;   /* the end of the block of ip (the address after it); 0: none */
	uint64_t now;     /* the emulated clock at its last block */
	/*
	 * The instruction of that block whose execution began last:
	 * EMU_AT(number in the block, address). Instructions of the block
	 * before it ran; it raised the signal when one of its own killed the
	 * process (the plugin learns of it before each instruction).
	 */
	uint64_t at;
	/*
	 * Truth bytes sent from this slot so far, by all its owners (a new
	 * owner does not reset it): the offset of tbuf[0] in the slot's truth.
	 * The host tells from it whether the truth of a process killed just
	 * after its last EMU_MSG_TRUTH went out was sent already.
	 */
	uint64_t t_off;
	uint8_t buf[EMU_ENC_CAP];
	char tbuf[EMU_TRUTH_CAP];
	struct emu_shadow shadow[EMU_SHADOW_DEPTH];
};

/* The header page. */
struct emu_shm {
	uint32_t magic;   /* EMU_SHM_MAGIC */
	uint32_t version; /* EMU_PROTO_VERSION */
	uint32_t nchunks; /* chunks in use: grown by compare-and-swap, never shrunk */
	uint32_t slot_size;   /* sizeof(struct emu_slot) */
	uint32_t chunk_slots; /* EMU_SHM_CHUNK_SLOTS */
	uint32_t max_chunks;  /* EMU_SHM_MAX_CHUNKS */
	uint64_t chunk_bytes; /* chunk_slots slots, rounded up to pages */
	/*
	 * Written by the host's model of the kernel before the workload runs:
	 * the throttling limit of an instruction counter's overflows,
	 * max_samples_per_tick of each tick_ns of the emulated clock (0: no
	 * limit). The plugin applies it to each counter trigger as the kernel's
	 * __perf_event_account_interrupt() does, at the overflow itself.
	 */
	uint64_t tick_ns;
	uint64_t max_per_tick;
	/*
	 * Written by the model before the workload runs: its scheduler holds
	 * back the threads that have no CPU (sched_on 1). A thread runs for
	 * @slice user instructions at a time (its time slice), then asks for
	 * its CPU again (EMU_MSG_SLICE) and waits for its word in @run.
	 */
	uint64_t slice;
	uint32_t sched_on;
	uint32_t sched_seq; /* raised at every switch and grant: the scheduler moves */
	uint64_t spare;
	/*
	 * Written by the host's model of the kernel, read by the plugin:
	 * EMU_TRIG_OFF when trigger i's event counts nowhere (its group is
	 * disabled), EMU_TRIG_THROTTLED(k) while its group is throttled in
	 * tick k of the emulated clock (a tick of tick_ns), so that it neither
	 * samples nor pauses or resumes the tracer (__perf_event_overflow()
	 * runs only for a counting event; a throttled one does not overflow).
	 */
	uint32_t trig_off[EMU_SHM_TRIGS];
	/*
	 * Written by the model with trig_off: the group of trigger i's event
	 * (its leader's number + 1; 0: none), the triggers that a counter's
	 * throttling stops with it (perf_event_throttle_group()).
	 */
	uint32_t trig_group[EMU_SHM_TRIGS];
	/*
	 * The model's word for the thread in slot i (i < EMU_SHM_RUN): the
	 * thread stores 0 before it asks for a CPU (EMU_MSG_READY,
	 * EMU_MSG_SLICE, EMU_MSG_WOKEN, whose payload is i as a uint32_t) and
	 * waits (futex(2) FUTEX_WAIT on the shared page) until the model
	 * stores EMU_RUN_GO when it puts the thread on its CPU. At the end of
	 * a slice the thread asks with EMU_MSG_TICK: EMU_RUN_GO lets it run
	 * on, EMU_RUN_YIELD (another thread waits for its CPU) tells it to
	 * hand its trace over and ask with EMU_MSG_SLICE, which preempts it.
	 * The threads of slots from EMU_SHM_RUN on are not held back.
	 */
	uint32_t run[EMU_SHM_RUN];
};

_Static_assert(sizeof(struct emu_shm) <= EMU_SHM_HDR, "the shared header fits its page");

/* emu_shm.run values besides 0 (waiting): runs; hand the trace over and yield. */
#define EMU_RUN_GO 1u
#define EMU_RUN_YIELD 2u

/* emu_shm.trig_off values: counting, off, throttled for the rest of tick @k. */
#define EMU_TRIG_ON 0u
#define EMU_TRIG_OFF 1u
#define EMU_TRIG_THROTTLED(k) ((uint32_t)(k) | 0x80000000u)

/* The bytes of a chunk: its slots, rounded up to a page. */
#define EMU_SHM_CHUNK_BYTES                                                                  \
	((((uint64_t)EMU_SHM_CHUNK_SLOTS * sizeof(struct emu_slot)) + 4095) & ~(uint64_t)4095)
/* Where chunk @i begins in the area. */
#define EMU_SHM_CHUNK_OFF(i) (EMU_SHM_HDR + (uint64_t)(i) * EMU_SHM_CHUNK_BYTES)

enum emu_msg_type {
	EMU_MSG_HELLO = 1, /* a plugin instance started; arg = pid */
	EMU_MSG_AUX,       /* trace bytes of stream tid; arg = offset in that stream */
	EMU_MSG_SB,        /* one perf-format sideband record */
	EMU_MSG_TRUTH,     /* ground-truth text lines; arg = EMU_TRUTH_ARG(slot, t_off) of
			    * the slot they came from, 0 if none */
	EMU_MSG_ERROR,     /* fatal plugin error; payload = message text */
	EMU_MSG_BYE,       /* a plugin instance ends; arg = instructions it saw retire */
	EMU_MSG_REAPED,    /* the process reaped a child (wait4, waitid): arg =
			    * EMU_REAPED_ARG(child pid, its wait status) */
	EMU_MSG_WAIT,      /* thread tid enters a syscall that waits (futex wait,
			    * sleeps, reads of pipes, poll, wait4, ...), its trace
			    * sent before; arg = its process's clock (emu_now()) */
	EMU_MSG_WOKEN,     /* ... and returns from it; arg = the clock then; payload:
			    * its slot's index (uint32_t), then it waits for its CPU
			    * when the model holds threads back (emu_shm.run) */
	EMU_MSG_READY,     /* a new thread (or process) waits for its first CPU before
			    * it runs; arg = the clock; payload: its slot's index */
	EMU_MSG_SLICE,     /* the thread ran its time slice (emu_shm.slice), its trace
			    * handed over, and waits for its CPU again; arg = the
			    * clock; payload: slot index */
	EMU_MSG_TICK,      /* the thread's slice is over: may it run on? (emu_shm.run
			    * answers GO or YIELD); arg = the clock; payload: slot index */
};

/* EMU_MSG_REAPED's arg: the pid above, the status in waitpid(2)'s form below. */
#define EMU_REAPED_ARG(pid, status) (((uint64_t)(uint32_t)(pid) << 32) | (uint32_t)(status))

struct emu_msg {
	uint32_t type;
	uint32_t pid;
	uint32_t tid;
	uint32_t size; /* payload bytes following this header */
	uint64_t arg;
};

#endif

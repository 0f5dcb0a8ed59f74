/* SPDX-License-Identifier: MIT */
/*
 * The whole-system software tracer: a qemu-system-x86_64 TCG plugin that
 * follows a workload process of a Linux guest and the tasks it and its
 * descendants create, user and kernel code, and writes Intel PT for them
 * as hardware tracing with inherited events and `u`, `k` or both would,
 * per CPU (one stream for the guest's CPU) or per thread (a stream per
 * task) (man/ptrec-emulate.7).
 *
 * What the plugin knows of the guest comes from guest memory, which it
 * reads from the file backing the guest's RAM (file offset = guest-physical
 * address): the kernel's symbols (written to the mailbox by the guest's
 * first process, src/record/emusys_mb.h) and through them the current task
 * (the per-CPU current_task), so that only the workload's tasks are traced,
 * and, through the task_struct layout that the guest's first process read
 * from the kernel's BTF, the tasks each one creates; and the physical
 * address of each uprobe's page cache byte, which that process found
 * (its blocks are matched through QEMU's own mapping of the RAM file).
 * The guest runs on one virtual CPU, booted with nokaslr.
 */
#ifndef EMU_SYSTEM_SYS_H
#define EMU_SYSTEM_SYS_H

#include <stddef.h>
#include <stdint.h>

#include "pt_enc.h"

#define SYS_MAX_TRIG 64
#define SYS_MAX_ENTRIES 512
#define SYS_KRET_DEPTH 256
#define SYS_IRQ_DEPTH 16 /* nested interrupts whose code's last call is kept */
#define SYS_MAX_TASKS 64

enum sys_act { SYS_ACT_NONE, SYS_ACT_PAUSE, SYS_ACT_RESUME };
enum sys_tk { SYS_TK_KENTRY, SYS_TK_KRET, SYS_TK_INSNS };

struct sys_trig {
	int idx;    /* event index in ptrec's group; sample id idx + 1 */
	int action; /* enum sys_act */
	int kind;   /* enum sys_tk */
	char sym[128];
	uint64_t addr; /* resolved from the guest's symbols (not @user) */
	int user;      /* a uprobe: slot @slot of the mailbox's uprobe_pa */
	int slot;
	uint64_t pa;   /* ...the guest-physical address of the probed instruction */
	/* SYS_TK_INSNS: every @period instructions of the workload, user and/or kernel */
	uint64_t period, next;
	int u, k;
};

/* A translated block. */
struct sys_tb {
	uint64_t start, last, next, target;
	uint32_t ninsn;
	uint8_t kind;  /* enum emu_br */
	uint64_t uprobes; /* the user triggers (bit j: sys_cfg.trig[j]) at the block's start */
	uint8_t cr3w;  /* its last instruction is a MOV to CR3 */
	uint64_t insn[]; /* each instruction's address */
};

struct sys_cfg {
	char ram[4096];     /* the file backing guest RAM */
	uint64_t ram_size;
	uint64_t mark;      /* ptrec_guest_mark() in the guest's first process */
	char comm[16];      /* the workload's name */
	int u, k;           /* trace user / kernel code */
	int start_paused, truth;
	/*
	 * Per-CPU mode: one trace stream per guest CPU that every traced task
	 * writes while it runs there (perf record without --per-thread);
	 * else one stream per task.
	 */
	int per_cpu;
	struct emu_pt_cfg pt;
	struct sys_trig trig[SYS_MAX_TRIG];
	int ntrig;
};

extern struct sys_cfg sys_cfg;

/* ---- guest memory and symbols (guest.c) ---- */

/* Maps the RAM file; 0 or -1. */
int sys_guest_open(void);
/* Reads @n bytes at guest-physical @pa; 0 or -1. */
int sys_guest_read_phys(uint64_t pa, void *dst, size_t n);
/* Learns the kernel's layout from the symbols in the mailbox; 0 or -1. */
int sys_guest_learn(void);
/* A kernel symbol's address, 0 if unknown (after sys_guest_learn). */
uint64_t sys_guest_sym(const char *name);
/* The current task (task_struct address) of CPU 0; 0 if unreadable. */
uint64_t sys_guest_current(void);
/*
 * The guest-physical address of @haddr, an address in QEMU's own mapping of
 * the guest's RAM (qemu_plugin_insn_haddr()); 0 if it is not in it.
 */
uint64_t sys_guest_phys_of_host(const void *haddr);
/* The mailbox's pid of the workload. */
int sys_guest_workload_pid(void);

/*
 * The guest's tasks, through the task_struct layout that the guest's first
 * process read from the kernel's BTF (the mailbox).
 */
enum sys_task_field { SYS_TASK_PID, SYS_TASK_TGID, SYS_TASK_REAL_PARENT };
/* Whether the layout is known (else no task but the workload's is traced). */
int sys_guest_has_layout(void);
/* A field of the task_struct at @task; 0 if unreadable. */
int sys_guest_task_u32(uint64_t task, enum sys_task_field f);
uint64_t sys_guest_task_ptr(uint64_t task, enum sys_task_field f);
/* The CR3 the guest loads for @task (its mm's page tables); 0 if unknown. */
uint64_t sys_guest_task_cr3(uint64_t task);
/* The task's comm, NUL-terminated, into @name (16 bytes). */
void sys_guest_task_comm(uint64_t task, char name[16]);
/*
 * In perf_event_fork() of @parent: the task that copy_process() just made,
 * a thread of @parent's process (the tail of its signal's thread_head) or a
 * process whose real parent is @parent (the tail of init_task.tasks), that
 * @known() does not know; 0 if neither.
 */
uint64_t sys_guest_new_task(uint64_t parent, int (*known)(uint64_t task));
/*
 * Whether @ip is the entry of an interrupt or exception handler: 0 if not,
 * else how far above the handler's first stack store the CPU's frame
 * holds the interrupted RIP (8 or 16).
 */
int sys_guest_is_entry(uint64_t ip);

/* ---- configuration (config.c) ---- */

/* Reads the configuration text from descriptor @fd; 0 or -1 (reported). */
int sys_cfg_load(int fd);

#endif

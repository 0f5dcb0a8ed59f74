/* SPDX-License-Identifier: MIT */
/*
 * The mailbox between the guest's first process (emulate/guest/ptrec-guest.c)
 * and the host side of the whole-system software tracer (emusys.c): a range
 * of guest-physical memory that the guest kernel leaves alone (booted with
 * memmap=SIZE$PHYS) and that the host reads from the file backing the
 * guest's RAM (file offset = guest-physical address). Layout only, no code.
 */
#ifndef PREC_EMUSYS_MB_H
#define PREC_EMUSYS_MB_H

#include <stdint.h>

#define PREC_EMUSYS_MB_PHYS 0xC000000ull   /* 192 MiB */
#define PREC_EMUSYS_MB_SIZE (16u << 20)
#define PREC_EMUSYS_MB_KSYMS 4096u         /* /proc/kallsyms text */
#define PREC_EMUSYS_MB_KSYMS_MAX (12u << 20)
/*
 * At its exit, each process of the workload that the guest's first process
 * traces (the workload and its descendants): "@PID\n", then its
 * /proc/PID/maps.
 */
#define PREC_EMUSYS_MB_MAPS (13u << 20)
#define PREC_EMUSYS_MB_MAPS_MAX (2u << 20)
#define PREC_EMUSYS_MB_VDSO (15u << 20)    /* the guest's vDSO image */
#define PREC_EMUSYS_MB_VDSO_MAX (64u << 10)
#define PREC_EMUSYS_MB_DONE 0x656e6f64u    /* "done" */
#define PREC_EMUSYS_MB_UPROBES 64

struct prec_emusys_mb {
	uint32_t done;      /* PREC_EMUSYS_MB_DONE once the workload ended */
	uint32_t pid;       /* the workload's pid, set before it runs */
	uint32_t status;    /* its wait status */
	uint32_t ksyms_len; /* bytes of kallsyms text at PREC_EMUSYS_MB_KSYMS */
	uint32_t maps_len;  /* bytes of maps text at PREC_EMUSYS_MB_MAPS */
	/*
	 * Host to guest: a signal for the workload (the model's kill(), e.g. at
	 * the end of -d), written by the host into the RAM file while the guest
	 * runs; the guest's first process looks at it every
	 * PREC_EMUSYS_MB_POLL_MS and sends it to the workload once.
	 */
	uint32_t sig;
	uint32_t vdso_len;  /* bytes of the guest kernel's vDSO at PREC_EMUSYS_MB_VDSO */
	/*
	 * The guest kernel's struct layout, from its BTF (/sys/kernel/btf/vmlinux),
	 * in bytes; layout_ok is PREC_EMUSYS_MB_LAYOUT once all were found.
	 */
	uint32_t layout_ok;
	uint32_t task_pid, task_tgid, task_real_parent, task_comm, task_tasks;
	uint32_t task_signal, task_thread_node, signal_thread_head;
	/* task_struct.mm, task_struct.active_mm and mm_struct.pgd: the task's page tables (CR3) */
	uint32_t task_mm, task_active_mm, mm_pgd;
	/*
	 * The uprobes, in the order of /ptrec/uprobes ("OFFSET PATH" lines that
	 * the host writes into the initramfs): the guest-physical address of
	 * each probed byte in the page cache page of PATH at OFFSET, which every
	 * mapping of that page shares (0: not found); set before the workload runs.
	 */
	uint32_t nuprobes;
	uint32_t pad;
	uint64_t uprobe_pa[PREC_EMUSYS_MB_UPROBES];
};

#define PREC_EMUSYS_MB_LAYOUT 0x7461736bu /* "task" */

#define PREC_EMUSYS_MB_POLL_MS 20

#endif

/* SPDX-License-Identifier: MIT */
/*
 * The guest's memory and executable mappings: reading guest memory, the
 * MMAP2 record of each executable file mapping, the mappings QEMU's loader
 * made itself, and the uprobe addresses they resolve to.
 */
#ifndef EMU_COMMON_MAPS_H
#define EMU_COMMON_MAPS_H

#include <stddef.h>
#include <stdint.h>

#define EMU_MAX_PROBES 256

/* Learns where guest memory lies in the host (once): from one instruction. */
void emu_guest_base(uint64_t host, uint64_t guest);
/* The host address of guest address @guest. */
void *emu_g2h(uint64_t guest);
/* Copies guest memory without faulting on a bad guest pointer; 0 or -1. */
int emu_guest_read(uint64_t guest, void *dst, size_t n);
/* Copies a NUL-terminated guest string; 0, or -1 if unreadable or too long. */
int emu_guest_str(uint64_t guest, char *dst, size_t size);

/*
 * An executable file mapping of @fd (named @path) appeared: its MMAP2 record,
 * the uprobes it resolves, and the tracer's exec_mapped() hook.
 */
void emu_new_exec_map(int tid, int fd, const char *path, uint64_t start, uint64_t len,
		      uint64_t pgoff, uint32_t prot, uint32_t flags);
/* The main binary and its ELF interpreter, as QEMU's loader mapped them. */
void emu_scan_initial_maps(int tid);

/* Whether any uprobe address is known. Call with emu_lock held. */
int emu_have_probes(void);
/*
 * The triggers whose uprobes sit at @va, at most @max of them into @trig;
 * returns how many there are (may exceed @max). Call with emu_lock held.
 */
int emu_probes_at(uint64_t va, int *trig, int max);

/*
 * Address filters (emu_cfg.filt), as the kernel applies them to a task's
 * executable mappings (perf_addr_filter_vma_adjust()): each filter's range
 * is where its file's bytes were last mapped. emu_filtering(): any filter
 * configured; emu_filter_in(): @va lies in a filter's range (FilterEn).
 */
int emu_filtering(void);
int emu_filter_in(uint64_t va);

#endif

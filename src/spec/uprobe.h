/* SPDX-License-Identifier: MIT */
/*
 * Uprobe targets without perf probe: a function (or address) of an ELF file
 * resolved to the file offset the kernel's uprobe PMU wants
 * (perf_event_attr.probe_offset), with libelf.
 */
#ifndef PREC_UPROBE_H
#define PREC_UPROBE_H

#include "base/common.h"

struct prec_uprobe_target {
	char *path;            /* absolute, symlinks resolved (realpath) */
	char *symbol;          /* as given: a name, or "0x..." for an address */
	uint64_t sym_offset;   /* the +OFFSET, 0 if none */
	uint64_t sym_size;     /* st_size of the symbol, 0 for an address */
	uint64_t vaddr;        /* link-time virtual address of the probe point */
	uint64_t file_offset;  /* offset of the probe point in the file */
};

/*
 * Resolves @symbol (+@offset bytes) in the ELF file @path. @symbol is a
 * function name, looked up in .symtab and then .dynsym, or a hex address
 * "0x..." taken as a virtual address. The virtual address is converted to
 * a file offset through the PT_LOAD program header that maps it. A @path
 * without '/' is searched in $PATH like a command.
 *
 * On success fills @t (release with prec_uprobe_target_fini()) and returns 0.
 * Errors (with @d's msg and hint set, @d->pos left -1 for the caller):
 *   -ENOENT etc.        the file cannot be opened
 *   -PREC_E_FORMAT      not an ELF executable or shared library
 *   -EFAULT             no PT_LOAD maps the address
 *   -PREC_E_NOSYM       no such function (hint: "did you mean" among the
 *                       file's functions)
 *   -ERANGE             @offset is not inside the function, or (x86-64) falls
 *                       inside an instruction (the hint names the boundaries)
 *   -EINVAL             @symbol names something that is not a function, a
 *                       bad address, or an address outside executable code
 */
int prec_uprobe_resolve(const char *path, const char *symbol, uint64_t offset,
			struct prec_uprobe_target *t, struct prec_diag *d);

/* Frees what @t holds and zeroes it (NULL and zeroed targets are fine). */
void prec_uprobe_target_fini(struct prec_uprobe_target *t);

#endif

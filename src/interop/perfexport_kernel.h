/* SPDX-License-Identifier: MIT */
/*
 * The kernel's text and symbols of a ptrec file (KCORE and KSYMS chunks:
 * `ptrec record --kcore`, or the guest kernel of --emulate=system) in the
 * form perf reads with `--kallsyms DIR/kallsyms`: the directory laid out as
 * the kcore_dir of `perf record --kcore`, i.e.
 *
 *	DIR/kallsyms  the recorded /proc/kallsyms text
 *	DIR/kcore     an ELF core file whose PT_LOAD segments (PF_R|PF_X) hold
 *	              the recorded kernel text at its addresses
 *	DIR/modules   the loaded modules (none recorded: empty)
 *
 * perf (tools/perf/util/symbol.c, dso__load_kcore()) takes the symbols from
 * kallsyms and the code from kcore's executable segments, once the kernel
 * map's reference symbol (_text, from the kernel MMAP record) has the
 * address kallsyms gives it (validate_kcore_addresses()) and a modules file
 * sits beside kallsyms (validate_kcore_modules()).
 */
#ifndef PREC_PERFEXPORT_KERNEL_H
#define PREC_PERFEXPORT_KERNEL_H

#include <stdint.h>

struct prec_tfile_reader;

struct prec_kexport {
	uint64_t text;       /* the address of _text in kallsyms (0: not found) */
	uint64_t start;      /* the start of the first text segment */
	uint64_t end;        /* the end of the last text segment */
	uint64_t bytes;      /* kernel text bytes written to kcore */
	unsigned segments;   /* PT_LOAD segments */
};

/*
 * Writes @dir (made if missing, its parent must exist) from the KSYMS and
 * KCORE chunks of @r (rewound and read twice). Returns 1 when the file has
 * both kallsyms and kernel text and @dir was written, 0 when it lacks
 * either (nothing written), or a negative errno.
 */
int prec_kexport_write(struct prec_tfile_reader *r, const char *dir, struct prec_kexport *k);

#endif

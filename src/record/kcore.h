/* SPDX-License-Identifier: MIT */
/*
 * Kernel text for decoding kernel trace elsewhere (--kcore): the executable
 * ranges of /proc/kcore (an ELF core file whose PT_LOAD segments map kernel
 * virtual addresses), chosen from kallsyms (_stext.._etext) and the module
 * list, copied into KCORE chunks.
 */
#ifndef PREC_KCORE_H
#define PREC_KCORE_H

#include "base/common.h"

struct prec_tfile_writer;

struct prec_kcore_result {
	unsigned ranges;     /* address ranges wanted */
	unsigned copied;     /* ranges (or pieces) found in kcore and written */
	uint64_t bytes;
};

/*
 * Copies kernel text from the ELF core file @kcore_path into KCORE chunks of
 * @w. @kallsyms is /proc/kallsyms text (for _stext/_etext), @modules the
 * /proc/modules text (may be NULL). At most @max_bytes are copied.
 * Returns 0, -ENOENT when kallsyms names no kernel text, -PREC_E_FORMAT
 * when the file is not an ELF core, or an I/O / writer error.
 */
int prec_kcore_copy(struct prec_tfile_writer *w, const char *kcore_path, const char *kallsyms,
		    const char *modules, uint64_t max_bytes, struct prec_kcore_result *res);
/* The same from an open ELF core file @fd (left open; read with pread). */
int prec_kcore_copy_fd(struct prec_tfile_writer *w, int fd, const char *kallsyms,
		       const char *modules, uint64_t max_bytes, struct prec_kcore_result *res);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Symbol tables: address -> (symbol, offset) by binary search over a sorted
 * array, built from an ELF file's .symtab and .dynsym (libelf) or, for a
 * stripped file, a separate debug file's or its MiniDebugInfo's .symtab, with PLT stubs
 * named "name@plt" (from .rela.plt and .plt / .plt.sec), or from kallsyms
 * text. Source lines (file:line and inlined frames) come from DWARF (libdw)
 * on demand.
 *
 * Names follow perf. Of several symbols at one address the table keeps one:
 * a .symtab symbol over one only .dynsym has, a function over an untyped
 * label, then perf's choose_best_symbol() order (a non-zero size, not weak,
 * global, fewer leading underscores, the longer name: fstatat64 rather than
 * fstatat). A stub of an IRELATIVE slot (a call of an IFUNC of the same file,
 * objdump's "*ABS*+0x...@plt") is named after the IFUNC at the relocation's
 * addend, else "offset_0xOFF@plt" (its file offset); the lazy PLT's header
 * is ".plt".
 *
 * Addresses of an ELF symtab are the file's own virtual addresses (st_value);
 * prec_symtab_off_to_vaddr() converts a file offset (what a mapping gives:
 * address - map start + pgoff) into that space. Kallsyms addresses are
 * absolute.
 */
#ifndef PREC_SYMTAB_H
#define PREC_SYMTAB_H

#include <stdint.h>
#include <stddef.h>

#include "base/common.h"

enum prec_symtype {
	PREC_SYM_FUNC = 0,
	PREC_SYM_PLT,             /* a synthesized PLT entry: "name@plt", ".plt" */
	PREC_SYM_OBJECT,
	PREC_SYM_KERNEL,          /* from kallsyms (text) */
};

struct prec_sym {
	uint64_t addr;
	uint64_t size;            /* after fixup: never 0 except for the last symbol */
	const char *name;         /* owned by the table */
	enum prec_symtype type;
};

struct prec_symtab;

/*
 * Reads the symbols of the ELF file at @path. Returns 0 and *@out, or
 * -ENOENT/-EACCES..., -PREC_E_FORMAT if it is not a readable ELF file,
 * -ENOMEM. A file without symbols gives an empty table, not an error.
 */
int prec_symtab_from_elf(const char *path, struct prec_symtab **out);
/*
 * The same, and a file without .symtab (a stripped program or library) takes
 * its symbols from, as gdb finds them: the separate debug file
 * @debug_root/usr/lib/debug/.build-id/xx/yyyy.debug with the file's build id,
 * else the file its .gnu_debuglink names (with a matching CRC) beside it, in
 * .debug/ beside it or under @debug_root/usr/lib/debug/DIR/, else its
 * MiniDebugInfo (.gnu_debugdata, an xz-compressed ELF file). Those add to
 * .dynsym. @debug_root "" is the real root; NULL looks only at
 * .gnu_debugdata, as prec_symtab_from_elf() and prec_symtab_from_elf_mem() do.
 */
int prec_symtab_from_elf_debug(const char *path, const char *debug_root,
			       struct prec_symtab **out);
/*
 * The separate debug file prec_symtab_from_elf_debug() takes the symbols of
 * the stripped file @path from (by build id or .gnu_debuglink; not
 * MiniDebugInfo), into @out. Returns 0, -ENOENT when @path has a .symtab or
 * no such file is found, or another negative error.
 */
int prec_symtab_debug_file(const char *path, const char *debug_root, char *out, size_t size);
/* The same from an ELF image in memory (copied). */
int prec_symtab_from_elf_mem(const void *p, size_t n, struct prec_symtab **out);
/*
 * Parses /proc/kallsyms text ("addr type name [module]" lines); keeps text
 * symbols (t, T, w, W). Malformed lines are skipped; returns -PREC_E_FORMAT if
 * no line parsed at all and the text is not empty.
 */
int prec_symtab_from_kallsyms(const char *text, size_t len, struct prec_symtab **out);
void prec_symtab_free(struct prec_symtab *st);

size_t prec_symtab_count(const struct prec_symtab *st);
/* Symbol @i in address order. */
const struct prec_sym *prec_symtab_at(const struct prec_symtab *st, size_t i);

/*
 * The symbol containing @addr and the offset into it; NULL when none does.
 * O(log n).
 */
const struct prec_sym *prec_symtab_lookup(const struct prec_symtab *st, uint64_t addr,
					  uint64_t *off);
/* The first (lowest-address) function symbol named @name, or NULL. */
const struct prec_sym *prec_symtab_find(const struct prec_symtab *st, const char *name);

/*
 * Converts a file offset to the ELF virtual address through the PT_LOAD
 * program headers. Returns 0, or -ENOENT when no segment holds @off (then
 * *@vaddr = @off, which is right for kallsyms tables and raw images).
 */
int prec_symtab_off_to_vaddr(const struct prec_symtab *st, uint64_t off, uint64_t *vaddr);

/* The GNU build id of the ELF file (0 bytes if it has none). */
size_t prec_symtab_build_id(const struct prec_symtab *st, const uint8_t **id);

/*
 * Whether two build ids name the same file, as perf's dso__build_id_equal()
 * decides: the same bytes, where the longer may go on with zeros only (perf.data
 * keeps ids in 20-byte slots, so a 16-byte md5 or uuid id comes zero-padded).
 */
bool prec_build_id_equal(const uint8_t *a, size_t na, const uint8_t *b, size_t nb);

/* Reads the GNU build id of an ELF file into @id (>= 20 bytes). Returns its
 * size (0 if none) or a negative error. */
int prec_elf_build_id(const char *path, uint8_t *id, size_t size);

/* A source position; inlined frames are innermost first. */
#define PREC_SRC_MAX_INLINE 8
struct prec_srcline {
	const char *file;         /* owned by the symtab, valid until it is freed */
	int line;
	int nr_inline;            /* callers of inlined code at this address */
	struct {
		const char *func; /* the inlined function */
		const char *file; /* where it was inlined (call site) */
		int line;
	} inl[PREC_SRC_MAX_INLINE];
};

/*
 * The source line of ELF virtual address @vaddr, from the file's DWARF (or,
 * with @debug_root, from the separate debug file found by build id under
 * @debug_root/usr/lib/debug/.build-id/). Returns 0, or -PREC_E_NOSYM when
 * there is no line information for it.
 */
int prec_symtab_srcline(struct prec_symtab *st, uint64_t vaddr, const char *debug_root,
			struct prec_srcline *out);

#endif

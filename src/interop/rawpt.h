/* SPDX-License-Identifier: MIT */
/*
 * Raw Intel PT in and out.
 *
 * Export (`ptdump --to-raw DIR`): every AUX stream of a ptrec trace file
 * becomes a plain file of trace bytes, with what a raw decoder needs next to
 * it: the code (the embedded images written as files, or the ELF files on
 * disk whose build id matches), the decoder parameters, and per stream an
 * argument file for libipt's ptxed and one for ptdump's own raw import:
 *
 *   DIR/manifest.txt             what is where, in words
 *   DIR/<stream>.pt              trace bytes ("tid-N" or "cpu-N")
 *   DIR/<stream>.ptxed.args      --cpu f/m/s --mtc-freq N --nom-freq N
 *                                --cpuid-0x15.eax N --cpuid-0x15.ebx N
 *                                --elf FILE:BASE | --raw FILE:FROM-TO:ADDR ...
 *                                --pt <stream>.pt    (ptxed's own syntax)
 *   DIR/<stream>.ptdump.args     the same for ptdump --pt: --elf FILE@BASE,
 *                                --image FILE:OFFSET:SIZE@ADDR
 *   DIR/images/NN-<name>         embedded code segments (bytes only)
 *
 * Files inside DIR are named relative to DIR (run the tools from there).
 * A raw stream carries no sideband: a thread that changes its address space
 * (exec, dlopen over an old mapping) or a per-CPU stream that runs several
 * processes cannot be described by one set of images; the manifest says so
 * and the args use the mappings in effect at the end.
 *
 * Import (`ptdump --pt FILE ...`): a session with one stream (cpu -1, tid
 * 1) in one process (pid 1) whose address space is the given images, so
 * every view of ptdump works on it, with symbols from the ELF files.
 */
#ifndef PREC_RAWPT_H
#define PREC_RAWPT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/common.h"

struct prec_session;

/* One code image of a raw import. */
struct prec_rawpt_image {
	char path[4096];
	bool elf;         /* --elf FILE[@BASE]: the PT_LOAD segments of an ELF file */
	bool has_addr;    /* --elf: BASE was given (else the link addresses) */
	/*
	 * --elf: where the lowest PT_LOAD virtual address is loaded (as
	 * ptxed's --elf FILE:BASE). --image: the address of byte OFFSET.
	 */
	uint64_t addr;
	uint64_t offset;  /* --image: first file byte mapped */
	uint64_t size;    /* --image: bytes mapped (when has_size; else to the end of the file) */
	bool has_size;
};

struct prec_rawpt_opts {
	const char *pt_path;                    /* the raw trace file */
	const struct prec_rawpt_image *images;  /* borrowed */
	size_t nimages;
	bool has_cpu;                           /* --cpu FAMILY/MODEL[/STEPPING] */
	uint16_t family;
	uint8_t model, stepping;
	int mtc_freq;                           /* --mtc-freq (IA32_RTIT_CTL.MTCFreq), -1: none */
	int nom_freq;                           /* --nom-freq (max non-turbo ratio), -1: none */
	uint32_t cpuid_15_eax, cpuid_15_ebx;    /* 0: unknown */
};

/* Sets @o to no images, no CPU, mtc_freq and nom_freq -1. */
void prec_rawpt_opts_init(struct prec_rawpt_opts *o);

/*
 * Parses "FILE[@BASE]" (@elf true, for --elf) or "FILE[:OFFSET[:SIZE]]@ADDR"
 * (for --image; SIZE bytes from OFFSET, so one dump can be mapped piecewise)
 * into @img. Numbers are decimal or 0x-hex; the file name may itself contain
 * ':' or '@' (the suffixes are taken from the right: one number after a ':'
 * is OFFSET, two are OFFSET and SIZE). Does not touch
 * the file. Returns 0, or -PREC_E_SYNTAX with @d (may be NULL) saying what is
 * wrong (diag pos = the column).
 */
int prec_rawpt_parse_image(const char *arg, bool elf, struct prec_rawpt_image *img,
			   struct prec_diag *d);

/* Parses "FAMILY/MODEL[/STEPPING]" into @o (has_cpu set). Returns 0 or -PREC_E_SYNTAX. */
int prec_rawpt_parse_cpu(const char *arg, struct prec_rawpt_opts *o, struct prec_diag *d);

/*
 * Fills the empty session @s from @o and finalizes it. Returns 0, or a
 * negative error with @d saying what to do: -ENOENT/-EACCES (a file),
 * -PREC_E_FORMAT (--elf file that is not an ELF file, or one without
 * loadable segments), -EINVAL (an offset past the end of its file, images
 * that overlap, no trace file), -EFBIG (trace over 4 GiB), -ENOMEM.
 */
int prec_rawpt_load(struct prec_session *s, const struct prec_rawpt_opts *o,
		    struct prec_diag *d);

/*
 * Writes the raw export of the ptrec file @ptrec_path into directory @dir
 * (created if needed, not its parents; files in it are overwritten).
 * Returns 0 (a recording without streams gives a manifest saying so), or a
 * negative error with @d filled: input errors as ptdump's loader gives
 * them, -ENOTSUP for a recording that is not Intel PT, -errno for writing.
 */
int prec_rawpt_export(const char *ptrec_path, const char *dir, struct prec_diag *d);
/*
 * The same, calling @progress (if not NULL) as the streams are written,
 * with the trace bytes written and those of all streams.
 */
int prec_rawpt_export_progress(const char *ptrec_path, const char *dir,
			       void (*progress)(void *ctx, uint64_t done, uint64_t total),
			       void *ctx, struct prec_diag *d);

#endif

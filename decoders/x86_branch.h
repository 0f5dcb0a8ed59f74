/* SPDX-License-Identifier: MIT */
/* x86 instruction facts the decoders need without a disassembler. */
#ifndef PREC_DECODERS_X86_BRANCH_H
#define PREC_DECODERS_X86_BRANCH_H

#include <stddef.h>
#include <stdint.h>

/*
 * The length of the conditional branch (Jcc, JrCXZ, LOOPcc) that the @n
 * bytes at @b start with, in 64-bit mode; 0 for anything else, and for
 * prefixes that change an instruction's length or meaning (66, 67, F0,
 * F3), which a disassembler must decode.
 */
unsigned prec_x86_jcc_len(const uint8_t *b, size_t n);

/*
 * The length of the instruction that the @n bytes at @b start with, in
 * 64- or 32-bit mode (@bits), for the common encodings (legacy prefixes,
 * REX, the one- and two-byte opcode maps, 0F 38 and 0F 3A); 0 for the rest
 * (VEX, EVEX, 16-bit code, the 67 prefix, invalid or rare opcodes, a near branch
 * with 66, too few bytes), which a disassembler must decode.
 */
unsigned prec_x86_insn_len(const uint8_t *b, size_t n, int bits);

#endif

// SPDX-License-Identifier: MIT
#include <stdbool.h>

#include "decoders/x86_branch.h"

/*
 * The encodings (Intel SDM vol. 2, Jcc, JCXZ/JECXZ/JRCXZ, LOOP/LOOPcc):
 * 70-7F and E0-E3 with a byte of displacement, 0F 80-8F with four (in
 * 64-bit mode the operand size of a near branch is 64 bits whatever REX.W
 * says). Segment and hint prefixes (26 2E 36 3E 64 65), BND (F2) and one
 * REX byte right before the opcode only add their byte.
 */
unsigned prec_x86_jcc_len(const uint8_t *b, size_t n)
{
	size_t i = 0;

	while (i < n && i < 4 &&
	       (b[i] == 0x26 || b[i] == 0x2e || b[i] == 0x36 || b[i] == 0x3e || b[i] == 0x64 ||
		b[i] == 0x65 || b[i] == 0xf2))
		i++;
	if (i < n && (b[i] & 0xf0) == 0x40)
		i++;
	if (i >= n)
		return 0;
	if ((b[i] & 0xf0) == 0x70 || (b[i] >= 0xe0 && b[i] <= 0xe3))
		return i + 2 <= n ? (unsigned)i + 2 : 0;
	if (b[i] == 0x0f && i + 1 < n && (b[i + 1] & 0xf0) == 0x80)
		return i + 6 <= n ? (unsigned)i + 6 : 0;
	return 0;
}

/*
 * prec_x86_insn_len(): what follows the opcode byte (Intel SDM vol. 2,
 * appendix A, the opcode maps). L_X: left to the disassembler (VEX, EVEX,
 * x87 escapes are fine but rare forms, invalid or mode-dependent opcodes).
 */
enum {
	L_M = 1,       /* a ModRM byte (and SIB, displacement) */
	L_I8 = 2,      /* an 8-bit immediate (or displacement) */
	L_IZ = 4,      /* a 16- or 32-bit immediate, by the operand size */
	L_I16 = 8,     /* a 16-bit immediate */
	L_IV = 16,     /* B8-BF: 16, 32 or (REX.W) 64 bits */
	L_MOFFS = 32,  /* A0-A3: an address of the address size */
	L_GRP3 = 64,   /* F6, F7: the immediate only with /0 and /1 */
	L_X = 128,
};

#define R4(v) v, v, v, v
#define R8(v) R4(v), R4(v)
#define R16(v) R8(v), R8(v)
#define ALU L_M, L_M, L_M, L_M, L_I8, L_IZ /* 00-05, 08-0D, ... */

static const uint8_t map0[] = {
	/* 00 */ ALU, L_X, L_X, ALU, L_X, L_X,
	/* 10 */ ALU, L_X, L_X, ALU, L_X, L_X,
	/* 20 */ ALU, L_X, L_X, ALU, L_X, L_X,
	/* 30 */ ALU, L_X, L_X, ALU, L_X, L_X,
	/* 40 */ R16(0),
	/* 50 */ R16(0),
	/* 60 */ L_X, L_X, L_X, L_M, L_X, L_X, L_X, L_X,
	/* 68 */ L_IZ, L_M | L_IZ, L_I8, L_M | L_I8, 0, 0, 0, 0,
	/* 70 */ R16(L_I8),
	/* 80 */ L_M | L_I8, L_M | L_IZ, L_X, L_M | L_I8, R4(L_M), R8(L_M),
	/* 90 */ R8(0), 0, 0, L_X, 0, 0, 0, 0, 0,
	/* A0 */ R4(L_MOFFS), R4(0), L_I8, L_IZ, 0, 0, 0, 0, 0, 0,
	/* B0 */ R8(L_I8), R8(L_IV),
	/* C0 */ L_M | L_I8, L_M | L_I8, L_X, 0, L_X, L_X, L_M | L_I8, L_M | L_IZ,
	/* C8 */ L_X, 0, L_X, 0, 0, L_I8, L_X, 0,
	/* D0 */ R4(L_M), L_X, L_X, L_X, 0, R8(L_M),
	/* E0 */ R8(L_I8), L_IZ, L_IZ, L_X, L_I8, R4(0),
	/* F0 */ L_X, 0, L_X, L_X, 0, 0, L_M | L_GRP3, L_M | L_GRP3, R4(0), 0, 0, L_M, L_M,
};

static const uint8_t map1[] = {
	/* 00 */ L_M, L_M, L_M, L_M, L_X, 0, 0, 0, 0, 0, L_X, 0, L_X, L_M, L_X, L_X,
	/* 10 */ R16(L_M),
	/* 20 */ R8(L_X), R8(L_M), /* MOV CR, DR: their ModRM is a register's whatever mod says */
	/* 30 */ R4(0), 0, 0, L_X, 0, L_X, L_X, L_X, L_X, R4(L_X),
	/* 40 */ R16(L_M),
	/* 50 */ R16(L_M),
	/* 60 */ R16(L_M),
	/* 70 */ R4(L_M | L_I8), L_M, L_M, L_M, 0, L_X, L_X, L_X, L_X, R4(L_M),
	/* 80 */ R16(L_IZ),
	/* 90 */ R16(L_M),
	/* A0 */ 0, 0, 0, L_M, L_M | L_I8, L_M, L_X, L_X, 0, 0, 0, L_M, L_M | L_I8, L_M, L_M, L_M,
	/* B0 */ R8(L_M), L_M, L_X, L_M | L_I8, L_M, R4(L_M),
	/* C0 */ L_M, L_M, L_M | L_I8, L_M, L_M | L_I8, L_M | L_I8, L_M | L_I8, L_M, R8(0),
	/* D0 */ R16(L_M),
	/* E0 */ R16(L_M),
	/* F0 */ R8(L_M), R4(L_M), L_M, L_M, L_M, L_X,
};

_Static_assert(sizeof(map0) == 256 && sizeof(map1) == 256, "one entry an opcode");

/* The bytes of a ModRM byte at @b (and its SIB and displacement); 0 when @n is short. */
static unsigned modrm_len(const uint8_t *b, size_t n)
{
	unsigned mod, rm, len = 1;

	if (!n)
		return 0;
	mod = b[0] >> 6;
	rm = b[0] & 7;
	if (mod == 3)
		return 1;
	if (rm == 4) {
		if (n < 2)
			return 0;
		len++;
		if (mod == 0 && (b[1] & 7) == 5)
			len += 4;
	}
	if (mod == 0 && rm == 5)
		len += 4;
	len += mod == 1 ? 1 : mod == 2 ? 4 : 0;
	return len;
}

unsigned prec_x86_insn_len(const uint8_t *b, size_t n, int bits)
{
	bool p66 = false, p67 = false, prep = false, rexw = false, near_rel = false;
	size_t i = 0;
	unsigned f, len, m;

	if (bits != 64 && bits != 32)
		return 0;
	/* Prefixes; a REX byte counts only right before the opcode. */
	for (; i < n && i < 14; i++) {
		uint8_t c = b[i];

		if (bits == 64 && (c & 0xf0) == 0x40) {
			rexw = c & 8;
			continue;
		}
		if (c == 0x66)
			p66 = true;
		else if (c == 0x67)
			p67 = true;
		else if (c == 0xf2 || c == 0xf3)
			prep = true;
		else if (!(c == 0x26 || c == 0x2e || c == 0x36 || c == 0x3e || c == 0x64 ||
			   c == 0x65 || c == 0xf0 || c == 0xf2 || c == 0xf3))
			break;
		rexw = false;
	}
	/* 67, or 66 with F2, F3 or REX.W (disassemblers differ): not here. */
	if (i >= n || p67 || (p66 && (prep || rexw)))
		return 0;
	if (b[i] != 0x0f) {
		f = map0[b[i]];
		if (bits == 32 && (b[i] & 0xf0) == 0x40)
			f = 0; /* INC, DEC */
		near_rel = b[i] == 0xe8 || b[i] == 0xe9;
		i++;
	} else if (i + 1 < n && (b[i + 1] == 0x38 || b[i + 1] == 0x3a)) {
		f = L_M | (b[i + 1] == 0x3a ? L_I8 : 0);
		i += 3;
	} else if (i + 1 < n) {
		f = map1[b[i + 1]];
		near_rel = (b[i + 1] & 0xf0) == 0x80;
		i += 2;
	} else {
		return 0;
	}
	/* A near branch with 66 (rel16 on some processors): the disassembler's. */
	if ((f & L_X) || (p66 && near_rel))
		return 0;
	len = (unsigned)i;
	if (f & L_M) {
		if (i >= n || !(m = modrm_len(b + i, n - i)))
			return 0;
		if ((f & L_GRP3) && ((b[i] >> 3) & 7) < 2)
			f |= b[i - 1] == 0xf6 ? L_I8 : L_IZ;
		len += m;
	}
	if (f & L_I8)
		len += 1;
	if (f & L_IZ)
		len += p66 && !rexw ? 2 : 4; /* REX.W wins over 66 */
	if (f & L_I16)
		len += 2;
	if (f & L_IV)
		len += rexw ? 8 : p66 ? 2 : 4;
	if (f & L_MOFFS)
		len += bits == 64 ? 8 : 4;
	return len <= n ? len : 0;
}

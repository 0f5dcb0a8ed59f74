// SPDX-License-Identifier: MIT
/* A64 branch classification: see a64.h. Encodings from the Arm ARM (C4.1). */
#include "a64.h"

static uint64_t sext(uint64_t v, unsigned bits)
{
	uint64_t m = 1ull << (bits - 1);

	v &= (1ull << bits) - 1;
	return (v ^ m) - m;
}

enum a64_kind a64_classify(uint32_t insn, uint64_t pc, uint64_t *target)
{
	*target = 0;
	/* B.cond: 0101010 0 imm19 0 cond (bit 4 set is BC.cond, not taken as one) */
	if ((insn & 0xff000010) == 0x54000000) {
		*target = pc + (sext(insn >> 5, 19) << 2);
		return A64_COND;
	}
	/* CBZ, CBNZ: sf 011010 op imm19 Rt */
	if ((insn & 0x7e000000) == 0x34000000) {
		*target = pc + (sext(insn >> 5, 19) << 2);
		return A64_COND;
	}
	/* TBZ, TBNZ: b5 011011 op b40 imm14 Rt */
	if ((insn & 0x7e000000) == 0x36000000) {
		*target = pc + (sext(insn >> 5, 14) << 2);
		return A64_COND;
	}
	/* B, BL: op 00101 imm26 */
	if ((insn & 0x7c000000) == 0x14000000) {
		*target = pc + (sext(insn, 26) << 2);
		return (insn & 0x80000000) ? A64_CALL : A64_JMP;
	}
	/* BR, BLR Xn */
	if ((insn & 0xffdffc1f) == 0xd61f0000)
		return (insn & 0x00200000) ? A64_ICALL : A64_IJMP;
	/* RET Xn */
	if ((insn & 0xfffffc1f) == 0xd65f0000)
		return A64_RET;
	/* BRAA, BRAB, BLRAA, BLRAB Xn, Xm */
	if ((insn & 0xffdff800) == 0xd71f0800)
		return (insn & 0x00200000) ? A64_ICALL : A64_IJMP;
	/* BRAAZ, BRABZ, BLRAAZ, BLRABZ Xn */
	if ((insn & 0xffdff81f) == 0xd61f081f)
		return (insn & 0x00200000) ? A64_ICALL : A64_IJMP;
	/* RETAA, RETAB */
	if ((insn & 0xfffffbff) == 0xd65f0bff)
		return A64_RET;
	/* ERET, ERETAA, ERETAB */
	if (insn == 0xd69f03e0 || (insn & 0xfffffbff) == 0xd69f0bff)
		return A64_ERET;
	/* SVC #imm16 */
	if ((insn & 0xffe0001f) == 0xd4000001)
		return A64_SVC;
	/* ISB (any option) */
	if ((insn & 0xfffff0ff) == 0xd50330df)
		return A64_ISB;
	return A64_OTHER;
}

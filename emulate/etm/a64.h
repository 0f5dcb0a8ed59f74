/* SPDX-License-Identifier: MIT */
/*
 * Just enough A64 instruction knowledge for the tracer: which instructions
 * are P0 elements of ETMv4 instruction trace (branches and ISB) and the
 * targets of direct branches. Pointer-authenticated branches (Armv8.3) count
 * as the branches they are.
 */
#ifndef ETM_A64_H
#define ETM_A64_H

#include <stdint.h>

enum a64_kind {
	A64_OTHER,  /* not a P0 element: execution falls through */
	A64_COND,   /* B.cond, CBZ, CBNZ, TBZ, TBNZ: E if taken, N if not */
	A64_JMP,    /* B */
	A64_CALL,   /* BL */
	A64_IJMP,   /* BR, BRAA...: E and a target address */
	A64_ICALL,  /* BLR, BLRAA...: E and a target address */
	A64_RET,    /* RET, RETAA, RETAB: E and a target address */
	A64_SVC,    /* SVC: a system call, an exception into EL1 */
	A64_ISB,    /* ISB: a P0 element, always E */
	A64_ERET,   /* ERET: never executes at EL0 */
};

/* Classifies @insn at @pc; *@target gets a direct branch's target. */
enum a64_kind a64_classify(uint32_t insn, uint64_t pc, uint64_t *target);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Just enough x86-64 instruction knowledge for the tracer: what kind of
 * control transfer an instruction of known length is, and its direct target.
 * QEMU already tells the length, so only prefixes and the opcode are read.
 */
#ifndef EMU_X86_H
#define EMU_X86_H

#include <stddef.h>
#include <stdint.h>

enum emu_br {
	EMU_BR_NONE,    /* not a branch: execution falls through */
	EMU_BR_COND,    /* Jcc, JrCXZ, LOOPcc: one TNT bit */
	EMU_BR_JMP,     /* direct near jump */
	EMU_BR_CALL,    /* direct near call */
	EMU_BR_IJMP,    /* indirect near jump: TIP */
	EMU_BR_ICALL,   /* indirect near call: TIP */
	EMU_BR_RET,     /* near return: TIP or compressed */
	EMU_BR_SYSCALL, /* SYSCALL, SYSENTER, INT n: enters the kernel */
	EMU_BR_FAR,     /* far call/jmp/ret, IRET: TIP */
	EMU_BR_REPSTR,  /* REP-prefixed string op: QEMU loops on it per element */
};

struct emu_insn_class {
	enum emu_br kind;
	uint64_t target; /* direct branches: the target address */
};

/*
 * Classifies the @size-byte instruction at @ip whose bytes are @p.
 * Returns 0, or -1 if @size is 0 or the bytes are truncated.
 */
int emu_x86_classify(const uint8_t *p, size_t size, uint64_t ip, struct emu_insn_class *out);

#endif

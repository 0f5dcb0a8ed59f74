// SPDX-License-Identifier: MIT
#include <string.h>

#include "x86.h"

static int64_t rel_at_end(const uint8_t *p, size_t size, unsigned width)
{
	if (width == 1)
		return (int8_t)p[size - 1];
	int32_t v;

	memcpy(&v, p + size - 4, 4);
	return v;
}

int emu_x86_classify(const uint8_t *p, size_t size, uint64_t ip, struct emu_insn_class *out)
{
	size_t i = 0;
	int rep = 0;
	uint8_t op;

	out->kind = EMU_BR_NONE;
	out->target = 0;
	if (!size)
		return -1;
	for (; i < size; i++) {
		uint8_t b = p[i];

		if (b == 0xf2 || b == 0xf3)
			rep = 1;
		else if (b != 0x66 && b != 0x67 && b != 0xf0 && b != 0x2e && b != 0x36 &&
			 b != 0x3e && b != 0x26 && b != 0x64 && b != 0x65)
			break;
	}
	if (i < size && (p[i] & 0xf0) == 0x40)
		i++;
	if (i >= size)
		return -1;
	op = p[i];
	/*
	 * In 64-bit mode Intel CPUs ignore an operand-size prefix on near
	 * branches, and the displacement is always the instruction's last
	 * 1 or 4 bytes, so the target follows from the length QEMU reports.
	 */
	if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3)) {
		out->kind = EMU_BR_COND;
		out->target = ip + size + rel_at_end(p, size, 1);
	} else if (op == 0x0f && i + 1 < size) {
		uint8_t op2 = p[i + 1];

		if (op2 >= 0x80 && op2 <= 0x8f && size >= i + 6) {
			out->kind = EMU_BR_COND;
			out->target = ip + size + rel_at_end(p, size, 4);
		} else if (op2 == 0x05 || op2 == 0x34) {
			out->kind = EMU_BR_SYSCALL;
		} else if (op2 == 0x07 || op2 == 0x35) {
			out->kind = EMU_BR_FAR;
		}
	} else if (op == 0xe8 && size >= i + 5) {
		out->kind = EMU_BR_CALL;
		out->target = ip + size + rel_at_end(p, size, 4);
	} else if (op == 0xe9 && size >= i + 5) {
		out->kind = EMU_BR_JMP;
		out->target = ip + size + rel_at_end(p, size, 4);
	} else if (op == 0xeb && size >= i + 2) {
		out->kind = EMU_BR_JMP;
		out->target = ip + size + rel_at_end(p, size, 1);
	} else if (op == 0xc2 || op == 0xc3) {
		out->kind = EMU_BR_RET;
	} else if (op == 0xca || op == 0xcb || op == 0xcf) {
		out->kind = EMU_BR_FAR;
	} else if (op == 0xcd) {
		out->kind = EMU_BR_SYSCALL;
	} else if (op == 0xff && i + 1 < size) {
		switch ((p[i + 1] >> 3) & 7) {
		case 2:
			out->kind = EMU_BR_ICALL;
			break;
		case 4:
			out->kind = EMU_BR_IJMP;
			break;
		case 3:
		case 5:
			out->kind = EMU_BR_FAR;
			break;
		}
	} else if (rep && ((op >= 0xa4 && op <= 0xa7) || (op >= 0xaa && op <= 0xaf) ||
			   (op >= 0x6c && op <= 0x6f))) {
		out->kind = EMU_BR_REPSTR;
	}
	return 0;
}

// SPDX-License-Identifier: MIT
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

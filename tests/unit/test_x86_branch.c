// SPDX-License-Identifier: MIT
/*
 * prec_x86_jcc_len() against capstone, the disassembler ptdump uses for
 * every other instruction: where it gives a length, capstone (64-bit mode)
 * must decode a conditional branch of that length. It may give 0 (leave
 * the instruction to capstone) for unusual prefixes, never for the plain
 * forms.
 */
#include <capstone/capstone.h>
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "decoders/x86_branch.h"

static csh cs;

/* Capstone's length of a conditional branch at @b (@n bytes), else 0. */
static unsigned cs_jcc_len(const uint8_t *b, size_t n)
{
	cs_insn *insn = NULL;
	unsigned len = 0;

	if (cs_disasm(cs, b, n, 0x400000, 1, &insn) != 1)
		return 0;
	switch (insn->id) {
	case X86_INS_JAE: case X86_INS_JA: case X86_INS_JBE: case X86_INS_JB: case X86_INS_JCXZ:
	case X86_INS_JECXZ: case X86_INS_JE: case X86_INS_JGE: case X86_INS_JG: case X86_INS_JLE:
	case X86_INS_JL: case X86_INS_JNE: case X86_INS_JNO: case X86_INS_JNP: case X86_INS_JNS:
	case X86_INS_JO: case X86_INS_JP: case X86_INS_JRCXZ: case X86_INS_JS: case X86_INS_LOOP:
	case X86_INS_LOOPE: case X86_INS_LOOPNE:
		len = insn->size;
		break;
	default:
		break;
	}
	cs_free(insn, 1);
	return len;
}

/*
 * Bytes @b: prefixes @p1 and @p2 (0: none), then opcode @op: 00-FF one
 * byte, 100-1FF after 0F, 200-2FF after 0F 38, 300-3FF after 0F 3A.
 * Returns the bytes written.
 */
static size_t put_opcode(uint8_t *b, uint8_t p1, uint8_t p2, unsigned op)
{
	size_t n = 0;

	if (p1)
		b[n++] = p1;
	if (p2)
		b[n++] = p2;
	if (op >= 0x100)
		b[n++] = 0x0f;
	if (op >= 0x200)
		b[n++] = op >= 0x300 ? 0x3a : 0x38;
	b[n++] = (uint8_t)op;
	return n;
}

/* One buffer: the two must agree as the comment at the top says. */
static int agree(const uint8_t *b, size_t n)
{
	unsigned mine = prec_x86_jcc_len(b, n), theirs = cs_jcc_len(b, n);

	/* 0 leaves the instruction to capstone; a branch without prefixes is never left. */
	int plain = (b[0] & 0xf0) == 0x70 || (b[0] >= 0xe0 && b[0] <= 0xe3) ||
		    (n > 1 && b[0] == 0x0f && (b[1] & 0xf0) == 0x80);

	if (mine ? mine == theirs : !(plain && theirs))
		return 1;
	fprintf(stderr, "  bytes");
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, " %02x", b[i]);
	fprintf(stderr, ": prec_x86_jcc_len %u, capstone %u\n", mine, theirs);
	return 0;
}

static int open_cs(void)
{
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return 0;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	return 1;
}

/* Every opcode after each of the prefixes (and pairs of them), cut at every length. */
static void opcodes_after_prefixes(void)
{
	static const uint8_t pre[] = { 0x00, 0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65, 0xf2,
				       0x40, 0x48, 0x4f, 0x66, 0x67, 0xf0, 0xf3 };
	unsigned bad = 0, jcc = 0;

	if (!T_OK(open_cs()))
		return;
	for (size_t p1 = 0; p1 < sizeof(pre); p1++)
		for (size_t p2 = 0; p2 < sizeof(pre); p2++)
			for (unsigned op = 0; op < 0x200; op++) {
				uint8_t b[16] = { 0 };
				size_t n = put_opcode(b, pre[p1], pre[p2], op);

				for (size_t k = n; k < sizeof(b); k++)
					b[k] = (uint8_t)(0x11 * k);
				for (size_t cut = n; cut <= 15; cut++) {
					bad += !agree(b, cut);
					jcc += prec_x86_jcc_len(b, cut) != 0;
				}
			}
	cs_close(&cs);
	T_EQ_INT(bad, 0);
	/* 16 + 4 one-byte and 16 two-byte opcodes, after 64 of the prefix pairs and kept at 11 or more lengths */
	T_OK(jcc > 36 * 64 * 9);
}

/* Random bytes: where either says a conditional branch, they agree. */
static void random_bytes(void)
{
	unsigned bad = 0;

	if (!T_OK(open_cs()))
		return;
	srand(20261203);
	for (int i = 0; i < 200000; i++) {
		uint8_t b[15];

		for (size_t k = 0; k < sizeof(b); k++)
			b[k] = (uint8_t)rand();
		if (i & 1)
			b[0] = (uint8_t)(0x70 + (b[0] & 0x0f)); /* many conditional branches */
		bad += !agree(b, sizeof(b));
	}
	cs_close(&cs);
	T_EQ_INT(bad, 0);
}

/*
 * prec_x86_insn_len() against capstone's length, in 64- and 32-bit mode:
 * where both decode the bytes, the lengths agree. (It may give a length
 * where capstone refuses the bytes, as libipt's length decoder does.)
 */
struct lens {
	csh cs[2];
	unsigned long bad, both, cs_only;
	size_t left;               /* code bytes still to look at */
};

static void len_check(struct lens *l, const uint8_t *b, size_t n, int mi)
{
	unsigned mine = prec_x86_insn_len(b, n, mi ? 64 : 32);
	cs_insn *insn = NULL;

	if (cs_disasm(l->cs[mi], b, n, 0x400000, 1, &insn) != 1)
		return;
	if (!mine) {
		l->cs_only++;
	} else if (mine == insn->size) {
		l->both++;
	} else if (l->bad++ < 10) {
		fprintf(stderr, "  %d-bit bytes", mi ? 64 : 32);
		for (size_t i = 0; i < insn->size; i++)
			fprintf(stderr, " %02x", b[i]);
		fprintf(stderr, ": prec_x86_insn_len %u, capstone %u (%s %s)\n", mine, insn->size,
			insn->mnemonic, insn->op_str);
	}
	cs_free(insn, 1);
}

static int lens_open(struct lens *l)
{
	memset(l, 0, sizeof(*l));
	return cs_open(CS_ARCH_X86, CS_MODE_32, &l->cs[0]) == CS_ERR_OK &&
	       cs_open(CS_ARCH_X86, CS_MODE_64, &l->cs[1]) == CS_ERR_OK;
}

/* Every opcode (one-byte, 0F, 0F 38, 0F 3A) after prefix pairs, with every ModRM byte. */
static void insn_len_opcodes(void)
{
	static const uint8_t pre[] = { 0x00, 0x2e, 0x64, 0xf2, 0x40, 0x48, 0x66, 0x67, 0xf0, 0xf3 };
	struct lens l;

	if (!T_OK(lens_open(&l)))
		return;
	for (size_t p1 = 0; p1 < sizeof(pre); p1++)
		for (size_t p2 = 0; p2 < sizeof(pre); p2++)
			for (unsigned op = 0; op < 0x400; op++)
				for (unsigned m = 0; m < 256; m += 29) {
					uint8_t b[16];
					size_t n = put_opcode(b, pre[p1], pre[p2], op);

					b[n++] = (uint8_t)m;
					for (size_t k = n; k < sizeof(b); k++)
						b[k] = (uint8_t)(0x25 * k + m);
					len_check(&l, b, 15, 0);
					len_check(&l, b, 15, 1);
				}
	cs_close(&l.cs[0]);
	cs_close(&l.cs[1]);
	T_EQ_INT(l.bad, 0);
	/* It takes most of what capstone decodes (not all: the 67 prefix, VEX, ...). */
	T_OK(l.both > 2 * l.cs_only);
}

static int code_segment(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct lens *l = arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		size_t len = ph->p_memsz < l->left ? ph->p_memsz : l->left;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || len < 16)
			continue;
		l->left -= len;
		/* Every offset: instruction starts and the bytes in between alike. */
		for (size_t off = 0; off + 15 <= len; off++)
			len_check(l, p + off, 15, 1);
	}
	return 0;
}

/*
 * The code of the programs and libraries loaded here (1 MiB of it), at
 * every byte offset, 64-bit. On x86-64 that is compiled x86 code, most of
 * which it measures itself.
 */
static void insn_len_code(void)
{
	struct lens l;

	if (!T_OK(lens_open(&l)))
		return;
	l.left = 1u << 20;
	dl_iterate_phdr(code_segment, &l);
	cs_close(&l.cs[0]);
	cs_close(&l.cs[1]);
	T_EQ_INT(l.bad, 0);
	T_OK(l.both > 100000);
#ifdef __x86_64__
	T_OK(l.both > 9 * l.cs_only);
#endif
}

static const struct t_case cases[] = {
	T(opcodes_after_prefixes),
	T(random_bytes),
	T(insn_len_opcodes),
	T(insn_len_code),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}

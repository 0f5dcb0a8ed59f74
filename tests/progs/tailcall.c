// SPDX-License-Identifier: MIT
/*
 * Functions entered without a call: a direct jump into another function (a
 * tail call) and a conditional jump into one. No trace packet marks these
 * moves, so the instructions on either side share a time; a profile must
 * still count each function's own. And code that no symbol covers, which
 * views name after its object as one function: entered by a call, a loop
 * in it, then a jump into a function that has a name. argv[1]: thousands of
 * rounds (default 1).
 */
#include <stdio.h>
#include <stdlib.h>

unsigned tail_target(unsigned x);
unsigned tail_entry(unsigned x);
unsigned cond_entry(unsigned x);
unsigned nosym_entry(unsigned x);

/* A function of its own, entered by the jumps below. */
__attribute__((noinline)) unsigned tail_target(unsigned x)
{
	unsigned i, s = 0;

	for (i = 0; i < (x & 7) + 4; i++)
		s += i ^ x;
	return s;
}

/*
 * tail_entry: two instructions, then a jump into tail_target.
 * cond_entry: odd x jumps into tail_target, even x returns x.
 * nosym_entry: calls code after its own end (.Lnosym_body: local labels
 * make no symbols), which loops three times and jumps into tail_target;
 * tail_target returns into nosym_entry.
 */
__asm__(".text\n"
	".globl tail_entry\n.type tail_entry, @function\n"
	"tail_entry:\n\taddl $1, %edi\n\tnop\n\tjmp tail_target\n"
	".size tail_entry, .-tail_entry\n"
	".globl cond_entry\n.type cond_entry, @function\n"
	"cond_entry:\n\ttestl $1, %edi\n\tjnz tail_target\n\tmovl %edi, %eax\n\tret\n"
	".size cond_entry, .-cond_entry\n"
	".globl nosym_entry\n.type nosym_entry, @function\n"
	"nosym_entry:\n\tcall .Lnosym_body\n\tret\n"
	".size nosym_entry, .-nosym_entry\n"
	".Lnosym_body:\n\tmovl $3, %ecx\n"
	".Lnosym_loop:\n\taddl $2, %edi\n\tdecl %ecx\n\tjnz .Lnosym_loop\n\tjmp tail_target\n");

int main(int argc, char **argv)
{
	long n = (argc > 1 ? atol(argv[1]) : 1) * 1000, i;
	unsigned acc = 0;

	for (i = 0; i < n; i++) {
		acc += tail_entry((unsigned)i);
		acc += cond_entry((unsigned)i);
		acc += nosym_entry((unsigned)i);
	}
	printf("tailcall %u\n", acc);
	return 0;
}

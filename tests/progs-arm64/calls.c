// SPDX-License-Identifier: MIT
/*
 * Control flow of every kind the tracer encodes: direct calls (BL), calls
 * through a function pointer table (BLR), returns (RET), recursion, a
 * switch compiled to a jump table (BR), tail calls (B to a function), and
 * conditional branches of every form (B.cond, CBZ/CBNZ, TBZ/TBNZ).
 */
#include <stdlib.h>

static volatile unsigned sink;

__attribute__((noinline)) static unsigned add1(unsigned x) { return x + 1; }
__attribute__((noinline)) static unsigned dbl(unsigned x) { return x * 2; }
__attribute__((noinline)) static unsigned sq(unsigned x) { return x * x; }

static unsigned (*const table[])(unsigned) = { add1, dbl, sq };

__attribute__((noinline)) static unsigned fib(unsigned n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

/* A dense switch: GCC makes it a table of offsets and an indirect branch. */
__attribute__((noinline)) static unsigned pick(unsigned k, unsigned x)
{
	switch (k) {
	case 0: return x + 3;
	case 1: return x ^ 0x55;
	case 2: return x * 7;
	case 3: return x - 9;
	case 4: return x << 2;
	case 5: return x >> 1;
	case 6: return ~x;
	case 7: return x | 0x100;
	default: return x;
	}
}

__attribute__((noinline)) static unsigned tail_target(unsigned x)
{
	return x * 5 + 1;
}

/* The sibling call becomes a plain B: no return comes back here. */
__attribute__((noinline, optimize("optimize-sibling-calls")))
static unsigned tail_caller(unsigned x)
{
	sink += x;
	return tail_target(x + 2);
}

__attribute__((noinline)) static unsigned bits(unsigned x)
{
	unsigned n = 0;

	while (x) {              /* CBZ/CBNZ */
		if (x & 4)       /* TBZ/TBNZ */
			n += 3;
		if ((int)x < 100) /* B.cond */
			n++;
		x >>= 1;
	}
	return n;
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 3, i, acc = 0;

	for (i = 0; i < 30 * n; i++) {
		acc += table[i % 3](i);
		acc += pick(i % 10, acc);
		acc += tail_caller(i);
		acc += bits(i * 37);
	}
	acc += fib(10 + n % 8);
	sink = acc;
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * Blocks that consume no trace, then none: "untraced N" first makes a chain
 * of eight direct calls, whose blocks (each ending in a call) need no
 * packet, so the decoder's search for an endless loop among such blocks
 * takes steps; then a loop of N iterations (default 400000) whose blocks all
 * end in conditional branches, each a TNT bit. A decode cut in parts inside
 * the loop meets, at each cut, a state that a warm-up from the PSB before
 * the cut must reproduce though it never saw the chain (ptdump -j, --shard;
 * tests/cli/shard.sh counts the parts decoded again).
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned sink;

#define LINK(f, g)                                    \
	__attribute__((noinline)) static unsigned f(unsigned x) \
	{                                             \
		return g(x + 1) + 1;                  \
	}

__attribute__((noinline)) static unsigned c8(unsigned x)
{
	return x * 3;
}
LINK(c7, c8)
LINK(c6, c7)
LINK(c5, c6)
LINK(c4, c5)
LINK(c3, c4)
LINK(c2, c3)
LINK(c1, c2)

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 400000;
	unsigned x = c1(7);

	for (long i = 0; i < n; i++) {
		/* a forward conditional branch and no jump (a jump's block needs no packet) */
		__asm__ volatile("test $4, %1\n\tjz 1f\n\tlea 1(%0,%0,4), %0\n1:"
				 : "+r"(x)
				 : "r"(x ^ (unsigned)i));
		sink = x;
	}
	printf("%u\n", sink);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * A long-running workload for the tracer benchmark: argv[1] million outer
 * iterations of a loop with calls and data-dependent branches (about 100
 * instructions each, so "loop 3000" runs roughly 300 million).
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static unsigned step(unsigned x)
{
	return x & 1 ? 3 * x + 1 : x >> 1;
}

int main(int argc, char **argv)
{
	long n = (argc > 1 ? atol(argv[1]) : 1) * 1000, i;
	unsigned acc = 0;
	int j;

	for (i = 0; i < n; i++) {
		unsigned x = (unsigned)i | 1;

		for (j = 0; j < 8; j++)
			x = step(x);
		acc += x;
	}
	printf("loop %u\n", acc);
	return 0;
}

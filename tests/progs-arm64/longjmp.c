// SPDX-License-Identifier: MIT
/* setjmp/longjmp: returns that skip frames, and a non-local jump (BR). */
#include <setjmp.h>
#include <stdlib.h>

static jmp_buf env;
static volatile unsigned sink;

__attribute__((noinline)) static void deep(unsigned d)
{
	sink += d;
	if (d == 0)
		longjmp(env, 1);
	if (d < 100)
		deep(d - 1);
	sink -= d;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10, i;
	volatile int jumps = 0;

	for (i = 0; i < n; i++) {
		if (!setjmp(env))
			deep((unsigned)i % 7 + 2);
		else
			jumps++;
	}
	return jumps == n ? 0 : 1;
}

// SPDX-License-Identifier: MIT
/* setjmp/longjmp across several frames, for the software tracer's tests. */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

static jmp_buf env;
static volatile int depth_reached;

__attribute__((noinline)) static void dive(int n, int jump_at)
{
	depth_reached = n;
	if (n > 1000)
		return;
	if (n == jump_at)
		longjmp(env, n);
	dive(n + 1, jump_at);
	depth_reached--;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5, i, sum = 0;

	for (i = 0; i < rounds; i++) {
		int v = setjmp(env);

		if (v == 0)
			dive(0, 3 + i % 5);
		else
			sum += v;
	}
	printf("longjmp %d\n", sum);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * A target for pause/resume windows: window_fn is a leaf function called
 * several times amid other work, so a uprobe at its entry (resume) and a
 * uretprobe on it (pause) give an exact expected trace.
 */
#include <stdlib.h>

static volatile unsigned sink;

__attribute__((noinline)) unsigned window_fn(unsigned x)
{
	unsigned i, a = x;

	for (i = 0; i < 10; i++)
		a = a * 3 + i;
	return a;
}

__attribute__((noinline)) unsigned outside_fn(unsigned x)
{
	unsigned i;

	for (i = 0; i < 5; i++)
		x = (x ^ 0x5a5a) + i;
	return x;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5, i;

	for (i = 0; i < n; i++) {
		sink += outside_fn((unsigned)i);
		sink += window_fn((unsigned)i);
	}
	return 0;
}

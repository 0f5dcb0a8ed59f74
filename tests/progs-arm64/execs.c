// SPDX-License-Identifier: MIT
/* exec: the program runs itself again; the trace goes on in the same stream. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile unsigned sink;

__attribute__((noinline)) static unsigned work(unsigned n)
{
	unsigned i, x = n;

	for (i = 0; i < n; i++)
		x = x * 33 + i;
	return x;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "again")) {
		sink = work(2000);
		return 0;
	}
	sink = work(500);
	execl("/proc/self/exe", argv[0], "again", (char *)NULL);
	return 1;
}

// SPDX-License-Identifier: MIT
/* fork: the child gets a stream of its own under its own pid. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned sink;

__attribute__((noinline)) static unsigned work(unsigned n)
{
	unsigned i, x = n;

	for (i = 0; i < n; i++)
		x = x * 33 + i;
	return x;
}

int main(void)
{
	pid_t p = fork();
	int st = 0;

	if (p < 0)
		return 2;
	if (p == 0) {
		sink = work(3000);
		_exit(0);
	}
	sink = work(1000);
	waitpid(p, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

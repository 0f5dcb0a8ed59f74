// SPDX-License-Identifier: MIT
/*
 * fork and exec for the software tracer's tests. "forkexec N" forks a child
 * that works and exits 7, waits for it, then execs itself as "forkexec exec
 * N", which works and exits 3 (the status a recorder must pass on).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) static unsigned spin(int n)
{
	unsigned a = 1;
	int i;

	for (i = 0; i < n; i++)
		a = a * 33 + (unsigned)i;
	return a;
}

int main(int argc, char **argv)
{
	int n, st = 0;
	pid_t p;

	if (argc > 2 && !strcmp(argv[1], "exec")) {
		n = atoi(argv[2]);
		printf("exec %u\n", spin(n * 3) & 1);
		return 3;
	}
	n = argc > 1 ? atoi(argv[1]) : 100;
	p = fork();
	if (p == 0) {
		spin(n * 2);
		_exit(7);
	}
	waitpid(p, &st, 0);
	printf("child %d\n", WEXITSTATUS(st));
	fflush(stdout);
	{
		char num[16];

		snprintf(num, sizeof(num), "%d", n);
		execl("/proc/self/exe", argv[0], "exec", num, (char *)NULL);
	}
	return 1;
}

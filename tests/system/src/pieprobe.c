// SPDX-License-Identifier: MIT
/*
 * pieprobe: the whole-system tracer's uprobe workload, a position-
 * independent executable (the guest's loader picks its base and libc's).
 * It prints its pid and where the guest put work() and libc's getppid() (the addresses
 * the probes must fire at), then calls work(), which calls getppid(),
 * argv[1] times (default 3); then a forked child, which maps the same
 * pages, calls it once more and exits; the parent waits for it and prints
 * the child's pid:
 *
 *   cc -O1 -fPIE -pie -o pieprobe pieprobe.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned sink;

__attribute__((noinline)) unsigned work(int i)
{
	unsigned a = (unsigned)getppid();

	for (int k = 0; k < 20; k++)
		a = a * 33 + (unsigned)(i + k);
	return a;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3, st = 0;
	pid_t c;

	printf("pid %d\nwork %p\ngetppid %p\n", (int)getpid(), (void *)work, (void *)getppid);
	fflush(stdout);
	for (int i = 0; i < n; i++)
		sink += work(i);
	c = fork();
	if (c == 0) {
		sink += work(n);
		_exit(0);
	}
	waitpid(c, &st, 0);
	printf("child %d %d\n", (int)c, st);
	return 0;
}

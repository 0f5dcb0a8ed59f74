// SPDX-License-Identifier: MIT
/*
 * pieprobe: the whole-system tracer's uprobe workload, a position-
 * independent executable (the guest's loader picks its base and libc's).
 * It prints "proc PID work ADDR getppid ADDR": its pid and where the guest
 * put work() and libc's getppid() (the addresses the probes must fire at),
 * then calls work(), which calls getppid(), argv[1] times (default 3).
 * Then a forked child, which maps the same pages at the same addresses,
 * calls it once and exits; then a second child execs this program again
 * ("pieprobe exec": its own mappings, at bases of their own), which prints
 * its line and calls work() once. The parent waits for each and prints
 * "child PID STATUS":
 *
 *   cc -O1 -fPIE -pie -o pieprobe pieprobe.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void child(pid_t c)
{
	int st = 0;

	waitpid(c, &st, 0);
	printf("child %d %d\n", (int)c, st);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int exec = argc > 1 && !strcmp(argv[1], "exec");
	int n = exec ? 1 : argc > 1 ? atoi(argv[1]) : 3;
	pid_t c;

	printf("proc %d work %p getppid %p\n", (int)getpid(), (void *)work, (void *)getppid);
	fflush(stdout);
	for (int i = 0; i < n; i++)
		sink += work(i);
	if (exec)
		return 0;
	c = fork();
	if (c == 0) {
		sink += work(n);
		_exit(0);
	}
	child(c);
	c = fork();
	if (c == 0) {
		execl(argv[0], argv[0], "exec", (char *)NULL);
		_exit(127);
	}
	child(c);
	return 0;
}

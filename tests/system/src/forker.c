// SPDX-License-Identifier: MIT
/*
 * forker: the whole-system tracer's workload with children. It prints its
 * pid, starts a thread that prints its tid, runs spin() and ends, forks a child that prints its pid and parent's, runs spin() and
 * exits 7, then forks a second child that execs this program again as
 * "forker exec", which prints its pid and parent's, runs spin() and exits
 * 5. The parent waits for each and prints their statuses:
 *
 *   cc -O1 -no-pie -pthread -o forker forker.c
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) static unsigned spin(int n)
{
	unsigned a = 1;

	for (int i = 0; i < n; i++)
		a = a * 33 + (unsigned)i;
	return a;
}

static void *thread(void *arg)
{
	printf("thread %d %d %u\n", (int)gettid(), (int)getpid(), spin(100) & 1);
	fflush(stdout);
	return arg;
}

int main(int argc, char **argv)
{
	int st1 = 0, st2 = 0;
	pthread_t th;
	pid_t a, b;

	if (argc > 1 && !strcmp(argv[1], "exec")) {
		printf("exec %d %d %u\n", (int)getpid(), (int)getppid(), spin(300) & 1);
		return 5;
	}
	printf("parent %d\n", (int)getpid());
	fflush(stdout);
	if (pthread_create(&th, NULL, thread, NULL) || pthread_join(th, NULL))
		return 1;
	a = fork();
	if (a == 0) {
		printf("child %d %d %u\n", (int)getpid(), (int)getppid(), spin(200) & 1);
		fflush(stdout);
		_exit(7);
	}
	waitpid(a, &st1, 0);
	b = fork();
	if (b == 0) {
		execl(argv[0], argv[0], "exec", (char *)NULL);
		_exit(127);
	}
	waitpid(b, &st2, 0);
	printf("statuses %d %d\n", WEXITSTATUS(st1), WEXITSTATUS(st2));
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * Signal handlers for the software tracer's tests: signals raised by the
 * program itself (delivered on return from kill) and timer signals that
 * interrupt a busy loop at arbitrary points.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static volatile int hits, ticks;

__attribute__((noinline)) static int work(int x)
{
	return (x * 7) ^ (x >> 2);
}

static void on_usr1(int sig)
{
	hits += work(sig) & 1 ? 1 : 2;
}

static void on_alarm(int sig)
{
	ticks++;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3, i;
	volatile unsigned acc = 0;
	struct sigaction sa;
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	for (i = 0; i < n; i++)
		raise(SIGUSR1);
	setitimer(ITIMER_REAL, &it, NULL);
	for (i = 0; ticks < 3 && i < 200000000; i++)
		acc += work(i);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	printf("signals %d %d\n", hits, ticks >= 3);
	return 0;
}

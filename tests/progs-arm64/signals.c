// SPDX-License-Identifier: MIT
/*
 * Signals: a handler entered when a system call returns (raise), and one
 * entered asynchronously while the main thread computes (a timer). Handlers
 * return through the kernel's (here QEMU's) sigreturn trampoline.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>

static volatile unsigned hits, sink;

static void handler(int sig)
{
	unsigned i;

	for (i = 0; i < 10; i++)
		sink += i * (unsigned)sig;
	hits++;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = handler };
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };
	unsigned long spins = 0;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	raise(SIGUSR1);
	raise(SIGUSR1);
	setitimer(ITIMER_REAL, &it, NULL);
	while (hits < 6 && spins < 4000000000ul)
		sink += (unsigned)spins++ & 3;
	it.it_value.tv_usec = 0;
	it.it_interval.tv_usec = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	return hits >= 6 ? 0 : 1;
}

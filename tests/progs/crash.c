// SPDX-License-Identifier: MIT
/*
 * A workload that dies of a signal, for the tests of what a crash leaves in
 * the trace: work() is called 1000 times, then mid() calls crash(), which
 * ends the process as HOW says:
 *	segv     writes through a NULL pointer (crash() calls nothing first)
 *	abort    calls abort()
 *	kill N   sends itself signal N (9: SIGKILL, 15: SIGTERM)
 *	spin     calls work() until killed from outside; once it called it
 *	         1000 times in crash(), it says "spinning" on stdout (the
 *	         moment to kill it from outside)
 * "crash HOW [N]" does it in its own process; in another one:
 *	fork HOW [N]       a forked child does it; the parent waits for it,
 *	                   says how it ended, calls work() 10 times, exits 0
 *	forkexec HOW [N]   likewise, the child execs "crash HOW [N]"
 *	orphan HOW [N]     the parent exits 0 at once; the child does it once
 *	                   it has another parent
 *	threads T HOW [N]  T threads call work() 100 times each and wait for
 *	                   each other; then thread T/2 does it while the others
 *	                   wait in pause()
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum how { SEGV, ABORT, KILL, SPIN };

static volatile int sink;
static volatile int *volatile null_ptr;

__attribute__((noinline)) static void work(int i)
{
	if (i & 1)
		sink += i;
	else
		sink ^= i;
}

__attribute__((noinline)) static void crash(enum how how, int sig)
{
	switch (how) {
	case SEGV:
		*null_ptr = 1;
		break;
	case ABORT:
		abort();
	case KILL:
		kill(getpid(), sig);
		break;
	case SPIN:
		for (int i = 0;; i++) {
			work(i);
			if (i == 1000 && write(1, "spinning\n", 9) != 9)
				_exit(1);
		}
	}
	sink = 1;
}

__attribute__((noinline)) static void mid(enum how how, int sig)
{
	crash(how, sig);
	sink++;
}

static enum how g_how;
static int g_sig = SIGKILL;

static void run(int n)
{
	int i;

	for (i = 0; i < n; i++)
		work(i);
	mid(g_how, g_sig);
}

static pthread_barrier_t g_bar;
static long g_culprit;

static void *thread_main(void *arg)
{
	int i;

	for (i = 0; i < 100; i++)
		work(i);
	pthread_barrier_wait(&g_bar);
	if ((long)arg == g_culprit)
		run(0);
	for (;;)
		pause();
	return NULL;
}

static int threads(int nt)
{
	pthread_attr_t a;
	pthread_t t;
	long i;

	g_culprit = nt / 2;
	pthread_barrier_init(&g_bar, NULL, (unsigned)nt + 1);
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	for (i = 0; i < nt; i++)
		if (pthread_create(&t, &a, thread_main, (void *)i)) {
			fprintf(stderr, "cannot create thread %ld\n", i);
			return 1;
		}
	pthread_barrier_wait(&g_bar);
	for (;;)
		pause();
}

static int child(const char *mode, char **argv)
{
	pid_t parent = getpid(), p;
	int st = 0, i;

	fflush(stdout);
	p = fork();
	if (p < 0)
		return 1;
	if (p == 0) {
		if (!strcmp(mode, "forkexec")) {
			execv("/proc/self/exe", argv);
			_exit(127);
		}
		if (!strcmp(mode, "orphan"))
			while (getppid() == parent)
				usleep(1000);
		run(1000);
		_exit(0);
	}
	if (!strcmp(mode, "orphan"))
		return 0;
	if (waitpid(p, &st, 0) != p)
		return 1;
	if (WIFSIGNALED(st))
		printf("child killed by signal %d\n", WTERMSIG(st));
	else
		printf("child exited %d\n", WEXITSTATUS(st));
	for (i = 0; i < 10; i++)
		work(i);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "segv", *a;
	int k = 1;

	if (!strcmp(mode, "fork") || !strcmp(mode, "forkexec") || !strcmp(mode, "orphan") ||
	    !strcmp(mode, "threads"))
		k = !strcmp(mode, "threads") ? 3 : 2;
	a = argc > k ? argv[k] : "segv";
	g_how = !strcmp(a, "abort") ? ABORT : !strcmp(a, "kill") ? KILL :
		!strcmp(a, "spin") ? SPIN : SEGV;
	if (argc > k + 1)
		g_sig = atoi(argv[k + 1]);
	if (k == 3)
		return threads(argc > 2 ? atoi(argv[2]) : 300);
	if (k == 2)
		return child(mode, argv + 1);
	run(1000);
	return 0;
}

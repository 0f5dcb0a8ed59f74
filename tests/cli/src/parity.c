/*
 * Deterministic workload for the perf-parity test: every thread of it makes
 * the same known numbers of system calls, page faults and function calls, so
 * the samples two recorders take of it can be compared per event and thread.
 *
 * usage: parity [options]
 *   -g N   getpid() calls per thread          (default 1000)
 *   -W N   write() calls to /dev/null per thread (default 10)
 *   -P N   fresh anonymous pages touched per thread (N page faults; default 0)
 *   -l N   calls of parity_work() per thread (uprobe target; default 0)
 *   -b N   writes to the global 'parity_watched' per thread (breakpoints; default 0)
 *   -t N   extra threads doing the same (default 0)
 *   -f     fork a child that does the same (after the threads)
 *   -x     the forked child execs this program again with -g/-W only
 *   -w S   sleep S seconds first (for attach tests); prints the pid first
 *   -s S   then spin for S seconds calling getpid every 10 ms (for -d)
 *   -e N   exit status N (default 0)
 *   -k SIG kill itself with signal SIG at the end
 *   -T     the main thread calls pthread_exit after starting the threads
 *   -c CPU pin every thread to CPU
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long n_getpid = 1000, n_write = 10, n_pages, n_calls, n_bp, n_threads;
static int do_fork, do_exec, exit_code, kill_sig, main_exits, cpu = -1;
static double wait_s, spin_s;
static char *self;
volatile long parity_watched;
static volatile long sink;

__attribute__((noinline)) void parity_work(long i)
{
	sink += i;
	__asm__ volatile("" ::: "memory");
}

static void pin(void)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void work(void)
{
	long i, page = sysconf(_SC_PAGESIZE);
	int fd = open("/dev/null", O_WRONLY);

	pin();
	for (i = 0; i < n_getpid; i++)
		syscall(SYS_getpid);
	for (i = 0; i < n_write; i++)
		if (write(fd, "x", 1) != 1)
			break;
	if (n_pages) {
		char *p = mmap(NULL, n_pages * page, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p != MAP_FAILED) {
			for (i = 0; i < n_pages; i++)
				p[i * page] = 1;
			munmap(p, n_pages * page);
		}
	}
	for (i = 0; i < n_calls; i++)
		parity_work(i);
	for (i = 0; i < n_bp; i++)
		parity_watched = i;
	close(fd);
}

static void *thread_main(void *arg)
{
	(void)arg;
	work();
	return NULL;
}

static void spin(void)
{
	struct timespec t0, t, ten_ms = { 0, 10 * 1000 * 1000 };

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		syscall(SYS_getpid);
		nanosleep(&ten_ms, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < spin_s);
}

static void child(void)
{
	char g[32], w[32];

	if (!do_exec) {
		work();
		_exit(0);
	}
	snprintf(g, sizeof(g), "%ld", n_getpid);
	snprintf(w, sizeof(w), "%ld", n_write);
	execl(self, self, "-g", g, "-W", w, (char *)NULL);
	_exit(127);
}

static void options(int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "g:W:P:l:b:t:fxw:s:e:k:Tc:")) != -1) {
		switch (c) {
		case 'g': n_getpid = atol(optarg); break;
		case 'W': n_write = atol(optarg); break;
		case 'P': n_pages = atol(optarg); break;
		case 'l': n_calls = atol(optarg); break;
		case 'b': n_bp = atol(optarg); break;
		case 't': n_threads = atol(optarg); break;
		case 'f': do_fork = 1; break;
		case 'x': do_fork = do_exec = 1; break;
		case 'w': wait_s = atof(optarg); break;
		case 's': spin_s = atof(optarg); break;
		case 'e': exit_code = atoi(optarg); break;
		case 'k': kill_sig = atoi(optarg); break;
		case 'T': main_exits = 1; break;
		case 'c': cpu = atoi(optarg); break;
		default: exit(2);
		}
	}
}

int main(int argc, char **argv)
{
	pthread_t t[64];
	long i;

	self = argv[0];
	options(argc, argv);
	if (n_threads > 64)
		n_threads = 64;
	pin(); /* before the getpid() below, so that -C N sees that one too */
	if (wait_s > 0) {
		printf("%d\n", (int)getpid());
		fflush(stdout);
		usleep((useconds_t)(wait_s * 1e6));
	}
	for (i = 0; i < n_threads; i++)
		pthread_create(&t[i], NULL, thread_main, NULL);
	if (main_exits)
		pthread_exit(NULL);
	work();
	for (i = 0; i < n_threads; i++)
		pthread_join(t[i], NULL);
	if (do_fork) {
		pid_t p = fork();

		if (p == 0)
			child();
		waitpid(p, NULL, 0);
	}
	if (spin_s > 0)
		spin();
	if (kill_sig)
		kill(getpid(), kill_sig);
	return exit_code;
}

/* Test workload for the recorder: the main thread ends with pthread_exit()
 * and leaves a zombie leader while a second thread lives on; that thread
 * waits, calls uname(2) and ends the process.
 * usage: leader_exit SECONDS   (how long the second thread waits) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

static double wait_s = 1;

static void *worker(void *arg)
{
	struct utsname u;

	(void)arg;
	usleep((useconds_t)(wait_s * 1e6));
	uname(&u);
	printf("%ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc > 1)
		wait_s = atof(argv[1]);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	if (pthread_create(&t, NULL, worker, NULL))
		return 1;
	pthread_exit(NULL);
}

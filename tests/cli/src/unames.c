/* Test workload for the recorder: calls uname(2) from several threads and a
 * forked child that execs, so every pid/tid must show in the sideband.
 * usage: unames [-w SECONDS] [-x]   -w: wait first (attach tests), -x: fork+exec uname */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

static void *worker(void *arg)
{
	struct utsname u;

	(void)arg;
	uname(&u);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[2];
	struct utsname u;
	int i, do_exec = 0;
	double wait = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-w") && i + 1 < argc)
			wait = atof(argv[++i]);
		else if (!strcmp(argv[i], "-x"))
			do_exec = 1;
	}
	if (wait > 0)
		usleep((useconds_t)(wait * 1e6));
	uname(&u);
	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (do_exec) {
		pid_t p = fork();

		if (p == 0) {
			execlp("uname", "uname", (char *)NULL);
			_exit(127);
		}
		waitpid(p, NULL, 0);
	}
	printf("%d\n", (int)getpid());
	return 7;
}

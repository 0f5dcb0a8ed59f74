// SPDX-License-Identifier: MIT
/*
 * posix_spawn() and system(), which glibc implements with clone(CLONE_VM |
 * CLONE_VFORK) and exec: the software tracer must follow the child into the
 * new program. Exits with system()'s status of "exit 5" plus the spawned
 * /bin/true's status.
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

extern char **environ;

int main(void)
{
	char *argv[] = { "true", NULL };
	pid_t p;
	int st = 0, sys;

	if (posix_spawn(&p, "/bin/true", NULL, NULL, argv, environ))
		return 9;
	waitpid(p, &st, 0);
	sys = system("exit 5");
	printf("spawn %d system %d\n", WEXITSTATUS(st), WEXITSTATUS(sys));
	return WEXITSTATUS(st) + WEXITSTATUS(sys);
}

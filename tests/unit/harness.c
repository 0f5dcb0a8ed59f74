// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define T_SKIP_EXIT 77

struct t_shared {
	int rows_passed, rows_failed;
};

static struct t_shared *shared;
static int case_failed, row_failed;
static char tmpdir[64];

bool t_check(bool ok, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	if (ok)
		return true;
	case_failed = row_failed = 1;
	fprintf(stderr, "    %s:%d: check failed: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return false;
}

void t_skip(const char *why)
{
	printf("skip %s\n", why);
	fflush(stdout);
	_exit(T_SKIP_EXIT);
}

void t_row(const char *name, bool ok)
{
	ok = ok && !row_failed;
	row_failed = 0;
	if (ok) {
		shared->rows_passed++;
	} else {
		shared->rows_failed++;
		case_failed = 1;
		printf("FAIL   row %s\n", name);
	}
}

bool t_row_failed(void)
{
	bool f = row_failed;

	row_failed = 0;
	return f;
}

const char *t_tmpdir(void)
{
	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof(tmpdir), "/tmp/ptrec-test.XXXXXX");
		if (!mkdtemp(tmpdir)) {
			perror("mkdtemp");
			_exit(1);
		}
	}
	return tmpdir;
}

static void rm_tmpdir(void)
{
	char cmd[128];

	if (!tmpdir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
}

int t_main(int argc, char **argv, const struct t_case *cases, size_t n)
{
	int passed = 0, failed = 0, skipped = 0;
	const char *filter = argc > 1 ? argv[1] : getenv("T_FILTER");
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	for (i = 0; i < n; i++) {
		int status = 0;
		pid_t pid;

		if (filter && fnmatch(filter, cases[i].name, 0))
			continue;
		shared->rows_passed = shared->rows_failed = 0;
		fflush(stdout);
		fflush(stderr);
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 2;
		}
		if (pid == 0) {
			cases[i].fn();
			rm_tmpdir();
			fflush(stdout);
			_exit(case_failed ? 1 : 0);
		}
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (shared->rows_passed || shared->rows_failed) {
			passed += shared->rows_passed;
			failed += shared->rows_failed;
			if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
				printf("ok     %s (%d rows)\n", cases[i].name, shared->rows_passed);
				continue;
			}
			if (!shared->rows_failed)
				failed++;
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			passed++;
			printf("ok     %s\n", cases[i].name);
			continue;
		} else if (WIFEXITED(status) && WEXITSTATUS(status) == T_SKIP_EXIT) {
			skipped++;
			printf("skip   %s\n", cases[i].name);
			continue;
		} else {
			failed++;
		}
		if (WIFSIGNALED(status))
			printf("FAIL   %s (killed by signal %d)\n", cases[i].name, WTERMSIG(status));
		else
			printf("FAIL   %s\n", cases[i].name);
	}
	printf("# counts: %d %d %d\n", passed, failed, skipped);
	return failed ? 1 : 0;
}

void t_fixture_sysroot(void)
{
	char cmd[1024];
	const char *ptrec = getenv("PTREC");

	if (!ptrec)
		t_skip("PTREC is not set (run through make check)");
	snprintf(cmd, sizeof(cmd), "PTREC=%s %s/tests/fixtures/mksysroot.sh %s/root >/dev/null",
		 ptrec, getenv("PTREC_TOP") ? getenv("PTREC_TOP") : ".", t_tmpdir());
	if (system(cmd))
		t_skip("cannot build the fixture tree");
	snprintf(cmd, sizeof(cmd), "%s/root", t_tmpdir());
	setenv("PTREC_SYSROOT", cmd, 1);
}

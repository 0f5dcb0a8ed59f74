// SPDX-License-Identifier: MIT
/*
 * A target for pause/resume windows: window_fn is a leaf function called
 * several times amid other work, and getpid()/uname() bracket a stretch of
 * user code (in_between), so uprobe, uretprobe and syscall triggers have
 * exact expected traces. With PTREC_TEST_COUNTS=FILE it appends how often
 * it called its functions to FILE ("NAME COUNT" lines), for checks that
 * have no ground truth (tests/hw/check-hw.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

static volatile unsigned sink;
static unsigned n_window, n_outside, n_outside_between;

__attribute__((noinline)) unsigned window_fn(unsigned x)
{
	unsigned i, a = x;

	n_window++;
	for (i = 0; i < 10; i++)
		a = a * 3 + i;
	return a;
}

__attribute__((noinline)) unsigned outside_fn(unsigned x)
{
	n_outside++;
	return x ^ 0x5a5a;
}

__attribute__((noinline)) unsigned in_between(unsigned x)
{
	unsigned i;

	for (i = 0; i < 20; i++) {
		x = outside_fn(x) + i;
		n_outside_between++;
	}
	return x;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5, i;
	struct utsname u;

	for (i = 0; i < n; i++) {
		sink += outside_fn((unsigned)i);
		sink += window_fn((unsigned)i);
	}
	syscall(SYS_getpid);
	sink += in_between(7);
	uname(&u);
	sink += outside_fn(9);
	printf("window %u\n", sink != 0);
	if (getenv("PTREC_TEST_COUNTS")) {
		FILE *f = fopen(getenv("PTREC_TEST_COUNTS"), "a");

		if (f) {
			fprintf(f, "window_fn %u\noutside_fn %u\nin_between:outside_fn %u\n",
				n_window, n_outside, n_outside_between);
			fclose(f);
		}
	}
	return 0;
}

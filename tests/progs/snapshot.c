// SPDX-License-Identifier: MIT
/*
 * A workload for the flight recorder's tests (ptrec record -S): phases of
 * calls into four functions picked by a pseudo-random sequence (so any run
 * of a few dozen calls occurs once), each phase followed by a call to
 * marker() (a place for a snapshot trigger), SIGUSR2 to the parent (the
 * recorder: a snapshot) unless argv[4] is "quiet", and a pause while the
 * snapshot is taken. argv[1]: calls per phase (default 100000); argv[2]:
 * phases (default 3); argv[3]: the pause in milliseconds (default 300).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned sink;

__attribute__((noinline)) static unsigned f0(unsigned x) { return x * 3 + 1; }
__attribute__((noinline)) static unsigned f1(unsigned x) { return x ^ 0x5a5a; }
__attribute__((noinline)) static unsigned f2(unsigned x) { return f0(x) + 7; }
__attribute__((noinline)) static unsigned f3(unsigned x) { return f1(x) >> 1; }

static unsigned (*const fns[4])(unsigned) = { f0, f1, f2, f3 };

__attribute__((noinline)) static void phase(unsigned *seed, long n)
{
	long i;

	for (i = 0; i < n; i++) {
		*seed = *seed * 1103515245u + 12345u;
		sink += fns[(*seed >> 16) & 3](*seed);
	}
}

__attribute__((noinline)) void marker(int i)
{
	sink += (unsigned)i;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	int phases = argc > 2 ? atoi(argv[2]) : 3, i;
	long ms = argc > 3 ? atol(argv[3]) : 300;
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
	unsigned seed = 1;
	int quiet = argc > 4 && !strcmp(argv[4], "quiet");

	for (i = 0; i < phases; i++) {
		phase(&seed, n);
		marker(i);
		if (i + 1 < phases) {
			if (!quiet)
				kill(getppid(), SIGUSR2);
			nanosleep(&t, NULL);
		}
	}
	printf("snapshot %u\n", sink);
	return 0;
}

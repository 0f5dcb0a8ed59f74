// SPDX-License-Identifier: MIT
/*
 * A workload a test paces: a stage of calls to first_fn, then, for each
 * line read from standard input (a fifo the test writes), a stage of calls
 * to later_fn; it ends at the end of its input. Each stage makes argv[1]
 * calls (default 20000), enough trace for a reader of the recording to see
 * the stage before the next one begins (tests/cli/follow.sh). A line
 * "dl LIB SYM" instead loads library LIB (dlopen) and makes the stage's
 * calls to its function SYM (a double of a double, such as libm's cos): a
 * mapping that comes while the recording is followed. Built with
 * STAGES_NO_DL (the static aarch64 build), such a line is refused.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned sink;

__attribute__((noinline)) unsigned first_fn(unsigned x)
{
	return x & 1 ? 3 * x + 1 : x >> 1;
}

__attribute__((noinline)) unsigned later_fn(unsigned x)
{
	return x & 2 ? 5 * x + 1 : x >> 2;
}

static void stage(unsigned (*fn)(unsigned), long n)
{
	unsigned x = 7;
	long i;

	for (i = 0; i < n; i++)
		x = fn(x | 1);
	sink = x;
}

static volatile double dsink;

/* "dl LIB SYM": @n calls to SYM of LIB; false when it cannot be loaded. */
#ifdef STAGES_NO_DL
static int dl_stage(const char *line, long n)
{
	(void)line, (void)n;
	return 0;
}
#else
static int dl_stage(const char *line, long n)
{
	char lib[128], sym[64];
	double (*fn)(double), x = 0.5;
	void *h;
	long i;

	if (sscanf(line, "dl %127s %63s", lib, sym) != 2 || !(h = dlopen(lib, RTLD_NOW)))
		return 0;
	*(void **)&fn = dlsym(h, sym);
	if (!fn)
		return 0;
	for (i = 0; i < n; i++)
		x = fn(x);
	dsink = x;
	return 1;
}
#endif

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	char line[256];

	stage(first_fn, n);
	while (fgets(line, sizeof(line), stdin)) {
		if (line[0] == 'd' && line[1] == 'l') {
			if (!dl_stage(line, n))
				fprintf(stderr, "stages: cannot call %s", line + 3);
			continue;
		}
		stage(later_fn, n);
	}
	printf("stages %u\n", sink);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * Measures the software tracer: runs a workload under the plugin, throws
 * the trace away, and prints instructions, PT bytes and wall time.
 *	emulate_bench PLUGIN [tsc|mtc|cyc|noretcomp ...] -- PROG ARGS...
 * Output: one line "insns=N pt_bytes=N sideband_bytes=N seconds=S".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/emulate.h"
#include "base/util.h"

struct acc {
	uint64_t insns, pt, sb;
};

static int on_aux(void *ctx, uint32_t pid, uint32_t tid, uint64_t off, const void *d, size_t n)
{
	((struct acc *)ctx)->pt += n;
	return 0;
}

static int on_sb(void *ctx, const void *rec, size_t n)
{
	((struct acc *)ctx)->sb += n;
	return 0;
}

int main(int argc, char **argv)
{
	struct prec_emu_config c = { 0 };
	struct acc a = { 0 };
	struct prec_emu_ops ops = { .ctx = &a, .aux = on_aux, .sideband = on_sb };
	struct prec_diag d = { 0 };
	uint64_t t0;
	int i, ws = 0, r;

	if (argc < 4) {
		fprintf(stderr, "usage: emulate_bench PLUGIN [tsc|mtc|cyc|noretcomp]... -- PROG ARGS\n");
		return 2;
	}
	c.plugin = argv[1];
	for (i = 2; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "tsc"))
			c.tsc = true;
		else if (!strcmp(argv[i], "mtc"))
			c.mtc = true;
		else if (!strcmp(argv[i], "cyc"))
			c.cyc = true;
		else if (!strcmp(argv[i], "noretcomp"))
			c.noretcomp = true;
	}
	if (i + 1 >= argc) {
		fprintf(stderr, "emulate_bench: no program after --\n");
		return 2;
	}
	c.argv = argv + i + 1;
	c.mtc_period = 3;
	c.insns = &a.insns;
	t0 = prec_now_ns();
	r = prec_emu_run(&c, &ops, &ws, &d);
	if (r < 0) {
		fprintf(stderr, "emulate_bench: %s%s%s\n", d.msg, d.hint[0] ? "; " : "", d.hint);
		return 1;
	}
	printf("insns=%llu pt_bytes=%llu sideband_bytes=%llu seconds=%.3f\n",
	       (unsigned long long)a.insns, (unsigned long long)a.pt, (unsigned long long)a.sb,
	       (double)(prec_now_ns() - t0) / 1e9);
	return prec_emu_exit_code(ws);
}

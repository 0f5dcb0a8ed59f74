// SPDX-License-Identifier: MIT
/*
 * The event-spec parser, table driven, against fixture sysfs/tracefs trees
 * built at run time by tests/fixtures/mksysroot.sh. Valid rows check what
 * the resolved list says (prec_evlist_dump); invalid rows check the message,
 * the column of the error and, where it matters, the hint.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spec/evspec.h"
#include "harness.h"
#include "spec/pmu.h"

static const char *self_path;

/*
 * A function with a known layout for +OFFSET rows: nop at +0, a 5-byte mov
 * at +1, ret at +6; 7 bytes.
 */
#if defined(__x86_64__)
__asm__(".text\n.globl probe_fixed\n.type probe_fixed,@function\nprobe_fixed:\n"
	"\tnop\n\tmovl $1, %eax\n\tret\n.size probe_fixed, .-probe_fixed\n");
#elif defined(__aarch64__)
/*
 * The arm64 build (make check-arm64): 12 bytes, so +1 and +6 are inside it;
 * the rows that need the x86-64 layout (its 7 bytes, the instruction
 * boundary at +3) are skipped there.
 */
__asm__(".text\n.globl probe_fixed\n.type probe_fixed,%function\nprobe_fixed:\n"
	"\tnop\n\tmov w0, #1\n\tret\n.size probe_fixed, .-probe_fixed\n");
#endif

enum { FULL, NOTRACER, NOTRACEFS, CSONLY, NROOTS };

static char roots[NROOTS][PATH_MAX];
static char self_real[PATH_MAX];

/* Builds the four fixture trees in the case's scratch directory. */
static void fixtures(void)
{
	static const char *const without[NROOTS] = { "", "intel_pt,cs_etm", "tracefs", "intel_pt" };
	const char *top = getenv("PTREC_TOP"), *ptrec = getenv("PTREC");
	char ptrec_buf[PATH_MAX], cmd[3 * PATH_MAX], notelf[PATH_MAX];
	FILE *f;
	int i;

	if (!top)
		top = ".";
	if (!ptrec) {
		/* The suite runs from $(B)/tests/; ptrec is $(B)/ptrec. */
		snprintf(ptrec_buf, sizeof(ptrec_buf), "%s", self_path);
		*strrchr(ptrec_buf, '/') = '\0';
		strcat(ptrec_buf, "/../ptrec");
		ptrec = ptrec_buf;
	}
	for (i = 0; i < NROOTS; i++) {
		snprintf(roots[i], sizeof(roots[i]), "%s/root%d", t_tmpdir(), i);
		if ((size_t)snprintf(cmd, sizeof(cmd),
				     "PTREC='%s' sh '%s/tests/fixtures/mksysroot.sh' '%s' %s%s", ptrec,
				     top, roots[i], without[i][0] ? "--without " : "",
				     without[i]) >= sizeof(cmd) ||
		    system(cmd)) {
			t_check(false, __FILE__, __LINE__, "fixture command failed: %s", cmd);
			exit(1);
		}
	}
	if (!realpath(self_path, self_real)) {
		t_check(false, __FILE__, __LINE__, "realpath %s", self_path);
		exit(1);
	}
	snprintf(notelf, sizeof(notelf), "%s/notelf", t_tmpdir());
	f = fopen(notelf, "w");
	if (f) {
		fputs("just text\n", f);
		fclose(f);
	}
}

/* Replaces %SELF% (this test binary) and %TMP% (the scratch dir). */
static void subst(const char *in, char *out, size_t size)
{
	size_t o = 0;

	while (*in && o + 1 < size) {
		const char *rep = NULL;
		size_t skip = 0;

		if (!strncmp(in, "%SELF%", 6)) {
			rep = self_real;
			skip = 6;
		} else if (!strncmp(in, "%TMP%", 5)) {
			rep = t_tmpdir();
			skip = 5;
		}
		if (rep) {
			o += (size_t)snprintf(out + o, size - o, "%s", rep);
			if (o >= size)
				o = size - 1;
			in += skip;
		} else {
			out[o++] = *in++;
		}
	}
	out[o] = '\0';
}

/* Collapses runs of spaces so dump checks do not depend on column widths. */
static void collapse(char *s)
{
	char *r = s, *w = s;

	while (*r) {
		if (*r == ' ' && w > s && w[-1] == ' ') {
			r++;
			continue;
		}
		*w++ = *r++;
	}
	*w = '\0';
}

#define END (-100)

struct row {
	const char *name;
	int root;
	bool emulate;
	const char *spec[4];
	/* valid rows: number of events, substrings of the (space-collapsed) dump */
	int nev;
	const char *dump[5];
	const char *nodump[2];
	/* invalid rows */
	const char *msg;
	int in;           /* index of the spec the column refers to */
	const char *at;   /* the column is where this text first appears in that spec */
	long pos;         /* else this column (END: the end of the spec) */
	const char *hint;
};

#define WINDOW "{intel_pt/aux-start-paused/k,syscalls:sys_enter_newuname/aux-resume/," \
	       "syscalls:sys_exit_newuname/aux-pause/}"
#define WINDOW_LONG "{intel_pt/aux-action=start-paused/k,syscalls:sys_enter_newuname/aux-action=" \
		    "resume/,syscalls:sys_exit_newuname/aux-action=pause/}"
#define NOT_AUX_LEADER "must have an AUX area event as group leader"

/* Valid rows are positional for readability; the fields left out are zero. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
static const struct row rows[] = {
	/* ---- generic events and modifiers ---- */
	{ "cycles", FULL, 0, { "cycles" }, 1, { "kind hardware", "type 0" }, { "exclude_" } },
	{ "cpu-cycles", FULL, 0, { "cpu-cycles" }, 1, { "kind hardware" }, { "config 0x" } },
	{ "instructions:u", FULL, 0, { "instructions:u" }, 1,
	  { "config 0x1\n", "exclude_kernel 1", "exclude_hv 1" }, { "exclude_user" } },
	{ "branches:k", FULL, 0, { "branches:k" }, 1,
	  { "config 0x4\n", "exclude_user 1", "exclude_hv 1" }, { "exclude_kernel" } },
	{ "branch-instructions", FULL, 0, { "branch-instructions" }, 1, { "config 0x4\n" } },
	{ "branch-misses:uk", FULL, 0, { "branch-misses:uk" }, 1, { "config 0x5\n", "exclude_hv 1" },
	  { "exclude_user", "exclude_kernel" } },
	{ "cache-references:h", FULL, 0, { "cache-references:h" }, 1,
	  { "config 0x2\n", "exclude_user 1", "exclude_kernel 1" }, { "exclude_hv" } },
	{ "cache-misses:ppp", FULL, 0, { "cache-misses:ppp" }, 1, { "config 0x3\n", "precise_ip 3" } },
	{ "bus-cycles:P", FULL, 0, { "bus-cycles:P" }, 1, { "config 0x6\n", "precise_ip 3" } },
	{ "ref-cycles:D", FULL, 0, { "ref-cycles:D" }, 1, { "config 0x9\n", "pinned 1" } },
	{ "stalled-cycles-frontend:I", FULL, 0, { "stalled-cycles-frontend:I" }, 1,
	  { "config 0x7\n", "exclude_idle 1" } },
	{ "stalled-cycles-backend:G", FULL, 0, { "stalled-cycles-backend:G" }, 1,
	  { "config 0x8\n", "exclude_host 1" }, { "exclude_guest" } },
	{ "idle-cycles-backend", FULL, 0, { "idle-cycles-backend" }, 1, { "config 0x8\n" } },
	{ "cycles:H", FULL, 0, { "cycles:H" }, 1, { "exclude_guest 1" }, { "exclude_host" } },
	{ "cycles:GH", FULL, 0, { "cycles:GH" }, 1, { "kind hardware" }, { "exclude_" } },
	{ "cycles:pp", FULL, 0, { "cycles:pp" }, 1, { "precise_ip 2" } },
	{ "cpu-clock", FULL, 0, { "cpu-clock" }, 1, { "kind software", "type 1\n" } },
	{ "task-clock:e", FULL, 0, { "task-clock:e" }, 1, { "config 0x1\n", "exclusive 1" } },
	{ "page-faults", FULL, 0, { "page-faults" }, 1, { "type 1\n", "config 0x2\n" } },
	{ "faults", FULL, 0, { "faults" }, 1, { "type 1\n", "config 0x2\n" } },
	{ "context-switches", FULL, 0, { "context-switches" }, 1, { "config 0x3\n" } },
	{ "cs", FULL, 0, { "cs" }, 1, { "type 1\n", "config 0x3\n" } },
	{ "cpu-migrations", FULL, 0, { "cpu-migrations" }, 1, { "config 0x4\n" } },
	{ "migrations", FULL, 0, { "migrations" }, 1, { "type 1\n", "config 0x4\n" } },
	{ "minor-faults", FULL, 0, { "minor-faults" }, 1, { "config 0x5\n" } },
	{ "major-faults", FULL, 0, { "major-faults" }, 1, { "config 0x6\n" } },
	{ "alignment-faults", FULL, 0, { "alignment-faults" }, 1, { "config 0x7\n" } },
	{ "emulation-faults", FULL, 0, { "emulation-faults" }, 1, { "config 0x8\n" } },
	{ "dummy", FULL, 0, { "dummy" }, 1, { "type 1\n", "config 0x9\n" } },
	{ "bpf-output", FULL, 0, { "bpf-output" }, 1, { "config 0xa\n" } },
	{ "cycles/period/u", FULL, 0, { "cycles/period=100000/u" }, 1,
	  { "sample_period 100000", "exclude_kernel 1" } },
	{ "instructions/freq/", FULL, 0, { "instructions/freq=1000/" }, 1,
	  { "sample_freq 1000", "freq 1" } },
	{ "name term", FULL, 0, { "cycles/name=Foo/" }, 1, { "name Foo" } },
	{ "S and W", FULL, 0, { "cycles:SW" }, 1, { "sample-read weak-group" } },
	{ "two groups", FULL, 0, { "cycles:u,instructions:k" }, 2,
	  { "2 events in 2 groups", "group 1: leader #1" } },
	{ "group modifiers", FULL, 0, { "{cycles,instructions}:u" }, 2,
	  { "1 group\n", "group 0: leader #0, 2 members" }, { "exclude_user" } },
	{ "group modifier union", FULL, 0, { "{cycles:k,instructions:k}:u" }, 2,
	  { "exclude_hv 1" }, { "exclude_user", "exclude_kernel" } },
	/* ---- raw ---- */
	{ "raw", FULL, 0, { "r1a8" }, 1, { "kind raw", "type 4\n", "config 0x1a8\n" } },
	{ "raw terms", FULL, 0, { "r1a8/period=10,config1=3/k" }, 1,
	  { "sample_period 10", "config1 0x3", "exclude_user 1" } },
	/* ---- breakpoints ---- */
	{ "mem rw", FULL, 0, { "mem:0x1000" }, 1,
	  { "type 5\n", "bp_type 3", "bp_addr 0x1000", "bp_len 4", "sample_period 1" } },
	{ "mem x", FULL, 0, { "mem:0x401000:x" }, 1, { "bp_type 4", "bp_len 8" } },
	{ "mem len w", FULL, 0, { "mem:0x1000/8:w" }, 1, { "bp_type 2", "bp_len 8" } },
	{ "mem len r mods", FULL, 0, { "mem:0x1002/2:r:u" }, 1,
	  { "bp_type 1", "bp_len 2", "exclude_kernel 1" } },
	{ "mem decimal", FULL, 0, { "mem:4096:w" }, 1, { "bp_addr 0x1000" } },
	{ "mem window", FULL, 0,
	  { "intel_pt/aux-start-paused/k", "mem:0x401000:x/aux-action=resume/",
	    "mem:0x402000:x/aux-action=pause/" }, 3,
	  { "group 0: leader #0, 3 members", "aux_resume 1", "aux_pause 1", "bp_type 4" } },
	/* ---- tracepoints ---- */
	{ "tracepoint", FULL, 0, { "syscalls:sys_enter_newuname" }, 1,
	  { "type 2\n", "config 0x2bd\n", "syscall 63 enter", "sample_period 1" } },
	{ "tracepoint exit", FULL, 0, { "syscalls:sys_exit_openat" }, 1,
	  { "config 0x28e\n", "syscall 257 exit" } },
	{ "tracepoint mods", FULL, 0, { "sched:sched_switch:u" }, 1,
	  { "config 0x140\n", "exclude_kernel 1" } },
	{ "tracepoint terms", FULL, 0, { "sched:sched_switch/period=2/" }, 1, { "sample_period 2" } },
	{ "tracepoint not syscall", FULL, 0, { "raw_syscalls:sys_enter" }, 1,
	  { "config 0x16\n", "id 22\n" } },
	/* ---- intel_pt ---- */
	{ "intel_pt default", FULL, 0, { "intel_pt//" }, 1,
	  { "kind aux tracer", "type 10\n", "config 0x300e601\n", "sample_period 1" } },
	{ "intel_pt bare", FULL, 0, { "intel_pt" }, 1, { "config 0x300e601\n" } },
	{ "intel_pt u", FULL, 0, { "intel_pt//u" }, 1, { "exclude_kernel 1", "exclude_hv 1" } },
	{ "intel_pt :u", FULL, 0, { "intel_pt//:u" }, 1, { "exclude_kernel 1" } },
	{ "intel_pt cyc k", FULL, 0, { "intel_pt/cyc/k" }, 1, { "config 0x300e603\n", "exclude_user 1" } },
	{ "intel_pt tsc=0", FULL, 0, { "intel_pt/noretcomp,tsc=0/" }, 1, { "config 0x300ea01\n" } },
	{ "intel_pt config=", FULL, 0, { "intel_pt/config=0x2001/" }, 1,
	  { "config 0x2001\n", "terms branch,pt\n" } },
	{ "intel_pt psb_period=0", FULL, 0, { "intel_pt/psb_period=0/" }, 1, { "config 0xe601\n" } },
	{ "intel_pt cyc_thresh", FULL, 0, { "intel_pt/cyc,cyc_thresh=13/" }, 1,
	  { "config 0x368e603\n" } },
	{ "intel_pt fields", FULL, 0, { "intel_pt/cyc,mtc_period=6,psb_period=2/u" }, 1,
	  { "config 0x201a603\n" } },
	{ "intel_pt name", FULL, 0, { "intel_pt/name=trace/" }, 1, { "name trace" } },
	{ "pt alias", FULL, 0, { "pt//u" }, 1, { "pmu intel_pt (type 10)" } },
	{ "pt alias cs_etm", CSONLY, 0, { "pt//u" }, 1, { "pmu cs_etm (type 11)" } },
	{ "aux leads group", FULL, 0, { "{intel_pt//,cycles}" }, 2, { "group 0: leader #0, 2 members" } },
	/* ---- cs_etm ---- */
	{ "cs_etm flags", FULL, 0, { "cs_etm/timestamp,cycacc/" }, 1,
	  { "kind aux tracer", "type 11\n", "config 0x10001000\n" } },
	{ "cs_etm sink", FULL, 0, { "cs_etm/@tmc_etr0/" }, 1, { "config2 0x7a3b9e12" } },
	{ "cs_etm alias", FULL, 0, { "cs_etm/autofdo/" }, 1, { "config2 0xa7c3dddd00000000" } },
	{ "cs_etm config3", FULL, 0, { "cs_etm/cc_threshold=4095/" }, 1, { "config3 0xfff" } },
	{ "cs_etm window", FULL, 0,
	  { "cs_etm/aux-action=start-paused/k,syscalls:sys_enter_openat/aux-action=resume/,"
	    "syscalls:sys_exit_openat/aux-action=pause/" }, 3,
	  { "group 0: leader #0, 3 members", "aux_start_paused 1", "type 11\n" } },
	/* ---- other PMUs ---- */
	{ "multi-range format", FULL, 0, { "cpu/event=0x1c3,umask=2/" }, 1,
	  { "kind pmu", "type 4\n", "config 0x1000002c3\n" } },
	{ "sysfs alias", FULL, 0, { "cpu/cpu-cycles/" }, 1, { "config 0x76\n" } },
	{ "alias and term", FULL, 0, { "cpu/branch-misses,cmask=1/" }, 1, { "config 0x10000c3\n" } },
	{ "pmu config1", FULL, 0, { "cpu/event=1,config1=5/" }, 1, { "config1 0x5" } },
	{ "msr alias", FULL, 0, { "msr/tsc/" }, 1, { "type 9\n" }, { "config 0x" } },
	/* ---- AUX windows ---- */
	{ "syscall window", FULL, 0, { WINDOW }, 3,
	  { "group 0: leader #0, 3 members", "aux_start_paused 1", "aux_resume 1", "aux_pause 1",
	    "config 0x300e601\n" } },
	{ "syscall window long", FULL, 0, { WINDOW_LONG }, 3,
	  { "aux_start_paused 1", "aux_resume 1", "aux_pause 1", "aux-action start-paused" } },
	{ "regroup -e", FULL, 0,
	  { "intel_pt/aux-action=start-paused/k", "syscalls:sys_enter_newuname/aux-action=resume/",
	    "syscalls:sys_exit_newuname/aux-action=pause/" }, 3,
	  { "1 group\n", "group 0: leader #0, 3 members", "from -e #3" } },
	{ "regroup commas", FULL, 0,
	  { "intel_pt/aux-start-paused/k,syscalls:sys_enter_newuname/aux-resume/" }, 2,
	  { "group 0: leader #0, 2 members" } },
	{ "regroup skips others", FULL, 0,
	  { "intel_pt//u", "cycles", "instructions/period=1000,aux-pause/" }, 3,
	  { "group 0: leader #0, 2 members", "#1 instructions/period=1000,aux-pause/",
	    "group 1: leader #2, 1 member", "#2 cycles" } },
	{ "counter window", FULL, 0,
	  { "intel_pt/aux-action=start-paused/u",
	    "instructions/period=50000,aux-action=resume,name=Resume/u",
	    "instructions/period=100000,aux-action=pause,name=Pause/u" }, 3,
	  { "group 0: leader #0, 3 members", "name Resume", "name Pause", "sample_period 50000" } },
	{ "cycles window", FULL, 0,
	  { "pt/aux-action=start-paused/k", "cycles/aux-action=pause,period=1000000/Pk",
	    "cycles/aux-action=resume,period=10500000/Pk" }, 3,
	  { "group 0: leader #0, 3 members", "precise_ip 3", "sample_period 10500000" } },
	{ "aux-output regroup", FULL, 0, { "intel_pt//", "cycles/aux-output,period=1000/pp" }, 2,
	  { "group 0: leader #0, 2 members", "aux_output 1" } },
	{ "aux-sample-size regroup", FULL, 0,
	  { "intel_pt//", "cycles/aux-sample-size=4096,period=1000/" }, 2,
	  { "group 0: leader #0, 2 members", "aux_sample_size 4096" } },
	{ "two windows", FULL, 0,
	  { "intel_pt/aux-start-paused/u", "syscalls:sys_enter_read/aux-resume/",
	    "syscalls:sys_exit_read/aux-pause/", "sched:sched_switch" }, 4,
	  { "group 0: leader #0, 3 members", "group 1: leader #3" } },
	/* ---- uprobes ---- */
	{ "uprobe", FULL, 0, { "uprobe:%SELF%:main" }, 1,
	  { "kind uprobe", "type 7\n", "sample_period 1" }, { "config 0x" } },
	{ "uretprobe", FULL, 0, { "uretprobe:%SELF%:main" }, 1,
	  { "kind uretprobe", "config 0x1\n" } },
	{ "uprobe offset", FULL, 0, { "uprobe:%SELF%:probe_fixed+1" }, 1, { ":probe_fixed+1 vaddr" } },
	{ "uprobe offset 6", FULL, 0, { "uprobe:%SELF%:probe_fixed+0x6" }, 1,
	  { ":probe_fixed+6 vaddr" } },
	{ "uprobe quoted", FULL, 0, { "uprobe:\"%SELF%\":t_main" }, 1, { ":t_main+0 vaddr" } },
	{ "uprobe window", FULL, 0,
	  { "intel_pt/aux-start-paused/u", "uprobe:%SELF%:t_main/aux-resume/",
	    "uretprobe:%SELF%:t_main/aux-pause/" }, 3,
	  { "group 0: leader #0, 3 members", "aux_resume 1", "aux_pause 1" } },
	/* ---- --emulate ---- */
	{ "emulated intel_pt", NOTRACER, 1, { "intel_pt//u" }, 1,
	  { "type 2113929217\n", "emulated", "config 0x300e601\n", "exclude_kernel 1" } },
	{ "emulated pt user only", FULL, 1, { "pt//" }, 1,
	  { "pmu intel_pt (type 2113929217)", "exclude_kernel 1", "exclude_hv 1" } },
	{ "emulated window no tracefs", NOTRACEFS, 1,
	  { "{intel_pt/aux-start-paused/u,syscalls:sys_enter_newuname/aux-resume/,"
	    "syscalls:sys_exit_newuname/aux-pause/}" }, 3,
	  { "syscall 63 enter", "syscall 63 exit", "id 0" } },
	{ "emulated counter", NOTRACER, 1,
	  { "intel_pt//u", "instructions/period=1000,aux-pause/u" }, 2,
	  { "group 0: leader #0, 2 members", "sample_period 1000" } },
	{ "emulated uprobe", NOTRACER, 1,
	  { "intel_pt/aux-start-paused/", "uprobe:%SELF%:t_main/aux-resume/" }, 2,
	  { "kind uprobe", "emulated" } },
	{ "emulated read", NOTRACEFS, 1, { "syscalls:sys_enter_read" }, 1, { "syscall 0 enter" } },

	/* ======== errors ======== */
	{ "empty", FULL, 0, { "" }, .msg = "empty event specification", .pos = 0 },
	{ "trailing comma", FULL, 0, { "cycles," }, .msg = "trailing ','", .pos = END },
	{ "leading comma", FULL, 0, { ",cycles" }, .msg = "empty event before ','", .pos = 0 },
	{ "double comma", FULL, 0, { "cycles,,instructions" }, .msg = "empty event before ','",
	  .pos = 7 },
	{ "unclosed group", FULL, 0, { "{cycles,instructions" }, .msg = "missing '}'", .pos = END,
	  .hint = "opens at column 0" },
	{ "stray brace", FULL, 0, { "cycles}" }, .msg = "unbalanced '}'", .pos = 6 },
	{ "empty group", FULL, 0, { "{}" }, .msg = "empty group", .pos = 1 },
	{ "group trailing comma", FULL, 0, { "{cycles,}" }, .msg = "expected an event before '}'",
	  .pos = 8 },
	{ "nested group", FULL, 0, { "{cycles,{instructions}}" }, .msg = "cannot be nested", .pos = 8 },
	{ "group bad modifier", FULL, 0, { "{cycles}:z" }, .msg = "unknown modifier 'z'", .pos = 9 },
	{ "bad modifier", FULL, 0, { "cycles:z" }, .msg = "unknown modifier 'z'", .pos = 7,
	  .hint = "u (user)" },
	{ "repeated modifier", FULL, 0, { "cycles:uu" }, .msg = "modifier 'u' given twice", .pos = 8 },
	{ "pppp", FULL, 0, { "cycles:pppp" }, .msg = "too many 'p'", .pos = 10 },
	{ "empty modifiers", FULL, 0, { "cycles:" }, .msg = "expected modifiers", .pos = END },
	{ "P and p", FULL, 0, { "cycles:pP" }, .msg = "'P' and 'p'", .pos = 7 },
	{ "group bad modifier 2", FULL, 0, { "{intel_pt//}:kz" }, .msg = "unknown modifier 'z'",
	  .pos = 14 },
	{ "tracepoint bad modifier", FULL, 0, { "sched:sched_switch:q" },
	  .msg = "unknown modifier 'q'", .pos = 19 },
	{ "misspelt event", FULL, 0, { "cycels" }, .msg = "unknown event 'cycels'", .pos = 0,
	  .hint = "did you mean 'cycles'?" },
	{ "misspelt event 2", FULL, 0, { "instructions,ucycles" }, .msg = "unknown event 'ucycles'",
	  .at = "ucycles", .hint = "did you mean 'cycles'?" },
	{ "misspelt pmu", FULL, 0, { "intel_tp//" }, .msg = "unknown PMU 'intel_tp'", .pos = 0,
	  .hint = "did you mean 'intel_pt'?" },
	{ "misspelt pmu cs", FULL, 0, { "cycles,cs_emt/timestamp/" }, .msg = "unknown PMU 'cs_emt'",
	  .pos = 7, .hint = "did you mean 'cs_etm'?" },
	{ "no intel_pt", NOTRACER, 0, { "intel_pt//" }, .msg = "no intel_pt PMU on this machine",
	  .pos = 0,
	  .hint = "AUX-capable PMUs here: none; see 'ptrec check', or record with --emulate" },
	{ "no intel_pt but cs_etm", CSONLY, 0, { "cycles,intel_pt//u" },
	  .msg = "no intel_pt PMU on this machine", .pos = 7, .hint = "AUX-capable PMUs here: cs_etm;" },
	{ "no cs_etm", NOTRACER, 0, { "cs_etm//" }, .msg = "no cs_etm PMU on this machine", .pos = 0 },
	{ "no tracer for pt", NOTRACER, 0, { "pt//" }, .msg = "no hardware tracer PMU", .pos = 0,
	  .hint = "--emulate" },
	{ "no window tracer", NOTRACER, 0, { WINDOW }, .msg = "no intel_pt PMU", .pos = 1 },
	{ "unclosed terms", FULL, 0, { "intel_pt/cyc" }, .msg = "missing closing '/'", .pos = END },
	{ "unclosed terms 2", FULL, 0, { "cycles/period=1" }, .msg = "missing closing '/'",
	  .pos = END },
	{ "terms trailing comma", FULL, 0, { "intel_pt/cyc,/" }, .msg = "expected a term after ','",
	  .pos = 13 },
	{ "terms leading comma", FULL, 0, { "intel_pt/,cyc/" }, .msg = "empty term before ','",
	  .pos = 9 },
	{ "psb_period range", FULL, 0, { "intel_pt/psb_period=16/" },
	  .msg = "value 16 is out of range for psb_period (4 bits: 0..15)", .pos = 20 },
	{ "mtc_period caps", FULL, 0, { "intel_pt/cyc,mtc_period=5,psb_period=2/u" },
	  .msg = "mtc_period=5 is not supported", .at = "5,", .hint = "0, 3, 6, 9" },
	{ "cyc_thresh range", FULL, 0, { "intel_pt/cyc_thresh=16/" },
	  .msg = "out of range for cyc_thresh (4 bits", .pos = 20 },
	{ "psb_period caps", FULL, 0, { "intel_pt/psb_period=7/" }, .msg = "psb_period=7 is not",
	  .pos = 20, .hint = "0, 1, 2, 3, 4, 5" },
	{ "misspelt term", FULL, 0, { "intel_pt/psb_perod=2/" }, .msg = "unknown term 'psb_perod'",
	  .pos = 9, .hint = "did you mean 'psb_period'?" },
	{ "misspelt aux term", FULL, 0, { "intel_pt//,cycles/aux-resum,period=9/" },
	  .msg = "unknown term 'aux-resum'", .pos = 18, .hint = "did you mean 'aux-resume'?" },
	{ "aux_action underscore", FULL, 0, { "intel_pt/aux_action=pause/" },
	  .msg = "unknown term 'aux_action'", .pos = 9, .hint = "did you mean 'aux-action'?" },
	{ "bad aux-action near", FULL, 0, { "intel_pt/aux-action=start_paused/" },
	  .msg = "bad aux-action 'start_paused'", .pos = 20,
	  .hint = "did you mean 'start-paused'? valid values: start-paused, pause, resume" },
	{ "bad aux-action", FULL, 0, { "intel_pt/aux-action=stop/" }, .msg = "bad aux-action 'stop'",
	  .pos = 20, .hint = "valid values: start-paused, pause, resume" },
	{ "aux-action no value", FULL, 0, { "intel_pt/aux-action/" }, .msg = "needs a value",
	  .pos = 9 },
	{ "leading dash", FULL, 0, { "intel_pt/-aux-action=start-paused/u" },
	  .msg = "term '-aux-action' starts with '-'", .pos = 9, .hint = "write 'aux-action'" },
	{ "short form value", FULL, 0, { "intel_pt/aux-pause=1/" }, .msg = "takes no value", .pos = 9 },
	{ "field needs value", FULL, 0, { "intel_pt/mtc_period/" },
	  .msg = "'mtc_period' needs a value (4 bits: 0..15)", .pos = 9 },
	{ "term twice", FULL, 0, { "intel_pt/cyc,cyc/" }, .msg = "term 'cyc' given twice", .pos = 13 },
	{ "ptw caps", FULL, 0, { "intel_pt/ptw/" }, .msg = "ptw is not supported", .pos = 9,
	  .hint = "caps/ptwrite is 0" },
	{ "notnt caps", FULL, 0, { "intel_pt/tsc,notnt/" }, .msg = "notnt is not supported",
	  .pos = 13 },
	{ "branch needs pt", FULL, 0, { "intel_pt/pt=0/" }, .msg = "branch needs pt", .pos = 12 },
	{ "fup_on_ptw", FULL, 0, { "intel_pt/fup_on_ptw/" }, .msg = "fup_on_ptw needs ptw", .pos = 9 },
	{ "flag range", FULL, 0, { "intel_pt/cyc=2/" }, .msg = "(1 bit: 0..1)", .pos = 13 },
	{ "bad number", FULL, 0, { "intel_pt/tsc=abc/" }, .msg = "bad number 'abc' for tsc",
	  .pos = 13 },
	{ "huge config", FULL, 0, { "intel_pt/config=99999999999999999999/" }, .msg = "too large",
	  .pos = 16 },
	{ "period zero", FULL, 0, { "cycles/period=0/" }, .msg = "period must be greater than 0",
	  .pos = 14 },
	{ "period and freq", FULL, 0, { "cycles/period=10,freq=10/" }, .msg = "both period and freq",
	  .pos = 17 },
	{ "config on hw", FULL, 0, { "cycles/config=1/" },
	  .msg = "'config' applies to PMU and raw events only", .pos = 7 },
	{ "config on raw", FULL, 0, { "r1a8/config=1/" }, .msg = "raw event's config is its rNNNN",
	  .pos = 5 },
	{ "unknown hw term", FULL, 0, { "cycles/foo/" }, .msg = "unknown term 'foo'", .pos = 7 },
	{ "name needs value", FULL, 0, { "intel_pt/name/" }, .msg = "needs a value", .pos = 9 },
	{ "aux-output value", FULL, 0, { "intel_pt/aux-output=2/" }, .msg = "aux-output is 0 or 1",
	  .pos = 20 },
	{ "aux-sample-size 0", FULL, 0, { "intel_pt/aux-sample-size=0/" },
	  .msg = "aux-sample-size must be greater than 0", .pos = 25 },
	{ "multi-range range", FULL, 0, { "cpu/event=0x1000/" },
	  .msg = "out of range for event (12 bits: 0..4095)", .pos = 10 },
	{ "umask range", FULL, 0, { "cpu/event=0xfff,umask=256/" }, .msg = "out of range for umask",
	  .pos = 22 },
	{ "alias value", FULL, 0, { "cpu/cpu-cycles=1/" }, .msg = "takes no value", .pos = 4 },
	{ "no sink", FULL, 0, { "cs_etm/@nosink/" }, .msg = "no sink 'nosink'", .pos = 7 },
	{ "preset range", FULL, 0, { "cs_etm/preset=16/" }, .msg = "out of range for preset",
	  .pos = 14 },
	{ "misspelt cs term", FULL, 0, { "cs_etm/timestmp/" }, .msg = "unknown term 'timestmp'",
	  .pos = 7, .hint = "did you mean 'timestamp'?" },
	{ "misspelt tracepoint", FULL, 0, { "syscalls:sys_enter_newunme" },
	  .msg = "unknown tracepoint 'syscalls:sys_enter_newunme'", .pos = 9,
	  .hint = "did you mean 'sys_enter_newuname'?" },
	{ "misspelt subsystem", FULL, 0, { "syscals:sys_enter_newuname" },
	  .msg = "unknown tracepoint subsystem 'syscals'", .pos = 0, .hint = "did you mean 'syscalls'?" },
	{ "tracepoint glob", FULL, 0, { "sched:sched_*" }, .msg = "wildcards are not supported",
	  .pos = 12 },
	{ "tracepoint no name", FULL, 0, { "sched:" }, .msg = "a tracepoint name", .pos = END },
	{ "no tracefs", NOTRACEFS, 0, { "syscalls:sys_enter_newuname" },
	  .msg = "tracefs is not mounted", .pos = 0, .hint = "PTREC_SYSROOT is set" },
	/* AUX rules, found by finish */
	{ "pause without tracer", FULL, 0, { "syscalls:sys_enter_newuname/aux-resume/" },
	  .msg = "there is none before this one", .pos = 28, .hint = "name the tracer first" },
	{ "pause before tracer", FULL, 0, { "syscalls:sys_enter_newuname/aux-resume/", "intel_pt//" },
	  .msg = "there is none before this one", .in = 0, .pos = 28 },
	{ "group leader not aux", FULL, 0, { "{cycles,instructions/period=10,aux-pause/}" },
	  .msg = NOT_AUX_LEADER, .at = "aux-pause", .hint = "leader of this group is 'cycles'" },
	{ "explicit group leader not aux", FULL, 0,
	  { "intel_pt//", "{cycles,instructions/aux-pause,period=5/}" }, .msg = NOT_AUX_LEADER,
	  .in = 1, .at = "aux-pause" },
	{ "aux not leader", FULL, 0, { "{cycles,intel_pt//,instructions/period=3,aux-resume/}" },
	  .msg = NOT_AUX_LEADER, .at = "aux-resume" },
	{ "pause on aux", FULL, 0, { "intel_pt/aux-pause/" },
	  .msg = "aux-action 'pause' cannot be used for the AUX area event itself", .pos = 9 },
	{ "resume on aux", FULL, 0, { "intel_pt/aux-action=resume/" },
	  .msg = "aux-action 'resume' cannot be used for the AUX area event itself", .pos = 9 },
	{ "start-paused on trigger", FULL, 0, { "intel_pt//,cycles/aux-start-paused,period=1/" },
	  .msg = "'start-paused' can only be used with an AUX area event", .pos = 18 },
	{ "pause and resume", FULL, 0,
	  { "intel_pt//", "syscalls:sys_enter_newuname/aux-pause,aux-resume/" },
	  .msg = "cannot both pause and resume", .in = 1, .pos = 28 },
	{ "pause and resume long", FULL, 0,
	  { "intel_pt//", "syscalls:sys_enter_newuname/aux-action=pause,aux-action=resume/" },
	  .msg = "cannot both pause and resume", .in = 1, .pos = 28 },
	{ "aux-output with pause", FULL, 0, { "intel_pt//", "cycles/aux-output,aux-pause,period=10/" },
	  .msg = "aux-output cannot be combined with aux pause/resume", .in = 1, .pos = 7 },
	{ "aux-output with sample size", FULL, 0,
	  { "intel_pt//", "cycles/aux-output,aux-sample-size=64,period=1/" },
	  .msg = "aux-output cannot be combined with aux-sample-size", .in = 1, .pos = 18 },
	{ "aux-output needs aux", FULL, 0, { "cycles/aux-output,period=1/" },
	  .msg = "there is none before", .pos = 7 },
	{ "counter needs period", FULL, 0, { "intel_pt//", "cycles/aux-pause/" },
	  .msg = "needs period=N or freq=N", .in = 1, .pos = 7 },
	{ "two tracers", FULL, 0, { "intel_pt//u", "cs_etm//k" },
	  .msg = "only one AUX tracer event is allowed", .in = 1, .pos = 0 },
	{ "two tracers one spec", FULL, 0, { "intel_pt//,intel_pt//" },
	  .msg = "only one AUX tracer event is allowed", .pos = 11 },
	/* breakpoints */
	{ "mem no address", FULL, 0, { "mem:" }, .msg = "breakpoint address", .pos = END },
	{ "mem bad address", FULL, 0, { "mem:zz" }, .msg = "breakpoint address", .pos = 4 },
	{ "mem length 3", FULL, 0, { "mem:0x1000/3" }, .msg = "length 3 is not 1, 2, 4 or 8",
	  .pos = 11 },
	{ "mem xw", FULL, 0, { "mem:0x1000:xw" }, .msg = "cannot also watch", .pos = 11 },
	{ "mem rr", FULL, 0, { "mem:0x1000:rr" }, .msg = "access 'r' given twice", .pos = 12 },
	{ "mem unaligned", FULL, 0, { "mem:0x1001/4:w" }, .msg = "not aligned", .pos = 4 },
	{ "mem x length", FULL, 0, { "mem:0x1000/4:x" }, .msg = "execute breakpoint has length 8",
	  .pos = 11 },
	{ "mem bad access", FULL, 0, { "mem:0x1000:ru" }, .msg = "bad breakpoint access 'ru'",
	  .pos = 11 },
	/* uprobes */
	{ "uprobe no path", FULL, 0, { "uprobe:" }, .msg = "expected a file path", .pos = 7 },
	{ "uprobe no symbol", FULL, 0, { "uprobe:/bin/true" }, .msg = "expected ':FUNCTION'",
	  .pos = END, .hint = "'\\:'" },
	{ "uprobe missing file", FULL, 0, { "uprobe:/nonexistent/prog:main" },
	  .msg = "cannot open '/nonexistent/prog'", .pos = 7 },
	{ "uprobe not elf", FULL, 0, { "uprobe:%TMP%/notelf:main" }, .msg = "is not an ELF file",
	  .pos = 7 },
	{ "uprobe misspelt", FULL, 0, { "uprobe:%SELF%:mian" }, .msg = "no function 'mian'",
	  .at = "mian", .hint = "did you mean 'main'?" },
	{ "uprobe beyond", FULL, 0, { "uprobe:%SELF%:main+100000" }, .msg = "is beyond the end of 'main'",
	  .at = "100000" },
	{ "uprobe beyond 2", FULL, 0, { "uprobe:%SELF%:probe_fixed+7" },
	  .msg = "offset 7 is beyond the end of 'probe_fixed' (7 bytes)", .at = "7" },
	{ "uprobe mid-instruction", FULL, 0, { "uprobe:%SELF%:probe_fixed+3" },
	  .msg = "offset 3 is inside an instruction of 'probe_fixed'", .at = "3",
	  .hint = "instructions start at +1 and +6" },
	{ "uretprobe offset", FULL, 0, { "uretprobe:%SELF%:main+4" }, .msg = "takes no offset",
	  .at = "+4" },
	{ "uprobe empty symbol", FULL, 0, { "uprobe:%SELF%:" }, .msg = "a function name or 0xADDRESS",
	  .pos = END },
	{ "uprobe empty offset", FULL, 0, { "uprobe:%SELF%:main+" }, .msg = "expected an offset",
	  .pos = END },
	{ "uprobe quote", FULL, 0, { "uprobe:\"%SELF%:main" }, .msg = "missing closing '\"'",
	  .pos = 7 },
	{ "uprobe not function", FULL, 0, { "uprobe:%SELF%:rows" }, .msg = "is not a function",
	  .at = "rows" },
	{ "uprobe needs tracer", FULL, 0, { "uprobe:%SELF%:main/aux-resume/" },
	  .msg = "there is none before", .at = "aux-resume" },
	/* --emulate */
	{ "emulate cycles", FULL, 1, { "cycles" }, .msg = "'cycles' is not available under --emulate",
	  .pos = 0, .hint = "software tracer takes" },
	{ "emulate kernel", FULL, 1, { "intel_pt//k" },
	  .msg = "emulation traces user space only; use u", .pos = 10 },
	{ "emulate group kernel", FULL, 1, { "{intel_pt//,instructions/period=10/}:k" },
	  .msg = "emulation traces user space only; use u", .pos = 37 },
	{ "emulate instructions k", NOTRACER, 1, { "intel_pt//u,instructions/period=7/k" },
	  .msg = "emulation traces user space only", .pos = 34 },
	{ "emulate instructions period", FULL, 1, { "instructions" },
	  .msg = "instructions needs period=N under --emulate", .pos = 0 },
	{ "emulate sched", FULL, 1, { "sched:sched_switch" },
	  .msg = "tracepoint 'sched:sched_switch' is not available under --emulate", .pos = 0 },
	{ "emulate syscall typo", NOTRACEFS, 1, { "syscalls:sys_enter_newunam" },
	  .msg = "unknown system call tracepoint", .pos = 9,
	  .hint = "did you mean 'sys_enter_newuname'?" },
	{ "emulate arm_spe", FULL, 1, { "arm_spe//" }, .msg = "emulate intel_pt and cs_etm, not arm_spe",
	  .pos = 0 },
	{ "emulate breakpoint", FULL, 1, { "mem:0x1000:x" }, .msg = "not available under --emulate",
	  .pos = 0 },
	{ "emulate ptw", FULL, 1, { "intel_pt/ptw/u" },
	  .msg = "ptw is not supported by this emulated intel_pt", .pos = 9 },
	/* lexical */
	{ "space", FULL, 0, { "cycles:u x" }, .msg = "unexpected space", .pos = 8 },
	{ "space 2", FULL, 0, { "cycles instructions" }, .msg = "unexpected space", .pos = 6 },
	{ "tab", FULL, 0, { "cycles,\tinstructions" }, .msg = "unexpected space", .pos = 7 },
	{ "slash after mods", FULL, 0, { "cycles/period=1/u/" }, .msg = "unexpected '/'", .pos = 17 },
	{ "colon after mods", FULL, 0, { "cycles/name=x/u:" }, .msg = "unexpected ':'", .pos = 15 },
	{ "no name", FULL, 0, { "/period=1/" }, .msg = "expected a PMU or event name before '/'",
	  .pos = 0 },
	{ "junk", FULL, 0, { "cycles,%" }, .msg = "unexpected '%'", .pos = 7 },
};
#pragma GCC diagnostic pop

static void table(void)
{
	size_t r;

	fixtures();
	for (r = 0; r < T_N(rows); r++) {
		const struct row *w = &rows[r];
		struct prec_evspec_opts o = { .emulate = w->emulate };
		struct prec_evlist *el;
		struct prec_diag d;
		char spec[4][8192];
		int err = 0, k, nspec = 0, failed_at = -1;
		bool fin = false;

#if !defined(__x86_64__)
		if (w->msg && strstr(w->spec[0], "probe_fixed")) {
			printf("skip row '%s': needs probe_fixed's x86-64 layout\n", w->name);
			continue;
		}
#endif
		setenv("PTREC_SYSROOT", roots[w->root], 1);
		for (k = 0; k < 4 && w->spec[k]; k++) {
			subst(w->spec[k], spec[k], sizeof(spec[k]));
			nspec++;
		}
		el = prec_evlist_new(&o);
		T_OK(el != NULL);
		for (k = 0; k < nspec && !err; k++) {
			err = prec_evlist_add(el, spec[k], &d);
			if (err)
				failed_at = k;
		}
		if (!err) {
			err = prec_evlist_finish(el, &d);
			fin = true;
		}
		if (!w->msg) {
			struct prec_buf b = { 0 };
			int i;

			t_check(err == 0, __FILE__, __LINE__, "row '%s': unexpected error %d: %s (pos %ld; %s)",
				w->name, err, d.msg, d.pos, d.hint);
			if (!err) {
				T_EQ_INT(prec_evlist_nr_events(el), w->nev);
				T_EQ_INT(prec_evlist_dump(el, &b), 0);
				collapse(b.data);
				for (i = 0; i < 5 && w->dump[i]; i++)
					t_check(strstr(b.data, w->dump[i]) != NULL, __FILE__, __LINE__,
						"row '%s': dump lacks \"%s\":\n%s", w->name, w->dump[i],
						b.data);
				for (i = 0; i < 2 && w->nodump[i]; i++)
					t_check(strstr(b.data, w->nodump[i]) == NULL, __FILE__, __LINE__,
						"row '%s': dump has \"%s\":\n%s", w->name, w->nodump[i],
						b.data);
			}
			prec_buf_free(&b);
		} else {
			const char *text = spec[w->in];
			long want = w->pos == END ? (long)strlen(text) : w->pos;

			if (w->at) {
				/* Looked for after the paths put in: they may hold the text too. */
				const char *from = strstr(text, self_real), *hit;

				from = from ? from + strlen(self_real) : text;
				if (strstr(text, t_tmpdir()) && strstr(text, t_tmpdir()) >= from)
					from = strstr(text, t_tmpdir()) + strlen(t_tmpdir());
				hit = strstr(from, w->at);

				t_check(hit != NULL, __FILE__, __LINE__, "row '%s': bad 'at'", w->name);
				want = hit ? (long)(hit - text) : -1;
			}
			t_check(err < 0, __FILE__, __LINE__, "row '%s': no error", w->name);
			if (err < 0) {
				t_check(strstr(d.msg, w->msg) != NULL, __FILE__, __LINE__,
					"row '%s': message \"%s\" lacks \"%s\"", w->name, d.msg, w->msg);
				t_check(d.pos == want, __FILE__, __LINE__,
					"row '%s': column %ld, expected %ld (%s)", w->name, d.pos, want,
					d.msg);
				t_check(d.code == err, __FILE__, __LINE__, "row '%s': diag code %d != %d",
					w->name, d.code, err);
				if (fin)
					t_check(prec_evlist_diag_text(el) &&
						!strcmp(prec_evlist_diag_text(el), text), __FILE__, __LINE__,
						"row '%s': error refers to the wrong spec", w->name);
				else
					t_check(failed_at == w->in, __FILE__, __LINE__,
						"row '%s': spec %d failed, expected %d", w->name, failed_at,
						w->in);
				if (w->hint)
					t_check(strstr(d.hint, w->hint) != NULL, __FILE__, __LINE__,
						"row '%s': hint \"%s\" lacks \"%s\"", w->name, d.hint,
						w->hint);
			}
		}
		prec_evlist_free(el);
		t_row(w->name, true);
	}
}

/* The group accessors agree with each event's group and leader fields. */
static void groups_api(void)
{
	static const char *const specs[] = {
		"cycles", "intel_pt/aux-start-paused/u", "sched:sched_switch",
		"syscalls:sys_enter_read/aux-resume/", "{instructions,branches}:u",
		"syscalls:sys_exit_read/aux-pause/",
	};
	struct prec_evlist *el;
	struct prec_diag d;
	size_t i, g, first, n, seen = 0;

	fixtures();
	setenv("PTREC_SYSROOT", roots[FULL], 1);
	el = prec_evlist_new(NULL);
	for (i = 0; i < T_N(specs); i++)
		T_EQ_INT(prec_evlist_add(el, specs[i], &d), 0);
	T_EQ_INT(prec_evlist_nr_groups(el), 0);
	T_EQ_INT(prec_evlist_finish(el, &d), 0);
	T_EQ_INT(prec_evlist_nr_events(el), 7);
	/* cycles | intel_pt + 2 triggers | sched_switch | {instructions, branches} */
	T_EQ_INT(prec_evlist_nr_groups(el), 4);
	for (g = 0; g < prec_evlist_nr_groups(el); g++) {
		T_EQ_INT(prec_evlist_group(el, g, &first, &n), 0);
		T_EQ_INT(first, seen);
		for (i = first; i < first + n; i++) {
			const struct prec_event *e = prec_evlist_event(el, i);

			T_EQ_INT(e->idx, i);
			T_EQ_INT(e->group, g);
			T_EQ_INT(e->leader, first);
		}
		seen += n;
	}
	T_EQ_INT(seen, 7);
	T_EQ_INT(prec_evlist_aux_index(el), 1);
	T_EQ_STR(prec_evlist_event(el, 1)->pmu, "intel_pt");
	T_EQ_STR(prec_evlist_event(el, 2)->text, "syscalls:sys_enter_read/aux-resume/");
	T_EQ_INT(prec_evlist_event(el, 2)->arg, 3);
	T_EQ_STR(prec_evlist_event(el, 3)->text, "syscalls:sys_exit_read/aux-pause/");
	T_EQ_STR(prec_evlist_event(el, 4)->text, "sched:sched_switch");
	T_EQ_STR(prec_evlist_event(el, 5)->text, "instructions");
	T_OK(prec_evlist_event(el, 5)->in_braces);
	T_EQ_INT(prec_evlist_group(el, 9, &first, &n), -EINVAL);
	T_OK(prec_evlist_event(el, 7) == NULL);
	/* finish is idempotent; adding afterwards is refused */
	T_EQ_INT(prec_evlist_finish(el, &d), 0);
	T_EQ_INT(prec_evlist_add(el, "cycles", &d), -EINVAL);
	prec_evlist_free(el);
}

/* The finished attrs of a one-spec list; NULL (a failed check) if it does not parse. */
static struct prec_evlist *finished(const char *spec)
{
	struct prec_evlist *el = NULL;
	struct prec_diag d;

	fixtures();
	setenv("PTREC_SYSROOT", roots[FULL], 1);
	if (!t_check(prec_evspec_parse(spec, NULL, &el, &d) == 0, __FILE__, __LINE__,
		     "%s: %s", spec, d.msg))
		return NULL;
	return el;
}

/*
 * Leader sampling ({...}:S): the leader samples and reads the group
 * (PERF_SAMPLE_READ, read_format GROUP|ID); members get no sample period.
 */
static void leader_sampling(void)
{
	struct prec_evlist *el = finished("{sched:sched_switch/period=3/,syscalls:sys_enter_read}:S");
	const struct prec_event *l, *m;

	if (!el)
		return;
	l = prec_evlist_event(el, 0);
	m = prec_evlist_event(el, 1);
	T_EQ_U64(l->attr.sample_period, 3);
	T_EQ_U64(l->attr.sample_type & PERF_SAMPLE_READ, PERF_SAMPLE_READ);
	T_EQ_U64(l->attr.read_format, PERF_FORMAT_GROUP | PERF_FORMAT_ID);
	T_EQ_U64(m->attr.sample_period, 0);
	T_EQ_U64(m->attr.freq, 0);
	T_EQ_U64(m->attr.sample_type & PERF_SAMPLE_READ, 0);
	prec_evlist_free(el);
	/* S on the leader alone leads the group too; without S nothing changes */
	el = finished("{sched:sched_switch:S,syscalls:sys_enter_read}");
	if (el) {
		T_EQ_U64(prec_evlist_event(el, 0)->attr.sample_type & PERF_SAMPLE_READ,
			 PERF_SAMPLE_READ);
		T_EQ_U64(prec_evlist_event(el, 1)->attr.sample_period, 0);
		prec_evlist_free(el);
	}
	el = finished("{sched:sched_switch,syscalls:sys_enter_read}");
	if (el) {
		T_EQ_U64(prec_evlist_event(el, 0)->attr.sample_type, 0);
		T_EQ_U64(prec_evlist_event(el, 0)->attr.read_format, 0);
		T_EQ_U64(prec_evlist_event(el, 1)->attr.sample_period, 1);
		prec_evlist_free(el);
	}
}

/* D and e belong to a group's leader: the kernel refuses them on members. */
static void pinned_exclusive_on_leader(void)
{
	struct prec_evlist *el = finished("{sched:sched_switch,syscalls:sys_enter_read}:D");

	if (el) {
		T_EQ_INT(prec_evlist_event(el, 0)->attr.pinned, 1);
		T_EQ_INT(prec_evlist_event(el, 1)->attr.pinned, 0);
		prec_evlist_free(el);
	}
	el = finished("{sched:sched_switch,syscalls:sys_enter_read:e}");
	if (el) {
		T_EQ_INT(prec_evlist_event(el, 0)->attr.exclusive, 1);
		T_EQ_INT(prec_evlist_event(el, 1)->attr.exclusive, 0);
		prec_evlist_free(el);
	}
	/* an event alone keeps its own */
	el = finished("sched:sched_switch:De");
	if (el) {
		T_EQ_INT(prec_evlist_event(el, 0)->attr.pinned, 1);
		T_EQ_INT(prec_evlist_event(el, 0)->attr.exclusive, 1);
		prec_evlist_free(el);
	}
}

/* A failed add keeps nothing of that spec; the list stays usable. */
static void failed_add_keeps_nothing(void)
{
	struct prec_evlist *el;
	struct prec_diag d;

	fixtures();
	setenv("PTREC_SYSROOT", roots[FULL], 1);
	el = prec_evlist_new(NULL);
	T_EQ_INT(prec_evlist_add(el, "cycles", &d), 0);
	T_OK(prec_evlist_add(el, "instructions,cycels", &d) < 0);
	T_EQ_INT(prec_evlist_nr_events(el), 1);
	T_EQ_INT(prec_evlist_add(el, "instructions", &d), 0);
	T_EQ_INT(prec_evlist_finish(el, &d), 0);
	T_EQ_INT(prec_evlist_nr_events(el), 2);
	prec_evlist_free(el);
}

static void bad_input(void)
{
	struct prec_evlist *el;
	struct prec_diag d;
	char *big;
	size_t i;

	fixtures();
	setenv("PTREC_SYSROOT", roots[FULL], 1);
	el = prec_evlist_new(NULL);
	T_EQ_INT(prec_evlist_add(el, NULL, &d), -EINVAL);
	T_EQ_INT(prec_evlist_finish(el, &d), -EINVAL);
	T_CONTAINS(d.msg, "no events");
	prec_evlist_free(el);
	prec_evlist_free(NULL);
	T_EQ_INT(prec_evlist_add(NULL, "cycles", &d), -EINVAL);
	/* Over-long specs are refused before parsing. */
	big = malloc(70000);
	memset(big, 'a', 69999);
	big[69999] = '\0';
	T_OK(prec_evspec_parse(big, NULL, &el, &d) == -E2BIG);
	T_OK(el == NULL);
	/* So are too many events; the column is where the limit was hit. */
	for (i = 0; i < 5000 * 3; i += 3)
		memcpy(big + i, "cs,", 3);
	big[i - 1] = '\0';
	T_EQ_INT(prec_evspec_parse(big, NULL, &el, &d), -E2BIG);
	T_EQ_INT(d.pos, 4096 * 3);
	free(big);
	/* Every prefix of a valid spec either parses or fails cleanly. */
	{
		const char *s = "{intel_pt/aux-start-paused,cyc,mtc_period=3/k,"
				"syscalls:sys_enter_newuname/aux-resume/,mem:0x1000/8:w:u}:u";
		char buf[256];
		size_t n = strlen(s);

		for (i = 0; i <= n; i++) {
			memcpy(buf, s, i);
			buf[i] = '\0';
			if (!prec_evspec_parse(buf, NULL, &el, &d))
				prec_evlist_free(el);
			else
				T_OK(d.pos >= 0 && d.pos <= (long)i && d.msg[0]);
		}
	}
}

static void kind_names(void)
{
	T_EQ_STR(prec_ev_kind_name(PREC_EV_AUX), "aux tracer");
	T_EQ_STR(prec_ev_kind_name(PREC_EV_URETPROBE), "uretprobe");
	T_EQ_STR(prec_aux_action_str(PREC_AUX_START_PAUSED), "start-paused");
	T_EQ_STR(prec_aux_action_str(PREC_AUX_PAUSE | PREC_AUX_RESUME), "pause+resume");
	T_EQ_STR(prec_aux_action_str(0), "none");
}

static const struct t_case cases[] = {
	T(table), T(groups_api), T(failed_add_keeps_nothing), T(bad_input), T(kind_names),
	T(leader_sampling), T(pinned_exclusive_on_leader),
};

int main(int argc, char **argv)
{
	self_path = argv[0];
	return t_main(argc, argv, cases, T_N(cases));
}

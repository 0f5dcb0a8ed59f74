// SPDX-License-Identifier: MIT
/*
 * The kernel model (record/kmodel.h) against the real kernel, on generated
 * cases: each case is a few calls through the seam (open, mmap, AUX mmap,
 * munmap, SET_OUTPUT, ENABLE/DISABLE, ID, PAUSE_OUTPUT, read, close) and,
 * where a child task is involved, its exec. Both kernels get the same calls
 * in the same order, interleaved (the child execs once: the real kernel
 * sees it, the model is told with prec_kmodel_task_exec()). A case passes
 * when every call gets the same answer from both:
 *   - open, ioctl, mmap, munmap, close: success, or the same errno;
 *   - mmap of the data ring: the control-page fields the kernel fills at
 *     mmap (size, data_offset, data_size, data_head, data_tail, and the AUX
 *     fields still zero);
 *   - read: the same length or errno; for PERF_FORMAT_GROUP the same number
 *     of events; with PERF_FORMAT_ID the ids name the same events (each
 *     side's ids are mapped back to the calls that opened them); with
 *     TOTAL_TIME_ENABLED, whether the event has been enabled at all (the
 *     time is zero or not). Reads are made only where the event's task has
 *     run since it could be enabled (this task, a CPU, or the child after
 *     its exec), and a child's event is not disabled before the exec, so a
 *     zero time means "never enabled" on both sides (the model counts
 *     wall-clock time, the kernel the time the task ran);
 *   - the records in each data ring (see below).
 *
 * The PMUs are the ones both kernels have here: software events,
 * tracepoints (syscalls:sys_enter_getpid / sys_exit_getpid) and uprobes (the
 * uprobe PMU on a function of this program). The mlock cases run the calls
 * as another user without CAP_IPC_LOCK and with a small RLIMIT_MEMLOCK, so
 * perf_mmap()'s budget applies to the real kernel as to the model.
 *
 * The records. Once a case's calls have run, the case process (pinned to
 * CPU 0, as its child is) makes occurrences: it calls getpid() (both
 * tracepoints fire), calls the uprobe'd function, renames itself
 * (prctl(PR_SET_NAME): COMM), pauses and resumes a ring (PAUSE_OUTPUT),
 * disables an event, or consumes what it read (data_tail = data_head); the
 * child's exec in the calls is one too (COMM with the exec flag, then EXIT).
 * The "sideband" cases' occurrences: the case process forks a child or
 * clones a thread that exits at once (FORK to its events, EXIT to the
 * copies of its inherit events; it waits by yielding, never asleep), maps
 * two pages of a file executable or not and unmaps them (MMAP or MMAP2 to
 * mmap, mmap2 or mmap_data events), sleeps in nanosleep (SWITCH out without
 * PREEMPT, then in, to context_switch events). The model is told each
 * through its producer side (prec_kmodel_hit(), prec_kmodel_comm(),
 * prec_kmodel_exit(), prec_kmodel_task_exec(), prec_kmodel_fork(),
 * prec_kmodel_mmap(), prec_kmodel_switch()), with the pids, address and
 * file (path, device, inode, generation) the real ones had. The
 * "records" cases make events for that: tracepoints, uprobes and dummies of
 * this task, of the child or of CPU 0, one sample_type of the fields the
 * model fills (IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD,
 * READ)
 * and sample_id_all or not for all, comm and task flags, wakeup_events and
 * watermarks, groups, rings shared by SET_OUTPUT, and 1-page rings flooded
 * with a few hundred getpid() calls (LOST once room is made). Every data
 * ring mapped in any case is read after each occurrence, on both sides, and
 * must hold the same records: type, misc and size (so a sample's size for
 * its sample_type and whether a sample_id trailer is there), and, where the
 * case has one layout, the fields the two kernels give alike: ids as the
 * steps that opened the events, pids and tids as this task, its child, the
 * tasks it made or its parent, CPU, period, LOST's id and count, COMM's
 * name, FORK's and EXIT's tasks, an MMAP's address, length, offset and file
 * name, an MMAP2's device, inode, generation, prot and flags too. The
 * records come in the same order, occurrence by occurrence and within one
 * (side-band records of several events of a ring in the order of the lists
 * perf_iterate_sb() walks: the CPU's newest first, then the task's newest
 * first), except that a run of samples of one occurrence is compared as a
 * set (perf_tp_event() walks the events in the order they were last
 * scheduled in, which depends on this task's last switch). SWITCH records
 * of preemptions are left out (timed_switch()). Then every open event is
 * polled once, in step order: POLLIN (a wakeup of its ring since the last
 * poll, at the watermark, wakeup_watermark or wakeup_events) and POLLHUP
 * (no ring, or its task exited) must match.
 *
 * What this cannot compare: an AUX PMU (intel_pt, cs_etm) has no real
 * counterpart here, so AUX mappings are compared only as refusals of a PMU
 * without an AUX area, AUX, ITRACE_START and AUX samples not at all, and
 * aux_action only as the refusals a software or tracepoint event gets;
 * records that depend on timing or on the rest of the system: samples of
 * cpu-clock, task-clock and context-switch events with a period, SWITCH
 * records of preemptions and yields (PREEMPT, and the switch in after
 * them), a child's own switches (context_switch is not inherited here),
 * SWITCH_CPU_WIDE (other processes), the STREAM_ID of an inherited event's
 * records once a child was made (the copy's or the parent's, as the two
 * swapped contexts or not), MMAP records of memory this process maps for
 * itself (the side-band events are enabled after the rings are mapped and
 * the record lists reserved; anonymous maps made while a case runs, as a
 * sanitizer build's allocator makes, are left out of the kernel's side) and of an exec'd program's loading (the
 * child's events ask for none), build ids (attr.build_id is not set), the
 * records of other processes a CPU event sees (a ring with a CPU event is
 * compared only with PERF_SAMPLE_TID, their samples left out, and not when
 * it lost records), the wakeups of a ring with a context_switch event
 * (preemptions' records fill it too); samples' IP, TIME and READ values
 * (READ by its size);
 * the fields the model does not fill (such rings are not compared);
 * write_backward rings; groups of events of different PMUs (the real
 * kernel's uprobe in a tracepoint's group misses hits); wakeups between
 * polls (only whether one came by the end); counts and times beyond zero
 * or not zero; permissions (run as root), cgroups, exclusive PMUs, and
 * perf_event_validate_size(). With -v a case says which of its rings were
 * not compared and why.
 *
 * Usage: kmodel_diff [--seed N] [--cases N] [--case K] [-v]
 * Prints "ok<TAB>#K [rings R, records N: SAMPLE .. COMM .. EXIT .. LOST .. FORK ..
 * MMAP .. SWITCH ..] DESC"
 * (what its rings held on the real kernel) or "FAIL<TAB>#K DESC<TAB>WHY" per
 * case, "skip<TAB>..." when the real kernel cannot be asked, and the seed
 * first. The generation depends only on the seed, so a failure reproduces
 * with --case K.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "record/kmodel.h"

enum op { OPEN, MMAP, AUXMAP, UNMAP, SETOUT, ENABLE, DISABLE, ID, PAUSE, READ, EXEC, CLOSE };
static const char *const op_name[] = { "open", "mmap", "auxmap", "munmap", "set_output",
				       "enable", "disable", "id", "pause_output", "read",
				       "exec", "close" };
enum ev { E_CPUCLK, E_TASKCLK, E_DUMMY, E_CSW, E_TP, E_TPX, E_UPROBE, E_NOPMU, E_NEV };
static const char *const ev_name[] = { "cpu-clock", "task-clock", "dummy", "cs", "tp-enter",
				       "tp-exit", "uprobe", "nopmu" };
enum pidk { P_SELF, P_CHILD, P_ANY, P_OTHER, P_GONE, P_NPID };
static const char *const pid_name[] = { "self", "child", "any", "other", "gone" };
#define C_LAST (-9)   /* the last CPU */
#define C_BEYOND (-8) /* nr_cpu_ids */
#define G_BADFD (-3)  /* group/target: a descriptor that is no event */

/* Attr modifiers. */
enum {
	M_INHERIT = 1 << 0, M_INHERIT_THREAD = 1 << 1, M_PINNED = 1 << 2, M_EXCL = 1 << 3,
	M_EOE = 1 << 4, M_ROE = 1 << 5, M_SIGTRAP = 1 << 6, M_SREAD = 1 << 7, M_STID = 1 << 8,
	M_CLK_MONO = 1 << 9, M_CLK_REAL = 1 << 10, M_CLK_BAD = 1 << 11, M_FREQ_BIG = 1 << 12,
	M_PERIOD63 = 1 << 13, M_BAD_SAMPLE = 1 << 14, M_BAD_READ = 1 << 15, M_PAUSE = 1 << 16,
	M_RESUME = 1 << 17, M_START_PAUSED = 1 << 18, M_AUX_OUTPUT = 1 << 19, M_ENABLED = 1 << 20,
	M_RF_GROUP = 1 << 21, M_RF_ID = 1 << 22, M_RF_TE = 1 << 23, M_RF_LOST = 1 << 24,
	M_BACKWARD = 1 << 25, M_NMODS = 26
};
static const char *const mod_name[] = { "inherit", "inherit_thread", "pinned", "exclusive",
	"enable_on_exec", "remove_on_exec", "sigtrap", "SAMPLE_READ", "SAMPLE_TID", "clock=mono",
	"clock=realtime", "clock=99", "freq=10M", "period=2^63", "sample_type=bit40",
	"read_format=bit20", "aux_pause", "aux_resume", "aux_start_paused", "aux_output",
	"enabled", "GROUP", "ID", "TIME_ENABLED", "LOST", "write_backward" };

struct step {
	enum op op;
	int a;       /* OPEN: enum ev; others: the step whose event they act on */
	int pid, cpu; /* OPEN */
	int b;       /* OPEN: leader step, -1 or G_BADFD; SETOUT: target step, -1, G_BADFD;
		      * MMAP/AUXMAP: pages; UNMAP: the mapping step; ENABLE/DISABLE: group flag;
		      * READ: buffer bytes less than needed (0: enough) */
	unsigned mods; /* OPEN */
	unsigned long flags; /* OPEN */
	unsigned rec; /* OPEN: R_* record settings */
	uint64_t st;  /* OPEN with R_ST: sample_type */
};

/* Record settings of an open (the record cases). */
enum {
	R_ST = 1 << 0,     /* sample_type is the step's st */
	R_SIDALL = 1 << 1, /* sample_id_all */
	R_COMM = 1 << 2,   /* attr.comm */
	R_TASK = 1 << 3,   /* attr.task */
	R_WAKE = 1 << 4,   /* wakeup_events = 2 */
	R_WMARK = 1 << 5,  /* watermark, wakeup_watermark = 512 */
	R_MMAP = 1 << 6,   /* attr.mmap */
	R_MMAP2 = 1 << 7,  /* attr.mmap2 */
	R_MMAPD = 1 << 8,  /* attr.mmap_data */
	R_CSW = 1 << 9,    /* attr.context_switch */
};

/*
 * What the case process does once every step has run, each occurrence on
 * the real kernel (this process really does it) and fed to the model
 * (record/kmodel.h: prec_kmodel_hit(), prec_kmodel_comm()).
 */
enum occk { O_GETPID, O_UPROBE, O_COMM, O_PAUSE, O_RESUME, O_CONSUME, O_DISABLE, O_FORK,
	    O_THREAD, O_MMAPX, O_MMAPD, O_SLEEP };
static const char *const occ_name[] = { "getpid", "uprobe", "comm", "pause", "resume",
					"consume", "disable", "fork", "thread", "mmap-exec",
					"mmap-data", "sleep" };
struct occ {
	enum occk k;
	int n; /* times; O_PAUSE/O_RESUME/O_DISABLE: the step of the event */
};
#define MAXOCC 8

#define MAXSTEPS 16
struct kcase {
	char kind[16];
	int n;
	struct step s[MAXSTEPS];
	bool mlock;        /* run as another user without CAP_IPC_LOCK */
	uint64_t memlock;  /* RLIMIT_MEMLOCK for mlock cases */
	struct occ occ[MAXOCC];
	int nocc;
};

/* A record of a data ring as comparable text, and the occurrence that wrote it. */
#define SIGLEN 240
struct rec {
	int occ;
	char sig[SIGLEN];
};

/* The records read so far from the data ring of one mapping (an MMAP step). */
struct rlist {
	struct rec *r;
	int n, cap;
	uint64_t pos;  /* read up to here (the running data_head position) */
	bool had;      /* the step mapped it */
	bool overflow; /* a record bigger than the ring, or running past data_head */
	int skip_in;   /* SWITCH in records still to leave out (after preemptions) */
};

/* One side's state while a case runs. */
struct side {
	const struct prec_kernel *k;
	struct prec_kmodel *m; /* NULL for the real kernel */
	int fd[MAXSTEPS];
	void *map[MAXSTEPS];
	size_t maplen[MAXSTEPS];
	uint64_t id[MAXSTEPS];
	int out[MAXSTEPS];     /* the step whose ring an event writes to (SET_OUTPUT), or -1 */
	bool opened[MAXSTEPS]; /* the open succeeded */
	struct rlist rl[MAXSTEPS];
};

static uint64_t rng_state;
static long page_size;
static int ncpus;
static uint64_t tp_enter, tp_exit;
static uint32_t uprobe_type;
static char self_path[4096];
static uint64_t uprobe_off;
static bool verbose;
/* The case's tasks (the case process and its child), known before any event is opened. */
static pid_t self_pid, child_pid;
/* The tasks the case process made in its occurrences (fork, thread), in order. */
static pid_t kids[MAXOCC];
static int nkids;
/* The file the mmap occurrences map, and what perf_event_mmap() says of it. */
static int map_fd = -1;
static char map_path[PREC_KMODEL_PATH_MAX];
static struct stat map_st;
static uint64_t map_gen;
#define CASE_CPU 0 /* the case process and its child run here */

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

static int pick(int n)
{
	return (int)(rnd() % (uint64_t)n);
}

static bool chance(int percent)
{
	return pick(100) < percent;
}

/* The function the uprobe cases probe (never called). */
__attribute__((noinline)) int kmd_probe_target(int x)
{
	return x * 7 + 1;
}

/* The file offset of kmd_probe_target, from /proc/self/maps. */
static uint64_t target_offset(void)
{
	uintptr_t a = (uintptr_t)&kmd_probe_target;
	unsigned long lo, hi, off;
	char line[512];
	uint64_t r = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %*s %lx", &lo, &hi, &off) == 3 && a >= lo && a < hi) {
			r = a - lo + off;
			break;
		}
	fclose(f);
	return r;
}

static void make_attr(struct prec_attr *a, int ev, unsigned mods)
{
	static const uint64_t sw[] = { PERF_COUNT_SW_CPU_CLOCK, PERF_COUNT_SW_TASK_CLOCK,
				       PERF_COUNT_SW_DUMMY, PERF_COUNT_SW_CONTEXT_SWITCHES };

	memset(a, 0, sizeof(*a));
	a->size = PREC_ATTR_SIZE;
	a->disabled = !(mods & M_ENABLED);
	a->exclude_kernel = 1;
	a->type = PERF_TYPE_SOFTWARE;
	if (ev <= E_CSW)
		a->config = sw[ev];
	if (ev == E_TP || ev == E_TPX) {
		a->type = PERF_TYPE_TRACEPOINT;
		a->config = ev == E_TP ? tp_enter : tp_exit;
		a->sample_period = 1;
	}
	if (ev == E_UPROBE) {
		a->type = uprobe_type;
		a->config1 = (uint64_t)(uintptr_t)self_path;
		a->config2 = uprobe_off;
		a->exclude_kernel = 0;
		a->sample_period = 1;
	}
	if (ev == E_NOPMU)
		a->type = 0x7ffffff0u;
	a->inherit = !!(mods & M_INHERIT);
	a->inherit_thread = !!(mods & M_INHERIT_THREAD);
	a->pinned = !!(mods & M_PINNED);
	a->exclusive = !!(mods & M_EXCL);
	a->enable_on_exec = !!(mods & M_EOE);
	a->remove_on_exec = !!(mods & M_ROE);
	a->sigtrap = !!(mods & M_SIGTRAP);
	a->write_backward = !!(mods & M_BACKWARD);
	if (mods & (M_SREAD | M_STID)) {
		a->sample_period = a->sample_period ? a->sample_period : 100000;
		a->sample_type |= (mods & M_SREAD ? PERF_SAMPLE_READ : 0) |
				  (mods & M_STID ? PERF_SAMPLE_TID : 0);
	}
	if (mods & (M_CLK_MONO | M_CLK_REAL | M_CLK_BAD)) {
		a->use_clockid = 1;
		a->clockid = mods & M_CLK_BAD ? 99 : mods & M_CLK_REAL ? CLOCK_REALTIME :
			     CLOCK_MONOTONIC;
	}
	if (mods & M_FREQ_BIG) {
		a->freq = 1;
		a->sample_freq = 10000000;
	}
	if (mods & M_PERIOD63)
		a->sample_period = 1ull << 63;
	if (mods & M_BAD_SAMPLE)
		a->sample_type |= 1ull << 40;
	a->read_format = (mods & M_BAD_READ ? 1ull << 20 : 0) |
			 (mods & M_RF_GROUP ? PERF_FORMAT_GROUP : 0) |
			 (mods & M_RF_ID ? PERF_FORMAT_ID : 0) |
			 (mods & M_RF_TE ? PERF_FORMAT_TOTAL_TIME_ENABLED : 0) |
			 (mods & M_RF_LOST ? PERF_FORMAT_LOST : 0);
	a->aux_pause = !!(mods & M_PAUSE);
	a->aux_resume = !!(mods & M_RESUME);
	a->aux_start_paused = !!(mods & M_START_PAUSED);
	a->aux_output = !!(mods & M_AUX_OUTPUT);
}

/* The attr of an open step: make_attr() and the step's record settings. */
static void step_attr(struct prec_attr *a, const struct step *s)
{
	make_attr(a, s->a, s->mods);
	if (s->rec & R_ST)
		a->sample_type = s->st;
	a->sample_id_all = !!(s->rec & R_SIDALL);
	a->comm = !!(s->rec & R_COMM);
	a->task = !!(s->rec & R_TASK);
	if (s->rec & R_WAKE)
		a->wakeup_events = 2;
	if (s->rec & R_WMARK) {
		a->watermark = 1;
		a->wakeup_watermark = 512;
	}
	a->mmap = !!(s->rec & R_MMAP);
	a->mmap2 = !!(s->rec & R_MMAP2);
	a->mmap_data = !!(s->rec & R_MMAPD);
	a->context_switch = !!(s->rec & R_CSW);
}

/* ---- generation ---- */

static int add(struct kcase *c, struct step s)
{
	if (c->n >= MAXSTEPS)
		return -1;
	c->s[c->n] = s;
	return c->n++;
}

static struct step op_open(int ev, int pid, int cpu, int group, unsigned mods, unsigned long fl)
{
	return (struct step){ OPEN, ev, pid, cpu, group, mods, fl | PERF_FLAG_FD_CLOEXEC, 0, 0 };
}

static struct step op(enum op o, int a, int b)
{
	return (struct step){ o, a, 0, 0, b, 0, 0, 0, 0 };
}

/* A target (task, CPU): mostly sane ones, sometimes one the kernel refuses. */
static void any_target(int *pid, int *cpu, bool bad_ok)
{
	static const int good[][2] = { { P_SELF, -1 }, { P_SELF, 0 }, { P_CHILD, -1 },
				       { P_CHILD, C_LAST }, { P_ANY, 0 }, { P_ANY, C_LAST },
				       { P_OTHER, -1 } };
	static const int bad[][2] = { { P_ANY, -1 }, { P_SELF, C_BEYOND }, { P_GONE, -1 },
				      { P_SELF, -2 } };

	if (bad_ok && chance(15)) {
		int i = pick(4);

		*pid = bad[i][0];
		*cpu = bad[i][1];
		return;
	}
	*pid = good[pick(7)][0];
	*cpu = good[pick(7)][1];
}

/* A few modifiers from the list of attr bits that the kernel checks. */
static unsigned some_mods(int max)
{
	static const unsigned pool[] = { M_INHERIT, M_INHERIT_THREAD, M_PINNED, M_EXCL, M_EOE,
		M_ROE, M_SIGTRAP, M_SREAD, M_STID, M_CLK_MONO, M_CLK_REAL, M_CLK_BAD, M_FREQ_BIG,
		M_PERIOD63, M_BAD_SAMPLE, M_BAD_READ, M_PAUSE, M_RESUME, M_START_PAUSED,
		M_AUX_OUTPUT, M_ENABLED, M_BACKWARD };
	unsigned m = 0;
	int i, n = pick(max + 1);

	for (i = 0; i < n; i++)
		m |= pool[pick((int)(sizeof(pool) / sizeof(pool[0])))];
	return m;
}

static int some_event(void)
{
	return chance(4) ? E_NOPMU : pick(E_NOPMU);
}

static void gen_single(struct kcase *c)
{
	int pid, cpu;
	unsigned long fl = chance(5) ? 1ul << 5 : 0;

	any_target(&pid, &cpu, true);
	add(c, op_open(some_event(), pid, cpu, chance(5) ? G_BADFD : -1, some_mods(3), fl));
	if (chance(50))
		add(c, op(MMAP, 0, (int[]){ 0, 1, 2, 3, 4, 8 }[pick(6)]));
	if (pid != P_CHILD && pid != P_OTHER && chance(40))
		add(c, op(READ, 0, 0));
}

static void gen_group(struct kcase *c)
{
	static const int tg[][2] = { { P_SELF, -1 }, { P_SELF, 0 }, { P_CHILD, -1 }, { P_ANY, 0 } };
	int t = pick(4), i, n = 1 + pick(3), lead;
	unsigned rf = chance(60) ? M_RF_GROUP | M_RF_ID | (chance(50) ? M_RF_TE : 0) : 0;
	unsigned lm = rf | (chance(30) ? M_INHERIT : 0) | (chance(20) ? M_PINNED : 0) |
		      (chance(20) ? M_ENABLED : 0) | (chance(10) ? M_CLK_MONO : 0);

	lead = add(c, op_open(some_event(), tg[t][0], tg[t][1], -1, lm, 0));
	for (i = 0; i < n; i++) {
		int pid = tg[t][0], cpu = tg[t][1], g = lead;
		unsigned mm = rf | (lm & (M_INHERIT | M_CLK_MONO | M_ENABLED));
		unsigned long fl = 0;

		if (chance(15))
			cpu = cpu == -1 ? 0 : cpu == 0 ? C_LAST : -1;
		if (chance(10))
			pid = pid == P_ANY ? P_SELF : P_ANY;
		if (chance(15))
			mm ^= M_INHERIT;
		if (chance(10))
			mm ^= M_CLK_MONO;
		if (chance(10))
			mm |= chance(50) ? M_PINNED : M_EXCL;
		if (chance(10))
			mm |= some_mods(1);
		if (i > 0 && chance(10))
			g = lead + 1; /* a member as leader */
		if (chance(8))
			fl = PERF_FLAG_FD_NO_GROUP;
		add(c, op_open(some_event(), pid, cpu, g, mm, fl));
	}
	if (chance(50))
		add(c, op(ENABLE, lead, 1));
	if (tg[t][0] != P_CHILD) {
		add(c, op(READ, lead, 0));
		if (chance(50))
			add(c, op(READ, lead + 1 + pick(n), 0));
	}
}

static void gen_mmap(struct kcase *c)
{
	static const int pages[] = { 0, 1, 2, 3, 4, 8, 16 };
	int pid, cpu, m1;

	any_target(&pid, &cpu, false);
	add(c, op_open(pick(E_UPROBE + 1), pid, cpu, -1, chance(30) ? M_INHERIT : 0, 0));
	m1 = add(c, op(MMAP, 0, pages[pick(7)]));
	if (chance(40))
		add(c, op(MMAP, 0, chance(50) ? c->s[m1].b : pages[pick(7)]));
	if (chance(40)) {
		struct step s = op(AUXMAP, 0, (int[]){ 1, 2, 3, 4 }[pick(4)]);

		s.pid = pick(3); /* 0: at the end of the data ring, 1: inside it, 2: elsewhere */
		add(c, s);
	}
	if (chance(40)) {
		add(c, op(UNMAP, 0, m1));
		add(c, op(MMAP, 0, pages[pick(7)]));
	}
	if (chance(30))
		add(c, op(PAUSE, 0, 0));
}

static void gen_setout(struct kcase *c)
{
	int p0, c0, p1, c1, a, b;
	unsigned m1 = 0;

	any_target(&p0, &c0, false);
	p1 = p0, c1 = c0;
	if (chance(40))
		any_target(&p1, &c1, false);
	if (chance(10))
		m1 |= chance(50) ? M_BACKWARD : M_CLK_MONO;
	if (chance(10))
		m1 |= M_INHERIT;
	a = add(c, op_open(pick(E_UPROBE + 1), p0, c0, -1, 0, 0));
	if (chance(80))
		add(c, op(MMAP, a, (int[]){ 0, 2, 4 }[pick(3)]));
	if (chance(25)) {
		/* The output at open: PERF_FLAG_FD_OUTPUT, in the group or not. */
		add(c, op_open(pick(E_UPROBE + 1), p1, c1, a, m1,
			       PERF_FLAG_FD_OUTPUT | (chance(50) ? PERF_FLAG_FD_NO_GROUP : 0)));
		return;
	}
	b = add(c, op_open(pick(E_UPROBE + 1), p1, c1, -1, m1, 0));
	if (chance(20))
		add(c, op(MMAP, b, 4));
	add(c, op(SETOUT, chance(85) ? b : a, chance(10) ? G_BADFD : chance(5) ? -1 : a));
	if (chance(30))
		add(c, op(PAUSE, b, 0));
	if (chance(20))
		add(c, op(SETOUT, b, -1));
}

static void gen_exec(struct kcase *c)
{
	int i, n = 1 + pick(3), first = -1;

	for (i = 0; i < n; i++) {
		unsigned mm = M_RF_TE | (chance(50) ? M_EOE : 0) | (chance(20) ? M_ENABLED : 0) |
			      (chance(15) ? M_ROE : 0) | (chance(20) ? M_INHERIT : 0);
		int g = first >= 0 && chance(40) ? first : -1;

		if (g >= 0)
			mm = (mm & ~M_INHERIT) | (c->s[first].mods & M_INHERIT);
		if (first < 0)
			first = add(c, op_open(pick(E_UPROBE + 1), P_CHILD, -1, -1, mm, 0));
		else
			add(c, op_open(pick(E_UPROBE + 1), P_CHILD, chance(20) ? 0 : -1, g, mm, 0));
	}
	/* enable_on_exec acts only in the exec'ing task's context. */
	if (chance(50))
		add(c, op_open(E_CPUCLK, P_ANY, 0, -1, M_EOE | M_RF_TE, 0));
	if (chance(30))
		add(c, op_open(E_TASKCLK, P_SELF, -1, -1, M_EOE | M_RF_TE, 0));
	/*
	 * An ENABLE before the exec, but no DISABLE: the kernel counts a task
	 * event's time only while the task runs, and the child has not run
	 * yet; the model counts wall-clock time.
	 */
	if (chance(20))
		add(c, op(ENABLE, pick(c->n), 0));
	add(c, op(EXEC, 0, 0));
	for (i = 0, n = c->n; i < n; i++)
		if (c->s[i].op == OPEN)
			add(c, op(READ, i, 0));
}

static void gen_mlock(struct kcase *c)
{
	static const int pages[] = { 16, 64, 128, 256, 512 };
	int i, n = 2 + pick(4), ev[6], maps[6];

	c->mlock = true;
	c->memlock = (uint64_t)page_size * (uint64_t)(int[]){ 0, 16, 64, 256 }[pick(4)];
	for (i = 0; i < n; i++) {
		int pid = chance(60) ? P_SELF : P_ANY;

		ev[i] = add(c, op_open(pick(E_TPX + 1), pid, pid == P_SELF ? -1 : pick(ncpus), -1, 0, 0));
		maps[i] = add(c, op(MMAP, ev[i], pages[pick(5)]));
	}
	if (chance(20)) {
		struct step s = op(AUXMAP, ev[0], 16);

		add(c, s);
	}
	if (chance(40)) {
		i = pick(n);
		add(c, op(UNMAP, ev[i], maps[i]));
		add(c, op(MMAP, ev[i], pages[pick(5)]));
	}
}

static void gen_read(struct kcase *c)
{
	unsigned rf = M_ENABLED | (chance(50) ? M_RF_GROUP : 0) | (chance(50) ? M_RF_ID : 0) |
		      (chance(50) ? M_RF_TE : 0) | (chance(40) ? M_RF_LOST : 0);
	int i, n = pick(3), cpu = chance(50) ? -1 : 0, pid = cpu == -1 ? P_SELF : P_ANY;

	add(c, op_open(pick(E_UPROBE + 1), pid, cpu, -1, rf, 0));
	for (i = 0; i < n; i++)
		add(c, op_open(pick(E_UPROBE + 1), pid, cpu, 0, rf, 0));
	if (n && chance(25))
		add(c, op(CLOSE, 1 + pick(n), 0));
	add(c, op(READ, pick(n + 1), chance(30) ? 8 : 0));
	if (chance(30))
		add(c, op(DISABLE, 0, 1));
	add(c, op(READ, 0, 0));
}

static void add_occ(struct kcase *c, enum occk k, int n)
{
	if (c->nocc < MAXOCC)
		c->occ[c->nocc++] = (struct occ){ k, n };
}

/*
 * The sample_type of a record case: the fields the model fills
 * (perf_output_sample()'s u64 fields and READ), TID always when a CPU-wide
 * event is in the case (its records of other processes are told apart by it).
 */
static uint64_t some_sample_type(bool cpu_wide)
{
	static const uint64_t f[] = { PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP, PERF_SAMPLE_TID,
				      PERF_SAMPLE_TIME, PERF_SAMPLE_ADDR, PERF_SAMPLE_ID,
				      PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU, PERF_SAMPLE_PERIOD,
				      PERF_SAMPLE_READ };
	uint64_t st = cpu_wide ? PERF_SAMPLE_TID : 0;
	size_t i;

	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (chance(40))
			st |= f[i];
	return st;
}

/* One event of a record case, opened on @pid/@cpu, its ring or output chosen after. */
static int gen_rec_event(struct kcase *c, int pid, int cpu, int lead, uint64_t st, unsigned rec)
{
	static const int evs[] = { E_TP, E_TPX, E_UPROBE, E_DUMMY };
	int ev = evs[pick(4)];
	unsigned mods = 0;

	if (lead >= 0 && chance(80)) /* mostly of the leader's PMU (pmu_class()) */
		ev = c->s[lead].a == E_TP ? E_TPX : c->s[lead].a == E_TPX ? E_TP : c->s[lead].a;

	if (pid == P_ANY && ev == E_DUMMY)
		ev = E_TP;
	if (pid != P_ANY) /* a CPU event would see every exec and name change of that CPU */
		rec |= (chance(40) ? R_COMM : 0) | (chance(20) ? R_TASK : 0);
	rec |= (chance(20) ? R_WAKE : 0) | (chance(15) ? R_WMARK : 0);
	if (pid == P_CHILD)
		mods |= chance(50) ? M_EOE : chance(50) ? M_ENABLED : 0;
	else
		mods |= chance(85) ? M_ENABLED : 0;
	if (pid == P_CHILD && chance(10))
		mods |= M_ROE;
	return add(c, (struct step){ OPEN, ev, pid, cpu, lead, mods, PERF_FLAG_FD_CLOEXEC,
				     rec | R_ST, st });
}

/* The occurrences of a record case after its steps. */
static void gen_rec_occ(struct kcase *c, int first, bool flood)
{
	int i, n = 1 + pick(4);

	if (flood) {
		/* A 1-page ring fills and loses; what is consumed makes room for LOST. */
		add_occ(c, O_GETPID, 200 + pick(800));
		add_occ(c, chance(70) ? O_CONSUME : O_UPROBE, 1);
		add_occ(c, O_GETPID, 1 + pick(40));
		return;
	}
	/* Each kind of record once at least, then a mix. */
	add_occ(c, O_GETPID, 1 + pick(3));
	add_occ(c, chance(50) ? O_UPROBE : O_COMM, 1);
	add_occ(c, c->occ[c->nocc - 1].k == O_UPROBE ? O_COMM : O_UPROBE, 1);
	for (i = 0; i < n; i++) {
		int k = pick(100);

		if (k < 35)
			add_occ(c, O_GETPID, 1 + pick(3));
		else if (k < 60)
			add_occ(c, O_UPROBE, 1 + pick(2));
		else if (k < 72)
			add_occ(c, O_COMM, 1);
		else if (k < 82)
			add_occ(c, O_PAUSE, first);
		else if (k < 90)
			add_occ(c, O_RESUME, first);
		else if (k < 95)
			add_occ(c, O_CONSUME, 1);
		else
			add_occ(c, O_DISABLE, pick(c->n));
	}
	add_occ(c, O_GETPID, 1);
}

/*
 * Events that write records into a ring: tracepoints and uprobes this
 * process fires, dummies for its COMM and EXIT records, of this task, its
 * child (which execs) or CPU 0, with one sample_type and sample_id_all for
 * all, sharing a ring by SET_OUTPUT or in groups, then occurrences.
 */
static void gen_records(struct kcase *c)
{
	bool child = chance(30), flood = !child && chance(20);
	bool wide = !child && !flood && chance(25);
	uint64_t st = some_sample_type(wide);
	unsigned sid = chance(60) ? R_SIDALL : 0;
	int i, n = 1 + pick(3), first = -1, mapped;

	int ccpu = chance(25) ? 0 : -1; /* one CPU for the case's task events: they may share a ring */

	for (i = 0; i < n; i++) {
		int pid = child ? P_CHILD : P_SELF, cpu = chance(10) ? -1 - ccpu : ccpu;
		int lead = first >= 0 && chance(25) ? first : -1;

		if (wide && i > 0 && chance(50))
			pid = P_ANY, cpu = 0;
		if (lead >= 0)
			pid = c->s[first].pid, cpu = c->s[first].cpu;
		if (first < 0 && flood)
			first = add(c, (struct step){ OPEN, E_TP, pid, cpu, -1, M_ENABLED,
						      PERF_FLAG_FD_CLOEXEC, sid | R_ST, st });
		else if (first < 0)
			first = gen_rec_event(c, pid, cpu, -1, st, sid);
		else
			gen_rec_event(c, pid, cpu, lead, st, sid);
	}
	mapped = add(c, op(MMAP, first, flood ? 1 : (int[]){ 1, 2, 4, 8 }[pick(4)]));
	(void)mapped;
	for (i = first + 1; i < n; i++) {
		int k = pick(100);

		if (k < 60)
			add(c, op(SETOUT, i, first));
		else if (k < 80)
			add(c, op(MMAP, i, (int[]){ 1, 2 }[pick(2)]));
	}
	for (i = 0; i < n; i++)
		if (!(c->s[i].mods & (M_ENABLED | M_EOE)) && chance(50))
			add(c, op(ENABLE, i, 0));
	if (child)
		add(c, op(EXEC, 0, 0));
	gen_rec_occ(c, first, flood);
}

/*
 * Side-band records of this task: dummies of this task (on CPU 0 when
 * inherited: an inherited per-task event has no ring of its own) asking for
 * task, comm, mmap, mmap2, mmap_data or context_switch records, with one
 * sample_type and sample_id_all for all, sharing a ring or not; then the
 * task forks, clones a thread, maps a file executable or not, sleeps or
 * renames itself. context_switch is never inherited here: a child's own
 * switches depend on when it runs.
 */
static void gen_sideband(struct kcase *c)
{
	static const enum occk pool[] = { O_FORK, O_THREAD, O_MMAPX, O_MMAPD, O_SLEEP, O_COMM };
	bool inh = chance(50);
	uint64_t st = some_sample_type(false) & ~(inh ? PERF_SAMPLE_READ : 0);
	unsigned sid = chance(60) ? R_SIDALL : 0;
	int i, n = 1 + pick(3), cpu = inh || chance(30) ? CASE_CPU : -1;

	for (i = 0; i < n; i++) {
		unsigned rec = sid | R_ST | (chance(50) ? R_TASK : 0) | (chance(35) ? R_COMM : 0) |
			       (chance(40) ? R_MMAP : 0) | (chance(40) ? R_MMAP2 : 0) |
			       (chance(40) ? R_MMAPD : 0) | (!inh && chance(60) ? R_CSW : 0);

		/*
		 * mmap2 with mmap, as perf asks: the kernel counts an event in
		 * nr_mmap_events for mmap or mmap_data only, and other
		 * processes' events count there too (account_event()).
		 */
		if (rec & R_MMAP2)
			rec |= R_MMAP;
		add(c, (struct step){ OPEN, E_DUMMY, P_SELF, cpu, -1, inh ? M_INHERIT : 0,
				      PERF_FLAG_FD_CLOEXEC, rec, st });
	}
	add(c, op(MMAP, 0, (int[]){ 2, 4, 8 }[pick(3)]));
	for (i = 1; i < n; i++)
		add(c, chance(70) ? op(SETOUT, i, 0) : op(MMAP, i, 2));
	/* Enabled last: the rings' own mappings make no MMAP records. */
	for (i = 0; i < n; i++)
		add(c, op(ENABLE, i, 0));
	add_occ(c, chance(50) ? O_FORK : O_THREAD, 1);
	add_occ(c, chance(50) ? O_MMAPX : O_MMAPD, 1);
	add_occ(c, O_SLEEP, 1);
	for (i = 0, n = pick(4); i < n; i++)
		add_occ(c, pool[pick(6)], 1);
}

static const struct {
	const char *name;
	void (*gen)(struct kcase *c);
	int weight;
} kinds[] = {
	{ "open", gen_single, 26 }, { "group", gen_group, 22 }, { "mmap", gen_mmap, 16 },
	{ "set_output", gen_setout, 16 }, { "exec", gen_exec, 10 }, { "mlock", gen_mlock, 6 },
	{ "read", gen_read, 4 }, { "records", gen_records, 60 }, { "sideband", gen_sideband, 40 },
};

static void gen_case(struct kcase *c)
{
	int total = 0, w, i;

	for (i = 0; i < (int)(sizeof(kinds) / sizeof(kinds[0])); i++)
		total += kinds[i].weight;
	w = pick(total);
	memset(c, 0, sizeof(*c));
	for (i = 0; w >= kinds[i].weight; i++)
		w -= kinds[i].weight;
	snprintf(c->kind, sizeof(c->kind), "%s", kinds[i].name);
	kinds[i].gen(c);
	/* Every other case: the occurrences of the events it may have left mapped. */
	if (!c->nocc) {
		add_occ(c, O_GETPID, 2);
		add_occ(c, O_UPROBE, 1);
		add_occ(c, O_COMM, 1);
	}
}

/* ---- running ---- */

/* The tasks and descriptors a case refers to. */
struct world {
	pid_t child;  /* blocked on a pipe until EXEC, then execs /bin/true */
	int child_w;  /* the pipe's write end */
	pid_t gone;   /* a task that has exited and been reaped */
	int badfd;    /* a descriptor that is no perf event */
};

static pid_t real_pid(const struct world *w, int pk)
{
	switch (pk) {
	case P_SELF: return 0;
	case P_CHILD: return w->child;
	case P_OTHER: return getppid();
	case P_GONE: return w->gone;
	default: return -1;
	}
}

static int real_cpu(int c)
{
	return c == C_LAST ? ncpus - 1 : c == C_BEYOND ? ncpus : c;
}

static void res_err(char *res, size_t n, int rc)
{
	if (rc < 0)
		snprintf(res, n, "%s", strerror(-rc));
	else
		snprintf(res, n, "ok");
}

static void res_page(char *res, size_t n, const struct perf_event_mmap_page *pg)
{
	snprintf(res, n, "ok size=%u data_offset=%llu data_size=%llu data_tail=%llu aux=%llu,%llu,%llu,%llu",
		 pg->size, (unsigned long long)pg->data_offset, (unsigned long long)pg->data_size,
		 (unsigned long long)pg->data_tail, (unsigned long long)pg->aux_head,
		 (unsigned long long)pg->aux_tail, (unsigned long long)pg->aux_offset,
		 (unsigned long long)pg->aux_size);
}

/* The step that opened the event of id @id on this side, or -1. */
static int step_of_id(const struct side *sd, int n, uint64_t id)
{
	int i;

	for (i = 0; i < n; i++)
		if (sd->fd[i] >= 0 && sd->id[i] == id)
			return i;
	return -1;
}

/* A read's answer as a comparable text: length, group size, ids as steps, enabled or not. */
static void res_read(char *res, size_t n, const struct side *sd, const struct kcase *c, int i,
		     const uint64_t *v, ssize_t len)
{
	struct prec_attr a;
	uint64_t rf, nr = 1, k;
	size_t at = 0, idx = 0;

	make_attr(&a, c->s[c->s[i].a].a, c->s[c->s[i].a].mods);
	rf = a.read_format;
	at += (size_t)snprintf(res + at, n - at, "len=%zd", len);
	if (rf & PERF_FORMAT_GROUP) {
		nr = v[idx++];
		at += (size_t)snprintf(res + at, n - at, " nr=%llu", (unsigned long long)nr);
	} else {
		idx++; /* the value */
	}
	if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
		at += (size_t)snprintf(res + at, n - at, " enabled=%d", v[idx++] != 0);
	if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
		idx++;
	for (k = 0; k < nr && idx < (size_t)len / 8 && at < n; k++) {
		if (rf & PERF_FORMAT_GROUP)
			idx++;
		if (rf & PERF_FORMAT_ID)
			at += (size_t)snprintf(res + at, n - at, " id=s%d",
					       step_of_id(sd, c->n, v[idx++]));
		if (rf & PERF_FORMAT_LOST)
			idx++;
	}
}

/* The AUX offset a step asks for, written into the control page of its data ring. */
static off_t aux_offset(struct side *sd, const struct kcase *c, int i)
{
	const struct step *s = &c->s[i];
	off_t right = page_size * 8;
	int j;

	for (j = i - 1; j >= 0; j--)
		if (c->s[j].op == MMAP && c->s[j].a == s->a && sd->map[j]) {
			struct perf_event_mmap_page *pg = sd->map[j];

			right = page_size * (c->s[j].b + 1);
			pg->aux_offset = (uint64_t)(s->pid == 1 ? page_size : right);
			pg->aux_size = (uint64_t)(page_size * s->b);
			break;
		}
	return s->pid == 1 ? page_size : s->pid == 2 ? right + page_size : right;
}

/*
 * Room for the records of a case before any event is enabled: growing the
 * list later could map memory (brk or mmap), which a mmap_data event sees.
 */
static void rl_reserve(struct rlist *l)
{
	if (l->cap)
		return;
	l->r = malloc(4096 * sizeof(*l->r));
	l->cap = l->r ? 4096 : 0;
}

static int do_map(struct side *sd, int i, int fd, size_t len, off_t off)
{
	void *p = NULL;
	int rc = sd->k->mmap(sd->k->ctx, fd, len, off, PROT_READ | PROT_WRITE, &p);

	if (!rc) {
		sd->map[i] = p;
		sd->maplen[i] = len;
	}
	return rc;
}

static int do_open(struct side *sd, const struct world *w, const struct step *s, int i)
{
	struct prec_attr a;
	int g = s->b == -1 ? -1 : s->b == G_BADFD ? w->badfd : sd->fd[s->b];
	int rc;

	step_attr(&a, s);
	rc = sd->k->open(sd->k->ctx, &a, real_pid(w, s->pid), real_cpu(s->cpu), g, s->flags);
	if (rc >= 0) {
		sd->fd[i] = rc;
		sd->opened[i] = true;
		if (s->flags & PERF_FLAG_FD_OUTPUT)
			sd->out[i] = s->b;
		prec_kernel_id(sd->k, rc, &sd->id[i]);
		rc = 0;
	}
	return rc;
}

/* Runs step @i of @c on one side; its answer as text in @res. */
static void run_step(struct side *sd, const struct world *w, const struct kcase *c, int i,
		     char *res, size_t n)
{
	const struct step *s = &c->s[i];
	const struct prec_kernel *k = sd->k;
	int fd = s->op == OPEN ? -1 : sd->fd[s->a], rc = 0;
	uint64_t buf[64];

	if (s->op != OPEN && s->op != UNMAP && s->op != EXEC && fd < 0) {
		snprintf(res, n, "no event");
		return;
	}
	switch (s->op) {
	case OPEN:
		rc = do_open(sd, w, s, i);
		break;
	case MMAP:
		rc = do_map(sd, i, fd, (size_t)page_size * (size_t)(1 + s->b), 0);
		if (!rc) {
			sd->rl[i].had = true;
			rl_reserve(&sd->rl[i]);
			res_page(res, n, sd->map[i]);
			return;
		}
		break;
	case AUXMAP:
		rc = do_map(sd, i, fd, (size_t)page_size * (size_t)s->b, aux_offset(sd, c, i));
		break;
	case UNMAP:
		if (!sd->map[s->b]) {
			snprintf(res, n, "not mapped");
			return;
		}
		rc = k->munmap(k->ctx, sd->map[s->b], sd->maplen[s->b]);
		sd->map[s->b] = NULL;
		break;
	case SETOUT:
		rc = prec_kernel_set_output(k, fd, s->b == -1 ? -1 : s->b == G_BADFD ? w->badfd :
						   sd->fd[s->b]);
		if (!rc)
			sd->out[s->a] = s->b;
		break;
	case ENABLE:
	case DISABLE:
		rc = k->ioctl(k->ctx, fd, s->op == ENABLE ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE,
			      s->b ? PERF_IOC_FLAG_GROUP : 0);
		break;
	case ID:
		rc = prec_kernel_id(k, fd, &buf[0]);
		break;
	case PAUSE:
		rc = prec_kernel_pause_output(k, fd, true);
		break;
	case READ: {
		ssize_t len = k->read(k->ctx, fd, buf, s->b ? (size_t)s->b : sizeof(buf));

		if (len >= 0) {
			res_read(res, n, sd, c, i, buf, len);
			return;
		}
		rc = (int)len;
		break;
	}
	case CLOSE:
		rc = k->close(k->ctx, fd);
		sd->fd[s->a] = -1;
		break;
	case EXEC:
		break;
	}
	res_err(res, n, rc);
}

/*
 * Runs as another user (this driver's own uid range: no other process
 * shares its user->locked_vm) without CAP_IPC_LOCK and with @memlock as
 * RLIMIT_MEMLOCK; every other capability stays, so only perf_mmap()'s
 * budget changes.
 */
static int drop_ipc_lock(uid_t uid, uint64_t memlock)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	struct rlimit rl = { memlock, memlock };

	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) || setresuid(uid, uid, uid))
		return -errno;
	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[0].permitted &= ~(1u << CAP_IPC_LOCK);
	d[0].effective = d[0].permitted;
	d[1].effective = d[1].permitted;
	if (syscall(SYS_capset, &h, d) || setrlimit(RLIMIT_MEMLOCK, &rl))
		return -errno;
	return 0;
}

static bool uses_child(const struct kcase *c)
{
	int i;

	for (i = 0; i < c->n; i++)
		if (c->s[i].op == EXEC || (c->s[i].op == OPEN && c->s[i].pid == P_CHILD))
			return true;
	return false;
}

static int make_world(struct world *w, const struct kcase *c)
{
	int p[2];

	w->child = w->gone = 0;
	w->child_w = -1;
	if (pipe(p))
		return -errno;
	w->badfd = p[0];
	w->child_w = p[1];
	w->gone = fork();
	if (w->gone == 0)
		_exit(0);
	waitpid(w->gone, NULL, 0);
	if (!uses_child(c))
		return 0;
	w->child = fork();
	if (w->child < 0)
		return -errno;
	if (w->child == 0) {
		char x;

		close(p[1]);
		if (read(p[0], &x, 1) == 1)
			execl("/bin/true", "true", (char *)NULL);
		_exit(0);
	}
	return 0;
}

/*
 * The child execs /bin/true (the real kernel runs perf_event_exec(), then
 * writes COMM with the exec flag) and exits (EXIT); the model is told the
 * same, on the CPU the child runs on.
 */
static void world_exec(struct world *w, struct prec_kmodel *m, int occ)
{
	struct prec_kmodel_task t = { w->child, w->child, CASE_CPU, (uint64_t)occ + 1 };

	if (w->child <= 0 || w->child_w < 0)
		return;
	if (write(w->child_w, "x", 1) != 1)
		return;
	close(w->child_w);
	w->child_w = -1;
	waitpid(w->child, NULL, 0);
	prec_kmodel_task_exec(m, w->child);
	prec_kmodel_comm(m, &t, "true", true);
	prec_kmodel_exit(m, &t, self_pid, self_pid);
}

static void world_end(struct world *w)
{
	if (w->child_w >= 0)
		close(w->child_w);
	if (w->child > 0)
		waitpid(w->child, NULL, 0);
	close(w->badfd);
}

static void describe(const struct kcase *c, char *out, size_t n)
{
	size_t at = (size_t)snprintf(out, n, "%s:", c->kind);
	int i, b;

	if (c->mlock && at < n)
		at += (size_t)snprintf(out + at, n - at, " [as a user without CAP_IPC_LOCK, "
				       "RLIMIT_MEMLOCK %llu pages]",
				       (unsigned long long)(c->memlock / (uint64_t)page_size));
	for (i = 0; i < c->n && at < n; i++) {
		const struct step *s = &c->s[i];

		at += (size_t)snprintf(out + at, n - at, " %d.%s", i, op_name[s->op]);
		if (s->op == OPEN && at < n) {
			at += (size_t)snprintf(out + at, n - at, "(%s %s/%d", ev_name[s->a],
					       pid_name[s->pid], real_cpu(s->cpu));
			if (s->b != -1 && at < n)
				at += (size_t)snprintf(out + at, n - at, s->b == G_BADFD ? " g=badfd" :
						       " g=%d", s->b);
			for (b = 0; b < M_NMODS && at < n; b++)
				if (s->mods & (1u << b))
					at += (size_t)snprintf(out + at, n - at, " %s", mod_name[b]);
			if ((s->rec & R_ST) && at < n)
				at += (size_t)snprintf(out + at, n - at, " st=%#llx%s%s%s%s%s",
						       (unsigned long long)s->st,
						       s->rec & R_SIDALL ? " sample_id_all" : "",
						       s->rec & R_COMM ? " comm" : "",
						       s->rec & R_TASK ? " task" : "",
						       s->rec & R_WAKE ? " wakeup_events=2" : "",
						       s->rec & R_WMARK ? " watermark=512" : "");
			if ((s->rec & (R_MMAP | R_MMAP2 | R_MMAPD | R_CSW)) && at < n)
				at += (size_t)snprintf(out + at, n - at, "%s%s%s%s",
						       s->rec & R_MMAP ? " mmap" : "",
						       s->rec & R_MMAP2 ? " mmap2" : "",
						       s->rec & R_MMAPD ? " mmap_data" : "",
						       s->rec & R_CSW ? " context_switch" : "");
			if ((s->flags & ~(unsigned long)PERF_FLAG_FD_CLOEXEC) && at < n)
				at += (size_t)snprintf(out + at, n - at, " flags=%#lx",
						       s->flags & ~(unsigned long)PERF_FLAG_FD_CLOEXEC);
			if (at < n)
				at += (size_t)snprintf(out + at, n - at, ")");
		} else if (s->op != EXEC && at < n) {
			at += (size_t)snprintf(out + at, n - at, "(%d,%d)", s->a, s->b);
		}
	}
	for (i = 0; i < c->nocc && at < n; i++)
		at += (size_t)snprintf(out + at, n - at, "%s %s*%d", i ? "," : " then", occ_name[c->occ[i].k],
				       c->occ[i].n);
}

static void side_end(struct side *sd, int n)
{
	int i;

	for (i = 0; i < MAXSTEPS; i++)
		free(sd->rl[i].r);
	for (i = 0; i < n; i++) {
		if (sd->map[i])
			sd->k->munmap(sd->k->ctx, sd->map[i], sd->maplen[i]);
		if (sd->fd[i] >= 0)
			sd->k->close(sd->k->ctx, sd->fd[i]);
	}
}

/* ---- the records in the data rings ---- */

/*
 * The sample_type and sample_id_all every open of the case shares, which
 * say how a record's fields are laid out whichever event wrote it; without
 * one layout (*ok false) records are compared by type, misc and size only.
 */
static void case_layout(const struct kcase *c, uint64_t *st, bool *sid, bool *ok)
{
	struct prec_attr a;
	bool any = false;
	int i;

	*ok = true;
	for (i = 0; i < c->n; i++) {
		if (c->s[i].op != OPEN)
			continue;
		step_attr(&a, &c->s[i]);
		if (any && (a.sample_type != *st || a.sample_id_all != *sid))
			*ok = false;
		*st = a.sample_type;
		*sid = a.sample_id_all;
		any = true;
	}
}

static const char *who(uint32_t pid)
{
	static const char *const kid[] = { "kid0", "kid1", "kid2", "kid3", "kid4", "kid5", "kid6",
					   "kid7" };
	int i;

	if (pid == (uint32_t)self_pid)
		return "self";
	if (child_pid > 0 && pid == (uint32_t)child_pid)
		return "child";
	for (i = 0; i < nkids; i++)
		if (pid == (uint32_t)kids[i])
			return kid[i];
	if (pid == (uint32_t)getppid())
		return "parent";
	return pid ? "other" : "0";
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* Appends to @out (@at so far, of @n). */
static size_t app(char *out, size_t n, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static size_t app(char *out, size_t n, size_t at, const char *fmt, ...)
{
	va_list ap;

	if (at >= n)
		return at;
	va_start(ap, fmt);
	at += (size_t)vsnprintf(out + at, n - at, fmt, ap);
	va_end(ap);
	return at;
}

/*
 * A STREAM_ID as the step of its event, or -2 in a case with inherit
 * events and a fork or thread: the kernel writes the writer's own id there, which is that of
 * the copy in a child or of the parent's event depending on whether the two
 * tasks swapped their equivalent contexts at a switch between them
 * (perf_event_context_sched_out(): context_equiv()), a matter of timing.
 */
static int stream_of(const struct side *sd, const struct kcase *c, uint64_t id)
{
	bool forks = false;
	int i;

	for (i = 0; i < c->nocc; i++)
		forks |= c->occ[i].k == O_FORK || c->occ[i].k == O_THREAD;
	for (i = 0; i < c->n && forks; i++)
		if (c->s[i].op == OPEN && (c->s[i].mods & M_INHERIT))
			return -2;
	return step_of_id(sd, c->n, id);
}

/* A SAMPLE's fields in perf_output_sample()'s order; *@foreign for another process's. */
static size_t sample_text(const struct side *sd, const struct kcase *c, uint64_t st,
			  const uint8_t *p, const uint8_t *end, char *out, size_t n, size_t at,
			  bool *foreign)
{
	if ((st & PERF_SAMPLE_IDENTIFIER) && p + 8 <= end)
		at = app(out, n, at, " ident=s%d", step_of_id(sd, c->n, rd64(p))), p += 8;
	if (st & PERF_SAMPLE_IP)
		p += 8; /* where the tracepoint fired in libc: not known to the model */
	if ((st & PERF_SAMPLE_TID) && p + 8 <= end) {
		uint32_t pid = (uint32_t)rd64(p), tid = (uint32_t)(rd64(p) >> 32);

		*foreign = strcmp(who(pid), "self") && strcmp(who(pid), "child");
		at = app(out, n, at, " pid=%s tid=%s", who(pid), who(tid));
		p += 8;
	}
	p += st & PERF_SAMPLE_TIME ? 8 : 0;
	p += st & PERF_SAMPLE_ADDR ? 8 : 0;
	if ((st & PERF_SAMPLE_ID) && p + 8 <= end)
		at = app(out, n, at, " id=s%d", step_of_id(sd, c->n, rd64(p))), p += 8;
	if ((st & PERF_SAMPLE_STREAM_ID) && p + 8 <= end)
		at = app(out, n, at, " stream=s%d", stream_of(sd, c, rd64(p))), p += 8;
	if ((st & PERF_SAMPLE_CPU) && p + 8 <= end)
		at = app(out, n, at, " cpu=%u", (uint32_t)rd64(p)), p += 8;
	if ((st & PERF_SAMPLE_PERIOD) && p + 8 <= end)
		at = app(out, n, at, " period=%llu", (unsigned long long)rd64(p));
	return at;
}

/*
 * The sample_id trailer of a non-SAMPLE record (perf_event__output_id_sample():
 * TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER), at the record's end; *@body_end
 * where the body stops.
 */
static size_t trailer_text(const struct side *sd, const struct kcase *c, uint64_t st,
			   const uint8_t *rec, size_t size, char *out, size_t n, size_t at,
			   size_t *body_end)
{
	static const uint64_t tr = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
				   PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
	size_t len = 8 * (size_t)__builtin_popcountll(st & tr);
	const uint8_t *p;

	if (len + 8 > size)
		return app(out, n, at, " trailer-missing");
	*body_end = size - len;
	p = rec + *body_end;
	if (st & PERF_SAMPLE_TID)
		at = app(out, n, at, " @pid=%s", who((uint32_t)rd64(p))), p += 8;
	p += st & PERF_SAMPLE_TIME ? 8 : 0;
	if (st & PERF_SAMPLE_ID)
		at = app(out, n, at, " @id=s%d", step_of_id(sd, c->n, rd64(p))), p += 8;
	if (st & PERF_SAMPLE_STREAM_ID)
		at = app(out, n, at, " @stream=s%d", stream_of(sd, c, rd64(p))), p += 8;
	if (st & PERF_SAMPLE_CPU)
		at = app(out, n, at, " @cpu=%u", (uint32_t)rd64(p)), p += 8;
	if (st & PERF_SAMPLE_IDENTIFIER)
		at = app(out, n, at, " @ident=s%d", step_of_id(sd, c->n, rd64(p)));
	return at;
}

/*
 * An MMAP or MMAP2 record's body: pid, tid, start, len, pgoff, for MMAP2
 * the device, inode, generation, prot and flags, then the file name (its
 * padding is in the size).
 */
static void mmap_text(const uint8_t *rec, size_t body_end, char *out, size_t n, size_t at)
{
	bool two = ((const struct perf_event_header *)rec)->type == PERF_RECORD_MMAP2;
	size_t name = two ? 72 : 40;

	if (body_end <= name)
		return;
	at = app(out, n, at, " pid=%s tid=%s start=%#llx len=%llu pgoff=%llu",
		 who((uint32_t)rd64(rec + 8)), who((uint32_t)(rd64(rec + 8) >> 32)),
		 (unsigned long long)rd64(rec + 16), (unsigned long long)rd64(rec + 24),
		 (unsigned long long)rd64(rec + 32));
	if (two)
		at = app(out, n, at, " dev=%u:%u ino=%llu gen=%llu prot=%#x flags=%#x",
			 (uint32_t)rd64(rec + 40), (uint32_t)(rd64(rec + 40) >> 32),
			 (unsigned long long)rd64(rec + 48), (unsigned long long)rd64(rec + 56),
			 (uint32_t)rd64(rec + 64), (uint32_t)(rd64(rec + 64) >> 32));
	app(out, n, at, " name=%.*s", (int)(body_end - name), (const char *)rec + name);
}

/*
 * A record as text: type, misc and size, then the fields both kernels give
 * alike when the case has one layout (ids as the steps that opened them,
 * pids as self/child, CPU, period, LOST's id and count, COMM's name, EXIT's
 * tasks); time and IP are left out. Empty for a sample of another process
 * (a CPU event sees every task on its CPU).
 */
static void rec_text(const struct side *sd, const struct kcase *c, const uint8_t *rec,
		     char *out, size_t n)
{
	const struct perf_event_header *h = (const void *)rec;
	uint64_t st = 0;
	bool sid = false, ok, foreign = false;
	size_t at, body_end = h->size;

	case_layout(c, &st, &sid, &ok);
	at = app(out, n, 0, "type=%u misc=%#x size=%u", h->type, h->misc, h->size);
	if (!ok)
		return;
	if (h->type == PERF_RECORD_SAMPLE) {
		at = sample_text(sd, c, st, rec + 8, rec + h->size, out, n, at, &foreign);
		if (foreign)
			out[0] = 0;
		return;
	}
	if (sid)
		at = trailer_text(sd, c, st, rec, h->size, out, n, at, &body_end);
	if (h->type == PERF_RECORD_LOST && body_end >= 24)
		at = app(out, n, at, " lost-id=s%d lost=%llu", step_of_id(sd, c->n, rd64(rec + 8)),
			 (unsigned long long)rd64(rec + 16));
	else if (h->type == PERF_RECORD_COMM && body_end > 16)
		at = app(out, n, at, " pid=%s tid=%s comm=%.16s", who((uint32_t)rd64(rec + 8)),
			 who((uint32_t)(rd64(rec + 8) >> 32)), (const char *)rec + 16);
	else if ((h->type == PERF_RECORD_EXIT || h->type == PERF_RECORD_FORK) && body_end >= 32)
		at = app(out, n, at, " pid=%s ppid=%s tid=%s ptid=%s", who((uint32_t)rd64(rec + 8)),
			 who((uint32_t)(rd64(rec + 8) >> 32)), who((uint32_t)rd64(rec + 16)),
			 who((uint32_t)(rd64(rec + 16) >> 32)));
	else if (h->type == PERF_RECORD_MMAP || h->type == PERF_RECORD_MMAP2)
		mmap_text(rec, body_end, out, n, at);
}

static void ring_copy(const uint8_t *data, uint64_t size, uint64_t pos, void *to, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		((uint8_t *)to)[i] = data[(pos + i) & (size - 1)];
}

/*
 * Whether a SWITCH record depends on timing: a switch out with PREEMPT (the
 * task could still run: preempted, or yielding while it waits for a child)
 * and the switch in that ends it (one per event that wrote the out). A
 * switch out without PREEMPT is a sleep the task chose (nanosleep): those
 * and the switch in that follows are compared.
 */
static bool timed_switch(struct rlist *l, const struct perf_event_header *h)
{
	if (h->type != PERF_RECORD_SWITCH)
		return false;
	if (h->misc & PERF_RECORD_MISC_SWITCH_OUT) {
		if (!(h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT))
			return false;
		l->skip_in++;
		return true;
	}
	if (!l->skip_in)
		return false;
	l->skip_in--;
	return true;
}

/* Reads the records of mapping @j from where the last read stopped to data_head. */
/*
 * An MMAP or MMAP2 of anonymous memory ("//anon"): the allocator's own (a
 * sanitizer build's allocator maps memory while a case runs). The cases map
 * only files, so such a record is never one of theirs.
 */
static bool own_anon_map(const uint8_t *rec)
{
	const struct perf_event_header *h = (const void *)rec;
	size_t name = h->type == PERF_RECORD_MMAP2 ? 72 : 40;

	if ((h->type != PERF_RECORD_MMAP && h->type != PERF_RECORD_MMAP2) || h->size <= name + 6)
		return false;
	return !strncmp((const char *)rec + name, "//anon", 7);
}

static void read_ring(struct side *sd, const struct kcase *c, int j, int occ)
{
	static uint8_t rec[65536];
	const struct perf_event_mmap_page *pg = sd->map[j];
	struct rlist *l = &sd->rl[j];
	uint64_t head, size;

	if (!pg || !pg->data_size)
		return;
	size = pg->data_size;
	head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	while (l->pos + sizeof(struct perf_event_header) <= head && !l->overflow) {
		const uint8_t *data = (const uint8_t *)pg + pg->data_offset;
		struct perf_event_header h;
		char text[SIGLEN];

		ring_copy(data, size, l->pos, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size > size || l->pos + h.size > head) {
			l->overflow = true;
			break;
		}
		ring_copy(data, size, l->pos, rec, h.size);
		l->pos += h.size;
		if (timed_switch(l, &h) || own_anon_map(rec))
			continue;
		rec_text(sd, c, rec, text, sizeof(text));
		if (!text[0])
			continue;
		if (l->n == l->cap) {
			struct rec *r = realloc(l->r, (size_t)(l->cap ? 2 * l->cap : 64) * sizeof(*r));

			if (!r) {
				l->overflow = true;
				break;
			}
			l->r = r;
			l->cap = l->cap ? 2 * l->cap : 64;
		}
		l->r[l->n].occ = occ;
		snprintf(l->r[l->n++].sig, SIGLEN, "%s", text);
	}
}

/* Reads every live mapping of one side; the records are those of occurrence @occ. */
static void read_rings(struct side *sd, const struct kcase *c, int occ)
{
	int j;

	for (j = 0; j < c->n; j++)
		if (c->s[j].op == MMAP && sd->map[j])
			read_ring(sd, c, j, occ);
}

/* The consumer frees what it has read: data_tail = data_head (after read_rings()). */
static void consume(struct side *sd, const struct kcase *c)
{
	int j;

	for (j = 0; j < c->n; j++) {
		struct perf_event_mmap_page *pg = sd->map[j];

		if (c->s[j].op == MMAP && pg && pg->data_size)
			__atomic_store_n(&pg->data_tail, sd->rl[j].pos, __ATOMIC_RELEASE);
	}
}

/* The PMU of an event kind: 0 software, 1 tracepoint, 2 uprobe, 3 none. */
static int pmu_class(int ev)
{
	return ev <= E_CSW ? 0 : ev <= E_TPX ? 1 : ev == E_UPROBE ? 2 : 3;
}

/* The step whose ring event @i writes to (its SET_OUTPUT chain's end). */
static int ring_root(const struct side *sd, int i)
{
	int hops;

	for (hops = 0; hops < MAXSTEPS && sd->out[i] >= 0; hops++)
		i = sd->out[i];
	return i;
}

/*
 * Why the ring of mapping @j cannot be compared, or NULL: an event writing
 * to it (on the real kernel) samples with timing (a timer or context-switch
 * event with a period), writes backward, samples fields the model does not
 * fill, or is a CPU event without PERF_SAMPLE_TID in one layout (its records
 * of other processes could not be told apart). *@filtered: a CPU event's
 * records are there, those of other processes left out, so any loss (which
 * theirs may have caused) makes the ring incomparable too.
 */
static const char *ring_why_not(const struct side *ks, const struct kcase *c, int j,
				bool *filtered)
{
	static const uint64_t filled = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
				       PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
				       PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
				       PERF_SAMPLE_READ;
	int root = ring_root(ks, c->s[j].a), i;
	uint64_t st = 0;
	bool sid = false, one;
	struct prec_attr a;

	case_layout(c, &st, &sid, &one);
	*filtered = false;
	for (i = 0; i < c->n; i++) {
		const struct step *s = &c->s[i];

		if (s->op != OPEN || !ks->opened[i] || ring_root(ks, i) != root)
			continue;
		step_attr(&a, s);
		if (a.write_backward)
			return "an event writes backward";
		if (s->a <= E_CSW && s->a != E_DUMMY && a.sample_period)
			return "a timer or context-switch event samples";
		if (a.sample_type & ~filled)
			return "a sample_type the model does not fill";
		if (s->pid == P_ANY && !(one && (st & PERF_SAMPLE_TID)))
			return "a CPU event sees other processes, no TID tells them apart";
		if (s->b >= 0 && !(s->flags & (PERF_FLAG_FD_NO_GROUP | PERF_FLAG_FD_OUTPUT)) &&
		    pmu_class(c->s[s->b].a) != pmu_class(s->a))
			return "a group of events of different PMUs "
			       "(the kernel's uprobe in a tracepoint's group misses hits)";
		*filtered |= s->pid == P_ANY;
	}
	return NULL;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	return x->occ != y->occ ? x->occ - y->occ : strcmp(x->sig, y->sig);
}

static bool is_sample(const struct rec *r)
{
	return !strncmp(r->sig, "type=9 ", 7);
}

/*
 * Puts each run of samples of one occurrence in a fixed order: the kernel
 * walks the CPU's list of the tracepoint's events (perf_tp_event()) in the
 * order they were last scheduled in, which depends on when this task was
 * last switched. Every other record keeps its place: side-band records come
 * in the order of the lists perf_iterate_sb() walks.
 */
static void sample_runs(struct rlist *l)
{
	int i = 0, j;

	while (i < l->n) {
		for (j = i; j < l->n && is_sample(&l->r[j]) && l->r[j].occ == l->r[i].occ; j++)
			;
		if (j - i > 1)
			qsort(l->r + i, (size_t)(j - i), sizeof(*l->r), rec_cmp);
		i = j > i ? j : i + 1;
	}
}

static bool has_lost(const struct rlist *l)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (!strncmp(l->r[i].sig, "type=2 ", 7))
			return true;
	return false;
}

/*
 * Compares the records of mapping @j: the same records in the same order,
 * occurrence by occurrence, except that a run of samples of one occurrence
 * is compared as a set (sample_runs()). The first difference into @why; 1
 * when compared, 0 when not comparable.
 */
static int compare_ring(struct side *ks, struct side *ms, const struct kcase *c, int j,
			char *why, size_t n)
{
	struct rlist *kl = &ks->rl[j], *ml = &ms->rl[j];
	bool filtered;
	const char *no = ring_why_not(ks, c, j, &filtered);
	int i;

	if (!kl->had || !ml->had)
		return 0;
	if (!no && filtered && (has_lost(kl) || has_lost(ml)))
		no = "a CPU event's ring lost records (other processes' may have taken the room)";
	if (no) {
		if (verbose)
			printf("#   ring of %d.mmap not compared: %s\n", j, no);
		return 0;
	}
	sample_runs(kl);
	sample_runs(ml);
	for (i = 0; i < kl->n || i < ml->n; i++) {
		const struct rec *k = i < kl->n ? &kl->r[i] : NULL, *m = i < ml->n ? &ml->r[i] : NULL;

		if (verbose && i < 40)
			printf("#   ring %d.mmap rec %d: kernel: %d %s; model: %d %s\n", j, i,
			       k ? k->occ : -1, k ? k->sig : "-", m ? m->occ : -1, m ? m->sig : "-");
		if (!k || !m || k->occ != m->occ || strcmp(k->sig, m->sig)) {
			snprintf(why, n, "ring of %d.mmap, record %d of %d/%d: kernel: %s%s (occurrence %d); "
				 "model: %s%s (occurrence %d)", j, i, kl->n, ml->n, k ? "" : "none",
				 k ? k->sig : "", k ? k->occ : -1, m ? "" : "none", m ? m->sig : "",
				 m ? m->occ : -1);
			return 1;
		}
	}
	if (kl->overflow != ml->overflow)
		snprintf(why, n, "ring of %d.mmap: unreadable on the %s side", j,
			 kl->overflow ? "kernel's" : "model's");
	return 1;
}

/* ---- the occurrences ---- */

static int (*volatile probe_fn)(int) = kmd_probe_target;

static struct prec_kmodel_task self_task(int occ)
{
	return (struct prec_kmodel_task){ self_pid, self_pid, CASE_CPU, (uint64_t)occ + 1 };
}

static char thread_stack[65536] __attribute__((aligned(16)));

static int thread_fn(void *arg)
{
	(void)arg;
	return 0; /* clone()'s caller then makes the exit system call */
}

/*
 * This task forks a child, or clones a thread, that exits at once; it
 * waits without sleeping (its switches out are PREEMPT ones, left out:
 * timed_switch()) until the task is gone, so that its EXIT has been
 * written: a zombie for waitpid(WNOHANG), a thread until tgkill() no longer
 * finds it (after perf_event_exit_task() in do_exit()). The model is told
 * the same tasks: FORK (and the copies of the inherit events), then EXIT,
 * whose ppid and ptid are the real parent's pid (a thread's is its
 * process's parent).
 */
static void occur_task(struct side *sd, const struct prec_kmodel_task *t, bool thread)
{
	struct prec_kmodel_task kt = *t;
	pid_t p, parent = thread ? getppid() : self_pid;

	if (sd->m) {
		if (nkids <= 0)
			return;
		kt.pid = thread ? self_pid : kids[nkids - 1];
		kt.tid = kids[nkids - 1];
		prec_kmodel_fork(sd->m, t, kt.pid, kt.tid, thread);
		prec_kmodel_exit(sd->m, &kt, parent, parent);
		return;
	}
	if (nkids >= MAXOCC)
		return;
	if (thread) {
		pid_t ptid = 0, ctid = 0;

		p = clone(thread_fn, thread_stack + sizeof(thread_stack),
			  CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
			  CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID, NULL, &ptid,
			  NULL, &ctid);
		while (p > 0 && !syscall(SYS_tgkill, self_pid, p, 0))
			sched_yield();
	} else {
		p = fork();
		if (p == 0)
			_exit(0);
		while (p > 0 && waitpid(p, NULL, WNOHANG) == 0)
			sched_yield();
	}
	if (p > 0)
		kids[nkids++] = p;
}

/*
 * This task maps two pages of a file (the second and third: pgoff one
 * page), executable or not, and unmaps them at once (munmap() writes no
 * record; the next mapping cannot merge with this one). The model is told
 * the vma as perf_event_mmap() finds it: where it is, the file's path,
 * device, inode and generation.
 */
static void occur_mmap(struct side *sd, const struct prec_kmodel_task *t, bool exec)
{
	static uint64_t addr; /* where the real mapping was, 0: it failed */
	int prot = PROT_READ | (exec ? PROT_EXEC : 0);
	size_t len = 2 * (size_t)page_size;
	void *p;

	if (map_fd < 0)
		return;
	if (sd->m) {
		struct prec_kmodel_vma v = { addr, len, (uint64_t)page_size, prot, MAP_PRIVATE,
					     major(map_st.st_dev), minor(map_st.st_dev),
					     (uint64_t)map_st.st_ino, map_gen, map_path };

		if (addr)
			prec_kmodel_mmap(sd->m, t, &v);
		return;
	}
	p = mmap(NULL, len, prot, MAP_PRIVATE, map_fd, page_size);
	addr = p == MAP_FAILED ? 0 : (uint64_t)(uintptr_t)p;
	if (addr)
		munmap(p, len);
}

/*
 * This task sleeps (nanosleep: it is off the run queue when it switches
 * out, so no PREEMPT) and wakes; the model is told the switch out to the
 * idle task and back.
 */
static void occur_sleep(struct side *sd, const struct prec_kmodel_task *t)
{
	struct prec_kmodel_task idle = { 0, 0, t->cpu, t->time };
	struct timespec ts = { 0, 1000000 };

	if (!sd->m) {
		nanosleep(&ts, NULL);
		return;
	}
	prec_kmodel_switch(sd->m, t, &idle, false, false);
	prec_kmodel_switch(sd->m, t, &idle, true, false);
}

/* One occurrence on one side: done by this process (the real kernel) or told (the model). */
static void occur(struct side *sd, const struct kcase *c, const struct occ *o, int occ)
{
	struct prec_kmodel_task t = self_task(occ);
	struct prec_attr key;
	char name[16];
	int fd = o->n >= 0 && o->n < c->n ? sd->fd[o->n] : -1;

	snprintf(name, sizeof(name), "kmd-%d", occ);
	switch (o->k) {
	case O_GETPID:
		if (!sd->m) {
			syscall(SYS_getpid);
			break;
		}
		make_attr(&key, E_TP, 0);
		prec_kmodel_hit(sd->m, &t, &key, 0);
		make_attr(&key, E_TPX, 0);
		prec_kmodel_hit(sd->m, &t, &key, 0);
		break;
	case O_UPROBE:
		make_attr(&key, E_UPROBE, 0);
		if (!sd->m)
			probe_fn(occ);
		else if (uprobe_type)
			prec_kmodel_hit(sd->m, &t, &key, (uint64_t)(uintptr_t)kmd_probe_target);
		break;
	case O_COMM:
		if (!sd->m)
			prctl(PR_SET_NAME, name, 0, 0, 0);
		else
			prec_kmodel_comm(sd->m, &t, name, false);
		break;
	case O_PAUSE:
	case O_RESUME:
		if (fd >= 0)
			prec_kernel_pause_output(sd->k, fd, o->k == O_PAUSE);
		break;
	case O_DISABLE:
		if (fd >= 0)
			sd->k->ioctl(sd->k->ctx, fd, PERF_EVENT_IOC_DISABLE, 0);
		break;
	case O_CONSUME:
		consume(sd, c);
		break;
	case O_FORK:
	case O_THREAD:
		occur_task(sd, &t, o->k == O_THREAD);
		break;
	case O_MMAPX:
	case O_MMAPD:
		occur_mmap(sd, &t, o->k == O_MMAPX);
		break;
	case O_SLEEP:
		occur_sleep(sd, &t);
		break;
	}
}

/* Every occurrence of the case on both sides, the rings read after each; *@occ counts them. */
static void drive(struct side *ks, struct side *ms, const struct kcase *c, int *occ)
{
	int i, r;

	for (i = 0; i < c->nocc; i++)
		for (r = 0; r < (c->occ[i].k <= O_UPROBE ? c->occ[i].n : 1); r++) {
			occur(ks, c, &c->occ[i], *occ);
			read_rings(ks, c, *occ);
			occur(ms, c, &c->occ[i], *occ);
			read_rings(ms, c, *occ);
			++*occ;
		}
}

/* Compares every ring mapped in the case; what was compared into @sum. */
static void compare_rings(struct side *ks, struct side *ms, const struct kcase *c, char *why,
			  size_t n, char *sum, size_t sn)
{
	int j, k, rings = 0, recs = 0, by[7] = { 0 };

	for (j = 0; j < c->n && !why[0]; j++) {
		if (c->s[j].op != MMAP || !compare_ring(ks, ms, c, j, why, n))
			continue;
		rings++;
		recs += ks->rl[j].n;
		for (k = 0; k < ks->rl[j].n; k++) {
			const char *t = ks->rl[j].r[k].sig;

			by[0] += !strncmp(t, "type=9 ", 7);
			by[1] += !strncmp(t, "type=3 ", 7);
			by[2] += !strncmp(t, "type=4 ", 7);
			by[3] += !strncmp(t, "type=2 ", 7);
			by[4] += !strncmp(t, "type=7 ", 7);
			by[5] += !strncmp(t, "type=1 ", 7) || !strncmp(t, "type=10 ", 8);
			by[6] += !strncmp(t, "type=14 ", 8);
		}
	}
	snprintf(sum, sn, "[rings %d, records %d: SAMPLE %d COMM %d EXIT %d LOST %d FORK %d MMAP %d "
		 "SWITCH %d]", rings, recs, by[0], by[1], by[2], by[3], by[4], by[5], by[6]);
}

/*
 * Whether event @i's wakeups can be compared: the ring it writes to, if
 * mapped, is one whose records are (ring_why_not()), without records of
 * other processes that could have woken it.
 */
static bool pollable(const struct side *ks, const struct kcase *c, int i)
{
	bool filtered;
	int j;

	for (j = 0; j < c->n; j++)
		if (c->s[j].op == MMAP && ks->rl[j].had &&
		    ring_root(ks, c->s[j].a) == ring_root(ks, i) &&
		    (ring_why_not(ks, c, j, &filtered) || filtered))
			return false;
	/* Preemptions' SWITCH records (left out of the comparison) fill it too. */
	for (j = 0; j < c->n; j++)
		if (c->s[j].op == OPEN && (c->s[j].rec & R_CSW) && ks->opened[j] &&
		    ring_root(ks, j) == ring_root(ks, i))
			return false;
	return true;
}

/*
 * poll() of every open event once, in step order, after the occurrences:
 * POLLIN (a wakeup of its ring since the last poll: perf_output_wakeup() at
 * the watermark or after wakeup_events samples) and POLLHUP must match.
 */
static void compare_polls(struct side *ks, struct side *ms, const struct kcase *c, char *why,
			  size_t n)
{
	int i;

	for (i = 0; i < c->n && !why[0]; i++) {
		struct pollfd kp = { ks->fd[i], POLLIN, 0 }, mp = { ms->fd[i], POLLIN, 0 };

		if (c->s[i].op != OPEN || ks->fd[i] < 0 || ms->fd[i] < 0 || !pollable(ks, c, i))
			continue;
		ks->k->poll(ks->k->ctx, &kp, 1, 0);
		ms->k->poll(ms->k->ctx, &mp, 1, 0);
		if ((kp.revents ^ mp.revents) & (POLLIN | POLLHUP))
			snprintf(why, n, "poll of %d.open: kernel %#x, model %#x", i,
				 kp.revents & (POLLIN | POLLHUP), mp.revents & (POLLIN | POLLHUP));
	}
}

/* The case's tasks: this process on CASE_CPU (its child inherits that), SIGTRAP survived. */
static void case_tasks(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(CASE_CPU, &set);
	sched_setaffinity(0, sizeof(set), &set);
	signal(SIGTRAP, SIG_IGN); /* a sigtrap event's sample */
	self_pid = getpid();
	nkids = 0;
	/* The file of the mmap occurrences (open before any event: no mapping). */
	if (realpath("/bin/true", map_path))
		map_fd = open(map_path, O_RDONLY | O_CLOEXEC);
	if (map_fd >= 0 && fstat(map_fd, &map_st)) {
		close(map_fd);
		map_fd = -1;
	}
	/* i_generation, which MMAP2 gives; 0 where the file system does not tell it. */
	if (map_fd >= 0 && ioctl(map_fd, FS_IOC_GETVERSION, &map_gen))
		map_gen = 0;
}

/* Runs the steps of @c on both sides in lockstep; the first difference into @why. */
static void run_steps(struct side *ks, struct side *ms, struct world *w, const struct kcase *c,
		      int *occ, char *why, size_t n)
{
	char kr[512], mr[512];
	int i;

	for (i = 0; i < c->n && !why[0]; i++) {
		if (c->s[i].op == EXEC) {
			world_exec(w, ms->m, *occ);
			read_rings(ks, c, *occ);
			read_rings(ms, c, *occ);
			++*occ;
			continue;
		}
		run_step(ks, w, c, i, kr, sizeof(kr));
		run_step(ms, w, c, i, mr, sizeof(mr));
		if (strcmp(kr, mr) || verbose)
			snprintf(why, n, "%s %d.%s: kernel: %s; model: %s",
				 strcmp(kr, mr) ? "differs at" : "last", i, op_name[c->s[i].op], kr, mr);
		if (!strcmp(kr, mr) && verbose) {
			printf("#   %d.%s: %s\n", i, op_name[c->s[i].op], kr);
			why[0] = 0;
		}
	}
}

/* Runs case @no in this (forked) process and prints its line. */
static int run_case(const struct kcase *c, int no, uid_t uid)
{
	struct side ks = { .k = prec_kernel_sys() }, ms = { 0 };
	struct prec_kmodel_limits lim;
	char desc[2048], why[1200] = "", sum[160] = "";
	struct world w;
	int i, err, occ = 0;

	case_tasks();
	if (c->mlock && (err = drop_ipc_lock(uid, c->memlock))) {
		printf("FAIL\t#%d cannot drop CAP_IPC_LOCK: %s\n", no, strerror(-err));
		return 1;
	}
	ms.m = prec_kmodel_new(ncpus);
	if (!ms.m || make_world(&w, c))
		return 1;
	child_pid = w.child;
	if (uprobe_type)
		prec_kmodel_add_pmu(ms.m, uprobe_type, 0); /* perf_uprobe: no NO_NMI, any exclude bits */
	prec_kmodel_host_limits(&lim);
	if (c->mlock) {
		lim.cap_ipc_lock = false;
		lim.memlock_bytes = c->memlock;
	}
	prec_kmodel_set_limits(ms.m, &lim);
	ms.k = prec_kmodel_kernel(ms.m);
	for (i = 0; i < MAXSTEPS; i++)
		ks.fd[i] = ms.fd[i] = ks.out[i] = ms.out[i] = -1;
	run_steps(&ks, &ms, &w, c, &occ, why, sizeof(why));
	if (!why[0]) {
		drive(&ks, &ms, c, &occ);
		compare_rings(&ks, &ms, c, why, sizeof(why), sum, sizeof(sum));
		if (!why[0])
			compare_polls(&ks, &ms, c, why, sizeof(why));
	}
	side_end(&ks, c->n);
	side_end(&ms, c->n);
	prec_kmodel_free(ms.m);
	world_end(&w);
	describe(c, desc, sizeof(desc));
	if (why[0])
		printf("FAIL\t#%d %s\t%s\n", no, desc, why);
	else
		printf("ok\t#%d %s %s\n", no, sum, desc);
	fflush(stdout);
	return why[0] ? 1 : 0;
}

/* Whether the real kernel can be asked here; @why says why not. */
static bool kernel_here(const char **why)
{
	struct prec_attr a;
	uint64_t t;
	int fd;

	make_attr(&a, E_CPUCLK, 0);
	fd = prec_kernel_sys()->open(NULL, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		*why = fd == -ENOSYS ? "no perf_event_open here" : "perf_event_open refused";
		return false;
	}
	close(fd);
	if (prec_read_u64("/sys/kernel/tracing/events/syscalls/sys_enter_getpid/id", &tp_enter) ||
	    prec_read_u64("/sys/kernel/tracing/events/syscalls/sys_exit_getpid/id", &tp_exit)) {
		*why = "no tracefs (mount -t tracefs nodev /sys/kernel/tracing)";
		return false;
	}
	if (!prec_read_u64("/sys/bus/event_source/devices/uprobe/type", &t))
		uprobe_type = (uint32_t)t;
	if (geteuid() != 0) {
		*why = "needs root (the mlock cases change user and capabilities)";
		return false;
	}
	return true;
}

int main(int argc, char **argv)
{
	static struct kcase c;
	uint64_t seed = 20261202;
	int ncases = 240, only = -1, i, failed = 0;
	const char *why = NULL;
	uid_t uid = 0x3f000000u + (uid_t)getpid();

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--cases") && i + 1 < argc)
			ncases = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--case") && i + 1 < argc)
			only = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-v"))
			verbose = true;
		else {
			fprintf(stderr, "usage: %s [--seed N] [--cases N] [--case K] [-v]\n", argv[0]);
			return 2;
		}
	}
	page_size = sysconf(_SC_PAGESIZE);
	ncpus = (int)sysconf(_SC_NPROCESSORS_CONF);
	printf("# seed %llu, %d cases\n", (unsigned long long)seed, ncases);
	if (!kernel_here(&why)) {
		printf("skip\tevery case\t%s\n", why);
		return 0;
	}
	if (ncpus < 2) {
		printf("skip\tevery case\tone CPU: the cross-CPU cases cannot be asked\n");
		return 0;
	}
	if (!realpath("/proc/self/exe", self_path))
		return 1;
	uprobe_off = target_offset();
	rng_state = seed ? seed : 1;
	for (i = 0; i < ncases; i++) {
		pid_t p;
		int st;

		gen_case(&c);
		if (!uprobe_type)
			for (int j = 0; j < c.n; j++)
				if (c.s[j].op == OPEN && c.s[j].a == E_UPROBE)
					c.s[j].a = E_TP;
		if (only >= 0 && i != only)
			continue;
		fflush(stdout);
		p = fork();
		if (p == 0)
			_exit(run_case(&c, i, uid));
		if (p < 0 || waitpid(p, &st, 0) < 0)
			return 1;
		if (!WIFEXITED(st) || WEXITSTATUS(st) > 1)
			printf("FAIL\t#%d %s\tthe case's process ended with status %#x\n", i, c.kind, st);
		failed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	printf("# %d passed, %d failed\n", (only >= 0 ? 1 : ncases) - failed, failed);
	return failed ? 1 : 0;
}

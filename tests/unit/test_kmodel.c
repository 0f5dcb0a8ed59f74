// SPDX-License-Identifier: MIT
/*
 * The kernel model (record/kmodel.h) rule by rule: each scenario is a few
 * calls through the seam (open, mmap, SET_OUTPUT, PAUSE_OUTPUT) with the
 * errno each must get. The model must give exactly those; so must the real
 * kernel, where it can be asked here (software events and tracepoints; as
 * root, with perf_event_open present: not under qemu-user). What the real
 * kernel cannot be asked here is an AUX PMU: the rules that need one are
 * checked against the model alone (aux_model_only).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "harness.h"
#include "record/emu_proto.h"
#include "record/emulate.h"
#include "record/kmodel.h"
#include "record/record.h"
#include "spec/evspec.h"

enum { OPEN, MMAP, AUXMAP, SETOUT, PAUSE };
enum { E_CLOCK, E_TASK, E_DUMMY, E_TP, E_NOPMU, E_AUX };
enum {
	M_PINNED = 1, M_EXCL = 2, M_INHERIT = 4, M_PAUSE = 8, M_RESUME = 16, M_START_PAUSED = 32,
	M_AUX_OUTPUT = 64, M_AUX_WRONG_OFF = 128,
};
#define SELF 0
#define ANY (-1)
#define OTHER (-2)   /* another task: the harness's parent process */
#define BADFD (-2)   /* a descriptor that is no perf event */
#define LASTCPU (-9) /* the host's last CPU */
#define AUX_TYPE 0x7ffff000u

struct step {
	int op;
	int ev;       /* OPEN: E_*; other ops: the step whose fd they use */
	int pid, cpu; /* OPEN */
	int group;    /* OPEN: the leader's step, -1, or BADFD; SETOUT: the target's step */
	unsigned mods;
	int pages, off; /* MMAP: data pages; AUXMAP: pages and offset in pages */
	int want;       /* the errno (0: success) */
};

struct scenario {
	const char *name;
	int n;
	struct step s[5];
};

#define O(ev, pid, cpu, g, mods, want) { OPEN, ev, pid, cpu, g, mods, 0, 0, want }
#define MAP(st, pages, want) { MMAP, st, 0, 0, 0, 0, pages, 0, want }
#define AUX(st, pages, off, mods, want) { AUXMAP, st, 0, 0, 0, mods, pages, off, want }
#define SET(st, to, want) { SETOUT, st, 0, 0, to, 0, 0, 0, want }
#define PZ(st, want) { PAUSE, st, 0, 0, 0, 0, 0, 0, want }
#define SC(name, ...) { name, sizeof((struct step[]){ __VA_ARGS__ }) / sizeof(struct step), \
			{ __VA_ARGS__ } }

static const struct scenario both[] = {
	SC("a group of two", O(E_CLOCK, SELF, -1, -1, 0, 0), O(E_TASK, SELF, -1, 0, 0, 0)),
	SC("pinned leader", O(E_CLOCK, SELF, -1, -1, M_PINNED, 0)),
	SC("pinned member", O(E_CLOCK, SELF, -1, -1, 0, 0), O(E_TASK, SELF, -1, 0, M_PINNED, EINVAL)),
	SC("exclusive member", O(E_CLOCK, SELF, -1, -1, 0, 0), O(E_TASK, SELF, -1, 0, M_EXCL, EINVAL)),
	SC("member on another CPU", O(E_CLOCK, ANY, 0, -1, 0, 0), O(E_TASK, ANY, LASTCPU, 0, 0, EINVAL)),
	SC("task member of a CPU leader", O(E_CLOCK, ANY, 0, -1, 0, 0), O(E_TASK, SELF, 0, 0, 0, EINVAL)),
	SC("member of another task", O(E_CLOCK, SELF, -1, -1, 0, 0), O(E_TASK, OTHER, -1, 0, 0, EINVAL)),
	SC("inherit differs", O(E_CLOCK, SELF, -1, -1, M_INHERIT, 0), O(E_TASK, SELF, -1, 0, 0, EINVAL)),
	SC("inherit alike", O(E_CLOCK, SELF, -1, -1, M_INHERIT, 0), O(E_TASK, SELF, -1, 0, M_INHERIT, 0)),
	SC("a member as leader", O(E_CLOCK, SELF, -1, -1, 0, 0), O(E_TASK, SELF, -1, 0, 0, 0),
	   O(E_DUMMY, SELF, -1, 1, 0, EINVAL)),
	SC("group_fd no event", O(E_CLOCK, SELF, -1, BADFD, 0, EBADF)),
	SC("pause and resume together", O(E_TP, SELF, -1, -1, M_PAUSE | M_RESUME, EINVAL)),
	SC("pause without a leader", O(E_TP, SELF, -1, -1, M_PAUSE, EINVAL)),
	SC("resume under a leader that cannot pause", O(E_CLOCK, SELF, -1, -1, 0, 0),
	   O(E_TP, SELF, -1, 0, M_RESUME, EINVAL)),
	SC("start paused on a PMU that cannot pause", O(E_CLOCK, SELF, -1, -1, M_START_PAUSED, EOPNOTSUPP)),
	SC("aux_output on a PMU without it", O(E_TP, SELF, -1, -1, M_AUX_OUTPUT, EOPNOTSUPP)),
	SC("no such PMU", O(E_NOPMU, SELF, -1, -1, 0, ENOENT)),
	SC("CPU beyond the possible ones", O(E_CLOCK, ANY, 4096, -1, 0, EINVAL)),
	SC("no task and no CPU", O(E_CLOCK, ANY, -1, -1, 0, EINVAL)),
	SC("control page and 2^n data pages", O(E_CLOCK, SELF, -1, -1, 0, 0), MAP(0, 4, 0)),
	SC("control page alone", O(E_CLOCK, SELF, -1, -1, 0, 0), MAP(0, 0, 0)),
	SC("data pages not 2^n", O(E_CLOCK, SELF, -1, -1, 0, 0), MAP(0, 3, EINVAL)),
	SC("mapped again at another size", O(E_CLOCK, SELF, -1, -1, 0, 0), MAP(0, 4, 0), MAP(0, 2, EINVAL)),
	SC("mapped again at its size", O(E_CLOCK, SELF, -1, -1, 0, 0), MAP(0, 4, 0), MAP(0, 4, 0)),
	SC("AUX before the data ring", O(E_CLOCK, SELF, -1, -1, 0, 0), AUX(0, 4, 5, 0, EINVAL)),
	SC("AUX inside the data ring", O(E_CLOCK, SELF, -1, -1, 0, 0), MAP(0, 4, 0), AUX(0, 4, 3, 0, EINVAL)),
	SC("AUX pages not 2^n", O(E_CLOCK, SELF, -1, -1, 0, 0), MAP(0, 4, 0), AUX(0, 3, 5, 0, EINVAL)),
	SC("AUX not where the control page says", O(E_CLOCK, SELF, -1, -1, 0, 0), MAP(0, 4, 0),
	   AUX(0, 4, 5, M_AUX_WRONG_OFF, EINVAL)),
	SC("AUX on a PMU without one", O(E_CLOCK, SELF, -1, -1, 0, 0), MAP(0, 4, 0), AUX(0, 4, 5, 0, EOPNOTSUPP)),
	SC("SET_OUTPUT to an unmapped event", O(E_CLOCK, SELF, -1, -1, 0, 0), O(E_TASK, SELF, -1, -1, 0, 0),
	   SET(1, 0, EINVAL)),
	SC("SET_OUTPUT to a mapped event", O(E_CLOCK, SELF, -1, -1, 0, 0), O(E_TASK, SELF, -1, -1, 0, 0),
	   MAP(0, 4, 0), SET(1, 0, 0)),
	SC("SET_OUTPUT across CPUs", O(E_CLOCK, ANY, 0, -1, 0, 0), O(E_TASK, ANY, LASTCPU, -1, 0, 0),
	   MAP(0, 4, 0), SET(1, 0, EINVAL)),
	SC("SET_OUTPUT to another task's ring", O(E_CLOCK, SELF, -1, -1, 0, 0),
	   O(E_TASK, OTHER, -1, -1, 0, 0), MAP(0, 4, 0), SET(1, 0, EINVAL)),
	SC("SET_OUTPUT of a mapped event", O(E_CLOCK, SELF, -1, -1, 0, 0), O(E_TASK, SELF, -1, -1, 0, 0),
	   MAP(0, 4, 0), MAP(1, 4, 0), SET(1, 0, EINVAL)),
	SC("SET_OUTPUT to itself", O(E_CLOCK, SELF, -1, -1, 0, 0), MAP(0, 4, 0), SET(0, 0, EINVAL)),
	SC("PAUSE_OUTPUT without a ring", O(E_CLOCK, SELF, -1, -1, 0, 0), PZ(0, EINVAL)),
	SC("PAUSE_OUTPUT with a ring", O(E_CLOCK, SELF, -1, -1, 0, 0), MAP(0, 4, 0), PZ(0, 0)),
};

/* An AUX PMU exists only in the model: these rules have no real counterpart here. */
static const struct scenario aux_only[] = {
	SC("AUX leader, pause member", O(E_AUX, SELF, -1, -1, M_START_PAUSED, 0),
	   O(E_TP, SELF, -1, 0, M_PAUSE, 0)),
	SC("AUX leader, pause and resume member", O(E_AUX, SELF, -1, -1, 0, 0),
	   O(E_TP, SELF, -1, 0, M_PAUSE | M_RESUME, EINVAL)),
	SC("AUX area after the data ring", O(E_AUX, SELF, -1, -1, 0, 0), MAP(0, 4, 0), AUX(0, 8, 5, 0, 0)),
	SC("AUX area further on", O(E_AUX, SELF, -1, -1, 0, 0), MAP(0, 4, 0), AUX(0, 8, 16, 0, 0)),
	SC("AUX mapped twice at two sizes", O(E_AUX, SELF, -1, -1, 0, 0), MAP(0, 4, 0), AUX(0, 8, 5, 0, 0),
	   AUX(0, 4, 5, 0, EINVAL)),
	SC("tracker into the tracer's ring", O(E_AUX, SELF, -1, -1, 0, 0), O(E_DUMMY, SELF, -1, -1, 0, 0),
	   MAP(0, 4, 0), AUX(0, 8, 5, 0, 0), SET(1, 0, 0)),
};

static uint64_t tp_id(void)
{
	uint64_t id = 0;
	char p[256];

	snprintf(p, sizeof(p), "%s/events/syscalls/sys_enter_getpid/id", "/sys/kernel/tracing");
	if (prec_read_u64(p, &id))
		prec_read_u64("/sys/kernel/debug/tracing/events/syscalls/sys_enter_getpid/id", &id);
	return id;
}

static void make_attr(struct prec_attr *a, int ev, unsigned mods)
{
	static const uint64_t sw[] = { [E_CLOCK] = PERF_COUNT_SW_CPU_CLOCK,
				       [E_TASK] = PERF_COUNT_SW_TASK_CLOCK,
				       [E_DUMMY] = PERF_COUNT_SW_DUMMY };

	memset(a, 0, sizeof(*a));
	a->size = PREC_ATTR_SIZE;
	a->disabled = 1;
	a->exclude_kernel = 1;
	a->type = PERF_TYPE_SOFTWARE;
	if (ev <= E_DUMMY)
		a->config = sw[ev];
	if (ev == E_TP) {
		a->type = PERF_TYPE_TRACEPOINT;
		a->config = tp_id();
		a->sample_period = 1;
		a->exclude_kernel = 0;
	}
	if (ev == E_NOPMU)
		a->type = 0x7ffffff0u;
	if (ev == E_AUX)
		a->type = AUX_TYPE;
	a->pinned = !!(mods & M_PINNED);
	a->exclusive = !!(mods & M_EXCL);
	a->inherit = !!(mods & M_INHERIT);
	a->aux_pause = !!(mods & M_PAUSE);
	a->aux_resume = !!(mods & M_RESUME);
	a->aux_start_paused = !!(mods & M_START_PAUSED);
	a->aux_output = !!(mods & M_AUX_OUTPUT);
}

struct maps {
	void *p[8];
	size_t len[8];
	bool aux[8];
	int n;
};

static int do_map(const struct prec_kernel *k, int fd, size_t len, off_t off, struct maps *mp)
{
	void *p = NULL;
	int r = k->mmap(k->ctx, fd, len, off, PROT_READ | PROT_WRITE, &p);

	if (!r && mp->n < 8) {
		mp->p[mp->n] = p;
		mp->aux[mp->n] = off != 0;
		mp->len[mp->n++] = len;
	}
	return r;
}

/* Runs one step; @fd holds each earlier step's fd (or -1). Returns 0 or -errno. */
static int step(const struct prec_kernel *k, const struct step *s, int *fd, struct maps *mp)
{
	long page = sysconf(_SC_PAGESIZE);
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int cpu = s->cpu == LASTCPU ? (ncpu > 1 ? (int)ncpu - 1 : 1) : s->cpu;
	struct prec_attr a;
	int i;

	switch (s->op) {
	case OPEN:
		make_attr(&a, s->ev, s->mods);
		return k->open(k->ctx, &a, s->pid == OTHER ? getppid() : s->pid, cpu,
			       s->group == BADFD ? 0 : s->group >= 0 ? fd[s->group] : -1,
			       PERF_FLAG_FD_CLOEXEC);
	case MMAP:
		return do_map(k, fd[s->ev], (size_t)page * (size_t)(1 + s->pages), 0, mp);
	case AUXMAP:
		/* The control page says where the AUX area goes (if the data ring is mapped). */
		for (i = mp->n - 1; i >= 0; i--) {
			struct perf_event_mmap_page *pg = mp->p[i];

			if (mp->aux[i])
				continue;
			pg->aux_offset = (uint64_t)page * (uint64_t)s->off;
			pg->aux_size = (uint64_t)page * (uint64_t)s->pages;
			break;
		}
		return do_map(k, fd[s->ev], (size_t)page * (size_t)s->pages,
			      (off_t)page * (s->off + !!(s->mods & M_AUX_WRONG_OFF)), mp);
	case SETOUT:
		return prec_kernel_set_output(k, fd[s->ev], fd[s->group]);
	case PAUSE:
		return prec_kernel_pause_output(k, fd[s->ev], true);
	}
	return -EINVAL;
}

/* Runs @sc; returns true when every step got its errno. @why gets the first miss. */
static bool run(const struct prec_kernel *k, const struct scenario *sc, char *why, size_t n)
{
	int fd[5], i, r;
	struct maps mp = { .n = 0 };
	bool ok = true;

	for (i = 0; i < sc->n; i++) {
		r = step(k, &sc->s[i], fd, &mp);
		fd[i] = sc->s[i].op == OPEN && r >= 0 ? r : -1;
		if (sc->s[i].op == OPEN && r >= 0)
			r = 0;
		if (r != -sc->s[i].want && ok) {
			snprintf(why, n, "%s: step %d: got %s, want %s", k->name, i + 1,
				 r ? strerror(-r) : "success",
				 sc->s[i].want ? strerror(sc->s[i].want) : "success");
			ok = false;
		}
	}
	while (mp.n--)
		k->munmap(k->ctx, mp.p[mp.n], mp.len[mp.n]);
	for (i = 0; i < sc->n; i++)
		if (fd[i] >= 0)
			k->close(k->ctx, fd[i]);
	return ok;
}

static struct prec_kmodel *model(void)
{
	/* At least two CPUs, for the cross-CPU rules. */
	struct prec_kmodel *m = prec_kmodel_new(sysconf(_SC_NPROCESSORS_CONF) < 2 ? 2 : 0);

	if (m)
		prec_kmodel_add_pmu(m, AUX_TYPE, PREC_KMODEL_CAP_AUX | PREC_KMODEL_CAP_AUX_PAUSE);
	return m;
}

/* Whether the real kernel answers here: a cpu-clock event on this task opens. */
static bool kernel_here(const char **why)
{
	struct prec_attr a;
	int fd;

	make_attr(&a, E_CLOCK, 0);
	fd = prec_kernel_sys()->open(NULL, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		*why = fd == -ENOSYS ? "no perf_event_open here" : "perf_event_open refused";
		return false;
	}
	close(fd);
	if (!tp_id()) {
		*why = "no tracefs (mount -t tracefs nodev /sys/kernel/tracing)";
		return false;
	}
	if (sysconf(_SC_NPROCESSORS_CONF) < 2) {
		*why = "one CPU: the cross-CPU rules cannot be asked";
		return false;
	}
	return true;
}

static void rules_model(void)
{
	struct prec_kmodel *m = model();
	char why[256], name[160];
	size_t i;

	if (!T_OK(m))
		return;
	for (i = 0; i < T_N(both); i++) {
		bool ok = run(prec_kmodel_kernel(m), &both[i], why, sizeof(why));

		if (!ok)
			t_check(false, __FILE__, __LINE__, "%s: %s", both[i].name, why);
		snprintf(name, sizeof(name), "model: %s", both[i].name);
		t_row(name, ok && !t_row_failed());
	}
	prec_kmodel_free(m);
}

static void rules_kernel(void)
{
	const char *skip = NULL;
	char why[256], name[160];
	size_t i;

	if (!kernel_here(&skip))
		t_skip(skip);
	for (i = 0; i < T_N(both); i++) {
		bool ok = run(prec_kernel_sys(), &both[i], why, sizeof(why));

		if (!ok)
			t_check(false, __FILE__, __LINE__, "%s: %s", both[i].name, why);
		snprintf(name, sizeof(name), "kernel: %s", both[i].name);
		t_row(name, ok && !t_row_failed());
	}
}

static void aux_model_only(void)
{
	struct prec_kmodel *m = model();
	char why[256], name[160];
	size_t i;

	if (!T_OK(m))
		return;
	for (i = 0; i < T_N(aux_only); i++) {
		bool ok = run(prec_kmodel_kernel(m), &aux_only[i], why, sizeof(why));

		if (!ok)
			t_check(false, __FILE__, __LINE__, "%s: %s", aux_only[i].name, why);
		snprintf(name, sizeof(name), "model: %s", aux_only[i].name);
		t_row(name, ok && !t_row_failed());
	}
	prec_kmodel_free(m);
}

/* Mappings outlive their fd, and the model's fds never reach the real poll(2). */
static void fds_and_poll(void)
{
	struct prec_kmodel *m = model();
	const struct prec_kernel *k = prec_kmodel_kernel(m);
	struct prec_attr a;
	struct pollfd pfd[2];
	int fd, pipefd[2];
	void *p = NULL;
	uint64_t id = 0;

	make_attr(&a, E_CLOCK, 0);
	fd = k->open(k->ctx, &a, 0, -1, -1, 0);
	T_OK(fd >= PREC_KMODEL_FD0);
	T_EQ_INT(prec_kernel_id(k, fd, &id), 0);
	T_OK(id != 0);
	T_EQ_INT(k->mmap(k->ctx, fd, 5 * (size_t)sysconf(_SC_PAGESIZE), 0, PROT_READ | PROT_WRITE, &p), 0);
	T_EQ_INT(k->close(k->ctx, fd), 0);
	T_EQ_INT(prec_kernel_enable(k, fd), -EBADF);
	T_OK(pipe(pipefd) == 0 && write(pipefd[1], "x", 1) == 1);
	pfd[0] = (struct pollfd){ .fd = fd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = pipefd[0], .events = POLLIN };
	/* A closed fd answers POLLNVAL, as poll(2) does for a descriptor not open. */
	T_EQ_INT(k->poll(k->ctx, pfd, 2, 0), 2);
	T_EQ_INT(pfd[0].revents, POLLNVAL);
	T_OK(pfd[1].revents & POLLIN);
	T_EQ_U64(((struct perf_event_mmap_page *)p)->data_size, 4 * (uint64_t)sysconf(_SC_PAGESIZE));
	T_EQ_INT(k->munmap(k->ctx, p, 5 * (size_t)sysconf(_SC_PAGESIZE)), 0);
	prec_kmodel_free(m);
}

/*
 * The recorder's own sequence passes the model's rules: a whole recording
 * of this thread over the model, per thread and per CPU, stopped at the
 * first poll (the rings stay empty: nothing produces yet).
 */
static void recorder_over_model(void)
{
	static const bool per_thread[] = { true, false };
	size_t i;

	for (i = 0; i < T_N(per_thread); i++) {
		struct prec_kmodel *m = model();
		struct prec_evlist *el = NULL;
		struct prec_record_opts o;
		struct prec_record_result res;
		struct prec_diag d;
		pid_t tid = getpid();
		char out[512];
		int stop[2];

		if (!T_OK(m) || !T_OK(pipe(stop) == 0 && write(stop[1], "x", 1) == 1))
			return;
		T_EQ_INT(prec_evspec_parse("{cpu-clock,task-clock},dummy", NULL, &el, &d), 0);
		snprintf(out, sizeof(out), "%s/model%zu.ptrec", t_tmpdir(), i);
		memset(&o, 0, sizeof(o));
		o.el = el;
		o.output = out;
		o.tids = &tid;
		o.ntids = 1;
		o.per_thread = per_thread[i];
		o.data_bytes = 8 * (uint64_t)sysconf(_SC_PAGESIZE);
		o.no_embed = true;
		o.stop_fd = stop[0];
		o.kernel = prec_kmodel_kernel(m);
		if (prec_record(&o, &res, &d))
			t_check(false, __FILE__, __LINE__, "%s: %s", per_thread[i] ? "per thread" :
				"per CPU", d.msg);
		T_OK(access(out, F_OK) == 0);
		close(stop[0]);
		close(stop[1]);
		prec_evlist_free(el);
		prec_kmodel_free(m);
	}
}

/* The time an event has been enabled, from read() with TOTAL_TIME_ENABLED. */
static uint64_t time_enabled(const struct prec_kernel *k, int fd)
{
	uint64_t v[2] = { 0, 0 };

	T_EQ_INT((int)k->read(k->ctx, fd, v, sizeof(v)), 16);
	return v[1];
}

/*
 * enable_on_exec acts in the exec'ing task's context only, and once
 * (event_enable_on_exec() clears the bit): a second exec after a disable
 * leaves the event off. (tests/cli/kmodel-diff.sh compares the first exec
 * with the real kernel's.)
 */
static void exec_enables_once(void)
{
	struct prec_kmodel *m = model();
	const struct prec_kernel *k = prec_kmodel_kernel(m);
	pid_t self = getpid();
	struct prec_attr a;
	int mine, cpuwide;
	uint64_t t;

	make_attr(&a, E_TASK, 0);
	a.enable_on_exec = 1;
	a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED;
	mine = k->open(k->ctx, &a, self, -1, -1, 0);
	cpuwide = k->open(k->ctx, &a, -1, 0, -1, 0);
	T_OK(mine >= 0 && cpuwide >= 0);
	prec_kmodel_task_exec(m, self + 1);
	T_EQ_U64(time_enabled(k, mine), 0);
	prec_kmodel_task_exec(m, self);
	usleep(1000);
	T_OK(time_enabled(k, mine) > 0);
	T_EQ_U64(time_enabled(k, cpuwide), 0);
	T_EQ_INT(prec_kernel_disable(k, mine), 0);
	t = time_enabled(k, mine);
	prec_kmodel_task_exec(m, self);
	usleep(1000);
	T_EQ_U64(time_enabled(k, mine), t);
	prec_kmodel_free(m);
}

/*
 * perf_mmap()'s budget: perf_event_mlock_kb per CPU is free, the rest is
 * pinned memory under RLIMIT_MEMLOCK (EPERM beyond), unmapping gives it
 * back, and CAP_IPC_LOCK lifts the limit.
 */
static void mlock_budget(void)
{
	struct prec_kmodel *m = prec_kmodel_new(2);
	const struct prec_kernel *k = prec_kmodel_kernel(m);
	struct prec_kmodel_limits l = { 4 * 33, 24 * 4096, 2, false, 100000, 250 };
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct prec_attr a;
	void *p[4] = { NULL };
	int fd[4], i;

	if (page != 4096)
		t_skip("the budget below is counted in 4 KiB pages");
	prec_kmodel_set_limits(m, &l); /* free: 33 pages x 2 CPUs; pinned: 24 pages */
	make_attr(&a, E_CLOCK, 0);
	for (i = 0; i < 4; i++)
		fd[i] = k->open(k->ctx, &a, 0, -1, -1, 0);
	T_EQ_INT(k->mmap(k->ctx, fd[0], 33 * page, 0, PROT_READ | PROT_WRITE, &p[0]), 0);  /* 33 free */
	T_EQ_INT(k->mmap(k->ctx, fd[1], 33 * page, 0, PROT_READ | PROT_WRITE, &p[1]), 0);  /* 66 free */
	T_EQ_INT(k->mmap(k->ctx, fd[2], 17 * page, 0, PROT_READ | PROT_WRITE, &p[2]), 0);  /* 17 pinned */
	T_EQ_INT(k->mmap(k->ctx, fd[2], 17 * page, 0, PROT_READ | PROT_WRITE, &p[3]), 0);  /* the same ring: free */
	T_EQ_INT(k->mmap(k->ctx, fd[3], 9 * page, 0, PROT_READ | PROT_WRITE, &p[3]), -EPERM); /* 26 pinned */
	T_EQ_INT(k->munmap(k->ctx, p[0], 33 * page), 0);
	T_EQ_INT(k->mmap(k->ctx, fd[3], 9 * page, 0, PROT_READ | PROT_WRITE, &p[3]), 0);      /* free again */
	T_EQ_INT(k->munmap(k->ctx, p[3], 9 * page), 0);
	l.cap_ipc_lock = true;
	prec_kmodel_set_limits(m, &l);
	T_EQ_INT(k->mmap(k->ctx, fd[3], 129 * page, 0, PROT_READ | PROT_WRITE, &p[3]), 0);
	prec_kmodel_free(m);
}

/* @tmpl with each "%s" replaced by @path. */
static void subst_path(char *out, size_t size, const char *tmpl, const char *path)
{
	size_t n = 0;

	while (*tmpl && n + 1 < size) {
		if (tmpl[0] == '%' && tmpl[1] == 's') {
			n += (size_t)snprintf(out + n, size - n, "%s", path);
			if (n >= size)
				n = size - 1;
			tmpl += 2;
		} else {
			out[n++] = *tmpl++;
		}
	}
	out[n] = 0;
}

/*
 * PERF_EVENT_IOC_SET_FILTER on the tracer: the kernel's parser
 * (perf_event_parse_addr_filter) and intel_pt's validation
 * (pt_event_addr_filters_validate), with the errno of each refusal.
 */
static void addr_filters(void)
{
	static const struct {
		const char *text;
		int cpu_wide, want;
	} c[] = {
		{ "filter 0x1000/0x40@%s", 0, 0 },
		{ "filter 0x1000/0x40@%s,filter 4096/16@%s", 0, 0 },
		{ "filter 0x1000/0x40@%s filter 0x2000/0x10@%s filter 0x3000/0x10@%s", 0, EOPNOTSUPP },
		{ "start 0x1000@%s", 0, EOPNOTSUPP },     /* intel_pt: no 'start' */
		{ "stop 0x1000@%s", 0, EOPNOTSUPP },      /* no single address */
		{ "filter 0x1000@%s", 0, EINVAL },        /* a range needs a size */
		{ "filter 0x1000/0x40@%s", 1, EOPNOTSUPP }, /* files need a task */
		{ "filter 0x1000/0x40@/nonexistent/file", 0, ENOENT },
		{ "filter 0x1000/0x40@/", 0, EINVAL },    /* not a regular file */
		{ "filter 0xffffffff81000000/0x100", 0, EINVAL }, /* exclude_kernel */
		{ "trace 0x1000/0x40@%s", 0, EINVAL },
		{ "filter", 0, EINVAL },
		{ "filter 0x/0x40@%s", 0, EINVAL },
	};
	struct prec_kmodel *m = model();
	const struct prec_kernel *k;
	struct prec_attr a;
	char self[4096], text[16384];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	size_t i;

	if (!T_OK(m) || !T_OK(n > 0))
		return;
	self[n] = 0;
	k = prec_kmodel_kernel(m);
	make_attr(&a, E_AUX, 0);
	for (i = 0; i < T_N(c); i++) {
		int fd;

		fd = k->open(k->ctx, &a, c[i].cpu_wide ? -1 : 0, c[i].cpu_wide ? 0 : -1, -1, 0);
		if (!T_OK(fd >= 0))
			continue;
		subst_path(text, sizeof(text), c[i].text, self);
		/* No address filters on the PMU: EINVAL, as for any PMU without them. */
		T_EQ_INT(prec_kernel_set_filter(k, fd, text), -EINVAL);
		prec_kmodel_set_addr_filters(m, AUX_TYPE, 2, false);
		t_check(prec_kernel_set_filter(k, fd, text) == -c[i].want, __FILE__, __LINE__,
			"'%s': want %s", c[i].text, c[i].want ? strerror(c[i].want) : "success");
		prec_kmodel_set_addr_filters(m, AUX_TYPE, 0, false);
		k->close(k->ctx, fd);
	}
	prec_kmodel_free(m);
}

/*
 * The emulated tracer's trigger flags: a trigger acts only while its group
 * counts (pause/resume take effect only while the leader is enabled).
 */
static void trigger_flags(void)
{
	struct prec_kmodel *m = prec_kmodel_new(2);
	struct prec_emu_trigger trig = { .event_index = 1, .action = PREC_EMU_ACT_RESUME };
	struct prec_kmodel_limits l;
	struct prec_emu_config pt = { .triggers = &trig, .ntriggers = 1 };
	struct prec_attr attrs[1], aux;
	struct prec_kmodel_emu cfg = { .aux_type = AUX_TYPE, .pt = &pt, .trigger_attrs = attrs };
	const struct prec_kernel *k;
	static struct emu_shm shm;
	uint32_t *flags = shm.trig_off;
	int lfd, tfd;

	if (!T_OK(m) || !T_OK(!prec_kmodel_emulate(m, &cfg))) {
		prec_kmodel_free(m);
		return;
	}
	prec_kmodel_host_limits(&l);
	l.hz = 250;
	l.max_sample_rate = 100000;
	prec_kmodel_set_limits(m, &l);
	k = prec_kmodel_kernel(m);
	make_attr(&aux, E_AUX, 0);
	make_attr(&attrs[0], E_TASK, M_RESUME);
	prec_kmodel_watch_triggers(m, flags);
	T_EQ_INT(flags[0], 1); /* nothing open: it counts nowhere */
	/* The throttling limit: TICK_NSEC of HZ 250, DIV_ROUND_UP(100000, 250). */
	T_EQ_INT(shm.tick_ns, 4000000);
	T_EQ_INT(shm.max_per_tick, 400);
	lfd = k->open(k->ctx, &aux, 0, -1, -1, 0);
	tfd = k->open(k->ctx, &attrs[0], 0, -1, lfd, 0);
	if (T_OK(lfd >= 0) && T_OK(tfd >= 0)) {
		T_EQ_INT(flags[0], 1); /* both opened disabled */
		T_EQ_INT(k->ioctl(k->ctx, tfd, PERF_EVENT_IOC_ENABLE, 0), 0);
		T_EQ_INT(flags[0], 1); /* the leader is still off */
		T_EQ_INT(k->ioctl(k->ctx, lfd, PERF_EVENT_IOC_ENABLE, 0), 0);
		T_EQ_INT(flags[0], 0);
		T_EQ_INT(k->ioctl(k->ctx, lfd, PERF_EVENT_IOC_DISABLE, 0), 0);
		T_EQ_INT(flags[0], 1);
		T_EQ_INT(k->ioctl(k->ctx, lfd, PERF_EVENT_IOC_ENABLE, 0), 0);
		T_EQ_INT(flags[0], 0);
		k->close(k->ctx, tfd);
		T_EQ_INT(flags[0], 1); /* closed */
		k->close(k->ctx, lfd);
	}
	prec_kmodel_watch_triggers(m, NULL);
	prec_kmodel_free(m);
}

/* A trigger's sample as the tracer sends it (emu_sb_sample()): tid 100 at @time. */
static void feed_sample(struct prec_kmodel *m, uint64_t time)
{
	uint64_t rec[7] = { 0, PREC_EMU_ID(1), 0x401000, 100 | (uint64_t)100 << 32, time, 0, 1 };
	struct perf_event_header h = { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, sizeof(rec) };

	memcpy(rec, &h, sizeof(h));
	T_EQ_INT(prec_kmodel_emu_record(m, rec, sizeof(rec)), 0);
}

/*
 * The records of a ring as "TYPE@TIME" (S: sample, T: throttle, U:
 * unthrottle), each with IDENTIFIER|TIME: a sample's time is its second
 * u64, a throttle's its body's first, whose trailer must agree.
 */
static void ring_text(const void *base, long page, char *out, size_t size)
{
	const struct perf_event_mmap_page *pg = base;
	const uint8_t *d = (const uint8_t *)base + page;
	uint64_t pos, head = pg->data_head;
	size_t n = 0;

	out[0] = 0;
	for (pos = 0; pos + 8 <= head && n + 40 < size;) {
		const struct perf_event_header *h = (const void *)(d + pos);
		const uint8_t *b = (const uint8_t *)(h + 1);
		char c = h->type == PERF_RECORD_SAMPLE ? 'S' : h->type == PERF_RECORD_THROTTLE ? 'T' :
			 h->type == PERF_RECORD_UNTHROTTLE ? 'U' : '?';
		uint64_t t = prec_rd64(b + (c == 'S' ? 8 : 0));

		if ((c == 'T' || c == 'U') && (h->size != 48 || prec_rd64(b + 24) != t))
			c = '!';
		n += (size_t)snprintf(out + n, size - n, "%s%c@%llu", n ? " " : "", c,
				      (unsigned long long)t);
		pos += h->size;
	}
}

/*
 * Throttling: with HZ 250 and perf_event_max_sample_rate 1000, 4 overflows
 * a tick: the 4th of a counter throttles its group (THROTTLE from the
 * leader, before that sample), the trigger is off for the rest of tick 0,
 * and the first message of tick 1 unthrottles it at the tick's time.
 */
static void throttle(void)
{
	struct prec_kmodel *m = prec_kmodel_new(2);
	struct prec_emu_trigger trig = { .kind = PREC_EMU_INSNS, .event_index = 1,
					 .action = PREC_EMU_ACT_RESUME, .period = 1000 };
	struct prec_emu_config pt = { .triggers = &trig, .ntriggers = 1 };
	struct prec_attr attrs[1], aux;
	struct prec_kmodel_emu cfg = { .aux_type = AUX_TYPE, .pt = &pt, .trigger_attrs = attrs };
	struct prec_kmodel_limits l;
	const struct prec_kernel *k;
	static struct emu_shm shm;
	long page = sysconf(_SC_PAGESIZE);
	void *base = NULL;
	char text[512];
	int lfd, tfd, i;

	if (!T_OK(m) || !T_OK(!prec_kmodel_emulate(m, &cfg))) {
		prec_kmodel_free(m);
		return;
	}
	prec_kmodel_host_limits(&l);
	l.hz = 250;
	l.max_sample_rate = 1000;
	prec_kmodel_set_limits(m, &l);
	k = prec_kmodel_kernel(m);
	make_attr(&aux, E_AUX, 0);
	make_attr(&attrs[0], E_TASK, M_RESUME);
	aux.sample_id_all = attrs[0].sample_id_all = 1;
	aux.sample_type = attrs[0].sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TIME;
	attrs[0].sample_period = 1000;
	prec_kmodel_watch_triggers(m, shm.trig_off);
	T_EQ_INT(shm.max_per_tick, 4);
	lfd = k->open(k->ctx, &aux, -1, 0, -1, 0);
	tfd = k->open(k->ctx, &attrs[0], -1, 0, lfd, 0);
	if (T_OK(lfd >= 0) && T_OK(tfd >= 0) &&
	    T_OK(!k->mmap(k->ctx, lfd, (size_t)page * 9, 0, PROT_READ | PROT_WRITE, &base)) &&
	    T_OK(!k->ioctl(k->ctx, tfd, PERF_EVENT_IOC_SET_OUTPUT, (unsigned long)lfd))) {
		T_EQ_INT(k->ioctl(k->ctx, tfd, PERF_EVENT_IOC_ENABLE, 0), 0);
		T_EQ_INT(k->ioctl(k->ctx, lfd, PERF_EVENT_IOC_ENABLE, 0), 0);
		T_EQ_INT(shm.trig_off[0], EMU_TRIG_ON);
		for (i = 1; i <= 4; i++)
			feed_sample(m, 1000 * (uint64_t)i);
		/* Off for the rest of tick 0, in the trigger's group. */
		T_EQ_INT(shm.trig_off[0], EMU_TRIG_THROTTLED(0));
		T_EQ_INT(shm.trig_group[0], 1);
		feed_sample(m, 4500000);
		T_EQ_INT(shm.trig_off[0], EMU_TRIG_ON);
		ring_text(base, page, text, sizeof(text));
		T_EQ_STR(text, "S@1000 S@2000 S@3000 T@4000 S@4000 U@4000000 S@4500000");
		/* Counting starts again in tick 1: three more, the 4th throttles. */
		for (i = 1; i <= 3; i++)
			feed_sample(m, 4500000 + 1000 * (uint64_t)i);
		T_EQ_INT(shm.trig_off[0], EMU_TRIG_THROTTLED(1));
	}
	if (base)
		k->munmap(k->ctx, base, (size_t)page * 9);
	prec_kmodel_watch_triggers(m, NULL);
	prec_kmodel_free(m);
}

/*
 * CPU 0's switch records as "O|O+|I TID>NEXT|TID<PREV@TIME" (O+: out with
 * PREEMPT), from SWITCH_CPU_WIDE records with a TID|TIME trailer.
 */
static void switch_text(const void *base, long page, char *out, size_t size)
{
	const struct perf_event_mmap_page *pg = base;
	const uint8_t *d = (const uint8_t *)base + page;
	uint64_t pos, head = pg->data_head;
	size_t n = 0;

	out[0] = 0;
	for (pos = 0; pos + 8 <= head && n + 48 < size;) {
		const struct perf_event_header *h = (const void *)(d + pos);
		const uint8_t *b = (const uint8_t *)(h + 1);
		bool o = h->misc & PERF_RECORD_MISC_SWITCH_OUT;

		pos += h->size;
		if (h->type != PERF_RECORD_SWITCH_CPU_WIDE || h->size != 32)
			continue;
		n += (size_t)snprintf(out + n, size - n, "%s%s %u%c%u@%llu", n ? " " : "",
				      !o ? "I" : h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT ? "O+" : "O",
				      prec_rd32(b + 12), o ? '>' : '<', prec_rd32(b + 4),
				      (unsigned long long)prec_rd64(b + 16));
	}
}

/*
 * Opens an enabled context-switch dummy event (TID and TIME samples, ids
 * on every record) on the task of model kernel @k and maps its 8-page ring
 * at *@base. Returns its fd, or -1 (any fd opened is left to the model).
 */
static int open_switch_ring(const struct prec_kernel *k, long page, void **base)
{
	struct prec_attr a;
	int fd;

	make_attr(&a, E_DUMMY, 0);
	a.context_switch = 1;
	a.sample_id_all = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	fd = k->open(k->ctx, &a, -1, 0, -1, 0);
	if (fd < 0 || k->mmap(k->ctx, fd, (size_t)page * 9, 0, PROT_READ | PROT_WRITE, base) ||
	    k->ioctl(k->ctx, fd, PERF_EVENT_IOC_ENABLE, 0))
		return -1;
	return fd;
}

/*
 * The scheduler with threads that sleep: threads 100 and 102 share CPU 0
 * (101 has CPU 1). A thread that waits leaves its CPU without PREEMPT, to
 * the runnable thread preempted first, else to the idle task; one that
 * returns from its wait takes its CPU back, the holder preempted; a wait
 * that comes late (the clock of another process) does not take the CPU's
 * switches back in time.
 */
static void sched_waits(void)
{
	struct prec_kmodel *m = prec_kmodel_new(2);
	struct prec_emu_config pt = { 0 };
	struct prec_kmodel_emu cfg = { .aux_type = AUX_TYPE, .pt = &pt };
	const struct prec_kernel *k;
	long page = sysconf(_SC_PAGESIZE);
	void *base = NULL;
	char text[1024];
	int fd;

	if (!T_OK(m) || !T_OK(!prec_kmodel_emulate(m, &cfg))) {
		prec_kmodel_free(m);
		return;
	}
	k = prec_kmodel_kernel(m);
	fd = open_switch_ring(k, page, &base);
	if (T_OK(fd >= 0)) {
#define W PREC_EMU_WOKEN, EMU_SLOT_PRIVATE
#define S PREC_EMU_SLEEP, EMU_SLOT_PRIVATE
		T_EQ_INT(prec_kmodel_emu_sched(m, 100, 100, 10, W), 0);
		T_EQ_INT(prec_kmodel_emu_sched(m, 100, 101, 20, W), 0); /* CPU 1 */
		T_EQ_INT(prec_kmodel_emu_sched(m, 100, 102, 30, W), 0); /* preempts 100 */
		T_EQ_INT(prec_kmodel_emu_sched(m, 100, 102, 40, S), 0);  /* 100 runs again */
		T_EQ_INT(prec_kmodel_emu_sched(m, 100, 100, 35, S), 0);  /* late: at 40 */
		T_EQ_INT(prec_kmodel_emu_sched(m, 100, 101, 45, S), 0);  /* CPU 1 */
		T_EQ_INT(prec_kmodel_emu_sched(m, 100, 102, 50, W), 0);
		T_EQ_INT(prec_kmodel_emu_sched(m, 100, 102, 60, S), 0);
#undef W
#undef S
		switch_text(base, page, text, sizeof(text));
		T_EQ_STR(text, "O+ 0>100@10 I 100<0@10 O+ 100>102@30 I 102<100@30 "
			       "O 102>100@40 I 100<102@40 O 100>0@40 I 0<100@40 "
			       "O+ 0>102@50 I 102<0@50 O 102>0@60 I 0<102@60");
	}
	if (base)
		k->munmap(k->ctx, base, (size_t)page * 9);
	if (fd >= 0)
		k->close(k->ctx, fd);
	prec_kmodel_free(m);
}

/* The records of a ring as "type:misc:eN", N the event of its IDENTIFIER trailer in @ids. */
static void types_text(const void *base, long page, const uint64_t *ids, int n, char *out,
		       size_t size)
{
	const struct perf_event_mmap_page *pg = base;
	const uint8_t *d = (const uint8_t *)base + page;
	uint64_t pos, head = pg->data_head;
	size_t at = 0;
	int i;

	out[0] = 0;
	for (pos = 0; pos + 8 <= head && at + 32 < size;) {
		const struct perf_event_header *h = (const void *)(d + pos);
		uint64_t id = prec_rd64((const uint8_t *)h + h->size - 8); /* the IDENTIFIER trailer */

		for (i = 0; i < n && ids[i] != id; i++)
			;
		at += (size_t)snprintf(out + at, size - at, "%s%u:%#x:e%d", at ? " " : "", h->type,
				       h->misc, i);
		pos += h->size;
	}
}

/*
 * The producer side's entry points for side-band occurrences
 * (kmodel_occur.c), where the real kernel cannot be asked alike (its
 * global counts include every process's events): an MMAP2-only event gets
 * nothing while no event has mmap or mmap_data (nr_mmap_events); records
 * go in perf_iterate_sb()'s order (newest first); a fork copies inherit
 * events only, whose copy sees the child's EXIT; a sleep's switch out has
 * no PREEMPT, a preemption's has.
 */
static void sideband_order(void)
{
	struct prec_kmodel *m = prec_kmodel_new(2);
	const struct prec_kernel *k = prec_kmodel_kernel(m);
	pid_t self = getpid();
	struct prec_kmodel_task t = { self, self, 0, 1 }, kid = { 1 << 22, 1 << 22, 0, 2 };
	struct prec_kmodel_task idle = { 0, 0, 0, 3 };
	struct prec_kmodel_vma exe = { 0x10000, 8192, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE,
				       8, 1, 42, 0, "/bin/x" };
	struct prec_kmodel_vma data = exe;
	long page = sysconf(_SC_PAGESIZE);
	uint64_t ids[3] = { 0 };
	int fd[3], i;
	void *base = NULL;
	char text[512];
	struct prec_attr a;

	data.prot = PROT_READ;
	for (i = 0; i < 3; i++) {
		make_attr(&a, E_DUMMY, 0);
		a.sample_type = PERF_SAMPLE_IDENTIFIER;
		a.sample_id_all = 1;
		a.mmap2 = i == 0;
		a.mmap_data = a.task = a.inherit = i == 1;
		a.context_switch = i == 2;
		fd[i] = k->open(k->ctx, &a, self, 0, -1, 0);
		if (!T_OK(fd[i] >= 0) || (i && !T_OK(!prec_kernel_set_output(k, fd[i], fd[0]))))
			goto out;
		prec_kernel_id(k, fd[i], &ids[i]);
		if (!i && !T_OK(!k->mmap(k->ctx, fd[0], (size_t)page * 5, 0, PROT_READ | PROT_WRITE,
					 &base)))
			goto out;
		k->ioctl(k->ctx, fd[i], PERF_EVENT_IOC_ENABLE, 0);
		if (!i) /* mmap2 alone: nr_mmap_events is zero */
			prec_kmodel_mmap(m, &t, &exe);
	}
	prec_kmodel_mmap(m, &t, &exe);
	prec_kmodel_mmap(m, &t, &data);
	T_EQ_INT(prec_kmodel_fork(m, &t, kid.pid, kid.tid, false), 0);
	prec_kmodel_exit(m, &kid, self, self);
	prec_kmodel_switch(m, &t, &idle, false, false);
	prec_kmodel_switch(m, &t, &idle, true, false);
	prec_kmodel_switch(m, &t, &kid, false, true);
	types_text(base, page, ids, 3, text, sizeof(text));
	T_EQ_STR(text, "10:0x2:e0 1:0x2002:e1 7:0:e1 7:0:e0 4:0:e1 "
		       "14:0x2000:e2 14:0:e2 14:0x6000:e2");
out:
	if (base)
		k->munmap(k->ctx, base, (size_t)page * 5);
	prec_kmodel_free(m);
}

/* As the plugin asks for thread @tid's CPU: its word (slot tid - 100) goes to 0 first. */
static int ask(struct prec_kmodel *m, struct emu_shm *h, uint32_t tid, uint64_t time, int what)
{
	h->run[tid - 100] = 0;
	return prec_kmodel_emu_sched(m, 100, tid, time, what, tid - 100);
}

/*
 * The time slice on one CPU, with threads the plugin holds back (a shared
 * header): a new thread runs at once on an idle CPU, else joins the run
 * queue; a slice that ends (EMU_MSG_TICK) with nobody else runnable goes
 * on, one that ends with others runnable is told to yield, and its
 * EMU_MSG_SLICE preempts it (PREEMPT) for the thread that waited longest,
 * which alone gets its word; a thread back from a sleep waits in the queue
 * (no wakeup preemption).
 */
static void sched_slice(void)
{
	struct prec_kmodel *m = prec_kmodel_new(1);
	struct prec_emu_config pt = { 0 };
	struct prec_kmodel_emu cfg = { .aux_type = AUX_TYPE, .pt = &pt, .slice = 100 };
	struct emu_shm *h = calloc(1, EMU_SHM_HDR);
	const struct prec_kernel *k = NULL;
	long page = sysconf(_SC_PAGESIZE);
	void *base = NULL;
	char text[1024];
	int fd = -1;

	if (!T_OK(m && h) || !T_OK(!prec_kmodel_emulate(m, &cfg)))
		goto out;
	prec_kmodel_watch_triggers(m, h->trig_off);
	T_EQ_INT((int)h->sched_on, 1);
	T_EQ_INT((int)h->slice, 100);
	k = prec_kmodel_kernel(m);
	fd = open_switch_ring(k, page, &base);
	if (!T_OK(fd >= 0))
		goto out;
	T_EQ_INT(ask(m, h, 100, 10, PREC_EMU_READY), 0);  /* idle CPU: runs */
	T_EQ_INT((int)h->run[0], 1);
	T_EQ_INT(ask(m, h, 100, 5, PREC_EMU_TICK), 0);    /* alone: a new slice */
	T_EQ_INT((int)h->run[0], EMU_RUN_GO);
	T_EQ_INT(ask(m, h, 101, 20, PREC_EMU_READY), 0);  /* queued */
	T_EQ_INT(ask(m, h, 102, 30, PREC_EMU_READY), 0);  /* queued */
	T_EQ_INT((int)(h->run[1] | h->run[2]), 0);
	T_EQ_INT(ask(m, h, 100, 105, PREC_EMU_TICK), 0);  /* others wait: yield */
	T_EQ_INT((int)h->run[0], EMU_RUN_YIELD);
	T_EQ_INT(ask(m, h, 100, 110, PREC_EMU_SLICE), 0); /* 101 */
	T_EQ_INT((int)(h->run[0] * 100 + h->run[1] * 10 + h->run[2]), 10);
	T_EQ_INT(ask(m, h, 101, 210, PREC_EMU_SLICE), 0); /* 102 */
	T_EQ_INT(prec_kmodel_emu_sched(m, 100, 102, 250, PREC_EMU_SLEEP, 2), 0); /* 100 */
	T_EQ_INT((int)(h->run[0] * 100 + h->run[1] * 10 + h->run[2]), 101);
	T_EQ_INT(ask(m, h, 102, 300, PREC_EMU_WOKEN), 0); /* busy: queued */
	T_EQ_INT((int)h->run[2], 0);
	T_EQ_INT(ask(m, h, 100, 350, PREC_EMU_SLICE), 0); /* 101 */
	T_EQ_INT(ask(m, h, 101, 450, PREC_EMU_SLICE), 0); /* 102, queued before 100 */
	T_EQ_INT((int)(h->run[0] * 100 + h->run[1] * 10 + h->run[2]), 1);
	switch_text(base, page, text, sizeof(text));
	T_EQ_STR(text, "O+ 0>100@10 I 100<0@10 O+ 100>101@110 I 101<100@110 "
		       "O+ 101>102@210 I 102<101@210 O 102>100@250 I 100<102@250 "
		       "O+ 100>101@350 I 101<100@350 O+ 101>102@450 I 102<101@450");
out:
	if (base)
		k->munmap(k->ctx, base, (size_t)page * 9);
	if (fd >= 0)
		k->close(k->ctx, fd);
	if (m)
		prec_kmodel_watch_triggers(m, NULL);
	prec_kmodel_free(m);
	free(h);
}

static const struct t_case cases[] = {
	T(rules_model), T(rules_kernel), T(aux_model_only), T(fds_and_poll), T(recorder_over_model),
	T(exec_enables_once), T(mlock_budget), T(addr_filters), T(trigger_flags), T(throttle),
	T(sched_waits), T(sideband_order), T(sched_slice),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}

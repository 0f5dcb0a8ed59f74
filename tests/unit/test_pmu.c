// SPDX-License-Identifier: MIT
/*
 * PMU and tracepoint resolution against the running kernel (no
 * PTREC_SYSROOT): sysfs PMUs, tracefs ids, the syscall table, and events
 * built by the parser opened with perf_event_open(2) and counted against
 * what a child process is known to do. Cases that need root skip without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spec/evspec.h"
#include "harness.h"
#include "base/perf_abi.h"
#include "spec/pmu.h"

/*
 * The C library's numbers of syscalls that only x86-64 has; the cases that
 * compare ptrec's (x86-64) syscall table with them skip elsewhere.
 */
#if !defined(__x86_64__)
#define SYS_stat (-1)
#define SYS_lstat (-1)
#define SYS_getpgrp (-1)
#endif

static void need_root(void)
{
	unsetenv("PTREC_SYSROOT");
	if (geteuid() != 0)
		t_skip("needs root");
	/* An emulator (qemu-user for the arm64 build's tests) has no perf_event_open. */
	if (syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0) < 0 && errno == ENOSYS)
		t_skip("perf_event_open is not implemented here (under qemu-user?)");
}

/* prec_syscall_nr() is the x86-64 table: only there is the C library's a peer. */
static void need_x86_64_syscalls(void)
{
#if !defined(__x86_64__)
	t_skip("ptrec's syscall table is x86-64's; this architecture numbers syscalls differently");
#endif
}

static bool read_u64_file(const char *path, uint64_t *v)
{
	FILE *f = fopen(path, "r");
	unsigned long long x;
	bool ok;

	if (!f)
		return false;
	ok = fscanf(f, "%llu", &x) == 1;
	fclose(f);
	*v = x;
	return ok;
}

static void real_pmus(void)
{
	static const char *const want[] = { "software", "tracepoint", "breakpoint", "uprobe" };
	char **names;
	size_t n, i, j;

	unsetenv("PTREC_SYSROOT");
	T_EQ_INT(prec_pmu_names(&names, &n), 0);
	for (j = 0; j < T_N(want); j++) {
		char path[256];
		uint64_t type;
		struct prec_pmu *p;
		bool found = false;

		for (i = 0; i < n; i++)
			found |= !strcmp(names[i], want[j]);
		t_check(found, __FILE__, __LINE__, "PMU %s not listed", want[j]);
		snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s/type", want[j]);
		if (!read_u64_file(path, &type))
			continue;
		T_EQ_INT(prec_pmu_load(want[j], &p), 0);
		if (p) {
			T_EQ_INT(p->type, type);
			T_OK(!p->aux);
		}
		prec_pmu_free(p);
	}
	prec_strv_free(names, n);
	{
		struct prec_pmu *p = NULL;
		const struct prec_pmu_format *f;

		T_EQ_INT(prec_pmu_load("uprobe", &p), 0);
		f = prec_pmu_format(p, "retprobe");
		T_OK(f && f->word == 0 && f->mask == 1);
		prec_pmu_free(p);
	}
	T_EQ_INT(prec_pmu_load("no_such_pmu", &(struct prec_pmu *){ NULL }), -PREC_E_NOPMU);
	T_EQ_INT(prec_pmu_load("../devices", &(struct prec_pmu *){ NULL }), -PREC_E_NOPMU);
}

static int tracefs_or_skip(char *dir, size_t size)
{
	int err = prec_tracefs_dir(dir, size);

	if (err)
		t_skip("tracefs is not available");
	return 0;
}

static void tracepoint_ids(void)
{
	static const char *const tps[] = {
		"syscalls:sys_enter_newuname", "syscalls:sys_exit_newuname", "syscalls:sys_enter_openat",
		"sched:sched_switch", "raw_syscalls:sys_enter", "sched:sched_process_exec",
	};
	char dir[PATH_MAX];
	size_t i;

	need_root();
	tracefs_or_skip(dir, sizeof(dir));
	for (i = 0; i < T_N(tps); i++) {
		struct prec_evlist *el = NULL;
		struct prec_diag d;
		char path[PATH_MAX + 128], sys[64];
		const char *colon = strchr(tps[i], ':');
		uint64_t id;

		snprintf(sys, sizeof(sys), "%.*s", (int)(colon - tps[i]), tps[i]);
		snprintf(path, sizeof(path), "%s/events/%s/%s/id", dir, sys, colon + 1);
		if (!read_u64_file(path, &id)) {
			t_check(false, __FILE__, __LINE__, "cannot read %s", path);
			continue;
		}
		t_check(!prec_evspec_parse(tps[i], NULL, &el, &d), __FILE__, __LINE__, "%s: %s",
			tps[i], d.msg);
		if (!el)
			continue;
		T_EQ_U64(prec_evlist_event(el, 0)->attr.config, id);
		T_EQ_U64(prec_evlist_event(el, 0)->tp.id, id);
		T_EQ_INT(prec_evlist_event(el, 0)->attr.type, PERF_TYPE_TRACEPOINT);
		prec_evlist_free(el);
	}
}

/* Every syscall tracepoint of this kernel has a number in ptrec's table. */
static void syscall_table_covers_tracefs(void)
{
	char **names;
	size_t n, i, enters = 0;

	need_x86_64_syscalls();
	need_root();
	if (prec_tracepoint_names("syscalls", &names, &n))
		t_skip("no syscalls tracepoints");
	for (i = 0; i < n; i++) {
		if (strncmp(names[i], "sys_enter_", 10))
			continue;
		enters++;
		t_check(prec_syscall_nr(names[i] + 10) >= 0, __FILE__, __LINE__,
			"syscall %s of this kernel is not in the table", names[i] + 10);
	}
	T_OK(enters > 300);
	prec_strv_free(names, n);
	/* the renamed ones, against the C library's numbers */
	T_EQ_INT(prec_syscall_nr("newuname"), SYS_uname);
	T_EQ_INT(prec_syscall_nr("newstat"), SYS_stat);
	T_EQ_INT(prec_syscall_nr("newfstat"), SYS_fstat);
	T_EQ_INT(prec_syscall_nr("newlstat"), SYS_lstat);
	T_EQ_INT(prec_syscall_nr("sendfile64"), SYS_sendfile);
	T_EQ_INT(prec_syscall_nr("umount"), SYS_umount2);
	T_EQ_INT(prec_syscall_nr("read"), SYS_read);
	T_EQ_INT(prec_syscall_nr("openat"), SYS_openat);
	T_EQ_INT(prec_syscall_nr("exit_group"), SYS_exit_group);
	T_EQ_INT(prec_syscall_nr("clone3"), SYS_clone3);
	T_EQ_INT(prec_syscall_nr("uname"), -ENOENT);
	T_EQ_STR(prec_syscall_name(SYS_uname), "newuname");
}

/* fork()s a child that waits for a byte on a pipe, then runs @fn and exits. */
/*
 * Forks a child that runs @fn once told to go. It reports ready only after
 * its own set-up syscalls (the closes), so counters opened afterwards see
 * nothing but @fn's.
 */
static pid_t spawn(int *go, void (*fn)(void *), void *arg)
{
	int p[2], r[2];
	pid_t pid;
	char c;

	if (pipe(p))
		return -1;
	if (pipe(r)) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	pid = fork();
	if (pid == 0) {
		close(p[1]);
		close(r[0]);
		if (write(r[1], "r", 1) != 1 || read(p[0], &c, 1) != 1)
			_exit(1);
		fn(arg);
		_exit(0);
	}
	close(p[0]);
	close(r[1]);
	if (pid > 0 && read(r[0], &c, 1) != 1) {
		close(r[0]);
		close(p[1]);
		return -1;
	}
	close(r[0]);
	*go = p[1];
	return pid;
}

static int run_child(pid_t pid, int go)
{
	int status = 0;

	if (write(go, "g", 1) != 1)
		return -1;
	close(go);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int open_event(const struct prec_event *e, pid_t pid)
{
	struct prec_attr a = e->attr;

	return prec_perf_event_open(&a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static uint64_t read_count(int fd)
{
	uint64_t v = ~0ull;

	if (fd < 0 || read(fd, &v, sizeof(v)) != sizeof(v))
		return ~0ull;
	return v;
}

struct sc {
	const char *name;
	long sys;               /* the C library's number: an independent peer */
	long a[4];              /* -1000 scratch buffer, -1001 "/", -1002 a missing path */
};

static char scratch[4096];

static long arg(long v)
{
	if (v == -1000)
		return (long)scratch;
	if (v == -1001)
		return (long)"/";
	if (v == -1002)
		return (long)"/nonexistent-ptrec-test";
	return v;
}

static const struct sc calls[] = {
	{ "getpid", SYS_getpid, { 0 } }, { "getppid", SYS_getppid, { 0 } }, { "getuid", SYS_getuid, { 0 } },
	{ "geteuid", SYS_geteuid, { 0 } }, { "getgid", SYS_getgid, { 0 } }, { "gettid", SYS_gettid, { 0 } },
	{ "sched_yield", SYS_sched_yield, { 0 } }, { "getpgrp", SYS_getpgrp, { 0 } },
	{ "newuname", SYS_uname, { -1000 } }, { "umask", SYS_umask, { 022 } },
	{ "getcwd", SYS_getcwd, { -1000, 4096 } }, { "close", SYS_close, { -1 } }, { "dup", SYS_dup, { -1 } },
	{ "newfstat", SYS_fstat, { -1, -1000 } }, { "newstat", SYS_stat, { -1001, -1000 } },
	{ "newlstat", SYS_lstat, { -1001, -1000 } }, { "sendfile64", SYS_sendfile, { -1, -1, 0, 0 } },
	{ "umount", SYS_umount2, { -1002, 0 } }, { "newfstatat", SYS_newfstatat, { -100, -1001, -1000, 0 } },
	{ "openat", SYS_openat, { -100, -1002, O_RDONLY } }, { "clock_gettime", SYS_clock_gettime, { 1, -1000 } },
	{ "getrusage", SYS_getrusage, { 0, -1000 } },
};

#define NCALLS 3

static void do_calls(void *unused)
{
	size_t i;
	int k;

	for (i = 0; i < T_N(calls); i++) {
		int nr = prec_syscall_nr(calls[i].name);

		for (k = 0; k < NCALLS; k++)
			syscall(nr, arg(calls[i].a[0]), arg(calls[i].a[1]), arg(calls[i].a[2]),
				arg(calls[i].a[3]));
	}
}

/*
 * The kernel says which number each syscall tracepoint belongs to: a child
 * makes syscall(prec_syscall_nr(NAME)) three times, and the counter on
 * syscalls:sys_enter_NAME must read exactly three.
 */
static void syscall_numbers_kernel(void)
{
	int fds[T_N(calls)];
	size_t i;
	pid_t pid;
	int go = -1;

	need_x86_64_syscalls();
	need_root();
	pid = spawn(&go, do_calls, NULL);
	T_OK(pid > 0);
	for (i = 0; i < T_N(calls); i++) {
		char spec[128];
		struct prec_evlist *el = NULL;
		struct prec_diag d;

		fds[i] = -1;
		T_EQ_INT(prec_syscall_nr(calls[i].name), calls[i].sys);
		snprintf(spec, sizeof(spec), "syscalls:sys_enter_%s", calls[i].name);
		if (prec_evspec_parse(spec, NULL, &el, &d)) {
			t_check(false, __FILE__, __LINE__, "%s: %s", spec, d.msg);
			continue;
		}
		T_EQ_INT(prec_evlist_event(el, 0)->tp.syscall_nr, calls[i].sys);
		fds[i] = open_event(prec_evlist_event(el, 0), pid);
		t_check(fds[i] >= 0, __FILE__, __LINE__, "perf_event_open %s: %s", spec,
			strerror(-fds[i]));
		prec_evlist_free(el);
	}
	T_EQ_INT(run_child(pid, go), 0);
	for (i = 0; i < T_N(calls); i++) {
		uint64_t c = read_count(fds[i]);

		t_check(c == NCALLS, __FILE__, __LINE__, "sys_enter_%s counted %llu, expected %d",
			calls[i].name, (unsigned long long)c, NCALLS);
		if (fds[i] >= 0)
			close(fds[i]);
	}
}

/* work(): +0 nop, +1 lea (3 bytes), +4 ret */
static const char prog_src[] =
	"#include <stdlib.h>\n"
	"__asm__(\".text\\n.globl work\\n.type work,@function\\nwork:\\n\"\n"
	"	\"\\tnop\\n\\tlea 1(%rdi), %eax\\n\\tret\\n.size work, .-work\\n\");\n"
	"int work(int x);\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	int n = argc > 1 ? atoi(argv[1]) : 0, s = 0, i;\n"
	"	for (i = 0; i < n; i++)\n"
	"		s += work(i);\n"
	"	return s == -1;\n"
	"}\n";

static char prog[PATH_MAX];

static void exec_prog(void *n)
{
	char *argv[] = { prog, n, NULL };

	execv(prog, argv);
	_exit(127);
}

/*
 * uprobe and uretprobe events built by the parser, opened on a child that
 * calls work() a known number of times: the counts must match.
 */
static void uprobe_counts(void)
{
	static const char *const specs[] = { "uprobe:", "uretprobe:", "uprobe:", "uprobe:" };
	static const char *const syms[] = { "work", "work", "main", "work+4" };
	const uint64_t want[] = { 1234, 1234, 1, 1234 };
	char src[PATH_MAX + 8], cmd[3 * PATH_MAX];
	int fds[T_N(specs)];
	FILE *f;
	size_t i;
	pid_t pid;
	int go = -1;

	need_root();
	snprintf(src, sizeof(src), "%s/prog.c", t_tmpdir());
	snprintf(prog, sizeof(prog), "%s/prog", t_tmpdir());
	f = fopen(src, "w");
	T_OK(f != NULL);
	fputs(prog_src, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -O1 -o '%s' '%s'", prog, src);
	if (system(cmd))
		t_skip("no C compiler");
	pid = spawn(&go, exec_prog, "1234");
	T_OK(pid > 0);
	for (i = 0; i < T_N(specs); i++) {
		char spec[2 * PATH_MAX];
		struct prec_evlist *el = NULL;
		struct prec_diag d;

		fds[i] = -1;
		snprintf(spec, sizeof(spec), "%s%s:%s", specs[i], prog, syms[i]);
		if (prec_evspec_parse(spec, NULL, &el, &d)) {
			t_check(false, __FILE__, __LINE__, "%s: %s", spec, d.msg);
			continue;
		}
		fds[i] = open_event(prec_evlist_event(el, 0), pid);
		t_check(fds[i] >= 0, __FILE__, __LINE__, "perf_event_open %s: %s", spec,
			strerror(-fds[i]));
		prec_evlist_free(el);
	}
	T_EQ_INT(run_child(pid, go), 0);
	{
		/* +2 is inside the lea: refused before it could corrupt the program */
		char spec[2 * PATH_MAX];
		struct prec_evlist *el = NULL;
		struct prec_diag d;

		snprintf(spec, sizeof(spec), "uprobe:%s:work+2", prog);
		T_EQ_INT(prec_evspec_parse(spec, NULL, &el, &d), -ERANGE);
		T_CONTAINS(d.msg, "inside an instruction");
		T_CONTAINS(d.hint, "+1 and +4");
	}
	for (i = 0; i < T_N(specs); i++) {
		uint64_t c = read_count(fds[i]);

		t_check(c == want[i], __FILE__, __LINE__, "%s%s counted %llu, expected %llu",
			specs[i], syms[i], (unsigned long long)c, (unsigned long long)want[i]);
		if (fds[i] >= 0)
			close(fds[i]);
	}
}

/* The uname(2) window of ptrec(1), without the tracer: the triggers count. */
static void do_uname(void *n)
{
	struct utsname u;
	int i;

	for (i = 0; i < atoi(n); i++)
		uname(&u);
}

static void tracepoint_counts(void)
{
	struct prec_evlist *el = NULL;
	struct prec_diag d;
	int fd[2], go = -1;
	size_t i;
	pid_t pid;

	need_root();
	T_EQ_INT(prec_evspec_parse("syscalls:sys_enter_newuname,syscalls:sys_exit_newuname:u",
				   NULL, &el, &d), 0);
	if (!el)
		return;
	pid = spawn(&go, do_uname, "7");
	for (i = 0; i < 2; i++) {
		fd[i] = open_event(prec_evlist_event(el, i), pid);
		T_OK(fd[i] >= 0);
	}
	T_EQ_INT(run_child(pid, go), 0);
	for (i = 0; i < 2; i++) {
		T_EQ_U64(read_count(fd[i]), 7);
		close(fd[i]);
	}
	prec_evlist_free(el);
}

static volatile int watched __attribute__((aligned(8)));

static void do_writes(void *n)
{
	int i;

	for (i = 0; i < atoi(n); i++)
		watched = i;
}

/*
 * Whether the kernel delivers data breakpoints here at all, asked without
 * ptrec's code: a traced child's debug registers are set through ptrace
 * (DR0 = &watched, DR7 = local enable 0, break on write, 4 bytes) and the
 * child must stop with SIGTRAP when it writes. Some hypervisors accept the
 * registers but never raise the debug exception; perf stat then counts 0 too.
 */
static bool data_breakpoints_fire(void)
{
#if defined(__x86_64__)
	const unsigned long dr7 = 1ul | (1ul << 16) | (3ul << 18);
	bool fired = false;
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return true; /* cannot tell: let the real test speak */
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		raise(SIGSTOP);
		watched = 1;
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st))
		goto out;
	if (ptrace(PTRACE_POKEUSER, pid, (void *)offsetof(struct user, u_debugreg[0]),
		   (void *)&watched) ||
	    ptrace(PTRACE_POKEUSER, pid, (void *)offsetof(struct user, u_debugreg[7]), (void *)dr7))
		goto out;
	if (ptrace(PTRACE_CONT, pid, NULL, NULL) || waitpid(pid, &st, 0) != pid)
		goto out;
	fired = WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP;
out:
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return fired;
#else
	return true;
#endif
}

/* A write breakpoint from the parser counts the child's writes to a variable. */
static void breakpoint_counts(void)
{
	struct prec_evlist *el = NULL;
	struct prec_diag d;
	char spec[64];
	int fd, go = -1;
	pid_t pid;

	need_root();
	if (!data_breakpoints_fire())
		t_skip("data breakpoints set through ptrace never fire on this machine (a VM "
		       "without debug-register support)");
	snprintf(spec, sizeof(spec), "mem:%p/4:w", (void *)&watched);
	T_EQ_INT(prec_evspec_parse(spec, NULL, &el, &d), 0);
	if (!el)
		return;
	pid = spawn(&go, do_writes, "25");
	fd = open_event(prec_evlist_event(el, 0), pid);
	if (fd == -ENODEV || fd == -EOPNOTSUPP || fd == -ENOSPC) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		prec_evlist_free(el);
		t_skip("no hardware breakpoints here");
	}
	T_OK(fd >= 0);
	T_EQ_INT(run_child(pid, go), 0);
	T_EQ_U64(read_count(fd), 25);
	close(fd);
	prec_evlist_free(el);
}

static const struct t_case cases[] = {
	T(real_pmus), T(tracepoint_ids), T(syscall_table_covers_tracefs), T(syscall_numbers_kernel),
	T(uprobe_counts), T(tracepoint_counts), T(breakpoint_counts),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}

// SPDX-License-Identifier: MIT
/*
 * The first process of the guest that `ptrec record --emulate=system` boots
 * (a static program, /init of the guest's initramfs). It runs the workload
 * named in /ptrec/argv (NUL-separated) with the console's second serial port
 * as its standard output and error, tells the tracer which process it is,
 * and powers the guest off when it ends.
 *
 * The mailbox: a reserved range of guest-physical memory (the kernel's
 * memmap=SIZE$ADDR keeps it out of use) that the host reads from the file
 * backing the guest's RAM. src/record/emusys.h documents its layout. Before
 * the workload runs: the kernel's symbols (/proc/kallsyms) and its pid;
 * when it ends (a ptrace exit stop, its mappings still in place): its
 * executable mappings (/proc/PID/maps) and then its exit status. From the
 * host: a signal for the workload (the mailbox's sig), looked at while it runs.
 * Before the workload runs, too: the physical address of each uprobe's
 * page cache byte (find_uprobes()).
 *
 * The workload's process calls ptrec_guest_mark() just before it execs the
 * workload; the tracer watches that address to learn which kernel task it is.
 * The tracer follows the workload's children too: it finds them in the
 * kernel's task lists, whose layout this process reads from the kernel's
 * BTF and leaves in the mailbox. It traces them (ptrace with the fork,
 * vfork and clone options) to copy their maps at their exit as well.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "record/emusys_mb.h"

static volatile struct prec_emusys_mb *mb;

__attribute__((noinline, used)) void ptrec_guest_mark(void)
{
	__asm__ volatile("" ::: "memory");
}

static void say(const char *msg)
{
	int fd = open("/dev/console", O_WRONLY | O_NOCTTY);

	if (fd >= 0) {
		if (write(fd, msg, strlen(msg)) < 0)
			(void)0;
		close(fd);
	}
}

static void power_off(void)
{
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

/* Copies the file @path to the mailbox at @off (at most @max bytes); its length. */
static uint32_t copy_in(const char *path, size_t off, size_t max)
{
	int fd = open(path, O_RDONLY);
	size_t n = 0;
	ssize_t r;

	if (fd < 0)
		return 0;
	while (n < max && (r = read(fd, (char *)mb + off + n, max - n)) > 0)
		n += (size_t)r;
	close(fd);
	return (uint32_t)n;
}

/*
 * The kernel maps one vDSO image into every process: init's own, the
 * [vdso] line of its maps, is the workload's (the decoder needs the
 * guest kernel's, not the host's).
 */
static void copy_vdso(void)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR), lo, hi;
	char line[256];
	FILE *f = fopen("/proc/self/maps", "r");

	while (base && f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo == base && hi - lo <= PREC_EMUSYS_MB_VDSO_MAX) {
			memcpy((char *)mb + PREC_EMUSYS_MB_VDSO, (const void *)lo, hi - lo);
			mb->vdso_len = (uint32_t)(hi - lo);
		}
	if (f)
		fclose(f);
}

/* ---- the kernel's struct layout, from its BTF (libbpf) ---- */

/* The byte offset of member @name of struct or union @t (anonymous ones searched too); -1. */
static long member_offset(const struct btf *btf, const struct btf_type *t, const char *name,
			  int depth)
{
	const struct btf_member *m;

	if (!btf_is_composite(t) || depth > 8)
		return -1;
	m = btf_members(t);
	for (uint32_t i = 0; i < btf_vlen(t); i++, m++) {
		const char *mname = btf__name_by_offset(btf, m->name_off);
		long off = (long)(btf_member_bit_offset(t, i) / 8), sub = -1;
		int id;

		if (mname && !strcmp(mname, name))
			return off;
		if (m->name_off)
			continue;
		id = btf__resolve_type(btf, m->type); /* typedefs, qualifiers */
		if (id > 0)
			sub = member_offset(btf, btf__type_by_id(btf, (uint32_t)id), name, depth + 1);
		if (sub >= 0)
			return off + sub;
	}
	return -1;
}

/* The definition of struct @name; NULL if none. */
static const struct btf_type *find_struct(const struct btf *btf, const char *name)
{
	int32_t id = btf__find_by_name_kind(btf, name, BTF_KIND_STRUCT);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, (uint32_t)id) : NULL;

	return t && btf_vlen(t) ? t : NULL;
}

/*
 * The offsets of the task_struct, signal_struct and mm_struct members the
 * tracer reads (include/linux/sched.h, sched/signal.h, mm_types.h), into
 * the mailbox.
 */
static void learn_layout(void)
{
	static const char *const names[] = { "pid", "tgid", "real_parent", "comm", "tasks",
					     "signal", "thread_node", "mm", "active_mm" };
	volatile uint32_t *out[] = { &mb->task_pid, &mb->task_tgid, &mb->task_real_parent,
				     &mb->task_comm, &mb->task_tasks, &mb->task_signal,
				     &mb->task_thread_node, &mb->task_mm, &mb->task_active_mm };
	struct btf *btf;
	const struct btf_type *task = NULL, *sig = NULL, *mm = NULL;
	long off;
	int ok = 1;

	mkdir("/sys", 0755);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	libbpf_set_print(NULL); /* its warnings would go to the console */
	btf = btf__parse_raw("/sys/kernel/btf/vmlinux");
	if (btf) {
		task = find_struct(btf, "task_struct");
		sig = find_struct(btf, "signal_struct");
		mm = find_struct(btf, "mm_struct");
	}
	if (!task || !sig || !mm) {
		say("ptrec-guest: the kernel has no BTF: its children are not traced\n");
		btf__free(btf);
		return;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		off = member_offset(btf, task, names[i], 0);
		ok &= off >= 0;
		*out[i] = (uint32_t)off;
	}
	off = member_offset(btf, sig, "thread_head", 0);
	ok &= off >= 0;
	mb->signal_thread_head = (uint32_t)off;
	off = member_offset(btf, mm, "pgd", 0);
	ok &= off >= 0;
	mb->mm_pgd = (uint32_t)off;
	mb->layout_ok = ok ? PREC_EMUSYS_MB_LAYOUT : 0;
	btf__free(btf);
}

/*
 * The uprobes (/ptrec/uprobes: "OFFSET PATH" lines): the guest-physical
 * address of each probed byte. The kernel keys a uprobe by inode and offset
 * (uprobe_register()) and places it in every executable mapping of that
 * file that covers the offset (register_for_each_vma() and uprobe_mmap():
 * at offset_to_vaddr(vma, offset)); a file mapping that was not written
 * maps the file's page cache page there, one page for every process. So
 * the page cache page at OFFSET (found through a mapping of our own, kept
 * locked, and /proc/self/pagemap: the page frame in bits 0-54 when bit 63
 * says present) is the probe, wherever a process maps it. The files of the
 * initramfs stay in the page cache: there is no swap and no disk.
 */
/* The guest-physical address of byte @off of the file @path, through @pagemap; 0 if none. */
static uint64_t file_phys(const char *path, uint64_t off, int pagemap)
{
	const uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), pfn_mask = (1ull << 55) - 1;
	int fd = open(path, O_RDONLY);
	volatile const uint8_t *p;
	uint64_t ent = 0;

	if (fd < 0)
		return 0;
	p = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, (off_t)(off & ~(page - 1)));
	close(fd);
	if (p == MAP_FAILED)
		return 0;
	(void)p[0]; /* the page in, as a fault would bring it */
	mlock((const void *)p, page);
	if (pread(pagemap, &ent, sizeof(ent), (off_t)((uintptr_t)p / page * 8)) != sizeof(ent) ||
	    !(ent >> 63 & 1) || !(ent & pfn_mask))
		return 0;
	return (ent & pfn_mask) * page + (off & (page - 1));
}

static void find_uprobes(void)
{
	char line[4200], path[4096];
	unsigned long long off;
	FILE *f = fopen("/ptrec/uprobes", "r");
	int pm = open("/proc/self/pagemap", O_RDONLY);
	uint32_t n = 0;

	while (f && n < PREC_EMUSYS_MB_UPROBES && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %4095[^\n]", &off, path) != 2)
			continue;
		mb->uprobe_pa[n++] = pm >= 0 ? file_phys(path, off, pm) : 0;
	}
	mb->nuprobes = n;
	if (pm >= 0)
		close(pm);
	if (f)
		fclose(f);
}

static char **read_argv(void)
{
	static char buf[65536];
	static char *argv[256];
	int fd = open("/ptrec/argv", O_RDONLY), n = 0;
	ssize_t len;

	if (fd < 0)
		return NULL;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return NULL;
	buf[len] = 0;
	for (char *p = buf; p < buf + len && n < 255; p += strlen(p) + 1)
		argv[n++] = p;
	argv[n] = NULL;
	return argv;
}

/* The workload's standard output: the second serial port, no CR added. */
static void setup_stdio(void)
{
	int in = open("/dev/null", O_RDONLY), out = open("/dev/ttyS1", O_WRONLY | O_NOCTTY);
	struct termios tio;

	if (out < 0)
		out = open("/dev/console", O_WRONLY | O_NOCTTY);
	if (out >= 0 && !tcgetattr(out, &tio)) {
		tio.c_oflag &= ~(tcflag_t)OPOST;
		tcsetattr(out, TCSANOW, &tio);
	}
	dup2(in, 0);
	dup2(out, 1);
	dup2(out, 2);
}

static void child(char **argv)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	ptrace(PTRACE_TRACEME, 0, NULL, NULL);
	raise(SIGSTOP);
	ptrec_guest_mark();
	execv(argv[0], argv);
	_exit(127);
}

static void on_chld(int sig)
{
	(void)sig;
}

/*
 * Waits for the next change of state of a child or tracee (the workload
 * @pid or a descendant), looking at the mailbox's signal from the host every
 * PREC_EMUSYS_MB_POLL_MS meanwhile (SIGCHLD is blocked: one that comes
 * between the look and the wait ends the wait at once); sends that signal
 * to @pid once. The waitpid() result.
 */
static pid_t wait_child(pid_t pid, int *st, int *sent)
{
	const struct timespec poll = { 0, PREC_EMUSYS_MB_POLL_MS * 1000000L };
	sigset_t chld;
	pid_t w;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		uint32_t sig;

		w = waitpid(-1, st, WNOHANG | __WALL);
		if (w != 0 && !(w < 0 && errno == EINTR))
			return w;
		sig = mb->sig;
		if (sig && sig < 65 && !*sent) {
			*sent = 1;
			kill(pid, (int)sig);
			continue;
		}
		sigtimedwait(&chld, NULL, &poll);
	}
}

/* Appends "@PID\n" and /proc/PID/maps to the mailbox's maps (at the process's exit stop). */
static void copy_maps(pid_t pid)
{
	char path[64], head[24];
	uint32_t len = mb->maps_len;
	int n = snprintf(head, sizeof(head), "@%d\n", (int)pid);

	if (n <= 0 || len + (uint32_t)n >= PREC_EMUSYS_MB_MAPS_MAX)
		return;
	memcpy((char *)mb + PREC_EMUSYS_MB_MAPS + len, head, (size_t)n);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	mb->maps_len = len + (uint32_t)n +
		       copy_in(path, PREC_EMUSYS_MB_MAPS + len + (size_t)n,
			       PREC_EMUSYS_MB_MAPS_MAX - len - (size_t)n);
}

/*
 * The tracees that stopped since they began (PID_MAX_LIMIT bits): a
 * tracee's first stop is the SIGSTOP of its attach, which is not passed on.
 */
static uint8_t stopped_before[(4u << 20) / 8];

/* Whether @pid stopped before; marks it. */
static int seen_before(pid_t pid)
{
	uint32_t i = (uint32_t)pid & ((4u << 20) - 1);
	int seen = stopped_before[i / 8] >> (i % 8) & 1;

	stopped_before[i / 8] |= (uint8_t)(1u << (i % 8));
	return seen;
}

/* @pid ended: a new task may have its number. */
static void forget(pid_t pid)
{
	uint32_t i = (uint32_t)pid & ((4u << 20) - 1);

	stopped_before[i / 8] &= (uint8_t)~(1u << (i % 8));
}

/*
 * Runs the child until it exits; its wait status. Its descendants are
 * traced too (PTRACE_O_TRACEFORK, ...: each starts with a SIGSTOP), for
 * their maps at their exit.
 */
static int supervise(pid_t pid)
{
	int st, sent = 0;
	pid_t w;

	if (waitpid(pid, &st, 0) != pid || !WIFSTOPPED(st))
		return st;
	seen_before(pid);
	ptrace(PTRACE_SETOPTIONS, pid, NULL,
	       (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL | PTRACE_O_TRACEFORK |
			      PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE));
	mb->pid = (uint32_t)pid;
	ptrace(PTRACE_CONT, pid, NULL, NULL);
	for (;;) {
		int sig = 0, first;

		w = wait_child(pid, &st, &sent);
		if (w < 0)
			return -1;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (w == pid)
				return st;
			forget(w);
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		first = !seen_before(w);
		if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXIT << 8)))
			copy_maps(w);
		else if (WSTOPSIG(st) == SIGSTOP && first)
			sig = 0;
		else if (WSTOPSIG(st) != SIGTRAP)
			sig = WSTOPSIG(st);
		ptrace(PTRACE_CONT, w, NULL, (void *)(long)sig);
	}
}

int main(void)
{
	struct sigaction sa;
	sigset_t chld;
	char **argv;
	pid_t pid;
	int fd, st;

	mkdir("/proc", 0755);
	mkdir("/dev", 0755);
	mount("proc", "/proc", "proc", 0, NULL);
	mount("dev", "/dev", "devtmpfs", 0, NULL);
	fd = open("/dev/mem", O_RDWR | O_SYNC);
	if (fd >= 0)
		mb = mmap(NULL, PREC_EMUSYS_MB_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			  PREC_EMUSYS_MB_PHYS);
	if (fd < 0 || mb == MAP_FAILED) {
		say("ptrec-guest: cannot map the mailbox through /dev/mem\n");
		power_off();
	}
	argv = read_argv();
	if (!argv) {
		say("ptrec-guest: no /ptrec/argv\n");
		power_off();
	}
	mb->ksyms_len = copy_in("/proc/kallsyms", PREC_EMUSYS_MB_KSYMS, PREC_EMUSYS_MB_KSYMS_MAX);
	learn_layout();
	find_uprobes();
	copy_vdso();
	setup_stdio();
	/* SIGCHLD blocked (and caught: init ignores signals it has no handler for). */
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_chld;
	sa.sa_flags = 0;
	sigaction(SIGCHLD, &sa, NULL);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	pid = fork();
	if (pid == 0)
		child(argv);
	st = pid < 0 ? -1 : supervise(pid);
	mb->status = (uint32_t)st;
	mb->done = PREC_EMUSYS_MB_DONE;
	msync((void *)mb, PREC_EMUSYS_MB_SIZE, MS_SYNC);
	power_off();
	return 0;
}

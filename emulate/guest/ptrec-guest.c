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

/* ---- the kernel's struct layout, from its BTF (include/uapi/linux/btf.h) ---- */

struct btf {
	const uint8_t *types, *strs;
	uint32_t types_len, strs_len;
	const uint8_t **type; /* type id -> its struct btf_type */
	uint32_t ntypes;
};

enum { BTF_STRUCT = 4, BTF_UNION = 5, BTF_TYPEDEF = 8, BTF_VOLATILE = 9, BTF_CONST = 10,
       BTF_RESTRICT = 11, BTF_TYPE_TAG = 18 };

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* The bytes after a type's 12-byte header, by kind and vlen. */
static uint32_t btf_extra(uint32_t kind, uint32_t vlen)
{
	switch (kind) {
	case 1: case 14: case 17: /* INT, VAR, DECL_TAG */
		return 4;
	case 3: /* ARRAY */
		return 12;
	case 4: case 5: case 15: case 19: /* STRUCT, UNION, DATASEC, ENUM64 */
		return 12 * vlen;
	case 6: case 13: /* ENUM, FUNC_PROTO */
		return 8 * vlen;
	default:
		return 0;
	}
}

/* Indexes the types of the BTF blob @b (@n bytes); 0 or -1. */
static int btf_index(struct btf *bt, const uint8_t *b, size_t n)
{
	uint32_t hdr, off = 0, cap = 1 << 16;

	if (n < 24 || b[0] != 0x9f || b[1] != 0xeb)
		return -1;
	hdr = rd32(b + 4);
	if (hdr > n || rd32(b + 8) > n - hdr || rd32(b + 12) > n - hdr - rd32(b + 8) ||
	    rd32(b + 16) > n - hdr || rd32(b + 20) > n - hdr - rd32(b + 16))
		return -1;
	bt->types = b + hdr + rd32(b + 8);
	bt->types_len = rd32(b + 12);
	bt->strs = b + hdr + rd32(b + 16);
	bt->strs_len = rd32(b + 20);
	bt->type = malloc(cap * sizeof(*bt->type));
	bt->ntypes = 1; /* id 0 is void */
	while (bt->type && off + 12 <= bt->types_len) {
		uint32_t info = rd32(bt->types + off + 4);

		if (bt->ntypes == cap)
			bt->type = realloc(bt->type, (cap *= 2) * sizeof(*bt->type));
		if (!bt->type)
			break;
		bt->type[bt->ntypes++] = bt->types + off;
		off += 12 + btf_extra(info >> 24 & 0x1f, info & 0xffff);
	}
	return bt->type ? 0 : -1;
}

static const char *btf_str(const struct btf *bt, uint32_t off)
{
	return off < bt->strs_len ? (const char *)bt->strs + off : "";
}

/* Type @id without typedefs and qualifiers; NULL if unknown. */
static const uint8_t *btf_resolve(const struct btf *bt, uint32_t id)
{
	for (int hops = 0; id && id < bt->ntypes && hops < 32; hops++) {
		const uint8_t *t = bt->type[id];
		uint32_t kind = rd32(t + 4) >> 24 & 0x1f;

		if (kind != BTF_TYPEDEF && kind != BTF_VOLATILE && kind != BTF_CONST &&
		    kind != BTF_RESTRICT && kind != BTF_TYPE_TAG)
			return t;
		id = rd32(t + 8);
	}
	return NULL;
}

/* The byte offset of member @name of struct or union @t (anonymous ones searched too); -1. */
static long btf_member(const struct btf *bt, const uint8_t *t, const char *name, int depth)
{
	uint32_t info = rd32(t + 4), kind = info >> 24 & 0x1f;

	if ((kind != BTF_STRUCT && kind != BTF_UNION) || depth > 8)
		return -1;
	for (uint32_t i = 0; i < (info & 0xffff); i++) {
		const uint8_t *m = t + 12 + 12 * i;
		uint32_t bits = rd32(m + 8);
		long sub;

		if (info >> 31)
			bits &= 0xffffff; /* kflag: the high byte is a bitfield's size */
		if (!strcmp(btf_str(bt, rd32(m)), name))
			return (long)(bits / 8);
		if (rd32(m))
			continue;
		sub = btf_resolve(bt, rd32(m + 4)) ? btf_member(bt, btf_resolve(bt, rd32(m + 4)),
							       name, depth + 1) : -1;
		if (sub >= 0)
			return (long)(bits / 8) + sub;
	}
	return -1;
}

static const uint8_t *btf_struct(const struct btf *bt, const char *name)
{
	for (uint32_t id = 1; id < bt->ntypes; id++) {
		const uint8_t *t = bt->type[id];

		if ((rd32(t + 4) >> 24 & 0x1f) == BTF_STRUCT && (rd32(t + 4) & 0xffff) &&
		    !strcmp(btf_str(bt, rd32(t)), name))
			return t;
	}
	return NULL;
}

/* Reads the whole file @path into memory; its length in *@n, or NULL. */
static uint8_t *slurp(const char *path, size_t *n)
{
	int fd = open(path, O_RDONLY);
	size_t cap = 1 << 20;
	uint8_t *b = fd >= 0 ? malloc(cap) : NULL;
	ssize_t r;

	*n = 0;
	while (b && (r = read(fd, b + *n, cap - *n)) > 0)
		if ((*n += (size_t)r) == cap)
			b = realloc(b, cap *= 2);
	if (fd >= 0)
		close(fd);
	return b;
}

/*
 * The offsets of the task_struct and signal_struct members the tracer
 * reads (include/linux/sched.h, sched/signal.h), into the mailbox.
 */
static void learn_layout(void)
{
	static const char *const names[] = { "pid", "tgid", "real_parent", "comm", "tasks",
					     "signal", "thread_node" };
	volatile uint32_t *out[] = { &mb->task_pid, &mb->task_tgid, &mb->task_real_parent,
				     &mb->task_comm, &mb->task_tasks, &mb->task_signal,
				     &mb->task_thread_node };
	struct btf bt = { 0 };
	size_t n;
	uint8_t *b;
	const uint8_t *task, *sig;
	long off;
	int ok = 1;

	mkdir("/sys", 0755);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	b = slurp("/sys/kernel/btf/vmlinux", &n);
	if (!b || btf_index(&bt, b, n) < 0 || !(task = btf_struct(&bt, "task_struct")) ||
	    !(sig = btf_struct(&bt, "signal_struct"))) {
		say("ptrec-guest: the kernel has no BTF: its children are not traced\n");
		free(b);
		free(bt.type);
		return;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		off = btf_member(&bt, task, names[i], 0);
		ok &= off >= 0;
		*out[i] = (uint32_t)off;
	}
	off = btf_member(&bt, sig, "thread_head", 0);
	ok &= off >= 0;
	mb->signal_thread_head = (uint32_t)off;
	mb->layout_ok = ok ? PREC_EMUSYS_MB_LAYOUT : 0;
	free(b);
	free(bt.type);
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

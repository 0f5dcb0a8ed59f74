// SPDX-License-Identifier: MIT
/*
 * PMU (sysfs) and tracepoint (tracefs) resolution, the software tracer's
 * built-in intel_pt description, and the x86-64 system call table.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "base/array.h"
#include "spec/pmu.h"
#include "base/util.h"

#define DEVICES "/sys/bus/event_source/devices"
/* Bounds on what one sysfs directory may hold, so a bad tree cannot make us allocate without end. */
#define MAX_DIR_ENTRIES 65536
#define MAX_NAME 255

/*
 * The intel_pt format table, as arch/x86/events/intel/pt.c exports it. This is
 * the one copy in ptrec: the emulated tracer uses it, `ptrec list --sysfs`
 * prints it, and the test fixtures are generated from that output.
 */
static const struct {
	const char *name, *text;
} emu_pt_formats[] = {
	{ "pt", "config:0" },
	{ "cyc", "config:1" },
	{ "pwr_evt", "config:4" },
	{ "fup_on_ptw", "config:5" },
	{ "mtc", "config:9" },
	{ "tsc", "config:10" },
	{ "noretcomp", "config:11" },
	{ "ptw", "config:12" },
	{ "branch", "config:13" },
	{ "mtc_period", "config:14-17" },
	{ "cyc_thresh", "config:19-22" },
	{ "psb_period", "config:24-27" },
	{ "event", "config:31" },
	{ "notnt", "config:55" },
};

/*
 * What the software tracer implements, in the kernel's caps/ vocabulary (hex
 * bit masks as pt_cap_show() prints them). The MTC, PSB and CYC value sets
 * are those of common hardware, so emulated recordings look like real ones;
 * PTWRITE, power events, event trace and TNT disable are not emulated, so
 * the terms that need them are refused as the kernel would. IP filtering is:
 * two address ranges (CPUID.(EAX=14H,ECX=1):EAX[2:0] of prec_emu_cpu).
 */
static const struct {
	const char *name, *value;
} emu_pt_caps[] = {
	{ "max_subleaf", "1" },
	{ "cr3_filtering", "0" },
	{ "psb_cyc", "1" },
	{ "ip_filtering", "1" },
	{ "mtc", "1" },
	{ "ptwrite", "0" },
	{ "power_event_trace", "0" },
	{ "event_trace", "0" },
	{ "tnt_disable", "0" },
	{ "topa_output", "1" },
	{ "topa_multiple_entries", "1" },
	{ "single_range_output", "1" },
	{ "output_subsys", "0" },
	{ "payloads_lip", "0" },
	{ "num_address_ranges", "2" },
	{ "mtc_periods", "249" },
	{ "cycle_thresholds", "3fff" },
	{ "psb_periods", "3f" },
};

/*
 * x86-64 system calls by their tracepoint names. Generated once from the
 * uapi <asm/unistd_64.h> plus the calls added since (up to listns, 470),
 * renamed where the kernel's SYSCALL_DEFINE name differs from __NR_ (stat ->
 * newstat, uname -> newuname, ...), and without the numbers that were never
 * implemented on x86-64 (tuxcall, afs_syscall, ...). Sorted by number.
 */
static const struct {
	int nr;
	const char *name;
} syscalls[] = {
	{ 0, "read" },
	{ 1, "write" },
	{ 2, "open" },
	{ 3, "close" },
	{ 4, "newstat" },
	{ 5, "newfstat" },
	{ 6, "newlstat" },
	{ 7, "poll" },
	{ 8, "lseek" },
	{ 9, "mmap" },
	{ 10, "mprotect" },
	{ 11, "munmap" },
	{ 12, "brk" },
	{ 13, "rt_sigaction" },
	{ 14, "rt_sigprocmask" },
	{ 15, "rt_sigreturn" },
	{ 16, "ioctl" },
	{ 17, "pread64" },
	{ 18, "pwrite64" },
	{ 19, "readv" },
	{ 20, "writev" },
	{ 21, "access" },
	{ 22, "pipe" },
	{ 23, "select" },
	{ 24, "sched_yield" },
	{ 25, "mremap" },
	{ 26, "msync" },
	{ 27, "mincore" },
	{ 28, "madvise" },
	{ 29, "shmget" },
	{ 30, "shmat" },
	{ 31, "shmctl" },
	{ 32, "dup" },
	{ 33, "dup2" },
	{ 34, "pause" },
	{ 35, "nanosleep" },
	{ 36, "getitimer" },
	{ 37, "alarm" },
	{ 38, "setitimer" },
	{ 39, "getpid" },
	{ 40, "sendfile64" },
	{ 41, "socket" },
	{ 42, "connect" },
	{ 43, "accept" },
	{ 44, "sendto" },
	{ 45, "recvfrom" },
	{ 46, "sendmsg" },
	{ 47, "recvmsg" },
	{ 48, "shutdown" },
	{ 49, "bind" },
	{ 50, "listen" },
	{ 51, "getsockname" },
	{ 52, "getpeername" },
	{ 53, "socketpair" },
	{ 54, "setsockopt" },
	{ 55, "getsockopt" },
	{ 56, "clone" },
	{ 57, "fork" },
	{ 58, "vfork" },
	{ 59, "execve" },
	{ 60, "exit" },
	{ 61, "wait4" },
	{ 62, "kill" },
	{ 63, "newuname" },
	{ 64, "semget" },
	{ 65, "semop" },
	{ 66, "semctl" },
	{ 67, "shmdt" },
	{ 68, "msgget" },
	{ 69, "msgsnd" },
	{ 70, "msgrcv" },
	{ 71, "msgctl" },
	{ 72, "fcntl" },
	{ 73, "flock" },
	{ 74, "fsync" },
	{ 75, "fdatasync" },
	{ 76, "truncate" },
	{ 77, "ftruncate" },
	{ 78, "getdents" },
	{ 79, "getcwd" },
	{ 80, "chdir" },
	{ 81, "fchdir" },
	{ 82, "rename" },
	{ 83, "mkdir" },
	{ 84, "rmdir" },
	{ 85, "creat" },
	{ 86, "link" },
	{ 87, "unlink" },
	{ 88, "symlink" },
	{ 89, "readlink" },
	{ 90, "chmod" },
	{ 91, "fchmod" },
	{ 92, "chown" },
	{ 93, "fchown" },
	{ 94, "lchown" },
	{ 95, "umask" },
	{ 96, "gettimeofday" },
	{ 97, "getrlimit" },
	{ 98, "getrusage" },
	{ 99, "sysinfo" },
	{ 100, "times" },
	{ 101, "ptrace" },
	{ 102, "getuid" },
	{ 103, "syslog" },
	{ 104, "getgid" },
	{ 105, "setuid" },
	{ 106, "setgid" },
	{ 107, "geteuid" },
	{ 108, "getegid" },
	{ 109, "setpgid" },
	{ 110, "getppid" },
	{ 111, "getpgrp" },
	{ 112, "setsid" },
	{ 113, "setreuid" },
	{ 114, "setregid" },
	{ 115, "getgroups" },
	{ 116, "setgroups" },
	{ 117, "setresuid" },
	{ 118, "getresuid" },
	{ 119, "setresgid" },
	{ 120, "getresgid" },
	{ 121, "getpgid" },
	{ 122, "setfsuid" },
	{ 123, "setfsgid" },
	{ 124, "getsid" },
	{ 125, "capget" },
	{ 126, "capset" },
	{ 127, "rt_sigpending" },
	{ 128, "rt_sigtimedwait" },
	{ 129, "rt_sigqueueinfo" },
	{ 130, "rt_sigsuspend" },
	{ 131, "sigaltstack" },
	{ 132, "utime" },
	{ 133, "mknod" },
	{ 134, "uselib" },
	{ 135, "personality" },
	{ 136, "ustat" },
	{ 137, "statfs" },
	{ 138, "fstatfs" },
	{ 139, "sysfs" },
	{ 140, "getpriority" },
	{ 141, "setpriority" },
	{ 142, "sched_setparam" },
	{ 143, "sched_getparam" },
	{ 144, "sched_setscheduler" },
	{ 145, "sched_getscheduler" },
	{ 146, "sched_get_priority_max" },
	{ 147, "sched_get_priority_min" },
	{ 148, "sched_rr_get_interval" },
	{ 149, "mlock" },
	{ 150, "munlock" },
	{ 151, "mlockall" },
	{ 152, "munlockall" },
	{ 153, "vhangup" },
	{ 154, "modify_ldt" },
	{ 155, "pivot_root" },
	{ 157, "prctl" },
	{ 158, "arch_prctl" },
	{ 159, "adjtimex" },
	{ 160, "setrlimit" },
	{ 161, "chroot" },
	{ 162, "sync" },
	{ 163, "acct" },
	{ 164, "settimeofday" },
	{ 165, "mount" },
	{ 166, "umount" },
	{ 167, "swapon" },
	{ 168, "swapoff" },
	{ 169, "reboot" },
	{ 170, "sethostname" },
	{ 171, "setdomainname" },
	{ 172, "iopl" },
	{ 173, "ioperm" },
	{ 175, "init_module" },
	{ 176, "delete_module" },
	{ 179, "quotactl" },
	{ 186, "gettid" },
	{ 187, "readahead" },
	{ 188, "setxattr" },
	{ 189, "lsetxattr" },
	{ 190, "fsetxattr" },
	{ 191, "getxattr" },
	{ 192, "lgetxattr" },
	{ 193, "fgetxattr" },
	{ 194, "listxattr" },
	{ 195, "llistxattr" },
	{ 196, "flistxattr" },
	{ 197, "removexattr" },
	{ 198, "lremovexattr" },
	{ 199, "fremovexattr" },
	{ 200, "tkill" },
	{ 201, "time" },
	{ 202, "futex" },
	{ 203, "sched_setaffinity" },
	{ 204, "sched_getaffinity" },
	{ 206, "io_setup" },
	{ 207, "io_destroy" },
	{ 208, "io_getevents" },
	{ 209, "io_submit" },
	{ 210, "io_cancel" },
	{ 213, "epoll_create" },
	{ 216, "remap_file_pages" },
	{ 217, "getdents64" },
	{ 218, "set_tid_address" },
	{ 219, "restart_syscall" },
	{ 220, "semtimedop" },
	{ 221, "fadvise64" },
	{ 222, "timer_create" },
	{ 223, "timer_settime" },
	{ 224, "timer_gettime" },
	{ 225, "timer_getoverrun" },
	{ 226, "timer_delete" },
	{ 227, "clock_settime" },
	{ 228, "clock_gettime" },
	{ 229, "clock_getres" },
	{ 230, "clock_nanosleep" },
	{ 231, "exit_group" },
	{ 232, "epoll_wait" },
	{ 233, "epoll_ctl" },
	{ 234, "tgkill" },
	{ 235, "utimes" },
	{ 237, "mbind" },
	{ 238, "set_mempolicy" },
	{ 239, "get_mempolicy" },
	{ 240, "mq_open" },
	{ 241, "mq_unlink" },
	{ 242, "mq_timedsend" },
	{ 243, "mq_timedreceive" },
	{ 244, "mq_notify" },
	{ 245, "mq_getsetattr" },
	{ 246, "kexec_load" },
	{ 247, "waitid" },
	{ 248, "add_key" },
	{ 249, "request_key" },
	{ 250, "keyctl" },
	{ 251, "ioprio_set" },
	{ 252, "ioprio_get" },
	{ 253, "inotify_init" },
	{ 254, "inotify_add_watch" },
	{ 255, "inotify_rm_watch" },
	{ 256, "migrate_pages" },
	{ 257, "openat" },
	{ 258, "mkdirat" },
	{ 259, "mknodat" },
	{ 260, "fchownat" },
	{ 261, "futimesat" },
	{ 262, "newfstatat" },
	{ 263, "unlinkat" },
	{ 264, "renameat" },
	{ 265, "linkat" },
	{ 266, "symlinkat" },
	{ 267, "readlinkat" },
	{ 268, "fchmodat" },
	{ 269, "faccessat" },
	{ 270, "pselect6" },
	{ 271, "ppoll" },
	{ 272, "unshare" },
	{ 273, "set_robust_list" },
	{ 274, "get_robust_list" },
	{ 275, "splice" },
	{ 276, "tee" },
	{ 277, "sync_file_range" },
	{ 278, "vmsplice" },
	{ 279, "move_pages" },
	{ 280, "utimensat" },
	{ 281, "epoll_pwait" },
	{ 282, "signalfd" },
	{ 283, "timerfd_create" },
	{ 284, "eventfd" },
	{ 285, "fallocate" },
	{ 286, "timerfd_settime" },
	{ 287, "timerfd_gettime" },
	{ 288, "accept4" },
	{ 289, "signalfd4" },
	{ 290, "eventfd2" },
	{ 291, "epoll_create1" },
	{ 292, "dup3" },
	{ 293, "pipe2" },
	{ 294, "inotify_init1" },
	{ 295, "preadv" },
	{ 296, "pwritev" },
	{ 297, "rt_tgsigqueueinfo" },
	{ 298, "perf_event_open" },
	{ 299, "recvmmsg" },
	{ 300, "fanotify_init" },
	{ 301, "fanotify_mark" },
	{ 302, "prlimit64" },
	{ 303, "name_to_handle_at" },
	{ 304, "open_by_handle_at" },
	{ 305, "clock_adjtime" },
	{ 306, "syncfs" },
	{ 307, "sendmmsg" },
	{ 308, "setns" },
	{ 309, "getcpu" },
	{ 310, "process_vm_readv" },
	{ 311, "process_vm_writev" },
	{ 312, "kcmp" },
	{ 313, "finit_module" },
	{ 314, "sched_setattr" },
	{ 315, "sched_getattr" },
	{ 316, "renameat2" },
	{ 317, "seccomp" },
	{ 318, "getrandom" },
	{ 319, "memfd_create" },
	{ 320, "kexec_file_load" },
	{ 321, "bpf" },
	{ 322, "execveat" },
	{ 323, "userfaultfd" },
	{ 324, "membarrier" },
	{ 325, "mlock2" },
	{ 326, "copy_file_range" },
	{ 327, "preadv2" },
	{ 328, "pwritev2" },
	{ 329, "pkey_mprotect" },
	{ 330, "pkey_alloc" },
	{ 331, "pkey_free" },
	{ 332, "statx" },
	{ 333, "io_pgetevents" },
	{ 334, "rseq" },
	{ 335, "uretprobe" },
	{ 336, "uprobe" },
	{ 424, "pidfd_send_signal" },
	{ 425, "io_uring_setup" },
	{ 426, "io_uring_enter" },
	{ 427, "io_uring_register" },
	{ 428, "open_tree" },
	{ 429, "move_mount" },
	{ 430, "fsopen" },
	{ 431, "fsconfig" },
	{ 432, "fsmount" },
	{ 433, "fspick" },
	{ 434, "pidfd_open" },
	{ 435, "clone3" },
	{ 436, "close_range" },
	{ 437, "openat2" },
	{ 438, "pidfd_getfd" },
	{ 439, "faccessat2" },
	{ 440, "process_madvise" },
	{ 441, "epoll_pwait2" },
	{ 442, "mount_setattr" },
	{ 443, "quotactl_fd" },
	{ 444, "landlock_create_ruleset" },
	{ 445, "landlock_add_rule" },
	{ 446, "landlock_restrict_self" },
	{ 447, "memfd_secret" },
	{ 448, "process_mrelease" },
	{ 449, "futex_waitv" },
	{ 450, "set_mempolicy_home_node" },
	{ 451, "cachestat" },
	{ 452, "fchmodat2" },
	{ 453, "map_shadow_stack" },
	{ 454, "futex_wake" },
	{ 455, "futex_wait" },
	{ 456, "futex_requeue" },
	{ 457, "statmount" },
	{ 458, "listmount" },
	{ 459, "lsm_get_self_attr" },
	{ 460, "lsm_set_self_attr" },
	{ 461, "lsm_list_modules" },
	{ 462, "mseal" },
	{ 463, "setxattrat" },
	{ 464, "getxattrat" },
	{ 465, "listxattrat" },
	{ 466, "removexattrat" },
	{ 467, "open_tree_attr" },
	{ 468, "file_getattr" },
	{ 469, "file_setattr" },
	{ 470, "listns" },
};

void prec_strv_free(char **v, size_t n)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; n == (size_t)-1 ? v[i] != NULL : i < n; i++)
		free(v[i]);
	free(v);
}

/* Appends a copy of @s, keeping room for a NULL after it. */
static int strv_push(char ***v, size_t *n, const char *s)
{
	if (PREC_ARRAY_RESERVE(*v, *n, 2))
		return -ENOMEM;
	(*v)[*n] = strdup(s);
	if (!(*v)[*n])
		return -ENOMEM;
	(*n)++;
	(*v)[*n] = NULL;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Lists the entries of directory @path (without "." and ".."), sorted; with
 * @dirs_only only subdirectories, and @skip_dot also drops names holding a
 * '.' (the .scale/.unit companions of event aliases).
 */
static int list_dir(const char *path, bool dirs_only, bool skip_dot, char ***names, size_t *n)
{
	char **v = NULL;
	size_t cnt = 0;
	struct dirent *de;
	DIR *d;
	int err = 0;

	*names = NULL;
	*n = 0;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' &&
		    (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (skip_dot && strchr(de->d_name, '.'))
			continue;
		if (dirs_only) {
			char p[4096];
			struct stat st;

			if (de->d_type != DT_DIR && de->d_type != DT_LNK && de->d_type != DT_UNKNOWN)
				continue;
			if ((size_t)snprintf(p, sizeof(p), "%s/%s", path, de->d_name) >= sizeof(p))
				continue;
			if (stat(p, &st) || !S_ISDIR(st.st_mode))
				continue;
		}
		if (cnt >= MAX_DIR_ENTRIES) {
			err = -E2BIG;
			break;
		}
		err = strv_push(&v, &cnt, de->d_name);
		if (err)
			break;
	}
	closedir(d);
	if (err) {
		prec_strv_free(v, cnt);
		return err;
	}
	if (cnt)
		qsort(v, cnt, sizeof(*v), cmp_str);
	*names = v;
	*n = cnt;
	return 0;
}

/* A name usable as one path component of a sysfs or tracefs lookup. */
static bool plain_name(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > MAX_NAME || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	return !strpbrk(s, "/*?[]\\");
}

bool prec_pmu_name_is_aux(const char *name)
{
	return !strcmp(name, "intel_pt") || !strcmp(name, "intel_bts") ||
	       !strcmp(name, "cs_etm") || !strcmp(name, "arm_spe") ||
	       !strncmp(name, "arm_spe_", 8) || !strncmp(name, "hisi_ptt", 8);
}

int prec_pmu_format_parse(const char *text, struct prec_pmu_format *f)
{
	static const char *const words[] = { "config", "config1", "config2", "config3" };
	const char *colon = strchr(text, ':'), *p;
	uint64_t mask = 0;
	int word = -1, i;

	if (!colon)
		return -EINVAL;
	for (i = 0; i < 4; i++)
		if ((size_t)(colon - text) == strlen(words[i]) &&
		    !strncmp(text, words[i], (size_t)(colon - text)))
			word = i;
	if (word < 0)
		return -EINVAL;
	p = colon + 1;
	for (;;) {
		char *end;
		unsigned long lo, hi;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		lo = strtoul(p, &end, 10);
		hi = lo;
		p = end;
		if (*p == '-') {
			p++;
			if (*p < '0' || *p > '9')
				return -EINVAL;
			hi = strtoul(p, &end, 10);
			p = end;
		}
		if (lo > 63 || hi > 63 || lo > hi)
			return -EINVAL;
		mask |= (hi == 63 ? ~0ull : ((1ull << (hi + 1)) - 1)) & ~((1ull << lo) - 1);
		if (*p == ',') {
			p++;
			continue;
		}
		while (*p == ' ' || *p == '\n')
			p++;
		if (*p)
			return -EINVAL;
		break;
	}
	f->word = word;
	f->mask = mask;
	f->width = (unsigned)__builtin_popcountll(mask);
	return 0;
}

int prec_pmu_format_encode(const struct prec_pmu_format *f, uint64_t value, uint64_t *bits)
{
	uint64_t out = 0;
	unsigned i, vb = 0;

	if (f->width < 64 && (value >> f->width))
		return -ERANGE;
	for (i = 0; i < 64; i++) {
		if (!(f->mask & (1ull << i)))
			continue;
		if (value & (1ull << vb))
			out |= 1ull << i;
		vb++;
	}
	*bits = out;
	return 0;
}

uint64_t prec_pmu_format_decode(const struct prec_pmu_format *f, uint64_t word)
{
	uint64_t v = 0;
	unsigned i, vb = 0;

	for (i = 0; i < 64; i++) {
		if (!(f->mask & (1ull << i)))
			continue;
		if (word & (1ull << i))
			v |= 1ull << vb;
		vb++;
	}
	return v;
}

__u64 *prec_attr_word(struct prec_attr *a, int word)
{
	switch (word) {
	case 1: return &a->config1;
	case 2: return &a->config2;
	case 3: return &a->config3;
	default: return &a->config;
	}
}

uint64_t prec_attr_word_get(const struct prec_attr *a, int word)
{
	return *prec_attr_word((struct prec_attr *)a, word);
}

void prec_pmu_free(struct prec_pmu *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nr_formats; i++) {
		free(p->formats[i].name);
		free(p->formats[i].text);
	}
	free(p->formats);
	for (i = 0; i < p->nr_caps; i++) {
		free(p->caps[i].name);
		free(p->caps[i].value);
	}
	free(p->caps);
	for (i = 0; i < p->nr_events; i++) {
		free(p->events[i].name);
		free(p->events[i].value);
	}
	free(p->events);
	for (i = 0; i < p->nr_sinks; i++) {
		free(p->sinks[i].name);
		free(p->sinks[i].value);
	}
	free(p->sinks);
	free(p->name);
	free(p);
}

static int add_format(struct prec_pmu *p, const char *name, const char *text)
{
	struct prec_pmu_format f = { 0 };

	/* A format this build cannot read is left out rather than guessed at. */
	if (prec_pmu_format_parse(text, &f))
		return 0;
	if (PREC_ARRAY_RESERVE(p->formats, p->nr_formats, 1))
		return -ENOMEM;
	f.name = strdup(name);
	f.text = strdup(text);
	if (!f.name || !f.text) {
		free(f.name);
		free(f.text);
		return -ENOMEM;
	}
	p->formats[p->nr_formats++] = f;
	return 0;
}

static int add_kv(struct prec_pmu_kv **v, size_t *n, const char *name, const char *value)
{
	struct prec_pmu_kv *nv;

	if (PREC_ARRAY_RESERVE(*v, *n, 1))
		return -ENOMEM;
	nv = *v;
	nv[*n].name = strdup(name);
	nv[*n].value = strdup(value);
	if (!nv[*n].name || !nv[*n].value) {
		free(nv[*n].name);
		free(nv[*n].value);
		return -ENOMEM;
	}
	(*n)++;
	return 0;
}

/* Reads every file of @dir/@sub into name/text pairs; a missing directory is empty. */
static int load_dir(const char *dir, const char *sub, bool skip_dot,
		    int (*add)(struct prec_pmu *, const char *, const char *, int), struct prec_pmu *p,
		    int which)
{
	char path[4096], file[4096];
	char **names;
	size_t n, i;
	int err;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, sub) >= sizeof(path))
		return -ENAMETOOLONG;
	err = list_dir(path, false, skip_dot, &names, &n);
	if (err == -ENOENT || err == -ENOTDIR)
		return 0;
	if (err)
		return err;
	for (i = 0; i < n && !err; i++) {
		char *text;
		long r;

		if ((size_t)snprintf(file, sizeof(file), "%s/%s", path, names[i]) >= sizeof(file))
			continue;
		r = prec_read_text(file, &text);
		if (r < 0) {
			/* Unreadable entries (directories, write-only files) are not terms. */
			continue;
		}
		err = add(p, names[i], text, which);
		free(text);
	}
	prec_strv_free(names, n);
	return err;
}

static int add_entry(struct prec_pmu *p, const char *name, const char *text, int which)
{
	switch (which) {
	case 0: return add_format(p, name, text);
	case 1: return add_kv(&p->caps, &p->nr_caps, name, text);
	case 2: return add_kv(&p->events, &p->nr_events, name, text);
	default: return add_kv(&p->sinks, &p->nr_sinks, name, text);
	}
}

int prec_pmu_load(const char *name, struct prec_pmu **out)
{
	struct prec_pmu *p = NULL;
	char dir[4096], file[4096];
	uint64_t v;
	int err;

	*out = NULL;
	if (!name || !plain_name(name))
		return -PREC_E_NOPMU;
	err = prec_sys_path(dir, sizeof(dir), DEVICES "/%s", name);
	if (err)
		return err;
	if ((size_t)snprintf(file, sizeof(file), "%s/type", dir) >= sizeof(file))
		return -ENAMETOOLONG;
	err = prec_read_u64(file, &v);
	if (err == -ENOENT || err == -ENOTDIR)
		return -PREC_E_NOPMU;
	if (err)
		return err;
	if (v > UINT32_MAX)
		return -PREC_E_FORMAT;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->name = strdup(name);
	if (!p->name) {
		err = -ENOMEM;
		goto out;
	}
	p->type = (uint32_t)v;
	p->nr_addr_filters = -1;
	if ((size_t)snprintf(file, sizeof(file), "%s/nr_addr_filters", dir) < sizeof(file) &&
	    !prec_read_u64(file, &v))
		p->nr_addr_filters = v > INT32_MAX ? INT32_MAX : (int)v;
	p->aux = prec_pmu_name_is_aux(name) || p->nr_addr_filters >= 0;
	err = load_dir(dir, "format", false, add_entry, p, 0);
	if (!err)
		err = load_dir(dir, "caps", false, add_entry, p, 1);
	if (!err)
		err = load_dir(dir, "events", true, add_entry, p, 2);
	if (!err)
		err = load_dir(dir, "sinks", false, add_entry, p, 3);
out:
	if (err) {
		prec_pmu_free(p);
		return err;
	}
	*out = p;
	return 0;
}

/*
 * The cs_etm formats the software ETMv4 tracer implements, as
 * drivers/hwtracing/coresight/coresight-etm-perf.c exports them on a kernel
 * without VHE ("contextid" is contextid1 there): timestamps and the context
 * ID (the PID) in the trace.
 */
static const struct {
	const char *name, *text;
} emu_etm_formats[] = {
	{ "contextid1", "config:14" },
	{ "contextid", "config:14" },
	{ "timestamp", "config:28" },
};

int prec_pmu_load_emulated_etm(struct prec_pmu **out)
{
	struct prec_pmu *p = calloc(1, sizeof(*p));
	size_t i;
	int err = 0;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->name = strdup("cs_etm");
	p->type = PREC_PMU_TYPE_EMULATED_ETM;
	p->aux = true;
	p->emulated = true;
	p->nr_addr_filters = 8; /* ETM_ADDR_CMP_MAX, as the CoreSight driver gives */
	err = p->name ? 0 : -ENOMEM;
	for (i = 0; i < PREC_ARRAY_SIZE(emu_etm_formats) && !err; i++)
		err = add_format(p, emu_etm_formats[i].name, emu_etm_formats[i].text);
	if (err) {
		prec_pmu_free(p);
		return err;
	}
	*out = p;
	return 0;
}

int prec_pmu_load_emulated(struct prec_pmu **out)
{
	struct prec_pmu *p;
	size_t i;
	int err = 0;

	*out = NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->name = strdup("intel_pt");
	if (!p->name) {
		err = -ENOMEM;
		goto out;
	}
	p->type = PREC_PMU_TYPE_EMULATED;
	p->aux = true;
	p->emulated = true;
	p->nr_addr_filters = 2; /* as num_address_ranges */
	for (i = 0; i < PREC_ARRAY_SIZE(emu_pt_formats) && !err; i++)
		err = add_format(p, emu_pt_formats[i].name, emu_pt_formats[i].text);
	if (!err && p->nr_formats != PREC_ARRAY_SIZE(emu_pt_formats))
		err = -PREC_E_INTERNAL;
	for (i = 0; i < PREC_ARRAY_SIZE(emu_pt_caps) && !err; i++)
		err = add_kv(&p->caps, &p->nr_caps, emu_pt_caps[i].name, emu_pt_caps[i].value);
out:
	if (err) {
		prec_pmu_free(p);
		return err;
	}
	*out = p;
	return 0;
}

int prec_pmu_names(char ***names, size_t *n)
{
	char dir[4096];
	int err = prec_sys_path(dir, sizeof(dir), DEVICES);

	*names = NULL;
	*n = 0;
	if (err)
		return err;
	err = list_dir(dir, true, false, names, n);
	if (err == -ENOENT)
		return 0;
	return err;
}

void prec_pmu_aux_names(char *buf, size_t size)
{
	char **names;
	size_t n, i, len = 0;

	if (!size)
		return;
	buf[0] = '\0';
	if (!prec_pmu_names(&names, &n)) {
		for (i = 0; i < n; i++) {
			struct prec_pmu *p;

			if (prec_pmu_load(names[i], &p))
				continue;
			if (p->aux && len < size) {
				int w = snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
						 p->name);

				len += w > 0 ? (size_t)w : 0;
			}
			prec_pmu_free(p);
		}
		prec_strv_free(names, n);
	}
	if (!buf[0])
		snprintf(buf, size, "none");
}

const struct prec_pmu_format *prec_pmu_format(const struct prec_pmu *p, const char *name)
{
	size_t i;

	for (i = 0; p && i < p->nr_formats; i++)
		if (!strcmp(p->formats[i].name, name))
			return &p->formats[i];
	return NULL;
}

static const char *kv_find(const struct prec_pmu_kv *v, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(v[i].name, name))
			return v[i].value;
	return NULL;
}

const char *prec_pmu_cap(const struct prec_pmu *p, const char *name)
{
	return p ? kv_find(p->caps, p->nr_caps, name) : NULL;
}

const char *prec_pmu_event(const struct prec_pmu *p, const char *name)
{
	return p ? kv_find(p->events, p->nr_events, name) : NULL;
}

const char *prec_pmu_sink(const struct prec_pmu *p, const char *name)
{
	return p ? kv_find(p->sinks, p->nr_sinks, name) : NULL;
}

/* caps values are printed by the kernel with "%x" (pt_cap_show). */
static bool cap_hex(const struct prec_pmu *p, const char *name, uint64_t *v)
{
	const char *s = prec_pmu_cap(p, name);
	char *end;

	if (!s || !*s)
		return false;
	*v = strtoull(s, &end, 16);
	return *end == '\0';
}

/* The set bit of @bits nearest to @target from below, else the lowest above. */
static int pick_bit(uint64_t bits, int target)
{
	int pos, pick = -1;

	for (pos = 0; pos < 64; pos++) {
		if (!(bits & (1ull << pos)))
			continue;
		if (pos <= target || pick < 0)
			pick = pos;
		if (pos >= target)
			break;
	}
	return pick;
}

static int set_term(const struct prec_pmu *p, struct prec_attr *a, const char *name, uint64_t v)
{
	const struct prec_pmu_format *f = prec_pmu_format(p, name);
	uint64_t bits;
	__u64 *w;
	int err;

	if (!f)
		return -EINVAL;
	err = prec_pmu_format_encode(f, v, &bits);
	if (err)
		return err;
	w = prec_attr_word(a, f->word);
	*w = (*w & ~f->mask) | bits;
	return 0;
}

int prec_pmu_default_config(const struct prec_pmu *p, struct prec_attr *a)
{
	uint64_t mtc = 1, mtc_periods = 0, psb_cyc = 1, psb_periods = 0;
	int err = 0;

	if (strcmp(p->name, "intel_pt"))
		return 0;
	err = set_term(p, a, "tsc", 1);
	if (!cap_hex(p, "mtc", &mtc))
		mtc = 1;
	if (mtc && cap_hex(p, "mtc_periods", &mtc_periods) && mtc_periods) {
		if (!err)
			err = set_term(p, a, "mtc", 1);
		if (!err)
			err = set_term(p, a, "mtc_period", (uint64_t)pick_bit(mtc_periods, 3));
	}
	if (!cap_hex(p, "psb_cyc", &psb_cyc))
		psb_cyc = 1;
	if (psb_cyc && mtc_periods && cap_hex(p, "psb_periods", &psb_periods) && psb_periods &&
	    !err)
		err = set_term(p, a, "psb_period", (uint64_t)pick_bit(psb_periods, 3));
	if (!err && prec_pmu_format(p, "pt") && prec_pmu_format(p, "branch")) {
		err = set_term(p, a, "pt", 1);
		if (!err)
			err = set_term(p, a, "branch", 1);
	}
	return err;
}

int prec_pmu_config_str(const struct prec_pmu *p, const struct prec_attr *a, char *buf,
			size_t size)
{
	uint64_t left[4];
	size_t len = 0, i;
	int w;

	if (!size)
		return -ENOSPC;
	buf[0] = '\0';
	for (w = 0; w < 4; w++)
		left[w] = prec_attr_word_get(a, w);
	for (i = 0; p && i < p->nr_formats; i++) {
		const struct prec_pmu_format *f = &p->formats[i];
		uint64_t word = prec_attr_word_get(a, f->word), v;
		int n;

		if (!(word & f->mask) || (left[f->word] & f->mask) != (word & f->mask))
			continue;
		v = prec_pmu_format_decode(f, word);
		left[f->word] &= ~f->mask;
		if (f->width == 1)
			n = snprintf(buf + len, size - len, "%s%s", len ? "," : "", f->name);
		else
			n = snprintf(buf + len, size - len, v < 1000 ? "%s%s=%llu" : "%s%s=%#llx",
				     len ? "," : "", f->name, (unsigned long long)v);
		if (n < 0 || (size_t)n >= size - len)
			return -ENOSPC;
		len += (size_t)n;
	}
	for (w = 0; w < 4; w++) {
		static const char *const wn[] = { "config", "config1", "config2", "config3" };
		int n;

		if (!left[w])
			continue;
		n = snprintf(buf + len, size - len, "%s%s=%#llx", len ? "," : "", wn[w],
			     (unsigned long long)left[w]);
		if (n < 0 || (size_t)n >= size - len)
			return -ENOSPC;
		len += (size_t)n;
	}
	return 0;
}

/* "<root>/sys/kernel/tracing" style candidate with an events/ directory. */
#define TRACEFS_MAGIC_NR 0x74726163

static bool tracefs_at(const char *rel, char *buf, size_t size)
{
	char ev[4096];
	struct stat st;

	if (prec_sys_path(buf, size, "%s", rel))
		return false;
	if ((size_t)snprintf(ev, sizeof(ev), "%s/events", buf) >= sizeof(ev))
		return false;
	return !stat(ev, &st) && S_ISDIR(st.st_mode);
}

int prec_tracefs_dir(char *buf, size_t size)
{
	if (tracefs_at("/sys/kernel/tracing", buf, size))
		return 0;
	if (tracefs_at("/sys/kernel/debug/tracing", buf, size))
		return 0;
	/*
	 * Mounted but closed to this user (tracefs is mode 0700 by default):
	 * say so rather than "not mounted".
	 */
	if (!prec_sysroot()[0]) {
		struct statfs sf;

		if (!statfs("/sys/kernel/tracing", &sf) && sf.f_type == TRACEFS_MAGIC_NR &&
		    access("/sys/kernel/tracing/events", X_OK) && errno == EACCES) {
			snprintf(buf, size, "/sys/kernel/tracing");
			return -EACCES;
		}
	}
	/*
	 * Like perf, mount tracefs for the user when we can; never under a
	 * PTREC_SYSROOT, which points at a tree that is not the live system.
	 */
	if (prec_sysroot()[0] || geteuid() != 0)
		return -ENOENT;
	if (mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) && errno != EBUSY)
		return -errno;
	if (tracefs_at("/sys/kernel/tracing", buf, size))
		return 0;
	return -ENOENT;
}

int prec_tracepoint_id(const char *sys, const char *name, uint64_t *id)
{
	char dir[4096], path[4096];
	struct stat st;
	int err;

	if (!plain_name(sys) || !plain_name(name))
		return -EINVAL;
	err = prec_tracefs_dir(dir, sizeof(dir));
	if (err)
		return err;
	if ((size_t)snprintf(path, sizeof(path), "%s/events/%s/%s/id", dir, sys, name) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	err = prec_read_u64(path, id);
	if (err == -ENOTDIR)
		err = -ENOENT;
	if (err == -ENOENT) {
		/* Tell "no such tracepoint" from "tracefs here has no id files". */
		path[strlen(path) - 3] = '\0';
		if (!stat(path, &st))
			return -EIO;
	}
	return err;
}

int prec_tracepoint_names(const char *sys, char ***names, size_t *n)
{
	char dir[4096], path[4096];
	size_t i, j;
	int err;

	*names = NULL;
	*n = 0;
	if (sys && !plain_name(sys))
		return -ENOENT;
	err = prec_tracefs_dir(dir, sizeof(dir));
	if (err)
		return err;
	if ((size_t)snprintf(path, sizeof(path), "%s/events%s%s", dir, sys ? "/" : "",
			     sys ? sys : "") >= sizeof(path))
		return -ENAMETOOLONG;
	err = list_dir(path, true, false, names, n);
	if (err == -ENOTDIR)
		err = -ENOENT;
	if (err || !sys || !*n)
		return err;
	/* ftrace's internal events have no id: perf cannot open them, so skip them. */
	for (i = j = 0; i < *n; i++) {
		char id[4096 + 2 * MAX_NAME];
		struct stat st;

		snprintf(id, sizeof(id), "%s/%s/id", path, (*names)[i]);
		if (!stat(id, &st))
			(*names)[j++] = (*names)[i];
		else
			free((*names)[i]);
	}
	*n = j;
	(*names)[j] = NULL;
	return 0;
}

int prec_syscall_nr(const char *name)
{
	size_t i;

	for (i = 0; i < PREC_ARRAY_SIZE(syscalls); i++)
		if (!strcmp(syscalls[i].name, name))
			return syscalls[i].nr;
	return -ENOENT;
}

const char *prec_syscall_name(int nr)
{
	size_t i;

	for (i = 0; i < PREC_ARRAY_SIZE(syscalls); i++)
		if (syscalls[i].nr == nr)
			return syscalls[i].name;
	return NULL;
}

const char *prec_syscall_at(size_t i, int *nr)
{
	if (i >= PREC_ARRAY_SIZE(syscalls))
		return NULL;
	if (nr)
		*nr = syscalls[i].nr;
	return syscalls[i].name;
}

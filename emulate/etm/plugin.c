// SPDX-License-Identifier: MIT
/*
 * The CoreSight software tracer: a QEMU user-mode TCG plugin for
 * qemu-aarch64 that follows the guest's control flow and writes it as ETMv4
 * instruction trace, as a trace unit programmed to trace EL0 only would
 * (TRCVICTLR excluding EL1-EL3), plus perf-format sideband and an optional
 * ground truth. man/ptrec-emulate-etm.7 describes what it emits.
 *
 * Model. Every guest thread is a host thread and a QEMU vCPU; it gets its own
 * ETM byte stream, unformatted, as a TRBE would write it. The plugin sees
 * the start of each executed translation block (TB); a TB ends at the first
 * branch, so the previous TB's last instruction and the start of the next
 * give the outcome: an atom for every branch and ISB (E taken, N not), and
 * for an indirect branch its target address. An SVC is an exception into
 * EL1: an Exception packet (type Call) with the preferred return address,
 * then nothing while EL1 runs untraced, then Trace On and an Address with
 * Context packet where EL0 resumes. A TB whose successor is not one its last
 * instruction can reach was left asynchronously (a signal arrived between
 * TBs): an Exception packet of type IRQ at the interrupted instruction.
 *
 * Thread safety: a thread's state is only touched by that thread, except at
 * fork (one thread left) and at exit (QEMU stops all vCPUs first). Shared
 * tables (probes, mappings, translation-time data) take g_lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include <elf.h>

#include "emu_proto.h"
#include "qemu_plugin_api.h"
#include "a64.h"
#include "etm_enc.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int qemu_plugin_version = EMU_QEMU_PLUGIN_VERSION;

#define MAX_VCPUS 4096
#define MAX_TRIG 64
#define MAX_PROBES 256
#define MAX_XMAPS 1024
#define SHADOW_DEPTH 4096  /* call stack kept for uretprobes */
#define ENC_CAP (64 * 1024)
#define ENC_FLUSH (EMU_MSG_MAX - 1024)
#define TRUTH_CAP (16 * 1024)
#define TRUTH_FLUSH (12 * 1024)

/* The guest's system call numbers (the generic table arm64 uses). */
#define A64_SYS_exit 93
#define A64_SYS_exit_group 94
#define A64_SYS_prctl 167
#define A64_SYS_clone 220
#define A64_SYS_execve 221
#define A64_SYS_mmap 222
#define A64_SYS_execveat 281
#define A64_SYS_clone3 435

#ifndef PERF_RECORD_TEXT_POKE
#define PERF_RECORD_TEXT_POKE 20
#endif

enum { ACT_NONE, ACT_PAUSE, ACT_RESUME };
enum { TK_UPROBE, TK_URETPROBE, TK_SYS_ENTER, TK_SYS_EXIT, TK_INSNS };

struct trig {
	int idx;
	int action;
	int kind;
	int64_t arg;
	char *path;
	dev_t dev;
	ino_t ino;
	int have_ino;
};

static struct {
	int timestamp, contextid;
	unsigned sync_period;  /* log2 of the bytes between periodic syncs */
	int start_paused, truth;
	char *qemu, *plugin;
	struct trig trig[MAX_TRIG];
	int ntrig;
} cfg = { .sync_period = 12 };

struct tbi {
	uint64_t start, last, next, target;
	uint32_t ninsn;
	uint8_t kind;       /* enum a64_kind of the last instruction */
	uint32_t nisb;      /* ISBs before the last instruction */
	uint32_t *isb;      /* their indices, ascending */
};

struct probe_hit {
	const struct tbi *tb;
	uint64_t vaddr;
	uint32_t idx;
	int ntrig;
	int trig[8];
};

struct probe {
	uint64_t vaddr;
	int trig;
};

struct shadow_ent {
	uint64_t ret;
	uint64_t uret; /* bit i: trigger i armed on this frame's return */
};

struct thr {
	int tid;
	int dead;
	/* execution state */
	int trace_en; /* the trace unit is enabled (not paused) */
	int user;     /* executing EL0 code (not in a syscall/trap) */
	int pkt_en;   /* trace_en && user: instructions are traced */
	int synced;   /* A-sync and Trace Info sent since the unit was enabled */
	const struct tbi *cur;
	uint64_t cur_start;
	uint32_t cur_done;
	uint64_t ret_ip; /* next user IP in program order while in a syscall */
	uint64_t insns;  /* user instructions retired by this thread */
	/* encoder */
	struct etm_enc enc;
	uint8_t *buf;
	uint64_t aux_off;  /* stream offset of buf[0] */
	uint64_t sync_at;  /* stream offset of the last A-sync */
	uint64_t sync_end; /* stream offset just after the last sync's packets */
	uint64_t dec_pos;  /* where a decoder stands: after the last P0 element */
	/* uretprobes */
	struct shadow_ent *shadow;
	unsigned sh_n;
	/* instruction counters */
	uint64_t cnt_next[MAX_TRIG];
	/* syscall in flight */
	int64_t sc_num;
	uint64_t sc_args[6];
	/* ground truth */
	char *tbuf;
	size_t tlen;
};

struct xmap {
	uint64_t lo, hi;
};

static qemu_plugin_id_t g_id;
static int g_sock = -1, g_cfgfd = -1;
static int g_pid, g_ppid;
static int g_exec;            /* this instance was started by a guest execve */
static int g_exec_en, g_exec_taken;
static volatile int g_exiting;
static uint64_t g_tsc0, g_insn0, g_auxoff0;
static uint64_t g_clock;      /* instructions retired by the process (atomic) */
static int64_t g_base;        /* host address = guest address + g_base */
static int g_base_known, g_maps_done, g_broken;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct thr *g_thr[MAX_VCPUS];
static struct probe g_probes[MAX_PROBES];
static int g_nprobes;
static struct xmap g_xmaps[MAX_XMAPS]; /* executable file mappings announced */
static int g_nxmaps;
static char g_comm[16];

static void emu_send(uint32_t type, uint32_t tid, uint64_t arg, const void *p1, size_t n1,
		     const void *p2, size_t n2)
{
	struct emu_msg m = { .type = type, .pid = g_pid, .tid = tid,
			     .size = (uint32_t)(n1 + n2), .arg = arg };
	struct iovec iov[3] = { { &m, sizeof(m) }, { (void *)p1, n1 }, { (void *)p2, n2 } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 3 };

	if (g_broken || g_sock < 0)
		return;
	while (sendmsg(g_sock, &mh, MSG_NOSIGNAL) < 0) {
		if (errno == EINTR)
			continue;
		/* The recorder went away: keep the workload running, untraced. */
		g_broken = 1;
		return;
	}
}

static void emu_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (g_sock >= 0)
		emu_send(EMU_MSG_ERROR, 0, 0, msg, strlen(msg) + 1, NULL, 0);
	else
		fprintf(stderr, "ptrec-emu: %s\n", msg);
}

static int my_tid(void)
{
	return (int)syscall(SYS_gettid);
}

static uint64_t now_tsc(void)
{
	return g_tsc0 + __atomic_load_n(&g_clock, __ATOMIC_RELAXED);
}

/* ---- sideband records ------------------------------------------------ */

struct sb {
	uint8_t b[4608];
	size_t n;
};

static void sb_begin(struct sb *s, uint32_t type, uint16_t misc)
{
	struct perf_event_header h = { .type = type, .misc = misc, .size = 0 };

	memcpy(s->b, &h, sizeof(h));
	s->n = sizeof(h);
}

static void sb_put(struct sb *s, const void *p, size_t n)
{
	if (s->n + n > sizeof(s->b))
		return;
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

static void sb_u32(struct sb *s, uint32_t v) { sb_put(s, &v, 4); }
static void sb_u64(struct sb *s, uint64_t v) { sb_put(s, &v, 8); }

static void sb_str(struct sb *s, const char *str)
{
	size_t n = strlen(str) + 1, pad = (8 - n % 8) % 8;
	static const uint8_t zero[8];

	sb_put(s, str, n);
	sb_put(s, zero, pad);
}

/* sample_id_all trailer for sample_type TID|TIME|CPU|IDENTIFIER; id 1 = the cs_etm event. */
static void sb_end(struct sb *s, int tid, uint64_t id)
{
	struct perf_event_header h;

	sb_u32(s, (uint32_t)g_pid);
	sb_u32(s, (uint32_t)tid);
	sb_u64(s, now_tsc());
	sb_u32(s, 0);
	sb_u32(s, 0);
	sb_u64(s, id);
	memcpy(&h, s->b, sizeof(h));
	h.size = (uint16_t)s->n;
	memcpy(s->b, &h, sizeof(h));
	emu_send(EMU_MSG_SB, (uint32_t)tid, 0, s->b, s->n, NULL, 0);
}

static void sb_comm(int tid, int exec)
{
	struct sb s;

	sb_begin(&s, PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0);
	sb_u32(&s, (uint32_t)g_pid);
	sb_u32(&s, (uint32_t)tid);
	sb_str(&s, g_comm);
	sb_end(&s, tid, 1);
}

static void sb_task(uint32_t type, int pid, int ppid, int tid, int ptid)
{
	struct sb s;

	sb_begin(&s, type, 0);
	sb_u32(&s, (uint32_t)pid);
	sb_u32(&s, (uint32_t)ppid);
	sb_u32(&s, (uint32_t)tid);
	sb_u32(&s, (uint32_t)ptid);
	sb_u64(&s, now_tsc());
	sb_end(&s, my_tid(), 1);
}

static void sb_itrace_start(int tid)
{
	struct sb s;

	sb_begin(&s, PERF_RECORD_ITRACE_START, 0);
	sb_u32(&s, (uint32_t)g_pid);
	sb_u32(&s, (uint32_t)tid);
	sb_end(&s, tid, 1);
}

static void sb_aux(int tid, uint64_t off, uint64_t size)
{
	struct sb s;

	sb_begin(&s, PERF_RECORD_AUX, 0);
	sb_u64(&s, off);
	sb_u64(&s, size);
	sb_u64(&s, 0);
	sb_end(&s, tid, 1);
}

static void sb_sample(int tid, int idx, uint64_t ip, uint64_t period)
{
	struct sb s;
	struct perf_event_header h;

	/* sample_type IDENTIFIER|IP|TID|TIME|CPU|PERIOD */
	sb_begin(&s, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	sb_u64(&s, (uint64_t)idx + 1);
	sb_u64(&s, ip);
	sb_u32(&s, (uint32_t)g_pid);
	sb_u32(&s, (uint32_t)tid);
	sb_u64(&s, now_tsc());
	sb_u32(&s, 0);
	sb_u32(&s, 0);
	sb_u64(&s, period);
	memcpy(&h, s.b, sizeof(h));
	h.size = (uint16_t)s.n;
	memcpy(s.b, &h, sizeof(h));
	emu_send(EMU_MSG_SB, (uint32_t)tid, 0, s.b, s.n, NULL, 0);
}

/* Reads the GNU build id note of an ELF file; returns its size or 0. */
static size_t read_build_id(int fd, uint8_t id[20])
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int i;

	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(ph) || eh.e_phnum > 256)
		return 0;
	for (i = 0; i < eh.e_phnum; i++) {
		uint8_t note[1024];
		size_t off = 0, len;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) != sizeof(ph))
			return 0;
		if (ph.p_type != PT_NOTE)
			continue;
		len = ph.p_filesz < sizeof(note) ? ph.p_filesz : sizeof(note);
		if (pread(fd, note, len, (off_t)ph.p_offset) != (ssize_t)len)
			continue;
		while (off + sizeof(Elf64_Nhdr) <= len) {
			Elf64_Nhdr nh;
			size_t name_at, desc_at;

			memcpy(&nh, note + off, sizeof(nh));
			name_at = off + sizeof(nh);
			desc_at = name_at + ((nh.n_namesz + 3) & ~3u);
			if (desc_at + nh.n_descsz > len)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(note + name_at, "GNU", 4) && nh.n_descsz > 0) {
				size_t n = nh.n_descsz > 20 ? 20 : nh.n_descsz;

				memcpy(id, note + desc_at, n);
				return n;
			}
			off = desc_at + ((nh.n_descsz + 3) & ~3u);
		}
	}
	return 0;
}

static void add_probes_for(const struct stat *st, uint64_t start, uint64_t len, uint64_t pgoff)
{
	int i;

	pthread_mutex_lock(&g_lock);
	for (i = 0; i < cfg.ntrig; i++) {
		struct trig *tr = &cfg.trig[i];
		uint64_t off = (uint64_t)tr->arg;

		if ((tr->kind != TK_UPROBE && tr->kind != TK_URETPROBE) || !tr->have_ino ||
		    tr->dev != st->st_dev || tr->ino != st->st_ino)
			continue;
		if (off < pgoff || off >= pgoff + len || g_nprobes >= MAX_PROBES)
			continue;
		g_probes[g_nprobes].vaddr = start + off - pgoff;
		g_probes[g_nprobes].trig = i;
		g_nprobes++;
	}
	pthread_mutex_unlock(&g_lock);
}

/* An executable file mapping appeared: MMAP2 record and uprobe resolution. */
static void new_exec_map(int tid, int fd, const char *path, uint64_t start, uint64_t len,
			 uint64_t pgoff, uint32_t prot, uint32_t flags)
{
	struct stat st;
	uint8_t id[20];
	size_t idn = 0;
	struct sb s;

	if (fstat(fd, &st) < 0)
		return;
	idn = read_build_id(fd, id);
	sb_begin(&s, PERF_RECORD_MMAP2,
		 PERF_RECORD_MISC_USER | (idn ? PERF_RECORD_MISC_MMAP_BUILD_ID : 0));
	sb_u32(&s, (uint32_t)g_pid);
	sb_u32(&s, (uint32_t)tid);
	sb_u64(&s, start);
	sb_u64(&s, len);
	sb_u64(&s, pgoff);
	if (idn) {
		uint8_t hdr[4] = { (uint8_t)idn, 0, 0, 0 };
		uint8_t pad[20] = { 0 };

		memcpy(pad, id, idn);
		sb_put(&s, hdr, 4);
		sb_put(&s, pad, 20);
	} else {
		sb_u32(&s, major(st.st_dev));
		sb_u32(&s, minor(st.st_dev));
		sb_u64(&s, st.st_ino);
		sb_u64(&s, 0);
	}
	sb_u32(&s, prot);
	sb_u32(&s, flags);
	sb_str(&s, path);
	sb_end(&s, tid, 1);
	add_probes_for(&st, start, len, pgoff);
	pthread_mutex_lock(&g_lock);
	if (g_nxmaps < MAX_XMAPS) {
		g_xmaps[g_nxmaps].lo = start;
		g_xmaps[g_nxmaps].hi = start + len;
		g_nxmaps++;
	}
	pthread_mutex_unlock(&g_lock);
}

/*
 * The main binary and its interpreter are mapped by QEMU's loader, not by
 * guest syscalls: find their load address in QEMU's own /proc/self/maps
 * (host address = guest address + g_base) and take the executable
 * segments from their program headers.
 */
static void map_loaded_elf(int tid, const char *path)
{
	char line[4352];
	FILE *f;
	int fd;
	struct stat st;
	uint64_t gbase = 0;
	int found = 0;
	Elf64_Ehdr eh;
	uint64_t first_vaddr = UINT64_MAX;
	int i;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phnum > 256)
		goto out;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		goto out;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off, ino;
		unsigned maj, min;
		char perm[8];

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &lo, &hi, perm, &off, &maj, &min,
			   &ino) != 7)
			continue;
		if (ino != st.st_ino || maj != (unsigned)major(st.st_dev) || min != (unsigned)minor(st.st_dev) || off)
			continue;
		gbase = lo - (uint64_t)g_base;
		found = 1;
		break;
	}
	fclose(f);
	if (!found)
		goto out;
	for (i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) != sizeof(ph))
			goto out;
		if (ph.p_type == PT_LOAD && ph.p_vaddr < first_vaddr)
			first_vaddr = ph.p_vaddr;
	}
	for (i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		uint64_t bias, lo, hi;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) != sizeof(ph))
			goto out;
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		bias = gbase - (first_vaddr & ~0xfffull);
		lo = bias + (ph.p_vaddr & ~0xfffull);
		hi = (bias + ph.p_vaddr + ph.p_memsz + 0xfff) & ~0xfffull;
		new_exec_map(tid, fd, path, lo, hi - lo, ph.p_offset & ~0xfffull,
			     PROT_READ | PROT_EXEC, MAP_PRIVATE);
	}
out:
	close(fd);
}

static void read_interp(const char *path, char *out, size_t size)
{
	Elf64_Ehdr eh;
	int fd, i;

	out[0] = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (pread(fd, &eh, sizeof(eh), 0) == sizeof(eh) && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum <= 256) {
		for (i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;

			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) !=
			    sizeof(ph))
				break;
			if (ph.p_type == PT_INTERP && ph.p_filesz < size) {
				if (pread(fd, out, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz)
					out[ph.p_filesz] = 0;
				else
					out[0] = 0;
				break;
			}
		}
	}
	close(fd);
}

/* ---- ground truth ------------------------------------------------------ */

static void truth_flush(struct thr *t)
{
	if (!t->tlen)
		return;
	emu_send(EMU_MSG_TRUTH, (uint32_t)t->tid, 0, t->tbuf, t->tlen, NULL, 0);
	t->tlen = 0;
}

static void truth_line(struct thr *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void truth_line(struct thr *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!cfg.truth)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->tbuf + t->tlen, TRUTH_CAP - t->tlen, fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < TRUTH_CAP - t->tlen)
		t->tlen += (size_t)n;
	if (t->tlen > TRUTH_FLUSH)
		truth_flush(t);
}


/* ---- ETM stream --------------------------------------------------------- */

static uint64_t enc_pos(struct thr *t)
{
	return t->aux_off + t->enc.len;
}

static void stream_flush(struct thr *t)
{
	if (t->enc.len) {
		emu_send(EMU_MSG_AUX, (uint32_t)t->tid, t->aux_off, t->buf, t->enc.len, NULL, 0);
		sb_aux(t->tid, t->aux_off, t->enc.len);
		t->aux_off += t->enc.len;
		t->enc.len = 0;
	}
	truth_flush(t);
}

/* Makes room for the next packets. */
static void room(struct thr *t)
{
	if (t->enc.len > ENC_FLUSH)
		stream_flush(t);
}

/* A-sync and Trace Info (and a timestamp), as the unit sends when enabled
 * and every 2^sync_period bytes. */
static void put_sync(struct thr *t)
{
	room(t);
	etm_enc_flush_atoms(&t->enc);
	t->sync_at = enc_pos(t);
	etm_enc_sync(&t->enc);
	if (cfg.timestamp)
		etm_enc_timestamp(&t->enc, now_tsc());
	t->synced = 1;
	t->sync_end = enc_pos(t);
}

/* Tracing starts (again) at @ip: Trace On, then the address with context. */
static void put_trace_on(struct thr *t, uint64_t ip)
{
	if (!t->synced) {
		put_sync(t);
	} else if (cfg.timestamp && (enc_pos(t) != t->sync_end || t->enc.natoms)) {
		/* A timestamp, unless the sync just before carried one. */
		room(t);
		etm_enc_timestamp(&t->enc, now_tsc());
	}
	room(t);
	etm_enc_trace_on(&t->enc);
	etm_enc_addr_ctxt(&t->enc, ip);
	t->dec_pos = ip;
}

static void put_atom(struct thr *t, int taken)
{
	room(t);
	etm_enc_atom(&t->enc, taken);
}

/* An indirect branch's target. */
static void put_target(struct thr *t, uint64_t ip)
{
	room(t);
	etm_enc_addr(&t->enc, ip);
	t->dec_pos = ip;
}

static void put_exception(struct thr *t, enum etm_exc type, uint64_t ret)
{
	room(t);
	etm_enc_exception(&t->enc, type, ret);
	t->dec_pos = ret;
}

/* ---- tracing state machine -------------------------------------------- */

/* User execution stops at @ip without a branch of its own (interrupt, trap). */
static void enter_kernel_async(struct thr *t, uint64_t ip, enum etm_exc type)
{
	if (t->pkt_en)
		put_exception(t, type, ip);
	t->pkt_en = 0;
	t->user = 0;
}

/* An SVC: an exception into EL1, which this EL0-only trace does not see. */
static void enter_kernel_syscall(struct thr *t, uint64_t ret)
{
	if (t->pkt_en)
		put_exception(t, ETM_EXC_CALL, ret);
	t->pkt_en = 0;
	t->user = 0;
}

static void return_to_user(struct thr *t, uint64_t ip)
{
	t->user = 1;
	if (!t->trace_en)
		return;
	put_trace_on(t, ip);
	t->pkt_en = 1;
}

/*
 * The trace unit is enabled or disabled (AUX resume/pause); always called
 * while the thread is "in the kernel". Disabling emits nothing more: the
 * Exception packet of entering EL1 was the last. Enabling starts a new
 * trace run, A-sync and Trace Info first.
 */
static void set_trace_en(struct thr *t, int on, uint64_t ip)
{
	if (on == t->trace_en)
		return;
	t->trace_en = on;
	truth_line(t, "%c %d %" PRIx64 " %" PRIu64 "\n", on ? 'R' : 'P', t->tid, ip, t->insns);
	if (on)
		put_sync(t);
	else
		t->synced = 0;
}

static void fire(struct thr *t, int ti, uint64_t ip, uint64_t period)
{
	struct trig *tr = &cfg.trig[ti];

	sb_sample(t->tid, tr->idx, ip, period);
	if (tr->action == ACT_PAUSE)
		set_trace_en(t, 0, ip);
	else if (tr->action == ACT_RESUME)
		set_trace_en(t, 1, ip);
}

/* A trap into the kernel at @ip (uprobe, uretprobe, PMI) firing @n triggers. */
static void trap(struct thr *t, uint64_t ip, enum etm_exc type, const int *trig, int n,
		 uint64_t period)
{
	int i;

	enter_kernel_async(t, ip, type);
	for (i = 0; i < n; i++)
		fire(t, trig[i], ip, period);
	return_to_user(t, ip);
}

static void thread_stream_init(struct thr *t)
{
	t->aux_off = 0;
	t->sync_at = 0;
	t->synced = 0;
	t->tlen = 0;
	etm_enc_init(&t->enc, t->buf, ENC_CAP);
	t->enc.cid = cfg.contextid;
}

static struct thr *thr_new(void)
{
	struct thr *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->buf = malloc(ENC_CAP);
	t->tbuf = malloc(TRUTH_CAP);
	t->shadow = calloc(SHADOW_DEPTH, sizeof(*t->shadow));
	if (!t->buf || !t->tbuf || !t->shadow) {
		free(t->buf);
		free(t->tbuf);
		free(t->shadow);
		free(t);
		return NULL;
	}
	thread_stream_init(t);
	return t;
}

static void thr_free(struct thr *t)
{
	if (!t)
		return;
	free(t->buf);
	free(t->tbuf);
	free(t->shadow);
	free(t);
}

static struct thr *thr_of(unsigned vcpu)
{
	if (vcpu >= MAX_VCPUS)
		return NULL;
	if (!g_thr[vcpu])
		g_thr[vcpu] = thr_new();
	return g_thr[vcpu];
}

static void counters_arm(struct thr *t)
{
	int i;

	for (i = 0; i < cfg.ntrig; i++)
		if (cfg.trig[i].kind == TK_INSNS)
			t->cnt_next[i] = t->insns + (uint64_t)cfg.trig[i].arg;
}

static void thread_begin(struct thr *t, uint64_t ip)
{
	int cont = 0;

	t->tid = my_tid();
	t->enc.contextid = (uint32_t)t->tid;
	t->trace_en = !cfg.start_paused;
	if (g_exec && !g_exec_taken && t->tid == g_pid) {
		/* The event, its stream and its pause state survive execve. */
		g_exec_taken = 1;
		cont = 1;
		t->trace_en = g_exec_en;
		t->insns = g_insn0;
		t->aux_off = g_auxoff0;
	}
	t->user = 0;
	t->pkt_en = 0;
	t->cur = NULL;
	sb_itrace_start(t->tid);
	if (t->trace_en && !cont)
		truth_line(t, "R %d %" PRIx64 " %" PRIu64 "\n", t->tid, ip, t->insns);
	counters_arm(t);
	if (t->trace_en)
		put_sync(t);
	return_to_user(t, ip);
}

static void thread_end(struct thr *t)
{
	if (!t || t->dead || !t->tid)
		return;
	/*
	 * A thread still in user code was killed with its process: where
	 * exactly is unknown, so the stream just ends (its last atoms go out).
	 */
	etm_enc_flush_atoms(&t->enc);
	stream_flush(t);
	sb_task(PERF_RECORD_EXIT, g_pid, g_ppid, t->tid, t->tid);
	t->dead = 1;
}

static void count_insns(struct thr *t, uint32_t n)
{
	t->insns += n;
	__atomic_fetch_add(&g_clock, n, __ATOMIC_RELAXED);
}

/*
 * Instructions [@from, @to) of the current TB ran, starting at address
 * @start: truth, clock, and an E atom for each ISB among them (an ISB is a
 * P0 element). The TB's last instruction is left to resolve().
 */
static void account(struct thr *t, uint32_t from, uint32_t to, uint64_t start)
{
	const struct tbi *p = t->cur;
	uint32_t i;

	if (to <= from)
		return;
	truth_line(t, "B %d %" PRIx64 " %" PRIx64 " %u\n", t->tid, start,
		   start + (uint64_t)4 * (to - from), to - from);
	count_insns(t, to - from);
	if (!t->pkt_en)
		return;
	for (i = 0; i < p->nisb; i++)
		if (p->isb[i] >= from && p->isb[i] < to) {
			put_atom(t, 1);
			t->dec_pos = p->start + (uint64_t)4 * p->isb[i] + 4;
		}
}

/* Accounts the instructions of the current TB not yet counted. */
static void finish_tb(struct thr *t)
{
	const struct tbi *p = t->cur;

	if (!p)
		return;
	account(t, t->cur_done, p->ninsn, t->cur_start);
	t->cur_done = p->ninsn;
}

static void shadow_push(struct thr *t, uint64_t ret)
{
	if (t->sh_n == SHADOW_DEPTH) {
		memmove(t->shadow, t->shadow + 1, (SHADOW_DEPTH - 1) * sizeof(*t->shadow));
		t->sh_n--;
	}
	t->shadow[t->sh_n].ret = ret;
	t->shadow[t->sh_n].uret = 0;
	t->sh_n++;
}

/*
 * A return to @target pops the frame it returns from; frames above it that
 * were skipped (longjmp) are popped too. Returns the armed uretprobes.
 */
static uint64_t shadow_ret(struct thr *t, uint64_t target)
{
	uint64_t fired = 0;
	unsigned i = t->sh_n;

	while (i > 0 && t->shadow[i - 1].ret != target)
		i--;
	if (!i)
		return 0; /* not a return to a known frame: leave the stack */
	for (; t->sh_n >= i; t->sh_n--) {
		fired |= t->shadow[t->sh_n - 1].uret;
		if (t->sh_n == i) {
			t->sh_n--;
			break;
		}
	}
	return fired;
}

static int mask_to_list(uint64_t m, int *out)
{
	int n = 0, i;

	for (i = 0; i < MAX_TRIG && m; i++)
		if (m & (1ull << i)) {
			out[n++] = i;
			m &= ~(1ull << i);
		}
	return n;
}

/*
 * The thread arrives at @next after the current TB. Emits the packets of
 * the TB's last instruction. Returns 1 if the TB is a REP string
 * instruction QEMU is iterating (not a new instruction), else 0.
 */

/*
 * The thread arrives at @next after the current TB: the packets of the TB's
 * last instruction, and an interrupt if @next is not where it could go.
 */
static void resolve(struct thr *t, uint64_t next, uint64_t *uret_fired)
{
	const struct tbi *p = t->cur;
	uint64_t expect = 0;
	int check = 1;

	*uret_fired = 0;
	if (!p) {
		if (!t->user)
			return_to_user(t, next);
		return;
	}
	finish_tb(t);
	t->cur = NULL;
	if (!t->user) {
		return_to_user(t, next);
		return;
	}
	switch (p->kind) {
	case A64_OTHER:
	case A64_SVC:
	case A64_ERET:
		expect = p->next;
		break;
	case A64_ISB:
		if (t->pkt_en)
			put_atom(t, 1);
		t->dec_pos = p->next;
		expect = p->next;
		break;
	case A64_COND:
		if (next == p->target || next == p->next) {
			if (t->pkt_en)
				put_atom(t, next == p->target);
			t->dec_pos = next;
			check = 0;
		} else {
			/* Interrupted right after it: which way it went is unknown. */
			if (t->pkt_en)
				put_atom(t, 0);
			t->dec_pos = p->next;
			expect = p->next;
		}
		break;
	case A64_CALL:
		shadow_push(t, p->next);
		/* fall through */
	case A64_JMP:
		if (t->pkt_en)
			put_atom(t, 1);
		t->dec_pos = p->target;
		expect = p->target;
		break;
	case A64_ICALL:
		shadow_push(t, p->next);
		/* fall through */
	case A64_IJMP:
		if (t->pkt_en) {
			put_atom(t, 1);
			put_target(t, next);
		}
		t->dec_pos = next;
		check = 0;
		break;
	case A64_RET:
		*uret_fired = shadow_ret(t, next);
		if (t->pkt_en) {
			put_atom(t, 1);
			put_target(t, next);
		}
		t->dec_pos = next;
		check = 0;
		break;
	}
	if (check && next != expect) {
		enter_kernel_async(t, expect, ETM_EXC_IRQ);
		return_to_user(t, next);
	}
}

/*
 * Periodic synchronisation: A-sync, Trace Info, and the address a decoder
 * that starts here needs: where the last P0 element took the thread.
 */
static void periodic(struct thr *t)
{
	if (!t->pkt_en || enc_pos(t) - t->sync_at < (1ull << cfg.sync_period))
		return;
	put_sync(t);
	room(t);
	etm_enc_addr_ctxt(&t->enc, t->dec_pos);
}

static void on_tb(unsigned vcpu, void *ud)
{
	const struct tbi *b = ud;
	struct thr *t = thr_of(vcpu);
	int fired[MAX_TRIG], nf = 0, nu, i;
	uint64_t uret = 0, period = 0;

	if (!t || t->dead || g_broken || g_exiting)
		return;
	if (!t->tid)
		thread_begin(t, b->start);
	else
		resolve(t, b->start, &uret);
	if (uret)
		nf = mask_to_list(uret, fired);
	nu = nf;
	for (i = 0; i < cfg.ntrig; i++) {
		if (cfg.trig[i].kind != TK_INSNS || t->insns < t->cnt_next[i])
			continue;
		fired[nf++] = i;
		period = (uint64_t)cfg.trig[i].arg;
		while (t->cnt_next[i] <= t->insns)
			t->cnt_next[i] += period;
	}
	/* A uretprobe traps through a breakpoint, a counter by an interrupt. */
	if (nf)
		trap(t, b->start, nu ? ETM_EXC_INST_DEBUG : ETM_EXC_IRQ, fired, nf,
		     period ? period : 1);
	periodic(t);
	t->cur = b;
	t->cur_start = b->start;
	t->cur_done = 0;
}

static void on_probe(unsigned vcpu, void *ud)
{
	const struct probe_hit *h = ud;
	struct thr *t = thr_of(vcpu);
	int fired[8], nf = 0, i;

	if (!t || t->dead || g_broken || g_exiting || t->cur != h->tb || t->cur_done > h->idx)
		return;
	if (h->idx > t->cur_done) {
		account(t, t->cur_done, h->idx, t->cur_start);
		t->cur_done = h->idx;
		t->cur_start = h->vaddr;
	}
	for (i = 0; i < h->ntrig; i++) {
		int ti = h->trig[i];

		if (cfg.trig[ti].kind == TK_UPROBE)
			fired[nf++] = ti;
		else if (t->sh_n)
			t->shadow[t->sh_n - 1].uret |= 1ull << ti;
	}
	/* A uprobe is a breakpoint: the thread traps even if nothing fires. */
	trap(t, h->vaddr, ETM_EXC_INST_DEBUG, fired, nf, 1);
}

static void scan_initial_maps(int tid)
{
	char interp[4096], abs[4096];
	const char *bin = qemu_plugin_path_to_binary();

	if (!bin)
		return;
	/* The kernel names mappings by absolute path; QEMU keeps the path as given. */
	if (realpath(bin, abs))
		bin = abs;
	map_loaded_elf(tid, bin);
	read_interp(bin, interp, sizeof(interp));
	if (interp[0])
		map_loaded_elf(tid, interp);
}


static int in_xmaps(uint64_t lo, uint64_t hi)
{
	int i;

	for (i = 0; i < g_nxmaps; i++)
		if (lo >= g_xmaps[i].lo && hi <= g_xmaps[i].hi)
			return 1;
	return 0;
}

/*
 * Code outside every executable file mapping (QEMU's signal trampoline
 * page, JIT code): a decoder cannot read it from a file, so its bytes go
 * out as a PERF_RECORD_TEXT_POKE (old_len 0) once per translation.
 */
static void send_code(struct qemu_plugin_tb *tb, uint64_t start, size_t n)
{
	uint8_t bytes[4096];
	size_t i, len = 0;
	struct sb s;
	static const uint8_t zero[8];

	for (i = 0; i < n && len + 4 <= sizeof(bytes); i++) {
		struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
		size_t sz = qemu_plugin_insn_size(in);

		if (sz != 4)
			break;
		memcpy(bytes + len, qemu_plugin_insn_data(in), 4);
		len += 4;
	}
	if (!len)
		return;
	sb_begin(&s, PERF_RECORD_TEXT_POKE, PERF_RECORD_MISC_USER);
	sb_u64(&s, start);
	{
		uint16_t lens[2] = { 0, (uint16_t)len };

		sb_put(&s, lens, 4);
	}
	sb_put(&s, bytes, len);
	sb_put(&s, zero, (8 - (len + 4) % 8) % 8);
	sb_end(&s, my_tid(), 1);
}

static void on_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	struct qemu_plugin_insn *first, *last;
	struct tbi *b;
	uint32_t insn;
	uint32_t *isb = NULL, nisb = 0;
	int outside;

	if (!n || g_broken)
		return;
	first = qemu_plugin_tb_get_insn(tb, 0);
	last = qemu_plugin_tb_get_insn(tb, n - 1);
	if (!g_base_known) {
		g_base = (int64_t)((uint64_t)(uintptr_t)qemu_plugin_insn_haddr(first) -
				   qemu_plugin_insn_vaddr(first));
		g_base_known = 1;
	}
	if (!g_maps_done) {
		const char *bin = qemu_plugin_path_to_binary();

		g_maps_done = 1;
		if (!g_comm[0] && bin) {
			const char *base = strrchr(bin, '/');

			snprintf(g_comm, sizeof(g_comm), "%s", base ? base + 1 : bin);
		}
		sb_comm(my_tid(), 1);
		scan_initial_maps(my_tid());
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		g_broken = 1;
		return;
	}
	b->start = qemu_plugin_insn_vaddr(first);
	b->last = qemu_plugin_insn_vaddr(last);
	b->next = b->last + qemu_plugin_insn_size(last);
	b->ninsn = (uint32_t)n;
	memcpy(&insn, qemu_plugin_insn_data(last), 4);
	b->kind = (uint8_t)a64_classify(insn, b->last, &b->target);
	for (i = 0; i + 1 < n; i++) {
		uint64_t dummy;

		memcpy(&insn, qemu_plugin_insn_data(qemu_plugin_tb_get_insn(tb, i)), 4);
		if (a64_classify(insn, 0, &dummy) != A64_ISB)
			continue;
		if (!isb)
			isb = calloc(n, sizeof(*isb));
		if (!isb) {
			g_broken = 1;
			return;
		}
		isb[nisb++] = (uint32_t)i;
	}
	b->isb = isb;
	b->nisb = nisb;
	qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb, QEMU_PLUGIN_CB_NO_REGS, b);

	pthread_mutex_lock(&g_lock);
	outside = !in_xmaps(b->start, b->next);
	for (i = 0; g_nprobes && i < n; i++) {
		struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
		uint64_t va = qemu_plugin_insn_vaddr(in);
		struct probe_hit *h = NULL;
		int j;

		for (j = 0; j < g_nprobes; j++) {
			if (g_probes[j].vaddr != va)
				continue;
			if (!h) {
				h = calloc(1, sizeof(*h));
				if (!h)
					break;
				h->tb = b;
				h->vaddr = va;
				h->idx = (uint32_t)i;
			}
			if (h->ntrig < 8)
				h->trig[h->ntrig++] = g_probes[j].trig;
		}
		if (h)
			qemu_plugin_register_vcpu_insn_exec_cb(in, on_probe, QEMU_PLUGIN_CB_NO_REGS, h);
	}
	pthread_mutex_unlock(&g_lock);
	if (outside)
		send_code(tb, b->start, n);
}

/* ---- syscalls, fork, exec, exit --------------------------------------- */

static void *g2h(uint64_t guest)
{
	return (void *)(uintptr_t)(guest + (uint64_t)g_base);
}

/* Copies guest memory without faulting on a bad guest pointer. */
static int guest_read(uint64_t guest, void *dst, size_t n)
{
	struct iovec l = { dst, n }, r = { g2h(guest), n };

	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

static int guest_str(uint64_t guest, char *dst, size_t size)
{
	size_t i;

	for (i = 0; i + 1 < size; i++) {
		if (guest_read(guest + i, dst + i, 1) < 0)
			return -1;
		if (!dst[i])
			return 0;
	}
	dst[i] = 0;
	return -1;
}

static void all_threads_end(void)
{
	int i;

	for (i = 0; i < MAX_VCPUS; i++)
		if (g_thr[i] && g_thr[i]->tid)
			thread_end(g_thr[i]);
}

static char *arg_escape(const char *s)
{
	size_t n = strlen(s), i, j = 0;
	char *o = malloc(2 * n + 1);

	if (!o)
		return NULL;
	for (i = 0; i < n; i++) {
		o[j++] = s[i];
		if (s[i] == ',')
			o[j++] = ',';
	}
	o[j] = 0;
	return o;
}

/*
 * The guest calls execve(). qemu-user would run the new program natively,
 * out of the tracer's sight, so run it under qemu with this plugin instead:
 * the process keeps its pid, descriptors and environment, as with a real
 * exec. If that exec fails, QEMU carries on with the guest's own execve,
 * which then fails or runs the program untraced.
 */
static void do_exec(struct thr *t, uint64_t gpath, uint64_t gargv, uint64_t genvp)
{
	char path[4096], hdr[256], interp[256] = "", iarg[256] = "";
	char **argv = NULL, **envp = NULL, **args = NULL;
	char popt[8192], *esc = NULL;
	struct thr *lead;
	size_t nargv = 0, nenv = 0, i, k;
	int fd, is_elf, r;
	const char *base;

	if (!cfg.qemu || !cfg.plugin || guest_str(gpath, path, sizeof(path)) < 0)
		return;
	{
		/* As in QEMU's execve: /proc/self/exe is the guest program. */
		char self[64];
		const char *bin = qemu_plugin_path_to_binary();

		snprintf(self, sizeof(self), "/proc/%d/exe", g_pid);
		if (bin && (!strcmp(path, "/proc/self/exe") || !strcmp(path, self)))
			snprintf(path, sizeof(path), "%s", bin);
	}
	if (access(path, X_OK) < 0)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	r = (int)pread(fd, hdr, sizeof(hdr) - 1, 0);
	close(fd);
	if (r < 4)
		return;
	hdr[r] = 0;
	is_elf = !memcmp(hdr, ELFMAG, SELFMAG);
	if (is_elf) {
		if (r < 20 || hdr[EI_CLASS] != ELFCLASS64 || *(uint16_t *)(hdr + 18) != EM_AARCH64)
			return;
	} else if (hdr[0] == '#' && hdr[1] == '!') {
		char *p = hdr + 2, *e;

		while (*p == ' ' || *p == '\t')
			p++;
		e = strchr(p, '\n');
		if (!e)
			return;
		*e = 0;
		if (sscanf(p, "%255s %255[^\n]", interp, iarg) < 1)
			return;
		/* Only an aarch64 interpreter can run under qemu-aarch64. */
		fd = open(interp, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return;
		r = (int)pread(fd, hdr, 20, 0);
		close(fd);
		if (r < 20 || memcmp(hdr, ELFMAG, SELFMAG) || hdr[EI_CLASS] != ELFCLASS64 ||
		    *(uint16_t *)(hdr + 18) != EM_AARCH64)
			return;
	} else {
		return;
	}
	for (nargv = 0; nargv < 4096; nargv++) {
		uint64_t a;

		if (guest_read(gargv + 8 * nargv, &a, 8) < 0)
			return;
		if (!a)
			break;
	}
	for (nenv = 0; genvp && nenv < 65536; nenv++) {
		uint64_t a;

		if (guest_read(genvp + 8 * nenv, &a, 8) < 0)
			return;
		if (!a)
			break;
	}
	argv = calloc(nargv + 1, sizeof(*argv));
	envp = calloc(nenv + 1, sizeof(*envp));
	args = calloc(nargv + 16, sizeof(*args));
	if (!argv || !envp || !args)
		goto out;
	for (i = 0; i < nargv; i++) {
		uint64_t a;

		guest_read(gargv + 8 * i, &a, 8);
		argv[i] = g2h(a);
	}
	for (i = 0; i < nenv; i++) {
		uint64_t a;

		guest_read(genvp + 8 * i, &a, 8);
		envp[i] = g2h(a);
	}
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	esc = arg_escape(cfg.plugin);
	if (!esc)
		goto out;
	etm_enc_flush_atoms(&t->enc);
	stream_flush(t);
	/*
	 * After exec the thread is the thread-group leader (tid = pid) and
	 * its event goes on: continue the leader's stream, not this one.
	 */
	lead = t;
	for (i = 0; t->tid != g_pid && i < MAX_VCPUS; i++)
		if (g_thr[i] && g_thr[i]->tid == g_pid && !g_thr[i]->dead)
			lead = g_thr[i];
	snprintf(popt, sizeof(popt),
		 "%s,fd=%d,cfgfd=%d,exec=1,ppid=%d,en=%d,tsc0=%" PRIu64 ",insn0=%" PRIu64
		 ",auxoff=%" PRIu64 ",comm=%.15s",
		 esc, g_sock, g_cfgfd, g_ppid, t->trace_en, now_tsc(), lead->insns,
		 lead == t ? t->aux_off : enc_pos(lead), base);
	k = 0;
	args[k++] = cfg.qemu;
	args[k++] = "-0";
	args[k++] = nargv ? argv[0] : path;
	args[k++] = "-plugin";
	args[k++] = popt;
	if (interp[0]) {
		args[k++] = interp;
		if (iarg[0])
			args[k++] = iarg;
	}
	args[k++] = path;
	for (i = 1; i < nargv; i++)
		args[k++] = argv[i];
	args[k] = NULL;
	emu_send(EMU_MSG_BYE, 0, __atomic_load_n(&g_clock, __ATOMIC_RELAXED), NULL, 0, NULL, 0);
	fcntl(g_sock, F_SETFD, 0);
	fcntl(g_cfgfd, F_SETFD, 0);
	execve(cfg.qemu, args, envp);
	fcntl(g_sock, F_SETFD, FD_CLOEXEC);
	fcntl(g_cfgfd, F_SETFD, FD_CLOEXEC);
out:
	free(esc);
	free(argv);
	free(envp);
	free(args);
}


static void on_syscall(qemu_plugin_id_t id, unsigned vcpu, int64_t num, uint64_t a1,
		       uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
		       uint64_t a7, uint64_t a8)
{
	struct thr *t = thr_of(vcpu);
	int i;

	if (!t || t->dead || !t->tid || g_broken)
		return;
	t->ret_ip = t->cur ? t->cur->next : 0;
	finish_tb(t);
	t->cur = NULL;
	enter_kernel_syscall(t, t->ret_ip);
	t->sc_num = num;
	t->sc_args[0] = a1;
	t->sc_args[1] = a2;
	t->sc_args[2] = a3;
	t->sc_args[3] = a4;
	t->sc_args[4] = a5;
	t->sc_args[5] = a6;
	for (i = 0; i < cfg.ntrig; i++)
		if (cfg.trig[i].kind == TK_SYS_ENTER && (cfg.trig[i].arg < 0 || cfg.trig[i].arg == num))
			fire(t, i, t->ret_ip, 1);
	switch (num) {
	case A64_SYS_exit:
	case A64_SYS_exit_group:
		/* The other threads end in on_atexit(), once QEMU has stopped them. */
		thread_end(t);
		break;
	case A64_SYS_execve:
		do_exec(t, a1, a2, a3);
		break;
	case A64_SYS_execveat:
		if ((int)a1 == AT_FDCWD && !a5)
			do_exec(t, a2, a3, a4);
		break;
	}
}

static void child_after_fork(struct thr *t)
{
	int i;
	int ptid = t->tid;

	g_ppid = g_pid;
	g_pid = getpid();
	/* The child counts its own instructions; its clock goes on. */
	g_tsc0 += g_clock;
	g_clock = 0;
	/* Only the forking thread exists in the child; the others' copies go. */
	for (i = 0; i < MAX_VCPUS; i++)
		if (g_thr[i] && g_thr[i] != t)
			g_thr[i]->dead = 1;
	thread_stream_init(t);
	t->tid = my_tid();
	t->enc.contextid = (uint32_t)t->tid;
	t->trace_en = !cfg.start_paused;
	counters_arm(t);
	emu_send(EMU_MSG_HELLO, (uint32_t)t->tid, (uint64_t)g_pid, NULL, 0, NULL, 0);
	sb_task(PERF_RECORD_FORK, g_pid, g_ppid, t->tid, ptid);
	sb_itrace_start(t->tid);
	if (t->trace_en) {
		truth_line(t, "R %d %" PRIx64 " %" PRIu64 "\n", t->tid, t->ret_ip, t->insns);
		put_sync(t);
	}
}

static void on_syscall_ret(qemu_plugin_id_t id, unsigned vcpu, int64_t num, int64_t ret)
{
	struct thr *t = thr_of(vcpu);
	int i;

	if (!t || t->dead || !t->tid || g_broken)
		return;
	if ((num == A64_SYS_clone || num == A64_SYS_clone3) && ret == 0 && getpid() != g_pid) {
		child_after_fork(t);
	} else if ((num == A64_SYS_clone || num == A64_SYS_clone3) && ret > 0) {
		uint64_t flags = t->sc_args[0];

		if (num == A64_SYS_clone3 && guest_read(t->sc_args[0], &flags, 8) < 0)
			flags = 0;
		/* A new process announces itself (child_after_fork), so that
		 * its FORK comes before any of its trace. */
		if (flags & CLONE_THREAD)
			sb_task(PERF_RECORD_FORK, g_pid, g_pid, (int)ret, t->tid);
	} else if (num == A64_SYS_mmap && ret >= 0 && (uint64_t)ret < (1ull << 56) &&
		   (t->sc_args[2] & PROT_EXEC) && !(t->sc_args[3] & MAP_ANONYMOUS) &&
		   (int)t->sc_args[4] >= 0) {
		char lnk[64], path[4096];
		ssize_t n;

		snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", (int)t->sc_args[4]);
		n = readlink(lnk, path, sizeof(path) - 1);
		if (n > 0) {
			path[n] = 0;
			new_exec_map(t->tid, (int)t->sc_args[4], path, (uint64_t)ret,
				     t->sc_args[1], t->sc_args[5], (uint32_t)t->sc_args[2],
				     (uint32_t)t->sc_args[3]);
		}
	} else if (num == A64_SYS_prctl && t->sc_args[0] == 15 /* PR_SET_NAME */ && ret == 0) {
		char name[16];

		if (guest_str(t->sc_args[1], name, sizeof(name)) == 0 || name[0]) {
			name[15] = 0;
			memcpy(g_comm, name, sizeof(g_comm));
			sb_comm(t->tid, 0);
		}
	}
	for (i = 0; i < cfg.ntrig; i++)
		if (cfg.trig[i].kind == TK_SYS_EXIT && (cfg.trig[i].arg < 0 || cfg.trig[i].arg == num))
			fire(t, i, t->ret_ip, 1);
}

static void on_vcpu_init(qemu_plugin_id_t id, unsigned vcpu)
{
	if (vcpu >= MAX_VCPUS)
		return;
	/* A reused index belongs to a new thread. */
	thr_free(g_thr[vcpu]);
	g_thr[vcpu] = thr_new();
}

static void on_atexit(qemu_plugin_id_t id, void *ud)
{
	/*
	 * QEMU has unregistered our callbacks, but TBs translated earlier
	 * still call on_tb(): tell them to stop, and give threads that are
	 * inside one a moment to leave before their buffers are flushed.
	 */
	g_exiting = 1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	usleep(2000);
	all_threads_end();
	emu_send(EMU_MSG_BYE, 0, __atomic_load_n(&g_clock, __ATOMIC_RELAXED), NULL, 0, NULL, 0);
}


/* ---- configuration ----------------------------------------------------- */

static int parse_cfg(char *text)
{
	char *line, *save = NULL;
	int lineno = 0, saw_etm = 0;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char key[32], rest[4200];
		unsigned long long v = 0;

		lineno++;
		rest[0] = 0;
		if (sscanf(line, "%31s %4199[^\n]", key, rest) < 1)
			continue;
		if (lineno == 1) {
			if (strcmp(key, "emu") || strtoul(rest, NULL, 10) != EMU_PROTO_VERSION) {
				emu_error("config format mismatch: the plugin and ptrec come from different builds");
				return -1;
			}
			continue;
		}
		if (!strcmp(key, "qemu")) {
			cfg.qemu = strdup(rest);
		} else if (!strcmp(key, "plugin")) {
			cfg.plugin = strdup(rest);
		} else if (!strcmp(key, "trigger")) {
			struct trig *tr;
			char act[16], kind[16];
			long long arg;
			int idx, pos = 0;

			if (cfg.ntrig >= MAX_TRIG) {
				emu_error("too many triggers (at most %d)", MAX_TRIG);
				return -1;
			}
			tr = &cfg.trig[cfg.ntrig];
			if (sscanf(rest, "%d %15s %15s %lli %n", &idx, act, kind, &arg, &pos) < 4) {
				emu_error("bad trigger line: %s", rest);
				return -1;
			}
			tr->idx = idx;
			tr->arg = arg;
			tr->action = !strcmp(act, "pause") ? ACT_PAUSE :
				     !strcmp(act, "resume") ? ACT_RESUME : ACT_NONE;
			if (!strcmp(kind, "uprobe") || !strcmp(kind, "uretprobe")) {
				struct stat st;

				tr->kind = kind[1] == 'p' ? TK_UPROBE : TK_URETPROBE;
				tr->path = strdup(rest + pos);
				if (tr->path && stat(tr->path, &st) == 0) {
					tr->dev = st.st_dev;
					tr->ino = st.st_ino;
					tr->have_ino = 1;
				}
			} else if (!strcmp(kind, "sys_enter")) {
				tr->kind = TK_SYS_ENTER;
			} else if (!strcmp(kind, "sys_exit")) {
				tr->kind = TK_SYS_EXIT;
			} else if (!strcmp(kind, "insns") && arg > 0) {
				tr->kind = TK_INSNS;
			} else {
				emu_error("bad trigger kind: %s", kind);
				return -1;
			}
			cfg.ntrig++;
		} else {
			v = strtoull(rest, NULL, 0);
			if (!strcmp(key, "etm"))
				saw_etm = v == 1;
			else if (!strcmp(key, "timestamp"))
				cfg.timestamp = !!v;
			else if (!strcmp(key, "contextid"))
				cfg.contextid = !!v;
			else if (!strcmp(key, "sync_period"))
				cfg.sync_period = v < 8 ? 8 : v > 20 ? 20 : (unsigned)v;
			else if (!strcmp(key, "start_paused"))
				cfg.start_paused = !!v;
			else if (!strcmp(key, "truth"))
				cfg.truth = !!v;
		}
	}
	if (!saw_etm) {
		emu_error("config is not for the CoreSight tracer: the plugin and ptrec come from different builds");
		return -1;
	}
	return 0;
}

static int load_cfg(void)
{
	char *text;
	struct stat st;
	ssize_t n;

	if (fstat(g_cfgfd, &st) < 0 || st.st_size <= 0 || st.st_size > (1 << 20)) {
		emu_error("cannot read the tracer configuration");
		return -1;
	}
	text = calloc(1, (size_t)st.st_size + 1);
	if (!text)
		return -1;
	n = pread(g_cfgfd, text, (size_t)st.st_size, 0);
	if (n != st.st_size) {
		free(text);
		emu_error("cannot read the tracer configuration");
		return -1;
	}
	n = parse_cfg(text);
	free(text);
	return (int)n;
}


EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	const char *comm = NULL;
	int i;

	g_id = id;
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strncmp(a, "fd=", 3))
			g_sock = atoi(a + 3);
		else if (!strncmp(a, "cfgfd=", 6))
			g_cfgfd = atoi(a + 6);
		else if (!strncmp(a, "exec=", 5))
			g_exec = atoi(a + 5);
		else if (!strncmp(a, "ppid=", 5))
			g_ppid = atoi(a + 5);
		else if (!strncmp(a, "tsc0=", 5))
			g_tsc0 = strtoull(a + 5, NULL, 10);
		else if (!strncmp(a, "insn0=", 6))
			g_insn0 = strtoull(a + 6, NULL, 10);
		else if (!strncmp(a, "auxoff=", 7))
			g_auxoff0 = strtoull(a + 7, NULL, 10);
		else if (!strncmp(a, "en=", 3))
			g_exec_en = atoi(a + 3);
		else if (!strncmp(a, "comm=", 5))
			comm = a + 5;
	}
	g_pid = getpid();
	if (!g_exec)
		g_ppid = getppid();
	if (g_sock < 0 || g_cfgfd < 0 || fcntl(g_sock, F_GETFD) < 0 || fcntl(g_cfgfd, F_GETFD) < 0) {
		g_sock = -1;
		emu_error("started without its descriptors: run it through 'ptrec record --emulate'");
		return -1;
	}
	fcntl(g_sock, F_SETFD, FD_CLOEXEC);
	fcntl(g_cfgfd, F_SETFD, FD_CLOEXEC);
	if (!info || info->version.min > EMU_QEMU_PLUGIN_VERSION ||
	    info->version.cur < EMU_QEMU_PLUGIN_VERSION) {
		emu_error("QEMU plugin API version %d..%d does not include version %d that this "
			  "tracer was written for; use QEMU 7.2 (Debian 12 qemu-user)",
			  info ? info->version.min : -1, info ? info->version.cur : -1,
			  EMU_QEMU_PLUGIN_VERSION);
		return -1;
	}
	if (info->system_emulation || !info->target_name || strcmp(info->target_name, "aarch64")) {
		emu_error("the CoreSight software tracer runs only under qemu-aarch64 user mode (got %s)",
			  info->target_name ? info->target_name : "?");
		return -1;
	}
	if (load_cfg() < 0)
		return -1;
	/* The guest binary is loaded after the plugins: name it later. */
	if (comm)
		snprintf(g_comm, sizeof(g_comm), "%s", comm);
	emu_send(EMU_MSG_HELLO, (uint32_t)my_tid(), (uint64_t)g_pid, NULL, 0, NULL, 0);
	qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans);
	qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
	qemu_plugin_register_vcpu_syscall_ret_cb(id, on_syscall_ret);
	qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * The core of the software tracers: threads, pause/resume, triggers,
 * ground truth, fork/exec/exit, and the QEMU plugin entry points. See
 * tracer.h; the tracer's packets come from its emu_arch hooks.
 */
#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "maps.h"
#include "tracer.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int qemu_plugin_version = EMU_QEMU_PLUGIN_VERSION;

#define TRUTH_CAP (16 * 1024)
#define TRUTH_FLUSH (12 * 1024)

struct probe_hit {
	const struct emu_tb *tb;
	uint64_t vaddr;
	uint32_t idx;
	int ntrig;
	int trig[8];
};

pthread_mutex_t emu_lock = PTHREAD_MUTEX_INITIALIZER;

static int g_exec;            /* this instance was started by a guest execve */
static int g_exec_en, g_exec_taken;
static volatile int g_exiting;
static uint64_t g_insn0, g_auxoff0;
static int g_maps_done;
static struct emu_thr *g_thr[EMU_MAX_VCPUS];

/* ---- ground truth ------------------------------------------------------ */

static void truth_flush(struct emu_thr *t)
{
	if (!t->tlen)
		return;
	emu_send(EMU_MSG_TRUTH, (uint32_t)t->tid, 0, t->tbuf, t->tlen);
	t->tlen = 0;
}

void emu_truth(struct emu_thr *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!emu_cfg.truth)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->tbuf + t->tlen, TRUTH_CAP - t->tlen, fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < TRUTH_CAP - t->tlen)
		t->tlen += (size_t)n;
	if (t->tlen > TRUTH_FLUSH)
		truth_flush(t);
}

/* ---- the stream -------------------------------------------------------- */

uint64_t emu_stream_pos(struct emu_thr *t)
{
	return t->aux_off + emu_arch.buffered(t);
}

void emu_stream_flush(struct emu_thr *t)
{
	size_t n = emu_arch.buffered(t);

	if (n) {
		emu_send(EMU_MSG_AUX, (uint32_t)t->tid, t->aux_off, t->buf, n);
		emu_sb_aux(t->tid, t->aux_off, n);
		t->aux_off += n;
		emu_arch.drained(t);
	}
	truth_flush(t);
}

static void stream_init(struct emu_thr *t)
{
	t->aux_off = 0;
	t->tlen = 0;
	emu_arch.stream_init(t);
}

/* ---- tracing state machine -------------------------------------------- */

void emu_enter_kernel(struct emu_thr *t, uint64_t ip, enum emu_entry why)
{
	if (t->pkt_en)
		emu_arch.to_kernel(t, ip, why);
	t->pkt_en = 0;
	t->user = 0;
}

void emu_return_to_user(struct emu_thr *t, uint64_t ip)
{
	t->user = 1;
	if (!t->trace_en)
		return;
	if (emu_arch.to_user(t, ip))
		t->pkt_en = 1;
}

/* TraceEn changes; always called while the thread is "in the kernel". */
static void set_trace_en(struct emu_thr *t, int on, uint64_t ip)
{
	if (on == t->trace_en)
		return;
	t->trace_en = on;
	emu_truth(t, "%c %d %" PRIx64 " %" PRIu64 "\n", on ? 'R' : 'P', t->tid, ip, t->insns);
	emu_arch.trace_toggled(t, on);
}

static void fire(struct emu_thr *t, int ti, uint64_t ip, uint64_t period)
{
	struct emu_trig *tr = &emu_cfg.trig[ti];

	emu_sb_sample(t->tid, tr->idx, ip, period);
	if (tr->action == EMU_ACT_PAUSE)
		set_trace_en(t, 0, ip);
	else if (tr->action == EMU_ACT_RESUME)
		set_trace_en(t, 1, ip);
}

/* A trap into the kernel at @ip (uprobe, uretprobe, PMI) firing @n triggers. */
static void trap(struct emu_thr *t, uint64_t ip, enum emu_entry why, const int *trig, int n,
		 uint64_t period)
{
	int i;

	emu_enter_kernel(t, ip, why);
	for (i = 0; i < n; i++)
		fire(t, trig[i], ip, period);
	emu_return_to_user(t, ip);
}

/* ---- threads ----------------------------------------------------------- */

static void thr_free(struct emu_thr *t)
{
	if (!t)
		return;
	if (emu_arch.thr_fini)
		emu_arch.thr_fini(t);
	free(t->buf);
	free(t->tbuf);
	free(t->shadow);
	free(t);
}

static struct emu_thr *thr_new(void)
{
	struct emu_thr *t = calloc(1, emu_arch.thr_size);

	if (!t)
		return NULL;
	t->buf = malloc(EMU_ENC_CAP);
	t->tbuf = malloc(TRUTH_CAP);
	t->shadow = calloc(EMU_SHADOW_DEPTH, sizeof(*t->shadow));
	if (!t->buf || !t->tbuf || !t->shadow || emu_arch.thr_init(t) < 0) {
		thr_free(t);
		return NULL;
	}
	return t;
}

static struct emu_thr *thr_of(unsigned vcpu)
{
	if (vcpu >= EMU_MAX_VCPUS)
		return NULL;
	if (!g_thr[vcpu])
		g_thr[vcpu] = thr_new();
	return g_thr[vcpu];
}

static void set_tid(struct emu_thr *t)
{
	t->tid = emu_gettid();
	if (emu_arch.tid_set)
		emu_arch.tid_set(t);
}

static void counters_arm(struct emu_thr *t)
{
	int i;

	for (i = 0; i < emu_cfg.ntrig; i++)
		if (emu_cfg.trig[i].kind == EMU_TK_INSNS)
			t->cnt_next[i] = t->insns + (uint64_t)emu_cfg.trig[i].arg;
}

static void thread_begin(struct emu_thr *t, uint64_t ip)
{
	int cont = 0;

	set_tid(t);
	t->trace_en = !emu_cfg.start_paused;
	if (g_exec && !g_exec_taken && t->tid == emu_proc.pid) {
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
	emu_sb_itrace_start(t->tid);
	if (t->trace_en && !cont)
		emu_truth(t, "R %d %" PRIx64 " %" PRIu64 "\n", t->tid, ip, t->insns);
	counters_arm(t);
	if (t->trace_en)
		emu_arch.stream_start(t);
	emu_return_to_user(t, ip);
}

static void thread_end(struct emu_thr *t)
{
	if (!t || t->dead || !t->tid)
		return;
	/*
	 * A thread still in user code was killed with its process: where
	 * exactly is unknown, so the stream just ends (held packets go out).
	 */
	emu_arch.flush_held(t);
	emu_stream_flush(t);
	emu_sb_task(PERF_RECORD_EXIT, emu_proc.pid, emu_proc.ppid, t->tid, t->tid);
	t->dead = 1;
}

static void all_threads_end(void)
{
	int i;

	for (i = 0; i < EMU_MAX_VCPUS; i++)
		if (g_thr[i] && g_thr[i]->tid)
			thread_end(g_thr[i]);
}

/* ---- instructions ------------------------------------------------------ */

void emu_account(struct emu_thr *t, uint32_t from, uint32_t to, uint64_t start, uint64_t end)
{
	if (to <= from)
		return;
	emu_truth(t, "B %d %" PRIx64 " %" PRIx64 " %u\n", t->tid, start, end, to - from);
	t->insns += to - from;
	__atomic_fetch_add(&emu_proc.clock, to - from, __ATOMIC_RELAXED);
	if (emu_arch.retired)
		emu_arch.retired(t);
	if (emu_arch.ran)
		emu_arch.ran(t, from, to);
}

void emu_finish_tb(struct emu_thr *t)
{
	const struct emu_tb *p = t->cur;

	if (!p)
		return;
	emu_account(t, t->cur_done, p->ninsn, t->cur_start, p->next);
	t->cur_done = p->ninsn;
}

/* ---- uretprobes --------------------------------------------------------- */

void emu_shadow_push(struct emu_thr *t, uint64_t ret)
{
	if (t->sh_n == EMU_SHADOW_DEPTH) {
		memmove(t->shadow, t->shadow + 1, (EMU_SHADOW_DEPTH - 1) * sizeof(*t->shadow));
		t->sh_n--;
	}
	t->shadow[t->sh_n].ret = ret;
	t->shadow[t->sh_n].uret = 0;
	t->sh_n++;
}

uint64_t emu_shadow_ret(struct emu_thr *t, uint64_t target)
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

	for (i = 0; i < EMU_MAX_TRIG && m; i++)
		if (m & (1ull << i)) {
			out[n++] = i;
			m &= ~(1ull << i);
		}
	return n;
}

/* ---- execution callbacks ----------------------------------------------- */

static void on_tb(unsigned vcpu, void *ud)
{
	const struct emu_tb *b = ud;
	struct emu_thr *t = thr_of(vcpu);
	int fired[EMU_MAX_TRIG], nf = 0, nu, i;
	uint64_t uret = 0, period = 0;

	if (!t || t->dead || emu_proc.broken || g_exiting)
		return;
	if (!t->tid) {
		thread_begin(t, b->start);
	} else if (!t->cur) {
		if (!t->user)
			emu_return_to_user(t, b->start);
	} else {
		uint64_t expect = 0;

		switch (emu_arch.resolve(t, b->start, &expect, &uret)) {
		case EMU_REPEATED:
			t->cur = b;
			t->cur_start = b->start;
			t->cur_done = b->ninsn;
			return;
		case EMU_EXPECTED:
			if (b->start != expect) {
				emu_enter_kernel(t, expect, EMU_ENTRY_INTERRUPT);
				emu_return_to_user(t, b->start);
			}
			break;
		}
	}
	if (uret)
		nf = mask_to_list(uret, fired);
	nu = nf;
	for (i = 0; i < emu_cfg.ntrig; i++) {
		if (emu_cfg.trig[i].kind != EMU_TK_INSNS || t->insns < t->cnt_next[i])
			continue;
		fired[nf++] = i;
		period = (uint64_t)emu_cfg.trig[i].arg;
		while (t->cnt_next[i] <= t->insns)
			t->cnt_next[i] += period;
	}
	/* A uretprobe traps through a breakpoint, a counter by an interrupt. */
	if (nf)
		trap(t, b->start, nu ? EMU_ENTRY_BREAKPOINT : EMU_ENTRY_INTERRUPT, fired, nf,
		     period ? period : 1);
	emu_arch.periodic(t, b->start);
	t->cur = b;
	t->cur_start = b->start;
	t->cur_done = 0;
}

static void on_probe(unsigned vcpu, void *ud)
{
	const struct probe_hit *h = ud;
	struct emu_thr *t = thr_of(vcpu);
	int fired[8], nf = 0, i;

	if (!t || t->dead || emu_proc.broken || g_exiting || t->cur != h->tb ||
	    t->cur_done > h->idx)
		return;
	if (h->idx > t->cur_done) {
		emu_account(t, t->cur_done, h->idx, t->cur_start, h->vaddr);
		t->cur_done = h->idx;
		t->cur_start = h->vaddr;
	}
	for (i = 0; i < h->ntrig; i++) {
		int ti = h->trig[i];

		if (emu_cfg.trig[ti].kind == EMU_TK_UPROBE)
			fired[nf++] = ti;
		else if (t->sh_n)
			t->shadow[t->sh_n - 1].uret |= 1ull << ti;
	}
	/* A uprobe is a breakpoint: the thread traps even if nothing fires. */
	trap(t, h->vaddr, EMU_ENTRY_BREAKPOINT, fired, nf, 1);
}

/* ---- translation ------------------------------------------------------- */

static void on_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	struct qemu_plugin_insn *first, *last;
	struct emu_tb *b;

	if (!n || emu_proc.broken)
		return;
	first = qemu_plugin_tb_get_insn(tb, 0);
	last = qemu_plugin_tb_get_insn(tb, n - 1);
	emu_guest_base((uint64_t)(uintptr_t)qemu_plugin_insn_haddr(first),
		       qemu_plugin_insn_vaddr(first));
	if (!g_maps_done) {
		const char *bin = qemu_plugin_path_to_binary();

		g_maps_done = 1;
		if (!emu_proc.comm[0] && bin) {
			const char *base = strrchr(bin, '/');

			snprintf(emu_proc.comm, sizeof(emu_proc.comm), "%s", base ? base + 1 : bin);
		}
		emu_sb_comm(emu_gettid(), 1);
		emu_scan_initial_maps(emu_gettid());
	}
	b = calloc(1, emu_arch.tb_size);
	if (!b) {
		emu_proc.broken = 1;
		return;
	}
	b->start = qemu_plugin_insn_vaddr(first);
	b->last = qemu_plugin_insn_vaddr(last);
	b->next = b->last + qemu_plugin_insn_size(last);
	b->ninsn = (uint32_t)n;
	if (emu_arch.classify(tb, n, b) < 0) {
		free(b);
		emu_proc.broken = 1;
		return;
	}
	qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb, QEMU_PLUGIN_CB_NO_REGS, b);

	pthread_mutex_lock(&emu_lock);
	for (i = 0; emu_have_probes() && i < n; i++) {
		struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
		uint64_t va = qemu_plugin_insn_vaddr(in);
		struct probe_hit *h;
		int trig[8], nt = emu_probes_at(va, trig, 8);

		if (!nt)
			continue;
		h = calloc(1, sizeof(*h));
		if (!h)
			continue;
		h->tb = b;
		h->vaddr = va;
		h->idx = (uint32_t)i;
		h->ntrig = nt < 8 ? nt : 8;
		memcpy(h->trig, trig, (size_t)h->ntrig * sizeof(*trig));
		qemu_plugin_register_vcpu_insn_exec_cb(in, on_probe, QEMU_PLUGIN_CB_NO_REGS, h);
	}
	pthread_mutex_unlock(&emu_lock);
	if (emu_arch.translated)
		emu_arch.translated(tb, n, b);
}

/* ---- syscalls, fork, exec, exit --------------------------------------- */

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

/* The first @r bytes of a file, @hdr, start a 64-bit ELF file for this machine. */
static int machine_elf(const char *hdr, int r)
{
	uint16_t mach;

	if (r < 20 || memcmp(hdr, ELFMAG, SELFMAG) || hdr[EI_CLASS] != ELFCLASS64)
		return 0;
	memcpy(&mach, hdr + 18, 2);
	return mach == emu_arch.elf_machine;
}

/*
 * The guest calls execve(). qemu-user would run the new program natively,
 * out of the tracer's sight, so run it under qemu with this plugin instead:
 * the process keeps its pid, descriptors and environment, as with a real
 * exec. If that exec fails, QEMU carries on with the guest's own execve,
 * which then fails or runs the program untraced.
 */
static void do_exec(struct emu_thr *t, uint64_t gpath, uint64_t gargv, uint64_t genvp)
{
	char path[4096], hdr[256], interp[256] = "", iarg[256] = "";
	char **argv = NULL, **envp = NULL, **args = NULL;
	char popt[8192], *esc = NULL;
	struct emu_thr *lead;
	size_t nargv = 0, nenv = 0, i, k;
	int fd, r;
	const char *base;

	if (!emu_cfg.qemu || !emu_cfg.plugin || emu_guest_str(gpath, path, sizeof(path)) < 0)
		return;
	{
		/* As in QEMU's execve: /proc/self/exe is the guest program. */
		char self[64];
		const char *bin = qemu_plugin_path_to_binary();

		snprintf(self, sizeof(self), "/proc/%d/exe", emu_proc.pid);
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
	if (!memcmp(hdr, ELFMAG, SELFMAG)) {
		if (!machine_elf(hdr, r))
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
		if (emu_arch.exec_check_interp) {
			/* Only an interpreter for this machine can run under this qemu. */
			fd = open(interp, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				return;
			r = (int)pread(fd, hdr, 20, 0);
			close(fd);
			if (!machine_elf(hdr, r))
				return;
		}
	} else {
		return;
	}
	for (nargv = 0; nargv < 4096; nargv++) {
		uint64_t a;

		if (emu_guest_read(gargv + 8 * nargv, &a, 8) < 0)
			return;
		if (!a)
			break;
	}
	for (nenv = 0; genvp && nenv < 65536; nenv++) {
		uint64_t a;

		if (emu_guest_read(genvp + 8 * nenv, &a, 8) < 0)
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

		emu_guest_read(gargv + 8 * i, &a, 8);
		argv[i] = emu_g2h(a);
	}
	for (i = 0; i < nenv; i++) {
		uint64_t a;

		emu_guest_read(genvp + 8 * i, &a, 8);
		envp[i] = emu_g2h(a);
	}
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	esc = arg_escape(emu_cfg.plugin);
	if (!esc)
		goto out;
	emu_arch.flush_held(t);
	emu_stream_flush(t);
	/*
	 * After exec the thread is the thread-group leader (tid = pid) and
	 * its event goes on: continue the leader's stream, not this one.
	 */
	lead = t;
	for (i = 0; t->tid != emu_proc.pid && i < EMU_MAX_VCPUS; i++)
		if (g_thr[i] && g_thr[i]->tid == emu_proc.pid && !g_thr[i]->dead)
			lead = g_thr[i];
	snprintf(popt, sizeof(popt),
		 "%s,fd=%d,cfgfd=%d,exec=1,ppid=%d,en=%d,tsc0=%" PRIu64 ",insn0=%" PRIu64
		 ",auxoff=%" PRIu64 ",comm=%.15s",
		 esc, emu_proc.sock, emu_proc.cfgfd, emu_proc.ppid, t->trace_en, emu_now(),
		 lead->insns, lead == t ? t->aux_off : emu_stream_pos(lead), base);
	k = 0;
	args[k++] = emu_cfg.qemu;
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
	emu_send(EMU_MSG_BYE, 0, __atomic_load_n(&emu_proc.clock, __ATOMIC_RELAXED), NULL, 0);
	fcntl(emu_proc.sock, F_SETFD, 0);
	fcntl(emu_proc.cfgfd, F_SETFD, 0);
	execve(emu_cfg.qemu, args, envp);
	fcntl(emu_proc.sock, F_SETFD, FD_CLOEXEC);
	fcntl(emu_proc.cfgfd, F_SETFD, FD_CLOEXEC);
out:
	free(esc);
	free(argv);
	free(envp);
	free(args);
}

static int is_fork(int64_t num)
{
	const struct emu_sysnr *s = &emu_arch.sys;

	return num == s->clone || num == s->clone3 || (s->fork >= 0 && num == s->fork) ||
	       (s->vfork >= 0 && num == s->vfork);
}

static void on_syscall(qemu_plugin_id_t id, unsigned vcpu, int64_t num, uint64_t a1,
		       uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
		       uint64_t a7, uint64_t a8)
{
	const struct emu_sysnr *s = &emu_arch.sys;
	struct emu_thr *t = thr_of(vcpu);
	int i;

	if (!t || t->dead || !t->tid || emu_proc.broken)
		return;
	t->ret_ip = t->cur ? t->cur->next : 0;
	emu_finish_tb(t);
	t->cur = NULL;
	emu_enter_kernel(t, t->ret_ip, EMU_ENTRY_SYSCALL);
	t->sc_num = num;
	t->sc_args[0] = a1;
	t->sc_args[1] = a2;
	t->sc_args[2] = a3;
	t->sc_args[3] = a4;
	t->sc_args[4] = a5;
	t->sc_args[5] = a6;
	for (i = 0; i < emu_cfg.ntrig; i++)
		if (emu_cfg.trig[i].kind == EMU_TK_SYS_ENTER &&
		    (emu_cfg.trig[i].arg < 0 || emu_cfg.trig[i].arg == num))
			fire(t, i, t->ret_ip, 1);
	if (num == s->exit || num == s->exit_group) {
		/* The other threads end in on_atexit(), once QEMU has stopped them. */
		thread_end(t);
	} else if (num == s->execve) {
		do_exec(t, a1, a2, a3);
	} else if (num == s->execveat) {
		if ((int)a1 == AT_FDCWD && !a5)
			do_exec(t, a2, a3, a4);
	}
}

static void child_after_fork(struct emu_thr *t)
{
	int i;
	int ptid = t->tid;

	emu_proc.ppid = emu_proc.pid;
	emu_proc.pid = getpid();
	/* The child counts its own instructions; its clock goes on. */
	emu_proc.tsc0 += emu_proc.clock;
	emu_proc.clock = 0;
	/* Only the forking thread exists in the child; the others' copies go. */
	for (i = 0; i < EMU_MAX_VCPUS; i++)
		if (g_thr[i] && g_thr[i] != t)
			g_thr[i]->dead = 1;
	stream_init(t);
	set_tid(t);
	t->trace_en = !emu_cfg.start_paused;
	counters_arm(t);
	emu_send(EMU_MSG_HELLO, (uint32_t)t->tid, (uint64_t)emu_proc.pid, NULL, 0);
	emu_sb_task(PERF_RECORD_FORK, emu_proc.pid, emu_proc.ppid, t->tid, ptid);
	emu_sb_itrace_start(t->tid);
	if (t->trace_en) {
		emu_truth(t, "R %d %" PRIx64 " %" PRIu64 "\n", t->tid, t->ret_ip, t->insns);
		emu_arch.stream_start(t);
	}
}

static void on_syscall_ret(qemu_plugin_id_t id, unsigned vcpu, int64_t num, int64_t ret)
{
	const struct emu_sysnr *s = &emu_arch.sys;
	struct emu_thr *t = thr_of(vcpu);
	int i;

	if (!t || t->dead || !t->tid || emu_proc.broken)
		return;
	if (is_fork(num) && ret == 0 && getpid() != emu_proc.pid) {
		child_after_fork(t);
	} else if (is_fork(num) && ret > 0) {
		uint64_t flags = t->sc_args[0];

		if (num == s->clone3 && emu_guest_read(t->sc_args[0], &flags, 8) < 0)
			flags = 0;
		/* A new process announces itself (child_after_fork), so that
		 * its FORK comes before any of its trace. */
		if ((num == s->clone || num == s->clone3) && (flags & CLONE_THREAD))
			emu_sb_task(PERF_RECORD_FORK, emu_proc.pid, emu_proc.pid, (int)ret, t->tid);
	} else if (num == s->mmap && ret >= 0 && (uint64_t)ret < (1ull << 56) &&
		   (t->sc_args[2] & PROT_EXEC) && !(t->sc_args[3] & MAP_ANONYMOUS) &&
		   (int)t->sc_args[4] >= 0) {
		char lnk[64], path[4096];
		ssize_t n;

		snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", (int)t->sc_args[4]);
		n = readlink(lnk, path, sizeof(path) - 1);
		if (n > 0) {
			path[n] = 0;
			emu_new_exec_map(t->tid, (int)t->sc_args[4], path, (uint64_t)ret,
					 t->sc_args[1], t->sc_args[5], (uint32_t)t->sc_args[2],
					 (uint32_t)t->sc_args[3]);
		}
	} else if (num == s->prctl && t->sc_args[0] == 15 /* PR_SET_NAME */ && ret == 0) {
		char name[16];

		if (emu_guest_str(t->sc_args[1], name, sizeof(name)) == 0 || name[0]) {
			name[15] = 0;
			memcpy(emu_proc.comm, name, sizeof(emu_proc.comm));
			emu_sb_comm(t->tid, 0);
		}
	}
	for (i = 0; i < emu_cfg.ntrig; i++)
		if (emu_cfg.trig[i].kind == EMU_TK_SYS_EXIT &&
		    (emu_cfg.trig[i].arg < 0 || emu_cfg.trig[i].arg == num))
			fire(t, i, t->ret_ip, 1);
}

static void on_vcpu_init(qemu_plugin_id_t id, unsigned vcpu)
{
	if (vcpu >= EMU_MAX_VCPUS)
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
	emu_send(EMU_MSG_BYE, 0, __atomic_load_n(&emu_proc.clock, __ATOMIC_RELAXED), NULL, 0);
}

/* ---- installation ------------------------------------------------------ */

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	const char *comm = NULL;
	int i;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strncmp(a, "fd=", 3))
			emu_proc.sock = atoi(a + 3);
		else if (!strncmp(a, "cfgfd=", 6))
			emu_proc.cfgfd = atoi(a + 6);
		else if (!strncmp(a, "exec=", 5))
			g_exec = atoi(a + 5);
		else if (!strncmp(a, "ppid=", 5))
			emu_proc.ppid = atoi(a + 5);
		else if (!strncmp(a, "tsc0=", 5))
			emu_proc.tsc0 = strtoull(a + 5, NULL, 10);
		else if (!strncmp(a, "insn0=", 6))
			g_insn0 = strtoull(a + 6, NULL, 10);
		else if (!strncmp(a, "auxoff=", 7))
			g_auxoff0 = strtoull(a + 7, NULL, 10);
		else if (!strncmp(a, "en=", 3))
			g_exec_en = atoi(a + 3);
		else if (!strncmp(a, "comm=", 5))
			comm = a + 5;
	}
	emu_proc.pid = getpid();
	if (!g_exec)
		emu_proc.ppid = getppid();
	if (emu_proc.sock < 0 || emu_proc.cfgfd < 0 || fcntl(emu_proc.sock, F_GETFD) < 0 ||
	    fcntl(emu_proc.cfgfd, F_GETFD) < 0) {
		emu_proc.sock = -1;
		emu_error("started without its descriptors: run it through 'ptrec record --emulate'");
		return -1;
	}
	fcntl(emu_proc.sock, F_SETFD, FD_CLOEXEC);
	fcntl(emu_proc.cfgfd, F_SETFD, FD_CLOEXEC);
	if (!info || info->version.min > EMU_QEMU_PLUGIN_VERSION ||
	    info->version.cur < EMU_QEMU_PLUGIN_VERSION) {
		emu_error("QEMU plugin API version %d..%d does not include version %d that this "
			  "tracer was written for; use QEMU 7.2 (Debian 12 qemu-user)",
			  info ? info->version.min : -1, info ? info->version.cur : -1,
			  EMU_QEMU_PLUGIN_VERSION);
		return -1;
	}
	if (info->system_emulation || !info->target_name ||
	    strcmp(info->target_name, emu_arch.target)) {
		emu_error("the %s runs only under qemu-%s user mode (got %s)", emu_arch.name,
			  emu_arch.target, info->target_name ? info->target_name : "?");
		return -1;
	}
	if (emu_cfg_load(emu_proc.cfgfd, emu_arch.cfg_key, emu_arch.cfg_check) < 0)
		return -1;
	/* The guest binary is loaded after the plugins: name it later. */
	if (comm)
		snprintf(emu_proc.comm, sizeof(emu_proc.comm), "%s", comm);
	emu_send(EMU_MSG_HELLO, (uint32_t)emu_gettid(), (uint64_t)emu_proc.pid, NULL, 0);
	qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans);
	qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
	qemu_plugin_register_vcpu_syscall_ret_cb(id, on_syscall_ret);
	qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
	return 0;
}

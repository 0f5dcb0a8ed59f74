// SPDX-License-Identifier: MIT
/*
 * The whole-system software tracer's QEMU plugin: see sys.h.
 *
 * Until the guest's first process reaches ptrec_guest_mark() (in the
 * process that then execs the workload) only that address is watched, so
 * the boot runs without callbacks. There the plugin learns the workload's
 * task and pid, drops every translation (qemu_plugin_reset) and from then
 * on sees every block. Tracing starts where the kernel enables an
 * enable_on_exec event, perf_event_exec() in the exec of the workload.
 *
 * As in the user-mode tracer, a block's last instruction and the start of
 * the next block give the branch taken. An inline counter tells how many
 * of a block's instructions began: fewer than all means an exception in
 * the block; arriving at an interrupt or exception handler is an
 * asynchronous event (FUP + TIP). Code outside the traced privilege levels
 * is left with TIP.PGD and re-entered with TIP.PGE, as the hardware's CPL
 * filter does; a switch to another task stops the stream (TIP.PGD) and
 * the workload's next block resumes it (TIP.PGE).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <linux/perf_event.h>

#include "common/sideband.h"
#include "qemu_plugin_api.h"
#include "record/emu_proto.h"
#include "sys.h"
#include "x86.h"

#define KERNEL_HALF 0xffff800000000000ull
#define BUF_CAP (64 * 1024)

__attribute__((visibility("default"))) int qemu_plugin_version = EMU_QEMU_PLUGIN_VERSION;

static qemu_plugin_id_t plugin_id;

static struct {
	uint64_t wtask;  /* the workload's task_struct */
	int active;      /* the workload has exec'd: trace it */
	int trace_en;    /* not paused */
	int pkt_en;      /* packets flow: active, not paused, in the filter, workload running */
	int running;     /* the workload's task ran the last block */
	uint64_t exec_fn; /* perf_event_exec() */
	uint64_t started; /* instructions of the current block that began */
	const struct sys_tb *prev;
	struct emu_pt pt;
	uint8_t buf[BUF_CAP];
	uint64_t aux_off;
	uint64_t kret[SYS_KRET_DEPTH]; /* return addresses armed by kentry of a kret trigger */
	uint64_t kret_trig[SYS_KRET_DEPTH];
	unsigned nkret;
	uint64_t call_ret; /* the return address of the last call (jumps through thunks keep it) */
	/*
	 * An interrupt or exception arrived at handler @pend_ip right after
	 * block @pend (which ran whole) whose last instruction's target is not
	 * known: its packets wait for the handler's first stack store, above
	 * the hardware's frame, which holds the interrupted RIP.
	 */
	const struct sys_tb *pend;
	uint64_t pend_ip;
	uint64_t rep_at; /* a REP string instruction that QEMU runs again per element */
	uint64_t insns_u, insns_k; /* the workload's instructions since its exec */
	char *tbuf;
	size_t tlen, tcap;
} S;

static int tid(void)
{
	return emu_proc.pid;
}

/* ---- the stream -------------------------------------------------------- */

static void truth(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void truth(const char *fmt, ...)
{
	va_list ap;
	char line[256];
	int n;

	if (!sys_cfg.truth)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n <= 0 || (size_t)n >= sizeof(line))
		return;
	if (S.tlen + (size_t)n > S.tcap) {
		char *t = realloc(S.tbuf, S.tcap = S.tcap ? 2 * S.tcap : 65536);

		if (!t) {
			emu_proc.broken = 1;
			return;
		}
		S.tbuf = t;
	}
	memcpy(S.tbuf + S.tlen, line, (size_t)n);
	S.tlen += (size_t)n;
	if (S.tlen > EMU_MSG_MAX - 512) {
		emu_send(EMU_MSG_TRUTH, (uint32_t)tid(), 0, S.tbuf, S.tlen);
		S.tlen = 0;
	}
}

static void flush(struct emu_pt *p)
{
	size_t n = emu_pt_buffered(p);

	if (n) {
		emu_send(EMU_MSG_AUX, (uint32_t)tid(), S.aux_off, S.buf, n);
		emu_sb_aux(tid(), S.aux_off, n);
		S.aux_off += n;
		emu_pt_drained(p);
	}
	if (S.tlen) {
		emu_send(EMU_MSG_TRUTH, (uint32_t)tid(), 0, S.tbuf, S.tlen);
		S.tlen = 0;
	}
}

static uint64_t base(struct emu_pt *p)
{
	(void)p;
	return S.aux_off;
}

static uint64_t now(struct emu_pt *p)
{
	(void)p;
	return emu_now();
}

static void failed(struct emu_pt *p)
{
	(void)p;
	emu_proc.broken = 1;
}

static const struct emu_pt_ops pt_ops = {
	.flush = flush, .base = base, .now = now, .failed = failed, .flush_at = EMU_MSG_MAX - 1024,
};

static int in_filter(uint64_t ip)
{
	return ip >= KERNEL_HALF ? sys_cfg.k : sys_cfg.u;
}

/* Packets start flowing at @ip (tracing on, or the filter entered). */
static void pge(uint64_t ip)
{
	if (!sys_cfg.pt.branch)
		return;
	if (!S.pt.psb_done)
		emu_pt_psb_plus(&S.pt, 0, 0);
	emu_pt_mode_exec(&S.pt);
	emu_pt_ip(&S.pt, ppt_tip_pge, ip, 0);
	S.pkt_en = 1;
}

/* Packets stop; @fup: the IP where execution stopped, if not by a branch. */
static void pgd(int with_fup, uint64_t fup)
{
	if (with_fup)
		emu_pt_ip(&S.pt, ppt_fup, fup, 0);
	emu_pt_ip(&S.pt, ppt_tip_pgd, 0, 1);
	S.pkt_en = 0;
}

static int want(uint64_t ip)
{
	return S.active && S.trace_en && S.running && in_filter(ip);
}

/* ---- triggers ---------------------------------------------------------- */

static void set_trace(int on, uint64_t ip)
{
	if (S.trace_en == on)
		return;
	if (!on && S.pkt_en)
		pgd(1, ip);
	S.trace_en = on;
	truth("%c %d %" PRIx64 " %" PRIu64 "\n", on ? 'R' : 'P', tid(), ip, emu_proc.clock);
	if (on) {
		if (S.pt.psb_done)
			emu_pt_timing(&S.pt);
		emu_pt_rs_reset(&S.pt);
		if (want(ip))
			pge(ip);
	}
}

static void fire(const struct sys_trig *t, uint64_t ip)
{
	long ti = t - sys_cfg.trig;

	if (!S.active)
		return;
	/* Its event counts nowhere now (ptrec's model of the kernel says so): no sample, no action. */
	if (emu_proc.shm && ti < EMU_SHM_TRIGS &&
	    __atomic_load_n(&emu_proc.shm->trig_off[ti], __ATOMIC_ACQUIRE))
		return;
	emu_sb_sample(tid(), t->idx, ip, t->kind == SYS_TK_INSNS ? t->period : 1);
	if (t->action == SYS_ACT_RESUME)
		set_trace(1, ip);
	else if (t->action == SYS_ACT_PAUSE)
		set_trace(0, ip);
}

/*
 * Counter triggers: a counter of the workload's user and/or kernel
 * instructions overflows within the block that just ran; its sample (and
 * action) comes at @ip, where execution goes on, as a counter's overflow
 * interrupt comes after the instruction that overflowed it (the skid here
 * is the rest of the block).
 */
static void counters_at(uint64_t ip)
{
	for (int j = 0; j < sys_cfg.ntrig; j++) {
		struct sys_trig *t = &sys_cfg.trig[j];
		uint64_t n = (t->u ? S.insns_u : 0) + (t->k ? S.insns_k : 0);

		if (t->kind != SYS_TK_INSNS || n < t->next)
			continue;
		/* One overflow however many periods passed; the count goes on from it. */
		while (t->next <= n)
			t->next += t->period;
		fire(t, ip);
	}
}

/* The workload arrives at @ip, coming from @p (NULL: not by a branch). */
static void triggers_at(uint64_t ip, const struct sys_tb *p)
{
	for (unsigned i = S.nkret; p && p->kind == EMU_BR_RET && i-- > 0;) {
		if (S.kret[i] != ip)
			continue;
		for (int j = 0; j < sys_cfg.ntrig; j++)
			if (S.kret_trig[i] >> j & 1)
				fire(&sys_cfg.trig[j], ip);
		S.nkret = i;
		break;
	}
	for (int j = 0; j < sys_cfg.ntrig; j++) {
		const struct sys_trig *t = &sys_cfg.trig[j];

		if (t->kind == SYS_TK_INSNS || t->addr != ip)
			continue;
		if (t->kind == SYS_TK_KENTRY) {
			fire(t, ip);
		} else if (p && S.call_ret) {
			if (S.nkret && S.kret[S.nkret - 1] == S.call_ret) {
				S.kret_trig[S.nkret - 1] |= 1ull << j;
			} else if (S.nkret < SYS_KRET_DEPTH) {
				S.kret[S.nkret] = S.call_ret;
				S.kret_trig[S.nkret++] = 1ull << j;
			}
		}
	}
}

/* ---- branches ---------------------------------------------------------- */

/*
 * QEMU ends a block before an instruction that crosses into the next page,
 * yet lists that instruction; the next block starts with it. It did not
 * run in @p, which ended after @n instructions without a branch.
 */
static int short_block(const struct sys_tb *p, uint64_t n, uint64_t ip)
{
	return n < p->ninsn && ip == p->insn[n];
}

/* The packets of @p's last instruction going to @ip (both in the workload). */
static void emit_branch(const struct sys_tb *p, uint64_t ip)
{
	switch (p->kind) {
	case EMU_BR_COND:
		emu_pt_tnt_bit(&S.pt, ip == p->target && ip != p->next);
		break;
	case EMU_BR_CALL:
		if (p->target != p->next)
			emu_pt_rs_push(&S.pt, p->next);
		break;
	case EMU_BR_ICALL:
		emu_pt_rs_push(&S.pt, p->next);
		/* fall through */
	case EMU_BR_IJMP:
	case EMU_BR_FAR:
	case EMU_BR_SYSCALL:
		if (in_filter(ip))
			emu_pt_ip(&S.pt, ppt_tip, ip, 0);
		break;
	case EMU_BR_RET:
		if (in_filter(ip))
			emu_pt_ret(&S.pt, ip);
		break;
	default:
		break;
	}
}

/* Whether the target of @p's last instruction cannot be seen from the next block. */
static int unseen_target(const struct sys_tb *p)
{
	return p->kind != EMU_BR_NONE && p->kind != EMU_BR_REPSTR && p->kind != EMU_BR_JMP &&
	       p->kind != EMU_BR_CALL && p->kind != EMU_BR_SYSCALL;
}

static void account_done(const struct sys_tb *p, uint64_t done);

/* Execution was interrupted before @fup and went on at handler @ip. */
static void async_to(uint64_t fup, uint64_t ip)
{
	if (want(ip)) {
		emu_pt_ip(&S.pt, ppt_fup, fup, 0);
		emu_pt_ip(&S.pt, ppt_tip, ip, 0);
	} else {
		pgd(1, fup);
	}
}

/* The pending branch went to @rip (0: never learnt; the fall-through is assumed). */
static void settle(uint64_t rip)
{
	const struct sys_tb *p = S.pend;

	S.pend = NULL;
	if (!rip) {
		truth("E %d %" PRIx64 " unknown outcome before an interrupt\n", tid(), p->last);
		rip = p->next;
	}
	if (rip == p->last) {
		/* The last instruction itself faulted: it did not complete. */
		account_done(p, p->ninsn - 1);
		if (S.pkt_en)
			async_to(rip, S.pend_ip);
		else if (want(S.pend_ip))
			pge(S.pend_ip);
		return;
	}
	account_done(p, p->ninsn);
	if (S.pkt_en && in_filter(rip))
		emit_branch(p, rip);
	else if (S.pkt_en)
		pgd(0, 0);
	if (p->kind == EMU_BR_ICALL || p->kind == EMU_BR_CALL)
		S.call_ret = p->next;
	if (S.pkt_en)
		async_to(rip, S.pend_ip);
	else if (want(S.pend_ip))
		pge(S.pend_ip);
}

/*
 * The workload's block @p ran (@n of its instructions began) and execution
 * went on at @ip in the workload. The packets of @p's last instruction, or
 * of the asynchronous event that cut it short.
 */
static void branch(const struct sys_tb *p, uint64_t n, uint64_t ip)
{
	int async = 0, known = 1;
	uint64_t fup = p->next;

	if (n == p->ninsn && (p->kind == EMU_BR_CALL || p->kind == EMU_BR_ICALL))
		S.call_ret = p->next;
	if (short_block(p, n, ip)) {
		if (!S.pkt_en && want(ip))
			pge(ip);
		return;
	}
	if (n < p->ninsn) {
		async = 1;
		fup = p->insn[n ? n - 1 : 0];
	} else if (sys_guest_is_entry(ip) && p->kind != EMU_BR_SYSCALL) {
		async = 1;
		if (p->kind == EMU_BR_JMP || p->kind == EMU_BR_CALL)
			fup = p->target;
		else if (unseen_target(p))
			known = 0;
	}
	if (!S.pkt_en) {
		if (want(ip))
			pge(ip);
		return;
	}
	if (async && !known) {
		S.pend = p;
		S.pend_ip = ip;
		return;
	}
	if (async) {
		/* The call ran: the decoder pushes its return address too. */
		if (n == p->ninsn && p->kind == EMU_BR_CALL && p->target != p->next)
			emu_pt_rs_push(&S.pt, p->next);
		async_to(fup, ip);
		return;
	}
	emit_branch(p, ip);
	if (!want(ip))
		pgd(0, 0);
}

/* ---- execution --------------------------------------------------------- */

static void account_done(const struct sys_tb *p, uint64_t done)
{
	int again = p->ninsn == 1 && p->start == S.rep_at;

	S.rep_at = p->kind == EMU_BR_REPSTR && done == p->ninsn ? p->last : 0;
	/* Another element of the same REP instruction: not a new instruction. */
	if (!done || again)
		return;
	emu_proc.clock += done;
	if (S.active && p->start >= KERNEL_HALF)
		S.insns_k += done;
	else if (S.active)
		S.insns_u += done;
	if (S.pkt_en || (S.active && S.trace_en && in_filter(p->start) && S.running))
		truth("B %d %" PRIx64 " %" PRIx64 " %" PRIu64 "\n", tid(), p->start,
		      p->insn[done - 1], done);
	if (S.pkt_en)
		emu_pt_retired(&S.pt);
}

static void account(const struct sys_tb *p, uint64_t n, uint64_t ip)
{
	/* Settled with the branch once the interrupted RIP is known (settle()). */
	if (n == p->ninsn && S.pkt_en && unseen_target(p) && sys_guest_is_entry(ip))
		return;
	account_done(p, n < p->ninsn && !short_block(p, n, ip) ? (n ? n - 1 : 0) : n);
}

/*
 * The guest switched the workload's task out (@in 0) or back in, after its
 * exec: perf_event_task_sched_out() and perf_event_task_sched_in() call
 * perf_event_switch() (kernel/events/core.c), a PERF_RECORD_SWITCH for the
 * task's events; at the sched-out the context's AUX event stops
 * (intel_pt's pt_event_stop() ends its piece with perf_aux_output_end(),
 * whose PERF_RECORD_AUX follows the SWITCH). So the trace so far goes out
 * first, without its AUX record: the model writes that at the switch.
 * PREEMPT is never set: the plugin cannot read the task's state.
 */
static void switched(int in)
{
	size_t n = emu_pt_buffered(&S.pt);
	struct emu_sb s;

	if (!S.active)
		return;
	if (!in && n) {
		emu_send(EMU_MSG_AUX, (uint32_t)tid(), S.aux_off, S.buf, n);
		S.aux_off += n;
		emu_pt_drained(&S.pt);
	}
	emu_sb_begin(&s, PERF_RECORD_SWITCH, in ? 0 : PERF_RECORD_MISC_SWITCH_OUT);
	emu_sb_end(&s, tid());
	truth("S %d %s %" PRIu64 "\n", tid(), in ? "in" : "out", emu_proc.clock);
}

static void start_tracing(uint64_t ip)
{
	S.active = 1;
	emu_sb_comm(tid(), 1);
	emu_sb_itrace_start(tid());
	emu_pt_psb_plus(&S.pt, 0, 0);
	S.trace_en = 0;
	set_trace(!sys_cfg.start_paused, ip);
	if (sys_cfg.start_paused)
		truth("P %d %" PRIx64 " %" PRIu64 "\n", tid(), ip, emu_proc.clock);
}

static void on_tb(unsigned vcpu, void *udata)
{
	const struct sys_tb *b = udata;
	uint64_t n = S.started, task = sys_guest_current();
	int was = S.running;

	(void)vcpu;
	S.started = 0;
	if (emu_proc.broken)
		return;
	if (S.pend)
		settle(0);
	if (S.prev && was)
		account(S.prev, n, b->start);
	S.running = task == S.wtask;
	if (was && !S.running) {
		/*
		 * Switched away inside this block (the write of current_task):
		 * the workload stops where the other task's code goes on.
		 */
		if (S.pkt_en && S.prev && n == S.prev->ninsn && in_filter(b->start))
			emit_branch(S.prev, b->start);
		if (S.pkt_en)
			pgd(1, b->start);
		switched(0);
	} else if (S.running) {
		if (!was)
			switched(1);
		if (!S.active && b->start == S.exec_fn)
			start_tracing(b->start);
		else if (was && S.prev)
			branch(S.prev, n, b->start);
		else if (want(b->start))
			pge(b->start);
		counters_at(b->start);
		triggers_at(b->start, was ? S.prev : NULL);
		if (S.pkt_en)
			emu_pt_periodic(&S.pt, b->start, 1);
	}
	S.prev = b;
}

static struct sys_tb *new_tb(struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	struct sys_tb *b = calloc(1, sizeof(*b) + n * sizeof(uint64_t));
	struct qemu_plugin_insn *last;
	struct emu_insn_class c;

	if (!b || !n) {
		free(b);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		b->insn[i] = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i));
	last = qemu_plugin_tb_get_insn(tb, n - 1);
	b->start = b->insn[0];
	b->last = b->insn[n - 1];
	b->next = b->last + qemu_plugin_insn_size(last);
	b->ninsn = (uint32_t)n;
	emu_x86_classify(qemu_plugin_insn_data(last), qemu_plugin_insn_size(last), b->last, &c);
	b->kind = (uint8_t)c.kind;
	b->target = c.target;
	return b;
}

/* A store of a handler's first block: the interrupted RIP is @udata bytes above it. */
static void on_entry_store(unsigned vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
	struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);
	uint64_t off = (uint64_t)(uintptr_t)udata, pa, rip = 0;

	(void)vcpu;
	if (!S.pend)
		return;
	pa = hw ? qemu_plugin_hwaddr_phys_addr(hw) : 0;
	/* Only within the page: the next virtual page of a stack may lie elsewhere. */
	if (pa && (pa & 0xfff) + off + 8 <= 0x1000)
		sys_guest_read_phys(pa + off, &rip, sizeof(rip));
	settle(rip);
}

static void on_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	struct sys_tb *b = new_tb(tb);
	int frame;

	(void)id;
	if (!b) {
		emu_proc.broken = 1;
		return;
	}
	qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb, QEMU_PLUGIN_CB_NO_REGS, b);
	frame = sys_guest_is_entry(b->start);
	for (uint32_t i = 0; frame && i < b->ninsn; i++)
		qemu_plugin_register_vcpu_mem_cb(qemu_plugin_tb_get_insn(tb, i), on_entry_store,
						 QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_W,
						 (void *)(uintptr_t)frame);
	for (uint32_t i = 0; i < b->ninsn; i++)
		qemu_plugin_register_vcpu_insn_exec_inline(qemu_plugin_tb_get_insn(tb, i),
							   QEMU_PLUGIN_INLINE_ADD_U64, &S.started, 1);
}

static void on_end(qemu_plugin_id_t id, void *udata);

/* The reset dropped every callback, the one at exit too. */
static void after_reset(qemu_plugin_id_t id)
{
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans);
	qemu_plugin_register_atexit_cb(id, on_end, NULL);
}

/* The guest's first process, in the workload's task, about to exec it. */
static void on_mark(unsigned vcpu, void *udata)
{
	(void)vcpu;
	(void)udata;
	if (S.wtask || emu_proc.broken)
		return;
	if (sys_guest_learn() < 0) {
		emu_proc.broken = 1;
		return;
	}
	S.wtask = sys_guest_current();
	emu_proc.pid = sys_guest_workload_pid();
	if (!S.wtask || emu_proc.pid <= 0) {
		if (!emu_proc.broken)
			emu_error("cannot find the workload's task in the guest");
		emu_proc.broken = 1;
		return;
	}
	S.exec_fn = sys_guest_sym("perf_event_exec");
	emu_send(EMU_MSG_HELLO, (uint32_t)emu_proc.pid, (uint64_t)emu_proc.pid, NULL, 0);
	qemu_plugin_reset(plugin_id, after_reset);
}

static void on_trans_boot(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	if (qemu_plugin_tb_vaddr(tb) == sys_cfg.mark)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
}

static void on_end(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	if (S.pkt_en)
		pgd(0, 0);
	emu_pt_tnt_flush(&S.pt);
	flush(&S.pt);
	emu_send(EMU_MSG_BYE, (uint32_t)tid(), emu_proc.clock, NULL, 0);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
							       const qemu_info_t *info, int argc,
							       char **argv)
{
	plugin_id = id;
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "fd=", 3))
			emu_proc.sock = atoi(argv[i] + 3);
		else if (!strncmp(argv[i], "cfgfd=", 6))
			emu_proc.cfgfd = atoi(argv[i] + 6);
		else if (!strncmp(argv[i], "shmfd=", 6))
			emu_proc.shmfd = atoi(argv[i] + 6);
	}
	if (!info || info->version.min > EMU_QEMU_PLUGIN_VERSION ||
	    info->version.cur < EMU_QEMU_PLUGIN_VERSION || !info->system_emulation ||
	    strcmp(info->target_name, "x86_64")) {
		emu_error("this plugin needs qemu-system-x86_64 with plugin API version %d",
			  EMU_QEMU_PLUGIN_VERSION);
		return -1;
	}
	if (emu_proc.sock < 0 || emu_proc.cfgfd < 0 || sys_cfg_load(emu_proc.cfgfd) < 0 ||
	    sys_guest_open() < 0)
		return -1;
	/* The shared area: only its trigger flags (the guest's tasks claim no slots). */
	if (emu_shm_map() < 0) {
		emu_error("the shared area from ptrec is not usable");
		return -1;
	}
	snprintf(emu_proc.comm, sizeof(emu_proc.comm), "%s", sys_cfg.comm);
	S.pt.ops = &pt_ops;
	S.pt.cfg = &sys_cfg.pt;
	S.pt.cycles = &emu_proc.clock;
	if (emu_pt_init(&S.pt, S.buf, BUF_CAP) < 0) {
		emu_error("libipt refused to make an encoder");
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans_boot);
	qemu_plugin_register_atexit_cb(id, on_end, NULL);
	return 0;
}

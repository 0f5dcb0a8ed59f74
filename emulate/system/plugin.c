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
 * The kernel's perf hooks in a traced task mark where it creates a task
 * (perf_event_fork(): traced from then on, as with inherited events), is
 * renamed (perf_event_comm()) and exits (perf_event_exit_task()). Per CPU,
 * the traced tasks share the CPU's stream, each writing it while it runs
 * (struct sys_stream); per thread, each has its own.
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
#include <stddef.h>
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

/*
 * A trace stream, as one AUX event's: a task's own (per-thread mode), or a
 * CPU's, which each traced task writes while it runs there (per-CPU mode).
 * Its buffer only ever holds bytes of one task, @tid: a switch-out sends
 * them first (switched()).
 */
struct sys_stream {
	struct emu_pt pt;
	uint64_t aux_off;
	int tid;
	uint8_t buf[BUF_CAP];
};

/*
 * A traced task of the guest: the workload's, and each task it and its
 * descendants create, which inherit its events as perf's recording with
 * inherit gives them (inherit_event() at copy_process()): per thread each
 * has its own trace stream, as each inherited AUX event has; per CPU they
 * write the CPU's, as their per-CPU events share its AUX area.
 */
struct sys_task {
	uint64_t task;   /* its task_struct */
	int pid, tid;    /* its tgid and pid */
	int active;      /* traced: the workload once it exec'd, a descendant from its fork */
	int started;     /* its event was scheduled in: ITRACE_START written */
	int exec_comm;   /* perf_event_exec() ran: the next perf_event_comm() is the exec's
			  * (-1: the workload's, written already) */
	int retime;      /* the exec's COMM went out: timing before the next TIP.PGE */
	int trace_en;    /* not paused */
	int pkt_en;      /* packets flow: active, not paused, in the filter, running */
	struct sys_stream *st; /* its own stream, or its CPU's (per-CPU mode) */
	uint64_t kret[SYS_KRET_DEPTH]; /* return addresses armed by kentry of a kret trigger */
	uint64_t kret_trig[SYS_KRET_DEPTH];
	unsigned nkret;
	/*
	 * The return address of the last call in user [0] and kernel [1]
	 * code (jumps through thunks keep it): what a uretprobe or kretprobe
	 * at the function entered next hijacks. Kept per mode, and across
	 * the interrupts and exceptions taken before the entry (irq[]): the
	 * handlers' own calls must not stand for the interrupted code's.
	 */
	uint64_t call_ret[2];
	struct {
		uint64_t rip;      /* where the interrupted code goes on (0: not known yet) */
		uint64_t call_ret; /* its mode's call_ret then */
	} irq[SYS_IRQ_DEPTH];
	unsigned nirq;
	int irq_rip_pend; /* irq[nirq - 1].rip comes with the handler's first stack store */
	uint64_t insns_u, insns_k; /* its instructions while traced */
	uint64_t next[SYS_MAX_TRIG]; /* counter triggers: the count of its next overflow */
};

static struct {
	struct sys_task *task[SYS_MAX_TASKS];
	unsigned ntasks;
	struct sys_task *run; /* the traced task that ran the last block, or NULL */
	struct sys_stream *cpu; /* per-CPU mode: the stream of the guest's one CPU */
	int cr3_written;      /* a MOV to CR3 ran in the last block */
	uint64_t exec_fn;  /* perf_event_exec() */
	uint64_t comm_fn;  /* perf_event_comm() */
	uint64_t fork_fn;  /* perf_event_fork() */
	uint64_t exit_fn;  /* perf_event_exit_task() */
	uint64_t started;  /* instructions of the current block that began */
	const struct sys_tb *prev;
	/*
	 * An interrupt or exception arrived at handler @pend_ip right after
	 * block @pend (which ran whole) whose last instruction's target is not
	 * known: its packets wait for the handler's first stack store, above
	 * the hardware's frame, which holds the interrupted RIP.
	 */
	const struct sys_tb *pend;
	uint64_t pend_ip;
	uint64_t rep_at; /* a REP string instruction that QEMU runs again per element */
	char *tbuf;
	size_t tlen, tcap;
} S;

/* The task whose records and packets the code writes (emu_proc.pid is its pid). */
static struct sys_task *T;

static void focus(struct sys_task *t)
{
	T = t;
	emu_proc.pid = t->pid;
	/* Per-CPU mode: the CPU's stream is the running task's now (nothing of another's is buffered). */
	t->st->tid = t->tid;
}

static int tid(void)
{
	return T ? T->tid : emu_proc.pid;
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

static struct sys_stream *stream_of(struct emu_pt *p)
{
	return (struct sys_stream *)(void *)((char *)p - offsetof(struct sys_stream, pt));
}

static void flush(struct emu_pt *p)
{
	struct sys_stream *t = stream_of(p);
	size_t n = emu_pt_buffered(p);

	if (n) {
		emu_send(EMU_MSG_AUX, (uint32_t)t->tid, t->aux_off, t->buf, n);
		emu_sb_aux(t->tid, t->aux_off, n);
		t->aux_off += n;
		emu_pt_drained(p);
	}
	if (S.tlen) {
		emu_send(EMU_MSG_TRUTH, (uint32_t)tid(), 0, S.tbuf, S.tlen);
		S.tlen = 0;
	}
}

static uint64_t base(struct emu_pt *p)
{
	return stream_of(p)->aux_off;
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
	if (!T->st->pt.psb_done)
		emu_pt_psb_plus(&T->st->pt, 0, 0);
	else if (T->retime)
		emu_pt_timing(&T->st->pt);
	T->retime = 0;
	emu_pt_mode_exec(&T->st->pt);
	emu_pt_ip(&T->st->pt, ppt_tip_pge, ip, 0);
	T->pkt_en = 1;
}

/* Packets stop; @fup: the IP where execution stopped, if not by a branch. */
static void pgd(int with_fup, uint64_t fup)
{
	if (with_fup)
		emu_pt_ip(&T->st->pt, ppt_fup, fup, 0);
	emu_pt_ip(&T->st->pt, ppt_tip_pgd, 0, 1);
	T->pkt_en = 0;
}

static int want(uint64_t ip)
{
	return T && S.run == T && T->active && T->trace_en && in_filter(ip);
}

/* ---- triggers ---------------------------------------------------------- */

static void set_trace(int on, uint64_t ip)
{
	if (T->trace_en == on)
		return;
	if (!on && T->pkt_en)
		pgd(1, ip);
	T->trace_en = on;
	truth("%c %d %" PRIx64 " %" PRIu64 "\n", on ? 'R' : 'P', tid(), ip, emu_proc.clock);
	if (on) {
		if (T->st->pt.psb_done)
			emu_pt_timing(&T->st->pt);
		emu_pt_rs_reset(&T->st->pt);
		if (want(ip))
			pge(ip);
	}
}

static void fire(const struct sys_trig *t, uint64_t ip)
{
	long ti = t - sys_cfg.trig;

	if (!T->active)
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
		const struct sys_trig *t = &sys_cfg.trig[j];
		uint64_t n = (t->u ? T->insns_u : 0) + (t->k ? T->insns_k : 0);

		if (t->kind != SYS_TK_INSNS || n < T->next[j])
			continue;
		/* One overflow however many periods passed; the count goes on from it. */
		while (T->next[j] <= n)
			T->next[j] += t->period;
		fire(t, ip);
	}
}

/*
 * An interrupt or exception stopped the code of block @p, which goes on
 * at @rip when the handler returns (@known 0: @rip is the fall-through,
 * until the handler's first stack store tells). That code's last call is
 * kept for the return: the handler's calls are not the ones a probe at
 * the function entered next, after the return, must hijack.
 */
static void irq_entered(const struct sys_tb *p, uint64_t rip, int known)
{
	if (T->nirq == SYS_IRQ_DEPTH) {
		memmove(T->irq, T->irq + 1, (SYS_IRQ_DEPTH - 1) * sizeof(T->irq[0]));
		T->nirq--;
	}
	T->irq[T->nirq].rip = rip;
	T->irq[T->nirq++].call_ret = T->call_ret[p->start >= KERNEL_HALF];
	T->irq_rip_pend = !known;
}

/* A far return (IRET, SYSRET) arrived at @ip: back in interrupted code, its last call is its own again. */
static void irq_returned(uint64_t ip)
{
	for (unsigned i = T->nirq; i-- > 0;)
		if (T->irq[i].rip == ip) {
			T->call_ret[ip >= KERNEL_HALF] = T->irq[i].call_ret;
			T->nirq = i;
			return;
		}
}

/*
 * The workload arrives at block @b, coming from @p (NULL: not by a branch).
 * A return armed by a kret or uret trigger fires where a RET arrives at
 * its address, or an IRET: an interrupt came between the RET and its
 * target (QEMU takes interrupts between blocks), and the handler returns
 * there.
 */
static void triggers_at(const struct sys_tb *b, const struct sys_tb *p)
{
	uint64_t ip = b->start, call_ret = T->call_ret[ip >= KERNEL_HALF];
	int ret = p && (p->kind == EMU_BR_RET || p->kind == EMU_BR_FAR);

	if (p && p->kind == EMU_BR_FAR) {
		irq_returned(ip);
		call_ret = T->call_ret[ip >= KERNEL_HALF];
	}
	for (unsigned i = T->nkret; ret && i-- > 0;) {
		if (T->kret[i] != ip)
			continue;
		for (int j = 0; j < sys_cfg.ntrig; j++)
			if (T->kret_trig[i] >> j & 1)
				fire(&sys_cfg.trig[j], ip);
		T->nkret = i;
		break;
	}
	for (int j = 0; j < sys_cfg.ntrig; j++) {
		const struct sys_trig *t = &sys_cfg.trig[j];

		if (t->kind == SYS_TK_INSNS || (t->user ? !(b->uprobes >> j & 1) : t->addr != ip))
			continue;
		if (t->kind == SYS_TK_KENTRY) {
			fire(t, ip);
		} else if (p && call_ret) {
			if (T->nkret && T->kret[T->nkret - 1] == call_ret) {
				T->kret_trig[T->nkret - 1] |= 1ull << j;
			} else if (T->nkret < SYS_KRET_DEPTH) {
				T->kret[T->nkret] = call_ret;
				T->kret_trig[T->nkret++] = 1ull << j;
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
		emu_pt_tnt_bit(&T->st->pt, ip == p->target && ip != p->next);
		break;
	case EMU_BR_CALL:
		if (p->target != p->next)
			emu_pt_rs_push(&T->st->pt, p->next);
		break;
	case EMU_BR_ICALL:
		emu_pt_rs_push(&T->st->pt, p->next);
		/* fall through */
	case EMU_BR_IJMP:
	case EMU_BR_FAR:
	case EMU_BR_SYSCALL:
		if (in_filter(ip))
			emu_pt_ip(&T->st->pt, ppt_tip, ip, 0);
		break;
	case EMU_BR_RET:
		if (in_filter(ip))
			emu_pt_ret(&T->st->pt, ip);
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
		emu_pt_ip(&T->st->pt, ppt_fup, fup, 0);
		emu_pt_ip(&T->st->pt, ppt_tip, ip, 0);
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
		if (T->pkt_en)
			async_to(rip, S.pend_ip);
		else if (want(S.pend_ip))
			pge(S.pend_ip);
		return;
	}
	account_done(p, p->ninsn);
	if (T->pkt_en && in_filter(rip))
		emit_branch(p, rip);
	else if (T->pkt_en)
		pgd(0, 0);
	if (T->pkt_en)
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
		T->call_ret[p->start >= KERNEL_HALF] = p->next;
	if (short_block(p, n, ip)) {
		if (!T->pkt_en && want(ip))
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
	if (async)
		irq_entered(p, known ? fup : p->next, known);
	if (!T->pkt_en) {
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
			emu_pt_rs_push(&T->st->pt, p->next);
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
	if (T->active && p->start >= KERNEL_HALF)
		T->insns_k += done;
	else if (T->active)
		T->insns_u += done;
	if (T->pkt_en || (T->active && T->trace_en && in_filter(p->start) && S.run == T))
		truth("B %d %" PRIx64 " %" PRIx64 " %" PRIu64 "\n", tid(), p->start,
		      p->insn[done - 1], done);
	if (T->pkt_en)
		emu_pt_retired(&T->st->pt);
}

static void account(const struct sys_tb *p, uint64_t n, uint64_t ip)
{
	/* Settled with the branch once the interrupted RIP is known (settle()). */
	if (n == p->ninsn && T->pkt_en && unseen_target(p) && sys_guest_is_entry(ip))
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
	size_t n = emu_pt_buffered(&T->st->pt);
	struct emu_sb s;

	if (!T->active)
		return;
	if (!in && n) {
		emu_send(EMU_MSG_AUX, (uint32_t)tid(), T->st->aux_off, T->st->buf, n);
		T->st->aux_off += n;
		emu_pt_drained(&T->st->pt);
	}
	if (in) {
		/* Its page tables are loaded (switch_mm_irqs_off() ran before switch_to()). */
		T->st->pt.cr3 = sys_guest_task_cr3(T->task);
		/*
		 * Per-CPU mode: the CPU's trace was off while other tasks ran,
		 * and the sched-in's pt_event_start() sets TraceEn again: the
		 * SDM's table of packets on a WRMSR that sets TraceEn (with
		 * PacketByteCnt > 0) gives TSC, TMA, CBR before the TIP.PGE.
		 */
		if (sys_cfg.per_cpu)
			T->retime = 1;
	}
	emu_sb_begin(&s, PERF_RECORD_SWITCH, in ? 0 : PERF_RECORD_MISC_SWITCH_OUT);
	emu_sb_end(&s, tid());
	if (in)
		truth("S %d in %" PRIu64 " %" PRIx64 "\n", tid(), emu_proc.clock, T->st->pt.cr3);
	else
		truth("S %d out %" PRIu64 "\n", tid(), emu_proc.clock);
}

/*
 * The workload's exec enables its events (perf_event_exec() ->
 * perf_event_enable_on_exec()). Its COMM comes first, dated at the exec as
 * the mappings of the program are (read from the guest at the end): the
 * decoder knows the program from the start of its trace.
 */
static void start_tracing(uint64_t ip)
{
	T->active = 1;
	T->started = 1;
	T->exec_comm = -1;
	emu_sb_comm(tid(), 1);
	emu_sb_itrace_start(tid());
	T->st->pt.cr3 = sys_guest_task_cr3(T->task); /* the program's, exec_mmap() loaded them */
	emu_pt_psb_plus(&T->st->pt, 0, 0);
	T->trace_en = 0;
	set_trace(!sys_cfg.start_paused, ip);
	if (sys_cfg.start_paused)
		truth("P %d %" PRIx64 " %" PRIu64 "\n", tid(), ip, emu_proc.clock);
}

/* ---- the guest's tasks ----------------------------------------------------- */

static struct sys_task *find_task(uint64_t task)
{
	for (unsigned i = 0; task && i < S.ntasks; i++)
		if (S.task[i]->task == task)
			return S.task[i];
	return NULL;
}

static int known_task(uint64_t task)
{
	return find_task(task) != NULL;
}

/* A new trace stream; NULL if none can be made. */
static struct sys_stream *new_stream(int tid_)
{
	struct sys_stream *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->tid = tid_;
	st->pt.ops = &pt_ops;
	st->pt.cfg = &sys_cfg.pt;
	st->pt.cycles = &emu_proc.clock;
	st->pt.pip = sys_cfg.k; /* PSB+ holds PIP when ring 0 is traced (OS=1) */
	if (emu_pt_init(&st->pt, st->buf, BUF_CAP) < 0) {
		free(st);
		return NULL;
	}
	return st;
}

static void free_stream(struct sys_stream *st)
{
	if (!st)
		return;
	emu_pt_fini(&st->pt);
	free(st);
}

/* A new traced task (@active: from now on); NULL when there is no room. */
static struct sys_task *add_task(uint64_t task, int pid, int tid, int active)
{
	struct sys_task *t;

	if (S.ntasks >= SYS_MAX_TASKS || !(t = calloc(1, sizeof(*t))))
		return NULL;
	t->task = task;
	t->pid = pid;
	t->tid = tid;
	t->active = active;
	t->trace_en = !sys_cfg.start_paused;
	for (int j = 0; j < sys_cfg.ntrig; j++)
		t->next[j] = sys_cfg.trig[j].period;
	t->st = sys_cfg.per_cpu ? S.cpu : new_stream(tid);
	if (!t->st) {
		free(t);
		return NULL;
	}
	S.task[S.ntasks++] = t;
	return t;
}

static void drop_task(struct sys_task *t)
{
	for (unsigned i = 0; i < S.ntasks; i++)
		if (S.task[i] == t) {
			S.task[i] = S.task[--S.ntasks];
			break;
		}
	if (S.run == t)
		S.run = NULL;
	if (T == t)
		T = NULL;
	if (t->st != S.cpu)
		free_stream(t->st);
	free(t);
}

/*
 * FORK or EXIT of @pid/@tid, written in the context of the current task T,
 * as perf_event_task_output() (kernel/events/core.c) writes them: a FORK
 * names the creating task (current) as ppid/ptid, an EXIT the real parent's
 * pid for both.
 */
static void task_record(uint32_t type, int pid, int ppid, int tid_, int ptid)
{
	struct emu_sb s;

	emu_sb_begin(&s, type, 0);
	emu_sb_u32(&s, (uint32_t)pid);
	emu_sb_u32(&s, (uint32_t)ppid);
	emu_sb_u32(&s, (uint32_t)tid_);
	emu_sb_u32(&s, (uint32_t)ptid);
	emu_sb_u64(&s, emu_now());
	emu_sb_end(&s, tid());
}

/*
 * perf_event_fork() in the traced task T, at the end of copy_process(): the
 * new task is on the lists already. The child inherits T's events
 * (perf_event_init_task(), start-paused as the parent's were made) and gets
 * a FORK record (perf_event_task()).
 */
static void task_forked(void)
{
	uint64_t child = sys_guest_new_task(T->task, known_task);
	struct sys_task *c;
	int pid, ctid;

	if (!child)
		return;
	pid = sys_guest_task_u32(child, SYS_TASK_TGID);
	ctid = sys_guest_task_u32(child, SYS_TASK_PID);
	c = add_task(child, pid, ctid, 1);
	if (!c) {
		emu_error("too many tasks in the workload (at most %d)", SYS_MAX_TASKS);
		emu_proc.broken = 1;
		return;
	}
	task_record(PERF_RECORD_FORK, pid, T->pid, ctid, T->tid);
	truth("F %d %d %d %d %" PRIu64 "\n", pid, T->pid, ctid, T->tid, emu_proc.clock);
}

/*
 * perf_event_comm() from __set_task_comm(): the task's name is in place.
 * After perf_event_exec() it is the exec's COMM (perf_event_comm(task,
 * true)), which perf_event_comm_event() writes with
 * PERF_RECORD_MISC_COMM_EXEC.
 */
static void task_comm(void)
{
	char name[16];

	if (!T->active || T->exec_comm < 0) {
		T->exec_comm = 0;
		return;
	}
	sys_guest_task_comm(T->task, name);
	snprintf(emu_proc.comm, sizeof(emu_proc.comm), "%s", name);
	emu_sb_comm(tid(), T->exec_comm);
	/*
	 * The decoder must know that the COMM and the mappings of the exec
	 * (dated at it) are past when the new program's code comes: on
	 * hardware, MTC packets go on while packets are filtered out
	 * (TriggerEn); this encoder sends MTC only while packets flow, so a
	 * TSC stands for them at the next TIP.PGE.
	 */
	T->retime = T->exec_comm;
	T->exec_comm = 0;
}

/*
 * perf_event_exit_task() in do_exit(): the task's context goes
 * (perf_event_exit_task_context(): its events are scheduled out, the AUX
 * event's trace ends there, then the EXIT record, which names the real
 * parent's pid as ppid and ptid). The task runs on untraced.
 */
static void task_exit(uint64_t ip)
{
	size_t n;
	uint64_t parent = sys_guest_task_ptr(T->task, SYS_TASK_REAL_PARENT);
	int ppid = parent ? sys_guest_task_u32(parent, SYS_TASK_TGID) : 0;

	if (T->pkt_en)
		pgd(1, ip);
	emu_pt_tnt_flush(&T->st->pt);
	n = emu_pt_buffered(&T->st->pt);
	if (n) {
		/* Its AUX record is the model's, at the EXIT (the piece ends). */
		emu_send(EMU_MSG_AUX, (uint32_t)tid(), T->st->aux_off, T->st->buf, n);
		T->st->aux_off += n;
		emu_pt_drained(&T->st->pt);
	}
	if (T->active)
		task_record(PERF_RECORD_EXIT, T->pid, ppid, T->tid, ppid);
	truth("X %d %" PRIu64 "\n", tid(), emu_proc.clock);
	if (S.tlen) {
		emu_send(EMU_MSG_TRUTH, (uint32_t)tid(), 0, S.tbuf, S.tlen);
		S.tlen = 0;
	}
	drop_task(T);
}

/* What the kernel's perf hooks do for the traced task T, entered at @ip. */
static void perf_hooks(uint64_t ip)
{
	if (!ip)
		return;
	if (ip == S.exec_fn && T->active)
		T->exec_comm = 1;
	else if (ip == S.comm_fn)
		task_comm();
	else if (ip == S.fork_fn && T->active)
		task_forked();
	else if (ip == S.exit_fn)
		task_exit(ip);
}

/* The traced task @t runs for the first time: its inherited event is scheduled in. */
static void first_run(uint64_t ip)
{
	T->started = 1;
	emu_sb_itrace_start(tid());
	/*
	 * Its event's first start clears IA32_RTIT_STATUS, the PSB byte count
	 * with it (pt_config(), arch/x86/events/intel/pt.c): per the SDM, the
	 * TraceEn that follows writes PSB+. A stream of its own starts with
	 * one in any case.
	 */
	if (sys_cfg.per_cpu)
		T->st->pt.psb_done = 0;
	if (T->trace_en)
		truth("R %d %" PRIx64 " %" PRIu64 "\n", tid(), ip, emu_proc.clock);
}

/*
 * The block @p of the running task T ended with a MOV to CR3 (QEMU ends a
 * block there), and execution goes on at @ip. When it loaded T's own new
 * page tables (exec_mmap() -> activate_mm(): the exec of a traced task),
 * a PIP with the new CR3: the SDM's table of packets for MOV to CR3 gives
 * one whenever TraceEn and OS=1, whether packets flow or not. A MOV to CR3
 * of a context switch loads the next task's tables while T is current: its
 * event was scheduled out before (perf_event_task_sched_out() from
 * prepare_task_switch(), before switch_mm_irqs_off()): no PIP.
 */
static void cr3_loaded(const struct sys_tb *p, uint64_t ip)
{
	uint64_t cr3 = sys_guest_task_cr3(T->task);

	if (cr3 && cr3 != T->st->pt.cr3) {
		T->st->pt.cr3 = cr3;
		if (sys_cfg.k && sys_cfg.pt.branch && T->active && T->trace_en && T->st->pt.psb_done) {
			emu_pt_pip(&T->st->pt, cr3);
			truth("C %d %" PRIx64 " %" PRIu64 "\n", tid(), cr3, emu_proc.clock);
		}
	}
	branch(p, p->ninsn, ip);
}

/* The traced task T leaves the CPU; the block @b of another task runs (@n: of the last one's). */
static void switch_out(const struct sys_tb *b, uint64_t n)
{
	/*
	 * Switched away inside the last block (the write of current_task):
	 * the task stops where the other task's code goes on.
	 */
	if (T->pkt_en && S.prev && n == S.prev->ninsn && in_filter(b->start))
		emit_branch(S.prev, b->start);
	if (T->pkt_en)
		pgd(1, b->start);
	switched(0);
}

static void on_tb(unsigned vcpu, void *udata)
{
	const struct sys_tb *b = udata;
	uint64_t n = S.started, task = sys_guest_current();
	struct sys_task *was = S.run, *now;

	(void)vcpu;
	S.started = 0;
	if (emu_proc.broken)
		return;
	if (was)
		focus(was);
	if (was)
		was->irq_rip_pend = 0; /* the handler's first block made no store: the fall-through stays */
	if (S.pend)
		settle(0);
	if (S.prev && was)
		account(S.prev, n, b->start);
	now = was && was->task == task ? was : find_task(task);
	if (was && now != was)
		switch_out(b, n);
	S.run = now;
	if (now) {
		int exec = !now->active && b->start == S.exec_fn;

		focus(now);
		if (now != was)
			switched(1);
		if (now != was && now->active && !now->started)
			first_run(b->start);
		if (exec)
			start_tracing(b->start);
		else if (was == now && S.prev && S.prev->cr3w && n == S.prev->ninsn)
			cr3_loaded(S.prev, b->start);
		else if (was == now && S.prev)
			branch(S.prev, n, b->start);
		else if (want(b->start))
			pge(b->start);
		counters_at(b->start);
		triggers_at(b, was == now ? S.prev : NULL);
		if (T->pkt_en)
			emu_pt_periodic(&T->st->pt, b->start, 1);
		if (!exec)
			perf_hooks(b->start);
	}
	S.prev = b;
}

/*
 * The uprobes at the start of a block of user code: those whose page cache
 * byte (sys_trig.pa) is the physical address of its first instruction, in
 * whatever process and at whatever virtual address that page is mapped (a
 * translated block belongs to one physical page: QEMU looks blocks up by it).
 */
static uint64_t block_uprobes(struct qemu_plugin_tb *tb, uint64_t start)
{
	uint64_t pa, m = 0;

	if (start >= KERNEL_HALF)
		return 0;
	pa = sys_guest_phys_of_host(qemu_plugin_insn_haddr(qemu_plugin_tb_get_insn(tb, 0)));
	for (int j = 0; pa && j < sys_cfg.ntrig; j++)
		if (sys_cfg.trig[j].user && sys_cfg.trig[j].pa == pa)
			m |= 1ull << j;
	return m;
}

/* Whether the instruction @d (@n bytes) is MOV to CR3: [REX] 0F 22 /r with ModRM.reg 3. */
static int mov_to_cr3(const uint8_t *d, size_t n)
{
	size_t i = 0;

	while (i < n && (d[i] & 0xf0) == 0x40)
		i++;
	return i + 2 < n && d[i] == 0x0f && d[i + 1] == 0x22 && (d[i + 2] >> 3 & 7) == 3;
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
	b->uprobes = block_uprobes(tb, b->start);
	b->cr3w = mov_to_cr3(qemu_plugin_insn_data(last), qemu_plugin_insn_size(last));
	return b;
}

/* A store of a handler's first block: the interrupted RIP is @udata bytes above it. */
static void on_entry_store(unsigned vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
	struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);
	uint64_t off = (uint64_t)(uintptr_t)udata, pa, rip = 0;

	(void)vcpu;
	if (!S.pend && !(S.run && S.run->irq_rip_pend))
		return;
	pa = hw ? qemu_plugin_hwaddr_phys_addr(hw) : 0;
	/* Only within the page: the next virtual page of a stack may lie elsewhere. */
	if (pa && (pa & 0xfff) + off + 8 <= 0x1000)
		sys_guest_read_phys(pa + off, &rip, sizeof(rip));
	if (S.run && S.run->irq_rip_pend) {
		S.run->irq_rip_pend = 0;
		if (rip && S.run->nirq)
			S.run->irq[S.run->nirq - 1].rip = rip;
	}
	if (S.pend)
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
	uint64_t task;
	int pid;

	(void)vcpu;
	(void)udata;
	if (S.ntasks || emu_proc.broken)
		return;
	if (sys_guest_learn() < 0) {
		emu_proc.broken = 1;
		return;
	}
	task = sys_guest_current();
	pid = sys_guest_workload_pid();
	if (sys_cfg.per_cpu && !S.cpu && !(S.cpu = new_stream(pid))) {
		emu_proc.broken = 1;
		return;
	}
	if (!task || pid <= 0 || !add_task(task, pid, pid, 0)) {
		if (!emu_proc.broken)
			emu_error("cannot find the workload's task in the guest");
		emu_proc.broken = 1;
		return;
	}
	emu_proc.pid = pid;
	S.exec_fn = sys_guest_sym("perf_event_exec");
	S.comm_fn = sys_guest_sym("perf_event_comm");
	/* Without the kernel's task layout, only the workload's own task is traced. */
	if (sys_guest_has_layout()) {
		S.fork_fn = sys_guest_sym("perf_event_fork");
		S.exit_fn = sys_guest_sym("perf_event_exit_task");
	}
	emu_send(EMU_MSG_HELLO, (uint32_t)pid, (uint64_t)pid, NULL, 0);
	qemu_plugin_reset(plugin_id, after_reset);
}

static void on_trans_boot(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	if (qemu_plugin_tb_vaddr(tb) == sys_cfg.mark)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_mark, QEMU_PLUGIN_CB_NO_REGS, NULL);
}

/* The guest powers off: the trace of each task still traced goes out. */
static void on_end(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	for (unsigned i = 0; i < S.ntasks; i++) {
		/* Per-CPU mode: only the running task has bytes in the CPU's stream. */
		if (sys_cfg.per_cpu && S.task[i] != S.run)
			continue;
		focus(S.task[i]);
		if (T->pkt_en)
			pgd(0, 0);
		emu_pt_tnt_flush(&T->st->pt);
		flush(&T->st->pt);
	}
	if (S.tlen) {
		emu_send(EMU_MSG_TRUTH, (uint32_t)tid(), 0, S.tbuf, S.tlen);
		S.tlen = 0;
	}
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
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans_boot);
	qemu_plugin_register_atexit_cb(id, on_end, NULL);
	return 0;
}

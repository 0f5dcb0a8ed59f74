// SPDX-License-Identifier: MIT
/*
 * The software tracer: a QEMU user-mode TCG plugin that follows the guest's
 * control flow and writes it as Intel PT (user-only tracing: CPL3, OS=0,
 * USR=1) with libipt's packet encoder, plus perf-format sideband and an
 * optional ground truth. man/ptrec-emulate.7 describes what it emits.
 *
 * This file is the Intel PT half: instruction classes, the packets, and
 * what a branch turns into. The rest (threads, triggers, sideband, exec) is
 * the core both tracers share, emulate/common/tracer.h, which calls the
 * hooks at the end of this file.
 *
 * A TB whose successor is not one its last instruction can reach was left
 * asynchronously (a signal arrived between TBs): that shows as an interrupt
 * would on hardware, FUP + TIP.PGD, then TIP.PGE where execution resumes.
 */
#include <elf.h>
#include <intel-pt.h>
#include <string.h>
#include <sys/syscall.h>

#include "common/maps.h"
#include "common/tracer.h"
#include "pt_enc.h"
#include "x86.h"

/* The intel_pt config terms (emu_proto.h). */
static struct emu_pt_cfg cfg = { .branch = 1 };

struct x86_thr {
	struct emu_thr c;
	struct emu_pt pt;
};

static struct x86_thr *x86_of(struct emu_thr *t)
{
	return emu_container_of(t, struct x86_thr, c);
}

static struct x86_thr *x86_of_pt(struct emu_pt *p)
{
	return emu_container_of(p, struct x86_thr, pt);
}

static void pt_flush(struct emu_pt *p)
{
	emu_stream_flush(&x86_of_pt(p)->c);
}

static uint64_t pt_base(struct emu_pt *p)
{
	return x86_of_pt(p)->c.aux_off;
}

static uint64_t pt_now(struct emu_pt *p)
{
	(void)p;
	return emu_now();
}

static void pt_failed(struct emu_pt *p)
{
	(void)p;
	emu_proc.broken = 1;
}

/* What the encoder wrote and holds goes to the thread's shared slot too (a crash keeps it). */
static void pt_wrote(struct emu_pt *p, size_t n)
{
	emu_stream_wrote(&x86_of_pt(p)->c, n);
}

static void pt_held(struct emu_pt *p, uint64_t tnt, unsigned ntnt)
{
	emu_stream_held(&x86_of_pt(p)->c, tnt, ntnt);
}

static const struct emu_pt_ops pt_ops = {
	.flush = pt_flush,
	.base = pt_base,
	.now = pt_now,
	.failed = pt_failed,
	.wrote = pt_wrote,
	.held = pt_held,
	.flush_at = EMU_ENC_FLUSH,
};

/* ---- the core's hooks -------------------------------------------------- */

static void x86_cfg_key(const char *key, unsigned long long v)
{
	if (!strcmp(key, "tsc"))
		cfg.tsc = !!v;
	else if (!strcmp(key, "mtc"))
		cfg.mtc = !!v;
	else if (!strcmp(key, "cyc"))
		cfg.cyc = !!v;
	else if (!strcmp(key, "noretcomp"))
		cfg.noretcomp = !!v;
	else if (!strcmp(key, "branch"))
		cfg.branch = !!v;
	else if (!strcmp(key, "mtc_period"))
		cfg.mtc_period = (unsigned)(v & 15);
	else if (!strcmp(key, "cyc_thresh"))
		cfg.cyc_thresh = (unsigned)(v & 15);
	else if (!strcmp(key, "psb_period"))
		cfg.psb_period = (unsigned)(v & 15);
}

static int x86_thr_init(struct emu_thr *t)
{
	struct x86_thr *x = x86_of(t);

	x->pt.ops = &pt_ops;
	x->pt.cfg = &cfg;
	x->pt.cycles = &t->insns;
	return emu_pt_init(&x->pt, t->buf, EMU_ENC_CAP);
}

static void x86_thr_fini(struct emu_thr *t)
{
	emu_pt_fini(&x86_of(t)->pt);
}

static void x86_stream_init(struct emu_thr *t)
{
	emu_pt_reset(&x86_of(t)->pt);
}

static size_t x86_buffered(struct emu_thr *t)
{
	return emu_pt_buffered(&x86_of(t)->pt);
}

static void x86_drained(struct emu_thr *t)
{
	emu_pt_drained(&x86_of(t)->pt);
}

static void x86_flush_held(struct emu_thr *t)
{
	emu_pt_tnt_flush(&x86_of(t)->pt);
}

static void x86_stream_start(struct emu_thr *t)
{
	emu_pt_psb_plus(&x86_of(t)->pt, 0, 0);
}

static void x86_trace_toggled(struct emu_thr *t, int on)
{
	struct emu_pt *p = &x86_of(t)->pt;

	if (!on)
		return;
	if (!p->psb_done)
		emu_pt_psb_plus(p, 0, 0);
	else
		emu_pt_timing(p);
	/* Code ran untraced: the decoder cannot know its calls. */
	emu_pt_rs_reset(p);
}

/*
 * FilterEn (SDM "IP Filtering"): with address filters it is evaluated where
 * a taken branch or an event lands, not on sequential flow (t->filt_out: 0).
 */
static int x86_to_user(struct emu_thr *t, uint64_t ip)
{
	struct x86_thr *x = x86_of(t);
	struct emu_pt *p = &x->pt;

	if (!cfg.branch)
		return 0;
	if (!p->psb_done)
		emu_pt_psb_plus(p, 0, 0);
	t->filt_out = emu_filtering() && !emu_filter_in(ip);
	if (t->filt_out)
		return 2; /* user code runs traced, but outside the filters: no packets */
	emu_pt_mode_exec(p);
	emu_pt_ip(p, ppt_tip_pge, ip, 0);
	return 1;
}

/*
 * A SYSCALL is a far branch into CPL0, which user-only tracing does not
 * see: TIP.PGD alone. Anything else stops user code at @ip without a branch
 * of its own: FUP first.
 */
static void x86_to_kernel(struct emu_thr *t, uint64_t ip, enum emu_entry why)
{
	struct x86_thr *x = x86_of(t);
	struct emu_pt *p = &x->pt;

	if (t->filt_out) {
		emu_set_filtered(t, 0); /* PacketEn was 0: nothing to end */
		return;
	}
	if (why != EMU_ENTRY_SYSCALL)
		emu_pt_ip(p, ppt_fup, ip, 0);
	emu_pt_ip(p, ppt_tip_pgd, 0, 1);
}

/*
 * More instructions retired. An MTC for a crystal tick that passed among
 * them goes out now, before the packets of the branch that ends them.
 */
static void x86_retired(struct emu_thr *t)
{
	if (t->trace_en)
		emu_pt_retired(&x86_of(t)->pt);
}

static int x86_classify(struct qemu_plugin_tb *tb, size_t n, struct emu_tb *b)
{
	struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, n - 1);
	struct emu_insn_class c;

	emu_x86_classify(qemu_plugin_insn_data(last), qemu_plugin_insn_size(last), b->last, &c);
	b->kind = (uint8_t)c.kind;
	b->target = c.target;
	return 0;
}

/*
 * A taken branch of the TB's last instruction lands at @next with address
 * filters set: returns 1 if FilterEn changes there. Leaving the filters is
 * a TIP.PGD with the target, or with the IP suppressed after a conditional
 * branch (the decoder knows its target), instead of the branch's packet;
 * entering them a TIP.PGE at the target (MODE.Exec first), with no
 * return compressed across the gap.
 */
static int filter_branch(struct emu_thr *t, uint64_t next, int cond)
{
	struct x86_thr *x = x86_of(t);
	int in;

	if (!emu_filtering() || !t->pkt_en)
		return 0;
	in = emu_filter_in(next);
	if (!t->filt_out && !in) {
		emu_pt_ip(&x->pt, ppt_tip_pgd, next, cond);
		emu_set_filtered(t, 1);
		return 1;
	}
	if (t->filt_out && in) {
		emu_pt_rs_reset(&x->pt);
		emu_pt_mode_exec(&x->pt);
		emu_pt_ip(&x->pt, ppt_tip_pge, next, 0);
		emu_set_filtered(t, 0);
		return 1;
	}
	return 0;
}

/*
 * The packets of the TB's last instruction: a TNT bit for a conditional
 * branch or a compressed return, a TIP for an indirect one.
 */
static int x86_resolve(struct emu_thr *t, uint64_t next, uint64_t *expect,
		       uint64_t *uret_fired)
{
	struct emu_pt *x = &x86_of(t)->pt;
	const struct emu_tb *p = t->cur;
	int r = EMU_EXPECTED, pe;

	if (next == p->last && p->kind != EMU_BR_REPSTR && t->user && t->cur_done < p->ninsn &&
	    !(p->target == next && (p->kind == EMU_BR_JMP || p->kind == EMU_BR_COND ||
				    p->kind == EMU_BR_CALL))) {
		/*
		 * QEMU ends a TB before an instruction that crosses into the
		 * next page, yet the plugin still lists that (truncated)
		 * instruction; the next TB starts with it. It did not run here.
		 */
		emu_account(t, t->cur_done, p->ninsn - 1, t->cur_start, p->last);
		t->cur = NULL;
		return EMU_ARRIVED;
	}
	emu_finish_tb(t);
	if (p->kind == EMU_BR_REPSTR && next == p->last && t->user)
		return EMU_REPEATED;
	t->cur = NULL;
	if (!t->user) {
		emu_return_to_user(t, next);
		return EMU_ARRIVED;
	}
	/* Packets flow: PacketEn, FilterEn included. */
	pe = t->pkt_en && !t->filt_out;
	switch (p->kind) {
	case EMU_BR_NONE:
	case EMU_BR_REPSTR:
		*expect = p->next;
		break;
	case EMU_BR_COND:
		if (next == p->target && next != p->next && filter_branch(t, next, 1)) {
			r = EMU_ARRIVED;
		} else if (next == p->target || next == p->next) {
			if (pe)
				emu_pt_tnt_bit(x, next == p->target);
			r = EMU_ARRIVED;
		} else {
			if (pe)
				emu_pt_tnt_bit(x, 0);
			*expect = p->next;
		}
		break;
	case EMU_BR_JMP:
		if (next == p->target)
			filter_branch(t, next, 0);
		*expect = p->target;
		break;
	case EMU_BR_CALL:
		/* libipt does not log a call to the next instruction (PIC idiom). */
		if (pe && p->target != p->next)
			emu_pt_rs_push(x, p->next);
		emu_shadow_push(t, p->next);
		if (next == p->target)
			filter_branch(t, next, 0);
		*expect = p->target;
		break;
	case EMU_BR_ICALL:
		if (pe)
			emu_pt_rs_push(x, p->next);
		emu_shadow_push(t, p->next);
		/* fall through */
	case EMU_BR_IJMP:
	case EMU_BR_FAR:
		if (!filter_branch(t, next, 0) && pe)
			emu_pt_ip(x, ppt_tip, next, 0);
		r = EMU_ARRIVED;
		break;
	case EMU_BR_RET:
		*uret_fired = emu_shadow_ret(t, next);
		if (!filter_branch(t, next, 0) && pe)
			emu_pt_ret(x, next);
		r = EMU_ARRIVED;
		break;
	case EMU_BR_SYSCALL:
		/* The syscall callback did not see it (e.g. a vsyscall). */
		emu_enter_kernel(t, next, EMU_ENTRY_SYSCALL);
		emu_return_to_user(t, next);
		r = EMU_ARRIVED;
		break;
	}
	return r;
}

static void x86_periodic(struct emu_thr *t, uint64_t ip)
{
	if (t->trace_en)
		emu_pt_periodic(&x86_of(t)->pt, ip, t->pkt_en && !t->filt_out);
}

/*
 * The calls that may wait (tracer.c's may_wait()); epoll_pwait2 441 and
 * futex_waitv 449 by number, which older headers lack.
 */
static const int64_t x86_waits[] = {
	SYS_poll, SYS_ppoll, SYS_select, SYS_pselect6, SYS_epoll_wait, SYS_epoll_pwait, 441,
	SYS_nanosleep, SYS_clock_nanosleep, SYS_wait4, SYS_waitid, SYS_pause,
	SYS_rt_sigsuspend, SYS_rt_sigtimedwait, SYS_accept, SYS_accept4, SYS_msgrcv,
	SYS_semop, SYS_semtimedop, 449, -1
};
static const int64_t x86_reads[] = {
	SYS_read, SYS_readv, SYS_recvfrom, SYS_recvmsg, SYS_recvmmsg, -1
};

const struct emu_arch emu_arch = {
	.target = "x86_64",
	.name = "software tracer",
	.elf_machine = EM_X86_64,
	.sys = {
		.exit = SYS_exit, .exit_group = SYS_exit_group,
		.execve = SYS_execve, .execveat = SYS_execveat,
		.mmap = SYS_mmap, .prctl = SYS_prctl,
		.clone = SYS_clone, .clone3 = SYS_clone3,
		.fork = SYS_fork, .vfork = SYS_vfork,
		.wait4 = SYS_wait4, .waitid = SYS_waitid,
		.waits = x86_waits, .reads = x86_reads, .futex = SYS_futex,
	},
	.thr_size = sizeof(struct x86_thr),
	.tb_size = sizeof(struct emu_tb),
	.cfg_key = x86_cfg_key,
	.thr_init = x86_thr_init,
	.thr_fini = x86_thr_fini,
	.stream_init = x86_stream_init,
	.buffered = x86_buffered,
	.drained = x86_drained,
	.flush_held = x86_flush_held,
	.stream_start = x86_stream_start,
	.trace_toggled = x86_trace_toggled,
	.to_user = x86_to_user,
	.to_kernel = x86_to_kernel,
	.retired = x86_retired,
	.classify = x86_classify,
	.resolve = x86_resolve,
	.periodic = x86_periodic,
};

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

#include "common/tracer.h"
#include "x86.h"

#define RS_DEPTH 64        /* return-compression stack, as in hardware and libipt */

/*
 * The emulated clock: one instruction is one core cycle and one TSC tick
 * (nominal ratio = CBR = 10, i.e. 1 GHz with a 100 MHz bus clock). The
 * crystal (ART/CTC) runs at 25 MHz: CPUID.15H gives TSC/ART = 40/1.
 * src/emulate.h publishes the same numbers for the decoder side.
 */
#define CLK_RATIO 10
#define CLK_TSC_PER_CTC 40

/* The intel_pt config terms (emu_proto.h). */
static struct {
	int tsc, mtc, cyc, noretcomp, branch;
	unsigned mtc_period, cyc_thresh, psb_period;
} cfg = { .branch = 1 };

struct x86_thr {
	struct emu_thr c;
	struct pt_encoder *enc;
	uint64_t psb_at;   /* stream offset of the last PSB */
	int psb_done;      /* a PSB has been written in this stream */
	uint64_t last_ip;
	uint64_t tnt;
	unsigned ntnt;
	uint64_t rs[RS_DEPTH];
	unsigned rs_top, rs_n;
	uint64_t last_cyc;
	uint64_t last_mtc;
};

static struct x86_thr *x86_of(struct emu_thr *t)
{
	return emu_container_of(t, struct x86_thr, c);
}

/* ---- PT encoding ------------------------------------------------------- */

static void put(struct x86_thr *x, const struct pt_packet *pk)
{
	uint64_t off = 0;

	pt_enc_get_offset(x->enc, &off);
	if (off > EMU_ENC_FLUSH)
		emu_stream_flush(&x->c);
	if (pt_enc_next(x->enc, pk) < 0)
		emu_proc.broken = 1;
}

static void put_cyc(struct x86_thr *x)
{
	struct pt_packet pk = { .type = ppt_cyc };
	uint64_t d;

	if (!cfg.cyc)
		return;
	d = x->c.insns - x->last_cyc;
	if (!d || (cfg.cyc_thresh && d < (1ull << (cfg.cyc_thresh - 1))))
		return;
	pk.payload.cyc.value = d;
	put(x, &pk);
	x->last_cyc = x->c.insns;
}

static void tnt_flush(struct x86_thr *x)
{
	struct pt_packet pk;

	if (!x->ntnt)
		return;
	put_cyc(x);
	memset(&pk, 0, sizeof(pk));
	pk.type = x->ntnt <= 6 ? ppt_tnt_8 : ppt_tnt_64;
	pk.payload.tnt.bit_size = (uint8_t)x->ntnt;
	pk.payload.tnt.payload = x->tnt;
	put(x, &pk);
	x->tnt = 0;
	x->ntnt = 0;
}

/* The first branch is the most significant payload bit. */
static void tnt_bit(struct x86_thr *x, int taken)
{
	x->tnt = (x->tnt << 1) | (taken ? 1 : 0);
	if (++x->ntnt == 6)
		tnt_flush(x);
}

static void put_ip(struct x86_thr *x, enum pt_packet_type type, uint64_t ip, int suppress)
{
	struct pt_packet pk;
	uint64_t l = x->last_ip;
	uint64_t sx = (uint64_t)(((int64_t)(ip << 16)) >> 16);

	tnt_flush(x);
	put_cyc(x);
	memset(&pk, 0, sizeof(pk));
	pk.type = type;
	if (suppress) {
		pk.payload.ip.ipc = pt_ipc_suppressed;
	} else {
		if ((ip >> 16) == (l >> 16))
			pk.payload.ip.ipc = pt_ipc_update_16;
		else if ((ip >> 32) == (l >> 32))
			pk.payload.ip.ipc = pt_ipc_update_32;
		else if (sx == ip)
			pk.payload.ip.ipc = pt_ipc_sext_48;
		else if ((ip >> 48) == (l >> 48))
			pk.payload.ip.ipc = pt_ipc_update_48;
		else
			pk.payload.ip.ipc = pt_ipc_full;
		pk.payload.ip.ip = ip;
		x->last_ip = ip;
	}
	put(x, &pk);
}

static void put_simple(struct x86_thr *x, enum pt_packet_type type)
{
	struct pt_packet pk;

	memset(&pk, 0, sizeof(pk));
	pk.type = type;
	put(x, &pk);
}

static void put_mode_exec(struct x86_thr *x)
{
	struct pt_packet pk;

	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_mode;
	pk.payload.mode.leaf = pt_mol_exec;
	pk.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	put(x, &pk);
}

/* TSC, TMA and CBR, as sent in PSB+ and when TraceEn goes 0 -> 1. */
static void put_timing(struct x86_thr *x)
{
	struct pt_packet pk;
	uint64_t tsc = emu_now();

	if (cfg.tsc) {
		memset(&pk, 0, sizeof(pk));
		pk.type = ppt_tsc;
		pk.payload.tsc.tsc = tsc & ((1ull << 56) - 1);
		put(x, &pk);
		if (cfg.mtc) {
			memset(&pk, 0, sizeof(pk));
			pk.type = ppt_tma;
			pk.payload.tma.ctc = (uint16_t)(tsc / CLK_TSC_PER_CTC);
			pk.payload.tma.fc = (uint16_t)(tsc % CLK_TSC_PER_CTC);
			put(x, &pk);
		}
	}
	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_cbr;
	pk.payload.cbr.ratio = CLK_RATIO;
	put(x, &pk);
	x->last_mtc = (tsc / CLK_TSC_PER_CTC) >> cfg.mtc_period;
	x->last_cyc = x->c.insns;
}

static void rs_reset(struct x86_thr *x)
{
	x->rs_n = 0;
	x->rs_top = 0;
}

static void psb_plus(struct x86_thr *x, int with_fup, uint64_t ip)
{
	tnt_flush(x);
	put_simple(x, ppt_psb);
	x->psb_at = emu_stream_pos(&x->c) - 16;
	x->psb_done = 1;
	x->last_ip = 0;
	rs_reset(x);
	put_timing(x);
	if (with_fup) {
		put_mode_exec(x);
		put_ip(x, ppt_fup, ip, 0);
	}
	put_simple(x, ppt_psbend);
}

static void rs_push(struct x86_thr *x, uint64_t ret)
{
	x->rs[x->rs_top] = ret;
	x->rs_top = (x->rs_top + 1) % RS_DEPTH;
	if (x->rs_n < RS_DEPTH)
		x->rs_n++;
}

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
	struct pt_config c;

	pt_config_init(&c);
	c.begin = t->buf;
	c.end = t->buf + EMU_ENC_CAP;
	x86_of(t)->enc = pt_alloc_encoder(&c);
	return x86_of(t)->enc ? 0 : -1;
}

static void x86_thr_fini(struct emu_thr *t)
{
	pt_free_encoder(x86_of(t)->enc);
}

static void x86_stream_init(struct emu_thr *t)
{
	struct x86_thr *x = x86_of(t);

	x->psb_done = 0;
	x->psb_at = 0;
	x->last_ip = 0;
	x->tnt = 0;
	x->ntnt = 0;
	rs_reset(x);
	if (x->enc)
		pt_enc_sync_set(x->enc, 0);
}

static size_t x86_buffered(struct emu_thr *t)
{
	uint64_t off = 0;

	pt_enc_get_offset(x86_of(t)->enc, &off);
	return (size_t)off;
}

static void x86_drained(struct emu_thr *t)
{
	pt_enc_sync_set(x86_of(t)->enc, 0);
}

static void x86_flush_held(struct emu_thr *t)
{
	tnt_flush(x86_of(t));
}

static void x86_stream_start(struct emu_thr *t)
{
	psb_plus(x86_of(t), 0, 0);
}

static void x86_trace_toggled(struct emu_thr *t, int on)
{
	struct x86_thr *x = x86_of(t);

	if (!on)
		return;
	if (!x->psb_done)
		psb_plus(x, 0, 0);
	else
		put_timing(x);
	/* Code ran untraced: the decoder cannot know its calls. */
	rs_reset(x);
}

static int x86_to_user(struct emu_thr *t, uint64_t ip)
{
	struct x86_thr *x = x86_of(t);

	if (!cfg.branch)
		return 0;
	if (!x->psb_done)
		psb_plus(x, 0, 0);
	put_mode_exec(x);
	put_ip(x, ppt_tip_pge, ip, 0);
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

	if (why != EMU_ENTRY_SYSCALL)
		put_ip(x, ppt_fup, ip, 0);
	put_ip(x, ppt_tip_pgd, 0, 1);
}

/*
 * More instructions retired. An MTC for a crystal tick that passed among
 * them goes out now, before the packets of the branch that ends them.
 */
static void x86_retired(struct emu_thr *t)
{
	struct x86_thr *x = x86_of(t);
	uint64_t tsc, m;

	if (!cfg.mtc || !t->trace_en)
		return;
	tsc = emu_now();
	m = (tsc / CLK_TSC_PER_CTC) >> cfg.mtc_period;
	if (m != x->last_mtc) {
		struct pt_packet pk;
		uint64_t tick = (m << cfg.mtc_period) * CLK_TSC_PER_CTC;
		uint64_t saved = t->insns;

		/*
		 * The MTC stands for the moment the crystal clock ticked,
		 * somewhere inside the last TB: cycles up to that moment go
		 * before it, the rest after it.
		 */
		if (tsc - tick <= t->insns - x->last_cyc) {
			t->insns -= tsc - tick;
			put_cyc(x);
			t->insns = saved;
		}
		memset(&pk, 0, sizeof(pk));
		pk.type = ppt_mtc;
		pk.payload.mtc.ctc = (uint8_t)m;
		put(x, &pk);
		x->last_mtc = m;
	}
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
 * The packets of the TB's last instruction: a TNT bit for a conditional
 * branch or a compressed return, a TIP for an indirect one.
 */
static int x86_resolve(struct emu_thr *t, uint64_t next, uint64_t *expect,
		       uint64_t *uret_fired)
{
	struct x86_thr *x = x86_of(t);
	const struct emu_tb *p = t->cur;
	int r = EMU_EXPECTED;

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
	switch (p->kind) {
	case EMU_BR_NONE:
	case EMU_BR_REPSTR:
		*expect = p->next;
		break;
	case EMU_BR_COND:
		if (next == p->target || next == p->next) {
			if (t->pkt_en)
				tnt_bit(x, next == p->target);
			r = EMU_ARRIVED;
		} else {
			if (t->pkt_en)
				tnt_bit(x, 0);
			*expect = p->next;
		}
		break;
	case EMU_BR_JMP:
		*expect = p->target;
		break;
	case EMU_BR_CALL:
		/* libipt does not log a call to the next instruction (PIC idiom). */
		if (t->pkt_en && p->target != p->next)
			rs_push(x, p->next);
		emu_shadow_push(t, p->next);
		*expect = p->target;
		break;
	case EMU_BR_ICALL:
		if (t->pkt_en)
			rs_push(x, p->next);
		emu_shadow_push(t, p->next);
		/* fall through */
	case EMU_BR_IJMP:
	case EMU_BR_FAR:
		if (t->pkt_en)
			put_ip(x, ppt_tip, next, 0);
		r = EMU_ARRIVED;
		break;
	case EMU_BR_RET:
		*uret_fired = emu_shadow_ret(t, next);
		if (t->pkt_en) {
			unsigned top = (x->rs_top + RS_DEPTH - 1) % RS_DEPTH;

			if (!cfg.noretcomp && x->rs_n && x->rs[top] == next) {
				x->rs_top = top;
				x->rs_n--;
				tnt_bit(x, 1);
			} else {
				put_ip(x, ppt_tip, next, 0);
			}
		}
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
	struct x86_thr *x = x86_of(t);

	if (t->trace_en && emu_stream_pos(t) - x->psb_at >= (2048ull << cfg.psb_period))
		psb_plus(x, t->pkt_en, ip);
}

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

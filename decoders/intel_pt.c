// SPDX-License-Identifier: MIT
/*
 * Intel PT decoder on libipt's block decoder.
 *
 * Blocks end at every call and jump (end_on_call, end_on_jump), so a block is
 * a run of consecutive instructions and its last instruction is the branch
 * that left it; the branch's target is the next block's first IP (or the IP
 * of the event that intervenes). libipt sometimes leaves the class of that
 * last instruction unknown (block cache trampolines), and never gives its
 * length, so the branch sites are decoded once with capstone and cached.
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <intel-pt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder.h"
#include "image.h"
#include "session.h"

#define QSIZE 16
#define ICACHE_BITS 14
/*
 * Blocks decoded without consuming a byte of trace. Direct jumps and calls
 * need no packets, so code like "1: jmp 1b" (or damaged trace leading into
 * it) would otherwise be followed forever.
 */
#define MAX_NO_PROGRESS 1000000

enum st { S_SEG, S_SYNC, S_RUN, S_DONE };

struct icache_ent {
	uint64_t ip;
	const void *as;
	uint8_t len;              /* 0: entry empty or decode failed */
	uint8_t kind;             /* enum prec_br_kind, PREC_BR_NONE: not a branch */
	uint8_t indirect;
};

struct ipt {
	struct prec_session *s;
	const struct prec_stream *st;
	struct prec_decoder_opts opts;
	struct prec_images *im;
	struct pt_config cfg;
	struct pt_block_decoder *dec;
	enum st state;
	size_t seg;               /* index of the next segment to start */
	size_t seg_start;         /* data position of the current segment */
	int status;
	uint64_t last_off;
	unsigned no_progress;
	bool synced_seg;          /* synced at least once in this segment */
	uint64_t fail_off;        /* offset of the last sync failure */
	int fail_count;

	/* context: which thread, which address space */
	bool have_time;
	uint64_t tsc, time;
	int cpu, pid, tid;
	struct prec_aspace *as;
	uint64_t ctx_until;       /* recheck the context when time passes this */
	size_t sb_idx;            /* per-CPU: next timeline record to apply */

	/* the branch that ended the last block, waiting for its target */
	bool pend;
	uint64_t pend_from;
	uint64_t pend_tsc;        /* the time the branch executed */
	enum pt_insn_class pend_class;
	uint64_t last_ip;
	int mode;

	struct prec_tev q[QSIZE];
	unsigned qh, qt;

	struct icache_ent *ic;
	csh cs;
	bool cs_ok;
};

static struct prec_tev *push(struct ipt *d, enum prec_tev_type type)
{
	struct prec_tev *e = &d->q[d->qt % QSIZE];

	/* Events are hot: clear the header and the small union members only. */
	memset(e, 0, offsetof(struct prec_tev, u) + 32);
	e->type = type;
	e->time = d->have_time ? d->time : 0;
	e->tsc = d->have_time ? d->tsc : 0;
	e->cpu = d->cpu;
	e->pid = d->pid;
	e->tid = d->tid;
	if (d->dec) {
		uint64_t off = 0;

		pt_blk_get_offset(d->dec, &off);
		e->offset = prec_stream_offset(d->st, d->seg_start + off);
	}
	d->qt++;
	return e;
}

static void set_tsc(struct ipt *d, uint64_t tsc)
{
	if (!tsc)
		return;
	d->tsc = tsc;
	d->time = prec_session_tsc_to_time(d->s, tsc);
	d->have_time = true;
}

/* ---- thread and address-space context ---- */

static bool cpu_record(const struct ipt *d, const struct prec_sb *sb)
{
	int cpu = sb->cpu >= 0 ? sb->cpu : sb->ring_cpu;

	return cpu == d->cpu &&
	       (sb->type == PREC_SB_SWITCH || sb->type == PREC_SB_ITRACE_START);
}

/* Applies the per-CPU switch records up to @t; returns the next one's time. */
static uint64_t cpu_advance(struct ipt *d, uint64_t t)
{
	size_t n = prec_session_nr_sb(d->s);

	for (; d->sb_idx < n; d->sb_idx++) {
		const struct prec_sb *sb = prec_session_sb(d->s, d->sb_idx);

		if (sb->time > t)
			break;
		if (!cpu_record(d, sb))
			continue;
		if (sb->type == PREC_SB_ITRACE_START ||
		    (sb->type == PREC_SB_SWITCH && !sb->u.sw.out)) {
			d->tid = sb->tid;
		} else if (sb->u.sw.cpu_wide) {
			d->tid = sb->u.sw.next_prev_tid;
		}
	}
	for (size_t i = d->sb_idx; i < n; i++) {
		const struct prec_sb *sb = prec_session_sb(d->s, i);

		if (cpu_record(d, sb))
			return sb->time;
	}
	return UINT64_MAX;
}

static void update_context(struct ipt *d, bool force)
{
	/* Before the first timestamp of a timed trace, assume its beginning. */
	uint64_t t = d->have_time ? d->time : prec_session_machine(d->s)->tsc ? 0 : UINT64_MAX;
	uint64_t until = UINT64_MAX;
	struct prec_aspace *as;
	int old_tid = d->tid, old_pid = d->pid;

	if (!force && t < d->ctx_until)
		return;
	if (d->st->cpu >= 0 && d->st->tid < 0)
		until = cpu_advance(d, t);
	d->pid = d->tid >= 0 ? prec_session_pid_of(d->s, d->tid, t) : -1;
	as = prec_images_aspace(d->im, d->pid, t);
	if (prec_aspace_end(as) < until)
		until = prec_aspace_end(as);
	d->ctx_until = until;
	if (as != d->as) {
		struct pt_image *img = prec_aspace_pt_image(as);

		d->as = as;
		if (img && d->dec)
			pt_blk_set_image(d->dec, img);
	}
	if (!force && d->tid != old_tid && old_tid >= 0) {
		struct prec_tev *e = push(d, PREC_TEV_SWITCH);

		e->u.sw.prev_pid = old_pid;
		e->u.sw.prev_tid = old_tid;
		/* A new thread: the branch pending from the old one is not its. */
		d->pend = false;
	}
}

/* ---- branch-site decoding ---- */

static const struct icache_ent *insn_info(struct ipt *d, uint64_t ip)
{
	size_t h = (size_t)((ip ^ (ip >> 17) ^ (uintptr_t)d->as) * 0x9e3779b97f4a7c15ull >>
			    (64 - ICACHE_BITS));
	struct icache_ent *e = &d->ic[h];
	uint8_t buf[16];
	cs_insn *insn = NULL;
	size_t n;

	if (e->ip == ip && e->as == d->as && e->len)
		return e;
	memset(e, 0, sizeof(*e));
	e->ip = ip;
	e->as = d->as;
	if (!d->cs_ok || !d->as)
		return e;
	n = prec_aspace_read(d->as, ip, buf, 15);
	if (!n || cs_disasm(d->cs, buf, n, ip, 1, &insn) != 1)
		return e;
	e->len = (uint8_t)insn->size;
	switch (insn->id) {
	case X86_INS_CALL:
		e->kind = PREC_BR_CALL;
		break;
	case X86_INS_RET:
		e->kind = PREC_BR_RETURN;
		break;
	case X86_INS_JMP:
		e->kind = PREC_BR_JUMP;
		break;
	case X86_INS_SYSCALL:
	case X86_INS_SYSENTER:
	case X86_INS_INT:
	case X86_INS_INT3:
	case X86_INS_INTO:
		e->kind = PREC_BR_SYSCALL;
		break;
	case X86_INS_SYSRET:
	case X86_INS_SYSEXIT:
	case X86_INS_IRET:
	case X86_INS_IRETD:
	case X86_INS_IRETQ:
		e->kind = PREC_BR_SYSRET;
		break;
	case X86_INS_LCALL:
	case X86_INS_LJMP:
	case X86_INS_RETF:
	case X86_INS_RETFQ:
		e->kind = PREC_BR_FAR;
		break;
	default: {
		size_t g;

		for (g = 0; insn->detail && g < insn->detail->groups_count; g++)
			if (insn->detail->groups[g] == X86_GRP_JUMP)
				e->kind = PREC_BR_COND;
	}
	}
	if ((e->kind == PREC_BR_CALL || e->kind == PREC_BR_JUMP) && insn->detail &&
	    insn->detail->x86.op_count == 1 && insn->detail->x86.operands[0].type != X86_OP_IMM)
		e->indirect = 1;
	cs_free(insn, 1);
	return e;
}

static enum prec_br_kind class_kind(enum pt_insn_class c)
{
	switch (c) {
	case ptic_call:
		return PREC_BR_CALL;
	case ptic_return:
		return PREC_BR_RETURN;
	case ptic_jump:
		return PREC_BR_JUMP;
	case ptic_cond_jump:
		return PREC_BR_COND;
	case ptic_far_call:
		return PREC_BR_SYSCALL;
	case ptic_far_return:
		return PREC_BR_SYSRET;
	case ptic_far_jump:
		return PREC_BR_FAR;
	default:
		return PREC_BR_NONE;
	}
}

/*
 * Emits the pending branch with target @to (0: unknown, tracing stopped).
 * Returns its kind (PREC_BR_NONE when it was not a taken branch).
 */
static enum prec_br_kind resolve_pending(struct ipt *d, uint64_t to)
{
	const struct icache_ent *ie = NULL;
	enum prec_br_kind kind;
	struct prec_tev *e;

	if (!d->pend)
		return PREC_BR_NONE;
	d->pend = false;
	kind = class_kind(d->pend_class);
	if (kind == PREC_BR_NONE || kind == PREC_BR_CALL || kind == PREC_BR_COND ||
	    kind == PREC_BR_JUMP || kind == PREC_BR_SYSCALL) {
		ie = insn_info(d, d->pend_from);
		if (kind == PREC_BR_NONE || kind == PREC_BR_SYSCALL)
			kind = ie->kind ? ie->kind : kind;
	}
	if (kind == PREC_BR_NONE)
		return kind;
	if (kind == PREC_BR_COND && to && ie && ie->len && to == d->pend_from + ie->len)
		return PREC_BR_NONE;
	if (kind == PREC_BR_JUMP && ie && ie->indirect)
		kind = PREC_BR_INDIRECT;
	e = push(d, PREC_TEV_BRANCH);
	if (d->pend_tsc) {
		e->tsc = d->pend_tsc;
		e->time = prec_session_tsc_to_time(d->s, d->pend_tsc);
	}
	e->u.branch.from = d->pend_from;
	e->u.branch.to = to;
	e->u.branch.kind = kind;
	e->u.branch.insn_len = ie ? ie->len : 0;
	if (ie && ie->indirect)
		e->u.branch.flags |= PREC_BRF_INDIRECT;
	if (kind == PREC_BR_RETURN)
		e->u.branch.flags |= PREC_BRF_INDIRECT;
	return kind;
}

/* ---- errors ---- */

static void push_error(struct ipt *d, int pterr, uint64_t ip)
{
	struct prec_tev *e = push(d, PREC_TEV_ERROR);
	enum pt_error_code c = pt_errcode(pterr);
	const char *what;

	e->u.err.ip = ip;
	switch (c) {
	case pte_nomap:
		e->u.err.code = PREC_DE_NOMAP;
		if (ip)
			snprintf(e->u.err.msg, sizeof(e->u.err.msg),
				 "no code image for address 0x%llx", (unsigned long long)ip);
		else
			snprintf(e->u.err.msg, sizeof(e->u.err.msg),
				 "no code image for the traced address");
		return;
	case pte_bad_opc:
	case pte_bad_packet:
		e->u.err.code = PREC_DE_BADPKT;
		what = "malformed packet";
		break;
	case pte_bad_insn:
		e->u.err.code = PREC_DE_BADINSN;
		what = "cannot decode the instruction";
		break;
	case pte_nosync:
		e->u.err.code = PREC_DE_NOSYNC;
		what = "no sync point";
		break;
	case pte_bad_context:
	case pte_bad_query:
	case pte_bad_retcomp:
	case pte_retstack_empty:
	case pte_noip:
	case pte_ip_suppressed:
	case pte_event_ignored:
	case pte_bad_status_update:
	case pte_no_enable:
		e->u.err.code = PREC_DE_CONTEXT;
		what = "trace does not match the code";
		break;
	default:
		e->u.err.code = PREC_DE_OTHER;
		what = "decode error";
	}
	snprintf(e->u.err.msg, sizeof(e->u.err.msg), "%s (%s)", what, pt_errstr(c));
}

/* ---- the state machine ---- */

static size_t nr_segments(const struct prec_stream *st)
{
	return st->nr_gaps + 1;
}

static void seg_bounds(const struct prec_stream *st, size_t i, size_t *lo, size_t *hi)
{
	*lo = i ? (size_t)st->gaps[i - 1].pos : 0;
	*hi = i < st->nr_gaps ? (size_t)st->gaps[i].pos : st->len;
}

static int start_segment(struct ipt *d)
{
	size_t lo, hi;
	struct pt_image *img;

	if (d->dec) {
		pt_blk_free_decoder(d->dec);
		d->dec = NULL;
	}
	for (;;) {
		if (d->seg >= nr_segments(d->st)) {
			d->state = S_DONE;
			return 0;
		}
		seg_bounds(d->st, d->seg, &lo, &hi);
		if (d->seg > 0) {
			struct prec_tev *e = push(d, PREC_TEV_GAP);

			e->offset = prec_stream_offset(d->st, lo) - d->st->gaps[d->seg - 1].lost;
			e->u.gap.lost = d->st->gaps[d->seg - 1].lost;
			d->pend = false;
		}
		d->seg++;
		if (hi > lo)
			break;
	}
	d->seg_start = lo;
	d->cfg.begin = d->st->data + lo;
	d->cfg.end = d->st->data + hi;
	d->dec = pt_blk_alloc_decoder(&d->cfg);
	if (!d->dec)
		return -ENOMEM;
	img = d->as ? prec_aspace_pt_image(d->as) : NULL;
	if (img)
		pt_blk_set_image(d->dec, img);
	d->synced_seg = false;
	d->fail_count = 0;
	d->state = S_SYNC;
	return 0;
}

static void do_sync(struct ipt *d)
{
	int r = pt_blk_sync_forward(d->dec);
	uint64_t off = 0;

	d->pend = false;
	if (r >= 0) {
		d->status = r;
		d->synced_seg = true;
		d->state = S_RUN;
		return;
	}
	if (r == -pte_eos) {
		if (!d->synced_seg) {
			struct prec_tev *e = push(d, PREC_TEV_ERROR);

			e->u.err.code = PREC_DE_NOSYNC;
			snprintf(e->u.err.msg, sizeof(e->u.err.msg),
				 "no PSB in %zu bytes of trace: nothing to decode",
				 (size_t)(d->cfg.end - d->cfg.begin));
			e->offset = prec_stream_offset(d->st, d->seg_start);
		}
		d->state = S_SEG;
		return;
	}
	/* A broken PSB+: report it and look for the next PSB, making progress. */
	pt_blk_get_offset(d->dec, &off);
	push_error(d, r, 0);
	if (d->fail_count && off <= d->fail_off)
		d->state = S_SEG;
	d->fail_off = off;
	d->fail_count++;
}

static void on_error(struct ipt *d, int r, uint64_t ip)
{
	d->pend = false;
	if (r == -pte_eos) {
		d->state = S_SEG;
		return;
	}
	push_error(d, r, ip);
	d->state = S_SYNC;
}

static void handle_event(struct ipt *d, const struct pt_event *ev)
{
	struct prec_tev *e;
	enum prec_br_kind k;

	if (ev->has_tsc)
		set_tsc(d, ev->tsc);
	update_context(d, false);
	switch (ev->type) {
	case ptev_enabled:
		if (ev->status_update)
			break;
		d->pend = false;
		e = push(d, PREC_TEV_TRACE_BEGIN);
		e->u.trace.ip = ev->variant.enabled.ip;
		break;
	case ptev_disabled:
		k = resolve_pending(d, ev->ip_suppressed ? 0 : ev->variant.disabled.ip);
		e = push(d, PREC_TEV_TRACE_END);
		e->u.trace.ip = d->last_ip;
		e->u.trace.to = ev->ip_suppressed ? 0 : ev->variant.disabled.ip;
		e->u.trace.reason = k == PREC_BR_SYSCALL ? PREC_END_SYSCALL : PREC_END_DISABLED;
		break;
	case ptev_async_disabled:
		resolve_pending(d, ev->variant.async_disabled.at);
		e = push(d, PREC_TEV_TRACE_END);
		e->u.trace.ip = ev->variant.async_disabled.at;
		e->u.trace.to = ev->ip_suppressed ? 0 : ev->variant.async_disabled.ip;
		e->u.trace.reason = PREC_END_ASYNC;
		break;
	case ptev_async_branch:
		resolve_pending(d, ev->variant.async_branch.from);
		e = push(d, PREC_TEV_BRANCH);
		e->u.branch.from = ev->variant.async_branch.from;
		e->u.branch.to = ev->variant.async_branch.to;
		e->u.branch.kind = PREC_BR_INTERRUPT;
		e->u.branch.flags = PREC_BRF_INDIRECT;
		break;
	case ptev_overflow:
		d->pend = false;
		e = push(d, PREC_TEV_OVERFLOW);
		e->u.trace.ip = ev->variant.overflow.ip;
		break;
	case ptev_exec_mode:
		d->mode = ev->variant.exec_mode.mode;
		break;
	case ptev_tsx:
		if (ev->variant.tsx.aborted) {
			resolve_pending(d, ev->variant.tsx.ip);
			e = push(d, PREC_TEV_BRANCH);
			e->u.branch.from = ev->variant.tsx.ip;
			e->u.branch.kind = PREC_BR_TX_ABORT;
		}
		break;
	default:
		break;
	}
}

static int mode_bits(enum pt_exec_mode m)
{
	switch (m) {
	case ptem_16bit:
		return 16;
	case ptem_32bit:
		return 32;
	default:
		return 64;
	}
}

static void handle_block(struct ipt *d, const struct pt_block *b)
{
	struct prec_tev *e;

	resolve_pending(d, b->ip);
	if (!d->opts.no_blocks) {
		e = push(d, PREC_TEV_BLOCK);
		e->u.block.ip = b->ip;
		e->u.block.end_ip = b->end_ip;
		e->u.block.ninsn = b->ninsn;
		e->u.block.mode = (uint8_t)mode_bits(b->mode);
	}
	d->last_ip = b->end_ip;
	switch (b->iclass) {
	case ptic_other:
	case ptic_ptwrite:
		break;
	default:
		d->pend = true;
		d->pend_from = b->end_ip;
		d->pend_tsc = d->have_time ? d->tsc : 0;
		d->pend_class = b->iclass;
	}
}

static int step(struct ipt *d)
{
	struct pt_event ev;
	struct pt_block b;
	int r;

	switch (d->state) {
	case S_SEG:
		return start_segment(d);
	case S_SYNC:
		do_sync(d);
		return 0;
	case S_DONE:
		return 0;
	case S_RUN:
		break;
	}
	if (d->status & pts_event_pending) {
		r = pt_blk_event(d->dec, &ev, sizeof(ev));
		if (r < 0) {
			on_error(d, r, 0);
			return 0;
		}
		d->status = r;
		handle_event(d, &ev);
		return 0;
	}
	update_context(d, false);
	memset(&b, 0, sizeof(b));
	r = pt_blk_next(d->dec, &b, sizeof(b));
	/* Blocks decoded before an error are still valid. */
	if (b.ninsn)
		handle_block(d, &b);
	if (r < 0) {
		on_error(d, r, b.ninsn ? 0 : b.ip);
		return 0;
	}
	d->status = r;
	{
		uint64_t off = 0;

		pt_blk_get_offset(d->dec, &off);
		if (off != d->last_off) {
			d->last_off = off;
			d->no_progress = 0;
		} else if (++d->no_progress > MAX_NO_PROGRESS) {
			struct prec_tev *e = push(d, PREC_TEV_ERROR);

			e->u.err.code = PREC_DE_CONTEXT;
			e->u.err.ip = b.end_ip;
			snprintf(e->u.err.msg, sizeof(e->u.err.msg),
				 "no progress: the code loops without producing trace "
				 "(an endless loop, or damaged trace)");
			d->no_progress = 0;
			d->pend = false;
			d->state = S_SYNC;
		}
	}
	return 0;
}

static int ipt_next(void *priv, struct prec_tev *ev)
{
	struct ipt *d = priv;
	int err;

	while (d->qh == d->qt) {
		if (d->state == S_DONE)
			return 0;
		err = step(d);
		if (err)
			return err;
	}
	*ev = d->q[d->qh % QSIZE];
	d->qh++;
	return 1;
}

static void ipt_close(void *priv)
{
	struct ipt *d = priv;

	if (!d)
		return;
	if (d->dec)
		pt_blk_free_decoder(d->dec);
	if (d->cs_ok)
		cs_close(&d->cs);
	free(d->ic);
	free(d);
}

static int ipt_open(struct prec_session *s, const struct prec_stream *stream,
		    const struct prec_decoder_opts *opts, void **priv)
{
	const struct prec_machine *m = prec_session_machine(s);
	struct ipt *d;

	*priv = NULL;
	if (!prec_session_images(s) || !stream)
		return -EINVAL;
	if (m->vendor[0] && strcmp(m->vendor, "GenuineIntel"))
		return -EOPNOTSUPP;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->ic = calloc((size_t)1 << ICACHE_BITS, sizeof(*d->ic));
	if (!d->ic) {
		free(d);
		return -ENOMEM;
	}
	d->s = s;
	d->st = stream;
	if (opts)
		d->opts = *opts;
	d->im = prec_session_images(s);
	d->cpu = stream->tid < 0 ? stream->cpu : -1;
	d->tid = stream->tid;
	d->pid = -1;
	if (stream->cpu >= 0)
		d->cpu = stream->cpu;
	pt_config_init(&d->cfg);
	if (!strcmp(m->vendor, "GenuineIntel")) {
		d->cfg.cpu.vendor = pcv_intel;
		d->cfg.cpu.family = m->family;
		d->cfg.cpu.model = m->model;
		d->cfg.cpu.stepping = m->stepping;
		pt_cpu_errata(&d->cfg.errata, &d->cfg.cpu);
	}
	d->cfg.cpuid_0x15_eax = m->cpuid_15_eax;
	d->cfg.cpuid_0x15_ebx = m->cpuid_15_ebx;
	d->cfg.mtc_freq = m->mtc_period;
	d->cfg.nom_freq = (uint8_t)m->max_nonturbo_ratio;
	d->cfg.flags.variant.block.end_on_call = 1;
	d->cfg.flags.variant.block.end_on_jump = 1;
	/*
	 * pt_blk_time() runs ahead of the instruction flow (the query decoder
	 * reads past the packet it needs); tick events carry each timing
	 * update at the place in the flow where it belongs.
	 */
	d->cfg.flags.variant.block.enable_tick_events = 1;
	d->cs_ok = cs_open(CS_ARCH_X86, CS_MODE_64, &d->cs) == CS_ERR_OK;
	if (d->cs_ok)
		cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
	d->state = S_SEG;
	update_context(d, true);
	*priv = d;
	return 0;
}

const struct prec_decoder_ops prec_intel_pt_decoder = {
	.name = "intel_pt",
	.open = ipt_open,
	.next = ipt_next,
	.close = ipt_close,
};

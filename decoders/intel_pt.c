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
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "decoders/decoder.h"
#include "decoders/evqueue.h"
#include "decoders/ipt_walk.h"
#include "decoders/jobs.h"
#include "decoders/shard.h"
#include "decoders/x86_branch.h"
#include "session/image.h"
#include "session/session.h"

#define QSIZE 16                  /* events queued at first (the queue grows) */
/*
 * The cache of decoded branch sites: 1 << ICACHE_FIRST entries at first,
 * four times as many (emptied) each time it has missed as many times as it
 * has entries, up to 1 << ICACHE_BITS (6 MiB): a short stream, or one whose
 * code fits, does not pay for a big one; the answers do not depend on its
 * size.
 */
#define ICACHE_FIRST 10
#define ICACHE_BITS 18
/*
 * Blocks that consume no trace. Direct jumps and calls need no packets, so
 * code like "1: jmp 1b" (or damaged trace leading into it) would be followed
 * forever, and code made of direct calls makes output that no trace pays for.
 * Two bounds (ptdump(1), RESOURCES):
 *  - a run of such blocks that comes back to a block it started from is an
 *    endless loop (nothing consumed, so the path repeats): reported once, at
 *    once (Brent's cycle detection over the run's block addresses);
 *  - all such blocks of a stream together: at most NOPROG_BASE plus
 *    NOPROG_PER_BYTE per byte of the stream; past that the stream's decode
 *    stops with an error.
 */
#define NOPROG_BASE 4096
#define NOPROG_PER_BYTE 64
/*
 * A stream held by reference is decoded in windows (ptdump(1), RESOURCES).
 * A window ends at the first PSB at least opts.window bytes after its start
 * and takes in that PSB+ up to its PSBEND: its decoder then follows the
 * flow up to the IP the PSB+ gives (as a decoder over the whole stream
 * does, on its way through the PSB+) and stops at the end of the bytes;
 * the next window's decoder starts at that PSB, where the trace carries
 * no state over (the tracer resets its return-compression stack and last
 * IP at a PSB), and the branch pending before it is resolved by the first
 * block after it, as in one pass. With no PSB within PSB_FAR bytes after
 * that, the window ends there, and the next one syncs as after a gap.
 */
#define PSB_SCAN 65536            /* bytes looked at a time for a PSB */
#define PSB_FAR ((size_t)64 << 20)
#define PSBPLUS_MAX 4096          /* a PSB+ longer than this is no place to cut */

enum st { S_SEG, S_WIN, S_SYNC, S_RUN, S_DONE };

struct icache_ent {
	uint64_t ip;
	const void *as;
	uint8_t len;              /* 0: entry empty or decode failed */
	uint8_t kind;             /* enum prec_br_kind, PREC_BR_NONE: not a branch */
	uint8_t indirect;
};

/* --follow: the places to resume at (windows' starts) a decoder keeps */
#define RESUME_KEEP 8

struct ipt {
	/*
	 * The CBR, CR3 and VMCS base last reported (+1: 0 = none yet). A PSB+
	 * restates them (status updates): reported only when they differ.
	 */
	uint64_t seen_cbr, seen_cr3, seen_vmcs;
	struct prec_session *s;
	const struct prec_stream *st;
	struct prec_decoder_opts opts;
	struct prec_images *im;
	struct pt_config cfg;
	/*
	 * The decoder core: the walk (walk), or libipt's block decoder (dec,
	 * opts.libipt_core); use_walk says which, the dec_*() calls below
	 * take the one in use.
	 */
	struct pt_block_decoder *dec;
	struct prec_walk *walk;
	bool use_walk;
	bool skip_cond;           /* opts.branch_kinds leaves conditional branches out */
	enum st state;
	size_t seg;               /* index of the next segment to start */
	size_t seg_start;         /* data position of the current segment */
	size_t seg_end;
	uint64_t seg_off;         /* stream offset of the segment's start */
	/* windows (streams held by reference; else one window: the segment) */
	bool windowed;
	size_t win_size;
	size_t win_lo;            /* data position of cfg.begin */
	size_t win_next;          /* where the next window starts (seg_end: none) */
	bool next_splice;         /* the next window carries the decode on at a PSB */
	bool splice_sync;         /* this window's first sync continues the last one */
	struct prec_stream_reader rd;
	int status;
	uint64_t last_off;
	uint64_t np_total;        /* blocks that consumed no trace, in the stream */
	uint64_t np_budget;       /* the bound on np_total */
	uint64_t np_anchor;       /* Brent's cycle detection: the block to meet again */
	uint64_t np_power, np_lam;
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
	uint64_t sb_t;            /* per-CPU: the records up to this time are applied */
	bool sb_t_set;            /* (--follow: where a later round's timeline goes on) */

	/* the branch that ended the last block, waiting for its target */
	bool pend;
	uint64_t pend_from;
	uint64_t pend_tsc;        /* the time the branch executed */
	enum pt_insn_class pend_class;
	bool tx_abort;            /* a TSX abort at tx_abort_ip, its target to come */
	uint64_t tx_abort_ip;
	uint64_t last_ip;
	int mode;

	struct prec_evq q;
	/*
	 * opts.counts: the PREC_TEV_COUNTS event being summed, not queued yet;
	 * opts.fn_blocks: the block being extended.
	 */
	bool agg_open;
	struct prec_tev agg;
	/*
	 * opts.fn_blocks: the function [fn_lo, fn_hi) of space fn_as (0, 0:
	 * none known); fn_nosym: the open block lies in code of object fn_dso
	 * that no symbol covers (a view names all of it as one function)
	 */
	const struct prec_aspace *fn_as;
	uint64_t fn_lo, fn_hi;
	bool fn_nosym;
	const char *fn_dso;

	struct icache_ent *ic;
	unsigned ic_bits;
	size_t ic_misses;         /* since it last grew */
	csh cs;
	bool cs_ok;

	/*
	 * A part's decoder (-j: see "parallel decoding" below) ends its
	 * windows at cut_hi (a PSB; 0: the segment's end), the last one
	 * taking in its PSB+ up to cut_end, and decodes with copies of the
	 * address spaces' images of its own (libipt's images are not to be
	 * shared between threads).
	 */
	bool sub;
	size_t cut_hi, cut_end;
	struct sub_image *imgs;
	size_t nr_imgs;
	struct pt_image_section_cache *isc; /* the images' own sections (a pooled set) */
	struct par *par;          /* the decoder of a stream decoded in parts */

	/* --follow: events queued so far, and the last places to resume at */
	uint64_t pushed;
	struct prec_resume rp[RESUME_KEEP];
	unsigned nrp;
};

struct sub_image {
	struct prec_aspace *as;
	struct pt_image *img;
};

/* ---- the decoder core: the walk or libipt's block decoder, same calls ---- */

static inline bool dec_open(const struct ipt *d)
{
	return d->use_walk ? d->walk != NULL : d->dec != NULL;
}

static inline int dec_offset(const struct ipt *d, uint64_t *off)
{
	return d->use_walk ? prec_walk_get_offset(d->walk, off) : pt_blk_get_offset(d->dec, off);
}

static int dec_sync_offset(const struct ipt *d, uint64_t *off)
{
	return d->use_walk ? prec_walk_get_sync_offset(d->walk, off) :
			     pt_blk_get_sync_offset(d->dec, off);
}

static int dec_sync_set(struct ipt *d, uint64_t off)
{
	return d->use_walk ? prec_walk_sync_set(d->walk, off) : pt_blk_sync_set(d->dec, off);
}

static int dec_sync_forward(struct ipt *d)
{
	return d->use_walk ? prec_walk_sync_forward(d->walk) : pt_blk_sync_forward(d->dec);
}

static inline int dec_next(struct ipt *d, struct pt_block *b)
{
	return d->use_walk ? prec_walk_next(d->walk, b) : pt_blk_next(d->dec, b, sizeof(*b));
}

static int dec_event(struct ipt *d, struct pt_event *ev)
{
	return d->use_walk ? prec_walk_event(d->walk, ev) : pt_blk_event(d->dec, ev, sizeof(*ev));
}

/* Frees the core (the walk is kept for the next window, its code cache warm, unless @all). */
static void dec_close(struct ipt *d, bool all)
{
	if (d->dec)
		pt_blk_free_decoder(d->dec);
	d->dec = NULL;
	if (all) {
		prec_walk_free(d->walk);
		d->walk = NULL;
	}
}

/* Guards the lazily built images of the session's address spaces. */
static pthread_mutex_t image_mu = PTHREAD_MUTEX_INITIALIZER;

/* The libipt image of @as for this decoder's use. */
static struct pt_image *ipt_image(struct ipt *d, struct prec_aspace *as)
{
	struct sub_image *n;
	struct pt_image *src, *img = NULL;

	if (!d->sub)
		return prec_aspace_pt_image(as);
	for (size_t i = 0; i < d->nr_imgs; i++)
		if (d->imgs[i].as == as)
			return d->imgs[i].img;
	if (d->isc) {
		/* Sections of its own: no lock shared with other threads on each section switch. */
		img = prec_aspace_pt_image_in(as, d->isc);
	} else {
		pthread_mutex_lock(&image_mu);
		src = prec_aspace_pt_image(as);
		if (src) {
			img = pt_image_alloc(NULL);
			if (img && pt_image_copy(img, src) < 0) {
				pt_image_free(img);
				img = NULL;
			}
		}
		pthread_mutex_unlock(&image_mu);
	}
	n = realloc(d->imgs, (d->nr_imgs + 1) * sizeof(*n));
	if (!n) {
		pt_image_free(img);
		return NULL;
	}
	d->imgs = n;
	d->imgs[d->nr_imgs].as = as;
	d->imgs[d->nr_imgs++].img = img;
	return img;
}

/* The stream offset of decoder offset @off (in the current segment). */
/* The stream offset of decoder offset @off (relative to the window the decoder reads). */
static uint64_t stream_off(const struct ipt *d, uint64_t off)
{
	off += d->win_lo;
	/* Inside the segment no gap lies between: no walk over the gaps. */
	return off < d->seg_end ? d->seg_off + (off - d->seg_start) :
				  prec_stream_offset(d->st, off);
}

/*
 * Sets @e's header: @type, @time and @tsc, the context, the offset where the
 * decoder is. Events are hot: only the header and the small union members
 * are cleared.
 */
static void head(struct ipt *d, struct prec_tev *e, enum prec_tev_type type, uint64_t time,
		 uint64_t tsc)
{
	memset(e, 0, offsetof(struct prec_tev, u) + 32);
	e->type = type;
	e->time = time;
	e->tsc = tsc;
	e->cpu = d->cpu;
	e->pid = d->pid;
	e->tid = d->tid;
	if (dec_open(d)) {
		uint64_t off = 0;

		dec_offset(d, &off);
		e->offset = stream_off(d, off);
	}
}

/* opts.counts: queues the counts summed so far. */
static void agg_flush(struct ipt *d)
{
	if (!d->agg_open)
		return;
	d->agg_open = false;
	d->pushed++;
	*prec_evq_push(&d->q) = d->agg;
}

static struct prec_tev *push(struct ipt *d, enum prec_tev_type type)
{
	struct prec_tev *e;

	agg_flush(d);
	d->pushed++;
	e = prec_evq_push(&d->q);

	head(d, e, type, d->have_time ? d->time : 0, d->have_time ? d->tsc : 0);
	return e;
}

/*
 * opts.counts: the counts to add a block or branch of time @time (@tsc) to:
 * those summed so far when nothing else came between and the time, CPU and
 * thread are the same, else new ones (the others queued first).
 */
static struct prec_tev_counts *count_new(struct ipt *d, uint64_t time, uint64_t tsc)
{
	struct prec_tev *a = &d->agg;

	agg_flush(d);
	head(d, a, PREC_TEV_COUNTS, time, tsc);
	d->agg_open = true;
	return &a->u.counts;
}

/* Called twice a block: the common case inline. */
static inline struct prec_tev_counts *count_at(struct ipt *d, uint64_t time, uint64_t tsc)
{
	struct prec_tev *a = &d->agg;

	if (d->agg_open && a->time == time && a->tsc == tsc && a->cpu == d->cpu &&
	    a->pid == d->pid && a->tid == d->tid)
		return &a->u.counts;
	return count_new(d, time, tsc);
}

static int mode_bits(enum pt_exec_mode m);

/*
 * opts.fn_blocks: block @b, added to the block open when it follows it with
 * nothing between, at the same time and in the same context, and starts in
 * the function (symbol) where that one starts; else the block opened.
 */
static void fn_block(struct ipt *d, const struct pt_block *b)
{
	struct prec_tev *a = &d->agg;
	uint64_t time = d->have_time ? d->time : 0, tsc = d->have_time ? d->tsc : 0;
	uint64_t last = a->u.block.end_time ? a->u.block.end_time : a->time;
	uint8_t mode = (uint8_t)mode_bits(b->mode);
	bool same = d->fn_as == d->as && b->ip >= d->fn_lo && b->ip < d->fn_hi, resolved = false;
	struct prec_loc loc;

	/* where no symbol is, blocks of one object are of one function (the views' "[object]") */
	if (!same && d->fn_nosym && d->fn_as == d->as) {
		prec_aspace_resolve(d->as, b->ip, &loc);
		resolved = true;
		same = !loc.sym && loc.dso == d->fn_dso;
	}
	if (d->agg_open && same &&
	    ((last == time && (a->u.block.end_time || a->tsc == tsc)) ||
	     (d->opts.fn_span && time > last)) &&
	    a->cpu == d->cpu && a->pid == d->pid && a->tid == d->tid &&
	    a->u.block.mode == mode && a->u.block.ninsn <= UINT32_MAX - b->ninsn) {
		a->u.block.end_ip = b->end_ip;
		a->u.block.ninsn += b->ninsn;
		if (time > a->time)
			a->u.block.end_time = time;
		return;
	}
	agg_flush(d);
	head(d, a, PREC_TEV_BLOCK, time, tsc);
	a->u.block.ip = b->ip;
	a->u.block.end_ip = b->end_ip;
	a->u.block.ninsn = b->ninsn;
	a->u.block.mode = mode;
	d->agg_open = true;
	if (same)
		return;
	d->fn_as = d->as;
	d->fn_lo = d->fn_hi = 0;
	d->fn_nosym = false;
	if (!d->as)
		return;
	if (!resolved)
		prec_aspace_resolve(d->as, b->ip, &loc);
	if (loc.sym && loc.sym->size) {
		d->fn_lo = b->ip - loc.symoff;
		d->fn_hi = d->fn_lo + loc.sym->size;
	} else if (!loc.sym) {
		d->fn_nosym = true;
		d->fn_dso = loc.dso;
	}
}

/*
 * The offset of the OVF packet of an overflow event: the last one between
 * the last PSB and @cur, where the decoder is (it has read on to the FUP or
 * TIP.PGE the overflow binds to). @cur when none is found.
 */
static uint64_t ovf_offset(struct ipt *d, uint64_t cur)
{
	struct pt_packet_decoder *pk = pt_pkt_alloc_decoder(&d->cfg);
	uint64_t sync = 0, off = 0, found = cur;
	struct pt_packet p;

	if (!pk)
		return cur;
	if (dec_sync_offset(d, &sync) >= 0 && pt_pkt_sync_set(pk, sync) >= 0) {
		while (pt_pkt_get_offset(pk, &off) >= 0 && off < cur &&
		       pt_pkt_next(pk, &p, sizeof(p)) >= 0)
			if (p.type == ppt_ovf)
				found = off;
	}
	pt_pkt_free_decoder(pk);
	return found;
}

/*
 * An overflow that resolved at a PSB: the OVF is followed by a PSB+ whose
 * FUP tells where tracing goes on. libipt looks for the FUP an OVF binds
 * to only up to the next PSB (pt_qry_find_ovf_fup via pt_pkt_find_ovf_fup,
 * which stops there) and then takes tracing as disabled, so the block
 * decoder would run on from no IP. Sync at that PSB instead, as a decoder
 * does after any loss of sync; the PSB+ gives the IP, which is returned
 * (0 when the OVF is not followed by a PSB+ with a FUP, or on failure).
 */
static uint64_t ovf_resync(struct ipt *d, uint64_t ovf)
{
	struct pt_packet_decoder *pk = pt_pkt_alloc_decoder(&d->cfg);
	struct pt_packet p;
	uint64_t at = 0, ip = 0;
	int r, n = 0;

	if (!pk)
		return 0;
	if (pt_pkt_sync_set(pk, ovf) >= 0 && pt_pkt_next(pk, &p, sizeof(p)) >= 0 &&
	    p.type == ppt_ovf && pt_pkt_get_offset(pk, &at) >= 0 &&
	    pt_pkt_next(pk, &p, sizeof(p)) >= 0 && p.type == ppt_psb) {
		/* The PSB reset the last IP: a FUP in its PSB+ is relative to 0. */
		while (n++ < 64 && pt_pkt_next(pk, &p, sizeof(p)) >= 0 && p.type != ppt_psbend) {
			if (p.type != ppt_fup || p.payload.ip.ipc == pt_ipc_suppressed)
				continue;
			ip = p.payload.ip.ip;
			if (p.payload.ip.ipc == pt_ipc_sext_48 && (ip & (1ULL << 47)))
				ip |= ~((1ULL << 48) - 1);
		}
	}
	pt_pkt_free_decoder(pk);
	if (!ip)
		return 0;
	r = dec_sync_set(d, at);
	if (r < 0)
		return 0;
	d->status = r;
	return ip;
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

	if (!d->sb_t_set || t > d->sb_t)
		d->sb_t = t;
	d->sb_t_set = true;
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

static void update_context_slow(struct ipt *d, bool force)
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
		d->as = as;
		if (d->use_walk) {
			if (d->walk)
				prec_walk_set_aspace(d->walk, as);
		} else {
			struct pt_image *img = ipt_image(d, as);

			if (img && d->dec)
				pt_blk_set_image(d->dec, img);
		}
	}
	if (!force && d->tid != old_tid && old_tid >= 0) {
		struct prec_tev *e = push(d, PREC_TEV_SWITCH);

		e->u.sw.prev_pid = old_pid;
		e->u.sw.prev_tid = old_tid;
		/* A new thread: the branch pending from the old one is not its. */
		d->pend = false;
	}
}

/* Called before each block: whether the context may have changed, inline. */
static inline void update_context(struct ipt *d, bool force)
{
	if (!force && d->have_time && d->time < d->ctx_until)
		return;
	update_context_slow(d, force);
}

/* ---- branch-site decoding ---- */

static size_t icache_slot(const struct ipt *d, uint64_t ip)
{
	return (size_t)((ip ^ (ip >> 17) ^ (uintptr_t)d->as) * 0x9e3779b97f4a7c15ull >>
			(64 - d->ic_bits));
}

/* insn_info() when the cache does not have @ip (in slot @e): decoded. */
static const struct icache_ent *insn_decode(struct ipt *d, uint64_t ip, struct icache_ent *e)
{
	uint8_t buf[16];
	cs_insn *insn = NULL;
	size_t n;

	if (d->ic_bits < ICACHE_BITS && ++d->ic_misses > (size_t)1 << d->ic_bits) {
		unsigned bits = PREC_MIN(d->ic_bits + 2, ICACHE_BITS);
		struct icache_ent *ic = calloc((size_t)1 << bits, sizeof(*ic));

		d->ic_misses = 0;
		if (ic) {
			free(d->ic);
			d->ic = ic;
			d->ic_bits = bits;
			e = &d->ic[icache_slot(d, ip)];
		}
	}
	memset(e, 0, sizeof(*e));
	e->ip = ip;
	e->as = d->as;
	if (!d->cs_ok || !d->as)
		return e;
	n = prec_aspace_read(d->as, ip, buf, 15);
	/* Most branch sites are these, and capstone costs thousands of instructions a call. */
	if (n && (e->len = (uint8_t)prec_x86_jcc_len(buf, n))) {
		e->kind = PREC_BR_COND;
		return e;
	}
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

/* The instruction at @ip: its length and branch kind, from the cache of the decoded ones. */
static inline const struct icache_ent *insn_info(struct ipt *d, uint64_t ip)
{
	struct icache_ent *e = &d->ic[icache_slot(d, ip)];

	if (e->ip == ip && e->as == d->as && e->len)
		return e;
	return insn_decode(d, ip, e);
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
 * The time of the pending branch's timestamp (d->pend_tsc, not 0): mostly
 * the current one, whose time is known, so no conversion.
 */
static uint64_t pend_time(const struct ipt *d)
{
	if (d->have_time && d->pend_tsc == d->tsc)
		return d->time;
	return prec_session_tsc_to_time(d->s, d->pend_tsc);
}

/* opts.counts adds the taken branch of kind @kind (target @to) to the counts of its time. */
static enum prec_br_kind count_branch(struct ipt *d, enum prec_br_kind kind, uint64_t to)
{
	uint64_t tsc = d->pend_tsc ? d->pend_tsc : d->have_time ? d->tsc : 0;
	struct prec_tev_counts *c = count_at(d, d->pend_tsc ? pend_time(d) :
						    d->have_time ? d->time : 0, tsc);

	c->branches++;
	c->calls += kind == PREC_BR_CALL;
	c->rets += kind == PREC_BR_RETURN;
	c->syscalls += kind == PREC_BR_SYSCALL;
	c->interrupts += kind == PREC_BR_INTERRUPT && to;
	return kind;
}

/*
 * resolve_pending() when all branches are counted (--stats): the
 * instruction is looked up only where its class does not tell enough
 * (whether a conditional branch was taken, what an unclassified one is),
 * as the counts do not tell indirect jumps or calls from direct ones.
 */
static enum prec_br_kind count_pending(struct ipt *d, enum prec_br_kind kind, uint64_t to)
{
	if (kind == PREC_BR_COND || kind == PREC_BR_NONE || kind == PREC_BR_SYSCALL) {
		const struct icache_ent *ie = insn_info(d, d->pend_from);

		if (kind != PREC_BR_COND)
			kind = ie->kind ? ie->kind : kind;
		if (kind == PREC_BR_NONE ||
		    (kind == PREC_BR_COND && to && ie->len && to == d->pend_from + ie->len))
			return PREC_BR_NONE;
	}
	return count_branch(d, kind, to);
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
	if (d->opts.counts && !d->opts.branch_kinds)
		return count_pending(d, kind, to);
	/*
	 * Jumps not wanted: not even their instruction looked up (callers
	 * want to know of a system call only). A direct jump's class may
	 * still turn out to be an indirect one.
	 */
	if (d->opts.branch_kinds &&
	    ((kind == PREC_BR_COND && !(d->opts.branch_kinds & 1u << PREC_BR_COND)) ||
	     (kind == PREC_BR_JUMP &&
	      !(d->opts.branch_kinds & (1u << PREC_BR_JUMP | 1u << PREC_BR_INDIRECT)))))
		return kind;
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
	if (d->opts.branch_kinds && !(d->opts.branch_kinds & (1u << kind)))
		return kind;
	if (d->opts.counts)
		return count_branch(d, kind, to);
	e = push(d, PREC_TEV_BRANCH);
	if (d->pend_tsc) {
		e->tsc = d->pend_tsc;
		e->time = pend_time(d);
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

static const uint8_t psb_bytes[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
				       2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82 };

/*
 * The data position of the first PSB that starts in [@from, @limit) and
 * lies in [@from, @hi), or @hi when there is none (or on an error: *@err).
 */
static size_t psb_find(struct ipt *d, size_t from, size_t limit, size_t hi, int *err)
{
	size_t pos = from;

	*err = 0;
	if (limit > hi)
		limit = hi;
	while (pos < limit) {
		size_t n = PREC_MIN((size_t)PSB_SCAN + sizeof(psb_bytes), hi - pos);
		const uint8_t *p, *m;

		*err = prec_stream_read(&d->rd, pos, pos + n, &p);
		if (*err)
			return hi;
		m = memmem(p, n, psb_bytes, sizeof(psb_bytes));
		if (m && pos + (size_t)(m - p) < limit)
			return pos + (size_t)(m - p);
		if (m || pos + n >= hi)
			break;
		pos += n - (sizeof(psb_bytes) - 1);
	}
	return hi;
}

/* The data position just past the PSBEND of the PSB+ at @psb, or 0. */
static size_t psbplus_end(struct ipt *d, size_t psb, size_t hi, int *err)
{
	size_t n = PREC_MIN((size_t)PSBPLUS_MAX, hi - psb), end = 0;
	struct pt_config cfg = d->cfg;
	struct pt_packet_decoder *pk;
	const uint8_t *p;

	*err = prec_stream_read(&d->rd, psb, psb + n, &p);
	if (*err)
		return 0;
	cfg.begin = (uint8_t *)p;
	cfg.end = (uint8_t *)p + n;
	pk = pt_pkt_alloc_decoder(&cfg);
	if (!pk)
		return 0;
	if (pt_pkt_sync_set(pk, 0) >= 0) {
		struct pt_packet pkt;

		while (pt_pkt_next(pk, &pkt, sizeof(pkt)) >= 0) {
			uint64_t off;

			if (pkt.type != ppt_psbend)
				continue;
			if (pt_pkt_get_offset(pk, &off) >= 0)
				end = psb + (size_t)off;
			break;
		}
	}
	pt_pkt_free_decoder(pk);
	return end;
}

/*
 * Data [@lo, @hi) as libipt's begin and end: in place for a stream the
 * session holds, else from the first PSB in it on (nothing before it is
 * decoded), at most PSBPLUS_MAX * 16 bytes. For seg_first_time().
 */
static int window_bytes(struct ipt *d, size_t lo, size_t hi, uint8_t **b, uint8_t **e)
{
	const uint8_t *p;
	int err = 0;

	if (!d->windowed) {
		*b = d->st->data + lo;
		*e = d->st->data + hi;
		return 0;
	}
	lo = psb_find(d, lo, hi, hi, &err);
	if (err || lo >= hi)
		return -ENOENT;
	hi = PREC_MIN(hi, lo + (size_t)PSBPLUS_MAX * 16);
	err = prec_stream_read(&d->rd, lo, hi, &p);
	if (err)
		return err;
	*b = (uint8_t *)p;
	*e = (uint8_t *)p + (hi - lo);
	return 0;
}

/*
 * The perf time of the first timestamp in data [@lo, @hi) (a PSB+ carries
 * one when TSC packets are on), or 0: a gap's end, known before its segment
 * is decoded.
 */
static uint64_t seg_first_time(struct ipt *d, size_t lo, size_t hi)
{
	struct pt_config cfg = d->cfg;
	struct pt_query_decoder *q;
	uint64_t tsc = 0, t = 0;
	uint32_t lost_mtc, lost_cyc;

	if (hi <= lo || !prec_session_machine(d->s)->tsc)
		return 0;
	if (window_bytes(d, lo, hi, &cfg.begin, &cfg.end))
		return 0;
	q = pt_qry_alloc_decoder(&cfg);
	if (!q)
		return 0;
	/* The PSB+ comes as events; the first with a timestamp is the one. */
	for (int r = pt_qry_sync_forward(q, NULL), n = 0; r >= 0 && n < 64; n++) {
		struct pt_event ev;

		if (pt_qry_time(q, &tsc, &lost_mtc, &lost_cyc) >= 0 && tsc) {
			t = prec_session_tsc_to_time(d->s, tsc);
			break;
		}
		if (!(r & pts_event_pending))
			break;
		r = pt_qry_event(q, &ev, sizeof(ev));
	}
	pt_qry_free_decoder(q);
	return t;
}

/*
 * Where the window that starts at @from ends (*@end) and where the next
 * one starts (*@next, seg_end for none; d->next_splice says how).
 */
static int window_cut(struct ipt *d, size_t from, size_t *end, size_t *next)
{
	size_t hi = d->seg_end, lim = d->cut_hi ? d->cut_hi : hi;
	size_t at = from + d->win_size, far = at + PSB_FAR, cut;
	int err = 0;

	*end = *next = hi;
	d->next_splice = false;
	if (d->cut_hi && lim - from <= d->win_size)
		goto at_lim;
	if ((!d->windowed && !d->cut_hi) || hi - from <= d->win_size)
		return 0;
	for (cut = psb_find(d, at, far, lim, &err); !err && cut < lim;
	     cut = psb_find(d, cut + 1, far, lim, &err)) {
		size_t e = psbplus_end(d, cut, hi, &err);

		if (err)
			return err;
		if (e) {
			*end = e;
			*next = cut;
			d->next_splice = true;
			return 0;
		}
	}
	if (!err && d->cut_hi && lim <= far)
		goto at_lim;
	if (!err && far < hi)
		*end = *next = far;
	return err;
at_lim:
	/* The part ends at its cut: the next part's decoder starts there. */
	*end = d->cut_end;
	*next = lim;
	d->next_splice = true;
	return 0;
}

/* Sets the block decoder up over data [@from, window end). */
static int start_window(struct ipt *d, size_t from)
{
	size_t end, next;
	const uint8_t *p;
	struct pt_image *img;
	int err;

	dec_close(d, false);
	d->splice_sync = d->next_splice && from == d->win_next;
	err = window_cut(d, from, &end, &next);
	if (!err && d->windowed)
		err = prec_stream_read(&d->rd, from, end, &p);
	else
		p = d->st->data + from;
	prec_stream_reader_trim(&d->rd);
	if (err)
		return err;
	d->win_lo = from;
	d->win_next = next;
	d->cfg.begin = (uint8_t *)p;
	d->cfg.end = (uint8_t *)p + (end - from);
	if (d->use_walk) {
		if (!d->walk)
			d->walk = prec_walk_alloc(&d->cfg);
		else if (prec_walk_retarget(d->walk, &d->cfg) < 0)
			dec_close(d, true);
		if (!d->walk)
			return -ENOMEM;
		prec_walk_set_aspace(d->walk, d->as);
		d->state = S_SYNC;
		return 0;
	}
	d->dec = pt_blk_alloc_decoder(&d->cfg);
	if (!d->dec)
		return -ENOMEM;
	img = d->as ? ipt_image(d, d->as) : NULL;
	if (img)
		pt_blk_set_image(d->dec, img);
	d->state = S_SYNC;
	return 0;
}

/* The bytes of the window are used up: the next window, or the next segment. */
static void window_end(struct ipt *d)
{
	if (d->win_next < d->seg_end) {
		if (!d->next_splice)
			d->pend = false;
		d->state = S_WIN;
		return;
	}
	d->pend = false;
	d->state = S_SEG;
}

/* A segment without a PSB: nothing to decode, and an error says so. */
static void no_psb_error(struct ipt *d, size_t len)
{
	struct prec_tev *e = push(d, PREC_TEV_ERROR);

	e->u.err.code = PREC_DE_NOSYNC;
	snprintf(e->u.err.msg, sizeof(e->u.err.msg),
		 "no PSB in %zu bytes of trace: nothing to decode", len);
	e->offset = prec_stream_offset(d->st, d->seg_start);
}

static int start_segment(struct ipt *d)
{
	size_t lo, hi, first;
	int err = 0;

	dec_close(d, false);
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
			e->u.gap.end_time = seg_first_time(d, lo, hi);
			d->pend = false;
		}
		d->seg++;
		if (hi > lo)
			break;
	}
	d->seg_start = lo;
	d->seg_end = hi;
	d->seg_off = prec_stream_offset(d->st, lo);
	d->synced_seg = false;
	d->fail_count = 0;
	d->next_splice = false;
	first = lo;
	if (d->windowed) {
		/* Nothing before the first PSB is decoded: the first window starts there. */
		first = psb_find(d, lo, hi, hi, &err);
		if (err)
			return err;
		if (first >= hi) {
			no_psb_error(d, hi - lo);
			d->state = S_SEG;
			return 0;
		}
	}
	return start_window(d, first);
}

/* Whether [@b, @e) holds a PSB packet (02 82, eight times). */
static bool has_psb(const uint8_t *b, const uint8_t *e)
{
	return b && e > b && memmem(b, (size_t)(e - b), psb_bytes, sizeof(psb_bytes));
}

static void do_sync(struct ipt *d)
{
	int r = dec_sync_forward(d);
	uint64_t off = 0;

	/* The first sync of a window that carries the decode on keeps the branch. */
	if (!d->splice_sync)
		d->pend = false;
	d->splice_sync = false;
	if (r >= 0) {
		d->status = r;
		d->synced_seg = true;
		d->state = S_RUN;
		return;
	}
	if (r == -pte_eos) {
		/* A PSB+ at the very end leaves nothing to decode, and nothing is wrong. */
		if (!d->synced_seg && !has_psb(d->cfg.begin, d->cfg.end))
			no_psb_error(d, (size_t)(d->cfg.end - d->cfg.begin));
		window_end(d);
		return;
	}
	/* A broken PSB+: report it and look for the next PSB, making progress. */
	dec_offset(d, &off);
	off += d->win_lo;
	push_error(d, r, 0);
	if (d->fail_count && off <= d->fail_off)
		d->state = S_SEG;
	d->fail_off = off;
	d->fail_count++;
}

static void on_error(struct ipt *d, int r, uint64_t ip)
{
	/*
	 * No code at @ip, where the pending branch went (an indirect call or
	 * jump to code with no image): the branch is known from the trace, so
	 * it comes first, then the error.
	 */
	if (ip && pt_errcode(r) == pte_nomap)
		resolve_pending(d, ip);
	if (r == -pte_eos) {
		window_end(d);
		return;
	}
	d->pend = false;
	push_error(d, r, ip);
	d->state = S_SYNC;
}

static void push_hw(struct ipt *d, int kind, uint64_t ip, uint64_t val, uint32_t a, uint32_t b)
{
	struct prec_tev *e = push(d, PREC_TEV_HW);

	e->u.hw.kind = kind;
	e->u.hw.ip = ip;
	e->u.hw.val = val;
	e->u.hw.a = a;
	e->u.hw.b = b;
}

/*
 * The events of packets that carry no control flow: PTWRITE, the power
 * events (MWAIT, PWRE, PWRX, EXSTOP), CBR, a CR3 (PIP) or VMCS change. They
 * are named in --events; the instruction flow goes on unchanged.
 */
/*
 * Whether a value a packet gives is only restated: a status update (in a
 * PSB+) of the value last reported. Records @v as the last value.
 */
static bool restated(uint64_t *seen, uint64_t v, bool status)
{
	bool same = *seen == v + 1;

	*seen = v + 1;
	return status && same;
}

static void hw_event(struct ipt *d, const struct pt_event *ev)
{
	uint64_t ip = 0;

	switch (ev->type) {
	case ptev_ptwrite:
		ip = ev->ip_suppressed ? 0 : ev->variant.ptwrite.ip;
		push_hw(d, PREC_HW_PTWRITE, ip, ev->variant.ptwrite.payload,
			ev->variant.ptwrite.size, 0);
		break;
	case ptev_mwait:
		ip = ev->ip_suppressed ? 0 : ev->variant.mwait.ip;
		push_hw(d, PREC_HW_MWAIT, ip, 0, ev->variant.mwait.hints, ev->variant.mwait.ext);
		break;
	case ptev_pwre:
		push_hw(d, PREC_HW_PWRE, 0, ev->variant.pwre.hw, ev->variant.pwre.state,
			ev->variant.pwre.sub_state);
		break;
	case ptev_pwrx:
		push_hw(d, PREC_HW_PWRX, 0,
			(ev->variant.pwrx.interrupt ? PREC_PWRX_INTERRUPT : 0) |
				(ev->variant.pwrx.store ? PREC_PWRX_STORE : 0) |
				(ev->variant.pwrx.autonomous ? PREC_PWRX_AUTONOMOUS : 0),
			ev->variant.pwrx.last, ev->variant.pwrx.deepest);
		break;
	case ptev_exstop:
		push_hw(d, PREC_HW_EXSTOP, ev->ip_suppressed ? 0 : ev->variant.exstop.ip, 0, 0, 0);
		break;
	case ptev_cbr:
		if (restated(&d->seen_cbr, ev->variant.cbr.ratio, ev->status_update))
			break;
		push_hw(d, PREC_HW_CBR, 0, 0, ev->variant.cbr.ratio, 0);
		break;
	case ptev_paging:
	case ptev_async_paging: {
		bool async = ev->type == ptev_async_paging;
		uint64_t cr3 = async ? ev->variant.async_paging.cr3 : ev->variant.paging.cr3;

		if (restated(&d->seen_cr3, cr3, ev->status_update))
			break;
		push_hw(d, PREC_HW_PAGING, async ? ev->variant.async_paging.ip : 0, cr3,
			async ? ev->variant.async_paging.non_root : ev->variant.paging.non_root, 0);
		break;
	}
	case ptev_vmcs:
	case ptev_async_vmcs: {
		bool async = ev->type == ptev_async_vmcs;
		uint64_t base = async ? ev->variant.async_vmcs.base : ev->variant.vmcs.base;

		if (restated(&d->seen_vmcs, base, ev->status_update))
			break;
		push_hw(d, PREC_HW_VMCS, async ? ev->variant.async_vmcs.ip : 0, base, 0, 0);
		break;
	}
	default:
		break;
	}
}

/*
 * A TSX abort is a branch from the aborted IP to the abort handler, which
 * the TIP after the abort's FUP gives (libipt: a tsx event, then an async
 * branch). Emitted with that target, or with none when something else
 * comes first (a TIP.PGD: the handler is not traced).
 */
static void flush_abort(struct ipt *d, uint64_t to)
{
	struct prec_tev *e;

	if (!d->tx_abort)
		return;
	d->tx_abort = false;
	e = push(d, PREC_TEV_BRANCH);
	e->u.branch.from = d->tx_abort_ip;
	e->u.branch.to = to;
	e->u.branch.kind = PREC_BR_TX_ABORT;
	e->u.branch.flags = to ? PREC_BRF_INDIRECT : 0;
}

static void handle_event(struct ipt *d, const struct pt_event *ev)
{
	struct prec_tev *e;
	enum prec_br_kind k;

	if (ev->type == ptev_async_branch && d->tx_abort &&
	    ev->variant.async_branch.from == d->tx_abort_ip) {
		flush_abort(d, ev->variant.async_branch.to);
		return;
	}
	flush_abort(d, 0);

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
	case ptev_overflow: {
		uint64_t cur = 0;

		d->pend = false;
		e = push(d, PREC_TEV_OVERFLOW);
		e->u.trace.ip = ev->ip_suppressed ? 0 : ev->variant.overflow.ip;
		dec_offset(d, &cur);
		cur = ovf_offset(d, cur);
		e->offset = stream_off(d, cur);
		if (ev->ip_suppressed)
			e->u.trace.ip = ovf_resync(d, cur);
		break;
	}
	case ptev_exec_mode:
		d->mode = ev->variant.exec_mode.mode;
		break;
	case ptev_tsx:
		if (ev->variant.tsx.aborted) {
			resolve_pending(d, ev->variant.tsx.ip);
			d->tx_abort = true;
			d->tx_abort_ip = ev->variant.tsx.ip;
		} else if (!ev->status_update) {
			push_hw(d, ev->variant.tsx.speculative ? PREC_HW_TSX_BEGIN :
								 PREC_HW_TSX_COMMIT,
				ev->ip_suppressed ? 0 : ev->variant.tsx.ip, 0, 0, 0);
		}
		break;
	default:
		hw_event(d, ev);
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

	flush_abort(d, 0);
	/* resolve_pending() of a conditional branch the view does not want, inline. */
	if (d->pend && d->pend_class == ptic_cond_jump && d->skip_cond)
		d->pend = false;
	else
		resolve_pending(d, b->ip);
	if (d->opts.counts) {
		struct prec_tev_counts *c = count_at(d, d->have_time ? d->time : 0,
							  d->have_time ? d->tsc : 0);

		c->blocks++;
		c->insns += b->ninsn;
	} else if (d->opts.fn_blocks) {
		fn_block(d, b);
	} else if (!d->opts.no_blocks) {
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

/* Stops the stream's decode (or resyncs, for a loop) with an error at @ip. */
static void no_progress_error(struct ipt *d, uint64_t ip, bool loop)
{
	struct prec_tev *e = push(d, PREC_TEV_ERROR);

	e->u.err.code = PREC_DE_CONTEXT;
	e->u.err.ip = ip;
	if (loop)
		snprintf(e->u.err.msg, sizeof(e->u.err.msg),
			 "endless loop at %#" PRIx64 ": code repeats with no trace", ip);
	else
		snprintf(e->u.err.msg, sizeof(e->u.err.msg),
			 "%" PRIu64 " blocks without trace: stream stopped", d->np_total);
	d->pend = false;
	d->np_anchor = 0;
	d->state = loop ? S_SYNC : S_DONE;
}

/* check_progress() for block @b, which consumed no trace: the bounds above. */
static void no_progress(struct ipt *d, const struct pt_block *b)
{
	if (!b->ninsn)
		return;
	if (++d->np_total > d->np_budget) {
		no_progress_error(d, b->end_ip, false);
		return;
	}
	if (d->np_anchor == b->ip) {
		no_progress_error(d, b->ip, true);
		return;
	}
	if (!d->np_anchor) {
		d->np_anchor = b->ip;
		d->np_power = 1;
		d->np_lam = 0;
	} else if (++d->np_lam >= d->np_power) {
		d->np_anchor = b->ip;
		d->np_power *= 2;
		d->np_lam = 0;
	}
}

/*
 * After block @b: did it consume trace (a packet, or a TNT bit for a
 * conditional branch or a compressed return)? If not, the bounds above.
 * Inline: it runs after every block, and mostly finds progress.
 */
static inline __attribute__((always_inline)) void check_progress(struct ipt *d,
								 const struct pt_block *b)
{
	uint64_t off = 0;

	dec_offset(d, &off);
	off += d->win_lo;
	if (off != d->last_off || (!b->truncated && (b->iclass == ptic_cond_jump ||
						     b->iclass == ptic_return))) {
		d->last_off = off;
		d->np_anchor = 0;
		return;
	}
	no_progress(d, b);
}

/*
 * The trace ends right after the packet that gave the pending branch its
 * target (the TIP of an indirect branch, a taken TNT bit): libipt holds
 * that target as its next IP, which one more block query returns as the
 * block's start. The branch is proven and is emitted; that block is not
 * (nothing proves it ran) and neither is the error it may end in.
 */
static void resolve_final(struct ipt *d)
{
	struct pt_block b;
	int r;

	memset(&b, 0, sizeof(b));
	r = dec_next(d, &b);
	if (b.ninsn || (r < 0 && pt_errcode(r) == pte_nomap && b.ip))
		resolve_pending(d, b.ip);
}

static void resume_note(struct ipt *d);

/* Blocks step() and count_run() decode at most in one call. */
#define STEP_BLOCKS 4096
#define COUNT_RUN_BLOCKS STEP_BLOCKS

/*
 * step() for --stats, after a block: the blocks that follow it before
 * anything else comes (an event, an error, the end of the trace), counted
 * in one loop as handle_block(), resolve_pending() and check_progress()
 * count them. Nothing between them changes the time or the context
 * (update_context() gives the same until an event), so they add to the
 * counts that block opened.
 */
static void count_run(struct ipt *d)
{
	struct prec_tev_counts *c = &d->agg.u.counts;
	uint64_t pushed = d->pushed, pend_tsc = d->have_time ? d->tsc : 0;
	struct pt_block b;
	int r;

	if (d->use_walk)
		memset(&b, 0, sizeof(b)); /* once: the walk sets what is read */
	for (unsigned n = 0; n < COUNT_RUN_BLOCKS; n++) {
		if (!d->use_walk)
			memset(&b, 0, sizeof(b));
		r = dec_next(d, &b);
		if (b.ninsn) {
			if (d->pend) {
				d->pend = false;
				switch (d->pend_class) {
				case ptic_call:
					c->branches++;
					c->calls++;
					break;
				case ptic_return:
					c->branches++;
					c->rets++;
					break;
				case ptic_jump:
				case ptic_far_return:
				case ptic_far_jump:
					c->branches++;
					break;
				case ptic_cond_jump: {
					const struct icache_ent *ie = insn_info(d, d->pend_from);

					/* Taken unless the block starts right after it. */
					c->branches += !(ie->len && b.ip == d->pend_from + ie->len);
					break;
				}
				default:
					count_pending(d, class_kind(d->pend_class), b.ip);
				}
			}
			c->blocks++;
			c->insns += b.ninsn;
			d->last_ip = b.end_ip;
			if (b.iclass != ptic_other && b.iclass != ptic_ptwrite) {
				d->pend = true;
				d->pend_from = b.end_ip;
				d->pend_tsc = pend_tsc;
				d->pend_class = b.iclass;
			}
		}
		if (r < 0) {
			on_error(d, r, b.ninsn ? 0 : b.ip);
			return;
		}
		d->status = r;
		check_progress(d, &b);
		if (d->pushed != pushed || d->state != S_RUN || (r & (pts_event_pending | pts_eos)))
			return;
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
	case S_WIN:
		resume_note(d);
		return start_window(d, d->win_next);
	case S_SYNC:
		do_sync(d);
		return 0;
	case S_DONE:
		return 0;
	case S_RUN:
		break;
	}
	if (d->status & pts_event_pending) {
		r = dec_event(d, &ev);
		if (r < 0) {
			on_error(d, r, 0);
			return 0;
		}
		d->status = r;
		handle_event(d, &ev);
		return 0;
	}
	/*
	 * The trace is used up (libipt's pts_eos, which ptxed ends on with "[end
	 * of trace]"): what libipt would decode next is not proven by any
	 * packet, and running on into it ends in bogus errors. The segment ends.
	 */
	if (d->status & pts_eos) {
		flush_abort(d, 0);
		/* The branch pending at a window's end waits for the next window's trace. */
		if (d->pend && !(d->win_next < d->seg_end && d->next_splice))
			resolve_final(d);
		window_end(d);
		return 0;
	}
	/*
	 * Blocks. For a view without blocks (a call trace), one that queues
	 * nothing is followed here by the next, as the next call would, with
	 * no round through the queue; counted (--stats), by count_run().
	 */
	for (unsigned n = 0;; n++) {
		uint64_t pushed = d->pushed;

		update_context(d, false);
		if (!d->use_walk || !n)
			memset(&b, 0, sizeof(b)); /* the walk sets what is read */
		r = dec_next(d, &b);
		/* Blocks decoded before an error are still valid. */
		if (b.ninsn)
			handle_block(d, &b);
		if (r < 0) {
			on_error(d, r, b.ninsn ? 0 : b.ip);
			return 0;
		}
		d->status = r;
		check_progress(d, &b);
		if (d->state != S_RUN || (r & (pts_event_pending | pts_eos)))
			return 0;
		if (d->opts.counts && !d->opts.branch_kinds && d->agg_open && !d->tx_abort) {
			count_run(d);
			return 0;
		}
		if ((!d->opts.no_blocks && !d->opts.fn_blocks) || d->pushed != pushed ||
		    n >= STEP_BLOCKS)
			return 0;
	}
}

/* ---- parallel decoding (-j) ----
 *
 * A stream is cut into parts at PSBs (CHUNK_BYTES of trace apart, the first
 * of each segment starting where the segment does); workers decode the parts
 * at once, each into a buffer of events, and the stream's own decoder hands
 * the buffers out in order. A part ends as a window does at its cut (it
 * takes in the PSB+ there, and leaves the branch pending before it to the
 * next part), so the events are those of one pass, provided each part starts
 * with the decoder state one pass has at its cut: what the tracer carries
 * over a PSB (nothing), and what this decoder does (the branch pending, the
 * time, the thread, the status values reported, the no-progress counts).
 * A worker finds that state by decoding from the PSB before the cut first
 * (the warm-up, its events dropped); the stream's decoder checks it against
 * the state the part before ended with, and on any difference decodes the
 * part again from that state (so does it for a segment after a gap, which
 * no warm-up can reach).
 */
#define CHUNK_BYTES ((size_t)256 << 10)
/* Smaller windows (--buffer) make smaller parts: at most this many windows each. */
#define CHUNK_WINDOWS 4
/*
 * Shards: parts small enough that each of N shards gets about this many of
 * the trace's bytes (so a short trace still spreads over all of them), but
 * never under SHARD_PART_MIN.
 */
#define SHARD_PARTS 4
#define SHARD_PART_MIN ((size_t)16 << 10)

/* The decoder state that goes on over a cut. */
struct carry {
	uint64_t seen_cbr, seen_cr3, seen_vmcs;
	uint64_t fail_off, last_off, np_total, np_anchor, np_power, np_lam;
	uint64_t tsc, time, ctx_until, pend_from, pend_tsc, tx_abort_ip, last_ip;
	size_t seg, win_next, sb_idx;
	struct prec_aspace *as;
	enum st state;
	int fail_count, cpu, pid, tid;
	enum pt_insn_class pend_class;
	int mode;
	bool next_splice, synced_seg, have_time, pend, tx_abort;
};

/*
 * Its fields, each named as in struct ipt, in the order of a part file's
 * words (shard.h): S for a value, A for the address space (by its id).
 */
#define CARRY_FIELDS(S, A)                                                                  \
	S(seen_cbr) S(seen_cr3) S(seen_vmcs) S(fail_off) S(last_off) S(np_total) S(np_anchor) \
	S(np_power) S(np_lam) S(tsc) S(time) S(ctx_until) S(pend_from) S(pend_tsc)          \
	S(tx_abort_ip) S(last_ip) S(seg) S(win_next) S(sb_idx) A(as) S(state) S(fail_count)  \
	S(cpu) S(pid) S(tid) S(pend_class) S(mode) S(next_splice) S(synced_seg)              \
	S(have_time) S(pend) S(tx_abort)
#define CARRY_ONE(f) +1
_Static_assert(0 CARRY_FIELDS(CARRY_ONE, CARRY_ONE) == PREC_CARRY_WORDS,
	       "a part file holds one word per carried field");
#undef CARRY_ONE

static void carry_get(const struct ipt *d, struct carry *c)
{
	memset(c, 0, sizeof(*c)); /* the padding too: carry_same() compares bytes */
#define GET(f) c->f = d->f;
	CARRY_FIELDS(GET, GET)
#undef GET
	/*
	 * With no block to meet again, the cycle search's step counts are
	 * left from the last search and never read (no_progress() starts
	 * anew): a warm-up that saw other blocks without trace before the cut
	 * has the same state.
	 */
	if (!c->np_anchor)
		c->np_power = c->np_lam = 0;
}

static void carry_put(struct ipt *d, const struct carry *c)
{
#define PUT(f) d->f = c->f;
	CARRY_FIELDS(PUT, PUT)
#undef PUT
}

/* The same state, but for the no-progress count (a part counts its own). */
static bool carry_same(const struct carry *a, const struct carry *b)
{
	struct carry x = *a, y = *b;

	x.np_total = y.np_total = 0;
	return !memcmp(&x, &y, sizeof(x));
}

/*
 * @c as the words of a part file (shard.h): its address space by the id
 * that names the same space in another process's store of the same trace.
 * False when the space has none (no part file can carry the state then).
 */
static bool carry_pack(const struct ipt *d, const struct carry *c, uint64_t *w)
{
	uint64_t v[PREC_CARRY_WORDS];
	size_t i = 0, as_word = 0;

#define PACK(f) v[i++] = (uint64_t)(int64_t)c->f;
#define PACK_AS(f) as_word = i, v[i++] = prec_images_aspace_id(d->im, c->f);
	CARRY_FIELDS(PACK, PACK_AS)
#undef PACK
#undef PACK_AS
	memcpy(w, v, sizeof(v));
	return v[as_word] != UINT64_MAX;
}

/* The way back; false when the words name no address space of this trace. */
static bool carry_unpack(const struct ipt *d, const uint64_t *w, struct carry *c)
{
	size_t i = 0;
	bool ok = false;

	memset(c, 0, sizeof(*c));
#define UNPACK(f) c->f = (__typeof__(c->f))(int64_t)w[i++];
#define UNPACK_AS(f) c->f = prec_images_aspace_by_id(d->im, w[i++], &ok);
	CARRY_FIELDS(UNPACK, UNPACK_AS)
#undef UNPACK
#undef UNPACK_AS
	return ok;
}

/*
 * A part's events, as bytes: a type byte, then for a block or branch its
 * fields as variable-length deltas to what they most likely are (the
 * branch's source is the block's end, the next block starts at its
 * target), for counts (--stats: one per time step, a million in a 60 MB
 * trace) the numbers; any other event whole in @full. A CEV_CTX record gives the
 * header fields (time, tsc, cpu, pid, tid) of the events after it.
 */
enum { CEV_CTX = 200, CEV_FULL };

/* The predictors both sides keep. */
struct cev_pred {
	uint64_t off, b;
};

static inline uint8_t *put_u(uint8_t *w, uint64_t v)
{
	while (v >= 0x80) {
		*w++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*w++ = (uint8_t)v;
	return w;
}

static inline uint8_t *put_s(uint8_t *w, uint64_t v, uint64_t pred)
{
	int64_t d = (int64_t)(v - pred);

	return put_u(w, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
}

static inline const uint8_t *get_u(const uint8_t *r, uint64_t *v)
{
	uint64_t x = 0;
	unsigned sh = 0;

	while (*r & 0x80) {
		x |= (uint64_t)(*r++ & 0x7f) << sh;
		sh += 7;
	}
	*v = x | (uint64_t)*r++ << sh;
	return r;
}

static inline const uint8_t *get_s(const uint8_t *r, uint64_t *v, uint64_t pred)
{
	uint64_t z;

	r = get_u(r, &z);
	*v = pred + ((z >> 1) ^ (uint64_t)-(int64_t)(z & 1));
	return r;
}

enum part_kind {
	PART_FIRST,               /* a segment's start: start_segment() at seg */
	PART_MID,                 /* from the cut at lo in segment seg */
};

struct part {
	struct prec_job job;
	struct ipt *d;            /* the stream's decoder */
	enum part_kind kind;
	uint32_t index;           /* in the stream's plan (part files name it) */
	size_t seg, lo, hi;       /* hi: the next cut, 0: the segment's end */
	bool exact;               /* decoded from the state one pass has */
	bool warm_ok;             /* the warm-up reached lo (MID, not exact) */
	int err;
	struct carry entry, exit;
	uint8_t *buf;             /* the events (n bytes) */
	size_t n, cap, pos;
	struct cev_pred pred;
	struct prec_tev *full;
	size_t nfull, capfull;
};

#define PAR_MAX 64

struct par {
	struct prec_jobs *jobs;
	size_t ahead;             /* parts decoded ahead of the one handed out */
	struct part *ring[PAR_MAX];
	size_t head, n;
	struct part *cur_part;
	struct carry cur;         /* the state one pass has where the next part starts */
	/* the cutting: the next part's start */
	size_t seg_begin;         /* a FIRST part's seg */
	size_t pseg, pnext;       /* a MID part's segment and lo (pnext 0: none) */
	bool planned_all;
	size_t part_bytes;        /* the trace bytes between cuts */
	uint64_t hdr[5];          /* the header fields of the last CEV_CTX handed out */
	struct cev_pred pred;
	struct prec_tev ev;       /* the event handed out */
	/*
	 * What parts decoded before leave warm for the next (struct warm):
	 * their instruction caches and their libipt images with sections of
	 * their own, each used by one part at a time.
	 */
	pthread_mutex_t ic_mu;
	struct warm *pool[PAR_MAX];
	size_t npool;
	/* the buffers of parts handed out, for the next parts (no new pages to fault in) */
	struct part *spare[PAR_MAX + 2];
	size_t nspare;
	/* --merge: the parts of the shards, this stream's number, the next part's */
	struct prec_shards *shards;
	uint32_t stream, index;
};

static int part_grow(void **p, size_t *cap, size_t need, size_t size)
{
	void *n;
	size_t c = *cap ? *cap : 1024;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	n = realloc(*p, c * size);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = c;
	return 0;
}

/* Appends event @e to @pt; @hdr: the header fields of the last CEV_CTX. */
static int part_put(struct part *pt, const struct prec_tev *e, uint64_t *hdr)
{
	struct cev_pred *pr = &pt->pred;
	uint8_t *w;

	if (part_grow((void **)&pt->buf, &pt->cap, pt->n + 128, 1))
		return -ENOMEM;
	w = pt->buf + pt->n;
	/*
	 * field by field: a memcmp() of an array made for it took about
	 * 100 M instructions per worker of a --folded decode (callgrind)
	 */
	if (e->time != hdr[0] || e->tsc != hdr[1] || (uint32_t)e->tid != hdr[4] ||
	    (uint32_t)e->pid != hdr[3] || (uint32_t)e->cpu != hdr[2]) {
		hdr[0] = e->time, hdr[1] = e->tsc, hdr[2] = (uint32_t)e->cpu;
		hdr[3] = (uint32_t)e->pid, hdr[4] = (uint32_t)e->tid;
		*w++ = CEV_CTX;
		for (int i = 0; i < 5; i++)
			w = put_u(w, hdr[i]);
	}
	if (e->type == PREC_TEV_BLOCK) {
		*w++ = PREC_TEV_BLOCK;
		*w++ = e->u.block.mode;
		w = put_s(w, e->offset, pr->off);
		w = put_s(w, e->u.block.ip, pr->b);
		w = put_s(w, e->u.block.end_ip, e->u.block.ip);
		w = put_u(w, e->u.block.ninsn);
		w = put_u(w, e->u.block.end_time ? e->u.block.end_time - e->time : 0);
		pr->b = e->u.block.end_ip;
	} else if (e->type == PREC_TEV_BRANCH) {
		*w++ = PREC_TEV_BRANCH;
		*w++ = (uint8_t)e->u.branch.kind;
		*w++ = e->u.branch.insn_len;
		w = put_s(w, e->offset, pr->off);
		w = put_s(w, e->u.branch.from, pr->b);
		w = put_s(w, e->u.branch.to, e->u.branch.from);
		w = put_u(w, e->u.branch.flags);
		pr->b = e->u.branch.to;
	} else if (e->type == PREC_TEV_COUNTS) {
		const struct prec_tev_counts *c = &e->u.counts;

		*w++ = PREC_TEV_COUNTS;
		w = put_s(w, e->offset, pr->off);
		w = put_u(w, c->insns);
		w = put_u(w, c->blocks);
		w = put_u(w, c->branches);
		w = put_u(w, c->calls);
		w = put_u(w, c->rets);
		w = put_u(w, c->syscalls);
		w = put_u(w, c->interrupts);
	} else {
		if (part_grow((void **)&pt->full, &pt->capfull, pt->nfull + 1, sizeof(*pt->full)))
			return -ENOMEM;
		*w++ = CEV_FULL;
		w = put_u(w, pt->nfull);
		pt->full[pt->nfull++] = *e;
	}
	pr->off = e->offset;
	pt->n = (size_t)(w - pt->buf);
	return 0;
}

/* The next event of @pt into @e: 1, or 0 when none is left. */
static int part_get(struct par *p, struct part *pt, struct prec_tev *e)
{
	const uint8_t *r = pt->buf + pt->pos;
	struct cev_pred *pr = &p->pred;
	uint64_t *h = p->hdr, v;

	if (pt->pos >= pt->n)
		return 0;
	if (*r == CEV_CTX) {
		r++;
		for (int i = 0; i < 5; i++)
			r = get_u(r, &h[i]);
	}
	if (*r == CEV_FULL) {
		r = get_u(r + 1, &v);
		*e = pt->full[v];
		pr->off = e->offset;
		pt->pos = (size_t)(r - pt->buf);
		return 1;
	}
	memset(&e->u, 0, 32);
	e->type = (enum prec_tev_type)*r++;
	e->time = h[0], e->tsc = h[1];
	e->cpu = (int32_t)(uint32_t)h[2], e->pid = (int32_t)(uint32_t)h[3];
	e->tid = (int32_t)(uint32_t)h[4];
	if (e->type == PREC_TEV_BLOCK) {
		e->u.block.mode = *r++;
		r = get_s(r, &e->offset, pr->off);
		r = get_s(r, &e->u.block.ip, pr->b);
		r = get_s(r, &e->u.block.end_ip, e->u.block.ip);
		r = get_u(r, &v);
		e->u.block.ninsn = (uint32_t)v;
		r = get_u(r, &v);
		e->u.block.end_time = v ? e->time + v : 0;
		pr->b = e->u.block.end_ip;
	} else if (e->type == PREC_TEV_COUNTS) {
		struct prec_tev_counts *c = &e->u.counts;

		r = get_s(r, &e->offset, pr->off);
		r = get_u(r, &c->insns);
		r = get_u(r, &v), c->blocks = (uint32_t)v;
		r = get_u(r, &v), c->branches = (uint32_t)v;
		r = get_u(r, &v), c->calls = (uint32_t)v;
		r = get_u(r, &v), c->rets = (uint32_t)v;
		r = get_u(r, &v), c->syscalls = (uint32_t)v;
		r = get_u(r, &v), c->interrupts = (uint32_t)v;
	} else {
		e->u.branch.kind = (enum prec_br_kind)*r++;
		e->u.branch.insn_len = *r++;
		r = get_s(r, &e->offset, pr->off);
		r = get_s(r, &e->u.branch.from, pr->b);
		r = get_s(r, &e->u.branch.to, e->u.branch.from);
		r = get_u(r, &v);
		e->u.branch.flags = (uint32_t)v;
		pr->b = e->u.branch.to;
	}
	pr->off = e->offset;
	pt->pos = (size_t)(r - pt->buf);
	return 1;
}

static void part_clear(struct part *pt)
{
	memset(&pt->pred, 0, sizeof(pt->pred));
	pt->n = pt->nfull = pt->pos = 0;
	pt->err = 0;
	pt->warm_ok = false;
}

static void part_free(struct part *pt)
{
	if (!pt)
		return;
	free(pt->buf);
	free(pt->full);
	free(pt);
}
static struct ipt *ipt_alloc(struct prec_session *s, const struct prec_stream *stream,
			     const struct prec_decoder_opts *opts);
static void ipt_close(void *priv);

/* The data position of the last PSB in [@floor, @x), or @x when none (or on an error). */
static size_t psb_before(struct ipt *d, size_t x, size_t floor)
{
	size_t step = PSB_SCAN, from, p, last;
	int err = 0;

	for (;;) {
		from = x - floor > step ? x - step : floor;
		last = x;
		for (p = psb_find(d, from, x, x, &err); !err && p < x;
		     p = psb_find(d, p + 1, x, x, &err))
			last = p;
		if (err || last < x || from == floor)
			return err ? x : last;
		step *= 2;
	}
}

/*
 * The warm-up of a MID part: from the PSB before its cut up to the cut,
 * events dropped. Sets pt->warm_ok when it got there.
 */
static int part_warm(struct ipt *sub, struct part *pt)
{
	size_t w = psb_before(sub, pt->lo, sub->seg_start);
	int err;

	if (w >= pt->lo)
		return 0;
	sub->cut_hi = pt->lo;
	sub->cut_end = psbplus_end(sub, pt->lo, sub->seg_end, &err);
	if (err || !sub->cut_end)
		return err;
	err = start_window(sub, w);
	while (!err && (sub->state == S_SYNC || sub->state == S_RUN ||
			(sub->state == S_WIN && sub->win_next != pt->lo))) {
		err = step(sub);
		sub->q.head = sub->q.tail;
		sub->agg_open = false;
	}
	if (err)
		return err;
	pt->warm_ok = sub->state == S_WIN && sub->win_next == pt->lo;
	return 0;
}

/* Whether the part being decoded by @sub is over (after at least one step). */
static bool part_over(const struct ipt *sub)
{
	return sub->state == S_DONE || sub->state == S_SEG ||
	       (sub->cut_hi && sub->state == S_WIN && sub->win_next == sub->cut_hi);
}

/* Sets @sub up for part @pt: from the state pt->entry when exact, else warm. */
static int part_setup(struct ipt *sub, struct part *pt)
{
	size_t lo = 0, hi = 0;
	int err = 0;

	if (pt->seg < nr_segments(sub->st))
		seg_bounds(sub->st, pt->seg, &lo, &hi);
	if (pt->kind == PART_MID) {
		if (pt->exact)
			carry_put(sub, &pt->entry);
		sub->seg = pt->seg + 1;
		sub->seg_start = lo;
		sub->seg_end = hi;
		sub->seg_off = prec_stream_offset(sub->st, lo);
		if (!pt->exact) {
			err = part_warm(sub, pt);
			if (err || !pt->warm_ok)
				return err;
			carry_get(sub, &pt->entry);
			sub->np_total = 0;
		}
	} else if (pt->exact) {
		carry_put(sub, &pt->entry);
	}
	sub->cut_hi = pt->hi;
	sub->cut_end = 0;
	if (pt->hi)
		sub->cut_end = psbplus_end(sub, pt->hi, hi, &err);
	return err;
}

/*
 * A part's decoder's caches, kept for the stream's next parts: decoded one
 * after the other, parts meet the same code. Each part starting empty made
 * a large program's parts disassemble the same branches again (capstone),
 * and parts sharing the session's libipt sections took the sections' locks
 * on every switch between objects: on 58 MB of python3's trace -j2 cost
 * twice the CPU time of -j1.
 */
struct warm {
	struct icache_ent *ic;
	unsigned ic_bits;
	struct pt_image_section_cache *isc;
	struct sub_image *imgs;
	size_t nr_imgs;
	struct prec_walk *walk;
};

static void warm_free(struct warm *w)
{
	prec_walk_free(w->walk);
	for (size_t i = 0; i < w->nr_imgs; i++)
		pt_image_free(w->imgs[i].img);
	free(w->imgs);
	if (w->isc)
		pt_iscache_free(w->isc);
	free(w->ic);
	free(w);
}

/* Gives @sub the caches of a part decoded before, or new ones. */
static void warm_take(struct par *p, struct ipt *sub)
{
	struct warm *w = NULL;

	if (!p)
		return; /* a shard's part: decoded by a decoder without parts of its own */
	pthread_mutex_lock(&p->ic_mu);
	if (p->npool)
		w = p->pool[--p->npool];
	pthread_mutex_unlock(&p->ic_mu);
	if (!w) {
		if (!sub->use_walk)
			sub->isc = prec_iscache_new();
		return;
	}
	free(sub->ic);
	prec_walk_free(sub->walk);
	sub->walk = w->walk;
	sub->ic = w->ic, sub->ic_bits = w->ic_bits;
	sub->isc = w->isc;
	sub->imgs = w->imgs, sub->nr_imgs = w->nr_imgs;
	free(w);
}

/* Keeps @sub's caches for the stream's next parts. */
static void warm_give(struct par *p, struct ipt *sub)
{
	struct warm *w;

	if (!p || (!sub->isc && !sub->walk) || !(w = malloc(sizeof(*w))))
		return;
	*w = (struct warm){ sub->ic, sub->ic_bits, sub->isc, sub->imgs, sub->nr_imgs, sub->walk };
	pthread_mutex_lock(&p->ic_mu);
	if (p->npool < PAR_MAX) {
		p->pool[p->npool++] = w;
		w = NULL;
		sub->ic = NULL, sub->isc = NULL, sub->imgs = NULL, sub->nr_imgs = 0;
		sub->walk = NULL;
	}
	pthread_mutex_unlock(&p->ic_mu);
	free(w);
}

/* Decodes part @pt (a worker's task, or the stream's decoder's own). */
static void part_run(void *arg)
{
	struct part *pt = arg;
	struct ipt *sub = ipt_alloc(pt->d->s, pt->d->st, &pt->d->opts);
	uint64_t hdr[5];
	int err;

	if (!sub) {
		pt->err = -ENOMEM;
		return;
	}
	sub->sub = true;
	warm_take(pt->d->par, sub);
	memset(hdr, 0xff, sizeof(hdr));
	err = part_setup(sub, pt);
	if (!err && (pt->exact || pt->warm_ok)) {
		do {
			err = step(sub);
			if (!err && part_over(sub))
				agg_flush(sub);
			while (!err && prec_evq_len(&sub->q)) {
				err = part_put(pt, &sub->q.ev[sub->q.head & (sub->q.cap - 1)], hdr);
				sub->q.head++;
			}
			if (!err)
				err = sub->q.err;
		} while (!err && !part_over(sub));
		carry_get(sub, &pt->exit);
	}
	pt->err = err;
	warm_give(pt->d->par, sub);
	ipt_close(sub);
}

/* The first PSB at or after @x in segment @seg whose PSB+ ends in it, or 0. */
static size_t cut_at(struct ipt *d, size_t seg, size_t x)
{
	size_t lo, hi, p, far;
	int err = 0;

	seg_bounds(d->st, seg, &lo, &hi);
	far = x + PSB_FAR;
	for (p = psb_find(d, x, far, hi, &err); !err && p < hi && p < far;
	     p = psb_find(d, p + 1, far, hi, &err))
		if (psbplus_end(d, p, hi, &err))
			return p;
	return 0;
}

/* Plans the next part of the stream into @pt; false when there is none. */
static bool plan_next(struct ipt *d, struct part *pt)
{
	struct par *p = d->par;
	size_t n = nr_segments(d->st), s, lo = 0, hi = 0, first;
	int err = 0;

	if (p->pnext) {
		pt->kind = PART_MID;
		pt->seg = p->pseg;
		pt->lo = p->pnext;
		pt->hi = cut_at(d, p->pseg, p->pnext + p->part_bytes);
		p->pnext = pt->hi;
		return true;
	}
	if (p->planned_all)
		return false;
	for (s = p->seg_begin; s < n; s++) {
		seg_bounds(d->st, s, &lo, &hi);
		if (hi > lo)
			break;
	}
	pt->kind = PART_FIRST;
	pt->seg = s;
	pt->lo = p->seg_begin;
	pt->hi = 0;
	p->seg_begin = s + 1;
	if (s >= n) {
		p->planned_all = true;
		return true;
	}
	first = d->windowed ? psb_find(d, lo, hi, hi, &err) : lo;
	if (!err && first < hi)
		pt->hi = cut_at(d, s, first + p->part_bytes);
	p->pseg = s;
	p->pnext = pt->hi;
	return true;
}

/* Skips @n variable-length numbers at *@r before @end; false when they run past it. */
static bool cev_skip(const uint8_t **r, const uint8_t *end, int n)
{
	for (; n > 0; n--) {
		const uint8_t *p = *r;

		while (p < end && (*p & 0x80) && p - *r < 9)
			p++;
		if (p >= end || (*p & 0x80))
			return false;
		*r = p + 1;
	}
	return true;
}

/*
 * Whether part bytes from a file are what part_put() writes: part_get()
 * reads them unchecked (fast), so a part file that is whole by its
 * checksum but not by its content is decoded again instead of read past
 * its end.
 */
static bool cev_valid(const uint8_t *r, size_t n, const struct prec_tev *full, size_t nfull)
{
	const uint8_t *end = r + n;
	uint64_t v;
	int nums;

	for (size_t i = 0; i < nfull; i++)
		if (full[i].type < PREC_TEV_BLOCK || full[i].type > PREC_TEV_HW ||
		    (full[i].type == PREC_TEV_ERROR &&
		     !memchr(full[i].u.err.msg, 0, sizeof(full[i].u.err.msg))))
			return false;
	while (r < end) {
		if (*r == CEV_CTX && (++r, !cev_skip(&r, end, 5) || r >= end))
			return false;
		if (*r == CEV_FULL) {
			const uint8_t *p = ++r;

			if (!cev_skip(&r, end, 1))
				return false;
			get_u(p, &v);
			if (v >= nfull)
				return false;
			continue;
		}
		if (*r != PREC_TEV_BLOCK && *r != PREC_TEV_BRANCH)
			return false;
		nums = *r == PREC_TEV_BLOCK ? 5 : 4; /* a block's end_time is its fifth */
		r += *r == PREC_TEV_BLOCK ? 2 : 3;
		if (r > end || !cev_skip(&r, end, nums))
			return false;
	}
	return true;
}

/*
 * --merge: part @pt as a shard decoded it, when one did (the same cut) and
 * from a state this process can name; par_settle() takes it only if that
 * state is the one the part before ended with, and decodes it otherwise.
 */
static void part_load(struct ipt *d, struct part *pt)
{
	const struct prec_shard_part *r = prec_shards_find(d->par->shards, d->par->stream,
							   pt->index);

	pt->exact = false;
	if (!r || !r->decoded || r->kind != (uint32_t)pt->kind || r->seg != pt->seg ||
	    r->lo != pt->lo || r->hi != pt->hi || !carry_unpack(d, r->entry, &pt->entry) ||
	    !carry_unpack(d, r->exit, &pt->exit))
		return;
	if (part_grow((void **)&pt->buf, &pt->cap, r->nev + 1, 1) ||
	    part_grow((void **)&pt->full, &pt->capfull, r->nfull + 1, sizeof(*pt->full)))
		return;
	if (prec_shard_part_read(r, pt->buf, pt->full) ||
	    !cev_valid(pt->buf, r->nev, pt->full, r->nfull))
		return;
	pt->n = r->nev;
	pt->nfull = r->nfull;
	pt->err = r->err;
	pt->warm_ok = true;
}

/* Plans and submits parts up to the lookahead. */
static void par_fill(struct ipt *d)
{
	struct par *p = d->par;

	while (p->n < p->ahead) {
		struct part *pt = p->nspare ? p->spare[--p->nspare] : calloc(1, sizeof(*pt));

		if (!pt)
			return;
		pt->exact = false;
		pt->d = d;
		pt->job.run = part_run;
		pt->job.arg = pt;
		if (!plan_next(d, pt)) {
			p->spare[p->nspare++] = pt;
			return;
		}
		pt->index = p->index++;
		if (p->shards) {
			part_load(d, pt);
			p->ring[(p->head + p->n++) % PAR_MAX] = pt;
			continue;
		}
		/* The state a segment after the first starts with is known once the one before is done. */
		if (pt->kind == PART_FIRST && pt->lo == 0) {
			pt->exact = true;
			pt->entry = p->cur;
		}
		if (pt->kind == PART_MID || pt->exact)
			prec_jobs_submit(p->jobs, &pt->job);
		p->ring[(p->head + p->n++) % PAR_MAX] = pt;
	}
}

/* Parts of -j decodes in this process: taken as the workers decoded them, decoded again. */
static uint64_t par_taken, par_redone;

void prec_ipt_par_counts(uint64_t *taken, uint64_t *redone)
{
	*taken = __atomic_load_n(&par_taken, __ATOMIC_RELAXED);
	*redone = __atomic_load_n(&par_redone, __ATOMIC_RELAXED);
}

/* Counts part of @p as @taken or decoded again: the shards' counts for --merge, else -j's. */
static void par_count(struct par *p, bool taken)
{
	if (p->shards)
		prec_shards_count(p->shards, taken);
	else
		__atomic_fetch_add(taken ? &par_taken : &par_redone, 1, __ATOMIC_RELAXED);
}

/*
 * Part @pt's events are those of one pass from state p->cur: as decoded,
 * or decoded again (or skipped, after the end of its segment's decode).
 * Then p->cur is the state after it.
 */
static void par_settle(struct ipt *d, struct part *pt)
{
	struct par *p = d->par;
	const struct carry *cur = &p->cur;

	prec_jobs_wait(p->jobs, &pt->job);
	if (pt->kind == PART_MID && (cur->state == S_SEG || cur->state == S_DONE)) {
		part_clear(pt);
		return;
	}
	if (!pt->exact && (pt->err || !pt->warm_ok || !carry_same(cur, &pt->entry) ||
			   cur->np_total + pt->exit.np_total > d->np_budget)) {
		par_count(p, false);
		part_clear(pt);
		pt->exact = true;
		pt->entry = *cur;
		part_run(pt);
	} else if (!pt->exact) {
		par_count(p, true);
		pt->exit.np_total += cur->np_total;
	}
	p->cur = pt->exit;
}

/* Drops part @pt, keeping its buffers for a part to come. */
static void part_done(struct par *p, struct part *pt)
{
	if (p->nspare < PREC_ARRAY_SIZE(p->spare)) {
		part_clear(pt);
		p->spare[p->nspare++] = pt;
	} else {
		part_free(pt);
	}
}

/* The stream's next event from its parts: as prec_decoder_next_ref(). */
static int par_next(struct ipt *d, const struct prec_tev **ev)
{
	struct par *p = d->par;
	int err;

	for (;;) {
		struct part *pt = p->cur_part;

		if (pt) {
			if (part_get(p, pt, &p->ev)) {
				/* Shards keep the blocks, for any view. */
				if (p->ev.type == PREC_TEV_BLOCK && d->opts.no_blocks)
					continue;
				*ev = &p->ev;
				return 1;
			}
			err = pt->err;
			part_done(p, pt);
			p->cur_part = NULL;
			if (err)
				return err;
		}
		if (p->cur.state == S_DONE || d->state == S_DONE) {
			d->state = S_DONE;
			return 0;
		}
		par_fill(d);
		if (!p->n) {
			d->state = S_DONE;
			return 0;
		}
		pt = p->ring[p->head];
		p->head = (p->head + 1) % PAR_MAX;
		p->n--;
		par_settle(d, pt);
		p->cur_part = pt;
		memset(p->hdr, 0xff, sizeof(p->hdr));
		memset(&p->pred, 0, sizeof(p->pred));
	}
}

static void par_free(struct ipt *d)
{
	struct par *p = d->par;

	if (!p)
		return;
	for (; p->n; p->n--, p->head = (p->head + 1) % PAR_MAX) {
		prec_jobs_wait(p->jobs, &p->ring[p->head]->job);
		part_free(p->ring[p->head]);
	}
	part_free(p->cur_part);
	while (p->nspare)
		part_free(p->spare[--p->nspare]);
	while (p->npool)
		warm_free(p->pool[--p->npool]);
	pthread_mutex_destroy(&p->ic_mu);
	prec_jobs_put(p->jobs);
	free(p);
	d->par = NULL;
}

/*
 * The trace bytes a part aims at: CHUNK_BYTES, at most CHUNK_WINDOWS
 * windows, and with @shards > 1 (shard and merge alike, so both plan the
 * same cuts) small enough for every shard to get SHARD_PARTS of the bytes
 * of all streams together.
 */
static size_t part_bytes(const struct ipt *d, uint32_t shards)
{
	size_t b = PREC_MIN(CHUNK_BYTES, d->win_size * CHUNK_WINDOWS);
	uint64_t total = 0;
	size_t i, n = prec_session_nr_streams(d->s);

	if (shards <= 1)
		return b;
	for (i = 0; i < n; i++)
		total += prec_session_stream(d->s, i)->len;
	total /= (uint64_t)shards * SHARD_PARTS;
	return PREC_MIN(b, PREC_MAX((size_t)total, SHARD_PART_MIN));
}

/* A stream decoded in parts by @jobs workers. */
static int par_init(struct ipt *d, int jobs)
{
	struct par *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->jobs = prec_jobs_get(d->opts.busy_view ? jobs - 1 : jobs);
	if (!p->jobs) {
		free(p);
		return 0;
	}
	/*
	 * Two parts a worker: while the view takes one part, the workers have
	 * the next ones to go on with (with one each, they waited for the view
	 * whenever it was slower for a part; on 2 CPUs -j2 --call-trace took
	 * 2.5 s where it takes 2.3 s with two each).
	 */
	p->ahead = PREC_MIN(2 * (size_t)jobs + 1, (size_t)PAR_MAX);
	p->part_bytes = part_bytes(d, 1);
	pthread_mutex_init(&p->ic_mu, NULL);
	carry_get(d, &p->cur);
	d->par = p;
	return 0;
}

/* --merge: the stream's parts from the shards (@sh), the rest decoded here. */
static int par_init_merge(struct ipt *d, struct prec_shards *sh)
{
	struct par *p = calloc(1, sizeof(*p));
	size_t i, n = prec_session_nr_streams(d->s);

	if (!p)
		return -ENOMEM;
	for (i = 0; i < n && prec_session_stream(d->s, i) != d->st; i++)
		;
	p->shards = sh;
	p->stream = (uint32_t)i;
	p->ahead = 1;
	p->part_bytes = part_bytes(d, prec_shards_n(sh));
	pthread_mutex_init(&p->ic_mu, NULL);
	carry_get(d, &p->cur);
	d->par = p;
	return 0;
}

static int refill(void *priv)
{
	struct ipt *d = priv;
	int err;

	if (d->state == S_DONE) {
		agg_flush(d);
		return 0;
	}
	err = step(d);
	return err ? err : 1;
}

static int ipt_next_ref(void *priv, const struct prec_tev **ev)
{
	struct ipt *d = priv;

	if (d->par)
		return par_next(d, ev);
	return prec_evq_next_ref(&d->q, ev, refill, d);
}

static int ipt_next(void *priv, struct prec_tev *ev)
{
	struct ipt *d = priv;
	const struct prec_tev *e;
	int r;

	if (!d->par)
		return prec_evq_next(&d->q, ev, refill, d);
	r = par_next(d, &e);
	if (r > 0)
		*ev = *e;
	return r;
}

static void ipt_close(void *priv)
{
	struct ipt *d = priv;

	if (!d)
		return;
	par_free(d);
	dec_close(d, true);
	if (d->cs_ok)
		cs_close(&d->cs);
	for (size_t i = 0; i < d->nr_imgs; i++)
		pt_image_free(d->imgs[i].img);
	free(d->imgs);
	if (d->isc)
		pt_iscache_free(d->isc);
	prec_evq_fini(&d->q);
	prec_stream_reader_fini(&d->rd);
	free(d->ic);
	free(d);
}

/* A decoder of @stream, set to start, or NULL (no memory). */
static struct ipt *ipt_alloc(struct prec_session *s, const struct prec_stream *stream,
			     const struct prec_decoder_opts *opts)
{
	const struct prec_machine *m = prec_session_machine(s);
	struct ipt *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->ic = calloc((size_t)1 << ICACHE_FIRST, sizeof(*d->ic));
	d->ic_bits = ICACHE_FIRST;
	if (!d->ic || prec_evq_init(&d->q, QSIZE)) {
		free(d->ic);
		free(d);
		return NULL;
	}
	d->s = s;
	d->st = stream;
	d->windowed = stream->nr_refs && !stream->data;
	d->win_size = opts && opts->window ? opts->window : PREC_DECODE_WINDOW;
	prec_stream_reader_init(&d->rd, s, stream);
	d->np_budget = NOPROG_BASE + (uint64_t)NOPROG_PER_BYTE * stream->len;
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
	d->use_walk = !d->opts.libipt_core;
	d->skip_cond = d->opts.branch_kinds && !(d->opts.branch_kinds & 1u << PREC_BR_COND);
	d->cs_ok = cs_open(CS_ARCH_X86, CS_MODE_64, &d->cs) == CS_ERR_OK;
	if (d->cs_ok)
		cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
	d->state = S_SEG;
	update_context(d, true);
	return d;
}

static bool resume_open(struct ipt *d, const struct prec_resume *r);

static int ipt_open(struct prec_session *s, const struct prec_stream *stream,
		    const struct prec_decoder_opts *opts, void **priv)
{
	const struct prec_machine *m = prec_session_machine(s);
	struct ipt *d;
	int err = 0;

	*priv = NULL;
	if (!prec_session_images(s) || !stream)
		return -EINVAL;
	if (m->vendor[0] && strcmp(m->vendor, "GenuineIntel"))
		return -EOPNOTSUPP;
	d = ipt_alloc(s, stream, opts);
	if (!d)
		return -ENOMEM;
	/* With workers about, no decoder uses the session's own images. */
	d->sub = opts && opts->jobs > 1;
	if (opts && opts->resume && !d->sub && !opts->shards && !opts->counts) {
		if (!resume_open(d, opts->resume))
			err = -ESTALE;
	} else if (opts && opts->shards)
		err = par_init_merge(d, opts->shards);
	else if (d->sub && stream->len > part_bytes(d, 1))
		err = par_init(d, opts->jobs);
	if (err) {
		ipt_close(d);
		return err;
	}
	*priv = d;
	return 0;
}

/* ---- shards (ptdump --shard K/N; shard.h) ---- */

/* A part as planned: its cut and the trace bytes it covers (the shares are of those). */
struct cut {
	enum part_kind kind;
	size_t seg, lo, hi;
	uint64_t bytes;
};

/* All the parts of @d's stream for @shards shards, as par_fill() plans them for --merge. */
static int plan_stream(struct ipt *d, uint32_t shards, struct cut **cuts, size_t *n)
{
	struct par *p = calloc(1, sizeof(*p));
	struct part pt;
	int err = 0;

	if (!p)
		return -ENOMEM;
	p->part_bytes = part_bytes(d, shards);
	d->par = p;
	memset(&pt, 0, sizeof(pt));
	while (!err && plan_next(d, &pt)) {
		size_t lo = 0, hi = 0, from, to;
		struct cut *c;

		if (PREC_ARRAY_RESERVE(*cuts, *n, 1)) {
			err = -ENOMEM;
			break;
		}
		if (pt.seg < nr_segments(d->st))
			seg_bounds(d->st, pt.seg, &lo, &hi);
		from = pt.kind == PART_MID ? pt.lo : lo;
		to = pt.hi ? pt.hi : hi;
		c = &(*cuts)[(*n)++];
		c->kind = pt.kind, c->seg = pt.seg, c->lo = pt.lo, c->hi = pt.hi;
		c->bytes = to > from ? to - from : 0;
	}
	free(p);
	d->par = NULL;
	return err;
}

/* A part this shard decodes: its stream's decoder, its cut, and the state the stream starts with. */
struct owned {
	struct ipt *d;
	const struct cut *c;
	uint32_t stream, index;
	const struct carry *init;
	struct part *pt;
};

/*
 * Sets up part @w. A segment's first part has a known state only at the
 * start of the stream (the state every decode starts with); any other is
 * left undecoded, for --merge to decode from the state the segment before
 * ends with. Returns whether the part is to be decoded (-ENOMEM: no memory).
 */
static int owned_setup(struct owned *w)
{
	struct part *pt = calloc(1, sizeof(*pt));

	if (!pt)
		return -ENOMEM;
	pt->d = w->d;
	pt->kind = w->c->kind, pt->seg = w->c->seg, pt->lo = w->c->lo, pt->hi = w->c->hi;
	pt->index = w->index;
	pt->job.run = part_run;
	pt->job.arg = pt;
	if (w->c->kind == PART_FIRST && w->c->lo == 0) {
		pt->exact = true;
		pt->entry = *w->init;
	}
	w->pt = pt;
	return pt->exact || pt->kind == PART_MID;
}

/* Writes decoded part @w to @o (undecoded: so is a part whose warm-up did not reach its cut). */
static int owned_write(struct owned *w, struct prec_shard_out *o)
{
	const struct part *pt = w->pt;
	struct prec_shard_part r;

	memset(&r, 0, sizeof(r));
	r.stream = w->stream, r.index = w->index, r.kind = (uint32_t)pt->kind;
	r.seg = pt->seg, r.lo = pt->lo, r.hi = pt->hi;
	r.err = pt->err;
	r.decoded = (pt->exact || pt->warm_ok) && carry_pack(w->d, &pt->entry, r.entry) &&
		    carry_pack(w->d, &pt->exit, r.exit);
	if (r.decoded) {
		r.ev = pt->buf, r.nev = pt->n;
		r.full = pt->full, r.nfull = pt->nfull;
	}
	prec_shard_out_part(o, &r);
	/* Out of memory is this process's trouble, not the trace's: fail rather than leave it to --merge. */
	return pt->err == -ENOMEM ? -ENOMEM : o->err;
}

/*
 * Decodes parts @w (@n of them, in order) and writes them to @o: with
 * @jobs workers, up to one more than them decoded ahead of the one written.
 */
static int owned_run(struct owned *w, size_t n, struct prec_jobs *jobs, size_t ahead,
		     struct prec_shard_out *o)
{
	size_t next = 0, i;
	int err = 0, r;

	for (i = 0; i < n && !err; i++) {
		for (; next < n && next <= i + ahead && !err; next++) {
			r = owned_setup(&w[next]);
			if (r < 0)
				err = r;
			else if (r && jobs)
				prec_jobs_submit(jobs, &w[next].pt->job);
		}
		if (err)
			break;
		if (jobs)
			prec_jobs_wait(jobs, &w[i].pt->job);
		else if (w[i].pt->exact || w[i].pt->kind == PART_MID)
			part_run(w[i].pt);
		err = owned_write(&w[i], o);
		part_free(w[i].pt);
		w[i].pt = NULL;
	}
	for (; i < next; i++) {
		if (jobs && w[i].pt)
			prec_jobs_wait(jobs, &w[i].pt->job);
		part_free(w[i].pt);
	}
	return err;
}

/* The shard (1..n) that a part of @bytes from byte @at of @total has: where its middle falls. */
static uint32_t shard_of(uint64_t at, uint64_t bytes, uint64_t total, uint32_t n)
{
	unsigned __int128 mid = at + bytes / 2;

	return total ? (uint32_t)(mid * n / total) + 1 : 1;
}

/*
 * The parts of shard @k among the cuts of all @ns streams of @s (@cuts,
 * @nc), into *@w (*@nw of them), with a decoder for each stream they are
 * of in @ds and its start state in @init.
 */
static int shard_own(struct prec_session *s, const struct prec_decoder_opts *o, size_t ns,
		     struct cut **cuts, const size_t *nc, uint32_t n, uint32_t k,
		     struct ipt **ds, struct carry *init, struct owned **w, size_t *nw)
{
	uint64_t total = 0, at = 0;
	size_t i, j;

	for (i = 0; i < ns; i++)
		for (j = 0; j < nc[i]; j++)
			total += cuts[i][j].bytes;
	for (i = 0; i < ns; i++) {
		for (j = 0; j < nc[i]; j++) {
			uint32_t owner = shard_of(at, cuts[i][j].bytes, total, n);

			at += cuts[i][j].bytes;
			if (owner != k)
				continue;
			if (!ds[i]) {
				ds[i] = ipt_alloc(s, prec_session_stream(s, i), o);
				if (!ds[i])
					return -ENOMEM;
				/* Workers or not, the parts use copies of the images. */
				ds[i]->sub = true;
				carry_get(ds[i], &init[i]);
			}
			if (PREC_ARRAY_RESERVE(*w, *nw, 1))
				return -ENOMEM;
			(*w)[(*nw)++] = (struct owned){ .d = ds[i], .c = &cuts[i][j],
				.stream = (uint32_t)i, .index = (uint32_t)j, .init = &init[i] };
		}
	}
	return 0;
}

int prec_ipt_shard(struct prec_session *s, const struct prec_decoder_opts *opts,
		   const struct prec_shard_plan *plan, uint32_t k, struct prec_shard_out *o)
{
	/* Blocks kept whatever the view: one set of parts serves them all. */
	struct prec_decoder_opts dopts = { .window = opts ? opts->window : 0 };
	int jobs = opts && opts->jobs > 1 ? opts->jobs : 0;
	size_t ns = prec_session_nr_streams(s), i, nw = 0, *nc = calloc(ns + 1, sizeof(*nc));
	struct cut **cuts = calloc(ns + 1, sizeof(*cuts));
	struct ipt **ds = calloc(ns + 1, sizeof(*ds));
	struct carry *init = calloc(ns + 1, sizeof(*init));
	struct prec_jobs *pool = NULL;
	struct owned *w = NULL;
	int err = nc && cuts && ds && init ? 0 : -ENOMEM;

	if (!prec_session_images(s))
		err = -EINVAL;
	for (i = 0; i < ns && !err; i++) {
		struct ipt *d = ipt_alloc(s, prec_session_stream(s, i), &dopts);

		err = d ? plan_stream(d, plan->n, &cuts[i], &nc[i]) : -ENOMEM;
		ipt_close(d);
	}
	if (!err)
		err = shard_own(s, &dopts, ns, cuts, nc, plan->n, k, ds, init, &w, &nw);
	if (!err && jobs)
		pool = prec_jobs_get(jobs);
	if (!err)
		err = owned_run(w, nw, pool, pool ? (size_t)jobs : 0, o);
	prec_jobs_put(pool);
	for (i = 0; i < ns; i++) {
		ipt_close(ds ? ds[i] : NULL);
		free(cuts ? cuts[i] : NULL);
	}
	free(w);
	free(ds);
	free(init);
	free(cuts);
	free(nc);
	return err;
}

/*
 * The whole PSB+ (up to its PSBEND) last in data [@lo, @hi) and the one
 * before it: *@last and *@prev (@hi for none). Returns 0 or an error.
 */
static int last_psbs(struct ipt *d, size_t lo, size_t hi, size_t *prev, size_t *last)
{
	size_t psb;
	int err = 0;

	*prev = *last = hi;
	for (psb = psb_find(d, lo, hi, hi, &err); !err && psb < hi;
	     psb = psb_find(d, psb + 1, hi, hi, &err)) {
		if (psbplus_end(d, psb, hi, &err)) {
			*prev = *last;
			*last = psb;
		}
		if (err)
			break;
	}
	return err;
}

/*
 * --follow, where the trace was paused or stopped since the last whole
 * PSB+ (@from): the TSC of the last TSC packet before the last whole
 * TIP.PGD in [@from, @hi), or 0. Everything up to that TIP.PGD is in the
 * bytes, so the events before it decode as from the whole stream (the
 * query decoder looks ahead no further than the next branch packet, and
 * at a disable nothing waits for a target), and events after that TSC
 * packet come at its time or later. Windows of pause/resume start with a
 * TSC packet and often have no PSB+ of their own: with this bound each
 * one comes out once the next has ended, not only after two PSBs.
 */
#define PGD_SCAN_MAX ((size_t)16 << 20)

static uint64_t last_pgd_tsc(struct ipt *d, size_t from, size_t hi)
{
	struct pt_config cfg = d->cfg;
	struct pt_packet_decoder *pk;
	struct pt_packet p;
	const uint8_t *b = NULL;
	uint64_t tsc = 0, at = 0;

	if (hi <= from || hi - from > PGD_SCAN_MAX)
		return 0;
	if (!d->windowed)
		b = d->st->data + from;
	else if (prec_stream_read(&d->rd, from, hi, &b))
		return 0;
	cfg.begin = (uint8_t *)b;
	cfg.end = (uint8_t *)b + (hi - from);
	pk = pt_pkt_alloc_decoder(&cfg);
	if (!pk)
		return 0;
	if (pt_pkt_sync_set(pk, 0) >= 0)
		while (pt_pkt_next(pk, &p, sizeof(p)) >= 0) {
			if (p.type == ppt_tsc)
				tsc = p.payload.tsc.tsc;
			else if (p.type == ppt_tip_pgd)
				at = tsc;
		}
	pt_pkt_free_decoder(pk);
	return at;
}

/*
 * ptdump --follow: the stream's bytes are a prefix of a stream still being
 * written, which may end inside a packet. The decode is settled before the
 * last whole PSB+ but one (call it P, followed by the whole PSB+ Q): the
 * window from P to Q and Q's PSB+ are there, so everything before P comes
 * out as from the whole stream (the same as a cut between windows, see
 * window_cut()), and nothing after P comes before the timestamp in P's
 * PSB+, whose time this returns (0: no such P, or no timestamps); or the
 * time of last_pgd_tsc() after the last whole PSB+, where that is later.
 */
static uint64_t ipt_settled(void *priv)
{
	struct ipt *d = priv;
	size_t hi = d->st->len, back = PSB_SCAN, lo, prev = hi, last;
	struct prec_stream_reader keep = d->rd;
	uint64_t t = 0;
	int err;

	if (!prec_session_machine(d->s)->tsc || !hi)
		return 0;
	/* A reader of its own: the decoder's window may point into d->rd's. */
	prec_stream_reader_init(&d->rd, d->s, d->st);
	for (err = 0; !err;) {
		lo = hi > back ? hi - back : 0;
		err = last_psbs(d, lo, hi, &prev, &last);
		if (prev < hi || !lo)
			break;
		back *= 4;
	}
	if (!err && prev < hi)
		t = seg_first_time(d, prev, hi);
	if (!err && last < hi) {
		uint64_t tsc = last_pgd_tsc(d, last, hi);

		if (tsc)
			t = PREC_MAX(t, prec_session_tsc_to_time(d->s, tsc));
	}
	prec_stream_reader_fini(&d->rd);
	d->rd = keep;
	return t;
}

_Static_assert(PREC_RESUME_WORDS == PREC_CARRY_WORDS, "a resume place holds a carry's words");

/*
 * --follow: notes the state before a window that carries the decode on over
 * a PSB (as a part's entry, carry_get()), with the events queued before it.
 */
static void resume_note(struct ipt *d)
{
	struct prec_resume *r;
	struct carry c;

	if (d->sub || d->par || d->opts.counts || !d->next_splice)
		return;
	r = &d->rp[d->nrp++ % RESUME_KEEP];
	carry_get(d, &c);
	r->ordinal = d->pushed;
	r->pos = d->win_next;
	r->set = carry_pack(d, &c, r->words);
	r->sb_some = d->sb_t_set;
	r->sb_last = d->sb_t;
}

static bool ipt_resume_at(void *priv, uint64_t consumed, struct prec_resume *out)
{
	struct ipt *d = priv;
	const struct prec_resume *best = NULL;
	unsigned i;

	for (i = 0; i < RESUME_KEEP && i < d->nrp; i++) {
		const struct prec_resume *r = &d->rp[i];

		if (r->set && r->ordinal <= consumed && (!best || r->ordinal > best->ordinal))
			best = r;
	}
	if (best)
		*out = *best;
	return best != NULL;
}

/*
 * A per-CPU stream resumed at @r: its thread and next timeline record as a
 * decode from the beginning of this round's session has them there. The
 * last round applied the records up to r->sb_last; this round's timeline
 * may hold more of them (another ring's records before the round's bound
 * came late), and the thread is the one the last of them names.
 */
static void cpu_rewind(struct ipt *d, const struct prec_resume *r)
{
	size_t n = prec_session_nr_sb(d->s), i;

	d->sb_t = r->sb_last;
	d->sb_t_set = r->sb_some;
	if (!r->sb_some)
		i = 0;
	else if (r->sb_last == UINT64_MAX)
		i = n;
	else
		i = prec_session_sb_lower_bound(d->s, r->sb_last + 1);
	d->sb_idx = i;
	while (i-- > 0) {
		const struct prec_sb *sb = prec_session_sb(d->s, i);

		if (!cpu_record(d, sb))
			continue;
		if (sb->type == PREC_SB_ITRACE_START || !sb->u.sw.out) {
			d->tid = sb->tid;
			break;
		}
		if (sb->u.sw.cpu_wide) {
			d->tid = sb->u.sw.next_prev_tid;
			break;
		}
	}
}

/* Opens @d at place @r (prec_decoder_opts.resume); false when it does not fit the stream. */
static bool resume_open(struct ipt *d, const struct prec_resume *r)
{
	struct carry c;
	size_t lo, hi;

	if (!r->set || !carry_unpack(d, r->words, &c) || c.state != S_WIN ||
	    !c.seg || c.seg > nr_segments(d->st))
		return false;
	seg_bounds(d->st, c.seg - 1, &lo, &hi);
	if (c.win_next < lo || c.win_next >= hi || c.win_next != r->pos)
		return false;
	carry_put(d, &c);
	if (d->st->cpu >= 0)
		cpu_rewind(d, r);
	/*
	 * The context is looked up again before the first block: this
	 * round's session may know of a change (an mmap, an exec) that the
	 * last one's did not, before the time up to which the carried
	 * context was to hold.
	 */
	d->ctx_until = 0;
	d->seg_start = lo;
	d->seg_end = hi;
	d->seg_off = prec_stream_offset(d->st, lo);
	d->pushed = r->ordinal;
	return true;
}

const struct prec_decoder_ops prec_intel_pt_decoder = {
	.name = "intel_pt",
	.open = ipt_open,
	.next = ipt_next,
	.next_ref = ipt_next_ref,
	.close = ipt_close,
	.settled = ipt_settled,
	.resume_at = ipt_resume_at,
};

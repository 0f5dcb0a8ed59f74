// SPDX-License-Identifier: MIT
/*
 * The walk: libipt's query decoder for the packets, and a walk of the code of
 * ptdump's own (see ipt_walk.h).
 *
 * The code is cut into blocks that end at the first branch (any call, jump,
 * return, interrupt or system call) and kept, decoded once, in a
 * direct-mapped cache; the walk goes from block to block and asks the query
 * decoder only where the code cannot tell: a conditional branch's TNT bit, an
 * indirect branch's target, and the events pending. What it answers follows
 * libipt 2.0's block decoder (pt_block_decoder.c: pt_blk_next,
 * pt_blk_proceed_event, pt_blk_proceed_trailing_event, pt_blk_event), with
 * end_on_call, end_on_jump and enable_tick_events set as intel_pt.c sets
 * them:
 *  - a return takes a TNT bit when there is one (a compressed return: 1 pops
 *    the return stack, 0 is -pte_bad_retcomp), else a TIP; the stack holds
 *    64 returns, drops its oldest when full, and is emptied at a sync only;
 *  - a tick event follows a TNT bit or TIP whose time (pt_qry_time) differs
 *    from the last event's, at the branch, while no other event is in process;
 *  - an event binds where the block decoder binds it (ev_bind()): at once;
 *    before an IP (asynchronous disable or branch, TSX, EXSTOP, MWAIT); at
 *    the first instruction that needs trace (a synchronous disable); at the
 *    next instruction of a kind (a CR3 or VMCS change, a PTWRITE, which is
 *    stepped past after the event); or when the flow reaches an IP, trace
 *    allowed on the way (exec mode, asynchronous CR3 or VMCS change).
 * Instructions are classed as libipt's own length decoder classes them
 * (pt_ild.c: opcode maps 0 and 1 only); their lengths come from
 * prec_x86_insn_len() for the common encodings, else from capstone.
 */
#include <capstone/capstone.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "decoders/ipt_walk.h"
#include "decoders/x86_branch.h"
#include "session/image.h"

#define RSTACK 64              /* return addresses kept (libipt: pt_retstack_size) */
#define BLOCK_MAX UINT16_MAX   /* instructions in a block (pt_block.ninsn) */
#define CACHE_FIRST 12         /* the block cache: 1 << 12 entries at first, */
#define CACHE_BITS 16          /* four times as many when it missed as often as it has entries */

/* What an instruction is an event's binding point for (pt_insn_binds_to_pip, _vmcs). */
#define WB_PIP 1
#define WB_VMCS 2
#define WB_MOVCR3 4

struct winsn {
	uint64_t ip, target;       /* a direct branch's target */
	uint8_t len, cls, bind;
	bool direct, truncated;
};

/*
 * A block of the cache (32 bytes: the cache is the walk's working set): its
 * last instruction at ip + end_off, @len bytes long; ninsn 0 with the error
 * at @ip. @tag names the address space (0: the entry is empty).
 */
struct wblk {
	uint64_t ip, target;
	uint32_t end_off;
	uint16_t ninsn, tag;
	int8_t err;
	uint8_t mode, cls, len;
	bool direct, truncated;
};

#define NTAGS 255               /* address spaces told apart before the cache is emptied */

/* How the event in process binds (see ev_bind()). */
enum bind { B_NOW, B_BEFORE, B_DISABLED, B_PIP, B_VMCS, B_PTW, B_REACH };

struct prec_walk {
	struct prec_walk_pub pub;  /* first: read through ipt_walk.h */
	struct pt_query_decoder *q;
	struct prec_aspace *as;
	csh cs[3];                 /* 16-, 32-, 64-bit */
	bool cs_tried[3];
	cs_insn *ci[3];            /* set when cs[] is open */
	struct wblk *cache;
	unsigned bits;
	size_t misses;
	struct prec_aspace *tags[NTAGS]; /* tag i + 1 */
	unsigned ntags;
	uint16_t tag;                /* of as */

	uint64_t ip;
	int status;                /* the last query's */
	enum pt_exec_mode mode;
	bool enabled, speculative;
	uint64_t ret[RSTACK];
	unsigned top, depth;

	/* the event in process (held), and whether it is bound (ready) */
	struct pt_event ev;
	bool held, ready;
	enum bind bk;
	uint64_t bx;               /* the event's IP, where has_x says it has one */
	bool has_x;
	/* the instruction an event was bound to, to step past after it */
	struct winsn post;
	bool has_post;

	uint64_t last_tsc;         /* the last event's time, ticks included */
	uint64_t tick_off;         /* the query offset of the last time check */
};

/* ---- instructions ---- */

static int mode_idx(enum pt_exec_mode m)
{
	switch (m) {
	case ptem_16bit:
		return 0;
	case ptem_32bit:
		return 1;
	case ptem_64bit:
		return 2;
	default:
		return -1;
	}
}

static bool cs_for(struct prec_walk *w, int mi)
{
	static const cs_mode modes[3] = { CS_MODE_16, CS_MODE_32, CS_MODE_64 };

	if (w->cs_tried[mi])
		return w->ci[mi] != NULL;
	w->cs_tried[mi] = true;
	if (cs_open(CS_ARCH_X86, modes[mi], &w->cs[mi]) != CS_ERR_OK)
		return false;
	w->ci[mi] = cs_malloc(w->cs[mi]);
	if (!w->ci[mi])
		cs_close(&w->cs[mi]);
	return w->ci[mi] != NULL;
}

static bool is_legacy_prefix(uint8_t c)
{
	return c == 0x66 || c == 0x67 || c == 0xf0 || c == 0xf2 || c == 0xf3 || c == 0x2e ||
	       c == 0x36 || c == 0x3e || c == 0x26 || c == 0x64 || c == 0x65;
}

/* Class and binding points of the map-1 (0F) instruction at @p (@n bytes). */
static void classify_0f(struct winsn *in, const uint8_t *p, size_t n, bool p66, bool pf3)
{
	uint8_t op = n > 1 ? p[1] : 0, m = n > 2 ? p[2] : 0, reg = (m >> 3) & 7;

	if (op >= 0x80 && op <= 0x8f) {
		in->cls = ptic_cond_jump;
		in->direct = true;
	} else if (op == 0x05 || op == 0x34) {
		in->cls = ptic_far_call;              /* SYSCALL, SYSENTER */
	} else if (op == 0x07 || op == 0x35) {
		in->cls = ptic_far_return;            /* SYSRET, SYSEXIT */
	} else if (op == 0x01 && m == 0xc1) {
		in->cls = ptic_far_call;              /* VMCALL */
	} else if (op == 0x01 && (m == 0xc2 || m == 0xc3)) {
		in->cls = ptic_far_return;            /* VMLAUNCH, VMRESUME */
	} else if (op == 0xae && pf3 && !p66 && reg == 4) {
		in->cls = ptic_ptwrite;
	} else if (op == 0x22 && reg == 3) {
		in->bind = WB_PIP | WB_MOVCR3;        /* MOV CR3 */
	} else if (op == 0xc7 && reg == 6 && (m >> 6) != 3 && !p66 && !pf3) {
		in->bind = WB_VMCS;                   /* VMPTRLD */
	}
}

/* Class of the instruction at @p (@n bytes, @bits mode), as libipt's length decoder gives it. */
static size_t classify(struct winsn *in, const uint8_t *p, size_t n, int bits)
{
	bool p66 = false, pf3 = false;
	size_t i = 0;
	uint8_t op, reg;

	for (; i < n; i++) {
		if (p[i] == 0x66)
			p66 = true;
		else if (p[i] == 0xf3)
			pf3 = true;
		else if (!is_legacy_prefix(p[i]) && !(bits == 64 && (p[i] & 0xf0) == 0x40))
			break;
	}
	in->cls = ptic_other;
	if (i >= n)
		return i;
	op = p[i];
	reg = i + 1 < n ? (p[i + 1] >> 3) & 7 : 0;
	if ((op >= 0x70 && op <= 0x7f) || (op >= 0xe0 && op <= 0xe3)) {
		in->cls = ptic_cond_jump;
		in->direct = true;
	} else if (op == 0xe8) {
		in->cls = ptic_call;
		in->direct = true;
	} else if (op == 0xe9 || op == 0xeb) {
		in->cls = ptic_jump;
		in->direct = true;
	} else if (op == 0xc2 || op == 0xc3) {
		in->cls = ptic_return;
	} else if (op == 0xca || op == 0xcb || op == 0xcf) {
		in->cls = ptic_far_return;
	} else if (op == 0xcc || op == 0xcd || op == 0xce || op == 0xf1 || op == 0x9a) {
		in->cls = ptic_far_call;
	} else if (op == 0xea) {
		in->cls = ptic_far_jump;
	} else if (op == 0xff) {
		static const uint8_t ff[8] = { ptic_other, ptic_other, ptic_call, ptic_far_call,
					       ptic_jump, ptic_far_jump, ptic_other, ptic_other };

		in->cls = ff[reg];
	} else if (op == 0x0f) {
		classify_0f(in, p + i, n - i, p66, pf3);
	}
	if (in->cls == ptic_far_call || in->cls == ptic_far_return || in->cls == ptic_far_jump)
		in->bind |= WB_PIP | WB_VMCS;
	return i;
}

/* The direct target of @in, whose displacement ends it (@disp bytes). */
static void direct_target(struct winsn *in, const uint8_t *p, unsigned disp, int bits)
{
	const uint8_t *d = p + in->len - disp;
	int64_t v;

	if (disp == 1)
		v = (int8_t)d[0];
	else if (disp == 2)
		v = (int16_t)(d[0] | d[1] << 8);
	else
		v = (int32_t)((uint32_t)d[0] | (uint32_t)d[1] << 8 | (uint32_t)d[2] << 16 |
			      (uint32_t)d[3] << 24);
	in->target = in->ip + in->len + (uint64_t)v;
	if (bits == 32)
		in->target &= 0xffffffffu;
	else if (bits == 16)
		in->target &= 0xffffu;
}

/* Decodes the instruction at @ip: 0, -pte_nomap or -pte_bad_insn. */
static int decode(struct prec_walk *w, uint64_t ip, struct winsn *in)
{
	static const int bitsof[3] = { 16, 32, 64 };
	uint8_t buf[16];
	const uint8_t *code = buf;
	size_t n1, n, size, pre;
	uint64_t addr = ip;
	int mi = mode_idx(w->mode);

	memset(in, 0, sizeof(*in));
	in->ip = ip;
	n1 = w->as ? prec_aspace_read(w->as, ip, buf, 15) : 0;
	if (!n1)
		return -pte_nomap;
	n = n1;
	if (n1 < 15)
		n += prec_aspace_read(w->as, ip + n1, buf + n1, 15 - n1);
	if (mi < 0 || !cs_for(w, mi))
		return -pte_bad_insn;
	pre = classify(in, buf, n, bitsof[mi]);
	size = n;
	/* The common encodings measured from their bytes; the disassembler for the rest. */
	if ((in->len = (uint8_t)prec_x86_insn_len(buf, n, bitsof[mi]))) {
		;
	} else if (cs_disasm_iter(w->cs[mi], &code, &size, &addr, w->ci[mi])) {
		in->len = (uint8_t)w->ci[mi]->size;
	} else if (in->cls == ptic_ptwrite && pre + 2 < n && (buf[pre + 2] >> 6) == 3) {
		in->len = (uint8_t)(pre + 3);  /* capstone 4 has no PTWRITE with a register */
	} else {
		return -pte_bad_insn;
	}
	if (in->len > n1)
		in->truncated = true;
	if (in->direct) {
		unsigned short_rel = buf[pre] == 0x0f ? 0 : buf[pre] != 0xe8 && buf[pre] != 0xe9;

		direct_target(in, buf, short_rel ? 1 : in->len - pre - 1 - (buf[pre] == 0x0f),
			      bitsof[mi]);
	}
	return 0;
}

/* ---- the block cache ---- */

static size_t slot(const struct prec_walk *w, uint64_t ip)
{
	return (size_t)((ip ^ (ip >> 17) ^ w->tag) * 0x9e3779b97f4a7c15ull >> (64 - w->bits));
}

/* Entry @e built for @ip: the instructions up to the first branch. */
static void build(struct prec_walk *w, struct wblk *e, uint64_t ip)
{
	struct winsn in;
	uint64_t a = ip;

	memset(e, 0, sizeof(*e));
	e->ip = ip;
	e->tag = w->tag;
	e->mode = (uint8_t)w->mode;
	for (;;) {
		int r = decode(w, a, &in);

		if (r < 0) {
			if (!e->ninsn)
				e->err = (int8_t)r;
			return;
		}
		e->ninsn++;
		e->end_off = (uint32_t)(a - ip);
		e->len = in.len;
		e->cls = in.cls;
		e->direct = in.direct;
		e->target = in.target;
		e->truncated = in.truncated;
		a += in.len;
		if ((in.cls != ptic_other && in.cls != ptic_ptwrite) || in.truncated ||
		    e->ninsn == BLOCK_MAX)
			return;
	}
}

/* lookup() when the cache does not hold the block at @ip (in slot @e): built. */
static const struct wblk *lookup_miss(struct prec_walk *w, uint64_t ip, struct wblk *e)
{
	if (w->bits < CACHE_BITS && ++w->misses > (size_t)1 << w->bits) {
		struct wblk *c = calloc((size_t)1 << (w->bits + 2), sizeof(*c));

		w->misses = 0;
		if (c) {
			free(w->cache);
			w->cache = c;
			w->bits += 2;
			e = &w->cache[slot(w, ip)];
		}
	}
	build(w, e, ip);
	return e;
}

static inline const struct wblk *lookup(struct prec_walk *w, uint64_t ip)
{
	struct wblk *e = &w->cache[slot(w, ip)];

	if (__builtin_expect(e->ip == ip && e->tag == w->tag && e->mode == (uint8_t)w->mode, 1))
		return e;
	return lookup_miss(w, ip, e);
}

/* ---- trace ---- */

static void push_ret(struct prec_walk *w, uint64_t ra)
{
	w->ret[w->top] = ra;
	w->top = (w->top + 1) % RSTACK;
	if (w->depth < RSTACK)
		w->depth++;
}

/* After each query: where the query decoder is (asked once, read often). */
static inline int moved(struct prec_walk *w, int st)
{
	w->pub.off_err = pt_qry_get_offset(w->q, &w->pub.off);
	return st;
}

/*
 * After a TNT bit or TIP for the branch at @ip: a tick event when the time
 * differs from the last event's (pt_blk_tick). The time moves only with the
 * packets read, so it is looked at only when the query offset moved.
 */
static void tick_slow(struct prec_walk *w, uint64_t ip)
{
	uint64_t tsc = 0;
	uint32_t lost_mtc = 0, lost_cyc = 0;
	int r;

	w->tick_off = w->pub.off;
	r = pt_qry_time(w->q, &tsc, &lost_mtc, &lost_cyc);
	if ((r < 0 && r != -pte_no_time) || tsc == w->last_tsc)
		return;
	memset(&w->ev, 0, sizeof(w->ev));
	w->ev.type = ptev_tick;
	w->ev.variant.tick.ip = ip;
	w->ev.tsc = tsc;
	w->ev.lost_mtc = lost_mtc;
	w->ev.lost_cyc = lost_cyc;
	w->ev.has_tsc = r >= 0;
	w->last_tsc = tsc;
	w->held = w->ready = true;
}

/* tick_slow() when the query decoder moved and no event is in process: inline. */
static inline void tick(struct prec_walk *w, uint64_t ip)
{
	if (!w->held && w->pub.off != w->tick_off)
		tick_slow(w, ip);
}

/*
 * The IP after the branch @in (class @cls at @at, @len bytes, direct
 * target @target), from the trace where it must (pt_blk_proceed_with_trace);
 * the return address of a call is pushed already. On error the IP stays at
 * the branch.
 */
static int resolve(struct prec_walk *w, uint8_t cls, bool direct, uint64_t at, uint8_t len,
		   uint64_t target)
{
	uint64_t to = 0;
	int taken = 0, st;

	switch (cls) {
	case ptic_other:
	case ptic_ptwrite:
		w->ip = at + len;
		return 0;
	case ptic_call:
	case ptic_jump:
		if (direct) {
			w->ip = target;
			return 0;
		}
		break;
	case ptic_cond_jump:
		st = moved(w, pt_qry_cond_branch(w->q, &taken));
		if (st < 0) {
			w->ip = at;
			return st;
		}
		w->status = st;
		tick(w, at);
		w->ip = taken ? target : at + len;
		return 0;
	case ptic_return:
		st = moved(w, pt_qry_cond_branch(w->q, &taken));
		if (st >= 0) {
			w->status = st;
			tick(w, at);
			w->ip = at;
			if (!taken)
				return -pte_bad_retcomp;
			if (!w->depth)
				return -pte_retstack_empty;
			w->top = (w->top + RSTACK - 1) % RSTACK;
			w->depth--;
			w->ip = w->ret[w->top];
			return 0;
		}
		if (st != -pte_bad_query) {
			w->ip = at;
			return st;
		}
		break; /* not compressed: the target is in a TIP */
	default:
		break;
	}
	st = moved(w, pt_qry_indirect_branch(w->q, &to));
	w->ip = at;
	if (st < 0)
		return st;
	w->status = st;
	tick(w, at);
	if (st & pts_ip_suppressed)
		return -pte_noip;
	w->ip = to;
	return 0;
}

/* How the event just fetched binds (pt_blk_proceed_event). */
static void ev_bind(struct prec_walk *w)
{
	const struct pt_event *ev = &w->ev;
	bool at_ip = w->enabled && !ev->ip_suppressed;

	w->bk = B_NOW;
	w->has_x = true;
	switch (ev->type) {
	case ptev_disabled:
		w->bk = w->enabled ? B_DISABLED : B_NOW;
		w->bx = ev->variant.disabled.ip;
		w->has_x = !ev->ip_suppressed;
		break;
	case ptev_async_disabled:
		w->bk = w->enabled ? B_BEFORE : B_NOW;
		w->bx = ev->variant.async_disabled.at;
		break;
	case ptev_async_branch:
		w->bk = w->enabled ? B_BEFORE : B_NOW;
		w->bx = ev->variant.async_branch.from;
		break;
	case ptev_paging:
		w->bk = w->enabled ? B_PIP : B_NOW;
		w->has_x = false;
		break;
	case ptev_vmcs:
		w->bk = w->enabled ? B_VMCS : B_NOW;
		w->has_x = false;
		break;
	case ptev_async_paging:
		w->bk = at_ip ? B_REACH : B_NOW;
		w->bx = ev->variant.async_paging.ip;
		break;
	case ptev_async_vmcs:
		w->bk = at_ip ? B_REACH : B_NOW;
		w->bx = ev->variant.async_vmcs.ip;
		break;
	case ptev_exec_mode:
		w->bk = at_ip ? B_REACH : B_NOW;
		w->bx = ev->variant.exec_mode.ip;
		break;
	case ptev_tsx:
		w->bk = at_ip ? B_BEFORE : B_NOW;
		w->bx = ev->variant.tsx.ip;
		break;
	case ptev_exstop:
		w->bk = at_ip ? B_BEFORE : B_NOW;
		w->bx = ev->variant.exstop.ip;
		break;
	case ptev_mwait:
		w->bk = at_ip ? B_BEFORE : B_NOW;
		w->bx = ev->variant.mwait.ip;
		break;
	case ptev_ptwrite:
		w->bk = w->enabled ? B_PTW : B_NOW;
		w->bx = ev->variant.ptwrite.ip;
		w->has_x = !ev->ip_suppressed;
		break;
	default:
		w->has_x = false;
		break;
	}
}

static bool bound_here(const struct prec_walk *w)
{
	switch (w->bk) {
	case B_NOW:
		return true;
	case B_BEFORE:
	case B_REACH:
	case B_DISABLED:
		return w->has_x && w->ip == w->bx;
	default:
		return false;
	}
}

static int fetch(struct prec_walk *w)
{
	int st = moved(w, pt_qry_event(w->q, &w->ev, sizeof(w->ev)));

	if (st < 0)
		return st;
	w->status = st;
	w->held = true;
	w->last_tsc = w->ev.tsc;
	w->tick_off = UINT64_MAX;
	ev_bind(w);
	return 0;
}

/* Steps past the instruction the last event was bound to. */
static int post_resolve(struct prec_walk *w)
{
	const struct winsn *in = &w->post;

	w->has_post = false;
	return resolve(w, in->cls, in->direct, in->ip, in->len, in->target);
}

/*
 * After a block or an event, or at a sync: an event that binds where the
 * walk is now is made ready (pt_blk_proceed_trailing_event); the
 * instruction an event was bound to is stepped past when none is.
 */
static int trailing(struct prec_walk *w)
{
	for (;;) {
		int r;

		if (w->ready)
			return 0;
		if (!w->held && (w->status & pts_event_pending)) {
			r = fetch(w);
			if (r < 0)
				return r;
		}
		if (w->held && bound_here(w)) {
			w->ready = true;
			return 0;
		}
		if (!w->has_post)
			return 0;
		r = post_resolve(w);
		if (r < 0)
			return r;
	}
}

static int flags(const struct prec_walk *w)
{
	int f = 0;

	if (w->ready)
		f |= pts_event_pending;
	if (!w->enabled)
		f |= pts_ip_suppressed;
	if (!w->held && (w->status & pts_eos))
		f |= pts_eos;
	return f;
}

/* ---- blocks ---- */

/* A block from the cache, with no event in process. */
static inline __attribute__((always_inline)) int walk_block(struct prec_walk *w,
								  struct pt_block *b)
{
	const struct wblk *e = lookup(w, w->ip);
	uint64_t end;

	if (!e->ninsn) {
		b->ninsn = 0;
		b->end_ip = 0;
		b->iclass = ptic_error;
		b->truncated = 0;
		return e->err;
	}
	end = e->ip + e->end_off;
	b->ninsn = e->ninsn;
	b->end_ip = end;
	b->iclass = e->cls;
	b->truncated = e->truncated;
	/* Most blocks end in a conditional branch: resolve() for it, inline. */
	if (e->cls == ptic_cond_jump) {
		int taken = 0, st = moved(w, pt_qry_cond_branch(w->q, &taken));

		if (st < 0) {
			w->ip = end;
			return st;
		}
		w->status = st;
		tick(w, end);
		w->ip = taken ? e->target : end + e->len;
		return 0;
	}
	if (e->cls == ptic_call && !(e->direct && e->target == end + e->len))
		push_ret(w, end + e->len);
	return resolve(w, e->cls, e->direct, end, e->len, e->target);
}

/* Adds @in to @b; a near call's return address is pushed (but for a call to the next instruction). */
static void add(struct prec_walk *w, struct pt_block *b, const struct winsn *in)
{
	b->ninsn++;
	b->end_ip = in->ip;
	b->iclass = in->cls;
	b->truncated = in->truncated;
	if (in->cls == ptic_call && !(in->direct && in->target == in->ip + in->len))
		push_ret(w, in->ip + in->len);
}

/* Binds the event in process after @in, which is stepped past after it. */
static int bind_after(struct prec_walk *w, const struct winsn *in)
{
	w->post = *in;
	w->has_post = true;
	w->ready = true;
	return 0;
}

/*
 * A block toward the event in process, an instruction at a time
 * (pt_blk_proceed_to_insn, _to_ip): it ends where the event binds, after a
 * direct call or jump (unless to the event's IP), when full, or on error.
 */
static int walk_to_event(struct prec_walk *w, struct pt_block *b)
{
	for (;;) {
		struct winsn in;
		int r;

		if (bound_here(w)) {
			w->ready = true;
			return 0;
		}
		if (b->ninsn == BLOCK_MAX)
			return 0;
		r = decode(w, w->ip, &in);
		if (r < 0)
			return r;
		add(w, b, &in);
		if ((w->bk == B_PTW && (w->has_x ? in.ip == w->bx : in.cls == ptic_ptwrite)) ||
		    (w->bk == B_PIP && (in.bind & WB_PIP)) || (w->bk == B_VMCS && (in.bind & WB_VMCS))) {
			if (w->bk == B_PTW && !w->has_x) {
				w->ev.variant.ptwrite.ip = in.ip;
				w->ev.ip_suppressed = 0;
			}
			return bind_after(w, &in);
		}
		if (w->bk == B_DISABLED && !w->has_x && (in.bind & WB_MOVCR3)) {
			w->ip = in.ip + in.len;
			w->ready = true;
			return 0;
		}
		if (in.cls == ptic_other || in.cls == ptic_ptwrite) {
			w->ip = in.ip + in.len;
			if (in.truncated)
				return 0;
			continue;
		}
		if (in.direct && in.cls != ptic_cond_jump) {
			w->ip = in.target;
			if (w->has_x && w->ip == w->bx)
				continue;
			return 0;
		}
		/* The instruction needs trace. */
		if (w->bk == B_DISABLED) {
			w->ip = in.cls == ptic_call || in.cls == ptic_far_call ? in.ip + in.len : 0;
			w->ready = true;
			return 0;
		}
		if (w->bk != B_REACH) {
			w->ip = in.ip;
			return -pte_bad_query;
		}
		r = resolve(w, in.cls, in.direct, in.ip, in.len, in.target);
		if (r < 0)
			return r;
		if (bound_here(w))
			w->ready = true;
		return 0;
	}
}

/* Nothing in process or pending: the common case, a block and no more. */
static inline bool quiet(const struct prec_walk *w)
{
	return !(w->held | w->ready | w->has_post) && !(w->status & pts_event_pending);
}

int prec_walk_next(struct prec_walk *w, struct pt_block *b)
{
	int r;

	b->ip = w->ip;
	b->mode = w->mode;
	b->speculative = w->speculative;
	if (__builtin_expect(quiet(w) && w->enabled, 1)) {
		r = walk_block(w, b);
		if (r < 0)
			return r;
		/* A block sets no event in process but a tick (held and ready). */
		if (__builtin_expect(!w->held && !(w->status & pts_event_pending), 1))
			return w->status & pts_eos;
		r = trailing(w);
		return r < 0 ? r : flags(w);
	}
	b->ninsn = 0;
	b->end_ip = 0;
	b->iclass = ptic_error;
	b->truncated = 0;
	r = trailing(w);
	b->ip = w->ip;
	if (r < 0)
		return r;
	if (w->ready)
		return flags(w);
	if (w->held)
		r = walk_to_event(w, b);
	else if (!w->enabled)
		return (w->status & pts_eos) ? -pte_eos : -pte_no_enable;
	else
		r = walk_block(w, b);
	if (r < 0)
		return r;
	r = trailing(w);
	return r < 0 ? r : flags(w);
}

int prec_walk_event(struct prec_walk *w, struct pt_event *ev)
{
	int r;

	if (!w->ready)
		return -pte_bad_query;
	*ev = w->ev;
	w->held = w->ready = false;
	switch (ev->type) {
	case ptev_enabled:
		w->ip = ev->variant.enabled.ip;
		w->enabled = true;
		break;
	case ptev_disabled:
		w->enabled = false;
		break;
	case ptev_async_disabled:
		w->enabled = false;
		w->ip = ev->variant.async_disabled.at;
		break;
	case ptev_async_branch:
		w->ip = ev->variant.async_branch.to;
		break;
	case ptev_overflow:
		w->enabled = !ev->ip_suppressed;
		w->ip = ev->ip_suppressed ? 0 : ev->variant.overflow.ip;
		w->speculative = false;
		break;
	case ptev_exec_mode:
		w->mode = ev->variant.exec_mode.mode;
		break;
	case ptev_tsx:
		w->speculative = ev->variant.tsx.speculative;
		break;
	default:
		break;
	}
	r = trailing(w);
	return r < 0 ? r : flags(w);
}

/* ---- set-up ---- */

static int start(struct prec_walk *w, int st, uint64_t ip)
{
	int r;

	if (st < 0)
		return st;
	w->top = w->depth = 0;
	w->mode = ptem_unknown;
	w->held = w->ready = w->has_post = w->speculative = false;
	w->last_tsc = 0;
	w->tick_off = UINT64_MAX;
	w->status = st;
	w->enabled = !(st & pts_ip_suppressed);
	w->ip = w->enabled ? ip : 0;
	r = trailing(w);
	return r < 0 ? r : flags(w);
}

int prec_walk_sync_forward(struct prec_walk *w)
{
	uint64_t ip = 0;
	int st = moved(w, pt_qry_sync_forward(w->q, &ip));

	return start(w, st, ip);
}

int prec_walk_sync_set(struct prec_walk *w, uint64_t off)
{
	uint64_t ip = 0;
	int st = moved(w, pt_qry_sync_set(w->q, &ip, off));

	return start(w, st, ip);
}

int prec_walk_get_sync_offset(const struct prec_walk *w, uint64_t *off)
{
	return pt_qry_get_sync_offset(w->q, off);
}

void prec_walk_set_aspace(struct prec_walk *w, struct prec_aspace *as)
{
	unsigned i;

	w->as = as;
	for (i = 0; i < w->ntags && w->tags[i] != as; i++)
		;
	if (i == NTAGS) {
		/* Too many: the cache starts over. */
		memset(w->cache, 0, sizeof(*w->cache) << w->bits);
		w->ntags = i = 0;
	}
	if (i == w->ntags)
		w->tags[w->ntags++] = as;
	w->tag = (uint16_t)(i + 1);
}

struct prec_walk *prec_walk_alloc(const struct pt_config *cfg)
{
	struct prec_walk *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->bits = CACHE_FIRST;
	w->cache = calloc((size_t)1 << w->bits, sizeof(*w->cache));
	w->q = pt_qry_alloc_decoder(cfg);
	if (!w->cache || !w->q) {
		prec_walk_free(w);
		return NULL;
	}
	w->mode = ptem_unknown;
	w->tick_off = UINT64_MAX;
	moved(w, 0);
	prec_walk_set_aspace(w, NULL);
	return w;
}

int prec_walk_retarget(struct prec_walk *w, const struct pt_config *cfg)
{
	struct pt_query_decoder *q = pt_qry_alloc_decoder(cfg);

	if (!q)
		return -pte_nomem;
	pt_qry_free_decoder(w->q);
	w->q = q;
	moved(w, 0);
	return start(w, pts_ip_suppressed, 0) < 0 ? -pte_internal : 0;
}

void prec_walk_free(struct prec_walk *w)
{
	if (!w)
		return;
	for (int i = 0; i < 3; i++) {
		if (w->ci[i]) {
			cs_free(w->ci[i], 1);
			cs_close(&w->cs[i]);
		}
	}
	if (w->q)
		pt_qry_free_decoder(w->q);
	free(w->cache);
	free(w);
}

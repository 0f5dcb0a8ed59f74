// SPDX-License-Identifier: MIT
/*
 * The CoreSight software tracer: a QEMU user-mode TCG plugin for
 * qemu-aarch64 that follows the guest's control flow and writes it as ETMv4
 * instruction trace, as a trace unit programmed to trace EL0 only would
 * (TRCVICTLR excluding EL1-EL3), plus perf-format sideband and an optional
 * ground truth. man/ptrec-emulate-etm.7 describes what it emits.
 *
 * This file is the ETM half: A64 instruction classes, the packets, and what
 * a branch turns into. The rest (threads, triggers, sideband, exec) is the
 * core both tracers share, emulate/common/tracer.h, which calls the hooks at
 * the end of this file.
 *
 * Every thread's ETM byte stream is unformatted, as a TRBE would write it.
 * Each branch and ISB is an atom (E taken, N not), and an indirect branch
 * also gives its target address. An SVC is an exception into EL1: an
 * Exception packet (type Call) with the preferred return address, then
 * nothing while EL1 runs untraced, then Trace On and an Address with
 * Context packet where EL0 resumes. A TB whose successor is not one its last
 * instruction can reach was left asynchronously (a signal arrived between
 * TBs): an Exception packet of type IRQ at the interrupted instruction.
 */
#include <elf.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "common/maps.h"
#include "common/tracer.h"
#include "a64.h"
#include "etm_enc.h"

#ifndef EM_AARCH64
#define EM_AARCH64 183
#endif
#ifndef PERF_RECORD_TEXT_POKE
#define PERF_RECORD_TEXT_POKE 20
#endif

#define MAX_XMAPS 1024

/* The trace unit's options (emu_proto.h). */
static struct {
	int timestamp, contextid;
	unsigned sync_period;  /* log2 of the bytes between periodic syncs */
	int saw_etm;           /* the configuration is for this tracer */
} cfg = { .sync_period = 12 };

struct etm_tb {
	struct emu_tb c;   /* c.kind: enum a64_kind of the last instruction */
	uint32_t nisb;     /* ISBs before the last instruction */
	uint32_t *isb;     /* their indices, ascending */
};

struct etm_thr {
	struct emu_thr c;
	int synced;        /* A-sync and Trace Info sent since the unit was enabled */
	struct etm_enc enc;
	uint64_t sync_at;  /* stream offset of the last A-sync */
	uint64_t sync_end; /* stream offset just after the last sync's packets */
	uint64_t dec_pos;  /* where a decoder stands: after the last P0 element */
};

struct xmap {
	uint64_t lo, hi;
};

static struct xmap g_xmaps[MAX_XMAPS]; /* executable file mappings announced */
static int g_nxmaps;

static struct etm_thr *etm(struct emu_thr *t)
{
	return emu_container_of(t, struct etm_thr, c);
}

/* ---- ETM stream --------------------------------------------------------- */

/* Makes room for the next packets. */
static void room(struct etm_thr *x)
{
	if (x->enc.len > EMU_ENC_FLUSH)
		emu_stream_flush(&x->c);
}

/* A-sync and Trace Info (and a timestamp), as the unit sends when enabled
 * and every 2^sync_period bytes. */
static void put_sync(struct etm_thr *x)
{
	room(x);
	etm_enc_flush_atoms(&x->enc);
	x->sync_at = emu_stream_pos(&x->c);
	etm_enc_sync(&x->enc);
	if (cfg.timestamp)
		etm_enc_timestamp(&x->enc, emu_now());
	x->synced = 1;
	x->sync_end = emu_stream_pos(&x->c);
}

/* Tracing starts (again) at @ip: Trace On, then the address with context. */
static void put_trace_on(struct etm_thr *x, uint64_t ip)
{
	if (!x->synced) {
		put_sync(x);
	} else if (cfg.timestamp && (emu_stream_pos(&x->c) != x->sync_end || x->enc.natoms)) {
		/* A timestamp, unless the sync just before carried one. */
		room(x);
		etm_enc_timestamp(&x->enc, emu_now());
	}
	room(x);
	etm_enc_trace_on(&x->enc);
	etm_enc_addr_ctxt(&x->enc, ip);
	x->dec_pos = ip;
}

static void put_atom(struct etm_thr *x, int taken)
{
	room(x);
	etm_enc_atom(&x->enc, taken);
}

/* An indirect branch's target. */
static void put_target(struct etm_thr *x, uint64_t ip)
{
	room(x);
	etm_enc_addr(&x->enc, ip);
	x->dec_pos = ip;
}

static void put_exception(struct etm_thr *x, enum etm_exc type, uint64_t ret)
{
	room(x);
	etm_enc_exception(&x->enc, type, ret);
	x->dec_pos = ret;
}

/* ---- code outside the file mappings ------------------------------------ */

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
	struct emu_sb s;
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
	emu_sb_begin(&s, PERF_RECORD_TEXT_POKE, PERF_RECORD_MISC_USER);
	emu_sb_u64(&s, start);
	{
		uint16_t lens[2] = { 0, (uint16_t)len };

		emu_sb_put(&s, lens, 4);
	}
	emu_sb_put(&s, bytes, len);
	emu_sb_put(&s, zero, (8 - (len + 4) % 8) % 8);
	emu_sb_end(&s, emu_gettid());
}

/* ---- the core's hooks -------------------------------------------------- */

static void etm_cfg_key(const char *key, unsigned long long v)
{
	if (!strcmp(key, "etm"))
		cfg.saw_etm = v == 1;
	else if (!strcmp(key, "timestamp"))
		cfg.timestamp = !!v;
	else if (!strcmp(key, "contextid"))
		cfg.contextid = !!v;
	else if (!strcmp(key, "sync_period"))
		cfg.sync_period = v < 8 ? 8 : v > 20 ? 20 : (unsigned)v;
}

static int etm_cfg_check(void)
{
	if (!cfg.saw_etm) {
		emu_error("config is not for the CoreSight tracer: the plugin and ptrec come from different builds");
		return -1;
	}
	return 0;
}

static void etm_stream_init(struct emu_thr *t)
{
	struct etm_thr *x = etm(t);

	x->sync_at = 0;
	x->synced = 0;
	etm_enc_init(&x->enc, t->buf, EMU_ENC_CAP);
	x->enc.published = &t->sl->len;
	x->enc.cid = cfg.contextid;
}

static int etm_thr_init(struct emu_thr *t)
{
	etm_stream_init(t);
	return 0;
}

static void etm_tid_set(struct emu_thr *t)
{
	etm(t)->enc.contextid = (uint32_t)t->tid;
}

static size_t etm_buffered(struct emu_thr *t)
{
	return etm(t)->enc.len;
}

static void etm_drained(struct emu_thr *t)
{
	etm(t)->enc.len = 0;
	t->sl->len = 0;
}

static void etm_flush_held(struct emu_thr *t)
{
	etm_enc_flush_atoms(&etm(t)->enc);
}

static void etm_stream_start(struct emu_thr *t)
{
	put_sync(etm(t));
}

/*
 * The trace unit is enabled or disabled (AUX resume/pause). Disabling emits
 * nothing more: the Exception packet of entering EL1 was the last. Enabling
 * starts a new trace run, A-sync and Trace Info first.
 */
static void etm_trace_toggled(struct emu_thr *t, int on)
{
	if (on)
		put_sync(etm(t));
	else
		etm(t)->synced = 0;
}

/*
 * Address filters are ViewInst include ranges: an instruction outside them
 * is not traced, and tracing that starts again is Trace On and an Address
 * with Context packet. ViewInst is decided per instruction; the tracer
 * decides it per block, by the block's first instruction, which is the
 * same for ranges that begin and end at block boundaries (whole functions).
 * t->filt_out: ViewInst inactive.
 */
static int etm_to_user(struct emu_thr *t, uint64_t ip)
{
	struct etm_thr *x = etm(t);

	t->filt_out = emu_filtering() && !emu_filter_in(ip);
	if (t->filt_out)
		return 2; /* EL0 runs traced, but outside the filters: no packets */
	put_trace_on(x, ip);
	return 1;
}

/* An SVC is an exception into EL1, which this EL0-only trace does not see. */
static void etm_to_kernel(struct emu_thr *t, uint64_t ip, enum emu_entry why)
{
	struct etm_thr *x = etm(t);

	if (t->filt_out) {
		emu_set_filtered(t, 0); /* not traced there: nothing to say */
		return;
	}
	put_exception(x, why == EMU_ENTRY_SYSCALL ? ETM_EXC_CALL :
			 why == EMU_ENTRY_BREAKPOINT ? ETM_EXC_INST_DEBUG : ETM_EXC_IRQ, ip);
}

/* A block at @next is reached in sequence or by a branch: ViewInst there. */
static void view_at(struct emu_thr *t, uint64_t next)
{
	struct etm_thr *x = etm(t);
	int in;

	if (!t->pkt_en || !emu_filtering())
		return;
	in = emu_filter_in(next);
	if (t->filt_out && in) {
		put_trace_on(x, next);
		emu_set_filtered(t, 0);
	} else if (!t->filt_out && !in) {
		emu_set_filtered(t, 1);
	}
}

/* An E atom for each ISB among instructions [from, to): an ISB is a P0 element. */
static void etm_ran(struct emu_thr *t, uint32_t from, uint32_t to)
{
	struct etm_thr *x = etm(t);
	const struct etm_tb *p = emu_container_of(t->cur, struct etm_tb, c);
	uint32_t i;

	if (!t->pkt_en || t->filt_out)
		return;
	for (i = 0; i < p->nisb; i++)
		if (p->isb[i] >= from && p->isb[i] < to) {
			put_atom(x, 1);
			x->dec_pos = p->c.start + (uint64_t)4 * p->isb[i] + 4;
		}
}

static int etm_classify(struct qemu_plugin_tb *tb, size_t n, struct emu_tb *b)
{
	struct etm_tb *e = emu_container_of(b, struct etm_tb, c);
	struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, n - 1);
	uint32_t insn;
	size_t i;

	memcpy(&insn, qemu_plugin_insn_data(last), 4);
	b->kind = (uint8_t)a64_classify(insn, b->last, &b->target);
	for (i = 0; i + 1 < n; i++) {
		uint64_t dummy;

		memcpy(&insn, qemu_plugin_insn_data(qemu_plugin_tb_get_insn(tb, i)), 4);
		if (a64_classify(insn, 0, &dummy) != A64_ISB)
			continue;
		if (!e->isb)
			e->isb = calloc(n, sizeof(*e->isb));
		if (!e->isb)
			return -1;
		e->isb[e->nisb++] = (uint32_t)i;
	}
	return 0;
}

static void etm_translated(struct qemu_plugin_tb *tb, size_t n, const struct emu_tb *b)
{
	int outside;

	pthread_mutex_lock(&emu_lock);
	outside = !in_xmaps(b->start, b->next);
	pthread_mutex_unlock(&emu_lock);
	if (outside)
		send_code(tb, b->start, n);
}

static void etm_exec_mapped(uint64_t start, uint64_t len)
{
	pthread_mutex_lock(&emu_lock);
	if (g_nxmaps < MAX_XMAPS) {
		g_xmaps[g_nxmaps].lo = start;
		g_xmaps[g_nxmaps].hi = start + len;
		g_nxmaps++;
	}
	pthread_mutex_unlock(&emu_lock);
}

/*
 * The packets of the TB's last instruction: an atom for a branch or an ISB,
 * and the target address of an indirect branch.
 */
static int etm_resolve(struct emu_thr *t, uint64_t next, uint64_t *expect,
		       uint64_t *uret_fired)
{
	struct etm_thr *x = etm(t);
	const struct emu_tb *p = t->cur;
	int r = EMU_EXPECTED, pe;

	emu_finish_tb(t);
	t->cur = NULL;
	if (!t->user) {
		emu_return_to_user(t, next);
		return EMU_ARRIVED;
	}
	pe = t->pkt_en && !t->filt_out; /* the block ran traced */
	switch (p->kind) {
	case A64_OTHER:
	case A64_SVC:
	case A64_ERET:
		*expect = p->next;
		break;
	case A64_ISB:
		if (pe)
			put_atom(x, 1);
		x->dec_pos = p->next;
		*expect = p->next;
		break;
	case A64_COND:
		if (next == p->target || next == p->next) {
			if (pe)
				put_atom(x, next == p->target);
			x->dec_pos = next;
			r = EMU_ARRIVED;
		} else {
			/* Interrupted right after it: which way it went is unknown. */
			if (pe)
				put_atom(x, 0);
			x->dec_pos = p->next;
			*expect = p->next;
		}
		break;
	case A64_CALL:
		emu_shadow_push(t, p->next);
		/* fall through */
	case A64_JMP:
		if (pe)
			put_atom(x, 1);
		x->dec_pos = p->target;
		*expect = p->target;
		break;
	case A64_ICALL:
		emu_shadow_push(t, p->next);
		/* fall through */
	case A64_IJMP:
	case A64_RET:
		if (p->kind == A64_RET)
			*uret_fired = emu_shadow_ret(t, next);
		if (pe) {
			put_atom(x, 1);
			put_target(x, next);
		}
		x->dec_pos = next;
		r = EMU_ARRIVED;
		break;
	}
	/* Where the thread goes on for sure (else the core sees an interruption). */
	if (r == EMU_ARRIVED || next == *expect)
		view_at(t, next);
	return r;
}

/*
 * Periodic synchronisation: A-sync, Trace Info, and the address a decoder
 * that starts here needs: where the last P0 element took the thread.
 */
static void etm_periodic(struct emu_thr *t, uint64_t ip)
{
	struct etm_thr *x = etm(t);

	if (!t->pkt_en || t->filt_out || emu_stream_pos(t) - x->sync_at < (1ull << cfg.sync_period))
		return;
	put_sync(x);
	room(x);
	etm_enc_addr_ctxt(&x->enc, x->dec_pos);
}

/* The guest's system call numbers: the generic table arm64 uses. */
/*
 * The calls that may wait (tracer.c's may_wait()), by aarch64's numbers
 * (include/uapi/asm-generic/unistd.h): pselect6, ppoll, epoll_pwait,
 * epoll_pwait2, nanosleep, clock_nanosleep, wait4, waitid, rt_sigsuspend,
 * rt_sigtimedwait, accept, accept4, msgrcv, semop, semtimedop, futex_waitv;
 * read, readv, recvfrom, recvmsg, recvmmsg on pipes and sockets.
 */
static const int64_t a64_waits[] = {
	72, 73, 22, 441, 101, 115, 260, 95, 133, 137, 202, 242, 188, 193, 192, 449, -1
};
static const int64_t a64_reads[] = { 63, 65, 207, 212, 243, -1 };

const struct emu_arch emu_arch = {
	.target = "aarch64",
	.name = "CoreSight software tracer",
	.elf_machine = EM_AARCH64,
	.exec_check_interp = true,
	.sys = {
		.exit = 93, .exit_group = 94,
		.execve = 221, .execveat = 281,
		.mmap = 222, .prctl = 167,
		.clone = 220, .clone3 = 435,
		.fork = -1, .vfork = -1,
		.wait4 = 260, .waitid = 95,
		.waits = a64_waits, .reads = a64_reads, .futex = 98,
	},
	.thr_size = sizeof(struct etm_thr),
	.tb_size = sizeof(struct etm_tb),
	.cfg_key = etm_cfg_key,
	.cfg_check = etm_cfg_check,
	.thr_init = etm_thr_init,
	.stream_init = etm_stream_init,
	.tid_set = etm_tid_set,
	.buffered = etm_buffered,
	.drained = etm_drained,
	.flush_held = etm_flush_held,
	.stream_start = etm_stream_start,
	.trace_toggled = etm_trace_toggled,
	.to_user = etm_to_user,
	.to_kernel = etm_to_kernel,
	.ran = etm_ran,
	.classify = etm_classify,
	.translated = etm_translated,
	.exec_mapped = etm_exec_mapped,
	.resolve = etm_resolve,
	.periodic = etm_periodic,
};

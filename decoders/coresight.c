// SPDX-License-Identifier: MIT
/*
 * CoreSight decoder on OpenCSD's C API.
 *
 * OpenCSD pushes: we hand it trace bytes and it calls back with generic
 * elements. The decoder interface pulls, so the element callback fills a
 * queue and asks OpenCSD to WAIT once the queue has enough events; the next
 * pull drains the queue and then flushes OpenCSD until it continues. The
 * element callback never fails for lack of room: the queue grows.
 *
 * One stream may carry several trace IDs (formatter frames of a shared
 * sink). Everything that depends on the trace unit (the branch waiting for
 * its target, the thread and address space, the time) is kept per trace ID.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <opencsd/c_api/opencsd_c_api.h>
#include <opencsd/ete/trc_pkt_types_ete.h>
#include <opencsd/etmv4/trc_pkt_types_etmv4.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PREC_LSAN 1
#endif
#elif defined(__SANITIZE_ADDRESS__)
#define PREC_LSAN 1
#endif
#ifdef PREC_LSAN
#include <sanitizer/lsan_interface.h>
#endif

#include "base/perf_format.h"
#include "decoders/coresight.h"
#include "decoders/coresight_guard.h"
#include "decoders/evqueue.h"
#include "session/cs_meta.h"
#include "session/image.h"
#include "session/session.h"

/* ---- the decoder ---- */

#define NIDS 0x80
#define QSOFT 192                 /* ask OpenCSD to wait beyond this many queued events */
#define CHUNK 4096                /* bytes handed to OpenCSD at a time */
#define TRCCONFIGR_TS (1u << 11)
#define ETM_EXC_CALL 2            /* ETMv4/ETE exception type "Call": SVC, HVC, SMC */

enum st { S_SEG, S_FEED, S_DONE };

struct csd;

/* Decode state of one trace ID. */
struct cs_ctx {
	struct csd *d;
	bool used;
	uint8_t id;
	int cpu, pid, tid;
	struct prec_aspace *as;
	uint64_t ctx_until;       /* recheck the thread context when time passes this */
	size_t sb_idx;            /* per-CPU: next timeline record to apply */
	bool ctxid_tid;           /* the tid comes from the traced context ID */
	bool have_time;
	uint64_t ts, time;
	/* cs_settled(): */
	uint64_t ts_prev;         /* the timestamp before ts */
	unsigned nts;             /* timestamps so far, up to 2 */
	bool seen;                /* an element came from it */
	bool rng_last, rng_prev;  /* a range came after the last timestamp, the one before */
	uint8_t mode;             /* 64 (A64) or 32 (A32/T32) */
	/* the branch that ended the last range (or an exception), waiting for its target */
	bool pend;
	uint64_t pend_from, pend_ts;
	enum prec_br_kind pend_kind;
	uint8_t pend_len;
	uint32_t pend_flags;
	uint64_t last_ip;         /* the last instruction traced */
	bool tracing;             /* ranges seen since the last trace on */
	bool begin;               /* a trace on whose TRACE_BEGIN waits for its first range */
	struct prec_cs_guard guard; /* what OpenCSD's decoder must not see (coresight_guard.h) */
	bool guarded;             /* the guard kept a packet from it: its no-sync is said */
};

struct csd {
	struct prec_session *s;
	const struct prec_stream *st;
	struct prec_decoder_opts opts;
	struct prec_images *im;
	const struct prec_cs_meta *meta;
	enum prec_cs_format fmt;
	dcd_tree_handle_t tree;
	enum st state;
	size_t seg;               /* index of the next segment */
	size_t seg_start, pos, end; /* the current segment, and the next byte to feed */
	bool wait;                /* OpenCSD asked to wait: flush before feeding more */
	bool eot;                 /* end of trace sent for this segment */
	bool synced;              /* OpenCSD found a sync point in this segment */
	size_t fail_pos;          /* where decoding resumed after the last fatal error */
	int fail_count;
	int err;                  /* an error inside a callback (-ENOMEM) */
	uint64_t cur_idx;         /* trace index of the element being handled */
	bool timed;               /* the trace units emit timestamps */
	size_t start_at;          /* cs_settled(): the decode starts here (0: the stream's start) */
	/*
	 * cs_settled(): where the last segment's decode stood when its end of
	 * trace came, which makes OpenCSD give what it holds and the decoder
	 * let go of a branch that waits for its target (a prefix of the stream
	 * ends there, not the trace)
	 */
	bool end_synced;
	uint64_t end_cap;         /* the least timestamp of a branch waiting then, or ~0 */
	struct cs_ctx ctx[NIDS];
	struct prec_evq q;
};

static pthread_once_t log_once = PTHREAD_ONCE_INIT;

/*
 * OpenCSD reports the details of a bad packet (what, at which trace index)
 * only through its logger, as a line of text, from inside the data path
 * call. The logger is the library's, shared by all decode trees, but the
 * call runs on the decoding thread: a thread-local line is the right one.
 */
static __thread char log_line[256];
static __thread bool log_fresh;

static void log_in(const void *ctx, const char *msg, const int len)
{
	snprintf(log_line, sizeof(log_line), "%.*s", len, msg);
	log_fresh = true;
}

static void quiet_library(void)
{
	/* Log into log_in() only: nothing may reach stdout or stderr. */
	ocsd_def_errlog_init(OCSD_ERR_SEV_WARN, 1);
	ocsd_def_errlog_config_output(C_API_MSGLOGOUT_FLG_NONE, NULL);
}

static struct prec_tev *push_ev(struct csd *d, const struct cs_ctx *c, enum prec_tev_type type)
{
	struct prec_tev *e = prec_evq_push(&d->q);

	if (d->q.err)
		d->err = d->q.err;
	memset(e, 0, sizeof(*e));
	e->type = type;
	e->offset = prec_stream_offset(d->st, d->cur_idx);
	if (c) {
		e->time = c->have_time ? c->time : 0;
		e->tsc = c->have_time ? c->ts : 0;
		e->cpu = c->cpu;
		e->pid = c->pid;
		e->tid = c->tid;
	} else {
		e->cpu = d->st->cpu;
		e->tid = d->st->tid;
		e->pid = d->st->tid >= 0 ? prec_session_pid_of(d->s, d->st->tid, UINT64_MAX) : -1;
	}
	return e;
}

static void push_error(struct csd *d, struct cs_ctx *c, int code, uint64_t ip, const char *fmt,
		       ...) prec_printf(5, 6);

static void push_error(struct csd *d, struct cs_ctx *c, int code, uint64_t ip, const char *fmt,
		       ...)
{
	struct prec_tev *e = push_ev(d, c, PREC_TEV_ERROR);
	va_list ap;

	e->u.err.code = code;
	e->u.err.ip = ip;
	va_start(ap, fmt);
	vsnprintf(e->u.err.msg, sizeof(e->u.err.msg), fmt, ap);
	va_end(ap);
}

/* ---- thread and address-space context ---- */

static bool cpu_record(int cpu, const struct prec_sb *sb)
{
	int c = sb->cpu >= 0 ? sb->cpu : sb->ring_cpu;

	return c == cpu && (sb->type == PREC_SB_SWITCH || sb->type == PREC_SB_ITRACE_START);
}

/* Applies the per-CPU switch records up to @t; returns the next one's time. */
static uint64_t cpu_advance(struct csd *d, struct cs_ctx *c, uint64_t t)
{
	size_t n = prec_session_nr_sb(d->s), i;

	for (; c->sb_idx < n; c->sb_idx++) {
		const struct prec_sb *sb = prec_session_sb(d->s, c->sb_idx);

		if (sb->time > t)
			break;
		if (!cpu_record(c->cpu, sb))
			continue;
		if (sb->type == PREC_SB_ITRACE_START || (sb->type == PREC_SB_SWITCH && !sb->u.sw.out))
			c->tid = sb->tid;
		else if (sb->u.sw.cpu_wide)
			c->tid = sb->u.sw.next_prev_tid;
	}
	for (i = c->sb_idx; i < n; i++) {
		const struct prec_sb *sb = prec_session_sb(d->s, i);

		if (cpu_record(c->cpu, sb))
			return sb->time;
	}
	return UINT64_MAX;
}

static void update_context(struct csd *d, struct cs_ctx *c, bool force)
{
	/* Before the first timestamp of a timed trace, assume its beginning. */
	uint64_t t = c->have_time ? c->time : d->timed ? 0 : UINT64_MAX;
	uint64_t until = UINT64_MAX;
	int old_tid = c->tid, old_pid = c->pid;
	struct prec_aspace *as;

	if (!force && t < c->ctx_until)
		return;
	if (d->st->tid < 0 && !c->ctxid_tid && c->cpu >= 0)
		until = cpu_advance(d, c, t);
	c->pid = c->tid >= 0 ? prec_session_pid_of(d->s, c->tid, t) : -1;
	as = prec_images_aspace(d->im, c->pid, t);
	if (prec_aspace_end(as) < until)
		until = prec_aspace_end(as);
	c->ctx_until = until;
	c->as = as;
	if (!force && c->tid != old_tid && old_tid >= 0) {
		struct prec_tev *e = push_ev(d, c, PREC_TEV_SWITCH);

		e->u.sw.prev_pid = old_pid;
		e->u.sw.prev_tid = old_tid;
		/* A new thread: the branch pending from the old one is not its. */
		c->pend = false;
	}
}

/* A traced context ID names the thread (Linux writes the tid to CONTEXTIDR). */
static void set_ctxid(struct csd *d, struct cs_ctx *c, uint32_t ctxid)
{
	int old_tid = c->tid, old_pid = c->pid;

	if (d->st->tid >= 0 || !ctxid)
		return;
	c->ctxid_tid = true;
	if ((int)ctxid == c->tid)
		return;
	c->tid = (int)ctxid;
	update_context(d, c, true);
	if (old_tid >= 0) {
		struct prec_tev *e = push_ev(d, c, PREC_TEV_SWITCH);

		e->u.sw.prev_pid = old_pid;
		e->u.sw.prev_tid = old_tid;
		c->pend = false;
	}
}

/* ---- elements to events ---- */

static void set_time(struct csd *d, struct cs_ctx *c, uint64_t ts)
{
	c->ts_prev = c->ts;
	c->nts += c->nts < 2;
	c->rng_prev = c->rng_last;
	c->rng_last = false;
	c->ts = ts;
	c->time = prec_session_tsc_to_time(d->s, ts);
	c->have_time = true;
}

/* Emits the pending branch with target @to (0: unknown, tracing stopped). */
static void resolve_pending(struct csd *d, struct cs_ctx *c, uint64_t to)
{
	struct prec_tev *e;

	if (!c->pend)
		return;
	c->pend = false;
	e = push_ev(d, c, PREC_TEV_BRANCH);
	if (c->pend_ts) {
		e->tsc = c->pend_ts;
		e->time = prec_session_tsc_to_time(d->s, c->pend_ts);
	}
	e->u.branch.from = c->pend_from;
	e->u.branch.to = to;
	e->u.branch.kind = c->pend_kind;
	e->u.branch.insn_len = c->pend_len;
	e->u.branch.flags = c->pend_flags;
}

static void set_pending(struct cs_ctx *c, uint64_t from, enum prec_br_kind kind, uint8_t len,
			uint32_t flags)
{
	c->pend = true;
	c->pend_from = from;
	c->pend_kind = kind;
	c->pend_len = len;
	c->pend_flags = flags;
	c->pend_ts = c->have_time ? c->ts : 0;
}

/* The class of a range's last instruction, when it was a taken branch. */
static enum prec_br_kind range_branch(const ocsd_generic_trace_elem *el, uint32_t *flags)
{
	*flags = 0;
	if (!el->last_instr_exec)
		return PREC_BR_NONE; /* an N atom: a conditional branch not taken */
	switch (el->last_i_type) {
	case OCSD_INSTR_BR:
		if (el->last_i_subtype == OCSD_S_INSTR_BR_LINK)
			return PREC_BR_CALL;
		return el->last_instr_cond ? PREC_BR_COND : PREC_BR_JUMP;
	case OCSD_INSTR_BR_INDIRECT:
		*flags = PREC_BRF_INDIRECT;
		switch (el->last_i_subtype) {
		case OCSD_S_INSTR_BR_LINK:
			return PREC_BR_CALL;
		case OCSD_S_INSTR_V8_RET:
		case OCSD_S_INSTR_V7_IMPLIED_RET:
			return PREC_BR_RETURN;
		case OCSD_S_INSTR_V8_ERET:
			return PREC_BR_SYSRET;
		default:
			return PREC_BR_INDIRECT;
		}
	default:
		return PREC_BR_NONE;
	}
}

static void on_range(struct csd *d, struct cs_ctx *c, const ocsd_generic_trace_elem *el)
{
	uint8_t sz = el->last_instr_sz ? el->last_instr_sz : 4;
	uint64_t last = el->en_addr >= el->st_addr + sz ? el->en_addr - sz : el->st_addr;
	enum prec_br_kind k;
	uint32_t flags;

	c->mode = el->isa == ocsd_isa_aarch64 ? 64 : 32;
	resolve_pending(d, c, el->st_addr);
	if (c->begin) {
		struct prec_tev *e = push_ev(d, c, PREC_TEV_TRACE_BEGIN);

		e->u.trace.ip = el->st_addr;
		c->begin = false;
	}
	c->tracing = true;
	if (!d->opts.no_blocks) {
		struct prec_tev *e = push_ev(d, c, PREC_TEV_BLOCK);

		e->u.block.ip = el->st_addr;
		e->u.block.end_ip = last;
		e->u.block.ninsn = el->num_instr_range;
		e->u.block.mode = c->mode;
	}
	c->last_ip = last;
	k = range_branch(el, &flags);
	if (k != PREC_BR_NONE)
		set_pending(c, last, k, sz, flags);
}

static void on_trace_on(struct csd *d, struct cs_ctx *c, const ocsd_generic_trace_elem *el)
{
	/* A system call into an untraced exception level is not a pause. */
	bool syscall = c->pend && c->pend_kind == PREC_BR_SYSCALL;
	struct prec_tev *e;

	resolve_pending(d, c, 0);
	if (c->tracing) {
		e = push_ev(d, c, PREC_TEV_TRACE_END);
		e->u.trace.ip = c->last_ip;
		e->u.trace.reason = syscall ? PREC_END_SYSCALL : PREC_END_ASYNC;
	}
	c->tracing = false;
	if (el->trace_on_reason == TRACE_ON_OVERFLOW)
		push_ev(d, c, PREC_TEV_OVERFLOW);
	c->begin = true;
}

static void on_exception(struct csd *d, struct cs_ctx *c, const ocsd_generic_trace_elem *el)
{
	uint64_t ret = el->excep_ret_addr ? el->en_addr : 0;

	/* A branch taken just before the exception went to the return address. */
	resolve_pending(d, c, ret);
	if (el->exception_number == ETM_EXC_CALL && ret)
		set_pending(c, ret - 4, PREC_BR_SYSCALL, 4, PREC_BRF_INDIRECT);
	else
		set_pending(c, ret ? ret : c->last_ip, PREC_BR_INTERRUPT, 0, PREC_BRF_INDIRECT);
}

/*
 * What OpenCSD logged since the last call: the problem into @msg (empty if
 * nothing), and the trace index it named, if any, into *@idx. The lines
 * read "COMPONENT : 0xNN (CODE) [description]; TrcIdx=N; CS ID=NN; detail".
 */
static bool last_error(char *msg, size_t size, uint64_t *idx)
{
	const char *p, *q;

	msg[0] = 0;
	if (!log_fresh)
		return false;
	log_fresh = false;
	p = strstr(log_line, "TrcIdx=");
	if (p)
		*idx = strtoull(p + 7, NULL, 10);
	p = strstr(log_line, "CS ID=");
	if (p && (p = strchr(p, ';')) && p[1]) {
		p += 1 + strspn(p + 1, " ");
		snprintf(msg, size, "%s", p);
	} else if ((p = strchr(log_line, '[')) && (q = strchr(p, ']'))) {
		snprintf(msg, size, "%.*s", (int)(q - p - 1), p + 1);
	}
	msg[strcspn(msg, "\r\n")] = 0;
	return true;
}

static void on_no_sync(struct csd *d, struct cs_ctx *c, const ocsd_generic_trace_elem *el)
{
	char msg[64];
	uint64_t at = d->cur_idx;

	c->pend = false;
	c->tracing = false;
	c->begin = false;
	prec_cs_guard_nosync(&c->guard);
	switch (el->unsync_eot_info) {
	case UNSYNC_BAD_PACKET:
		if (c->guarded) { /* said when the guard kept the packet back */
			c->guarded = false;
			log_fresh = false;
			break;
		}
		/* The element comes a packet late; the log names the bad one. */
		if (last_error(msg, sizeof(msg), &at) && at <= d->cur_idx && at >= d->seg_start)
			d->cur_idx = at;
		push_error(d, c, PREC_DE_BADPKT, 0, "malformed ETM packet%s%s%s: waiting for A-sync",
			   msg[0] ? " (" : "", msg, msg[0] ? ")" : "");
		break;
	case UNSYNC_DISCARD:
		push_error(d, c, PREC_DE_CONTEXT, 0, "trace discarded: waiting for A-sync");
		break;
	case UNSYNC_OVERFLOW:
		push_ev(d, c, PREC_TEV_OVERFLOW);
		break;
	default:
		break;
	}
}

static struct cs_ctx *ctx_of(struct csd *d, uint8_t id)
{
	struct cs_ctx *c = &d->ctx[id & (NIDS - 1)];

	if (!c->used) {
		/* Not one we configured: OpenCSD only routes configured IDs. */
		c->d = d;
		c->used = true;
		c->id = id;
		c->cpu = d->st->cpu;
		c->tid = d->st->tid;
		c->pid = -1;
		c->mode = 64;
		update_context(d, c, true);
	}
	return c;
}

static ocsd_datapath_resp_t elem_in(const void *priv, const ocsd_trc_index_t idx, const uint8_t id,
				    const ocsd_generic_trace_elem *el)
{
	struct csd *d = (struct csd *)priv;
	struct cs_ctx *c = ctx_of(d, id);

	d->cur_idx = idx;
	c->seen = true;
	if (el->elem_type != OCSD_GEN_TRC_ELEM_NO_SYNC && el->elem_type != OCSD_GEN_TRC_ELEM_EO_TRACE)
		d->synced = true;
	if (el->elem_type == OCSD_GEN_TRC_ELEM_TIMESTAMP)
		set_time(d, c, el->timestamp);
	update_context(d, c, false);
	switch (el->elem_type) {
	case OCSD_GEN_TRC_ELEM_NO_SYNC:
		on_no_sync(d, c, el);
		break;
	case OCSD_GEN_TRC_ELEM_TRACE_ON:
		on_trace_on(d, c, el);
		break;
	case OCSD_GEN_TRC_ELEM_PE_CONTEXT:
		c->mode = el->context.bits64 ? 64 : 32;
		if (el->context.ctxt_id_valid)
			set_ctxid(d, c, el->context.context_id);
		break;
	case OCSD_GEN_TRC_ELEM_INSTR_RANGE:
		on_range(d, c, el);
		c->rng_last = c->rng_prev = true;
		break;
	case OCSD_GEN_TRC_ELEM_I_RANGE_NOPATH:
		resolve_pending(d, c, el->st_addr);
		push_error(d, c, PREC_DE_CONTEXT, el->st_addr,
			   "%u instructions from 0x%llx ran without path information",
			   el->num_instr_range, (unsigned long long)el->st_addr);
		c->last_ip = el->en_addr > el->st_addr ? el->en_addr - 4 : el->st_addr;
		break;
	case OCSD_GEN_TRC_ELEM_ADDR_NACC:
		resolve_pending(d, c, el->st_addr);
		push_error(d, c, PREC_DE_NOMAP, el->st_addr, "no code image for address 0x%llx",
			   (unsigned long long)el->st_addr);
		break;
	case OCSD_GEN_TRC_ELEM_ADDR_UNKNOWN:
		c->pend = false;
		break;
	case OCSD_GEN_TRC_ELEM_EXCEPTION:
		on_exception(d, c, el);
		break;
	case OCSD_GEN_TRC_ELEM_EO_TRACE:
		/*
		 * An exception is an event of its own even without its vector (the
		 * last system call); a branch without its target is left out.
		 */
		if (c->pend && (c->pend_kind == PREC_BR_SYSCALL || c->pend_kind == PREC_BR_INTERRUPT))
			resolve_pending(d, c, 0);
		c->pend = false;
		break;
	case OCSD_GEN_TRC_ELEM_EXCEPTION_RET:
		/* ERET ends its range as an indirect branch; only a bare one is new. */
		if (!c->pend)
			set_pending(c, c->last_ip, PREC_BR_SYSRET, 4, PREC_BRF_INDIRECT);
		break;
	default:
		break;
	}
	if (d->err)
		return OCSD_RESP_FATAL_SYS_ERR;
	return prec_evq_len(&d->q) >= QSOFT ? OCSD_RESP_WAIT : OCSD_RESP_CONT;
}

static uint32_t mem_in(const void *priv, const ocsd_vaddr_t addr, const ocsd_mem_space_acc_t space,
		       const uint8_t id, const uint32_t req, uint8_t *buf)
{
	struct csd *d = (struct csd *)priv;
	struct cs_ctx *c = &d->ctx[id & (NIDS - 1)];
	struct prec_aspace *as = c->used && c->as ? c->as : prec_images_aspace(d->im, -1, 0);

	return (uint32_t)prec_aspace_read(as, addr, buf, req);
}

/*
 * OpenCSD's packet monitor: each packet of trace ID @ctx just before its
 * decoder gets it. A packet the guard names would crash or hang the
 * decoder (coresight_guard.h): it reaches the decoder as a bad byte
 * sequence instead, which the decoder drops to wait for the next sync,
 * and the error is said here, at the packet.
 */
static void pkt_mon(const void *ctx, const ocsd_datapath_op_t op, const ocsd_trc_index_t idx,
		    const void *pkt, const uint32_t size, const uint8_t *data)
{
	struct cs_ctx *c = (struct cs_ctx *)ctx;
	const char *why;

	(void)size;
	(void)data;
	if (op != OCSD_OP_DATA || !pkt)
		return;
	why = prec_cs_guard_packet(&c->guard, pkt);
	if (!why)
		return;
	/* The decoder reads the packet the monitor was given (it is not const there). */
	((ocsd_etmv4_i_pkt *)pkt)->type = ETM4_PKT_I_BAD_SEQUENCE;
	c->d->cur_idx = idx;
	c->pend = false;
	c->tracing = false;
	c->begin = false;
	c->guarded = true;
	c->d->synced = true; /* the guard follows synchronized trace only */
	push_error(c->d, c, PREC_DE_BADPKT, 0, "malformed ETM packet (%s): waiting for A-sync", why);
}

/* ---- OpenCSD decode tree ---- */

static ocsd_arch_version_t arch_of(const struct prec_cs_source *src)
{
	switch (src->arch) {
	case PREC_CS_ARCH_V8:
		return ARCH_V8;
	case PREC_CS_ARCH_V8R3:
		return ARCH_V8r3;
	case PREC_CS_ARCH_AA64:
		return ARCH_AA64;
	default:
		return src->proto == PREC_CS_ETE ? ARCH_AA64 : ARCH_V8;
	}
}

/* TRCIDR1 of an ETMv4.0 A-profile unit, for metadata that lacks it. */
#define DEFAULT_IDR1 0x4100f403u
/* TRCDEVARCH of an ETE unit, for metadata that lacks it. */
#define DEFAULT_DEVARCH 0x47705a13u

static int add_decoder(struct csd *d, const struct prec_cs_source *src, uint8_t id)
{
	unsigned char csid = 0;
	struct cs_ctx *c;
	ocsd_err_t oe;

	/*
	 * ETE goes to OpenCSD's ETMv4 decoder, which is what its ETE decoder is:
	 * ETEConfig::copyV4() hands TrcPktProcEtmV4I and TrcPktDecodeEtmV4I an
	 * ETMv4 configuration whose version is TRCDEVARCH's (ARCHVER [15:12],
	 * REVISION [19:16]) and whose TRCIDR9-13 are zero. Given that version
	 * in TRCIDR1's TRCARCHMAJ/TRCARCHMIN, the ETMv4 decoder is the same
	 * decoder, with the one thing OpenCSD 1.3's C API gives only to
	 * ETMv4: a packet monitor, so the guard (coresight_guard.h) stands in
	 * front of ETE trace too.
	 */
	uint32_t devarch = src->devarch ? src->devarch : DEFAULT_DEVARCH;
	uint32_t idr1 = src->idr1 ? src->idr1 : DEFAULT_IDR1;
	bool ete = src->proto == PREC_CS_ETE;
	ocsd_etmv4_cfg cfg = {
		.reg_idr0 = src->idr0,
		.reg_idr1 = ete ? (idr1 & ~0xff0u) | ((devarch >> 12) & 0xf) << 8 |
				  ((devarch >> 16) & 0xf) << 4 : idr1,
		.reg_idr2 = src->idr2,
		.reg_idr8 = src->idr8,
		.reg_idr9 = ete ? 0 : src->idr9,
		.reg_idr10 = ete ? 0 : src->idr10,
		.reg_idr11 = ete ? 0 : src->idr11,
		.reg_idr12 = ete ? 0 : src->idr12,
		.reg_idr13 = ete ? 0 : src->idr13,
		.reg_configr = src->configr,
		.reg_traceidr = id,
		.arch_ver = arch_of(src),
		.core_prof = profile_CortexA,
	};

	oe = ocsd_dt_create_decoder(d->tree, OCSD_BUILTIN_DCD_ETMV4I, OCSD_CREATE_FLG_FULL_DECODER,
				    &cfg, &csid);
	if (oe != OCSD_OK) {
		char buf[64];

		ocsd_err_str(oe, buf, sizeof(buf));
		prec_session_warn(d->s, "cannot decode the trace of CPU %d (trace ID 0x%x): %s",
				  src->cpu, id, buf);
		return -PREC_E_DECODE;
	}
	c = &d->ctx[csid & (NIDS - 1)];
	ocsd_dt_attach_packet_callback(d->tree, csid, OCSD_C_API_CB_PKT_MON, (void *)pkt_mon, c);
	prec_cs_guard_reset(&c->guard, src->idr8);
	c->d = d;
	c->used = true;
	c->id = csid;
	c->cpu = src->cpu;
	c->tid = d->st->tid;
	c->pid = -1;
	c->mode = 64;
	if (src->configr & TRCCONFIGR_TS)
		d->timed = true;
	return 0;
}

/*
 * ocsd_dt_set_gen_elem_outfn(): OpenCSD 1.3.3 never frees the callback object
 * it makes (32 bytes per decode tree; later versions free it with the tree).
 * Under LeakSanitizer what the call allocates is not tracked, so that leak
 * is not reported and every other one is, with or without the library's
 * frames in the allocation stacks (fast unwinding stops in libstdc++).
 */
static ocsd_err_t set_elem_out(struct csd *d)
{
	ocsd_err_t oe;

#ifdef PREC_LSAN
	__lsan_disable();
#endif
	oe = ocsd_dt_set_gen_elem_outfn(d->tree, elem_in, d);
#ifdef PREC_LSAN
	__lsan_enable();
#endif
	return oe;
}

static int make_tree(struct csd *d, const struct prec_cs_source *one)
{
	const struct prec_cs_meta *m = d->meta;
	int added = 0;
	size_t i;

	if (d->fmt == PREC_CS_FMT_RAW)
		d->tree = ocsd_create_dcd_tree(OCSD_TRC_SRC_SINGLE, 0);
	else
		d->tree = ocsd_create_dcd_tree(OCSD_TRC_SRC_FRAME_FORMATTED,
					       d->fmt == PREC_CS_FMT_FSYNC ? OCSD_DFRMTR_HAS_FSYNCS :
					       OCSD_DFRMTR_FRAME_MEM_ALIGN);
	if (!d->tree)
		return -ENOMEM;
	ocsd_def_errlog_set_strprint_cb(d->tree, NULL, log_in);
	if (d->fmt == PREC_CS_FMT_RAW) {
		/* Unformatted data carries no ID: any valid one names the unit. */
		added = !add_decoder(d, one, one->trace_id ? one->trace_id : 0x10);
	} else {
		for (i = 0; i < m->n; i++) {
			const struct prec_cs_source *src = &m->src[i];

			if (one && src != one)
				continue;
			if (!src->trace_id) {
				prec_session_warn(d->s, "the trace ID of CPU %d is not known: its "
						  "trace cannot be told apart", src->cpu);
				continue;
			}
			added += !add_decoder(d, src, src->trace_id);
		}
	}
	if (!added)
		return 0; /* reported as an error event by the caller */
	if (set_elem_out(d) != OCSD_OK ||
	    ocsd_dt_add_callback_trcid_mem_acc(d->tree, 0, ~(ocsd_vaddr_t)0, OCSD_MEM_SPACE_ANY,
						mem_in, d) != OCSD_OK)
		return -PREC_E_DECODE;
	return added;
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

static void forget_state(struct csd *d)
{
	size_t i;

	for (i = 0; i < NIDS; i++) {
		d->ctx[i].pend = false;
		d->ctx[i].tracing = false;
		d->ctx[i].begin = false;
		d->ctx[i].guarded = false;
		prec_cs_guard_reset(&d->ctx[i].guard, d->ctx[i].guard.max_spec);
	}
}

static void start_segment(struct csd *d)
{
	size_t lo, hi;

	for (;;) {
		if (d->seg >= nr_segments(d->st)) {
			d->state = S_DONE;
			return;
		}
		seg_bounds(d->st, d->seg, &lo, &hi);
		if (hi <= d->start_at) { /* cs_settled(): before its window */
			d->seg++;
			continue;
		}
		lo = PREC_MAX(lo, d->start_at);
		if (d->seg > 0) {
			struct prec_tev *e;

			d->cur_idx = lo;
			e = push_ev(d, NULL, PREC_TEV_GAP);
			e->offset = prec_stream_offset(d->st, lo) - d->st->gaps[d->seg - 1].lost;
			e->u.gap.lost = d->st->gaps[d->seg - 1].lost;
			forget_state(d);
			ocsd_dt_process_data(d->tree, OCSD_OP_RESET, (ocsd_trc_index_t)lo, 0, NULL,
					     NULL);
		}
		d->seg++;
		if (hi > lo)
			break;
	}
	d->seg_start = lo;
	d->pos = lo;
	d->end = hi;
	d->eot = false;
	d->wait = false;
	d->synced = false;
	d->fail_count = 0;
	d->state = S_FEED;
}

/*
 * A fatal data path error (a broken frame, an unusable packet sequence):
 * report it, reset the tree and go on at the next frame (or byte).
 */
static void on_fatal(struct csd *d, size_t at)
{
	char msg[64];
	uint64_t where = at;
	size_t next;

	last_error(msg, sizeof(msg), &where);
	d->cur_idx = where <= at && where >= d->seg_start ? where : at;
	push_error(d, NULL, PREC_DE_BADPKT, 0, "undecodable trace data%s%s%s", msg[0] ? " (" : "",
		   msg, msg[0] ? ")" : "");
	ocsd_dt_process_data(d->tree, OCSD_OP_RESET, (ocsd_trc_index_t)at, 0, NULL, NULL);
	forget_state(d);
	if (d->fmt == PREC_CS_FMT_RAW)
		next = at + 1;
	else
		next = d->seg_start + PREC_ALIGN_UP(at + 1 - d->seg_start, OCSD_DFRMTR_FRAME_SIZE);
	/* Never stall at one place: each failure moves on. */
	if (d->fail_count && next <= d->fail_pos)
		next = d->fail_pos + 1;
	d->fail_pos = next;
	d->fail_count++;
	d->pos = PREC_MIN(next, d->end);
	d->wait = false;
}

static void feed(struct csd *d)
{
	ocsd_datapath_resp_t r;
	uint32_t used = 0;
	size_t n;

	log_fresh = false;
	if (d->wait) {
		r = ocsd_dt_process_data(d->tree, OCSD_OP_FLUSH, (ocsd_trc_index_t)d->pos, 0, NULL,
					 NULL);
		if (OCSD_DATA_RESP_IS_FATAL(r))
			on_fatal(d, d->pos);
		else
			d->wait = OCSD_DATA_RESP_IS_WAIT(r);
		return;
	}
	if (d->pos < d->end) {
		n = PREC_MIN(d->end - d->pos, (size_t)CHUNK);
		r = ocsd_dt_process_data(d->tree, OCSD_OP_DATA, (ocsd_trc_index_t)d->pos,
					 (uint32_t)n, d->st->data + d->pos, &used);
		d->pos += used;
		if (OCSD_DATA_RESP_IS_FATAL(r))
			on_fatal(d, d->pos);
		else
			d->wait = OCSD_DATA_RESP_IS_WAIT(r);
		return;
	}
	if (!d->eot) {
		d->eot = true;
		d->end_synced = d->synced;
		d->end_cap = UINT64_MAX;
		for (n = 0; n < NIDS; n++)
			if (d->ctx[n].pend)
				d->end_cap = PREC_MIN(d->end_cap, d->ctx[n].pend_ts);
		r = ocsd_dt_process_data(d->tree, OCSD_OP_EOT, (ocsd_trc_index_t)d->pos, 0, NULL,
					 NULL);
		d->wait = OCSD_DATA_RESP_IS_WAIT(r);
		return;
	}
	if (!d->synced) {
		d->cur_idx = d->seg_start;
		push_error(d, NULL, PREC_DE_NOSYNC, 0,
			   "no A-sync in %zu bytes of trace: nothing to decode",
			   d->end - d->seg_start);
	}
	d->state = S_SEG;
}

static int step(struct csd *d)
{
	switch (d->state) {
	case S_SEG:
		start_segment(d);
		break;
	case S_FEED:
		feed(d);
		break;
	case S_DONE:
		break;
	}
	return d->err;
}

static int refill(void *priv)
{
	struct csd *d = priv;
	int err;

	if (d->state == S_DONE)
		return 0;
	err = step(d);
	return err ? err : 1;
}

static int cs_next(void *priv, struct prec_tev *ev)
{
	struct csd *d = priv;

	return prec_evq_next(&d->q, ev, refill, d);
}

static int cs_next_ref(void *priv, const struct prec_tev **ev)
{
	struct csd *d = priv;

	return prec_evq_next_ref(&d->q, ev, refill, d);
}

static void cs_close(void *priv)
{
	struct csd *d = priv;

	if (!d)
		return;
	if (d->tree)
		ocsd_destroy_dcd_tree(d->tree);
	prec_evq_fini(&d->q);
	free(d);
}

static int cs_open(struct prec_session *s, const struct prec_stream *stream,
		   const struct prec_decoder_opts *opts, void **priv)
{
	const struct prec_cs_meta *m;
	const struct prec_cs_source *one = NULL;
	struct csd *d;
	size_t i;
	int err;

	*priv = NULL;
	if (!s || !stream || !prec_session_images(s))
		return -EINVAL;
	m = prec_cs_session_meta(s);
	if (!m || !m->n)
		return -EOPNOTSUPP;
	pthread_once(&log_once, quiet_library);
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	if (prec_evq_init(&d->q, 256)) {
		free(d);
		return -ENOMEM;
	}
	d->s = s;
	d->st = stream;
	if (opts)
		d->opts = *opts;
	d->im = prec_session_images(s);
	d->meta = m;
	if (stream->cpu >= 0)
		one = prec_cs_meta_cpu(m, stream->cpu);
	d->fmt = one ? one->format : m->src[0].format;
	if (d->fmt == PREC_CS_FMT_RAW && !one)
		one = &m->src[0];
	err = make_tree(d, one);
	if (err < 0) {
		cs_close(d);
		return err;
	}
	for (i = 0; i < NIDS; i++)
		if (d->ctx[i].used)
			update_context(d, &d->ctx[i], true);
	if (!err) {
		d->cur_idx = 0;
		if (one)
			push_error(d, NULL, PREC_DE_OTHER, 0,
				   "the trace ID of CPU %d is not known: nothing to decode",
				   one->cpu);
		else
			push_error(d, NULL, PREC_DE_OTHER, 0,
				   "no trace unit of this stream can be decoded");
		d->state = S_DONE;
	} else {
		d->state = S_SEG;
	}
	*priv = d;
	return 0;
}

/*
 * ptdump --follow (prec_decoder_ops.settled): the stream is a prefix of one
 * still being written. A decode of its end tells, for each trace ID, the
 * last two timestamps: the elements before the last but one came before it,
 * from whole packets and in order, and give the events they will give in
 * the whole stream. The end of the prefix lets go of what waits there: a
 * branch waiting for its target, taken at its own time. A range after the
 * last timestamp but one took any branch that waited from before it; a
 * trace unit without one, or with fewer than two timestamps, needs more of
 * the stream, up to all of it, where such a branch bounds the time. A last
 * segment not yet synced has an error the whole stream may not have: then
 * nothing is settled.
 */
#define CS_SETTLE_SCAN ((size_t)64 << 10)

/* The settled timestamp from a decode of @d's stream from @from; 0: none, or not *@enough. */
static uint64_t settled_from(struct csd *d, size_t from, bool *enough)
{
	struct csd *p;
	const struct prec_tev *ev;
	uint64_t ts = UINT64_MAX;
	bool any = false;
	void *pp;
	int err;

	*enough = false;
	if (cs_open(d->s, d->st, &d->opts, &pp))
		return 0;
	p = pp;
	p->start_at = from;
	while ((err = cs_next_ref(p, &ev)) > 0)
		;
	*enough = !err;
	for (size_t i = 0; i < NIDS; i++) {
		const struct cs_ctx *c = &p->ctx[i];

		if (!c->seen)
			continue;
		any = true;
		if (c->nts < 2 || (from && !c->rng_prev))
			*enough = false;
		ts = PREC_MIN(ts, c->ts_prev);
	}
	if (!from)
		ts = PREC_MIN(ts, p->end_cap);
	if (!any || !p->end_synced || !p->eot)
		*enough = false;
	cs_close(p);
	return *enough && ts != UINT64_MAX ? ts : 0;
}

static uint64_t cs_settled(void *priv)
{
	struct csd *d = priv;
	size_t back = CS_SETTLE_SCAN, from;
	bool enough;
	uint64_t ts;

	if (!d->timed)
		return 0;
	for (;;) {
		from = d->st->len > back ? d->st->len - back : 0;
		ts = settled_from(d, from, &enough);
		if (enough || !from)
			break;
		back *= 4;
	}
	return ts ? prec_session_tsc_to_time(d->s, ts) : 0;
}

const struct prec_decoder_ops prec_coresight_decoder = {
	.name = "coresight",
	.open = cs_open,
	.next = cs_next,
	.next_ref = cs_next_ref,
	.close = cs_close,
	.settled = cs_settled,
};

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

#include "coresight.h"
#include "image.h"
#include "output.h"
#include "perf_format.h"
#include "session.h"
#include "tfile.h"

/* ---- metadata ---- */

#define CS_MAX_ID 0x6f
#define CS_MAX_PARAMS 64          /* more per-CPU parameters than any perf writes */
#define CS_TRACE_ID_UNUSED 0x80000000ull

struct prec_cs_meta *prec_cs_meta_new(void)
{
	return calloc(1, sizeof(struct prec_cs_meta));
}

void prec_cs_meta_free(struct prec_cs_meta *m)
{
	if (!m)
		return;
	free(m->src);
	free(m);
}

int prec_cs_meta_add(struct prec_cs_meta *m, const struct prec_cs_source *src)
{
	struct prec_cs_source *n;

	if (!m || !src || src->cpu < 0 || src->trace_id > CS_MAX_ID ||
	    (src->proto != PREC_CS_ETMV4 && src->proto != PREC_CS_ETE) ||
	    src->format > PREC_CS_FMT_RAW || src->arch > PREC_CS_ARCH_AA64)
		return -EINVAL;
	if (prec_cs_meta_cpu(m, src->cpu))
		return -EEXIST;
	n = realloc(m->src, (m->n + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	m->src = n;
	n[m->n++] = *src;
	return 0;
}

const struct prec_cs_source *prec_cs_meta_cpu(const struct prec_cs_meta *m, int cpu)
{
	size_t i;

	for (i = 0; m && i < m->n; i++)
		if (m->src[i].cpu == cpu)
			return &m->src[i];
	return NULL;
}

const struct prec_cs_source *prec_cs_meta_trace_id(const struct prec_cs_meta *m, uint8_t id)
{
	size_t i;

	for (i = 0; m && id && i < m->n; i++)
		if (m->src[i].trace_id == id)
			return &m->src[i];
	return NULL;
}

int prec_cs_meta_set_trace_id(struct prec_cs_meta *m, int cpu, uint8_t id)
{
	struct prec_cs_source *s = (struct prec_cs_source *)prec_cs_meta_cpu(m, cpu);

	if (!id || id > CS_MAX_ID)
		return -EINVAL;
	if (!s)
		return -ENOENT;
	s->trace_id = id;
	return 0;
}

int prec_cs_meta_set_format(struct prec_cs_meta *m, int cpu, enum prec_cs_format fmt)
{
	size_t i;
	int found = 0;

	if (!m || fmt > PREC_CS_FMT_RAW)
		return -EINVAL;
	for (i = 0; i < m->n; i++) {
		if (cpu >= 0 && m->src[i].cpu != cpu)
			continue;
		m->src[i].format = fmt;
		found = 1;
	}
	return found || cpu < 0 ? 0 : -ENOENT;
}

int prec_cs_hw_id_trace_id(uint64_t hw_id, uint8_t *id)
{
	uint8_t v = hw_id & 0xff;

	if (hw_id >> 60)
		return -PREC_E_VERSION;
	if (!v || v > CS_MAX_ID)
		return -EINVAL;
	*id = v;
	return 0;
}

int prec_cs_meta_apply_hw_id(struct prec_cs_meta *m, int cpu, uint64_t hw_id)
{
	uint8_t id;
	int err = prec_cs_hw_id_trace_id(hw_id, &id);

	return err ? err : prec_cs_meta_set_trace_id(m, cpu, id);
}

/*
 * One per-CPU block of perf's layout at @blk (@avail words): header version
 * 0 has MAGIC, CPU and the parameters; later versions put the parameter
 * count after CPU. Fills @src and *@used (words consumed).
 */
static int parse_block(const uint64_t *blk, size_t avail, unsigned version, size_t index,
		       struct prec_cs_source *src, size_t *used, struct prec_diag *d)
{
	uint64_t magic, nparams;
	size_t first;
	const uint64_t *p;
	uint64_t traceidr;

	memset(src, 0, sizeof(*src));
	if (avail < 2)
		return prec_diag_set(d, -PREC_E_FORMAT, -1,
				     "cs_etm metadata ends inside the block of CPU #%zu", index);
	magic = blk[CS_ETM_MAGIC];
	if (magic == CS_ETMV3_MAGIC)
		return prec_diag_set(d, -EOPNOTSUPP, -1,
				     "ETMv3/PTM trace (32-bit Arm cores) is not supported");
	if (magic != CS_ETMV4_MAGIC && magic != CS_ETE_MAGIC)
		return prec_diag_set(d, -PREC_E_FORMAT, -1,
				     "cs_etm metadata block #%zu has an unknown magic 0x%llx",
				     index, (unsigned long long)magic);
	if (blk[CS_ETM_CPU] > 0xffff)
		return prec_diag_set(d, -PREC_E_FORMAT, -1,
				     "cs_etm metadata block #%zu names CPU %llu", index,
				     (unsigned long long)blk[CS_ETM_CPU]);
	if (version == 0) {
		if (magic != CS_ETMV4_MAGIC)
			return prec_diag_set(d, -PREC_E_FORMAT, -1,
					     "ETE metadata in a version 0 cs_etm header");
		first = 2;
		nparams = CS_ETMV4_TRCAUTHSTATUS - CS_ETMV4_TRCCONFIGR + 1;
	} else {
		if (avail < 3)
			return prec_diag_set(d, -PREC_E_FORMAT, -1,
					     "cs_etm metadata ends inside the block of CPU #%zu",
					     index);
		first = CS_ETM_COMMON_BLK_MAX_V1;
		nparams = blk[CS_ETM_NR_TRC_PARAMS];
	}
	if (nparams > CS_MAX_PARAMS || nparams > avail - first)
		return prec_diag_set(d, -PREC_E_FORMAT, -1,
				     "cs_etm metadata block #%zu claims %llu parameters, %zu words left",
				     index, (unsigned long long)nparams, avail - first);
	/* Everything up to TRCIDR2 is needed to configure a decoder. */
	if (nparams < CS_ETMV4_TRCIDR2 - CS_ETMV4_TRCCONFIGR + 1)
		return prec_diag_set(d, -PREC_E_FORMAT, -1,
				     "cs_etm metadata block #%zu has only %llu parameters", index,
				     (unsigned long long)nparams);
	p = blk + first - CS_ETMV4_TRCCONFIGR; /* p[CS_ETMV4_*] is the parameter */
#define PARAM(i) ((size_t)(i) - CS_ETMV4_TRCCONFIGR < nparams ? p[i] : 0)
	src->cpu = (int)blk[CS_ETM_CPU];
	src->proto = magic == CS_ETE_MAGIC ? PREC_CS_ETE : PREC_CS_ETMV4;
	src->configr = (uint32_t)PARAM(CS_ETMV4_TRCCONFIGR);
	traceidr = PARAM(CS_ETMV4_TRCTRACEIDR);
	src->idr0 = (uint32_t)PARAM(CS_ETMV4_TRCIDR0);
	src->idr1 = (uint32_t)PARAM(CS_ETMV4_TRCIDR1);
	src->idr2 = (uint32_t)PARAM(CS_ETMV4_TRCIDR2);
	src->idr8 = (uint32_t)PARAM(CS_ETMV4_TRCIDR8);
	src->authstatus = (uint32_t)PARAM(CS_ETMV4_TRCAUTHSTATUS);
	if (src->proto == PREC_CS_ETE) {
		src->devarch = (uint32_t)PARAM(CS_ETE_TRCDEVARCH);
		src->ts_source = PARAM(CS_ETE_TS_SOURCE);
	} else {
		src->ts_source = PARAM(CS_ETMV4_TS_SOURCE);
	}
#undef PARAM
	/* From version 2 the real IDs come in AUX_OUTPUT_HW_ID records. */
	if (!(version >= 2 && (traceidr & CS_TRACE_ID_UNUSED)) && (traceidr & 0x7f) &&
	    (traceidr & 0x7f) <= CS_MAX_ID)
		src->trace_id = traceidr & 0x7f;
	*used = first + (size_t)nparams;
	return 0;
}

int prec_cs_meta_from_auxtrace_info(const uint64_t *priv, size_t n, struct prec_cs_meta **out,
				    struct prec_diag *d)
{
	struct prec_cs_meta *m = NULL;
	struct prec_cs_source src;
	uint64_t version, ncpus;
	size_t pos, used, i;
	int err;

	*out = NULL;
	if (!priv || n < CS_HEADER_VERSION_MAX)
		return prec_diag_set(d, -PREC_E_FORMAT, -1,
				     "cs_etm AUXTRACE_INFO has %zu words, fewer than its header", n);
	version = priv[CS_HEADER_VERSION];
	if (version > 2)
		return prec_diag_set(d, -PREC_E_VERSION, -1,
				     "cs_etm AUXTRACE_INFO header version %llu is newer than this "
				     "ptdump reads (0 to 2)", (unsigned long long)version);
	ncpus = priv[CS_PMU_TYPE_CPUS] & 0xffffffffu;
	if (!ncpus || ncpus > (n - CS_HEADER_VERSION_MAX) / 2)
		return prec_diag_set(d, -PREC_E_FORMAT, -1,
				     "cs_etm AUXTRACE_INFO claims %llu CPUs in %zu words",
				     (unsigned long long)ncpus, n);
	m = prec_cs_meta_new();
	if (!m)
		return -ENOMEM;
	pos = CS_HEADER_VERSION_MAX;
	for (i = 0; i < ncpus; i++) {
		err = parse_block(priv + pos, n - pos, (unsigned)version, i, &src, &used, d);
		if (err)
			goto out;
		pos += used;
		err = prec_cs_meta_add(m, &src);
		if (err == -EEXIST) {
			err = prec_diag_set(d, -PREC_E_FORMAT, -1,
					    "cs_etm metadata lists CPU %d twice", src.cpu);
			goto out;
		}
		if (err)
			goto out;
	}
	*out = m;
	m = NULL;
	err = 0;
out:
	prec_cs_meta_free(m);
	return err;
}

int prec_cs_meta_from_etm_blocks(const struct prec_tfile_etm *b, uint32_t n,
				 struct prec_cs_meta **out, struct prec_diag *d)
{
	struct prec_cs_meta *m = NULL;
	struct prec_cs_source src;
	size_t used;
	uint32_t i;
	int err;

	*out = NULL;
	if (!b && n)
		return -EINVAL;
	m = prec_cs_meta_new();
	if (!m)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		/* kind is the low 32 bits of the block's magic. */
		if (!b[i].regs || !b[i].nregs || (uint32_t)b[i].regs[CS_ETM_MAGIC] != b[i].kind) {
			err = prec_diag_set(d, -PREC_E_FORMAT, -1,
					    "etm block #%u does not start with its kind 0x%x", i,
					    b[i].kind);
			goto out;
		}
		err = parse_block(b[i].regs, b[i].nregs, 1, i, &src, &used, d);
		if (err)
			goto out;
		if (b[i].cpu >= 0)
			src.cpu = b[i].cpu;
		err = prec_cs_meta_add(m, &src);
		if (err == -EEXIST) {
			err = prec_diag_set(d, -PREC_E_FORMAT, -1,
					    "the etm blocks list CPU %d twice", src.cpu);
			goto out;
		}
		if (err)
			goto out;
	}
	*out = m;
	m = NULL;
	err = 0;
out:
	prec_cs_meta_free(m);
	return err;
}

/* ---- the metadata lives in the session ---- */

static void meta_free(void *p)
{
	prec_cs_meta_free(p);
}

int prec_cs_session_attach(struct prec_session *s, struct prec_cs_meta *m)
{
	if (!s || !m) {
		prec_cs_meta_free(m);
		return -EINVAL;
	}
	prec_session_set_trace_meta(s, m, meta_free);
	return 0;
}

const struct prec_cs_meta *prec_cs_session_meta(const struct prec_session *s)
{
	return prec_session_trace_meta(s);
}

const struct prec_decoder_ops *prec_decoder_for_session(const struct prec_session *s)
{
	if (s && (prec_cs_session_meta(s) || !strcmp(prec_session_machine(s)->vendor, "ARM")))
		return &prec_coresight_decoder;
	return &prec_intel_pt_decoder;
}

/* ---- the decoder ---- */

#define NIDS 0x80
#define QSOFT 192                 /* ask OpenCSD to wait beyond this many queued events */
#define CHUNK 4096                /* bytes handed to OpenCSD at a time */
#define TRCCONFIGR_TS (1u << 11)
#define ETM_EXC_CALL 2            /* ETMv4/ETE exception type "Call": SVC, HVC, SMC */

enum st { S_SEG, S_FEED, S_DONE };

/* Decode state of one trace ID. */
struct cs_ctx {
	bool used;
	uint8_t id;
	int cpu, pid, tid;
	struct prec_aspace *as;
	uint64_t ctx_until;       /* recheck the thread context when time passes this */
	size_t sb_idx;            /* per-CPU: next timeline record to apply */
	bool ctxid_tid;           /* the tid comes from the traced context ID */
	bool have_time;
	uint64_t ts, time;
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
	struct cs_ctx ctx[NIDS];
	struct prec_tev *q;
	size_t qcap, qh, qt;      /* ring of qcap (a power of 2) events */
	struct prec_tev sink;     /* where events go when the ring cannot grow */
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

static size_t qlen(const struct csd *d)
{
	return d->qt - d->qh;
}

static struct prec_tev *push_ev(struct csd *d, const struct cs_ctx *c, enum prec_tev_type type)
{
	struct prec_tev *e;

	if (qlen(d) == d->qcap) {
		size_t nc = d->qcap * 2, i;
		struct prec_tev *nq = malloc(nc * sizeof(*nq));

		if (!nq) {
			d->err = -ENOMEM;
			return &d->sink;
		}
		for (i = 0; i < qlen(d); i++)
			nq[i] = d->q[(d->qh + i) & (d->qcap - 1)];
		free(d->q);
		d->q = nq;
		d->qt = qlen(d);
		d->qh = 0;
		d->qcap = nc;
	}
	e = &d->q[d->qt & (d->qcap - 1)];
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
	d->qt++;
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
	switch (el->unsync_eot_info) {
	case UNSYNC_BAD_PACKET:
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
	return qlen(d) >= QSOFT ? OCSD_RESP_WAIT : OCSD_RESP_CONT;
}

static uint32_t mem_in(const void *priv, const ocsd_vaddr_t addr, const ocsd_mem_space_acc_t space,
		       const uint8_t id, const uint32_t req, uint8_t *buf)
{
	struct csd *d = (struct csd *)priv;
	struct cs_ctx *c = &d->ctx[id & (NIDS - 1)];
	struct prec_aspace *as = c->used && c->as ? c->as : prec_images_aspace(d->im, -1, 0);

	return (uint32_t)prec_aspace_read(as, addr, buf, req);
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

	if (src->proto == PREC_CS_ETE) {
		ocsd_ete_cfg cfg = {
			.reg_idr0 = src->idr0,
			.reg_idr1 = src->idr1 ? src->idr1 : DEFAULT_IDR1,
			.reg_idr2 = src->idr2,
			.reg_idr8 = src->idr8,
			.reg_devarch = src->devarch ? src->devarch : DEFAULT_DEVARCH,
			.reg_configr = src->configr,
			.reg_traceidr = id,
			.arch_ver = arch_of(src),
			.core_prof = profile_CortexA,
		};

		oe = ocsd_dt_create_decoder(d->tree, OCSD_BUILTIN_DCD_ETE, OCSD_CREATE_FLG_FULL_DECODER,
					    &cfg, &csid);
	} else {
		ocsd_etmv4_cfg cfg = {
			.reg_idr0 = src->idr0,
			.reg_idr1 = src->idr1 ? src->idr1 : DEFAULT_IDR1,
			.reg_idr2 = src->idr2,
			.reg_idr8 = src->idr8,
			.reg_idr9 = src->idr9,
			.reg_idr10 = src->idr10,
			.reg_idr11 = src->idr11,
			.reg_idr12 = src->idr12,
			.reg_idr13 = src->idr13,
			.reg_configr = src->configr,
			.reg_traceidr = id,
			.arch_ver = arch_of(src),
			.core_prof = profile_CortexA,
		};

		oe = ocsd_dt_create_decoder(d->tree, OCSD_BUILTIN_DCD_ETMV4I,
					    OCSD_CREATE_FLG_FULL_DECODER, &cfg, &csid);
	}
	if (oe != OCSD_OK) {
		char buf[64];

		ocsd_err_str(oe, buf, sizeof(buf));
		prec_session_warn(d->s, "cannot decode the trace of CPU %d (trace ID 0x%x): %s",
				  src->cpu, id, buf);
		return -PREC_E_DECODE;
	}
	c = &d->ctx[csid & (NIDS - 1)];
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
	if (ocsd_dt_set_gen_elem_outfn(d->tree, elem_in, d) != OCSD_OK ||
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

static int cs_next(void *priv, struct prec_tev *ev)
{
	struct csd *d = priv;
	int err;

	while (d->qh == d->qt) {
		if (d->state == S_DONE)
			return 0;
		err = step(d);
		if (err)
			return err;
	}
	*ev = d->q[d->qh & (d->qcap - 1)];
	d->qh++;
	return 1;
}

static void cs_close(void *priv)
{
	struct csd *d = priv;

	if (!d)
		return;
	if (d->tree)
		ocsd_destroy_dcd_tree(d->tree);
	free(d->q);
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
	d->qcap = 256;
	d->q = malloc(d->qcap * sizeof(*d->q));
	if (!d->q) {
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

const struct prec_decoder_ops prec_coresight_decoder = {
	.name = "coresight",
	.open = cs_open,
	.next = cs_next,
	.close = cs_close,
};

/* ---- instruction ranges, trc_pkt_lister style ---- */

int prec_cs_print_ranges(struct prec_session *s, const struct prec_output_opts *o, FILE *out)
{
	const struct prec_cs_meta *m = prec_cs_session_meta(s);
	struct prec_decoder_opts dopts = { .no_blocks = false };
	struct prec_decoder *dec = NULL;
	struct prec_tev ev;
	size_t i, n = prec_session_nr_streams(s);
	int err = 0;

	for (i = 0; i < n; i++) {
		const struct prec_stream *st = prec_session_stream(s, i);

		if (o && o->cpu >= 0 && st->cpu >= 0 && st->cpu != o->cpu)
			continue;
		if (o && o->tid >= 0 && st->tid >= 0 && st->tid != o->tid)
			continue;
		err = prec_decoder_open(&prec_coresight_decoder, s, st, &dopts, &dec);
		if (err)
			return err;
		while ((err = prec_decoder_next(dec, &ev)) > 0) {
			const struct prec_cs_source *src = prec_cs_meta_cpu(m, ev.cpu);
			unsigned id = src ? src->trace_id : 0;
			unsigned long long off = (unsigned long long)ev.offset;

			switch (ev.type) {
			case PREC_TEV_BLOCK:
				fprintf(out, "Idx:%llu; ID:%x; exec range=0x%llx:[0x%llx] num_i(%u)\n",
					off, id, (unsigned long long)ev.u.block.ip,
					(unsigned long long)ev.u.block.end_ip + 4,
					ev.u.block.ninsn);
				break;
			case PREC_TEV_ERROR:
				fprintf(out, "Idx:%llu; ID:%x; ERROR: %s\n", off, id, ev.u.err.msg);
				break;
			case PREC_TEV_GAP:
				fprintf(out, "Idx:%llu; GAP: %llu bytes lost\n", off,
					(unsigned long long)ev.u.gap.lost);
				break;
			default:
				break;
			}
		}
		prec_decoder_free(dec);
		dec = NULL;
		if (err < 0)
			return err;
		if (ferror(out))
			break;
	}
	if (fflush(out) || ferror(out))
		return errno == EPIPE ? -EPIPE : -EIO;
	return 0;
}

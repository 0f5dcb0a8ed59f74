// SPDX-License-Identifier: MIT
/*
 * Decoder and formatter tests on Intel PT made by libipt's encoder.
 *
 * Each test assembles a small program at run time, takes its instructions
 * from objdump (an independent disassembler), walks a known control flow
 * over them (the decisions of conditional and indirect branches are given by
 * the test), and encodes that walk as PT packets. The walk also yields the
 * expected branch events, executed instructions and call trace, which the
 * session -> image -> decoder -> formatter path must reproduce exactly.
 */
#include <errno.h>
#include <intel-pt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "decoders/decoder.h"
#include "decoders/evqueue.h"
#include "harness.h"
#include "session/image.h"
#include "output/output.h"
#include "base/perf_abi.h"
#include "session/session.h"

/* ---- test programs ---- */

struct insn {
	uint64_t addr;
	int len;
	char mn[16];
	char op[96];
};

struct prog {
	char path[512];
	struct insn in[512];
	size_t n;
	struct {
		char name[64];
		uint64_t addr;
	} sym[64];
	size_t nsym;
	uint64_t seg_vaddr, seg_off, seg_filesz;
	uint8_t bid[20];
	size_t bid_size;
};

static FILE *cmd_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static FILE *cmd_out(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return popen(cmd, "r");
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Assembles @src into tmpdir/@name and reads it back with objdump, nm, readelf. */
static bool build_prog(struct prog *p, const char *name, const char *src)
{
	char spath[600], line[1400];
	FILE *f;
	int rc;

	memset(p, 0, sizeof(*p));
	snprintf(spath, sizeof(spath), "%s/%s.S", t_tmpdir(), name);
	snprintf(p->path, sizeof(p->path), "%s/%s", t_tmpdir(), name);
	f = fopen(spath, "w");
	if (!T_OK(f))
		return false;
	fputs(src, f);
	fclose(f);
	snprintf(line, sizeof(line), "cc -nostdlib -static -no-pie -Wl,--build-id -o %s %s",
		 p->path, spath);
	rc = system(line);
	if (!T_OK(rc == 0))
		return false;

	f = cmd_out("objdump -d --insn-width=16 %s", p->path);
	while (f && fgets(line, sizeof(line), f)) {
		struct insn *in = &p->in[p->n];
		char *tab1 = strchr(line, '\t'), *tab2, *nl;
		unsigned long long a;

		if (!tab1 || sscanf(line, " %llx:", &a) != 1 || p->n == 512)
			continue;
		tab2 = strchr(tab1 + 1, '\t');
		if (!tab2)
			continue;
		in->addr = a;
		for (char *c = tab1 + 1; c < tab2; c++)
			if (hexval(c[0]) >= 0 && hexval(c[1]) >= 0) {
				in->len++;
				c++;
			}
		nl = strchr(tab2, '\n');
		if (nl)
			*nl = '\0';
		sscanf(tab2 + 1, "%15s %95[^\n]", in->mn, in->op);
		p->n++;
	}
	if (f)
		pclose(f);
	f = cmd_out("nm %s", p->path);
	while (f && fgets(line, sizeof(line), f) && p->nsym < 64) {
		unsigned long long a;
		char t;

		if (sscanf(line, "%llx %c %63s", &a, &t, p->sym[p->nsym].name) == 3) {
			p->sym[p->nsym].addr = a;
			p->nsym++;
		}
	}
	if (f)
		pclose(f);
	f = cmd_out("readelf -lW %s", p->path);
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long off, va, pa, fs, ms;

		if (strstr(line, "LOAD") && strstr(line, "R E") &&
		    sscanf(line, " LOAD %llx %llx %llx %llx %llx", &off, &va, &pa, &fs, &ms) == 5) {
			p->seg_off = off;
			p->seg_vaddr = va;
			p->seg_filesz = fs;
		}
	}
	if (f)
		pclose(f);
	f = cmd_out("readelf -n %s", p->path);
	while (f && fgets(line, sizeof(line), f)) {
		char *b = strstr(line, "Build ID: ");

		if (b)
			for (b += 10; hexval(b[0]) >= 0 && hexval(b[1]) >= 0 && p->bid_size < 20;
			     b += 2)
				p->bid[p->bid_size++] = (uint8_t)(hexval(b[0]) * 16 + hexval(b[1]));
	}
	if (f)
		pclose(f);
	return T_OK(p->n > 0) && T_OK(p->nsym > 0) && T_OK(p->seg_filesz > 0) &&
	       T_OK(p->bid_size == 20);
}

static uint64_t sym(const struct prog *p, const char *name)
{
	for (size_t i = 0; i < p->nsym; i++)
		if (!strcmp(p->sym[i].name, name))
			return p->sym[i].addr;
	t_check(false, __FILE__, __LINE__, "no symbol %s", name);
	return 0;
}

static const struct insn *insn_at(const struct prog *p, uint64_t a)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->in[i].addr == a)
			return &p->in[i];
	return NULL;
}

/* ---- encoding ---- */

struct enc {
	struct pt_encoder *e;
	uint8_t *buf;
	size_t cap;
	uint64_t tnt;
	int ntnt;
	int err;
	uint64_t tsc;
};

static void enc_init(struct enc *x, size_t cap)
{
	struct pt_config c;

	memset(x, 0, sizeof(*x));
	x->buf = calloc(1, cap);
	x->cap = cap;
	pt_config_init(&c);
	c.begin = x->buf;
	c.end = x->buf + cap;
	x->e = pt_alloc_encoder(&c);
}

static void enc_free(struct enc *x)
{
	pt_free_encoder(x->e);
	free(x->buf);
}

static uint64_t enc_off(struct enc *x)
{
	uint64_t o = 0;

	pt_enc_get_offset(x->e, &o);
	return o;
}

static void enc_pkt(struct enc *x, struct pt_packet *pk)
{
	if (pt_enc_next(x->e, pk) < 0)
		x->err = 1;
}

static void enc_flush_tnt(struct enc *x)
{
	struct pt_packet pk;

	if (!x->ntnt)
		return;
	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_tnt_8;
	pk.payload.tnt.bit_size = (uint8_t)x->ntnt;
	pk.payload.tnt.payload = x->tnt;
	enc_pkt(x, &pk);
	x->tnt = 0;
	x->ntnt = 0;
}

static void enc_tnt(struct enc *x, bool taken)
{
	x->tnt = (x->tnt << 1) | taken;
	if (++x->ntnt == 6)
		enc_flush_tnt(x);
}

static void enc_ip(struct enc *x, enum pt_packet_type t, uint64_t ip, bool suppress)
{
	struct pt_packet pk;

	enc_flush_tnt(x);
	memset(&pk, 0, sizeof(pk));
	pk.type = t;
	pk.payload.ip.ipc = suppress ? pt_ipc_suppressed : pt_ipc_sext_48;
	pk.payload.ip.ip = ip;
	enc_pkt(x, &pk);
}

static void enc_mode64(struct enc *x)
{
	struct pt_packet pk;

	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_mode;
	pk.payload.mode.leaf = pt_mol_exec;
	pk.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	enc_pkt(x, &pk);
}

static void enc_simple(struct enc *x, enum pt_packet_type t)
{
	struct pt_packet pk;

	memset(&pk, 0, sizeof(pk));
	pk.type = t;
	enc_pkt(x, &pk);
}

static void enc_tsc(struct enc *x, uint64_t tsc)
{
	struct pt_packet pk;

	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_tsc;
	pk.payload.tsc.tsc = tsc;
	enc_pkt(x, &pk);
	x->tsc = tsc;
}

/* PSB+; with @fup the trace is enabled at @ip. */
static void enc_psb(struct enc *x, bool fup, uint64_t ip, uint64_t tsc)
{
	enc_flush_tnt(x);
	enc_simple(x, ppt_psb);
	if (tsc)
		enc_tsc(x, tsc);
	if (fup) {
		enc_mode64(x);
		enc_ip(x, ppt_fup, ip, false);
	}
	enc_simple(x, ppt_psbend);
}

/* ---- the control-flow walk ---- */

struct xev {
	enum prec_tev_type type;
	uint64_t a, b;            /* branch from/to, trace ip */
	enum prec_br_kind kind;
	uint64_t tsc;             /* the last TSC encoded before it */
};

struct sim {
	const struct prog *p;
	const char *conds;        /* 'T'/'N' per conditional branch */
	const uint64_t *ind;      /* indirect targets in order */
	size_t nind;
	bool noretcomp;
	unsigned psb_every;       /* PSB+ before every Nth instruction, 0: none */
	unsigned pause_at;        /* pause and resume before this instruction */
	uint64_t tsc_step;        /* with PSBs: TSC advances this much per insn */
	size_t ci, ii;
	struct xev ev[4096];
	size_t nev;
	uint64_t exec[65536];
	size_t nexec;
	uint64_t stack[256];
	int sp;
	int rc_depth;             /* calls since the last PSB (return compression) */
	uint64_t psb_off[64];     /* stream offset of each mid-flow PSB */
	size_t psb_ev[64];        /* index into ev at that PSB */
	size_t npsb;
};

static void xpush(struct sim *s, enum prec_tev_type t, uint64_t a, uint64_t b,
		  enum prec_br_kind k, uint64_t tsc)
{
	if (s->nev < 4096)
		s->ev[s->nev++] = (struct xev){ t, a, b, k, tsc };
}

static uint64_t op_target(const char *op)
{
	return strtoull(op, NULL, 16);
}

/*
 * Walks from @start until a syscall (which disables tracing) and encodes it.
 * Returns false if the flow leaves the known code or the script runs out.
 */
static bool sim_run(struct sim *s, struct enc *x, uint64_t start, uint64_t tsc0)
{
	uint64_t ip = start;
	unsigned steps = 0;

	if (tsc0)
		enc_tsc(x, tsc0);
	enc_mode64(x);
	enc_ip(x, ppt_tip_pge, ip, false);
	xpush(s, PREC_TEV_TRACE_BEGIN, ip, 0, 0, x->tsc);
	s->rc_depth = 0;
	while (steps++ < 60000) {
		const struct insn *in = insn_at(s->p, ip);
		uint64_t next, to;

		if (!in)
			return false;
		if (s->psb_every && steps > 1 && steps % s->psb_every == 0 && s->npsb < 64) {
			enc_flush_tnt(x);
			s->psb_off[s->npsb] = enc_off(x);
			s->psb_ev[s->npsb++] = s->nev;
			enc_psb(x, true, ip, s->tsc_step ? tsc0 + steps * s->tsc_step : 0);
			s->rc_depth = 0;
		}
		if (s->pause_at && steps == s->pause_at) {
			/* An asynchronous disable (FUP, TIP.PGD) and a re-enable there. */
			enc_flush_tnt(x);
			enc_ip(x, ppt_fup, ip, false);
			enc_ip(x, ppt_tip_pgd, 0, true);
			xpush(s, PREC_TEV_TRACE_END, ip, 0, 0, x->tsc);
			enc_mode64(x);
			enc_ip(x, ppt_tip_pge, ip, false);
			xpush(s, PREC_TEV_TRACE_BEGIN, ip, 0, 0, x->tsc);
			s->rc_depth = 0;
		}
		if (s->nexec < 65536)
			s->exec[s->nexec++] = ip;
		next = ip + (uint64_t)in->len;
		if (!strcmp(in->mn, "call")) {
			if (in->op[0] == '*') {
				if (s->ii == s->nind)
					return false;
				to = s->ind[s->ii++];
				enc_ip(x, ppt_tip, to, false);
			} else {
				to = op_target(in->op);
			}
			s->stack[s->sp++ & 255] = next;
			s->rc_depth++;
			xpush(s, PREC_TEV_BRANCH, ip, to, PREC_BR_CALL, x->tsc);
			ip = to;
		} else if (!strcmp(in->mn, "ret")) {
			if (s->sp <= 0)
				return false;
			to = s->stack[--s->sp & 255];
			if (!s->noretcomp && s->rc_depth > 0) {
				enc_tnt(x, true);
				s->rc_depth--;
			} else {
				enc_ip(x, ppt_tip, to, false);
			}
			xpush(s, PREC_TEV_BRANCH, ip, to, PREC_BR_RETURN, x->tsc);
			ip = to;
		} else if (!strcmp(in->mn, "jmp")) {
			if (in->op[0] == '*') {
				if (s->ii == s->nind)
					return false;
				to = s->ind[s->ii++];
				enc_ip(x, ppt_tip, to, false);
				xpush(s, PREC_TEV_BRANCH, ip, to, PREC_BR_INDIRECT, x->tsc);
			} else {
				to = op_target(in->op);
				xpush(s, PREC_TEV_BRANCH, ip, to, PREC_BR_JUMP, x->tsc);
			}
			ip = to;
		} else if (in->mn[0] == 'j') {
			char c = s->conds[s->ci];

			if (!c)
				return false;
			s->ci++;
			enc_tnt(x, c == 'T');
			if (c == 'T') {
				to = op_target(in->op);
				xpush(s, PREC_TEV_BRANCH, ip, to, PREC_BR_COND, x->tsc);
				ip = to;
			} else {
				ip = next;
			}
		} else if (!strcmp(in->mn, "syscall")) {
			enc_ip(x, ppt_tip_pgd, 0, true);
			xpush(s, PREC_TEV_BRANCH, ip, 0, PREC_BR_SYSCALL, x->tsc);
			xpush(s, PREC_TEV_TRACE_END, ip, 0, 0, x->tsc);
			return true;
		} else {
			ip = next;
		}
	}
	return false;
}

/* ---- sideband records (default sample_type IDENTIFIER|TID|TIME|CPU) ---- */

struct sbuf {
	uint8_t b[8192];
	size_t n;
};

static void put(struct sbuf *s, const void *p, size_t n)
{
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

static void put64(struct sbuf *s, uint64_t v)
{
	put(s, &v, 8);
}

static void put32x2(struct sbuf *s, uint32_t a, uint32_t b)
{
	put(s, &a, 4);
	put(s, &b, 4);
}

static size_t rec_begin(struct sbuf *s, uint32_t type, uint16_t misc)
{
	size_t at = s->n;
	uint16_t z = 0;

	put(s, &type, 4);
	put(s, &misc, 2);
	put(s, &z, 2);
	return at;
}

static void rec_end(struct sbuf *s, size_t at, int pid, int tid, uint64_t time, int cpu,
		    uint64_t id)
{
	uint16_t size;

	put32x2(s, (uint32_t)pid, (uint32_t)tid);
	put64(s, time);
	put32x2(s, (uint32_t)cpu, 0);
	put64(s, id);
	size = (uint16_t)(s->n - at);
	memcpy(s->b + at + 6, &size, 2);
}

static void rec_str(struct sbuf *s, const char *str)
{
	size_t l = strlen(str) + 1, pad = (8 - l % 8) % 8;
	uint8_t z[8] = { 0 };

	put(s, str, l);
	put(s, z, pad);
}

static void rec_mmap2(struct sbuf *s, int pid, int tid, uint64_t start, uint64_t len,
		      uint64_t pgoff, const char *path, const uint8_t *bid, size_t bsz,
		      uint64_t time)
{
	size_t at = rec_begin(s, PERF_RECORD_MMAP2,
			      PERF_RECORD_MISC_USER | (bsz ? PERF_RECORD_MISC_MMAP_BUILD_ID : 0));
	uint8_t u[24] = { 0 };

	put32x2(s, (uint32_t)pid, (uint32_t)tid);
	put64(s, start);
	put64(s, len);
	put64(s, pgoff);
	u[0] = (uint8_t)bsz;
	memcpy(u + 4, bid, bsz);
	put(s, u, 24);
	put32x2(s, PROT_READ | PROT_EXEC, MAP_PRIVATE);
	rec_str(s, path);
	rec_end(s, at, pid, tid, time, 0, 1);
}

static void rec_comm(struct sbuf *s, int pid, int tid, const char *comm, bool exec,
		     uint64_t time)
{
	size_t at = rec_begin(s, PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0);

	put32x2(s, (uint32_t)pid, (uint32_t)tid);
	rec_str(s, comm);
	rec_end(s, at, pid, tid, time, 0, 1);
}

static void rec_switch(struct sbuf *s, int cpu, bool out, int pid, int tid, int np, int nt,
		       uint64_t time)
{
	size_t at = rec_begin(s, PERF_RECORD_SWITCH_CPU_WIDE,
			      out ? PERF_RECORD_MISC_SWITCH_OUT : 0);

	put32x2(s, (uint32_t)np, (uint32_t)nt);
	rec_end(s, at, pid, tid, time, cpu, 1);
}

static void rec_sample(struct sbuf *s, uint64_t id, uint64_t ip, int pid, int tid,
		       uint64_t time, int cpu, uint64_t period)
{
	size_t at = rec_begin(s, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	uint16_t size;

	put64(s, id);
	put64(s, ip);
	put32x2(s, (uint32_t)pid, (uint32_t)tid);
	put64(s, time);
	put32x2(s, (uint32_t)cpu, 0);
	put64(s, period);
	size = (uint16_t)(s->n - at);
	memcpy(s->b + at + 6, &size, 2);
}

/* ---- session setup ---- */

enum img_src { IMG_EMBED, IMG_DISK, IMG_NONE, IMG_WRONG_BID };

static void set_machine(struct prec_session *s, bool tsc)
{
	struct prec_machine m;

	memset(&m, 0, sizeof(m));
	strcpy(m.vendor, "GenuineIntel");
	m.family = 6;
	m.model = 0x55;
	m.stepping = 4;
	m.cpuid_15_eax = 2;
	m.cpuid_15_ebx = 100;
	m.max_nonturbo_ratio = 30;
	m.mtc_period = 3;
	m.tsc = tsc;
	if (tsc) {
		/* time = 1000000 + tsc * 3 / 2 */
		m.time_shift = 1;
		m.time_mult = 3;
		m.time_zero = 1000000;
		m.cap_user_time_zero = true;
	}
	prec_session_set_machine(s, &m);
}

static void add_prog(struct prec_session *s, struct sbuf *sb, const struct prog *p, int pid,
		     int tid, enum img_src src, uint64_t time)
{
	uint8_t wrong[20];
	uint64_t start = p->seg_vaddr & ~0xfffull, pgoff = p->seg_off & ~0xfffull;
	uint64_t len = (p->seg_vaddr - start) + p->seg_filesz;
	const uint8_t *bid = p->bid;

	if (src == IMG_WRONG_BID) {
		memcpy(wrong, p->bid, 20);
		wrong[0] ^= 0xff;
		bid = wrong;
	}
	rec_mmap2(sb, pid, tid, start, len, pgoff, p->path, bid, 20, time);
	if (src == IMG_EMBED) {
		struct prec_image_desc d = { 0 };
		FILE *f = fopen(p->path, "rb");
		static uint8_t bytes[1 << 16];
		size_t n = f ? fread(bytes, 1, sizeof(bytes), f) : 0;

		if (f)
			fclose(f);
		/* Embedded under another name: found by build id, not by path. */
		d.path = "/nonexistent/embedded-copy";
		d.build_id = p->bid;
		d.build_id_size = 20;
		d.file_offset = 0;
		d.bytes = bytes;
		d.size = n;
		T_EQ_INT(prec_session_add_image(s, &d), 0);
	}
}

static struct prec_session *make_session(const struct prog *p, enum img_src src,
					 const struct enc *x, bool tsc, int tid)
{
	struct prec_session *s = prec_session_new();
	struct sbuf sb = { .n = 0 };
	struct prec_evdesc d = { .name = "intel_pt//u", .kind = PREC_EVK_TRACER };
	uint64_t id = 1;

	set_machine(s, tsc);
	T_OK(prec_session_add_event(s, &d, &id, 1) == 0);
	if (src == IMG_NONE)
		rec_comm(&sb, tid, tid, "prog", true, 0);
	else {
		rec_comm(&sb, tid, tid, "prog", true, 0);
		add_prog(s, &sb, p, tid, tid, src, 0);
	}
	T_OK(prec_session_add_sideband(s, sb.b, sb.n, -1) > 0);
	T_EQ_INT(prec_session_add_aux(s, -1, tid, 0, x->buf, enc_off((struct enc *)x)), 0);
	T_EQ_INT(prec_session_finalize(s), 0);
	return s;
}

/* Decodes stream 0 into @ev (max @max). */
static size_t decode_all(struct prec_session *s, size_t si, struct prec_tev *ev, size_t max,
			 bool blocks)
{
	struct prec_decoder_opts o = { .no_blocks = !blocks };
	struct prec_decoder *d;
	size_t n = 0;
	int r;

	r = prec_decoder_open(&prec_intel_pt_decoder, s, prec_session_stream(s, si), &o, &d);
	T_EQ_INT(r, 0);
	if (r)
		return 0;
	while (n < max && (r = prec_decoder_next(d, &ev[n])) > 0)
		n++;
	T_EQ_INT(r, 0);
	prec_decoder_free(d);
	/*
	 * Without the copy (prec_decoder_next_ref()), the same events. Blocks
	 * may split differently on a second decode (libipt's block cache is
	 * warm then), so: the other events in order, and the instructions.
	 */
	r = prec_decoder_open(&prec_intel_pt_decoder, s, prec_session_stream(s, si), &o, &d);
	T_EQ_INT(r, 0);
	if (!r) {
		const struct prec_tev *e;
		uint64_t insn1 = 0, insn2 = 0;
		size_t i = 0;

		for (size_t k = 0; k < n; k++)
			insn1 += ev[k].type == PREC_TEV_BLOCK ? ev[k].u.block.ninsn : 0;
		while ((r = prec_decoder_next_ref(d, &e)) > 0 && insn2 <= insn1) {
			if (e->type == PREC_TEV_BLOCK) {
				insn2 += e->u.block.ninsn;
				continue;
			}
			while (i < n && ev[i].type == PREC_TEV_BLOCK)
				i++;
			if (i == n)
				break;
			T_OK(!memcmp(e, &ev[i], offsetof(struct prec_tev, u) + 24));
			i++;
		}
		if (n < max)
			T_EQ_U64(insn2, insn1);
	}
	prec_decoder_free(d);
	return n;
}

/* Compares decoded branch/trace events with the walk's, from index @from. */
static bool same_flow(const struct prec_tev *ev, size_t n, const struct sim *sm, size_t from)
{
	size_t i, j = from;
	bool ok = true;

	for (i = 0; i < n && ok; i++) {
		const struct xev *x;

		if (ev[i].type != PREC_TEV_BRANCH && ev[i].type != PREC_TEV_TRACE_BEGIN &&
		    ev[i].type != PREC_TEV_TRACE_END)
			continue;
		if (!T_OK(j < sm->nev))
			return false;
		x = &sm->ev[j++];
		ok = t_check(ev[i].type == x->type, __FILE__, __LINE__,
			     "event %zu: type %d, expected %d", i, ev[i].type, x->type);
		if (ok && x->type == PREC_TEV_BRANCH)
			ok = t_check(ev[i].u.branch.from == x->a && ev[i].u.branch.to == x->b &&
					     ev[i].u.branch.kind == x->kind,
				     __FILE__, __LINE__,
				     "event %zu: branch %#" PRIx64 "->%#" PRIx64 " kind %d, "
				     "expected %#" PRIx64 "->%#" PRIx64 " kind %d",
				     i, ev[i].u.branch.from, ev[i].u.branch.to,
				     ev[i].u.branch.kind, x->a, x->b, x->kind);
		else if (ok)
			ok = t_check(ev[i].u.trace.ip == x->a, __FILE__, __LINE__,
				     "event %zu: trace ip %#" PRIx64 ", expected %#" PRIx64, i,
				     ev[i].u.trace.ip, x->a);
	}
	return ok && t_check(j == sm->nev, __FILE__, __LINE__, "%zu of %zu expected events seen",
			     j - from, sm->nev - from);
}

static const char prog1_src[] =
	"	.text\n"
	"	.globl _start\n"
	"	.type _start,@function\n"
	"_start:\n"
	"	call f_a\n"
	"	call f_b\n"
	"	mov $3, %ecx\n"
	"1:	dec %ecx\n"
	"	jnz 1b\n"
	"	lea f_c(%rip), %rax\n"
	"	call *%rax\n"
	"	lea 2f(%rip), %rdx\n"
	"	jmp *%rdx\n"
	"2:	jmp 3f\n"
	"	nop\n"
	"3:	mov $60, %eax\n"
	"	syscall\n"
	"	.size _start, .-_start\n"
	"	.globl f_a\n"
	"	.type f_a,@function\n"
	"f_a:\n"
	"	call f_b\n"
	"	ret\n"
	"	.size f_a, .-f_a\n"
	"	.type f_b,@function\n"
	"f_b:\n"
	"	test %eax, %eax\n"
	"	je 4f\n"
	"	nop\n"
	"4:	ret\n"
	"	.size f_b, .-f_b\n"
	"	.type f_c,@function\n"
	"f_c:\n"
	"	ret\n"
	"	.size f_c, .-f_c\n";

/* The flow of prog1: f_b's je is taken, then not, then taken; loop T,T,N. */
static bool prog1_flow(struct prog *p, struct sim *sm, struct enc *x, bool noretcomp,
		       uint64_t tsc)
{
	static uint64_t ind[2];

	if (!build_prog(p, "prog1", prog1_src))
		return false;
	memset(sm, 0, sizeof(*sm));
	sm->p = p;
	sm->conds = "TNTTTN";
	ind[0] = sym(p, "f_c");
	ind[1] = insn_at(p, sym(p, "_start"))->addr; /* patched below */
	/* The second indirect target is the "2:" label: the jmp after "jmp *%rdx". */
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->in[i].mn, "jmp") && p->in[i].op[0] == '*')
			ind[1] = p->in[i].addr + (uint64_t)p->in[i].len;
	sm->ind = ind;
	sm->nind = 2;
	sm->noretcomp = noretcomp;
	enc_init(x, 1 << 16);
	enc_psb(x, false, 0, tsc);
	return T_OK(sim_run(sm, x, sym(p, "_start"), tsc)) && T_OK(!x->err);
}

static void decode_events(void)
{
	static struct prec_tev ev[4096];
	static struct sim sm;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	size_t n, i, k = 0;
	bool ok = true;

	if (!prog1_flow(&p, &sm, &x, false, 0))
		return;
	s = make_session(&p, IMG_EMBED, &x, false, 42);
	n = decode_all(s, 0, ev, 4096, true);
	T_OK(same_flow(ev, n, &sm, 0));
	/* The blocks cover exactly the executed instructions, in order. */
	for (i = 0; i < n && ok; i++) {
		uint64_t ip;
		uint32_t c = 0;

		if (ev[i].type != PREC_TEV_BLOCK)
			continue;
		for (ip = ev[i].u.block.ip; c < ev[i].u.block.ninsn; c++) {
			const struct insn *in = insn_at(&p, ip);

			ok = t_check(k < sm.nexec && sm.exec[k] == ip, __FILE__, __LINE__,
				     "insn %zu: %#" PRIx64 ", expected %#" PRIx64, k, ip,
				     k < sm.nexec ? sm.exec[k] : 0);
			if (!ok || !in)
				break;
			k++;
			if (ip == ev[i].u.block.end_ip)
				break;
			ip += (uint64_t)in->len;
		}
		T_EQ_U64(ip, ev[i].u.block.end_ip);
		T_EQ_INT(c + 1, ev[i].u.block.ninsn);
		T_EQ_INT(ev[i].tid, 42);
		T_EQ_INT(ev[i].pid, 42);
	}
	T_EQ_INT(k, sm.nexec);
	T_EQ_INT(prec_session_nr_warnings(s), 0);
	prec_session_free(s);
	enc_free(&x);
}

static void decode_noretcomp(void)
{
	static struct prec_tev ev[4096];
	static struct sim sm;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	size_t n;

	if (!prog1_flow(&p, &sm, &x, true, 0))
		return;
	s = make_session(&p, IMG_EMBED, &x, false, 7);
	n = decode_all(s, 0, ev, 4096, false);
	T_OK(same_flow(ev, n, &sm, 0));
	for (size_t i = 0; i < n; i++)
		T_OK(ev[i].type != PREC_TEV_BLOCK && ev[i].type != PREC_TEV_ERROR);
	prec_session_free(s);
	enc_free(&x);
}

/* The same decode with the code read from the file on disk (build id matches). */
static void decode_disk_image(void)
{
	static struct prec_tev ev[4096];
	static struct sim sm;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	size_t n;

	if (!prog1_flow(&p, &sm, &x, false, 0))
		return;
	s = make_session(&p, IMG_DISK, &x, false, 42);
	n = decode_all(s, 0, ev, 4096, true);
	T_OK(same_flow(ev, n, &sm, 0));
	T_EQ_INT(prec_session_nr_warnings(s), 0);
	prec_session_free(s);
	enc_free(&x);
}

static size_t count_type(const struct prec_tev *ev, size_t n, enum prec_tev_type t)
{
	size_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += ev[i].type == t;
	return c;
}

/* A file whose build id differs from the recording's must not be decoded. */
static void decode_wrong_build_id(void)
{
	static struct prec_tev ev[4096];
	static struct sim sm;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	size_t n, i;

	if (!prog1_flow(&p, &sm, &x, false, 0))
		return;
	s = make_session(&p, IMG_WRONG_BID, &x, false, 42);
	n = decode_all(s, 0, ev, 4096, true);
	T_EQ_INT(count_type(ev, n, PREC_TEV_BRANCH), 0);
	T_EQ_INT(count_type(ev, n, PREC_TEV_BLOCK), 0);
	T_OK(count_type(ev, n, PREC_TEV_ERROR) >= 1);
	for (i = 0; i < n; i++)
		if (ev[i].type == PREC_TEV_ERROR) {
			T_EQ_INT(ev[i].u.err.code, PREC_DE_NOMAP);
			T_EQ_U64(ev[i].u.err.ip, sym(&p, "_start"));
			T_CONTAINS(ev[i].u.err.msg, "no code image");
			break;
		}
	T_EQ_INT(prec_session_nr_warnings(s), 1);
	T_CONTAINS(prec_session_warning(s, 0), "build id");
	T_CONTAINS(prec_session_warning(s, 0), "not decoding");
	prec_session_free(s);
	enc_free(&x);
}

/* No image at all: an error with the offset of the packet that needed code. */
static void decode_missing_image(void)
{
	static struct prec_tev ev[4096];
	static struct sim sm;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	size_t n, i, errs = 0;

	if (!prog1_flow(&p, &sm, &x, false, 0))
		return;
	s = make_session(&p, IMG_NONE, &x, false, 42);
	n = decode_all(s, 0, ev, 4096, true);
	for (i = 0; i < n; i++) {
		if (ev[i].type != PREC_TEV_ERROR)
			continue;
		errs++;
		T_EQ_INT(ev[i].u.err.code, PREC_DE_NOMAP);
		/* After PSB, PSBEND, MODE.Exec and TIP.PGE: the first TNT. */
		T_OK(ev[i].offset > 16 + 2 && ev[i].offset < enc_off(&x));
		T_EQ_U64(ev[i].u.err.ip, sym(&p, "_start"));
	}
	T_EQ_INT(errs, 1);
	T_EQ_INT(count_type(ev, n, PREC_TEV_TRACE_BEGIN), 1);
	prec_session_free(s);
	enc_free(&x);
}

static const char loop_src[] =
	"	.text\n"
	"	.globl _start\n"
	"	.type _start,@function\n"
	"_start:\n"
	"	mov $400, %ecx\n"
	"1:	call work\n"
	"	dec %ecx\n"
	"	jnz 1b\n"
	"	mov $60, %eax\n"
	"	syscall\n"
	"	.size _start, .-_start\n"
	"	.globl work\n"
	"	.type work,@function\n"
	"work:\n"
	"	test $1, %ecx\n"
	"	jz 2f\n"
	"	call leaf\n"
	"2:	ret\n"
	"	.size work, .-work\n"
	"	.globl leaf\n"
	"	.type leaf,@function\n"
	"leaf:\n"
	"	ret\n"
	"	.size leaf, .-leaf\n";

/* 400 iterations: work's jz is N for odd ecx, T for even; loop jnz T..T,N. */
static bool loop_flow(struct prog *p, struct sim *sm, struct enc *x, unsigned psb_every,
		      uint64_t tsc, uint64_t tsc_step)
{
	static char conds[2000];
	size_t k = 0;

	if (!build_prog(p, "loop", loop_src))
		return false;
	for (int ecx = 400; ecx >= 1; ecx--) {
		conds[k++] = (ecx & 1) ? 'N' : 'T';
		conds[k++] = ecx > 1 ? 'T' : 'N';
	}
	conds[k] = '\0';
	memset(sm, 0, sizeof(*sm));
	sm->p = p;
	sm->conds = conds;
	sm->psb_every = psb_every;
	sm->tsc_step = tsc_step;
	enc_init(x, 1 << 20);
	enc_psb(x, false, 0, tsc);
	return T_OK(sim_run(sm, x, sym(p, "_start"), tsc)) && T_OK(!x->err);
}

static void decode_psb_periods(void)
{
	static struct prec_tev ev[16384];
	static struct sim sm;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	size_t n;

	if (!loop_flow(&p, &sm, &x, 97, 0, 0))
		return;
	T_OK(sm.npsb > 10);
	s = make_session(&p, IMG_EMBED, &x, false, 5);
	n = decode_all(s, 0, ev, 16384, false);
	T_OK(same_flow(ev, n, &sm, 0));
	T_EQ_INT(count_type(ev, n, PREC_TEV_ERROR), 0);
	prec_session_free(s);
	enc_free(&x);
}

/* Corrupt one PSB period: an error inside it, then the flow from the next PSB. */
static void decode_corrupt_resync(void)
{
	static struct prec_tev ev[16384];
	static struct sim sm;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	size_t n, i, first_err = SIZE_MAX, resume;
	uint64_t bad;

	if (!loop_flow(&p, &sm, &x, 301, 0, 0) || !T_OK(sm.npsb > 6))
		return;
	/* Two bytes that are no packet, among the TNTs of the fourth period. */
	bad = sm.psb_off[3] + 40;
	T_OK(bad + 2 < sm.psb_off[4]);
	x.buf[bad] = 0x02;
	x.buf[bad + 1] = 0x00;
	s = make_session(&p, IMG_EMBED, &x, false, 5);
	n = decode_all(s, 0, ev, 16384, false);
	for (i = 0; i < n; i++)
		if (ev[i].type == PREC_TEV_ERROR) {
			first_err = i;
			break;
		}
	if (!T_OK(first_err < n))
		goto out;
	T_EQ_INT(count_type(ev, n, PREC_TEV_ERROR), 1);
	T_OK(ev[first_err].offset >= sm.psb_off[3] && ev[first_err].offset <= bad + 2);
	T_EQ_INT(ev[first_err].u.err.code, PREC_DE_BADPKT);
	/* Up to the damage the flow is intact... */
	T_OK(first_err > 0);
	/* ...and from the next PSB on it is the walk's again, to the end. */
	for (resume = first_err + 1; resume < n; resume++)
		if (ev[resume].type == PREC_TEV_BRANCH)
			break;
	T_OK(same_flow(ev + resume, n - resume, &sm, sm.psb_ev[4]));
out:
	prec_session_free(s);
	enc_free(&x);
}

/* Random bytes and every truncation: no crash, no hang, errors reported. */
static void decode_garbage(void)
{
	static struct prec_tev ev[65536];
	static struct sim sm;
	struct prog p;
	struct enc x;
	size_t len, n;
	unsigned seed = 1;

	if (!prog1_flow(&p, &sm, &x, false, 0))
		return;
	len = enc_off(&x);
	for (size_t cut = 0; cut <= len; cut++) {
		struct prec_session *s = prec_session_new();
		struct sbuf sb = { .n = 0 };

		set_machine(s, false);
		rec_comm(&sb, 9, 9, "p", true, 0);
		add_prog(s, &sb, &p, 9, 9, IMG_EMBED, 0);
		prec_session_add_sideband(s, sb.b, sb.n, -1);
		if (cut)
			prec_session_add_aux(s, -1, 9, 0, x.buf, cut);
		prec_session_finalize(s);
		if (cut)
			decode_all(s, 0, ev, 65536, true);
		prec_session_free(s);
	}
	for (int round = 0; round < 50; round++) {
		struct prec_session *s = prec_session_new();
		struct sbuf sb = { .n = 0 };
		static uint8_t junk[8192];

		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (uint8_t)(rand_r(&seed) >> 3);
		/* Half the rounds hide a valid trace inside the junk. */
		if (round & 1)
			memcpy(junk + 4000, x.buf, len);
		set_machine(s, false);
		rec_comm(&sb, 9, 9, "p", true, 0);
		add_prog(s, &sb, &p, 9, 9, IMG_EMBED, 0);
		prec_session_add_sideband(s, sb.b, sb.n, -1);
		prec_session_add_aux(s, -1, 9, 0, junk, sizeof(junk));
		prec_session_finalize(s);
		n = decode_all(s, 0, ev, 65536, true);
		T_OK(n < 65536);
		if (round & 1)
			T_OK(count_type(ev, n, PREC_TEV_TRACE_BEGIN) >= 1);
		prec_session_free(s);
	}
	enc_free(&x);
}

/* A recording gap: a GAP event, then decoding resumes at the next PSB. */
static void decode_gap(void)
{
	static struct prec_tev ev[16384];
	static struct sim sm;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	struct sbuf sb = { .n = 0 };
	size_t n, i, gap = SIZE_MAX;
	uint64_t cut1, cut2;

	if (!loop_flow(&p, &sm, &x, 97, 0, 0) || !T_OK(sm.npsb > 6))
		return;
	/* Bytes [cut1, cut2) never reached the file. */
	cut1 = sm.psb_off[2] + 10;
	cut2 = sm.psb_off[3] - 5;
	s = prec_session_new();
	set_machine(s, false);
	rec_comm(&sb, 5, 5, "loop", true, 0);
	add_prog(s, &sb, &p, 5, 5, IMG_EMBED, 0);
	prec_session_add_sideband(s, sb.b, sb.n, -1);
	T_EQ_INT(prec_session_add_aux(s, -1, 5, 0, x.buf, cut1), 0);
	T_EQ_INT(prec_session_add_aux(s, -1, 5, cut2, x.buf + cut2, enc_off(&x) - cut2), 0);
	T_EQ_INT(prec_session_finalize(s), 0);
	T_EQ_INT(prec_session_stream(s, 0)->nr_gaps, 1);
	n = decode_all(s, 0, ev, 16384, false);
	for (i = 0; i < n; i++)
		if (ev[i].type == PREC_TEV_GAP) {
			gap = i;
			break;
		}
	if (T_OK(gap < n)) {
		T_EQ_U64(ev[gap].u.gap.lost, cut2 - cut1);
		T_EQ_U64(ev[gap].offset, cut1);
		/* From the gap on, the flow is the walk's from PSB 3 on. */
		T_OK(same_flow(ev + gap + 1, n - gap - 1, &sm, sm.psb_ev[3]));
	}
	prec_session_free(s);
	enc_free(&x);
}

/* TSC packets give each event the perf time of the latest timestamp. */
static void decode_timing(void)
{
	static struct prec_tev ev[16384];
	static struct sim sm;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	size_t n, i, j = 0, checked = 0;
	uint64_t tsc0 = 5000000;

	if (!loop_flow(&p, &sm, &x, 97, tsc0, 11))
		return;
	s = make_session(&p, IMG_EMBED, &x, true, 5);
	n = decode_all(s, 0, ev, 16384, false);
	T_OK(same_flow(ev, n, &sm, 0));
	for (i = 0; i < n; i++) {
		if (ev[i].type != PREC_TEV_BRANCH && ev[i].type != PREC_TEV_TRACE_BEGIN &&
		    ev[i].type != PREC_TEV_TRACE_END)
			continue;
		if (j >= sm.nev)
			break;
		/* Exactly the TSC of the walk; time = 1000000 + tsc * 3 / 2. */
		T_EQ_U64(ev[i].tsc, sm.ev[j].tsc);
		T_EQ_U64(ev[i].time, 1000000 + sm.ev[j].tsc * 3 / 2);
		j++;
		checked++;
	}
	T_OK(checked > 1000);
	prec_session_free(s);
	enc_free(&x);
}

/* ---- call-trace formatting ---- */

static char *run_output(struct prec_session *s, const struct prec_output_opts *o, int *rc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	*rc = prec_output_run(s, o, f);
	fclose(f);
	return buf;
}

/* perf's --call-trace line, written here from its documented layout. */
static void exp_line(char **e, size_t *el, int *spacing, const char *comm, int tid,
		     uint64_t time, const char *flag, const char *dso, int depth,
		     const char *name)
{
	char line[512], ind[256];
	int len, n = 0;

	snprintf(ind, sizeof(ind), "%*s%s", depth * 4, "", name);
	len = (int)strlen(ind);
	if (len > *spacing || (len && len < *spacing - 52))
		*spacing = ((len + 4) + 31) / 32 * 32;
	n = snprintf(line, sizeof(line), "%16s %7d %5" PRIu64 ".%09" PRIu64 ": ", comm, tid,
		     time / 1000000000, time % 1000000000);
	if (flag)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "  %-21s ", flag);
	snprintf(line + n, sizeof(line) - (size_t)n, "(%-50.49s)\t%s%*s\n", dso, ind,
		 len < *spacing ? *spacing - len : 0, "");
	*e = realloc(*e, *el + strlen(line) + 1);
	strcpy(*e + *el, line);
	*el += strlen(line);
}

static const char *name_of(const struct prog *p, uint64_t a)
{
	const char *best = NULL;
	uint64_t ba = 0;

	for (size_t i = 0; i < p->nsym; i++)
		if (p->sym[i].addr <= a && p->sym[i].addr >= ba && p->sym[i].name[0] != '_' ) {
			best = p->sym[i].name;
			ba = p->sym[i].addr;
		}
	if (a >= sym(p, "_start") && (!best || ba < sym(p, "_start")))
		best = "_start";
	return best ? best : "?";
}

/* The expected call trace of a walk, with perf's depth rules. */
static char *expected_trace(const struct prog *p, const struct sim *sm, bool rets,
			    const char *comm, int tid)
{
	char *e = calloc(1, 1);
	size_t el = 0;
	int spacing = 0, depth = 0;

	for (size_t i = 0; i < sm->nev; i++) {
		const struct xev *x = &sm->ev[i];

		switch (x->type) {
		case PREC_TEV_TRACE_BEGIN:
			/* Trace begins and ends: lines of the call-ret trace only. */
			if (rets)
				exp_line(&e, &el, &spacing, comm, tid, 0, "tr strt", p->path,
					 depth, name_of(p, x->a));
			break;
		case PREC_TEV_TRACE_END:
			if (rets)
				exp_line(&e, &el, &spacing, comm, tid, 0, "tr end", p->path,
					 depth, name_of(p, x->a));
			break;
		case PREC_TEV_BRANCH:
			/* The call trace's one line for a syscall out of the trace. */
			if (x->kind == PREC_BR_SYSCALL && !x->b && !rets)
				exp_line(&e, &el, &spacing, comm, tid, 0, NULL, p->path, depth + 1,
					 "[syscall]");
			if (x->kind == PREC_BR_CALL) {
				depth++;
				exp_line(&e, &el, &spacing, comm, tid, 0, rets ? "call" : NULL,
					 p->path, depth, name_of(p, x->b));
			} else if (x->kind == PREC_BR_RETURN) {
				if (rets)
					exp_line(&e, &el, &spacing, comm, tid, 0, "return",
						 p->path, depth, name_of(p, x->a));
				depth--;
			}
			break;
		default:
			break;
		}
	}
	return e;
}

static void call_trace_exact(void)
{
	static struct sim sm;
	struct prec_output_opts o;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	char *got, *exp;
	int rc;

	if (!prog1_flow(&p, &sm, &x, false, 0))
		return;
	s = make_session(&p, IMG_DISK, &x, false, 42);
	prec_output_opts_init(&o);
	got = run_output(s, &o, &rc);
	T_EQ_INT(rc, 0);
	exp = expected_trace(&p, &sm, false, "prog", 42);
	T_EQ_STR(got, exp);
	free(got);
	free(exp);

	o.fmt = PREC_FMT_CALL_RET_TRACE;
	got = run_output(s, &o, &rc);
	T_EQ_INT(rc, 0);
	exp = expected_trace(&p, &sm, true, "prog", 42);
	T_EQ_STR(got, exp);
	/* Spot-check one line against the layout by hand. */
	T_CONTAINS(got, "    prog      42     0.000000000:   call                  (");
	free(got);
	free(exp);
	prec_session_free(s);
	enc_free(&x);
}

/* Call depth stays right over many periods, and --symbol keeps only work(). */
static void call_trace_symbol_filter(void)
{
	static struct sim sm;
	struct prec_output_opts o;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	char *got, *line, *save = NULL;
	int rc, lines = 0, leaf = 0, work = 0;

	if (!loop_flow(&p, &sm, &x, 0, 0, 0))
		return;
	s = make_session(&p, IMG_DISK, &x, false, 5);
	prec_output_opts_init(&o);
	o.symbol = "work";
	got = run_output(s, &o, &rc);
	T_EQ_INT(rc, 0);
	for (line = strtok_r(got, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lines++;
		if (strstr(line, "\t    work"))
			work++;
		if (strstr(line, "\t        leaf"))
			leaf++;
	}
	/* 400 calls of work, 200 of them (even ecx... odd) call leaf. */
	T_EQ_INT(work, 400);
	T_EQ_INT(leaf, 200);
	T_EQ_INT(lines, 600);
	free(got);

	o.symbol = "no_such_function";
	got = run_output(s, &o, &rc);
	T_EQ_INT(rc, -PREC_E_NOSYM);
	free(got);

	prec_output_opts_init(&o);
	o.tid = 6;
	got = run_output(s, &o, &rc);
	T_EQ_INT(rc, 0);
	T_EQ_STR(got, "");
	free(got);
	prec_session_free(s);
	enc_free(&x);
}

/* The instruction trace lists exactly the walk's instructions, as objdump names them. */
static void insn_trace(void)
{
	static struct sim sm;
	struct prec_output_opts o;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	char *got, *line, *save = NULL;
	size_t k = 0;
	int rc;

	if (!prog1_flow(&p, &sm, &x, false, 0))
		return;
	s = make_session(&p, IMG_EMBED, &x, false, 42);
	prec_output_opts_init(&o);
	o.fmt = PREC_FMT_INSN_TRACE;
	got = run_output(s, &o, &rc);
	T_EQ_INT(rc, 0);
	T_CONTAINS(got, "f_a+0x0 (");
	T_CONTAINS(got, "f_a+0x5 (");
	for (line = strtok_r(got, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long ip;
		char *c = strchr(line, ':');
		const struct insn *in;

		if (!c || strstr(line, "tr strt") || strstr(line, "tr end"))
			continue;
		if (!T_OK(sscanf(c + 1, " %llx", &ip) == 1) || !T_OK(k < sm.nexec))
			break;
		T_EQ_U64(ip, sm.exec[k]);
		in = insn_at(&p, ip);
		/* capstone and objdump agree on the mnemonic (AT&T syntax). */
		if (in && T_OK(strchr(line, '\t'))) {
			char mn[16] = "";

			sscanf(strchr(line, '\t') + 1, "%15s", mn);
			size_t l = strlen(in->mn);

			/* capstone adds AT&T size suffixes (callq, movl) objdump leaves off. */
			if (strcmp(in->mn, mn) &&
			    !(!strncmp(in->mn, mn, l) && mn[l] && strchr("bwlq", mn[l]) &&
			      !mn[l + 1]) &&
			    !(in->mn[0] == 'j' && mn[0] == 'j'))
				t_check(false, __FILE__, __LINE__, "mnemonic %s vs objdump %s", mn,
					in->mn);
		}
		k++;
	}
	T_EQ_INT(k, sm.nexec);
	free(got);

	o.fmt = PREC_FMT_STATS;
	got = run_output(s, &o, &rc);
	T_EQ_INT(rc, 0);
	{
		char want[64];

		snprintf(want, sizeof(want), "instructions: %zu\n", sm.nexec);
		T_CONTAINS(got, want);
		T_CONTAINS(got, "calls: 4\n");
		T_CONTAINS(got, "returns: 4\n");
		T_CONTAINS(got, "trace begins: 1\n");
		T_CONTAINS(got, "trace ends: 1\n");
		T_CONTAINS(got, "errors: 0\n");
	}
	free(got);
	prec_session_free(s);
	enc_free(&x);
}

/*
 * Two processes map different code at the same address; an exec replaces the
 * image. Each per-thread stream must be decoded against its own code.
 */
static void images_per_process(void)
{
	static struct prec_tev ev[4096];
	static struct sim sa, sb2;
	struct prog pa, pb;
	struct enc xa, xb;
	struct prec_session *s;
	struct sbuf sb = { .n = 0 };
	struct prec_evdesc d = { .name = "intel_pt//u", .kind = PREC_EVK_TRACER };
	uint64_t id = 1, tsc0 = 4000000;
	size_t n, si;

	if (!prog1_flow(&pa, &sa, &xa, false, tsc0) || !loop_flow(&pb, &sb2, &xb, 0, tsc0, 0))
		return;
	T_EQ_U64(pa.seg_vaddr, pb.seg_vaddr);
	s = prec_session_new();
	set_machine(s, true);
	prec_session_add_event(s, &d, &id, 1);
	/* pid 100 runs loop first, execs prog1 at time 2000000 (tsc 666666). */
	rec_comm(&sb, 100, 100, "sh", true, 10);
	add_prog(s, &sb, &pb, 100, 100, IMG_EMBED, 20);
	rec_comm(&sb, 100, 100, "prog1", true, 2000000);
	add_prog(s, &sb, &pa, 100, 100, IMG_EMBED, 2000001);
	/* pid 200 runs loop. */
	rec_comm(&sb, 200, 200, "loop", true, 30);
	add_prog(s, &sb, &pb, 200, 200, IMG_DISK, 40);
	T_OK(prec_session_add_sideband(s, sb.b, sb.n, -1) > 0);
	prec_session_add_aux(s, -1, 100, 0, xa.buf, enc_off(&xa));
	prec_session_add_aux(s, -1, 200, 0, xb.buf, enc_off(&xb));
	T_EQ_INT(prec_session_finalize(s), 0);
	for (si = 0; si < 2; si++) {
		const struct prec_stream *st = prec_session_stream(s, si);

		n = decode_all(s, si, ev, 4096, false);
		T_OK(same_flow(ev, n, st->tid == 100 ? &sa : &sb2, 0));
		T_EQ_INT(count_type(ev, n, PREC_TEV_ERROR), 0);
		T_EQ_INT(ev[0].pid, st->tid);
	}
	/* Before the exec pid 100 had loop's code at the same address. */
	{
		struct prec_images *im = prec_session_images(s);
		struct prec_loc l1, l2;

		prec_aspace_resolve(prec_images_aspace(im, 100, 100), sym(&pb, "work"), &l1);
		prec_aspace_resolve(prec_images_aspace(im, 100, 3000000), sym(&pb, "work"), &l2);
		T_OK(l1.sym && !strcmp(l1.sym->name, "work"));
		T_OK(!l2.sym || strcmp(l2.sym->name, "work"));
		T_EQ_STR(prec_session_comm(s, 100, 2500000), "prog1");
		T_EQ_STR(prec_session_comm(s, 100, 1000), "sh");
	}
	/* Both streams in one output, merged in time order. */
	{
		struct prec_output_opts o;
		char *got, *line, *save = NULL;
		double last = 0;
		int rc, t100 = 0, t200 = 0;

		prec_output_opts_init(&o);
		got = run_output(s, &o, &rc);
		T_EQ_INT(rc, 0);
		for (line = strtok_r(got, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char comm[32];
			int tid;
			double t;

			if (!T_OK(sscanf(line, "%31s %d %lf:", comm, &tid, &t) == 3))
				break;
			T_OK(t >= last);
			last = t;
			t100 += tid == 100;
			t200 += tid == 200;
			T_EQ_STR(comm, tid == 100 ? "prog1" : "loop");
		}
		T_EQ_INT(t100, 5);
		T_EQ_INT(t200, 601); /* 400 work + 200 leaf + the exit syscall */
		free(got);
	}
	prec_session_free(s);
	enc_free(&xa);
	enc_free(&xb);
}

/* One per-CPU stream: thread 100 (prog1), a context switch, thread 200 (loop). */
/* A new session of a timed per-CPU recording with one tracer event. */
static struct prec_session *per_cpu_session_new(void)
{
	struct prec_session *s = prec_session_new();
	struct prec_evdesc d = { .name = "intel_pt//u", .kind = PREC_EVK_TRACER };
	struct prec_machine m;
	uint64_t id = 1;

	set_machine(s, true);
	m = *prec_session_machine(s);
	m.per_cpu = true;
	prec_session_set_machine(s, &m);
	prec_session_add_event(s, &d, &id, 1);
	return s;
}

static void per_cpu_switch(void)
{
	static struct prec_tev ev[8192];
	static struct sim sa, sb2;
	struct prog pa, pb;
	struct enc x;
	struct prec_session *s;
	struct sbuf sb = { .n = 0 };
	size_t n, i, sw = SIZE_MAX;

	if (!build_prog(&pa, "prog1", prog1_src) || !build_prog(&pb, "loop", loop_src))
		return;
	/* Encode both walks into one buffer: prog1 at tsc 1000, loop at tsc 9000. */
	{
		static uint64_t ind[2];
		static char conds[2000];
		size_t k = 0;

		memset(&sa, 0, sizeof(sa));
		sa.p = &pa;
		sa.conds = "TNTTTN";
		ind[0] = sym(&pa, "f_c");
		for (i = 0; i < pa.n; i++)
			if (!strcmp(pa.in[i].mn, "jmp") && pa.in[i].op[0] == '*')
				ind[1] = pa.in[i].addr + (uint64_t)pa.in[i].len;
		sa.ind = ind;
		sa.nind = 2;
		for (int ecx = 400; ecx >= 1; ecx--) {
			conds[k++] = (ecx & 1) ? 'N' : 'T';
			conds[k++] = ecx > 1 ? 'T' : 'N';
		}
		memset(&sb2, 0, sizeof(sb2));
		sb2.p = &pb;
		sb2.conds = conds;
		enc_init(&x, 1 << 20);
		enc_psb(&x, false, 0, 1000);
		T_OK(sim_run(&sa, &x, sym(&pa, "_start"), 1000));
		T_OK(sim_run(&sb2, &x, sym(&pb, "_start"), 9000));
	}
	s = per_cpu_session_new();
	rec_comm(&sb, 100, 100, "prog1", true, 10);
	add_prog(s, &sb, &pa, 100, 100, IMG_EMBED, 11);
	rec_comm(&sb, 200, 200, "loop", true, 12);
	add_prog(s, &sb, &pb, 200, 200, IMG_EMBED, 13);
	/* time = 1000000 + tsc * 1.5: tsc 1000 -> 1001500, tsc 9000 -> 1013500. */
	rec_switch(&sb, 3, false, 100, 100, 0, 0, 1000000);
	rec_switch(&sb, 3, true, 100, 100, 200, 200, 1010000);
	rec_switch(&sb, 3, false, 200, 200, 100, 100, 1010001);
	T_OK(prec_session_add_sideband(s, sb.b, sb.n, 3) > 0);
	prec_session_add_aux(s, 3, -1, 0, x.buf, enc_off(&x));
	T_EQ_INT(prec_session_finalize(s), 0);
	n = decode_all(s, 0, ev, 8192, false);
	for (i = 0; i < n; i++)
		if (ev[i].type == PREC_TEV_SWITCH) {
			sw = i;
			break;
		}
	if (T_OK(sw < n)) {
		T_EQ_INT(ev[sw].u.sw.prev_tid, 100);
		T_EQ_INT(ev[sw].tid, 200);
		T_OK(same_flow(ev, sw, &sa, 0));
		T_OK(same_flow(ev + sw, n - sw, &sb2, 0));
		for (i = 0; i < n; i++) {
			T_EQ_INT(ev[i].cpu, 3);
			T_EQ_INT(ev[i].tid, i < sw ? 100 : 200);
		}
	}
	prec_session_free(s);
	enc_free(&x);
}

/* A source of one piece, the encoder's bytes (streams by reference decode in windows). */
static int enc_fetch(void *ctx, uint64_t src, void **scratch, const void **p, size_t *n)
{
	const struct enc *x = ctx; /* the session reads its first len bytes */

	(void)src;
	(void)scratch;
	*p = x->buf;
	*n = enc_off((struct enc *)x);
	return 0;
}

static void enc_release(void *scratch)
{
	(void)scratch;
}

/*
 * A per-CPU session over @x's first @len bytes on CPU 3 (by reference): pid 200's loop,
 * thread 200 switched in before the trace, 201 from @t1, 202 from @t2 (0:
 * no such switch). With @others, switches of CPU 5 interleaved before @t1
 * (records a later round's timeline may hold that the last one's did not).
 */
static struct prec_session *cpu_session(const struct prog *p, const struct enc *x, size_t len,
					uint64_t t1, uint64_t t2, bool others)
{
	struct prec_session *s = per_cpu_session_new();
	struct sbuf sb = { .n = 0 }, sb5 = { .n = 0 };

	rec_comm(&sb, 200, 200, "loop", true, 10);
	add_prog(s, &sb, p, 200, 200, IMG_EMBED, 11);
	rec_comm(&sb, 200, 201, "loop", false, 12);
	rec_comm(&sb, 200, 202, "loop", false, 13);
	rec_switch(&sb, 3, false, 200, 200, 0, 0, 20);
	if (t1) {
		rec_switch(&sb, 3, true, 200, 200, 200, 201, t1);
		rec_switch(&sb, 3, false, 200, 201, 200, 200, t1);
	}
	if (t2) {
		rec_switch(&sb, 3, true, 200, 201, 200, 202, t2);
		rec_switch(&sb, 3, false, 200, 202, 200, 201, t2);
	}
	T_OK(prec_session_add_sideband(s, sb.b, sb.n, 3) > 0);
	if (others) {
		for (uint64_t t = 30; t < t1; t += (t1 - 30) / 7 + 1) {
			rec_switch(&sb5, 5, false, 900, 900, 0, 0, t);
			rec_switch(&sb5, 5, true, 900, 900, 0, 0, t + 1);
		}
		T_OK(prec_session_add_sideband(s, sb5.b, sb5.n, 5) > 0);
	}
	prec_session_set_aux_source(s, &(struct prec_aux_source){ enc_fetch, enc_release,
								 (void *)x, NULL });
	T_EQ_INT(prec_session_add_aux_ref(s, 3, -1, 0, 0, 0, len), 0);
	T_EQ_INT(prec_session_finalize(s), 0);
	return s;
}

/*
 * ptdump --follow on per-CPU streams: a decode resumed, in a later round's
 * session, at a place a decode of the last round's gave gives the events
 * a decode from the beginning gives after as many, threads included. The
 * later session has the rest of the trace, a switch after the place, and
 * another CPU's records before it (its timeline's indices differ).
 */
static void per_cpu_resume(void)
{
	static struct prec_tev ev[16384], got[16384];
	static struct sim sm;
	struct prec_decoder_opts o = { .no_blocks = true, .window = 512 };
	struct prec_decoder *d = NULL;
	struct prec_session *s;
	struct prec_resume rp = { 0 };
	const struct prec_tev *e;
	struct prog p;
	struct enc x;
	uint64_t t1, t2;
	size_t n, na = 0, i, cut;
	int r;

	if (!loop_flow(&p, &sm, &x, 31, 1000, 2))
		return;
	T_OK(sm.npsb > 10);
	/* The times of the events, to place the switches among them. */
	s = cpu_session(&p, &x, enc_off(&x), 0, 0, false);
	n = decode_all(s, 0, ev, 16384, false);
	prec_session_free(s);
	if (!T_OK(n > 200))
		return;
	t1 = ev[n / 4].time;
	t2 = ev[n * 3 / 4].time;
	/* The last round: the first 60% of the trace, without the later switch. */
	cut = enc_off(&x) * 6 / 10;
	s = cpu_session(&p, &x, cut, t1, 0, false);
	T_EQ_INT(prec_decoder_open(&prec_intel_pt_decoder, s, prec_session_stream(s, 0), &o, &d), 0);
	while (d && na < 16384 && (r = prec_decoder_next(d, &got[na])) > 0)
		na++;
	/* as if the round formatted 90% of what it decoded */
	T_OK(d && prec_decoder_resume_at(d, na * 9 / 10, &rp));
	prec_decoder_free(d);
	prec_session_free(s);
	T_OK(rp.set && rp.ordinal > n / 4 && rp.ordinal <= na * 9 / 10);
	T_OK(rp.sb_some);
	/* The whole, from the beginning. */
	s = cpu_session(&p, &x, enc_off(&x), t1, t2, true);
	n = decode_all(s, 0, ev, 16384, false);
	for (i = 0; i < rp.ordinal && i < n; i++)
		T_OK(!memcmp(&got[i], &ev[i], offsetof(struct prec_tev, u) + 24));
	for (i = 0; i < n; i++)
		T_EQ_INT(ev[i].tid, ev[i].time < t1 ? 200 : ev[i].time < t2 ? 201 : 202);
	/* Resumed there. */
	o.resume = &rp;
	T_EQ_INT(prec_decoder_open(&prec_intel_pt_decoder, s, prec_session_stream(s, 0), &o, &d), 0);
	for (i = rp.ordinal; d && (r = prec_decoder_next_ref(d, &e)) > 0; i++)
		if (!T_OK(i < n && !memcmp(e, &ev[i], offsetof(struct prec_tev, u) + 24)))
			break;
	T_EQ_U64(i, n);
	prec_decoder_free(d);
	prec_session_free(s);
	enc_free(&x);
}

/*
 * Trigger samples name the pause/resume they caused, in every format. A pause
 * at sys_enter of exit: the sample's IP is the kernel's (a tracepoint on
 * hardware) or the user IP after the syscall instruction (the software
 * tracer's); a sample at any other user IP (a counter firing elsewhere at
 * about that time) is not the syscall's.
 */
static void trigger_names(void)
{
	static struct sim sm;
	struct prog p;
	struct enc x;
	struct prec_evdesc d = { .name = "intel_pt//u", .kind = PREC_EVK_TRACER };
	struct prec_evdesc dp = { .name = "sys_enter_exit",
				  .kind = PREC_EVK_PAUSE,
				  .sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
						 PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
						 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD };
	struct prec_output_opts o;
	uint64_t id = 1, idp = 2, tsc0 = 2000, t_end, sys_ip = 0, ips[3];
	char *got;
	int rc;

	if (!prog1_flow(&p, &sm, &x, false, tsc0))
		return;
	for (size_t i = 0; i < sm.nev; i++)
		if (sm.ev[i].type == PREC_TEV_BRANCH && sm.ev[i].kind == PREC_BR_SYSCALL)
			sys_ip = sm.ev[i].a;
	if (!T_OK(sys_ip && insn_at(&p, sys_ip) && !strcmp(insn_at(&p, sys_ip)->mn, "syscall")))
		return;
	ips[0] = sys_ip + (uint64_t)insn_at(&p, sys_ip)->len;
	ips[1] = 0xffffffff81000040ull;
	ips[2] = sym(&p, "_start");
	for (int v = 0; v < 3; v++) {
		struct prec_session *s = prec_session_new();
		struct sbuf sb = { .n = 0 };

		set_machine(s, true);
		prec_session_add_event(s, &d, &id, 1);
		T_EQ_INT(prec_session_add_event(s, &dp, &idp, 1), 1);
		rec_comm(&sb, 42, 42, "prog", true, 1);
		add_prog(s, &sb, &p, 42, 42, IMG_EMBED, 2);
		t_end = 1000000 + tsc0 * 3 / 2;
		rec_sample(&sb, 2, ips[v], 42, 42, t_end, 0, 1);
		T_OK(prec_session_add_sideband(s, sb.b, sb.n, -1) > 0);
		prec_session_add_aux(s, -1, 42, 0, x.buf, enc_off(&x));
		T_EQ_INT(prec_session_finalize(s), 0);
		prec_output_opts_init(&o);
		o.fmt = PREC_FMT_CALL_RET_TRACE;
		got = run_output(s, &o, &rc);
		T_EQ_INT(rc, 0);
		T_CONTAINS(got, "-- pause trigger sys_enter_exit at ");
		if (v < 2)
			T_CONTAINS(got, "_start  (paused by sys_enter_exit)\n");
		else
			T_OK(!strstr(got, "(paused by"));
		free(got);
		o.fmt = PREC_FMT_STATS;
		got = run_output(s, &o, &rc);
		T_CONTAINS(got, "trigger sys_enter_exit (pause): 1 samples\n");
		free(got);
		o.fmt = PREC_FMT_BRANCHES;
		got = run_output(s, &o, &rc);
		T_EQ_INT(strstr(got, "(paused by sys_enter_exit)") != NULL, v < 2);
		T_CONTAINS(got, "call     ");
		free(got);
		prec_session_free(s);
	}
	enc_free(&x);
}

static ssize_t broken_write(void *c, const char *b, size_t n)
{
	(void)c;
	(void)b;
	(void)n;
	errno = EPIPE;
	return -1;
}

/* A reader that went away gives -EPIPE, not a crash. */
static void output_epipe(void)
{
	static struct sim sm;
	struct prec_output_opts o;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	FILE *f;

	if (!loop_flow(&p, &sm, &x, 0, 0, 0))
		return;
	s = make_session(&p, IMG_EMBED, &x, false, 5);
	f = fopencookie(NULL, "w", (cookie_io_functions_t){ .write = broken_write });
	prec_output_opts_init(&o);
	o.fmt = PREC_FMT_INSN_TRACE;
	T_EQ_INT(prec_output_run(s, &o, f), -EPIPE);
	fclose(f);
	prec_session_free(s);
	enc_free(&x);
}


/* An expected event for the hand-encoded cases. */
struct want {
	enum prec_tev_type type;
	uint64_t a, b;
	int kind;                 /* branch kind, or trace end reason */
};

static void check_events(const struct prec_tev *ev, size_t n, const struct want *w, size_t nw)
{
	size_t i, j = 0;

	for (i = 0; i < n; i++) {
		if (ev[i].type == PREC_TEV_BLOCK)
			continue;
		if (!t_check(j < nw, __FILE__, __LINE__, "extra event %zu type %d", i, ev[i].type))
			return;
		t_check(ev[i].type == w[j].type, __FILE__, __LINE__, "event %zu: type %d, want %d",
			i, ev[i].type, w[j].type);
		switch (w[j].type) {
		case PREC_TEV_BRANCH:
			t_check(ev[i].u.branch.from == w[j].a && ev[i].u.branch.to == w[j].b &&
					(int)ev[i].u.branch.kind == w[j].kind,
				__FILE__, __LINE__,
				"event %zu: %#" PRIx64 "->%#" PRIx64 " %d, want %#" PRIx64
				"->%#" PRIx64 " %d",
				i, ev[i].u.branch.from, ev[i].u.branch.to, ev[i].u.branch.kind,
				w[j].a, w[j].b, w[j].kind);
			break;
		case PREC_TEV_TRACE_END:
			T_EQ_INT(ev[i].u.trace.reason, w[j].kind);
			/* fallthrough */
		case PREC_TEV_TRACE_BEGIN:
		case PREC_TEV_OVERFLOW:
			T_EQ_U64(ev[i].u.trace.ip, w[j].a);
			break;
		default:
			break;
		}
		j++;
	}
	T_EQ_INT(j, nw);
}

static uint64_t insn_named(const struct prog *p, const char *mn, int nth)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->in[i].mn, mn) && nth-- == 0)
			return p->in[i].addr;
	t_check(false, __FILE__, __LINE__, "no %s", mn);
	return 0;
}

/* An interrupt (FUP + TIP) before the syscall, a handler that returns. */
static void decode_async_branch(void)
{
	static struct prec_tev ev[256];
	struct prog p;
	struct enc x;
	struct prec_session *s;
	uint64_t sc, mov, fc;
	size_t n;

	if (!build_prog(&p, "prog1", prog1_src))
		return;
	sc = insn_named(&p, "syscall", 0);
	mov = sc - 5;
	fc = sym(&p, "f_c");
	enc_init(&x, 4096);
	enc_psb(&x, false, 0, 0);
	enc_mode64(&x);
	enc_ip(&x, ppt_tip_pge, mov, false);
	enc_ip(&x, ppt_fup, sc, false);
	enc_ip(&x, ppt_tip, fc, false);
	enc_ip(&x, ppt_tip, sc, false);
	enc_ip(&x, ppt_tip_pgd, 0, true);
	T_OK(!x.err);
	s = make_session(&p, IMG_EMBED, &x, false, 3);
	n = decode_all(s, 0, ev, 256, true);
	{
		const struct want w[] = {
			{ PREC_TEV_TRACE_BEGIN, mov, 0, 0 },
			{ PREC_TEV_BRANCH, sc, fc, PREC_BR_INTERRUPT },
			{ PREC_TEV_BRANCH, fc, sc, PREC_BR_RETURN },
			{ PREC_TEV_BRANCH, sc, 0, PREC_BR_SYSCALL },
			{ PREC_TEV_TRACE_END, sc, 0, PREC_END_SYSCALL },
		};
		check_events(ev, n, w, T_N(w));
	}
	prec_session_free(s);
	enc_free(&x);
}

/*
 * An indirect call into code with no image: the call (from and to both known
 * from the trace) comes first, then the "no code image" error at its target.
 */
static void decode_branch_into_nomap(void)
{
	static struct prec_tev ev[256];
	const uint64_t nowhere = 0x7000001000ull;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	uint64_t icall;
	size_t n, i;

	if (!build_prog(&p, "prog1", prog1_src))
		return;
	icall = insn_named(&p, "call", 2);
	enc_init(&x, 4096);
	enc_psb(&x, false, 0, 0);
	enc_mode64(&x);
	enc_ip(&x, ppt_tip_pge, icall, false);
	enc_ip(&x, ppt_tip, nowhere, false);
	/* more trace follows, so the decoder goes on at the target (no pts_eos) */
	enc_tnt(&x, true);
	enc_flush_tnt(&x);
	T_OK(!x.err);
	s = make_session(&p, IMG_EMBED, &x, false, 3);
	n = decode_all(s, 0, ev, 256, true);
	{
		const struct want w[] = {
			{ PREC_TEV_TRACE_BEGIN, icall, 0, 0 },
			{ PREC_TEV_BRANCH, icall, nowhere, PREC_BR_CALL },
			{ PREC_TEV_ERROR, 0, 0, 0 },
		};
		check_events(ev, n, w, T_N(w));
	}
	for (i = 0; i < n; i++)
		if (ev[i].type == PREC_TEV_ERROR) {
			T_EQ_INT(ev[i].u.err.code, PREC_DE_NOMAP);
			T_EQ_U64(ev[i].u.err.ip, nowhere);
		}
	prec_session_free(s);
	enc_free(&x);
}

static const char prog32_src[] =
	"	.text\n"
	"	.globl _start\n"
	"	.type _start,@function\n"
	"_start:\n"
	"	.code32\n"
	"	mov 0x1234, %eax\n"
	"	xor %ebp, %eax\n"
	"	push %ebp\n"
	"	mov %esp, %ebp\n"
	"	nop\n"
	"	jmp *%ecx\n"
	"	.code64\n"
	"	.size _start, .-_start\n";

/*
 * 32-bit code (MODE.Exec with CS.D): --insn-trace disassembles it as 32-bit
 * code, one line per instruction the decoder counted, as --stats counts.
 */
static void insn_trace_32bit(void)
{
	static const char *const want[] = { "movl 0x1234, %eax", "xorl %ebp, %eax", "pushl %ebp",
					    "movl %esp, %ebp",   "nop",		 "jmpl *%ecx" };
	struct prec_output_opts o;
	struct pt_packet pk;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	char *got, *line, *save = NULL;
	size_t k = 0;
	int rc;

	if (!build_prog(&p, "prog32", prog32_src))
		return;
	enc_init(&x, 4096);
	enc_psb(&x, false, 0, 0);
	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_mode;
	pk.payload.mode.leaf = pt_mol_exec;
	pk.payload.mode.bits.exec = pt_set_exec_mode(ptem_32bit);
	enc_pkt(&x, &pk);
	enc_ip(&x, ppt_tip_pge, sym(&p, "_start"), false);
	enc_ip(&x, ppt_tip_pgd, 0, true);
	T_OK(!x.err);
	s = make_session(&p, IMG_EMBED, &x, false, 3);
	prec_output_opts_init(&o);
	o.fmt = PREC_FMT_INSN_TRACE;
	got = run_output(s, &o, &rc);
	T_EQ_INT(rc, 0);
	for (line = strtok_r(got, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');

		if (!tab)
			continue;
		if (T_OK(k < T_N(want)))
			T_EQ_STR(tab + 1, want[k]);
		k++;
	}
	T_EQ_INT(k, T_N(want));
	free(got);
	o.fmt = PREC_FMT_STATS;
	got = run_output(s, &o, &rc);
	T_CONTAINS(got, "instructions: 6\n");
	free(got);
	prec_session_free(s);
	enc_free(&x);
}

/* Asynchronous disable (a pause in user space), enable elsewhere, overflow. */
static void decode_async_disable_overflow(void)
{
	static struct prec_tev ev[256];
	struct prog p;
	struct enc x;
	struct prec_session *s;
	uint64_t sc, mov, fc;
	size_t n;

	if (!build_prog(&p, "prog1", prog1_src))
		return;
	sc = insn_named(&p, "syscall", 0);
	mov = sc - 5;
	fc = sym(&p, "f_c");
	enc_init(&x, 4096);
	enc_psb(&x, false, 0, 0);
	enc_mode64(&x);
	enc_ip(&x, ppt_tip_pge, mov, false);
	enc_ip(&x, ppt_fup, sc, false);
	enc_ip(&x, ppt_tip_pgd, 0, true);
	enc_mode64(&x);
	enc_ip(&x, ppt_tip_pge, fc, false);
	enc_simple(&x, ppt_ovf);
	enc_ip(&x, ppt_fup, fc, false);
	enc_ip(&x, ppt_tip, sc, false);
	enc_ip(&x, ppt_tip_pgd, 0, true);
	T_OK(!x.err);
	s = make_session(&p, IMG_EMBED, &x, false, 3);
	n = decode_all(s, 0, ev, 256, true);
	{
		const struct want w[] = {
			{ PREC_TEV_TRACE_BEGIN, mov, 0, 0 },
			{ PREC_TEV_TRACE_END, sc, 0, PREC_END_ASYNC },
			{ PREC_TEV_TRACE_BEGIN, fc, 0, 0 },
			{ PREC_TEV_OVERFLOW, fc, 0, 0 },
			{ PREC_TEV_BRANCH, fc, sc, PREC_BR_RETURN },
			{ PREC_TEV_BRANCH, sc, 0, PREC_BR_SYSCALL },
			{ PREC_TEV_TRACE_END, sc, 0, PREC_END_SYSCALL },
		};
		check_events(ev, n, w, T_N(w));
	}
	prec_session_free(s);
	enc_free(&x);
}

/* A pause deep in the call stack: the depth is the same after the resume. */
static void call_trace_pause_depth(void)
{
	static struct sim sm;
	static uint64_t ind[2];
	struct prec_output_opts o;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	char *got, *exp;
	int rc;

	if (!build_prog(&p, "prog1", prog1_src))
		return;
	memset(&sm, 0, sizeof(sm));
	sm.p = &p;
	sm.conds = "TNTTTN";
	ind[0] = sym(&p, "f_c");
	for (size_t i = 0; i < p.n; i++)
		if (!strcmp(p.in[i].mn, "jmp") && p.in[i].op[0] == '*')
			ind[1] = p.in[i].addr + (uint64_t)p.in[i].len;
	sm.ind = ind;
	sm.nind = 2;
	/* _start: call f_a; f_a: call f_b; f_b: test, je -> pause at f_b's ret. */
	sm.pause_at = 6;
	enc_init(&x, 1 << 16);
	enc_psb(&x, false, 0, 0);
	T_OK(sim_run(&sm, &x, sym(&p, "_start"), 0));
	s = make_session(&p, IMG_DISK, &x, false, 42);
	prec_output_opts_init(&o);
	o.fmt = PREC_FMT_CALL_RET_TRACE;
	got = run_output(s, &o, &rc);
	T_EQ_INT(rc, 0);
	exp = expected_trace(&p, &sm, true, "prog", 42);
	T_EQ_STR(got, exp);
	/* by hand: the pause is two levels down and so is the resume */
	T_CONTAINS(got, "tr end                (");
	T_OK(strstr(got, ")\t        f_b") != NULL);
	free(got);
	free(exp);
	prec_session_free(s);
	enc_free(&x);
}

/* --symfs: the file is looked up under the root, and only there. */
static void symfs_lookup(void)
{
	static struct prec_tev ev[4096];
	static struct sim sm;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	char root[600], cmd[4000];
	size_t n;

	if (!prog1_flow(&p, &sm, &x, false, 0))
		return;
	snprintf(root, sizeof(root), "%s/root", t_tmpdir());
	snprintf(cmd, sizeof(cmd), "mkdir -p %s%s && cp %s %s%s && rm %s", root, t_tmpdir(),
		 p.path, root, p.path, p.path);
	T_EQ_INT(system(cmd), 0);
	for (int with_root = 0; with_root < 2; with_root++) {
		struct sbuf sb = { .n = 0 };
		struct prec_evdesc d = { .name = "pt", .kind = PREC_EVK_TRACER };

		s = prec_session_new();
		set_machine(s, false);
		prec_session_add_event(s, &d, &(uint64_t){ 1 }, 1);
		if (with_root)
			T_EQ_INT(prec_session_set_symfs(s, root), 0);
		rec_comm(&sb, 4, 4, "prog", true, 0);
		add_prog(s, &sb, &p, 4, 4, IMG_DISK, 0);
		prec_session_add_sideband(s, sb.b, sb.n, -1);
		prec_session_add_aux(s, -1, 4, 0, x.buf, enc_off(&x));
		T_EQ_INT(prec_session_finalize(s), 0);
		n = decode_all(s, 0, ev, 4096, false);
		if (with_root) {
			T_OK(same_flow(ev, n, &sm, 0));
			T_EQ_INT(prec_session_nr_warnings(s), 0);
		} else {
			T_EQ_INT(count_type(ev, n, PREC_TEV_ERROR), 1);
			T_EQ_INT(prec_session_nr_warnings(s), 1);
			T_CONTAINS(prec_session_warning(s, 0), "not found");
		}
		prec_session_free(s);
	}
	enc_free(&x);
}

/* Only calls inside the time range are printed, and every one of them. */
static void call_trace_time_range(void)
{
	static struct sim sm;
	struct prec_output_opts o;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	uint64_t t0, t1;
	char *got, *line, *save = NULL;
	size_t want = 0, lines = 0;
	int rc;

	if (!loop_flow(&p, &sm, &x, 97, 5000000, 11))
		return;
	s = make_session(&p, IMG_DISK, &x, true, 5);
	t0 = 1000000 + (5000000 + 1000 * 11) * 3 / 2;
	t1 = 1000000 + (5000000 + 3000 * 11) * 3 / 2;
	for (size_t i = 0; i < sm.nev; i++) {
		uint64_t t = 1000000 + sm.ev[i].tsc * 3 / 2;

		/* calls, and trace begin/end, are the lines of a call trace */
		if (((sm.ev[i].type == PREC_TEV_BRANCH && sm.ev[i].kind == PREC_BR_CALL) ||
		     sm.ev[i].type == PREC_TEV_TRACE_BEGIN || sm.ev[i].type == PREC_TEV_TRACE_END) &&
		    t >= t0 && t <= t1)
			want++;
	}
	T_OK(want > 100);
	prec_output_opts_init(&o);
	o.time_start = t0;
	o.time_end = t1;
	got = run_output(s, &o, &rc);
	T_EQ_INT(rc, 0);
	for (line = strtok_r(got, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long sec, ns;
		char *c = strstr(line, ": (");

		lines++;
		if (!T_OK(c && c - 15 > line) || sscanf(c - 15, "%lu.%lu", &sec, &ns) != 2)
			break;
		T_OK(sec * 1000000000 + ns >= t0 && sec * 1000000000 + ns <= t1);
	}
	T_EQ_INT(lines, want);
	free(got);
	prec_session_free(s);
	enc_free(&x);
}

/* An endless loop of direct jumps needs no trace: the decoder must stop. */
static void decode_endless_loop(void)
{
	static struct prec_tev ev[64];
	static const char src[] = "	.text\n	.globl _start\n_start:\n1:	jmp 1b\n";
	struct prec_decoder_opts o = { .no_blocks = true };
	struct prec_decoder *d;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	size_t n = 0, errs = 0, branches = 0;
	int r;

	if (!build_prog(&p, "spin", src))
		return;
	enc_init(&x, 4096);
	enc_psb(&x, false, 0, 0);
	enc_mode64(&x);
	enc_ip(&x, ppt_tip_pge, sym(&p, "_start"), false);
	/* A packet the loop never reaches: the trace is not used up (pts_eos). */
	enc_tnt(&x, true);
	enc_flush_tnt(&x);
	s = make_session(&p, IMG_EMBED, &x, false, 3);
	T_EQ_INT(prec_decoder_open(&prec_intel_pt_decoder, s, prec_session_stream(s, 0), &o, &d), 0);
	/* Jumps are branch events: count them, but do not keep them. */
	while ((r = prec_decoder_next(d, &ev[n])) > 0) {
		if (ev[n].type == PREC_TEV_ERROR) {
			errs++;
			T_CONTAINS(ev[n].u.err.msg, "endless loop");
		}
		if (ev[n].type == PREC_TEV_BRANCH)
			branches++;
		else if (n < 63)
			n++;
	}
	T_EQ_INT(r, 0);
	T_EQ_INT(errs, 1);
	/* Found as soon as the loop comes round (Brent), not after a budget. */
	T_OK(branches <= 4);
	prec_decoder_free(d);
	prec_session_free(s);
	enc_free(&x);
}

/*
 * A stream that ends without TIP.PGD (a full AUX area, a stopped recording, a
 * cut snapshot): decoding stops at libipt's pts_eos, with nothing after the
 * last instruction the trace proves and no error, whatever the code beyond
 * (here a jump into unmapped memory). Ends: after a taken TNT, a not-taken
 * TNT, a TIP, a FUP+TIP (an interrupt), and right after a PSB+.
 */
static void decode_end_of_trace(void)
{
	static const char src[] = "	.text\n	.globl _start\n_start:\n	mov $3, %ecx\n"
				  "1:	dec %ecx\n	jnz 1b\n	jmp *%rax\n"
				  "	.globl there\nthere:\n	nop\n	jmp 0x7000000\n";
	static const char *const ends[] = { "taken", "not taken", "tip", "fup+tip", "psb" };
	struct prec_decoder_opts o = { 0 };
	struct prog p;
	size_t k;

	if (!build_prog(&p, "eot", src))
		return;
	for (k = 0; k < PREC_ARRAY_SIZE(ends); k++) {
		struct prec_decoder *d;
		struct prec_session *s;
		struct prec_tev ev;
		struct enc x;
		uint64_t last = 0;
		size_t errs = 0;
		int r;

		enc_init(&x, 4096);
		enc_psb(&x, false, 0, 0);
		enc_mode64(&x);
		if (k < 4)
			enc_ip(&x, ppt_tip_pge, sym(&p, "_start"), false);
		if (k == 0)
			enc_tnt(&x, true);
		if (k >= 1 && k <= 3) {
			enc_tnt(&x, true);
			enc_tnt(&x, false);
		}
		if (k == 2)
			enc_ip(&x, ppt_tip, sym(&p, "there"), false);
		if (k == 3) {
			enc_flush_tnt(&x);
			enc_ip(&x, ppt_fup, sym(&p, "there") - 2, false); /* at the jmp */
			enc_ip(&x, ppt_tip, sym(&p, "there"), false);
		}
		enc_flush_tnt(&x);
		s = make_session(&p, IMG_EMBED, &x, false, 3);
		T_EQ_INT(prec_decoder_open(&prec_intel_pt_decoder, s, prec_session_stream(s, 0), &o,
					   &d), 0);
		while ((r = prec_decoder_next(d, &ev)) > 0) {
			if (ev.type == PREC_TEV_ERROR) {
				errs++;
				t_check(false, __FILE__, __LINE__, "%s: error %s", ends[k],
					ev.u.err.msg);
			}
			if (ev.type == PREC_TEV_BLOCK)
				last = ev.u.block.end_ip;
		}
		T_EQ_INT(r, 0);
		T_EQ_INT(errs, 0);
		/*
		 * The last block ends at the jnz whose TNT bit was the last (a taken
		 * one leads back into the loop, which needs more trace), at the
		 * "jmp *%rax" whose TIP was the last packet, before the interrupted
		 * jmp for FUP+TIP; nothing after a lone PSB+.
		 */
		if (k == 2)
			T_EQ_U64(last, sym(&p, "there") - 2);
		else if (k < 4)
			T_OK(last >= sym(&p, "_start") && last <= sym(&p, "there") - 4);
		else
			T_EQ_U64(last, 0);
		prec_decoder_free(d);
		prec_session_free(s);
		enc_free(&x);
	}
}

/*
 * The final branch of a stream: the trace ends right after the packet that
 * gives its target (the TIP of an indirect call, jump or return; a taken
 * TNT bit), or right before it. A branch the trace proves is a branch event
 * with its target, whatever comes after; one whose target the trace never
 * gave is not (no invented target); nothing after it is decoded and nothing
 * is an error.
 */
static void decode_final_branch(void)
{
	static const char src[] = "	.text\n	.globl _start\n_start:\n	mov $2, %ecx\n"
				  "1:	dec %ecx\n	jnz 1b\n	.globl icall\nicall:\n	call *%rax\n"
				  "	.globl ijmp\nijmp:\n	jmp *%rax\n	.globl iret\niret:\n	ret\n"
				  "	.globl there\nthere:\n	nop\n	jmp 0x7000000\n";
	static const struct {
		const char *name, *from;
		enum prec_br_kind kind;
		bool tip;          /* the target's TIP is in the trace */
	} cs[] = {
		{ "indirect call", "icall", PREC_BR_CALL, true },
		{ "indirect jump", "ijmp", PREC_BR_INDIRECT, true },
		{ "return", "iret", PREC_BR_RETURN, true },
		{ "indirect call, no TIP", "icall", PREC_BR_CALL, false },
		{ "return, no TIP", "iret", PREC_BR_RETURN, false },
		{ "taken jnz", "1b", PREC_BR_COND, false },
	};
	struct prog p;
	size_t k;

	if (!build_prog(&p, "finalbr", src))
		return;
	for (k = 0; k < PREC_ARRAY_SIZE(cs); k++) {
		static struct prec_tev ev[256];
		struct prec_session *s;
		struct enc x;
		uint64_t from, to = sym(&p, "there"), last = 0;
		size_t n, i, errs = 0, hits = 0, others = 0, want;
		bool cond = cs[k].kind == PREC_BR_COND;

		enc_init(&x, 4096);
		enc_psb(&x, false, 0, 0);
		enc_mode64(&x);
		/* the loop: a taken jnz (the last packet for "taken jnz"), then out */
		enc_ip(&x, ppt_tip_pge, sym(&p, "_start"), false);
		enc_tnt(&x, true);
		if (!cond) {
			enc_tnt(&x, false);
			enc_flush_tnt(&x);
			/* through the earlier indirect branches to this one: TIPs to the next */
			if (strcmp(cs[k].from, "icall")) {
				enc_ip(&x, ppt_tip, sym(&p, "ijmp"), false);
				if (!strcmp(cs[k].from, "iret"))
					enc_ip(&x, ppt_tip, sym(&p, "iret"), false);
			}
			if (cs[k].tip)
				enc_ip(&x, ppt_tip, to, false);
		}
		enc_flush_tnt(&x);
		from = cond ? sym(&p, "icall") - 2 : sym(&p, cs[k].from);
		s = make_session(&p, IMG_EMBED, &x, false, 3);
		n = decode_all(s, 0, ev, 256, true);
		for (i = 0; i < n; i++) {
			if (ev[i].type == PREC_TEV_ERROR) {
				errs++;
				t_check(false, __FILE__, __LINE__, "%s: error %s", cs[k].name,
					ev[i].u.err.msg);
			}
			if (ev[i].type == PREC_TEV_BLOCK)
				last = ev[i].u.block.end_ip;
			if (ev[i].type != PREC_TEV_BRANCH)
				continue;
			if (ev[i].u.branch.from == from)
				hits++;
			else if (ev[i].u.branch.to == to || !ev[i].u.branch.to)
				others++;
			if (ev[i].u.branch.from == from && cs[k].tip) {
				T_EQ_U64(ev[i].u.branch.to, to);
				T_EQ_INT(ev[i].u.branch.kind, cs[k].kind);
			}
		}
		T_EQ_INT(errs, 0);
		/* the proven branch once, none unproven */
		want = cs[k].tip || cond ? 1 : 0;
		T_EQ_INT(hits, want);
		T_EQ_INT(others, 0);
		/* nothing at the target is decoded; an unproven branch is not either */
		T_OK(last && last <= from);
		if (cs[k].tip)
			T_EQ_U64(last, from);
		prec_session_free(s);
		enc_free(&x);
	}
}

/* ---- packets real processors write and the software tracer does not ---- */

static const char hw_src[] = "	.text\n	.globl _start\n_start:\n	mov $2, %ecx\n"
			     "1:	dec %ecx\n	jnz 1b\n	.globl mid\nmid:\n	ptwrite %eax\n"
			     "	ptwrite %rax\n"
			     "	.globl tail\ntail:\n	call *%rax\n	.globl there\nthere:\n"
			     "	nop\n	jmp 0x7000000\n";

static void enc_pkt_of(struct enc *x, enum pt_packet_type t, const struct pt_packet *tmpl)
{
	struct pt_packet pk = *tmpl;

	enc_flush_tnt(x);
	pk.type = t;
	enc_pkt(x, &pk);
}

enum hw_case {
	HC_PLAIN, HC_PTWRITE, HC_POWER, HC_CBR, HC_PIP, HC_VMCS, HC_TSX, HC_CYC,
	HC_OVF_FUP, HC_OVF_PGE, HC_OVF_END, HC_OVF_PSB, HC_TSX_ABORT, HC_PSB_STATUS,
};

/*
 * The flow of hw_src: into the loop at _start, one taken and one not-taken
 * jnz, then the two PTWRITEs at mid, tail's indirect call to there (its TIP the last packet);
 * @c adds its packets where a processor writes them.
 */
static void hw_stream(struct enc *x, const struct prog *p, enum hw_case c)
{
	struct pt_packet pk;

	memset(&pk, 0, sizeof(pk));
	enc_init(x, 4096);
	enc_psb(x, false, 0, 0);
	enc_mode64(x);
	/*
	 * A CBR anywhere; a CR3 (PIP) or VMCS change while tracing is off, as
	 * a per-CPU stream has them between a TIP.PGD and the TIP.PGE of the
	 * next task (in flow they bind to a far branch or MOV CR3).
	 */
	if (c == HC_CBR) {
		pk.payload.cbr.ratio = 0x1f;
		enc_pkt_of(x, ppt_cbr, &pk);
	}
	if (c == HC_PIP) {
		pk.payload.pip.cr3 = 0x12345000;
		enc_pkt_of(x, ppt_pip, &pk);
	}
	if (c == HC_VMCS) {
		pk.payload.vmcs.base = 0xabcd000;
		enc_pkt_of(x, ppt_vmcs, &pk);
	}
	enc_ip(x, ppt_tip_pge, sym(p, "_start"), false);
	if (c == HC_CYC) {
		pk.payload.cyc.value = 9;
		enc_pkt_of(x, ppt_cyc, &pk);
	}
	enc_tnt(x, true);
	if (c == HC_CYC) {
		pk.payload.cyc.value = 0x123;
		enc_pkt_of(x, ppt_cyc, &pk);
	}
	enc_tnt(x, false);
	enc_flush_tnt(x);
	switch (c) {
	case HC_PTWRITE:
		pk.payload.ptw.payload = 0xfeedbeef;
		pk.payload.ptw.plc = 0; /* 4 bytes, no FUP */
		enc_pkt_of(x, ppt_ptw, &pk);
		pk.payload.ptw.payload = 0x0123456789abcdefull;
		pk.payload.ptw.plc = 1; /* 8 bytes */
		enc_pkt_of(x, ppt_ptw, &pk);
		break;
	case HC_POWER:
		pk.payload.mwait.hints = 0x20;
		pk.payload.mwait.ext = 1;
		enc_pkt_of(x, ppt_mwait, &pk);
		memset(&pk, 0, sizeof(pk));
		pk.payload.pwre.state = 2;
		pk.payload.pwre.sub_state = 1;
		enc_pkt_of(x, ppt_pwre, &pk);
		memset(&pk, 0, sizeof(pk));
		pk.payload.exstop.ip = 1;
		enc_pkt_of(x, ppt_exstop, &pk);
		enc_ip(x, ppt_fup, sym(p, "mid"), false);
		memset(&pk, 0, sizeof(pk));
		pk.payload.pwrx.last = 2;
		pk.payload.pwrx.deepest = 6;
		pk.payload.pwrx.interrupt = 1;
		enc_pkt_of(x, ppt_pwrx, &pk);
		break;
	case HC_TSX:
	case HC_TSX_ABORT:
		pk.payload.mode.leaf = pt_mol_tsx;
		pk.payload.mode.bits.tsx.intx = 1;
		enc_pkt_of(x, ppt_mode, &pk);
		enc_ip(x, ppt_fup, sym(p, "mid"), false);
		pk.payload.mode.bits.tsx.intx = 0;
		pk.payload.mode.bits.tsx.abrt = c == HC_TSX_ABORT;
		enc_pkt_of(x, ppt_mode, &pk);
		enc_ip(x, ppt_fup, sym(p, "tail"), false);
		break;
	case HC_OVF_FUP:
		enc_simple(x, ppt_ovf);
		enc_ip(x, ppt_fup, sym(p, "tail"), false);
		break;
	case HC_OVF_PGE:
		enc_simple(x, ppt_ovf);
		enc_ip(x, ppt_tip_pge, sym(p, "tail"), false);
		break;
	case HC_OVF_END:
		enc_simple(x, ppt_ovf);
		return;
	case HC_PSB_STATUS:
		/*
		 * A PSB+ in mid-flow with the state a processor repeats there,
		 * twice: the second restates the first.
		 */
		for (int i = 0; i < 2; i++) {
			enc_simple(x, ppt_psb);
			enc_tsc(x, 0x123456 + (uint64_t)i);
			memset(&pk, 0, sizeof(pk));
			pk.payload.tma.ctc = 0x12;
			pk.payload.tma.fc = 0x34;
			enc_pkt_of(x, ppt_tma, &pk);
			memset(&pk, 0, sizeof(pk));
			pk.payload.cbr.ratio = 0x20;
			enc_pkt_of(x, ppt_cbr, &pk);
			memset(&pk, 0, sizeof(pk));
			pk.payload.vmcs.base = 0xabcd000;
			enc_pkt_of(x, ppt_vmcs, &pk);
			memset(&pk, 0, sizeof(pk));
			pk.payload.pip.cr3 = 0x12345000;
			enc_pkt_of(x, ppt_pip, &pk);
			enc_mode64(x);
			memset(&pk, 0, sizeof(pk));
			pk.payload.mode.leaf = pt_mol_tsx;
			enc_pkt_of(x, ppt_mode, &pk);
			enc_ip(x, ppt_fup, sym(p, "mid"), false);
			enc_simple(x, ppt_psbend);
		}
		break;
	case HC_OVF_PSB:
		/* the overflow resolved at a PSB: its PSB+ carries the FUP */
		enc_simple(x, ppt_ovf);
		enc_psb(x, true, sym(p, "tail"), 0);
		break;
	default:
		break;
	}
	enc_ip(x, ppt_tip, sym(p, "there"), false);
}

struct hw_flow {
	uint64_t insns, nbr, ovf, ovf_off, errs;
	uint64_t br_from[16], br_to[16];
	int br_kind[16];
	struct prec_tev hw[16];
	size_t nhw;
};

static void hw_decode(const struct prog *p, enum hw_case c, struct hw_flow *fl, char **events)
{
	static struct prec_tev ev[512];
	struct prec_session *s;
	struct prec_output_opts o;
	struct enc x;
	size_t n, i;
	int rc;

	memset(fl, 0, sizeof(*fl));
	hw_stream(&x, p, c);
	T_OK(!x.err);
	s = make_session(p, IMG_EMBED, &x, false, 3);
	n = decode_all(s, 0, ev, 512, true);
	for (i = 0; i < n; i++) {
		const struct prec_tev *e = &ev[i];

		if (e->type == PREC_TEV_BLOCK)
			fl->insns += e->u.block.ninsn;
		if (e->type == PREC_TEV_ERROR)
			fl->errs++;
		if (e->type == PREC_TEV_OVERFLOW && !fl->ovf++)
			fl->ovf_off = e->offset;
		if (e->type == PREC_TEV_HW && fl->nhw < 16)
			fl->hw[fl->nhw++] = *e;
		if (e->type == PREC_TEV_BRANCH && fl->nbr < 16) {
			fl->br_from[fl->nbr] = e->u.branch.from;
			fl->br_to[fl->nbr] = e->u.branch.to;
			fl->br_kind[fl->nbr++] = e->u.branch.kind;
		}
	}
	prec_output_opts_init(&o);
	o.fmt = PREC_FMT_EVENTS;
	*events = run_output(s, &o, &rc);
	T_EQ_INT(rc, 0);
	prec_session_free(s);
	enc_free(&x);
}

static const struct prec_tev *hw_find(const struct hw_flow *fl, int kind)
{
	for (size_t i = 0; i < fl->nhw; i++)
		if (fl->hw[i].u.hw.kind == kind)
			return &fl->hw[i];
	t_check(false, __FILE__, __LINE__, "no %s event", prec_hw_kind_name(kind));
	return NULL;
}

/* The same instructions and branches as the stream without the extra packets. */
static void same_hw_flow(const struct hw_flow *a, const struct hw_flow *b)
{
	T_EQ_U64(a->insns, b->insns);
	T_EQ_U64(a->nbr, b->nbr);
	T_OK(!memcmp(a->br_from, b->br_from, sizeof(a->br_from)));
	T_OK(!memcmp(a->br_to, b->br_to, sizeof(a->br_to)));
	T_OK(!memcmp(a->br_kind, b->br_kind, sizeof(a->br_kind)));
}

/*
 * PTWRITE, the power events (MWAIT, PWRE, EXSTOP, PWRX), CBR, PIP, VMCS, a
 * committed transaction, CYC-only timing: each is an event of its own with
 * the packet's values, named in --events, and the instruction flow is the
 * flow of the same stream without them: nothing invented, no error.
 */
static void decode_hw_events(void)
{
	static const enum hw_case cs[] = { HC_PTWRITE, HC_POWER, HC_CBR, HC_PIP,
					   HC_VMCS, HC_TSX, HC_CYC, HC_PSB_STATUS };
	struct hw_flow ref, fl;
	const struct prec_tev *e;
	struct prog p;
	char *txt;
	size_t k;

	if (!build_prog(&p, "hwev", hw_src))
		return;
	hw_decode(&p, HC_PLAIN, &ref, &txt);
	free(txt);
	T_EQ_U64(ref.errs, 0);
	T_EQ_U64(ref.nhw, 0);
	/* mov, 2x (dec, jnz), 2x ptwrite, call; the taken jnz and the call */
	T_EQ_U64(ref.insns, 8);
	T_EQ_U64(ref.nbr, 2);
	T_EQ_U64(ref.br_to[1], sym(&p, "there"));
	for (k = 0; k < PREC_ARRAY_SIZE(cs); k++) {
		hw_decode(&p, cs[k], &fl, &txt);
		T_EQ_U64(fl.errs, 0);
		same_hw_flow(&fl, &ref);
		switch (cs[k]) {
		case HC_PTWRITE:
			T_EQ_U64(fl.nhw, 2);
			T_EQ_U64(fl.hw[0].u.hw.val, 0xfeedbeef);
			T_EQ_INT(fl.hw[0].u.hw.a, 4);
			T_EQ_U64(fl.hw[1].u.hw.val, 0x0123456789abcdefull);
			T_EQ_INT(fl.hw[1].u.hw.a, 8);
			T_CONTAINS(txt, "ptwrite 0xfeedbeef size 4");
			break;
		case HC_POWER:
			T_EQ_U64(fl.nhw, 4);
			if ((e = hw_find(&fl, PREC_HW_MWAIT))) {
				T_EQ_INT(e->u.hw.a, 0x20);
				T_EQ_INT(e->u.hw.b, 1);
				T_EQ_U64(e->u.hw.ip, sym(&p, "mid"));
			}
			if ((e = hw_find(&fl, PREC_HW_PWRE)))
				T_OK(e->u.hw.a == 2 && e->u.hw.b == 1 && !e->u.hw.val);
			if ((e = hw_find(&fl, PREC_HW_EXSTOP)))
				T_EQ_U64(e->u.hw.ip, sym(&p, "mid"));
			if ((e = hw_find(&fl, PREC_HW_PWRX)))
				T_OK(e->u.hw.a == 2 && e->u.hw.b == 6 &&
				     e->u.hw.val == PREC_PWRX_INTERRUPT);
			T_CONTAINS(txt, "mwait hints 0x20 ext 0x1 ip ");
			T_CONTAINS(txt, "pwre state C2 sub 1");
			T_CONTAINS(txt, "exstop ip ");
			T_CONTAINS(txt, "pwrx last C2 deepest C6 wake interrupt");
			break;
		case HC_CBR:
			if ((e = hw_find(&fl, PREC_HW_CBR)))
				T_EQ_INT(e->u.hw.a, 0x1f);
			T_CONTAINS(txt, "cbr ratio 31");
			break;
		case HC_PIP:
			if ((e = hw_find(&fl, PREC_HW_PAGING)))
				T_EQ_U64(e->u.hw.val, 0x12345000);
			T_CONTAINS(txt, "paging cr3 0x12345000");
			break;
		case HC_VMCS:
			if ((e = hw_find(&fl, PREC_HW_VMCS)))
				T_EQ_U64(e->u.hw.val, 0xabcd000);
			T_CONTAINS(txt, "vmcs base 0xabcd000");
			break;
		case HC_PSB_STATUS:
			/*
			 * The flow goes on through both; the first PSB+ reveals
			 * the CBR, CR3 and VMCS base (events), the second only
			 * restates them (none).
			 */
			T_EQ_U64(fl.nhw, 3);
			if ((e = hw_find(&fl, PREC_HW_CBR)))
				T_EQ_INT(e->u.hw.a, 0x20);
			if ((e = hw_find(&fl, PREC_HW_PAGING)))
				T_EQ_U64(e->u.hw.val, 0x12345000);
			if ((e = hw_find(&fl, PREC_HW_VMCS)))
				T_EQ_U64(e->u.hw.val, 0xabcd000);
			T_CONTAINS(txt, "cbr ratio 32");
			break;
		case HC_TSX:
			T_EQ_U64(fl.nhw, 2);
			if ((e = hw_find(&fl, PREC_HW_TSX_BEGIN)))
				T_EQ_U64(e->u.hw.ip, sym(&p, "mid"));
			if ((e = hw_find(&fl, PREC_HW_TSX_COMMIT)))
				T_EQ_U64(e->u.hw.ip, sym(&p, "tail"));
			T_CONTAINS(txt, "tx begin ip ");
			T_CONTAINS(txt, "tx commit ip ");
			break;
		default:
			T_EQ_U64(fl.nhw, 0);
			break;
		}
		free(txt);
	}
}

/*
 * A transaction that aborts at tail: the abort is a branch from tail to
 * the handler the TIP gives (here "there"), the call at tail never runs;
 * an overflow, then tracing again at tail (by a FUP, a TIP.PGE or a PSB+'s
 * FUP): the overflow is reported at its offset and decoding goes on at tail
 * with the indirect call, without an error.
 */
static void decode_ovf_and_abort(void)
{
	static const enum hw_case cs[] = { HC_OVF_FUP, HC_OVF_PGE, HC_OVF_END, HC_OVF_PSB };
	struct hw_flow fl;
	struct prog p;
	char *txt;
	size_t k;

	if (!build_prog(&p, "ovf", hw_src))
		return;
	hw_decode(&p, HC_TSX_ABORT, &fl, &txt);
	T_EQ_U64(fl.errs, 0);
	T_EQ_U64(fl.nbr, 2);
	T_EQ_INT(fl.br_kind[1], PREC_BR_TX_ABORT);
	T_EQ_U64(fl.br_from[1], sym(&p, "tail"));
	T_EQ_U64(fl.br_to[1], sym(&p, "there"));
	T_EQ_U64(fl.insns, 7); /* the call did not run */
	T_CONTAINS(txt, "tx begin ip ");
	free(txt);
	for (k = 0; k < PREC_ARRAY_SIZE(cs); k++) {
		struct enc x;

		hw_stream(&x, &p, cs[k]);
		hw_decode(&p, cs[k], &fl, &txt);
		T_EQ_U64(fl.errs, 0);
		T_EQ_U64(fl.ovf, 1);
		/* at the OVF packet: after PSB+ (16 + 2), MODE (2), TIP.PGE (7), TNT (1) */
		T_EQ_U64(fl.ovf_off, 28);
		T_EQ_U64(fl.insns, cs[k] == HC_OVF_END ? 5 : 6);
		/* the taken jnz before; after, tail's call to there, unless it ended */
		T_EQ_U64(fl.nbr, cs[k] == HC_OVF_END ? 1 : 2);
		T_EQ_U64(fl.br_from[fl.nbr - 1],
			 cs[k] == HC_OVF_END ? sym(&p, "mid") - 2 : sym(&p, "tail"));
		if (cs[k] != HC_OVF_END) {
			T_EQ_U64(fl.br_to[1], sym(&p, "there"));
			T_EQ_INT(fl.br_kind[1], PREC_BR_CALL);
		}
		T_CONTAINS(txt, "overflow");
		if (cs[k] == HC_OVF_FUP || cs[k] == HC_OVF_PSB) {
			char want[64];

			/* where tracing went on: the FUP, or the FUP in the PSB+ */
			snprintf(want, sizeof(want), "overflow 0x%" PRIx64 "\n", sym(&p, "tail"));
			T_CONTAINS(txt, want);
		}
		free(txt);
		enc_free(&x);
	}
}

/*
 * After a decode error the decoder resyncs at the next PSB with the call
 * stack unknown: the call trace's depth restarts at 0 there (perf flushes
 * its thread stack when the trace is discontinuous). fa -> fb -> fc, whose
 * jump goes to code with no image (an error), then a PSB+ whose FUP is at
 * fd, which calls fe: fe is one level in, not four.
 */
static void decode_depth_restarts_after_error(void)
{
	static const char src[] = "	.text\n	.globl _start\n_start:\n	call fa\n"
				  "	.globl fa\nfa:\n	call fb\n	.globl fb\nfb:\n	call fc\n"
				  "	.globl fc\nfc:\n	jmp *%rax\n"
				  "	.globl fd\nfd:\n	call fe\n	.globl fe\nfe:\n	jmp *%rax\n";
	struct prec_output_opts o;
	struct prec_session *s;
	struct prog p;
	struct enc x;
	char *txt;
	int rc;

	if (!build_prog(&p, "depth", src))
		return;
	enc_init(&x, 4096);
	enc_psb(&x, false, 0, 0);
	enc_mode64(&x);
	enc_ip(&x, ppt_tip_pge, sym(&p, "_start"), false);
	enc_ip(&x, ppt_tip, 0x7000000, false);       /* fc's jmp: no code there */
	enc_tnt(&x, true);                           /* what ran there, lost */
	enc_tnt(&x, false);
	enc_psb(&x, true, sym(&p, "fd"), 0);
	enc_ip(&x, ppt_tip_pgd, 0, true);            /* fe's jmp leaves the trace */
	T_OK(!x.err);
	s = make_session(&p, IMG_EMBED, &x, false, 3);
	prec_output_opts_init(&o);
	o.fmt = PREC_FMT_CALL_TRACE;
	txt = run_output(s, &o, &rc);
	T_EQ_INT(rc, 0);
	T_CONTAINS(txt, ")\t            fc");       /* depth 3 before the error */
	T_CONTAINS(txt, "error");
	T_CONTAINS(txt, ")\t    fe");               /* depth 1 after it */
	T_OK(!strstr(txt, ")\t                fe")); /* not depth 4 */
	free(txt);
	prec_session_free(s);
	enc_free(&x);
}

/*
 * A loop that takes its conditional branch from TNT bits of one packet comes
 * back to the same block with the packet offset unchanged: that is progress
 * (a bit consumed), not an endless loop. 40 rounds (39 taken jnz, the last
 * falls through), then "2: jmp 2b", which is one.
 */
static void decode_tnt_loop_progress(void)
{
	static const char src[] = "	.text\n	.globl _start\n_start:\n	mov $40, %ecx\n"
				  "1:	dec %ecx\n	jnz 1b\n2:	jmp 2b\n";
	struct prec_decoder_opts o = { .no_blocks = true };
	struct prec_decoder *d;
	struct prec_tev ev;
	struct prog p;
	struct enc x;
	struct prec_session *s;
	size_t errs = 0, conds = 0, i;
	int r;

	if (!build_prog(&p, "tntloop", src))
		return;
	enc_init(&x, 4096);
	enc_psb(&x, false, 0, 0);
	enc_mode64(&x);
	enc_ip(&x, ppt_tip_pge, sym(&p, "_start"), false);
	for (i = 0; i < 40; i++)
		enc_tnt(&x, i < 39);
	enc_flush_tnt(&x);
	enc_tnt(&x, true); /* never reached: keeps the trace from ending (pts_eos) */
	enc_flush_tnt(&x);
	s = make_session(&p, IMG_EMBED, &x, false, 3);
	T_EQ_INT(prec_decoder_open(&prec_intel_pt_decoder, s, prec_session_stream(s, 0), &o, &d), 0);
	while ((r = prec_decoder_next(d, &ev)) > 0) {
		if (ev.type == PREC_TEV_ERROR) {
			errs++;
			T_CONTAINS(ev.u.err.msg, "endless loop");
			T_EQ_INT(conds, 39); /* every taken jnz came before the error */
		}
		if (ev.type == PREC_TEV_BRANCH && ev.u.branch.kind == PREC_BR_COND)
			conds++;
	}
	T_EQ_INT(r, 0);
	T_EQ_INT(errs, 1);
	T_EQ_INT(conds, 39);
	prec_decoder_free(d);
	prec_session_free(s);
	enc_free(&x);
}

/*
 * The last instructions before an exec carry the exec's time: they are
 * decoded in the old program's space, though the new program's mappings
 * have the same timestamp.
 */
static void decode_at_exec(void)
{
	static struct prec_tev ev[16384];
	static struct sim sm;
	struct prog pl, pa;
	struct enc x;
	struct prec_session *s;
	struct sbuf sb = { .n = 0 };
	struct prec_evdesc d = { .name = "intel_pt//u", .kind = PREC_EVK_TRACER };
	struct prec_output_opts o;
	uint64_t id = 1, tsc0 = 4000000, t_exec = 1000000 + tsc0 * 3 / 2;
	size_t n;
	char *got;
	int rc;

	if (!loop_flow(&pl, &sm, &x, 0, tsc0, 0) || !build_prog(&pa, "prog1", prog1_src))
		return;
	s = prec_session_new();
	set_machine(s, true);
	prec_session_add_event(s, &d, &id, 1);
	rec_comm(&sb, 100, 100, "loop", true, 10);
	add_prog(s, &sb, &pl, 100, 100, IMG_EMBED, 20);
	/* the exec at the time of the whole trace; prog1 mapped elsewhere */
	rec_comm(&sb, 100, 100, "prog1", true, t_exec);
	rec_mmap2(&sb, 100, 100, 0x10000000, 0x1000, pa.seg_off & ~0xfffull, pa.path, pa.bid, 20,
		  t_exec);
	T_OK(prec_session_add_sideband(s, sb.b, sb.n, -1) > 0);
	prec_session_add_aux(s, -1, 100, 0, x.buf, enc_off(&x));
	T_EQ_INT(prec_session_finalize(s), 0);
	n = decode_all(s, 0, ev, 16384, false);
	T_OK(n > 0 && ev[0].time == t_exec);
	T_OK(same_flow(ev, n, &sm, 0));
	T_EQ_INT(count_type(ev, n, PREC_TEV_ERROR), 0);
	/* the names are the old program's too */
	prec_output_opts_init(&o);
	got = run_output(s, &o, &rc);
	T_EQ_INT(rc, 0);
	T_CONTAINS(got, ")\t    work");
	T_CONTAINS(got, ")\t        leaf");
	T_OK(!strstr(got, "error"));
	free(got);
	prec_session_free(s);
	enc_free(&x);
}

/*
 * Only a begin or end that a trigger caused is named after it. A trap that
 * found tracing already on (a uprobe of a recursive function's inner entry,
 * a counter's resume inside a window) shows as an end and a begin at its
 * IP: neither is named, though a resume sample was taken there and a pause
 * sample close in time; both samples still get their own lines.
 */
static void trigger_changed_nothing(void)
{
	static struct sim sm;
	static uint64_t ind[2];
	struct prog p;
	struct enc x;
	struct prec_session *s;
	struct sbuf sb = { .n = 0 };
	struct prec_evdesc d = { .name = "intel_pt//u", .kind = PREC_EVK_TRACER };
	const uint64_t st = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			    PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	struct prec_evdesc dr = { .name = "enter", .kind = PREC_EVK_RESUME, .sample_type = st };
	struct prec_evdesc dp = { .name = "leave", .kind = PREC_EVK_PAUSE, .sample_type = st };
	struct prec_output_opts o;
	uint64_t id = 1, idr = 2, idp = 3, tsc0 = 2000, t0 = 1000000 + tsc0 * 3 / 2, trap = 0;
	const char *c;
	char *got;
	int rc, named;

	if (!build_prog(&p, "prog1", prog1_src))
		return;
	memset(&sm, 0, sizeof(sm));
	sm.p = &p;
	sm.conds = "TNTTTN";
	ind[0] = sym(&p, "f_c");
	for (size_t i = 0; i < p.n; i++)
		if (!strcmp(p.in[i].mn, "jmp") && p.in[i].op[0] == '*')
			ind[1] = p.in[i].addr + (uint64_t)p.in[i].len;
	sm.ind = ind;
	sm.nind = 2;
	sm.pause_at = 6;
	enc_init(&x, 1 << 16);
	enc_psb(&x, false, 0, tsc0);
	if (!T_OK(sim_run(&sm, &x, sym(&p, "_start"), tsc0)))
		return;
	for (size_t i = 1; i < sm.nev; i++)
		if (sm.ev[i].type == PREC_TEV_TRACE_END) {
			trap = sm.ev[i].a;
			break;
		}
	T_OK(trap && trap != sym(&p, "_start") && trap != sym(&p, "f_c"));
	s = prec_session_new();
	set_machine(s, true);
	prec_session_add_event(s, &d, &id, 1);
	T_EQ_INT(prec_session_add_event(s, &dr, &idr, 1), 1);
	T_EQ_INT(prec_session_add_event(s, &dp, &idp, 1), 2);
	rec_comm(&sb, 42, 42, "prog", true, 1);
	add_prog(s, &sb, &p, 42, 42, IMG_EMBED, 2);
	/* the resume that started tracing, at _start */
	rec_sample(&sb, 2, sym(&p, "_start"), 42, 42, t0, 0, 1);
	/* a resume trap while tracing was on, and a pause elsewhere */
	rec_sample(&sb, 2, trap, 42, 42, t0 + 1, 0, 1);
	rec_sample(&sb, 3, sym(&p, "f_c"), 42, 42, t0 + 2, 0, 1);
	T_OK(prec_session_add_sideband(s, sb.b, sb.n, -1) > 0);
	prec_session_add_aux(s, -1, 42, 0, x.buf, enc_off(&x));
	T_EQ_INT(prec_session_finalize(s), 0);
	prec_output_opts_init(&o);
	o.fmt = PREC_FMT_CALL_RET_TRACE;
	got = run_output(s, &o, &rc);
	T_EQ_INT(rc, 0);
	for (named = 0, c = got; (c = strstr(c, "(resumed by ")); c++)
		named++;
	T_EQ_INT(named, 1);
	T_CONTAINS(got, ")\t_start  (resumed by enter)\n");
	T_OK(!strstr(got, "(paused by"));
	for (named = 0, c = got; (c = strstr(c, "-- resume trigger enter at ")); c++)
		named++;
	T_EQ_INT(named, 2);
	T_CONTAINS(got, "-- pause trigger leave at ");
	/* the trap itself is in the trace: an end and a begin */
	T_CONTAINS(got, "tr end    ");
	free(got);
	o.fmt = PREC_FMT_BRANCHES;
	got = run_output(s, &o, &rc);
	for (named = 0, c = got; (c = strstr(c, "(resumed by ")); c++)
		named++;
	T_EQ_INT(named, 1);
	T_OK(!strstr(got, "(paused by"));
	free(got);
	prec_session_free(s);
	enc_free(&x);
}

/* ---- the decoders' event queue ---- */

struct evq_src {
	struct prec_evq *q;
	unsigned next, end, per_step, steps;
};

/* Pushes per_step events numbered by offset, then says the stream is done. */
static int evq_refill(void *ctx)
{
	struct evq_src *src = ctx;
	unsigned i;

	src->steps++;
	for (i = 0; i < src->per_step && src->next < src->end; i++) {
		struct prec_tev *e = prec_evq_push(src->q);

		memset(e, 0, sizeof(*e));
		e->offset = src->next++;
	}
	return src->next < src->end ? 1 : 0;
}

static void evqueue_order_and_growth(void)
{
	struct prec_evq q = { 0 };
	struct evq_src src = { &q, 0, 1000, 300, 0 };
	struct prec_tev ev;
	unsigned got = 0;
	int r;

	T_EQ_INT(prec_evq_init(&q, 5), 0);
	T_EQ_U64(q.cap, 8);
	/* 300 events per step overflow the ring of 8 many times over: it grows. */
	while ((r = prec_evq_next(&q, &ev, evq_refill, &src)) == 1) {
		T_EQ_U64(ev.offset, got);
		got++;
		/* Interleave: push more while events are still queued. */
		if (got == 10)
			T_EQ_U64(prec_evq_len(&q), 290);
	}
	T_EQ_INT(r, 0);
	T_EQ_INT(got, 1000);
	T_EQ_INT(src.steps, 5); /* 4 that push, 1 more that finds the end */
	T_OK(q.cap >= 256);
	/* At the end, further pulls keep returning 0. */
	T_EQ_INT(prec_evq_next(&q, &ev, evq_refill, &src), 0);
	prec_evq_fini(&q);
	prec_evq_fini(&q);
}

static int evq_fail(void *ctx)
{
	(void)ctx;
	return -EIO;
}

static void evqueue_errors(void)
{
	struct prec_evq q = { 0 };
	struct prec_tev ev, *e;

	T_EQ_INT(prec_evq_init(&q, 0), 0);
	/* A refill error with nothing queued is returned... */
	T_EQ_INT(prec_evq_next(&q, &ev, evq_fail, NULL), -EIO);
	/* ...but queued events come first. */
	e = prec_evq_push(&q);
	memset(e, 0, sizeof(*e));
	e->offset = 7;
	T_EQ_INT(prec_evq_next(&q, &ev, evq_fail, NULL), 1);
	T_EQ_U64(ev.offset, 7);
	T_EQ_INT(prec_evq_next(&q, &ev, evq_fail, NULL), -EIO);
	/* A push that could not grow the ring makes every later pull fail. */
	q.err = -ENOMEM;
	T_EQ_INT(prec_evq_next(&q, &ev, evq_fail, NULL), -ENOMEM);
	prec_evq_fini(&q);
}

static const struct t_case cases[] = {
	T(evqueue_order_and_growth),
	T(evqueue_errors),
	T(decode_events),
	T(decode_noretcomp),
	T(decode_disk_image),
	T(decode_wrong_build_id),
	T(decode_missing_image),
	T(decode_psb_periods),
	T(decode_corrupt_resync),
	T(decode_garbage),
	T(decode_gap),
	T(decode_timing),
	T(call_trace_exact),
	T(call_trace_symbol_filter),
	T(insn_trace),
	T(images_per_process),
	T(per_cpu_switch),
	T(per_cpu_resume),
	T(trigger_names),
	T(output_epipe),
	T(decode_async_branch),
	T(decode_branch_into_nomap),
	T(insn_trace_32bit),
	T(decode_async_disable_overflow),
	T(call_trace_pause_depth),
	T(symfs_lookup),
	T(call_trace_time_range),
	T(decode_endless_loop),
	T(decode_tnt_loop_progress),
	T(decode_end_of_trace), T(decode_final_branch), T(decode_hw_events),
	T(decode_ovf_and_abort),
	T(decode_depth_restarts_after_error),
	T(decode_at_exec),
	T(trigger_changed_nothing),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}

// SPDX-License-Identifier: MIT
/*
 * The CoreSight decoder and the snapshot reader, on ETMv4/ETE packet streams
 * assembled here from the architecture's packet formats, against A64 code
 * assembled here too. Each trace comes with its ground truth (the path the
 * generator took); OpenCSD's own trc_pkt_lister, run on the same snapshot
 * directories, is the independent peer for the instruction ranges.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decoders/coresight.h"
#include "session/cs_meta.h"
#include "harness.h"
#include "output/output.h"
#include "base/perf_format.h"
#include "session/session.h"
#include "interop/snapshot.h"
#include "snapshot_write.h"
#include "record/etm_emulate.h"
#include "tracefile/tfile.h"

/* ---- A64 instructions ---- */

#define A64_NOP 0xd503201fu
#define A64_ADD 0x91000400u  /* add x0, x0, #1 */
#define A64_RET 0xd65f03c0u
#define A64_BR 0xd61f0020u   /* br x1 */
#define A64_BLR 0xd63f0020u  /* blr x1 */
#define A64_SVC 0xd4000001u  /* svc #0 */
#define A64_ERET 0xd69f03e0u

static uint32_t a64_b(uint64_t pc, uint64_t to, bool link)
{
	return (link ? 0x94000000u : 0x14000000u) | (uint32_t)(((to - pc) >> 2) & 0x3ffffff);
}

static uint32_t a64_bne(uint64_t pc, uint64_t to)
{
	return 0x54000001u | (uint32_t)((((to - pc) >> 2) & 0x7ffff) << 5);
}

static uint32_t a64_cbz(uint64_t pc, uint64_t to)
{
	return 0xb4000000u | (uint32_t)((((to - pc) >> 2) & 0x7ffff) << 5);
}

/* ---- ETMv4 packets ---- */

struct pk {
	uint8_t *b;
	size_t n, cap;
};

static void put(struct pk *p, uint8_t v)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 256;
		p->b = realloc(p->b, p->cap);
		if (!p->b)
			abort();
	}
	p->b[p->n++] = v;
}

static void put_async(struct pk *p)
{
	int i;

	for (i = 0; i < 11; i++)
		put(p, 0);
	put(p, 0x80);
}

static void put_tinfo(struct pk *p)
{
	put(p, 0x01);
	put(p, 0x00);
}

static void put_a64(struct pk *p, uint8_t hdr, uint64_t a)
{
	int i;

	put(p, hdr);
	put(p, (a >> 2) & 0x7f);
	put(p, (a >> 9) & 0x7f);
	for (i = 2; i < 8; i++)
		put(p, (a >> (8 * i)) & 0xff);
}

/* Address with context: EL in bits 1:0, SF (AArch64) bit 4, NS bit 5. */
static void put_addr_ctx(struct pk *p, uint64_t a, int el)
{
	put_a64(p, 0x85, a);
	put(p, (uint8_t)(0x30 | el));
}

static void put_addr(struct pk *p, uint64_t a)
{
	put_a64(p, 0x9d, a);
}

static void put_atom(struct pk *p, bool e)
{
	put(p, e ? 0xf7 : 0xf6);
}

/* A trace start: A-sync, trace info, trace on, where execution starts. */
static void put_start(struct pk *p, uint64_t a)
{
	put_async(p);
	put_tinfo(p);
	put(p, 0x04);
	put_addr_ctx(p, a, 0);
}

/* A periodic sync point in running trace: no discontinuity, so no trace on. */
static void put_sync(struct pk *p, uint64_t a)
{
	put_async(p);
	put_tinfo(p);
	put_addr_ctx(p, a, 0);
}

/* ---- CoreSight formatter frames ---- */

struct run {
	uint8_t id;
	const uint8_t *b;
	size_t n;
};

/*
 * Packs @runs (ID, bytes) into 16-byte frames. An ID change sits in an even
 * byte; its flag in the last byte says whether it applies from the next byte
 * or after it, which lets a run end on an odd byte. Padding is ID 0 data.
 */
static void frame(struct pk *out, const struct run *runs, size_t nruns)
{
	size_t r = 0, k = 0;
	int cur = -1;

	while (r < nruns || cur != 0) {
		uint8_t f[16] = { 0 };
		int slot;

		for (slot = 0; slot < 15; slot++) {
			size_t left = r < nruns && cur == runs[r].id ? runs[r].n - k : 0;
			bool need_switch = cur < 0 || left == 0;

			if (slot % 2 == 0 && (need_switch || (left == 1 && slot < 14))) {
				int next;

				if (need_switch) {
					if (cur >= 0 && r < nruns)
						r++, k = 0;
					next = r < nruns ? runs[r].id : 0;
					f[slot] = (uint8_t)(next << 1 | 1);
					cur = next;
					continue;
				}
				/* the run's last byte goes in the odd slot, then the new ID */
				next = r + 1 < nruns ? runs[r + 1].id : 0;
				f[slot] = (uint8_t)(next << 1 | 1);
				f[15] |= (uint8_t)(1u << (slot / 2));
				f[slot + 1] = runs[r].b[k];
				r++, k = 0;
				cur = next;
				slot++;
				continue;
			}
			{
				uint8_t v = 0;

				if (cur != 0 && r < nruns) {
					v = runs[r].b[k++];
				}
				if (slot % 2 == 0) {
					f[slot] = v & 0xfe;
					f[15] |= (uint8_t)((v & 1) << (slot / 2));
				} else {
					f[slot] = v;
				}
			}
		}
		for (slot = 0; slot < 16; slot++)
			put(out, f[slot]);
		if (r >= nruns && cur == 0)
			break;
	}
}

/* ---- snapshot directories ---- */

struct ssrc {
	int cpu;
	const char *type;         /* "ETM4" or "ETE" */
	uint8_t id;
};

static void wfile(const char *dir, const char *name, const void *p, size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fwrite(p, 1, n, f) != n)
		abort();
	fclose(f);
}

static void wtext(const char *dir, const char *name, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	wfile(dir, name, buf, strlen(buf));
}

/* Writes a snapshot: one buffer of @fmt holding @trace, code @code at @base. */
static void write_snapshot(const char *dir, const char *fmt, const struct ssrc *src, int nsrc,
			   const void *trace, size_t tlen, const void *code, size_t clen,
			   uint64_t base)
{
	char list[1024] = "", assoc[1024] = "", cores[1024] = "";
	int i;

	mkdir(dir, 0755);
	for (i = 0; i < nsrc; i++) {
		char name[64];
		size_t l;

		l = strlen(list);
		snprintf(list + l, sizeof(list) - l, "device%d=cpu_%d.ini\ndevice%d=ETM_%d.ini\n",
			 2 * i, src[i].cpu, 2 * i + 1, src[i].cpu);
		snprintf(name, sizeof(name), "cpu_%d.ini", src[i].cpu);
		if (i == 0)
			wtext(dir, name,
			      "[device]\nname=cpu_%d\nclass=core\ntype=Cortex-A53\n\n"
			      "[regs]\nPC(size:64)=0x%llx\n\n[dump1]\nfile=mem.bin\n"
			      "address=0x%llx\nlength=0x%zx\n",
			      src[i].cpu, (unsigned long long)base, (unsigned long long)base, clen);
		else
			wtext(dir, name, "[device]\nname=cpu_%d\nclass=core\ntype=Cortex-A53\n",
			      src[i].cpu);
		snprintf(name, sizeof(name), "ETM_%d.ini", src[i].cpu);
		wtext(dir, name,
		      "[device]\nname=ETM_%d\nclass=trace_source\ntype=%s\n\n[regs]\n"
		      "TRCCONFIGR=0x00000001\nTRCTRACEIDR=0x%08x\nTRCIDR0=0x28000EA1\n"
		      "TRCIDR1=0x4100F403\nTRCIDR2=0x00000488\nTRCIDR8=0x00000000\n"
		      "TRCAUTHSTATUS=0x000000CC\n%s",
		      src[i].cpu, src[i].type, src[i].id,
		      strcmp(src[i].type, "ETE") ? "" : "TRCDEVARCH=0x47705A13\n");
		l = strlen(assoc);
		snprintf(assoc + l, sizeof(assoc) - l, "ETM_%d=ETB_0\n", src[i].cpu);
		l = strlen(cores);
		snprintf(cores + l, sizeof(cores) - l, "cpu_%d=ETM_%d\n", src[i].cpu, src[i].cpu);
	}
	wtext(dir, "snapshot.ini",
	      "[snapshot]\nversion=1.0\ndescription=unit test\n\n[device_list]\n%s\n"
	      "[trace]\nmetadata=trace.ini\n", list);
	wtext(dir, "trace.ini",
	      "[trace_buffers]\nbuffers=buffer0\n\n[buffer0]\nname=ETB_0\nfile=trace.bin\n"
	      "format=%s\n\n[source_buffers]\n%s\n[core_trace_sources]\n%s",
	      fmt, assoc, cores);
	wfile(dir, "trace.bin", trace, tlen);
	wfile(dir, "mem.bin", code, clen);
}


/* Debugging aid: with CS_KEEP=<dir> set, test snapshots are copied there. */
static void keep_dir(const char *dir)
{
	const char *to = getenv("CS_KEEP");
	char cmd[1500];

	if (!to)
		return;
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cp -r '%s' '%s'/", to, dir, to);
	if (system(cmd))
		printf("# cannot copy %s to %s\n", dir, to);
}

static struct prec_session *load(const char *dir)
{
	struct prec_session *s = prec_session_new();
	struct prec_diag d;
	int err;

	memset(&d, 0, sizeof(d));
	err = prec_snapshot_load(s, dir, NULL, &d);
	if (!t_check(err == 0, __FILE__, __LINE__, "snapshot load: %d %s", err, d.msg)) {
		prec_session_free(s);
		return NULL;
	}
	return s;
}

static void unload(struct prec_session *s)
{
	prec_session_free(s);
}

struct evs {
	struct prec_tev *e;
	size_t n;
};

/* All events of stream @i (blocks included unless @no_blocks). */
static int decode(struct prec_session *s, size_t i, bool no_blocks, struct evs *out)
{
	struct prec_decoder_opts o = { .no_blocks = no_blocks };
	struct prec_decoder *d;
	struct prec_tev ev;
	int err;

	memset(out, 0, sizeof(*out));
	err = prec_decoder_open(&prec_coresight_decoder, s, prec_session_stream(s, i), &o, &d);
	if (err)
		return err;
	while ((err = prec_decoder_next(d, &ev)) > 0) {
		if (!(out->n & (out->n + 1))) {
			out->e = realloc(out->e, (2 * out->n + 1) * sizeof(ev));
			if (!out->e)
				abort();
		}
		out->e[out->n++] = ev;
	}
	prec_decoder_free(d);
	return err;
}

static size_t count(const struct evs *v, enum prec_tev_type t)
{
	size_t i, n = 0;

	for (i = 0; i < v->n; i++)
		n += v->e[i].type == t;
	return n;
}

static const struct prec_tev *nth(const struct evs *v, enum prec_tev_type t, size_t k)
{
	size_t i;

	for (i = 0; i < v->n; i++)
		if (v->e[i].type == t && k-- == 0)
			return &v->e[i];
	return NULL;
}

/* ---- a hand-written program: calls, returns, a loop ---- */

#define BASE 0x400000ull

/*
 *   400000 mov x0,#0 ; 400004 bl 400014 ; 400008 cmp x0,#2 ; 40000c b.ne 400004
 *   400010 b .       ; 400014 add x0,x0,#1 ; 400018 ret
 */
static const uint32_t prog1[] = { 0xd2800000, 0x94000004, 0xf100081f, 0x54ffffc1,
				  0x14000000, 0x91000400, 0xd65f03c0 };

static void prog1_trace(struct pk *p)
{
	put_start(p, BASE);
	put_atom(p, true);                 /* bl */
	put_atom(p, true);                 /* ret */
	put_addr(p, BASE + 8);
	put_atom(p, true);                 /* b.ne taken */
	put_atom(p, true);                 /* bl */
	put_atom(p, true);                 /* ret */
	put_addr(p, BASE + 8);
	put_atom(p, false);                /* b.ne not taken */
	put_atom(p, true);                 /* b . */
}

static void check_prog1(const struct evs *v, int cpu)
{
	static const struct {
		uint64_t ip, end;
		unsigned n;
	} blocks[] = {
		{ 0x400000, 0x400004, 2 }, { 0x400014, 0x400018, 2 }, { 0x400008, 0x40000c, 2 },
		{ 0x400004, 0x400004, 1 }, { 0x400014, 0x400018, 2 }, { 0x400008, 0x40000c, 2 },
		{ 0x400010, 0x400010, 1 },
	};
	static const struct {
		uint64_t from, to;
		enum prec_br_kind k;
	} br[] = {
		{ 0x400004, 0x400014, PREC_BR_CALL }, { 0x400018, 0x400008, PREC_BR_RETURN },
		{ 0x40000c, 0x400004, PREC_BR_COND }, { 0x400004, 0x400014, PREC_BR_CALL },
		{ 0x400018, 0x400008, PREC_BR_RETURN },
	};
	size_t i;

	T_EQ_INT(count(v, PREC_TEV_BLOCK), PREC_ARRAY_SIZE(blocks));
	T_EQ_INT(count(v, PREC_TEV_BRANCH), PREC_ARRAY_SIZE(br));
	T_EQ_INT(count(v, PREC_TEV_ERROR), 0);
	T_EQ_INT(count(v, PREC_TEV_TRACE_BEGIN), 1);
	T_OK(v->n && v->e[0].type == PREC_TEV_TRACE_BEGIN && v->e[0].u.trace.ip == BASE);
	for (i = 0; i < PREC_ARRAY_SIZE(blocks); i++) {
		const struct prec_tev *e = nth(v, PREC_TEV_BLOCK, i);

		if (!T_OK(e))
			return;
		T_EQ_U64(e->u.block.ip, blocks[i].ip);
		T_EQ_U64(e->u.block.end_ip, blocks[i].end);
		T_EQ_INT(e->u.block.ninsn, blocks[i].n);
		T_EQ_INT(e->u.block.mode, 64);
		T_EQ_INT(e->cpu, cpu);
	}
	for (i = 0; i < PREC_ARRAY_SIZE(br); i++) {
		const struct prec_tev *e = nth(v, PREC_TEV_BRANCH, i);

		if (!T_OK(e))
			return;
		T_EQ_U64(e->u.branch.from, br[i].from);
		T_EQ_U64(e->u.branch.to, br[i].to);
		T_EQ_INT(e->u.branch.kind, br[i].k);
		T_EQ_INT(e->u.branch.insn_len, 4);
	}
	/* The return's target came from an address packet: indirect. */
	T_OK(nth(v, PREC_TEV_BRANCH, 1)->u.branch.flags & PREC_BRF_INDIRECT);
	T_OK(!(nth(v, PREC_TEV_BRANCH, 0)->u.branch.flags & PREC_BRF_INDIRECT));
}

static void raw_etmv4_prog1(void)
{
	char dir[512];
	struct ssrc src = { 0, "ETM4", 0x10 };
	struct pk p = { 0 };
	struct prec_session *s;
	struct evs v;

	prog1_trace(&p);
	snprintf(dir, sizeof(dir), "%s/ss", t_tmpdir());
	write_snapshot(dir, "source_data", &src, 1, p.b, p.n, prog1, sizeof(prog1), BASE);
	s = load(dir);
	if (!s)
		return;
	T_EQ_INT(prec_session_nr_streams(s), 1);
	T_OK(prec_decoder_for_session(s) == &prec_coresight_decoder);
	T_EQ_INT(decode(s, 0, false, &v), 0);
	check_prog1(&v, 0);
	/* The events carry the snapshot's thread of the core. */
	T_EQ_INT(v.e[1].tid, 1);
	T_EQ_INT(v.e[1].pid, 1);
	/* Blocks are left out on request; branches stay. */
	free(v.e);
	T_EQ_INT(decode(s, 0, true, &v), 0);
	T_EQ_INT(count(&v, PREC_TEV_BLOCK), 0);
	T_EQ_INT(count(&v, PREC_TEV_BRANCH), 5);
	free(v.e);
	free(p.b);
	unload(s);
}

static void raw_ete_prog1(void)
{
	char dir[512];
	struct ssrc src = { 3, "ETE", 0x22 };
	struct pk p = { 0 };
	struct prec_session *s;
	const struct prec_cs_meta *m;
	struct evs v;

	prog1_trace(&p);
	snprintf(dir, sizeof(dir), "%s/ss", t_tmpdir());
	write_snapshot(dir, "source_data", &src, 1, p.b, p.n, prog1, sizeof(prog1), BASE);
	s = load(dir);
	if (!s)
		return;
	m = prec_cs_session_meta(s);
	T_OK(m && m->n == 1 && m->src[0].proto == PREC_CS_ETE && m->src[0].cpu == 3 &&
	     m->src[0].trace_id == 0x22 && m->src[0].devarch == 0x47705a13 &&
	     m->src[0].format == PREC_CS_FMT_RAW);
	T_EQ_INT(decode(s, 0, false, &v), 0);
	check_prog1(&v, 3);
	free(v.e);
	free(p.b);
	unload(s);
}

/* Two trace units share one formatted buffer, their bytes interleaved. */
static void framed_two_ids(void)
{
	char dir[512];
	struct ssrc src[2] = { { 0, "ETM4", 0x10 }, { 1, "ETM4", 0x12 } };
	struct pk a = { 0 }, b = { 0 }, f = { 0 };
	struct run runs[6];
	struct prec_session *s;
	struct evs v;
	size_t i, ha, hb;

	prog1_trace(&a);
	prog1_trace(&b);
	ha = a.n / 3;
	hb = b.n / 2;
	runs[0] = (struct run){ 0x10, a.b, ha };
	runs[1] = (struct run){ 0x12, b.b, hb };
	runs[2] = (struct run){ 0x10, a.b + ha, 1 };
	runs[3] = (struct run){ 0x12, b.b + hb, 3 };
	runs[4] = (struct run){ 0x10, a.b + ha + 1, a.n - ha - 1 };
	runs[5] = (struct run){ 0x12, b.b + hb + 3, b.n - hb - 3 };
	frame(&f, runs, 6);
	T_EQ_INT(f.n % 16, 0);
	snprintf(dir, sizeof(dir), "%s/ss", t_tmpdir());
	write_snapshot(dir, "coresight", src, 2, f.b, f.n, prog1, sizeof(prog1), BASE);
	s = load(dir);
	if (!s)
		return;
	T_EQ_INT(prec_session_nr_streams(s), 2);
	for (i = 0; i < prec_session_nr_streams(s); i++) {
		const struct prec_stream *st = prec_session_stream(s, i);

		T_EQ_INT(st->len, f.n);
		T_EQ_INT(decode(s, i, false, &v), 0);
		check_prog1(&v, st->cpu);
		free(v.e);
	}
	free(a.b);
	free(b.b);
	free(f.b);
	unload(s);
}

/* The same frames behind a frame sync, as a DSTREAM capture has them. */
static void fsync_frames(void)
{
	char dir[512];
	struct ssrc src = { 0, "ETM4", 0x10 };
	struct pk a = { 0 }, f = { 0 };
	struct run r;
	struct prec_session *s;
	struct evs v;

	prog1_trace(&a);
	put(&f, 0xff);
	put(&f, 0xff);
	put(&f, 0xff);
	put(&f, 0x7f);
	r = (struct run){ 0x10, a.b, a.n };
	frame(&f, &r, 1);
	snprintf(dir, sizeof(dir), "%s/ss", t_tmpdir());
	write_snapshot(dir, "dstream_coresight", &src, 1, f.b, f.n, prog1, sizeof(prog1), BASE);
	s = load(dir);
	if (!s)
		return;
	T_EQ_INT(prec_cs_session_meta(s)->src[0].format, PREC_CS_FMT_FSYNC);
	T_EQ_INT(decode(s, 0, false, &v), 0);
	check_prog1(&v, 0);
	free(v.e);
	free(a.b);
	free(f.b);
	unload(s);
}

/* SVC into a handler at EL1 and ERET back. */
static void exception_and_eret(void)
{
	char dir[512];
	struct ssrc src = { 0, "ETM4", 0x10 };
	uint32_t code[0x108] = { 0 };
	struct pk p = { 0 };
	struct prec_session *s;
	const struct prec_tev *e;
	struct evs v;

	code[0] = 0xd2800000;
	code[1] = A64_SVC;
	code[2] = A64_ADD;
	code[3] = a64_b(BASE + 12, BASE + 12, false);
	code[0x100] = A64_NOP;
	code[0x101] = A64_ERET;
	put_start(&p, BASE);
	put(&p, 0x06);                    /* exception: type 2 (call), E1:E0 = 0 */
	put(&p, 2 << 1);
	put_addr(&p, BASE + 8);           /* preferred return address */
	put_addr_ctx(&p, BASE + 0x400, 1); /* the vector, at EL1 */
	put_atom(&p, true);               /* eret */
	put_addr_ctx(&p, BASE + 8, 0);
	put_atom(&p, true);               /* b . */
	snprintf(dir, sizeof(dir), "%s/ss", t_tmpdir());
	write_snapshot(dir, "source_data", &src, 1, p.b, p.n, code, sizeof(code), BASE);
	s = load(dir);
	if (!s)
		return;
	T_EQ_INT(decode(s, 0, false, &v), 0);
	T_EQ_INT(count(&v, PREC_TEV_ERROR), 0);
	T_EQ_INT(count(&v, PREC_TEV_BRANCH), 2);
	e = nth(&v, PREC_TEV_BRANCH, 0);
	if (T_OK(e)) {
		T_EQ_INT(e->u.branch.kind, PREC_BR_SYSCALL);
		T_EQ_U64(e->u.branch.from, BASE + 4); /* the SVC */
		T_EQ_U64(e->u.branch.to, BASE + 0x400);
		T_EQ_INT(e->u.branch.insn_len, 4);
	}
	e = nth(&v, PREC_TEV_BRANCH, 1);
	if (T_OK(e)) {
		T_EQ_INT(e->u.branch.kind, PREC_BR_SYSRET);
		T_EQ_U64(e->u.branch.from, BASE + 0x404);
		T_EQ_U64(e->u.branch.to, BASE + 8);
	}
	e = nth(&v, PREC_TEV_BLOCK, 0);
	T_OK(e && e->u.block.ip == BASE && e->u.block.end_ip == BASE + 4 && e->u.block.ninsn == 2);
	{
		/* the exception and its return in the call trace */
		struct prec_output_opts o;
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		prec_output_opts_init(&o);
		o.fmt = PREC_FMT_CALL_RET_TRACE;
		o.decoder = prec_decoder_for_session(s);
		T_EQ_INT(prec_output_run(s, &o, f), 0);
		fclose(f);
		T_CONTAINS(buf, " syscall ");
		T_CONTAINS(buf, " sysret ");
		T_OK(buf && strstr(buf, " syscall ") < strstr(buf, " sysret "));
		free(buf);
	}
	free(v.e);
	free(p.b);
	unload(s);
}

/* An asynchronous exception (IRQ) is an interrupt branch from where it hit. */
static void exception_irq(void)
{
	char dir[512];
	struct ssrc src = { 0, "ETM4", 0x10 };
	uint32_t code[0x108] = { 0 };
	struct pk p = { 0 };
	struct prec_session *s;
	const struct prec_tev *e;
	struct evs v;
	int i;

	for (i = 0; i < 4; i++)
		code[i] = A64_ADD;
	code[4] = a64_b(BASE + 16, BASE, false);
	code[0x100] = A64_ERET;
	put_start(&p, BASE);
	put(&p, 0x06);
	put(&p, 0xe << 1);                /* IRQ */
	put_addr(&p, BASE + 8);           /* interrupted before the third add */
	put_addr_ctx(&p, BASE + 0x400, 1);
	put_atom(&p, true);               /* eret */
	put_addr_ctx(&p, BASE + 8, 0);
	put_atom(&p, true);               /* b 400000 */
	snprintf(dir, sizeof(dir), "%s/ss", t_tmpdir());
	write_snapshot(dir, "source_data", &src, 1, p.b, p.n, code, sizeof(code), BASE);
	s = load(dir);
	if (!s)
		return;
	T_EQ_INT(decode(s, 0, false, &v), 0);
	e = nth(&v, PREC_TEV_BRANCH, 0);
	if (T_OK(e)) {
		T_EQ_INT(e->u.branch.kind, PREC_BR_INTERRUPT);
		T_EQ_U64(e->u.branch.from, BASE + 8);
		T_EQ_U64(e->u.branch.to, BASE + 0x400);
	}
	e = nth(&v, PREC_TEV_BLOCK, 0);
	T_OK(e && e->u.block.ip == BASE && e->u.block.end_ip == BASE + 4);
	e = nth(&v, PREC_TEV_BRANCH, 1);
	T_OK(e && e->u.branch.kind == PREC_BR_SYSRET && e->u.branch.to == BASE + 8);
	free(v.e);
	free(p.b);
	unload(s);
}

/* A range at an address no dump covers is an error naming it. */
static void no_code_image(void)
{
	char dir[512];
	struct ssrc src = { 0, "ETM4", 0x10 };
	struct pk p = { 0 };
	struct prec_session *s;
	const struct prec_tev *e;
	struct evs v;

	put_start(&p, 0x900000);
	put_atom(&p, true);
	put_start(&p, BASE);              /* then good trace again */
	put_atom(&p, true);
	snprintf(dir, sizeof(dir), "%s/ss", t_tmpdir());
	write_snapshot(dir, "source_data", &src, 1, p.b, p.n, prog1, sizeof(prog1), BASE);
	s = load(dir);
	if (!s)
		return;
	T_EQ_INT(decode(s, 0, false, &v), 0);
	e = nth(&v, PREC_TEV_ERROR, 0);
	if (T_OK(e)) {
		T_EQ_INT(e->u.err.code, PREC_DE_NOMAP);
		T_EQ_U64(e->u.err.ip, 0x900000);
		T_CONTAINS(e->u.err.msg, "0x900000");
	}
	e = nth(&v, PREC_TEV_BLOCK, 0);
	T_OK(e && e->u.block.ip == BASE && e->u.block.ninsn == 2);
	free(v.e);
	free(p.b);
	unload(s);
}

/* Bytes with no A-sync at all: one error, nothing decoded. */
static void no_sync(void)
{
	char dir[512];
	struct ssrc src = { 0, "ETM4", 0x10 };
	uint8_t junk[300];
	struct prec_session *s;
	const struct prec_tev *e;
	struct evs v;
	size_t i;

	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(0xf6 + (i % 2));
	snprintf(dir, sizeof(dir), "%s/ss", t_tmpdir());
	write_snapshot(dir, "source_data", &src, 1, junk, sizeof(junk), prog1, sizeof(prog1),
		       BASE);
	s = load(dir);
	if (!s)
		return;
	T_EQ_INT(decode(s, 0, false, &v), 0);
	T_EQ_INT(count(&v, PREC_TEV_BLOCK), 0);
	T_EQ_INT(count(&v, PREC_TEV_ERROR), 1);
	e = nth(&v, PREC_TEV_ERROR, 0);
	if (T_OK(e)) {
		T_EQ_INT(e->u.err.code, PREC_DE_NOSYNC);
		T_CONTAINS(e->u.err.msg, "300 bytes");
	}
	free(v.e);
	unload(s);
}

/* ---- random programs with ground truth ---- */

struct rng {
	uint64_t s;
};

static uint32_t rnd(struct rng *r, uint32_t n)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return (uint32_t)((r->s >> 11) % n);
}

#define NBLK 48

enum bt { BT_COND, BT_CBZ, BT_B, BT_BL, BT_RET, BT_BR, BT_BLR };

struct prog {
	uint32_t code[NBLK * 8];
	size_t ninsn;
	uint64_t start[NBLK], brpc[NBLK], target[NBLK];
	enum bt type[NBLK];
};

struct truth {
	uint64_t st[4096], en[4096];  /* ranges [st, en) */
	unsigned n[4096];
	size_t atom_off[4096];        /* trace offset of the atom that ends it */
	size_t nr;
	uint64_t bfrom[4096], bto[4096];
	enum prec_br_kind bk[4096];
	size_t nb;
};

static void make_prog(struct rng *r, struct prog *p)
{
	size_t b, pc = 0;

	for (b = 0; b < NBLK; b++) {
		unsigned len = 1 + rnd(r, 6), i;

		p->start[b] = BASE + 4 * pc;
		for (i = 0; i + 1 < len; i++)
			p->code[pc++] = rnd(r, 2) ? A64_NOP : A64_ADD;
		p->brpc[b] = BASE + 4 * pc;
		p->type[b] = (enum bt)rnd(r, 7);
		if (b == NBLK - 1 && (p->type[b] == BT_COND || p->type[b] == BT_CBZ))
			p->type[b] = BT_B;
		pc++;
	}
	p->ninsn = pc;
	for (b = 0; b < NBLK; b++) {
		uint64_t at = p->brpc[b], to = p->start[rnd(r, NBLK)];
		uint32_t *w = &p->code[(at - BASE) / 4];

		p->target[b] = to;
		switch (p->type[b]) {
		case BT_COND:
			*w = a64_bne(at, to);
			break;
		case BT_CBZ:
			*w = a64_cbz(at, to);
			break;
		case BT_B:
			*w = a64_b(at, to, false);
			break;
		case BT_BL:
			*w = a64_b(at, to, true);
			break;
		case BT_RET:
			*w = A64_RET;
			break;
		case BT_BR:
			*w = A64_BR;
			break;
		case BT_BLR:
			*w = A64_BLR;
			break;
		}
	}
}

static size_t block_at(const struct prog *p, uint64_t a)
{
	size_t b;

	for (b = 0; b < NBLK; b++)
		if (p->start[b] == a)
			return b;
	abort();
}

/*
 * Runs @nwp waypoints from block 0, writing the trace (a fresh A-sync every
 * @sync_every waypoints) and recording the truth.
 */
static void run_prog(struct rng *r, const struct prog *p, size_t nwp, size_t sync_every,
		     struct pk *out, struct truth *t)
{
	static const enum prec_br_kind kinds[] = {
		[BT_COND] = PREC_BR_COND, [BT_CBZ] = PREC_BR_COND, [BT_B] = PREC_BR_JUMP,
		[BT_BL] = PREC_BR_CALL,   [BT_RET] = PREC_BR_RETURN, [BT_BR] = PREC_BR_INDIRECT,
		[BT_BLR] = PREC_BR_CALL,
	};
	uint64_t pc = p->start[0];
	size_t w;

	memset(t, 0, sizeof(*t));
	put_start(out, pc);
	for (w = 0; w < nwp && t->nr < 4096; w++) {
		size_t b = block_at(p, pc);
		bool taken = true, indirect = false;
		uint64_t next;

		if (w && sync_every && w % sync_every == 0)
			put_sync(out, pc);
		switch (p->type[b]) {
		case BT_COND:
		case BT_CBZ:
			taken = rnd(r, 2);
			next = taken ? p->target[b] : p->brpc[b] + 4;
			break;
		case BT_RET:
		case BT_BR:
		case BT_BLR:
			indirect = true;
			next = p->start[rnd(r, NBLK)];
			break;
		default:
			next = p->target[b];
		}
		t->st[t->nr] = pc;
		t->en[t->nr] = p->brpc[b] + 4;
		t->n[t->nr] = (unsigned)((p->brpc[b] + 4 - pc) / 4);
		t->atom_off[t->nr] = out->n;
		t->nr++;
		put_atom(out, taken);
		if (indirect)
			put_addr(out, next);
		if (taken) {
			t->bfrom[t->nb] = p->brpc[b];
			t->bto[t->nb] = next;
			t->bk[t->nb] = kinds[p->type[b]];
			t->nb++;
		}
		pc = next;
	}
}

static void random_programs(void)
{
	static const char *const types[] = { "ETM4", "ETE" };
	unsigned seed;

	for (seed = 1; seed <= 12; seed++) {
		struct rng r = { 0x9e3779b97f4a7c15ull * seed };
		struct ssrc src = { (int)seed % 4, types[seed % 2], (uint8_t)(0x10 + seed) };
		struct prog *p = calloc(1, sizeof(*p));
		struct truth *t = calloc(1, sizeof(*t));
		struct pk pk = { 0 }, f = { 0 };
		struct run run;
		char dir[512], name[64];
		struct prec_session *s;
		struct evs v = { 0 };
		bool framed = seed % 3 == 0;
		size_t i, nb = 0, nbr = 0;

		make_prog(&r, p);
		run_prog(&r, p, 400, seed % 2 ? 37 : 0, &pk, t);
		if (framed) {
			run = (struct run){ src.id, pk.b, pk.n };
			frame(&f, &run, 1);
		}
		snprintf(dir, sizeof(dir), "%s/r%u", t_tmpdir(), seed);
		write_snapshot(dir, framed ? "coresight" : "source_data", &src, 1,
			       framed ? f.b : pk.b, framed ? f.n : pk.n, p->code,
			       p->ninsn * 4, BASE);
		s = load(dir);
		if (s && T_OK(decode(s, 0, false, &v) == 0)) {
			T_EQ_INT(count(&v, PREC_TEV_ERROR), 0);
			for (i = 0; i < v.n; i++) {
				const struct prec_tev *e = &v.e[i];

				if (e->type == PREC_TEV_BLOCK && nb < t->nr) {
					T_EQ_U64(e->u.block.ip, t->st[nb]);
					T_EQ_U64(e->u.block.end_ip + 4, t->en[nb]);
					T_EQ_INT(e->u.block.ninsn, t->n[nb]);
					if (!framed)
						T_EQ_U64(e->offset, t->atom_off[nb]);
					nb++;
				} else if (e->type == PREC_TEV_BRANCH && nbr < t->nb) {
					T_EQ_U64(e->u.branch.from, t->bfrom[nbr]);
					T_EQ_U64(e->u.branch.to, t->bto[nbr]);
					T_EQ_INT(e->u.branch.kind, t->bk[nbr]);
					nbr++;
				}
			}
			T_EQ_INT(nb, t->nr);
			/* The last branch has no traced target: it stays pending. */
			T_OK(nbr == t->nb || nbr + 1 == t->nb);
			T_OK(nbr + 1 >= t->nb);
		}
		snprintf(name, sizeof(name), "seed %u %s %s", seed, src.type,
			 framed ? "framed" : "raw");
		t_row(name, !t_row_failed());
		free(v.e);
		if (s)
			unload(s);
		free(pk.b);
		free(f.b);
		free(p);
		free(t);
	}
}

/*
 * Damage: a reserved packet header in the middle. The error carries its
 * offset; ranges before it and after the next A-sync are all there.
 */
static void damage_resync(void)
{
	unsigned seed;

	for (seed = 1; seed <= 6; seed++) {
		struct rng r = { 0x2545f4914f6cdd1dull * seed };
		struct ssrc src = { 0, seed % 2 ? "ETM4" : "ETE", 0x10 };
		struct prog *p = calloc(1, sizeof(*p));
		struct truth *t = calloc(1, sizeof(*t));
		struct pk pk = { 0 };
		char dir[512], name[64];
		struct prec_session *s;
		struct evs v = { 0 };
		size_t i, bad, resync = 0, nb = 0, expect = 0, k;
		const struct prec_tev *err = NULL;

		make_prog(&r, p);
		run_prog(&r, p, 300, 40, &pk, t);
		/* break the atom of waypoint ~100 and the two bytes after it */
		bad = t->atom_off[100 + seed];
		for (k = 0; k < 3; k++)
			pk.b[bad + k] = 0x08;
		for (i = bad; i + 12 <= pk.n; i++) {
			if (!memcmp(pk.b + i, "\0\0\0\0\0\0\0\0\0\0\0\x80", 12)) {
				resync = i;
				break;
			}
		}
		snprintf(dir, sizeof(dir), "%s/d%u", t_tmpdir(), seed);
		write_snapshot(dir, "source_data", &src, 1, pk.b, pk.n, p->code, p->ninsn * 4,
			       BASE);
		s = load(dir);
		if (s && T_OK(decode(s, 0, false, &v) == 0)) {
			T_OK(resync > bad);
			for (i = 0; i < v.n; i++)
				if (v.e[i].type == PREC_TEV_ERROR && !err)
					err = &v.e[i];
			if (T_OK(err)) {
				T_EQ_U64(err->offset, bad);
				T_EQ_INT(err->u.err.code, PREC_DE_BADPKT);
			}
			for (i = 0; i < t->nr; i++)
				expect += t->atom_off[i] < bad || t->atom_off[i] > resync;
			k = 0;
			for (i = 0; i < v.n; i++) {
				const struct prec_tev *e = &v.e[i];

				if (e->type != PREC_TEV_BLOCK)
					continue;
				nb++;
				while (k < t->nr && t->atom_off[k] >= bad && t->atom_off[k] <= resync)
					k++;
				if (k < t->nr) {
					T_EQ_U64(e->u.block.ip, t->st[k]);
					T_EQ_U64(e->offset, t->atom_off[k]);
					k++;
				}
			}
			T_EQ_INT(nb, expect);
		}
		snprintf(name, sizeof(name), "damage seed %u %s", seed, src.type);
		t_row(name, !t_row_failed());
		free(v.e);
		if (s)
			unload(s);
		free(pk.b);
		free(p);
		free(t);
	}
}


/* Random damage of every kind: the decoder ends, reports, never crashes. */
static void fuzz_damage(void)
{
	static const char *const fmts[] = { "source_data", "coresight", "dstream_coresight" };
	size_t errors = 0, fatal = 0, i;
	unsigned it;

	for (it = 0; it < 90; it++) {
		struct rng r = { 0xa0761d6478bd642full * (it + 1) };
		struct ssrc src = { 0, it % 2 ? "ETE" : "ETM4", 0x10 };
		struct prog *p = calloc(1, sizeof(*p));
		struct truth *t = calloc(1, sizeof(*t));
		struct pk pk = { 0 }, f = { 0 }, *use = &pk;
		const char *fmt = fmts[it % 3];
		struct prec_session *s;
		struct evs v = { 0 };
		struct run run;
		char dir[512];
		unsigned k, nbad;

		make_prog(&r, p);
		run_prog(&r, p, 200, 30, &pk, t);
		if (strcmp(fmt, "source_data")) {
			if (!strcmp(fmt, "dstream_coresight"))
				for (k = 0; k < 4; k++)
					put(&f, k == 3 ? 0x7f : 0xff);
			run = (struct run){ 0x10, pk.b, pk.n };
			frame(&f, &run, 1);
			use = &f;
		}
		nbad = 1 + rnd(&r, 40);
		for (k = 0; k < nbad; k++)
			use->b[rnd(&r, (uint32_t)use->n)] = (uint8_t)rnd(&r, 256);
		if (it % 5 == 4)
			use->n -= rnd(&r, (uint32_t)use->n / 2); /* cut short anywhere */
		snprintf(dir, sizeof(dir), "%s/f%u", t_tmpdir(), it);
		write_snapshot(dir, fmt, &src, 1, use->b, use->n, p->code, p->ninsn * 4, BASE);
		keep_dir(dir);
		s = load(dir);
		if (s) {
			T_EQ_INT(decode(s, 0, false, &v), 0);
			/* bounded: no more events than a few per trace byte */
			T_OK(v.n <= 4 * use->n + 16);
			for (i = 0; i < v.n; i++) {
				if (v.e[i].type != PREC_TEV_ERROR)
					continue;
				errors++;
				fatal += !!strstr(v.e[i].u.err.msg, "undecodable");
				T_OK(v.e[i].u.err.msg[0] != 0);
				T_OK(v.e[i].offset <= use->n);
			}
			free(v.e);
			unload(s);
		}
		free(pk.b);
		free(f.b);
		free(p);
		free(t);
	}
	printf("# %zu errors reported, %zu of them fatal to the data path\n", errors, fatal);
	T_OK(errors > 90);
}


/* Address with context carrying a 32-bit context ID (TRCCONFIGR.CID set). */
static void put_addr_ctxid(struct pk *p, uint64_t a, uint32_t ctxid)
{
	int i;

	put_a64(p, 0x85, a);
	put(p, 0x30 | 0x80);
	for (i = 0; i < 4; i++)
		put(p, (ctxid >> (8 * i)) & 0xff);
}

static int add_rec(struct prec_session *s, uint32_t type, uint32_t pid, const void *body,
		   size_t blen, const char *str)
{
	uint8_t buf[256] = { 0 };
	struct perf_event_header *h = (struct perf_event_header *)buf;
	size_t n = sizeof(*h) + 8 + blen + strlen(str) + 1;

	n = (n + 7) & ~(size_t)7;
	h->type = type;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = (uint16_t)n;
	memcpy(buf + 8, &pid, 4);
	memcpy(buf + 12, &pid, 4);
	memcpy(buf + 16, body, blen);
	strcpy((char *)buf + 16 + blen, str);
	return prec_session_add_sideband(s, buf, n, -1);
}

/*
 * A per-CPU stream moving between two processes whose code differs at the
 * same address: the traced context ID names the thread, and every range is
 * decoded against the code of the process it ran in.
 */
static void context_switch(void)
{
	static const uint32_t prog2[] = { A64_NOP, A64_NOP, A64_NOP, 0x94000002 /* bl +8 */,
					  A64_NOP, A64_RET };
	struct prec_session *s = prec_session_new();
	struct prec_cs_meta *m = prec_cs_meta_new();
	struct prec_cs_source src = {
		.cpu = 1, .proto = PREC_CS_ETMV4, .format = PREC_CS_FMT_RAW, .trace_id = 0x10,
		.configr = 0x41, .idr0 = 0x28000ea1, .idr1 = 0x4100f403, .idr2 = 0x488,
	};
	struct prec_machine mach = { .vendor = "ARM", .per_cpu = true };
	struct prec_image_desc ia = { .path = "a", .bytes = prog1, .size = sizeof(prog1) };
	struct prec_image_desc ib = { .path = "b", .bytes = prog2, .size = sizeof(prog2) };
	uint64_t mma[3] = { BASE, sizeof(prog1), 0 }, mmb[3] = { BASE, sizeof(prog2), 0 };
	static const unsigned want_n[] = { 2, 4, 2, 4 };
	static const int want_tid[] = { 100, 200, 100, 200 };
	struct pk p = { 0 };
	struct evs v;
	size_t i, k = 0, sw = 0;

	prec_session_set_machine(s, &mach);
	T_EQ_INT(prec_session_set_sample_type(s, 0), 0);
	T_EQ_INT(prec_session_add_image(s, &ia), 0);
	T_EQ_INT(prec_session_add_image(s, &ib), 0);
	T_EQ_INT(add_rec(s, PERF_RECORD_COMM, 100, "", 0, "proc-a"), 1);
	T_EQ_INT(add_rec(s, PERF_RECORD_COMM, 200, "", 0, "proc-b"), 1);
	T_EQ_INT(add_rec(s, PERF_RECORD_MMAP, 100, mma, sizeof(mma), "a"), 1);
	T_EQ_INT(add_rec(s, PERF_RECORD_MMAP, 200, mmb, sizeof(mmb), "b"), 1);
	put_async(&p);
	put_tinfo(&p);
	for (i = 0; i < 4; i++) {
		put(&p, 0x04);
		put_addr_ctxid(&p, BASE, want_tid[i]);
		put_atom(&p, true);
	}
	T_EQ_INT(prec_session_add_aux(s, 1, -1, 0, p.b, p.n), 0);
	T_EQ_INT(prec_session_finalize(s), 0);
	T_EQ_INT(prec_cs_meta_add(m, &src), 0);
	T_EQ_INT(prec_cs_session_attach(s, m), 0);
	T_EQ_INT(decode(s, 0, false, &v), 0);
	T_EQ_INT(count(&v, PREC_TEV_ERROR), 0);
	for (i = 0; i < v.n; i++) {
		const struct prec_tev *e = &v.e[i];

		if (e->type == PREC_TEV_SWITCH) {
			sw++;
			continue;
		}
		if (e->type != PREC_TEV_BLOCK || k >= 4)
			continue;
		T_EQ_INT(e->u.block.ninsn, want_n[k]);
		T_EQ_INT(e->tid, want_tid[k]);
		T_EQ_INT(e->pid, want_tid[k]);
		T_EQ_INT(e->cpu, 1);
		k++;
	}
	T_EQ_INT(k, 4);
	T_EQ_INT(sw, 3);
	free(v.e);
	free(p.b);
	unload(s);
}

/* A gap in a stream: reported with its size, decoding goes on behind it. */
static void gap_in_stream(void)
{
	struct prec_session *s = prec_session_new();
	struct prec_cs_meta *m = prec_cs_meta_new();
	struct prec_cs_source src = {
		.cpu = 0, .proto = PREC_CS_ETMV4, .format = PREC_CS_FMT_RAW, .trace_id = 0x10,
		.configr = 1, .idr0 = 0x28000ea1, .idr1 = 0x4100f403, .idr2 = 0x488,
	};
	struct prec_machine mach = { .vendor = "ARM", .per_cpu = true };
	struct prec_image_desc img = { .path = "code", .bytes = prog1, .size = sizeof(prog1) };
	struct pk a = { 0 }, b = { 0 };
	const struct prec_tev *e;
	struct evs v;
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
		uint64_t start, len, pgoff;
		char name[8];
	} mm = { { PERF_RECORD_MMAP, PERF_RECORD_MISC_USER, sizeof(mm) }, 7, 7, BASE,
		 sizeof(prog1), 0, "code" };

	prec_session_set_machine(s, &mach);
	T_EQ_INT(prec_session_set_sample_type(s, 0), 0);
	T_EQ_INT(prec_session_add_image(s, &img), 0);
	T_EQ_INT(prec_session_add_sideband(s, &mm, sizeof(mm), -1), 1);
	prog1_trace(&a);
	prog1_trace(&b);
	T_EQ_INT(prec_session_add_aux(s, 0, 7, 0, a.b, a.n - 3), 0);
	T_EQ_INT(prec_session_add_aux(s, 0, 7, a.n + 100, b.b, b.n), 0);
	T_EQ_INT(prec_session_finalize(s), 0);
	T_EQ_INT(prec_cs_meta_add(m, &src), 0);
	T_EQ_INT(prec_cs_session_attach(s, m), 0);
	T_EQ_INT(decode(s, 0, false, &v), 0);
	T_EQ_INT(count(&v, PREC_TEV_GAP), 1);
	e = nth(&v, PREC_TEV_GAP, 0);
	if (T_OK(e)) {
		T_EQ_INT(e->u.gap.lost, 103);
		T_EQ_U64(e->offset, a.n - 3);
	}
	/* 5 ranges before the cut (the last atoms are gone), all 7 after */
	T_EQ_INT(count(&v, PREC_TEV_BLOCK), 5 + 7);
	T_EQ_INT(count(&v, PREC_TEV_TRACE_BEGIN), 2);
	T_EQ_INT(count(&v, PREC_TEV_ERROR), 0);
	e = nth(&v, PREC_TEV_BLOCK, 5);
	if (T_OK(e)) {
		T_EQ_U64(e->u.block.ip, BASE);
		T_EQ_U64(e->offset, a.n + 100 + 25); /* the first atom behind the gap */
		T_EQ_INT(e->pid, 7);
	}
	free(v.e);
	free(a.b);
	free(b.b);
	unload(s);
}

/* ---- trc_pkt_lister as the peer ---- */

#define LISTER "/usr/bin/trc_pkt_lister"

/* The INSTR_RANGE lines of trc_pkt_lister for @dir, as prec_cs_print_ranges writes them. */
static char *lister_ranges(const char *dir, unsigned id)
{
	char cmd[1024], line[1024];
	size_t len = 0;
	char *out = calloc(1, 1);
	FILE *f;

	snprintf(cmd, sizeof(cmd), "cd %s && %s -ss_dir . -decode -logstdout 2>/dev/null", dir,
		 LISTER);
	f = popen(cmd, "r");
	if (!f)
		return out;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long idx, st, en;
		unsigned lid, n;
		char buf[160];

		if (sscanf(line, "Idx:%llu; ID:%x; OCSD_GEN_TRC_ELEM_INSTR_RANGE(exec range=0x%llx:"
				 "[0x%llx] num_i(%u)", &idx, &lid, &st, &en, &n) != 5 || lid != id)
			continue;
		snprintf(buf, sizeof(buf), "Idx:%llu; ID:%x; exec range=0x%llx:[0x%llx] num_i(%u)\n",
			 idx, lid, st, en, n);
		out = realloc(out, len + strlen(buf) + 1);
		strcpy(out + len, buf);
		len += strlen(buf);
	}
	pclose(f);
	return out;
}

/* Our ranges of trace ID @id (lines "Idx:..; ID:<id>; exec range=..."). */
static char *our_ranges(struct prec_session *s, unsigned id)
{
	char *buf = NULL, *out, *line, *save = NULL, want[16];
	size_t len = 0, olen = 0;
	FILE *f = open_memstream(&buf, &len);

	T_EQ_INT(prec_cs_print_ranges(s, NULL, f), 0);
	fclose(f);
	out = calloc(1, len + 1);
	snprintf(want, sizeof(want), "ID:%x;", id);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strstr(line, want) || !strstr(line, "exec range"))
			continue;
		olen += (size_t)sprintf(out + olen, "%s\n", line);
	}
	free(buf);
	return out;
}

/* Prints the first line where two listings differ. */
static void first_difference(const char *a, const char *b)
{
	const char *la = a, *lb = b;
	size_t line = 1;

	for (; *a && *a == *b; a++, b++) {
		if (*a == '\n') {
			line++;
			la = a + 1;
			lb = b + 1;
		}
	}
	printf("# line %zu: trc_pkt_lister \"%.*s\", ours \"%.*s\"\n", line,
	       (int)strcspn(la, "\n"), la, (int)strcspn(lb, "\n"), lb);
}

static void lister_agrees(void)
{
	unsigned seed;

	if (access(LISTER, X_OK))
		t_skip("trc_pkt_lister (libopencsd-bin) is not installed");
	for (seed = 1; seed <= 8; seed++) {
		struct rng r = { 0xd1b54a32d192ed03ull * seed };
		struct ssrc src[2] = { { 0, "ETM4", 0x10 }, { 1, "ETM4", 0x20 } };
		struct prog *p = calloc(1, sizeof(*p));
		struct truth *t = calloc(1, sizeof(*t));
		struct pk a = { 0 }, b = { 0 }, f = { 0 };
		struct run runs[4];
		char dir[512], name[64];
		struct prec_session *s;
		bool framed = seed % 2 == 0;
		unsigned i;

		if (seed > 4)
			src[0].type = src[1].type = "ETE";
		make_prog(&r, p);
		run_prog(&r, p, 250, 50, &a, t);
		run_prog(&r, p, 250, 0, &b, t);
		if (seed % 4 == 3 || seed == 6) {
			/* a broken stretch: both must report and resync the same way */
			a.b[a.n / 2] = 0x08;
			a.b[a.n / 2 + 1] = 0x08;
		}
		if (framed) {
			runs[0] = (struct run){ 0x10, a.b, a.n / 2 };
			runs[1] = (struct run){ 0x20, b.b, b.n / 3 };
			runs[2] = (struct run){ 0x10, a.b + a.n / 2, a.n - a.n / 2 };
			runs[3] = (struct run){ 0x20, b.b + b.n / 3, b.n - b.n / 3 };
			frame(&f, runs, 4);
			if (seed == 8) {
				/* broken frames: an ID byte and a whole frame */
				f.b[16 * 7] = 0xff;
				memset(f.b + 16 * 20, 0x5a, 16);
			}
		}
		snprintf(dir, sizeof(dir), "%s/l%u", t_tmpdir(), seed);
		write_snapshot(dir, framed ? "coresight" : "source_data", src, framed ? 2 : 1,
			       framed ? f.b : a.b, framed ? f.n : a.n, p->code, p->ninsn * 4,
			       BASE);
		s = load(dir);
		for (i = 0; s && i < (framed ? 2u : 1u); i++) {
			char *theirs = lister_ranges(dir, src[i].id);
			char *ours = our_ranges(s, src[i].id);

			T_OK(strlen(theirs) > 1000);
			if (!T_OK(!strcmp(theirs, ours)))
				first_difference(theirs, ours);
			free(theirs);
			free(ours);
		}
		snprintf(name, sizeof(name), "lister seed %u %s %s%s", seed, src[0].type,
			 framed ? "framed" : "raw",
			 seed % 4 == 3 || seed == 6 ? " damaged" : seed == 8 ? " bad frames" : "");
		t_row(name, !t_row_failed());
		if (s)
			unload(s);
		free(a.b);
		free(b.b);
		free(f.b);
		free(p);
		free(t);
	}
}


/* ---- a compiled aarch64 program, its path from qemu ---- */

static const char prog_src[] =
	"typedef int (*fn)(int);\n"
	"static int __attribute__((noinline)) sq(int x) { return x * x; }\n"
	"static int __attribute__((noinline)) inc(int x) { return x + 1; }\n"
	"static int __attribute__((noinline)) fib(int n)\n"
	"{ return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n"
	"static fn tab[2] = { sq, inc };\n"
	"static long sys(long nr, long a)\n"
	"{\n"
	"	register long x0 __asm__(\"x0\") = a;\n"
	"	register long x8 __asm__(\"x8\") = nr;\n"
	"	__asm__ volatile(\"svc #0\" : \"+r\"(x0) : \"r\"(x8) : \"memory\");\n"
	"	return x0;\n"
	"}\n"
	"void __attribute__((noreturn)) _start(void)\n"
	"{\n"
	"	int acc = 0;\n"
	"	for (int i = 0; i < 40; i++)\n"
	"		acc += tab[i & 1](i);\n"
	"	acc += fib(9);\n"
	"	acc += (int)sys(172, 0) & 1;  /* getpid */\n"
	"	sys(93, acc & 0x7f);          /* exit */\n"
	"	__builtin_unreachable();\n"
	"}\n";

static int sh(const char *fmt, ...) prec_printf(1, 2);

static int sh(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

enum wp { WP_NONE, WP_DIRECT, WP_COND, WP_INDIRECT, WP_SVC };

/* What the ETM makes of an A64 instruction (the encodings of the branch classes). */
static enum wp classify(uint32_t i)
{
	if ((i & 0x7c000000) == 0x14000000)
		return WP_DIRECT;                         /* B, BL */
	if ((i & 0xff000010) == 0x54000000 || (i & 0x7e000000) == 0x34000000 ||
	    (i & 0x7e000000) == 0x36000000)
		return WP_COND;                           /* B.cond, CBZ/CBNZ, TBZ/TBNZ */
	if ((i & 0xff9ffc1f) == 0xd61f0000 || (i & 0xffbffc1f) == 0xd63f0000 ||
	    (i & 0xfffffc1f) == 0xd65f0000 || i == A64_ERET)
		return WP_INDIRECT;                       /* BR, BLR, RET, ERET */
	if ((i & 0xffe0001f) == 0xd4000001)
		return WP_SVC;
	return WP_NONE;
}

static void qemu_ground_truth(void)
{
	const char *tmp = t_tmpdir();
	char dir[512], path[600], line[512];
	struct ssrc src = { 0, "ETM4", 0x10 };
	uint64_t *pcs = NULL, *got = NULL;
	size_t npc = 0, ngot = 0, i, w = 0, calls = 0, rets = 0, svcs = 0;
	size_t ncall = 0, nret = 0, nsys = 0, nbegin = 0;
	uint8_t *elf = NULL;
	long elen;
	struct pk pk = { 0 };
	struct prec_session *s;
	struct evs v = { 0 };
	FILE *f;

	if (sh("command -v aarch64-linux-gnu-gcc >/dev/null && command -v qemu-aarch64 >/dev/null"))
		t_skip("aarch64-linux-gnu-gcc or qemu-aarch64 is not installed");
	snprintf(dir, sizeof(dir), "%s/q", tmp);
	mkdir(dir, 0755);
	wtext(dir, "p.c", "%s", prog_src);
	if (!T_OK(sh("cd %s && aarch64-linux-gnu-gcc -O1 -static -nostdlib -fno-stack-protector "
		     "-fno-pie -no-pie -o p p.c", dir) == 0))
		return;
	/* one instruction per block: the log has every instruction's address */
	sh("cd %s && qemu-aarch64 -singlestep -d exec,nochain -D qemu.log ./p", dir);
	snprintf(path, sizeof(path), "%s/qemu.log", dir);
	f = fopen(path, "r");
	if (!T_OK(f))
		return;
	while (fgets(line, sizeof(line), f)) {
		char *b = strchr(line, '[');
		unsigned long long pc;

		if (strncmp(line, "Trace ", 6) || !b || !(b = strchr(b, '/')) ||
		    sscanf(b + 1, "%llx", &pc) != 1)
			continue;
		pcs = realloc(pcs, (npc + 1) * sizeof(*pcs));
		pcs[npc++] = pc;
	}
	fclose(f);
	T_OK(npc > 300);
	/* the whole file is the dump: its first segment maps offset 0 at 0x400000 */
	snprintf(path, sizeof(path), "%s/p", dir);
	f = fopen(path, "rb");
	if (!T_OK(f))
		return;
	fseek(f, 0, SEEK_END);
	elen = ftell(f);
	rewind(f);
	elf = malloc((size_t)elen);
	T_OK(fread(elf, 1, (size_t)elen, f) == (size_t)elen);
	fclose(f);

	/* the ETM's view of that path, for a trace of EL0 only */
	put_start(&pk, pcs[0]);
	for (i = 0; i < npc; i++) {
		uint64_t pc = pcs[i], next = i + 1 < npc ? pcs[i + 1] : 0;
		uint32_t insn;
		enum wp k;

		if (pc < BASE || pc + 4 > BASE + (uint64_t)elen)
			break;
		memcpy(&insn, elf + (pc - BASE), 4);
		k = classify(insn);
		calls += k != WP_NONE && (insn & 0xfc000000) == 0x94000000;
		calls += (insn & 0xfffffc1f) == 0xd63f0000;
		rets += (insn & 0xfffffc1f) == 0xd65f0000;
		switch (k) {
		case WP_NONE:
			continue;
		case WP_DIRECT:
		case WP_COND:
			put_atom(&pk, k == WP_DIRECT || next != pc + 4);
			break;
		case WP_INDIRECT:
			put_atom(&pk, true);
			put_addr(&pk, next);
			break;
		case WP_SVC:
			/* the kernel is not traced: back in EL0 the trace turns on again */
			svcs++;
			put(&pk, 0x06);
			put(&pk, 2 << 1);
			put_addr(&pk, pc + 4);
			if (next) {
				put(&pk, 0x04);
				put_addr_ctx(&pk, next, 0);
			}
			break;
		}
		if (++w % 64 == 0 && next)
			put_sync(&pk, next);
	}
	T_EQ_INT(svcs, 2);
	write_snapshot(dir, "source_data", &src, 1, pk.b, pk.n, elf, (size_t)elen, BASE);
	keep_dir(dir);
	s = load(dir);
	if (!s)
		goto out;
	T_EQ_INT(decode(s, 0, false, &v), 0);
	T_EQ_INT(count(&v, PREC_TEV_ERROR), 0);
	for (i = 0; i < v.n; i++) {
		const struct prec_tev *e = &v.e[i];
		uint64_t a;

		if (e->type == PREC_TEV_BLOCK) {
			for (a = e->u.block.ip; a <= e->u.block.end_ip; a += 4) {
				got = realloc(got, (ngot + 1) * sizeof(*got));
				got[ngot++] = a;
			}
		} else if (e->type == PREC_TEV_BRANCH) {
			ncall += e->u.branch.kind == PREC_BR_CALL;
			nret += e->u.branch.kind == PREC_BR_RETURN;
			nsys += e->u.branch.kind == PREC_BR_SYSCALL;
		}
		nbegin += e->type == PREC_TEV_TRACE_BEGIN;
	}
	/* the decoded instructions are the executed ones, in order */
	T_EQ_INT(ngot, npc);
	for (i = 0; i < ngot && i < npc; i++)
		if (!T_OK(got[i] == pcs[i])) {
			printf("# first difference at instruction %zu: 0x%llx, qemu ran 0x%llx\n", i,
			       (unsigned long long)got[i], (unsigned long long)pcs[i]);
			break;
		}
	T_EQ_INT(ncall, calls);
	/* the final return has a target; so does every one */
	T_EQ_INT(nret, rets);
	T_EQ_INT(nsys, 2);
	T_EQ_INT(nbegin, 2); /* the start, and back from getpid */
	/* the trace stopped for the system call, not for a pause */
	T_OK(nth(&v, PREC_TEV_TRACE_END, 0) &&
	     nth(&v, PREC_TEV_TRACE_END, 0)->u.trace.reason == PREC_END_SYSCALL);
	T_OK(calls > 40 && rets > 40);
	if (!access(LISTER, X_OK)) {
		char *theirs = lister_ranges(dir, 0x10), *ours = our_ranges(s, 0x10);

		T_OK(strlen(ours) > 1000);
		T_OK(!strcmp(theirs, ours));
		free(theirs);
		free(ours);
	}
	unload(s);
out:
	free(v.e);
	free(got);
	free(pcs);
	free(elf);
	free(pk.b);
}


/* ---- the CoreSight software tracer's snapshots ---- */

struct addrs {
	uint64_t *a;
	size_t n, cap;
};

static void addrs_push(struct addrs *x, uint64_t a)
{
	if (x->n == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 1024;
		x->a = realloc(x->a, x->cap * sizeof(*x->a));
		if (!x->a)
			abort();
	}
	x->a[x->n++] = a;
}

/*
 * A multi-threaded aarch64 program run under the software tracer (another
 * component: its plugin writes ETMv4 and its own ground truth), written as
 * snapshots by its writer, read and decoded here: every thread's decoded
 * instructions are the ones the tracer saw run, and the ranges are
 * trc_pkt_lister's.
 */
static void emulator_snapshots(void)
{
	const char *b = getenv("B") ? getenv("B") : "build";
	char plugin[512], prog[512], truth[600], dir[600], line[256];
	char *argv[2] = { prog, NULL };
	struct prec_etm_config cfg = { 0 };
	struct prec_etm_recording rec;
	struct prec_diag d = { 0 };
	struct addrs *want = NULL;
	size_t i, k, fmt;
	FILE *f;
	int err;

	snprintf(plugin, sizeof(plugin), "%s/ptrec-emu-etm.so", b);
	snprintf(prog, sizeof(prog), "%s/progs-arm64/threads", b);
	if (access(plugin, R_OK) || access(prog, X_OK) ||
	    sh("command -v qemu-aarch64 >/dev/null"))
		t_skip("the CoreSight software tracer or its test programs are not built");
	snprintf(truth, sizeof(truth), "%s/truth", t_tmpdir());
	cfg.plugin = plugin;
	cfg.argv = argv;
	cfg.truth_path = truth;
	memset(&rec, 0, sizeof(rec));
	err = prec_etm_record(&cfg, 0, NULL, &rec, &d);
	if (!t_check(err == 0, __FILE__, __LINE__, "record: %d %s", err, d.msg))
		return;
	T_OK(rec.nstreams >= 2);
	want = calloc(rec.nstreams, sizeof(*want));
	f = fopen(truth, "r");
	if (!T_OK(f))
		goto out;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long st, en;
		unsigned n;
		int tid;

		if (sscanf(line, "B %d %llx %llx %u", &tid, &st, &en, &n) != 4)
			continue;
		for (i = 0; i < rec.nstreams; i++)
			if ((int)rec.streams[i].tid == tid)
				for (; st < en; st += 4)
					addrs_push(&want[i], st);
	}
	fclose(f);
	for (fmt = 0; fmt < 2; fmt++) {
		enum prec_snap_format sf = fmt ? PREC_SNAP_SOURCE_DATA : PREC_SNAP_FORMATTED;
		struct prec_session *s;

		snprintf(dir, sizeof(dir), "%s/emu%zu", t_tmpdir(), fmt);
		T_EQ_INT(prec_snapshot_write_recording(dir, &cfg, &rec, sf, &d), 0);
		keep_dir(dir);
		s = load(dir);
		if (!s)
			continue;
		T_EQ_INT(prec_session_nr_streams(s), rec.nstreams);
		for (i = 0; i < prec_session_nr_streams(s); i++) {
			const struct prec_stream *st = prec_session_stream(s, i);
			const struct prec_cs_source *cs = prec_cs_meta_cpu(prec_cs_session_meta(s),
									   st->cpu);
			struct addrs got = { 0 };
			struct evs v;
			size_t w = SIZE_MAX;

			for (k = 0; cs && k < rec.nstreams; k++)
				if (rec.streams[k].csid == cs->trace_id)
					w = k;
			if (!T_OK(w != SIZE_MAX))
				continue;
			T_EQ_INT(decode(s, i, false, &v), 0);
			T_EQ_INT(count(&v, PREC_TEV_ERROR), 0);
			for (k = 0; k < v.n; k++) {
				uint64_t a;

				if (v.e[k].type != PREC_TEV_BLOCK)
					continue;
				for (a = v.e[k].u.block.ip; a <= v.e[k].u.block.end_ip; a += 4)
					addrs_push(&got, a);
			}
			T_OK(want[w].n > 1000);
			T_EQ_INT(got.n, want[w].n);
			for (k = 0; k < got.n && k < want[w].n; k++)
				if (!T_OK(got.a[k] == want[w].a[k])) {
					printf("# thread %u: instruction %zu is 0x%llx, ran 0x%llx\n",
					       rec.streams[w].tid, k, (unsigned long long)got.a[k],
					       (unsigned long long)want[w].a[k]);
					break;
				}
			if (!access(LISTER, X_OK) && sf == PREC_SNAP_FORMATTED) {
				char *theirs = lister_ranges(dir, cs->trace_id);
				char *ours = our_ranges(s, cs->trace_id);

				T_OK(strlen(ours) > 1000);
				T_OK(!strcmp(theirs, ours));
				free(theirs);
				free(ours);
			}
			free(got.a);
			free(v.e);
		}
		unload(s);
		t_row(fmt ? "software tracer, source_data" : "software tracer, formatted",
		      !t_row_failed());
	}
out:
	for (i = 0; want && i < rec.nstreams; i++)
		free(want[i].a);
	free(want);
	prec_etm_recording_free(&rec);
}

/* ---- metadata ---- */

static size_t put_v1_etmv4(uint64_t *w, int cpu, uint64_t traceidr)
{
	w[CS_ETM_MAGIC] = CS_ETMV4_MAGIC;
	w[CS_ETM_CPU] = (uint64_t)cpu;
	w[CS_ETM_NR_TRC_PARAMS] = CS_ETMV4_PRIV_MAX - CS_ETMV4_TRCCONFIGR;
	w[CS_ETMV4_TRCCONFIGR] = 0x801;
	w[CS_ETMV4_TRCTRACEIDR] = traceidr;
	w[CS_ETMV4_TRCIDR0] = 0x28000ea1;
	w[CS_ETMV4_TRCIDR1] = 0x4100f423;
	w[CS_ETMV4_TRCIDR2] = 0x20001088;
	w[CS_ETMV4_TRCIDR8] = 0;
	w[CS_ETMV4_TRCAUTHSTATUS] = 0xcc;
	w[CS_ETMV4_TS_SOURCE] = 1;
	return CS_ETMV4_PRIV_MAX;
}

static size_t put_v1_ete(uint64_t *w, int cpu, uint64_t traceidr)
{
	w[CS_ETM_MAGIC] = CS_ETE_MAGIC;
	w[CS_ETM_CPU] = (uint64_t)cpu;
	w[CS_ETM_NR_TRC_PARAMS] = CS_ETE_PRIV_MAX - CS_ETE_TRCCONFIGR;
	w[CS_ETE_TRCCONFIGR] = 0x1;
	w[CS_ETE_TRCTRACEIDR] = traceidr;
	w[CS_ETE_TRCIDR0] = 0x28000ea1;
	w[CS_ETE_TRCIDR1] = 0x4100fff3;
	w[CS_ETE_TRCIDR2] = 0x488;
	w[CS_ETE_TRCIDR8] = 0;
	w[CS_ETE_TRCAUTHSTATUS] = 0xcc;
	w[CS_ETE_TRCDEVARCH] = 0x47705a13;
	w[CS_ETE_TS_SOURCE] = 0;
	return CS_ETE_PRIV_MAX;
}

static void auxtrace_v1_etmv4(void)
{
	uint64_t w[64] = { 1, (8ull << 32) | 2, 0 };
	struct prec_cs_meta *m = NULL;
	struct prec_diag d = { 0 };
	size_t n = 3;

	n += put_v1_etmv4(w + n, 0, 0x10);
	n += put_v1_etmv4(w + n, 5, 0x1a);
	T_EQ_INT(prec_cs_meta_from_auxtrace_info(w, n, &m, &d), 0);
	if (!T_OK(m))
		return;
	T_EQ_INT(m->n, 2);
	T_EQ_INT(m->src[0].cpu, 0);
	T_EQ_INT(m->src[0].trace_id, 0x10);
	T_EQ_INT(m->src[0].proto, PREC_CS_ETMV4);
	T_EQ_U64(m->src[0].configr, 0x801);
	T_EQ_U64(m->src[0].idr0, 0x28000ea1);
	T_EQ_U64(m->src[0].idr1, 0x4100f423);
	T_EQ_U64(m->src[0].idr2, 0x20001088);
	T_EQ_U64(m->src[0].authstatus, 0xcc);
	T_EQ_U64(m->src[0].ts_source, 1);
	T_EQ_INT(m->src[0].format, PREC_CS_FMT_FRAMED);
	T_EQ_INT(m->src[1].cpu, 5);
	T_EQ_INT(m->src[1].trace_id, 0x1a);
	T_OK(prec_cs_meta_trace_id(m, 0x1a) == &m->src[1]);
	T_OK(prec_cs_meta_cpu(m, 5) == &m->src[1]);
	T_OK(!prec_cs_meta_cpu(m, 1));
	T_EQ_INT(prec_cs_meta_set_format(m, 5, PREC_CS_FMT_RAW), 0);
	T_EQ_INT(m->src[1].format, PREC_CS_FMT_RAW);
	T_EQ_INT(m->src[0].format, PREC_CS_FMT_FRAMED);
	T_EQ_INT(prec_cs_meta_set_format(m, 9, PREC_CS_FMT_RAW), -ENOENT);
	prec_cs_meta_free(m);
}

static void auxtrace_v2_ete_hw_id(void)
{
	uint64_t w[64] = { 2, (8ull << 32) | 2, 0 };
	struct prec_cs_meta *m = NULL;
	struct prec_diag d = { 0 };
	size_t n = 3;
	uint8_t id = 0;

	n += put_v1_ete(w + n, 0, 0x80000000ull);
	n += put_v1_etmv4(w + n, 1, 0x80000000ull | 0x12);
	T_EQ_INT(prec_cs_meta_from_auxtrace_info(w, n, &m, &d), 0);
	if (!T_OK(m))
		return;
	T_EQ_INT(m->n, 2);
	T_EQ_INT(m->src[0].proto, PREC_CS_ETE);
	T_EQ_U64(m->src[0].devarch, 0x47705a13);
	T_EQ_U64(m->src[0].idr1, 0x4100fff3);
	/* version 2 with the "unused" flag: the ID is not known yet */
	T_EQ_INT(m->src[0].trace_id, 0);
	T_EQ_INT(m->src[1].trace_id, 0);
	/* AUX_OUTPUT_HW_ID: version 0.1 with a sink id, trace ID 0x2c */
	T_EQ_INT(prec_cs_hw_id_trace_id((1ull << 56) | (7ull << 8) | 0x2c, &id), 0);
	T_EQ_INT(id, 0x2c);
	T_EQ_INT(prec_cs_meta_set_trace_id(m, 0, id), 0);
	T_EQ_INT(m->src[0].trace_id, 0x2c);
	T_EQ_INT(prec_cs_hw_id_trace_id(1ull << 60 | 0x10, &id), -PREC_E_VERSION);
	T_EQ_INT(prec_cs_hw_id_trace_id(0x70, &id), -EINVAL);
	T_EQ_INT(prec_cs_hw_id_trace_id(0, &id), -EINVAL);
	T_EQ_INT(prec_cs_meta_apply_hw_id(m, 1, 0x31), 0);
	T_EQ_INT(m->src[1].trace_id, 0x31);
	T_EQ_INT(prec_cs_meta_apply_hw_id(m, 1, 2ull << 60 | 0x32), -PREC_E_VERSION);
	T_EQ_INT(prec_cs_meta_apply_hw_id(m, 3, 0x32), -ENOENT);
	T_EQ_INT(m->src[1].trace_id, 0x31);
	T_EQ_INT(prec_cs_meta_set_trace_id(m, 4, 0x20), -ENOENT);
	T_EQ_INT(prec_cs_meta_set_trace_id(m, 1, 0x7f), -EINVAL);
	prec_cs_meta_free(m);
}

static void auxtrace_v0(void)
{
	/* version 0: MAGIC, CPU, then 7 parameters, no count */
	uint64_t w[] = { 0, (8ull << 32) | 1, 0, CS_ETMV4_MAGIC, 2, 0x1, 0x14, 0x28000ea1,
			 0x4100f403, 0x488, 0, 0xcc };
	struct prec_cs_meta *m = NULL;
	struct prec_diag d = { 0 };

	T_EQ_INT(prec_cs_meta_from_auxtrace_info(w, PREC_ARRAY_SIZE(w), &m, &d), 0);
	if (!T_OK(m))
		return;
	T_EQ_INT(m->n, 1);
	T_EQ_INT(m->src[0].cpu, 2);
	T_EQ_INT(m->src[0].trace_id, 0x14);
	T_EQ_U64(m->src[0].idr2, 0x488);
	T_EQ_U64(m->src[0].authstatus, 0xcc);
	prec_cs_meta_free(m);
}

static void auxtrace_bad(void)
{
	static const struct {
		const char *name;
		int words;            /* how many of the good layout to keep, -1 all */
		int patch_idx;
		uint64_t patch;
		int err;
	} rows[] = {
		{ "too short for the header", 2, -1, 0, -PREC_E_FORMAT },
		{ "version 3", -1, 0, 3, -PREC_E_VERSION },
		{ "no cpus", -1, 1, 8ull << 32, -PREC_E_FORMAT },
		{ "too many cpus", -1, 1, (8ull << 32) | 1000, -PREC_E_FORMAT },
		{ "cut inside a block", 3 + 5, -1, 0, -PREC_E_FORMAT },
		{ "cut in the second block", 3 + 11 + 4, -1, 0, -PREC_E_FORMAT },
		{ "unknown magic", -1, 3, 0x1234, -PREC_E_FORMAT },
		{ "ETMv3 magic", -1, 3, CS_ETMV3_MAGIC, -EOPNOTSUPP },
		{ "huge parameter count", -1, 5, 1ull << 40, -PREC_E_FORMAT },
		{ "too few parameters", -1, 5, 2, -PREC_E_FORMAT },
		{ "cpu out of range", -1, 4, 1ull << 33, -PREC_E_FORMAT },
		{ "same cpu twice", -1, 3 + 11 + 1, 0, -PREC_E_FORMAT },
	};
	size_t i;

	for (i = 0; i < PREC_ARRAY_SIZE(rows); i++) {
		uint64_t w[64] = { 1, (8ull << 32) | 2, 0 };
		struct prec_cs_meta *m = (struct prec_cs_meta *)1;
		struct prec_diag d = { 0 };
		size_t n = 3;
		int err;

		n += put_v1_etmv4(w + n, 0, 0x10);
		n += put_v1_etmv4(w + n, 1, 0x12);
		if (rows[i].words >= 0)
			n = (size_t)rows[i].words;
		if (rows[i].patch_idx >= 0)
			w[rows[i].patch_idx] = rows[i].patch;
		err = prec_cs_meta_from_auxtrace_info(w, n, &m, &d);
		T_EQ_INT(err, rows[i].err);
		T_OK(m == NULL);
		T_OK(d.msg[0] != 0);
		t_row(rows[i].name, !t_row_failed());
	}
}

static void etm_blocks(void)
{
	uint64_t r0[16], r1[16];
	struct prec_tfile_etm b[2] = {
		{ 0, (uint32_t)CS_ETMV4_MAGIC, 0, r0 },
		{ 1, (uint32_t)CS_ETE_MAGIC, 0, r1 },
	};
	struct prec_cs_meta *m = NULL;
	struct prec_diag d = { 0 };

	b[0].nregs = (uint32_t)put_v1_etmv4(r0, 0, 0x80000000u);
	b[1].nregs = (uint32_t)put_v1_ete(r1, 1, 0x80000000u);
	T_EQ_INT(prec_cs_meta_from_etm_blocks(b, 2, &m, &d), 0);
	if (T_OK(m)) {
		T_EQ_INT(m->n, 2);
		T_EQ_INT(m->src[0].proto, PREC_CS_ETMV4);
		T_EQ_INT(m->src[1].proto, PREC_CS_ETE);
		T_EQ_INT(m->src[1].cpu, 1);
		T_EQ_U64(m->src[1].devarch, 0x47705a13);
		/* the recorder writes the "unused" flag: ids come later */
		T_EQ_INT(m->src[0].trace_id, 0);
		prec_cs_meta_free(m);
	}
	/* kind and magic disagree */
	b[1].kind = (uint32_t)CS_ETMV4_MAGIC;
	T_EQ_INT(prec_cs_meta_from_etm_blocks(b, 2, &m, &d), -PREC_E_FORMAT);
	T_OK(!m);
	b[1].kind = (uint32_t)CS_ETE_MAGIC;
	b[1].nregs = 5;
	T_EQ_INT(prec_cs_meta_from_etm_blocks(b, 2, &m, &d), -PREC_E_FORMAT);
	T_OK(!m);
}

static void attach_and_select(void)
{
	struct prec_session *s = prec_session_new(), *s2 = prec_session_new();
	struct prec_cs_meta *m = prec_cs_meta_new(), *m2 = prec_cs_meta_new();
	struct prec_cs_source src = { .cpu = 0, .proto = PREC_CS_ETMV4, .trace_id = 0x10 };
	struct prec_machine mach = { .vendor = "GenuineIntel" };

	prec_session_set_machine(s, &mach);
	prec_session_set_machine(s2, &mach);
	T_OK(prec_decoder_for_session(s) == &prec_intel_pt_decoder);
	T_EQ_INT(prec_cs_meta_add(m, &src), 0);
	T_EQ_INT(prec_cs_meta_add(m, &src), -EEXIST);
	src.cpu = 1;
	src.trace_id = 0x70;
	T_EQ_INT(prec_cs_meta_add(m, &src), -EINVAL);
	src.trace_id = 0x11;
	src.proto = 0;
	T_EQ_INT(prec_cs_meta_add(m, &src), -EINVAL);
	T_EQ_INT(prec_cs_session_attach(s, m), 0);
	T_OK(prec_cs_session_meta(s) == m);
	T_OK(prec_cs_session_meta(s2) == NULL);
	T_OK(prec_decoder_for_session(s) == &prec_coresight_decoder);
	T_OK(prec_decoder_for_session(s2) == &prec_intel_pt_decoder);
	/* re-attaching replaces (and frees) the old one */
	T_EQ_INT(prec_cs_session_attach(s, m2), 0);
	T_OK(prec_cs_session_meta(s) == m2);
	/* no trace ID, no decode: an error event, not a failure */
	prec_session_set_trace_meta(s, NULL, NULL);
	T_OK(prec_cs_session_meta(s) == NULL);
	T_EQ_INT(prec_cs_session_attach(s, NULL), -EINVAL);
	/* a decoder refuses a session without metadata */
	T_EQ_INT(prec_session_finalize(s2), 0);
	{
		struct prec_stream st = { .cpu = 0, .tid = -1 };
		void *priv = (void *)1;

		T_EQ_INT(prec_coresight_decoder.open(s2, &st, NULL, &priv), -EOPNOTSUPP);
		T_OK(priv == NULL);
	}
	mach = (struct prec_machine){ .vendor = "ARM" };
	prec_session_set_machine(s2, &mach);
	T_OK(prec_decoder_for_session(s2) == &prec_coresight_decoder);
	prec_session_free(s);
	prec_session_free(s2);
}

/* A formatted stream whose unit has no known trace ID says so. */
static void unknown_trace_id(void)
{
	struct prec_session *s = prec_session_new();
	struct prec_cs_meta *m = prec_cs_meta_new();
	struct prec_cs_source src = {
		.cpu = 2, .proto = PREC_CS_ETMV4, .format = PREC_CS_FMT_FRAMED,
		.configr = 1, .idr0 = 0x28000ea1, .idr2 = 0x488,
	};
	uint8_t bytes[64] = { 0 };
	const struct prec_tev *e;
	struct evs v;

	T_EQ_INT(prec_session_add_aux(s, 2, -1, 0, bytes, sizeof(bytes)), 0);
	T_EQ_INT(prec_session_finalize(s), 0);
	T_EQ_INT(prec_cs_meta_add(m, &src), 0);
	T_EQ_INT(prec_cs_session_attach(s, m), 0);
	T_EQ_INT(decode(s, 0, false, &v), 0);
	T_EQ_INT(v.n, 1);
	e = nth(&v, PREC_TEV_ERROR, 0);
	if (T_OK(e))
		T_CONTAINS(e->u.err.msg, "trace ID of CPU 2 is not known");
	free(v.e);
	unload(s);
}

/* ---- snapshot reader errors ---- */

static void snapshot_errors(void)
{
	static const struct {
		const char *name;
		const char *file, *text; /* replaces one file of a good snapshot */
		int err;
		const char *msg;
	} rows[] = {
		{ "no snapshot.ini", "snapshot.ini", NULL, -ENOENT, "snapshot.ini" },
		{ "bad version", "snapshot.ini",
		  "[snapshot]\nversion=2.0\n[device_list]\nd=cpu_0.ini\n[trace]\nmetadata=trace.ini\n",
		  -PREC_E_VERSION, "version 2.0" },
		{ "no trace section", "snapshot.ini",
		  "[snapshot]\nversion=1.0\n[device_list]\nd=cpu_0.ini\n", -PREC_E_FORMAT,
		  "[trace]" },
		{ "key outside section", "snapshot.ini", "version=1.0\n", -PREC_E_FORMAT,
		  "before any [section]" },
		{ "not key=value", "snapshot.ini", "[snapshot]\nversion\n", -PREC_E_FORMAT,
		  "not key=value" },
		{ "unclosed header", "snapshot.ini", "[snapshot\n", -PREC_E_FORMAT, "']'" },
		{ "escaping device file", "snapshot.ini",
		  "[device_list]\nd=../../etc/passwd\n[trace]\nmetadata=trace.ini\n",
		  -PREC_E_FORMAT, "leaves the snapshot directory" },
		{ "absolute device file", "snapshot.ini",
		  "[device_list]\nd=/etc/passwd\n[trace]\nmetadata=trace.ini\n", -PREC_E_FORMAT,
		  "leaves the snapshot directory" },
		{ "missing device file", "snapshot.ini",
		  "[device_list]\nd=nothere.ini\n[trace]\nmetadata=trace.ini\n", -ENOENT,
		  "nothere.ini" },
		{ "device without name", "cpu_0.ini", "[device]\nclass=core\n", -PREC_E_FORMAT,
		  "no [device] name" },
		{ "unknown buffer format", "trace.ini",
		  "[trace_buffers]\nbuffers=buffer0\n[buffer0]\nname=ETB_0\nfile=trace.bin\n"
		  "format=zip\n[source_buffers]\nETM_0=ETB_0\n[core_trace_sources]\ncpu_0=ETM_0\n",
		  -PREC_E_FORMAT, "unknown format \"zip\"" },
		{ "buffer section missing", "trace.ini", "[trace_buffers]\nbuffers=buf9\n",
		  -PREC_E_FORMAT, "[buf9]" },
		{ "no buffers", "trace.ini", "[source_buffers]\n", -PREC_E_FORMAT,
		  "buffers list" },
		{ "missing trace file", "trace.ini",
		  "[trace_buffers]\nbuffers=buffer0\n[buffer0]\nname=ETB_0\nfile=gone.bin\n",
		  -ENOENT, "gone.bin" },
		/* skipped with a note, as OpenCSD's reader does; then nothing is left */
		{ "unknown source only", "trace.ini",
		  "[trace_buffers]\nbuffers=buffer0\n[buffer0]\nname=ETB_0\nfile=trace.bin\n"
		  "[source_buffers]\nETM_9=ETB_0\n", -EOPNOTSUPP, "no ETMv4 or ETE trace source" },
		{ "only an STM source", "ETM_0.ini",
		  "[device]\nname=ETM_0\nclass=trace_source\ntype=STM\n[regs]\nSTMTCSR=1\n",
		  -EOPNOTSUPP, "no ETMv4 or ETE" },
		{ "missing TRCIDR0", "ETM_0.ini",
		  "[device]\nname=ETM_0\ntype=ETM4\n[regs]\nTRCCONFIGR=1\nTRCTRACEIDR=0x10\n"
		  "TRCIDR2=0x488\n", -PREC_E_FORMAT, "no register TRCIDR0" },
		{ "bad trace id", "ETM_0.ini",
		  "[device]\nname=ETM_0\ntype=ETM4\n[regs]\nTRCCONFIGR=1\nTRCTRACEIDR=0x7f\n"
		  "TRCIDR0=1\nTRCIDR2=0x488\n", -PREC_E_FORMAT, "not a valid trace ID" },
		{ "register not a number", "ETM_0.ini",
		  "[device]\nname=ETM_0\ntype=ETM4\n[regs]\nTRCCONFIGR=one\nTRCTRACEIDR=0x10\n"
		  "TRCIDR0=1\nTRCIDR2=0x488\n", -PREC_E_FORMAT, "not a number" },
		{ "dump past its file", "cpu_0.ini",
		  "[device]\nname=cpu_0\ntype=Cortex-A53\n[dump]\nfile=mem.bin\naddress=0x400000\n"
		  "offset=0x100000\n", -PREC_E_FORMAT, "past the end" },
		{ "dump without address", "cpu_0.ini",
		  "[device]\nname=cpu_0\ntype=Cortex-A53\n[dump]\nfile=mem.bin\n", -PREC_E_FORMAT,
		  "dump address" },
		{ "binary ini", "trace.ini", "[trace_buffers]\n\0\0\0", -PREC_E_FORMAT,
		  "not a text file" },
	};
	struct ssrc src = { 0, "ETM4", 0x10 };
	struct pk p = { 0 };
	size_t i;

	prog1_trace(&p);
	for (i = 0; i < PREC_ARRAY_SIZE(rows); i++) {
		char dir[512];
		struct prec_session *s = prec_session_new();
		struct prec_diag d = { 0 };
		int err;

		snprintf(dir, sizeof(dir), "%s/e%zu", t_tmpdir(), i);
		write_snapshot(dir, "source_data", &src, 1, p.b, p.n, prog1, sizeof(prog1), BASE);
		if (!rows[i].text) {
			char path[600];

			snprintf(path, sizeof(path), "%s/%s", dir, rows[i].file);
			unlink(path);
		} else if (!strcmp(rows[i].name, "binary ini")) {
			wfile(dir, rows[i].file, rows[i].text, 20);
		} else {
			wtext(dir, rows[i].file, "%s", rows[i].text);
		}
		err = prec_snapshot_load(s, dir, NULL, &d);
		T_EQ_INT(err, rows[i].err);
		T_CONTAINS(d.msg, rows[i].msg);
		T_OK(prec_cs_session_meta(s) == NULL);
		prec_session_free(s);
		t_row(rows[i].name, !t_row_failed());
	}
	free(p.b);
}

static void snapshot_report(void)
{
	char dir[512];
	struct ssrc src[2] = { { 0, "ETM4", 0x10 }, { 1, "ETE", 0x12 } };
	struct pk p = { 0 };
	struct prec_snapshot_report rep;
	struct prec_diag d = { 0 };
	struct prec_session *s = prec_session_new();
	const struct prec_cs_meta *m;

	prog1_trace(&p);
	snprintf(dir, sizeof(dir), "%s/ss", t_tmpdir());
	write_snapshot(dir, "coresight", src, 2, p.b, p.n, prog1, sizeof(prog1), BASE);
	/* a second core named without digits, and a core type OpenCSD does not list */
	wtext(dir, "cpu_1.ini", "[device]\nname=cpu_1\nclass=core\ntype=ARMv8.4-A\n");
	T_EQ_INT(prec_snapshot_probe(dir), 1);
	T_EQ_INT(prec_snapshot_probe(t_tmpdir()), 0);
	T_EQ_INT(prec_snapshot_load(s, dir, &rep, &d), 0);
	T_EQ_STR(rep.description, "unit test");
	T_EQ_INT(rep.nr_devices, 4);
	T_EQ_INT(rep.nr_buffers, 1);
	T_EQ_INT(rep.nr_sources, 2);
	T_EQ_INT(rep.nr_dumps, 1);
	T_EQ_INT(rep.dump_bytes, sizeof(prog1));
	T_EQ_INT(rep.trace_bytes, p.n);
	m = prec_cs_session_meta(s);
	if (T_OK(m && m->n == 2)) {
		T_EQ_INT(m->src[0].arch, PREC_CS_ARCH_V8);
		T_EQ_INT(m->src[1].arch, PREC_CS_ARCH_AA64);
		T_EQ_INT(m->src[1].proto, PREC_CS_ETE);
	}
	T_EQ_STR(prec_session_comm(s, 2, 0), "cpu_1");
	T_EQ_INT(prec_session_pid_of(s, 2, 0), 1);
	unload(s);

	/* unformatted data is one source's: the second one is skipped, with a note */
	write_snapshot(dir, "source_data", src, 2, p.b, p.n, prog1, sizeof(prog1), BASE);
	s = prec_session_new();
	T_EQ_INT(prec_snapshot_load(s, dir, &rep, &d), 0);
	T_EQ_INT(rep.nr_sources, 1);
	T_EQ_INT(prec_session_nr_streams(s), 1);
	T_EQ_INT(rep.notes.n, 1);
	T_CONTAINS(rep.notes.text[0], "ETM_1 skipped");
	unload(s);
	free(p.b);
}

static const struct t_case cases[] = {
	T(raw_etmv4_prog1),
	T(raw_ete_prog1),
	T(framed_two_ids),
	T(fsync_frames),
	T(exception_and_eret),
	T(exception_irq),
	T(no_code_image),
	T(no_sync),
	T(random_programs),
	T(damage_resync),
	T(fuzz_damage),
	T(gap_in_stream),
	T(context_switch),
	T(lister_agrees),
	T(qemu_ground_truth),
	T(emulator_snapshots),
	T(auxtrace_v1_etmv4),
	T(auxtrace_v2_ete_hw_id),
	T(auxtrace_v0),
	T(auxtrace_bad),
	T(etm_blocks),
	T(attach_and_select),
	T(unknown_trace_id),
	T(snapshot_errors),
	T(snapshot_report),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}

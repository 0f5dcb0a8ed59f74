// SPDX-License-Identifier: MIT
/*
 * cs_etm (CoreSight) perf.data, decoded through the perf.data importer.
 *
 * There is no CoreSight hardware here, so the files are assembled at run
 * time from what the project makes: an aarch64 program recorded by the
 * CoreSight software tracer (ptrec record --emulate) gives a ptrec file with
 * raw ETMv4 streams, its trace unit's registers (perf's per-CPU block
 * layout), the sideband, and the emulator's ground truth of every executed
 * block. From it a perf.data is built the way perf writes one for cs_etm:
 * the tracer and a dummy tracking attr, AUXTRACE_INFO type CS_ETM (header
 * version 0, 1 or 2; ETMv4 or ETE blocks), TIME_CONV, AUX_OUTPUT_HW_ID for
 * version 2, the sideband, AUX records (FORMAT_RAW for unformatted data)
 * and AUXTRACE records, per thread or per CPU, with the trace either raw or
 * in CoreSight formatter frames. The decoded instruction ranges must equal
 * the ptrec file's decode and the ground truth, and the views must match
 * the ptrec file's. Malformed cs_etm metadata must give clear errors.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decoders/coresight.h"
#include "session/cs_meta.h"
#include "harness.h"
#include "session/load.h"
#include "output/output.h"
#include "base/perf_abi.h"
#include "base/perf_format.h"
#include "interop/perfdata.h"
#include "record/ring.h"
#include "session/session.h"
#include "snapshot_write.h"
#include "tracefile/tfile.h"
#include "base/util.h"

#define ETE_DEVARCH 0x47705a13u
#define V2_ID 0x23           /* the HW_ID trace ID, unlike the recording's 0x10 */
#define MAX_ST 16

/* ---- the recording ---- */

struct stream {
	int cpu, tid;
	uint64_t base;
	struct prec_buf data;
};

struct rec {
	char path[512], truth[512];
	struct prec_tfile_machine *fm;
	struct prec_tfile_events *evs;
	struct prec_buf sb;          /* sideband records, AUX records left out */
	struct stream st[MAX_ST];
	size_t nst;
	int tracer, tracking;        /* event indexes */
	int pid;
};

static const char *bdir(void)
{
	const char *b = getenv("B");

	return b && *b ? b : "build";
}

static char *fmt(const char *f, ...) prec_printf(1, 2);
static char *fmt(const char *f, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

static void rec_free(struct rec *r)
{
	free(r->fm);
	free(r->evs);
	prec_buf_free(&r->sb);
	for (size_t i = 0; i < r->nst; i++)
		prec_buf_free(&r->st[i].data);
	free(r);
}

/* Records $B/progs-arm64/@prog with the CoreSight software tracer and reads the file back. */
static struct rec *record(const char *prog)
{
	char cwd[512], ptrec[1100], plugin[1100], progs[1100], *cmd;
	const char *e = getenv("PTREC"), *pl = getenv("PTREC_PLUGIN");
	struct prec_tfile_reader *rd = NULL;
	struct prec_tfile_chunk c;
	struct prec_diag d;
	struct rec *r;
	int err;

	if (!getcwd(cwd, sizeof(cwd)))
		t_skip("no working directory");
	snprintf(ptrec, sizeof(ptrec), "%s", e && *e ? e : "");
	if (!ptrec[0])
		snprintf(ptrec, sizeof(ptrec), "%s/%s/ptrec", cwd, bdir());
	snprintf(plugin, sizeof(plugin), "%s", pl && *pl ? pl : "");
	if (!plugin[0])
		snprintf(plugin, sizeof(plugin), "%s/%s/ptrec-emu.so", cwd, bdir());
	snprintf(progs, sizeof(progs), "%s%s%s/progs-arm64", bdir()[0] == '/' ? "" : cwd,
		 bdir()[0] == '/' ? "" : "/", bdir());
	cmd = fmt("%s/%s", progs, prog);
	if (system("command -v qemu-aarch64 >/dev/null 2>&1") || access(ptrec, X_OK) ||
	    access(plugin, R_OK) || access(cmd, X_OK)) {
		free(cmd);
		t_skip("no ptrec, plugin, qemu-aarch64 or aarch64 test program for the "
		       "CoreSight software tracer");
	}
	free(cmd);
	r = calloc(1, sizeof(*r));
	snprintf(r->path, sizeof(r->path), "%s/%s.ptrec", t_tmpdir(), prog);
	snprintf(r->truth, sizeof(r->truth), "%s/%s.truth", t_tmpdir(), prog);
	cmd = fmt("PTREC_PLUGIN=%s %s record --emulate -q -o %s --emulate-truth %s -- %s/%s "
		  ">/dev/null 2>%s.err || { cat %s.err >&2; exit 1; }", plugin, ptrec, r->path,
		  r->truth, progs, prog, r->path, r->path);
	err = system(cmd);
	free(cmd);
	if (!T_OK(err == 0))
		goto fail;
	if (!T_OK(prec_tfile_reader_new(r->path, NULL, &rd, &d) == 0) ||
	    !T_OK(prec_tfile_read_machine(rd, &r->fm) == 0) ||
	    !T_OK(prec_tfile_read_events(rd, &r->evs) == 0))
		goto fail;
	r->tracer = r->tracking = -1;
	for (uint32_t i = 0; i < r->evs->n; i++) {
		if (r->evs->ev[i].flags & PREC_TFILE_EV_AUX)
			r->tracer = (int)i;
		else if (r->evs->ev[i].flags & PREC_TFILE_EV_TRACKING)
			r->tracking = (int)i;
	}
	if (!T_OK(r->tracer >= 0 && r->fm->n_etm >= 1))
		goto fail;
	prec_tfile_rewind(rd);
	while ((err = prec_tfile_next(rd, &c)) > 0) {
		if (c.type == PREC_TFILE_SIDEBAND) {
			const struct perf_event_header *h;
			size_t pos = 0;

			while (prec_perf_next_record(c.data, c.len, &pos, &h) > 0) {
				/* the test writes AUX records of its own */
				if (h->type == PERF_RECORD_AUX)
					continue;
				if (h->type == PERF_RECORD_COMM && !r->pid)
					memcpy(&r->pid, (const uint8_t *)h + 8, 4);
				prec_buf_append(&r->sb, h, h->size);
			}
		} else if (c.type == PREC_TFILE_AUX) {
			struct stream *s = NULL;

			for (size_t i = 0; i < r->nst; i++)
				if (r->st[i].cpu == c.cpu && r->st[i].tid == c.tid)
					s = &r->st[i];
			if (!s) {
				if (!T_OK(r->nst < MAX_ST))
					goto fail;
				s = &r->st[r->nst++];
				s->cpu = c.cpu;
				s->tid = c.tid;
				s->base = c.arg;
			}
			/* the emulator writes each stream without holes */
			if (!T_OK(c.arg == s->base + s->data.len))
				goto fail;
			prec_buf_append(&s->data, c.data, c.len);
		}
	}
	if (!T_OK(err == 0) || !T_OK(r->nst >= 1 && r->sb.len > 0))
		goto fail;
	prec_tfile_reader_free(rd);
	return r;
fail:
	prec_tfile_reader_free(rd);
	rec_free(r);
	return NULL;
}

/* ---- assembling perf.data ---- */

enum flavour { FL_ETMV4, FL_ETE };

struct variant {
	const char *name;
	unsigned version;            /* cs_etm header version 0, 1, 2 */
	bool framed;                 /* formatter frames (else raw, flagged in AUX records) */
	bool per_cpu;
	enum flavour fl;
	bool no_aux_records;         /* leave the AUX records out */
	bool no_hw_id;               /* version 2 without AUX_OUTPUT_HW_ID */
	int hw_id_cpu;               /* cpu of the HW_ID sample_id (-1: the unit's) */
	uint64_t hw_id_value;        /* 0: V2_ID */
	uint64_t hw_id_first;        /* an earlier HW_ID record with this value (0: none) */
};

static void wr_trailer(struct prec_buf *o, uint64_t st, int pid, int tid, uint64_t time, int cpu,
		       uint64_t id)
{
	uint32_t pt[2] = { (uint32_t)pid, (uint32_t)tid }, cr[2] = { (uint32_t)cpu, 0 };

	if (st & PERF_SAMPLE_TID)
		prec_buf_append(o, pt, 8);
	if (st & PERF_SAMPLE_TIME)
		prec_buf_append(o, &time, 8);
	if (st & PERF_SAMPLE_ID)
		prec_buf_append(o, &id, 8);
	if (st & PERF_SAMPLE_STREAM_ID)
		prec_buf_append(o, &id, 8);
	if (st & PERF_SAMPLE_CPU)
		prec_buf_append(o, cr, 8);
	if (st & PERF_SAMPLE_IDENTIFIER)
		prec_buf_append(o, &id, 8);
}

static size_t trailer_size(uint64_t st)
{
	return 8 * (size_t)__builtin_popcountll(st & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
		PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER));
}

/* The trace unit's register values from the recording's etm block. */
struct unit {
	int cpu;
	uint64_t p[CS_ETMV4_PRIV_MAX];  /* indexed by CS_ETMV4_* */
};

static void unit_of(const struct rec *r, size_t i, struct unit *u)
{
	const struct prec_tfile_etm *b = &r->fm->etm[i];

	memset(u, 0, sizeof(*u));
	u->cpu = b->cpu >= 0 ? b->cpu : (int)b->regs[CS_ETM_CPU];
	for (size_t k = CS_ETMV4_TRCCONFIGR; k < CS_ETMV4_PRIV_MAX && k < b->nregs; k++)
		u->p[k] = b->regs[k];
}

/* priv[] words of AUXTRACE_INFO for @v. @pmu_type is the tracer's type. */
static void cs_priv(const struct rec *r, const struct variant *v, uint32_t pmu_type,
		    struct prec_buf *o)
{
	uint64_t hdr[3] = { v->version, ((uint64_t)pmu_type << 32) | r->fm->n_etm, 0 };

	prec_buf_append(o, hdr, sizeof(hdr));
	for (uint32_t i = 0; i < r->fm->n_etm; i++) {
		struct unit u;
		uint64_t w[16], n = 0, traceidr;

		unit_of(r, i, &u);
		traceidr = u.p[CS_ETMV4_TRCTRACEIDR];
		if (v->version >= 2)
			traceidr |= 1u << 31;   /* perf's "unused": IDs come in HW_ID records */
		w[n++] = v->fl == FL_ETE ? CS_ETE_MAGIC : CS_ETMV4_MAGIC;
		w[n++] = (uint64_t)u.cpu;
		if (v->version >= 1)
			w[n++] = v->fl == FL_ETE ? 9 : 8;
		w[n++] = u.p[CS_ETMV4_TRCCONFIGR];
		w[n++] = traceidr;
		w[n++] = u.p[CS_ETMV4_TRCIDR0];
		w[n++] = u.p[CS_ETMV4_TRCIDR1];
		w[n++] = u.p[CS_ETMV4_TRCIDR2];
		w[n++] = u.p[CS_ETMV4_TRCIDR8];
		w[n++] = u.p[CS_ETMV4_TRCAUTHSTATUS];
		if (v->fl == FL_ETE)
			w[n++] = ETE_DEVARCH;
		if (v->version >= 1)
			w[n++] = u.p[CS_ETMV4_TS_SOURCE];
		prec_buf_append(o, w, n * 8);
	}
}

/* The trace ID the stream's bytes are framed under. */
static uint8_t frame_id(const struct rec *r, const struct variant *v)
{
	struct unit u;

	if (v->version >= 2)
		return V2_ID;
	unit_of(r, 0, &u);
	return (uint8_t)(u.p[CS_ETMV4_TRCTRACEIDR] & 0x7f);
}

/* perf.data (file form) for recording @r as variant @v; *@len gets its size. */
static uint8_t *assemble(const struct rec *r, const struct variant *v, const void *priv_override,
			 size_t npriv_override, size_t *len)
{
	const struct prec_tfile_event *te = &r->evs->ev[r->tracer];
	struct perf_file_header fh = { 0 };
	struct prec_attr at[2];
	struct prec_buf o = { 0 }, data = { 0 }, pv = { 0 };
	uint64_t st = te->attr.sample_type | PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_CPU |
		      PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	uint64_t id = te->n_ids ? te->ids[0] : 1, ids_off[2], trk_id = id + 1000;
	size_t n_other = 0;
	struct unit u;

	unit_of(r, 0, &u);
	/* attrs: the tracer as recorded, a dummy tracking event */
	memset(at, 0, sizeof(at));
	memcpy(&at[0], &te->attr, sizeof(at[0]));
	at[0].size = sizeof(at[0]);
	at[1].type = PERF_TYPE_SOFTWARE;
	at[1].config = PERF_COUNT_SW_DUMMY;
	at[1].size = sizeof(at[1]);
	/* the sideband's trailers are laid out for this sample_type */
	if (!T_OK((te->attr.sample_type & st) == te->attr.sample_type))
		return NULL;
	at[0].sample_type = at[1].sample_type = te->attr.sample_type;
	at[0].sample_id_all = at[1].sample_id_all = 1;
	st = te->attr.sample_type;

	/* AUXTRACE_INFO */
	if (priv_override)
		prec_buf_append(&pv, priv_override, npriv_override * 8);
	else
		cs_priv(r, v, at[0].type, &pv);
	{
		struct perf_record_auxtrace_info h = { 0 };

		h.header.type = PERF_RECORD_AUXTRACE_INFO;
		h.header.size = (uint16_t)(sizeof(h) + pv.len);
		h.type = PERF_AUXTRACE_CS_ETM;
		prec_buf_append(&data, &h, sizeof(h));
		prec_buf_append(&data, pv.data, pv.len);
	}
	/* TIME_CONV from the recording's clock parameters */
	{
		struct perf_record_time_conv tc = { 0 };

		tc.header.type = PERF_RECORD_TIME_CONV;
		tc.header.size = sizeof(tc);
		tc.time_shift = r->fm->time_shift;
		tc.time_mult = r->fm->time_mult;
		tc.time_zero = r->fm->time_zero;
		tc.cap_user_time_zero = !!(r->fm->flags & PREC_TFILE_M_CAP_USER_TIME_ZERO);
		prec_buf_append(&data, &tc, sizeof(tc));
	}
	if (v->version >= 2 && !v->no_hw_id) {
		struct perf_event_header h = { PERF_RECORD_AUX_OUTPUT_HW_ID, 0,
					       (uint16_t)(16 + trailer_size(st)) };
		uint64_t hw = v->hw_id_value ? v->hw_id_value : V2_ID;

		if (v->hw_id_first) {
			prec_buf_append(&data, &h, sizeof(h));
			prec_buf_append(&data, &v->hw_id_first, 8);
			wr_trailer(&data, st, r->pid, r->pid, 1, u.cpu, id);
		}
		prec_buf_append(&data, &h, sizeof(h));
		prec_buf_append(&data, &hw, 8);
		wr_trailer(&data, st, r->pid, r->pid, 1, v->hw_id_cpu >= 0 ? v->hw_id_cpu : u.cpu,
			   id);
	}
	prec_buf_append(&data, r->sb.data, r->sb.len);
	for (size_t i = 0; i < r->nst; i++) {
		const struct stream *s = &r->st[i];
		uint8_t *framed = NULL;
		const uint8_t *bytes = (const uint8_t *)s->data.data;
		size_t n = s->data.len;
		int cpu = v->per_cpu ? u.cpu : -1;

		if (v->framed) {
			struct prec_snap_source src = { .data = bytes, .size = n };

			src.regs.trctraceidr = frame_id(r, v);
			if (!T_OK(prec_cs_frames_encode(&src, 1, 0, &framed, &n) == 0))
				continue;
			bytes = framed;
		}
		if (!v->no_aux_records) {
			struct perf_event_header h = { PERF_RECORD_AUX, 0,
						       (uint16_t)(32 + trailer_size(st)) };
			uint64_t w[3] = { s->base, n,
					  v->framed ? 0 : PERF_AUX_FLAG_CORESIGHT_FORMAT_RAW };

			prec_buf_append(&data, &h, sizeof(h));
			prec_buf_append(&data, w, sizeof(w));
			wr_trailer(&data, st, r->pid, s->tid >= 0 ? s->tid : r->pid, 2, u.cpu, id);
		}
		{
			struct perf_record_auxtrace a = { 0 };
			uint8_t pad[8] = { 0 };
			size_t padded = PREC_ALIGN_UP(n, 8);

			a.header.type = PERF_RECORD_AUXTRACE;
			a.header.size = sizeof(a);
			a.size = padded;
			a.offset = s->base;
			a.reference = 0;
			a.idx = (uint32_t)i;
			a.tid = (uint32_t)(s->tid >= 0 ? s->tid : r->pid);
			a.cpu = (uint32_t)cpu;
			prec_buf_append(&data, &a, sizeof(a));
			prec_buf_append(&data, bytes, n);
			prec_buf_append(&data, pad, padded - n);
		}
		free(framed);
	}

	/* the file: header, ids, attrs, data; no features */
	memcpy(fh.magic, "PERFILE2", 8);
	fh.size = sizeof(fh);
	fh.attr_size = sizeof(struct prec_attr) + sizeof(struct perf_file_section);
	prec_buf_append(&o, &fh, sizeof(fh));
	ids_off[0] = o.len;
	prec_buf_append(&o, te->ids, te->n_ids * 8);
	/*
	 * The dummy stands for every other event of the recording: the sideband
	 * carries their ids (the tracking event's, one per CPU opened).
	 */
	ids_off[1] = o.len;
	for (uint32_t e = 0; e < r->evs->n; e++)
		if (e != (uint32_t)r->tracer) {
			prec_buf_append(&o, r->evs->ev[e].ids, r->evs->ev[e].n_ids * 8);
			n_other += r->evs->ev[e].n_ids;
		}
	if (!n_other) {
		prec_buf_append(&o, &trk_id, 8);
		n_other = 1;
	}
	fh.attrs.offset = o.len;
	for (int i = 0; i < 2; i++) {
		struct perf_file_section ids = { ids_off[i], (i ? n_other : te->n_ids) * 8 };

		prec_buf_append(&o, &at[i], sizeof(at[i]));
		prec_buf_append(&o, &ids, sizeof(ids));
	}
	fh.attrs.size = o.len - fh.attrs.offset;
	fh.data.offset = o.len;
	fh.data.size = data.len;
	prec_buf_append(&o, data.data, data.len);
	memcpy(o.data, &fh, sizeof(fh));
	prec_buf_free(&data);
	prec_buf_free(&pv);
	*len = o.len;
	return (uint8_t *)o.data;
}

/* ---- comparing ---- */

/* "start end" runs of consecutive ranges, merged where one ends where the next begins */
struct runs {
	uint64_t (*r)[2];
	size_t n, cap;
};

static void runs_add(struct runs *w, uint64_t s, uint64_t e)
{
	if (w->n && w->r[w->n - 1][1] == s) {
		w->r[w->n - 1][1] = e;
		return;
	}
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 256;
		w->r = realloc(w->r, w->cap * sizeof(*w->r));
	}
	w->r[w->n][0] = s;
	w->r[w->n][1] = e;
	w->n++;
}

static bool runs_eq(const char *what, const struct runs *a, const struct runs *b)
{
	size_t i;

	for (i = 0; i < a->n && i < b->n; i++)
		if (a->r[i][0] != b->r[i][0] || a->r[i][1] != b->r[i][1])
			break;
	if (i == a->n && i == b->n)
		return true;
	return t_check(false, __FILE__, __LINE__, "%s: runs differ at #%zu of %zu/%zu "
		       "(%#" PRIx64 "-%#" PRIx64 " vs %#" PRIx64 "-%#" PRIx64 ")", what, i, a->n,
		       b->n, i < a->n ? a->r[i][0] : 0, i < a->n ? a->r[i][1] : 0,
		       i < b->n ? b->r[i][0] : 0, i < b->n ? b->r[i][1] : 0);
}

/* The ground truth: blocks between a resume (R) and the next pause (P). */
static void truth_runs(const char *path, int want_tid, struct runs *w)
{
	FILE *f = fopen(path, "r");
	char line[256];
	bool on = false;

	if (!T_OK(f))
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e;
		int tid;

		if (line[0] == 'R')
			on = true;
		else if (line[0] == 'P')
			on = false;
		else if (line[0] == 'B' && on && sscanf(line + 1, "%d %llx %llx", &tid, &s, &e) == 3 &&
			 (want_tid < 0 || tid == want_tid))
			runs_add(w, s, e);
	}
	fclose(f);
}

/* The decoded ranges of @s (prec_cs_print_ranges), as runs; *@text keeps the listing. */
static void ranges_of(struct prec_session *s, int tid, struct runs *w, char **text)
{
	struct prec_output_opts oo;
	char *t = NULL, *p;
	size_t n = 0;
	FILE *f = open_memstream(&t, &n);

	prec_output_opts_init(&oo);
	oo.tid = tid;
	T_EQ_INT(prec_cs_print_ranges(s, &oo, f), 0);
	fclose(f);
	for (p = t; p && (p = strstr(p, "exec range=0x")); p++) {
		unsigned long long a, b;

		if (sscanf(p, "exec range=0x%llx:[0x%llx]", &a, &b) == 2)
			runs_add(w, a, b);
	}
	*text = t;
}

static char *render(struct prec_session *s, enum prec_fmt f, int tid)
{
	struct prec_output_opts oo;
	char *text = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&text, &n);

	prec_output_opts_init(&oo);
	oo.fmt = f;
	oo.tid = tid;
	T_EQ_INT(prec_output_run(s, &oo, m), 0);
	fclose(m);
	return text;
}

static struct prec_session *load_ptrec(const char *path)
{
	struct prec_load_report lr;
	struct prec_tfile_reader *rd = NULL;
	struct prec_session *s = prec_session_new();
	struct prec_diag d;

	T_EQ_INT(prec_load_open(path, &lr, &rd, &d), 0);
	if (rd)
		T_EQ_INT(prec_load_session(s, rd, &lr), 0);
	prec_tfile_reader_free(rd);
	return s;
}

static bool text_eq(const char *what, const char *a, const char *b)
{
	size_t i = 0;

	if (a && b && !strcmp(a, b))
		return true;
	if (!a || !b)
		return t_check(false, __FILE__, __LINE__, "%s: no text", what);
	while (a[i] && a[i] == b[i])
		i++;
	while (i && a[i - 1] != '\n')
		i--;
	return t_check(false, __FILE__, __LINE__, "%s differs at byte %zu:\n%.300s\nvs perf.data:\n"
		       "%.300s", what, i, a + i, b + i);
}

/*
 * ptdump itself ($PTDUMP) on the file: its ranges are the library's, and
 * the call trace shows the program's functions.
 */
static void check_cli(const struct rec *r, const uint8_t *pd, size_t len, const struct runs *want)
{
	const char *ptdump = getenv("PTDUMP");
	char *path = fmt("%s/cs.perf.data", t_tmpdir()), *cmd;
	struct runs got = { 0 };
	char line[512];
	bool fib = false;
	FILE *f;

	(void)r;
	if (!ptdump || !*ptdump || access(ptdump, X_OK)) {
		free(path);
		return;
	}
	f = fopen(path, "w");
	T_OK(f && fwrite(pd, 1, len, f) == len);
	if (f)
		fclose(f);
	cmd = fmt("%s --ranges %s", ptdump, path);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, "exec range=0x");
		unsigned long long a, b;

		if (p && sscanf(p, "exec range=0x%llx:[0x%llx]", &a, &b) == 2)
			runs_add(&got, a, b);
	}
	T_OK(f && pclose(f) == 0);
	runs_eq("ptdump --ranges vs library", want, &got);
	free(cmd);
	cmd = fmt("%s --call-trace %s 2>&1", ptdump, path);
	f = popen(cmd, "r");
	while (f && fgets(line, sizeof(line), f))
		fib |= strstr(line, " fib") != NULL;
	T_OK(f && pclose(f) == 0);
	T_OK(fib);
	free(cmd);
	cmd = fmt("%s --info %s 2>&1", ptdump, path);
	f = popen(cmd, "r");
	fib = false;
	while (f && fgets(line, sizeof(line), f))
		fib |= strstr(line, "cs_etm (CoreSight), header version 1") != NULL;
	T_OK(f && pclose(f) == 0);
	T_OK(fib);
	free(cmd);
	cmd = fmt("%s --stats %s >/dev/null 2>&1", ptdump, path);
	T_OK(system(cmd) == 0);
	free(cmd);
	free(got.r);
	free(path);
}

/* Loads @v of @r and checks ranges, truth and views against the ptrec file's decode. */
static void check_variant(const struct rec *r, const struct variant *v, bool cli)
{
	struct prec_perfdata_report rep;
	struct prec_diag d;
	struct prec_session *a = load_ptrec(r->path), *b = prec_session_new();
	struct runs ra = { 0 }, rb = { 0 }, rt = { 0 };
	char *ta = NULL, *tb = NULL;
	const struct prec_cs_meta *m;
	size_t len = 0;
	uint8_t *pd = assemble(r, v, NULL, 0, &len);
	static const enum prec_fmt views[] = { PREC_FMT_CALL_TRACE, PREC_FMT_CALL_RET_TRACE,
					       PREC_FMT_BRANCHES, PREC_FMT_INSN_TRACE };
	int err;

	if (!T_OK(pd))
		goto out;
	err = prec_perfdata_load_buf(b, pd, len, NULL, &rep, &d);
	if (err) {
		t_check(false, __FILE__, __LINE__, "%s: %s", v->name, d.msg);
		goto out;
	}
	T_EQ_INT(rep.auxtrace_type, PERF_AUXTRACE_CS_ETM);
	T_EQ_STR(prec_session_machine(b)->vendor, "ARM");
	T_OK(prec_decoder_for_session(b) == &prec_coresight_decoder);
	m = prec_cs_session_meta(b);
	if (T_OK(m && m->n == r->fm->n_etm)) {
		T_EQ_INT(m->src[0].proto, v->fl == FL_ETE ? PREC_CS_ETE : PREC_CS_ETMV4);
		T_EQ_INT(m->src[0].format, v->framed ? PREC_CS_FMT_FRAMED : PREC_CS_FMT_RAW);
		T_EQ_INT(m->src[0].trace_id, frame_id(r, v));
		if (v->fl == FL_ETE)
			T_EQ_U64(m->src[0].devarch, ETE_DEVARCH);
	}
	T_EQ_INT(prec_session_nr_streams(b), r->nst);
	for (size_t i = 0; i < prec_session_nr_streams(b); i++) {
		const struct prec_stream *st = prec_session_stream(b, i);
		const struct stream *want = v->per_cpu ? &r->st[0] : NULL;

		T_EQ_INT(st->cpu, v->per_cpu && m ? m->src[0].cpu : -1);
		for (size_t k = 0; !want && k < r->nst; k++)
			if (r->st[k].tid == st->tid)
				want = &r->st[k];
		if (!T_OK(want))
			continue;
		if (!v->framed)   /* padding taken off at the AUX record's end */
			T_OK(st->len == want->data.len && !memcmp(st->data, want->data.data, st->len));
	}
	T_EQ_U64(prec_session_tsc_to_time(a, 123456789), prec_session_tsc_to_time(b, 123456789));
	/* thread by thread: streams of several threads may come in any order */
	for (size_t i = 0; i < r->nst; i++) {
		int tid = r->nst > 1 ? r->st[i].tid : -1;

		ra.n = rb.n = rt.n = 0;
		ranges_of(a, tid, &ra, &ta);
		ranges_of(b, tid, &rb, &tb);
		truth_runs(r->truth, tid, &rt);
		T_OK(ra.n > 10);
		runs_eq("perf.data vs ptrec file", &ra, &rb);
		runs_eq("perf.data vs ground truth", &rt, &rb);
		T_OK(tb && !strstr(tb, "ERROR"));
		if (cli)
			check_cli(r, pd, len, &rb);
		free(ta);
		free(tb);
	}
	for (size_t k = 0; k < PREC_ARRAY_SIZE(views) * r->nst; k++) {
		int tid = r->nst > 1 ? r->st[k / PREC_ARRAY_SIZE(views)].tid : -1;
		enum prec_fmt vf = views[k % PREC_ARRAY_SIZE(views)];
		char *va = render(a, vf, tid), *vb = render(b, vf, tid);
		char what[64];

		snprintf(what, sizeof(what), "%s view %d tid %d", v->name, (int)vf, tid);
		T_OK(va && strlen(va) > 100);
		/* per-CPU streams add a cpu column; the rest must agree */
		if (!v->per_cpu)
			text_eq(what, va, vb);
		else
			T_OK(vb && strlen(vb) > 100);
		if (vf == PREC_FMT_CALL_TRACE && r->nst == 1)
			T_OK(vb && strstr(vb, "fib"));
		if (vf == PREC_FMT_INSN_TRACE)
			T_OK(vb && (strstr(vb, "\tbl ") || strstr(vb, " bl ")));
		free(va);
		free(vb);
	}
out:
	free(ra.r);
	free(rb.r);
	free(rt.r);
	free(pd);
	prec_session_free(a);
	prec_session_free(b);
}

/* ---- cases ---- */


static const struct variant variants[] = {
	{ "v1 raw per-thread", 1, false, false, FL_ETMV4, false, false, -1, 0, 0 },
	{ "v1 framed per-thread", 1, true, false, FL_ETMV4, false, false, -1, 0, 0 },
	{ "v1 raw per-cpu", 1, false, true, FL_ETMV4, false, false, -1, 0, 0 },
	{ "v1 framed per-cpu", 1, true, true, FL_ETMV4, false, false, -1, 0, 0 },
	{ "v2 raw per-thread", 2, false, false, FL_ETMV4, false, false, -1, 0, 0 },
	{ "v2 framed per-thread", 2, true, false, FL_ETMV4, false, false, -1, 0, 0 },
	{ "v2 framed per-cpu", 2, true, true, FL_ETMV4, false, false, -1, 0, 0 },
	{ "v0 framed per-cpu", 0, true, true, FL_ETMV4, false, false, -1, 0, 0 },
	{ "ETE v1 raw per-thread", 1, false, false, FL_ETE, false, false, -1, 0, 0 },
	{ "ETE v2 framed per-cpu", 2, true, true, FL_ETE, false, false, -1, 0, 0 },
};

static void decode_variants(void)
{
	struct rec *r = record("calls");

	if (!r)
		return;
	for (size_t i = 0; i < PREC_ARRAY_SIZE(variants); i++) {
		check_variant(r, &variants[i], i == 1);
		t_row(variants[i].name, !t_row_failed());
	}
	rec_free(r);
}

static void threads_per_thread(void)
{
	struct rec *r = record("threads");
	static const struct variant v[] = {
		{ "threads v2 raw per-thread", 2, false, false, FL_ETMV4, false, false, -1, 0, 0 },
		{ "threads v1 framed per-thread", 1, true, false, FL_ETMV4, false, false, -1, 0, 0 },
	};

	if (!r)
		return;
	T_OK(r->nst > 1);
	for (size_t i = 0; i < PREC_ARRAY_SIZE(v); i++) {
		check_variant(r, &v[i], false);
		t_row(v[i].name, !t_row_failed());
	}
	rec_free(r);
}

static bool has_note(const struct prec_perfdata_report *rep, const char *what)
{
	for (unsigned i = 0; i < prec_notes_kept(&rep->notes); i++)
		if (strstr(rep->notes.text[i], what))
			return true;
	return t_check(false, __FILE__, __LINE__, "no note says \"%s\" (%u notes)", what,
		       rep->notes.n);
}

/* Loads @v, expecting success; *@ranges gets the decoded listing. */
static struct prec_session *load_variant(const struct rec *r, const struct variant *v,
					 struct prec_perfdata_report *rep, char **ranges)
{
	struct prec_session *s = prec_session_new();
	struct prec_diag d;
	struct runs w = { 0 };
	size_t len = 0;
	uint8_t *pd = assemble(r, v, NULL, 0, &len);
	int err = pd ? prec_perfdata_load_buf(s, pd, len, NULL, rep, &d) : -EINVAL;

	free(pd);
	*ranges = NULL;
	if (err) {
		t_check(false, __FILE__, __LINE__, "%s: %d %s", v->name, err, d.msg);
		prec_session_free(s);
		return NULL;
	}
	ranges_of(s, -1, &w, ranges);
	free(w.r);
	return s;
}

/* HW_ID records that cannot be used, and files without them or without AUX records. */
static void hw_id_and_aux_edges(void)
{
	struct rec *r = record("calls");
	struct prec_perfdata_report rep;
	struct prec_session *s;
	char *t;
	static const struct variant none = { "v2 no HW_ID", 2, true, true, FL_ETMV4, false, true,
					     -1, 0, 0 };
	static const struct variant cpu7 = { "HW_ID of CPU 7", 2, true, true, FL_ETMV4, false,
					     false, 7, 0, 0 };
	static const struct variant big = { "HW_ID 0x7f", 2, true, true, FL_ETMV4, false, false,
					    -1, 0x7f, 0 };
	static const struct variant ver = { "HW_ID version 1", 2, true, true, FL_ETMV4, false,
					    false, -1, (1ull << 60) | V2_ID, 0 };
	static const struct variant noaux = { "raw without AUX records", 1, false, false,
					      FL_ETMV4, true, false, -1, 0, 0 };
	static const struct variant changed = { "HW_ID changes", 2, true, true, FL_ETMV4, false,
						false, -1, 0, V2_ID + 1 };
	static const struct variant raw_v2 = { "v2 raw, no HW_ID", 2, false, false, FL_ETMV4,
					       false, true, -1, 0, 0 };

	if (!r)
		return;
	/* framed trace without its trace ID cannot be told apart: the decoder says so */
	s = load_variant(r, &none, &rep, &t);
	if (s) {
		T_EQ_INT(prec_cs_session_meta(s)->src[0].trace_id, 0);
		T_CONTAINS(t, "trace ID of CPU 0 is not known");
		T_OK(!strstr(t, "exec range"));
	}
	free(t);
	prec_session_free(s);
	t_row(none.name, !t_row_failed());
	s = load_variant(r, &cpu7, &rep, &t);
	if (s) {
		has_note(&rep, "names a CPU without cs_etm metadata");
		T_EQ_INT(prec_cs_session_meta(s)->src[0].trace_id, 0);
	}
	free(t);
	prec_session_free(s);
	t_row(cpu7.name, !t_row_failed());
	s = load_variant(r, &big, &rep, &t);
	if (s)
		has_note(&rep, "outside 1..0x6f");
	free(t);
	prec_session_free(s);
	t_row(big.name, !t_row_failed());
	s = load_variant(r, &ver, &rep, &t);
	if (s)
		has_note(&rep, "unknown version");
	free(t);
	prec_session_free(s);
	t_row(ver.name, !t_row_failed());
	/* the last ID holds (the frames carry V2_ID) */
	s = load_variant(r, &changed, &rep, &t);
	if (s) {
		has_note(&rep, "changes from 0x24 to 0x23");
		T_EQ_INT(prec_cs_session_meta(s)->src[0].trace_id, V2_ID);
		T_OK(t && strstr(t, "exec range") && !strstr(t, "ERROR"));
	}
	free(t);
	prec_session_free(s);
	t_row(changed.name, !t_row_failed());
	/* perf's rule: without the FORMAT_RAW flag the data is taken as frames */
	s = load_variant(r, &noaux, &rep, &t);
	if (s)
		T_EQ_INT(prec_cs_session_meta(s)->src[0].format, PREC_CS_FMT_FRAMED);
	free(t);
	prec_session_free(s);
	t_row(noaux.name, !t_row_failed());
	/* unformatted data needs no trace ID: it decodes without HW_ID */
	s = load_variant(r, &raw_v2, &rep, &t);
	if (s) {
		T_OK(t && strstr(t, "exec range") && !strstr(t, "ERROR"));
		T_EQ_INT(prec_cs_session_meta(s)->src[0].format, PREC_CS_FMT_RAW);
	}
	free(t);
	prec_session_free(s);
	t_row(raw_v2.name, !t_row_failed());
	rec_free(r);
}

struct bad_priv {
	const char *name;
	int err;
	const char *msg;
	size_t n;                    /* words used (0: all that were built) */
	int idx;                     /* word to patch (-1: none) */
	uint64_t val;
};

/* Malformed cs_etm priv[]: a clear error, never a crash. */
static void malformed_priv(void)
{
	struct rec *r = record("calls");
	static const struct variant v1 = { "v1", 1, true, true, FL_ETMV4, false, false, -1, 0, 0 };
	struct prec_buf good = { 0 };
	static const struct bad_priv rows[] = {
		{ "version 3", -PREC_E_VERSION, "header version 3", 0, 0, 3 },
		{ "no CPUs", -PREC_E_FORMAT, "0 CPUs", 0, 1, 0 },
		{ "too many CPUs", -PREC_E_FORMAT, "cs_etm", 0, 1, 4 },
		{ "huge CPU count", -PREC_E_FORMAT, "cs_etm", 0, 1, 0xffffffffu },
		{ "header only", -PREC_E_FORMAT, "cs_etm", 2, -1, 0 },
		{ "unknown magic", -PREC_E_FORMAT, "unknown magic", 0, 3, 0x6060606060606060ull },
		{ "ETMv3", -EOPNOTSUPP, "ETMv3", 0, 3, 0x3030303030303030ull },
		{ "huge parameter count", -PREC_E_FORMAT, "cs_etm", 0, 5, 1ull << 40 },
		{ "two parameters", -PREC_E_FORMAT, "only 2 parameters", 0, 5, 2 },
		{ "cut inside the block", -PREC_E_FORMAT, "cs_etm", 7, -1, 0 },
		{ "CPU 70000", -PREC_E_FORMAT, "CPU", 0, 4, 70000 },
	};

	if (!r)
		return;
	T_EQ_INT(r->fm->n_etm, 1);
	cs_priv(r, &v1, r->evs->ev[r->tracer].attr.type, &good);
	for (size_t i = 0; i < PREC_ARRAY_SIZE(rows); i++) {
		uint64_t w[64];
		size_t n = rows[i].n ? rows[i].n : good.len / 8, len = 0;
		struct prec_session *s = prec_session_new();
		struct prec_perfdata_report rep;
		struct prec_diag d;
		uint8_t *pd;

		memcpy(w, good.data, good.len);
		if (rows[i].idx >= 0)
			w[rows[i].idx] = rows[i].idx == 1 ? (w[1] & ~0xffffffffull) | rows[i].val :
							   rows[i].val;
		pd = assemble(r, &v1, w, n, &len);
		if (T_OK(pd)) {
			T_EQ_INT(prec_perfdata_load_buf(s, pd, len, NULL, &rep, &d), rows[i].err);
			T_CONTAINS(d.msg, rows[i].msg);
		}
		free(pd);
		prec_session_free(s);
		t_row(rows[i].name, !t_row_failed());
	}
	prec_buf_free(&good);
	rec_free(r);
}

int main(int argc, char **argv)
{
	static const struct t_case cases[] = {
		T(decode_variants),
		T(threads_per_thread),
		T(hw_id_and_aux_edges),
		T(malformed_priv),
	};

	return t_main(argc, argv, cases, T_N(cases));
}

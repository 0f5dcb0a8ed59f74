// SPDX-License-Identifier: MIT
/*
 * Ground-truth tests of the software tracer: run the test programs under
 * QEMU with the plugin (through the host library), decode every PT stream
 * with libipt's instruction decoder using the images the sideband names, and
 * require the decoded instruction flow to equal, run by run, what the
 * plugin's independent ground truth says was executed while tracing was on.
 *
 * The truth comes from QEMU's view of executed blocks and is written apart
 * from the encoder; the decoder knows only the PT bytes and the program
 * files, so agreement checks the encoder, the sideband and the truth.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <intel-pt.h>
#include <libelf.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emulate.h"
#include "harness.h"

#define MAXS 64
#define MAXM 256
#define MAXSAMP 100000

static unsigned g_mtc_freq; /* the recording's mtc_period, for the decoder */

struct stream {
	uint32_t pid, tid;
	int img;         /* image generation of the process when the bytes came */
	uint8_t *data;
	size_t len, cap;
	uint64_t next_off;
	int offset_errors;
};

struct map {
	int img;
	uint64_t addr, len, pgoff;
	char path[512];
};

struct sample {
	uint64_t id, ip, time, period;
	uint32_t pid, tid;
};

struct rec {
	struct stream s[MAXS];
	int ns;
	struct map m[MAXM];
	int nm;
	int pid_img[64][2]; /* pid -> current image id */
	int npid;
	int next_img;
	struct sample *samp;
	int nsamp;
	int n_itrace, n_aux_rec, n_comm_exec, n_fork, n_exit, n_mmap_bid;
	int bad_records;
};

static const char *bdir(void)
{
	const char *b = getenv("B");

	return b && *b ? b : "build";
}

static const char *plugin_path(void)
{
	static char p[512];
	const char *e = getenv("PTREC_PLUGIN");

	if (e && *e)
		return e;
	snprintf(p, sizeof(p), "%s/ptrec-emu.so", bdir());
	return p;
}

static char *prog_path(const char *name)
{
	static char p[8][512];
	static int k;
	char *r = p[k++ & 7];
	char cwd[400];

	if (!getcwd(cwd, sizeof(cwd)))
		cwd[0] = 0;
	snprintf(r, 512, "%s/%s/progs/%s", bdir()[0] == '/' ? "" : cwd, bdir(), name);
	if (bdir()[0] == '/')
		snprintf(r, 512, "%s/progs/%s", bdir(), name);
	return r;
}

static int *pid_slot(struct rec *r, uint32_t pid, int create)
{
	int i;

	for (i = 0; i < r->npid; i++)
		if (r->pid_img[i][0] == (int)pid)
			return &r->pid_img[i][1];
	if (!create || r->npid >= 64)
		return NULL;
	r->pid_img[r->npid][0] = (int)pid;
	r->pid_img[r->npid][1] = -1;
	return &r->pid_img[r->npid++][1];
}

static int cur_img(struct rec *r, uint32_t pid)
{
	int *s = pid_slot(r, pid, 1);

	if (s && *s < 0)
		*s = r->next_img++;
	return s ? *s : -1;
}

static int on_aux(void *ctx, uint32_t pid, uint32_t tid, uint64_t off, const void *d, size_t n)
{
	struct rec *r = ctx;
	int img = cur_img(r, pid), i;
	struct stream *s = NULL;

	for (i = 0; i < r->ns; i++)
		if (r->s[i].tid == tid && r->s[i].img == img)
			s = &r->s[i];
	if (!s) {
		uint64_t expect = 0;

		/* A stream continued across exec keeps its offsets. */
		for (i = 0; i < r->ns; i++)
			if (r->s[i].tid == tid)
				expect = r->s[i].next_off;
		if (r->ns >= MAXS)
			return -ENOSPC;
		s = &r->s[r->ns++];
		memset(s, 0, sizeof(*s));
		s->pid = pid;
		s->tid = tid;
		s->img = img;
		s->next_off = expect;
	}
	if (off != s->next_off)
		s->offset_errors++;
	if (s->len + n > s->cap) {
		size_t cap = (s->len + n) * 2;
		uint8_t *p = realloc(s->data, cap);

		if (!p)
			return -ENOMEM;
		s->data = p;
		s->cap = cap;
	}
	memcpy(s->data + s->len, d, n);
	s->len += n;
	s->next_off = off + n;
	return 0;
}

static int on_sb(void *ctx, const void *p, size_t size)
{
	struct rec *r = ctx;
	struct perf_event_header h;
	const uint8_t *b = p;

	memcpy(&h, p, sizeof(h));
	if (h.size != size || size < sizeof(h) + 24) {
		r->bad_records++;
		return 0;
	}
	switch (h.type) {
	case PERF_RECORD_COMM: {
		uint32_t pid;

		memcpy(&pid, b + 8, 4);
		if (h.misc & PERF_RECORD_MISC_COMM_EXEC) {
			int *s = pid_slot(r, pid, 1);

			r->n_comm_exec++;
			if (s)
				*s = r->next_img++;
		}
		break;
	}
	case PERF_RECORD_MMAP2: {
		struct map *m;
		uint32_t pid;

		if (r->nm >= MAXM || size < 8 + 64 + 24)
			break;
		m = &r->m[r->nm++];
		memcpy(&pid, b + 8, 4);
		m->img = cur_img(r, pid);
		memcpy(&m->addr, b + 16, 8);
		memcpy(&m->len, b + 24, 8);
		memcpy(&m->pgoff, b + 32, 8);
		snprintf(m->path, sizeof(m->path), "%s", (const char *)b + 72);
		if (h.misc & PERF_RECORD_MISC_MMAP_BUILD_ID)
			r->n_mmap_bid++;
		break;
	}
	case PERF_RECORD_FORK: {
		uint32_t pid, ppid;
		int from, to, i, n;

		r->n_fork++;
		memcpy(&pid, b + 8, 4);
		memcpy(&ppid, b + 12, 4);
		if (pid == ppid)
			break;
		/* A new process starts with a copy of its parent's mappings. */
		from = cur_img(r, ppid);
		to = r->next_img++;
		*pid_slot(r, pid, 1) = to;
		n = r->nm;
		for (i = 0; i < n && r->nm < MAXM; i++)
			if (r->m[i].img == from) {
				r->m[r->nm] = r->m[i];
				r->m[r->nm++].img = to;
			}
		break;
	}
	case PERF_RECORD_EXIT:
		r->n_exit++;
		break;
	case PERF_RECORD_ITRACE_START:
		r->n_itrace++;
		break;
	case PERF_RECORD_AUX:
		r->n_aux_rec++;
		break;
	case PERF_RECORD_SAMPLE: {
		struct sample *s;

		if (size != 8 + 56 || r->nsamp >= MAXSAMP) {
			r->bad_records++;
			break;
		}
		s = &r->samp[r->nsamp++];
		memcpy(&s->id, b + 8, 8);
		memcpy(&s->ip, b + 16, 8);
		memcpy(&s->pid, b + 24, 4);
		memcpy(&s->tid, b + 28, 4);
		memcpy(&s->time, b + 32, 8);
		memcpy(&s->period, b + 48, 8);
		break;
	}
	default:
		r->bad_records++;
	}
	return 0;
}

/* ---- runs of contiguous instructions ---------------------------------- */

struct run {
	uint64_t start, end, n;
};

struct runs {
	struct run *r;
	size_t n, cap;
};

static void runs_add(struct runs *rs, uint64_t start, uint64_t end, uint64_t n)
{
	if (rs->n && rs->r[rs->n - 1].end == start) {
		rs->r[rs->n - 1].end = end;
		rs->r[rs->n - 1].n += n;
		return;
	}
	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? 2 * rs->cap : 1024;
		rs->r = realloc(rs->r, rs->cap * sizeof(*rs->r));
		if (!rs->r)
			abort();
	}
	rs->r[rs->n++] = (struct run){ start, end, n };
}

struct cmp_stats {
	uint64_t decoded_insns, truth_insns, all_insns;
	int decode_errors;
	int psbs;
};

/* Decodes @s into @out; returns the number of decode errors. */
static int decode_stream(const struct rec *r, const struct stream *s, struct runs *out,
			 uint64_t *ninsn, int *time_back)
{
	struct pt_config c;
	struct pt_image *img = pt_image_alloc("emu");
	struct pt_insn_decoder *dec;
	int i, errs = 0, status;
	uint64_t last_time = 0;

	for (i = 0; i < r->nm; i++)
		if (r->m[i].img == s->img)
			pt_image_add_file(img, r->m[i].path, r->m[i].pgoff, r->m[i].len, NULL,
					  r->m[i].addr);
	pt_config_init(&c);
	c.begin = s->data;
	c.end = s->data + s->len;
	c.cpu.vendor = pcv_intel;
	c.cpu.family = prec_emu_cpu.family;
	c.cpu.model = prec_emu_cpu.model;
	c.cpu.stepping = prec_emu_cpu.stepping;
	pt_cpu_errata(&c.errata, &c.cpu);
	c.cpuid_0x15_eax = prec_emu_cpu.cpuid_15[0];
	c.cpuid_0x15_ebx = prec_emu_cpu.cpuid_15[1];
	c.nom_freq = prec_emu_cpu.max_nonturbo_ratio;
	c.mtc_freq = (uint8_t)g_mtc_freq;
	dec = pt_insn_alloc_decoder(&c);
	if (!dec) {
		pt_image_free(img);
		return 1;
	}
	pt_insn_set_image(dec, img);
	for (;;) {
		status = pt_insn_sync_forward(dec);
		if (status < 0)
			break;
		for (;;) {
			struct pt_insn insn;

			while (status & pts_event_pending) {
				struct pt_event ev;

				status = pt_insn_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
			}
			if (status < 0)
				break;
			status = pt_insn_next(dec, &insn, sizeof(insn));
			if (status < 0)
				break;
			runs_add(out, insn.ip, insn.ip + insn.size, 1);
			(*ninsn)++;
			if (time_back) {
				uint64_t tm = 0;
				uint32_t lost_mtc, lost_cyc;

				if (pt_insn_time(dec, &tm, &lost_mtc, &lost_cyc) >= 0) {
					if (tm < last_time) {
						uint64_t off = 0;

						pt_insn_get_offset(dec, &off);
						if (!*time_back)
							fprintf(stderr, "    time goes back at 0x%llx: %llu -> %llu\n",
								(unsigned long long)off,
								(unsigned long long)last_time,
								(unsigned long long)tm);
						(*time_back)++;
					}
					last_time = tm;
				}
			}
		}
		if (status == -pte_eos)
			break;
		{
			uint64_t off = 0;

			pt_insn_get_offset(dec, &off);
			fprintf(stderr, "    decode error tid %u at offset 0x%llx: %s\n", s->tid,
				(unsigned long long)off, pt_errstr(pt_errcode(status)));
		}
		errs++;
		if (errs > 20)
			break;
	}
	pt_insn_free_decoder(dec);
	pt_image_free(img);
	return errs;
}

/* Reads the traced part of @tid's truth: blocks while tracing was enabled. */
static int truth_runs(const char *path, uint32_t tid, struct runs *out, uint64_t *traced,
		      uint64_t *all)
{
	FILE *f = fopen(path, "r");
	char line[256];
	int on = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b, n;
		unsigned t;
		char k;

		if (line[0] == '#')
			continue;
		if (line[0] == 'B' && sscanf(line, "B %u %llx %llx %llu", &t, &a, &b, &n) == 4) {
			if (t != tid)
				continue;
			*all += n;
			if (on) {
				runs_add(out, a, b, n);
				*traced += n;
			}
		} else if (sscanf(line, "%c %u %llx %llu", &k, &t, &a, &n) == 4 && t == tid) {
			on = k == 'R';
		}
	}
	fclose(f);
	return 0;
}

static int truth_tids(const char *path, uint32_t *tids, int max)
{
	FILE *f = fopen(path, "r");
	char line[256];
	int n = 0, i;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned t;
		char k;

		if (sscanf(line, "%c %u", &k, &t) != 2 || k == '#')
			continue;
		for (i = 0; i < n && tids[i] != t; i++)
			;
		if (i == n && n < max)
			tids[n++] = t;
	}
	fclose(f);
	return n;
}

static void rec_free(struct rec *r)
{
	int i;

	for (i = 0; i < r->ns; i++)
		free(r->s[i].data);
	free(r->samp);
	free(r);
}

static struct rec *record(struct prec_emu_config *cfg, char **argv, int *code, const char *truth)
{
	struct rec *r = calloc(1, sizeof(*r));
	struct prec_emu_ops ops = { .aux = on_aux, .sideband = on_sb };
	struct prec_diag d = { 0 };
	int ws = 0, e;

	if (!r)
		return NULL;
	r->samp = calloc(MAXSAMP, sizeof(*r->samp));
	ops.ctx = r;
	cfg->plugin = plugin_path();
	cfg->argv = argv;
	cfg->truth_path = truth;
	g_mtc_freq = cfg->mtc_period;
	e = prec_emu_run(cfg, &ops, &ws, &d);
	if (e < 0) {
		fprintf(stderr, "    prec_emu_run: %d %s (%s)\n", e, d.msg, d.hint);
		rec_free(r);
		return NULL;
	}
	*code = prec_emu_exit_code(ws);
	return r;
}

/*
 * Compares the decoded flow of every thread with the truth. Returns the
 * number of traced instructions over all threads, or -1 on a mismatch.
 */
static long long compare_all(struct rec *r, const char *truth, int check_time)
{
	uint32_t tids[64];
	int nt = truth_tids(truth, tids, 64), i, j, bad = 0;
	long long total = 0;

	T_OK(nt > 0);
	for (i = 0; i < r->ns; i++)
		T_EQ_INT(r->s[i].offset_errors, 0);
	for (i = 0; i < nt; i++) {
		struct runs dr = { 0 }, tr = { 0 };
		uint64_t dn = 0, tn = 0, all = 0;
		int errs = 0, back = 0;
		size_t k;

		for (j = 0; j < r->ns; j++)
			if (r->s[j].tid == tids[i])
				errs += decode_stream(r, &r->s[j], &dr, &dn, check_time ? &back : NULL);
		truth_runs(truth, tids[i], &tr, &tn, &all);
		T_EQ_INT(errs, 0);
		T_EQ_U64(dn, tn);
		T_EQ_U64(dr.n, tr.n);
		T_EQ_INT(back, 0);
		for (k = 0; k < dr.n && k < tr.n; k++) {
			if (dr.r[k].start != tr.r[k].start || dr.r[k].end != tr.r[k].end ||
			    dr.r[k].n != tr.r[k].n) {
				fprintf(stderr,
					"    tid %u run %zu: decoded %llx-%llx (%llu) truth %llx-%llx (%llu)\n",
					tids[i], k, (unsigned long long)dr.r[k].start,
					(unsigned long long)dr.r[k].end, (unsigned long long)dr.r[k].n,
					(unsigned long long)tr.r[k].start,
					(unsigned long long)tr.r[k].end, (unsigned long long)tr.r[k].n);
				bad = 1;
				break;
			}
		}
		if (dn != tn || dr.n != tr.n || errs || back)
			bad = 1;
		if (bad && getenv("PTREC_EMU_DUMP")) {
			/* Debugging aid: both run lists side by side. */
			char fn[600];
			FILE *f;

			snprintf(fn, sizeof(fn), "%s/runs.%u", getenv("PTREC_EMU_DUMP"), tids[i]);
			f = fopen(fn, "w");
			for (k = 0; f && (k < dr.n || k < tr.n); k++)
				fprintf(f, "%zu %llx-%llx %llu | %llx-%llx %llu\n", k,
					k < dr.n ? (unsigned long long)dr.r[k].start : 0,
					k < dr.n ? (unsigned long long)dr.r[k].end : 0,
					k < dr.n ? (unsigned long long)dr.r[k].n : 0,
					k < tr.n ? (unsigned long long)tr.r[k].start : 0,
					k < tr.n ? (unsigned long long)tr.r[k].end : 0,
					k < tr.n ? (unsigned long long)tr.r[k].n : 0);
			if (f)
				fclose(f);
			for (j = 0; j < r->ns; j++) {
				snprintf(fn, sizeof(fn), "%s/aux.%u.%d", getenv("PTREC_EMU_DUMP"),
					 r->s[j].tid, r->s[j].img);
				f = fopen(fn, "w");
				if (f) {
					fwrite(r->s[j].data, 1, r->s[j].len, f);
					fclose(f);
				}
			}
		}
		total += (long long)tn;
		free(dr.r);
		free(tr.r);
	}
	T_OK(!bad);
	return bad ? -1 : total;
}

static char *truth_file(void)
{
	static char p[600];

	snprintf(p, sizeof(p), "%s/truth.txt", t_tmpdir());
	return p;
}

static void run_case(const char *prog, const char *arg, struct prec_emu_config *cfg,
		     int want_code, int check_time)
{
	char *argv[] = { prog_path(prog), (char *)arg, NULL };
	int code = -1;
	struct rec *r = record(cfg, argv, &code, truth_file());
	long long n;

	T_OK(r != NULL);
	if (!r)
		return;
	T_EQ_INT(code, want_code);
	T_EQ_INT(r->bad_records, 0);
	T_OK(r->n_itrace >= 1);
	T_OK(r->n_aux_rec >= 1);
	T_OK(r->n_comm_exec >= 1);
	T_OK(r->nm >= 2);
	n = compare_all(r, truth_file(), check_time);
	T_OK(n > 1000);
	rec_free(r);
}

static void calls_basic(void)
{
	struct prec_emu_config c = { 0 };

	run_case("calls", "3", &c, 0, 0);
}

static void calls_noretcomp(void)
{
	struct prec_emu_config c = { .noretcomp = true };

	run_case("calls", "3", &c, 0, 0);
}

static void calls_timing(void)
{
	struct prec_emu_config c = { .tsc = true, .mtc = true, .cyc = true, .mtc_period = 3 };

	run_case("calls", "3", &c, 0, 1);
}

static void longjmp_flow(void)
{
	struct prec_emu_config c = { 0 };

	run_case("longjmp", "7", &c, 0, 0);
}

static void longjmp_noretcomp(void)
{
	struct prec_emu_config c = { .noretcomp = true, .tsc = true };

	run_case("longjmp", "7", &c, 0, 0);
}

static void signals_flow(void)
{
	struct prec_emu_config c = { 0 };

	run_case("signals", "4", &c, 0, 0);
}

static void threads_flow(void)
{
	struct prec_emu_config c = { .tsc = true, .mtc = true, .mtc_period = 2 };
	char *argv[] = { prog_path("threads"), "3000", NULL };
	int code = -1, i, n = 0;
	struct rec *r = record(&c, argv, &code, truth_file());

	T_OK(r != NULL);
	if (!r)
		return;
	T_EQ_INT(code, 0);
	/* The main thread and four workers, each with its own stream. */
	for (i = 0; i < r->ns; i++)
		n++;
	T_OK(n >= 5);
	T_OK(r->n_itrace >= 5);
	T_OK(r->n_fork >= 4);
	T_OK(r->n_exit >= 5);
	T_OK(compare_all(r, truth_file(), 0) > 4 * 3000 * 5);
	rec_free(r);
}

static void fork_exec_flow(void)
{
	struct prec_emu_config c = { 0 };
	char *argv[] = { prog_path("forkexec"), "500", NULL };
	int code = -1, i, pids = 0, imgs = 0;
	struct rec *r = record(&c, argv, &code, truth_file());

	T_OK(r != NULL);
	if (!r)
		return;
	/* The exec'd program's exit status comes through. */
	T_EQ_INT(code, 3);
	T_EQ_INT(r->n_comm_exec, 2);
	T_OK(r->n_fork >= 1);
	for (i = 0; i < r->ns; i++) {
		int j, seen = 0;

		for (j = 0; j < i; j++)
			seen |= r->s[j].pid == r->s[i].pid;
		pids += !seen;
		imgs = r->s[i].img > imgs ? r->s[i].img : imgs;
	}
	T_EQ_INT(pids, 2);
	T_OK(imgs >= 2);
	T_OK(compare_all(r, truth_file(), 0) > 3000);
	rec_free(r);
}

static const struct t_case cases[] = {
	T(calls_basic),
	T(calls_noretcomp),
	T(calls_timing),
	T(longjmp_flow),
	T(longjmp_noretcomp),
	T(signals_flow),
	T(threads_flow),
	T(fork_exec_flow),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}

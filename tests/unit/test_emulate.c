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
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "record/emulate.h"
#include "harness.h"

#define MAXS 64
#define MAXM 256
#define MAXSAMP 100000

static unsigned g_mtc_freq; /* the recording's mtc_period, for the decoder */
static uint64_t g_last_time; /* libipt's time at the last decoded instruction */

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

		if (size != 56 || r->nsamp >= MAXSAMP) {
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
					g_last_time = tm;
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
	struct runs tr = { 0 };
	uint64_t tn = 0, all = 0;
	uint32_t tid;

	run_case("calls", "3", &c, 0, 1);
	/*
	 * One thread: its clock is its instruction count, so libipt's time
	 * at the last instruction must be that count (less the final
	 * exit_group, give or take the CYC resolution of a block).
	 */
	T_EQ_INT(truth_tids(truth_file(), &tid, 1), 1);
	truth_runs(truth_file(), tid, &tr, &tn, &all);
	T_OK(g_last_time + 600 > all && g_last_time <= all);
	fprintf(stderr, "    time %llu, instructions %llu\n", (unsigned long long)g_last_time,
		(unsigned long long)all);
	free(tr.r);
}

/* A long PSB period and a CYC threshold change the packets, not the flow. */
static void calls_psb_cyc(void)
{
	struct prec_emu_config c = { .psb_period = 5, .cyc = true, .cyc_thresh = 4, .tsc = true };

	run_case("calls", "5", &c, 0, 0);
}

/* branch=0: PSB+ and timing only, no instruction can be decoded. */
static void calls_no_branch(void)
{
	struct prec_emu_config c = { .no_branch = true, .tsc = true };
	char *argv[] = { prog_path("calls"), "1", NULL };
	int code = -1, i;
	uint64_t n = 0;
	struct runs dr = { 0 };
	struct rec *r = record(&c, argv, &code, NULL);

	T_OK(r != NULL);
	if (!r)
		return;
	T_EQ_INT(code, 0);
	T_EQ_INT(r->ns, 1);
	for (i = 0; i < r->ns; i++) {
		T_OK(r->s[i].len >= 16);
		decode_stream(r, &r->s[i], &dr, &n, NULL);
	}
	T_EQ_U64(n, 0);
	free(dr.r);
	rec_free(r);
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


/* File offset, link-time address and size of function @name in @path. */
static int func_info(const char *path, const char *name, uint64_t *off, uint64_t *vaddr,
		     uint64_t *size)
{
	int fd = open(path, O_RDONLY), found = 0;
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t i, n;

	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && !found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		d = elf_getdata(scn, NULL);
		for (i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *nm;

			if (!gelf_getsym(d, (int)i, &sym))
				continue;
			nm = elf_strptr(e, sh.sh_link, sym.st_name);
			if (nm && !strcmp(nm, name) && GELF_ST_TYPE(sym.st_info) == STT_FUNC) {
				*vaddr = sym.st_value;
				*size = sym.st_size;
				found = 1;
				break;
			}
		}
	}
	if (found && !elf_getphdrnum(e, &n)) {
		found = 0;
		for (i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    *vaddr >= ph.p_vaddr && *vaddr < ph.p_vaddr + ph.p_filesz) {
				*off = *vaddr - ph.p_vaddr + ph.p_offset;
				found = 1;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return found ? 0 : -1;
}

/* Runtime address of the mapped file offset @off of @path, from MMAP2 records. */
static uint64_t runtime_addr(const struct rec *r, const char *path, uint64_t off)
{
	int i;

	for (i = 0; i < r->nm; i++)
		if (!strcmp(r->m[i].path, path) && off >= r->m[i].pgoff &&
		    off < r->m[i].pgoff + r->m[i].len)
			return r->m[i].addr + off - r->m[i].pgoff;
	return 0;
}

/* Decodes every stream of @tid into @out; returns decode errors. */
static int decode_tid(const struct rec *r, uint32_t tid, struct runs *out, uint64_t *n)
{
	int j, errs = 0;

	for (j = 0; j < r->ns; j++)
		if (r->s[j].tid == tid)
			errs += decode_stream(r, &r->s[j], out, n, NULL);
	return errs;
}

/* Counts the truth's pause and resume points of @tid. */
static void truth_marks(const char *path, uint32_t tid, int *pauses, int *resumes)
{
	FILE *f = fopen(path, "r");
	char line[256];

	*pauses = *resumes = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned t;
		char k;

		if (sscanf(line, "%c %u", &k, &t) == 2 && t == tid) {
			*pauses += k == 'P';
			*resumes += k == 'R';
		}
	}
	if (f)
		fclose(f);
}

static int count_samples(const struct rec *r, uint64_t id, uint64_t ip)
{
	int i, n = 0;

	for (i = 0; i < r->nsamp; i++)
		n += r->samp[i].id == id && (!ip || r->samp[i].ip == ip);
	return n;
}

/* uprobe resume at window_fn entry, uretprobe pause at its return. */
/* posix_spawn and system: vfork-style children that exec other programs. */
static void spawn_flow(void)
{
	struct prec_emu_config c = { .tsc = true };
	char *argv[] = { prog_path("spawn"), NULL };
	int code = -1, i, j, tids = 0;
	struct rec *r = record(&c, argv, &code, truth_file());

	T_OK(r != NULL);
	if (!r)
		return;
	T_EQ_INT(code, 5);
	/* spawn, /bin/true, sh: three programs, each exec'd child traced */
	T_EQ_INT(r->n_comm_exec, 3);
	for (i = 0; i < r->ns; i++) {
		for (j = 0; j < i && r->s[j].tid != r->s[i].tid; j++)
			;
		tids += j == i;
	}
	T_EQ_INT(tids, 3);
	T_OK(compare_all(r, truth_file(), 0) > 10000);
	rec_free(r);
}

static void uprobe_window(void)
{
	const char *prog = prog_path("window");
	uint64_t off = 0, va = 0, size = 0, rt, k, insns = 0;
	struct prec_emu_trigger tr[2] = {
		{ .kind = PREC_EMU_UPROBE, .action = PREC_EMU_ACT_RESUME, .event_index = 1 },
		{ .kind = PREC_EMU_URETPROBE, .action = PREC_EMU_ACT_PAUSE, .event_index = 2 },
	};
	struct prec_emu_config c = { .start_paused = true, .triggers = tr, .ntriggers = 2 };
	char *argv[] = { (char *)prog, "5", NULL };
	struct runs dr = { 0 };
	int code = -1, p, rs;
	struct rec *r;

	T_OK(func_info(prog, "window_fn", &off, &va, &size) == 0);
	tr[0].path = tr[1].path = prog;
	tr[0].offset = tr[1].offset = off;
	r = record(&c, argv, &code, truth_file());
	T_OK(r != NULL);
	if (!r)
		return;
	T_EQ_INT(code, 0);
	T_OK(compare_all(r, truth_file(), 0) > 0);
	rt = runtime_addr(r, prog, off);
	T_OK(rt != 0);
	T_EQ_INT(r->ns, 1);
	if (r->ns == 1) {
		T_EQ_INT(decode_tid(r, r->s[0].tid, &dr, &insns), 0);
		truth_marks(truth_file(), r->s[0].tid, &p, &rs);
		T_EQ_INT(rs, 5);
		T_EQ_INT(p, 5);
	}
	/* Nothing outside window_fn, and each of the 5 calls in full. */
	for (k = 0, p = 0; k < dr.n; k++) {
		T_OK(dr.r[k].start >= rt && dr.r[k].end <= rt + size);
		p += dr.r[k].start == rt;
	}
	T_EQ_INT(p, 5);
	T_OK(insns > 5 * 30);
	T_EQ_U64(insns % 5, 0);
	T_EQ_INT(count_samples(r, 2, rt), 5);
	T_EQ_INT(count_samples(r, 3, 0), 5);
	free(dr.r);
	rec_free(r);
}

/* A window on a library function (qsort in libc, mapped by ld.so's mmap). */
static void library_window(void)
{
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	uint64_t off = 0, va = 0, size = 0;
	struct prec_emu_trigger tr[2] = {
		{ .kind = PREC_EMU_UPROBE, .action = PREC_EMU_ACT_RESUME, .event_index = 1 },
		{ .kind = PREC_EMU_URETPROBE, .action = PREC_EMU_ACT_PAUSE, .event_index = 2 },
	};
	struct prec_emu_config c = { .start_paused = true, .triggers = tr, .ntriggers = 2 };
	char *argv[] = { prog_path("calls"), "1", NULL };
	int code = -1, p = 0, rs = 0;
	struct rec *r;

	if (func_info(libc, "qsort", &off, &va, &size) < 0)
		t_skip("no qsort symbol in libc");
	tr[0].path = tr[1].path = libc;
	tr[0].offset = tr[1].offset = off;
	r = record(&c, argv, &code, truth_file());
	T_OK(r != NULL);
	if (!r)
		return;
	T_EQ_INT(code, 0);
	/* qsort and the comparison callbacks it makes, nothing else. */
	T_OK(compare_all(r, truth_file(), 0) > 64 * 5);
	if (r->ns == 1)
		truth_marks(truth_file(), r->s[0].tid, &p, &rs);
	T_EQ_INT(p, 1);
	T_EQ_INT(rs, 1);
	T_EQ_INT(count_samples(r, 2, 0), 1);
	T_EQ_INT(count_samples(r, 3, 0), 1);
	rec_free(r);
}

/* Resume when getpid() returns, pause when uname() is entered. */
static void syscall_window(void)
{
	const char *prog = prog_path("window");
	uint64_t off = 0, va = 0, size = 0, ib = 0, of = 0, insns = 0, k;
	struct prec_emu_trigger tr[2] = {
		{ .kind = PREC_EMU_SYS_EXIT, .action = PREC_EMU_ACT_RESUME, .event_index = 1, .nr = 39 },
		{ .kind = PREC_EMU_SYS_ENTER, .action = PREC_EMU_ACT_PAUSE, .event_index = 2, .nr = 63 },
	};
	struct prec_emu_config c = { .start_paused = true, .triggers = tr, .ntriggers = 2 };
	char *argv[] = { (char *)prog, "5", NULL };
	struct runs dr = { 0 };
	int code = -1, saw_ib = 0, saw_of = 0, saw_win = 0;
	struct rec *r = record(&c, argv, &code, truth_file());

	T_OK(r != NULL);
	if (!r)
		return;
	T_EQ_INT(code, 0);
	T_OK(compare_all(r, truth_file(), 0) > 0);
	T_OK(func_info(prog, "in_between", &off, &va, &size) == 0);
	ib = runtime_addr(r, prog, off);
	T_OK(func_info(prog, "outside_fn", &off, &va, &size) == 0);
	of = runtime_addr(r, prog, off);
	T_OK(func_info(prog, "window_fn", &off, &va, &size) == 0);
	if (r->ns == 1)
		T_EQ_INT(decode_tid(r, r->s[0].tid, &dr, &insns), 0);
	for (k = 0; k < dr.n; k++) {
		saw_ib |= dr.r[k].start == ib;
		saw_of |= dr.r[k].start == of;
		saw_win |= dr.r[k].start == runtime_addr(r, prog, off);
	}
	T_OK(saw_ib && saw_of && !saw_win);
	/* in_between calls outside_fn 20 times. */
	T_OK(insns > 20 * 3);
	T_EQ_INT(count_samples(r, 2, 0), 1);
	T_EQ_INT(count_samples(r, 3, 0), 1);
	free(dr.r);
	rec_free(r);
}

/* Resume at getpid() entry, pause at its exit: user-only trace sees nothing. */
static void syscall_inside(void)
{
	struct prec_emu_trigger tr[2] = {
		{ .kind = PREC_EMU_SYS_ENTER, .action = PREC_EMU_ACT_RESUME, .event_index = 1, .nr = 39 },
		{ .kind = PREC_EMU_SYS_EXIT, .action = PREC_EMU_ACT_PAUSE, .event_index = 2, .nr = 39 },
	};
	struct prec_emu_config c = { .start_paused = true, .tsc = true, .triggers = tr,
				     .ntriggers = 2 };
	char *argv[] = { prog_path("window"), "2", NULL };
	int code = -1;
	struct rec *r = record(&c, argv, &code, truth_file());

	T_OK(r != NULL);
	if (!r)
		return;
	T_EQ_INT(code, 0);
	T_EQ_INT(compare_all(r, truth_file(), 0), 0);
	/* The resume still wrote PSB+ and timing, but no instruction. */
	T_EQ_INT(r->ns, 1);
	T_OK(r->ns == 1 && r->s[0].len >= 16);
	rec_free(r);
}

/* Two instruction counters: resume every 7000, pause every 11000. */
static void counter_window(void)
{
	struct prec_emu_trigger tr[2] = {
		{ .kind = PREC_EMU_INSNS, .action = PREC_EMU_ACT_RESUME, .event_index = 1, .period = 7000 },
		{ .kind = PREC_EMU_INSNS, .action = PREC_EMU_ACT_PAUSE, .event_index = 2, .period = 11000 },
	};
	struct prec_emu_config c = { .start_paused = true, .triggers = tr, .ntriggers = 2,
				     .tsc = true, .mtc = true, .cyc = true };
	char *argv[] = { prog_path("calls"), "2", NULL };
	int code = -1, p = 0, rs = 0;
	struct rec *r = record(&c, argv, &code, truth_file());
	long long traced;
	uint64_t all = 0, tn = 0;
	struct runs tr_runs = { 0 };

	T_OK(r != NULL);
	if (!r)
		return;
	T_EQ_INT(code, 0);
	traced = compare_all(r, truth_file(), 0);
	T_OK(traced > 0);
	T_EQ_INT(r->ns, 1);
	if (r->ns == 1) {
		truth_runs(truth_file(), r->s[0].tid, &tr_runs, &tn, &all);
		truth_marks(truth_file(), r->s[0].tid, &p, &rs);
	}
	/* Every period ends in a sample (a TB boundary late at most). */
	T_EQ_INT(count_samples(r, 2, 0), (int)(all / 7000));
	T_EQ_INT(count_samples(r, 3, 0), (int)(all / 11000));
	T_OK(p > 3 && rs > 3);
	T_OK((uint64_t)traced < all);
	free(tr_runs.r);
	rec_free(r);
}

static int fail_aux(void *ctx, uint32_t pid, uint32_t tid, uint64_t off, const void *d, size_t n)
{
	return -ECANCELED;
}

/* Bad inputs: each gets a clear error, none crashes or hangs. */
static void bad_inputs(void)
{
	struct prec_emu_ops ops = { .aux = on_aux, .sideband = on_sb };
	struct prec_emu_config c = { 0 };
	struct prec_diag d = { 0 };
	char path[4096], script[600], notelf[600];
	char *argv[] = { NULL, NULL };
	int ws = 0, fd;

	/* no such program */
	T_EQ_INT(prec_emu_check_program("no-such-program-xyz", path, sizeof(path), &d), -ENOENT);
	T_CONTAINS(d.msg, "no-such-program-xyz");
	/* not x86-64: a text file, and a script whose interpreter is missing */
	snprintf(notelf, sizeof(notelf), "%s/notelf", t_tmpdir());
	fd = open(notelf, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	T_OK(fd >= 0 && write(fd, "hello\n", 6) == 6);
	close(fd);
	memset(&d, 0, sizeof(d));
	T_EQ_INT(prec_emu_check_program(notelf, path, sizeof(path), &d), -ENOEXEC);
	T_CONTAINS(d.msg, "not an x86-64");
	snprintf(script, sizeof(script), "%s/script", t_tmpdir());
	fd = open(script, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	T_OK(fd >= 0 && write(fd, "#!/nonexistent/sh\n", 18) == 18);
	close(fd);
	T_EQ_INT(prec_emu_check_program(script, path, sizeof(path), &d), -ENOEXEC);
	/* a script with a real interpreter is fine */
	fd = open(script, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	T_OK(fd >= 0 && write(fd, "#!/bin/sh\nexit 4\n", 17) == 17);
	close(fd);
	T_EQ_INT(prec_emu_check_program(script, path, sizeof(path), &d), 0);
	/* missing qemu */
	argv[0] = prog_path("calls");
	c.argv = argv;
	c.plugin = plugin_path();
	c.qemu = "/nonexistent/qemu-x86_64";
	memset(&d, 0, sizeof(d));
	T_EQ_INT(prec_emu_run(&c, &ops, &ws, &d), -ENOENT);
	T_CONTAINS(d.hint, "apt-get install qemu-user");
	/* missing plugin */
	c.qemu = NULL;
	c.plugin = "/nonexistent/ptrec-emu.so";
	T_EQ_INT(prec_emu_run(&c, &ops, &ws, &d), -ENOENT);
	T_CONTAINS(d.msg, "plugin");
	/* a plugin QEMU cannot load (not a shared object) */
	c.plugin = notelf;
	memset(&d, 0, sizeof(d));
	T_EQ_INT(prec_emu_run(&c, &ops, &ws, &d), -ENOEXEC);
	T_CONTAINS(d.msg, "could not load");
	/* program that is not x86-64 */
	c.plugin = plugin_path();
	argv[0] = notelf;
	T_EQ_INT(prec_emu_run(&c, &ops, &ws, &d), -ENOEXEC);
	/* bad trigger */
	{
		struct prec_emu_trigger tr = { .kind = PREC_EMU_INSNS, .period = 0 };

		argv[0] = prog_path("calls");
		c.triggers = &tr;
		c.ntriggers = 1;
		T_EQ_INT(prec_emu_run(&c, &ops, &ws, &d), -EINVAL);
		tr.kind = PREC_EMU_UPROBE;
		tr.path = "/nonexistent/lib.so";
		T_EQ_INT(prec_emu_run(&c, &ops, &ws, &d), -ENOENT);
		c.triggers = NULL;
		c.ntriggers = 0;
	}
	/* NULL arguments */
	T_EQ_INT(prec_emu_run(NULL, &ops, &ws, &d), -EINVAL);
	T_EQ_INT(prec_emu_run(&c, NULL, &ws, &d), -EINVAL);
}

/* A script runs under its interpreter, and its exit status comes back. */
static void script_status(void)
{
	struct prec_emu_ops ops = { .aux = on_aux, .sideband = on_sb };
	struct prec_emu_config c = { 0 };
	struct prec_diag d = { 0 };
	char script[600];
	char *argv[] = { script, NULL };
	struct rec *r = calloc(1, sizeof(*r));
	int ws = 0, fd;

	r->samp = calloc(MAXSAMP, sizeof(*r->samp));
	ops.ctx = r;
	snprintf(script, sizeof(script), "%s/script", t_tmpdir());
	fd = open(script, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	T_OK(fd >= 0 && write(fd, "#!/bin/sh\nexit 4\n", 17) == 17);
	close(fd);
	c.argv = argv;
	c.plugin = plugin_path();
	T_EQ_INT(prec_emu_run(&c, &ops, &ws, &d), 0);
	T_EQ_INT(prec_emu_exit_code(ws), 4);
	T_OK(r->ns >= 1);
	rec_free(r);
}

/* A callback error stops the recording and kills the workload. */
static void callback_error(void)
{
	struct prec_emu_ops ops = { .aux = fail_aux, .sideband = on_sb };
	struct prec_emu_config c = { 0 };
	struct prec_diag d = { 0 };
	char *argv[] = { prog_path("loop"), "100000", NULL };
	struct rec *r = calloc(1, sizeof(*r));
	int ws = 0;
	uint64_t t0 = 0;

	r->samp = calloc(MAXSAMP, sizeof(*r->samp));
	ops.ctx = r;
	c.argv = argv;
	c.plugin = plugin_path();
	t0 = (uint64_t)time(NULL);
	T_EQ_INT(prec_emu_run(&c, &ops, &ws, &d), -ECANCELED);
	T_OK(WIFSIGNALED(ws));
	T_OK((uint64_t)time(NULL) - t0 < 30);
	rec_free(r);
}

static int term_after_aux(void *ctx, uint32_t pid, uint32_t tid, uint64_t off, const void *d,
			  size_t n)
{
	static int sent;

	if (!sent++)
		kill(getpid(), SIGTERM);
	return on_aux(ctx, pid, tid, off, d, n);
}

/* SIGTERM to the recorder goes to the workload, whose status comes back. */
static void signal_forward(void)
{
	struct prec_emu_ops ops = { .aux = term_after_aux, .sideband = on_sb };
	struct prec_emu_config c = { 0 };
	struct prec_diag d = { 0 };
	char *argv[] = { prog_path("loop"), "100000", NULL };
	struct rec *r = calloc(1, sizeof(*r));
	int ws = 0;

	r->samp = calloc(MAXSAMP, sizeof(*r->samp));
	ops.ctx = r;
	c.argv = argv;
	c.plugin = plugin_path();
	T_EQ_INT(prec_emu_run(&c, &ops, &ws, &d), 0);
	T_EQ_INT(prec_emu_exit_code(ws), 128 + SIGTERM);
	rec_free(r);
}

/* The plugin refuses to run outside the recorder, with a clear message. */
static void plugin_alone(void)
{
	char cmd[1200];
	FILE *p;
	char out[1024] = "";
	size_t n;

	snprintf(cmd, sizeof(cmd), "qemu-x86_64 -plugin %s %s 2>&1", plugin_path(),
		 prog_path("calls"));
	p = popen(cmd, "r");
	T_OK(p != NULL);
	if (!p)
		return;
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	T_OK(pclose(p) != 0);
	T_CONTAINS(out, "ptrec record --emulate");
}

static void config_bits(void)
{
	struct prec_emu_config c = { 0 };

	/* tsc, mtc, branch, mtc_period 3, cyc_thresh 2, psb_period 5, noretcomp, cyc */
	prec_emu_set_pt_config(&c, (1ull << 10) | (1ull << 9) | (1ull << 13) | (3ull << 14) |
				       (2ull << 19) | (5ull << 24) | (1ull << 11) | (1ull << 1));
	T_OK(c.tsc && c.mtc && !c.no_branch && c.noretcomp && c.cyc);
	T_EQ_INT(c.mtc_period, 3);
	T_EQ_INT(c.cyc_thresh, 2);
	T_EQ_INT(c.psb_period, 5);
	prec_emu_set_pt_config(&c, 0);
	T_OK(!c.tsc && !c.mtc && c.no_branch && !c.noretcomp && !c.cyc);
	T_EQ_INT(prec_emu_exit_code(0x0300), 3);
	T_EQ_INT(prec_emu_exit_code(9), 137);
}

static const struct t_case cases[] = {
	T(calls_basic),
	T(calls_noretcomp),
	T(calls_timing),
	T(calls_psb_cyc),
	T(calls_no_branch),
	T(longjmp_flow),
	T(longjmp_noretcomp),
	T(signals_flow),
	T(threads_flow),
	T(fork_exec_flow),
	T(spawn_flow),
	T(uprobe_window),
	T(library_window),
	T(syscall_window),
	T(syscall_inside),
	T(counter_window),
	T(bad_inputs),
	T(script_status),
	T(callback_error),
	T(signal_forward),
	T(plugin_alone),
	T(config_bits),
};

int main(int argc, char **argv)
{
	/* Without qemu-user there is nothing to run the tracer in. */
	if (system("command -v qemu-x86_64 >/dev/null 2>&1") != 0 || access(plugin_path(), R_OK)) {
		printf("skip test_emulate: needs qemu-x86_64 (apt-get install qemu-user) and %s\n",
		       plugin_path());
		printf("# counts: 0 0 %zu\n", T_N(cases));
		return 0;
	}
	return t_main(argc, argv, cases, T_N(cases));
}

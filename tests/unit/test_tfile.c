// SPDX-License-Identifier: MIT
/* Trace file writer/reader: round trips, damage, cuts, full disks, async policy. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include "harness.h"
#include "tracefile/tfile.h"
#include "base/util.h"

/* ---- helpers ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fill_random(uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(rnd() >> 24);
}

/* Compressible bytes shaped a little like PT: runs of TNT and TIP-ish packets. */
static void fill_ptlike(uint8_t *p, size_t n, uint32_t seed)
{
	uint64_t ip = 0x401000 + seed * 0x100;
	size_t i = 0;

	while (i < n) {
		if (i % 64 < 40) {
			uint8_t v = (uint8_t)(0x02 | ((i / 64 + seed) & 0x3c) << 1);

			p[i++] = v;
		} else {
			p[i++] = 0x4d;
			ip += 0x10 + (i % 7);
			for (int k = 0; k < 6 && i < n; k++)
				p[i++] = (uint8_t)(ip >> (8 * k));
		}
	}
}

static const char *tpath(const char *name)
{
	static char buf[4][256];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", t_tmpdir(), name);
	return buf[k];
}

static uint8_t *slurp(const char *path, size_t *len)
{
	struct stat sb;
	uint8_t *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &sb) < 0)
		return NULL;
	p = malloc((size_t)sb.st_size + 1);
	if (p && prec_read_full(fd, p, (size_t)sb.st_size) != sb.st_size) {
		free(p);
		p = NULL;
	}
	close(fd);
	*len = (size_t)sb.st_size;
	return p;
}

static uint32_t rd32(const uint8_t *x)
{
	return (uint32_t)x[0] | (uint32_t)x[1] << 8 | (uint32_t)x[2] << 16 | (uint32_t)x[3] << 24;
}

static void wr32(uint8_t *x, uint32_t v)
{
	x[0] = (uint8_t)v, x[1] = (uint8_t)(v >> 8), x[2] = (uint8_t)(v >> 16),
	x[3] = (uint8_t)(v >> 24);
}

struct dlog {
	int n;
	struct prec_tfile_damage d[256];
};

static void on_dmg(void *ctx, const struct prec_tfile_damage *d)
{
	struct dlog *l = ctx;

	if (l->n < (int)T_N(l->d))
		l->d[l->n] = *d;
	l->n++;
}

static struct prec_tfile_wopts opts(int level, bool async)
{
	struct prec_tfile_wopts o;

	prec_tfile_wopts_init(&o);
	o.level = level;
	o.async = async;
	return o;
}

/* One chunk header as the spec describes it (independent of the writer). */
static size_t put_chunk(uint8_t *out, unsigned type, unsigned flags, uint32_t raw,
			const void *payload, uint32_t stored, int32_t cpu, int32_t tid,
			uint64_t arg)
{
	size_t pad = (8 - stored % 8) % 8;

	memset(out, 0, 40 + stored + pad);
	wr32(out, PREC_TFILE_CHUNK_MAGIC);
	out[4] = (uint8_t)type, out[5] = (uint8_t)(type >> 8);
	out[6] = (uint8_t)flags, out[7] = (uint8_t)(flags >> 8);
	wr32(out + 8, raw);
	wr32(out + 12, stored);
	wr32(out + 16, (uint32_t)cpu);
	wr32(out + 20, (uint32_t)tid);
	wr32(out + 24, (uint32_t)arg);
	wr32(out + 28, (uint32_t)(arg >> 32));
	memcpy(out + 40, payload, stored);
	wr32(out + 32, prec_crc32c(0, out + 40, stored));
	wr32(out + 36, prec_crc32c(0, out, 36));
	return 40 + stored + pad;
}

static size_t put_fhdr(uint8_t *out, uint16_t version)
{
	memset(out, 0, 32);
	memcpy(out, PREC_TFILE_MAGIC, 8);
	out[8] = (uint8_t)version, out[9] = (uint8_t)(version >> 8);
	out[10] = 32;
	wr32(out + 28, prec_crc32c(0, out, 28));
	return 32;
}

/* ---- fixture: one of everything ---- */

static const char *const fx_cmdline[] = { "ptrec", "record", "-e", "intel_pt//u", "--", "ls" };
static const char *const fx_argv[] = { "ls", "-l", "/" };
static const uint64_t fx_etm0[] = { 0x4040, 0x123456789abcdef0ull, 7 };
static const struct prec_tfile_etm fx_etm[] = { { 0, 0x4040, 3, fx_etm0 }, { 3, 0x5050, 0, NULL } };
static const uint64_t fx_ids0[] = { 11, 12 }, fx_ids1[] = { 13, 14 }, fx_ids2[] = { 15 };

static void fx_info(struct prec_tfile_info *i)
{
	memset(i, 0, sizeof(*i));
	i->flags = PREC_TFILE_F_EMULATED;
	i->created_ns = 1700000000123456789ull;
	i->hostname = "tracebox";
	i->kernel_release = "6.18.0-test";
	i->ptrec_version = "0.1";
	i->cmdline_argc = T_N(fx_cmdline);
	i->cmdline_argv = fx_cmdline;
	i->workload_argc = T_N(fx_argv);
	i->workload_argv = fx_argv;
}

static void fx_machine(struct prec_tfile_machine *m)
{
	memset(m, 0, sizeof(*m));
	strcpy(m->arch, "x86_64");
	strcpy(m->vendor, "GenuineIntel");
	m->flags = PREC_TFILE_M_CAP_USER_TIME_ZERO | PREC_TFILE_M_PER_CPU;
	m->family = 6, m->model = 0x55, m->stepping = 4;
	for (int k = 0; k < 4; k++) {
		m->cpuid_14_0[k] = 0x1000u + (uint32_t)k;
		m->cpuid_14_1[k] = 0x2000u + (uint32_t)k;
	}
	m->cpuid_15[0] = 2, m->cpuid_15[1] = 168, m->cpuid_15[2] = 25000000;
	m->max_nonturbo_ratio = 21;
	m->nominal_freq_hz = 2100000000ull;
	m->nr_cpus = 2;
	m->page_size = 4096;
	m->time_shift = 31, m->time_mult = 123456789, m->time_zero = 0xfedcba9876543210ull;
	m->time_cycles = 77, m->time_mask = 0xffffffffffffull;
	m->pt_pmu_type = 8;
	m->pt_tsc_mask = 1u << 10, m->pt_mtc_mask = 1u << 9, m->pt_cyc_mask = 1u << 1;
	m->pt_noretcomp_mask = 1u << 11, m->pt_mtc_period_mask = 0xfu << 14;
	m->pt_cyc_thresh_mask = 0xfu << 19, m->pt_psb_period_mask = 0xfu << 24;
	m->pt_branch_mask = 1u << 13;
	m->n_etm = T_N(fx_etm);
	m->etm = fx_etm;
}

static void fx_events(struct prec_tfile_event ev[3])
{
	memset(ev, 0, 3 * sizeof(*ev));
	ev[0].name = "intel_pt//u", ev[0].spec = "intel_pt/aux-start-paused/u",
	ev[0].pmu = "intel_pt";
	ev[0].attr.type = 8, ev[0].attr.size = PREC_ATTR_SIZE, ev[0].attr.config = 0x2001;
	ev[0].attr.aux_action = PREC_AUX_START_PAUSED, ev[0].attr.exclude_kernel = 1;
	ev[0].leader = 0, ev[0].flags = PREC_TFILE_EV_AUX, ev[0].n_ids = 2, ev[0].ids = fx_ids0;
	ev[1].name = "syscalls:sys_enter_getpid",
	ev[1].spec = "syscalls:sys_enter_getpid/aux-resume/";
	ev[1].pmu = "tracepoint";
	ev[1].attr.type = PERF_TYPE_TRACEPOINT, ev[1].attr.config = 321, ev[1].attr.aux_resume = 1;
	ev[1].attr.sample_period = 1, ev[1].attr.size = PREC_ATTR_SIZE;
	ev[1].leader = 0, ev[1].flags = PREC_TFILE_EV_TRIGGER, ev[1].n_ids = 2, ev[1].ids = fx_ids1;
	ev[2].name = "dummy:u", ev[2].spec = NULL, ev[2].pmu = "software";
	ev[2].attr.type = PERF_TYPE_SOFTWARE, ev[2].attr.config = PERF_COUNT_SW_DUMMY;
	ev[2].attr.sample_id_all = 1, ev[2].attr.mmap2 = 1, ev[2].attr.size = PREC_ATTR_SIZE;
	ev[2].leader = 2, ev[2].flags = PREC_TFILE_EV_TRACKING, ev[2].n_ids = 1,
	ev[2].ids = fx_ids2;
}

/* Synthetic perf records: n records, sizes 16..256, payload from the rng. */
static size_t make_records(uint8_t *buf, size_t cap, int n, uint16_t type)
{
	size_t pos = 0;

	for (int i = 0; i < n; i++) {
		uint16_t sz = (uint16_t)(16 + 8 * (rnd() % 31));
		struct perf_event_header h = { .type = type, .misc = (uint16_t)i, .size = sz };

		if (pos + sz > cap)
			break;
		memcpy(buf + pos, &h, sizeof(h));
		fill_random(buf + pos + 8, sz - 8u);
		pos += sz;
	}
	return pos;
}

struct fx {
	uint8_t sb[2][64 << 10];
	size_t sblen[2];
	uint8_t *aux[3];
	size_t auxlen[3];
	uint8_t *img;
	size_t imglen;
	char ksyms[300000];
	uint8_t kcore[5000];
};

static struct fx *fx_new(void)
{
	struct fx *f = calloc(1, sizeof(*f));
	size_t i;

	rng = 12345;
	f->sblen[0] = make_records(f->sb[0], sizeof(f->sb[0]), 300, PERF_RECORD_MMAP2);
	f->sblen[1] = make_records(f->sb[1], sizeof(f->sb[1]), 40, PERF_RECORD_COMM);
	for (i = 0; i < 3; i++) {
		f->auxlen[i] = (1u << 20) * (i + 1) + 777 * i;
		f->aux[i] = malloc(f->auxlen[i]);
		if (i == 2)
			fill_random(f->aux[i], f->auxlen[i]);
		else
			fill_ptlike(f->aux[i], f->auxlen[i], (uint32_t)i);
	}
	f->imglen = 2500000;
	f->img = malloc(f->imglen);
	fill_ptlike(f->img, f->imglen, 99);
	for (i = 0; i + 40 < sizeof(f->ksyms); i += 32)
		snprintf(f->ksyms + i, 33, "ffffffff%08zx T sym_%-8zu\n", i, i);
	fill_random(f->kcore, sizeof(f->kcore));
	return f;
}

static void fx_free(struct fx *f)
{
	for (int i = 0; i < 3; i++)
		free(f->aux[i]);
	free(f->img);
	free(f);
}

static const int32_t aux_key[3][2] = { { 0, -1 }, { 1, -1 }, { -1, 4242 } };

/* Writes the fixture; AUX interleaved in pieces of varying size. */
static int fx_write(struct fx *f, const char *path, const struct prec_tfile_wopts *o)
{
	struct prec_tfile_writer *w;
	struct prec_tfile_info info;
	struct prec_tfile_machine m;
	struct prec_tfile_event ev[3];
	struct prec_tfile_image img = {.path = "/usr/bin/demo",
				       .build_id_size = 20,
				       .file_offset = 0x1000,
				       .size = f->imglen,
				       .vaddr = 0x401000};
	struct prec_tfile_image img2 = { .path = "[vdso]", .file_offset = 0, .size = 8192 };
	struct prec_tfile_image ref = { .path = "/usr/lib/libref.so", .build_id_size = 4,
					.build_id = { 1, 2, 3, 4 }, .file_offset = 0x2000,
					.size = 12345 };
	struct prec_tfile_stream_stats ss = { .cpu = 0, .tid = -1, .aux_records = 5, .truncated = 2,
					      .overwrite = 1, .partial = 3, .collision = 4 };
	struct prec_tfile_stats st = { .duration_ns = 999, .lost_records = 7, .lost_bytes = 64,
				       .n_streams = 1, .streams = &ss };
	size_t off[3] = { 0 }, sbo[2] = { 0 };
	int err;

	for (int i = 0; i < 20; i++)
		img.build_id[i] = (uint8_t)(0xa0 + i);
	fx_info(&info);
	fx_machine(&m);
	fx_events(ev);
	err = prec_tfile_writer_new(path, o, &w);
	if (err)
		return err;
	err |= prec_tfile_write_info(w, &info);
	err |= prec_tfile_write_machine(w, &m);
	err |= prec_tfile_write_events(w, ev, 3);
	while (off[0] < f->auxlen[0] || off[1] < f->auxlen[1] || off[2] < f->auxlen[2] ||
	       sbo[0] < f->sblen[0] || sbo[1] < f->sblen[1]) {
		for (int i = 0; i < 3; i++) {
			size_t n = (size_t)(1 + rnd() % 100000);

			n = PREC_MIN(n, f->auxlen[i] - off[i]);

			err |= prec_tfile_write_aux(w, aux_key[i][0], aux_key[i][1], off[i],
						    f->aux[i] + off[i], n);
			off[i] += n;
		}
		for (int c = 0; c < 2; c++) {
			size_t n = 0;

			/* a few whole records */
			while (sbo[c] + n < f->sblen[c] && n < 2000) {
				struct perf_event_header h;

				memcpy(&h, f->sb[c] + sbo[c] + n, sizeof(h));
				n += h.size;
			}
			if (n)
				err |= prec_tfile_write_sideband(w, c, f->sb[c] + sbo[c], n);
			sbo[c] += n;
		}
	}
	if (prec_tfile_write_image(w, &img, f->img) != 1)
		err |= 1;
	if (prec_tfile_write_image(w, &img, f->img) != 0)	/* duplicate */
		err |= 2;
	if (prec_tfile_write_image(w, &img2, f->img) != 1)
		err |= 4;
	if (prec_tfile_write_image(w, &ref, NULL) != 1 ||
	    prec_tfile_write_image(w, &ref, NULL) != 0)
		err |= 8;
	err |= prec_tfile_write_blob(w, PREC_TFILE_KSYMS, 0, f->ksyms, strlen(f->ksyms));
	err |= prec_tfile_write_blob(w, PREC_TFILE_KCORE, 0xffffffff81000000ull, f->kcore,
				     sizeof(f->kcore));
	err |= prec_tfile_write_blob(w, PREC_TFILE_MODULES, 0, "ext4 1 0 - Live 0x0\n", 20);
	err |= prec_tfile_write_chunk(w, 777, -1, -1, 5, "future", 6);
	if (!err)
		err = prec_tfile_writer_close(w, &st);
	prec_tfile_writer_free(w);
	return err;
}

static void check_info(const struct prec_tfile_info *a)
{
	struct prec_tfile_info b;

	fx_info(&b);
	T_EQ_U64(a->flags, b.flags);
	T_EQ_U64(a->created_ns, b.created_ns);
	T_EQ_STR(a->hostname, b.hostname);
	T_EQ_STR(a->kernel_release, b.kernel_release);
	T_EQ_STR(a->ptrec_version, b.ptrec_version);
	T_EQ_INT(a->cmdline_argc, b.cmdline_argc);
	T_EQ_INT(a->workload_argc, b.workload_argc);
	for (uint32_t i = 0; i < a->cmdline_argc && i < b.cmdline_argc; i++)
		T_EQ_STR(a->cmdline_argv[i], b.cmdline_argv[i]);
	for (uint32_t i = 0; i < a->workload_argc && i < b.workload_argc; i++)
		T_EQ_STR(a->workload_argv[i], b.workload_argv[i]);
}

static void check_machine(const struct prec_tfile_machine *a)
{
	struct prec_tfile_machine b;

	fx_machine(&b);
	T_EQ_STR(a->arch, b.arch);
	T_EQ_STR(a->vendor, b.vendor);
	/* every scalar between flags and n_etm */
	T_OK(!memcmp(&a->flags, &b.flags, offsetof(struct prec_tfile_machine, n_etm) -
				offsetof(struct prec_tfile_machine, flags)));
	T_EQ_INT(a->n_etm, 2);
	if (a->n_etm == 2) {
		T_EQ_INT(a->etm[0].cpu, 0);
		T_EQ_U64(a->etm[0].kind, 0x4040);
		T_EQ_INT(a->etm[0].nregs, 3);
		T_OK(a->etm[0].nregs == 3 && !memcmp(a->etm[0].regs, fx_etm0, sizeof(fx_etm0)));
		T_EQ_INT(a->etm[1].cpu, 3);
		T_EQ_INT(a->etm[1].nregs, 0);
	}
}

static void check_events(const struct prec_tfile_events *a)
{
	struct prec_tfile_event b[3];

	fx_events(b);
	T_EQ_INT(a->n, 3);
	for (uint32_t i = 0; i < a->n && i < 3; i++) {
		const struct prec_tfile_event *x = &a->ev[i], *y = &b[i];

		if (y->name)
			T_EQ_STR(x->name, y->name);
		if (y->spec)
			T_EQ_STR(x->spec, y->spec);
		else
			T_OK(x->spec == NULL);
		T_EQ_STR(x->pmu, y->pmu);
		T_OK(!memcmp(&x->attr, &y->attr, sizeof(x->attr)));
		T_EQ_INT(x->attr_size, sizeof(struct prec_attr));
		T_EQ_INT(x->leader, y->leader);
		T_EQ_U64(x->flags, y->flags);
		T_EQ_INT(x->n_ids, y->n_ids);
		T_OK(x->n_ids == y->n_ids && !memcmp(x->ids, y->ids, 8 * y->n_ids));
	}
	/* aux_action sits at byte 116 of the attr, as the kernel reads it */
	T_EQ_U64(rd32((const uint8_t *)&a->ev[0].attr + 116), PREC_AUX_START_PAUSED);
	T_EQ_U64(rd32((const uint8_t *)&a->ev[1].attr + 116), PREC_AUX_RESUME);
	T_EQ_INT(prec_tfile_events_find_id(a, 14), 1);
	T_EQ_INT(prec_tfile_events_find_id(a, 15), 2);
	T_EQ_INT(prec_tfile_events_find_id(a, 16), -ENOENT);
}

/* Reads everything back and compares with the fixture. */
static void fx_check(struct fx *f, const char *path, bool compressed)
{
	struct prec_tfile_reader *r = NULL;
	struct prec_tfile_ropts ro = { .want_unknown = true };
	struct prec_tfile_chunk c;
	struct prec_tfile_status st;
	struct prec_buf sb[2] = { { 0 } }, ks = { 0 };
	uint8_t *img = calloc(1, f->imglen);
	size_t imgbytes = 0, nkcore = 0, nunknown = 0, nzstd = 0, nraw_aux2 = 0, nrefs = 0;
	struct prec_tfile_info *info;
	struct prec_tfile_machine *m;
	struct prec_tfile_events *evs;
	struct prec_tfile_stats *sts;
	struct prec_tfile_stream_key *keys;
	size_t nkeys, i;
	unsigned first = 0;
	char msg[256];
	int k;

	T_EQ_INT(prec_tfile_reader_new(path, &ro, &r, NULL), 0);
	if (!r)
		return;
	T_EQ_INT(prec_tfile_file_header(r)->version, 1);
	T_EQ_U64(prec_tfile_file_header(r)->flags, 0);
	while ((k = prec_tfile_next(r, &c)) == 1) {
		if (!first)
			first = c.type;
		T_OK(((uintptr_t)c.data & 7) == 0);
		T_OK(c.file_off % 8 == 0);
		if (c.flags & PREC_TFILE_CF_ZSTD) {
			nzstd++;
			T_OK(c.stored_len < c.len);
		}
		switch (c.type) {
		case PREC_TFILE_SIDEBAND:
			T_OK(c.cpu == 0 || c.cpu == 1);
			if (c.cpu == 0 || c.cpu == 1)
				prec_buf_append(&sb[c.cpu], c.data, c.len);
			break;
		case PREC_TFILE_AUX:
			if (c.tid == 4242 && !(c.flags & PREC_TFILE_CF_ZSTD))
				nraw_aux2++;
			T_OK(c.len <= PREC_TFILE_DEFAULT_CHUNK);
			break;
		case PREC_TFILE_IMAGE: {
			struct prec_tfile_image im;
			const void *bytes;
			size_t nb;

			T_EQ_INT(prec_tfile_image_decode(c.data, c.len, &im, &bytes, &nb), 0);
			if (!strcmp(im.path, "/usr/bin/demo")) {
				T_EQ_U64(im.size, f->imglen);
				T_EQ_U64(im.file_offset, 0x1000);
				T_EQ_U64(im.vaddr, 0x401000);
				T_EQ_INT(im.build_id_size, 20);
				T_EQ_INT(im.build_id[19], 0xa0 + 19);
				T_OK(c.arg + nb <= f->imglen);
				if (c.arg + nb <= f->imglen)
					memcpy(img + c.arg, bytes, nb);
				imgbytes += nb;
			} else if (!strcmp(im.path, "/usr/lib/libref.so")) {
				/* a reference: header only */
				T_EQ_U64(nb, 0);
				T_EQ_U64(c.arg, 0);
				T_EQ_U64(im.size, 12345);
				T_EQ_U64(im.file_offset, 0x2000);
				T_EQ_INT(im.build_id_size, 4);
				T_EQ_INT(im.build_id[3], 4);
				nrefs++;
			} else {
				T_EQ_STR(im.path, "[vdso]");
				T_EQ_INT(im.build_id_size, 0);
				T_EQ_U64(nb, 8192);
				T_OK(!memcmp(bytes, f->img, 8192));
			}
			break;
		}
		case PREC_TFILE_KSYMS:
			T_EQ_U64(c.arg, ks.len);
			prec_buf_append(&ks, c.data, c.len);
			break;
		case PREC_TFILE_KCORE:
			T_EQ_U64(c.arg, 0xffffffff81000000ull);
			T_OK(c.len == sizeof(f->kcore) && !memcmp(c.data, f->kcore, c.len));
			nkcore++;
			break;
		case 777:
			T_OK(c.len == 6 && !memcmp(c.data, "future", 6));
			T_EQ_U64(c.arg, 5);
			nunknown++;
			break;
		}
	}
	T_EQ_INT(k, 0);
	T_EQ_INT(first, PREC_TFILE_INFO);
	T_OK(sb[0].len == f->sblen[0] && !memcmp(sb[0].data, f->sb[0], f->sblen[0]));
	T_OK(sb[1].len == f->sblen[1] && !memcmp(sb[1].data, f->sb[1], f->sblen[1]));
	T_EQ_U64(imgbytes, f->imglen);
	T_OK(!memcmp(img, f->img, f->imglen));
	T_OK(ks.len == strlen(f->ksyms) && !memcmp(ks.data, f->ksyms, ks.len));
	T_EQ_INT(nkcore, 1);
	T_EQ_INT(nunknown, 1);
	T_EQ_INT(nrefs, 1);
	if (compressed) {
		T_OK(nzstd > 5);
		/* random bytes never compress: stored as is */
		T_OK(nraw_aux2 >= 3);
	} else {
		T_EQ_INT(nzstd, 0);
	}

	T_EQ_INT(prec_tfile_status(r, &st), 0);
	T_OK(st.end_seen);
	T_OK(!st.cut_short);
	T_EQ_INT(st.damaged, 0);
	T_EQ_INT(st.unknown, 1);
	T_EQ_U64(st.end_nchunks + 1, st.chunks);
	T_CONTAINS(prec_tfile_status_str(&st, msg, sizeof(msg)), "complete");

	T_EQ_INT(prec_tfile_read_info(r, &info), 0);
	if (info)
		check_info(info);
	free(info);
	T_EQ_INT(prec_tfile_read_machine(r, &m), 0);
	if (m)
		check_machine(m);
	free(m);
	T_EQ_INT(prec_tfile_read_events(r, &evs), 0);
	if (evs)
		check_events(evs);
	free(evs);
	T_EQ_INT(prec_tfile_read_stats(r, &sts), 0);
	if (sts) {
		T_EQ_U64(sts->duration_ns, 999);
		T_EQ_U64(sts->lost_records, 7);
		T_EQ_U64(sts->lost_bytes, 64);
		T_EQ_INT(sts->n_streams, 3);
		for (i = 0; i < sts->n_streams; i++) {
			const struct prec_tfile_stream_stats *s = &sts->streams[i];
			int idx = s->tid == 4242 ? 2 : s->cpu;

			T_OK(idx >= 0 && idx < 3);
			if (idx < 0 || idx > 2)
				continue;
			T_EQ_U64(s->raw_bytes, f->auxlen[idx]);
			T_EQ_U64(s->dropped_bytes, 0);
			T_OK(compressed && idx < 2 ? s->stored_bytes < s->raw_bytes / 2
						    : s->stored_bytes == s->raw_bytes);
			if (idx == 0) {
				T_EQ_U64(s->aux_records, 5);
				T_EQ_U64(s->truncated, 2);
				T_EQ_U64(s->overwrite, 1);
				T_EQ_U64(s->partial, 3);
				T_EQ_U64(s->collision, 4);
			}
		}
	}
	free(sts);

	T_EQ_INT(prec_tfile_streams(r, &keys, &nkeys), 0);
	T_EQ_INT(nkeys, 3);
	if (nkeys == 3) {
		/* sorted by (cpu, tid) */
		T_EQ_INT(keys[0].cpu, -1);
		T_EQ_INT(keys[0].tid, 4242);
		T_EQ_U64(keys[0].bytes, f->auxlen[2]);
		T_EQ_INT(keys[1].cpu, 0);
		T_EQ_INT(keys[2].cpu, 1);
	}
	free(keys);
	for (i = 0; i < 3; i++) {
		struct prec_tfile_aux *a = NULL;

		T_EQ_INT(prec_tfile_gather_aux(r, aux_key[i][0], aux_key[i][1], &a), 0);
		if (!a)
			continue;
		T_EQ_U64(a->len, f->auxlen[i]);
		T_EQ_INT(a->n_runs, 1);
		T_EQ_U64(a->missing_bytes, 0);
		T_OK(a->len == f->auxlen[i] && !memcmp(a->data, f->aux[i], a->len));
		prec_tfile_aux_free(a);
	}
	{
		struct prec_tfile_aux *a = (void *)1;

		T_EQ_INT(prec_tfile_gather_aux(r, 5, 5, &a), -ENOENT);
		T_OK(a == NULL);
	}
	/* rewinding gives the same first chunk again */
	prec_tfile_rewind(r);
	T_EQ_INT(prec_tfile_next(r, &c), 1);
	T_EQ_INT(c.type, PREC_TFILE_INFO);
	prec_tfile_reader_free(r);
	prec_buf_free(&sb[0]);
	prec_buf_free(&sb[1]);
	prec_buf_free(&ks);
	free(img);
}

static void roundtrip_variant(int level, bool async)
{
	struct prec_tfile_wopts o = opts(level, async);
	struct fx *f = fx_new();
	const char *p = tpath("rt.ptrec");

	T_EQ_INT(fx_write(f, p, &o), 0);
	fx_check(f, p, level > 0);
	fx_free(f);
}

static void roundtrip_plain(void)
{
	roundtrip_variant(0, false);
}

static void roundtrip_zstd(void)
{
	roundtrip_variant(3, false);
}

static void roundtrip_async_zstd(void)
{
	roundtrip_variant(1, true);
}

/* Three compression threads: chunks still land in submission order. */
static void roundtrip_async_threads(void)
{
	struct prec_tfile_wopts o = opts(3, true);
	struct fx *f = fx_new();
	const char *p = tpath("rt3.ptrec");

	o.threads = 3;
	o.chunk_size = 64 << 10;
	T_EQ_INT(fx_write(f, p, &o), 0);
	fx_check(f, p, true);
	fx_free(f);
}

static void roundtrip_async_plain(void)
{
	roundtrip_variant(0, true);
}

/* A second, minimal reader written from ptrec-file(5) alone. */
static void spec_conformance(void)
{
	struct prec_tfile_wopts o = opts(3, false);
	struct fx *f = fx_new();
	const char *p = tpath("spec.ptrec");
	size_t len = 0, pos, nchunks = 0, aux0 = 0;
	uint8_t *d, *raw = malloc(PREC_TFILE_MAX_RAW);
	bool end = false;

	T_EQ_INT(fx_write(f, p, &o), 0);
	d = slurp(p, &len);
	T_OK(d && len > 64);
	if (!d)
		goto out;
	T_OK(!memcmp(d, "\x7fPTREC\r\n", 8));
	T_EQ_INT(d[8] | d[9] << 8, 1);
	T_EQ_INT(d[10] | d[11] << 8, 32);
	T_EQ_U64(rd32(d + 28), prec_crc32c(0, d, 28));
	for (pos = 32; pos + 40 <= len; nchunks++) {
		const uint8_t *h = d + pos;
		uint32_t rawlen = rd32(h + 8), stored = rd32(h + 12);
		unsigned type = h[4] | h[5] << 8, flags = h[6] | h[7] << 8;

		T_EQ_U64(rd32(h), 0x4b4843abu);
		T_EQ_U64(rd32(h + 36), prec_crc32c(0, h, 36));
		T_EQ_U64(rd32(h + 32), prec_crc32c(0, h + 40, stored));
		if (flags & 1) {
			size_t got = ZSTD_decompress(raw, PREC_TFILE_MAX_RAW, h + 40, stored);

			T_EQ_U64(got, rawlen);
		} else {
			T_EQ_U64(stored, rawlen);
			memcpy(raw, h + 40, stored);
		}
		if (type == PREC_TFILE_AUX && rd32(h + 16) == 0 && rd32(h + 20) == 0xffffffffu) {
			uint64_t arg = rd32(h + 24) | (uint64_t)rd32(h + 28) << 32;

			T_EQ_U64(arg, aux0);
			T_OK(!memcmp(raw, f->aux[0] + arg, rawlen));
			aux0 += rawlen;
		}
		if (type == PREC_TFILE_END) {
			uint64_t n = rd32(raw) | (uint64_t)rd32(raw + 4) << 32;

			T_EQ_U64(n, nchunks);
			end = true;
		}
		pos += 40 + (stored + 7) / 8 * 8;
	}
	T_EQ_U64(pos, len);
	T_OK(end);
	T_EQ_U64(aux0, f->auxlen[0]);
out:
	free(d);
	free(raw);
	fx_free(f);
}

/* ---- many streams, big data ---- */

static void many_streams_big(void)
{
	enum { NS = 48 };
	struct prec_tfile_wopts o = opts(1, true);
	struct prec_tfile_writer *w = NULL;
	struct prec_tfile_reader *r = NULL;
	struct prec_tfile_stats *st = NULL;
	size_t total = 0, len[NS], off[NS] = { 0 };
	uint8_t *data[NS];
	const char *p = tpath("many.ptrec");
	bool left = true;
	int i, err = 0;

	o.chunk_size = 256 << 10;
	o.queue_bytes = 4 << 20;
	o.full_policy = PREC_TFILE_FULL_BLOCK;
	o.threads = 3;
	rng = 777;
	for (i = 0; i < NS; i++) {
		len[i] = 100000 + (size_t)(rnd() % 400000);
		data[i] = malloc(len[i]);
		if (i % 3 == 0)
			fill_random(data[i], len[i]);
		else
			fill_ptlike(data[i], len[i], (uint32_t)i);
		total += len[i];
	}
	T_OK(total > 10u << 20);
	T_EQ_INT(prec_tfile_writer_new(p, &o, &w), 0);
	if (!w)
		goto out;
	while (left) {
		left = false;
		for (i = 0; i < NS; i++) {
			size_t n = (size_t)(rnd() % 70000);

			n = PREC_MIN(n, len[i] - off[i]);

			if (!n)
				continue;
			err |= prec_tfile_write_aux(w, -1, 1000 + i, off[i], data[i] + off[i], n);
			off[i] += n;
			left |= off[i] < len[i];
		}
	}
	T_EQ_INT(err, 0);
	T_EQ_INT(prec_tfile_writer_get_stats(w, &st), 0);
	if (st) {
		T_EQ_INT(st->n_streams, NS);
		for (uint32_t k = 0; k < st->n_streams; k++)
			T_EQ_U64(st->streams[k].raw_bytes, len[st->streams[k].tid - 1000]);
	}
	free(st);
	T_EQ_INT(prec_tfile_writer_close(w, NULL), 0);
	prec_tfile_writer_free(w);

	T_EQ_INT(prec_tfile_reader_new(p, NULL, &r, NULL), 0);
	if (r) {
		/* file order: each stream's pieces follow each other exactly */
		uint64_t next[NS] = { 0 }, bad = 0;
		struct prec_tfile_chunk c;

		while (prec_tfile_next(r, &c) == 1) {
			if (c.type != PREC_TFILE_AUX)
				continue;
			bad += c.arg != next[c.tid - 1000];
			next[c.tid - 1000] = c.arg + c.len;
		}
		T_EQ_U64(bad, 0);
	}
	for (i = 0; r && i < NS; i++) {
		struct prec_tfile_aux *a = NULL;

		T_EQ_INT(prec_tfile_gather_aux(r, -1, 1000 + i, &a), 0);
		T_OK(a && a->len == len[i] && a->n_runs == 1 && !memcmp(a->data, data[i], len[i]));
		prec_tfile_aux_free(a);
	}
	prec_tfile_reader_free(r);
out:
	for (i = 0; i < NS; i++)
		free(data[i]);
}

static void aux_gaps(void)
{
	struct prec_tfile_wopts o = opts(3, false);
	struct prec_tfile_writer *w = NULL;
	struct prec_tfile_reader *r = NULL;
	struct prec_tfile_aux *a = NULL;
	uint8_t buf[300000];
	const char *p = tpath("gaps.ptrec");

	o.chunk_size = 65536;
	fill_ptlike(buf, sizeof(buf), 5);
	T_EQ_INT(prec_tfile_writer_new(p, &o, &w), 0);
	if (!w)
		return;
	/* stream bytes [1000,51000) [51000,81000) gap [90000,150000) gap [200000,300000) */
	T_EQ_INT(prec_tfile_write_aux(w, 2, -1, 1000, buf + 1000, 50000), 0);
	T_EQ_INT(prec_tfile_write_aux(w, 2, -1, 51000, buf + 51000, 30000), 0);
	T_EQ_INT(prec_tfile_write_aux(w, 2, -1, 90000, buf + 90000, 60000), 0);
	T_EQ_INT(prec_tfile_write_aux(w, 2, -1, 200000, buf + 200000, 100000), 0);
	/* an overlapping repeat keeps the first bytes */
	T_EQ_INT(prec_tfile_write_aux(w, 2, -1, 95000, buf + 95000, 10000), 0);
	T_EQ_INT(prec_tfile_writer_close(w, NULL), 0);
	prec_tfile_writer_free(w);
	T_EQ_INT(prec_tfile_reader_new(p, NULL, &r, NULL), 0);
	T_EQ_INT(prec_tfile_gather_aux(r, 2, -1, &a), 0);
	if (a) {
		T_EQ_INT(a->n_runs, 3);
		T_EQ_U64(a->len, 80000 + 60000 + 100000);
		T_EQ_U64(a->missing_bytes, (90000 - 81000) + (200000 - 150000));
		if (a->n_runs == 3) {
			T_EQ_U64(a->runs[0].stream_off, 1000);
			T_EQ_U64(a->runs[0].len, 80000);
			T_EQ_U64(a->runs[1].stream_off, 90000);
			T_EQ_U64(a->runs[1].buf_off, 80000);
			T_EQ_U64(a->runs[2].stream_off, 200000);
			for (int i = 0; i < 3; i++)
				T_OK(!memcmp(a->data + a->runs[i].buf_off,
					     buf + a->runs[i].stream_off, a->runs[i].len));
		}
	}
	prec_tfile_aux_free(a);
	prec_tfile_reader_free(r);
}

/* ---- cuts and damage ---- */

struct chunkpos {
	size_t off, end_payload, end;	/* header, payload end, padded end */
	unsigned type;
};

static int list_chunks(const uint8_t *d, size_t len, struct chunkpos *cp, int max)
{
	size_t pos = 32;
	int n = 0;

	while (pos + 40 <= len && n < max) {
		uint32_t stored = rd32(d + pos + 12);

		cp[n].off = pos;
		cp[n].type = d[pos + 4] | d[pos + 5] << 8;
		cp[n].end_payload = pos + 40 + stored;
		cp[n].end = pos + 40 + (stored + 7) / 8 * 8;
		pos = cp[n].end;
		n++;
	}
	return n;
}

static int small_file(const char *p, int level)
{
	struct prec_tfile_wopts o = opts(level, false);
	struct prec_tfile_writer *w;
	struct prec_tfile_info info;
	uint8_t buf[20000], recs[4096];
	size_t nrec;
	int err;

	o.chunk_size = 4096;
	fx_info(&info);
	fill_ptlike(buf, sizeof(buf), 1);
	rng = 99;
	nrec = make_records(recs, sizeof(recs), 20, PERF_RECORD_MMAP2);
	err = prec_tfile_writer_new(p, &o, &w);
	if (err)
		return err;
	err |= prec_tfile_write_info(w, &info);
	err |= prec_tfile_write_aux(w, 0, -1, 0, buf, 10001); /* 3 chunks (4096 each), 1 partial */
	err |= prec_tfile_write_sideband(w, 0, recs, nrec);
	err |= prec_tfile_write_aux(w, 1, -1, 0, buf + 3, 5003);
	if (!err)
		err = prec_tfile_writer_close(w, NULL);
	prec_tfile_writer_free(w);
	return err;
}

static void cut_every_byte_of(int level)
{
	const char *p = tpath("cut.ptrec");
	struct chunkpos cp[64];
	size_t len = 0, cutpos;
	uint8_t *d;
	int n, first;

	T_EQ_INT(small_file(p, level), 0);
	d = slurp(p, &len);
	if (!d)
		return;
	n = list_chunks(d, len, cp, 64);
	T_OK(n >= 6);
	T_EQ_U64(cp[n - 1].end, len);
	T_EQ_INT(cp[n - 1].type, PREC_TFILE_END);
	/* every position inside the last three chunks */
	first = n - 3;
	for (cutpos = cp[first].off; cutpos < len; cutpos++) {
		struct prec_tfile_reader *r = NULL;
		struct dlog log = { 0 };
		struct prec_tfile_ropts ro = { .on_damage = on_dmg, .ctx = &log };
		struct prec_tfile_status st;
		struct prec_tfile_chunk c;
		size_t whole = 0, expect_cut = cutpos, got = 0;
		bool inside = false;
		char msg[300], want[64];
		int i;

		for (i = 0; i < n; i++) {
			if (cp[i].end_payload <= cutpos) {
				whole++;
			} else if (cp[i].off < cutpos) {
				inside = true;
				expect_cut = cp[i].off;
				break;
			} else {
				break;
			}
		}
		T_EQ_INT(prec_tfile_reader_new_mem(d, cutpos, &ro, &r, NULL), 0);
		if (!r)
			continue;
		while (prec_tfile_next(r, &c) == 1)
			got++;
		T_EQ_INT(prec_tfile_status(r, &st), 0);
		T_EQ_U64(got, whole);
		T_OK(st.cut_short);
		T_OK(!st.end_seen);
		T_EQ_U64(st.cut_offset, expect_cut);
		T_EQ_INT(log.n, inside ? 1 : 0);
		if (inside && log.n == 1) {
			T_EQ_INT(log.d[0].kind, PREC_TFILE_DMG_TRUNCATED);
			T_EQ_U64(log.d[0].offset, expect_cut);
		}
		snprintf(want, sizeof(want), "cut short at offset %zu", expect_cut);
		T_CONTAINS(prec_tfile_status_str(&st, msg, sizeof(msg)), want);
		prec_tfile_reader_free(r);
		if (t_row_failed()) {
			printf("    at cut position %zu\n", cutpos);
			break;
		}
	}
	/* the same through a real truncated file (pread path) */
	{
		struct prec_tfile_reader *r = NULL;
		struct prec_tfile_status st;
		size_t cut = cp[n - 2].off + 45;
		char msg[300];

		T_EQ_INT(truncate(p, (off_t)cut), 0);
		T_EQ_INT(prec_tfile_reader_new(p, NULL, &r, NULL), 0);
		T_EQ_INT(prec_tfile_status(r, &st), 0);
		T_OK(st.cut_short);
		T_EQ_U64(st.cut_offset, cp[n - 2].off);
		T_EQ_U64(st.chunks, (uint64_t)(n - 2));
		T_CONTAINS(prec_tfile_status_str(&st, msg, sizeof(msg)), "ends inside a chunk");
		prec_tfile_reader_free(r);
	}
	free(d);
}

static void cut_every_byte(void)
{
	cut_every_byte_of(0);
}

static void cut_every_byte_zstd(void)
{
	cut_every_byte_of(5);
}

static void flipped_bytes(void)
{
	const char *p = tpath("flip.ptrec");
	struct chunkpos cp[64];
	size_t len = 0;
	uint8_t *d;
	int n, i;

	T_EQ_INT(small_file(p, 3), 0);
	d = slurp(p, &len);
	if (!d)
		return;
	n = list_chunks(d, len, cp, 64);
	for (i = 0; i < n; i++) {
		for (int where = 0; where < 2; where++) {
			struct prec_tfile_reader *r = NULL;
			struct dlog log = { 0 };
			struct prec_tfile_ropts ro = { .on_damage = on_dmg, .ctx = &log };
			struct prec_tfile_status st;
			struct prec_tfile_chunk c;
			size_t at, got = 0;
			bool seen_other_after = false;
			uint8_t *copy = malloc(len);

			/* where 0: inside the payload; 1: inside the header (the length field) */
			at = where ? cp[i].off + 12
				   : cp[i].off + 40 + (cp[i].end_payload - cp[i].off - 40) / 2;
			memcpy(copy, d, len);
			copy[at] ^= 0x10;
			T_EQ_INT(prec_tfile_reader_new_mem(copy, len, &ro, &r, NULL), 0);
			while (r && prec_tfile_next(r, &c) == 1) {
				got++;
				if (c.file_off > cp[i].off)
					seen_other_after = true;
			}
			T_EQ_U64(got, (uint64_t)(n - 1));
			T_EQ_INT(log.n, 1);
			T_EQ_U64(log.d[0].offset, cp[i].off);
			T_EQ_INT(log.d[0].kind,
				 where ? PREC_TFILE_DMG_HEADER : PREC_TFILE_DMG_CHECKSUM);
			if (!where)
				T_EQ_INT(log.d[0].type, cp[i].type);
			else
				T_EQ_U64(log.d[0].length, cp[i].end - cp[i].off);
			T_OK(i == n - 1 || seen_other_after);
			if (r && prec_tfile_status(r, &st) == 0) {
				T_EQ_INT(st.damaged, 1);
				/* losing END makes it incomplete, anything else does not */
				T_EQ_INT(st.cut_short, cp[i].type == PREC_TFILE_END);
			}
			prec_tfile_reader_free(r);
			free(copy);
			if (t_row_failed()) {
				printf("    chunk %d where %d\n", i, where);
				goto out;
			}
		}
	}
out:
	free(d);
}

/* Valid CRCs around a corrupted zstd frame: reported as bad compressed data. */
static void bad_zstd_frame(void)
{
	uint8_t raw[4096], z[8192], file[16384], msgbuf[200];
	size_t zl, pos;
	struct dlog log = { 0 };
	struct prec_tfile_ropts ro = { .on_damage = on_dmg, .ctx = &log };
	struct prec_tfile_reader *r = NULL;
	struct prec_tfile_chunk c;
	int got = 0;

	fill_ptlike(raw, sizeof(raw), 3);
	zl = ZSTD_compress(z, sizeof(z), raw, sizeof(raw), 3);
	T_OK(!ZSTD_isError(zl) && zl < sizeof(raw));
	/* a broken frame header (a flipped byte inside zstd data may decode silently: the CRC
	 * catches that) */
	z[0] ^= 0xff;
	pos = put_fhdr(file, 1);
	pos += put_chunk(file + pos, PREC_TFILE_AUX, PREC_TFILE_CF_ZSTD, sizeof(raw), z,
			 (uint32_t)zl, 0, -1, 0);
	/* a frame that decodes to fewer bytes than raw_len claims */
	zl = ZSTD_compress(z, sizeof(z), raw, 1000, 3);
	pos += put_chunk(file + pos, PREC_TFILE_AUX, PREC_TFILE_CF_ZSTD, 2000, z, (uint32_t)zl, 0,
			 -1, 4096);
	pos += put_chunk(file + pos, PREC_TFILE_AUX, 0, 16, raw, 16, 0, -1, 8192);
	T_EQ_INT(prec_tfile_reader_new_mem(file, pos, &ro, &r, NULL), 0);
	while (r && prec_tfile_next(r, &c) == 1) {
		got++;
		T_EQ_U64(c.arg, 8192);
	}
	T_EQ_INT(got, 1);
	T_EQ_INT(log.n, 2);
	T_EQ_INT(log.d[0].kind, PREC_TFILE_DMG_DECOMPRESS);
	T_EQ_U64(log.d[0].offset, 32);
	T_EQ_INT(log.d[1].kind, PREC_TFILE_DMG_DECOMPRESS);
	prec_tfile_damage_str(&log.d[0], (char *)msgbuf, sizeof(msgbuf));
	T_CONTAINS((char *)msgbuf, "offset 32");
	T_CONTAINS((char *)msgbuf, "bad compressed data");
	prec_tfile_reader_free(r);
}

static int open_err(const void *p, size_t n, struct prec_diag *dg)
{
	struct prec_tfile_reader *r = NULL;
	int err;

	memset(dg, 0, sizeof(*dg));
	err = prec_tfile_reader_new_mem(p, n, NULL, &r, dg);
	prec_tfile_reader_free(r);
	return err;
}

static void bad_file_headers(void)
{
	uint8_t h[64];
	struct prec_diag dg;

	put_fhdr(h, 1);
	memcpy(h + 32, "x", 1);
	T_EQ_INT(open_err(h, 32, &dg), 0);

	T_EQ_INT(open_err("hello world, not a trace file at all", 36, &dg), -PREC_E_FORMAT);
	T_CONTAINS(dg.msg, "not a ptrec trace file");
	T_EQ_INT(dg.pos, 0);
	T_EQ_INT(
	    open_err("PERFILE2\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 36, &dg),
	    -PREC_E_FORMAT);
	T_CONTAINS(dg.hint, "perf.data");

	put_fhdr(h, 2);
	T_EQ_INT(open_err(h, 32, &dg), -PREC_E_VERSION);
	T_CONTAINS(dg.msg, "format version 2");
	T_CONTAINS(dg.msg, "reads version 1");
	put_fhdr(h, 0x7fff);
	T_EQ_INT(open_err(h, 32, &dg), -PREC_E_VERSION);

	put_fhdr(h, 1);
	T_EQ_INT(open_err(h, 10, &dg), -PREC_E_TRUNCATED);
	T_CONTAINS(dg.msg, "ends inside its 32-byte header");
	T_EQ_INT(open_err(h, 0, &dg), -PREC_E_TRUNCATED);
	T_CONTAINS(dg.msg, "empty");
	T_EQ_INT(open_err(h, 5, &dg), -PREC_E_TRUNCATED);

	put_fhdr(h, 1);
	h[20] ^= 1;
	T_EQ_INT(open_err(h, 32, &dg), -PREC_E_FORMAT);
	T_CONTAINS(dg.msg, "damaged");

	{
		struct prec_tfile_reader *r = NULL;

		T_EQ_INT(prec_tfile_reader_new(tpath("does-not-exist"), NULL, &r, &dg), -ENOENT);
		T_CONTAINS(dg.msg, "cannot open");
		T_EQ_INT(prec_tfile_reader_new(t_tmpdir(), NULL, &r, &dg), -EISDIR);
		T_OK(r == NULL);
	}
}

/*
 * Chunk headers claiming huge lengths are damage, found without allocating
 * what they claim.
 */
static void huge_lengths(void)
{
	static uint8_t file[1 << 16];
	uint8_t pay[64] = "payload-after";
	struct dlog log = { 0 };
	struct prec_tfile_ropts ro = { .on_damage = on_dmg, .ctx = &log };
	struct prec_tfile_reader *r = NULL;
	struct prec_tfile_chunk c;
	size_t pos;
	int got = 0, k;

#ifndef __SANITIZE_ADDRESS__
	struct rlimit rl = { 512u << 20, 512u << 20 };

	/* 512 MiB of address space: an allocation of a claimed 4 GiB would fail */
	T_EQ_INT(setrlimit(RLIMIT_AS, &rl), 0);
#endif
	pos = put_fhdr(file, 1);
	/* raw 0xfffffff0 with 8 stored bytes: over the limit, a bad header */
	pos += put_chunk(file + pos, PREC_TFILE_AUX, PREC_TFILE_CF_ZSTD, 0xfffffff0u, pay, 8, 0, -1,
			 0);
	/* uncompressed with stored != raw */
	pos += put_chunk(file + pos, PREC_TFILE_AUX, 0, 1u << 30, pay, 8, 0, -1, 0);
	/* compressed, raw at the limit, stored far below: the header passes, the frame fails */
	pos += put_chunk(file + pos, PREC_TFILE_AUX, PREC_TFILE_CF_ZSTD, PREC_TFILE_MAX_RAW, pay,
			 16, 0, -1, 0);
	pos += put_chunk(file + pos, PREC_TFILE_SIDEBAND, 0, 0, pay, 0, 0, -1, 0);
	T_EQ_INT(prec_tfile_reader_new_mem(file, pos, &ro, &r, NULL), 0);
	while (r && (k = prec_tfile_next(r, &c)) == 1) {
		got++;
		T_EQ_INT(c.type, PREC_TFILE_SIDEBAND);
	}
	T_EQ_INT(got, 1);
	T_EQ_INT(log.n, 2);
	T_EQ_INT(log.d[0].kind, PREC_TFILE_DMG_HEADER);
	T_EQ_U64(log.d[0].offset, 32);
	T_EQ_U64(log.d[0].length, 48 * 2);
	T_EQ_INT(log.d[1].kind, PREC_TFILE_DMG_DECOMPRESS);
	prec_tfile_reader_free(r);
}

/* Random corruption anywhere: the reader always finishes, never crashes. */
static void random_corruption(void)
{
	const char *p = tpath("fuzz.ptrec");
	size_t len = 0;
	uint8_t *d, *copy;
	int it;

	T_EQ_INT(small_file(p, 3), 0);
	d = slurp(p, &len);
	if (!d)
		return;
	copy = malloc(len);
	rng = 4242;
	for (it = 0; it < 400; it++) {
		struct prec_tfile_reader *r = NULL;
		struct dlog log = { 0 };
		struct prec_tfile_ropts ro = { .on_damage = on_dmg, .ctx = &log };
		struct prec_tfile_chunk c;
		struct prec_tfile_status st;
		size_t cut = len - (size_t)(rnd() % 64) * (it & 1);
		int k, nflip = 1 + (int)(rnd() % 8), got = 0;

		memcpy(copy, d, len);
		for (int i = 0; i < nflip; i++)
			copy[32 + rnd() % (len - 32)] = (uint8_t)rnd();
		if (prec_tfile_reader_new_mem(copy, cut, &ro, &r, NULL))
			continue;
		while ((k = prec_tfile_next(r, &c)) == 1)
			got++;
		T_EQ_INT(k, 0);
		T_EQ_INT(prec_tfile_status(r, &st), 0);
		T_OK(st.damaged > 0 || st.cut_short || cut == len);
		T_OK(got + (int)st.damaged >= 1);
		{
			struct prec_tfile_aux *a = NULL;
			struct prec_tfile_info *info = NULL;
			struct prec_tfile_events *ev = NULL;

			prec_tfile_gather_aux(r, 0, -1, &a);
			prec_tfile_aux_free(a);
			prec_tfile_read_info(r, &info);
			free(info);
			prec_tfile_read_events(r, &ev);
			free(ev);
		}
		prec_tfile_reader_free(r);
	}
	free(copy);
	free(d);
}

/* Decoders on every prefix and on random bytes: errors, never overreads (ASan checks). */
static void codec_bounds(void)
{
	struct prec_buf b[4] = { { 0 } };
	struct prec_tfile_info info;
	struct prec_tfile_machine m;
	struct prec_tfile_event ev[3];
	struct prec_tfile_stream_stats ss[2] = { { .cpu = 1 }, { .cpu = 2 } };
	struct prec_tfile_stats st = { .n_streams = 2, .streams = ss };
	int t;

	fx_info(&info);
	fx_machine(&m);
	fx_events(ev);
	T_EQ_INT(prec_tfile_info_encode(&info, &b[0]), 0);
	T_EQ_INT(prec_tfile_machine_encode(&m, &b[1]), 0);
	T_EQ_INT(prec_tfile_events_encode(ev, 3, &b[2]), 0);
	T_EQ_INT(prec_tfile_stats_encode(&st, &b[3]), 0);
	for (t = 0; t < 4; t++) {
		size_t n;

		for (n = 0; n < b[t].len; n++) {
			uint8_t *cp = malloc(n + 1);
			void *out = NULL;
			int err;

			memcpy(cp, b[t].data, n);
			switch (t) {
			case 0:
				err =
				    prec_tfile_info_decode(cp, n, (struct prec_tfile_info **)&out);
				break;
			case 1:
				err = prec_tfile_machine_decode(cp, n,
								(struct prec_tfile_machine **)&out);
				break;
			case 2:
				err = prec_tfile_events_decode(cp, n,
							       (struct prec_tfile_events **)&out);
				break;
			default:
				err = prec_tfile_stats_decode(cp, n,
							      (struct prec_tfile_stats **)&out);
				break;
			}
			T_EQ_INT(err, -PREC_E_FORMAT);
			T_OK(out == NULL);
			free(out);
			free(cp);
		}
	}
	/* random garbage */
	rng = 5;
	for (t = 0; t < 2000; t++) {
		uint8_t g[256];
		size_t n = (size_t)(rnd() % sizeof(g));
		void *out = NULL;

		fill_random(g, n);
		if (n >= 4 && (t & 1))
			wr32(g, (uint32_t)(rnd() % 4));	/* small counts get further */
		prec_tfile_info_decode(g, n, (struct prec_tfile_info **)&out);
		free(out);
		out = NULL;
		prec_tfile_machine_decode(g, n, (struct prec_tfile_machine **)&out);
		free(out);
		out = NULL;
		prec_tfile_events_decode(g, n, (struct prec_tfile_events **)&out);
		free(out);
		out = NULL;
		prec_tfile_stats_decode(g, n, (struct prec_tfile_stats **)&out);
		free(out);
	}
	/* a NULL string round-trips as NULL */
	{
		struct prec_tfile_info *d = NULL;

		info.hostname = NULL;
		prec_buf_reset(&b[0]);
		T_EQ_INT(prec_tfile_info_encode(&info, &b[0]), 0);
		T_EQ_INT(prec_tfile_info_decode(b[0].data, b[0].len, &d), 0);
		T_OK(d && d->hostname == NULL && !strcmp(d->kernel_release, "6.18.0-test"));
		free(d);
	}
	for (t = 0; t < 4; t++)
		prec_buf_free(&b[t]);
}

/* ---- file mode, argument checks ---- */

static void file_mode_0600(void)
{
	const char *p = tpath("mode.ptrec");
	struct prec_tfile_writer *w = NULL;
	struct stat sb;
	mode_t old = umask(0);
	int fd = open(p, O_CREAT | O_WRONLY, 0666);

	T_OK(fd >= 0);
	T_EQ_INT(write(fd, "old contents that must go", 25), 25);
	close(fd);
	chmod(p, 0666);
	T_EQ_INT(prec_tfile_writer_new(p, NULL, &w), 0);
	T_EQ_INT(stat(p, &sb), 0);
	T_EQ_INT(sb.st_mode & 07777, 0600);
	T_EQ_INT(sb.st_size, PREC_TFILE_HDR_SIZE);	/* truncated */
	T_EQ_INT(prec_tfile_writer_close(w, NULL), 0);
	prec_tfile_writer_free(w);
	unlink(p);
	umask(0);
	T_EQ_INT(prec_tfile_writer_new(p, NULL, &w), 0);
	T_EQ_INT(stat(p, &sb), 0);
	T_EQ_INT(sb.st_mode & 07777, 0600);
	prec_tfile_writer_free(w);
	umask(old);
}

static void bad_arguments(void)
{
	struct prec_tfile_wopts o = opts(3, false);
	struct prec_tfile_writer *w = NULL;
	const char *p = tpath("args.ptrec");
	uint8_t recs[24] = { 0 };

	o.level = 20;
	T_EQ_INT(prec_tfile_writer_new(p, &o, &w), -EINVAL);
	o = opts(3, false);
	o.chunk_size = 100;
	T_EQ_INT(prec_tfile_writer_new(p, &o, &w), -EINVAL);
	o = opts(3, true);
	o.queue_bytes = 1000;
	T_EQ_INT(prec_tfile_writer_new(p, &o, &w), -EINVAL);
	T_OK(w == NULL);
	T_EQ_INT(prec_tfile_writer_new(NULL, NULL, &w), -EINVAL);
	T_EQ_INT(prec_tfile_writer_new("/nonexistent-dir/x", NULL, &w), -ENOENT);
	T_EQ_INT(prec_tfile_writer_new(p, NULL, &w), 0);
	if (!w)
		return;
	/* records must tile the buffer exactly */
	recs[6] = 16;	/* size 16 */
	T_EQ_INT(prec_tfile_write_sideband(w, 0, recs, 24), -EINVAL);
	recs[6] = 24;
	T_EQ_INT(prec_tfile_write_sideband(w, 0, recs, 24), 0);
	recs[6] = 12;
	T_EQ_INT(prec_tfile_write_sideband(w, 0, recs, 24), -EINVAL);
	T_EQ_INT(prec_tfile_write_sideband(w, 0, recs, 20), -EINVAL);
	T_EQ_INT(prec_tfile_write_blob(w, PREC_TFILE_AUX, 0, "x", 1), -EINVAL);
	T_EQ_INT(prec_tfile_write_chunk(w, 0, 0, 0, 0, "x", 1), -EINVAL);
	T_EQ_INT(prec_tfile_write_aux(w, 0, 0, 0, NULL, 5), -EINVAL);
	T_EQ_INT(prec_tfile_write_aux(NULL, 0, 0, 0, "x", 1), -EINVAL);
	T_EQ_INT(prec_tfile_writer_close(w, NULL), 0);
	T_EQ_INT(prec_tfile_write_aux(w, 0, 0, 0, "x", 1), -EINVAL);	/* after close */
	T_EQ_INT(prec_tfile_writer_close(w, NULL), -EINVAL);
	prec_tfile_writer_free(w);
	prec_tfile_writer_free(NULL);
	prec_tfile_reader_free(NULL);
	prec_tfile_aux_free(NULL);
	T_EQ_INT(prec_tfile_next(NULL, NULL), -EINVAL);
}

/* Freed without close: what was buffered is written, the file reads as cut short. */
static void free_without_close(void)
{
	const char *p = tpath("noclose.ptrec");
	struct prec_tfile_writer *w = NULL;
	struct prec_tfile_reader *r = NULL;
	struct prec_tfile_aux *a = NULL;
	struct prec_tfile_status st;
	uint8_t buf[50000];
	char msg[300];

	fill_random(buf, sizeof(buf));
	T_EQ_INT(prec_tfile_writer_new(p, NULL, &w), 0);
	T_EQ_INT(prec_tfile_write_aux(w, 0, -1, 0, buf, sizeof(buf)), 0);
	prec_tfile_writer_free(w);
	T_EQ_INT(prec_tfile_reader_new(p, NULL, &r, NULL), 0);
	T_EQ_INT(prec_tfile_status(r, &st), 0);
	T_OK(st.cut_short && !st.end_seen);
	T_EQ_U64(st.cut_offset, st.file_size);
	T_CONTAINS(prec_tfile_status_str(&st, msg, sizeof(msg)), "no end marker");
	T_EQ_INT(prec_tfile_gather_aux(r, 0, -1, &a), 0);
	T_OK(a && a->len == sizeof(buf) && !memcmp(a->data, buf, sizeof(buf)));
	prec_tfile_aux_free(a);
	prec_tfile_reader_free(r);
}

/* ---- async policy with a slow sink ---- */

struct sink {
	int fd;
	unsigned delay_ms;
	int reading;	/* set (atomically) once the sink starts reading */
	struct prec_buf got;
};

static void *sink_main(void *arg)
{
	struct sink *s = arg;
	char buf[65536];
	ssize_t n;

	usleep(s->delay_ms * 1000);
	__atomic_store_n(&s->reading, 1, __ATOMIC_RELEASE);
	while ((n = read(s->fd, buf, sizeof(buf))) > 0)
		prec_buf_append(&s->got, buf, (size_t)n);
	return NULL;
}

static void async_slow_sink_eagain(void)
{
	enum { PIECE = 48 << 10, NP = 200 };
	struct prec_tfile_wopts o = opts(0, true);
	struct prec_tfile_writer *w = NULL;
	struct prec_tfile_reader *r = NULL;
	struct prec_tfile_aux *a = NULL;
	struct prec_tfile_stats *st = NULL;
	struct sink s = { .delay_ms = 1500 };
	uint8_t *src = malloc((size_t)PIECE * NP);
	bool accepted[NP];
	uint64_t maxns = 0, dropped = 0;
	size_t maxq = 0;
	pthread_t th;
	int pfd[2], i, nagain = 0;

	fill_random(src, (size_t)PIECE * NP);
	T_EQ_INT(pipe(pfd), 0);
	s.fd = pfd[0];
	o.chunk_size = 64 << 10;
	o.queue_bytes = 1 << 20;
	o.threads = 2;
	T_EQ_INT(prec_tfile_writer_new_fd(pfd[1], &o, &w), 0);
	if (!w)
		return;
	pthread_create(&th, NULL, sink_main, &s);
	for (i = 0; i < NP; i++) {
		uint64_t t0 = prec_now_ns(), dt;
		int err = prec_tfile_write_aux(w, 0, -1, (uint64_t)i * PIECE,
					       src + (size_t)i * PIECE, PIECE);

		dt = prec_now_ns() - t0;
		maxns = PREC_MAX(maxns, dt);
		maxq = PREC_MAX(maxq, prec_tfile_writer_queued(w));
		T_OK(err == 0 || err == -EAGAIN);
		accepted[i] = !err;
		if (err == -EAGAIN) {
			nagain++;
			dropped += PIECE;
		}
	}
	/* the sink slept through all of it: the producer never waited for it */
	T_OK(!__atomic_load_n(&s.reading, __ATOMIC_ACQUIRE));
	T_OK(maxns < 200ull * 1000 * 1000);
	T_OK(nagain > NP / 2);
	/* the bound holds (plus at most one chunk admitted into an empty queue) */
	T_OK(maxq <= o.queue_bytes + o.chunk_size);
	T_EQ_INT(prec_tfile_writer_get_stats(w, &st), 0);
	T_OK(st && st->n_streams == 1 && st->streams[0].dropped_bytes == dropped);
	T_OK(st && st->streams[0].raw_bytes == (uint64_t)(NP - nagain) * PIECE);
	free(st);
	T_EQ_INT(prec_tfile_writer_close(w, NULL), 0);
	prec_tfile_writer_free(w);
	close(pfd[1]);
	pthread_join(th, NULL);
	close(pfd[0]);

	T_EQ_INT(prec_tfile_reader_new_mem(s.got.data, s.got.len, NULL, &r, NULL), 0);
	T_EQ_INT(prec_tfile_gather_aux(r, 0, -1, &a), 0);
	if (a) {
		/* every accepted piece is there, byte for byte; no refused byte is */
		size_t ri = 0, expect_len = 0;

		for (i = 0; i < NP; i++) {
			uint64_t off = (uint64_t)i * PIECE;
			bool found = false;

			for (ri = 0; ri < a->n_runs; ri++) {
				const struct prec_tfile_aux_run *run = &a->runs[ri];

				if (off >= run->stream_off &&
				    off + PIECE <= run->stream_off + run->len) {
					found = !memcmp(a->data + run->buf_off +
							    (off - run->stream_off),
							src + off, PIECE);
					break;
				}
				if (off < run->stream_off + run->len &&
				    off + PIECE > run->stream_off)
					found = true;	/* partial overlap: wrong either way */
			}
			T_EQ_INT(found, accepted[i]);
			expect_len += accepted[i] ? PIECE : 0;
		}
		T_EQ_U64(a->len, expect_len);
	}
	prec_tfile_aux_free(a);
	prec_tfile_reader_free(r);
	prec_buf_free(&s.got);
	free(src);
}

static void async_slow_sink_block(void)
{
	enum { PIECE = 64 << 10, NP = 40 };
	struct prec_tfile_wopts o = opts(3, true);
	struct prec_tfile_writer *w = NULL;
	struct prec_tfile_reader *r = NULL;
	struct prec_tfile_aux *a = NULL;
	struct sink s = { .delay_ms = 600 };
	uint8_t *src = malloc((size_t)PIECE * NP);
	uint64_t maxns = 0, t0;
	pthread_t th;
	int pfd[2], i, err = 0;

	fill_random(src, (size_t)PIECE * NP);
	T_EQ_INT(pipe(pfd), 0);
	s.fd = pfd[0];
	o.chunk_size = 64 << 10;
	o.queue_bytes = 256 << 10;
	o.full_policy = PREC_TFILE_FULL_BLOCK;
	T_EQ_INT(prec_tfile_writer_new_fd(pfd[1], &o, &w), 0);
	if (!w)
		return;
	pthread_create(&th, NULL, sink_main, &s);
	t0 = prec_now_ns();
	for (i = 0; i < NP; i++) {
		uint64_t t1 = prec_now_ns();

		err |= prec_tfile_write_aux(w, 0, -1, (uint64_t)i * PIECE, src + (size_t)i * PIECE,
					    PIECE);
		maxns = PREC_MAX(maxns, prec_now_ns() - t1);
		T_OK(prec_tfile_writer_queued(w) <= o.queue_bytes);
	}
	T_EQ_INT(err, 0);
	/* some call waited for the sleeping sink */
	T_OK(maxns > 300ull * 1000 * 1000);
	T_OK(prec_now_ns() - t0 > 500ull * 1000 * 1000);
	T_EQ_INT(prec_tfile_writer_close(w, NULL), 0);
	prec_tfile_writer_free(w);
	close(pfd[1]);
	pthread_join(th, NULL);
	close(pfd[0]);
	T_EQ_INT(prec_tfile_reader_new_mem(s.got.data, s.got.len, NULL, &r, NULL), 0);
	T_EQ_INT(prec_tfile_gather_aux(r, 0, -1, &a), 0);
	T_OK(a && a->len == (size_t)PIECE * NP && a->n_runs == 1 &&
	     !memcmp(a->data, src, a->len));
	prec_tfile_aux_free(a);
	prec_tfile_reader_free(r);
	prec_buf_free(&s.got);
	free(src);
}

/* ---- write errors ---- */

struct fail_ctx {
	size_t budget;	/* bytes before the failure */
	int err;
	int calls_after;
};

static ssize_t failing_write(void *ctx, int fd, const void *p, size_t n)
{
	struct fail_ctx *f = ctx;
	ssize_t w;

	if (!f->budget) {
		f->calls_after++;
		return f->err;
	}
	w = write(fd, p, PREC_MIN(n, f->budget));
	if (w < 0)
		return -errno;
	f->budget -= (size_t)w;
	return w;
}

static void check_prefix_file(const char *p, const uint8_t *src, size_t min_len, bool cut)
{
	struct prec_tfile_reader *r = NULL;
	struct prec_tfile_aux *a = NULL;
	struct prec_tfile_status st;

	T_EQ_INT(prec_tfile_reader_new(p, NULL, &r, NULL), 0);
	if (!r)
		return;
	T_EQ_INT(prec_tfile_status(r, &st), 0);
	T_OK(st.cut_short == cut);
	T_EQ_INT(prec_tfile_gather_aux(r, 0, -1, &a), 0);
	if (a) {
		T_EQ_INT(a->n_runs, 1);
		T_OK(a->n_runs < 1 || a->runs[0].stream_off == 0);
		T_OK(a->len >= min_len);
		T_OK(!memcmp(a->data, src, a->len));
	}
	prec_tfile_aux_free(a);
	prec_tfile_reader_free(r);
}

static void eio_sticky_variant(bool async)
{
	struct fail_ctx fc = { .budget = 200000, .err = -EIO };
	struct prec_tfile_wopts o = opts(0, async);
	struct prec_tfile_writer *w = NULL;
	const char *p = tpath("eio.ptrec");
	size_t n = 1 << 20, off;
	uint8_t *src = malloc(n);
	int err = 0, first_err = 0;

	fill_random(src, n);
	o.chunk_size = 16384;
	o.threads = 3;
	o.write_fn = failing_write;
	o.write_ctx = &fc;
	T_EQ_INT(prec_tfile_writer_new(p, &o, &w), 0);
	if (!w)
		return;
	for (off = 0; off < n; off += 10000) {
		err = prec_tfile_write_aux(w, 0, -1, off, src + off,
					   PREC_MIN((size_t)10000, n - off));
		if (err && !first_err)
			first_err = err;
		if (first_err)
			T_EQ_INT(err, -EIO);	/* sticky */
	}
	T_EQ_INT(prec_tfile_writer_flush(w), -EIO);
	T_EQ_INT(prec_tfile_writer_close(w, NULL), -EIO);
	prec_tfile_writer_free(w);
	/* nothing was attempted after the failure */
	T_EQ_INT(fc.calls_after, 1);
	check_prefix_file(p, src, 150000, true);
	free(src);
}

static void eio_sticky(void)
{
	eio_sticky_variant(false);
}

static void eio_sticky_async(void)
{
	eio_sticky_variant(true);
}

static void enospc_variant(bool async)
{
	char mnt[256], p[300];
	struct prec_tfile_wopts o = opts(3, async);
	struct prec_tfile_writer *w = NULL;
	size_t n = 4 << 20, off;
	uint8_t *src;
	int err = 0, e2 = -ENOSPC;

	snprintf(mnt, sizeof(mnt), "%s/small", t_tmpdir());
	mkdir(mnt, 0700);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m") < 0)
		t_skip("cannot mount a 1 MiB tmpfs (needs root)");
	snprintf(p, sizeof(p), "%s/full.ptrec", mnt);
	src = malloc(n);
	fill_random(src, n);	/* incompressible: fills the disk */
	o.chunk_size = 64 << 10;
	if (async) {
		o.full_policy = PREC_TFILE_FULL_BLOCK;
		o.threads = 2;
	}
	T_EQ_INT(prec_tfile_writer_new(p, &o, &w), 0);
	for (off = 0; w && off < n && !err; off += 40000)
		err = prec_tfile_write_aux(w, 0, -1, off, src + off,
					   PREC_MIN((size_t)40000, n - off));
	/*
	 * Async, the writer thread may not have met the full disk before the
	 * last chunk was handed over (a loaded machine): the flush waits for
	 * it and returns the sticky error.
	 */
	if (w && async && !err)
		err = prec_tfile_writer_flush(w);
	if (w) {
		/*
		 * The disk filled: the reserve took the chunk that hit it, trace
		 * is refused from then on, and the closing chunks (the last
		 * buffered trace, END) still fit: the file is complete. With
		 * chunks queued beyond the reserve (async) they may not.
		 */
		T_EQ_INT(err, -ENOSPC);
		T_OK(prec_tfile_writer_disk_full(w));
		e2 = prec_tfile_writer_close(w, NULL);
		if (!async)
			T_EQ_INT(e2, 0);
		else
			T_OK(e2 == 0 || e2 == -ENOSPC);
		prec_tfile_writer_free(w);
	}
	/* every chunk written before the error reads back */
	check_prefix_file(p, src, 500 << 10, e2 != 0);
	umount2(mnt, MNT_DETACH);
	free(src);
}

static void enospc_tmpfs(void)
{
	enospc_variant(false);
}

static void enospc_tmpfs_async(void)
{
	enospc_variant(true);
}

/* A pipe as input: read into memory first. */
static void reader_from_fifo(void)
{
	const char *p = tpath("fifo.ptrec"), *q = tpath("fifo");
	struct prec_tfile_reader *r = NULL;
	struct prec_tfile_status st;
	size_t len = 0;
	uint8_t *d;
	pid_t pid;

	T_EQ_INT(small_file(p, 1), 0);
	d = slurp(p, &len);
	T_EQ_INT(mkfifo(q, 0600), 0);
	pid = fork();
	if (pid == 0) {
		int fd = open(q, O_WRONLY);

		prec_write_full(fd, d, len);
		_exit(0);
	}
	T_EQ_INT(prec_tfile_reader_new(q, NULL, &r, NULL), 0);
	waitpid(pid, NULL, 0);
	T_EQ_INT(prec_tfile_status(r, &st), 0);
	T_OK(st.end_seen && !st.cut_short && st.file_size == len);
	prec_tfile_reader_free(r);
	free(d);
}

/* The damage note names a cut chunk with its article: an AUX, an IMAGE, an END, a SIDEBAND. */
static void damage_article(void)
{
	static const struct {
		int type;
		const char *want;
	} rows[] = {
		{ PREC_TFILE_AUX, "inside an AUX chunk" },
		{ PREC_TFILE_IMAGE, "inside an IMAGE chunk" },
		{ PREC_TFILE_END, "inside an END chunk" },
		{ PREC_TFILE_SIDEBAND, "inside a SIDEBAND chunk" },
		{ 0, "inside a partly written chunk" },
	};
	size_t i;

	for (i = 0; i < T_N(rows); i++) {
		struct prec_tfile_damage d = { .kind = PREC_TFILE_DMG_TRUNCATED, .offset = 64,
					       .length = 10, .type = rows[i].type };
		char msg[256];

		prec_tfile_damage_str(&d, msg, sizeof(msg));
		T_CONTAINS(msg, rows[i].want);
		t_row(rows[i].want, true);
	}
}

static const struct t_case cases[] = {
	T(damage_article),
	T(roundtrip_plain),
	T(roundtrip_zstd),
	T(roundtrip_async_zstd),
	T(roundtrip_async_plain),
	T(roundtrip_async_threads),
	T(spec_conformance),
	T(many_streams_big),
	T(aux_gaps),
	T(cut_every_byte),
	T(cut_every_byte_zstd),
	T(flipped_bytes),
	T(bad_zstd_frame),
	T(bad_file_headers),
	T(huge_lengths),
	T(random_corruption),
	T(codec_bounds),
	T(file_mode_0600),
	T(bad_arguments),
	T(free_without_close),
	T(async_slow_sink_eagain),
	T(async_slow_sink_block),
	T(eio_sticky),
	T(eio_sticky_async),
	T(enospc_tmpfs),
	T(enospc_tmpfs_async),
	T(reader_from_fifo),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}

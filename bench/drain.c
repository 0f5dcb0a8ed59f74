// SPDX-License-Identifier: MIT
/*
 * drain: how fast AUX bytes move from a perf-style ring to the trace file.
 *
 * A producer thread plays the kernel: it copies Intel PT bytes (made once
 * with libipt's encoder) into an in-memory AUX ring, honouring aux_tail as
 * the kernel does. The consumer drains the ring with prec_ring_read_aux()
 * into (a) a plain write(2) to a file, the `cat` baseline, and (b) the
 * trace file writer at several zstd levels, synchronous and async. Every
 * mode moves the same bytes in the same run; the table gives MB/s, the
 * ratio to the baseline, the file size and the CPU seconds used.
 *
 *   drain [--size MiB] [--ring KiB] [--chunk KiB] [--dir DIR] [--levels 0,1,3]
 *         [--threads N] [--data loopy|noisy] [--repeat N]
 *
 * Each mode runs --repeat times (default 3); the table shows the median run.
 * The "model" rows move the same bytes through the kernel model the software
 * tracer records with (record/kmodel.h): an AUX event opened and mapped
 * through the recorder's kernel seam, filled by the model's AUX output path
 * (perf_aux_output_begin/end, a PERF_RECORD_AUX in the data ring for each
 * piece), as under ptrec record --emulate.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <intel-pt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/kernel.h"
#include "record/kmodel.h"
#include "record/kmodel_int.h"
#include "record/ring.h"
#include "tracefile/tfile.h"
#include "base/util.h"

#define PAGE 4096

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct gen {
	struct pt_encoder *enc;
	uint64_t last_psb, tsc, tnt;
	unsigned ntnt;
	size_t size;
	int err;
};

static uint64_t gen_off(struct gen *g)
{
	uint64_t off = 0;

	if (pt_enc_get_offset(g->enc, &off) < 0)
		g->err = -1;
	return off;
}

static void emit(struct gen *g, struct pt_packet *p)
{
	int e;

	if (g->err)
		return;
	e = pt_enc_next(g->enc, p);
	if (e < 0)
		g->err = e;
}

static void flush_tnt(struct gen *g)
{
	struct pt_packet p = { .type = ppt_tnt_8 };

	if (!g->ntnt)
		return;
	p.payload.tnt.bit_size = (uint8_t)g->ntnt;
	p.payload.tnt.payload = g->tnt;
	emit(g, &p);
	g->tnt = 0;
	g->ntnt = 0;
}

/* PSB+ every 4 KiB, as psb_period asks; the TSC moves on. */
static void maybe_psb(struct gen *g, uint64_t ip)
{
	struct pt_packet p = { .type = ppt_psb };
	uint64_t off = gen_off(g);

	if (off - g->last_psb < 4096 && g->last_psb)
		return;
	flush_tnt(g);
	g->last_psb = off ? off : 1;
	emit(g, &p);
	p.type = ppt_tsc;
	p.payload.tsc.tsc = g->tsc += 5000 + rnd() % 1000;
	emit(g, &p);
	memset(&p, 0, sizeof(p));
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	emit(g, &p);
	memset(&p, 0, sizeof(p));
	p.type = ppt_fup;
	p.payload.ip.ipc = pt_ipc_sext_48;
	p.payload.ip.ip = ip;
	emit(g, &p);
	p.type = ppt_psbend;
	emit(g, &p);
}

static void bit(struct gen *g, bool taken)
{
	g->tnt = g->tnt << 1 | taken;
	if (++g->ntnt == 6)
		flush_tnt(g);
}

static void tip(struct gen *g, uint64_t ip)
{
	struct pt_packet p = { .type = ppt_tip };

	flush_tnt(g);
	p.payload.ip.ipc = pt_ipc_update_16;
	p.payload.ip.ip = ip;
	emit(g, &p);
}

/*
 * "loopy": a model program. 24 functions, each a fixed list of branch sites
 * (conditionals with a per-site bias, loops with a per-site trip count,
 * indirect jumps with a per-site target); calls follow a Markov chain with
 * strong locality; MTC every 256 bytes or so. Repetitive like real PT.
 * "noisy": TNT bits drawn at random, TIPs to random targets from a pool,
 * MTC and CYC sprinkled in; close to the worst case for compression.
 */
static long make_pt(uint8_t *buf, size_t size, bool noisy)
{
	enum { NF = 24, NS = 24 };
	struct { uint8_t kind, bias, trips; uint64_t target; } site[NF][NS];
	struct pt_config cfg;
	struct gen g = { .tsc = 1000000, .size = size };
	uint64_t last_mtc = 0, targets[64], n;
	unsigned f = 0;
	int i, k;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + size;
	g.enc = pt_alloc_encoder(&cfg);
	if (!g.enc)
		return -ENOMEM;
	for (i = 0; i < 64; i++)
		targets[i] = 0x401000 + (rnd() % 0x40000);
	for (i = 0; i < NF; i++)
		for (k = 0; k < NS; k++) {
			site[i][k].kind =
			    (uint8_t)(rnd() % 10); /* 0: indirect, 1-2: loop, else cond */
			site[i][k].bias = (uint8_t)(rnd() % 100);
			site[i][k].trips = (uint8_t)(2 + rnd() % 30);
			site[i][k].target = targets[rnd() % 64];
		}
	while (!g.err && gen_off(&g) + 256 < size) {
		struct pt_packet p = { .type = ppt_mtc };

		maybe_psb(&g, targets[f % 64]);
		if (gen_off(&g) - last_mtc > 256) {
			last_mtc = gen_off(&g);
			flush_tnt(&g);
			p.payload.mtc.ctc = (uint8_t)(g.tsc >> 8);
			g.tsc += 64;
			emit(&g, &p);
		}
		if (noisy) {
			uint64_t r = rnd() % 100;

			if (r < 70) {
				bit(&g, rnd() % 8 != 0);
			} else if (r < 92) {
				tip(&g, targets[rnd() % 64]);
			} else {
				struct pt_packet c = { .type = ppt_cyc };

				flush_tnt(&g);
				c.payload.cyc.value = 1 + rnd() % 300;
				emit(&g, &c);
			}
			continue;
		}
		/* one call of function f */
		for (k = 0; k < NS; k++) {
			if (site[f][k].kind == 0) {
				tip(&g, site[f][k].target);
			} else if (site[f][k].kind <= 2) {
				for (i = 1; i < site[f][k].trips; i++)
					bit(&g, true);
				bit(&g, false);
			} else {
				/* strongly biased, sometimes the other way */
				bit(&g, (rnd() % 100) < (site[f][k].bias < 50 ? 3u : 97u));
			}
		}
		bit(&g, true);	/* the compressed return */
		f = rnd() % 4 ? (f + 1) % 4 + (f / 4) * 4 : (unsigned)(rnd() % NF);
	}
	flush_tnt(&g);
	n = gen_off(&g);
	pt_free_encoder(g.enc);
	if (g.err)
		return g.err < 0 ? g.err : -EINVAL;
	return (long)n;
}

/* Checks that the generated bytes are a valid packet stream. */
static int check_pt(uint8_t *buf, size_t n, uint64_t *npackets)
{
	struct pt_config cfg;
	struct pt_packet_decoder *dec;
	struct pt_packet p;
	int err;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + n;
	dec = pt_pkt_alloc_decoder(&cfg);
	if (!dec)
		return -ENOMEM;
	err = pt_pkt_sync_forward(dec);
	*npackets = 0;
	while (err >= 0) {
		err = pt_pkt_next(dec, &p, sizeof(p));
		if (err >= 0)
			(*npackets)++;
	}
	pt_pkt_free_decoder(dec);
	return err == -pte_eos ? 0 : err;
}

struct producer {
	uint8_t *meta_mem, *aux;
	struct perf_event_mmap_page *meta;
	uint64_t aux_size, total;
	const uint8_t *pat;
	size_t patlen;
	struct prec_kmodel *m; /* the model's rows: the model writes, through event fd */
	int fd;
};

/* The model's side of a model row: pieces of up to 64 KiB where aux_tail leaves room. */
static void *produce_model(void *arg)
{
	struct producer *p = arg;
	struct km_sid sid = { 1, 1, 0, 0 };
	uint64_t head = 0, pos = 0;

	while (head < p->total) {
		uint64_t tail = __atomic_load_n(&p->meta->aux_tail, __ATOMIC_ACQUIRE);
		/* CIRC_SPACE() in perf_aux_output_begin(): one byte always stays free */
		uint64_t n = PREC_MIN(PREC_MIN(p->aux_size - (head - tail) - 1, (uint64_t)(64 << 10)),
				      p->total - head);
		size_t done;

		n = PREC_MIN(n, (uint64_t)(p->patlen - pos));
		if (!n) {
			sched_yield();
			continue;
		}
		pthread_mutex_lock(&p->m->lock);
		done = prec_km_aux(p->m, prec_km_ev(p->m, p->fd), p->pat + pos, (size_t)n, &sid);
		pthread_mutex_unlock(&p->m->lock);
		if (done != n)
			break; /* the model refused room it had: the run's byte count shows it */
		pos = (pos + n) % p->patlen;
		head += n;
	}
	return NULL;
}

#define MODEL_AUX_TYPE 0x7fffe000u

/*
 * A model row's ring: an AUX event of the model, its data ring (one page) and
 * AUX area mapped through the seam as the recorder maps them.
 */
static int model_ring(struct producer *p, uint64_t aux_size)
{
	const struct prec_kernel *k;
	struct prec_attr a;
	void *base, *aux;
	int err;

	p->m = prec_kmodel_new(1);
	if (!p->m || prec_kmodel_add_pmu(p->m, MODEL_AUX_TYPE, PREC_KMODEL_CAP_AUX))
		return -ENOMEM;
	k = prec_kmodel_kernel(p->m);
	memset(&a, 0, sizeof(a));
	a.size = PREC_ATTR_SIZE;
	a.type = MODEL_AUX_TYPE;
	a.exclude_kernel = 1;
	p->fd = k->open(k->ctx, &a, 0, -1, -1, 0);
	if (p->fd < 0)
		return p->fd;
	err = k->mmap(k->ctx, p->fd, 2 * PAGE, 0, PROT_READ | PROT_WRITE, &base);
	if (err)
		return err;
	p->meta_mem = base;
	p->meta = base;
	p->meta->aux_offset = 2 * PAGE;
	p->meta->aux_size = aux_size;
	err = k->mmap(k->ctx, p->fd, aux_size, 2 * PAGE, PROT_READ | PROT_WRITE, &aux);
	if (err)
		return err;
	p->aux = aux;
	return 0;
}

static void *produce(void *arg)
{
	struct producer *p = arg;
	uint64_t head = 0, pos = 0;

	while (head < p->total) {
		uint64_t tail = __atomic_load_n(&p->meta->aux_tail, __ATOMIC_ACQUIRE);
		uint64_t room = p->aux_size - (head - tail), n, off;

		if (!room) {
			sched_yield();
			continue;
		}
		/* what the hardware would have written since the last PMI: up to 64 KiB */
		n = PREC_MIN(PREC_MIN(room, (uint64_t)(64 << 10)), p->total - head);
		off = head & (p->aux_size - 1);
		for (uint64_t done = 0; done < n;) {
			uint64_t k =
			    PREC_MIN(n - done, p->aux_size - ((off + done) & (p->aux_size - 1)));

			k = PREC_MIN(k, (uint64_t)(p->patlen - pos));
			memcpy(p->aux + ((off + done) & (p->aux_size - 1)), p->pat + pos, k);
			pos = (pos + k) % p->patlen;
			done += k;
		}
		head += n;
		__atomic_store_n(&p->meta->aux_head, head, __ATOMIC_RELEASE);
	}
	return NULL;
}

enum sink_kind { SINK_COPY, SINK_TFILE };

struct consumer {
	enum sink_kind kind;
	int fd;
	struct prec_tfile_writer *w;
	int err;
};

static int consume(void *ctx, uint64_t off, const void *p1, size_t n1, const void *p2, size_t n2)
{
	struct consumer *c = ctx;
	int err;

	if (c->kind == SINK_COPY) {
		err = prec_write_full(c->fd, p1, n1);
		if (!err && n2)
			err = prec_write_full(c->fd, p2, n2);
	} else {
		err = prec_tfile_write_aux(c->w, 0, -1, off, p1, n1);
		if (!err && n2)
			err = prec_tfile_write_aux(c->w, 0, -1, off + n1, p2, n2);
	}
	return err;
}

struct result {
	char name[32];
	double secs, cpu;
	uint64_t bytes, file_bytes;
};

static double cpu_secs(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static int run(const char *dir, enum sink_kind kind, int level, bool async, bool model,
	       int threads, size_t chunk, uint64_t aux_size, uint64_t total, const uint8_t *pat,
	       size_t patlen, struct result *res)
{
	struct producer pr = { 0 };
	struct consumer co = { .kind = kind, .fd = -1 };
	struct prec_ring ring;
	struct stat sb;
	pthread_t th;
	char path[4096];
	uint64_t got = 0, t0;
	double c0;
	int err;

	snprintf(path, sizeof(path), "%s/drain-bench.%d", dir, (int)getpid());
	if (model) {
		err = model_ring(&pr, aux_size);
		if (err) {
			prec_kmodel_free(pr.m);
			return err;
		}
	} else {
		pr.meta_mem = aligned_alloc(PAGE, PAGE * 2);
		pr.aux = aligned_alloc(PAGE, aux_size);
		if (!pr.meta_mem || !pr.aux)
			return -ENOMEM;
		memset(pr.meta_mem, 0, PAGE * 2);
		memset(pr.aux, 0, aux_size);
		pr.meta = (struct perf_event_mmap_page *)pr.meta_mem;
		pr.meta->data_offset = PAGE;
		pr.meta->data_size = PAGE;
	}
	pr.aux_size = aux_size;
	pr.total = total;
	pr.pat = pat;
	pr.patlen = patlen;
	err = prec_ring_init(&ring, pr.meta_mem, PAGE, pr.aux, aux_size, false);
	if (err)
		goto out;
	if (kind == SINK_COPY) {
		co.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (co.fd < 0) {
			err = -errno;
			goto out;
		}
	} else {
		struct prec_tfile_wopts o;

		prec_tfile_wopts_init(&o);
		o.level = level;
		o.async = async;
		o.threads = threads;
		o.chunk_size = chunk;
		o.full_policy = PREC_TFILE_FULL_BLOCK;	/* measure throughput, drop nothing */
		err = prec_tfile_writer_new(path, &o, &co.w);
		if (err)
			goto out;
	}
	c0 = cpu_secs();
	t0 = prec_now_ns();
	pthread_create(&th, NULL, model ? produce_model : produce, &pr);
	while (got < total) {
		long n = prec_ring_read_aux(&ring, consume, &co);

		if (n < 0) {
			err = (int)n;
			break;
		}
		if (model) /* the PERF_RECORD_AUX records: read and let go */
			__atomic_store_n(&pr.meta->data_tail,
					 __atomic_load_n(&pr.meta->data_head, __ATOMIC_ACQUIRE),
					 __ATOMIC_RELEASE);
		if (!n)
			sched_yield();
		got += (uint64_t)n;
		if (model && !n && !prec_km_ev(pr.m, pr.fd)->enabled)
			break; /* the model disabled the event: no more bytes will come */
	}
	pthread_join(th, NULL);
	if (co.w) {
		int e = prec_tfile_writer_close(co.w, NULL);

		err = err ? err : e;
	} else if (close(co.fd) < 0 && !err) {
		err = -errno;
	}
	co.fd = -1;
	res->secs = (double)(prec_now_ns() - t0) / 1e9;
	res->cpu = cpu_secs() - c0;
	res->bytes = got;
	if (!err && stat(path, &sb) == 0)
		res->file_bytes = (uint64_t)sb.st_size;
	/* a tfile must read back to exactly the bytes produced */
	if (!err && co.w) {
		struct prec_tfile_reader *r = NULL;
		struct prec_tfile_stream_key *keys = NULL;
		size_t nk = 0;

		err = prec_tfile_reader_new(path, NULL, &r, NULL);
		if (!err)
			err = prec_tfile_streams(r, &keys, &nk);
		if (!err && (nk != 1 || keys[0].bytes != total))
			err = -PREC_E_INTERNAL;
		free(keys);
		prec_tfile_reader_free(r);
	}
out:
	prec_tfile_writer_free(co.w);
	if (co.fd >= 0)
		close(co.fd);
	unlink(path);
	prec_ring_fini(&ring);
	if (model) {
		prec_kmodel_free(pr.m); /* frees the mappings with it */
	} else {
		free(pr.meta_mem);
		free(pr.aux);
	}
	if (!err && got != total)
		err = -PREC_E_INTERNAL;
	return err;
}

static void usage(FILE *f)
{
	fprintf(
	    f, "usage: drain [--size MiB] [--ring KiB] [--chunk KiB] [--dir DIR] [--levels 0,1,3]\n"
	       "             [--threads N] [--data loopy|noisy] [--repeat N]\n");
}

/* The table: each mode's rate, against the plain copy (the first row). */
static void print_results(const struct result *res, int nres)
{
	int i;

	printf("%-20s %10s %9s %11s %8s %8s\n", "mode", "MB/s", "vs copy", "file MiB", "ratio",
	       "CPU s");
	for (i = 0; i < nres; i++) {
		double mbs = (double)res[i].bytes / res[i].secs / 1e6;
		double base = (double)res[0].bytes / res[0].secs / 1e6;

		printf("%-20s %10.0f %9.2f %11.1f %8.2f %8.2f\n", res[i].name, mbs, mbs / base,
		       (double)res[i].file_bytes / (1 << 20),
		       (double)res[i].bytes / (double)(res[i].file_bytes ? res[i].file_bytes : 1),
		       res[i].cpu);
	}
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"size", required_argument, NULL, 's'},    {"ring", required_argument, NULL, 'r'},
	    {"chunk", required_argument, NULL, 'c'},   {"dir", required_argument, NULL, 'd'},
	    {"levels", required_argument, NULL, 'l'},  {"help", no_argument, NULL, 'h'},
	    {"threads", required_argument, NULL, 't'}, {"data", required_argument, NULL, 'D'},
	    {"repeat", required_argument, NULL, 'R'},  {NULL, 0, NULL, 0},
	};
	uint64_t size_mib = 512, ring_kib = 4096, chunk_kib = 1024, npk = 0, threads = 0,
		 repeat = 3;
	bool noisy = false;
	const char *dir = "/tmp", *levels = "0,1,3";
	struct result res[16];
	size_t patlen = 8u << 20;
	uint8_t *pat;
	int nres = 0, opt, i, err;
	long n;

	while ((opt = getopt_long(argc, argv, "s:r:c:d:l:t:D:R:h", lo, NULL)) != -1) {
		switch (opt) {
		case 's': err = prec_parse_u64(optarg, 0, &size_mib); break;
		case 'r': err = prec_parse_u64(optarg, 0, &ring_kib); break;
		case 'c': err = prec_parse_u64(optarg, 0, &chunk_kib); break;
		case 'd': dir = optarg; err = 0; break;
		case 'l': levels = optarg; err = 0; break;
		case 't': err = prec_parse_u64(optarg, 0, &threads); break;
		case 'R': err = prec_parse_u64(optarg, 0, &repeat); break;
		case 'D':
			noisy = !strcmp(optarg, "noisy");
			err = noisy || !strcmp(optarg, "loopy") ? 0 : -EINVAL;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (err) {
			fprintf(stderr, "drain: bad number '%s'\n", optarg);
			return 2;
		}
	}
	if (!size_mib || ring_kib < 4 || (ring_kib & (ring_kib - 1)) || chunk_kib < 4 ||
	    chunk_kib > 16384) {
		fprintf(stderr,
			"drain: --ring must be a power of two >= 4 KiB, --chunk 4..16384 KiB\n");
		return 2;
	}
	pat = malloc(patlen);
	if (!pat)
		return 1;
	if (threads > 16 || !repeat || repeat > 9) {
		fprintf(stderr, "drain: --threads must be 0..16, --repeat 1..9\n");
		return 2;
	}
	n = make_pt(pat, patlen, noisy);
	if (n <= 0 || check_pt(pat, (size_t)n, &npk)) {
		fprintf(stderr, "drain: could not make a valid PT stream with libipt\n");
		return 1;
	}
	patlen = (size_t)n;
	printf("PT data: %s, %zu bytes, %llu packets (libipt encoder; decodes cleanly)\n",
	       noisy ? "noisy" : "loopy", patlen, (unsigned long long)npk);
	printf("moving %llu MiB through a %llu KiB AUX ring into %s, chunk %llu KiB, "
	       "async threads %s, median of %llu runs\n\n",
	       (unsigned long long)size_mib, (unsigned long long)ring_kib, dir,
	       (unsigned long long)chunk_kib, threads ? "set" : "auto", (unsigned long long)repeat);

	/* rows: i -1 copy, 0 sync, 1 async; 2 copy and 3 async through the model */
	for (i = -1; i < 4 && nres < 15; i++) {
		const char *l = levels;

		while (*l && nres < 15) {
			int level = i < 0 || i == 2 ? 0 : atoi(l);
			bool model = i >= 2;
			struct result tries[9];
			int t, j;

			if (i < 0 || i == 2)
				snprintf(res[nres].name, sizeof(res[nres].name), "%scopy (write(2))",
					 model ? "model " : "");
			else
				snprintf(res[nres].name, sizeof(res[nres].name), "%stfile L%d %s",
					 model ? "model " : "", level, i == 0 ? "sync" : "async");
			/* the median of the runs, by time: this VM's page cache is noisy */
			for (t = 0; t < (int)repeat; t++) {
				memset(&tries[t], 0, sizeof(tries[t]));
				err = run(dir, i < 0 || i == 2 ? SINK_COPY : SINK_TFILE, level,
					  i == 1 || i == 3, model, (int)threads, chunk_kib << 10,
					  ring_kib << 10, size_mib << 20, pat, patlen, &tries[t]);
				if (err)
					goto fail;
				for (j = t; j > 0 && tries[j - 1].secs > tries[j].secs; j--) {
					struct result x = tries[j];

					tries[j] = tries[j - 1];
					tries[j - 1] = x;
				}
			}
			{
				char name[32];

				memcpy(name, res[nres].name, sizeof(name));
				res[nres] = tries[repeat / 2];
				memcpy(res[nres].name, name, sizeof(name));
			}
			nres++;
			if (i < 0 || i == 2)
				break;
			l = strchr(l, ',');
			if (!l)
				break;
			l++;
		}
	}
	print_results(res, nres);
	free(pat);
	return 0;
fail:
	fprintf(stderr, "drain: %s: %s\n", res[nres].name, prec_strerror(err));
	free(pat);
	return 1;
}

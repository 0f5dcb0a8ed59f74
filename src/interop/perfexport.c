// SPDX-License-Identifier: MIT
/*
 * ptrec trace file -> perf.data (see perfexport.h for what is written).
 *
 * The file is written front to back: a header placeholder, the attrs and
 * their id arrays, the data section, the feature index and the feature
 * bodies; then the header is rewritten with the final offsets. Everything is
 * little-endian as on the machines perf.data comes from.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/array.h"
#include "interop/buildid_cache.h"
#include "interop/perfexport.h"
#include "interop/perfexport_kernel.h"
#include "base/perf_format.h"
#include "base/symtab.h"
#include "tracefile/tfile.h"
#include "base/util.h"

/*
 * perf 5.x and 6.0-6.2 refuse attrs larger than their own struct (128 bytes,
 * PERF_ATTR_SIZE_VER7) instead of checking that the extra bytes are zero.
 */
#define EXPORT_ATTR_SIZE 128
#define NAME_ALIGN 64
/* perf's PERF_RECORD_MISC_BUILD_ID_SIZE: the build_id size byte is valid. */
#define MISC_BUILD_ID_SIZE (1u << 15)
/* Trace bytes per AUXTRACE record at most. */
#define AUX_PIECE (4u << 20)
/* Kernel record types end here; the rest are perf's own (user) types. */
#define KERNEL_TYPE_END 64
#define TRAILER_BITS                                                                      \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |    \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

struct sbrec {
	uint64_t time;
	size_t off;      /* in ex.sb */
	uint32_t len;
	uint32_t seq;
	uint32_t time_off; /* of the sample time inside the record, 0: none */
	int32_t tid;     /* sample tid, -1: none */
	uint16_t type;
	uint8_t early;   /* sorts before records of the same time */
};

struct img {
	char *path;
	uint8_t bid[PREC_TFILE_BUILD_ID_MAX];
	uint32_t bid_size;
	bool whole;      /* the whole file was copied into the cache */
	bool code;       /* embedded bytes written into the cache */
	bool failed;     /* the cache entry could not be made */
};

struct ex {
	const struct prec_perf_export_opts *o;
	struct prec_perf_export_report *rep;
	struct prec_diag *d;
	struct prec_tfile_reader *r;
	struct prec_tfile_info *info;
	struct prec_tfile_machine *m;
	struct prec_tfile_events *evs;
	int tracer;
	uint64_t tsc_epoch;  /* the TSC bits above the 56 of a TSC packet (see tsc_epoch()) */
	/* output */
	FILE *f;
	uint64_t pos;
	int werr;
	/* sideband */
	struct prec_buf sb;
	struct sbrec *recs;
	size_t nrecs, caprecs;
	bool saw_switch, saw_switch_cpu_wide;
	/* images */
	struct img *imgs;
	size_t nimgs;
	char symfs[1024];   /* the directory made for perf --symfs */
	char cache[1100];   /* its build-id cache: symfs/.debug */
	bool *samples;   /* per event: the sideband has PERF_RECORD_SAMPLEs of it */
	/* AUXTRACE index: file offsets of the records */
	uint64_t *aux_offs;
	size_t naux, capaux;
};

static void note(struct ex *x, const char *fmt, ...) prec_printf(2, 3);
static void note(struct ex *x, const char *fmt, ...)
{
	char line[PREC_NOTE_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	prec_notes_add_once(&x->rep->notes, "%s", line);
}

/* ---- output ---- */

static void out_write(struct ex *x, const void *p, size_t n)
{
	if (x->werr || !n)
		return;
	if (fwrite(p, 1, n, x->f) != n)
		x->werr = errno ? -errno : -EIO;
	x->pos += n;
}

static void out_zero(struct ex *x, size_t n)
{
	static const uint8_t z[64];

	while (n) {
		size_t k = PREC_MIN(n, sizeof(z));

		out_write(x, z, k);
		n -= k;
	}
}

/* ---- reading the ptrec file ---- */

static const struct prec_tfile_event *event_of_id(const struct ex *x, uint64_t id)
{
	int i = prec_tfile_events_find_id(x->evs, id);

	return i < 0 ? NULL : &x->evs->ev[i];
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* What the exporter needs to know about one sideband record. */
struct recinfo {
	uint64_t time;
	uint32_t time_off;   /* offset of its sample time in the record, 0: none */
	int32_t tid;         /* the sample tid, -1: none */
};

/*
 * Parses the sample fields of one record, and says whether perf can
 * attribute it: perf parses a record with the sample_type of the attr
 * owning its id, so a record whose id no attr lists would be dropped by
 * perf with a warning; it is dropped here instead and counted.
 */
static bool record_info(struct ex *x, const struct perf_event_header *h, struct recinfo *ri)
{
	const uint8_t *p = (const uint8_t *)h;
	const struct prec_tfile_event *e = NULL;
	uint64_t st, id;
	size_t n, off;
	int32_t tid;

	ri->time = 0;
	ri->time_off = 0;
	ri->tid = -1;
	if (x->evs->n == 1) {
		e = &x->evs->ev[0];
	} else {
		st = x->evs->ev[0].attr.sample_type;
		if (!(st & PERF_SAMPLE_IDENTIFIER) || h->size < sizeof(*h) + 8)
			return false;
		id = h->type == PERF_RECORD_SAMPLE ? get_u64(p + sizeof(*h)) :
						     get_u64(p + h->size - 8);
		e = event_of_id(x, id);
		if (!e)
			return false;
	}
	st = e->attr.sample_type;
	if (h->type == PERF_RECORD_SAMPLE) {
		x->samples[e - x->evs->ev] = true;
		off = sizeof(*h);
		off += st & PERF_SAMPLE_IDENTIFIER ? 8 : 0;
		off += st & PERF_SAMPLE_IP ? 8 : 0;
	} else {
		if (!e->attr.sample_id_all)
			return true;
		n = (size_t)__builtin_popcountll(st & TRAILER_BITS) * 8;
		if (h->size < sizeof(*h) + n)
			return false;
		off = h->size - n;
	}
	if (st & PERF_SAMPLE_TID) {
		if (off + 8 > h->size)
			return false;
		memcpy(&tid, p + off + 4, sizeof(tid));
		ri->tid = tid;
		off += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		if (off + 8 > h->size)
			return false;
		ri->time = get_u64(p + off);
		ri->time_off = (uint32_t)off;
	}
	return true;
}

static int add_sideband(struct ex *x, const struct prec_tfile_chunk *c)
{
	const uint8_t *p = c->data;
	size_t off = 0;
	int err;

	while (off + sizeof(struct perf_event_header) <= c->len) {
		struct perf_event_header h;
		struct recinfo ri;

		memcpy(&h, p + off, sizeof(h));
		if (h.size < sizeof(h) || h.size % 8 || h.size > c->len - off) {
			/* the chunk is malformed from here on: nothing after it is trustworthy */
			x->rep->sideband_dropped++;
			break;
		}
		if (h.type == 0 || h.type >= KERNEL_TYPE_END ||
		    !record_info(x, (const struct perf_event_header *)(p + off), &ri)) {
			x->rep->sideband_dropped++;
			off += h.size;
			continue;
		}
		if (h.type == PERF_RECORD_SWITCH)
			x->saw_switch = true;
		if (h.type == PERF_RECORD_SWITCH_CPU_WIDE)
			x->saw_switch_cpu_wide = true;
		if (x->nrecs == x->caprecs) {
			size_t nc = x->caprecs ? x->caprecs * 2 : 256;
			struct sbrec *nr = realloc(x->recs, nc * sizeof(*nr));

			if (!nr)
				return -ENOMEM;
			x->recs = nr;
			x->caprecs = nc;
		}
		x->recs[x->nrecs] = (struct sbrec){ .time = ri.time, .off = x->sb.len,
						    .len = h.size, .seq = (uint32_t)x->nrecs,
						    .time_off = ri.time_off, .tid = ri.tid,
						    .type = (uint16_t)h.type };
		err = prec_buf_append(&x->sb, p + off, h.size);
		if (err)
			return err;
		x->nrecs++;
		off += h.size;
	}
	return 0;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct sbrec *ra = a, *rb = b;

	if (ra->time != rb->time)
		return ra->time < rb->time ? -1 : 1;
	if (ra->early != rb->early)
		return ra->early ? -1 : 1;
	return ra->seq < rb->seq ? -1 : ra->seq > rb->seq;
}

/* ---- the build-id cache ---- */

/*
 * A recorded path becomes a directory name under the cache: it must not
 * climb out of it (a file from another machine may say anything).
 */
static bool safe_path(const char *path)
{
	const char *s = path;

	if (!*path || strlen(path) > 512)
		return false;
	while (*s) {
		const char *e = strchr(s, '/');
		size_t n = e ? (size_t)(e - s) : strlen(s);

		if ((n == 2 && !strncmp(s, "..", 2)) || (n == 1 && s[0] == '.'))
			return false;
		if (!e)
			break;
		s = e + 1;
	}
	return true;
}

/* -ENAMETOOLONG unless snprintf() result @n fit in @size bytes. */
static int fits(int n, size_t size)
{
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* "<cache>/<path>/<hex>/elf" (or vdso), creating the directories and the .build-id link. */
static int cache_entry(struct ex *x, const struct img *im, char *file, size_t size)
{
	return prec_bidcache_add(x->cache, im->path, im->bid, im->bid_size, file, size);
}

static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in, out, err = 0;
	ssize_t n;

	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0) {
		err = -errno;
		goto out;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		err = prec_write_full(out, buf, (size_t)n);
		if (err)
			break;
	}
	if (close(out) && !err)
		err = -errno;
out:
	close(in);
	return err;
}

/* The file on disk at @path (under symfs) if its build id is the recorded one. */
static bool find_on_disk(const struct ex *x, const struct img *im, char *out, size_t size)
{
	uint8_t bid[64];
	int n;

	if (im->path[0] != '/')
		return false;
	snprintf(out, size, "%s%s", x->o && x->o->binaries_root ? x->o->binaries_root : "",
		 im->path);
	n = prec_elf_build_id(out, bid, sizeof(bid));
	return n > 0 && (uint32_t)n == im->bid_size && !memcmp(bid, im->bid, im->bid_size);
}

/*
 * A stripped file's separate debug file (what ptdump takes its symbols
 * from) beside its cache entry @elf, as ".../<hex id>/debug": perf's
 * build-id cache layout (DSO_BINARY_TYPE__BUILD_ID_CACHE_DEBUGINFO), so
 * that perf names the functions ptdump names.
 */
static int add_debug_file(struct ex *x, const char *disk, const char *elf)
{
	char dbg[PATH_MAX + 1024], to[2048];
	size_t n = strlen(elf);

	if (n < 3 || strcmp(elf + n - 3, "elf") ||
	    prec_symtab_debug_file(disk, x->o && x->o->binaries_root ? x->o->binaries_root : "",
				   dbg, sizeof(dbg)))
		return 0;
	snprintf(to, sizeof(to), "%.*sdebug", (int)(n - 3), elf);
	return copy_file(dbg, to);
}

/* The image entry of @ti, made if new (*@fresh then true). NULL on -ENOMEM. */
static struct img *image_of(struct ex *x, const struct prec_tfile_image *ti, bool *fresh)
{
	struct img *im;
	size_t i;

	*fresh = false;
	for (i = 0; i < x->nimgs; i++) {
		im = &x->imgs[i];
		if (im->bid_size == ti->build_id_size &&
		    !memcmp(im->bid, ti->build_id, ti->build_id_size) &&
		    (ti->build_id_size || !strcmp(im->path, ti->path)))
			return im;
	}
	if (PREC_ARRAY_RESERVE(x->imgs, x->nimgs, 1))
		return NULL;
	im = &x->imgs[x->nimgs];
	memset(im, 0, sizeof(*im));
	im->path = strdup(ti->path);
	if (!im->path)
		return NULL;
	im->bid_size = PREC_MIN(ti->build_id_size, PREC_TFILE_BUILD_ID_MAX);
	memcpy(im->bid, ti->build_id, im->bid_size);
	x->nimgs++;
	*fresh = true;
	return im;
}

/*
 * One IMAGE chunk: notes the image for the BUILD_ID feature and fills its
 * cache entry, with the whole file when it is on disk, else with the
 * embedded bytes at their file offsets (a sparse file that perf can read
 * code from, though it has no ELF header to find symbols in).
 */
static int add_image(struct ex *x, const struct prec_tfile_chunk *c)
{
	struct prec_tfile_image ti;
	const void *bytes;
	size_t n;
	struct img *im;
	bool fresh;
	char file[2048], disk[PATH_MAX + 1024];
	int fd, err;

	if (prec_tfile_image_decode(c->data, c->len, &ti, &bytes, &n))
		return 0;
	n = PREC_MIN(n, ti.size > c->arg ? ti.size - c->arg : 0);
	im = image_of(x, &ti, &fresh);
	if (!im)
		return -ENOMEM;
	if (!im->bid_size) {
		if (fresh)
			x->rep->images_no_build_id++;
		return 0;
	}
	if (!x->cache[0] || im->failed || im->whole)
		return 0;
	if (!safe_path(im->path)) {
		im->failed = true;
		note(x, "image path '%.120s' cannot name a cache entry; skipped", im->path);
		return 0;
	}
	if (fresh && find_on_disk(x, im, disk, sizeof(disk))) {
		err = cache_entry(x, im, file, sizeof(file));
		if (!err)
			err = copy_file(disk, file);
		if (err)
			return err;
		im->whole = true;
		return add_debug_file(x, disk, file);
	}
	if (!n)
		return 0;
	err = cache_entry(x, im, file, sizeof(file));
	if (err)
		return err;
	fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	err = 0;
	if (pwrite(fd, bytes, n, (off_t)(ti.file_offset + c->arg)) != (ssize_t)n)
		err = errno ? -errno : -EIO;
	close(fd);
	if (err)
		return err;
	im->code = true;
	return 0;
}

/* ---- the records written ---- */

/*
 * A TSC packet carries TSC bits 0-55; perf takes bits 56-63 from the
 * AUXTRACE record's reference (its rdtsc at read time). The software
 * tracer's clock starts at 0, and perf (6.1 at least) cannot decode a trace
 * whose first timestamps are 0: while setting up a queue it decodes until
 * it sees a non-zero timestamp, and walking instructions before the first
 * state is set dereferences NULL. So for emulated files the upper byte is
 * made 1 (the reference) and time_zero takes it away again: perf times stay
 * exactly the recorded ones, and the trace bytes are untouched.
 */
static uint64_t tsc_epoch(const struct ex *x)
{
	if (prec_tfile_file_header(x->r)->flags & PREC_TFILE_F_EMULATED)
		return 1ull << 56;
	return 0;
}

/* Whether every trace stream is a CPU's (a model's per-CPU rings hold per-thread streams). */
static bool streams_per_cpu(const struct ex *x)
{
	struct prec_tfile_stream_key *keys = NULL;
	size_t n = 0, i;
	bool per_cpu;

	if (prec_tfile_streams(x->r, &keys, &n))
		return false;
	per_cpu = n > 0;
	for (i = 0; i < n; i++)
		per_cpu &= keys[i].cpu >= 0;
	free(keys);
	return per_cpu;
}

static int have_sched_switch(const struct ex *x)
{
	bool attr_cs = false;
	uint32_t i;

	/*
	 * With a non-zero value perf takes a queue's thread from the switch
	 * events, not from its AUXTRACE records: right for per-CPU streams,
	 * wrong for per-thread ones (their thread is the stream's own), also
	 * when the rings were per CPU.
	 */
	if (!(x->m->flags & PREC_TFILE_M_PER_CPU) || !streams_per_cpu(x))
		return 0;
	for (i = 0; i < x->evs->n; i++)
		attr_cs |= x->evs->ev[i].attr.context_switch;
	/* perf insists on an attr with context_switch for 2 and 3 (else -EINVAL) */
	if (!attr_cs || !(x->saw_switch || x->saw_switch_cpu_wide))
		return 0;
	return x->saw_switch_cpu_wide ? 3 : 2;
}

static void write_auxtrace_info(struct ex *x)
{
	const struct prec_tfile_machine *m = x->m;
	const struct prec_attr *a = &x->evs->ev[x->tracer].attr;
	struct perf_record_auxtrace_info hdr;
	uint64_t priv[INTEL_PT_AUXTRACE_PRIV_MAX];

	memset(priv, 0, sizeof(priv));
	priv[INTEL_PT_PMU_TYPE] = a->type;
	priv[INTEL_PT_TIME_SHIFT] = m->time_shift;
	priv[INTEL_PT_TIME_MULT] = m->time_mult;
	priv[INTEL_PT_TIME_ZERO] = m->time_zero - (x->tsc_epoch >> m->time_shift) * m->time_mult;
	priv[INTEL_PT_CAP_USER_TIME_ZERO] = !!(m->flags & PREC_TFILE_M_CAP_USER_TIME_ZERO);
	priv[INTEL_PT_TSC_BIT] = m->pt_tsc_mask;
	priv[INTEL_PT_NORETCOMP_BIT] = m->pt_noretcomp_mask;
	priv[INTEL_PT_HAVE_SCHED_SWITCH] = (uint64_t)x->rep->have_sched_switch;
	/*
	 * The streams are written gathered (overlaps removed, in stream
	 * order), not as the snapshots they were read in: perf must not try
	 * to find overlaps between them.
	 */
	priv[INTEL_PT_SNAPSHOT_MODE] = 0;
	priv[INTEL_PT_PER_CPU_MMAPS] = !!(m->flags & PREC_TFILE_M_PER_CPU);
	priv[INTEL_PT_MTC_BIT] = m->pt_mtc_mask;
	priv[INTEL_PT_MTC_FREQ_BITS] = m->pt_mtc_period_mask;
	priv[INTEL_PT_TSC_CTC_N] = m->cpuid_15[1];
	priv[INTEL_PT_TSC_CTC_D] = m->cpuid_15[0];
	priv[INTEL_PT_CYC_BIT] = m->pt_cyc_mask;
	priv[INTEL_PT_MAX_NONTURBO_RATIO] = m->max_nonturbo_ratio;
	priv[INTEL_PT_FILTER_STR_LEN] = 0;

	memset(&hdr, 0, sizeof(hdr));
	hdr.header.type = PERF_RECORD_AUXTRACE_INFO;
	hdr.header.size = (uint16_t)(sizeof(hdr) + sizeof(priv));
	hdr.type = PERF_AUXTRACE_INTEL_PT;
	out_write(x, &hdr, sizeof(hdr));
	out_write(x, priv, sizeof(priv));
}

static void write_time_conv(struct ex *x)
{
	struct perf_record_time_conv tc;

	memset(&tc, 0, sizeof(tc));
	tc.header.type = PERF_RECORD_TIME_CONV;
	tc.header.size = sizeof(tc);
	tc.time_shift = x->m->time_shift;
	tc.time_mult = x->m->time_mult;
	tc.time_zero = x->m->time_zero - (x->tsc_epoch >> x->m->time_shift) * x->m->time_mult;
	tc.time_cycles = x->m->time_cycles;
	tc.time_mask = x->m->time_mask;
	tc.cap_user_time_zero = !!(x->m->flags & PREC_TFILE_M_CAP_USER_TIME_ZERO);
	tc.cap_user_time_short = !!(x->m->flags & PREC_TFILE_M_CAP_USER_TIME_SHORT);
	out_write(x, &tc, sizeof(tc));
}

/*
 * The length of the next AUXTRACE record's piece of @n trace bytes at @p:
 * all of them up to AUX_PIECE, else up to the last PSB in the first
 * AUX_PIECE bytes, so that no packet is split between two records. perf's
 * decoder (intel_pt_get_next_packet() in intel-pt-decoder.c) joins a packet
 * split across buffers only in 32-bit builds: the kernel's records end
 * where the hardware stopped, after a whole packet, and a split packet is a
 * "Bad packet" error to a 64-bit perf. The PSB is found by its 16 bytes, as
 * libipt's pt_sync_forward() finds it. With no PSB in the window (or only
 * at its start), AUX_PIECE bytes.
 */
static size_t piece_len(const uint8_t *p, size_t n)
{
	static const uint8_t psb[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
					 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82 };
	size_t i;

	if (n <= AUX_PIECE)
		return n;
	for (i = AUX_PIECE - sizeof(psb); i > 0; i--)
		if (p[i] == 2 && p[i + 1] == 0x82 && !memcmp(p + i, psb, sizeof(psb)))
			return i;
	return AUX_PIECE;
}

static int write_aux_piece(struct ex *x, uint32_t idx, const struct prec_tfile_aux *a,
			   uint64_t stream_off, const uint8_t *p, size_t n)
{
	struct perf_record_auxtrace ar;
	size_t pad = (8 - n % 8) % 8;

	if (x->naux == x->capaux) {
		size_t nc = x->capaux ? x->capaux * 2 : 64;
		uint64_t *no = realloc(x->aux_offs, nc * sizeof(*no));

		if (!no)
			return -ENOMEM;
		x->aux_offs = no;
		x->capaux = nc;
	}
	x->aux_offs[x->naux++] = x->pos;
	memset(&ar, 0, sizeof(ar));
	ar.header.type = PERF_RECORD_AUXTRACE;
	ar.header.size = sizeof(ar);
	ar.size = n + pad;
	ar.offset = stream_off;
	ar.reference = x->tsc_epoch;
	ar.idx = idx;
	ar.tid = (uint32_t)a->tid;
	ar.cpu = (uint32_t)a->cpu;
	out_write(x, &ar, sizeof(ar));
	out_write(x, p, n);
	out_zero(x, pad);
	x->rep->aux_records++;
	x->rep->aux_bytes += n;
	return x->werr;
}

static int write_streams(struct ex *x)
{
	struct prec_tfile_stream_key *keys = NULL;
	size_t nkeys = 0, i, k;
	uint64_t total = 0;
	int err;

	err = prec_tfile_streams(x->r, &keys, &nkeys);
	if (err)
		return err;
	for (i = 0; i < nkeys; i++)
		total += keys[i].bytes;
	for (i = 0; i < nkeys && !err; i++) {
		struct prec_tfile_aux *a = NULL;

		err = prec_tfile_gather_aux(x->r, keys[i].cpu, keys[i].tid, &a);
		if (err == -ENOENT) {
			err = 0;
			continue;
		}
		if (err)
			break;
		x->rep->streams++;
		x->rep->aux_missing += a->missing_bytes;
		for (k = 0; k < a->n_runs && !err; k++) {
			const struct prec_tfile_aux_run *run = &a->runs[k];
			size_t done = 0;

			while (done < run->len && !err) {
				size_t n = piece_len(a->data + run->buf_off + done, run->len - done);

				err = write_aux_piece(x, (uint32_t)i, a, run->stream_off + done,
						      a->data + run->buf_off + done, n);
				done += n;
				if (x->o && x->o->progress)
					x->o->progress(x->o->progress_ctx, x->rep->aux_bytes,
						       PREC_MAX(total, x->rep->aux_bytes));
			}
		}
		prec_tfile_aux_free(a);
	}
	free(keys);
	if (!err && x->rep->aux_missing)
		note(x, "%llu trace bytes are missing from the file; perf reports a decode error "
			"where the stream jumps",
		     (unsigned long long)x->rep->aux_missing);
	return err;
}

static int cmp_tid_time(const void *a, const void *b)
{
	const struct sbrec *ra = a, *rb = b;

	if (ra->tid != rb->tid)
		return ra->tid < rb->tid ? -1 : 1;
	if (ra->time != rb->time)
		return ra->time < rb->time ? -1 : 1;
	return (ra->seq > rb->seq) - (ra->seq < rb->seq);
}

/*
 * The kernel writes a thread's FORK before anything else of the thread
 * runs. The software tracer's clock is the process's instruction count,
 * shared by its threads, so a new thread can run (and its ITRACE_START and
 * trace get times) before the parent's FORK record is stamped. perf needs
 * the thread from the FORK when its trace starts (else "failed to get
 * instruction" and the thread's trace is lost), so such a FORK is moved to
 * the time of the thread's first record, ahead of it (also when the times
 * are equal and only the order is wrong).
 */
static int fix_fork_order(struct ex *x)
{
	struct sbrec *first;
	size_t i, nfirst = 0;
	uint32_t moved = 0;

	first = malloc((x->nrecs ? x->nrecs : 1) * sizeof(*first));
	if (!first)
		return -ENOMEM;
	for (i = 0; i < x->nrecs; i++)
		if (x->recs[i].tid > 0 && x->recs[i].type != PERF_RECORD_FORK &&
		    x->recs[i].time_off)
			first[nfirst++] = x->recs[i];
	if (nfirst)
		qsort(first, nfirst, sizeof(*first), cmp_tid_time);
	for (i = 0; i < x->nrecs; i++) {
		struct sbrec *r = &x->recs[i], key = { .time = 0 }, *f;
		size_t lo = 0, hi = nfirst;
		uint64_t body_time_off = sizeof(struct perf_event_header) + 16;

		if (r->type != PERF_RECORD_FORK || r->len < body_time_off || !r->time_off)
			continue;
		/*
		 * The new thread is the body's tid (pid, ppid, tid, ptid): the
		 * sample id is the parent's, which forked (perf_event_fork()).
		 */
		key.tid = (int32_t)prec_rd32(x->sb.data + r->off + sizeof(struct perf_event_header) + 8);
		if (key.tid <= 0)
			continue;
		/* the first record of the thread: lower bound of (tid, 0) */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (cmp_tid_time(&first[mid], &key) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		f = lo < nfirst && first[lo].tid == key.tid ? &first[lo] : NULL;
		if (!f || f->time > r->time || (f->time == r->time && f->seq > r->seq))
			continue;
		r->time = f->time;
		r->early = 1;
		memcpy(x->sb.data + r->off + r->time_off, &r->time, sizeof(r->time));
		if (body_time_off + 8 <= r->time_off)
			memcpy(x->sb.data + r->off + body_time_off, &r->time, sizeof(r->time));
		moved++;
	}
	free(first);
	if (moved)
		note(x, "%u FORK records were stamped after the thread's first record and were "
			"moved before it",
		     moved);
	return 0;
}

static void write_sideband(struct ex *x)
{
	size_t i;

	if (x->nrecs)
		qsort(x->recs, x->nrecs, sizeof(*x->recs), cmp_rec);
	for (i = 0; i < x->nrecs; i++)
		out_write(x, x->sb.data + x->recs[i].off, x->recs[i].len);
	x->rep->sideband_records = x->nrecs;
}

/* ---- feature sections ---- */

static int feat_string(struct prec_buf *b, const char *s)
{
	uint32_t len = (uint32_t)PREC_ALIGN_UP(strlen(s) + 1, NAME_ALIGN);
	size_t start;
	int err;

	err = prec_buf_append(b, &len, sizeof(len));
	if (err)
		return err;
	start = b->len;
	err = prec_buf_reserve(b, len);
	if (err)
		return err;
	memset(b->data + start, 0, len);
	memcpy(b->data + start, s, strlen(s));
	b->len = start + len;
	return 0;
}

static int feat_build_id(struct ex *x, struct prec_buf *b)
{
	size_t i;
	int err;

	for (i = 0; i < x->nimgs; i++) {
		const struct img *im = &x->imgs[i];
		struct {
			struct perf_event_header header;
			int32_t pid;
			uint8_t build_id[24];
		} __attribute__((packed)) ev;
		size_t nlen = strlen(im->path) + 1, plen = PREC_ALIGN_UP(nlen, NAME_ALIGN);
		size_t start;

		if (!im->bid_size || plen > 4096)
			continue;
		memset(&ev, 0, sizeof(ev));
		ev.header.type = PERF_RECORD_HEADER_BUILD_ID;
		ev.header.misc = PERF_RECORD_MISC_USER | MISC_BUILD_ID_SIZE;
		ev.header.size = (uint16_t)(sizeof(ev) + plen);
		ev.pid = -1; /* the host machine */
		memcpy(ev.build_id, im->bid, im->bid_size);
		ev.build_id[20] = (uint8_t)im->bid_size;
		err = prec_buf_append(b, &ev, sizeof(ev));
		if (!err)
			err = prec_buf_reserve(b, plen);
		if (err)
			return err;
		start = b->len;
		memset(b->data + start, 0, plen);
		memcpy(b->data + start, im->path, nlen);
		b->len = start + plen;
	}
	return 0;
}

static int feat_nrcpus(struct ex *x, struct prec_buf *b)
{
	uint32_t n[2] = { x->m->nr_cpus ? x->m->nr_cpus : 1, x->m->nr_cpus ? x->m->nr_cpus : 1 };

	return prec_buf_append(b, n, sizeof(n));
}

static int feat_cpuid(struct ex *x, struct prec_buf *b)
{
	char s[128];

	snprintf(s, sizeof(s), "%s,%u,%u,%u", x->m->vendor, x->m->family, x->m->model,
		 x->m->stepping);
	return feat_string(b, s);
}

static int feat_cmdline(struct ex *x, struct prec_buf *b)
{
	uint32_t n = x->info ? x->info->cmdline_argc : 0, i;
	int err;

	err = prec_buf_append(b, &n, sizeof(n));
	for (i = 0; i < n && !err; i++)
		err = feat_string(b, x->info->cmdline_argv[i] ? x->info->cmdline_argv[i] : "");
	return err;
}

static void export_attr(const struct ex *x, uint32_t i, uint8_t out[EXPORT_ATTR_SIZE])
{
	struct prec_attr a = x->evs->ev[i].attr;

	a.size = EXPORT_ATTR_SIZE;
	/*
	 * perf script refuses to show symbols for an event type whose attr
	 * lacks PERF_SAMPLE_IP, and its synthesized branch and call samples
	 * inherit the tracer's sample_type. The tracer and the tracking event
	 * never sample, so IP changes no record layout (it is not part of the
	 * sample_id trailer).
	 */
	if (!x->samples[i])
		a.sample_type |= PERF_SAMPLE_IP;
	/*
	 * perf before 6.14 reads the aux_action word as reserved and refuses
	 * the attr ("Reserved bits are set unexpectedly"); decoding does not
	 * need it (pauses show in the trace itself), so it is not written.
	 */
	a.aux_action = 0;
	/*
	 * perf accepts a tracepoint attr only with the tracepoint's format in
	 * a TRACING_DATA section, which a ptrec file does not carry. ptrec's
	 * trigger samples hold no raw tracepoint fields, so the event is
	 * written as a software event (EVENT_DESC keeps its name).
	 */
	if (a.type == PERF_TYPE_TRACEPOINT) {
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_DUMMY;
	}
	memcpy(out, &a, EXPORT_ATTR_SIZE);
}

static int feat_event_desc(struct ex *x, struct prec_buf *b)
{
	uint32_t hdr[2] = { x->evs->n, EXPORT_ATTR_SIZE }, i;
	uint8_t attr[EXPORT_ATTR_SIZE];
	int err;

	err = prec_buf_append(b, hdr, sizeof(hdr));
	for (i = 0; i < x->evs->n && !err; i++) {
		const struct prec_tfile_event *e = &x->evs->ev[i];

		export_attr(x, i, attr);
		err = prec_buf_append(b, attr, sizeof(attr));
		if (!err)
			err = prec_buf_append(b, &e->n_ids, sizeof(e->n_ids));
		if (!err)
			err = feat_string(b, e->name && e->name[0] ? e->name : "event");
		if (!err && e->n_ids)
			err = prec_buf_append(b, e->ids, e->n_ids * sizeof(uint64_t));
	}
	return err;
}

static int feat_auxtrace(struct ex *x, struct prec_buf *b)
{
	uint64_t n = x->naux, ent[2];
	size_t i;
	int err;

	err = prec_buf_append(b, &n, sizeof(n));
	for (i = 0; i < x->naux && !err; i++) {
		ent[0] = x->aux_offs[i];
		ent[1] = sizeof(struct perf_record_auxtrace);
		err = prec_buf_append(b, ent, sizeof(ent));
	}
	return err;
}

static int write_features(struct ex *x, uint64_t feats[4])
{
	struct prec_buf body[PERF_HEADER_LAST_FEATURE];
	bool have[PERF_HEADER_LAST_FEATURE];
	struct perf_file_section sec;
	uint64_t off;
	unsigned i, n = 0;
	int err = 0;

	memset(body, 0, sizeof(body));
	memset(have, 0, sizeof(have));
	have[PERF_HEADER_BUILD_ID] = true;
	err = feat_build_id(x, &body[PERF_HEADER_BUILD_ID]);
	if (!err && x->info && x->info->hostname) {
		have[PERF_HEADER_HOSTNAME] = true;
		err = feat_string(&body[PERF_HEADER_HOSTNAME], x->info->hostname);
	}
	if (!err && x->info && x->info->kernel_release) {
		have[PERF_HEADER_OSRELEASE] = true;
		err = feat_string(&body[PERF_HEADER_OSRELEASE], x->info->kernel_release);
	}
	if (!err && x->m->arch[0]) {
		have[PERF_HEADER_ARCH] = true;
		err = feat_string(&body[PERF_HEADER_ARCH], x->m->arch);
	}
	if (!err) {
		have[PERF_HEADER_NRCPUS] = true;
		err = feat_nrcpus(x, &body[PERF_HEADER_NRCPUS]);
	}
	if (!err && x->m->vendor[0]) {
		have[PERF_HEADER_CPUID] = true;
		err = feat_cpuid(x, &body[PERF_HEADER_CPUID]);
	}
	if (!err && x->info) {
		have[PERF_HEADER_CMDLINE] = true;
		err = feat_cmdline(x, &body[PERF_HEADER_CMDLINE]);
	}
	if (!err) {
		have[PERF_HEADER_EVENT_DESC] = true;
		err = feat_event_desc(x, &body[PERF_HEADER_EVENT_DESC]);
	}
	if (!err && x->naux) {
		have[PERF_HEADER_AUXTRACE] = true;
		err = feat_auxtrace(x, &body[PERF_HEADER_AUXTRACE]);
	}
	if (err)
		goto out;
	for (i = 0; i < PERF_HEADER_LAST_FEATURE; i++)
		if (have[i]) {
			feats[i / 64] |= 1ull << (i % 64);
			n++;
		}
	/* the section index comes first, then the bodies in bit order */
	off = x->pos + n * sizeof(sec);
	for (i = 0; i < PERF_HEADER_LAST_FEATURE; i++) {
		if (!have[i])
			continue;
		sec.offset = off;
		sec.size = body[i].len;
		out_write(x, &sec, sizeof(sec));
		off += body[i].len;
	}
	for (i = 0; i < PERF_HEADER_LAST_FEATURE; i++)
		if (have[i])
			out_write(x, body[i].data, body[i].len);
	err = x->werr;
out:
	for (i = 0; i < PERF_HEADER_LAST_FEATURE; i++)
		prec_buf_free(&body[i]);
	return err;
}

/* ---- driver ---- */

static void on_damage(void *ctx, const struct prec_tfile_damage *dmg)
{
	struct prec_perf_export_report *rep = ctx;

	(void)dmg;
	rep->damaged_chunks++;
}

static int load_input(struct ex *x, const char *path)
{
	struct prec_tfile_ropts ro = { .on_damage = on_damage, .ctx = x->rep };
	uint32_t i;
	int err;

	err = prec_tfile_reader_new(path, &ro, &x->r, x->d);
	if (err) {
		if (x->d && !x->d->msg[0])
			prec_diag_set(x->d, err, -1, "cannot read %s: %s", path, prec_strerror(err));
		return err;
	}
	err = prec_tfile_read_machine(x->r, &x->m);
	if (!err)
		err = prec_tfile_read_events(x->r, &x->evs);
	if (err) {
		prec_diag_set(x->d, err == -ENOENT ? -PREC_E_FORMAT : err, -1,
			      "%s has no intact %s description; it cannot be converted", path,
			      x->m ? "event" : "machine");
		return err == -ENOENT ? -PREC_E_FORMAT : err;
	}
	if (prec_tfile_read_info(x->r, &x->info))
		x->info = NULL;
	x->samples = calloc(x->evs->n ? x->evs->n : 1, sizeof(*x->samples));
	if (!x->samples)
		return -ENOMEM;
	x->tracer = -1;
	for (i = 0; i < x->evs->n; i++)
		if (x->evs->ev[i].flags & PREC_TFILE_EV_AUX) {
			x->tracer = (int)i;
			break;
		}
	if (x->tracer < 0) {
		prec_diag_set(x->d, -PREC_E_FORMAT, -1, "%s records no tracer event", path);
		prec_diag_hint(x->d, "only recordings of intel_pt (or --emulate) can be exported");
		return -PREC_E_FORMAT;
	}
	if (x->m->n_etm || strcmp(x->m->vendor, "GenuineIntel") ||
	    (x->evs->ev[x->tracer].pmu && strcmp(x->evs->ev[x->tracer].pmu, "intel_pt"))) {
		prec_diag_set(x->d, -ENOTSUP, -1,
			      "%s is not an Intel PT recording (tracer %s on %s)", path,
			      x->evs->ev[x->tracer].pmu ? x->evs->ev[x->tracer].pmu : "?",
			      x->m->vendor[0] ? x->m->vendor : "unknown CPU");
		prec_diag_hint(x->d, "perf.data export supports Intel PT only; decode this file "
				     "with ptdump");
		return -ENOTSUP;
	}
	if (x->m->flags & PREC_TFILE_M_SNAPSHOT)
		note(x, "recorded in snapshot mode: the snapshots are written as one gathered "
			"stream per CPU or thread");
	for (i = 0; i < x->evs->n; i++) {
		if (x->evs->ev[i].attr.config3)
			note(x, "event %s: config3 dropped (perf.data attrs are written at 128 bytes)",
			     x->evs->ev[i].name);
		if (x->evs->ev[i].attr.type == PERF_TYPE_TRACEPOINT)
			note(x, "tracepoint events are written as software events under their own "
				"names (perf needs tracepoint formats this file does not have)");
		if (x->evs->ev[i].attr.aux_action)
			note(x, "the aux_action bits are not written (perf before 6.14 rejects "
				"them); pauses and resumes show as trace ends and begins");
	}
	return 0;
}

static int read_chunks(struct ex *x)
{
	struct prec_tfile_chunk c;
	int err;

	prec_tfile_rewind(x->r);
	while ((err = prec_tfile_next(x->r, &c)) > 0) {
		if (c.type == PREC_TFILE_SIDEBAND)
			err = add_sideband(x, &c);
		else if (c.type == PREC_TFILE_IMAGE)
			err = add_image(x, &c);
		else if (c.type == PREC_TFILE_KCORE && !x->cache[0])
			note(x, "kernel text in the file is not exported without the --symfs "
				"directory; perf needs a vmlinux or kcore of its own for kernel trace");
		if (err < 0)
			return err;
	}
	return err;
}

/*
 * The kernel's text and symbols into SYMFS/kcore_dir (perfexport_kernel.h),
 * and the kernel MMAP record perf's kernel map comes from, as perf
 * synthesizes it (perf_event__synthesize_kernel_mmap() in
 * tools/perf/util/synthetic-events.c: pid -1, the map's range, pgoff the
 * address of the reference symbol named after "[kernel.kallsyms]"); its
 * sample id is that of the first record, so it sorts first.
 */
static int export_kernel(struct ex *x)
{
	static const char name[] = "[kernel.kallsyms]_text";
	struct prec_kexport k;
	uint8_t rec[sizeof(struct perf_event_header) + 32 + 24 + 64];
	struct perf_event_header h = { PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL, 0 };
	const struct sbrec *first = NULL;
	size_t i, body = 32 + (sizeof(name) + 7) / 8 * 8, trailer = 0;
	uint32_t pid = UINT32_MAX, tid = 0;
	uint64_t start, len;
	char dir[1200];
	int err;

	if (!x->cache[0])
		return 0;
	if (fits(snprintf(dir, sizeof(dir), "%s/kcore_dir", x->symfs), sizeof(dir)))
		return -ENAMETOOLONG;
	err = prec_kexport_write(x->r, dir, &k);
	if (err <= 0)
		return err;
	snprintf(x->rep->kcore_dir, sizeof(x->rep->kcore_dir), "%s", dir);
	if (!k.text) {
		note(x, "kallsyms has no _text: perf cannot place the kernel's text");
		return 0;
	}
	for (i = 0; i < x->nrecs; i++)
		if (x->recs[i].type != PERF_RECORD_SAMPLE && (!first || x->recs[i].time < first->time))
			first = &x->recs[i];
	if (first && x->evs->ev[0].attr.sample_id_all)
		trailer = (size_t)__builtin_popcountll(x->evs->ev[0].attr.sample_type & TRAILER_BITS) * 8;
	if (trailer > 64 || (trailer && first->len < sizeof(h) + trailer))
		return 0;
	memset(rec, 0, sizeof(rec));
	start = k.start;
	len = k.end - k.start;
	h.size = (uint16_t)(sizeof(h) + body + trailer);
	memcpy(rec, &h, sizeof(h));
	memcpy(rec + 8, &pid, 4);
	memcpy(rec + 12, &tid, 4);
	memcpy(rec + 16, &start, 8);
	memcpy(rec + 24, &len, 8);
	memcpy(rec + 32, &k.text, 8);
	memcpy(rec + 40, name, sizeof(name));
	if (trailer)
		memcpy(rec + sizeof(h) + body, x->sb.data + first->off + first->len - trailer, trailer);
	if (PREC_ARRAY_RESERVE(x->recs, x->nrecs, 1))
		return -ENOMEM;
	x->recs[x->nrecs] = (struct sbrec){ .time = first ? first->time : 0, .off = x->sb.len,
					    .len = h.size, .seq = (uint32_t)x->nrecs, .tid = -1,
					    .type = PERF_RECORD_MMAP, .early = 1 };
	err = prec_buf_append(&x->sb, rec, h.size);
	if (!err)
		x->nrecs++;
	return err;
}

static int write_out(struct ex *x, int fd)
{
	struct perf_file_header fh;
	uint8_t attr[EXPORT_ATTR_SIZE];
	struct perf_file_section ids;
	uint64_t ids_off, data_start;
	uint32_t i;
	int err;

	x->f = fdopen(fd, "w");
	if (!x->f)
		return -errno;
	memset(&fh, 0, sizeof(fh));
	out_write(x, &fh, sizeof(fh));
	/* attrs, then the id arrays they point at */
	fh.attrs.offset = x->pos;
	fh.attrs.size = (uint64_t)x->evs->n * (EXPORT_ATTR_SIZE + sizeof(ids));
	ids_off = fh.attrs.offset + fh.attrs.size;
	for (i = 0; i < x->evs->n; i++) {
		export_attr(x, i, attr);
		ids.offset = ids_off;
		ids.size = (uint64_t)x->evs->ev[i].n_ids * sizeof(uint64_t);
		ids_off += ids.size;
		out_write(x, attr, sizeof(attr));
		out_write(x, &ids, sizeof(ids));
	}
	for (i = 0; i < x->evs->n; i++)
		out_write(x, x->evs->ev[i].ids, x->evs->ev[i].n_ids * sizeof(uint64_t));
	x->rep->attrs = x->evs->n;

	data_start = x->pos;
	write_auxtrace_info(x);
	write_time_conv(x);
	err = write_streams(x);
	if (err)
		return err;
	write_sideband(x);
	if (x->werr)
		return x->werr;
	fh.data.offset = data_start;
	fh.data.size = x->pos - data_start;
	err = write_features(x, fh.adds_features);
	if (err)
		return err;

	memcpy(fh.magic, PERF_MAGIC2, sizeof(fh.magic));
	fh.size = sizeof(fh);
	fh.attr_size = EXPORT_ATTR_SIZE + sizeof(struct perf_file_section);
	if (fflush(x->f) || fseeko(x->f, 0, SEEK_SET))
		return -errno;
	x->pos = 0;
	out_write(x, &fh, sizeof(fh));
	if (x->werr)
		return x->werr;
	if (fflush(x->f))
		return errno ? -errno : -EIO;
	return 0;
}

int prec_perf_export(const char *ptrec_path, const char *out_path,
		     const struct prec_perf_export_opts *o, struct prec_perf_export_report *rep,
		     struct prec_diag *d)
{
	struct prec_perf_export_report rep0;
	struct prec_diag d0;
	struct ex x;
	size_t i;
	int fd = -1, err;

	if (!rep)
		rep = &rep0;
	if (!d)
		d = &d0;
	memset(rep, 0, sizeof(*rep));
	memset(d, 0, sizeof(*d));
	memset(&x, 0, sizeof(x));
	x.o = o;
	x.rep = rep;
	x.d = d;
	if (!ptrec_path || !out_path || !out_path[0])
		return prec_diag_set(d, -EINVAL, -1, "no input or output file named");

	err = load_input(&x, ptrec_path);
	if (err)
		goto out;
	/* the output first: a bad path fails before anything else is made */
	fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		prec_diag_set(d, err, -1, "cannot create %s: %s", out_path, strerror(errno));
		prec_diag_hint(d, "check that its directory exists and is writable");
		goto out;
	}
	/* an existing file keeps its mode through O_TRUNC; the trace is private data */
	(void)fchmod(fd, 0600);
	if (!o || !o->no_buildid_cache) {
		if (o && o->symfs_dir)
			err = fits(snprintf(x.symfs, sizeof(x.symfs), "%s", o->symfs_dir), sizeof(x.symfs));
		else
			err = fits(snprintf(x.symfs, sizeof(x.symfs), "%s.debug", out_path),
				   sizeof(x.symfs));
		if (!err)
			err = fits(snprintf(x.cache, sizeof(x.cache), "%s/.debug", x.symfs),
				   sizeof(x.cache));
		/* the directory itself is made, never its parents (a typo must not build a tree) */
		if (!err && mkdir(x.symfs, 0755) && errno != EEXIST)
			err = -errno;
		if (!err)
			err = prec_bidcache_mkdir(x.cache);
		if (err) {
			prec_diag_set(d, err, -1, "cannot create the build-id cache %s: %s",
				      x.cache, prec_strerror(err));
			prec_diag_hint(d, "name another directory, or export without a cache");
			x.cache[0] = 0;
			goto out;
		}
		snprintf(rep->symfs_dir, sizeof(rep->symfs_dir), "%s", x.symfs);
	}
	err = read_chunks(&x);
	if (err) {
		prec_diag_set(d, err, -1, "reading %s (or filling the build-id cache) failed: %s",
			      ptrec_path, prec_strerror(err));
		goto out;
	}
	err = fix_fork_order(&x);
	if (!err)
		err = export_kernel(&x);
	if (err) {
		prec_diag_set(d, err, -1, "exporting %s failed: %s", ptrec_path, prec_strerror(err));
		goto out;
	}
	rep->have_sched_switch = have_sched_switch(&x);
	x.tsc_epoch = tsc_epoch(&x);
	for (i = 0; i < x.nimgs; i++) {
		const struct img *im = &x.imgs[i];

		if (!im->bid_size)
			continue;
		if (im->whole)
			rep->images_whole++;
		else if (im->code)
			rep->images_code_only++;
		else if (x.cache[0])
			rep->images_missing++;
	}
	if (rep->images_code_only)
		note(&x, "%u binaries are not on this machine: their code is in the cache but "
			 "perf shows no symbols for them",
		     rep->images_code_only);

	err = write_out(&x, fd);
	if (err)
		prec_diag_set(d, err, -1, "writing %s failed: %s", out_path, prec_strerror(err));
out:
	if (x.f) {
		if (fclose(x.f) && !err) {
			err = -errno;
			prec_diag_set(d, err, -1, "writing %s failed: %s", out_path, strerror(errno));
		}
	} else if (fd >= 0) {
		close(fd);
	}
	if (err && fd >= 0)
		unlink(out_path);
	for (i = 0; i < x.nimgs; i++)
		free(x.imgs[i].path);
	free(x.imgs);
	free(x.recs);
	free(x.aux_offs);
	free(x.samples);
	prec_buf_free(&x.sb);
	free(x.info);
	free(x.m);
	free(x.evs);
	prec_tfile_reader_free(x.r);
	return err;
}

// SPDX-License-Identifier: MIT
/* The CoreSight software tracer, host side: see etm_emulate.h. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "record/emurun.h"
#include "record/etm_emulate.h"
#include "base/perf_format.h"
#include "base/util.h"

_Static_assert(PREC_ETM_BLOCK_WORDS == CS_ETMV4_PRIV_MAX, "perf's ETMv4 block size");

#ifndef EM_AARCH64
#define EM_AARCH64 183
#endif
#ifndef PERF_RECORD_TEXT_POKE
#define PERF_RECORD_TEXT_POKE 20
#endif

/*
 * The trace unit the plugin's output implies (ETMv4.0 on an Armv8 PE):
 * TRCIDR0: instruction trace only, branch broadcast, cycle counting,
 * return stack and conditional-trace absent from the trace, 64-bit
 * timestamps, COMMOPT 1; TRCIDR1: ETMv4.0, designer Arm; TRCIDR2: 64-bit
 * instruction addresses, 32-bit context ID, 8-bit VMID, 12-bit cycle
 * counter; TRCIDR8: no speculation (MAXSPEC 0). TRCCONFIGR has only the
 * options the encoder uses: CID (bit 6) and TS (bit 11).
 */
#define ETM_TRCIDR0 0x28000ea1u
#define ETM_TRCIDR1 0x4100f403u
#define ETM_TRCIDR2 0x00000488u
#define ETM_TRCIDR8 0x00000000u
#define ETM_TRCAUTHSTATUS 0x000000ccu

void prec_etm_regs_get(const struct prec_etm_config *cfg, uint8_t csid,
		       struct prec_etm_regs *regs)
{
	memset(regs, 0, sizeof(*regs));
	regs->trcconfigr = 0x1;
	if (cfg && cfg->contextid)
		regs->trcconfigr |= 1u << 6;
	if (cfg && cfg->timestamp)
		regs->trcconfigr |= 1u << 11;
	regs->trctraceidr = csid & 0x7f;
	regs->trcidr0 = ETM_TRCIDR0;
	regs->trcidr1 = ETM_TRCIDR1;
	regs->trcidr2 = ETM_TRCIDR2;
	regs->trcidr8 = ETM_TRCIDR8;
	regs->trcauthstatus = ETM_TRCAUTHSTATUS;
	/* Timestamps are values of the sideband's clock, as a virtual one's are. */
	regs->ts_source = 1;
}

void prec_etm_regs_block(const struct prec_etm_regs *regs, int cpu,
			 uint64_t block[PREC_ETM_BLOCK_WORDS])
{
	memset(block, 0, PREC_ETM_BLOCK_WORDS * sizeof(*block));
	block[CS_ETM_MAGIC] = CS_ETMV4_MAGIC;
	block[CS_ETM_CPU] = (uint64_t)(int64_t)cpu;
	block[CS_ETM_NR_TRC_PARAMS] = CS_ETMV4_PRIV_MAX - CS_ETM_COMMON_BLK_MAX_V1;
	block[CS_ETMV4_TRCCONFIGR] = regs->trcconfigr;
	block[CS_ETMV4_TRCTRACEIDR] = regs->trctraceidr;
	block[CS_ETMV4_TRCIDR0] = regs->trcidr0;
	block[CS_ETMV4_TRCIDR1] = regs->trcidr1;
	block[CS_ETMV4_TRCIDR2] = regs->trcidr2;
	block[CS_ETMV4_TRCIDR8] = regs->trcidr8;
	block[CS_ETMV4_TRCAUTHSTATUS] = regs->trcauthstatus;
	block[CS_ETMV4_TS_SOURCE] = regs->ts_source;
}

/* 1: aarch64 ELF, 0: anything else, <0: error. */
static int probe_aarch64(const char *path)
{
	unsigned char h[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	uint16_t mach;

	if (fd < 0)
		return -errno;
	n = read(fd, h, sizeof(h));
	close(fd);
	if (n < 0)
		return -errno;
	if (n < 20 || memcmp(h, ELFMAG, SELFMAG))
		return 0;
	memcpy(&mach, h + 18, 2);
	return h[EI_CLASS] == ELFCLASS64 && h[EI_DATA] == ELFDATA2LSB && mach == EM_AARCH64;
}

int prec_etm_check_program(const char *prog, char *path, size_t size, struct prec_diag *diag)
{
	int r;

	r = prec_emurun_find_program(prog, path, size, diag);
	if (r < 0)
		return r;
	r = probe_aarch64(path);
	if (r < 0)
		return prec_diag_set(diag, r, -1, "cannot read '%s': %s", path, strerror(-r));
	if (!r) {
		prec_diag_set(diag, -ENOEXEC, -1, "'%s' is not an aarch64 Linux program", path);
		prec_diag_hint(diag, "the CoreSight software tracer runs 64-bit Arm ELF executables "
				     "(build them with aarch64-linux-gnu-gcc -static)");
		return -ENOEXEC;
	}
	return 0;
}

/* Streams seen so far: index = position in @tid. */
struct streams {
	uint32_t *tid;
	size_t n, cap;
	unsigned base;
};

static int stream_of(struct streams *st, uint32_t pid, uint32_t tid, const struct prec_etm_ops *ops)
{
	size_t i;

	for (i = 0; i < st->n; i++)
		if (st->tid[i] == tid)
			return 0;
	if (st->base + st->n > 0x6f)
		return -E2BIG;
	if (st->n == st->cap) {
		size_t cap = st->cap ? 2 * st->cap : 16;
		uint32_t *p = realloc(st->tid, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		st->tid = p;
		st->cap = cap;
	}
	st->tid[st->n++] = tid;
	return ops->stream ? ops->stream(ops->ctx, pid, tid, (unsigned)(st->n - 1),
					 (uint8_t)(st->base + st->n - 1)) : 0;
}

/* The recording's own callbacks and the streams they have seen. */
struct run_ctx {
	const struct prec_etm_ops *ops;
	struct streams st;
};

static int run_aux(void *ctx, uint32_t pid, uint32_t tid, uint64_t offset, const void *data,
		   size_t size)
{
	struct run_ctx *c = ctx;
	int r = stream_of(&c->st, pid, tid, c->ops);

	if (r < 0)
		return r;
	return c->ops->aux ? c->ops->aux(c->ops->ctx, pid, tid, offset, data, size) : 0;
}

static void run_trig_off(void *ctx, uint32_t *flags)
{
	struct run_ctx *c = ctx;

	if (c->ops->trig_off)
		c->ops->trig_off(c->ops->ctx, flags);
}

static int run_sched(void *ctx, uint32_t pid, uint32_t tid, uint64_t time, int what,
		     uint32_t slot)
{
	struct run_ctx *c = ctx;

	return c->ops->sched ? c->ops->sched(c->ops->ctx, pid, tid, time, what, slot) : 0;
}

static int run_sideband(void *ctx, const void *rec, size_t size)
{
	struct run_ctx *c = ctx;
	uint32_t type;

	memcpy(&type, rec, 4);
	if (type == PERF_RECORD_ITRACE_START && size >= 16) {
		/* Streams are numbered in the order their threads start. */
		uint32_t ids[2];
		int r;

		memcpy(ids, (const uint8_t *)rec + 8, 8);
		r = stream_of(&c->st, ids[0], ids[1], c->ops);
		if (r < 0)
			return r;
	}
	return c->ops->sideband ? c->ops->sideband(c->ops->ctx, rec, size) : 0;
}

static int check_program(const char *prog, char *path, size_t size, char *interp, size_t isize,
			 struct prec_diag *diag)
{
	interp[0] = 0;
	return prec_etm_check_program(prog, path, size, diag);
}

/* The trace unit's options, as the plugin reads them (emu_proto.h). */
static int prepare(const void *c, struct prec_buf *b, struct prec_diag *diag)
{
	const struct prec_etm_config *cfg = c;

	if (cfg->sync_period && (cfg->sync_period < 8 || cfg->sync_period > 20))
		return prec_diag_set(diag, -EINVAL, -1, "the sync period must be 8..20 (log2 of bytes)");
	if (cfg->csid_base > 0x6f)
		return prec_diag_set(diag, -EINVAL, -1, "trace IDs go up to 0x6f");
	prec_buf_printf(b, "etm 1\ntimestamp %d\ncontextid %d\nsync_period %u\n", cfg->timestamp,
			cfg->contextid, cfg->sync_period ? cfg->sync_period : 12);
	return 0;
}

static const struct prec_emurun_tracer tracer = {
	.qemu_default = "qemu-aarch64",
	.plugin_file = "ptrec-emu-etm.so",
	.config_name = "ptrec-emu-etm-config",
	.check_program = check_program,
	.prepare = prepare,
};

int prec_etm_run(const struct prec_etm_config *cfg, const struct prec_etm_ops *ops,
		 int *wstatus, struct prec_diag *diag)
{
	struct run_ctx c = { .ops = ops };
	struct prec_emu_ops run_ops = { .ctx = &c, .aux = run_aux, .sideband = run_sideband,
					.trig_off = run_trig_off, .sched = run_sched };
	struct prec_emurun run = { .tracer = &tracer, .cfg = cfg, .ops = ops ? &run_ops : NULL };
	int r;

	if (cfg) {
		c.st.base = cfg->csid_base ? cfg->csid_base : PREC_ETM_CSID_BASE;
		PREC_EMURUN_SET(&run, cfg);
		run.filters = cfg->filters;
		run.nfilters = cfg->nfilters;
	}
	r = prec_emurun_run(&run, wstatus, diag);
	free(c.st.tid);
	return r;
}

/* ---- in-memory recording ---------------------------------------------- */

struct rec_ctx {
	const struct prec_etm_ops *tee;
	struct prec_etm_recording *rec;
	size_t max_stream;
	size_t *caps;
};

static struct prec_etm_stream *rec_stream(struct rec_ctx *c, uint32_t tid)
{
	size_t i;

	for (i = 0; i < c->rec->nstreams; i++)
		if (c->rec->streams[i].tid == tid)
			return &c->rec->streams[i];
	return NULL;
}

static int rec_on_stream(void *ctx, uint32_t pid, uint32_t tid, unsigned index, uint8_t csid)
{
	struct rec_ctx *c = ctx;
	struct prec_etm_recording *rec = c->rec;
	struct prec_etm_stream *s;
	size_t *caps;

	if (c->tee && c->tee->stream) {
		int r = c->tee->stream(c->tee->ctx, pid, tid, index, csid);

		if (r < 0)
			return r;
	}
	if (index != rec->nstreams)
		return -EPROTO;
	if (PREC_ARRAY_RESERVE(rec->streams, rec->nstreams, 1) ||
	    PREC_ARRAY_RESERVE(c->caps, rec->nstreams, 1))
		return -ENOMEM;
	caps = c->caps;
	caps[rec->nstreams] = 0;
	s = &rec->streams[rec->nstreams++];
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->tid = tid;
	s->csid = csid;
	return 0;
}

static int rec_on_aux(void *ctx, uint32_t pid, uint32_t tid, uint64_t offset, const void *data,
		      size_t size)
{
	struct rec_ctx *c = ctx;
	struct prec_etm_stream *s = rec_stream(c, tid);
	size_t *cap;

	if (c->tee && c->tee->aux) {
		int r = c->tee->aux(c->tee->ctx, pid, tid, offset, data, size);

		if (r < 0)
			return r;
	}
	if (!s)
		return -EPROTO;
	cap = &c->caps[s - c->rec->streams];
	if (offset != s->size)
		return -EPROTO;
	if (size > c->max_stream || s->size > c->max_stream - size)
		return -EFBIG;
	if (s->size + size > *cap) {
		size_t ncap = *cap ? *cap : 65536;
		uint8_t *p;

		while (ncap < s->size + size)
			ncap *= 2;
		p = realloc(s->data, ncap);
		if (!p)
			return -ENOMEM;
		s->data = p;
		*cap = ncap;
	}
	memcpy(s->data + s->size, data, size);
	s->size += size;
	return 0;
}

/*
 * Adds @size bytes at @addr to the memory image; regions that overlap or
 * touch are merged (newer bytes win), so the image never has overlaps.
 */
static int mem_add(struct prec_etm_recording *rec, uint64_t addr, const uint8_t *data, size_t size)
{
	uint64_t lo = addr, hi = addr + size;
	size_t i, j;
	uint8_t *buf;
	struct prec_etm_mem *m;

	if (!size)
		return 0;
	for (i = 0; i < rec->nmem; i++) {
		m = &rec->mem[i];
		if (m->addr <= hi && m->addr + m->size >= lo) {
			if (m->addr < lo)
				lo = m->addr;
			if (m->addr + m->size > hi)
				hi = m->addr + m->size;
		}
	}
	if (hi - lo > (1u << 30))
		return -EFBIG;
	buf = calloc(1, (size_t)(hi - lo));
	if (!buf)
		return -ENOMEM;
	for (i = j = 0; i < rec->nmem; i++) {
		m = &rec->mem[i];
		if (m->addr <= hi && m->addr + m->size >= lo && m->addr >= lo &&
		    m->addr + m->size <= hi) {
			memcpy(buf + (m->addr - lo), m->data, m->size);
			free(m->data);
		} else {
			rec->mem[j++] = *m;
		}
	}
	rec->nmem = j;
	memcpy(buf + (addr - lo), data, size);
	if (PREC_ARRAY_RESERVE(rec->mem, rec->nmem, 1)) {
		free(buf);
		return -ENOMEM;
	}
	m = rec->mem;
	m[rec->nmem].addr = lo;
	m[rec->nmem].data = buf;
	m[rec->nmem].size = (size_t)(hi - lo);
	rec->nmem++;
	return 0;
}

/* An MMAP2 record: the mapped bytes of the file, as it is now. */
static int rec_mmap2(struct prec_etm_recording *rec, const uint8_t *p, size_t size)
{
	uint64_t addr, len, pgoff;
	const char *path;
	uint8_t *buf;
	int fd, r;
	long n;

	if (size < 73)
		return -EPROTO;
	memcpy(&addr, p + 16, 8);
	memcpy(&len, p + 24, 8);
	memcpy(&pgoff, p + 32, 8);
	path = (const char *)p + 72;
	if (!memchr(path, 0, size - 72))
		return -EPROTO;
	if (!len || len > (1u << 30))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0; /* gone: the trace of that code cannot be decoded */
	buf = malloc((size_t)len);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	n = -1;
	if (lseek(fd, (off_t)pgoff, SEEK_SET) >= 0)
		n = prec_read_full(fd, buf, (size_t)len);
	close(fd);
	r = n > 0 ? mem_add(rec, addr, buf, (size_t)n) : 0;
	free(buf);
	return r;
}

static int rec_on_sideband(void *ctx, const void *rec_p, size_t size)
{
	struct rec_ctx *c = ctx;
	const uint8_t *p = rec_p;
	struct perf_event_header h;

	if (c->tee && c->tee->sideband) {
		int r = c->tee->sideband(c->tee->ctx, rec_p, size);

		if (r < 0)
			return r;
	}
	memcpy(&h, p, sizeof(h));
	switch (h.type) {
	case PERF_RECORD_MMAP2:
		return rec_mmap2(c->rec, p, size);
	case PERF_RECORD_TEXT_POKE: {
		uint64_t addr;
		uint16_t old_len, new_len;

		if (size < 20)
			return -EPROTO;
		memcpy(&addr, p + 8, 8);
		memcpy(&old_len, p + 16, 2);
		memcpy(&new_len, p + 18, 2);
		if (20 + (size_t)old_len + new_len > size)
			return -EPROTO;
		return mem_add(c->rec, addr, p + 20 + old_len, new_len);
	}
	case PERF_RECORD_SAMPLE:
		c->rec->nsamples++;
		return 0;
	}
	return 0;
}

void prec_etm_recording_free(struct prec_etm_recording *rec)
{
	size_t i;

	if (!rec)
		return;
	for (i = 0; i < rec->nstreams; i++)
		free(rec->streams[i].data);
	for (i = 0; i < rec->nmem; i++)
		free(rec->mem[i].data);
	free(rec->streams);
	free(rec->mem);
	memset(rec, 0, sizeof(*rec));
}

int prec_etm_record(const struct prec_etm_config *cfg, size_t max_stream,
		    const struct prec_etm_ops *tee, struct prec_etm_recording *rec,
		    struct prec_diag *diag)
{
	struct rec_ctx c = { .tee = tee, .rec = rec, .max_stream = max_stream ? max_stream : (256u << 20) };
	struct prec_etm_ops ops = { .ctx = &c, .stream = rec_on_stream, .aux = rec_on_aux,
				    .sideband = rec_on_sideband };
	int r;

	memset(rec, 0, sizeof(*rec));
	r = prec_etm_run(cfg, &ops, &rec->wstatus, diag);
	free(c.caps);
	if (r < 0)
		prec_etm_recording_free(rec);
	return r;
}

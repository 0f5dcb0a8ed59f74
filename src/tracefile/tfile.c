// SPDX-License-Identifier: MIT
/*
 * Trace file payload codecs (INFO, MACHINE, EVENTS, STATS, IMAGE) and the
 * small helpers shared by the writer and the reader. Wire layouts are in
 * man/ptrec-file.5; every integer is little-endian and payload fields are
 * packed without padding, so all reads go through memcpy-based helpers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracefile/tfile.h"
#include "base/util.h"

#define MACHINE_FIXED_V1 184u
#define STATS_FIXED_V1 40u
#define STATS_STREAM_V1 72u
#define EVENT_FIXED_V1 24u
#define IMAGE_FIXED_V1 48u

const char *prec_tfile_snap_reason(uint32_t reason)
{
	switch (reason) {
	case PREC_SNAP_SIGNAL:
		return "signal";
	case PREC_SNAP_END:
		return "end";
	case PREC_SNAP_TRIGGER:
		return "trigger";
	default:
		return "unknown";
	}
}

const char *prec_tfile_type_name(unsigned type)
{
	static const char *const names[] = {
		[PREC_TFILE_INFO] = "INFO",	    [PREC_TFILE_MACHINE] = "MACHINE",
		[PREC_TFILE_EVENTS] = "EVENTS",	    [PREC_TFILE_SIDEBAND] = "SIDEBAND",
		[PREC_TFILE_AUX] = "AUX",	    [PREC_TFILE_IMAGE] = "IMAGE",
		[PREC_TFILE_KSYMS] = "KSYMS",	    [PREC_TFILE_KCORE] = "KCORE",
		[PREC_TFILE_MODULES] = "MODULES",   [PREC_TFILE_STATS] = "STATS",
		[PREC_TFILE_END] = "END",
	};

	if (type < PREC_ARRAY_SIZE(names) && names[type])
		return names[type];
	return "unknown";
}

/* ---- encoding ---- */

static int put(struct prec_buf *b, const void *p, size_t n)
{
	return prec_buf_append(b, p, n);
}

static int put_u16(struct prec_buf *b, uint16_t v)
{
	uint8_t x[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	return put(b, x, 2);
}

static int put_u32(struct prec_buf *b, uint32_t v)
{
	uint8_t x[4];
	int i;

	for (i = 0; i < 4; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	return put(b, x, 4);
}

static int put_u64(struct prec_buf *b, uint64_t v)
{
	uint8_t x[8];
	int i;

	for (i = 0; i < 8; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	return put(b, x, 8);
}

/* Strings carry their NUL so that decoders can point into the payload. */
static int put_str(struct prec_buf *b, const char *s)
{
	size_t n;
	int err;

	if (!s)
		return put_u32(b, 0);
	n = strlen(s) + 1;
	if (n > UINT32_MAX)
		return -EINVAL;
	err = put_u32(b, (uint32_t)n);
	return err ? err : put(b, s, n);
}

/* ---- decoding ---- */

static uint32_t le32(const uint8_t *x)
{
	return (uint32_t)x[0] | (uint32_t)x[1] << 8 | (uint32_t)x[2] << 16 | (uint32_t)x[3] << 24;
}

static uint64_t le64(const uint8_t *x)
{
	return (uint64_t)le32(x) | (uint64_t)le32(x + 4) << 32;
}

struct cur {
	const uint8_t *p;
	size_t len, pos;
	bool bad;
};

static const uint8_t *take(struct cur *c, size_t n)
{
	const uint8_t *r;

	if (c->bad || n > c->len - c->pos) {
		c->bad = true;
		return NULL;
	}
	r = c->p + c->pos;
	c->pos += n;
	return r;
}

static uint16_t get_u16(struct cur *c)
{
	const uint8_t *x = take(c, 2);

	return x ? (uint16_t)(x[0] | x[1] << 8) : 0;
}

static uint32_t get_u32(struct cur *c)
{
	const uint8_t *x = take(c, 4);

	return x ? le32(x) : 0;
}

static uint64_t get_u64(struct cur *c)
{
	const uint8_t *x = take(c, 8);

	return x ? le64(x) : 0;
}

/* Returns a pointer into the payload (NUL-terminated) or NULL for absent. */
static const char *get_str(struct cur *c)
{
	uint32_t n = get_u32(c);
	const uint8_t *s;

	if (c->bad || !n)
		return NULL;
	s = take(c, n);
	if (!s || s[n - 1] != '\0') {
		c->bad = true;
		return NULL;
	}
	return (const char *)s;
}

static void copy_cstr(char *dst, size_t size, const char *s)
{
	if (!s)
		s = "";
	snprintf(dst, size, "%s", s);
}

/* ---- INFO ---- */

int prec_tfile_info_encode(const struct prec_tfile_info *in, struct prec_buf *out)
{
	uint32_t i;
	int err = 0;

	if (!in || !out || (in->cmdline_argc && !in->cmdline_argv) ||
	    (in->workload_argc && !in->workload_argv))
		return -EINVAL;
	err |= put_u32(out, in->flags);
	err |= put_u32(out, 0);
	err |= put_u64(out, in->created_ns);
	err |= put_str(out, in->hostname);
	err |= put_str(out, in->kernel_release);
	err |= put_str(out, in->ptrec_version);
	err |= put_u32(out, in->cmdline_argc);
	for (i = 0; i < in->cmdline_argc; i++)
		err |= put_str(out, in->cmdline_argv[i]);
	err |= put_u32(out, in->workload_argc);
	for (i = 0; i < in->workload_argc; i++)
		err |= put_str(out, in->workload_argv[i]);
	return err ? -ENOMEM : 0;
}

/*
 * Decoded structures are one block: the struct, its pointer arrays, and a
 * copy of the payload the strings point into.
 */
int prec_tfile_info_decode(const void *p, size_t len, struct prec_tfile_info **out)
{
	struct cur c = { .p = p, .len = len };
	struct prec_tfile_info *info = NULL;
	uint32_t ac, wc, i;
	const char **av;
	size_t pos_argv;
	char *copy;

	*out = NULL;
	/* pass 1: validate and count */
	get_u32(&c), get_u32(&c), get_u64(&c);
	get_str(&c), get_str(&c), get_str(&c);
	ac = get_u32(&c);
	if (ac > len / 4)
		return -PREC_E_FORMAT;
	for (i = 0; i < ac && !c.bad; i++)
		get_str(&c);
	wc = get_u32(&c);
	if (wc > len / 4)
		return -PREC_E_FORMAT;
	for (i = 0; i < wc && !c.bad; i++)
		get_str(&c);
	if (c.bad)
		return -PREC_E_FORMAT;

	info = calloc(1, sizeof(*info) + ((size_t)ac + wc) * sizeof(char *) + len + 1);
	if (!info)
		return -ENOMEM;
	av = (const char **)(info + 1);
	copy = (char *)(av + ac + wc);
	memcpy(copy, p, len);

	/* pass 2: fill, pointing into the copy */
	c = (struct cur){ .p = (const uint8_t *)copy, .len = len };
	info->flags = get_u32(&c);
	get_u32(&c);
	info->created_ns = get_u64(&c);
	info->hostname = get_str(&c);
	info->kernel_release = get_str(&c);
	info->ptrec_version = get_str(&c);
	info->cmdline_argc = get_u32(&c);
	pos_argv = 0;
	info->cmdline_argv = av;
	for (i = 0; i < ac; i++)
		av[pos_argv++] = get_str(&c);
	info->workload_argc = get_u32(&c);
	info->workload_argv = av + ac;
	for (i = 0; i < wc; i++)
		av[pos_argv++] = get_str(&c);
	*out = info;
	return 0;
}

/* ---- MACHINE ---- */

int prec_tfile_machine_encode(const struct prec_tfile_machine *m, struct prec_buf *out)
{
	size_t start;
	uint32_t i, j;
	int err = 0;

	if (!m || !out || (m->n_etm && !m->etm))
		return -EINVAL;
	start = out->len;
	err |= put_u32(out, MACHINE_FIXED_V1);
	err |= put_u32(out, m->flags);
	err |= put_u32(out, m->family);
	err |= put_u32(out, m->model);
	err |= put_u32(out, m->stepping);
	err |= put_u32(out, m->max_nonturbo_ratio);
	for (i = 0; i < 4; i++)
		err |= put_u32(out, m->cpuid_14_0[i]);
	for (i = 0; i < 4; i++)
		err |= put_u32(out, m->cpuid_14_1[i]);
	for (i = 0; i < 3; i++)
		err |= put_u32(out, m->cpuid_15[i]);
	err |= put_u32(out, m->nr_cpus);
	err |= put_u32(out, m->page_size);
	err |= put_u32(out, m->time_mult);
	err |= put_u16(out, m->time_shift);
	err |= put_u16(out, 0);
	err |= put_u32(out, m->pt_pmu_type);
	err |= put_u64(out, m->nominal_freq_hz);
	err |= put_u64(out, m->time_zero);
	err |= put_u64(out, m->time_cycles);
	err |= put_u64(out, m->time_mask);
	err |= put_u64(out, m->pt_tsc_mask);
	err |= put_u64(out, m->pt_mtc_mask);
	err |= put_u64(out, m->pt_cyc_mask);
	err |= put_u64(out, m->pt_noretcomp_mask);
	err |= put_u64(out, m->pt_mtc_period_mask);
	err |= put_u64(out, m->pt_cyc_thresh_mask);
	err |= put_u64(out, m->pt_psb_period_mask);
	err |= put_u64(out, m->pt_branch_mask);
	if (!err && out->len - start != MACHINE_FIXED_V1)
		return -PREC_E_INTERNAL;
	err |= put_str(out, m->arch[0] ? m->arch : NULL);
	err |= put_str(out, m->vendor[0] ? m->vendor : NULL);
	err |= put_u32(out, m->n_etm);
	for (i = 0; i < m->n_etm; i++) {
		const struct prec_tfile_etm *e = &m->etm[i];

		if (e->nregs && !e->regs)
			return -EINVAL;
		err |= put_u32(out, (uint32_t)e->cpu);
		err |= put_u32(out, e->kind);
		err |= put_u32(out, e->nregs);
		err |= put_u32(out, 0);
		for (j = 0; j < e->nregs; j++)
			err |= put_u64(out, e->regs[j]);
	}
	return err ? -ENOMEM : 0;
}

int prec_tfile_machine_decode(const void *p, size_t len, struct prec_tfile_machine **out)
{
	struct cur c = { .p = p, .len = len };
	struct prec_tfile_machine *m;
	struct prec_tfile_etm *etm;
	uint32_t fixed, n_etm, i, j;
	uint64_t nregs_total = 0, *regs;
	size_t etm_start;
	int k;

	*out = NULL;
	fixed = get_u32(&c);
	if (c.bad || fixed < MACHINE_FIXED_V1 || fixed > len)
		return -PREC_E_FORMAT;
	c.pos = fixed;
	get_str(&c), get_str(&c);
	n_etm = get_u32(&c);
	if (c.bad || n_etm > (len - c.pos) / 16)
		return -PREC_E_FORMAT;
	etm_start = c.pos;
	for (i = 0; i < n_etm && !c.bad; i++) {
		uint32_t nregs;

		get_u32(&c), get_u32(&c);
		nregs = get_u32(&c);
		get_u32(&c);
		if (nregs > (len - c.pos) / 8)
			return -PREC_E_FORMAT;
		take(&c, (size_t)nregs * 8);
		nregs_total += nregs;
	}
	if (c.bad)
		return -PREC_E_FORMAT;

	m = calloc(1, sizeof(*m) + n_etm * sizeof(*etm) + nregs_total * 8);
	if (!m)
		return -ENOMEM;
	etm = (struct prec_tfile_etm *)(m + 1);
	regs = (uint64_t *)(etm + n_etm);

	c = (struct cur){ .p = p, .len = len, .pos = 4 };
	m->flags = get_u32(&c);
	m->family = get_u32(&c);
	m->model = get_u32(&c);
	m->stepping = get_u32(&c);
	m->max_nonturbo_ratio = get_u32(&c);
	for (k = 0; k < 4; k++)
		m->cpuid_14_0[k] = get_u32(&c);
	for (k = 0; k < 4; k++)
		m->cpuid_14_1[k] = get_u32(&c);
	for (k = 0; k < 3; k++)
		m->cpuid_15[k] = get_u32(&c);
	m->nr_cpus = get_u32(&c);
	m->page_size = get_u32(&c);
	m->time_mult = get_u32(&c);
	m->time_shift = get_u16(&c);
	get_u16(&c);
	m->pt_pmu_type = get_u32(&c);
	m->nominal_freq_hz = get_u64(&c);
	m->time_zero = get_u64(&c);
	m->time_cycles = get_u64(&c);
	m->time_mask = get_u64(&c);
	m->pt_tsc_mask = get_u64(&c);
	m->pt_mtc_mask = get_u64(&c);
	m->pt_cyc_mask = get_u64(&c);
	m->pt_noretcomp_mask = get_u64(&c);
	m->pt_mtc_period_mask = get_u64(&c);
	m->pt_cyc_thresh_mask = get_u64(&c);
	m->pt_psb_period_mask = get_u64(&c);
	m->pt_branch_mask = get_u64(&c);
	c.pos = fixed;
	copy_cstr(m->arch, sizeof(m->arch), get_str(&c));
	copy_cstr(m->vendor, sizeof(m->vendor), get_str(&c));
	c.pos = etm_start;
	m->n_etm = n_etm;
	m->etm = n_etm ? etm : NULL;
	for (i = 0; i < n_etm; i++) {
		etm[i].cpu = (int32_t)get_u32(&c);
		etm[i].kind = get_u32(&c);
		etm[i].nregs = get_u32(&c);
		get_u32(&c);
		etm[i].regs = regs;
		for (j = 0; j < etm[i].nregs; j++)
			*regs++ = get_u64(&c);
	}
	*out = m;
	return 0;
}

/* ---- EVENTS ---- */

int prec_tfile_events_encode(const struct prec_tfile_event *ev, uint32_t n, struct prec_buf *out)
{
	uint32_t i, j;
	int err = 0;

	if ((n && !ev) || !out)
		return -EINVAL;
	err |= put_u32(out, n);
	for (i = 0; i < n && !err; i++) {
		const struct prec_tfile_event *e = &ev[i];
		uint32_t asz = e->attr_size ? e->attr_size : (uint32_t)sizeof(e->attr);
		size_t start = out->len;

		if (asz > sizeof(e->attr) || (e->n_ids && !e->ids))
			return -EINVAL;
		err |= put_u32(out, 0); /* rec_size, patched below */
		err |= put_u32(out, e->flags);
		err |= put_u32(out, (uint32_t)e->leader);
		err |= put_u32(out, asz);
		err |= put_u32(out, e->n_ids);
		err |= put_u32(out, 0);
		/* prec_attr is the kernel's little-endian layout on every target we build for */
		err |= put(out, &e->attr, asz);
		err |= put_str(out, e->name);
		err |= put_str(out, e->spec);
		err |= put_str(out, e->pmu);
		for (j = 0; j < e->n_ids; j++)
			err |= put_u64(out, e->ids[j]);
		if (!err) {
			size_t rs = out->len - start;
			uint8_t *x = (uint8_t *)out->data + start;

			if (rs > UINT32_MAX)
				return -EINVAL;
			x[0] = (uint8_t)rs, x[1] = (uint8_t)(rs >> 8);
			x[2] = (uint8_t)(rs >> 16), x[3] = (uint8_t)(rs >> 24);
		}
	}
	return err ? -ENOMEM : 0;
}

int prec_tfile_events_decode(const void *p, size_t len, struct prec_tfile_events **out)
{
	struct cur c = { .p = p, .len = len };
	struct prec_tfile_events *evs;
	struct prec_tfile_event *ev;
	uint64_t total_ids = 0, *ids;
	uint32_t n, i, j;
	size_t pos;
	char *copy;

	*out = NULL;
	n = get_u32(&c);
	if (c.bad || n > len / EVENT_FIXED_V1)
		return -PREC_E_FORMAT;
	pos = c.pos;
	for (i = 0; i < n; i++) {
		struct cur r;
		uint32_t rs, asz, nid;

		c.pos = pos;
		rs = get_u32(&c);
		if (c.bad || rs < EVENT_FIXED_V1 || rs > len - pos)
			return -PREC_E_FORMAT;
		r = (struct cur){ .p = (const uint8_t *)p + pos, .len = rs, .pos = 12 };
		asz = get_u32(&r);
		nid = get_u32(&r);
		get_u32(&r);
		take(&r, asz);
		get_str(&r), get_str(&r), get_str(&r);
		if (r.bad || nid > (rs - r.pos) / 8)
			return -PREC_E_FORMAT;
		total_ids += nid;
		pos += rs;
	}

	evs = calloc(1, sizeof(*evs) + n * sizeof(*ev) + total_ids * 8 + len + 1);
	if (!evs)
		return -ENOMEM;
	ev = (struct prec_tfile_event *)(evs + 1);
	ids = (uint64_t *)(ev + n);
	copy = (char *)(ids + total_ids);
	memcpy(copy, p, len);
	evs->n = n;
	evs->ev = ev;
	pos = 4;
	for (i = 0; i < n; i++) {
		struct cur r = { .p = (const uint8_t *)copy + pos, .len = len - pos };
		uint32_t rs = get_u32(&r), asz;
		const uint8_t *a;

		ev[i].flags = get_u32(&r);
		ev[i].leader = (int32_t)get_u32(&r);
		asz = get_u32(&r);
		ev[i].n_ids = get_u32(&r);
		get_u32(&r);
		a = take(&r, asz);
		/* A longer attr (newer kernel ABI) keeps its known prefix. */
		memcpy(&ev[i].attr, a, PREC_MIN(asz, (uint32_t)sizeof(ev[i].attr)));
		ev[i].attr_size = asz;
		ev[i].name = get_str(&r);
		ev[i].spec = get_str(&r);
		ev[i].pmu = get_str(&r);
		ev[i].ids = ev[i].n_ids ? ids : NULL;
		for (j = 0; j < ev[i].n_ids; j++)
			*ids++ = get_u64(&r);
		pos += rs;
	}
	*out = evs;
	return 0;
}

int prec_tfile_events_find_id(const struct prec_tfile_events *evs, uint64_t id)
{
	uint32_t i, j;

	if (!evs)
		return -EINVAL;
	for (i = 0; i < evs->n; i++)
		for (j = 0; j < evs->ev[i].n_ids; j++)
			if (evs->ev[i].ids[j] == id)
				return (int)i;
	return -ENOENT;
}

/* ---- STATS ---- */

int prec_tfile_stats_encode(const struct prec_tfile_stats *st, struct prec_buf *out)
{
	uint32_t i;
	int err = 0;

	if (!st || !out || (st->n_streams && !st->streams))
		return -EINVAL;
	err |= put_u32(out, STATS_FIXED_V1);
	err |= put_u32(out, st->n_streams);
	err |= put_u64(out, st->duration_ns);
	err |= put_u64(out, st->lost_records);
	err |= put_u64(out, st->lost_bytes);
	err |= put_u32(out, STATS_STREAM_V1);
	err |= put_u32(out, 0);
	for (i = 0; i < st->n_streams; i++) {
		const struct prec_tfile_stream_stats *s = &st->streams[i];

		err |= put_u32(out, (uint32_t)s->cpu);
		err |= put_u32(out, (uint32_t)s->tid);
		err |= put_u64(out, s->raw_bytes);
		err |= put_u64(out, s->stored_bytes);
		err |= put_u64(out, s->dropped_bytes);
		err |= put_u64(out, s->aux_records);
		err |= put_u64(out, s->truncated);
		err |= put_u64(out, s->overwrite);
		err |= put_u64(out, s->partial);
		err |= put_u64(out, s->collision);
	}
	return err ? -ENOMEM : 0;
}

int prec_tfile_stats_decode(const void *p, size_t len, struct prec_tfile_stats **out)
{
	struct cur c = { .p = p, .len = len };
	struct prec_tfile_stats *st;
	uint32_t fixed, n, ssz, i;

	*out = NULL;
	fixed = get_u32(&c);
	n = get_u32(&c);
	if (c.bad || fixed < STATS_FIXED_V1 || fixed > len)
		return -PREC_E_FORMAT;
	c.pos = 32;
	ssz = get_u32(&c);
	if (ssz < STATS_STREAM_V1 || n > (len - fixed) / ssz)
		return -PREC_E_FORMAT;
	st = calloc(1, sizeof(*st) + (size_t)n * sizeof(*st->streams));
	if (!st)
		return -ENOMEM;
	c.pos = 8;
	st->duration_ns = get_u64(&c);
	st->lost_records = get_u64(&c);
	st->lost_bytes = get_u64(&c);
	st->n_streams = n;
	st->streams = n ? (struct prec_tfile_stream_stats *)(st + 1) : NULL;
	for (i = 0; i < n; i++) {
		struct prec_tfile_stream_stats *s = &st->streams[i];

		c.pos = fixed + (size_t)i * ssz;
		s->cpu = (int32_t)get_u32(&c);
		s->tid = (int32_t)get_u32(&c);
		s->raw_bytes = get_u64(&c);
		s->stored_bytes = get_u64(&c);
		s->dropped_bytes = get_u64(&c);
		s->aux_records = get_u64(&c);
		s->truncated = get_u64(&c);
		s->overwrite = get_u64(&c);
		s->partial = get_u64(&c);
		s->collision = get_u64(&c);
	}
	*out = st;
	return 0;
}

/* ---- IMAGE ---- */

int prec_tfile_image_encode(const struct prec_tfile_image *img, const void *bytes, size_t n,
			    struct prec_buf *out)
{
	uint8_t bid[PREC_TFILE_BUILD_ID_MAX] = { 0 };
	int err = 0;

	if (!img || !out || (n && !bytes) || img->build_id_size > PREC_TFILE_BUILD_ID_MAX)
		return -EINVAL;
	memcpy(bid, img->build_id, img->build_id_size);
	err |= put_u64(out, img->size);
	err |= put_u64(out, img->file_offset);
	err |= put_u64(out, img->vaddr);
	err |= put_u32(out, img->build_id_size);
	err |= put(out, bid, sizeof(bid));
	err |= put_str(out, img->path);
	err |= put(out, bytes, n);
	return err ? -ENOMEM : 0;
}

int prec_tfile_image_decode(const void *p, size_t len, struct prec_tfile_image *img,
			    const void **bytes, size_t *nbytes)
{
	struct cur c = { .p = p, .len = len };
	const uint8_t *bid;

	memset(img, 0, sizeof(*img));
	img->size = get_u64(&c);
	img->file_offset = get_u64(&c);
	img->vaddr = get_u64(&c);
	img->build_id_size = get_u32(&c);
	bid = take(&c, PREC_TFILE_BUILD_ID_MAX);
	img->path = get_str(&c);
	if (c.bad || img->build_id_size > PREC_TFILE_BUILD_ID_MAX)
		return -PREC_E_FORMAT;
	memcpy(img->build_id, bid, PREC_TFILE_BUILD_ID_MAX);
	*bytes = (const uint8_t *)p + c.pos;
	*nbytes = len - c.pos;
	return 0;
}

/* ---- descriptions ---- */

/* "an" before a name that starts with a vowel (an AUX, IMAGE, END chunk), else "a". */
static const char *article(const char *name)
{
	return strchr("AEIOUaeiou", name[0]) && name[0] ? "an" : "a";
}

void prec_tfile_damage_str(const struct prec_tfile_damage *d, char *buf, size_t size)
{
	const char *what = "damaged";

	switch (d->kind) {
	case PREC_TFILE_DMG_HEADER:
		snprintf(buf, size, "offset %llu: no valid chunk header; skipped %llu bytes",
			 (unsigned long long)d->offset, (unsigned long long)d->length);
		return;
	case PREC_TFILE_DMG_TRUNCATED:
		what = d->type ? prec_tfile_type_name((unsigned)d->type) : "partly written";
		snprintf(
		    buf, size,
		    "offset %llu: the file ends inside %s %s chunk; its %llu bytes were ignored",
		    (unsigned long long)d->offset, article(what), what,
		    (unsigned long long)d->length);
		return;
	case PREC_TFILE_DMG_CHECKSUM:
		what = "checksum mismatch";
		break;
	case PREC_TFILE_DMG_DECOMPRESS:
		what = "bad compressed data";
		break;
	case PREC_TFILE_DMG_FLAGS:
		what = "chunk flags unknown to this version";
		break;
	}
	if (d->type == PREC_TFILE_AUX)
		snprintf(buf, size,
			 "offset %llu: %s in AUX chunk of stream cpu %d tid %d (stream bytes "
			 "%llu..%llu); skipped",
			 (unsigned long long)d->offset, what, d->cpu, d->tid,
			 (unsigned long long)d->arg, (unsigned long long)(d->arg + d->length));
	else
		snprintf(buf, size, "offset %llu: %s in %s chunk; skipped",
			 (unsigned long long)d->offset, what,
			 prec_tfile_type_name((unsigned)d->type));
}

const char *prec_tfile_status_str(const struct prec_tfile_status *st, char *buf, size_t size)
{
	char extra[128] = "";

	if (st->damaged)
		snprintf(extra, sizeof(extra), "; %llu damaged place(s), %llu bytes skipped",
			 (unsigned long long)st->damaged, (unsigned long long)st->damaged_bytes);
	if (!st->cut_short)
		snprintf(buf, size, "complete (%llu chunks)%s", (unsigned long long)st->chunks,
			 extra);
	else if (st->cut_offset < st->file_size)
		snprintf(
		    buf, size,
		    "cut short at offset %llu: the file ends inside a chunk (the recording was "
		    "interrupted or the disk was full); the %llu chunks before it are intact%s",
		    (unsigned long long)st->cut_offset, (unsigned long long)st->chunks, extra);
	else
		snprintf(buf, size,
			 "cut short at offset %llu: no end marker (the recording did not finish); "
			 "the %llu chunks before it are intact%s",
			 (unsigned long long)st->cut_offset, (unsigned long long)st->chunks, extra);
	return buf;
}

// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/aux_cache.h"
#include "session/cs_meta.h"
#include "session/load.h"
#include "base/array.h"
#include "base/perf_records.h"
#include "base/perf_abi.h"

static void on_damage(void *ctx, const struct prec_tfile_damage *dmg)
{
	struct prec_load_report *rep = ctx;

	char line[PREC_NOTE_LEN];

	prec_tfile_damage_str(dmg, line, sizeof(line));
	prec_notes_add(&rep->damage, "%s", line);
	/*
	 * A damaged AUX chunk whose header was valid says which stream bytes
	 * are gone: the session reports them as a gap, also at either end of
	 * the stream where no hole between pieces shows it.
	 */
	if (rep->loading && dmg->type == PREC_TFILE_AUX && dmg->raw_len && !rep->lost_err)
		rep->lost_err = prec_session_add_aux_lost(rep->loading, dmg->cpu, dmg->tid,
							  dmg->arg, dmg->raw_len);
}

int prec_load_open(const char *path, struct prec_load_report *rep, struct prec_tfile_reader **out,
		   struct prec_diag *d)
{
	struct prec_tfile_ropts ro = { .on_damage = on_damage, .ctx = rep };

	memset(rep, 0, sizeof(*rep));
	return prec_tfile_reader_new(path, &ro, out, d);
}

/* The value of the bits @mask of @config, shifted down (for contiguous fields). */
static unsigned field(uint64_t config, uint64_t mask)
{
	if (!mask)
		return 0;
	return (unsigned)((config & mask) >> __builtin_ctzll(mask));
}

void prec_load_machine(const struct prec_tfile_machine *fm, const struct prec_tfile_events *evs,
		       struct prec_machine *m)
{
	uint64_t config = 0;
	uint32_t i;

	memset(m, 0, sizeof(*m));
	snprintf(m->vendor, sizeof(m->vendor), "%.15s", fm->vendor);
	/* The decoders know Arm traces by the vendor "ARM". */
	if (!strcmp(fm->arch, "aarch64"))
		snprintf(m->vendor, sizeof(m->vendor), "ARM");
	m->family = (uint16_t)fm->family;
	m->model = (uint8_t)fm->model;
	m->stepping = (uint8_t)fm->stepping;
	m->cpuid_15_eax = fm->cpuid_15[0];
	m->cpuid_15_ebx = fm->cpuid_15[1];
	m->max_nonturbo_ratio = fm->max_nonturbo_ratio;
	m->nominal_mhz = (uint32_t)(fm->nominal_freq_hz / 1000000);
	m->time_shift = fm->time_shift;
	m->time_mult = fm->time_mult;
	m->time_zero = fm->time_zero;
	m->cap_user_time_zero = fm->flags & PREC_TFILE_M_CAP_USER_TIME_ZERO;
	m->per_cpu = fm->flags & PREC_TFILE_M_PER_CPU;
	for (i = 0; evs && i < evs->n; i++)
		if (evs->ev[i].flags & PREC_TFILE_EV_AUX)
			config = evs->ev[i].attr.config;
	m->tsc = config & fm->pt_tsc_mask;
	m->mtc = config & fm->pt_mtc_mask;
	m->cyc = config & fm->pt_cyc_mask;
	m->noretcomp = config & fm->pt_noretcomp_mask;
	m->mtc_period = (uint8_t)field(config, fm->pt_mtc_period_mask);
}

static enum prec_evkind kind_of(const struct prec_tfile_event *e)
{
	if (e->flags & PREC_TFILE_EV_AUX)
		return PREC_EVK_TRACER;
	if (e->flags & PREC_TFILE_EV_TRACKING)
		return PREC_EVK_TRACKING;
	if (e->attr.aux_action & PREC_AUX_PAUSE)
		return PREC_EVK_PAUSE;
	if (e->attr.aux_action & PREC_AUX_RESUME)
		return PREC_EVK_RESUME;
	return PREC_EVK_OTHER;
}

/*
 * Sideband records the session does not model: TEXT_POKE (code written at
 * run time: kernel patching, or the software tracers' signal trampolines)
 * becomes text at its address in every address space; AUX_OUTPUT_HW_ID
 * gives a CoreSight trace unit its trace ID.
 */
static int special_records(struct prec_session *s, const void *buf, size_t len,
			   struct prec_cs_meta *cs, int ring_cpu)
{
	const struct perf_event_header *h;
	size_t pos = 0;
	int err;

	while ((err = prec_perf_next_record(buf, len, &pos, &h)) > 0) {
		const uint8_t *p = (const uint8_t *)h;

		if (h->type == PERF_RECORD_TEXT_POKE && h->size >= 8 + 8 + 4) {
			uint64_t addr;
			uint16_t old_len, new_len;

			memcpy(&addr, p + 8, 8);
			memcpy(&old_len, p + 16, 2);
			memcpy(&new_len, p + 18, 2);
			if (new_len && 20u + old_len + new_len <= h->size) {
				err = prec_session_add_kernel_text(s, addr, p + 20 + old_len, new_len);
				if (err)
					return err;
			}
		} else if (h->type == PERF_RECORD_AUX_OUTPUT_HW_ID && cs && h->size >= 16) {
			uint64_t hw_id;
			struct prec_sample_id sid;
			int cpu = ring_cpu;

			memcpy(&hw_id, p + 8, 8);
			if (prec_perf_sample_id(h, &sid) == 0)
				cpu = (int)sid.cpu;
			prec_cs_meta_apply_hw_id(cs, cpu, hw_id);
		}
	}
	return 0;
}

/*
 * An image split over several IMAGE chunks, gathered until complete. Memory
 * follows the bytes the file holds, not the size an IMAGE chunk declares:
 * each piece is kept as it arrives, minus what earlier pieces already hold
 * (a repeated piece costs nothing), and the image is put together only when
 * its pieces cover all of it. Once added, later pieces of it are ignored.
 */
struct piece {
	uint64_t off, len;
	uint8_t *bytes;
};

struct pending {
	struct prec_tfile_image img;
	char *path;
	struct piece *pc;     /* sorted by offset, not overlapping */
	size_t npc;
	uint64_t have;        /* bytes held: the sum of the pieces' lengths */
	bool done;
};

/* Keeps the parts of bytes [off, off + n) of @p's image that no piece holds yet. */
static int hold(struct pending *p, uint64_t off, const uint8_t *b, uint64_t n)
{
	uint64_t end = off + n;

	while (off < end) {
		size_t i = 0;
		uint64_t stop;
		struct piece *q;
		uint8_t *nb;

		while (i < p->npc && p->pc[i].off + p->pc[i].len <= off)
			i++;
		if (i < p->npc && p->pc[i].off <= off) {
			off = p->pc[i].off + p->pc[i].len; /* held already */
			continue;
		}
		stop = i < p->npc && p->pc[i].off < end ? p->pc[i].off : end;
		if (i && p->pc[i - 1].off + p->pc[i - 1].len == off) {
			/* right after the piece before (pieces come in order): one
			 * buffer grows, which the image can take as it is */
			q = &p->pc[i - 1];
			nb = realloc(q->bytes, q->len + (stop - off));
			if (!nb)
				return -ENOMEM;
			q->bytes = nb;
			memcpy(nb + q->len, b + (off - (end - n)), stop - off);
			q->len += stop - off;
			p->have += stop - off;
			off = stop;
			continue;
		}
		if (PREC_ARRAY_RESERVE(p->pc, p->npc, 1))
			return -ENOMEM;
		memmove(&p->pc[i + 1], &p->pc[i], (p->npc - i) * sizeof(*p->pc));
		q = &p->pc[i];
		q->off = off;
		q->len = stop - off;
		q->bytes = malloc(q->len);
		if (!q->bytes)
			return -ENOMEM; /* the slot is not counted: npc unchanged */
		memcpy(q->bytes, b + (off - (end - n)), q->len);
		p->npc++;
		p->have += q->len;
		off = stop;
	}
	return 0;
}

static void pending_release(struct pending *p)
{
	size_t i;

	for (i = 0; i < p->npc; i++)
		free(p->pc[i].bytes);
	free(p->pc);
	p->pc = NULL;
	p->npc = 0;
}

/* All pieces are there: one buffer, which the session takes. */
static int pending_complete(struct prec_session *s, struct pending *p)
{
	uint8_t *buf;
	size_t i;
	int err;

	if (p->npc == 1 && p->pc[0].len) {
		buf = p->pc[0].bytes; /* one piece holds it all (they came in order) */
		p->pc[0].bytes = NULL;
	} else {
		buf = malloc(p->img.size ? p->img.size : 1);
		if (!buf)
			return -ENOMEM;
		for (i = 0; i < p->npc; i++)
			memcpy(buf + p->pc[i].off, p->pc[i].bytes, p->pc[i].len);
	}
	{
		struct prec_image_desc d = {
			.path = p->path,
			.build_id = p->img.build_id_size ? p->img.build_id : NULL,
			.build_id_size = p->img.build_id_size,
			.file_offset = p->img.file_offset,
			.bytes = buf,
			.size = p->img.size,
		};

		err = prec_session_take_image(s, &d);
	}
	pending_release(p);
	p->done = true;
	return err;
}

static struct pending *pending_of(struct pending **pend, size_t *npend,
				  const struct prec_tfile_image *img)
{
	struct pending *p;
	size_t i;

	for (i = 0; i < *npend; i++) {
		p = &(*pend)[i];
		if (p->img.file_offset == img->file_offset && p->img.size == img->size &&
		    !strcmp(p->path, img->path))
			return p;
	}
	if (PREC_ARRAY_RESERVE(*pend, *npend, 1))
		return NULL;
	p = &(*pend)[*npend];
	memset(p, 0, sizeof(*p));
	p->img = *img;
	p->path = strdup(img->path);
	if (!p->path)
		return NULL;
	p->img.path = p->path;
	(*npend)++;
	return p;
}

static int add_image_piece(struct prec_session *s, struct pending **pend, size_t *npend,
			   const struct prec_tfile_chunk *c)
{
	struct prec_tfile_image img;
	const void *bytes;
	struct pending *p;
	size_t n;
	int err;

	err = prec_tfile_image_decode(c->data, c->len, &img, &bytes, &n);
	if (err || !img.path || !*img.path)
		return 0; /* a malformed image is skipped; the decoder reports missing code */
	if (!n)
		return 0; /* a reference: the session finds the file by path and build id */
	if (img.size > (1ull << 32) || c->arg > img.size || n > img.size - c->arg)
		return 0;
	p = pending_of(pend, npend, &img);
	if (!p)
		return -ENOMEM;
	if (p->done)
		return 0;
	if (c->arg == 0 && n == img.size && !p->npc) {
		/* the whole image in one piece, the common case: no copy to gather */
		struct prec_image_desc d = {
			.path = p->path,
			.build_id = img.build_id_size ? img.build_id : NULL,
			.build_id_size = img.build_id_size,
			.file_offset = img.file_offset,
			.bytes = bytes,
			.size = n,
		};

		p->done = true;
		return prec_session_add_image(s, &d);
	}
	err = hold(p, c->arg, bytes, n);
	if (err)
		return err;
	return p->have == p->img.size ? pending_complete(s, p) : 0;
}

int prec_load_session(struct prec_session *s, struct prec_tfile_reader *r,
		      struct prec_load_report *rep)
{
	struct prec_tfile_machine *fm = NULL;
	struct prec_tfile_events *evs = NULL;
	struct prec_tfile_chunk c;
	struct prec_machine m;
	struct pending *pend = NULL;
	struct prec_cs_meta *cs = NULL;
	size_t npend = 0, i;
	int err;

	rep->file_flags = prec_tfile_file_header(r)->flags;
	rep->loading = s;
	if (rep->aux_by_ref && prec_aux_cache_attach(s, r))
		return -ENOMEM;
	/* AUX payloads by reference are decompressed when decoded, not twice */
	prec_tfile_check_only(r, rep->aux_by_ref ? 1u << PREC_TFILE_AUX : 0);
	err = prec_tfile_read_machine(r, &fm);
	if (err)
		goto out;
	err = prec_tfile_read_events(r, &evs);
	if (err)
		goto out;
	prec_load_machine(fm, evs, &m);
	prec_session_set_machine(s, &m);
	if (fm->n_etm) {
		struct prec_diag d;

		err = prec_cs_meta_from_etm_blocks(fm->etm, fm->n_etm, &cs, &d);
		if (err)
			goto out;
		/* Per-thread streams are what TRBE-like sinks write: unformatted. */
		if (!(fm->flags & PREC_TFILE_M_PER_CPU))
			prec_cs_meta_set_format(cs, -1, PREC_CS_FMT_RAW);
	}
	for (i = 0; i < evs->n; i++) {
		const struct prec_tfile_event *e = &evs->ev[i];
		struct prec_evdesc d = {
			.name = e->name,
			.kind = kind_of(e),
			.sample_type = e->attr.sample_type,
		};

		err = prec_session_add_event(s, &d, e->ids, e->n_ids);
		if (err < 0)
			goto out;
	}
	prec_tfile_rewind(r);
	while ((err = prec_tfile_next(r, &c)) > 0) {
		switch (c.type) {
		case PREC_TFILE_SIDEBAND:
			err = prec_session_add_sideband(s, c.data, c.len, c.cpu);
			if (err == -PREC_E_FORMAT || err == -PREC_E_TRUNCATED) {
				rep->bad_sideband++;
				err = 0;
			}
			if (err >= 0)
				err = special_records(s, c.data, c.len, cs, c.cpu);
			break;
		case PREC_TFILE_AUX:
			if (rep->aux_by_ref)
				err = prec_session_add_aux_ref(s, c.cpu, c.tid, c.arg, c.file_off, 0,
							       c.len);
			else
				err = prec_session_add_aux(s, c.cpu, c.tid, c.arg, c.data, c.len);
			break;
		case PREC_TFILE_IMAGE:
			err = add_image_piece(s, &pend, &npend, &c);
			break;
		case PREC_TFILE_KSYMS:
			err = prec_session_add_kallsyms(s, c.data, c.len);
			break;
		case PREC_TFILE_KCORE:
			err = prec_session_add_kernel_text(s, c.arg, c.data, c.len);
			break;
		default:
			err = 0;
			break;
		}
		if (err < 0)
			goto out;
	}
	if (err < 0)
		goto out;
	err = prec_tfile_status(r, &rep->status);
	if (!err)
		err = rep->lost_err;
	if (err)
		goto out;
	if (cs) {
		err = prec_cs_session_attach(s, cs);
		cs = NULL;
		if (err)
			goto out;
	}
	err = prec_session_finalize(s);
out:
	prec_tfile_check_only(r, 0);
	rep->loading = NULL;
	for (i = 0; i < npend; i++) {
		free(pend[i].path);
		pending_release(&pend[i]);
	}
	free(pend);
	free(fm);
	free(evs);
	prec_cs_meta_free(cs);
	return err;
}

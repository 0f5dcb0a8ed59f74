// SPDX-License-Identifier: MIT
/*
 * The producer side of the model's rings (record/kmodel_ring.c) read by the
 * recorder's consumer (record/ring.h): AUX pieces and their records, a full
 * AUX area (TRUNCATED, the event disabled until enabled again), a full data
 * ring (LOST before the next record that fits), wakeups; and the per-thread
 * streams the recorder files out of one AUX area (record/auxsplit.h).
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "base/perf_records.h"
#include "base/util.h"
#include "record/auxsplit.h"
#include "record/kmodel.h"
#include "record/kmodel_int.h"
#include "record/ring.h"

#define TRACER 0x7e000001u

struct rig {
	struct prec_kmodel *m;
	const struct prec_kernel *k;
	int fd;
	void *base, *aux;
	size_t len;
	struct prec_ring ring;
};

/*
 * An AUX event of this task with @data_pages and an AUX area of @aux_bytes,
 * mapped with @aux_prot (PROT_READ alone: overwrite mode).
 */
static void rig_up_prot(struct rig *g, size_t data_pages, size_t aux_bytes, int aux_prot)
{
	long page = sysconf(_SC_PAGESIZE);
	struct prec_attr a;
	struct perf_event_mmap_page *pg;

	memset(g, 0, sizeof(*g));
	g->m = prec_kmodel_new(2);
	T_OK(g->m && prec_kmodel_add_pmu(g->m, TRACER, PREC_KMODEL_CAP_AUX |
					 PREC_KMODEL_CAP_AUX_PAUSE) == 0);
	g->k = prec_kmodel_kernel(g->m);
	memset(&a, 0, sizeof(a));
	a.size = PREC_ATTR_SIZE;
	a.type = TRACER;
	a.sample_type = PREC_SAMPLE_ID_TYPE;
	a.sample_id_all = 1;
	a.aux_watermark = (uint32_t)(aux_bytes / 2);
	a.read_format = PERF_FORMAT_LOST;
	g->fd = g->k->open(g->k->ctx, &a, 0, -1, -1, 0);
	T_OK(g->fd >= PREC_KMODEL_FD0);
	g->len = (size_t)page * (data_pages + 1);
	T_EQ_INT(g->k->mmap(g->k->ctx, g->fd, g->len, 0, PROT_READ | PROT_WRITE, &g->base), 0);
	pg = g->base;
	pg->aux_offset = g->len;
	pg->aux_size = aux_bytes;
	if (aux_bytes)
		T_EQ_INT(g->k->mmap(g->k->ctx, g->fd, aux_bytes, (off_t)g->len, aux_prot, &g->aux), 0);
	T_EQ_INT(prec_ring_init(&g->ring, g->base, g->len - (size_t)page, g->aux, aux_bytes,
				!(aux_prot & PROT_WRITE)), 0);
}

static void rig_up(struct rig *g, size_t data_pages, size_t aux_bytes)
{
	rig_up_prot(g, data_pages, aux_bytes, PROT_READ | PROT_WRITE);
}

static void rig_down(struct rig *g)
{
	prec_ring_fini(&g->ring);
	prec_kmodel_free(g->m);
}

static size_t aux(struct rig *g, size_t n, uint32_t tid)
{
	static uint8_t buf[65536];
	struct km_sid s = { 7, tid, 100, 0 };
	size_t r;

	memset(buf, (int)tid, n);
	pthread_mutex_lock(&g->m->lock);
	r = prec_km_aux(g->m, prec_km_ev(g->m, g->fd), buf, n, &s);
	pthread_mutex_unlock(&g->m->lock);
	return r;
}

struct seen {
	uint64_t aux[8][3]; /* offset, size, flags of the AUX records */
	int naux;
	uint64_t lost;      /* sum of the LOST records */
	int nlost, other;
};

static int on_rec(void *ctx, const struct perf_event_header *h)
{
	struct seen *s = ctx;
	const uint8_t *p = (const uint8_t *)(h + 1);

	if (h->type == PERF_RECORD_AUX && s->naux < 8) {
		s->aux[s->naux][0] = prec_rd64(p);
		s->aux[s->naux][1] = prec_rd64(p + 8);
		s->aux[s->naux++][2] = prec_rd64(p + 16);
	} else if (h->type == PERF_RECORD_LOST) {
		s->lost += prec_rd64(p + 8);
		s->nlost++;
	} else {
		s->other++;
	}
	return 0;
}

static int eat_aux(void *ctx, uint64_t off, const void *p1, size_t n1, const void *p2, size_t n2)
{
	(void)off;
	(void)p1;
	(void)p2;
	*(uint64_t *)ctx += n1 + n2;
	return 0;
}

/* perf_aux_output_begin()/end(): what fits, TRUNCATED, disabled, enabled again. */
static void aux_full_truncates(void)
{
	struct rig g;
	struct seen s = { 0 };
	struct pollfd pfd;
	uint64_t got = 0;

	rig_up(&g, 2, 8192);
	T_EQ_U64(aux(&g, 3000, 1), 3000);
	T_EQ_U64(aux(&g, 6000, 1), 8191 - 3000); /* CIRC_SPACE leaves one byte */
	T_EQ_U64(aux(&g, 10, 1), 0);             /* disabled now */
	pfd = (struct pollfd){ .fd = g.fd, .events = POLLIN };
	T_EQ_INT(g.k->poll(g.k->ctx, &pfd, 1, 0), 1); /* the TRUNCATED end woke it */
	T_OK(prec_ring_read_data(&g.ring, on_rec, &s) > 0);
	T_EQ_INT(s.naux, 2);
	T_EQ_U64(s.aux[0][0], 0);
	T_EQ_U64(s.aux[0][1], 3000);
	T_EQ_U64(s.aux[0][2], 0);
	T_EQ_U64(s.aux[1][0], 3000);
	T_EQ_U64(s.aux[1][1], 5191);
	T_EQ_U64(s.aux[1][2], PERF_AUX_FLAG_TRUNCATED);
	T_EQ_U64(prec_ring_read_aux(&g.ring, eat_aux, &got), 8191);
	T_EQ_U64(got, 8191);
	T_EQ_U64(aux(&g, 10, 1), 0); /* room again, but still disabled */
	T_EQ_INT(prec_kernel_enable(g.k, g.fd), 0);
	T_EQ_U64(aux(&g, 10, 1), 10);
	memset(&s, 0, sizeof(s));
	prec_ring_read_data(&g.ring, on_rec, &s);
	T_EQ_INT(s.naux, 1);
	T_EQ_U64(s.aux[0][0], 8191);
	rig_down(&g);
}

/*
 * Overwrite mode (the AUX area mapped read-only): the tracer writes on over
 * the oldest bytes, never TRUNCATED, never disabled, no watermark wakeup;
 * the records say OVERWRITE with the running head after each piece, and a
 * snapshot is the newest bytes.
 */
static void aux_overwrite_wraps(void)
{
	struct rig g;
	struct seen s = { 0 };
	struct pollfd pfd;
	uint64_t got = 0;

	rig_up_prot(&g, 2, 8192, PROT_READ);
	T_EQ_U64(aux(&g, 3000, 1), 3000);
	T_EQ_U64(aux(&g, 6000, 2), 6000);  /* the whole piece: over the oldest bytes */
	T_EQ_U64(aux(&g, 10000, 3), 10000); /* more than the area */
	T_EQ_U64(aux(&g, 10, 1), 10);      /* still enabled */
	pfd = (struct pollfd){ .fd = g.fd, .events = POLLIN };
	T_EQ_INT(g.k->poll(g.k->ctx, &pfd, 1, 0), 0); /* no watermark wakeup */
	T_OK(prec_ring_read_data(&g.ring, on_rec, &s) > 0);
	T_EQ_INT(s.naux, 4);
	T_EQ_U64(s.aux[0][0], 3000);
	T_EQ_U64(s.aux[0][1], 3000);
	T_EQ_U64(s.aux[0][2], PERF_AUX_FLAG_OVERWRITE);
	T_EQ_U64(s.aux[2][0], 19000);
	T_EQ_U64(s.aux[2][2], PERF_AUX_FLAG_OVERWRITE);
	T_EQ_U64(s.aux[3][0], 19010);
	T_EQ_U64(((struct perf_event_mmap_page *)g.base)->aux_head, 19010);
	/* the newest area: 8182 bytes of thread 3's piece, then thread 1's 10 */
	T_EQ_U64(prec_ring_read_snapshot(&g.ring, 0, eat_aux, &got), 8192);
	T_EQ_U64(((const uint8_t *)g.aux)[19009 % 8192], 1);
	T_EQ_U64(((const uint8_t *)g.aux)[19000 % 8192 - 1], 3);
	rig_down(&g);
}

/* read() with PERF_FORMAT_LOST: the value, then event->lost_samples. */
static uint64_t read_lost(struct rig *g)
{
	uint64_t v[2] = { 0, ~0ull };

	T_EQ_INT((int)g->k->read(g->k->ctx, g->fd, v, sizeof(v)), 16);
	return v[1];
}

/*
 * perf_output_begin(): a full data ring counts losses, reported before the
 * next record; the event's PERF_FORMAT_LOST count has them before that LOST
 * record exists and keeps them after.
 */
static void data_full_loses(void)
{
	struct rig g;
	struct seen s = { 0 };
	struct km_sid sid = { 7, 7, 1, 0 };
	uint8_t body[56] = { 0 };
	int i, kept = 0;

	rig_up(&g, 1, 0);
	pthread_mutex_lock(&g.m->lock);
	for (i = 0; i < 100; i++)
		kept += prec_km_output(g.m, prec_km_ev(g.m, g.fd), PERF_RECORD_COMM, 0, body,
				       sizeof(body), &sid) == 0;
	pthread_mutex_unlock(&g.m->lock);
	T_OK(kept > 0 && kept < 100);
	T_EQ_U64(read_lost(&g), (uint64_t)(100 - kept));
	prec_ring_read_data(&g.ring, on_rec, &s);
	T_EQ_INT(s.other, kept);
	T_EQ_INT(s.nlost, 0);
	pthread_mutex_lock(&g.m->lock);
	T_EQ_INT(prec_km_output(g.m, prec_km_ev(g.m, g.fd), PERF_RECORD_COMM, 0, body,
				sizeof(body), &sid), 0);
	pthread_mutex_unlock(&g.m->lock);
	prec_ring_read_data(&g.ring, on_rec, &s);
	T_EQ_INT(s.nlost, 1);
	T_EQ_U64(s.lost, (uint64_t)(100 - kept));
	T_EQ_INT(s.other, kept + 1);
	T_EQ_U64(read_lost(&g), (uint64_t)(100 - kept));
	rig_down(&g);
}

/* ---- per-thread streams out of one AUX area ---- */

struct piece_out {
	int32_t tid[8];
	uint64_t off[8], n[8];
	int k;
};

static int split_fn(void *ctx, int32_t tid, uint64_t off, const void *p, size_t n)
{
	struct piece_out *o = ctx;

	(void)p;
	if (o->k < 8) {
		o->tid[o->k] = tid;
		o->off[o->k] = off;
		o->n[o->k++] = n;
	}
	return 0;
}

/* An AUX record of @tid for ring bytes [@off, @off + @size) with @flags. */
static void aux_rec(uint8_t *buf, uint32_t tid, uint64_t off, uint64_t size, uint64_t flags)
{
	struct perf_event_header h = { PERF_RECORD_AUX, 0, 8 + 24 + 32 };
	uint32_t ids[2] = { 7, tid };

	memset(buf, 0, h.size);
	memcpy(buf, &h, 8);
	memcpy(buf + 8, &off, 8);
	memcpy(buf + 16, &size, 8);
	memcpy(buf + 24, &flags, 8);
	memcpy(buf + 32, ids, 8);
}

static void auxsplit_streams(void)
{
	struct prec_auxsplit *s = prec_auxsplit_new();
	struct piece_out o = { { 0 }, { 0 }, { 0 }, 0 };
	uint8_t rec[64], out[64], bytes[300] = { 0 };
	uint64_t v;

	T_OK(s != NULL);
	/* Bytes before their record are held. */
	T_EQ_INT(prec_auxsplit_bytes(s, 0, bytes, 100, split_fn, &o), 0);
	T_EQ_INT(o.k, 0);
	aux_rec(rec, 11, 0, 100, 0);
	T_EQ_INT(prec_auxsplit_record(s, (void *)rec, out), 0);
	T_EQ_INT(prec_auxsplit_flush(s, split_fn, &o), 0); /* ...and handed out by the record */
	T_EQ_INT(o.k, 1);
	aux_rec(rec, 12, 100, 50, 0);
	T_EQ_INT(prec_auxsplit_record(s, (void *)rec, out), 0);
	memcpy(&v, out + 8, 8);
	T_EQ_U64(v, 0); /* thread 12's stream starts at 0 */
	aux_rec(rec, 11, 150, 30, PERF_AUX_FLAG_TRUNCATED);
	T_EQ_INT(prec_auxsplit_record(s, (void *)rec, out), 0);
	memcpy(&v, out + 8, 8);
	T_EQ_U64(v, 100); /* thread 11 goes on where it was */
	T_EQ_INT(prec_auxsplit_bytes(s, 100, bytes, 80, split_fn, &o), 0);
	T_EQ_INT(o.k, 3);
	T_EQ_INT(o.tid[0], 11);
	T_EQ_U64(o.n[0], 100);
	T_EQ_INT(o.tid[1], 12);
	T_EQ_U64(o.off[1], 0);
	T_EQ_U64(o.n[1], 50);
	T_EQ_INT(o.tid[2], 11);
	T_EQ_U64(o.off[2], 100);
	/* After the overrun each stream continues behind a gap. */
	aux_rec(rec, 12, 180, 20, 0);
	T_EQ_INT(prec_auxsplit_record(s, (void *)rec, out), 0);
	memcpy(&v, out + 8, 8);
	T_EQ_U64(v, 51);
	T_EQ_INT((int)prec_auxsplit_nstreams(s), 2);
	/* Overwrite records end where the piece ends; a gap after a snapshot. */
	o.k = 0;
	aux_rec(rec, 11, 260, 60, PERF_AUX_FLAG_OVERWRITE);
	T_EQ_INT(prec_auxsplit_record(s, (void *)rec, out), 0);
	memcpy(&v, out + 8, 8);
	T_EQ_U64(v, 131); /* behind the overrun's gap */
	T_EQ_INT(prec_auxsplit_bytes(s, 230, bytes, 30, split_fn, &o), 0);
	T_EQ_INT(o.k, 1);
	T_EQ_INT(o.tid[0], 11);
	T_EQ_U64(o.off[0], 131 + 30); /* the last 30 bytes of the piece */
	prec_auxsplit_gap(s);
	aux_rec(rec, 11, 300, 40, PERF_AUX_FLAG_OVERWRITE);
	T_EQ_INT(prec_auxsplit_record(s, (void *)rec, out), 0);
	memcpy(&v, out + 8, 8);
	T_EQ_U64(v, 131 + 60 + 1);
	prec_auxsplit_free(s);
}

static const struct t_case cases[] = {
	T(aux_full_truncates),
	T(aux_overwrite_wraps),
	T(data_full_loses),
	T(auxsplit_streams),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}

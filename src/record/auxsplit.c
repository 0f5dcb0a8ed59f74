// SPDX-License-Identifier: MIT
/* Per-thread streams out of one AUX area: see auxsplit.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/perf_records.h"
#include "base/util.h"
#include "record/auxsplit.h"

struct piece {
	uint64_t ring_off, size, stream_off;
	int32_t tid;
};

struct stream {
	int32_t tid;
	uint64_t next; /* stream offset of its next piece */
	bool gap;      /* an overrun since its last piece */
};

struct prec_auxsplit {
	struct piece *q;
	size_t nq, head;
	struct stream *st;
	size_t nst;
	struct prec_buf held; /* bytes read before their record */
	uint64_t held_off;
};

struct prec_auxsplit *prec_auxsplit_new(void)
{
	return calloc(1, sizeof(struct prec_auxsplit));
}

void prec_auxsplit_free(struct prec_auxsplit *s)
{
	if (!s)
		return;
	free(s->q);
	free(s->st);
	prec_buf_free(&s->held);
	free(s);
}

static struct stream *stream_of(struct prec_auxsplit *s, int32_t tid)
{
	size_t i;

	for (i = 0; i < s->nst; i++)
		if (s->st[i].tid == tid)
			return &s->st[i];
	if (PREC_ARRAY_RESERVE(s->st, s->nst, 1))
		return NULL;
	s->st[s->nst] = (struct stream){ tid, 0, false };
	return &s->st[s->nst++];
}

int prec_auxsplit_record(struct prec_auxsplit *s, const struct perf_event_header *h, void *out)
{
	struct prec_sample_id sid;
	struct stream *st;
	uint64_t off, size, flags;
	size_t i;

	if (h->size < sizeof(*h) + 24 || prec_perf_sample_id(h, &sid))
		return -PREC_E_FORMAT;
	off = prec_rd64((const uint8_t *)(h + 1));
	size = prec_rd64((const uint8_t *)(h + 1) + 8);
	flags = prec_rd64((const uint8_t *)(h + 1) + 16);
	st = stream_of(s, (int32_t)sid.tid);
	if (!st)
		return -ENOMEM;
	/* Overwrite mode: the driver's head, where the piece ends (perf_aux_output_end()). */
	if (flags & PERF_AUX_FLAG_OVERWRITE)
		off -= size;
	if (st->gap && size) {
		st->next += 1;
		st->gap = false;
	}
	memcpy(out, h, h->size);
	memcpy((uint8_t *)out + sizeof(*h), &st->next, 8);
	if (size) {
		if (s->head && s->head == s->nq) {
			s->nq = s->head = 0;
		}
		if (PREC_ARRAY_RESERVE(s->q, s->nq, 1))
			return -ENOMEM;
		s->q[s->nq++] = (struct piece){ off, size, st->next, st->tid };
		st->next += size;
	}
	if (flags & PERF_AUX_FLAG_TRUNCATED)
		for (i = 0; i < s->nst; i++)
			s->st[i].gap = true;
	return 0;
}

/* Hands out the held bytes the queued pieces cover. */
static int flush(struct prec_auxsplit *s, prec_auxsplit_fn fn, void *ctx)
{
	size_t used = 0;
	int err = 0;

	while (s->head < s->nq && !err) {
		struct piece *pc = &s->q[s->head];
		uint64_t at = s->held_off + used, end = s->held_off + s->held.len;
		uint64_t skip, n;

		if (at == end)
			break;
		if (pc->ring_off + pc->size <= at) { /* bytes that were never read */
			s->head++;
			continue;
		}
		if (pc->ring_off >= end)
			break;
		if (pc->ring_off > at) { /* bytes no record claims */
			used += (size_t)(pc->ring_off - at);
			continue;
		}
		skip = at - pc->ring_off;
		n = PREC_MIN(pc->size - skip, end - at);
		err = fn(ctx, pc->tid, pc->stream_off + skip, s->held.data + used, (size_t)n);
		used += (size_t)n;
		if (skip + n == pc->size)
			s->head++;
	}
	memmove(s->held.data, s->held.data + used, s->held.len - used);
	s->held.len -= used;
	s->held_off += used;
	return err;
}

int prec_auxsplit_bytes(struct prec_auxsplit *s, uint64_t off, const void *p, size_t n,
			prec_auxsplit_fn fn, void *ctx)
{
	if (!s->held.len)
		s->held_off = off;
	else if (s->held_off + s->held.len != off)
		s->held.len = 0, s->held_off = off; /* the ring skipped: start again */
	if (n && prec_buf_append(&s->held, p, n))
		return -ENOMEM;
	return flush(s, fn, ctx);
}

int prec_auxsplit_flush(struct prec_auxsplit *s, prec_auxsplit_fn fn, void *ctx)
{
	return s->held.len ? flush(s, fn, ctx) : 0;
}

void prec_auxsplit_gap(struct prec_auxsplit *s)
{
	size_t i;

	for (i = 0; i < s->nst; i++)
		s->st[i].gap = true;
}

size_t prec_auxsplit_nstreams(const struct prec_auxsplit *s)
{
	return s->nst;
}

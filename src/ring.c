// SPDX-License-Identifier: MIT
/*
 * perf ring consumer. The ordering rules come from the comments on struct
 * perf_event_mmap_page in the uapi header: read the head, then a read
 * barrier before touching the data it covers; a full barrier between the
 * last read of the data and the store of the tail, so the kernel can never
 * overwrite bytes we are still copying.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "ring.h"
#include "util.h"

#define REC_MAX 65536	/* header.size is 16 bits */

static bool pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

int prec_ring_init(struct prec_ring *r, void *base, size_t data_size, void *aux_base,
		   size_t aux_size, bool overwrite)
{
	struct perf_event_mmap_page *m = base;
	uint64_t off;

	if (!r || !base || !pow2(data_size) || data_size < 8)
		return -EINVAL;
	if ((aux_size && (!aux_base || !pow2(aux_size))) || (!aux_size && aux_base))
		return -EINVAL;
	if (m->data_size && m->data_size != data_size)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	off = m->data_offset ? m->data_offset : (uint64_t)sysconf(_SC_PAGESIZE);
	r->meta = m;
	r->data = (uint8_t *)base + off;
	r->data_size = data_size;
	r->aux = aux_base;
	r->aux_size = aux_size;
	r->overwrite = overwrite;
	r->data_tail = __atomic_load_n(&m->data_tail, __ATOMIC_RELAXED);
	r->aux_tail = __atomic_load_n(&m->aux_tail, __ATOMIC_RELAXED);
	r->rec = malloc(REC_MAX);
	if (!r->rec)
		return -ENOMEM;
	return 0;
}

void prec_ring_fini(struct prec_ring *r)
{
	if (!r)
		return;
	free(r->rec);
	r->rec = NULL;
}

/* Copies @n bytes at ring position @pos (which may wrap) to @dst. */
static void ring_copy(const uint8_t *ring, uint64_t size, uint64_t pos, void *dst, size_t n)
{
	uint64_t off = pos & (size - 1);
	size_t first = (size_t)PREC_MIN((uint64_t)n, size - off);

	memcpy(dst, ring + off, first);
	if (n > first)
		memcpy((uint8_t *)dst + first, ring, n - first);
}

static void publish_data_tail(struct prec_ring *r, uint64_t tail)
{
	/* smp_mb(): our reads of the records complete before the kernel sees the tail. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
	r->data_tail = tail;
}

long prec_ring_read_data(struct prec_ring *r, prec_ring_record_fn fn, void *ctx)
{
	uint64_t head, tail, start;
	long err = 0;

	if (!r || !r->meta || !fn)
		return -EINVAL;
	/* Acquire pairs with the kernel's release of data_head (smp_rmb after the load). */
	head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	start = tail = r->data_tail;
	if (head - tail > r->data_size)
		return -PREC_E_FORMAT;
	while (head - tail >= sizeof(struct perf_event_header)) {
		uint64_t off = tail & (r->data_size - 1);
		const struct perf_event_header *h;
		struct perf_event_header hh;
		int ret;

		/* Records are 8-byte multiples, but do not rely on it for the header. */
		ring_copy(r->data, r->data_size, tail, &hh, sizeof(hh));
		if (hh.size < sizeof(hh) || hh.size > head - tail) {
			err = -PREC_E_FORMAT;
			break;
		}
		if (off + hh.size <= r->data_size) {
			h = (const struct perf_event_header *)(r->data + off);
		} else {
			ring_copy(r->data, r->data_size, tail, r->rec, hh.size);
			h = (const struct perf_event_header *)r->rec;
		}
		ret = fn(ctx, h);
		if (ret < 0) {
			err = ret;
			break;
		}
		tail += hh.size;
		if (ret > 0)
			break;
	}
	if (tail != start)
		publish_data_tail(r, tail);
	return err ? err : (long)(tail - start);
}

long prec_ring_skip_data(struct prec_ring *r)
{
	uint64_t head, n;

	if (!r || !r->meta)
		return -EINVAL;
	head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	n = head - r->data_tail;
	if (n)
		publish_data_tail(r, head);
	return (long)n;
}

uint64_t prec_ring_data_pending(const struct prec_ring *r)
{
	return __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE) - r->data_tail;
}

uint64_t prec_ring_aux_pending(const struct prec_ring *r)
{
	if (!r->aux_size)
		return 0;
	return __atomic_load_n(&r->meta->aux_head, __ATOMIC_ACQUIRE) - r->aux_tail;
}

static bool any_nonzero(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i])
			return true;
	return false;
}

static long read_snapshot(struct prec_ring *r, prec_ring_aux_fn fn, void *ctx)
{
	uint64_t head = __atomic_load_n(&r->meta->aux_head, __ATOMIC_ACQUIRE);
	uint64_t pos = head & (r->aux_size - 1), len;
	int ret;

	if (r->snap_taken && head == r->aux_tail)
		return 0;
	if (!r->aux_wrapped &&
	    (head >= r->aux_size || any_nonzero(r->aux + pos, r->aux_size - pos)))
		r->aux_wrapped = true;
	if (r->aux_wrapped) {
		len = r->aux_size;
		ret =
		    fn(ctx, r->snap_off, r->aux + pos, r->aux_size - pos, pos ? r->aux : NULL, pos);
	} else {
		len = pos;
		if (!len)
			return 0;
		ret = fn(ctx, r->snap_off, r->aux, pos, NULL, 0);
	}
	if (ret < 0)
		return ret;
	/* aux_tail doubles as "head at the last snapshot"; the kernel ignores it here. */
	r->aux_tail = head;
	r->snap_taken = true;
	r->snap_off += len + r->aux_size;
	return (long)len;
}

long prec_ring_read_aux(struct prec_ring *r, prec_ring_aux_fn fn, void *ctx)
{
	uint64_t head, tail, off, n, n1;
	int ret;

	if (!r || !r->meta || !fn || !r->aux_size)
		return -EINVAL;
	if (r->overwrite)
		return read_snapshot(r, fn, ctx);
	head = __atomic_load_n(&r->meta->aux_head, __ATOMIC_ACQUIRE);
	tail = r->aux_tail;
	n = head - tail;
	if (!n)
		return 0;
	if (n > r->aux_size)
		return -PREC_E_FORMAT;
	off = tail & (r->aux_size - 1);
	n1 = PREC_MIN(n, r->aux_size - off);
	ret = fn(ctx, tail, r->aux + off, (size_t)n1, n > n1 ? r->aux : NULL, (size_t)(n - n1));
	if (ret < 0)
		return ret;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&r->meta->aux_tail, head, __ATOMIC_RELEASE);
	r->aux_tail = head;
	return (long)n;
}

int prec_ring_time_conv(const struct prec_ring *r, struct prec_time_conv *tc)
{
	const struct perf_event_mmap_page *m;
	uint32_t seq;
	int tries = 0;

	if (!r || !r->meta || !tc)
		return -EINVAL;
	m = r->meta;
	/* The page's lock is a seqcount: retry while the kernel updates it. */
	do {
		if (++tries > 1000)
			return -EAGAIN;
		seq = __atomic_load_n(&m->lock, __ATOMIC_ACQUIRE);
		tc->time_shift = m->time_shift;
		tc->time_mult = m->time_mult;
		tc->time_zero = m->time_zero;
		tc->time_cycles = m->time_cycles;
		tc->time_mask = m->time_mask;
		tc->cap_user_time = m->cap_user_time;
		tc->cap_user_time_zero = m->cap_user_time_zero;
		tc->cap_user_time_short = m->cap_user_time_short;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while ((seq & 1) || __atomic_load_n(&m->lock, __ATOMIC_RELAXED) != seq);
	return 0;
}

/* ---- records ---- */

int prec_ring_count_record(struct prec_ring_counts *c, const struct perf_event_header *h)
{
	const uint8_t *p = (const uint8_t *)h;

	if (!c || !h)
		return -EINVAL;
	c->records++;
	switch (h->type) {
	case PERF_RECORD_AUX: {
		uint64_t flags;

		/* aux_offset, aux_size, flags */
		if (h->size < sizeof(*h) + 24)
			return -PREC_E_FORMAT;
		c->aux_records++;
		c->aux_bytes += prec_rd64(p + 16);
		flags = prec_rd64(p + 24);
		c->truncated += !!(flags & PERF_AUX_FLAG_TRUNCATED);
		c->overwrite += !!(flags & PERF_AUX_FLAG_OVERWRITE);
		c->partial += !!(flags & PERF_AUX_FLAG_PARTIAL);
		c->collision += !!(flags & PERF_AUX_FLAG_COLLISION);
		break;
	}
	case PERF_RECORD_LOST:
		/* id, lost */
		if (h->size < sizeof(*h) + 16)
			return -PREC_E_FORMAT;
		c->lost_events++;
		c->lost += prec_rd64(p + 16);
		break;
	case PERF_RECORD_LOST_SAMPLES:
		if (h->size < sizeof(*h) + 8)
			return -PREC_E_FORMAT;
		c->lost_samples += prec_rd64(p + 8);
		break;
	case PERF_RECORD_ITRACE_START:
		c->itrace_starts++;
		break;
	}
	return 0;
}

int prec_perf_next_record(const void *buf, size_t len, size_t *pos,
			  const struct perf_event_header **h)
{
	const struct perf_event_header *x;
	size_t left;

	if (!pos || !h || (len && !buf) || *pos > len)
		return -EINVAL;
	left = len - *pos;
	if (!left)
		return 0;
	if (left < sizeof(*x))
		return -PREC_E_FORMAT;
	x = (const struct perf_event_header *)((const uint8_t *)buf + *pos);
	if (x->size < sizeof(*x) || x->size % 8 || x->size > left)
		return -PREC_E_FORMAT;
	*h = x;
	*pos += x->size;
	return 1;
}

int prec_perf_sample_id(const struct perf_event_header *h, struct prec_sample_id *sid)
{
	const uint8_t *t;

	if (!h || !sid)
		return -EINVAL;
	if (h->type == PERF_RECORD_SAMPLE)
		return -EINVAL;
	if (h->size < sizeof(*h) + 32)
		return -PREC_E_FORMAT;
	/* Trailer order: TID (pid, tid), TIME, CPU (cpu, res), IDENTIFIER last. */
	t = (const uint8_t *)h + h->size - 32;
	sid->pid = prec_rd32(t);
	sid->tid = prec_rd32(t + 4);
	sid->time = prec_rd64(t + 8);
	sid->cpu = prec_rd32(t + 16);
	sid->id = prec_rd64(t + 24);
	return 0;
}

int prec_perf_parse_sample(const struct perf_event_header *h, struct prec_trigger_sample *s)
{
	const uint8_t *p;

	if (!h || !s || h->type != PERF_RECORD_SAMPLE)
		return -EINVAL;
	if (h->size < sizeof(*h) + 48)
		return -PREC_E_FORMAT;
	/* Sample order: IDENTIFIER, IP, TID, TIME, CPU, PERIOD. */
	p = (const uint8_t *)h + sizeof(*h);
	s->id = prec_rd64(p);
	s->ip = prec_rd64(p + 8);
	s->pid = prec_rd32(p + 16);
	s->tid = prec_rd32(p + 20);
	s->time = prec_rd64(p + 24);
	s->cpu = prec_rd32(p + 32);
	s->period = prec_rd64(p + 40);
	return 0;
}

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

#include "base/common.h"
#include "record/ring.h"
#include "base/util.h"

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
	free(r->snap_ref);
	r->snap_ref = NULL;
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

/* The reference kept at a snapshot of a position head: what perf's ref_buf is. */
#define SNAP_REF_MAX 4096

/* Copies @n bytes that end at ring position @end (which may wrap) to @dst. */
static void copy_before(const struct prec_ring *r, uint64_t end, uint8_t *dst, size_t n)
{
	ring_copy(r->aux, r->aux_size, end - n, dst, n);
}

/*
 * Whether the bytes before the last snapshot's head are still there and the
 * head has not come round into them since (intel_pt_compare_ref()): then
 * nothing between the two heads was overwritten.
 */
static bool snap_ref_intact(const struct prec_ring *r, uint64_t old, uint64_t head)
{
	uint64_t mask = r->aux_size - 1, start = (old - r->snap_ref_len) & mask;
	uint64_t d = (head - start) & mask;
	uint8_t now[SNAP_REF_MAX];

	if (!r->snap_ref_len || (d > 0 && d < r->snap_ref_len))
		return false;
	copy_before(r, old, now, r->snap_ref_len);
	return !memcmp(now, r->snap_ref, r->snap_ref_len);
}

/*
 * Where the new bytes of a snapshot start (*@off, the stream offset) and
 * how many there are, before the limit: see prec_ring_read_snapshot().
 */
static uint64_t snapshot_span(struct prec_ring *r, uint64_t head, uint64_t *off)
{
	uint64_t size = r->aux_size, pos = head & (size - 1), old = r->aux_tail, n;

	if (head >= size)
		r->aux_running = true;
	if (r->aux_running) {
		*off = old;
		return head - old;
	}
	if (!r->snap_taken) {
		/* Wrapped already if trace lies above the head (the area starts zeroed). */
		n = any_nonzero(r->aux + pos, size - pos) ? size : head;
		*off = 0;
	} else if (snap_ref_intact(r, old, head)) {
		n = (head - old) & (size - 1);
		*off = r->snap_end;
	} else {
		n = size;
		*off = r->snap_end + size;
	}
	r->snap_end = *off + n;
	return n;
}

/* Keeps the bytes before @head for the next snapshot of a position head. */
static void snap_ref_save(struct prec_ring *r, uint64_t head)
{
	if (r->aux_running)
		return;
	if (!r->snap_ref) {
		r->snap_ref = malloc(SNAP_REF_MAX);
		if (!r->snap_ref)
			return; /* then every snapshot is a whole area behind a gap */
		r->snap_ref_len = (size_t)PREC_MIN((uint64_t)SNAP_REF_MAX, r->aux_size / 4);
	}
	copy_before(r, head & (r->aux_size - 1), r->snap_ref, r->snap_ref_len);
}

long prec_ring_read_snapshot(struct prec_ring *r, uint64_t limit, prec_ring_aux_fn fn,
			     void *ctx)
{
	uint64_t head, size, n, off, start, n1;
	int ret;

	if (!r || !r->meta || !fn || !r->aux_size || !r->overwrite)
		return -EINVAL;
	size = r->aux_size;
	head = __atomic_load_n(&r->meta->aux_head, __ATOMIC_ACQUIRE);
	n = snapshot_span(r, head, &off);
	if (!n)
		return 0;
	/* The newest bytes: at most the area, at most the limit. */
	if (n > size || (limit && n > limit)) {
		uint64_t keep = limit && limit < size ? limit : size;

		off += n - PREC_MIN(n, keep);
		n = PREC_MIN(n, keep);
	}
	start = (head - n) & (size - 1);
	n1 = PREC_MIN(n, size - start);
	ret = fn(ctx, off, r->aux + start, (size_t)n1, n > n1 ? r->aux : NULL, (size_t)(n - n1));
	if (ret < 0)
		return ret;
	r->aux_tail = head;
	r->snap_taken = true;
	snap_ref_save(r, head);
	return (long)n;
}

long prec_ring_read_aux(struct prec_ring *r, prec_ring_aux_fn fn, void *ctx)
{
	uint64_t head, tail, off, n, n1;
	int ret;

	if (!r || !r->meta || !fn || !r->aux_size)
		return -EINVAL;
	if (r->overwrite)
		return prec_ring_read_snapshot(r, 0, fn, ctx);
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

bool prec_ring_aux_reenable(const struct prec_ring *r, long nread, bool stopping)
{
	return r && r->aux_size && !r->overwrite && nread > 0 && !stopping;
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

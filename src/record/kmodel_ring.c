// SPDX-License-Identifier: MIT
/*
 * The producer side of the model's rings, as kernel/events/ring_buffer.c
 * and the record writers of kernel/events/core.c fill them: records in the
 * data ring behind data_head, trace bytes in the AUX area behind aux_head,
 * each head published after the bytes it covers, each tail read before the
 * space it frees is written. Every function here runs with m->lock held.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "record/kmodel.h"
#include "record/kmodel_int.h"

/* CIRC_SPACE() of include/linux/circ_buf.h: one byte always stays free. */
static uint64_t circ_space(uint64_t head, uint64_t tail, uint64_t size)
{
	return (tail - (head + 1)) & (size - 1);
}

static uint64_t data_size(const struct prec_kmodel *m, const struct kring *r)
{
	return r->data_pages * (uint64_t)m->page;
}

static uint64_t aux_size(const struct prec_kmodel *m, const struct kring *r)
{
	return r->aux_pages * (uint64_t)m->page;
}

/*
 * ring_buffer_init() by way of perf_mmap(): the wakeup watermark is the
 * event's wakeup_watermark when it asks for one (attr.watermark), capped at
 * the ring, else half the ring.
 */
void prec_km_ring_init(struct prec_kmodel *m, struct kring *r, const struct kev *e)
{
	uint64_t max = data_size(m, r);

	r->head = r->lost = r->wakeup = r->events = 0;
	r->watermark = e->attr.watermark && e->attr.wakeup_watermark ?
			       (e->attr.wakeup_watermark < max ? e->attr.wakeup_watermark : max) : 0;
	if (!r->watermark)
		r->watermark = max / 2;
}

/*
 * rb_alloc_aux(): aux_watermark from the event, else half the AUX area
 * (none in overwrite mode: rb_need_aux_wakeup() never wakes there).
 */
void prec_km_aux_init(struct prec_kmodel *m, struct kring *r, const struct kev *e)
{
	r->aux_head = r->aux_wakeup = 0;
	r->aux_watermark = e->attr.aux_watermark;
	if (!r->aux_watermark && !r->aux_overwrite)
		r->aux_watermark = aux_size(m, r) / 2;
}

/* perf_output_wakeup(): rb->poll = POLLIN, and the waiter in poll() wakes. */
void prec_km_wakeup(struct prec_kmodel *m, struct kring *r)
{
	r->ready = true;
	prec_km_kick(m);
}

void prec_km_kick(struct prec_kmodel *m)
{
	uint64_t one = 1;

	if (write(m->wake_fd, &one, sizeof(one)) < 0) {
		/* saturated: poll() is woken anyway */
	}
}

bool prec_km_active(struct prec_kmodel *m, const struct kev *e)
{
	const struct kev *l = &m->ev[e->leader];

	return e->open && e->enabled && (l == e || (l->open && l->enabled));
}

bool prec_km_sb_active(const struct kev *e)
{
	return e->open && e->enabled;
}

/* The size of @e's sample_id trailer (perf_event__id_header_size()). */
static size_t id_header_size(const struct kev *e)
{
	uint64_t st = e->attr.sample_type;
	size_t n = 0;

	if (!e->attr.sample_id_all)
		return 0;
	n += st & PERF_SAMPLE_TID ? 8 : 0;
	n += st & PERF_SAMPLE_TIME ? 8 : 0;
	n += st & PERF_SAMPLE_ID ? 8 : 0;
	n += st & PERF_SAMPLE_STREAM_ID ? 8 : 0;
	n += st & PERF_SAMPLE_CPU ? 8 : 0;
	n += st & PERF_SAMPLE_IDENTIFIER ? 8 : 0;
	return n;
}

/* Writes @n bytes at running position *@pos of the data ring, wrapping. */
static void put(struct prec_kmodel *m, struct kring *r, uint64_t *pos, const void *p, size_t n)
{
	uint8_t *data = (uint8_t *)r->base + m->page;
	uint64_t size = data_size(m, r);
	const uint8_t *s = p;

	while (n) {
		size_t at = (size_t)(*pos & (size - 1));
		size_t k = (size_t)(size - at) < n ? (size_t)(size - at) : n;

		memcpy(data + at, s, k);
		s += k;
		n -= k;
		*pos += k;
	}
}

static void put64(struct prec_kmodel *m, struct kring *r, uint64_t *pos, uint64_t v)
{
	put(m, r, pos, &v, 8);
}

static void put32x2(struct prec_kmodel *m, struct kring *r, uint64_t *pos, uint32_t a, uint32_t b)
{
	uint32_t v[2] = { a, b };

	put(m, r, pos, v, 8);
}

/*
 * perf_event__output_id_sample(): TID, TIME, ID, STREAM_ID, CPU,
 * IDENTIFIER, those of the event's sample_type. The ids are the event's own
 * (an inherited event would give its parent's as ID: primary_event_id()).
 */
static void put_id_sample(struct prec_kmodel *m, struct kring *r, uint64_t *pos,
			  const struct kev *e, const struct km_sid *sid)
{
	uint64_t st = e->attr.sample_type;

	if (!e->attr.sample_id_all)
		return;
	if (st & PERF_SAMPLE_TID)
		put32x2(m, r, pos, sid->pid, sid->tid);
	if (st & PERF_SAMPLE_TIME)
		put64(m, r, pos, sid->time);
	if (st & PERF_SAMPLE_ID)
		put64(m, r, pos, e->id);
	if (st & PERF_SAMPLE_STREAM_ID)
		put64(m, r, pos, e->id);
	if (st & PERF_SAMPLE_CPU)
		put32x2(m, r, pos, sid->cpu, 0);
	if (st & PERF_SAMPLE_IDENTIFIER)
		put64(m, r, pos, e->id);
}

/*
 * __perf_output_begin(): room for @size bytes (and a PERF_RECORD_LOST first
 * when records were lost since the last one that fitted), or the record is
 * counted in rb->lost and in the event's lost_samples (what read() returns
 * with PERF_FORMAT_LOST) and -ENOSPC. A ring paused by PAUSE_OUTPUT
 * (rb->paused) loses every record the same way, without looking for room,
 * so the first record after the resume comes behind a LOST. The tail is
 * read before the bytes are written (the control dependency the kernel
 * calls barrier A); on success *@pos is where the record goes, the LOST
 * record already written.
 */
static int output_begin(struct prec_kmodel *m, struct kring *r, struct kev *e,
			size_t size, uint64_t *pos, const struct km_sid *sid)
{
	size_t idsz = id_header_size(e);
	uint64_t tail;

	if (r->paused) {
		r->lost++;
		__atomic_fetch_add(&e->lost_samples, 1, __ATOMIC_RELAXED);
		return -ENOSPC;
	}
	if (r->lost)
		size += 24 + idsz;
	tail = __atomic_load_n(&((struct perf_event_mmap_page *)r->base)->data_tail,
			       __ATOMIC_ACQUIRE);
	if (circ_space(r->head, tail, data_size(m, r)) < size) {
		r->lost++;
		__atomic_fetch_add(&e->lost_samples, 1, __ATOMIC_RELAXED);
		return -ENOSPC;
	}
	*pos = r->head;
	r->head += size;
	if (r->lost) {
		struct perf_event_header h = { PERF_RECORD_LOST, 0, (uint16_t)(24 + idsz) };

		/* Its sample_id is that of the record that now fits (the current task's). */
		put(m, r, pos, &h, sizeof(h));
		put64(m, r, pos, e->id);
		put64(m, r, pos, r->lost);
		put_id_sample(m, r, pos, e, sid);
		r->lost = 0;
	}
	return 0;
}

/*
 * perf_output_end() -> perf_output_put_handle(): data_head is published
 * after the record's bytes (barrier B, store-release here), then the wakeup
 * when the head passed the watermark (perf_output_begin() moved rb->wakeup)
 * or a sample reached wakeup_events (perf_output_sample()).
 */
static void output_end(struct prec_kmodel *m, struct kring *r, bool wake)
{
	struct perf_event_mmap_page *pg = r->base;

	if (r->head - r->wakeup > r->watermark) {
		r->wakeup += r->watermark;
		wake = true;
	}
	__atomic_store_n(&pg->data_head, r->head, __ATOMIC_RELEASE);
	if (wake)
		prec_km_wakeup(m, r);
}

static struct kring *ring_of(struct prec_kmodel *m, const struct kev *e)
{
	struct kring *r;

	if (e->ring < 0)
		return NULL;
	r = &m->rings[e->ring];
	return r->base && r->data_pages ? r : NULL;
}

int prec_km_output(struct prec_kmodel *m, struct kev *e, uint32_t type, uint16_t misc,
		   const void *body, size_t len, const struct km_sid *sid)
{
	struct kring *r = ring_of(m, e);
	size_t size = sizeof(struct perf_event_header) + len + id_header_size(e);
	struct perf_event_header h = { type, misc, (uint16_t)size };
	uint64_t pos;

	/* perf_output_begin(): no ring (event->rb) or no data pages: nothing, no loss. */
	if (!r || size > 0xffff)
		return -ENOSPC;
	if (output_begin(m, r, e, size, &pos, sid))
		return -ENOSPC;
	put(m, r, &pos, &h, sizeof(h));
	put(m, r, &pos, body, len);
	put_id_sample(m, r, &pos, e, sid);
	output_end(m, r, false);
	return 0;
}

/*
 * perf_output_sample(): IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID,
 * CPU, PERIOD, READ in that order, those of the event's sample_type (READ
 * as read() gives it: perf_output_read(); the model fills no others:
 * CALLCHAIN, RAW, registers and stacks are not modelled). A sample counts towards attr.wakeup_events unless the event
 * wakes by watermark.
 */
int prec_km_sample(struct prec_kmodel *m, struct kev *e, uint64_t ip, uint64_t period,
		   const struct km_sid *sid)
{
	struct kring *r = ring_of(m, e);
	uint64_t st = e->attr.sample_type, pos;
	static const uint64_t u64s = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
				     PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
				     PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	size_t size = sizeof(struct perf_event_header) + 8 * (size_t)__builtin_popcountll(st & u64s);
	struct perf_event_header h = { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 0 };
	uint64_t rv[64];
	size_t rn = st & PERF_SAMPLE_READ ? prec_km_read_values(m, e, rv, sizeof(rv)) : 0;
	bool wake = false;

	size += rn;
	h.size = (uint16_t)size;
	if (!r)
		return -ENOSPC;
	if (output_begin(m, r, e, size, &pos, sid))
		return -ENOSPC;
	put(m, r, &pos, &h, sizeof(h));
	if (st & PERF_SAMPLE_IDENTIFIER)
		put64(m, r, &pos, e->id);
	if (st & PERF_SAMPLE_IP)
		put64(m, r, &pos, ip);
	if (st & PERF_SAMPLE_TID)
		put32x2(m, r, &pos, sid->pid, sid->tid);
	if (st & PERF_SAMPLE_TIME)
		put64(m, r, &pos, sid->time);
	if (st & PERF_SAMPLE_ADDR)
		put64(m, r, &pos, 0);
	if (st & PERF_SAMPLE_ID)
		put64(m, r, &pos, e->id);
	if (st & PERF_SAMPLE_STREAM_ID)
		put64(m, r, &pos, e->id);
	if (st & PERF_SAMPLE_CPU)
		put32x2(m, r, &pos, sid->cpu, 0);
	if (st & PERF_SAMPLE_PERIOD)
		put64(m, r, &pos, period);
	put(m, r, &pos, rv, rn);
	if (!e->attr.watermark && e->attr.wakeup_events &&
	    ++r->events >= e->attr.wakeup_events) {
		r->events -= e->attr.wakeup_events;
		wake = true;
	}
	output_end(m, r, wake);
	return 0;
}

/*
 * Disables an AUX event that found no room, as perf_event_disable_inatomic()
 * does for it (event->pending_disable): it stays off, with its group, until
 * the consumer enables it again.
 */
static void aux_disable(struct prec_kmodel *m, struct kev *e, struct kring *r)
{
	e->enabled = false;
	prec_km_emu_sync(m);
	prec_km_wakeup(m, r);
}

/*
 * One piece of trace through perf_aux_output_begin() and the hardware's
 * writes: the room is what the consumer's aux_tail leaves (CIRC_SPACE);
 * none at all disables the event with a wakeup and writes nothing.
 * Otherwise what fits is written behind the ring's private head
 * (rb->aux_head; the control page's is published by prec_km_aux_end()). A
 * piece that did not fit whole is TRUNCATED, as the intel_pt driver flags a
 * buffer that filled up (pt_handle_status()), and disables the event: a
 * TRUNCATED perf_aux_output_end() does (perf_event_disable_inatomic()).
 * In overwrite mode perf_aux_output_begin() reads no aux_tail and the
 * driver writes round the area over the oldest bytes (pt_buffer_setup_aux()
 * with snapshot set: no stop marker), so the whole piece goes in and
 * nothing is TRUNCATED or disabled.
 * False when nothing was written and nothing is to be reported.
 */
bool prec_km_aux_write(struct prec_kmodel *m, struct kev *e, const void *data, size_t len,
		       struct km_piece *pc)
{
	struct kring *r = ring_of(m, e);
	uint64_t size, tail, room = 0;
	size_t n, at;

	if (!r || !r->aux || !prec_km_active(m, e))
		return false;
	size = aux_size(m, r);
	if (r->aux_overwrite) {
		room = len;
	} else {
		tail = __atomic_load_n(&((struct perf_event_mmap_page *)r->base)->aux_tail,
				       __ATOMIC_ACQUIRE);
		if (r->aux_head - tail < size)
			room = circ_space(r->aux_head, tail, size);
	}
	if (!room) {
		aux_disable(m, e, r);
		return false;
	}
	n = len < room ? len : (size_t)room;
	/* Only the last area's worth of a bigger piece survives the wrap. */
	for (at = n > size ? n - (size_t)size : 0; at < n;) {
		size_t o = (size_t)((r->aux_head + at) & (size - 1));
		size_t k = (size_t)(size - o) < n - at ? (size_t)(size - o) : n - at;

		memcpy((uint8_t *)r->aux + o, (const uint8_t *)data + at, k);
		at += k;
	}
	*pc = (struct km_piece){ r->aux_head, n, n < len, r->aux_overwrite };
	r->aux_head += n;
	if (pc->truncated) {
		e->enabled = false;
		prec_km_emu_sync(m);
	}
	return true;
}

/*
 * perf_aux_output_end(): the PERF_RECORD_AUX of the piece
 * (perf_event_aux_event()) goes to the data ring, then aux_head is
 * published; the consumer is woken when the head passed aux_watermark, or
 * at a TRUNCATED end. In overwrite mode the driver gives the head
 * (handle->head): the model's is a running count after the piece, as the
 * CoreSight sinks' snapshot mode makes it, so the record's aux_offset is
 * where the piece ends, its flags OVERWRITE, and no watermark wakes the
 * consumer (rb_need_aux_wakeup()).
 */
void prec_km_aux_end(struct prec_kmodel *m, struct kev *e, const struct km_piece *pc,
		     const struct km_sid *sid)
{
	struct kring *r = ring_of(m, e);
	uint64_t body[3] = { pc->offset, pc->size, pc->truncated ? PERF_AUX_FLAG_TRUNCATED : 0 };
	bool wake = pc->truncated;

	if (!r || !r->aux)
		return;
	if (pc->overwrite) {
		body[0] = pc->offset + pc->size;
		body[2] = PERF_AUX_FLAG_OVERWRITE;
	}
	prec_km_output(m, e, PERF_RECORD_AUX, 0, body, sizeof(body), sid);
	__atomic_store_n(&((struct perf_event_mmap_page *)r->base)->aux_head, r->aux_head,
			 __ATOMIC_RELEASE);
	if (!r->aux_overwrite && r->aux_head - r->aux_wakeup >= r->aux_watermark) {
		wake = true;
		r->aux_wakeup += r->aux_watermark;
	}
	if (wake)
		prec_km_wakeup(m, r);
}

size_t prec_km_aux(struct prec_kmodel *m, struct kev *e, const void *data, size_t len,
		   const struct km_sid *sid)
{
	struct km_piece pc;

	if (!prec_km_aux_write(m, e, data, len, &pc))
		return 0;
	prec_km_aux_end(m, e, &pc, sid);
	return pc.size;
}

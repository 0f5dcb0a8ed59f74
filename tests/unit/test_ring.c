// SPDX-License-Identifier: MIT
/*
 * The ring consumer against an in-memory "kernel" that follows the perf
 * protocol (write the bytes, then publish the head with a release store;
 * respect the tail the consumer publishes), and against the real kernel with
 * a software event.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "record/ring.h"
#include "tracefile/tfile.h"
#include "base/util.h"

#define PAGE 4096

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Byte i of the test streams: a position-dependent pattern that catches reordering. */
static uint8_t pat(uint64_t i)
{
	return (uint8_t)((i * 2654435761u) >> 13 ^ (i >> 8));
}

/* ---- the simulated kernel side ---- */

struct kring {
	uint8_t *mem;		/* meta page + data */
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	uint64_t data_size;
	uint8_t *aux;
	uint64_t aux_size;
	uint64_t head, aux_head;	/* kernel-private */
	bool pos_head;		/* overwrite mode: publish aux_head as a buffer position */
	uint64_t blocked;	/* times the producer found the ring full */
};

static void kring_init(struct kring *k, uint64_t data_size, uint64_t aux_size)
{
	memset(k, 0, sizeof(*k));
	k->mem = aligned_alloc(PAGE, PAGE + data_size);
	memset(k->mem, 0, PAGE + data_size);
	k->meta = (struct perf_event_mmap_page *)k->mem;
	k->meta->data_offset = PAGE;
	k->meta->data_size = data_size;
	k->data = k->mem + PAGE;
	k->data_size = data_size;
	if (aux_size) {
		k->aux = aligned_alloc(PAGE, aux_size);
		memset(k->aux, 0, aux_size);
		k->aux_size = aux_size;
		k->meta->aux_offset = PAGE + data_size;
		k->meta->aux_size = aux_size;
	}
}

static void kring_fini(struct kring *k)
{
	free(k->mem);
	free(k->aux);
}

static void kput(uint8_t *ring, uint64_t size, uint64_t pos, const void *src, size_t n)
{
	uint64_t off = pos & (size - 1);
	size_t first = (size_t)PREC_MIN((uint64_t)n, size - off);

	memcpy(ring + off, src, first);
	memcpy(ring, (const uint8_t *)src + first, n - first);
}

/* Appends one record; waits (or fails with @nowait) while the consumer has no room. */
static int kwrite_rec(struct kring *k, const void *rec, size_t n, bool publish, bool nowait)
{
	for (;;) {
		uint64_t tail = __atomic_load_n(&k->meta->data_tail, __ATOMIC_ACQUIRE);

		if (k->data_size - (k->head - tail) >= n)
			break;
		if (nowait)
			return -EAGAIN;
		k->blocked++;
		sched_yield();
	}
	kput(k->data, k->data_size, k->head, rec, n);
	k->head += n;
	if (publish)
		__atomic_store_n(&k->meta->data_head, k->head, __ATOMIC_RELEASE);
	return 0;
}

static void kpublish(struct kring *k)
{
	__atomic_store_n(&k->meta->data_head, k->head, __ATOMIC_RELEASE);
}

/* AUX bytes following the protocol (or, in overwrite mode, ignoring the tail). */
static void kwrite_aux(struct kring *k, const uint8_t *src, size_t n, bool overwrite)
{
	while (n) {
		size_t room = n;

		if (!overwrite) {
			uint64_t tail = __atomic_load_n(&k->meta->aux_tail, __ATOMIC_ACQUIRE);

			room = (size_t)PREC_MIN((uint64_t)n, k->aux_size - (k->aux_head - tail));
			if (!room) {
				k->blocked++;
				sched_yield();
				continue;
			}
		}
		room = PREC_MIN(room, (size_t)k->aux_size);
		kput(k->aux, k->aux_size, k->aux_head, src, room);
		k->aux_head += room;
		src += room;
		n -= room;
		__atomic_store_n(&k->meta->aux_head,
				 k->pos_head ? k->aux_head & (k->aux_size - 1) : k->aux_head,
				 __ATOMIC_RELEASE);
	}
}

/* A record of @size bytes carrying sequence number @seq and a pattern. */
static void make_rec(uint8_t *buf, uint16_t size, uint64_t seq)
{
	struct perf_event_header h = {.type = 1000 + (uint32_t)(seq % 7), .misc = 0, .size = size};

	memcpy(buf, &h, sizeof(h));
	if (size >= 16)
		memcpy(buf + 8, &seq, 8);
	for (uint16_t i = 16; i < size; i++)
		buf[i] = pat(seq * 131 + i);
}

static bool check_rec(const struct perf_event_header *h, uint64_t seq, uint16_t size)
{
	const uint8_t *b = (const uint8_t *)h;
	uint64_t s;

	if (h->size != size || h->type != 1000 + (uint32_t)(seq % 7))
		return false;
	memcpy(&s, b + 8, 8);
	if (s != seq)
		return false;
	for (uint16_t i = 16; i < size; i++)
		if (b[i] != pat(seq * 131 + i))
			return false;
	return true;
}

/* ---- data ring ---- */

struct collect {
	uint64_t next_seq;
	uint64_t bad;
	uint64_t wrapped;	/* records delivered from the reassembly buffer */
	const uint8_t *lo, *hi;	/* the ring's data area */
	uint16_t *sizes;	/* expected size per seq */
	int stop_after;		/* > 0: stop after this many; < 0: fail at this seq */
	uint64_t slow_every;	/* sleep a little every N records */
};

static int collect_cb(void *ctx, const struct perf_event_header *h)
{
	struct collect *c = ctx;
	const uint8_t *p = (const uint8_t *)h;

	if (c->stop_after < 0 && c->next_seq == (uint64_t)-c->stop_after)
		return -ECANCELED;
	if (!check_rec(h, c->next_seq, c->sizes[c->next_seq]))
		c->bad++;
	if (p < c->lo || p >= c->hi)
		c->wrapped++;
	c->next_seq++;
	if (c->slow_every && c->next_seq % c->slow_every == 0)
		usleep(200);
	if (c->stop_after > 0 && c->next_seq == (uint64_t)c->stop_after)
		return 1;
	return 0;
}

static void data_wrap_reassembly(void)
{
	struct kring k;
	struct prec_ring r;
	uint16_t sizes[8000];
	struct collect c = { 0 };
	uint8_t buf[1024];
	uint64_t seq = 0;
	long total = 0;
	int round;

	kring_init(&k, 4096, 0);
	T_EQ_INT(prec_ring_init(&r, k.mem, 4096, NULL, 0, false), 0);
	c.sizes = sizes;
	c.lo = k.data;
	c.hi = k.data + 4096;
	for (round = 0; round < 200; round++) {
		/* fill until full, then drain: every size class straddles the end sometime */
		for (;;) {
			uint16_t sz = (uint16_t)(16 + 8 * (rnd() % 100));

			sizes[seq] = sz;
			make_rec(buf, sz, seq);
			if (kwrite_rec(&k, buf, sz, rnd() % 3 == 0, true))
				break;
			seq++;
		}
		kpublish(&k);
		total += prec_ring_read_data(&r, collect_cb, &c);
		T_EQ_U64(c.next_seq, seq);
		T_EQ_U64(k.meta->data_tail, k.head);
		T_EQ_U64(prec_ring_data_pending(&r), 0);
	}
	T_EQ_U64(c.bad, 0);
	T_OK(c.wrapped > 50);
	T_EQ_U64((uint64_t)total, k.head);
	T_EQ_INT(prec_ring_read_data(&r, collect_cb, &c), 0);
	prec_ring_fini(&r);
	kring_fini(&k);
}

static void data_callback_stop(void)
{
	struct kring k;
	struct prec_ring r;
	uint16_t sizes[16];
	struct collect c = { 0 };
	uint8_t buf[64];
	long n;

	kring_init(&k, 4096, 0);
	T_EQ_INT(prec_ring_init(&r, k.mem, 4096, NULL, 0, false), 0);
	c.sizes = sizes;
	for (int i = 0; i < 10; i++) {
		sizes[i] = 32;
		make_rec(buf, 32, (uint64_t)i);
		kwrite_rec(&k, buf, 32, true, true);
	}
	c.stop_after = 3;	/* returns 1 on the 3rd: consumed */
	n = prec_ring_read_data(&r, collect_cb, &c);
	T_EQ_INT(n, 96);
	T_EQ_U64(k.meta->data_tail, 96);
	c.stop_after = -5;	/* error at seq 5: 3 and 4 consumed, 5 stays */
	n = prec_ring_read_data(&r, collect_cb, &c);
	T_EQ_INT(n, -ECANCELED);
	T_EQ_U64(k.meta->data_tail, 160);
	T_EQ_U64(prec_ring_data_pending(&r), 160);
	c.stop_after = 0;
	n = prec_ring_read_data(&r, collect_cb, &c);
	T_EQ_INT(n, 160);
	T_EQ_U64(c.next_seq, 10);
	T_EQ_U64(c.bad, 0);
	prec_ring_fini(&r);
	kring_fini(&k);
}

static void data_bad_record(void)
{
	struct kring k;
	struct prec_ring r;
	uint16_t sizes[4] = { 24, 24 };
	struct collect c = { .sizes = sizes };
	uint8_t buf[64] = { 0 };

	kring_init(&k, 4096, 0);
	T_EQ_INT(prec_ring_init(&r, k.mem, 4096, NULL, 0, false), 0);
	make_rec(buf, 24, 0);
	kwrite_rec(&k, buf, 24, true, true);
	memset(buf, 0, sizeof(buf));	/* size 0: impossible */
	kwrite_rec(&k, buf, 16, true, true);
	T_EQ_INT(prec_ring_read_data(&r, collect_cb, &c), -PREC_E_FORMAT);
	T_EQ_U64(c.next_seq, 1);
	T_EQ_U64(k.meta->data_tail, 24);	/* the good one before it was consumed */
	T_EQ_INT(prec_ring_skip_data(&r), 16);
	T_EQ_U64(k.meta->data_tail, 40);
	/* a size running past the head */
	make_rec(buf, 64, 1);
	kwrite_rec(&k, buf, 32, true, true);
	T_EQ_INT(prec_ring_read_data(&r, collect_cb, &c), -PREC_E_FORMAT);
	prec_ring_fini(&r);
	kring_fini(&k);
}

struct kthread_args {
	struct kring *k;
	uint64_t n;
	uint16_t *sizes;
	const uint8_t *aux_src;
	size_t aux_len;
	bool overwrite;
};

static void *kdata_thread(void *arg)
{
	struct kthread_args *a = arg;
	uint8_t buf[2048];
	uint64_t seq;

	for (seq = 0; seq < a->n; seq++) {
		make_rec(buf, a->sizes[seq], seq);
		/* publish in bursts, as the kernel does at the end of an output */
		kwrite_rec(a->k, buf, a->sizes[seq], seq % 5 == 4, false);
		if (seq % 5 != 4 &&
		    a->k->head - __atomic_load_n(&a->k->meta->data_tail, __ATOMIC_ACQUIRE) >
			    a->k->data_size / 2)
			kpublish(a->k);
	}
	kpublish(a->k);
	return NULL;
}

/* A slow consumer: the producer blocks when the ring is full; every byte arrives in order. */
static void data_threaded_slow_consumer(void)
{
	enum { N = 40000 };
	struct kring k;
	struct prec_ring r;
	struct kthread_args ka;
	struct collect c = { 0 };
	uint16_t *sizes = malloc(N * sizeof(*sizes));
	uint64_t total = 0;
	pthread_t th;

	for (int i = 0; i < N; i++) {
		sizes[i] = (uint16_t)(16 + 8 * (rnd() % 40));
		total += sizes[i];
	}
	T_OK(total > 5u << 20);
	kring_init(&k, 16384, 0);
	T_EQ_INT(prec_ring_init(&r, k.mem, 16384, NULL, 0, false), 0);
	c.sizes = sizes;
	c.slow_every = 500;
	c.lo = k.data;
	c.hi = k.data + 16384;
	ka = (struct kthread_args){ .k = &k, .n = N, .sizes = sizes };
	pthread_create(&th, NULL, kdata_thread, &ka);
	while (c.next_seq < N) {
		long n = prec_ring_read_data(&r, collect_cb, &c);

		T_OK(n >= 0);
		if (n < 0)
			break;
		if (!n)
			sched_yield();
	}
	pthread_join(th, NULL);
	T_EQ_U64(c.next_seq, N);
	T_EQ_U64(c.bad, 0);
	T_OK(k.blocked > 0);
	T_OK(c.wrapped > 0);
	T_EQ_U64(k.meta->data_tail, total);
	prec_ring_fini(&r);
	kring_fini(&k);
	free(sizes);
}

/* ---- AUX ring ---- */

struct auxcol {
	uint64_t expect_off;
	uint64_t got;
	uint64_t bad;
	uint64_t two_spans;
	unsigned slow;
};

static int aux_cb(void *ctx, uint64_t off, const void *p1, size_t n1, const void *p2, size_t n2)
{
	struct auxcol *c = ctx;
	const uint8_t *a = p1, *b = p2;
	size_t i;

	if (off != c->expect_off)
		c->bad++;
	for (i = 0; i < n1; i++)
		c->bad += a[i] != pat(off + i);
	for (i = 0; i < n2; i++)
		c->bad += b[i] != pat(off + n1 + i);
	if (n2)
		c->two_spans++;
	if ((n2 && !p2) || (!n2 && p2))
		c->bad++;
	c->expect_off = off + n1 + n2;
	c->got += n1 + n2;
	if (c->slow)
		usleep(c->slow);
	return 0;
}

static void *kaux_thread(void *arg)
{
	struct kthread_args *a = arg;
	size_t off = 0;

	while (off < a->aux_len) {
		size_t n = (size_t)(1 + rnd() % 20000);

		n = PREC_MIN(n, a->aux_len - off);
		kwrite_aux(a->k, a->aux_src + off, n, false);
		off += n;
		/* pause now and then so the consumer catches up mid-buffer */
		if (rnd() % 64 == 0)
			usleep(100);
	}
	return NULL;
}

static void aux_wrap_spans(void)
{
	struct kring k;
	struct prec_ring r;
	struct auxcol c = { 0 };
	uint8_t *src = malloc(1 << 20);
	size_t off = 0;

	for (size_t i = 0; i < 1 << 20; i++)
		src[i] = pat(i);
	kring_init(&k, 4096, 65536);
	T_EQ_INT(prec_ring_init(&r, k.mem, 4096, k.aux, 65536, false), 0);
	while (off < (1 << 20)) {
		size_t n = (size_t)(1 + rnd() % 60000);

		n = PREC_MIN(n, (size_t)(1 << 20) - off);
		kwrite_aux(&k, src + off, n, false);
		off += n;
		T_EQ_U64(prec_ring_aux_pending(&r), n);
		T_EQ_INT(prec_ring_read_aux(&r, aux_cb, &c), (long)n);
		T_EQ_U64(k.meta->aux_tail, off);
	}
	T_EQ_U64(c.got, 1 << 20);
	T_EQ_U64(c.bad, 0);
	T_OK(c.two_spans > 3);
	T_EQ_INT(prec_ring_read_aux(&r, aux_cb, &c), 0);
	prec_ring_fini(&r);
	kring_fini(&k);
	free(src);
}

static int aux_fail_cb(void *ctx, uint64_t off, const void *p1, size_t n1, const void *p2,
		       size_t n2)
{
	return -EIO;
}

static void aux_callback_error_keeps_bytes(void)
{
	struct kring k;
	struct prec_ring r;
	struct auxcol c = { 0 };
	uint8_t src[1000];

	for (int i = 0; i < 1000; i++)
		src[i] = pat((uint64_t)i);
	kring_init(&k, 4096, 4096);
	T_EQ_INT(prec_ring_init(&r, k.mem, 4096, k.aux, 4096, false), 0);
	kwrite_aux(&k, src, 1000, false);
	T_EQ_INT(prec_ring_read_aux(&r, aux_fail_cb, NULL), -EIO);
	T_EQ_U64(k.meta->aux_tail, 0);
	T_EQ_INT(prec_ring_read_aux(&r, aux_cb, &c), 1000);
	T_EQ_U64(c.bad, 0);
	prec_ring_fini(&r);
	kring_fini(&k);
}

static void aux_threaded_multi_mib(void)
{
	enum { LEN = 24 << 20 };
	struct kring k;
	struct prec_ring r;
	struct kthread_args ka;
	struct auxcol c = { .slow = 0 };
	uint8_t *src = malloc(LEN);
	pthread_t th;
	int loops = 0;

	for (size_t i = 0; i < LEN; i++)
		src[i] = pat(i);
	kring_init(&k, 4096, 256 << 10);
	T_EQ_INT(prec_ring_init(&r, k.mem, 4096, k.aux, 256 << 10, false), 0);
	ka = (struct kthread_args){ .k = &k, .aux_src = src, .aux_len = LEN };
	pthread_create(&th, NULL, kaux_thread, &ka);
	while (c.got < LEN) {
		long n = prec_ring_read_aux(&r, aux_cb, &c);

		T_OK(n >= 0);
		if (n < 0)
			break;
		/* be slower than the producer now and then */
		if (++loops % 16 == 0)
			usleep(500);
		else if (!n)
			sched_yield();
	}
	pthread_join(th, NULL);
	T_EQ_U64(c.got, LEN);
	T_EQ_U64(c.bad, 0);
	T_OK(k.blocked > 0);
	T_OK(c.two_spans > 0);
	prec_ring_fini(&r);
	kring_fini(&k);
	free(src);
}

struct snap {
	struct prec_buf b;
	uint64_t off;
	int calls;
};

static int snap_cb(void *ctx, uint64_t off, const void *p1, size_t n1, const void *p2, size_t n2)
{
	struct snap *s = ctx;

	prec_buf_reset(&s->b);
	prec_buf_append(&s->b, p1, n1);
	prec_buf_append(&s->b, p2, n2);
	s->off = off;
	s->calls++;
	return 0;
}

static void overwrite_variant(bool pos_head)
{
	enum { AUX = 65536 };
	struct kring k;
	struct prec_ring r;
	struct snap s = { .calls = 0 };
	uint8_t *src = malloc(1 << 20);
	uint64_t first_off, first_len;
	long n;

	for (size_t i = 0; i < 1 << 20; i++)
		src[i] = (uint8_t)(pat(i) | 1);	/* no zero bytes: trace never leaves zeros */
	kring_init(&k, 4096, AUX);
	k.pos_head = pos_head;
	T_EQ_INT(prec_ring_init(&r, k.mem, 4096, k.aux, AUX, true), 0);
	/* before any wrap: exactly what was written */
	kwrite_aux(&k, src, 10000, true);
	n = prec_ring_read_aux(&r, snap_cb, &s);
	T_EQ_INT(n, 10000);
	T_OK(s.b.len == 10000 && !memcmp(s.b.data, src, 10000));
	first_off = s.off;
	first_len = (uint64_t)n;
	/* nothing new: nothing delivered */
	T_EQ_INT(prec_ring_read_aux(&r, snap_cb, &s), 0);
	T_EQ_INT(s.calls, 1);
	/* the kernel overwrites on; the snapshot is the latest AUX bytes, oldest first */
	kwrite_aux(&k, src + 10000, 300001, true);
	n = prec_ring_read_aux(&r, snap_cb, &s);
	T_EQ_INT(n, AUX);
	T_OK(s.b.len == AUX && !memcmp(s.b.data, src + 310001 - AUX, AUX));
	/* a gap where bytes were overwritten keeps the snapshots apart */
	T_OK(s.off >= first_off + first_len + AUX);
	first_off = s.off;
	/* the consumer never moves aux_tail in overwrite mode */
	T_EQ_U64(k.meta->aux_tail, 0);
	kwrite_aux(&k, src + 310001, 5, true);
	n = prec_ring_read_aux(&r, snap_cb, &s);
	/*
	 * The 5 new bytes, right after the last snapshot: a running count says
	 * so; for a position head the bytes before the last head are still
	 * there (intel_pt_find_snapshot()'s reference), so nothing was lost.
	 */
	T_EQ_INT(n, 5);
	T_OK(s.b.len == 5 && !memcmp(s.b.data, src + 310001, 5));
	T_EQ_U64(s.off, first_off + AUX);
	first_off = s.off;
	/* a limit: the newest bytes only */
	kwrite_aux(&k, src + 310006, 1000, true);
	n = prec_ring_read_snapshot(&r, 100, snap_cb, &s);
	T_EQ_INT(n, 100);
	T_OK(s.b.len == 100 && !memcmp(s.b.data, src + 311006 - 100, 100));
	T_EQ_U64(s.off, first_off + 5 + 1000 - 100);
	/* the area went round past the last head: the whole area, behind a gap */
	kwrite_aux(&k, src + 311006, AUX + 7, true);
	n = prec_ring_read_snapshot(&r, 0, snap_cb, &s);
	if (pos_head) {
		T_EQ_INT(n, AUX);
		T_OK(s.off > first_off + 5 + 1000);
	} else {
		T_EQ_INT(n, AUX);
		T_EQ_U64(s.off, 311006 + AUX + 7 - AUX);
	}
	T_OK(!memcmp(s.b.data, src + 311006 + 7, AUX));
	/* nothing new */
	T_EQ_INT(prec_ring_read_snapshot(&r, 0, snap_cb, &s), 0);
	prec_buf_free(&s.b);
	prec_ring_fini(&r);
	kring_fini(&k);
	free(src);
}

static void overwrite_snapshot_counter_head(void)
{
	overwrite_variant(false);
}

static void overwrite_snapshot_position_head(void)
{
	overwrite_variant(true);
}

/* ---- record helpers ---- */

static size_t put_aux_rec(uint8_t *b, uint64_t off, uint64_t size, uint64_t flags)
{
	struct perf_event_header h = { .type = PERF_RECORD_AUX, .size = 8 + 24 + 32 };

	memset(b, 0, h.size);
	memcpy(b, &h, 8);
	memcpy(b + 8, &off, 8);
	memcpy(b + 16, &size, 8);
	memcpy(b + 24, &flags, 8);
	return h.size;
}

static int count_cb(void *ctx, const struct perf_event_header *h)
{
	return prec_ring_count_record(ctx, h);
}

static void aux_flag_counting(void)
{
	struct kring k;
	struct prec_ring r;
	struct prec_ring_counts c = { 0 };
	uint8_t b[128];
	uint64_t flags[] = {0,
			    PERF_AUX_FLAG_TRUNCATED,
			    PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL,
			    PERF_AUX_FLAG_OVERWRITE,
			    PERF_AUX_FLAG_COLLISION,
			    PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_COLLISION | 0x100};
	struct perf_event_header h;
	uint64_t lost = 17;

	kring_init(&k, 8192, 0);
	T_EQ_INT(prec_ring_init(&r, k.mem, 8192, NULL, 0, false), 0);
	for (size_t i = 0; i < T_N(flags); i++)
		kwrite_rec(&k, b, put_aux_rec(b, i * 100, 100 + i, flags[i]), true, true);
	/* PERF_RECORD_LOST: id, lost, sample_id */
	memset(b, 0, sizeof(b));
	h = (struct perf_event_header){ .type = PERF_RECORD_LOST, .size = 8 + 16 + 32 };
	memcpy(b, &h, 8);
	memcpy(b + 16, &lost, 8);
	kwrite_rec(&k, b, h.size, true, true);
	kwrite_rec(&k, b, h.size, true, true);
	h = (struct perf_event_header){ .type = PERF_RECORD_LOST_SAMPLES, .size = 8 + 8 + 32 };
	memcpy(b, &h, 8);
	memcpy(b + 8, &lost, 8);
	kwrite_rec(&k, b, h.size, true, true);
	h = (struct perf_event_header){ .type = PERF_RECORD_ITRACE_START, .size = 8 + 8 + 32 };
	memcpy(b, &h, 8);
	kwrite_rec(&k, b, h.size, true, true);
	T_OK(prec_ring_read_data(&r, count_cb, &c) > 0);
	T_EQ_U64(c.records, T_N(flags) + 4);
	T_EQ_U64(c.aux_records, T_N(flags));
	T_EQ_U64(c.aux_bytes, 600 + 15);
	T_EQ_U64(c.truncated, 3);
	T_EQ_U64(c.partial, 1);
	T_EQ_U64(c.overwrite, 1);
	T_EQ_U64(c.collision, 2);
	T_EQ_U64(c.lost_events, 2);
	T_EQ_U64(c.lost, 34);
	T_EQ_U64(c.lost_samples, 17);
	T_EQ_U64(c.itrace_starts, 1);
	/* too short to be an AUX record */
	h = (struct perf_event_header){ .type = PERF_RECORD_AUX, .size = 16 };
	T_EQ_INT(prec_ring_count_record(&c, &h), -PREC_E_FORMAT);
	h.type = PERF_RECORD_LOST;
	T_EQ_INT(prec_ring_count_record(&c, &h), -PREC_E_FORMAT);
	prec_ring_fini(&r);
	kring_fini(&k);
}

static void sample_parsers(void)
{
	uint8_t b[128] = { 0 };
	struct perf_event_header h = { .type = PERF_RECORD_COMM, .size = 8 + 16 + 32 };
	struct prec_sample_id sid;
	struct prec_trigger_sample ts;
	uint32_t pid = 100, tid = 101, cpu = 3;
	uint64_t t = 123456789, id = 42, ip = 0x401234, period = 1;
	size_t pos;
	const struct perf_event_header *x;

	memcpy(b, &h, 8);
	memcpy(b + 8, "comm-name\0\0\0\0\0\0\0", 16);
	memcpy(b + 24, &pid, 4);
	memcpy(b + 28, &tid, 4);
	memcpy(b + 32, &t, 8);
	memcpy(b + 40, &cpu, 4);
	memcpy(b + 48, &id, 8);
	T_EQ_INT(prec_perf_sample_id((struct perf_event_header *)b, &sid), 0);
	T_EQ_INT(sid.pid, 100);
	T_EQ_INT(sid.tid, 101);
	T_EQ_U64(sid.time, t);
	T_EQ_INT(sid.cpu, 3);
	T_EQ_U64(sid.id, 42);
	h.size = 24;
	T_EQ_INT(prec_perf_sample_id(&h, &sid), -PREC_E_FORMAT);

	memset(b, 0, sizeof(b));
	h = (struct perf_event_header){ .type = PERF_RECORD_SAMPLE, .size = 8 + 48 };
	memcpy(b, &h, 8);
	memcpy(b + 8, &id, 8);
	memcpy(b + 16, &ip, 8);
	memcpy(b + 24, &pid, 4);
	memcpy(b + 28, &tid, 4);
	memcpy(b + 32, &t, 8);
	memcpy(b + 40, &cpu, 4);
	memcpy(b + 48, &period, 8);
	T_EQ_INT(prec_perf_parse_sample((struct perf_event_header *)b, &ts), 0);
	T_EQ_U64(ts.id, 42);
	T_EQ_U64(ts.ip, ip);
	T_EQ_INT(ts.pid, 100);
	T_EQ_INT(ts.tid, 101);
	T_EQ_U64(ts.time, t);
	T_EQ_INT(ts.cpu, 3);
	T_EQ_U64(ts.period, 1);
	T_EQ_INT(prec_perf_sample_id((struct perf_event_header *)b, &sid), -EINVAL);
	h.size = 40;
	T_EQ_INT(prec_perf_parse_sample(&h, &ts), -PREC_E_FORMAT);
	h.type = PERF_RECORD_MMAP;
	T_EQ_INT(prec_perf_parse_sample(&h, &ts), -EINVAL);

	/* walking a buffer of records */
	memset(b, 0, sizeof(b));
	h = (struct perf_event_header){ .type = 1, .size = 16 };
	memcpy(b, &h, 8);
	h.size = 40;
	memcpy(b + 16, &h, 8);
	pos = 0;
	T_EQ_INT(prec_perf_next_record(b, 56, &pos, &x), 1);
	T_EQ_INT(x->size, 16);
	T_EQ_INT(prec_perf_next_record(b, 56, &pos, &x), 1);
	T_EQ_INT(x->size, 40);
	T_EQ_INT(prec_perf_next_record(b, 56, &pos, &x), 0);
	pos = 0;
	T_EQ_INT(prec_perf_next_record(b, 40, &pos, &x), 1);
	T_EQ_INT(prec_perf_next_record(b, 40, &pos, &x), -PREC_E_FORMAT);	/* runs past */
	h.size = 12;
	memcpy(b, &h, 8);
	pos = 0;
	T_EQ_INT(prec_perf_next_record(b, 56, &pos, &x), -PREC_E_FORMAT);
	pos = 0;
	T_EQ_INT(prec_perf_next_record(b, 4, &pos, &x), -PREC_E_FORMAT);
}

static void time_conv_and_init(void)
{
	struct kring k;
	struct prec_ring r;
	struct prec_time_conv tc;

	kring_init(&k, 4096, 0);
	k.meta->time_shift = 10;
	k.meta->time_mult = 555;
	k.meta->time_zero = 777;
	k.meta->time_cycles = 9;
	k.meta->time_mask = 0xffff;
	k.meta->cap_user_time_zero = 1;
	k.meta->cap_user_time_short = 1;
	T_EQ_INT(prec_ring_init(&r, k.mem, 4096, NULL, 0, false), 0);
	T_EQ_INT(prec_ring_time_conv(&r, &tc), 0);
	T_EQ_INT(tc.time_shift, 10);
	T_EQ_INT(tc.time_mult, 555);
	T_EQ_U64(tc.time_zero, 777);
	T_EQ_U64(tc.time_cycles, 9);
	T_EQ_U64(tc.time_mask, 0xffff);
	T_OK(tc.cap_user_time_zero && tc.cap_user_time_short && !tc.cap_user_time);
	k.meta->lock = 1;	/* a writer that never finishes */
	T_EQ_INT(prec_ring_time_conv(&r, &tc), -EAGAIN);
	prec_ring_fini(&r);
	/* bad geometry */
	T_EQ_INT(prec_ring_init(&r, k.mem, 3000, NULL, 0, false), -EINVAL);
	T_EQ_INT(prec_ring_init(&r, k.mem, 8192, NULL, 0, false), -EINVAL);	/* != meta */
	T_EQ_INT(prec_ring_init(&r, k.mem, 4096, k.mem, 1000, false), -EINVAL);
	T_EQ_INT(prec_ring_init(&r, k.mem, 4096, NULL, 4096, false), -EINVAL);
	T_EQ_INT(prec_ring_init(NULL, k.mem, 4096, NULL, 0, false), -EINVAL);
	/* tails start where a previous consumer left them */
	k.meta->data_head = k.meta->data_tail = 4096 * 3 + 64;
	T_EQ_INT(prec_ring_init(&r, k.mem, 4096, NULL, 0, false), 0);
	T_EQ_U64(r.data_tail, 4096 * 3 + 64);
	T_EQ_U64(prec_ring_data_pending(&r), 0);
	prec_ring_fini(&r);
	prec_ring_fini(NULL);
	kring_fini(&k);
}

/* ---- ring -> trace file, end to end ---- */

struct drain_ctx {
	struct prec_tfile_writer *w;
	struct prec_ring_counts counts;
	int err;
};

static int drain_rec(void *ctx, const struct perf_event_header *h)
{
	struct drain_ctx *d = ctx;

	prec_ring_count_record(&d->counts, h);
	return prec_tfile_write_sideband(d->w, 0, h, h->size);
}

static int drain_aux(void *ctx, uint64_t off, const void *p1, size_t n1, const void *p2, size_t n2)
{
	struct drain_ctx *d = ctx;
	int err = prec_tfile_write_aux(d->w, 0, -1, off, p1, n1);

	if (!err && n2)
		err = prec_tfile_write_aux(d->w, 0, -1, off + n1, p2, n2);
	return err;
}

static void ring_to_file(void)
{
	enum { LEN = 8 << 20, N = 5000 };
	struct kring k;
	struct prec_ring r;
	struct kthread_args ka, kd;
	struct drain_ctx d = { 0 };
	struct prec_tfile_wopts o;
	struct prec_tfile_reader *rd = NULL;
	struct prec_tfile_aux *a = NULL;
	struct prec_tfile_chunk c;
	uint16_t *sizes = malloc(N * sizeof(*sizes));
	uint8_t *src = malloc(LEN);
	char path[256];
	uint64_t got_aux = 0, seq = 0, bad = 0;
	pthread_t t1, t2;

	for (size_t i = 0; i < LEN; i++)
		src[i] = pat(i);
	for (int i = 0; i < N; i++)
		sizes[i] = (uint16_t)(16 + 8 * (rnd() % 60));
	snprintf(path, sizeof(path), "%s/ring.ptrec", t_tmpdir());
	prec_tfile_wopts_init(&o);
	o.async = true;
	o.full_policy = PREC_TFILE_FULL_BLOCK;
	o.chunk_size = 128 << 10;
	T_EQ_INT(prec_tfile_writer_new(path, &o, &d.w), 0);
	if (!d.w)
		return;
	kring_init(&k, 8192, 128 << 10);
	T_EQ_INT(prec_ring_init(&r, k.mem, 8192, k.aux, 128 << 10, false), 0);
	/* two "kernel" threads: one for AUX, one for records (the data head is theirs alone) */
	ka = (struct kthread_args){ .k = &k, .aux_src = src, .aux_len = LEN };
	kd = (struct kthread_args){ .k = &k, .n = N, .sizes = sizes };
	pthread_create(&t1, NULL, kaux_thread, &ka);
	pthread_create(&t2, NULL, kdata_thread, &kd);
	while (got_aux < LEN || d.counts.records < N) {
		long n1 = prec_ring_read_aux(&r, drain_aux, &d);
		long n2 = prec_ring_read_data(&r, drain_rec, &d);

		T_OK(n1 >= 0 && n2 >= 0);
		if (n1 < 0 || n2 < 0)
			break;
		got_aux += (uint64_t)n1;
		if (!n1 && !n2)
			sched_yield();
	}
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	T_EQ_INT(prec_tfile_writer_close(d.w, NULL), 0);
	prec_tfile_writer_free(d.w);

	T_EQ_INT(prec_tfile_reader_new(path, NULL, &rd, NULL), 0);
	T_EQ_INT(prec_tfile_gather_aux(rd, 0, -1, &a), 0);
	T_OK(a && a->len == LEN && a->n_runs == 1 && !memcmp(a->data, src, LEN));
	prec_tfile_aux_free(a);
	while (rd && prec_tfile_next(rd, &c) == 1) {
		const struct perf_event_header *h;
		size_t pos = 0;

		if (c.type != PREC_TFILE_SIDEBAND)
			continue;
		while (prec_perf_next_record(c.data, c.len, &pos, &h) == 1) {
			bad += !check_rec(h, seq, sizes[seq]);
			seq++;
		}
	}
	T_EQ_U64(seq, N);
	T_EQ_U64(bad, 0);
	prec_tfile_reader_free(rd);
	prec_ring_fini(&r);
	kring_fini(&k);
	free(src);
	free(sizes);
}

/* ---- the real kernel ---- */

struct realcol {
	struct prec_ring_counts counts;
	pid_t child;
	int comm_true, exits, mmaps, other, bad_sid;
	uint64_t last_time;
};

static int real_cb(void *ctx, const struct perf_event_header *h)
{
	struct realcol *c = ctx;
	struct prec_sample_id sid;

	prec_ring_count_record(&c->counts, h);
	if (prec_perf_sample_id(h, &sid) || sid.pid != (uint32_t)c->child) {
		c->bad_sid++;
		return 0;
	}
	if (sid.time < c->last_time)
		c->bad_sid++;
	c->last_time = sid.time;
	switch (h->type) {
	case PERF_RECORD_COMM:
		if (!strcmp((const char *)h + 16, "true"))
			c->comm_true++;
		break;
	case PERF_RECORD_EXIT:
		c->exits++;
		break;
	case PERF_RECORD_MMAP:
		c->mmaps++;
		break;
	default:
		c->other++;
	}
	return 0;
}

/*
 * A software event on a child that execs true: the kernel's own records come
 * through a one-page data ring (it wraps many times) with a sample_id
 * trailer in the layout prec_perf_sample_id() expects.
 */
static void real_kernel_ring(void)
{
	struct prec_attr attr = { 0 };
	struct realcol c = { 0 };
	struct prec_ring r;
	int go[2], fd, status, loops = 0;
	long page = sysconf(_SC_PAGESIZE);
	void *base;
	pid_t pid;

	T_EQ_INT(pipe(go), 0);
	pid = fork();
	if (pid == 0) {
		char x;

		close(go[1]);
		if (read(go[0], &x, 1) != 1)
			_exit(1);
		/* many data mappings so the one-page ring wraps */
		for (int i = 0; i < 300; i++) {
			void *m = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			munmap(m, 8192);
			usleep(200);
		}
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.size = PREC_ATTR_SIZE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.sample_type = PREC_SAMPLE_ID_TYPE;
	attr.sample_id_all = 1;
	attr.comm = 1;
	attr.mmap = 1;
	attr.mmap_data = 1;
	attr.task = 1;
	attr.watermark = 1;
	attr.wakeup_watermark = 1;
	fd = prec_perf_event_open(&attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		t_skip("perf_event_open of a software event failed (needs root or "
		       "perf_event_paranoid <= 1)");
	}
	base = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	T_OK(base != MAP_FAILED);
	if (base == MAP_FAILED)
		return;
	T_EQ_INT(prec_ring_init(&r, base, (size_t)page, NULL, 0, false), 0);
	c.child = pid;
	T_EQ_INT(write(go[1], "g", 1), 1);
	for (;;) {
		long n = prec_ring_read_data(&r, real_cb, &c);

		T_OK(n >= 0);
		if (n < 0)
			break;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			prec_ring_read_data(&r, real_cb, &c);
			break;
		}
		if (++loops > 2000000)
			break;
	}
	T_EQ_INT(c.bad_sid, 0);
	T_EQ_INT(c.comm_true, 1);
	T_OK(c.exits >= 1 || c.counts.lost > 0);
	/* a busy machine may make the kernel drop some: then it says so */
	T_OK(c.mmaps > 0);
	T_OK(c.mmaps + (int)c.counts.lost >= 300);
	T_EQ_INT(c.other, (int)c.counts.lost_events);
	T_EQ_U64(((struct perf_event_mmap_page *)base)->data_tail,
		 ((struct perf_event_mmap_page *)base)->data_head);
	prec_ring_fini(&r);
	munmap(base, (size_t)page * 2);
	close(fd);
	close(go[1]);
}

/*
 * A tracer as the kernel runs one over an AUX area: each burst writes what
 * fits; a burst that does not fit is cut, flagged TRUNCATED in its AUX
 * record and the event disabled (perf_aux_output_begin()/_end(),
 * perf_event_disable_inatomic()). A disabled tracer writes nothing.
 */
struct ktracer {
	struct kring *k;
	bool enabled;
	uint64_t written, truncations;
};

static void ktrace(struct ktracer *t, const uint8_t *src, size_t n)
{
	struct kring *k = t->k;
	uint64_t tail = __atomic_load_n(&k->meta->aux_tail, __ATOMIC_ACQUIRE);
	size_t w = (size_t)PREC_MIN((uint64_t)n, k->aux_size - (k->aux_head - tail));
	uint64_t rec[4 + 4];
	struct perf_event_header h = { .type = PERF_RECORD_AUX, .size = 24 + 8 };

	if (!t->enabled)
		return;
	kput(k->aux, k->aux_size, k->aux_head, src, w);
	memcpy(rec, &h, 8);
	rec[1] = k->aux_head;
	rec[2] = w;
	rec[3] = w < n ? PERF_AUX_FLAG_TRUNCATED : 0;
	k->aux_head += w;
	t->written += w;
	__atomic_store_n(&k->meta->aux_head, k->aux_head, __ATOMIC_RELEASE);
	kwrite_rec(k, rec, 32, true, true);
	if (w < n) {
		t->enabled = false;
		t->truncations++;
	}
}

static void aux_overrun_reenable(void)
{
	struct kring k;
	struct prec_ring r;
	struct auxcol c = { 0 };
	struct prec_ring_counts counts = { 0 };
	struct ktracer t;
	uint8_t src[3000];
	long n;
	int round;

	for (int i = 0; i < 3000; i++)
		src[i] = pat((uint64_t)i);
	kring_init(&k, 4096, 4096);
	t = (struct ktracer){ .k = &k, .enabled = true };
	T_EQ_INT(prec_ring_init(&r, k.mem, 4096, k.aux, 4096, false), 0);
	for (round = 0; round < 5; round++) {
		/* Two bursts of 3000 into 4096: the second overruns and stops the tracer. */
		ktrace(&t, src, 3000);
		ktrace(&t, src, 3000);
		T_OK(!t.enabled);
		ktrace(&t, src, 3000); /* lost: the tracer is off */
		T_OK(prec_ring_read_data(&r, count_cb, &counts) > 0);
		c.expect_off = r.aux_tail;
		n = prec_ring_read_aux(&r, aux_cb, &c);
		T_EQ_INT(n, 4096);
		/* The read made room: re-enable, unless the recording is stopping. */
		T_OK(!prec_ring_aux_reenable(&r, n, true));
		T_OK(prec_ring_aux_reenable(&r, n, false));
		t.enabled = true;
		/* Nothing new read: nothing to re-enable. */
		T_OK(!prec_ring_aux_reenable(&r, prec_ring_read_aux(&r, aux_cb, &c), false));
	}
	T_EQ_U64(t.truncations, 5);
	T_EQ_U64(counts.truncated, 5);
	T_EQ_U64(c.got, t.written);
	T_EQ_U64(t.written, 5 * 4096);
	/* Snapshot mode never re-enables: the kernel ignores the tail there. */
	prec_ring_fini(&r);
	T_EQ_INT(prec_ring_init(&r, k.mem, 4096, k.aux, 4096, true), 0);
	T_OK(!prec_ring_aux_reenable(&r, 4096, false));
	prec_ring_fini(&r);
	kring_fini(&k);
}

static const struct t_case cases[] = {
	T(aux_overrun_reenable),
	T(data_wrap_reassembly),
	T(data_callback_stop),
	T(data_bad_record),
	T(data_threaded_slow_consumer),
	T(aux_wrap_spans),
	T(aux_callback_error_keeps_bytes),
	T(aux_threaded_multi_mib),
	T(overwrite_snapshot_counter_head),
	T(overwrite_snapshot_position_head),
	T(aux_flag_counting),
	T(sample_parsers),
	T(time_conv_and_init),
	T(ring_to_file),
	T(real_kernel_ring),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}

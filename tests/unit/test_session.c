// SPDX-License-Identifier: MIT
/*
 * The session model: sideband records built byte by byte as the kernel lays
 * them out (include/uapi/linux/perf_event.h), streams with gaps, the thread
 * table, TSC conversion against an independent 128-bit computation, and the
 * image store's address spaces over fork, exec, threads and mmaps.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "output/output.h"
#include "output/views.h"
#include "session/image.h"
#include "base/perf_abi.h"
#include "base/perf_format.h"
#include "session/session.h"
#include "tracefile/tfile.h"

struct sbuf {
	uint8_t b[16384];
	size_t n;
};

static void put(struct sbuf *s, const void *p, size_t n)
{
	memcpy(s->b + s->n, p, n);
	s->n += n;
}

static void put64(struct sbuf *s, uint64_t v)
{
	put(s, &v, 8);
}

static void put32x2(struct sbuf *s, uint32_t a, uint32_t b)
{
	put(s, &a, 4);
	put(s, &b, 4);
}

static size_t begin(struct sbuf *s, uint32_t type, uint16_t misc)
{
	size_t at = s->n;
	uint16_t z = 0;

	put(s, &type, 4);
	put(s, &misc, 2);
	put(s, &z, 2);
	return at;
}

static void fix_size(struct sbuf *s, size_t at)
{
	uint16_t size = (uint16_t)(s->n - at);

	memcpy(s->b + at + 6, &size, 2);
}

/* sample_id trailer for IDENTIFIER|TID|TIME|CPU: pid,tid time cpu,res id */
static void end(struct sbuf *s, size_t at, int pid, int tid, uint64_t time, int cpu,
		uint64_t id)
{
	put32x2(s, (uint32_t)pid, (uint32_t)tid);
	put64(s, time);
	put32x2(s, (uint32_t)cpu, 0);
	put64(s, id);
	fix_size(s, at);
}

static void str(struct sbuf *s, const char *p)
{
	size_t l = strlen(p) + 1;
	uint8_t z[8] = { 0 };

	put(s, p, l);
	put(s, z, (8 - l % 8) % 8);
}

static void mmap2(struct sbuf *s, int pid, int tid, uint64_t start, uint64_t len,
		  uint64_t pgoff, uint32_t prot, const char *path, const uint8_t *bid,
		  uint8_t bsz, uint64_t time)
{
	size_t at = begin(s, PERF_RECORD_MMAP2,
			  PERF_RECORD_MISC_USER | (bsz ? PERF_RECORD_MISC_MMAP_BUILD_ID : 0));
	uint8_t u[24] = { 0 };

	put32x2(s, (uint32_t)pid, (uint32_t)tid);
	put64(s, start);
	put64(s, len);
	put64(s, pgoff);
	u[0] = bsz;
	if (bsz)
		memcpy(u + 4, bid, bsz);
	put(s, u, 24);
	put32x2(s, prot, MAP_PRIVATE);
	str(s, path);
	end(s, at, pid, tid, time, 0, 1);
}

static void comm(struct sbuf *s, int pid, int tid, const char *c, bool exec, uint64_t t)
{
	size_t at = begin(s, PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0);

	put32x2(s, (uint32_t)pid, (uint32_t)tid);
	str(s, c);
	end(s, at, pid, tid, t, 0, 1);
}

static void fork_rec(struct sbuf *s, uint32_t type, int pid, int ppid, int tid, int ptid,
		     uint64_t t)
{
	size_t at = begin(s, type, 0);

	put32x2(s, (uint32_t)pid, (uint32_t)ppid);
	put32x2(s, (uint32_t)tid, (uint32_t)ptid);
	put64(s, t);
	end(s, at, pid, tid, t, 0, 1);
}

static struct prec_session *new_session(void)
{
	struct prec_session *s = prec_session_new();
	struct prec_evdesc d = { .name = "dummy:u", .kind = PREC_EVK_TRACKING };
	uint64_t id = 1;

	T_OK(s != NULL);
	T_EQ_INT(prec_session_add_event(s, &d, &id, 1), 0);
	return s;
}

/* One record of each kind parse_records() checks, and one of an unknown type, into @b. */
static void sample_records(struct sbuf *b, const uint8_t *bid)
{
	size_t at;

	mmap2(b, 10, 11, 0x400000, 0x2000, 0x1000, PROT_READ | PROT_EXEC, "/bin/true", bid, 20,
	      100);
	comm(b, 10, 11, "true", true, 90);
	fork_rec(b, PERF_RECORD_FORK, 12, 10, 12, 11, 110);
	fork_rec(b, PERF_RECORD_EXIT, 12, 10, 12, 11, 120);
	/* PERF_RECORD_MMAP (v1), kernel text */
	at = begin(b, PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL);
	put32x2(b, (uint32_t)-1, 0);
	put64(b, 0xffffffff81000000ull);
	put64(b, 0x1000000);
	put64(b, 0xffffffff81000000ull);
	str(b, "[kernel.kallsyms]_text");
	end(b, at, -1, 0, 5, 0, 1);
	/* switch out (preempted), cpu-wide */
	at = begin(b, PERF_RECORD_SWITCH_CPU_WIDE,
		   PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
	put32x2(b, 20, 21);
	end(b, at, 10, 11, 130, 2, 1);
	at = begin(b, PERF_RECORD_ITRACE_START, 0);
	put32x2(b, 10, 11);
	end(b, at, 10, 11, 80, 2, 1);
	at = begin(b, PERF_RECORD_AUX, 0);
	put64(b, 4096);
	put64(b, 512);
	put64(b, PERF_AUX_FLAG_TRUNCATED);
	end(b, at, 10, 11, 140, 2, 1);
	at = begin(b, PERF_RECORD_LOST, 0);
	put64(b, 1);
	put64(b, 33);
	end(b, at, 10, 11, 150, 2, 1);
	/* a trigger sample: IDENTIFIER IP TID TIME CPU PERIOD */
	at = begin(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	put64(b, 7);
	put64(b, 0x401234);
	put32x2(b, 10, 11);
	put64(b, 160);
	put32x2(b, 3, 0);
	put64(b, 1);
	fix_size(b, at);
	/* an unknown record type is skipped */
	at = begin(b, 200, 0);
	put64(b, 0);
	fix_size(b, at);
}

static void parse_records(void)
{
	static const uint8_t bid[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6,
					 7,    8,    9,    10,   11, 12, 13, 14, 15, 16 };
	struct prec_evdesc trig = {
		.name = "sys_enter",
		.kind = PREC_EVK_RESUME,
		.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			       PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD,
	};
	uint64_t tid7 = 7;
	struct prec_session *s = new_session();
	struct sbuf b = { .n = 0 };
	const struct prec_sb *r;

	T_EQ_INT(prec_session_add_event(s, &trig, &tid7, 1), 1);
	sample_records(&b, bid);

	T_EQ_INT(prec_session_add_sideband(s, b.b, b.n, 2), 10);
	T_EQ_INT(prec_session_finalize(s), 0);
	T_EQ_INT(prec_session_nr_sb(s), 10);
	/* sorted by time: kernel mmap(5) itrace(80) comm(90) mmap(100) fork exit switch aux lost sample */
	r = prec_session_sb(s, 0);
	T_EQ_INT(r->type, PREC_SB_MMAP);
	T_OK(r->u.mmap.kernel);
	T_EQ_U64(r->u.mmap.start, 0xffffffff81000000ull);
	T_EQ_STR(r->u.mmap.path, "[kernel.kallsyms]_text");
	T_OK(r->u.mmap.prot & PROT_EXEC);
	r = prec_session_sb(s, 1);
	T_EQ_INT(r->type, PREC_SB_ITRACE_START);
	T_EQ_INT(r->tid, 11);
	T_EQ_INT(r->cpu, 2);
	r = prec_session_sb(s, 2);
	T_EQ_INT(r->type, PREC_SB_COMM);
	T_OK(r->u.comm.exec);
	T_EQ_STR(r->u.comm.comm, "true");
	r = prec_session_sb(s, 3);
	T_EQ_INT(r->type, PREC_SB_MMAP);
	T_EQ_INT(r->pid, 10);
	T_EQ_INT(r->tid, 11);
	T_EQ_U64(r->u.mmap.start, 0x400000);
	T_EQ_U64(r->u.mmap.len, 0x2000);
	T_EQ_U64(r->u.mmap.pgoff, 0x1000);
	T_EQ_INT(r->u.mmap.build_id_size, 20);
	T_OK(!memcmp(r->u.mmap.build_id, bid, 20));
	T_EQ_STR(r->u.mmap.path, "/bin/true");
	T_OK(!r->u.mmap.kernel);
	T_EQ_U64(r->time, 100);
	T_EQ_INT(r->event, 0);
	r = prec_session_sb(s, 4);
	T_EQ_INT(r->type, PREC_SB_FORK);
	T_EQ_INT(r->pid, 12);
	T_EQ_INT(r->u.fork.ppid, 10);
	T_EQ_INT(r->u.fork.ptid, 11);
	r = prec_session_sb(s, 5);
	T_EQ_INT(r->type, PREC_SB_EXIT);
	r = prec_session_sb(s, 6);
	T_EQ_INT(r->type, PREC_SB_SWITCH);
	T_OK(r->u.sw.out && r->u.sw.preempt && r->u.sw.cpu_wide);
	T_EQ_INT(r->u.sw.next_prev_pid, 20);
	T_EQ_INT(r->u.sw.next_prev_tid, 21);
	r = prec_session_sb(s, 7);
	T_EQ_INT(r->type, PREC_SB_AUX);
	T_EQ_U64(r->u.aux.offset, 4096);
	T_EQ_U64(r->u.aux.size, 512);
	T_EQ_U64(r->u.aux.flags, PERF_AUX_FLAG_TRUNCATED);
	r = prec_session_sb(s, 8);
	T_EQ_INT(r->type, PREC_SB_LOST);
	T_EQ_U64(r->u.lost.lost, 33);
	r = prec_session_sb(s, 9);
	T_EQ_INT(r->type, PREC_SB_SAMPLE);
	T_EQ_INT(r->event, 1);
	T_EQ_U64(r->u.sample.ip, 0x401234);
	T_EQ_U64(r->u.sample.period, 1);
	T_EQ_U64(r->time, 160);
	T_EQ_INT(r->cpu, 3);
	T_EQ_INT(r->tid, 11);
	T_EQ_INT(r->ring_cpu, 2);
	T_EQ_INT(prec_session_sb_lower_bound(s, 100), 3);
	T_EQ_INT(prec_session_sb_lower_bound(s, 1000), 10);
	T_EQ_INT(prec_session_add_sideband(s, b.b, b.n, 2), -EBUSY);
	prec_session_free(s);
}

/*
 * The span functions agree with the plain ones at every time of [0, @end]:
 * the same answer, and the same answer at both ends of the span they give.
 */
static void spans_agree(struct prec_session *s, int id, uint64_t end)
{
	struct prec_images *im = prec_session_images(s);

	for (uint64_t t = 0; t <= end; t++) {
		uint64_t from, until;
		const char *c = prec_session_comm_span(s, id, t, &from, &until);
		struct prec_aspace *as;

		T_OK(from <= t && t < until);
		T_EQ_STR(c, prec_session_comm(s, id, t));
		T_EQ_STR(prec_session_comm(s, id, from), c);
		T_EQ_STR(prec_session_comm(s, id, until - 1), c);
		T_EQ_INT(prec_session_pid_span(s, id, t, &from, &until), prec_session_pid_of(s, id, t));
		T_EQ_INT(prec_session_pid_of(s, id, from), prec_session_pid_of(s, id, t));
		T_EQ_INT(prec_session_pid_of(s, id, until - 1), prec_session_pid_of(s, id, t));
		if (!im)
			continue;
		as = prec_images_aspace_span(im, id, t, &from, &until);
		T_OK(from <= t && t < until);
		T_OK(as == prec_images_aspace(im, id, t));
		T_OK(as == prec_images_aspace(im, id, from));
		T_OK(as == prec_images_aspace(im, id, until - 1));
	}
}

/* Records of equal time keep their order; others sort by time. */
static void stable_order(void)
{
	struct prec_session *s = new_session();
	struct sbuf b = { .n = 0 };

	comm(&b, 1, 1, "c", false, 50);
	comm(&b, 1, 1, "a", false, 10);
	comm(&b, 1, 1, "b1", false, 30);
	comm(&b, 1, 1, "b2", false, 30);
	comm(&b, 1, 1, "b3", false, 30);
	T_EQ_INT(prec_session_add_sideband(s, b.b, b.n, -1), 5);
	T_EQ_INT(prec_session_finalize(s), 0);
	T_EQ_STR(prec_session_sb(s, 0)->u.comm.comm, "a");
	T_EQ_STR(prec_session_sb(s, 1)->u.comm.comm, "b1");
	T_EQ_STR(prec_session_sb(s, 2)->u.comm.comm, "b2");
	T_EQ_STR(prec_session_sb(s, 3)->u.comm.comm, "b3");
	T_EQ_STR(prec_session_sb(s, 4)->u.comm.comm, "c");
	T_EQ_STR(prec_session_comm(s, 1, 35), "b3");
	T_EQ_STR(prec_session_comm(s, 1, 5), "a");
	T_EQ_STR(prec_session_comm(s, 1, 1000), "c");
	T_EQ_STR(prec_session_comm(s, 99, 1000), "");
	spans_agree(s, 1, 60);
	spans_agree(s, 99, 60);
	prec_session_free(s);
}

static void malformed(void)
{
	struct prec_session *s = new_session();
	struct sbuf b = { .n = 0 }, good = { .n = 0 };
	size_t at;
	unsigned seed = 7;

	comm(&good, 1, 1, "ok", false, 1);
	/* size smaller than a header */
	at = begin(&b, PERF_RECORD_COMM, 0);
	memcpy(b.b + at + 6, &(uint16_t){ 4 }, 2);
	T_EQ_INT(prec_session_add_sideband(s, b.b, 8, -1), -PREC_E_FORMAT);
	/* size beyond the buffer */
	b.n = 0;
	comm(&b, 1, 1, "x", false, 1);
	T_EQ_INT(prec_session_add_sideband(s, b.b, b.n - 8, -1), -PREC_E_TRUNCATED);
	T_EQ_INT(prec_session_add_sideband(s, b.b, 5, -1), -PREC_E_TRUNCATED);
	/* a file name without its NUL before the trailer */
	b.n = 0;
	at = begin(&b, PERF_RECORD_COMM, 0);
	put32x2(&b, 1, 1);
	put64(&b, 0x4141414141414141ull);
	end(&b, at, 1, 1, 1, 0, 1);
	T_EQ_INT(prec_session_add_sideband(s, b.b, b.n, -1), -PREC_E_FORMAT);
	/* build id size > 20 */
	b.n = 0;
	mmap2(&b, 1, 1, 0x1000, 0x1000, 0, PROT_EXEC, "/x", (const uint8_t *)"0123456789abcdefghij",
	      20, 1);
	b.b[40] = 21;
	T_EQ_INT(prec_session_add_sideband(s, b.b, b.n, -1), -PREC_E_FORMAT);
	/* a record too short for its trailer */
	b.n = 0;
	at = begin(&b, PERF_RECORD_LOST, 0);
	put64(&b, 1);
	fix_size(&b, at);
	T_EQ_INT(prec_session_add_sideband(s, b.b, b.n, -1), -PREC_E_FORMAT);
	/* good records before a bad one are kept */
	memcpy(good.b + good.n, b.b, b.n);
	T_EQ_INT(prec_session_add_sideband(s, good.b, good.n + b.n, -1), -PREC_E_FORMAT);
	T_EQ_INT(prec_session_add_sideband(s, NULL, 4, -1), -EINVAL);
	T_EQ_INT(prec_session_finalize(s), 0);
	T_EQ_INT(prec_session_nr_sb(s), 1);
	prec_session_free(s);
	/* random bytes: an error or records, never a crash */
	for (int round = 0; round < 2000; round++) {
		uint8_t junk[512];
		size_t len = (size_t)rand_r(&seed) % sizeof(junk);

		for (size_t i = 0; i < len; i++)
			junk[i] = (uint8_t)rand_r(&seed);
		/* plausible headers half the time */
		if (round & 1 && len >= 8) {
			uint32_t t = (uint32_t)rand_r(&seed) % 16;
			uint16_t sz = (uint16_t)(8 + (size_t)rand_r(&seed) % (len - 7));

			memcpy(junk, &t, 4);
			memcpy(junk + 6, &sz, 2);
		}
		s = new_session();
		prec_session_add_sideband(s, junk, len, -1);
		T_EQ_INT(prec_session_finalize(s), 0);
		prec_session_free(s);
	}
}

static void events_and_ids(void)
{
	struct prec_session *s = prec_session_new();
	struct prec_evdesc a = { .name = "a", .kind = PREC_EVK_PAUSE };
	struct prec_evdesc bad = { .sample_type = UINT64_MAX };
	struct prec_evdesc anon = { .kind = PREC_EVK_OTHER };
	uint64_t ids[3] = { 100, 5, 77 }, dup[2] = { 9, 5 }, self[2] = { 8, 8 };

	T_EQ_INT(prec_session_add_event(s, &a, ids, 3), 0);
	T_EQ_INT(prec_session_add_event(s, &a, dup, 2), -EEXIST);
	T_EQ_INT(prec_session_add_event(s, &a, self, 2), -EEXIST);
	T_EQ_INT(prec_session_add_event(s, &bad, NULL, 0), -EINVAL);
	T_EQ_INT(prec_session_add_event(s, &anon, &(uint64_t){ 9 }, 1), 1);
	T_EQ_INT(prec_session_event_by_id(s, 5), 0);
	T_EQ_INT(prec_session_event_by_id(s, 77), 0);
	T_EQ_INT(prec_session_event_by_id(s, 100), 0);
	T_EQ_INT(prec_session_event_by_id(s, 9), 1);
	T_EQ_INT(prec_session_event_by_id(s, 8), -1);
	T_EQ_STR(prec_session_event(s, 1)->name, "event1");
	T_EQ_INT(prec_session_event(s, 0)->kind, PREC_EVK_PAUSE);
	T_OK(prec_session_event(s, 2) == NULL);
	T_OK(prec_session_event(s, -1) == NULL);
	T_EQ_INT(prec_session_set_sample_type(s, PERF_SAMPLE_TID | PERF_SAMPLE_TIME), 0);
	T_EQ_INT(prec_session_set_sample_type(s, UINT64_MAX), -EINVAL);
	/* Later kernels' bits are fine: they only add fields after PERIOD. */
	T_EQ_INT(prec_session_set_sample_type(s, PERF_SAMPLE_IDENTIFIER | (1ull << 40)), 0);
	prec_session_free(s);
}

/* A non-default trailer layout: TID|TIME|ID|STREAM_ID|CPU, no IDENTIFIER. */
static void other_sample_type(void)
{
	struct prec_session *s = prec_session_new();
	struct prec_evdesc a = { .name = "a" };
	struct sbuf b = { .n = 0 };
	size_t at;

	prec_session_add_event(s, &a, &(uint64_t){ 42 }, 1);
	T_EQ_INT(prec_session_set_sample_type(s, PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
							 PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
							 PERF_SAMPLE_CPU),
		 0);
	at = begin(&b, PERF_RECORD_ITRACE_START, 0);
	put32x2(&b, 3, 4);
	put32x2(&b, 3, 4);
	put64(&b, 999);
	put64(&b, 42);
	put64(&b, 43);
	put32x2(&b, 6, 0);
	fix_size(&b, at);
	T_EQ_INT(prec_session_add_sideband(s, b.b, b.n, -1), 1);
	prec_session_finalize(s);
	T_EQ_U64(prec_session_sb(s, 0)->time, 999);
	T_EQ_INT(prec_session_sb(s, 0)->cpu, 6);
	T_EQ_INT(prec_session_sb(s, 0)->event, 0);
	prec_session_free(s);
}

static void aux_streams(void)
{
	struct prec_session *s = prec_session_new();
	const struct prec_stream *st;
	uint8_t d[64];

	for (int i = 0; i < 64; i++)
		d[i] = (uint8_t)i;
	T_EQ_INT(prec_session_add_aux(s, -1, -1, 0, d, 4), -EINVAL);
	T_EQ_INT(prec_session_add_aux(s, -1, 5, 1000, d, 10), 0);
	T_EQ_INT(prec_session_add_aux(s, -1, 5, 1010, d + 10, 10), 0);
	/* overlapping piece: only the new part is kept */
	T_EQ_INT(prec_session_add_aux(s, -1, 5, 1015, d + 15, 10), 0);
	/* a duplicate piece changes nothing */
	T_EQ_INT(prec_session_add_aux(s, -1, 5, 1000, d, 25), 0);
	/* a gap of 100 bytes */
	T_EQ_INT(prec_session_add_aux(s, -1, 5, 1125, d + 30, 5), 0);
	T_EQ_INT(prec_session_add_aux_gap(s, -1, 5, 7), 0);
	T_EQ_INT(prec_session_add_aux(s, -1, 5, 1137, d + 40, 2), 0);
	T_EQ_INT(prec_session_add_aux(s, -1, 5, 10, d, 2), -EINVAL);
	T_EQ_INT(prec_session_add_aux(s, 2, -1, 0, d, 8), 0);
	T_EQ_INT(prec_session_finalize(s), 0);
	T_EQ_INT(prec_session_add_aux(s, -1, 5, 2000, d, 1), -EBUSY);
	T_EQ_INT(prec_session_nr_streams(s), 2);
	/* No sideband says when they began: by tid, the per-CPU one (-1) first. */
	T_EQ_INT(prec_session_stream(s, 0)->cpu, 2);
	st = prec_session_stream(s, 1);
	T_EQ_INT(st->tid, 5);
	T_EQ_INT(st->cpu, -1);
	T_EQ_INT(st->len, 25 + 5 + 2);
	T_OK(!memcmp(st->data, d, 25));
	T_OK(!memcmp(st->data + 25, d + 30, 5));
	T_OK(!memcmp(st->data + 30, d + 40, 2));
	T_EQ_INT(st->nr_gaps, 2);
	T_EQ_U64(st->gaps[0].pos, 25);
	T_EQ_U64(st->gaps[0].lost, 100);
	T_EQ_U64(st->gaps[1].pos, 30);
	T_EQ_U64(st->gaps[1].lost, 7);
	T_EQ_U64(prec_stream_offset(st, 0), 1000);
	T_EQ_U64(prec_stream_offset(st, 24), 1024);
	T_EQ_U64(prec_stream_offset(st, 25), 1125);
	T_EQ_U64(prec_stream_offset(st, 31), 1138);
	prec_session_free(s);
}

/* A source of stream bytes for aux_refs: pieces of a buffer, counting fetches. */
struct src_pieces {
	const uint8_t *base;
	size_t off[8], len[8];
	int fetches;
};

static int src_fetch(void *ctx, uint64_t src, void **scratch, const void **p, size_t *n)
{
	struct src_pieces *sp = ctx;

	if (!*scratch)
		*scratch = malloc(1);
	if (src >= 8 || !*scratch)
		return -ENOENT;
	sp->fetches++;
	*p = sp->base + sp->off[src];
	*n = sp->len[src];
	return 0;
}

/*
 * Streams added by reference hold the same bytes, gaps and offsets as those
 * added with their bytes (aux_streams' pieces), read in windows that move
 * forward and overlap, or all at once by prec_session_load_aux().
 */
static void aux_refs(void)
{
	struct prec_session *s = prec_session_new(), *c = prec_session_new();
	struct src_pieces sp = { 0 };
	struct prec_aux_source src = { src_fetch, free, &sp, NULL };
	static const size_t off[] = { 1000, 1010, 1015, 1000, 1125, 1137 };
	static const size_t at[] = { 0, 10, 15, 0, 30, 40 }, len[] = { 10, 10, 10, 25, 5, 2 };
	const struct prec_stream *st, *cs;
	struct prec_stream_reader r;
	const uint8_t *p;
	uint8_t d[64];
	uint64_t lo;

	for (int i = 0; i < 64; i++)
		d[i] = (uint8_t)(i * 7 + 1);
	sp.base = d;
	prec_session_set_aux_source(s, &src);
	for (size_t i = 0; i < 6; i++) {
		sp.off[i] = at[i];
		sp.len[i] = len[i];
		T_EQ_INT(prec_session_add_aux_ref(s, -1, 5, off[i], i, 0, len[i]), 0);
		T_EQ_INT(prec_session_add_aux(c, -1, 5, off[i], d + at[i], len[i]), 0);
		if (i == 4) {
			T_EQ_INT(prec_session_add_aux_gap(s, -1, 5, 7), 0);
			T_EQ_INT(prec_session_add_aux_gap(c, -1, 5, 7), 0);
		}
	}
	/* bytes and references do not mix in one stream */
	T_EQ_INT(prec_session_add_aux(s, -1, 5, 1139, d, 2), -EINVAL);
	T_EQ_INT(prec_session_finalize(s), 0);
	T_EQ_INT(prec_session_finalize(c), 0);
	st = prec_session_stream(s, 0);
	cs = prec_session_stream(c, 0);
	T_OK(!st->data);
	T_EQ_INT(st->len, cs->len);
	T_EQ_INT(st->nr_gaps, cs->nr_gaps);
	for (size_t i = 0; i < st->nr_gaps && i < cs->nr_gaps; i++) {
		T_EQ_U64(st->gaps[i].pos, cs->gaps[i].pos);
		T_EQ_U64(st->gaps[i].lost, cs->gaps[i].lost);
	}
	prec_stream_reader_init(&r, s, st);
	for (lo = 0; lo + 7 <= st->len; lo += 3) {
		T_EQ_INT(prec_stream_read(&r, lo, lo + 7, &p), 0);
		T_OK(!memcmp(p, cs->data + lo, 7));
	}
	T_EQ_INT(prec_stream_read(&r, 0, st->len + 1, &p), -EINVAL);
	/* one piece read twice in a row is fetched once */
	sp.fetches = 0;
	prec_stream_reader_trim(&r);
	T_EQ_INT(prec_stream_read(&r, 0, 3, &p), 0);
	T_EQ_INT(prec_stream_read(&r, 4, 8, &p), 0);
	T_EQ_INT(sp.fetches, 1);
	prec_stream_reader_fini(&r);
	T_EQ_INT(prec_session_load_aux(s), 0);
	st = prec_session_stream(s, 0);
	T_OK(st->data && !st->nr_refs && !memcmp(st->data, cs->data, cs->len));
	prec_session_free(s);
	prec_session_free(c);
}

static void tsc_conversion(void)
{
	struct prec_session *s = prec_session_new();
	struct prec_machine m = { .time_shift = 31, .time_mult = 1234567890u,
				  .time_zero = 987654321ull, .cap_user_time_zero = true };
	unsigned seed = 3;

	T_EQ_U64(prec_session_tsc_to_time(s, 12345), 12345);
	prec_session_set_machine(s, &m);
	for (int i = 0; i < 10000; i++) {
		uint64_t tsc = ((uint64_t)rand_r(&seed) << 31 ^ (uint64_t)rand_r(&seed)) >> (i % 20);
		unsigned __int128 want = (unsigned __int128)tsc * m.time_mult >> m.time_shift;
		uint64_t t = prec_session_tsc_to_time(s, tsc), back;

		T_EQ_U64(t, (uint64_t)want + m.time_zero);
		back = prec_session_time_to_tsc(s, t);
		T_OK(back <= tsc && tsc - back <= 2);
	}
	prec_session_free(s);
}

static void thread_table(void)
{
	struct prec_session *s = new_session();
	struct sbuf b = { .n = 0 };

	comm(&b, 100, 100, "sh", false, 10);
	fork_rec(&b, PERF_RECORD_FORK, 100, 100, 101, 100, 20); /* a thread */
	fork_rec(&b, PERF_RECORD_FORK, 200, 100, 200, 100, 30); /* a process */
	comm(&b, 200, 200, "ls", true, 40);
	prec_session_add_sideband(s, b.b, b.n, -1);
	prec_session_finalize(s);
	T_EQ_INT(prec_session_pid_of(s, 101, 25), 100);
	T_EQ_INT(prec_session_pid_of(s, 101, 5), 100);
	T_EQ_INT(prec_session_pid_of(s, 200, 35), 200);
	T_EQ_INT(prec_session_pid_of(s, 300, 35), -1);
	T_EQ_STR(prec_session_comm(s, 200, 50), "ls");
	prec_session_free(s);
}

static void warnings(void)
{
	struct prec_session *s = prec_session_new();

	prec_session_warn(s, "a %d", 1);
	prec_session_warn(s, "a %d", 1);
	prec_session_warn(s, "b");
	T_EQ_INT(prec_session_nr_warnings(s), 2);
	T_EQ_STR(prec_session_warning(s, 0), "a 1");
	T_OK(prec_session_warning(s, 2) == NULL);
	for (int i = 0; i < 1000; i++)
		prec_session_warn(s, "w%d", i);
	T_OK(prec_session_nr_warnings(s) <= 256);
	prec_session_free(s);
	prec_session_free(NULL);
}

/* Address spaces: exec replaces, fork copies, threads share, mmap overlays. */
static void address_spaces(void)
{
	struct prec_session *s = new_session();
	struct prec_images *im;
	struct sbuf b = { .n = 0 };
	struct prec_image_desc d = { 0 };
	uint8_t code[0x3000], buf[16];
	const struct prec_map *m;

	for (size_t i = 0; i < sizeof(code); i++)
		code[i] = (uint8_t)(i * 7);
	comm(&b, 100, 100, "sh", true, 10);
	mmap2(&b, 100, 100, 0x400000, 0x3000, 0, PROT_READ | PROT_EXEC, "/sh", NULL, 0, 11);
	fork_rec(&b, PERF_RECORD_FORK, 100, 100, 101, 100, 15);
	fork_rec(&b, PERF_RECORD_FORK, 200, 100, 200, 100, 20);
	/* the child maps a library over part of the inherited image */
	mmap2(&b, 200, 200, 0x401000, 0x1000, 0x5000, PROT_READ | PROT_EXEC, "/lib.so", NULL, 0,
	      25);
	/* a data mapping over the rest removes that code */
	mmap2(&b, 200, 200, 0x402000, 0x1000, 0, PROT_READ | PROT_WRITE, "/data", NULL, 0, 26);
	comm(&b, 100, 100, "ls", true, 30);
	mmap2(&b, 100, 100, 0x500000, 0x1000, 0, PROT_READ | PROT_EXEC, "/ls", NULL, 0, 31);
	T_EQ_INT(prec_session_add_sideband(s, b.b, b.n, -1), 8);
	d.path = "/sh";
	d.bytes = code;
	d.size = sizeof(code);
	T_EQ_INT(prec_session_add_image(s, &d), 0);
	T_EQ_INT(prec_session_finalize(s), 0);
	im = prec_session_images(s);

	m = prec_aspace_find(prec_images_aspace(im, 100, 12), 0x400010);
	T_OK(m && !strcmp(prec_dso_path(m->dso), "/sh"));
	spans_agree(s, 100, 40);
	spans_agree(s, 101, 40);
	spans_agree(s, 200, 40);
	/* the thread 101 uses its process's space */
	T_EQ_INT(prec_session_pid_of(s, 101, 16), 100);
	/* after exec only the new image */
	T_OK(prec_aspace_find(prec_images_aspace(im, 100, 35), 0x400010) == NULL);
	m = prec_aspace_find(prec_images_aspace(im, 100, 35), 0x500000);
	T_OK(m && !strcmp(prec_dso_path(m->dso), "/ls"));
	/* between exec and the new mmap: empty */
	T_OK(prec_aspace_find(prec_images_aspace(im, 100, 30), 0x500000) == NULL);
	/* the forked child inherited /sh, then the overlay */
	m = prec_aspace_find(prec_images_aspace(im, 200, 21), 0x401800);
	T_OK(m && !strcmp(prec_dso_path(m->dso), "/sh"));
	m = prec_aspace_find(prec_images_aspace(im, 200, 25), 0x401800);
	T_OK(m && !strcmp(prec_dso_path(m->dso), "/lib.so") && m->pgoff == 0x5000);
	m = prec_aspace_find(prec_images_aspace(im, 200, 25), 0x400800);
	T_OK(m && !strcmp(prec_dso_path(m->dso), "/sh") && m->end == 0x401000);
	m = prec_aspace_find(prec_images_aspace(im, 200, 25), 0x402800);
	T_OK(m && !strcmp(prec_dso_path(m->dso), "/sh") && m->pgoff == 0x2000);
	T_OK(prec_aspace_find(prec_images_aspace(im, 200, 27), 0x402800) == NULL);
	/* the parent is not affected by the child's mappings */
	m = prec_aspace_find(prec_images_aspace(im, 100, 27), 0x401800);
	T_OK(m && !strcmp(prec_dso_path(m->dso), "/sh"));
	/* reading embedded code, clipped at the mapping's end */
	T_EQ_INT(prec_aspace_read(prec_images_aspace(im, 100, 12), 0x402ff8, buf, 16), 8);
	T_EQ_INT(buf[0], (uint8_t)(0x2ff8 * 7));
	/* the child's /sh part at 0x400000 reads the same bytes */
	T_EQ_INT(prec_aspace_read(prec_images_aspace(im, 200, 25), 0x400004, buf, 4), 4);
	T_EQ_INT(buf[0], (uint8_t)(4 * 7));
	/* /lib.so has no code anywhere: nothing to read, one warning */
	T_EQ_INT(prec_aspace_read(prec_images_aspace(im, 200, 25), 0x401000, buf, 4), 0);
#ifdef PREC_NO_LIBIPT
	/* built without libipt (make NO_LIBIPT=1, the arm64 build): no libipt images */
	T_OK(prec_aspace_pt_image(prec_images_aspace(im, 200, 25)) == NULL);
#else
	T_OK(prec_aspace_pt_image(prec_images_aspace(im, 200, 25)) != NULL);
#endif
	T_EQ_INT(prec_session_nr_warnings(s), 1);
	T_CONTAINS(prec_session_warning(s, 0), "/lib.so");
	/* an unknown process: the kernel-only space */
	T_EQ_INT(prec_aspace_pid(prec_images_aspace(im, 999, 0)), -1);
	T_EQ_U64(prec_aspace_end(prec_images_aspace(im, 100, 12)), 30);
	prec_session_free(s);
}

static void kernel_text(void)
{
	struct prec_session *s = new_session();
	static const char ks[] = "ffffffff81000000 T _stext\nffffffff81000010 t kfn\n";
	uint8_t text[64], buf[8];
	struct prec_loc loc;
	struct prec_images *im;

	memset(text, 0x90, sizeof(text));
	text[0x10] = 0xc3;
	T_EQ_INT(prec_session_add_kernel_text(s, 0xffffffff81000000ull, text, sizeof(text)), 0);
	T_EQ_INT(prec_session_add_kernel_text(s, 0, NULL, 1), -EINVAL);
	T_EQ_INT(prec_session_add_kallsyms(s, ks, sizeof(ks) - 1), 0);
	T_EQ_INT(prec_session_finalize(s), 0);
	im = prec_session_images(s);
	T_EQ_INT(prec_aspace_read(prec_images_aspace(im, 5, 0), 0xffffffff81000010ull, buf, 8),
		 8);
	T_EQ_INT(buf[0], 0xc3);
	prec_aspace_resolve(prec_images_aspace(im, 5, 0), 0xffffffff81000012ull, &loc);
	T_OK(loc.sym && !strcmp(loc.sym->name, "kfn") && loc.symoff == 2);
	T_EQ_STR(loc.dso, "[kernel.kallsyms]");
	T_EQ_INT(prec_session_add_kallsyms(s, ks, 4), -EBUSY);
	prec_session_free(s);
}

/*
 * At the time of an exec both programs can run: the last instructions before
 * execve carry the exec's timestamp as well as the first ones after it. At
 * that very time the space is the new mappings over the old ones; from the
 * next nanosecond on, the new program's alone.
 */
static void exec_time_space(void)
{
	struct prec_session *s = new_session();
	struct prec_images *im;
	struct prec_aspace *at;
	struct sbuf b = { .n = 0 };
	static const char *const paths[] = { "/sh", "/libc", "/ls" };
	static uint8_t code[3][0x3000];
	uint8_t buf[4];
	const struct prec_map *m;

	for (size_t k = 0; k < 3; k++) {
		struct prec_image_desc d = { 0 };

		memset(code[k], 0x10 * (int)(k + 1), sizeof(code[k]));
		d.path = paths[k];
		d.bytes = code[k];
		d.size = sizeof(code[k]);
		T_EQ_INT(prec_session_add_image(s, &d), 0);
	}
	comm(&b, 100, 100, "sh", true, 10);
	mmap2(&b, 100, 100, 0x400000, 0x3000, 0, PROT_READ | PROT_EXEC, "/sh", NULL, 0, 10);
	mmap2(&b, 100, 100, 0x700000, 0x1000, 0, PROT_READ | PROT_EXEC, "/libc", NULL, 0, 12);
	/* the exec and the new program's first mappings, all at time 30 */
	comm(&b, 100, 100, "ls", true, 30);
	mmap2(&b, 100, 100, 0x400000, 0x1000, 0, PROT_READ | PROT_EXEC, "/ls", NULL, 0, 30);
	mmap2(&b, 100, 100, 0x600000, 0x1000, 0, PROT_READ | PROT_EXEC, "/ls", NULL, 0, 30);
	mmap2(&b, 100, 100, 0x700000, 0x1000, 0x1000, PROT_READ | PROT_EXEC, "/libc", NULL, 0,
	      40);
	T_EQ_INT(prec_session_add_sideband(s, b.b, b.n, -1), 7);
	T_EQ_INT(prec_session_finalize(s), 0);
	im = prec_session_images(s);

	/* before: the old program */
	m = prec_aspace_find(prec_images_aspace(im, 100, 29), 0x700010);
	T_OK(m && !strcmp(prec_dso_path(m->dso), "/libc"));
	/* at the exec's time: the old libc, the new program over the old one */
	at = prec_images_aspace(im, 100, 30);
	m = prec_aspace_find(at, 0x700010);
	T_OK(m && !strcmp(prec_dso_path(m->dso), "/libc") && m->pgoff == 0);
	m = prec_aspace_find(at, 0x400010);
	T_OK(m && !strcmp(prec_dso_path(m->dso), "/ls") && m->end == 0x401000);
	m = prec_aspace_find(at, 0x401010);
	T_OK(m && !strcmp(prec_dso_path(m->dso), "/sh") && m->pgoff == 0x1000);
	m = prec_aspace_find(at, 0x600000);
	T_OK(m && !strcmp(prec_dso_path(m->dso), "/ls"));
	T_EQ_INT(prec_aspace_read(at, 0x700004, buf, 4), 4);
	T_EQ_INT(buf[0], 0x20);
	T_EQ_INT(prec_aspace_read(at, 0x400004, buf, 4), 4);
	T_EQ_INT(buf[0], 0x30);
	T_EQ_U64(prec_aspace_end(at), 31);
	T_EQ_INT(prec_aspace_pid(at), 100);
#ifndef PREC_NO_LIBIPT
	T_OK(prec_aspace_pt_image(at) != NULL);
#endif
	/* the same space every time it is asked for */
	T_OK(prec_images_aspace(im, 100, 30) == at);
	/* after: the new program alone */
	T_OK(prec_aspace_find(prec_images_aspace(im, 100, 31), 0x700010) == NULL);
	T_OK(prec_aspace_find(prec_images_aspace(im, 100, 31), 0x401010) == NULL);
	m = prec_aspace_find(prec_images_aspace(im, 100, 31), 0x400010);
	T_OK(m && !strcmp(prec_dso_path(m->dso), "/ls"));
	m = prec_aspace_find(prec_images_aspace(im, 100, 40), 0x700010);
	T_OK(m && !strcmp(prec_dso_path(m->dso), "/libc") && m->pgoff == 0x1000);
	/* the first exec has no program before it */
	T_OK(prec_aspace_find(prec_images_aspace(im, 100, 10), 0x700010) == NULL);
	T_EQ_INT(prec_session_nr_warnings(s), 0);
	prec_session_free(s);
}

/*
 * The warnings about code that is missing or from another build are in the
 * session once it is finalized (ptdump prints them before decoding), one per
 * file, for every process a stream traces; other mappings warn when used.
 */
static void warnings_at_finalize(void)
{
	static const uint8_t wrong[20] = { 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
					   0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
					   0x11, 0x11, 0x11, 0x11, 0x11, 0x11 };
	char self[600];
	uint8_t buf[4], d[16] = { 0x02, 0x82 };
	size_t n = 0, i;
	ssize_t k;

	k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (!T_OK(k > 0))
		return;
	self[k] = '\0';
	for (int per_cpu = 0; per_cpu < 2; per_cpu++) {
		struct prec_session *s = new_session();
		struct sbuf b = { .n = 0 };
		bool missing = false, other = false, untraced = false;

		comm(&b, 100, 100, "prog", true, 10);
		/* thread 101 of process 100 has the stream */
		fork_rec(&b, PERF_RECORD_FORK, 100, 100, 101, 100, 11);
		mmap2(&b, 100, 100, 0x400000, 0x1000, 0, PROT_READ | PROT_EXEC,
		      "/nonexistent/dir/a.so", NULL, 0, 12);
		mmap2(&b, 100, 100, 0x500000, 0x1000, 0x1000, PROT_READ | PROT_EXEC,
		      "/nonexistent/dir/a.so", NULL, 0, 13);
		/* a file on disk, but of another build than the recording's */
		mmap2(&b, 100, 100, 0x600000, 0x1000, 0, PROT_READ | PROT_EXEC, self, wrong, 20,
		      14);
		/* process 300 has no stream */
		comm(&b, 300, 300, "other", true, 15);
		mmap2(&b, 300, 300, 0x400000, 0x1000, 0, PROT_READ | PROT_EXEC,
		      "/nonexistent/dir/b.so", NULL, 0, 16);
		T_EQ_INT(prec_session_add_sideband(s, b.b, b.n, -1), 7);
		if (per_cpu)
			T_EQ_INT(prec_session_add_aux(s, 0, -1, 0, d, sizeof(d)), 0);
		else
			T_EQ_INT(prec_session_add_aux(s, -1, 101, 0, d, sizeof(d)), 0);
		T_EQ_INT(prec_session_finalize(s), 0);
		n = prec_session_nr_warnings(s);
		for (i = 0; i < n; i++) {
			const char *w = prec_session_warning(s, i);

			missing |= strstr(w, "/nonexistent/dir/a.so") && strstr(w, "not found");
			other |= strstr(w, self) && strstr(w, "build id");
			untraced |= strstr(w, "b.so") != NULL;
		}
		T_OK(missing);
		T_OK(other);
		/* per CPU every process is traced */
		T_EQ_INT(untraced, per_cpu);
		T_EQ_INT(n, 2 + per_cpu);
		/* the untraced process's missing file warns when its code is read */
		T_EQ_INT(prec_aspace_read(prec_images_aspace(prec_session_images(s), 300, 20),
					  0x400000, buf, 4),
			 0);
		T_EQ_INT(prec_session_nr_warnings(s), 3);
		prec_session_free(s);
	}
}

/*
 * A thread with a stream and a record of its own but no process known (no
 * COMM, MMAP or FORK): finalizing looks its process up in an empty table
 * (a fuzzing finding: bsearch() on a NULL base, undefined behaviour that
 * UBSan reports under make check SANITIZE=1).
 */
static void stream_without_process(void)
{
	struct prec_session *s = new_session();
	struct sbuf b = { .n = 0 };
	uint8_t d[16] = { 0x02, 0x82 };
	size_t at;

	at = begin(&b, PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT);
	end(&b, at, 20, 21, 50, 0, 1);
	T_EQ_INT(prec_session_add_sideband(s, b.b, b.n, -1), 1);
	T_EQ_INT(prec_session_add_aux(s, -1, 21, 0, d, sizeof(d)), 0);
	T_EQ_INT(prec_session_finalize(s), 0);
	T_EQ_INT(prec_session_pid_of(s, 21, 60), -1);
	prec_session_free(s);
}

/* A PREC_RECORD_SNAPSHOT of stream (-1, @tid) [@a, @b), for keep_snapshot. */
static void snap_rec(struct sbuf *b, uint32_t index, int tid, uint64_t a, uint64_t e,
		     uint64_t time)
{
	size_t at = begin(b, PREC_RECORD_SNAPSHOT, 0);

	put32x2(b, index, PREC_SNAP_SIGNAL);
	put32x2(b, (uint32_t)-1, 1);
	put64(b, e - a);
	put32x2(b, (uint32_t)-1, (uint32_t)tid);
	put64(b, a);
	put64(b, e);
	end(b, at, -1, -1, time, -1, 0);
}

/*
 * Snapshot K of a stream with gaps (the bytes lost between snapshots, and
 * one inside snapshot 2): only its stream offsets stay, with its own gap.
 */
static void keep_snapshot(void)
{
	uint8_t d[64];

	for (int i = 0; i < 64; i++)
		d[i] = (uint8_t)i;
	for (int k = 1; k <= 4; k++) {
		struct prec_session *s = new_session();
		struct sbuf b = { .n = 0 };
		const struct prec_stream *st;

		/* snapshot 1: [1000, 1010); 2: [2000, 2030) with [2010, 2015) lost; 3: tid 6 */
		snap_rec(&b, 1, 5, 1000, 1010, 10);
		snap_rec(&b, 2, 5, 2000, 2030, 20);
		snap_rec(&b, 3, 6, 0, 8, 30);
		T_EQ_INT(prec_session_add_sideband(s, b.b, b.n, -1), 3);
		T_EQ_INT(prec_session_add_aux(s, -1, 5, 1000, d, 10), 0);
		T_EQ_INT(prec_session_add_aux(s, -1, 5, 2000, d + 10, 10), 0);
		T_EQ_INT(prec_session_add_aux(s, -1, 5, 2015, d + 20, 15), 0);
		T_EQ_INT(prec_session_add_aux(s, -1, 6, 0, d + 40, 8), 0);
		T_EQ_INT(prec_session_finalize(s), 0);
		T_EQ_INT(prec_session_nr_snapshots(s), 3);
		if (k == 4) {
			T_EQ_INT(prec_session_keep_snapshot(s, 4), -ENOENT);
			prec_session_free(s);
			continue;
		}
		T_EQ_INT(prec_session_keep_snapshot(s, (uint32_t)k), 0);
		for (size_t i = 0; i < prec_session_nr_streams(s); i++) {
			st = prec_session_stream(s, i);
			if (st->tid == 6) {
				T_EQ_U64(st->len, k == 3 ? 8 : 0);
				if (k == 3)
					T_OK(!memcmp(st->data, d + 40, 8));
				continue;
			}
			switch (k) {
			case 1:
				T_EQ_U64(st->len, 10);
				T_EQ_U64(st->nr_gaps, 0);
				T_EQ_U64(prec_stream_offset(st, 0), 1000);
				T_OK(!memcmp(st->data, d, 10));
				break;
			case 2:
				T_EQ_U64(st->len, 25);
				T_EQ_U64(prec_stream_offset(st, 0), 2000);
				T_EQ_U64(st->nr_gaps, 1);
				T_EQ_U64(st->gaps[0].pos, 10);
				T_EQ_U64(st->gaps[0].lost, 5);
				T_EQ_U64(prec_stream_offset(st, 10), 2015);
				T_OK(!memcmp(st->data, d + 10, 25));
				break;
			default:
				T_EQ_U64(st->len, 0);
			}
		}
		prec_session_free(s);
	}
}

/*
 * THROTTLE and UNTHROTTLE (perf_log_throttle(): time, id, stream_id): kept,
 * named after the event whose id they carry, and shown by --sideband.
 */
static void throttle_records(void)
{
	struct prec_evdesc trig = { .name = "sched:sched_switch", .kind = PREC_EVK_PAUSE };
	struct prec_session *s = new_session();
	struct prec_output_opts o;
	struct sbuf b = { .n = 0 };
	uint64_t id = 9;
	char *txt = NULL;
	size_t len = 0, at;
	FILE *f;

	T_EQ_INT(prec_session_add_event(s, &trig, &id, 1), 1);
	for (int k = 0; k < 2; k++) {
		at = begin(&b, k ? PERF_RECORD_UNTHROTTLE : PERF_RECORD_THROTTLE, 0);
		put64(&b, 100 + (uint64_t)k);
		put64(&b, 9);
		put64(&b, 9);
		end(&b, at, 3, 3, 100 + (uint64_t)k, 0, 9);
	}
	T_EQ_INT(prec_session_add_sideband(s, b.b, b.n, 0), 2);
	T_EQ_INT(prec_session_finalize(s), 0);
	T_EQ_INT(prec_session_nr_sb(s), 2);
	T_EQ_INT(prec_session_sb(s, 0)->type, PREC_SB_THROTTLE);
	T_OK(!prec_session_sb(s, 0)->u.throttle.unthrottle);
	T_OK(prec_session_sb(s, 1)->u.throttle.unthrottle);
	T_EQ_INT(prec_session_sb(s, 1)->event, 1);
	prec_output_opts_init(&o);
	f = open_memstream(&txt, &len);
	T_EQ_INT(prec_view_sideband(s, &o, f), 0);
	fclose(f);
	T_CONTAINS(txt, "THROTTLE   sched:sched_switch (samples stop at its rate limit)");
	T_CONTAINS(txt, "UNTHROTTLE sched:sched_switch");
	free(txt);
	prec_session_free(s);
}

/*
 * The one list of modelled record types: a record of a type it names is kept
 * (or found malformed), one of any other type is skipped and not counted.
 */
static void modelled_types(void)
{
	uint32_t type;
	unsigned modelled = 0;

	for (type = 1; type < 128; type++) {
		struct prec_session *s = new_session();
		struct sbuf b = { .n = 0 };
		size_t at = begin(&b, type, 0);
		int kept;

		/* A body long enough for every modelled type and the trailer. */
		for (unsigned k = 0; k < 16; k++)
			put64(&b, k == 0 ? 1 : 0);
		fix_size(&b, at);
		kept = prec_session_add_sideband(s, b.b, b.n, 0);
		if (prec_session_models_record(type)) {
			modelled++;
			T_OK(kept != 0);
		} else {
			T_EQ_INT(kept, 0);
		}
		prec_session_free(s);
	}
	T_EQ_INT(modelled, 13); /* ptrec's own types are above 127 */
	T_OK(prec_session_models_record(PERF_RECORD_MMAP2));
	T_OK(prec_session_models_record(PERF_RECORD_SAMPLE));
	T_OK(!prec_session_models_record(PERF_RECORD_AUXTRACE));
	T_OK(prec_session_models_record(PERF_RECORD_THROTTLE));
}

static const struct t_case cases[] = {
	T(modelled_types),
	T(parse_records), T(stable_order),   T(malformed),	T(events_and_ids),
	T(other_sample_type), T(aux_streams), T(aux_refs), T(tsc_conversion), T(thread_table),
	T(warnings),	  T(address_spaces), T(kernel_text),	 T(exec_time_space),
	T(warnings_at_finalize), T(stream_without_process), T(keep_snapshot),
	T(throttle_records),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}

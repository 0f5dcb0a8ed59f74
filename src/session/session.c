// SPDX-License-Identifier: MIT
/* The session model: sideband parsing, streams, events, the process table. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/array.h"
#include "base/perf_abi.h"
#include "session/session.h"
#include "tracefile/tfile.h"
#include "base/util.h"

#define SB_TRAILER_BITS                                                        \
	(PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |                 \
	 PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)
#define DEFAULT_SAMPLE_TYPE                                                    \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |         \
	 PERF_SAMPLE_CPU)
#define MAX_WARNINGS 256

struct sess_event {
	struct prec_evdesc d;
	char *name;
};

struct id_ent {
	uint64_t id;
	int ev;
};

struct sb_ent {
	struct prec_sb sb;
	uint64_t seq;
};

/* A fact "thread tid belongs to pid" or "thread tid is called comm" at time. */
struct tfact {
	int32_t tid;
	int32_t pid;
	uint64_t time;
	uint64_t seq;
	const char *comm;         /* NULL for pid facts */
};

struct ktext {
	uint64_t addr;
	uint8_t *bytes;
	size_t size;
};

/* A range of stream bytes known to be lost (a damaged chunk of the file). */
struct aux_lost {
	int cpu, tid;
	uint64_t offset, len;
};

struct prec_session {
	struct prec_machine m;
	char *symfs;
	uint64_t sample_type;
	bool finalized;

	struct sess_event *events;
	size_t nr_events;
	struct id_ent *ids;       /* sorted by id */
	size_t nr_ids;

	struct sb_ent *sb;
	size_t nr_sb, cap_sb;
	char **strings;           /* owned strings referenced by sb entries */
	size_t nr_strings, cap_strings;

	struct prec_stream *streams;
	size_t nr_streams;
	struct prec_aux_source aux_src; /* bytes of streams added by reference */
	struct aux_lost *aux_lost;  /* stream ranges known lost, applied at finalize */
	size_t nr_aux_lost;

	struct prec_image_desc *images;
	size_t nr_images;
	struct ktext *ktext;
	size_t nr_ktext;
	struct prec_buf kallsyms;

	struct tfact *pids, *comms, *execs;
	size_t nr_pids, nr_comms, nr_execs;

	char **warnings;
	size_t nr_warnings;

	struct prec_images *imgs;
	void (*imgs_free)(struct prec_images *);

	void *trace_meta;          /* decoder metadata (CoreSight), owned */
	void (*trace_meta_free)(void *);
};

struct prec_session *prec_session_new(void)
{
	struct prec_session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->sample_type = DEFAULT_SAMPLE_TYPE;
	return s;
}

void prec_session_free(struct prec_session *s)
{
	size_t i;

	if (!s)
		return;
	if (s->trace_meta_free)
		s->trace_meta_free(s->trace_meta);
	if (s->imgs_free)
		s->imgs_free(s->imgs);
	if (s->aux_src.fini)
		s->aux_src.fini(s->aux_src.ctx);
	for (i = 0; i < s->nr_events; i++)
		free(s->events[i].name);
	free(s->events);
	free(s->ids);
	free(s->sb);
	for (i = 0; i < s->nr_strings; i++)
		free(s->strings[i]);
	free(s->strings);
	for (i = 0; i < s->nr_streams; i++) {
		free(s->streams[i].data);
		free(s->streams[i].gaps);
		free(s->streams[i].refs);
	}
	free(s->streams);
	free(s->aux_lost);
	for (i = 0; i < s->nr_images; i++) {
		free((void *)s->images[i].path);
		free((void *)s->images[i].build_id);
		free((void *)s->images[i].bytes);
	}
	free(s->images);
	for (i = 0; i < s->nr_ktext; i++)
		free(s->ktext[i].bytes);
	free(s->ktext);
	prec_buf_free(&s->kallsyms);
	free(s->pids);
	free(s->comms);
	free(s->execs);
	for (i = 0; i < s->nr_warnings; i++)
		free(s->warnings[i]);
	free(s->warnings);
	free(s->symfs);
	free(s);
}

void prec_session_set_machine(struct prec_session *s, const struct prec_machine *m)
{
	s->m = *m;
	s->m.vendor[sizeof(s->m.vendor) - 1] = '\0';
}

const struct prec_machine *prec_session_machine(const struct prec_session *s)
{
	return &s->m;
}

int prec_session_set_symfs(struct prec_session *s, const char *root)
{
	char *p = NULL;

	if (root && *root) {
		size_t n = strlen(root);

		p = strdup(root);
		if (!p)
			return -ENOMEM;
		/* "/x/" and "/x" name the same root; paths are joined as root + path. */
		while (n > 1 && p[n - 1] == '/')
			p[--n] = '\0';
		if (!strcmp(p, "/"))
			p[0] = '\0';
	}
	free(s->symfs);
	s->symfs = p;
	return 0;
}

const char *prec_session_symfs(const struct prec_session *s)
{
	return s->symfs ? s->symfs : "";
}

/*
 * Every sample_type is usable: the fields parsed (IDENTIFIER .. PERIOD of a
 * sample, the sample_id trailer) come first in the kernel's layout, and the
 * bits after them only add fields this parser never reads.
 */
static bool sample_type_ok(uint64_t st)
{
	return st != UINT64_MAX;
}

int prec_session_set_sample_type(struct prec_session *s, uint64_t sample_type)
{
	if (!sample_type_ok(sample_type))
		return -EINVAL;
	s->sample_type = sample_type;
	return 0;
}

static int id_find(const struct prec_session *s, uint64_t id)
{
	size_t lo = 0, hi = s->nr_ids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ids[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int)lo;
}

int prec_session_add_event(struct prec_session *s, const struct prec_evdesc *d,
			   const uint64_t *ids, size_t nr_ids)
{
	struct sess_event *ev;
	struct id_ent *ni;
	char buf[32];
	size_t i, j;
	int idx;

	if (!d || (nr_ids && !ids) || !sample_type_ok(d->sample_type))
		return -EINVAL;
	for (i = 0; i < nr_ids; i++) {
		int pos = id_find(s, ids[i]);

		if ((size_t)pos < s->nr_ids && s->ids[pos].id == ids[i])
			return -EEXIST;
		for (j = 0; j < i; j++)
			if (ids[j] == ids[i])
				return -EEXIST;
	}
	ev = realloc(s->events, (s->nr_events + 1) * sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	s->events = ev;
	ni = realloc(s->ids, (s->nr_ids + nr_ids + 1) * sizeof(*ni));
	if (!ni)
		return -ENOMEM;
	s->ids = ni;
	idx = (int)s->nr_events;
	ev = &s->events[idx];
	ev->d = *d;
	if (!d->name) {
		snprintf(buf, sizeof(buf), "event%d", idx);
		ev->name = strdup(buf);
	} else {
		ev->name = strdup(d->name);
	}
	if (!ev->name)
		return -ENOMEM;
	ev->d.name = ev->name;
	s->nr_events++;
	for (i = 0; i < nr_ids; i++) {
		int pos = id_find(s, ids[i]);

		memmove(&s->ids[pos + 1], &s->ids[pos],
			(s->nr_ids - (size_t)pos) * sizeof(*s->ids));
		s->ids[pos].id = ids[i];
		s->ids[pos].ev = idx;
		s->nr_ids++;
	}
	return idx;
}

size_t prec_session_nr_events(const struct prec_session *s)
{
	return s->nr_events;
}

const struct prec_evdesc *prec_session_event(const struct prec_session *s, int idx)
{
	if (idx < 0 || (size_t)idx >= s->nr_events)
		return NULL;
	return &s->events[idx].d;
}

int prec_session_event_by_id(const struct prec_session *s, uint64_t id)
{
	int pos = id_find(s, id);

	if ((size_t)pos < s->nr_ids && s->ids[pos].id == id)
		return s->ids[pos].ev;
	return -1;
}

/* ---- sideband parsing ---- */

static size_t trailer_size(uint64_t st)
{
	return 8 * (size_t)__builtin_popcountll(st & SB_TRAILER_BITS);
}

/* Reads the sample_id trailer in [p, p + trailer_size(st)). */
static void parse_trailer(const uint8_t *p, uint64_t st, struct prec_sb *sb, uint64_t *id)
{
	if (st & PERF_SAMPLE_TID) {
		sb->pid = (int32_t)prec_rd32(p);
		sb->tid = (int32_t)prec_rd32(p + 4);
		p += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		sb->time = prec_rd64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_ID) {
		*id = prec_rd64(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_STREAM_ID)
		p += 8;
	if (st & PERF_SAMPLE_CPU) {
		sb->cpu = (int32_t)prec_rd32(p);
		p += 8;
	}
	if (st & PERF_SAMPLE_IDENTIFIER)
		*id = prec_rd64(p);
}

static uint64_t event_sample_type(const struct prec_session *s, int ev)
{
	if (ev >= 0 && s->events[ev].d.sample_type)
		return s->events[ev].d.sample_type;
	return s->sample_type;
}

static int keep_string(struct prec_session *s, const char *p, size_t n, const char **out)
{
	char *c;

	if (s->nr_strings == s->cap_strings) {
		size_t nc = s->cap_strings ? s->cap_strings * 2 : 64;
		char **ns = realloc(s->strings, nc * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		s->strings = ns;
		s->cap_strings = nc;
	}
	c = strndup(p, n);
	if (!c)
		return -ENOMEM;
	s->strings[s->nr_strings++] = c;
	*out = c;
	return 0;
}

/* A NUL-terminated string in [p, end); returns its length or -1. */
static long bounded_strlen(const uint8_t *p, const uint8_t *end)
{
	const uint8_t *z;

	if (p > end)
		return -1;
	z = memchr(p, 0, (size_t)(end - p));
	return z ? z - p : -1;
}

static int parse_sample(const struct prec_session *s, const uint8_t *p, size_t size,
			struct prec_sb *sb)
{
	const uint8_t *q = p + 8, *end = p + size;
	uint64_t st = s->sample_type, id = 0;
	int ev = -1;

	if ((st & PERF_SAMPLE_IDENTIFIER) && size >= 16) {
		ev = prec_session_event_by_id(s, prec_rd64(q));
		st = event_sample_type(s, ev);
	}
	sb->event = ev;
#define TAKE(bit, code)                                                        \
	if (st & (bit)) {                                                      \
		if (end - q < 8)                                               \
			return -PREC_E_FORMAT;                                 \
		code;                                                          \
		q += 8;                                                        \
	}
	TAKE(PERF_SAMPLE_IDENTIFIER, id = prec_rd64(q));
	TAKE(PERF_SAMPLE_IP, sb->u.sample.ip = prec_rd64(q));
	TAKE(PERF_SAMPLE_TID, sb->pid = (int32_t)prec_rd32(q); sb->tid = (int32_t)prec_rd32(q + 4));
	TAKE(PERF_SAMPLE_TIME, sb->time = prec_rd64(q));
	TAKE(PERF_SAMPLE_ADDR, (void)0);
	TAKE(PERF_SAMPLE_ID, id = prec_rd64(q));
	TAKE(PERF_SAMPLE_STREAM_ID, (void)0);
	TAKE(PERF_SAMPLE_CPU, sb->cpu = (int32_t)prec_rd32(q));
	TAKE(PERF_SAMPLE_PERIOD, sb->u.sample.period = prec_rd64(q));
#undef TAKE
	sb->u.sample.id = id;
	if (ev < 0 && (st & (PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER)))
		sb->event = prec_session_event_by_id(s, id);
	return 0;
}

static int push_sb(struct prec_session *s, const struct prec_sb *sb)
{
	if (s->nr_sb == s->cap_sb) {
		size_t nc = s->cap_sb ? s->cap_sb * 2 : 256;
		struct sb_ent *n = realloc(s->sb, nc * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->sb = n;
		s->cap_sb = nc;
	}
	s->sb[s->nr_sb].sb = *sb;
	s->sb[s->nr_sb].seq = s->nr_sb;
	s->nr_sb++;
	return 0;
}

/* Parses one record; returns 1 if kept, 0 if skipped, or a negative error. */
/* An MMAP or MMAP2 record's body (up to @body_end) into @sb. */
static int parse_mmap(struct prec_session *s, const uint8_t *p, const uint8_t *body_end,
		      uint32_t type, uint16_t misc, struct prec_sb *sb)
{
	size_t fn = type == PERF_RECORD_MMAP ? 40 : 72;
	long n;

	if (body_end - p < (long)(fn + 1))
		return -PREC_E_FORMAT;
	sb->type = PREC_SB_MMAP;
	sb->pid = (int32_t)prec_rd32(p + 8);
	sb->tid = (int32_t)prec_rd32(p + 12);
	sb->u.mmap.start = prec_rd64(p + 16);
	sb->u.mmap.len = prec_rd64(p + 24);
	sb->u.mmap.pgoff = prec_rd64(p + 32);
	if (type == PERF_RECORD_MMAP2) {
		if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			uint8_t bsz = p[40];

			if (bsz > PREC_BUILD_ID_MAX)
				return -PREC_E_FORMAT;
			sb->u.mmap.build_id_size = bsz;
			memcpy(sb->u.mmap.build_id, p + 44, bsz);
		}
		sb->u.mmap.prot = prec_rd32(p + 64);
	} else {
		sb->u.mmap.prot = (misc & PERF_RECORD_MISC_MMAP_DATA) ?
					 PROT_READ : PROT_READ | PROT_EXEC;
	}
	n = bounded_strlen(p + fn, body_end);
	if (n < 0)
		return -PREC_E_FORMAT;
	if (keep_string(s, (const char *)p + fn, (size_t)n, &sb->u.mmap.path))
		return -ENOMEM;
	switch (misc & PERF_RECORD_MISC_CPUMODE_MASK) {
	case PERF_RECORD_MISC_KERNEL:
	case PERF_RECORD_MISC_GUEST_KERNEL:
		sb->u.mmap.kernel = true;
		break;
	default:
		sb->u.mmap.kernel = sb->pid == -1;
	}
	if (sb->u.mmap.len && sb->u.mmap.start + sb->u.mmap.len < sb->u.mmap.start)
		return -PREC_E_FORMAT;
	return 0;
}

bool prec_session_models_record(uint32_t type)
{
	switch (type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
	case PERF_RECORD_ITRACE_START:
	case PERF_RECORD_AUX:
	case PERF_RECORD_LOST:
	case PERF_RECORD_SAMPLE:
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
	case PREC_RECORD_SIGNAL:
	case PREC_RECORD_SNAPSHOT:
		return true;
	default:
		return false;
	}
}

/* A copy of @n bytes at @p that the session owns (freed with its strings). */
static int keep_bytes(struct prec_session *s, const uint8_t *p, size_t n, const uint8_t **out)
{
	const char *c;
	int err = keep_string(s, "", 0, &c);
	char *b;

	if (err)
		return err;
	b = realloc((char *)c, n ? n : 1);
	if (!b)
		return -ENOMEM;
	memcpy(b, p, n);
	s->strings[s->nr_strings - 1] = b;
	*out = (const uint8_t *)b;
	return 0;
}

bool prec_sb_snapshot_stream(const struct prec_sb *sb, uint32_t i, int32_t *cpu, int32_t *tid,
			     uint64_t *start, uint64_t *end)
{
	const uint8_t *p;

	if (sb->type != PREC_SB_SNAPSHOT || i >= sb->u.snap.nstreams)
		return false;
	p = sb->u.snap.streams + (size_t)i * PREC_RECORD_SNAPSHOT_STREAM;
	*cpu = (int32_t)prec_rd32(p);
	*tid = (int32_t)prec_rd32(p + 4);
	*start = prec_rd64(p + 8);
	*end = prec_rd64(p + 16);
	return true;
}

/* ptrec's PREC_RECORD_SNAPSHOT (tracefile/tfile.h); the body ends at @body_end. */
static int parse_snapshot(struct prec_session *s, const uint8_t *p, const uint8_t *body_end,
			  struct prec_sb *sb)
{
	uint32_t n;

	if (body_end - p < PREC_RECORD_SNAPSHOT_SIZE)
		return -PREC_E_FORMAT;
	n = prec_rd32(p + 20);
	if ((uint64_t)(body_end - p - PREC_RECORD_SNAPSHOT_SIZE) <
	    (uint64_t)n * PREC_RECORD_SNAPSHOT_STREAM)
		return -PREC_E_FORMAT;
	sb->type = PREC_SB_SNAPSHOT;
	sb->u.snap.index = prec_rd32(p + 8);
	sb->u.snap.reason = prec_rd32(p + 12);
	sb->u.snap.event = (int32_t)prec_rd32(p + 16);
	sb->u.snap.nstreams = n;
	sb->u.snap.bytes = prec_rd64(p + 24);
	if (sb->u.snap.event < -1 || sb->u.snap.event >= (int32_t)s->nr_events)
		sb->u.snap.event = -1;
	return keep_bytes(s, p + PREC_RECORD_SNAPSHOT_SIZE, (size_t)n * PREC_RECORD_SNAPSHOT_STREAM,
			  &sb->u.snap.streams);
}

/* ptrec's PREC_RECORD_SIGNAL (tracefile/tfile.h), PREC_RECORD_SIGNAL_SIZE bytes checked. */
static void parse_signal(const uint8_t *p, struct prec_sb *sb)
{
	sb->type = PREC_SB_SIGNAL;
	sb->pid = (int32_t)prec_rd32(p + 8);
	sb->tid = (int32_t)prec_rd32(p + 12);
	sb->u.sig.signo = prec_rd32(p + 16);
	sb->u.sig.flags = prec_rd32(p + 20);
	sb->u.sig.ip = prec_rd64(p + 24);
	sb->u.sig.caller = prec_rd64(p + 32);
}

/* SWITCH and SWITCH_CPU_WIDE (whose 16 bytes are checked). */
static void parse_switch(const uint8_t *p, uint32_t type, struct prec_sb *sb)
{
	sb->type = PREC_SB_SWITCH;
	sb->u.sw.out = sb->misc & PERF_RECORD_MISC_SWITCH_OUT;
	sb->u.sw.preempt = sb->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
	sb->u.sw.next_prev_pid = sb->u.sw.next_prev_tid = -1;
	if (type == PERF_RECORD_SWITCH_CPU_WIDE) {
		sb->u.sw.cpu_wide = true;
		sb->u.sw.next_prev_pid = (int32_t)prec_rd32(p + 8);
		sb->u.sw.next_prev_tid = (int32_t)prec_rd32(p + 12);
	}
}

/*
 * THROTTLE and UNTHROTTLE (32 bytes checked): u64 time, u64 id, u64
 * stream_id, as perf_log_throttle() writes them; @st is the trailer's
 * sample_type.
 */
static void parse_throttle(const struct prec_session *s, const uint8_t *p, uint64_t st,
			   struct prec_sb *sb)
{
	int ev;

	sb->type = PREC_SB_THROTTLE;
	sb->u.throttle.id = prec_rd64(p + 16);
	sb->u.throttle.unthrottle = prec_rd32(p) == PERF_RECORD_UNTHROTTLE;
	if (!(st & PERF_SAMPLE_TIME))
		sb->time = prec_rd64(p + 8);
	/* the event is the one the body names (the trailer's is the same) */
	ev = prec_session_event_by_id(s, sb->u.throttle.id);
	if (ev >= 0)
		sb->event = ev;
}

/* PERF_RECORD_COMM; the body ends at @body_end. */
static int parse_comm(struct prec_session *s, const uint8_t *p, const uint8_t *body_end,
		      struct prec_sb *sb)
{
	long n;

	if (body_end - p < 17)
		return -PREC_E_FORMAT;
	sb->type = PREC_SB_COMM;
	sb->pid = (int32_t)prec_rd32(p + 8);
	sb->tid = (int32_t)prec_rd32(p + 12);
	sb->u.comm.exec = sb->misc & PERF_RECORD_MISC_COMM_EXEC;
	n = bounded_strlen(p + 16, body_end);
	if (n < 0)
		return -PREC_E_FORMAT;
	return keep_string(s, (const char *)p + 16, (size_t)n, &sb->u.comm.comm) ? -ENOMEM : 0;
}

static int parse_record(struct prec_session *s, const uint8_t *p, size_t size, int ring_cpu)
{
	uint32_t type = prec_rd32(p);
	uint16_t misc;
	struct prec_sb sb;
	const uint8_t *end = p + size, *body_end;
	uint64_t st, id = 0;
	size_t tsz;
	int ev = -1, err;

	memcpy(&misc, p + 4, 2);
	memset(&sb, 0, sizeof(sb));
	sb.pid = sb.tid = sb.cpu = -1;
	sb.misc = misc;
	sb.ring_cpu = ring_cpu;
	sb.event = -1;

	if (type == PERF_RECORD_SAMPLE) {
		sb.type = PREC_SB_SAMPLE;
		err = parse_sample(s, p, size, &sb);
		if (err)
			return err;
		return push_sb(s, &sb) ? -ENOMEM : 1;
	}

	if (!prec_session_models_record(type))
		return 0;

	/* Find the event (and so the trailer layout) from the trailing identifier. */
	st = s->sample_type;
	if ((st & PERF_SAMPLE_IDENTIFIER) && size >= 16) {
		ev = prec_session_event_by_id(s, prec_rd64(end - 8));
		st = event_sample_type(s, ev);
	}
	tsz = trailer_size(st);
	if (size < 8 + tsz)
		return -PREC_E_FORMAT;
	body_end = end - tsz;
	parse_trailer(body_end, st, &sb, &id);
	if (ev < 0 && (st & (PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER)))
		ev = prec_session_event_by_id(s, id);
	sb.event = ev;
	if (ring_cpu >= 0 && sb.cpu < 0)
		sb.cpu = ring_cpu;

#define NEED(n_)                                                               \
	if (body_end - p < (long)(n_))                                         \
		return -PREC_E_FORMAT;
	switch (type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		err = parse_mmap(s, p, body_end, type, misc, &sb);
		if (err)
			return err;
		break;
	case PERF_RECORD_COMM:
		err = parse_comm(s, p, body_end, &sb);
		if (err)
			return err;
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		NEED(32);
		sb.type = type == PERF_RECORD_FORK ? PREC_SB_FORK : PREC_SB_EXIT;
		sb.pid = (int32_t)prec_rd32(p + 8);
		sb.u.fork.ppid = (int32_t)prec_rd32(p + 12);
		sb.tid = (int32_t)prec_rd32(p + 16);
		sb.u.fork.ptid = (int32_t)prec_rd32(p + 20);
		if (!(st & PERF_SAMPLE_TIME))
			sb.time = prec_rd64(p + 24);
		break;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (type == PERF_RECORD_SWITCH_CPU_WIDE)
			NEED(16);
		parse_switch(p, type, &sb);
		break;
	case PERF_RECORD_ITRACE_START:
		NEED(16);
		sb.type = PREC_SB_ITRACE_START;
		sb.pid = (int32_t)prec_rd32(p + 8);
		sb.tid = (int32_t)prec_rd32(p + 12);
		break;
	case PERF_RECORD_AUX:
		NEED(32);
		sb.type = PREC_SB_AUX;
		sb.u.aux.offset = prec_rd64(p + 8);
		sb.u.aux.size = prec_rd64(p + 16);
		sb.u.aux.flags = prec_rd64(p + 24);
		break;
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		NEED(32);
		parse_throttle(s, p, st, &sb);
		break;
	case PERF_RECORD_LOST:
		NEED(24);
		sb.type = PREC_SB_LOST;
		sb.u.lost.id = prec_rd64(p + 8);
		sb.u.lost.lost = prec_rd64(p + 16);
		break;
	case PREC_RECORD_SIGNAL:
		NEED(PREC_RECORD_SIGNAL_SIZE);
		parse_signal(p, &sb);
		break;
	case PREC_RECORD_SNAPSHOT:
		err = parse_snapshot(s, p, body_end, &sb);
		if (err)
			return err;
		break;
	}
#undef NEED
	return push_sb(s, &sb) ? -ENOMEM : 1;
}

int prec_session_add_sideband(struct prec_session *s, const void *buf, size_t len,
			      int ring_cpu)
{
	const uint8_t *p = buf;
	size_t off = 0;
	int kept = 0, err;

	if (s->finalized)
		return -EBUSY;
	if (!buf && len)
		return -EINVAL;
	while (off < len) {
		uint16_t size;

		if (len - off < 8)
			return -PREC_E_TRUNCATED;
		memcpy(&size, p + off + 6, 2);
		if (size < 8)
			return -PREC_E_FORMAT;
		if (size > len - off)
			return -PREC_E_TRUNCATED;
		err = parse_record(s, p + off, size, ring_cpu);
		if (err < 0)
			return err;
		kept += err;
		off += size;
	}
	return kept;
}

/* ---- streams ---- */

static struct prec_stream *stream_get(struct prec_session *s, int cpu, int tid)
{
	struct prec_stream *n;
	size_t i;

	for (i = 0; i < s->nr_streams; i++)
		if (s->streams[i].cpu == cpu && s->streams[i].tid == tid)
			return &s->streams[i];
	if (PREC_ARRAY_RESERVE(s->streams, s->nr_streams, 1))
		return NULL;
	n = &s->streams[s->nr_streams++];
	memset(n, 0, sizeof(*n));
	n->cpu = cpu;
	n->tid = tid;
	return n;
}

static int stream_add_gap(struct prec_stream *st, uint64_t lost)
{
	struct prec_gap *g;

	if (st->nr_gaps && st->gaps[st->nr_gaps - 1].pos == st->len) {
		st->gaps[st->nr_gaps - 1].lost += lost;
		return 0;
	}
	if (PREC_ARRAY_RESERVE(st->gaps, st->nr_gaps, 1))
		return -ENOMEM;
	g = st->gaps;
	g[st->nr_gaps].pos = st->len;
	g[st->nr_gaps].lost = lost;
	st->nr_gaps++;
	return 0;
}

#define STREAM_MAX ((size_t)4 << 30)

/*
 * Places @*len bytes at stream offset @offset in stream (cpu, tid): a gap
 * before them when they start past its end, *@skip bytes it already has
 * dropped. Returns the stream (with *@len 0: nothing to add), or NULL with
 * *@err set.
 */
static struct prec_stream *aux_place(struct prec_session *s, int cpu, int tid, uint64_t offset,
				     uint64_t *skip, size_t *len, int *err)
{
	struct prec_stream *st;
	uint64_t end;

	*skip = 0;
	*err = -EBUSY;
	if (s->finalized)
		return NULL;
	*err = -EINVAL;
	if (cpu < 0 && tid < 0)
		return NULL;
	*err = -ENOMEM;
	st = stream_get(s, cpu, tid);
	if (!st)
		return NULL;
	if (!st->len && !st->nr_gaps)
		st->base = offset;
	end = st->base + st->lost + st->len;
	*err = -EINVAL;
	if (offset < st->base)
		return NULL;
	if (offset > end) {
		*err = -ENOMEM;
		if (stream_add_gap(st, offset - end))
			return NULL;
		st->lost += offset - end;
	} else if (offset < end) {
		uint64_t dup = end - offset;

		*skip = dup < *len ? dup : *len;
		*len -= (size_t)*skip;
	}
	*err = -EFBIG;
	if (st->len + *len > STREAM_MAX)
		return NULL;
	*err = 0;
	return st;
}

int prec_session_add_aux(struct prec_session *s, int cpu, int tid, uint64_t offset,
			 const void *data, size_t len)
{
	struct prec_stream *st;
	uint64_t skip;
	int err;

	if (!data && len)
		return -EINVAL;
	st = aux_place(s, cpu, tid, offset, &skip, &len, &err);
	if (!st)
		return err;
	if (!len)
		return 0;
	if (st->nr_refs)
		return -EINVAL;
	if (st->len + len > st->cap) {
		size_t nc = st->cap ? st->cap : 65536;
		uint8_t *nd;

		while (nc < st->len + len)
			nc *= 2;
		nd = realloc(st->data, nc);
		if (!nd)
			return -ENOMEM;
		st->data = nd;
		st->cap = nc;
	}
	memcpy(st->data + st->len, (const uint8_t *)data + skip, len);
	st->len += len;
	return 0;
}

int prec_session_add_aux_ref(struct prec_session *s, int cpu, int tid, uint64_t offset,
			     uint64_t src, uint64_t skip, size_t len)
{
	struct prec_stream *st;
	uint64_t dup;
	int err;

	st = aux_place(s, cpu, tid, offset, &dup, &len, &err);
	if (!st)
		return err;
	if (!len)
		return 0;
	if (st->data)
		return -EINVAL;
	if (PREC_ARRAY_RESERVE(st->refs, st->nr_refs, 1))
		return -ENOMEM;
	st->refs[st->nr_refs++] = (struct prec_stream_ref){ st->len, len, src, skip + dup };
	st->len += len;
	return 0;
}

void prec_session_set_aux_source(struct prec_session *s, const struct prec_aux_source *src)
{
	if (s->aux_src.fini)
		s->aux_src.fini(s->aux_src.ctx);
	s->aux_src = *src;
}

int prec_session_load_aux(struct prec_session *s)
{
	size_t i;

	for (i = 0; i < s->nr_streams; i++) {
		struct prec_stream *st = &s->streams[i];
		struct prec_stream_reader r;
		const uint8_t *p;
		int err;

		if (!st->nr_refs)
			continue;
		prec_stream_reader_init(&r, s, st);
		err = prec_stream_read(&r, 0, st->len, &p);
		if (!err) {
			/* the reader's window is the whole stream: it becomes the data */
			st->data = r.buf;
			st->cap = r.cap;
			r.buf = NULL;
			free(st->refs);
			st->refs = NULL;
			st->nr_refs = 0;
		}
		prec_stream_reader_fini(&r);
		if (err)
			return err;
	}
	return 0;
}

/* ---- reading streams in windows ---- */

void prec_stream_reader_init(struct prec_stream_reader *r, const struct prec_session *s,
			     const struct prec_stream *st)
{
	memset(r, 0, sizeof(*r));
	r->s = s;
	r->st = st;
}

void prec_stream_reader_trim(struct prec_stream_reader *r)
{
	if (r->scratch && r->s->aux_src.release)
		r->s->aux_src.release(r->scratch);
	r->scratch = NULL;
	r->c_p = NULL;
}

void prec_stream_reader_fini(struct prec_stream_reader *r)
{
	if (!r->s)
		return;
	prec_stream_reader_trim(r);
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* The index of the reference holding position @pos (refs are contiguous). */
static size_t ref_at(const struct prec_stream *st, uint64_t pos)
{
	size_t lo = 0, hi = st->nr_refs;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->refs[mid].pos <= pos)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Copies positions [@lo, @hi) out of the source to @dst. */
static int fill(struct prec_stream_reader *r, uint8_t *dst, uint64_t lo, uint64_t hi)
{
	const struct prec_stream *st = r->st;
	size_t i = ref_at(st, lo);

	while (lo < hi && i < st->nr_refs) {
		const struct prec_stream_ref *f = &st->refs[i++];
		uint64_t a = lo - f->pos, n = PREC_MIN(f->len - a, hi - lo);

		if (!r->c_p || r->c_src != f->src) {
			const void *p;
			size_t len;
			int err;

			if (!r->s->aux_src.fetch)
				return -EINVAL;
			r->c_p = NULL;
			err = r->s->aux_src.fetch(r->s->aux_src.ctx, f->src, &r->scratch, &p, &len);
			if (err)
				return err;
			r->c_p = p;
			r->c_n = len;
			r->c_src = f->src;
		}
		if (f->skip + a + n > r->c_n)
			return -EIO; /* the source piece is shorter than it was */
		memcpy(dst, r->c_p + f->skip + a, (size_t)n);
		dst += n;
		lo += n;
	}
	return lo < hi ? -EINVAL : 0;
}

int prec_stream_read(struct prec_stream_reader *r, uint64_t lo, uint64_t hi, const uint8_t **p)
{
	const struct prec_stream *st = r->st;
	uint64_t keep_lo = lo, keep_hi = lo;
	int err;

	if (lo > hi || hi > st->len)
		return -EINVAL;
	if (st->data || !st->nr_refs) {
		*p = st->data ? st->data + lo : (const uint8_t *)"";
		return 0;
	}
	if (hi - lo > r->cap) {
		uint8_t *n = realloc(r->buf, (size_t)(hi - lo));

		if (!n)
			return -ENOMEM;
		r->buf = n;
		r->cap = (size_t)(hi - lo);
		r->lo = r->hi = 0;
	}
	/* What the window holds already moves to its new place. */
	if (r->lo <= lo && lo < r->hi) {
		keep_hi = PREC_MIN(r->hi, hi);
		memmove(r->buf, r->buf + (lo - r->lo), (size_t)(keep_hi - keep_lo));
	}
	err = fill(r, r->buf + (keep_hi - lo), keep_hi, hi);
	if (err) {
		r->lo = r->hi = 0;
		return err;
	}
	r->lo = lo;
	r->hi = hi;
	*p = r->buf;
	return 0;
}

int prec_session_add_aux_gap(struct prec_session *s, int cpu, int tid, uint64_t lost)
{
	struct prec_stream *st;

	if (s->finalized)
		return -EBUSY;
	if (cpu < 0 && tid < 0)
		return -EINVAL;
	st = stream_get(s, cpu, tid);
	if (!st)
		return -ENOMEM;
	if (stream_add_gap(st, lost))
		return -ENOMEM;
	st->lost += lost;
	return 0;
}

int prec_session_add_aux_lost(struct prec_session *s, int cpu, int tid, uint64_t offset,
			      uint64_t len)
{
	if (s->finalized)
		return -EBUSY;
	if (cpu < 0 && tid < 0)
		return -EINVAL;
	if (!len)
		return 0;
	if (PREC_ARRAY_RESERVE(s->aux_lost, s->nr_aux_lost, 1))
		return -ENOMEM;
	s->aux_lost[s->nr_aux_lost++] = (struct aux_lost){ cpu, tid, offset, len };
	return 0;
}

/*
 * A lost range the stream's own holes do not show: before its first byte
 * (a gap at position 0, the base moves back) or after its last (a gap at
 * the end). A range inside the stream is a hole already counted when the
 * pieces around it were added.
 */
static int apply_aux_lost(struct prec_session *s, const struct aux_lost *l)
{
	struct prec_stream *st = stream_get(s, l->cpu, l->tid);
	uint64_t end;

	if (!st)
		return -ENOMEM;
	if (!st->len && !st->nr_gaps)
		st->base = l->offset;
	end = st->base + st->lost + st->len;
	if (l->offset + l->len > end) {
		uint64_t more = l->offset + l->len - end;

		if (stream_add_gap(st, more))
			return -ENOMEM;
		st->lost += more;
	}
	if (l->offset < st->base) {
		uint64_t more = st->base - l->offset;

		if (!st->nr_gaps || st->gaps[0].pos) {
			if (PREC_ARRAY_RESERVE(st->gaps, st->nr_gaps, 1))
				return -ENOMEM;
			memmove(st->gaps + 1, st->gaps, st->nr_gaps * sizeof(*st->gaps));
			st->gaps[0] = (struct prec_gap){ 0, 0 };
			st->nr_gaps++;
		}
		st->gaps[0].lost += more;
		st->lost += more;
		st->base = l->offset;
	}
	return 0;
}

uint64_t prec_stream_offset(const struct prec_stream *st, uint64_t pos)
{
	uint64_t off = st->base + pos;
	size_t i;

	for (i = 0; i < st->nr_gaps && st->gaps[i].pos <= pos; i++)
		off += st->gaps[i].lost;
	return off;
}

/* The first data position of @st whose stream offset is at least @off. */
static uint64_t stream_pos_of(const struct prec_stream *st, uint64_t off)
{
	uint64_t lost = 0, prev = 0, p;
	size_t i;

	for (i = 0; i < st->nr_gaps; i++) {
		/* positions [prev, gaps[i].pos) have offsets base + pos + lost */
		if (off < st->base + st->gaps[i].pos + lost) {
			p = off > st->base + lost ? off - st->base - lost : 0;
			return PREC_MAX(p, prev);
		}
		lost += st->gaps[i].lost;
		prev = st->gaps[i].pos;
	}
	p = off > st->base + lost ? off - st->base - lost : 0;
	return PREC_MIN(PREC_MAX(p, prev), (uint64_t)st->len);
}

/* Keeps data positions [p0, p1) of @st (p0 <= p1 <= len). */
static int stream_cut(struct prec_stream *st, uint64_t p0, uint64_t p1)
{
	uint64_t base = prec_stream_offset(st, p0), lost = 0;
	size_t i, n = 0;

	if (st->data) {
		memmove(st->data, st->data + p0, (size_t)(p1 - p0));
	} else {
		for (i = 0; i < st->nr_refs; i++) {
			struct prec_stream_ref r = st->refs[i];
			uint64_t a = PREC_MAX(r.pos, p0), b = PREC_MIN(r.pos + r.len, p1);

			if (a >= b)
				continue;
			st->refs[n++] = (struct prec_stream_ref){ a - p0, b - a, r.src,
								   r.skip + (a - r.pos) };
		}
		st->nr_refs = n;
	}
	n = 0;
	for (i = 0; i < st->nr_gaps; i++) {
		if (st->gaps[i].pos <= p0 || st->gaps[i].pos >= p1)
			continue;
		lost += st->gaps[i].lost;
		st->gaps[n++] = (struct prec_gap){ st->gaps[i].pos - p0, st->gaps[i].lost };
	}
	st->nr_gaps = n;
	st->base = base;
	st->lost = lost;
	st->len = (size_t)(p1 - p0);
	return 0;
}

int prec_session_keep_snapshot(struct prec_session *s, uint32_t index)
{
	const struct prec_sb *snap = NULL;
	size_t i;

	for (i = 0; i < s->nr_sb && !snap; i++)
		if (s->sb[i].sb.type == PREC_SB_SNAPSHOT && s->sb[i].sb.u.snap.index == index)
			snap = &s->sb[i].sb;
	if (!snap)
		return -ENOENT;
	for (i = 0; i < s->nr_streams; i++) {
		struct prec_stream *st = &s->streams[i];
		uint64_t a = 0, b = 0, lo, hi;
		int32_t cpu, tid;
		uint32_t k;

		for (k = 0; prec_sb_snapshot_stream(snap, k, &cpu, &tid, &lo, &hi); k++)
			if (cpu == st->cpu && tid == st->tid) {
				a = lo;
				b = hi;
				break;
			}
		/* a stream the snapshot did not copy keeps nothing */
		lo = a < b ? stream_pos_of(st, a) : 0;
		hi = a < b ? stream_pos_of(st, b) : 0;
		stream_cut(st, lo, PREC_MAX(lo, hi));
	}
	return 0;
}

uint32_t prec_session_nr_snapshots(const struct prec_session *s)
{
	uint32_t n = 0;
	size_t i;

	for (i = 0; i < s->nr_sb; i++)
		if (s->sb[i].sb.type == PREC_SB_SNAPSHOT)
			n++;
	return n;
}

/* ---- images ---- */

/* Adds a copy of @d; with @take, @d->bytes (from malloc) becomes the session's, even on failure. */
static int add_image(struct prec_session *s, const struct prec_image_desc *d, bool take)
{
	struct prec_image_desc *n, c;

	if (s->finalized || !d || !d->path || (!d->bytes && d->size) ||
	    d->build_id_size > PREC_BUILD_ID_MAX || (d->build_id_size && !d->build_id)) {
		if (take && d)
			free((void *)d->bytes);
		return s->finalized ? -EBUSY : -EINVAL;
	}
	memset(&c, 0, sizeof(c));
	c.path = strdup(d->path);
	c.build_id_size = d->build_id_size;
	if (d->build_id_size) {
		c.build_id = malloc(d->build_id_size);
		if (c.build_id)
			memcpy((void *)c.build_id, d->build_id, d->build_id_size);
	}
	c.file_offset = d->file_offset;
	c.size = d->size;
	if (take) {
		c.bytes = d->bytes;
	} else {
		c.bytes = malloc(d->size ? d->size : 1);
		if (c.bytes)
			memcpy((void *)c.bytes, d->bytes, d->size);
	}
	n = realloc(s->images, (s->nr_images + 1) * sizeof(*n));
	if (!c.path || !c.bytes || (d->build_id_size && !c.build_id) || !n) {
		if (n)
			s->images = n;
		free((void *)c.path);
		free((void *)c.build_id);
		free((void *)c.bytes);
		return -ENOMEM;
	}
	s->images = n;
	s->images[s->nr_images++] = c;
	return 0;
}

int prec_session_add_image(struct prec_session *s, const struct prec_image_desc *d)
{
	return add_image(s, d, false);
}

int prec_session_take_image(struct prec_session *s, const struct prec_image_desc *d)
{
	return add_image(s, d, true);
}

int prec_session_add_kernel_text(struct prec_session *s, uint64_t addr,
				 const void *bytes, size_t size)
{
	struct ktext *n;
	uint8_t *b;

	if (s->finalized)
		return -EBUSY;
	if (!bytes || !size || addr + size < addr)
		return -EINVAL;
	b = malloc(size);
	if (!b)
		return -ENOMEM;
	n = realloc(s->ktext, (s->nr_ktext + 1) * sizeof(*n));
	if (!n) {
		free(b);
		return -ENOMEM;
	}
	memcpy(b, bytes, size);
	s->ktext = n;
	n[s->nr_ktext].addr = addr;
	n[s->nr_ktext].bytes = b;
	n[s->nr_ktext].size = size;
	s->nr_ktext++;
	return 0;
}

int prec_session_add_kallsyms(struct prec_session *s, const char *text, size_t len)
{
	if (s->finalized)
		return -EBUSY;
	if (!text && len)
		return -EINVAL;
	return prec_buf_append(&s->kallsyms, text, len);
}

size_t prec_session_nr_kernel_text(const struct prec_session *s)
{
	return s->nr_ktext;
}

int prec_session_kernel_text(const struct prec_session *s, size_t i, uint64_t *addr,
			     const void **bytes, size_t *size)
{
	if (i >= s->nr_ktext)
		return -EINVAL;
	*addr = s->ktext[i].addr;
	*bytes = s->ktext[i].bytes;
	*size = s->ktext[i].size;
	return 0;
}

const char *prec_session_kallsyms(const struct prec_session *s, size_t *len)
{
	*len = s->kallsyms.len;
	return s->kallsyms.len ? s->kallsyms.data : NULL;
}

size_t prec_session_nr_images(const struct prec_session *s)
{
	return s->nr_images;
}

const struct prec_image_desc *prec_session_image(const struct prec_session *s, size_t i)
{
	return i < s->nr_images ? &s->images[i] : NULL;
}

/* ---- finalize and queries ---- */

static int sb_cmp(const void *a, const void *b)
{
	const struct sb_ent *x = a, *y = b;

	if (x->sb.time != y->sb.time)
		return x->sb.time < y->sb.time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int tfact_cmp(const void *a, const void *b)
{
	const struct tfact *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int add_fact(struct tfact **arr, size_t *n, size_t *cap, int32_t tid, int32_t pid,
		    uint64_t time, uint64_t seq, const char *comm)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct tfact *na = realloc(*arr, nc * sizeof(*na));

		if (!na)
			return -ENOMEM;
		*arr = na;
		*cap = nc;
	}
	(*arr)[*n] = (struct tfact){ .tid = tid, .pid = pid, .time = time, .seq = seq,
				     .comm = comm };
	(*n)++;
	return 0;
}

static const struct tfact *fact_at(const struct tfact *a, size_t n, int tid, uint64_t t);

/*
 * A new thread or a forked child has its parent's name until a COMM of its
 * own (perf's thread model: FORK copies the comm, COMM with the exec flag
 * replaces it). For each FORK whose child has no name at that time yet, a
 * comm fact at the fork, taken from the parent; a pass per generation, so a
 * child's child named only through its parent gets the name too.
 */
static int inherit_comms(struct prec_session *s, size_t cap)
{
	int pass;

	for (pass = 0; pass < 8; pass++) {
		size_t n0 = s->nr_comms, i;

		for (i = 0; i < s->nr_sb; i++) {
			const struct prec_sb *sb = &s->sb[i].sb;
			const struct tfact *own, *parent;
			int err;

			if (sb->type != PREC_SB_FORK || sb->tid < 0 || sb->u.fork.ptid < 0)
				continue;
			own = fact_at(s->comms, n0, sb->tid, sb->time);
			if (own && own->time <= sb->time)
				continue;
			parent = fact_at(s->comms, n0, sb->u.fork.ptid, sb->time);
			if (!parent)
				continue;
			err = add_fact(&s->comms, &s->nr_comms, &cap, sb->tid, sb->pid, sb->time, i,
				       parent->comm);
			if (err)
				return err;
		}
		if (s->nr_comms == n0)
			break;
		qsort(s->comms, s->nr_comms, sizeof(*s->comms), tfact_cmp);
	}
	return 0;
}

static int build_thread_table(struct prec_session *s)
{
	size_t cap_p = 0, cap_c = 0, cap_e = 0, i;

	for (i = 0; i < s->nr_sb; i++) {
		const struct prec_sb *sb = &s->sb[i].sb;
		int err = 0;

		if (sb->tid < 0 || sb->pid < 0)
			continue;
		switch (sb->type) {
		case PREC_SB_COMM:
			err = add_fact(&s->comms, &s->nr_comms, &cap_c, sb->tid, sb->pid,
				       sb->time, i, sb->u.comm.comm);
			if (!err && sb->u.comm.exec)
				err = add_fact(&s->execs, &s->nr_execs, &cap_e, sb->tid, sb->pid,
					       sb->time, i, NULL);
			/* fallthrough */
		case PREC_SB_FORK:
		case PREC_SB_MMAP:
		case PREC_SB_ITRACE_START:
			if (!err && !(sb->type == PREC_SB_MMAP && sb->u.mmap.kernel))
				err = add_fact(&s->pids, &s->nr_pids, &cap_p, sb->tid,
					       sb->pid, sb->time, i, NULL);
			break;
		default:
			break;
		}
		if (err)
			return err;
	}
	if (s->nr_pids > 1)
		qsort(s->pids, s->nr_pids, sizeof(*s->pids), tfact_cmp);
	if (s->nr_comms > 1)
		qsort(s->comms, s->nr_comms, sizeof(*s->comms), tfact_cmp);
	if (s->nr_execs > 1)
		qsort(s->execs, s->nr_execs, sizeof(*s->execs), tfact_cmp);
	return inherit_comms(s, cap_c);
}

/* A stream with the time of its first AUX or ITRACE_START record. */
struct stream_key {
	uint64_t first;
	struct prec_stream st;
};

static int stream_key_cmp(const void *a, const void *b)
{
	const struct stream_key *x = a, *y = b;

	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	if (x->st.tid != y->st.tid)
		return x->st.tid < y->st.tid ? -1 : 1;
	return x->st.cpu < y->st.cpu ? -1 : x->st.cpu > y->st.cpu;
}

/*
 * Puts the streams in the order every view lists them: by the time of their
 * first trace (the first AUX or ITRACE_START record of their thread, or of
 * their CPU for per-CPU streams; never: last), then by thread and CPU.
 */
static int sort_streams(struct prec_session *s)
{
	struct stream_key *k;
	size_t i, j, left;

	if (s->nr_streams < 2)
		return 0;
	k = calloc(s->nr_streams, sizeof(*k));
	if (!k)
		return -ENOMEM;
	for (i = 0; i < s->nr_streams; i++) {
		k[i].first = UINT64_MAX;
		k[i].st = s->streams[i];
	}
	/* By (tid, cpu): a record finds its thread's stream by binary search. */
	qsort(k, s->nr_streams, sizeof(*k), stream_key_cmp);
	left = s->nr_streams;
	for (i = 0; i < s->nr_sb && left; i++) {
		const struct prec_sb *sb = &s->sb[i].sb;
		size_t lo = 0, hi = s->nr_streams;

		if (sb->type != PREC_SB_AUX && sb->type != PREC_SB_ITRACE_START)
			continue;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (k[mid].st.tid < sb->tid)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (j = lo; j < s->nr_streams && k[j].st.tid == sb->tid; j++)
			if (k[j].first == UINT64_MAX && sb->tid >= 0) {
				k[j].first = sb->time;
				left--;
			}
		/* Per-CPU streams (tid -1) come first in this order. */
		for (j = 0; j < s->nr_streams && k[j].st.tid < 0; j++)
			if (k[j].first == UINT64_MAX && k[j].st.cpu == sb->cpu) {
				k[j].first = sb->time;
				left--;
			}
	}
	qsort(k, s->nr_streams, sizeof(*k), stream_key_cmp);
	for (i = 0; i < s->nr_streams; i++)
		s->streams[i] = k[i].st;
	free(k);
	return 0;
}

int prec_session_build_model(struct prec_session *s)
{
	int err;

	if (s->finalized)
		return -EBUSY;
	if (s->nr_sb > 1)
		qsort(s->sb, s->nr_sb, sizeof(*s->sb), sb_cmp);
	for (size_t i = 0; i < s->nr_aux_lost; i++) {
		err = apply_aux_lost(s, &s->aux_lost[i]);
		if (err)
			return err;
	}
	err = sort_streams(s);
	if (err)
		return err;
	err = build_thread_table(s);
	if (err)
		return err;
	s->finalized = true;
	return 0;
}

void prec_session_set_images(struct prec_session *s, struct prec_images *im,
			     void (*free_fn)(struct prec_images *))
{
	if (s->imgs_free)
		s->imgs_free(s->imgs);
	s->imgs = im;
	s->imgs_free = free_fn;
}

size_t prec_session_nr_sb(const struct prec_session *s)
{
	return s->nr_sb;
}

const struct prec_sb *prec_session_sb(const struct prec_session *s, size_t i)
{
	return i < s->nr_sb ? &s->sb[i].sb : NULL;
}

size_t prec_session_sb_lower_bound(const struct prec_session *s, uint64_t t)
{
	size_t lo = 0, hi = s->nr_sb;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->sb[mid].sb.time < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Each ring's records come in time order, so when the file is a prefix of a
 * recording still being written, the timeline is whole before the least,
 * over the rings, of the last time each has given.
 */
uint64_t prec_session_sb_settled(const struct prec_session *s)
{
	int ring[64];
	uint64_t last[64], t = UINT64_MAX;
	size_t i, j, n = 0;

	for (i = 0; i < s->nr_sb; i++) {
		const struct prec_sb *sb = &s->sb[i].sb;

		for (j = 0; j < n && ring[j] != sb->ring_cpu; j++)
			;
		if (j == n) {
			if (n == 64)
				return 0;
			ring[n++] = sb->ring_cpu;
		}
		last[j] = sb->time; /* the timeline is sorted: the last is the greatest */
	}
	for (j = 0; j < n; j++)
		t = PREC_MIN(t, last[j]);
	return t;
}

size_t prec_session_nr_streams(const struct prec_session *s)
{
	return s->nr_streams;
}

const struct prec_stream *prec_session_stream(const struct prec_session *s, size_t i)
{
	return i < s->nr_streams ? &s->streams[i] : NULL;
}

struct prec_images *prec_session_images(const struct prec_session *s)
{
	return s->imgs;
}

/* The fact for @tid in effect at @t: the last one at or before t, else the first. */
static const struct tfact *fact_at(const struct tfact *a, size_t n, int tid, uint64_t t)
{
	size_t lo = 0, hi = n, first;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n || a[lo].tid != tid)
		return NULL;
	first = lo;
	hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid].tid < tid || (a[mid].tid == tid && a[mid].time <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > first ? &a[lo - 1] : &a[first];
}

/* fact_at() and the times [*@from, *@until) over which it gives the same fact. */
static const struct tfact *fact_span(const struct tfact *a, size_t n, int tid, uint64_t t,
				     uint64_t *from, uint64_t *until)
{
	const struct tfact *f = fact_at(a, n, tid, t);

	*from = 0;
	*until = UINT64_MAX;
	if (!f)
		return NULL;	/* also when a is NULL: no arithmetic on it */
	if (f->time > t) {
		*until = f->time;
		return f;
	}
	*from = f->time;
	if ((size_t)(f - a) + 1 < n && f[1].tid == tid)
		*until = f[1].time;
	return f;
}

uint64_t prec_session_next_exec(const struct prec_session *s, int tid, uint64_t t)
{
	uint64_t from, until;

	fact_span(s->execs, s->nr_execs, tid, t, &from, &until);
	return until;
}

const char *prec_session_comm_span(const struct prec_session *s, int tid, uint64_t t,
				   uint64_t *from, uint64_t *until)
{
	const struct tfact *f = fact_span(s->comms, s->nr_comms, tid, t, from, until);

	return f ? f->comm : "";
}

int prec_session_pid_span(const struct prec_session *s, int tid, uint64_t t, uint64_t *from,
			  uint64_t *until)
{
	const struct tfact *f = fact_span(s->pids, s->nr_pids, tid, t, from, until);

	return f ? f->pid : -1;
}

int prec_session_pid_of(const struct prec_session *s, int tid, uint64_t t)
{
	const struct tfact *f = fact_at(s->pids, s->nr_pids, tid, t);

	return f ? f->pid : -1;
}

const char *prec_session_comm(const struct prec_session *s, int tid, uint64_t t)
{
	const struct tfact *f = fact_at(s->comms, s->nr_comms, tid, t);

	return f ? f->comm : "";
}

uint64_t prec_session_tsc_to_time(const struct prec_session *s, uint64_t tsc)
{
	const struct prec_machine *m = &s->m;
	uint64_t quot, rem;

	if (!m->cap_user_time_zero || !m->time_mult || m->time_shift >= 64)
		return tsc;
	quot = tsc >> m->time_shift;
	rem = tsc & ((1ull << m->time_shift) - 1);
	return m->time_zero + quot * m->time_mult + ((rem * m->time_mult) >> m->time_shift);
}

uint64_t prec_session_time_to_tsc(const struct prec_session *s, uint64_t time)
{
	const struct prec_machine *m = &s->m;
	uint64_t t, quot, rem;

	if (!m->cap_user_time_zero || !m->time_mult || m->time_shift >= 64)
		return time;
	t = time - m->time_zero;
	quot = t / m->time_mult;
	rem = t % m->time_mult;
	return (quot << m->time_shift) + (rem << m->time_shift) / m->time_mult;
}

size_t prec_session_nr_warnings(const struct prec_session *s)
{
	return s->nr_warnings;
}

const char *prec_session_warning(const struct prec_session *s, size_t i)
{
	return i < s->nr_warnings ? s->warnings[i] : NULL;
}

void prec_session_warn(struct prec_session *s, const char *fmt, ...)
{
	char buf[512], **n;
	va_list ap;
	size_t i;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (i = 0; i < s->nr_warnings; i++)
		if (!strcmp(s->warnings[i], buf))
			return;
	if (s->nr_warnings >= MAX_WARNINGS)
		return;
	if (PREC_ARRAY_RESERVE(s->warnings, s->nr_warnings, 1))
		return;
	n = s->warnings;
	n[s->nr_warnings] = strdup(buf);
	if (n[s->nr_warnings])
		s->nr_warnings++;
}

void prec_session_set_trace_meta(struct prec_session *s, void *meta, void (*free_fn)(void *))
{
	if (s->trace_meta_free)
		s->trace_meta_free(s->trace_meta);
	s->trace_meta = meta;
	s->trace_meta_free = free_fn;
}

void *prec_session_trace_meta(const struct prec_session *s)
{
	return s->trace_meta;
}

// SPDX-License-Identifier: MIT
/*
 * Loading a trace file's IMAGE chunks: memory follows the bytes the file
 * holds, never the size a chunk declares; repeated pieces cost nothing; a
 * chunk without a path is skipped. AUX chunks left in the file are read by
 * many threads at once through the session's shared chunk cache. Files are
 * written with the project's own writer (prec_tfile_write_chunk for the
 * hostile pieces).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"
#include "harness.h"
#include "session/load.h"
#include "session/session.h"
#include "tracefile/tfile.h"

static char path[256];

static void machine(struct prec_tfile_machine *m)
{
	memset(m, 0, sizeof(*m));
	strcpy(m->arch, "x86_64");
	strcpy(m->vendor, "GenuineIntel");
	m->family = 6, m->model = 94, m->stepping = 3;
	m->nr_cpus = 1;
	m->page_size = 4096;
	m->time_mult = 1;
}

/* A new file at path with its MACHINE and EVENTS chunks (event @ev). */
static int writer_open(const struct prec_tfile_wopts *o, struct prec_tfile_event *ev,
		       struct prec_tfile_writer **w)
{
	struct prec_tfile_machine m;
	int err;

	machine(&m);
	ev->attr.size = PREC_ATTR_SIZE;
	err = prec_tfile_writer_new(path, o, w);
	if (err)
		return err;
	err = prec_tfile_write_machine(*w, &m);
	return err ? err : prec_tfile_write_events(*w, ev, 1);
}

/* A file with MACHINE, EVENTS (a tracking event) and the given IMAGE pieces. */
struct piece {
	const char *path;     /* "" for an empty path */
	uint64_t size;        /* the declared segment size */
	uint64_t arg;         /* offset of this piece in the segment */
	size_t n;             /* bytes in the piece */
	uint8_t fill;
};

static int write_file(const struct piece *pc, size_t npc)
{
	struct prec_tfile_wopts o = { .level = 3, .chunk_size = 1 << 20 };
	struct prec_tfile_event ev = { .name = "dummy:u", .pmu = "software",
				       .flags = PREC_TFILE_EV_TRACKING };
	struct prec_tfile_writer *w = NULL;
	size_t i;
	int err;

	ev.attr.type = PERF_TYPE_SOFTWARE;
	ev.attr.config = PERF_COUNT_SW_DUMMY;
	err = writer_open(&o, &ev, &w);
	for (i = 0; i < npc && !err; i++) {
		struct prec_tfile_image img = { .path = pc[i].path, .size = pc[i].size };
		struct prec_buf b = { 0 };
		uint8_t *bytes = malloc(pc[i].n ? pc[i].n : 1);

		if (!bytes)
			return -ENOMEM;
		memset(bytes, pc[i].fill, pc[i].n);
		err = prec_tfile_image_encode(&img, bytes, pc[i].n, &b);
		if (!err)
			err = prec_tfile_write_chunk(w, PREC_TFILE_IMAGE, -1, -1, pc[i].arg,
						     b.data, b.len);
		free(bytes);
		prec_buf_free(&b);
	}
	if (!err)
		err = prec_tfile_writer_close(w, NULL);
	prec_tfile_writer_free(w);
	return err;
}

/* Loads the file; returns the number of images in the session, or an error. */
static long load(void)
{
	struct prec_load_report rep = { 0 };
	struct prec_tfile_reader *r = NULL;
	struct prec_session *s = prec_session_new();
	struct prec_diag d;
	long n;
	int err;

	if (!s)
		return -ENOMEM;
	err = prec_load_open(path, &rep, &r, &d);
	if (!err)
		err = prec_load_session(s, r, &rep);
	n = err ? err : (long)prec_session_nr_images(s);
	prec_tfile_reader_free(r);
	prec_session_free(s);
	return n;
}

/* An IMAGE chunk whose path is empty is skipped (it once reached strdup(NULL)). */
static void empty_path(void)
{
	struct piece pc[] = {
		{ "", 4096, 0, 4096, 0x90 },
		{ "", 8192, 0, 4096, 0x90 },
		{ "/bin/x", 4096, 0, 4096, 0xc3 },
	};

	T_EQ_INT(write_file(pc, T_N(pc)), 0);
	T_EQ_INT(load(), 1);
}

/*
 * A piece that declares a 4 GiB segment costs its own bytes, not 4 GiB: the
 * load works in a child whose address space is limited to 1 GiB (the old
 * loader allocated the declared size at the first piece).
 */
static void declared_size_not_allocated(void)
{
	struct piece pc[] = {
		{ "/bin/huge", 1ull << 32, 0, 4096, 0x90 },
		{ "/bin/huge", 1ull << 32, 1ull << 31, 4096, 0x90 },
		{ "/bin/small", 8192, 0, 4096, 0x90 },
		{ "/bin/small", 8192, 4096, 4096, 0xc3 },
	};
	int st = -1;
	pid_t pid;

#if defined(__SANITIZE_ADDRESS__)
	/* AddressSanitizer's shadow memory alone is past any such limit. */
	t_skip("an address-space limit cannot hold under AddressSanitizer");
#endif
	T_EQ_INT(write_file(pc, T_N(pc)), 0);
	pid = fork();
	if (pid == 0) {
		struct rlimit lim = { 1ul << 30, 1ul << 30 };

		setrlimit(RLIMIT_AS, &lim);
		/* the incomplete huge segment is not added; the small one is */
		_exit(load() == 1 ? 0 : 1);
	}
	T_OK(pid > 0);
	waitpid(pid, &st, 0);
	T_OK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/*
 * The same piece many times: held once, the segment added once (the old
 * loader started over after each completion and added it again and again).
 */
static void repeated_pieces_count_once(void)
{
	struct piece pc[40];
	size_t i;

	for (i = 0; i < T_N(pc); i++)
		pc[i] = (struct piece){ "/bin/rep", 1 << 20, 0, 1 << 20, 0x90 };
	T_EQ_INT(write_file(pc, T_N(pc)), 0);
	T_EQ_INT(load(), 1);
	/* overlapping halves that never cover the whole: not added */
	for (i = 0; i < 10; i++)
		pc[i] = (struct piece){ "/bin/part", 1 << 20, (i % 2) * 4096, 1 << 19, 0x90 };
	T_EQ_INT(write_file(pc, 10), 0);
	T_EQ_INT(load(), 0);
}

/* Pieces out of order and overlapping make up the segment exactly. */
static void pieces_assemble(void)
{
	struct piece pc[] = {
		{ "/bin/asm", 12288, 8192, 4096, 0x33 },
		{ "/bin/asm", 12288, 0, 6144, 0x11 },
		{ "/bin/asm", 12288, 4096, 6144, 0x22 }, /* overlaps both: only the gap is new */
	};
	struct prec_load_report rep = { 0 };
	struct prec_tfile_reader *r = NULL;
	struct prec_session *s = prec_session_new();
	const struct prec_image_desc *d;
	struct prec_diag dg;

	T_EQ_INT(write_file(pc, T_N(pc)), 0);
	T_EQ_INT(prec_load_open(path, &rep, &r, &dg), 0);
	T_EQ_INT(prec_load_session(s, r, &rep), 0);
	T_EQ_INT(prec_session_nr_images(s), 1);
	d = prec_session_image(s, 0);
	T_OK(d && d->size == 12288);
	if (d && d->size == 12288) {
		const uint8_t *b = d->bytes;

		T_EQ_INT(b[0], 0x11);
		T_EQ_INT(b[6143], 0x11);
		T_EQ_INT(b[6144], 0x22);
		T_EQ_INT(b[8191], 0x22);
		T_EQ_INT(b[8192], 0x33);
		T_EQ_INT(b[12287], 0x33);
	}
	prec_tfile_reader_free(r);
	prec_session_free(s);
}

/* ---- AUX chunks read by reference, by many readers at once ---- */

#define AUX_CHUNK 16384
#define AUX_CHUNKS 24          /* more than the cache's slots */

static uint8_t aux_byte(uint64_t pos)
{
	return (uint8_t)((pos * 2654435761u) >> 13 ^ pos >> 9);
}

static int write_aux_file(void)
{
	struct prec_tfile_wopts o = { .level = 1, .chunk_size = AUX_CHUNK };
	struct prec_tfile_event ev = { .name = "intel_pt//u", .pmu = "intel_pt",
				       .flags = PREC_TFILE_EV_AUX };
	struct prec_tfile_writer *w = NULL;
	uint8_t b[AUX_CHUNK];
	int err;

	ev.attr.type = 8;
	err = writer_open(&o, &ev, &w);
	for (uint64_t c = 0; c < AUX_CHUNKS && !err; c++) {
		for (size_t i = 0; i < sizeof(b); i++)
			b[i] = aux_byte(c * AUX_CHUNK + i);
		err = prec_tfile_write_aux(w, -1, 100, c * AUX_CHUNK, b, sizeof(b));
	}
	if (!err)
		err = prec_tfile_writer_close(w, NULL);
	prec_tfile_writer_free(w);
	return err;
}

struct aux_reader {
	const struct prec_session *s;
	const struct prec_stream *st;
	unsigned seed;
	int reads, bad, err;
};

/* Reads random windows (within a chunk, across chunks, the whole stream) and checks each byte. */
static void *aux_read(void *arg)
{
	struct aux_reader *a = arg;
	struct prec_stream_reader r;
	uint64_t len = a->st->len;

	prec_stream_reader_init(&r, a->s, a->st);
	for (int i = 0; i < a->reads && !a->err; i++) {
		uint64_t lo = (uint64_t)rand_r(&a->seed) % len, n = 1 + (uint64_t)rand_r(&a->seed) %
									      (3 * AUX_CHUNK);
		uint64_t hi = PREC_MIN(len, lo + n);
		const uint8_t *p;

		if (i == 0)
			lo = 0, hi = len;
		a->err = prec_stream_read(&r, lo, hi, &p);
		for (uint64_t k = lo; k < hi && !a->err; k++)
			a->bad += p[k - lo] != aux_byte(k);
		if (i % 3 == 0)
			prec_stream_reader_trim(&r); /* the decoder trims after each window */
	}
	prec_stream_reader_fini(&r);
	return NULL;
}

/*
 * Twelve threads read one stream's 24 chunks at once: more readers than the
 * cache has slots (the rest decompress on their own) and more chunks (slots
 * are reused). Every byte must be the one written, in every thread.
 */
static void aux_chunks_shared(void)
{
	struct prec_load_report rep = { 0 };
	struct prec_tfile_reader *r = NULL;
	struct prec_session *s = prec_session_new();
	struct aux_reader a[12];
	pthread_t th[12];
	struct prec_diag d;
	int bad = 0, err = 0;

	T_EQ_INT(write_aux_file(), 0);
	T_EQ_INT(prec_load_open(path, &rep, &r, &d), 0);
	rep.aux_by_ref = true;
	T_EQ_INT(prec_load_session(s, r, &rep), 0);
	T_EQ_INT(prec_session_nr_streams(s), 1);
	if (prec_session_nr_streams(s) != 1)
		goto out;
	T_EQ_INT(prec_session_stream(s, 0)->len, AUX_CHUNKS * AUX_CHUNK);
	T_OK(!prec_session_stream(s, 0)->data); /* by reference: read out of the file */
	for (int i = 0; i < 12; i++) {
		a[i] = (struct aux_reader){ s, prec_session_stream(s, 0), 7u * (unsigned)i + 1, 300, 0, 0 };
		T_EQ_INT(pthread_create(&th[i], NULL, aux_read, &a[i]), 0);
	}
	for (int i = 0; i < 12; i++) {
		pthread_join(th[i], NULL);
		bad += a[i].bad;
		err = err ? err : a[i].err;
	}
	T_EQ_INT(err, 0);
	T_EQ_INT(bad, 0);
out:
	prec_tfile_reader_free(r);
	prec_session_free(s);
}

static const struct t_case cases[] = {
	T(empty_path), T(declared_size_not_allocated), T(repeated_pieces_count_once),
	T(pieces_assemble), T(aux_chunks_shared),
};

int main(int argc, char **argv)
{
	snprintf(path, sizeof(path), "/tmp/ptrec-test-load.%d", (int)getpid());
	int rc = t_main(argc, argv, cases, T_N(cases));

	unlink(path);
	return rc;
}

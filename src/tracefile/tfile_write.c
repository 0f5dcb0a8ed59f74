// SPDX-License-Identifier: MIT
/*
 * Trace file writer. Producer calls fill per-stream buffers ("jobs"); a full
 * buffer becomes one chunk. Synchronously, the job is compressed, checksummed
 * and written in the caller. In async mode it goes to a FIFO drained by a
 * few worker threads that compress in parallel and then write strictly in
 * submission order, so file order is submission order either way.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "tracefile/tfile.h"
#include "base/util.h"

#define MAX_SPARE 8
/*
 * Room kept on the disk for the closing chunks (the sideband still
 * buffered): an unnamed file of this size in the output's file system,
 * allocated at the start and freed when the disk fills, so that they still
 * fit.
 */
#define RESERVE_BYTES (256u << 10)
#define MIN_COMPRESS 64	/* smaller payloads are never worth a zstd frame */

enum { K_AUX, K_SB };

struct stream;

struct job {
	struct job *next;
	unsigned type;
	int32_t cpu, tid;
	uint64_t arg;
	struct stream *st;	/* the AUX stream whose bytes these are, or NULL */
	uint8_t *buf;		/* room for a chunk header, then data, then padding */
	uint8_t *data;		/* = buf + header size: the raw payload */
	size_t len, cap;
	uint64_t seq;		/* submission order = file order */
	uint8_t *out;		/* compressed chunk (header, payload, padding) */
	size_t outcap;
	const uint8_t *chunk;	/* what to write: buf (stored as is) or out */
	size_t chunklen;
	uint32_t stored;
};

struct stream {
	int kind;
	int32_t cpu, tid;
	struct job *cur;	/* being filled; producer only */
	uint64_t next_off;	/* AUX: stream offset just past cur's bytes */
	uint64_t raw, dropped;	/* producer side, under plock */
	uint64_t stored, lost;	/* chunk-writer side, under qlock */
};

struct imgkey {
	uint8_t bid[PREC_TFILE_BUILD_ID_MAX];
	uint32_t bid_size;
	char *path;
	uint64_t off, size;
};

struct prec_tfile_writer {
	int fd;
	bool own_fd, closed;
	struct prec_tfile_wopts o;
	pthread_mutex_t plock;	/* serialises producer calls */

	struct stream **streams;	/* in creation order */
	size_t nstreams, capstreams;
	struct stream **hash;		/* open addressing, capacity hcap (power of 2) */
	size_t hcap;

	struct imgkey *imgs;
	size_t nimgs, capimgs;

	/* Images announced but not written yet: trace chunks wait for them (plock). */
	int holds;
	pthread_cond_t hcond;
	int reserve_fd;		/* the reserve, or -1 */
	bool disk_full;		/* the reserve was used: trace is refused, the rest still goes */

	pthread_mutex_t qlock;
	pthread_cond_t qwork, qspace, qorder;
	struct job *qhead, *qtail;
	size_t inflight;	/* capacity of jobs queued or being written */
	bool stop;
	int err;		/* sticky; written under qlock */
	struct job *spare;
	size_t nspare;
	uint64_t next_seq, write_seq;	/* under qlock */

	/* Compression contexts: one per worker thread, or one for the caller. */
	struct worker *workers;
	int nworkers, nstarted;
	uint64_t file_off, nchunks;	/* under qlock */
};

struct worker {
	struct prec_tfile_writer *w;
	ZSTD_CCtx *cctx;
	pthread_t th;
};

static void le16(uint8_t *x, uint16_t v)
{
	x[0] = (uint8_t)v, x[1] = (uint8_t)(v >> 8);
}

static void le32(uint8_t *x, uint32_t v)
{
	le16(x, (uint16_t)v), le16(x + 2, (uint16_t)(v >> 16));
}

static void le64(uint8_t *x, uint64_t v)
{
	le32(x, (uint32_t)v), le32(x + 4, (uint32_t)(v >> 32));
}

void prec_tfile_wopts_init(struct prec_tfile_wopts *o)
{
	memset(o, 0, sizeof(*o));
	o->level = PREC_TFILE_DEFAULT_LEVEL;
	o->chunk_size = PREC_TFILE_DEFAULT_CHUNK;
	o->queue_bytes = PREC_TFILE_DEFAULT_QUEUE;
	o->full_policy = PREC_TFILE_FULL_EAGAIN;
}

static int sticky(struct prec_tfile_writer *w)
{
	return __atomic_load_n(&w->err, __ATOMIC_ACQUIRE);
}

static void set_err(struct prec_tfile_writer *w, int err)
{
	/* caller holds qlock */
	if (!w->err)
		__atomic_store_n(&w->err, err, __ATOMIC_RELEASE);
}

/* ---- jobs ---- */

static struct job *job_new(struct prec_tfile_writer *w, size_t cap)
{
	struct job *j = NULL;

	if (cap == w->o.chunk_size) {
		pthread_mutex_lock(&w->qlock);
		if (w->spare) {
			j = w->spare;
			w->spare = j->next;
			w->nspare--;
		}
		pthread_mutex_unlock(&w->qlock);
		if (j) {
			j->next = NULL;
			j->len = 0;
			j->st = NULL;
			return j;
		}
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	/* A stored-as-is chunk is built in place: no copy of the payload. */
	j->buf = malloc(PREC_TFILE_CHUNK_HDR_SIZE + cap + PREC_TFILE_ALIGN);
	j->data = j->buf + PREC_TFILE_CHUNK_HDR_SIZE;
	if (!j->buf) {
		free(j);
		return NULL;
	}
	j->cap = cap;
	return j;
}

static void job_free(struct job *j)
{
	if (j) {
		free(j->buf);
		free(j->out);
		free(j);
	}
}

/* Caller holds qlock. */
static void job_recycle(struct prec_tfile_writer *w, struct job *j)
{
	if (j->cap == w->o.chunk_size && w->nspare < MAX_SPARE) {
		j->next = w->spare;
		w->spare = j;
		w->nspare++;
		return;
	}
	job_free(j);
}

/* ---- chunk output ---- */

/*
 * The disk is full: give the reserve back (blocks allocated past the end of
 * the file are freed by truncating to its size). Returns whether there was
 * one; from then on trace chunks are refused.
 */
static bool use_reserve(struct prec_tfile_writer *w)
{
	int fd;

	pthread_mutex_lock(&w->qlock);
	fd = w->reserve_fd;
	w->reserve_fd = -1;
	if (fd >= 0)
		__atomic_store_n(&w->disk_full, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&w->qlock);
	return fd >= 0 && close(fd) == 0;
}

static ssize_t write_some(struct prec_tfile_writer *w, const uint8_t *p, size_t n)
{
	ssize_t r;

	if (w->o.write_fn)
		return w->o.write_fn(w->o.write_ctx, w->fd, p, n);
	r = write(w->fd, p, n);
	return r < 0 ? -errno : r;
}

static int do_write(struct prec_tfile_writer *w, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = write_some(w, p, n);

		if (r == -EINTR)
			continue;
		if ((r == -ENOSPC || r == -EDQUOT || r == 0) && use_reserve(w))
			continue;
		if (r < 0)
			return (int)r;
		if (r == 0)
			return -ENOSPC;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/*
 * Builds header + payload + padding: in place around the raw data when it
 * is stored as is, else in the job's output buffer. Touches no shared
 * state, so workers run it in parallel.
 */
static int build_chunk(struct prec_tfile_writer *w, ZSTD_CCtx *cctx, struct job *j)
{
	size_t n = j->len, stored = n, pad;
	unsigned flags = 0;
	uint8_t *h = j->buf, *payload = j->data;

	if (w->o.level > 0 && n >= MIN_COMPRESS) {
		size_t bound = ZSTD_compressBound(n), c;
		size_t need = PREC_TFILE_CHUNK_HDR_SIZE + bound + PREC_TFILE_ALIGN;

		if (j->outcap < need) {
			uint8_t *o = realloc(j->out, need);

			if (!o)
				return -ENOMEM;
			j->out = o;
			j->outcap = need;
		}
		c = ZSTD_compressCCtx(cctx, j->out + PREC_TFILE_CHUNK_HDR_SIZE, bound, j->data, n,
				      w->o.level);
		/* Incompressible data is stored as is: cheaper to read back. */
		if (!ZSTD_isError(c) && c < n) {
			stored = c;
			flags |= PREC_TFILE_CF_ZSTD;
			h = j->out;
			payload = h + PREC_TFILE_CHUNK_HDR_SIZE;
		}
	}
	pad = (PREC_TFILE_ALIGN - stored % PREC_TFILE_ALIGN) % PREC_TFILE_ALIGN;
	memset(payload + stored, 0, pad);
	le32(h, PREC_TFILE_CHUNK_MAGIC);
	le16(h + 4, (uint16_t)j->type);
	le16(h + 6, (uint16_t)flags);
	le32(h + 8, (uint32_t)n);
	le32(h + 12, (uint32_t)stored);
	le32(h + 16, (uint32_t)j->cpu);
	le32(h + 20, (uint32_t)j->tid);
	le64(h + 24, j->arg);
	le32(h + 32, prec_crc32c(0, payload, stored));
	le32(h + 36, prec_crc32c(0, h, 36));
	j->stored = (uint32_t)stored;
	j->chunk = h;
	j->chunklen = PREC_TFILE_CHUNK_HDR_SIZE + stored + pad;
	return 0;
}

/*
 * Writes a built chunk with one write(2) (as far as the kernel takes it), so
 * a crash leaves at most one partial chunk at the end. Chunks are emitted
 * strictly in submission order; after the first failure nothing more is
 * written, since it could land after a partial chunk.
 */
static int emit_chunk(struct prec_tfile_writer *w, struct job *j, int build_err)
{
	int err = sticky(w);

	if (!err)
		err = build_err;
	if (!err)
		err = do_write(w, j->chunk, j->chunklen);
	pthread_mutex_lock(&w->qlock);
	if (err) {
		set_err(w, err);
		if (j->st)
			j->st->lost += j->len;
	} else {
		w->file_off += j->chunklen;
		w->nchunks++;
		if (j->st)
			j->st->stored += j->stored;
	}
	pthread_mutex_unlock(&w->qlock);
	return err;
}

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct prec_tfile_writer *w = wk->w;
	sigset_t all;

	/* Signals belong to the recorder's main thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&w->qlock);
	for (;;) {
		struct job *j;
		int err = 0;

		while (!w->qhead && !w->stop)
			pthread_cond_wait(&w->qwork, &w->qlock);
		if (!w->qhead)
			break;
		j = w->qhead;
		w->qhead = j->next;
		if (!w->qhead)
			w->qtail = NULL;
		pthread_mutex_unlock(&w->qlock);
		if (!sticky(w))
			err = build_chunk(w, wk->cctx, j);
		/* Jobs leave the queue in order, so the oldest one is never stuck behind us. */
		pthread_mutex_lock(&w->qlock);
		while (w->write_seq != j->seq)
			pthread_cond_wait(&w->qorder, &w->qlock);
		pthread_mutex_unlock(&w->qlock);
		emit_chunk(w, j, err);
		pthread_mutex_lock(&w->qlock);
		w->write_seq++;
		pthread_cond_broadcast(&w->qorder);
		w->inflight -= j->cap;
		job_recycle(w, j);
		pthread_cond_broadcast(&w->qspace);
	}
	pthread_mutex_unlock(&w->qlock);
	return NULL;
}

/*
 * Hands a finished job over. @limit is the queue bound that applies (AUX
 * admission was checked by the caller; metadata may use twice the bound).
 * The job is always consumed.
 */
static int submit(struct prec_tfile_writer *w, struct job *j, size_t limit)
{
	int err;

	if (!w->o.async) {
		err = sticky(w);
		if (!err)
			err = build_chunk(w, w->workers[0].cctx, j);
		err = emit_chunk(w, j, err);
		pthread_mutex_lock(&w->qlock);
		job_recycle(w, j);
		pthread_mutex_unlock(&w->qlock);
		return err;
	}
	pthread_mutex_lock(&w->qlock);
	while (!w->err && w->inflight && w->inflight + j->cap > limit)
		pthread_cond_wait(&w->qspace, &w->qlock);
	if (w->err) {
		err = w->err;
		if (j->st)
			j->st->lost += j->len;
		job_recycle(w, j);
		pthread_mutex_unlock(&w->qlock);
		return err;
	}
	w->inflight += j->cap;
	j->seq = w->next_seq++;
	j->next = NULL;
	if (w->qtail)
		w->qtail->next = j;
	else
		w->qhead = j;
	w->qtail = j;
	pthread_cond_signal(&w->qwork);
	pthread_mutex_unlock(&w->qlock);
	return 0;
}

static size_t meta_limit(struct prec_tfile_writer *w)
{
	return w->o.queue_bytes * 2;
}

/* Submits a self-contained payload (copied unless @own). */
static int submit_payload(struct prec_tfile_writer *w, unsigned type, int32_t cpu, int32_t tid,
			  uint64_t arg, const void *p, size_t n)
{
	struct job *j;

	if (n > PREC_TFILE_MAX_RAW)
		return -EINVAL;
	j = job_new(w, n);
	if (!j)
		return -ENOMEM;
	j->type = type;
	j->cpu = cpu;
	j->tid = tid;
	j->arg = arg;
	if (n)
		memcpy(j->data, p, n);
	j->len = n;
	return submit(w, j, meta_limit(w));
}

/* ---- streams ---- */

static size_t stream_hash(int kind, int32_t cpu, int32_t tid)
{
	uint64_t k = ((uint64_t)(uint32_t)cpu << 32 | (uint32_t)tid) * 0x9e3779b97f4a7c15ull;

	return (size_t)((k >> 29) ^ (uint64_t)kind);
}

static struct stream *stream_get(struct prec_tfile_writer *w, int kind, int32_t cpu, int32_t tid)
{
	struct stream *s;
	size_t i, m;

	if (w->hcap) {
		m = w->hcap - 1;
		for (i = stream_hash(kind, cpu, tid) & m; w->hash[i]; i = (i + 1) & m) {
			s = w->hash[i];
			if (s->kind == kind && s->cpu == cpu && s->tid == tid)
				return s;
		}
	}
	if ((w->nstreams + 1) * 2 > w->hcap) {
		size_t ncap = w->hcap ? w->hcap * 2 : 16, k;
		struct stream **nh = calloc(ncap, sizeof(*nh));

		if (!nh)
			return NULL;
		for (k = 0; k < w->nstreams; k++) {
			s = w->streams[k];
			for (i = stream_hash(s->kind, s->cpu, s->tid) & (ncap - 1); nh[i];
			     i = (i + 1) & (ncap - 1))
				;
			nh[i] = s;
		}
		free(w->hash);
		w->hash = nh;
		w->hcap = ncap;
	}
	if (w->nstreams == w->capstreams) {
		size_t ncap = w->capstreams ? w->capstreams * 2 : 16;
		struct stream **ns = realloc(w->streams, ncap * sizeof(*ns));

		if (!ns)
			return NULL;
		w->streams = ns;
		w->capstreams = ncap;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->kind = kind;
	s->cpu = cpu;
	s->tid = tid;
	w->streams[w->nstreams++] = s;
	m = w->hcap - 1;
	for (i = stream_hash(kind, cpu, tid) & m; w->hash[i]; i = (i + 1) & m)
		;
	w->hash[i] = s;
	return s;
}

static int cut(struct prec_tfile_writer *w, struct stream *s, size_t limit)
{
	struct job *j = s->cur;

	if (!j)
		return 0;
	s->cur = NULL;
	if (!j->len) {
		pthread_mutex_lock(&w->qlock);
		job_recycle(w, j);
		pthread_mutex_unlock(&w->qlock);
		return 0;
	}
	return submit(w, j, limit);
}

/* Cuts the buffers of streams of @kind. */
static int cut_kind(struct prec_tfile_writer *w, int kind)
{
	size_t i;
	int err = 0, e;

	for (i = 0; i < w->nstreams; i++) {
		if (w->streams[i]->kind != kind)
			continue;
		e = cut(w, w->streams[i], meta_limit(w));
		if (e && !err)
			err = e;
	}
	return err;
}

/* Sideband first: the trace needs it, and on a full disk it matters more. */
static int cut_all(struct prec_tfile_writer *w)
{
	int err = cut_kind(w, K_SB), e = cut_kind(w, K_AUX);

	return err ? err : e;
}

/*
 * Before a trace chunk goes out: the sideband buffered so far (what that
 * trace needs: mappings, threads), and the images announced (caller holds
 * plock, which the wait lets go).
 */
static int before_trace(struct prec_tfile_writer *w)
{
	while (w->holds && !sticky(w))
		pthread_cond_wait(&w->hcond, &w->plock);
	return cut_kind(w, K_SB);
}

/* ---- open / close ---- */

static int validate_opts(const struct prec_tfile_wopts *o)
{
	if (o->level < 0 || o->level > 19)
		return -EINVAL;
	if (o->chunk_size < 4096 || o->chunk_size > PREC_TFILE_MAX_CHUNK_TARGET)
		return -EINVAL;
	if (o->async && o->queue_bytes < o->chunk_size)
		return -EINVAL;
	if (o->full_policy != PREC_TFILE_FULL_EAGAIN && o->full_policy != PREC_TFILE_FULL_BLOCK)
		return -EINVAL;
	if (o->threads < 0 || o->threads > 64)
		return -EINVAL;
	return 0;
}

static int writer_init(int fd, bool own, const struct prec_tfile_wopts *o,
		       struct prec_tfile_writer **out)
{
	struct prec_tfile_writer *w;
	uint8_t hdr[PREC_TFILE_HDR_SIZE] = { 0 };
	struct timespec ts;
	int err;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = fd;
	w->own_fd = own;
	w->reserve_fd = -1;
	if (o)
		w->o = *o;
	else
		prec_tfile_wopts_init(&w->o);
	if (w->o.async && !w->o.queue_bytes)
		w->o.queue_bytes = PREC_TFILE_DEFAULT_QUEUE;
	pthread_mutex_init(&w->plock, NULL);
	pthread_mutex_init(&w->qlock, NULL);
	pthread_cond_init(&w->qwork, NULL);
	pthread_cond_init(&w->qspace, NULL);
	pthread_cond_init(&w->qorder, NULL);
	pthread_cond_init(&w->hcond, NULL);
	err = validate_opts(&w->o);
	if (err)
		goto out;
	if (w->o.async && !w->o.threads) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		/* Leave the other half of the machine to the tracee and the drain loop. */
		w->o.threads = (int)PREC_MAX(1, PREC_MIN(4, ncpu / 2));
	}
	w->nworkers = w->o.async ? w->o.threads : 1;
	w->workers = calloc((size_t)w->nworkers, sizeof(*w->workers));
	if (!w->workers) {
		err = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < w->nworkers; i++) {
		w->workers[i].w = w;
		w->workers[i].cctx = ZSTD_createCCtx();
		if (!w->workers[i].cctx) {
			err = -ENOMEM;
			goto out;
		}
	}

	clock_gettime(CLOCK_REALTIME, &ts);
	memcpy(hdr, PREC_TFILE_MAGIC, PREC_TFILE_MAGIC_LEN);
	le16(hdr + 8, PREC_TFILE_VERSION);
	le16(hdr + 10, PREC_TFILE_HDR_SIZE);
	le32(hdr + 12, w->o.file_flags);
	le64(hdr + 16, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
	le32(hdr + 28, prec_crc32c(0, hdr, 28));
	err = prec_write_full(fd, hdr, sizeof(hdr));
	if (err)
		goto out;
	w->file_off = sizeof(hdr);

	for (int i = 0; w->o.async && i < w->nworkers; i++) {
		err = -pthread_create(&w->workers[i].th, NULL, worker_main, &w->workers[i]);
		if (err)
			goto out;
		w->nstarted++;
	}
	*out = w;
	return 0;
out:
	w->own_fd = false;	/* the caller closes or unlinks */
	prec_tfile_writer_free(w);
	return err;
}

int prec_tfile_writer_new_fd(int fd, const struct prec_tfile_wopts *o,
			     struct prec_tfile_writer **out)
{
	if (!out || fd < 0)
		return -EINVAL;
	*out = NULL;
	return writer_init(fd, false, o, out);
}

/* An unnamed file of RESERVE_BYTES beside @path, or -1 (no reserve then). */
static int make_reserve(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	int fd;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path) + (slash == path), path);
	fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	if (fallocate(fd, 0, 0, RESERVE_BYTES) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int prec_tfile_writer_new(const char *path, const struct prec_tfile_wopts *o,
			  struct prec_tfile_writer **out)
{
	struct stat sb;
	int fd, err;

	if (!out || !path)
		return -EINVAL;
	*out = NULL;
	if (o && validate_opts(o))
		return -EINVAL;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/*
	 * O_CREAT's mode is filtered by umask and ignored for an existing file;
	 * traces hold code and data of the traced program, so force 0600. Only
	 * regular files: never chmod a device or fifo the user named.
	 */
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 07777) != 0600 &&
	    fchmod(fd, 0600) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	err = writer_init(fd, true, o, out);
	if (err) {
		close(fd);
		return err;
	}
	if (S_ISREG(sb.st_mode) && !(*out)->o.write_fn)
		(*out)->reserve_fd = make_reserve(path);
	return 0;
}

int prec_tfile_writer_reserve(struct prec_tfile_writer *w, const char *path)
{
	struct stat sb;

	if (!w || !path)
		return -EINVAL;
	if (w->reserve_fd < 0 && !w->o.write_fn && fstat(w->fd, &sb) == 0 && S_ISREG(sb.st_mode))
		w->reserve_fd = make_reserve(path);
	return 0;
}

int prec_tfile_writer_hold(struct prec_tfile_writer *w, bool on)
{
	if (!w)
		return -EINVAL;
	pthread_mutex_lock(&w->plock);
	if (on)
		w->holds++;
	else if (w->holds > 0 && !--w->holds)
		pthread_cond_broadcast(&w->hcond);
	pthread_mutex_unlock(&w->plock);
	return 0;
}

bool prec_tfile_writer_disk_full(struct prec_tfile_writer *w)
{
	return w && __atomic_load_n(&w->disk_full, __ATOMIC_ACQUIRE);
}

/* Gives back a reserve not used (the file is finished). */
static void drop_reserve(struct prec_tfile_writer *w)
{
	if (w->reserve_fd >= 0)
		close(w->reserve_fd);
	w->reserve_fd = -1;
}

/* Waits until every submitted job is written. Caller holds plock. */
static int drain(struct prec_tfile_writer *w)
{
	int err;

	pthread_mutex_lock(&w->qlock);
	while (w->inflight)
		pthread_cond_wait(&w->qspace, &w->qlock);
	err = w->err;
	pthread_mutex_unlock(&w->qlock);
	return err;
}

static void stop_thread(struct prec_tfile_writer *w)
{
	if (!w->nstarted)
		return;
	pthread_mutex_lock(&w->qlock);
	w->stop = true;
	pthread_cond_broadcast(&w->qwork);
	pthread_mutex_unlock(&w->qlock);
	while (w->nstarted)
		pthread_join(w->workers[--w->nstarted].th, NULL);
}

uint64_t prec_tfile_writer_written(struct prec_tfile_writer *w)
{
	uint64_t n;

	pthread_mutex_lock(&w->qlock);
	n = w->file_off;
	pthread_mutex_unlock(&w->qlock);
	return n;
}

int prec_tfile_writer_flush(struct prec_tfile_writer *w)
{
	int err, e;

	if (!w)
		return -EINVAL;
	pthread_mutex_lock(&w->plock);
	err = cut_all(w);
	e = drain(w);
	pthread_mutex_unlock(&w->plock);
	return e ? e : err;
}

/* Caller holds plock. Builds the merged STATS of the caller's and ours. */
static int build_stats(struct prec_tfile_writer *w, const struct prec_tfile_stats *in,
		       struct prec_tfile_stats **out)
{
	struct prec_tfile_stats *st;
	size_t n = 0, i, k, max;

	max = w->nstreams + (in ? in->n_streams : 0);
	st = calloc(1, sizeof(*st) + max * sizeof(*st->streams));
	if (!st)
		return -ENOMEM;
	st->streams = (struct prec_tfile_stream_stats *)(st + 1);
	if (in) {
		st->duration_ns = in->duration_ns;
		st->lost_records = in->lost_records;
		st->lost_bytes = in->lost_bytes;
		for (i = 0; i < in->n_streams; i++)
			st->streams[n++] = in->streams[i];
	}
	pthread_mutex_lock(&w->qlock);
	for (i = 0; i < w->nstreams; i++) {
		struct stream *s = w->streams[i];
		struct prec_tfile_stream_stats *d = NULL;

		if (s->kind != K_AUX)
			continue;
		for (k = 0; in && k < in->n_streams; k++)
			if (st->streams[k].cpu == s->cpu && st->streams[k].tid == s->tid)
				d = &st->streams[k];
		if (!d) {
			d = &st->streams[n++];
			memset(d, 0, sizeof(*d));
			d->cpu = s->cpu;
			d->tid = s->tid;
		}
		d->raw_bytes = s->raw;
		d->stored_bytes = s->stored;
		d->dropped_bytes = s->dropped + s->lost;
	}
	pthread_mutex_unlock(&w->qlock);
	st->n_streams = (uint32_t)n;
	if (!n)
		st->streams = NULL;
	*out = st;
	return 0;
}

int prec_tfile_writer_get_stats(struct prec_tfile_writer *w, struct prec_tfile_stats **out)
{
	int err;

	if (!w || !out)
		return -EINVAL;
	pthread_mutex_lock(&w->plock);
	err = build_stats(w, NULL, out);
	pthread_mutex_unlock(&w->plock);
	return err;
}

size_t prec_tfile_writer_queued(struct prec_tfile_writer *w)
{
	size_t n;

	if (!w)
		return 0;
	pthread_mutex_lock(&w->qlock);
	n = w->inflight;
	pthread_mutex_unlock(&w->qlock);
	return n;
}

int prec_tfile_writer_close(struct prec_tfile_writer *w, const struct prec_tfile_stats *in)
{
	struct prec_tfile_stats *st = NULL;
	struct prec_buf b = { 0 };
	uint8_t end[16] = { 0 };
	int err;

	if (!w)
		return -EINVAL;
	pthread_mutex_lock(&w->plock);
	if (w->closed) {
		pthread_mutex_unlock(&w->plock);
		return -EINVAL;
	}
	err = cut_all(w);
	if (!err)
		err = drain(w);
	if (!err && in) {
		err = build_stats(w, in, &st);
		if (!err)
			err = prec_tfile_stats_encode(st, &b);
		if (!err)
			err = submit_payload(w, PREC_TFILE_STATS, -1, -1, 0, b.data, b.len);
		if (!err)
			err = drain(w);
	}
	if (!err) {
		/* The count lets a reader notice chunks that vanished in between. */
		pthread_mutex_lock(&w->qlock);
		le64(end, w->nchunks);
		pthread_mutex_unlock(&w->qlock);
		err = submit_payload(w, PREC_TFILE_END, -1, -1, 0, end, sizeof(end));
		if (!err)
			err = drain(w);
	}
	stop_thread(w);
	drop_reserve(w);
	if (w->own_fd) {
		if (close(w->fd) < 0 && !err)
			err = -errno;
		w->own_fd = false;
	}
	w->closed = true;
	if (!err)
		err = sticky(w);
	pthread_mutex_unlock(&w->plock);
	free(st);
	prec_buf_free(&b);
	return err;
}

void prec_tfile_writer_free(struct prec_tfile_writer *w)
{
	size_t i;

	if (!w)
		return;
	if (!w->closed) {
		pthread_mutex_lock(&w->plock);
		if (w->workers) {
			cut_all(w);
			drain(w);
		}
		pthread_mutex_unlock(&w->plock);
	}
	stop_thread(w);
	drop_reserve(w);
	if (w->own_fd)
		close(w->fd);
	for (i = 0; i < w->nstreams; i++) {
		job_free(w->streams[i]->cur);
		free(w->streams[i]);
	}
	while (w->qhead) {
		struct job *j = w->qhead;

		w->qhead = j->next;
		job_free(j);
	}
	while (w->spare) {
		struct job *j = w->spare;

		w->spare = j->next;
		job_free(j);
	}
	for (i = 0; i < w->nimgs; i++)
		free(w->imgs[i].path);
	free(w->imgs);
	free(w->streams);
	free(w->hash);
	for (i = 0; w->workers && i < (size_t)w->nworkers; i++)
		ZSTD_freeCCtx(w->workers[i].cctx);
	free(w->workers);
	pthread_mutex_destroy(&w->plock);
	pthread_mutex_destroy(&w->qlock);
	pthread_cond_destroy(&w->qwork);
	pthread_cond_destroy(&w->qspace);
	pthread_cond_destroy(&w->qorder);
	pthread_cond_destroy(&w->hcond);
	free(w);
}

/* ---- producer calls ---- */

static int begin(struct prec_tfile_writer *w)
{
	int err;

	pthread_mutex_lock(&w->plock);
	err = w->closed ? -EINVAL : sticky(w);
	if (err)
		pthread_mutex_unlock(&w->plock);
	return err;
}

static int end_call(struct prec_tfile_writer *w, int err)
{
	pthread_mutex_unlock(&w->plock);
	return err;
}

static int write_encoded(struct prec_tfile_writer *w, unsigned type, struct prec_buf *b)
{
	int err;

	if (b->len > PREC_TFILE_MAX_RAW)
		return -EINVAL;
	err = submit_payload(w, type, -1, -1, 0, b->data, b->len);
	return err;
}

int prec_tfile_write_info(struct prec_tfile_writer *w, const struct prec_tfile_info *info)
{
	struct prec_buf b = { 0 };
	int err;

	if (!w || !info)
		return -EINVAL;
	err = begin(w);
	if (err)
		return err;
	err = prec_tfile_info_encode(info, &b);
	if (!err)
		err = write_encoded(w, PREC_TFILE_INFO, &b);
	prec_buf_free(&b);
	return end_call(w, err);
}

int prec_tfile_write_machine(struct prec_tfile_writer *w, const struct prec_tfile_machine *m)
{
	struct prec_buf b = { 0 };
	int err;

	if (!w || !m)
		return -EINVAL;
	err = begin(w);
	if (err)
		return err;
	err = prec_tfile_machine_encode(m, &b);
	if (!err)
		err = write_encoded(w, PREC_TFILE_MACHINE, &b);
	prec_buf_free(&b);
	return end_call(w, err);
}

int prec_tfile_write_events(struct prec_tfile_writer *w, const struct prec_tfile_event *ev,
			    uint32_t n)
{
	struct prec_buf b = { 0 };
	int err;

	if (!w || (n && !ev))
		return -EINVAL;
	err = begin(w);
	if (err)
		return err;
	err = prec_tfile_events_encode(ev, n, &b);
	if (!err)
		err = write_encoded(w, PREC_TFILE_EVENTS, &b);
	prec_buf_free(&b);
	return end_call(w, err);
}

int prec_tfile_write_aux(struct prec_tfile_writer *w, int32_t cpu, int32_t tid, uint64_t offset,
			 const void *p, size_t n)
{
	const uint8_t *src = p;
	size_t cs, fill, need, limit;
	struct stream *s;
	bool gap;
	int err;

	if (!w || (n && !p))
		return -EINVAL;
	err = begin(w);
	if (err)
		return err;
	if (__atomic_load_n(&w->disk_full, __ATOMIC_ACQUIRE))
		return end_call(w, -ENOSPC);
	if (!n)
		return end_call(w, 0);
	s = stream_get(w, K_AUX, cpu, tid);
	if (!s)
		return end_call(w, -ENOMEM);
	cs = w->o.chunk_size;
	gap = s->cur && s->cur->len && offset != s->next_off;
	fill = s->cur && !gap ? s->cur->len : 0;
	need = (gap ? s->cur->cap : 0) + (fill + n) / cs * cs;
	if (w->o.async && w->o.full_policy == PREC_TFILE_FULL_EAGAIN && need) {
		bool full;

		/* All or nothing, so the caller's accounting of lost bytes is exact. */
		pthread_mutex_lock(&w->qlock);
		full = w->inflight && w->inflight + need > w->o.queue_bytes;
		pthread_mutex_unlock(&w->qlock);
		if (full) {
			s->dropped += n;
			return end_call(w, -EAGAIN);
		}
	}
	limit = w->o.full_policy == PREC_TFILE_FULL_BLOCK ? w->o.queue_bytes : SIZE_MAX;
	if (gap) {
		err = before_trace(w);
		if (!err)
			err = cut(w, s, limit);
		if (err)
			goto out;
	}
	s->raw += n;
	while (n) {
		size_t k;

		if (!s->cur) {
			s->cur = job_new(w, cs);
			if (!s->cur) {
				err = -ENOMEM;
				goto out;
			}
			s->cur->type = PREC_TFILE_AUX;
			s->cur->cpu = cpu;
			s->cur->tid = tid;
			s->cur->arg = offset;
			s->cur->st = s;
			s->next_off = offset;
		}
		k = PREC_MIN(n, s->cur->cap - s->cur->len);
		memcpy(s->cur->data + s->cur->len, src, k);
		s->cur->len += k;
		src += k;
		n -= k;
		offset += k;
		s->next_off = offset;
		if (s->cur->len == s->cur->cap) {
			/* EAGAIN admission was checked above; BLOCK waits in submit. */
			err = before_trace(w);
			if (!err)
				err = cut(w, s, limit);
			if (err)
				goto out;
		}
	}
out:
	return end_call(w, err);
}

int prec_tfile_write_sideband(struct prec_tfile_writer *w, int32_t cpu, const void *recs, size_t n)
{
	const uint8_t *p = recs;
	size_t pos, cs;
	struct stream *s;
	int err;

	if (!w || (n && !recs) || n % 8)
		return -EINVAL;
	/* Check the tiling first so a bad batch writes nothing. */
	for (pos = 0; pos < n;) {
		uint16_t sz = (uint16_t)(p[pos + 6] | p[pos + 7] << 8);

		if (sz < 8 || sz % 8 || sz > n - pos)
			return -EINVAL;
		pos += sz;
	}
	err = begin(w);
	if (err)
		return err;
	s = stream_get(w, K_SB, cpu, -1);
	if (!s)
		return end_call(w, -ENOMEM);
	cs = w->o.chunk_size;
	for (pos = 0; pos < n;) {
		uint16_t sz = (uint16_t)(p[pos + 6] | p[pos + 7] << 8);
		size_t run = 0;

		if (s->cur && s->cur->len + sz > s->cur->cap) {
			err = cut(w, s, meta_limit(w));
			if (err)
				goto out;
		}
		if (!s->cur) {
			/* A record larger than the chunk target gets a chunk of its own. */
			s->cur = job_new(w, PREC_MAX(cs, (size_t)sz));
			if (!s->cur) {
				err = -ENOMEM;
				goto out;
			}
			s->cur->type = PREC_TFILE_SIDEBAND;
			s->cur->cpu = cpu;
			s->cur->tid = -1;
			s->cur->arg = 0;
		}
		/* Copy as many whole records as fit in one go. */
		while (pos + run < n) {
			uint16_t rs = (uint16_t)(p[pos + run + 6] | p[pos + run + 7] << 8);

			if (s->cur->len + run + rs > s->cur->cap)
				break;
			run += rs;
		}
		memcpy(s->cur->data + s->cur->len, p + pos, run);
		s->cur->len += run;
		pos += run;
	}
out:
	return end_call(w, err);
}

static bool img_same(const struct imgkey *k, const struct prec_tfile_image *img)
{
	if (k->off != img->file_offset || k->size != img->size || k->bid_size != img->build_id_size)
		return false;
	if (img->build_id_size)
		return !memcmp(k->bid, img->build_id, img->build_id_size);
	return !strcmp(k->path, img->path ? img->path : "");
}

int prec_tfile_write_image(struct prec_tfile_writer *w, const struct prec_tfile_image *img,
			   const void *bytes)
{
	const uint8_t *src = bytes;
	struct prec_buf b = { 0 };
	struct imgkey *k;
	uint64_t off;
	size_t i, piece;
	int err;

	if (!w || !img || img->build_id_size > PREC_TFILE_BUILD_ID_MAX)
		return -EINVAL;
	err = begin(w);
	if (err)
		return err;
	for (i = 0; i < w->nimgs; i++)
		if (img_same(&w->imgs[i], img))
			return end_call(w, 0);
	if (w->nimgs == w->capimgs) {
		size_t ncap = w->capimgs ? w->capimgs * 2 : 16;
		struct imgkey *ni = realloc(w->imgs, ncap * sizeof(*ni));

		if (!ni)
			return end_call(w, -ENOMEM);
		w->imgs = ni;
		w->capimgs = ncap;
	}
	k = &w->imgs[w->nimgs];
	memset(k, 0, sizeof(*k));
	k->path = strdup(img->path ? img->path : "");
	if (!k->path)
		return end_call(w, -ENOMEM);
	memcpy(k->bid, img->build_id, img->build_id_size);
	k->bid_size = img->build_id_size;
	k->off = img->file_offset;
	k->size = img->size;
	w->nimgs++;

	piece = w->o.chunk_size;
	off = 0;
	do {
		/* Without bytes: one chunk that only names the segment (a reference). */
		size_t n = bytes ? (size_t)PREC_MIN((uint64_t)piece, img->size - off) : 0;

		prec_buf_reset(&b);
		err = prec_tfile_image_encode(img, src + off, n, &b);
		if (!err)
			err = b.len > PREC_TFILE_MAX_RAW ? -EINVAL : 0;
		if (!err)
			err = submit_payload(w, PREC_TFILE_IMAGE, -1, -1, off, b.data, b.len);
		off += n;
	} while (!err && bytes && off < img->size);
	prec_buf_free(&b);
	return end_call(w, err ? err : 1);
}

int prec_tfile_write_blob(struct prec_tfile_writer *w, unsigned type, uint64_t arg, const void *p,
			  size_t n)
{
	const uint8_t *src = p;
	size_t off = 0;
	int err;

	if (!w || (n && !p) ||
	    (type != PREC_TFILE_KSYMS && type != PREC_TFILE_KCORE && type != PREC_TFILE_MODULES))
		return -EINVAL;
	err = begin(w);
	if (err)
		return err;
	do {
		size_t k = PREC_MIN(n - off, w->o.chunk_size);

		err = submit_payload(w, type, -1, -1, arg + off, src + off, k);
		off += k;
	} while (!err && off < n);
	return end_call(w, err);
}

int prec_tfile_write_chunk(struct prec_tfile_writer *w, unsigned type, int32_t cpu, int32_t tid,
			   uint64_t arg, const void *p, size_t n)
{
	int err;

	if (!w || !type || type > 0xffff || (n && !p) || n > PREC_TFILE_MAX_RAW)
		return -EINVAL;
	err = begin(w);
	if (err)
		return err;
	err = submit_payload(w, type, cpu, tid, arg, p, n);
	return end_call(w, err);
}

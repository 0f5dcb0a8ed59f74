// SPDX-License-Identifier: MIT
/*
 * Trace file reader. The first call that needs it scans the file's chunk
 * headers into an index (headers only: each is checked by its own CRC, and
 * damaged stretches are skipped by scanning for the next valid header at
 * 8-byte steps). Payloads are then read on demand with pread(2), checked
 * against their CRC and decompressed into a buffer bounded by the chunk's
 * raw length, which itself is bounded by PREC_TFILE_MAX_RAW.
 *
 * pread rather than mmap: a file truncated under us must give an error,
 * not SIGBUS.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "tracefile/tfile.h"
#include "base/util.h"

/*
 * Checksum comparison. Fuzzing builds (-DPREC_FUZZING, tests/fuzz) accept
 * any checksum, so that mutated files reach the parsers behind the checks.
 */
#ifdef PREC_FUZZING
#define CRC_OK(stored, computed) ((void)(stored), (void)(computed), 1)
#else
#define CRC_OK(stored, computed) ((stored) == (computed))
#endif

#define SCAN_BLOCK (64u << 10)

struct entry {
	uint64_t off;
	uint32_t raw_len, stored_len;
	uint16_t type, flags;
	int32_t cpu, tid;
	uint64_t arg;
	uint32_t pcrc;
	bool reported;	/* payload damage already reported */
};

struct prec_tfile_reader {
	int fd;
	const uint8_t *mem;	/* memory source, or NULL for fd */
	uint8_t *own_mem;	/* slurped input we free */
	uint64_t size;
	struct prec_tfile_ropts o;
	struct prec_tfile_fhdr fh;

	bool indexed;
	int index_err;
	struct entry *ent;
	size_t nent, capent;
	struct prec_tfile_status st;	/* structural part, from the index */
	uint64_t pl_damaged, pl_damaged_bytes;
	size_t it;
	unsigned check_only;	/* chunk types prec_tfile_next() checks without decompressing */

	struct prec_tfile_pbuf pb;
};

static uint16_t rd16(const uint8_t *x)
{
	return (uint16_t)(x[0] | x[1] << 8);
}

static uint32_t rd32(const uint8_t *x)
{
	return (uint32_t)x[0] | (uint32_t)x[1] << 8 | (uint32_t)x[2] << 16 | (uint32_t)x[3] << 24;
}

static uint64_t rd64(const uint8_t *x)
{
	return (uint64_t)rd32(x) | (uint64_t)rd32(x + 4) << 32;
}

/* Returns bytes read (short only at the end of the source) or -errno. */
static long src_read(struct prec_tfile_reader *r, uint64_t off, void *buf, size_t n)
{
	size_t got = 0;

	if (off >= r->size)
		return 0;
	if (n > r->size - off)
		n = (size_t)(r->size - off);
	if (r->mem) {
		memcpy(buf, r->mem + off, n);
		return (long)n;
	}
	while (got < n) {
		ssize_t k = pread(r->fd, (uint8_t *)buf + got, n - got, (off_t)(off + got));

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return (long)got;
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	uint8_t *p;

	if (need <= *cap)
		return 0;
	p = realloc(*buf, need);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = need;
	return 0;
}

static void report(struct prec_tfile_reader *r, enum prec_tfile_damage_kind kind, uint64_t off,
		   uint64_t len, const struct entry *e)
{
	struct prec_tfile_damage d = {
		.kind = kind, .offset = off, .length = len, .cpu = -1, .tid = -1,
	};

	if (e) {
		d.type = e->type;
		d.cpu = e->cpu;
		d.tid = e->tid;
		d.arg = e->arg;
		d.raw_len = e->raw_len;
	}
	if (r->o.on_damage)
		r->o.on_damage(r->o.ctx, &d);
}

/* Checks a 40-byte chunk header; fills @e (offset aside) when it is valid. */
static bool parse_hdr(const uint8_t *h, struct entry *e)
{
	uint32_t raw, stored;
	uint16_t flags;

	if (rd32(h) != PREC_TFILE_CHUNK_MAGIC || !CRC_OK(rd32(h + 36), prec_crc32c(0, h, 36)))
		return false;
	flags = rd16(h + 6);
	raw = rd32(h + 8);
	stored = rd32(h + 12);
	if (raw > PREC_TFILE_MAX_RAW)
		return false;
	if (flags & PREC_TFILE_CF_ZSTD) {
		if (!stored || stored > ZSTD_COMPRESSBOUND(raw))
			return false;
	} else if (stored != raw) {
		return false;
	}
	e->type = rd16(h + 4);
	e->flags = flags;
	e->raw_len = raw;
	e->stored_len = stored;
	e->cpu = (int32_t)rd32(h + 16);
	e->tid = (int32_t)rd32(h + 20);
	e->arg = rd64(h + 24);
	e->pcrc = rd32(h + 32);
	e->reported = false;
	return true;
}

/*
 * Finds the next valid chunk header at or after @from (8-byte steps).
 * Returns its offset, r->size if there is none, or -errno.
 */
static int64_t scan(struct prec_tfile_reader *r, uint64_t from, uint8_t *blk)
{
	uint64_t base = from;
	struct entry e;

	while (base + PREC_TFILE_CHUNK_HDR_SIZE <= r->size) {
		long n = src_read(r, base, blk, SCAN_BLOCK + PREC_TFILE_CHUNK_HDR_SIZE);
		size_t i;

		if (n < 0)
			return n;
		for (i = 0; i + PREC_TFILE_CHUNK_HDR_SIZE <= (size_t)n && i < SCAN_BLOCK;
		     i += PREC_TFILE_ALIGN) {
			if (blk[i] == 0xab && parse_hdr(blk + i, &e))
				return (int64_t)(base + i);
		}
		base += SCAN_BLOCK;
	}
	return (int64_t)r->size;
}

static int add_entry(struct prec_tfile_reader *r, const struct entry *e)
{
	if (r->nent == r->capent) {
		size_t ncap = r->capent ? r->capent * 2 : 256;
		struct entry *n = realloc(r->ent, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->ent = n;
		r->capent = ncap;
	}
	r->ent[r->nent++] = *e;
	return 0;
}

static int load(struct prec_tfile_reader *r, struct entry *e, const void **data, bool check_only);
static int load_into(struct prec_tfile_reader *r, const struct entry *e,
		     struct prec_tfile_pbuf *pb, const void **data, enum prec_tfile_damage_kind *bad,
		     bool check_only);

static bool known_type(unsigned t)
{
	return t >= 1 && t <= PREC_TFILE_TYPE_MAX;
}

static int build_index(struct prec_tfile_reader *r)
{
	uint64_t pos = r->fh.header_size;
	uint8_t *blk = NULL;
	bool truncated = false;
	int err = 0;

	if (r->indexed)
		return r->index_err;
	r->indexed = true;
	memset(&r->st, 0, sizeof(r->st));
	r->st.file_size = r->size;
	blk = malloc(SCAN_BLOCK + PREC_TFILE_CHUNK_HDR_SIZE);
	if (!blk) {
		err = -ENOMEM;
		goto out;
	}
	while (pos < r->size) {
		uint64_t avail = r->size - pos;
		uint8_t h[PREC_TFILE_CHUNK_HDR_SIZE];
		struct entry e;
		int64_t q;
		long n;

		if (avail < PREC_TFILE_CHUNK_HDR_SIZE) {
			/* Too short for any chunk: the write of the last one was cut. */
			report(r, PREC_TFILE_DMG_TRUNCATED, pos, avail, NULL);
			r->st.damaged++;
			r->st.damaged_bytes += avail;
			truncated = true;
			r->st.cut_offset = pos;
			break;
		}
		n = src_read(r, pos, h, sizeof(h));
		if (n < 0) {
			err = (int)n;
			goto out;
		}
		if (n == (long)sizeof(h) && parse_hdr(h, &e)) {
			e.off = pos;
			if (e.stored_len > avail - PREC_TFILE_CHUNK_HDR_SIZE) {
				report(r, PREC_TFILE_DMG_TRUNCATED, pos, avail, &e);
				r->st.damaged++;
				r->st.damaged_bytes += avail;
				truncated = true;
				r->st.cut_offset = pos;
				break;
			}
			err = add_entry(r, &e);
			if (err)
				goto out;
			r->st.chunks++;
			if (!known_type(e.type))
				r->st.unknown++;
			pos += PREC_TFILE_CHUNK_HDR_SIZE + PREC_ALIGN_UP((uint64_t)e.stored_len,
									 PREC_TFILE_ALIGN);
			continue;
		}
		/*
		 * A whole but invalid header is damage, never a cut: look for the
		 * next chunk.
		 */
		q = scan(r, pos + PREC_TFILE_ALIGN, blk);
		if (q < 0) {
			err = (int)q;
			goto out;
		}
		report(r, PREC_TFILE_DMG_HEADER, pos, (uint64_t)q - pos, NULL);
		r->st.damaged++;
		r->st.damaged_bytes += (uint64_t)q - pos;
		if ((uint64_t)q >= r->size) {
			truncated = true;
			r->st.cut_offset = pos;
			break;
		}
		pos = (uint64_t)q;
	}
	/* END's payload tells how many chunks came before it. */
	for (size_t i = r->nent; i-- > 0;) {
		const void *d;
		int k;

		if (r->ent[i].type != PREC_TFILE_END)
			continue;
		k = load(r, &r->ent[i], &d, false);
		if (k < 0) {
			err = k;
			goto out;
		}
		if (k > 0 && r->ent[i].raw_len >= 8) {
			r->st.end_seen = true;
			r->st.end_nchunks = rd64(d);
		}
		break;
	}
	r->st.cut_short = truncated || !r->st.end_seen;
	if (!truncated && r->st.cut_short)
		r->st.cut_offset = r->size;
out:
	free(blk);
	r->index_err = err;
	return err;
}

/*
 * Reads, checks and decompresses the payload of @e into @pb. Returns 1 with
 * *@data set, 0 if it is damaged (*@bad says how), or a negative error.
 * Touches nothing of @r but its file: callers with buffers of their own may
 * call it from several threads at once.
 */
static int load_into(struct prec_tfile_reader *r, const struct entry *e,
		     struct prec_tfile_pbuf *pb, const void **data, enum prec_tfile_damage_kind *bad,
		     bool check_only)
{
	size_t got;
	long n;
	int err;

	err = grow(&pb->sbuf, &pb->scap, (size_t)e->stored_len + 1);
	if (err)
		return err;
	n = src_read(r, e->off + PREC_TFILE_CHUNK_HDR_SIZE, pb->sbuf, e->stored_len);
	if (n < 0)
		return (int)n;
	if ((size_t)n != e->stored_len)
		return -EIO;	/* the file shrank since it was indexed */
	if (!CRC_OK(e->pcrc, prec_crc32c(0, pb->sbuf, e->stored_len))) {
		*bad = PREC_TFILE_DMG_CHECKSUM;
		return 0;
	}
	if (e->flags & ~PREC_TFILE_CF_KNOWN) {
		*bad = PREC_TFILE_DMG_FLAGS;
		return 0;
	}
	if (!(e->flags & PREC_TFILE_CF_ZSTD)) {
		*data = check_only ? NULL : pb->sbuf;
		return 1;
	}
	/* Exactly one frame, exactly raw_len bytes: anything else is damage. */
	*bad = PREC_TFILE_DMG_DECOMPRESS;
	if (ZSTD_findFrameCompressedSize(pb->sbuf, e->stored_len) != e->stored_len)
		return 0;
	if (check_only) {
		/* the frame says how much it holds (a frame that does not is decompressed) */
		unsigned long long fcs = ZSTD_getFrameContentSize(pb->sbuf, e->stored_len);

		if (fcs != ZSTD_CONTENTSIZE_UNKNOWN) {
			if (fcs != e->raw_len)
				return 0;
			*data = NULL;
			return 1;
		}
	}
	err = grow(&pb->rbuf, &pb->rcap, (size_t)e->raw_len + 1);
	if (err)
		return err;
	if (!pb->dctx) {
		pb->dctx = ZSTD_createDCtx();
		if (!pb->dctx)
			return -ENOMEM;
	}
	got = ZSTD_decompressDCtx(pb->dctx, pb->rbuf, e->raw_len, pb->sbuf, e->stored_len);
	if (ZSTD_isError(got) || got != e->raw_len)
		return 0;
	*data = pb->rbuf;
	return 1;
}

/*
 * load_into() with the reader's own buffers; damage is reported once.
 */
static int load(struct prec_tfile_reader *r, struct entry *e, const void **data, bool check_only)
{
	enum prec_tfile_damage_kind kind = PREC_TFILE_DMG_CHECKSUM;
	int k = load_into(r, e, &r->pb, data, &kind, check_only);

	if (k)
		return k;
	if (!e->reported) {
		e->reported = true;
		r->pl_damaged++;
		r->pl_damaged_bytes += PREC_TFILE_CHUNK_HDR_SIZE + e->stored_len;
		report(r, kind, e->off, kind == PREC_TFILE_DMG_CHECKSUM ||
				kind == PREC_TFILE_DMG_DECOMPRESS ? e->raw_len : e->stored_len, e);
	}
	return 0;
}

void prec_tfile_pbuf_fini(struct prec_tfile_pbuf *pb)
{
	if (!pb)
		return;
	free(pb->sbuf);
	free(pb->rbuf);
	ZSTD_freeDCtx(pb->dctx);
	memset(pb, 0, sizeof(*pb));
}

int prec_tfile_payload_at(struct prec_tfile_reader *r, uint64_t file_off,
			  struct prec_tfile_pbuf *pb, const void **data, size_t *len)
{
	enum prec_tfile_damage_kind bad;
	size_t lo = 0, hi;
	int k;

	if (!r || !pb || !data || !len || !r->indexed)
		return -EINVAL;
	hi = r->nent;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->ent[mid].off < file_off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo >= r->nent || r->ent[lo].off != file_off)
		return -ENOENT;
	k = load_into(r, &r->ent[lo], pb, data, &bad, false);
	if (k < 0)
		return k;
	if (!k)
		return -EIO;	/* good when the file was read, damaged now */
	*len = r->ent[lo].raw_len;
	return 0;
}

/* ---- open ---- */

static int hdr_err(struct prec_diag *diag, int code, long pos, const char *hint, const char *fmt,
		   ...) prec_printf(5, 6);

static int hdr_err(struct prec_diag *diag, int code, long pos, const char *hint, const char *fmt,
		   ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	prec_diag_set(diag, code, pos, "%s", msg);
	if (hint)
		prec_diag_hint(diag, "%s", hint);
	return code;
}

static int read_fhdr(struct prec_tfile_reader *r, struct prec_diag *diag)
{
	uint8_t h[PREC_TFILE_HDR_SIZE] = { 0 };
	size_t n = (size_t)PREC_MIN(r->size, (uint64_t)sizeof(h));
	long got;
	uint16_t ver, hs;

	if (!r->size)
		return hdr_err(diag, -PREC_E_TRUNCATED, 0, NULL,
			       "the file is empty (the recording ended before it wrote anything)");
	got = src_read(r, 0, h, n);
	if (got < 0)
		return (int)got;
	if (memcmp(h, PREC_TFILE_MAGIC, PREC_MIN(n, (size_t)PREC_TFILE_MAGIC_LEN))) {
		if (n >= 8 && !memcmp(h, "PERFILE2", 8))
			return hdr_err(diag, -PREC_E_FORMAT, 0,
				       "this is a perf.data file: open it as perf data",
				       "not a ptrec trace file");
		return hdr_err(diag, -PREC_E_FORMAT, 0, NULL,
			       "not a ptrec trace file (no ptrec magic at the start)");
	}
	if (n < PREC_TFILE_HDR_SIZE)
		return hdr_err(diag, -PREC_E_TRUNCATED, (long)n, NULL,
			       "the file ends inside its %d-byte header (%zu bytes)",
			       PREC_TFILE_HDR_SIZE, n);
	ver = rd16(h + 8);
	hs = rd16(h + 10);
	if (ver > PREC_TFILE_VERSION)
		return hdr_err(diag, -PREC_E_VERSION, 8, "use a newer ptrec to read it",
			       "the file has format version %u; this ptrec reads version %d",
			       ver, PREC_TFILE_VERSION);
	if (!CRC_OK(rd32(h + 28), prec_crc32c(0, h, 28)))
		return hdr_err(diag, -PREC_E_FORMAT, 28, NULL,
			       "the file header is damaged (checksum mismatch)");
	if (ver == 0 || hs < PREC_TFILE_HDR_SIZE || hs % PREC_TFILE_ALIGN)
		return hdr_err(diag, -PREC_E_FORMAT, 8, NULL,
			       "the file header is invalid (version %u, header size %u)", ver, hs);
	if (hs > r->size)
		return hdr_err(diag, -PREC_E_TRUNCATED, (long)r->size, NULL,
			       "the file ends inside its %u-byte header", hs);
	r->fh.version = ver;
	r->fh.header_size = hs;
	r->fh.flags = rd32(h + 12);
	r->fh.created_ns = rd64(h + 16);
	return 0;
}

static int reader_alloc(const struct prec_tfile_ropts *o, struct prec_tfile_reader **out)
{
	struct prec_tfile_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->fd = -1;
	if (o)
		r->o = *o;
	*out = r;
	return 0;
}

int prec_tfile_reader_new_mem(const void *p, size_t len, const struct prec_tfile_ropts *o,
			      struct prec_tfile_reader **out, struct prec_diag *diag)
{
	struct prec_tfile_reader *r;
	int err;

	if (!out || (len && !p))
		return -EINVAL;
	*out = NULL;
	err = reader_alloc(o, &r);
	if (err)
		return err;
	r->mem = p ? p : (const uint8_t *)"";
	r->size = len;
	err = read_fhdr(r, diag);
	if (err) {
		prec_tfile_reader_free(r);
		return err;
	}
	*out = r;
	return 0;
}

static int slurp(int fd, uint8_t **out, size_t *len)
{
	struct prec_buf b = { 0 };
	char tmp[65536];

	for (;;) {
		ssize_t n = read(fd, tmp, sizeof(tmp));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			prec_buf_free(&b);
			return -errno;
		}
		if (!n)
			break;
		if (prec_buf_append(&b, tmp, (size_t)n)) {
			prec_buf_free(&b);
			return -ENOMEM;
		}
	}
	*out = (uint8_t *)b.data;
	*len = b.len;
	return 0;
}

int prec_tfile_reader_new(const char *path, const struct prec_tfile_ropts *o,
			  struct prec_tfile_reader **out, struct prec_diag *diag)
{
	struct prec_tfile_reader *r = NULL;
	struct stat sb;
	int err;

	if (!out || !path)
		return -EINVAL;
	*out = NULL;
	err = reader_alloc(o, &r);
	if (err)
		return err;
	/* "-": standard input (a pipe is read whole first, below). */
	r->fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : fcntl(0, F_DUPFD_CLOEXEC, 0);
	if (r->fd < 0) {
		err = -errno;
		prec_diag_set(diag, err, -1, "cannot open %s: %s", path, prec_strerror(err));
		goto out;
	}
	if (fstat(r->fd, &sb) < 0) {
		err = -errno;
		goto out;
	}
	if (S_ISDIR(sb.st_mode)) {
		err = -EISDIR;
		prec_diag_set(diag, err, -1, "%s is a directory, not a trace file", path);
		goto out;
	}
	if (S_ISREG(sb.st_mode)) {
		r->size = (uint64_t)sb.st_size;
	} else {
		size_t len = 0;

		err = slurp(r->fd, &r->own_mem, &len);
		if (err)
			goto out;
		r->mem = r->own_mem ? r->own_mem : (const uint8_t *)"";
		r->size = len;
	}
	err = read_fhdr(r, diag);
out:
	if (err) {
		prec_tfile_reader_free(r);
		return err;
	}
	*out = r;
	return 0;
}

void prec_tfile_reader_free(struct prec_tfile_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	free(r->own_mem);
	free(r->ent);
	prec_tfile_pbuf_fini(&r->pb);
	free(r);
}

const struct prec_tfile_fhdr *prec_tfile_file_header(const struct prec_tfile_reader *r)
{
	return r ? &r->fh : NULL;
}

/* ---- iteration ---- */

int prec_tfile_next(struct prec_tfile_reader *r, struct prec_tfile_chunk *c)
{
	int err;

	if (!r || !c)
		return -EINVAL;
	err = build_index(r);
	if (err)
		return err;
	while (r->it < r->nent) {
		struct entry *e = &r->ent[r->it++];
		const void *data;
		int k;

		if (!known_type(e->type) && !r->o.want_unknown)
			continue;
		k = load(r, e, &data, e->type < 32 && (r->check_only >> e->type & 1));
		if (k < 0)
			return k;
		if (!k)
			continue;
		c->file_off = e->off;
		c->type = e->type;
		c->flags = e->flags;
		c->cpu = e->cpu;
		c->tid = e->tid;
		c->arg = e->arg;
		c->stored_len = e->stored_len;
		c->data = data;
		c->len = e->raw_len;
		return 1;
	}
	return 0;
}

void prec_tfile_check_only(struct prec_tfile_reader *r, unsigned types)
{
	if (r)
		r->check_only = types;
}

void prec_tfile_rewind(struct prec_tfile_reader *r)
{
	if (r)
		r->it = 0;
}

int prec_tfile_status(struct prec_tfile_reader *r, struct prec_tfile_status *st)
{
	int err;

	if (!r || !st)
		return -EINVAL;
	err = build_index(r);
	if (err)
		return err;
	*st = r->st;
	st->damaged += r->pl_damaged;
	st->damaged_bytes += r->pl_damaged_bytes;
	return 0;
}

/* ---- convenience ---- */

typedef int (*decode_fn)(const void *p, size_t len, void **out);

static int read_first(struct prec_tfile_reader *r, unsigned type, decode_fn fn, void **out)
{
	size_t i;
	int err;

	if (!r || !out)
		return -EINVAL;
	*out = NULL;
	err = build_index(r);
	if (err)
		return err;
	for (i = 0; i < r->nent; i++) {
		const void *d;
		int k;

		if (r->ent[i].type != type)
			continue;
		k = load(r, &r->ent[i], &d, false);
		if (k < 0)
			return k;
		if (k)
			return fn(d, r->ent[i].raw_len, out);
	}
	return -ENOENT;
}

static int dec_info(const void *p, size_t len, void **out)
{
	return prec_tfile_info_decode(p, len, (struct prec_tfile_info **)out);
}

static int dec_machine(const void *p, size_t len, void **out)
{
	return prec_tfile_machine_decode(p, len, (struct prec_tfile_machine **)out);
}

static int dec_events(const void *p, size_t len, void **out)
{
	return prec_tfile_events_decode(p, len, (struct prec_tfile_events **)out);
}

static int dec_stats(const void *p, size_t len, void **out)
{
	return prec_tfile_stats_decode(p, len, (struct prec_tfile_stats **)out);
}

int prec_tfile_read_info(struct prec_tfile_reader *r, struct prec_tfile_info **out)
{
	return read_first(r, PREC_TFILE_INFO, dec_info, (void **)out);
}

int prec_tfile_read_machine(struct prec_tfile_reader *r, struct prec_tfile_machine **out)
{
	return read_first(r, PREC_TFILE_MACHINE, dec_machine, (void **)out);
}

int prec_tfile_read_events(struct prec_tfile_reader *r, struct prec_tfile_events **out)
{
	return read_first(r, PREC_TFILE_EVENTS, dec_events, (void **)out);
}

int prec_tfile_read_stats(struct prec_tfile_reader *r, struct prec_tfile_stats **out)
{
	return read_first(r, PREC_TFILE_STATS, dec_stats, (void **)out);
}

static int key_cmp(int32_t ac, int32_t at, int32_t bc, int32_t bt)
{
	if (ac != bc)
		return ac < bc ? -1 : 1;
	if (at != bt)
		return at < bt ? -1 : 1;
	return 0;
}

static int cmp_entp_key(const void *a, const void *b)
{
	const struct entry *x = *(const struct entry *const *)a,
			   *y = *(const struct entry *const *)b;
	int k = key_cmp(x->cpu, x->tid, y->cpu, y->tid);

	if (k)
		return k;
	return x->off < y->off ? -1 : x->off > y->off;
}

int prec_tfile_streams(struct prec_tfile_reader *r, struct prec_tfile_stream_key **keys, size_t *n)
{
	struct prec_tfile_stream_key *k = NULL;
	struct entry **v = NULL;
	size_t i, nv = 0, nk = 0;
	int err;

	if (!r || !keys || !n)
		return -EINVAL;
	*keys = NULL;
	*n = 0;
	err = build_index(r);
	if (err)
		return err;
	v = malloc((r->nent + 1) * sizeof(*v));
	k = malloc((r->nent + 1) * sizeof(*k));
	if (!v || !k) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < r->nent; i++)
		if (r->ent[i].type == PREC_TFILE_AUX)
			v[nv++] = &r->ent[i];
	qsort(v, nv, sizeof(*v), cmp_entp_key);
	for (i = 0; i < nv; i++) {
		if (!nk || key_cmp(k[nk - 1].cpu, k[nk - 1].tid, v[i]->cpu, v[i]->tid)) {
			k[nk].cpu = v[i]->cpu;
			k[nk].tid = v[i]->tid;
			k[nk].bytes = 0;
			k[nk].chunks = 0;
			nk++;
		}
		k[nk - 1].bytes += v[i]->raw_len;
		k[nk - 1].chunks++;
	}
	*keys = k;
	*n = nk;
	k = NULL;
out:
	free(v);
	free(k);
	return err;
}

static int cmp_entp_arg(const void *a, const void *b)
{
	const struct entry *x = *(const struct entry *const *)a,
			   *y = *(const struct entry *const *)b;

	if (x->arg != y->arg)
		return x->arg < y->arg ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

void prec_tfile_aux_free(struct prec_tfile_aux *a)
{
	if (!a)
		return;
	free(a->data);
	free(a->runs);
	free(a);
}

int prec_tfile_gather_aux(struct prec_tfile_reader *r, int32_t cpu, int32_t tid,
			  struct prec_tfile_aux **out)
{
	struct prec_tfile_aux *a = NULL;
	struct entry **v = NULL;
	size_t i, nv = 0, cap = 0, rcap = 0;
	uint64_t end = 0;
	int err;

	if (!r || !out)
		return -EINVAL;
	*out = NULL;
	err = build_index(r);
	if (err)
		return err;
	v = malloc((r->nent + 1) * sizeof(*v));
	a = calloc(1, sizeof(*a));
	if (!v || !a) {
		err = -ENOMEM;
		goto out;
	}
	a->cpu = cpu;
	a->tid = tid;
	for (i = 0; i < r->nent; i++)
		if (r->ent[i].type == PREC_TFILE_AUX && r->ent[i].cpu == cpu &&
		    r->ent[i].tid == tid)
			v[nv++] = &r->ent[i];
	if (!nv) {
		err = -ENOENT;
		goto out;
	}
	qsort(v, nv, sizeof(*v), cmp_entp_arg);
	for (i = 0; i < nv; i++) {
		struct entry *e = v[i];
		const uint8_t *d;
		uint64_t skip = 0;
		size_t n;
		int k;

		k = load(r, e, (const void **)&d, false);
		if (k < 0) {
			err = k;
			goto out;
		}
		if (!k) {
			a->damaged_pieces++;
			continue;
		}
		if (!e->raw_len)
			continue;
		if (e->arg > UINT64_MAX - e->raw_len) {
			a->damaged_pieces++;	/* an offset no stream can reach */
			continue;
		}
		if (a->n_runs && e->arg < end) {
			if (e->arg + e->raw_len <= end)
				continue;	/* wholly seen already */
			skip = end - e->arg;
		}
		n = e->raw_len - (size_t)skip;
		if (!a->n_runs || e->arg + skip != end) {
			if (a->n_runs == rcap) {
				size_t nc = rcap ? rcap * 2 : 8;
				struct prec_tfile_aux_run *nr = realloc(a->runs, nc * sizeof(*nr));

				if (!nr) {
					err = -ENOMEM;
					goto out;
				}
				a->runs = nr;
				rcap = nc;
			}
			if (a->n_runs)
				a->missing_bytes += e->arg - end;
			a->runs[a->n_runs].stream_off = e->arg;
			a->runs[a->n_runs].buf_off = a->len;
			a->runs[a->n_runs].len = 0;
			a->n_runs++;
		}
		if (a->len + n > cap) {
			size_t nc = cap ? cap : 1 << 16;
			uint8_t *nd;

			while (nc < a->len + n)
				nc *= 2;
			nd = realloc(a->data, nc);
			if (!nd) {
				err = -ENOMEM;
				goto out;
			}
			a->data = nd;
			cap = nc;
		}
		memcpy(a->data + a->len, d + skip, n);
		a->len += n;
		a->runs[a->n_runs - 1].len += n;
		end = e->arg + e->raw_len;
	}
	*out = a;
	a = NULL;
out:
	free(v);
	prec_tfile_aux_free(a);
	return err;
}

// SPDX-License-Identifier: MIT
/*
 * Part files of ptdump --shard / --merge (shard.h): writing, and loading
 * with every check a file from another trace, plan, build or a damaged
 * copy fails (the merge trusts the events of a part it takes).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "base/array.h"
#include "base/util.h"
#include "decoders/decoder.h"
#include "decoders/shard.h"
#include "session/session.h"

#define SHARD_MAGIC "PTRSHARD"
#define SHARD_END "PTRSEND"
#define SHARD_VERSION 3
#define SHARD_ORDER 0x01020304u   /* reads back otherwise on another byte order */

#ifndef PTREC_VERSION
#define PTREC_VERSION "0.1.0"
#endif

struct shard_head {
	char magic[8];
	uint32_t version, order;
	char build[64];           /* ptdump's version and build id: events are this build's */
	uint32_t k, n;
	uint64_t trace_size;
	uint32_t trace_crc, tev_size;
	uint64_t window;
	uint32_t streams_crc, pad;
};

/* A part's fixed fields as stored (the events follow). */
struct shard_rec {
	uint32_t stream, index, kind, decoded;
	int32_t err;
	uint32_t pad;
	uint64_t seg, lo, hi;
	uint64_t entry[PREC_CARRY_WORDS], exit[PREC_CARRY_WORDS];
	uint64_t nev, nfull;
	uint64_t zlen;            /* the events' zstd frame that follows */
};

struct shard_tail {
	char magic[8];
	uint64_t nparts;
	uint32_t crc, pad;
};

/* The GNU build id note of the program itself (the first object dl_iterate_phdr() lists). */
static int own_build_id(struct dl_phdr_info *info, size_t size, void *arg)
{
	char *hex = arg;
	int i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;

		if (ph->p_type != PT_NOTE)
			continue;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)(const void *)p;
			const uint8_t *desc = p + sizeof(*n) + ((n->n_namesz + 3) & ~3u);

			if (desc + n->n_descsz > end)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    !memcmp(p + sizeof(*n), "GNU", 4) && n->n_descsz <= 20) {
				for (uint32_t k = 0; k < n->n_descsz; k++)
					sprintf(hex + 2 * k, "%02x", desc[k]);
				return 1;
			}
			p = desc + ((n->n_descsz + 3) & ~3u);
		}
	}
	return 1; /* only the program itself */
}

/*
 * What a part file is tied to: the version, and the build id of this
 * program where it has one, so that two builds of one version (whose
 * events may differ) never mix.
 */
static const char *build_name(void)
{
	static char name[64];

	if (!name[0]) {
		char hex[41] = "";

		dl_iterate_phdr(own_build_id, hex);
		snprintf(name, sizeof(name), "%s%s%s", PTREC_VERSION, hex[0] ? " " : "", hex);
	}
	return name;
}

struct shard_file {
	const char *path;
	void *map;
	size_t size;
	struct shard_head h;
};

struct prec_shards {
	struct shard_file *files;
	size_t nfiles;
	struct prec_shard_part *parts;  /* sorted by stream, index */
	size_t nparts;
	uint64_t taken, redone;
};

int prec_shard_file_id(const char *path, struct prec_shard_plan *plan, struct prec_diag *d)
{
	static uint8_t buf[1 << 16];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint32_t crc = 0;
	ssize_t r = 0;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int e = fd < 0 ? errno : EINVAL;

		if (fd >= 0)
			close(fd);
		return prec_diag_set(d, -e, -1, "%s: %s", path,
				     e == EINVAL ? "not a regular file (shards need a trace file)"
						 : strerror(e));
	}
	plan->trace_size = 0;
	while ((r = read(fd, buf, sizeof(buf))) > 0) {
		crc = prec_crc32c(crc, buf, (size_t)r);
		plan->trace_size += (uint64_t)r;
	}
	close(fd);
	if (r < 0)
		return prec_diag_set(d, -errno, -1, "%s: %s", path, strerror(errno));
	plan->trace_crc = crc;
	return 0;
}

uint32_t prec_shard_streams_id(const struct prec_session *s)
{
	size_t i, n = prec_session_nr_streams(s);
	uint32_t crc = prec_crc32c(0, &n, sizeof(n));

	for (i = 0; i < n; i++) {
		const struct prec_stream *st = prec_session_stream(s, i);
		uint64_t v[7] = { st->len, st->nr_refs, (uint64_t)(int64_t)st->cpu,
				  (uint64_t)(int64_t)st->tid, st->base, st->lost, st->nr_gaps };

		crc = prec_crc32c(crc, v, sizeof(v));
	}
	return crc;
}

static void out_write(struct prec_shard_out *o, const void *p, size_t n)
{
	if (o->err)
		return;
	o->crc = prec_crc32c(o->crc, p, n);
	if (n && fwrite(p, 1, n, o->f) != n)
		o->err = errno ? -errno : -EIO;
}

void prec_shard_out_begin(struct prec_shard_out *o, FILE *f, const struct prec_shard_plan *plan,
			  uint32_t k)
{
	struct shard_head h;

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, SHARD_MAGIC, 8);
	h.version = SHARD_VERSION;
	h.order = SHARD_ORDER;
	snprintf(h.build, sizeof(h.build), "%s", build_name());
	h.k = k;
	h.n = plan->n;
	h.trace_size = plan->trace_size;
	h.trace_crc = plan->trace_crc;
	h.tev_size = (uint32_t)sizeof(struct prec_tev);
	h.window = plan->window;
	h.streams_crc = plan->streams_crc;
	o->f = f;
	o->crc = 0;
	o->nparts = 0;
	o->err = 0;
	out_write(o, &h, sizeof(h));
}

/* The events of @p in one zstd frame: ev, padded to 8 bytes, then full. */
static void *part_pack(const struct prec_shard_part *p, size_t *zlen)
{
	size_t evpad = p->nev + (8 - p->nev % 8) % 8, raw = evpad + p->nfull * sizeof(struct prec_tev);
	uint8_t *src = calloc(1, raw + 1);
	void *z = malloc(ZSTD_compressBound(raw));

	if (src && z) {
		/* an undecoded part has no buffers at all */
		if (p->nev)
			memcpy(src, p->ev, p->nev);
		if (p->nfull)
			memcpy(src + evpad, p->full, p->nfull * sizeof(struct prec_tev));
		*zlen = ZSTD_compress(z, ZSTD_compressBound(raw), src, raw, 1);
	}
	free(src);
	if (!src || !z || ZSTD_isError(*zlen)) {
		free(z);
		return NULL;
	}
	return z;
}

void prec_shard_out_part(struct prec_shard_out *o, const struct prec_shard_part *p)
{
	struct shard_rec r;
	size_t zlen = 0;
	void *z = part_pack(p, &zlen);

	if (!z && !o->err)
		o->err = -ENOMEM;
	memset(&r, 0, sizeof(r));
	r.stream = p->stream, r.index = p->index, r.kind = p->kind;
	r.decoded = p->decoded, r.err = p->err;
	r.seg = p->seg, r.lo = p->lo, r.hi = p->hi;
	memcpy(r.entry, p->entry, sizeof(r.entry));
	memcpy(r.exit, p->exit, sizeof(r.exit));
	r.nev = p->nev, r.nfull = p->nfull, r.zlen = zlen;
	out_write(o, &r, sizeof(r));
	out_write(o, z, zlen);
	out_write(o, "\0\0\0\0\0\0\0", (8 - zlen % 8) % 8);
	free(z);
	o->nparts++;
}

int prec_shard_out_end(struct prec_shard_out *o)
{
	struct shard_tail t;

	memset(&t, 0, sizeof(t));
	memcpy(t.magic, SHARD_END, sizeof(SHARD_END));
	t.nparts = o->nparts;
	out_write(o, &t, offsetof(struct shard_tail, crc));
	t.crc = o->crc;
	if (!o->err && fwrite(&t.crc, 1, sizeof(t) - offsetof(struct shard_tail, crc), o->f) !=
			       sizeof(t) - offsetof(struct shard_tail, crc))
		o->err = errno ? -errno : -EIO;
	if (!o->err && fflush(o->f))
		o->err = errno ? -errno : -EIO;
	return o->err;
}

/* Maps part file @f->path and checks its header and checksum. */
static int file_open(struct shard_file *f, struct prec_diag *d)
{
	int fd = open(f->path, O_RDONLY | O_CLOEXEC);
	struct shard_tail t;
	struct stat st;

	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		return prec_diag_set(d, -e, -1, "%s: %s", f->path, strerror(e));
	}
	if (!S_ISREG(st.st_mode) || (size_t)st.st_size < sizeof(f->h) + sizeof(t)) {
		close(fd);
		return prec_diag_set(d, -EINVAL, -1, "%s: not a part file of ptdump --shard%s",
				     f->path, S_ISREG(st.st_mode) && st.st_size > 8 ?
				     " (or cut short)" : "");
	}
	f->size = (size_t)st.st_size;
	f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (f->map == MAP_FAILED) {
		f->map = NULL;
		return prec_diag_set(d, -errno, -1, "%s: %s", f->path, strerror(errno));
	}
	memcpy(&f->h, f->map, sizeof(f->h));
	if (memcmp(f->h.magic, SHARD_MAGIC, 8))
		return prec_diag_set(d, -EINVAL, -1, "%s: not a part file of ptdump --shard",
				     f->path);
	if (f->h.order != SHARD_ORDER || f->h.version != SHARD_VERSION ||
	    f->h.tev_size != sizeof(struct prec_tev) || f->h.build[sizeof(f->h.build) - 1] ||
	    strcmp(f->h.build, build_name()))
		return prec_diag_set(d, -EINVAL, -1, "%s: written by another ptdump (%.63s, part "
				     "file version %u); shard and merge with the same one",
				     f->path, f->h.build, f->h.version);
	memcpy(&t, (const uint8_t *)f->map + f->size - sizeof(t), sizeof(t));
	if (memcmp(t.magic, SHARD_END, sizeof(SHARD_END)) ||
	    prec_crc32c(0, f->map, f->size - sizeof(t) + offsetof(struct shard_tail, crc)) != t.crc)
		return prec_diag_set(d, -EINVAL, -1, "%s: damaged or cut short (its checksum "
				     "does not match): write it again with --shard %u/%u",
				     f->path, f->h.k, f->h.n);
	return 0;
}

/* Adds the parts of checked file @f to @sh. */
static int file_parts(struct prec_shards *sh, const struct shard_file *f, struct prec_diag *d)
{
	const uint8_t *p = (const uint8_t *)f->map + sizeof(f->h);
	const uint8_t *end = (const uint8_t *)f->map + f->size - sizeof(struct shard_tail);
	struct shard_tail t;
	uint64_t i;

	memcpy(&t, end, sizeof(t));
	for (i = 0; i < t.nparts; i++) {
		struct prec_shard_part *q;
		struct shard_rec r;
		uint64_t zpad;

		if ((size_t)(end - p) < sizeof(r))
			break;
		memcpy(&r, p, sizeof(r));
		p += sizeof(r);
		zpad = r.zlen + (8 - r.zlen % 8) % 8;
		/* sizes no part has (and whose sums would wrap) */
		if (r.zlen > (uint64_t)(end - p) || zpad > (uint64_t)(end - p) ||
		    r.nev >> 40 || r.nfull >> 32)
			break;
		if (PREC_ARRAY_RESERVE(sh->parts, sh->nparts, 1))
			return prec_diag_set(d, -ENOMEM, -1, "out of memory");
		q = &sh->parts[sh->nparts++];
		q->stream = r.stream, q->index = r.index, q->kind = r.kind;
		q->decoded = r.decoded, q->err = r.err;
		q->seg = r.seg, q->lo = r.lo, q->hi = r.hi;
		memcpy(q->entry, r.entry, sizeof(r.entry));
		memcpy(q->exit, r.exit, sizeof(r.exit));
		q->nev = r.nev, q->nfull = r.nfull;
		q->z = p, q->zlen = r.zlen;
		p += zpad;
	}
	if (i < t.nparts || p != end)
		return prec_diag_set(d, -EINVAL, -1, "%s: damaged (its parts do not add up)",
				     f->path);
	return 0;
}

static int part_cmp(const void *a, const void *b)
{
	const struct prec_shard_part *x = a, *y = b;

	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* The shard numbers 1..n: each once, and all of them. */
static int check_set(const struct prec_shards *sh, uint32_t n, struct prec_diag *d)
{
	const char **by_k = calloc(n + 1, sizeof(*by_k));
	char missing[200] = "";
	size_t i, len = 0, nmiss = 0;
	int err = 0;

	if (!by_k)
		return prec_diag_set(d, -ENOMEM, -1, "out of memory");
	for (i = 0; i < sh->nfiles && !err; i++) {
		const struct shard_file *f = &sh->files[i];

		if (by_k[f->h.k])
			err = prec_diag_set(d, -EINVAL, -1, "shard %u/%u given twice: %s and %s",
					    f->h.k, n, by_k[f->h.k], f->path);
		by_k[f->h.k] = f->path;
	}
	for (uint32_t k = 1; k <= n && !err; k++) {
		if (by_k[k])
			continue;
		if (nmiss++ < 8 && len < sizeof(missing) - 16)
			len += (size_t)snprintf(missing + len, sizeof(missing) - len, "%s%u/%u",
						len ? ", " : "", k, n);
	}
	if (!err && nmiss)
		err = prec_diag_set(d, -EINVAL, -1, "%zu of %u shards missing: %s%s", nmiss, n,
				    missing, nmiss > 8 ? ", ..." : "");
	free(by_k);
	return err;
}

/* File @f against the first one and the plan wanted. */
static int check_file(const struct shard_file *f, const struct shard_file *first,
		      const struct prec_shard_plan *want, struct prec_diag *d)
{
	const struct shard_head *h = &f->h;

	if (h->trace_size != want->trace_size || h->trace_crc != want->trace_crc)
		return prec_diag_set(d, -EINVAL, -1, "%s: a part of another trace file "
				     "(%" PRIu64 " bytes, CRC-32C %08x; this one: %" PRIu64
				     " bytes, %08x)", f->path, h->trace_size, h->trace_crc,
				     want->trace_size, want->trace_crc);
	if (h->window != want->window)
		return prec_diag_set(d, -EINVAL, -1, "%s: cut for --buffer %" PRIu64 " bytes, "
				     "not %" PRIu64 " (0: the default): give --merge the same "
				     "--buffer as --shard", f->path, h->window, want->window);
	if (h->streams_crc != want->streams_crc)
		return prec_diag_set(d, -EINVAL, -1, "%s: cut from other streams of this trace "
				     "(give --merge the --snapshot-index that --shard had)", f->path);
	if (!h->n || h->k < 1 || h->k > h->n)
		return prec_diag_set(d, -EINVAL, -1, "%s: damaged (shard %u of %u)", f->path,
				     h->k, h->n);
	if (h->n != first->h.n)
		return prec_diag_set(d, -EINVAL, -1, "%s is shard %u/%u, %s shard %u/%u: parts "
				     "of one decode have the same N", f->path, h->k, h->n,
				     first->path, first->h.k, first->h.n);
	return 0;
}

int prec_shards_load(const char *const *paths, size_t n, const struct prec_shard_plan *want,
		     struct prec_shards **out, struct prec_diag *d)
{
	struct prec_shards *sh = calloc(1, sizeof(*sh));
	int err = 0;
	size_t i;

	*out = NULL;
	if (!sh || !(sh->files = calloc(n ? n : 1, sizeof(*sh->files)))) {
		free(sh);
		return prec_diag_set(d, -ENOMEM, -1, "out of memory");
	}
	for (i = 0; i < n && !err; i++) {
		sh->files[i].path = paths[i];
		sh->nfiles++;
		err = file_open(&sh->files[i], d);
		if (!err)
			err = check_file(&sh->files[i], &sh->files[0], want, d);
		if (!err)
			err = file_parts(sh, &sh->files[i], d);
	}
	if (!err && !n)
		err = prec_diag_set(d, -EINVAL, -1, "--merge takes the trace file and its parts");
	if (!err)
		err = check_set(sh, sh->files[0].h.n, d);
	if (!err && sh->nparts)
		qsort(sh->parts, sh->nparts, sizeof(*sh->parts), part_cmp);
	for (i = 1; !err && i < sh->nparts; i++)
		if (!part_cmp(&sh->parts[i - 1], &sh->parts[i]))
			err = prec_diag_set(d, -EINVAL, -1, "part %u of stream %u is in two shards: "
					    "not parts of one decode", sh->parts[i].index,
					    sh->parts[i].stream);
	if (err) {
		prec_shards_free(sh);
		return err;
	}
	*out = sh;
	return 0;
}

uint32_t prec_shards_n(const struct prec_shards *sh)
{
	return (uint32_t)sh->nfiles;
}

void prec_shards_free(struct prec_shards *sh)
{
	if (!sh)
		return;
	for (size_t i = 0; i < sh->nfiles; i++)
		if (sh->files[i].map)
			munmap(sh->files[i].map, sh->files[i].size);
	free(sh->files);
	free(sh->parts);
	free(sh);
}

const struct prec_shard_part *prec_shards_find(const struct prec_shards *sh, uint32_t stream,
					       uint32_t index)
{
	struct prec_shard_part key = { .stream = stream, .index = index };

	if (!sh->nparts)
		return NULL;
	return bsearch(&key, sh->parts, sh->nparts, sizeof(key), part_cmp);
}

void prec_shards_count(struct prec_shards *sh, bool taken)
{
	if (taken)
		sh->taken++;
	else
		sh->redone++;
}

void prec_shards_counts(const struct prec_shards *sh, uint64_t *taken, uint64_t *redone)
{
	*taken = sh->taken;
	*redone = sh->redone;
}

int prec_shard_part_read(const struct prec_shard_part *p, uint8_t *ev, void *full)
{
	size_t evpad = p->nev + (8 - p->nev % 8) % 8, raw = evpad + p->nfull * sizeof(struct prec_tev);
	uint8_t *buf = malloc(raw + 1);
	size_t got;

	if (!buf)
		return -ENOMEM;
	got = ZSTD_decompress(buf, raw + 1, p->z, p->zlen);
	if (ZSTD_isError(got) || got != raw) {
		free(buf);
		return -EINVAL;
	}
	memcpy(ev, buf, p->nev);
	memcpy(full, buf + evpad, p->nfull * sizeof(struct prec_tev));
	free(buf);
	return 0;
}

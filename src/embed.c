// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "embed.h"
#include "symtab.h"
#include "tfile.h"
#include "util.h"

#ifndef PERF_RECORD_MISC_MMAP_BUILD_ID
#define PERF_RECORD_MISC_MMAP_BUILD_ID (1 << 14)
#endif

#define PREC_EMBED_WHOLE_MAX (64 << 20)

struct mapping {
	char *path;
	uint64_t addr, len, pgoff;
	uint8_t build_id[PREC_TFILE_BUILD_ID_MAX];
	uint32_t build_id_size;
};

struct prec_mapset {
	struct mapping *m;
	size_t n, cap;
};

struct prec_mapset *prec_mapset_new(void)
{
	return calloc(1, sizeof(struct prec_mapset));
}

void prec_mapset_free(struct prec_mapset *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++)
		free(s->m[i].path);
	free(s->m);
	free(s);
}

size_t prec_mapset_count(const struct prec_mapset *s)
{
	return s->n;
}

static bool same(const struct mapping *a, const struct mapping *b)
{
	if (a->pgoff != b->pgoff || a->len != b->len)
		return false;
	if (a->build_id_size && b->build_id_size)
		return a->build_id_size == b->build_id_size &&
		       !memcmp(a->build_id, b->build_id, a->build_id_size);
	return !strcmp(a->path, b->path);
}

static int add(struct prec_mapset *s, const struct mapping *nm)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (same(&s->m[i], nm))
			return 0;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 32;
		struct mapping *m = realloc(s->m, cap * sizeof(*m));

		if (!m)
			return -ENOMEM;
		s->m = m;
		s->cap = cap;
	}
	s->m[s->n] = *nm;
	s->m[s->n].path = strdup(nm->path);
	if (!s->m[s->n].path)
		return -ENOMEM;
	s->n++;
	return 0;
}

int prec_mapset_note(struct prec_mapset *s, const void *rec, size_t size)
{
	const struct perf_event_header *h = rec;
	const unsigned char *p = rec;
	struct mapping m;
	size_t fn_off, maxlen;
	uint32_t prot;

	if (size < sizeof(*h) || h->size > size)
		return 0;
	if (h->type == PERF_RECORD_MMAP2) {
		/* header, pid, tid, addr, len, pgoff, {maj,min,ino,gen | build id}, prot, flags */
		if (h->size < 8 + 8 + 24 + 24 + 8 + 1)
			return 0;
		fn_off = 8 + 8 + 24 + 24 + 8;
		memcpy(&prot, p + 8 + 8 + 24 + 24, 4);
		if (!(prot & PROT_EXEC))
			return 0;
	} else if (h->type == PERF_RECORD_MMAP) {
		if (h->size < 8 + 8 + 24 + 1 || (h->misc & PERF_RECORD_MISC_MMAP_DATA))
			return 0;
		fn_off = 8 + 8 + 24;
	} else {
		return 0;
	}
	if ((h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL)
		return 0;
	memset(&m, 0, sizeof(m));
	memcpy(&m.addr, p + 16, 8);
	memcpy(&m.len, p + 24, 8);
	memcpy(&m.pgoff, p + 32, 8);
	if (h->type == PERF_RECORD_MMAP2 && (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) {
		m.build_id_size = p[40];
		if (m.build_id_size > PREC_TFILE_BUILD_ID_MAX)
			m.build_id_size = 0;
		memcpy(m.build_id, p + 44, m.build_id_size);
	}
	maxlen = h->size - fn_off;
	if (!memchr(p + fn_off, '\0', maxlen))
		return 0;
	m.path = (char *)(p + fn_off);
	/* Anonymous executable memory (JIT) and special mappings other than the vDSO have no file. */
	if (m.path[0] != '/' && strcmp(m.path, "[vdso]"))
		return 0;
	return add(s, &m);
}

/* This process's vDSO: the kernel maps the same image into every process. */
static int own_vdso(const void **p, size_t *n)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	FILE *f;
	char line[512];

	if (!base)
		return -ENOENT;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo == base) {
			fclose(f);
			*p = (const void *)base;
			*n = hi - lo;
			return 0;
		}
	}
	fclose(f);
	return -ENOENT;
}

static int read_range(const char *path, uint64_t off, uint64_t len, void **out, size_t *n)
{
	struct stat st;
	void *buf;
	long got;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto out;
	}
	if ((uint64_t)st.st_size <= off) {
		err = -ENODATA;
		goto out;
	}
	/* The mapping may extend past the end of the file (the last page). */
	len = PREC_MIN(len, (uint64_t)st.st_size - off);
	buf = malloc(len ? len : 1);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	if (lseek(fd, (off_t)off, SEEK_SET) < 0) {
		err = -errno;
		free(buf);
		goto out;
	}
	got = prec_read_full(fd, buf, len);
	if (got < 0) {
		err = (int)got;
		free(buf);
		goto out;
	}
	*out = buf;
	*n = (size_t)got;
out:
	close(fd);
	return err;
}

static void problem(struct prec_embed_result *res, const char *path, const char *why)
{
	if (!res->first_problem[0])
		snprintf(res->first_problem, sizeof(res->first_problem), "%s: %s", path, why);
}

int prec_mapset_embed(struct prec_mapset *s, struct prec_tfile_writer *w, bool refs_only,
		      struct prec_embed_result *res)
{
	size_t i;
	int err;

	memset(res, 0, sizeof(*res));
	for (i = 0; i < s->n; i++) {
		struct mapping *m = &s->m[i];
		struct prec_tfile_image img = {
			.path = m->path,
			.build_id_size = m->build_id_size,
			.file_offset = m->pgoff,
			.size = m->len,
			.vaddr = m->addr,
		};
		const void *bytes = NULL;
		void *owned = NULL;
		size_t n = 0;

		memcpy(img.build_id, m->build_id, m->build_id_size);
		if (!strcmp(m->path, "[vdso]")) {
			img.file_offset = 0;
			if (!refs_only && own_vdso(&bytes, &n) == 0)
				img.size = n;
		} else {
			uint8_t id[PREC_TFILE_BUILD_ID_MAX];
			int idn = prec_elf_build_id(m->path, id, sizeof(id));

			if (idn < 0 && idn != -PREC_E_FORMAT) {
				res->missing++;
				problem(res, m->path, prec_strerror(idn));
				continue;
			}
			if (m->build_id_size && idn > 0 &&
			    ((uint32_t)idn != m->build_id_size || memcmp(id, m->build_id, (size_t)idn))) {
				res->mismatched++;
				problem(res, m->path,
					"the file changed since it was mapped (build id differs); not embedded");
				continue;
			}
			if (!m->build_id_size && idn > 0) {
				memcpy(img.build_id, id, (size_t)idn);
				img.build_id_size = (uint32_t)idn;
			}
			if (!refs_only) {
				/*
				 * A whole ELF file up to this size, so its symbol tables
				 * (and line tables) travel with the trace; larger files give
				 * only the mapped range.
				 */
				struct stat st;

				if (!stat(m->path, &st) && st.st_size <= PREC_EMBED_WHOLE_MAX) {
					img.file_offset = 0;
					err = read_range(m->path, 0, (uint64_t)st.st_size, &owned, &n);
				} else {
					err = read_range(m->path, m->pgoff, m->len, &owned, &n);
				}
				if (err) {
					res->missing++;
					problem(res, m->path, prec_strerror(err));
					continue;
				}
				bytes = owned;
				img.size = n;
			}
		}
		if (refs_only || !bytes) {
			/* NULL bytes: the writer records a reference (path, build id, size). */
			err = prec_tfile_write_image(w, &img, NULL);
			if (err < 0)
				return err;
			res->references += err == 1;
			continue;
		}
		err = prec_tfile_write_image(w, &img, bytes);
		free(owned);
		if (err < 0)
			return err;
		if (err == 1) {
			res->embedded++;
			res->bytes += img.size;
		}
	}
	return 0;
}

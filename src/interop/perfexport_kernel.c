// SPDX-License-Identifier: MIT
/* The kernel's text and symbols as perf's kcore_dir: see perfexport_kernel.h. */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/array.h"
#include "base/util.h"
#include "interop/perfexport_kernel.h"
#include "tracefile/tfile.h"

/* One KCORE chunk, and where its bytes go in kcore. */
struct piece {
	uint64_t addr, len;
	uint64_t off;   /* file offset in kcore; 0: overlaps an earlier piece, left out */
};

struct seg {
	uint64_t addr, len, off;
};

static int cmp_piece(const void *a, const void *b)
{
	const struct piece *pa = a, *pb = b;

	return pa->addr < pb->addr ? -1 : pa->addr > pb->addr;
}

/* Pass 1: the KCORE pieces, and whether there is kallsyms text. */
static int scan(struct prec_tfile_reader *r, struct piece **pp, size_t *np, int *ksyms)
{
	struct prec_tfile_chunk c;
	int err;

	*ksyms = 0;
	prec_tfile_rewind(r);
	while ((err = prec_tfile_next(r, &c)) > 0) {
		if (c.type == PREC_TFILE_KSYMS && c.len)
			*ksyms = 1;
		if (c.type != PREC_TFILE_KCORE || !c.len || c.arg + c.len < c.arg)
			continue;
		if (PREC_ARRAY_RESERVE(*pp, *np, 1))
			return -ENOMEM;
		(*pp)[(*np)++] = (struct piece){ c.arg, c.len, 0 };
	}
	return err;
}

/*
 * The pieces in address order, merged into segments where they touch; each
 * piece gets its place in the file (after the ELF header and the program
 * headers). A piece that overlaps an earlier one (a damaged or hostile file)
 * is left out. Returns the number of segments.
 */
static size_t layout(struct piece *p, size_t n, struct seg *s)
{
	size_t i, ns = 0;
	uint64_t end = 0, off;

	qsort(p, n, sizeof(*p), cmp_piece);
	for (i = 0; i < n; i++) {
		if (ns && p[i].addr < end)
			continue;
		if (!ns || p[i].addr != end)
			s[ns++] = (struct seg){ p[i].addr, 0, 0 };
		s[ns - 1].len += p[i].len;
		end = p[i].addr + p[i].len;
		p[i].off = 1; /* placed below */
	}
	off = sizeof(Elf64_Ehdr) + ns * sizeof(Elf64_Phdr);
	for (i = 0; i < ns; i++) {
		s[i].off = off;
		off += s[i].len;
	}
	for (i = 0; i < n; i++) {
		size_t k;

		if (!p[i].off)
			continue;
		for (k = 0; k < ns && !(p[i].addr >= s[k].addr && p[i].addr < s[k].addr + s[k].len);
		     k++)
			;
		p[i].off = s[k].off + (p[i].addr - s[k].addr);
	}
	return ns;
}

/* The ELF header and program headers of kcore: a core file of PT_LOAD segments. */
static int write_headers(int fd, const struct seg *s, size_t ns)
{
	Elf64_Ehdr eh;
	size_t i;

	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_CORE;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = (Elf64_Half)ns;
	if (pwrite(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh))
		return -EIO;
	for (i = 0; i < ns; i++) {
		Elf64_Phdr ph = { .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = s[i].off,
				  .p_vaddr = s[i].addr, .p_filesz = s[i].len, .p_memsz = s[i].len,
				  .p_align = 1 };

		if (pwrite(fd, &ph, sizeof(ph), (off_t)(sizeof(eh) + i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			return -EIO;
	}
	return 0;
}

static int write_all_at(int fd, const void *p, size_t n, uint64_t off)
{
	const char *b = p;

	while (n) {
		ssize_t w = pwrite(fd, b, n, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		b += w;
		n -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

/* The piece of @p at @addr with @len (pieces are few: a linear search). */
static const struct piece *piece_at(const struct piece *p, size_t n, uint64_t addr, uint64_t len)
{
	for (size_t i = 0; i < n; i++)
		if (p[i].addr == addr && p[i].len == len)
			return &p[i];
	return NULL;
}

/* Pass 2: kallsyms pieces at their offsets, kernel text at its place in kcore. */
static int fill(struct prec_tfile_reader *r, const struct piece *p, size_t n, int ksyms_fd,
		int kcore_fd, struct prec_kexport *k)
{
	struct prec_tfile_chunk c;
	int err, werr = 0;

	prec_tfile_rewind(r);
	while ((err = prec_tfile_next(r, &c)) > 0 && !werr) {
		const struct piece *q;

		if (c.type == PREC_TFILE_KSYMS && c.len)
			werr = write_all_at(ksyms_fd, c.data, c.len, c.arg);
		if (c.type != PREC_TFILE_KCORE || !c.len)
			continue;
		q = piece_at(p, n, c.arg, c.len);
		if (q && q->off) {
			werr = write_all_at(kcore_fd, c.data, c.len, q->off);
			k->bytes += c.len;
		}
	}
	return werr ? werr : err;
}

/* The address of @name (a text symbol) in the kallsyms file @path, or 0. */
static uint64_t ksym_addr(const char *path, const char *name)
{
	FILE *f = fopen(path, "re");
	char line[512], type, sym[256];
	unsigned long long a;
	uint64_t found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %255s", &a, &type, sym) == 3 &&
		    (type == 'T' || type == 't') && !strcmp(sym, name))
			found = a;
	fclose(f);
	return found;
}

static int open_in(const char *dir, const char *name, char *path, size_t size)
{
	int fd;

	if (snprintf(path, size, "%s/%s", dir, name) >= (int)size)
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

int prec_kexport_write(struct prec_tfile_reader *r, const char *dir, struct prec_kexport *k)
{
	struct piece *p = NULL;
	struct seg *s = NULL;
	size_t np = 0, ns;
	char path[1400];
	int ksyms, err, kfd = -1, cfd = -1, mfd;

	memset(k, 0, sizeof(*k));
	err = scan(r, &p, &np, &ksyms);
	if (err < 0 || !np || !ksyms)
		goto out;
	s = calloc(np, sizeof(*s));
	if (!s) {
		err = -ENOMEM;
		goto out;
	}
	ns = layout(p, np, s);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		err = -errno;
		goto out;
	}
	kfd = open_in(dir, "kallsyms", path, sizeof(path));
	cfd = kfd < 0 ? kfd : open_in(dir, "kcore", path, sizeof(path));
	mfd = cfd < 0 ? cfd : open_in(dir, "modules", path, sizeof(path));
	err = mfd < 0 ? mfd : 0;
	if (mfd >= 0)
		close(mfd);
	if (!err)
		err = write_headers(cfd, s, ns);
	if (!err)
		err = fill(r, p, np, kfd, cfd, k);
	if (err < 0)
		goto out;
	k->segments = (unsigned)ns;
	k->start = s[0].addr;
	k->end = s[ns - 1].addr + s[ns - 1].len;
	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	k->text = ksym_addr(path, "_text");
	err = 1;
out:
	if (kfd >= 0)
		close(kfd);
	if (cfd >= 0)
		close(cfd);
	free(p);
	free(s);
	return err;
}

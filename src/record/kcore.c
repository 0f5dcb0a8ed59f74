// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "record/kcore.h"
#include "tracefile/tfile.h"
#include "base/util.h"

struct range {
	uint64_t start, end;
};

static int add_range(struct range **v, size_t *n, uint64_t start, uint64_t end)
{
	if (end <= start)
		return 0;
	if (prec_array_reserve(v, *n, 1, sizeof(**v)))
		return -ENOMEM;
	(*v)[*n].start = start;
	(*v)[*n].end = end;
	(*n)++;
	return 0;
}

static bool find_sym(const char *text, const char *name, uint64_t *addr)
{
	const char *p = text;
	size_t nl = strlen(name);

	while (p && *p) {
		const char *e = strchr(p, '\n');
		unsigned long long a;
		char type;
		int used = 0;

		if (sscanf(p, "%llx %c %n", &a, &type, &used) == 2 && used > 0 &&
		    !strncmp(p + used, name, nl) &&
		    (p[used + nl] == '\n' || p[used + nl] == '\0' || p[used + nl] == ' ' ||
		     p[used + nl] == '\t')) {
			*addr = a;
			return true;
		}
		p = e ? e + 1 : NULL;
	}
	return false;
}

static int module_ranges(const char *modules, struct range **v, size_t *n)
{
	const char *p = modules;
	int err = 0;

	while (p && *p && !err) {
		const char *e = strchr(p, '\n');
		char name[128], state[32];
		unsigned long long size, addr;
		int refs;

		/* name size refcount deps state address */
		if (sscanf(p, "%127s %llu %d %*s %31s %llx", name, &size, &refs, state, &addr) == 5 &&
		    addr)
			err = add_range(v, n, addr, addr + size);
		p = e ? e + 1 : NULL;
	}
	return err;
}

int prec_kcore_copy_fd(struct prec_tfile_writer *w, int fd, const char *kallsyms,
		       const char *modules, uint64_t max_bytes, struct prec_kcore_result *res)
{
	struct range *want = NULL;
	size_t nwant = 0, i, ph, nph;
	uint64_t stext, etext;
	Elf *elf = NULL;
	GElf_Ehdr eh;
	char *buf = NULL;
	int err = 0;

	memset(res, 0, sizeof(*res));
	if (!kallsyms || !find_sym(kallsyms, "_stext", &stext) || !find_sym(kallsyms, "_etext", &etext) ||
	    !stext)
		return -ENOENT;
	err = add_range(&want, &nwant, stext, etext);
	if (!err && modules)
		err = module_ranges(modules, &want, &nwant);
	if (err)
		goto out;
	res->ranges = (unsigned)nwant;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || !gelf_getehdr(elf, &eh) || eh.e_type != ET_CORE ||
	    elf_getphdrnum(elf, &nph)) {
		err = -PREC_E_FORMAT;
		goto out;
	}
	buf = malloc(1u << 20);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nwant && !err; i++) {
		for (ph = 0; ph < nph && !err; ph++) {
			GElf_Phdr p;
			uint64_t s, e, a;

			if (!gelf_getphdr(elf, (int)ph, &p) || p.p_type != PT_LOAD)
				continue;
			s = PREC_MAX(want[i].start, p.p_vaddr);
			e = PREC_MIN(want[i].end, p.p_vaddr + p.p_filesz);
			if (s >= e)
				continue;
			for (a = s; a < e && !err; a += 1u << 20) {
				size_t n = (size_t)PREC_MIN(e - a, 1u << 20);
				ssize_t got;

				if (res->bytes + n > max_bytes) {
					err = -EFBIG;
					break;
				}
				got = pread(fd, buf, n, (off_t)(p.p_offset + (a - p.p_vaddr)));
				if (got < 0) {
					err = -errno;
					break;
				}
				if (got == 0)
					break;
				err = prec_tfile_write_blob(w, PREC_TFILE_KCORE, a, buf, (size_t)got);
				res->bytes += (uint64_t)got;
			}
			if (!err)
				res->copied++;
		}
	}
out:
	if (elf)
		elf_end(elf);
	free(buf);
	free(want);
	return err;
}

int prec_kcore_copy(struct prec_tfile_writer *w, const char *kcore_path, const char *kallsyms,
		    const char *modules, uint64_t max_bytes, struct prec_kcore_result *res)
{
	uint64_t a;
	int fd, err;

	memset(res, 0, sizeof(*res));
	if (!kallsyms || !find_sym(kallsyms, "_stext", &a))
		return -ENOENT;
	fd = open(kcore_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = prec_kcore_copy_fd(w, fd, kallsyms, modules, max_bytes, res);
	close(fd);
	return err;
}

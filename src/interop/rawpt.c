// SPDX-License-Identifier: MIT
/*
 * Raw Intel PT export and import (see rawpt.h).
 *
 * The import builds the session the way a recording would: a COMM, one
 * MMAP2 per code segment and an ITRACE_START, all with the session's
 * default sample_id trailer, so the image store and every formatter treat a
 * raw trace like any other. ELF files are mapped by path (the image store
 * reads code and symbols from them); raw images are added as embedded bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "base/array.h"
#include "session/load.h"
#include "interop/rawpt.h"
#include "session/session.h"
#include "base/symtab.h"
#include "base/util.h"

#define RAW_PID 1
#define RAW_TID 1
#define RAW_ID 1
/* The session refuses streams over 4 GiB (-EFBIG); so does the import. */
#define RAW_MAX_TRACE (4ull << 30)

void prec_rawpt_opts_init(struct prec_rawpt_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->mtc_freq = -1;
	o->nom_freq = -1;
}

/* ---- option parsing ---- */

/* A number that is the whole of [p, end): decimal or 0x-hex. */
static bool parse_num(const char *p, size_t n, uint64_t *v)
{
	char buf[32];

	if (!n || n >= sizeof(buf))
		return false;
	memcpy(buf, p, n);
	buf[n] = 0;
	return prec_parse_u64(buf, 0, v) == 0;
}

/*
 * The ":OFFSET[:SIZE]" before *@file_end (numbers only: a ':' followed by
 * something else is part of the file name); moves *@file_end before it.
 */
static void parse_offset_size(const char *arg, const char **file_end, struct prec_rawpt_image *img)
{
	const char *c1 = memrchr(arg, ':', (size_t)(*file_end - arg)), *c0;
	uint64_t v1, v0;

	if (!c1 || !parse_num(c1 + 1, (size_t)(*file_end - c1 - 1), &v1))
		return;
	c0 = memrchr(arg, ':', (size_t)(c1 - arg));
	if (c0 && parse_num(c0 + 1, (size_t)(c1 - c0 - 1), &v0)) {
		img->offset = v0;
		img->size = v1;
		img->has_size = true;
		*file_end = c0;
		return;
	}
	img->offset = v1;
	*file_end = c1;
}

int prec_rawpt_parse_image(const char *arg, bool elf, struct prec_rawpt_image *img,
			   struct prec_diag *d)
{
	const char *at, *file_end;
	size_t len;

	memset(img, 0, sizeof(*img));
	img->elf = elf;
	if (!arg || !*arg)
		return prec_diag_set(d, -PREC_E_SYNTAX, 0, "empty %s argument",
				     elf ? "--elf" : "--image");
	len = strlen(arg);
	at = strrchr(arg, '@');
	file_end = arg + len;
	if (at) {
		uint64_t v;

		if (parse_num(at + 1, strlen(at + 1), &v)) {
			img->addr = v;
			img->has_addr = true;
			file_end = at;
		} else if (!elf) {
			prec_diag_set(d, -PREC_E_SYNTAX, at + 1 - arg,
				      "'%s' is not an address", at + 1);
			prec_diag_hint(d, "write FILE[:OFFSET[:SIZE]]@ADDR, numbers in decimal or 0x hex");
			return -PREC_E_SYNTAX;
		}
	}
	if (!elf && !img->has_addr) {
		prec_diag_set(d, -PREC_E_SYNTAX, (long)len, "--image needs a load address");
		prec_diag_hint(d, "write FILE[:OFFSET[:SIZE]]@ADDR, e.g. code.bin:0x1000@0x400000");
		return -PREC_E_SYNTAX;
	}
	if (!elf)
		parse_offset_size(arg, &file_end, img);
	if (!elf && img->has_size && !img->size) {
		prec_diag_set(d, -PREC_E_SYNTAX, file_end - arg, "an image of size 0 maps nothing");
		prec_diag_hint(d, "write FILE[:OFFSET[:SIZE]]@ADDR with SIZE > 0, or leave SIZE out "
				  "to map to the end of the file");
		return -PREC_E_SYNTAX;
	}
	if (file_end == arg)
		return prec_diag_set(d, -PREC_E_SYNTAX, 0, "no file name in '%s'", arg);
	if ((size_t)(file_end - arg) >= sizeof(img->path))
		return prec_diag_set(d, -PREC_E_SYNTAX, 0, "file name too long");
	memcpy(img->path, arg, (size_t)(file_end - arg));
	img->path[file_end - arg] = 0;
	return 0;
}

int prec_rawpt_parse_cpu(const char *arg, struct prec_rawpt_opts *o, struct prec_diag *d)
{
	uint64_t v[3] = { 0, 0, 0 };
	const char *p = arg ? arg : "";
	int i;

	for (i = 0; i < 3; i++) {
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);

		if (!parse_num(p, n, &v[i]) || v[i] > (i ? 255u : 65535u)) {
			prec_diag_set(d, -PREC_E_SYNTAX, p - (arg ? arg : ""),
				      "bad CPU '%s'", arg ? arg : "");
			prec_diag_hint(d, "write FAMILY/MODEL[/STEPPING], e.g. 6/94/3");
			return -PREC_E_SYNTAX;
		}
		if (!e)
			break;
		if (i == 2)
			break;
		p = e + 1;
	}
	if (i < 1 || (i == 2 && strchr(p, '/'))) {
		prec_diag_set(d, -PREC_E_SYNTAX, 0, "bad CPU '%s'", arg ? arg : "");
		prec_diag_hint(d, "write FAMILY/MODEL[/STEPPING], e.g. 6/94/3");
		return -PREC_E_SYNTAX;
	}
	o->has_cpu = true;
	o->family = (uint16_t)v[0];
	o->model = (uint8_t)v[1];
	o->stepping = (uint8_t)v[2];
	return 0;
}

/* ---- ELF segments ---- */

struct seg {
	uint64_t vaddr, offset, filesz;
	uint32_t flags;
};

/* The PT_LOAD segments of the ELF file @path (malloc'd in *@out). */
static int elf_segments(const char *path, struct seg **out, size_t *n)
{
	Elf *e = NULL;
	size_t i, phnum = 0, k = 0;
	struct seg *s = NULL;
	int fd, err = 0;

	*out = NULL;
	*n = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		err = -PREC_E_INTERNAL;
		goto out;
	}
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &phnum)) {
		err = -PREC_E_FORMAT;
		goto out;
	}
	s = calloc(phnum ? phnum : 1, sizeof(*s));
	if (!s) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		s[k++] = (struct seg){ ph.p_vaddr, ph.p_offset, ph.p_filesz, ph.p_flags };
	}
	if (!k) {
		err = -PREC_E_FORMAT;
		goto out;
	}
	*out = s;
	*n = k;
	s = NULL;
out:
	free(s);
	if (e)
		elf_end(e);
	close(fd);
	return err;
}

static uint64_t min_vaddr(const struct seg *s, size_t n)
{
	uint64_t m = UINT64_MAX;
	size_t i;

	for (i = 0; i < n; i++)
		m = PREC_MIN(m, s[i].vaddr);
	return m;
}

/* ---- import ---- */

/* Appends the default sample_id trailer (IDENTIFIER|TID|TIME|CPU: pid tid, time, cpu, id). */
static int put_trailer(struct prec_buf *b)
{
	uint32_t pidtid[2] = { RAW_PID, RAW_TID };
	uint64_t time = 0, id = RAW_ID;
	uint32_t cpu[2] = { 0, 0 };
	int err;

	err = prec_buf_append(b, pidtid, sizeof(pidtid));
	if (!err)
		err = prec_buf_append(b, &time, sizeof(time));
	if (!err)
		err = prec_buf_append(b, cpu, sizeof(cpu));
	if (!err)
		err = prec_buf_append(b, &id, sizeof(id));
	return err;
}

/* Appends one record: header, @body (@n bytes, zero-padded to 8), trailer. */
static int put_record(struct prec_buf *b, uint32_t type, uint16_t misc, const void *body,
		      size_t n)
{
	struct perf_event_header h = { .type = type, .misc = misc };
	static const uint8_t zero[8];
	size_t pad = (8 - n % 8) % 8;
	int err;

	h.size = (uint16_t)(sizeof(h) + n + pad + 32);
	if (sizeof(h) + n + pad + 32 > 65535)
		return -ENAMETOOLONG;
	err = prec_buf_append(b, &h, sizeof(h));
	if (!err)
		err = prec_buf_append(b, body, n);
	if (!err)
		err = prec_buf_append(b, zero, pad);
	if (!err)
		err = put_trailer(b);
	return err;
}

static int put_mmap2(struct prec_buf *b, uint64_t start, uint64_t len, uint64_t pgoff,
		     const uint8_t *bid, int bid_size, const char *path)
{
	struct prec_buf body = { 0 };
	uint32_t pidtid[2] = { RAW_PID, RAW_TID };
	uint64_t v[3] = { start, len, pgoff };
	uint8_t ident[24];
	uint32_t prot_flags[2] = { PROT_READ | PROT_EXEC, MAP_PRIVATE };
	uint16_t misc = PERF_RECORD_MISC_USER;
	int err;

	memset(ident, 0, sizeof(ident));
	if (bid_size > 0) {
		ident[0] = (uint8_t)bid_size;
		memcpy(ident + 4, bid, (size_t)bid_size);
		misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
	}
	err = prec_buf_append(&body, pidtid, sizeof(pidtid));
	if (!err)
		err = prec_buf_append(&body, v, sizeof(v));
	if (!err)
		err = prec_buf_append(&body, ident, sizeof(ident));
	if (!err)
		err = prec_buf_append(&body, prot_flags, sizeof(prot_flags));
	if (!err)
		err = prec_buf_append(&body, path, strlen(path) + 1);
	if (!err)
		err = put_record(b, PERF_RECORD_MMAP2, misc, body.data, body.len);
	prec_buf_free(&body);
	return err;
}

struct range {
	uint64_t start, end;
	const char *path;
};

static int add_range(struct range **r, size_t *n, uint64_t start, uint64_t len, const char *path,
		     struct prec_diag *d)
{
	struct range *nr;
	size_t i;

	if (!len || start + len < start)
		return prec_diag_set(d, -EINVAL, -1, "%s: the mapping at 0x%llx wraps around",
				     path, (unsigned long long)start);
	for (i = 0; i < *n; i++) {
		if (start < (*r)[i].end && (*r)[i].start < start + len) {
			prec_diag_set(d, -EINVAL, -1,
				      "%s at 0x%llx-0x%llx overlaps %s at 0x%llx-0x%llx", path,
				      (unsigned long long)start, (unsigned long long)(start + len),
				      (*r)[i].path, (unsigned long long)(*r)[i].start,
				      (unsigned long long)(*r)[i].end);
			prec_diag_hint(d, "give each image its own address range");
			return -EINVAL;
		}
	}
	if (PREC_ARRAY_RESERVE(*r, *n, 1))
		return -ENOMEM;
	nr = *r;
	nr[(*n)++] = (struct range){ start, start + len, path };
	return 0;
}

static int file_error(struct prec_diag *d, int err, const char *what, const char *path)
{
	prec_diag_set(d, err, -1, "cannot read %s %s: %s", what, path, prec_strerror(err));
	return err;
}

/*
 * Reads @len bytes (0: to the end of the file) from @off of @path into a new
 * buffer (at most @max bytes).
 */
static int read_file_from(const char *path, uint64_t off, uint64_t len, uint64_t max,
			  uint8_t **out, size_t *n, struct prec_diag *d)
{
	struct stat st;
	uint8_t *p = NULL;
	long got;
	int fd, err = 0;

	*out = NULL;
	*n = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		err = errno && !S_ISREG(st.st_mode) ? -EINVAL : -errno;
		if (!err)
			err = -EINVAL;
		prec_diag_set(d, err, -1, "%s is not a regular file", path);
		goto out;
	}
	if (off >= (uint64_t)st.st_size) {
		err = prec_diag_set(d, -EINVAL, -1,
				    "offset 0x%llx is past the end of %s (%lld bytes)",
				    (unsigned long long)off, path, (long long)st.st_size);
		goto out;
	}
	if (len && len > (uint64_t)st.st_size - off) {
		err = prec_diag_set(d, -EINVAL, -1,
				    "0x%llx bytes from offset 0x%llx run past the end of %s "
				    "(%lld bytes)", (unsigned long long)len,
				    (unsigned long long)off, path, (long long)st.st_size);
		goto out;
	}
	if (!len)
		len = (uint64_t)st.st_size - off;
	if (len > max) {
		err = prec_diag_set(d, -EFBIG, -1, "%s is too large (%lld bytes)", path,
				    (long long)st.st_size);
		goto out;
	}
	p = malloc((size_t)len);
	if (!p) {
		err = -ENOMEM;
		goto out;
	}
	if (lseek(fd, (off_t)off, SEEK_SET) < 0) {
		err = -errno;
		goto out;
	}
	got = prec_read_full(fd, p, (size_t)len);
	if (got < 0) {
		err = (int)got;
		goto out;
	}
	*out = p;
	*n = (size_t)got;
	p = NULL;
out:
	free(p);
	close(fd);
	return err;
}

static int load_elf_image(struct prec_session *s, struct prec_buf *sb, const char *path,
			  const struct prec_rawpt_image *img, struct range **ranges,
			  size_t *nranges, struct prec_diag *d)
{
	struct seg *segs = NULL;
	size_t nsegs = 0, i, nexec = 0;
	uint8_t bid[64];
	int bid_size, err;
	uint64_t bias = 0;

	(void)s;
	err = elf_segments(path, &segs, &nsegs);
	if (err == -PREC_E_FORMAT) {
		prec_diag_set(d, err, -1, "%s is not an ELF file with loadable segments", path);
		prec_diag_hint(d, "load raw code bytes with --image FILE[:OFFSET[:SIZE]]@ADDR");
		goto out;
	}
	if (err) {
		file_error(d, err, "ELF file", path);
		goto out;
	}
	if (img->has_addr)
		bias = img->addr - min_vaddr(segs, nsegs);
	bid_size = prec_elf_build_id(path, bid, sizeof(bid));
	if (bid_size < 0 || bid_size > PREC_BUILD_ID_MAX)
		bid_size = 0;
	for (i = 0; i < nsegs; i++)
		nexec += !!(segs[i].flags & PF_X);
	for (i = 0; i < nsegs; i++) {
		uint64_t start = segs[i].vaddr + bias;

		/* code is what matters; an ELF without executable segments maps all */
		if (nexec && !(segs[i].flags & PF_X))
			continue;
		err = add_range(ranges, nranges, start, segs[i].filesz, img->path, d);
		if (!err)
			err = put_mmap2(sb, start, segs[i].filesz, segs[i].offset, bid, bid_size,
					path);
		if (err)
			goto out;
	}
out:
	free(segs);
	return err;
}

static int load_raw_image(struct prec_session *s, struct prec_buf *sb, const char *path,
			  const struct prec_rawpt_image *img, struct range **ranges,
			  size_t *nranges, struct prec_diag *d)
{
	struct prec_image_desc desc;
	uint8_t *bytes = NULL;
	size_t n = 0;
	int err;

	err = read_file_from(path, img->offset, img->size, 1ull << 32, &bytes, &n, d);
	if (err) {
		if (!d || !d->msg[0] || d->code != err)
			file_error(d, err, "image", path);
		return err;
	}
	err = add_range(ranges, nranges, img->addr, n, img->path, d);
	if (!err)
		err = put_mmap2(sb, img->addr, n, img->offset, NULL, 0, path);
	if (!err) {
		memset(&desc, 0, sizeof(desc));
		desc.path = path;
		desc.file_offset = img->offset;
		desc.bytes = bytes;
		desc.size = n;
		err = prec_session_add_image(s, &desc);
	}
	free(bytes);
	return err;
}

int prec_rawpt_load(struct prec_session *s, const struct prec_rawpt_opts *o,
		    struct prec_diag *d)
{
	struct prec_evdesc ev = { .name = "intel_pt//", .kind = PREC_EVK_TRACER };
	struct prec_machine m;
	struct prec_buf sb = { 0 };
	struct range *ranges = NULL;
	size_t nranges = 0, i, n = 0;
	uint8_t *trace = NULL;
	uint64_t id = RAW_ID;
	char comm[16] = "rawpt";
	uint32_t pidtid[2] = { RAW_PID, RAW_TID };
	uint8_t comm_body[8 + 16];
	int err;

	if (!o || !o->pt_path)
		return prec_diag_set(d, -EINVAL, -1, "no raw trace file given");
	memset(&m, 0, sizeof(m));
	m.cpu_by_option = true;
	if (o->has_cpu) {
		snprintf(m.vendor, sizeof(m.vendor), "GenuineIntel");
		m.family = o->family;
		m.model = o->model;
		m.stepping = o->stepping;
	}
	m.cpuid_15_eax = o->cpuid_15_eax;
	m.cpuid_15_ebx = o->cpuid_15_ebx;
	if (o->nom_freq >= 0)
		m.max_nonturbo_ratio = (uint32_t)o->nom_freq;
	if (o->mtc_freq >= 0) {
		m.mtc_period = (uint8_t)o->mtc_freq;
		m.mtc = true;
	}
	prec_session_set_machine(s, &m);
	err = prec_session_add_event(s, &ev, &id, 1);
	if (err < 0)
		goto out;

	for (i = 0; i < o->nimages; i++) {
		if (o->images[i].elf) {
			const char *b = strrchr(o->images[i].path, '/');

			/* a COMM name is 15 characters at most, as the kernel cuts it */
			snprintf(comm, sizeof(comm), "%.15s", b ? b + 1 : o->images[i].path);
			break;
		}
	}
	memset(comm_body, 0, sizeof(comm_body));
	memcpy(comm_body, pidtid, sizeof(pidtid));
	memcpy(comm_body + 8, comm, strlen(comm));
	err = put_record(&sb, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, comm_body,
			 8 + PREC_ALIGN_UP(strlen(comm) + 1, 8));
	if (err)
		goto out;
	for (i = 0; i < o->nimages && !err; i++) {
		const struct prec_rawpt_image *img = &o->images[i];
		char abs[PATH_MAX + 4096], cwd[PATH_MAX];

		/*
		 * The image store finds files (code, symbols) by absolute path.
		 * Symlinks stay as given: the path is what the views print.
		 */
		if (access(img->path, R_OK)) {
			err = file_error(d, -errno, img->elf ? "ELF file" : "image", img->path);
			break;
		}
		if (img->path[0] == '/')
			snprintf(abs, sizeof(abs), "%s", img->path);
		else if (getcwd(cwd, sizeof(cwd)))
			snprintf(abs, sizeof(abs), "%s/%s", cwd, img->path);
		else {
			err = file_error(d, -errno, "the current directory for", img->path);
			break;
		}
		if (img->elf)
			err = load_elf_image(s, &sb, abs, img, &ranges, &nranges, d);
		else
			err = load_raw_image(s, &sb, abs, img, &ranges, &nranges, d);
	}
	if (err)
		goto out;
	err = put_record(&sb, PERF_RECORD_ITRACE_START, 0, pidtid, sizeof(pidtid));
	if (err)
		goto out;
	err = prec_session_add_sideband(s, sb.data, sb.len, -1);
	if (err < 0)
		goto out;

	err = read_file_from(o->pt_path, 0, 0, RAW_MAX_TRACE - 1, &trace, &n, d);
	if (err == -EINVAL && d && d->code == -EINVAL) {
		/* offset 0 past the end: an empty file */
		prec_diag_set(d, -EINVAL, -1, "%s is empty: no trace to decode", o->pt_path);
		goto out;
	}
	if (err) {
		if (!d || d->code != err)
			file_error(d, err, "trace file", o->pt_path);
		goto out;
	}
	err = prec_session_add_aux(s, -1, RAW_TID, 0, trace, n);
	if (err)
		goto out;
	err = prec_session_finalize(s);
out:
	free(trace);
	free(ranges);
	prec_buf_free(&sb);
	return err < 0 ? err : 0;
}

/* ---- export ---- */

struct xmap {
	uint64_t start, end, pgoff;
	const char *path;
	uint8_t bid[PREC_BUILD_ID_MAX];
	uint8_t bid_size;
};

struct ximg {
	char file[96];   /* "images/NN-name", relative to the directory */
};

struct exp {
	struct prec_session *s;
	const char *dir;
	struct prec_diag *d;
	struct ximg *imgs;   /* one per session image */
	struct prec_buf man;
};

static int write_file(const char *dir, const char *name, const void *p, size_t n)
{
	char path[PATH_MAX];
	int fd, err;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	err = prec_write_full(fd, p, n);
	if (close(fd) && !err)
		err = -errno;
	return err;
}

#define FORK_DEPTH_MAX 64

/*
 * The code segments mapped executable into process @pid by the sideband
 * records before index @upto, the last mapping of each range winning. A
 * forked child starts with its parent's mappings at the fork (up to
 * FORK_DEPTH_MAX generations of parents are followed).
 */
static int maps_upto(struct exp *x, int pid, size_t upto, int depth, struct xmap **out,
		     size_t *n, bool *changed)
{
	size_t i, k;
	struct xmap *m = NULL;
	bool unused;
	int err;

	*n = 0;
	*changed = false;
	for (i = 0; i < upto; i++) {
		const struct prec_sb *sb = prec_session_sb(x->s, i);
		struct xmap *nm;

		if (sb->pid != pid)
			continue;
		if (sb->type == PREC_SB_FORK && sb->u.fork.ppid >= 0 && sb->u.fork.ppid != pid &&
		    depth < FORK_DEPTH_MAX) {
			free(m);
			m = NULL;
			err = maps_upto(x, sb->u.fork.ppid, i, depth + 1, &m, n, &unused);
			if (err)
				return err;
			continue;
		}
		if (sb->type == PREC_SB_COMM && sb->u.comm.exec && *n) {
			*changed = true;
			continue;
		}
		if (sb->type != PREC_SB_MMAP || sb->u.mmap.kernel ||
		    !(sb->u.mmap.prot & PROT_EXEC) || !sb->u.mmap.len)
			continue;
		/* drop what the new mapping covers (exec, or mmap over an old mapping) */
		for (k = 0; k < *n;) {
			if (m[k].start < sb->u.mmap.start + sb->u.mmap.len &&
			    sb->u.mmap.start < m[k].end) {
				if (strcmp(m[k].path, sb->u.mmap.path) || m[k].start != sb->u.mmap.start)
					*changed = true;
				m[k] = m[--(*n)];
			} else {
				k++;
			}
		}
		nm = realloc(m, (*n + 1) * sizeof(*nm));
		if (!nm) {
			free(m);
			return -ENOMEM;
		}
		m = nm;
		m[*n] = (struct xmap){ .start = sb->u.mmap.start,
				       .end = sb->u.mmap.start + sb->u.mmap.len,
				       .pgoff = sb->u.mmap.pgoff,
				       .path = sb->u.mmap.path,
				       .bid_size = sb->u.mmap.build_id_size };
		memcpy(m[*n].bid, sb->u.mmap.build_id, sb->u.mmap.build_id_size);
		(*n)++;
	}
	*out = m;
	return 0;
}

static int process_maps(struct exp *x, int pid, struct xmap **out, size_t *n, bool *changed)
{
	return maps_upto(x, pid, prec_session_nr_sb(x->s), 0, out, n, changed);
}

/* The process of thread @tid: the pid of its first sideband record. */
static int pid_of(struct exp *x, int tid)
{
	size_t i, n = prec_session_nr_sb(x->s);

	for (i = 0; i < n; i++) {
		const struct prec_sb *sb = prec_session_sb(x->s, i);

		if (sb->tid == tid && sb->pid >= 0)
			return sb->pid;
	}
	return -1;
}

static const char *comm_of(struct exp *x, int tid)
{
	return prec_session_comm(x->s, tid, UINT64_MAX);
}

/* Whether @path on disk is the file the recording saw (same build id, or neither has one). */
static bool disk_matches(const struct xmap *m)
{
	uint8_t bid[64];
	int n;

	if (m->path[0] != '/' || access(m->path, R_OK))
		return false;
	n = prec_elf_build_id(m->path, bid, sizeof(bid));
	if (n < 0)
		return false;
	return (size_t)n == m->bid_size && !memcmp(bid, m->bid, m->bid_size);
}

/* The session image holding the bytes of mapping @m, or -1. */
static long image_for(struct exp *x, const struct xmap *m)
{
	size_t i, n = prec_session_nr_images(x->s);

	for (i = 0; i < n; i++) {
		const struct prec_image_desc *img = prec_session_image(x->s, i);
		bool same = m->bid_size && img->build_id_size ?
				    prec_build_id_equal(img->build_id, img->build_id_size,
							m->bid, m->bid_size) :
				    !strcmp(img->path, m->path);

		if (same && m->pgoff >= img->file_offset &&
		    m->pgoff < img->file_offset + img->size)
			return (long)i;
	}
	return -1;
}

/*
 * Where the ELF file of @m (on disk) has its lowest PT_LOAD address when
 * mapped as @m is, as ptxed's --elf FILE:BASE wants it. False if unknown.
 */
static bool elf_load_base(const struct xmap *m, uint64_t *base)
{
	struct seg *segs = NULL;
	size_t ns = 0, j;
	bool found = false;

	if (!elf_segments(m->path, &segs, &ns)) {
		for (j = 0; j < ns; j++) {
			if (m->pgoff >= segs[j].offset &&
			    m->pgoff < segs[j].offset + segs[j].filesz) {
				uint64_t bias = m->start - (segs[j].vaddr + m->pgoff - segs[j].offset);

				*base = bias + min_vaddr(segs, ns);
				found = true;
				break;
			}
		}
	}
	free(segs);
	return found;
}

/* One mapping of a stream's process: a manifest line and its image arguments. */
static void export_map(struct exp *x, const struct xmap *maps, size_t i, struct prec_buf *ptxed,
		       struct prec_buf *mine)
{
	const struct xmap *m = &maps[i];
	long im;
	bool dup = false;
	size_t k;

	prec_buf_printf(&x->man, "  0x%llx-0x%llx %s file offset 0x%llx",
			(unsigned long long)m->start, (unsigned long long)m->end, m->path,
			(unsigned long long)m->pgoff);
	if (disk_matches(m)) {
		uint64_t base = 0;

		for (k = 0; k < i; k++)
			dup |= !strcmp(maps[k].path, m->path) && disk_matches(&maps[k]);
		if (elf_load_base(m, &base)) {
			prec_buf_printf(&x->man, ": the ELF file on this system (same build "
						 "id), loaded at 0x%llx\n",
					(unsigned long long)base);
			if (!dup) {
				prec_buf_printf(ptxed, " --elf %s:0x%llx", m->path,
						(unsigned long long)base);
				prec_buf_printf(mine, " --elf %s@0x%llx", m->path,
						(unsigned long long)base);
			}
			return;
		}
	}
	im = image_for(x, m);
	if (im >= 0) {
		const struct prec_image_desc *img = prec_session_image(x->s, (size_t)im);
		uint64_t from = m->pgoff - img->file_offset;
		uint64_t to = PREC_MIN(img->size, from + (m->end - m->start));

		prec_buf_printf(&x->man, ": embedded bytes in %s at offset 0x%llx\n",
				x->imgs[im].file, (unsigned long long)from);
		prec_buf_printf(ptxed, " --raw %s:0x%llx-0x%llx:0x%llx", x->imgs[im].file,
				(unsigned long long)from, (unsigned long long)to,
				(unsigned long long)m->start);
		prec_buf_printf(mine, " --image %s:0x%llx:0x%llx@0x%llx", x->imgs[im].file,
				(unsigned long long)from, (unsigned long long)(to - from),
				(unsigned long long)m->start);
		return;
	}
	prec_buf_printf(&x->man, ": NOT AVAILABLE (not embedded, no matching file here)\n");
}

static int export_stream(struct exp *x, const struct prec_stream *st, const char *args_common)
{
	struct prec_buf ptxed = { 0 }, mine = { 0 };
	char name[64], fname[96];
	struct xmap *maps = NULL;
	size_t nmaps = 0, i, g;
	bool changed = false;
	int pid = -1, err;

	if (st->tid >= 0 && st->cpu < 0)
		snprintf(name, sizeof(name), "tid-%d", st->tid);
	else
		snprintf(name, sizeof(name), "cpu-%d", st->cpu);
	snprintf(fname, sizeof(fname), "%s.pt", name);
	err = write_file(x->dir, fname, st->data, st->len);
	if (err)
		return err;
	prec_buf_printf(&x->man, "\nstream %s: %zu trace bytes, stream offsets 0x%llx-0x%llx",
			fname, st->len, (unsigned long long)st->base,
			(unsigned long long)(st->base + st->len + st->lost));
	if (st->cpu >= 0)
		prec_buf_printf(&x->man, ", cpu %d", st->cpu);
	if (st->tid >= 0) {
		pid = pid_of(x, st->tid);
		prec_buf_printf(&x->man, ", thread %d (%s) of process %d", st->tid,
				comm_of(x, st->tid), pid);
	}
	prec_buf_printf(&x->man, "\n");
	for (g = 0; g < st->nr_gaps; g++)
		prec_buf_printf(&x->man,
				"  gap: %llu bytes missing before file offset %llu (a raw decoder "
				"resynchronises at the next PSB after it)\n",
				(unsigned long long)st->gaps[g].lost,
				(unsigned long long)st->gaps[g].pos);
	if (pid < 0) {
		prec_buf_printf(&x->man, "  per-CPU stream: it runs several processes, which a raw "
					 "decoder cannot tell apart without the sideband; no "
					 "images are listed for it (decode the ptrec file instead)\n");
	} else {
		err = process_maps(x, pid, &maps, &nmaps, &changed);
		if (err)
			goto out;
		if (changed)
			prec_buf_printf(&x->man, "  the process changed its address space (exec or a "
						 "new mapping over an old one); the images below are "
						 "the last ones, trace of the earlier code will not "
						 "decode from the raw files\n");
	}
	prec_buf_printf(&ptxed, "%s", args_common);
	prec_buf_printf(&mine, "%s", args_common);
	for (i = 0; i < nmaps; i++)
		export_map(x, maps, i, &ptxed, &mine);
	prec_buf_printf(&ptxed, " --pt %s\n", fname);
	prec_buf_printf(&mine, " --pt %s\n", fname);
	prec_buf_printf(&x->man, "  ptxed: ptxed $(cat %s.ptxed.args)\n", name);
	prec_buf_printf(&x->man, "  ptdump: ptdump $(cat %s.ptdump.args)\n", name);
	snprintf(fname, sizeof(fname), "%s.ptxed.args", name);
	err = ptxed.data ? write_file(x->dir, fname, ptxed.data, ptxed.len) : -ENOMEM;
	snprintf(fname, sizeof(fname), "%s.ptdump.args", name);
	if (!err)
		err = mine.data ? write_file(x->dir, fname, mine.data, mine.len) : -ENOMEM;
out:
	free(maps);
	prec_buf_free(&ptxed);
	prec_buf_free(&mine);
	return err;
}

static void safe_name(const char *path, char *out, size_t size)
{
	const char *b = strrchr(path, '/');
	size_t i;

	snprintf(out, size, "%s", b ? b + 1 : path);
	for (i = 0; out[i]; i++)
		if (out[i] == '/' || out[i] == '[' || out[i] == ']' || out[i] == ' ')
			out[i] = '_';
	if (!out[0] || !strcmp(out, ".") || !strcmp(out, ".."))
		snprintf(out, size, "image");
}

/* The manifest's machine lines, and the decoder options every stream's args share. */
static void export_machine(struct exp *x, const struct prec_machine *m, const char *path,
			   struct prec_buf *common)
{
	prec_buf_printf(&x->man, "Raw Intel PT export of %s\n", path);
	prec_buf_printf(&x->man, "Run the tools from this directory; file names are relative to "
				"it.\n\n");
	prec_buf_printf(&x->man, "cpu: %s family %u model %u stepping %u\n",
			m->vendor[0] ? m->vendor : "unknown", m->family, m->model, m->stepping);
	prec_buf_printf(&x->man, "trace config: tsc %s, mtc %s (MTCFreq %u), cyc %s, "
				"return compression %s\n",
			m->tsc ? "on" : "off", m->mtc ? "on" : "off", m->mtc_period,
			m->cyc ? "on" : "off", m->noretcomp ? "off" : "on");
	prec_buf_printf(&x->man, "max non-turbo ratio (nominal frequency): %u\n",
			m->max_nonturbo_ratio);
	prec_buf_printf(&x->man, "cpuid 0x15: eax %u ebx %u\n", m->cpuid_15_eax, m->cpuid_15_ebx);
	prec_buf_printf(&x->man, "TSC to perf time: shift %u mult %u zero %llu (%s)\n",
			m->time_shift, m->time_mult, (unsigned long long)m->time_zero,
			m->cap_user_time_zero ? "valid" : "not valid");

	if (m->vendor[0])
		prec_buf_printf(common, "--cpu %u/%u/%u", m->family, m->model, m->stepping);
	else
		prec_buf_printf(&x->man, "the recording does not say which CPU wrote the trace: "
					 "add --cpu FAMILY/MODEL/STEPPING of that CPU to the "
					 "argument files (without it, no errata workarounds)\n");
	if (m->mtc)
		prec_buf_printf(common, " --mtc-freq %u", m->mtc_period);
	if (m->max_nonturbo_ratio)
		prec_buf_printf(common, " --nom-freq %u", m->max_nonturbo_ratio);
	if (m->cpuid_15_eax || m->cpuid_15_ebx)
		prec_buf_printf(common, " --cpuid-0x15.eax %u --cpuid-0x15.ebx %u",
				m->cpuid_15_eax, m->cpuid_15_ebx);
	/* an empty buffer still needs its string */
	prec_buf_printf(common, "%s", "");
}

int prec_rawpt_export(const char *ptrec_path, const char *dir, struct prec_diag *d)
{
	return prec_rawpt_export_progress(ptrec_path, dir, NULL, NULL, d);
}

int prec_rawpt_export_progress(const char *ptrec_path, const char *dir,
			       void (*progress)(void *ctx, uint64_t done, uint64_t total),
			       void *ctx, struct prec_diag *d)
{
	uint64_t done = 0, total = 0;
	struct prec_load_report *rep = NULL;
	struct prec_tfile_reader *r = NULL;
	const struct prec_machine *m;
	struct prec_buf common = { 0 };
	struct exp x;
	char sub[PATH_MAX];
	size_t i, n;
	int err, written = 0;

	memset(&x, 0, sizeof(x));
	x.dir = dir;
	x.d = d;
	if (!ptrec_path || !dir || !*dir)
		return prec_diag_set(d, -EINVAL, -1, "no input file or output directory named");
	rep = calloc(1, sizeof(*rep));
	x.s = prec_session_new();
	if (!rep || !x.s) {
		err = -ENOMEM;
		goto out;
	}
	err = prec_load_open(ptrec_path, rep, &r, d);
	if (err) {
		if (d && !d->msg[0])
			prec_diag_set(d, err, -1, "cannot read %s: %s", ptrec_path,
				      prec_strerror(err));
		goto out;
	}
	err = prec_load_session(x.s, r, rep);
	if (err) {
		prec_diag_set(d, err, -1, "cannot load %s: %s", ptrec_path, prec_strerror(err));
		goto out;
	}
	m = prec_session_machine(x.s);
	if (m->vendor[0] && strcmp(m->vendor, "GenuineIntel")) {
		err = prec_diag_set(d, -ENOTSUP, -1, "%s is not an Intel PT recording (%s)",
				    ptrec_path, m->vendor);
		prec_diag_hint(d, "raw export writes Intel PT streams only");
		goto out;
	}
	if (mkdir(dir, 0755) && errno != EEXIST) {
		err = -errno;
		prec_diag_set(d, err, -1, "cannot create %s: %s", dir, strerror(errno));
		goto out;
	}
	if ((size_t)snprintf(sub, sizeof(sub), "%s/images", dir) >= sizeof(sub)) {
		err = prec_diag_set(d, -ENAMETOOLONG, -1, "directory name too long");
		goto out;
	}
	if (mkdir(sub, 0755) && errno != EEXIST) {
		err = -errno;
		prec_diag_set(d, err, -1, "cannot create %s: %s", sub, strerror(errno));
		goto out;
	}
	n = prec_session_nr_images(x.s);
	x.imgs = calloc(n ? n : 1, sizeof(*x.imgs));
	if (!x.imgs) {
		err = -ENOMEM;
		goto out;
	}
	export_machine(&x, m, ptrec_path, &common);

	if (n)
		prec_buf_printf(&x.man, "\nembedded images:\n");
	for (i = 0; i < n; i++) {
		const struct prec_image_desc *img = prec_session_image(x.s, i);
		char base[40];

		safe_name(img->path, base, sizeof(base));
		snprintf(x.imgs[i].file, sizeof(x.imgs[i].file), "images/%02zu-%s", i, base);
		err = write_file(dir, x.imgs[i].file, img->bytes, img->size);
		if (err) {
			prec_diag_set(d, err, -1, "cannot write %s/%s: %s", dir, x.imgs[i].file,
				      prec_strerror(err));
			goto out;
		}
		prec_buf_printf(&x.man, "  %s: %s, file offset 0x%llx, %zu bytes\n",
				x.imgs[i].file, img->path, (unsigned long long)img->file_offset,
				img->size);
	}
	for (i = 0; i < prec_session_nr_streams(x.s); i++)
		total += prec_session_stream(x.s, i)->len;
	for (i = 0; i < prec_session_nr_streams(x.s); i++) {
		err = export_stream(&x, prec_session_stream(x.s, i),
				    common.data ? common.data : "");
		if (err) {
			prec_diag_set(d, err, -1, "cannot write the raw export into %s: %s", dir,
				      prec_strerror(err));
			goto out;
		}
		written++;
		done += prec_session_stream(x.s, i)->len;
		if (progress)
			progress(ctx, done, total);
	}
	if (!written)
		prec_buf_printf(&x.man, "\nno trace streams in the recording\n");
	if (!x.man.data) {
		err = -ENOMEM;
		goto out;
	}
	err = write_file(dir, "manifest.txt", x.man.data, x.man.len);
	if (err)
		prec_diag_set(d, err, -1, "cannot write %s/manifest.txt: %s", dir,
			      prec_strerror(err));
out:
	prec_buf_free(&common);
	prec_buf_free(&x.man);
	free(x.imgs);
	prec_session_free(x.s);
	prec_tfile_reader_free(r);
	free(rep);
	return err < 0 ? err : 0;
}

// SPDX-License-Identifier: MIT
/* The image store: per-process address spaces over time, exposed to libipt. */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <inttypes.h>
#ifndef PREC_NO_LIBIPT
#include <intel-pt.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/array.h"
#include "session/image.h"
#include "base/util.h"

#define KERNEL_DSO "[kernel.kallsyms]"
/* Mapped sections kept by libipt's cache; switching among them must not mmap. */
#define ISCACHE_LIMIT (1ull << 30)

enum dso_src { SRC_UNRESOLVED, SRC_NONE, SRC_EMBEDDED, SRC_DISK, SRC_MISMATCH };

struct prec_dso {
	char *path;
	uint8_t bid[PREC_BUILD_ID_MAX];
	size_t bid_size;
	bool kernel;
	enum dso_src src;
	size_t *imgs;             /* indices of matching embedded images */
	size_t nr_imgs;
	bool disk_tried;
	bool mismatch;            /* the disk file has another build id */
	char want_bid[41], have_bid[41];
	char *disk_path;          /* symfs + path, when usable */
	const uint8_t *disk;      /* mmap of the disk file */
	size_t disk_size;
	struct prec_symtab *st;
	bool st_tried;
	bool resolved;            /* dso_resolve() done (read with acquire) */
};

struct prec_aspace {
	struct prec_images *im;
	int pid;
	uint64_t start, end;
	struct prec_map *maps;    /* sorted, non-overlapping */
	size_t n;
	struct pt_image *pt;
	bool pt_failed;
	bool exec;                /* the empty space an exec starts with */
	/*
	 * For the last generation that starts at the time of an exec: the
	 * space of that very time, the new mappings over the old program's
	 * (owned; see prec_images_aspace()).
	 */
	struct prec_aspace *at_exec;
};

struct proc {
	int pid;
	struct prec_aspace **gens;
	size_t n;
};

struct prec_images {
	struct prec_session *s;
	struct prec_dso **dsos;
	size_t nr_dsos;
	struct proc *procs;       /* sorted by pid after build */
	size_t nr_procs;
	struct prec_aspace kernel_only;
	struct prec_map *kmaps;   /* kernel mappings (records and kernel text) */
	size_t nr_kmaps;
	struct prec_dso *kdso;
	int memfd;
	char memfd_path[64];
	uint64_t *img_off;        /* memfd offset of each session image */
	uint64_t *ktext_off;      /* memfd offset of each kernel text range */
	/*
	 * The memfd is written when the first libipt image is built (only
	 * libipt's block decoder reads code from files): memfd_err says how
	 * that went, memfd_done that it was tried.
	 */
	bool memfd_done;
	int memfd_err;
	struct pt_image_section_cache *isc;
};

static void dso_free(struct prec_dso *d)
{
	if (!d)
		return;
	if (d->disk)
		munmap((void *)d->disk, d->disk_size);
	prec_symtab_free(d->st);
	free(d->imgs);
	free(d->disk_path);
	free(d->path);
	free(d);
}

static void aspace_fini(struct prec_aspace *as)
{
	if (as->at_exec) {
		aspace_fini(as->at_exec);
		free(as->at_exec);
	}
#ifndef PREC_NO_LIBIPT
	if (as->pt)
		pt_image_free(as->pt);
#endif
	free(as->maps);
}

void prec_images_free(struct prec_images *im)
{
	size_t i, j;

	if (!im)
		return;
	for (i = 0; i < im->nr_procs; i++) {
		for (j = 0; j < im->procs[i].n; j++) {
			aspace_fini(im->procs[i].gens[j]);
			free(im->procs[i].gens[j]);
		}
		free(im->procs[i].gens);
	}
	free(im->procs);
	aspace_fini(&im->kernel_only);
	for (i = 0; i < im->nr_dsos; i++)
		dso_free(im->dsos[i]);
	free(im->dsos);
	free(im->kmaps);
	free(im->img_off);
	free(im->ktext_off);
#ifndef PREC_NO_LIBIPT
	if (im->isc)
		pt_iscache_free(im->isc);
#endif
	if (im->memfd >= 0)
		close(im->memfd);
	free(im);
}

static struct prec_dso *dso_get(struct prec_images *im, const char *path, const uint8_t *bid,
				size_t bid_size, bool kernel)
{
	struct prec_dso *d, **n;
	size_t i;

	for (i = 0; i < im->nr_dsos; i++) {
		d = im->dsos[i];
		if (d->kernel == kernel && !strcmp(d->path, path) &&
		    (!bid_size || !d->bid_size ||
		     prec_build_id_equal(d->bid, d->bid_size, bid, bid_size))) {
			if (!d->bid_size && bid_size) {
				memcpy(d->bid, bid, bid_size);
				d->bid_size = bid_size;
			}
			return d;
		}
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->path = strdup(path);
	n = realloc(im->dsos, (im->nr_dsos + 1) * sizeof(*n));
	if (!d->path || !n) {
		if (n)
			im->dsos = n;
		dso_free(d);
		return NULL;
	}
	im->dsos = n;
	if (bid_size)
		memcpy(d->bid, bid, bid_size);
	d->bid_size = bid_size;
	d->kernel = kernel;
	im->dsos[im->nr_dsos++] = d;
	return d;
}

const char *prec_dso_path(const struct prec_dso *dso)
{
	return dso ? dso->path : NULL;
}

/*
 * Opens the file of @d under the symfs root when its build id matches the
 * recording's (or the recording has none). Once; sets d->disk*.
 */
static void dso_open_disk(struct prec_images *im, struct prec_dso *d)
{
	const char *root = prec_session_symfs(im->s);
	char path[4096];
	struct stat sb;
	int fd;

	if (d->disk_tried)
		return;
	d->disk_tried = true;
	if (d->kernel || d->path[0] != '/')
		return;
	snprintf(path, sizeof(path), "%s%s", root, d->path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (d->bid_size) {
		uint8_t fb[PREC_BUILD_ID_MAX];
		int r = prec_elf_build_id(path, fb, sizeof(fb));

		if (r <= 0 || !prec_build_id_equal(fb, (size_t)r, d->bid, d->bid_size)) {
			prec_hex(d->want_bid, d->bid, d->bid_size);
			if (r > 0)
				prec_hex(d->have_bid, fb, (size_t)r);
			else
				snprintf(d->have_bid, sizeof(d->have_bid), "none");
			d->mismatch = true;
			close(fd);
			return;
		}
	}
	if (fstat(fd, &sb) == 0 && sb.st_size > 0) {
		void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);

		if (m != MAP_FAILED) {
			d->disk_path = strdup(path);
			if (d->disk_path) {
				d->disk = m;
				d->disk_size = (size_t)sb.st_size;
			} else {
				munmap(m, (size_t)sb.st_size);
			}
		}
		/* Say it: otherwise its functions silently show as object+offset. */
		if (!d->disk)
			prec_session_warn(im->s, "cannot map %s (%s): no symbols for it; its code "
					  "is named by object and offset", path,
					  strerror(m == MAP_FAILED ? errno : ENOMEM));
	}
	close(fd);
}

/*
 * What an object's code and symbols come from is found once, when first
 * needed, by whichever thread needs it (ptdump -j decodes in several): under
 * this lock, which also keeps the warnings it may give in one list.
 */
static pthread_mutex_t dso_mu = PTHREAD_MUTEX_INITIALIZER;

static void dso_resolve_locked(struct prec_images *im, struct prec_dso *d);

/* Finds where the bytes of @d come from (once): embedded, else the disk file. */
static void dso_resolve(struct prec_images *im, struct prec_dso *d)
{
	if (__atomic_load_n(&d->resolved, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&dso_mu);
	dso_resolve_locked(im, d);
	__atomic_store_n(&d->resolved, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&dso_mu);
}

static void dso_resolve_locked(struct prec_images *im, struct prec_dso *d)
{
	const char *root = prec_session_symfs(im->s);
	size_t i, n = prec_session_nr_images(im->s);

	if (d->src != SRC_UNRESOLVED)
		return;
	d->src = SRC_NONE;
	if (d->kernel)
		return;
	for (i = 0; i < n; i++) {
		const struct prec_image_desc *img = prec_session_image(im->s, i);
		bool match;

		if (!img->size)
			continue;
		if (img->build_id_size && d->bid_size)
			match = prec_build_id_equal(img->build_id, img->build_id_size, d->bid,
						    d->bid_size);
		else
			match = !strcmp(img->path, d->path);
		if (match) {
			size_t *ni = realloc(d->imgs, (d->nr_imgs + 1) * sizeof(*ni));

			if (!ni)
				return;
			d->imgs = ni;
			d->imgs[d->nr_imgs++] = i;
		}
	}
	if (d->nr_imgs) {
		d->src = SRC_EMBEDDED;
		return;
	}
	dso_open_disk(im, d);
	if (d->disk) {
		d->src = SRC_DISK;
	} else if (d->mismatch) {
		d->src = SRC_MISMATCH;
		prec_session_warn(im->s,
				  "%s%s has build id %s but the recording has %s: not decoding "
				  "its code; point --symfs at the right files",
				  root, d->path, d->have_bid, d->want_bid);
	} else if (d->path[0] != '/') {
		prec_session_warn(im->s, "no code for %s: it is not embedded in the trace",
				  d->path);
	} else {
		prec_session_warn(im->s,
				  "no code for %s: not embedded in the trace and not found%s%s; "
				  "copy it there or record with the images embedded",
				  d->path, *root ? " under " : " on this system", root);
	}
}

static struct prec_symtab *dso_symtab_locked(struct prec_images *im, struct prec_dso *d);

static struct prec_symtab *dso_symtab(struct prec_images *im, struct prec_dso *d)
{
	struct prec_symtab *st;

	if (__atomic_load_n(&d->st_tried, __ATOMIC_ACQUIRE))
		return d->st;
	pthread_mutex_lock(&dso_mu);
	st = dso_symtab_locked(im, d);
	__atomic_store_n(&d->st_tried, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&dso_mu);
	return st;
}

static struct prec_symtab *dso_symtab_locked(struct prec_images *im, struct prec_dso *d)
{
	size_t i;

	if (d->st_tried)
		return d->st;
	if (d->kernel) {
		size_t len;
		const char *t = prec_session_kallsyms(im->s, &len);

		if (t)
			prec_symtab_from_kallsyms(t, len, &d->st);
		return d->st;
	}
	if (!d->resolved) {
		dso_resolve_locked(im, d);
		__atomic_store_n(&d->resolved, true, __ATOMIC_RELEASE);
	}
	/*
	 * Symbols come from the file (embedded images hold code segments only),
	 * or for a stripped one from its debug file under the symfs root or its
	 * MiniDebugInfo.
	 */
	dso_open_disk(im, d);
	if (d->disk) {
		int err = prec_symtab_from_elf_debug(d->disk_path, prec_session_symfs(im->s),
						     &d->st);

		/* Say it: otherwise its functions silently show as object+offset. */
		if (err)
			prec_session_warn(im->s, "no symbols for %s: %s; its code is named by "
					  "object and offset", d->disk_path, prec_strerror(err));
		return d->st;
	}
	/*
	 * An embedded image holding the whole ELF (the vdso, and files ptrec
	 * embeds whole so that their symbols travel) has its own symbols.
	 */
	for (i = 0; i < d->nr_imgs; i++) {
		const struct prec_image_desc *img = prec_session_image(im->s, d->imgs[i]);

		if (img->file_offset == 0 && img->size > 64 &&
		    !memcmp(img->bytes, "\177ELF", 4) &&
		    !prec_symtab_from_elf_mem(img->bytes, img->size, &d->st))
			break;
	}
	if (!d->st && d->mismatch && d->src == SRC_EMBEDDED)
		prec_session_warn(im->s,
				  "no symbols for %s: the file has build id %s, the recording %s",
				  d->path, d->have_bid, d->want_bid);
	return d->st;
}

/* ---- address spaces ---- */

static int maps_cmp(const void *a, const void *b)
{
	const struct prec_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* A copy of @src's maps with [start, end) cut out, plus room for one more. */
static int maps_copy_cut(const struct prec_aspace *src, uint64_t start, uint64_t end,
			 struct prec_map **out, size_t *nout)
{
	size_t i, n = 0, cap = (src ? src->n : 0) + 2;
	struct prec_map *m = malloc(cap * sizeof(*m));

	if (!m)
		return -ENOMEM;
	for (i = 0; src && i < src->n; i++) {
		const struct prec_map *o = &src->maps[i];

		if (o->end <= start || o->start >= end) {
			m[n++] = *o;
			continue;
		}
		if (o->start < start) {
			m[n] = *o;
			m[n].end = start;
			n++;
		}
		if (o->end > end) {
			if (n + 2 > cap) {
				struct prec_map *nm;

				cap *= 2;
				nm = realloc(m, cap * sizeof(*m));
				if (!nm) {
					free(m);
					return -ENOMEM;
				}
				m = nm;
			}
			m[n] = *o;
			m[n].pgoff += end - o->start;
			m[n].start = end;
			n++;
		}
	}
	*out = m;
	*nout = n;
	return 0;
}

static struct proc *proc_get(struct prec_images *im, int pid)
{
	struct proc *n;
	size_t i;

	for (i = im->nr_procs; i > 0; i--)
		if (im->procs[i - 1].pid == pid)
			return &im->procs[i - 1];
	if (PREC_ARRAY_RESERVE(im->procs, im->nr_procs, 1))
		return NULL;
	n = &im->procs[im->nr_procs++];
	memset(n, 0, sizeof(*n));
	n->pid = pid;
	return n;
}

static struct prec_aspace *proc_cur(struct proc *p)
{
	return p && p->n ? p->gens[p->n - 1] : NULL;
}

static int proc_push(struct prec_images *im, struct proc *p, uint64_t time,
		     struct prec_map *maps, size_t n, bool exec)
{
	struct prec_aspace *as = calloc(1, sizeof(*as)), **ng;

	if (!as) {
		free(maps);
		return -ENOMEM;
	}
	ng = realloc(p->gens, (p->n + 1) * sizeof(*ng));
	if (!ng) {
		free(maps);
		free(as);
		return -ENOMEM;
	}
	p->gens = ng;
	as->im = im;
	as->pid = p->pid;
	as->start = time;
	as->end = UINT64_MAX;
	as->maps = maps;
	as->n = n;
	as->exec = exec;
	if (p->n)
		p->gens[p->n - 1]->end = time;
	p->gens[p->n++] = as;
	return 0;
}

static int add_kmap(struct prec_images *im, uint64_t start, uint64_t end, uint64_t pgoff,
		    struct prec_dso *d)
{
	struct prec_map *n;

	if (PREC_ARRAY_RESERVE(im->kmaps, im->nr_kmaps, 1))
		return -ENOMEM;
	n = im->kmaps;
	n[im->nr_kmaps++] = (struct prec_map){ start, end, pgoff, d };
	return 0;
}

static int apply_sb(struct prec_images *im, const struct prec_sb *sb)
{
	struct proc *p, *parent;
	struct prec_map *maps;
	size_t n;
	int err;

	switch (sb->type) {
	case PREC_SB_FORK:
		if (sb->pid == sb->u.fork.ppid || sb->pid < 0)
			return 0;
		parent = NULL;
		for (n = 0; n < im->nr_procs; n++)
			if (im->procs[n].pid == sb->u.fork.ppid)
				parent = &im->procs[n];
		err = maps_copy_cut(proc_cur(parent), 0, 0, &maps, &n);
		if (err)
			return err;
		p = proc_get(im, sb->pid);
		if (!p) {
			free(maps);
			return -ENOMEM;
		}
		return proc_push(im, p, sb->time, maps, n, false);
	case PREC_SB_COMM:
		if (!sb->u.comm.exec || sb->pid < 0)
			return 0;
		p = proc_get(im, sb->pid);
		if (!p)
			return -ENOMEM;
		maps = malloc(sizeof(*maps));
		if (!maps)
			return -ENOMEM;
		return proc_push(im, p, sb->time, maps, 0, true);
	case PREC_SB_MMAP: {
		uint64_t start = sb->u.mmap.start, end = start + sb->u.mmap.len;
		struct prec_dso *d;

		if (!sb->u.mmap.len)
			return 0;
		if (sb->u.mmap.kernel) {
			d = dso_get(im, KERNEL_DSO, NULL, 0, true);
			if (!d)
				return -ENOMEM;
			/* perf's kernel map pgoff is the text address, not a file offset. */
			return add_kmap(im, start, end, start, d);
		}
		if (sb->pid < 0)
			return 0;
		p = proc_get(im, sb->pid);
		if (!p)
			return -ENOMEM;
		err = maps_copy_cut(proc_cur(p), start, end, &maps, &n);
		if (err)
			return err;
		if (sb->u.mmap.prot & PROT_EXEC) {
			d = dso_get(im, sb->u.mmap.path, sb->u.mmap.build_id,
				    sb->u.mmap.build_id_size, false);
			if (!d) {
				free(maps);
				return -ENOMEM;
			}
			maps[n++] = (struct prec_map){ start, end, sb->u.mmap.pgoff, d };
			qsort(maps, n, sizeof(*maps), maps_cmp);
		}
		return proc_push(im, p, sb->time, maps, n, false);
	}
	default:
		return 0;
	}
}

static int proc_cmp(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/*
 * The space at the time of an exec: a timestamp is a lower bound of when an
 * instruction ran (the last timing packet before it), so the last few
 * instructions before execve carry the exec's time as well as the first
 * ones of the new program. At that one time, @new's mappings lie over
 * @old's, and an address the new program does not map is the old one's.
 */
static int at_exec_space(struct prec_images *im, const struct prec_aspace *old,
			 const struct prec_aspace *new, struct prec_aspace **out)
{
	struct prec_aspace cur = { .n = 0 }, *as;
	struct prec_map *m;
	size_t i, n;
	int err;

	err = maps_copy_cut(old, 0, 0, &cur.maps, &cur.n);
	if (err)
		return err;
	for (i = 0; i < new->n; i++) {
		err = maps_copy_cut(&cur, new->maps[i].start, new->maps[i].end, &m, &n);
		free(cur.maps);
		if (err)
			return err;
		cur.maps = m;
		cur.n = n;
	}
	m = realloc(cur.maps, (cur.n + new->n + 1) * sizeof(*m));
	as = calloc(1, sizeof(*as));
	if (!m || !as) {
		free(m ? m : cur.maps);
		free(as);
		return -ENOMEM;
	}
	memcpy(m + cur.n, new->maps, new->n * sizeof(*m));
	n = cur.n + new->n;
	qsort(m, n, sizeof(*m), maps_cmp);
	as->im = im;
	as->pid = new->pid;
	as->start = new->start;
	/* From the next nanosecond on, the new program's space alone. */
	as->end = new->start == UINT64_MAX ? UINT64_MAX : new->start + 1;
	as->maps = m;
	as->n = n;
	*out = as;
	return 0;
}

static int build_exec_spaces(struct prec_images *im)
{
	size_t i, g, last;
	int err;

	for (i = 0; i < im->nr_procs; i++) {
		struct proc *p = &im->procs[i];

		for (g = 1; g < p->n; g++) {
			if (!p->gens[g]->exec)
				continue;
			/* The one prec_images_aspace() finds at that time: the last one. */
			for (last = g; last + 1 < p->n &&
				       p->gens[last + 1]->start == p->gens[g]->start;
			     last++)
				;
			if (p->gens[last]->at_exec)
				continue;
			err = at_exec_space(im, p->gens[g - 1], p->gens[last],
					    &p->gens[last]->at_exec);
			if (err)
				return err;
		}
	}
	return 0;
}

static int tid_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

/*
 * Finds now where the code of every mapping of a traced process comes from,
 * so that the warnings about missing or mismatching files are there before
 * anything is decoded (a caller prints them first). Traced processes: those
 * of the threads with a stream; with per-CPU streams, all.
 */
static int resolve_traced(struct prec_images *im)
{
	size_t ns = prec_session_nr_streams(im->s), nsb = prec_session_nr_sb(im->s);
	size_t i, j, k, nt = 0;
	bool all = false;
	int *tids, err = 0;
	bool *traced;

	tids = calloc(ns + 1, sizeof(*tids));
	traced = calloc(im->nr_procs + 1, sizeof(*traced));
	if (!tids || !traced) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < ns; i++) {
		const struct prec_stream *st = prec_session_stream(im->s, i);

		if (st->tid < 0)
			all = true;
		else
			tids[nt++] = st->tid;
	}
	if (nt > 1)
		qsort(tids, nt, sizeof(*tids), tid_cmp);
	for (i = 0; !all && i < nsb; i++) {
		const struct prec_sb *sb = prec_session_sb(im->s, i);
		struct proc key = { .pid = sb->pid }, *p;

		/* bsearch() needs a base even for no elements (C11 7.22.5). */
		if (sb->pid < 0 || sb->tid < 0 || !nt || !im->nr_procs ||
		    !bsearch(&sb->tid, tids, nt, sizeof(*tids), tid_cmp))
			continue;
		p = bsearch(&key, im->procs, im->nr_procs, sizeof(*im->procs), proc_cmp);
		if (p)
			traced[p - im->procs] = true;
	}
	for (i = 0; i < im->nr_procs; i++) {
		const struct proc *p = &im->procs[i];

		if (!all && !traced[i])
			continue;
		for (j = 0; j < p->n; j++)
			for (k = 0; k < p->gens[j]->n; k++)
				dso_resolve(im, p->gens[j]->maps[k].dso);
	}
out:
	free(tids);
	free(traced);
	return err;
}

#ifndef PREC_NO_LIBIPT
/* The session's images and kernel text in a memfd, for libipt's sections to map. */
static int write_memfd(struct prec_images *im)
{
	size_t i, ni = prec_session_nr_images(im->s), nk = prec_session_nr_kernel_text(im->s);
	uint64_t off = 0;
	int err;

	im->img_off = calloc(ni + 1, sizeof(*im->img_off));
	im->ktext_off = calloc(nk + 1, sizeof(*im->ktext_off));
	if (!im->img_off || !im->ktext_off)
		return -ENOMEM;
	if (!ni && !nk)
		return 0;
	im->memfd = memfd_create("ptrec-images", MFD_CLOEXEC);
	if (im->memfd < 0)
		return -errno;
	for (i = 0; i < ni; i++) {
		const struct prec_image_desc *d = prec_session_image(im->s, i);

		im->img_off[i] = off;
		err = prec_write_full(im->memfd, d->bytes, d->size);
		if (err)
			return err;
		off += d->size;
	}
	for (i = 0; i < nk; i++) {
		const void *b;
		uint64_t addr;
		size_t size;

		prec_session_kernel_text(im->s, i, &addr, &b, &size);
		im->ktext_off[i] = off;
		err = prec_write_full(im->memfd, b, size);
		if (err)
			return err;
		off += size;
	}
	snprintf(im->memfd_path, sizeof(im->memfd_path), "/proc/self/fd/%d", im->memfd);
	return 0;
}
#endif

int prec_images_new(struct prec_session *s, struct prec_images **out)
{
	struct prec_images *im = calloc(1, sizeof(*im));
	size_t i, n = prec_session_nr_sb(s);
	int err = 0;

	*out = NULL;
	if (!im)
		return -ENOMEM;
	im->s = s;
	im->memfd = -1;
	im->kernel_only.im = im;
	im->kernel_only.pid = -1;
	im->kernel_only.end = UINT64_MAX;
	im->kdso = dso_get(im, KERNEL_DSO, NULL, 0, true);
	if (!im->kdso) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		err = apply_sb(im, prec_session_sb(s, i));
		if (err)
			goto out;
	}
	if (im->nr_procs > 1)
		qsort(im->procs, im->nr_procs, sizeof(*im->procs), proc_cmp);
	err = build_exec_spaces(im);
	if (!err)
		err = resolve_traced(im);
	if (err)
		goto out;
#ifndef PREC_NO_LIBIPT
	im->isc = pt_iscache_alloc("ptrec");
	if (!im->isc) {
		err = -ENOMEM;
		goto out;
	}
	pt_iscache_set_limit(im->isc, ISCACHE_LIMIT);
#endif
out:
	if (err) {
		prec_images_free(im);
		return err;
	}
	*out = im;
	return 0;
}

struct prec_aspace *prec_images_aspace(struct prec_images *im, int pid, uint64_t time)
{
	size_t lo = 0, hi = im->nr_procs;
	struct proc *p;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (im->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == im->nr_procs || im->procs[lo].pid != pid || !im->procs[lo].n)
		return &im->kernel_only;
	p = &im->procs[lo];
	lo = 0;
	hi = p->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->gens[mid]->start <= time)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && p->gens[lo - 1]->at_exec && p->gens[lo - 1]->start == time)
		return p->gens[lo - 1]->at_exec;
	return p->gens[lo ? lo - 1 : 0];
}

struct prec_aspace *prec_images_aspace_span(struct prec_images *im, int pid, uint64_t time,
					    uint64_t *from, uint64_t *until)
{
	struct prec_aspace *as = prec_images_aspace(im, pid, time);
	const struct proc *p = NULL;
	size_t lo = 0, hi = im->nr_procs, g;

	*from = 0;
	*until = UINT64_MAX;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (im->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < im->nr_procs && im->procs[lo].pid == pid && im->procs[lo].n)
		p = &im->procs[lo];
	if (!p)
		return as;
	/* The generation holding @time, or the first one before them all. */
	for (g = 0; g + 1 < p->n && p->gens[g + 1]->start <= time; g++)
		;
	if (time < p->gens[0]->start) {
		*until = p->gens[0]->start;
		return as;
	}
	if (as != p->gens[g]) {
		/* The instant of an exec. */
		*from = time;
		*until = time + 1;
		return as;
	}
	*from = p->gens[g]->start + (p->gens[g]->at_exec ? 1 : 0);
	*until = g + 1 < p->n ? p->gens[g + 1]->start : UINT64_MAX;
	return as;
}

struct prec_aspace *prec_images_aspace_cached(struct prec_images *im,
					      struct prec_aspace_cache *c, int pid,
					      uint64_t time)
{
	if (!c->as || c->pid != pid || time < c->from || time >= c->until) {
		c->as = prec_images_aspace_span(im, pid, time, &c->from, &c->until);
		c->pid = pid;
	}
	return c->as;
}

/*
 * Ids: 0 none, 1 the kernel-only space, else the process's index (+1) in the
 * high half and its generation's (twice, +1 for the space at its exec, +2)
 * in the low one. They depend only on the trace, so another process that
 * built the store from the same file finds the same space by them.
 */
uint64_t prec_images_aspace_id(const struct prec_images *im, const struct prec_aspace *as)
{
	size_t i, g;

	if (!as)
		return 0;
	if (as == &im->kernel_only)
		return 1;
	for (i = 0; i < im->nr_procs; i++) {
		const struct proc *p = &im->procs[i];

		if (p->pid != as->pid)
			continue;
		for (g = 0; g < p->n; g++) {
			if (p->gens[g] == as)
				return (uint64_t)(i + 1) << 32 | (g * 2 + 2);
			if (p->gens[g]->at_exec == as)
				return (uint64_t)(i + 1) << 32 | (g * 2 + 3);
		}
	}
	return UINT64_MAX;
}

struct prec_aspace *prec_images_aspace_by_id(struct prec_images *im, uint64_t id, bool *ok)
{
	size_t i = (size_t)(id >> 32), g = (size_t)(id & 0xffffffff);

	*ok = true;
	if (id == 0)
		return NULL;
	if (id == 1)
		return &im->kernel_only;
	if (i >= 1 && i <= im->nr_procs && g >= 2 && (g - 2) / 2 < im->procs[i - 1].n) {
		struct prec_aspace *as = im->procs[i - 1].gens[(g - 2) / 2];

		if (!(g & 1))
			return as;
		if (as->at_exec)
			return as->at_exec;
	}
	*ok = false;
	return NULL;
}

int prec_aspace_pid(const struct prec_aspace *as)
{
	return as->pid;
}

uint64_t prec_aspace_end(const struct prec_aspace *as)
{
	return as->end;
}

static const struct prec_map *find_in(const struct prec_map *m, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < m[lo - 1].end)
		return &m[lo - 1];
	return NULL;
}

const struct prec_map *prec_aspace_find(const struct prec_aspace *as, uint64_t addr)
{
	const struct prec_images *im = as->im;
	size_t i;

	if (!prec_is_kernel_addr(addr))
		return find_in(as->maps, as->n, addr);
	for (i = 0; i < im->nr_kmaps; i++)
		if (addr >= im->kmaps[i].start && addr < im->kmaps[i].end)
			return &im->kmaps[i];
	/*
	 * A process mapping at a kernel address: no recording has one (the
	 * kernel maps no user code there), but a raw trace's images are where
	 * the user put them, with no privilege split.
	 */
	return find_in(as->maps, as->n, addr);
}

static size_t read_ktext(struct prec_images *im, uint64_t addr, void *buf, size_t len)
{
	size_t i, n = prec_session_nr_kernel_text(im->s);

	for (i = 0; i < n; i++) {
		const void *b;
		uint64_t a;
		size_t size, k;

		prec_session_kernel_text(im->s, i, &a, &b, &size);
		if (addr < a || addr - a >= size)
			continue;
		k = PREC_MIN(len, size - (size_t)(addr - a));
		memcpy(buf, (const uint8_t *)b + (addr - a), k);
		return k;
	}
	return 0;
}

size_t prec_aspace_read(struct prec_aspace *as, uint64_t addr, void *buf, size_t len)
{
	struct prec_images *im = as->im;
	const struct prec_map *m;
	uint64_t off;
	size_t i, k;

	if (prec_is_kernel_addr(addr)) {
		k = read_ktext(im, addr, buf, len);
		if (k)
			return k;
	}
	m = prec_aspace_find(as, addr);
	if (!m || m->dso->kernel)
		return 0;
	len = PREC_MIN(len, m->end - addr);
	off = m->pgoff + (addr - m->start);
	dso_resolve(im, m->dso);
	if (m->dso->src == SRC_DISK) {
		if (off >= m->dso->disk_size)
			return 0;
		k = PREC_MIN(len, m->dso->disk_size - off);
		memcpy(buf, m->dso->disk + off, k);
		return k;
	}
	for (i = 0; i < m->dso->nr_imgs; i++) {
		const struct prec_image_desc *d = prec_session_image(im->s, m->dso->imgs[i]);

		if (off < d->file_offset || off - d->file_offset >= d->size)
			continue;
		k = PREC_MIN(len, d->size - (off - d->file_offset));
		memcpy(buf, (const uint8_t *)d->bytes + (off - d->file_offset), k);
		return k;
	}
	return 0;
}

void prec_aspace_resolve(struct prec_aspace *as, uint64_t addr, struct prec_loc *loc)
{
	struct prec_images *im = as->im;
	const struct prec_map *m = prec_aspace_find(as, addr);
	struct prec_dso *d;

	memset(loc, 0, sizeof(*loc));
	loc->vaddr = addr;
	if (m) {
		d = m->dso;
	} else if (prec_is_kernel_addr(addr) &&
		   (prec_session_nr_kernel_text(im->s) || im->nr_kmaps ||
		    prec_session_kallsyms(im->s, &(size_t){ 0 }))) {
		d = im->kdso;
	} else {
		return;
	}
	loc->map = m;
	loc->dso = d->path;
	loc->symtab = dso_symtab(im, d);
	if (!d->kernel && m)
		prec_symtab_off_to_vaddr(loc->symtab, m->pgoff + (addr - m->start), &loc->vaddr);
	loc->sym = prec_symtab_lookup(loc->symtab, loc->vaddr, &loc->symoff);
}

/* Appends the @n bytes at @s to the string of @len bytes in @buf (@size), as far as it fits. */
static size_t append_cut(char *buf, size_t size, size_t len, const char *s, size_t n)
{
	if (n > size - 1 - len)
		n = size - 1 - len;
	memcpy(buf + len, s, n);
	return len + n;
}

/*
 * "OBJECT+0xOFFSET", as snprintf() would write it (cut to @size), without
 * it: a call trace writes one for each call into code without symbols.
 */
size_t prec_loc_objoff(const struct prec_loc *loc, char *buf, size_t size)
{
	const char *base;
	char hex[16];
	size_t len, nh = 0;
	uint64_t v;

	if (!size)
		return 0;
	buf[0] = '\0';
	if (!loc->map || !loc->dso || loc->map->dso->kernel)
		return 0;
	base = strrchr(loc->dso, '/');
	base = base && base[1] ? base + 1 : loc->dso;
	len = append_cut(buf, size, 0, base, strlen(base));
	len = append_cut(buf, size, len, "+0x", 3);
	v = loc->vaddr;
	do
		hex[sizeof(hex) - ++nh] = "0123456789abcdef"[v & 15];
	while ((v >>= 4) && nh < sizeof(hex));
	len = append_cut(buf, size, len, hex + sizeof(hex) - nh, nh);
	buf[len] = '\0';
	return len;
}

/* ---- libipt ---- */
#ifndef PREC_NO_LIBIPT

static int add_section(struct pt_image_section_cache *isc, struct pt_image *img, const char *file,
		       uint64_t foff, uint64_t size, uint64_t vaddr)
{
	int isid;

	if (!size)
		return 0;
	isid = pt_iscache_add_file(isc, file, foff, size, vaddr);
	if (isid < 0)
		return -PREC_E_DECODE;
	if (pt_image_add_cached(img, isc, isid, NULL) < 0)
		return -PREC_E_DECODE;
	return 0;
}

static int add_map_sections(struct prec_images *im, struct pt_image_section_cache *isc,
			    struct pt_image *img, const struct prec_map *m)
{
	struct prec_dso *d = m->dso;
	uint64_t len = m->end - m->start;
	size_t i;
	int err;

	dso_resolve(im, d);
	if (d->src == SRC_DISK) {
		if (m->pgoff >= d->disk_size)
			return 0;
		return add_section(isc, img, d->disk_path, m->pgoff,
				   PREC_MIN(len, d->disk_size - m->pgoff), m->start);
	}
	for (i = 0; i < d->nr_imgs; i++) {
		const struct prec_image_desc *e = prec_session_image(im->s, d->imgs[i]);
		uint64_t lo = PREC_MAX(m->pgoff, e->file_offset);
		uint64_t hi = PREC_MIN(m->pgoff + len, e->file_offset + e->size);

		if (lo >= hi)
			continue;
		err = add_section(isc, img, im->memfd_path,
				  im->img_off[d->imgs[i]] + (lo - e->file_offset), hi - lo,
				  m->start + (lo - m->pgoff));
		if (err)
			return err;
	}
	return 0;
}

/* A new libipt image of @as with its sections in @isc. */
static struct pt_image *build_image(struct prec_aspace *as, struct pt_image_section_cache *isc)
{
	static pthread_mutex_t memfd_mu = PTHREAD_MUTEX_INITIALIZER;
	struct prec_images *im = as->im;
	size_t i, nk = prec_session_nr_kernel_text(im->s);
	struct pt_image *img;
	char name[32];
	int err;

	pthread_mutex_lock(&memfd_mu);
	if (!im->memfd_done) {
		im->memfd_err = write_memfd(im);
		/* Else the decode only says "no code image" where code was needed. */
		if (im->memfd_err) {
			pthread_mutex_lock(&dso_mu);
			prec_session_warn(im->s,
					  "cannot hand the code to libipt's block decoder (a memory "
					  "file: %s): its decode has no code; the default core "
					  "(--core walk) reads the code itself",
					  strerror(-im->memfd_err));
			pthread_mutex_unlock(&dso_mu);
		}
	}
	im->memfd_done = true;
	err = im->memfd_err;
	pthread_mutex_unlock(&memfd_mu);
	if (err)
		return NULL;

	snprintf(name, sizeof(name), "pid %d", as->pid);
	img = pt_image_alloc(name);
	if (!img)
		return NULL;
	for (i = 0; i < as->n; i++)
		add_map_sections(im, isc, img, &as->maps[i]);
	for (i = 0; i < nk; i++) {
		const void *b;
		uint64_t addr;
		size_t size;

		prec_session_kernel_text(im->s, i, &addr, &b, &size);
		add_section(isc, img, im->memfd_path, im->ktext_off[i], size, addr);
	}
	return img;
}

struct pt_image *prec_aspace_pt_image(struct prec_aspace *as)
{
	if (as->pt || as->pt_failed)
		return as->pt;
	as->pt = build_image(as, as->im->isc);
	as->pt_failed = !as->pt;
	return as->pt;
}

struct pt_image *prec_aspace_pt_image_in(struct prec_aspace *as,
					 struct pt_image_section_cache *isc)
{
	return build_image(as, isc);
}

struct pt_image_section_cache *prec_iscache_new(void)
{
	struct pt_image_section_cache *isc = pt_iscache_alloc(NULL);

	if (isc)
		pt_iscache_set_limit(isc, ISCACHE_LIMIT);
	return isc;
}

#else
/* Built without libipt (see the Makefile's NO_LIBIPT): there are no libipt images. */
struct pt_image *prec_aspace_pt_image(struct prec_aspace *as)
{
	return NULL;
}

struct pt_image *prec_aspace_pt_image_in(struct prec_aspace *as,
					 struct pt_image_section_cache *isc)
{
	return NULL;
}

struct pt_image_section_cache *prec_iscache_new(void)
{
	return NULL;
}
#endif

struct pt_image_section_cache *prec_images_iscache(struct prec_images *im)
{
	return im->isc;
}

struct prec_symtab *prec_images_kernel_symtab(struct prec_images *im)
{
	return dso_symtab(im, im->kdso);
}

int prec_session_finalize(struct prec_session *s)
{
	struct prec_images *im = NULL;
	int err = prec_session_build_model(s);

	if (err)
		return err;
	err = prec_images_new(s, &im);
	if (err)
		return err;
	prec_session_set_images(s, im, prec_images_free);
	return 0;
}

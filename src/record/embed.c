// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "base/array.h"
#include "record/embed.h"
#include "base/symtab.h"
#include "tracefile/tfile.h"
#include "base/util.h"

#ifndef PERF_RECORD_MISC_MMAP_BUILD_ID
#define PERF_RECORD_MISC_MMAP_BUILD_ID (1 << 14)
#endif

#define PREC_EMBED_WHOLE_MAX (64 << 20)

struct mapping {
	char *path;
	uint64_t addr, len, pgoff;
	uint8_t build_id[PREC_TFILE_BUILD_ID_MAX];
	uint32_t build_id_size;
	int32_t pid;   /* the process it was first seen in */
	bool queued;   /* handed to the embedder (or embedded) */
};

/* Where a process had a noted file mapped (for naming the place it died). */
struct placed {
	int32_t pid;
	size_t file; /* index in prec_mapset.m */
	uint64_t addr, len, pgoff;
};

struct prec_mapset {
	struct mapping *m;
	size_t n;
	struct placed *at;
	size_t nat;
	struct { int32_t pid, ppid; } *forks; /* new processes and their parents (FORK) */
	size_t nforks;
	char death[256]; /* "killed by SIGSEGV in f(), called from g()", or "" */
	char child_death[256]; /* the first process the workload started that a signal killed */
	unsigned child_deaths; /* how many did */
	uint64_t aux_time; /* time of the last PERF_RECORD_AUX: trace handed over up to then */
	/* The embedder thread (prec_mapset_start()); lock guards m, n and what follows. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t th;
	bool running, stop;
	size_t next;      /* the next mapping for the thread */
	size_t done;      /* mappings handled (embedded, referenced or given up) */
	struct prec_tfile_writer *w;
	bool refs_only;
	int err;          /* the thread's first write error */
	int (*vdso)(void *ctx, void **bytes, size_t *n); /* prec_mapset_vdso_from() */
	void *vdso_ctx;
	struct prec_embed_result res;
};

struct prec_mapset *prec_mapset_new(void)
{
	struct prec_mapset *s = calloc(1, sizeof(struct prec_mapset));

	if (s) {
		pthread_mutex_init(&s->lock, NULL);
		pthread_cond_init(&s->cond, NULL);
	}
	return s;
}

void prec_mapset_free(struct prec_mapset *s)
{
	size_t i;

	if (!s)
		return;
	prec_mapset_stop(s);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	for (i = 0; i < s->n; i++)
		free(s->m[i].path);
	free(s->m);
	free(s->at);
	free(s->forks);
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

static int add(struct prec_mapset *s, const struct mapping *nm, int32_t pid)
{
	size_t i;

	if (PREC_ARRAY_RESERVE(s->at, s->nat, 1))
		return -ENOMEM;
	/* The embedder reads s->m: grow it under the lock. */
	pthread_mutex_lock(&s->lock);
	i = PREC_ARRAY_RESERVE(s->m, s->n, 1);
	pthread_mutex_unlock(&s->lock);
	if (i)
		return -ENOMEM;
	for (i = 0; i < s->n; i++)
		if (same(&s->m[i], nm))
			break;
	s->at[s->nat++] = (struct placed){ pid, i, nm->addr, nm->len, nm->pgoff };
	if (i < s->n)
		return 0;
	/* Room was made above, under the lock: reserving again here could move s->m. */
	s->m[s->n] = *nm;
	s->m[s->n].pid = pid;
	s->m[s->n].path = strdup(nm->path);
	if (!s->m[s->n].path)
		return -ENOMEM;
	pthread_mutex_lock(&s->lock);
	s->n++;
	if (s->running) {
		/* Trace chunks wait for this image: the file stays decodable when cut. */
		prec_tfile_writer_hold(s->w, true);
		s->m[s->n - 1].queued = true;
		pthread_cond_signal(&s->cond);
	}
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* The function at @ip of process @pid: "name()", else "FILE+0xOFF"; false if @pid has nothing there. */
static bool place_in(const struct prec_mapset *s, int32_t pid, uint64_t ip, char *out, size_t size)
{
	size_t i;

	for (i = s->nat; i-- > 0;) {
		const struct placed *a = &s->at[i];
		const char *path = s->m[a->file].path;
		struct prec_symtab *st = NULL;
		const struct prec_sym *sym = NULL;
		uint64_t off = ip - a->addr + a->pgoff, va, symoff;

		if (a->pid != pid || ip < a->addr || ip - a->addr >= a->len)
			continue;
		if (prec_symtab_from_elf(path, &st) == 0 &&
		    prec_symtab_off_to_vaddr(st, off, &va) == 0)
			sym = prec_symtab_lookup(st, va, &symoff);
		if (sym)
			snprintf(out, size, "%s()", sym->name);
		else
			snprintf(out, size, "%s+%#" PRIx64, path, off);
		prec_symtab_free(st);
		return true;
	}
	return false;
}

/*
 * The function at @ip of process @pid, else the address. A forked process
 * has its parent's mappings until it maps or execs (the kernel reports no
 * MMAP for what fork copies), so the parents are asked in turn.
 */
static void place_name(const struct prec_mapset *s, int32_t pid, uint64_t ip, char *out,
		       size_t size)
{
	size_t i;
	int depth;

	for (depth = 0; depth < 64 && pid > 0; depth++) {
		if (place_in(s, pid, ip, out, size))
			return;
		for (i = s->nforks; i-- > 0 && s->forks[i].pid != pid;)
			;
		pid = i < s->nforks ? s->forks[i].ppid : 0;
	}
	snprintf(out, size, "%#" PRIx64, ip);
}

/*
 * PREC_RECORD_SIGNAL of the thread that ran last in its process: names the
 * signal and the place, while the files are still there to be read.
 */
static void note_death(struct prec_mapset *s, const unsigned char *p, size_t size)
{
	uint32_t pid, sig, flags;
	uint64_t ip, caller;
	char where[96], from[96] = "", name[32], *to;
	int k;

	if (size < PREC_RECORD_SIGNAL_SIZE)
		return;
	memcpy(&pid, p + 8, 4);
	memcpy(&sig, p + 16, 4);
	memcpy(&flags, p + 20, 4);
	memcpy(&ip, p + 24, 8);
	memcpy(&caller, p + 32, 8);
	if (!(flags & PREC_SIGREC_LAST))
		return;
	to = flags & PREC_SIGREC_DESCENDANT ? s->child_death : s->death;
	if (flags & PREC_SIGREC_DESCENDANT)
		s->child_deaths++;
	if (to[0])
		return;
	prec_signal_name((int)sig, name, sizeof(name));
	if (ip) {
		place_name(s, (int32_t)pid, ip, where, sizeof(where));
		if (caller)
			place_name(s, (int32_t)pid, caller, from, sizeof(from));
	}
	k = flags & PREC_SIGREC_DESCENDANT ? snprintf(to, sizeof(s->death), "process %u ", pid) : 0;
	snprintf(to + k, sizeof(s->death) - (size_t)k, "killed by %s%s%s%s%s", name, ip ? " in " : "",
		 ip ? where : "", from[0] ? ", called from " : "", from);
}

uint64_t prec_mapset_aux_time(const struct prec_mapset *s)
{
	return s->aux_time;
}

const char *prec_mapset_death(const struct prec_mapset *s)
{
	return s->death[0] ? s->death : NULL;
}

const char *prec_mapset_child_death(const struct prec_mapset *s, unsigned *n)
{
	*n = s->child_deaths;
	return s->child_death[0] ? s->child_death : NULL;
}

int prec_mapset_note(struct prec_mapset *s, const void *rec, size_t size)
{
	const struct perf_event_header *h = rec;
	const unsigned char *p = rec;
	struct mapping m;
	size_t fn_off, maxlen;
	uint32_t prot;
	int32_t pid;

	if (size < sizeof(*h) || h->size > size)
		return 0;
	if (h->type == PREC_RECORD_SIGNAL) {
		note_death(s, p, h->size);
		return 0;
	}
	if (h->type == PERF_RECORD_FORK && h->size >= 8 + 16) {
		int32_t ppid;

		memcpy(&pid, p + 8, 4);
		memcpy(&ppid, p + 12, 4);
		if (pid == ppid)
			return 0; /* a thread */
		if (PREC_ARRAY_RESERVE(s->forks, s->nforks, 1))
			return -ENOMEM;
		s->forks[s->nforks].pid = pid;
		s->forks[s->nforks++].ppid = ppid;
		return 0;
	}
	/* ptrec's trailer (sample_id_all, TID|TIME|CPU|IDENTIFIER): time 24 bytes from the end. */
	if (h->type == PERF_RECORD_AUX && h->size >= 8 + 24 + 32) {
		uint64_t t;

		memcpy(&t, p + h->size - 24, 8);
		if (t > s->aux_time)
			s->aux_time = t;
		return 0;
	}
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
	memcpy(&pid, p + 8, 4);
	return add(s, &m, pid);
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

/*
 * The bytes of mapping @m: through /proc/PID/map_files while the process
 * lives (the very file it mapped, even if its path changed since), else
 * the path.
 */
static int read_image(const struct mapping *m, uint64_t off, uint64_t len, void **out, size_t *n)
{
	char mf[96];

	snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, m->pid, m->addr,
		 m->addr + m->len);
	if (m->pid > 0 && read_range(mf, off, len, out, n) == 0)
		return 0;
	return read_range(m->path, off, len, out, n);
}

void prec_mapset_vdso_from(struct prec_mapset *s, int (*fn)(void *ctx, void **bytes, size_t *n),
			   void *ctx)
{
	s->vdso = fn;
	s->vdso_ctx = ctx;
}

/* Writes the IMAGE of one mapping (see prec_mapset_embed()). */
static int embed_one(const struct prec_mapset *s, const struct mapping *m,
		     struct prec_tfile_writer *w, bool refs_only, struct prec_embed_result *res)
{
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
	int err;

	memcpy(img.build_id, m->build_id, m->build_id_size);
	if (!strcmp(m->path, "[vdso]")) {
		img.file_offset = 0;
		if (!refs_only && !(s->vdso && s->vdso(s->vdso_ctx, &owned, &n) == 0))
			own_vdso(&bytes, &n);
		if (owned)
			bytes = owned;
		if (bytes)
			img.size = n;
	} else {
		uint8_t id[PREC_TFILE_BUILD_ID_MAX];
		int idn = prec_elf_build_id(m->path, id, sizeof(id));

		if (idn < 0 && idn != -PREC_E_FORMAT) {
			res->missing++;
			problem(res, m->path, prec_strerror(idn));
			return 0;
		}
		if (m->build_id_size && idn > 0 &&
		    ((uint32_t)idn != m->build_id_size || memcmp(id, m->build_id, (size_t)idn))) {
			res->mismatched++;
			problem(res, m->path,
				"the file changed since it was mapped (build id differs); not embedded");
			return 0;
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
				err = read_image(m, 0, (uint64_t)st.st_size, &owned, &n);
			} else {
				err = read_image(m, m->pgoff, m->len, &owned, &n);
			}
			if (err) {
				res->missing++;
				problem(res, m->path, prec_strerror(err));
				return 0;
			}
			bytes = owned;
			img.size = n;
		}
	}
	/* NULL bytes: the writer records a reference (path, build id, size). */
	err = prec_tfile_write_image(w, &img, refs_only ? NULL : bytes);
	free(owned);
	if (err < 0)
		return err;
	if (err == 1 && (refs_only || !bytes)) {
		res->references++;
	} else if (err == 1) {
		res->embedded++;
		res->bytes += img.size;
	}
	return 0;
}

static void add_result(struct prec_embed_result *to, const struct prec_embed_result *from)
{
	to->embedded += from->embedded;
	to->references += from->references;
	to->missing += from->missing;
	to->mismatched += from->mismatched;
	to->bytes += from->bytes;
	if (!to->first_problem[0])
		memcpy(to->first_problem, from->first_problem, sizeof(to->first_problem));
}

/* The embedder: each mapping's image as soon as it is noted, off the drain's path. */
static void *embedder(void *arg)
{
	struct prec_mapset *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct mapping m;
		int err;

		while (s->next == s->n && !s->stop)
			pthread_cond_wait(&s->cond, &s->lock);
		if (s->next == s->n)
			break;
		m = s->m[s->next++];
		m.path = strdup(m.path);
		pthread_mutex_unlock(&s->lock);
		err = m.path ? (s->err ? 0 : embed_one(s, &m, s->w, s->refs_only, &s->res)) : -ENOMEM;
		free(m.path);
		prec_tfile_writer_hold(s->w, false);
		pthread_mutex_lock(&s->lock);
		s->done++;
		if (err && !s->err)
			s->err = err;
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int prec_mapset_start(struct prec_mapset *s, struct prec_tfile_writer *w, bool refs_only)
{
	int err;

	pthread_mutex_lock(&s->lock);
	s->w = w;
	s->refs_only = refs_only;
	s->next = s->n;
	err = -pthread_create(&s->th, NULL, embedder, s);
	s->running = !err;
	pthread_mutex_unlock(&s->lock);
	return err;
}

/* Lets the embedder finish what it was given and waits for it. */
void prec_mapset_stop(struct prec_mapset *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	if (!s->running) {
		pthread_mutex_unlock(&s->lock);
		return;
	}
	s->stop = true;
	s->running = false;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->th, NULL);
}

int prec_mapset_embed(struct prec_mapset *s, struct prec_tfile_writer *w, bool refs_only,
		      struct prec_embed_result *res)
{
	size_t i;
	int err;

	prec_mapset_stop(s);
	memset(res, 0, sizeof(*res));
	add_result(res, &s->res);
	if (s->err)
		return s->err;
	for (i = 0; i < s->n; i++) {
		if (s->m[i].queued)
			continue;
		s->m[i].queued = true;
		err = embed_one(s, &s->m[i], w, refs_only, res);
		pthread_mutex_lock(&s->lock);
		s->done++;
		pthread_mutex_unlock(&s->lock);
		if (err)
			return err;
	}
	return 0;
}

void prec_mapset_progress(struct prec_mapset *s, size_t *done, size_t *total)
{
	pthread_mutex_lock(&s->lock);
	*done = s->done;
	*total = s->n;
	pthread_mutex_unlock(&s->lock);
}

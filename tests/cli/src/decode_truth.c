// SPDX-License-Identifier: MIT
/*
 * decode_truth: the call trace that ptdump must print for a software-tracer
 * recording, derived from the tracer's ground truth alone, without ptdump's
 * decoder or symbol code.
 *
 *   decode_truth [-r] [-m PATH] [-t TRIGGER]... SIDEBAND TRUTH
 *
 * SIDEBAND is the text of "ptdump --sideband" (only its MMAP, COMM exec,
 * FORK and trigger-sample lines are used: they say where each file was
 * mapped); TRUTH is the file of "ptrec record --emulate-truth". Each
 * thread's blocks are walked in order; the last instruction of a block is
 * classified with capstone from the bytes of the mapped file on disk, and
 * together with the next block's start gives calls, returns, system calls
 * and interruptions. Names come from the ELF symbol tables (libelf) of the
 * mapped files and PLT stubs from objdump's labels (name@plt).
 *
 * Output, one line per event, for comparison with the normalised output of
 * ptdump --call-trace (or with -r --call-ret-trace):
 *	tid TAB [flag TAB] indent name
 * with four spaces of indent per call depth, perf's depth rules (a call is
 * shown after its push, a return before its pop, a trace begin pops the
 * frame returning to it), and an address no symbol names as "file+0xOFF"
 * (OFF its ELF address, or file offset if the file is not readable), %16x
 * outside any mapping. Trace
 * begins and ends are lines of the call-ret trace only; in the call trace a
 * system call is one "[syscall]" line a level below its caller.
 *
 * -t NAME: trigger samples of event NAME (from the sideband) that changed
 * no state still trapped into the kernel, which the trace shows as a trace
 * end and a begin at the sample's IP. The sample is placed by its time,
 * which for a single-threaded process is the thread's instruction index
 * plus a constant learnt from the pause/resume lines.
 *
 * -p: a profile instead of a call trace, for ptdump --report and --windows:
 * per function (file name and symbol) the calls and the instructions that
 * ran in it traced, then per thread each trace window (resume to pause) with
 * its instructions and calls:
 *	F TAB file TAB name TAB calls TAB instructions
 *	W TAB tid TAB instructions TAB calls
 * A block's instructions count for the function of its first address.
 *
 * -u: the trace has no timestamps, so an exec does not restart the call
 * depth (ptdump restarts it where timestamps place the exec).
 *
 * -m PATH: the file PATH is missing for the decoder (neither in the trace
 * file nor on disk), so nothing in it has a name: addresses in it are shown
 * as numbers.
 *
 * -f NAME: the recording had the address filter "filter NAME @ OBJ" (the
 * function's symbol range): as the Intel SDM's IP filtering, whether a thread
 * is traced (FilterEn) is decided where a taken branch or an event (thread
 * start, return from a system call, resume, interruption) lands, by whether
 * that address lies in NAME; sequential flow does not change it. Repeatable.
 *
 * Exit status: 0, 1 on bad input (with a message), 2 for usage.
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("decode_truth: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz ? sz : 1);

	if (!p)
		die("out of memory");
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		die("out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		die("out of memory");
	return p;
}

#define GROW(arr, n, cap)                                                    \
	do {                                                                 \
		if ((n) == (cap)) {                                          \
			(cap) = (cap) ? (cap) * 2 : 16;                      \
			(arr) = xrealloc((arr), (cap) * sizeof(*(arr)));     \
		}                                                            \
	} while (0)

/* ---- ELF files: segments, symbols, code bytes ---- */

struct sym {
	uint64_t addr, size;
	char *name;
	int bind, type;
	bool ifunc;		/* it or an alias at its address is an IFUNC */
};

struct seg {
	uint64_t off, vaddr, filesz;
};

struct file {
	char *path;
	int fd;
	struct seg *segs;
	size_t nsegs;
	struct sym *syms;
	size_t nsyms, csyms;
	uint64_t entry;		/* e_entry (vaddr) */
};

static struct file **files;
static size_t nfiles, cfiles;

static int underscores(const char *s)
{
	int n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* perf's choice among symbols at one address (choose_best_symbol). */
static bool better(const struct sym *a, const struct sym *b)
{
	size_t la, lb;

	if ((a->size > 0) != (b->size > 0))
		return a->size > 0;
	if ((a->bind == STB_WEAK) != (b->bind == STB_WEAK))
		return b->bind == STB_WEAK;
	if ((a->bind == STB_GLOBAL) != (b->bind == STB_GLOBAL))
		return a->bind == STB_GLOBAL;
	if (underscores(a->name) != underscores(b->name))
		return underscores(a->name) < underscores(b->name);
	la = strlen(a->name);
	lb = strlen(b->name);
	if (la != lb)
		return la > lb;
	return false;
}

static int sym_cmp(const void *x, const void *y)
{
	const struct sym *a = x, *b = y;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return 0;
}

static void add_sym(struct file *f, uint64_t addr, uint64_t size, const char *name, int bind,
		    int type)
{
	GROW(f->syms, f->nsyms, f->csyms);
	f->syms[f->nsyms++] = (struct sym){ addr, size, xstrdup(name), bind, type,
					    type == STT_GNU_IFUNC };
}

static void read_elf_syms(struct file *f, Elf *elf, bool want_dynsym)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type != (want_dynsym ? SHT_DYNSYM : SHT_SYMTAB) || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Sym s;
			GElf_Shdr tsh;
			Elf_Scn *ts;
			const char *name;
			int type;

			if (!gelf_getsym(d, (int)i, &s))
				break;
			type = GELF_ST_TYPE(s.st_info);
			if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
				continue;
			if (s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE)
				continue;
			ts = elf_getscn(elf, s.st_shndx);
			if (!ts || !gelf_getshdr(ts, &tsh) || !(tsh.sh_flags & SHF_EXECINSTR))
				continue;
			name = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!name || !*name)
				continue;
			add_sym(f, s.st_value, s.st_size, name, GELF_ST_BIND(s.st_info), type);
		}
	}
}

static void sort_dedup(struct file *f)
{
	size_t i, n;

	if (f->nsyms > 1)
		qsort(f->syms, f->nsyms, sizeof(*f->syms), sym_cmp);
	for (i = 0, n = 0; i < f->nsyms; i++) {
		if (n && f->syms[n - 1].addr == f->syms[i].addr) {
			bool ifunc = f->syms[n - 1].ifunc || f->syms[i].ifunc;

			if (better(&f->syms[i], &f->syms[n - 1])) {
				free(f->syms[n - 1].name);
				f->syms[n - 1] = f->syms[i];
			} else {
				free(f->syms[i].name);
			}
			f->syms[n - 1].ifunc = ifunc;
			continue;
		}
		f->syms[n++] = f->syms[i];
	}
	f->nsyms = n;
}

static const struct sym *sym_at(const struct file *f, uint64_t va)
{
	size_t lo = 0, hi = f->nsyms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].addr < va)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < f->nsyms && f->syms[lo].addr == va ? &f->syms[lo] : NULL;
}

static bool vaddr_to_off(const struct file *f, uint64_t va, uint64_t *off);

/*
 * PLT stubs as binutils labels them ("ADDR <name@plt>:"), named as perf
 * names them: a stub of an IRELATIVE slot, which objdump calls
 * "*ABS*+0xADDEND@plt", takes the name of the IFUNC at the addend, else
 * "offset_0xOFF@plt"; the lazy PLT's header is ".plt". Called once the
 * ELF symbols are sorted.
 */
static void read_plt_labels(struct file *f)
{
	char cmd[8192], line[1024];
	FILE *p;
	struct {
		uint64_t addr;
		char name[512];
	} *lab = NULL;
	size_t n = 0, c = 0, i;
	const char *q;

	for (q = f->path; *q; q++)
		if (*q == '\'')
			return;
	snprintf(cmd, sizeof(cmd),
		 "objdump -d -j .plt -j .plt.sec -j .plt.got '%s' 2>/dev/null", f->path);
	p = popen(cmd, "r");
	if (!p)
		return;
	while (fgets(line, sizeof(line), p)) {
		unsigned long long a;
		char name[512];

		if (sscanf(line, "%llx <%511[^>]>:", &a, name) != 2)
			continue;
		GROW(lab, n, c);
		lab[n].addr = a;
		snprintf(lab[n].name, sizeof(lab[n].name), "%s", name);
		n++;
	}
	pclose(p);
	for (i = 0; i < n; i++) {
		size_t len = strlen(lab[i].name), size;
		unsigned long long addend;
		char name[600];

		size = i + 1 < n ? lab[i + 1].addr - lab[i].addr : 16;
		if (strstr(lab[i].name, "@plt-0x")) {
			add_sym(f, lab[i].addr, size, ".plt", STB_GLOBAL, STT_FUNC);
			continue;
		}
		if (len < 5 || strcmp(lab[i].name + len - 4, "@plt"))
			continue;
		snprintf(name, sizeof(name), "%s", lab[i].name);
		if (sscanf(lab[i].name, "*ABS*+0x%llx@plt", &addend) == 1) {
			const struct sym *s = sym_at(f, addend);
			uint64_t off = lab[i].addr;

			if (s && s->ifunc) {
				snprintf(name, sizeof(name), "%s@plt", s->name);
			} else {
				vaddr_to_off(f, lab[i].addr, &off);
				snprintf(name, sizeof(name), "offset_%#llx@plt",
					 (unsigned long long)off);
			}
		}
		add_sym(f, lab[i].addr, size, name, STB_GLOBAL, STT_FUNC);
	}
	free(lab);
}

/* The .symtab of @path into @f, if it is an ELF file that has one. */
static bool syms_from(struct file *f, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	Elf_Scn *scn = NULL;
	bool has = false;

	while (elf && !has && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		has = gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB;
	}
	if (has)
		read_elf_syms(f, elf, false);
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	return has;
}

/*
 * A stripped file's symbols from /usr/lib/debug/.build-id/xx/yyyy.debug, or
 * the .gnu_debuglink file beside it, in .debug/ or under /usr/lib/debug.
 */
static bool debug_file_syms(struct file *f, Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstr;
	char p[8192], dir[4096];
	const char *sl = strrchr(f->path, '/');

	if (elf_getshdrstrndx(elf, &shstr))
		return false;
	snprintf(dir, sizeof(dir), "%.*s", sl ? (int)(sl - f->path) : 1, sl ? f->path : ".");
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *n;

		if (!gelf_getshdr(scn, &sh) || !(d = elf_getdata(scn, NULL)) || !d->d_size)
			continue;
		n = elf_strptr(elf, shstr, sh.sh_name);
		if (sh.sh_type == SHT_NOTE && d->d_size > 16 && !memcmp((char *)d->d_buf + 12, "GNU", 4) &&
		    ((uint32_t *)d->d_buf)[2] == NT_GNU_BUILD_ID) {
			const uint8_t *id = (const uint8_t *)d->d_buf + 16;
			uint32_t len = ((uint32_t *)d->d_buf)[1], i;
			int k = snprintf(p, sizeof(p), "/usr/lib/debug/.build-id/%02x/", id[0]);

			for (i = 1; i < len && 16 + i < d->d_size; i++)
				k += snprintf(p + k, sizeof(p) - (size_t)k, "%02x", id[i]);
			snprintf(p + k, sizeof(p) - (size_t)k, ".debug");
			if (syms_from(f, p))
				return true;
		}
		if (n && !strcmp(n, ".gnu_debuglink") && memchr(d->d_buf, 0, d->d_size)) {
			snprintf(p, sizeof(p), "%s/%s", dir, (char *)d->d_buf);
			if (strcmp(p, f->path) && syms_from(f, p))
				return true;
			snprintf(p, sizeof(p), "%s/.debug/%s", dir, (char *)d->d_buf);
			if (syms_from(f, p))
				return true;
			snprintf(p, sizeof(p), "/usr/lib/debug%s/%s", dir, (char *)d->d_buf);
			if (syms_from(f, p))
				return true;
		}
	}
	return false;
}

static struct file *file_get(const char *path)
{
	struct file *f;
	Elf *elf;
	GElf_Ehdr eh;
	size_t i, nph, n;
	bool have_symtab = false;
	Elf_Scn *scn = NULL;

	for (i = 0; i < nfiles; i++)
		if (!strcmp(files[i]->path, path))
			return files[i];
	f = xcalloc(1, sizeof(*f));
	f->path = xstrdup(path);
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	GROW(files, nfiles, cfiles);
	files[nfiles++] = f;
	if (f->fd < 0)
		return f;
	elf = elf_begin(f->fd, ELF_C_READ, NULL);
	if (!elf || !gelf_getehdr(elf, &eh)) {
		if (elf)
			elf_end(elf);
		return f;
	}
	f->entry = eh.e_entry;
	if (elf_getphdrnum(elf, &nph))
		nph = 0;
	f->segs = xcalloc(nph, sizeof(*f->segs));
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			f->segs[f->nsegs++] = (struct seg){ ph.p_offset, ph.p_vaddr, ph.p_filesz };
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			have_symtab = true;
	}
	/*
	 * perf reads .symtab when there is one, else that of a separate debug
	 * file (dso__load()'s build-id and debuglink paths), else .dynsym.
	 */
	if (!have_symtab && debug_file_syms(f, elf))
		have_symtab = true;
	read_elf_syms(f, elf, !have_symtab);
	elf_end(elf);
	/* One symbol per address, the best one; sizes of 0 reach the next symbol. */
	sort_dedup(f);
	read_plt_labels(f);
	sort_dedup(f);
	n = f->nsyms;
	for (i = 0; i < n; i++)
		if (!f->syms[i].size)
			f->syms[i].size = i + 1 < n ? f->syms[i + 1].addr - f->syms[i].addr :
						      ((f->syms[i].addr + 4095) & ~4095ull) + 4096 -
							      f->syms[i].addr;
	return f;
}

static bool off_to_vaddr(const struct file *f, uint64_t off, uint64_t *va)
{
	size_t i;

	for (i = 0; i < f->nsegs; i++)
		if (off >= f->segs[i].off && off - f->segs[i].off < f->segs[i].filesz) {
			*va = f->segs[i].vaddr + (off - f->segs[i].off);
			return true;
		}
	return false;
}

static bool vaddr_to_off(const struct file *f, uint64_t va, uint64_t *off)
{
	size_t i;

	for (i = 0; i < f->nsegs; i++)
		if (va >= f->segs[i].vaddr && va - f->segs[i].vaddr < f->segs[i].filesz) {
			*off = f->segs[i].off + (va - f->segs[i].vaddr);
			return true;
		}
	return false;
}

static const struct sym *file_sym(const struct file *f, uint64_t va)
{
	size_t lo = 0, hi = f->nsyms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->syms[mid].addr <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || va - f->syms[lo - 1].addr >= f->syms[lo - 1].size)
		return NULL;
	return &f->syms[lo - 1];
}

/* ---- processes, their mappings by exec generation ---- */

struct map {
	uint64_t start, end, pgoff;
	struct file *f;
};

struct gen {
	struct map *maps;
	size_t n, c;
};

struct proc {
	int pid;
	struct gen *gens;
	size_t ngens, cgens;
	size_t cur;		/* the generation the truth walk is in */
};

static struct proc *procs;
static size_t nprocs, cprocs;

static struct proc *proc_find(int pid, bool create)
{
	size_t i;

	for (i = 0; i < nprocs; i++)
		if (procs[i].pid == pid)
			return &procs[i];
	if (!create)
		return NULL;
	GROW(procs, nprocs, cprocs);
	memset(&procs[nprocs], 0, sizeof(procs[nprocs]));
	procs[nprocs].pid = pid;
	return &procs[nprocs++];
}

static struct gen *gen_new(struct proc *p)
{
	GROW(p->gens, p->ngens, p->cgens);
	memset(&p->gens[p->ngens], 0, sizeof(p->gens[0]));
	return &p->gens[p->ngens++];
}

static void gen_add(struct gen *g, const struct map *m)
{
	GROW(g->maps, g->n, g->c);
	g->maps[g->n++] = *m;
}

struct tidpid {
	int tid, pid;
};
static struct tidpid *tids;
static size_t ntids, ctids;

static void tid_set(int tid, int pid)
{
	size_t i;

	for (i = 0; i < ntids; i++)
		if (tids[i].tid == tid) {
			tids[i].pid = pid;
			return;
		}
	GROW(tids, ntids, ctids);
	tids[ntids++] = (struct tidpid){ tid, pid };
}

static int tid_pid(int tid)
{
	size_t i;

	for (i = 0; i < ntids; i++)
		if (tids[i].tid == tid)
			return tids[i].pid;
	return tid;
}

/* The latest mapping of generation @g holding @addr. */
static const struct map *gen_lookup(const struct gen *g, uint64_t addr)
{
	size_t i;

	for (i = g->n; i > 0; i--)
		if (addr >= g->maps[i - 1].start && addr < g->maps[i - 1].end)
			return &g->maps[i - 1];
	return NULL;
}

/* Trigger samples to be placed as traps (see -t). */
struct sample {
	int tid;
	uint64_t ip, time;
	bool used;
};
static struct sample *samples;
static size_t nsamples, csamples;
static char **trap_events;
static size_t ntrap_events;

static void read_sideband(const char *path)
{
	FILE *fp = fopen(path, "r");
	char line[8192];
	size_t lineno = 0;

	if (!fp)
		die("cannot open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), fp)) {
		int pid, tid, ppid, ptid, n = 0;
		unsigned long long t1, t2, start, end, pgoff, ip;
		char kind[32], prot[8], mpath[4096];
		char *rest;

		lineno++;
		if (sscanf(line, " %llu.%llu [%*d] %d/%d %31s %n", &t1, &t2, &pid, &tid, kind,
			   &n) != 5 || !n)
			continue;
		rest = line + n;
		tid_set(tid, pid);
		if (!strcmp(kind, "MMAP")) {
			struct proc *p = proc_find(pid, true);
			struct map m;

			if (sscanf(rest, "0x%llx-0x%llx pgoff 0x%llx %7s %4095s", &start, &end,
				   &pgoff, prot, mpath) != 5)
				die("%s:%zu: unreadable MMAP line", path, lineno);
			if (!strchr(prot, 'x'))
				continue;
			if (!p->ngens)
				gen_new(p);
			m = (struct map){ start, end, pgoff, file_get(mpath) };
			gen_add(&p->gens[p->ngens - 1], &m);
		} else if (!strcmp(kind, "COMM")) {
			if (strstr(rest, "(exec)")) {
				struct proc *p = proc_find(pid, true);

				if (p->ngens && p->gens[p->ngens - 1].n)
					gen_new(p);
				else if (!p->ngens)
					gen_new(p);
			}
		} else if (!strcmp(kind, "FORK")) {
			struct proc *p, *pp;

			if (sscanf(rest, "from %d/%d", &ppid, &ptid) != 2)
				die("%s:%zu: unreadable FORK line", path, lineno);
			if (ppid == pid)
				continue;
			p = proc_find(pid, true);
			/* after p: creating it may move the array */
			pp = proc_find(ppid, false);
			if (!p->ngens) {
				struct gen *g = gen_new(p);
				size_t i;

				if (pp && pp->ngens)
					for (i = 0; i < pp->gens[pp->ngens - 1].n; i++)
						gen_add(g, &pp->gens[pp->ngens - 1].maps[i]);
			}
		} else if (ntrap_events) {
			/* "SAMPLE  NAME ip 0x... ..." style lines: match the event name */
			size_t i;
			char name[256];

			if (sscanf(rest, "%255s", name) != 1)
				continue;
			for (i = 0; i < ntrap_events; i++)
				if (!strcmp(name, trap_events[i]))
					break;
			if (i == ntrap_events)
				continue;
			if (!strstr(rest, " ip 0x") ||
			    sscanf(strstr(rest, " ip 0x"), " ip 0x%llx", &ip) != 1)
				die("%s:%zu: no ip in trigger sample line", path, lineno);
			GROW(samples, nsamples, csamples);
			samples[nsamples++] = (struct sample){ tid, ip, t1 * 1000000000ull + t2,
							       false };
		}
	}
	fclose(fp);
}

/* ---- instructions ---- */

enum kind { K_OTHER, K_CALL, K_ICALL, K_RET, K_JMP, K_IJMP, K_JCC, K_SYSCALL, K_FAR };

struct insn {
	uint64_t ip, next, target;
	enum kind kind;
};

static csh cs;

struct bcache {
	uint64_t start, end;
	uint32_t count;
	int pid;
	size_t gen;
	struct insn last;
	bool valid;
};
#define BCACHE_SIZE (1u << 16)
static struct bcache *bcache;

static bool read_code(const struct map *m, uint64_t addr, uint8_t *buf, size_t n, size_t *got)
{
	ssize_t r;

	if (!m || m->f->fd < 0)
		return false;
	r = pread(m->f->fd, buf, n, (off_t)(addr - m->start + m->pgoff));
	if (r <= 0)
		return false;
	*got = (size_t)r;
	return true;
}

static bool classify(const struct gen *g, uint64_t ip, struct insn *out)
{
	const struct map *m = gen_lookup(g, ip);
	uint8_t buf[16];
	size_t got = 0;
	cs_insn *ci = NULL;
	cs_x86 *x;
	bool ok = true, imm;

	if (!read_code(m, ip, buf, sizeof(buf), &got))
		return false;
	if (cs_disasm(cs, buf, got, ip, 1, &ci) != 1)
		return false;
	out->ip = ip;
	out->next = ip + ci->size;
	out->target = 0;
	out->kind = K_OTHER;
	x = &ci->detail->x86;
	/* a direct branch: its target is an immediate operand */
	imm = x->op_count == 1 && x->operands[0].type == X86_OP_IMM;
	switch (ci->id) {
	case X86_INS_CALL:
		out->kind = imm ? K_CALL : K_ICALL;
		break;
	case X86_INS_RET:
		out->kind = K_RET;
		break;
	case X86_INS_JMP:
		out->kind = imm ? K_JMP : K_IJMP;
		break;
	case X86_INS_SYSCALL:
	case X86_INS_SYSENTER:
		out->kind = K_SYSCALL;
		break;
	case X86_INS_LCALL:
	case X86_INS_LJMP:
	case X86_INS_RETF:
	case X86_INS_RETFQ:
	case X86_INS_IRET:
	case X86_INS_IRETD:
	case X86_INS_IRETQ:
	case X86_INS_INT:
	case X86_INS_INT1:
	case X86_INS_INT3:
	case X86_INS_INTO:
	case X86_INS_UD2:
		out->kind = K_FAR;
		break;
	default:
		if (cs_insn_group(cs, ci, CS_GRP_JUMP)) {
			out->kind = K_JCC;
			ok = imm;
		}
	}
	if ((out->kind == K_CALL || out->kind == K_JMP || out->kind == K_JCC) && ok)
		out->target = (uint64_t)x->operands[0].imm;
	cs_free(ci, 1);
	return ok;
}

/* The last instruction of block [start, end) of @count instructions. */
static bool block_last(int pid, size_t gen, const struct gen *g, uint64_t start, uint64_t end,
		       uint32_t count, struct insn *out)
{
	size_t h = (size_t)((start * 0x9e3779b97f4a7c15ull) >> 48) & (BCACHE_SIZE - 1);
	struct bcache *c = &bcache[h];
	uint64_t ip = start;
	uint32_t i;

	if (c->valid && c->start == start && c->end == end && c->count == count && c->pid == pid &&
	    c->gen == gen) {
		*out = c->last;
		return true;
	}
	for (i = 0; i < count; i++) {
		if (!classify(g, ip, out))
			return false;
		if (out->next >= end)
			break;
		ip = out->next;
	}
	if (out->next != end)
		return false;
	*c = (struct bcache){ start, end, count, pid, gen, *out, true };
	return true;
}

/* ---- the walk ---- */

static bool ret_mode, prof_mode;
static bool untimed;       /* -u: the trace has no timestamps */
static const char *missing_path;

/* -p: per function and per window */
struct pfn {
	const char *file, *name;
	uint64_t calls, insns;
};

static struct pfn *pfns;
static size_t npfns, cpfns;

struct pwin {
	int tid;
	uint64_t insns, calls;
};

static struct pwin *pwins;
static size_t npwins, cpwins;

struct thr {
	int tid;
	bool on;		/* TraceEn */
	bool fin;		/* -f: FilterEn */
	bool have_prev;
	bool prev_on;		/* the previous block ran traced */
	struct insn prev;	/* its last instruction */
	bool marks;		/* R/P lines since the previous block */
	uint64_t mark_ip;	/* the IP of the last of them */
	uint64_t *stk;
	size_t n, c;
	uint64_t index;		/* instructions so far */
	bool off_known;
	int64_t time_off;	/* sample time - index */
	char *out;		/* this thread's output lines */
	size_t olen, ocap;
	long win;		/* -p: the open window, -1: none */
	long prev_win;		/* -p: the window the previous block ran in */
};

static struct thr *thrs;
static size_t nthrs, cthrs;

static struct thr *thr_get(int tid)
{
	size_t i;

	for (i = 0; i < nthrs; i++)
		if (thrs[i].tid == tid)
			return &thrs[i];
	GROW(thrs, nthrs, cthrs);
	memset(&thrs[nthrs], 0, sizeof(thrs[0]));
	thrs[nthrs].tid = tid;
	thrs[nthrs].win = thrs[nthrs].prev_win = -1;
	return &thrs[nthrs++];
}

static void emit(struct thr *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(struct thr *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = t->ocap - t->olen;

		va_start(ap, fmt);
		n = vsnprintf(t->out + t->olen, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			die("output formatting failed");
		if ((size_t)n < room) {
			t->olen += (size_t)n;
			return;
		}
		t->ocap = t->ocap ? t->ocap * 2 + (size_t)n : 4096 + (size_t)n;
		t->out = xrealloc(t->out, t->ocap);
	}
}

static const struct gen *cur_gen(int pid, size_t *gi)
{
	struct proc *p = proc_find(pid, false);

	if (!p || !p->ngens)
		return NULL;
	*gi = p->cur;
	return &p->gens[p->cur];
}

/* ptdump(1): indentation stops at 40 levels, "[+N] " says how much deeper. */
static void emit_indent(struct thr *t, size_t depth)
{
	if (depth > 40)
		emit(t, "%*s[+%zu] ", 160, "", depth - 40);
	else
		emit(t, "%*s", (int)depth * 4, "");
}

/* The symbol at @addr in thread @t's process, and its file (NULL if unmapped). */
static const struct sym *sym_of(struct thr *t, uint64_t addr, const char **file)
{
	int pid = tid_pid(t->tid);
	size_t gi = 0;
	const struct gen *g = cur_gen(pid, &gi);
	const struct map *m = g ? gen_lookup(g, addr) : NULL;
	uint64_t va;

	*file = m ? m->f->path : NULL;
	if (m && off_to_vaddr(m->f, addr - m->start + m->pgoff, &va) &&
	    !(missing_path && !strcmp(m->f->path, missing_path)))
		return file_sym(m->f, va);
	return NULL;
}

static const char *file_base(const char *path)
{
	const char *sl = strrchr(path, '/');

	return sl && sl[1] ? sl + 1 : path;
}

/*
 * An address in a mapped file that no symbol names: the offset for
 * "file+0xOFF", its ELF address, or the file offset where the file cannot be
 * read. Not for kernel addresses.
 */
static bool objoff_of(struct thr *t, uint64_t addr, uint64_t *off)
{
	size_t gi = 0;
	const struct gen *g = cur_gen(tid_pid(t->tid), &gi);
	const struct map *m = g ? gen_lookup(g, addr) : NULL;

	if (!m || addr >= 0xffff800000000000ull)
		return false;
	*off = addr - m->start + m->pgoff;
	if (!(missing_path && !strcmp(m->f->path, missing_path)))
		off_to_vaddr(m->f, *off, off);
	return true;
}

/* -p: the entry of the function at @addr. */
static struct pfn *pfn_at(struct thr *t, uint64_t addr)
{
	const char *file, *sl;
	const struct sym *s = sym_of(t, addr, &file);
	const char *name = s ? s->name : "[unknown]";
	size_t i;

	file = !file ? "[unknown]" : (sl = strrchr(file, '/')) ? sl + 1 : file;
	for (i = 0; i < npfns; i++)
		if (!strcmp(pfns[i].name, name) && !strcmp(pfns[i].file, file))
			return &pfns[i];
	GROW(pfns, npfns, cpfns);
	pfns[npfns] = (struct pfn){ file, name, 0, 0 };
	return &pfns[npfns++];
}

static void line(struct thr *t, const char *flag, size_t depth, uint64_t addr)
{
	const char *file;
	const struct sym *s = sym_of(t, addr, &file);
	uint64_t va;

	if (prof_mode) {
		if (!strcmp(flag, "call")) {
			/* in the window of the call instruction */
			pfn_at(t, addr)->calls++;
			if (t->prev_win >= 0)
				pwins[t->prev_win].calls++;
		}
		return;
	}
	emit(t, "%d\t", t->tid);
	if (ret_mode)
		emit(t, "%s\t", flag);
	emit_indent(t, depth);
	if (s)
		emit(t, "%s\n", s->name);
	else if (objoff_of(t, addr, &va))
		emit(t, "%s+0x%" PRIx64 "\n", file_base(file), va);
	else
		emit(t, "%16" PRIx64 "\n", addr);
}

static void push(struct thr *t, uint64_t ret)
{
	GROW(t->stk, t->n, t->c);
	t->stk[t->n++] = ret;
}

static void pop_to(struct thr *t, uint64_t to)
{
	size_t i;

	for (i = t->n; i > 0; i--)
		if (t->stk[i - 1] == to) {
			t->n = i - 1;
			return;
		}
}

/* -f: the functions of the address filters. */
static const char **filt_names;
static size_t nfilt_names;

/* -f: @addr lies in a filtered function (FilterEn there). */
static bool in_filter(struct thr *t, uint64_t addr)
{
	const char *file;
	const struct sym *s = sym_of(t, addr, &file);
	size_t i;

	for (i = 0; s && i < nfilt_names; i++)
		if (!strcmp(s->name, filt_names[i]))
			return true;
	return false;
}

/*
 * -f: FilterEn for the step to @start: unchanged by sequential flow (the
 * previous block fell through to @start), else decided at @start.
 */
static bool filter_at(struct thr *t, uint64_t start)
{
	const struct insn *x = &t->prev;

	if (!nfilt_names)
		return true;
	if (t->have_prev && !t->marks && (x->kind == K_OTHER || x->kind == K_JCC) &&
	    start == x->next)
		return t->fin;
	return in_filter(t, start);
}

/* Trace begins and ends are lines of the call-ret trace only. */
static void trace_begin(struct thr *t, uint64_t ip)
{
	pop_to(t, ip);
	if (ret_mode)
		line(t, "tr strt", t->n, ip);
}

static void trace_end(struct thr *t, uint64_t ip)
{
	if (ret_mode)
		line(t, "tr end", t->n, ip);
}

/*
 * A system call leaves user-only tracing: the call-ret trace ends the trace
 * there, the call trace has one "[syscall]" line a level below the caller.
 */
static void syscall_line(struct thr *t, uint64_t ip)
{
	if (ret_mode) {
		trace_end(t, ip);
		return;
	}
	if (prof_mode)
		return;
	emit(t, "%d\t", t->tid);
	emit_indent(t, t->n + 1);
	emit(t, "[syscall]\n");
}

/* Did exec put @pid into its next generation, starting at @ip? */
static bool maybe_exec(int pid, uint64_t ip)
{
	struct proc *p = proc_find(pid, false);
	const struct gen *g;
	size_t i;

	if (!p || p->cur + 1 >= p->ngens)
		return false;
	g = &p->gens[p->cur + 1];
	for (i = 0; i < g->n; i++) {
		const struct map *m = &g->maps[i];
		uint64_t off;

		if (vaddr_to_off(m->f, m->f->entry, &off) && off >= m->pgoff &&
		    off - m->pgoff < m->end - m->start && m->start + (off - m->pgoff) == ip) {
			p->cur++;
			return true;
		}
	}
	return false;
}

/*
 * An exec: the new program starts with nothing on the stack (ptdump(1)),
 * where timestamps place the exec in the trace.
 */
static void exec_check(struct thr *t, int pid, uint64_t ip)
{
	if (maybe_exec(pid, ip) && !untimed)
		t->n = 0;
}

/*
 * Trigger samples taken at the start of this block that changed nothing
 * (consumed here). Returns whether there was one: the thread trapped.
 */
static bool sample_trap(struct thr *t, uint64_t ip)
{
	bool hit = false;
	size_t i;

	if (!nsamples || !t->off_known)
		return false;
	for (i = 0; i < nsamples; i++) {
		struct sample *s = &samples[i];

		if (!s->used && s->tid == t->tid && s->ip == ip &&
		    (int64_t)(s->time - t->index) == t->time_off) {
			s->used = true;
			hit = true;
		}
	}
	return hit;
}

static void mark_sample_used(struct thr *t, uint64_t ip, uint64_t index)
{
	size_t i;

	for (i = 0; i < nsamples; i++) {
		struct sample *s = &samples[i];

		if (s->used || s->tid != t->tid || s->ip != ip)
			continue;
		if (!t->off_known) {
			t->off_known = true;
			t->time_off = (int64_t)(s->time - index);
		}
		if ((int64_t)(s->time - index) == t->time_off) {
			s->used = true;
			return;
		}
	}
}

/*
 * The thread goes on at @start after its previous block. What the trace
 * shows of that step, as user-only Intel PT shows it (ptrec-emulate(7)):
 * a call or return if the previous block ended in one and ran traced; a
 * system call leaves traced code (TIP.PGD) and comes back where the thread
 * goes on (TIP.PGE); an arrival anywhere but where the last instruction
 * leads is an interruption (a signal): tracing ends where the thread would
 * have gone (FUP) and begins again at @start; a pause or resume in between
 * (R/P lines) or a trap of a trigger that changed nothing (-t) ends tracing
 * there and, if it is still on, begins it again.
 */
static void step(struct thr *t, uint64_t start)
{
	int pid = tid_pid(t->tid);
	bool fin = filter_at(t, start);
	bool on = t->on && fin; /* traced from @start on */
	bool traced_cont = t->have_prev && t->prev_on && on;

	if (t->have_prev && t->prev_on) {
		const struct insn *x = &t->prev;
		uint64_t expect = 0;
		bool async = false, ended = false;

		switch (x->kind) {
		case K_CALL:
			push(t, x->next);
			line(t, "call", t->n, x->target);
			async = start != x->target;
			expect = x->target;
			break;
		case K_ICALL:
			push(t, x->next);
			line(t, "call", t->n, start);
			break;
		case K_RET:
			pop_to(t, start);
			if (ret_mode)
				line(t, "return", t->n + 1, x->ip);
			break;
		case K_JMP:
			async = start != x->target;
			expect = x->target;
			break;
		case K_JCC:
			async = start != x->target && start != x->next;
			expect = x->next;
			break;
		case K_SYSCALL:
			syscall_line(t, x->ip);
			ended = true;
			exec_check(t, pid, start);
			break;
		case K_IJMP:
		case K_FAR:
			break;
		case K_OTHER:
			async = start != x->next;
			expect = x->next;
			break;
		}
		if (!ended && (async || t->marks)) {
			/* FUP + TIP.PGD where user execution stopped */
			trace_end(t, async ? expect : t->mark_ip);
			ended = true;
		}
		if (sample_trap(t, start) && !ended && traced_cont) {
			trace_end(t, start);
			ended = true;
		}
		if (!ended && !on) {
			/* -f: a branch left the filters (TIP.PGD): tracing ends at it */
			trace_end(t, t->prev.ip);
			ended = true;
		}
		if (ended && on)
			trace_begin(t, start);
	} else if (on) {
		sample_trap(t, start);
		if (t->have_prev && t->prev.kind == K_SYSCALL)
			exec_check(t, pid, start);
		trace_begin(t, start);
	} else {
		sample_trap(t, start);
		if (t->have_prev && t->prev.kind == K_SYSCALL)
			exec_check(t, pid, start);
	}
	t->marks = false;
	t->fin = fin;
}

static void on_block(struct thr *t, uint64_t start, uint64_t end, uint32_t count)
{
	int pid = tid_pid(t->tid);
	size_t gi = 0;
	const struct gen *g;
	struct insn last;

	step(t, start);
	g = cur_gen(pid, &gi);
	if (!g)
		die("thread %d runs code but the sideband maps nothing for process %d", t->tid,
		    pid);
	if (!block_last(pid, gi, g, start, end, count, &last))
		die("thread %d: cannot decode block %#" PRIx64 "-%#" PRIx64
		    " (%u instructions) from the mapped files",
		    t->tid, start, end, count);
	t->prev = last;
	t->prev_on = t->on && t->fin;
	t->have_prev = true;
	t->index += count;
	t->prev_win = t->win;
	if (prof_mode && t->on) {
		pfn_at(t, start)->insns += count;
		if (t->win >= 0)
			pwins[t->win].insns += count;
	}
}

/*
 * The thread's process was killed while the thread stood at @ip: the step
 * there happened, and tracing ended (FUP + TIP.PGD) before it.
 */
static void on_kill(struct thr *t, uint64_t ip)
{
	bool on;

	step(t, ip);
	on = t->have_prev && t->prev_on && t->on && t->fin;
	if (on)
		trace_end(t, ip);
	t->have_prev = false;
}

static void on_mark(struct thr *t, bool resume, uint64_t ip, uint64_t index)
{
	if (t->have_prev) {
		t->marks = true;
		t->mark_ip = ip;
	}
	t->on = resume;
	mark_sample_used(t, ip, index);
	if (!prof_mode)
		return;
	if (resume && t->win < 0) {
		GROW(pwins, npwins, cpwins);
		pwins[npwins] = (struct pwin){ t->tid, 0, 0 };
		t->win = (long)npwins++;
	} else if (!resume) {
		t->win = -1;
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: decode_truth [-r|-p] [-m PATH] [-t TRIGGER]... [-f FUNCTION]... "
			"SIDEBAND TRUTH\n");
	exit(2);
}

int main(int argc, char **argv)
{
	FILE *fp;
	char buf[512];
	size_t lineno = 0, i;
	int opt;

	while ((opt = getopt(argc, argv, "prum:t:f:")) != -1) {
		switch (opt) {
		case 'f':
			filt_names = xrealloc(filt_names, (nfilt_names + 1) * sizeof(char *));
			filt_names[nfilt_names++] = optarg;
			break;
		case 'm':
			missing_path = optarg;
			break;
		case 'r':
			ret_mode = true;
			break;
		case 'p':
			prof_mode = true;
			break;
		case 'u':
			untimed = true;
			break;
		case 't':
			trap_events = xrealloc(trap_events, (ntrap_events + 1) * sizeof(char *));
			trap_events[ntrap_events++] = optarg;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
	elf_version(EV_CURRENT);
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		die("capstone cannot open x86-64");
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	bcache = xcalloc(BCACHE_SIZE, sizeof(*bcache));
	read_sideband(argv[optind]);

	fp = fopen(argv[optind + 1], "r");
	if (!fp)
		die("cannot open %s: %s", argv[optind + 1], strerror(errno));
	if (!fgets(buf, sizeof(buf), fp) || strncmp(buf, "# ptrec-emulate truth 1", 23))
		die("%s: not a ground-truth file (version 1)", argv[optind + 1]);
	while (fgets(buf, sizeof(buf), fp)) {
		unsigned long long a, b, c;
		unsigned cnt;
		int tid;
		char k;

		lineno++;
		if (buf[0] == 'B' && sscanf(buf, "B %d %llx %llx %u", &tid, &a, &b, &cnt) == 4) {
			if (!cnt || b <= a)
				die("truth line %zu: empty block", lineno + 1);
			on_block(thr_get(tid), a, b, cnt);
		} else if (sscanf(buf, "%c %d %llx %llu", &k, &tid, &a, &c) == 4 &&
			   (k == 'R' || k == 'P')) {
			on_mark(thr_get(tid), k == 'R', a, c);
		} else if (sscanf(buf, "K %d %llx", &tid, &a) == 2) {
			on_kill(thr_get(tid), a);
		} else {
			die("truth line %zu: unreadable: %.60s", lineno + 1, buf);
		}
	}
	fclose(fp);
	/* Every sample must have found its place, or the model is wrong. */
	for (i = 0; i < nsamples; i++)
		if (!samples[i].used)
			die("trigger sample of thread %d at ip %#" PRIx64 " time %" PRIu64
			    " matches no block boundary of the truth",
			    samples[i].tid, samples[i].ip, samples[i].time);
	/* A thread that ends traced leaves through its last system call (exit). */
	for (i = 0; i < nthrs; i++)
		if (thrs[i].have_prev && thrs[i].prev_on && thrs[i].prev.kind == K_SYSCALL)
			syscall_line(&thrs[i], thrs[i].prev.ip);
	for (i = 0; prof_mode && i < npfns; i++)
		printf("F\t%s\t%s\t%" PRIu64 "\t%" PRIu64 "\n", pfns[i].file, pfns[i].name,
		       pfns[i].calls, pfns[i].insns);
	for (i = 0; prof_mode && i < npwins; i++)
		printf("W\t%d\t%" PRIu64 "\t%" PRIu64 "\n", pwins[i].tid, pwins[i].insns,
		       pwins[i].calls);
	for (i = 0; i < nthrs; i++)
		if (thrs[i].olen && fwrite(thrs[i].out, 1, thrs[i].olen, stdout) != thrs[i].olen)
			die("write error");
	if (fflush(stdout))
		die("write error");
	return 0;
}

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
 * frame returning to it), and an unnamed address as %16x like perf.
 *
 * -t NAME: trigger samples of event NAME (from the sideband) that changed
 * no state still trapped into the kernel, which the trace shows as a trace
 * end and a begin at the sample's IP. The sample is placed by its time,
 * which for a single-threaded process is the thread's instruction index
 * plus a constant learnt from the pause/resume lines.
 *
 * -m PATH: the file PATH is missing for the decoder (neither in the trace
 * file nor on disk), so nothing in it has a name: addresses in it are shown
 * as numbers.
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
	/* perf reads .symtab when there is one, else .dynsym. */
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

static bool ret_mode;
static const char *missing_path;

struct thr {
	int tid;
	bool on;		/* TraceEn */
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

static void line(struct thr *t, const char *flag, size_t depth, uint64_t addr)
{
	int pid = tid_pid(t->tid);
	size_t gi = 0;
	const struct gen *g = cur_gen(pid, &gi);
	const struct map *m = g ? gen_lookup(g, addr) : NULL;
	const struct sym *s = NULL;
	uint64_t va;

	if (m && off_to_vaddr(m->f, addr - m->start + m->pgoff, &va) &&
	    !(missing_path && !strcmp(m->f->path, missing_path)))
		s = file_sym(m->f, va);
	emit(t, "%d\t", t->tid);
	if (ret_mode)
		emit(t, "%s\t", flag);
	if (s)
		emit(t, "%*s%s\n", (int)depth * 4, "", s->name);
	else
		emit(t, "%*s%16" PRIx64 "\n", (int)depth * 4, "", addr);
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

static void trace_begin(struct thr *t, uint64_t ip)
{
	pop_to(t, ip);
	line(t, "tr strt", t->n, ip);
}

static void trace_end(struct thr *t, uint64_t ip)
{
	line(t, "tr end", t->n, ip);
}

/* Did exec put @pid into its next generation, starting at @ip? */
static void maybe_exec(int pid, uint64_t ip)
{
	struct proc *p = proc_find(pid, false);
	const struct gen *g;
	size_t i;

	if (!p || p->cur + 1 >= p->ngens)
		return;
	g = &p->gens[p->cur + 1];
	for (i = 0; i < g->n; i++) {
		const struct map *m = &g->maps[i];
		uint64_t off;

		if (vaddr_to_off(m->f, m->f->entry, &off) && off >= m->pgoff &&
		    off - m->pgoff < m->end - m->start && m->start + (off - m->pgoff) == ip) {
			p->cur++;
			return;
		}
	}
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
static void on_block(struct thr *t, uint64_t start, uint64_t end, uint32_t count)
{
	int pid = tid_pid(t->tid);
	size_t gi = 0;
	const struct gen *g;
	struct insn last;
	bool traced_cont = t->have_prev && t->prev_on && t->on;

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
			trace_end(t, x->ip);
			ended = true;
			maybe_exec(pid, start);
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
		if (ended && t->on)
			trace_begin(t, start);
	} else if (t->on) {
		sample_trap(t, start);
		if (t->have_prev && t->prev.kind == K_SYSCALL)
			maybe_exec(pid, start);
		trace_begin(t, start);
	} else {
		sample_trap(t, start);
		if (t->have_prev && t->prev.kind == K_SYSCALL)
			maybe_exec(pid, start);
	}

	t->marks = false;
	g = cur_gen(pid, &gi);
	if (!g)
		die("thread %d runs code but the sideband maps nothing for process %d", t->tid,
		    pid);
	if (!block_last(pid, gi, g, start, end, count, &last))
		die("thread %d: cannot decode block %#" PRIx64 "-%#" PRIx64
		    " (%u instructions) from the mapped files",
		    t->tid, start, end, count);
	t->prev = last;
	t->prev_on = t->on;
	t->have_prev = true;
	t->index += count;
}

static void on_mark(struct thr *t, bool resume, uint64_t ip, uint64_t index)
{
	if (t->have_prev) {
		t->marks = true;
		t->mark_ip = ip;
	}
	t->on = resume;
	mark_sample_used(t, ip, index);
}

static void usage(void)
{
	fprintf(stderr, "usage: decode_truth [-r] [-m PATH] [-t TRIGGER]... SIDEBAND TRUTH\n");
	exit(2);
}

int main(int argc, char **argv)
{
	FILE *fp;
	char buf[512];
	size_t lineno = 0, i;
	int opt;

	while ((opt = getopt(argc, argv, "rm:t:")) != -1) {
		switch (opt) {
		case 'm':
			missing_path = optarg;
			break;
		case 'r':
			ret_mode = true;
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
			trace_end(&thrs[i], thrs[i].prev.ip);
	for (i = 0; i < nthrs; i++)
		if (thrs[i].olen && fwrite(thrs[i].out, 1, thrs[i].olen, stdout) != thrs[i].olen)
			die("write error");
	if (fflush(stdout))
		die("write error");
	return 0;
}

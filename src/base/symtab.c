// SPDX-License-Identifier: MIT
/* Symbol tables from ELF (libelf) and kallsyms; source lines from libdw. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <elfutils/libdw.h>
#include <lzma.h>
#include <dwarf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/array.h"
#include "base/symtab.h"
#include "base/util.h"

struct seg {
	uint64_t off, vaddr, filesz;
};

/*
 * A symbol candidate before dedup: what perf's choice among aliases looks at,
 * and a name offset into the pool.
 */
struct cand {
	uint64_t addr, size, sec_end;
	size_t name;
	enum prec_symtype type;
	uint16_t bias;            /* 0: .symtab, PLT, kallsyms; 1: .dynsym alias */
	uint8_t bind;             /* STB_GLOBAL, STB_WEAK or STB_LOCAL */
	bool untyped;             /* STT_NOTYPE: a label, not a function */
	bool ifunc;               /* STT_GNU_IFUNC */
	uint8_t underscores;      /* leading '_', capped */
	uint32_t len;             /* of the name */
};

struct prec_symtab {
	struct prec_sym *syms;
	size_t n;
	char *names;              /* the name pool */
	struct seg *segs;
	size_t nsegs;
	uint8_t build_id[20];
	size_t build_id_size;
	/* For source lines: the file (or memory copy) and its libdw handle. */
	char *path;
	void *mem;
	size_t mem_size;
	int dw_fd;
	Elf *dw_elf;
	Dwarf *dw;
	bool dw_tried;
};

static void elf_init(void)
{
	static bool done;

	if (!done) {
		elf_version(EV_CURRENT);
		done = true;
	}
}

static struct prec_symtab *symtab_alloc(void)
{
	struct prec_symtab *st = calloc(1, sizeof(*st));

	if (st)
		st->dw_fd = -1;
	return st;
}

void prec_symtab_free(struct prec_symtab *st)
{
	if (!st)
		return;
	if (st->dw)
		dwarf_end(st->dw);
	if (st->dw_elf)
		elf_end(st->dw_elf);
	if (st->dw_fd >= 0)
		close(st->dw_fd);
	free(st->syms);
	free(st->names);
	free(st->segs);
	free(st->path);
	free(st->mem);
	free(st);
}

size_t prec_symtab_count(const struct prec_symtab *st)
{
	return st ? st->n : 0;
}

const struct prec_sym *prec_symtab_at(const struct prec_symtab *st, size_t i)
{
	return st && i < st->n ? &st->syms[i] : NULL;
}

const struct prec_sym *prec_symtab_lookup(const struct prec_symtab *st, uint64_t addr,
					  uint64_t *off)
{
	size_t lo = 0, hi;
	const struct prec_sym *s;

	if (!st || !st->n)
		return NULL;
	hi = st->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &st->syms[lo - 1];
	if (addr - s->addr >= s->size && !(s->size == 0 && addr == s->addr))
		return NULL;
	if (off)
		*off = addr - s->addr;
	return s;
}

const struct prec_sym *prec_symtab_find(const struct prec_symtab *st, const char *name)
{
	size_t i;

	if (!st || !name)
		return NULL;
	for (i = 0; i < st->n; i++)
		if (!strcmp(st->syms[i].name, name))
			return &st->syms[i];
	return NULL;
}

int prec_symtab_off_to_vaddr(const struct prec_symtab *st, uint64_t off, uint64_t *vaddr)
{
	size_t i;

	for (i = 0; st && i < st->nsegs; i++) {
		const struct seg *g = &st->segs[i];

		if (off >= g->off && off - g->off < g->filesz) {
			*vaddr = g->vaddr + (off - g->off);
			return 0;
		}
	}
	*vaddr = off;
	return -ENOENT;
}

size_t prec_symtab_build_id(const struct prec_symtab *st, const uint8_t **id)
{
	*id = st->build_id;
	return st->build_id_size;
}

/* ---- building ---- */

struct builder {
	struct cand *c;
	size_t n;
	struct prec_buf pool;
};

static int add_cand(struct builder *b, const struct cand *c, const char *name)
{
	size_t off = b->pool.len, len;
	struct cand *n;

	if (!name || !*name)
		return 0;
	if (PREC_ARRAY_RESERVE(b->c, b->n, 1))
		return -ENOMEM;
	len = strlen(name);
	if (prec_buf_append(&b->pool, name, len + 1))
		return -ENOMEM;
	n = &b->c[b->n++];
	*n = *c;
	n->name = off;
	n->len = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	n->underscores = 0;
	while (name[n->underscores] == '_' && n->underscores < 255)
		n->underscores++;
	return 0;
}

/*
 * Among aliases at one address the first in this order is kept: what .symtab
 * names over what only .dynsym adds, functions over untyped labels, then
 * perf's choose_best_symbol(): a non-zero size, not weak, global, fewer
 * leading underscores, the longer name. Ties keep the order of reading
 * (the pool offset), as perf keeps the symbol it read first.
 */
static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->bias != y->bias)
		return x->bias < y->bias ? -1 : 1;
	if (x->untyped != y->untyped)
		return x->untyped ? 1 : -1;
	if (!x->size != !y->size)
		return x->size ? -1 : 1;
	if ((x->bind == STB_WEAK) != (y->bind == STB_WEAK))
		return x->bind == STB_WEAK ? 1 : -1;
	if ((x->bind == STB_GLOBAL) != (y->bind == STB_GLOBAL))
		return x->bind == STB_GLOBAL ? -1 : 1;
	if (x->underscores != y->underscores)
		return x->underscores < y->underscores ? -1 : 1;
	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Sorts, keeps the best alias per address, fixes sizes, and moves into @st. */
static int builder_finish(struct builder *b, struct prec_symtab *st)
{
	size_t i, n = 0;

	if (b->n > 1)
		qsort(b->c, b->n, sizeof(*b->c), cand_cmp);
	st->syms = calloc(b->n ? b->n : 1, sizeof(*st->syms));
	if (!st->syms)
		return -ENOMEM;
	for (i = 0; i < b->n; i++) {
		if (n && st->syms[n - 1].addr == b->c[i].addr)
			continue;
		st->syms[n].addr = b->c[i].addr;
		st->syms[n].size = b->c[i].size;
		st->syms[n].type = b->c[i].type;
		/* Temporarily the pool offset; pointers are set once the pool is final. */
		st->syms[n].name = (const char *)(uintptr_t)b->c[i].name;
		if (!b->c[i].size) {
			uint64_t end = b->c[i].sec_end;
			size_t j;

			for (j = i + 1; j < b->n; j++)
				if (b->c[j].addr > b->c[i].addr)
					break;
			if (j < b->n && (!end || b->c[j].addr < end))
				end = b->c[j].addr;
			/* The last symbol of unknown size: to the next page, as perf does. */
			if (!end)
				end = b->c[i].addr > UINT64_MAX - 8192 ?
					      UINT64_MAX :
					      PREC_ALIGN_UP(b->c[i].addr, 4096) + 4096;
			if (end > b->c[i].addr)
				st->syms[n].size = end - b->c[i].addr;
		}
		n++;
	}
	st->n = n;
	st->names = b->pool.data;
	b->pool.data = NULL;
	b->pool.len = b->pool.cap = 0;
	for (i = 0; i < n; i++)
		st->syms[i].name = st->names + (uintptr_t)st->syms[i].name;
	return 0;
}

static void builder_free(struct builder *b)
{
	free(b->c);
	prec_buf_free(&b->pool);
}

static int read_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct builder *b,
			uint16_t bias)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, n;

	if (!data || !sh->sh_entsize)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < n; i++) {
		GElf_Sym sym;
		GElf_Shdr tsh;
		Elf_Scn *ts;
		const char *name;
		struct cand c;
		int type, err;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE)
			continue;
		if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
			continue;
		ts = elf_getscn(elf, sym.st_shndx);
		if (!ts || !gelf_getshdr(ts, &tsh) || !(tsh.sh_flags & SHF_EXECINSTR))
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		/* Arm mapping symbols ($x, $d, $x.N) mark code and data, not functions. */
		if (!name || !*name || (name[0] == '$' && name[1] && (!name[2] || name[2] == '.')))
			continue;
		c = (struct cand){ .addr = sym.st_value, .size = sym.st_size,
				   .sec_end = tsh.sh_addr + tsh.sh_size, .type = PREC_SYM_FUNC,
				   .bias = bias, .bind = (uint8_t)GELF_ST_BIND(sym.st_info),
				   .untyped = type == STT_NOTYPE, .ifunc = type == STT_GNU_IFUNC };
		err = add_cand(b, &c, name);
		if (err)
			return err;
	}
	return 0;
}

/*
 * A GOT slot a PLT stub jumps through: the symbol its dynamic relocation
 * binds, or for an IRELATIVE slot (a call of an IFUNC inside the file) no
 * name but the resolver's address, the relocation's addend.
 */
struct got_name {
	uint64_t slot;
	const char *name;         /* NULL: an IRELATIVE slot */
	uint64_t addend;
};

static int got_add(struct got_name **g, size_t *n, uint64_t slot, const char *name,
		   uint64_t addend)
{
	if (PREC_ARRAY_RESERVE(*g, *n, 1))
		return -ENOMEM;
	(*g)[(*n)++] = (struct got_name){ slot, name, addend };
	return 0;
}

static int collect_got_names(Elf *elf, struct got_name **out, size_t *nout)
{
	Elf_Scn *scn = NULL;
	struct got_name *g = NULL;
	size_t n = 0;
	int err = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh, lsh;
		Elf_Scn *ls;
		Elf_Data *data, *sd = NULL;
		size_t i, cnt;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		/*
		 * Only the dynamic relocations: a static executable's IRELATIVE
		 * slots have no stubs objdump or perf would name.
		 */
		ls = elf_getscn(elf, sh.sh_link);
		if (!ls || !gelf_getshdr(ls, &lsh) || lsh.sh_type != SHT_DYNSYM)
			continue;
		sd = elf_getdata(ls, NULL);
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		cnt = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < cnt; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			unsigned t;
			const char *name = NULL;

			if (!gelf_getrela(data, (int)i, &r))
				break;
			t = GELF_R_TYPE(r.r_info);
			if (t == R_X86_64_IRELATIVE) {
				err = got_add(&g, &n, r.r_offset, NULL, (uint64_t)r.r_addend);
				if (err)
					goto out;
				continue;
			}
			if ((t != R_X86_64_JUMP_SLOT && t != R_X86_64_GLOB_DAT) || !sd)
				continue;
			if (gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &sym))
				name = elf_strptr(elf, lsh.sh_link, sym.st_name);
			/* A slot without a symbol name resolves like an IRELATIVE one. */
			err = got_add(&g, &n, r.r_offset, name && *name ? name : NULL,
				      (uint64_t)r.r_addend);
			if (err)
				goto out;
		}
	}
out:
	if (err) {
		free(g);
		g = NULL;
		n = 0;
	}
	*out = g;
	*nout = n;
	return err;
}

/*
 * The name of the IFUNC whose resolver is at @addr, the best of its aliases
 * (@b is sorted), or NULL when no IFUNC symbol starts there.
 */
static const char *ifunc_at(const struct builder *b, size_t nsorted, uint64_t addr)
{
	size_t lo = 0, hi = nsorted, i;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->c[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < nsorted && b->c[i].addr == addr; i++)
		if (b->c[i].ifunc && b->c[i].type == PREC_SYM_FUNC)
			return b->pool.data + b->c[lo].name;
	return NULL;
}

/*
 * Names PLT stubs the way objdump does: decode each entry's "jmp *disp(%rip)"
 * to find its GOT slot, and name the entry after the symbol the dynamic
 * relocation of that slot binds. This does not depend on the order of
 * .rela.plt and covers .plt (lazy), .plt.sec (IBT) and .plt.got alike.
 * Stubs of IRELATIVE slots, which objdump calls "*ABS*+0xADDEND@plt", are
 * named as perf names them: after the IFUNC at the addend, else
 * "offset_0xOFF@plt" with the stub's file offset. The lazy PLT's header
 * (push GOT+8; jmp *GOT+16) is ".plt", as perf has it.
 *
 * Call with the ELF symbols added and sorted (the IFUNC names are looked up
 * among them); the stubs are appended after them, unsorted.
 */
static int read_plt(Elf *elf, size_t shstrndx, struct builder *b)
{
	struct got_name *g = NULL;
	Elf_Scn *scn = NULL;
	size_t ng = 0, nsorted = b->n;
	int err;

	err = collect_got_names(elf, &g, &ng);
	if (err || !ng)
		goto out;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		const char *sname;
		uint64_t ent, k;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		sname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!sname || (strcmp(sname, ".plt") && strcmp(sname, ".plt.sec") &&
			       strcmp(sname, ".plt.got")))
			continue;
		ent = sh.sh_entsize == 8 || sh.sh_entsize == 16 ? sh.sh_entsize :
		      !strcmp(sname, ".plt.got") ? 8 : 16;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf || data->d_size < sh.sh_size)
			continue;
		for (k = 0; k + ent <= sh.sh_size; k += ent) {
			const uint8_t *e = (const uint8_t *)data->d_buf + k;
			struct cand c = { .addr = sh.sh_addr + k, .size = ent,
					  .type = PREC_SYM_PLT, .bind = STB_GLOBAL };
			const char *base;
			char name[512];
			size_t x = 0, j;
			int32_t disp;
			uint64_t slot;

			if (k == 0 && ent >= 16 && !strcmp(sname, ".plt") && e[0] == 0xff &&
			    e[1] == 0x35) {
				err = add_cand(b, &c, ".plt");
				if (err)
					goto out;
				continue;
			}
			if (ent >= 16 && e[0] == 0xf3 && e[1] == 0x0f && e[2] == 0x1e &&
			    e[3] == 0xfa)
				x = 4;
			if (e[x] == 0xf2)
				x++;
			if (x + 6 > ent || e[x] != 0xff || e[x + 1] != 0x25)
				continue;
			memcpy(&disp, e + x + 2, 4);
			slot = sh.sh_addr + k + x + 6 + (uint64_t)(int64_t)disp;
			for (j = 0; j < ng; j++)
				if (g[j].slot == slot)
					break;
			if (j == ng)
				continue;
			base = g[j].name;
			if (!base && g[j].addend)
				base = ifunc_at(b, nsorted, g[j].addend);
			/* Into @name before add_cand(), which may move the pool @base is in. */
			if (base)
				snprintf(name, sizeof(name), "%s@plt", base);
			else
				snprintf(name, sizeof(name), "offset_%#" PRIx64 "@plt",
					 (uint64_t)sh.sh_offset + k);
			err = add_cand(b, &c, name);
			if (err)
				goto out;
		}
	}
out:
	free(g);
	return err;
}

static void read_build_id(Elf *elf, uint8_t *id, size_t *size)
{
	Elf_Scn *scn = NULL;

	*size = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		while ((off = gelf_getnote(data, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)data->d_buf + noff, "GNU", 4) &&
			    nh.n_descsz > 0 && nh.n_descsz <= 20) {
				memcpy(id, (const char *)data->d_buf + doff, nh.n_descsz);
				*size = nh.n_descsz;
				return;
			}
		}
	}
}

/* ---- the symbols of a stripped file, from elsewhere ---- */

/* An ELF file (or memory image) whose .symtab a stripped file borrows. */
struct aux_elf {
	Elf *elf;
	int fd;
	void *mem;
	char path[4096];          /* a separate file's path, "" for MiniDebugInfo */
};

static void aux_close(struct aux_elf *x)
{
	if (x->elf)
		elf_end(x->elf);
	if (x->fd >= 0)
		close(x->fd);
	free(x->mem);
	x->elf = NULL;
	x->fd = -1;
	x->mem = NULL;
}

static Elf_Scn *find_scn(Elf *elf, Elf64_Word type, const char *name)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (name && elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) || (type != SHT_NULL && sh.sh_type != type))
			continue;
		n = name ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		if (!name || (n && !strcmp(n, name)))
			return scn;
	}
	return NULL;
}

/* Takes @elf (and @fd, @mem) as the aux file if it is ELF with a .symtab. */
static bool aux_take(struct aux_elf *x, Elf *elf, int fd, void *mem)
{
	if (elf && elf_kind(elf) == ELF_K_ELF && find_scn(elf, SHT_SYMTAB, NULL)) {
		x->elf = elf;
		x->fd = fd;
		x->mem = mem;
		if (mem)
			x->path[0] = '\0';
		return true;
	}
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	free(mem);
	return false;
}

/*
 * Opens @path as the aux file. With @want (@nwant bytes) it must have that
 * build id; with @crc (not NULL) the CRC-32 of its bytes must be *@crc, the
 * check of a .gnu_debuglink (gdb's separate debug files; liblzma's
 * lzma_crc32() is that same CRC).
 */
static bool aux_open(struct aux_elf *x, const char *path, const uint8_t *want, size_t nwant,
		     const uint32_t *crc)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;

	if (fd < 0)
		return false;
	if (crc) {
		uint8_t buf[65536];
		uint32_t c = 0;
		ssize_t r;

		while ((r = read(fd, buf, sizeof(buf))) > 0)
			c = lzma_crc32(buf, (size_t)r, c);
		if (r < 0 || c != *crc) {
			close(fd);
			return false;
		}
	}
	snprintf(x->path, sizeof(x->path), "%s", path);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && want) {
		uint8_t id[20];
		size_t n = 0;

		read_build_id(elf, id, &n);
		if (!prec_build_id_equal(id, n, want, nwant)) {
			elf_end(elf);
			elf = NULL;
		}
	}
	return aux_take(x, elf, fd, NULL);
}

/* Where a separate debug file may be, as gdb and perf look for one. */
struct dbg_where {
	const char *path;         /* the stripped file as opened */
	const char *root;         /* the system root it is under ("" for /) */
};

/* The separate debug file ROOT/usr/lib/debug/.build-id/xx/yyyy.debug. */
static bool aux_by_build_id(struct aux_elf *x, const struct dbg_where *w, const uint8_t *id,
			    size_t n)
{
	char h[41], path[4096];

	if (n < 2)
		return false;
	prec_hex(h, id, n);
	snprintf(path, sizeof(path), "%s/usr/lib/debug/.build-id/%.2s/%s.debug", w->root, h,
		 h + 2);
	return aux_open(x, path, id, n, NULL);
}

/*
 * The file .gnu_debuglink names (a name, NUL, padding to 4 bytes, the CRC-32
 * of the debug file), looked for where gdb looks: beside the file, in .debug/
 * beside it, and under ROOT/usr/lib/debug/ plus the file's directory.
 */
static bool aux_by_debuglink(struct aux_elf *x, Elf *elf, const struct dbg_where *w)
{
	Elf_Scn *scn = find_scn(elf, SHT_PROGBITS, ".gnu_debuglink");
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	char dir[4096], name[1024], path[4096 + 1024 + 16];
	const char *rel, *slash;
	size_t len, coff;
	uint32_t crc;

	if (!d || !d->d_buf || !d->d_size)
		return false;
	len = strnlen(d->d_buf, d->d_size);
	coff = (len + 4) & ~(size_t)3;
	if (!len || len >= sizeof(name) || coff + 4 > d->d_size || memchr(d->d_buf, '/', len))
		return false;
	memcpy(name, d->d_buf, len + 1);
	memcpy(&crc, (const char *)d->d_buf + coff, 4);
	if (elf_getident(elf, NULL)[EI_DATA] == ELFDATA2MSB)
		crc = __builtin_bswap32(crc);
	slash = strrchr(w->path, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - w->path) : 1,
		 slash ? w->path : ".");
	rel = dir;
	if (*w->root && !strncmp(dir, w->root, strlen(w->root)))
		rel += strlen(w->root);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (aux_open(x, path, NULL, 0, &crc))
		return true;
	snprintf(path, sizeof(path), "%s/.debug/%s", dir, name);
	if (aux_open(x, path, NULL, 0, &crc))
		return true;
	snprintf(path, sizeof(path), "%s/usr/lib/debug%s/%s", w->root, rel, name);
	return aux_open(x, path, NULL, 0, &crc);
}

/* MiniDebugInfo: .gnu_debugdata holds an xz-compressed ELF file with a .symtab. */
#define MINIDEBUG_MAX (256u << 20)
static bool aux_by_debugdata(struct aux_elf *x, Elf *elf)
{
	Elf_Scn *scn = find_scn(elf, SHT_PROGBITS, ".gnu_debugdata");
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	lzma_stream z = LZMA_STREAM_INIT;
	uint8_t *out = NULL;
	size_t cap = 0;
	lzma_ret r = LZMA_OK;

	if (!d || !d->d_buf || !d->d_size ||
	    lzma_stream_decoder(&z, MINIDEBUG_MAX, 0) != LZMA_OK)
		return false;
	z.next_in = d->d_buf;
	z.avail_in = d->d_size;
	while (r == LZMA_OK) {
		if (!z.avail_out) {
			size_t ncap = cap ? cap * 2 : d->d_size * 4 + 4096;
			uint8_t *n = ncap <= MINIDEBUG_MAX ? realloc(out, ncap) : NULL;

			if (!n)
				break;
			out = n;
			z.next_out = out + cap;
			z.avail_out = ncap - cap;
			cap = ncap;
		}
		r = lzma_code(&z, LZMA_FINISH);
	}
	lzma_end(&z);
	if (r != LZMA_STREAM_END) {
		free(out);
		return false;
	}
	return aux_take(x, elf_memory((char *)out, z.total_out), -1, out);
}

/*
 * The symbols of a file that has no .symtab (a stripped program or
 * library), as gdb finds them: a separate debug file by build id, else by
 * .gnu_debuglink, else the MiniDebugInfo in .gnu_debugdata. Its .symtab has
 * the file's own addresses. Without @w only .gnu_debugdata is looked at.
 */
static bool find_aux(struct aux_elf *x, Elf *elf, const struct prec_symtab *st,
		     const struct dbg_where *w)
{
	if (w && aux_by_build_id(x, w, st->build_id, st->build_id_size))
		return true;
	if (w && aux_by_debuglink(x, elf, w))
		return true;
	return aux_by_debugdata(x, elf);
}

static int load_elf(Elf *elf, struct prec_symtab *st, const struct dbg_where *w)
{
	struct builder b = { 0 };
	static struct aux_elf aux0 = { .fd = -1 };
	struct aux_elf aux = aux0;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t i, nph, shstrndx;
	bool have_symtab = false;
	int err = 0;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return -PREC_E_FORMAT;
	if (elf_getphdrnum(elf, &nph))
		nph = 0;
	st->segs = calloc(nph ? nph : 1, sizeof(*st->segs));
	if (!st->segs)
		return -ENOMEM;
	for (i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		st->segs[st->nsegs++] = (struct seg){ ph.p_offset, ph.p_vaddr, ph.p_filesz };
	}
	read_build_id(elf, st->build_id, &st->build_id_size);
	if (elf_getshdrstrndx(elf, &shstrndx))
		shstrndx = 0;
	have_symtab = find_scn(elf, SHT_SYMTAB, NULL) != NULL;
	if (!have_symtab && find_aux(&aux, elf, st, w)) {
		have_symtab = true;
		GElf_Shdr ash;
		Elf_Scn *as = find_scn(aux.elf, SHT_SYMTAB, NULL);

		if (gelf_getshdr(as, &ash))
			err = read_symbols(aux.elf, as, &ash, &b, 0);
		if (err)
			goto out;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		/* .dynsym only adds what a stripped file lost; aliases rank lower. */
		if (sh.sh_type == SHT_SYMTAB)
			err = read_symbols(elf, scn, &sh, &b, 0);
		else if (sh.sh_type == SHT_DYNSYM)
			err = read_symbols(elf, scn, &sh, &b, have_symtab ? 1 : 0);
		if (err)
			goto out;
	}
	if (b.n > 1)
		qsort(b.c, b.n, sizeof(*b.c), cand_cmp);
	err = read_plt(elf, shstrndx, &b);
	if (err)
		goto out;
	err = builder_finish(&b, st);
out:
	aux_close(&aux);
	builder_free(&b);
	return err;
}

int prec_symtab_debug_file(const char *path, const char *debug_root, char *out, size_t size)
{
	static struct aux_elf aux0 = { .fd = -1 };
	struct aux_elf aux = aux0;
	struct prec_symtab st = { 0 };
	struct dbg_where w = { path, debug_root ? debug_root : "" };
	Elf *elf;
	int fd, err = -ENOENT;

	elf_init();
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -PREC_E_FORMAT;
	} else if (!find_scn(elf, SHT_SYMTAB, NULL)) {
		read_build_id(elf, st.build_id, &st.build_id_size);
		if ((aux_by_build_id(&aux, &w, st.build_id, st.build_id_size) ||
		     aux_by_debuglink(&aux, elf, &w)) &&
		    (size_t)snprintf(out, size, "%s", aux.path) < size)
			err = 0;
		aux_close(&aux);
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return err;
}

int prec_symtab_from_elf(const char *path, struct prec_symtab **out)
{
	return prec_symtab_from_elf_debug(path, NULL, out);
}

int prec_symtab_from_elf_debug(const char *path, const char *debug_root,
			       struct prec_symtab **out)
{
	struct dbg_where w = { path, debug_root };
	struct prec_symtab *st;
	Elf *elf = NULL;
	int fd, err;

	elf_init();
	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	st = symtab_alloc();
	if (!st) {
		err = -ENOMEM;
		goto out;
	}
	errno = 0;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		/* libelf maps the file, or reads it into memory: either can fail for want of it */
		err = errno == ENOMEM ? -ENOMEM : -PREC_E_FORMAT;
		goto out;
	}
	err = load_elf(elf, st, debug_root ? &w : NULL);
	if (err)
		goto out;
	st->path = strdup(path);
	if (!st->path)
		err = -ENOMEM;
out:
	if (elf)
		elf_end(elf);
	close(fd);
	if (err) {
		prec_symtab_free(st);
		return err;
	}
	*out = st;
	return 0;
}

int prec_symtab_from_elf_mem(const void *p, size_t n, struct prec_symtab **out)
{
	struct prec_symtab *st;
	Elf *elf = NULL;
	int err;

	elf_init();
	*out = NULL;
	if (!p || n < 64)
		return -PREC_E_FORMAT;
	st = symtab_alloc();
	if (!st)
		return -ENOMEM;
	st->mem = malloc(n);
	if (!st->mem) {
		err = -ENOMEM;
		goto out;
	}
	memcpy(st->mem, p, n);
	st->mem_size = n;
	elf = elf_memory(st->mem, n);
	if (!elf) {
		err = -PREC_E_FORMAT;
		goto out;
	}
	err = load_elf(elf, st, NULL);
out:
	if (elf)
		elf_end(elf);
	if (err) {
		prec_symtab_free(st);
		return err;
	}
	*out = st;
	return 0;
}

bool prec_build_id_equal(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
	const uint8_t *rest;
	size_t i, n = na < nb ? na : nb, more;

	if (!n || memcmp(a, b, n))
		return false;
	rest = na > nb ? a + n : b + n;
	more = (na > nb ? na : nb) - n;
	for (i = 0; i < more; i++)
		if (rest[i])
			return false;
	return true;
}

int prec_elf_build_id(const char *path, uint8_t *id, size_t size)
{
	uint8_t tmp[20];
	size_t n = 0;
	Elf *elf;
	int fd;

	elf_init();
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(fd);
		return -PREC_E_FORMAT;
	}
	read_build_id(elf, tmp, &n);
	elf_end(elf);
	close(fd);
	if (n > size)
		return -ENOSPC;
	memcpy(id, tmp, n);
	return (int)n;
}

int prec_symtab_from_kallsyms(const char *text, size_t len, struct prec_symtab **out)
{
	struct prec_symtab *st;
	struct builder b = { 0 };
	const char *p = text, *end = text + len;
	size_t lines = 0, good = 0;
	int err = 0;

	*out = NULL;
	if (!text && len)
		return -EINVAL;
	st = symtab_alloc();
	if (!st)
		return -ENOMEM;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[600], name[520], type;
		unsigned long long addr;

		if (ll && ll < sizeof(line)) {
			memcpy(line, p, ll);
			line[ll] = '\0';
			lines++;
			if (sscanf(line, "%llx %c %511s", &addr, &type, name) == 3) {
				good++;
				if (strchr("tTwW", type)) {
					struct cand c = {
						.addr = addr, .type = PREC_SYM_KERNEL,
						.bind = type == 'T' ? STB_GLOBAL :
							type == 't' ? STB_LOCAL : STB_WEAK,
					};

					err = add_cand(&b, &c, name);
					if (err)
						goto out;
				}
			}
		}
		p += ll + 1;
	}
	if (lines && !good) {
		err = -PREC_E_FORMAT;
		goto out;
	}
	err = builder_finish(&b, st);
out:
	builder_free(&b);
	if (err) {
		prec_symtab_free(st);
		return err;
	}
	*out = st;
	return 0;
}

/* ---- source lines ---- */

static int dw_open_file(struct prec_symtab *st, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	Dwarf *dw;

	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	dw = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
	if (!dw) {
		if (elf)
			elf_end(elf);
		close(fd);
		return -PREC_E_NOSYM;
	}
	st->dw_fd = fd;
	st->dw_elf = elf;
	st->dw = dw;
	return 0;
}

static int dw_open(struct prec_symtab *st, const char *debug_root)
{
	if (st->dw)
		return 0;
	if (st->dw_tried)
		return -PREC_E_NOSYM;
	st->dw_tried = true;
	if (debug_root && st->build_id_size > 1) {
		char h[41], path[4096];

		prec_hex(h, st->build_id, st->build_id_size);
		snprintf(path, sizeof(path), "%s/usr/lib/debug/.build-id/%.2s/%s.debug",
			 debug_root, h, h + 2);
		if (!dw_open_file(st, path))
			return 0;
	}
	if (st->path && !dw_open_file(st, st->path))
		return 0;
	if (st->mem) {
		Elf *elf = elf_memory(st->mem, st->mem_size);
		Dwarf *dw = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;

		if (dw) {
			st->dw_elf = elf;
			st->dw = dw;
			return 0;
		}
		if (elf)
			elf_end(elf);
	}
	return -PREC_E_NOSYM;
}

int prec_symtab_srcline(struct prec_symtab *st, uint64_t vaddr, const char *debug_root,
			struct prec_srcline *out)
{
	Dwarf_Die cu, *scopes = NULL;
	Dwarf_Files *files = NULL;
	Dwarf_Line *line;
	int n, i, lineno = 0;
	const char *file;

	memset(out, 0, sizeof(*out));
	if (!st || dw_open(st, debug_root))
		return -PREC_E_NOSYM;
	if (!dwarf_addrdie(st->dw, vaddr, &cu))
		return -PREC_E_NOSYM;
	line = dwarf_getsrc_die(&cu, vaddr);
	if (!line)
		return -PREC_E_NOSYM;
	file = dwarf_linesrc(line, NULL, NULL);
	if (!file || dwarf_lineno(line, &lineno))
		return -PREC_E_NOSYM;
	out->file = file;
	out->line = lineno;
	n = dwarf_getscopes(&cu, vaddr, &scopes);
	if (n > 0)
		dwarf_getsrcfiles(&cu, &files, NULL);
	for (i = 0; i < n && out->nr_inline < PREC_SRC_MAX_INLINE; i++) {
		Dwarf_Attribute a;
		Dwarf_Word fidx = 0, cl = 0;
		const char *fn;

		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		fn = dwarf_diename(&scopes[i]);
		if (!fn && dwarf_attr_integrate(&scopes[i], DW_AT_name, &a))
			fn = dwarf_formstring(&a);
		if (dwarf_attr(&scopes[i], DW_AT_call_file, &a))
			dwarf_formudata(&a, &fidx);
		if (dwarf_attr(&scopes[i], DW_AT_call_line, &a))
			dwarf_formudata(&a, &cl);
		out->inl[out->nr_inline].func = fn ? fn : "??";
		out->inl[out->nr_inline].file =
			files ? dwarf_filesrc(files, fidx, NULL, NULL) : NULL;
		if (!out->inl[out->nr_inline].file)
			out->inl[out->nr_inline].file = "??";
		out->inl[out->nr_inline].line = (int)cl;
		out->nr_inline++;
	}
	free(scopes);
	return 0;
}

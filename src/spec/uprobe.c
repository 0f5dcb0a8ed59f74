// SPDX-License-Identifier: MIT
/* Resolving uprobe targets (function or address -> file offset) with libelf. */
#include <capstone/capstone.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spec/uprobe.h"
#include "base/util.h"

struct sym_hit {
	GElf_Sym sym;
	bool found;
};


static bool is_func(const GElf_Sym *s)
{
	int t = GELF_ST_TYPE(s->st_info);

	return t == STT_FUNC || t == STT_GNU_IFUNC;
}

/*
 * Looks @want up in the symbol table of type @shtype. A defined function wins
 * over other symbols of that name; near misses among functions go to @best.
 */
static int scan_symtab(Elf *elf, GElf_Word shtype, const char *want, struct sym_hit *fn,
		       struct sym_hit *other, struct prec_near *best, bool *have_table)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != shtype || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			return -PREC_E_FORMAT;
		*have_table = true;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(data, (int)i, &s))
				break;
			if (s.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!name || !*name)
				continue;
			if (!strcmp(name, want)) {
				if (is_func(&s) && !fn->found) {
					fn->sym = s;
					fn->found = true;
				} else if (!is_func(&s) && !other->found) {
					other->sym = s;
					other->found = true;
				}
			} else if (is_func(&s)) {
				prec_near_add(best, name);
			}
		}
	}
	return 0;
}

static int vaddr_to_offset(Elf *elf, uint64_t vaddr, uint64_t *off, bool *exec)
{
	size_t n, i;

	if (elf_getphdrnum(elf, &n))
		return -PREC_E_FORMAT;
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			*exec = ph.p_flags & PF_X;
			return 0;
		}
	}
	return -PREC_E_FORMAT;
}

/*
 * A uprobe replaces the first byte at its offset with int3: inside an
 * instruction that corrupts the program instead of probing it. On x86-64,
 * decode the function from its start to make sure @offset is a boundary.
 * Returns 0 if it is (or if the code cannot be decoded), -EINVAL if not, with
 * the boundaries on either side in *@before / *@after.
 */
static int check_boundary(Elf *elf, const GElf_Ehdr *eh, uint64_t sym_off, uint64_t size,
			  uint64_t offset, uint64_t *before, uint64_t *after)
{
	const uint8_t *code;
	size_t fsize, len;
	uint64_t addr = 0;
	cs_insn *insn;
	csh cs;
	int ret = 0;

	if (!offset || eh->e_machine != EM_X86_64)
		return 0;
	code = (const uint8_t *)elf_rawfile(elf, &fsize);
	if (!code || sym_off >= fsize)
		return 0;
	len = size ? size : offset + 16;
	if (len > fsize - sym_off)
		len = fsize - sym_off;
	code += sym_off;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return 0;
	insn = cs_malloc(cs);
	*before = 0;
	while (insn && cs_disasm_iter(cs, &code, &len, &addr, insn)) {
		if (addr == offset)
			break;
		if (addr > offset) {
			*before = insn->address;
			*after = addr;
			ret = -EINVAL;
			break;
		}
	}
	if (insn)
		cs_free(insn, 1);
	cs_close(&cs);
	return ret;
}

void prec_uprobe_target_fini(struct prec_uprobe_target *t)
{
	if (!t)
		return;
	free(t->path);
	free(t->symbol);
	memset(t, 0, sizeof(*t));
}

/*
 * The address of @symbol + @offset in @elf (the file @real): a defined
 * function, and the offset on an instruction boundary inside it.
 */
static int resolve_symbol(Elf *elf, const GElf_Ehdr *eh, const char *real, const char *symbol,
			  uint64_t offset, struct prec_uprobe_target *t, uint64_t *vaddr,
			  struct prec_diag *d)
{
	struct sym_hit fn = { .found = false }, other = { .found = false };
	struct prec_near best;
	bool have_table = false, exec = false;
	uint64_t start;
	int err;

	prec_near_init(&best, symbol, 2, 2);
	err = scan_symtab(elf, SHT_SYMTAB, symbol, &fn, &other, &best, &have_table);
	if (!err && !fn.found)
		err = scan_symtab(elf, SHT_DYNSYM, symbol, &fn, &other, &best, &have_table);
	if (err) {
		prec_diag_set(d, err, -1, "cannot read the symbols of '%s'", real);
		return err;
	}
	if (!fn.found && other.found) {
		err = prec_diag_set(d, -EINVAL, -1, "'%s' in '%s' is not a function",
				    symbol, real);
		prec_diag_hint(d, "uprobes go on functions; give an address (0x...) to "
				  "probe elsewhere");
		return err;
	}
	if (!fn.found) {
		err = prec_diag_set(d, -PREC_E_NOSYM, -1, "no function '%s' in '%s'",
				    symbol, real);
		if (!have_table)
			prec_diag_hint(d, "the file has no symbol table; give an address "
					  "(0x...) instead");
		else if (prec_near_get(&best, 1))
			prec_diag_hint(d, "did you mean '%s' or '%s'?",
				       prec_near_get(&best, 0), prec_near_get(&best, 1));
		else if (prec_near_get(&best, 0))
			prec_diag_hint(d, "did you mean '%s'?", prec_near_get(&best, 0));
		else
			prec_diag_hint(d, "list its functions with: nm --defined-only %s "
					  "(static ones too; nm -D lists only exported ones)", real);
		return err;
	}
	if (fn.sym.st_size && offset >= fn.sym.st_size) {
		err = prec_diag_set(d, -ERANGE, -1,
				    "offset %llu is beyond the end of '%s' (%llu bytes)",
				    (unsigned long long)offset, symbol,
				    (unsigned long long)fn.sym.st_size);
		return err;
	}
	t->sym_size = fn.sym.st_size;
	*vaddr = fn.sym.st_value + offset;
	if (offset && !vaddr_to_offset(elf, fn.sym.st_value, &start, &exec)) {
		uint64_t before, after;

		if (check_boundary(elf, eh, start, fn.sym.st_size, offset, &before,
				   &after)) {
			err = prec_diag_set(d, -ERANGE, -1,
					    "offset %llu is inside an instruction of '%s'",
					    (unsigned long long)offset, symbol);
			prec_diag_hint(d, "instructions start at +%llu and +%llu",
				       (unsigned long long)before,
				       (unsigned long long)after);
			return err;
		}
	}
	return 0;
}

int prec_uprobe_resolve(const char *path, const char *symbol, uint64_t offset,
			struct prec_uprobe_target *t, struct prec_diag *d)
{
	char found[PATH_MAX], real[PATH_MAX];
	bool exec = false;
	Elf *elf = NULL;
	GElf_Ehdr eh;
	int fd = -1, err = 0;
	uint64_t vaddr;

	memset(t, 0, sizeof(*t));
	if (!strchr(path, '/')) {
		if (prec_find_exec(path, found, sizeof(found))) {
			err = prec_diag_set(d, -ENOENT, -1, "'%s' is not found in $PATH", path);
			prec_diag_hint(d, "give the path of the program or library, e.g. ./%s",
				       path);
			goto out;
		}
		path = found;
	}
	if (!realpath(path, real)) {
		err = prec_diag_set(d, -errno, -1, "cannot open '%s': %s", path, strerror(errno));
		goto out;
	}
	fd = open(real, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = prec_diag_set(d, -errno, -1, "cannot open '%s': %s", real, strerror(errno));
		goto out;
	}
	if (elf_version(EV_CURRENT) == EV_NONE) {
		err = prec_diag_set(d, -PREC_E_INTERNAL, -1, "libelf is unusable");
		goto out;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		err = prec_diag_set(d, -PREC_E_FORMAT, -1, "'%s' is not an ELF file", real);
		prec_diag_hint(d, "uprobes go on executables and shared libraries");
		goto out;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		err = prec_diag_set(d, -PREC_E_FORMAT, -1,
				    "'%s' is not an executable or shared library", real);
		goto out;
	}
	if (!strncmp(symbol, "0x", 2) || !strncmp(symbol, "0X", 2)) {
		if (prec_parse_u64(symbol, 16, &vaddr)) {
			err = prec_diag_set(d, -EINVAL, -1, "bad address '%s'", symbol);
			goto out;
		}
		if (offset > UINT64_MAX - vaddr) {
			err = prec_diag_set(d, -ERANGE, -1, "address plus offset overflows");
			goto out;
		}
		vaddr += offset;
	} else {
		err = resolve_symbol(elf, &eh, real, symbol, offset, t, &vaddr, d);
		if (err)
			goto out;
	}
	if (vaddr_to_offset(elf, vaddr, &t->file_offset, &exec)) {
		err = prec_diag_set(d, -EFAULT, -1,
				    "address %#llx is not mapped by any loadable segment of '%s'",
				    (unsigned long long)vaddr, real);
		goto out;
	}
	if (!exec) {
		err = prec_diag_set(d, -EINVAL, -1,
				    "address %#llx of '%s' is not in an executable segment",
				    (unsigned long long)vaddr, real);
		goto out;
	}
	t->vaddr = vaddr;
	t->sym_offset = offset;
	t->path = strdup(real);
	t->symbol = strdup(symbol);
	if (!t->path || !t->symbol)
		err = prec_diag_set(d, -ENOMEM, -1, "out of memory");
out:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	if (err)
		prec_uprobe_target_fini(t);
	return err;
}

// SPDX-License-Identifier: MIT
/*
 * Symbol tables checked against binutils as an independent peer: function
 * symbols against nm, PLT stub names against objdump -d, build ids against
 * readelf -n, source lines against addr2line. The test program is compiled
 * at run time with several PLT layouts.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "base/symtab.h"

static const char csrc[] =
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"static int helper(int x) { return x * 3 + (int)strlen(\"abc\"); }\n"
	"static inline int sq(int x) { return x * x; }\n"
	"int compute(int n)\n"
	"{\n"
	"	int s = 0;\n"
	"	for (int i = 0; i < n; i++)\n"
	"		s += sq(i) + helper(i);\n"
	"	return s;\n"
	"}\n"
	"void (*fp)(const char *) = (void (*)(const char *))puts;\n"
	"static int add1(int x) { return x + 1; }\n"
	"static int add2(int x) { return x + 2; }\n"
	"static int (*pick_add(void))(int) { return getenv(\"ADD2\") ? add2 : add1; }\n"
	"int add_n(int x) __attribute__((ifunc(\"pick_add\")));\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	char *p = malloc(16);\n"
	"	printf(\"%d\\n\", compute(argc));\n"
	"	puts(\"x\");\n"
	"	fp(\"y\");\n"
	"	free(p);\n"
	"	return add_n(atoi(argc > 1 ? argv[1] : \"0\"));\n"
	"}\n";

static FILE *cmd_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static FILE *cmd_out(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return popen(cmd, "r");
}

static bool compile(const char *flags, char *out, size_t outsz)
{
	char src[512], cmd[2048];
	FILE *f;

	snprintf(src, sizeof(src), "%s/c.c", t_tmpdir());
	snprintf(out, outsz, "%s/c", t_tmpdir());
	f = fopen(src, "w");
	if (!T_OK(f))
		return false;
	fputs(csrc, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -O2 -g %s -o %s %s", flags, out, src);
	return T_OK(system(cmd) == 0);
}

struct nsym {
	uint64_t addr;
	char name[128];
	char type;                /* nm's letter */
};

/* File offset of ELF address @a, from readelf's section table (or 0). */
static uint64_t sec_off(const char *path, uint64_t a)
{
	char line[512];
	uint64_t r = 0;
	FILE *f = cmd_out("readelf -SW %s | sed 's/^ *\\[ *[0-9]*\\]//'", path);

	while (f && fgets(line, sizeof(line), f)) {
		char name[128], type[64];
		unsigned long long addr, off, size;

		if (sscanf(line, " %127s %63s %llx %llx %llx", name, type, &addr, &off, &size) == 5 &&
		    addr && a >= addr && a < addr + size && strcmp(type, "NOBITS"))
			r = off + (a - addr);
	}
	if (f)
		pclose(f);
	return r;
}

/* nm's defined symbols (T t W w i) inside executable sections (readelf -S). */
static size_t nm_text(const char *path, struct nsym *s, size_t max)
{
	unsigned long long xs[64], xe[64];
	char line[512];
	size_t n = 0, nx = 0;
	FILE *f = cmd_out("readelf -SW %s | sed 's/^ *\\[ *[0-9]*\\]//'", path);

	while (f && fgets(line, sizeof(line), f) && nx < 64) {
		char name[128], type[64], flags[16];
		unsigned long long addr, off, size, es;

		if (sscanf(line, " %127s %63s %llx %llx %llx %llx %15s", name, type, &addr, &off,
			   &size, &es, flags) == 7 && strchr(flags, 'X')) {
			xs[nx] = addr;
			xe[nx++] = addr + size;
		}
	}
	if (f)
		pclose(f);
	T_OK(nx > 0);
	f = cmd_out("nm --defined-only %s", path);
	while (f && fgets(line, sizeof(line), f) && n < max) {
		unsigned long long a;
		bool inx = false;
		char t;

		if (sscanf(line, "%llx %c %127s", &a, &t, s[n].name) != 3 || !strchr("TtWwi", t))
			continue;
		for (size_t k = 0; k < nx; k++)
			inx |= a >= xs[k] && a < xe[k];
		if (inx) {
			s[n].addr = a;
			s[n].type = t;
			n++;
		}
	}
	if (f)
		pclose(f);
	return n;
}

/*
 * objdump's labels of PLT entries: stubs "<name@plt>:", stubs of IRELATIVE
 * slots "<*ABS*+0xADDEND@plt>:", and the lazy PLT's header, which objdump
 * labels after the entry that follows ("<x@plt-0x10>:"), or "<.plt>:" when
 * the stubs are in .plt.sec.
 */
static size_t objdump_plt(const char *path, bool dynamic, struct nsym *s, size_t max)
{
	char line[512];
	size_t n = 0;
	FILE *f = cmd_out("objdump -d -j .plt -j .plt.sec -j .plt.got %s 2>/dev/null", path);

	while (f && fgets(line, sizeof(line), f) && n < max) {
		unsigned long long a;

		size_t l;

		if (sscanf(line, "%llx <%127[^>]>:", &a, s[n].name) == 2 &&
		    (((l = strlen(s[n].name)) > 4 && !strcmp(s[n].name + l - 4, "@plt")) ||
		     strstr(s[n].name, "@plt-0x") || (dynamic && !strcmp(s[n].name, ".plt")))) {
			s[n].addr = a;
			n++;
		}
	}
	if (f)
		pclose(f);
	return n;
}

/*
 * What a PLT entry objdump labels @lab must be called, with @nm the file's
 * symbols: the label itself for a named stub; for an IRELATIVE stub the
 * IFUNC at the addend ("<alias>@plt": any name nm gives there, when one of
 * them is an IFUNC), else "offset_0xOFF@plt" (the stub's file offset), as
 * perf names them; ".plt" for the header. Returns false when @got is wrong.
 */
static bool plt_name_ok(const char *path, const struct nsym *lab, const struct nsym *nm,
			size_t nn, const char *got)
{
	unsigned long long addend;
	char want[200];
	bool ifunc = false;

	if (strstr(lab->name, "@plt-0x") || !strcmp(lab->name, ".plt"))
		return !strcmp(got, ".plt");
	if (sscanf(lab->name, "*ABS*+0x%llx@plt", &addend) != 1)
		return !strcmp(got, lab->name);
	for (size_t j = 0; j < nn; j++)
		ifunc |= nm[j].addr == addend && nm[j].type == 'i';
	if (!ifunc) {
		snprintf(want, sizeof(want), "offset_%#" PRIx64 "@plt", sec_off(path, lab->addr));
		return !strcmp(got, want);
	}
	for (size_t j = 0; j < nn; j++) {
		snprintf(want, sizeof(want), "%s@plt", nm[j].name);
		if (nm[j].addr == addend && !strcmp(got, want))
			return true;
	}
	return false;
}

static void check_layout(const char *flags)
{
	static struct nsym nm[4096], plt[256];
	struct prec_symtab *st = NULL;
	char path[512];
	size_t nn, np, i, our_plt = 0;

	if (!compile(flags, path, sizeof(path)))
		return;
	T_EQ_INT(prec_symtab_from_elf(path, &st), 0);
	if (!st)
		return;
	nn = nm_text(path, nm, 4096);
	/* A static executable's .plt holds IRELATIVE stubs only, without a header. */
	np = objdump_plt(path, !strstr(flags, "-static"), plt, 256);
	T_OK(nn > 5);
	T_OK(np >= 1 || strstr(flags, "-static"));
	/* Every nm text symbol is found at its address (as it or an alias). */
	for (i = 0; i < nn; i++) {
		uint64_t off = 1;
		const struct prec_sym *s = prec_symtab_lookup(st, nm[i].addr, &off);
		bool alias = false;

		if (!t_check(s != NULL, __FILE__, __LINE__, "[%s] nm symbol %s at %#" PRIx64
			     " not found", flags, nm[i].name, nm[i].addr))
			continue;
		T_EQ_U64(off, 0);
		for (size_t j = 0; j < nn; j++)
			if (nm[j].addr == nm[i].addr && !strcmp(nm[j].name, s->name))
				alias = true;
		t_check(alias, __FILE__, __LINE__, "[%s] %s at %#" PRIx64 " is not an nm name there",
			flags, s->name, nm[i].addr);
	}
	/* Every PLT entry objdump labels, we name as perf does, and no others. */
	for (i = 0; i < np; i++) {
		const struct prec_sym *s = prec_symtab_lookup(st, plt[i].addr, NULL);

		t_check(s && s->addr == plt[i].addr && s->type == PREC_SYM_PLT &&
				plt_name_ok(path, &plt[i], nm, nn, s->name),
			__FILE__, __LINE__, "[%s] objdump %s at %#" PRIx64 ", we have %s", flags,
			plt[i].name, plt[i].addr, s ? s->name : "nothing");
	}
	for (i = 0; i < prec_symtab_count(st); i++)
		our_plt += prec_symtab_at(st, i)->type == PREC_SYM_PLT;
	T_EQ_INT(our_plt, np);
	/* Inside a function: the function and the offset. */
	{
		const struct prec_sym *c = prec_symtab_find(st, "compute");
		uint64_t off = 0;

		if (T_OK(c && c->size > 4)) {
			T_OK(prec_symtab_lookup(st, c->addr + 3, &off) == c);
			T_EQ_U64(off, 3);
		}
		T_OK(prec_symtab_lookup(st, 0x10, NULL) == NULL);
	}
	/* A call of the program's own IFUNC goes through an IRELATIVE stub. */
	if (!strstr(flags, "-static") && !strstr(flags, "-fno-plt")) {
		const struct prec_sym *s = prec_symtab_find(st, "add_n@plt");

		T_OK(s && s->type == PREC_SYM_PLT);
	}
	prec_symtab_free(st);
}

static void plt_default(void)
{
	check_layout("");
}

static void plt_ibt(void)
{
	check_layout("-fcf-protection=full -Wl,-z,ibtplt");
}

static void plt_bind_now(void)
{
	check_layout("-Wl,-z,now");
}

static void plt_none(void)
{
	check_layout("-fno-plt");
}

static void static_nopie(void)
{
	check_layout("-static -no-pie");
}

static void build_id_vs_readelf(void)
{
	struct prec_symtab *st = NULL;
	char path[512], line[512], hex[64] = "", ours[64];
	const uint8_t *id;
	uint8_t id2[20];
	size_t n;
	FILE *f;

	if (!compile("-Wl,--build-id=sha1", path, sizeof(path)))
		return;
	f = cmd_out("readelf -n %s", path);
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "Build ID: "))
			sscanf(strstr(line, "Build ID: ") + 10, "%63s", hex);
	if (f)
		pclose(f);
	T_EQ_INT(strlen(hex), 40);
	T_EQ_INT(prec_symtab_from_elf(path, &st), 0);
	n = prec_symtab_build_id(st, &id);
	T_EQ_INT(n, 20);
	for (size_t i = 0; i < n; i++)
		sprintf(ours + 2 * i, "%02x", id[i]);
	T_EQ_STR(ours, hex);
	T_EQ_INT(prec_elf_build_id(path, id2, sizeof(id2)), 20);
	T_OK(!memcmp(id, id2, 20));
	prec_symtab_free(st);
	if (compile("-Wl,--build-id=none", path, sizeof(path)))
		T_EQ_INT(prec_elf_build_id(path, id2, sizeof(id2)), 0);
}

/* file offset -> vaddr against the PT_LOAD headers readelf prints. */
static void off_to_vaddr(void)
{
	struct prec_symtab *st = NULL;
	char path[512], line[512];
	int checked = 0;
	FILE *f;

	if (!compile("", path, sizeof(path)))
		return;
	T_EQ_INT(prec_symtab_from_elf(path, &st), 0);
	f = cmd_out("readelf -lW %s", path);
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long long off, va, pa, fs, ms;
		uint64_t v = 0;

		if (sscanf(line, " LOAD %llx %llx %llx %llx %llx", &off, &va, &pa, &fs, &ms) != 5 ||
		    !fs)
			continue;
		T_EQ_INT(prec_symtab_off_to_vaddr(st, off + fs / 2, &v), 0);
		T_EQ_U64(v, va + fs / 2);
		checked++;
	}
	if (f)
		pclose(f);
	T_OK(checked >= 2);
	T_EQ_INT(prec_symtab_off_to_vaddr(st, 1ull << 40, &(uint64_t){ 0 }), -ENOENT);
	prec_symtab_free(st);
}

/* file:line and the inline chain against addr2line -i -f. */
static void srcline_vs_addr2line(void)
{
	struct prec_symtab *st = NULL;
	const struct prec_sym *c;
	char path[512], line[512];
	int compared = 0;

	if (!compile("", path, sizeof(path)))
		return;
	T_EQ_INT(prec_symtab_from_elf(path, &st), 0);
	c = prec_symtab_find(st, "compute");
	if (!T_OK(c))
		goto out;
	for (uint64_t a = c->addr; a < c->addr + c->size; a++) {
		struct prec_srcline sl;
		char fn[128] = "", fl[512] = "";
		int ln = -1, r;
		FILE *f;

		r = prec_symtab_srcline(st, a, NULL, &sl);
		f = cmd_out("addr2line -e %s -f -i %#" PRIx64, path, a);
		/* First frame: the innermost (inlined) function and its line. */
		if (f && fgets(line, sizeof(line), f))
			sscanf(line, "%127s", fn);
		if (f && fgets(line, sizeof(line), f)) {
			char *colon = strrchr(line, ':');

			if (colon) {
				*colon = '\0';
				snprintf(fl, sizeof(fl), "%s", line);
				ln = atoi(colon + 1);
			}
		}
		if (f)
			pclose(f);
		if (ln <= 0) {
			T_OK(r != 0);
			continue;
		}
		T_EQ_INT(r, 0);
		if (r)
			continue;
		T_OK(strstr(fl, sl.file) || strstr(sl.file, strrchr(fl, '/') ? strrchr(fl, '/') + 1 : fl));
		T_EQ_INT(sl.line, ln);
		/* When addr2line reports an inlined function, so do we. */
		if (strcmp(fn, "compute")) {
			if (T_OK(sl.nr_inline > 0))
				T_EQ_STR(sl.inl[0].func, fn);
		}
		compared++;
	}
	T_OK(compared > 3);
out:
	prec_symtab_free(st);
}

static void kallsyms(void)
{
	static const char text[] =
		"ffffffff81000000 T _stext\n"
		"ffffffff81000000 T startup_64\n"
		"ffffffff81000100 t helper_fn\n"
		"ffffffff81000200 D some_data\n"
		"ffffffff81000300 W weak_fn\n"
		"garbage line\n"
		"ffffffffc0001000 t mod_fn\t[mymod]\n";
	struct prec_symtab *st = NULL;
	const struct prec_sym *s;
	uint64_t off;

	T_EQ_INT(prec_symtab_from_kallsyms(text, sizeof(text) - 1, &st), 0);
	T_EQ_INT(prec_symtab_count(st), 4);
	/* Two global aliases: perf's choice, the one without leading underscores. */
	s = prec_symtab_lookup(st, 0xffffffff81000050, &off);
	T_OK(s && !strcmp(s->name, "startup_64") && off == 0x50);
	s = prec_symtab_lookup(st, 0xffffffff810002ff, &off);
	T_OK(s && !strcmp(s->name, "helper_fn") && off == 0x1ff);
	s = prec_symtab_lookup(st, 0xffffffffc0001000, &off);
	T_OK(s && !strcmp(s->name, "mod_fn") && off == 0);
	T_OK(prec_symtab_lookup(st, 0xffffffff80000000, NULL) == NULL);
	prec_symtab_free(st);
	T_EQ_INT(prec_symtab_from_kallsyms("nonsense\nmore\n", 14, &st), -PREC_E_FORMAT);
	T_OK(st == NULL);
	T_EQ_INT(prec_symtab_from_kallsyms("", 0, &st), 0);
	T_EQ_INT(prec_symtab_count(st), 0);
	T_OK(prec_symtab_lookup(st, 1, NULL) == NULL);
	prec_symtab_free(st);
}

/*
 * Aliases at one address: the name kept is perf's choice (choose_best_symbol):
 * a non-zero size, then not weak, then global, then fewer leading
 * underscores, then the longer name. Each group below differs in one rule.
 */
static const char alias_src[] =
	"	.text\n"
	"	.globl _start\n"
	"	.type _start,@function\n"
	"_start:\n"
	"	mov $60, %eax\n"
	"	syscall\n"
	"	.size _start, .-_start\n"
	/* two weak aliases of one size: the longer name (fstatat64 over fstatat) */
	"	.weak w_at\n	.type w_at,@function\n	.size w_at, 16\n"
	"	.weak w_at64\n	.type w_at64,@function\n	.size w_at64, 16\n"
	"	.p2align 4\n"
	"w_at:\nw_at64:\n	.fill 16, 1, 0x90\n"
	/* a global of size 0 and a weak one with a size: the size wins */
	"	.globl g_nosize\n	.type g_nosize,@function\n"
	"	.weak w_sized\n	.type w_sized,@function\n	.size w_sized, 16\n"
	"g_nosize:\nw_sized:\n	.fill 16, 1, 0x90\n"
	/* a local and a weak one: not weak wins, though local */
	"	.type l_local,@function\n	.size l_local, 16\n"
	"	.weak w_weak_long_name\n	.type w_weak_long_name,@function\n"
	"	.size w_weak_long_name, 16\n"
	"l_local:\nw_weak_long_name:\n	.fill 16, 1, 0x90\n"
	/* a global and a local one: global wins, though shorter */
	"	.type l_longer_local,@function\n	.size l_longer_local, 16\n"
	"	.globl g_g\n	.type g_g,@function\n	.size g_g, 16\n"
	"l_longer_local:\ng_g:\n	.fill 16, 1, 0x90\n"
	/* two globals: fewer leading underscores, though shorter */
	"	.globl __uu_longer\n	.type __uu_longer,@function\n	.size __uu_longer, 16\n"
	"	.globl _u\n	.type _u,@function\n	.size _u, 16\n"
	"__uu_longer:\n_u:\n	.fill 16, 1, 0x90\n"
	/* a function and an untyped label: the function */
	"	.globl label_longer\n"
	"	.globl fn\n	.type fn,@function\n	.size fn, 16\n"
	"label_longer:\nfn:\n	.fill 16, 1, 0x90\n";

static void alias_choice(void)
{
	static const char *const groups[][2] = {
		{ "w_at", "w_at64" },	      { "g_nosize", "w_sized" },
		{ "w_weak_long_name", "l_local" }, { "l_longer_local", "g_g" },
		{ "__uu_longer", "_u" },	      { "label_longer", "fn" },
	};
	static struct nsym nm[256];
	struct prec_symtab *st = NULL;
	char src[512], path[512], cmd[1400];
	size_t nn;
	FILE *f;

	snprintf(src, sizeof(src), "%s/alias.S", t_tmpdir());
	snprintf(path, sizeof(path), "%s/alias", t_tmpdir());
	f = fopen(src, "w");
	if (!T_OK(f))
		return;
	fputs(alias_src, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -nostdlib -static -no-pie -o %s %s", path, src);
	if (!T_OK(system(cmd) == 0))
		return;
	T_EQ_INT(prec_symtab_from_elf(path, &st), 0);
	if (!st)
		return;
	nn = nm_text(path, nm, 256);
	for (size_t g = 0; g < PREC_ARRAY_SIZE(groups); g++) {
		uint64_t a = 0, b = 1, off = 1;
		const struct prec_sym *s;

		/* nm places both names of a group at one address */
		for (size_t i = 0; i < nn; i++) {
			if (!strcmp(nm[i].name, groups[g][0]))
				a = nm[i].addr;
			if (!strcmp(nm[i].name, groups[g][1]))
				b = nm[i].addr;
		}
		if (!t_check(a == b, __FILE__, __LINE__, "%s and %s are not aliases", groups[g][0],
			     groups[g][1]))
			continue;
		s = prec_symtab_lookup(st, a, &off);
		t_check(s && !strcmp(s->name, groups[g][1]) && off == 0, __FILE__, __LINE__,
			"at %#" PRIx64 ": %s, expected %s", a, s ? s->name : "nothing", groups[g][1]);
	}
	prec_symtab_free(st);
}

/* The C library's file, or "" (the compiler knows where it is). */
static void libc_path(char *out, size_t n)
{
	char line[512] = "";
	FILE *f = cmd_out("cc -print-file-name=libc.so.6");

	out[0] = '\0';
	if (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '/')
			snprintf(out, n, "%s", line);
	}
	if (f)
		pclose(f);
}

struct dsym {
	uint64_t addr, size;
	char name[128];
	char bind[16];
	bool func;
};

static int dsym_cmp(const void *a, const void *b)
{
	const struct dsym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int lead_us(const char *s)
{
	int n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* perf's choose_best_symbol() over readelf's view of two aliases: <0 @a, >0 @b, 0 tie. */
static int better(const struct dsym *a, const struct dsym *b)
{
	bool aw = !strcmp(a->bind, "WEAK"), bw = !strcmp(b->bind, "WEAK");
	bool ag = !strcmp(a->bind, "GLOBAL"), bg = !strcmp(b->bind, "GLOBAL");
	size_t la = strlen(a->name), lb = strlen(b->name);

	if (a->func != b->func)
		return a->func ? -1 : 1;
	if (!a->size != !b->size)
		return a->size ? -1 : 1;
	if (aw != bw)
		return aw ? 1 : -1;
	if (ag != bg)
		return ag ? -1 : 1;
	if (lead_us(a->name) != lead_us(b->name))
		return lead_us(a->name) < lead_us(b->name) ? -1 : 1;
	if (la != lb)
		return la > lb ? -1 : 1;
	return 0;
}

/*
 * The C library (stripped: .dynsym only) against readelf: at every address
 * with aliases, the name kept is one perf would choose (fstatat64, not
 * fstatat), and every IRELATIVE PLT stub objdump shows as "*ABS*+0x..@plt"
 * is named after an IFUNC nm -D lists at the addend (memcpy@plt).
 */
static void libc_names(void)
{
	static struct dsym d[8192];
	static struct nsym plt[512], nm[8192];
	struct prec_symtab *st = NULL;
	char lib[512], line[512];
	size_t n = 0, np, nn = 0, i, groups = 0, irel = 0;
	FILE *f;

	libc_path(lib, sizeof(lib));
	if (!lib[0])
		t_skip("no libc.so.6 found by the compiler");
	T_EQ_INT(prec_symtab_from_elf(lib, &st), 0);
	if (!st)
		return;
	/* "Num: Value Size Type Bind Vis Ndx Name" of code symbols */
	f = cmd_out("readelf -sW --dyn-syms %s", lib);
	while (f && fgets(line, sizeof(line), f) && n < 8192) {
		char type[32], vis[32], ndx[32], name[120];
		unsigned long long v, sz;

		if (sscanf(line, " %*[0-9]: %llx %llu %31s %15s %31s %31s %119s", &v, &sz, type,
			   d[n].bind, vis, ndx, name) != 7)
			continue;
		if ((strcmp(type, "FUNC") && strcmp(type, "IFUNC")) || !strcmp(ndx, "UND") ||
		    !strcmp(ndx, "ABS") || !v)
			continue;
		name[strcspn(name, "@")] = '\0';
		snprintf(d[n].name, sizeof(d[n].name), "%s", name);
		d[n].addr = v;
		d[n].size = sz;
		d[n].func = true;
		n++;
	}
	if (f)
		pclose(f);
	T_OK(n > 1000);
	qsort(d, n, sizeof(*d), dsym_cmp);
	for (i = 0; i < n;) {
		size_t j = i, k, best = i;
		const struct prec_sym *s = prec_symtab_lookup(st, d[i].addr, NULL);
		bool ok = false;

		while (j < n && d[j].addr == d[i].addr)
			j++;
		for (k = i + 1; k < j; k++)
			if (better(&d[k], &d[best]) < 0)
				best = k;
		/* any name tied with the best is right */
		for (k = i; k < j; k++)
			if (!better(&d[k], &d[best]) && s && !strcmp(s->name, d[k].name))
				ok = true;
		if (j - i > 1)
			groups++;
		t_check(ok, __FILE__, __LINE__, "libc at %#" PRIx64 ": we have %s, perf's choice is %s",
			d[i].addr, s ? s->name : "nothing", d[best].name);
		i = j;
	}
	T_OK(groups > 50);
	/* fstatat and fstatat64: two weak aliases of one size */
	{
		const struct prec_sym *a = prec_symtab_find(st, "fstatat64");

		if (a)
			T_OK(prec_symtab_find(st, "fstatat") == NULL);
	}
	/* IRELATIVE stubs */
	f = cmd_out("nm -D --defined-only %s", lib);
	while (f && fgets(line, sizeof(line), f) && nn < 8192) {
		unsigned long long a;
		char t;

		if (sscanf(line, "%llx %c %127s", &a, &t, nm[nn].name) == 3) {
			nm[nn].name[strcspn(nm[nn].name, "@")] = '\0';
			nm[nn].addr = a;
			nm[nn].type = t;
			nn++;
		}
	}
	if (f)
		pclose(f);
	np = objdump_plt(lib, true, plt, 512);
	for (i = 0; i < np; i++) {
		const struct prec_sym *s = prec_symtab_lookup(st, plt[i].addr, NULL);

		irel += plt[i].name[0] == '*';
		t_check(s && s->addr == plt[i].addr && s->type == PREC_SYM_PLT &&
				plt_name_ok(lib, &plt[i], nm, nn, s->name),
			__FILE__, __LINE__, "libc: objdump %s at %#" PRIx64 ", we have %s",
			plt[i].name, plt[i].addr, s ? s->name : "nothing");
	}
	T_OK(irel >= 5);
	prec_symtab_free(st);
}

static void bad_files(void)
{
	struct prec_symtab *st = NULL;
	char path[512], cmd[1200];
	FILE *f;

	T_EQ_INT(prec_symtab_from_elf("/nonexistent/file", &st), -ENOENT);
	snprintf(path, sizeof(path), "%s/notelf", t_tmpdir());
	f = fopen(path, "w");
	fputs("this is not an ELF file at all, just some text\n", f);
	fclose(f);
	T_EQ_INT(prec_symtab_from_elf(path, &st), -PREC_E_FORMAT);
	T_OK(prec_elf_build_id(path, (uint8_t[20]){ 0 }, 20) < 0);
	T_EQ_INT(prec_symtab_from_elf_mem("xx", 2, &st), -PREC_E_FORMAT);
	/* Every prefix of a real ELF: an error or a table, never a crash. */
	if (compile("", path, sizeof(path))) {
		char cut[600];

		for (int k = 0; k < 40; k++) {
			long len = 64 + k * 397;

			snprintf(cut, sizeof(cut), "%s/cut", t_tmpdir());
			snprintf(cmd, sizeof(cmd), "head -c %ld %s > %s", len, path, cut);
			if (system(cmd))
				continue;
			if (prec_symtab_from_elf(cut, &st) == 0) {
				prec_symtab_lookup(st, 0x1000, NULL);
				prec_symtab_free(st);
			}
		}
	}
	prec_symtab_free(NULL);
}

/* perf's rule: equal bytes, the longer id may go on with zeros only. */
static void build_id_equal(void)
{
	static const uint8_t md5[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	uint8_t slot[20] = { 0 }, other[20];

	memcpy(slot, md5, sizeof(md5));
	memcpy(other, slot, sizeof(other));
	T_OK(prec_build_id_equal(md5, 16, md5, 16));
	T_OK(prec_build_id_equal(md5, 16, slot, 20));  /* zero-padded in a 20-byte slot */
	T_OK(prec_build_id_equal(slot, 20, md5, 16));
	other[18] = 1;                                 /* not zeros after the id */
	T_OK(!prec_build_id_equal(md5, 16, other, 20));
	other[18] = 0;
	other[3] ^= 0xff;                              /* a different id */
	T_OK(!prec_build_id_equal(md5, 16, other, 20));
	T_OK(!prec_build_id_equal(md5, 16, md5, 0));   /* no id is no match */
	T_OK(!prec_build_id_equal(md5, 15, md5 + 1, 15));
}

static const struct t_case cases[] = {
	T(plt_default),   T(plt_ibt),	       T(plt_bind_now),	 T(plt_none),
	T(static_nopie),  T(build_id_vs_readelf), T(off_to_vaddr), T(srcline_vs_addr2line),
	T(kallsyms),	  T(bad_files),	       T(alias_choice),	 T(libc_names),
	T(build_id_equal),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}

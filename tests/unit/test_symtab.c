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
#include "symtab.h"

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
	"int main(int argc, char **argv)\n"
	"{\n"
	"	char *p = malloc(16);\n"
	"	printf(\"%d\\n\", compute(argc));\n"
	"	puts(\"x\");\n"
	"	fp(\"y\");\n"
	"	free(p);\n"
	"	return atoi(argc > 1 ? argv[1] : \"0\");\n"
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
};

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
			n++;
		}
	}
	if (f)
		pclose(f);
	return n;
}

/* objdump's "<name@plt>:" labels. */
static size_t objdump_plt(const char *path, struct nsym *s, size_t max)
{
	char line[512];
	size_t n = 0;
	FILE *f = cmd_out("objdump -d %s", path);

	while (f && fgets(line, sizeof(line), f) && n < max) {
		unsigned long long a;

		size_t l;

		/* Stubs only: not objdump's "x@plt-0x10" (PLT0) or "*ABS*+0x..@plt". */
		if (sscanf(line, "%llx <%127[^>]>:", &a, s[n].name) == 2 &&
		    (l = strlen(s[n].name)) > 4 && !strcmp(s[n].name + l - 4, "@plt") &&
		    s[n].name[0] != '*') {
			s[n].addr = a;
			n++;
		}
	}
	if (f)
		pclose(f);
	return n;
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
	np = objdump_plt(path, plt, 256);
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
	/* Every PLT stub objdump names, we name the same, and no others. */
	for (i = 0; i < np; i++) {
		const struct prec_sym *s = prec_symtab_lookup(st, plt[i].addr, NULL);

		t_check(s && s->addr == plt[i].addr && !strcmp(s->name, plt[i].name) &&
				s->type == PREC_SYM_PLT,
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
	s = prec_symtab_lookup(st, 0xffffffff81000050, &off);
	T_OK(s && !strcmp(s->name, "_stext") && off == 0x50);
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

static const struct t_case cases[] = {
	T(plt_default),   T(plt_ibt),	       T(plt_bind_now),	 T(plt_none),
	T(static_nopie),  T(build_id_vs_readelf), T(off_to_vaddr), T(srcline_vs_addr2line),
	T(kallsyms),	  T(bad_files),
};

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}

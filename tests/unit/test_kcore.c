// SPDX-License-Identifier: MIT
/* --kcore: kernel text copied from an ELF core file, checked byte for byte. */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "record/kcore.h"
#include "tracefile/tfile.h"

#define SEG1 0xffffffff81000000ull
#define SEG2 0xffffffffc0000000ull

/* A minimal ELF64 core: two PT_LOAD segments of 64 KiB with a byte pattern. */
static void make_core(const char *path)
{
	FILE *f = fopen(path, "wb");
	Elf64_Ehdr eh;
	Elf64_Phdr ph[2];
	unsigned char *data = malloc(2 * 65536);
	size_t i;

	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_CORE;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof(eh);
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = 2;
	memset(ph, 0, sizeof(ph));
	for (i = 0; i < 2; i++) {
		ph[i].p_type = PT_LOAD;
		ph[i].p_offset = 4096 + i * 65536;
		ph[i].p_vaddr = i ? SEG2 : SEG1;
		ph[i].p_filesz = ph[i].p_memsz = 65536;
		ph[i].p_flags = PF_R | PF_X;
	}
	for (i = 0; i < 2 * 65536; i++)
		data[i] = (unsigned char)(i * 7 + (i >> 8));
	fwrite(&eh, sizeof(eh), 1, f);
	fwrite(ph, sizeof(ph), 1, f);
	fseek(f, 4096, SEEK_SET);
	fwrite(data, 2 * 65536, 1, f);
	fclose(f);
	free(data);
}

static unsigned char expect(uint64_t addr)
{
	size_t i = addr >= SEG2 ? 65536 + (addr - SEG2) : addr - SEG1;

	return (unsigned char)(i * 7 + (i >> 8));
}

static void copies_text_and_modules(void)
{
	char core[256], out[256];
	const char *ksyms = "ffffffff81000000 T startup_64\n"
			    "ffffffff81000100 T _stext\n"
			    "ffffffff81002100 T _etext\n"
			    "ffffffffc0000010 t mod_fn [mod]\n";
	const char *mods = "mod 4096 0 - Live 0xffffffffc0000800\n";
	struct prec_tfile_writer *w;
	struct prec_tfile_reader *r;
	struct prec_tfile_chunk c;
	struct prec_kcore_result res;
	uint64_t got_text = 0, got_mod = 0;
	size_t i;
	int bad = 0;

	snprintf(core, sizeof(core), "%s/kcore", t_tmpdir());
	snprintf(out, sizeof(out), "%s/k.data", t_tmpdir());
	make_core(core);
	T_EQ_INT(prec_tfile_writer_new(out, NULL, &w), 0);
	T_EQ_INT(prec_kcore_copy(w, core, ksyms, mods, 1 << 20, &res), 0);
	T_EQ_INT(res.ranges, 2);
	T_EQ_U64(res.bytes, 0x2000 + 4096);
	T_EQ_INT(prec_tfile_writer_close(w, NULL), 0);
	prec_tfile_writer_free(w);
	T_EQ_INT(prec_tfile_reader_new(out, NULL, &r, NULL), 0);
	while (prec_tfile_next(r, &c) > 0) {
		if (c.type != PREC_TFILE_KCORE)
			continue;
		for (i = 0; i < c.len; i++)
			bad += ((const unsigned char *)c.data)[i] != expect(c.arg + i);
		if (c.arg >= SEG1 + 0x100 && c.arg + c.len <= SEG1 + 0x2100)
			got_text += c.len;
		else if (c.arg >= SEG2 + 0x800 && c.arg + c.len <= SEG2 + 0x1800)
			got_mod += c.len;
	}
	prec_tfile_reader_free(r);
	T_EQ_INT(bad, 0);
	T_EQ_U64(got_text, 0x2000);
	T_EQ_U64(got_mod, 4096);
}

static void errors(void)
{
	char core[256], out[256];
	struct prec_tfile_writer *w;
	struct prec_kcore_result res;

	snprintf(core, sizeof(core), "%s/kcore", t_tmpdir());
	snprintf(out, sizeof(out), "%s/k.data", t_tmpdir());
	make_core(core);
	T_EQ_INT(prec_tfile_writer_new(out, NULL, &w), 0);
	/* No _stext in kallsyms: nothing to copy. */
	T_EQ_INT(prec_kcore_copy(w, core, "ffffffff81000000 T x\n", NULL, 1 << 20, &res), -ENOENT);
	/* Hidden addresses (kptr_restrict) read as zero. */
	T_EQ_INT(prec_kcore_copy(w, core, "0000000000000000 T _stext\n0000000000000000 T _etext\n",
				 NULL, 1 << 20, &res), -ENOENT);
	/* Not an ELF core. */
	T_EQ_INT(prec_kcore_copy(w, out, "ffffffff81000100 T _stext\nffffffff81000200 T _etext\n",
				 NULL, 1 << 20, &res), -PREC_E_FORMAT);
	/* The size cap holds. */
	T_EQ_INT(prec_kcore_copy(w, core, "ffffffff81000000 T _stext\nffffffff81010000 T _etext\n",
				 NULL, 4096, &res), -EFBIG);
	prec_tfile_writer_free(w);
}

static const struct t_case cases[] = { T(copies_text_and_modules), T(errors) };

int main(int argc, char **argv)
{
	return t_main(argc, argv, cases, T_N(cases));
}

// SPDX-License-Identifier: MIT
/* The whole-system software tracer, host side: see emusys.h. */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/symtab.h"
#include "base/util.h"
#include "record/emurun.h"
#include "record/emusys.h"
#include "record/emusys_mb.h"

#define RAM_MB 256
#define MAX_FILES 64

struct sysrun {
	const struct prec_emusys_config *cfg;
	char dir[PATH_MAX - 64]; /* the run's work directory */
	char ram[PATH_MAX];    /* the file backing guest RAM */
	char initrd[PATH_MAX];
	char kernel[PATH_MAX];
	char append[256];
	char ramobj[PATH_MAX + 96];
	char out[64];
	char files[MAX_FILES][PATH_MAX]; /* host files copied into the guest */
	size_t nfiles;
	/* each uprobe (in the triggers' order): its file, an index in @files */
	size_t ufile[PREC_EMUSYS_MB_UPROBES];
	size_t nuprobes;
};

/* ---- the initramfs (cpio "newc", as the kernel's init/initramfs.c reads it) ---- */

static int cpio_entry(FILE *f, const char *name, unsigned mode, const void *data, size_t size)
{
	static unsigned ino = 1;
	size_t nlen = strlen(name) + 1;
	static const char zero[4];

	fprintf(f, "070701%08X%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X%08zX%08X", ino++, mode, 0,
		0, 1, 0, size, 0, 0, 0, 0, nlen, 0);
	fwrite(name, 1, nlen, f);
	fwrite(zero, 1, (4 - (110 + nlen) % 4) % 4, f);
	if (size)
		fwrite(data, 1, size, f);
	fwrite(zero, 1, (4 - size % 4) % 4, f);
	return ferror(f) ? -EIO : 0;
}

/* The directories leading to @path (without its leading '/'), once each. */
static void cpio_dirs(FILE *f, const char *path, struct prec_buf *seen)
{
	char d[PATH_MAX];

	for (const char *s = strchr(path, '/'); s; s = strchr(s + 1, '/')) {
		snprintf(d, sizeof(d), "%.*s", (int)(s - path), path);
		if (seen->data && strstr(seen->data, d) && strstr(seen->data, d)[strlen(d)] == '\n')
			continue;
		prec_buf_printf(seen, "\n%s\n", d);
		cpio_entry(f, d, 040755, NULL, 0);
	}
}

/* Reads @n bytes at @off of @fd; 0 or -errno. */
static int pread_full(int fd, void *buf, size_t n, uint64_t off)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		got += (size_t)r;
	}
	return 0;
}

static int cpio_file(FILE *f, const char *host, const char *guest, struct prec_buf *seen)
{
	int fd = open(host, O_RDONLY | O_CLOEXEC), r;
	struct stat st;
	void *data = NULL;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	data = malloc((size_t)st.st_size + 1);
	r = data ? pread_full(fd, data, (size_t)st.st_size, 0) : -ENOMEM;
	close(fd);
	if (!r) {
		cpio_dirs(f, guest, seen);
		r = cpio_entry(f, guest, 0100000 | (st.st_mode & 0755), data, (size_t)st.st_size);
	}
	free(data);
	return r;
}

/* ---- the files the workload needs ---- */

static int have(const struct sysrun *s, const char *path)
{
	for (size_t i = 0; i < s->nfiles; i++)
		if (!strcmp(s->files[i], path))
			return 1;
	return 0;
}

static int add_file(struct sysrun *s, const char *path)
{
	if (have(s, path))
		return 0;
	if (s->nfiles >= MAX_FILES)
		return -E2BIG;
	snprintf(s->files[s->nfiles++], PATH_MAX, "%s", path);
	return 1;
}

/* A DT_NEEDED name, where the dynamic linker's default search finds it. */
static int find_lib(const char *name, char *out, size_t size)
{
	static const char *const dirs[] = { "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
					    "/lib64", "/usr/lib64", "/lib", "/usr/lib" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(out, size, "%s/%s", dirs[i], name);
		if (!access(out, R_OK))
			return 0;
	}
	return -ENOENT;
}

/* Adds @path's interpreter and needed libraries (and theirs) to the list. */
static int add_deps(struct sysrun *s, const char *path, struct prec_diag *diag)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;
	Elf *e;
	size_t n;
	Elf_Scn *scn = NULL;
	char lib[PATH_MAX];

	if (fd < 0)
		return prec_diag_set(diag, -errno, -1, "cannot read %s: %s", path, strerror(errno));
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && elf_getphdrnum(e, &n) == 0) {
		for (size_t i = 0; i < n && r >= 0; i++) {
			GElf_Phdr ph;
			char *raw;
			size_t rn;

			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_INTERP)
				continue;
			raw = elf_rawfile(e, &rn);
			if (raw && ph.p_offset < rn && ph.p_filesz < PATH_MAX &&
			    ph.p_filesz <= rn - ph.p_offset)
				snprintf(lib, sizeof(lib), "%.*s", (int)ph.p_filesz, raw + ph.p_offset);
			if (add_file(s, lib) > 0)
				r = add_deps(s, lib, diag);
		}
	}
	while (e && r >= 0 && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / (sh.sh_entsize ? sh.sh_entsize : 16); i++) {
			GElf_Dyn dyn;
			const char *name;

			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag != DT_NEEDED)
				continue;
			name = elf_strptr(e, sh.sh_link, dyn.d_un.d_val);
			if (!name || find_lib(name, lib, sizeof(lib)) < 0) {
				r = prec_diag_set(diag, -ENOENT, -1, "%s needs %s, which is not found",
						  path, name ? name : "?");
				break;
			}
			if (add_file(s, lib) > 0)
				r = add_deps(s, lib, diag);
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return r < 0 ? r : 0;
}

/*
 * The uprobes' files among those of the guest (the same file by device and
 * inode, whichever name the probe gave it), added if the workload does not
 * need them; and /ptrec/uprobes, "OFFSET PATH" for each, where the guest's
 * first process finds their pages (emusys_mb.h).
 */
static int uprobe_files(struct sysrun *s, FILE *f, struct prec_diag *diag)
{
	const struct prec_emusys_config *cfg = s->cfg;
	struct prec_buf list = { 0 };
	char real[PATH_MAX];
	int r = 0;

	s->nuprobes = 0;
	for (size_t i = 0; i < cfg->ntriggers && r >= 0; i++) {
		const struct prec_emusys_trigger *t = &cfg->triggers[i];
		struct stat want, st;
		size_t k;

		if (!t->upath)
			continue;
		if (s->nuprobes >= PREC_EMUSYS_MB_UPROBES || stat(t->upath, &want) ||
		    !realpath(t->upath, real)) {
			r = prec_diag_set(diag, s->nuprobes >= PREC_EMUSYS_MB_UPROBES ? -E2BIG : -errno,
					  -1, "uprobe on %s: %s", t->upath,
					  s->nuprobes >= PREC_EMUSYS_MB_UPROBES ? "too many uprobes" :
					  strerror(errno));
			break;
		}
		for (k = 0; k < s->nfiles; k++)
			if (!stat(s->files[k], &st) && st.st_dev == want.st_dev &&
			    st.st_ino == want.st_ino)
				break;
		if (k == s->nfiles && add_file(s, real) < 0) {
			r = prec_diag_set(diag, -E2BIG, -1, "too many files for the guest");
			break;
		}
		s->ufile[s->nuprobes++] = k;
		prec_buf_printf(&list, "%" PRIx64 " %s\n", t->uoff, s->files[k]);
	}
	if (r >= 0 && s->nuprobes)
		r = cpio_entry(f, "ptrec/uprobes", 0100644, list.data, list.len);
	prec_buf_free(&list);
	return r;
}

static int write_initrd(struct sysrun *s, const char *path, struct prec_diag *diag)
{
	struct prec_buf argv = { 0 }, seen = { 0 };
	char prog[PATH_MAX];
	FILE *f;
	int r;

	/* The program sits at its absolute host path, where the recorder finds its image. */
	if (!realpath(path, prog))
		return prec_diag_set(diag, -errno, -1, "cannot resolve %s: %s", path,
				     strerror(errno));
	s->nfiles = 0;
	add_file(s, prog);
	r = add_deps(s, prog, diag);
	if (r < 0)
		return r;
	snprintf(s->initrd, sizeof(s->initrd), "%s/initrd.cpio", s->dir);
	f = fopen(s->initrd, "we");
	if (!f)
		return prec_diag_set(diag, -errno, -1, "cannot create %s: %s", s->initrd,
				     strerror(errno));
	r = cpio_file(f, s->cfg->guest_init, "init", &seen);
	for (char *const *a = s->cfg->pt->argv; *a && r >= 0; a++)
		prec_buf_append(&argv, a == s->cfg->pt->argv ? prog : *a,
				strlen(a == s->cfg->pt->argv ? prog : *a) + 1);
	if (r >= 0) {
		cpio_entry(f, "ptrec", 040755, NULL, 0);
		r = cpio_entry(f, "ptrec/argv", 0100644, argv.data, argv.len);
	}
	if (r >= 0)
		r = uprobe_files(s, f, diag);
	for (size_t i = 0; i < s->nfiles && r >= 0; i++)
		r = cpio_file(f, s->files[i], s->files[i] + 1, &seen);
	if (r >= 0)
		r = cpio_entry(f, "TRAILER!!!", 0, NULL, 0);
	if (fclose(f) && r >= 0)
		r = -errno;
	prec_buf_free(&argv);
	prec_buf_free(&seen);
	return r < 0 ? prec_diag_set(diag, r, -1, "cannot write the guest's initramfs: %s",
				     prec_strerror(r)) : 0;
}

/* ---- uprobes: a file offset in an executable segment ---- */

int prec_emusys_ucheck(const char *path, uint64_t off, struct prec_diag *diag)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = -ENOEXEC;
	size_t n;
	Elf *e;

	if (fd < 0)
		return prec_diag_set(diag, -errno, -1, "cannot read %s: %s", path, strerror(errno));
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	/* Any ELF file: where it is mapped is found in the guest (find_uprobes()). */
	if (e && elf_kind(e) == ELF_K_ELF && !elf_getphdrnum(e, &n)) {
		for (size_t i = 0; i < n && r < 0; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    (ph.p_flags & PF_X) && off >= ph.p_offset &&
			    off - ph.p_offset < ph.p_filesz)
				r = 0;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	if (r < 0)
		prec_diag_set(diag, r, -1, "%s: a uprobe in the guest needs an ELF file and an "
			      "offset (0x%" PRIx64 ") in one of its executable segments", path, off);
	return r;
}

/* ---- the guest kernel ---- */

static int find_kernel(char *out, size_t size, struct prec_diag *diag)
{
	const char *env = getenv("PTREC_GUEST_KERNEL");
	struct dirent *de;
	DIR *d;

	out[0] = 0;
	if (env && *env) {
		snprintf(out, size, "%s", env);
	} else if ((d = opendir("/boot"))) {
		char best[256] = "";

		while ((de = readdir(d)))
			if (!strncmp(de->d_name, "vmlinuz-", 8) &&
			    strverscmp(de->d_name, best) > 0)
				snprintf(best, sizeof(best), "%s", de->d_name);
		closedir(d);
		if (best[0])
			snprintf(out, size, "/boot/%s", best);
	}
	if (!out[0] || access(out, R_OK)) {
		prec_diag_set(diag, -ENOENT, -1, "no guest kernel: %s",
			      out[0] ? "it cannot be read" : "/boot has no vmlinuz-*");
		prec_diag_hint(diag, "install Debian's kernel (make deps-system: linux-image-amd64), "
				     "or name one with PTREC_GUEST_KERNEL");
		return -ENOENT;
	}
	return 0;
}

/* ---- QEMU ---- */

static int sys_check(const char *prog, char *path, size_t size, char *interp, size_t isize,
		     struct prec_diag *diag)
{
	interp[0] = 0;
	(void)isize;
	return prec_emu_check_program(prog, path, size, diag);
}

static int sys_prepare(const void *c, struct prec_buf *b, struct prec_diag *diag)
{
	const struct sysrun *s = c;
	const struct prec_emusys_config *cfg = s->cfg;
	const struct prec_emu_config *pt = cfg->pt;
	const char *comm = strrchr(pt->argv[0], '/');
	uint64_t mark = 0;
	struct prec_symtab *st = NULL;
	const struct prec_sym *sym;
	unsigned slot = 0; /* the uprobes' order in /ptrec/uprobes (uprobe_files()) */

	if (prec_symtab_from_elf(cfg->guest_init, &st) == 0 &&
	    (sym = prec_symtab_find(st, "ptrec_guest_mark")))
		mark = sym->addr;
	prec_symtab_free(st);
	if (!mark)
		return prec_diag_set(diag, -ENOENT, -1, "%s has no ptrec_guest_mark symbol",
				     cfg->guest_init);
	prec_buf_printf(b, "ram %s\nram_size %llu\nmark 0x%" PRIx64 "\ncomm %.15s\n", s->ram,
			(unsigned long long)RAM_MB << 20, mark, comm ? comm + 1 : pt->argv[0]);
	prec_buf_printf(b, "user %d\nkernel %d\nstart_paused %d\ntruth %d\nper_cpu %d\n", cfg->user,
			cfg->kernel, pt->start_paused, !!pt->truth_path, cfg->per_cpu);
	prec_buf_printf(b, "tsc %d\nmtc %d\ncyc %d\nnoretcomp %d\nbranch %d\n", pt->tsc, pt->mtc,
			pt->cyc, pt->noretcomp, !pt->no_branch);
	prec_buf_printf(b, "mtc_period %u\ncyc_thresh %u\npsb_period %u\n", pt->mtc_period,
			pt->cyc_thresh, pt->psb_period);
	for (size_t i = 0; i < cfg->ntriggers; i++) {
		const struct prec_emusys_trigger *t = &cfg->triggers[i];

		const char *act = t->action == PREC_EMU_ACT_PAUSE ? "pause" :
				  t->action == PREC_EMU_ACT_RESUME ? "resume" : "none";

		if (t->period) {
			prec_buf_printf(b, "trigger %d %s insns %" PRIu64 " %d %d\n", t->event_index,
					act, t->period, t->user, t->kernel);
			continue;
		}
		if (t->upath) {
			prec_buf_printf(b, "trigger %d %s %s %u\n", t->event_index, act,
					t->ret ? "uret" : "uentry", slot++);
			continue;
		}
		if (!t->func || strpbrk(t->func, " \n"))
			return prec_diag_set(diag, -EINVAL, -1, "bad kernel function name");
		prec_buf_printf(b, "trigger %d %s %s %s\n", t->event_index, act,
				t->ret ? "kret" : "kentry", t->func);
	}
	return 0;
}

static int sys_command(const void *c, const char *qemu, const char *popt, const char *path,
		       char **args, size_t max)
{
	const struct sysrun *s = c;
	const char *const a[] = {
		qemu, "-m", "256", "-smp", "1", "-no-reboot", "-nodefaults", "-display", "none",
		"-monitor", "none", "-net", "none", "-object", s->ramobj, "-machine",
		"pc,memory-backend=ram0", "-kernel", s->kernel, "-initrd", s->initrd, "-append",
		s->append, "-serial", "null", "-chardev", s->out, "-serial", "chardev:wl",
		"-plugin", popt,
	};
	size_t n = sizeof(a) / sizeof(a[0]);

	(void)path;
	if (n > max)
		return -E2BIG;
	memcpy(args, a, sizeof(a));
	args[n] = NULL;
	return 0;
}

static const struct prec_emurun_tracer tracer = {
	.qemu_default = "qemu-system-x86_64",
	.plugin_file = "ptrec-emu-sys.so",
	.config_name = "ptrec-emu-sys-config",
	.check_program = sys_check,
	.prepare = sys_prepare,
	.command = sys_command,
	.qemu_hint = "the whole-system tracer needs qemu-system-x86_64: make deps-system "
		     "(apt-get install qemu-system-x86)",
};

/* ---- while it runs: a signal for the workload ---- */

void prec_emusys_ctl_init(struct prec_emusys_ctl *ctl)
{
	pthread_mutex_init(&ctl->lock, NULL);
	ctl->ram_fd = -1;
}

int prec_emusys_signal(struct prec_emusys_ctl *ctl, int sig)
{
	uint32_t v = (uint32_t)sig, old = 0;
	int r = -ESRCH;
	const off_t off = (off_t)(PREC_EMUSYS_MB_PHYS + offsetof(struct prec_emusys_mb, sig));

	pthread_mutex_lock(&ctl->lock);
	if (ctl->ram_fd >= 0) {
		/* The first one stays: the guest may have sent it already. */
		r = pread_full(ctl->ram_fd, &old, sizeof(old), (uint64_t)off);
		if (!r && !old && pwrite(ctl->ram_fd, &v, sizeof(v), off) != sizeof(v))
			r = -errno;
	}
	pthread_mutex_unlock(&ctl->lock);
	return r;
}

/* Opens (@on) or closes the way to the guest. */
static void ctl_open(struct sysrun *s, bool on)
{
	struct prec_emusys_ctl *ctl = s->cfg->ctl;

	if (!ctl)
		return;
	pthread_mutex_lock(&ctl->lock);
	if (on && ctl->ram_fd < 0)
		ctl->ram_fd = open(s->ram, O_RDWR | O_CLOEXEC);
	if (!on && ctl->ram_fd >= 0) {
		close(ctl->ram_fd);
		ctl->ram_fd = -1;
	}
	pthread_mutex_unlock(&ctl->lock);
}

/* ---- after the run: the mailbox and the kernel text ---- */

/* @len bytes (at most @max) of the mailbox at @off, as a string. */
static char *ram_text(int fd, uint64_t off, uint32_t len, uint32_t max)
{
	char *t;

	len = len <= max ? len : 0;
	t = malloc((size_t)len + 1);
	if (!t)
		return NULL;
	if (pread_full(fd, t, len, PREC_EMUSYS_MB_PHYS + off)) {
		free(t);
		return NULL;
	}
	t[len] = 0;
	return t;
}

static uint64_t ksym(const char *ksyms, const char *name)
{
	size_t nl = strlen(name);

	for (const char *l = ksyms; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (strlen(l) > 19 + nl && !memcmp(l + 19, name, nl) &&
		    (l[19 + nl] == '\n' || l[19 + nl] == 0))
			return strtoull(l, NULL, 16);
	return 0;
}

static int read_back(struct sysrun *s, struct prec_emusys_result *res, struct prec_diag *diag)
{
	int fd = open(s->ram, O_RDONLY | O_CLOEXEC), r;
	uint64_t size = (uint64_t)RAM_MB << 20, st, et;
	struct prec_emusys_mb mb;

	if (fd < 0)
		return prec_diag_set(diag, -errno, -1, "cannot read the guest's RAM: %s",
				     strerror(errno));
	r = pread_full(fd, &mb, sizeof(mb), PREC_EMUSYS_MB_PHYS);
	if (r || mb.done != PREC_EMUSYS_MB_DONE) {
		close(fd);
		return prec_diag_set(diag, -EPROTO, -1, "the guest did not run the workload to its "
							"end");
	}
	res->wstatus = (int)mb.status;
	res->pid = mb.pid;
	res->ksyms = ram_text(fd, PREC_EMUSYS_MB_KSYMS, mb.ksyms_len, PREC_EMUSYS_MB_KSYMS_MAX);
	res->ksyms_len = res->ksyms ? strlen(res->ksyms) : 0;
	res->maps = ram_text(fd, PREC_EMUSYS_MB_MAPS, mb.maps_len, PREC_EMUSYS_MB_MAPS_MAX);
	if (mb.vdso_len && mb.vdso_len <= PREC_EMUSYS_MB_VDSO_MAX &&
	    (res->vdso = malloc(mb.vdso_len))) {
		if (pread_full(fd, res->vdso, mb.vdso_len, PREC_EMUSYS_MB_PHYS + PREC_EMUSYS_MB_VDSO)) {
			free(res->vdso);
			res->vdso = NULL;
		} else {
			res->vdso_len = mb.vdso_len;
		}
	}
	st = res->ksyms ? ksym(res->ksyms, "_stext") : 0;
	et = res->ksyms ? ksym(res->ksyms, "_etext") : 0;
	/* nokaslr, phys_base 0: the image lies at physical (VA - __START_KERNEL_map). */
	if (st >= 0xffffffff80000000ull && et > st && et - 0xffffffff80000000ull < size) {
		res->ktext_len = (size_t)(et - st);
		res->ktext = malloc(res->ktext_len);
		if (!res->ktext || pread_full(fd, res->ktext, res->ktext_len,
					      st - 0xffffffff80000000ull)) {
			free(res->ktext);
			res->ktext = NULL;
			res->ktext_len = 0;
		}
		res->ktext_addr = st;
	}
	close(fd);
	return res->ksyms && res->maps ? 0 : prec_diag_set(diag, -ENOMEM, -1, "out of memory");
}

/* Whether a line of @maps maps @path's offset @off executable. */
static bool maps_exec(const char *maps, const char *path, uint64_t off)
{
	for (const char *l = maps; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		unsigned long long lo, hi, pgoff;
		char perms[8];
		int at = 0;
		size_t plen = strlen(path);

		if (sscanf(l, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &pgoff, &at) != 4 ||
		    !at || perms[2] != 'x' || strncmp(l + at, path, plen) ||
		    (l[at + plen] != '\n' && l[at + plen]))
			continue;
		if (off >= pgoff && off - pgoff < hi - lo)
			return true;
	}
	return false;
}

/*
 * The uprobes whose file no process of the workload had mapped executable
 * over the probed offset at its exit (the guest's maps): they could not
 * fire there (a mapping undone before the exit is not seen).
 */
static void note_unmapped(const struct sysrun *s, const struct prec_emusys_result *res)
{
	const struct prec_emusys_config *cfg = s->cfg;
	size_t slot = 0, len = 0;

	if (!cfg->unmapped || !cfg->unmapped_size)
		return;
	cfg->unmapped[0] = 0;
	for (size_t i = 0; i < cfg->ntriggers && slot < s->nuprobes; i++) {
		const struct prec_emusys_trigger *t = &cfg->triggers[i];
		int n;

		if (!t->upath)
			continue;
		if (maps_exec(res->maps, s->files[s->ufile[slot++]], t->uoff) ||
		    len >= cfg->unmapped_size - 1)
			continue;
		n = snprintf(cfg->unmapped + len, cfg->unmapped_size - len, "%s%s+0x%" PRIx64,
			     len ? ", " : "uprobe never mapped (no process of the workload had "
			     "it executable at its exit): ", t->upath, t->uoff);
		len = n < 0 ? len : PREC_MIN(len + (size_t)n, cfg->unmapped_size - 1);
	}
}

static int setup(struct sysrun *s, char *prog, size_t psize, struct prec_diag *diag)
{
	const char *tmp = getenv("TMPDIR");
	int fd, r;

	r = find_kernel(s->kernel, sizeof(s->kernel), diag);
	if (r < 0)
		return r;
	if (access(s->cfg->guest_init, R_OK))
		return prec_diag_set(diag, -ENOENT, -1, "cannot find the guest init %s",
				     s->cfg->guest_init);
	r = prec_emu_check_program(s->cfg->pt->argv[0], prog, psize, diag);
	if (r < 0)
		return r;
	snprintf(s->dir, sizeof(s->dir), "%s/ptrec-sys-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(s->dir))
		return prec_diag_set(diag, -errno, -1, "cannot make a work directory: %s",
				     strerror(errno));
	snprintf(s->ram, sizeof(s->ram), "%s/ram", s->dir);
	fd = open(s->ram, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)RAM_MB << 20) < 0) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		return prec_diag_set(diag, r, -1, "cannot make the guest's RAM file: %s",
				     strerror(-r));
	}
	close(fd);
	snprintf(s->ramobj, sizeof(s->ramobj),
		 "memory-backend-file,id=ram0,size=%dM,mem-path=%s,share=on", RAM_MB, s->ram);
	snprintf(s->append, sizeof(s->append),
		 "console=ttyS0 nokaslr mitigations=off quiet loglevel=0 panic=-1 "
		 "memmap=%uM$0x%llx", PREC_EMUSYS_MB_SIZE >> 20,
		 (unsigned long long)PREC_EMUSYS_MB_PHYS);
	snprintf(s->out, sizeof(s->out), "file,id=wl,path=/proc/%d/fd/1,append=on", (int)getpid());
	return write_initrd(s, prog, diag);
}

int prec_emusys_run(const struct prec_emusys_config *cfg, const struct prec_emu_ops *ops,
		    struct prec_emusys_result *res, struct prec_diag *diag)
{
	struct sysrun *s = calloc(1, sizeof(*s));
	struct prec_emurun run = { .tracer = &tracer, .ops = ops };
	char prog[PATH_MAX];
	int r, wstatus = 0;

	memset(res, 0, sizeof(*res));
	if (!s)
		return prec_diag_set(diag, -ENOMEM, -1, "out of memory");
	s->cfg = cfg;
	run.cfg = s;
	r = setup(s, prog, sizeof(prog), diag);
	if (r == 0) {
		run.qemu = cfg->pt->qemu;
		run.plugin = cfg->pt->plugin;
		run.truth_path = cfg->pt->truth_path;
		run.start_paused = cfg->pt->start_paused;
		run.argv = cfg->pt->argv;
		run.insns = cfg->pt->insns;
		ctl_open(s, true);
		r = prec_emurun_run(&run, &wstatus, diag);
		ctl_open(s, false);
	}
	if (r == 0)
		r = read_back(s, res, diag);
	if (r == 0)
		note_unmapped(s, res);
	if (s->dir[0]) {
		unlink(s->ram);
		unlink(s->initrd);
		rmdir(s->dir);
	}
	free(s);
	return r;
}

void prec_emusys_result_free(struct prec_emusys_result *res)
{
	free(res->ksyms);
	free(res->maps);
	free(res->ktext);
	free(res->vdso);
	memset(res, 0, sizeof(*res));
}

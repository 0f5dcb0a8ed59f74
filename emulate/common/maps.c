// SPDX-License-Identifier: MIT
/* The guest's memory and executable mappings: see maps.h. */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "maps.h"
#include "tracer.h"

struct probe {
	uint64_t vaddr;
	int trig;
};

static int64_t g_base; /* host address = guest address + g_base */
static int g_base_known;
static struct probe g_probes[EMU_MAX_PROBES];
static int g_nprobes;

void emu_guest_base(uint64_t host, uint64_t guest)
{
	if (g_base_known)
		return;
	g_base = (int64_t)(host - guest);
	g_base_known = 1;
}

void *emu_g2h(uint64_t guest)
{
	return (void *)(uintptr_t)(guest + (uint64_t)g_base);
}

int emu_guest_read(uint64_t guest, void *dst, size_t n)
{
	struct iovec l = { dst, n }, r = { emu_g2h(guest), n };

	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)n ? 0 : -1;
}

int emu_guest_str(uint64_t guest, char *dst, size_t size)
{
	size_t i;

	for (i = 0; i + 1 < size; i++) {
		if (emu_guest_read(guest + i, dst + i, 1) < 0)
			return -1;
		if (!dst[i])
			return 0;
	}
	dst[i] = 0;
	return -1;
}

int emu_have_probes(void)
{
	return g_nprobes > 0;
}

int emu_probes_at(uint64_t va, int *trig, int max)
{
	int i, n = 0;

	for (i = 0; i < g_nprobes; i++) {
		if (g_probes[i].vaddr != va)
			continue;
		if (n < max)
			trig[n] = g_probes[i].trig;
		n++;
	}
	return n;
}

static void add_probes_for(const struct stat *st, uint64_t start, uint64_t len, uint64_t pgoff)
{
	int i;

	pthread_mutex_lock(&emu_lock);
	for (i = 0; i < emu_cfg.ntrig; i++) {
		struct emu_trig *tr = &emu_cfg.trig[i];
		uint64_t off = (uint64_t)tr->arg;

		if ((tr->kind != EMU_TK_UPROBE && tr->kind != EMU_TK_URETPROBE) || !tr->have_ino ||
		    tr->dev != st->st_dev || tr->ino != st->st_ino)
			continue;
		if (off < pgoff || off >= pgoff + len || g_nprobes >= EMU_MAX_PROBES)
			continue;
		g_probes[g_nprobes].vaddr = start + off - pgoff;
		g_probes[g_nprobes].trig = i;
		g_nprobes++;
	}
	pthread_mutex_unlock(&emu_lock);
}

/* The ranges of the address filters: [start, end), 0-0 until mapped. */
static uint64_t g_filt_start[EMU_MAX_FILT], g_filt_end[EMU_MAX_FILT];

int emu_filtering(void)
{
	return emu_cfg.nfilt > 0;
}

int emu_filter_in(uint64_t va)
{
	int i;

	for (i = 0; i < emu_cfg.nfilt; i++)
		if (va >= __atomic_load_n(&g_filt_start[i], __ATOMIC_RELAXED) &&
		    va < __atomic_load_n(&g_filt_end[i], __ATOMIC_RELAXED))
			return 1;
	return 0;
}

/* perf_addr_filter_vma_adjust(): a mapping of a filter's file sets its range. */
static void add_filters_for(const struct stat *st, uint64_t start, uint64_t len, uint64_t pgoff)
{
	int i;

	pthread_mutex_lock(&emu_lock);
	for (i = 0; i < emu_cfg.nfilt; i++) {
		const struct emu_filt *f = &emu_cfg.filt[i];
		uint64_t lo, hi;

		if (!f->have_ino || f->dev != st->st_dev || f->ino != st->st_ino ||
		    f->off >= pgoff + len || f->off + f->size <= pgoff)
			continue;
		lo = f->off < pgoff ? start : start + (f->off - pgoff);
		hi = f->off + f->size > pgoff + len ? start + len : start + (f->off + f->size - pgoff);
		/* The end first: a reader never sees a range larger than either. */
		__atomic_store_n(&g_filt_end[i], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&g_filt_start[i], lo, __ATOMIC_RELAXED);
		__atomic_store_n(&g_filt_end[i], hi, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&emu_lock);
}

void emu_new_exec_map(int tid, int fd, const char *path, uint64_t start, uint64_t len,
		      uint64_t pgoff, uint32_t prot, uint32_t flags)
{
	struct stat st;
	uint8_t id[20];
	size_t idn;

	if (fstat(fd, &st) < 0)
		return;
	idn = emu_build_id(fd, id);
	emu_sb_mmap2(tid, path, &st, id, idn, start, len, pgoff, prot, flags);
	add_probes_for(&st, start, len, pgoff);
	add_filters_for(&st, start, len, pgoff);
	if (emu_arch.exec_mapped)
		emu_arch.exec_mapped(start, len);
}

/*
 * The main binary and its interpreter are mapped by QEMU's loader, not by
 * guest syscalls: find their load address in QEMU's own /proc/self/maps
 * (host address = guest address + g_base) and take the executable
 * segments from their program headers.
 */
static void map_loaded_elf(int tid, const char *path)
{
	char line[4352];
	FILE *f;
	int fd;
	struct stat st;
	uint64_t gbase = 0;
	int found = 0;
	Elf64_Ehdr eh;
	uint64_t first_vaddr = UINT64_MAX;
	int i;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phnum > 256)
		goto out;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		goto out;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off, ino;
		unsigned maj, min;
		char perm[8];

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &lo, &hi, perm, &off, &maj, &min,
			   &ino) != 7)
			continue;
		if (ino != st.st_ino || maj != (unsigned)major(st.st_dev) ||
		    min != (unsigned)minor(st.st_dev) || off)
			continue;
		gbase = lo - (uint64_t)g_base;
		found = 1;
		break;
	}
	fclose(f);
	if (!found)
		goto out;
	for (i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) != sizeof(ph))
			goto out;
		if (ph.p_type == PT_LOAD && ph.p_vaddr < first_vaddr)
			first_vaddr = ph.p_vaddr;
	}
	for (i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		uint64_t bias, lo, hi;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) != sizeof(ph))
			goto out;
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		bias = gbase - (first_vaddr & ~0xfffull);
		lo = bias + (ph.p_vaddr & ~0xfffull);
		hi = (bias + ph.p_vaddr + ph.p_memsz + 0xfff) & ~0xfffull;
		emu_new_exec_map(tid, fd, path, lo, hi - lo, ph.p_offset & ~0xfffull,
				 PROT_READ | PROT_EXEC, MAP_PRIVATE);
	}
out:
	close(fd);
}

static void read_interp(const char *path, char *out, size_t size)
{
	Elf64_Ehdr eh;
	int fd, i;

	out[0] = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (pread(fd, &eh, sizeof(eh), 0) == sizeof(eh) && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum <= 256) {
		for (i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;

			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (uint64_t)i * sizeof(ph))) !=
			    sizeof(ph))
				break;
			if (ph.p_type == PT_INTERP && ph.p_filesz < size) {
				if (pread(fd, out, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz)
					out[ph.p_filesz] = 0;
				else
					out[0] = 0;
				break;
			}
		}
	}
	close(fd);
}

void emu_scan_initial_maps(int tid)
{
	char interp[4096], abs[4096];
	const char *bin = qemu_plugin_path_to_binary();

	if (!bin)
		return;
	/* The kernel names mappings by absolute path; QEMU keeps the path as given. */
	if (realpath(bin, abs))
		bin = abs;
	map_loaded_elf(tid, bin);
	read_interp(bin, interp, sizeof(interp));
	if (interp[0])
		map_loaded_elf(tid, interp);
}

// SPDX-License-Identifier: MIT
/*
 * Guest memory and the guest kernel's layout for the whole-system tracer:
 * see sys.h. The kernel runs with nokaslr: its image is mapped at
 * __START_KERNEL_map + phys_base + physical address, and RAM at
 * page_offset_base + physical address (the direct map); both bases are read
 * from the kernel's own variables (arch/x86/include/asm/page_64.h:
 * __phys_addr_nodebug()).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/sideband.h"
#include "record/emusys_mb.h"
#include "sys.h"

#define START_KERNEL_MAP 0xffffffff80000000ull

static const uint8_t *ram;
static uint64_t phys_base, page_offset;
static uint64_t current_task_off, per_cpu_offset_va;
static uint64_t entries[SYS_MAX_ENTRIES];
static uint8_t errcode[SYS_MAX_ENTRIES]; /* the CPU pushes an error code */
static size_t nentries;
static uint64_t irq_stubs_lo, irq_stubs_hi;
static uint64_t init_task;
static struct prec_emusys_mb layout; /* the mailbox's task layout */
static uint64_t qemu_ram, qemu_ram_len; /* QEMU's own mapping of the RAM file, from offset 0 */

int sys_guest_open(void)
{
	int fd = open(sys_cfg.ram, O_RDONLY | O_CLOEXEC);
	void *p;

	if (fd < 0) {
		emu_error("cannot open the guest RAM file %s", sys_cfg.ram);
		return -1;
	}
	p = mmap(NULL, sys_cfg.ram_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		emu_error("cannot map the guest RAM file %s", sys_cfg.ram);
		return -1;
	}
	ram = p;
	return 0;
}

int sys_guest_read_phys(uint64_t pa, void *dst, size_t n)
{
	if (!ram || pa >= sys_cfg.ram_size || n > sys_cfg.ram_size - pa)
		return -1;
	memcpy(dst, ram + pa, n);
	return 0;
}

/* A kernel virtual address in the image or the direct map, as physical. */
static int kva_to_phys(uint64_t va, uint64_t *pa)
{
	if (va >= START_KERNEL_MAP)
		*pa = va - START_KERNEL_MAP + phys_base;
	else if (page_offset && va >= page_offset && va - page_offset < sys_cfg.ram_size)
		*pa = va - page_offset;
	else
		return -1;
	return 0;
}

static uint64_t read_kva_u64(uint64_t va)
{
	uint64_t pa, v = 0;

	if (kva_to_phys(va, &pa) || sys_guest_read_phys(pa, &v, sizeof(v)))
		return 0;
	return v;
}

static const char *ksyms(size_t *len)
{
	const struct prec_emusys_mb *mb = (const void *)(ram + PREC_EMUSYS_MB_PHYS);

	*len = mb->ksyms_len <= PREC_EMUSYS_MB_KSYMS_MAX ? mb->ksyms_len : 0;
	return (const char *)ram + PREC_EMUSYS_MB_PHYS + PREC_EMUSYS_MB_KSYMS;
}

/*
 * Calls @fn for each "ADDR TYPE NAME" line of the kallsyms text (module
 * symbols, "NAME\t[mod]", included); stops when it returns nonzero.
 */
static int each_sym(int (*fn)(uint64_t addr, const char *name, size_t nlen, void *arg), void *arg)
{
	size_t len, i = 0;
	const char *t = ksyms(&len);

	while (i < len) {
		const char *l = t + i, *e = memchr(l, '\n', len - i), *name;
		size_t ll = e ? (size_t)(e - l) : len - i, nlen;
		char *end;
		uint64_t a;

		i += ll + 1;
		a = strtoull(l, &end, 16);
		if (end != l + 16 || ll < 20)
			continue;
		name = l + 19;
		nlen = strcspn(name, "\t\n");
		if (nlen > ll - 19)
			nlen = ll - 19;
		if (fn(a, name, nlen, arg))
			return 1;
	}
	return 0;
}

struct find {
	const char *name;
	uint64_t addr;
};

static int find_one(uint64_t addr, const char *name, size_t nlen, void *arg)
{
	struct find *f = arg;

	if (strlen(f->name) == nlen && !memcmp(name, f->name, nlen)) {
		f->addr = addr;
		return 1;
	}
	return 0;
}

uint64_t sys_guest_sym(const char *name)
{
	struct find f = { name, 0 };

	each_sym(find_one, &f);
	return f.addr;
}

static int starts(const char *name, size_t nlen, const char *prefix)
{
	size_t n = strlen(prefix);

	return nlen >= n && !memcmp(name, prefix, n);
}

/*
 * The handlers the IDT points at (arch/x86/include/asm/idtentry.h), and
 * those of the exceptions with an error code (the SDM's table 6-1: #DF,
 * #TS, #NP, #SS, #GP, #PF, #AC, #CP).
 */
static int add_entry(uint64_t addr, const char *name, size_t nlen, void *arg)
{
	static const char *const with_code[] = {
		"double_fault", "invalid_tss", "segment_not_present", "stack_segment",
		"general_protection", "page_fault", "alignment_check", "control_protection",
	};

	(void)arg;
	if (!(starts(name, nlen, "asm_exc_") || starts(name, nlen, "asm_sysvec_") ||
	      (nlen == 20 && starts(name, nlen, "asm_common_interrupt")) ||
	      (nlen == 22 && starts(name, nlen, "asm_spurious_interrupt"))) ||
	    nentries >= SYS_MAX_ENTRIES || addr < START_KERNEL_MAP)
		return 0;
	errcode[nentries] = 0;
	for (size_t i = 0; i < sizeof(with_code) / sizeof(with_code[0]); i++)
		if (nlen == 8 + strlen(with_code[i]) && !memcmp(name + 8, with_code[i], nlen - 8))
			errcode[nentries] = 1;
	entries[nentries++] = addr;
	return 0;
}

/*
 * QEMU's mapping of the file backing guest RAM (memory-backend-file,
 * share=on), in this process's /proc/self/maps: the one of that file that
 * is not the plugin's own (sys_guest_open()).
 */
static int find_qemu_ram(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4352];
	struct stat st;

	if (!f || stat(sys_cfg.ram, &st)) {
		if (f)
			fclose(f);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off, ino;
		unsigned maj, mnr;

		if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu", &lo, &hi, &off, &maj, &mnr,
			   &ino) != 6 || ino != st.st_ino || makedev(maj, mnr) != st.st_dev ||
		    off != 0 || lo == (uintptr_t)ram)
			continue;
		qemu_ram = lo;
		qemu_ram_len = hi - lo;
		break;
	}
	fclose(f);
	return qemu_ram ? 0 : -1;
}

uint64_t sys_guest_phys_of_host(const void *haddr)
{
	uint64_t h = (uintptr_t)haddr;

	return qemu_ram && h >= qemu_ram && h - qemu_ram < qemu_ram_len ? h - qemu_ram : 0;
}

/* The uprobes' addresses, which the guest's first process found (the mailbox). */
static int learn_uprobes(void)
{
	const struct prec_emusys_mb *mb = (const void *)(ram + PREC_EMUSYS_MB_PHYS);
	int any = 0;

	for (int i = 0; i < sys_cfg.ntrig; i++) {
		struct sys_trig *t = &sys_cfg.trig[i];

		if (!t->user)
			continue;
		any = 1;
		t->pa = (uint32_t)t->slot < mb->nuprobes ? mb->uprobe_pa[t->slot] : 0;
		if (!t->pa) {
			emu_error("the guest found no page of the file of uprobe %d (slot %d)",
				  t->idx, t->slot);
			return -1;
		}
	}
	if (any && find_qemu_ram() < 0) {
		emu_error("cannot find QEMU's mapping of the guest RAM file (for the uprobes)");
		return -1;
	}
	return 0;
}

int sys_guest_learn(void)
{
	uint64_t a;

	a = sys_guest_sym("phys_base");
	if (!a) {
		emu_error("the guest's kernel symbols are missing (is /proc/kallsyms readable?)");
		return -1;
	}
	phys_base = 0;
	phys_base = read_kva_u64(a);
	page_offset = read_kva_u64(sys_guest_sym("page_offset_base"));
	current_task_off = sys_guest_sym("current_task");
	per_cpu_offset_va = sys_guest_sym("__per_cpu_offset");
	irq_stubs_lo = sys_guest_sym("irq_entries_start");
	irq_stubs_hi = sys_guest_sym("spurious_entries_start");
	if (!page_offset || !current_task_off || !per_cpu_offset_va) {
		emu_error("the guest kernel has no current_task, __per_cpu_offset or "
			  "page_offset_base symbol");
		return -1;
	}
	each_sym(add_entry, NULL);
	memcpy(&layout, ram + PREC_EMUSYS_MB_PHYS, sizeof(layout));
	init_task = sys_guest_sym("init_task");
	for (int i = 0; i < sys_cfg.ntrig; i++) {
		struct sys_trig *t = &sys_cfg.trig[i];

		if (t->kind == SYS_TK_INSNS || t->user)
			continue;
		t->addr = sys_guest_sym(t->sym);
		if (!t->addr) {
			emu_error("the guest kernel has no function %s", t->sym);
			return -1;
		}
	}
	return learn_uprobes();
}

/* this_cpu_read(current_task) on CPU 0: arch/x86/include/asm/current.h (6.1). */
uint64_t sys_guest_current(void)
{
	uint64_t pcpu = read_kva_u64(per_cpu_offset_va);

	return pcpu ? read_kva_u64(pcpu + current_task_off) : 0;
}

int sys_guest_workload_pid(void)
{
	const struct prec_emusys_mb *mb = (const void *)(ram + PREC_EMUSYS_MB_PHYS);

	return (int)mb->pid;
}

/*
 * The handler's first store pushes the error-code slot (pushq $-1) or,
 * where the CPU pushed an error code, the return address of its call to
 * error_entry: the interrupted RIP lies 8 or 16 bytes above that store.
 */
int sys_guest_is_entry(uint64_t ip)
{
	if (irq_stubs_lo && ip >= irq_stubs_lo && ip < irq_stubs_hi)
		return 8;
	for (size_t i = 0; i < nentries; i++)
		if (entries[i] == ip)
			return errcode[i] ? 16 : 8;
	return 0;
}

int sys_guest_has_layout(void)
{
	return layout.layout_ok == PREC_EMUSYS_MB_LAYOUT && init_task;
}

static uint64_t field_off(enum sys_task_field f)
{
	return f == SYS_TASK_PID ? layout.task_pid :
	       f == SYS_TASK_TGID ? layout.task_tgid : layout.task_real_parent;
}

static int read_kva(uint64_t va, void *dst, size_t n)
{
	uint64_t pa;

	if (kva_to_phys(va, &pa) || sys_guest_read_phys(pa, dst, n)) {
		memset(dst, 0, n);
		return -1;
	}
	return 0;
}

int sys_guest_task_u32(uint64_t task, enum sys_task_field f)
{
	uint32_t v = 0;

	read_kva(task + field_off(f), &v, sizeof(v));
	return (int)v;
}

uint64_t sys_guest_task_ptr(uint64_t task, enum sys_task_field f)
{
	return read_kva_u64(task + field_off(f));
}

/*
 * What CR3 holds while @task runs: switch_mm_irqs_off() (arch/x86/mm/tlb.c)
 * loads build_cr3(next->pgd, ...), __pa(pgd) with the PCID in the low 12
 * bits; QEMU's default CPU model has no PCID, so those bits are 0. A
 * kernel thread (mm NULL) runs on the mm it borrowed (active_mm: the lazy
 * TLB mode of context_switch(), kernel/sched/core.c), whose CR3 stays.
 */
uint64_t sys_guest_task_cr3(uint64_t task)
{
	uint64_t mm, pgd, pa;

	if (!sys_guest_has_layout() || !layout.mm_pgd)
		return 0;
	mm = read_kva_u64(task + layout.task_mm);
	if (!mm)
		mm = read_kva_u64(task + layout.task_active_mm);
	pgd = mm ? read_kva_u64(mm + layout.mm_pgd) : 0;
	return pgd && !kva_to_phys(pgd, &pa) ? pa : 0;
}

void sys_guest_task_comm(uint64_t task, char name[16])
{
	read_kva(task + layout.task_comm, name, 16);
	name[15] = 0;
}

uint64_t sys_guest_new_task(uint64_t parent, int (*known)(uint64_t task))
{
	uint64_t sig, node, t;

	if (!sys_guest_has_layout())
		return 0;
	/* list_add_tail_rcu(&p->thread_node, &p->signal->thread_head) (kernel/fork.c) */
	sig = read_kva_u64(parent + layout.task_signal);
	node = sig ? read_kva_u64(sig + layout.signal_thread_head + 8) : 0;
	t = node ? node - layout.task_thread_node : 0;
	if (t && t != parent && !known(t) &&
	    sys_guest_task_u32(t, SYS_TASK_TGID) == sys_guest_task_u32(parent, SYS_TASK_TGID) &&
	    sys_guest_task_u32(t, SYS_TASK_PID) != sys_guest_task_u32(parent, SYS_TASK_PID))
		return t;
	/* list_add_tail_rcu(&p->tasks, &init_task.tasks) for a new process */
	node = read_kva_u64(init_task + layout.task_tasks + 8);
	t = node ? node - layout.task_tasks : 0;
	if (t && t != parent && !known(t) && sys_guest_task_ptr(t, SYS_TASK_REAL_PARENT) == parent)
		return t;
	return 0;
}

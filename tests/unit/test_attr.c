// SPDX-License-Identifier: MIT
/*
 * Exact perf_event_attr contents built from event specs: aux_action bytes,
 * exclusion bits, config bits from PMU formats (checked against values
 * computed here from the kernel's documented bit positions), breakpoint and
 * uprobe fields (checked against nm/readelf output and /proc/self/maps).
 */
#include <errno.h>
#include <limits.h>
#include <linux/hw_breakpoint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spec/attr.h"
#include "spec/evspec.h"
#include "harness.h"
#include "spec/pmu.h"

static const char *self_path;
static char root[PATH_MAX];

/* Builds the full fixture tree and points PTREC_SYSROOT at it. */
static void fixture(void)
{
	const char *top = getenv("PTREC_TOP"), *ptrec = getenv("PTREC");
	char ptrec_buf[PATH_MAX], cmd[3 * PATH_MAX];

	if (!top)
		top = ".";
	if (!ptrec) {
		snprintf(ptrec_buf, sizeof(ptrec_buf), "%s", self_path);
		*strrchr(ptrec_buf, '/') = '\0';
		strcat(ptrec_buf, "/../ptrec");
		ptrec = ptrec_buf;
	}
	snprintf(root, sizeof(root), "%s/root", t_tmpdir());
	snprintf(cmd, sizeof(cmd), "PTREC='%s' sh '%s/tests/fixtures/mksysroot.sh' '%s'", ptrec,
		 top, root);
	if (system(cmd)) {
		t_check(false, __FILE__, __LINE__, "fixture command failed: %s", cmd);
		exit(1);
	}
	setenv("PTREC_SYSROOT", root, 1);
}

/* Overwrites one fixture file, e.g. an intel_pt cap. */
static void put(const char *rel, const char *value)
{
	char path[2 * PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/sys/bus/event_source/devices/%s", root, rel);
	f = fopen(path, "w");
	T_OK(f != NULL);
	if (f) {
		fprintf(f, "%s\n", value);
		fclose(f);
	}
}

static struct prec_evlist *parse(const char *spec, bool emulate)
{
	struct prec_evspec_opts o = { .emulate = emulate };
	struct prec_evlist *el = NULL;
	struct prec_diag d;
	int err = prec_evspec_parse(spec, &o, &el, &d);

	t_check(err == 0, __FILE__, __LINE__, "parse '%s': %s (pos %ld)", spec, d.msg, d.pos);
	return el;
}

static const struct prec_attr *attr_of(const struct prec_evlist *el, size_t i)
{
	const struct prec_event *e = prec_evlist_event(el, i);

	if (!e) {
		t_check(false, __FILE__, __LINE__, "no event %zu", i);
		exit(1);
	}
	return &e->attr;
}

static uint64_t config_of(const char *spec, bool emulate)
{
	struct prec_evlist *el = parse(spec, emulate);
	uint64_t c;

	if (!el)
		return ~0ull;
	c = attr_of(el, 0)->config;
	prec_evlist_free(el);
	return c;
}

/* The aux_action word sits at byte 116, bits LSB first: 1, 2, 4. */
static void aux_action_bytes(void)
{
	static const char *const specs[] = {
		"{intel_pt/aux-start-paused/k,syscalls:sys_enter_newuname/aux-resume/,"
		"syscalls:sys_exit_newuname/aux-pause/}",
		"{intel_pt/aux-action=start-paused/k,syscalls:sys_enter_newuname/aux-action=resume/,"
		"syscalls:sys_exit_newuname/aux-action=pause/}",
	};
	static const unsigned char want[3] = { 0x1, 0x4, 0x2 };
	size_t s, i, b;

	fixture();
	for (s = 0; s < 2 * T_N(specs); s++) {
		char spec[256];
		struct prec_evlist *el;

		/* the software tracer takes u where the hardware one takes k */
		snprintf(spec, sizeof(spec), "%s", specs[s % 2]);
		if (s >= 2 && strstr(spec, "/k,"))
			strstr(spec, "/k,")[1] = 'u';
		el = parse(spec, s >= 2);

		if (!el)
			continue;
		T_EQ_INT(prec_evlist_nr_events(el), 3);
		for (i = 0; i < 3; i++) {
			const unsigned char *raw = (const unsigned char *)attr_of(el, i);

			T_EQ_INT(raw[116], want[i]);
			for (b = 117; b < 120; b++)
				T_EQ_INT(raw[b], 0);
			for (b = 112; b < 116; b++)
				T_EQ_INT(raw[b], 0); /* aux_sample_size */
			for (b = 120; b < 136; b++)
				T_EQ_INT(raw[b], 0); /* sig_data, config3 */
			T_EQ_INT(attr_of(el, i)->size, 136);
		}
		prec_evlist_free(el);
	}
}

struct excl {
	const char *mods;
	int eu, ek, eh;
};

static void exclusion_bits(void)
{
	static const struct excl t[] = {
		{ "", 0, 0, 0 }, { ":u", 0, 1, 1 }, { ":k", 1, 0, 1 }, { ":h", 1, 1, 0 },
		{ ":uk", 0, 0, 1 }, { ":ku", 0, 0, 1 }, { ":uh", 0, 1, 0 }, { ":kh", 1, 0, 0 },
		{ ":ukh", 0, 0, 0 }, { ":upp", 0, 1, 1 }, { ":I", 0, 0, 0 },
	};
	char spec[64];
	size_t i;

	fixture();
	for (i = 0; i < T_N(t); i++) {
		struct prec_evlist *el;
		const struct prec_attr *a;

		snprintf(spec, sizeof(spec), "cycles%s", t[i].mods);
		el = parse(spec, false);
		if (!el)
			continue;
		a = attr_of(el, 0);
		t_check(a->exclude_user == (unsigned)t[i].eu && a->exclude_kernel == (unsigned)t[i].ek &&
			a->exclude_hv == (unsigned)t[i].eh, __FILE__, __LINE__,
			"%s: exclude user/kernel/hv %u/%u/%u, expected %d/%d/%d", spec,
			(unsigned)a->exclude_user, (unsigned)a->exclude_kernel, (unsigned)a->exclude_hv,
			t[i].eu, t[i].ek, t[i].eh);
		T_EQ_INT(a->exclude_guest, 0);
		T_EQ_INT(a->exclude_host, 0);
		prec_evlist_free(el);
	}
	/* Group modifiers unite with the member's own. */
	{
		struct prec_evlist *el = parse("{cycles:k,instructions}:u", false);
		const struct prec_attr *a = attr_of(el, 0), *b = attr_of(el, 1);

		T_EQ_INT(a->exclude_user, 0);
		T_EQ_INT(a->exclude_kernel, 0);
		T_EQ_INT(a->exclude_hv, 1);
		T_EQ_INT(b->exclude_user, 0);
		T_EQ_INT(b->exclude_kernel, 1);
		T_EQ_INT(b->exclude_hv, 1);
		prec_evlist_free(el);
	}
	/* Modifiers after a PMU's slash, and on the tracer. */
	{
		struct prec_evlist *el = parse("intel_pt/cyc/u", false);
		const struct prec_attr *a = attr_of(el, 0);

		T_EQ_INT(a->exclude_user, 0);
		T_EQ_INT(a->exclude_kernel, 1);
		T_EQ_INT(a->exclude_hv, 1);
		prec_evlist_free(el);
	}
	{
		struct prec_evlist *el = parse("cycles:G,instructions:H,branches:GHDe", false);

		T_EQ_INT(attr_of(el, 0)->exclude_host, 1);
		T_EQ_INT(attr_of(el, 0)->exclude_guest, 0);
		T_EQ_INT(attr_of(el, 1)->exclude_guest, 1);
		T_EQ_INT(attr_of(el, 1)->exclude_host, 0);
		T_EQ_INT(attr_of(el, 2)->exclude_guest, 0);
		T_EQ_INT(attr_of(el, 2)->exclude_host, 0);
		T_EQ_INT(attr_of(el, 2)->pinned, 1);
		T_EQ_INT(attr_of(el, 2)->exclusive, 1);
		prec_evlist_free(el);
	}
	/* The emulated tracer always traces user space only. */
	{
		struct prec_evlist *el = parse("intel_pt//", true);

		T_EQ_INT(attr_of(el, 0)->exclude_kernel, 1);
		T_EQ_INT(attr_of(el, 0)->exclude_hv, 1);
		T_EQ_INT(attr_of(el, 0)->exclude_user, 0);
		prec_evlist_free(el);
	}
}

/* intel_pt bit positions from arch/x86/events/intel/pt.c. */
#define PT_PT (1ull << 0)
#define PT_CYC (1ull << 1)
#define PT_MTC (1ull << 9)
#define PT_TSC (1ull << 10)
#define PT_NORETCOMP (1ull << 11)
#define PT_BRANCH (1ull << 13)
#define PT_MTC_PERIOD(v) ((uint64_t)(v) << 14)
#define PT_CYC_THRESH(v) ((uint64_t)(v) << 19)
#define PT_PSB_PERIOD(v) ((uint64_t)(v) << 24)

static void intel_pt_config(void)
{
	uint64_t dflt = PT_PT | PT_BRANCH | PT_TSC | PT_MTC | PT_MTC_PERIOD(3) | PT_PSB_PERIOD(3);
	int emu;

	fixture();
	/* perf's well-known default intel_pt config on hardware with these caps */
	T_EQ_U64(dflt, 0x300e601);
	for (emu = 0; emu < 2; emu++) {
		T_EQ_U64(config_of("intel_pt//", emu), dflt);
		T_EQ_U64(config_of("intel_pt/cyc,mtc_period=6,psb_period=2/u", emu),
			 PT_PT | PT_BRANCH | PT_TSC | PT_MTC | PT_CYC | PT_MTC_PERIOD(6) |
				 PT_PSB_PERIOD(2));
		T_EQ_U64(config_of("intel_pt/cyc,cyc_thresh=2,noretcomp,tsc=0/", emu),
			 (dflt & ~PT_TSC) | PT_CYC | PT_CYC_THRESH(2) | PT_NORETCOMP);
		T_EQ_U64(config_of("intel_pt/mtc=0,mtc_period=0,psb_period=0/", emu),
			 PT_PT | PT_BRANCH | PT_TSC);
		T_EQ_U64(config_of("intel_pt/config=0x2001,tsc/", emu), PT_PT | PT_BRANCH | PT_TSC);
	}
	/* The default follows the caps, as perf's does. */
	put("intel_pt/caps/mtc_periods", "6");
	put("intel_pt/caps/psb_periods", "3");
	T_EQ_U64(config_of("intel_pt//", false),
		 PT_PT | PT_BRANCH | PT_TSC | PT_MTC | PT_MTC_PERIOD(2) | PT_PSB_PERIOD(1));
	put("intel_pt/caps/mtc_periods", "1e"); /* hex: 1..4, so 3 */
	put("intel_pt/caps/psb_periods", "1e");
	T_EQ_U64(config_of("intel_pt//", false), dflt);
	put("intel_pt/caps/mtc_periods", "30"); /* hex: 4, 5: none below 3, so 4 */
	put("intel_pt/caps/psb_periods", "a"); /* 1, 3 */
	T_EQ_U64(config_of("intel_pt//", false),
		 PT_PT | PT_BRANCH | PT_TSC | PT_MTC | PT_MTC_PERIOD(4) | PT_PSB_PERIOD(3));
	put("intel_pt/caps/psb_cyc", "0");
	T_EQ_U64(config_of("intel_pt//", false), PT_PT | PT_BRANCH | PT_TSC | PT_MTC | PT_MTC_PERIOD(4));
	put("intel_pt/caps/psb_cyc", "1");
	put("intel_pt/caps/mtc", "0");
	T_EQ_U64(config_of("intel_pt//", false), PT_PT | PT_BRANCH | PT_TSC);
	put("intel_pt/caps/mtc", "1");
	put("intel_pt/caps/mtc_periods", "0");
	T_EQ_U64(config_of("intel_pt//", false), PT_PT | PT_BRANCH | PT_TSC);
	put("intel_pt/caps/mtc_periods", "249");
	put("intel_pt/caps/psb_periods", "3f");
	/* A format is read from the file, not assumed. */
	put("intel_pt/format/cyc", "config:3");
	T_EQ_U64(config_of("intel_pt/cyc/", false), dflt | (1ull << 3));
}

static void cs_etm_config(void)
{
	struct prec_evlist *el;
	const struct prec_attr *a;

	fixture();
	T_EQ_U64(config_of("cs_etm/cycacc,timestamp,retstack,contextid2,branch_broadcast/", false),
		 (1ull << 12) | (1ull << 28) | (1ull << 29) | (1ull << 15) | (1ull << 8));
	T_EQ_U64(config_of("cs_etm/contextid1,preset=9/", false), (1ull << 14) | 9);
	T_EQ_U64(config_of("cs_etm//", false), 0);
	el = parse("cs_etm/@tmc_etr0,configid=5,cc_threshold=0x123,ts_level=15/k", false);
	a = attr_of(el, 0);
	T_EQ_U64(a->config2, (5ull << 32) | 0x7a3b9e12);
	T_EQ_U64(a->config3, 0xf123);
	T_EQ_INT(a->type, 11);
	T_EQ_INT(a->exclude_user, 1);
	T_EQ_INT(a->sample_period, 1);
	prec_evlist_free(el);
}

static void other_pmus(void)
{
	struct prec_evlist *el;

	fixture();
	/* AMD-style event field: low 8 bits in config:0-7, the rest in config:32-35 */
	T_EQ_U64(config_of("cpu/event=0x1c3/", false), 0x1000000c3);
	T_EQ_U64(config_of("cpu/event=0xfff,umask=0xff,edge,inv,cmask=3/", false),
		 0xf000000ffull | (0xffull << 8) | (1ull << 18) | (1ull << 23) | (3ull << 24));
	T_EQ_U64(config_of("cpu/branch-misses/", false), 0xc3);
	el = parse("r1a8/config2=7/,cycles/period=1000/,instructions/freq=99/", false);
	T_EQ_INT(attr_of(el, 0)->type, PERF_TYPE_RAW);
	T_EQ_U64(attr_of(el, 0)->config, 0x1a8);
	T_EQ_U64(attr_of(el, 0)->config2, 7);
	T_EQ_INT(attr_of(el, 1)->type, PERF_TYPE_HARDWARE);
	T_EQ_U64(attr_of(el, 1)->sample_period, 1000);
	T_EQ_INT(attr_of(el, 1)->freq, 0);
	T_EQ_U64(attr_of(el, 2)->config, PERF_COUNT_HW_INSTRUCTIONS);
	T_EQ_U64(attr_of(el, 2)->sample_freq, 99);
	T_EQ_INT(attr_of(el, 2)->freq, 1);
	/* The parser leaves the recorder's fields alone. */
	T_EQ_U64(attr_of(el, 1)->sample_type, 0);
	T_EQ_U64(attr_of(el, 1)->read_format, 0);
	T_EQ_INT(attr_of(el, 1)->disabled, 0);
	T_EQ_INT(attr_of(el, 1)->inherit, 0);
	T_EQ_INT(attr_of(el, 1)->enable_on_exec, 0);
	prec_evlist_free(el);
}

static void breakpoint_fields(void)
{
	static const struct {
		const char *spec;
		uint64_t addr;
		uint32_t type, len;
	} t[] = {
		{ "mem:0x1000", 0x1000, HW_BREAKPOINT_R | HW_BREAKPOINT_W, 4 },
		{ "mem:0x1000:x", 0x1000, HW_BREAKPOINT_X, sizeof(long) },
		{ "mem:0x1000:r", 0x1000, HW_BREAKPOINT_R, 4 },
		{ "mem:0x1000:w", 0x1000, HW_BREAKPOINT_W, 4 },
		{ "mem:0x1000:wr", 0x1000, HW_BREAKPOINT_R | HW_BREAKPOINT_W, 4 },
		{ "mem:0x1001/1:w", 0x1001, HW_BREAKPOINT_W, 1 },
		{ "mem:0x1002/2:rw", 0x1002, HW_BREAKPOINT_R | HW_BREAKPOINT_W, 2 },
		{ "mem:0x1008/8", 0x1008, HW_BREAKPOINT_R | HW_BREAKPOINT_W, 8 },
		{ "mem:0xffffffffb605bf60:x", 0xffffffffb605bf60ull, HW_BREAKPOINT_X, 8 },
	};
	size_t i;

	fixture();
	for (i = 0; i < T_N(t); i++) {
		struct prec_evlist *el = parse(t[i].spec, false);
		const struct prec_attr *a;
		const struct prec_event *e;

		if (!el)
			continue;
		a = attr_of(el, 0);
		e = prec_evlist_event(el, 0);
		T_EQ_INT(a->type, PERF_TYPE_BREAKPOINT);
		T_EQ_U64(a->config, 0);
		T_EQ_U64(a->bp_addr, t[i].addr);
		T_EQ_U64(a->bp_len, t[i].len);
		T_EQ_INT(a->bp_type, t[i].type);
		T_EQ_U64(a->sample_period, 1);
		T_EQ_U64(e->bp.addr, t[i].addr);
		T_EQ_INT(e->bp.len, t[i].len);
		T_EQ_INT(e->bp.type, t[i].type);
		prec_evlist_free(el);
	}
}

/* A function of this binary to probe, laid out by hand: +0 nop, +1 mov (5), +6 ret. */
#if defined(__x86_64__)
__asm__(".text\n.globl probe_target\n.type probe_target,@function\nprobe_target:\n"
	"\tnop\n\tmovl $1, %eax\n\tret\n.size probe_target, .-probe_target\n");
#elif defined(__aarch64__)
/* The arm64 build (make check-arm64): +0 nop, +4 mov, +8 ret; +6 is still inside it. */
__asm__(".text\n.globl probe_target\n.type probe_target,%function\nprobe_target:\n"
	"\tnop\n\tmov w0, #1\n\tret\n.size probe_target, .-probe_target\n");
#endif
int probe_target(void);

/* Runs @cmd and returns its first output line in @buf. */
static bool run_line(const char *cmd, char *buf, size_t size)
{
	FILE *f = popen(cmd, "r");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)size, f) != NULL;
	pclose(f);
	return ok;
}

/* vaddr -> file offset from `readelf -lW` output, independently of libelf. */
static bool readelf_offset(const char *path, uint64_t vaddr, uint64_t *off)
{
	char cmd[PATH_MAX + 64], line[512];
	FILE *f;
	bool found = false;

	snprintf(cmd, sizeof(cmd), "readelf -lW '%s'", path);
	f = popen(cmd, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long o, va, pa, fsz, msz;

		if (sscanf(line, " LOAD 0x%llx 0x%llx 0x%llx 0x%llx 0x%llx", &o, &va, &pa, &fsz,
			   &msz) == 5 &&
		    vaddr >= va && vaddr < va + fsz) {
			*off = vaddr - va + o;
			found = true;
		}
	}
	pclose(f);
	return found;
}

/* The file offset of @addr in this process, from /proc/self/maps. */
static bool maps_offset(uintptr_t addr, const char *path, uint64_t *off)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 128];
	bool found = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, o;
		char file[PATH_MAX] = "";

		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %4095s", &lo, &hi, &o, file) < 3)
			continue;
		if (addr >= lo && addr < hi && !strcmp(file, path)) {
			*off = addr - lo + o;
			found = true;
		}
	}
	fclose(f);
	return found;
}

static void uprobe_fields(void)
{
	char self[PATH_MAX], spec[2 * PATH_MAX], cmd[PATH_MAX + 64], line[256];
	unsigned long long nm_vaddr = 0;
	uint64_t off_readelf = 0, off_maps = 0;
	struct prec_evlist *el;
	const struct prec_event *e;

	fixture();
	T_OK(realpath(self_path, self) != NULL);
	snprintf(cmd, sizeof(cmd), "nm '%s' | grep ' T probe_target$'", self);
	T_OK(run_line(cmd, line, sizeof(line)) && sscanf(line, "%llx", &nm_vaddr) == 1);
	T_OK(readelf_offset(self, nm_vaddr, &off_readelf));
	T_OK(maps_offset((uintptr_t)&probe_target, self, &off_maps));
	T_EQ_U64(off_readelf, off_maps);

	snprintf(spec, sizeof(spec), "uprobe:%s:probe_target", self);
	el = parse(spec, false);
	e = prec_evlist_event(el, 0);
	T_EQ_INT(e->kind, PREC_EV_UPROBE);
	T_EQ_INT(e->attr.type, 7);
	T_EQ_U64(e->attr.config, 0);
	T_EQ_U64(e->uprobe.vaddr, nm_vaddr);
	T_EQ_U64(e->uprobe.file_offset, off_readelf);
	T_EQ_U64(e->attr.probe_offset, off_maps);
	T_EQ_U64(e->attr.config2, off_maps);
	T_EQ_U64(e->attr.uprobe_path, (uint64_t)(uintptr_t)e->uprobe.path);
	T_EQ_STR((const char *)(uintptr_t)e->attr.config1, self);
	T_EQ_STR(e->uprobe.symbol, "probe_target");
	T_EQ_U64(e->attr.sample_period, 1);
	prec_evlist_free(el);

	/* +OFFSET and a hex address land on the same bytes */
	snprintf(spec, sizeof(spec), "uprobe:%s:probe_target+6", self);
	el = parse(spec, false);
	T_EQ_U64(prec_evlist_event(el, 0)->attr.config2, off_maps + 6);
	T_EQ_U64(prec_evlist_event(el, 0)->uprobe.sym_offset, 6);
	T_EQ_U64(prec_evlist_event(el, 0)->uprobe.vaddr, nm_vaddr + 6);
	prec_evlist_free(el);
	snprintf(spec, sizeof(spec), "uprobe:%s:0x%llx", self, nm_vaddr);
	el = parse(spec, false);
	T_EQ_U64(prec_evlist_event(el, 0)->attr.config2, off_maps);
	prec_evlist_free(el);

	/* The retprobe bit comes from the uprobe PMU's format file. */
	snprintf(spec, sizeof(spec), "uretprobe:%s:probe_target", self);
	el = parse(spec, false);
	T_EQ_INT(prec_evlist_event(el, 0)->kind, PREC_EV_URETPROBE);
	T_EQ_U64(prec_evlist_event(el, 0)->attr.config, 1);
	T_EQ_U64(prec_evlist_event(el, 0)->attr.config2, off_maps);
	prec_evlist_free(el);
	put("uprobe/format/retprobe", "config:5");
	el = parse(spec, false);
	T_EQ_U64(prec_evlist_event(el, 0)->attr.config, 1ull << 5);
	prec_evlist_free(el);
}

static void dump_format(void)
{
	struct prec_attr a;
	struct prec_buf b = { 0 };

	prec_attr_init(&a, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
	a.sample_period = 4000;
	a.aux_pause = 1;
	prec_attr_sample_defaults(&a, false);
	T_EQ_INT(prec_attr_dump(&b, &a, "  "), 0);
	T_EQ_STR(b.data, "  type                       0\n"
			 "  size                       136\n"
			 "  config                     0x1\n"
			 "  sample_period              4000\n"
			 "  sample_type                IP|TID|TIME|CPU|IDENTIFIER\n"
			 "  sample_id_all              1\n"
			 "  aux_pause                  1\n");
	prec_buf_free(&b);
	prec_attr_init(&a, 10, 0x300e601);
	prec_attr_sample_defaults(&a, true);
	a.aux_start_paused = 1;
	T_EQ_U64(a.aux_action, PREC_AUX_START_PAUSED);
	T_EQ_INT(prec_attr_dump(&b, &a, ""), 0);
	T_CONTAINS(b.data, "sample_type                TID|TIME|CPU|IDENTIFIER\n");
	T_CONTAINS(b.data, "aux_start_paused           1\n");
	prec_buf_free(&b);
}

static void evlist_dump(void)
{
	struct prec_evlist *el;
	struct prec_buf b = { 0 };

	fixture();
	el = parse("{intel_pt/aux-start-paused/k,syscalls:sys_enter_newuname/aux-resume/,"
		   "syscalls:sys_exit_newuname/aux-pause/}", false);
	T_EQ_INT(prec_evlist_dump(el, &b), 0);
	T_CONTAINS(b.data, "3 events in 1 group\n");
	T_CONTAINS(b.data, "group 0: leader #0, 3 members\n");
	T_CONTAINS(b.data, "  #0 intel_pt/aux-start-paused/k\n"
			   "     kind aux tracer, pmu intel_pt (type 10), AUX tracer, from -e #1 at "
			   "offset 1\n"
			   "     aux-action start-paused\n"
			   "     terms branch,mtc,mtc_period=3,psb_period=3,pt,tsc\n"
			   "     perf_event_attr:\n"
			   "       type                       10\n"
			   "       size                       136\n"
			   "       config                     0x300e601\n"
			   "       sample_period              1\n"
			   "       exclude_user               1\n"
			   "       exclude_hv                 1\n"
			   "       aux_start_paused           1\n");
	T_CONTAINS(b.data, "     tracepoint syscalls:sys_enter_newuname id 701, syscall 63 enter\n");
	T_CONTAINS(b.data, "       config                     0x2bc\n");
	T_CONTAINS(b.data, "       aux_pause                  1\n");
	prec_buf_free(&b);
	prec_evlist_free(el);
}

static void format_parsing(void)
{
	struct prec_pmu_format f;
	uint64_t bits;

	T_EQ_INT(prec_pmu_format_parse("config:0-7,32-35", &f), 0);
	T_EQ_INT(f.word, 0);
	T_EQ_U64(f.mask, 0xf000000ffull);
	T_EQ_INT(f.width, 12);
	T_EQ_INT(prec_pmu_format_encode(&f, 0x1c3, &bits), 0);
	T_EQ_U64(bits, 0x1000000c3ull);
	T_EQ_U64(prec_pmu_format_decode(&f, bits | 0xff00), 0x1c3);
	T_EQ_INT(prec_pmu_format_encode(&f, 0x1000, &bits), -ERANGE);
	T_EQ_INT(prec_pmu_format_parse("config1:0-31", &f), 0);
	T_EQ_INT(f.word, 1);
	T_EQ_U64(f.mask, 0xffffffffull);
	T_EQ_INT(prec_pmu_format_parse("config2:32-63", &f), 0);
	T_EQ_INT(f.word, 2);
	T_EQ_U64(f.mask, 0xffffffff00000000ull);
	T_EQ_INT(prec_pmu_format_parse("config3:0-11", &f), 0);
	T_EQ_INT(f.word, 3);
	T_EQ_INT(prec_pmu_format_parse("config:0-63", &f), 0);
	T_EQ_INT(f.width, 64);
	T_EQ_INT(prec_pmu_format_encode(&f, UINT64_MAX, &bits), 0);
	T_EQ_U64(bits, UINT64_MAX);
	T_EQ_INT(prec_pmu_format_parse("config:55", &f), 0);
	T_EQ_U64(f.mask, 1ull << 55);
	T_EQ_INT(prec_pmu_format_parse("config:5\n", &f), 0);
	T_EQ_INT(prec_pmu_format_parse("config:", &f), -EINVAL);
	T_EQ_INT(prec_pmu_format_parse("config:5-3", &f), -EINVAL);
	T_EQ_INT(prec_pmu_format_parse("config:64", &f), -EINVAL);
	T_EQ_INT(prec_pmu_format_parse("conf:1", &f), -EINVAL);
	T_EQ_INT(prec_pmu_format_parse("config4:1", &f), -EINVAL);
	T_EQ_INT(prec_pmu_format_parse("config:1,", &f), -EINVAL);
	T_EQ_INT(prec_pmu_format_parse("config:1-2x", &f), -EINVAL);
	T_EQ_INT(prec_pmu_format_parse("config1", &f), -EINVAL);
}

static void generic_table(void)
{
	const struct prec_generic_event *g;
	size_t n, i, j;

	g = prec_generic_events(&n);
	T_OK(n >= 28);
	for (i = 0; i < n; i++) {
		const struct prec_generic_event *c;

		T_OK(prec_generic_event_find(g[i].name) == &g[i]);
		for (j = 0; j < i; j++)
			T_OK(strcmp(g[i].name, g[j].name) != 0);
		if (!g[i].alias_of)
			continue;
		c = prec_generic_event_find(g[i].alias_of);
		T_OK(c && !c->alias_of && c->type == g[i].type && c->config == g[i].config);
	}
	T_OK(prec_generic_event_find("cycle") == NULL);
}

static void mods_api(void)
{
	struct prec_mods m = { 0 };
	struct prec_diag d;
	struct prec_attr a;

	T_EQ_INT(prec_mods_parse("ukpp", 4, 10, &m, &d), 0);
	T_EQ_INT(m.precise, 2);
	prec_attr_init(&a, 0, 0);
	prec_mods_apply(&m, &a);
	T_EQ_INT(a.precise_ip, 2);
	T_EQ_INT(a.exclude_hv, 1);
	T_EQ_INT(prec_mods_parse("x", 1, 10, &m, &d), -PREC_E_SYNTAX);
	T_EQ_INT(d.pos, 10);
	T_EQ_INT(prec_mods_parse("k", 1, 20, &m, &d), -PREC_E_SYNTAX);
	T_EQ_INT(d.pos, 20);
	T_CONTAINS(d.msg, "given twice");
}

/*
 * PERIOD in sample_type only with freq: with a fixed period a software event
 * would overflow on every event (the kernel's perf_swevent_event()). What the
 * parser set (READ for leader sampling) stays.
 */
static void sample_defaults(void)
{
	struct prec_attr a;

	prec_attr_init(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS);
	a.sample_period = 100;
	prec_attr_sample_defaults(&a, false);
	T_EQ_U64(a.sample_type, PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
					PERF_SAMPLE_TIME | PERF_SAMPLE_CPU);
	T_EQ_INT(a.sample_id_all, 1);
	prec_attr_init(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS);
	a.freq = 1;
	a.sample_freq = 4000;
	a.sample_type = PERF_SAMPLE_READ;
	prec_attr_sample_defaults(&a, false);
	T_EQ_U64(a.sample_type, PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
					PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
					PERF_SAMPLE_READ);
	/* a counter with neither period nor freq samples at perf's default frequency */
	prec_attr_init(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS);
	prec_attr_sample_defaults(&a, false);
	T_EQ_INT(a.freq, 1);
	T_EQ_U64(a.sample_freq, 4000);
	T_EQ_U64(a.sample_type & PERF_SAMPLE_PERIOD, PERF_SAMPLE_PERIOD);
	/* ... but a member of a leader-sampling group only counts */
	prec_attr_init(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS);
	a.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID;
	prec_attr_sample_defaults(&a, false);
	T_EQ_INT(a.freq, 0);
	T_EQ_U64(a.sample_period, 0);
	/* the AUX tracer: no IP */
	prec_attr_init(&a, 10, 0);
	prec_attr_sample_defaults(&a, true);
	T_EQ_U64(a.sample_type, PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
					PERF_SAMPLE_CPU);
}

static const struct t_case cases[] = {
	T(aux_action_bytes), T(exclusion_bits), T(intel_pt_config), T(cs_etm_config),
	T(other_pmus), T(breakpoint_fields), T(uprobe_fields), T(dump_format), T(evlist_dump),
	T(format_parsing), T(generic_table), T(mods_api), T(sample_defaults),
};

int main(int argc, char **argv)
{
	self_path = argv[0];
	return t_main(argc, argv, cases, T_N(cases));
}

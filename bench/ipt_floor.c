// SPDX-License-Identifier: MIT
/*
 * The floor of a libipt-based decode: libipt's block decoder run over one raw
 * Intel PT stream with its code images and nothing else (no sideband, no
 * events, no output). ptdump's views are measured against it.
 *
 *   ipt_floor [options] --pt FILE
 *
 * Options take the syntax of the <stream>.ptxed.args files that
 * `ptdump --to-raw DIR` writes (run it from DIR: `ipt_floor $(cat tid-N.ptxed.args)`):
 *   --cpu F/M[/S]  --mtc-freq N  --nom-freq N  --cpuid-0x15.eax N  --cpuid-0x15.ebx N
 *   --elf FILE[:BASE]        the PT_LOAD segments of an ELF file (BASE: where the
 *                            lowest one is loaded)
 *   --raw FILE:FROM-TO:ADDR  bytes [FROM, TO) of FILE at ADDR
 *   --ptdump-config 1        the block decoder configured as ptdump's is
 *                            (blocks end at calls and jumps, tick events):
 *                            the same libipt work that ptdump's views need
 * The sections go through a libipt section cache that keeps them mapped, as
 * ptdump's do: without it the block decoder maps and unmaps a file's segment
 * each time the trace moves from one file to another.
 * Prints one line: instructions, blocks, errors, seconds, the rates, and the
 * tick events (how many, and a checksum of their IPs and times).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdbool.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <intel-pt.h>

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "ipt_floor: %s%s%s\n", what, arg ? ": " : "", arg ? arg : "");
	exit(2);
}

/* Mapped sections the cache keeps: all of them here (ptdump keeps up to 1 GiB). */
#define ISCACHE_LIMIT (1ull << 30)
static struct pt_image_section_cache *iscache;

static int add_section(struct pt_image *img, const char *path, uint64_t off, uint64_t size,
		       uint64_t at)
{
	int isid;

	if (!iscache) {
		iscache = pt_iscache_alloc("floor");
		if (!iscache || pt_iscache_set_limit(iscache, ISCACHE_LIMIT) < 0)
			die("libipt: cannot make a section cache", NULL);
	}
	isid = pt_iscache_add_file(iscache, path, off, size, at);
	return isid < 0 ? isid : pt_image_add_cached(img, iscache, isid, NULL);
}

/* --elf FILE[:BASE] */
static void add_elf(struct pt_image *img, const char *arg)
{
	char path[4096];
	const char *colon = strrchr(arg, ':');
	uint64_t base = 0, low = UINT64_MAX;
	bool has_base = false;
	size_t i, n;
	Elf *e;
	int fd;

	snprintf(path, sizeof(path), "%s", arg);
	if (colon && colon[1] >= '0' && colon[1] <= '9') {
		path[colon - arg] = 0;
		base = strtoull(colon + 1, NULL, 0);
		has_base = true;
	}
	fd = open(path, O_RDONLY);
	if (fd < 0)
		die("cannot open", path);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_getphdrnum(e, &n))
		die("not an ELF file", path);
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < low)
			low = ph.p_vaddr;
	}
	for (i = 0; i < n; i++) {
		GElf_Phdr ph;
		uint64_t at;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		at = has_base ? base + (ph.p_vaddr - low) : ph.p_vaddr;
		if (add_section(img, path, ph.p_offset, ph.p_filesz, at) < 0)
			die("libipt refused a segment of", path);
	}
	elf_end(e);
	close(fd);
}

/* --raw FILE:FROM-TO:ADDR */
static void add_raw(struct pt_image *img, const char *arg)
{
	char path[4096];
	const char *c2 = strrchr(arg, ':'), *c1;
	uint64_t from, to, at;

	snprintf(path, sizeof(path), "%s", arg);
	if (!c2)
		die("--raw wants FILE:FROM-TO:ADDR", arg);
	path[c2 - arg] = 0;
	c1 = strrchr(path, ':');
	if (!c1 || sscanf(c1 + 1, "%" SCNi64 "-%" SCNi64, &from, &to) != 2 || to < from)
		die("--raw wants FILE:FROM-TO:ADDR", arg);
	path[c1 - path] = 0;
	at = strtoull(c2 + 1, NULL, 0);
	if (add_section(img, path, from, to - from, at) < 0)
		die("libipt refused", arg);
}

static uint8_t *map_file(const char *path, size_t *len)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) || !st.st_size)
		die("cannot read", path);
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		die("cannot map", path);
	close(fd);
	*len = (size_t)st.st_size;
	return p;
}

/* The line printed: the counts, the seconds since @t0 and the rates over @len trace bytes. */
static void report(const struct timespec *t0, uint64_t insns, uint64_t blocks, uint64_t errors,
		   size_t len, uint64_t ticks, uint64_t tick_sum)
{
	struct timespec t1;
	double s;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
	printf("instructions %" PRIu64 " blocks %" PRIu64 " errors %" PRIu64
	       " seconds %.3f MB/s %.1f Minsn/s %.1f ticks %" PRIu64 " %016" PRIx64 "\n",
	       insns, blocks, errors, s, (double)len / 1e6 / s, (double)insns / 1e6 / s, ticks,
	       tick_sum);
}

static void parse(int argc, char **argv, struct pt_config *cfg, struct pt_image *img,
		  const char **pt)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			die("option without a value", a);
		i++;
		if (!strcmp(a, "--pt")) {
			*pt = v;
		} else if (!strcmp(a, "--cpu")) {
			unsigned f = 0, m = 0, s = 0;

			if (sscanf(v, "%u/%u/%u", &f, &m, &s) < 2)
				die("--cpu wants F/M[/S]", v);
			cfg->cpu.vendor = pcv_intel;
			cfg->cpu.family = (uint16_t)f;
			cfg->cpu.model = (uint8_t)m;
			cfg->cpu.stepping = (uint8_t)s;
		} else if (!strcmp(a, "--mtc-freq")) {
			cfg->mtc_freq = (uint8_t)atoi(v);
		} else if (!strcmp(a, "--nom-freq")) {
			cfg->nom_freq = (uint8_t)atoi(v);
		} else if (!strcmp(a, "--cpuid-0x15.eax")) {
			cfg->cpuid_0x15_eax = (uint32_t)strtoul(v, NULL, 0);
		} else if (!strcmp(a, "--cpuid-0x15.ebx")) {
			cfg->cpuid_0x15_ebx = (uint32_t)strtoul(v, NULL, 0);
		} else if (!strcmp(a, "--elf")) {
			add_elf(img, v);
		} else if (!strcmp(a, "--raw")) {
			add_raw(img, v);
		} else if (!strcmp(a, "--ptdump-config")) {
			cfg->flags.variant.block.end_on_call = atoi(v) != 0;
			cfg->flags.variant.block.end_on_jump = atoi(v) != 0;
			cfg->flags.variant.block.enable_tick_events = atoi(v) != 0;
		} else {
			die("unknown option", a);
		}
	}
	if (!*pt)
		die("no --pt FILE", NULL);
}

int main(int argc, char **argv)
{
	struct pt_config cfg;
	struct pt_image *img = pt_image_alloc("floor");
	struct pt_block_decoder *dec;
	struct timespec t0;
	uint64_t insns = 0, blocks = 0, errors = 0, off = 0, last_off = 0, noprog = 0;
	uint64_t ticks = 0, tick_sum = 0;
	const char *pt = NULL;
	size_t len;
	int st;

	pt_config_init(&cfg);
	parse(argc, argv, &cfg, img, &pt);
	if (cfg.cpu.vendor && pt_cpu_errata(&cfg.errata, &cfg.cpu) < 0)
		die("unknown CPU for errata", NULL);
	cfg.begin = map_file(pt, &len);
	cfg.end = cfg.begin + len;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	dec = pt_blk_alloc_decoder(&cfg);
	if (!dec || pt_blk_set_image(dec, img) < 0)
		die("libipt: cannot make a block decoder", NULL);
	for (;;) {
		st = pt_blk_sync_forward(dec);
		if (st == -pte_eos)
			break;
		if (st < 0) {
			errors++;
			continue;
		}
		for (;;) {
			struct pt_block b;

			while (st & pts_event_pending) {
				struct pt_event ev;

				st = pt_blk_event(dec, &ev, sizeof(ev));
				if (st < 0)
					break;
				if (ev.type == ptev_tick) {
					ticks++;
					tick_sum = (tick_sum * 1000003) ^ ev.variant.tick.ip ^ (ev.tsc << 1);
				}
			}
			if (st < 0)
				break;
			/* The trace is used up (ptdump stops there too). */
			if (st & pts_eos) {
				st = -pte_eos;
				break;
			}
			st = pt_blk_next(dec, &b, sizeof(b));
			if (st < 0)
				break;
			insns += b.ninsn;
			blocks++;
			/* ptdump's bound on blocks that consume no trace, per block */
			pt_blk_get_offset(dec, &off);
			if (off == last_off && ++noprog > 4096 + 64 * (uint64_t)len) {
				fprintf(stderr, "ipt_floor: %" PRIu64 " blocks without trace\n", noprog);
				st = -pte_eos;
				break;
			}
			last_off = off;
		}
		if (st == -pte_eos)
			break;
		errors++;
	}
	report(&t0, insns, blocks, errors, len, ticks, tick_sum);
	pt_blk_free_decoder(dec);
	pt_image_free(img);
	pt_iscache_free(iscache);
	return 0;
}

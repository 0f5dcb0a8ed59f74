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
 *   --walk qry               instead of the block decoder, libipt's query
 *                            decoder and a walk of the code of this
 *                            program's own (see walk_qry()): what a decoder
 *                            core over the query decoder would cost
 * The sections go through a libipt section cache that keeps them mapped, as
 * ptdump's do: without it the block decoder maps and unmaps a file's segment
 * each time the trace moves from one file to another.
 * Prints one line: instructions, blocks, errors, seconds, and the rates.
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

#include <capstone/capstone.h>
#include <intel-pt.h>

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "ipt_floor: %s%s%s\n", what, arg ? ": " : "", arg ? arg : "");
	exit(2);
}

/* Mapped sections the cache keeps: all of them here (ptdump keeps up to 1 GiB). */
#define ISCACHE_LIMIT (1ull << 30)
static struct pt_image_section_cache *iscache;

/* The sections again, mapped, for --walk qry: [va, va + size) at p. */
struct wsec {
	uint64_t va, size;
	const uint8_t *p;
};
static struct wsec wsecs[512];
static size_t nwsecs;

static uint8_t *map_file(const char *path, size_t *len);

static void walk_section(const char *path, uint64_t off, uint64_t size, uint64_t at)
{
	size_t len;
	const uint8_t *p = map_file(path, &len);

	if (off > len || size > len - off)
		die("a section past the end of its file", path);
	if (nwsecs == sizeof(wsecs) / sizeof(wsecs[0]))
		die("too many sections", path);
	wsecs[nwsecs++] = (struct wsec){ at, size, p + off };
}

static int add_section(struct pt_image *img, const char *path, uint64_t off, uint64_t size,
		       uint64_t at)
{
	int isid;

	walk_section(path, off, size, at);

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

static bool walk_mode;

/* The line printed: the counts, the seconds since @t0 and the rates over @len trace bytes. */
static void report(const struct timespec *t0, uint64_t insns, uint64_t blocks, uint64_t errors,
		   size_t len, const char *what)
{
	struct timespec t1;
	double s;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
	printf("instructions %" PRIu64 " blocks %" PRIu64 " errors %" PRIu64
	       " seconds %.3f MB/s %.1f Minsn/s %.1f%s\n",
	       insns, blocks, errors, s, (double)len / 1e6 / s, (double)insns / 1e6 / s, what);
}

/*
 * --walk qry: a prototype of a decoder core over libipt's query decoder.
 * The code is cut into blocks that end at the first branch (any jump,
 * call, return, interrupt or system call), each disassembled once
 * (capstone) into a direct-mapped cache; the walk goes from block to block,
 * asking the query decoder only where the code cannot tell: a conditional
 * branch's TNT bit, an indirect branch's target, and the events the
 * decoder has pending (tracing enabled or disabled, an asynchronous
 * branch, an overflow). A return is taken from the calls' stack when the
 * next packet is a TNT bit (return compression), else from a TIP.
 * Not handled as the block decoder does: an asynchronous event inside a
 * block (an interrupt's FUP binds to the instruction it names; here the
 * block runs to its end), TSX, PTWRITE and a mode other than 64-bit. So
 * its instruction count equals the block decoder's only on user-space
 * traces without them; the line printed shows both counts to compare.
 */
enum wkind { WK_NONE, WK_COND, WK_JUMP, WK_CALL, WK_INDIRECT, WK_ICALL, WK_RETURN, WK_FAR };

struct wblk {
	uint64_t ip, last, target; /* first and last instruction, a direct branch's target */
	uint32_t ninsn;
	uint8_t kind, len;         /* the last instruction's */
};

#define WCACHE_BITS 16
#define WSTACK 64

static const uint8_t *walk_mem(uint64_t ip, size_t *avail)
{
	for (size_t i = 0; i < nwsecs; i++)
		if (ip - wsecs[i].va < wsecs[i].size) {
			*avail = (size_t)(wsecs[i].size - (ip - wsecs[i].va));
			return wsecs[i].p + (ip - wsecs[i].va);
		}
	return NULL;
}

/* The kind of instruction @in (WK_NONE: not a branch), and its direct target. */
static enum wkind walk_kind(const cs_insn *in, uint64_t *target)
{
	const cs_detail *d = in->detail;
	bool jump = false, call = false, ret = false, far = false, rel = false;

	for (int g = 0; g < d->groups_count; g++) {
		jump |= d->groups[g] == CS_GRP_JUMP;
		call |= d->groups[g] == CS_GRP_CALL;
		ret |= d->groups[g] == CS_GRP_RET;
		far |= d->groups[g] == CS_GRP_INT || d->groups[g] == CS_GRP_IRET;
		rel |= d->groups[g] == CS_GRP_BRANCH_RELATIVE;
	}
	far |= in->id == X86_INS_SYSCALL || in->id == X86_INS_SYSENTER ||
	       in->id == X86_INS_SYSRET || in->id == X86_INS_SYSEXIT;
	if (ret)
		return WK_RETURN;
	if (far)
		return WK_FAR;
	if (!jump && !call)
		return WK_NONE;
	if (rel && d->x86.op_count == 1 && d->x86.operands[0].type == X86_OP_IMM) {
		*target = (uint64_t)d->x86.operands[0].imm;
		return call ? WK_CALL : in->id == X86_INS_JMP ? WK_JUMP : WK_COND;
	}
	return call ? WK_ICALL : WK_INDIRECT;
}

/* Block @b from @ip: ninsn 0 when its code is not all there. */
static void walk_build(csh cs, cs_insn *in, uint64_t ip, struct wblk *b)
{
	uint64_t a = ip;

	*b = (struct wblk){ .ip = ip };
	for (;;) {
		size_t avail;
		const uint8_t *m = walk_mem(a, &avail);

		if (!m || !cs_disasm_iter(cs, &m, &avail, &a, in)) {
			b->ninsn = 0;
			return;
		}
		b->ninsn++;
		b->last = in->address;
		b->len = (uint8_t)in->size;
		b->kind = (uint8_t)walk_kind(in, &b->target);
		if (b->kind != WK_NONE)
			return;
	}
}

/*
 * The instructions from @ip up to (not including) @to, where an
 * asynchronous event binds: only direct branches can lie between (the trace
 * before the event holds no more bits or targets for them). Returns them,
 * with *@ok false when @to is not reached that way: with @to 0, the
 * instructions up to and including the first other branch, where a
 * synchronous event (tracing disabled by a branch) binds.
 */
static uint64_t walk_to(csh cs, cs_insn *in, uint64_t ip, uint64_t to, uint64_t *stack,
			unsigned *sp, bool *ok)
{
	uint64_t n = 0;

	*ok = false;
	for (unsigned steps = 0; steps < 4096; steps++) {
		struct wblk b;
		uint64_t a = ip;

		if (ip == to) {
			*ok = true;
			return n;
		}
		walk_build(cs, in, ip, &b);
		if (!b.ninsn)
			return n;
		if (to >= b.ip && to <= b.last) {
			/* @to inside the block: count its instructions before it */
			while (a < to) {
				size_t avail;
				const uint8_t *m = walk_mem(a, &avail);

				if (!m || !cs_disasm_iter(cs, &m, &avail, &a, in))
					return n;
				n++;
			}
			*ok = a == to;
			return n;
		}
		n += b.ninsn;
		if (b.kind == WK_CALL)
			stack[(*sp)++ % WSTACK] = b.last + b.len;
		else if (b.kind != WK_JUMP)
			return n;
		ip = b.target;
	}
	return n;
}

/* The next IP after block @b, from the trace where it must; < 0: an error. */
static int walk_branch(struct pt_query_decoder *q, const struct wblk *b, uint64_t *stack,
		       unsigned *sp, uint64_t *ip, bool *enabled)
{
	int taken, st = 0;

	switch (b->kind) {
	case WK_COND:
		st = pt_qry_cond_branch(q, &taken);
		*ip = taken ? b->target : b->last + b->len;
		return st;
	case WK_CALL:
		stack[(*sp)++ % WSTACK] = b->last + b->len;
		*ip = b->target;
		return 0;
	case WK_JUMP:
		*ip = b->target;
		return 0;
	case WK_RETURN:
		if (*sp) {
			st = pt_qry_cond_branch(q, &taken);
			if (st >= 0) {
				*ip = stack[--(*sp) % WSTACK];
				return taken ? st : -pte_bad_retcomp;
			}
			if (st != -pte_bad_query)
				return st;
		}
		break; /* not compressed: the target is in a TIP */
	case WK_ICALL:
		stack[(*sp)++ % WSTACK] = b->last + b->len;
		break;
	default:
		break;
	}
	st = pt_qry_indirect_branch(q, ip);
	if (st >= 0 && (st & pts_ip_suppressed))
		*enabled = false;
	return st;
}

static void walk_qry(const struct pt_config *cfg, size_t len)
{
	struct wblk *cache = calloc((size_t)1 << WCACHE_BITS, sizeof(*cache));
	uint64_t insns = 0, blocks = 0, errors = 0, ip = 0, stack[WSTACK];
	struct pt_query_decoder *q = pt_qry_alloc_decoder(cfg);
	struct timespec t0;
	unsigned sp = 0;
	bool enabled = false, ok;
	cs_insn *in;
	csh cs;
	int st;

	if (!cache || !q || cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		die("cannot set the walk up", NULL);
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	in = cs_malloc(cs);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		st = pt_qry_sync_forward(q, &ip);
		if (st == -pte_eos)
			break;
		if (st < 0) {
			errors++;
			continue;
		}
		enabled = !(st & pts_ip_suppressed);
		sp = 0;
		for (;;) {
			struct wblk *b;

			while (st >= 0 && (st & pts_event_pending)) {
				struct pt_event ev;

				st = pt_qry_event(q, &ev, sizeof(ev));
				if (st < 0)
					break;
				if (ev.type == ptev_enabled) {
					ip = ev.variant.enabled.ip;
					enabled = true;
				} else if (ev.type == ptev_disabled) {
					/* at the next branch that direct ones do not resolve */
					if (enabled)
						insns += walk_to(cs, in, ip, 0, stack, &sp, &ok);
					enabled = false;
				} else if (ev.type == ptev_async_disabled && enabled) {
					insns += walk_to(cs, in, ip, ev.variant.async_disabled.at,
							 stack, &sp, &ok);
					enabled = false;
					if (!ok)
						st = -pte_event_ignored;
				} else if (ev.type == ptev_async_branch && enabled) {
					insns += walk_to(cs, in, ip, ev.variant.async_branch.from,
							 stack, &sp, &ok);
					ip = ev.variant.async_branch.to;
					if (!ok)
						st = -pte_event_ignored;
				} else if (ev.type == ptev_overflow) {
					ip = ev.variant.overflow.ip;
					enabled = true;
					sp = 0;
				}
			}
			if (st < 0 || (st & pts_eos) || !enabled)
				break;
			b = &cache[(ip * 0x9E3779B97F4A7C15ull) >> (64 - WCACHE_BITS)];
			if (b->ip != ip || !b->ninsn)
				walk_build(cs, in, ip, b);
			if (!b->ninsn) {
				st = -pte_nomap;
				break;
			}
			insns += b->ninsn;
			blocks++;
			st = walk_branch(q, b, stack, &sp, &ip, &enabled);
		}
		if (st >= 0 && (st & pts_eos))
			break;
		errors++;
	}
	report(&t0, insns, blocks, errors, len, " (query decoder and own walk)");
	cs_free(in, 1);
	cs_close(&cs);
	pt_qry_free_decoder(q);
	free(cache);
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
		} else if (!strcmp(a, "--walk")) {
			if (strcmp(v, "qry"))
				die("--walk takes qry", v);
			walk_mode = true;
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
	const char *pt = NULL;
	size_t len;
	int st;

	pt_config_init(&cfg);
	parse(argc, argv, &cfg, img, &pt);
	if (cfg.cpu.vendor && pt_cpu_errata(&cfg.errata, &cfg.cpu) < 0)
		die("unknown CPU for errata", NULL);
	cfg.begin = map_file(pt, &len);
	cfg.end = cfg.begin + len;
	if (walk_mode) {
		walk_qry(&cfg, len);
		pt_image_free(img);
		pt_iscache_free(iscache);
		return 0;
	}
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
	report(&t0, insns, blocks, errors, len, "");
	pt_blk_free_decoder(dec);
	pt_image_free(img);
	pt_iscache_free(iscache);
	return 0;
}

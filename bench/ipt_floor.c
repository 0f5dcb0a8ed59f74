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
		   size_t len, uint64_t ticks, uint64_t tick_sum, const char *what)
{
	struct timespec t1;
	double s;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
	printf("instructions %" PRIu64 " blocks %" PRIu64 " errors %" PRIu64
	       " seconds %.3f MB/s %.1f Minsn/s %.1f ticks %" PRIu64 " %016" PRIx64 "%s\n",
	       insns, blocks, errors, s, (double)len / 1e6 / s, (double)insns / 1e6 / s, ticks,
	       tick_sum, what);
}

/*
 * --walk qry: a prototype of a decoder core over libipt's query decoder.
 * The code is cut into blocks that end at the first branch (any jump,
 * call, return, interrupt or system call), each disassembled once
 * (capstone) into a direct-mapped cache; the walk goes from block to block,
 * asking the query decoder only where the code cannot tell: a conditional
 * branch's TNT bit, an indirect branch's target, and the events the
 * decoder has pending (tracing enabled or disabled, an asynchronous
 * branch, an overflow). As libipt's block decoder does (2.0.5): a
 * synchronous disable binds at the next branch that direct ones do not
 * resolve, an asynchronous disable or branch before the instruction it
 * names; a return takes a TNT bit when there is one (return compression:
 * popped from a stack of 64 returns, the oldest dropped when full, emptied
 * at a sync only), else a TIP; a tick event comes after a TNT bit or TIP
 * whose time differs from the last event's, at the branch. Not handled
 * yet: TSX, PTWRITE, power and VMCS events, paging events that bind to an
 * instruction, and code that is not 64-bit; its blocks end at every branch
 * and so are not libipt's (whose splits depend on its block cache).
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

/* The walk's state besides the IP. */
struct walk {
	struct pt_query_decoder *q;
	csh cs;
	cs_insn *in;
	uint64_t ret[WSTACK];      /* the return stack: a ring, the oldest dropped when full */
	unsigned top, depth;
	uint64_t last_tsc;         /* the time of the last event, tick included */
	uint64_t ticks, tick_sum;  /* the tick events, and a checksum of their IPs and times */
};

/* A near call at @at of @len bytes to @to: its return pushed, but for a call to the next instruction. */
static void walk_call(struct walk *w, uint64_t at, unsigned len, uint64_t to)
{
	if (to == at + len)
		return;
	w->ret[w->top] = at + len;
	w->top = (w->top + 1) % WSTACK;
	if (w->depth < WSTACK)
		w->depth++;
}

/*
 * After a TNT bit or a TIP for the branch at @ip: a tick event there when
 * the query decoder's time differs from the last event's (libipt's block
 * decoder with tick events on does the same).
 */
static void walk_tick(struct walk *w, uint64_t ip)
{
	uint64_t tsc = 0;
	uint32_t lost_mtc, lost_cyc;
	int r = pt_qry_time(w->q, &tsc, &lost_mtc, &lost_cyc);

	if ((r < 0 && r != -pte_no_time) || tsc == w->last_tsc)
		return;
	w->last_tsc = tsc;
	w->ticks++;
	w->tick_sum = (w->tick_sum * 1000003) ^ ip ^ (tsc << 1);
}

/*
 * The instructions from @ip up to (not including) @to, where an
 * asynchronous event binds: only direct branches can lie between (the trace
 * before the event holds no more bits or targets for them). Returns them,
 * with *@ok false when @to is not reached that way: with @to 0, the
 * instructions up to and including the first other branch, where a
 * synchronous event (tracing disabled by a branch) binds.
 */
static uint64_t walk_to(struct walk *w, uint64_t ip, uint64_t to, bool *ok)
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
		walk_build(w->cs, w->in, ip, &b);
		if (!b.ninsn)
			return n;
		if (to >= b.ip && to <= b.last) {
			/* @to inside the block: count its instructions before it */
			while (a < to) {
				size_t avail;
				const uint8_t *m = walk_mem(a, &avail);

				if (!m || !cs_disasm_iter(w->cs, &m, &avail, &a, w->in))
					return n;
				n++;
			}
			*ok = a == to;
			return n;
		}
		n += b.ninsn;
		if (b.kind == WK_CALL)
			walk_call(w, b.last, b.len, b.target);
		else if (b.kind != WK_JUMP)
			return n;
		ip = b.target;
	}
	return n;
}

/*
 * The next IP after block @b, from the trace where it must; < 0: an error.
 * A return takes a TNT bit when there is one (a compressed return: 1 pops
 * the return stack, 0 is an error), else a TIP, as libipt decides.
 */
static int walk_branch(struct walk *w, const struct wblk *b, uint64_t *ip, bool *enabled)
{
	int taken, st = 0;

	switch (b->kind) {
	case WK_COND:
		st = pt_qry_cond_branch(w->q, &taken);
		if (st >= 0)
			walk_tick(w, b->last);
		*ip = taken ? b->target : b->last + b->len;
		return st;
	case WK_CALL:
		walk_call(w, b->last, b->len, b->target);
		*ip = b->target;
		return 0;
	case WK_JUMP:
		*ip = b->target;
		return 0;
	case WK_RETURN:
		st = pt_qry_cond_branch(w->q, &taken);
		if (st >= 0) {
			walk_tick(w, b->last);
			if (!taken)
				return -pte_bad_retcomp;
			if (!w->depth)
				return -pte_retstack_empty;
			w->top = (w->top + WSTACK - 1) % WSTACK;
			w->depth--;
			*ip = w->ret[w->top];
			return st;
		}
		if (st != -pte_bad_query)
			return st;
		break; /* not compressed: the target is in a TIP */
	case WK_ICALL:
		walk_call(w, b->last, b->len, 0);
		break;
	default:
		break;
	}
	st = pt_qry_indirect_branch(w->q, ip);
	if (st >= 0 && (st & pts_ip_suppressed))
		*enabled = false;
	else if (st >= 0)
		walk_tick(w, b->last);
	return st;
}

/* The pending events, from status @st; returns the last status. */
static int walk_events(struct walk *w, int st, uint64_t *ip, bool *enabled, uint64_t *insns)
{
	bool ok = true;

	while (st >= 0 && (st & pts_event_pending)) {
		struct pt_event ev;

		st = pt_qry_event(w->q, &ev, sizeof(ev));
		if (st < 0)
			break;
		w->last_tsc = ev.tsc;
		if (ev.type == ptev_enabled) {
			*ip = ev.variant.enabled.ip;
			*enabled = true;
		} else if (ev.type == ptev_disabled) {
			/* at the next branch that direct ones do not resolve */
			if (*enabled)
				*insns += walk_to(w, *ip, 0, &ok);
			*enabled = false;
			ok = true;
		} else if (ev.type == ptev_async_disabled && *enabled) {
			*insns += walk_to(w, *ip, ev.variant.async_disabled.at, &ok);
			*enabled = false;
		} else if (ev.type == ptev_async_branch && *enabled) {
			*insns += walk_to(w, *ip, ev.variant.async_branch.from, &ok);
			*ip = ev.variant.async_branch.to;
		} else if (ev.type == ptev_overflow) {
			*ip = ev.variant.overflow.ip;
			*enabled = true;
		}
		if (!ok)
			return -pte_event_ignored;
	}
	return st;
}

static void walk_qry(const struct pt_config *cfg, size_t len)
{
	struct wblk *cache = calloc((size_t)1 << WCACHE_BITS, sizeof(*cache));
	uint64_t insns = 0, blocks = 0, errors = 0, ip = 0;
	struct walk w = { .q = pt_qry_alloc_decoder(cfg) };
	struct timespec t0;
	bool enabled = false;
	int st;

	if (!cache || !w.q || cs_open(CS_ARCH_X86, CS_MODE_64, &w.cs) != CS_ERR_OK)
		die("cannot set the walk up", NULL);
	cs_option(w.cs, CS_OPT_DETAIL, CS_OPT_ON);
	w.in = cs_malloc(w.cs);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		st = pt_qry_sync_forward(w.q, &ip);
		if (st == -pte_eos)
			break;
		if (st < 0) {
			errors++;
			continue;
		}
		enabled = !(st & pts_ip_suppressed);
		w.top = w.depth = 0;
		w.last_tsc = 0;
		for (;;) {
			struct wblk *b;

			st = walk_events(&w, st, &ip, &enabled, &insns);
			if (st < 0 || (st & pts_eos) || !enabled)
				break;
			b = &cache[(ip * 0x9E3779B97F4A7C15ull) >> (64 - WCACHE_BITS)];
			if (b->ip != ip || !b->ninsn)
				walk_build(w.cs, w.in, ip, b);
			if (!b->ninsn) {
				st = -pte_nomap;
				break;
			}
			insns += b->ninsn;
			blocks++;
			st = walk_branch(&w, b, &ip, &enabled);
		}
		if (st >= 0 && (st & pts_eos))
			break;
		errors++;
	}
	report(&t0, insns, blocks, errors, len, w.ticks, w.tick_sum, " (query decoder and own walk)");
	cs_free(w.in, 1);
	cs_close(&w.cs);
	pt_qry_free_decoder(w.q);
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
	report(&t0, insns, blocks, errors, len, ticks, tick_sum, "");
	pt_blk_free_decoder(dec);
	pt_image_free(img);
	pt_iscache_free(iscache);
	return 0;
}

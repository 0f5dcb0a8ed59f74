// SPDX-License-Identifier: MIT
/* Formatters above the decoder interface: call traces, insns, branches, stats. */
#include <capstone/capstone.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/image.h"
#include "decoders/decoder.h"
#include "output/output.h"
#include "base/util.h"
#include "tracefile/tfile.h"

/*
 * Output is gathered in a buffer that flushes when OUTBUF_SIZE bytes would
 * not fit; its memory starts at OUTBUF_FIRST bytes and grows as the bytes
 * waiting need it (a view that prints little never pays for the whole size).
 */
#define OUTBUF_SIZE (1u << 20)
#define OUTBUF_FIRST (1u << 12)
#define STACK_MAX 4096
#define DSO_PAD 50

struct thr {
	int tid;
	uint64_t *stk;            /* return addresses, [0] outermost */
	uint32_t n, cap;
	bool active;              /* --symbol: under the function */
	bool by_ip;               /* activated by a trace begin inside it */
	uint32_t adepth;
	bool in_syscall;          /* the last trace end was a syscall */
	bool ended;               /* tracing has ended at least once */
	bool paused;              /* the last trace end was named a pause */
	uint64_t end_time;        /* time of the last trace end */
	uint32_t plt_depth;       /* --no-plt: the depth of a call through a PLT
				     stub whose line waits for its target; 0: none */
	struct prec_tev plt_ev;   /* that call */
	struct prec_loc plt_from, plt_stub; /* where it was made, the stub */
	bool exec_known;          /* next_exec is set */
	bool restarted;           /* the stack restarted at this event (for taps) */
	uint64_t next_exec;       /* the time of the thread's next exec */
};

struct sstats {
	uint64_t insns, blocks, branches, calls, rets, begins, ends, errors, gaps, lost,
		overflows, switches, syscalls, interrupts, pauses;
	bool skipped;             /* not decoded: filtered out by --tid/--pid/--cpu */
};

struct trig {
	uint64_t time;
	uint64_t ip;              /* where the sample was taken */
	int tid, cpu, ev;
	enum prec_evkind kind;
};

struct prec_fmt_ctx {
	struct prec_session *s;
	struct prec_images *im;
	struct prec_output_opts o;
	FILE *out;
	char *buf;
	size_t len;
	size_t cap;               /* bytes allocated at buf, up to OUTBUF_SIZE */
	uint64_t nflush;          /* flushes so far (a piece written since is in buf whole) */
	/* the last line prefix written, for the next line of the same thread and time */
	struct {
		int tid, cpu;
		uint64_t time;
		size_t n;             /* 0: none */
		char b[96];
	} pfx;
	/* the last object column written ("(%-*.*s)\t"), for the next of the same object */
	struct {
		const char *dso;
		size_t n, dlen;       /* dlen: the bytes of dso in it */
		char b[DSO_PAD + 4];
	} dcol;
	int werr;
	bool plt_hid;             /* --no-plt folded the current event's line away */
	int spacing;
	bool show_cpu;
	bool time_filter;
	bool timed;               /* time 0 is a time (else: unknown) */
	bool symbol_ran;          /* --symbol: the function ran at least once */
	bool ev_vis;              /* --symbol: the last event is under the function */
	struct {
		const char *dso;
		bool hidden;
	} hide_c;                 /* --hide-dso: the last object asked about */

	struct thr *thr;
	size_t nthr, cthr, last;

	struct sstats *st;        /* per stream */
	size_t nst;
	uint64_t *trig_count;     /* per event */
	struct trig *trigs;
	size_t ntrigs;

	csh cs;
	bool cs_ok;
	bool cs_x86;              /* the mode follows the blocks' (16/32/64) */
	uint8_t cs_mode;          /* the mode capstone is in, in bits */
	bool cs_tried;            /* opened for a signal's instruction (or it failed) */
	int trig_last;            /* the trigger of the last trace begin/end */

	/*
	 * Caches of the lookups every line makes: a thread's name and a
	 * process's address space, each with the times over which the
	 * session gives the same answer, and symbols by (space, address).
	 */
	struct {
		int tid;
		uint64_t from, until;
		const char *comm;
	} comm_c;
	struct prec_aspace_cache as_c;
	struct loc_ent *locs;     /* 1 << loc_bits entries, made at the first lookup */
	unsigned loc_bits;        /* 0: none yet */
	bool loc_failed;          /* no room: lookups go uncached */
	size_t loc_misses;        /* while smaller than LOC_CACHE_BITS */
	/*
	 * --insn-trace: an instruction's line after its prefix, by (space,
	 * address, mode): the code of a space does not change, and hot loops
	 * print the same instructions over and over.
	 */
	struct insn_ent *insns;   /* 1 << INSN_CACHE_BITS entries, or NULL */
	cs_insn *cs_insn;         /* capstone's answer, made once */
};

#define INSN_CACHE_BITS 16 /* 12 MiB at most (pages are touched as used) */
struct insn_ent {
	const struct prec_aspace *as;  /* NULL: empty */
	uint64_t ip;
	uint8_t mode, size;       /* the instruction's length */
	uint16_t len;             /* of text */
	char text[164];           /* longer lines are not kept */
};

/*
 * The location cache: 1 << LOC_CACHE_FIRST entries, made at the first lookup,
 * then 1 << LOC_CACHE_BITS (emptied) once it has missed LOC_CACHE_GROW times.
 * The answers do not depend on its size.
 */
#define LOC_CACHE_FIRST 8
#define LOC_CACHE_BITS 12
#define LOC_CACHE_GROW 1024

struct loc_ent {
	const struct prec_aspace *as;  /* NULL: empty */
	uint64_t addr;
	struct prec_loc loc;
};

const char *prec_hw_kind_name(int kind)
{
	static const char *const names[] = {
		[PREC_HW_PTWRITE] = "ptwrite",	 [PREC_HW_MWAIT] = "mwait",
		[PREC_HW_PWRE] = "pwre",	 [PREC_HW_PWRX] = "pwrx",
		[PREC_HW_EXSTOP] = "exstop",	 [PREC_HW_CBR] = "cbr",
		[PREC_HW_PAGING] = "paging",	 [PREC_HW_VMCS] = "vmcs",
		[PREC_HW_TSX_BEGIN] = "tx begin", [PREC_HW_TSX_COMMIT] = "tx commit",
	};

	return kind > 0 && (size_t)kind < PREC_ARRAY_SIZE(names) ? names[kind] : "?";
}

const char *prec_br_kind_name(enum prec_br_kind k)
{
	switch (k) {
	case PREC_BR_CALL:
		return "call";
	case PREC_BR_RETURN:
		return "return";
	case PREC_BR_JUMP:
		return "jmp";
	case PREC_BR_COND:
		return "jcc";
	case PREC_BR_INDIRECT:
		return "ind jmp";
	case PREC_BR_SYSCALL:
		return "syscall";
	case PREC_BR_SYSRET:
		return "sysret";
	case PREC_BR_FAR:
		return "far";
	case PREC_BR_INTERRUPT:
		return "hw int";
	case PREC_BR_TX_ABORT:
		return "tx abrt";
	default:
		return "none";
	}
}

void prec_output_opts_init(struct prec_output_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->pid = o->tid = o->cpu = -1;
	o->show_cpu = -1;
}

/* ---- buffered output ---- */

static int flush_out(struct prec_fmt_ctx *f)
{
	if (f->werr)
		return f->werr;
	if (f->len && fwrite(f->buf, 1, f->len, f->out) != f->len)
		f->werr = errno == EPIPE ? -EPIPE : -EIO;
	f->len = 0;
	f->nflush++;
	return f->werr;
}

/* Makes room for @n more bytes (with len + n <= OUTBUF_SIZE); -ENOMEM: none. */
static int grow_out(struct prec_fmt_ctx *f, size_t n)
{
	size_t cap = f->cap;
	char *nb;

	while (cap < f->len + n)
		cap *= 16; /* few copies: 4 KiB, 64 KiB, 1 MiB */
	if (cap > OUTBUF_SIZE)
		cap = OUTBUF_SIZE;
	if (cap == f->cap)
		return 0;
	nb = realloc(f->buf, cap);
	if (!nb)
		return -ENOMEM;
	f->buf = nb;
	f->cap = cap;
	return 0;
}

static int out(struct prec_fmt_ctx *f, const char *fmt, ...) prec_printf(2, 3);
static int out(struct prec_fmt_ctx *f, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (f->werr)
		return 0;
	va_start(ap, fmt);
	n = vsnprintf(f->buf + f->len, f->cap - f->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return 0;
	if ((size_t)n >= f->cap - f->len) {
		/* full only when OUTBUF_SIZE is: the flushes fall where they always did */
		if ((size_t)n >= OUTBUF_SIZE - f->len && flush_out(f))
			return 0;
		if (grow_out(f, PREC_MIN((size_t)n + 1, OUTBUF_SIZE - f->len))) {
			f->werr = -ENOMEM;
			return 0;
		}
		va_start(ap, fmt);
		n = vsnprintf(f->buf + f->len, f->cap - f->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			return 0;
		if ((size_t)n >= f->cap - f->len)
			n = (int)(f->cap - f->len - 1);
	}
	f->len += (size_t)n;
	return n;
}

/*
 * Appending without printf: the pieces of the lines printed per event
 * (prefix, call lines). Each gives the same bytes as the printf format noted.
 */
static void put_slow(struct prec_fmt_ctx *f, const char *p, size_t n)
{
	if (f->werr)
		return;
	if (n > OUTBUF_SIZE - f->len && flush_out(f))
		return;
	if (n >= OUTBUF_SIZE)
		n = OUTBUF_SIZE - 1;
	if (n > f->cap - f->len && grow_out(f, n)) {
		f->werr = -ENOMEM;
		return;
	}
	memcpy(f->buf + f->len, p, n);
	f->len += n;
}

/* The common case first: room in the buffer (no flush where put_slow() would not flush). */
static inline void put(struct prec_fmt_ctx *f, const char *p, size_t n)
{
	if (n <= f->cap - f->len && !f->werr) {
		memcpy(f->buf + f->len, p, n);
		f->len += n;
		return;
	}
	put_slow(f, p, n);
}

static void put_spaces(struct prec_fmt_ctx *f, size_t n)
{
	static const char sp[64] = "                                                                ";

	while (n) {
		size_t k = PREC_MIN(n, sizeof(sp));

		put(f, sp, k);
		n -= k;
	}
}

/* "%*s" (@left: "%-*s") of the first @n bytes of @p */
static void put_pad(struct prec_fmt_ctx *f, const char *p, size_t n, size_t width, bool left)
{
	size_t pad = n < width ? width - n : 0;

	/* straight into the buffer where it fits: this ran for every field of --events */
	if (n + pad <= f->cap - f->len && !f->werr) {
		char *w = f->buf + f->len;

		memset(w + (left ? n : 0), ' ', pad);
		memcpy(w + (left ? 0 : pad), p, n);
		f->len += n + pad;
		return;
	}
	if (!left)
		put_spaces(f, pad);
	put(f, p, n);
	if (left)
		put_spaces(f, pad);
}

/* "%*d" (@zero: "%0*d") of @v */
static void put_dec(struct prec_fmt_ctx *f, int64_t v, size_t width, bool zero)
{
	char b[24], *e = b + sizeof(b), *p = e;
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	while (zero && (size_t)(e - p) < width - (v < 0))
		*--p = '0';
	if (v < 0)
		*--p = '-';
	put_pad(f, p, (size_t)(e - p), width, false);
}

/* The two hex digits of each byte value. */
static const char hex_pairs[513] =
	"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
	"404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
	"606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
	"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
	"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
	"c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
	"e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";

/* The number of hex digits of @v (1 for 0). */
static inline unsigned hex_len(uint64_t v)
{
	return v ? (67 - (unsigned)__builtin_clzll(v)) / 4 : 1;
}

/* Writes the @nd (hex_len()) hex digits of @v to end before @end, two a step. */
static inline void hex_digits(char *end, uint64_t v, unsigned nd)
{
	for (; nd >= 2; nd -= 2, v >>= 8) {
		end -= 2;
		memcpy(end, hex_pairs + 2 * (v & 0xff), 2);
	}
	if (nd)
		end[-1] = hex_pairs[2 * (v & 15) + 1];
}

/* "%*" PRIx64 of @v */
static void put_hex(struct prec_fmt_ctx *f, uint64_t v, size_t width)
{
	char b[16];
	unsigned nd = hex_len(v);

	hex_digits(b + sizeof(b), v, nd);
	put_pad(f, b + sizeof(b) - nd, nd, width, false);
}

/* "%#" PRIx64 of @v: 0x before its digits, unless it is 0 */
static void put_hex0x(struct prec_fmt_ctx *f, uint64_t v)
{
	unsigned nd = hex_len(v);
	size_t n = nd + (v ? 2 : 0);
	char *w;

	if (n > f->cap - f->len || f->werr) {
		if (v)
			put(f, "0x", 2);
		put_hex(f, v, 0);
		return;
	}
	/* in place: the addresses of every --events line */
	w = f->buf + f->len;
	f->len += n;
	if (v) {
		*w++ = '0';
		*w++ = 'x';
	}
	hex_digits(w + nd, v, nd);
}

/* ---- threads and shadow stacks ---- */

static struct thr *thread_get(struct prec_fmt_ctx *f, int tid)
{
	size_t i;

	if (f->last < f->nthr && f->thr[f->last].tid == tid)
		return &f->thr[f->last];
	for (i = 0; i < f->nthr; i++)
		if (f->thr[i].tid == tid) {
			f->last = i;
			return &f->thr[i];
		}
	if (f->nthr == f->cthr) {
		size_t nc = f->cthr ? f->cthr * 2 : 16;
		struct thr *n = realloc(f->thr, nc * sizeof(*n));

		if (!n)
			return NULL;
		f->thr = n;
		f->cthr = nc;
	}
	memset(&f->thr[f->nthr], 0, sizeof(*f->thr));
	f->thr[f->nthr].tid = tid;
	f->last = f->nthr;
	return &f->thr[f->nthr++];
}

static void stk_push(struct thr *t, uint64_t ret)
{
	if (t->n == t->cap) {
		if (t->cap >= STACK_MAX) {
			/* Deep recursion: forget the outermost frame. */
			memmove(t->stk, t->stk + 1, (t->n - 1) * sizeof(*t->stk));
			t->n--;
			if (t->adepth)
				t->adepth--;
			if (t->plt_depth > 1)
				t->plt_depth--;
		} else {
			uint32_t nc = t->cap ? t->cap * 2 : 64;
			uint64_t *n = realloc(t->stk, nc * sizeof(*n));

			if (!n)
				return;
			t->stk = n;
			t->cap = nc;
		}
	}
	t->stk[t->n++] = ret;
}

/* Pops down to the frame returning to @to; false when none matches. */
static bool stk_pop_to(struct thr *t, uint64_t to)
{
	uint32_t i;

	if (!to)
		return false;
	for (i = t->n; i > 0; i--)
		if (t->stk[i - 1] == to) {
			t->n = i - 1;
			return true;
		}
	return false;
}

int prec_fmt_depth(const struct prec_fmt_ctx *f, int tid)
{
	size_t i;

	for (i = 0; i < f->nthr; i++)
		if (f->thr[i].tid == tid)
			return (int)f->thr[i].n;
	return 0;
}

/* ---- pieces of a line ---- */

/*
 * The time at which to look up a thread's address space and name. The
 * decoders report 0 before the first timestamp: in a timed trace that is its
 * beginning (the decoder decodes it with the images of then), in an untimed
 * one it is unknown and the last state is the best guess.
 */
static uint64_t ctx_time(const struct prec_fmt_ctx *f, uint64_t time)
{
	return time || f->timed ? time : UINT64_MAX;
}

/* prec_images_aspace(), through the cache */
static struct prec_aspace *aspace_at(struct prec_fmt_ctx *f, int pid, uint64_t time)
{
	return prec_images_aspace_cached(f->im, &f->as_c, pid, time);
}

/*
 * Makes the location cache, or grows it to its full size once lookups have
 * missed LOC_CACHE_GROW times. Without room for it, lookups go uncached.
 */
static void loc_cache_size(struct prec_fmt_ctx *f)
{
	unsigned bits = f->loc_bits ? LOC_CACHE_BITS : LOC_CACHE_FIRST;
	struct loc_ent *e;

	e = calloc((size_t)1 << bits, sizeof(*e));
	f->loc_misses = 0;
	if (!e) {
		if (!f->locs)
			f->loc_failed = true;
		return;
	}
	free(f->locs);
	f->locs = e;
	f->loc_bits = bits;
}

/* prec_aspace_resolve(), through the cache (the answer depends on nothing else) */
static void resolve_in(struct prec_fmt_ctx *f, struct prec_aspace *as, uint64_t addr,
		       struct prec_loc *loc)
{
	struct loc_ent *e = NULL;

	if (!f->locs && !f->loc_failed)
		loc_cache_size(f);
	if (f->locs) {
		size_t h = (size_t)(((addr ^ (addr >> 21)) ^ (uintptr_t)as) *
				    0x9e3779b97f4a7c15ull >> (64 - f->loc_bits));

		e = &f->locs[h];
		if (e->as == as && e->addr == addr) {
			*loc = e->loc;
			return;
		}
	}
	prec_aspace_resolve(as, addr, loc);
	if (e) {
		if (f->loc_bits < LOC_CACHE_BITS && ++f->loc_misses > LOC_CACHE_GROW) {
			loc_cache_size(f);
			return;
		}
		e->as = as;
		e->addr = addr;
		e->loc = *loc;
	}
}

static void resolve(struct prec_fmt_ctx *f, int pid, uint64_t time, uint64_t addr,
		    struct prec_loc *loc)
{
	resolve_in(f, aspace_at(f, pid, time), addr, loc);
}

/* prec_session_comm(), through the cache */
static const char *comm_at(struct prec_fmt_ctx *f, int tid, uint64_t time)
{
	if (!f->comm_c.comm || f->comm_c.tid != tid || time < f->comm_c.from ||
	    time >= f->comm_c.until) {
		f->comm_c.comm = prec_session_comm_span(f->s, tid, time, &f->comm_c.from,
							&f->comm_c.until);
		f->comm_c.tid = tid;
	}
	return f->comm_c.comm;
}

/*
 * Keeps the bytes written since @start (with @nflush flushes then) in @b
 * (@cap bytes) when they are all in the buffer still: their length, or 0.
 */
static size_t keep_piece(const struct prec_fmt_ctx *f, size_t start, uint64_t nflush, char *b,
			 size_t cap)
{
	size_t n = f->len - start;

	if (f->werr || f->nflush != nflush || f->len < start || n > cap)
		return 0;
	memcpy(b, f->buf + start, n);
	return n;
}

static void prefix_put(struct prec_fmt_ctx *f, int tid, int cpu, uint64_t time);

/* "%16s %7d [%03d] %5lu.%09lu: ", the same as the last line's for the same thread and time */
static void prefix(struct prec_fmt_ctx *f, int tid, int cpu, uint64_t time)
{
	size_t start = f->len;
	uint64_t nflush = f->nflush;

	if (f->pfx.n && f->pfx.tid == tid && f->pfx.cpu == cpu && f->pfx.time == time) {
		put(f, f->pfx.b, f->pfx.n);
		return;
	}
	prefix_put(f, tid, cpu, time);
	f->pfx.tid = tid;
	f->pfx.cpu = cpu;
	f->pfx.time = time;
	f->pfx.n = keep_piece(f, start, nflush, f->pfx.b, sizeof(f->pfx.b));
}

static void prefix_put(struct prec_fmt_ctx *f, int tid, int cpu, uint64_t time)
{
	const char *comm = tid >= 0 ? comm_at(f, tid, ctx_time(f, time)) : "";

	if (*comm) {
		put_pad(f, comm, strlen(comm), 16, false);
	} else {
		char c[24];
		int n = snprintf(c, sizeof(c), ":%d", tid);

		put_pad(f, c, (size_t)n, 16, false);
	}
	put(f, " ", 1);
	put_dec(f, tid, 7, false);
	put(f, " ", 1);
	if (f->show_cpu && cpu >= 0) {
		put(f, "[", 1);
		put_dec(f, cpu, 3, true);
		put(f, "] ", 2);
	}
	put_dec(f, (int64_t)(time / 1000000000), 5, false);
	put(f, ".", 1);
	put_dec(f, (int64_t)(time % 1000000000), 9, true);
	put(f, ": ", 2);
}

static void flags_col(struct prec_fmt_ctx *f, const char *name)
{
	/* "  %-21s " */
	if (f->o.fmt == PREC_FMT_CALL_RET_TRACE) {
		put(f, "  ", 2);
		put_pad(f, name, strlen(name), 21, true);
		put(f, " ", 1);
	}
}

/*
 * The indentation for a call depth: four columns a level, as perf's
 * callindent, up to INDENT_MAX levels; deeper frames line up there with
 * "[+N] " before the name, N the levels beyond, so that a line stays
 * readable and its length does not grow with the depth (ptdump(1)).
 * Returns the columns written.
 */
#define INDENT_MAX 40

static int indent(struct prec_fmt_ctx *f, uint32_t depth)
{
	char b[16], *e = b + sizeof(b), *p = e;
	uint32_t beyond;

	/* "%*s" of depth * 4 columns, or "%*s[+%u] " past INDENT_MAX */
	if (depth <= INDENT_MAX) {
		put_spaces(f, (size_t)depth * 4);
		return (int)depth * 4;
	}
	put_spaces(f, INDENT_MAX * 4);
	beyond = depth - INDENT_MAX;
	*--p = ' ';
	*--p = ']';
	do {
		*--p = (char)('0' + beyond % 10);
		beyond /= 10;
	} while (beyond);
	*--p = '+';
	*--p = '[';
	put(f, p, (size_t)(e - p));
	return INDENT_MAX * 4 + (int)(e - p);
}

/*
 * "(dso)\t" + indent + name; returns the width after the tab. The name is
 * @text if not NULL, else the symbol of @loc, else the object and offset
 * ("gzip+0x3f10"), else @addr.
 */
static int dso_name_col(struct prec_fmt_ctx *f, const char *dso, uint32_t depth,
			const struct prec_loc *loc, uint64_t addr, const char *text)
{
	const char *name = text ? text : loc->sym ? loc->sym->name : NULL;
	const char *d = dso ? dso : "[unknown]";
	char buf[256];
	size_t n;
	int w;

	/* "(%-*.*s)\t" with DSO_PAD, DSO_PAD - 1; the same as the last line's for the same object */
	if (f->dcol.n && f->dcol.dso == d && !memcmp(d, f->dcol.b + 1, f->dcol.dlen) &&
	    (f->dcol.dlen == DSO_PAD - 1 || !d[f->dcol.dlen])) {
		put(f, f->dcol.b, f->dcol.n);
	} else {
		size_t start = f->len;
		uint64_t nflush = f->nflush;

		f->dcol.dlen = strnlen(d, DSO_PAD - 1);
		put(f, "(", 1);
		put_pad(f, d, f->dcol.dlen, DSO_PAD, true);
		put(f, ")\t", 2);
		f->dcol.dso = d;
		f->dcol.n = keep_piece(f, start, nflush, f->dcol.b, sizeof(f->dcol.b));
	}
	if (!name && prec_loc_objoff(loc, buf, sizeof(buf)))
		name = buf;
	if (name) {
		w = indent(f, depth);
		n = strlen(name);
		put(f, name, n);
		return w + (int)n;
	}
	if (addr) {
		w = indent(f, depth);
		put_hex(f, addr, 16);
		return w + 16;
	}
	return 0;
}

/* dso_name_col() padded to a sticky width like perf's callindent. */
static void callindent(struct prec_fmt_ctx *f, const char *dso, uint32_t depth,
		       const struct prec_loc *loc, uint64_t addr, const char *text)
{
	int len = dso_name_col(f, dso, depth, loc, addr, text);
	if (len > f->spacing || (len && len < f->spacing - 52))
		f->spacing = (len + 4 + 31) / 32 * 32;
	if (len < f->spacing)
		put_spaces(f, (size_t)(f->spacing - len));
	put(f, "\n", 1);
}

/* "%s+0x%" PRIx64 " (%s)" of the symbol and dso, "[unknown]" for either unknown */
static void symoff(struct prec_fmt_ctx *f, const struct prec_loc *loc, uint64_t addr)
{
	const char *dso = loc->dso ? loc->dso : "[unknown]";

	if (loc->sym) {
		put(f, loc->sym->name, strlen(loc->sym->name));
		put(f, "+0x", 3);
		put_hex(f, loc->symoff, 0);
	} else {
		put(f, "[unknown]", 9);
	}
	put(f, " (", 2);
	put(f, dso, strlen(dso));
	put(f, ")", 1);
	(void)addr;
}

/* ---- filters ---- */

static bool in_filter(const struct prec_fmt_ctx *f, const struct prec_tev *ev)
{
	if (f->o.pid >= 0 && ev->pid != f->o.pid)
		return false;
	if (f->o.tid >= 0 && ev->tid != f->o.tid)
		return false;
	if (f->o.cpu >= 0 && ev->cpu != f->o.cpu)
		return false;
	if (f->time_filter) {
		if ((!ev->time && !f->timed) || ev->time < f->o.time_start ||
		    (f->o.time_end && ev->time > f->o.time_end))
			return false;
	}
	return true;
}

/* --symbol NAME: a function name or a glob pattern (fnmatch(3)). */
static bool sym_match(const char *pattern, const char *name)
{
	return !strcmp(pattern, name) ||
	       (strpbrk(pattern, "*?[") && fnmatch(pattern, name, 0) == 0);
}

static bool sym_is(const struct prec_fmt_ctx *f, const struct prec_loc *loc)
{
	return f->o.symbol && loc->sym && sym_match(f->o.symbol, loc->sym->name);
}

/* --symbol: the thread is now under the function, from call depth @depth. */
static void sym_enter(struct prec_fmt_ctx *f, struct thr *t, bool by_ip, uint32_t depth)
{
	t->active = true;
	t->by_ip = by_ip;
	t->adepth = depth;
	f->symbol_ran = true;
}

static bool visible(const struct prec_fmt_ctx *f, const struct thr *t,
		    const struct prec_tev *ev)
{
	if (!in_filter(f, ev))
		return false;
	return !f->o.symbol || (t && t->active);
}

bool prec_plt_stub(const char *name)
{
	size_t n = strlen(name);

	return (n >= 4 && !strcmp(name + n - 4, "@plt")) || !strncmp(name, ".plt", 4);
}

bool prec_plt_fold(const char *dso, const char *name)
{
	const char *sl = strrchr(dso, '/'), *base = sl ? sl + 1 : dso;

	return prec_plt_stub(name) || !strncmp(name, "_dl_runtime_resolve", 19) ||
	       !strcmp(name, "_dl_fixup") || !strncmp(base, "ld-linux", 8) ||
	       !strncmp(base, "ld.so", 5);
}

/* --hide-dso: whether the object of @loc is one to leave out (by the last answer). */
static bool hidden_obj(struct prec_fmt_ctx *f, const struct prec_loc *loc)
{
	const char *dso = loc->dso ? loc->dso : "[unknown]";

	if (!f->o.hide)
		return false;
	if (dso != f->hide_c.dso) {
		f->hide_c.dso = dso;
		f->hide_c.hidden = !regexec(f->o.hide, dso, 0, NULL, 0);
	}
	return f->hide_c.hidden;
}

/*
 * Whether a call, return or system call line at @depth is shown: not deeper
 * than --max-depth, and not one of a PLT stub's or the resolver's while the
 * stub's call waits for its target (--no-plt).
 */
static bool line_shown(const struct prec_fmt_ctx *f, const struct thr *t, uint32_t depth)
{
	if (f->o.max_depth && depth > (uint32_t)f->o.max_depth)
		return false;
	return !t->plt_depth || depth <= t->plt_depth;
}

/*
 * The trigger sample that names a trace begin/end at @time on @tid, or -1:
 * of @kind, on the same thread (or CPU), the closest in time within the
 * window. Only samples at or after @after count (the begin that ends a
 * syscall is a resume only if a resume fired since the syscall started).
 *
 * With @ip, the sample must also have been taken there: a trap of a user
 * address (uprobe, uretprobe, a counter of user instructions) resumes
 * tracing where it interrupted the thread (the TIP.PGE target) and pauses
 * it there (the FUP). Without that check, a trap that found tracing already
 * in the state it asks for, which the trace shows as an end and a begin at
 * its own IP, would lend its name to the nearest real pause or resume. A
 * sample at a kernel address (a tracepoint, a kprobe) matches by time only.
 * With @after_ip the sample is the one of a trap in a system call (at
 * sys_enter), whose user IP is that of the next instruction: within 4 bytes
 * after @ip (the syscall instruction; 2 bytes on x86, 4 on Arm).
 */
static int find_trigger(const struct prec_fmt_ctx *f, const struct prec_tev *ev,
			enum prec_evkind kind, uint64_t after, uint64_t window, uint64_t ip,
			bool after_ip)
{
	uint64_t w = window ? window : f->o.trigger_window ? f->o.trigger_window : 100000;
	uint64_t best = UINT64_MAX;
	size_t lo = 0, hi = f->ntrigs, i;
	int found = -1;

	if (!ev->time)
		return -1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->trigs[mid].time + w < ev->time)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < f->ntrigs && f->trigs[i].time <= ev->time + w; i++) {
		const struct trig *t = &f->trigs[i];
		uint64_t d = t->time > ev->time ? t->time - ev->time : ev->time - t->time;

		if (t->kind != kind || t->time < after)
			continue;
		if (ev->tid >= 0 ? t->tid != ev->tid : t->cpu != ev->cpu)
			continue;
		if (ip && !prec_is_kernel_addr(t->ip) &&
		    (after_ip ? t->ip <= ip || t->ip - ip > 4 : t->ip != ip))
			continue;
		if (d < best) {
			best = d;
			found = t->ev;
		}
	}
	return found;
}

/* ---- per-format printing ---- */

static void print_call_line(struct prec_fmt_ctx *f, const struct prec_tev *ev,
			    const char *flag, uint32_t depth, const struct prec_loc *dso_loc,
			    const struct prec_loc *name_loc, uint64_t addr, int trig)
{
	prefix(f, ev->tid, ev->cpu, ev->time);
	flags_col(f, flag);
	if (trig >= 0) {
		/* Keep the callindent column; the trigger goes after the name. */
		const struct prec_evdesc *d = prec_session_event(f->s, trig);

		dso_name_col(f, dso_loc->dso, depth, name_loc, addr, NULL);
		out(f, "  (%s by %s)\n", !strcmp(flag, "tr end") ? "paused" : "resumed",
		    d ? d->name : "?");
		return;
	}
	callindent(f, dso_loc->dso, depth, name_loc, addr, NULL);
}

/*
 * --no-plt: writes the waiting line of @t's call through a PLT stub as a
 * call of the function at @addr (@loc), unless its object is hidden.
 */
static void plt_line(struct prec_fmt_ctx *f, struct thr *t, const struct prec_loc *loc,
		     uint64_t addr)
{
	uint32_t depth = t->plt_depth;

	t->plt_depth = 0;
	if (f->o.tap && f->o.tap->plt_call) {
		int err = f->o.tap->plt_call(f->o.tap->arg, &t->plt_ev, addr, (int)depth);

		if (err && !f->werr)
			f->werr = err;
		return;
	}
	if (!hidden_obj(f, loc))
		print_call_line(f, &t->plt_ev, "call", depth, &t->plt_from, loc, addr, -1);
}

/* --no-plt: the stub's frame is gone and its target never showed: the stub's line. */
static void plt_popped(struct prec_fmt_ctx *f, struct thr *t)
{
	if (t->plt_depth && t->n < t->plt_depth)
		plt_line(f, t, &t->plt_stub, t->plt_ev.u.branch.to);
}

/*
 * --no-plt: a jump in the frame of a stub's waiting call; the first out of
 * the lazy-binding path reaches the function the stub serves.
 */
static void plt_jump(struct prec_fmt_ctx *f, struct thr *t, const struct prec_tev *ev)
{
	struct prec_loc loc;

	resolve(f, ev->pid, ctx_time(f, ev->time), ev->u.branch.to, &loc);
	if (!prec_plt_fold(loc.dso ? loc.dso : "[unknown]", loc.sym ? loc.sym->name : "[unknown]"))
		plt_line(f, t, &loc, ev->u.branch.to);
}

/* "1,048,576": @n with its digits in groups of three. */
static void group_digits(char *buf, size_t size, uint64_t n)
{
	char d[24];
	size_t len = (size_t)snprintf(d, sizeof(d), "%" PRIu64, n), i, o = 0;

	for (i = 0; i < len && o + 2 < size; i++) {
		if (i && (len - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = d[i];
	}
	buf[o] = 0;
}

static size_t time_text(char *buf, size_t size, uint64_t t, bool known)
{
	if (!known)
		return (size_t)snprintf(buf, size, "?");
	return (size_t)snprintf(buf, size, "%" PRIu64 ".%09" PRIu64, t / 1000000000,
				t % 1000000000);
}

const char *prec_gap_text(char *buf, size_t size, const struct prec_tev *ev, bool timed)
{
	char n[32], t0[32], t1[32];
	bool k0 = ev->tsc || (timed && ev->time), k1 = ev->u.gap.end_time != 0;

	group_digits(n, sizeof(n), ev->u.gap.lost);
	time_text(t0, sizeof(t0), ev->time, k0);
	time_text(t1, sizeof(t1), ev->u.gap.end_time, k1);
	snprintf(buf, size, "[gap: %s%s of trace lost%s%s%s%s]",
		 ev->u.gap.lost ? n : "an unknown number of",
		 ev->u.gap.lost == 1 ? " byte" : " bytes", k0 || k1 ? ", " : "",
		 k0 || k1 ? t0 : "", k0 || k1 ? "-" : "", k0 || k1 ? t1 : "");
	return buf;
}

static void print_error(struct prec_fmt_ctx *f, const struct prec_tev *ev)
{
	const char *what;
	char gap[160];

	switch (ev->type) {
	case PREC_TEV_GAP:
		out(f, "%s at offset %#" PRIx64 " cpu %d pid %d tid %d\n",
		    prec_gap_text(gap, sizeof(gap), ev, f->timed), ev->offset, ev->cpu, ev->pid,
		    ev->tid);
		return;
	case PREC_TEV_OVERFLOW:
		what = "trace buffer overflow";
		break;
	default:
		what = "instruction trace error";
	}
	out(f, " %s at offset %#" PRIx64 " time %" PRIu64 ".%09" PRIu64
	       " cpu %d pid %d tid %d",
	    what, ev->offset, ev->time / 1000000000, ev->time % 1000000000, ev->cpu, ev->pid,
	    ev->tid);
	if (ev->type == PREC_TEV_ERROR)
		out(f, " ip %#" PRIx64 ": %s\n", ev->u.err.ip, ev->u.err.msg);
	else
		out(f, " ip %#" PRIx64 "\n", ev->u.trace.ip);
}

/* Capstone for the session's machine, in 64-bit mode on x86 (f->cs_ok says whether it opened). */
static void disasm_open(struct prec_fmt_ctx *f)
{
	bool arm = !strcmp(prec_session_machine(f->s)->vendor, "ARM");

	f->cs_ok = cs_open(arm ? CS_ARCH_ARM64 : CS_ARCH_X86, arm ? CS_MODE_ARM : CS_MODE_64,
			   &f->cs) == CS_ERR_OK;
	if (f->cs_ok && !arm)
		cs_option(f->cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
	f->cs_x86 = !arm;
	f->cs_mode = 64;
}

/*
 * The user-space instruction at @ip of process @pid at @time as text
 * ("movl $1, (%rax)") into @buf; false if its bytes are not known.
 */
static bool insn_text(struct prec_fmt_ctx *f, int pid, uint64_t time, uint64_t ip, char *buf,
		      size_t size)
{
	struct prec_aspace *as = aspace_at(f, pid, time);
	uint8_t bytes[16];
	size_t n = as ? prec_aspace_read(as, ip, bytes, 15) : 0;
	cs_insn *insn = NULL;

	if (!n)
		return false;
	if (!f->cs_ok && !f->cs_tried) {
		f->cs_tried = true;
		disasm_open(f);
	}
	if (f->cs_ok && f->cs_x86 && f->cs_mode != 64) {
		f->cs_mode = 64;
		cs_option(f->cs, CS_OPT_MODE, CS_MODE_64);
	}
	if (!f->cs_ok || cs_disasm(f->cs, bytes, n, ip, 1, &insn) != 1)
		return false;
	snprintf(buf, size, "%.31s%s%.159s", insn->mnemonic, insn->op_str[0] ? " " : "",
		 insn->op_str);
	cs_free(insn, 1);
	return true;
}

/*
 * The line of the instruction at @ip of @as after its prefix, into the
 * output. Returns its length, or 0 where the code is not known (then
 * "(no code)" is written).
 */
static size_t insn_line(struct prec_fmt_ctx *f, struct prec_aspace *as, uint64_t ip)
{
	uint8_t bytes[16];
	size_t n = prec_aspace_read(as, ip, bytes, 15);
	const uint8_t *code = bytes;
	uint64_t addr = ip;
	struct prec_loc loc;

	resolve_in(f, as, ip, &loc);
	put_hex(f, ip, 16);
	put(f, " ", 1);
	symoff(f, &loc, ip);
	put(f, "\t", 1);
	if (!f->cs_ok || !n || (!f->cs_insn && !(f->cs_insn = cs_malloc(f->cs))) ||
	    !cs_disasm_iter(f->cs, &code, &n, &addr, f->cs_insn)) {
		out(f, "(no code)\n");
		return 0;
	}
	put(f, f->cs_insn->mnemonic, strlen(f->cs_insn->mnemonic));
	if (f->cs_insn->op_str[0]) {
		put(f, " ", 1);
		put(f, f->cs_insn->op_str, strlen(f->cs_insn->op_str));
	}
	if (f->o.srcline && loc.symtab) {
		struct prec_srcline sl;

		if (!prec_symtab_srcline(loc.symtab, loc.vaddr, prec_session_symfs(f->s), &sl))
			out(f, "\t%s:%d", sl.file, sl.line);
	}
	put(f, "\n", 1);
	return f->cs_insn->size;
}

static void print_insns(struct prec_fmt_ctx *f, const struct prec_tev *ev)
{
	struct prec_aspace *as = aspace_at(f, ev->pid, ctx_time(f, ev->time));
	uint64_t ip = ev->u.block.ip;
	uint32_t i;

	/* x86: disassemble in the mode the decoder ran the block in. */
	if (f->cs_ok && f->cs_x86 && ev->u.block.mode != f->cs_mode) {
		f->cs_mode = ev->u.block.mode;
		cs_option(f->cs, CS_OPT_MODE,
			  f->cs_mode == 16 ? CS_MODE_16 : f->cs_mode == 32 ? CS_MODE_32 : CS_MODE_64);
	}
	if (!f->insns)
		f->insns = calloc((size_t)1 << INSN_CACHE_BITS, sizeof(*f->insns));
	for (i = 0; i < ev->u.block.ninsn && ip <= ev->u.block.end_ip; i++) {
		struct insn_ent *e = f->insns ? &f->insns[(ip ^ (ip >> 13) ^ (uintptr_t)as) *
							  0x9e3779b97f4a7c15ull >>
							  (64 - INSN_CACHE_BITS)] : NULL;
		size_t start, size, len;
		uint64_t nflush;

		prefix(f, ev->tid, ev->cpu, ev->time);
		if (e && e->as == as && e->ip == ip && e->mode == f->cs_mode) {
			put(f, e->text, e->len);
			ip += e->size;
			continue;
		}
		start = f->len;
		nflush = f->nflush;
		size = insn_line(f, as, ip);
		if (!size)
			return;
		if (e && (len = keep_piece(f, start, nflush, e->text, sizeof(e->text)))) {
			e->as = as;
			e->ip = ip;
			e->mode = f->cs_mode;
			e->size = (uint8_t)size;
			e->len = (uint16_t)len;
		}
		ip += size;
	}
}

/* A PREC_TEV_HW line of --events: its name, its values, its IP. */
static void print_hw(struct prec_fmt_ctx *f, const struct prec_tev *ev)
{
	uint32_t a = ev->u.hw.a, b = ev->u.hw.b;
	uint64_t v = ev->u.hw.val;

	out(f, "%s", prec_hw_kind_name(ev->u.hw.kind));
	switch (ev->u.hw.kind) {
	case PREC_HW_PTWRITE:
		out(f, " %#" PRIx64 " size %u", v, a);
		break;
	case PREC_HW_MWAIT:
		out(f, " hints %#x ext %#x", a, b);
		break;
	case PREC_HW_PWRE:
		out(f, " state C%u sub %u%s", a, b, v ? " hw" : "");
		break;
	case PREC_HW_PWRX:
		out(f, " last C%u deepest C%u wake%s%s%s", a, b,
		    v & PREC_PWRX_INTERRUPT ? " interrupt" : "", v & PREC_PWRX_STORE ? " store" : "",
		    v & PREC_PWRX_AUTONOMOUS ? " autonomous" : "");
		break;
	case PREC_HW_CBR:
		out(f, " ratio %u", a);
		break;
	case PREC_HW_PAGING:
		out(f, " cr3 %#" PRIx64 "%s", v, a ? " non-root" : "");
		break;
	case PREC_HW_VMCS:
		out(f, " base %#" PRIx64, v);
		break;
	default:
		break;
	}
	if (ev->u.hw.ip)
		out(f, " ip %#" PRIx64, ev->u.hw.ip);
	out(f, " offset %#" PRIx64 "\n", ev->offset);
}

static void print_event(struct prec_fmt_ctx *f, const struct prec_tev *ev)
{
	prefix(f, ev->tid, ev->cpu, ev->time);
	switch (ev->type) {
	case PREC_TEV_BLOCK: /* "block %#x-%#x ninsn %u\n", the lines most events are */
		put(f, "block ", 6);
		put_hex0x(f, ev->u.block.ip);
		put(f, "-", 1);
		put_hex0x(f, ev->u.block.end_ip);
		put(f, " ninsn ", 7);
		put_dec(f, ev->u.block.ninsn, 0, false);
		put(f, "\n", 1);
		break;
	case PREC_TEV_BRANCH: { /* "branch %s %#x => %#x\n" */
		const char *kn = prec_br_kind_name(ev->u.branch.kind);

		put(f, "branch ", 7);
		put(f, kn, strlen(kn));
		put(f, " ", 1);
		put_hex0x(f, ev->u.branch.from);
		put(f, " => ", 4);
		put_hex0x(f, ev->u.branch.to);
		put(f, "\n", 1);
		break;
	}
	case PREC_TEV_TRACE_BEGIN:
		out(f, "begin %#" PRIx64 "\n", ev->u.trace.ip);
		break;
	case PREC_TEV_TRACE_END:
		out(f, "end %#" PRIx64 " to %#" PRIx64 " reason %d\n", ev->u.trace.ip,
		    ev->u.trace.to, ev->u.trace.reason);
		break;
	case PREC_TEV_ERROR:
		out(f, "error offset %#" PRIx64 " code %d: %s\n", ev->offset, ev->u.err.code,
		    ev->u.err.msg);
		break;
	case PREC_TEV_GAP: {
		char gap[160];

		out(f, "gap offset %#" PRIx64 " lost %" PRIu64 " %s\n", ev->offset, ev->u.gap.lost,
		    prec_gap_text(gap, sizeof(gap), ev, f->timed));
		break;
	}
	case PREC_TEV_OVERFLOW:
		out(f, "overflow %#" PRIx64 "\n", ev->u.trace.ip);
		break;
	case PREC_TEV_SWITCH:
		out(f, "switch from %d/%d\n", ev->u.sw.prev_pid, ev->u.sw.prev_tid);
		break;
	case PREC_TEV_TIME:
		out(f, "time\n");
		break;
	case PREC_TEV_HW:
		print_hw(f, ev);
		break;
	case PREC_TEV_COUNTS: /* not asked of the decoder for this view */
		out(f, "counts blocks %u insns %" PRIu64 " branches %u\n", ev->u.counts.blocks,
		    ev->u.counts.insns, ev->u.counts.branches);
		break;
	}
}

/* ---- the event handler ---- */

static bool call_fmt(const struct prec_fmt_ctx *f)
{
	return f->o.fmt == PREC_FMT_CALL_TRACE || f->o.fmt == PREC_FMT_CALL_RET_TRACE;
}

static void on_branch(struct prec_fmt_ctx *f, struct thr *t, struct sstats *ss,
		      const struct prec_tev *ev)
{
	const uint64_t from = ev->u.branch.from, to = ev->u.branch.to;
	enum prec_br_kind k = ev->u.branch.kind;
	struct prec_loc floc, tloc;
	bool vis;

	/* --no-plt for a tap that takes the folded calls (JSON) */
	bool plt_tap = f->o.no_plt && f->o.fmt == PREC_FMT_TAP && f->o.tap && f->o.tap->plt_call;
	/* Symbols only where they are printed or filtered on. */
	bool need = call_fmt(f) || f->o.fmt == PREC_FMT_BRANCHES || f->o.symbol || plt_tap;

	if (need)
		resolve(f, ev->pid, ctx_time(f, ev->time), from, &floc);
	else
		memset(&floc, 0, sizeof(floc));
	if (need && to &&
	    (k == PREC_BR_CALL || k == PREC_BR_SYSCALL || k == PREC_BR_INTERRUPT ||
	     f->o.fmt == PREC_FMT_BRANCHES || f->o.symbol))
		resolve(f, ev->pid, ctx_time(f, ev->time), to, &tloc);
	else
		memset(&tloc, 0, sizeof(tloc));

	if (k == PREC_BR_CALL || ((k == PREC_BR_SYSCALL || k == PREC_BR_INTERRUPT) && to)) {
		uint64_t ret = k == PREC_BR_INTERRUPT ? from : from + ev->u.branch.insn_len;

		stk_push(t, ret);
		if (f->o.symbol && !t->active && sym_is(f, &tloc))
			sym_enter(f, t, false, t->n);
		vis = visible(f, t, ev);
		if (vis) {
			ss->calls += k == PREC_BR_CALL;
			ss->syscalls += k == PREC_BR_SYSCALL;
			ss->interrupts += k == PREC_BR_INTERRUPT;
		}
		f->plt_hid = t->plt_depth && t->n > t->plt_depth;
		if (vis && (call_fmt(f) || plt_tap) && line_shown(f, t, t->n)) {
			if (f->o.no_plt && k == PREC_BR_CALL && tloc.sym &&
			    prec_plt_stub(tloc.sym->name)) {
				f->plt_hid = true;
				t->plt_depth = t->n;
				t->plt_ev = *ev;
				t->plt_from = floc;
				t->plt_stub = tloc;
			} else if (call_fmt(f) && !hidden_obj(f, &tloc)) {
				print_call_line(f, ev, k == PREC_BR_CALL ? "call" :
					prec_br_kind_name(k), t->n, &floc, &tloc, to, -1);
			}
		}
	} else if (k == PREC_BR_RETURN || k == PREC_BR_SYSRET) {
		bool was = visible(f, t, ev);

		stk_pop_to(t, to);
		plt_popped(f, t);
		f->plt_hid = t->plt_depth && t->n + 1 > t->plt_depth;
		if (was) {
			ss->rets += k == PREC_BR_RETURN;
			if (f->o.fmt == PREC_FMT_CALL_RET_TRACE &&
			    line_shown(f, t, t->n + 1) && !hidden_obj(f, &floc))
				print_call_line(f, ev, k == PREC_BR_RETURN ? "return" : "sysret",
						t->n + 1, &floc, &floc, from, -1);
		}
		if (t->active && ((!t->by_ip && t->n < t->adepth) ||
				  (t->by_ip && (t->n < t->adepth ||
						(sym_is(f, &floc) && t->n <= t->adepth)))))
			t->active = false;
		vis = was;
	} else {
		/*
		 * Entered by a jump (a tail call, a PLT stub's jmp): under the
		 * function for as long as the frame of the call that led there.
		 */
		if (f->o.symbol && !t->active && to && k != PREC_BR_SYSCALL && sym_is(f, &tloc))
			sym_enter(f, t, false, t->n);
		if (t->plt_depth && t->n == t->plt_depth && to && k != PREC_BR_SYSCALL)
			plt_jump(f, t, ev);
		vis = visible(f, t, ev);
		f->plt_hid = t->plt_depth && t->n + 1 > t->plt_depth;
		ss->syscalls += vis && k == PREC_BR_SYSCALL;
		/*
		 * A system call that leaves the traced code (user-only tracing):
		 * one line a level below its caller, as a call into the kernel
		 * (perf's call trace has one line for it too, with no name).
		 */
		if (vis && k == PREC_BR_SYSCALL && f->o.fmt == PREC_FMT_CALL_TRACE &&
		    line_shown(f, t, t->n + 1) && !hidden_obj(f, &floc)) {
			prefix(f, ev->tid, ev->cpu, ev->time);
			callindent(f, floc.dso, t->n + 1, &floc, from, "[syscall]");
		}
	}
	f->ev_vis = vis;
	if (!vis)
		return;
	ss->branches++;
	if (f->o.fmt == PREC_FMT_BRANCHES) {
		const char *kn = prec_br_kind_name(k);

		/* "%-8s %16" PRIx64 " " ... " => %16" PRIx64 " " ... */
		prefix(f, ev->tid, ev->cpu, ev->time);
		put_pad(f, kn, strlen(kn), 8, true);
		put(f, " ", 1);
		put_hex(f, from, 16);
		put(f, " ", 1);
		symoff(f, &floc, from);
		put(f, " => ", 4);
		put_hex(f, to, 16);
		put(f, " ", 1);
		if (to)
			symoff(f, &tloc, to);
		else
			put(f, "[untraced]", 10);
		put(f, "\n", 1);
	}
}

static void on_trace(struct prec_fmt_ctx *f, struct thr *t, struct sstats *ss,
		     const struct prec_tev *ev)
{
	bool begin = ev->type == PREC_TEV_TRACE_BEGIN;
	struct prec_loc loc;
	int trig;

	resolve(f, ev->pid, ctx_time(f, ev->time), ev->u.trace.ip, &loc);
	if (begin) {
		stk_pop_to(t, ev->u.trace.ip);
		plt_popped(f, t);
		if (f->o.symbol && !t->active && sym_is(f, &loc))
			sym_enter(f, t, true, t->n);
	}
	/*
	 * User-only tracing stops at every syscall and starts again after it:
	 * those are not pauses, unless a pause trigger fired in the syscall.
	 * A begin is a resume only when tracing was off by a pause (or had not
	 * run yet): after an end that was no pause (a syscall, an interrupt,
	 * a trap that changed nothing) tracing was on all along. The state is
	 * kept for events the filters hide too.
	 */
	if (!begin && ev->u.trace.reason == PREC_END_SYSCALL) {
		/* A pause that fires in the syscall itself (sys_enter) follows at once. */
		trig = find_trigger(f, ev, PREC_EVK_PAUSE, ev->time, 2000, ev->u.trace.ip, true);
	} else if (begin) {
		trig = -1;
		if (!t->ended || t->paused)
			trig = find_trigger(f, ev, PREC_EVK_RESUME, t->in_syscall ? t->end_time : 0,
					    0, ev->u.trace.ip, false);
	} else {
		trig = find_trigger(f, ev, PREC_EVK_PAUSE, 0, 0, ev->u.trace.ip, false);
	}
	f->trig_last = trig;
	if (!begin) {
		t->in_syscall = ev->u.trace.reason == PREC_END_SYSCALL;
		t->end_time = ev->time;
		t->ended = true;
		t->paused = trig >= 0;
	}
	f->ev_vis = visible(f, t, ev);
	if (!f->ev_vis)
		return;
	if (begin)
		ss->begins++;
	else
		ss->ends++;
	if (!begin && (trig >= 0 || ev->u.trace.reason != PREC_END_SYSCALL))
		ss->pauses++;
	/* The call trace shows calls only: a syscall is its branch's line. */
	if (f->o.fmt == PREC_FMT_CALL_TRACE)
		return;
	if (f->o.fmt == PREC_FMT_CALL_RET_TRACE) {
		if (f->o.max_depth && t->n > (uint32_t)f->o.max_depth)
			return;
		print_call_line(f, ev, begin ? "tr strt" : "tr end", t->n, &loc, &loc,
				ev->u.trace.ip, trig);
	} else if (f->o.fmt == PREC_FMT_INSN_TRACE || f->o.fmt == PREC_FMT_BRANCHES) {
		const struct prec_evdesc *d = trig >= 0 ? prec_session_event(f->s, trig) : NULL;

		prefix(f, ev->tid, ev->cpu, ev->time);
		out(f, "%-8s %16" PRIx64 " ", begin ? "tr strt" : "tr end", ev->u.trace.ip);
		symoff(f, &loc, ev->u.trace.ip);
		if (d)
			out(f, "  (%s by %s)", begin ? "resumed" : "paused", d->name);
		out(f, "\n");
	}
}

/*
 * A thread that execs starts a new program with an empty stack: the frames of
 * the old one never return, and the depth restarts at 0 (the first event
 * after the exec's COMM record). Likewise after a decode error, from which
 * the decoder resyncs at an unknown depth (perf flushes its thread stack
 * when the trace is discontinuous, thread_stack__event()).
 */
static void stk_restart(struct thr *t)
{
	t->n = 0;
	t->plt_depth = 0;
	t->adepth = 0;
	t->active = false;
	t->restarted = true;
}

/*
 * The exec's COMM record and the last events of the old program, or the
 * first of the new one, can carry the same time: at that time the restart
 * waits for the trace to begin again (in the new program, after the
 * syscall); a later time restarts at once (where the kernel is traced too,
 * the flow goes on without a begin).
 */
static void check_exec(struct prec_fmt_ctx *f, struct thr *t, const struct prec_tev *ev)
{
	if (!ev->time)
		return;
	if (t->exec_known) {
		if (ev->time < t->next_exec ||
		    (ev->time == t->next_exec && ev->type != PREC_TEV_TRACE_BEGIN))
			return;
		stk_restart(t);
	}
	t->next_exec = prec_session_next_exec(f->s, t->tid, ev->time);
	t->exec_known = true;
}

int prec_fmt_event(struct prec_fmt_ctx *f, size_t si, const struct prec_tev *ev)
{
	struct sstats dummy, *ss = si < f->nst ? &f->st[si] : &dummy;
	struct thr *t = thread_get(f, ev->tid);

	if (!t)
		return -ENOMEM;
	f->plt_hid = false;
	check_exec(f, t, ev);
	if (f->o.fmt == PREC_FMT_EVENTS) {
		if (in_filter(f, ev))
			print_event(f, ev);
		return f->werr;
	}
	f->ev_vis = true;
	switch (ev->type) {
	case PREC_TEV_BLOCK:
		if (f->o.symbol && !t->active) {
			struct prec_loc loc;

			resolve(f, ev->pid, ctx_time(f, ev->time), ev->u.block.ip, &loc);
			f->ev_vis = sym_is(f, &loc);
			if (!f->ev_vis)
				break;
		} else if (!visible(f, t, ev)) {
			f->ev_vis = false;
			break;
		}
		ss->blocks++;
		ss->insns += ev->u.block.ninsn;
		if (f->o.fmt == PREC_FMT_INSN_TRACE)
			print_insns(f, ev);
		break;
	case PREC_TEV_BRANCH:
		on_branch(f, t, ss, ev);
		break;
	case PREC_TEV_COUNTS:
		/* Only for views without --symbol: visible as its blocks and branches are. */
		f->ev_vis = visible(f, t, ev);
		if (!f->ev_vis)
			break;
		ss->blocks += ev->u.counts.blocks;
		ss->insns += ev->u.counts.insns;
		ss->branches += ev->u.counts.branches;
		ss->calls += ev->u.counts.calls;
		ss->rets += ev->u.counts.rets;
		ss->syscalls += ev->u.counts.syscalls;
		ss->interrupts += ev->u.counts.interrupts;
		break;
	case PREC_TEV_TRACE_BEGIN:
	case PREC_TEV_TRACE_END:
		on_trace(f, t, ss, ev);
		break;
	case PREC_TEV_ERROR:
	case PREC_TEV_GAP:
	case PREC_TEV_OVERFLOW:
		/* The decoder resyncs after an error: the depth there is unknown. */
		if (ev->type == PREC_TEV_ERROR)
			stk_restart(t);
		if (!in_filter(f, ev) && (ev->time || f->timed))
			break;
		if (ev->type == PREC_TEV_ERROR)
			ss->errors++;
		else if (ev->type == PREC_TEV_GAP) {
			ss->gaps++;
			ss->lost += ev->u.gap.lost;
		} else {
			ss->overflows++;
		}
		if (f->o.fmt != PREC_FMT_STATS && f->o.fmt != PREC_FMT_TAP)
			print_error(f, ev);
		break;
	case PREC_TEV_SWITCH:
		ss->switches++;
		break;
	case PREC_TEV_TIME:
	case PREC_TEV_HW:
		break;
	}
	if (f->len > OUTBUF_SIZE / 2)
		flush_out(f);
	return f->werr;
}

int prec_fmt_trigger(struct prec_fmt_ctx *f, const struct prec_sb *sb)
{
	const struct prec_evdesc *d = prec_session_event(f->s, sb->event);
	struct prec_tev ev;
	struct prec_loc loc;

	if (!d || (d->kind != PREC_EVK_PAUSE && d->kind != PREC_EVK_RESUME))
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.time = sb->time;
	ev.pid = sb->pid;
	ev.tid = sb->tid;
	ev.cpu = sb->cpu;
	if (!in_filter(f, &ev))
		return 0;
	f->trig_count[sb->event]++;
	if (f->o.symbol && f->o.fmt != PREC_FMT_STATS) {
		const struct thr *t = thread_get(f, sb->tid);

		if (!t || !t->active)
			return f->werr;
	}
	if (f->o.tap && f->o.tap->trigger) {
		int err = f->o.tap->trigger(f->o.tap->arg, sb);

		if (err)
			return err;
	}
	if (f->o.fmt == PREC_FMT_STATS || f->o.fmt == PREC_FMT_TAP)
		return 0;
	resolve(f, sb->pid, ctx_time(f, sb->time), sb->u.sample.ip, &loc);
	prefix(f, sb->tid, sb->cpu, sb->time);
	flags_col(f, d->kind == PREC_EVK_PAUSE ? "pause" : "resume");
	out(f, "-- %s trigger %s at %#" PRIx64 " ", d->kind == PREC_EVK_PAUSE ? "pause" : "resume",
	    d->name, sb->u.sample.ip);
	symoff(f, &loc, sb->u.sample.ip);
	out(f, "\n");
	return f->werr;
}

int prec_fmt_signal(struct prec_fmt_ctx *f, const struct prec_sb *sb)
{
	struct prec_tev ev;
	struct prec_loc loc;
	char name[32];

	memset(&ev, 0, sizeof(ev));
	ev.time = sb->time;
	ev.pid = sb->pid;
	ev.tid = sb->tid;
	ev.cpu = sb->cpu;
	if (f->o.fmt == PREC_FMT_STATS || !in_filter(f, &ev))
		return 0;
	prefix(f, sb->tid, sb->cpu, sb->time);
	flags_col(f, "signal");
	out(f, "-- killed by %s", prec_signal_name((int)sb->u.sig.signo, name, sizeof(name)));
	if (sb->u.sig.ip) {
		bool exact = sb->u.sig.flags & PREC_SIGREC_EXACT;
		char insn[200];

		resolve(f, sb->pid, ctx_time(f, sb->time), sb->u.sig.ip, &loc);
		/* near: the thread had begun that instruction, maybe ended it */
		out(f, " %s %#" PRIx64 " ", exact ? "at" : "near", sb->u.sig.ip);
		symoff(f, &loc, sb->u.sig.ip);
		if (exact && insn_text(f, sb->pid, ctx_time(f, sb->time), sb->u.sig.ip, insn,
				       sizeof(insn)))
			out(f, ": %s", insn);
	}
	out(f, "\n");
	return f->werr;
}

/* ---- stats ---- */

static void print_stats(struct prec_fmt_ctx *f)
{
	struct sstats tot = { 0 };
	uint64_t bytes = 0;
	size_t i, shown = 0;

	for (i = 0; i < f->nst; i++) {
		const struct prec_stream *st = prec_session_stream(f->s, i);
		const struct sstats *x = &f->st[i];

		if (x->skipped)
			continue;
		shown++;
		bytes += st->len;
		if (st->tid >= 0)
			out(f, "stream tid %d", st->tid);
		else
			out(f, "stream cpu %d", st->cpu);
		out(f, ": %zu bytes, %" PRIu64 " instructions, %" PRIu64 " branches, %" PRIu64
		       " calls, %" PRIu64 " returns, %" PRIu64 " trace begins, %" PRIu64
		       " trace ends, %" PRIu64 " errors, %" PRIu64 " gaps (%" PRIu64
		       " bytes lost), %" PRIu64 " overflows\n",
		    st->len, x->insns, x->branches, x->calls, x->rets, x->begins, x->ends,
		    x->errors, x->gaps, x->lost, x->overflows);
		tot.insns += x->insns;
		tot.branches += x->branches;
		tot.calls += x->calls;
		tot.rets += x->rets;
		tot.begins += x->begins;
		tot.ends += x->ends;
		tot.pauses += x->pauses;
		tot.errors += x->errors;
		tot.gaps += x->gaps;
		tot.lost += x->lost;
		tot.overflows += x->overflows;
		tot.syscalls += x->syscalls;
	}
	out(f, "total: %zu streams, %" PRIu64 " bytes\n", shown, bytes);
	out(f, "instructions: %" PRIu64 "\n", tot.insns);
	out(f, "branches: %" PRIu64 "\n", tot.branches);
	out(f, "calls: %" PRIu64 "\n", tot.calls);
	out(f, "returns: %" PRIu64 "\n", tot.rets);
	out(f, "syscalls: %" PRIu64 "\n", tot.syscalls);
	out(f, "trace begins: %" PRIu64 "\n", tot.begins);
	out(f, "trace ends: %" PRIu64 "\n", tot.ends);
	out(f, "paused periods: %" PRIu64 "\n", tot.pauses);
	out(f, "errors: %" PRIu64 "\n", tot.errors);
	out(f, "gaps: %" PRIu64 " (%" PRIu64 " bytes lost)\n", tot.gaps, tot.lost);
	out(f, "overflows: %" PRIu64 "\n", tot.overflows);
	for (i = 0; i < prec_session_nr_events(f->s); i++) {
		const struct prec_evdesc *d = prec_session_event(f->s, (int)i);

		if (d->kind == PREC_EVK_PAUSE || d->kind == PREC_EVK_RESUME)
			out(f, "trigger %s (%s): %" PRIu64 " samples\n", d->name,
			    d->kind == PREC_EVK_PAUSE ? "pause" : "resume", f->trig_count[i]);
	}
}

/* --stats --format=json: a line per stream and one for the total. */
static void print_stats_json(struct prec_fmt_ctx *f)
{
	struct sstats tot = { 0 };
	size_t i, k, ntrig = prec_session_nr_events(f->s);

	out(f, "{\"schema\":\"ptdump/1\",\"view\":\"stats\"}\n");
	for (i = 0; i <= f->nst; i++) {
		const struct prec_stream *st = i < f->nst ? prec_session_stream(f->s, i) : NULL;
		const struct sstats *x = st ? &f->st[i] : &tot;
		uint64_t *sum = &tot.insns, *add = (uint64_t *)&x->insns;

		if (x->skipped)
			continue;
		if (st)
			out(f, "{\"type\":\"stream\",\"%s\":%d,\"bytes\":%zu", st->tid >= 0 ? "tid" : "cpu",
			    st->tid >= 0 ? st->tid : st->cpu, st->len);
		else
			out(f, "{\"type\":\"total\"");
		out(f, ",\"insns\":%" PRIu64 ",\"branches\":%" PRIu64 ",\"calls\":%" PRIu64
		       ",\"returns\":%" PRIu64 ",\"syscalls\":%" PRIu64 ",\"trace_begins\":%" PRIu64
		       ",\"trace_ends\":%" PRIu64 ",\"paused_periods\":%" PRIu64 ",\"errors\":%" PRIu64
		       ",\"gaps\":%" PRIu64 ",\"lost_bytes\":%" PRIu64 ",\"overflows\":%" PRIu64 "}\n",
		    x->insns, x->branches, x->calls, x->rets, x->syscalls, x->begins, x->ends,
		    x->pauses, x->errors, x->gaps, x->lost, x->overflows);
		/* the counters are the struct's leading uint64_t fields */
		for (k = 0; st && k < offsetof(struct sstats, skipped) / sizeof(uint64_t); k++)
			sum[k] += add[k];
	}
	for (i = 0; i < ntrig; i++) {
		const struct prec_evdesc *d = prec_session_event(f->s, (int)i);

		if (d->kind == PREC_EVK_PAUSE || d->kind == PREC_EVK_RESUME)
			out(f, "{\"type\":\"trigger\",\"event\":\"%s\",\"kind\":\"%s\","
			       "\"samples\":%" PRIu64 "}\n", d->name ? d->name : "?",
			    d->kind == PREC_EVK_PAUSE ? "pause" : "resume", f->trig_count[i]);
	}
}

/* ---- setup and the driver ---- */

void prec_fmt_free(struct prec_fmt_ctx *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->nthr; i++)
		free(f->thr[i].stk);
	free(f->thr);
	free(f->st);
	free(f->trig_count);
	free(f->trigs);
	free(f->buf);
	free(f->locs);
	free(f->insns);
	if (f->cs_insn)
		cs_free(f->cs_insn, 1);
	if (f->cs_ok)
		cs_close(&f->cs);
	free(f);
}

/* The trigger samples (pause, resume) of f->s, in f->trigs. Returns 0 or -ENOMEM. */
static int trigs_make(struct prec_fmt_ctx *f)
{
	size_t i, n = prec_session_nr_sb(f->s);

	free(f->trigs);
	f->ntrigs = 0;
	f->trigs = calloc(n + 1, sizeof(*f->trigs));
	if (!f->trigs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct prec_sb *sb = prec_session_sb(f->s, i);
		const struct prec_evdesc *d;

		if (sb->type != PREC_SB_SAMPLE)
			continue;
		d = prec_session_event(f->s, sb->event);
		if (!d || (d->kind != PREC_EVK_PAUSE && d->kind != PREC_EVK_RESUME))
			continue;
		f->trigs[f->ntrigs++] = (struct trig){ sb->time, sb->u.sample.ip, sb->tid,
						       sb->cpu, sb->event, d->kind };
	}
	return 0;
}

/*
 * --follow rounds: @f goes on formatting from session @s, the same recording
 * grown longer. What it kept of its last session goes: the caches (the answers
 * before the settled time are the same), the trigger table (made again: the
 * triggers before that time keep their places).
 */
static int fmt_rebind(struct prec_fmt_ctx *f, struct prec_session *s,
		      const struct prec_output_opts *o)
{
	size_t n = prec_session_nr_streams(s);

	f->s = s;
	f->o = *o; /* the same view, but a tap of this round's */
	f->im = prec_session_images(s);
	if (n > f->nst) {
		struct sstats *st = realloc(f->st, (n + 1) * sizeof(*st));

		if (!st)
			return -ENOMEM;
		memset(st + f->nst, 0, (n + 1 - f->nst) * sizeof(*st));
		f->st = st;
		f->nst = n;
	}
	f->dcol.n = 0;
	f->dcol.dso = NULL;
	f->hide_c.dso = NULL;
	f->comm_c.comm = NULL;
	f->as_c.as = NULL;
	if (f->locs)
		memset(f->locs, 0, ((size_t)1 << f->loc_bits) * sizeof(*f->locs));
	/* A new session's spaces may lie where the last one's did. */
	free(f->insns);
	f->insns = NULL;
	/*
	 * --no-plt: a call through a stub whose target is still to come keeps
	 * where it was made and the stub, which pointed into the last session:
	 * found again in this one, which holds all that one did.
	 */
	for (size_t i = 0; i < f->nthr; i++) {
		struct thr *t = &f->thr[i];
		const struct prec_tev *ev = &t->plt_ev;

		if (!t->plt_depth)
			continue;
		resolve(f, ev->pid, ctx_time(f, ev->time), ev->u.branch.from, &t->plt_from);
		resolve(f, ev->pid, ctx_time(f, ev->time), ev->u.branch.to, &t->plt_stub);
	}
	return trigs_make(f);
}

int prec_fmt_new(struct prec_session *s, const struct prec_output_opts *o, FILE *outf,
		 struct prec_fmt_ctx **ctx)
{
	struct prec_fmt_ctx *f;

	*ctx = NULL;
	if (!s || !o || !outf || !prec_session_images(s))
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->s = s;
	f->im = prec_session_images(s);
	f->o = *o;
	f->out = outf;
	f->buf = malloc(OUTBUF_FIRST);
	f->cap = OUTBUF_FIRST;
	f->nst = prec_session_nr_streams(s);
	f->st = calloc(f->nst + 1, sizeof(*f->st));
	f->trig_count = calloc(prec_session_nr_events(s) + 1, sizeof(*f->trig_count));
	if (!f->buf || !f->st || !f->trig_count || trigs_make(f)) {
		prec_fmt_free(f);
		return -ENOMEM;
	}
	f->show_cpu = o->show_cpu < 0 ? prec_session_machine(s)->per_cpu : o->show_cpu;
	f->time_filter = o->time_start || o->time_end;
	f->timed = prec_session_machine(s)->tsc;
	if (o->fmt == PREC_FMT_INSN_TRACE)
		disasm_open(f);
	*ctx = f;
	return 0;
}

int prec_fmt_finish(struct prec_fmt_ctx *f)
{
	size_t i;

	for (i = 0; i < f->nthr; i++) /* --no-plt: stubs still waiting for their target */
		if (f->thr[i].plt_depth)
			plt_line(f, &f->thr[i], &f->thr[i].plt_stub, f->thr[i].plt_ev.u.branch.to);
	if (f->o.fmt == PREC_FMT_STATS && f->o.json)
		print_stats_json(f);
	else if (f->o.fmt == PREC_FMT_STATS)
		print_stats(f);
	flush_out(f);
	if (!f->werr && fflush(f->out))
		f->werr = errno == EPIPE ? -EPIPE : -EIO;
	return f->werr;
}

/* Does @st have a function that --symbol @pattern selects? */
static bool symtab_has(const struct prec_symtab *st, const char *pattern)
{
	size_t i, n = st ? prec_symtab_count(st) : 0;

	if (!strpbrk(pattern, "*?["))
		return st && prec_symtab_find(st, pattern);
	for (i = 0; i < n; i++)
		if (sym_match(pattern, prec_symtab_at(st, i)->name))
			return true;
	return false;
}

/* Does any symbol table we can reach name @sym? */
static bool symbol_exists(struct prec_session *s, const char *sym)
{
	struct prec_images *im = prec_session_images(s);
	size_t i, n = prec_session_nr_sb(s);

	if (symtab_has(prec_images_kernel_symtab(im), sym))
		return true;
	for (i = 0; i < n; i++) {
		const struct prec_sb *sb = prec_session_sb(s, i);
		struct prec_loc loc;

		if (sb->type != PREC_SB_MMAP || sb->u.mmap.kernel)
			continue;
		prec_aspace_resolve(prec_images_aspace(im, sb->pid, sb->time), sb->u.mmap.start,
				    &loc);
		if (symtab_has(loc.symtab, sym))
			return true;
	}
	return false;
}

/* Gives @ev, as the formatter saw it, to o->tap. */
static int tap_event(struct prec_fmt_ctx *f, size_t si, const struct prec_tev *ev)
{
	struct prec_tap_info info;
	struct thr *t = thread_get(f, ev->tid);

	if (!t)
		return -ENOMEM;
	info.visible = in_filter(f, ev) && (!f->o.symbol || f->ev_vis);
	info.trigger = ev->type == PREC_TEV_TRACE_BEGIN || ev->type == PREC_TEV_TRACE_END ?
			       f->trig_last : -1;
	info.depth = (int)t->n;
	info.restart = t->restarted;
	info.plt_hidden = f->plt_hid;
	t->restarted = false;
	return f->o.tap->event(f->o.tap->arg, si, ev, &info);
}

struct head {
	struct prec_decoder *d;
	const struct prec_tev *ev;  /* the decoder's, valid until its next call */
	bool valid;
	uint64_t idx;               /* events of the stream before ev (--follow) */
};

static bool stream_wanted(struct prec_session *s, const struct prec_output_opts *o,
			  const struct prec_stream *st)
{
	if (o->cpu >= 0 && st->cpu >= 0 && st->tid < 0 && st->cpu != o->cpu)
		return false;
	if (o->tid >= 0 && st->tid >= 0 && st->tid != o->tid)
		return false;
	if (o->pid >= 0 && st->tid >= 0 &&
	    prec_session_pid_of(s, st->tid, UINT64_MAX) >= 0 &&
	    prec_session_pid_of(s, st->tid, UINT64_MAX) != o->pid)
		return false;
	return true;
}

/* Tells o->progress how far the decode of the wanted streams is. */
static void report_progress(struct prec_session *s, const struct prec_fmt_ctx *f,
			    const struct head *h, size_t n)
{
	uint64_t done = 0, total = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		const struct prec_stream *st = prec_session_stream(s, i);
		uint64_t all = st->len + st->lost;

		if (!h[i].d)
			continue;
		total += all;
		if (!h[i].valid)
			done += all;
		else if (h[i].ev->offset > st->base)
			done += PREC_MIN(h[i].ev->offset - st->base, all);
	}
	f->o.progress(f->o.progress_ctx, done, total);
}

/*
 * o->follow: whether @ev may come out otherwise once the recording has
 * ended: an error for want of code, or a branch into a mapping whose code
 * is not in the file yet (its target's name comes from that code's symbols).
 */
static bool unsettled(struct prec_fmt_ctx *f, const struct prec_tev *ev)
{
	struct prec_aspace *as;
	uint8_t b;

	if (ev->type == PREC_TEV_ERROR)
		return ev->u.err.code == PREC_DE_NOMAP;
	if (ev->type != PREC_TEV_BRANCH || !ev->u.branch.to)
		return false;
	as = aspace_at(f, ev->pid, ctx_time(f, ev->time));
	return as && prec_aspace_find(as, ev->u.branch.to) &&
	       !prec_aspace_read(as, ev->u.branch.to, &b, 1);
}

/*
 * Formats the events of all streams and the trigger samples by time: the
 * earliest first, among equal times a trigger first, then the stream of
 * the lowest index. The stream picked goes on without a new comparison
 * while its events stay before the bound that the others set. An *@until
 * other than UINT64_MAX (o->follow) stops it at the first thing that comes
 * at that time or later (without it, a trace without timestamps, whose
 * events all come at UINT64_MAX, is formatted whole), and before an event
 * that needs code the file does not hold yet (unsettled(): ptrec embeds
 * the code of CPU-wide recordings, and the whole-system tracer's guest
 * kernel and vdso, when it ends); *@until becomes
 * its time.
 */
static int merge_streams(struct prec_session *s, struct prec_fmt_ctx *f, struct head *h,
			 size_t n, uint64_t *untilp, size_t sbi)
{
	size_t i, nsb = prec_session_nr_sb(s);
	uint64_t until = *untilp;
	uint32_t tick = 0;
	int err;

	for (;;) {
		uint64_t lo_bound = UINT64_MAX, hi_bound = UINT64_MAX, sb_time = UINT64_MAX;
		bool sb_signal = false;
		size_t best = n;

		for (i = 0; i < n; i++)
			if (h[i].valid && (best == n || h[i].ev->time < h[best].ev->time))
				best = i;
		while (sbi < nsb && prec_session_sb(s, sbi)->type != PREC_SB_SAMPLE &&
		       prec_session_sb(s, sbi)->type != PREC_SB_SIGNAL)
			sbi++;
		if (sbi < nsb) {
			sb_time = prec_session_sb(s, sbi)->time;
			sb_signal = prec_session_sb(s, sbi)->type == PREC_SB_SIGNAL;
		}
		/* A trigger sample goes before trace of its time, a thread's death after it. */
		if (sbi < nsb && (best == n || sb_time < h[best].ev->time ||
				  (sb_time == h[best].ev->time && !sb_signal))) {
			const struct prec_sb *sb = prec_session_sb(s, sbi);

			if (until != UINT64_MAX && sb_time >= until)
				return 0;
			err = sb_signal ? prec_fmt_signal(f, sb) : prec_fmt_trigger(f, sb);
			if (err)
				return err;
			sbi++;
			continue;
		}
		if (best == n || (until != UINT64_MAX && h[best].ev->time >= until))
			return 0;
		if (until != UINT64_MAX && unsettled(f, h[best].ev)) {
			*untilp = h[best].ev->time;
			return 0;
		}
		/* Streams before @best win ties, those after it lose them. */
		for (i = 0; i < n; i++) {
			if (!h[i].valid || i == best)
				continue;
			if (i < best)
				lo_bound = PREC_MIN(lo_bound, h[i].ev->time);
			else
				hi_bound = PREC_MIN(hi_bound, h[i].ev->time);
		}
		do {
			err = prec_fmt_event(f, best, h[best].ev);
			if (!err && f->o.tap)
				err = tap_event(f, best, h[best].ev);
			if (err)
				return err;
			err = prec_decoder_next_ref(h[best].d, &h[best].ev);
			if (err < 0)
				return err;
			h[best].valid = err > 0;
			h[best].idx++;
			if (!(++tick & 0xffff) && f->o.progress)
				report_progress(s, f, h, n);
		} while (h[best].valid && h[best].ev->time < lo_bound &&
			 (until == UINT64_MAX ||
			  (h[best].ev->time < until && !unsettled(f, h[best].ev))) &&
			 h[best].ev->time <= hi_bound &&
			 (sb_signal ? h[best].ev->time <= sb_time : h[best].ev->time < sb_time));
	}
}

/* Whether @s has a stream for thread @tid (per-thread) or CPU @cpu (per-CPU). */
static bool has_stream(struct prec_session *s, size_t n, int tid, int cpu)
{
	size_t j;

	for (j = 0; j < n; j++) {
		const struct prec_stream *st = prec_session_stream(s, j);

		if (st->cpu >= 0 ? st->cpu == cpu : st->tid == tid)
			return true;
	}
	return false;
}

/*
 * o->follow: the time before which the streams and the sideband are settled.
 * A thread (per-thread streams) or a CPU (per-CPU) the sideband has seen
 * begin with no stream of its own yet may have trace still to come from then.
 */
static uint64_t settled(struct prec_session *s, struct head *h, size_t n)
{
	uint64_t t = prec_session_sb_settled(s);
	size_t i, nsb = prec_session_nr_sb(s);
	bool per_cpu = n && prec_session_stream(s, 0)->cpu >= 0;

	for (i = 0; i < n; i++)
		if (h[i].d)
			t = PREC_MIN(t, prec_decoder_settled(h[i].d));
	for (i = 0; i < nsb; i++) {
		const struct prec_sb *sb = prec_session_sb(s, i);

		if (sb->time >= t)
			break;
		if (per_cpu ? sb->cpu < 0 : sb->type != PREC_SB_FORK)
			continue;
		if (!has_stream(s, n, sb->tid, sb->cpu))
			t = sb->time;
	}
	return t;
}

/* The decoder options for view @o. */
static void decoder_opts(const struct prec_fmt_ctx *f, const struct prec_output_opts *o,
			 struct prec_decoder_opts *dopts)
{
	memset(dopts, 0, sizeof(*dopts));
	dopts->window = o->window;
	/*
	 * --events prints blocks, and where libipt's block decoder ends a block
	 * depends on its block cache, which decoding in parts warms in another
	 * order: one pass with that core. The walk's blocks are the same in parts.
	 */
	dopts->libipt_core = o->libipt_core;
	dopts->jobs = o->fmt == PREC_FMT_EVENTS && o->libipt_core ? 1 : o->jobs;
	dopts->busy_view = o->fmt == PREC_FMT_EVENTS;
	dopts->shards = o->shards;
	dopts->no_blocks = o->fmt == PREC_FMT_CALL_TRACE || o->fmt == PREC_FMT_CALL_RET_TRACE ||
			   o->fmt == PREC_FMT_BRANCHES;
	/* --stats without --symbol counts blocks and branches, and does nothing else with them. */
	dopts->counts = o->fmt == PREC_FMT_STATS && !o->symbol && !o->tap;
	/*
	 * A call trace without --symbol or --no-plt does nothing with jumps
	 * (on_branch()): the decoder leaves them out.
	 */
	if (call_fmt(f) && !o->symbol && !o->no_plt && !o->tap)
		dopts->branch_kinds = PREC_BR_NO_JUMPS;
	/*
	 * A tap takes what it asks for. The formatter in front of it follows
	 * calls and returns only, unless --symbol or --no-plt are given.
	 */
	if (o->tap && o->fmt == PREC_FMT_TAP && !o->symbol && !o->no_plt) {
		dopts->branch_kinds = o->tap->branch_kinds;
		dopts->no_blocks = o->tap->no_blocks;
		/* Not for --follow's resume places and --merge's parts, which count blocks. */
		dopts->fn_blocks = o->tap->fn_blocks && !o->rounds && !o->shards;
		/* across time changes too, unless blocks are kept or not by their time */
		dopts->fn_span = dopts->fn_blocks && !f->time_filter;
	}
}

/*
 * --follow rounds (prec_output_opts.rounds): the formatter goes on from one
 * round to the next, and so does each stream's decode. A stream's decode
 * starts again at the last place it passed (prec_decoder_ops.resume_at)
 * before the first event not yet formatted, and the events of the stream
 * before that event are dropped. The merge formats, of each stream, the
 * events before the first at the bound or later, and the triggers before
 * the bound: the next round starts after those.
 */
struct follow_st {
	int tid, cpu;
	uint64_t consumed;        /* events formatted */
	struct prec_resume rp;    /* where the next decode of it starts */
};

struct prec_follow {
	struct prec_fmt_ctx *f;   /* NULL: no round yet */
	struct follow_st *st;
	size_t n;
	uint64_t until;           /* the last round's bound */
	struct prec_follow_stats stats;
};

struct prec_follow *prec_follow_new(void)
{
	return calloc(1, sizeof(struct prec_follow));
}

void prec_follow_free(struct prec_follow *fl)
{
	if (!fl)
		return;
	prec_fmt_free(fl->f);
	free(fl->st);
	free(fl);
}

const struct prec_follow_stats *prec_follow_stats(const struct prec_follow *fl)
{
	return &fl->stats;
}

bool prec_follow_started(const struct prec_follow *fl)
{
	return fl->f != NULL;
}

/* The state kept for stream @st, made when new; NULL: no memory. */
static struct follow_st *follow_st_of(struct prec_follow *fl, const struct prec_stream *st)
{
	struct follow_st *x;
	size_t i;

	for (i = 0; i < fl->n; i++)
		if (fl->st[i].tid == st->tid && fl->st[i].cpu == st->cpu)
			return &fl->st[i];
	x = realloc(fl->st, (fl->n + 1) * sizeof(*x));
	if (!x)
		return NULL;
	fl->st = x;
	x = &fl->st[fl->n++];
	memset(x, 0, sizeof(*x));
	x->tid = st->tid;
	x->cpu = st->cpu;
	return x;
}

/* Opens the decoder of stream @i where the last round left it. */
static int follow_open(struct prec_session *s, const struct prec_decoder_ops *ops,
		       struct prec_decoder_opts *dopts, struct prec_follow *fl, size_t i,
		       struct head *h)
{
	const struct prec_stream *st = prec_session_stream(s, i);
	struct follow_st *x = follow_st_of(fl, st);
	uint64_t from = 0;
	int err;

	if (!x)
		return -ENOMEM;
	/*
	 * With libipt's block decoder, blocks end where its block cache (the
	 * session's, cold in each round) says, so a resumed decode may cut
	 * them otherwise, and the events counted would not be the same: views
	 * with blocks (--events, --insn-trace) decode from the beginning. The
	 * walk's blocks end at branches and events only.
	 */
	dopts->resume = x->rp.set && (dopts->no_blocks || !dopts->libipt_core) ? &x->rp : NULL;
	err = prec_decoder_open(ops, s, st, dopts, &h->d);
	if (err == -ESTALE) { /* the place does not fit the stream: from its beginning */
		x->rp.set = false;
		dopts->resume = NULL;
		err = prec_decoder_open(ops, s, st, dopts, &h->d);
	}
	if (err)
		return err;
	if (dopts->resume)
		from = x->rp.pos;
	fl->stats.bytes += st->len;
	fl->stats.decoded += st->len > from ? st->len - from : 0;
	h->idx = dopts->resume ? x->rp.ordinal : 0;
	for (;;) {
		err = prec_decoder_next_ref(h->d, &h->ev);
		if (err <= 0 || h->idx >= x->consumed)
			break;
		h->idx++;
		fl->stats.dropped++;
	}
	h->valid = err > 0;
	return err < 0 ? err : 0;
}

/* What the round leaves to the next: each stream's count and place. */
static void follow_keep(struct prec_session *s, struct prec_follow *fl, struct head *h,
			size_t n, uint64_t until)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct follow_st *x;
		struct prec_resume rp;

		if (!h[i].d || !(x = follow_st_of(fl, prec_session_stream(s, i))))
			continue;
		x->consumed = h[i].idx;
		if (prec_decoder_resume_at(h[i].d, x->consumed, &rp))
			x->rp = rp;
	}
	fl->until = PREC_MAX(fl->until, until);
}

/* One --follow round over session @s (prec_output_opts.rounds). */
static int follow_run(struct prec_session *s, const struct prec_output_opts *o, FILE *outf,
		      struct prec_follow *fl)
{
	const struct prec_decoder_ops *ops = o->decoder ? o->decoder : prec_decoder_for_session(s);
	struct prec_decoder_opts dopts;
	size_t i, n = prec_session_nr_streams(s), sbi = 0;
	struct head *h;
	uint64_t until;
	int err;

	err = fl->f ? fmt_rebind(fl->f, s, o) : prec_fmt_new(s, o, outf, &fl->f);
	if (err) {
		fl->stats.broken = fl->f != NULL;
		return err;
	}
	fl->stats = (struct prec_follow_stats){ .rounds = fl->stats.rounds + 1 };
	h = calloc(n + 1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	decoder_opts(fl->f, o, &dopts);
	dopts.jobs = 1;
	dopts.shards = NULL;
	for (i = 0; !err && i < n; i++)
		if (stream_wanted(s, o, prec_session_stream(s, i)))
			err = follow_open(s, ops, &dopts, fl, i, &h[i]);
	until = err ? 0 : o->last_round ? UINT64_MAX : settled(s, h, n);
	while (sbi < prec_session_nr_sb(s) && prec_session_sb(s, sbi)->time < fl->until)
		sbi++;
	if (!err)
		err = merge_streams(s, fl->f, h, n, &until, sbi);
	if (!err)
		follow_keep(s, fl, h, n, until);
	else
		fl->stats.broken = true; /* what was formatted is not known */
	if (!err && o->last_round) {
		err = prec_fmt_finish(fl->f);
		/* As prec_output_run(): the function exists but never ran. */
		if (!err && o->symbol && !fl->f->symbol_ran)
			err = -PREC_E_NOMATCH;
	} else if (!err) {
		err = flush_out(fl->f);
	} else if (!fl->f->werr) {
		flush_out(fl->f);
	}
	for (i = 0; i < n; i++)
		prec_decoder_free(h[i].d);
	free(h);
	return err < 0 ? err : 0;
}

int prec_output_run(struct prec_session *s, const struct prec_output_opts *o, FILE *outf)
{
	const struct prec_decoder_ops *ops = o->decoder ? o->decoder : prec_decoder_for_session(s);
	struct prec_decoder_opts dopts = { 0 };
	struct prec_fmt_ctx *f = NULL;
	struct head *h = NULL;
	size_t i, n;
	uint64_t until;
	int err;

	if (o->symbol && !symbol_exists(s, o->symbol))
		return -PREC_E_NOSYM;
	if (o->rounds && (o->follow || o->last_round))
		return follow_run(s, o, outf, o->rounds);
	err = prec_fmt_new(s, o, outf, &f);
	if (err)
		return err;
	n = prec_session_nr_streams(s);
	h = calloc(n + 1, sizeof(*h));
	if (!h) {
		err = -ENOMEM;
		goto out;
	}
	decoder_opts(f, o, &dopts);
	for (i = 0; i < n; i++) {
		const struct prec_stream *st = prec_session_stream(s, i);

		if (!stream_wanted(s, o, st)) {
			if (i < f->nst)
				f->st[i].skipped = true;
			continue;
		}
		err = prec_decoder_open(ops, s, st, &dopts, &h[i].d);
		if (err)
			goto out;
		err = prec_decoder_next_ref(h[i].d, &h[i].ev);
		if (err < 0)
			goto out;
		h[i].valid = err > 0;
	}
	until = o->follow ? settled(s, h, n) : UINT64_MAX;
	err = merge_streams(s, f, h, n, &until, 0);
	if (!err && o->follow)
		err = flush_out(f);
	else if (!err)
		err = prec_fmt_finish(f);
	/* The function exists but never ran in what was decoded: say so. */
	if (!err && !o->follow && o->symbol && !f->symbol_ran)
		err = -PREC_E_NOMATCH;
out:
	for (i = 0; h && i < n; i++)
		prec_decoder_free(h[i].d);
	free(h);
	if (err < 0 && f && !f->werr)
		flush_out(f);
	prec_fmt_free(f);
	return err < 0 ? err : 0;
}

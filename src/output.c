// SPDX-License-Identifier: MIT
/* Formatters above the decoder interface: call traces, insns, branches, stats. */
#include <capstone/capstone.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image.h"
#include "coresight.h"
#include "output.h"
#include "util.h"

#define OUTBUF_SIZE (1u << 20)
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
};

struct sstats {
	uint64_t insns, blocks, branches, calls, rets, begins, ends, errors, gaps, lost,
		overflows, switches, syscalls, interrupts, pauses;
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
	int werr;
	int spacing;
	bool show_cpu;
	bool time_filter;

	struct thr *thr;
	size_t nthr, cthr, last;

	struct sstats *st;        /* per stream */
	size_t nst;
	uint64_t *trig_count;     /* per event */
	struct trig *trigs;
	size_t ntrigs;

	csh cs;
	bool cs_ok;
};

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
	return f->werr;
}

static int out(struct prec_fmt_ctx *f, const char *fmt, ...) prec_printf(2, 3);
static int out(struct prec_fmt_ctx *f, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (f->werr)
		return 0;
	va_start(ap, fmt);
	n = vsnprintf(f->buf + f->len, OUTBUF_SIZE - f->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return 0;
	if ((size_t)n >= OUTBUF_SIZE - f->len) {
		if (flush_out(f))
			return 0;
		va_start(ap, fmt);
		n = vsnprintf(f->buf, OUTBUF_SIZE, fmt, ap);
		va_end(ap);
		if (n < 0)
			return 0;
		if ((size_t)n >= OUTBUF_SIZE)
			n = OUTBUF_SIZE - 1;
	}
	f->len += (size_t)n;
	return n;
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

static uint64_t ctx_time(const struct prec_tev *ev)
{
	return ev->time ? ev->time : UINT64_MAX;
}

static void resolve(struct prec_fmt_ctx *f, int pid, uint64_t time, uint64_t addr,
		    struct prec_loc *loc)
{
	struct prec_aspace *as = prec_images_aspace(f->im, pid, time);

	prec_aspace_resolve(as, addr, loc);
}

static void prefix(struct prec_fmt_ctx *f, int tid, int cpu, uint64_t time)
{
	const char *comm = tid >= 0 ? prec_session_comm(f->s, tid, time ? time : UINT64_MAX) :
				      "";
	char c[24];

	if (!*comm) {
		snprintf(c, sizeof(c), ":%d", tid);
		comm = c;
	}
	out(f, "%16s %7d ", comm, tid);
	if (f->show_cpu && cpu >= 0)
		out(f, "[%03d] ", cpu);
	out(f, "%5" PRIu64 ".%09" PRIu64 ": ", time / 1000000000, time % 1000000000);
}

static void flags_col(struct prec_fmt_ctx *f, const char *name)
{
	if (f->o.fmt == PREC_FMT_CALL_RET_TRACE)
		out(f, "  %-21s ", name);
}

/* "(dso)\t" + indent + name, padded to a sticky width like perf's callindent. */
static void callindent(struct prec_fmt_ctx *f, const char *dso, uint32_t depth,
		       const struct prec_loc *loc, uint64_t addr)
{
	int len = 0;

	out(f, "(%-*.*s)\t", DSO_PAD, DSO_PAD - 1, dso ? dso : "[unknown]");
	if (loc->sym)
		len = out(f, "%*s%s", (int)depth * 4, "", loc->sym->name);
	else if (addr)
		len = out(f, "%*s%16" PRIx64, (int)depth * 4, "", addr);
	if (len > f->spacing || (len && len < f->spacing - 52))
		f->spacing = (len + 4 + 31) / 32 * 32;
	if (len < f->spacing)
		out(f, "%*s", f->spacing - len, "");
	out(f, "\n");
}

static void symoff(struct prec_fmt_ctx *f, const struct prec_loc *loc, uint64_t addr)
{
	if (loc->sym)
		out(f, "%s+0x%" PRIx64, loc->sym->name, loc->symoff);
	else
		out(f, "[unknown]");
	out(f, " (%s)", loc->dso ? loc->dso : "[unknown]");
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
		if (!ev->time || ev->time < f->o.time_start ||
		    (f->o.time_end && ev->time > f->o.time_end))
			return false;
	}
	return true;
}

static bool sym_is(const struct prec_fmt_ctx *f, const struct prec_loc *loc)
{
	return f->o.symbol && loc->sym && !strcmp(loc->sym->name, f->o.symbol);
}

static bool visible(const struct prec_fmt_ctx *f, const struct thr *t,
		    const struct prec_tev *ev)
{
	if (!in_filter(f, ev))
		return false;
	return !f->o.symbol || (t && t->active);
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
		int len = 0;

		out(f, "(%-*.*s)\t", DSO_PAD, DSO_PAD - 1,
		    dso_loc->dso ? dso_loc->dso : "[unknown]");
		if (name_loc->sym)
			len = out(f, "%*s%s", (int)depth * 4, "", name_loc->sym->name);
		else if (addr)
			len = out(f, "%*s%16" PRIx64, (int)depth * 4, "", addr);
		(void)len;
		out(f, "  (%s by %s)\n", !strcmp(flag, "tr end") ? "paused" : "resumed",
		    d ? d->name : "?");
		return;
	}
	callindent(f, dso_loc->dso, depth, name_loc, addr);
}

static void print_error(struct prec_fmt_ctx *f, const struct prec_tev *ev)
{
	const char *what;

	switch (ev->type) {
	case PREC_TEV_GAP:
		what = "trace data lost";
		break;
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
	else if (ev->type == PREC_TEV_GAP)
		out(f, ": %" PRIu64 " bytes missing\n", ev->u.gap.lost);
	else
		out(f, " ip %#" PRIx64 "\n", ev->u.trace.ip);
}

static void print_insns(struct prec_fmt_ctx *f, const struct prec_tev *ev)
{
	struct prec_aspace *as = prec_images_aspace(f->im, ev->pid, ctx_time(ev));
	uint64_t ip = ev->u.block.ip;
	struct prec_loc loc;
	uint32_t i;

	for (i = 0; i < ev->u.block.ninsn && ip <= ev->u.block.end_ip; i++) {
		uint8_t bytes[16];
		size_t n = prec_aspace_read(as, ip, bytes, 15);
		cs_insn *insn = NULL;

		prec_aspace_resolve(as, ip, &loc);
		prefix(f, ev->tid, ev->cpu, ev->time);
		out(f, "%16" PRIx64 " ", ip);
		if (loc.sym) {
			out(f, "%s+0x%" PRIx64, loc.sym->name, loc.symoff);
		} else {
			out(f, "[unknown]");
		}
		out(f, " (%s)\t", loc.dso ? loc.dso : "[unknown]");
		if (!f->cs_ok || !n || cs_disasm(f->cs, bytes, n, ip, 1, &insn) != 1) {
			out(f, "(no code)\n");
			return;
		}
		out(f, "%s%s%s", insn->mnemonic, insn->op_str[0] ? " " : "", insn->op_str);
		if (f->o.srcline && loc.symtab) {
			struct prec_srcline sl;

			if (!prec_symtab_srcline(loc.symtab, loc.vaddr, prec_session_symfs(f->s),
						 &sl))
				out(f, "\t%s:%d", sl.file, sl.line);
		}
		out(f, "\n");
		ip += insn->size;
		cs_free(insn, 1);
	}
}

static void print_event(struct prec_fmt_ctx *f, const struct prec_tev *ev)
{
	prefix(f, ev->tid, ev->cpu, ev->time);
	switch (ev->type) {
	case PREC_TEV_BLOCK:
		out(f, "block %#" PRIx64 "-%#" PRIx64 " ninsn %u\n", ev->u.block.ip,
		    ev->u.block.end_ip, ev->u.block.ninsn);
		break;
	case PREC_TEV_BRANCH:
		out(f, "branch %s %#" PRIx64 " => %#" PRIx64 "\n",
		    prec_br_kind_name(ev->u.branch.kind), ev->u.branch.from, ev->u.branch.to);
		break;
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
	case PREC_TEV_GAP:
		out(f, "gap offset %#" PRIx64 " lost %" PRIu64 "\n", ev->offset, ev->u.gap.lost);
		break;
	case PREC_TEV_OVERFLOW:
		out(f, "overflow %#" PRIx64 "\n", ev->u.trace.ip);
		break;
	case PREC_TEV_SWITCH:
		out(f, "switch from %d/%d\n", ev->u.sw.prev_pid, ev->u.sw.prev_tid);
		break;
	case PREC_TEV_TIME:
		out(f, "time\n");
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

	/* Symbols only where they are printed or filtered on. */
	bool need = call_fmt(f) || f->o.fmt == PREC_FMT_BRANCHES || f->o.symbol;

	if (need)
		resolve(f, ev->pid, ctx_time(ev), from, &floc);
	else
		memset(&floc, 0, sizeof(floc));
	if (need && to &&
	    (k == PREC_BR_CALL || f->o.fmt == PREC_FMT_BRANCHES || f->o.symbol))
		resolve(f, ev->pid, ctx_time(ev), to, &tloc);
	else
		memset(&tloc, 0, sizeof(tloc));

	if (k == PREC_BR_CALL || ((k == PREC_BR_SYSCALL || k == PREC_BR_INTERRUPT) && to)) {
		uint64_t ret = k == PREC_BR_INTERRUPT ? from : from + ev->u.branch.insn_len;

		stk_push(t, ret);
		if (f->o.symbol && !t->active && sym_is(f, &tloc)) {
			t->active = true;
			t->by_ip = false;
			t->adepth = t->n;
		}
		vis = visible(f, t, ev);
		if (vis) {
			ss->calls += k == PREC_BR_CALL;
			ss->syscalls += k == PREC_BR_SYSCALL;
			ss->interrupts += k == PREC_BR_INTERRUPT;
		}
		if (vis && call_fmt(f))
			print_call_line(f, ev, k == PREC_BR_CALL ? "call" : prec_br_kind_name(k),
					t->n, &floc, &tloc, to, -1);
	} else if (k == PREC_BR_RETURN || k == PREC_BR_SYSRET) {
		bool was = visible(f, t, ev);

		stk_pop_to(t, to);
		if (was) {
			ss->rets += k == PREC_BR_RETURN;
			if (f->o.fmt == PREC_FMT_CALL_RET_TRACE)
				print_call_line(f, ev, k == PREC_BR_RETURN ? "return" : "sysret",
						t->n + 1, &floc, &floc, from, -1);
		}
		if (t->active && ((!t->by_ip && t->n < t->adepth) ||
				  (t->by_ip && (t->n < t->adepth ||
						(sym_is(f, &floc) && t->n <= t->adepth)))))
			t->active = false;
		vis = was;
	} else {
		if (k == PREC_BR_SYSCALL && visible(f, t, ev))
			ss->syscalls++;
		vis = visible(f, t, ev);
	}
	if (!vis)
		return;
	ss->branches++;
	if (f->o.fmt == PREC_FMT_BRANCHES) {
		prefix(f, ev->tid, ev->cpu, ev->time);
		out(f, "%-8s %16" PRIx64 " ", prec_br_kind_name(k), from);
		symoff(f, &floc, from);
		out(f, " => %16" PRIx64 " ", to);
		if (to)
			symoff(f, &tloc, to);
		else
			out(f, "[untraced]");
		out(f, "\n");
	}
}

static void on_trace(struct prec_fmt_ctx *f, struct thr *t, struct sstats *ss,
		     const struct prec_tev *ev)
{
	bool begin = ev->type == PREC_TEV_TRACE_BEGIN;
	struct prec_loc loc;
	int trig;

	resolve(f, ev->pid, ctx_time(ev), ev->u.trace.ip, &loc);
	if (begin) {
		stk_pop_to(t, ev->u.trace.ip);
		if (f->o.symbol && !t->active && sym_is(f, &loc)) {
			t->active = true;
			t->by_ip = true;
			t->adepth = t->n;
		}
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
	if (!begin) {
		t->in_syscall = ev->u.trace.reason == PREC_END_SYSCALL;
		t->end_time = ev->time;
		t->ended = true;
		t->paused = trig >= 0;
	}
	if (!visible(f, t, ev))
		return;
	if (begin)
		ss->begins++;
	else
		ss->ends++;
	if (!begin && (trig >= 0 || ev->u.trace.reason != PREC_END_SYSCALL))
		ss->pauses++;
	if (call_fmt(f)) {
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

int prec_fmt_event(struct prec_fmt_ctx *f, size_t si, const struct prec_tev *ev)
{
	struct sstats dummy, *ss = si < f->nst ? &f->st[si] : &dummy;
	struct thr *t = thread_get(f, ev->tid);

	if (!t)
		return -ENOMEM;
	if (f->o.fmt == PREC_FMT_EVENTS) {
		if (in_filter(f, ev))
			print_event(f, ev);
		return f->werr;
	}
	switch (ev->type) {
	case PREC_TEV_BLOCK:
		if (f->o.symbol && !t->active) {
			struct prec_loc loc;

			resolve(f, ev->pid, ctx_time(ev), ev->u.block.ip, &loc);
			if (!sym_is(f, &loc))
				break;
		} else if (!visible(f, t, ev)) {
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
	case PREC_TEV_TRACE_BEGIN:
	case PREC_TEV_TRACE_END:
		on_trace(f, t, ss, ev);
		break;
	case PREC_TEV_ERROR:
	case PREC_TEV_GAP:
	case PREC_TEV_OVERFLOW:
		if (!in_filter(f, ev) && ev->time)
			break;
		if (ev->type == PREC_TEV_ERROR)
			ss->errors++;
		else if (ev->type == PREC_TEV_GAP) {
			ss->gaps++;
			ss->lost += ev->u.gap.lost;
		} else {
			ss->overflows++;
		}
		if (f->o.fmt != PREC_FMT_STATS)
			print_error(f, ev);
		break;
	case PREC_TEV_SWITCH:
		ss->switches++;
		break;
	case PREC_TEV_TIME:
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
	if (f->o.fmt == PREC_FMT_STATS)
		return 0;
	if (f->o.symbol) {
		const struct thr *t = thread_get(f, sb->tid);

		if (!t || !t->active)
			return f->werr;
	}
	resolve(f, sb->pid, sb->time ? sb->time : UINT64_MAX, sb->u.sample.ip, &loc);
	prefix(f, sb->tid, sb->cpu, sb->time);
	flags_col(f, d->kind == PREC_EVK_PAUSE ? "pause" : "resume");
	out(f, "-- %s trigger %s at %#" PRIx64 " ", d->kind == PREC_EVK_PAUSE ? "pause" : "resume",
	    d->name, sb->u.sample.ip);
	symoff(f, &loc, sb->u.sample.ip);
	out(f, "\n");
	return f->werr;
}

/* ---- stats ---- */

static void print_stats(struct prec_fmt_ctx *f)
{
	struct sstats tot = { 0 };
	uint64_t bytes = 0;
	size_t i;

	for (i = 0; i < f->nst; i++) {
		const struct prec_stream *st = prec_session_stream(f->s, i);
		const struct sstats *x = &f->st[i];

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
	out(f, "total: %zu streams, %" PRIu64 " bytes\n", f->nst, bytes);
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
	if (f->cs_ok)
		cs_close(&f->cs);
	free(f);
}

int prec_fmt_new(struct prec_session *s, const struct prec_output_opts *o, FILE *outf,
		 struct prec_fmt_ctx **ctx)
{
	struct prec_fmt_ctx *f;
	size_t i, n;

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
	f->buf = malloc(OUTBUF_SIZE);
	f->nst = prec_session_nr_streams(s);
	f->st = calloc(f->nst + 1, sizeof(*f->st));
	f->trig_count = calloc(prec_session_nr_events(s) + 1, sizeof(*f->trig_count));
	n = prec_session_nr_sb(s);
	f->trigs = calloc(n + 1, sizeof(*f->trigs));
	if (!f->buf || !f->st || !f->trig_count || !f->trigs) {
		prec_fmt_free(f);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		const struct prec_sb *sb = prec_session_sb(s, i);
		const struct prec_evdesc *d;

		if (sb->type != PREC_SB_SAMPLE)
			continue;
		d = prec_session_event(s, sb->event);
		if (!d || (d->kind != PREC_EVK_PAUSE && d->kind != PREC_EVK_RESUME))
			continue;
		f->trigs[f->ntrigs++] = (struct trig){ sb->time, sb->u.sample.ip, sb->tid,
						       sb->cpu, sb->event, d->kind };
	}
	f->show_cpu = o->show_cpu < 0 ? prec_session_machine(s)->per_cpu : o->show_cpu;
	f->time_filter = o->time_start || o->time_end;
	if (o->fmt == PREC_FMT_INSN_TRACE) {
		bool arm = !strcmp(prec_session_machine(s)->vendor, "ARM");

		f->cs_ok = cs_open(arm ? CS_ARCH_ARM64 : CS_ARCH_X86, arm ? CS_MODE_ARM : CS_MODE_64,
				   &f->cs) == CS_ERR_OK;
		if (f->cs_ok && !arm)
			cs_option(f->cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
	}
	*ctx = f;
	return 0;
}

int prec_fmt_finish(struct prec_fmt_ctx *f)
{
	if (f->o.fmt == PREC_FMT_STATS)
		print_stats(f);
	flush_out(f);
	if (!f->werr && fflush(f->out))
		f->werr = errno == EPIPE ? -EPIPE : -EIO;
	return f->werr;
}

/* Does any symbol table we can reach name @sym? */
static bool symbol_exists(struct prec_session *s, const char *sym)
{
	struct prec_images *im = prec_session_images(s);
	size_t i, n = prec_session_nr_sb(s);

	if (prec_symtab_find(prec_images_kernel_symtab(im), sym))
		return true;
	for (i = 0; i < n; i++) {
		const struct prec_sb *sb = prec_session_sb(s, i);
		struct prec_loc loc;

		if (sb->type != PREC_SB_MMAP || sb->u.mmap.kernel)
			continue;
		prec_aspace_resolve(prec_images_aspace(im, sb->pid, sb->time), sb->u.mmap.start,
				    &loc);
		if (prec_symtab_find(loc.symtab, sym))
			return true;
	}
	return false;
}

struct head {
	struct prec_decoder *d;
	struct prec_tev ev;
	bool valid;
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

int prec_output_run(struct prec_session *s, const struct prec_output_opts *o, FILE *outf)
{
	const struct prec_decoder_ops *ops = o->decoder ? o->decoder : prec_decoder_for_session(s);
	struct prec_decoder_opts dopts = { 0 };
	struct prec_fmt_ctx *f = NULL;
	struct head *h = NULL;
	size_t i, n, nsb, sbi = 0;
	int err;

	if (o->symbol && !symbol_exists(s, o->symbol))
		return -PREC_E_NOSYM;
	err = prec_fmt_new(s, o, outf, &f);
	if (err)
		return err;
	n = prec_session_nr_streams(s);
	nsb = prec_session_nr_sb(s);
	h = calloc(n + 1, sizeof(*h));
	if (!h) {
		err = -ENOMEM;
		goto out;
	}
	dopts.no_blocks = o->fmt == PREC_FMT_CALL_TRACE || o->fmt == PREC_FMT_CALL_RET_TRACE ||
			  o->fmt == PREC_FMT_BRANCHES;
	for (i = 0; i < n; i++) {
		const struct prec_stream *st = prec_session_stream(s, i);

		if (!stream_wanted(s, o, st))
			continue;
		err = prec_decoder_open(ops, s, st, &dopts, &h[i].d);
		if (err)
			goto out;
		err = prec_decoder_next(h[i].d, &h[i].ev);
		if (err < 0)
			goto out;
		h[i].valid = err > 0;
	}
	for (;;) {
		size_t best = n;

		for (i = 0; i < n; i++)
			if (h[i].valid && (best == n || h[i].ev.time < h[best].ev.time))
				best = i;
		while (sbi < nsb && prec_session_sb(s, sbi)->type != PREC_SB_SAMPLE)
			sbi++;
		if (sbi < nsb &&
		    (best == n || prec_session_sb(s, sbi)->time <= h[best].ev.time)) {
			err = prec_fmt_trigger(f, prec_session_sb(s, sbi));
			if (err)
				goto out;
			sbi++;
			continue;
		}
		if (best == n)
			break;
		err = prec_fmt_event(f, best, &h[best].ev);
		if (err)
			goto out;
		err = prec_decoder_next(h[best].d, &h[best].ev);
		if (err < 0)
			goto out;
		h[best].valid = err > 0;
	}
	err = prec_fmt_finish(f);
out:
	for (i = 0; h && i < n; i++)
		prec_decoder_free(h[i].d);
	free(h);
	if (err < 0 && f && !f->werr)
		flush_out(f);
	prec_fmt_free(f);
	return err < 0 ? err : 0;
}

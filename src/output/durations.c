// SPDX-License-Identifier: MIT
/*
 * --call-trace --durations: the call trace with each call's duration and
 * instruction count, in the manner of uftrace replay: a call that calls
 * nothing is one line "name();", any other opens with "name() {" and
 * closes with "} (slash-star) name (star-slash)" where the numbers are. A tap of
 * prec_output_run() (output.h): the same events, filters and call depths
 * as --call-trace.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "decoders/decoder.h"
#include "output/report.h"
#include "session/image.h"

struct dframe {
	uint64_t ret, t0, i0, time;
	const char *name;         /* owned by the symbol table or by @own, or NULL */
	char *own;                /* a copy of the name the frame outlives (--follow) */
	uint64_t addr;
	char objoff[80];          /* "object+0xOFF" when no symbol names it */
	bool opened;              /* its "name() {" line is out */
	bool visible;             /* the filters pass its call */
	bool plt;                 /* --no-plt: a call through a PLT stub that
				     waits for the function the stub serves */
	bool lazy;                /* --no-plt: a call of the lazy-binding path */
};

struct dthr {
	int tid;
	struct dframe *stk;
	size_t n;
	uint64_t insns;
};

struct dctx {
	struct prec_session *s;
	FILE *out;
	bool timed;
	int max_depth;            /* lines deeper than this are left out; 0: all */
	const regex_t *hide;      /* --hide-dso: no line of a call into these */
	struct dthr *thr;
	size_t nthr;
	int err;
};

struct prec_durations {
	struct dctx c;
};

static struct dthr *dthr_get(struct dctx *c, int tid)
{
	size_t i;

	for (i = 0; i < c->nthr; i++)
		if (c->thr[i].tid == tid)
			return &c->thr[i];
	if (PREC_ARRAY_RESERVE(c->thr, c->nthr, 1))
		return NULL;
	memset(&c->thr[c->nthr], 0, sizeof(c->thr[0]));
	c->thr[c->nthr].tid = tid;
	return &c->thr[c->nthr++];
}

/* "comm tid time: DURATION INSNS | indent" */
static void line_head(struct dctx *c, int tid, uint64_t time, const uint64_t *dur,
		      const uint64_t *insns, size_t depth)
{
	const char *comm = prec_session_comm(c->s, tid, time || c->timed ? time : UINT64_MAX);

	fprintf(c->out, "%16s %7d %5" PRIu64 ".%09" PRIu64 ": ", comm && *comm ? comm : "?", tid,
		time / 1000000000, time % 1000000000);
	if (dur && c->timed)
		fprintf(c->out, "%10.3f us ", *dur / 1000.0);
	else
		fprintf(c->out, "%13s ", "");
	if (insns)
		fprintf(c->out, "%10" PRIu64 " insns ", *insns);
	else
		fprintf(c->out, "%16s ", "");
	fprintf(c->out, "| %*s", (int)(depth > 1024 ? 1024 : depth) * 4, "");
}

static void frame_name(struct dctx *c, const struct dframe *f)
{
	if (f->name)
		fputs(f->name, c->out);
	else if (f->objoff[0])
		fputs(f->objoff, c->out);
	else
		fprintf(c->out, "%16" PRIx64, f->addr); /* as --call-trace */
}

/* Writes the "name() {" line of frame @k of @t if it is not out yet. */
static void open_line(struct dctx *c, struct dthr *t, size_t k)
{
	struct dframe *f = &t->stk[k];

	/* A stub's call waits for its target's name; the resolver's make no line. */
	if (f->opened || f->plt || f->lazy)
		return;
	f->opened = true;
	if (!f->visible || (c->max_depth && k + 1 > (size_t)c->max_depth))
		return;
	line_head(c, t->tid, f->time, NULL, NULL, k + 1);
	frame_name(c, f);
	fputs("() {\n", c->out);
}

static void close_top(struct dctx *c, struct dthr *t, uint64_t time)
{
	struct dframe *f = &t->stk[t->n - 1];
	uint64_t dur = time > f->t0 ? time - f->t0 : 0, insns = t->insns - f->i0;
	size_t depth = t->n--;

	if (f->visible && !(c->max_depth && depth > (size_t)c->max_depth)) {
		line_head(c, t->tid, f->opened ? time : f->time, &dur, &insns, depth);
		if (f->opened) {
			fputs("} /* ", c->out);
			frame_name(c, f);
			fputs(" */\n", c->out);
		} else {
			frame_name(c, f);
			fputs("();\n", c->out);
		}
	}
	free(f->own);
	f->own = NULL;
}

static void pop_to(struct dctx *c, struct dthr *t, uint64_t to, uint64_t time)
{
	size_t i;

	if (!to)
		return;
	for (i = t->n; i > 0; i--)
		if (t->stk[i - 1].ret == to) {
			while (t->n >= i)
				close_top(c, t, time);
			return;
		}
}

static void resolve_loc(struct dctx *c, const struct prec_tev *ev, uint64_t addr,
			struct prec_loc *loc)
{
	struct prec_aspace *as = prec_images_aspace(prec_session_images(c->s), ev->pid,
						    ev->time || c->timed ? ev->time : UINT64_MAX);

	prec_aspace_resolve(as, addr, loc);
}

/* Names frame @f after the code at @addr (@loc); the filters decide its line. */
static void frame_at(struct dctx *c, struct dframe *f, const struct prec_loc *loc, uint64_t addr)
{
	free(f->own);
	f->own = NULL;
	f->name = loc->sym ? loc->sym->name : NULL;
	f->addr = addr;
	f->objoff[0] = 0;
	if (!loc->sym)
		prec_loc_objoff(loc, f->objoff, sizeof(f->objoff));
	if (c->hide && !regexec(c->hide, loc->dso ? loc->dso : "[unknown]", 0, NULL, 0))
		f->visible = false;
}

static void on_call(struct dctx *c, struct dthr *t, const struct prec_tev *ev,
		    const struct prec_tap_info *info)
{
	enum prec_br_kind k = ev->u.branch.kind;
	struct dframe *f;
	struct prec_loc loc;

	if (PREC_ARRAY_RESERVE(t->stk, t->n, 1)) {
		c->err = -ENOMEM;
		return;
	}
	if (t->n)
		open_line(c, t, t->n - 1);
	resolve_loc(c, ev, ev->u.branch.to, &loc);
	f = &t->stk[t->n++];
	*f = (struct dframe){
		.ret = k == PREC_BR_INTERRUPT ? ev->u.branch.from :
						ev->u.branch.from + ev->u.branch.insn_len,
		.t0 = ev->time, .i0 = t->insns, .time = ev->time, .visible = info->visible,
	};
	frame_at(c, f, &loc, ev->u.branch.to);
	if (info->plt_hidden) {
		/* held for its target (the stub's call), or a line of the path to it */
		f->plt = k == PREC_BR_CALL && loc.sym && prec_plt_stub(loc.sym->name) &&
			 !(t->n > 1 && (t->stk[t->n - 2].plt || t->stk[t->n - 2].lazy));
		f->lazy = !f->plt;
		if (f->lazy)
			f->visible = false;
	}
}

/* --no-plt: the call held at @depth reached @to: it is a call of that function. */
static int tap_plt_call(void *arg, const struct prec_tev *call, uint64_t to, int depth)
{
	struct dctx *c = arg;
	struct dthr *t = dthr_get(c, call->tid);
	struct prec_loc loc;
	struct dframe *f;

	if (!t)
		return -ENOMEM;
	if (depth < 1 || (size_t)depth > t->n || !t->stk[depth - 1].plt)
		return 0;
	f = &t->stk[depth - 1];
	resolve_loc(c, call, to, &loc);
	frame_at(c, f, &loc, to);
	f->plt = false;
	return 0;
}

static int tap_event(void *arg, size_t stream, const struct prec_tev *ev,
		     const struct prec_tap_info *info)
{
	struct dctx *c = arg;
	struct dthr *t = dthr_get(c, ev->tid);
	enum prec_br_kind k;

	(void)stream;
	if (!t)
		return -ENOMEM;
	switch (ev->type) {
	case PREC_TEV_BLOCK:
		if (info->visible)
			t->insns += ev->u.block.ninsn;
		break;
	case PREC_TEV_BRANCH:
		k = ev->u.branch.kind;
		if (k == PREC_BR_CALL ||
		    ((k == PREC_BR_SYSCALL || k == PREC_BR_INTERRUPT) && ev->u.branch.to))
			on_call(c, t, ev, info);
		else if (k == PREC_BR_RETURN || k == PREC_BR_SYSRET)
			pop_to(c, t, ev->u.branch.to, ev->time);
		break;
	case PREC_TEV_TRACE_BEGIN:
		pop_to(c, t, ev->u.trace.ip, ev->time);
		break;
	default:
		break;
	}
	return c->err ? c->err : ferror(c->out) ? prec_view_status(c->out) : 0;
}

/*
 * The end of a round of --follow: the frames still open outlive the
 * round's session, so their names become their own. False: no memory.
 */
static bool own_names(struct dctx *c)
{
	size_t i, k;

	for (i = 0; i < c->nthr; i++)
		for (k = 0; k < c->thr[i].n; k++) {
			struct dframe *f = &c->thr[i].stk[k];

			if (!f->name || f->own)
				continue;
			f->own = strdup(f->name);
			if (!f->own)
				return false;
			f->name = f->own;
		}
	return true;
}

static void dctx_fini(struct dctx *c)
{
	size_t i, k;

	for (i = 0; i < c->nthr; i++) {
		for (k = 0; k < c->thr[i].n; k++)
			free(c->thr[i].stk[k].own);
		free(c->thr[i].stk);
	}
	free(c->thr);
	c->thr = NULL;
	c->nthr = 0;
}

struct prec_durations *prec_durations_new(void)
{
	return calloc(1, sizeof(struct prec_durations));
}

void prec_durations_free(struct prec_durations *keep)
{
	if (!keep)
		return;
	dctx_fini(&keep->c);
	free(keep);
}

int prec_view_durations(struct prec_session *s, const struct prec_output_opts *o, FILE *out,
			struct prec_durations *keep)
{
	struct dctx local = { 0 }, *c = keep && o->rounds ? &keep->c : &local;
	struct prec_tap tap = { tap_event, NULL, c, o->no_plt ? tap_plt_call : NULL,
				 PREC_BR_NO_JUMPS, false, true };
	struct prec_output_opts oo = *o;
	size_t i, k;
	int err;

	c->s = s;
	c->out = out;
	c->timed = prec_session_machine(s)->tsc;
	c->max_depth = o->max_depth;
	c->hide = o->hide;
	c->err = 0;
	oo.fmt = PREC_FMT_TAP;
	oo.tap = &tap;
	err = prec_output_run(s, &oo, out);
	if (o->follow && c != &local) {
		/* more rounds to come: the open calls go on in the next */
		if (!err && !own_names(c))
			err = -ENOMEM;
		return err ? err : prec_view_status(out);
	}
	/* calls that never returned in the trace: their opening lines */
	for (i = 0; !o->follow && i < c->nthr; i++)
		for (k = 0; !err && k < c->thr[i].n; k++)
			open_line(c, &c->thr[i], k);
	dctx_fini(c);
	return err ? err : prec_view_status(out);
}

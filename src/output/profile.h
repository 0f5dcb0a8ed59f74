/* SPDX-License-Identifier: MIT */
/*
 * The profile of a decode: what --report, --windows, --diff, --folded and
 * --perfetto print, built from the one decoded event stream (a prec_tap of
 * prec_output_run(), output.h) without decoding anything again.
 *
 * Functions are told apart by object file and symbol (and thread, with
 * by_thread). Instruction counts are exact: every instruction of every
 * decoded block counts once, for the function its first address lies in
 * (self) and, while a call is open, for every function on the thread's
 * call stack (total; a recursive function counts its outermost call only).
 * A call is a call branch to the function's address range. Times come from
 * the trace's timestamps (ns; 0 for an untimed trace) and so are as coarse
 * as those.
 *
 * A trace window is a stretch of one thread from a trace begin that opened
 * it (the first, or one after a pause) to a trace end that was a pause (one
 * a pause trigger named), or to the end of the trace. In a recording with
 * no pause trigger each enabled stretch is a window: it ends at any trace
 * end but a system call's. A trace end followed at once by a begin at the
 * same IP and time never ends a window: that is a trap of a trigger that
 * found tracing as it wanted (so also when a pause sample taken at that IP
 * in a loop names the end).
 */
#ifndef PREC_PROFILE_H
#define PREC_PROFILE_H

#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "output/output.h"
#include "session/session.h"

struct prec_pfunc {
	const char *dso;          /* the object's path, "[unknown]" when unmapped */
	const char *name;         /* the symbol, "[unknown]" when none */
	int tid;                  /* with by_thread, else -1 */
	uint64_t calls, self_insns, total_insns, self_ns, total_ns;
	bool hidden;              /* --hide-dso matches its object */
};

struct prec_pedge {
	uint32_t caller, callee;  /* indices into the function table */
	uint64_t calls, total_insns, total_ns;
};

#define PREC_WIN_TOP 3

struct prec_pwin {
	int tid;
	int open_trig, close_trig; /* event index of the trigger, -1: none */
	bool open_at_end;         /* closed by the end of the trace */
	uint64_t start, end;      /* time (ns), 0 when untimed */
	uint64_t insns, calls;
	uint32_t ntop;
	uint32_t top[PREC_WIN_TOP]; /* functions with the most instructions */
	uint64_t top_insns[PREC_WIN_TOP];
};

/* A completed call (--perfetto). */
struct prec_pslice {
	int tid;
	uint32_t fn;
	uint32_t depth;
	uint64_t start, dur;      /* ns, or instructions in an untimed trace */
};

/* A point event (--perfetto): a trigger, a trace gap or error. */
struct prec_pinstant {
	int tid;
	uint64_t time;
	const char *what;         /* "resume", "pause", "gap", "error", "overflow" */
	char detail[96];
};

/* A folded stack: a node of the call tree (--folded). */
struct prec_pnode {
	uint32_t parent;          /* 0: the root (node 0 is the root) */
	uint32_t fn;
	uint64_t insns, ns, calls;
};

struct prec_profile_opts {
	bool by_thread;           /* one row per function and thread */
	bool no_plt;              /* fold PLT stubs and the lazy-binding resolver */
	bool slices;              /* keep completed calls for --perfetto */
	bool folded;              /* build the call tree for --folded */
	size_t max_slices;        /* keep the longest this many; 0: 1000000 */
	const regex_t *hide;      /* objects whose functions are left out */
};

struct prec_profile {
	struct prec_pfunc *fn;
	size_t nfn;
	struct prec_pedge *edge;
	size_t nedge;
	struct prec_pwin *win;
	size_t nwin;
	struct prec_pslice *slice; /* unsorted */
	size_t nslice;
	uint64_t slices_dropped;  /* completed calls left out (max_slices) */
	struct prec_pinstant *inst;
	size_t ninst;
	struct prec_pnode *node;
	size_t nnode;
	uint64_t insns, calls;    /* in all */
	bool timed;               /* the trace has timestamps */
	uint64_t first_time, last_time;
	struct prec_session *s;
	void *priv;
};

/*
 * Decodes @s through prec_output_run() with @o's filters (o->fmt and o->tap
 * are set here) and builds *@out. Returns 0 or a negative error.
 */
int prec_profile_run(struct prec_session *s, const struct prec_output_opts *o,
		     const struct prec_profile_opts *po, struct prec_profile **out);
void prec_profile_free(struct prec_profile *p);

/* The trigger event's name, or "start"/"end" text when @idx is -1. */
const char *prec_profile_trig_name(const struct prec_profile *p, int idx, const char *none);

/* The last path component of @path. */
const char *prec_profile_base(const char *path);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Formatters: call traces, instruction traces, branches, stats and raw
 * decoder events, above the decoder interface (they never see libipt).
 *
 * prec_output_run() decodes every stream of a finalized session, merges the
 * streams and the trigger samples of the sideband by time, and writes one
 * format. The lower-level prec_fmt_* calls take events one by one (tests,
 * other drivers).
 *
 * Call depth: every thread has its own shadow stack of return addresses. A
 * call pushes from + insn_len; a return pops down to the frame whose return
 * address is its target, and a return that matches no frame (its function
 * was entered before tracing started, or during a gap) leaves the stack as it
 * is. A trace begin at the return address on top of the stack pops it
 * (tracing resumed right after a return, as perf does). The stack survives
 * pauses, trace gaps, decode errors and thread switches, so the depth stays
 * right across them as long as the code between them did not return past
 * frames that were pushed before. Printed depths follow perf: a call is
 * printed at the depth after its push, a return at the depth before its pop.
 *
 * Trace begins and ends name the trigger that caused them ("resumed by X",
 * "paused by X"): a sample of a pause/resume event on the same thread, close
 * in time, taken at the begin's or end's IP when the sample's IP is a user
 * address (or, for an end at a syscall, at the next instruction). A begin
 * after an end that was no pause is never a resume: a trigger that found
 * tracing already as it wanted shows as an end and a begin at its IP, and
 * only as its own "-- resume trigger" line.
 *
 * Output goes through an internal 1 MiB buffer and fwrite(), never one write
 * per line. A failed write returns -EPIPE (reader went away) or -EIO; the
 * caller decides (ptdump exits quietly on EPIPE).
 */
#ifndef PREC_OUTPUT_H
#define PREC_OUTPUT_H

#include <stdio.h>
#include <stdint.h>
#include <stdbool.h>

#include "session.h"
#include "decoder.h"

enum prec_fmt {
	PREC_FMT_CALL_TRACE = 0,  /* perf script --call-trace layout */
	PREC_FMT_CALL_RET_TRACE,  /* ... --call-ret-trace: calls and returns */
	PREC_FMT_INSN_TRACE,      /* every instruction, disassembled */
	PREC_FMT_BRANCHES,        /* every taken branch: from => to */
	PREC_FMT_STATS,           /* counts per stream and in total */
	PREC_FMT_EVENTS,          /* raw decoder events, one per line */
};

struct prec_output_opts {
	enum prec_fmt fmt;
	int pid, tid, cpu;        /* only this process/thread/CPU; -1: all */
	uint64_t time_start;      /* perf time range [start, end]; 0, 0: all */
	uint64_t time_end;
	const char *symbol;       /* only what runs under this function */
	int show_cpu;             /* print [cpu]: 1 yes, 0 no, -1 when per-CPU */
	bool srcline;             /* insn trace: add file:line */
	uint64_t trigger_window;  /* ns; a trigger sample this close to a trace
				     begin/end names it, if it was taken at
				     its IP (a user address) and the begin or
				     end changed the state; 0: 100 us */
	const struct prec_decoder_ops *decoder; /* NULL: Intel PT */
};

/* Sets the defaults: call trace, no filters, show_cpu -1. */
void prec_output_opts_init(struct prec_output_opts *o);

/*
 * Decodes all streams of finalized session @s and writes format o->fmt to
 * @out. Returns 0, -EPIPE/-EIO on a failed write, -PREC_E_NOSYM when
 * o->symbol names no function in any loaded symbol table, or another
 * negative error (-ENOMEM).
 */
int prec_output_run(struct prec_session *s, const struct prec_output_opts *o, FILE *out);

/* The event-at-a-time interface used by prec_output_run(). */
struct prec_fmt_ctx;
int prec_fmt_new(struct prec_session *s, const struct prec_output_opts *o, FILE *out,
		 struct prec_fmt_ctx **ctx);
/* Formats one decoder event of stream @stream_idx. Returns 0 or a write error. */
int prec_fmt_event(struct prec_fmt_ctx *f, size_t stream_idx, const struct prec_tev *ev);
/* Formats a sideband trigger sample (a PREC_SB_SAMPLE of a pause/resume event). */
int prec_fmt_trigger(struct prec_fmt_ctx *f, const struct prec_sb *sb);
/* Writes what is left (stats) and flushes. Returns 0 or a write error. */
int prec_fmt_finish(struct prec_fmt_ctx *f);
void prec_fmt_free(struct prec_fmt_ctx *f);

/* Call depth of thread @tid in the formatter (tests). */
int prec_fmt_depth(const struct prec_fmt_ctx *f, int tid);

#endif

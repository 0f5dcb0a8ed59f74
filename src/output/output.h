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

#include <regex.h>
#include <stdio.h>
#include <stdint.h>
#include <stdbool.h>

#include "session/session.h"
#include "decoders/decoder.h"

enum prec_fmt {
	PREC_FMT_CALL_TRACE = 0,  /* perf script --call-trace layout */
	PREC_FMT_CALL_RET_TRACE,  /* ... --call-ret-trace: calls and returns */
	PREC_FMT_INSN_TRACE,      /* every instruction, disassembled */
	PREC_FMT_BRANCHES,        /* every taken branch: from => to */
	PREC_FMT_STATS,           /* counts per stream and in total */
	PREC_FMT_EVENTS,          /* raw decoder events, one per line */
	PREC_FMT_TAP,             /* nothing: the events go to o->tap only */
};

/*
 * A consumer of the one decoded event stream beside the formatter (the
 * views of report.h are such consumers). For each event, after the
 * formatter has taken it: whether the --pid/--tid/--cpu/--time filters
 * pass it, for a trace begin or end the trigger event that named it
 * (resumed/paused by, -1: none), and the thread's call depth after it.
 */
struct prec_tap_info {
	bool visible;
	int trigger;
	int depth;
	bool restart;             /* the thread's stack restarted here (an exec) */
	bool plt_hidden;          /* --no-plt: the line is folded away (a call
				     through a PLT stub, held for its target,
				     or a line of the lazy-binding path) */
};

struct prec_tap {
	/* Each decoder event of stream @stream. Returns 0 or a negative error. */
	int (*event)(void *arg, size_t stream, const struct prec_tev *ev,
		     const struct prec_tap_info *info);
	/* Each pause/resume trigger sample that passes the filters; may be NULL. */
	int (*trigger)(void *arg, const struct prec_sb *sb);
	void *arg;
	/*
	 * --no-plt: the call @call through a PLT stub reached @to, the
	 * function the stub serves (or the stub itself when its frame ended
	 * first), at call depth @depth; comes before the event that showed it.
	 * May be NULL.
	 */
	int (*plt_call)(void *arg, const struct prec_tev *call, uint64_t to, int depth);
	/*
	 * What the tap does something with: the branch kinds (bit 1 << kind
	 * each; 0: all) and blocks. Without --symbol or --no-plt, which need
	 * them in the formatter, the decoder makes no others.
	 */
	uint32_t branch_kinds;
	bool no_blocks;
	bool fn_blocks;           /* blocks by function will do (prec_decoder_opts) */
};

struct prec_follow;

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
	const struct prec_decoder_ops *decoder; /* NULL: the session's own, by
						   prec_decoder_for_session() */
	const struct prec_tap *tap;  /* also given every event; NULL: none */
	bool json;                /* --stats: JSON lines (ptdump(1), JSON OUTPUT) */
	/*
	 * The call traces (PREC_FMT_CALL_TRACE, PREC_FMT_CALL_RET_TRACE):
	 * no line deeper than max_depth (0: all); no call line of a function
	 * of an object whose path @hide matches, no return line from one and
	 * no system call line made in one (depths stay as they are); with
	 * no_plt a call through a PLT stub is a line of the function the stub
	 * reaches, and the calls of the stub and the lazy-binding resolver
	 * have no lines (the line waits until the target is known).
	 */
	int max_depth;
	const regex_t *hide;
	bool no_plt;
	size_t window;            /* decode window of streams held by reference
				     (prec_decoder_opts.window); 0: the default */
	int jobs;                 /* workers decoding parts of each stream at once
				     (prec_decoder_opts.jobs); 0 or 1: none */
	struct prec_shards *shards; /* ptdump --merge (prec_decoder_opts.shards) */
	bool libipt_core;         /* ptdump --core libipt (prec_decoder_opts.libipt_core) */
	/*
	 * Called now and then while streams are decoded (every 64Ki events),
	 * with the stream bytes decoded so far and in all (lost bytes count
	 * as decoded once passed). NULL: none.
	 */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
	/*
	 * The input is a prefix of a recording still being written (ptdump
	 * --follow): format only what comes before the time up to which the
	 * decoders and the sideband are settled (prec_decoder_settled(),
	 * prec_session_sb_settled()), which a decode of the whole recording
	 * formats the same, and nothing that ends the run (--stats totals).
	 */
	bool follow;
	/*
	 * With follow: what the rounds of ptdump --follow carry from one to
	 * the next (prec_follow_new()). Each round then writes only what the
	 * rounds before did not, and decodes each stream from the last place
	 * it passed before its first event not yet formatted (per-thread Intel
	 * PT streams of views without blocks; the others from their beginning,
	 * the events before it dropped). NULL: each round writes all that is
	 * settled.
	 */
	struct prec_follow *rounds;
	/*
	 * With rounds and without follow: the recording has ended, and this
	 * is its last round. It goes on from the rounds before as they did,
	 * formats all that is left and ends the run as a decode of the whole
	 * file does (the same bytes after those the rounds wrote).
	 */
	bool last_round;
	/*
	 * With follow, --sideband: the records before this index are settled
	 * and were written by the rounds before; the view starts after them
	 * (and without the JSON heading).
	 */
	size_t sb_from;
};

/* What the last round over o->rounds did (ptdump --follow -v). */
struct prec_follow_stats {
	uint64_t bytes;           /* trace bytes of the streams decoded */
	uint64_t decoded;         /* of those, from where their decodes started */
	uint64_t dropped;         /* events decoded again, and not formatted again */
	uint64_t rounds;          /* rounds so far */
	bool broken;              /* the last round failed: the next cannot go on from it */
};

struct prec_follow *prec_follow_new(void);
void prec_follow_free(struct prec_follow *fl);
const struct prec_follow_stats *prec_follow_stats(const struct prec_follow *fl);
/* Whether a round over @fl has begun its output (a view's heading is out). */
bool prec_follow_started(const struct prec_follow *fl);

/*
 * The lazy-binding path that --no-plt folds into the call it serves: a PLT
 * stub (name@plt, or the section's own symbol for PLT0), then the dynamic
 * linker's resolver (by name, or any code of the dynamic linker when it has
 * no symbols). @dso and @name as the views print them ("[unknown]").
 */
bool prec_plt_stub(const char *name);
bool prec_plt_fold(const char *dso, const char *name);

/* Sets the defaults: call trace, no filters, show_cpu -1. */
void prec_output_opts_init(struct prec_output_opts *o);

/*
 * Decodes all streams of finalized session @s and writes format o->fmt to
 * @out. Returns 0, -EPIPE/-EIO on a failed write, -PREC_E_NOSYM when
 * o->symbol (a name or a glob pattern) names no function in any loaded
 * symbol table, -PREC_E_NOMATCH (after the view) when no such function ran
 * in the decoded trace, or another negative error (-ENOMEM).
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
/* Formats the end of a thread killed by a signal (a PREC_SB_SIGNAL). */
int prec_fmt_signal(struct prec_fmt_ctx *f, const struct prec_sb *sb);
/* Writes what is left (stats) and flushes. Returns 0 or a write error. */
int prec_fmt_finish(struct prec_fmt_ctx *f);
void prec_fmt_free(struct prec_fmt_ctx *f);

/*
 * The one text every view shows for a gap event (PREC_TEV_GAP): "[gap:
 * 1,048,576 bytes of trace lost, 0.000000000-0.009087000]", the span from
 * the last timestamp before it to the first after it, "?" for an end that is
 * not known, no span when neither is (@timed: time 0 is a time). Returns @buf.
 */
const char *prec_gap_text(char *buf, size_t size, const struct prec_tev *ev, bool timed);

/* Call depth of thread @tid in the formatter (tests). */
int prec_fmt_depth(const struct prec_fmt_ctx *f, int tid);

/*
 * Writes every instruction range of every stream of @s, one line each, in a
 * form close to trc_pkt_lister's decoded instruction ranges, so the two can
 * be compared line by line:
 *
 *	Idx:25; ID:10; exec range=0x400000:[0x400008] num_i(2)
 *
 * Idx is the trace byte offset of the packet that ended the range, ID the
 * trace ID (hex), the range is [first, end) with end exclusive. Errors print
 * as "Idx:N; ID:x; ERROR: message", gaps as "GAP: N bytes lost". Streams
 * are written one after the other, in session order. @o may be NULL; its
 * cpu and tid filters apply. Returns 0, -EPIPE/-EIO on a failed write, or a
 * decoder error.
 */
int prec_cs_print_ranges(struct prec_session *s, const struct prec_output_opts *o, FILE *out);


#endif

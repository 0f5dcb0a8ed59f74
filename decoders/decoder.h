/* SPDX-License-Identifier: MIT */
/*
 * The one trace-decoder interface. A decoder turns one stream of a session
 * (per-thread or per-CPU trace bytes) into a flat sequence of events, pulled
 * one at a time:
 *
 *	struct prec_decoder *d;
 *	struct prec_tev ev;
 *	err = prec_decoder_open(&prec_intel_pt_decoder, s, stream, &d);
 *	while ((err = prec_decoder_next(d, &ev)) > 0)
 *		... use ev ...
 *	prec_decoder_free(d);
 *
 * Implementations: prec_intel_pt_decoder (intel_pt.c, libipt) and
 * prec_coresight_decoder (coresight.c, OpenCSD); prec_decoder_for_session()
 * (registry.c) picks the one for a session. Decoders never print and never stop on bad trace:
 * a decode error is an event (PREC_TEV_ERROR with the stream offset), after
 * which the decoder resynchronises at the next sync point and continues.
 * Library-specific error codes are translated at this boundary.
 *
 * Calls and returns are branch events (PREC_TEV_BRANCH) whose kind is
 * PREC_BR_CALL / PREC_BR_RETURN; formatters build call stacks from those.
 */
#ifndef PREC_DECODER_H
#define PREC_DECODER_H

#include <errno.h>
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/common.h"
#include "session/session.h"

enum prec_tev_type {
	PREC_TEV_BLOCK = 1,       /* instructions [ip, end_ip], executed in order */
	PREC_TEV_BRANCH,          /* a taken control transfer */
	PREC_TEV_TRACE_BEGIN,     /* tracing (re)enabled: TIP.PGE, resume */
	PREC_TEV_TRACE_END,       /* tracing disabled: TIP.PGD, pause, syscall */
	PREC_TEV_ERROR,           /* decode error; the decoder resyncs after it */
	PREC_TEV_GAP,             /* trace bytes were lost (recording gap) */
	PREC_TEV_OVERFLOW,        /* the tracer's internal buffer overflowed */
	PREC_TEV_SWITCH,          /* a per-CPU stream moved to another thread */
	PREC_TEV_TIME,            /* a timing update with no other event */
	PREC_TEV_HW,              /* a processor event the trace reports (u.hw) */
	PREC_TEV_COUNTS,          /* blocks and branches, counted only (u.counts) */
};

/* PREC_TEV_HW kinds: packets that carry no control flow of their own. */
enum prec_hw_kind {
	PREC_HW_PTWRITE = 1,      /* val: the operand (a: its size in bytes) */
	PREC_HW_MWAIT,            /* a: the hints (EAX), b: the extensions (ECX) */
	PREC_HW_PWRE,             /* a: C-state, b: sub-state; val 1: by hardware */
	PREC_HW_PWRX,             /* a: last, b: deepest C-state; val: wake reason bits */
	PREC_HW_EXSTOP,           /* execution stopped (ip where known) */
	PREC_HW_CBR,              /* a: the core:bus ratio */
	PREC_HW_PAGING,           /* val: the new CR3; a 1: VMX non-root */
	PREC_HW_VMCS,             /* val: the VMCS base */
	PREC_HW_TSX_BEGIN,        /* a transaction began (ip where known) */
	PREC_HW_TSX_COMMIT,       /* a transaction committed */
};

/* PREC_HW_PWRX wake reasons (val) */
#define PREC_PWRX_INTERRUPT 0x1
#define PREC_PWRX_STORE 0x2       /* a store to the monitored address */
#define PREC_PWRX_AUTONOMOUS 0x4  /* the hardware's own wake */

/* The name of a PREC_HW_* kind ("ptwrite", "mwait", ...). */
const char *prec_hw_kind_name(int kind);

enum prec_br_kind {
	PREC_BR_NONE = 0,
	PREC_BR_CALL,             /* near call (direct or indirect) */
	PREC_BR_RETURN,           /* near return */
	PREC_BR_JUMP,             /* near direct unconditional jump */
	PREC_BR_COND,             /* taken conditional jump */
	PREC_BR_INDIRECT,         /* near indirect jump */
	PREC_BR_SYSCALL,          /* syscall/sysenter/int: far call */
	PREC_BR_SYSRET,           /* sysret/sysexit/iret: far return */
	PREC_BR_FAR,              /* other far transfer */
	PREC_BR_INTERRUPT,        /* asynchronous: interrupt, exception, signal */
	PREC_BR_TX_ABORT,         /* transaction abort */
};

/* The branch kinds but the jumps within code (prec_decoder_opts.branch_kinds). */
#define PREC_BR_NO_JUMPS (~(1u << PREC_BR_JUMP | 1u << PREC_BR_COND | 1u << PREC_BR_INDIRECT))

/* PREC_TEV_BRANCH flags */
#define PREC_BRF_INDIRECT 0x1     /* target came from trace (TIP), not the code */

/* PREC_TEV_TRACE_END reasons */
enum prec_end_reason {
	PREC_END_DISABLED = 0,    /* TIP.PGD after a branch (filter/pause) */
	PREC_END_SYSCALL,         /* left traced code through a syscall */
	PREC_END_ASYNC,           /* asynchronous disable (interrupt, pause) */
	PREC_END_EOS,             /* the stream ended while tracing */
};

/*
 * Error reasons: PREC_TEV_ERROR's .err.code is one of these (positive, so
 * never mistaken for a negative errno; --events prints the number).
 */
enum prec_dec_err {
	PREC_DE_NOMAP = 1,        /* no code image for the address */
	PREC_DE_BADPKT,           /* malformed packet */
	PREC_DE_BADINSN,          /* cannot decode the instruction */
	PREC_DE_NOSYNC,           /* no sync point in the data */
	PREC_DE_CONTEXT,          /* trace does not fit the code (desync) */
	PREC_DE_OTHER,
};

struct prec_tev {
	enum prec_tev_type type;
	uint64_t time;            /* perf time, 0 when unknown */
	uint64_t tsc;             /* raw timestamp, 0 when unknown */
	uint64_t offset;          /* stream offset of the packet that produced it */
	int32_t cpu, pid, tid;    /* -1 when unknown */
	union {
		struct {
			uint64_t ip, end_ip; /* first and last instruction */
			uint32_t ninsn;
			uint8_t mode;    /* 16, 32 or 64 (bits) */
			/*
			 * prec_decoder_opts.fn_span: the time of the last
			 * block summed into this one, when later than the
			 * event's (the first's); else 0
			 */
			uint64_t end_time;
		} block;
		struct {
			uint64_t from, to; /* to is 0 when tracing stopped at it */
			enum prec_br_kind kind;
			uint8_t insn_len;  /* length of the branch at from, 0 if unknown */
			uint32_t flags;
		} branch;
		struct {
			uint64_t ip;      /* where tracing (re)starts / last IP */
			uint64_t to;      /* TRACE_END: the IP it would go on at, or 0 */
			enum prec_end_reason reason;
		} trace;
		struct {
			int code;         /* enum prec_dec_err */
			uint64_t ip;      /* the IP at the error, 0 if unknown */
			char msg[128];    /* one line, for users (always set) */
		} err;
		struct {
			uint64_t lost;    /* bytes lost, 0 if unknown */
			/*
			 * The span the gap hides: from the event's time (0 when
			 * no timestamp came before it) to end_time, the first
			 * timestamp after it (0 when none follows or unknown).
			 */
			uint64_t end_time;
		} gap;
		struct {
			int32_t prev_pid, prev_tid;
		} sw;
		struct {
			int kind;         /* enum prec_hw_kind */
			uint64_t ip;      /* the IP it is bound to, 0 if none or unknown */
			uint64_t val;
			uint32_t a, b;
		} hw;
		/*
		 * With prec_decoder_opts.counts: the blocks and branches that
		 * came one after the other with the same time, CPU and thread,
		 * summed (calls: PREC_BR_CALL; syscalls: PREC_BR_SYSCALL;
		 * interrupts: PREC_BR_INTERRUPT with a target; rets:
		 * PREC_BR_RETURN; branches: every kind).
		 */
		struct prec_tev_counts {
			uint64_t insns;
			uint32_t blocks, branches, calls, rets, syscalls, interrupts;
		} counts;
	} u;
};

struct prec_shards;

/*
 * ptdump --follow: a place where a decode of the stream can start again, in
 * a later session over the same recording grown longer (Intel PT: a window's
 * start where the decode goes on over a PSB, with the decoder's state there).
 * @ordinal: the events the decoder gave before it.
 */
#define PREC_RESUME_WORDS 32
struct prec_resume {
	bool set;
	uint64_t ordinal;
	uint64_t pos;             /* its data position in the stream */
	uint64_t words[PREC_RESUME_WORDS];
	/*
	 * A per-CPU stream: whether the decoder had applied timeline records
	 * (context switches) there, and the time of the last (the later
	 * session's timeline may hold other CPUs' records before it).
	 */
	bool sb_some;
	uint64_t sb_last;
};

struct prec_decoder_opts {
	bool no_blocks;           /* skip PREC_TEV_BLOCK events (call traces) */
	/*
	 * The branch kinds to give as PREC_TEV_BRANCH events, bit 1 << kind
	 * each (enum prec_br_kind); 0: all. The events of the other kinds are
	 * not made (a call trace has no use for conditional jumps).
	 */
	uint32_t branch_kinds;
	/*
	 * Blocks and branches summed into PREC_TEV_COUNTS events instead
	 * (a view that only counts them: --stats). Intel PT only; other
	 * decoders give the events themselves.
	 */
	bool counts;
	/*
	 * Blocks that follow each other in one function (symbol), with
	 * nothing between and the same time and context, given as one: the
	 * first's ip, the last's end_ip, ninsn summed (a view that counts
	 * instructions by function). Intel PT only; where the cuts of -j fall
	 * may part such a run in two.
	 */
	bool fn_blocks;
	/*
	 * With fn_blocks: such blocks are summed across time changes too,
	 * and the event's u.block.end_time is the last one's time (a view
	 * that gives a function the time up to its next event, whichever
	 * event that is). Views that filter by time must not ask for it.
	 */
	bool fn_span;
	/*
	 * A stream the session holds by reference (prec_stream.refs) is
	 * decoded in windows of about this many bytes, cut at PSBs (0: the
	 * default, PREC_DECODE_WINDOW); the events are the same as for the
	 * whole stream at once.
	 */
	size_t window;
	/*
	 * Workers that decode parts of the stream at once (ptdump -j; 0 or
	 * 1: none); the events are the same as with none. Intel PT only.
	 */
	int jobs;
	/*
	 * With jobs: the caller's thread works as hard as a worker on the
	 * events (--events formats every one), so jobs - 1 workers decode:
	 * jobs threads keep jobs CPUs busy (with jobs workers beside it, they
	 * took turns on them, and -j2 --events took 4% longer).
	 */
	bool busy_view;
	/*
	 * ptdump --merge: the parts that ptdump --shard decoded
	 * (decoders/shard.h), taken where they fit (else decoded again);
	 * the events are the same as with none. Intel PT only.
	 */
	struct prec_shards *shards;
	/*
	 * ptdump --follow: start at this place instead of the stream's
	 * beginning (prec_decoder_ops.resume_at); the events are those a
	 * decode from the beginning gives after its first @resume->ordinal.
	 * Intel PT only, without jobs, shards or counts.
	 */
	const struct prec_resume *resume;
	/*
	 * ptdump --core libipt: Intel PT decoded with libipt's block decoder
	 * instead of ptdump's walk over its query decoder
	 * (decoders/ipt_walk.h); the same events but for where blocks end.
	 */
	bool libipt_core;
};

#define PREC_DECODE_WINDOW ((size_t)2 << 20)

struct prec_decoder_ops {
	const char *name;
	/*
	 * Opens a decoder for @stream of finalized session @s (both must outlive
	 * it). Returns 0 and *@priv, or a negative error (-ENOMEM,
	 * -EOPNOTSUPP when the session is not for this trace format).
	 */
	int (*open)(struct prec_session *s, const struct prec_stream *stream,
		    const struct prec_decoder_opts *opts, void **priv);
	/* Fills @ev; returns 1, 0 at the end of the stream, or a negative error. */
	int (*next)(void *priv, struct prec_tev *ev);
	void (*close)(void *priv);
	/*
	 * Optional: as next(), but sets *@ev to the decoder's own copy of the
	 * event, valid until the next call (no copy for events consumed at once).
	 */
	int (*next_ref)(void *priv, const struct prec_tev **ev);
	/*
	 * Optional, for a stream whose bytes are a prefix of a recording still
	 * being written (ptdump --follow): a time before which the events are
	 * those a decode of the whole stream gives, and after which come all
	 * the events that may still change; 0 when there is none yet.
	 */
	uint64_t (*settled)(void *priv);
	/*
	 * Optional (ptdump --follow): the last place, among those the decode
	 * passed lately, before which at most @consumed events were given.
	 * Returns false when there is none.
	 */
	bool (*resume_at)(void *priv, uint64_t consumed, struct prec_resume *r);
};

extern const struct prec_decoder_ops prec_intel_pt_decoder;

struct prec_decoder {
	const struct prec_decoder_ops *ops;
	void *priv;
	struct prec_tev buf;      /* prec_decoder_next_ref() without ops->next_ref */
};

/* Returns a static name for a branch kind ("call", "return", ...). */
const char *prec_br_kind_name(enum prec_br_kind k);
/* The name of a PREC_HW_* kind ("ptwrite", "mwait", ...), "?" if unknown. */
const char *prec_hw_kind_name(int kind);

static inline int prec_decoder_open(const struct prec_decoder_ops *ops,
				    struct prec_session *s,
				    const struct prec_stream *stream,
				    const struct prec_decoder_opts *opts,
				    struct prec_decoder **out)
{
	struct prec_decoder *d;
	int err;

	*out = NULL;
	d = (struct prec_decoder *)calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->ops = ops;
	err = ops->open(s, stream, opts, &d->priv);
	if (err) {
		free(d);
		return err;
	}
	*out = d;
	return 0;
}

static inline int prec_decoder_next(struct prec_decoder *d, struct prec_tev *ev)
{
	return d->ops->next(d->priv, ev);
}

/*
 * The next event without a copy: sets *@ev to an event valid until the next
 * call on @d. Returns as prec_decoder_next().
 */
static inline int prec_decoder_next_ref(struct prec_decoder *d, const struct prec_tev **ev)
{
	if (d->ops->next_ref)
		return d->ops->next_ref(d->priv, ev);
	*ev = &d->buf;
	return d->ops->next(d->priv, &d->buf);
}

/* ops->settled(), or 0 for a decoder without it (nothing is settled). */
static inline uint64_t prec_decoder_settled(struct prec_decoder *d)
{
	return d->ops->settled ? d->ops->settled(d->priv) : 0;
}

/* ops->resume_at(), or false for a decoder without it. */
static inline bool prec_decoder_resume_at(struct prec_decoder *d, uint64_t consumed,
					  struct prec_resume *r)
{
	return d->ops->resume_at && d->ops->resume_at(d->priv, consumed, r);
}

static inline void prec_decoder_free(struct prec_decoder *d)
{
	if (!d)
		return;
	d->ops->close(d->priv);
	free(d);
}

/*
 * The decoder for a session's trace: CoreSight when CoreSight metadata is
 * attached or the machine's vendor is "ARM", else Intel PT (for a raw trace
 * without its CPU, one whose "trace does not match the code" errors say that
 * no CPU was given and how to give it).
 */
const struct prec_decoder_ops *prec_decoder_for_session(const struct prec_session *s);


#endif

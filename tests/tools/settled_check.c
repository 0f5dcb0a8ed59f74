// SPDX-License-Identifier: MIT
/*
 * What ptdump --follow relies on, checked on a finished recording: a
 * decoder's settled() over a prefix of a stream (the bytes present while
 * the recording is written) is a time before which the prefix's events
 * are those of the whole stream. The recording's chunks end where the
 * tracer wrote them, at clean places; here each stream is cut at every
 * STEP bytes instead (inside packets, frames and timestamps), and at each
 * cut the prefix's events, in order up to the first at the settled time or
 * later, are compared with the whole stream's first events, field by
 * field.
 *
 *	settled_check [-s STEP] FILE
 *
 * Prints one line per stream and exits 1 on a difference:
 *	stream I: C cuts, S with a settled time, E events compared, 0 differ
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"
#include "decoders/decoder.h"
#include "interop/importer.h"
#include "session/session.h"

struct evs {
	struct prec_tev *e;
	size_t n;
};

static int push(struct evs *v, const struct prec_tev *ev)
{
	if (PREC_ARRAY_RESERVE(v->e, v->n, 1))
		return -ENOMEM;
	v->e[v->n++] = *ev;
	return 0;
}

/* Whether @a and @b are the same event: the header, then the fields of its type. */
static bool same(const struct prec_tev *a, const struct prec_tev *b)
{
	if (a->type != b->type || a->time != b->time || a->tsc != b->tsc || a->offset != b->offset ||
	    a->cpu != b->cpu || a->pid != b->pid || a->tid != b->tid)
		return false;
	switch (a->type) {
	case PREC_TEV_BLOCK:
		return a->u.block.ip == b->u.block.ip && a->u.block.end_ip == b->u.block.end_ip &&
		       a->u.block.ninsn == b->u.block.ninsn && a->u.block.mode == b->u.block.mode;
	case PREC_TEV_BRANCH:
		return a->u.branch.from == b->u.branch.from && a->u.branch.to == b->u.branch.to &&
		       a->u.branch.kind == b->u.branch.kind &&
		       a->u.branch.insn_len == b->u.branch.insn_len &&
		       a->u.branch.flags == b->u.branch.flags;
	case PREC_TEV_ERROR:
		return a->u.err.code == b->u.err.code && a->u.err.ip == b->u.err.ip &&
		       !strcmp(a->u.err.msg, b->u.err.msg);
	case PREC_TEV_TRACE_BEGIN:
	case PREC_TEV_TRACE_END:
	case PREC_TEV_OVERFLOW:
		return a->u.trace.ip == b->u.trace.ip && a->u.trace.to == b->u.trace.to &&
		       a->u.trace.reason == b->u.trace.reason;
	case PREC_TEV_GAP:
		return a->u.gap.lost == b->u.gap.lost && a->u.gap.end_time == b->u.gap.end_time;
	case PREC_TEV_SWITCH:
		return a->u.sw.prev_pid == b->u.sw.prev_pid && a->u.sw.prev_tid == b->u.sw.prev_tid;
	case PREC_TEV_HW:
		return a->u.hw.kind == b->u.hw.kind && a->u.hw.ip == b->u.hw.ip &&
		       a->u.hw.val == b->u.hw.val && a->u.hw.a == b->u.hw.a && a->u.hw.b == b->u.hw.b;
	case PREC_TEV_COUNTS:
		return a->u.counts.insns == b->u.counts.insns &&
		       a->u.counts.blocks == b->u.counts.blocks &&
		       a->u.counts.branches == b->u.counts.branches;
	default: /* PREC_TEV_TIME: no fields */
		return true;
	}
}

/* All events of @st. */
static int decode_all(struct prec_session *s, const struct prec_stream *st, struct evs *v)
{
	const struct prec_decoder_ops *ops = prec_decoder_for_session(s);
	struct prec_decoder_opts o = { 0 };
	struct prec_decoder *d;
	struct prec_tev ev;
	int err = prec_decoder_open(ops, s, st, &o, &d);

	while (!err && (err = prec_decoder_next(d, &ev)) > 0)
		err = push(v, &ev);
	prec_decoder_free(d);
	return err < 0 ? err : 0;
}

struct tally {
	size_t cuts, settled, compared, differ;
};

/*
 * The prefix of @st that ends at @len: its events before its settled time
 * against @all's first. Returns 0 or a decoder error.
 */
static int check_cut(struct prec_session *s, const struct prec_stream *st, size_t len,
		     const struct evs *all, struct tally *t)
{
	const struct prec_decoder_ops *ops = prec_decoder_for_session(s);
	struct prec_decoder_opts o = { 0 };
	struct prec_stream cut = *st;
	struct prec_decoder *d;
	struct prec_tev ev;
	uint64_t until;
	size_t i = 0;
	int err;

	cut.len = len;
	while (cut.nr_gaps && cut.gaps[cut.nr_gaps - 1].pos >= len)
		cut.nr_gaps--;
	err = prec_decoder_open(ops, s, &cut, &o, &d);
	if (err)
		return err;
	t->cuts++;
	until = prec_decoder_settled(d);
	t->settled += until != 0;
	while (until && (err = prec_decoder_next(d, &ev)) > 0 && ev.time < until) {
		if (i >= all->n || !same(&ev, &all->e[i])) {
			if (!t->differ)
				fprintf(stderr,
					"cut at %zu of %zu bytes, settled %llu: event %zu (type %d, time "
					"%llu) is not the whole stream's\n",
					len, st->len, (unsigned long long)until, i, (int)ev.type,
					(unsigned long long)ev.time);
			t->differ++;
			break;
		}
		i++;
		t->compared++;
	}
	prec_decoder_free(d);
	return err < 0 ? err : 0;
}

int main(int argc, char **argv)
{
	struct prec_import_opts io = { 0 };
	struct prec_import_report rep;
	struct prec_diag dg = { 0 };
	struct prec_session *s;
	size_t step = 997, i;
	int c, err, bad = 0;

	while ((c = getopt(argc, argv, "s:")) != -1) {
		if (c != 's' || !(step = strtoul(optarg, NULL, 0))) {
			fprintf(stderr, "usage: settled_check [-s STEP] FILE\n");
			return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "usage: settled_check [-s STEP] FILE\n");
		return 2;
	}
	io.path = argv[optind];
	s = prec_session_new();
	if (!s || (err = prec_import(s, &io, &rep, &dg)) || (err = prec_session_load_aux(s))) {
		fprintf(stderr, "settled_check: %s: %s\n", io.path, dg.msg[0] ? dg.msg : "cannot load");
		return 1;
	}
	for (i = 0; i < prec_session_nr_streams(s); i++) {
		const struct prec_stream *st = prec_session_stream(s, i);
		struct evs all = { 0 };
		struct tally t = { 0 };
		size_t len;

		err = decode_all(s, st, &all);
		for (len = step; !err && len < st->len; len += step)
			err = check_cut(s, st, len, &all, &t);
		printf("stream %zu: %zu cuts, %zu with a settled time, %zu events compared, %zu "
		       "differ\n", i, t.cuts, t.settled, t.compared, t.differ);
		if (err)
			fprintf(stderr, "settled_check: stream %zu: error %d\n", i, err);
		bad |= err || t.differ;
		free(all.e);
	}
	prec_import_report_fini(&rep);
	prec_session_free(s);
	return bad;
}

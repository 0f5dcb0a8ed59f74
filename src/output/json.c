// SPDX-License-Identifier: MIT
/*
 * --format=json for the decoded views (--call-trace, --call-ret-trace,
 * --branches) and --sideband: JSON lines (report.h, ptdump(1) JSON OUTPUT).
 * The decoded views are a tap of prec_output_run() (output.h), so their
 * depths, trigger names and filters are the text views' own.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>

#include "decoders/decoder.h"
#include "output/report.h"
#include "output/views.h"
#include "session/image.h"

struct jctx {
	struct prec_session *s;
	enum prec_fmt fmt;
	bool timed;
	int max_depth;            /* no line deeper; 0: all */
	const regex_t *hide;      /* --hide-dso */
	FILE *out;
};

/* Whether a line at @depth passes --max-depth. */
static bool depth_ok(const struct jctx *j, int depth)
{
	return !j->max_depth || depth <= j->max_depth;
}

static void hex_field(FILE *out, const char *key, uint64_t v)
{
	fprintf(out, ",\"%s\":\"0x%" PRIx64 "\"", key, v);
}

static void resolve_at(struct jctx *j, const struct prec_tev *ev, uint64_t addr,
		       struct prec_loc *loc)
{
	struct prec_aspace *as = prec_images_aspace(prec_session_images(j->s), ev->pid,
						    ev->time || j->timed ? ev->time : UINT64_MAX);

	prec_aspace_resolve(as, addr, loc);
}

/* ,"PRE_name":..,"PRE_object":.. (or "name", "object") of @loc; null: unknown. */
static void loc_fields(struct jctx *j, const char *pre, const struct prec_loc *loc)
{
	fprintf(j->out, ",\"%s%sname\":", pre, *pre ? "_" : "");
	if (loc->sym)
		prec_json_str(j->out, loc->sym->name);
	else
		fputs("null", j->out);
	fprintf(j->out, ",\"%s%sobject\":", pre, *pre ? "_" : "");
	if (loc->dso)
		prec_json_str(j->out, loc->dso);
	else
		fputs("null", j->out);
}

static void head(struct jctx *j, const char *type, const struct prec_tev *ev)
{
	fprintf(j->out, "{\"type\":\"%s\",\"time\":%" PRIu64 ",\"pid\":%d,\"tid\":%d,\"cpu\":%d",
		type, ev->time, ev->pid, ev->tid, ev->cpu);
}

/*
 * One line of a branch view: @type at @depth (-1: the branches view, which
 * names the kind instead), from ev's source to @to (0: none).
 */
static void branch_line(struct jctx *j, const struct prec_tev *ev, const char *type, int depth,
			uint64_t to_addr, bool call)
{
	struct prec_loc from, to = { 0 };

	resolve_at(j, ev, ev->u.branch.from, &from);
	if (to_addr)
		resolve_at(j, ev, to_addr, &to);
	/* --hide-dso: no call into a hidden object, no return or system call from one */
	if (depth >= 0 && j->hide &&
	    !regexec(j->hide, (call ? to.dso : from.dso) ? (call ? to.dso : from.dso) : "[unknown]",
		     0, NULL, 0))
		return;
	head(j, type, ev);
	if (depth < 0)
		fprintf(j->out, ",\"kind\":\"%s\"", prec_br_kind_name(ev->u.branch.kind));
	else
		fprintf(j->out, ",\"depth\":%d", depth);
	hex_field(j->out, "from", ev->u.branch.from);
	loc_fields(j, "from", &from);
	if (to_addr) {
		hex_field(j->out, "to", to_addr);
		loc_fields(j, "to", &to);
	}
	fputs("}\n", j->out);
}

static void on_branch(struct jctx *j, const struct prec_tev *ev, int depth)
{
	enum prec_br_kind k = ev->u.branch.kind;
	bool call = k == PREC_BR_CALL || ((k == PREC_BR_SYSCALL || k == PREC_BR_INTERRUPT) &&
					  ev->u.branch.to);
	bool ret = k == PREC_BR_RETURN || k == PREC_BR_SYSRET;
	bool branches = j->fmt == PREC_FMT_BRANCHES;
	const char *type;
	int d = depth + 1;

	if (branches) {
		type = "branch";
	} else if (call) {
		type = k == PREC_BR_CALL ? "call" : k == PREC_BR_SYSCALL ? "syscall" : "interrupt";
		d = depth;
	} else if (k == PREC_BR_SYSCALL && j->fmt == PREC_FMT_CALL_TRACE) {
		type = "syscall";
	} else if (ret && j->fmt == PREC_FMT_CALL_RET_TRACE) {
		type = k == PREC_BR_RETURN ? "return" : "sysret";
	} else {
		return;
	}
	if (!branches && !depth_ok(j, d))
		return;
	branch_line(j, ev, type, branches ? -1 : d, ev->u.branch.to, call);
}

/* --no-plt: a call through a PLT stub, as a call of the function it reached. */
static int tap_plt_call(void *arg, const struct prec_tev *call, uint64_t to, int depth)
{
	struct jctx *j = arg;

	if (depth_ok(j, depth))
		branch_line(j, call, "call", depth, to, true);
	return ferror(j->out) ? prec_view_status(j->out) : 0;
}

static void on_trace(struct jctx *j, const struct prec_tev *ev, const struct prec_tap_info *in)
{
	bool begin = ev->type == PREC_TEV_TRACE_BEGIN;
	const struct prec_evdesc *d = in->trigger >= 0 ? prec_session_event(j->s, in->trigger) :
							 NULL;
	struct prec_loc loc;

	if (j->fmt == PREC_FMT_CALL_TRACE || !depth_ok(j, in->depth))
		return;
	head(j, begin ? "trace_begin" : "trace_end", ev);
	fprintf(j->out, ",\"depth\":%d", in->depth);
	hex_field(j->out, "ip", ev->u.trace.ip);
	resolve_at(j, ev, ev->u.trace.ip, &loc);
	loc_fields(j, "", &loc);
	fputs(",\"trigger\":", j->out);
	if (d && d->name)
		prec_json_str(j->out, d->name);
	else
		fputs("null", j->out);
	fputs("}\n", j->out);
}

static void on_damage(struct jctx *j, const struct prec_tev *ev)
{
	head(j, ev->type == PREC_TEV_ERROR ? "error" : ev->type == PREC_TEV_GAP ? "gap" : "overflow",
	     ev);
	fprintf(j->out, ",\"offset\":%" PRIu64, ev->offset);
	if (ev->type == PREC_TEV_ERROR) {
		hex_field(j->out, "ip", ev->u.err.ip);
		fputs(",\"message\":", j->out);
		prec_json_str(j->out, ev->u.err.msg);
	} else if (ev->type == PREC_TEV_GAP) {
		fprintf(j->out, ",\"lost\":%" PRIu64, ev->u.gap.lost);
	}
	fputs("}\n", j->out);
}

static int tap_event(void *arg, size_t stream, const struct prec_tev *ev,
		     const struct prec_tap_info *info)
{
	struct jctx *j = arg;

	(void)stream;
	if (!info->visible)
		return 0;
	switch (ev->type) {
	case PREC_TEV_BRANCH:
		if (!info->plt_hidden)
			on_branch(j, ev, info->depth);
		break;
	case PREC_TEV_TRACE_BEGIN:
	case PREC_TEV_TRACE_END:
		on_trace(j, ev, info);
		break;
	case PREC_TEV_ERROR:
	case PREC_TEV_GAP:
	case PREC_TEV_OVERFLOW:
		on_damage(j, ev);
		break;
	default:
		break;
	}
	return ferror(j->out) ? prec_view_status(j->out) : 0;
}

static int tap_trigger(void *arg, const struct prec_sb *sb)
{
	struct jctx *j = arg;
	const struct prec_evdesc *d = prec_session_event(j->s, sb->event);

	fprintf(j->out, "{\"type\":\"trigger\",\"time\":%" PRIu64 ",\"pid\":%d,\"tid\":%d,"
			"\"cpu\":%d,\"kind\":\"%s\",\"event\":",
		sb->time, sb->pid, sb->tid, sb->cpu,
		d && d->kind == PREC_EVK_PAUSE ? "pause" : "resume");
	prec_json_str(j->out, d && d->name ? d->name : "?");
	hex_field(j->out, "ip", sb->u.sample.ip);
	fputs("}\n", j->out);
	return 0;
}

int prec_view_json_decoded(struct prec_session *s, const struct prec_output_opts *o, FILE *out)
{
	static const char *const names[] = {
		[PREC_FMT_CALL_TRACE] = "call-trace",
		[PREC_FMT_CALL_RET_TRACE] = "call-ret-trace",
		[PREC_FMT_BRANCHES] = "branches",
	};
	struct jctx j = { s, o->fmt, prec_session_machine(s)->tsc, o->max_depth, o->hide, out };
	struct prec_tap tap = { tap_event, tap_trigger, &j, tap_plt_call, 0, true, false };
	struct prec_output_opts oo = *o;
	int err;

	if (o->fmt != PREC_FMT_CALL_TRACE && o->fmt != PREC_FMT_CALL_RET_TRACE &&
	    o->fmt != PREC_FMT_BRANCHES)
		return -EINVAL;
	/* --follow: the rounds after the first (the last too) go on from the one before. */
	if (!o->rounds || !prec_follow_started(o->rounds))
		prec_json_header(out, names[o->fmt]);
	if (o->fmt != PREC_FMT_BRANCHES)
		tap.branch_kinds = PREC_BR_NO_JUMPS;
	oo.fmt = PREC_FMT_TAP;
	oo.tap = &tap;
	err = prec_output_run(s, &oo, out);
	return err ? err : prec_view_status(out);
}

/* ---- --sideband ---- */

static void sb_fields(const struct prec_session *s, const struct prec_sb *sb, FILE *out)
{
	const struct prec_evdesc *ev = sb->event >= 0 ? prec_session_event(s, sb->event) : NULL;
	static const char *const types[] = {
		[PREC_SB_MMAP] = "mmap", [PREC_SB_COMM] = "comm", [PREC_SB_FORK] = "fork",
		[PREC_SB_EXIT] = "exit", [PREC_SB_SWITCH] = "switch",
		[PREC_SB_ITRACE_START] = "itrace_start", [PREC_SB_AUX] = "aux",
		[PREC_SB_LOST] = "lost", [PREC_SB_SAMPLE] = "sample",
		[PREC_SB_SIGNAL] = "signal", [PREC_SB_SNAPSHOT] = "snapshot",
		[PREC_SB_THROTTLE] = "throttle",
	};
	char why[96];
	unsigned k;

	fprintf(out, "{\"type\":\"%s\",\"time\":%" PRIu64 ",\"pid\":%d,\"tid\":%d,\"cpu\":%d",
		types[sb->type], sb->time, sb->pid, sb->tid, sb->cpu);
	switch (sb->type) {
	case PREC_SB_MMAP:
		hex_field(out, "start", sb->u.mmap.start);
		hex_field(out, "end", sb->u.mmap.start + sb->u.mmap.len);
		hex_field(out, "pgoff", sb->u.mmap.pgoff);
		fprintf(out, ",\"prot\":\"%c%c%c\",\"path\":", sb->u.mmap.prot & PROT_READ ? 'r' : '-',
			sb->u.mmap.prot & PROT_WRITE ? 'w' : '-', sb->u.mmap.prot & PROT_EXEC ? 'x' : '-');
		prec_json_str(out, sb->u.mmap.path);
		if (sb->u.mmap.build_id_size) {
			fputs(",\"build_id\":\"", out);
			for (k = 0; k < sb->u.mmap.build_id_size; k++)
				fprintf(out, "%02x", sb->u.mmap.build_id[k]);
			fputc('"', out);
		}
		break;
	case PREC_SB_COMM:
		fputs(",\"comm\":", out);
		prec_json_str(out, sb->u.comm.comm);
		fprintf(out, ",\"exec\":%s", sb->u.comm.exec ? "true" : "false");
		break;
	case PREC_SB_FORK:
	case PREC_SB_EXIT:
		fprintf(out, ",\"ppid\":%d,\"ptid\":%d", sb->u.fork.ppid, sb->u.fork.ptid);
		break;
	case PREC_SB_SWITCH:
		fprintf(out, ",\"out\":%s,\"preempt\":%s", sb->u.sw.out ? "true" : "false",
			sb->u.sw.out && sb->u.sw.preempt ? "true" : "false");
		if (sb->u.sw.cpu_wide)
			fprintf(out, ",\"other_pid\":%d,\"other_tid\":%d", sb->u.sw.next_prev_pid,
				sb->u.sw.next_prev_tid);
		break;
	case PREC_SB_AUX:
		fprintf(out, ",\"offset\":%" PRIu64 ",\"size\":%" PRIu64 ",\"flags\":%" PRIu64,
			sb->u.aux.offset, sb->u.aux.size, (uint64_t)sb->u.aux.flags);
		break;
	case PREC_SB_LOST:
		fprintf(out, ",\"lost\":%" PRIu64, sb->u.lost.lost);
		break;
	case PREC_SB_SAMPLE:
		fputs(",\"event\":", out);
		prec_json_str(out, ev && ev->name ? ev->name : "?");
		hex_field(out, "ip", sb->u.sample.ip);
		fprintf(out, ",\"period\":%" PRIu64 ",\"action\":\"%s\"", sb->u.sample.period,
			ev && ev->kind == PREC_EVK_PAUSE ? "pause" :
			ev && ev->kind == PREC_EVK_RESUME ? "resume" : "none");
		break;
	case PREC_SB_THROTTLE:
		fputs(",\"event\":", out);
		prec_json_str(out, ev && ev->name ? ev->name : "?");
		fprintf(out, ",\"unthrottle\":%s", sb->u.throttle.unthrottle ? "true" : "false");
		break;
	case PREC_SB_SIGNAL:
		prec_signal_name((int)sb->u.sig.signo, why, sizeof(why));
		fputs(",\"signal\":", out);
		prec_json_str(out, why);
		hex_field(out, "ip", sb->u.sig.ip);
		hex_field(out, "caller", sb->u.sig.caller);
		fprintf(out, ",\"flags\":%u", sb->u.sig.flags);
		break;
	case PREC_SB_SNAPSHOT:
		fprintf(out, ",\"index\":%u,\"reason\":\"%s\",\"event\":", sb->u.snap.index,
			prec_tfile_snap_reason(sb->u.snap.reason));
		ev = sb->u.snap.event >= 0 ? prec_session_event(s, sb->u.snap.event) : NULL;
		if (ev && ev->name)
			prec_json_str(out, ev->name);
		else
			fputs("null", out);
		fprintf(out, ",\"bytes\":%" PRIu64 ",\"streams\":[", sb->u.snap.bytes);
		for (k = 0; k < sb->u.snap.nstreams; k++) {
			int32_t cpu, tid;
			uint64_t a, b;

			prec_sb_snapshot_stream(sb, k, &cpu, &tid, &a, &b);
			fprintf(out, "%s{\"cpu\":%d,\"tid\":%d,\"start\":%" PRIu64 ",\"end\":%" PRIu64
				"}", k ? "," : "", cpu, tid, a, b);
		}
		fputs("]", out);
		break;
	default:
		break;
	}
	fputs("}\n", out);
}

int prec_view_sideband_json(const struct prec_session *s, const struct prec_output_opts *o,
			    FILE *out)
{
	size_t i, n = prec_session_nr_sb(s);

	/* A recording still being written: only what no later record comes before. */
	if (o->follow)
		n = prec_session_sb_lower_bound(s, prec_session_sb_settled(s));
	if (!o->follow || !o->sb_from)
		prec_json_header(out, "sideband");
	for (i = o->follow ? o->sb_from : 0; i < n; i++) {
		const struct prec_sb *sb = prec_session_sb(s, i);

		if (prec_sb_keep(sb, o))
			sb_fields(s, sb, out);
	}
	return prec_view_status(out);
}

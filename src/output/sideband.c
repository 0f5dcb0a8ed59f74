// SPDX-License-Identifier: MIT
/* ptdump --sideband: the session's sideband timeline as text. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "output/views.h"

bool prec_sb_keep(const struct prec_sb *sb, const struct prec_output_opts *o)
{
	if (o->pid >= 0 && sb->pid != o->pid)
		return false;
	if (o->tid >= 0 && sb->tid != o->tid)
		return false;
	if (o->cpu >= 0 && sb->cpu != o->cpu)
		return false;
	if (o->time_start && sb->time < o->time_start)
		return false;
	if (o->time_end && sb->time > o->time_end)
		return false;
	return true;
}

const char *prec_snapshot_why(const struct prec_session *s, const struct prec_sb *sb, char *buf,
			      size_t size)
{
	const struct prec_evdesc *ev = sb->u.snap.event >= 0 ?
					       prec_session_event(s, sb->u.snap.event) : NULL;

	switch (sb->u.snap.reason) {
	case PREC_SNAP_SIGNAL:
		return "on SIGUSR2";
	case PREC_SNAP_END:
		return "at the end";
	case PREC_SNAP_TRIGGER:
		snprintf(buf, size, "by %s", ev && ev->name ? ev->name : "a trigger");
		return buf;
	default:
		return "for an unknown reason";
	}
}

int prec_view_sideband(const struct prec_session *s, const struct prec_output_opts *o, FILE *out)
{
	size_t i, n = prec_session_nr_sb(s);

	/* A recording still being written: only what no later record comes before. */
	if (o->follow)
		n = prec_session_sb_lower_bound(s, prec_session_sb_settled(s));
	for (i = o->follow ? o->sb_from : 0; i < n; i++) {
		const struct prec_sb *sb = prec_session_sb(s, i);
		const struct prec_evdesc *ev = sb->event >= 0 ? prec_session_event(s, sb->event) : NULL;
		unsigned k;
		char sig[96];

		if (!prec_sb_keep(sb, o))
			continue;
		fprintf(out, "%5" PRIu64 ".%09" PRIu64 " ", (uint64_t)(sb->time / 1000000000u),
			(uint64_t)(sb->time % 1000000000u));
		if (sb->cpu >= 0)
			fprintf(out, "[%03d] ", sb->cpu);
		fprintf(out, "%7d/%-7d ", sb->pid, sb->tid);
		switch (sb->type) {
		case PREC_SB_MMAP:
			fprintf(out, "MMAP     %#" PRIx64 "-%#" PRIx64 " pgoff %#" PRIx64 " %c%c%c %s",
				sb->u.mmap.start, sb->u.mmap.start + sb->u.mmap.len, sb->u.mmap.pgoff,
				sb->u.mmap.prot & PROT_READ ? 'r' : '-',
				sb->u.mmap.prot & PROT_WRITE ? 'w' : '-',
				sb->u.mmap.prot & PROT_EXEC ? 'x' : '-', sb->u.mmap.path);
			if (sb->u.mmap.build_id_size) {
				fputs(" build-id ", out);
				for (k = 0; k < sb->u.mmap.build_id_size; k++)
					fprintf(out, "%02x", sb->u.mmap.build_id[k]);
			}
			break;
		case PREC_SB_COMM:
			fprintf(out, "COMM     %s%s", sb->u.comm.comm, sb->u.comm.exec ? " (exec)" : "");
			break;
		case PREC_SB_FORK:
			fprintf(out, "FORK     from %d/%d", sb->u.fork.ppid, sb->u.fork.ptid);
			break;
		case PREC_SB_EXIT:
			fprintf(out, "EXIT     (parent %d/%d)", sb->u.fork.ppid, sb->u.fork.ptid);
			break;
		case PREC_SB_SWITCH:
			fprintf(out, "SWITCH   %s%s", sb->u.sw.out ? "out" : "in",
				sb->u.sw.out && sb->u.sw.preempt ? " (preempted)" : "");
			if (sb->u.sw.cpu_wide)
				fprintf(out, " %s %d/%d", sb->u.sw.out ? "next" : "prev",
					sb->u.sw.next_prev_pid, sb->u.sw.next_prev_tid);
			break;
		case PREC_SB_ITRACE_START:
			fputs("ITRACE_START", out);
			break;
		case PREC_SB_AUX:
			fprintf(out, "AUX      offset %#" PRIx64 " size %#" PRIx64 "%s%s%s%s",
				sb->u.aux.offset, sb->u.aux.size,
				sb->u.aux.flags & 1 ? " truncated" : "",
				sb->u.aux.flags & 2 ? " overwrite" : "",
				sb->u.aux.flags & 4 ? " partial" : "",
				sb->u.aux.flags & 8 ? " collision" : "");
			break;
		case PREC_SB_LOST:
			fprintf(out, "LOST     %" PRIu64 " records", sb->u.lost.lost);
			break;
		case PREC_SB_SIGNAL:
			fprintf(out, "SIGNAL   %s ip %#" PRIx64 " caller %#" PRIx64 "%s%s%s%s",
				prec_signal_name((int)sb->u.sig.signo, sig, sizeof(sig)), sb->u.sig.ip,
				sb->u.sig.caller,
				sb->u.sig.flags & PREC_SIGREC_LAST ? " (ran last)" : "",
				sb->u.sig.flags & PREC_SIGREC_CORE ? " (core dumped)" : "",
				sb->u.sig.flags & PREC_SIGREC_DESCENDANT ? " (started by the workload)" : "",
				sb->u.sig.flags & PREC_SIGREC_EXACT ? " (raised there)" : "");
			break;
		case PREC_SB_THROTTLE:
			fprintf(out, "%s %s", sb->u.throttle.unthrottle ? "UNTHROTTLE" : "THROTTLE  ",
				ev && ev->name ? ev->name : "?");
			if (!sb->u.throttle.unthrottle)
				fputs(" (samples stop at its rate limit)", out);
			break;
		case PREC_SB_SNAPSHOT:
			fprintf(out, "SNAPSHOT #%u %s, %" PRIu64 " bytes of %u stream%s",
				sb->u.snap.index, prec_snapshot_why(s, sb, sig, sizeof(sig)),
				sb->u.snap.bytes, sb->u.snap.nstreams,
				sb->u.snap.nstreams == 1 ? "" : "s");
			break;
		case PREC_SB_SAMPLE:
			fprintf(out, "SAMPLE   %s ip %#" PRIx64 " period %" PRIu64,
				ev ? ev->name : "?", sb->u.sample.ip, sb->u.sample.period);
			if (ev && ev->kind == PREC_EVK_PAUSE)
				fputs(" (pauses the trace)", out);
			else if (ev && ev->kind == PREC_EVK_RESUME)
				fputs(" (resumes the trace)", out);
			break;
		}
		if (fputc('\n', out) == EOF)
			return errno == EPIPE ? -EPIPE : -EIO;
	}
	return 0;
}

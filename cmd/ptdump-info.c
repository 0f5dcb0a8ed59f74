// SPDX-License-Identifier: MIT
/* ptdump --info, --sideband and the file part of --stats. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "cli.h"
#include "evspec.h"
#include "snapshot.h"
#include "ptdump-cmds.h"
#include "util.h"

static void human(char *buf, size_t size, uint64_t v)
{
	if (v >= (1ull << 30))
		snprintf(buf, size, "%.2f GiB", (double)v / (1ull << 30));
	else if (v >= (1ull << 20))
		snprintf(buf, size, "%.2f MiB", (double)v / (1ull << 20));
	else if (v >= (1ull << 10))
		snprintf(buf, size, "%.2f KiB", (double)v / (1ull << 10));
	else
		snprintf(buf, size, "%" PRIu64 " B", v);
}

static void print_argv(FILE *out, uint32_t n, const char *const *v)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		fprintf(out, "%s%s", i ? " " : "", v[i] ? v[i] : "");
	fputc('\n', out);
}

static const char *stream_name(char *buf, size_t size, int32_t cpu, int32_t tid)
{
	if (cpu >= 0)
		snprintf(buf, size, "cpu %d", cpu);
	else
		snprintf(buf, size, "tid %d", tid);
	return buf;
}

int ptdump_info(struct prec_tfile_reader *r, const char *path, FILE *out)
{
	const struct prec_tfile_fhdr *fh = prec_tfile_file_header(r);
	struct prec_tfile_info *info = NULL;
	struct prec_tfile_machine *m = NULL;
	struct prec_tfile_events *evs = NULL;
	struct prec_tfile_status st;
	struct prec_tfile_chunk c;
	uint64_t raw[PREC_TFILE_TYPE_MAX + 2] = { 0 }, stored[PREC_TFILE_TYPE_MAX + 2] = { 0 };
	uint64_t count[PREC_TFILE_TYPE_MAX + 2] = { 0 };
	char a[32], b[32], line[256];
	uint32_t i, k;
	int err;

	fprintf(out, "file:        %s\n", path);
	fprintf(out, "format:      ptrec trace file v%u%s\n", fh->version,
		fh->flags & PREC_TFILE_F_EMULATED ? ", made by the software tracer (--emulate)" : "");
	if (prec_tfile_read_info(r, &info) == 0) {
		time_t t = (time_t)(info->created_ns / 1000000000ull);
		char when[64];

		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
		fprintf(out, "recorded:    %s on %s (kernel %s) by ptrec %s\n", when,
			info->hostname ? info->hostname : "?",
			info->kernel_release ? info->kernel_release : "?",
			info->ptrec_version ? info->ptrec_version : "?");
		fprintf(out, "command:     ");
		print_argv(out, info->cmdline_argc, info->cmdline_argv);
		if (info->workload_argc) {
			fprintf(out, "workload:    ");
			print_argv(out, info->workload_argc, info->workload_argv);
		}
	}
	if (prec_tfile_read_machine(r, &m) == 0) {
		fprintf(out, "machine:     %s, %s family %u model %u stepping %u, %u CPUs, page %u\n",
			m->arch, m->vendor, m->family, m->model, m->stepping, m->nr_cpus, m->page_size);
		if (m->cpuid_14_0[1] || m->cpuid_14_0[2])
			fprintf(out, "cpuid 0x14:  %08x %08x %08x %08x / %08x %08x %08x %08x\n",
				m->cpuid_14_0[0], m->cpuid_14_0[1], m->cpuid_14_0[2], m->cpuid_14_0[3],
				m->cpuid_14_1[0], m->cpuid_14_1[1], m->cpuid_14_1[2], m->cpuid_14_1[3]);
		if (m->cpuid_15[0])
			fprintf(out, "cpuid 0x15:  eax %u ebx %u ecx %u\n", m->cpuid_15[0],
				m->cpuid_15[1], m->cpuid_15[2]);
		if (m->max_nonturbo_ratio || m->nominal_freq_hz)
			fprintf(out, "frequency:   max non-turbo ratio %u, nominal %.3f MHz\n",
				m->max_nonturbo_ratio, (double)m->nominal_freq_hz / 1e6);
		fprintf(out, "time:        shift %u mult %u zero %" PRIu64 "%s\n", m->time_shift,
			m->time_mult, m->time_zero,
			m->flags & PREC_TFILE_M_CAP_USER_TIME_ZERO ? "" : " (no TSC conversion)");
		fprintf(out, "streams:     %s%s\n",
			m->flags & PREC_TFILE_M_PER_CPU ? "per CPU" : "per thread",
			m->flags & PREC_TFILE_M_SNAPSHOT ? ", snapshot mode" : "");
		if (m->pt_pmu_type)
			fprintf(out, "intel_pt:    type %u, tsc %#" PRIx64 " mtc %#" PRIx64 " cyc %#" PRIx64
				" noretcomp %#" PRIx64 "\n", m->pt_pmu_type, m->pt_tsc_mask,
				m->pt_mtc_mask, m->pt_cyc_mask, m->pt_noretcomp_mask);
		for (i = 0; i < m->n_etm; i++)
			fprintf(out, "etm:         cpu %d kind %#x, %u registers\n", m->etm[i].cpu,
				m->etm[i].kind, m->etm[i].nregs);
	}
	if (prec_tfile_read_events(r, &evs) == 0) {
		fprintf(out, "events:\n");
		for (i = 0; i < evs->n; i++) {
			const struct prec_tfile_event *e = &evs->ev[i];

			fprintf(out, "  [%u] %-28s pmu %-12s type %u config %#llx%s%s%s%s, %u id%s",
				i, e->name, e->pmu, e->attr.type, (unsigned long long)e->attr.config,
				e->flags & PREC_TFILE_EV_AUX ? ", tracer" : "",
				e->flags & PREC_TFILE_EV_TRACKING ? ", sideband tracking" : "",
				e->flags & PREC_TFILE_EV_EMULATED ? ", emulated" : "",
				e->leader != (int32_t)i ? "" : "", e->n_ids, e->n_ids == 1 ? "" : "s");
			if (e->attr.aux_action)
				fprintf(out, ", aux-action %s", prec_aux_action_str(e->attr.aux_action));
			if (e->leader != (int32_t)i)
				fprintf(out, ", in the group of [%d]", e->leader);
			fputc('\n', out);
			if (e->spec && e->spec[0] && cli_verbose)
				fprintf(out, "      from: %s\n", e->spec);
		}
	}
	prec_tfile_rewind(r);
	while ((err = prec_tfile_next(r, &c)) > 0) {
		k = c.type <= PREC_TFILE_TYPE_MAX ? c.type : PREC_TFILE_TYPE_MAX + 1;
		count[k]++;
		raw[k] += c.len;
		stored[k] += c.stored_len;
	}
	fprintf(out, "chunks:\n");
	for (k = 1; k <= PREC_TFILE_TYPE_MAX + 1; k++) {
		if (!count[k])
			continue;
		human(a, sizeof(a), raw[k]);
		human(b, sizeof(b), stored[k]);
		fprintf(out, "  %-9s %6" PRIu64 " chunk%s %12s raw %12s stored\n",
			k <= PREC_TFILE_TYPE_MAX ? prec_tfile_type_name(k) : "unknown", count[k],
			count[k] == 1 ? " " : "s", a, b);
	}
	if (prec_tfile_status(r, &st) == 0) {
		human(a, sizeof(a), st.file_size);
		fprintf(out, "size:        %s; %s\n", a, prec_tfile_status_str(&st, line, sizeof(line)));
	}
	free(info);
	free(m);
	free(evs);
	return err < 0 ? err : 0;
}

int ptdump_file_stats(struct prec_tfile_reader *r, FILE *out)
{
	struct prec_tfile_stats *st = NULL;
	struct prec_tfile_stream_key *keys = NULL;
	struct prec_tfile_status fs;
	char a[32], b[32], n[32], line[256];
	size_t nk = 0, i;
	uint32_t k;
	int err;

	err = prec_tfile_status(r, &fs);
	if (err)
		return err;
	fprintf(out, "file: %s\n", prec_tfile_status_str(&fs, line, sizeof(line)));
	err = prec_tfile_read_stats(r, &st);
	if (err == 0) {
		fprintf(out, "recording: %.3f s, %" PRIu64 " sideband records lost, %" PRIu64
			" trace bytes lost\n", (double)st->duration_ns / 1e9, st->lost_records,
			st->lost_bytes);
		fprintf(out, "%-12s %12s %12s %7s %8s %9s %9s %7s %9s %10s\n", "stream", "trace",
			"stored", "ratio", "dropped", "aux recs", "truncated", "partial", "collision",
			"overwrite");
		for (k = 0; k < st->n_streams; k++) {
			const struct prec_tfile_stream_stats *s = &st->streams[k];

			human(a, sizeof(a), s->raw_bytes);
			human(b, sizeof(b), s->stored_bytes);
			fprintf(out, "%-12s %12s %12s %6.2fx %8" PRIu64 " %9" PRIu64 " %9" PRIu64
				" %7" PRIu64 " %9" PRIu64 " %10" PRIu64 "\n",
				stream_name(n, sizeof(n), s->cpu, s->tid), a, b,
				s->stored_bytes ? (double)s->raw_bytes / (double)s->stored_bytes : 0.0,
				s->dropped_bytes, s->aux_records, s->truncated, s->partial,
				s->collision, s->overwrite);
		}
		free(st);
	} else if (err == -ENOENT) {
		fprintf(out, "recording: no STATS chunk (the file was cut short); streams as found:\n");
		err = prec_tfile_streams(r, &keys, &nk);
		if (err)
			return err;
		for (i = 0; i < nk; i++) {
			human(a, sizeof(a), keys[i].bytes);
			fprintf(out, "%-12s %12s in %u chunks\n",
				stream_name(n, sizeof(n), keys[i].cpu, keys[i].tid), a, keys[i].chunks);
		}
		free(keys);
		err = 0;
	}
	fputc('\n', out);
	return err;
}

static bool keep(const struct prec_sb *sb, const struct prec_output_opts *o)
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

int ptdump_sideband(struct prec_session *s, const struct prec_output_opts *o, FILE *out)
{
	size_t i, n = prec_session_nr_sb(s);

	for (i = 0; i < n; i++) {
		const struct prec_sb *sb = prec_session_sb(s, i);
		const struct prec_evdesc *ev = sb->event >= 0 ? prec_session_event(s, sb->event) : NULL;
		unsigned k;

		if (!keep(sb, o))
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

void ptdump_snapshot_info(const struct prec_snapshot_report *rep, const char *dir, FILE *out)
{
	char a[32], b[32];
	unsigned k;

	human(a, sizeof(a), rep->trace_bytes);
	human(b, sizeof(b), rep->dump_bytes);
	fprintf(out, "snapshot:    %s%s%s\n", dir, rep->description[0] ? ": " : "", rep->description);
	fprintf(out, "devices:     %u device files, %u trace sources decoded\n", rep->nr_devices,
		rep->nr_sources);
	fprintf(out, "buffers:     %u, %s of trace\n", rep->nr_buffers, a);
	fprintf(out, "memory:      %u dump regions, %s\n", rep->nr_dumps, b);
	for (k = 0; k < rep->nnotes && k < PREC_SNAPSHOT_MAX_NOTES; k++)
		fprintf(out, "note:        %s\n", rep->notes[k]);
}

// SPDX-License-Identifier: MIT
/* ptdump --info and the file part of --stats, for every kind of input. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/perf_abi.h"
#include "base/perf_records.h"
#include "base/util.h"
#include "output/packets.h"
#include "output/perfdata_info.h"
#include "output/report.h"
#include "session/load.h"
#include "output/views.h"

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

/*
 * A file cut short: up to what time its trace is intact, the latest
 * timestamp in its intact Intel PT chunks (what the writer wrote after that
 * was lost with the rest of the file). Returns whether that is known (an
 * Intel PT file with a timestamp in its intact trace), and *@t.
 */
static bool intact_until(struct prec_tfile_reader *r, const struct prec_tfile_machine *fm,
			 const struct prec_tfile_events *evs, uint64_t *t)
{
	struct prec_session *s = prec_session_new();
	struct prec_tfile_chunk c;
	struct prec_machine m;
	uint64_t best = 0, tsc;
	bool found = false;

	if (!s || !fm || !fm->pt_pmu_type) {
		prec_session_free(s);
		return false;
	}
	prec_load_machine(fm, evs, &m);
	prec_session_set_machine(s, &m);
	prec_tfile_rewind(r);
	while (prec_tfile_next(r, &c) > 0)
		if (c.type == PREC_TFILE_AUX && !prec_pt_last_tsc(c.data, c.len, &tsc) &&
		    (!found || tsc > best)) {
			best = tsc;
			found = true;
		}
	if (found)
		*t = prec_session_tsc_to_time(s, best);
	prec_session_free(s);
	return found;
}

/* ---- --info --format=json: the same facts, a JSON line each ---- */

static void json_argv(FILE *out, const char *key, uint32_t n, const char *const *v)
{
	uint32_t i;

	fprintf(out, ",\"%s\":[", key);
	for (i = 0; i < n; i++) {
		if (i)
			fputc(',', out);
		prec_json_str(out, v[i] ? v[i] : "");
	}
	fputc(']', out);
}

static void json_u32s(FILE *out, const char *key, const uint32_t *v, size_t n)
{
	size_t i;

	fprintf(out, ",\"%s\":[", key);
	for (i = 0; i < n; i++)
		fprintf(out, "%s%u", i ? "," : "", v[i]);
	fputc(']', out);
}

static void json_recording(FILE *out, const struct prec_tfile_info *info)
{
	fprintf(out, "{\"type\":\"recording\",\"created_ns\":%" PRIu64 ",\"hostname\":",
		info->created_ns);
	prec_json_str(out, info->hostname ? info->hostname : "");
	fputs(",\"kernel\":", out);
	prec_json_str(out, info->kernel_release ? info->kernel_release : "");
	fputs(",\"ptrec_version\":", out);
	prec_json_str(out, info->ptrec_version ? info->ptrec_version : "");
	json_argv(out, "command", info->cmdline_argc, info->cmdline_argv);
	json_argv(out, "workload", info->workload_argc, info->workload_argv);
	fputs("}\n", out);
}

static void json_machine(FILE *out, const struct prec_tfile_machine *m)
{
	uint32_t i;

	fputs("{\"type\":\"machine\",\"arch\":", out);
	prec_json_str(out, m->arch);
	fputs(",\"vendor\":", out);
	prec_json_str(out, m->vendor);
	fprintf(out, ",\"family\":%u,\"model\":%u,\"stepping\":%u,\"cpus\":%u,\"page_size\":%u",
		m->family, m->model, m->stepping, m->nr_cpus, m->page_size);
	json_u32s(out, "cpuid_14_0", m->cpuid_14_0, 4);
	json_u32s(out, "cpuid_14_1", m->cpuid_14_1, 4);
	json_u32s(out, "cpuid_15", m->cpuid_15, 3);
	fprintf(out, ",\"max_nonturbo_ratio\":%u,\"nominal_freq_hz\":%" PRIu64
		",\"time_shift\":%u,\"time_mult\":%u,\"time_zero\":%" PRIu64
		",\"tsc_conversion\":%s,\"streams\":\"%s\",\"snapshot\":%s}\n",
		m->max_nonturbo_ratio, m->nominal_freq_hz, m->time_shift, m->time_mult, m->time_zero,
		m->flags & PREC_TFILE_M_CAP_USER_TIME_ZERO ? "true" : "false",
		m->flags & PREC_TFILE_M_PER_CPU ? "per-cpu" : "per-thread",
		m->flags & PREC_TFILE_M_SNAPSHOT ? "true" : "false");
	if (m->pt_pmu_type)
		fprintf(out, "{\"type\":\"intel_pt\",\"pmu_type\":%u,\"tsc_mask\":\"0x%" PRIx64
			"\",\"mtc_mask\":\"0x%" PRIx64 "\",\"cyc_mask\":\"0x%" PRIx64
			"\",\"noretcomp_mask\":\"0x%" PRIx64 "\"}\n", m->pt_pmu_type, m->pt_tsc_mask,
			m->pt_mtc_mask, m->pt_cyc_mask, m->pt_noretcomp_mask);
	for (i = 0; i < m->n_etm; i++)
		fprintf(out, "{\"type\":\"etm\",\"cpu\":%d,\"kind\":\"0x%x\",\"registers\":%u}\n",
			m->etm[i].cpu, m->etm[i].kind, m->etm[i].nregs);
}

static void json_event(FILE *out, uint32_t i, const struct prec_tfile_event *e)
{
	fprintf(out, "{\"type\":\"event\",\"index\":%u,\"name\":", i);
	prec_json_str(out, e->name ? e->name : "");
	fputs(",\"pmu\":", out);
	prec_json_str(out, e->pmu ? e->pmu : "");
	fprintf(out, ",\"pmu_type\":%u,\"config\":\"0x%llx\",\"tracer\":%s,\"tracking\":%s,"
		"\"emulated\":%s,\"ids\":%u,\"leader\":%d,\"aux_action\":",
		e->attr.type, (unsigned long long)e->attr.config,
		e->flags & PREC_TFILE_EV_AUX ? "true" : "false",
		e->flags & PREC_TFILE_EV_TRACKING ? "true" : "false",
		e->flags & PREC_TFILE_EV_EMULATED ? "true" : "false", e->n_ids, e->leader);
	if (e->attr.aux_action)
		prec_json_str(out, prec_aux_action_str(e->attr.aux_action));
	else
		fputs("null", out);
	fputs(",\"spec\":", out);
	if (e->spec && e->spec[0])
		prec_json_str(out, e->spec);
	else
		fputs("null", out);
	fputs("}\n", out);
}

static void text_recording(FILE *out, const struct prec_tfile_info *info)
{
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

static void text_machine(FILE *out, const struct prec_tfile_machine *m)
{
	uint32_t i;

	fprintf(out, "machine:     %s, %s family %u model %u stepping %u, %u CPUs, page %u\n",
		m->arch, m->vendor, m->family, m->model, m->stepping, m->nr_cpus, m->page_size);
	if (m->cpuid_14_0[1] || m->cpuid_14_0[2])
		fprintf(out, "cpuid 0x14:  %08x %08x %08x %08x / %08x %08x %08x %08x\n",
			m->cpuid_14_0[0], m->cpuid_14_0[1], m->cpuid_14_0[2], m->cpuid_14_0[3],
			m->cpuid_14_1[0], m->cpuid_14_1[1], m->cpuid_14_1[2], m->cpuid_14_1[3]);
	if (m->cpuid_15[0])
		fprintf(out, "cpuid 0x15:  eax %u ebx %u ecx %u\n", m->cpuid_15[0], m->cpuid_15[1],
			m->cpuid_15[2]);
	if (m->max_nonturbo_ratio || m->nominal_freq_hz)
		fprintf(out, "frequency:   max non-turbo ratio %u, nominal %.3f MHz\n",
			m->max_nonturbo_ratio, (double)m->nominal_freq_hz / 1e6);
	fprintf(out, "time:        shift %u mult %u zero %" PRIu64 "%s\n", m->time_shift,
		m->time_mult, m->time_zero,
		m->flags & PREC_TFILE_M_CAP_USER_TIME_ZERO ? "" : " (no TSC conversion)");
	fprintf(out, "streams:     %s%s\n", m->flags & PREC_TFILE_M_PER_CPU ? "per CPU" : "per thread",
		m->flags & PREC_TFILE_M_SNAPSHOT ? ", snapshot mode" : "");
	if (m->pt_pmu_type)
		fprintf(out, "intel_pt:    type %u, tsc %#" PRIx64 " mtc %#" PRIx64 " cyc %#" PRIx64
			" noretcomp %#" PRIx64 "\n", m->pt_pmu_type, m->pt_tsc_mask,
			m->pt_mtc_mask, m->pt_cyc_mask, m->pt_noretcomp_mask);
	for (i = 0; i < m->n_etm; i++)
		fprintf(out, "etm:         cpu %d kind %#x, %u registers\n", m->etm[i].cpu,
			m->etm[i].kind, m->etm[i].nregs);
}

static void text_event(FILE *out, uint32_t i, const struct prec_tfile_event *e, bool verbose)
{
	fprintf(out, "  [%u] %-28s pmu %-12s type %u config %#llx%s%s%s, %u id%s", i, e->name,
		e->pmu, e->attr.type, (unsigned long long)e->attr.config,
		e->flags & PREC_TFILE_EV_AUX ? ", tracer" : "",
		e->flags & PREC_TFILE_EV_TRACKING ? ", sideband tracking" : "",
		e->flags & PREC_TFILE_EV_EMULATED ? ", emulated" : "", e->n_ids,
		e->n_ids == 1 ? "" : "s");
	if (e->attr.aux_action)
		fprintf(out, ", aux-action %s", prec_aux_action_str(e->attr.aux_action));
	if (e->leader != (int32_t)i)
		fprintf(out, ", in the group of [%d]", e->leader);
	fputc('\n', out);
	if (e->spec && e->spec[0] && verbose)
		fprintf(out, "      from: %s\n", e->spec);
}

/* The chunks by type: count, raw and stored bytes. Returns the reader's status. */
static int chunk_sizes(struct prec_tfile_reader *r, bool json, FILE *out)
{
	uint64_t raw[PREC_TFILE_TYPE_MAX + 2] = { 0 }, stored[PREC_TFILE_TYPE_MAX + 2] = { 0 };
	uint64_t count[PREC_TFILE_TYPE_MAX + 2] = { 0 };
	struct prec_tfile_chunk c;
	char a[32], b[32];
	uint32_t k;
	int err;

	prec_tfile_rewind(r);
	while ((err = prec_tfile_next(r, &c)) > 0) {
		k = c.type <= PREC_TFILE_TYPE_MAX ? c.type : PREC_TFILE_TYPE_MAX + 1;
		count[k]++;
		raw[k] += c.len;
		stored[k] += c.stored_len;
	}
	if (!json)
		fprintf(out, "chunks:\n");
	for (k = 1; k <= PREC_TFILE_TYPE_MAX + 1; k++) {
		const char *name = k <= PREC_TFILE_TYPE_MAX ? prec_tfile_type_name(k) : "unknown";

		if (!count[k])
			continue;
		if (json) {
			fprintf(out, "{\"type\":\"chunks\",\"kind\":\"%s\",\"count\":%" PRIu64
				",\"raw_bytes\":%" PRIu64 ",\"stored_bytes\":%" PRIu64 "}\n", name,
				count[k], raw[k], stored[k]);
			continue;
		}
		human(a, sizeof(a), raw[k]);
		human(b, sizeof(b), stored[k]);
		fprintf(out, "  %-9s %6" PRIu64 " chunk%s %12s raw %12s stored\n", name, count[k],
			count[k] == 1 ? " " : "s", a, b);
	}
	return err;
}

/*
 * Snapshot mode: the snapshots the recording took (PREC_RECORD_SNAPSHOT
 * records in the sideband), one line each: number, time, why, bytes.
 */
static int snapshot_list(struct prec_tfile_reader *r, const struct prec_tfile_events *evs,
			 bool json, FILE *out)
{
	struct prec_tfile_chunk c;
	unsigned nsnap = 0;
	int err;

	prec_tfile_rewind(r);
	while ((err = prec_tfile_next(r, &c)) > 0) {
		const struct perf_event_header *h;
		size_t pos = 0;

		if (c.type != PREC_TFILE_SIDEBAND)
			continue;
		while (prec_perf_next_record(c.data, c.len, &pos, &h) > 0) {
			const uint8_t *p = (const uint8_t *)h;
			uint32_t index, reason;
			int32_t ev;
			uint64_t bytes, time;
			const char *why, *name;
			char a[32];

			if (h->type != PREC_RECORD_SNAPSHOT ||
			    h->size < PREC_RECORD_SNAPSHOT_SIZE + 32)
				continue;
			index = prec_rd32(p + 8);
			reason = prec_rd32(p + 12);
			ev = (int32_t)prec_rd32(p + 16);
			bytes = prec_rd64(p + 24);
			time = prec_rd64(p + h->size - 24);
			name = evs && ev >= 0 && (uint32_t)ev < evs->n ? evs->ev[ev].name : NULL;
			why = prec_tfile_snap_reason(reason);
			if (json) {
				fprintf(out, "{\"type\":\"aux_snapshot\",\"index\":%u,\"time_ns\":%"
					PRIu64 ",\"reason\":\"%s\",\"event\":", index, time, why);
				if (name)
					prec_json_str(out, name);
				else
					fputs("null", out);
				fprintf(out, ",\"bytes\":%" PRIu64 "}\n", bytes);
				continue;
			}
			if (!nsnap++)
				fprintf(out, "snapshots:\n");
			human(a, sizeof(a), bytes);
			fprintf(out, "  #%u  %" PRIu64 ".%09" PRIu64 "  %s of trace, %s%s\n", index,
				time / 1000000000u, time % 1000000000u, a,
				reason == PREC_SNAP_SIGNAL ? "on SIGUSR2" :
				reason == PREC_SNAP_END ? "at the end" :
				reason == PREC_SNAP_TRIGGER ? "by " : "for an unknown reason",
				reason == PREC_SNAP_TRIGGER ? (name ? name : "a trigger") : "");
		}
	}
	return err;
}

/* The file's size and state, and for a file cut short how far its trace is intact. */
static void file_state(struct prec_tfile_reader *r, const struct prec_tfile_machine *m,
		       const struct prec_tfile_events *evs, bool json, bool read_ok, FILE *out)
{
	struct prec_tfile_status st;
	char a[32], line[256];
	uint64_t t = 0;
	bool known;

	if (prec_tfile_status(r, &st))
		return;
	prec_tfile_status_str(&st, line, sizeof(line));
	known = st.cut_short && read_ok && intact_until(r, m, evs, &t);
	if (json) {
		fprintf(out, "{\"type\":\"status\",\"size\":%" PRIu64 ",\"complete\":%s,"
			"\"cut_short\":%s,\"damaged\":%" PRIu64 ",\"damaged_bytes\":%" PRIu64
			",\"intact_until_ns\":", st.file_size,
			st.end_seen && !st.cut_short && !st.damaged ? "true" : "false",
			st.cut_short ? "true" : "false", st.damaged, st.damaged_bytes);
		if (known)
			fprintf(out, "%" PRIu64, t);
		else
			fputs("null", out);
		fputs(",\"text\":", out);
		prec_json_str(out, line);
		fputs("}\n", out);
		return;
	}
	human(a, sizeof(a), st.file_size);
	fprintf(out, "size:        %s; %s\n", a, line);
	if (known)
		fprintf(out, "intact:      trace up to time %" PRIu64 ".%09" PRIu64
			" (the last timestamp before the cut)\n", t / 1000000000, t % 1000000000);
	else if (st.cut_short && read_ok && m && m->pt_pmu_type)
		fprintf(out, "intact:      up to an unknown time (no timestamp in the intact trace)\n");
}

int prec_view_ptrec_info(struct prec_tfile_reader *r, const char *path, bool verbose, bool json,
			 FILE *out)
{
	const struct prec_tfile_fhdr *fh = prec_tfile_file_header(r);
	struct prec_tfile_info *info = NULL;
	struct prec_tfile_machine *m = NULL;
	struct prec_tfile_events *evs = NULL;
	uint32_t i;
	int err;

	if (json) {
		prec_json_header(out, "info");
		fputs("{\"type\":\"file\",\"path\":", out);
		prec_json_str(out, path);
		fprintf(out, ",\"format\":\"ptrec\",\"version\":%u,\"emulated\":%s}\n", fh->version,
			fh->flags & PREC_TFILE_F_EMULATED ? "true" : "false");
	} else {
		fprintf(out, "file:        %s\n", path);
		fprintf(out, "format:      ptrec trace file v%u%s\n", fh->version,
			fh->flags & PREC_TFILE_F_EMULATED ?
				", made by the software tracer (--emulate)" : "");
	}
	if (prec_tfile_read_info(r, &info) == 0)
		(json ? json_recording : text_recording)(out, info);
	if (prec_tfile_read_machine(r, &m) == 0)
		(json ? json_machine : text_machine)(out, m);
	if (prec_tfile_read_events(r, &evs) == 0) {
		if (!json)
			fprintf(out, "events:\n");
		for (i = 0; i < evs->n; i++) {
			if (json)
				json_event(out, i, &evs->ev[i]);
			else
				text_event(out, i, &evs->ev[i], verbose);
		}
	}
	err = chunk_sizes(r, json, out);
	if (err >= 0 && m && (m->flags & PREC_TFILE_M_SNAPSHOT))
		err = snapshot_list(r, evs, json, out);
	file_state(r, m, evs, json, err >= 0, out);
	free(info);
	free(m);
	free(evs);
	return err < 0 ? err : 0;
}

/*
 * The place of stream (cpu, tid) in the session's order (first trace time,
 * then thread), or -1 when @o's --tid/--pid/--cpu leave it out.
 */
static long stream_rank(const struct prec_session *s, const struct prec_output_opts *o,
			int32_t cpu, int32_t tid)
{
	size_t i, n = prec_session_nr_streams(s);

	if (o && o->tid >= 0 && tid >= 0 && tid != o->tid)
		return -1;
	if (o && o->cpu >= 0 && tid < 0 && cpu >= 0 && cpu != o->cpu)
		return -1;
	if (o && o->pid >= 0 && tid >= 0 && prec_session_pid_of(s, tid, UINT64_MAX) >= 0 &&
	    prec_session_pid_of(s, tid, UINT64_MAX) != o->pid)
		return -1;
	for (i = 0; i < n; i++) {
		const struct prec_stream *st = prec_session_stream(s, i);

		if (st->cpu == cpu && st->tid == tid)
			return (long)i;
	}
	return (long)n;
}

struct ranked {
	long rank;
	uint32_t k;
};

static int ranked_cmp(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->k < y->k ? -1 : x->k > y->k;
}

/* The streams of @st that @o keeps, in the session's order: count in *@n. */
static struct ranked *rank_streams(const struct prec_session *s,
				   const struct prec_output_opts *o,
				   const struct prec_tfile_stats *st, size_t *n)
{
	struct ranked *rk = calloc(st->n_streams + 1, sizeof(*rk));
	uint32_t k;

	*n = 0;
	if (!rk)
		return NULL;
	for (k = 0; k < st->n_streams; k++) {
		long r = stream_rank(s, o, st->streams[k].cpu, st->streams[k].tid);

		if (r >= 0)
			rk[(*n)++] = (struct ranked){ r, k };
	}
	qsort(rk, *n, sizeof(*rk), ranked_cmp);
	return rk;
}

static int ptrec_file_stats(const struct prec_session *ses, const struct prec_output_opts *o,
			    struct prec_tfile_reader *r, FILE *out)
{
	struct ranked *rk = NULL;
	size_t nr = 0, j;
	struct prec_tfile_stats *st = NULL;
	struct prec_tfile_stream_key *keys = NULL;
	struct prec_tfile_status fs;
	char a[32], b[32], n[32], line[256];
	size_t nk = 0, i;
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
		rk = rank_streams(ses, o, st, &nr);
		if (!rk) {
			free(st);
			return -ENOMEM;
		}
		for (j = 0; j < nr; j++) {
			const struct prec_tfile_stream_stats *s = &st->streams[rk[j].k];

			human(a, sizeof(a), s->raw_bytes);
			human(b, sizeof(b), s->stored_bytes);
			fprintf(out, "%-12s %12s %12s %6.2fx %8" PRIu64 " %9" PRIu64 " %9" PRIu64
				" %7" PRIu64 " %9" PRIu64 " %10" PRIu64 "\n",
				stream_name(n, sizeof(n), s->cpu, s->tid), a, b,
				s->stored_bytes ? (double)s->raw_bytes / (double)s->stored_bytes : 0.0,
				s->dropped_bytes, s->aux_records, s->truncated, s->partial,
				s->collision, s->overwrite);
		}
		free(rk);
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

void prec_view_snapshot_info(const struct prec_snapshot_report *rep, const char *dir, FILE *out)
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
	for (k = 0; k < prec_notes_kept(&rep->notes); k++)
		fprintf(out, "note:        %s\n", rep->notes.text[k]);
}

/* The same as JSON lines: file (format snapshot), snapshot, note. */
static void snapshot_info_json(const struct prec_snapshot_report *rep, const char *dir, FILE *out)
{
	unsigned k;

	prec_json_header(out, "info");
	fputs("{\"type\":\"file\",\"path\":", out);
	prec_json_str(out, dir);
	fputs(",\"format\":\"snapshot\",\"version\":0,\"emulated\":false}\n", out);
	fputs("{\"type\":\"snapshot\",\"description\":", out);
	prec_json_str(out, rep->description);
	fprintf(out, ",\"devices\":%u,\"sources\":%u,\"buffers\":%u,\"trace_bytes\":%" PRIu64
		",\"dumps\":%u,\"dump_bytes\":%" PRIu64 "}\n", rep->nr_devices, rep->nr_sources,
		rep->nr_buffers, rep->trace_bytes, rep->nr_dumps, rep->dump_bytes);
	for (k = 0; k < prec_notes_kept(&rep->notes); k++) {
		fputs("{\"type\":\"note\",\"text\":", out);
		prec_json_str(out, rep->notes.text[k]);
		fputs("}\n", out);
	}
}

static int put_buf(struct prec_buf *b, FILE *out, int err)
{
	if (!err && b->data)
		fputs(b->data, out);
	prec_buf_free(b);
	return err;
}

int prec_view_info(const struct prec_import_report *rep, const struct prec_import_opts *o,
		   bool verbose, bool json, FILE *out, struct prec_diag *d)
{
	struct prec_buf b = { 0 };
	enum prec_input_kind kind = rep->importer ? rep->importer->kind : PREC_INPUT_AUTO;

	if (json && kind != PREC_INPUT_PTREC && kind != PREC_INPUT_PERFDATA &&
	    kind != PREC_INPUT_SNAPSHOT)
		return -EOPNOTSUPP;
	switch (kind) {
	case PREC_INPUT_PTREC:
		return prec_view_ptrec_info(rep->reader, o->path, verbose, json, out);
	case PREC_INPUT_PERFDATA:
		if (json)
			return prec_perfdata_describe_json(o->path, &o->perfdata, out, d);
		return put_buf(&b, out, prec_perfdata_describe(o->path, &o->perfdata, &b, d));
	case PREC_INPUT_SNAPSHOT:
		if (json)
			snapshot_info_json(&rep->snapshot, o->path, out);
		else
			prec_view_snapshot_info(&rep->snapshot, o->path, out);
		return 0;
	default:
		return -EOPNOTSUPP;
	}
}

int prec_view_file_stats(const struct prec_session *s, const struct prec_import_report *rep,
			 const struct prec_output_opts *o, FILE *out)
{
	struct prec_buf b = { 0 };

	switch (rep->importer ? rep->importer->kind : PREC_INPUT_AUTO) {
	case PREC_INPUT_PTREC:
		return ptrec_file_stats(s, o, rep->reader, out);
	case PREC_INPUT_PERFDATA:
		return put_buf(&b, out, prec_perfdata_file_stats(s, &rep->perfdata, &b));
	default:
		return 0;
	}
}

// SPDX-License-Identifier: MIT
/* The perf.data views: --info (what the file holds) and the file part of --stats. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/perf_abi.h"
#include "base/perf_format.h"
#include "base/util.h"
#include "output/perfdata_info.h"
#include "output/report.h"

static void sample_type_str(struct prec_buf *b, uint64_t st)
{
	static const char *const bits[] = {
		"IP", "TID", "TIME", "ADDR", "READ", "CALLCHAIN", "ID", "CPU", "PERIOD",
		"STREAM_ID", "RAW", "BRANCH_STACK", "REGS_USER", "STACK_USER", "WEIGHT",
		"DATA_SRC", "IDENTIFIER", "TRANSACTION", "REGS_INTR", "PHYS_ADDR", "AUX",
		"CGROUP", "DATA_PAGE_SIZE", "CODE_PAGE_SIZE", "WEIGHT_STRUCT",
	};
	unsigned i;
	bool first = true;

	for (i = 0; i < 64; i++) {
		if (!(st & (1ull << i)))
			continue;
		if (i < PREC_ARRAY_SIZE(bits))
			prec_buf_printf(b, "%s%s", first ? "" : "|", bits[i]);
		else
			prec_buf_printf(b, "%sbit%u", first ? "" : "|", i);
		first = false;
	}
	if (first)
		prec_buf_printf(b, "0");
}

/* The names of the values of Intel PT's AUXTRACE_INFO, in their order (perf's intel-pt.h). */
static const char *const pt_names[] = {
	"pmu_type", "time_shift", "time_mult", "time_zero", "cap_user_time_zero",
	"tsc_bit", "noretcomp_bit", "have_sched_switch", "snapshot_mode",
	"per_cpu_mmaps", "mtc_bit", "mtc_freq_bits", "tsc_ctc_n", "tsc_ctc_d",
	"cyc_bit", "max_nonturbo_ratio", "filter_str_len",
};

static void describe_pt(const struct prec_perfdata_header *pd, struct prec_buf *b)
{
	size_t i;

	for (i = 0; i < pd->npriv && i < PREC_ARRAY_SIZE(pt_names); i++)
		prec_buf_printf(b, "  %-20s %#" PRIx64 "\n", pt_names[i], pd->priv[i]);
	if (pd->pt_filter)
		prec_buf_printf(b, "  %-20s %s\n", "filter", pd->pt_filter);
	if (pd->pt_have_evtrace)
		prec_buf_printf(b, "  %-20s %#" PRIx64 "\n", "cap_event_trace", pd->pt_evtrace);
}

/* The form, sizes and header features. */
static void describe_header(const struct prec_perfdata_header *pd, const char *path,
			    struct prec_buf *b)
{
	const struct prec_perfdata_report *rep = &pd->rep;
	unsigned bit;
	size_t i;

	prec_buf_printf(b, "file:        %s\n", path);
	if (rep->format == PREC_PERFDATA_PIPE)
		prec_buf_printf(b, "format:      perf.data, pipe form (perf record -o -), %" PRIu64
				" bytes\n", rep->input_size);
	else
		prec_buf_printf(b, "format:      perf.data, file form, %" PRIu64 " bytes; data "
				"at %" PRIu64 " (%" PRIu64 " bytes), attr size %" PRIu64 "\n",
				rep->input_size, rep->data_offset, rep->data_size,
				pd->attr_size);
	if (pd->nr_parts)
		prec_buf_printf(b, "directory:   perf record --threads layout, %zu data files\n",
				pd->nr_parts);
	if (pd->hostname)
		prec_buf_printf(b, "hostname:    %s\n", pd->hostname);
	if (pd->osrelease)
		prec_buf_printf(b, "os release:  %s\n", pd->osrelease);
	if (pd->version)
		prec_buf_printf(b, "perf:        %s\n", pd->version);
	if (pd->arch)
		prec_buf_printf(b, "arch:        %s\n", pd->arch);
	if (pd->cpudesc || pd->cpuid)
		prec_buf_printf(b, "cpu:         %s%s%s%s\n", pd->cpudesc ? pd->cpudesc : "",
				pd->cpuid ? " (cpuid " : "", pd->cpuid ? pd->cpuid : "",
				pd->cpuid ? ")" : "");
	if (pd->cpus_online || pd->cpus_avail)
		prec_buf_printf(b, "cpus:        %u online, %u available\n", pd->cpus_online,
				pd->cpus_avail);
	if (pd->total_mem)
		prec_buf_printf(b, "memory:      %" PRIu64 " kB\n", pd->total_mem);
	if (pd->cmdline) {
		prec_buf_printf(b, "command:    ");
		for (i = 0; i < pd->cmdline_n; i++)
			prec_buf_printf(b, " %s", pd->cmdline[i]);
		prec_buf_printf(b, "\n");
	}
	if (pd->have_comp)
		prec_buf_printf(b, "compressed:  %s level %u, ratio %u, mmap %u bytes\n",
				pd->comp_type == 1 ? "zstd" : "unknown method", pd->comp_level,
				pd->comp_ratio, pd->comp_mmap_len);
	if (pd->have_stime)
		prec_buf_printf(b, "samples:     first %" PRIu64 ".%09" PRIu64 ", last %" PRIu64
				".%09" PRIu64 "\n", pd->stime_first / 1000000000u,
				pd->stime_first % 1000000000u, pd->stime_last / 1000000000u,
				pd->stime_last % 1000000000u);
	prec_buf_printf(b, "features:   ");
	for (bit = 1; bit < PERF_HEADER_FEAT_BITS; bit++)
		if (rep->feat_bits[bit / 64] & (1ull << (bit % 64))) {
			if (prec_perfdata_feature_name(bit))
				prec_buf_printf(b, " %s", prec_perfdata_feature_name(bit));
			else
				prec_buf_printf(b, " feature%u", bit);
		}
	prec_buf_printf(b, "\n");
}

/* The events, build ids and AUXTRACE_INFO. */
static void describe_events(const struct prec_perfdata_header *pd, struct prec_buf *b)
{
	size_t i;

	prec_buf_printf(b, "events:\n");
	for (i = 0; i < pd->nr_ev; i++) {
		const struct prec_perfdata_event_info *e = &pd->ev[i];

		prec_buf_printf(b, "  [%zu] %-28s type %u config %#llx sample_type ", i,
				e->name, e->attr.type,
				(unsigned long long)e->attr.config);
		sample_type_str(b, e->attr.sample_type);
		prec_buf_printf(b, ", %zu id%s", e->nr_ids, e->nr_ids == 1 ? "" : "s");
		if (e->attr.aux_action)
			prec_buf_printf(b, ", aux-action %s",
					prec_aux_action_str(e->attr.aux_action));
		if (e->tracer)
			prec_buf_printf(b, ", tracer");
		prec_buf_printf(b, "\n");
	}
	if (pd->nr_bids) {
		char h[2 * PREC_BUILD_ID_MAX + 1];

		prec_buf_printf(b, "build ids:\n");
		for (i = 0; i < pd->nr_bids; i++) {
			prec_hex(h, pd->bids[i].id, pd->bids[i].size);
			prec_buf_printf(b, "  %s %s\n", h, pd->bids[i].path);
		}
	}
	if (pd->have_info) {
		switch (pd->aux_type) {
		case PERF_AUXTRACE_INTEL_PT:
			prec_buf_printf(b, "auxtrace:    intel_pt, %zu values\n", pd->npriv);
			describe_pt(pd, b);
			break;
		case PERF_AUXTRACE_CS_ETM:
			prec_buf_printf(b, "auxtrace:    cs_etm (CoreSight), header version "
					"%" PRIu64
					", pmu type %" PRIu64 ", %zu CPUs%s\n", pd->priv[0], pd->priv[1] >> 32,
					pd->nr_etm, pd->priv[2] ? ", snapshot" : "");
			for (i = 0; i < pd->nr_etm; i++)
				prec_buf_printf(b, "  cpu %d: %s, %u parameters\n", pd->etm[i].cpu,
						pd->etm[i].magic == CS_ETMV3_MAGIC ?
							"ETMv3/PTM (not decoded: ptdump decodes ETMv4 and ETE)" :
						pd->etm[i].magic == CS_ETMV4_MAGIC ? "ETMv4" :
										     "ETE",
						pd->etm[i].nparams);
			break;
		default:
			prec_buf_printf(b, "auxtrace:    type %u (not supported), %zu values\n",
					pd->aux_type, pd->npriv);
		}
	}
}

/* TIME_CONV, the records by type, the trace and the notes. */
static void describe_records(const struct prec_perfdata_header *pd, struct prec_buf *b)
{
	const struct prec_perfdata_report *rep = &pd->rep;
	uint64_t total = 0;
	size_t i, k;

	if (pd->have_tc)
		prec_buf_printf(b, "time conv:   shift %" PRIu64 " mult %" PRIu64 " zero %" PRIu64
				"\n", pd->tc_shift, pd->tc_mult, pd->tc_zero);
	prec_buf_printf(b, "records:\n");
	for (k = 0; k < PREC_PERFDATA_NR_TYPES; k++) {
		const char *n = prec_perfdata_record_name((uint32_t)k);

		if (!rep->nr_records[k])
			continue;
		total += rep->nr_records[k];
		if (n)
			prec_buf_printf(b, "  %-18s %10" PRIu64 "\n", n, rep->nr_records[k]);
		else
			prec_buf_printf(b, "  type %-13zu %10" PRIu64 "\n", k, rep->nr_records[k]);
	}
	if (rep->nr_other_type)
		prec_buf_printf(b, "  %-18s %10" PRIu64 "\n", "other", rep->nr_other_type);
	prec_buf_printf(b, "  %-18s %10" PRIu64 "\n", "total", total + rep->nr_other_type);
	if (rep->nr_compressed)
		prec_buf_printf(b, "decompressed: %" PRIu64 " bytes from %" PRIu64
				" compressed records\n", rep->decompressed_bytes,
				rep->nr_compressed);
	if (pd->nr_aux_records)
		prec_buf_printf(b, "trace:       %" PRIu64 " bytes in %" PRIu64
				" AUXTRACE records\n", rep->aux_bytes, pd->nr_aux_records);
	for (i = 0; i < prec_notes_kept(&rep->notes); i++)
		prec_buf_printf(b, "note:        %s\n", rep->notes.text[i]);
}

static void describe(const struct prec_perfdata_header *pd, const char *path, struct prec_buf *b)
{
	describe_header(pd, path, b);
	describe_events(pd, b);
	describe_records(pd, b);
}

int prec_perfdata_describe_buf(const void *buf, size_t len, const struct prec_perfdata_opts *o,
			       struct prec_buf *out, struct prec_diag *d)
{
	struct prec_perfdata_header *h;
	int err;

	if (!out)
		return -EINVAL;
	err = prec_perfdata_read_header_buf(buf, len, o, &h, d);
	if (err)
		return err;
	describe(h, "(buffer)", out);
	prec_perfdata_header_free(h);
	return 0;
}

int prec_perfdata_describe(const char *path, const struct prec_perfdata_opts *o,
			   struct prec_buf *out, struct prec_diag *d)
{
	struct prec_perfdata_header *h;
	int err;

	if (!out || !path)
		return -EINVAL;
	err = prec_perfdata_read_header(path, o, &h, d);
	if (err)
		return err;
	describe(h, strcmp(path, "-") ? path : "standard input", out);
	prec_perfdata_header_free(h);
	return 0;
}

/* ---- --info --format=json (the "info" view of ptdump(1) JSON OUTPUT) ---- */

/* ,"KEY":"STRING" or ,"KEY":null */
static void jstr_field(FILE *out, const char *key, const char *v)
{
	fprintf(out, ",\"%s\":", key);
	if (v)
		prec_json_str(out, v);
	else
		fputs("null", out);
}

static void json_header(const struct prec_perfdata_header *pd, const char *path, FILE *out)
{
	const struct prec_perfdata_report *rep = &pd->rep;
	unsigned bit;
	size_t i;
	bool first = true;

	fputs("{\"type\":\"file\",\"path\":", out);
	prec_json_str(out, path);
	fprintf(out, ",\"format\":\"perf.data\",\"version\":2,\"emulated\":false}\n");
	fprintf(out, "{\"type\":\"perf_header\",\"form\":\"%s\",\"size\":%" PRIu64,
		rep->format == PREC_PERFDATA_PIPE ? "pipe" : "file", rep->input_size);
	if (rep->format == PREC_PERFDATA_PIPE)
		fputs(",\"data_offset\":null,\"data_size\":null,\"attr_size\":null", out);
	else
		fprintf(out, ",\"data_offset\":%" PRIu64 ",\"data_size\":%" PRIu64
			",\"attr_size\":%" PRIu64, rep->data_offset, rep->data_size,
			(uint64_t)pd->attr_size);
	fprintf(out, ",\"data_files\":%zu", pd->nr_parts);
	jstr_field(out, "hostname", pd->hostname);
	jstr_field(out, "os_release", pd->osrelease);
	jstr_field(out, "perf_version", pd->version);
	jstr_field(out, "arch", pd->arch);
	jstr_field(out, "cpu", pd->cpudesc);
	jstr_field(out, "cpuid", pd->cpuid);
	fprintf(out, ",\"cpus_online\":%u,\"cpus_available\":%u,\"memory_kb\":%" PRIu64,
		pd->cpus_online, pd->cpus_avail, pd->total_mem);
	fputs(",\"command\":", out);
	if (pd->cmdline) {
		fputs("[", out);
		for (i = 0; i < pd->cmdline_n; i++) {
			fputs(i ? "," : "", out);
			prec_json_str(out, pd->cmdline[i]);
		}
		fputs("]", out);
	} else {
		fputs("null", out);
	}
	if (pd->have_comp)
		fprintf(out, ",\"compression\":{\"method\":\"%s\",\"level\":%u,\"ratio\":%u,"
			"\"mmap_len\":%u}", pd->comp_type == 1 ? "zstd" : "unknown",
			pd->comp_level, pd->comp_ratio, pd->comp_mmap_len);
	else
		fputs(",\"compression\":null", out);
	if (pd->have_stime)
		fprintf(out, ",\"first_sample_ns\":%" PRIu64 ",\"last_sample_ns\":%" PRIu64,
			pd->stime_first, pd->stime_last);
	else
		fputs(",\"first_sample_ns\":null,\"last_sample_ns\":null", out);
	fputs(",\"features\":[", out);
	for (bit = 1; bit < PERF_HEADER_FEAT_BITS; bit++) {
		char n[24];

		if (!(rep->feat_bits[bit / 64] & (1ull << (bit % 64))))
			continue;
		snprintf(n, sizeof(n), "feature%u", bit);
		fputs(first ? "" : ",", out);
		prec_json_str(out, prec_perfdata_feature_name(bit) ? prec_perfdata_feature_name(bit) : n);
		first = false;
	}
	fputs("]}\n", out);
}

static void json_events(const struct prec_perfdata_header *pd, FILE *out)
{
	struct prec_buf st = { 0 };
	char h[2 * PREC_BUILD_ID_MAX + 1];
	size_t i;

	for (i = 0; i < pd->nr_ev; i++) {
		const struct prec_perfdata_event_info *e = &pd->ev[i];

		st.len = 0;
		sample_type_str(&st, e->attr.sample_type);
		fprintf(out, "{\"type\":\"perf_event\",\"index\":%zu,\"name\":", i);
		prec_json_str(out, e->name);
		fprintf(out, ",\"pmu_type\":%u,\"config\":\"%#" PRIx64 "\",\"sample_type\":",
			e->attr.type, (uint64_t)e->attr.config);
		prec_json_str(out, st.data ? st.data : "0");
		fprintf(out, ",\"ids\":%zu,\"aux_action\":", e->nr_ids);
		if (e->attr.aux_action)
			prec_json_str(out, prec_aux_action_str(e->attr.aux_action));
		else
			fputs("null", out);
		fprintf(out, ",\"tracer\":%s}\n", e->tracer ? "true" : "false");
	}
	prec_buf_free(&st);
	for (i = 0; i < pd->nr_bids; i++) {
		prec_hex(h, pd->bids[i].id, pd->bids[i].size);
		fprintf(out, "{\"type\":\"build_id\",\"build_id\":\"%s\",\"path\":", h);
		prec_json_str(out, pd->bids[i].path);
		fputs("}\n", out);
	}
}

static void json_auxtrace(const struct prec_perfdata_header *pd, FILE *out)
{
	size_t i;

	if (!pd->have_info)
		return;
	fprintf(out, "{\"type\":\"auxtrace\",\"kind\":\"%s\",\"values\":[",
		pd->aux_type == PERF_AUXTRACE_INTEL_PT ? "intel_pt" :
		pd->aux_type == PERF_AUXTRACE_CS_ETM ? "cs_etm" : "other");
	for (i = 0; i < pd->npriv; i++)
		fprintf(out, "%s%" PRIu64, i ? "," : "", pd->priv[i]);
	fputs("],\"names\":{", out);
	for (i = 0; pd->aux_type == PERF_AUXTRACE_INTEL_PT && i < pd->npriv &&
		    i < PREC_ARRAY_SIZE(pt_names); i++)
		fprintf(out, "%s\"%s\":%" PRIu64, i ? "," : "", pt_names[i], pd->priv[i]);
	fputs("},\"trace_units\":[", out);
	for (i = 0; pd->aux_type == PERF_AUXTRACE_CS_ETM && i < pd->nr_etm; i++)
		fprintf(out, "%s{\"cpu\":%d,\"kind\":\"%s\",\"parameters\":%u}", i ? "," : "",
			pd->etm[i].cpu,
			pd->etm[i].magic == CS_ETMV3_MAGIC ? "etmv3" :
			pd->etm[i].magic == CS_ETMV4_MAGIC ? "etmv4" : "ete",
			pd->etm[i].nparams);
	fputs("]}\n", out);
}

static void json_records(const struct prec_perfdata_header *pd, FILE *out)
{
	const struct prec_perfdata_report *rep = &pd->rep;
	uint64_t total = rep->nr_other_type;
	bool first = true;
	size_t i, k;

	fputs("{\"type\":\"records\",\"counts\":{", out);
	for (k = 0; k < PREC_PERFDATA_NR_TYPES; k++) {
		const char *n = prec_perfdata_record_name((uint32_t)k);

		if (!rep->nr_records[k])
			continue;
		total += rep->nr_records[k];
		if (n)
			fprintf(out, "%s\"%s\":%" PRIu64, first ? "" : ",", n, rep->nr_records[k]);
		else
			fprintf(out, "%s\"type %zu\":%" PRIu64, first ? "" : ",", k,
				rep->nr_records[k]);
		first = false;
	}
	if (rep->nr_other_type)
		fprintf(out, "%s\"other\":%" PRIu64, first ? "" : ",", rep->nr_other_type);
	fprintf(out, "},\"total\":%" PRIu64 ",\"trace_bytes\":%" PRIu64
		",\"auxtrace_records\":%" PRIu64 ",\"decompressed_bytes\":%" PRIu64 "}\n",
		total, rep->aux_bytes, pd->nr_aux_records, rep->decompressed_bytes);
	if (pd->have_tc)
		fprintf(out, "{\"type\":\"time_conv\",\"time_shift\":%" PRIu64 ",\"time_mult\":%"
			PRIu64 ",\"time_zero\":%" PRIu64 "}\n", pd->tc_shift, pd->tc_mult,
			pd->tc_zero);
	for (i = 0; i < prec_notes_kept(&rep->notes); i++) {
		fputs("{\"type\":\"note\",\"text\":", out);
		prec_json_str(out, rep->notes.text[i]);
		fputs("}\n", out);
	}
}

int prec_perfdata_describe_json(const char *path, const struct prec_perfdata_opts *o,
				FILE *out, struct prec_diag *d)
{
	struct prec_perfdata_header *h;
	int err;

	if (!path)
		return -EINVAL;
	err = prec_perfdata_read_header(path, o, &h, d);
	if (err)
		return err;
	prec_json_header(out, "info");
	json_header(h, strcmp(path, "-") ? path : "standard input", out);
	json_events(h, out);
	json_auxtrace(h, out);
	json_records(h, out);
	prec_perfdata_header_free(h);
	return 0;
}

struct stream_stats {
	uint64_t aux, truncated, partial, collision, overwrite;
};

int prec_perfdata_file_stats(const struct prec_session *s, const struct prec_perfdata_report *rep,
			     struct prec_buf *out)
{
	size_t ns = prec_session_nr_streams(s), nsb = prec_session_nr_sb(s), i, k;
	bool per_cpu = prec_session_machine(s)->per_cpu;
	struct stream_stats *st = calloc(ns ? ns : 1, sizeof(*st));
	uint64_t lost = 0, lost_recs = 0;
	int err = 0;

	if (!st)
		return -ENOMEM;
	for (i = 0; i < nsb; i++) {
		const struct prec_sb *sb = prec_session_sb(s, i);
		const struct prec_evdesc *ev = prec_session_event(s, sb->event);

		if (sb->type == PREC_SB_LOST) {
			lost_recs++;
			lost += sb->u.lost.lost;
			continue;
		}
		if (sb->type != PREC_SB_AUX || (ev && ev->kind != PREC_EVK_TRACER))
			continue;
		for (k = 0; k < ns; k++) {
			const struct prec_stream *x = prec_session_stream(s, k);

			if (per_cpu ? x->cpu == sb->cpu : x->tid == sb->tid)
				break;
		}
		if (k == ns)
			continue;
		st[k].aux++;
		st[k].truncated += !!(sb->u.aux.flags & PERF_AUX_FLAG_TRUNCATED);
		st[k].overwrite += !!(sb->u.aux.flags & PERF_AUX_FLAG_OVERWRITE);
		st[k].partial += !!(sb->u.aux.flags & PERF_AUX_FLAG_PARTIAL);
		st[k].collision += !!(sb->u.aux.flags & PERF_AUX_FLAG_COLLISION);
	}
	err |= prec_buf_printf(out, "file: perf.data (%s form), %" PRIu64 " bytes%s\n",
			       rep->format == PREC_PERFDATA_PIPE ? "pipe" : "file", rep->input_size,
			       rep->cut_short ? ", cut short" : "");
	err |= prec_buf_printf(out, "recording: %" PRIu64 " LOST records (%" PRIu64 " records "
			       "lost), %" PRIu64 " AUXTRACE records holding %" PRIu64
			       " bytes (with padding)\n", lost_recs, lost,
			       rep->nr_records[PERF_RECORD_AUXTRACE], rep->aux_bytes);
	if (ns)
		err |= prec_buf_printf(out, "%-12s %12s %8s %12s %9s %9s %7s %9s %10s\n", "stream",
				       "trace", "gaps", "lost", "aux recs", "truncated", "partial",
				       "collision", "overwrite");
	for (k = 0; k < ns; k++) {
		const struct prec_stream *x = prec_session_stream(s, k);
		char name[32];

		if (x->cpu >= 0)
			snprintf(name, sizeof(name), "cpu %d", x->cpu);
		else
			snprintf(name, sizeof(name), "tid %d", x->tid);
		err |= prec_buf_printf(out, "%-12s %12zu %8zu %12" PRIu64 " %9" PRIu64 " %9" PRIu64
				       " %7" PRIu64 " %9" PRIu64 " %10" PRIu64 "\n", name, x->len,
				       x->nr_gaps, x->lost, st[k].aux, st[k].truncated,
				       st[k].partial, st[k].collision, st[k].overwrite);
	}
	err |= prec_buf_printf(out, "\n");
	free(st);
	return err < 0 ? -ENOMEM : 0;
}

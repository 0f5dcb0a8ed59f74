/* SPDX-License-Identifier: MIT */
/* The perf.data views of ptdump: --info and the file part of --stats. */
#ifndef PREC_PERFDATA_INFO_H
#define PREC_PERFDATA_INFO_H

#include "base/util.h"
#include "interop/perfdata.h"
#include "session/session.h"

/*
 * ptdump --info for perf.data: appends a text summary of @path to @out: the
 * form and sections, the features (hostname, os release, perf version, arch,
 * CPU, cpuid, CPUs, memory, command line, build ids, compression, ...), the
 * events (name, type, config, sample_type, aux_action, ids), the
 * AUXTRACE_INFO contents, TIME_CONV, and the record counts by type (the
 * trace itself is not decoded). Returns 0 or a negative error
 * as prec_perfdata_load() (@d says what).
 */
int prec_perfdata_describe(const char *path, const struct prec_perfdata_opts *o,
			   struct prec_buf *out, struct prec_diag *d);
int prec_perfdata_describe_buf(const void *buf, size_t len, const struct prec_perfdata_opts *o,
			       struct prec_buf *out, struct prec_diag *d);
/* The same as JSON lines on @out: the "info" view of ptdump(1), JSON OUTPUT. */
int prec_perfdata_describe_json(const char *path, const struct prec_perfdata_opts *o,
				FILE *out, struct prec_diag *d);

/*
 * ptdump --stats, file part, for a session loaded from perf.data: appends
 * the input form and size, the records lost (LOST records) and, per trace
 * stream, its bytes and gaps and the AUX records of the tracer with their
 * flags (truncated, partial, collision, overwrite). Returns 0 or -ENOMEM.
 */
int prec_perfdata_file_stats(const struct prec_session *s, const struct prec_perfdata_report *rep,
			     struct prec_buf *out);

#endif

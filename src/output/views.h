/* SPDX-License-Identifier: MIT */
/*
 * The views that need no decoder: what an input holds (--info), the
 * sideband (--sideband) and the file part of --stats. Each takes what an
 * importer (interop/importer.h) gave and writes text to @out. Each returns
 * 0, -EPIPE/-EIO for a failed write where it says so, or a negative error.
 */
#ifndef PREC_VIEWS_H
#define PREC_VIEWS_H

#include <stdbool.h>
#include <stdio.h>

#include "interop/importer.h"
#include "output/output.h"
#include "session/session.h"

/*
 * --info: for a ptrec file (rep->reader) the header, machine, events and
 * chunk sizes (@verbose: each event's spec too); for perf.data the
 * description of perfdata_info.h (read from o->path); for a snapshot its
 * report. With @json JSON lines (ptdump(1), JSON OUTPUT), for a ptrec file
 * only (-EOPNOTSUPP for others). -EOPNOTSUPP for a raw trace (it has no
 * metadata). @d (may be NULL) says what went wrong reading the input.
 */
int prec_view_info(const struct prec_import_report *rep, const struct prec_import_opts *o,
		   bool verbose, bool json, FILE *out, struct prec_diag *d);

/* --info for a ptrec file, from its open reader. */
int prec_view_ptrec_info(struct prec_tfile_reader *r, const char *path, bool verbose, bool json,
			 FILE *out);
/* --info for a CoreSight snapshot directory, from its load report. */
void prec_view_snapshot_info(const struct prec_snapshot_report *rep, const char *dir, FILE *out);

/*
 * --stats, the file part (before the decode statistics): for a ptrec file
 * bytes per stream, compression, AUX flags and lost records; for perf.data
 * the same as far as the file tells; nothing for other inputs. The ptrec
 * file's streams are those @o's --tid/--pid/--cpu keep (@o may be NULL: all),
 * in the session's order (by first trace time, then thread).
 */
int prec_view_file_stats(const struct prec_session *s, const struct prec_import_report *rep,
			 const struct prec_output_opts *o, FILE *out);

/*
 * --sideband: every sideband record and trigger sample of @s in time order
 * that passes @o's pid/tid/cpu/time filters. -EPIPE/-EIO on a failed write.
 */
int prec_view_sideband(const struct prec_session *s, const struct prec_output_opts *o, FILE *out);
/*
 * Why a snapshot (a PREC_SB_SNAPSHOT) was taken: "on SIGUSR2", "at the
 * end", "by EVENT" (in @buf).
 */
const char *prec_snapshot_why(const struct prec_session *s, const struct prec_sb *sb, char *buf,
			      size_t size);
/* Whether @o's pid/tid/cpu/time filters keep sideband record @sb. */
bool prec_sb_keep(const struct prec_sb *sb, const struct prec_output_opts *o);

/* --sideband --format=json (json.c): one JSON line per record. */
int prec_view_sideband_json(const struct prec_session *s, const struct prec_output_opts *o,
			    FILE *out);
/*
 * --format=json of --call-trace, --call-ret-trace and --branches (json.c):
 * the same events as the text view, one JSON line each.
 */
int prec_view_json_decoded(struct prec_session *s, const struct prec_output_opts *o, FILE *out);

#endif

/* SPDX-License-Identifier: MIT */
/* ptdump's views that need no decoder. Each returns 0 or a negative error. */
#ifndef PTDUMP_CMDS_H
#define PTDUMP_CMDS_H

#include <stdio.h>

#include "output.h"
#include "session.h"
#include "tfile.h"

/* --info: header, machine, events, sizes. */
int ptdump_info(struct prec_tfile_reader *r, const char *path, FILE *out);
/* --sideband: every sideband record and trigger sample in time order. */
int ptdump_sideband(struct prec_session *s, const struct prec_output_opts *o, FILE *out);
/* --stats, file part: bytes per stream, compression, AUX flags, lost records. */
int ptdump_file_stats(struct prec_tfile_reader *r, FILE *out);

struct prec_snapshot_report;
/* --info for a CoreSight snapshot directory. */
void ptdump_snapshot_info(const struct prec_snapshot_report *rep, const char *dir, FILE *out);

#endif

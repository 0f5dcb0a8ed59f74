/* SPDX-License-Identifier: MIT */
/*
 * The one way into a decode session: every input format ptdump reads is an
 * importer with the same two calls, probe (by content) and load (into an
 * empty session), one options struct and one report.
 *
 *	ptrec       a ptrec trace file (session/load.h)
 *	perf.data   perf record's output: file, pipe form, --threads directory
 *	            (perfdata.h)
 *	snapshot    a CoreSight snapshot directory (snapshot.h)
 *	raw PT      a raw Intel PT buffer with its code described by options
 *	            (rawpt.h); never probed, only asked for (--pt)
 *
 *	struct prec_import_opts o;
 *	struct prec_import_report rep;
 *	prec_import_opts_init(&o);
 *	o.path = path;
 *	err = prec_import(s, &o, &rep, &d);
 *	... rep.notes, rep.warnings for the user; the session for the views ...
 *	prec_import_report_fini(&rep);
 */
#ifndef PREC_IMPORTER_H
#define PREC_IMPORTER_H

#include <stdbool.h>

#include "base/common.h"
#include "base/notes.h"
#include "interop/perfdata.h"
#include "interop/rawpt.h"
#include "interop/snapshot.h"
#include "session/load.h"
#include "session/session.h"
#include "tracefile/tfile.h"

enum prec_input_kind {
	PREC_INPUT_AUTO = 0,      /* opts: recognise the input by its content */
	PREC_INPUT_PTREC,
	PREC_INPUT_PERFDATA,
	PREC_INPUT_SNAPSHOT,
	PREC_INPUT_RAWPT,
};

struct prec_import_opts {
	const char *path;                  /* file, directory, or "-" (perf.data on stdin) */
	enum prec_input_kind kind;         /* PREC_INPUT_AUTO: by content */
	/*
	 * Read only what describes the input (for --info): a ptrec file is
	 * opened (rep->reader) but not loaded, perf.data is not read at all
	 * (its description reads the path itself), a snapshot loads as usual.
	 */
	bool header_only;
	/*
	 * A ptrec file's AUX bytes stay in the file (prec_load_report's
	 * aux_by_ref): streams are read in windows as they are decoded.
	 */
	bool aux_by_ref;
	struct prec_perfdata_opts perfdata; /* perf.data: build-id cache, ... */
	struct prec_rawpt_opts rawpt;       /* raw PT: the trace file and its code */
};

struct prec_import_report {
	const struct prec_importer *importer; /* the importer that read the input, or NULL */
	struct prec_notes notes;             /* for the user: things skipped or assumed */
	struct prec_notes warnings;          /* for the user: damage, an input cut short */
	/* What each format reports besides (for --info and --stats): */
	struct prec_tfile_reader *reader;    /* ptrec: the open file (owned) */
	struct prec_load_report file;        /* ptrec */
	struct prec_perfdata_report perfdata;
	struct prec_snapshot_report snapshot;
};

struct prec_importer {
	enum prec_input_kind kind;
	const char *name;                  /* "ptrec", "perf.data", "snapshot", "raw PT" */
	/* True if @path holds this importer's input. NULL: asked for only by kind. */
	bool (*probe)(const char *path);
	/*
	 * Fills the empty session @s from o->path and finalizes it (not with
	 * o->header_only). Returns 0 or a negative error with @d saying what
	 * is wrong (the message does not repeat the path).
	 */
	int (*load)(struct prec_session *s, const struct prec_import_opts *o,
		    struct prec_import_report *rep, struct prec_diag *d);
};

/* Sets @o to: no path, kind AUTO, default perf.data and raw PT options. */
void prec_import_opts_init(struct prec_import_opts *o);

/*
 * The importer of kind @o->kind, or, for PREC_INPUT_AUTO, the first whose
 * probe takes o->path (perf.data, snapshot, then ptrec for any path that is
 * not a directory). NULL, with @d saying why (the whole message, path
 * included), for a directory that is neither a snapshot nor perf.data.
 */
const struct prec_importer *prec_importer_find(const struct prec_import_opts *o,
					       struct prec_diag *d);

/*
 * prec_importer_find() and its load() in one call. @rep is zeroed first and
 * is to be released with prec_import_report_fini() whatever the result.
 * Returns 0 or a negative error with @d filled: for a failed find,
 * -EISDIR; else the importer's error.
 */
int prec_import(struct prec_session *s, const struct prec_import_opts *o,
		struct prec_import_report *rep, struct prec_diag *d);

/* Frees what @rep owns (the reader). Accepts a zeroed report. */
void prec_import_report_fini(struct prec_import_report *rep);

#endif

// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include "interop/importer.h"

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- ptrec trace files ---- */

static bool ptrec_probe(const char *path)
{
	/* The fallback: any file (a missing one gets its message from load). */
	return !is_dir(path);
}

/* The load report's damage, cut-short status and bad sideband as warnings. */
static void ptrec_warnings(const struct prec_load_report *file, struct prec_notes *w)
{
	unsigned i, kept = prec_notes_kept(&file->damage);
	char buf[256];

	for (i = 0; i < kept; i++)
		prec_notes_add(w, "%s", file->damage.text[i]);
	if (file->damage.n > kept)
		prec_notes_add(w, "%u more damaged places", file->damage.n - kept);
	if (file->status.cut_short)
		prec_notes_add(w, "%s", prec_tfile_status_str(&file->status, buf, sizeof(buf)));
	if (file->bad_sideband)
		prec_notes_add(w, "%u sideband chunk%s held malformed records (skipped from there)",
			       file->bad_sideband, file->bad_sideband == 1 ? "" : "s");
}

static int ptrec_load(struct prec_session *s, const struct prec_import_opts *o,
		      struct prec_import_report *rep, struct prec_diag *d)
{
	int err = prec_load_open(o->path, &rep->file, &rep->reader, d);

	if (err) {
		if (err == -ENOENT && !d->msg[0])
			prec_diag_set(d, err, -1, "no such file (record one with 'ptrec record')");
		return err;
	}
	if (o->header_only)
		return 0;
	rep->file.aux_by_ref = o->aux_by_ref;
	err = prec_load_session(s, rep->reader, &rep->file);
	if (err == -ENOENT) {
		/* A chunk that describes the recording (INFO, MACHINE, EVENTS) is missing. */
		struct prec_tfile_status stat, *st = &stat;

		if (prec_tfile_status(rep->reader, st) == 0 && st->cut_short)
			return prec_diag_set(d, -PREC_E_TRUNCATED, -1,
					     "the file was cut short after %" PRIu64 " bytes, before "
					     "the chunks that describe the recording were complete: "
					     "nothing to decode", st->cut_offset);
		return prec_diag_set(d, -PREC_E_FORMAT, -1,
				     "the file lacks a chunk that describes the recording "
				     "(INFO, MACHINE or EVENTS): nothing to decode");
	}
	if (err)
		return prec_diag_set(d, err, -1, "cannot load the trace: %s", prec_strerror(err));
	ptrec_warnings(&rep->file, &rep->warnings);
	return 0;
}

/* ---- perf.data ---- */

/*
 * Standard input holds perf.data when it is a pipe (ptdump copies a ptrec
 * file on a pipe to a file first, see ptdump(1)) or a file that starts so.
 */
static bool stdin_is_perfdata(void)
{
	uint8_t head[16];
	struct stat st;
	ssize_t n;

	if (fstat(0, &st) || !S_ISREG(st.st_mode))
		return true;
	n = pread(0, head, sizeof(head), 0);
	return n > 0 && prec_perfdata_probe(head, (size_t)n) > 0;
}

static bool perfdata_probe(const char *path)
{
	if (!strcmp(path, "-"))
		return stdin_is_perfdata();
	return prec_perfdata_probe_path(path) > 0;
}

static int perfdata_load(struct prec_session *s, const struct prec_import_opts *o,
			 struct prec_import_report *rep, struct prec_diag *d)
{
	int err;

	if (o->header_only)
		return 0;
	err = prec_perfdata_load(s, o->path, &o->perfdata, &rep->perfdata, d);
	if (err)
		return err;
	prec_notes_append(&rep->notes, &rep->perfdata.notes);
	if (rep->perfdata.cut_short)
		prec_notes_add(&rep->warnings, "%s ends early (cut short); decoded what is there",
			       o->path);
	return 0;
}

/* ---- CoreSight snapshots ---- */

static bool snapshot_probe(const char *path)
{
	return is_dir(path) && prec_snapshot_probe(path);
}

static int snapshot_load(struct prec_session *s, const struct prec_import_opts *o,
			 struct prec_import_report *rep, struct prec_diag *d)
{
	int err = prec_snapshot_load(s, o->path, &rep->snapshot, d);

	if (!err)
		prec_notes_append(&rep->notes, &rep->snapshot.notes);
	return err;
}

/* ---- raw Intel PT ---- */

static int rawpt_load(struct prec_session *s, const struct prec_import_opts *o,
		      struct prec_import_report *rep, struct prec_diag *d)
{
	struct prec_rawpt_opts ro = o->rawpt;

	(void)rep;
	if (!ro.pt_path)
		ro.pt_path = o->path;
	return prec_rawpt_load(s, &ro, d);
}

/* In probing order: ptrec last, it takes any file. */
static const struct prec_importer importers[] = {
	{ PREC_INPUT_PERFDATA, "perf.data", perfdata_probe, perfdata_load },
	{ PREC_INPUT_SNAPSHOT, "snapshot", snapshot_probe, snapshot_load },
	{ PREC_INPUT_PTREC, "ptrec", ptrec_probe, ptrec_load },
	{ PREC_INPUT_RAWPT, "raw PT", NULL, rawpt_load },
};

void prec_import_opts_init(struct prec_import_opts *o)
{
	memset(o, 0, sizeof(*o));
	prec_rawpt_opts_init(&o->rawpt);
}

const struct prec_importer *prec_importer_find(const struct prec_import_opts *o,
					       struct prec_diag *d)
{
	size_t i;

	for (i = 0; i < PREC_ARRAY_SIZE(importers); i++) {
		const struct prec_importer *im = &importers[i];

		if (o->kind != PREC_INPUT_AUTO ? im->kind == o->kind : im->probe && im->probe(o->path))
			return im;
	}
	prec_diag_set(d, -EISDIR, -1, "%s is a directory, but neither a CoreSight snapshot "
		      "(no snapshot.ini) nor a perf.data directory", o->path);
	return NULL;
}

int prec_import(struct prec_session *s, const struct prec_import_opts *o,
		struct prec_import_report *rep, struct prec_diag *d)
{
	memset(rep, 0, sizeof(*rep));
	rep->importer = prec_importer_find(o, d);
	if (!rep->importer)
		return -EISDIR;
	return rep->importer->load(s, o, rep, d);
}

void prec_import_report_fini(struct prec_import_report *rep)
{
	prec_tfile_reader_free(rep->reader);
	rep->reader = NULL;
}

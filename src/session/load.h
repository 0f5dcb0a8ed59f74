/* SPDX-License-Identifier: MIT */
/*
 * Loading a ptrec trace file into a decode session: machine parameters,
 * events, sideband, AUX streams, code images and kernel material, with
 * damage in the file reported (never fatal: what is intact is loaded).
 */
#ifndef PREC_LOAD_H
#define PREC_LOAD_H

#include "base/common.h"
#include "base/notes.h"
#include "session/session.h"
#include "tracefile/tfile.h"

struct prec_load_report {
	struct prec_tfile_status status;   /* file structure, cut short or not */
	uint32_t file_flags;               /* PREC_TFILE_F_* */
	struct prec_notes damage;          /* damaged places, one line each */
	unsigned bad_sideband;             /* sideband chunks with malformed records */
	int lost_err;                      /* first error noting lost trace in the session */
	/*
	 * In: set after prec_load_open() to leave the AUX bytes in the file:
	 * the session's streams refer to the file's chunks and are read in
	 * windows as they are decoded (the reader must then outlive the
	 * session's use).
	 */
	bool aux_by_ref;
	struct prec_session *loading;      /* internal: the session prec_load_session fills */
};

/* Opens @path with damage collected into @rep (which must outlive the reader). */
int prec_load_open(const char *path, struct prec_load_report *rep, struct prec_tfile_reader **out,
		   struct prec_diag *d);

/*
 * Fills @s from every chunk of @r and finalizes it. Returns 0 or a negative
 * error (-ENOMEM, I/O errors, -PREC_E_FORMAT when the file has no MACHINE or
 * EVENTS chunk to make sense of the rest).
 */
int prec_load_session(struct prec_session *s, struct prec_tfile_reader *r,
		      struct prec_load_report *rep);

/* Converts the file's MACHINE (+ the tracer's attr config) to the session's machine. */
void prec_load_machine(const struct prec_tfile_machine *fm, const struct prec_tfile_events *evs,
		       struct prec_machine *m);

#endif

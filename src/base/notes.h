/* SPDX-License-Identifier: MIT */
/*
 * Notes for the user that a library call collects on its way (a record
 * skipped, a value assumed, a damaged place passed over), one line each:
 * the one type every importer and exporter reports them in. The first
 * PREC_NOTES_KEPT are kept; all are counted, so a caller can say how many
 * more there were.
 */
#ifndef PREC_NOTES_H
#define PREC_NOTES_H

#include <stdarg.h>
#include <stdbool.h>

#include "base/common.h"

#define PREC_NOTES_KEPT 16
#define PREC_NOTE_LEN 200

struct prec_notes {
	unsigned n;                               /* notes added (all counted) */
	char text[PREC_NOTES_KEPT][PREC_NOTE_LEN]; /* the first ones, NUL-terminated */
};

/* Adds a note (printf format; cut at PREC_NOTE_LEN - 1 bytes). */
void prec_notes_add(struct prec_notes *ns, const char *fmt, ...) prec_printf(2, 3);
void prec_notes_vadd(struct prec_notes *ns, const char *fmt, va_list ap);
/*
 * Adds a note unless one with the same text is kept already (not counted
 * then). Returns true if it was added.
 */
bool prec_notes_add_once(struct prec_notes *ns, const char *fmt, ...) prec_printf(2, 3);

/* How many notes are kept: min(n, PREC_NOTES_KEPT). */
static inline unsigned prec_notes_kept(const struct prec_notes *ns)
{
	return ns->n < PREC_NOTES_KEPT ? ns->n : PREC_NOTES_KEPT;
}

/* Appends every note of @from to @to (in order; @to keeps counting). */
void prec_notes_append(struct prec_notes *to, const struct prec_notes *from);

#endif

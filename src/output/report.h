/* SPDX-License-Identifier: MIT */
/*
 * The views over a profile (profile.h): --report, --windows, --diff,
 * --folded and --perfetto, as text or as JSON lines (ptdump(1), JSON
 * OUTPUT: a first line {"schema":"ptdump/1","view":...}, then one object
 * a line; numbers are numbers, addresses are hex strings).
 *
 * Each returns 0, -EPIPE/-EIO for a failed write, or a negative error.
 */
#ifndef PREC_REPORT_H
#define PREC_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "output/profile.h"

#define PREC_JSON_SCHEMA "ptdump/1"

enum prec_sort {
	PREC_SORT_INSNS = 0,      /* instructions, total */
	PREC_SORT_SELF,           /* instructions, self */
	PREC_SORT_CALLS,
	PREC_SORT_TIME,           /* time, total */
	PREC_SORT_SELF_TIME,
	PREC_SORT_NAME,
};

enum prec_report_mode {
	PREC_REPORT_FLAT = 0,
	PREC_REPORT_CALLER,       /* each function with the functions that called it */
	PREC_REPORT_CALLEE,       /* each function with the functions it called */
};

enum prec_weight {
	PREC_WEIGHT_INSNS = 0,
	PREC_WEIGHT_TIME,
	PREC_WEIGHT_CALLS,
};

struct prec_view_opts {
	bool json;
	enum prec_sort sort;
	enum prec_report_mode mode;
	enum prec_weight weight;
	bool by_thread;
};

/* Parses a --sort KEY / --report=MODE / --weight=W word; -EINVAL if unknown. */
int prec_parse_sort(const char *s, enum prec_sort *out);
int prec_parse_report_mode(const char *s, enum prec_report_mode *out);
int prec_parse_weight(const char *s, enum prec_weight *out);

/* Writes the JSON header line of view @view. */
void prec_json_header(FILE *out, const char *view);
/* Writes @s as a JSON string (quoted, escaped). */
void prec_json_str(FILE *out, const char *s);

int prec_view_report(const struct prec_profile *p, const struct prec_view_opts *o, FILE *out);
int prec_view_windows(const struct prec_profile *p, const struct prec_view_opts *o, FILE *out);
int prec_view_folded(const struct prec_profile *p, const struct prec_view_opts *o, FILE *out);

/*
 * --perfetto: Chrome trace-event JSON (one object, "traceEvents") of @p to
 * @out. @limit is the slice limit the profile was built with (said in the
 * metadata when slices were left out).
 */
int prec_view_perfetto(const struct prec_profile *p, size_t limit, FILE *out);

/*
 * --diff: functions (matched by object file name and symbol) and windows
 * (matched by position) of @old and @new. *@worst is set to the largest
 * growth in per cent of a function's or the total instruction count
 * (0 when nothing grew; a function new in @new counts as 100 %), and
 * @what[@len] to what grew most ("total" or "name (object)").
 */
int prec_view_diff(const struct prec_profile *old, const struct prec_profile *new,
		   const struct prec_view_opts *o, FILE *out, double *worst, char *what,
		   size_t len);

/*
 * --call-trace --durations (durations.c): the call trace of @s with each
 * call's duration and instructions, leaving out lines deeper than
 * o->max_depth (0: none). With o->follow (a round of ptdump --follow) the
 * calls still open at the bound make no line yet; @keep (from
 * prec_durations_new(), with o->rounds; NULL: none) carries them to the
 * next round, and the last round (o->last_round) ends them.
 */
struct prec_durations;
struct prec_durations *prec_durations_new(void);
void prec_durations_free(struct prec_durations *keep);
int prec_view_durations(struct prec_session *s, const struct prec_output_opts *o, FILE *out,
			struct prec_durations *keep);

/* The status of a stdio write to @out: 0, -EPIPE or -EIO. */
int prec_view_status(FILE *out);

#endif

/* SPDX-License-Identifier: MIT */
/* Reporting helpers shared by the ptrec and ptdump mains. */
#ifndef PREC_CLI_H
#define PREC_CLI_H

/* The version ptrec --version and ptdump --version print. */
#ifndef PTREC_VERSION
#define PTREC_VERSION "0.1.0"
#endif

#include <stdbool.h>
#include "base/common.h"

/* Exit codes shared by both programs (documented in the man pages). */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,    /* the operation failed */
	EXIT_USAGE = 2,   /* bad options or arguments */
	EXIT_EMPTY = 3,   /* ptdump: the view is empty for a reason said on stderr */
};

extern const char *cli_prog;   /* "ptrec" or "ptdump" */
extern int cli_verbose;

void cli_err(const char *fmt, ...) prec_printf(1, 2);
void cli_warn(const char *fmt, ...) prec_printf(1, 2);
void cli_note(const char *fmt, ...) prec_printf(1, 2);
void cli_dbg(int level, const char *fmt, ...) prec_printf(2, 3);

/*
 * Prints a diagnostic about @text (an event spec, an option value):
 *   ptrec: error: <msg>
 *     <text>
 *          ^
 *   hint: <hint>
 */
void cli_diag(const char *what, const char *text, const struct prec_diag *d);

/* "ptrec: error: unknown option ...; see 'ptrec record --help'" and EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) prec_printf(2, 3);

/* Parses a size with an optional K/M/G suffix (powers of 1024). */
int cli_parse_size(const char *s, uint64_t *out);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Shared conventions of the ptrec library (libprec).
 *
 * Every library function returns 0 or a non-negative value on success and a
 * negative code on failure: either a negated errno value or one of the project
 * codes below, which sit above the errno range. prec_strerror() names any of
 * them. Library code never prints and never exits; the mains in cmd/ do that.
 */
#ifndef PREC_COMMON_H
#define PREC_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define PREC_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define PREC_MIN(a, b) ((a) < (b) ? (a) : (b))
#define PREC_MAX(a, b) ((a) > (b) ? (a) : (b))
#define PREC_ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

#define prec_unused __attribute__((unused))
#define prec_printf(a, b) __attribute__((format(printf, a, b)))

/* Project error codes; returned negated like errno values. */
enum prec_err {
	PREC_E_BASE = 4096,
	PREC_E_SYNTAX,     /* malformed input text (event spec, option value) */
	PREC_E_FORMAT,     /* malformed file contents */
	PREC_E_CHECKSUM,   /* a chunk's checksum does not match */
	PREC_E_VERSION,    /* file version this build does not read */
	PREC_E_TRUNCATED,  /* input ends inside a record or chunk */
	PREC_E_NOPMU,      /* the named PMU does not exist here */
	PREC_E_NOSYM,      /* a symbol could not be found */
	PREC_E_DECODE,     /* trace decoder error */
	PREC_E_INTERNAL,   /* an impossible state: a bug in ptrec */
	PREC_E_NOMATCH,    /* a filter matched nothing that was decoded */
	PREC_E_MAX
};

/* Returns a static description of @err (negative or positive code). */
const char *prec_strerror(int err);

/*
 * A diagnostic for text input: what went wrong, where (byte offset into the
 * input, or -1 when no position applies) and, optionally, what to do about it.
 */
struct prec_diag {
	int code;         /* negative error code, 0 if none */
	long pos;         /* byte offset of the bad character, -1 if none */
	char msg[256];    /* the problem, one line, no trailing period */
	char hint[512];   /* the fix ("did you mean ...", valid values), may be empty */
};

/* Fills @d and returns @code (which should be negative). */
int prec_diag_set(struct prec_diag *d, int code, long pos, const char *fmt, ...)
	prec_printf(4, 5);
/* Sets (overwrites) the hint of @d. */
void prec_diag_hint(struct prec_diag *d, const char *fmt, ...) prec_printf(2, 3);

#endif

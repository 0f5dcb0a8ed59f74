/* SPDX-License-Identifier: MIT */
/*
 * A small unit-test harness. A suite is a main() that lists its cases:
 *
 *	static const struct t_case cases[] = { T(parse_group), T(attr_bits) };
 *	int main(int argc, char **argv) { return t_main(argc, argv, cases, T_N(cases)); }
 *
 * Each case runs in a forked child, so a crash fails that case only. A case
 * passes unless a check fails. A table-driven case may instead report one
 * result per row with t_row(), and each row counts as a test.
 * Every suite ends with the line "# counts: PASSED FAILED SKIPPED", which
 * tests/run-all.sh sums.
 */
#ifndef T_HARNESS_H
#define T_HARNESS_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct t_case {
	const char *name;
	void (*fn)(void);
};

#define T(fn) { #fn, fn }
#define T_N(a) (sizeof(a) / sizeof((a)[0]))

int t_main(int argc, char **argv, const struct t_case *cases, size_t n);

/* Checks: report the failure and carry on with the case. */
bool t_check(bool ok, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
#define T_OK(c) t_check(!!(c), __FILE__, __LINE__, "%s", #c)
#define T_EQ_INT(a, b) do { long long _a = (a), _b = (b); \
	t_check(_a == _b, __FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, _a, _b); } while (0)
#define T_EQ_U64(a, b) do { uint64_t _a = (a), _b = (b); \
	t_check(_a == _b, __FILE__, __LINE__, "%s == %s: 0x%" PRIx64 " != 0x%" PRIx64, #a, #b, _a, _b); } while (0)
#define T_EQ_STR(a, b) do { const char *_a = (a), *_b = (b); \
	t_check(_a && _b && !strcmp(_a, _b), __FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", \
		#a, #b, _a ? _a : "(null)", _b ? _b : "(null)"); } while (0)
#define T_CONTAINS(hay, needle) do { const char *_h = (hay), *_n = (needle); \
	t_check(_h && _n && strstr(_h, _n), __FILE__, __LINE__, "%s contains \"%s\": got \"%s\"", \
		#hay, _n ? _n : "(null)", _h ? _h : "(null)"); } while (0)

/* Skips the current case (exits the child). */
void t_skip(const char *why) __attribute__((noreturn));

/* Reports one row of a table-driven case as its own result. */
void t_row(const char *name, bool ok);
/* True if any check failed since the last t_row() (then resets the flag). */
bool t_row_failed(void);

/* A scratch directory for the case, removed afterwards ("/tmp/ptrec-test.XXXX"). */
const char *t_tmpdir(void);

/*
 * Builds the fixture system tree (tests/fixtures/mksysroot.sh: intel_pt,
 * cs_etm, tracefs...) in the case's scratch directory and points
 * PTREC_SYSROOT at it; skips the case where PTREC (the built ptrec that
 * prints the intel_pt description) is not set.
 */
void t_fixture_sysroot(void);

#endif

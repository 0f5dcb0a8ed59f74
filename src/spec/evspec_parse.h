/* SPDX-License-Identifier: MIT */
/*
 * The -e parser's internals, shared by evspec_parse.c (the grammar's top:
 * events, groups, the list), evspec_lex.c, evspec_terms.c, evspec_kinds.c and
 * evspec_list.c. Not an interface: spec/evspec.h is the one for users.
 */
#ifndef PREC_EVSPEC_PARSE_H
#define PREC_EVSPEC_PARSE_H

#include "base/array.h"
#include "base/util.h"
#include "spec/evspec.h"
#include "spec/pmu.h"

/* Bounds that keep hostile input from allocating without end. */
#define MAX_SPEC_LEN 65536
#define MAX_EVENTS 4096
#define MAX_TERMS 256

struct term {
	char *name;
	char *value;        /* NULL when the term has no '=' */
	long pos, vpos;
};

struct ev {
	struct prec_event pub;
	struct prec_pmu *pmu;   /* borrowed from the evlist's cache */
	struct prec_mods mods;
	long mods_pos;          /* column of the first modifier letter, -1 if none */
	long action_pos, output_pos, ssize_pos;
	int ugroup;             /* group id while parsing */
	int orig;               /* index in parse order */
};

struct pmu_ent {
	char *key;
	struct prec_pmu *pmu;
};

struct prec_evlist {
	struct prec_evspec_opts opts;
	struct ev **ev;
	size_t nev;
	char **specs;
	size_t nspecs;
	struct pmu_ent *pmus;
	size_t npmus;
	int next_group;
	bool finished;
	const char *diag_text;
	size_t *grp_first, *grp_n;
	size_t ngroups;
};

struct parser {
	struct prec_evlist *el;
	const char *s;
	size_t n, i;
	int arg;
	struct prec_diag *d;
	struct ev **ev;         /* the events of this spec, handed over on success */
	size_t nev;
};

/* ---- evspec_lex.c: characters, names, terms and modifiers as text ---- */

/* "Did you mean": one suggestion, within one edit of a short name, two of a longer. */
void prec_evp_sugg_init(struct prec_near *s, const char *want);
/* Adds the hint "did you mean '<prefix><name>'?" if there is a suggestion. */
bool prec_evp_sugg_hint(struct prec_near *s, struct prec_diag *d, const char *prefix);
void prec_evp_term_free(struct term *t, size_t n);
void prec_evp_ev_free(struct ev *e);
char *prec_evp_xstrndup(const char *s, size_t n);
/* The error at column @pos (of the whole -e text), returned as @code. */
int prec_evp_perr(struct parser *p, int code, long pos, const char *fmt, ...) prec_printf(4, 5);
int prec_evp_nomem(struct parser *p);
char prec_evp_peek(const struct parser *p);
bool prec_evp_name_char(char c);
bool prec_evp_is_glob(char c);
int prec_evp_read_name(struct parser *p, char **out, long *pos);
/* The error for an unexpected character where @what was expected. */
int prec_evp_unexpected(struct parser *p, const char *what);
int prec_evp_parse_num(const char *s, uint64_t *v);
bool prec_evp_is_raw_name(const char *s);
/* "/term,term=value/" at p->i (which is at the '/'). */
int prec_evp_parse_terms(struct parser *p, struct term **terms, size_t *nterms);
/* ":ukhS..." modifiers; @need: a ':' was read, so at least one letter must follow. */
int prec_evp_parse_mods(struct parser *p, struct ev *e, bool need);
int prec_evp_parse_tail_mods(struct parser *p, struct ev *e);

/* ---- evspec_terms.c: terms applied to an event ---- */

int prec_evp_check_intel_pt(struct parser *p, struct ev *e, const struct term *t, size_t nt);
int prec_evp_apply_terms(struct parser *p, struct ev *e, struct term *t, size_t nt);
/* The optional "/terms/" and ":mods" after an event of a fixed kind. */
int prec_evp_parse_event_tail(struct parser *p, struct ev *e);
/* cs_etm with per-CPU rings: perf's timestamp and contextid unless @t sets them. */
void prec_evp_cs_etm_per_cpu_defaults(struct parser *p, struct ev *e, const struct term *t,
				      size_t nt);

/* ---- evspec_kinds.c: each kind of event, resolved as it is read ---- */

int prec_evp_parse_named(struct parser *p, struct ev *e, const char *name, long npos);
int prec_evp_parse_tracepoint(struct parser *p, struct ev *e, char *sys, long spos);
int prec_evp_parse_uprobe(struct parser *p, struct ev *e, bool ret);
int prec_evp_parse_kprobe(struct parser *p, struct ev *e, bool ret);
int prec_evp_parse_breakpoint(struct parser *p, struct ev *e);
/* Checks that need the whole event (modifiers and terms together). */
int prec_evp_check_event(struct parser *p, struct ev *e);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Building and printing struct prec_attr (perf_event_attr): the generic
 * hardware and software events, event modifiers, and a perf -vv style dump.
 */
#ifndef PREC_ATTR_H
#define PREC_ATTR_H

#include "base/common.h"
#include "base/perf_abi.h"
#include "base/util.h"

/* A generic event name perf knows without sysfs ("cycles", "cs", ...). */
struct prec_generic_event {
	const char *name;
	uint32_t type;          /* PERF_TYPE_HARDWARE or PERF_TYPE_SOFTWARE */
	uint64_t config;        /* PERF_COUNT_HW_* or PERF_COUNT_SW_* */
	const char *alias_of;   /* canonical name if this is an alias, else NULL */
};

/* Looks up @name (exact); NULL if it is not a generic event. */
const struct prec_generic_event *prec_generic_event_find(const char *name);
/* The table, for listings and "did you mean"; *@n gets its length. */
const struct prec_generic_event *prec_generic_events(size_t *n);

/*
 * Event modifiers, as perf defines them (the letters after ':' or after the
 * closing '/'):
 *   u k h   count/trace only user, kernel, hypervisor; several combine
 *           (u = exclude_kernel + exclude_hv; uk = exclude_hv)
 *   G H     guest only (exclude_host), host only (exclude_guest)
 *   I       exclude_idle
 *   p pp ppp precise_ip 1..3;  P  precise_ip 3 (the highest level)
 *   D       pinned;  e  exclusive
 *   S       read the group with each sample (sets prec_mods.sample_read; the
 *           recorder adds PERF_SAMPLE_READ)
 *   W       weak group (recorded in prec_mods.weak_group only)
 */
struct prec_mods {
	bool user, kernel, hv;   /* u, k, h given */
	bool guest, host;        /* G, H */
	bool idle;               /* I */
	bool pinned, exclusive;  /* D, e */
	bool sample_read;        /* S */
	bool weak_group;         /* W */
	bool precise_max;        /* P */
	int precise;             /* number of p, 0..3 */
};

/*
 * Parses modifier letters @s[0..@n) into @m (adding to what @m holds).
 * @pos is the column of @s[0] in the spec, used for @d. Returns 0, or
 * -PREC_E_SYNTAX (unknown or repeated letter, more than three p) with @d
 * set.
 */
int prec_mods_parse(const char *s, size_t n, long pos, struct prec_mods *m,
		    struct prec_diag *d);

/* Unites @b into @a (group modifiers into a member's). */
void prec_mods_merge(struct prec_mods *a, const struct prec_mods *b);

/* Sets @a's exclude_*, precise_ip, pinned and exclusive bits from @m. */
void prec_mods_apply(const struct prec_mods *m, struct prec_attr *a);

/* Zeroes @a and sets type, config and size (PREC_ATTR_SIZE). */
void prec_attr_init(struct prec_attr *a, uint32_t type, uint64_t config);

/*
 * Appends every field of @a that is not zero, one per line as
 * "<indent><name> <value>" (perf -vv style; sample_type and read_format
 * as flag names, aux_action bits by name). Returns 0 or -ENOMEM.
 */
int prec_attr_dump(struct prec_buf *b, const struct prec_attr *a, const char *indent);

/*
 * A documented default for recorders that want one: a counter that is not
 * the AUX tracer and has neither sample_period nor freq samples at
 * PREC_DEFAULT_FREQ (freq 1), unless it is a member of a leader-sampling
 * group; adds to sample_type
 * IDENTIFIER|TID|TIME|CPU, plus IP for events that are not the AUX tracer
 * (trigger samples), plus PERIOD for events sampled by frequency (only those:
 * a software event with PERIOD and a fixed period would sample every event);
 * sets sample_id_all. The parser sets only what the spec asks for (READ and
 * read_format for a leader-sampling group). disabled, enable_on_exec and
 * inherit stay with the recorder.
 */
void prec_attr_sample_defaults(struct prec_attr *a, bool aux_tracer);

/* perf record's default sampling frequency, for counters given no period or freq. */
#define PREC_DEFAULT_FREQ 4000

#endif

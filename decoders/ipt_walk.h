/* SPDX-License-Identifier: MIT */
/*
 * The walk: an Intel PT block decoder over libipt's query decoder, with the
 * code read from the session's images and disassembled once per block.
 *
 * It gives what intel_pt.c takes from libipt's block decoder (pt_blk_*),
 * with the same calls, statuses and errors, and the same instructions,
 * branches and events, bound where libipt 2.0's block decoder binds them;
 * only its blocks differ: they end at every branch and event, always,
 * where libipt's also depend on what its block cache holds. See ptdump(1),
 * --core.
 */
#ifndef PREC_DECODERS_IPT_WALK_H
#define PREC_DECODERS_IPT_WALK_H

#include <intel-pt.h>
#include <stdint.h>

struct prec_aspace;
struct prec_walk;

/* What the walk's callers read inline: the first member of struct prec_walk. */
struct prec_walk_pub {
	uint64_t off;              /* the query decoder's offset after its last query */
	int off_err;               /* and pt_qry_get_offset's answer */
};

/* A walk over the trace @cfg gives (its begin and end), as pt_blk_alloc_decoder(). */
struct prec_walk *prec_walk_alloc(const struct pt_config *cfg);
void prec_walk_free(struct prec_walk *w);
/* The walk over the trace @cfg gives from here on, its code cache kept; not synced. */
int prec_walk_retarget(struct prec_walk *w, const struct pt_config *cfg);
/* The address space whose code the walk reads from here on. */
void prec_walk_set_aspace(struct prec_walk *w, struct prec_aspace *as);
int prec_walk_sync_forward(struct prec_walk *w);
int prec_walk_sync_set(struct prec_walk *w, uint64_t off);
/* As pt_blk_get_offset(): read after every block, so inline. */
static inline int prec_walk_get_offset(const struct prec_walk *w, uint64_t *off)
{
	const struct prec_walk_pub *p = (const struct prec_walk_pub *)(const void *)w;

	if (p->off_err >= 0)
		*off = p->off;
	return p->off_err;
}
int prec_walk_get_sync_offset(const struct prec_walk *w, uint64_t *off);
/* As pt_blk_next() and pt_blk_event(). */
int prec_walk_next(struct prec_walk *w, struct pt_block *b);
int prec_walk_event(struct prec_walk *w, struct pt_event *ev);

#endif

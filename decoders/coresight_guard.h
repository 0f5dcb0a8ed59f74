/* SPDX-License-Identifier: MIT */
/*
 * A guard in front of OpenCSD's ETMv4/ETE instruction decoder against
 * packet sequences that crash or stall it (OpenCSD 1.3.x, TrcPktDecodeEtmV4I):
 *
 * - a mispredict (I_MISPREDICT, I_CANCEL_F1_MISPRED, I_CANCEL_F2/F3) makes
 *   mispredictAtom() walk the element stack from the newest element and
 *   erase each address element it passes with an iterator it keeps using;
 *   erasing the oldest element (an address with no atom behind it), or one
 *   behind another kind of element, leaves that iterator dangling and the
 *   next dynamic_cast reads freed memory (SIGSEGV);
 * - committing an exception with no address element behind it reads the
 *   back of an empty stack (processException());
 * - cancelling more P0 elements than the stack holds makes cancelElements()
 *   count the rest off m_unseen_spec_elem, a member the decoder never
 *   initialises: as many steps as the bytes the heap held say (seconds per
 *   packet, a time the input does not pay for), or an error.
 *
 * The guard follows the decoder's element stack from the packets alone
 * (OpenCSD's packet monitor gives each packet just before the decoder
 * gets it) and names a packet that would reach one of those paths, so the
 * caller can keep it from the decoder. Valid trace never does: a trace
 * unit without speculation (TRCIDR8.MAXSPEC 0, every Arm core so far)
 * writes no mispredict, cancel or commit packets, and one with it
 * mispredicts and cancels only atoms it has sent (a cancel of elements sent
 * before the trace info, the one valid way past the stack, is what the
 * decoder cannot count). Where the model cannot follow (a packet kind it
 * does not know, more elements than it holds, a step the decoder reports
 * as an error, a bad packet, a packet it named) it names every mispredict,
 * cancel and commit packet until the decoder's NO_SYNC element says it
 * waits for a sync again: a bad packet alone does not tell, as OpenCSD
 * 1.3.3 decodes on after some.
 */
#ifndef PREC_CORESIGHT_GUARD_H
#define PREC_CORESIGHT_GUARD_H

#include <stdbool.h>
#include <stdint.h>

#include <opencsd/etmv4/trc_pkt_types_etmv4.h>

#define PREC_CS_GUARD_ELEMS 64

struct prec_cs_guard {
	uint8_t state;            /* waiting for A-sync, for trace info, decoding */
	bool lost;                /* the model cannot follow the decoder until it syncs again */
	bool pend_addr;           /* an exception waits for its address */
	int last;                 /* the type of the last packet followed */
	uint32_t max_spec;        /* TRCIDR8.MAXSPEC */
	uint32_t depth;           /* the decoder's speculation depth */
	uint32_t n;               /* elements on the stack, [0] the oldest */
	struct prec_cs_gelem {
		uint8_t kind;
		uint8_t atoms;    /* atoms not yet committed or cancelled */
	} el[PREC_CS_GUARD_ELEMS];
};

/* A decoder that has just been reset (waits for an A-sync) with @max_spec. */
void prec_cs_guard_reset(struct prec_cs_guard *g, uint32_t max_spec);

/*
 * Follows packet @p into the decoder. Returns NULL, or what is wrong with a
 * packet the decoder must not get; the model then names every speculation
 * packet until the decoder says it lost sync (prec_cs_guard_nosync()).
 */
const char *prec_cs_guard_packet(struct prec_cs_guard *g, const ocsd_etmv4_i_pkt *p);
/*
 * The decoder sent a NO_SYNC element: it was reset (a bad packet, an error)
 * and waits for an A-sync, from the packet it is on. The guard follows only
 * what the decoder says here: after a bad packet it cannot know.
 */
void prec_cs_guard_nosync(struct prec_cs_guard *g);

#endif

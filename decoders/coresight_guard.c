// SPDX-License-Identifier: MIT
/*
 * The guard in front of OpenCSD's ETMv4/ETE decoder (coresight_guard.h).
 * Each rule follows TrcPktDecodeEtmV4I (OpenCSD decoder/source/etmv4/
 * trc_pkt_decode_etmv4i.cpp): which element decodePacket() puts on the
 * stack for a packet, how resolveElements() commits (commitElements(),
 * from the oldest), cancels (cancelElements(), from the newest) and
 * mispredicts (mispredictAtom()), and when it waits for a sync again
 * (discardElements(), handleBadPacket()).
 */
#include <stddef.h>
#include <string.h>

#include "decoders/coresight_guard.h"

enum { G_SYNC, G_INFO, G_DECODE };

/* The decoder's element kinds, as far as the dangerous paths tell them apart. */
enum {
	K_ATOM,                   /* P0: atoms */
	K_ADDR,                   /* an address */
	K_CTXT,                   /* a context */
	K_KEEP,                   /* a timestamp, cycle count or event (a cancel keeps them) */
	K_OTHER,                  /* trace on, exception return, marker: not P0 */
	K_EXCEP,                  /* P0: an exception, its address behind it */
	K_P0,                     /* P0: a Q element, an ETE source address */
};

void prec_cs_guard_reset(struct prec_cs_guard *g, uint32_t max_spec)
{
	memset(g, 0, sizeof(*g));
	g->state = G_SYNC;
	g->max_spec = max_spec;
}

static void push(struct prec_cs_guard *g, int kind, unsigned atoms)
{
	if (g->n == PREC_CS_GUARD_ELEMS) {
		g->lost = true;
		return;
	}
	g->el[g->n].kind = (uint8_t)kind;
	g->el[g->n].atoms = (uint8_t)atoms;
	g->n++;
}

static void drop_oldest(struct prec_cs_guard *g, uint32_t k)
{
	memmove(g->el, g->el + k, (g->n - k) * sizeof(g->el[0]));
	g->n -= k;
}

/* Commits @want P0 elements from the oldest; returns how many it did. */
static uint32_t commit(struct prec_cs_guard *g, uint32_t want, const char **why)
{
	uint32_t done = 0, k;

	while (want) {
		if (!g->n) {
			g->lost = true; /* the decoder: "Not enough elements to commit" */
			break;
		}
		switch (g->el[0].kind) {
		case K_ATOM:
			k = g->el[0].atoms < want ? g->el[0].atoms : want;
			g->el[0].atoms -= (uint8_t)k;
			want -= k;
			done += k;
			if (g->el[0].atoms)
				return done;
			drop_oldest(g, 1);
			break;
		case K_EXCEP:
			/* processException(): the exception, a context, then its address */
			k = g->n > 1 && g->el[1].kind == K_CTXT ? 2 : 1;
			if (k >= g->n) {
				*why = "an exception packet without its address";
				return done;
			}
			if (g->el[k].kind != K_ADDR)
				g->lost = true; /* the decoder: "Address missing in exception packet" */
			drop_oldest(g, k);
			want--;
			done++;
			break;
		case K_P0:
			drop_oldest(g, 1);
			want--;
			done++;
			break;
		default:
			drop_oldest(g, 1);
			break;
		}
	}
	return done;
}

/*
 * Cancels @want P0 elements from the newest; returns how many it did. The
 * timestamps, cycle counts and events it passes stay, the newest again.
 */
static uint32_t cancel(struct prec_cs_guard *g, uint32_t want)
{
	uint32_t done = 0, kept = 0, k;

	while (want) {
		if (!g->n) {
			g->lost = true; /* unseen elements, or "Not enough elements to cancel" */
			break;
		}
		switch (g->el[g->n - 1].kind) {
		case K_ATOM:
			k = g->el[g->n - 1].atoms < want ? g->el[g->n - 1].atoms : want;
			g->el[g->n - 1].atoms -= (uint8_t)k;
			want -= k;
			done += k;
			if (!g->el[g->n - 1].atoms)
				g->n--;
			break;
		case K_EXCEP:
		case K_P0:
			g->n--;
			want--;
			done++;
			break;
		case K_KEEP:
			kept++;
			g->n--;
			break;
		default:
			g->n--;
			break;
		}
	}
	while (kept-- && g->n < PREC_CS_GUARD_ELEMS)
		g->el[g->n++] = (struct prec_cs_gelem){ K_KEEP, 0 };
	return done;
}

/* mispredictAtom(): the newest atom, erasing the addresses on the way. */
static void mispredict(struct prec_cs_guard *g, const char **why)
{
	uint32_t i, others = 0;

	for (i = g->n; i > 0; i--) {
		if (g->el[i - 1].kind == K_ATOM)
			return;
		if (g->el[i - 1].kind != K_ADDR) {
			others++;
			continue;
		}
		if (others || i == 1)
			break;
		g->n--; /* erased: it was the newest */
	}
	*why = "a mispredict packet with no atom to correct";
}

/* The elements packet @p puts on the stack (decodePacket()). False: a kind not followed. */
static bool elements(struct prec_cs_guard *g, const ocsd_etmv4_i_pkt *p, bool *is_addr)
{
	switch ((int)p->type) {
	case ETM4_PKT_I_ASYNC: case ETM4_PKT_I_IGNORE: case ETM4_PKT_I_TRACE_INFO:
	case ETM4_PKT_I_FUNC_RET: case ETM4_PKT_I_COMMIT: case ETM4_PKT_I_CANCEL_F1:
	case ETM4_PKT_I_OVERFLOW: case ETM4_PKT_I_DISCARD:
		return true;
	case ETM4_PKT_I_TRACE_ON: case ETM4_PKT_I_EXCEPT_RTN: case ETE_PKT_I_TS_MARKER:
		push(g, K_OTHER, 0);
		return true;
	case ETM4_PKT_I_ATOM_F1: case ETM4_PKT_I_ATOM_F2: case ETM4_PKT_I_ATOM_F3:
	case ETM4_PKT_I_ATOM_F4: case ETM4_PKT_I_ATOM_F5: case ETM4_PKT_I_ATOM_F6:
	case ETM4_PKT_I_MISPREDICT: case ETM4_PKT_I_CANCEL_F1_MISPRED:
	case ETM4_PKT_I_CANCEL_F2: case ETM4_PKT_I_CANCEL_F3:
		if (p->atom.num) {
			push(g, K_ATOM, p->atom.num);
			g->depth += p->atom.num;
		}
		return true;
	case ETM4_PKT_I_CTXT:
		push(g, K_CTXT, 0);
		return true;
	case ETM4_PKT_I_ADDR_CTXT_L_32IS0: case ETM4_PKT_I_ADDR_CTXT_L_32IS1:
	case ETM4_PKT_I_ADDR_CTXT_L_64IS0: case ETM4_PKT_I_ADDR_CTXT_L_64IS1:
		push(g, K_CTXT, 0);
		/* fall through */
	case ETM4_PKT_I_ADDR_MATCH: case ETM4_PKT_I_ADDR_S_IS0: case ETM4_PKT_I_ADDR_S_IS1:
	case ETM4_PKT_I_ADDR_L_32IS0: case ETM4_PKT_I_ADDR_L_32IS1:
	case ETM4_PKT_I_ADDR_L_64IS0: case ETM4_PKT_I_ADDR_L_64IS1:
		push(g, K_ADDR, 0);
		*is_addr = true;
		return true;
	case ETM4_PKT_I_EXCEPT:
		push(g, K_EXCEP, 0);
		g->pend_addr = true;
		return true;
	case ETM4_PKT_I_EVENT: case ETM4_PKT_I_CCNT_F1: case ETM4_PKT_I_CCNT_F2:
	case ETM4_PKT_I_CCNT_F3: case ETM4_PKT_I_TIMESTAMP:
		push(g, K_KEEP, 0);
		return true;
	case ETM4_PKT_I_Q:
		push(g, K_P0, 0);
		if (p->Q_pkt.addr_present)
			g->depth++;
		else
			g->pend_addr = true;
		return true;
	case ETE_PKT_I_SRC_ADDR_MATCH: case ETE_PKT_I_SRC_ADDR_S_IS0: case ETE_PKT_I_SRC_ADDR_S_IS1:
	case ETE_PKT_I_SRC_ADDR_L_32IS0: case ETE_PKT_I_SRC_ADDR_L_32IS1:
	case ETE_PKT_I_SRC_ADDR_L_64IS0: case ETE_PKT_I_SRC_ADDR_L_64IS1:
		push(g, K_P0, 0);
		g->depth++;
		return true;
	default:
		return false;
	}
}

/* A packet in the decoder's DECODE_PKTS state. */
static const char *decode(struct prec_cs_guard *g, const ocsd_etmv4_i_pkt *p)
{
	int t = (int)p->type;
	bool is_addr = false, mispred, canc;
	uint32_t want_commit = 0, n;
	const char *why = NULL;

	if (t == ETM4_PKT_I_BAD_SEQUENCE || t == ETM4_PKT_I_BAD_TRACEMODE ||
	    t == ETM4_PKT_I_RESERVED || t == ETM4_PKT_I_RESERVED_CFG) {
		/*
		 * handleBadPacket() may reset the decoder to wait for a sync,
		 * but OpenCSD 1.3.3 goes on decoding after some of these (a
		 * fuzz input: a reserved header, then an exception committed
		 * from the old stack). Which one it did shows only in its
		 * NO_SYNC element (prec_cs_guard_nosync()); until then the
		 * stack is unknown.
		 */
		g->lost = true;
		return NULL;
	}
	mispred = t == ETM4_PKT_I_MISPREDICT || t == ETM4_PKT_I_CANCEL_F1_MISPRED ||
		  t == ETM4_PKT_I_CANCEL_F2 || t == ETM4_PKT_I_CANCEL_F3;
	canc = mispred || t == ETM4_PKT_I_CANCEL_F1;
	if (g->lost && (canc || t == ETM4_PKT_I_COMMIT))
		return "a speculation packet the decoder cannot follow";
	if (!elements(g, p, &is_addr))
		g->lost = true;
	if (is_addr && g->pend_addr) {
		g->depth++;
		g->pend_addr = false;
	}
	if (t == ETM4_PKT_I_COMMIT)
		want_commit = p->commit_elements;
	if (g->depth > g->max_spec)
		want_commit = g->depth - g->max_spec;
	if (want_commit) {
		n = commit(g, want_commit, &why);
		g->depth -= n < g->depth ? n : g->depth;
	}
	if (!why && canc && p->cancel_elements) {
		n = cancel(g, p->cancel_elements);
		g->depth -= n < g->depth ? n : g->depth;
		if (n < p->cancel_elements)
			why = "a cancel packet of more elements than the decoder holds";
	}
	if (!why && mispred)
		mispredict(g, &why);
	if (!why && (t == ETM4_PKT_I_OVERFLOW || t == ETM4_PKT_I_DISCARD))
		g->state = G_SYNC;
	return why;
}

void prec_cs_guard_nosync(struct prec_cs_guard *g)
{
	bool async = g->last == ETM4_PKT_I_ASYNC;

	prec_cs_guard_reset(g, g->max_spec);
	/* processPacket(): NO_SYNC goes on to WAIT_SYNC with the same packet */
	g->state = async ? G_INFO : G_SYNC;
}

const char *prec_cs_guard_packet(struct prec_cs_guard *g, const ocsd_etmv4_i_pkt *p)
{
	const char *why;

	g->last = (int)p->type;
	switch (g->state) {
	case G_SYNC:
		if (p->type == ETM4_PKT_I_ASYNC)
			g->state = G_INFO;
		return NULL;
	case G_INFO:
		if (p->type == ETM4_PKT_I_TRACE_INFO) {
			prec_cs_guard_reset(g, g->max_spec);
			g->state = G_DECODE;
			g->depth = p->curr_spec_depth;
		}
		return NULL;
	}
	why = decode(g, p);
	if (why) {
		/*
		 * The packet reaches the decoder as a bad sequence. Whether it
		 * then waits for a sync is its NO_SYNC element's to say: until
		 * then every speculation packet is named. The decoder has seen
		 * a bad sequence, not this packet: a NO_SYNC after a named
		 * A-sync leaves it waiting for another A-sync (a fuzz input
		 * crashed OpenCSD when the guard took that one as the sync and
		 * missed the next trace info's speculation depth).
		 */
		g->lost = true;
		g->last = ETM4_PKT_I_BAD_SEQUENCE;
	}
	return why;
}

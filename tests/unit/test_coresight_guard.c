// SPDX-License-Identifier: MIT
/*
 * The guard in front of OpenCSD's ETMv4 decoder (decoders/coresight_guard.h)
 * on packet sequences written here: the ones that crash OpenCSD 1.3 are
 * named at the right packet (tests/cli/coresight.sh and the fuzz regression
 * inputs show the same sequences crash the library without the guard), and
 * valid trace, with or without speculation, never is.
 */
#include <stdio.h>
#include <string.h>

#include "decoders/coresight_guard.h"
#include "harness.h"

/* One packet: its type and the one count it carries (atoms, cancel, commit). */
struct gp {
	int type;
	unsigned n;
};

#define END { -1, 0 }

/*
 * Feeds @ps to a guard of a unit with @max_spec; the indices of the packets
 * it names go to @idx (at most @max), what is wrong with the first to *@why.
 * Returns how many it named.
 */
static int named_nosync(const struct gp *ps, uint32_t max_spec, int nosync_at, int *idx, int max,
			const char **why)
{
	struct prec_cs_guard g;
	int i, k = 0;

	*why = NULL;
	prec_cs_guard_reset(&g, max_spec);
	for (i = 0; ps[i].type >= 0; i++) {
		ocsd_etmv4_i_pkt p;
		const char *w;

		memset(&p, 0, sizeof(p));
		p.type = (ocsd_etmv4_i_pkt_type)ps[i].type;
		p.atom.num = (uint8_t)ps[i].n;
		p.atom.En_bits = 1;
		p.cancel_elements = ps[i].n;
		p.commit_elements = ps[i].n;
		p.curr_spec_depth = ps[i].n;
		w = prec_cs_guard_packet(&g, &p);
		if (w && k < max) {
			if (!k)
				*why = w;
			idx[k++] = i;
		}
		if (i == nosync_at) /* the decoder's NO_SYNC element, sent on packet i */
			prec_cs_guard_nosync(&g);
	}
	return k;
}

static int named(const struct gp *ps, uint32_t max_spec, int *idx, int max, const char **why)
{
	return named_nosync(ps, max_spec, -1, idx, max, why);
}

#define SYNC { ETM4_PKT_I_ASYNC, 0 }, { ETM4_PKT_I_TRACE_INFO, 0 }, { ETM4_PKT_I_TRACE_ON, 0 }
#define ADDR { ETM4_PKT_I_ADDR_L_64IS0, 0 }
#define ATOM(k) { ETM4_PKT_I_ATOM_F1, k }

static void cases(void)
{
	static const struct {
		const char *name;
		uint32_t max_spec;
		struct gp ps[16];
		int named;        /* -1: none */
		const char *why;
	} rows[] = {
		{ "plain trace: addresses, atoms, context, timestamps", 0,
		  { SYNC, { ETM4_PKT_I_ADDR_CTXT_L_64IS0, 0 }, ATOM(1), ATOM(3), ADDR,
		    { ETM4_PKT_I_TIMESTAMP, 0 }, ATOM(2), { ETM4_PKT_I_EXCEPT, 0 }, ADDR,
		    ATOM(1), END }, -1, NULL },
		{ "mispredict after an address, atom committed (the fuzz crash)", 0,
		  { SYNC, ADDR, ATOM(1), ADDR, { ETM4_PKT_I_MISPREDICT, 0 }, END }, 6,
		  "mispredict" },
		{ "mispredict with nothing on the stack: not named before sync", 0,
		  { { ETM4_PKT_I_MISPREDICT, 0 }, { ETM4_PKT_I_ASYNC, 0 }, END }, -1, NULL },
		{ "exception committed without its address", 0,
		  { SYNC, ADDR, { ETM4_PKT_I_EXCEPT, 0 }, { ETM4_PKT_I_COMMIT, 1 }, END }, 5,
		  "exception" },
		{ "speculation: mispredict of an atom behind an address", 4,
		  { SYNC, ADDR, ATOM(1), ADDR, { ETM4_PKT_I_MISPREDICT, 0 }, ATOM(1), END }, -1,
		  NULL },
		{ "speculation: cancel past a timestamp, then mispredict", 4,
		  { SYNC, ADDR, ATOM(2), { ETM4_PKT_I_TIMESTAMP, 0 }, { ETM4_PKT_I_CANCEL_F1, 1 },
		    { ETM4_PKT_I_MISPREDICT, 0 }, { ETM4_PKT_I_COMMIT, 1 }, END }, -1, NULL },
		{ "speculation: address behind a timestamp erased in the middle", 4,
		  { SYNC, ADDR, ATOM(1), ADDR, { ETM4_PKT_I_TIMESTAMP, 0 },
		    { ETM4_PKT_I_MISPREDICT, 0 }, END }, 7, "mispredict" },
		{ "speculation: the atoms committed by a commit packet, then a mispredict", 2,
		  { SYNC, ADDR, ATOM(2), { ETM4_PKT_I_COMMIT, 2 }, ADDR, { ETM4_PKT_I_MISPREDICT, 0 },
		    END }, 7, "mispredict" },
		{ "speculation: atoms beyond the depth committed, one left to mispredict", 2,
		  { SYNC, ADDR, ATOM(3), ADDR, { ETM4_PKT_I_MISPREDICT, 0 }, END }, -1, NULL },
		{ "discard: nothing named until the next sync", 0,
		  { SYNC, ADDR, ATOM(1), ADDR, { ETM4_PKT_I_DISCARD, 0 },
		    { ETM4_PKT_I_MISPREDICT, 0 }, END }, -1, NULL },
		{ "cancel of more elements than sent (OpenCSD counts an uninitialised member)", 0,
		  { SYNC, ADDR, { ETM4_PKT_I_CANCEL_F1, 1 }, END }, 4, "cancel packet of more" },
		{ "speculation: cancel past the atoms it sent", 4,
		  { SYNC, ADDR, ATOM(2), { ETM4_PKT_I_TIMESTAMP, 0 }, { ETM4_PKT_I_CANCEL_F1, 3 },
		    END }, 6, "cancel packet of more" },
		{ "speculation: cancel of every atom sent", 4,
		  { SYNC, ADDR, ATOM(2), ATOM(1), { ETM4_PKT_I_CANCEL_F1, 3 }, ATOM(1), END }, -1,
		    NULL },
				{ "an unknown packet: every speculation packet after it", 4,
		  { SYNC, ADDR, ATOM(1), { ETE_PKT_I_TRANS_ST, 0 }, { ETM4_PKT_I_MISPREDICT, 0 },
		    END }, 6, "cannot follow" },
	};
	size_t i;

	for (i = 0; i < T_N(rows); i++) {
		const char *why;
		int first = -1;

		named(rows[i].ps, rows[i].max_spec, &first, 1, &why);
		T_EQ_INT(first, rows[i].named);
		if (rows[i].why)
			T_CONTAINS(why, rows[i].why);
		t_row(rows[i].name, !t_row_failed());
	}
}

/*
 * After naming a packet (or after a bad one) the guard names every
 * speculation packet until the decoder's NO_SYNC element says it waits for
 * a sync; then it follows the next A-sync and trace info. OpenCSD 1.3.3
 * does not always wait after a bad packet (a fuzz input: a reserved header,
 * then an exception committed from the old stack), so the packets alone
 * never put the guard back to waiting.
 */
static void resync(void)
{
	static const struct gp ps[] = {
		SYNC, ADDR, ATOM(1), ADDR, { ETM4_PKT_I_MISPREDICT, 0 },
		ADDR, { ETM4_PKT_I_MISPREDICT, 0 },
		SYNC, ADDR, ATOM(1), ADDR, { ETM4_PKT_I_MISPREDICT, 0 }, END,
	};
	static const struct gp bad[] = {
		SYNC, ADDR, { ETM4_PKT_I_EXCEPT, 0 }, { ETM4_PKT_I_RESERVED, 0 },
		{ ETM4_PKT_I_TRACE_INFO, 0 }, { ETM4_PKT_I_TRACE_ON, 0 }, ADDR,
		{ ETM4_PKT_I_EXCEPT, 0 }, { ETM4_PKT_I_COMMIT, 1 }, END,
	};
	/*
	 * A trace info with 125 elements in speculation and MAXSPEC 0: the
	 * exception must commit at once, without its address, so it is named,
	 * and so is the A-sync whose auto-commit would reach it. The decoder
	 * saw no A-sync then: after its NO_SYNC it skips the trace info that
	 * follows and syncs at the next A-sync, whose trace info sets the
	 * depth again (the fuzz input crashed OpenCSD there).
	 */
	static const struct gp async_named[] = {
		{ ETM4_PKT_I_ASYNC, 0 }, { ETM4_PKT_I_TRACE_INFO, 125 }, { ETM4_PKT_I_EXCEPT, 0 },
		{ ETM4_PKT_I_ASYNC, 0 }, { ETM4_PKT_I_TRACE_INFO, 0 },
		{ ETM4_PKT_I_ASYNC, 0 }, { ETM4_PKT_I_TRACE_INFO, 122 }, { ETM4_PKT_I_EXCEPT, 0 }, END,
	};
	const char *why;
	int idx[4];

	T_EQ_INT(named_nosync(async_named, 0, 3, idx, 4, &why), 3);
	T_EQ_INT(idx[0], 2);
	T_EQ_INT(idx[1], 3);
	T_EQ_INT(idx[2], 7);
	T_CONTAINS(why, "without its address");
	/* no NO_SYNC: the decoder went on, so every speculation packet is named */
	T_EQ_INT(named(ps, 0, idx, 4, &why), 3);
	T_EQ_INT(idx[0], 6);
	T_EQ_INT(idx[1], 8);
	T_EQ_INT(idx[2], 15);
	/* NO_SYNC on packet 7: the mispredict at 8 reaches a waiting decoder */
	T_EQ_INT(named_nosync(ps, 0, 7, idx, 4, &why), 2);
	T_EQ_INT(idx[0], 6);
	T_EQ_INT(idx[1], 15);
	/* NO_SYNC on the A-sync itself (packet 9): its trace info starts decoding */
	T_EQ_INT(named_nosync(ps, 0, 9, idx, 4, &why), 3);
	T_EQ_INT(idx[1], 8);
	T_EQ_INT(idx[2], 15);
	/* a reserved header, the decoder on without an A-sync (the fuzz input): the commit is named */
	T_EQ_INT(named(bad, 0, idx, 4, &why), 1);
	T_EQ_INT(idx[0], 10);
	T_CONTAINS(why, "cannot follow");
}

int main(int argc, char **argv)
{
	static const struct t_case all[] = { T(cases), T(resync) };

	return t_main(argc, argv, all, T_N(all));
}

// SPDX-License-Identifier: MIT
/* ETMv4 instruction-trace packet encoder: see etm_enc.h. */
#include <string.h>

#include "etm_enc.h"

void etm_enc_init(struct etm_enc *e, uint8_t *buf, size_t cap)
{
	memset(e, 0, sizeof(*e));
	e->buf = buf;
	e->cap = cap;
}

static void put(struct etm_enc *e, uint8_t b)
{
	/* The caller drains before the buffer gets this full; never overrun. */
	if (e->len < e->cap)
		e->buf[e->len++] = b;
	if (e->published)
		*e->published = e->len;
}

static void hist_push(struct etm_enc *e, uint64_t addr)
{
	e->hist[2] = e->hist[1];
	e->hist[1] = e->hist[0];
	e->hist[0] = addr;
}

/*
 * Atom formats (header byte, atoms oldest first):
 *  F1 1111011x: 1 atom, bit 0
 *  F2 110110xx: 2 atoms, bits 1:0
 *  F3 11111xxx: 3 atoms, bits 2:0
 *  F6 11A0xxxx (low five bits n <= 20): n+3 E atoms, then E (A=0) or N (A=1)
 * F4 and F5 only hold fixed patterns that F6 and F3 cover as well or better
 * for the runs of E a program makes, so they are not used.
 */
static void emit_atoms(struct etm_enc *e, unsigned n)
{
	while (n && e->natoms) {
		unsigned run = 0, k = n < e->natoms ? n : e->natoms;
		uint64_t a = e->atoms;

		while (run < k && (a >> run & 1))
			run++;
		if (run >= 3 && run < k) {
			/* E^run then N */
			unsigned m = run > 23 ? 23 : run;
			int last_n = run <= 23;

			put(e, (uint8_t)(0xc0 | (last_n ? 0x20 : 0) | (m - 3)));
			m += 1;
			e->atoms >>= m;
			e->natoms -= m;
			n -= m;
		} else if (run >= 4) {
			/* all E: E^(m-1) then E */
			unsigned m = run > 24 ? 24 : run;

			put(e, (uint8_t)(0xc0 | (m - 4)));
			e->atoms >>= m;
			e->natoms -= m;
			n -= m;
		} else if (k >= 3) {
			put(e, (uint8_t)(0xf8 | (a & 7)));
			e->atoms >>= 3;
			e->natoms -= 3;
			n -= 3;
		} else if (k == 2) {
			put(e, (uint8_t)(0xd8 | (a & 3)));
			e->atoms >>= 2;
			e->natoms -= 2;
			n -= 2;
		} else {
			put(e, (uint8_t)(0xf6 | (a & 1)));
			e->atoms >>= 1;
			e->natoms -= 1;
			n -= 1;
		}
	}
}

void etm_enc_flush_atoms(struct etm_enc *e)
{
	emit_atoms(e, e->natoms);
}

void etm_enc_atom(struct etm_enc *e, int taken)
{
	if (taken)
		e->atoms |= 1ull << e->natoms;
	e->natoms++;
	/* Keep a run of E atoms together as long as an F6 packet can hold it. */
	if (e->natoms >= ETM_MAX_PENDING_ATOMS)
		emit_atoms(e, 24);
}

void etm_enc_sync(struct etm_enc *e)
{
	int i;

	etm_enc_flush_atoms(e);
	for (i = 0; i < 11; i++)
		put(e, 0x00);
	put(e, 0x80);
	/* Trace Info: PLCTL says only the INFO section follows; INFO 0 (no
	 * cycle counting, no conditional trace, no load/store P0). */
	put(e, 0x01);
	put(e, 0x01);
	put(e, 0x00);
	memset(e->hist, 0, sizeof(e->hist));
	e->ts_valid = 0;
}

void etm_enc_trace_on(struct etm_enc *e)
{
	etm_enc_flush_atoms(e);
	put(e, 0x04);
}

void etm_enc_timestamp(struct etm_enc *e, uint64_t ts)
{
	unsigned n = 1, need = 1, i;

	etm_enc_flush_atoms(e);
	while (need < 9 && (ts >> (7 * need)))
		need++;
	if (e->ts_valid) {
		while (n < 9 && (ts >> (7 * n)) != (e->last_ts >> (7 * n)))
			n++;
		/* The decoder takes 7 bytes or more as the whole value. */
		if (n >= 7 && n < need)
			n = need;
	} else {
		n = need;
	}
	put(e, 0x02);
	for (i = 0; i < n; i++) {
		uint8_t b = (uint8_t)(ts >> (7 * i) & 0x7f);

		if (i == 8)
			b = (uint8_t)(ts >> 56);
		else if (i + 1 < n)
			b |= 0x80;
		put(e, b);
	}
	e->last_ts = ts;
	e->ts_valid = 1;
}

static void put_addr64(struct etm_enc *e, uint64_t addr)
{
	int i;

	put(e, (uint8_t)(addr >> 2 & 0x7f));
	put(e, (uint8_t)(addr >> 9 & 0x7f));
	for (i = 2; i < 8; i++)
		put(e, (uint8_t)(addr >> (8 * i)));
}

void etm_enc_addr_ctxt(struct etm_enc *e, uint64_t addr)
{
	etm_enc_flush_atoms(e);
	put(e, 0x85);
	put_addr64(e, addr);
	/* EL0, SF (AArch64), NS; C when a context ID follows */
	put(e, (uint8_t)(0x30 | (e->cid ? 0x80 : 0)));
	if (e->cid) {
		put(e, (uint8_t)e->contextid);
		put(e, (uint8_t)(e->contextid >> 8));
		put(e, (uint8_t)(e->contextid >> 16));
		put(e, (uint8_t)(e->contextid >> 24));
	}
	hist_push(e, addr);
}

void etm_enc_addr(struct etm_enc *e, uint64_t addr)
{
	uint64_t d = addr ^ e->hist[0];
	int i;

	etm_enc_flush_atoms(e);
	for (i = 0; i < 3; i++) {
		if (e->hist[i] == addr) {
			/* Exact match: the matched address is pushed like any other. */
			put(e, (uint8_t)(0x90 | i));
			hist_push(e, addr);
			return;
		}
	}
	if (!(d >> 9)) {
		put(e, 0x95);
		put(e, (uint8_t)(addr >> 2 & 0x7f));
	} else if (!(d >> 17)) {
		put(e, 0x95);
		put(e, (uint8_t)(0x80 | (addr >> 2 & 0x7f)));
		put(e, (uint8_t)(addr >> 9));
	} else if (!(d >> 32)) {
		put(e, 0x9a);
		put(e, (uint8_t)(addr >> 2 & 0x7f));
		put(e, (uint8_t)(addr >> 9 & 0x7f));
		put(e, (uint8_t)(addr >> 16));
		put(e, (uint8_t)(addr >> 24));
	} else {
		put(e, 0x9d);
		put_addr64(e, addr);
	}
	hist_push(e, addr);
}

void etm_enc_exception(struct etm_enc *e, enum etm_exc type, uint64_t ret_addr)
{
	etm_enc_flush_atoms(e);
	put(e, 0x06);
	/* E1:E0 = 0b01: the preferred return address follows */
	put(e, (uint8_t)(((unsigned)type & 0x1f) << 1 | 1));
	etm_enc_addr(e, ret_addr);
}

// SPDX-License-Identifier: MIT
/* Intel PT packets for the software tracers: see pt_enc.h. */
#include <string.h>

#include "pt_enc.h"

int emu_pt_init(struct emu_pt *p, uint8_t *buf, size_t cap)
{
	struct pt_config c;

	pt_config_init(&c);
	c.begin = buf;
	c.end = buf + cap;
	p->enc = pt_alloc_encoder(&c);
	return p->enc ? 0 : -1;
}

void emu_pt_fini(struct emu_pt *p)
{
	pt_free_encoder(p->enc);
	p->enc = NULL;
}

void emu_pt_reset(struct emu_pt *p)
{
	p->psb_done = 0;
	p->psb_at = 0;
	p->last_ip = 0;
	p->tnt = 0;
	p->ntnt = 0;
	if (p->ops && p->ops->held)
		p->ops->held(p, 0, 0);
	emu_pt_rs_reset(p);
	if (p->enc)
		pt_enc_sync_set(p->enc, 0);
}

size_t emu_pt_buffered(struct emu_pt *p)
{
	uint64_t off = 0;

	pt_enc_get_offset(p->enc, &off);
	return (size_t)off;
}

void emu_pt_drained(struct emu_pt *p)
{
	pt_enc_sync_set(p->enc, 0);
}

static void put(struct emu_pt *p, const struct pt_packet *pk)
{
	if (emu_pt_buffered(p) > p->ops->flush_at)
		p->ops->flush(p);
	int n = pt_enc_next(p->enc, pk);

	if (n < 0)
		p->ops->failed(p);
	else if (p->ops->wrote)
		p->ops->wrote(p, (size_t)n);
}

static void held(struct emu_pt *p)
{
	if (p->ops->held)
		p->ops->held(p, p->tnt, p->ntnt);
}

static void put_cyc(struct emu_pt *p)
{
	struct pt_packet pk = { .type = ppt_cyc };
	uint64_t d;

	if (!p->cfg->cyc)
		return;
	d = *p->cycles - p->last_cyc;
	if (!d || (p->cfg->cyc_thresh && d < (1ull << (p->cfg->cyc_thresh - 1))))
		return;
	pk.payload.cyc.value = d;
	put(p, &pk);
	p->last_cyc = *p->cycles;
}

void emu_pt_tnt_flush(struct emu_pt *p)
{
	struct pt_packet pk;

	if (!p->ntnt)
		return;
	put_cyc(p);
	memset(&pk, 0, sizeof(pk));
	pk.type = p->ntnt <= 6 ? ppt_tnt_8 : ppt_tnt_64;
	pk.payload.tnt.bit_size = (uint8_t)p->ntnt;
	pk.payload.tnt.payload = p->tnt;
	put(p, &pk);
	p->tnt = 0;
	p->ntnt = 0;
	held(p);
}

/* The first branch is the most significant payload bit. */
void emu_pt_tnt_bit(struct emu_pt *p, int taken)
{
	p->tnt = (p->tnt << 1) | (taken ? 1 : 0);
	if (++p->ntnt == 6)
		emu_pt_tnt_flush(p);
	else
		held(p);
}

void emu_pt_ip(struct emu_pt *p, enum pt_packet_type type, uint64_t ip, int suppress)
{
	struct pt_packet pk;
	uint64_t l = p->last_ip;
	uint64_t sx = (uint64_t)(((int64_t)(ip << 16)) >> 16);

	emu_pt_tnt_flush(p);
	put_cyc(p);
	memset(&pk, 0, sizeof(pk));
	pk.type = type;
	if (suppress) {
		pk.payload.ip.ipc = pt_ipc_suppressed;
	} else {
		if ((ip >> 16) == (l >> 16))
			pk.payload.ip.ipc = pt_ipc_update_16;
		else if ((ip >> 32) == (l >> 32))
			pk.payload.ip.ipc = pt_ipc_update_32;
		else if (sx == ip)
			pk.payload.ip.ipc = pt_ipc_sext_48;
		else if ((ip >> 48) == (l >> 48))
			pk.payload.ip.ipc = pt_ipc_update_48;
		else
			pk.payload.ip.ipc = pt_ipc_full;
		pk.payload.ip.ip = ip;
		p->last_ip = ip;
	}
	put(p, &pk);
}

void emu_pt_simple(struct emu_pt *p, enum pt_packet_type type)
{
	struct pt_packet pk;

	memset(&pk, 0, sizeof(pk));
	pk.type = type;
	put(p, &pk);
}

void emu_pt_mode_exec(struct emu_pt *p)
{
	struct pt_packet pk;

	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_mode;
	pk.payload.mode.leaf = pt_mol_exec;
	pk.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	put(p, &pk);
}

void emu_pt_pip(struct emu_pt *p, uint64_t cr3)
{
	struct pt_packet pk;

	/* The branches before the MOV to CR3 come first: a decoder binds PIP to it. */
	emu_pt_tnt_flush(p);
	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_pip;
	pk.payload.pip.cr3 = cr3;
	put(p, &pk);
}

void emu_pt_timing(struct emu_pt *p)
{
	struct pt_packet pk;
	uint64_t tsc = p->ops->now(p);

	if (p->cfg->tsc) {
		memset(&pk, 0, sizeof(pk));
		pk.type = ppt_tsc;
		pk.payload.tsc.tsc = tsc & ((1ull << 56) - 1);
		put(p, &pk);
		if (p->cfg->mtc) {
			memset(&pk, 0, sizeof(pk));
			pk.type = ppt_tma;
			pk.payload.tma.ctc = (uint16_t)(tsc / EMU_PT_TSC_PER_CTC);
			pk.payload.tma.fc = (uint16_t)(tsc % EMU_PT_TSC_PER_CTC);
			put(p, &pk);
		}
	}
	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_cbr;
	pk.payload.cbr.ratio = EMU_PT_CLK_RATIO;
	put(p, &pk);
	p->last_mtc = (tsc / EMU_PT_TSC_PER_CTC) >> p->cfg->mtc_period;
	p->last_cyc = *p->cycles;
}

void emu_pt_rs_reset(struct emu_pt *p)
{
	p->rs_n = 0;
	p->rs_top = 0;
}

void emu_pt_psb_plus(struct emu_pt *p, int with_fup, uint64_t ip)
{
	emu_pt_tnt_flush(p);
	emu_pt_simple(p, ppt_psb);
	p->psb_at = p->ops->base(p) + emu_pt_buffered(p) - 16;
	p->psb_done = 1;
	p->last_ip = 0;
	emu_pt_rs_reset(p);
	emu_pt_timing(p);
	if (p->pip)
		emu_pt_pip(p, p->cr3);
	if (with_fup) {
		emu_pt_mode_exec(p);
		emu_pt_ip(p, ppt_fup, ip, 0);
	}
	emu_pt_simple(p, ppt_psbend);
}

void emu_pt_rs_push(struct emu_pt *p, uint64_t ret)
{
	p->rs[p->rs_top] = ret;
	p->rs_top = (p->rs_top + 1) % EMU_PT_RS_DEPTH;
	if (p->rs_n < EMU_PT_RS_DEPTH)
		p->rs_n++;
}

void emu_pt_ret(struct emu_pt *p, uint64_t next)
{
	unsigned top = (p->rs_top + EMU_PT_RS_DEPTH - 1) % EMU_PT_RS_DEPTH;

	if (!p->cfg->noretcomp && p->rs_n && p->rs[top] == next) {
		p->rs_top = top;
		p->rs_n--;
		emu_pt_tnt_bit(p, 1);
	} else {
		emu_pt_ip(p, ppt_tip, next, 0);
	}
}

void emu_pt_retired(struct emu_pt *p)
{
	uint64_t tsc, m;

	if (!p->cfg->mtc)
		return;
	tsc = p->ops->now(p);
	m = (tsc / EMU_PT_TSC_PER_CTC) >> p->cfg->mtc_period;
	if (m != p->last_mtc) {
		struct pt_packet pk;
		uint64_t tick = (m << p->cfg->mtc_period) * EMU_PT_TSC_PER_CTC;

		/*
		 * The MTC stands for the moment the crystal clock ticked,
		 * somewhere among the instructions just retired: cycles up
		 * to that moment go before it, the rest after it.
		 */
		if (tsc - tick <= *p->cycles - p->last_cyc) {
			const uint64_t *own = p->cycles;
			uint64_t upto = *own - (tsc - tick);

			p->cycles = &upto;
			put_cyc(p);
			p->cycles = own;
		}
		memset(&pk, 0, sizeof(pk));
		pk.type = ppt_mtc;
		pk.payload.mtc.ctc = (uint8_t)m;
		put(p, &pk);
		p->last_mtc = m;
	}
}

void emu_pt_periodic(struct emu_pt *p, uint64_t ip, int pkt_en)
{
	if (p->ops->base(p) + emu_pt_buffered(p) - p->psb_at >= (2048ull << p->cfg->psb_period))
		emu_pt_psb_plus(p, pkt_en, ip);
}

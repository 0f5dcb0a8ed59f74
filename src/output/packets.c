// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#ifndef PREC_NO_LIBIPT
#include <intel-pt.h>
#endif

#include "output/output.h"
#include "output/packets.h"

#ifndef PREC_NO_LIBIPT

static const char *ipc_name(enum pt_ip_compression ipc)
{
	switch (ipc) {
	case pt_ipc_suppressed: return "suppressed";
	case pt_ipc_update_16: return "upd16";
	case pt_ipc_update_32: return "upd32";
	case pt_ipc_update_48: return "upd48";
	case pt_ipc_sext_48: return "sext48";
	case pt_ipc_full: return "full";
	}
	return "?";
}

static void print_packet(FILE *out, uint64_t off, const struct pt_packet *p)
{
	unsigned i;

	fprintf(out, "%016" PRIx64 "  ", off);
	switch (p->type) {
	case ppt_pad: fputs("pad", out); break;
	case ppt_psb: fputs("psb", out); break;
	case ppt_psbend: fputs("psbend", out); break;
	case ppt_fup: case ppt_tip: case ppt_tip_pge: case ppt_tip_pgd:
		fprintf(out, "%-8s %-10s", p->type == ppt_fup ? "fup" : p->type == ppt_tip ? "tip" :
			p->type == ppt_tip_pge ? "tip.pge" : "tip.pgd", ipc_name(p->payload.ip.ipc));
		if (p->payload.ip.ipc != pt_ipc_suppressed)
			fprintf(out, " %016" PRIx64, p->payload.ip.ip);
		break;
	case ppt_tnt_8: case ppt_tnt_64:
		fprintf(out, "%-8s ", p->type == ppt_tnt_8 ? "tnt.8" : "tnt.64");
		/* The oldest branch is the highest payload bit. */
		for (i = p->payload.tnt.bit_size; i-- > 0;)
			fputc(p->payload.tnt.payload & (1ull << i) ? '!' : '.', out);
		break;
	case ppt_mode:
		if (p->payload.mode.leaf == pt_mol_exec)
			fprintf(out, "mode.exec cs.l %u cs.d %u", p->payload.mode.bits.exec.csl,
				p->payload.mode.bits.exec.csd);
		else
			fprintf(out, "mode.tsx intx %u abrt %u", p->payload.mode.bits.tsx.intx,
				p->payload.mode.bits.tsx.abrt);
		break;
	case ppt_pip: fprintf(out, "pip      cr3 %016" PRIx64 "%s", p->payload.pip.cr3,
			      p->payload.pip.nr ? " nr" : ""); break;
	case ppt_vmcs: fprintf(out, "vmcs     %016" PRIx64, p->payload.vmcs.base); break;
	case ppt_cbr: fprintf(out, "cbr      %u", p->payload.cbr.ratio); break;
	case ppt_tsc: fprintf(out, "tsc      %" PRIx64, p->payload.tsc.tsc); break;
	case ppt_tma: fprintf(out, "tma      ctc %x fc %x", p->payload.tma.ctc, p->payload.tma.fc); break;
	case ppt_mtc: fprintf(out, "mtc      %x", p->payload.mtc.ctc); break;
	case ppt_cyc: fprintf(out, "cyc      %" PRIx64, p->payload.cyc.value); break;
	case ppt_stop: fputs("stop", out); break;
	case ppt_ovf: fputs("ovf", out); break;
	case ppt_mnt: fprintf(out, "mnt      %" PRIx64, p->payload.mnt.payload); break;
	case ppt_exstop: fprintf(out, "exstop%s", p->payload.exstop.ip ? " ip" : ""); break;
	case ppt_mwait: fprintf(out, "mwait    hints %x ext %x", p->payload.mwait.hints,
				p->payload.mwait.ext); break;
	case ppt_pwre: fprintf(out, "pwre     c%u.%u%s", p->payload.pwre.state,
			       p->payload.pwre.sub_state, p->payload.pwre.hw ? " hw" : ""); break;
	case ppt_pwrx: fprintf(out, "pwrx     last c%u deepest c%u", p->payload.pwrx.last,
			       p->payload.pwrx.deepest); break;
	case ppt_ptw: fprintf(out, "ptw      %" PRIx64 "%s", p->payload.ptw.payload,
			      p->payload.ptw.ip ? " ip" : ""); break;
	default: fprintf(out, "unknown (%u bytes)", p->size); break;
	}
	fputc('\n', out);
}

/*
 * Lists the packets of data [@lo, @hi) of @st (one piece between gaps: a
 * packet never continues across a gap).
 */
static int dump_piece(const struct prec_machine *m, const struct prec_stream *st, size_t lo,
		      size_t hi, FILE *out)
{
	struct pt_packet_decoder *d;
	struct pt_config cfg;
	struct pt_packet p;
	uint64_t off = 0;
	int err;

	if (hi <= lo)
		return 0;
	pt_config_init(&cfg);
	cfg.begin = st->data + lo;
	cfg.end = st->data + hi;
	cfg.cpu.vendor = !strcmp(m->vendor, "GenuineIntel") ? pcv_intel : pcv_unknown;
	cfg.cpu.family = m->family;
	cfg.cpu.model = m->model;
	cfg.cpu.stepping = m->stepping;
	pt_cpu_errata(&cfg.errata, &cfg.cpu);
	d = pt_pkt_alloc_decoder(&cfg);
	if (!d)
		return -ENOMEM;
	err = pt_pkt_sync_forward(d);
	while (err >= 0 || err == -pte_bad_opc || err == -pte_bad_packet) {
		if (err < 0) {
			fprintf(out, "%016" PRIx64 "  error: %s; resync at the next psb\n",
				prec_stream_offset(st, lo + off), pt_errstr(pt_errcode(err)));
			err = pt_pkt_sync_forward(d);
			continue;
		}
		pt_pkt_get_offset(d, &off);
		err = pt_pkt_next(d, &p, sizeof(p));
		if (err < 0)
			continue;
		print_packet(out, prec_stream_offset(st, lo + off), &p);
		if (ferror(out))
			break;
	}
	pt_pkt_free_decoder(d);
	if (ferror(out))
		return errno == EPIPE ? -EPIPE : -EIO;
	return 0;
}

/* The pieces of @st in order, each gap between them as one line. */
static int dump_stream(const struct prec_machine *m, const struct prec_stream *st, FILE *out)
{
	size_t i, lo = 0;
	int err;

	for (i = 0; i <= st->nr_gaps; i++) {
		size_t hi = i < st->nr_gaps ? (size_t)st->gaps[i].pos : st->len;
		struct prec_tev gap = { .type = PREC_TEV_GAP };
		char text[160];

		err = dump_piece(m, st, lo, hi, out);
		if (err || i == st->nr_gaps)
			return err;
		gap.u.gap.lost = st->gaps[i].lost;
		fprintf(out, "%016" PRIx64 "  %s\n", prec_stream_offset(st, hi) - st->gaps[i].lost,
			prec_gap_text(text, sizeof(text), &gap, false));
		lo = hi;
	}
	return 0;
}

#endif

int prec_pt_last_tsc(const void *data, size_t len, uint64_t *tsc)
{
#ifdef PREC_NO_LIBIPT
	(void)data;
	(void)len;
	(void)tsc;
	return -ENOSYS;
#else
	struct pt_packet_decoder *d;
	struct pt_config cfg;
	struct pt_packet p;
	bool found = false;
	int err;

	*tsc = 0;
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)data;
	cfg.end = (uint8_t *)data + len;
	d = pt_pkt_alloc_decoder(&cfg);
	if (!d)
		return -ENOMEM;
	err = pt_pkt_sync_forward(d);
	while (err >= 0 || err == -pte_bad_opc || err == -pte_bad_packet) {
		if (err < 0) {
			err = pt_pkt_sync_forward(d);
			continue;
		}
		err = pt_pkt_next(d, &p, sizeof(p));
		if (err >= 0 && p.type == ppt_tsc) {
			*tsc = p.payload.tsc.tsc;
			found = true;
		}
	}
	pt_pkt_free_decoder(d);
	return found ? 0 : -ENOENT;
#endif
}

int prec_pt_dump_packets(struct prec_session *s, const struct prec_output_opts *o, FILE *out)
{
#ifdef PREC_NO_LIBIPT
	/* Built without libipt (the Makefile's NO_LIBIPT): no packet decoder. */
	return strcmp(prec_session_machine(s)->vendor, "ARM") ? -ENOSYS : -EOPNOTSUPP;
#else
	const struct prec_machine *m = prec_session_machine(s);
	size_t i, n = prec_session_nr_streams(s);
	int err;

	if (!strcmp(m->vendor, "ARM"))
		return -EOPNOTSUPP;
	for (i = 0; i < n; i++) {
		const struct prec_stream *st = prec_session_stream(s, i);

		if (o->cpu >= 0 && st->cpu != o->cpu)
			continue;
		if (o->tid >= 0 && st->tid != o->tid)
			continue;
		if (st->cpu >= 0)
			fprintf(out, "# stream cpu %d: %zu bytes\n", st->cpu, st->len);
		else
			fprintf(out, "# stream tid %d: %zu bytes\n", st->tid, st->len);
		err = dump_stream(m, st, out);
		if (err)
			return err;
	}
	return 0;
#endif
}

// SPDX-License-Identifier: MIT
/* Instruction ranges in trc_pkt_lister's layout: see output.h. */
#include <errno.h>
#include <stdio.h>

#include "decoders/coresight.h"
#include "output/output.h"
#include "session/cs_meta.h"
#include "session/session.h"

int prec_cs_print_ranges(struct prec_session *s, const struct prec_output_opts *o, FILE *out)
{
	const struct prec_cs_meta *m = prec_cs_session_meta(s);
	struct prec_decoder_opts dopts = { .no_blocks = false };
	struct prec_decoder *dec = NULL;
	struct prec_tev ev;
	size_t i, n = prec_session_nr_streams(s);
	int err = 0;

	for (i = 0; i < n; i++) {
		const struct prec_stream *st = prec_session_stream(s, i);

		if (o && o->cpu >= 0 && st->cpu >= 0 && st->cpu != o->cpu)
			continue;
		if (o && o->tid >= 0 && st->tid >= 0 && st->tid != o->tid)
			continue;
		err = prec_decoder_open(&prec_coresight_decoder, s, st, &dopts, &dec);
		if (err)
			return err;
		while ((err = prec_decoder_next(dec, &ev)) > 0) {
			const struct prec_cs_source *src = prec_cs_meta_cpu(m, ev.cpu);
			unsigned id = src ? src->trace_id : 0;
			unsigned long long off = (unsigned long long)ev.offset;

			switch (ev.type) {
			case PREC_TEV_BLOCK:
				fprintf(out, "Idx:%llu; ID:%x; exec range=0x%llx:[0x%llx] num_i(%u)\n",
					off, id, (unsigned long long)ev.u.block.ip,
					(unsigned long long)ev.u.block.end_ip + 4,
					ev.u.block.ninsn);
				break;
			case PREC_TEV_ERROR:
				fprintf(out, "Idx:%llu; ID:%x; ERROR: %s\n", off, id, ev.u.err.msg);
				break;
			case PREC_TEV_GAP:
				fprintf(out, "Idx:%llu; GAP: %llu bytes lost\n", off,
					(unsigned long long)ev.u.gap.lost);
				break;
			default:
				break;
			}
		}
		prec_decoder_free(dec);
		dec = NULL;
		if (err < 0)
			return err;
		if (ferror(out))
			break;
	}
	if (fflush(out) || ferror(out))
		return errno == EPIPE ? -EPIPE : -EIO;
	return 0;
}

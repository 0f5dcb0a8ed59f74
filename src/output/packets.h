/* SPDX-License-Identifier: MIT */
/*
 * ptdump --packets: every Intel PT packet of every stream with its stream
 * offset and payload, decoded with libipt's packet decoder, for debugging a
 * trace. A malformed packet is reported with its offset and the listing goes
 * on at the next PSB.
 */
#ifndef PREC_PACKETS_H
#define PREC_PACKETS_H

#include <stdio.h>

#include "output/output.h"
#include "session/session.h"

/*
 * Lists the packets of the streams of @s that pass @o's cpu/tid filters.
 * Returns 0, -EOPNOTSUPP for a trace that is not Intel PT, -EPIPE/-EIO when
 * writing fails, or -ENOMEM.
 */
int prec_pt_dump_packets(struct prec_session *s, const struct prec_output_opts *o, FILE *out);

/*
 * The last TSC packet's value in @len bytes of Intel PT at @data (listed from
 * the first PSB on, past malformed packets). Returns 0 and *@tsc, -ENOENT
 * when there is none, -ENOMEM, or -ENOSYS without libipt.
 */
int prec_pt_last_tsc(const void *data, size_t len, uint64_t *tsc);

#endif

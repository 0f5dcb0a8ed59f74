// SPDX-License-Identifier: MIT
/*
 * The Intel PT decoder of a build without libipt (make NO_LIBIPT=1, as the
 * arm64 cross build is: Debian has no arm64 libipt). It keeps the decoder
 * table whole and refuses every stream with -ENOSYS, so ptdump says why
 * instead of failing to link. The Makefile builds this file instead of
 * intel_pt.c in such builds only.
 */
#include <errno.h>

#include "decoders/decoder.h"
#include "decoders/shard.h"

static int none_open(struct prec_session *s, const struct prec_stream *stream,
		     const struct prec_decoder_opts *opts, void **priv)
{
	*priv = NULL;
	return -ENOSYS;
}

static int none_next(void *priv, struct prec_tev *ev)
{
	return 0;
}

static void none_close(void *priv)
{
}

const struct prec_decoder_ops prec_intel_pt_decoder = {
	.name = "intel_pt",
	.open = none_open,
	.next = none_next,
	.close = none_close,
};

/* --shard decodes Intel PT parts: there are none to decode without libipt. */
int prec_ipt_shard(struct prec_session *s, const struct prec_decoder_opts *opts,
		   const struct prec_shard_plan *plan, uint32_t k, struct prec_shard_out *o)
{
	return -ENOSYS;
}

/* No Intel PT stream is decoded in parts without libipt. */
void prec_ipt_par_counts(uint64_t *taken, uint64_t *redone)
{
	*taken = *redone = 0;
}

// SPDX-License-Identifier: MIT
/* Which decoder reads a session's trace: see decoder.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoders/coresight.h"
#include "decoders/decoder.h"
#include "session/cs_meta.h"

/*
 * Intel PT of a raw trace decoded without --cpu: libipt knows no errata to
 * work around, and a trace of a CPU with errata fails to match its code. The
 * decoder's own events, with such errors saying so.
 */
struct nocpu {
	struct prec_decoder *inner;
};

static int nocpu_open(struct prec_session *s, const struct prec_stream *stream,
		      const struct prec_decoder_opts *opts, void **priv)
{
	struct nocpu *n = calloc(1, sizeof(*n));
	int err;

	if (!n)
		return -ENOMEM;
	err = prec_decoder_open(&prec_intel_pt_decoder, s, stream, opts, &n->inner);
	if (err) {
		free(n);
		return err;
	}
	*priv = n;
	return 0;
}

static int nocpu_next(void *priv, struct prec_tev *ev)
{
	struct nocpu *n = priv;
	int ret = prec_decoder_next(n->inner, ev);
	size_t len;

	if (ret == 1 && ev->type == PREC_TEV_ERROR && ev->u.err.code == PREC_DE_CONTEXT) {
		len = strnlen(ev->u.err.msg, sizeof(ev->u.err.msg) - 1);
		snprintf(ev->u.err.msg + len, sizeof(ev->u.err.msg) - len,
			 "; no CPU given: add --cpu FAMILY/MODEL[/STEPPING]");
	}
	return ret;
}

static void nocpu_close(void *priv)
{
	struct nocpu *n = priv;

	if (n)
		prec_decoder_free(n->inner);
	free(n);
}

static const struct prec_decoder_ops nocpu_decoder = {
	.name = "intel_pt",
	.open = nocpu_open,
	.next = nocpu_next,
	.close = nocpu_close,
};

const struct prec_decoder_ops *prec_decoder_for_session(const struct prec_session *s)
{
	const struct prec_machine *m = s ? prec_session_machine(s) : NULL;

	if (s && (prec_cs_session_meta(s) || !strcmp(m->vendor, "ARM")))
		return &prec_coresight_decoder;
	if (m && m->cpu_by_option && !m->vendor[0])
		return &nocpu_decoder;
	return &prec_intel_pt_decoder;
}

// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <stdint.h>

#include "decoders/evqueue.h"

int prec_evq_init(struct prec_evq *q, size_t cap)
{
	size_t c = 8;

	while (c < cap)
		c *= 2;
	q->ev = malloc(c * sizeof(*q->ev));
	if (!q->ev)
		return -ENOMEM;
	q->cap = c;
	q->head = q->tail = 0;
	q->err = 0;
	return 0;
}

void prec_evq_fini(struct prec_evq *q)
{
	free(q->ev);
	q->ev = NULL;
	q->cap = q->head = q->tail = 0;
}

static int grow(struct prec_evq *q)
{
	size_t n = prec_evq_len(q), nc = q->cap * 2, i;
	struct prec_tev *nv;

	if (nc < q->cap || nc > SIZE_MAX / sizeof(*nv))
		return -ENOMEM;
	nv = malloc(nc * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		nv[i] = q->ev[(q->head + i) & (q->cap - 1)];
	free(q->ev);
	q->ev = nv;
	q->head = 0;
	q->tail = n;
	q->cap = nc;
	return 0;
}

struct prec_tev *prec_evq_push(struct prec_evq *q)
{
	if (prec_evq_len(q) == q->cap && grow(q)) {
		q->err = -ENOMEM;
		return &q->sink;
	}
	return &q->ev[q->tail++ & (q->cap - 1)];
}

int prec_evq_next(struct prec_evq *q, struct prec_tev *ev, int (*refill)(void *ctx), void *ctx)
{
	const struct prec_tev *p;
	int r = prec_evq_next_ref(q, &p, refill, ctx);

	if (r > 0)
		*ev = *p;
	return r;
}

int prec_evq_next_ref(struct prec_evq *q, const struct prec_tev **ev, int (*refill)(void *ctx),
		      void *ctx)
{
	while (q->head == q->tail) {
		int r;

		if (q->err)
			return q->err;
		r = refill(ctx);
		if (q->err)
			return q->err;
		if (r <= 0 && q->head == q->tail)
			return r;
	}
	*ev = &q->ev[q->head++ & (q->cap - 1)];
	return 1;
}

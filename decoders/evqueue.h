/* SPDX-License-Identifier: MIT */
/*
 * The event queue both decoders put their events in: a ring of struct
 * prec_tev that grows (doubling) when full, so a producer never has to stop
 * for lack of room (OpenCSD's element callback cannot, and a libipt step may
 * yield several events). The decoder's next() drains it with
 * prec_evq_next(), refilling through the decoder's own step function.
 */
#ifndef PREC_EVQUEUE_H
#define PREC_EVQUEUE_H

#include <stddef.h>

#include "decoders/decoder.h"

struct prec_evq {
	struct prec_tev *ev;
	size_t cap, head, tail;   /* ring of cap (a power of 2) events, head..tail queued */
	int err;                  /* -ENOMEM once a push could not grow the ring */
	struct prec_tev sink;     /* where a push goes when the ring cannot grow */
};

/* Sets up an empty queue with room for @cap events (rounded up to a power of 2). Returns 0 or -ENOMEM. */
int prec_evq_init(struct prec_evq *q, size_t cap);
/* Frees the ring (accepts a zeroed or already freed queue). */
void prec_evq_fini(struct prec_evq *q);

static inline size_t prec_evq_len(const struct prec_evq *q)
{
	return q->tail - q->head;
}

/*
 * Appends an event and returns it, uninitialised: the caller fills it (all of
 * the fields it means to pass on). Never NULL: when the ring cannot grow, the
 * event goes to a scratch slot that is never delivered and q->err becomes
 * -ENOMEM.
 */
struct prec_tev *prec_evq_push(struct prec_evq *q);

/*
 * The decoder interface's next(): copies the oldest event to @ev and returns
 * 1. While the queue is empty it calls @refill(@ctx), which returns 1 (call
 * again), 0 (the stream is done) or a negative error; 0 or an error with the
 * queue still empty is returned as is. q->err is returned as soon as it is set.
 */
int prec_evq_next(struct prec_evq *q, struct prec_tev *ev, int (*refill)(void *ctx), void *ctx);
/* The same without the copy: *@ev points into the ring, valid until the next call. */
int prec_evq_next_ref(struct prec_evq *q, const struct prec_tev **ev, int (*refill)(void *ctx),
		      void *ctx);

#endif

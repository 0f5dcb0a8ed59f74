// SPDX-License-Identifier: MIT
/* Reading perf records: see perf_records.h. */
#include <errno.h>

#include "base/common.h"
#include "base/perf_records.h"
#include "base/util.h"

int prec_perf_next_record(const void *buf, size_t len, size_t *pos,
			  const struct perf_event_header **h)
{
	const struct perf_event_header *x;
	size_t left;

	if (!pos || !h || (len && !buf) || *pos > len)
		return -EINVAL;
	left = len - *pos;
	if (!left)
		return 0;
	if (left < sizeof(*x))
		return -PREC_E_FORMAT;
	x = (const struct perf_event_header *)((const uint8_t *)buf + *pos);
	if (x->size < sizeof(*x) || x->size % 8 || x->size > left)
		return -PREC_E_FORMAT;
	*h = x;
	*pos += x->size;
	return 1;
}

int prec_perf_sample_id(const struct perf_event_header *h, struct prec_sample_id *sid)
{
	const uint8_t *t;

	if (!h || !sid)
		return -EINVAL;
	if (h->type == PERF_RECORD_SAMPLE)
		return -EINVAL;
	if (h->size < sizeof(*h) + 32)
		return -PREC_E_FORMAT;
	/* Trailer order: TID (pid, tid), TIME, CPU (cpu, res), IDENTIFIER last. */
	t = (const uint8_t *)h + h->size - 32;
	sid->pid = prec_rd32(t);
	sid->tid = prec_rd32(t + 4);
	sid->time = prec_rd64(t + 8);
	sid->cpu = prec_rd32(t + 16);
	sid->id = prec_rd64(t + 24);
	return 0;
}

int prec_perf_parse_sample(const struct perf_event_header *h, struct prec_trigger_sample *s)
{
	const uint8_t *p;

	if (!h || !s || h->type != PERF_RECORD_SAMPLE)
		return -EINVAL;
	if (h->size < sizeof(*h) + 48)
		return -PREC_E_FORMAT;
	/* Sample order: IDENTIFIER, IP, TID, TIME, CPU, PERIOD. */
	p = (const uint8_t *)h + sizeof(*h);
	s->id = prec_rd64(p);
	s->ip = prec_rd64(p + 8);
	s->pid = prec_rd32(p + 16);
	s->tid = prec_rd32(p + 20);
	s->time = prec_rd64(p + 24);
	s->cpu = prec_rd32(p + 32);
	s->period = prec_rd64(p + 40);
	return 0;
}

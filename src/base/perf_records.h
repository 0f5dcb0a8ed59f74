/* SPDX-License-Identifier: MIT */
/*
 * Reading perf records as the kernel lays them out in a data ring and as
 * ptrec stores them in SIDEBAND chunks: stepping through a buffer, the
 * sample_id trailer of ptrec's tracking event, and trigger samples.
 */
#ifndef PREC_PERF_RECORDS_H
#define PREC_PERF_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "base/perf_abi.h"

/*
 * Steps through a buffer of records (a SIDEBAND chunk payload): sets *@h to
 * the record at *@pos and advances *@pos. Returns 1, 0 at the end, or
 * -PREC_E_FORMAT if the record's size is < 8, not a multiple of 8, or runs
 * past @len.
 */
int prec_perf_next_record(const void *buf, size_t len, size_t *pos,
			  const struct perf_event_header **h);

/* The sample_type ptrec gives its tracking event (sample_id_all trailers). */
#define PREC_SAMPLE_ID_TYPE \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)
/* The sample_type of trigger events' samples. */
#define PREC_TRIGGER_SAMPLE_TYPE                                                                 \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |         \
	 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)

struct prec_sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
	uint64_t id;
};

/*
 * The sample_id trailer (PREC_SAMPLE_ID_TYPE layout: pid, tid, time, cpu,
 * res, id = the last 32 bytes) of a non-SAMPLE record. Returns 0,
 * -EINVAL for a PERF_RECORD_SAMPLE, -PREC_E_FORMAT if the record is too
 * short to hold one.
 */
int prec_perf_sample_id(const struct perf_event_header *h, struct prec_sample_id *sid);

struct prec_trigger_sample {
	uint64_t id, ip;
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
	uint64_t period;
};

/*
 * Parses a PERF_RECORD_SAMPLE written with PREC_TRIGGER_SAMPLE_TYPE.
 * Returns 0, -EINVAL if it is not a sample, -PREC_E_FORMAT if too short.
 */
int prec_perf_parse_sample(const struct perf_event_header *h, struct prec_trigger_sample *s);

#endif

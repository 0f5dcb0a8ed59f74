/* SPDX-License-Identifier: MIT */
/*
 * Sideband for what existed before a recording started: threads attached to
 * with -p/-t or caught by a CPU-wide recording have long exec'd and mapped
 * their code, so the kernel never reports it. Read from /proc instead and
 * written as the kernel's own records (COMM, FORK, MMAP2 with build ids),
 * as perf's synthesize functions do (tools/perf/util/synthetic-events.c:
 * __event__synthesize_thread(), perf_event__synthesize_mmap_events()).
 *
 * Records carry the sample_id trailer of PREC_SAMPLE_ID_TYPE with time 0
 * (before anything the kernel writes), the tracking event's @id and cpu 0.
 */
#ifndef PREC_SYNTH_H
#define PREC_SYNTH_H

#include <stdint.h>
#include <sys/types.h>

#include "base/perf_abi.h"

/* Receives one record; a negative return stops the synthesis. */
typedef int (*prec_synth_fn)(void *ctx, const struct perf_event_header *h);

/*
 * The process @pid: COMM and FORK of each of its threads (all of them when
 * @tids is NULL, else only those listed), MMAP2 of its executable mappings.
 * A process that is gone is skipped (returns 0).
 */
int prec_synth_process(pid_t pid, const pid_t *tids, size_t ntids, uint64_t id,
		       prec_synth_fn fn, void *ctx);

/* Every process in /proc, as prec_synth_process() with all threads. */
int prec_synth_all(uint64_t id, prec_synth_fn fn, void *ctx);

/*
 * MMAP2 of the executable mappings listed in @maps (the text of a
 * /proc/PID/maps of process @pid, read elsewhere: a guest's), at @time.
 */
int prec_synth_maps(pid_t pid, const char *maps, uint64_t time, uint64_t id, prec_synth_fn fn,
		    void *ctx);

/* The process a thread belongs to (Tgid in /proc/TID/status), or -ESRCH. */
pid_t prec_synth_tgid(pid_t tid);

#endif

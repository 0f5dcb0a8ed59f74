/* SPDX-License-Identifier: MIT */
/*
 * A pool of worker threads shared by the decoders of one process (ptdump -j):
 * tasks run in the order they were submitted, each once, on any worker.
 *
 *	struct prec_jobs *j = prec_jobs_get(4);   // NULL: no pool, decode alone
 *	prec_jobs_submit(j, &task);               // task.run(task.arg) on a worker
 *	prec_jobs_wait(j, &task);                 // until it has run
 *	prec_jobs_put(j);
 *
 * prec_jobs_get() returns the one pool (made by the first call, with @n
 * threads; NULL for @n < 1) and counts a reference; prec_jobs_put() drops it, and the last
 * one joins the threads. A task is the caller's and must stay valid until
 * prec_jobs_wait() has returned for it (or it was never submitted).
 */
#ifndef PREC_JOBS_H
#define PREC_JOBS_H

#include <stdbool.h>

struct prec_job {
	void (*run)(void *arg);
	void *arg;
	/* the pool's */
	struct prec_job *next;
	bool submitted, queued, done;
};

struct prec_jobs;

struct prec_jobs *prec_jobs_get(int n);
void prec_jobs_put(struct prec_jobs *j);
void prec_jobs_submit(struct prec_jobs *j, struct prec_job *t);
/*
 * Waits until @t has run; a task still queued is taken off the queue and
 * run by the caller. Returns at once for a task never submitted.
 */
void prec_jobs_wait(struct prec_jobs *j, struct prec_job *t);

#endif

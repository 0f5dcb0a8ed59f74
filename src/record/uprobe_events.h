/* SPDX-License-Identifier: MIT */
/*
 * Uprobes as tracefs events, for the events a workload's children inherit.
 *
 * A uprobe PMU event (perf_event_attr.type = the "uprobe" PMU) names its file
 * by a pointer in the opening process (config1 = uprobe_path). When a task
 * forks or starts a thread, the kernel copies its inherited events and
 * creates the uprobe again from that pointer, read in the forking task's
 * memory, where it means nothing: clone(2) then fails with EFAULT, so a
 * traced program cannot start threads or children at all (seen on Linux
 * 6.18: pthread_create returns EFAULT). perf itself records uprobes as
 * tracefs probe events ('perf probe -x'), whose tracepoint ids are inherited
 * safely; this module does the same for ptrec's uprobe:/uretprobe: specs:
 *
 *	u = prec_uprobe_events_new();
 *	prec_uprobe_events_add(u, path, offset, ret, &id, d);   type TRACEPOINT, config id
 *	... record ...
 *	prec_uprobe_events_free(u);   removes the tracefs events (after the fds close)
 *
 * Events are named ptrec_<pid>/u<N> in uprobe_events (k<N> in kprobe_events). A recorder killed
 * before it could remove them leaves them behind; prec_uprobe_events_new()
 * removes those of ptrec processes that no longer exist.
 */
#ifndef PREC_UPROBE_EVENTS_H
#define PREC_UPROBE_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/common.h"

struct prec_uprobe_events;

/* An empty set. Returns NULL on allocation failure. */
struct prec_uprobe_events *prec_uprobe_events_new(void);

/*
 * Creates (or reuses, for the same @path, @offset and @ret) the tracefs
 * uprobe at file offset @offset of @path (a uretprobe when @ret) and sets
 * *@id to its tracepoint id. Returns 0, or a negative errno with @d (may be
 * NULL) saying what failed: -ENOENT (no tracefs or no uprobe_events: a
 * kernel without CONFIG_UPROBE_EVENTS), -EACCES/-EPERM, -EINVAL (the kernel
 * refused the probe), -ENOMEM.
 */
int prec_uprobe_events_add(struct prec_uprobe_events *u, const char *path, uint64_t offset,
			   bool ret, uint64_t *id, struct prec_diag *d);

/*
 * The same for a kprobe at @func+@offset (a kretprobe at its return when
 * @ret, which takes no offset), in kprobe_events: every kprobe:/kretprobe:
 * spec is recorded this way (the kprobe PMU names its function by a pointer,
 * as the uprobe PMU does). -ENOENT: no kprobe_events (CONFIG_KPROBE_EVENTS).
 */
int prec_kprobe_events_add(struct prec_uprobe_events *u, const char *func, uint64_t offset,
			   bool ret, uint64_t *id, struct prec_diag *d);

/* Removes every event of @u from tracefs and frees @u (NULL is fine). */
void prec_uprobe_events_free(struct prec_uprobe_events *u);

#endif

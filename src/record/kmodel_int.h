/* SPDX-License-Identifier: MIT */
/*
 * The model's state, shared by its parts: kmodel.c (the syscalls: open,
 * ioctl, mmap, poll, read, close), kmodel_ring.c (the producer side of the
 * rings, as kernel/events/ring_buffer.c writes them) and kmodel_emu.c (the
 * emulated PMUs: the software tracers behind the model). Private to them.
 *
 * Locking: one mutex (m->lock) over everything below. The syscalls take it
 * at the table (kmodel.c's l_* wrappers); the emulated PMUs' producer thread
 * takes it for each message it turns into ring output. The consumer (the
 * recorder) reads the mapped rings without it, through the heads and tails
 * of the control page, as it reads the kernel's.
 */
#ifndef PREC_KMODEL_INT_H
#define PREC_KMODEL_INT_H

#include <pthread.h>

#include "record/kernel.h"
#include "record/kmodel_limits.h"
#include "spec/filter.h"

struct kpmu {
	uint32_t type;
	unsigned caps;
	unsigned nr_addr_filters; /* pmu->nr_addr_filters: 0 for none */
	bool etm_filters;         /* validated as cs_etm's, else as intel_pt's */
};

/* A ring buffer (struct perf_buffer): the mapped data ring and its AUX area. */
struct kring {
	void *base;
	size_t data_pages; /* 2^n, or 0 for the control page alone */
	int maps;          /* live mappings of the data part */
	void *aux;
	size_t aux_pages;
	int aux_maps;
	uint64_t mmap_locked, aux_mmap_locked; /* pages charged to pinned_vm */
	/* the producer's side (rb->head, rb->lost, rb->wakeup, rb->watermark, ...) */
	uint64_t head, lost, wakeup, watermark;
	uint64_t events;   /* rb->events: samples towards wakeup_events */
	uint64_t aux_head, aux_wakeup, aux_watermark;
	bool aux_overwrite; /* the AUX area mapped without PROT_WRITE (rb->aux_overwrite) */
	bool ready;        /* a wakeup not yet seen by poll() (rb->poll) */
	bool paused;       /* PERF_EVENT_IOC_PAUSE_OUTPUT (rb->paused): records are lost */
};

struct kev {
	bool open;
	struct prec_attr attr;
	unsigned caps;  /* of its PMU */
	pid_t task;     /* -1: a CPU context */
	int cpu;
	int leader;     /* index of the group leader (itself for a leader) */
	int ring;       /* its ring (own or by SET_OUTPUT), or -1 */
	int mmaps;      /* its own live mmaps (event->mmap_count) */
	uint64_t id;
	bool enabled, paused;
	bool exited; /* PERF_EVENT_STATE_EXIT: removed from its context */
	bool hup;    /* its task exited with it in the context: poll() says POLLHUP */
	bool counting;                   /* enabled, and so is its leader */
	uint64_t enabled_ns, enabled_at; /* time spent counting; up to when (CLOCK_MONOTONIC) */
	uint64_t lost_samples; /* records of its that found no room (event->lost_samples) */
	struct prec_addr_filter *filt; /* its address filters (event->addr_filters) */
	int nfilt;
	/*
	 * Throttling (hwc->interrupts, hwc->interrupts_seq): overflows in tick
	 * thr_tick of the emulated clock; throttled: hwc->interrupts ==
	 * MAX_INTERRUPTS, since an overflow of its group in tick thr_tick.
	 */
	uint64_t thr_tick, interrupts;
	bool throttled;
};

struct kemu;

/*
 * A task told as made by prec_kmodel_fork(): it has copies of the inherit
 * events of its parent's context (perf_event_init_task()) from then on.
 */
struct km_kid {
	pid_t pid, tid, ptid; /* the task, and the task that made it */
	bool thread;          /* CLONE_THREAD */
	bool gone;            /* exited: its context is gone with its copies */
	size_t nev;           /* the events that existed at the fork */
};

struct prec_kmodel {
	struct prec_kernel k;
	int nr_cpus;
	long page;
	struct kpmu *pmus;
	size_t npmus;
	struct kev *ev;
	size_t nev;
	struct kring *rings;
	size_t nrings;
	uint64_t next_id;
	struct prec_kmodel_limits lim;
	uint64_t locked_vm, pinned_vm; /* user->locked_vm, mm->pinned_vm (pages) */
	pthread_mutex_t lock;
	int wake_fd;       /* eventfd: the producer's wakeups reach poll() through it */
	struct kemu *emu;  /* the emulated PMUs and their workload, or NULL */
	struct km_kid *kids; /* tasks told as forked (kmodel_occur.c) */
	size_t nkids;
};

/* The event of model fd @fd, or NULL. */
struct kev *prec_km_ev(struct prec_kmodel *m, int fd);

/* ---- the producer side (kmodel_ring.c); each with m->lock held ---- */

/* What a record says about where and when it happened (perf_sample_data's ids). */
struct km_sid {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
};

/* Sets the producer state of a ring just mapped (ring_buffer_init(), rb_alloc_aux()). */
void prec_km_ring_init(struct prec_kmodel *m, struct kring *r, const struct kev *e);
void prec_km_aux_init(struct prec_kmodel *m, struct kring *r, const struct kev *e);

/* Whether @e counts now: it and its group leader are enabled (event_sched_in()). */
bool prec_km_active(struct prec_kmodel *m, const struct kev *e);
/*
 * Whether @e takes side-band records (COMM, MMAP2, FORK, EXIT, SWITCH):
 * perf_iterate_ctx() and perf_iterate_sb_cpu() want a state of at least
 * INACTIVE, the event's own: enabled, whether or not its leader is.
 */
bool prec_km_sb_active(const struct kev *e);

/*
 * A side-band record of @type (COMM, MMAP2, FORK, ...) with @body (the
 * fields after the header), written to @e's ring with @e's sample_id
 * trailer (perf_event_header__init_id()). 0, or -ENOSPC when it was lost.
 */
int prec_km_output(struct prec_kmodel *m, struct kev *e, uint32_t type, uint16_t misc,
		   const void *body, size_t len, const struct km_sid *sid);

/*
 * What read() of @e gives (perf_read_one(), perf_read_group()), into @v of
 * @size bytes: the bytes written, 0 when they do not fit.
 */
size_t prec_km_read_values(struct prec_kmodel *m, const struct kev *e, uint64_t *v, size_t size);

/* A PERF_RECORD_SAMPLE of @e in its sample_type (perf_output_sample()). */
int prec_km_sample(struct prec_kmodel *m, struct kev *e, uint64_t ip, uint64_t period,
		   const struct km_sid *sid);

/* A piece of trace written into an AUX area, not yet reported. */
struct km_piece {
	uint64_t offset, size; /* in the AUX area's running count */
	bool truncated;
	bool overwrite;        /* written in overwrite mode */
};

/*
 * Trace bytes of the AUX event @e: what fits goes to the AUX area
 * (perf_aux_output_begin() and the hardware's writes), described in *@pc.
 * False when nothing is to be reported (no room: the event is disabled).
 */
bool prec_km_aux_write(struct prec_kmodel *m, struct kev *e, const void *data, size_t len,
		       struct km_piece *pc);
/* Reports the piece: its PERF_RECORD_AUX, then aux_head (perf_aux_output_end()). */
void prec_km_aux_end(struct prec_kmodel *m, struct kev *e, const struct km_piece *pc,
		     const struct km_sid *sid);
/* Both at once. Returns the bytes taken. */
size_t prec_km_aux(struct prec_kmodel *m, struct kev *e, const void *data, size_t len,
		   const struct km_sid *sid);

/* Marks @r ready for poll() and wakes it (perf_output_wakeup()). */
void prec_km_wakeup(struct prec_kmodel *m, struct kring *r);
/* Ends a wait in poll() without a ring being ready (the lock is not needed). */
void prec_km_kick(struct prec_kmodel *m);

/* ---- the emulated PMUs (kmodel_emu.c) ---- */

void prec_km_emu_free(struct prec_kmodel *m);
/*
 * The AUX event @e stops (disabled): the tracer's pieces in its area are
 * reported now, as the driver's pmu->stop(PERF_EF_UPDATE) ends its
 * transaction with perf_aux_output_end().
 */
void prec_km_emu_stop(struct prec_kmodel *m, struct kev *e);
/*
 * Tells the emulated tracer which triggers count nowhere now (their group
 * disabled): those neither sample nor pause or resume it. Call with m->lock
 * held after any change of an event's state; nothing without a run.
 */
void prec_km_emu_sync(struct prec_kmodel *m);

/* The emulated clock's tick (TICK_NSEC of the model's HZ) and max_samples_per_tick. */
uint64_t prec_km_tick_ns(const struct prec_kmodel *m);
uint64_t prec_km_max_per_tick(const struct prec_kmodel *m);

#endif

// SPDX-License-Identifier: MIT
/*
 * Occurrences fed to the model's producer side by a caller that drives it
 * as it drives the real kernel (record/kmodel.h: prec_kmodel_hit(),
 * prec_kmodel_comm(), prec_kmodel_exit()). The records go through the same
 * writers as the emulated PMUs' (kmodel_ring.c); what is chosen here is
 * only which events see the occurrence, as kernel/events/core.c chooses.
 */
#include <string.h>

#include "record/kmodel.h"
#include "record/kmodel_int.h"

/*
 * Whether @e sees what @t does: event_filter_match() holds (a CPU event of
 * @t's CPU, or an event of @t itself, on any CPU or on @t's) and, for a
 * sample, the event counts (scheduled in: enabled, its leader too); for a
 * side-band record its own state is enough (prec_km_sb_active()).
 */
static bool sees(struct prec_kmodel *m, const struct kev *e, const struct prec_kmodel_task *t,
		 bool sample)
{
	if (sample ? !prec_km_active(m, e) : !prec_km_sb_active(e))
		return false;
	if (e->cpu != -1 && e->cpu != t->cpu)
		return false;
	return e->task == -1 || e->task == t->tid;
}

static struct km_sid sid_of(const struct prec_kmodel_task *t)
{
	return (struct km_sid){ (uint32_t)t->pid, (uint32_t)t->tid, t->time, (uint32_t)t->cpu };
}

int prec_kmodel_hit(struct prec_kmodel *m, const struct prec_kmodel_task *t,
		    const struct prec_attr *key, uint64_t ip)
{
	struct km_sid s = sid_of(t);
	int n = 0;
	size_t i;

	/*
	 * Newest first: perf_trace_add() puts an event at the head of the
	 * tracepoint's per-CPU list as it is scheduled in (in open order), and
	 * perf_tp_event() walks that list; a uprobe's consumers are called
	 * newest first too (consumer_add()).
	 */
	pthread_mutex_lock(&m->lock);
	for (i = m->nev; i-- > 0;) {
		struct kev *e = &m->ev[i];
		const struct prec_attr *a = &e->attr;

		if (a->type != key->type || a->config != key->config ||
		    a->config1 != key->config1 || a->config2 != key->config2 || !sees(m, e, t, true))
			continue;
		/* perf_tp_event_match(), uprobe_perf_filter(): user regs, so exclude_user only. */
		if (a->exclude_user)
			continue;
		n += !prec_km_sample(m, e, ip, 1, &s);
	}
	pthread_mutex_unlock(&m->lock);
	return n;
}

/*
 * perf_event_comm(): pid, tid and the name padded with zeros to 8 bytes
 * (ALIGN(strlen + 1, 8), at most TASK_COMM_LEN), PERF_RECORD_MISC_COMM_EXEC
 * at an exec, to each event with attr.comm (perf_event_comm_match()) that
 * sees the task (perf_iterate_sb(): the CPU's events and the task's).
 */
void prec_kmodel_comm(struct prec_kmodel *m, const struct prec_kmodel_task *t, const char *comm,
		      bool exec)
{
	struct {
		uint32_t pid, tid;
		char comm[16];
	} body = { (uint32_t)t->pid, (uint32_t)t->tid, { 0 } };
	struct km_sid s = sid_of(t);
	size_t len = strnlen(comm, sizeof(body.comm) - 1), i;

	memcpy(body.comm, comm, len);
	len = 8 + ((len + 1 + 7) & ~(size_t)7);
	pthread_mutex_lock(&m->lock);
	for (i = 0; i < m->nev; i++)
		if (m->ev[i].attr.comm && sees(m, &m->ev[i], t, false))
			prec_km_output(m, &m->ev[i], PERF_RECORD_COMM,
				       exec ? PERF_RECORD_MISC_COMM_EXEC : 0, &body, len, &s);
	pthread_mutex_unlock(&m->lock);
}

/*
 * perf_event_exit_task(): perf_event_task() with the task's context, then
 * with the CPU's: PERF_RECORD_EXIT (pid, ppid, tid, ptid, time) to each event
 * that asks for task records (perf_event_task_match(): comm, mmap, mmap2,
 * mmap_data or task) and sees the task. Then perf_event_exit_event() takes
 * the events still in the task's context out (DETACH_EXIT: off for good,
 * their groups kept), and poll() says POLLHUP for them from now on. (Their
 * enabled time is left running: read() counts wall-clock time anyway.)
 */
void prec_kmodel_exit(struct prec_kmodel *m, const struct prec_kmodel_task *t, pid_t ppid,
		      pid_t ptid)
{
	struct {
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} body = { (uint32_t)t->pid, (uint32_t)ppid, (uint32_t)t->tid, (uint32_t)ptid, t->time };
	struct km_sid s = sid_of(t);
	size_t i;

	pthread_mutex_lock(&m->lock);
	for (i = 0; i < m->nev; i++) {
		const struct prec_attr *a = &m->ev[i].attr;

		if ((a->comm || a->mmap || a->mmap2 || a->mmap_data || a->task) &&
		    sees(m, &m->ev[i], t, false))
			prec_km_output(m, &m->ev[i], PERF_RECORD_EXIT, 0, &body, sizeof(body), &s);
	}
	for (i = 0; i < m->nev; i++) {
		struct kev *e = &m->ev[i];

		if (e->open && e->task == t->tid && !e->exited) {
			e->enabled = false;
			e->exited = e->hup = true;
		}
	}
	pthread_mutex_unlock(&m->lock);
}

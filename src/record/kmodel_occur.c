// SPDX-License-Identifier: MIT
/*
 * Occurrences fed to the model's producer side by a caller that drives it
 * as it drives the real kernel (record/kmodel.h: prec_kmodel_hit(),
 * prec_kmodel_comm(), prec_kmodel_exit(), prec_kmodel_fork(), prec_kmodel_mmap(),
 * prec_kmodel_switch()). The records go through the same
 * writers as the emulated PMUs' (kmodel_ring.c); what is chosen here is
 * only which events see the occurrence, as kernel/events/core.c chooses.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "record/kmodel.h"
#include "record/kmodel_int.h"

static struct km_sid sid_of(const struct prec_kmodel_task *t)
{
	return (struct km_sid){ (uint32_t)t->pid, (uint32_t)t->tid, t->time, (uint32_t)t->cpu };
}

/* The task @tid told as forked and not yet exited, or NULL. */
static struct km_kid *kid_of(struct prec_kmodel *m, pid_t tid)
{
	size_t i;

	for (i = m->nkids; i-- > 0;)
		if (m->kids[i].tid == tid && !m->kids[i].gone)
			return &m->kids[i];
	return NULL;
}

/*
 * Whether event @i of the parent's context was copied into @k's at the fork
 * (perf_event_init_task() -> inherit_task_group()): an inherit event (the
 * parent's own, or its copy in a parent that was forked itself), not
 * inherit_thread unless the new task is a thread (CLONE_THREAD).
 */
static bool inherits(struct prec_kmodel *m, size_t i, const struct km_kid *k)
{
	const struct kev *e = &m->ev[i];
	const struct km_kid *pk;

	if (i >= k->nev || !e->attr.inherit || (e->attr.inherit_thread && !k->thread))
		return false;
	if (e->task == k->ptid)
		return true;
	pk = kid_of(m, k->ptid);
	return pk && pk != k && inherits(m, i, pk);
}

/*
 * Whether @e sees what @t does: event_filter_match() holds (a CPU event of
 * @t's CPU, or an event of @t itself or copied into @t at its fork, on any
 * CPU or on @t's) and, for a sample, the event counts (scheduled in:
 * enabled, its leader too); for a side-band record its own state is enough
 * (prec_km_sb_active()).
 */
static bool sees(struct prec_kmodel *m, const struct kev *e, const struct prec_kmodel_task *t,
		 bool sample)
{
	const struct km_kid *k;

	if (sample ? !prec_km_active(m, e) : !prec_km_sb_active(e))
		return false;
	if (e->cpu != -1 && e->cpu != t->cpu)
		return false;
	if (e->task == -1 || e->task == t->tid)
		return true;
	k = kid_of(m, t->tid);
	return k && inherits(m, (size_t)(e - m->ev), k);
}

/*
 * The kernel's global counts of side-band events, which account_event()
 * raises at perf_event_open() and unaccount_event() lowers at the free, of
 * every event of the system whatever its state: nr_comm_events (attr.comm),
 * nr_mmap_events (attr.mmap or attr.mmap_data: attr.mmap2 alone does not
 * count), nr_task_events (attr.task), nr_switch_events
 * (attr.context_switch). perf_event_comm(), perf_event_mmap(),
 * perf_event_task() and the scheduler's perf_event_switch() write nothing
 * while theirs are zero. The model's system is its own events.
 */
enum { NR_COMM = 1, NR_MMAP = 2, NR_TASK = 4, NR_SWITCH = 8 };

static unsigned nr_events(const struct prec_kmodel *m)
{
	unsigned nr = 0;
	size_t i;

	for (i = 0; i < m->nev; i++) {
		const struct prec_attr *a = &m->ev[i].attr;

		if (!m->ev[i].open)
			continue;
		nr |= (a->comm ? NR_COMM : 0) | (a->mmap || a->mmap_data ? NR_MMAP : 0) |
		      (a->task ? NR_TASK : 0) | (a->context_switch ? NR_SWITCH : 0);
	}
	return nr;
}

typedef void (*sb_fn)(struct prec_kmodel *m, struct kev *e, const struct km_sid *s, void *arg);

/*
 * perf_iterate_sb_cpu(): the side-band CPU events of @t's CPU (the per-CPU
 * pmu_sb_events list: attach_sb_event() adds at its head, so newest first)
 * that are at least INACTIVE.
 */
static void iterate_cpu(struct prec_kmodel *m, const struct prec_kmodel_task *t, sb_fn fn,
			void *arg)
{
	struct km_sid s = sid_of(t);
	size_t i;

	for (i = m->nev; i-- > 0;) {
		struct kev *e = &m->ev[i];

		if (e->task == -1 && e->cpu == t->cpu && prec_km_sb_active(e))
			fn(m, e, &s, arg);
	}
}

/*
 * The sort key of an inherited copy in the walk of inherit_task_group():
 * pinned groups, then flexible ones, each by CPU (-1 first) and group index
 * (the leader's open order), a leader before its siblings. (The kernel also
 * sorts by PMU, by address: not modelled, so copies of one PMU only.)
 */
static uint64_t walk_key(const struct prec_kmodel *m, size_t i)
{
	const struct kev *e = &m->ev[i];
	const struct kev *l = &m->ev[e->leader];

	return (uint64_t)!l->attr.pinned << 62 | (uint64_t)(uint32_t)(l->cpu + 1) << 40 |
	       (uint64_t)e->leader << 20 | (uint64_t)i;
}

/*
 * perf_iterate_ctx() over @t's task context: its event_list, to which
 * list_add_event() adds at the head. The task's own events, newest first;
 * in a task told as forked, the copies of inherit_task_group(), added in
 * its walk (walk_key()), so last walked first. A copy is in the state of
 * the event it copies (ENABLE and DISABLE reach the children:
 * perf_event_for_each_child()) and writes to its ring (perf_output_begin()
 * takes the parent's) with the parent's ids. ID is primary_event_id(), the
 * parent's; STREAM_ID is the writer's event->id, which in the kernel is the
 * copy's or the parent's depending on whether parent and child swapped
 * their equivalent contexts at a switch between them
 * (perf_event_context_sched_out(), context_equiv()): timing, not modelled.
 */
static void iterate_task(struct prec_kmodel *m, const struct prec_kmodel_task *t, sb_fn fn,
			 void *arg)
{
	struct km_sid s = sid_of(t);
	const struct km_kid *k = kid_of(m, t->tid);
	uint64_t below = UINT64_MAX;
	size_t i;

	for (i = m->nev; i-- > 0;) {
		struct kev *e = &m->ev[i];

		if (e->task == t->tid && (e->cpu == -1 || e->cpu == t->cpu) && prec_km_sb_active(e))
			fn(m, e, &s, arg);
	}
	while (k) {
		size_t best = m->nev;
		uint64_t key = 0;

		for (i = 0; i < k->nev; i++)
			if (inherits(m, i, k) && walk_key(m, i) < below &&
			    (best == m->nev || walk_key(m, i) > key))
				best = i, key = walk_key(m, i);
		if (best == m->nev)
			break;
		below = key;
		if ((m->ev[best].cpu == -1 || m->ev[best].cpu == t->cpu) &&
		    prec_km_sb_active(&m->ev[best]))
			fn(m, &m->ev[best], &s, arg);
	}
}

/* A side-band record of one kind, written by the events that want it. */
struct sb_rec {
	uint32_t type;
	uint16_t misc;
	const void *body;
	size_t len;
	const void *body2; /* MMAP2's: the body events with attr.mmap2 get */
	size_t len2;
	bool exec;         /* MMAP: of an executable mapping */
	uint32_t np[2];    /* SWITCH_CPU_WIDE: next_prev_pid, next_prev_tid */
};

/* perf_event_comm_output(): events with attr.comm (perf_event_comm_match()). */
static void comm_out(struct prec_kmodel *m, struct kev *e, const struct km_sid *s, void *arg)
{
	const struct sb_rec *r = arg;

	if (e->attr.comm)
		prec_km_output(m, e, r->type, r->misc, r->body, r->len, s);
}

/* perf_event_task_output(): perf_event_task_match(): comm, mmap, mmap2, mmap_data or task. */
static void task_out(struct prec_kmodel *m, struct kev *e, const struct km_sid *s, void *arg)
{
	const struct sb_rec *r = arg;
	const struct prec_attr *a = &e->attr;

	if (a->comm || a->mmap || a->mmap2 || a->mmap_data || a->task)
		prec_km_output(m, e, r->type, r->misc, r->body, r->len, s);
}

/*
 * perf_event_mmap_output(): perf_event_mmap_match() (an executable mapping
 * for mmap or mmap2, another for mmap_data); PERF_RECORD_MMAP2 with the
 * inode fields, prot and flags for attr.mmap2. (With attr.build_id the
 * kernel gives the file's build id instead when build_id_parse_nofault()
 * found one: the model knows none, as when it was not found.)
 */
static void mmap_out(struct prec_kmodel *m, struct kev *e, const struct km_sid *s, void *arg)
{
	const struct sb_rec *r = arg;
	const struct prec_attr *a = &e->attr;

	if (r->exec ? !(a->mmap || a->mmap2) : !a->mmap_data)
		return;
	if (a->mmap2)
		prec_km_output(m, e, PERF_RECORD_MMAP2, r->misc, r->body2, r->len2, s);
	else
		prec_km_output(m, e, PERF_RECORD_MMAP, r->misc, r->body, r->len, s);
}

/*
 * perf_event_switch_output(): events with attr.context_switch; a task
 * context's get PERF_RECORD_SWITCH (the header alone), a CPU context's
 * PERF_RECORD_SWITCH_CPU_WIDE with the task switched to or from.
 */
static void switch_out(struct prec_kmodel *m, struct kev *e, const struct km_sid *s, void *arg)
{
	const struct sb_rec *r = arg;

	if (!e->attr.context_switch)
		return;
	if (e->task == -1)
		prec_km_output(m, e, PERF_RECORD_SWITCH_CPU_WIDE, r->misc, r->np, sizeof(r->np), s);
	else
		prec_km_output(m, e, PERF_RECORD_SWITCH, r->misc, NULL, 0, s);
}

/* perf_iterate_sb() without a task context: the CPU's events, then current's context. */
static void iterate_sb(struct prec_kmodel *m, const struct prec_kmodel_task *t, sb_fn fn,
		       void *arg)
{
	iterate_cpu(m, t, fn, arg);
	iterate_task(m, t, fn, arg);
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
 * sees the task (perf_iterate_sb(): the CPU's events, then the task's), if
 * any event has attr.comm (nr_events()).
 */
void prec_kmodel_comm(struct prec_kmodel *m, const struct prec_kmodel_task *t, const char *comm,
		      bool exec)
{
	struct {
		uint32_t pid, tid;
		char comm[16];
	} body = { (uint32_t)t->pid, (uint32_t)t->tid, { 0 } };
	size_t len = strnlen(comm, sizeof(body.comm) - 1);
	struct sb_rec r = { .type = PERF_RECORD_COMM, .body = &body };

	memcpy(body.comm, comm, len);
	r.misc = exec ? PERF_RECORD_MISC_COMM_EXEC : 0;
	r.len = 8 + ((len + 1 + 7) & ~(size_t)7);
	pthread_mutex_lock(&m->lock);
	if (nr_events(m) & NR_COMM)
		iterate_sb(m, t, comm_out, &r);
	pthread_mutex_unlock(&m->lock);
}

/*
 * perf_event_exit_task(): perf_event_exit_task_context() writes
 * PERF_RECORD_EXIT (pid, ppid, tid, ptid, time) to the task's context
 * alone (perf_event_task() with it: perf_iterate_sb() visits only that
 * context), then perf_event_task() without one to the CPU's events (the
 * task has no context any more) — each event that asks for task records
 * (perf_event_task_match(): comm, mmap, mmap2, mmap_data or task). Then
 * perf_event_exit_event() takes the events still in the task's context out
 * (DETACH_EXIT: off for good, their groups kept), and poll() says POLLHUP
 * for them from now on; a forked task's copies go with it. (Their enabled
 * time is left running: read() counts wall-clock time anyway.)
 */
void prec_kmodel_exit(struct prec_kmodel *m, const struct prec_kmodel_task *t, pid_t ppid,
		      pid_t ptid)
{
	struct {
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} body = { (uint32_t)t->pid, (uint32_t)ppid, (uint32_t)t->tid, (uint32_t)ptid, t->time };
	struct sb_rec r = { .type = PERF_RECORD_EXIT, .body = &body, .len = sizeof(body) };
	struct km_kid *k;
	size_t i;

	pthread_mutex_lock(&m->lock);
	if (nr_events(m) & (NR_COMM | NR_MMAP | NR_TASK)) {
		iterate_task(m, t, task_out, &r);
		iterate_cpu(m, t, task_out, &r);
	}
	for (i = 0; i < m->nev; i++) {
		struct kev *e = &m->ev[i];

		if (e->open && e->task == t->tid && !e->exited) {
			e->enabled = false;
			e->exited = e->hup = true;
		}
	}
	k = kid_of(m, t->tid);
	if (k)
		k->gone = true;
	pthread_mutex_unlock(&m->lock);
}

/*
 * copy_process(): perf_event_init_task() first (the new task's context
 * gets copies of the parent's inherit events: kid_of(), inherits()), then
 * perf_event_fork() -> perf_event_task(new): PERF_RECORD_FORK (pid, ppid,
 * tid, ptid, time), written in the parent (perf_iterate_sb() of current:
 * the CPU's events, then the parent's context, with the parent's sample id)
 * to each event that asks for task records. A thread (CLONE_THREAD) gets
 * the same record with its process's pid.
 */
int prec_kmodel_fork(struct prec_kmodel *m, const struct prec_kmodel_task *t, pid_t pid,
		     pid_t tid, bool thread)
{
	struct {
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} body = { (uint32_t)pid, (uint32_t)t->pid, (uint32_t)tid, (uint32_t)t->tid, t->time };
	struct sb_rec r = { .type = PERF_RECORD_FORK, .body = &body, .len = sizeof(body) };
	struct km_kid *k;

	pthread_mutex_lock(&m->lock);
	k = realloc(m->kids, (m->nkids + 1) * sizeof(*k));
	if (!k) {
		pthread_mutex_unlock(&m->lock);
		return -ENOMEM;
	}
	m->kids = k;
	k = &m->kids[m->nkids++];
	*k = (struct km_kid){ pid, tid, t->tid, thread, false, m->nev };
	if (nr_events(m) & (NR_COMM | NR_MMAP | NR_TASK))
		iterate_sb(m, t, task_out, &r);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

/*
 * perf_event_mmap() for a mapping @v made by @t: perf_event_mmap_event()
 * fills the record from the vma — misc PERF_RECORD_MISC_USER, with
 * PERF_RECORD_MISC_MMAP_DATA when not VM_EXEC; start, len, pgoff in bytes
 * (vm_pgoff << PAGE_SHIFT); the file's path padded with zeros to 8 bytes
 * (strlen + 1, aligned); for MMAP2 the device's major and minor, the inode
 * and its generation, prot from VM_READ/VM_WRITE/VM_EXEC and flags
 * MAP_SHARED for VM_MAYSHARE (else MAP_PRIVATE), MAP_LOCKED for VM_LOCKED,
 * MAP_HUGETLB for a hugetlb vma — then perf_iterate_sb() of current. Only
 * if an event has attr.mmap or attr.mmap_data (nr_events()): events with
 * attr.mmap2 alone get nothing then.
 */
void prec_kmodel_mmap(struct prec_kmodel *m, const struct prec_kmodel_task *t,
		      const struct prec_kmodel_vma *v)
{
	size_t nlen = strnlen(v->name, PREC_KMODEL_PATH_MAX - 1), fsize = (nlen + 1 + 7) & ~(size_t)7;
	struct {
		uint32_t pid, tid;
		uint64_t start, len, pgoff;
		uint32_t maj, min;
		uint64_t ino, gen;
		uint32_t prot, flags;
		char name[PREC_KMODEL_PATH_MAX];
	} b2 = { (uint32_t)t->pid, (uint32_t)t->tid, v->start, v->len, v->pgoff, v->maj, v->min,
		 v->ino, v->gen, (uint32_t)(v->prot & (PROT_READ | PROT_WRITE | PROT_EXEC)),
		 (uint32_t)((v->flags & MAP_SHARED ? MAP_SHARED : MAP_PRIVATE) |
			    (v->flags & (MAP_LOCKED | MAP_HUGETLB))), { 0 } };
	struct {
		uint32_t pid, tid;
		uint64_t start, len, pgoff;
		char name[PREC_KMODEL_PATH_MAX];
	} b1 = { (uint32_t)t->pid, (uint32_t)t->tid, v->start, v->len, v->pgoff, { 0 } };
	struct sb_rec r = { PERF_RECORD_MMAP, PERF_RECORD_MISC_USER, &b1,
			    offsetof(typeof(b1), name) + fsize, &b2,
			    offsetof(typeof(b2), name) + fsize, (v->prot & PROT_EXEC) != 0, { 0 } };

	memcpy(b1.name, v->name, nlen);
	memcpy(b2.name, v->name, nlen);
	if (!r.exec)
		r.misc |= PERF_RECORD_MISC_MMAP_DATA;
	pthread_mutex_lock(&m->lock);
	if (nr_events(m) & NR_MMAP)
		iterate_sb(m, t, mmap_out, &r);
	pthread_mutex_unlock(&m->lock);
}

/*
 * perf_event_switch(): @t is switched out (__perf_event_task_sched_out(),
 * before its context goes out) or in (__perf_event_task_sched_in(), after
 * it came in), from or to @np; PERF_RECORD_MISC_SWITCH_OUT, with
 * PERF_RECORD_MISC_SWITCH_OUT_PREEMPT when @t can still run
 * (task_is_runnable(): preempted or yielding, not sleeping); written by
 * perf_iterate_sb() of @t (current at both ends of the switch).
 */
void prec_kmodel_switch(struct prec_kmodel *m, const struct prec_kmodel_task *t,
			const struct prec_kmodel_task *np, bool in, bool runnable)
{
	struct sb_rec r = { .type = PERF_RECORD_SWITCH };

	if (!in)
		r.misc = PERF_RECORD_MISC_SWITCH_OUT |
			 (runnable ? PERF_RECORD_MISC_SWITCH_OUT_PREEMPT : 0);
	r.np[0] = (uint32_t)np->pid;
	r.np[1] = (uint32_t)np->tid;
	pthread_mutex_lock(&m->lock);
	if (nr_events(m) & NR_SWITCH)
		iterate_sb(m, t, switch_out, &r);
	pthread_mutex_unlock(&m->lock);
}

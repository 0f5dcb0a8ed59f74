// SPDX-License-Identifier: MIT
/*
 * The software tracers as PMUs of the model (record/kmodel.h): the tracer
 * runs the workload under QEMU in a thread of its own (emurun.h), and each
 * trace piece, side-band record and trigger sample it sends becomes the
 * output the kernel would give the events that cover the thread.
 */
#include <elf.h>
#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/array.h"
#include "base/perf_records.h"
#include "base/util.h"
#include "record/emulate.h"
#include "record/emusys.h"
#include "record/etm_emulate.h"
#include "record/kmodel.h"
#include "record/emu_proto.h"
#include "record/kmodel_int.h"
#include "record/synth.h"
#include "tracefile/tfile.h"

/*
 * The model's scheduler. Each thread of the workload gets a CPU when it is
 * created (its FORK record, or its first message for the first thread), in
 * turn: the k-th thread runs on CPU k mod N, the same in every run, and stays
 * there (a run queue per CPU, no migration). The user-mode tracer's threads
 * run only on their CPU: a new thread (EMU_MSG_READY), one back from a sleep
 * (EMU_MSG_WOKEN) and one whose time slice ran out (EMU_MSG_TICK, then
 * EMU_MSG_SLICE when told to yield: tick()) wait in the plugin until the
 * model puts them there and says so in the shared area (grant():
 * emu_shm.run). A thread that enters a syscall that may
 * sleep (EMU_MSG_WAIT) leaves its CPU, not runnable; a thread's EXIT leaves
 * it for good; a thread whose slice ran out leaves it, still runnable
 * (PREEMPT), when another thread of its CPU can run. The CPU a thread
 * leaves goes to the runnable thread of that CPU that waited longest, else
 * to the idle task (pid and tid 0). Threads the plugin does not hold back
 * (no word in the shared area, or one that waited too long) run as QEMU
 * runs them: when a message of such a thread comes while another holds its
 * CPU, the model switches them then (run_on()).
 */
struct kthr {
	uint32_t pid, tid;
	int cpu;
	bool dead;
	bool waiting;  /* asleep in a syscall: not runnable */
	bool queued;   /* held back by the plugin in its CPU's run queue, not running */
	uint64_t time; /* of its latest message */
	uint64_t out_seq; /* when it last joined its CPU's run queue, in the model's count */
	uint32_t slot;    /* its word in the shared area's run[]; EMU_SLOT_PRIVATE: none */
};

struct kcpu {
	uint32_t pid, tid; /* its current thread; 0: idle */
	uint64_t time;     /* of its latest switch */
};

/* When process @pid last exec'd: the time of its COMM_EXEC record. */
struct kexec {
	uint32_t pid;
	uint64_t time;
};

struct kemu {
	struct prec_kmodel_emu cfg;
	struct prec_emu_config pt;
	struct prec_etm_config etm;
	struct prec_emusys_config sys;
	struct prec_emusys_result guest; /* what the whole-system run's guest left */
	struct kexec *execs;  /* each process's last COMM_EXEC (the whole-system run) */
	size_t nexecs;
	bool late;            /* the whole-system run ended: its records come from the mailbox */
	char *const *argv;
	pthread_t thread;
	bool started;
	int done;           /* the run returned (atomic) */
	int result, wstatus;
	struct prec_diag diag;
	pid_t main_pid;     /* the workload's first process, once heard of */
	uint64_t heard_ns;  /* prec_now_ns() then (atomic) */
	uint64_t start_ns;  /* prec_now_ns() at t_start() */
	struct prec_emusys_ctl ctl; /* the whole-system run's way to its guest */
	int pending_sig;    /* a kill() before the workload was heard of */
	struct pending *pend; /* pieces written, their end not yet heard of */
	size_t npend;
	uint64_t last_time;
	struct kthr *thr;     /* every thread heard of, and its CPU */
	size_t nthr;
	struct kcpu *cpus;    /* m->nr_cpus of them */
	unsigned next_cpu;    /* the CPU the next new thread gets */
	uint64_t out_seq;     /* run queue entries so far (kthr.out_seq) */
	uint32_t *trig_off;   /* the run's shared flags (emu_shm.trig_off), or NULL */
	struct emu_shm *shm;  /* the shared header whose run[] lets threads run, or NULL */
};

/*
 * A thread's piece of trace in an AUX area, waiting for the tracer's
 * PERF_RECORD_AUX of it: the moment its trace was handed over (the driver's
 * perf_aux_output_end() at a PMI or at sched-out), which gives the time.
 */
struct pending {
	uint32_t pid, tid;
	int cpu;
	size_t ev;
	struct km_piece pc;
	bool ended; /* reported at a stop already: its record only leaves the queue */
};

/*
 * Whether event @e sees what thread @tid of process @pid does on CPU
 * @cpu: a CPU context on that CPU, or the workload's task context (every
 * thread it made when the event is inherited, inherit_event() at fork;
 * else its first thread only).
 */
static bool covers(const struct prec_kmodel *m, const struct kev *e, uint32_t pid, uint32_t tid,
		   int cpu)
{
	const struct kemu *x = m->emu;

	(void)pid;
	if (e->cpu != -1 && e->cpu != cpu)
		return false;
	if (e->task == -1)
		return true;
	if (!tid) /* the idle task: no task context of the workload */
		return false;
	if (e->task != PREC_KMODEL_WORKLOAD_PID)
		return false;
	return e->attr.inherit || (x->main_pid && (pid_t)tid == x->main_pid);
}

/* perf_event_task_match(), perf_event_comm_match(), perf_event_mmap_match(), ... */
static bool wants(const struct kev *e, uint32_t type)
{
	const struct prec_attr *a = &e->attr;

	switch (type) {
	case PERF_RECORD_COMM:
		return a->comm;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return a->mmap || a->mmap2;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		return a->comm || a->mmap || a->mmap2 || a->mmap_data || a->task;
	case PERF_RECORD_TEXT_POKE:
		return a->text_poke;
	case PERF_RECORD_ITRACE_START:
		/* perf_log_itrace_start(): the AUX event itself. */
		return (e->caps & PREC_KMODEL_CAP_AUX) != 0;
	case PREC_RECORD_SIGNAL:
		/*
		 * Not a kernel record: the software tracer's note of how the
		 * workload died, carried in the AUX event's ring so that it
		 * reaches the file in order with the trace.
		 */
		return (e->caps & PREC_KMODEL_CAP_AUX) != 0;
	default:
		return false;
	}
}

static void heard_of(struct kemu *x, uint32_t pid)
{
	if (x->main_pid || !pid)
		return;
	x->main_pid = (pid_t)pid;
	__atomic_store_n(&x->heard_ns, prec_now_ns(), __ATOMIC_RELEASE);
	if (x->pending_sig && x->cfg.sys)
		prec_emusys_signal(&x->ctl, x->pending_sig);
	else if (x->pending_sig)
		kill(x->main_pid, x->pending_sig);
}

/* The run's triggers, in the order of trigger_attrs and of the shared flags. */
static const struct prec_emu_trigger *triggers(const struct kemu *x, size_t *n)
{
	*n = x->cfg.etm ? x->etm.ntriggers : x->pt.ntriggers;
	return x->cfg.etm ? x->etm.triggers : x->pt.triggers;
}

/*
 * The time of a switch on @cpu at emulated time @t: never before the CPU's
 * last switch (QEMU's threads send their messages in an order of their own).
 * The other records keep their thread's time: each process of the workload
 * has its own instruction clock, and its trace's timestamps and its
 * side-band must agree.
 */
static uint64_t switch_time(struct prec_kmodel *m, int cpu, uint64_t t)
{
	struct kcpu *c = &m->emu->cpus[cpu];

	if (t > c->time)
		c->time = t;
	return c->time;
}

/*
 * Ends the oldest pending piece of @tid (@all: every one of @tid, or of
 * every thread when @tid is 0).
 */
static void end_piece(struct prec_kmodel *m, uint32_t tid, bool all, uint64_t time)
{
	struct kemu *x = m->emu;
	size_t i;

	for (i = 0; i < x->npend; i++) {
		struct pending *p = &x->pend[i];
		struct km_sid ps = { p->pid, p->tid, time, (uint32_t)p->cpu };

		if (tid && p->tid != tid)
			continue;
		if (p->ev < m->nev && !p->ended)
			prec_km_aux_end(m, &m->ev[p->ev], &p->pc, &ps);
		memmove(p, p + 1, (x->npend - i - 1) * sizeof(*p));
		x->npend--;
		if (!all)
			return;
		i--;
	}
}

void prec_km_emu_stop(struct prec_kmodel *m, struct kev *e)
{
	struct kemu *x = m->emu;
	size_t i, ev = (size_t)(e - m->ev);

	for (i = 0; x && i < x->npend; i++) {
		struct pending *p = &x->pend[i];
		struct km_sid ps = { p->pid, p->tid, x->last_time, (uint32_t)p->cpu };

		if (p->ev != ev || p->ended)
			continue;
		prec_km_aux_end(m, e, &p->pc, &ps);
		p->ended = true;
	}
}

/* Thread @tid of process @pid: its entry, made (with the next CPU in turn) if new. */
static struct kthr *thread_of(struct prec_kmodel *m, uint32_t pid, uint32_t tid)
{
	struct kemu *x = m->emu;
	size_t i;

	for (i = 0; i < x->nthr; i++)
		if (x->thr[i].tid == tid)
			return &x->thr[i];
	if (PREC_ARRAY_RESERVE(x->thr, x->nthr, 1))
		return NULL;
	x->thr[x->nthr] = (struct kthr){ pid, tid, (int)(x->next_cpu++ % (unsigned)m->nr_cpus),
					 false, false, false, 0, 0, EMU_SLOT_PRIVATE };
	return &x->thr[x->nthr++];
}

/* Thread @tid's entry, or NULL. */
static struct kthr *find_thr(struct kemu *x, uint32_t tid)
{
	size_t i;

	for (i = 0; i < x->nthr; i++)
		if (x->thr[i].tid == tid)
			return &x->thr[i];
	return NULL;
}

/* Whether the plugin holds @t back until the model puts it on its CPU. */
static bool held_back(const struct kemu *x, const struct kthr *t)
{
	return x->shm && t->slot < EMU_SHM_RUN;
}

/* Whether a thread of @cpu's run queue waits for it (cfs_rq->nr_running > 1). */
static bool contended(const struct kemu *x, int cpu)
{
	size_t i;

	for (i = 0; i < x->nthr; i++) {
		const struct kthr *t = &x->thr[i];

		if (t->cpu == cpu && t->queued && !t->dead && t->tid != x->cpus[cpu].tid)
			return true;
	}
	return false;
}

/* Answers @t's question with @v in its word (emu_shm.run), and wakes it. */
static void answer(struct kemu *x, const struct kthr *t, uint32_t v)
{
	uint32_t *w;

	if (!held_back(x, t))
		return;
	w = &x->shm->run[t->slot];
	__atomic_add_fetch(&x->shm->sched_seq, 1, __ATOMIC_RELAXED);
	__atomic_store_n(w, v, __ATOMIC_RELEASE);
	syscall(SYS_futex, w, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* @t may run: it is on its CPU now. */
static void grant(struct kemu *x, const struct kthr *t)
{
	answer(x, t, EMU_RUN_GO);
}

/*
 * The events in the order perf_iterate_sb() visits them: the CPU's
 * side-band events (pmu_sb_events), then the task's context, each newest
 * first (both lists are added to at the head: attach_sb_event(),
 * list_add_event()); @task_first for EXIT, which perf_event_exit_task()
 * writes to the task's context before the CPU's. *@k: the position, from 0;
 * NULL at the end.
 */
static struct kev *sb_next(struct prec_kmodel *m, size_t *k, bool task_first)
{
	while (*k < 2 * m->nev) {
		size_t pass = *k / m->nev, i = m->nev - 1 - *k % m->nev;
		struct kev *e = &m->ev[i];

		++*k;
		if ((e->task == -1) == ((pass == 0) != task_first))
			return e;
	}
	return NULL;
}

/*
 * perf_event_switch() for @pid/@tid on @cpu, to every event that asks for
 * switches (perf_event_switch_match(): attr.context_switch) and sees the
 * thread there: a task event gets PERF_RECORD_SWITCH, a CPU event
 * PERF_RECORD_SWITCH_CPU_WIDE with the thread it switches to or from
 * (perf_event_switch_output()). Out of a thread that can still run, the
 * record says PREEMPT (task_is_runnable()).
 */
static void switch_output(struct prec_kmodel *m, int cpu, const struct kcpu *t,
			  const struct kcpu *next_prev, bool in, bool preempt)
{
	uint32_t np[2] = { next_prev->pid, next_prev->tid };
	uint16_t misc = in ? 0 : PERF_RECORD_MISC_SWITCH_OUT;
	struct km_sid s = { t->pid, t->tid, m->emu->cpus[cpu].time, (uint32_t)cpu };
	size_t k = 0;
	struct kev *e;

	if (!in && preempt)
		misc |= PERF_RECORD_MISC_SWITCH_OUT_PREEMPT;
	while ((e = sb_next(m, &k, false))) {
		if (!e->open || !e->attr.context_switch || !covers(m, e, t->pid, t->tid, cpu) ||
		    !prec_km_sb_active(e))
			continue;
		if (e->task == -1)
			prec_km_output(m, e, PERF_RECORD_SWITCH_CPU_WIDE, misc, np, sizeof(np), &s);
		else
			prec_km_output(m, e, PERF_RECORD_SWITCH, misc, NULL, 0, &s);
	}
}

/*
 * @next takes @cpu from its current thread, in the kernel's order
 * (__perf_event_task_sched_out(), then __perf_event_task_sched_in()): the
 * switch out of the current thread, its context out (the AUX event's
 * pt_event_stop() ends its piece: perf_aux_output_end(), at the time of the
 * thread's last message), then the switch in.
 * @preempt: the current thread can still run (it has not exited).
 */
static void switch_to(struct prec_kmodel *m, int cpu, const struct kcpu *next, uint64_t time,
		      bool preempt)
{
	struct kcpu *c = &m->emu->cpus[cpu];
	struct kcpu prev = *c;

	switch_time(m, cpu, time);
	if (m->emu->shm) /* for the threads that wait in the plugin: the scheduler moves */
		__atomic_add_fetch(&m->emu->shm->sched_seq, 1, __ATOMIC_RELAXED);
	switch_output(m, cpu, &prev, next, false, preempt);
	if (prev.tid) {
		struct kthr *pt = thread_of(m, prev.pid, prev.tid);

		if (pt && preempt)
			pt->out_seq = ++m->emu->out_seq;
		end_piece(m, prev.tid, true, pt ? pt->time : c->time);
	}
	c->pid = next->pid;
	c->tid = next->tid;
	switch_output(m, cpu, next, &prev, true, false);
	if (next->tid) {
		struct kthr *nt = find_thr(m->emu, next->tid);

		if (nt) {
			nt->queued = false;
			grant(m->emu, nt);
		}
	}
}

/*
 * Thread @tid, which sends a message of time @time (0: no time of its own),
 * runs on its CPU now: switched in first if another thread had it (a dead
 * thread's late messages schedule nothing, nor do those of a thread the
 * plugin holds back in its CPU's run queue: it runs when the model says).
 * NULL on no memory.
 */
static struct kthr *run_on(struct prec_kmodel *m, uint32_t pid, uint32_t tid, uint64_t time)
{
	struct kthr *t = thread_of(m, pid, tid);
	struct kcpu *c;

	if (!t)
		return NULL;
	if (time > t->time)
		t->time = time;
	t->waiting = false; /* it runs: whatever it waited for came */
	c = &m->emu->cpus[t->cpu];
	if (c->tid != tid && !t->dead && !(t->queued && held_back(m->emu, t))) {
		struct kcpu next = { pid, tid, 0 };

		switch_to(m, t->cpu, &next, t->time, true);
		t = thread_of(m, pid, tid); /* the table may have moved */
	}
	return t;
}

/*
 * What @cpu runs when its thread stops being runnable or is preempted
 * (pick_next_task()): the runnable thread of that CPU that joined its run
 * queue first (one known from its FORK only comes first), else the idle task.
 */
static struct kcpu pick_next(const struct prec_kmodel *m, int cpu)
{
	const struct kemu *x = m->emu;
	const struct kthr *best = NULL;
	size_t i;

	for (i = 0; i < x->nthr; i++) {
		const struct kthr *t = &x->thr[i];

		if (t->cpu != cpu || t->dead || t->waiting || t->tid == x->cpus[cpu].tid)
			continue;
		if (!best || t->out_seq < best->out_seq)
			best = t;
	}
	return best ? (struct kcpu){ best->pid, best->tid, 0 } : (struct kcpu){ 0, 0, 0 };
}

/*
 * Thread @tid stops being runnable at @time: it sleeps in a syscall
 * (@dies false) or exited (its EXIT record). On its CPU the next thread
 * runs, the switch-out saying no PREEMPT: perf_event_switch() sets it only
 * for a task_is_runnable() one, and __schedule() took the sleeper off the
 * run queue (block_task()) before context_switch() ->
 * perf_event_task_sched_out().
 */
static void leave(struct prec_kmodel *m, uint32_t tid, uint64_t time, bool dies)
{
	struct kemu *x = m->emu;
	size_t i;

	for (i = 0; i < x->nthr; i++) {
		struct kthr *t = &x->thr[i];
		struct kcpu next;
		int cpu = t->cpu;

		if (t->tid != tid || t->dead)
			continue;
		if (dies)
			t->dead = true;
		else
			t->waiting = true;
		t->queued = false;
		if (x->cpus[cpu].tid != tid)
			return;
		next = pick_next(m, cpu);
		switch_to(m, cpu, &next, time, false);
		return;
	}
}

/* The end of the run: every CPU still running a thread goes idle. */
static void all_idle(struct prec_kmodel *m, uint64_t time)
{
	struct kemu *x = m->emu;
	int c;

	for (c = 0; c < m->nr_cpus; c++)
		while (x->cpus[c].tid)
			leave(m, x->cpus[c].tid, time, true);
}

/* TICK_NSEC (include/vdso/jiffies.h) of the model's HZ: the emulated clock's tick. */
uint64_t prec_km_tick_ns(const struct prec_kmodel *m)
{
	uint64_t hz = m->lim.hz ? m->lim.hz : 250;

	return (1000000000ull + hz / 2) / hz;
}

/* perf_event_max_sample_rate_handler(): DIV_ROUND_UP(perf_event_max_sample_rate, HZ). */
uint64_t prec_km_max_per_tick(const struct prec_kmodel *m)
{
	uint64_t hz = m->lim.hz ? m->lim.hz : 250, rate = m->lim.max_sample_rate;

	return rate ? (rate + hz - 1) / hz : 1;
}

/*
 * perf_log_throttle(): PERF_RECORD_THROTTLE (or UNTHROTTLE) with the time,
 * the event's id (primary_event_id()) and stream id, then its sample_id
 * trailer, in @e's ring.
 */
static void log_throttle(struct prec_kmodel *m, struct kev *e, bool unthrottle,
			 const struct km_sid *sid)
{
	uint64_t body[3] = { sid->time, e->id, e->id };

	prec_km_output(m, e, unthrottle ? PERF_RECORD_UNTHROTTLE : PERF_RECORD_THROTTLE, 0, body,
		       sizeof(body), sid);
}

/*
 * perf_event_throttle_group() (Linux 6.16+): the leader and every sibling
 * stop (hwc->interrupts = MAX_INTERRUPTS, pmu->stop()) until the next tick,
 * and only the leader logs it (perf_event_throttle()). The tracer's
 * pmu->stop() is not modelled: its trace goes on; its triggers stop
 * (prec_km_emu_sync() tells the tracer).
 */
static void throttle_group(struct prec_kmodel *m, struct kev *e, uint64_t tick,
			   const struct km_sid *sid)
{
	size_t i;

	for (i = 0; i < m->nev; i++) {
		struct kev *k = &m->ev[i];

		if (k->open && k->leader == e->leader) {
			k->throttled = true;
			k->thr_tick = tick;
		}
	}
	log_throttle(m, &m->ev[e->leader], false, sid);
	prec_km_emu_sync(m);
}

/*
 * __perf_event_account_interrupt(): the overflows of @e in this tick of the
 * emulated clock (a new tick starts the count again, hwc->interrupts_seq);
 * the max_samples_per_tick-th throttles the group, before its own sample is
 * written (__perf_event_overflow() goes on to the overflow handler). Only a
 * hardware counter's overflow (@counter: the instruction counters) is
 * accounted with throttle set; a tracepoint's or a uprobe's never throttles
 * by itself: perf_swevent_overflow() passes throttle 0 for the first
 * overflow of a hit, and each hit of a period-1 event has one.
 */
static void account_interrupt(struct prec_kmodel *m, struct kev *e, bool counter,
			      const struct km_sid *sid)
{
	uint64_t tick = sid->time / prec_km_tick_ns(m);

	if (e->thr_tick != tick || !e->interrupts) {
		e->thr_tick = tick;
		e->interrupts = 1;
	} else {
		e->interrupts++;
	}
	if (counter && e->interrupts >= prec_km_max_per_tick(m))
		throttle_group(m, e, tick, sid);
}

/*
 * The tick: perf_adjust_freq_unthr_events() unthrottles a throttled group
 * at the first tick after its throttle (perf_event_unthrottle_group(); the
 * leader logs UNTHROTTLE). The model learns that the tick came from a
 * message of a later time (@sid, of the thread that runs then), and gives
 * the record the tick's time.
 */
static void unthrottle_due(struct prec_kmodel *m, const struct km_sid *sid)
{
	uint64_t tick_ns = prec_km_tick_ns(m), now = sid->time / tick_ns;
	bool any = false;
	size_t i, k;

	for (i = 0; i < m->nev; i++) {
		struct kev *l = &m->ev[i];
		struct km_sid s = *sid;

		if (!l->open || l->leader != (int)i || !l->throttled || l->thr_tick >= now)
			continue;
		for (k = 0; k < m->nev; k++)
			if (m->ev[k].open && m->ev[k].leader == (int)i) {
				m->ev[k].throttled = false;
				m->ev[k].interrupts = 0;
			}
		s.time = (l->thr_tick + 1) * tick_ns;
		log_throttle(m, l, true, &s);
		any = true;
	}
	if (any)
		prec_km_emu_sync(m);
}

/*
 * The parent @tid of FORK record @h when it is off its CPU already: the new
 * thread told the tracer first (the record is the parent's, written in
 * copy_process() while it ran), and the parent went on into a syscall that
 * waits, or ran out its slice. The record goes to the parent's CPU; the
 * parent stays where it is. NULL for any other record or parent.
 */
static struct kthr *fork_of_sleeper(struct prec_kmodel *m, const struct perf_event_header *h,
				    uint32_t tid)
{
	struct kemu *x = m->emu;
	size_t i;

	if (h->type != PERF_RECORD_FORK)
		return NULL;
	for (i = 0; i < x->nthr; i++)
		if (x->thr[i].tid == tid)
			return !x->thr[i].dead && x->cpus[x->thr[i].cpu].tid != tid ? &x->thr[i] :
										    NULL;
	return NULL;
}

/*
 * The whole-system tracer's PERF_RECORD_SWITCH: the guest switched the
 * workload's task out of its CPU or back in (the plugin sees the guest's
 * current_task change). The model's CPU goes idle or runs the thread
 * again: switch_to() writes the SWITCH records (perf_event_switch()) and,
 * going out, ends the AUX piece (pt_event_stop() at the sched-out).
 * Without PREEMPT: the tracer cannot tell a preemption from a sleep.
 */
static int guest_switch(struct prec_kmodel *m, const struct prec_sample_id *sid, bool in)
{
	struct kthr *t = thread_of(m, sid->pid, sid->tid);
	const struct kcpu idle = { 0, 0, 0 };

	if (!t)
		return -ENOMEM;
	if (sid->time > t->time)
		t->time = sid->time;
	if (in)
		return run_on(m, sid->pid, sid->tid, sid->time) ? 0 : -ENOMEM;
	if (m->emu->cpus[t->cpu].tid == sid->tid)
		switch_to(m, t->cpu, &idle, t->time, false);
	return 0;
}

/* Process @pid exec'd at @time (its COMM_EXEC record); 0 or -ENOMEM. */
static int note_exec(struct kemu *x, uint32_t pid, uint64_t time)
{
	size_t i;

	for (i = 0; i < x->nexecs; i++)
		if (x->execs[i].pid == pid) {
			x->execs[i].time = time;
			return 0;
		}
	if (PREC_ARRAY_RESERVE(x->execs, x->nexecs, 1))
		return -ENOMEM;
	x->execs[x->nexecs++] = (struct kexec){ pid, time };
	return 0;
}

/* A side-band record (the tracer's trailer: PREC_EMU_SAMPLE_ID_TYPE) to its events. */
static int emu_sideband(void *ctx, const void *rec, size_t size)
{
	struct prec_kmodel *m = ctx;
	const struct perf_event_header *h = rec;
	struct prec_sample_id sid;
	struct km_sid s;
	struct kthr *t;
	struct kev *e;
	size_t k, body;
	int cpu;

	if (size < sizeof(*h) + 32 || prec_perf_sample_id(h, &sid))
		return -EPROTO;
	body = size - sizeof(*h) - 32;
	pthread_mutex_lock(&m->lock);
	heard_of(m->emu, sid.pid);
	if (sid.time > m->emu->last_time)
		m->emu->last_time = sid.time;
	if (h->type == PERF_RECORD_COMM && (h->misc & PERF_RECORD_MISC_COMM_EXEC) &&
	    note_exec(m->emu, sid.pid, sid.time) < 0) {
		pthread_mutex_unlock(&m->lock);
		return -ENOMEM;
	}
	if (h->type == PERF_RECORD_AUX) {
		/*
		 * The tracer's own record says when; the model writes the record.
		 * A piece ended already (its thread was switched out) is left be.
		 */
		end_piece(m, sid.tid, false, sid.time);
		pthread_mutex_unlock(&m->lock);
		return 0;
	}
	if (h->type == PERF_RECORD_SWITCH) {
		int r = guest_switch(m, &sid, !(h->misc & PERF_RECORD_MISC_SWITCH_OUT));

		pthread_mutex_unlock(&m->lock);
		return r;
	}
	if (h->type == PERF_RECORD_FORK && body >= 16) {
		/*
		 * perf_event_fork() runs in the parent (copy_process()): the
		 * record is written on its CPU with its sample_id, whoever of
		 * the two told the tracer first.
		 */
		sid.pid = prec_rd32((const uint8_t *)(h + 1) + 4);
		sid.tid = prec_rd32((const uint8_t *)(h + 1) + 12);
	}
	/* Records told after the run (the guest's mappings, dated at the exec) schedule nothing. */
	if (m->emu->late) {
		t = thread_of(m, sid.pid, sid.tid);
	} else {
		t = fork_of_sleeper(m, h, sid.tid);
		if (!t)
			t = run_on(m, sid.pid, sid.tid, sid.time);
	}
	if (!t) {
		pthread_mutex_unlock(&m->lock);
		return -ENOMEM;
	}
	cpu = t->cpu;
	s = (struct km_sid){ sid.pid, sid.tid, sid.time, (uint32_t)cpu };
	unthrottle_due(m, &s);
	k = 0;
	while ((e = sb_next(m, &k, h->type == PERF_RECORD_EXIT))) {
		/* ITRACE_START comes at the AUX event's sched-in: it counts; the rest is side-band. */
		bool on = h->type == PERF_RECORD_ITRACE_START || h->type == PREC_RECORD_SIGNAL ?
				  prec_km_active(m, e) : prec_km_sb_active(e);

		if (wants(e, h->type) && covers(m, e, sid.pid, sid.tid, cpu) && on)
			prec_km_output(m, e, h->type, h->misc, h + 1, body, &s);
	}
	/* FORK and EXIT bodies: pid, ppid, tid, ptid. A new thread gets its CPU now. */
	if (body >= 16) {
		const uint8_t *b = (const uint8_t *)(h + 1);

		if (h->type == PERF_RECORD_FORK && !thread_of(m, prec_rd32(b), prec_rd32(b + 8)))
			cpu = -1;
		else if (h->type == PERF_RECORD_EXIT)
			leave(m, prec_rd32(b + 8), sid.time, true);
	}
	pthread_mutex_unlock(&m->lock);
	return cpu < 0 ? -ENOMEM : 0;
}

static bool same_event(const struct prec_attr *a, const struct prec_attr *b)
{
	return a->type == b->type && a->config == b->config && a->config1 == b->config1 &&
	       a->config2 == b->config2 && a->aux_pause == b->aux_pause &&
	       a->aux_resume == b->aux_resume;
}

/*
 * A trigger fired: its sample goes to every event of that trigger covering
 * the thread, whether or not the firing paused or resumed the trace (the
 * overflow handler writes the sample in any case; perf_event_aux_pause()
 * acts beside it). The tracer fires only triggers whose events count
 * (prec_km_emu_sync()), at its own instant; the sample reaches the model
 * later, when the event may have stopped counting since (a full AUX area
 * disables it), and still belongs to the firing that paused or resumed.
 */
static int emu_sample(struct prec_kmodel *m, const struct perf_event_header *h)
{
	size_t nt;
	const struct prec_emu_trigger *trig = triggers(m->emu, &nt);
	struct prec_trigger_sample ts;
	const struct prec_attr *key = NULL;
	bool counter = false;
	struct km_sid s;
	struct kthr *t;
	size_t i;
	int cpu;

	if (prec_perf_parse_sample(h, &ts))
		return -EPROTO;
	for (i = 0; i < nt && !key; i++)
		if (PREC_EMU_ID(trig[i].event_index) == ts.id) {
			key = &m->emu->cfg.trigger_attrs[i];
			counter = trig[i].kind == PREC_EMU_INSNS;
		}
	if (!key)
		return 0;
	pthread_mutex_lock(&m->lock);
	heard_of(m->emu, ts.pid);
	t = run_on(m, ts.pid, ts.tid, ts.time);
	cpu = t ? t->cpu : -1;
	s = (struct km_sid){ ts.pid, ts.tid, ts.time, (uint32_t)cpu };
	if (cpu >= 0)
		unthrottle_due(m, &s);
	for (i = 0; i < m->nev && cpu >= 0; i++) {
		struct kev *e = &m->ev[i];

		if (!e->open || !same_event(&e->attr, key) || !covers(m, e, ts.pid, ts.tid, cpu))
			continue;
		/*
		 * A firing that finds its event throttled already is one the
		 * tracer made before it saw the flag (another member of the
		 * group throttled it): its pause or resume took place, so its
		 * sample is kept, as for a group disabled meanwhile.
		 */
		if (!e->throttled)
			account_interrupt(m, e, counter, &s);
		prec_km_sample(m, e, ts.ip, ts.period, &s);
	}
	pthread_mutex_unlock(&m->lock);
	return cpu < 0 ? -ENOMEM : 0;
}

void prec_km_emu_sync(struct prec_kmodel *m)
{
	struct kemu *x = m->emu;
	struct emu_shm *hdr;
	size_t i, k, nt;

	if (!x || !x->trig_off)
		return;
	triggers(x, &nt);
	hdr = (struct emu_shm *)((char *)x->trig_off - offsetof(struct emu_shm, trig_off));
	for (i = 0; i < nt && i < EMU_SHM_TRIGS; i++) {
		uint32_t v = EMU_TRIG_OFF, group = 0;

		/*
		 * __perf_event_overflow() runs only for an event that counts,
		 * and a throttled one has no overflows (perf_swevent_overflow(),
		 * the PMU stopped) until the next tick.
		 */
		for (k = 0; k < m->nev && v != EMU_TRIG_ON; k++) {
			const struct kev *e = &m->ev[k];

			if (!e->open || !same_event(&e->attr, &x->cfg.trigger_attrs[i]) ||
			    !prec_km_active(m, e))
				continue;
			v = e->throttled ? EMU_TRIG_THROTTLED(e->thr_tick) : EMU_TRIG_ON;
			group = (uint32_t)e->leader + 1;
		}
		__atomic_store_n(&hdr->trig_group[i], group, __ATOMIC_RELAXED);
		__atomic_store_n(&x->trig_off[i], v, __ATOMIC_RELEASE);
	}
}

/* The run ends: no thread waits for a CPU any more. */
static void release_all(struct kemu *x)
{
	size_t i;

	for (i = 0; i < x->nthr; i++)
		grant(x, &x->thr[i]);
}

void prec_kmodel_watch_triggers(struct prec_kmodel *m, uint32_t *flags)
{
	pthread_mutex_lock(&m->lock);
	if (m->emu) {
		struct kemu *x = m->emu;

		if (!flags && x->shm)
			release_all(x);
		x->trig_off = flags;
		x->shm = NULL;
		if (flags) {
			struct emu_shm *hdr =
				(struct emu_shm *)((char *)flags - offsetof(struct emu_shm, trig_off));

			hdr->tick_ns = prec_km_tick_ns(m);
			hdr->max_per_tick = prec_km_max_per_tick(m);
			/* The whole-system tracer's guest has a scheduler of its own. */
			if (!x->cfg.sys) {
				hdr->slice = x->cfg.slice ? x->cfg.slice : PREC_KMODEL_SLICE;
				__atomic_store_n(&hdr->sched_on, 1, __ATOMIC_RELEASE);
				x->shm = hdr;
			}
		}
		prec_km_emu_sync(m);
	}
	pthread_mutex_unlock(&m->lock);
}

static void emu_trig_off(void *ctx, uint32_t *flags)
{
	prec_kmodel_watch_triggers(ctx, flags);
}

static int emu_record(void *ctx, const void *rec, size_t size)
{
	const struct perf_event_header *h = rec;

	if (h->type == PERF_RECORD_SAMPLE)
		return emu_sample(ctx, h);
	return emu_sideband(ctx, rec, size);
}

int prec_kmodel_emu_record(struct prec_kmodel *m, const void *rec, size_t size)
{
	return m->emu ? emu_record(m, rec, size) : -ENODEV;
}

/*
 * Trace bytes of a thread: to the AUX event running on its CPU for it (the
 * tracer's PMU is exclusive: one AUX event per CPU at a time). The bytes of
 * a thread no AUX event covers, or that find the event disabled, are not
 * traced, as on hardware.
 */
static int emu_aux(void *ctx, uint32_t pid, uint32_t tid, uint64_t offset, const void *data,
		   size_t size)
{
	struct prec_kmodel *m = ctx;
	struct km_sid s;
	struct kthr *t;
	size_t i;
	int cpu;

	(void)offset;
	pthread_mutex_lock(&m->lock);
	heard_of(m->emu, pid);
	t = run_on(m, pid, tid, 0);
	cpu = t ? t->cpu : -1;
	s = (struct km_sid){ pid, tid, t ? t->time : 0, (uint32_t)cpu };
	for (i = 0; i < m->nev && cpu >= 0; i++) {
		struct kev *e = &m->ev[i];

		struct km_piece pc;

		if (!e->open || !(e->caps & PREC_KMODEL_CAP_AUX) || e->ring < 0 ||
		    !covers(m, e, pid, tid, cpu))
			continue;
		if (prec_km_aux_write(m, e, data, size, &pc)) {
			if (PREC_ARRAY_RESERVE(m->emu->pend, m->emu->npend, 1)) {
				prec_km_aux_end(m, e, &pc, &s);
				break;
			}
			m->emu->pend[m->emu->npend++] = (struct pending){ pid, tid, cpu, i, pc, false };
		}
		break;
	}
	pthread_mutex_unlock(&m->lock);
	return cpu < 0 ? -ENOMEM : 0;
}

/*
 * Thread @tid of @pid is runnable and waits for its CPU: a new one
 * (wake_up_new_task()) or one back from a sleep (try_to_wake_up()). It
 * joins its CPU's run queue (enqueue_task()), and runs at once on an idle
 * CPU; on a busy one it waits for the running thread to sleep, exit or run
 * out its slice (no wakeup preemption: the plugin cannot stop a thread
 * between its own messages). A thread the plugin does not hold back runs
 * now, as QEMU runs it (run_on()).
 */
static struct kthr *wake(struct prec_kmodel *m, uint32_t pid, uint32_t tid, uint64_t time,
			 uint32_t slot)
{
	struct kemu *x = m->emu;
	struct kthr *t = thread_of(m, pid, tid);
	struct kcpu next = { pid, tid, 0 };
	uint32_t cur;

	if (!t)
		return NULL;
	t->slot = slot;
	if (!held_back(x, t))
		return run_on(m, pid, tid, time);
	if (time > t->time)
		t->time = time;
	t->waiting = false;
	cur = x->cpus[t->cpu].tid;
	if (t->dead || cur == tid) {
		grant(x, t);
	} else if (!cur) {
		switch_to(m, t->cpu, &next, t->time, true); /* grants it */
		t = thread_of(m, pid, tid);
	} else {
		t->out_seq = ++x->out_seq;
		t->queued = true;
	}
	return t;
}

/*
 * The tick that finds thread @tid's slice used up (sched_tick() ->
 * task_tick_fair() -> update_deadline()): the scheduler reschedules only
 * when another task waits for the CPU (resched_curr() when
 * cfs_rq->nr_running > 1). Then the thread is told to hand its trace over
 * and ask again (EMU_RUN_YIELD, then EMU_MSG_SLICE: slice_used()); alone,
 * it runs on into a new slice, its trace not cut.
 */
static struct kthr *tick(struct prec_kmodel *m, uint32_t pid, uint32_t tid, uint64_t time,
			 uint32_t slot)
{
	struct kthr *t = run_on(m, pid, tid, time);

	if (!t)
		return NULL;
	t->slot = slot;
	answer(m->emu, t, !t->dead && m->emu->cpus[t->cpu].tid == tid && contended(m->emu, t->cpu) ?
				  EMU_RUN_YIELD : EMU_RUN_GO);
	return t;
}

/*
 * Thread @tid ran its time slice (the plugin counts it in its user
 * instructions), its trace up to there handed over. The scheduler's tick
 * finds the slice used up (sched_tick() -> task_tick_fair() ->
 * update_deadline()) and reschedules only when another task is queued
 * (cfs_rq->nr_running > 1: resched_curr()); __schedule() then puts the
 * thread back in its CPU's run queue and runs the next one. The switch-out
 * says PREEMPT: the thread is still on the run queue (perf_event_switch()
 * sets it for task_is_runnable() tasks), and the AUX piece ends as
 * pt_event_stop() ends it at sched-out (switch_to()). Alone on its CPU, the
 * thread runs on into a new slice.
 */
static struct kthr *slice_used(struct prec_kmodel *m, uint32_t pid, uint32_t tid, uint64_t time,
			       uint32_t slot)
{
	struct kthr *t = run_on(m, pid, tid, time); /* it ran: on its CPU first if not there */
	struct kcpu next;

	if (!t)
		return NULL;
	t->slot = slot;
	if (!t->dead && m->emu->cpus[t->cpu].tid != tid) {
		/* It ran on past its patience while queued: it stays in the queue. */
		t->queued = true;
		return t;
	}
	next = t->dead ? (struct kcpu){ 0, 0, 0 } : pick_next(m, t->cpu);
	if (!next.tid) {
		grant(m->emu, t);
		return t;
	}
	t->queued = true; /* before the next one's grant, which sees it waiting */
	switch_to(m, t->cpu, &next, t->time, true); /* t joins the run queue's tail */
	return thread_of(m, pid, tid);
}

/*
 * What the plugin tells of a thread (enum prec_emu_sched). Entering a
 * syscall that may sleep, its trace up to there handed over: it leaves its
 * CPU (leave()). The others: wake() and slice_used().
 */
static int emu_sched(void *ctx, uint32_t pid, uint32_t tid, uint64_t time, int what,
		     uint32_t slot)
{
	struct prec_kmodel *m = ctx;
	struct kthr *t;

	pthread_mutex_lock(&m->lock);
	heard_of(m->emu, pid);
	if (what == PREC_EMU_WOKEN || what == PREC_EMU_READY) {
		t = wake(m, pid, tid, time, slot);
	} else if (what == PREC_EMU_SLICE) {
		t = slice_used(m, pid, tid, time, slot);
	} else if (what == PREC_EMU_TICK) {
		t = tick(m, pid, tid, time, slot);
	} else {
		/* It made the call, so it ran: switched in first if another had its CPU since. */
		t = run_on(m, pid, tid, time);
		if (t && !t->dead)
			leave(m, tid, time, false);
	}
	pthread_mutex_unlock(&m->lock);
	return t ? 0 : -ENOMEM;
}

int prec_kmodel_emu_sched(struct prec_kmodel *m, uint32_t pid, uint32_t tid, uint64_t time,
			  int what, uint32_t slot)
{
	return m->emu ? emu_sched(m, pid, tid, time, what, slot) : -ENODEV;
}

static int emu_stream(void *ctx, uint32_t pid, uint32_t tid, unsigned index, uint8_t csid)
{
	(void)ctx;
	(void)pid;
	(void)tid;
	(void)index;
	(void)csid;
	return 0;
}

static int synth_record(void *ctx, const struct perf_event_header *h)
{
	return emu_sideband(ctx, h, h->size);
}

/*
 * The mappings the guest left for each of its processes (PREC_EMUSYS_MB_MAPS:
 * "@PID" lines, each followed by that process's maps at its exit) as MMAP2
 * records, dated at the process's last exec. A process that never exec'd
 * has its parent's mappings (dup_mmap() writes no record; perf's tools copy
 * the parent's maps at its FORK): none of its own.
 */
static int sys_maps(struct prec_kmodel *m, char *maps)
{
	struct kemu *x = m->emu;
	char *p = maps;
	int r = 0;

	while (p && *p == '@' && r >= 0) {
		uint32_t pid = (uint32_t)strtoul(p + 1, NULL, 10);
		char *text = strchr(p, '\n'), *next;
		size_t i;

		if (!text)
			break;
		text++;
		next = strstr(text, "\n@");
		if (next)
			*++next = 0;
		for (i = 0; i < x->nexecs && x->execs[i].pid != pid; i++)
			;
		if (i < x->nexecs)
			r = prec_synth_maps((pid_t)pid, text, x->execs[i].time, PREC_EMU_ID_PT,
					    synth_record, m);
		if (next)
			*next = '@';
		p = next;
	}
	return r;
}

/*
 * The whole-system tracer's run. The kernel writes an MMAP2 record for
 * each executable mapping as it is made (perf_event_mmap() from
 * mmap_region()); the guest tells the model its processes' mappings only
 * at their exit (their /proc/PID/maps), so they come after the run, dated
 * at each one's exec, before which none of them existed.
 */
static int sys_run(struct prec_kmodel *m)
{
	struct kemu *x = m->emu;
	struct prec_emu_ops ops = { .ctx = m, .aux = emu_aux, .sideband = emu_record,
				    .trig_off = emu_trig_off };
	int r = prec_emusys_run(&x->sys, &ops, &x->guest, &x->diag);

	x->wstatus = x->guest.wstatus;
	x->late = true;
	if (!r && x->guest.maps)
		r = sys_maps(m, x->guest.maps);
	return r;
}

static void *run_thread(void *arg)
{
	struct prec_kmodel *m = arg;
	struct kemu *x = m->emu;
	int r;

	if (x->cfg.sys) {
		r = sys_run(m);
	} else if (x->cfg.pt) {
		struct prec_emu_ops ops = { .ctx = m, .aux = emu_aux, .sideband = emu_record,
					    .trig_off = emu_trig_off, .sched = emu_sched };

		r = prec_emu_run(&x->pt, &ops, &x->wstatus, &x->diag);
	} else {
		struct prec_etm_ops ops = { .ctx = m, .stream = emu_stream, .aux = emu_aux,
					    .sideband = emu_record, .trig_off = emu_trig_off,
					    .sched = emu_sched };

		r = prec_etm_run(&x->etm, &ops, &x->wstatus, &x->diag);
	}
	pthread_mutex_lock(&m->lock);
	end_piece(m, 0, true, x->last_time); /* pieces whose record never came */
	all_idle(m, x->last_time);
	pthread_mutex_unlock(&m->lock);
	x->result = r;
	__atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
	prec_km_kick(m);
	return NULL;
}

static int t_prepare(void *ctx, char *const argv[], pid_t *pid, struct prec_diag *d)
{
	struct prec_kmodel *m = ctx;

	if (!argv || !argv[0])
		return prec_diag_set(d, -EINVAL, -1, "no program to run");
	m->emu->argv = argv;
	*pid = PREC_KMODEL_WORKLOAD_PID;
	return 0;
}

/* perf_event_enable_on_exec(): the workload's own events with enable_on_exec. */
static void enable_on_exec(struct prec_kmodel *m)
{
	size_t i;

	for (i = 0; i < m->nev; i++)
		if (m->ev[i].open && m->ev[i].task == PREC_KMODEL_WORKLOAD_PID &&
		    m->ev[i].attr.enable_on_exec)
			m->ev[i].enabled = true;
}

/*
 * The tracer's address filters, as perf_event_addr_filters_apply() gives them
 * to the PMU: the recorder sets the same ones on each of its tracer events,
 * so the first event's are the run's.
 */
static void address_filters(struct prec_kmodel *m)
{
	size_t i;

	for (i = 0; i < m->nev; i++) {
		if (!m->ev[i].open || !(m->ev[i].caps & PREC_KMODEL_CAP_AUX) || !m->ev[i].nfilt)
			continue;
		m->emu->pt.filters = m->emu->etm.filters = m->ev[i].filt;
		m->emu->pt.nfilters = m->emu->etm.nfilters = m->ev[i].nfilt;
		return;
	}
}

static int t_start(void *ctx, struct prec_diag *d)
{
	struct prec_kmodel *m = ctx;
	struct kemu *x = m->emu;
	int r;

	x->pt.argv = x->argv;
	x->etm.argv = x->argv;
	pthread_mutex_lock(&m->lock);
	enable_on_exec(m);
	prec_km_emu_sync(m);
	address_filters(m);
	pthread_mutex_unlock(&m->lock);
	x->start_ns = prec_now_ns();
	r = pthread_create(&x->thread, NULL, run_thread, m);
	if (r)
		return prec_diag_set(d, -r, -1, "cannot start the software tracer: %s", strerror(r));
	x->started = true;
	return 0;
}

static int t_wait(void *ctx, bool block, int *wstatus, struct prec_diag *d)
{
	struct prec_kmodel *m = ctx;
	struct kemu *x = m->emu;

	if (!x->started)
		return 1;
	if (!block && !__atomic_load_n(&x->done, __ATOMIC_ACQUIRE))
		return 0;
	pthread_join(x->thread, NULL);
	x->started = false;
	*wstatus = x->wstatus;
	if (x->result < 0) {
		if (d)
			*d = x->diag;
		return x->result;
	}
	return 1;
}

static void t_kill(void *ctx, int sig)
{
	struct prec_kmodel *m = ctx;
	struct kemu *x = m->emu;

	pthread_mutex_lock(&m->lock);
	if (x->started && !__atomic_load_n(&x->done, __ATOMIC_ACQUIRE)) {
		/*
		 * The whole-system tracer's workload is a process of the guest:
		 * its pid names nothing on this host. The guest's first process
		 * sends it the signal, told through the mailbox (emusys.h).
		 */
		if (x->main_pid && x->cfg.sys)
			prec_emusys_signal(&x->ctl, sig);
		else if (x->main_pid)
			kill(x->main_pid, sig);
		else
			x->pending_sig = sig;
	}
	pthread_mutex_unlock(&m->lock);
}

/*
 * When the workload began to run: the first record of it, the exec of the
 * guest's workload after the boot for the whole-system tracer. 0 before.
 */
static uint64_t t_started_at(void *ctx)
{
	struct prec_kmodel *m = ctx;

	return m->emu->cfg.sys ? __atomic_load_n(&m->emu->heard_ns, __ATOMIC_ACQUIRE) :
				 m->emu->start_ns;
}

/* @n bytes of @p at @off of @fd; 0 or -errno. */
static int pwrite_all(int fd, const void *p, size_t n, off_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p = (const char *)p + w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

/* A memory file holding @n bytes at @off and @n2 at @off2 (0: none); an fd or -errno. */
static int mem_file(const char *name, const void *p, size_t n, off_t off, const void *p2,
		    size_t n2, off_t off2)
{
	int fd = memfd_create(name, MFD_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = pwrite_all(fd, p, n, off);
	if (!err)
		err = pwrite_all(fd, p2, n2, off2);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/*
 * The guest kernel's text as /proc/kcore shows a kernel's memory: an ELF
 * core file with one PT_LOAD segment per range at its kernel virtual
 * address (fs/proc/kcore.c: read_kcore_iter() writes the ELF header and a
 * program header per kcore_list entry). Here one range: _stext.._etext.
 */
static int kcore_file(const struct prec_emusys_result *g)
{
	struct {
		Elf64_Ehdr eh;
		Elf64_Phdr ph;
	} h;
	const off_t data = 4096;

	memset(&h, 0, sizeof(h));
	memcpy(h.eh.e_ident, ELFMAG, SELFMAG);
	h.eh.e_ident[EI_CLASS] = ELFCLASS64;
	h.eh.e_ident[EI_DATA] = ELFDATA2LSB;
	h.eh.e_ident[EI_VERSION] = EV_CURRENT;
	h.eh.e_type = ET_CORE;
	h.eh.e_machine = EM_X86_64;
	h.eh.e_version = EV_CURRENT;
	h.eh.e_phoff = sizeof(h.eh);
	h.eh.e_ehsize = sizeof(h.eh);
	h.eh.e_phentsize = sizeof(h.ph);
	h.eh.e_phnum = 1;
	h.ph.p_type = PT_LOAD;
	h.ph.p_flags = PF_R | PF_W | PF_X;
	h.ph.p_offset = (uint64_t)data;
	h.ph.p_vaddr = g->ktext_addr;
	h.ph.p_filesz = h.ph.p_memsz = g->ktext_len;
	h.ph.p_align = 4096;
	return mem_file("kcore", &h, sizeof(h), 0, g->ktext, g->ktext_len, data);
}

/*
 * The model's /proc for the recorder (prec_kernel.proc_open): what the
 * whole-system run's guest left of its kernel. Its kallsyms; no modules
 * (the guest loads none); its kernel text as kcore. Nothing before the run
 * has ended.
 */
static int sys_proc_open(void *ctx, const char *name)
{
	struct prec_kmodel *m = ctx;
	const struct prec_emusys_result *g = &m->emu->guest;
	int fd = -ENOENT;

	pthread_mutex_lock(&m->lock);
	/* The vDSO is asked for when the workload's mappings arrive, at the end of the run. */
	if (!strcmp(name, "vdso") && g->vdso)
		fd = mem_file(name, g->vdso, g->vdso_len, 0, NULL, 0, 0);
	else if (!__atomic_load_n(&m->emu->done, __ATOMIC_ACQUIRE) || !g->ksyms)
		fd = -ENOENT;
	else if (!strcmp(name, "kallsyms"))
		fd = mem_file(name, g->ksyms, g->ksyms_len, 0, NULL, 0, 0);
	else if (!strcmp(name, "modules"))
		fd = mem_file(name, NULL, 0, 0, NULL, 0, 0);
	else if (!strcmp(name, "kcore") && g->ktext_len)
		fd = kcore_file(g);
	pthread_mutex_unlock(&m->lock);
	return fd;
}

static const struct prec_kernel_tasks emu_tasks = {
	.prepare = t_prepare,
	.start = t_start,
	.wait = t_wait,
	.kill = t_kill,
	.started_at = t_started_at,
};

int prec_kmodel_emulate(struct prec_kmodel *m, const struct prec_kmodel_emu *cfg)
{
	struct kemu *x = calloc(1, sizeof(*x));
	size_t i, nt;
	int err;

	if (!x)
		return -ENOMEM;
	m->emu = x;
	x->cpus = calloc((size_t)m->nr_cpus, sizeof(*x->cpus));
	if (!x->cpus)
		return -ENOMEM;
	x->cfg = *cfg;
	if (cfg->sys) {
		/* Its Intel PT terms, triggers and argv are the model's own copy. */
		x->sys = *cfg->sys;
		x->pt = *cfg->sys->pt;
		x->sys.pt = &x->pt;
		prec_emusys_ctl_init(&x->ctl);
		x->sys.ctl = &x->ctl;
	} else if (cfg->pt) {
		x->pt = *cfg->pt;
	}
	if (cfg->etm)
		x->etm = *cfg->etm;
	err = prec_kmodel_add_pmu(m, cfg->aux_type,
				  PREC_KMODEL_CAP_AUX | PREC_KMODEL_CAP_AUX_PAUSE);
	/*
	 * pt_pmu_hw_init(): nr_addr_filters from CPUID.(EAX=14H,ECX=1):EAX[2:0];
	 * etm_perf_init(): ETM_ADDR_CMP_MAX (8).
	 */
	if (!err)
		err = prec_kmodel_set_addr_filters(m, cfg->aux_type,
						   !cfg->etm ? prec_emu_cpu.cpuid_14_1[0] & 7 : 8,
						   cfg->etm != NULL);
	triggers(x, &nt);
	/* The triggers' PMUs: uprobes and counters (software and tracepoints are known). */
	for (i = 0; i < nt && !err; i++) {
		uint32_t type = cfg->trigger_attrs[i].type;
		size_t k;

		for (k = 0; k < m->npmus && m->pmus[k].type != type; k++)
			;
		if (k == m->npmus)
			err = prec_kmodel_add_pmu(m, type, 0);
	}
	m->k.tasks = &emu_tasks;
	if (cfg->sys)
		m->k.proc_open = sys_proc_open;
	return err;
}

void prec_km_emu_free(struct prec_kmodel *m)
{
	struct kemu *x = m->emu;
	int ws;

	if (!x)
		return;
	if (x->started) {
		t_kill(m, SIGKILL);
		t_wait(m, true, &ws, NULL);
	}
	prec_emusys_result_free(&x->guest);
	free(x->pend);
	free(x->execs);
	free(x->thr);
	free(x->cpus);
	free(x);
	m->emu = NULL;
}

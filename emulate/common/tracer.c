// SPDX-License-Identifier: MIT
/*
 * The core of the software tracers: threads, pause/resume, triggers,
 * ground truth, fork/exec/exit, and the QEMU plugin entry points. See
 * tracer.h; the tracer's packets come from its emu_arch hooks.
 */
#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <linux/futex.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "maps.h"
#include "tracer.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int qemu_plugin_version = EMU_QEMU_PLUGIN_VERSION;

#define TRUTH_FLUSH (12 * 1024)
/*
 * How long a thread waits for the model to give it its CPU while nothing
 * moves (neither its process's clock nor the model's scheduler) before it
 * runs anyway: the thread running there may be blocked on the host in a
 * call that is not known to wait (a write to a full pipe). The model keeps
 * it in its run queue and gives it its CPU when its turn comes. After
 * SCHED_NUDGE_NS without movement it lets one block run (sched_wait()).
 */
#define SCHED_PATIENCE_NS (2000ull * 1000 * 1000)
#define SCHED_NUDGE_NS (20ull * 1000 * 1000)

struct probe_hit {
	const struct emu_tb *tb;
	uint64_t vaddr;
	uint32_t idx;
	int ntrig;
	int trig[8];
};

pthread_mutex_t emu_lock = PTHREAD_MUTEX_INITIALIZER;

static int g_exec;            /* this instance was started by a guest execve */
static int g_exec_en, g_exec_taken;
static volatile int g_exiting;
static volatile int g_release; /* the process exits: no thread waits for a CPU */
static uint64_t g_insn0, g_auxoff0;
static int g_maps_done;
static struct emu_thr *g_thr[EMU_MAX_VCPUS];

static void sched_ask(struct emu_thr *t, uint32_t type);
static void sched_rewait(struct emu_thr *t);

/* ---- ground truth ------------------------------------------------------ */

/*
 * Sends the truth. The process may die anywhere here, also right after the
 * send: the message carries the slot's truth offset, and the slot forgets
 * what it committed before it moves the offset, so that ptrec never takes
 * the same lines from both the message and the slot (emu_proto.h, t_off).
 * The signal fences keep the compiler from reordering these stores.
 */
static void truth_flush(struct emu_thr *t)
{
	struct emu_slot *s = t->sl;
	uint64_t n = s->tlen;

	if (!n)
		return;
	emu_send(EMU_MSG_TRUTH, (uint32_t)t->tid, emu_slot_truth_arg(s), t->tbuf, n);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	s->c_tlen = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	s->t_off += n;
	s->tlen = 0;
}

void emu_truth(struct emu_thr *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!emu_cfg.truth)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->tbuf + t->sl->tlen, EMU_TRUTH_CAP - t->sl->tlen, fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < EMU_TRUTH_CAP - t->sl->tlen)
		t->sl->tlen += (size_t)n;
}

/* Plain stores: the reader looks only after the process is gone. */
void emu_slot_commit(struct emu_thr *t, uint64_t ip)
{
	struct emu_slot *s = t->sl;

	if (!s)
		return;
	s->c_pos = s->aux_off + s->len;
	s->c_tlen = s->tlen;
	s->c_held = s->held;
	s->c_nheld = s->nheld;
	s->c_state = s->state;
	s->c_sh_n = s->sh_n;
	if (ip) {
		s->ip = ip;
		s->c_done = t->cur ? t->cur_done : 0;
		s->c_ninsn = t->cur ? t->cur->ninsn : 0;
		s->c_end = t->cur ? t->cur->next : 0;
	}
	/* The truth goes out after the commit it belongs to. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (s->tlen > TRUTH_FLUSH)
		truth_flush(t);
}

/* ---- the stream -------------------------------------------------------- */

uint64_t emu_stream_pos(struct emu_thr *t)
{
	return t->aux_off + emu_arch.buffered(t);
}

void emu_stream_flush(struct emu_thr *t)
{
	size_t n = emu_arch.buffered(t);

	if (n) {
		emu_send(EMU_MSG_AUX, (uint32_t)t->tid, t->aux_off, t->buf, n);
		emu_sb_aux(t->tid, t->aux_off, n);
		t->aux_off += n;
		t->sl->aux_off = t->aux_off;
		t->sl->len = 0;
		emu_arch.drained(t);
	}
	truth_flush(t);
}

static void stream_init(struct emu_thr *t)
{
	t->aux_off = 0;
	t->sl->aux_off = 0;
	t->sl->len = 0;
	t->sl->tlen = 0;
	emu_arch.stream_init(t);
}

/* ---- tracing state machine -------------------------------------------- */

void emu_enter_kernel(struct emu_thr *t, uint64_t ip, enum emu_entry why)
{
	if (t->pkt_en)
		emu_arch.to_kernel(t, ip, why);
	t->pkt_en = 0;
	t->user = 0;
	t->sl->state = 0;
}

void emu_return_to_user(struct emu_thr *t, uint64_t ip)
{
	t->user = 1;
	if (!t->trace_en)
		return;
	switch (emu_arch.to_user(t, ip)) {
	case 1:
		t->pkt_en = 1;
		t->sl->state = EMU_SLOT_USER;
		break;
	case 2: /* packets held back by the tracer's address filters */
		t->pkt_en = 1;
		t->sl->state = EMU_SLOT_USER | EMU_SLOT_FILTERED;
		break;
	}
}

void emu_set_filtered(struct emu_thr *t, int out)
{
	t->filt_out = out;
	if (out)
		t->sl->state |= EMU_SLOT_FILTERED;
	else
		t->sl->state &= ~EMU_SLOT_FILTERED;
}

/* TraceEn changes; always called while the thread is "in the kernel". */
static void set_trace_en(struct emu_thr *t, int on, uint64_t ip)
{
	if (on == t->trace_en)
		return;
	t->trace_en = on;
	emu_truth(t, "%c %d %" PRIx64 " %" PRIu64 "\n", on ? 'R' : 'P', t->tid, ip, t->insns);
	emu_arch.trace_toggled(t, on);
}

/*
 * A counter trigger's overflows in the tick thr_tick[i] of this process's
 * clock; thr_off[i]: 1 + the tick in which trigger i's group was throttled.
 */
static pthread_mutex_t thr_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t thr_tick[EMU_MAX_TRIG], thr_n[EMU_MAX_TRIG], thr_off[EMU_MAX_TRIG];

/* perf_event_throttle_group(): the triggers of @ti's group stop for this tick. */
static void throttle_group(const struct emu_shm *h, int ti, uint64_t tick)
{
	uint32_t g = __atomic_load_n(&h->trig_group[ti], __ATOMIC_RELAXED);
	int i;

	for (i = 0; i < emu_cfg.ntrig && i < EMU_SHM_TRIGS; i++)
		if (i == ti || (g && __atomic_load_n(&h->trig_group[i], __ATOMIC_RELAXED) == g))
			thr_off[i] = tick + 1;
}

/*
 * Whether trigger @ti has no overflow now: its event counts nowhere, or its
 * group is throttled in this tick (the host's model says so), or it is an
 * instruction counter that had max_per_tick overflows in this tick already.
 * The last is the model's own rule (__perf_event_account_interrupt()), kept
 * here where the overflow happens, so that the max_per_tick-th overflow is
 * the last one whatever the latency of the model's flags; the model counts
 * the same samples and throttles at the same one.
 */
static int no_overflow(int ti)
{
	struct emu_shm *h = emu_proc.shm;
	uint64_t tick;
	uint32_t v;
	int off = 0;

	if (!h || ti >= EMU_SHM_TRIGS)
		return 0;
	v = __atomic_load_n(&h->trig_off[ti], __ATOMIC_ACQUIRE);
	if (v == EMU_TRIG_OFF)
		return 1;
	if (!h->tick_ns)
		return 0;
	tick = emu_now() / h->tick_ns;
	if (v != EMU_TRIG_ON && v == EMU_TRIG_THROTTLED(tick))
		return 1;
	if (!h->max_per_tick)
		return 0;
	pthread_mutex_lock(&thr_lock);
	if (thr_off[ti] == tick + 1) {
		off = 1;
	} else if (emu_cfg.trig[ti].kind == EMU_TK_INSNS) {
		if (thr_tick[ti] != tick) {
			thr_tick[ti] = tick;
			thr_n[ti] = 0;
		}
		/* The max_per_tick-th overflow still fires; it throttles the group. */
		if (++thr_n[ti] >= h->max_per_tick)
			throttle_group(h, ti, tick);
	}
	pthread_mutex_unlock(&thr_lock);
	return off;
}

/* Trigger @ti overflows: its sample, and its action on the trace. */
static void overflow(struct emu_thr *t, int ti, uint64_t ip, uint64_t period)
{
	struct emu_trig *tr = &emu_cfg.trig[ti];

	if (tr->action == EMU_ACT_SNAPSHOT) {
		/*
		 * A pause whose trace reaches the AUX area before the sample, as
		 * a CoreSight sink is flushed into it at a pause (the recorder
		 * takes its snapshot when it reads the sample).
		 */
		set_trace_en(t, 0, ip);
		emu_arch.flush_held(t);
		emu_stream_flush(t);
		emu_sb_sample(t->tid, tr->idx, ip, period);
		return;
	}
	emu_sb_sample(t->tid, tr->idx, ip, period);
	if (tr->action == EMU_ACT_PAUSE)
		set_trace_en(t, 0, ip);
	else if (tr->action == EMU_ACT_RESUME)
		set_trace_en(t, 1, ip);
}

/* Trigger @ti fires: no overflow (off or throttled) is no sample, no action. */
static void fire(struct emu_thr *t, int ti, uint64_t ip, uint64_t period)
{
	if (!no_overflow(ti))
		overflow(t, ti, ip, period);
}

/*
 * A trap into the kernel at @ip (uprobe, uretprobe, PMI) firing @n
 * triggers; the first @nchk are probes, which trap whether or not their
 * event counts, the rest counters whose overflow the caller has checked.
 */
static void trap(struct emu_thr *t, uint64_t ip, enum emu_entry why, const int *trig, int n,
		 int nchk, uint64_t period)
{
	int i;

	emu_enter_kernel(t, ip, why);
	for (i = 0; i < n; i++) {
		if (i < nchk)
			fire(t, trig[i], ip, period);
		else
			overflow(t, trig[i], ip, period);
	}
	emu_return_to_user(t, ip);
}

/* ---- threads ----------------------------------------------------------- */

static void thr_free(struct emu_thr *t)
{
	if (!t)
		return;
	if (emu_arch.thr_fini)
		emu_arch.thr_fini(t);
	emu_slot_release(t->sl);
	free(t);
}

static struct emu_thr *thr_new(void)
{
	struct emu_thr *t = calloc(1, emu_arch.thr_size);

	if (!t)
		return NULL;
	t->sl = emu_slot_claim();
	if (t->sl) {
		t->buf = t->sl->buf;
		t->tbuf = t->sl->tbuf;
		t->shadow = t->sl->shadow;
	}
	if (!t->sl || emu_arch.thr_init(t) < 0) {
		thr_free(t);
		return NULL;
	}
	return t;
}

static struct emu_thr *thr_of(unsigned vcpu)
{
	if (vcpu >= EMU_MAX_VCPUS)
		return NULL;
	if (!g_thr[vcpu])
		g_thr[vcpu] = thr_new();
	return g_thr[vcpu];
}

static void set_tid(struct emu_thr *t)
{
	t->tid = emu_gettid();
	/* Without it ptrec would not collect the slot of a process that dies. */
	t->sl->tid = (uint32_t)t->tid;
	if (emu_arch.tid_set)
		emu_arch.tid_set(t);
}

static void counters_arm(struct emu_thr *t)
{
	int i;

	for (i = 0; i < emu_cfg.ntrig; i++)
		if (emu_cfg.trig[i].kind == EMU_TK_INSNS)
			t->cnt_next[i] = t->insns + (uint64_t)emu_cfg.trig[i].arg;
}

/*
 * A new thread's FORK must come before its first trace, and QEMU runs the new
 * thread and its creator at the same time: whichever of the two gets here
 * first writes it (the new thread before its ITRACE_START, or the creator when
 * clone returns) and leaves the tid in the table; the second one takes it
 * out. So each FORK is written once and the table holds only threads one of
 * the two has yet to see.
 */
static pthread_mutex_t g_announce_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_announced[EMU_MAX_VCPUS];

static void announce_thread(int tid, int ptid)
{
	int i, free_slot = -1, seen = 0;

	pthread_mutex_lock(&g_announce_lock);
	for (i = 0; i < EMU_MAX_VCPUS; i++) {
		if (g_announced[i] == tid) {
			g_announced[i] = 0;
			seen = 1;
			break;
		}
		if (!g_announced[i] && free_slot < 0)
			free_slot = i;
	}
	if (!seen && free_slot >= 0)
		g_announced[free_slot] = tid;
	/*
	 * Written with the lock held: the second comer must not go on to its
	 * ITRACE_START before the first comer's FORK has been sent. (A full
	 * table writes the record anyway: twice is better than never.)
	 */
	if (!seen)
		emu_sb_task(PERF_RECORD_FORK, emu_proc.pid, emu_proc.pid, tid, ptid);
	pthread_mutex_unlock(&g_announce_lock);
}

/* The thread inside clone(CLONE_THREAD) that created the thread starting now. */
static int creator_of(const struct emu_thr *t)
{
	int i;

	for (i = 0; i < EMU_MAX_VCPUS; i++)
		if (g_thr[i] && g_thr[i] != t && __atomic_load_n(&g_thr[i]->cloning, __ATOMIC_ACQUIRE))
			return g_thr[i]->tid;
	return emu_proc.pid;
}

static void thread_begin(struct emu_thr *t, uint64_t ip)
{
	int cont = 0;

	set_tid(t);
	t->trace_en = !emu_cfg.start_paused;
	if (g_exec && !g_exec_taken && t->tid == emu_proc.pid) {
		/* The event, its stream and its pause state survive execve. */
		g_exec_taken = 1;
		cont = 1;
		t->trace_en = g_exec_en;
		t->insns = g_insn0;
		t->aux_off = g_auxoff0;
		t->sl->aux_off = g_auxoff0;
	}
	t->user = 0;
	t->pkt_en = 0;
	t->cur = NULL;
	if (!cont && t->tid != emu_proc.pid)
		announce_thread(t->tid, creator_of(t));
	/* Runnable since its FORK: it runs when the model gives it its CPU. */
	sched_ask(t, EMU_MSG_READY);
	emu_sb_itrace_start(t->tid);
	if (t->trace_en && !cont)
		emu_truth(t, "R %d %" PRIx64 " %" PRIu64 "\n", t->tid, ip, t->insns);
	counters_arm(t);
	if (t->trace_en)
		emu_arch.stream_start(t);
	emu_return_to_user(t, ip);
}

static void thread_end(struct emu_thr *t)
{
	if (!t || t->dead || !t->tid)
		return;
	/*
	 * A thread still in user code was killed with its process: where
	 * exactly is unknown, so the stream just ends (held packets go out).
	 */
	emu_arch.flush_held(t);
	emu_stream_flush(t);
	/*
	 * As the kernel's perf_event_task_output(): an EXIT names the task's
	 * real parent, for a thread as for its process: the parent process.
	 */
	emu_sb_task(PERF_RECORD_EXIT, emu_proc.pid, emu_proc.ppid, t->tid, emu_proc.ppid);
	t->dead = 1;
	/* Ended cleanly: nothing of it is left for ptrec to collect. */
	emu_slot_release(t->sl);
	t->sl = NULL;
}

static void all_threads_end(void)
{
	int i;

	for (i = 0; i < EMU_MAX_VCPUS; i++)
		if (g_thr[i] && g_thr[i]->tid)
			thread_end(g_thr[i]);
}

/* ---- the model's scheduler (emu_shm.run) ------------------------------- */

/* The word through which the model lets @t run, or NULL: @t is not held back. */
static uint32_t *run_word(const struct emu_thr *t)
{
	struct emu_shm *h = emu_proc.shm;

	if (!h || !t->sl || t->sl->index >= EMU_SHM_RUN ||
	    !__atomic_load_n(&h->sched_on, __ATOMIC_ACQUIRE))
		return NULL;
	return &h->run[t->sl->index];
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Changes whenever this process's clock or the model's scheduler moves. */
static uint64_t sched_moved(void)
{
	return __atomic_load_n(&emu_proc.clock, __ATOMIC_RELAXED) +
	       __atomic_load_n(&emu_proc.shm->sched_seq, __ATOMIC_RELAXED);
}

/*
 * Waits until the model puts @t on its CPU (its word in emu_shm.run goes
 * to 1). The thread waits inside QEMU's execution loop, where QEMU's
 * exclusive sections (a translation flush at the first clone, a guest
 * fork, an atomic step) wait for it in turn: when nothing moves for
 * SCHED_NUDGE_NS it lets one block run (still waiting: the next block's
 * callback waits again, and the model takes no message of a thread in its
 * run queue for a switch), so that QEMU gets the thread out of the loop.
 * When nothing moves for SCHED_PATIENCE_NS it runs on.
 */
static void sched_wait(struct emu_thr *t)
{
	uint32_t *w = run_word(t);

	while (w && !__atomic_load_n(w, __ATOMIC_ACQUIRE) && !g_release && !g_exiting &&
	       !emu_proc.broken) {
		struct timespec ts = { 0, 5 * 1000 * 1000 };
		uint64_t now;

		/* Shared with ptrec's mapping of the area: not FUTEX_PRIVATE_FLAG. */
		syscall(SYS_futex, w, FUTEX_WAIT, 0, &ts, NULL, 0);
		now = mono_ns();
		if (sched_moved() != t->want_moved) {
			t->want_moved = sched_moved();
			t->want_since = t->want_nudge = now;
		} else if (now - t->want_since > SCHED_PATIENCE_NS) {
			break;
		} else if (now - t->want_nudge > SCHED_NUDGE_NS) {
			t->want_nudge = now;
			return;
		}
	}
	t->want_cpu = 0;
	t->slice_end = w && emu_proc.shm->slice ? t->insns + emu_proc.shm->slice : 0;
}

/* The thread's next block runs: after a nudge, its own instructions moved the clock. */
static void sched_rewait(struct emu_thr *t)
{
	t->want_moved = sched_moved();
	sched_wait(t);
}

/*
 * Tells the model that @t wants its CPU (@type: EMU_MSG_READY, EMU_MSG_SLICE
 * or EMU_MSG_WOKEN), then waits until the model puts it there: the guest
 * threads of a CPU take turns, as the model's scheduler says. The word goes
 * to 0 before the message, so that the model's 1 can only be its answer.
 * Without the model's scheduler only EMU_MSG_WOKEN is sent.
 */
static void sched_ask(struct emu_thr *t, uint32_t type)
{
	uint32_t *w = run_word(t);
	uint32_t idx = t->sl ? t->sl->index : EMU_SLOT_PRIVATE;

	if (!w && type != EMU_MSG_WOKEN)
		return;
	if (w)
		__atomic_store_n(w, 0, __ATOMIC_SEQ_CST);
	emu_send(type, (uint32_t)t->tid, emu_now(), &idx, sizeof(idx));
	if (!w)
		return;
	t->want_cpu = 1;
	t->want_moved = sched_moved();
	t->want_since = t->want_nudge = mono_ns();
	sched_wait(t);
}

/*
 * The thread's time slice is over: it asks the model (EMU_MSG_TICK). Alone
 * on its CPU, it runs on into a new slice. Else its trace so far goes to
 * ptrec (the PT driver's pt_event_stop() at sched-out ends the AUX piece),
 * and it asks for its CPU again (EMU_MSG_SLICE): the model preempts it for
 * the thread that waits there.
 */
static void slice_over(struct emu_thr *t)
{
	uint32_t *w;

	sched_ask(t, EMU_MSG_TICK);
	w = run_word(t);
	if (!w || t->want_cpu || __atomic_load_n(w, __ATOMIC_ACQUIRE) != EMU_RUN_YIELD)
		return;
	emu_arch.flush_held(t);
	emu_stream_flush(t);
	emu_slot_commit(t, 0);
	sched_ask(t, EMU_MSG_SLICE);
}

/*
 * The process exits (exit_group): QEMU waits for all its threads to stop
 * before the atexit callback, so none may go on waiting for a CPU.
 */
static void sched_release_all(void)
{
	int i;

	g_release = 1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (i = 0; i < EMU_MAX_VCPUS; i++) {
		uint32_t *w = g_thr[i] ? run_word(g_thr[i]) : NULL;

		if (!w)
			continue;
		__atomic_store_n(w, EMU_RUN_GO, __ATOMIC_RELEASE);
		syscall(SYS_futex, w, FUTEX_WAKE, 1, NULL, NULL, 0);
	}
}

/* ---- instructions ------------------------------------------------------ */

void emu_account(struct emu_thr *t, uint32_t from, uint32_t to, uint64_t start, uint64_t end)
{
	if (to <= from)
		return;
	emu_truth(t, "B %d %" PRIx64 " %" PRIx64 " %u\n", t->tid, start, end, to - from);
	t->insns += to - from;
	t->sl->now = emu_proc.tsc0 +
		     __atomic_add_fetch(&emu_proc.clock, to - from, __ATOMIC_RELAXED);
	if (emu_arch.retired)
		emu_arch.retired(t);
	if (emu_arch.ran)
		emu_arch.ran(t, from, to);
}

void emu_finish_tb(struct emu_thr *t)
{
	const struct emu_tb *p = t->cur;

	if (!p)
		return;
	emu_account(t, t->cur_done, p->ninsn, t->cur_start, p->next);
	t->cur_done = p->ninsn;
}

/* ---- uretprobes --------------------------------------------------------- */

void emu_shadow_push(struct emu_thr *t, uint64_t ret)
{
	if (t->sh_n == EMU_SHADOW_DEPTH) {
		memmove(t->shadow, t->shadow + 1, (EMU_SHADOW_DEPTH - 1) * sizeof(*t->shadow));
		t->sh_n--;
	}
	t->shadow[t->sh_n].ret = ret;
	t->shadow[t->sh_n].uret = 0;
	t->sh_n++;
	t->sl->sh_n = t->sh_n;
}

uint64_t emu_shadow_ret(struct emu_thr *t, uint64_t target)
{
	uint64_t fired = 0;
	unsigned i = t->sh_n;

	while (i > 0 && t->shadow[i - 1].ret != target)
		i--;
	if (!i)
		return 0; /* not a return to a known frame: leave the stack */
	for (; t->sh_n >= i; t->sh_n--) {
		fired |= t->shadow[t->sh_n - 1].uret;
		if (t->sh_n == i) {
			t->sh_n--;
			break;
		}
	}
	t->sl->sh_n = t->sh_n;
	return fired;
}

static int mask_to_list(uint64_t m, int *out)
{
	int n = 0, i;

	for (i = 0; i < EMU_MAX_TRIG && m; i++)
		if (m & (1ull << i)) {
			out[n++] = i;
			m &= ~(1ull << i);
		}
	return n;
}

/* ---- execution callbacks ----------------------------------------------- */

static void on_tb(unsigned vcpu, void *ud)
{
	const struct emu_tb *b = ud;
	struct emu_thr *t = thr_of(vcpu);
	int fired[EMU_MAX_TRIG], nf = 0, nu, i;
	uint64_t uret = 0, period = 0;

	if (!t || t->dead || emu_proc.broken || g_exiting)
		return;
	if (t->want_cpu && t->tid)
		sched_rewait(t);
	if (!t->tid) {
		thread_begin(t, b->start);
	} else if (!t->cur) {
		if (!t->user)
			emu_return_to_user(t, b->start);
	} else {
		uint64_t expect = 0;

		switch (emu_arch.resolve(t, b->start, &expect, &uret)) {
		case EMU_REPEATED:
			t->cur = b;
			t->cur_start = b->start;
			t->cur_done = b->ninsn;
			t->sl->at = EMU_AT(0, b->start);
			emu_slot_commit(t, b->start);
			return;
		case EMU_EXPECTED:
			if (b->start != expect) {
				emu_enter_kernel(t, expect, EMU_ENTRY_INTERRUPT);
				emu_return_to_user(t, b->start);
			}
			break;
		}
	}
	if (uret)
		nf = mask_to_list(uret, fired);
	nu = nf;
	for (i = 0; i < emu_cfg.ntrig; i++) {
		uint64_t p = (uint64_t)emu_cfg.trig[i].arg;

		if (emu_cfg.trig[i].kind != EMU_TK_INSNS || t->insns < t->cnt_next[i])
			continue;
		while (t->cnt_next[i] <= t->insns)
			t->cnt_next[i] += p;
		/*
		 * A counter that is off or throttled raises no PMI: it is
		 * stopped (perf_event_throttle_group() calls pmu->stop() on the
		 * group, Linux 6.16+; before, the PMI handler stopped the event
		 * when perf_event_overflow() throttled it), so the trace goes
		 * on undisturbed.
		 */
		if (no_overflow(i))
			continue;
		fired[nf++] = i;
		period = p;
	}
	/* A uretprobe traps through a breakpoint, a counter by an interrupt. */
	if (nf)
		trap(t, b->start, nu ? EMU_ENTRY_BREAKPOINT : EMU_ENTRY_INTERRUPT, fired, nf, nu,
		     period ? period : 1);
	if (t->slice_end && t->insns >= t->slice_end)
		slice_over(t);
	emu_arch.periodic(t, b->start);
	t->cur = b;
	t->cur_start = b->start;
	t->cur_done = 0;
	t->sl->at = EMU_AT(0, b->start);
	emu_slot_commit(t, b->start);
}

/*
 * Before each instruction of a block but its first (on_tb() stands for
 * that): which instruction begins, for a process killed by it (emu_slot.at).
 * One store, so that it costs little: the slot's owner is the only writer.
 */
static void on_insn(unsigned vcpu, void *ud)
{
	struct emu_thr *t = vcpu < EMU_MAX_VCPUS ? g_thr[vcpu] : NULL;

	if (t && t->sl)
		t->sl->at = (uint64_t)(uintptr_t)ud;
}

static void on_probe(unsigned vcpu, void *ud)
{
	const struct probe_hit *h = ud;
	struct emu_thr *t = thr_of(vcpu);
	int fired[8], nf = 0, i;

	if (!t || t->dead || emu_proc.broken || g_exiting || t->cur != h->tb ||
	    t->cur_done > h->idx)
		return;
	if (h->idx > t->cur_done) {
		emu_account(t, t->cur_done, h->idx, t->cur_start, h->vaddr);
		t->cur_done = h->idx;
		t->cur_start = h->vaddr;
	}
	for (i = 0; i < h->ntrig; i++) {
		int ti = h->trig[i];

		if (emu_cfg.trig[ti].kind == EMU_TK_UPROBE)
			fired[nf++] = ti;
		else if (t->sh_n)
			t->shadow[t->sh_n - 1].uret |= 1ull << ti;
	}
	/* A uprobe is a breakpoint: the thread traps even if nothing fires. */
	trap(t, h->vaddr, EMU_ENTRY_BREAKPOINT, fired, nf, nf, 1);
	emu_slot_commit(t, h->vaddr);
}

/* ---- translation ------------------------------------------------------- */

static void on_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	struct qemu_plugin_insn *first, *last;
	struct emu_tb *b;

	if (!n || emu_proc.broken)
		return;
	first = qemu_plugin_tb_get_insn(tb, 0);
	last = qemu_plugin_tb_get_insn(tb, n - 1);
	emu_guest_base((uint64_t)(uintptr_t)qemu_plugin_insn_haddr(first),
		       qemu_plugin_insn_vaddr(first));
	if (!g_maps_done) {
		const char *bin = qemu_plugin_path_to_binary();

		g_maps_done = 1;
		if (!emu_proc.comm[0] && bin) {
			const char *base = strrchr(bin, '/');

			snprintf(emu_proc.comm, sizeof(emu_proc.comm), "%s", base ? base + 1 : bin);
		}
		emu_sb_comm(emu_gettid(), 1);
		emu_scan_initial_maps(emu_gettid());
	}
	b = calloc(1, emu_arch.tb_size);
	if (!b) {
		emu_proc.broken = 1;
		return;
	}
	b->start = qemu_plugin_insn_vaddr(first);
	b->last = qemu_plugin_insn_vaddr(last);
	b->next = b->last + qemu_plugin_insn_size(last);
	b->ninsn = (uint32_t)n;
	if (emu_arch.classify(tb, n, b) < 0) {
		free(b);
		emu_proc.broken = 1;
		return;
	}
	qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb, QEMU_PLUGIN_CB_NO_REGS, b);
	for (i = 1; i < n; i++) {
		struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);

		qemu_plugin_register_vcpu_insn_exec_cb(
			in, on_insn, QEMU_PLUGIN_CB_NO_REGS,
			(void *)(uintptr_t)EMU_AT(i, qemu_plugin_insn_vaddr(in)));
	}

	pthread_mutex_lock(&emu_lock);
	for (i = 0; emu_have_probes() && i < n; i++) {
		struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
		uint64_t va = qemu_plugin_insn_vaddr(in);
		struct probe_hit *h;
		int trig[8], nt = emu_probes_at(va, trig, 8);

		if (!nt)
			continue;
		h = calloc(1, sizeof(*h));
		if (!h)
			continue;
		h->tb = b;
		h->vaddr = va;
		h->idx = (uint32_t)i;
		h->ntrig = nt < 8 ? nt : 8;
		memcpy(h->trig, trig, (size_t)h->ntrig * sizeof(*trig));
		qemu_plugin_register_vcpu_insn_exec_cb(in, on_probe, QEMU_PLUGIN_CB_NO_REGS, h);
	}
	pthread_mutex_unlock(&emu_lock);
	if (emu_arch.translated)
		emu_arch.translated(tb, n, b);
}

/* ---- syscalls, fork, exec, exit --------------------------------------- */

static char *arg_escape(const char *s)
{
	size_t n = strlen(s), i, j = 0;
	char *o = malloc(2 * n + 1);

	if (!o)
		return NULL;
	for (i = 0; i < n; i++) {
		o[j++] = s[i];
		if (s[i] == ',')
			o[j++] = ',';
	}
	o[j] = 0;
	return o;
}

/* The first @r bytes of a file, @hdr, start a 64-bit ELF file for this machine. */
static int machine_elf(const char *hdr, int r)
{
	uint16_t mach;

	if (r < 20 || memcmp(hdr, ELFMAG, SELFMAG) || hdr[EI_CLASS] != ELFCLASS64)
		return 0;
	memcpy(&mach, hdr + 18, 2);
	return mach == emu_arch.elf_machine;
}

/*
 * The guest calls execve(). qemu-user would run the new program natively,
 * out of the tracer's sight, so run it under qemu with this plugin instead:
 * the process keeps its pid, descriptors and environment, as with a real
 * exec. If that exec fails, QEMU carries on with the guest's own execve,
 * which then fails or runs the program untraced.
 */
/*
 * Whether the guest's execve of @path can run under this qemu: a program for
 * this machine, or a script whose interpreter is (into @interp and @iarg).
 * @path is rewritten for /proc/self/exe as QEMU's execve does.
 */
static bool exec_target(char *path, size_t size, char *interp, char *iarg)
{
	char self[64], hdr[256];
	const char *bin = qemu_plugin_path_to_binary();
	char *p, *e;
	int fd, r;

	snprintf(self, sizeof(self), "/proc/%d/exe", emu_proc.pid);
	if (bin && (!strcmp(path, "/proc/self/exe") || !strcmp(path, self)))
		snprintf(path, size, "%s", bin);
	if (access(path, X_OK) < 0)
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	r = (int)pread(fd, hdr, sizeof(hdr) - 1, 0);
	close(fd);
	if (r < 4)
		return false;
	hdr[r] = 0;
	if (!memcmp(hdr, ELFMAG, SELFMAG))
		return machine_elf(hdr, r);
	if (hdr[0] != '#' || hdr[1] != '!')
		return false;
	p = hdr + 2;
	while (*p == ' ' || *p == '\t')
		p++;
	e = strchr(p, '\n');
	if (!e)
		return false;
	*e = 0;
	if (sscanf(p, "%255s %255[^\n]", interp, iarg) < 1)
		return false;
	if (!emu_arch.exec_check_interp)
		return true;
	/* Only an interpreter for this machine can run under this qemu. */
	fd = open(interp, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	r = (int)pread(fd, hdr, 20, 0);
	close(fd);
	return machine_elf(hdr, r);
}

/*
 * The guest's NULL-terminated pointer array at @gaddr (at most @max entries)
 * as host pointers into *@out (NULL-terminated, @extra more slots free);
 * its length into *@n. Returns -1 when unreadable or out of memory.
 */
static int guest_vector(uint64_t gaddr, size_t max, size_t extra, char ***out, size_t *n)
{
	size_t i, len = 0;
	uint64_t a;

	for (len = 0; gaddr && len < max; len++) {
		if (emu_guest_read(gaddr + 8 * len, &a, 8) < 0)
			return -1;
		if (!a)
			break;
	}
	*out = calloc(len + 1 + extra, sizeof(**out));
	if (!*out)
		return -1;
	for (i = 0; i < len; i++) {
		emu_guest_read(gaddr + 8 * i, &a, 8);
		(*out)[i] = emu_g2h(a);
	}
	*n = len;
	return 0;
}

/* The thread whose stream goes on after exec: the leader (tid = pid) takes over. */
static struct emu_thr *exec_leader(struct emu_thr *t)
{
	struct emu_thr *lead = t;
	size_t i;

	for (i = 0; t->tid != emu_proc.pid && i < EMU_MAX_VCPUS; i++)
		if (g_thr[i] && g_thr[i]->tid == emu_proc.pid && !g_thr[i]->dead)
			lead = g_thr[i];
	return lead;
}

static void do_exec(struct emu_thr *t, uint64_t gpath, uint64_t gargv, uint64_t genvp)
{
	char path[4096], interp[256] = "", iarg[256] = "";
	char **argv = NULL, **envp = NULL, **args = NULL;
	char popt[8192], *esc = NULL;
	struct emu_thr *lead;
	size_t nargv = 0, nenv = 0, i, k;
	const char *base;

	if (!emu_cfg.qemu || !emu_cfg.plugin || emu_guest_str(gpath, path, sizeof(path)) < 0)
		return;
	if (!exec_target(path, sizeof(path), interp, iarg))
		return;
	if (guest_vector(gargv, 4096, 0, &argv, &nargv) ||
	    guest_vector(genvp, 65536, 0, &envp, &nenv))
		goto out;
	args = calloc(nargv + 16, sizeof(*args));
	if (!args)
		goto out;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	esc = arg_escape(emu_cfg.plugin);
	if (!esc)
		goto out;
	emu_arch.flush_held(t);
	emu_stream_flush(t);
	/*
	 * After exec the thread is the thread-group leader (tid = pid) and
	 * its event goes on: continue the leader's stream, not this one.
	 */
	lead = exec_leader(t);
	snprintf(popt, sizeof(popt),
		 "%s,fd=%d,cfgfd=%d,shmfd=%d,exec=1,ppid=%d,en=%d,tsc0=%" PRIu64 ",insn0=%" PRIu64
		 ",auxoff=%" PRIu64 ",comm=%.15s",
		 esc, emu_proc.sock, emu_proc.cfgfd, emu_proc.shmfd, emu_proc.ppid, t->trace_en,
		 emu_now(),
		 lead->insns, lead == t ? t->aux_off : emu_stream_pos(lead), base);
	k = 0;
	args[k++] = emu_cfg.qemu;
	args[k++] = "-0";
	args[k++] = nargv ? argv[0] : path;
	args[k++] = "-plugin";
	args[k++] = popt;
	if (interp[0]) {
		args[k++] = interp;
		if (iarg[0])
			args[k++] = iarg;
	}
	args[k++] = path;
	for (i = 1; i < nargv; i++)
		args[k++] = argv[i];
	args[k] = NULL;
	emu_send(EMU_MSG_BYE, 0, __atomic_load_n(&emu_proc.clock, __ATOMIC_RELAXED), NULL, 0);
	fcntl(emu_proc.sock, F_SETFD, 0);
	fcntl(emu_proc.cfgfd, F_SETFD, 0);
	if (emu_proc.shmfd >= 0)
		fcntl(emu_proc.shmfd, F_SETFD, 0);
	execve(emu_cfg.qemu, args, envp);
	fcntl(emu_proc.sock, F_SETFD, FD_CLOEXEC);
	fcntl(emu_proc.cfgfd, F_SETFD, FD_CLOEXEC);
	if (emu_proc.shmfd >= 0)
		fcntl(emu_proc.shmfd, F_SETFD, FD_CLOEXEC);
out:
	free(esc);
	free(argv);
	free(envp);
	free(args);
}

static int is_fork(int64_t num)
{
	const struct emu_sysnr *s = &emu_arch.sys;

	return num == s->clone || num == s->clone3 || (s->fork >= 0 && num == s->fork) ||
	       (s->vfork >= 0 && num == s->vfork);
}

static bool listed(const int64_t *list, int64_t num)
{
	for (; list && *list >= 0; list++)
		if (*list == num)
			return true;
	return false;
}

/*
 * Whether syscall @num with arguments @a1, @a2 may put the thread to sleep:
 * the kernel's scheduler then takes it off the run queue (__schedule() with
 * prev->__state not TASK_RUNNING: block_task()) and the CPU runs another
 * task. Whether it does sleep depends on others (a futex's value, a pipe's
 * data), which the plugin cannot see without making every run different:
 * every such call counts as one that sleeps. A read of a regular file or
 * a directory does not count (its wait is for the disk, which the model
 * has not); futex counts for its waiting operations only.
 */
static bool may_wait(int64_t num, uint64_t a1, uint64_t a2)
{
	const struct emu_sysnr *s = &emu_arch.sys;
	struct stat st;

	if (num == s->futex) {
		/* FUTEX_WAIT, FUTEX_LOCK_PI, FUTEX_WAIT_BITSET, FUTEX_WAIT_REQUEUE_PI,
		 * FUTEX_LOCK_PI2 (include/uapi/linux/futex.h), FUTEX_PRIVATE_FLAG
		 * and FUTEX_CLOCK_REALTIME aside */
		unsigned op = (unsigned)a2 & 0x7f;

		return op == 0 || op == 6 || op == 9 || op == 11 || op == 13;
	}
	if (listed(s->waits, num))
		return true;
	if (!listed(s->reads, num))
		return false;
	/* qemu-user hands the guest's descriptors to the host's calls as they are */
	if (fstat((int)a1, &st) < 0)
		return false;
	return !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

/*
 * The thread enters a call that may sleep: its trace so far goes to the
 * host (the PT driver's pt_event_stop() at sched-out ends the AUX piece
 * with what the hardware wrote), then EMU_MSG_WAIT, so that the model
 * switches it out at this instant; EMU_MSG_WOKEN at the return. Called
 * after emu_slot_commit(): a process killed during the call (the others
 * asleep in it) leaves slots that agree with what was sent.
 */
static void wait_begin(struct emu_thr *t, int64_t num, uint64_t a1, uint64_t a2)
{
	const struct emu_sysnr *s = &emu_arch.sys;

	if (num == s->exit || num == s->exit_group || num == s->execve || num == s->execveat ||
	    !may_wait(num, a1, a2))
		return;
	emu_arch.flush_held(t);
	emu_stream_flush(t);
	emu_send(EMU_MSG_WAIT, (uint32_t)t->tid, emu_now(), NULL, 0);
	t->waiting = 1;
}

static void wait_end(struct emu_thr *t)
{
	if (!t->waiting)
		return;
	t->waiting = 0;
	/* Runnable again (try_to_wake_up()): it runs when the model gives it its CPU. */
	sched_ask(t, EMU_MSG_WOKEN);
}

static void on_syscall(qemu_plugin_id_t id, unsigned vcpu, int64_t num, uint64_t a1,
		       uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
		       uint64_t a7, uint64_t a8)
{
	const struct emu_sysnr *s = &emu_arch.sys;
	struct emu_thr *t = thr_of(vcpu);
	int i;

	if (!t || t->dead || !t->tid || emu_proc.broken)
		return;
	t->ret_ip = t->cur ? t->cur->next : 0;
	emu_finish_tb(t);
	t->cur = NULL;
	emu_enter_kernel(t, t->ret_ip, EMU_ENTRY_SYSCALL);
	t->sc_num = num;
	t->sc_args[0] = a1;
	t->sc_args[1] = a2;
	t->sc_args[2] = a3;
	t->sc_args[3] = a4;
	t->sc_args[4] = a5;
	t->sc_args[5] = a6;
	if ((num == s->clone && (a1 & CLONE_THREAD)) || num == s->clone3)
		__atomic_store_n(&t->cloning, 1, __ATOMIC_RELEASE);
	for (i = 0; i < emu_cfg.ntrig; i++)
		if (emu_cfg.trig[i].kind == EMU_TK_SYS_ENTER &&
		    (emu_cfg.trig[i].arg < 0 || emu_cfg.trig[i].arg == num))
			fire(t, i, t->ret_ip, 1);
	if (num == s->exit || num == s->exit_group) {
		/* The other threads end in on_atexit(), once QEMU has stopped them. */
		if (num == s->exit_group)
			sched_release_all();
		thread_end(t);
	} else if (num == s->execve) {
		do_exec(t, a1, a2, a3);
	} else if (num == s->execveat) {
		if ((int)a1 == AT_FDCWD && !a5)
			do_exec(t, a2, a3, a4);
	}
	emu_slot_commit(t, 0);
	/* after the commit: what the slot says of the thread matches the trace it sends */
	wait_begin(t, num, a1, a2);
}

/*
 * The forking thread's slot is its parent's (the shared area is shared
 * across fork): take one of the child's own, with the call stack.
 */
static void slot_after_fork(struct emu_thr *t)
{
	struct emu_slot *old = t->sl, *s = emu_slot_claim();

	if (!s) {
		emu_proc.broken = 1;
		return;
	}
	memcpy(s->shadow, old->shadow, t->sh_n * sizeof(*s->shadow));
	s->sh_n = t->sh_n;
	if (!emu_slot_shared(old))
		free(old);
	if (emu_arch.thr_fini)
		emu_arch.thr_fini(t);
	t->sl = s;
	t->buf = s->buf;
	t->tbuf = s->tbuf;
	t->shadow = s->shadow;
	if (emu_arch.thr_init(t) < 0)
		emu_proc.broken = 1;
}

static void child_after_fork(struct emu_thr *t)
{
	int i;
	int ptid = t->tid;

	emu_proc.ppid = emu_proc.pid;
	emu_proc.pid = getpid();
	/* The child counts its own instructions; its clock goes on. */
	emu_proc.tsc0 += emu_proc.clock;
	emu_proc.clock = 0;
	memset(g_announced, 0, sizeof(g_announced));
	/* Another thread may have held the lock at fork(): it does not exist here. */
	pthread_mutex_init(&g_announce_lock, NULL);
	/* Only the forking thread exists in the child; the others' copies go. */
	for (i = 0; i < EMU_MAX_VCPUS; i++)
		if (g_thr[i] && g_thr[i] != t)
			g_thr[i]->dead = 1;
	slot_after_fork(t);
	stream_init(t);
	set_tid(t);
	t->trace_en = !emu_cfg.start_paused;
	counters_arm(t);
	emu_send(EMU_MSG_HELLO, (uint32_t)t->tid, (uint64_t)emu_proc.pid, NULL, 0);
	emu_sb_task(PERF_RECORD_FORK, emu_proc.pid, emu_proc.ppid, t->tid, ptid);
	g_release = 0;
	sched_ask(t, EMU_MSG_READY);
	emu_sb_itrace_start(t->tid);
	if (t->trace_en) {
		emu_truth(t, "R %d %" PRIx64 " %" PRIu64 "\n", t->tid, t->ret_ip, t->insns);
		emu_arch.stream_start(t);
	}
}

/*
 * The guest reaped a child: how it ended goes to ptrec, which has no other
 * way to learn it for a process it did not start (a child killed by a signal
 * gets its PTREC_SIGNAL records from it). wait4() gives the status word,
 * waitid() a siginfo_t (si_pid at 16, si_status at 24 in both targets).
 */
static void report_reaped(int64_t num, int64_t ret, const uint64_t *args)
{
	int32_t pid = (int32_t)ret, st = 0, code = 0;

	if (num == emu_arch.sys.wait4 && ret > 0 && args[1]) {
		if (emu_guest_read(args[1], &st, 4) < 0)
			return;
	} else if (num == emu_arch.sys.waitid && ret == 0 && args[2]) {
		if (emu_guest_read(args[2] + 8, &code, 4) < 0 ||
		    emu_guest_read(args[2] + 16, &pid, 4) < 0 ||
		    emu_guest_read(args[2] + 24, &st, 4) < 0 || pid <= 0)
			return;
		/* CLD_EXITED 1, CLD_KILLED 2, CLD_DUMPED 3; stops and continues are not ends */
		if (code == 1)
			st = (st & 0xff) << 8;
		else if (code == 2 || code == 3)
			st = (st & 0x7f) | (code == 3 ? 0x80 : 0);
		else
			return;
	} else {
		return;
	}
	emu_send(EMU_MSG_REAPED, 0, EMU_REAPED_ARG(pid, st), NULL, 0);
}

static void on_syscall_ret(qemu_plugin_id_t id, unsigned vcpu, int64_t num, int64_t ret)
{
	const struct emu_sysnr *s = &emu_arch.sys;
	struct emu_thr *t = thr_of(vcpu);
	int i;

	if (!t || t->dead || !t->tid || emu_proc.broken)
		return;
	wait_end(t);
	__atomic_store_n(&t->cloning, 0, __ATOMIC_RELEASE);
	if (is_fork(num) && ret == 0 && getpid() != emu_proc.pid) {
		child_after_fork(t);
		if (emu_proc.broken)
			return;
	} else if (is_fork(num) && ret > 0) {
		uint64_t flags = t->sc_args[0];

		if (num == s->clone3 && emu_guest_read(t->sc_args[0], &flags, 8) < 0)
			flags = 0;
		/* A new process announces itself (child_after_fork), so that
		 * its FORK comes before any of its trace; a new thread is
		 * announced by whichever of it and its creator comes first. */
		if ((num == s->clone || num == s->clone3) && (flags & CLONE_THREAD))
			announce_thread((int)ret, t->tid);
	} else if (num == s->mmap && ret >= 0 && (uint64_t)ret < (1ull << 56) &&
		   (t->sc_args[2] & PROT_EXEC) && !(t->sc_args[3] & MAP_ANONYMOUS) &&
		   (int)t->sc_args[4] >= 0) {
		char lnk[64], path[4096];
		ssize_t n;

		snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", (int)t->sc_args[4]);
		n = readlink(lnk, path, sizeof(path) - 1);
		if (n > 0) {
			path[n] = 0;
			emu_new_exec_map(t->tid, (int)t->sc_args[4], path, (uint64_t)ret,
					 t->sc_args[1], t->sc_args[5], (uint32_t)t->sc_args[2],
					 (uint32_t)t->sc_args[3]);
		}
	} else if (num == s->wait4 || num == s->waitid) {
		report_reaped(num, ret, t->sc_args);
	} else if (num == s->prctl && t->sc_args[0] == 15 /* PR_SET_NAME */ && ret == 0) {
		char name[16];

		if (emu_guest_str(t->sc_args[1], name, sizeof(name)) == 0 || name[0]) {
			name[15] = 0;
			memcpy(emu_proc.comm, name, sizeof(emu_proc.comm));
			emu_sb_comm(t->tid, 0);
		}
	}
	for (i = 0; i < emu_cfg.ntrig; i++)
		if (emu_cfg.trig[i].kind == EMU_TK_SYS_EXIT &&
		    (emu_cfg.trig[i].arg < 0 || emu_cfg.trig[i].arg == num))
			fire(t, i, t->ret_ip, 1);
	emu_slot_commit(t, 0);
}

static void on_vcpu_init(qemu_plugin_id_t id, unsigned vcpu)
{
	if (vcpu >= EMU_MAX_VCPUS)
		return;
	/* A reused index belongs to a new thread. */
	thr_free(g_thr[vcpu]);
	g_thr[vcpu] = thr_new();
}

static void on_atexit(qemu_plugin_id_t id, void *ud)
{
	/*
	 * QEMU has unregistered our callbacks, but TBs translated earlier
	 * still call on_tb(): tell them to stop, and give threads that are
	 * inside one a moment to leave before their buffers are flushed.
	 */
	g_exiting = 1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	usleep(2000);
	all_threads_end();
	emu_send(EMU_MSG_BYE, 0, __atomic_load_n(&emu_proc.clock, __ATOMIC_RELAXED), NULL, 0);
}

/* ---- installation ------------------------------------------------------ */

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	const char *comm = NULL;
	int i;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strncmp(a, "fd=", 3))
			emu_proc.sock = atoi(a + 3);
		else if (!strncmp(a, "cfgfd=", 6))
			emu_proc.cfgfd = atoi(a + 6);
		else if (!strncmp(a, "shmfd=", 6))
			emu_proc.shmfd = atoi(a + 6);
		else if (!strncmp(a, "exec=", 5))
			g_exec = atoi(a + 5);
		else if (!strncmp(a, "ppid=", 5))
			emu_proc.ppid = atoi(a + 5);
		else if (!strncmp(a, "tsc0=", 5))
			emu_proc.tsc0 = strtoull(a + 5, NULL, 10);
		else if (!strncmp(a, "insn0=", 6))
			g_insn0 = strtoull(a + 6, NULL, 10);
		else if (!strncmp(a, "auxoff=", 7))
			g_auxoff0 = strtoull(a + 7, NULL, 10);
		else if (!strncmp(a, "en=", 3))
			g_exec_en = atoi(a + 3);
		else if (!strncmp(a, "comm=", 5))
			comm = a + 5;
	}
	emu_proc.pid = getpid();
	if (!g_exec)
		emu_proc.ppid = getppid();
	if (emu_proc.sock < 0 || emu_proc.cfgfd < 0 || fcntl(emu_proc.sock, F_GETFD) < 0 ||
	    fcntl(emu_proc.cfgfd, F_GETFD) < 0) {
		emu_proc.sock = -1;
		emu_error("started without its descriptors: run it through 'ptrec record --emulate'");
		return -1;
	}
	fcntl(emu_proc.sock, F_SETFD, FD_CLOEXEC);
	fcntl(emu_proc.cfgfd, F_SETFD, FD_CLOEXEC);
	if (emu_proc.shmfd >= 0 && fcntl(emu_proc.shmfd, F_SETFD, FD_CLOEXEC) < 0)
		emu_proc.shmfd = -1;
	if (emu_shm_map() < 0) {
		emu_error("the shared area from ptrec is not this plugin's: they come from different builds");
		return -1;
	}
	/* After an exec, this pid's slots were the old program's threads'. */
	if (g_exec)
		emu_slot_release_pid();
	if (!info || info->version.min > EMU_QEMU_PLUGIN_VERSION ||
	    info->version.cur < EMU_QEMU_PLUGIN_VERSION) {
		emu_error("QEMU plugin API version %d..%d does not include version %d that this "
			  "tracer was written for; use QEMU 7.2 (Debian 12 qemu-user)",
			  info ? info->version.min : -1, info ? info->version.cur : -1,
			  EMU_QEMU_PLUGIN_VERSION);
		return -1;
	}
	if (info->system_emulation || !info->target_name ||
	    strcmp(info->target_name, emu_arch.target)) {
		emu_error("the %s runs only under qemu-%s user mode (got %s)", emu_arch.name,
			  emu_arch.target, info->target_name ? info->target_name : "?");
		return -1;
	}
	if (emu_cfg_load(emu_proc.cfgfd, emu_arch.cfg_key, emu_arch.cfg_check) < 0)
		return -1;
	/* The guest binary is loaded after the plugins: name it later. */
	if (comm)
		snprintf(emu_proc.comm, sizeof(emu_proc.comm), "%s", comm);
	emu_send(EMU_MSG_HELLO, (uint32_t)emu_gettid(), (uint64_t)emu_proc.pid, NULL, 0);
	qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_trans);
	qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
	qemu_plugin_register_vcpu_syscall_ret_cb(id, on_syscall_ret);
	qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * The kernel's perf interface in user space (record/kmodel.h). Every rule
 * names the function of kernel/events/core.c or ring_buffer.c it follows;
 * the unit test (tests/unit/test_kmodel.c) asks the real kernel the same
 * questions where it can be asked here.
 */
#include <errno.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/array.h"
#include "record/kmodel.h"
#include "record/kmodel_int.h"

static struct kev *ev_of(struct prec_kmodel *m, int fd)
{
	size_t i = (size_t)((long)fd - PREC_KMODEL_FD0);

	if (fd < PREC_KMODEL_FD0 || i >= m->nev || !m->ev[i].open)
		return NULL;
	return &m->ev[i];
}

static const struct kpmu *pmu_of(struct prec_kmodel *m, uint32_t type)
{
	size_t i;

	for (i = 0; i < m->npmus; i++)
		if (m->pmus[i].type == type)
			return &m->pmus[i];
	return NULL;
}

static bool is_pow2(size_t n)
{
	return n && !(n & (n - 1));
}

/*
 * perf_get_aux_event(): an event that needs the AUX event (aux_output,
 * aux_sample_size, aux_pause, aux_resume: perf_need_aux_event()) must be in
 * a group whose leader is one; pause/resume need PERF_PMU_CAP_AUX_PAUSE on
 * the leader's PMU, aux_output the output-capable match, aux_sample_size a
 * snapshot-capable AUX leader. False makes perf_event_open() return EINVAL.
 */
static bool aux_event_ok(const struct prec_attr *a, const struct kev *leader)
{
	bool pause = a->aux_pause || a->aux_resume;

	if (!a->aux_output && !a->aux_sample_size && !pause)
		return true;
	if (!leader)
		return false;
	if (a->aux_output && a->aux_sample_size)
		return false;
	if (a->aux_output && !(leader->caps & PREC_KMODEL_CAP_AUX))
		return false;
	if (pause && !(leader->caps & PREC_KMODEL_CAP_AUX_PAUSE))
		return false;
	if (a->aux_sample_size && !(leader->caps & PREC_KMODEL_CAP_AUX))
		return false;
	return true;
}

/* The model's clock for time_enabled: CLOCK_MONOTONIC in ns. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The open events of the group led by event @li, leader first, in open order. */
#define for_each_in_group(m, li, e) \
	for ((e) = (m)->ev; (e) < (m)->ev + (m)->nev; (e)++) \
		if ((e)->open && (e)->leader == (li))

/*
 * Enables or disables @e (@on), keeping the enabled times of its group:
 * __perf_update_times() counts time only in the event's effective state
 * (__perf_effective_state(): a sibling of a leader that is off is off), so
 * every member's time is brought up to now before the state changes
 * (perf_event_update_sibling_time()). An event that left its context
 * stays off (_perf_event_enable()).
 */
static void set_enabled(struct prec_kmodel *m, struct kev *e, bool on)
{
	uint64_t t = now_ns();
	struct kev *x, *l = &m->ev[e->leader];

	for_each_in_group(m, e->leader, x) {
		if (x->counting)
			x->enabled_ns += t - x->enabled_at;
		x->enabled_at = t;
	}
	e->enabled = on && !e->exited;
	for_each_in_group(m, e->leader, x)
		x->counting = x->enabled && l->enabled;
}

/*
 * perf_copy_attr(): the checks of the attr itself, each EINVAL: reserved
 * bits, sample_type and read_format bits the kernel does not know,
 * inherit_thread without inherit, remove_on_exec with enable_on_exec, and
 * sigtrap without remove_on_exec. (A size below PERF_ATTR_SIZE_VER0 is
 * E2BIG; zero means the full size, as the seam's contract says.)
 */
static int copy_attr_checks(const struct prec_attr *a)
{
	if (a->size && a->size < 64)
		return -E2BIG;
	if (a->__reserved_1 || a->__reserved_2 || a->__reserved_3)
		return -EINVAL;
	if (a->sample_type & ~(PERF_SAMPLE_WEIGHT_STRUCT * 2 - 1))
		return -EINVAL; /* PERF_SAMPLE_MAX */
	if (a->read_format & ~(PERF_FORMAT_LOST * 2 - 1))
		return -EINVAL; /* PERF_FORMAT_MAX */
	if ((a->sample_type & PERF_SAMPLE_WEIGHT) && (a->sample_type & PERF_SAMPLE_WEIGHT_STRUCT))
		return -EINVAL;
	if (!a->inherit && a->inherit_thread)
		return -EINVAL;
	if (a->remove_on_exec && a->enable_on_exec)
		return -EINVAL;
	if (a->sigtrap && !a->remove_on_exec)
		return -EINVAL;
	return 0;
}

/*
 * The perf_event_open() syscall before it looks at the group: unknown
 * flags, perf_copy_attr(), a frequency above perf_event_max_sample_rate or
 * a period with bit 63 set, cgroup mode without a CPU (each EINVAL). Cgroup
 * events themselves are not modelled (EOPNOTSUPP).
 */
static int syscall_checks(struct prec_kmodel *m, const struct prec_attr *a, pid_t pid, int cpu,
			  unsigned long flags)
{
	const unsigned long all = PERF_FLAG_FD_NO_GROUP | PERF_FLAG_FD_OUTPUT |
				  PERF_FLAG_PID_CGROUP | PERF_FLAG_FD_CLOEXEC;
	int err;

	if (flags & ~all)
		return -EINVAL;
	err = copy_attr_checks(a);
	if (err)
		return err;
	if (a->freq ? a->sample_freq > m->lim.max_sample_rate : (a->sample_period >> 63) != 0)
		return -EINVAL;
	if ((flags & PERF_FLAG_PID_CGROUP) && (pid == -1 || cpu == -1))
		return -EINVAL;
	if (flags & PERF_FLAG_PID_CGROUP)
		return -EOPNOTSUPP;
	return 0;
}

/*
 * perf_event_alloc() up to perf_init_event() and after it: a CPU beyond
 * nr_cpu_ids, or no CPU and no task; sigtrap without a task; inherit with
 * PERF_SAMPLE_READ unless PERF_SAMPLE_TID gives per-thread values (each
 * EINVAL). Then the PMU of attr.type (ENOENT when none claims it) and the
 * aux_action checks in the order the kernel makes them.
 */
static int alloc_checks(struct prec_kmodel *m, const struct prec_attr *a, pid_t task, int cpu,
			unsigned *caps)
{
	const struct kpmu *p;

	if (cpu >= m->nr_cpus || cpu < -1 || (cpu == -1 && task == -1))
		return -EINVAL;
	if (a->sigtrap && task == -1)
		return -EINVAL;
	if (a->inherit && (a->sample_type & PERF_SAMPLE_READ) &&
	    !(a->sample_type & PERF_SAMPLE_TID))
		return -EINVAL;
	p = pmu_of(m, a->type);
	if (!p)
		return -ENOENT;
	*caps = p->caps;
	/* aux_output needs PERF_PMU_CAP_AUX_OUTPUT and no pause/resume. */
	if (a->aux_output &&
	    (!(p->caps & PREC_KMODEL_CAP_AUX_OUTPUT) || a->aux_pause || a->aux_resume))
		return -EOPNOTSUPP;
	if (a->aux_pause && a->aux_resume)
		return -EINVAL;
	/* aux_start_paused: the event's own PMU must be able to pause. */
	if (a->aux_start_paused && !(p->caps & PREC_KMODEL_CAP_AUX_PAUSE))
		return -EOPNOTSUPP;
	return 0;
}

/*
 * perf_event_set_clock(): CLOCK_MONOTONIC and CLOCK_MONOTONIC_RAW are NMI
 * safe; REALTIME, BOOTTIME and TAI only on a PMU that never runs in NMI
 * (PERF_PMU_CAP_NO_NMI); anything else is EINVAL.
 */
static int clock_check(const struct prec_attr *a, unsigned caps)
{
	if (!a->use_clockid)
		return 0;
	switch (a->clockid) {
	case CLOCK_MONOTONIC:
	case CLOCK_MONOTONIC_RAW:
		return 0;
	case CLOCK_REALTIME:
	case CLOCK_BOOTTIME:
	case CLOCK_TAI:
		return caps & PREC_KMODEL_CAP_NO_NMI ? 0 : -EINVAL;
	default:
		return -EINVAL;
	}
}

/* The event's clock as the kernel compares them (event->clock). */
static int clock_of(const struct prec_attr *a)
{
	return a->use_clockid ? a->clockid : -1;
}

/*
 * The group checks of the perf_event_open() syscall, in its order, each
 * EINVAL: no recursive hierarchy, the leader's clock, the same CPU, the
 * same context (task or CPU), only a leader may be exclusive or pinned,
 * and no two hardware-context PMUs in one group (a PMU with an AUX area is
 * one; software, tracepoint and uprobe events join any group).
 */
static int group_checks(const struct kev *leader, int li, const struct prec_attr *a,
			unsigned caps, pid_t task, int cpu)
{
	if (leader->leader != li)
		return -EINVAL;
	if (clock_of(&leader->attr) != clock_of(a))
		return -EINVAL;
	if (leader->cpu != cpu)
		return -EINVAL;
	if (leader->task != task)
		return -EINVAL;
	if (a->exclusive || a->pinned)
		return -EINVAL;
	if ((caps & PREC_KMODEL_CAP_AUX) && (leader->caps & PREC_KMODEL_CAP_AUX) &&
	    leader->attr.type != a->type)
		return -EINVAL;
	return 0;
}

/*
 * find_lively_task_by_vpid(): pid 0 is the caller, another must exist (ESRCH).
 * The workload the model runs itself (PREC_KMODEL_WORKLOAD_PID) exists in it.
 */
static int find_task(pid_t pid, pid_t *task)
{
	*task = pid == 0 ? (pid_t)syscall(SYS_gettid) : pid;
	if (pid == PREC_KMODEL_WORKLOAD_PID)
		return 0;
	if (pid > 0 && kill(pid, 0) && errno == ESRCH)
		return -ESRCH;
	if (pid < -1)
		return -ESRCH;
	return 0;
}

static int set_output(struct prec_kmodel *m, struct kev *e, int to_fd);

/* A new event in the table: its index, or -ENOMEM. */
static int new_event(struct prec_kmodel *m, const struct prec_attr *attr, unsigned caps,
		     pid_t task, int cpu, int li)
{
	struct kev *e;

	if (PREC_ARRAY_RESERVE(m->ev, m->nev, 1))
		return -ENOMEM;
	e = &m->ev[m->nev];
	memset(e, 0, sizeof(*e));
	e->open = true;
	e->attr = *attr;
	e->caps = caps;
	e->task = task;
	e->cpu = cpu;
	e->leader = li >= 0 ? li : (int)m->nev;
	e->ring = -1;
	e->id = ++m->next_id;
	e->paused = attr->aux_start_paused;
	m->nev++;
	set_enabled(m, e, !attr->disabled);
	return (int)(m->nev - 1);
}

/*
 * The perf_event_open() syscall in its order: syscall_checks(), the group
 * fd (perf_fget_light(): EBADF unless an event; PERF_FLAG_FD_OUTPUT makes
 * it the output event, PERF_FLAG_FD_NO_GROUP keeps it out of the group),
 * the task, identical inherit for a task event and its leader,
 * alloc_checks(), the clock, the group, SET_OUTPUT, perf_get_aux_event().
 */
static int m_open(void *ctx, struct prec_attr *attr, pid_t pid, int cpu, int group_fd,
		  unsigned long flags)
{
	struct prec_kmodel *m = ctx;
	struct kev *leader = NULL, *out = NULL;
	pid_t task = -1;
	unsigned caps = 0;
	int err, li = -1, oi = -1, i;

	err = syscall_checks(m, attr, pid, cpu, flags);
	if (err)
		return err;
	if (group_fd != -1) {
		leader = ev_of(m, group_fd);
		if (!leader)
			return -EBADF;
		if (flags & PERF_FLAG_FD_OUTPUT)
			out = leader;
		if (flags & PERF_FLAG_FD_NO_GROUP)
			leader = NULL;
	}
	li = leader ? (int)(leader - m->ev) : -1;
	oi = out ? (int)(out - m->ev) : -1;
	if (pid != -1) {
		err = find_task(pid, &task);
		if (err)
			return err;
	}
	if (task != -1 && leader && leader->attr.inherit != attr->inherit)
		return -EINVAL;
	err = alloc_checks(m, attr, task, cpu, &caps);
	if (!err)
		err = clock_check(attr, caps);
	if (!err && leader)
		err = group_checks(leader, li, attr, caps, task, cpu);
	if (err)
		return err;
	i = new_event(m, attr, caps, task, cpu, li);
	if (i < 0)
		return i;
	/* perf_event_set_output() of the new event; perf_get_aux_event(). */
	err = oi >= 0 ? set_output(m, &m->ev[i], PREC_KMODEL_FD0 + oi) : 0;
	if (!err && !aux_event_ok(attr, li >= 0 ? &m->ev[li] : NULL))
		err = -EINVAL;
	if (err) {
		m->nev--; /* the event never existed: its slot is the last */
		m->next_id--;
		return err;
	}
	return PREC_KMODEL_FD0 + i;
}

/*
 * perf_event_set_output(): EINVAL for the event itself, another CPU, a
 * per-task ring of another task, two AUX events of different PMUs, an event
 * that has its own mapping, or a target with no mapped ring.
 */
static int set_output(struct prec_kmodel *m, struct kev *e, int to_fd)
{
	struct kev *o;

	if (to_fd == -1) {
		if (e->mmaps)
			return -EINVAL;
		e->ring = -1;
		return 0;
	}
	/* _perf_ioctl(): the target must be a perf event. */
	o = ev_of(m, to_fd);
	if (!o)
		return -EBADF;
	if (o == e || o->cpu != e->cpu)
		return -EINVAL;
	if (o->cpu == -1 && o->task != e->task)
		return -EINVAL;
	if (o->attr.write_backward != e->attr.write_backward ||
	    o->attr.use_clockid != e->attr.use_clockid ||
	    (o->attr.use_clockid && o->attr.clockid != e->attr.clockid))
		return -EINVAL;
	if ((e->caps & PREC_KMODEL_CAP_AUX) && (o->caps & PREC_KMODEL_CAP_AUX) &&
	    o->attr.type != e->attr.type)
		return -EINVAL;
	/* "Can't redirect output if we've got an active mmap()". */
	if (e->mmaps)
		return -EINVAL;
	/* ring_buffer_get() of the target, and its mmap_count. */
	if (o->ring < 0 || !m->rings[o->ring].maps)
		return -EINVAL;
	e->ring = o->ring;
	return 0;
}

static void set_group_enabled(struct prec_kmodel *m, int li, bool on)
{
	struct kev *e;

	for_each_in_group(m, li, e)
		set_enabled(m, e, on);
}

/*
 * perf_event_set_filter() on an AUX PMU: perf_event_set_addr_filter() parses
 * the string (perf_event_parse_addr_filter(): file filters only in per-task
 * events, EOPNOTSUPP; a path that is not a regular file, EINVAL), then the
 * PMU validates it; a PMU without address filters (!has_addr_filter()) and
 * no tracepoint gets EINVAL. Tracepoint filters are not modelled.
 */
static int set_filter(struct prec_kmodel *m, struct kev *e, const char *text)
{
	const struct kpmu *p = pmu_of(m, e->attr.type);
	struct prec_addr_filter *f;
	struct stat st;
	unsigned ranges = 0;
	bool range = false, address = false;
	int n, i, err = 0;

	if (!p || !p->nr_addr_filters)
		return -EINVAL;
	n = prec_addr_filters_parse(text, e->attr.exclude_kernel, &f);
	if (n < 0)
		return n;
	/* The parser's checks come first, for every filter... */
	for (i = 0; i < n && !err; i++) {
		if (f[i].path && e->task == -1)
			err = -EOPNOTSUPP;
		else if (f[i].path && stat(f[i].path, &st))
			err = -errno;
		else if (f[i].path && !S_ISREG(st.st_mode))
			err = -EINVAL;
	}
	/*
	 * ... then the PMU's. etm_addr_filters_validate() (coresight-etm-perf.c):
	 * at most ETM_ADDR_CMP_MAX, a range is a 'filter', a single address a
	 * 'start' or 'stop', not both kinds together.
	 * pt_event_addr_filters_validate() (arch/x86/events/intel/pt.c): no
	 * single addresses, no 'start', at most num_address_ranges.
	 */
	for (i = 0; i < n && !err; i++) {
		if (f[i].size)
			range = true;
		else
			address = true;
		if (++ranges > p->nr_addr_filters)
			err = -EOPNOTSUPP;
		else if (p->etm_filters && ((f[i].size && f[i].action != PREC_AF_FILTER) ||
					    (range && address)))
			err = -EOPNOTSUPP;
		else if (!p->etm_filters && (!f[i].size || f[i].action == PREC_AF_START))
			err = -EOPNOTSUPP;
		/* The software tracers implement include ranges, not TraceStop or start/stop. */
		else if (f[i].action != PREC_AF_FILTER)
			err = -EOPNOTSUPP;
	}
	if (err) {
		prec_addr_filters_free(f, n);
		return err;
	}
	prec_addr_filters_free(e->filt, e->nfilt);
	e->filt = f;
	e->nfilt = n;
	return 0;
}

static int m_ioctl(void *ctx, int fd, unsigned long req, uintptr_t arg)
{
	struct prec_kmodel *m = ctx;
	struct kev *e = ev_of(m, fd);

	if (!e)
		return -EBADF;
	/* _perf_ioctl() */
	switch (req) {
	case PERF_EVENT_IOC_ENABLE:
	case PERF_EVENT_IOC_DISABLE:
		/* perf_event_for_each(): PERF_IOC_FLAG_GROUP is the event's whole group. */
		if (arg & PERF_IOC_FLAG_GROUP)
			set_group_enabled(m, e->leader, req == PERF_EVENT_IOC_ENABLE);
		else
			set_enabled(m, e, req == PERF_EVENT_IOC_ENABLE);
		/* event_sched_out() -> pmu->del() -> pmu->stop(PERF_EF_UPDATE) of a tracer. */
		if (req == PERF_EVENT_IOC_DISABLE && (e->caps & PREC_KMODEL_CAP_AUX))
			prec_km_emu_stop(m, e);
		return 0;
	case PERF_EVENT_IOC_ID:
		*(uint64_t *)arg = e->id;
		return 0;
	case PERF_EVENT_IOC_SET_OUTPUT:
		return set_output(m, e, (int)(intptr_t)arg);
	case PERF_EVENT_IOC_PAUSE_OUTPUT:
		/* _perf_ioctl(): no ring (event->rb) or one without data pages. */
		if (e->ring < 0 || !m->rings[e->ring].data_pages)
			return -EINVAL;
		/* rb_toggle_paused(): the ring's, for every event writing to it. */
		m->rings[e->ring].paused = arg != 0;
		return 0;
	case PERF_EVENT_IOC_SET_FILTER:
		return set_filter(m, e, (const char *)arg);
	default:
		return -ENOTTY;
	}
}

static int new_ring(struct prec_kmodel *m)
{
	if (PREC_ARRAY_RESERVE(m->rings, m->nrings, 1))
		return -ENOMEM;
	memset(&m->rings[m->nrings], 0, sizeof(m->rings[0]));
	return (int)m->nrings++;
}

static void *zpages(struct prec_kmodel *m, size_t len)
{
	void *p;

	if (posix_memalign(&p, (size_t)m->page, len))
		return NULL;
	memset(p, 0, len);
	return p;
}

/*
 * perf_mmap_calc_limits(): a new mapping of @user_extra pages is charged to
 * the user's locked_vm up to perf_event_mlock_kb per online CPU, the rest
 * (*@extra) to the process's pinned_vm, which RLIMIT_MEMLOCK bounds unless
 * perf_event_paranoid is -1 or the caller has CAP_IPC_LOCK. False means
 * perf_mmap() returns EPERM.
 */
static bool mlock_ok(struct prec_kmodel *m, uint64_t *user_extra, uint64_t *extra)
{
	uint64_t limit = m->lim.mlock_kb / ((uint64_t)m->page / 1024) * (uint64_t)m->nr_cpus;
	uint64_t locked = m->locked_vm < limit ? m->locked_vm : limit;
	uint64_t lock_limit = m->lim.memlock_bytes / (uint64_t)m->page;

	*extra = 0;
	locked += *user_extra;
	if (locked > limit) {
		*extra = locked - limit;
		*user_extra -= *extra;
	}
	return m->pinned_vm + *extra <= lock_limit || m->lim.paranoid <= -1 || m->lim.cap_ipc_lock;
}

/* perf_mmap_account() */
static void mlock_charge(struct prec_kmodel *m, uint64_t user_extra, uint64_t extra)
{
	m->locked_vm += user_extra;
	m->pinned_vm += extra;
}

/*
 * perf_mmap() at offset 0: the control page and 2^n data pages (or the
 * control page alone); an event that already has a ring maps it again only
 * at its size. ring_buffer_init() fills the control page.
 */
static int map_data(struct prec_kmodel *m, struct kev *e, size_t len, void **addr)
{
	size_t pages = len / (size_t)m->page;
	size_t nr = pages - 1;
	struct kring *r;
	int ri;

	uint64_t user_extra = nr + 1, extra;

	if (!pages || len % (size_t)m->page || (nr && !is_pow2(nr)))
		return -EINVAL;
	if (e->ring >= 0 && m->rings[e->ring].maps) {
		r = &m->rings[e->ring];
		if (r->data_pages != nr)
			return -EINVAL;
		r->maps++;
		e->mmaps++;
		*addr = r->base;
		return 0;
	}
	if (!mlock_ok(m, &user_extra, &extra))
		return -EPERM;
	ri = new_ring(m);
	if (ri < 0)
		return ri;
	r = &m->rings[ri];
	r->base = zpages(m, len);
	if (!r->base)
		return -ENOMEM;
	r->data_pages = nr;
	r->maps = 1;
	r->mmap_locked = extra;
	mlock_charge(m, user_extra, extra);
	e->ring = ri;
	e->mmaps++;
	{
		struct perf_event_mmap_page *pg = r->base;

		/* perf_event_init_userpage() */
		pg->cap_bit0_is_deprecated = 1;
		pg->size = offsetof(struct perf_event_mmap_page, __reserved);
		pg->data_offset = (uint64_t)m->page;
		pg->data_size = nr * (uint64_t)m->page;
	}
	prec_km_ring_init(m, r, e);
	*addr = r->base;
	return 0;
}

/*
 * perf_mmap() at a non-zero offset, the AUX area (EINVAL unless each
 * holds): the data ring is mapped; the control page's aux_offset is at or
 * after the end of the data ring and is this offset; aux_size is this
 * length; 2^n pages; a second mapping matches the first. Then
 * rb_alloc_aux(): a PMU without an AUX area is EOPNOTSUPP.
 */
static int map_aux(struct prec_kmodel *m, struct kev *e, size_t len, off_t off, int prot,
		   void **addr)
{
	struct kring *r = e->ring >= 0 ? &m->rings[e->ring] : NULL;
	const struct perf_event_mmap_page *pg;
	size_t pages = len / (size_t)m->page;
	uint64_t user_extra, extra;

	if (!r || !r->maps)
		return -EINVAL;
	pg = r->base;
	if (pg->aux_offset < (r->data_pages + 1) * (uint64_t)m->page ||
	    pg->aux_offset != (uint64_t)off || pg->aux_size != len || len % (size_t)m->page)
		return -EINVAL;
	if (r->aux_maps && r->aux_pages != pages)
		return -EINVAL;
	if (!is_pow2(pages))
		return -EINVAL;
	if (r->aux_maps) {
		r->aux_maps++;
		*addr = r->aux;
		return 0;
	}
	user_extra = pages;
	if (!mlock_ok(m, &user_extra, &extra))
		return -EPERM;
	if (!(e->caps & PREC_KMODEL_CAP_AUX))
		return -EOPNOTSUPP;
	r->aux = zpages(m, len);
	if (!r->aux)
		return -ENOMEM;
	r->aux_pages = pages;
	r->aux_maps = 1;
	/* perf_mmap(): no VM_WRITE, no RING_BUFFER_WRITABLE: rb_alloc_aux() in overwrite mode. */
	r->aux_overwrite = !(prot & PROT_WRITE);
	r->aux_mmap_locked = extra;
	mlock_charge(m, user_extra, extra);
	prec_km_aux_init(m, r, e);
	*addr = r->aux;
	return 0;
}

static int m_mmap(void *ctx, int fd, size_t len, off_t off, int prot, void **addr)
{
	struct prec_kmodel *m = ctx;
	struct kev *e = ev_of(m, fd);

	if (!e)
		return -EBADF;
	/* perf_mmap(): no mapping of an inherited per-task event. */
	if (e->cpu == -1 && e->attr.inherit)
		return -EINVAL;
	if (off < 0 || off % m->page)
		return -EINVAL;
	return off ? map_aux(m, e, len, off, prot, addr) : map_data(m, e, len, addr);
}

/*
 * perf_mmap_close(): the last unmap of the data ring detaches the ring from
 * every event that wrote to it (ring_buffer_attach(event, NULL)).
 */
static int m_munmap(void *ctx, void *addr, size_t len)
{
	struct prec_kmodel *m = ctx;
	size_t i, k;

	(void)len;
	for (i = 0; i < m->nrings; i++) {
		struct kring *r = &m->rings[i];

		if (r->aux && r->aux == addr) {
			if (--r->aux_maps == 0) {
				/* perf_mmap_close(): undo the AUX area's charge. */
				m->locked_vm -= r->aux_pages - r->aux_mmap_locked;
				m->pinned_vm -= r->aux_mmap_locked;
				free(r->aux);
				r->aux = NULL;
				r->aux_pages = 0;
			}
			return 0;
		}
		if (!r->base || r->base != addr)
			continue;
		/* The model does not tie a mapping to its fd: the first mapper pays. */
		for (k = 0; k < m->nev; k++)
			if (m->ev[k].ring == (int)i && m->ev[k].mmaps) {
				m->ev[k].mmaps--;
				break;
			}
		if (--r->maps == 0) {
			m->locked_vm -= r->data_pages + 1 - r->mmap_locked;
			m->pinned_vm -= r->mmap_locked;
			free(r->base);
			r->base = NULL;
			for (k = 0; k < m->nev; k++)
				if (m->ev[k].ring == (int)i)
					m->ev[k].ring = -1;
		}
		return 0;
	}
	return -EINVAL;
}

/*
 * perf_poll(): POLLIN once the ring of the event had a wakeup
 * (perf_output_wakeup() sets rb->poll; reading it clears it); POLLHUP for
 * an event without a ring. The model's
 * fds are answered here, the others by the real poll(2), which also waits
 * on the model's eventfd, so a wakeup ends the wait.
 */
static int poll_ready(struct prec_kmodel *m, struct pollfd *fds, size_t n)
{
	int ready = 0;
	size_t i;

	pthread_mutex_lock(&m->lock);
	for (i = 0; i < n; i++) {
		struct kev *e = fds[i].fd >= PREC_KMODEL_FD0 ? ev_of(m, fds[i].fd) : NULL;

		fds[i].revents = 0;
		if (fds[i].fd < PREC_KMODEL_FD0)
			continue;
		if (!e) {
			fds[i].revents = fds[i].fd >= 0 ? POLLNVAL : 0;
		} else if (e->hup || e->ring < 0 || !m->rings[e->ring].base) {
			/*
			 * perf_poll(): EPOLLHUP for an event whose task exited
			 * (is_event_hup()) or that has no ring buffer (event->rb).
			 */
			fds[i].revents = POLLHUP;
		} else if (m->rings[e->ring].ready) {
			fds[i].revents = (short)(fds[i].events & POLLIN);
			m->rings[e->ring].ready = false;
		}
		ready += fds[i].revents != 0;
	}
	pthread_mutex_unlock(&m->lock);
	return ready;
}

static int m_poll(void *ctx, struct pollfd *fds, size_t n, int timeout_ms)
{
	struct prec_kmodel *m = ctx;
	struct pollfd *real = calloc(n + 1, sizeof(*real));
	size_t i, j = 0;
	int r, mine;

	if (!real)
		return -ENOMEM;
	mine = poll_ready(m, fds, n);
	for (i = 0; i < n; i++)
		if (fds[i].fd < PREC_KMODEL_FD0)
			real[j++] = fds[i];
	real[j].fd = m->wake_fd;
	real[j].events = POLLIN;
	r = poll(real, (nfds_t)j + 1, mine ? 0 : timeout_ms);
	if (r >= 0 && (real[j].revents & POLLIN)) {
		uint64_t v;

		if (read(m->wake_fd, &v, sizeof(v)) < 0) {
			/* another wakeup is on its way */
		}
		r--;
		if (!mine)
			mine = poll_ready(m, fds, n);
	}
	for (i = 0, j = 0; i < n; i++)
		if (fds[i].fd < PREC_KMODEL_FD0)
			fds[i].revents = real[j++].revents;
	free(real);
	return r < 0 ? -errno : r + mine;
}

/* The event's enabled time so far (ns). */
static uint64_t enabled_time(const struct kev *e)
{
	return e->enabled_ns + (e->counting ? now_ns() - e->enabled_at : 0);
}

/*
 * perf_read(): ENOSPC below the event's read size (__perf_event_read_size());
 * then perf_read_one(), or perf_read_group() for PERF_FORMAT_GROUP (the
 * leader's times, then value/id/lost of the leader and each sibling in the
 * order they joined). Counts are zero (no PMU produces yet); the times are
 * the time each event spent enabled (the model does not multiplex:
 * time_running is time_enabled).
 */
size_t prec_km_read_values(struct prec_kmodel *m, const struct kev *e, uint64_t *v, size_t size)
{
	const struct kev *s, *l;
	uint64_t rf;
	size_t entry, need, nr = 0, n = 0;

	rf = e->attr.read_format;
	l = &m->ev[e->leader];
	for_each_in_group(m, e->leader, s)
		nr++;
	entry = 8 * (1 + !!(rf & PERF_FORMAT_ID) + !!(rf & PERF_FORMAT_LOST));
	need = 8 * (!!(rf & PERF_FORMAT_TOTAL_TIME_ENABLED) + !!(rf & PERF_FORMAT_TOTAL_TIME_RUNNING));
	need += rf & PERF_FORMAT_GROUP ? 8 + nr * entry : entry;
	if (size < need)
		return 0;
	if (!(rf & PERF_FORMAT_GROUP))
		l = e;
	v[n++] = rf & PERF_FORMAT_GROUP ? nr : 0; /* the group's size, or the value */
	if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
		v[n++] = enabled_time(l);
	if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
		v[n++] = enabled_time(l);
	for_each_in_group(m, e->leader, s) {
		if (!(rf & PERF_FORMAT_GROUP) && s != e)
			continue;
		if (rf & PERF_FORMAT_GROUP)
			v[n++] = 0; /* value */
		if (rf & PERF_FORMAT_ID)
			v[n++] = s->id;
		if (rf & PERF_FORMAT_LOST)
			v[n++] = __atomic_load_n(&s->lost_samples, __ATOMIC_RELAXED);
	}
	return need;
}

static ssize_t m_read(void *ctx, int fd, void *buf, size_t size)
{
	struct prec_kmodel *m = ctx;
	const struct kev *e = ev_of(m, fd);
	size_t n;

	if (!e)
		return -EBADF;
	n = prec_km_read_values(m, e, buf, size);
	return n ? (ssize_t)n : -ENOSPC;
}

/*
 * perf_group_detach() of @e, which stops (off for good): a member leaves its
 * group; a leader's members each become a group of their own, keeping their
 * state.
 */
static void detach(struct prec_kmodel *m, struct kev *e)
{
	int li = (int)(e - m->ev);
	struct kev *x;

	set_enabled(m, e, false); /* brings the group's times up to now */
	e->exited = true;
	e->leader = li;
	for_each_in_group(m, li, x) {
		x->leader = (int)(x - m->ev);
		x->counting = x->enabled;
	}
}

/* perf_release(): mappings outlive the fd (perf_mmap_close() frees them). */
static int m_close(void *ctx, int fd)
{
	struct prec_kmodel *m = ctx;
	struct kev *e = ev_of(m, fd);

	if (!e)
		return -EBADF;
	detach(m, e);
	e->open = false;
	return 0;
}

/* The table: every syscall under the model's lock (the producer runs beside). */
static int l_open(void *ctx, struct prec_attr *attr, pid_t pid, int cpu, int group_fd,
		  unsigned long flags)
{
	struct prec_kmodel *m = ctx;
	int r;

	pthread_mutex_lock(&m->lock);
	r = m_open(ctx, attr, pid, cpu, group_fd, flags);
	prec_km_emu_sync(m);
	pthread_mutex_unlock(&m->lock);
	return r;
}

static int l_ioctl(void *ctx, int fd, unsigned long req, uintptr_t arg)
{
	struct prec_kmodel *m = ctx;
	int r;

	pthread_mutex_lock(&m->lock);
	r = m_ioctl(ctx, fd, req, arg);
	prec_km_emu_sync(m);
	pthread_mutex_unlock(&m->lock);
	return r;
}

static int l_mmap(void *ctx, int fd, size_t len, off_t off, int prot, void **addr)
{
	struct prec_kmodel *m = ctx;
	int r;

	pthread_mutex_lock(&m->lock);
	r = m_mmap(ctx, fd, len, off, prot, addr);
	pthread_mutex_unlock(&m->lock);
	return r;
}

static int l_munmap(void *ctx, void *addr, size_t len)
{
	struct prec_kmodel *m = ctx;
	int r;

	pthread_mutex_lock(&m->lock);
	r = m_munmap(ctx, addr, len);
	pthread_mutex_unlock(&m->lock);
	return r;
}

static ssize_t l_read(void *ctx, int fd, void *buf, size_t size)
{
	struct prec_kmodel *m = ctx;
	ssize_t r;

	pthread_mutex_lock(&m->lock);
	r = m_read(ctx, fd, buf, size);
	pthread_mutex_unlock(&m->lock);
	return r;
}

static int l_close(void *ctx, int fd)
{
	struct prec_kmodel *m = ctx;
	int r;

	pthread_mutex_lock(&m->lock);
	r = m_close(ctx, fd);
	prec_km_emu_sync(m);
	pthread_mutex_unlock(&m->lock);
	return r;
}

struct kev *prec_km_ev(struct prec_kmodel *m, int fd)
{
	return ev_of(m, fd);
}

struct prec_kmodel *prec_kmodel_new(int nr_cpus)
{
	struct prec_kmodel *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->nr_cpus = nr_cpus > 0 ? nr_cpus : (int)sysconf(_SC_NPROCESSORS_CONF);
	m->page = sysconf(_SC_PAGESIZE);
	m->k = (struct prec_kernel){ "model", m, l_open, l_ioctl, l_mmap, l_munmap, m_poll,
				     l_read, l_close, NULL, m->nr_cpus, NULL };
	m->wake_fd = -1;
	pthread_mutex_init(&m->lock, NULL);
	m->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->wake_fd < 0) {
		prec_kmodel_free(m);
		return NULL;
	}
	prec_kmodel_host_limits(&m->lim);
	/* The software PMUs never run in NMI; the tracepoint PMU says nothing. */
	if (prec_kmodel_add_pmu(m, PERF_TYPE_SOFTWARE, PREC_KMODEL_CAP_NO_NMI) ||
	    prec_kmodel_add_pmu(m, PERF_TYPE_TRACEPOINT, 0)) {
		prec_kmodel_free(m);
		return NULL;
	}
	return m;
}

void prec_kmodel_free(struct prec_kmodel *m)
{
	size_t i;

	if (!m)
		return;
	prec_km_emu_free(m);
	for (i = 0; i < m->nrings; i++) {
		free(m->rings[i].base);
		free(m->rings[i].aux);
	}
	free(m->rings);
	for (i = 0; i < m->nev; i++)
		prec_addr_filters_free(m->ev[i].filt, m->ev[i].nfilt);
	free(m->ev);
	free(m->pmus);
	free(m->kids);
	if (m->wake_fd >= 0)
		close(m->wake_fd);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

int prec_kmodel_set_addr_filters(struct prec_kmodel *m, uint32_t type, unsigned n, bool etm)
{
	size_t i;

	for (i = 0; i < m->npmus; i++)
		if (m->pmus[i].type == type) {
			m->pmus[i].nr_addr_filters = n;
			m->pmus[i].etm_filters = etm;
			return 0;
		}
	return -ENOENT;
}

int prec_kmodel_add_pmu(struct prec_kmodel *m, uint32_t type, unsigned caps)
{
	if (PREC_ARRAY_RESERVE(m->pmus, m->npmus, 1))
		return -ENOMEM;
	m->pmus[m->npmus++] = (struct kpmu){ type, caps, 0, false };
	return 0;
}

const struct prec_kernel *prec_kmodel_kernel(struct prec_kmodel *m)
{
	return &m->k;
}

/* An integer sysctl, or @dflt when it cannot be read. */
static long long sysctl_int(const char *name, long long dflt)
{
	char path[128];
	long long v;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/sys/kernel/%s", name);
	f = fopen(path, "r");
	if (!f)
		return dflt;
	if (fscanf(f, "%lld", &v) != 1)
		v = dflt;
	fclose(f);
	return v;
}

/*
 * The kernel's HZ, for max_samples_per_tick: the coarse clocks tick with
 * the jiffy, so their resolution is TICK_NSEC (the kernel's LOW_RES_NSEC,
 * reported by clock_getres()). 250 (x86 distributions' CONFIG_HZ) when
 * the answer makes no sense.
 */
static unsigned host_hz(void)
{
	struct timespec ts;

	if (clock_getres(CLOCK_MONOTONIC_COARSE, &ts) || ts.tv_sec || ts.tv_nsec < 1000000 ||
	    ts.tv_nsec > 10000000)
		return 250;
	return (unsigned)((1000000000L + ts.tv_nsec / 2) / ts.tv_nsec);
}

void prec_kmodel_host_limits(struct prec_kmodel_limits *l)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct c[2];
	struct rlimit rl;

	memset(c, 0, sizeof(c));
	/* The kernel's defaults: 512 KiB + a page, paranoid 2, 100000 Hz. */
	l->mlock_kb = (uint64_t)sysctl_int("perf_event_mlock_kb", 516);
	l->paranoid = (int)sysctl_int("perf_event_paranoid", 2);
	l->max_sample_rate = (uint64_t)sysctl_int("perf_event_max_sample_rate", 100000);
	l->hz = host_hz();
	l->memlock_bytes = UINT64_MAX;
	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY)
		l->memlock_bytes = rl.rlim_cur;
	l->cap_ipc_lock = !syscall(SYS_capget, &h, c) && (c[0].effective & (1u << CAP_IPC_LOCK));
}

void prec_kmodel_set_limits(struct prec_kmodel *m, const struct prec_kmodel_limits *l)
{
	m->lim = *l;
}

/*
 * perf_event_exec() on the exec'ing task's context only, in its order:
 * perf_event_enable_on_exec() -> event_enable_on_exec() clears
 * attr.enable_on_exec (it acts once) and enables an event that is off;
 * then perf_event_remove_on_exec() takes remove_on_exec events out for
 * good (perf_event_exit_event(): poll() says POLLHUP), out of their groups
 * too (the real kernel's members of a removed leader go on counting on
 * their own: tests/cli/kmodel-diff.sh).
 */
void prec_kmodel_task_exec(struct prec_kmodel *m, pid_t tid)
{
	size_t i;

	for (i = 0; i < m->nev; i++) {
		struct kev *e = &m->ev[i];

		if (e->open && e->task == tid && e->attr.enable_on_exec) {
			e->attr.enable_on_exec = 0;
			if (!e->enabled)
				set_enabled(m, e, true);
		}
	}
	for (i = 0; i < m->nev; i++)
		if (m->ev[i].open && m->ev[i].task == tid && m->ev[i].attr.remove_on_exec &&
		    !m->ev[i].exited) {
			detach(m, &m->ev[i]);
			m->ev[i].hup = true; /* perf_event_exit_event(): state EXIT */
		}
}

// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/array.h"
#include "record/auxsplit.h"
#include "spec/attr.h"
#include "record/emulate.h"
#include "record/emusys.h"
#include "record/etm_emulate.h"
#include "record/etmregs.h"
#include "spec/evspec.h"
#include "record/kcore.h"
#include "record/kernel.h"
#include "record/outfile.h"
#include "record/kmodel.h"
#include "spec/pmu.h"
#include "spec/probe.h"
#include "record/record.h"
#include "record/synth.h"
#include "tracefile/tfile.h"
#include "base/util.h"
#include "record/uprobe_events.h"
#include "record/workload.h"

#ifndef PTREC_VERSION
#define PTREC_VERSION "0.1.0"
#endif

#define DEFAULT_MLOCK_KB 512u          /* perf's fallback when the sysctl is unreadable */
#define DEFAULT_DATA_BYTES_USER_AUX (256u << 10)
#define DEFAULT_AUX_BYTES_PRIV (4u << 20)
#define DEFAULT_AUX_BYTES_USER (128u << 10)

/* One perf_event fd and the event it belongs to. */
struct efd {
	int fd;
	int ev;       /* evlist index, or -1 for the tracking event */
	uint64_t id;
	size_t ring;  /* index of the target whose ring it writes to */
	bool reads_lost; /* opened with PERF_FORMAT_LOST: read() ends with its lost count */
};

/* One mmap: a CPU (per-CPU mode) or a thread (per-thread mode). */
struct target {
	int cpu;      /* -1 in per-thread mode */
	pid_t tid;    /* -1 in per-CPU mode, or for system-wide */
	int owner;    /* fd that carries the mmap */
	void *base;
	size_t map_len;
	void *aux;
	size_t aux_len;
	struct prec_ring ring;
	struct prec_ring_counts counts;
	bool hup;
	bool track_only; /* sideband only: the tracking event, a data ring */
	bool ksb_only;   /* ...and only the kernel's: ksymbol and text_poke (r->ktrack) */
	uint64_t truncated_seen; /* counts.truncated at the last re-enable */
	struct prec_auxsplit *split; /* per-thread streams of a software tracer */
};

struct rec {
	const struct prec_record_opts *o;
	const struct prec_kernel *k; /* the kernel's perf interface (the seam) */
	struct prec_record_result *res;
	struct prec_diag *d;
	struct prec_evlist *el;
	int aux_idx;
	struct efd *fds;
	size_t nfds;
	struct target *t;
	size_t nt;
	pid_t *tids;  /* the threads opened on (not with -a) */
	size_t ntids;
	struct prec_tfile_writer *w;
	struct prec_outfile of;    /* the file behind w (record/outfile.h) */
	struct prec_mapset *maps;
	struct prec_attr track;
	struct prec_attr ktrack;   /* CPU-wide kernel side-band (ksymbol, text_poke) */
	uint64_t data_bytes, aux_bytes;
	int err;      /* first error from a callback */
	bool stopping; /* the events are being disabled: no more re-enabling */
	bool etm;     /* the CoreSight software tracer runs */
	bool exec_enable; /* leaders start at the workload's exec (enable_on_exec) */
	bool kmat_done;   /* the kernel's symbols, modules and text are in this file */
	bool read_lost;   /* the kernel takes PERF_FORMAT_LOST (Linux 6.0) */
	bool snapshot;    /* snapshot mode: -S, or an event with the snapshot term */
	bool snap_due;    /* a snapshot trigger's sample was read: take one */
	int snap_ev;      /* that trigger's event index */
	/* the stream offsets a snapshot being taken writes (PREC_RECORD_SNAPSHOT) */
	struct snap_range {
		int32_t cpu, tid;
		uint64_t start, end;
	} *snap_rg;
	size_t snap_n;
	bool snap_on;
	uint32_t snap_in_file; /* snapshots written into the current file */
	bool switching;   /* --switch-output given */
	struct prec_ring_counts synth_counts; /* of records that came through no ring: made
					      * from /proc (-p, -t, -a) */
	struct prec_buf sw_state; /* --switch-output: (cpu, record) of the side-band that
				   * describes tasks and code, for the next file */
	uint64_t sw_base;         /* trace + side-band bytes written before this file */
	uint64_t sw_next;         /* the next timed switch (CLOCK_MONOTONIC ns), or 0 */
	bool sw_full;             /* the file reached --switch-output=SIZE */
	uint64_t *throttled;   /* per event: PERF_RECORD_THROTTLE records */
	uint64_t unthrottled;  /* PERF_RECORD_UNTHROTTLE records */
	struct prec_tfile_etm *etm_blocks; /* cs_etm metadata for MACHINE */
	uint64_t *etm_regs;
	struct prec_uprobe_events *upe; /* tracefs uprobes for inherited events */
	uint64_t *upe_ids;              /* per event index: its tracefs id, or 0 */
	/* --emulate: the model of the kernel and the software tracer behind it */
	struct prec_kmodel *model;
	struct prec_emu_config emu_cfg;
	struct prec_etm_config etm_cfg;
	struct prec_emu_trigger *emu_trig;
	struct prec_attr *emu_keys;     /* per trigger: the attr it is opened with */
	/* --emulate=system: the whole-system tracer's run behind the model */
	struct prec_emusys_config sys_cfg;
	struct prec_emusys_trigger *sys_trig;
	char (*sys_names)[128];          /* its triggers' kernel functions */
	char sys_plugin[4096], sys_init[4096];
	char sys_unmapped[256];          /* its uprobes that no process mapped */
	struct prec_tfile_etm etm_blk;
	uint64_t etm_words[PREC_ETM_BLOCK_WORDS];
};

static int rec_error(struct rec *r, int code, const char *hint, const char *fmt, ...)
	prec_printf(4, 5);

static int rec_error(struct rec *r, int code, const char *hint, const char *fmt, ...)
{
	va_list ap;

	if (!r->d)
		return code;
	r->d->code = code;
	r->d->pos = -1;
	va_start(ap, fmt);
	vsnprintf(r->d->msg, sizeof(r->d->msg), fmt, ap);
	va_end(ap);
	snprintf(r->d->hint, sizeof(r->d->hint), "%s", hint ? hint : "");
	return code;
}

void prec_record_ring_defaults(bool privileged, bool has_aux, long mlock_kb, long page_size,
			       uint64_t *data_bytes, uint64_t *aux_bytes)
{
	uint64_t kb, pages;

	if (!*data_bytes) {
		/* perf_event_mlock_kb_in_pages(): the limit less the control page. */
		kb = mlock_kb < 0 ? DEFAULT_MLOCK_KB :
		     (uint64_t)mlock_kb > (uint64_t)page_size / 1024 ?
			     (uint64_t)mlock_kb - (uint64_t)page_size / 1024 : 0;
		pages = kb * 1024 / (uint64_t)page_size;
		while (pages & (pages - 1))
			pages &= pages - 1;
		*data_bytes = (pages ? pages : 1) * (uint64_t)page_size;
		if (has_aux && !privileged && !*aux_bytes)
			*data_bytes = PREC_MIN(*data_bytes, (uint64_t)DEFAULT_DATA_BYTES_USER_AUX);
	}
	if (!*aux_bytes)
		*aux_bytes = privileged ? DEFAULT_AUX_BYTES_PRIV : DEFAULT_AUX_BYTES_USER;
}

static void note(struct prec_record_result *res, const char *s)
{
	if (res->nnotes < (int)PREC_ARRAY_SIZE(res->notes))
		snprintf(res->notes[res->nnotes++], sizeof(res->notes[0]), "%s", s);
}

int prec_parse_cpu_list(const char *s, int **cpus, size_t *n)
{
	int *v = NULL;
	size_t cnt = 0;
	const char *p = s;

	*cpus = NULL;
	*n = 0;
	if (!s || !*s)
		return -EINVAL;
	while (*p) {
		char *end;
		long a, b;

		if (*p < '0' || *p > '9')
			goto bad;
		a = strtol(p, &end, 10);
		b = a;
		if (*end == '-') {
			if (end[1] < '0' || end[1] > '9')
				goto bad;
			b = strtol(end + 1, &end, 10);
		}
		if (a < 0 || b < a || b > 65535)
			goto bad;
		for (; a <= b; a++) {
			size_t i;

			for (i = 0; i < cnt; i++)
				if (v[i] == a)
					break;
			if (i < cnt)
				continue;
			if (PREC_ARRAY_RESERVE(v, cnt, 1)) {
				free(v);
				return -ENOMEM;
			}
			v[cnt++] = (int)a;
		}
		if (*end == ',')
			end++;
		else if (*end)
			goto bad;
		p = end;
	}
	*cpus = v;
	*n = cnt;
	return 0;
bad:
	free(v);
	return -EINVAL;
}

/* CPUs 0 .. @nc-1 in *@cpus. */
static int cpu_range(long nc, int **cpus, size_t *n)
{
	size_t i;

	*cpus = calloc((size_t)nc, sizeof(int));
	if (!*cpus)
		return -ENOMEM;
	for (i = 0; i < (size_t)nc; i++)
		(*cpus)[i] = (int)i;
	*n = (size_t)nc;
	return 0;
}

/* The kernel's online CPUs: a model's own (kernel.h), else sysfs's. */
static int online_cpus(const struct prec_kernel *k, int **cpus, size_t *n)
{
	char *s;
	long len;
	int err;

	if (k->ncpus > 0)
		return cpu_range(k->ncpus, cpus, n);
	len = prec_read_text("/sys/devices/system/cpu/online", &s);
	if (len < 0)
		return cpu_range(sysconf(_SC_NPROCESSORS_ONLN), cpus, n);
	err = prec_parse_cpu_list(s, cpus, n);
	free(s);
	return err;
}

/* ---- messages for the kernel's refusals ---- */

int prec_explain_open_error(int err, const struct prec_event *ev, struct prec_diag *d)
{
	struct rec rr = { .d = d }, *r = &rr;

	const char *name = ev ? ev->name : "the sideband tracking event";
	int level = 2;
	char hint[512];

	prec_probe_paranoid(&level);
	switch (-err) {
	case EACCES:
	case EPERM:
		snprintf(hint, sizeof(hint),
			 "kernel.perf_event_paranoid is %d; run as root, grant CAP_PERFMON, or "
			 "lower it (sysctl kernel.perf_event_paranoid=%d)%s",
			 level, level >= 2 ? 1 : -1,
			 ev && !ev->attr.exclude_kernel ? "; or trace user space only (the u modifier)" : "");
		return rec_error(r, err, hint, "the kernel refused to open %s (%s)", name,
				 strerror(-err));
	case ENOENT:
	case ENODEV:
		if (ev && (ev->attr.type == PERF_TYPE_HARDWARE || ev->attr.type == PERF_TYPE_HW_CACHE))
			return rec_error(r, err, "this machine has no hardware counters (as in many "
					 "virtual machines): sample by time with -e cpu-clock, the "
					 "event perf record falls back to",
					 "%s: this machine has no such event (%s)", name, strerror(-err));
		return rec_error(r, err, "see 'ptrec list' for what this machine has",
				 "%s: this machine has no such event (%s)", name, strerror(-err));
	case EOPNOTSUPP:
		if (ev && ev->aux_action) {
			if (ev->aux)
				return rec_error(r, err,
						 "drop aux-start-paused, or record with --emulate",
						 "%s: the %s PMU cannot pause/resume (the kernel answered EOPNOTSUPP; "
						 "cs_etm needs Linux 6.16)", name, ev->pmu);
			return rec_error(r, err, "put the event in a group led by the tracer",
					 "%s: the kernel refused aux-action %s (EOPNOTSUPP)", name,
					 prec_aux_action_str(ev->aux_action));
		}
		return rec_error(r, err, NULL, "%s: not supported here (%s)", name, strerror(-err));
	case EINVAL:
		if (ev && ev->aux_action) {
			int e = 0;

			if (prec_probe_aux_action_kernel(&e) == PREC_AUXACT_OLD_KERNEL)
				return rec_error(r, err, "update the kernel (Linux 6.13 or later)",
						 "%s: this kernel predates AUX pause/resume (aux_action)",
						 name);
			return rec_error(r, err,
					 "pause/resume needs a group led by a tracer that supports it",
					 "%s: the kernel refused aux-action %s (EINVAL)", name,
					 prec_aux_action_str(ev->aux_action));
		}
		return rec_error(r, err, "check the event's terms with 'ptrec record --dry-run'",
				 "%s: the kernel rejected the event attributes (EINVAL)", name);
	case EBUSY:
		return rec_error(r, err, "stop the other user of the tracer (another perf or ptrec)",
				 "%s: the tracer is in use (EBUSY)", name);
	case EMFILE:
	case ENFILE:
		return rec_error(r, err, "raise the limit (ulimit -n) or trace fewer CPUs (-C)",
				 "too many open files while opening %s", name);
	case ESRCH:
		return rec_error(r, err, NULL, "%s: no such process or thread", name);
	default:
		return rec_error(r, err, NULL, "cannot open %s: %s", name, strerror(-err));
	}
}

static bool cpu_in_list(const char *list, int cpu)
{
	int *v = NULL;
	size_t n = 0, i;
	bool in = false;

	if (!list || prec_parse_cpu_list(list, &v, &n))
		return true; /* unknown: do not blame the CPU */
	for (i = 0; i < n && !in; i++)
		in = v[i] == cpu;
	free(v);
	return in;
}

int prec_explain_cpu_error(int err, int cpu, const char *possible, const char *online,
			   struct prec_diag *d)
{
	struct rec rr = { .d = d }, *r = &rr;

	if (cpu < 0 || (err != -EINVAL && err != -ENODEV))
		return 0;
	/* perf_event_alloc(): a CPU number at or beyond nr_cpu_ids is EINVAL. */
	if (!cpu_in_list(possible, cpu))
		return rec_error(r, err, "give CPUs this machine has (-C)",
				 "CPU %d does not exist here (CPUs %s)", cpu, possible);
	/* perf_event_open(): a CPU that is not online is ENODEV. */
	if (!cpu_in_list(online, cpu))
		return rec_error(r, err, "bring it online (echo 1 > /sys/devices/system/cpu/cpuN/online) "
				 "or leave it out of -C",
				 "CPU %d is offline (online: %s)", cpu, online);
	return 0;
}

static char *sys_text(const char *path)
{
	char *s = NULL, *nl;

	if (prec_read_text(path, &s) < 0)
		return NULL;
	nl = strchr(s, '\n');
	if (nl)
		*nl = '\0';
	return s;
}

/* The kernel's possible or online CPUs as text: sysfs's @file, or a model's (all of them). */
static char *cpu_list_text(const struct rec *r, const char *file)
{
	char range[32];

	if (r->k->ncpus <= 0)
		return sys_text(file);
	if (r->k->ncpus == 1)
		snprintf(range, sizeof(range), "0");
	else
		snprintf(range, sizeof(range), "0-%d", r->k->ncpus - 1);
	return strdup(range);
}

static int open_error(struct rec *r, const struct prec_event *ev, int cpu, int err)
{
	char *possible, *online;
	int ret;

	if (cpu >= 0 && (err == -EINVAL || err == -ENODEV)) {
		possible = cpu_list_text(r, "/sys/devices/system/cpu/possible");
		online = cpu_list_text(r, "/sys/devices/system/cpu/online");
		ret = prec_explain_cpu_error(err, cpu, possible, online, r->d);
		free(possible);
		free(online);
		if (ret)
			return ret;
	}
	return prec_explain_open_error(err, ev, r->d);
}

/* ---- opening ---- */

static int push_fd(struct rec *r, int fd, int ev)
{
	if (PREC_ARRAY_RESERVE(r->fds, r->nfds, 1))
		return -ENOMEM;
	r->fds[r->nfds].fd = fd;
	r->fds[r->nfds].ev = ev;
	r->fds[r->nfds].id = 0;
	r->fds[r->nfds].ring = SIZE_MAX;
	r->fds[r->nfds].reads_lost = false;
	if (prec_kernel_id(r->k, fd, &r->fds[r->nfds].id))
		r->fds[r->nfds].id = 0;
	r->nfds++;
	return 0;
}

static void prepare_attr(struct rec *r, struct prec_attr *a, const struct prec_event *ev,
			 bool leader)
{
	const struct prec_record_opts *o = r->o;

	*a = ev->attr;
	if (ev->kind == PREC_EV_UPROBE || ev->kind == PREC_EV_URETPROBE)
		a->config1 = (uint64_t)(uintptr_t)ev->uprobe.path;
	prec_attr_sample_defaults(a, ev->aux);
	a->disabled = leader;
	a->enable_on_exec = leader && r->exec_enable;
	a->inherit = !o->per_thread && !o->system_wide;
	if ((a->inherit || ev->kind == PREC_EV_KPROBE || ev->kind == PREC_EV_KRETPROBE) &&
	    r->upe_ids && r->upe_ids[ev->idx]) {
		/* A uprobe PMU event cannot be inherited: see uprobe_events.h. */
		a->type = PERF_TYPE_TRACEPOINT;
		a->config = r->upe_ids[ev->idx];
		a->config1 = a->config2 = 0;
	}
	if (ev->aux)
		a->aux_watermark = (uint32_t)PREC_MIN(r->aux_bytes / 4, UINT32_MAX);
	if (r->model && ev->kind == PREC_EV_TRACEPOINT && ev->tp.syscall_dir != PREC_SYSCALL_NONE)
		a->config = PREC_KMODEL_SYSCALL_TP(ev->tp.syscall_dir == PREC_SYSCALL_ENTER,
						   ev->tp.syscall_nr);
	if (r->model && (ev->kind == PREC_EV_KPROBE || ev->kind == PREC_EV_KRETPROBE))
		a->config = PREC_KMODEL_KPROBE_TP(ev->idx);
}

/*
 * A dummy software event for side-band records only: kernel symbols and code
 * patching, sample ids on every record, disabled until enabled, a wakeup at
 * half the data ring.
 */
static void sideband_attr(struct rec *r, struct prec_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = PREC_ATTR_SIZE;
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_DUMMY;
	a->sample_period = 1;
	a->sample_type = PREC_SAMPLE_ID_TYPE;
	a->sample_id_all = 1;
	a->ksymbol = 1;
	a->text_poke = 1;
	a->exclude_hv = 1;
	a->disabled = 1;
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(r->data_bytes / 2);
}

/* The tracking event: the workload's tasks, mmaps and switches besides. */
static void prepare_tracking(struct rec *r)
{
	struct prec_attr *a = &r->track;
	const struct prec_record_opts *o = r->o;

	sideband_attr(r, a);
	a->mmap = a->mmap2 = a->comm = a->comm_exec = a->task = 1;
	a->build_id = 1;
	a->context_switch = !o->per_thread;
	a->exclude_kernel = 1;
	a->enable_on_exec = r->exec_enable;
	a->inherit = !o->per_thread && !o->system_wide;
}

/*
 * Inherited uprobes become tracefs uprobe events (uprobe_events.h): clone(2)
 * copies a uprobe PMU event by re-reading its path pointer in the forking
 * task, and fails with EFAULT.
 */
static int setup_uprobe_events(struct rec *r)
{
	size_t i, n = prec_evlist_nr_events(r->el);
	/* Uprobes go through tracefs only when inherited; kprobes always. */
	bool inherit = !r->o->per_thread && !r->o->system_wide;

	/* A kernel with tasks of its own (a model) has no tracefs of this host to add to. */
	if (r->k->tasks)
		return 0;
	for (i = 0; i < n; i++) {
		const struct prec_event *e = prec_evlist_event(r->el, i);
		bool up = e->kind == PREC_EV_UPROBE || e->kind == PREC_EV_URETPROBE;
		bool kp = e->kind == PREC_EV_KPROBE || e->kind == PREC_EV_KRETPROBE;
		int err;

		if (!kp && !(up && inherit))
			continue;
		if (!r->upe) {
			r->upe = prec_uprobe_events_new();
			r->upe_ids = calloc(n, sizeof(*r->upe_ids));
			if (!r->upe || !r->upe_ids)
				return -ENOMEM;
		}
		if (kp)
			err = prec_kprobe_events_add(r->upe, e->kprobe.func, e->kprobe.offset,
						     e->kind == PREC_EV_KRETPROBE,
						     &r->upe_ids[e->idx], r->d);
		else
			err = prec_uprobe_events_add(r->upe, e->uprobe.path, e->uprobe.file_offset,
						     e->kind == PREC_EV_URETPROBE,
						     &r->upe_ids[e->idx], r->d);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Opens @a on @t with PERF_FORMAT_LOST added where the kernel takes it and it
 * changes no record: not with PERF_SAMPLE_READ (the samples would carry it)
 * nor a group read. The kernel counts in it every record of the event that
 * found no room (__perf_output_begin() in kernel/events/ring_buffer.c:
 * rb->lost and event->lost_samples, the parent's for an inherited event),
 * including the last ones, for which no PERF_RECORD_LOST follows when nothing
 * fits after them. The attrs written to the file stay as prepared.
 */
static int open_counting_lost(struct rec *r, struct prec_attr *a, const struct target *t,
			      int group_fd)
{
	if (r->read_lost && !(a->sample_type & PERF_SAMPLE_READ) &&
	    !(a->read_format & PERF_FORMAT_GROUP))
		a->read_format |= PERF_FORMAT_LOST;
	return r->k->open(r->k->ctx, a, t->tid, t->cpu, group_fd, PERF_FLAG_FD_CLOEXEC);
}

/*
 * Whether the kernel takes PERF_FORMAT_LOST (Linux 6.0; perf_event_open()
 * refuses read_format bits it does not know with EINVAL): a disabled dummy
 * event on this thread is opened with it and closed.
 */
static bool kernel_reads_lost(struct rec *r)
{
	struct prec_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.size = PREC_ATTR_SIZE;
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.disabled = 1;
	a.exclude_kernel = a.exclude_hv = 1;
	a.read_format = PERF_FORMAT_LOST;
	fd = r->k->open(r->k->ctx, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return false;
	r->k->close(r->k->ctx, fd);
	return true;
}

/*
 * After the last drain: the records the kernel counted lost that no
 * PERF_RECORD_LOST in the rings reported (those lost at the end, with no room
 * after them for the LOST record), from each event's PERF_FORMAT_LOST count
 * (perf record reads the same counts at its end: record__read_lost_samples()
 * in tools/perf/builtin-record.c).
 */
static void count_unwritten_lost(struct rec *r)
{
	uint64_t counted = 0, written = 0, v[8];
	size_t i;

	for (i = 0; i < r->nfds; i++) {
		ssize_t n;

		if (!r->fds[i].reads_lost)
			continue;
		n = r->k->read(r->k->ctx, r->fds[i].fd, v, sizeof(v));
		if (n >= 16)
			counted += v[n / 8 - 1];
	}
	for (i = 0; i < r->nt; i++)
		written += r->t[i].counts.lost;
	r->res->lost_unwritten = counted > written ? counted - written : 0;
}

/* Opens every group plus the tracking event for one target; returns the owner fd. */
static int open_target(struct rec *r, struct target *t)
{
	size_t g, ng = prec_evlist_nr_groups(r->el);
	int aux_fd = -1, fd, err;
	struct prec_attr a;

	for (g = 0; g < ng && !t->track_only; g++) {
		size_t f, n, k;
		int leader = -1;

		prec_evlist_group(r->el, g, &f, &n);
		for (k = 0; k < n; k++) {
			const struct prec_event *ev = prec_evlist_event(r->el, f + k);

			prepare_attr(r, &a, ev, k == 0);
			fd = open_counting_lost(r, &a, t, leader);
			/* No silent retry with a narrower scope: the message says what to change. */
			if (fd < 0)
				return open_error(r, ev, t->cpu, fd);
			err = push_fd(r, fd, (int)(f + k));
			if (!err)
				r->fds[r->nfds - 1].reads_lost = a.read_format & PERF_FORMAT_LOST;
			if (err) {
				r->k->close(r->k->ctx, fd);
				return err;
			}
			if (k == 0)
				leader = fd;
			if (ev->aux)
				aux_fd = fd;
		}
	}
	a = t->ksb_only ? r->ktrack : r->track;
	fd = open_counting_lost(r, &a, t, -1);
	if (fd < 0)
		return open_error(r, NULL, t->cpu, fd);
	err = push_fd(r, fd, -1);
	if (!err)
		r->fds[r->nfds - 1].reads_lost = a.read_format & PERF_FORMAT_LOST;
	if (err) {
		r->k->close(r->k->ctx, fd);
		return err;
	}
	/* The AUX area must be mapped on the tracer's own fd; the rest redirects to it. */
	t->owner = aux_fd >= 0 ? aux_fd : fd;
	return 0;
}

/*
 * Whether each ring's AUX area is one stream, as the kernel's are: the
 * whole-system tracer in per-CPU mode writes one stream per guest CPU, as
 * the hardware does; the user-mode tracers (and the whole-system one per
 * thread) encode each thread apart, and the model's rings hold their pieces
 * (auxsplit.h).
 */
static bool rings_are_streams(const struct rec *r)
{
	return !r->model || (r->o->emulate_system && r->sys_cfg.per_cpu);
}

static int map_target(struct rec *r, struct target *t)
{
	long page = sysconf(_SC_PAGESIZE);
	struct perf_event_mmap_page *pg;
	size_t len = (size_t)page + r->data_bytes;
	void *base = NULL, *aux = NULL;
	/* Snapshot mode: a read-only AUX area is the kernel's overwrite mode (perf_mmap()). */
	int aux_prot = r->snapshot ? PROT_READ : PROT_READ | PROT_WRITE;
	int err;

	err = r->k->mmap(r->k->ctx, t->owner, len, 0, PROT_READ | PROT_WRITE, &base);
	if (err)
		goto fail;
	t->base = base;
	t->map_len = len;
	if (r->aux_idx >= 0 && !t->track_only) {
		pg = base;
		pg->aux_offset = len;
		pg->aux_size = r->aux_bytes;
		err = r->k->mmap(r->k->ctx, t->owner, r->aux_bytes, (off_t)len, aux_prot, &aux);
		if (err)
			goto fail;
		t->aux = aux;
		t->aux_len = r->aux_bytes;
		if (!rings_are_streams(r)) {
			t->split = prec_auxsplit_new();
			if (!t->split)
				return -ENOMEM;
		}
	}
	err = prec_ring_init(&t->ring, base, r->data_bytes, aux, aux ? r->aux_bytes : 0,
			     aux && r->snapshot);
	if (err)
		return rec_error(r, err, NULL, "internal error setting up the ring");
	return 0;
fail:
	{
		char *mlock = sys_text("/proc/sys/kernel/perf_event_mlock_kb");

		err = prec_explain_mmap_error(err, base != NULL,
					      base != NULL ? r->aux_bytes : r->data_bytes,
					      mlock, r->d);
		free(mlock);
		return err;
	}
}

int prec_explain_mmap_error(int err, bool aux, uint64_t bytes, const char *mlock_kb,
			    struct prec_diag *d)
{
	struct rec rr = { .d = d }, *r = &rr;
	const char *what = aux ? "AUX area" : "data ring";

	/* perf_mmap(): over perf_event_mlock_kb and RLIMIT_MEMLOCK without CAP_IPC_LOCK. */
	if (err == -EPERM)
		return rec_error(r, err,
				 "use smaller buffers (-m DATA,AUX), or raise the limit: "
				 "sysctl kernel.perf_event_mlock_kb=N (or run as root)",
				 "cannot map the %llu KiB %s: over the locked-memory limit "
				 "(perf_event_mlock_kb is %s)", (unsigned long long)(bytes >> 10),
				 what, mlock_kb ? mlock_kb : "unknown");
	/* rb_alloc_aux(): the driver's setup_aux() refused the buffer, or no pages. */
	if (err == -ENOMEM && aux)
		return rec_error(r, err,
				 "try another AUX size (-m ,SIZE): the tracer's driver sets limits "
				 "on its buffers (e.g. a minimum, or contiguous pages)",
				 "the tracer could not set up a %llu KiB AUX area (ENOMEM from its driver)",
				 (unsigned long long)(bytes >> 10));
	if (err == -ENOMEM)
		return rec_error(r, err, "use a smaller data ring (-m DATA)",
				 "not enough memory for the %llu KiB data ring",
				 (unsigned long long)(bytes >> 10));
	return rec_error(r, err, NULL, "cannot map the %s: %s", what, strerror(-err));
}

/* Redirects every fd of the target to its owner's ring. */
static int redirect(struct rec *r, size_t from, size_t to, size_t ring)
{
	int owner = r->t[ring].owner;
	size_t i;
	int err;

	for (i = from; i < to; i++) {
		r->fds[i].ring = ring;
		if (r->fds[i].fd == owner)
			continue;
		err = prec_kernel_set_output(r->k, r->fds[i].fd, owner);
		if (err)
			return rec_error(r, err, NULL, "cannot redirect event output: %s",
					 strerror(-err));
	}
	return 0;
}

/* What a target opens: the event groups and the tracking event, or only one of these. */
enum { TGT_EVENTS, TGT_TRACK, TGT_KSB };

static int add_target(struct rec *r, int cpu, pid_t tid, int kind)
{
	struct target *t;
	size_t from = r->nfds;
	int err;

	if (PREC_ARRAY_RESERVE(r->t, r->nt, 1))
		return -ENOMEM;
	t = &r->t[r->nt++];
	memset(t, 0, sizeof(*t));
	t->cpu = cpu;
	t->tid = tid;
	t->owner = -1;
	t->track_only = kind != TGT_EVENTS;
	t->ksb_only = kind == TGT_KSB;
	err = open_target(r, t);
	if (err)
		return err;
	err = map_target(r, t);
	if (err)
		return err;
	return redirect(r, from, r->nfds, (size_t)(t - r->t));
}

static int thread_list(pid_t pid, pid_t **out, size_t *n)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	pid_t *v = NULL;
	size_t cnt = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno == -ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (PREC_ARRAY_RESERVE(v, cnt, 1)) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v[cnt++] = atoi(de->d_name);
	}
	closedir(d);
	*out = v;
	*n = cnt;
	return 0;
}

/* The CPUs to open on: -C's list, else every online CPU. */
static int target_cpus(struct rec *r, int **cpus, size_t *ncpus)
{
	const struct prec_record_opts *o = r->o;
	int err;

	if (o->cpus) {
		*cpus = malloc(o->ncpus * sizeof(int));
		if (!*cpus)
			return -ENOMEM;
		memcpy(*cpus, o->cpus, o->ncpus * sizeof(int));
		*ncpus = o->ncpus;
		return 0;
	}
	err = online_cpus(r->k, cpus, ncpus);
	if (err)
		return rec_error(r, err, NULL, "cannot read the list of online CPUs");
	return 0;
}

static int push_tid(struct rec *r, pid_t tid)
{
	if (PREC_ARRAY_RESERVE(r->tids, r->ntids, 1))
		return -ENOMEM;
	r->tids[r->ntids++] = tid;
	return 0;
}

/* Every thread to open on, in r->tids: the workload, -p's threads, -t's. */
static int collect_tids(struct rec *r, pid_t workload)
{
	const struct prec_record_opts *o = r->o;
	size_t i, k;
	int err = 0;

	if (workload > 0)
		err = push_tid(r, workload);
	for (i = 0; i < o->npids && !err; i++) {
		pid_t *tt = NULL;
		size_t nt = 0;

		err = thread_list(o->pids[i], &tt, &nt);
		if (err)
			return rec_error(r, err, "check the pid with ps", "process %d: %s",
					 (int)o->pids[i], err == -ESRCH ? "no such process" :
					 strerror(-err));
		for (k = 0; k < nt && !err; k++)
			err = push_tid(r, tt[k]);
		free(tt);
	}
	for (i = 0; i < o->ntids && !err; i++)
		err = push_tid(r, o->tids[i]);
	return err;
}

/* A thread that ended before its events opened (ESRCH): skipped, the message cleared. */
static bool thread_gone(struct rec *r, int err)
{
	if (err != -ESRCH)
		return false;
	if (r->d)
		memset(r->d, 0, sizeof(*r->d));
	return true;
}

/*
 * Per-CPU rings for a list of threads: the first thread that opens owns a
 * ring on each CPU, the later ones redirect into it. A thread already gone
 * (a zombie leader after pthread_exit) is skipped.
 */
static int open_threads_per_cpu(struct rec *r, const int *cpus, size_t ncpus)
{
	size_t i, j, first = r->nt;
	bool owned = false;
	int err = 0;

	for (j = 0; j < r->ntids && !err; j++) {
		for (i = 0; i < ncpus && !err; i++) {
			struct target t0 = { .cpu = cpus[i], .tid = r->tids[j] };
			size_t from = r->nfds;

			if (!owned) {
				err = add_target(r, cpus[i], r->tids[j], false);
				if (i == 0 && thread_gone(r, err)) {
					r->nt = first; /* nothing was mapped for it */
					err = 0;
					break;
				}
				continue;
			}
			err = open_target(r, &t0);
			if (!err)
				err = redirect(r, from, r->nfds, first + i);
			if (thread_gone(r, err))
				err = 0;
		}
		if (r->nt > first)
			owned = true;
	}
	if (!err && !owned)
		return rec_error(r, -ESRCH, "check the pid with ps",
				 "every thread to record has ended");
	return err;
}

static int open_threads_per_thread(struct rec *r)
{
	size_t j, n0;
	int err = 0;

	for (j = 0; j < r->ntids && !err; j++) {
		n0 = r->nt;
		err = add_target(r, -1, r->tids[j], false);
		if (thread_gone(r, err) && r->nt == n0 + 1 && !r->t[n0].base) {
			r->nt = n0;
			err = 0;
		}
	}
	if (!err && !r->nt)
		return rec_error(r, -ESRCH, "check the pid with ps",
				 "every thread to record has ended");
	return err;
}

/*
 * Tasks migrate between CPUs: with a CPU list, the mmaps and comms of a
 * process that ran elsewhere first are needed too. As perf's
 * intel_pt_recording_options() (arch/x86/util/intel-pt.c,
 * need_system_wide_tracking), unless the tracer excludes user space.
 */
static bool needs_all_cpu_sideband(struct rec *r)
{
	const struct prec_event *aux;

	if (r->aux_idx < 0)
		return true;
	aux = prec_evlist_event(r->el, (size_t)r->aux_idx);
	return !aux->attr.exclude_user;
}

/*
 * When the tracer traces the kernel, code patching (text_poke) and BPF and
 * other kernel symbols (ksymbol) by any task matter to the decode, and the
 * kernel delivers them only to CPU-wide side-band events: perf adds a
 * CPU-wide dummy event for them (intel_pt_recording_options(),
 * arch/x86/util/intel-pt.c; perf_event_text_poke() and perf_event_ksymbol()
 * in kernel/events/core.c go through the CPU contexts).
 */
static bool needs_kernel_sideband(struct rec *r)
{
	const struct prec_event *aux;

	if (r->aux_idx < 0)
		return false;
	aux = prec_evlist_event(r->el, (size_t)r->aux_idx);
	return !aux->attr.exclude_kernel && !aux->emulated;
}

/* Only ksymbol and text_poke, on one CPU, enabled with the recording. */
static void prepare_kernel_tracking(struct rec *r)
{
	sideband_attr(r, &r->ktrack);
}

/*
 * The tracking event alone (@kind TGT_TRACK) or the kernel side-band event
 * (TGT_KSB), each with its own data ring, on the online CPUs not in @cpus.
 */
static int add_tracking_cpus(struct rec *r, const int *cpus, size_t ncpus, int kind)
{
	int *online = NULL;
	size_t n = 0, i, k;
	int err = online_cpus(r->k, &online, &n);

	if (err)
		return rec_error(r, err, NULL, "cannot read the list of online CPUs");
	for (i = 0; i < n && !err; i++) {
		for (k = 0; k < ncpus && cpus[k] != online[i]; k++)
			;
		if (k == ncpus)
			err = add_target(r, online[i], -1, kind);
	}
	free(online);
	return err;
}

static int open_all(struct rec *r, pid_t workload)
{
	int *cpus = NULL;
	size_t ncpus = 0, i;
	int err;

	err = target_cpus(r, &cpus, &ncpus);
	if (err)
		return err;
	r->read_lost = kernel_reads_lost(r);
	if (r->o->system_wide) {
		for (i = 0; i < ncpus && !err; i++)
			err = add_target(r, cpus[i], -1, TGT_EVENTS);
		if (!err && r->o->cpus && needs_all_cpu_sideband(r))
			err = add_tracking_cpus(r, cpus, ncpus, TGT_TRACK);
		else if (!err && r->o->cpus && needs_kernel_sideband(r))
			err = add_tracking_cpus(r, cpus, ncpus, TGT_KSB);
	} else {
		err = collect_tids(r, workload);
		if (!err)
			err = r->o->per_thread ? open_threads_per_thread(r) :
						 open_threads_per_cpu(r, cpus, ncpus);
		if (!err && needs_kernel_sideband(r))
			err = add_tracking_cpus(r, NULL, 0, TGT_KSB);
	}
	free(cpus);
	return err;
}

/*
 * Enables the leaders of every target, or (@ksb_only) only the fds of the
 * CPU-wide kernel side-band targets, which exec does not enable.
 */
static int enable_fds(struct rec *r, bool ksb_only)
{
	size_t i;
	int err;

	for (i = 0; i < r->nfds; i++) {
		int ev = r->fds[i].ev;
		const struct prec_event *e = ev >= 0 ? prec_evlist_event(r->el, (size_t)ev) : NULL;

		if (e && e->leader != e->idx)
			continue;
		if (ksb_only && (r->fds[i].ring >= r->nt || !r->t[r->fds[i].ring].ksb_only))
			continue;
		err = prec_kernel_enable(r->k, r->fds[i].fd);
		if (err)
			return rec_error(r, err, NULL, "cannot enable the events: %s",
					 strerror(-err));
	}
	return 0;
}

static int enable_all(struct rec *r)
{
	return enable_fds(r, false);
}

/* The CPU-wide kernel side-band events: exec does not enable a CPU's events. */
static int enable_kernel_sideband(struct rec *r)
{
	return enable_fds(r, true);
}

static void disable_all(struct rec *r)
{
	size_t i;

	for (i = 0; i < r->nfds; i++)
		prec_kernel_disable(r->k, r->fds[i].fd);
}

/* ---- draining ---- */

struct drain_ctx {
	struct rec *r;
	struct target *t;
};

/*
 * The kernel stops an event's overflows for the rest of a tick once it has
 * had max_samples_per_tick of them (__perf_event_account_interrupt(), which
 * logs PERF_RECORD_THROTTLE; perf_swevent_overflow() then returns early), so
 * a throttled trigger silently skips its pause/resume. Counted per event by
 * the record's id (header, time, id, stream_id).
 */
static void count_throttle(struct rec *r, const struct perf_event_header *h)
{
	uint64_t id;
	size_t i;

	if (h->type == PERF_RECORD_UNTHROTTLE) {
		r->unthrottled++;
		return;
	}
	if (h->size < 24 || !r->throttled)
		return;
	id = prec_rd64((const uint8_t *)h + 16);
	for (i = 0; i < r->nfds; i++)
		if (r->fds[i].id == id && r->fds[i].ev >= 0) {
			r->throttled[r->fds[i].ev]++;
			return;
		}
}

/* Whether event @i leads a group with a pause or resume trigger. */
static bool leads_triggers(const struct prec_evlist *el, size_t i)
{
	size_t k, n = prec_evlist_nr_events(el);

	for (k = 0; k < n; k++) {
		const struct prec_event *e = prec_evlist_event(el, k);

		if (k != i && e->leader == (int)i && (e->aux_action & (PREC_AUX_PAUSE | PREC_AUX_RESUME)))
			return true;
	}
	return false;
}

/*
 * One line per throttled event for the end-of-run report. Since Linux 6.16
 * a throttled event stops its whole group and the leader alone logs the
 * THROTTLE (perf_event_throttle_group()): a tracer named here leads
 * triggers that stopped with it.
 */
static void report_throttles(struct rec *r)
{
	size_t i, n = prec_evlist_nr_events(r->el);
	char msg[256];

	for (i = 0; r->throttled && i < n; i++) {
		const struct prec_event *e = prec_evlist_event(r->el, i);
		bool trig = e->aux_action & (PREC_AUX_PAUSE | PREC_AUX_RESUME);
		bool group = !trig && leads_triggers(r->el, i);

		if (!r->throttled[i])
			continue;
		snprintf(msg, sizeof(msg),
			 "warning: %s %s was throttled %llu time%s: %s (kernel.perf_event_max_sample_rate)",
			 trig ? "trigger" : group ? "the group of" : "event", e->name,
			 (unsigned long long)r->throttled[i], r->throttled[i] == 1 ? "" : "s",
			 trig || group ? "windows may be missing" : "samples are missing");
		note(r->res, msg);
		r->res->throttled += r->throttled[i];
	}
}

/* Trace bytes of stream (@cpu, @tid) at @off into the file. */
/* A snapshot being taken wrote [@off, @off + @n) of stream (@cpu, @tid). */
static int snap_note(struct rec *r, int32_t cpu, int32_t tid, uint64_t off, size_t n)
{
	size_t i;

	for (i = 0; i < r->snap_n; i++) {
		struct snap_range *g = &r->snap_rg[i];

		if (g->cpu == cpu && g->tid == tid) {
			g->start = PREC_MIN(g->start, off);
			g->end = PREC_MAX(g->end, off + n);
			return 0;
		}
	}
	if (PREC_ARRAY_RESERVE(r->snap_rg, r->snap_n, 1))
		return -ENOMEM;
	r->snap_rg[r->snap_n++] = (struct snap_range){ cpu, tid, off, off + n };
	return 0;
}

static int write_aux(struct rec *r, int32_t cpu, int32_t tid, uint64_t off, const void *p,
		     size_t n)
{
	int err = r->snap_on && n ? snap_note(r, cpu, tid, off, n) : 0;

	if (err)
		return err;
	err = prec_tfile_write_aux(r->w, cpu, tid, off, p, n);

	if (err == -EAGAIN) {
		/* The disk is behind: drop rather than stall the kernel's ring. */
		r->res->dropped_bytes += n;
		return 0;
	}
	if (!err)
		r->res->aux_bytes += n;
	return err;
}

static int split_aux(void *ctx, int32_t tid, uint64_t off, const void *p, size_t n)
{
	return write_aux(ctx, -1, tid, off, p, n);
}

static int rec_started(struct rec *r);

/*
 * --switch-output: a record that describes a task or its code (what a
 * decoder of a later file needs of what came before) is kept for the
 * files that follow, with the CPU of the ring it came from.
 */
static int keep_state(struct rec *r, int32_t cpu, const struct perf_event_header *h)
{
	switch (h->type) {
	case PERF_RECORD_COMM:
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_KSYMBOL:
	case PERF_RECORD_TEXT_POKE:
		break;
	default:
		return 0;
	}
	if (!r->switching)
		return 0;
	/* 8 bytes of CPU: the records (8-byte multiples) stay 8-byte aligned. */
	{
		int64_t c = cpu;

		return prec_buf_append(&r->sw_state, &c, sizeof(c)) ?:
		       prec_buf_append(&r->sw_state, h, h->size);
	}
}

/*
 * A sample of an event with the snapshot term: the kernel paused the tracer
 * when it fired (aux_pause, before the sample was written), so the AUX area
 * ends with the moments before it; a snapshot follows the drain. Samples
 * start with the event's id (PERF_SAMPLE_IDENTIFIER).
 */
static void note_snapshot_trigger(struct rec *r, const struct perf_event_header *h)
{
	uint64_t id;
	size_t i;

	if (h->size < 16)
		return;
	id = prec_rd64((const uint8_t *)h + 8);
	for (i = 0; i < r->nfds; i++)
		if (r->fds[i].id == id && r->fds[i].ev >= 0) {
			if (prec_evlist_event(r->el, (size_t)r->fds[i].ev)->snapshot) {
				r->snap_due = true;
				r->snap_ev = r->fds[i].ev;
			}
			return;
		}
}

static int on_record(void *ctx, const struct perf_event_header *h)
{
	struct drain_ctx *c = ctx;
	struct rec *r = c->r;
	int err;

	prec_ring_count_record(&c->t->counts, h);
	err = rec_started(r);
	if (err) {
		r->err = r->err ? r->err : err;
		return err;
	}
	if (h->type == PERF_RECORD_THROTTLE || h->type == PERF_RECORD_UNTHROTTLE)
		count_throttle(r, h);
	if (r->snapshot && h->type == PERF_RECORD_SAMPLE)
		note_snapshot_trigger(r, h);
	if (c->t->split && h->type == PERF_RECORD_AUX) {
		uint64_t copy[8192];

		/* The record of a thread's piece: filed at the thread's stream offset. */
		err = prec_auxsplit_record(c->t->split, h, copy);
		if (err == -PREC_E_FORMAT)
			return 0;
		h = (const struct perf_event_header *)copy;
		err = err ? err : prec_tfile_write_sideband(r->w, c->t->cpu, h, h->size);
		/* (noted once in the file: the time a full disk names is the file's) */
		err = err ? err : prec_mapset_note(r->maps, h, h->size);
		err = err ? err : prec_auxsplit_flush(c->t->split, split_aux, r);
		if (err)
			r->err = r->err ? r->err : err;
		r->res->sideband_bytes += err ? 0 : h->size;
		return err;
	}
	err = prec_mapset_note(r->maps, h, h->size);
	if (!err)
		err = prec_tfile_write_sideband(r->w, c->t->cpu, h, h->size);
	if (!err)
		err = keep_state(r, c->t->cpu, h);
	if (err) {
		r->err = r->err ? r->err : err;
		return err;
	}
	r->res->sideband_bytes += h->size;
	return 0;
}

static int on_aux(void *ctx, uint64_t off, const void *p1, size_t n1, const void *p2, size_t n2)
{
	struct drain_ctx *c = ctx;
	struct rec *r = c->r;
	int32_t cpu = c->t->cpu, tid = c->t->cpu < 0 ? c->t->tid : -1;
	int err;

	if (c->t->split) {
		err = prec_auxsplit_bytes(c->t->split, off, p1, n1, split_aux, r);
		if (!err && n2)
			err = prec_auxsplit_bytes(c->t->split, off + n1, p2, n2, split_aux, r);
	} else {
		err = write_aux(r, cpu, tid, off, p1, n1);
		if (!err && n2)
			err = write_aux(r, cpu, tid, off + n1, p2, n2);
	}
	if (err)
		r->err = r->err ? r->err : err;
	return err ? err : 0;
}

/*
 * The AUX events of ring @ring after a read that made room: the kernel
 * disabled them when the area filled, perf re-enables them (see
 * prec_ring_aux_reenable()). An enable of a running event is a no-op.
 */
static void reenable_aux(struct rec *r, size_t ring)
{
	struct target *t = &r->t[ring];
	size_t i;

	if (t->counts.truncated > t->truncated_seen) {
		r->res->aux_overruns += t->counts.truncated - t->truncated_seen;
		t->truncated_seen = t->counts.truncated;
	}
	for (i = 0; i < r->nfds; i++) {
		const struct prec_event *e;

		if (r->fds[i].ring != ring || r->fds[i].ev < 0)
			continue;
		e = prec_evlist_event(r->el, (size_t)r->fds[i].ev);
		if (e->aux && prec_kernel_enable(r->k, r->fds[i].fd) == 0)
			r->res->aux_reenables++;
	}
}

static int drain(struct rec *r)
{
	size_t i;

	for (i = 0; i < r->nt; i++) {
		struct drain_ctx c = { r, &r->t[i] };
		long n;

		n = prec_ring_read_data(&r->t[i].ring, on_record, &c);
		if (n == -PREC_E_FORMAT)
			prec_ring_skip_data(&r->t[i].ring);
		else if (n < 0 && !r->err)
			r->err = (int)n;
		/* In snapshot mode the AUX area is read by snapshots only. */
		if (r->t[i].aux && !r->snapshot) {
			n = prec_ring_read_aux(&r->t[i].ring, on_aux, &c);
			if (n < 0 && !r->err)
				r->err = (int)n;
			if (prec_ring_aux_reenable(&r->t[i].ring, n, r->stopping))
				reenable_aux(r, i);
		}
	}
	return r->err;
}

/* Enables (or disables) the tracer's own fds: the AUX events. */
static void tracer_enable(struct rec *r, bool on)
{
	size_t i;

	for (i = 0; i < r->nfds; i++) {
		if (r->fds[i].ev != r->aux_idx || r->aux_idx < 0)
			continue;
		if (on)
			prec_kernel_enable(r->k, r->fds[i].fd);
		else
			prec_kernel_disable(r->k, r->fds[i].fd);
	}
}

/*
 * The newest snapshot_size bytes of every AUX area into the file, the
 * tracer stopped: perf's record__read_auxtrace_snapshot() ->
 * __auxtrace_mmap__read() with snapshot set. The data rings are drained
 * first, so the AUX records of the pieces (a software tracer's streams are
 * split by them) are known; afterwards each stream of a split area goes on
 * behind a gap, since what the tracer produced while stopped is lost.
 */
/*
 * PREC_RECORD_SNAPSHOT (tracefile/tfile.h) of the snapshot just taken, into
 * the file's sideband: what it copied of each stream, why, and when tracing
 * stopped for it (the last PERF_RECORD_AUX: the stop published the area).
 */
static int snapshot_record(struct rec *r, uint32_t reason, uint64_t bytes)
{
	size_t size = PREC_RECORD_SNAPSHOT_SIZE + r->snap_n * PREC_RECORD_SNAPSHOT_STREAM + 32;
	uint8_t *rec = calloc(1, size);
	uint32_t index = ++r->snap_in_file, n = (uint32_t)r->snap_n;
	int32_t ev = reason == PREC_SNAP_TRIGGER ? r->snap_ev : -1;
	uint64_t time = prec_mapset_aux_time(r->maps);
	uint8_t *p;
	size_t i;
	int err;

	if (!rec)
		return -ENOMEM;
	memcpy(rec, &(uint32_t){ PREC_RECORD_SNAPSHOT }, 4);
	memcpy(rec + 6, &(uint16_t){ (uint16_t)size }, 2);
	memcpy(rec + 8, &index, 4);
	memcpy(rec + 12, &reason, 4);
	memcpy(rec + 16, &ev, 4);
	memcpy(rec + 20, &n, 4);
	memcpy(rec + 24, &bytes, 8);
	p = rec + PREC_RECORD_SNAPSHOT_SIZE;
	for (i = 0; i < r->snap_n; i++, p += PREC_RECORD_SNAPSHOT_STREAM) {
		memcpy(p, &r->snap_rg[i].cpu, 4);
		memcpy(p + 4, &r->snap_rg[i].tid, 4);
		memcpy(p + 8, &r->snap_rg[i].start, 8);
		memcpy(p + 16, &r->snap_rg[i].end, 8);
	}
	/* the trailer: pid and tid -1 (no task's), the time, cpu -1, id 0 */
	memcpy(p, &(int32_t){ -1 }, 4);
	memcpy(p + 4, &(int32_t){ -1 }, 4);
	memcpy(p + 8, &time, 8);
	memcpy(p + 16, &(int32_t){ -1 }, 4);
	err = prec_tfile_write_sideband(r->w, -1, rec, size);
	free(rec);
	return err;
}

static int read_snapshots(struct rec *r, uint32_t reason)
{
	size_t i;
	long n;
	bool any = false;
	uint64_t bytes = 0;

	drain(r);
	r->snap_n = 0;
	r->snap_on = true;
	for (i = 0; i < r->nt && !r->err; i++) {
		struct drain_ctx c = { r, &r->t[i] };

		if (!r->t[i].aux)
			continue;
		n = prec_ring_read_snapshot(&r->t[i].ring, r->o->snapshot_size, on_aux, &c);
		if (n < 0 && !r->err)
			r->err = (int)n;
		if (n > 0) {
			r->res->snapshot_bytes += (uint64_t)n;
			bytes += (uint64_t)n;
			any = true;
		}
		if (r->t[i].split)
			prec_auxsplit_gap(r->t[i].split);
	}
	r->snap_on = false;
	/* size is a u16: a record naming more streams than fit is left out */
	if (any && !r->err &&
	    PREC_RECORD_SNAPSHOT_SIZE + r->snap_n * PREC_RECORD_SNAPSHOT_STREAM + 32 <= UINT16_MAX) {
		int err = snapshot_record(r, reason, bytes);

		if (err)
			r->err = err;
	}
	r->res->snapshots += any;
	return r->err;
}

/*
 * A snapshot while tracing goes on, as perf's intel_pt_snapshot_start() and
 * intel_pt_snapshot_finish() (arch/x86/util/intel-pt.c) bracket it: the
 * tracer is disabled (its driver's pmu->stop() publishes aux_head through
 * perf_aux_output_end()), the areas are read, and it is enabled again.
 */
static int take_snapshot(struct rec *r, uint32_t reason)
{
	int err;

	tracer_enable(r, false);
	err = read_snapshots(r, reason);
	if (!r->stopping)
		tracer_enable(r, true);
	return err;
}

/* --snapshot-limit N: N snapshots taken, the recording ends. */
static bool snapshot_limit_reached(const struct rec *r)
{
	return r->o->snapshot_limit && r->res->snapshots >= r->o->snapshot_limit;
}

/* A process that has exited but not been reaped shows state Z (or X). */
static bool zombie(const char *statpath)
{
	char *s = NULL, *rp;
	bool z = false;

	if (prec_read_text(statpath, &s) < 0)
		return true;
	rp = strrchr(s, ')');
	if (rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'))
		z = true;
	free(s);
	return z;
}

/* A process lives while any of its threads does: its leader may be a zombie. */
static bool process_alive(pid_t pid)
{
	char p[64];
	DIR *d;
	struct dirent *de;
	bool alive = false;

	snprintf(p, sizeof(p), "/proc/%d/task", (int)pid);
	d = opendir(p);
	if (!d)
		return false;
	while (!alive && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(p, sizeof(p), "/proc/%d/task/%.20s/stat", (int)pid, de->d_name);
		alive = !access(p, F_OK) && !zombie(p);
	}
	closedir(d);
	return alive;
}

/*
 * Attach mode ends when every process and thread it attached to is gone,
 * not when a process's leader exits (pthread_exit() leaves it a zombie with
 * live threads); or when every ring's owner reports POLLHUP, perf's rule
 * (the pollfd filtering in perf's record loop).
 */
static bool targets_alive(struct rec *r)
{
	const struct prec_record_opts *o = r->o;
	char p[64];
	size_t i;

	if (r->nt) {
		for (i = 0; i < r->nt && r->t[i].hup; i++)
			;
		if (i == r->nt)
			return false;
	}
	for (i = 0; i < o->npids; i++)
		if (process_alive(o->pids[i]))
			return true;
	for (i = 0; i < o->ntids; i++) {
		/* Thread ids resolve under /proc too, though readdir hides them. */
		snprintf(p, sizeof(p), "/proc/%d/stat", (int)o->tids[i]);
		if (!access(p, F_OK) && !zombie(p))
			return true;
	}
	return false;
}

static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
	long fd = syscall(SYS_pidfd_open, pid, 0);

	return fd < 0 ? -errno : (int)fd;
#else
	return -ENOSYS;
#endif
}

/* ---- metadata ---- */

static void fill_info(const struct prec_record_opts *o, struct prec_tfile_info *info,
		      struct utsname *u, char *host)
{
	struct timespec ts;
	size_t n = 0;

	memset(info, 0, sizeof(*info));
	uname(u);
	gethostname(host, 255);
	host[255] = '\0';
	clock_gettime(CLOCK_REALTIME, &ts);
	info->flags = o->emulate ? PREC_TFILE_F_EMULATED : 0;
	info->created_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	info->hostname = host;
	info->kernel_release = u->release;
	info->ptrec_version = PTREC_VERSION;
	info->cmdline_argc = (uint32_t)o->cmd_argc;
	info->cmdline_argv = (const char *const *)o->cmd_argv;
	if (o->argv)
		while (o->argv[n])
			n++;
	info->workload_argc = (uint32_t)n;
	info->workload_argv = (const char *const *)o->argv;
}

/* The intel_pt config fields a decoder needs, as bit masks of the PMU's format. */
static void pt_masks(const struct prec_pmu *pt, struct prec_tfile_machine *m)
{
	static const struct {
		const char *term;
		size_t off;
	} fields[] = {
		{ "tsc", offsetof(struct prec_tfile_machine, pt_tsc_mask) },
		{ "mtc", offsetof(struct prec_tfile_machine, pt_mtc_mask) },
		{ "cyc", offsetof(struct prec_tfile_machine, pt_cyc_mask) },
		{ "noretcomp", offsetof(struct prec_tfile_machine, pt_noretcomp_mask) },
		{ "mtc_period", offsetof(struct prec_tfile_machine, pt_mtc_period_mask) },
		{ "cyc_thresh", offsetof(struct prec_tfile_machine, pt_cyc_thresh_mask) },
		{ "psb_period", offsetof(struct prec_tfile_machine, pt_psb_period_mask) },
		{ "branch", offsetof(struct prec_tfile_machine, pt_branch_mask) },
	};
	size_t i;

	for (i = 0; i < PREC_ARRAY_SIZE(fields); i++) {
		const struct prec_pmu_format *f = prec_pmu_format(pt, fields[i].term);

		if (f)
			memcpy((char *)m + fields[i].off, &f->mask, sizeof(uint64_t));
	}
}

static void host_machine(struct rec *r, struct prec_tfile_machine *m)
{
	struct prec_time_conv tc;
	struct utsname u;
	char vendor[13];
	unsigned fam, mod, step;
	struct prec_pmu *pt = NULL;

	memset(m, 0, sizeof(*m));
	uname(&u);
	snprintf(m->arch, sizeof(m->arch), "%.31s", u.machine);
	prec_cpuid_ident(vendor, &fam, &mod, &step);
	snprintf(m->vendor, sizeof(m->vendor), "%s", vendor);
	m->family = fam;
	m->model = mod;
	m->stepping = step;
	{
		uint32_t l14[2][4];

		if (prec_cpuid_pt(l14)) {
			memcpy(m->cpuid_14_0, l14[0], sizeof(m->cpuid_14_0));
			memcpy(m->cpuid_14_1, l14[1], sizeof(m->cpuid_14_1));
		}
	}
	if (prec_cpuid_tsc(m->cpuid_15) && m->cpuid_15[2])
		m->nominal_freq_hz = (uint64_t)m->cpuid_15[2] * m->cpuid_15[1] / m->cpuid_15[0];
	m->nr_cpus = (uint32_t)sysconf(_SC_NPROCESSORS_CONF);
	m->page_size = (uint32_t)sysconf(_SC_PAGESIZE);
	if (!r->o->per_thread)
		m->flags |= PREC_TFILE_M_PER_CPU | PREC_TFILE_M_CONTEXT_SWITCH;
	if (r->nt && prec_ring_time_conv(&r->t[0].ring, &tc) == 0) {
		m->time_shift = tc.time_shift;
		m->time_mult = tc.time_mult;
		m->time_zero = tc.time_zero;
		m->time_cycles = tc.time_cycles;
		m->time_mask = tc.time_mask;
		if (tc.cap_user_time)
			m->flags |= PREC_TFILE_M_CAP_USER_TIME;
		if (tc.cap_user_time_zero)
			m->flags |= PREC_TFILE_M_CAP_USER_TIME_ZERO;
		if (tc.cap_user_time_short)
			m->flags |= PREC_TFILE_M_CAP_USER_TIME_SHORT;
	}
	if (prec_pmu_load("intel_pt", &pt) == 0) {
		char p[256];
		uint64_t v;

		m->pt_pmu_type = pt->type;
		pt_masks(pt, m);
		if (prec_sys_path(p, sizeof(p), "/sys/bus/event_source/devices/intel_pt/max_nonturbo_ratio") == 0 &&
		    prec_read_u64(p, &v) == 0)
			m->max_nonturbo_ratio = (uint32_t)v;
	}
	prec_pmu_free(pt);
	if (r->aux_idx >= 0) {
		const struct prec_event *aux = prec_evlist_event(r->el, (size_t)r->aux_idx);

		if (!strcmp(aux->pmu, "cs_etm")) {
			struct prec_tfile_etm *blocks = NULL;
			int n = prec_etm_read_sysfs(aux->attr.config, &blocks, &r->etm_regs);

			if (n > 0) {
				m->n_etm = (uint32_t)n;
				m->etm = blocks;
				r->etm_blocks = blocks;
			}
			snprintf(m->arch, sizeof(m->arch), "aarch64");
		}
	}
}

static void emu_machine(struct prec_tfile_machine *m, int nr_cpus)
{
	const struct prec_emu_cpu *c = &prec_emu_cpu;
	struct prec_pmu *pt = NULL;

	memset(m, 0, sizeof(*m));
	snprintf(m->arch, sizeof(m->arch), "x86_64");
	snprintf(m->vendor, sizeof(m->vendor), "%s", c->vendor);
	m->family = c->family;
	m->model = c->model;
	m->stepping = c->stepping;
	memcpy(m->cpuid_14_0, c->cpuid_14_0, sizeof(m->cpuid_14_0));
	memcpy(m->cpuid_14_1, c->cpuid_14_1, sizeof(m->cpuid_14_1));
	memcpy(m->cpuid_15, c->cpuid_15, sizeof(m->cpuid_15));
	m->max_nonturbo_ratio = c->max_nonturbo_ratio;
	m->nominal_freq_hz = c->tsc_hz;
	m->nr_cpus = (uint32_t)nr_cpus;
	m->page_size = (uint32_t)sysconf(_SC_PAGESIZE);
	/* The emulated clock converts to perf time as the identity. */
	m->time_shift = 0;
	m->time_mult = 1;
	m->time_zero = 0;
	m->flags = PREC_TFILE_M_CAP_USER_TIME | PREC_TFILE_M_CAP_USER_TIME_ZERO;
	m->pt_pmu_type = PREC_PMU_TYPE_EMULATED;
	if (prec_pmu_load_emulated(&pt) == 0)
		pt_masks(pt, m);
	prec_pmu_free(pt);
}

/*
 * The EVENTS chunk: every event with the ids the kernel (or the model)
 * gave it, plus the tracking event.
 */
static int write_events(struct rec *r)
{
	size_t n = prec_evlist_nr_events(r->el), i, k;
	struct prec_tfile_event *ev = calloc(n + 1, sizeof(*ev));
	uint64_t *ids = calloc(r->nfds + n + 2, sizeof(uint64_t));
	size_t nid = 0;
	int err;

	if (!ev || !ids) {
		free(ev);
		free(ids);
		return -ENOMEM;
	}
	for (i = 0; i <= n; i++) {
		const struct prec_event *e = i < n ? prec_evlist_event(r->el, i) : NULL;
		struct prec_tfile_event *t = &ev[i];

		t->ids = ids + nid;
		if (e) {
			t->name = e->name;
			t->spec = e->spec;
			t->pmu = e->aux && r->etm ? "cs_etm" : e->pmu;
			prepare_attr(r, &t->attr, e, e->leader == e->idx);
			t->attr.config1 = e->attr.config1;
			if (e->kind == PREC_EV_UPROBE || e->kind == PREC_EV_URETPROBE) {
				/* The probe as specified, not the tracefs event standing in for it. */
				t->attr.type = e->attr.type;
				t->attr.config = e->attr.config;
				t->attr.config2 = e->attr.config2;
				t->attr.config1 = 0; /* a pointer in this process: meaningless later */
			}
			t->leader = e->leader;
			t->flags = (e->aux ? PREC_TFILE_EV_AUX : 0) |
				   (e->aux_action & (PREC_AUX_PAUSE | PREC_AUX_RESUME) ?
					    PREC_TFILE_EV_TRIGGER : 0) |
				   (e->emulated || r->o->emulate ? PREC_TFILE_EV_EMULATED : 0);
		} else {
			t->name = "ptrec:tracking";
			t->spec = "";
			t->pmu = "software";
			t->attr = r->track;
			t->leader = (int32_t)n;
			t->flags = PREC_TFILE_EV_TRACKING;
		}
		for (k = 0; k < r->nfds; k++) {
			if (r->fds[k].ev == (e ? (int)i : -1) && r->fds[k].id)
				ids[nid++] = r->fds[k].id;
		}
		t->n_ids = (uint32_t)(ids + nid - t->ids);
	}
	err = prec_tfile_write_events(r->w, ev, (uint32_t)(n + 1));
	free(ev);
	free(ids);
	return err;
}

/*
 * The text of the kernel's /proc/@name, read through the seam (the real
 * kernel's, or a model's that has a kernel of its own): its length, or
 * -errno (-ENOENT: this kernel has none).
 */
static long kernel_text(struct rec *r, const char *name, char **out)
{
	struct prec_buf b = { 0 };
	char chunk[65536];
	int fd = r->k->proc_open ? r->k->proc_open(r->k->ctx, name) : -ENOENT;
	ssize_t n;
	int e;

	*out = NULL;
	if (fd < 0)
		return fd;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0 && prec_buf_append(&b, chunk, (size_t)n))
			break;
	e = n < 0 ? errno : ENOMEM;
	close(fd);
	if (n != 0 || prec_buf_append(&b, "", 1)) {
		prec_buf_free(&b);
		return -e;
	}
	*out = b.data;
	return (long)b.len - 1;
}

/*
 * Whether kallsyms text hides its addresses: s_show() in kernel/kallsyms.c
 * prints every value as zero when kallsyms_show_value() says no
 * (kptr_restrict). Only then: the per-CPU symbols at the top of an x86-64
 * kernel's list (fixed_percpu_data, Linux 6.1) are at zero in any case.
 */
static bool kallsyms_hidden(const char *t)
{
	for (const char *l = t; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (*l != '\n' && strncmp(l, "0000000000000000", 16))
			return false;
	return true;
}

/* --kcore: the kernel text from the kernel's kcore, and a note when it is not there. */
static void copy_kcore(struct rec *r, const char *ksyms, const char *mods)
{
	struct prec_kcore_result kr;
	char msg[256];
	int fd = r->k->proc_open ? r->k->proc_open(r->k->ctx, "kcore") : -ENOENT, err = fd;

	if (fd >= 0) {
		err = r->res->kallsyms_hidden ? -EPERM :
			prec_kcore_copy_fd(r->w, fd, ksyms, mods, 1ull << 30, &kr);
		close(fd);
	}
	if (fd == -ENOENT) {
		r->res->kcore_missing = true;
		note(r->res, "--kcore: this kernel has no /proc/kcore; kernel code is not in the "
			     "file (decoding kernel trace needs a matching vmlinux)");
	} else if (err) {
		snprintf(msg, sizeof(msg), "--kcore: kernel text not copied: %s%s",
			 prec_strerror(err), err == -EPERM ?
			 " (kallsyms addresses are hidden: run as root or lower kernel.kptr_restrict)" : "");
		note(r->res, msg);
	} else {
		r->res->kcore_bytes = kr.bytes;
	}
}

/*
 * What kernel code needs to decode elsewhere: the kernel's symbols, modules
 * and (--kcore) text, asked of the kernel behind the seam: this host's, or
 * the guest's of the whole-system tracer's model.
 *
 * @at_start: each file asks once its events are open and before anything
 * is enabled, as perf's __cmd_record() copies kcore right after
 * record__open() (builtin-record.c): the text is then the text the traced
 * code runs (a tracepoint's static key is switched when its event is
 * opened), and the file holds it before any trace. So a file cut short
 * (SIGKILL, a full disk) decodes kernel code, and ptdump --follow goes on
 * into it while the recording runs. A kernel that has no kallsyms yet (the
 * model's guest has one only after its run) is asked again at the end;
 * modules loaded during the recording are not in the file.
 */
static void write_kernel_material(struct rec *r, bool at_start)
{
	char *ksyms = NULL, *mods = NULL;
	long n = kernel_text(r, "kallsyms", &ksyms);

	if (at_start && n <= 0) {
		free(ksyms);
		return;
	}
	r->kmat_done = true;
	if (n > 0) {
		/* With kptr_restrict every address reads as zero: useless for decoding. */
		if (kallsyms_hidden(ksyms))
			r->res->kallsyms_hidden = true;
		else
			prec_tfile_write_blob(r->w, PREC_TFILE_KSYMS, 0, ksyms, (size_t)n);
	}
	if ((n = kernel_text(r, "modules", &mods)) > 0)
		prec_tfile_write_blob(r->w, PREC_TFILE_MODULES, 0, mods, (size_t)n);
	else if (n == 0) {
		free(mods);
		mods = NULL;
	}
	if (r->o->kcore)
		copy_kcore(r, ksyms, mods);
	free(ksyms);
	free(mods);
}

/* Kernel symbols are worth their megabytes only when kernel code is traced. */
static bool traces_kernel(struct rec *r)
{
	const struct prec_event *aux;

	if (r->o->kcore)
		return true;
	if (r->aux_idx < 0)
		return false;
	aux = prec_evlist_event(r->el, (size_t)r->aux_idx);
	return !aux->attr.exclude_kernel;
}

/* Rings that carry trace: the sideband-only ones come last. */
static size_t trace_rings(const struct rec *r)
{
	size_t n = 0, i;

	for (i = 0; i < r->nt; i++)
		n += !r->t[i].track_only;
	return n;
}

static void fill_stats(struct rec *r, struct prec_tfile_stats *st,
		       struct prec_tfile_stream_stats *ss)
{
	size_t i;

	memset(st, 0, sizeof(*st));
	/* Once per file with --switch-output: the sums start again each time. */
	r->res->counts = r->synth_counts;
	for (i = 0; i < r->nt; i++) {
		struct prec_ring_counts *c = &r->t[i].counts;
		struct prec_ring_counts *s = &r->res->counts;

		ss[i].cpu = r->t[i].cpu;
		ss[i].tid = r->t[i].cpu < 0 ? r->t[i].tid : -1;
		ss[i].aux_records = c->aux_records;
		ss[i].truncated = c->truncated;
		ss[i].overwrite = c->overwrite;
		ss[i].partial = c->partial;
		ss[i].collision = c->collision;
		s->records += c->records;
		s->aux_records += c->aux_records;
		s->aux_bytes += c->aux_bytes;
		s->truncated += c->truncated;
		s->overwrite += c->overwrite;
		s->partial += c->partial;
		s->collision += c->collision;
		s->lost_events += c->lost_events;
		s->lost += c->lost;
		s->lost_samples += c->lost_samples;
		s->itrace_starts += c->itrace_starts;
	}
	/* A model's rings may hold per-thread streams (auxsplit.h): then no stream is a ring's. */
	st->n_streams = r->aux_idx >= 0 && rings_are_streams(r) ? (uint32_t)trace_rings(r) : 0;
	st->streams = ss;
	r->res->counts.lost += r->res->lost_unwritten;
	st->lost_records = r->res->counts.lost;
	st->lost_bytes = r->res->dropped_bytes;
	st->duration_ns = r->res->duration_ns;
}

static int open_writer(struct rec *r, bool async, bool emulated)
{
	struct prec_tfile_wopts wo;
	int err;

	prec_tfile_wopts_init(&wo);
	wo.level = r->o->compress;
	if (r->o->chunk_size)
		wo.chunk_size = r->o->chunk_size;
	wo.async = async;
	wo.full_policy = async ? PREC_TFILE_FULL_EAGAIN : PREC_TFILE_FULL_BLOCK;
	wo.file_flags = emulated ? PREC_TFILE_F_EMULATED : 0;
	err = prec_outfile_open(&r->of, r->o->output,
				r->o->output_fd > 0 ? r->o->output_fd : STDOUT_FILENO);
	if (err == -ENOTTY)
		return rec_error(r, err, "redirect it: ptrec record -o - ... > FILE, or | ptdump -",
				 "-o -: standard output is a terminal; the trace is binary");
	if (!err)
		err = prec_tfile_writer_new_fd(r->of.fd, &wo, &r->w);
	if (!err && r->of.tmp)
		err = prec_tfile_writer_reserve(r->w, r->of.tmp);
	if (err)
		return rec_error(r, err, "check the directory exists and is writable (-o FILE)",
				 "cannot create %s: %s", r->o->output, prec_strerror(err));
	/*
	 * Code is embedded as soon as its mapping is seen: a cut file still
	 * decodes. Not CPU-wide: every process's code would compete with the
	 * recording's start; that is embedded at the end.
	 */
	err = r->o->system_wide || r->o->cpus ? 0 :
						prec_mapset_start(r->maps, r->w, r->o->no_embed);
	return err ? rec_error(r, err, NULL, "cannot start embedding code: %s", prec_strerror(err)) :
		     0;
}

/*
 * The recording has started (the workload runs, the events are on, the
 * software tracer sent its first record): the new file takes the output's
 * name, and the previous one becomes FILE.old. Before this, a failure
 * leaves the previous file as it was.
 */
static int rec_started(struct rec *r)
{
	int err = prec_outfile_commit(&r->of);

	if (err)
		return rec_error(r, err, "check the directory is writable (-o FILE)",
				 "cannot rename the new trace to %s: %s", r->o->output,
				 prec_strerror(err));
	return 0;
}

/* The report's lines on processes a signal killed (PREC_RECORD_SIGNAL). */
static void note_deaths(struct rec *r)
{
	char msg[sizeof(r->res->notes[0])];
	const char *child;
	unsigned n;

	if (prec_mapset_death(r->maps)) {
		snprintf(msg, sizeof(msg), "workload %.200s", prec_mapset_death(r->maps));
		note(r->res, msg);
	}
	child = prec_mapset_child_death(r->maps, &n);
	if (child && n > 1)
		snprintf(msg, sizeof(msg), "%.200s (and %u more processes the workload started)", child,
			 n - 1);
	else if (child)
		snprintf(msg, sizeof(msg), "%.200s", child);
	if (child)
		note(r->res, msg);
}

/*
 * The progress line while the file is finished (prec_record_opts.progress):
 * the code images handled of those noted and the megabytes written, on
 * standard error every quarter second, rewritten in place and erased at
 * the end. A thread of its own, as the work it shows blocks.
 */
struct fin_progress {
	struct rec *r;
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop, started;
};

static void *fin_progress_main(void *arg)
{
	struct fin_progress *p = arg;
	uint64_t start = prec_now_ns();
	bool shown = false;

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		struct timespec until;

		if (p->r->o->progress > 0 || prec_now_ns() - start >= 1000000000u) {
			size_t done = 0, total = 0;

			if (p->r->maps)
				prec_mapset_progress(p->r->maps, &done, &total);
			fprintf(stderr, "\r[ ptrec: finishing %s: %zu of %zu code images, %.1f MB "
					"written ]\033[K",
				strcmp(p->r->o->output, "-") ? p->r->o->output : "the output", done,
				total, (double)prec_tfile_writer_written(p->r->w) / 1e6);
			fflush(stderr);
			shown = true;
		}
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 250000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&p->cv, &p->mu, &until);
	}
	pthread_mutex_unlock(&p->mu);
	if (shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	return NULL;
}

static void fin_progress_start(struct fin_progress *p, struct rec *r)
{
	memset(p, 0, sizeof(*p));
	p->r = r;
	if (!r->o->progress || (r->o->progress < 0 && !isatty(STDERR_FILENO)))
		return;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	p->started = !pthread_create(&p->th, NULL, fin_progress_main, p);
	if (!p->started) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
	}
}

static void fin_progress_stop(struct fin_progress *p)
{
	if (!p->started)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->th, NULL);
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
}

static int finish_file(struct rec *r)
{
	struct prec_tfile_stream_stats *ss = calloc(r->nt + 1, sizeof(*ss));
	struct prec_tfile_stats st;
	struct fin_progress prog;
	struct stat sb;
	int err;

	if (!ss)
		return -ENOMEM;
	fin_progress_start(&prog, r);
	/* The trace and sideband first: on a full disk they matter more than images. */
	err = prec_tfile_writer_flush(r->w);
	if (!err)
		err = prec_mapset_embed(r->maps, r->w, r->o->no_embed, &r->res->embed);
	if (!err && traces_kernel(r) && !r->kmat_done)
		write_kernel_material(r, false);
	fill_stats(r, &st, ss);
	if (!err)
		err = prec_tfile_writer_close(r->w, &st);
	fin_progress_stop(&prog);
	note_deaths(r);
	if (r->sys_unmapped[0])
		note(r->res, r->sys_unmapped);
	free(ss);
	if (fstat(r->of.fd, &sb) == 0 && S_ISREG(sb.st_mode))
		r->res->file_bytes = (uint64_t)sb.st_size;
	return err;
}

static int write_error(struct rec *r, int err)
{
	if (err == -ENOSPC || err == -EDQUOT) {
		uint64_t t = prec_mapset_aux_time(r->maps);

		return rec_error(r, err, "free some space or write elsewhere (-o); the file holds "
					 "everything up to the error and reads with ptdump",
				 "%s: the disk is full: recording stopped; the file is complete up "
				 "to time %" PRIu64 ".%09" PRIu64, r->o->output, t / 1000000000,
				 t % 1000000000);
	}
	return rec_error(r, err, NULL, "writing %s: %s", r->o->output, prec_strerror(err));
}

/* ---- the kernel backend ---- */

/* cs_etm: the terms must suit every trace unit (perf's cs_etm_validate_config()). */
static int check_etm(struct rec *r)
{
	const struct prec_event *aux;

	if (r->aux_idx < 0)
		return 0;
	aux = prec_evlist_event(r->el, (size_t)r->aux_idx);
	return strcmp(aux->pmu, "cs_etm") ? 0 : prec_etm_check_config(aux->attr.config, r->d);
}

static int on_synth(void *ctx, const struct perf_event_header *h)
{
	struct rec *r = ctx;
	int err;

	prec_ring_count_record(&r->synth_counts, h);
	err = prec_mapset_note(r->maps, h, h->size);
	if (!err)
		err = prec_tfile_write_sideband(r->w, -1, h, h->size);
	if (!err)
		err = keep_state(r, -1, h);
	if (!err)
		r->res->sideband_bytes += h->size;
	return err;
}

/*
 * What was there before the recording: threads and code of the processes
 * attached to (or of every process for a CPU-wide recording), from /proc,
 * as perf's record does before it enables (record__synthesize() in
 * builtin-record.c, synthesize_threads for system-wide targets).
 */
static int synthesize(struct rec *r)
{
	const struct prec_record_opts *o = r->o;
	uint64_t id = 0;
	size_t i;
	int err = 0;

	for (i = 0; i < r->nfds; i++)
		if (r->fds[i].ev < 0 && r->fds[i].id) {
			id = r->fds[i].id;
			break;
		}
	if (o->system_wide || (o->cpus && o->argv))
		err = prec_synth_all(id, on_synth, r);
	for (i = 0; i < o->npids && !err; i++)
		err = prec_synth_process(o->pids[i], NULL, 0, id, on_synth, r);
	for (i = 0; i < o->ntids && !err; i++) {
		pid_t tgid = prec_synth_tgid(o->tids[i]);

		if (tgid > 0)
			err = prec_synth_process(tgid, &o->tids[i], 1, id, on_synth, r);
	}
	return err ? write_error(r, err) : 0;
}

/*
 * A model's own vDSO for the embedder (prec_mapset_vdso_from()): the
 * whole-system tracer's guest kernel's, through proc_open("vdso").
 */
static int model_vdso(void *ctx, void **bytes, size_t *n)
{
	struct rec *r = ctx;
	struct stat st;
	int fd;

	if (!r->model || !r->k || !r->k->proc_open)
		return -ENOENT;
	fd = r->k->proc_open(r->k->ctx, "vdso");
	if (fd < 0)
		return fd;
	*bytes = NULL;
	if (!fstat(fd, &st) && st.st_size > 0 && (*bytes = malloc((size_t)st.st_size)) &&
	    pread(fd, *bytes, (size_t)st.st_size, 0) == st.st_size)
		*n = (size_t)st.st_size;
	else {
		free(*bytes);
		*bytes = NULL;
	}
	close(fd);
	return *bytes ? 0 : -EIO;
}

/* State of one kernel recording's main loop. */
struct kloop {
	struct prec_workload wl;
	bool have_wl, stopping;
	bool deadline_wait; /* -d counts from the model's start of the workload */
	int pidfd;
	uint64_t t0, deadline, last_flush;
	struct pollfd *pfd;
};

/*
 * --filter: the tracer's address filters on each of its fds, after the open
 * and before the enable, as perf's evlist__apply_filters() in record__open().
 */
static int apply_filters(struct rec *r)
{
	size_t i;
	int err;

	for (i = 0; r->o->filter && i < r->nfds; i++) {
		if (r->fds[i].ev != r->aux_idx)
			continue;
		err = prec_kernel_set_filter(r->k, r->fds[i].fd, r->o->filter);
		if (err == -EOPNOTSUPP)
			return rec_error(r, err, "filters on files need a task: record a command, "
					 "-p or -t (not -a/-C alone), with at most the PMU's number of "
					 "address ranges", "the kernel refused the address filters "
					 "'%s': %s", r->o->filter, strerror(-err));
		if (err)
			return rec_error(r, err, "check the addresses and objects of --filter (a "
					 "kernel address needs a tracer that traces the kernel)",
					 "the kernel refused the address filters '%s': %s",
					 r->o->filter, strerror(-err));
	}
	return 0;
}

/*
 * The workload: forked and held here (workload.h), or run by a kernel that
 * runs its own tasks (the model). Each as prec_workload_*.
 */
static int wl_prepare(struct rec *r, struct kloop *k)
{
	const struct prec_kernel_tasks *tk = r->k->tasks;
	int err;

	if (tk)
		return tk->prepare(r->k->ctx, r->o->argv, &k->wl.pid, r->d);
	err = prec_workload_prepare(&k->wl, r->o->argv);
	if (err)
		return rec_error(r, err, NULL, "cannot start %s: %s", r->o->argv[0], strerror(-err));
	return 0;
}

static int wl_start(struct rec *r, struct kloop *k)
{
	const struct prec_kernel_tasks *tk = r->k->tasks;
	int err;

	if (tk)
		return tk->start(r->k->ctx, r->d);
	err = prec_workload_start(&k->wl);
	if (err)
		return rec_error(r, err, "check the command name and PATH", "cannot run %s: %s",
				 r->o->argv[0], strerror(-err));
	k->pidfd = pidfd_of(k->wl.pid);
	return 0;
}

/* 1 once it ended (reaped), 0 while it runs, or the model's error. */
static int wl_wait(struct rec *r, struct kloop *k, bool block)
{
	const struct prec_kernel_tasks *tk = r->k->tasks;
	int ret;

	if (!tk)
		return prec_workload_wait(&k->wl, block);
	if (k->wl.reaped)
		return 1;
	ret = tk->wait(r->k->ctx, block, &k->wl.status, r->d);
	if (ret != 0)
		k->wl.reaped = true;
	return ret;
}

static void wl_kill(struct rec *r, struct kloop *k, int sig)
{
	if (r->k->tasks)
		r->k->tasks->kill(r->k->ctx, sig);
	else
		prec_workload_kill(&k->wl, sig);
}

static void etm_machine(struct rec *r, struct prec_tfile_machine *m);

/* The machine the trace comes from: this host, or the software tracer's. */
static void machine(struct rec *r, struct prec_tfile_machine *m)
{
	if (r->etm)
		etm_machine(r, m);
	else if (r->model)
		emu_machine(m, r->k->ncpus > 0 ? r->k->ncpus : 1);
	else
		host_machine(r, m);
	/* The whole-system tracer's streams per CPU (rings_are_streams()). */
	if (r->model && rings_are_streams(r))
		m->flags |= PREC_TFILE_M_PER_CPU | PREC_TFILE_M_CONTEXT_SWITCH;
	if (r->snapshot)
		m->flags |= PREC_TFILE_M_SNAPSHOT;
}

/* INFO, MACHINE and EVENTS: what every file starts with. */
static int write_header(struct rec *r)
{
	struct prec_tfile_info info;
	struct prec_tfile_machine m;
	struct utsname u;
	char host[256];
	int err;

	fill_info(r->o, &info, &u, host);
	machine(r, &m);
	err = prec_tfile_write_info(r->w, &info);
	if (!err)
		err = prec_tfile_write_machine(r->w, &m);
	if (!err)
		err = write_events(r);
	return err ? write_error(r, err) : 0;
}

/* Opens the events (and forks the held workload); writes INFO, MACHINE and EVENTS. */
static int kernel_begin(struct rec *r, struct kloop *k)
{
	const struct prec_record_opts *o = r->o;
	int err;

	if (k->have_wl) {
		err = wl_prepare(r, k);
		if (err)
			return err;
		r->res->workload = true;
	}
	prepare_tracking(r);
	prepare_kernel_tracking(r);
	err = setup_uprobe_events(r);
	if (err)
		return err;
	err = open_all(r, k->have_wl ? k->wl.pid : -1);
	if (!err)
		err = apply_filters(r);
	if (err)
		return err;
	err = open_writer(r, true, o->emulate);
	if (!err)
		err = write_header(r);
	if (err)
		return err;
	/* A model's tasks are not this host's processes: nothing in /proc describes them. */
	err = r->k->tasks ? 0 : synthesize(r);
	if (!err && traces_kernel(r))
		write_kernel_material(r, true);
	return err;
}

/* ---- --switch-output ---- */

/*
 * The finished file takes the name FILE.YYYYmmddHHMMSSmmm (local time), as
 * perf's record__switch_output() names its files; -N is added when that
 * name is taken.
 */
static int rename_timestamped(struct rec *r)
{
	const char *path = r->o->output;
	char name[4096], stamp[32];
	struct timespec ts;
	struct tm tm;
	int i;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
	snprintf(name, sizeof(name), "%s.%s%03ld", path, stamp, ts.tv_nsec / 1000000);
	for (i = 2; access(name, F_OK) == 0 && i < 1000; i++)
		snprintf(name, sizeof(name), "%s.%s%03ld-%d", path, stamp, ts.tv_nsec / 1000000, i);
	if (rename(path, name))
		return rec_error(r, -errno, "check the directory is writable (-o FILE)",
				 "cannot rename %s to %s: %s", path, name, strerror(errno));
	snprintf(r->res->last_file, sizeof(r->res->last_file), "%s", name);
	r->res->files++;
	return 0;
}

/* The kept side-band (keep_state()) at the start of a new file. */
static int replay_state(struct rec *r)
{
	size_t off = 0;
	int err = 0;

	while (!err && off + 8 + sizeof(struct perf_event_header) <= r->sw_state.len) {
		const struct perf_event_header *h = (const void *)(r->sw_state.data + off + 8);
		int64_t cpu;

		memcpy(&cpu, r->sw_state.data + off, 8);
		err = prec_mapset_note(r->maps, h, h->size);
		if (!err)
			err = prec_tfile_write_sideband(r->w, (int32_t)cpu, h, h->size);
		off += 8 + h->size;
	}
	return err;
}

/*
 * A switch: the current file is finished (everything drained into it, its
 * code images, its statistics) and renamed; a new one takes the output's
 * name and starts as a recording does, with the side-band so far that
 * describes the tasks and their code, so it decodes on its own.
 */
static int switch_file(struct rec *r, bool drain_first)
{
	int err = drain_first ? drain(r) : 0;

	err = err ? err : rec_started(r);
	err = err ? err : finish_file(r);
	if (err)
		return write_error(r, err);
	prec_tfile_writer_free(r->w);
	r->w = NULL;
	err = rename_timestamped(r);
	prec_outfile_close(&r->of);
	prec_mapset_free(r->maps);
	r->maps = err ? NULL : prec_mapset_new();
	if (err || !r->maps)
		return err ? err : -ENOMEM;
	prec_mapset_vdso_from(r->maps, model_vdso, r);
	err = open_writer(r, true, r->o->emulate);
	err = err ? err : write_header(r);
	err = err ? err : replay_state(r);
	r->kmat_done = false;
	if (!err && traces_kernel(r))
		write_kernel_material(r, true);
	err = err ? err : rec_started(r);
	r->sw_base = r->res->aux_bytes + r->res->sideband_bytes;
	r->snap_in_file = 0;
	return err;
}

/*
 * A file that reached --switch-output=SIZE gives way when more trace is
 * there to write, before it is read: the new file takes it, and a recording
 * that ends right after the switch leaves no file without trace.
 */
static int switch_when_full(struct rec *r)
{
	size_t i;

	if (!r->sw_full)
		return 0;
	for (i = 0; i < r->nt; i++)
		if (r->t[i].aux && (r->snapshot ? prec_ring_data_pending(&r->t[i].ring) :
						   prec_ring_aux_pending(&r->t[i].ring)))
			break;
	if (i == r->nt)
		return 0;
	r->sw_full = false;
	return switch_file(r, false);
}

/* Whether to switch now: SIGUSR2 (@sig), the time up (and notes a size reached). */
static bool switch_due(struct rec *r, bool sig)
{
	const struct prec_record_opts *o = r->o;
	uint64_t now;

	if (sig && o->switch_signal)
		return true;
	/* The size reached: the switch waits for more trace (switch_when_full()). */
	if (o->switch_size &&
	    r->res->aux_bytes + r->res->sideband_bytes - r->sw_base >= o->switch_size)
		r->sw_full = true;
	now = prec_now_ns();
	if (r->sw_next && now >= r->sw_next) {
		r->sw_next = now + (uint64_t)(o->switch_secs * 1e9);
		return true;
	}
	return false;
}

/* Enables the events or lets the workload exec into them. */
static int kernel_start(struct rec *r, struct kloop *k)
{
	const struct prec_record_opts *o = r->o;
	int err;

	k->t0 = prec_now_ns();
	/*
	 * CPU-wide events are enabled here, before the workload runs: the
	 * kernel's perf_event_exec() enables only the exec'ing task's own
	 * context, never a CPU's. As __cmd_record() in perf's builtin-record.c:
	 * enable explicitly unless the target is only the workload.
	 */
	if (!r->exec_enable) {
		err = enable_all(r);
		if (err)
			return err;
	} else {
		err = enable_kernel_sideband(r);
		if (err)
			return err;
	}
	if (k->have_wl) {
		err = wl_start(r, k);
		if (err)
			return err;
	}
	/*
	 * The previous file gives way once the recording has started: here for
	 * the kernel; for the model (whose workload may still fail to start,
	 * e.g. no QEMU) at the first record it writes, or at the end.
	 */
	err = r->model ? 0 : rec_started(r);
	if (err)
		return err;
	if (o->duration > 0 && k->have_wl && r->k->tasks && r->k->tasks->started_at)
		k->deadline_wait = true;
	else if (o->duration > 0)
		k->deadline = k->t0 + (uint64_t)(o->duration * 1e9);
	if (o->switch_secs > 0)
		r->sw_next = k->t0 + (uint64_t)(o->switch_secs * 1e9);
	k->last_flush = k->t0;
	k->pfd = calloc(r->nt + 3, sizeof(*k->pfd));
	return k->pfd ? 0 : -ENOMEM;
}

/*
 * Once a second, when the writer is idle, cut what is buffered into chunks:
 * a SIGKILL or a crash then loses at most a second of sideband.
 */
static int periodic_flush(struct rec *r, struct kloop *k)
{
	int err;

	if (prec_now_ns() - k->last_flush <= 1000000000ull)
		return 0;
	k->last_flush = prec_now_ns();
	if (prec_tfile_writer_queued(r->w) != 0)
		return 0;
	err = prec_tfile_writer_flush(r->w);
	return err ? write_error(r, err) : 0;
}

/* A stop request or the deadline: returns true when the loop should end now. */
static bool kernel_should_stop(struct rec *r, struct kloop *k, bool stop_req)
{
	const struct prec_record_opts *o = r->o;

	if (stop_req) {
		char c;

		if (read(o->stop_fd, &c, 1) < 0 && errno != EAGAIN) {
			/* nothing */
		}
		if (!k->have_wl)
			return true;
		if (!k->stopping && o->stop_signal)
			wl_kill(r, k, o->stop_signal);
		k->stopping = true;
	}
	if (snapshot_limit_reached(r) && !k->stopping) {
		/* --snapshot-limit: as the end of -d. */
		if (!k->have_wl)
			return true;
		wl_kill(r, k, SIGTERM);
		k->stopping = true;
	}
	if (k->deadline_wait) {
		uint64_t t = r->k->tasks->started_at(r->k->ctx);

		k->deadline = t ? t + (uint64_t)(o->duration * 1e9) : 0;
		k->deadline_wait = !t;
	}
	if (k->deadline && prec_now_ns() >= k->deadline) {
		if (!k->have_wl)
			return true;
		if (!k->stopping)
			wl_kill(r, k, SIGTERM);
		k->stopping = true;
		k->deadline = 0;
	}
	return false;
}

/*
 * What was asked for since the last drain: a snapshot by SIGUSR2 (the
 * caller's pipe, @readable) or by a snapshot trigger's sample (one for all
 * of them), then a switch of files. With both, SIGUSR2 takes the snapshot
 * into the file and then switches, as perf's -S with --switch-output.
 */
static int user_requests(struct rec *r, bool readable)
{
	char c[16];
	bool sig = readable && read(r->o->snapshot_fd, c, sizeof(c)) > 0;
	bool snap = r->snap_due || (sig && r->snapshot);
	int err = 0;

	if (snap && !snapshot_limit_reached(r))
		err = take_snapshot(r, r->snap_due ? PREC_SNAP_TRIGGER : PREC_SNAP_SIGNAL);
	r->snap_due = false;
	if (!err && r->switching && switch_due(r, sig))
		err = switch_file(r, true);
	return err;
}

static int kernel_loop(struct rec *r, struct kloop *k)
{
	const struct prec_record_opts *o = r->o;
	struct pollfd *pfd = k->pfd;
	size_t i, np;
	int err;

	for (;;) {
		np = 0;
		for (i = 0; i < r->nt; i++) {
			pfd[np].fd = r->t[i].hup ? -1 : r->t[i].owner;
			pfd[np++].events = POLLIN;
		}
		pfd[np].fd = o->stop_fd;
		pfd[np++].events = POLLIN;
		pfd[np].fd = k->pidfd;
		pfd[np++].events = POLLIN;
		pfd[np].fd = r->snapshot || o->switch_signal ? o->snapshot_fd : -1;
		pfd[np++].events = POLLIN;
		err = r->k->poll(r->k->ctx, pfd, np, 100);
		if (err < 0 && err != -EINTR)
			return err;
		err = switch_when_full(r);
		err = err ? err : drain(r);
		if (!err && (r->snapshot || r->switching))
			err = user_requests(r, pfd[r->nt + 2].fd >= 0 &&
						  (pfd[r->nt + 2].revents & POLLIN));
		if (err)
			return write_error(r, err);
		if (o->per_thread)
			for (i = 0; i < r->nt; i++)
				if (pfd[i].revents & POLLHUP)
					r->t[i].hup = true;
		err = periodic_flush(r, k);
		if (err)
			return err;
		if (k->have_wl) {
			err = wl_wait(r, k, false);
			if (err)
				return err < 0 ? err : 0;
		}
		if (kernel_should_stop(r, k, o->stop_fd >= 0 && (pfd[r->nt].revents & POLLIN)))
			return 0;
		if (!k->have_wl && !o->system_wide && !targets_alive(r))
			return 0;
	}
}

/*
 * After the loop (@err its result): the last drain, the workload's status,
 * the file's end. A workload the loop saw end (reaped, by a signal or not)
 * left all its trace in the rings: do_exit() runs perf_event_exit_task()
 * before exit_notify() makes the task reapable, and taking its events out
 * of the context stops each AUX event with PERF_EF_UPDATE (intel_pt's
 * pt_event_stop() ends with perf_aux_output_end(): the last PERF_RECORD_AUX,
 * aux_head moved). CPU-wide tracers are stopped the same way by
 * disable_all() (the ioctl returns after the CPU ran the disable).
 */
static int kernel_end(struct rec *r, struct kloop *k, int err)
{
	r->res->duration_ns = prec_now_ns() - k->t0;
	r->stopping = true;
	disable_all(r);
	if (!err) {
		/* Snapshot mode: the last moments, at the end of the workload or on stop. */
		err = r->snapshot && !snapshot_limit_reached(r) ?
			      read_snapshots(r, PREC_SNAP_END) : 0;
		err = err ? err : switch_when_full(r);
		err = err ? err : drain(r);
		if (err)
			err = write_error(r, err);
	}
	count_unwritten_lost(r);
	if (k->have_wl) {
		if (!wl_wait(r, k, false)) {
			wl_kill(r, k, SIGTERM);
			wl_wait(r, k, true);
		}
		r->res->exit_code = prec_workload_exit_code(&k->wl);
	}
	if (!err)
		err = rec_started(r);
	if (!err) {
		err = finish_file(r);
		if (err)
			err = write_error(r, err);
	}
	/* --switch-output: the last file is named as the others (perf does the same at exit). */
	if (!err && r->switching)
		err = rename_timestamped(r);
	return err;
}

/*
 * aux-sample-size asks for samples that carry a piece of the AUX area
 * (PERF_SAMPLE_AUX). intel_pt fills them only from a snapshot-mode AUX
 * buffer (pt_event_snapshot_aux() in arch/x86/events/intel/pt.c returns
 * nothing otherwise), and ptrec neither writes nor decodes such samples (its
 * snapshot mode, -S, copies the area instead): refuse rather than record
 * samples nothing reads.
 */
static int check_aux_sampling(struct rec *r)
{
	size_t i, n = prec_evlist_nr_events(r->el);

	for (i = 0; i < n; i++) {
		const struct prec_event *ev = prec_evlist_event(r->el, i);

		if (ev->attr.aux_sample_size)
			return rec_error(r, -EOPNOTSUPP,
					 "drop aux-sample-size: the whole trace is recorded, or with "
					 "-S the newest of it",
					 "%s: aux-sample-size (AUX area samples) is not recorded by "
					 "ptrec; -S takes snapshots of the AUX area instead", ev->name);
	}
	return 0;
}

static int record_kernel(struct rec *r)
{
	struct kloop k;
	int err;

	memset(&k, 0, sizeof(k));
	k.wl.go_fd = k.wl.err_fd = -1;
	k.pidfd = -1;
	k.have_wl = r->o->argv != NULL;

	err = kernel_begin(r, &k);
	if (!err)
		err = kernel_start(r, &k);
	if (!err) {
		err = kernel_loop(r, &k);
		err = kernel_end(r, &k, err);
	}
	free(k.pfd);
	if (k.pidfd >= 0)
		close(k.pidfd);
	if (k.have_wl) {
		if (k.wl.go_fd >= 0) {
			/* Never started: let it exit without running. */
			prec_workload_fini(&k.wl);
			prec_workload_wait(&k.wl, true);
		}
		prec_workload_fini(&k.wl);
	}
	return err;
}

/* ---- the software tracer: PMUs of the model of the kernel ---- */

static int emu_config(struct rec *r, struct prec_emu_config *cfg, struct prec_emu_trigger **trig)
{
	size_t n = prec_evlist_nr_events(r->el), i, nt = 0;
	const struct prec_event *aux = prec_evlist_event(r->el, (size_t)r->aux_idx);
	struct prec_emu_trigger *t = calloc(n ? n : 1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	if (r->aux_idx != 0) {
		free(t);
		return rec_error(r, -EINVAL, "write the tracer first: -e 'intel_pt//u' -e ...",
				 "under --emulate the tracer must be the first event");
	}
	memset(cfg, 0, sizeof(*cfg));
	if (aux->attr.type != PREC_PMU_TYPE_EMULATED_ETM)
		prec_emu_set_pt_config(cfg, aux->attr.config);
	cfg->start_paused = aux->aux_action & PREC_AUX_START_PAUSED;
	for (i = 0; i < n; i++) {
		const struct prec_event *e = prec_evlist_event(r->el, i);
		struct prec_emu_trigger *x = &t[nt];

		if (e->aux)
			continue;
		x->event_index = (int)i;
		x->action = e->snapshot			    ? PREC_EMU_ACT_SNAPSHOT :
			    e->aux_action & PREC_AUX_PAUSE ? PREC_EMU_ACT_PAUSE :
			    e->aux_action & PREC_AUX_RESUME ? PREC_EMU_ACT_RESUME : PREC_EMU_ACT_NONE;
		switch (e->kind) {
		case PREC_EV_UPROBE:
		case PREC_EV_URETPROBE:
			x->kind = e->kind == PREC_EV_UPROBE ? PREC_EMU_UPROBE : PREC_EMU_URETPROBE;
			x->path = e->uprobe.path;
			x->offset = e->uprobe.file_offset;
			break;
		case PREC_EV_TRACEPOINT:
			if (e->tp.syscall_dir == PREC_SYSCALL_NONE)
				goto unsupported;
			x->kind = e->tp.syscall_dir == PREC_SYSCALL_ENTER ? PREC_EMU_SYS_ENTER :
									     PREC_EMU_SYS_EXIT;
			x->nr = e->tp.syscall_nr;
			break;
		case PREC_EV_KPROBE:
		case PREC_EV_KRETPROBE:
			if (!r->o->emulate_system || e->kprobe.offset)
				goto unsupported;
			x->kind = e->kind == PREC_EV_KPROBE ? PREC_EMU_KENTRY : PREC_EMU_KRET;
			x->func = e->kprobe.func;
			break;
		case PREC_EV_HW:
			if (e->attr.config != PERF_COUNT_HW_INSTRUCTIONS || !e->period)
				goto unsupported;
			x->kind = PREC_EMU_INSNS;
			x->period = e->period;
			break;
		default:
			goto unsupported;
		}
		nt++;
		continue;
unsupported:
		free(t);
		return rec_error(r, -EINVAL,
				 "the software tracer takes uprobe:, uretprobe:, syscalls:sys_enter_*/"
				 "sys_exit_* and instructions/period=N/ triggers (--emulate=system: "
				 "kprobe:FUNCTION and kretprobe:FUNCTION, at a function's entry)",
				 "%s: the software tracer cannot carry out this event", e->name);
	}
	cfg->triggers = t;
	cfg->ntriggers = nt;
	cfg->plugin = r->o->plugin;
	cfg->qemu = r->o->qemu;
	cfg->truth_path = r->o->truth;
	cfg->argv = r->o->argv;
	*trig = t;
	return 0;
}

/* The CoreSight tracer's machine: one trace unit describes every per-thread stream. */
static void etm_machine(struct rec *r, struct prec_tfile_machine *m)
{
	struct prec_etm_regs regs;

	memset(m, 0, sizeof(*m));
	snprintf(m->arch, sizeof(m->arch), "aarch64");
	snprintf(m->vendor, sizeof(m->vendor), "ARM");
	m->nr_cpus = (uint32_t)(r->k->ncpus > 0 ? r->k->ncpus : 1);
	m->page_size = (uint32_t)sysconf(_SC_PAGESIZE);
	m->time_mult = 1;
	m->flags = PREC_TFILE_M_CAP_USER_TIME | PREC_TFILE_M_CAP_USER_TIME_ZERO;
	/* Raw data, no trace IDs in it: the first stream's unit stands for all. */
	prec_etm_regs_get(&r->etm_cfg, PREC_ETM_CSID_BASE, &regs);
	prec_etm_regs_block(&regs, 0, r->etm_words);
	r->etm_blk.cpu = 0;
	r->etm_blk.kind = (uint32_t)r->etm_words[0];
	r->etm_blk.nregs = PREC_ETM_BLOCK_WORDS;
	r->etm_blk.regs = r->etm_words;
	m->n_etm = 1;
	m->etm = &r->etm_blk;
}

/* The ETMv4 tracer's run: the Intel PT terms that apply, the same triggers. */
static void etm_config(struct rec *r)
{
	struct prec_etm_config *c = &r->etm_cfg;

	const struct prec_attr *a = &prec_evlist_event(r->el, (size_t)r->aux_idx)->attr;

	memset(c, 0, sizeof(*c));
	c->plugin = r->o->plugin_etm;
	c->qemu = r->o->qemu;
	c->timestamp = r->emu_cfg.tsc;
	if (a->type == PREC_PMU_TYPE_EMULATED_ETM) {
		/* cs_etm's own bits (coresight-etm-perf.c: ETM_OPT_TS, ETM_OPT_CTXTID) */
		c->timestamp = a->config >> 28 & 1;
		c->contextid = a->config >> 14 & 1;
	}
	c->start_paused = r->emu_cfg.start_paused;
	c->triggers = r->emu_cfg.triggers;
	c->ntriggers = r->emu_cfg.ntriggers;
	c->truth_path = r->o->truth;
	c->argv = r->o->argv;
}

/* ---- the whole-system software tracer (--emulate=system) ---- */

/* A file beside the user-mode plugin, or the environment's @env. */
static const char *sibling(const struct rec *r, const char *env, const char *name, char *buf,
			   size_t size)
{
	const char *e = getenv(env), *slash = r->o->plugin ? strrchr(r->o->plugin, '/') : NULL;

	if (e && *e)
		return e;
	snprintf(buf, size, "%.*s%s", slash ? (int)(slash + 1 - r->o->plugin) : 0,
		 slash ? r->o->plugin : "", name);
	return buf;
}

/*
 * The whole-system tracer's window edges: kprobe:/kretprobe: name a kernel
 * function; syscalls:sys_enter_NAME / sys_exit_NAME are the entry and return
 * of __x64_sys_NAME.
 */
static int sys_triggers(struct rec *r, const struct prec_emu_config *cfg,
			struct prec_emusys_trigger *st, char (*names)[128])
{
	for (size_t i = 0; i < cfg->ntriggers; i++) {
		const struct prec_emu_trigger *t = &cfg->triggers[i];
		const struct prec_event *e = prec_evlist_event(r->el, (size_t)t->event_index);
		const char *n = e->kind == PREC_EV_TRACEPOINT && e->tp.name ? e->tp.name : NULL;

		st[i].event_index = t->event_index;
		st[i].action = t->action;
		if (t->kind == PREC_EMU_KENTRY || t->kind == PREC_EMU_KRET) {
			st[i].ret = t->kind == PREC_EMU_KRET;
			st[i].func = t->func;
			continue;
		}
		if (t->kind == PREC_EMU_UPROBE || t->kind == PREC_EMU_URETPROBE) {
			struct prec_diag d = { 0 };
			int err = prec_emusys_ucheck(t->path, t->offset, &d);

			if (err)
				return rec_error(r, err, d.hint, "%s", d.msg);
			st[i].upath = t->path;
			st[i].uoff = t->offset;
			st[i].ret = t->kind == PREC_EMU_URETPROBE;
			continue;
		}
		if (t->kind == PREC_EMU_INSNS) {
			st[i].period = t->period;
			st[i].user = !e->attr.exclude_user;
			st[i].kernel = !e->attr.exclude_kernel;
			continue;
		}
		if ((t->kind != PREC_EMU_SYS_ENTER && t->kind != PREC_EMU_SYS_EXIT) || !n ||
		    t->nr < 0 || strncmp(n, "sys_e", 5) || !strchr(n + 5, '_'))
			return rec_error(r, -EINVAL, "use kprobe:FUNCTION, kretprobe:FUNCTION, "
					 "syscalls:sys_enter_NAME and sys_exit_NAME, uprobe:PROGRAM:"
					 "FUNCTION, uretprobe:PROGRAM:FUNCTION or "
					 "instructions/period=N/",
					 "%s: the whole-system tracer takes kernel function probes, "
					 "the tracepoints of one system call each and instruction "
					 "counters",
					 e->name ? e->name : "?");
		n = strchr(n + 5, '_') + 1;
		snprintf(names[i], sizeof(names[i]), "__x64_sys_%s", n);
		st[i].ret = t->kind == PREC_EMU_SYS_EXIT;
		st[i].func = names[i];
	}
	return 0;
}

/*
 * --emulate=system: the whole-system tracer's run, which the model carries
 * out as the PMU behind the emulated intel_pt (kmodel.h): the intel_pt terms
 * and triggers of emu_config(), each trigger placed at a guest kernel
 * function (sys_triggers()), the plugin and the guest's init found beside
 * the user-mode plugin.
 */
static int sys_config(struct rec *r)
{
	const struct prec_event *aux = prec_evlist_event(r->el, (size_t)r->aux_idx);
	struct prec_emusys_config *sc = &r->sys_cfg;
	size_t n = r->emu_cfg.ntriggers + 1;
	int err;

	r->sys_trig = calloc(n, sizeof(*r->sys_trig));
	r->sys_names = calloc(n, sizeof(*r->sys_names));
	if (!r->sys_trig || !r->sys_names)
		return -ENOMEM;
	err = sys_triggers(r, &r->emu_cfg, r->sys_trig, r->sys_names);
	if (err)
		return err;
	r->emu_cfg.plugin = sibling(r, "PTREC_PLUGIN_SYS", "ptrec-emu-sys.so", r->sys_plugin,
				    sizeof(r->sys_plugin));
	memset(sc, 0, sizeof(*sc));
	sc->pt = &r->emu_cfg;
	sc->guest_init = sibling(r, "PTREC_GUEST_INIT", "ptrec-guest", r->sys_init,
				 sizeof(r->sys_init));
	sc->user = !aux->attr.exclude_user;
	sc->kernel = !aux->attr.exclude_kernel;
	sc->per_cpu = !r->o->per_thread;
	sc->triggers = r->sys_trig;
	sc->ntriggers = r->emu_cfg.ntriggers;
	sc->unmapped = r->sys_unmapped;
	sc->unmapped_size = sizeof(r->sys_unmapped);
	return 0;
}

/*
 * --emulate: the workload's program says which tracer (x86-64: Intel PT,
 * aarch64: ETMv4); --emulate=system: the whole-system tracer. The tracer
 * becomes a PMU of a model of the kernel, and the recording runs through
 * the model as it would through the kernel.
 */
static int emu_setup(struct rec *r)
{
	const struct prec_record_opts *o = r->o;
	struct prec_kmodel_emu mc;
	char path[4096];
	size_t i;
	int err;

	if (!o->argv)
		return rec_error(r, -EINVAL, "give the program after --: ptrec record --emulate -- prog",
				 "--emulate runs a workload; -p and -t need trace hardware");
	if (o->emulate_system && r->aux_idx < 0)
		return rec_error(r, -EINVAL, "ptrec record --emulate=system -e 'intel_pt//k' -- prog",
				 "--emulate=system traces a workload with an intel_pt event");
	/* The plugin follows the workload's tasks only: no trace of the guest's others. */
	if (o->emulate_system && (o->system_wide || o->cpus))
		return rec_error(r, -EINVAL, "record the workload per CPU (the default) or with "
				 "--per-thread",
				 "--emulate=system traces the workload's tasks; -a and -C (every task "
				 "of the guest) are not done yet");
	err = prec_emu_check_program(o->argv[0], path, sizeof(path), r->d);
	if (err == -ENOEXEC && !o->emulate_system &&
	    prec_etm_check_program(o->argv[0], path, sizeof(path), NULL) == 0) {
		if (r->d)
			memset(r->d, 0, sizeof(*r->d));
		r->etm = true;
		err = 0;
	}
	if (!err)
		err = emu_config(r, &r->emu_cfg, &r->emu_trig);
	if (err)
		return err;
	if (!r->etm &&
	    prec_evlist_event(r->el, (size_t)r->aux_idx)->attr.type == PREC_PMU_TYPE_EMULATED_ETM)
		return rec_error(r, -EINVAL, "trace x86-64 programs with intel_pt//u",
				 "%s is not an aarch64 program: the software cs_etm traces those",
				 o->argv[0]);
	if (r->etm)
		etm_config(r);
	if (o->emulate_system && (err = sys_config(r)))
		return err;
	/* The guest runs on one CPU (emusys.c: qemu-system's -smp 1). */
	r->model = prec_kmodel_new(o->emulate_system ? 1 :
				   o->emulate_cpus > 0 ? o->emulate_cpus : PREC_EMULATE_CPUS);
	r->emu_keys = calloc(r->emu_cfg.ntriggers + 1, sizeof(*r->emu_keys));
	if (!r->model || !r->emu_keys)
		return -ENOMEM;
	for (i = 0; i < r->emu_cfg.ntriggers; i++) {
		const struct prec_event *e = prec_evlist_event(r->el,
							       (size_t)r->emu_trig[i].event_index);

		prepare_attr(r, &r->emu_keys[i], e, e->leader == e->idx);
	}
	memset(&mc, 0, sizeof(mc));
	mc.aux_type = prec_evlist_event(r->el, (size_t)r->aux_idx)->attr.type;
	mc.pt = r->etm || o->emulate_system ? NULL : &r->emu_cfg;
	mc.etm = r->etm ? &r->etm_cfg : NULL;
	mc.sys = o->emulate_system ? &r->sys_cfg : NULL;
	mc.trigger_attrs = r->emu_keys;
	mc.slice = o->emulate_slice;
	err = prec_kmodel_emulate(r->model, &mc);
	if (err)
		return err;
	r->k = prec_kmodel_kernel(r->model);
	return 0;
}

static bool has_snapshot_trigger(const struct prec_evlist *el)
{
	size_t i, n = prec_evlist_nr_events(el);

	for (i = 0; i < n; i++)
		if (prec_evlist_event(el, i)->snapshot)
			return true;
	return false;
}

/*
 * A snapshot trigger pauses the tracer in the kernel, and nothing but an
 * aux_resume event of the group ends that pause (hw.aux_paused is cleared
 * only in __perf_event_aux_pause(), from perf_event_aux_pause() in an
 * overflow: no ioctl does it; disabling and enabling the tracer, which the
 * snapshot does, leaves it paused). Warn of a group without one.
 */
static void check_snapshot_resume(struct rec *r)
{
	size_t i, k, n = prec_evlist_nr_events(r->el);
	char msg[sizeof(r->res->notes[0])];

	for (i = 0; i < n; i++) {
		const struct prec_event *e = prec_evlist_event(r->el, i);

		if (!e->snapshot)
			continue;
		for (k = 0; k < n; k++) {
			const struct prec_event *x = prec_evlist_event(r->el, k);

			if (x->leader == e->leader && (x->aux_action & PREC_AUX_RESUME))
				break;
		}
		if (k < n)
			continue;
		snprintf(msg, sizeof(msg), "warning: nothing in the group of snapshot trigger %.80s "
			 "resumes tracing: it stays paused after the first snapshot (add an event "
			 "with aux-action=resume)", e->name);
		note(r->res, msg);
	}
}

/*
 * Decoding starts at a PSB: a snapshot no bigger than the PSB period (plus
 * perf's INTEL_PT_PSB_PERIOD_NEAR, 256) may hold none. perf warns ("Intel
 * PT snapshot size ... may be too small for PSB period",
 * intel_pt_recording_options()); the period is 2^(psb_period + 11) bytes
 * (config bits 24-27, intel_pt_psb_period()).
 */
static void check_snapshot_psb(struct rec *r, uint64_t size)
{
	const struct prec_event *aux = prec_evlist_event(r->el, (size_t)r->aux_idx);
	uint64_t period = 1ull << (((aux->attr.config >> 24) & 15) + 11);
	char msg[sizeof(r->res->notes[0])];

	if (strcmp(aux->pmu, "intel_pt") || size > period + 256)
		return;
	snprintf(msg, sizeof(msg), "warning: the snapshot size (%llu bytes) may be too small for "
		 "the PSB period (%llu bytes): a snapshot may hold nothing to decode; lower "
		 "psb_period (e.g. pt/psb_period=0/)", (unsigned long long)size,
		 (unsigned long long)period);
	note(r->res, msg);
}

/*
 * -S: the sizes as perf's intel_pt_recording_options() settles them for
 * snapshot mode: a SIZE without -m ,AUX makes the AUX area SIZE rounded up
 * to a power of two; a SIZE beyond the AUX area is refused; no SIZE is the
 * whole area. It needs the tracer ("Snapshot mode (-S option) requires
 * intel_pt PMU event").
 */
static int snapshot_sizes(struct rec *r)
{
	const struct prec_record_opts *o = r->o;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), a;

	if (r->aux_idx < 0)
		return rec_error(r, -EINVAL, "add the tracer: -e pt//u (or cs_etm//)",
				 "snapshot mode (-S) copies the tracer's AUX area, and no event "
				 "is a tracer");
	if (o->snapshot_size && !o->aux_bytes) {
		for (a = page; a < o->snapshot_size; a <<= 1)
			;
		r->aux_bytes = a;
	}
	check_snapshot_resume(r);
	if (o->snapshot_size > r->aux_bytes)
		return rec_error(r, -EINVAL, "raise the AUX area (-m ,SIZE) or take less (-S SIZE)",
				 "the snapshot size (%llu bytes) is larger than the AUX area "
				 "(%llu bytes)", (unsigned long long)o->snapshot_size,
				 (unsigned long long)r->aux_bytes);
	return 0;
}

int prec_record(const struct prec_record_opts *o, struct prec_record_result *res,
		struct prec_diag *d)
{
	struct rec r;
	size_t i;
	int err;
	bool priv = prec_probe_privileged();

	memset(res, 0, sizeof(*res));
	memset(&r, 0, sizeof(r));
	r.o = o;
	r.k = o->kernel ? o->kernel : prec_kernel_sys();
	r.res = res;
	r.d = d;
	r.el = o->el;
	r.aux_idx = prec_evlist_aux_index(o->el);
	{
		uint64_t kb;

		r.data_bytes = o->data_bytes;
		r.aux_bytes = o->aux_bytes;
		prec_record_ring_defaults(priv, r.aux_idx >= 0,
					  prec_read_u64("/proc/sys/kernel/perf_event_mlock_kb", &kb) ?
						  -1 : (long)kb,
					  sysconf(_SC_PAGESIZE), &r.data_bytes, &r.aux_bytes);
	}
	r.snapshot = o->snapshot || has_snapshot_trigger(o->el);
	err = r.snapshot ? snapshot_sizes(&r) : 0;
	r.switching = o->switch_signal || o->switch_size || o->switch_secs > 0;
	if (!err && r.switching && (!strcmp(o->output, "-") || o->emulate_system))
		err = rec_error(&r, -EINVAL, "write to a file (-o FILE); --emulate for the software "
				"tracer", "--switch-output needs a file to rename (not -o -) and does "
				"not go with --emulate=system yet");
	if (!err && o->snapshot_limit && !r.snapshot)
		err = rec_error(&r, -EINVAL, "add -S, or the snapshot term to a trigger",
				"--snapshot-limit goes with snapshot mode");
	if (err)
		return err;
	/*
	 * enable_on_exec only when the workload is the whole target, as
	 * evsel__config() in perf's util/evsel.c does (target__none()).
	 */
	r.exec_enable = o->argv && !o->system_wide && !o->cpus;
	r.maps = prec_mapset_new();
	if (r.maps)
		prec_mapset_vdso_from(r.maps, model_vdso, &r);
	r.throttled = calloc(prec_evlist_nr_events(o->el) + 1, sizeof(uint64_t));
	if (!r.maps || !r.throttled) {
		prec_mapset_free(r.maps);
		free(r.throttled);
		free(r.snap_rg);
		return -ENOMEM;
	}

	if (o->emulate && !o->kernel)
		err = emu_setup(&r);
	else
		err = check_etm(&r);
	/* (the software tracer's CoreSight is known once emu_setup() has looked at the program) */
	if (!err && r.snapshot && !r.etm)
		check_snapshot_psb(&r, o->snapshot_size ? o->snapshot_size : r.aux_bytes);
	if (!err)
		err = check_aux_sampling(&r) ?: record_kernel(&r);
	res->nstreams = r.aux_idx >= 0 && rings_are_streams(&r) ? (int)trace_rings(&r) : 0;
	for (i = 0; i < r.nt; i++) {
		if (r.t[i].split)
			res->nstreams += (int)prec_auxsplit_nstreams(r.t[i].split);
		prec_auxsplit_free(r.t[i].split);
		if (r.t[i].base)
			r.k->munmap(r.k->ctx, r.t[i].base, r.t[i].map_len);
		if (r.t[i].aux)
			r.k->munmap(r.k->ctx, r.t[i].aux, r.t[i].aux_len);
		prec_ring_fini(&r.t[i].ring);
	}
	for (i = 0; i < r.nfds; i++)
		r.k->close(r.k->ctx, r.fds[i].fd);
	prec_uprobe_events_free(r.upe);
	free(r.upe_ids);
	report_throttles(&r);
	free(r.throttled);
	free(r.snap_rg);
	free(r.fds);
	free(r.t);
	free(r.tids);
	prec_mapset_stop(r.maps);
	if (r.w) {
		if (err)
			prec_tfile_writer_flush(r.w);
		prec_tfile_writer_free(r.w);
	}
	if (prec_outfile_close(&r.of) && !err)
		err = rec_error(&r, -EIO, NULL, "closing %s failed", o->output);
	prec_mapset_free(r.maps);
	prec_buf_free(&r.sw_state);
	prec_kmodel_free(r.model);
	free(r.emu_trig);
	free(r.emu_keys);
	free(r.sys_trig);
	free(r.sys_names);
	free(r.etm_blocks);
	free(r.etm_regs);
	return err;
}

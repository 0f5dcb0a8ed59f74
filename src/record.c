// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attr.h"
#include "emulate.h"
#include "etm_emulate.h"
#include "etmregs.h"
#include "evspec.h"
#include "kcore.h"
#include "pmu.h"
#include "probe.h"
#include "record.h"
#include "tfile.h"
#include "util.h"
#include "workload.h"

#ifndef PTREC_VERSION
#define PTREC_VERSION "0.1.0"
#endif

#define DEFAULT_DATA_BYTES (512u << 10)
#define DEFAULT_AUX_BYTES_PRIV (4u << 20)
#define DEFAULT_AUX_BYTES_USER (128u << 10)

/* One perf_event fd and the event it belongs to. */
struct efd {
	int fd;
	int ev;       /* evlist index, or -1 for the tracking event */
	uint64_t id;
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
};

struct rec {
	const struct prec_record_opts *o;
	struct prec_record_result *res;
	struct prec_diag *d;
	struct prec_evlist *el;
	int aux_idx;
	struct efd *fds;
	size_t nfds, capfds;
	struct target *t;
	size_t nt;
	struct prec_tfile_writer *w;
	struct prec_mapset *maps;
	struct prec_attr track;
	uint64_t data_bytes, aux_bytes;
	int err;      /* first error from a callback */
	bool etm;     /* the CoreSight software tracer runs */
	struct prec_tfile_etm *etm_blocks; /* cs_etm metadata for MACHINE */
	uint64_t *etm_regs;
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

static void note(struct prec_record_result *res, const char *s)
{
	if (res->nnotes < (int)PREC_ARRAY_SIZE(res->notes))
		snprintf(res->notes[res->nnotes++], sizeof(res->notes[0]), "%s", s);
}

int prec_parse_cpu_list(const char *s, int **cpus, size_t *n)
{
	int *v = NULL;
	size_t cnt = 0, cap = 0;
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
			if (cnt == cap) {
				int *nv;

				cap = cap ? cap * 2 : 16;
				nv = realloc(v, cap * sizeof(*v));
				if (!nv) {
					free(v);
					return -ENOMEM;
				}
				v = nv;
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

static int online_cpus(int **cpus, size_t *n)
{
	char *s;
	long len = prec_read_text("/sys/devices/system/cpu/online", &s);
	int err;

	if (len < 0) {
		long nc = sysconf(_SC_NPROCESSORS_ONLN);
		size_t i;

		*cpus = calloc((size_t)nc, sizeof(int));
		if (!*cpus)
			return -ENOMEM;
		for (i = 0; i < (size_t)nc; i++)
			(*cpus)[i] = (int)i;
		*n = (size_t)nc;
		return 0;
	}
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

static int open_error(struct rec *r, const struct prec_event *ev, int err)
{
	return prec_explain_open_error(err, ev, r->d);
}

/* ---- opening ---- */

static int push_fd(struct rec *r, int fd, int ev)
{
	if (r->nfds == r->capfds) {
		size_t cap = r->capfds ? r->capfds * 2 : 32;
		struct efd *n = realloc(r->fds, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->fds = n;
		r->capfds = cap;
	}
	r->fds[r->nfds].fd = fd;
	r->fds[r->nfds].ev = ev;
	r->fds[r->nfds].id = 0;
	if (ioctl(fd, PERF_EVENT_IOC_ID, &r->fds[r->nfds].id))
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
	a->enable_on_exec = leader && o->argv;
	a->inherit = !o->per_thread && !o->system_wide;
	if (ev->aux)
		a->aux_watermark = (uint32_t)PREC_MIN(r->aux_bytes / 4, UINT32_MAX);
}

static void prepare_tracking(struct rec *r)
{
	struct prec_attr *a = &r->track;
	const struct prec_record_opts *o = r->o;

	memset(a, 0, sizeof(*a));
	a->size = PREC_ATTR_SIZE;
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_DUMMY;
	a->sample_period = 1;
	a->sample_type = PREC_SAMPLE_ID_TYPE;
	a->sample_id_all = 1;
	a->mmap = a->mmap2 = a->comm = a->comm_exec = a->task = 1;
	a->build_id = 1;
	a->context_switch = !o->per_thread;
	a->ksymbol = 1;
	a->text_poke = 1;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->disabled = 1;
	a->enable_on_exec = o->argv != NULL;
	a->inherit = !o->per_thread && !o->system_wide;
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)(r->data_bytes / 2);
}

/* Opens every group plus the tracking event for one target; returns the owner fd. */
static int open_target(struct rec *r, struct target *t)
{
	size_t g, ng = prec_evlist_nr_groups(r->el);
	int aux_fd = -1, fd, err;

	for (g = 0; g < ng; g++) {
		size_t f, n, k;
		int leader = -1;

		prec_evlist_group(r->el, g, &f, &n);
		for (k = 0; k < n; k++) {
			const struct prec_event *ev = prec_evlist_event(r->el, f + k);
			struct prec_attr a;

			prepare_attr(r, &a, ev, k == 0);
			fd = prec_perf_event_open(&a, t->tid, t->cpu, leader, PERF_FLAG_FD_CLOEXEC);
			/* No silent retry with a narrower scope: the message says what to change. */
			if (fd < 0)
				return open_error(r, ev, fd);
			err = push_fd(r, fd, (int)(f + k));
			if (err) {
				close(fd);
				return err;
			}
			if (k == 0)
				leader = fd;
			if (ev->aux)
				aux_fd = fd;
		}
	}
	fd = prec_perf_event_open(&r->track, t->tid, t->cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return open_error(r, NULL, fd);
	err = push_fd(r, fd, -1);
	if (err) {
		close(fd);
		return err;
	}
	/* The AUX area must be mapped on the tracer's own fd; the rest redirects to it. */
	t->owner = aux_fd >= 0 ? aux_fd : fd;
	return 0;
}

static int map_target(struct rec *r, struct target *t)
{
	long page = sysconf(_SC_PAGESIZE);
	struct perf_event_mmap_page *pg;
	size_t len = (size_t)page + r->data_bytes;
	void *base, *aux = NULL;
	int err;

	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, t->owner, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	t->base = base;
	t->map_len = len;
	if (r->aux_idx >= 0) {
		pg = base;
		pg->aux_offset = len;
		pg->aux_size = r->aux_bytes;
		aux = mmap(NULL, r->aux_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, t->owner,
			   (off_t)len);
		if (aux == MAP_FAILED) {
			err = -errno;
			goto fail;
		}
		t->aux = aux;
		t->aux_len = r->aux_bytes;
	}
	err = prec_ring_init(&t->ring, base, r->data_bytes, aux, aux ? r->aux_bytes : 0, false);
	if (err)
		return rec_error(r, err, NULL, "internal error setting up the ring");
	return 0;
fail:
	if (err == -EPERM || err == -ENOMEM) {
		char *s = NULL;

		prec_read_text("/proc/sys/kernel/perf_event_mlock_kb", &s);
		err = rec_error(r, err,
				"use smaller buffers (-m DATA,AUX), or raise the limit: "
				"sysctl kernel.perf_event_mlock_kb=N (or run as root)",
				"cannot map %s KiB of ring buffer (%s); perf_event_mlock_kb is %s",
				r->aux_idx >= 0 ? "the AUX area and" : "",
				strerror(-err), s ? s : "unknown");
		free(s);
		return err;
	}
	return rec_error(r, err, NULL, "cannot map the ring buffer: %s", strerror(-err));
}

/* Redirects every fd of the target to its owner's ring. */
static int redirect(struct rec *r, size_t from, size_t to, int owner)
{
	size_t i;

	for (i = from; i < to; i++) {
		if (r->fds[i].fd == owner)
			continue;
		if (ioctl(r->fds[i].fd, PERF_EVENT_IOC_SET_OUTPUT, owner))
			return rec_error(r, -errno, NULL, "cannot redirect event output: %s",
					 strerror(errno));
	}
	return 0;
}

static int add_target(struct rec *r, int cpu, pid_t tid)
{
	struct target *t;
	size_t from = r->nfds;
	int err;

	t = realloc(r->t, (r->nt + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	r->t = t;
	t = &r->t[r->nt++];
	memset(t, 0, sizeof(*t));
	t->cpu = cpu;
	t->tid = tid;
	t->owner = -1;
	err = open_target(r, t);
	if (err)
		return err;
	err = map_target(r, t);
	if (err)
		return err;
	return redirect(r, from, r->nfds, t->owner);
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
		pid_t *nv;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v = nv;
		v[cnt++] = atoi(de->d_name);
	}
	closedir(d);
	*out = v;
	*n = cnt;
	return 0;
}

static int open_all(struct rec *r, pid_t workload)
{
	const struct prec_record_opts *o = r->o;
	int *cpus = NULL;
	size_t ncpus = 0, i, j;
	int err = 0;

	if (o->cpus) {
		cpus = malloc(o->ncpus * sizeof(int));
		if (!cpus)
			return -ENOMEM;
		memcpy(cpus, o->cpus, o->ncpus * sizeof(int));
		ncpus = o->ncpus;
	} else {
		err = online_cpus(&cpus, &ncpus);
		if (err)
			return rec_error(r, err, NULL, "cannot read the list of online CPUs");
	}

	if (o->system_wide) {
		for (i = 0; i < ncpus && !err; i++)
			err = add_target(r, cpus[i], -1);
	} else {
		pid_t *tids = NULL;
		size_t ntids = 0;

		if (workload > 0) {
			tids = malloc(sizeof(*tids));
			if (!tids) {
				err = -ENOMEM;
				goto out;
			}
			tids[0] = workload;
			ntids = 1;
		}
		for (i = 0; i < o->npids && !err; i++) {
			pid_t *tt = NULL;
			size_t nt = 0, k;

			err = thread_list(o->pids[i], &tt, &nt);
			if (err) {
				err = rec_error(r, err, "check the pid with ps", "process %d: %s",
						(int)o->pids[i], err == -ESRCH ? "no such process" :
						strerror(-err));
				break;
			}
			for (k = 0; k < nt; k++) {
				pid_t *nv = realloc(tids, (ntids + 1) * sizeof(*tids));

				if (!nv) {
					err = -ENOMEM;
					break;
				}
				tids = nv;
				tids[ntids++] = tt[k];
			}
			free(tt);
		}
		for (i = 0; i < o->ntids && !err; i++) {
			pid_t *nv = realloc(tids, (ntids + 1) * sizeof(*tids));

			if (!nv) {
				err = -ENOMEM;
				break;
			}
			tids = nv;
			tids[ntids++] = o->tids[i];
		}
		for (j = 0; j < ntids && !err; j++) {
			if (o->per_thread) {
				err = add_target(r, -1, tids[j]);
				continue;
			}
			for (i = 0; i < ncpus && !err; i++) {
				/* One ring per CPU: the first thread owns it, later ones redirect. */
				if (j == 0) {
					err = add_target(r, cpus[i], tids[j]);
				} else {
					struct target t0 = { .cpu = cpus[i], .tid = tids[j] };
					size_t from = r->nfds;

					err = open_target(r, &t0);
					if (!err)
						err = redirect(r, from, r->nfds, r->t[i].owner);
					if (err == -ESRCH)
						err = 0; /* the thread ended meanwhile */
				}
			}
		}
		free(tids);
	}
out:
	free(cpus);
	return err;
}

static int enable_all(struct rec *r)
{
	size_t i;

	for (i = 0; i < r->nfds; i++) {
		int ev = r->fds[i].ev;
		const struct prec_event *e = ev >= 0 ? prec_evlist_event(r->el, (size_t)ev) : NULL;

		if (e && e->leader != e->idx)
			continue;
		if (ioctl(r->fds[i].fd, PERF_EVENT_IOC_ENABLE, 0))
			return rec_error(r, -errno, NULL, "cannot enable the events: %s",
					 strerror(errno));
	}
	return 0;
}

static void disable_all(struct rec *r)
{
	size_t i;

	for (i = 0; i < r->nfds; i++)
		ioctl(r->fds[i].fd, PERF_EVENT_IOC_DISABLE, 0);
}

/* ---- draining ---- */

struct drain_ctx {
	struct rec *r;
	struct target *t;
};

static int on_record(void *ctx, const struct perf_event_header *h)
{
	struct drain_ctx *c = ctx;
	struct rec *r = c->r;
	int err;

	prec_ring_count_record(&c->t->counts, h);
	err = prec_mapset_note(r->maps, h, h->size);
	if (!err)
		err = prec_tfile_write_sideband(r->w, c->t->cpu, h, h->size);
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

	err = prec_tfile_write_aux(r->w, cpu, tid, off, p1, n1);
	if (err == -EAGAIN) {
		/* The disk is behind: drop rather than stall the kernel's ring. */
		r->res->dropped_bytes += n1;
		err = 0;
	} else if (!err) {
		r->res->aux_bytes += n1;
	}
	if (!err && n2) {
		err = prec_tfile_write_aux(r->w, cpu, tid, off + n1, p2, n2);
		if (err == -EAGAIN) {
			r->res->dropped_bytes += n2;
			err = 0;
		} else if (!err) {
			r->res->aux_bytes += n2;
		}
	}
	if (err)
		r->err = r->err ? r->err : err;
	return err ? err : 0;
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
		if (r->t[i].aux) {
			n = prec_ring_read_aux(&r->t[i].ring, on_aux, &c);
			if (n < 0 && !r->err)
				r->err = (int)n;
		}
	}
	return r->err;
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

/* Attach mode ends when every process and thread it attached to is gone. */
static bool targets_alive(const struct prec_record_opts *o)
{
	char p[64];
	size_t i;

	for (i = 0; i < o->npids; i++) {
		snprintf(p, sizeof(p), "/proc/%d/stat", (int)o->pids[i]);
		if (!access(p, F_OK) && !zombie(p))
			return true;
	}
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

static void emu_machine(struct prec_tfile_machine *m)
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
	m->nr_cpus = 1;
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
 * The EVENTS chunk: every event with its kernel ids (or the software
 * tracer's fixed ids), plus the tracking event.
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
			if (e->kind == PREC_EV_UPROBE || e->kind == PREC_EV_URETPROBE)
				t->attr.config1 = 0; /* a pointer in this process: meaningless later */
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
		if (r->o->emulate) {
			/* The software tracer's ids: event i is i + 1; its sideband uses the tracer's. */
			if (e)
				ids[nid++] = PREC_EMU_ID(i);
			t->n_ids = e ? 1 : 0;
			continue;
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

static void write_kernel_material(struct rec *r)
{
	char *ksyms = NULL, *mods = NULL, path[4096];
	long n;

	if (prec_sys_path(path, sizeof(path), "/proc/kallsyms") == 0 &&
	    (n = prec_read_text(path, &ksyms)) > 0) {
		/* With kptr_restrict every address reads as zero: useless for decoding. */
		if (!strncmp(ksyms, "0000000000000000", 16))
			r->res->kallsyms_hidden = true;
		else
			prec_tfile_write_blob(r->w, PREC_TFILE_KSYMS, 0, ksyms, (size_t)n);
	}
	if (prec_sys_path(path, sizeof(path), "/proc/modules") == 0 &&
	    (n = prec_read_text(path, &mods)) > 0)
		prec_tfile_write_blob(r->w, PREC_TFILE_MODULES, 0, mods, (size_t)n);
	if (r->o->kcore) {
		struct prec_kcore_result kr;
		char msg[256];
		int err = -ENOENT;

		if (prec_sys_path(path, sizeof(path), "/proc/kcore") == 0 && !access(path, R_OK))
			err = r->res->kallsyms_hidden ? -EPERM :
				prec_kcore_copy(r->w, path, ksyms, mods, 1ull << 30, &kr);
		if (err == -ENOENT && access(path, F_OK)) {
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

static void fill_stats(struct rec *r, struct prec_tfile_stats *st,
		       struct prec_tfile_stream_stats *ss)
{
	size_t i;

	memset(st, 0, sizeof(*st));
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
	st->n_streams = r->aux_idx >= 0 ? (uint32_t)r->nt : 0;
	st->streams = ss;
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
	wo.async = async;
	wo.full_policy = async ? PREC_TFILE_FULL_EAGAIN : PREC_TFILE_FULL_BLOCK;
	wo.file_flags = emulated ? PREC_TFILE_F_EMULATED : 0;
	err = prec_tfile_writer_new(r->o->output, &wo, &r->w);
	if (err)
		return rec_error(r, err, "check the directory exists and is writable (-o FILE)",
				 "cannot create %s: %s", r->o->output, prec_strerror(err));
	return 0;
}

static int finish_file(struct rec *r)
{
	struct prec_tfile_stream_stats *ss = calloc(r->nt + 1, sizeof(*ss));
	struct prec_tfile_stats st;
	struct stat sb;
	int err;

	if (!ss)
		return -ENOMEM;
	/* The trace and sideband first: on a full disk they matter more than images. */
	err = prec_tfile_writer_flush(r->w);
	if (!err)
		err = prec_mapset_embed(r->maps, r->w, r->o->no_embed, &r->res->embed);
	if (!err && !r->o->emulate && traces_kernel(r))
		write_kernel_material(r);
	fill_stats(r, &st, ss);
	if (!err)
		err = prec_tfile_writer_close(r->w, &st);
	free(ss);
	if (stat(r->o->output, &sb) == 0)
		r->res->file_bytes = (uint64_t)sb.st_size;
	return err;
}

static int write_error(struct rec *r, int err)
{
	if (err == -ENOSPC || err == -EDQUOT)
		return rec_error(r, err, "free some space or write elsewhere (-o); the file holds "
					 "everything up to the error and reads with ptdump",
				 "%s: the disk is full", r->o->output);
	return rec_error(r, err, NULL, "writing %s: %s", r->o->output, prec_strerror(err));
}

/* ---- the kernel backend ---- */

static int record_kernel(struct rec *r)
{
	const struct prec_record_opts *o = r->o;
	struct prec_workload wl;
	struct prec_tfile_info info;
	struct prec_tfile_machine m;
	struct utsname u;
	char host[256];
	struct pollfd *pfd = NULL;
	bool have_wl = o->argv != NULL, stopping = false;
	int pidfd = -1, err, timeout;
	uint64_t t0, deadline = 0, last_flush;
	size_t i, np;

	memset(&wl, 0, sizeof(wl));
	wl.go_fd = wl.err_fd = -1;
	if (have_wl) {
		err = prec_workload_prepare(&wl, o->argv);
		if (err)
			return rec_error(r, err, NULL, "cannot start %s: %s", o->argv[0], strerror(-err));
		r->res->workload = true;
	}
	prepare_tracking(r);
	err = open_all(r, have_wl ? wl.pid : -1);
	if (err)
		goto out;
	err = open_writer(r, true, false);
	if (err)
		goto out;
	fill_info(o, &info, &u, host);
	host_machine(r, &m);
	err = prec_tfile_write_info(r->w, &info);
	if (!err)
		err = prec_tfile_write_machine(r->w, &m);
	if (!err)
		err = write_events(r);
	if (err) {
		err = write_error(r, err);
		goto out;
	}

	t0 = prec_now_ns();
	if (have_wl) {
		err = prec_workload_start(&wl);
		if (err) {
			err = rec_error(r, err, "check the command name and PATH",
					"cannot run %s: %s", o->argv[0], strerror(-err));
			goto out;
		}
		pidfd = pidfd_of(wl.pid);
	} else {
		err = enable_all(r);
		if (err)
			goto out;
	}
	if (o->duration > 0)
		deadline = t0 + (uint64_t)(o->duration * 1e9);

	last_flush = t0;
	pfd = calloc(r->nt + 2, sizeof(*pfd));
	if (!pfd) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		np = 0;
		for (i = 0; i < r->nt; i++) {
			pfd[np].fd = r->t[i].hup ? -1 : r->t[i].owner;
			pfd[np++].events = POLLIN;
		}
		pfd[np].fd = o->stop_fd;
		pfd[np++].events = POLLIN;
		pfd[np].fd = pidfd;
		pfd[np++].events = POLLIN;
		timeout = 100;
		if (poll(pfd, np, timeout) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		err = drain(r);
		if (err) {
			err = write_error(r, err);
			break;
		}
		if (o->per_thread)
			for (i = 0; i < r->nt; i++)
				if (pfd[i].revents & POLLHUP)
					r->t[i].hup = true;
		/*
		 * Once a second, when the writer is idle, cut what is buffered into
		 * chunks: a SIGKILL or a crash then loses at most a second of sideband.
		 */
		if (prec_now_ns() - last_flush > 1000000000ull) {
			last_flush = prec_now_ns();
			if (prec_tfile_writer_queued(r->w) == 0) {
				err = prec_tfile_writer_flush(r->w);
				if (err) {
					err = write_error(r, err);
					break;
				}
			}
		}
		if (have_wl && prec_workload_wait(&wl, false))
			break;
		if (o->stop_fd >= 0 && (pfd[r->nt].revents & POLLIN)) {
			char c;

			if (read(o->stop_fd, &c, 1) < 0 && errno != EAGAIN) {
				/* nothing */
			}
			if (!have_wl)
				break;
			if (!stopping && o->stop_signal)
				prec_workload_kill(&wl, o->stop_signal);
			stopping = true;
		}
		if (deadline && prec_now_ns() >= deadline) {
			if (!have_wl)
				break;
			if (!stopping)
				prec_workload_kill(&wl, SIGTERM);
			stopping = true;
			deadline = 0;
		}
		if (!have_wl && !o->system_wide && !targets_alive(o))
			break;
	}
	r->res->duration_ns = prec_now_ns() - t0;
	disable_all(r);
	if (!err) {
		err = drain(r);
		if (err)
			err = write_error(r, err);
	}
	if (have_wl) {
		if (!prec_workload_wait(&wl, false)) {
			prec_workload_kill(&wl, SIGTERM);
			prec_workload_wait(&wl, true);
		}
		r->res->exit_code = prec_workload_exit_code(&wl);
	}
	if (!err) {
		err = finish_file(r);
		if (err)
			err = write_error(r, err);
	}
out:
	free(pfd);
	if (pidfd >= 0)
		close(pidfd);
	if (have_wl) {
		if (wl.go_fd >= 0) {
			/* Never started: let it exit without running. */
			prec_workload_fini(&wl);
			prec_workload_wait(&wl, true);
		}
		prec_workload_fini(&wl);
	}
	return err;
}

/* ---- the software tracer ---- */

struct emu_ctx {
	struct rec *r;
	int *tids;
	size_t ntids;
};

static int emu_aux(void *ctx, uint32_t pid, uint32_t tid, uint64_t offset, const void *data,
		   size_t size)
{
	struct emu_ctx *c = ctx;
	size_t i;
	int err;

	for (i = 0; i < c->ntids; i++)
		if (c->tids[i] == (int)tid)
			break;
	if (i == c->ntids) {
		int *n = realloc(c->tids, (c->ntids + 1) * sizeof(int));

		if (!n)
			return -ENOMEM;
		c->tids = n;
		c->tids[c->ntids++] = (int)tid;
	}
	err = prec_tfile_write_aux(c->r->w, -1, (int32_t)tid, offset, data, size);
	if (!err)
		c->r->res->aux_bytes += size;
	return err;
}

static int emu_sideband(void *ctx, const void *rec, size_t size)
{
	struct emu_ctx *c = ctx;
	struct rec *r = c->r;
	int err;

	/* A malformed AUX/LOST record is only not counted; it is still kept. */
	prec_ring_count_record(&r->res->counts, rec);
	err = prec_mapset_note(r->maps, rec, size);
	if (!err)
		err = prec_tfile_write_sideband(r->w, -1, rec, size);
	if (!err)
		r->res->sideband_bytes += size;
	return err;
}

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
	prec_emu_set_pt_config(cfg, aux->attr.config);
	cfg->start_paused = aux->aux_action & PREC_AUX_START_PAUSED;
	for (i = 0; i < n; i++) {
		const struct prec_event *e = prec_evlist_event(r->el, i);
		struct prec_emu_trigger *x = &t[nt];

		if (e->aux)
			continue;
		x->event_index = (int)i;
		x->action = e->aux_action & PREC_AUX_PAUSE ? PREC_EMU_ACT_PAUSE :
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
				 "sys_exit_* and instructions/period=N/ triggers",
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

/* The file's head for a software-tracer recording: INFO, MACHINE, EVENTS. */
static int emu_begin(struct rec *r, const struct prec_tfile_machine *m)
{
	struct prec_tfile_info info;
	struct utsname u;
	char host[256];
	int err;

	err = open_writer(r, false, true);
	if (err)
		return err;
	fill_info(r->o, &info, &u, host);
	err = prec_tfile_write_info(r->w, &info);
	if (!err)
		err = prec_tfile_write_machine(r->w, m);
	prepare_tracking(r);
	if (!err)
		err = write_events(r);
	if (err)
		return write_error(r, err);
	r->res->workload = true;
	return 0;
}

/* After the tracer ran (@err its result): the workload's status and the file's end. */
static int emu_end(struct rec *r, int err, int wstatus, uint64_t t0)
{
	r->res->duration_ns = prec_now_ns() - t0;
	r->res->exit_code = prec_emu_exit_code(wstatus);
	if (err)
		return err;
	r->nt = 0;
	err = finish_file(r);
	return err ? write_error(r, err) : 0;
}

/* ---- the CoreSight software tracer (aarch64 programs) ---- */

static int etm_stream(void *ctx, uint32_t pid, uint32_t tid, unsigned index, uint8_t csid)
{
	struct emu_ctx *c = ctx;

	(void)pid;
	(void)tid;
	(void)index;
	(void)csid;
	c->r->res->nstreams++;
	return 0;
}

static int record_emulated_etm(struct rec *r)
{
	const struct prec_record_opts *o = r->o;
	struct prec_emu_config xcfg;
	struct prec_etm_config cfg;
	struct prec_etm_regs regs;
	struct prec_emu_trigger *trig = NULL;
	struct prec_tfile_machine m;
	struct prec_tfile_etm blk;
	uint64_t words[PREC_ETM_BLOCK_WORDS];
	struct emu_ctx ec = { r, NULL, 0 };
	struct prec_etm_ops ops = { .ctx = &ec, .stream = etm_stream, .aux = emu_aux,
				    .sideband = emu_sideband };
	int err, wstatus = 0;
	uint64_t t0;

	r->etm = true;
	/* The tracer's terms and the triggers, as for Intel PT. */
	err = emu_config(r, &xcfg, &trig);
	if (err)
		return err;
	memset(&cfg, 0, sizeof(cfg));
	cfg.plugin = o->plugin_etm;
	cfg.qemu = o->qemu;
	cfg.timestamp = xcfg.tsc;
	cfg.start_paused = xcfg.start_paused;
	cfg.triggers = xcfg.triggers;
	cfg.ntriggers = xcfg.ntriggers;
	cfg.truth_path = o->truth;
	cfg.argv = o->argv;
	memset(&m, 0, sizeof(m));
	snprintf(m.arch, sizeof(m.arch), "aarch64");
	snprintf(m.vendor, sizeof(m.vendor), "ARM");
	m.nr_cpus = 1;
	m.page_size = (uint32_t)sysconf(_SC_PAGESIZE);
	m.time_mult = 1;
	m.flags = PREC_TFILE_M_CAP_USER_TIME | PREC_TFILE_M_CAP_USER_TIME_ZERO;
	/* One trace unit description serves every per-thread stream (raw data, no IDs). */
	prec_etm_regs_get(&cfg, PREC_ETM_CSID_BASE, &regs);
	prec_etm_regs_block(&regs, 0, words);
	blk.cpu = 0;
	blk.kind = (uint32_t)words[0];
	blk.nregs = PREC_ETM_BLOCK_WORDS;
	blk.regs = words;
	m.n_etm = 1;
	m.etm = &blk;
	err = emu_begin(r, &m);
	if (err)
		goto out;
	t0 = prec_now_ns();
	err = prec_etm_run(&cfg, &ops, &wstatus, r->d);
	err = emu_end(r, err, wstatus, t0);
out:
	free(ec.tids);
	free(trig);
	return err;
}

static int record_emulated(struct rec *r)
{
	const struct prec_record_opts *o = r->o;
	struct prec_emu_config cfg;
	struct prec_emu_trigger *trig = NULL;
	struct prec_tfile_machine m;
	struct emu_ctx ec = { r, NULL, 0 };
	struct prec_emu_ops ops = { .ctx = &ec, .aux = emu_aux, .sideband = emu_sideband };
	char path[4096];
	int err, wstatus = 0;
	uint64_t t0;

	if (!o->argv)
		return rec_error(r, -EINVAL, "give the program after --: ptrec record --emulate -- prog",
				 "--emulate runs a workload; -p, -t and -a need trace hardware");
	err = prec_emu_check_program(o->argv[0], path, sizeof(path), r->d);
	if (err == -ENOEXEC && prec_etm_check_program(o->argv[0], path, sizeof(path), NULL) == 0)
		return record_emulated_etm(r);
	if (err)
		return err;
	err = emu_config(r, &cfg, &trig);
	if (err)
		return err;
	emu_machine(&m);
	err = emu_begin(r, &m);
	if (err)
		goto out;
	t0 = prec_now_ns();
	err = prec_emu_run(&cfg, &ops, &wstatus, r->d);
	err = emu_end(r, err, wstatus, t0);
	r->res->nstreams = (int)ec.ntids;
out:
	free(ec.tids);
	free(trig);
	return err;
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
	r.res = res;
	r.d = d;
	r.el = o->el;
	r.aux_idx = prec_evlist_aux_index(o->el);
	r.data_bytes = o->data_bytes ? o->data_bytes : DEFAULT_DATA_BYTES;
	r.aux_bytes = o->aux_bytes ? o->aux_bytes : priv ? DEFAULT_AUX_BYTES_PRIV : DEFAULT_AUX_BYTES_USER;
	r.maps = prec_mapset_new();
	if (!r.maps)
		return -ENOMEM;

	if (o->emulate)
		err = record_emulated(&r);
	else
		err = record_kernel(&r);

	if (!o->emulate)
		res->nstreams = r.aux_idx >= 0 ? (int)r.nt : 0;
	for (i = 0; i < r.nt; i++) {
		if (r.t[i].base)
			munmap(r.t[i].base, r.t[i].map_len);
		if (r.t[i].aux)
			munmap(r.t[i].aux, r.t[i].aux_len);
		prec_ring_fini(&r.t[i].ring);
	}
	for (i = 0; i < r.nfds; i++)
		close(r.fds[i].fd);
	free(r.fds);
	free(r.t);
	if (r.w) {
		if (err)
			prec_tfile_writer_flush(r.w);
		prec_tfile_writer_free(r.w);
	}
	prec_mapset_free(r.maps);
	free(r.etm_blocks);
	free(r.etm_regs);
	return err;
}
